"""TOP_K1's GRADIX path with the rank sort for few rows (TopK1Tuning.GRADIX_RANK_MAX_SEQ; kernel top_k1_gradix_rank_*:
the K survivors ranked over (row, i-tile, j-tile) workgroups into zeroed rank counters, the last workgroup of each
i-tile writes its survivors out): exact against reference.top_k1, bit for bit, for every dtype, both directions, K
at and around the tiles (small tiles here: TJ = 64, i-tiles of 2 GRADIX_WG), K = 1 and 2048-4096, forced ties,
constant rows, NaN/inf/-0.0, strided and non-last axes, 1 to GRADIX_RANK_MAX_SEQ rows, repeated calls and the
device's counters left zero (read back after each call), with and without GRADIX_FILTER."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.errors import ValidationError
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT

import top_k1_plan_grid as grid

# 8-bit digits (four passes, the GRADIX modules without _d11): the default's 11-bit ones are tests/test_top_k1_gdigit.py's
TUN = DEFAULT.replace(GRADIX_DIGIT_BITS=8, GRADIX_BRACKET=False)  # digit passes (bracket: test_top_k1_gbracket)

DIRS = ["decreasing", "increasing"]
CHUNK = 1024
SEQ = 4  # GRADIX_RANK_MAX_SEQ in these tests
TJ = 64
TR = TUN.replace(GRADIX_MIN_CHUNK=CHUNK, GRADIX_RANK_MAX_SEQ=SEQ, GRADIX_RANK_TJ=TJ)
TRF = TR.replace(GRADIX_FILTER=True)
DTYPES = ["float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8"]


def plan_of(lim, shape, dtype, k, axis=-1, tuning=TR):
    x = vkops.TensorDesc(dtype, shape)
    a = axis % len(shape)
    d = tk.TopK1Desc(x, *tk.output_descs(x, a, k), a, k).validate()
    return tk.python_plan(d, lim, force="gradix", tuning=tuning)


def counters_zero(dev):
    c = dev._counters
    assert c is None or not c.numpy().any(), np.flatnonzero(c.numpy())[:16]


def check(dev, x, k, axis=-1, direction="decreasing", tuning=TR):
    """GRADIX with the rank sort against the oracle, bit for bit, and the device's counters zero after it
    (skipped where GRADIX's sort does not fit: force="gradix" refuses it)."""
    if paths.gradix_shared_bytes(paths._pow2(k)) > dev.shared_memory_bytes:
        return
    x = np.asarray(x)
    kernels = [d.kernel for d in plan_of(dev.limits, x.shape, x.dtype, k, axis, tuning).dispatches]
    n_seq = x.size // x.shape[axis]
    assert kernels[-1].startswith("top_k1_gradix_rank_") == (n_seq <= tuning.GRADIX_RANK_MAX_SEQ), kernels
    v, i = tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning)
    rv, ri = reference.top_k1(x, k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == x.dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0
    counters_zero(dev)


def data(rng, dtype, shape):
    if dtype.startswith("float"):
        x = rng.standard_normal(shape).astype(dtype)
        x.reshape(-1, shape[-1])[:, ::5] = np.round(x.reshape(-1, shape[-1])[:, ::5], 1)  # ties among large values
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
    x.reshape(-1, shape[-1])[0, ::3] = x.reshape(-1, shape[-1])[0, 7]  # one value a third of the row
    return x


# ---- the plan (host only) ------------------------------------------------------------------------------------
@pytest.mark.host_only
def test_the_knob_plans_the_rank_kernel():
    h = grid.H100
    for n, want in ((1, True), (SEQ, True), (SEQ + 1, False)):
        p = plan_of(h, (n, 151936), "float32", 4096,
                    tuning=TUN.replace(GRADIX_RANK_MAX_SEQ=SEQ, GRADIX_RANK_E=2, GRADIX_RANK_TJ=256))
        last = p.dispatches[-1]  # past the rank sort's rows, the sort in GRADIX_SORT_PARTS parts (test_top_k1_gpsort)
        assert last.kernel == ("top_k1_gradix_rank_f32" if want else "top_k1_gradix_pmerge_f32"), (n, last.kernel)
        if want:  # i-tiles of 2 x 256, j-tiles of 256: 8 x 16 workgroups a row
            assert last.spec == (256, 256, 2) and last.groups[0] * last.groups[1] * last.groups[2] >= n * 128
            one = TUN.replace(GRADIX_SORT_PARTS=1)  # the passes and compaction as the one-workgroup sort has them
            assert p.dispatches[:-1] == plan_of(h, (n, 151936), "float32", 4096, tuning=one).dispatches[:-1]
    # the default tuning: the rank kernel on up to GRADIX_RANK_MAX_SEQ (2) rows, i-tiles of 256, j-tiles of 128
    assert (TUN.GRADIX_RANK_MAX_SEQ, TUN.GRADIX_RANK_E, TUN.GRADIX_RANK_TJ) == (2, 1, 128)
    for n, L, k, want in ((1, 151936, 4096, True), (2, 151936, 2048, True), (3, 131072, 4096, False),
                          (16, 131072, 2048, False), (64, 131072, 4096, False)):
        x = vkops.TensorDesc("float32", (n, L))
        d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
        last = tk.python_plan(d, h).dispatches[-1]
        assert ("gradix_rank" in last.kernel) == want, (n, L, k)
        if want:
            assert last.spec == (256, 128, 1) and last.groups[0] * last.groups[1] * last.groups[2] == n * (k // 256) * (k // 128)
    # with filtering: the filter's kernels, then the rank kernel
    p = plan_of(h, (2, 131072), "float16", 3000, tuning=TUN.replace(GRADIX_RANK_MAX_SEQ=SEQ, GRADIX_FILTER=True))
    assert [d.kernel for d in p.dispatches] == ["top_k1_gradix_hist_f16", "top_k1_gradix_fscan_f16",
                                                "top_k1_gradix_fcollect_f16", "top_k1_gradix_rank_f16"]
    for bad, msg in (({"GRADIX_RANK_MAX_SEQ": -1}, "GRADIX_RANK_MAX_SEQ must be an int >= 0"),
                     ({"GRADIX_RANK_E": 5}, "GRADIX_RANK_E must be 1 to 4"),
                     ({"GRADIX_RANK_E": 0}, "GRADIX_RANK_E must be an int >= 1"),
                     ({"GRADIX_RANK_TJ": 2048}, "GRADIX_RANK_TJ must be <= 1024")):
        with pytest.raises(ValidationError, match=msg):
            TUN.replace(**bad)


# ---- dtypes x directions x K around the tiles ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_dtypes_directions_k_around_the_tiles(dev, rng, dtype, direction):
    ti = paths.gradix_path(1, 8 * CHUNK, 1, shared=dev.shared_memory_bytes, workgroup=dev.limits.workgroup(512),
                           target_groups=64, t=TR).workgroup * TR.GRADIX_RANK_E
    x = data(rng, dtype, (2, 6 * CHUNK + 5))
    for k in sorted({1, 2, TJ - 1, TJ, TJ + 1, ti - 1, ti, ti + 1, 2049}):
        check(dev, x, k, direction=direction)


@pytest.mark.parametrize("e, tj", [(1, 256), (2, 256), (4, 128), (3, 1024)])
def test_other_tiles_and_large_k(dev, rng, e, tj):
    tun = TR.replace(GRADIX_RANK_E=e, GRADIX_RANK_TJ=tj)
    x = data(rng, "float32", (1, 5 * CHUNK + 3))
    for k in (2048, 2049, 4095, 4096):
        check(dev, x, k, tuning=tun)


def test_forced_ties_and_constant_rows(dev, rng):
    # few distinct values: the survivors' ranks are decided by the indices
    x = rng.integers(0, 4, (3, 5 * CHUNK)).astype(np.float32)
    x[2] = 7  # a constant row
    for k in (TJ - 1, TJ, TJ + 1, 513, 2048, 4096):
        for direction in DIRS:
            check(dev, x, k, direction=direction)
            check(dev, x.astype(np.float16), k, direction=direction, tuning=TRF)
            check(dev, x.astype(np.uint8), k, direction=direction)


def test_nan_inf_signed_zero(dev, rng):
    for dtype in ("float32", "float16"):
        x = rng.standard_normal((2, 4 * CHUNK + 9)).astype(dtype)
        at = rng.choice(x.shape[1], 600, replace=False)
        x[0, at[:100]] = np.nan
        x[0, at[100:200]] = np.inf
        x[0, at[200:300]] = -np.inf
        x[0, at[300:400]] = -0.0
        x[0, at[400:500]] = 0.0
        x[1, :] = -0.0
        x[1, at[:50]] = 0.0
        x[1, at[50:70]] = np.nan
        for k in (1, 101, 257, 2049):
            for direction in DIRS:
                check(dev, x, k, direction=direction)
                check(dev, x, k, direction=direction, tuning=TRF)


# ---- axes, strides, rows, filtering, repeated calls ----------------------------------------------------------
def test_non_last_axis_and_strided_views(dev, rng):
    x = rng.integers(0, 30, (5 * CHUNK + 7, 3)).astype(np.float32)
    for direction in DIRS:
        check(dev, x, 2049, axis=0, direction=direction)
    y = rng.standard_normal((2, 2, 4 * CHUNK)).astype(np.float16)
    check(dev, y, 2048, axis=2)
    check(dev, y[:, :, ::2], 2000, axis=2)  # a strided axis (no 16-byte loads)
    check(dev, y[::2, 1, :], 3000, axis=1)  # strided rows
    check(dev, np.ascontiguousarray(np.moveaxis(y, 2, 1)), 2048, axis=1)


def test_one_to_max_rows_and_past_it(dev, rng):
    x = data(rng, "float32", (SEQ + 1, 3 * CHUNK + 1))
    for n in range(1, SEQ + 2):  # SEQ + 1 rows: the sort again
        for k in (300, 1100):
            check(dev, x[:n], k)
            check(dev, x[:n], k, direction="increasing", tuning=TRF)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint16"])
def test_with_filtering(dev, rng, dtype):
    x = data(rng, dtype, (3, 6 * CHUNK + 5))
    for k in (TJ + 1, 511, 512, 513, 2048, 4096):
        for direction in DIRS:
            check(dev, x, k, direction=direction, tuning=TRF)


def test_repeated_calls_leave_the_counters_zero(dev, rng):
    # rank and arrival counters in the device's zeroed counters: each call leaves them zero, or the next call (the
    # same plan, other data) or another operator's goes wrong
    x = rng.standard_normal((3, 5 * CHUNK)).astype(np.float32)
    xt = dev.tensor(x)
    # K past a power of two, as large as GRADIX's sort fits on this device (2049: 32 KiB; 1025 at Vulkan's 16 KiB)
    k = 2049 if paths.gradix_shared_bytes(paths._pow2(2049)) <= dev.shared_memory_bytes else 1025
    for tun in (TR, TRF):
        for _ in range(3):
            v, i = (t.numpy() for t in tk._top_k(xt, k, force="gradix", tuning=tun))
            rv, ri = reference.top_k1(x, k, -1)
            np.testing.assert_array_equal(i, ri)
            np.testing.assert_array_equal(v, rv)
            counters_zero(dev)
        # another operator's counters after it: the filter path's merge of several chunks
        y = rng.standard_normal((2, 40000)).astype(np.float32)
        v, i = tk._top_k(y, 50, force="filter", chunks=4)
        rv, ri = reference.top_k1(y, 50, -1)
        np.testing.assert_array_equal(i, ri)
        counters_zero(dev)
        for kk in (k, k + 1):  # another plan in between, then the same again
            check(dev, np.round(x, 1), kk, tuning=tun)
