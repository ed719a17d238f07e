"""A batch's host transfers and copies (Batch's `Transfers` mixin): NumPy data uploaded into device buffers (in
place where the buffer is mapped, else through staging, in parts from 2 * UPLOAD_PART bytes), device-to-device
copies, and downloads brought to the host as a batch's last step."""
from __future__ import annotations

from typing import List

import numpy as np

from ..dtypes import words_for
from ..errors import ValidationError
from . import _kp as K
from . import hostcopy
from .memory import DeviceTensor, host_layout

# A staged upload of at least twice this many bytes goes in parts of about this size, each part's copy submitted
# while the next is written to staging (docs/tuning/runtime.md, session 21: host copies).
UPLOAD_PART = 4 << 20


# Everything a dispatch or a copy may have done before, against everything the next may do.
_ALL_ACCESS = K.SHADER_READ | K.SHADER_WRITE | K.TRANSFER_READ | K.TRANSFER_WRITE
_ALL_STAGES = K.STAGE_COMPUTE | K.STAGE_TRANSFER


def barrier(buffers, src_access=_ALL_ACCESS, dst_access=_ALL_ACCESS, src_stage=_ALL_STAGES,
            dst_stage=_ALL_STAGES):
    return K.kp().OpMemoryBarrier([b.kp for b in buffers], src_access, dst_access, src_stage, dst_stage, True)


class Transfers:
    """Uploads, copies and downloads of a Batch (it supplies _check_open, _order, _flush, _refs, _touched,
    _writes, _staged, _downloads and _flushes)."""

    __slots__ = ()

    def upload(self, array: np.ndarray) -> DeviceTensor:
        """Copy a NumPy array's data now; it reaches the device at this point of the batch."""
        self._check_open()
        data, desc = host_layout(np.asarray(array))
        dev = self.device
        words = words_for(desc.span, desc.data_type)
        buf = dev._memory.get(words)
        self._refs.append(buf)
        self._touched.add(buf.serial)
        self._writes.add(buf.serial)
        if buf.host_visible:
            dev._pack_into(buf, data, words)
            host = buf
        else:
            # A transfer write into a buffer no earlier op of this batch uses: kp's transfer->compute
            # barrier before each dispatch covers it (in this submission or a later one).
            host = self._stage_into(buf, data, words, ordered=False)
        if self._staged is not None:
            self._staged.append((buf, host, words))
        return DeviceTensor(buf, desc, dev)

    def _stage_into(self, buf, data: np.ndarray, words: int, ordered: bool):
        """Copy `data`'s C-order bytes (zero-padded to `words` words) into device buffer `buf` through a
        staging buffer. From 2 * UPLOAD_PART bytes in parts, each part's copy submitted (without waiting)
        while the next part is written, so the transfer runs beside the host's copy. `ordered`: `buf` may be
        in use (barriers by the batch's rule, Batch._order), else it is a buffer no op uses yet. Returns
        the staging buffer."""
        dev = self.device
        stage = dev._staging.get(words)
        self._refs.append(stage)
        total = words * 4
        if total < 2 * UPLOAD_PART or not self._flushes:
            dev._pack_into(stage, data, words)
            step = total
        else:
            dst = stage.host()[:words].view(np.uint8)
            src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            n = src.size
            parts = -(-total // UPLOAD_PART)
            step = (-(-total // parts) + 4095) // 4096 * 4096
        pipes = dev._pipelines
        for off in range(0, total, step):
            end = min(off + step, total)
            if step != total:
                if off < n:
                    hostcopy.copy(dst[off:min(end, n)], src[off:min(end, n)])
                if end > n:
                    dst[max(off, n):end] = 0
            if ordered and not off:  # the parts write apart: only the first orders after earlier work
                self._order({stage.serial: stage}, {buf.serial: buf})
                self._touched |= {stage.serial, buf.serial}
                self._refs.append(buf)
            self._ops.append(("op", pipes.copy_op(stage, buf, end - off, off)))
            if end < total:
                self._flush()
        return stage

    def copy(self, src: DeviceTensor, dst: DeviceTensor):
        """Record a device-to-device copy of src's packed bytes into dst (vkCmdCopyBuffer)."""
        self._check_open()
        nbytes = words_for(src.desc.span, src.data_type) * 4
        if nbytes > dst._buffer.nbytes:
            raise ValidationError(f"copy: {nbytes} bytes do not fit dst's {dst._buffer.nbytes}")
        self.copy_buffer(src._buffer, dst._buffer, nbytes)

    def copy_buffer(self, s, d, nbytes: int):
        """Record a copy of `nbytes` from buffer s into buffer d, ordered like a dispatch."""
        self._order({s.serial: s}, {d.serial: d})
        self._ops.append(("dispatch", K.kp().OpBufferCopy(s.kp, d.kp, nbytes)))
        self._refs += [s, d]
        self._touched |= {s.serial, d.serial}

    def scratch_staging(self, words: int):
        """A host-visible staging buffer of at least `words` words that lives until this batch has run."""
        self._check_open()
        buf = self.device._staging.get(words)
        self._refs.append(buf)
        return buf

    def download(self, tensor: DeviceTensor):
        """Bring `tensor`'s words to host memory as the batch's last step; `read(tensor)` (or `host_words`) reads
        them after the run."""
        words = words_for(tensor.desc.span, tensor.data_type)
        buf = tensor._buffer
        host = buf if buf.reads_mapped(words) else self.device._staging.get(words)
        self._downloads.append((buf, host, words))
        self._refs += [buf, host]

    def host_words(self, tensor: DeviceTensor) -> np.ndarray:
        """After run(): the uint32 words download(tensor) brought to the host (KeyError if it was not)."""
        host, words = self._downloaded(tensor)
        return host.host()[:words]

    def read(self, tensor: DeviceTensor) -> np.ndarray:
        """After run(): `tensor`'s elements as download(tensor) brought them (a copy; in-place reads of uncached
        mapped memory by libvkops' streaming loads where it offers them). KeyError if it was not downloaded."""
        host, words = self._downloaded(tensor)
        return tensor.from_buffer(host, words)

    def _downloaded(self, tensor: DeviceTensor):
        for buf, host, words in self._downloads:
            if buf is tensor._buffer:
                return host, words
        raise KeyError("tensor was not downloaded by this batch")

    def _download_ops(self) -> List:
        if not self._downloads:
            return []
        pipes = self.device._pipelines
        src = {b.serial: b for b, _, _ in self._downloads}
        ops = [pipes.transfer_op(("before",) + tuple(src), lambda: barrier(
            src.values(), dst_access=K.TRANSFER_READ | K.HOST_READ, dst_stage=K.STAGE_TRANSFER | K.STAGE_HOST))]
        hosts = []
        for buf, host, words in self._downloads:
            if host is not buf:
                ops.append(pipes.copy_op(buf, host, words * 4))
                hosts.append(host)
        if hosts:
            ops.append(pipes.transfer_op(("after",) + tuple([h.serial for h in hosts]), lambda: barrier(
                hosts, K.TRANSFER_WRITE, K.HOST_READ, K.STAGE_TRANSFER, K.STAGE_HOST)))
        return ops
