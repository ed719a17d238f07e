"""Physical-device facts that kp does not expose, read with ctypes from the Vulkan loader kp uses.

kp's Python binding reports only the device name and workgroup limits; vkops also needs the
subgroup size, shared memory, maxStorageBufferRange, the driver and the extension list. Devices are
enumerated in the loader's order, which is the order kp's device index uses.
"""
from __future__ import annotations

import ctypes as C
from dataclasses import dataclass, field
from typing import List, Tuple

from . import drivers
from .errors import NoDeviceError

u32, u64, vp = C.c_uint32, C.c_uint64, C.c_void_p

ST_APPLICATION_INFO = 0
ST_INSTANCE_CREATE_INFO = 1
ST_PROPERTIES_2 = 1000059001
ST_SUBGROUP_PROPERTIES = 1000094000
ST_DRIVER_PROPERTIES = 1000196000
ST_SUBGROUP_SIZE_CONTROL_PROPERTIES = 1000225000
ST_COOPMAT_PROPERTIES_KHR = 1000506001

DEVICE_TYPES = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}
VENDORS = {0x10DE: "NVIDIA", 0x1002: "AMD", 0x8086: "Intel", 0x13B5: "ARM", 0x5143: "Qualcomm",
           0x10005: "Mesa", 0x106B: "Apple", 0x1010: "ImgTec"}
COMPONENT_TYPES = {0: "f16", 1: "f32", 2: "f64", 3: "s8", 4: "s16", 5: "s32", 6: "s64", 7: "u8", 8: "u16",
                   9: "u32", 10: "u64"}


class AppInfo(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("pApplicationName", C.c_char_p), ("applicationVersion", u32),
                ("pEngineName", C.c_char_p), ("engineVersion", u32), ("apiVersion", u32)]


class InstanceInfo(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("flags", u32), ("pApplicationInfo", C.POINTER(AppInfo)),
                ("enabledLayerCount", u32), ("ppEnabledLayerNames", vp),
                ("enabledExtensionCount", u32), ("ppEnabledExtensionNames", vp)]


# VkPhysicalDeviceLimits up to maxComputeWorkGroupSize; the rest is left as bytes.
_LIMIT_U32_BEFORE_GRANULARITY = ["maxImageDimension1D", "maxImageDimension2D", "maxImageDimension3D",
                                 "maxImageDimensionCube", "maxImageArrayLayers", "maxTexelBufferElements",
                                 "maxUniformBufferRange", "maxStorageBufferRange", "maxPushConstantsSize",
                                 "maxMemoryAllocationCount", "maxSamplerAllocationCount"]
_LIMIT_U32_AFTER = ["maxBoundDescriptorSets"] + [f"_d{i}" for i in range(15)] + \
                   [f"_v{i}" for i in range(5)] + [f"_t{i}" for i in range(8)] + [f"_g{i}" for i in range(5)] + \
                   [f"_f{i}" for i in range(4)] + ["maxComputeSharedMemorySize"]


class Limits(C.Structure):
    _fields_ = ([(n, u32) for n in _LIMIT_U32_BEFORE_GRANULARITY] +
                [("bufferImageGranularity", u64), ("sparseAddressSpaceSize", u64)] +
                [(n, u32) for n in _LIMIT_U32_AFTER] +
                [("maxComputeWorkGroupCount", u32 * 3), ("maxComputeWorkGroupInvocations", u32),
                 ("maxComputeWorkGroupSize", u32 * 3)] +
                [(f"_p{i}", u32) for i in range(5)] + [("_lod", C.c_float * 2), ("_vp", u32 * 3),
                 ("_vbr", C.c_float * 2), ("_vsb", u32), ("minMemoryMapAlignment", u64), ("_align", u64 * 3),
                 ("_texel", u32 * 4), ("_interp", C.c_float * 2)] + [(f"_fb{i}", u32) for i in range(15)] +
                [("timestampComputeAndGraphics", u32), ("timestampPeriod", C.c_float), ("_rest", C.c_uint8 * 256)])


class Properties(C.Structure):
    _fields_ = [("apiVersion", u32), ("driverVersion", u32), ("vendorID", u32), ("deviceID", u32),
                ("deviceType", u32), ("deviceName", C.c_char * 256), ("pipelineCacheUUID", C.c_uint8 * 16),
                ("limits", Limits), ("_sparse", C.c_uint8 * 64)]


class Properties2(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("properties", Properties)]


STAGE_COMPUTE_BIT = 0x20  # VkShaderStageFlagBits


class SubgroupProperties(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("subgroupSize", u32), ("supportedStages", u32),
                ("supportedOperations", u32), ("quadOperationsInAllStages", u32)]


class SubgroupSizeControlProperties(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("minSubgroupSize", u32), ("maxSubgroupSize", u32),
                ("maxComputeWorkgroupSubgroups", u32), ("requiredSubgroupSizeStages", u32)]


class DriverProperties(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("driverID", u32), ("driverName", C.c_char * 256),
                ("driverInfo", C.c_char * 256), ("conformanceVersion", C.c_uint8 * 4)]


class ExtensionProperties(C.Structure):
    _fields_ = [("extensionName", C.c_char * 256), ("specVersion", u32)]


class CoopMatProperties(C.Structure):
    _fields_ = [("sType", u32), ("pNext", vp), ("MSize", u32), ("NSize", u32), ("KSize", u32), ("AType", u32),
                ("BType", u32), ("CType", u32), ("ResultType", u32), ("saturatingAccumulation", u32),
                ("scope", u32)]


class MemoryHeap(C.Structure):
    _fields_ = [("size", u64), ("flags", u32)]


class MemoryProperties(C.Structure):
    _fields_ = [("memoryTypeCount", u32), ("memoryTypes", u32 * 64), ("memoryHeapCount", u32),
                ("memoryHeaps", MemoryHeap * 16)]


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    vendor: str
    vendor_id: int
    device_type: str
    driver: str
    api_version: Tuple[int, int, int]
    subgroup_size: int
    shared_memory_bytes: int
    max_workgroup_count: Tuple[int, int, int]
    max_workgroup_size: Tuple[int, int, int]
    max_workgroup_invocations: int
    max_storage_buffer_range: int
    max_push_constants_bytes: int
    timestamp_period_ns: float
    device_local_bytes: int
    extensions: Tuple[str, ...] = field(repr=False)
    # (M, N, K, A, B, C, Result) of each subgroup-scope VK_KHR_cooperative_matrix shape offered.
    cooperative_matrix_shapes: Tuple[Tuple, ...] = field(repr=False, default=())
    # What a VkPipelineCache's header must match to be reused (and the cache file is keyed by).
    device_id: int = field(repr=False, default=0)
    driver_version: int = field(repr=False, default=0)
    pipeline_cache_uuid: bytes = field(repr=False, default=b"")
    # VK_EXT_subgroup_size_control's range (both = subgroup_size where the device does not report one).
    min_subgroup_size: int = field(repr=False, default=0)
    max_subgroup_size: int = field(repr=False, default=0)
    # VkSubgroupFeatureFlags usable in compute shaders (0 where the compute stage has no subgroups).
    subgroup_operations: int = field(repr=False, default=0x1)
    # The heap of the first device-local, host-visible, host-coherent memory type (kp's pick for such
    # memory), in bytes: the whole device-local heap under resizable BAR, 256 MiB without; 0 if none.
    mapped_local_bytes: int = field(repr=False, default=0)
    # That memory type is also HOST_CACHED (an integrated GPU's): the host reads it at memory speed.
    mapped_local_cached: bool = field(repr=False, default=False)

    @property
    def cooperative_matrix(self) -> bool:
        return "VK_KHR_cooperative_matrix" in self.extensions


def _version(v: int) -> Tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def query_devices() -> List[DeviceInfo]:
    """All physical devices the Vulkan loader sees (vkops.drivers chooses the loader kp uses). When no
    driver is usable, applies vkops.drivers' headless NVIDIA fallback once and asks again. Raises
    vkops.NoDeviceError (an OSError) saying what is missing when there is no loader or no instance;
    returns [] when the instance has no device (Device() then says why)."""
    lib = drivers.loader()
    r, infos = _query(lib)
    if (r == drivers.VK_ERROR_INCOMPATIBLE_DRIVER or (r == 0 and not infos)) and drivers.headless_fallback():
        r, infos = _query(lib)  # the loader reads VK_DRIVER_FILES again at this vkCreateInstance
    if r != 0:
        raise NoDeviceError(drivers.diagnose(r, 0))
    return infos


def _query(lib) -> Tuple[int, List[DeviceInfo]]:
    """(vkCreateInstance's VkResult, the devices of that instance)."""
    app = AppInfo(ST_APPLICATION_INFO, None, b"vkops", 1, b"vkops", 1, (1 << 22) | (2 << 12))
    ci = InstanceInfo(ST_INSTANCE_CREATE_INFO, None, 0, C.pointer(app), 0, None, 0, None)
    inst = vp()
    lib.vkCreateInstance.argtypes = [vp, vp, vp]
    lib.vkCreateInstance.restype = C.c_int32
    r = lib.vkCreateInstance(C.byref(ci), None, C.byref(inst))
    if r != 0:
        return r, []
    try:
        lib.vkEnumeratePhysicalDevices.argtypes = [vp, vp, vp]
        n = u32(0)
        lib.vkEnumeratePhysicalDevices(inst, C.byref(n), None)
        pds = (vp * n.value)()
        lib.vkEnumeratePhysicalDevices(inst, C.byref(n), pds)
        lib.vkGetInstanceProcAddr.restype = vp
        lib.vkGetInstanceProcAddr.argtypes = [vp, C.c_char_p]
        coop_addr = lib.vkGetInstanceProcAddr(inst, b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
        return 0, [_describe(lib, i, pd, coop_addr) for i, pd in enumerate(pds[: n.value])]
    finally:
        lib.vkDestroyInstance.argtypes = [vp, vp]
        lib.vkDestroyInstance(inst, None)


def _describe(lib, index, pd, coop_addr) -> DeviceInfo:
    for fn in ("vkGetPhysicalDeviceProperties2", "vkGetPhysicalDeviceMemoryProperties"):
        getattr(lib, fn).argtypes = [vp, vp]
    lib.vkEnumerateDeviceExtensionProperties.argtypes = [vp, vp, vp, vp]
    n = u32(0)
    lib.vkEnumerateDeviceExtensionProperties(pd, None, C.byref(n), None)
    exts = (ExtensionProperties * n.value)()
    lib.vkEnumerateDeviceExtensionProperties(pd, None, C.byref(n), exts)
    extensions = tuple(sorted(e.extensionName.decode() for e in exts[: n.value]))

    sub = SubgroupProperties(ST_SUBGROUP_PROPERTIES, None)
    drv = DriverProperties(ST_DRIVER_PROPERTIES, None)
    props = Properties2(ST_PROPERTIES_2, None)
    probe = Properties2(ST_PROPERTIES_2, None)
    lib.vkGetPhysicalDeviceProperties2(pd, C.byref(probe))
    api = _version(probe.properties.apiVersion)
    # Chain only structures the device knows, so the validation layer has nothing to report.
    if api >= (1, 2, 0) or "VK_KHR_driver_properties" in extensions:
        sub.pNext = C.cast(C.pointer(drv), vp)
    ssc = SubgroupSizeControlProperties(ST_SUBGROUP_SIZE_CONTROL_PROPERTIES, sub.pNext)
    if api >= (1, 3, 0) or "VK_EXT_subgroup_size_control" in extensions:
        sub.pNext = C.cast(C.pointer(ssc), vp)
    props.pNext = C.cast(C.pointer(sub), vp)
    lib.vkGetPhysicalDeviceProperties2(pd, C.byref(props))
    p = props.properties
    lim = p.limits

    mem = MemoryProperties()
    lib.vkGetPhysicalDeviceMemoryProperties(pd, C.byref(mem))
    local = sum(mem.memoryHeaps[i].size for i in range(mem.memoryHeapCount) if mem.memoryHeaps[i].flags & 1)
    mapped = next((i for i in range(mem.memoryTypeCount) if mem.memoryTypes[2 * i] & 0x7 == 0x7), None)
    mapped_bytes = 0 if mapped is None else mem.memoryHeaps[mem.memoryTypes[2 * mapped + 1]].size

    shapes = ()
    if coop_addr and "VK_KHR_cooperative_matrix" in extensions:
        fn = C.CFUNCTYPE(C.c_int32, vp, vp, vp)(coop_addr)
        cnt = u32(0)
        fn(pd, C.byref(cnt), None)
        arr = (CoopMatProperties * cnt.value)()
        for a in arr:
            a.sType = ST_COOPMAT_PROPERTIES_KHR
        fn(pd, C.byref(cnt), arr)
        shapes = tuple((a.MSize, a.NSize, a.KSize) + tuple(COMPONENT_TYPES.get(t, str(t)) for t in
                       (a.AType, a.BType, a.CType, a.ResultType)) for a in arr[: cnt.value] if a.scope == 3)

    driver = drv.driverName.decode(errors="replace")
    if drv.driverInfo:
        driver = f"{driver} {drv.driverInfo.decode(errors='replace')}".strip()
    return DeviceInfo(
        index=index, name=p.deviceName.decode(errors="replace"),
        vendor=VENDORS.get(p.vendorID, hex(p.vendorID)), vendor_id=p.vendorID,
        device_type=DEVICE_TYPES.get(p.deviceType, str(p.deviceType)), driver=driver or "unknown",
        api_version=_version(p.apiVersion), subgroup_size=sub.subgroupSize,
        shared_memory_bytes=lim.maxComputeSharedMemorySize,
        max_workgroup_count=tuple(lim.maxComputeWorkGroupCount), max_workgroup_size=tuple(lim.maxComputeWorkGroupSize),
        max_workgroup_invocations=lim.maxComputeWorkGroupInvocations,
        max_storage_buffer_range=lim.maxStorageBufferRange, max_push_constants_bytes=lim.maxPushConstantsSize,
        timestamp_period_ns=lim.timestampPeriod,
        device_local_bytes=local, extensions=extensions, cooperative_matrix_shapes=shapes,
        device_id=p.deviceID, driver_version=p.driverVersion, pipeline_cache_uuid=bytes(p.pipelineCacheUUID),
        min_subgroup_size=ssc.minSubgroupSize or sub.subgroupSize, max_subgroup_size=ssc.maxSubgroupSize or sub.subgroupSize,
        subgroup_operations=sub.supportedOperations if sub.supportedStages & STAGE_COMPUTE_BIT else 0,
        mapped_local_bytes=mapped_bytes,
        mapped_local_cached=mapped is not None and bool(mem.memoryTypes[2 * mapped] & 0x8))
