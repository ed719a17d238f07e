"""The device facts a plan is derived from: pure data, readable without a device (vkinfo) or from JSON."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Limits:
    """What planning may assume about a device. `cooperative_matrix`: the s8 16x16x32 shape at subgroup
    scope with the features its SPIR-V declares enabled; `coopmat_verified` / `coopmat_split_verified`:
    those kernels also passed vkops' self-check on this device (only a device can say; False on paper)."""

    name: str = "unknown"
    device_type: str = "unknown"  # "discrete", "integrated", "virtual", "cpu", "other"
    subgroup_size: int = 4
    max_workgroup_invocations: int = 128
    max_workgroup_size: Tuple[int, int, int] = (128, 128, 64)
    max_workgroup_count: Tuple[int, int, int] = (65535, 65535, 65535)
    shared_memory_bytes: int = 16384
    max_push_constants_bytes: int = 128
    max_storage_buffer_range: int = 2**27
    cooperative_matrix: bool = False
    coopmat_verified: bool = False
    coopmat_split_verified: bool = False

    @classmethod
    def of_info(cls, info) -> "Limits":
        """From a vkinfo.DeviceInfo (no device is created)."""
        return cls(name=info.name, device_type=info.device_type, subgroup_size=info.subgroup_size,
                   max_workgroup_invocations=info.max_workgroup_invocations,
                   max_workgroup_size=tuple(info.max_workgroup_size),
                   max_workgroup_count=tuple(info.max_workgroup_count),
                   shared_memory_bytes=info.shared_memory_bytes,
                   max_push_constants_bytes=info.max_push_constants_bytes,
                   max_storage_buffer_range=info.max_storage_buffer_range)

    def replace(self, **changes) -> "Limits":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return {f.name: list(v) if isinstance(v, tuple) else v
                for f in dataclasses.fields(self) for v in [getattr(self, f.name)]}

    @classmethod
    def from_dict(cls, d: dict) -> "Limits":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in names})
