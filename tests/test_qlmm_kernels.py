"""QUANTIZED_LINEAR_MATRIX_MULTIPLY's decoding-sized kernels against the NumPy oracle: the integer-dot-product kernel
and the matrix-vector kernel (one or two rows; row-major and column-major B), their splits, plans and refusals."""
import dataclasses

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import qlmm as qmod
from vkops.tensor import TensorDesc
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm import dot as QD
from vkops.ops.qlmm import gemv as QG
from vkops.ops.qlmm.tuning import DEFAULT as TUNING, QlmmTuning
from qlmm_cases import I8, U8, close, gemms, problem, rand_q, run_both


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
        (g,) = gemms(p)
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
    (g,) = gemms(p)
    tiles = -(-11008 // QG.COLS)
    assert g.kernel == "qlmm_gemv_sk" and g.groups == (tiles * p.note("split_k"), 1, 1)
    # 264 workgroups over 43 tiles hold 6 splits; ranges of whole 256-row steps (768 rows) cover K in 6
    assert TUNING.GEMV_TARGET_GROUPS == 264 and p.note("split_k") == QG.splits(tiles, 4096, 1) == 6
    # two rows of it (B's 45 MB over GEMV_MULTI_MIN_B): the MR = 2 build, the same split
    d2 = dataclasses.replace(d, a=TensorDesc(I8, (1, 1, 2, 4096)), output=TensorDesc(I8, (1, 1, 2, 11008))).validate()
    (g2,) = gemms(qmod.plan(d2, h100))
    assert g2.kernel == "qlmm_gemv_m2_sk" and g2.groups == g.groups
    # 125 tiles (1 x K x 32000): the splits that stay within the target's one wave where they fill 7/8 of it
    # (2: 250 workgroups), not 3; 197 tiles (1 x K x 50304): one split would fill 197 of 264, so 2 (394). K = 2048
    # keeps B within the device's storage buffer range (the rule reads the tiles only).
    for n, groups in ((32000, 250), (50304, 394)):
        dn = dataclasses.replace(d, a=TensorDesc(I8, (1, 1, 1, 2048)), b=TensorDesc(I8, (1, 1, 2048, n)),
                                 output=TensorDesc(I8, (1, 1, 1, n))).validate()
        (g,) = gemms(qmod.plan(dn, h100))
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
