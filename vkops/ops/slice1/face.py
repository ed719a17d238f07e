"""SLICE1's NumPy face: `slice()`; the runtime at call time through `face_runtime()`."""
from __future__ import annotations

from typing import Optional, Sequence

from ...errors import ValidationError
from ...tensor import TensorDesc
from .. import face_runtime
from .desc import Slice1Desc, window_ints
from .lowering import plan
from .tuning import DEFAULT, Slice1Tuning


def slice(x, offsets, sizes, strides, output_sizes: Optional[Sequence[int]] = None, *, out=None,
          tuning: Optional[Slice1Tuning] = None):
    """DML SLICE1: `out[o] = x[start + strides * o]` per dimension, where a window of `sizes` elements
    begins at `offsets` and a negative stride starts at the window's end.

    x: a NumPy array or DeviceTensor of 1 to 8 dimensions and any DML data type (float32, float16,
        int32, int16, int8, uint32, uint16, uint8), or a Python list (floats -> float32, ints ->
        int32). Strided, transposed and broadcast views are read in place.
    offsets, sizes, strides: one integer per dimension: offsets >= 0, sizes >= 1 with
        offsets + sizes <= x.shape, strides nonzero (negative reverses). Integral floats are integers;
        0.5 or True is refused, not truncated.
    output_sizes: default MaxCopiedElements = 1 + (sizes - 1) // |strides|; each in 1..that.
    out: optional packed DeviceTensor of x's dtype and the output's sizes to write into.
    tuning: the lowering's knobs (a Slice1Tuning; None: vkops.ops.slice1.DEFAULT), part of the plan key.

    Returns an array of x's dtype and `output_sizes`, bitwise equal to the NumPy indexing it
    describes: NumPy (or list) in -> NumPy out; DeviceTensor in -> DeviceTensor out.

    Raises ValidationError (a ValueError) naming the field and the rule for a window outside x, a zero
    stride, non-integer parameters or a bad input; DeviceLimitError beyond the device's limits;
    nothing is dispatched then.
    """
    Call, freeze = face_runtime()
    if tuning is None:
        tuning = DEFAULT
    elif type(tuning) is not Slice1Tuning:
        raise ValidationError(f"slice tuning must be a Slice1Tuning (vkops.ops.slice1.DEFAULT.replace(...)); got {tuning!r}")
    key = ("slice", tuning) + freeze(offsets, sizes, strides, output_sizes)
    res = Call.eager_one(key, x, () if out is None else (out,))  # a repeated call on device tensors
    if res is not None:
        return res
    if out is None:  # a repeated NumPy call: its recipe (runtime/recipe.py), None for anything else
        res = Call.replay(key, x)
        if res is not None:
            return res
    with Call(x, key=key, outs=() if out is None else (out,), names=("x",)) as call:
        if call.plan is None:
            (xd,) = call.descs
            offsets = window_ints("input_window_offsets", offsets)
            sizes = window_ints("input_window_sizes", sizes)
            strides = window_ints("input_window_strides", strides)
            if output_sizes is None:
                # MaxCopiedElements; a zero stride or bad size is left for validate() to name.
                output_sizes = tuple(1 + (sz - 1) // abs(st) if st and sz > 0 else 1 for sz, st in zip(sizes, strides))
            desc = Slice1Desc(xd, TensorDesc(xd.data_type, output_sizes, name="Slice1Desc.output"),
                              offsets, sizes, strides).validate()
            call.plan = plan(desc, call.device.limits, tuning=tuning)
    return call.result()
