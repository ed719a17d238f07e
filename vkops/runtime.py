"""The one layer that talks to kp: devices, device tensors, cached pipelines and recorded batches.

Execution model (after DirectML): describe -> validate -> compile (pipelines cached per device,
kernel, specialization and bound buffers) -> record dispatches -> execute. One kp `eval` costs about
half a millisecond on a discrete GPU while a recorded dispatch costs microseconds, so a `Batch`
records the dispatches of many operators and submits them together.

kp records no barrier between two compute dispatches (its own pre-dispatch barrier covers only
transfer writes), and its Python binding has no memory-barrier op. A batch therefore tracks which
buffers each dispatch reads and writes, and where a later dispatch depends on an earlier one it
either records `OpTensorSyncLocal` on the written buffers (a compute->transfer barrier that, chained
with kp's transfer->compute barrier, orders the two dispatches and makes the writes visible; cheap
for small buffers, and it leaves the host copy current) or, for large buffers, ends the submission
and continues in a new one after the fence.
"""
from __future__ import annotations

import collections
import itertools
import os
import threading
import weakref
from importlib import resources
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import vkinfo
from .dtypes import DataType, pack, unpack, words_for
from .errors import DeviceLimitError, ValidationError
from .tensor import TensorDesc

_kp = None


def _kp_module():
    """kp is imported on first device use, so descriptors and validation work without it."""
    global _kp
    if _kp is None:
        import kp  # noqa: PLC0415

        _kp = kp
    return _kp


# Buffers up to this size get an in-submission barrier (a device->staging copy); larger ones split
# the submission, which costs one more fence wait instead of a copy over the host bus.
BARRIER_COPY_LIMIT = 4 << 20
ALGORITHM_CACHE_SIZE = 512
POOL_BYTES = 256 << 20

_serials = itertools.count(1)
_infos: Optional[List[vkinfo.DeviceInfo]] = None
_infos_lock = threading.Lock()


def devices() -> List[vkinfo.DeviceInfo]:
    """Every Vulkan device the loader sees, in kp's index order (no device is created)."""
    global _infos
    with _infos_lock:
        if _infos is None:
            _infos = vkinfo.query_devices()
        return list(_infos)


# ---------------------------------------------------------------------------------------------- #
# Buffers and device tensors
# ---------------------------------------------------------------------------------------------- #
class _Buffer:
    """A kp tensor of uint32 words (device-local, with kp's host-visible staging copy)."""

    __slots__ = ("device", "kp", "words", "serial", "pooled", "_finalizer", "__weakref__")

    def __init__(self, device: "Device", words: int, pooled: bool = False):
        nbytes = words * 4
        if nbytes > device.max_storage_buffer_range:
            raise DeviceLimitError(
                f"a buffer of {nbytes} bytes exceeds {device.name}'s maxStorageBufferRange of "
                f"{device.max_storage_buffer_range} bytes; split the tensor")
        self.device, self.words, self.pooled = device, words, pooled
        self.serial = next(_serials)
        self.kp = device._manager().tensor_t(np.zeros(max(words, 1), dtype=np.uint32))
        # When the last DeviceTensor over this buffer goes, so do the cached pipelines bound to it
        # (they hold the kp tensor) and the device and staging memory.
        self._finalizer = weakref.finalize(self, _free_buffer, device, self.serial, self.kp)
        self._finalizer.atexit = False  # at exit kp's manager frees everything itself

    @property
    def nbytes(self) -> int:
        return self.words * 4

    def host(self) -> np.ndarray:
        """kp's staging memory as a uint32 view (valid after a download)."""
        return self.kp.data()

    def destroy(self):
        self._finalizer()
        self.kp = None


def _free_buffer(device: "Device", serial: int, kp_tensor) -> None:
    device._forget(serial)
    kp_tensor.destroy()


class DeviceTensor:
    """A tensor resident on a device: a TensorDesc over a buffer of packed uint32 words.

    Create one with `vkops.to_device(array)` or `Device.tensor(array)`; read it back with `.numpy()`.
    Operators given device tensors return device tensors and skip the host round trip.
    """

    def __init__(self, buffer: _Buffer, desc: TensorDesc):
        self._buffer, self.desc = buffer, desc

    # -- description -------------------------------------------------------------------------- #
    @property
    def device(self) -> "Device":
        return self._buffer.device

    @property
    def data_type(self) -> DataType:
        return self.desc.data_type

    @property
    def dtype(self) -> np.dtype:
        return self.desc.data_type.np

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.desc.sizes

    @property
    def ndim(self) -> int:
        return self.desc.rank

    def __repr__(self) -> str:
        return f"DeviceTensor({self.desc!r} on {self.device.name!r})"

    def as_strided(self, sizes, strides) -> "DeviceTensor":
        """A view of the same buffer with other sizes and element strides (like DML buffer tensors)."""
        desc = TensorDesc(self.data_type, sizes, strides, name="as_strided")
        if words_for(desc.span, self.data_type) > self._buffer.words:
            raise ValidationError(
                f"as_strided: sizes {desc.sizes} with strides {desc.strides} reach {desc.span} elements; "
                f"the buffer holds {self._buffer.words * 32 // self.data_type.bits}")
        return DeviceTensor(self._buffer, desc)

    def reshape(self, *sizes) -> "DeviceTensor":
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else tuple(sizes)
        if not self.desc.is_packed:
            raise ValidationError(f"reshape needs a packed tensor; got strides {self.desc.strides}")
        if int(np.prod(sizes)) != self.desc.element_count:
            raise ValidationError(f"reshape: cannot reshape {self.shape} into {sizes}")
        return DeviceTensor(self._buffer, TensorDesc(self.data_type, sizes))

    # -- data --------------------------------------------------------------------------------- #
    def numpy(self) -> np.ndarray:
        """Download and return a NumPy array (honours the view's strides)."""
        dev = self.device
        dev._check_not_pending(self._buffer)
        with dev._lock:
            seq = dev._sequence()
            seq.record(_kp_module().OpTensorSyncLocal([self._buffer.kp]))
            seq.eval()
            dev._recycle_sequence(seq)
            return self._from_host()

    def _from_host(self) -> np.ndarray:
        words = self._buffer.host()
        if self.desc.is_packed:
            return unpack(words, self.data_type, self.shape)
        flat = unpack(words, self.data_type, (self.desc.span,))
        item = flat.itemsize
        view = np.lib.stride_tricks.as_strided(flat, self.shape, [s * item for s in self.desc.element_strides])
        return np.ascontiguousarray(view)

    def upload(self, array) -> "DeviceTensor":
        """Overwrite the buffer with `array` (same dtype and element count as this packed tensor)."""
        array = np.asarray(array)
        if DataType.of(array) != self.data_type or array.size != self.desc.element_count:
            raise ValidationError(
                f"upload: expected {self.desc.element_count} elements of {self.data_type.name}; "
                f"got {array.size} of {array.dtype}")
        dev = self.device
        dev._check_not_pending(self._buffer)
        with dev._lock:
            self._buffer.host()[:] = pack(array, self._buffer.words)
            seq = dev._sequence()
            seq.record(_kp_module().OpTensorSyncDevice([self._buffer.kp]))
            seq.eval()
            dev._recycle_sequence(seq)
        return self


# ---------------------------------------------------------------------------------------------- #
# Devices
# ---------------------------------------------------------------------------------------------- #
class Device:
    """One Vulkan device. `Device(i)` returns the same object for the same index in a process;
    the kp manager behind it is created on first use. The default index is $VKOPS_DEVICE, else 0."""

    _instances: Dict[int, "Device"] = {}
    _instances_lock = threading.Lock()

    def __new__(cls, index: Optional[int] = None):
        if index is None:
            index = int(os.environ.get("VKOPS_DEVICE", "0"))
        infos = devices()
        if not 0 <= index < len(infos):
            raise ValidationError(f"Device.index must be < {len(infos)} (devices found); got {index}")
        with cls._instances_lock:
            dev = cls._instances.get(index)
            if dev is None:
                dev = super().__new__(cls)
                dev._init(infos[index])
                cls._instances[index] = dev
            return dev

    def _init(self, info: vkinfo.DeviceInfo):
        self.info = info
        self._lock = threading.RLock()
        self._mgr = None
        self._algorithms: "collections.OrderedDict[tuple, object]" = collections.OrderedDict()
        self._by_serial: Dict[int, set] = collections.defaultdict(set)
        self._spirv: Dict[str, bytes] = {}
        self._pool: Dict[int, List[_Buffer]] = collections.defaultdict(list)
        self._pool_bytes = 0
        self._pending: "weakref.WeakSet[Batch]" = weakref.WeakSet()
        self._sentinel: Optional[_Buffer] = None
        self._counters: Optional[DeviceTensor] = None
        self._local = threading.local()

    # -- facts -------------------------------------------------------------------------------- #
    index = property(lambda self: self.info.index)
    name = property(lambda self: self.info.name)
    vendor = property(lambda self: self.info.vendor)
    device_type = property(lambda self: self.info.device_type)
    driver = property(lambda self: self.info.driver)
    subgroup_size = property(lambda self: self.info.subgroup_size)
    shared_memory_bytes = property(lambda self: self.info.shared_memory_bytes)
    max_workgroup_count = property(lambda self: self.info.max_workgroup_count)
    max_workgroup_size = property(lambda self: self.info.max_workgroup_size)
    max_workgroup_invocations = property(lambda self: self.info.max_workgroup_invocations)
    max_storage_buffer_range = property(lambda self: self.info.max_storage_buffer_range)
    cooperative_matrix = property(lambda self: self.info.cooperative_matrix)
    timestamp_period_ns = property(lambda self: self.info.timestamp_period_ns)

    def __repr__(self) -> str:
        i = self.info
        return (f"Device({i.index}: {i.name!r}, {i.vendor}, {i.device_type}, driver {i.driver!r}, "
                f"subgroup {i.subgroup_size}, shared {i.shared_memory_bytes // 1024} KiB, "
                f"cooperative_matrix={i.cooperative_matrix})")

    def _manager(self):
        with self._lock:
            if self._mgr is None:
                kp = _kp_module()
                exts = ["VK_KHR_cooperative_matrix"] if self.cooperative_matrix else []
                self._mgr = kp.Manager(self.index, [], exts)
            return self._mgr

    # -- tensors ------------------------------------------------------------------------------ #
    def empty(self, desc: TensorDesc) -> DeviceTensor:
        """A packed device tensor with undefined contents."""
        return DeviceTensor(self._buffer(words_for(desc.element_count, desc.data_type)), desc.packed())

    def tensor(self, array, data_type=None) -> DeviceTensor:
        """Upload a NumPy array (any layout) into a new packed device tensor."""
        array = np.asarray(array)
        dt = DataType.of(data_type if data_type is not None else array, "tensor data_type")
        array = array.astype(dt.np, copy=False)
        if array.ndim == 0:
            array = array.reshape(1)
        desc = TensorDesc(dt, array.shape)
        t = DeviceTensor(self._buffer(words_for(desc.element_count, dt)), desc)
        return t.upload(array)

    def counters(self, words: int) -> DeviceTensor:
        """A zeroed uint32 tensor of at least `words` words, shared by kernels that count workgroup
        arrivals (the last to arrive finishes the work) and leave every counter zero again. Bind it
        as written: the batch then orders the dispatches that share it."""
        with self._lock:
            if self._counters is None or self._counters.desc.element_count < words:
                self._counters = self.tensor(np.zeros(max(words, 4096), np.uint32))
            return self._counters

    def _buffer(self, words: int, pooled: bool = False) -> _Buffer:
        with self._lock:
            if pooled and self._pool.get(words):
                buf = self._pool[words].pop()
                self._pool_bytes -= buf.nbytes
                return buf
            return _Buffer(self, words, pooled)

    def _scratch(self, words: int) -> _Buffer:
        """A buffer from the pool; give it back with _recycle once no submission uses it."""
        return self._buffer(words, pooled=True)

    def _recycle(self, buf: _Buffer):
        with self._lock:
            if buf.nbytes > POOL_BYTES // 2:
                buf.destroy()
                return
            self._pool[buf.words].append(buf)
            self._pool_bytes += buf.nbytes
            while self._pool_bytes > POOL_BYTES:  # drop the largest idle buffers first
                words = max(w for w, bufs in self._pool.items() if bufs)
                old = self._pool[words].pop(0)
                self._pool_bytes -= old.nbytes
                old.destroy()

    def _stage(self, array: np.ndarray) -> Tuple[_Buffer, DeviceTensor]:
        """Host data into a pooled buffer's staging memory (upload still to be recorded).

        Arrays with non-negative strides travel as the span they cover and keep their strides, so a
        broadcast or transposed view is not expanded on the host."""
        dt = DataType.of(array, "input data_type")
        if array.ndim == 0:
            array = array.reshape(1)
        item = array.itemsize
        el = [s // item for s in array.strides]
        desc = TensorDesc(dt, array.shape)
        span_ok = all(s >= 0 and s % item == 0 for s in array.strides)
        if not array.flags.c_contiguous and span_ok:
            sdesc = TensorDesc(dt, array.shape, el)
            if sdesc.span <= 2 * desc.element_count:
                flat = np.lib.stride_tricks.as_strided(array, (sdesc.span,), (item,))
                buf = self._scratch(words_for(sdesc.span, dt))
                buf.host()[:] = pack(flat, buf.words)
                return buf, DeviceTensor(buf, sdesc)
        buf = self._scratch(words_for(desc.element_count, dt))
        buf.host()[:] = pack(array, buf.words)
        return buf, DeviceTensor(buf, desc)

    # -- pipelines ---------------------------------------------------------------------------- #
    def spirv(self, kernel: str) -> bytes:
        code = self._spirv.get(kernel)
        if code is None:
            try:
                code = resources.files("vkops").joinpath("spv", f"{kernel}.spv").read_bytes()
            except FileNotFoundError:
                raise RuntimeError(f"SPIR-V for kernel {kernel!r} is missing: run `make spv`") from None
            self._spirv[kernel] = code
        return code

    def algorithm(self, kernel: str, buffers: Sequence[_Buffer], groups: Tuple[int, int, int],
                  spec: Sequence[int], push_words: int):
        """A kp Algorithm (pipeline + descriptor set), built once per kernel, specialization, grid and
        bound buffers, then reused: kp binds buffers and grid at creation."""
        key = (kernel, tuple(spec), tuple(groups), push_words, tuple(b.serial for b in buffers))
        with self._lock:
            algo = self._algorithms.get(key)
            if algo is not None:
                self._algorithms.move_to_end(key)
                return algo
            algo = self._manager().algorithm(
                [b.kp for b in buffers], self.spirv(kernel), list(groups),
                np.asarray(spec, dtype=np.uint32), np.zeros(push_words, dtype=np.uint32))
            self._algorithms[key] = algo
            for b in buffers:
                self._by_serial[b.serial].add(key)
            while len(self._algorithms) > ALGORITHM_CACHE_SIZE:
                old_key, old = self._algorithms.popitem(last=False)
                self._drop_key(old_key)
                old.destroy()
            return algo

    def _drop_key(self, key):
        for serial in key[-1]:
            keys = self._by_serial.get(serial)
            if keys is not None:
                keys.discard(key)

    def _forget(self, serial: int):
        with self._lock:
            for key in self._by_serial.pop(serial, ()):
                algo = self._algorithms.pop(key, None)
                if algo is not None:
                    self._drop_key(key)
                    algo.destroy()

    def pipeline_count(self) -> int:
        return len(self._algorithms)

    # -- submission --------------------------------------------------------------------------- #
    def _sequence(self, timestamps: int = 0):
        # A fresh sequence each time: kp re-begins a reused command buffer without resetting it,
        # which its command pool (no RESET_COMMAND_BUFFER flag) does not allow.
        return self._manager().sequence(0, timestamps)

    def _recycle_sequence(self, seq):
        seq.destroy()

    def _sentinel_buffer(self) -> _Buffer:
        if self._sentinel is None:
            self._sentinel = _Buffer(self, 1)
        return self._sentinel

    def _check_not_pending(self, buf: _Buffer):
        for b in list(self._pending):
            if buf.serial in b._touched:
                raise RuntimeError("this tensor belongs to a batch that has not run yet: leave the `with` "
                                   "block (or call batch.run()) first")

    def batch(self, timestamps: bool = False) -> "Batch":
        """Record the dispatches of several operators and submit them together:

            with dev.batch():
                y = vkops.slice(x, ...)       # device tensors in, device tensors out
                v, i = vkops.top_k(y, 8)
            v.numpy()
        """
        return Batch(self, timestamps=timestamps)

    def _active_batch(self) -> Optional["Batch"]:
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else None


def to_device(array, device: Optional[Device] = None, data_type=None) -> DeviceTensor:
    """Upload a NumPy array to `device` (default device when None)."""
    return (device or Device()).tensor(array, data_type)


# ---------------------------------------------------------------------------------------------- #
# Recording
# ---------------------------------------------------------------------------------------------- #
class Batch:
    """Dispatches recorded for one device and run in as few submissions as their dependencies allow.

    Used as a context manager it becomes the current batch of this thread for its device: operators
    called inside record into it (NumPy inputs are uploaded as part of it, outputs are device
    tensors), and it runs when the block ends. `run()` may also be called by hand."""

    def __init__(self, device: Device, timestamps: bool = False):
        self.device = device
        self.timestamps = timestamps
        self._segments: List[list] = [[]]  # each: list of ("op", kp op) / ("dispatch", ...)
        self._written: Dict[int, _Buffer] = {}
        self._read: set = set()
        self._touched: set = set()
        self._keep: List[_Buffer] = []  # scratch buffers to recycle after the run
        self._refs: List[_Buffer] = []  # every buffer a recorded op binds, alive until the run
        self._downloads: List[_Buffer] = []
        self._ran = False
        self.gpu_ns: List[int] = []  # per dispatch, when timestamps=True
        device._pending.add(self)

    def __enter__(self) -> "Batch":
        loc = self.device._local
        if not hasattr(loc, "stack"):
            loc.stack = []
        loc.stack.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.device._local.stack.pop()
        if exc_type is None:
            self.run()
        else:
            self._release()

    # -- recording ---------------------------------------------------------------------------- #
    def upload(self, array: np.ndarray) -> DeviceTensor:
        """Stage a NumPy array now; its copy to the device runs at the start of this batch's work."""
        buf, t = self.device._stage(np.asarray(array))
        self._keep.append(buf)
        self._segments[-1].append(("op", _kp_module().OpTensorSyncDevice([buf.kp])))
        # A transfer write into a fresh buffer: kp's own transfer->compute barrier before each dispatch
        # covers it, so no dependency is tracked.
        self._touched.add(buf.serial)
        return t

    def scratch(self, desc: TensorDesc) -> DeviceTensor:
        """A packed temporary that lives until this batch has run."""
        buf = self.device._scratch(words_for(desc.element_count, desc.data_type))
        self._keep.append(buf)
        return DeviceTensor(buf, desc.packed())

    def dispatch(self, kernel: str, tensors: Sequence[DeviceTensor], writes: Iterable[int],
                 groups: Tuple[int, int, int], push: np.ndarray, spec: Sequence[int] = ()):
        """Record one dispatch. `tensors` bind in order; `writes` are the indices it writes."""
        if self._ran:
            raise RuntimeError("this batch has already run")
        bufs = [t._buffer for t in tensors]
        wr = {bufs[i].serial for i in writes}
        rd = {b.serial for b in bufs} - wr
        self._order(rd, wr)
        push = np.ascontiguousarray(push, dtype=np.uint32)
        algo = self.device.algorithm(kernel, bufs, groups, spec, push.size)
        self._refs.extend(bufs)
        self._segments[-1].append(("dispatch", _kp_module().OpAlgoDispatch(algo, push)))
        for b in bufs:
            self._touched.add(b.serial)
            if b.serial in wr:
                self._written[b.serial] = b
        self._read |= rd

    def _order(self, reads: set, writes: set):
        """Make this dispatch wait for earlier ones it conflicts with (RAW, WAW, WAR)."""
        raw_waw = [self._written[s] for s in (reads | writes) if s in self._written]
        war = bool(writes & self._read)
        if not raw_waw and not war:
            return
        if sum(b.nbytes for b in raw_waw) <= BARRIER_COPY_LIMIT:
            need = raw_waw or [self.device._sentinel_buffer()]
            self._segments[-1].append(("op", _kp_module().OpTensorSyncLocal([b.kp for b in need])))
        else:
            self._segments.append([])
        self._written.clear()
        self._read.clear()

    def copy(self, src: DeviceTensor, dst: DeviceTensor):
        """Record a device-to-device copy of src's buffer into dst's (vkCmdCopyBuffer; equal sizes)."""
        if src._buffer.words != dst._buffer.words:
            raise ValidationError(f"copy needs buffers of equal size; got {src._buffer.words} and "
                                  f"{dst._buffer.words} words")
        self._order({src._buffer.serial}, {dst._buffer.serial})
        self._segments[-1].append(("dispatch", _kp_module().OpTensorCopy([src._buffer.kp, dst._buffer.kp])))
        self._refs += [src._buffer, dst._buffer]
        self._touched |= {src._buffer.serial, dst._buffer.serial}
        self._written[dst._buffer.serial] = dst._buffer
        self._read.add(src._buffer.serial)

    def download(self, tensor: DeviceTensor):
        """Copy `tensor` to host memory as the batch's last step, so `.numpy()` after it is free."""
        self._downloads.append(tensor._buffer)
        self._refs.append(tensor._buffer)

    # -- running ------------------------------------------------------------------------------ #
    def run(self):
        if self._ran:
            return
        kp = _kp_module()
        dev = self.device
        if self._downloads:
            self._segments[-1].append(("op", kp.OpTensorSyncLocal([b.kp for b in self._downloads])))
        with dev._lock:
            try:
                for ops in self._segments:
                    if not ops:
                        continue
                    seq = dev._sequence(len(ops) + 1 if self.timestamps else 0)
                    for _, op in ops:
                        seq.record(op)
                    seq.eval()
                    if self.timestamps:
                        ts = seq.get_timestamps()
                        for i, (kind, _) in enumerate(ops):
                            if kind == "dispatch":
                                self.gpu_ns.append(int((ts[i + 1] - ts[i]) * dev.timestamp_period_ns))
                    dev._recycle_sequence(seq)
            finally:
                self._ran = True
                self._release()

    def _release(self):
        self.device._pending.discard(self)
        for buf in self._keep:
            self.device._recycle(buf)
        self._keep.clear()
        self._touched.clear()
        self._refs.clear()

    @property
    def submissions(self) -> int:
        return sum(1 for s in self._segments if s)


# ---------------------------------------------------------------------------------------------- #
# The NumPy face's plumbing, shared by every operator
# ---------------------------------------------------------------------------------------------- #
class Call:
    """One operator call from the NumPy face: finds the device, stages NumPy inputs, joins the
    thread's current batch or makes a one-off one, and converts outputs back.

        with Call(x, y) as call:
            xt, yt = call.inputs
            out = call.output(desc)
            record(call.batch, ..., xt, yt, out)
        return call.result(out)
    """

    def __init__(self, *inputs, device: Optional[Device] = None):
        dev = device
        for x in inputs:
            if isinstance(x, DeviceTensor):
                if dev is not None and x.device is not dev:
                    raise ValidationError(f"inputs live on different devices: {dev.name!r} and {x.device.name!r}")
                dev = x.device
        self.device = dev or Device()
        self.numpy_in = not any(isinstance(x, DeviceTensor) for x in inputs)
        self._raw = inputs
        self._outer = self.device._active_batch()
        self.batch = self._outer or Batch(self.device)
        self._inputs: Optional[List[DeviceTensor]] = None
        self._outputs: List[DeviceTensor] = []

    def __enter__(self) -> "Call":
        return self

    @property
    def descs(self) -> List[TensorDesc]:
        """The inputs' descriptors, for validation before anything is staged or recorded."""
        out = []
        for x in self._raw:
            if isinstance(x, DeviceTensor):
                out.append(x.desc)
            else:
                a = np.asarray(x)
                out.append(TensorDesc(DataType.of(a, "input data_type"), a.shape or (1,), name="input"))
        return out

    @property
    def inputs(self) -> List[DeviceTensor]:
        """Device tensors of the inputs; NumPy inputs are staged and their upload recorded."""
        if self._inputs is None:
            self._inputs = [x if isinstance(x, DeviceTensor) else self.batch.upload(np.asarray(x))
                            for x in self._raw]
        return self._inputs

    def output(self, desc: TensorDesc, out: Optional[DeviceTensor] = None, field: str = "out") -> DeviceTensor:
        """A packed output: `out` when given (checked against `desc`), pooled when it goes straight back
        to NumPy, else a new device tensor."""
        if out is not None:
            if not isinstance(out, DeviceTensor) or out.device is not self.device:
                raise ValidationError(f"{field} must be a DeviceTensor on {self.device.name!r}; got {out!r}")
            if out.data_type != desc.data_type or out.shape != desc.sizes or not out.desc.is_packed:
                raise ValidationError(f"{field} must be a packed {desc.data_type.name} tensor of sizes {desc.sizes}; "
                                      f"got {out.desc}")
            t = out
        elif self.numpy_in and self._outer is None:
            t = self.batch.scratch(desc)
        else:
            t = self.device.empty(desc)
        self._outputs.append(t)
        return t

    def __exit__(self, exc_type, exc, tb):
        if self._outer is not None:
            return
        if exc_type is not None:
            self.batch._release()
            return
        if self.numpy_in:
            for t in self._outputs:
                self.batch.download(t)
            # Read results before the batch gives its scratch buffers back.
            keep, self.batch._keep = self.batch._keep, []
            try:
                self.batch.run()
                self._host = [t._from_host() for t in self._outputs]
            finally:
                for buf in keep:
                    self.device._recycle(buf)
        else:
            self.batch.run()

    def result(self, *outs: DeviceTensor):
        """NumPy arrays when the call came in with NumPy outside a batch, else the device tensors."""
        if self.numpy_in and self._outer is None:
            res = [self._host[self._outputs.index(t)] for t in outs]
        else:
            res = list(outs)
        return res[0] if len(res) == 1 else tuple(res)
