"""Submission: recorded batches of dispatches, run as one kp sequence each on reused sequences
(runtime/sequences.py). Within a batch, a dispatch that depends on an
earlier one (read-after-write, write-after-write, write-after-read) gets a pipeline barrier on the
buffers written since the last barrier. A batch of many dispatches submits them in groups as it goes,
without waiting, so the GPU works while Python records the rest; a barrier orders against everything
submitted earlier to the queue, so dependencies hold across those submissions. A one-off call is one
submission.
"""
from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

import numpy as np

from ..dtypes import words_for
from ..plan import Hazards
from ..tensor import TensorDesc
from .memory import DeviceTensor
from .transfers import Transfers, barrier  # noqa: F401  (barrier re-exported: inflight, graph)
from .sequences import OpsKey, Sequences  # noqa: F401  (Sequences re-exported: tests and benchmarks patch it here)

# A batch submits (without waiting) once this many dispatches are pending; the first time already
# after FIRST_FLUSH, so the GPU starts early.
FIRST_FLUSH = 2
FLUSH_DISPATCHES = 4


class Batch(Transfers):
    """Dispatches recorded for one device and run as one submission.

    Used as a context manager it becomes the current batch of this thread for its device: operators
    called inside record into it (NumPy inputs are uploaded as part of it, outputs are device
    tensors), and it runs when the block ends. `run()` may also be called by hand. If the block
    raises, work already submitted completes and the rest is dropped: the batch's outputs are then
    undefined, every other tensor and the device stay as they were."""

    __slots__ = ("device", "timestamps", "_ops", "_hazards", "_touched", "_refs", "_downloads", "_ran",
                 "_inflight", "_submitted", "_pending_dispatches", "barriers", "gpu_ns", "_pins", "_registered",
                 "_only", "_covered", "_writes", "_keep_ops", "_whole", "_staged", "_sent", "__dict__", "__weakref__")
    _flushes = True  # a Graph submits nothing while it records

    def __init__(self, device, timestamps: bool = False, pending: bool = True):
        self.device = device
        self.timestamps = timestamps
        self._ops: List[Tuple[str, object]] = []  # ("dispatch" | "op", kp op)
        self._hazards = Hazards()  # serial -> buffer, accessed since the last barrier
        self._touched: set = set()
        self._refs: List = []  # every buffer the batch uses, alive until it has run
        self._downloads: List[Tuple[object, object, int]] = []  # (buffer, host buffer, words)
        self._ran = False
        self._inflight: List[Tuple[object, List[str]]] = []  # submitted, not yet waited for
        self._submitted = 0
        self._pending_dispatches = 0
        self.barriers = 0
        self.gpu_ns: List[int] = []  # per dispatch, when timestamps=True
        self._pins = None  # a Graph keeps a list here: the Algorithms its recorded ops bind (pipelines.unpin)
        self._only = None  # the prepared recording the batch began with while it is all the batch holds
        self._covered: set = set()  # buffers of calls in flight (Device._async) a barrier here already orders
        self._writes: set = set()  # serials of every buffer the batch writes
        # A one-off NumPy call's (Call): a list of the Algorithm keys its prepared recordings bind, and its
        # submissions are kept recorded by op list (OpsKey); False otherwise.
        self._keep_ops = False
        # A one-off call's batch (pending=False: runtime/call.py, host writes) appends a prepared recording
        # whole, however many dispatches: its kept sequence is submitted as it is, once (a split recording is
        # recorded into kp again every call; docs/tuning/runtime.md, session 21: one-off calls whole).
        self._whole = not pending
        self._registered = pending
        # A one-off NumPy call's (Call): (device buffer, mapped buffer written, words) per upload, and the
        # OpsKey of its kept submission: what runtime/recipe.py keeps of it. None otherwise.
        self._staged = self._sent = None
        if pending:  # a one-off call's batch (runtime/call.py) runs before its caller sees any tensor
            device._pending.add(self)

    def __enter__(self) -> "Batch":
        loc = self.device._local
        if not hasattr(loc, "stack"):
            loc.stack = []
        if loc.stack and not loc.stack[-1]._flushes:
            raise RuntimeError("cannot open a batch while capturing a graph: calls inside `with dev.graph()` "
                               "already record into the graph, and nothing may run during the capture")
        loc.stack.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self.device._local.stack.pop()
        if exc_type is None:
            self.run()
        else:
            self._release()

    # -- recording ---------------------------------------------------------------------------- #
    def _check_open(self):
        if self._ran:
            raise RuntimeError("this batch has already run")

    def hold(self, tensor: DeviceTensor) -> None:
        """Keep `tensor`'s buffer alive until the batch has run."""
        self._refs.append(tensor._buffer)

    def scratch(self, desc: TensorDesc) -> DeviceTensor:
        """A packed temporary that lives until this batch has run."""
        return DeviceTensor(self.scratch_words(words_for(desc.element_count, desc.data_type)), desc.packed(),
                            self.device)

    def scratch_words(self, words: int):
        """A temporary buffer of at least `words` words that lives until this batch has run."""
        if self._ran:  # _check_open(), inline: every scratch-using call asks
            raise RuntimeError("this batch has already run")
        buf = self.device._memory.get(words)
        self._refs.append(buf)
        return buf

    def dispatch(self, kernel: str, bufs: Sequence, writes: Iterable[int], groups: Tuple[int, int, int],
                 push: np.ndarray, spec: Sequence[int] = ()):
        """Record one dispatch (runtime/execute.py runs plans through it). `bufs`, device buffers, bind
        in order; `writes` are the indices it writes."""
        self._check_open()
        wr = {bufs[i].serial: bufs[i] for i in writes}
        rd = {b.serial: b for b in bufs}
        for k in wr:
            del rd[k]
        self._order(rd, wr)
        if push.__class__ is not np.ndarray or push.dtype != np.uint32 or not push.flags.c_contiguous:
            push = np.ascontiguousarray(push, dtype=np.uint32)  # a plan's arrays are already
        self._keep_ops = False  # a dispatch without a prepared recording: its Algorithm is not listed
        op = self.device._pipelines.dispatch_op(kernel, bufs, tuple(groups), tuple(spec), push, self._pins)
        self._refs.extend(bufs)
        self._ops.append(("dispatch", op))
        self._touched.update([b.serial for b in bufs])
        self._pending_dispatches += 1
        if self._flushes and self._pending_dispatches >= (FLUSH_DISPATCHES if self._submitted else FIRST_FLUSH):
            self._flush()

    def record(self, prep, bufs: Sequence) -> None:
        """Append a prepared plan recording (runtime/execute.py) bound to `bufs`: its ops as they are when
        nothing is tracked since the last barrier and no submission falls inside it, else dispatch by
        dispatch with the batch's barrier rule and submission cadence, exactly as `dispatch` would."""
        if self._ran:
            raise RuntimeError("this batch has already run")
        h = self._hazards
        n = self._pending_dispatches + prep.dispatches
        if self._pins is not None:
            self.device._pipelines.pin(prep.keys, self._pins)
        if self._keep_ops is not False:
            self._keep_ops += prep.keys
        fast = not h.written and not h.read
        if not fast and not prep.barriers and h.written.keys().isdisjoint(prep.serials) and \
                h.read.keys().isdisjoint(prep.writes):
            # Nothing it does conflicts with what is tracked, nor (no barrier inside) its steps with each other:
            # step by step, Hazards would add no barrier and track exactly its reads and writes more; as a
            # batch of calls on fresh outputs records call after call.
            fast = True
        dev = self.device
        busy = dev._async_serials  # buffers of eager calls still in flight, and those they write
        if busy and self._flushes and not prep.serials <= self._covered and \
                (not prep.serials.isdisjoint(dev._async_written) or not prep.writes.isdisjoint(busy)):
            if fast and not self._ops and not self._submitted:  # the batch's start: the recording behind a barrier
                prep = prep.led()
                self._covered |= prep.serials
            else:  # dispatch by dispatch: _order adds the barriers
                fast = False
        self._refs += bufs
        self._touched |= prep.serials
        self._writes |= prep.writes
        limit = FLUSH_DISPATCHES if self._submitted else FIRST_FLUSH
        whole = self._whole
        if fast and (not self._flushes or whole or n <= limit):  # a flush only after its last
            if not self._ops and not self._submitted:
                self._only = prep  # its kept sequence may be submitted as it is (Sequences.submit)
            self._ops += prep.ops
            h.written.update(prep.written)
            h.read.update(prep.read)
            self.barriers += prep.barriers
            self._pending_dispatches = n
            if self._flushes and not whole and n >= limit:
                self._flush()
            return
        for op, rd, wr in prep.steps:
            self._order(rd, wr)
            self._ops.append(("dispatch", op))
            self._pending_dispatches += 1
            if self._flushes and self._pending_dispatches >= (FLUSH_DISPATCHES if self._submitted else FIRST_FLUSH):
                self._flush()

    def _flush(self, extra: Sequence = ()):
        """Submit what is recorded so far (and `extra` ops) without waiting."""
        ops = [op for _, op in self._ops]
        if extra:
            ops += extra
        if not ops:
            return
        kinds = [kind for kind, _ in self._ops] + ["op"] * len(extra) if self.timestamps else None
        only, self._only = self._only, None
        if only is not None and not extra and len(ops) == len(only.ops):  # nothing but that recording
            pending = self.device._sequences.submit(ops, self.timestamps, only)
        elif self._keep_ops and not self.timestamps:
            self._sent = OpsKey(ops, self._keep_ops)
            pending = self.device._sequences.submit(ops, False, self._sent)
        else:
            pending = self.device._sequences.submit(ops, self.timestamps)
        self._inflight.append((pending, kinds))
        self._submitted += 1
        self._ops = []
        self._pending_dispatches = 0

    def _order(self, reads: dict, writes: dict):
        """A barrier before this op when it conflicts with an op since the last barrier (plan.Hazards:
        the rule plans derive their barriers with), over the buffers that rule names."""
        cover = self._hazards.step(reads, writes)
        self._writes.update(writes)
        busy = self.device._async_serials
        if busy and self._flushes:  # ordered after the eager calls in flight that write what this reads or use what it writes
            bw, done = self.device._async_written, self._covered
            late = {s: b for s, b in reads.items() if s in bw and s not in done}
            late.update((s, b) for s, b in writes.items() if s in busy and s not in done)
            if late:
                self._covered.update(late)
                cover = {**cover, **late} if cover else late
        if cover:
            # The same buffers call after call (a batch of calls writing one out=): one kp op, made once
            # while they live (Pipelines.transfer_op's ops go when any buffer is freed).
            self._ops.append(("op", self.device._pipelines.transfer_op(("order",) + tuple(cover),
                                                                       lambda: barrier(cover.values()))))
            self.barriers += 1

    # -- running ------------------------------------------------------------------------------ #
    def run(self):
        """Submit what is left (and the downloads) and wait for every submission of the batch."""
        if self._ran:
            return
        try:
            self._flush(self._download_ops() if self._downloads else ())
            if self._inflight:
                self._wait_all()
        finally:
            self._ran = True
            self._release(keep_downloads=True)
        if self.device._async and self._flushes:
            self.device.synchronize()  # a waited batch is a sync point: the calls before it are done

    def run_async(self):
        """Submit what is recorded and return without waiting (an eager call on device tensors): the
        device keeps the batch, its buffers held, until a host read or write of one of them, a graph
        run or Device.synchronize waits for it; later calls order after it by barriers (`_order`)."""
        if self._ran:
            return
        try:
            self._flush()
        except BaseException:
            self._ran = True
            self._release()
            raise
        self._ran = True
        if self._inflight:
            self.device._submitted(self)
        else:
            self._release()

    def _wait_all(self):
        dev = self.device
        while self._inflight:
            pending, kinds = self._inflight.pop(0)
            ts = dev._sequences.wait(pending, self.timestamps)
            if self.timestamps:
                for i, kind in enumerate(kinds):
                    if kind == "dispatch":
                        self.gpu_ns.append(int((ts[i + 1] - ts[i]) * dev.timestamp_period_ns))

    def _release(self, keep_downloads: bool = False):
        """Let go of the batch's buffers (they return to the allocator once no tensor holds them).
        Downloaded host buffers stay until the batch itself goes, so results can still be read."""
        if self._inflight:
            try:
                self._wait_all()  # work already submitted must finish before its buffers are reused
            finally:
                self._inflight.clear()
        if self._registered:
            self._registered = False
            self.device._pending.discard(self)
        self._ops.clear()
        self._touched.clear()
        self._refs.clear()
        self._hazards.clear()
        self._covered.clear()
        self._writes.clear()
        if not keep_downloads:
            self._downloads.clear()

    @property
    def submissions(self) -> int:
        """Submissions made so far, counting what is still recorded as one more."""
        return self._submitted + (1 if self._ops else 0)
