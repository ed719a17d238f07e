"""NumPy oracles, one short function per operator, written from the DML spec pages.

Tests compare the GPU kernels against these; they favour clarity over speed.
"""
from __future__ import annotations

import numpy as np


def slice1(x, offsets, sizes, strides, output_sizes=None):
    """OutputTensor[o] = InputTensor[CopyStart + InputWindowStrides * o]."""
    x = np.asarray(x)
    if output_sizes is None:
        output_sizes = [1 + (sz - 1) // abs(st) for sz, st in zip(sizes, strides)]
    index = []
    for off, sz, st, osz in zip(offsets, sizes, strides, output_sizes):
        start = off + (sz - 1 if st < 0 else 0)
        index.append(start + st * np.arange(osz))
    return x[np.ix_(*index)]


def top_k1(x, k, axis, direction="decreasing"):
    """(values, UINT32 indices) of the k largest ("decreasing") or smallest ("increasing") elements
    along `axis`, sorted; ties in ascending index order in both directions; NaN above +inf; -0.0 == 0.0.
    Built on NumPy's stable sort (which orders NaN last, like the spec's ranking in INCREASING)."""
    x = np.asarray(x)
    d = getattr(direction, "name", direction).lower()
    a = np.moveaxis(x, axis, -1)
    n = a.shape[-1]
    if d == "increasing":
        order = np.argsort(a, axis=-1, kind="stable")
    else:  # stable ascending sort of the reversed row, reversed back: descending, ties by index
        order = (n - 1 - np.argsort(a[..., ::-1], axis=-1, kind="stable"))[..., ::-1]
    idx = order[..., :k]
    vals = np.take_along_axis(a, idx, axis=-1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis).astype(np.uint32)


def quantized_linear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                            output_dtype=None):
    """DML QUANTIZED_LINEAR_MATRIX_MULTIPLY on DML-shaped (broadcastable) arrays: int64 accumulation of
    (a - a_zp)(b - b_zp), float64 scaling, np.rint (half to even), + out_zp, clip to the output type.
    The output type is the output zero point's, else `output_dtype`, else a's."""
    a, b = np.asarray(a), np.asarray(b)
    za = np.int64(0) if a_zero_point is None else np.asarray(a_zero_point).astype(np.int64)
    zb = np.int64(0) if b_zero_point is None else np.asarray(b_zero_point).astype(np.int64)
    acc = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb)
    scale = (np.asarray(a_scale, np.float64) * np.asarray(b_scale, np.float64)) / np.asarray(output_scale, np.float64)
    if output_zero_point is not None and hasattr(output_zero_point, "dtype"):
        out_dt = np.asarray(output_zero_point).dtype
    else:
        out_dt = np.dtype(output_dtype) if output_dtype is not None else a.dtype
    zo = 0.0 if output_zero_point is None else np.asarray(output_zero_point).astype(np.float64)
    y = np.rint(acc.astype(np.float64) * scale) + zo
    info = np.iinfo(out_dt)
    return np.clip(y, info.min, info.max).astype(out_dt)
