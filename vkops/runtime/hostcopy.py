"""Host copies: large ones (into and out of mapped staging memory) split over a few threads (NumPy releases the
GIL while it copies, and one core's copy runs well under a host's memory bandwidth); small reads of device memory
the host maps uncached by libvkops' streaming loads (`mapped_reader`)."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import native

# Copies of at least this many bytes are split (docs/tuning/runtime.md, session 21: host copies).
SPLIT_BYTES = 4 << 20
# ... and copies out of staging from this many: 2-3 MiB downloads 15-17% faster on an H200 host, uploads mixed
# (docs/tuning/runtime.md, session 22).
SPLIT_OUT_BYTES = 2 << 20
# Threads a copy is split over at most, the caller's own among them (docs/tuning/runtime.md, session 21).
THREADS = max(1, min(2, os.cpu_count() or 1))
_ALIGN = 4096  # parts start on page boundaries

# Reads of device memory the host maps uncached (resizable BAR) by libvkops' vkops_read_mapped (streaming loads: a
# 64-byte line a PCIe round trip, not one a load; H100 host 4 KiB 16-17 us against NumPy's 76-80): docs/tuning/runtime.md,
# session 32. False: NumPy's copy (research A/B).
STREAM_READS = True

_pool = None
_pool_lock = threading.Lock()
_reader = None  # vkops_read_mapped, or False: resolved once


def _forget_pool() -> None:  # a forked child has none of the parent's threads: it makes its own pool
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(THREADS - 1, thread_name_prefix="vkops-copy")
    return _pool


def copy(dst: np.ndarray, src: np.ndarray, split: int = 0) -> None:
    """dst[...] = src for two 1-D uint8 arrays of one size (src any stride-1 view), in parts on
    THREADS threads from `split` bytes (0: SPLIT_BYTES); returns when every part is done."""
    n = dst.size
    if src.size != n:
        raise ValueError(f"hostcopy.copy: sizes differ: dst {n}, src {src.size}")
    split = split or SPLIT_BYTES
    parts = min(THREADS, n // (split // 2)) if n >= split else 1
    if parts <= 1:
        np.copyto(dst, src)
        return
    step = (-(-n // parts) + _ALIGN - 1) // _ALIGN * _ALIGN
    pool = _executor()
    futures = [pool.submit(np.copyto, dst[i:i + step], src[i:i + step]) for i in range(step, n, step)]
    try:
        np.copyto(dst[:step], src[:step])
    finally:
        for f in futures:
            f.result()


def copy_out(src: np.ndarray, dtype: np.dtype, shape) -> np.ndarray:
    """A new array of `dtype` and `shape` from the leading bytes of uint8 `src` (copy() for large ones)."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1).view(np.uint8)
    copy(flat, src[:flat.size], SPLIT_OUT_BYTES)
    return out


def read_mapped(read, buf, shape, dtype) -> np.ndarray:
    """A new array of `shape` and `dtype` from the leading bytes of host-visible `buf`, copied by `read`
    (mapped_reader())."""
    out = np.empty(shape, dtype)
    read(out.ctypes.data, buf.host_address(), out.nbytes)
    return out


def mapped_reader():
    """libvkops' vkops_read_mapped(dst, src, bytes) where the library loaded and reads with streaming loads on this
    CPU (and STREAM_READS holds), else None."""
    global _reader
    if _reader is None:
        _reader = native.mapped_reader() or False
    return _reader if _reader and STREAM_READS else None
