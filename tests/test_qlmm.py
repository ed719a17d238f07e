"""QUANTIZED_LINEAR_MATRIX_MULTIPLY against the NumPy oracle (int64 accumulation, float64 scaling,
np.rint, clip): |difference| <= 1 everywhere and exact on >= 99% of outputs. The suite runs the
portable kernel (lavapipe offers no cooperative matrices); the coopmat test runs where offered. The dot and
matrix-vector kernels: test_qlmm_kernels.py; the rule for small M and the tuning's fields: test_qlmm_tuning.py."""

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import qlmm as qmod
from vkops.tensor import TensorDesc
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm import stream as QS
from vkops.ops.qlmm.tuning import DEFAULT as TUNING
from qlmm_cases import COMBOS, I8, U8, close, gemms, problem, rand_q, run_both



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
    (g,) = gemms(p)
    assert len(p.dispatches) == 1 and g.groups[2] == 1 and push(g)["M"] == 256 and p.note("folded") == 8
    # per-row parameters: tiled once each (three SLICE1 copies), still one GEMM
    p = _plan((2, 4, 32, 256), (1, 1, 256, 64), per_row=True)
    (g,) = gemms(p)
    assert g.groups[2] == 1 and push(g)["M"] == 256 and len(p.dispatches) == 1 + 4
    # a broadcast b (batch stride 0) is shared too
    p = _plan((1, 8, 32, 256), (1, 8, 256, 64), b_strides=(0, 0, 64, 1))
    assert gemms(p)[0].groups[2] == 1
    # an unshared b, or a's batches not evenly spaced: one GEMM dispatch over an 8-deep grid, as before
    for p in (_plan((1, 8, 32, 256), (1, 8, 256, 64)),
              _plan((1, 8, 32, 256), (1, 1, 256, 64), a_strides=(0, 256 * 40, 256, 1))):
        (g,) = gemms(p)
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
