"""Running a Plan (vkops/plan.py) in a batch: its buffers bound to device memory, its dispatches
recorded in order. The one path every operator call takes (eager calls, batches, graph captures).

What a plan records for one set of bound buffers (its kp ops with their descriptor sets and push
constants, the buffers each dispatch reads and writes, the barriers it needs inside itself) depends only
on the plan and those buffers' serials, so it is prepared once (`Prepared`, kept by Pipelines per (plan,
serials) and dropped before an Algorithm it binds is destroyed) and a repeated call appends it to the batch.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from ..errors import ValidationError
from ..plan import Hazards, Plan
from .memory import DeviceTensor
from .submit import barrier


class Prepared:
    """A plan's recording for one set of bound buffers: per dispatch (kp op, reads, writes) with reads and
    writes as {serial: block} (blocks, not buffers: holding an entry must not keep a buffer from going
    back to the allocator), and, for a batch with nothing tracked since its last barrier, the op list
    with the plan's own barriers already in it and the hazard state it leaves."""

    __slots__ = ("plan", "steps", "ops", "written", "read", "barriers", "dispatches", "serials", "keys", "live",
                 "writes", "_led")

    def __init__(self, plan, steps, keys, serials):
        self.plan, self.steps, self.keys, self.serials = plan, steps, keys, serials
        self.live = True  # False once an Algorithm it binds may be gone (Pipelines): never submitted again
        self._led = None
        self.writes = frozenset([s for _, _, wr in steps for s in wr])  # every buffer it writes
        self.dispatches = len(steps)
        h, ops, nb = Hazards(), [], 0
        for op, rd, wr in steps:
            cover = h.step(rd, wr)
            if cover:
                ops.append(("op", barrier(cover.values())))
                nb += 1
            ops.append(("dispatch", op))
        self.ops, self.written, self.read, self.barriers = ops, dict(h.written), dict(h.read), nb

    def led(self) -> "Led":
        """This recording behind a barrier on all its buffers (made once): what an eager call records
        when calls still in flight use its buffers (Batch.record)."""
        if self._led is None:
            self._led = Led(self)
        return self._led


class Led:
    """A Prepared recording with a barrier on every buffer it binds in front: ordered after everything
    submitted before it. Kept sequences key on it apart from the plain recording."""

    __slots__ = ("base", "plan", "steps", "ops", "written", "read", "barriers", "dispatches", "serials", "keys", "writes")

    def __init__(self, base: Prepared):
        self.base, self.plan, self.steps, self.keys, self.serials = base, base.plan, base.steps, base.keys, base.serials
        self.writes = base.writes
        blocks = {s: b for _, rd, wr in base.steps for d in (rd, wr) for s, b in d.items()}
        self.ops = [("op", barrier(blocks.values()))] + base.ops
        self.written, self.read, self.barriers, self.dispatches = base.written, base.read, base.barriers + 1, base.dispatches

    live = property(lambda self: self.base.live)


def _bind(plan: Plan, batch, inputs: Sequence[DeviceTensor], outputs: Sequence[DeviceTensor]) -> List:
    """The device buffers of the plan's buffers, in its order. Scratch comes from the batch, the zeroed
    counters buffer is the device's own (kernels leave it zero), constants are the device's cached
    copies."""
    io = [t._buffer for t in inputs]
    io += [t._buffer for t in outputs]
    if plan._io_only:
        return io
    dev = batch.device
    tail = plan._tail
    if tail is None:
        tail, bufs = plan._binds, []
    else:  # inputs + outputs first, in order: the io list itself, then the rest
        bufs = io
    refs = batch._refs
    for kind, j, words in tail:  # plan.buffers, as the runtime needs them
        if kind == 0:
            buf = io[j]
        elif kind == 3:
            buf = batch.scratch_words(words)
        elif kind == 1:
            buf = dev.counters(words)._buffer
        elif kind == 2:  # a second zeroed buffer cannot share the device's counters
            buf = batch.upload(np.zeros(words, np.uint32))._buffer
        else:  # the device's copy, looked up once per plan and device
            t = plan._constants.get((dev.index, j))
            if t is None:
                t = plan._constants[(dev.index, j)] = dev.constant(np.array(plan.buffers[j].data, np.uint32))
            buf = t._buffer
            refs.append(buf)  # batch.hold(t): alive until the batch has run
        bufs.append(buf)
    return bufs


def _check(plan: Plan, bufs) -> None:
    """Every input and output buffer holds what the plan needs (checked once per prepared buffers: a
    serial's block never changes size)."""
    for i, (role, words, _) in enumerate(plan._slots):
        if plan._io[i] >= 0 and bufs[i].words < words:
            b = plan.buffers[i]
            raise ValidationError(f"plan {plan.op}: {role} {b.name!r} needs {b.nbytes} bytes; got a buffer "
                                  f"of {bufs[i].nbytes}")


def prepare(plan: Plan, pipelines, bufs) -> Prepared:
    """Build the plan's recording for these bound buffers (Algorithms made or found, ops made once)."""
    _check(plan, bufs)
    steps, keys = [], []
    for kernel, bindings, writes, groups, push, spec in plan._steps:
        bb = [bufs[j] for j in bindings]
        op, key = pipelines.dispatch_op(kernel, bb, groups, spec, push, keyed=True)
        wr = {bb[i].serial: bb[i]._block for i in writes}
        rd = {b.serial: b._block for b in bb if b.serial not in wr}
        steps.append((op, rd, wr))
        keys.append(key)
    return Prepared(plan, tuple(steps), tuple(keys), frozenset([b.serial for b in bufs]))


def execute(plan: Plan, batch, inputs: Sequence[DeviceTensor], outputs: Sequence[DeviceTensor]):
    """Record `plan` into `batch` with the call's `inputs` and `outputs` (in the plan's order): bind its
    buffers, find (or prepare) its recording for them, and let the batch append it. Barriers: the batch
    orders dispatches by the same rule the plan's barriers were derived with (plan.barriers), across
    calls too. Returns the prepared recording appended."""
    bufs = _bind(plan, batch, inputs, outputs)
    pipes = batch.device._pipelines
    key = [b.serial for b in bufs]
    key.append(id(plan))
    key = tuple(key)
    prep = pipes._prepared.get(key)  # atomic under the GIL; entries are added and dropped under the lock
    if prep is not None:
        algorithms = pipes._algorithms
        try:
            for k in prep.keys:  # in use: keep its Algorithms at the LRU's young end, as a dispatch_op call would
                algorithms.move_to_end(k)
        except KeyError:  # destroyed by another thread just now
            prep = None
    if prep is None or not prep.live:
        prep = pipes.prepared(key, lambda: prepare(plan, pipes, bufs))
    batch.record(prep, bufs)
    return prep


def run_plan(plan: Plan, arrays: Sequence[np.ndarray], device=None, batch=None) -> List[np.ndarray]:
    """Run `plan` (e.g. Plan.from_json of a file) on NumPy inputs, in its input order; returns its
    outputs as NumPy arrays. Runs in `batch` when given (run here), else a batch of its own."""
    from .device import Device  # noqa: PLC0415
    from .submit import Batch  # noqa: PLC0415

    dev = batch.device if batch is not None else device or Device()
    outs = [dev.empty(b.tensor) for b in plan.outputs]
    batch = batch or Batch(dev)
    execute(plan, batch, [dev.tensor(a) for a in arrays], outs)
    batch.run()
    return [o.numpy() for o in outs]
