"""QUANTIZED_LINEAR_MATRIX_MULTIPLY against the NumPy oracle (int64 accumulation, float64 scaling,
np.rint, clip): |difference| <= 1 everywhere and exact on >= 99% of outputs. The suite runs the
portable kernel (lavapipe offers no cooperative matrices); the coopmat test runs where offered."""
import dataclasses

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import qlmm as qmod
from vkops.tensor import TensorDesc
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm import stream as QS
from vkops.ops.qlmm import dot as QD
from vkops.ops.qlmm import gemv as QG
from vkops.ops.qlmm.tuning import DEFAULT as TUNING, QlmmTuning

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


@pytest.mark.parametrize("zps", ["none", "tensor", "axis"])
@pytest.mark.parametrize("scales", ["tensor", "axis"])
@pytest.mark.parametrize("adt,bdt,odt", COMBOS, ids=[f"{a.name}x{b.name}->{o.name}" for a, b, o in COMBOS])
def test_dtypes_scales_zero_points(dev, rng, adt, bdt, odt, scales, zps):
    args = problem(rng, adt, bdt, odt, 19, 37, 29, scales, zps, a_batch=(1, 2), b_batch=(1, 2))
    y = run_both(args, odt, kernel="portable")
    lo, hi = np.iinfo(odt).min, np.iinfo(odt).max
    assert 0 < ((y > lo) & (y < hi)).mean()  # not everything saturated: the test sees real values


def test_mixed_granularity_and_not_tile_multiples(dev, rng):
    # per-row A scale with per-tensor zero point, per-column B zero point with per-tensor scale, ...
    M, K, N = 130, 100, 70
    a, _, _, b, _, _, so, zo = problem(rng, U8, I8, I8, M, K, N, "tensor", "tensor", (2, 1), (2, 1))
    sa = rng.uniform(0.01, 0.03, (1, 1, M, 1)).astype(np.float32)
    za = np.array(128, np.uint8).reshape(1, 1, 1, 1)
    sb = np.float32(0.02).reshape(1, 1, 1, 1)
    zb = rand_q(rng, (1, 1, 1, N), I8)
    so = np.float32(0.4).reshape(1, 1, 1, 1)
    run_both((a, sa, za, b, sb, zb, so, zo), I8)


def test_onnx_style_2d_and_3d(dev, rng):
    M, K, N = 9, 24, 11
    a2, b2 = rand_q(rng, (M, K), U8), rand_q(rng, (K, N), U8)
    y = vkops.quantized_linear_matmul(a2, 0.02, 128, b2, 0.03, 120, 0.1, 10)
    assert y.shape == (M, N) and y.dtype == U8
    want = reference.quantized_linear_matmul(a2, np.float32(0.02), np.uint8(128), b2, np.float32(0.03), np.uint8(120),
                                             np.float32(0.1), np.uint8(10))
    close(y, want)
    a3 = rand_q(rng, (3, M, K), I8)
    sa = rng.uniform(0.01, 0.03, M).astype(np.float32)  # 1-D per-row scale
    sb = rng.uniform(0.01, 0.03, N).astype(np.float32)  # 1-D per-column scale
    zo = np.array(-3, np.int8)
    y = vkops.quantized_linear_matmul(a3, sa, None, b2, sb, np.uint8(7), np.float32(0.2), zo)
    assert y.shape == (3, M, N) and y.dtype == I8
    want = reference.quantized_linear_matmul(a3, sa[:, None], None, b2, sb, np.uint8(7), np.float32(0.2), zo)
    close(y, want)
    # 2-D A against 3-D B: the result takes the larger rank
    b3 = rand_q(rng, (2, K, N), I8)
    y = vkops.quantized_linear_matmul(a2, 0.02, 100, b3, 0.02, 0, 0.1, None, output_dtype=np.int8)
    assert y.shape == (2, M, N) and y.dtype == I8
    want = reference.quantized_linear_matmul(a2, np.float32(0.02), np.uint8(100), b3, np.float32(0.02), None,
                                             np.float32(0.1), None, output_dtype=np.int8)
    close(y, want)


@pytest.mark.parametrize("odt", [I8, U8])
def test_saturation_both_ends(dev, odt):
    M, K, N = 4, 16, 8
    a = np.full((M, K), 127, np.int8)
    a[::2] = -128
    b = np.full((K, N), 127, np.int8)
    y = vkops.quantized_linear_matmul(a, 1.0, None, b, 1.0, None, 0.5, None, output_dtype=odt)
    info = np.iinfo(odt)
    assert (y[::2] == info.min).all() and (y[1::2] == info.max).all()


def test_exact_accumulation_at_extremes(dev):
    # (255 - 0) * (0 - 255) = -65025 per product, K = 2048: the int32 sum must be exact.
    K = 2048
    a = np.full((2, K), 255, np.uint8)
    b = np.zeros((K, 3), np.uint8)
    scale = np.float32(1 / 65025 / 2048 * 100)
    y = vkops.quantized_linear_matmul(a, scale, 0, b, 1.0, 255, 1.0, np.uint8(128))
    assert (y == 28).all(), y


@pytest.mark.parametrize("M,K,N", [(7, 1, 5), (1, 33, 17), (23, 45, 1), (1, 1, 1)])
def test_degenerate_sizes(dev, rng, M, K, N):
    run_both(problem(rng, U8, I8, U8, M, K, N, "axis", "axis"), U8)


def test_batch_broadcast(dev, rng):
    args = problem(rng, I8, U8, I8, 10, 20, 12, "axis", "axis", a_batch=(2, 1), b_batch=(1, 3))
    y = run_both(args, I8)
    assert y.shape == (2, 3, 10, 12)


def test_strided_inputs(dev, rng):
    # B given as a transposed view (n stride K): staged with its strides, packed on the device first.
    M, K, N = 12, 40, 24
    a = rand_q(rng, (M, K), I8)
    bt = rand_q(rng, (N, K), I8)
    b = bt.T
    y = vkops.quantized_linear_matmul(a, 0.03, None, b, 0.02, None, 0.1, None)
    want = reference.quantized_linear_matmul(a, np.float32(0.03), None, b, np.float32(0.02), None, np.float32(0.1), None)
    close(y, want)


@pytest.mark.parametrize("K", [40, 48])
def test_column_major_b_device_view(dev, rng, K):
    """A device tensor viewed column-major (k stride 1: an N x K weight, transposed): read in place by
    the direct-B kernel where it runs (K = 48: whole 16-element strides), else packed first."""
    M, N = 12, 32
    a = rand_q(rng, (M, K), I8)
    bt = rand_q(rng, (N, K), I8)
    view = dev.tensor(bt).as_strided((K, N), (1, K))
    y = vkops.quantized_linear_matmul(a, 0.03, None, view, 0.02, None, 0.1, None)
    want = reference.quantized_linear_matmul(a, np.float32(0.03), None, bt.T, np.float32(0.02), None,
                                             np.float32(0.1), None)
    close(y.numpy(), want)


def test_broadcast_parameters_of_any_size(dev, rng):
    """Per-row parameters given as broadcast NumPy views (stride 0) are staged packed, small (device
    constants) and large (over 64 KiB: uploaded) alike."""
    for M in (40, 20000):
        a = rng.integers(0, 256, (M, 16)).astype(np.uint8)
        b = rng.integers(-128, 128, (16, 8)).astype(np.int8)
        sa = np.broadcast_to(np.float32(0.03), (M,))
        za = np.broadcast_to(np.uint8(100), (M,))
        got = vkops.quantized_linear_matmul(a, sa, za, b, 0.05, None, 0.5, np.uint8(3))
        want = reference.quantized_linear_matmul(a, 0.03, 100, b, 0.05, None, 0.5, np.uint8(3))
        assert np.abs(got.astype(int) - want).max() <= 1, M


def test_device_tensors_and_batch(dev, rng):
    args = problem(rng, U8, I8, I8, 16, 32, 24, "axis", "axis", (1, 2), (1, 2))
    dargs = [None if x is None else vkops.to_device(x, dev) for x in args]
    y = vkops.quantized_linear_matmul(*dargs)
    assert isinstance(y, vkops.DeviceTensor) and y.shape == (1, 2, 16, 24)
    want = reference.quantized_linear_matmul(*args, output_dtype=I8)
    close(y.numpy(), want)
    with dev.batch():
        y1 = vkops.quantized_linear_matmul(*dargs)
        y2 = vkops.quantized_linear_matmul(args[0], *dargs[1:])  # NumPy A inside a batch: device out
    close(y1.numpy(), want)
    close(y2.numpy(), want)


def test_kernel_selection(dev, rng):
    args = problem(rng, I8, I8, I8, 32, 64, 32, "tensor", "none")
    run_both(args, I8, kernel="portable")
    if QC.coopmat_supported(dev):
        run_both(args, I8, kernel="coopmat")
        run_both(problem(rng, U8, U8, U8, 40, 96, 48, "axis", "axis"), U8, kernel="coopmat")
        assert QC.self_check(dev)
        assert QC.self_check(dev, split=True)
        # the B-streaming kernel: both widths, with and without split-K (4 splits of 65 steps, the last
        # partial), zero points (the row of ones after 15 rows), column-major B, N not in whole tiles
        for nr in QS.TILES:
            for target in (1, 4000):
                tun = TUNING.replace(STREAM_NR=nr, STREAM_TARGET_GROUPS=target)
                for M, adt, bdt, zps in ((16, I8, I8, "none"), (15, U8, U8, "axis"), (7, U8, I8, "tensor")):
                    args3 = problem(rng, adt, bdt, I8, M, 4112, 144, "axis", zps)
                    want = reference.quantized_linear_matmul(*args3)
                    close(vkops.quantized_linear_matmul(*args3, kernel="stream", tuning=tun), want)
                    b = args3[3]
                    bcols = dev.tensor(np.ascontiguousarray(b[0, 0].T)).as_strided(b.shape, (0, 0, 1, b.shape[2]))
                    close(vkops.quantized_linear_matmul(*args3[:3], bcols, *args3[4:], kernel="stream", tuning=tun).numpy(), want)
                    p = next(reversed(dev._plans._entries.values()))
                    assert p.dispatches[-1].kernel == QS.kernel(16, nr) + ("_sk" if target > 1 else "")
        for sk in (2, 3):  # split-K, forced: K = 320 in 128-chunks (32x64x128 for M = 24), partial last
            for zps in ("none", "axis"):
                args2 = problem(rng, U8, I8, I8, 24, 80, 320, "axis", zps)
                got = vkops.quantized_linear_matmul(*args2, kernel="coopmat", tuning=TUNING.replace(COOPMAT_SPLIT_K=sk))
                close(got, reference.quantized_linear_matmul(*args2))
    else:
        with pytest.raises(vkops.DeviceLimitError, match="cooperative_matrix"):
            vkops.quantized_linear_matmul(*args, kernel="coopmat")
        assert not QC.coopmat_verified(dev)
    with pytest.raises(vkops.ValidationError, match="kernel must be"):
        vkops.quantized_linear_matmul(*args, kernel="fast")


def desc(a=(1, 1, 4, 8), b=(1, 1, 8, 5), adt=I8, bdt=I8, odt=I8, sa=(1, 1, 1, 1), sb=(1, 1, 1, 1), so=(1, 1, 1, 1),
         za=None, zb=None, zo=None, out=None, sdt=np.float32):
    t = lambda dt, s: None if s is None else TensorDesc(dt, s)  # noqa: E731
    m, n = a[-2], b[-1]
    out = out or (max(a[0], b[0]), max(a[1], b[1]), m, n)
    return vkops.QuantizedLinearMatMulDesc(t(adt, a), t(sdt, sa), t(adt, za), t(bdt, b), t(sdt, sb), t(bdt, zb),
                                           t(sdt, so), t(odt, zo), t(odt, out))


@pytest.mark.host_only
def test_desc_valid():
    desc().validate()
    desc(sa=(1, 1, 4, 1), za=(1, 1, 4, 1), sb=(1, 1, 1, 5), zb=(1, 1, 1, 5), so=(1, 1, 4, 1), zo=(1, 1, 4, 1)).validate()
    desc(a=(2, 1, 4, 8), b=(1, 3, 8, 5)).validate()


@pytest.mark.parametrize("kw,msg", [
    (dict(adt=np.float32), r"a.data_type must be INT8 or UINT8; got FLOAT32"),
    (dict(odt=np.int32), r"output.data_type must be INT8 or UINT8; got INT32"),
    (dict(sdt=np.float16), r"a_scale.data_type must be FLOAT32; got FLOAT16"),
    (dict(b=(1, 1, 7, 5)), r"b.sizes\[2\] must equal a.sizes\[3\] \(K\); got 7 vs 8"),
    (dict(a=(2, 1, 4, 8), b=(3, 1, 8, 5), out=(3, 1, 4, 5)), r"\(BatchCount\) must be equal or one of them 1; got 2 and 3"),
    (dict(out=(1, 1, 4, 6)), r"output.sizes must be .* = \(1, 1, 4, 5\); got \(1, 1, 4, 6\)"),
    (dict(sa=(1, 1, 1, 4)), r"a_scale.sizes must be \{1,1,1,1\} \(per tensor\) or \{1,1,4,1\} \(per row\); got \(1, 1, 1, 4\)"),
    (dict(zb=(1, 1, 5, 1)), r"b_zero_point.sizes must be \{1,1,1,1\} \(per tensor\) or \{1,1,1,5\} \(per column\)"),
    (dict(so=(1, 1, 1, 5)), r"output_scale.sizes must be .* \(per row\); got \(1, 1, 1, 5\)"),
    (dict(a=(4, 8)), r"a must have DimensionCount 4; got 2"),
    (dict(a=(1, 1, 4, 40000), b=(1, 1, 40000, 5)), r"\(K\) must be <= 33025.*got K=40000"),
])
@pytest.mark.host_only
def test_desc_rules(kw, msg):
    with pytest.raises(vkops.ValidationError, match=msg):
        desc(**kw).validate()


@pytest.mark.host_only
def test_desc_zero_point_type_rules():
    d = desc(za=(1, 1, 1, 1))
    bad = vkops.QuantizedLinearMatMulDesc(d.a, d.a_scale, TensorDesc(U8, (1, 1, 1, 1)), d.b, d.b_scale, None,
                                          d.output_scale, None, d.output)
    with pytest.raises(vkops.ValidationError, match=r"a_zero_point.data_type must equal a.data_type INT8; got UINT8"):
        bad.validate()
    with pytest.raises(vkops.ValidationError, match=r"a_scale must be a TensorDesc; got NoneType"):
        vkops.QuantizedLinearMatMulDesc(d.a, None, None, d.b, d.b_scale, None, d.output_scale, None,
                                        d.output).validate()


def test_bad_calls(dev, rng):
    a, b = rand_q(rng, (4, 8), I8), rand_q(rng, (8, 5), I8)
    with pytest.raises(vkops.ValidationError, match=r"a_zero_point must be an integer in \[-128, 127\]"):
        vkops.quantized_linear_matmul(a, 0.1, 200, b, 0.1, 0, 0.1, 0)
    with pytest.raises(vkops.ValidationError, match=r"b_zero_point.data_type must equal b.data_type INT8; got UINT8"):
        vkops.quantized_linear_matmul(a, 0.1, 0, b, 0.1, np.uint8(3), 0.1, 0)
    with pytest.raises(vkops.ValidationError, match=r"b.sizes\[2\] must equal a.sizes\[3\]"):
        vkops.quantized_linear_matmul(a, 0.1, 0, b.T, 0.1, 0, 0.1, 0)
    with pytest.raises(vkops.ValidationError, match=r"a_scale.sizes must be .*got \(1, 1, 3, 1\)"):
        vkops.quantized_linear_matmul(a, np.ones(3, np.float32), 0, b, 0.1, 0, 0.1, 0)
    with pytest.raises(vkops.ValidationError, match=r"a.data_type must be INT8 or UINT8; got float32"):
        vkops.quantized_linear_matmul(a.astype(np.float32), 0.1, None, b, 0.1, None, 0.1, None)
    with pytest.raises(vkops.ValidationError, match=r"a must have 2 to 4 dimensions; got 1"):
        vkops.quantized_linear_matmul(a[0], 0.1, None, b, 0.1, None, 0.1, None)


# N-D a with a shared b (issue 15): the leading dimensions fold into M, one GEMM.
def _gemms(plan):
    return [d for d in plan.dispatches if d.kernel.startswith("qlmm")]


@pytest.mark.parametrize("scales, zps", [("tensor", "none"), ("tensor", "tensor"), ("axis", "axis")])
@pytest.mark.parametrize("lead", [(5,), (2, 3)])
def test_nd_a_with_shared_b_folds_into_one_gemm(dev, rng, lead, scales, zps):
    M, K, N = 7, 40, 20
    _, sa, za, b, sb, zb, so, zo = problem(rng, U8, I8, I8, M, K, N, scales, zps)
    a = rand_q(rng, lead + (M, K), U8)
    b = b.reshape(K, N)
    flat = lambda p: None if p is None else p.reshape(-1) if p.size > 1 else p.reshape(())  # noqa: E731
    sa, za, sb, zb, so, zo = map(flat, (sa, za, sb, zb, so, zo))  # ONNX style: scalars and 1-D vectors
    got = vkops.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo, output_dtype=I8)
    assert got.shape == lead + (M, N)
    # the same data as one 2-D call, per-row parameters repeated for every leading index
    reps = int(np.prod(lead))
    tile = lambda p: p if p is None or p.ndim == 0 else np.tile(p, reps)  # noqa: E731
    two_d = vkops.quantized_linear_matmul(a.reshape(reps * M, K), tile(sa), tile(za), b, sb, zb, tile(so), tile(zo),
                                          output_dtype=I8)
    assert np.array_equal(got.reshape(reps * M, N), two_d)
    col = lambda p: p if p is None or p.ndim == 0 else p.reshape(M, 1)  # noqa: E731
    close(got, reference.quantized_linear_matmul(a, col(sa), col(za), b, sb, zb, col(so), col(zo), output_dtype=I8))


def _plan(a_sizes, b_sizes, a_strides=None, b_strides=None, per_row=False):
    M, N = a_sizes[2], b_sizes[3]
    row = (1, 1, M, 1) if per_row else (1, 1, 1, 1)
    t = TensorDesc
    out = (max(a_sizes[0], b_sizes[0]), max(a_sizes[1], b_sizes[1]), M, N)
    d = vkops.QuantizedLinearMatMulDesc(t(I8, a_sizes, a_strides), t(np.float32, row), t(I8, row), t(I8, b_sizes, b_strides),
                                        t(np.float32, (1, 1, 1, 1)), None, t(np.float32, row), t(I8, row),
                                        t(I8, out)).validate()
    return qmod.plan(d, vkops.Limits(), kernel="portable")


@pytest.mark.host_only
def test_fold_mechanism_plans_one_gemm():
    push = lambda d: np.array(d.push, np.uint32).view(qmod.QLMM_PUSH)[0]  # noqa: E731
    # a {1, 8, 32, 256} x shared b {1, 1, 256, 1024}: one GEMM of 256 rows, no batch grid
    p = _plan((1, 8, 32, 256), (1, 1, 256, 1024))
    (g,) = _gemms(p)
    assert len(p.dispatches) == 1 and g.groups[2] == 1 and push(g)["M"] == 256 and p.note("folded") == 8
    # per-row parameters: tiled once each (three SLICE1 copies), still one GEMM
    p = _plan((2, 4, 32, 256), (1, 1, 256, 64), per_row=True)
    (g,) = _gemms(p)
    assert g.groups[2] == 1 and push(g)["M"] == 256 and len(p.dispatches) == 1 + 4
    # a broadcast b (batch stride 0) is shared too
    p = _plan((1, 8, 32, 256), (1, 8, 256, 64), b_strides=(0, 0, 64, 1))
    assert _gemms(p)[0].groups[2] == 1
    # an unshared b, or a's batches not evenly spaced: one GEMM dispatch over an 8-deep grid, as before
    for p in (_plan((1, 8, 32, 256), (1, 8, 256, 64)),
              _plan((1, 8, 32, 256), (1, 1, 256, 64), a_strides=(0, 256 * 40, 256, 1))):
        (g,) = _gemms(p)
        assert g.groups[2] == 8 and push(g)["M"] == 32 and p.note("folded") is None


def test_unshared_b_and_gapped_a_still_correct(dev, rng):
    M, K, N = 5, 24, 9
    a = rand_q(rng, (4, M, K), I8)
    b = rand_q(rng, (4, K, N), I8)
    y = vkops.quantized_linear_matmul(a, 0.02, None, b, 0.03, None, 0.1, None)
    close(y, reference.quantized_linear_matmul(a, 0.02, None, b, 0.03, None, 0.1, None))
    big = rand_q(rng, (4, M + 2, K), I8)  # batches 7 rows apart, M = 5 used: not one matrix
    y = vkops.quantized_linear_matmul(big[:, :M], 0.02, None, b[0], 0.03, None, 0.1, None)
    close(y, reference.quantized_linear_matmul(big[:, :M], 0.02, None, b[0], 0.03, None, 0.1, None))


# ---- the integer-dot-product kernel (decoding-sized M; lavapipe offers VK_KHR_shader_integer_dot_product) ----
def _dot_or_skip(dev):
    if not QC.device_limits(dev).integer_dot_product:
        pytest.skip(f"{dev.limits.name}: no integer dot products (or a profile without them)")


def _dot_call(dev, args, odt, cols=False, **kw):
    """args as problem() returns them; b read column-major in place (a transposed device view) when cols."""
    a, sa, za, b, sb, zb, so, zo = args
    want = reference.quantized_linear_matmul(*args, output_dtype=odt)
    if cols:  # problem()'s b is {B, C, K, N}: its N x K transpose goes up packed
        B, C, K, N = b.shape
        b = dev.tensor(np.ascontiguousarray(np.swapaxes(b, -1, -2))).as_strided(b.shape, (C * N * K, N * K, 1, K))
    got = vkops.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo, output_dtype=odt, kernel="dot", **kw)
    close(got.numpy() if isinstance(got, vkops.DeviceTensor) else got, want)


@pytest.mark.parametrize("cols", [False, True], ids=["b_rows", "b_cols"])
@pytest.mark.parametrize("zps", ["none", "tensor", "axis"])
@pytest.mark.parametrize("adt,bdt", [(I8, I8), (U8, I8), (U8, U8), (I8, U8)], ids=lambda d: d.name)
def test_dot_kernel_dtypes_zero_points_layouts(dev, rng, adt, bdt, zps, cols):
    """Every signedness pair (uint8 shifted into int8, the offset folded into the zero point), zero points
    none / per tensor / per row and column, B row-major and column-major; N = 132 is one quad past the
    128-column workgroup, M = 13 leaves 3 of 16 rows empty."""
    _dot_or_skip(dev)
    _dot_call(dev, problem(rng, adt, bdt, adt, 13, 272, 132, "axis", zps), adt, cols)


@pytest.mark.parametrize("M", [1, 2, 15, 16])
@pytest.mark.parametrize("N", [124, 128, 132, 260])
def test_dot_kernel_row_and_column_boundaries(dev, rng, M, N):
    """Around ROWS (pow2 >= M: 1, 2, 16) and the 128-column workgroup (a quad less, exact, a quad more)."""
    _dot_or_skip(dev)
    _dot_call(dev, problem(rng, U8, I8, I8, M, 96, N, "axis", "axis"), I8)
    _dot_call(dev, problem(rng, I8, I8, I8, M, 96, N, "tensor", "none"), I8, cols=True)
    # column-major B takes any N: output rows that do not start on a word (N = N - 2) merge shared words
    _dot_call(dev, problem(rng, U8, U8, U8, M, 96, N - 2, "axis", "axis"), U8, cols=True)


def test_dot_kernel_plan_split_and_chunks(dev, rng):
    """The plan: one qlmm_dot dispatch of ROWS = pow2(M), split-K by DOT_TARGET_GROUPS (slots and a
    last-arriving reduction: qlmm_dot_sk), and a K range longer than the staged A chunk (several chunks
    per workgroup, split or not); K = 2064 is 129 16-byte blocks, so splits and chunks end unevenly."""
    _dot_or_skip(dev)
    lim = QC.device_limits(dev)
    M, K, N = 9, 2064, 132
    args = problem(rng, U8, U8, U8, M, K, N, "axis", "axis")
    d = vkops.QuantizedLinearMatMulDesc(*[None if x is None else TensorDesc(x.dtype, x.shape) for x in args],
                                        TensorDesc(U8, (1, 1, M, N))).validate()
    chunk = QD.chunk(lim, 16)
    assert 8 <= chunk < K // 16  # more than one chunk
    for target, sk in ((1, 1), (2, 1), (4 * 2, 4), (10**6, None)):
        tun = TUNING.replace(DOT_TARGET_GROUPS=target)
        p = qmod.plan(d, lim, tuning=tun)
        (g,) = _gemms(p)
        assert g.kernel == ("qlmm_dot" if p.note("split_k") == 1 else "qlmm_dot_sk") and p.note("rows") == 16
        assert g.spec[1:3] == (16, chunk) and g.groups[1] == 1 and g.groups[0] == 2 * p.note("split_k")
        if sk is not None:
            assert p.note("split_k") == sk
        else:  # capped: each thread keeps at least DOT_UNROLL blocks per split
            assert p.note("split_k") == (K // 16) // ((g.spec[0] // 32) * TUNING.DOT_UNROLL)
        got = vkops.quantized_linear_matmul(*args, output_dtype=U8, kernel="dot", tuning=tun)
        close(got, reference.quantized_linear_matmul(*args, output_dtype=U8))
    # the same output with the cooperative-matrix / portable kernels: dot is the default for small M
    assert qmod.plan(d, lim).dispatches[-1].kernel.startswith("qlmm_dot")
    assert not qmod.plan(d, lim, tuning=TUNING.replace(DOT=False)).dispatches[-1].kernel.startswith("qlmm_dot")


def test_dot_kernel_rows_32_batches_and_strided_a(dev, rng):
    """32 rows per workgroup (DOT_MAX_M raised), two M tiles (M = 33), an unfolded batch (b per batch),
    and A rows at a stride that is not a multiple of 4 bytes (read a word pair at a time)."""
    _dot_or_skip(dev)
    tun = TUNING.replace(DOT_MAX_M=64, DOT_MAX_M_COOPMAT=64)
    for M in (17, 32, 33):
        _dot_call(dev, problem(rng, U8, I8, I8, M, 64, 132, "axis", "axis"), I8, tuning=tun)
    _dot_call(dev, problem(rng, I8, U8, U8, 5, 48, 64, "axis", "axis", a_batch=(2, 1), b_batch=(2, 1)), U8)
    _dot_call(dev, problem(rng, I8, U8, U8, 5, 48, 64, "axis", "axis", a_batch=(1, 3), b_batch=(1, 3)), U8, cols=True)
    M, K, N = 6, 80, 36
    a, sa, za, b, sb, zb, so, zo = problem(rng, I8, I8, I8, M, K, N, "axis", "axis")
    big = np.zeros((M, K + 3), I8)
    big[:, 1:K + 1] = a[0, 0]
    view = dev.tensor(big).as_strided((M, K), (K + 3, 1))  # rows 83 bytes apart, starting at byte 0
    got = vkops.quantized_linear_matmul(view, sa[0, 0, :, 0], za[0, 0, :, 0], b[0, 0], sb[0, 0, 0], zb[0, 0, 0],
                                        so[0, 0, :, 0], zo[0, 0, :, 0], kernel="dot")
    want = reference.quantized_linear_matmul(big[:, :K], sa[0, 0], za[0, 0], b[0, 0], sb[0, 0], zb[0, 0], so[0, 0], zo[0, 0])
    close(got.numpy(), want)


def test_dot_kernel_refusals(dev, rng):
    """kernel='dot' names why it cannot run; auto falls back to another kernel for the same shapes."""
    _dot_or_skip(dev)
    most = TUNING.DOT_MAX_M_COOPMAT if QC.device_limits(dev).coopmat_verified else TUNING.DOT_MAX_M
    for (M, K, N), why in (((most + 1, 64, 32), f"M = {most + 1} > {most}"), ((4, 40, 32), "K = 40 is not a multiple of 16"),
                           ((4, 64, 30), "row-major b needs N and its strides multiples of 4")):
        args = problem(rng, I8, I8, I8, M, K, N, "tensor", "none")
        with pytest.raises(vkops.DeviceLimitError, match=why):
            vkops.quantized_linear_matmul(*args, kernel="dot")
        run_both(args, I8)
    lim = QC.device_limits(dev)
    assert not lim.within("minimum").integer_dot_product  # Vulkan 1.1 does not promise them
    assert QD.rows(lim.replace(integer_dot_product=False), 4, 64, 32, (0, 0, 32, 1), False)[0] is None


def _gemv_or_skip(dev):
    lim = QC.device_limits(dev)
    why = QG.why_not(lim, 1, 256, 256, (0, 0, 256), False)[1]
    if why:
        pytest.skip(f"{lim.name}: {why}")
    return lim


def _gemv_call(dev, args, odt, cols=False, pad=0, **kw):
    """One or two rows through kernel="gemv" against the oracle; the plan it ran. cols: B a transposed device view
    (column-major; columns `pad` bytes apart beyond K), on the _bc builds (GEMV_BC on unless a tuning is given)."""
    if cols:
        a, sa, za, b, sb, zb, so, zo = args
        B, C, K, N = b.shape
        wide = np.zeros((B, C, N, K + pad), b.dtype)
        wide[..., :K] = np.swapaxes(b, -1, -2)
        bv = dev.tensor(wide).as_strided(b.shape, (C * N * (K + pad), N * (K + pad), 1, K + pad))
        kw.setdefault("tuning", TUNING.replace(GEMV_BC=True))
        got = vkops.quantized_linear_matmul(a, sa, za, bv, sb, zb, so, zo, output_dtype=odt, kernel="gemv", **kw)
    else:
        got = vkops.quantized_linear_matmul(*args, output_dtype=odt, kernel="gemv", **kw)
    close(got.numpy() if isinstance(got, vkops.DeviceTensor) else got, reference.quantized_linear_matmul(*args, output_dtype=odt))
    p = next(reversed(dev._plans._entries.values()))
    assert p.dispatches[-1].kernel.startswith("qlmm_gemv") and p.note("kernel") == "gemv"
    assert ("_bc" in p.dispatches[-1].kernel) == cols and len(p.dispatches) == 1  # column-major B read in place
    return p


@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("zps", ["none", "tensor", "axis"])
@pytest.mark.parametrize("adt,bdt", [(I8, I8), (U8, I8), (U8, U8), (I8, U8)], ids=lambda d: d.name)
def test_gemv_kernel_dtypes_zero_points(dev, rng, adt, bdt, zps, M):
    """Every signedness pair, zero points none / per tensor / per column of B (taken off as zb * sum(a - za)),
    per-row and per-column scales; N = 272 is one 16-column step past the 256-column workgroup; one row and two
    (the MR = 2 build: each row its own zero point and row sum)."""
    _gemv_or_skip(dev)
    p = _gemv_call(dev, problem(rng, adt, bdt, adt, M, 272, 272, "axis", zps), adt)
    assert p.dispatches[-1].kernel in (QG.kernel(M), QG.kernel(M) + "_sk")


@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("N", [16, 240, 256, 272])
@pytest.mark.parametrize("K", [QG.STEP - 1, QG.STEP, QG.STEP + 1])
def test_gemv_kernel_workgroup_boundaries(dev, rng, K, N, M):
    """Around the 256-column workgroup (a step less, exact, a step more) and the K step of a workgroup
    (16 lane groups x U rows): one split and forced splits (the last one partial); one row and two."""
    _gemv_or_skip(dev)
    for target in (1, 10**6):
        tun = TUNING.replace(GEMV_TARGET_GROUPS=target)
        p = _gemv_call(dev, problem(rng, U8, I8, I8, M, K, N, "axis", "axis"), I8, tuning=tun)
        assert p.note("split_k") == (1 if target == 1 else -(-K // QG.STEP))


@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("zps", ["none", "tensor", "axis"])
@pytest.mark.parametrize("adt,bdt", [(I8, I8), (U8, I8), (U8, U8), (I8, U8)], ids=lambda d: d.name)
def test_gemv_column_major_b_dtypes_zero_points(dev, rng, adt, bdt, zps, M):
    """Column-major B (a transposed N x K view) read in place by the _bc builds: every signedness pair, zero points
    none / per tensor / per column, per-row and per-column scales, one row and two; N = 272 one 16-column step past
    the workgroup's 256, K = 272 two 128-byte pieces of a column and a 16-byte one."""
    _gemv_or_skip(dev)
    p = _gemv_call(dev, problem(rng, adt, bdt, adt, M, 272, 272, "axis", zps), adt, cols=True)
    assert p.dispatches[-1].kernel in (QG.kernel(M, True), QG.kernel(M, True) + "_sk") and p.note("b_layout") == "column-major"


@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("N", [16, 240, 256, 272])
@pytest.mark.parametrize("K", [112, 128, 144, QG.STEP - 16, QG.STEP, QG.STEP + 16])
def test_gemv_column_major_b_boundaries(dev, rng, K, N, M):
    """Column-major B around the workgroup's 256 columns and 8-column groups (N of 16-272), a lane group's
    128-byte piece of K (112-144) and the split step (STEP +- 16: the last range one 16-byte block), whole and
    split as far as the steps allow; columns 32 bytes further apart than K (a view of a wider matrix)."""
    _gemv_or_skip(dev)
    for target, pad in ((1, 0), (10**6, 32)):
        tun = TUNING.replace(GEMV_TARGET_GROUPS=target, GEMV_BC=True)
        p = _gemv_call(dev, problem(rng, U8, I8, I8, M, K, N, "axis", "axis"), I8, cols=True, pad=pad, tuning=tun)
        assert p.note("split_k") == (1 if target == 1 else -(-K // QG.STEP))


def test_gemv_column_major_b_batches_splits_and_refusals(dev, rng):
    """B per batch column-major (the z dimension), a K range past slice_max (forced split) for one and two rows,
    and the refusals: GEMV_BC off, K not in whole 16-byte steps, a column stride not of 16; auto takes the _bc
    builds for one row where GEMV_BC is on, and packs nothing."""
    lim = _gemv_or_skip(dev)
    p = _gemv_call(dev, problem(rng, I8, I8, I8, 1, 160, 48, "tensor", "axis", a_batch=(2, 3), b_batch=(2, 3)), I8, cols=True)
    assert p.dispatches[-1].groups[2] == 6
    for M in (1, 2):
        K = QG.slice_max(M) + 16
        p = _gemv_call(dev, problem(rng, I8, U8, I8, M, K, 32, "tensor", "tensor"), I8, cols=True,
                       tuning=TUNING.replace(GEMV_TARGET_GROUPS=1, GEMV_BC=True))
        assert p.note("split_k") == 2 and p.dispatches[-1].kernel == QG.kernel(M, True) + "_sk"
    bt = rand_q(rng, (32, 64), I8)
    bcols = dev.tensor(bt).as_strided((1, 1, 64, 32), (0, 0, 1, 64))
    a1 = dev.tensor(rand_q(rng, (1, 64), I8))
    with pytest.raises(vkops.DeviceLimitError, match="column-major and QlmmTuning.GEMV_BC is False"):
        vkops.quantized_linear_matmul(a1, 1.0, None, bcols, 1.0, None, 1.0, None, kernel="gemv",
                                      tuning=TUNING.replace(GEMV_BC=False))
    b40 = dev.tensor(rand_q(rng, (32, 48), I8)).as_strided((1, 1, 40, 32), (0, 0, 1, 48))  # K = 40, columns 48 apart
    with pytest.raises(vkops.DeviceLimitError, match="column-major B needs K in whole 16-byte steps; got K=40"):
        vkops.quantized_linear_matmul(dev.tensor(rand_q(rng, (1, 40), I8)), 1.0, None, b40, 1.0, None, 1.0, None,
                                      kernel="gemv", tuning=TUNING.replace(GEMV_BC=True))
    wide = rand_q(rng, (32, 72), I8)  # columns 72 bytes apart: not read in place, packed first for the row-major build
    b72 = dev.tensor(wide).as_strided((1, 1, 64, 32), (0, 0, 1, 72))
    got = vkops.quantized_linear_matmul(a1, 1.0, None, b72, 1.0, None, 1.0, None, kernel="gemv",
                                        tuning=TUNING.replace(GEMV_BC=True))
    close(got.numpy().reshape(1, 32), reference.quantized_linear_matmul(a1.numpy(), 1.0, None, wide[:, :64].T, 1.0, None, 1.0, None))
    p = next(reversed(dev._plans._entries.values()))
    assert [x.kernel for x in p.dispatches][-1] == QG.kernel(1) and len(p.dispatches) == 2
    one = (1, 1, 1, 1)
    d = vkops.QuantizedLinearMatMulDesc(TensorDesc(I8, (1, 1, 1, 4096)), TensorDesc(np.float32, one), None,
                                        TensorDesc(I8, (1, 1, 4096, 11008), (0, 0, 1, 4096)), TensorDesc(np.float32, one),
                                        None, TensorDesc(np.float32, one), None, TensorDesc(I8, (1, 1, 1, 11008))).validate()
    on, off = (qmod.plan(d, lim, tuning=TUNING.replace(GEMV_BC=v)) for v in (True, False))
    assert [x.kernel for x in on.dispatches] == [QG.kernel(1, True) + "_sk"] and on.note("b_layout") == "column-major"
    assert not on.dispatches[-1].kernel.startswith("slice") and off.note("kernel") != "gemv"


def test_gemv_kernel_splits_sums_and_plan(dev, rng):
    """A K range longer than a workgroup stages (slice_max) forces split-K even when the target asks for
    one workgroup; split sums go through the device's counters, which the kernel leaves zero; several
    products in one batch share them (ordered); the plan of an H100-sized decode GEMM."""
    lim = _gemv_or_skip(dev)
    for M in (1, 2):  # two rows stage half as many K rows (slice_max(2)): the same split from half the K
        K = QG.slice_max(M) + 1
        p = _gemv_call(dev, problem(rng, I8, U8, I8, M, K, 32, "tensor", "tensor"), I8,
                       tuning=TUNING.replace(GEMV_TARGET_GROUPS=1))
        assert p.note("split_k") == 2 and p.dispatches[-1].kernel == QG.kernel(M) + "_sk"
    args = [problem(rng, I8, I8, I8, 1, 1024, 512, "tensor", "axis") for _ in range(3)]
    with dev.batch():
        outs = [vkops.quantized_linear_matmul(*[dev.tensor(x) if isinstance(x, np.ndarray) and x.shape[-1] > 1 and x.shape[-2] > 1
                                                else x for x in a], kernel="gemv") for a in args]
    for o, a in zip(outs, args):
        close(o.numpy(), reference.quantized_linear_matmul(*a))
    assert not dev.counters(1).numpy().any()
    h100 = lim.replace(shared_memory_bytes=49152, max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64))
    one = (1, 1, 1, 1)
    d = vkops.QuantizedLinearMatMulDesc(TensorDesc(I8, (1, 1, 1, 4096)), TensorDesc(np.float32, one), None,
                                        TensorDesc(I8, (1, 1, 4096, 11008)), TensorDesc(np.float32, one), None,
                                        TensorDesc(np.float32, one), None, TensorDesc(I8, (1, 1, 1, 11008))).validate()
    p = qmod.plan(d, h100)
    (g,) = _gemms(p)
    tiles = -(-11008 // QG.COLS)
    assert g.kernel == "qlmm_gemv_sk" and g.groups == (tiles * p.note("split_k"), 1, 1)
    # 264 workgroups over 43 tiles hold 6 splits; ranges of whole 256-row steps (768 rows) cover K in 6
    assert TUNING.GEMV_TARGET_GROUPS == 264 and p.note("split_k") == QG.splits(tiles, 4096, 1) == 6
    # two rows of it (B's 45 MB over GEMV_MULTI_MIN_B): the MR = 2 build, the same split
    d2 = dataclasses.replace(d, a=TensorDesc(I8, (1, 1, 2, 4096)), output=TensorDesc(I8, (1, 1, 2, 11008))).validate()
    (g2,) = _gemms(qmod.plan(d2, h100))
    assert g2.kernel == "qlmm_gemv_m2_sk" and g2.groups == g.groups
    # 125 tiles (1 x K x 32000): the splits that stay within the target's one wave where they fill 7/8 of it
    # (2: 250 workgroups), not 3; 197 tiles (1 x K x 50304): one split would fill 197 of 264, so 2 (394). K = 2048
    # keeps B within the device's storage buffer range (the rule reads the tiles only).
    for n, groups in ((32000, 250), (50304, 394)):
        dn = dataclasses.replace(d, a=TensorDesc(I8, (1, 1, 1, 2048)), b=TensorDesc(I8, (1, 1, 2048, n)),
                                 output=TensorDesc(I8, (1, 1, 1, n))).validate()
        (g,) = _gemms(qmod.plan(dn, h100))
        assert g.kernel == "qlmm_gemv_sk" and g.groups == (groups, 1, 1), (n, g.groups)


def test_gemv_kernel_batches_strided_a_and_refusals(dev, rng):
    """B per batch (the z dimension: not folded), a strided row of A, column-major B (the _bc build by default),
    and what the kernel refuses, each naming the reason: more than two rows, N not in whole 16-column steps."""
    _gemv_or_skip(dev)
    a = rand_q(rng, (2, 3, 1, 160), I8)
    b = rand_q(rng, (2, 3, 160, 48), I8)
    args = (a, 0.03, np.int8(2), b, 0.02, np.int8(-3), 3.0, np.int8(1))
    p = _gemv_call(dev, args, I8)
    assert p.dispatches[-1].groups[2] == 6
    wide = dev.tensor(rand_q(rng, (1, 1, 1, 320), I8))
    a_view = wide.as_strided((1, 1, 1, 160), (320, 320, 320, 2))  # every other element: packed first
    args2 = (a_view, 0.03, None, dev.tensor(b[:1, :1]), 0.02, None, 3.0, None)
    got = vkops.quantized_linear_matmul(*args2, kernel="gemv").numpy()
    want = reference.quantized_linear_matmul(wide.numpy()[..., ::2], 0.03, None, b[:1, :1], 0.02, None, 3.0, None)
    close(got, want)
    with pytest.raises(vkops.DeviceLimitError, match="M = 3 is above 2 row"):
        vkops.quantized_linear_matmul(rand_q(rng, (3, 64), I8), 1.0, None, rand_q(rng, (64, 32), I8), 1.0, None, 1.0, None,
                                      kernel="gemv")
    bt = rand_q(rng, (32, 64), I8)
    bcols = dev.tensor(bt).as_strided((1, 1, 64, 32), (0, 0, 1, 64))
    a1 = rand_q(rng, (1, 64), I8)
    got = vkops.quantized_linear_matmul(dev.tensor(a1), 1.0, None, bcols, 1.0, None, 1.0, None, kernel="gemv")
    close(got.numpy().reshape(1, 32), reference.quantized_linear_matmul(a1, 1.0, None, bt.T, 1.0, None, 1.0, None))
    p = next(reversed(dev._plans._entries.values()))  # column-major B by default on the _bc build (GEMV_BC)
    assert TUNING.GEMV_BC and [x.kernel for x in p.dispatches] == [QG.kernel(1, True)]
    with pytest.raises(vkops.DeviceLimitError, match="whole 16-byte steps; got N=20"):
        vkops.quantized_linear_matmul(rand_q(rng, (1, 64), I8), 1.0, None, rand_q(rng, (64, 20), I8), 1.0, None, 1.0, None,
                                      kernel="gemv")


@pytest.mark.host_only
def test_auto_kernel_rule_for_small_m():
    """Pure planning: where cooperative matrices are verified, the B-streaming kernel takes every
    product of up to STREAM_MAX_M rows (any layout of B, zero points or not; 15 when B's column sums take
    a row of A's tile). With it off, the direct-B
    kernel keeps row-major signed B without zero-point sums above DOT_COOP_MAX_M rows; the dot kernel
    takes fewer rows, column-major B and zero points, up to DOT_MAX_M_COOPMAT rows; a device without
    cooperative matrices gets the dot kernel for M <= DOT_MAX_M."""
    h100 = vkops.Limits(name="coopmat+dot", subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32,
                        max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64), shared_memory_bytes=49152,
                        max_storage_buffer_range=2**32 - 1, subgroup_operations=0xFF, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True, integer_dot_product=True)
    t = TensorDesc

    tun = TUNING

    def kernel(lim, M, adt=I8, bdt=I8, zp=False, cols=False, K=4096, N=4096):
        b = t(bdt, (1, 1, K, N), (0, 0, 1, K)) if cols else t(bdt, (1, 1, K, N))
        one = (1, 1, 1, 1)
        d = vkops.QuantizedLinearMatMulDesc(t(adt, (1, 1, M, K)), t(np.float32, one), t(adt, one) if zp else None, b,
                                            t(np.float32, one), t(bdt, one) if zp else None, t(np.float32, one), None,
                                            t(adt, (1, 1, M, N))).validate()
        return _gemms(qmod.plan(d, lim, tuning=tun))[-1].kernel

    # one row: the matrix-vector kernel (any signedness, zero points or not; column-major B on its _bc build);
    # N not in whole 16-column steps goes on to the rules below (the dot kernel, either layout)
    assert kernel(h100, 1) == kernel(h100, 1, U8, U8, zp=True) == "qlmm_gemv_sk" and kernel(h100, 2) != "qlmm_gemv_m2_sk"
    # two rows where B has GEMV_MULTI_MIN_B bytes (4096 x 11008: 45 MB; 4096^2 is 16 MiB: the stream kernel above)
    assert kernel(h100, 2, N=11008) == kernel(h100, 2, U8, U8, zp=True, N=11008) == "qlmm_gemv_m2_sk"
    assert kernel(h100, 3, N=11008).startswith("qlmm_stream")
    assert kernel(h100, 1, cols=True) == "qlmm_gemv_bc_sk"
    assert kernel(h100, 1, N=4100).startswith("qlmm_dot") and kernel(h100, 1, cols=True, N=4100).startswith("qlmm_dot")
    assert kernel(h100.replace(max_workgroup_invocations=128), 1).startswith("qlmm_stream")
    tun = TUNING.replace(GEMV=False)
    for k in (kernel(h100, 1), kernel(h100, 16), kernel(h100, 16, cols=True), kernel(h100, 15, U8, I8, zp=True),
              kernel(h100, 15, I8, U8, zp=True), kernel(h100, 16, I8, U8)):  # B's offset: row sums of A only
        assert k.startswith("qlmm_stream"), k
    # B's column sums: no row left; the 32-row tile, not the dot kernel (DOT_MAX_M_COOPMAT), either layout
    assert kernel(h100, 16, U8, I8, zp=True) == "qlmm_coopmat_zp_sk" and kernel(h100, 16, U8, I8, zp=True, cols=True) == "qlmm_coopmat_zp_bc_sk"
    assert kernel(h100, 16, U8, I8, zp=True, K=4000).startswith("qlmm_coopmat_zp")
    assert kernel(h100, 17).startswith("qlmm_coopmat") and kernel(h100, 16, K=4000).startswith("qlmm_stream")
    # 65..MID_MAX_M rows take MID_CONFIG, whose plain kernel stages B transposed, with split-K (128 x 4096^2: 64
    # tiles) and without (128 x 4096 x 6144: 96), where the large tile makes fewer than LARGE_SPLIT_MIN_TILES;
    # from there (no zero-point sums) the large tile, split below LARGE_MIN_TILES (128 x 8192^2: 64 tiles) and
    # unsplit from there (256 x 8192^2: 128); zero points and the large tile stage B row-major
    assert TUNING.MID_CONFIG in TUNING.BT_CONFIGS and TUNING.LARGE_CONFIG not in TUNING.BT_CONFIGS
    assert kernel(h100, 128, N=6144) == kernel(h100, 256, N=3968) == "qlmm_coopmat_bt"  # 62 large tiles
    assert kernel(h100, 128, K=8192, N=8192) == "qlmm_coopmat_sk" and kernel(h100, 256, K=8192, N=8192) == "qlmm_coopmat"
    assert kernel(h100, 128) == "qlmm_coopmat_bt_sk" and kernel(h100, 2047) == "qlmm_coopmat"
    assert kernel(h100, 2048) == "qlmm_coopmat_bc"  # BC_TRANSPOSE_MIN_M: B transposed first (test_plan.py)
    assert kernel(h100, 128, U8, I8, zp=True) == "qlmm_coopmat_zp_sk"
    assert kernel(h100, 128, U8, I8, zp=True, K=8192, N=8192) == "qlmm_coopmat_zp"  # zero points: MID_CONFIG, unsplit
    tun = TUNING.replace(GEMV=False, BT_CONFIGS=())
    assert kernel(h100, 128) == "qlmm_coopmat_sk" and kernel(h100, 128, N=6144) == "qlmm_coopmat"
    # the large tile's last wave, under half full, split-K (TAIL_SPLIT) without zero-point sums; 4096 rows' last
    # wave of 232 tiles (on the BC build after B's transposed copy) and one matrix's 8 are left whole, as the
    # zero-point kernel
    assert kernel(h100, 1536) == kernel(h100, 1280, K=8192) == "qlmm_coopmat_sk" and kernel(h100, 4096) == "qlmm_coopmat_bc"
    assert kernel(h100, 1536, U8, I8, zp=True) == "qlmm_coopmat_zp" and kernel(h100, 1024) == "qlmm_coopmat"
    # research knob: the tiles of DB_CONFIGS staged in two shared buffers (every kernel of the tile, split or not)
    assert TUNING.DB_CONFIGS == ()
    tun = TUNING.replace(GEMV=False, DB_CONFIGS=(TUNING.LARGE_CONFIG, TUNING.MID_CONFIG))
    assert kernel(h100, 1024) == "qlmm_coopmat_db" and kernel(h100, 1024, U8, I8, zp=True) == "qlmm_coopmat_zp_db"
    assert kernel(h100, 128, K=8192, N=8192) == "qlmm_coopmat_db_sk" and kernel(h100, 128) == "qlmm_coopmat_bt_db_sk"
    tun = TUNING.replace(GEMV=False, STREAM=False)
    cap = TUNING.DOT_COOP_MAX_M
    assert kernel(h100, 16).startswith("qlmm_coopmat_direct") and kernel(h100, cap + 1).startswith("qlmm_coopmat_direct")
    dmax = TUNING.DOT_MAX_M_COOPMAT
    for k in (kernel(h100, cap), kernel(h100, 1), kernel(h100, dmax, cols=True), kernel(h100, dmax, U8, I8, zp=True),
              kernel(h100, dmax, I8, U8, zp=True)):
        assert k.startswith("qlmm_dot"), k
    assert kernel(h100, dmax + 1, cols=True).startswith("qlmm_coopmat") and kernel(h100, dmax + 1, U8, I8, zp=True).startswith("qlmm_coopmat")
    assert kernel(h100, 17).startswith("qlmm_coopmat") and not kernel(h100, 17).startswith("qlmm_coopmat_direct")
    # research knobs: B read directly for 32 rows with a 32-row, one-subgroup-high tile
    tun = TUNING.replace(GEMV=False, STREAM=False, COOPMAT_CONFIG="32x64x256_4x1")
    assert not kernel(h100, 32).startswith("qlmm_coopmat_direct")
    tun = tun.replace(DIRECT_MAX_M=32)
    assert kernel(h100, 32).startswith("qlmm_coopmat_direct") and not kernel(h100, 33).startswith("qlmm_coopmat_direct")
    tun = TUNING.replace(GEMV=False, STREAM=False)
    assert kernel(h100.replace(integer_dot_product=False), 1).startswith("qlmm_coopmat_direct")
    plain = h100.replace(cooperative_matrix=False, coopmat_verified=False, coopmat_split_verified=False)
    assert TUNING.DOT_MAX_M_COOPMAT == 15 < TUNING.DOT_MAX_M == 32
    assert kernel(plain, 16).startswith("qlmm_dot") and kernel(plain, 32).startswith("qlmm_dot")
    assert kernel(plain, 33) == "qlmm"


def test_the_tuning_is_in_the_plan_key(dev, rng):
    """A call under another tuning plans again instead of reusing a stale plan; an equal tuning (another
    object) reuses it; the bench's variants replace exactly QlmmTuning's fields."""
    from vkops.bench.specs import QLinearMatMul as Spec

    a = dev.tensor(rng.integers(-128, 128, (4, 32), dtype=np.int8))
    b = dev.tensor(rng.integers(-128, 128, (32, 16), dtype=np.int8))
    call = lambda **kw: vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 1.0, None, **kw)  # noqa: E731
    want = call().numpy()
    stored = dev._plans.stored
    call()
    call(tuning=QlmmTuning())
    assert dev._plans.stored == stored  # repeated (the same tuning): the plan is reused
    other = TUNING.replace(SPLIT_TARGET_GROUPS=TUNING.SPLIT_TARGET_GROUPS + 1)
    assert np.array_equal(call(tuning=other).numpy(), want) and dev._plans.stored == stored + 1
    with pytest.raises(ValueError, match="no QLinearMatMul knob 'COOPMAT_CONFIGS'"):
        Spec.variant(knobs={"COOPMAT_CONFIGS": {}})
    assert Spec.tuning(config="64x64x64_2x2", split_k=2, knobs={"DOT_UNROLL": 4}) == TUNING.replace(
        COOPMAT_CONFIG="64x64x64_2x2", COOPMAT_SPLIT_K=2, DOT_UNROLL=4)
    with pytest.raises(vkops.ValidationError, match="tuning must be a QlmmTuning"):
        call(tuning={"DOT": False})


def test_no_planning_knob_is_left_in_a_module():
    """Every knob lives in QlmmTuning: none is a module attribute anyone could set."""
    import importlib

    mods = [qmod] + [importlib.import_module(f"vkops.ops.qlmm.{n}")
                     for n in ("desc", "rule", "lowering", "coopmat", "dot", "stream", "gemv", "face", "args")]
    for m in mods:
        left = [k for k in QlmmTuning.knobs() if hasattr(m, k)] + (["KNOBS"] if hasattr(m, "KNOBS") else [])
        assert not left, (m.__name__, left)


@pytest.mark.parametrize("knob, value, rule", [
    ("STREAM_NR", 48, "'auto' or one of (32, 64)"), ("LARGE_CONFIG", "128x128", "a cooperative-matrix tile"),
    ("COOPMAT_CONFIG", "99x1x1_1x1", "a cooperative-matrix tile"), ("BT_CONFIGS", ["128x64x128_4x2"], "a tuple"),
    ("BT_CONFIGS", ("nope",), "a cooperative-matrix tile"), ("DOT", 1, "True or False"), ("DOT_WG", 0, "an int >= 1"),
    ("STREAM_MIN_M", -1, "an int >= 0"), ("SPLIT_MAX", 2.0, "an int >= 1"), ("SPLIT_MAX", 256, "at most 255"),
    ("COOPMAT_SPLIT_K", 256, "'auto' or an int from 1 to 255"), ("COOPMAT_SPLIT_K", 0, "'auto' or an int"),
    ("BC_LARGE_CONFIG", "64x64x64_2x2", "a tile of LARGE_CONFIG's rows and columns"),
    ("BC_TRANSPOSE_TILE", 32, "64 or 128"),
])
def test_tuning_validates_its_fields(knob, value, rule):
    """A bad knob is a ValidationError naming the field, the rule and the value."""
    assert TUNING.validate() is TUNING
    with pytest.raises(vkops.ValidationError) as e:
        TUNING.replace(**{knob: value})
    got = value[0] if value == ("nope",) else value
    assert str(e.value).startswith(f"QlmmTuning.{knob} must be {rule}") and str(e.value).endswith(f"got {got!r}"), e.value


@pytest.mark.parametrize("M, K, whole, S", [
    (1536, 4096, 264, 2),   # 384 large tiles: 264 whole, the last 120 split 2 ways (264 // 120)
    (1280, 8192, 264, 4),   # 320: the last 56 split 4 ways (264 // 56)
    (1280, 4096, 264, 4),   # the same with 64 K chunks: 16 a split, TAIL_MIN_CHUNKS (8) allows it
    (2560, 4096, 528, 2),   # 640: two whole waves, then 112 tiles split
    (1152, 4096, 264, 8),   # 288: a last wave of 24 tiles could split 11 ways but K's 64 chunks hold 8 of 8
    (4096, 4096, 0, 1),     # 1024: a last wave of 232 tiles, over half full: whole
    (1024, 4096, 0, 1),     # 256 tiles: no whole wave
])
@pytest.mark.host_only
def test_tail_split_plan(M, K, whole, S):
    """TAIL_SPLIT: the large tile's whole waves (AUTO_MIN_GROUPS workgroups) run whole and the last wave's tiles, fewer
    than half a wave, split-K on a one-matrix grid of F + (tiles - F) * S workgroups; the push constants' splits word
    carries S | F << 8, the slots and counters are the split tiles' only. Off: the whole grid unsplit. From
    BC_TRANSPOSE_MIN_M rows the same on the BC builds, after B's transposed copy (a scratch of K x N bytes)."""
    N = 4096
    t = lambda dt, shape: vkops.TensorDesc(dt, shape)
    one = (1, 1, 1, 1)
    d = vkops.QuantizedLinearMatMulDesc(t("int8", (1, 1, M, K)), t("float32", one), None, t("int8", (1, 1, K, N)),
                                        t("float32", one), None, t("float32", one), None, t("int8", (1, 1, M, N))).validate()
    h100 = vkops.Limits(name="coopmat", subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32,
                        max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64), shared_memory_bytes=49152,
                        max_storage_buffer_range=2**32 - 1, cooperative_matrix=True, coopmat_verified=True,
                        coopmat_split_verified=True)
    tiles = -(-M // 128) * (N // 128)
    p = qmod.python_plan(d, h100, tuning=TUNING.replace(GEMV=False))
    g = p.dispatches[-1]
    slot = 128 * 128 + 256
    tr = M >= TUNING.BC_TRANSPOSE_MIN_M  # B transposed first, then the BC builds
    kname, copy = ("qlmm_coopmat_bc", [K * N]) if tr else ("qlmm_coopmat", [])
    assert [x.kernel for x in p.dispatches[:-1]] == (["qlmm_transpose"] if tr else [])
    if whole:
        assert g.kernel == kname + "_sk" and g.groups == (whole + (tiles - whole) * S, 1, 1)
        assert g.push[11] == S | whole << 8 and p.note("whole_tiles") == whole and p.note("split_k") == S
        scratch = sorted(b.nbytes for b in p.buffers if b.role == "scratch")
        assert scratch == sorted([4 * (tiles - whole) * S * slot, 4 * (tiles - whole)] + copy), scratch
    else:
        assert g.kernel == kname and g.groups == (N // 128, -(-M // 128), 1) and p.note("whole_tiles") is None
    off = qmod.python_plan(d, h100, tuning=TUNING.replace(GEMV=False, TAIL_SPLIT=False)).dispatches[-1]
    assert off.kernel == kname and off.groups == (N // 128, -(-M // 128), 1) and off.push[11] == 0


@pytest.mark.parametrize("tile", [64, 128])
@pytest.mark.parametrize("K, N, sk", [(16, 16, 16), (64, 64, 64), (48, 80, 96), (80, 48, 48), (128, 192, 208),
                                      (144, 112, 112), (1040, 144, 144)])
def test_b_is_transposed_exactly_for_the_bc_builds(dev, rng, K, N, sk, tile):
    """qlmm_transpose (the large products' row-major B, copied column-major for the BC builds): every byte in
    place, around its tiles of 64 and 128 (K, N of 16 to a tile + 16; k rows wider than N), nothing written past
    N x K."""
    from vkops.ops.qlmm.lowering import lower_transpose
    from vkops.plan import Builder
    from vkops.runtime import Batch
    from vkops.runtime.execute import execute
    from vkops.tensor import TensorDesc as T

    b = Builder("qlmm", dev.limits)
    x = b.input(T("int8", (K, N), (sk, 1)), "b")
    out = b.output(T("int8", (N * K + 16,)), "t")
    if dev.limits.max_workgroup_invocations < 256:  # its workgroups of 256 (the planner asks for them: test_plan.py)
        with pytest.raises(vkops.DeviceLimitError, match="maxComputeWorkGroupInvocations"):
            lower_transpose(b, x, K, N, sk, out=out, tile=tile)
        return
    lower_transpose(b, x, K, N, sk, out=out, tile=tile)
    plan = b.finish()
    assert [d.kernel for d in plan.dispatches] == ["qlmm_transpose"]
    full = rng.integers(-128, 128, (K, sk), dtype=np.int8)
    dx = dev.tensor(full).as_strided((K, N), (sk, 1))
    dout = dev.tensor(np.full(N * K + 16, 77, np.int8))
    batch = Batch(dev)
    execute(plan, batch, [dx], [dout])
    batch.run()
    got = dout.numpy()
    np.testing.assert_array_equal(got[:N * K].reshape(N, K), full[:, :N].T)
    assert (got[N * K:] == 77).all()


def test_every_knob_says_why_and_links_its_measurements():
    """Each QlmmTuning field's comment ends with a link to the entry of docs/tuning/qlmm.md that measured it."""
    import re
    from pathlib import Path

    from vkops.ops.qlmm import tuning

    src = Path(tuning.__file__).read_text()
    doc = (Path(__file__).resolve().parent.parent / "docs" / "tuning" / "qlmm.md").read_text()
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#{2,4} (.+)$", doc, re.M)}
    assert "2026-11-27-session-33-column-major-b-staged-as-it-lies" in anchors
    for name in tuning.QlmmTuning.knobs():
        line = re.search(rf"^    {name}: .+$", src, re.M)
        assert line, name
        link = re.search(r"  # .+ \(#([\w-]+)\)$", line.group(0))
        assert link and link.group(1) in anchors, (name, line.group(0))
