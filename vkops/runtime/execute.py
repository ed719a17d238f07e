"""Running a Plan (vkops/plan.py) in a batch: its buffers bound to device memory, its dispatches
recorded in order. The one path every operator call takes."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from ..errors import ValidationError
from ..plan import Plan
from .memory import DeviceTensor


def execute(plan: Plan, batch, inputs: Sequence[DeviceTensor], outputs: Sequence[DeviceTensor]) -> None:
    """Record `plan` into `batch` with the call's `inputs` and `outputs` (in the plan's order). Scratch
    comes from the batch, the zeroed counters buffer is the device's own (kernels leave it zero),
    constants are the device's cached copies. Barriers: the batch orders dispatches by the same rule
    the plan's barriers were derived with (plan.barriers), across calls too."""
    dev = batch.device
    bufs = [None] * len(plan.buffers)
    ins, outs = iter(inputs), iter(outputs)
    counters = False
    for i, b in enumerate(plan.buffers):
        role = b.role
        if role == "input" or role == "output":
            t = next(ins if role == "input" else outs)
            if t._buffer.words < b.words:
                raise ValidationError(f"plan {plan.op}: {role} {b.name!r} needs {b.nbytes} bytes; got a buffer "
                                      f"of {t._buffer.nbytes}")
            bufs[i] = t._buffer
        elif role == "scratch":
            if b.zeroed and not counters:
                counters = True
                bufs[i] = dev.counters(b.words)._buffer
            elif b.zeroed:  # a second zeroed buffer cannot share the device's counters
                bufs[i] = batch.upload(np.zeros(b.words, np.uint32))._buffer
            else:
                bufs[i] = batch.scratch_words(b.words)
        else:  # the device's copy, looked up once per plan and device
            t = plan._constants.get((dev.index, i))
            if t is None:
                t = plan._constants[(dev.index, i)] = dev.constant(np.array(b.data, np.uint32))
            batch.hold(t)
            bufs[i] = t._buffer
    for d, push in zip(plan.dispatches, plan._push):
        batch.dispatch(d.kernel, [bufs[j] for j in d.bindings], d.writes, d.groups, push, d.spec)


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
