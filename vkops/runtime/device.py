"""Devices: the facts vkops plans with, and the kp manager with its memory, pipelines and sequences."""
from __future__ import annotations

import atexit
import collections
import os
import threading
import weakref
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import drivers, vkinfo
from ..limits import Limits
from ..dtypes import DataType, words_for
from ..errors import NoDeviceError, ValidationError
from ..tensor import TensorDesc
from . import _kp as K
from . import memory as memory_mod
from .memory import Allocator, DeviceTensor
from .pipelines import Pipelines
from .plancache import PlanCache
from .inflight import ASYNC_MAX, READ_KEPT, READ_KEPT_BYTES, HostAccess  # noqa: F401  (re-exported)
from .submit import Batch, Sequences

# Extensions whose features vkops' kernels use; requested where the device offers them, and the
# patched kp enables the features they bring (Device.features lists what was enabled).
EXTENSIONS = ("VK_KHR_8bit_storage", "VK_KHR_shader_float16_int8", "VK_EXT_subgroup_size_control",
              "VK_KHR_cooperative_matrix", "VK_KHR_vulkan_memory_model", "VK_EXT_memory_budget",
              "VK_KHR_shader_integer_dot_product")

# Small read-only parameters (scales, zero points) are kept on the device by content, so a call with
# the same Python scalars uploads nothing.
CONSTANT_BYTES = 64 << 10
CONSTANT_ENTRIES = 256


_infos: Optional[List[vkinfo.DeviceInfo]] = None
_infos_lock = threading.Lock()


@atexit.register
def _drain() -> None:
    """Wait for the calls still in flight before kp's managers free what they use."""
    for dev in list(Device._instances.values()):
        try:
            dev.synchronize()
        except Exception:  # noqa: BLE001 - a lost device at exit: nothing left to save
            pass


def devices() -> List[vkinfo.DeviceInfo]:
    """Every Vulkan device the loader sees, in kp's index order, as vkinfo.DeviceInfo records (name,
    vendor, type, driver, limits, extensions); no device is created and kp is not needed."""
    global _infos
    with _infos_lock:
        if _infos is None:
            _infos = vkinfo.query_devices()
        return list(_infos)


class Device(HostAccess):
    """One Vulkan device. `Device(i)` returns the same object for the same index in a process;
    the kp manager behind it is created on first use. The default index is $VKOPS_DEVICE, else 0.

    `limits` plans every call as if the device had at most these limits: "minimum" (Vulkan 1.1's
    required minimums), another name in vkops.limits.PROFILES, a Limits or a dict of Limits fields;
    "device" restores the device's own. $VKOPS_DEVICE_LIMITS gives the default. `Device.limits` says
    what plans use."""

    _instances: Dict[int, "Device"] = {}
    _instances_lock = threading.Lock()

    def __new__(cls, index: Optional[int] = None, *, memory_budget: Optional[int] = None, limits=None):
        env = os.environ.get("VKOPS_DEVICE") if index is None else None
        if index is None:
            index = int(env or "0")
        infos = devices()
        if not 0 <= index < len(infos):
            raise NoDeviceError(_index_message(index, infos, env))
        with cls._instances_lock:
            dev = cls._instances.get(index)
            if dev is None:
                dev = super().__new__(cls)
                dev._init(infos[index])
                cls._instances[index] = dev
            if memory_budget is not None:
                dev.memory_budget = memory_budget
            if limits is not None:
                dev._set_limits(limits)
            return dev

    def _init(self, info: vkinfo.DeviceInfo):
        self.info = info
        self._lock = threading.RLock()
        self._mgr = None
        self._pending: "weakref.WeakSet[Batch]" = weakref.WeakSet()
        self._init_inflight()
        self._counters: Optional[DeviceTensor] = None
        self._constants: "collections.OrderedDict[tuple, DeviceTensor]" = collections.OrderedDict()
        self._owned: "weakref.WeakSet[DeviceTensor]" = weakref.WeakSet()  # counters and constants
        self._plans = PlanCache(self._lock)
        # Operators' indexes from a repeated call's arguments to what its first call normalised them
        # to and its plan key (qlmm/face.py): dict by operator; each entry only leads to the plan cache.
        self._faces: dict = {}
        self._recipes: dict = {}  # repeated NumPy calls' recipes by plan key (runtime/recipe.py), LRU
        self._recipe_runs = 0
        self._set_limits(os.environ.get("VKOPS_DEVICE_LIMITS") or "device")
        self._local = threading.local()
        # Bytes vkops may hold on this device (device and staging buffers together, idle ones too);
        # None: as much as the heaps give. $VKOPS_MEMORY_BUDGET sets it (e.g. 512M, 8G).
        self.memory_budget: Optional[int] = parse_bytes(os.environ.get("VKOPS_MEMORY_BUDGET"))

    index = property(lambda self: self.info.index, doc="Position in vkops.devices() (kp's device index).")
    name = property(lambda self: self.info.name, doc="VkPhysicalDeviceProperties.deviceName.")
    vendor = property(lambda self: self.info.vendor, doc="The vendor's name (from its PCI vendor id).")
    device_type = property(lambda self: self.info.device_type,
                           doc='"discrete", "integrated", "virtual", "cpu" (lavapipe) or "other".')
    driver = property(lambda self: self.info.driver, doc="Driver name and version.")
    subgroup_size = property(lambda self: self.info.subgroup_size, doc="Default subgroup size (lanes).")
    # The limits below are the effective ones (Device.limits): the device's own unless planned within a profile.
    shared_memory_bytes = property(lambda self: self._limits.shared_memory_bytes,
                                   doc="maxComputeSharedMemorySize plans use (bytes).")
    max_workgroup_count = property(lambda self: self._limits.max_workgroup_count,
                                   doc="maxComputeWorkGroupCount (x, y, z) plans use.")
    max_workgroup_size = property(lambda self: self._limits.max_workgroup_size,
                                  doc="maxComputeWorkGroupSize (x, y, z) plans use.")
    max_workgroup_invocations = property(lambda self: self._limits.max_workgroup_invocations,
                                         doc="maxComputeWorkGroupInvocations plans use.")
    max_storage_buffer_range = property(lambda self: self._limits.max_storage_buffer_range,
                                        doc="maxStorageBufferRange plans use (bytes): the largest tensor.")
    cooperative_matrix = property(lambda self: self.info.cooperative_matrix,
                                  doc="VK_KHR_cooperative_matrix with the s8 16x16x32 shape is offered.")
    timestamp_period_ns = property(lambda self: self.info.timestamp_period_ns,
                                   doc="Nanoseconds per timestamp tick.")

    @property
    def limits(self) -> Limits:
        """The limits plans for this device are derived from: its own, or within a profile."""
        return self._limits

    def _set_limits(self, limits) -> None:
        own = Limits.of_info(self.info)
        eff = own if isinstance(limits, str) and limits.strip().lower() == "device" else own.within(limits)
        with self._lock:
            if getattr(self, "_limits", None) != eff:
                self._limits = eff
                self._plans.clear()  # plans made under other limits

    @property
    def features(self) -> Tuple[str, ...]:
        """The Vulkan device features enabled for vkops (those the device offers of the ones the
        kernels use: 8/16-bit storage and arithmetic, subgroup size control, cooperative matrices)."""
        self._manager()
        return self._features

    def supports(self, kernel: str) -> bool:
        """Every device feature the kernel's SPIR-V needs (per the manifest) was enabled."""
        return set(self._pipelines.requirements(kernel)["device_features"]) <= set(self.features)

    def __repr__(self) -> str:
        i = self.info
        return (f"Device({i.index}: {i.name!r}, {i.vendor}, {i.device_type}, driver {i.driver!r}, "
                f"subgroup {i.subgroup_size}, shared {i.shared_memory_bytes // 1024} KiB, "
                f"cooperative_matrix={i.cooperative_matrix}"
                f"{'' if self._limits.profile is None else f', limits={self._limits.profile!r}'})")

    def _memory_kind(self) -> str:
        """The device buffers' memory: host memory on a CPU device (no staging copies); on a GPU, device
        memory the host maps where that is most of its memory (resizable BAR: uploads
        and small reads in place, no submission), else device memory behind staging copies.
        VKOPS_MAPPED_MEMORY=0 turns the mapped kind off (=1 asks for it wherever such memory exists)."""
        if self.device_type == "cpu":
            return "host"
        env = os.environ.get("VKOPS_MAPPED_MEMORY", "")
        info = self.info
        if env == "0" or not info.mapped_local_bytes or not hasattr(K.kp().TensorTypes, "device_host"):
            return "storage"
        # the mapped heap is the device's memory, not a 256 MiB window (a GPU without resizable BAR)
        return "mapped" if env == "1" or 2 * info.mapped_local_bytes >= info.device_local_bytes else "storage"

    def _manager(self):
        with self._lock:
            if self._mgr is None:
                exts = [e for e in EXTENSIONS if e in self.info.extensions]
                try:
                    mgr = K.kp().Manager(self.index, [], exts)
                except Exception:  # noqa: BLE001  (kp's instance found no driver: the same fallback, once)
                    if not drivers.headless_fallback():
                        raise
                    mgr = K.kp().Manager(self.index, [], exts)
                # Idle blocks kept for reuse: an eighth of device memory, 256 MiB to 2 GiB.
                idle = min(max(self.info.device_local_bytes // 8, 256 << 20), 2 << 30)
                self._pipelines = Pipelines(self, mgr)
                kind = self._memory_kind()
                self._memory = Allocator(self, kind, idle, self._forget,
                                         cached=kind == "host" or (kind == "mapped" and self.info.mapped_local_cached))
                self._staging = Allocator(self, "host", min(idle, 256 << 20), self._forget_staging)
                self._sequences = Sequences(mgr, self._lock)
                self._features = tuple(mgr.enabled_features())
                self._mgr = mgr
            return self._mgr

    def __getattr__(self, name):
        # _memory, _staging, _pipelines and _sequences exist once the manager does.
        if name in ("_memory", "_staging", "_pipelines", "_sequences", "_features"):
            self._manager()
            return self.__dict__[name]
        raise AttributeError(name)

    # -- counters for tests and benchmarks ------------------------------------------------------ #
    def pipeline_count(self) -> int:
        """Pipelines compiled in this process on this device (one per kernel and specialization)."""
        return self._pipelines.compiled

    def stats(self) -> Dict[str, int]:
        """What the runtime has created so far: pipelines compiled, kp Algorithms (descriptor sets),
        device and staging buffers made and reused, sequences made, submissions, plan cache hits
        ("replays"), plans made ("plans"), plan recordings prepared for a set of bound buffers
        ("prepared", runtime/execute.py) and ops recorded into kp sequences ("recorded_ops": a repeated
        one-off call re-submits the sequence it recorded last time and records none), and eager calls
        submitted and not yet waited for ("in_flight", at most ASYNC_MAX); "recipe_runs": repeated NumPy calls
        run from their recipe (runtime/recipe.py; counted in "replays" too)."""
        return {"pipelines": self._pipelines.compiled, "algorithms": self._pipelines.algorithms_created,
                "buffers_created": self._memory.created, "buffers_reused": self._memory.reused,
                "staging_created": self._staging.created, "sequences": self._sequences.created,
                "submissions": self._sequences.submissions, "recorded_ops": self._sequences.recorded_ops,
                "in_flight": len(self._async),
                "replays": self._plans.hits + self._recipe_runs, "recipe_runs": self._recipe_runs,
                "plans": self._plans.stored, "prepared": self._pipelines.prepared_created,
                "pipeline_cache_loaded_bytes": self._pipelines.cache_loaded}

    def save_pipeline_cache(self):
        """Write the pipeline cache file now (it is also written at exit); returns its path or None."""
        return self._pipelines.save()

    def trim(self) -> int:
        """Free the device and staging memory idle in the caching allocators (after waiting for the
        calls in flight, whose buffers then go idle); returns bytes freed."""
        self.synchronize()
        self._recipes.clear()  # their buffers go idle
        return self._memory.trim() + self._staging.trim()

    # -- tensors ------------------------------------------------------------------------------ #
    def empty(self, desc: TensorDesc) -> DeviceTensor:
        """A packed device tensor with undefined contents."""
        return DeviceTensor(self._memory.get(words_for(desc.element_count, desc.data_type)), desc.packed(), self)

    def tensor(self, array, data_type=None) -> DeviceTensor:
        """Upload a NumPy array (any layout) into a new packed device tensor."""
        array = np.asarray(array)
        dt = DataType.of(data_type if data_type is not None else array, "tensor data_type")
        array = array.astype(dt.np, copy=False)
        if array.ndim == 0:
            array = array.reshape(1)
        return self.empty(TensorDesc(dt, array.shape)).upload(array)

    def constant(self, array: np.ndarray, key: Optional[tuple] = None) -> DeviceTensor:
        """A device copy of a small array that no kernel writes, shared by every call that passes
        the same dtype, shape and bytes (an LRU of CONSTANT_ENTRIES). `key`: the array's inputs.frozen_key,
        when it has one (its bytes are not read again)."""
        if key is None:
            array = np.ascontiguousarray(array)
            if array.ndim == 0:
                array = array.reshape(1)
            key = (array.dtype.str, array.shape, array.strides, array.tobytes())
        t = self._constants.get(key)  # atomic under the GIL; insertions and evictions take the lock
        if t is not None:
            try:
                self._constants.move_to_end(key)
            except KeyError:  # evicted by another thread just now: the tensor is still good
                pass
            return t
        with self._lock:
            t = self._constants.get(key)
            if t is not None:
                return t
            t = self.tensor(array)
            self._owned.add(t)
            self._constants[key] = t
            if len(self._constants) > CONSTANT_ENTRIES:
                self._constants.popitem(last=False)
            return t

    def counters(self, words: int) -> DeviceTensor:
        """A zeroed uint32 tensor of at least `words` words, shared by kernels that count workgroup
        arrivals (the last to arrive finishes the work) and leave every counter zero again. Bind it
        as written: the batch then orders the dispatches that share it."""
        c = self._counters  # every call of a counting kernel asks: no lock once it is big enough
        if c is not None and c.desc._count >= words:
            return c
        with self._lock:
            if self._counters is None or self._counters.desc.element_count < words:
                self._counters = self.tensor(np.zeros(max(words, 4096), np.uint32))
                self._owned.add(self._counters)
            return self._counters

    def _is_owned(self, t: DeviceTensor) -> bool:
        """Whether `t` is one of the device's own tensors (counters, constants), the same for every call."""
        return t in self._owned

    # -- memory accounting ------------------------------------------------------------------- #
    def memory_held(self) -> int:
        """Bytes of device and staging memory vkops holds on this device, in use or idle."""
        return self._memory.held_bytes + self._staging.held_bytes

    def _memory_check(self, allocator, nbytes: int) -> Optional[str]:
        """Why a new block of `nbytes` should not be asked for, or None."""
        held = self.memory_held()
        if self.memory_budget is not None and held + nbytes > self.memory_budget:
            return f"vkops' memory budget is {_gib(self.memory_budget)} and it holds {_gib(held)}"
        if nbytes >= memory_mod.BUDGET_CHECK_BYTES:
            size, free, how = self._heap_free(allocator)
            if nbytes > free:
                heap = "host-visible" if allocator is self._staging else "device"
                return f"the {heap} heap has {_gib(free)} free of {_gib(size)} ({how})"
        return None

    def _heap_free(self, allocator) -> Tuple[int, int, str]:
        heaps = self._manager().memory_heaps()  # (size, budget, usage, device-local)
        local = [h for h in heaps if h[3]] or heaps
        host = [h for h in heaps if not h[3]] or local
        size, budget, usage, _ = max(host if allocator is self._staging and self.device_type != "cpu" else local)
        if budget:
            return size, max(budget - usage, 0), "VK_EXT_memory_budget"
        return size, max(size - self.memory_held(), 0), "heap size less what vkops holds"

    def _memory_message(self, allocator, nbytes: int, why: str) -> str:
        kind = "host-visible staging" if allocator is self._staging else "device"
        return (f"cannot allocate {nbytes} bytes ({_gib(nbytes)}) of {kind} memory on {self.name}: {why}; "
                f"vkops holds {_gib(self.memory_held())} ({_gib(self._memory.idle_bytes + self._staging.idle_bytes)} "
                f"idle, already freed and retried). Drop device tensors you no longer need, or ask for less")

    # -- batches ------------------------------------------------------------------------------ #
    def batch(self, timestamps: bool = False) -> Batch:
        """Record the dispatches of several operators and submit them together:

            with dev.batch():
                y = vkops.slice(x, ...)       # device tensors in, device tensors out
                v, i = vkops.top_k(y, 8)
            v.numpy()
        """
        return Batch(self, timestamps=timestamps)

    def graph(self) -> "Graph":
        """Capture operator calls on device tensors once and run them many times, each run one
        submission with no Python work per operator (runtime/graph.py):

            with dev.graph() as g:            # records, runs nothing
                h = vkops.slice(x, ...)
                v, i = vkops.top_k(h, 50)
            g.run(feed={x: array})            # writes x, runs the whole graph, waits
            v.numpy(), i.numpy()
        """
        from .graph import Graph  # noqa: PLC0415

        return Graph(self)

    def _active_batch(self) -> Optional[Batch]:
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else None


def _index_message(index: int, infos, env: Optional[str]) -> str:
    """Device.index out of range: how many devices there are, which, and where the index came from."""
    src = f" (from VKOPS_DEVICE={env})" if env is not None else ""
    if not infos:
        return (f"Device.index must be < 0 (no Vulkan devices found); got {index}{src}. "
                + drivers.diagnose(0, 0))
    found = "; ".join(f"{i.index}: {i.name} ({i.device_type}, {i.driver})" for i in infos)
    return (f"Device.index must be < {len(infos)} (devices found: {found}); got {index}{src}. Pass an index "
            f"below {len(infos)} or set VKOPS_DEVICE to one")


def parse_bytes(text: Optional[str]) -> Optional[int]:
    """'1073741824', '512M', '8G', '64k' -> bytes; None or '' -> None."""
    if not text:
        return None
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if scale > 1 else t) * scale)
    except ValueError:
        raise ValidationError(f"VKOPS_MEMORY_BUDGET must be a byte count like 512M or 8G; got {text!r}") from None


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 28 else f"{n / (1 << 20):.1f} MiB"


def to_device(array, device: Optional[Device] = None, data_type=None) -> DeviceTensor:
    """Upload `array` (a NumPy array of a DML data type, any layout; 0-d becomes shape (1,)) to `device`
    (default: Device()) as a new packed DeviceTensor, converted to `data_type` when given. Raises
    ValidationError for a dtype that is not a DML data type, DeviceMemoryError when it does not fit."""
    return (device or Device()).tensor(array, data_type)
