"""TOP_K1's GRADIX path with the survivors' sort in parts (TopK1Tuning.GRADIX_SORT_PARTS = P; kernels
top_k1_gradix_psort[_sg]_* and top_k1_gradix_pmerge_*: P workgroups a row each sort pow2(K) / P survivors in place,
then one thread a survivor ranks it across the runs): the plan under the knob (parts of >= GRADIX_SORT_MIN_RUN, none
where the rank sort takes the rows, shared memory by the part), and exact against reference.top_k1, bit for bit, for
P = 2, 4, 8 at K on and past the pow2 boundaries, ties straddling the parts, NaN/inf/-0.0, float16/float32/int32, both
directions, more rows than GRADIX_RANK_MAX_SEQ, K past one workgroup's sort, and the device's counters left zero."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.errors import ValidationError
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT

from plan_grid import LIMITS

# 8-bit digits (four passes, the GRADIX modules without _d11): the default's 11-bit ones are tests/test_top_k1_gdigit.py's
TUN = DEFAULT.replace(GRADIX_DIGIT_BITS=8, GRADIX_BRACKET=False)  # digit passes (bracket: test_top_k1_gbracket)

DIRS = ["decreasing", "increasing"]
CHUNK = 1024  # GRADIX_MIN_CHUNK here: rows of a few thousand run several chunks
PARTS = (2, 4, 8)
ROWS = 3  # > GRADIX_RANK_MAX_SEQ (2): the sort, not the rank sort
KS = (129, 300, 1000, 2048, 2049, 3000, 4095, 4096)  # from the smallest K that has two parts of 128


def tun(parts, **kw):
    """P parts at any pow2(K) and row count (the default rule: from GRADIX_SORT_PARTS_MIN_KP, up to _MAX_SEQ rows)."""
    return TUN.replace(**dict(dict(GRADIX_MIN_CHUNK=CHUNK, GRADIX_SORT_PARTS=parts, GRADIX_SORT_PARTS_MIN_KP=1,
                                   GRADIX_SORT_PARTS_MAX_SEQ=1 << 20), **kw))


def want_parts(n_seq, k, parts):
    """The parts the plan should take: parts of >= 128 entries, none on <= GRADIX_RANK_MAX_SEQ rows."""
    kp = 1 << max(0, k - 1).bit_length()
    return 1 if n_seq <= TUN.GRADIX_RANK_MAX_SEQ else max(1, min(parts, kp // 128))


def plan_of(lim, shape, dtype, k, tuning, axis=-1):
    x = vkops.TensorDesc(dtype, shape)
    a = axis % len(shape)
    return tk.python_plan(tk.TopK1Desc(x, *tk.output_descs(x, a, k), a, k).validate(), lim, force="gradix",
                          tuning=tuning)


def counters_zero(dev):
    c = dev._counters
    assert c is None or not c.numpy().any(), np.flatnonzero(c.numpy())[:16]


def check(dev, x, k, parts, direction="decreasing", axis=-1):
    """GRADIX with its sort in `parts` against the oracle, bit for bit, the plan's last two dispatches the parted sort,
    the device's counters zero after it; where a part's sort does not fit shared memory, the refusal instead."""
    x = np.asarray(x)
    t = tun(parts)
    n_seq = x.size // x.shape[axis]
    p = want_parts(n_seq, k, parts)
    kp = 1 << max(0, k - 1).bit_length()
    if 8 * kp // p > dev.shared_memory_bytes:  # the minimum-limits leg (16 KiB): 4096 / 2 at most
        with pytest.raises(ValidationError, match=r"gradix path needs pow2\(K\)"):
            tk._top_k(x, k, axis, direction, force="gradix", tuning=t)
        return
    kernels = [d.kernel for d in plan_of(dev.limits, x.shape, x.dtype, k, t, axis).dispatches]
    if p > 1:
        assert "_gradix_psort_" in kernels[-2] and kernels[-1].startswith("top_k1_gradix_pmerge_"), (k, parts, kernels)
    else:
        assert "_gradix_sort_" in kernels[-1] or "_gradix_rank_" in kernels[-1], (k, parts, kernels)
    v, i = tk._top_k(x, k, axis, direction, force="gradix", tuning=t)
    rv, ri = reference.top_k1(x, k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == x.dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0
    counters_zero(dev)


def data(rng, dtype, shape):
    """Values with many ties among the large ones (so equal keys fall in several parts of a row's survivors)."""
    if dtype.startswith("float"):
        x = rng.standard_normal(shape).astype(dtype)
        x[..., ::3] = np.round(x[..., ::3], 1)
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
    x[..., ::3] = rng.integers(0, 40, x[..., ::3].shape) * (int(info.max) // 64)  # 40 values, a third of the row
    return x


# ---- the plan (host only) ------------------------------------------------------------------------------------
@pytest.mark.host_only
def test_the_knob_plans_the_parted_sort():
    h = LIMITS["h100"]
    # the default: 2 parts from pow2(K) = 4096 on 3-64 rows; one workgroup's sort below, and on more rows
    assert (TUN.GRADIX_SORT_PARTS, TUN.GRADIX_SORT_PARTS_MIN_KP, TUN.GRADIX_SORT_PARTS_MAX_SEQ) == (2, 4096, 64)
    for n, k, want in ((64, 4096, 2), (64, 4000, 2), (3, 4096, 2), (65, 4096, 1), (64, 2048, 1), (2, 4096, 1)):
        d = plan_of(h, (n, 131072), "float32", k, TUN).dispatches
        assert (d[-1].kernel == "top_k1_gradix_pmerge_f32") == (want == 2), (n, k)
    last = plan_of(h, (64, 131072), "float32", 4096, TUN.replace(GRADIX_SORT_PARTS=1)).dispatches[-1]
    assert last.kernel == "top_k1_gradix_sort_sg_f32" and last.spec == (1024, 4096)
    for n, k, parts, want in ((64, 4096, 2, 2), (64, 4096, 8, 8), (64, 4096, 64, 32), (3, 300, 8, 4), (3, 200, 2, 2),
                              (3, 128, 2, 1), (2, 4096, 8, 1), (1, 4096, 2, 1)):
        d = plan_of(h, (n, 131072), "float32", k, tun(parts, GRADIX_MIN_CHUNK=TUN.GRADIX_MIN_CHUNK)).dispatches
        kp = 1 << (k - 1).bit_length()
        if want == 1:
            assert "gradix_psort" not in d[-2].kernel and "gradix_pmerge" not in d[-1].kernel, (n, k, parts)
            continue
        run = kp // want
        assert (d[-2].kernel, d[-2].spec) == ("top_k1_gradix_psort_sg_f32", (max(1, run // 4), run)), (n, k, parts)
        assert d[-2].groups[0] == n * want and d[-2].writes == (0, 1)  # work, ctr
        assert (d[-1].kernel, d[-1].spec, d[-1].groups[0]) == ("top_k1_gradix_pmerge_f32", (256, run), n * -(-k // 256))
        one = TUN.replace(GRADIX_SORT_PARTS=1)
        assert d[:-2] == plan_of(h, (n, 131072), "float32", k, one).dispatches[:-1]  # the passes as they were
    # shuffle=False (no subgroup shuffles): the plain module, the same workgroup
    d = tk.python_plan(tk.TopK1Desc(vkops.TensorDesc("float16", (4, 65536)), *tk.output_descs(
        vkops.TensorDesc("float16", (4, 65536)), 1, 2049), 1, 2049).validate(), h, force="gradix", shuffle=False,
        tuning=tun(4, GRADIX_MIN_CHUNK=TUN.GRADIX_MIN_CHUNK)).dispatches
    assert (d[-2].kernel, d[-2].spec) == ("top_k1_gradix_psort_f16", (256, 1024))
    # shared memory by the part: K = 4096 refused on Vulkan's minimum 16 KiB in one workgroup, planned in 2 parts
    lo = LIMITS["minimum"]
    with pytest.raises(ValidationError, match=r"needs pow2\(K\) \(key, index\) pairs .*: 32768 bytes for K=4096"):
        plan_of(lo, (4, 65536), "float32", 4096, TUN.replace(GRADIX_SORT_PARTS=1))
    with pytest.raises(ValidationError, match=r"needs pow2\(K\) / 2 \(its sort in 2 parts\) .*: 32768 bytes for K=8192"):
        plan_of(lo, (4, 65536), "float32", 8192, TUN.replace(GRADIX_SORT_PARTS=2))
    d = plan_of(lo, (4, 65536), "float32", 4096, TUN.replace(GRADIX_SORT_PARTS=2)).dispatches
    assert d[-2].spec[1] == 2048 and d[-1].kernel == "top_k1_gradix_pmerge_f32"
    for bad, msg in (({"GRADIX_SORT_PARTS": 3}, "GRADIX_SORT_PARTS must be a power of two"),
                     ({"GRADIX_SORT_PARTS": 0}, "GRADIX_SORT_PARTS must be an int >= 1"),
                     ({"GRADIX_SORT_PARTS": 128}, "GRADIX_SORT_PARTS must be <= 64"),
                     ({"GRADIX_SORT_PARTS": True}, "GRADIX_SORT_PARTS must be an int >= 1"),
                     ({"GRADIX_SORT_PARTS_MIN_KP": 3000}, "GRADIX_SORT_PARTS_MIN_KP must be a power of two"),
                     ({"GRADIX_SORT_PARTS_MAX_SEQ": 0}, "GRADIX_SORT_PARTS_MAX_SEQ must be an int >= 1"),
                     ({"GRADIX_MANY_TARGET_GROUPS": 0}, "GRADIX_MANY_TARGET_GROUPS must be an int >= 1")):
        with pytest.raises(ValidationError, match=msg):
            TUN.replace(**bad)


# ---- dtypes x directions x K x parts -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("direction", DIRS)
def test_dtypes_directions_k_parts(dev, rng, dtype, direction):
    x = data(rng, dtype, (ROWS, 5 * CHUNK + 7))
    for parts in PARTS:
        for k in KS:
            check(dev, x, k, parts, direction)


def test_ties_straddling_the_parts(dev, rng):
    # few distinct values: the order of the survivors, and so of the runs' merge, is decided by the indices
    x = rng.integers(0, 3, (4, 5 * CHUNK)).astype(np.float32)
    x[2] = 7  # a constant row
    x[3, ::2] = 5  # half the row one value
    for parts in PARTS:
        for k in (129, 257, 2049, 4096):
            for direction in DIRS:
                check(dev, x, k, parts, direction)
                check(dev, x.astype(np.float16), k, parts, direction)
                check(dev, x.astype(np.int32), k, parts, direction)


def test_nan_inf_signed_zero(dev, rng):
    for dtype in ("float32", "float16"):
        x = rng.standard_normal((3, 4 * CHUNK + 9)).astype(dtype)
        at = rng.choice(x.shape[1], 1500, replace=False)
        x[0, at[:300]] = np.nan
        x[0, at[300:600]] = np.inf
        x[0, at[600:900]] = -np.inf
        x[0, at[900:1200]] = -0.0
        x[0, at[1200:]] = 0.0
        x[1, :] = -0.0
        x[1, at[:500]] = 0.0
        x[1, at[500:520]] = np.nan
        x[2, at[:1000]] = -np.inf
        for parts in PARTS:
            for k in (300, 2049, 4096):
                for direction in DIRS:
                    check(dev, x, k, parts, direction)


# ---- rows, axes, K past one workgroup's sort, repeated calls -------------------------------------------------
def test_rows_axes_and_the_rank_sort_beside_it(dev, rng):
    x = data(rng, "float32", (5, 3 * CHUNK + 1))
    for n in (1, 2, 3, 5):  # 1 and 2 rows: the rank sort takes them (no parts)
        check(dev, x[:n], 2049, 4)
    y = np.round(rng.standard_normal((4 * CHUNK + 3, 3)), 1).astype(np.float32)
    check(dev, y, 2049, 2, axis=0)  # a non-last axis
    check(dev, y, 1000, 8, "increasing", axis=0)


def test_k_past_one_workgroups_sort(dev, rng):
    # pow2(K) = 8192: 64 KiB in one workgroup, which no test device has; a part's 32 or 16 KiB
    x = data(rng, "float32", (3, 9000))
    for parts in (2, 4):
        for k in (5000, 8192):
            check(dev, x, k, parts)


def test_repeated_calls_leave_the_counters_zero(dev, rng):
    x = np.round(rng.standard_normal((3, 5 * CHUNK)), 1).astype(np.float32)
    xt = dev.tensor(x)
    k = 2049 if 8 * 4096 // 2 <= dev.shared_memory_bytes else 1025
    for parts in (2, 8):
        for _ in range(3):
            v, i = (t.numpy() for t in tk._top_k(xt, k, force="gradix", tuning=tun(parts)))
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
