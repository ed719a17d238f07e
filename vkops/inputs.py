"""The NumPy face's argument normalisation, shared by every operator (pure: no device, no kp).

The rule (README, "Limits and errors"): NumPy arrays keep their dtype, which must be a DML data type.
Python lists and scalars are taken where the dtype is unambiguous: floats become float32, ints int32
(when every value fits); lists mixing ints and floats are floats. Anything else (booleans, ints
beyond int32, floats beyond float32, ragged or non-numeric lists) is a ValidationError saying what to
pass instead.
"""
from __future__ import annotations

from numbers import Number

import numpy as np

from .errors import ValidationError

_INT_DTYPES = "int32, uint32, int16, uint16, int8, uint8"


def is_python(x) -> bool:
    """True for Python scalars, lists and tuples (values whose dtype vkops has to choose)."""
    return isinstance(x, (list, tuple)) or (isinstance(x, Number) and not isinstance(x, np.generic))


def python_array(x, field: str = "input") -> np.ndarray:
    """A Python scalar, list or tuple as a float32 or int32 array, by the rule above."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):  # ragged nesting (NumPy >= 1.24 refuses it)
        a = np.asarray(x, dtype=object) if not isinstance(x, (list, tuple)) else np.empty(0, object)
    if a.dtype.kind == "b":
        raise ValidationError(f"{field}: booleans are not a DML data type; pass np.asarray({field}, np.uint8)")
    if a.dtype.kind == "f":
        if np.any(np.abs(a[np.isfinite(a)]) > np.finfo(np.float32).max):
            raise ValidationError(f"{field}: Python floats beyond float32's range; pass a NumPy array of a DML "
                                  f"data type (float32, float16)")
        return a.astype(np.float32)
    if a.dtype.kind in "iu":
        if a.size and (a.min() < -2**31 or a.max() > 2**31 - 1):
            raise ValidationError(f"{field}: Python ints beyond int32's range; pass a NumPy array with an explicit "
                                  f"dtype ({_INT_DTYPES})")
        return a.astype(np.int32)
    raise ValidationError(f"{field} must be a NumPy array, a DeviceTensor, or a Python number or rectangular "
                          f"list of numbers; got {x!r:.80}")


def as_array(x, param: bool = False, field: str = "input") -> np.ndarray:
    """A NumPy-face operand as an array of a DML data type (Python values by the rule above).
    Operator inputs need 1 to 8 dimensions (DML's DimensionCount >= 1): a 0-d array is rejected, not
    read as shape (1,); `param` inputs (scales, zero points) may be 0-d."""
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
    elif is_python(x):
        a = python_array(x, field)
    else:  # array-likes (memoryview, objects with __array__): their own dtype
        try:
            a = np.asarray(x)
        except (TypeError, ValueError):
            a = np.empty(0, object)
        if a.dtype.kind not in "biuf":
            raise ValidationError(f"{field} must be a NumPy array, a DeviceTensor, or a Python number or "
                                  f"rectangular list of numbers; got {x!r:.80}")
    if a.ndim == 0 and not param:
        raise ValidationError(f"{field} must have 1 to 8 dimensions (DML DimensionCount >= 1); got a 0-d value: "
                              f"pass x.reshape(1)")
    return a


# Small arrays vkops itself made from scalars and never writes (e.g. a Python or NumPy scale in DML's
# {1,1,1,1} shape), kept for the life of the process with the key that names their value: a repeated
# call then neither reads their bytes for its plan key nor looks up their device copy by them.
_FROZEN: dict = {}  # id(array) -> (array, key); holding the array keeps its id from being reused
FROZEN_ENTRIES = 4096


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only copy of a small array, registered so that frozen_key() knows its value."""
    a = np.array(a, copy=True, order="C")
    a.flags.writeable = False
    if len(_FROZEN) < FROZEN_ENTRIES:
        _FROZEN[id(a)] = (a, (a.dtype.str, a.shape, a.strides, a.tobytes()))
    return a


def frozen_key(a) -> "tuple | None":
    """(dtype, shape, strides, bytes) of an array frozen() made, else None (look at it instead)."""
    hit = _FROZEN.get(id(a))
    return hit[1] if hit is not None and hit[0] is a else None
