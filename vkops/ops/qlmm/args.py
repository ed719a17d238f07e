"""QuantizedLinearMatMul's NumPy face, argument normalisation: operands padded to DML's 4-D, scales and
zero points from Python scalars, lists, NumPy arrays or device tensors into DML shapes (pure but for the
DeviceTensor type check)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...errors import ValidationError
from ...inputs import frozen, is_python


_DEVICE_TENSOR = None


def is_dev(x) -> bool:
    """Whether `x` is a DeviceTensor (imported lazily, once: this module needs no device)."""
    global _DEVICE_TENSOR
    if _DEVICE_TENSOR is None:
        from ...runtime import DeviceTensor  # noqa: PLC0415

        _DEVICE_TENSOR = DeviceTensor
    return isinstance(x, _DEVICE_TENSOR)


def pad4(x, field: str):
    """Left-pad a 2- to 4-D matrix operand to 4-D (NumPy array or device tensor)."""
    if is_dev(x):
        nd = x.ndim
        if not 2 <= nd <= 4:
            raise ValidationError(f"quantized_linear_matmul: {field} must have 2 to 4 dimensions; got {nd} ({x.shape})")
        st = x.desc.element_strides
        return x.as_strided((1,) * (4 - nd) + x.shape, (0,) * (4 - nd) + tuple(st)), nd
    if is_python(x):  # ints could be INT8 or UINT8: the caller must say which
        raise ValidationError(f"quantized_linear_matmul: {field} must be an INT8 or UINT8 NumPy array or DeviceTensor; "
                              f"a Python list does not say which: pass np.asarray({field}, np.int8) or np.uint8")
    arr = np.asarray(x)
    if not 2 <= arr.ndim <= 4:
        raise ValidationError(f"quantized_linear_matmul: {field} must have 2 to 4 dimensions; got {arr.ndim} "
                              f"({arr.shape})")
    return arr.reshape((1,) * (4 - arr.ndim) + arr.shape), arr.ndim


def param(x, field: str, kind: str, count: int, zp_dtype: Optional[np.dtype]):
    """A scale (zp_dtype None) or zero point in DML shape: scalars and 1-element arrays -> {1,1,1,1};
    1-D of length M (rows) or N (columns) -> {1,1,M,1} / {1,1,1,N}; other ranks left-padded to 4-D.
    NumPy scales become float32; Python-int zero points take their tensor's dtype (range-checked);
    typed zero points keep their dtype, so a mismatch is reported by validate()."""
    if x is None:
        return None
    if type(x) in _SCALAR_TYPES:  # the common scalar (Python or NumPy): normalised once per value
        key = (x, type(x), field, zp_dtype)
        arr = _SCALARS.get(key)
        if arr is None:
            arr = _param(x, field, kind, count, zp_dtype)
            if len(_SCALARS) < 1024:  # kept (and frozen) for good; past that, looked at every call
                arr = _SCALARS[key] = frozen(arr)
        return arr
    return _param(x, field, kind, count, zp_dtype)


_SCALARS: dict = {}
_SCALAR_TYPES = frozenset((float, int, np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64))


def _param(x, field: str, kind: str, count: int, zp_dtype: Optional[np.dtype]):
    if is_dev(x):
        if x.ndim == 4:
            return x
        if x.desc.element_count == 1:
            return x.as_strided((1, 1, 1, 1), (0, 0, 0, 0))
        if x.ndim == 1:
            return x.as_strided((1, 1, count, 1) if kind == "row" else (1, 1, 1, count),
                                (0, 0, 1, 1) if kind == "row" else (0, 0, 0, 1))
        return x.as_strided((1,) * (4 - x.ndim) + x.shape, (0,) * (4 - x.ndim) + x.desc.element_strides)
    if zp_dtype is None:
        if isinstance(x, bool) or (is_python(x) and np.asarray(x).dtype.kind == "b"):
            raise ValidationError(f"quantized_linear_matmul: {field} must be a positive number; got {x!r}")
        try:
            arr = np.asarray(x, np.float32)
        except (TypeError, ValueError):
            raise ValidationError(f"quantized_linear_matmul: {field} must be a number or an array of numbers; "
                                  f"got {x!r}") from None
        # Quantization scales are positive and finite: NaN, infinities, zero (output_scale divides)
        # and negative values are rejected where the host knows them.
        bad = ~(np.isfinite(arr) & (arr > 0))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            where = f" at index {tuple(int(i) for i in np.unravel_index(first, arr.shape))}" if arr.ndim else ""
            raise ValidationError(f"QuantizedLinearMatMulDesc.{field} must be finite and > 0; got "
                                  f"{float(arr.reshape(-1)[first])}{where} ({int(bad.sum())} of {arr.size} values)")
    elif is_python(x):  # Python ints take their tensor's dtype, range-checked
        info = np.iinfo(zp_dtype)
        try:
            raw = np.asarray(x)
        except (TypeError, ValueError):
            raw = np.empty(0, object)
        if raw.dtype.kind not in "iuf" or raw.size == 0 or np.any(raw.astype(np.float64) % 1 != 0) \
                or raw.min() < info.min or raw.max() > info.max:
            raise ValidationError(f"quantized_linear_matmul: {field} must be an integer in [{info.min}, {info.max}] "
                                  f"({np.dtype(zp_dtype).name}) or a list of them; got {x!r:.80}")
        arr = raw.astype(zp_dtype)
    else:
        arr = np.asarray(x)
    if arr.size == 1:
        return arr.reshape(1, 1, 1, 1)
    if arr.ndim == 1:
        return arr.reshape((1, 1, arr.size, 1) if kind == "row" else (1, 1, 1, arr.size))
    if arr.ndim > 4:
        raise ValidationError(f"quantized_linear_matmul: {field} must have at most 4 dimensions; got {arr.shape}")
    return arr.reshape((1,) * (4 - arr.ndim) + arr.shape)


def quant_dtype(x, field: str) -> np.dtype:
    """The INT8/UINT8 dtype of an operand; ValidationError naming `field` for any other."""
    dt = x.dtype if is_dev(x) else np.asarray(x).dtype
    if dt not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise ValidationError(f"QuantizedLinearMatMulDesc.{field}.data_type must be INT8 or UINT8; got {dt}")
    return np.dtype(dt)
