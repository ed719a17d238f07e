"""TOP_K1's row-wise paths: ROWS (one subgroup a sequence) and RSORT (one workgroup radix-sorts a whole row), each
on every key type with forced ties (lowest indices first), and the rules that pick them. Exact against
reference.top_k1 (check); split from test_top_k1.py."""
import numpy as np
import pytest

import vkops
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

from test_top_k1 import DIRS, DTYPES, check, radix_data


# ---- ROWS: one subgroup per sequence ------------------------------------------------------------
def subgroup_path_or_skip(dev, path, n, L, k):
    """The forced ROWS or RSORT path ("rows", "rsort") here; the test is skipped where the device (or the
    profile it is planned within, e.g. CI's minimum leg) lacks subgroup ballot/arithmetic: neither is
    planned there (test_rows_choice and test_rsort_choice check that)."""
    if not dev.limits.has_subgroup(*paths.ROWS_SUBGROUP_OPS):
        pytest.skip(f"no subgroup ballot/arithmetic: {path} is never planned")
    p = {"rows": paths.rows_path, "rsort": paths.rsort_path}[path](dev.limits, n, L, k, force=True)
    assert p is not None, (f"{dev.limits.name} should run {path} on rows of {L} (subgroup ops "
                           f"{dev.limits.subgroup_operations:#x})")
    return p


def rows_or_skip(dev, n, L, k):
    return subgroup_path_or_skip(dev, "rows", n, L, k)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["random", "ties", "const", "special"])
def test_rows_path(dev, rng, dtype, kind):
    """Rows around the subgroup's step (S lanes x 1 or 16-byte vectors), K around the radix stop
    (the candidate cap) and pow2 bounds, row counts around a workgroup's share."""
    S = dev.limits.subgroup_size
    ev = 16 // np.dtype(dtype).itemsize
    p = rows_or_skip(dev, 8, 100, 4)
    for n, L, ks in ((4 * p.G - 1, S - 1, (1, 2, S - 1)), (p.G + 1, S * ev + 1, (1, 3, 17)),
                     (p.G, S * ev, (2, 64, S * ev)), (2 * p.G + 1, 700, (1, 5, 128, 129, 256))):
        x = radix_data(rng, dtype, (n, L), kind)
        for k in sorted({min(k, L, 256) for k in ks}):
            for direction in DIRS:
                check(x, k, -1, direction, force="rows")
    check(radix_data(rng, dtype, (300, 5), kind), 3, 0, "increasing", force="rows")  # strided axis
    # K close to L, up to ROWS' largest
    x = radix_data(rng, dtype, (p.G + 1, TUN.ROWS_MAX_KP + 3), kind)
    for k in (TUN.ROWS_MAX_KP - 1, TUN.ROWS_MAX_KP):
        check(x, k, -1, "decreasing", force="rows")
    check(x[:, :TUN.ROWS_MAX_KP], TUN.ROWS_MAX_KP, -1, "increasing", force="rows")


def test_rows_forced_ties_pick_lowest_indices(dev, rng):
    """All-equal rows: the radix select resolves every digit and takes the first K by position, across
    lanes and vector elements."""
    rows_or_skip(dev, 4, 1000, 200)
    x = np.zeros((5, 1001), np.float32)
    x[:, ::7] = 1.0
    for k in (1, 100, 143, 144, 200):
        v, i = check(x, k, 1, "decreasing", force="rows")
    np.testing.assert_array_equal(i[0, :143], np.arange(0, 1001, 7))
    check(np.full((3, 64), 7, np.int8), 50, 1, "increasing", force="rows")
    # the candidate cap (bench knob): a cap of pow2(K) resolves every digit; a large one sorts by network
    for cap in (32, 512):
        check(x, 30, 1, "decreasing", force="rows", chunks=cap)
        check(x, 140, 1, "increasing", force="rows", chunks=cap)


def test_rows_choice(dev):
    """ROWS for many short rows with pow2(K) <= 256 where the device has subgroup ballot + arithmetic;
    never within the Vulkan 1.1 minimum (which guarantees only basic subgroup operations)."""
    lim = dev.limits
    if lim.has_subgroup(*paths.ROWS_SUBGROUP_OPS):
        assert paths.device_path(lim, TUN.ROWS_MIN_SEQ, 1024, 64).path == "rows"
        assert paths.device_path(lim, TUN.ROWS_MIN_SEQ, TUN.ROWS_MAX_L, 256).path == "rows"
        assert paths.device_path(lim, TUN.ROWS_MIN_SEQ - 1, 1024, 64).path != "rows"
        assert paths.device_path(lim, TUN.ROWS_MIN_SEQ, TUN.ROWS_MAX_L + 1, 64).path != "rows"
        assert paths.device_path(lim, TUN.ROWS_MIN_SEQ, 1024, 257).path != "rows"
        # many rows longer than ROWS_RADIX_MIN_L with keys wider than 8 bits: radix select
        assert paths.device_path(lim, TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, TUN.ROWS_MAX_L, 64).path != "rows"
    minimum = lim.within("minimum")
    assert not minimum.has_subgroup("ballot")
    assert paths.device_path(minimum, TUN.ROWS_MIN_SEQ, 1024, 64).path != "rows"
    with pytest.raises(vkops.ValidationError, match="rows path needs subgroup ballot"):
        paths.device_path(minimum, 8, 1024, 64, force="rows")


# ---- RSORT: one workgroup radix-sorts a whole row ---------------------------------------------------
def rsort_or_skip(dev, n, L, k):
    return subgroup_path_or_skip(dev, "rsort", n, L, k)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["random", "ties", "const", "special"])
def test_rsort_path(dev, rng, dtype, kind):
    """Rows around the workgroup's items (WG x E - 1, WG x E, WG x E + 1 for E = 1, 2 and the most a lane
    holds), K = 1, in between and L, both directions; a strided axis."""
    p = rsort_or_skip(dev, 4, 64, 64)
    wg = p.workgroup
    for L in (wg - 1, wg, wg + 1, 2 * wg, paths.RSORT_MAX_E * wg - 1, paths.RSORT_MAX_E * wg):
        q = rsort_or_skip(dev, 3, L, L)
        assert q.workgroup == wg and q.B >= L
        x = radix_data(rng, dtype, (3, L), kind)
        for k in sorted({1, L // 2 + 1, L}):
            for direction in DIRS:
                check(x, k, -1, direction, force="rsort")
    check(radix_data(rng, dtype, (300, 5), kind), 300, 0, "increasing", force="rsort")  # strided axis


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_rsort_long_rows(dev, rng, dtype):
    """The longest rows RSORT takes (RSORT_MAX_L, workgroups of 256) and, where shared memory holds their
    counters (an H100; not lavapipe), rows of 4096 when forced (workgroups of 512): indices past 2047 in
    the exchanged words' 12 index bits; ties."""
    for L in (TUN.RSORT_MAX_L - 1, TUN.RSORT_MAX_L, 4096):
        p = paths.rsort_path(dev.limits, 2, L, L, force=True)
        if p is None:  # counters that do not fit this device's shared memory (small subgroups)
            assert L > 1024 or not dev.limits.has_subgroup(*paths.ROWS_SUBGROUP_OPS)
            continue
        for kind in ("random", "ties"):
            x = radix_data(rng, dtype, (2, L), kind)
            for k in sorted({300, L}):
                check(x, k, -1, "decreasing", force="rsort")
        check(x, L, -1, "increasing", force="rsort")


def test_rsort_ties_keep_ascending_indices(dev, rng):
    """Equal keys across lanes, items and subgroups come out by ascending index in both directions; a
    pass whose digit every item shares is skipped (constant rows, the zero high bytes of narrow keys)."""
    L = 500  # 8 items a lane, several subgroups, on every device that runs RSORT
    rsort_or_skip(dev, 2, L, L)
    x = np.zeros((2, L), np.float32)
    x[:, ::7] = 1.0
    x[1, 3::5] = -0.0
    for direction in DIRS:
        v, i = check(x, L, 1, direction, force="rsort")
    v, i = check(x, L, 1, "decreasing", force="rsort")
    np.testing.assert_array_equal(i[0, :len(range(0, L, 7))], np.arange(0, L, 7))
    check(np.full((3, L), 7, np.int8), L, 1, "increasing", force="rsort")
    check(np.full((3, L), np.nan, np.float16), 10, 1, "decreasing", force="rsort")
    # the middle axis of a 3-D tensor (sequences strided by 3, outputs interleaved with other sequences')
    x3 = np.round(rng.standard_normal((2, L, 3)) * 3).astype(np.float16)
    for k in (L, L // 2 + 1):
        check(x3, k, 1, "decreasing", force="rsort")
        check(x3.astype(np.uint8), k, 1, "increasing", force="rsort")


def test_rsort_choice(dev):
    """RSORT for rows of RSORT_MIN_L..RSORT_MAX_L (at least RSORT_MIN_SEQ of them) with pow2(K) > 256 where
    the device has the ROWS modules' subgroup operations (one dispatch of an rsort module);
    another path outside those, and within the Vulkan 1.1 minimum."""
    lim = dev.limits
    n, L = TUN.RSORT_MIN_SEQ, TUN.RSORT_MAX_L
    if lim.has_subgroup(*paths.ROWS_SUBGROUP_OPS):
        # the longest rows whose counters fit (lavapipe's 4-lane subgroups: rows of 1024, not 2048)
        L = next((L for L in (TUN.RSORT_MAX_L, 1024) if paths.rsort_path(lim, n, L, 1024)), TUN.RSORT_MAX_L)
        p = paths.rsort_path(lim, n, L, 1024)
        if p is not None:
            assert paths.device_path(lim, n, L, 1024).path == "rsort"
            assert paths.device_path(lim, n, TUN.RSORT_MIN_L, 257).path == "rsort"
            assert paths.device_path(lim, n, L, 256).path != "rsort"
            assert paths.device_path(lim, n, TUN.RSORT_MAX_L + 1, 1024).path != "rsort"
            assert paths.device_path(lim, n - 1, L, 1024).path != "rsort"
            assert paths.device_path(lim, n, TUN.RSORT_MIN_L - 1, 512).path != "rsort"
            x = vkops.TensorDesc(vkops.DataType.FLOAT32, (n, L))
            vd, idd = tk.output_descs(x, 1, 1024)
            plan = tk.plan(tk.TopK1Desc(x, vd, idd, 1, 1024).validate(), lim)
            (step,) = plan.dispatches
            assert step.kernel == "top_k1_rsort_f32"
            assert step.spec[2] == p.rs_sh == paths.rsort_shared_words(p.workgroup, lim.min_subgroup_size)
        elif lim.min_subgroup_size >= 8:
            pytest.fail(f"{lim.name}: RSORT should fit rows of {L} with subgroups of >= 8")
    minimum = lim.within("minimum")
    assert paths.device_path(minimum, n, L, 1024).path != "rsort"
    with pytest.raises(vkops.ValidationError, match="rsort path needs subgroup ballot"):
        paths.device_path(minimum, 8, 1024, 1024, force="rsort")
