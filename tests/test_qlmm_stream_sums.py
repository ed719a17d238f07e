"""The B-streaming kernel's split-K with the splits' tiles added into int32 sums in L2 (QlmmTuning.STREAM_SUMS:
kernels/qlmm/qlmm_stream.comp with SPLIT_K 2, the `_sums` variants; the device's zeroed counters buffer holds a
counter per tile, then the sums; the last split to arrive takes them out and requantizes, leaving them zero).

Planning (pure, any host): the knob off changes nothing; on, the `_sums` variant, split toward STREAM_SUMS_TARGET
workgroups, the counters sized for the sums, no scratch. Device (where cooperative matrices are offered: not
lavapipe): exact against the unsplit kernel (the same int32 sums, the same float32 epilogue) and the oracle,
M = 1..16 (17 refused), N over partial 32- and 64-column tiles (N in whole 16s: the kernel's rule), uneven and
empty last K ranges, uint8/int8 with zero points and per-row/column scales, the row of ones; ties on .5 and
saturation exact with power-of-two scales; calls repeated, other ops sharing the counters between them, and
several in one submission (the counters are left zero)."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.errors import DeviceLimitError
from vkops.ops import qlmm
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm import stream as QS
from vkops.ops.qlmm.tuning import DEFAULT
from vkops.tensor import TensorDesc
from plan_grid import H100

I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)
SUMS = DEFAULT.replace(STREAM_SUMS=True)


def forced(S, nr=None, wg=256, pf="auto"):
    """Tuning that splits every stream product into S ranges (fewer where K has fewer steps a subgroup)."""
    return SUMS.replace(STREAM_SUMS_TARGET=1 << 20, STREAM_SPLIT_MAX=S, STREAM_SUMS_MIN_STEPS=1, STREAM_WG=wg,
                        STREAM_NR=nr or "auto", STREAM_PF=pf)


def unsplit(nr=None, wg=256, pf="auto"):
    return DEFAULT.replace(STREAM_TARGET_GROUPS=1, STREAM_NR=nr or "auto", STREAM_WG=wg, STREAM_PF=pf)


# ---------------------------------------------------------------- planning (pure)
def desc(M, K, N, a="int8", b="int8", zp=False, b_batch=1):
    one = (1, 1, 1, 1)
    return qlmm.QuantizedLinearMatMulDesc(
        TensorDesc(a, (1, b_batch, M, K)), TensorDesc("float32", one), TensorDesc(a, one) if zp else None,
        TensorDesc(b, (1, b_batch, K, N)), TensorDesc("float32", one), TensorDesc(b, one) if zp else None,
        TensorDesc("float32", one), None, TensorDesc("int8", (1, b_batch, M, N))).validate()


def planned(d, tuning, lim=H100):
    p = qlmm.python_plan(d, lim, tuning=tuning)
    last = p.dispatches[-1]
    return p, last


@pytest.mark.host_only
def test_off_by_default_and_plans_unchanged():
    assert DEFAULT.STREAM_SUMS is False and DEFAULT.STREAM_PF == "auto"
    for shape in ((16, 4096, 4096), (2, 4096, 4096), (16, 4096, 1024), (16, 4096, 11008), (4, 4096, 32000)):
        p, last = planned(desc(*shape), DEFAULT)
        assert last.kernel.startswith("qlmm_stream") and not last.kernel.endswith("_sums"), (shape, last.kernel)
        assert p == qlmm.python_plan(desc(*shape), H100, tuning=DEFAULT.replace(STREAM_SUMS_TARGET=7, STREAM_SUMS_MIN_STEPS=3))


@pytest.mark.host_only
def test_sums_plans():
    for target, shape, nr, S in ((512, (16, 4096, 4096), 32, 4), (1024, (16, 4096, 4096), 32, 8),
                                 (256, (2, 4096, 4096), 32, 2), (512, (16, 4096, 11008), 64, 3),
                                 (512, (4, 4096, 32000), 64, 2), (512, (16, 8192, 8192), 64, 4),
                                 (256, (4, 4096, 32000), 64, 1)):
        M, K, N = shape
        p, last = planned(desc(*shape), SUMS.replace(STREAM_SUMS_TARGET=target))
        tiles = -(-N // nr)
        want = f"qlmm_stream_m16n{nr}p{QS.TILES[nr]}" + ("_sums" if S > 1 else "")
        assert (last.kernel, last.groups, p.note("split_k")) == (want, (tiles * S, 1, 1), S), (target, shape)
        assert last.push[11] == (S if S > 1 else 0)
        counters = [b for b in p.buffers if b.name == "counters"]
        scratch = [b for b in p.buffers if b.role == "scratch" and b.name != "counters"]
        assert not scratch
        assert [b.nbytes for b in counters] == ([4 * tiles * (1 + 16 * nr)] if S > 1 else [])
    # each subgroup keeps STREAM_SUMS_MIN_STEPS steps: 64 steps of 64 rows, 8 subgroups
    _, last = planned(desc(16, 4096, 4096), SUMS.replace(STREAM_SUMS_TARGET=1 << 20, STREAM_SUMS_MIN_STEPS=2))
    assert last.groups == (128 * 4, 1, 1)
    # 4 steps in flight for 32 columns (a research variant), with and without sums
    _, last = planned(desc(16, 4096, 4096), SUMS.replace(STREAM_PF=4))
    assert last.kernel == "qlmm_stream_m16n32p4_sums"
    _, last = planned(desc(16, 4096, 4096), DEFAULT.replace(STREAM_PF=4))
    assert last.kernel == "qlmm_stream_m16n32p4"
    _, last = planned(desc(16, 4096, 11008), DEFAULT.replace(STREAM_PF=4))
    assert last.kernel == "qlmm_stream_m16n64p4"
    with pytest.raises(vkops.ValidationError, match="STREAM_PF"):
        DEFAULT.replace(STREAM_PF=3)
    # split-K variants' self-check failed: no auto splits, as without sums
    _, last = planned(desc(16, 4096, 4096), SUMS, H100.replace(coopmat_split_verified=False))
    assert last.kernel == "qlmm_stream_m16n32p2"


# ---------------------------------------------------------------- the device
@pytest.fixture
def cdev(dev):
    if not QC.coopmat_supported(dev):
        pytest.skip(f"{dev.limits.name} offers no cooperative matrices: the stream kernel cannot run")
    return dev


def operands(rng, M, K, N, adt, bdt, zps, scales, b_batch=1):
    """Random operands (zps: "none", "tensor", "axis"; scales: "tensor", "axis"); output int8 / uint8 by adt."""
    def q(shape, dt):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    a, b = q((1, b_batch, M, K), adt), q((1, b_batch, K, N), bdt)
    row, col, one = (1, 1, M, 1), (1, 1, 1, N), (1, 1, 1, 1)
    sa = (rng.uniform(0.5, 2, row if scales == "axis" else one) * 0.02).astype(np.float32)
    sb = (rng.uniform(0.5, 2, col if scales == "axis" else one) * 0.02).astype(np.float32)
    za = zb = zo = None
    if zps != "none":
        za, zb = q(row if zps == "axis" else one, adt), q(col if zps == "axis" else one, bdt)
        zo = rng.integers(-60, 60, size=row if zps == "axis" else one).astype(np.int8)
    # the output scale keeps most outputs inside the range (per row with per-row scales): errors show
    acc = np.matmul(a.astype(np.int64) - (0 if za is None else za.astype(np.int64)),
                    b.astype(np.int64) - (0 if zb is None else zb.astype(np.int64)))
    real = np.abs(acc * sa.astype(np.float64) * sb)
    peak = real.max(axis=(0, 1, 3), keepdims=True) if scales == "axis" else real.max().reshape(one)
    so = (np.maximum(peak, 1e-3) / 90).astype(np.float32)
    return a, sa, za, b, sb, zb, so, zo


def last_plan(dev):
    return next(reversed(dev._plans._entries.values()))


def run(dev, args, tuning, b_cols=False):
    a, sa, za, b, sb, zb, so, zo = args
    if b_cols:  # B column-major: an N x K weight viewed transposed (k stride 1)
        bt = np.ascontiguousarray(np.swapaxes(b, 2, 3))
        K, N = b.shape[2:]
        b = dev.tensor(bt).as_strided(b.shape, (bt.shape[1] * N * K if bt.shape[1] > 1 else 0, N * K, 1, K))
    y = vkops.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo, kernel="stream", tuning=tuning)
    return y.numpy() if hasattr(y, "numpy") else y


def check(dev, rng, M, K, N, S, nr=None, adt=I8, bdt=I8, zps="none", scales="tensor", wg=256, b_cols=False,
          b_batch=1, pf="auto"):
    """The sums kernel in S splits: the kernel planned, exact against the unsplit kernel, within the oracle's
    rounding (float64 there)."""
    args = operands(rng, M, K, N, adt, bdt, zps, scales, b_batch)
    got = run(dev, args, forced(S, nr, wg, pf), b_cols)
    kname = last_plan(dev).dispatches[-1].kernel
    steps = -(-K // QS.step_k(nr or 32))
    s_eff = max(1, min(S, steps // (wg // 32)))
    assert kname.endswith("_sums") == (s_eff > 1), (kname, S, s_eff)
    base = run(dev, args, unsplit(nr, wg, pf), b_cols)
    assert not last_plan(dev).dispatches[-1].kernel.endswith(("_sums", "_sk"))
    np.testing.assert_array_equal(got, base, err_msg=f"M={M} K={K} N={N} S={S} nr={nr} {adt}x{bdt} {zps}")
    want = reference.quantized_linear_matmul(*args)
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert d.max() <= 1 and (d == 0).mean() >= 0.99, (M, K, N, S, d.max(), (d == 0).mean())
    info = np.iinfo(got.dtype)
    assert ((got > info.min) & (got < info.max)).mean() > 0.5  # mostly unsaturated: the sums show
    return got


@pytest.mark.parametrize("M", list(range(1, 17)))
def test_every_row_count(cdev, rng, M):
    # 15 rows + the row of ones (uint8 with zero points) fill 16; 16 rows int8
    for nr in (32, 64):
        check(cdev, rng, M, 4112, 144, 5, nr)  # 65 / 129 steps: uneven last ranges
    if M <= 15:
        check(cdev, rng, M, 1040, 80, 3, 32, U8, U8, "axis", "axis")
        check(cdev, rng, M, 1040, 80, 3, 64, U8, I8, "tensor", "tensor")


def test_refused_shapes(cdev, rng):
    args = operands(rng, 4, 256, 40, I8, I8, "none", "tensor")  # N not in whole 16s: the kernel's rule
    with pytest.raises(vkops.ValidationError, match="multiples of 16"):
        run(cdev, args, forced(2))
    args = operands(rng, 17, 256, 32, I8, I8, "none", "tensor")
    with pytest.raises(DeviceLimitError, match="above"):
        run(cdev, args, forced(2))
    args = operands(rng, 16, 256, 32, U8, U8, "tensor", "tensor")  # 16 rows and the row of ones
    with pytest.raises(DeviceLimitError, match="above"):
        run(cdev, args, forced(2))


@pytest.mark.parametrize("N", [16, 32, 48, 64, 80, 96, 112, 128])
def test_columns_around_the_tile_widths(cdev, rng, N):
    for nr in (32, 64):
        check(cdev, rng, 15, 2064, N, 4, nr, I8, U8, "axis", "axis")  # 15 rows + the row of ones
        check(cdev, rng, 9, 2064, N, 7, nr, U8, I8, "tensor", "axis", b_cols=True)


def test_k_ranges_uneven_and_empty(cdev, rng):
    # 2 subgroups a workgroup: up to steps / 2 splits; K = 16 (one partial step) .. uneven last ranges,
    # more splits than ranges (empty last splits: per = ceil(steps / S))
    for K, S in ((16, 2), (48, 2), (80, 2), (400, 3), (1040, 5), (1040, 9), (4112, 16), (4112, 13), (272, 4)):
        for nr in (32, 64):
            check(cdev, rng, 5, K, 48, S, nr, U8, U8, "axis", "tensor", wg=64)
    check(cdev, rng, 12, 4112, 96, 8, 32, wg=128)
    check(cdev, rng, 12, 4112, 96, 8, 32, pf=4)  # 4 steps in flight


def test_batches_and_column_major_b(cdev, rng):
    check(cdev, rng, 7, 1040, 80, 3, 32, U8, I8, "axis", "axis", b_batch=3)  # 3 GEMMs: workgroups z
    check(cdev, rng, 7, 1040, 80, 3, 64, U8, I8, "axis", "axis", b_batch=2, b_cols=True)


@pytest.mark.parametrize("odt", [I8, U8])
def test_ties_and_saturation_exact(cdev, rng, odt):
    """Power-of-two scales: acc / 2 and acc / 4 exact in float32 and float64, so round half to even and the
    clamp are compared exactly; some outputs saturate, many are ties."""
    M, K, N = 15, 1040, 96
    for adt, bdt, zps in ((I8, I8, False), (U8, U8, True), (U8, I8, True)):
        lo_a = -6 if adt == I8 else 120
        a = rng.integers(lo_a, lo_a + 13, (1, 1, M, K)).astype(adt)
        lo_b = -6 if bdt == I8 else 122
        b = rng.integers(lo_b, lo_b + 13, (1, 1, K, N)).astype(bdt)
        za = np.array(126 if zps else 0, adt).reshape(1, 1, 1, 1) if zps else None
        zb = np.array(128, bdt).reshape(1, 1, 1, 1) if zps and bdt == U8 else None
        zo = np.array(-3 if odt == I8 else 131, odt).reshape(1, 1, 1, 1)
        one = np.float32(1).reshape(1, 1, 1, 1)
        for so in (2.0, 4.0):  # acc / 2, acc / 4: ties where acc is odd (2 mod 4)
            args = (a, one, za, b, one, zb, np.float32(so).reshape(1, 1, 1, 1), zo)
            y = vkops.quantized_linear_matmul(*args, kernel="stream", tuning=forced(6)).numpy()
            assert last_plan(cdev).dispatches[-1].kernel.endswith("_sums")
            want = reference.quantized_linear_matmul(*args, output_dtype=odt)
            np.testing.assert_array_equal(y, want)
            info = np.iinfo(odt)
            assert ((y == info.min) | (y == info.max)).mean() > 0.05 and ((y > info.min) & (y < info.max)).mean() > 0.3
        acc = (a[0, 0].astype(np.int64) - (0 if za is None else int(za.item()))) @ \
            (b[0, 0].astype(np.int64) - (0 if zb is None else int(zb.item())))
        assert (acc % 2 == 1).mean() > 0.3  # ties at so = 2


def test_counters_left_zero_repeated_shared_and_batched(cdev, rng):
    """Every call leaves its counters and sums zero: the same call twice, other ops (a gemv split, a
    sums product of another shape) between, and several in one submission agree with one call alone."""
    t = forced(4)
    p1 = operands(rng, 15, 2064, 160, I8, I8, "axis", "axis")
    p2 = operands(rng, 3, 4112, 96, U8, U8, "tensor", "axis")
    y1 = run(cdev, p1, t)
    assert last_plan(cdev).dispatches[-1].kernel.endswith("_sums")
    np.testing.assert_array_equal(run(cdev, p1, t), y1)
    y2 = run(cdev, p2, forced(7, 64))
    g = operands(rng, 1, 4096, 512, I8, I8, "none", "tensor")  # M = 1: the gemv kernel, its split sums
    yg = vkops.quantized_linear_matmul(*g).numpy()
    np.testing.assert_array_equal(run(cdev, p1, t), y1)
    np.testing.assert_array_equal(run(cdev, p2, forced(7, 64)), y2)
    da = [[None if x is None else vkops.to_device(x, cdev) for x in p] for p in (p1, p2, g)]
    with cdev.batch():
        outs = [vkops.quantized_linear_matmul(*da[0], kernel="stream", tuning=t),
                vkops.quantized_linear_matmul(*da[1], kernel="stream", tuning=forced(7, 64)),
                vkops.quantized_linear_matmul(*da[2]),
                vkops.quantized_linear_matmul(*da[0], kernel="stream", tuning=t),
                vkops.quantized_linear_matmul(*da[0], kernel="stream", tuning=forced(3, 64))]
    for o, w in zip(outs, (y1, y2, yg, y1, y1)):
        np.testing.assert_array_equal(o.numpy(), w)
