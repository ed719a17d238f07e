"""TOP_K1's GRADIX path (kernels/top_k1/gradix*.comp; off by default, taken by force="gradix" or
TopK1Tuning.GRADIX_MIN_KP): exact against reference.top_k1 for several dtypes, both directions, K on the pow2
boundaries up to 4096, rows around chunk boundaries, constant rows, ties straddling the threshold, NaN/inf/-0.0,
non-last and strided axes, repeated calls (the counters it must leave zero). Chunks are made short with
GRADIX_MIN_CHUNK so that small rows run many workgroups a row; sizes stay small (lavapipe). The survivors' sort
takes the register networks (top_k1_gradix_sort_sg_*) where the device has subgroup shuffles, so these tests
carry no subgroup_free marker (CI's subgroup legs run them at other subgroup sizes), but for shuffle=False."""
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
CHUNK = 1024  # GRADIX_MIN_CHUNK in these tests: rows of a few thousand run several chunks
T1K = TUN.replace(GRADIX_MIN_CHUNK=CHUNK)


SHARED = {}  # the test device's shared memory (_device below)


@pytest.fixture(autouse=True)
def _device(request):
    if "dev" in request.fixturenames:
        SHARED["bytes"] = request.getfixturevalue("dev").shared_memory_bytes
    yield


def check(x, k, axis=-1, direction="decreasing", tuning=T1K, **kw):
    """GRADIX's result against the oracle, bit for bit; where its sort does not fit the device's shared memory
    (K > 2048 under Vulkan's minimum 16 KiB, in one workgroup), the refusal instead."""
    xa = np.asarray(x)
    kp = paths._pow2(k)  # a part's sort must fit (GRADIX_SORT_PARTS parts from pow2(K) = 4096 on 3-64 rows)
    if paths.gradix_shared_bytes(kp, paths.gradix_sort_parts(xa.size // xa.shape[axis], kp, tuning)) > SHARED["bytes"]:
        with pytest.raises(ValidationError, match="gradix path needs pow2"):
            tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning, **kw)
        return None
    v, i = tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning, **kw)
    rv, ri = reference.top_k1(np.asarray(x), k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == np.asarray(x).dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0
    return v, i


def gradix_plan(dev, x, k, axis=-1, tuning=T1K, **kw):
    d = tk.TopK1Desc(vkops.TensorDesc(x.dtype, x.shape), *tk.output_descs(vkops.TensorDesc(x.dtype, x.shape),
                                                                          axis % x.ndim, k), axis % x.ndim, k)
    return tk.python_plan(d.validate(), dev.limits, force="gradix", tuning=tuning, **kw)


def sort_fits(dev, k):
    return paths.gradix_shared_bytes(paths._pow2(k)) <= dev.shared_memory_bytes


def ints(rng, dtype, shape, lo, hi):
    return rng.integers(lo, hi, shape).astype(dtype)


# ---- dtypes x directions x K on the pow2 boundaries ------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8"])
@pytest.mark.parametrize("direction", DIRS)
def test_dtypes_directions_large_k(dev, rng, dtype, direction):
    # rows of 8 chunks + 1 element (the last chunk holds one), 2 rows; values with ties (16-bit floats and
    # bytes collide anyway; int32 from a small range)
    L = 8 * CHUNK + 1
    if dtype == "float32":
        x = rng.standard_normal((2, L)).astype(np.float32)
        x[:, ::7] = np.round(x[:, ::7], 1)  # some exact ties among the large values too
    elif dtype == "float16":
        x = rng.standard_normal((2, L)).astype(np.float16)
    elif dtype == "int32":
        x = ints(rng, np.int32, (2, L), -3000, 3000)
    else:
        x = ints(rng, np.uint8, (2, L), 0, 256)
    for k in (2048, 2049, 4095, 4096):
        check(x, k, direction=direction)


@pytest.mark.parametrize("dtype", ["int16", "int8", "uint32", "uint16"])
def test_other_dtypes(dev, rng, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, (2, 3 * CHUNK + 5), dtype=dtype)
    x[0, :10] = info.min
    x[1, -10:] = info.max
    for direction in DIRS:
        check(x, 2049, direction=direction)


@pytest.mark.parametrize("k", [1, 7, 300, 1000])
def test_small_k(dev, rng, k):
    x = rng.standard_normal((3, 5 * CHUNK - 3)).astype(np.float32)
    x[1] = np.round(x[1], 1)
    check(x, k)
    check(x.astype(np.float16), k, direction="increasing")


@pytest.mark.parametrize("shuffle", [pytest.param(False, marks=pytest.mark.subgroup_free), True])
def test_sort_networks_shared_and_registers(dev, rng, shuffle):
    # gradix_sort and gradix_sort_sg (register networks where the device has subgroup shuffles)
    if shuffle and not dev.limits.has_subgroup(*paths.SHUF_SUBGROUP_OPS):
        pytest.skip("no subgroup shuffles")
    x = rng.integers(0, 500, (2, 5 * CHUNK + 1)).astype(np.float32)
    for k in (100, 2049, 4096):
        check(x, k, shuffle=shuffle)
        check(x.astype(np.float16), k, direction="increasing", shuffle=shuffle)


# ---- chunk boundaries -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_seq", [1, 3])
def test_rows_around_chunk_boundaries(dev, rng, n_seq):
    c = 2048
    tun = TUN.replace(GRADIX_MIN_CHUNK=c)
    for L in (c - 1, c, c + 1, 3 * c - 1, 3 * c, 3 * c + 1):
        x = ints(rng, np.float32, (n_seq, L), 0, 40)  # many ties of every value, the K-th key's among them
        p = gradix_plan(dev, x, 1000, tuning=tun)
        assert p.dispatches[0].kernel == "top_k1_gradix_hist_f32"
        for k in (1000, min(L, 2049), min(L, 4096)):
            for direction in DIRS:
                check(x, k, direction=direction, tuning=tun)


def test_forced_chunks_and_vector_tails(dev, rng):
    # chunks forced (tests and sweeps): whole 16-element steps, a short last chunk; fp16 rows with L % 8 != 0
    # (no 16-byte loads) and == 0 (16-byte loads)
    for L in (6001, 6000):
        x = rng.standard_normal((2, L)).astype(np.float16)
        for chunks in (1, 2, 7, 40):
            check(x, 2049, chunks=chunks)
    # long chunks: several blocks of slots a chunk (a block: GRADIX_WG x 4 loads), ties cut in a late block
    x = rng.integers(0, 200, (2, 40000)).astype(np.float32)
    for chunks in (1, 3):
        check(x, 3000, chunks=chunks)
        check(x[:, :39999], 3000, chunks=chunks)  # rows of L % 4 != 0: one element a load


# ---- ties ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8"])
def test_constant_rows(dev, dtype):
    x = np.full((3, 4 * CHUNK + 100), 3, dtype)
    for direction in DIRS:
        for k in (2048, 4096):
            if sort_fits(dev, k):
                check(x, k, direction=direction)


def test_negative_zero_ties_with_zero(dev, rng):
    x = np.where(rng.random((2, 5 * CHUNK)) < 0.5, np.float32(0.0), np.float32(-0.0)).astype(np.float32)
    x[0, 17] = 1.0
    for direction in DIRS:
        check(x, 3000, direction=direction)  # values come back with their own sign bits
        check(x.astype(np.float16), 3000, direction=direction)


@pytest.mark.parametrize("direction", DIRS)
def test_duplicates_straddling_the_threshold(dev, rng, direction):
    # the K-th value repeated across every chunk, with the cut in the middle chunk: ties must go to the
    # smallest indices over all chunks (reference.top_k1)
    L = 10 * CHUNK
    x = np.zeros((2, L), np.float32)
    x[:, :] = rng.integers(-50, 50, (2, L))
    x[0, rng.choice(L, 1500, replace=False)] = 100  # 1500 keys above, then a tie value...
    tie = rng.choice(np.nonzero(x[0] != 100)[0], 2000, replace=False)
    x[0, tie] = 60
    if direction == "increasing":  # the same ranks from the other end
        x = -x
    k = 2600  # 1500 above, 1100 of the 2000 ties (more of them in the second row's random values)
    check(x, k, direction=direction)
    check(x.astype(np.float16), k, direction=direction)
    check(x.astype(np.int32), k, direction=direction)


def test_ties_in_one_block_and_early_stop(dev, rng):
    # every tie of the K-th key in one chunk, clustered (the cut chunk's prefix sum over a dense block) and
    # sparse (blocks without ties skipped)
    L = 6 * CHUNK
    x = rng.standard_normal((2, L)).astype(np.float32) - 10
    x[0, :2000] = 5 + (np.arange(2000) % 3 == 0)  # 667 ones above, ties of 5 dense in chunks 0-1
    x[1, ::3] = 5  # 2048 ties spread over the whole row
    for k in (700, 2048, 2049, 2100):
        check(x, k)


# ---- the cut chunk's ties (gradix_collect.comp): <= GRADIX_TIE_CAP ranked from a shared list, more by the block scan ----
TIE_CAP = paths.GRADIX_TIE_CAP


def collect_kernel(dev, x, k, **kw):
    """The compaction module a check() of x runs and its chunk_len."""
    p = gradix_plan(dev, x, k, **kw)
    d = p.dispatches[-2]
    return d.kernel, d.push[10]


def tie_rows(rng, dtype, direction, cl, cuts, own, r, spread=40, dense=()):
    """4 chunks of cl a row; the K-th value 5 with `own` ties in chunk cuts[row] (contiguous on the rows in
    `dense`, else scattered) and `spread` in every other chunk, the cut at the r-th tie of cuts[row]; keys above
    (9) fill K on every row, the rest below (0..4). INCREASING: 14 - x, the same ranks from the other end."""
    k = spread * 3 + r + 100
    x = rng.integers(0, 5, (len(cuts), 4 * cl))
    for row, cut in enumerate(cuts):
        for c in range(4):
            n = own if c == cut else spread
            at = np.arange(n) if row in dense and c == cut else rng.choice(cl, n, replace=False)
            x[row, c * cl + at] = 5
        free = np.nonzero(x[row] != 5)[0]
        x[row, rng.choice(free, k - spread * cut - r, replace=False)] = 9
    if direction == "increasing":
        x = 14 - x
    return x.astype(dtype), k


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_cut_chunk_ties_around_the_list_cap(dev, rng, dtype, direction):
    # TIE_CAP - 1 and TIE_CAP ties in the cut chunk: the shared list; TIE_CAP + 1: the block scan. The cut chunk
    # first, middle or last (row 0; row 1 another, its ties contiguous), r = 1, half, all but one of them
    cl = 1024
    combos = [(own, cut) for own in (TIE_CAP - 1, TIE_CAP, TIE_CAP + 1) for cut in (0, 1, 3)]
    for j, (own, cut) in enumerate(combos):
        r = (1, own // 2, own - 1)[j % 3]
        x, k = tie_rows(rng, dtype, direction, cl, (cut, (cut + 2) % 4), own, r, dense=(1,))
        kernel, chunk_len = collect_kernel(dev, x, k, chunks=4)
        assert kernel.startswith("top_k1_gradix_collect_") and chunk_len == cl, (kernel, chunk_len)
        check(x, k, direction=direction, chunks=4)


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8"])
def test_constant_rows_k_at_chunk_boundaries(dev, rng, dtype, direction):
    # every key a tie: a chunk's ties are the whole chunk, below, at and above TIE_CAP; K one short of, at and one
    # past a chunk's end (the cut at its last tie, on the boundary, at the next chunk's first)
    for cl in (TIE_CAP - 16, TIE_CAP, TIE_CAP + 16):
        x = np.full((2, 4 * cl - 5), 7, dtype)  # the last chunk 5 short
        x[1, :] = 2
        x[1, cl // 2:] = 7  # row 1: the ties start mid-chunk
        assert collect_kernel(dev, x, cl, chunks=4)[1] == cl
        for k in (cl - 1, cl, cl + 1, 2 * cl - 1, 2 * cl + 1):
            check(x, k, direction=direction, chunks=4)


# ---- NaN, inf, -0.0 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("direction", DIRS)
def test_nan_inf_negzero(dev, rng, dtype, direction):
    L = 6 * CHUNK + 3
    x = rng.standard_normal((2, L)).astype(dtype)
    at = rng.choice(L, 600, replace=False)
    x[0, at[:200]] = np.nan
    x[0, at[200:300]] = np.inf
    x[0, at[300:400]] = -np.inf
    x[0, at[400:500]] = -0.0
    x[0, at[500:]] = 0.0
    nan2 = np.frombuffer(np.array([0x7FC00123 if dtype == "float32" else 0x7E01],
                                  np.uint32 if dtype == "float32" else np.uint16).tobytes(), dtype)[0]
    x[1, at[:3000 % L]] = nan2  # another NaN payload: values keep their bits
    for k in (2049, 4096):
        check(x, k, direction=direction)


# ---- axes, strides, repeated calls ---------------------------------------------------------------------------
def test_non_last_axis_and_strided_views(dev, rng):
    x = rng.integers(0, 30, (5 * CHUNK + 7, 3)).astype(np.float32)
    for direction in DIRS:
        check(x, 2049, axis=0, direction=direction)
    y = rng.standard_normal((3, 2, 4 * CHUNK)).astype(np.float16)
    check(y, 2048, axis=2)
    check(y[:, :, ::2], 2000, axis=2)  # a strided axis (no 16-byte loads)
    check(y[::2, 1, :], 3000, axis=1)  # strided rows
    check(np.ascontiguousarray(np.moveaxis(y, 2, 1)), 2048, axis=1)


def test_repeated_calls_leave_the_counters_zero(dev, rng):
    # the histograms, arrival and slot counters live in the plan's zeroed counters: every call must leave
    # them zero, or the next call (same plan, other data) goes wrong
    x = rng.standard_normal((3, 5 * CHUNK)).astype(np.float32)
    xt = dev.tensor(x)
    k = 2049 if sort_fits(dev, 2049) else 2000
    for _ in range(3):
        v, i = (t.numpy() for t in tk._top_k(xt, k, force="gradix", tuning=T1K))
        rv, ri = reference.top_k1(x, k, -1)
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_array_equal(v, rv)
    for kk in (k, k + 1):  # another plan in between, then the same again
        check(np.round(x, 1), kk)


# ---- the plan and the rule (host only) ------------------------------------------------------------------------
def _plan(lim, n, L, k, dtype="float32", tuning=TUN, **kw):
    x = vkops.TensorDesc(dtype, (n, L))
    d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
    return tk.python_plan(d, lim, tuning=tuning, **kw)


@pytest.mark.host_only
def test_the_rule_and_the_knob():
    """The default rule (measured on an H200, docs/tuning/top_k1.md#gradix; its K thresholds on an H100 in session 29):
    pow2(K) >= 2048 on few long rows, K >= GRADIX_MIN_K (8/16-bit keys) on any rows of >= GRADIX_MIN_L, K >=
    GRADIX_LONG_MIN_K (32-bit keys) on any rows of >= GRADIX_LONG_MIN_L, rows radix select cannot take (else the
    global sort); GRADIX_MIN_KP = 0 turns it off. (With GRADIX_BRACKET, also 32-bit keys from GRADIX_MIN_K on <= 64 rows
    of >= GRADIX_MIN_L: test_top_k1_gbracket.py.)"""
    h = grid.H100
    rule = {(1, 151936, 4096): True, (1, 131072, 1500): True, (16, 131072, 2048): True, (17, 131072, 2048): False,
            (16, 65535, 2048): False, (16, 65536, 2048): True, (64, 131072, 4000): False, (64, 131072, 4001): True,
            (64, 65535, 4096): False, (64, 32000, 3000): False, (64, 262145, 2500): True, (64, 262144, 2500): False,
            (64, 32000, 4096): False, (8, 32000, 1500): False, (1, 151936, 1024): False, (64, 16383, 4096): False,
            (64, 16384, 4096): False, (64, 131072, 2048): False}
    for (n, L, k), want in rule.items():
        assert (paths.choose(h, n, L, k, tuning=TUN).path == "gradix") == want, (n, L, k)
        assert (_plan(h, n, L, k).note("path") == "gradix") == want, (n, L, k)
        off = TUN.replace(GRADIX_MIN_KP=0)
        assert paths.choose(h, n, L, k, tuning=off).path != "gradix"
        assert _plan(h, n, L, k, tuning=off).note("path") != "gradix"
    # any K with pow2(K) >= GRADIX_MIN_KP, any rows (32-bit keys: by the long rows' K); one sort a row
    on = TUN.replace(GRADIX_MIN_K=1, GRADIX_LONG_MIN_K=1, GRADIX_LONG_MIN_L=1, GRADIX_SORT_PARTS=1)
    assert paths.choose(h, 1, 151936, 4096, tuning=on).path == "gradix"
    assert paths.choose(h, 64, 131072, 2049, tuning=on).path == "gradix"
    assert paths.choose(h, 64, 131072, 1024, tuning=on).path != "gradix"  # pow2(K) below GRADIX_MIN_KP
    assert paths.choose(h, 64, 8192, 4096, tuning=on).path != "gradix"  # rows under GRADIX_MIN_L
    # dispatches: one digit pass a key byte, the compaction, the sort (on 3 rows: 1-2 rows rank, test_top_k1_grank.py)
    assert TUN.GRADIX_RANK_MAX_SEQ < 3
    for dtype, s, passes in (("float32", "f32", 4), ("float16", "f16", 2), ("uint8", "u8", 1)):
        p = _plan(h, 3, 151936, 4096, dtype, tuning=on)
        assert p.note("path") == "gradix"
        assert [x.kernel for x in p.dispatches] == ([f"top_k1_gradix_hist_{s}"] * passes +
                                                    [f"top_k1_gradix_collect_{s}", f"top_k1_gradix_sort_sg_{s}"])
        assert p.dispatches[-1].spec == (1024, 4096) and p.dispatches[0].spec == (256,)  # 4 entries a thread
        assert p.dispatches[0].groups[0] == 3 * 38  # chunks of 4096
        plain = _plan(h, 3, 151936, 4096, dtype, tuning=on, shuffle=False).dispatches
        assert plain[-1].kernel == f"top_k1_gradix_sort_{s}" and plain[-1].spec == (512, 4096)
        assert plain[-2].kernel == f"top_k1_gradix_collect_{s}"
    assert _plan(h, 3, 151936, 2048, tuning=on).dispatches[-1].spec == (512, 2048)
    assert [d.kernel for d in _plan(grid.LIMITS["minimum"], 3, 151936, 1024, force="gradix").dispatches[-2:]] == \
        ["top_k1_gradix_collect_f32", "top_k1_gradix_sort_f32"]  # no subgroup shuffles
    with pytest.raises(ValidationError, match="GRADIX_MIN_KP must be an int >= 0"):
        TUN.replace(GRADIX_MIN_KP=-1)


@pytest.mark.host_only
def test_refused_where_the_sort_does_not_fit():
    assert paths.gradix_path(1, 151936, 4096, shared=16384, workgroup=128, target_groups=256) is None
    assert paths.gradix_path(1, 151936, 2048, shared=16384, workgroup=128, target_groups=256).B == 2048
    with pytest.raises(ValidationError, match="gradix path needs pow2"):
        paths.choose_path(1, 151936, 4096, 16384, force="gradix")
    on = TUN.replace(GRADIX_MIN_KP=2048)
    assert paths.choose_path(1, 151936, 4096, 16384, tuning=on).path != "gradix"  # the rule falls through
    lim = grid.LIMITS["minimum"]
    if lim.shared_memory_bytes < 32768:
        with pytest.raises(ValidationError, match="gradix path needs pow2"):
            _plan(lim, 1, 151936, 4096, force="gradix")


def test_tiny_rows_and_k_equal_to_length(dev, rng):
    # one chunk shorter than a load step, K = L (a full stable sort), and 8-bit keys (one digit pass)
    for shape, k in (((1, 1), 1), ((3, 5), 5), ((2, 17), 3), ((4, 33), 33)):
        for dtype in ("float32", "int8"):
            x = (rng.standard_normal(shape) * 50).astype(dtype)
            for direction in DIRS:
                check(x, k, direction=direction)


# ---- the digit pass's whole blocks (gradix_hist.comp: GRADIX_LOADS uvec4 loads a thread, no bounds checks) ----
# A block is 4 x GRADIX_WG x (16 bytes / element size) elements: chunks of that many and more (forced chunks,
# rows of whole 16-byte loads) take the unchecked loops, each pass one of three: the first (gtop), a prefix tested
# on the raw bits (gradix_raw), or exact keys where the prefix's range holds NaN's or zero's key or a NaN's or
# -0.0's raw image. Chunks end inside a block (the checked loop takes the rest).
def block_elems(dtype):
    return 4 * TUN.GRADIX_WG * 16 // np.dtype(dtype).itemsize


def check_blocks(dev, x, k, direction, chunks=(1, 2)):
    if not sort_fits(dev, k):  # Vulkan's minimum 16 KiB: K > 2048 is refused, and check() checks the refusal
        assert check(x, k, direction=direction) is None
        return
    for c in chunks:
        p = gradix_plan(dev, x, k, chunks=c)
        chunk_len, vec = p.dispatches[0].push[10], p.dispatches[0].push[11]
        assert vec == 1 and chunk_len > block_elems(x.dtype)  # whole blocks, then a partial one
        assert check(x, k, direction=direction, chunks=c) is not None


def f32(bits):
    return np.array(bits, np.uint32).view(np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint16", "int8", "uint8"])
@pytest.mark.parametrize("direction", DIRS)
def test_whole_blocks_raw_prefix(dev, rng, dtype, direction):
    # ordinary values: every later pass tests its prefix on the raw bits (floats of both signs)
    L = 2 * block_elems(dtype) + 48
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal((2, L)).astype(dtype)
        x[1] -= 3  # the K-th value negative (DECREASING) on row 1
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, int(info.max) + 1, (2, L), dtype=dtype)
    for k in (1, 300, 2049):
        check_blocks(dev, x, k, direction)


def special_rows(rng, dtype, direction, L):
    """Rows whose GRADIX prefixes hold keys a raw-bits test would get wrong, as (rows, Ks) cases: the K-th key +inf
    (DECREASING) or -inf beside NaNs of small payloads of both signs (their raw images lie just above +inf's key
    and just below -inf's); the K-th key NaN's (all but 2000 values NaNs, payloads and signs mixed); the K-th key
    zero's (+0.0 and -0.0, every other value on the far side of zero) or, on row 1, one of the smallest denormals
    on that side (DECREASING: negative ones, whose keys lie next to -0.0's raw image)."""
    ut = np.uint32 if dtype == "float32" else np.uint16
    sign, inf = (0x80000000, 0x7F800000) if dtype == "float32" else (0x8000, 0x7C00)

    def vals(b):
        return np.array(b, np.uint64).astype(ut).view(dtype)

    up = direction == "decreasing"
    base = rng.standard_normal((2, L)).astype(dtype)
    at = rng.permutation(L)
    x = base.copy()
    x[:, at[:500]] = np.inf if up else -np.inf
    x[0, at[500:600]] = vals([inf + 1 + j % 7 for j in range(100)])
    x[0, at[600:700]] = vals([sign | inf + 1 + j % 7 for j in range(100)])
    x[1, at[500:2000]] = np.inf if up else -np.inf
    x[1, at[2000:2100]] = vals([(sign if up else 0) | inf + 1 + j % 3 for j in range(100)])
    y = base.copy()
    y[:, at[2000:]] = vals([(sign if j % 2 else 0) | inf + 1 + j % 5 for j in range(L - 2000)])
    z = np.abs(base) * (-1 if up else 1)
    z[:, at[:1500]] = vals([sign * (j % 2) for j in range(1500)])
    z[1, at[1500:3000]] = vals([(sign if up else 0) | 1 + j % 4 for j in range(1500)])
    return x, y, z


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_whole_blocks_exact_prefix(dev, rng, dtype, direction):
    # prefixes whose range of keys holds those the raw test would get wrong: exact keys there
    x, y, z = special_rows(rng, dtype, direction, 2 * block_elems(dtype) + 48)
    for rows, ks in ((x, (150, 300, 700, 2049)), (y, (300, 3000)), (z, (700, 1500, 2200))):
        for k in ks:
            check_blocks(dev, rows, k, direction)


# ---- the compaction's raw-bits filter (gradix.glsl gradix_cut/gbelow: a value told below T without its key) ----
# T (the K-th key) in each class gradix_cut tells apart: zero's (-0.0 ties), negative, positive, +inf's, NaN's, the
# smallest subnormals next to zero on either side, -inf's; every row holds NaNs of both signs and payloads, +-inf,
# +-0.0 and subnormals among its other values. Chunks of a whole block and more (the unchecked loads), 4 a row, the
# cut in chunk 0-3 (row c: `own` ties in chunk c, fewer in the others).
def fbits(dtype):
    """(uint type, bits, sign bit, +inf's bits) of a float dtype."""
    return (np.uint32, 32, 0x80000000, 0x7F800000) if dtype == "float32" else (np.uint16, 16, 0x8000, 0x7C00)


def quiet(dtype):
    """The quiet-NaN bit: the mantissa's top one."""
    _, _, sb, inf = fbits(dtype)
    return ((sb - 1) & ~inf) + 1 >> 1


def fkey(b, dtype, direction):
    """io.glsl's make_key of raw bits (NaN above +inf, -0.0 == +0.0), negated for INCREASING: larger comes first."""
    _, nb, sb, inf = fbits(dtype)
    b = np.asarray(b).astype(np.int64)
    m = (1 << nb) - 1
    z = np.where(b == sb, 0, b)
    k = np.where((b & (sb - 1)) > inf, m, np.where(z & sb, ~z & m, z | sb))
    return k if direction == "decreasing" else -k


def target_rows(rng, dtype, direction, t, ties, own=120, spread=(20, 60, 45, 30), n_above=300):
    """4 rows of 4 chunks of a block + 512; the tie values `ties` (the K-th key t's raw variants) placed so that the
    100th tie by index falls in chunk c on row c, `n_above` values beyond t, the rest on the near side of t (none
    there: every other value a tie, the cut in chunk 0). Returns the bits' view and (K for 1, 100, 180 ties)."""
    ut, nb, sb, inf = fbits(dtype)
    m = (1 << nb) - 1
    cl = block_elems(dtype) + 512
    L = 4 * cl
    qn = quiet(dtype)
    special = [0, sb, inf, sb | inf, inf | 1, inf | qn, m >> 1, sb | inf | 1, sb | inf | qn, m,
               inf | 0x123, sb | inf | 0x155, 1, 2, sb | 1, sb | 2, inf - 1, sb | (inf - 1), t - 1, t + 1, t ^ 1]
    pool = np.concatenate([np.array(special, np.int64) & m,
                           (rng.standard_normal(400) * 4).astype(dtype).view(ut).astype(np.int64)])
    kp, kt = fkey(pool, dtype, direction), fkey(t, dtype, direction)
    above, below = pool[kp > kt], pool[kp < kt]
    x = np.empty((4, L), np.int64)
    n_above = n_above if above.size else 0
    for c in range(4):
        if below.size:
            x[c] = rng.choice(below, L)
            for c2 in range(4):
                n = own if c2 == c else spread[c]
                x[c, c2 * cl + rng.choice(cl, n, replace=False)] = rng.choice(ties, n)
        else:
            x[c] = rng.choice(ties, L)
        free = np.nonzero(fkey(x[c], dtype, direction) != kt)[0] if below.size else np.arange(L)
        x[c, rng.choice(free, n_above, replace=False)] = rng.choice(above, n_above) if n_above else 0
    return x.astype(ut).view(dtype), [n_above + r for r in (1, 100, 180)]


def dense_rows(rng, dtype, direction, t, ties, cl=400, per_chunk=((200, 34, 33, 33), (100, 150, 25, 25),
                                                                   (50, 50, 150, 50), (40, 40, 40, 180))):
    """Where nothing lies on the near side of t (DECREASING -inf, INCREASING NaN) the rows above hold a tie in every
    other place: the cut chunk ranks them by the block scan and the loop's ties matter nowhere. Here 4 short chunks of
    cl, row c with per_chunk[c] ties (300), all else beyond t: the 150th tie in chunk c, the chunks before it `all`,
    the cut chunk's in the list. Returns the bits' view and (K for 1, 150, 300 ties)."""
    ut, nb, sb, inf = fbits(dtype)
    qn = quiet(dtype)
    pool = np.array([0, sb, inf, sb | inf, inf | 1, inf | qn, sb | inf | 1, sb | inf | qn, 1, sb | 1], np.int64)
    pool = np.concatenate([pool, (rng.standard_normal(400) * 4).astype(dtype).view(ut).astype(np.int64)])
    above = pool[fkey(pool, dtype, direction) > fkey(t, dtype, direction)]
    x = rng.choice(above, (4, 4 * cl))
    for c, counts in enumerate(per_chunk):
        for c2, n in enumerate(counts):
            x[c, c2 * cl + rng.choice(cl, n, replace=False)] = rng.choice(ties, n)
    return x.astype(ut).view(dtype), [4 * cl - 300 + r for r in (1, 150, 300)]


def f_targets(dtype):
    ut, nb, sb, inf = fbits(dtype)
    one = lambda v: int(np.array(v, dtype).view(ut))  # noqa: E731
    qn = quiet(dtype)
    nans = [inf | 1, inf | qn, sb | inf | 1, sb | inf | qn | 0x2A, (sb - 1), (1 << nb) - 1]
    return {"zero": (0, [0, sb]), "negative": (one(-1.5), [one(-1.5)]), "positive": (one(2.5), [one(2.5)]),
            "+inf": (inf, [inf]), "nan": (inf | qn, nans), "min_subnormal": (1, [1]),
            "-min_subnormal": (sb | 1, [sb | 1]), "-inf": (sb | inf, [sb | inf])}


@pytest.mark.parametrize("target", ["zero", "negative", "positive", "+inf", "nan", "min_subnormal", "-min_subnormal",
                                    "-inf"])
@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_compaction_filter_t_ranges(dev, rng, dtype, direction, target):
    t, ties = f_targets(dtype)[target]
    x, ks = target_rows(rng, dtype, direction, t, ties)
    p = gradix_plan(dev, x, ks[0], chunks=4)
    assert p.dispatches[-2].kernel.startswith("top_k1_gradix_collect_")
    assert p.dispatches[-2].push[10] > block_elems(dtype) and p.dispatches[-2].push[11] == 1  # whole blocks, vec
    ut = fbits(dtype)[0]
    for k in ks:
        out = check(x, k, direction=direction, chunks=4)
        if out is not None:  # the K-th value is t's (the test tests the class it names)
            assert (fkey(out[0][:, -1].view(ut), dtype, direction) == fkey(t, dtype, direction)).all(), (target, k)
    check(x[:, :-3], ks[1], direction=direction, chunks=4)  # L % EV != 0: one element a load, bounds-checked
    if target in ("-inf", "nan") and (target == "nan") == (direction == "increasing"):
        x, ks = dense_rows(rng, dtype, direction, t, ties)
        for k in ks:
            out = check(x, k, direction=direction, chunks=4)
            if out is not None:
                assert (fkey(out[0][:, -1].view(ut), dtype, direction) == fkey(t, dtype, direction)).all(), (target, k)
