"""What the QUANTIZED_LINEAR_MATRIX_MULTIPLY tests share: DML-shaped random operands, the check against the NumPy
oracle (|difference| <= 1 everywhere, exact on >= 99% of outputs: float32 scale products at .5 ties), a plan's
GEMM dispatches."""
import numpy as np

import vkops
from vkops import reference

I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)
COMBOS = [(a, b, o) for a in (I8, U8) for b in (I8, U8) for o in (I8, U8)]


def rand_q(rng, shape, dt):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def close(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert d.max(initial=0) <= 1, f"max |diff| {d.max()} at {np.unravel_index(d.argmax(), d.shape)}"
    assert (d == 0).mean() >= 0.99, f"only {(d == 0).mean():.4f} exact"


def problem(rng, adt, bdt, odt, M, K, N, scales="tensor", zps="tensor", a_batch=(1, 1), b_batch=(1, 1)):
    """DML-shaped operands; the output scale keeps most results inside the output range."""
    a = rand_q(rng, a_batch + (M, K), adt)
    b = rand_q(rng, b_batch + (K, N), bdt)
    row, col = (1, 1, M, 1), (1, 1, 1, N)
    one = (1, 1, 1, 1)
    sa = rng.uniform(0.5, 2.0, row if scales == "axis" else one).astype(np.float32) * 0.02
    sb = rng.uniform(0.5, 2.0, col if scales == "axis" else one).astype(np.float32) * 0.02
    if zps == "none":
        za = zb = zo = None
    else:
        za = rand_q(rng, row if zps == "axis" else one, adt)
        zb = rand_q(rng, col if zps == "axis" else one, bdt)
        # Output zero points away from the ends, so outputs (|real| <= ~60 steps) never all saturate.
        info = np.iinfo(odt)
        zo = rng.integers(info.min + 64, info.max - 63, size=row if zps == "axis" else one).astype(odt)
    acc = np.matmul(a.astype(np.int64) - (0 if za is None else za.astype(np.int64)),
                    b.astype(np.int64) - (0 if zb is None else zb.astype(np.int64)))
    real = np.abs(acc * sa.astype(np.float64) * sb)
    peak = real.max(axis=(0, 1, 3), keepdims=True)[:1, :1] if scales == "axis" else real.max().reshape(one)
    so = (np.maximum(peak, 1e-3) / 60 * rng.uniform(0.8, 1.25, peak.shape)).astype(np.float32)
    return a, sa, za, b, sb, zb, so, zo


def run_both(args, odt, **kw):
    got = vkops.quantized_linear_matmul(*args, output_dtype=odt, **kw)
    want = reference.quantized_linear_matmul(*args, output_dtype=odt)
    close(got, want)
    return got


def gemms(plan):
    """A plan's product dispatches (not its packing or copies)."""
    return [d for d in plan.dispatches if d.kernel.startswith("qlmm")]
