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

