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
    bufs = []
    ins, outs = iter(inputs), iter(outputs)
    counters = False
    for i, (role, words, zeroed) in enumerate(plan._slots):  # plan.buffers, as the runtime needs them
        if role == "input" or role == "output":
            buf = next(ins if role == "input" else outs)._buffer
            if buf.words < words:
                b = plan.buffers[i]
                raise ValidationError(f"plan {plan.op}: {role} {b.name!r} needs {b.nbytes} bytes; got a buffer "
                                      f"of {buf.nbytes}")
        elif role == "scratch":
            if zeroed and not counters:
                counters = True
                buf = dev.counters(words)._buffer
            elif zeroed:  # a second zeroed buffer cannot share the device's counters
                buf = batch.upload(np.zeros(words, np.uint32))._buffer
            else:
                buf = batch.scratch_words(words)
        else:  # the device's copy, looked up once per plan and device
            t = plan._constants.get((dev.index, i))
            if t is None:
                t = plan._constants[(dev.index, i)] = dev.constant(np.array(plan.buffers[i].data, np.uint32))
            batch.hold(t)
            buf = t._buffer
        bufs.append(buf)
    for kernel, bindings, writes, groups, push, spec in plan._steps:
        batch.dispatch(kernel, [bufs[j] for j in bindings], writes, groups, push, spec)


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
