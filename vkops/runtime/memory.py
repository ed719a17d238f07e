"""Device memory: a caching allocator of kp tensors in size classes, and device tensors over them.

A kp tensor costs about a millisecond to create (a VkBuffer, its memory, a mapping), so buffers are
never freed while idle: a dropped DeviceTensor's buffer returns to its size class and the next request
of that class takes it back, keeping its serial and so the descriptor sets already built for it.
Device buffers are kp `storage` tensors (no staging copy of their own); data moves through a second
pool of host-visible buffers. On a CPU device (lavapipe), where all memory is host memory, device
buffers are host-visible themselves and data moves without any copy. Where the host maps all of the
GPU's memory (resizable BAR), device buffers are kp `device_host` tensors: the host writes them in place,
and reads small ones in place (reads cross PCIe uncached: large ones still go through staging).
"""
from __future__ import annotations

import atexit
import collections
import functools
import heapq
import itertools
import math
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..dtypes import DataType, unpack, words_for
from ..errors import DeviceLimitError, DeviceMemoryError, ValidationError
from ..tensor import TensorDesc
from . import hostcopy
from ._kp import kp

_serials = itertools.count(1)

# Requests of at least this many bytes are checked against the heap's budget before they are made.
BUDGET_CHECK_BYTES = 64 << 20

# Reads of device memory the host maps (resizable BAR) up to this many bytes are made in place; larger ones
# through a staging copy: uncached reads cross PCIe at ~30 MB/s (H200: 256 B 9 µs, 1 KiB 33, a staged read 22;
# docs/tuning/runtime.md#2026-11-26-session-23-mapped-device-memory).
MAPPED_READ_BYTES = 512
# ... up to this many where libvkops reads them by streaming loads (hostcopy.mapped_reader) and the staged read would take
# a submission of its own (an eager read): H100 host, 8 KiB in place 23-25 us against 32-35 staged, 16 KiB even. A
# batch's download or a graph's fetch, whose staging copy rides in a submission made anyway, keeps MAPPED_READ_BYTES:
# top_k 8x151936 NumPy calls 0.44 -> 0.51-0.54 ms read in place (docs/tuning/runtime.md, session 32).
MAPPED_STREAM_READ_BYTES = 8192

# Requests up to this many words share one class; above it, four classes per power of two
# (under 25% unused).
MIN_CLASS_WORDS = 256


def mapped_read_bytes(alone: bool = False) -> int:
    """The largest read of uncached mapped device memory made in place: MAPPED_READ_BYTES, or where the read would
    otherwise take a submission of its own (`alone`: an eager read) and libvkops reads it by streaming loads,
    MAPPED_STREAM_READ_BYTES."""
    return MAPPED_STREAM_READ_BYTES if alone and hostcopy.mapped_reader() else MAPPED_READ_BYTES


def size_class(words: int, limit_words: int) -> int:
    """The words a request of `words` gets: rounded up to its class, never past `limit_words`."""
    if words <= MIN_CLASS_WORDS:
        return MIN_CLASS_WORDS if MIN_CLASS_WORDS <= limit_words else words
    step = 1 << max(words.bit_length() - 3, 0)
    cls = -(-words // step) * step
    return cls if cls <= limit_words else words


class _Block:
    """One kp tensor: what the allocator keeps while nobody uses it."""

    __slots__ = ("kp", "words", "serial", "addr")

    def __init__(self, kp_tensor, words: int):
        self.kp, self.words, self.serial = kp_tensor, words, next(_serials)
        self.addr = None  # where the host maps it (host-visible ones), once asked

    @property
    def nbytes(self) -> int:
        return self.words * 4


_exiting = False


@atexit.register
def _at_exit():
    global _exiting
    _exiting = True  # kp's manager frees everything itself: buffers dropped from here on are not returned


class _Buffer:
    """A block in use. When the last holder (device tensors, batches) lets go, the block goes back to
    its allocator (`__del__`: a tenth of what a weakref.finalize per buffer cost, and a call
    allocates one to three buffers)."""

    __slots__ = ("kp", "words", "serial", "host_visible", "host_cached", "_block", "_allocator")

    def __init__(self, block: _Block, allocator: "Allocator"):
        self.kp, self.words, self.serial = block.kp, block.words, block.serial
        self.host_visible, self.host_cached = allocator.host_visible, allocator.host_cached
        self._block, self._allocator = block, allocator

    def __del__(self):
        if not _exiting:
            self._allocator.put(self._block)

    @property
    def nbytes(self) -> int:
        return self.words * 4

    def host(self) -> np.ndarray:
        """The mapped memory as uint32 words (host-visible buffers only)."""
        return self.kp.data()

    def host_address(self) -> int:
        """The address the host maps this buffer at (host-visible buffers only; fixed while the block lives)."""
        b = self._block
        if b.addr is None:
            b.addr = self.kp.data().ctypes.data
        return b.addr

    def reads_mapped(self, words: int, alone: bool = False) -> bool:
        """The host reads `words` of this buffer in place (host memory, or few words of mapped device
        memory) rather than through a staging copy; `alone`: that copy would be a submission of its own."""
        return self.host_visible and (self.host_cached or words * 4 <= mapped_read_bytes(alone))


class Allocator:
    """Size-class caching allocator of kp tensors of one type: "storage" (device memory), "mapped" (device
    memory the host maps) or "host" (host memory: staging, a CPU device's buffers).

    `created` counts kp tensors made, `reused` requests served from idle blocks: a steady stream of
    calls shows `created` standing still. Idle blocks above `idle_limit` bytes are freed, largest
    first; `trim()` frees them all."""

    def __init__(self, device, tensor_type: str, idle_limit: int, on_free=None, cached: Optional[bool] = None):
        self.device = device
        self.host_visible = tensor_type in ("host", "mapped")
        self.host_cached = tensor_type == "host" if cached is None else cached  # mapped: an integrated GPU's
        self._type = tensor_type
        self.idle_limit = idle_limit
        self._on_free = on_free  # called with a serial whose block is destroyed
        # Idle blocks by class, each a heap by serial: a request takes the lowest serial, so a steady
        # stream of the same calls binds the same buffers every time (however late a holder lets go)
        # and reuses the descriptor sets built for them; LIFO rotated a batch's scratch by one a batch.
        self._idle: Dict[int, List[Tuple[int, _Block]]] = collections.defaultdict(list)
        self._classes: Dict[int, Tuple[int, int]] = {}  # words asked for -> (the limit then, its class)
        self.idle_bytes = 0
        self.held_bytes = 0  # every block this allocator made and has not freed, in use or idle
        self.created = 0
        self.reused = 0

    def get(self, words: int) -> _Buffer:
        dev = self.device
        limit = dev._limits.max_storage_buffer_range
        cls = self._classes.get(words)  # the class of a size asked for before under the same limit
        if cls is None or cls[0] != limit:
            nbytes = max(words, 1) * 4
            if nbytes > limit:
                raise DeviceLimitError(
                    f"a buffer of {nbytes} bytes exceeds {dev.name}'s maxStorageBufferRange of "
                    f"{limit} bytes; split the tensor")
            if len(self._classes) > 4096:
                self._classes.clear()
            cls = self._classes[words] = (limit, size_class(max(words, 1), limit // 4))
        cls = cls[1]
        with dev._lock:
            idle = self._idle.get(cls)
            if idle:
                block = heapq.heappop(idle)[1]
                self.idle_bytes -= block.words * 4
                self.reused += 1
            else:
                block = self._create(cls)
            return _Buffer(block, self)

    def _create(self, words: int) -> _Block:
        """A new kp tensor; over budget or refused, idle blocks are freed and it is tried once more."""
        nbytes = words * 4
        why = self.device._memory_check(self, nbytes)
        if why:
            self.device.trim()
            why = self.device._memory_check(self, nbytes)
        if why:
            raise DeviceMemoryError(self.device._memory_message(self, nbytes, why))
        k = kp()
        ttype = {"host": k.TensorTypes.host, "mapped": k.TensorTypes.device_host}.get(self._type, k.TensorTypes.storage)
        for attempt in (0, 1):
            try:
                # np.zeros is calloc: for storage tensors kp reads none of it.
                t = self.device._manager().tensor_t(np.zeros(words, np.uint32), ttype)
                break
            except RuntimeError as e:  # the patched kp reports a failed vkAllocateMemory/vkCreateBuffer
                if "failed" not in str(e) or not str(e).startswith("vk"):
                    raise
                if attempt:
                    raise DeviceMemoryError(self.device._memory_message(self, nbytes, str(e))) from e
                self.device.trim()
        self.created += 1
        self.held_bytes += nbytes
        return _Block(t, words)

    def put(self, block: _Block) -> None:
        dev = self.device
        nbytes = block.words * 4
        with dev._lock:
            if nbytes > self.idle_limit:
                self._destroy(block)
                return
            heapq.heappush(self._idle[block.words], (block.serial, block))
            self.idle_bytes += nbytes
            while self.idle_bytes > self.idle_limit:
                self._destroy_largest()

    def trim(self) -> int:
        """Free every idle block; returns the bytes freed."""
        with self.device._lock:
            freed = self.idle_bytes
            while self.idle_bytes:
                self._destroy_largest()
            return freed

    def _destroy_largest(self):
        words = max(w for w, blocks in self._idle.items() if blocks)
        heap = self._idle[words]
        block = heap.pop(heap.index(max(heap)))[1]  # the newest: requests take the oldest first
        heapq.heapify(heap)
        self.idle_bytes -= block.nbytes
        self._destroy(block)

    def _destroy(self, block: _Block):
        if self._on_free is not None:
            self._on_free(block.serial)  # descriptor sets bound to it go first
        block.kp.destroy()
        self.held_bytes -= block.nbytes


@functools.lru_cache(maxsize=1024)
def _view_desc(data_type: DataType, sizes, strides) -> TensorDesc:
    """Views' descriptors, built once per layout: a call's output is a new tensor every time, and the
    faces reshape it (QLinearMatMul's {B,C,M,N} to the caller's rank) call after call."""
    return TensorDesc(data_type, sizes, strides, name="as_strided")


@functools.lru_cache(maxsize=1024)
def _packed_desc(data_type: DataType, sizes) -> TensorDesc:
    """Packed descriptors of NumPy inputs, built once per dtype and shape (a NumPy call stages its
    inputs call after call)."""
    return TensorDesc(data_type, sizes)


class DeviceTensor:
    """A tensor resident on a device: a TensorDesc over a buffer of packed uint32 words.

    Create one with `vkops.to_device(array)` or `Device.tensor(array)`; read it back with `.numpy()`.
    Operators given device tensors return device tensors and skip the host round trip.
    """

    __slots__ = ("_buffer", "desc", "_device", "_views", "__weakref__")

    def __init__(self, buffer: _Buffer, desc: TensorDesc, device):
        self._buffer, self.desc, self._device = buffer, desc, device
        self._views: Optional[dict] = None  # as_strided / reshape results by layout (views are immutable)

    @property
    def device(self):
        """The Device the tensor lives on."""
        return self._device

    @property
    def data_type(self) -> DataType:
        """Its DML data type."""
        return self.desc.data_type

    @property
    def dtype(self) -> np.dtype:
        """Its NumPy dtype."""
        return self.desc.data_type.np

    @property
    def shape(self) -> Tuple[int, ...]:
        """Its sizes."""
        return self.desc.sizes

    @property
    def ndim(self) -> int:
        """Its number of dimensions."""
        return self.desc.rank

    def __repr__(self) -> str:
        return f"DeviceTensor({self.desc!r} on {self.device.name!r})"

    def as_strided(self, sizes, strides) -> "DeviceTensor":
        """A view of the same buffer with other sizes and element strides (like DML buffer tensors)."""
        key = (tuple(sizes), None if strides is None else tuple(strides))
        try:
            view = self._views.get(key) if self._views is not None else None
        except TypeError:  # not a layout: TensorDesc names the field
            return self._view(sizes, strides)
        if view is None:  # operators take the same views of the same tensors call after call
            view = self._view(key[0], key[1])
            if self._views is None:
                self._views = {}
            if len(self._views) < 8:
                self._views[key] = view
        return view

    def _view(self, sizes, strides) -> "DeviceTensor":
        try:
            desc = _view_desc(self.data_type, sizes, strides)
        except TypeError:  # unhashable sizes or strides: TensorDesc names the field
            desc = TensorDesc(self.data_type, sizes, strides, name="as_strided")
        if words_for(desc.span, self.data_type) > self._buffer.words:
            raise ValidationError(
                f"as_strided: sizes {desc.sizes} with strides {desc.strides} reach {desc.span} elements; "
                f"the buffer holds {self._buffer.words * 32 // self.data_type.bits}")
        return DeviceTensor(self._buffer, desc, self._device)

    def reshape(self, *sizes) -> "DeviceTensor":
        """A packed view with other sizes of the same element count (`t.reshape(2, 3)` or
        `t.reshape((2, 3))`); raises ValidationError for a strided view or another element count."""
        sizes = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else tuple(sizes)
        if sizes == self.desc.sizes and self.desc.strides is None:
            return self  # views are immutable: the same shape is this tensor
        if not self.desc.is_packed:
            raise ValidationError(f"reshape needs a packed tensor; got strides {self.desc.strides}")
        if math.prod(sizes) != self.desc.element_count:
            raise ValidationError(f"reshape: cannot reshape {self.shape} into {sizes}")
        return self.as_strided(sizes, None)

    def numpy(self) -> np.ndarray:
        """Download and return a NumPy array (honours the view's strides)."""
        return self.device._read(self)

    def from_buffer(self, buf, words: int) -> np.ndarray:
        """This tensor's elements from the first `words` of host-visible `buf` (a copy); uncached mapped memory
        through libvkops' streaming loads where it offers them."""
        read = None if buf.host_cached else hostcopy.mapped_reader()
        if read is None:
            return self.from_words(buf.host()[:words])
        if self.desc.is_packed:  # straight into the result: its bytes lead the buffer, as from_words reads them
            return hostcopy.read_mapped(read, buf, self.shape, self.data_type.np)
        return self.from_words(hostcopy.read_mapped(read, buf, (words,), np.uint32))

    def from_words(self, words: np.ndarray) -> np.ndarray:
        """This tensor's elements from the words of its buffer (a copy)."""
        if self.desc.is_packed:
            return hostcopy.copy_out(np.asarray(words, dtype="<u4").reshape(-1).view(np.uint8), self.data_type.np,
                                     self.shape)
        flat = unpack(words, self.data_type, (self.desc.span,))
        item = flat.itemsize
        view = np.lib.stride_tricks.as_strided(flat, self.shape, [s * item for s in self.desc.element_strides])
        return np.ascontiguousarray(view)

    def upload(self, array) -> "DeviceTensor":
        """Overwrite the buffer with `array` (same dtype and element count as this packed tensor); returns
        self. Raises ValidationError otherwise."""
        array = np.asarray(array)
        if DataType.of(array) != self.data_type or array.size != self.desc.element_count:
            raise ValidationError(
                f"upload: expected {self.desc.element_count} elements of {self.data_type.name}; "
                f"got {array.size} of {array.dtype}")
        self.device._write(self._buffer, array)
        return self


def host_layout(array: np.ndarray) -> Tuple[np.ndarray, TensorDesc]:
    """What of a NumPy array travels, and its descriptor on the device: arrays with non-negative
    strides travel as the span they cover and keep their strides, so a broadcast or transposed view
    is not expanded on the host."""
    dt = DataType.of(array, "input data_type")
    if array.ndim == 0:
        array = array.reshape(1)
    item = array.itemsize
    desc = _packed_desc(dt, array.shape)
    if not array.flags.c_contiguous and all(s >= 0 and s % item == 0 for s in array.strides):
        sdesc = TensorDesc(dt, array.shape, [s // item for s in array.strides])
        if sdesc.span <= 2 * desc.element_count:
            return np.lib.stride_tricks.as_strided(array, (sdesc.span,), (item,)), sdesc
    return array, desc
