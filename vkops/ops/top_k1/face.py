"""TOP_K1's NumPy face: `top_k()` (and `_top_k()`, with the path switches tests and benchmarks use); the
runtime at call time through `face_runtime()`."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...dtypes import DataType
from ...errors import ValidationError
from ...tensor import TensorDesc
from .. import face_runtime
from .desc import AxisDirection, TopK1Desc
from .lowering import plan
from .tuning import DEFAULT, TopK1Tuning


def top_k(x, k: int, axis: int = -1, direction=None, *, largest: Optional[bool] = None, sorted: bool = True,
          out=None, tuning: Optional[TopK1Tuning] = None):
    """DML TOP_K1: the K largest or smallest elements of every sequence along `axis`, and their indices.

    x: a NumPy array or DeviceTensor of 1 to 8 dimensions and any DML data type (float32, float16,
        int32, int16, int8, uint32, uint16, uint8), or a Python list (floats -> float32, ints -> int32).
        Strided views are read in place.
    k: 1 <= k <= x.shape[axis] (k equal to the length is a full stable sort).
    axis: the dimension to search; negative counts from the end.
    direction: "decreasing" (the K largest, sorted descending; the default) or "increasing" (the K
        smallest, sorted ascending), or an AxisDirection.
    largest: torch's alias: True is "decreasing", False "increasing". Giving both `largest` and a
        `direction` that disagrees raises ValidationError.
    sorted: torch's alias, accepted for compatibility: results are always sorted (True or False).
    out: optional (values, indices) packed DeviceTensors to write into (device-tensor calls).
    tuning: the path rule's knobs (a TopK1Tuning; None: vkops.ops.top_k1.DEFAULT), part of the plan key.

    Returns (values, indices): values have x's dtype, indices are UINT32 positions within the sequence;
    both have x's shape with K on `axis`. Equal values keep ascending indices in both directions,
    NaN ranks above +inf and -0.0 ties with +0.0. NumPy (or list) in -> NumPy out; DeviceTensor in ->
    DeviceTensors out.

    Raises ValidationError (a ValueError) naming the field for a bad k, axis, direction or input, and
    DeviceLimitError when the call exceeds the device's limits; nothing is dispatched then.
    """
    Call, freeze = face_runtime()
    memo = (k.__class__, k, axis.__class__, axis, direction.__class__, direction, largest.__class__, largest,
            sorted.__class__, sorted, tuning)
    try:
        key = _KEYS.get(memo)
    except TypeError:  # an unhashable argument: the general path names it
        key = memo = None
    if key is not None:  # a repeated call on device tensors: no _direction, no freeze
        res = Call.eager_one(key, x, () if out is None else tuple(out) if isinstance(out, (tuple, list)) else (out,))
        if res is not None:
            return res
    d = _direction(direction, largest, sorted)
    res = _top_k(x, k, axis, d, out=out, tuning=tuning)
    if memo is not None and key is None:  # valid arguments: their plan key, for the next call
        if len(_KEYS) >= _KEYS_MAX:
            _KEYS.clear()
        _KEYS[memo] = _key(freeze, k, axis, d, None, None, None, None, DEFAULT if tuning is None else tuning)
    return res


_KEYS: dict = {}  # top_k's arguments, each with its class (k=True never finds k=1's) -> _top_k's plan key
_KEYS_MAX = 256  # distinct argument sets kept; a miss only costs the normalisation


def _key(freeze, k, axis, direction, force, chunks, shuffle, tune, tuning) -> tuple:
    return ("top_k", tuning) + freeze(k, axis, direction, force, chunks, shuffle, tune)


def _direction(direction, largest, sorted_) -> AxisDirection:
    """The AxisDirection of `direction` and torch's `largest` (None: not given)."""
    if not isinstance(sorted_, (bool, np.bool_)):
        raise ValidationError(f"top_k sorted must be True or False (results are always sorted); got {sorted_!r}")
    d = None if direction is None else AxisDirection.of(direction, "top_k direction")
    if largest is None:
        return AxisDirection.DECREASING if d is None else d
    if not isinstance(largest, (bool, np.bool_)):
        raise ValidationError(f"top_k largest must be True or False; got {largest!r}")
    want = AxisDirection.DECREASING if largest else AxisDirection.INCREASING
    if d is not None and d != want:
        raise ValidationError(f"top_k direction={direction!r} and largest={largest!r} disagree: largest=True is "
                              f"'decreasing', largest=False 'increasing'; pass one of them")
    return want


def _top_k(x, k, axis=-1, direction="decreasing", *, out=None, force: Optional[str] = None,
           chunks: Optional[int] = None, shuffle: Optional[bool] = None, tune: Optional[int] = None,
           tuning: Optional[TopK1Tuning] = None):
    """top_k() with the path switches tests and benchmarks use: `force` (a name of paths.PATHS, one a path: "seg",
    "filter" (the threshold filter), "radix", "sort", "rows", "rsort" or "gradix"), `chunks` (workgroups per row on the
    filter and gradix paths; ROWS' candidate cap), `shuffle`
    (the top_k1_*_sg_* modules or not) and `tune` (the TUNE_* bits of paths.py) override the choice of
    device_path() and tune_bits(); `tuning` (a TopK1Tuning) replaces the rule's knobs."""
    Call, freeze = face_runtime()
    if tuning is None:
        tuning = DEFAULT
    elif not isinstance(tuning, TopK1Tuning):
        raise ValidationError(f"top_k tuning must be a TopK1Tuning (vkops.ops.top_k1.DEFAULT.replace(...)); got {tuning!r}")
    key = _key(freeze, k, axis, direction, force, chunks, shuffle, tune, tuning)
    outs = () if out is None else tuple(out) if isinstance(out, (tuple, list)) else (out,)
    res = Call.eager_one(key, x, outs)  # a repeated call on device tensors
    if res is not None:
        return res
    if out is None:  # a repeated NumPy call: its recipe (runtime/recipe.py), None for anything else
        res = Call.replay(key, x)
        if res is not None:
            return res
    with Call(x, key=key, outs=outs, names=("x",)) as call:
        if call.plan is None:
            (xd,) = call.descs
            if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
                raise ValidationError(f"top_k axis must be an integer; got {axis!r}")
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise ValidationError(f"TopK1Desc.k must be an integer; got {k!r}")
            ax = int(axis) + xd.rank if axis < 0 else int(axis)
            if not 0 <= ax < xd.rank:
                raise ValidationError(f"TopK1Desc.axis must be < DimensionCount {xd.rank} (negative counts from "
                                      f"the end); got axis={axis} for sizes {xd.sizes}")
            kk = int(k)
            osz = tuple(max(kk, 1) if i == ax else s for i, s in enumerate(xd.sizes))
            vdesc = TensorDesc(xd.data_type, osz, name="TopK1Desc.output_value")
            idesc = TensorDesc(DataType.UINT32, osz, name="TopK1Desc.output_index")
            desc = TopK1Desc(xd, vdesc, idesc, ax, kk, AxisDirection.of(direction, "top_k direction")).validate()
            call.plan = plan(desc, call.device.limits, force=force, chunks=chunks, shuffle=shuffle, tune=tune,
                             tuning=tuning)
    return call.result()
