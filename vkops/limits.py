"""The device facts a plan is derived from: pure data, readable without a device (vkinfo) or from JSON,
and the profiles a device can be planned as (`VKOPS_DEVICE_LIMITS=minimum`, `Device(limits=...)`).

May import: the other pure modules (errors); never `vkops.ops`, `vkops.runtime`, `vkops.bench` (nor drivers, vkinfo, kp, the package face `vkops`): the runtime builds a Limits from vkinfo's
facts, not the reverse.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Tuple, Union

from .errors import DeviceLimitError, ValidationError


@dataclass(frozen=True)
class Limits:
    """What planning may assume about a device. The defaults are Vulkan 1.1's required minimums.
    `cooperative_matrix`: the s8 16x16x32 shape at subgroup scope with the features its SPIR-V declares
    enabled; `coopmat_verified` / `coopmat_split_verified`: those kernels also passed vkops' self-check
    on this device (only a device can say; False on paper). `integer_dot_product`: packed 4 x 8-bit
    dot products (VK_KHR_shader_integer_dot_product) offered (QLinearMatMul's device_limits also needs
    them enabled). `profile`: the profile the device's own
    limits were clamped to, if any."""

    name: str = "unknown"
    device_type: str = "unknown"  # "discrete", "integrated", "virtual", "cpu", "other"
    subgroup_size: int = 4
    min_subgroup_size: int = 4
    max_subgroup_size: int = 4
    max_workgroup_invocations: int = 128
    max_workgroup_size: Tuple[int, int, int] = (128, 128, 64)
    max_workgroup_count: Tuple[int, int, int] = (65535, 65535, 65535)
    shared_memory_bytes: int = 16384
    max_push_constants_bytes: int = 128
    max_storage_buffer_range: int = 2**27
    # VkSubgroupFeatureFlags the compute stage supports (Vulkan 1.1 guarantees only BASIC).
    subgroup_operations: int = 0x1
    cooperative_matrix: bool = False
    coopmat_verified: bool = False
    coopmat_split_verified: bool = False
    integer_dot_product: bool = False
    profile: Optional[str] = None

    @classmethod
    def of_info(cls, info) -> "Limits":
        """From a vkinfo.DeviceInfo (no device is created)."""
        return cls(name=info.name, device_type=info.device_type, subgroup_size=info.subgroup_size,
                   min_subgroup_size=info.min_subgroup_size or info.subgroup_size,
                   max_subgroup_size=info.max_subgroup_size or info.subgroup_size,
                   max_workgroup_invocations=info.max_workgroup_invocations,
                   max_workgroup_size=tuple(info.max_workgroup_size),
                   max_workgroup_count=tuple(info.max_workgroup_count),
                   shared_memory_bytes=info.shared_memory_bytes,
                   max_push_constants_bytes=info.max_push_constants_bytes,
                   max_storage_buffer_range=info.max_storage_buffer_range,
                   subgroup_operations=info.subgroup_operations,
                   integer_dot_product="VK_KHR_shader_integer_dot_product" in info.extensions)

    def workgroup(self, want: int) -> int:
        """The largest power of two <= `want` that a 1-D workgroup may have here."""
        cap = min(want, self.max_workgroup_invocations, self.max_workgroup_size[0])
        return 1 << (max(cap, 1).bit_length() - 1)

    def grid(self, n_groups: int, what: str = "workgroups") -> Tuple[int, int, int]:
        """`n_groups` workgroups as a 2-D grid (kernels read linear_group() = x + X * y)."""
        mx, my = self.max_workgroup_count[:2]
        x = max(1, min(n_groups, mx))
        y = -(-n_groups // x)
        if y > my:
            raise DeviceLimitError(f"{what}: {n_groups} workgroups exceed {self.name}'s maxComputeWorkGroupCount "
                                   f"{self.max_workgroup_count[0]} x {self.max_workgroup_count[1]}")
        return (x, y, 1)

    def has_subgroup(self, *ops: str) -> bool:
        """Whether the compute stage supports these subgroup operation classes ("ballot", ...)."""
        return all(self.subgroup_operations & SUBGROUP_OPS[o] for o in ops)

    def replace(self, **changes) -> "Limits":
        """A copy with the given fields changed."""
        return dataclasses.replace(self, **changes)

    def within(self, profile: Union[str, "Limits", dict, None]) -> "Limits":
        """These limits, each no larger than `profile`'s (a name in PROFILES, a Limits or a dict of
        fields). Subgroup sizes stay the device's: they are facts of how it runs, not limits to plan under
        (no portable kernel depends on them); cooperative matrices only where both have them."""
        if profile is None:
            return self
        name, p = resolve(profile)
        small = {f: min(getattr(self, f), getattr(p, f)) for f in _SCALAR_LIMITS}
        small.update({f: tuple(min(a, b) for a, b in zip(getattr(self, f), getattr(p, f))) for f in _VECTOR_LIMITS})
        return self.replace(**small, subgroup_operations=self.subgroup_operations & p.subgroup_operations,
                            cooperative_matrix=self.cooperative_matrix and p.cooperative_matrix,
                            coopmat_verified=self.coopmat_verified and p.cooperative_matrix,
                            coopmat_split_verified=self.coopmat_split_verified and p.cooperative_matrix,
                            integer_dot_product=self.integer_dot_product and p.integer_dot_product,
                            profile=name)

    def to_dict(self) -> dict:
        """The fields as JSON-ready values (tuples become lists)."""
        return {f.name: list(v) if isinstance(v, tuple) else v
                for f in dataclasses.fields(self) for v in [getattr(self, f.name)]}

    @classmethod
    def from_dict(cls, d: dict) -> "Limits":
        """Limits from to_dict()'s form (missing fields take the defaults); raises ValidationError
        naming unknown fields."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValidationError(f"limits: unknown field(s) {unknown}; known: {sorted(names)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


# VkSubgroupFeatureFlagBits
SUBGROUP_OPS = {"basic": 0x1, "vote": 0x2, "arithmetic": 0x4, "ballot": 0x8, "shuffle": 0x10,
                "shuffle_relative": 0x20, "clustered": 0x40, "quad": 0x80}
_SCALAR_LIMITS = ("max_workgroup_invocations", "shared_memory_bytes", "max_push_constants_bytes",
                  "max_storage_buffer_range")
_VECTOR_LIMITS = ("max_workgroup_size", "max_workgroup_count")
_BIG = 2**31
# A profile given as a dict limits only the fields it names.
_UNLIMITED = Limits(max_workgroup_invocations=_BIG, max_workgroup_size=(_BIG,) * 3, max_workgroup_count=(_BIG,) * 3,
                    shared_memory_bytes=_BIG, max_push_constants_bytes=_BIG, max_storage_buffer_range=2**64,
                    subgroup_operations=0xFF, cooperative_matrix=True, integer_dot_product=True)

PROFILES = {
    # Vulkan 1.1's required minimums (the spec's "Required Limits" table).
    "minimum": Limits(name="Vulkan 1.1 minimum"),
    # Raspberry Pi 4/5 (Broadcom VideoCore, Mesa's v3dv): src/broadcom/vulkan/v3dv_device.c sets
    # maxComputeSharedMemorySize 16384, maxComputeWorkGroupInvocations 256, maxComputeWorkGroupSize
    # 256^3, maxComputeWorkGroupCount 65535^3, subgroupSize 16 (V3D_CHANNELS), maxStorageBufferRange
    # V3D_MAX_BUFFER_RANGE (1 << 27 in src/broadcom/common/v3d_limits.h before Mesa raised it to 1 << 30),
    # maxPushConstantsSize MAX_PUSH_CONSTANTS_SIZE (128).
    "raspberry-pi-v3dv": Limits(name="Raspberry Pi (v3dv)", device_type="integrated", subgroup_size=16,
                                min_subgroup_size=16, max_subgroup_size=16, max_workgroup_invocations=256,
                                max_workgroup_size=(256, 256, 256), shared_memory_bytes=16384),
}


def resolve(profile: Union[str, Limits, dict]) -> Tuple[str, Limits]:
    """(name, limits) of a profile given by name, as Limits, or as a dict of the fields it limits."""
    if isinstance(profile, Limits):
        return profile.name, profile
    if isinstance(profile, dict):
        Limits.from_dict(profile)  # names any unknown field
        return "custom", _UNLIMITED.replace(**{k: tuple(v) if isinstance(v, list) else v for k, v in profile.items()})
    if isinstance(profile, str) and profile.strip().lower() in PROFILES:
        name = profile.strip().lower()
        return name, PROFILES[name]
    raise ValidationError(f"device limits must be one of {sorted(PROFILES)}, a Limits or a dict of Limits fields; "
                          f"got {profile!r}")
