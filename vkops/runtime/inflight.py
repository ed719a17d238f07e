"""The host's side of device memory while calls are in flight: eager calls on device tensors are submitted
without waiting (Batch.run_async) and kept here until something waits for them (`synchronize`, a host read
or write of a buffer they touch, a graph run, the Algorithm LRU); host reads and writes of device tensors
(mapped, or through staging copies: uploads submitted behind a barrier, small downloads kept recorded).
`Device` takes these methods from `HostAccess`."""
from __future__ import annotations

import collections
from typing import List

import numpy as np

from ..dtypes import words_for
from . import _kp as K
from . import hostcopy
from .memory import DeviceTensor
from .submit import Batch, barrier

# Eager calls on device tensors in flight before the oldest is waited for (each holds its buffers
# until then): enough to keep the GPU fed while Python records (docs/tuning/runtime.md#2026-11-25-session-20-async-eager).
ASYNC_MAX = 16

# Reads of device-local tensors up to READ_KEPT_BYTES keep their download recorded (a kp sequence and its
# staging buffer, READ_KEPT of them): a repeated read records nothing (docs/tuning/runtime.md#2026-11-25-session-20-async-eager).
READ_KEPT_BYTES = 1 << 20
READ_KEPT = 16


class HostAccess:
    """Device's calls in flight and host reads and writes (a mixin: the device's lock, allocators,
    sequences and pipelines are Device's)."""

    def _init_inflight(self) -> None:
        # Eager calls on device tensors submitted and not yet waited for, oldest first (Batch.run_async),
        # and the serials of the buffers they touch (a new set on every change: read without a lock).
        self._async: List[Batch] = []
        self._async_serials: frozenset = frozenset()
        self._async_written: frozenset = frozenset()
        self._reads: "collections.OrderedDict[tuple, tuple]" = collections.OrderedDict()  # _read_kept's

    @staticmethod
    def _pack_into(buf, array: np.ndarray, words: int) -> None:
        """`array`'s C-order bytes, zero-padded to `words` words, straight into mapped memory."""
        dst = buf.host()[:words].view(np.uint8)
        nbytes = array.size * array.itemsize
        if nbytes:
            hostcopy.copy(dst[:nbytes], np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        dst[nbytes:] = 0

    def _write(self, buf, array: np.ndarray) -> None:
        """Overwrite the start of `buf` with `array`'s C-order bytes, zero-padded to whole words: mapped
        memory after the calls in flight that use it, or a staged copy submitted without waiting (ordered
        after them by a barrier, before later calls by theirs: Batch.run_async)."""
        self._check_not_pending(buf)
        words = max((array.size * array.itemsize + 3) // 4, 1)
        if buf.host_visible:
            if buf.serial in self._async_serials:
                self.synchronize()
            self._pack_into(buf, array, words)
            return
        b = Batch(self, pending=False)
        try:
            b._stage_into(buf, array, words, ordered=True)
        except BaseException:
            b._release()
            raise
        b.run_async()

    def _read(self, tensor: DeviceTensor) -> np.ndarray:
        """`tensor`'s elements as a new NumPy array: a download (its barrier orders it after the calls in
        flight; mapped memory waits for them first); then every call in flight is waited for."""
        buf = tensor._buffer
        self._check_not_pending(buf)
        busy = buf.serial in self._async_written
        words = words_for(tensor.desc.span, tensor.data_type)
        if buf.reads_mapped(words, alone=True):
            if busy:
                self.synchronize()
            return tensor.from_buffer(buf, words)
        if words * 4 <= READ_KEPT_BYTES:
            out = self._read_kept(buf, words, tensor.from_words)
        else:
            b = Batch(self)
            b.download(tensor)
            b.run()
            out = b.read(tensor)
        if self._async:
            self.synchronize()  # a host read is a sync point, as torch's .cpu(): lets go of what is done
        return out

    def _read_kept(self, buf, words: int, convert) -> np.ndarray:
        """Download `words` of `buf` through a sequence recorded for it once (barrier, copy into its
        own staging buffer, barrier to the host) and submitted again on the next read; `convert` of them
        (a copy, made before another thread may reuse the staging buffer)."""
        key = (buf.serial, words)
        with self._lock:
            hit = self._reads.pop(key, None)  # out while in use: another thread records its own
        if hit is None:
            stage = self._staging.get(words)
            cap, seq = self._sequences.acquire(0)
            ops = [barrier([buf], dst_access=K.TRANSFER_READ, dst_stage=K.STAGE_TRANSFER),
                   K.kp().OpBufferCopy(buf.kp, stage.kp, words * 4),
                   barrier([stage], K.TRANSFER_WRITE, K.HOST_READ, K.STAGE_TRANSFER, K.STAGE_HOST)]
            with self._lock:
                for op in ops:
                    seq.record(op)
                self._sequences.recorded_ops += len(ops)
            hit = (stage, cap, seq)
        stage, cap, seq = hit
        try:
            self._sequences.replay(seq)
            data = convert(stage.host()[:words])
        except BaseException:
            self._sequences.release(cap, seq)
            raise
        with self._lock:
            if key in self._reads:  # another thread's, kept meanwhile
                self._sequences.release(cap, seq)
            else:
                self._reads[key] = hit
                while len(self._reads) > READ_KEPT:
                    self._sequences.release(*self._reads.popitem(last=False)[1][1:])
        return data

    def _forget_staging(self, serial: int) -> None:
        """A staging buffer's memory is being freed: drop the copies recorded with it."""
        self._pipelines.forget_transfers()

    def _forget(self, serial: int) -> None:
        """A device buffer's memory is being freed: drop what is recorded with it (Algorithms, prepared
        recordings, kept reads)."""
        self._pipelines.forget(serial)
        if self._reads:
            with self._lock:
                for key in [k for k in self._reads if k[0] == serial]:
                    self._sequences.release(*self._reads.pop(key)[1:])

    def _check_not_pending(self, buf):
        for b in list(self._pending):
            if buf.serial in b._touched:
                raise RuntimeError("this tensor belongs to a batch that has not run yet: leave the `with` "
                                   "block (or call batch.run()) first")

    # -- eager calls in flight ---------------------------------------------------------------- #
    def synchronize(self) -> None:
        """Wait for every operator call submitted on this device. Eager calls on device tensors return
        once submitted, as torch's do on a CUDA stream; reading or writing a tensor from the host
        (`numpy()`, `upload()`, a graph's run) waits for the calls that use it by itself, so this is
        only needed to time the GPU's work or to surface its errors at a known point."""
        if self._async:
            self._retire(0)

    def _submitted(self, batch: Batch) -> None:
        """A one-off call's batch was submitted without waiting (Batch.run_async)."""
        with self._lock:
            a = self._async
            a.append(batch)
            if len(a) == 1:
                self._async_written, self._async_serials = frozenset(batch._writes), frozenset(batch._touched)
            else:
                self._async_written = self._async_written.union(batch._writes)
                self._async_serials = self._async_serials.union(batch._touched)
            over = len(a) > ASYNC_MAX
        if over:
            self._retire(ASYNC_MAX // 2)  # half at a time: the serial sets are rebuilt once per half

    def _retire(self, n: int) -> None:
        """Wait for the oldest `n` calls in flight (0: all), then let go of their buffers. Under the
        device's lock, waits included: the Algorithm LRU calls this holding it (Pipelines)."""
        with self._lock:
            a = self._async
            done = a[:n] if 0 < n < len(a) else a
            try:
                for b in done:
                    b._wait_all()
            finally:
                if done is a:
                    self._async = []
                    self._async_written = self._async_serials = frozenset()
                else:
                    del a[:len(done)]
                    self._async_written = frozenset().union(*[b._writes for b in a])
                    self._async_serials = frozenset().union(*[b._touched for b in a])
                for b in done:
                    b._release()
