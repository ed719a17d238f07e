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
