"""DML TOP_K1: the spec's examples, differential tests against reference.top_k1 on every path, dtype,
axis and edge value, validation messages. Sizes stay small: lavapipe is slow."""
import itertools

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

DTYPES = ["float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8"]
DIRS = ["decreasing", "increasing"]


def check(x, k, axis=-1, direction="decreasing", **kw):
    v, i = tk._top_k(x, k, axis, direction, **kw) if kw else vkops.top_k(x, k, axis, direction)
    rv, ri = reference.top_k1(np.asarray(x), k, axis, direction)
    assert v.dtype == np.asarray(x).dtype and i.dtype == np.uint32
    np.testing.assert_array_equal(i, ri)
    # compare bit patterns: NaN payloads and -0.0 come back as they went in
    assert v.tobytes() == rv.tobytes()
    return v, i


def shared_b(dev):
    return paths.buffer_entries(dev.shared_memory_bytes, dev.limits.workgroup(TUN.WORKGROUP))


def big_k(dev, want=1000):
    """A K near the filter paths' largest (pow2(K) <= B/2), which depends on the device's limits."""
    return min(want, shared_b(dev) // 2 - 24)


def gpu_path(n_seq, length, k, key_bits=32):
    """The path an H100-sized device plans (48 KiB of shared memory, its workgroup target, short chunks)."""
    return paths.choose_path(n_seq, length, k, 48 * 1024, target_groups=TUN.TARGET_GROUPS, short_chunks=True,
                             key_bits=key_bits)


# ---- the spec's examples, verbatim ------------------------------------------------------------
EX12 = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)
EX34 = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], np.float32)


@pytest.mark.subgroup_free
def test_example_1(dev):
    v, i = vkops.top_k(EX12, 2, 3, vkops.AxisDirection.DECREASING)
    np.testing.assert_array_equal(v, [[[[11, 10], [9, 8], [7, 6]]]])
    np.testing.assert_array_equal(i, [[[[3, 2], [2, 3], [3, 2]]]])


@pytest.mark.subgroup_free
def test_example_2(dev):
    v, i = vkops.top_k(EX12, 2, 2, "decreasing")
    np.testing.assert_array_equal(v, [[[[4, 5, 10, 11], [3, 2, 9, 8]]]])
    np.testing.assert_array_equal(i, [[[[2, 2, 0, 0], [1, 1, 1, 1]]]])


@pytest.mark.subgroup_free
def test_example_3_ties(dev):
    v, i = vkops.top_k(EX34, 3, 3, "decreasing")
    np.testing.assert_array_equal(v, [[[[3, 2, 2], [5, 5, 4], [6, 6, 6]]]])
    np.testing.assert_array_equal(i, [[[[3, 1, 2], [2, 3, 1], [0, 1, 2]]]])


@pytest.mark.subgroup_free
def test_example_4_increasing(dev):
    v, i = vkops.top_k(EX34, 3, -1, vkops.AxisDirection.INCREASING)
    np.testing.assert_array_equal(v, [[[[1, 2, 2], [3, 4, 5], [6, 6, 6]]]])
    np.testing.assert_array_equal(i, [[[[0, 1, 2], [0, 1, 2], [0, 1, 2]]]])


# ---- differential -----------------------------------------------------------------------------
def random(rng, dtype, shape, low=None, high=None):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = (info.min, info.max) if low is None else (low, high)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=dt)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.subgroup_free
def test_dtypes_seg_and_filter(dev, rng, dtype, direction):
    check(random(rng, dtype, (7, 300)), 5, -1, direction)                   # seg, several rows per group
    check(random(rng, dtype, (2, 3 * shared_b(dev) + 5)), 13, 1, direction)  # filter


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.subgroup_free
def test_integer_extremes_and_ties(dev, rng, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0], dt)
    else:
        info = np.iinfo(dt)
        specials = np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dt)
    x = rng.choice(specials, size=(6, 257))
    for d in DIRS:
        check(x, 40, 1, d)
        check(x, 257, 1, d)  # full stable sort


@pytest.mark.subgroup_free
def test_nan_inf_negzero(dev, rng):
    x = np.array([[1.0, np.nan, -0.0, np.inf, 0.0, -np.inf, np.nan, 0.0, -0.0, 2.0]], np.float32)
    v, i = check(x, 10, 1, "decreasing")
    np.testing.assert_array_equal(i, [[1, 6, 3, 9, 0, 2, 4, 7, 8, 5]])  # NaN first, -0.0 ties +0.0
    v, i = check(x, 10, 1, "increasing")
    np.testing.assert_array_equal(i, [[5, 2, 4, 7, 8, 0, 9, 3, 1, 6]])
    y = x.astype(np.float16)
    check(y, 4, 1, "decreasing")
    check(y, 4, 1, "increasing")


@pytest.mark.subgroup_free
def test_float16_subnormals(dev, rng):
    bits = rng.integers(0, 0x0400, size=(4, 500), dtype=np.uint16) | \
        (rng.integers(0, 2, size=(4, 500), dtype=np.uint16) << 15)
    x = bits.view(np.float16)
    for d in DIRS:
        check(x, 37, 1, d)


@pytest.mark.subgroup_free
def test_uint32_high_and_int8_min(dev, rng):
    x = np.array([[2**31 + 5, 7, 2**32 - 1, 2**31, 0, 2**31 - 1]], np.uint32)
    v, _ = check(x, 3)
    np.testing.assert_array_equal(v, [[2**32 - 1, 2**31 + 5, 2**31]])
    y = np.array([[-128, 127, 0, -1, -128, 5]], np.int8)
    v, i = check(y, 2, -1, "increasing")
    np.testing.assert_array_equal(i, [[0, 4]])


@pytest.mark.parametrize("direction", DIRS)
def test_forced_ties_at_tile_boundaries(dev, rng, direction):
    B = shared_b(dev)
    for n in (B - 1, B, B + 1):
        x = rng.integers(0, 3, size=(3, n)).astype(np.float32)
        check(x, 7, 1, direction)
        check(x, B // 2, 1, direction)
        if n <= B:  # whole-row SEG (one row per workgroup), which short rows leave for radix select
            check(x, 7, 1, direction, force="seg")
    const = np.full((2, 2 * B + 3), 4, np.int16)
    v, i = check(const, 9, 1, direction)
    np.testing.assert_array_equal(i, np.tile(np.arange(9), (2, 1)))


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.subgroup_free
def test_short_rows_around_4b(dev, rng, direction):
    """Rows of B/2 < L <= 4B take radix select from K = 2 (K = 1: SEG or the threshold filter);
    longer ones the threshold filter. Both sides of each bound, with ties."""
    B = shared_b(dev)
    for n, k, radix in ((B // 2, 2, False), (B // 2 + 1, 2, True), (B, 1, False), (4 * B, 2, True),
                        (4 * B, 64, True), (4 * B + 1, 2, False)):
        p = paths.device_path(dev.limits, 2, n, k)
        assert p.radix == radix, (n, k, p)
        x = rng.integers(0, 7, size=(2, n)).astype(np.float32)
        check(x, k, 1, direction)


@pytest.mark.host_only
def test_long_rows_radix_rule():
    """Chunks of long rows (the threshold filter's domain) go to radix select from pow2(K) = 128, and
    from pow2(K) = 64 (K = 33) where a chunk is at most RADIX_SHORT_CHUNK_B * B elements (the H100's
    measurements: one 32768 chunk a row, LLM rows' 8192-16384 chunks); K <= 32 keeps the filter."""
    B = 2048  # 48 KiB of shared memory
    want = {(4096, 32768): {32: False, 33: True, 64: True}, (1, 151936): {32: False, 50: True},
            (64, 1 << 20): {32: False, 33: False, 64: False, 65: True, 256: True},
            (1, 1 << 26): {64: False, 128: True}}
    for (n_seq, n), ks in want.items():
        for k, radix in ks.items():
            p = gpu_path(n_seq, n, k)
            assert (p.path, p.radix) == ("filter", radix), (n_seq, n, k, p)
            assert radix == (p.Kp >= TUN.RADIX_MIN_KP or (p.Kp >= 64 and p.chunk_len <= TUN.RADIX_SHORT_CHUNK_B * B)), p
        assert not paths.choose_path(n_seq, n, 64, 48 * 1024, force="filter").radix  # tests force the filter


@pytest.mark.subgroup_free
def test_axis_length_one_and_k_equals_length(dev, rng):
    check(random(rng, "float32", (5, 1, 3)), 1, 1)
    check(random(rng, "int8", (9, 33)), 33, 1, "increasing")
    check(rng.integers(0, 4, size=(3, 100)).astype(np.uint8), 100, 1)


@pytest.mark.parametrize("axis", range(4))
@pytest.mark.subgroup_free
def test_every_axis(dev, rng, axis):
    x = rng.integers(0, 6, size=(5, 6, 7, 9)).astype(np.float32)
    for d in DIRS:
        check(x, 3, axis, d)
        check(x.astype(np.uint8), 4, axis, d)  # 8-bit outputs interleaved across sequences


@pytest.mark.subgroup_free
def test_eight_dims(dev, rng):
    x = rng.integers(-50, 50, size=(2, 3, 1, 2, 3, 2, 4, 3), dtype=np.int32)
    for axis in (0, 4, 7):
        check(x, 2, axis)
        check(x.astype(np.float16), 2, axis, "increasing")


@pytest.mark.subgroup_free
def test_strided_inputs(dev, rng):
    base = rng.integers(0, 10, size=(12, 40)).astype(np.float32)
    t = vkops.to_device(base)
    view = t.as_strided((6, 20), (80, 2))       # rows 0,2,..; every other column
    v, i = vkops.top_k(view, 5, 1)
    rv, ri = reference.top_k1(base[::2, ::2], 5, 1)
    np.testing.assert_array_equal(v.numpy(), rv)
    np.testing.assert_array_equal(i.numpy(), ri)
    tr = t.as_strided((40, 12), (1, 40))         # transposed
    v, i = vkops.top_k(tr, 3, 0, "increasing")
    rv, ri = reference.top_k1(base.T, 3, 0, "increasing")
    np.testing.assert_array_equal(v.numpy(), rv)
    np.testing.assert_array_equal(i.numpy(), ri)
    bc = t.as_strided((3, 40), (0, 1))           # broadcast rows
    v, i = vkops.top_k(bc, 4, 1)
    rv, ri = reference.top_k1(np.broadcast_to(base[0], (3, 40)), 4, 1)
    np.testing.assert_array_equal(i.numpy(), ri)
    # strides that do not merge into <= 6 dimensions: packed by a SLICE1 first
    big = rng.integers(0, 5, size=1451).astype(np.float32)
    t8 = vkops.to_device(big)
    st, sz = (1000, 300, 100, 31, 11, 5, 2, 1), (2,) * 8
    host = np.lib.stride_tricks.as_strided(big, sz, [s * 4 for s in st])
    for axis in (7, 2):
        v, i = vkops.top_k(t8.as_strided(sz, st), 1, axis)
        rv, ri = reference.top_k1(host, 1, axis)
        np.testing.assert_array_equal(v.numpy(), rv)
        np.testing.assert_array_equal(i.numpy(), ri)


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.subgroup_free
def test_multi_chunk_merge(dev, rng, direction):
    x = rng.integers(0, 50, size=(3, 5000)).astype(np.float32)
    check(x, 9, 1, direction, force="filter", chunks=4)
    check(x.astype(np.uint8), 64, 1, direction, force="filter", chunks=3)   # scalar (unaligned) path
    check(random(rng, "float16", (2, 4096)), 100, 1, direction, force="filter", chunks=5)
    # a last chunk of 3 entries under K=50: its threshold seed has fewer entries than K
    check(rng.integers(0, 9, size=(2, 2 * TUN.WORKGROUP * paths.EPI + 3)).astype(np.int16), 50, 1, direction,
          force="filter", chunks=2)



@pytest.mark.parametrize("direction", DIRS)
def test_merge_of_sorted_runs(dev, rng, direction):
    """The last chunk of a row merges the chunks' sorted candidate runs, B/pow2(K) at a time: more runs
    than one load holds (several loads, counts not powers of two), a last chunk shorter than K (a run
    padded with sentinels), and ties across chunk boundaries (equal keys order by index)."""
    B, step = shared_b(dev), dev.limits.workgroup(TUN.WORKGROUP) * paths.EPI
    k = big_k(dev)  # pow2(K) = B/2: two runs a load, so 8 chunks take 7 loads
    n = 7 * step + 5  # each value about 4 times: the top K spread over every chunk, ties across them
    x = rng.integers(0, n // 4, size=(2, n)).astype(np.float32)
    assert paths.device_path(dev.limits, 2, x.shape[1], k, force="radix", chunks=8).chunks == 8
    check(x, k, 1, direction, force="radix", chunks=8)
    x = rng.integers(-2000, 2000, size=(1, 40 * step)).astype(np.int16)  # K=100: B/128 runs a load
    assert paths.device_path(dev.limits, 1, x.shape[1], 100, force="filter", chunks=40).chunks == 40 > 2 * B // 128
    check(x, 100, 1, direction, force="filter", chunks=40)


@pytest.mark.parametrize("direction", DIRS)
def test_two_level_merge(dev, rng, direction):
    """Many chunks of a row merge in two levels (top_k1.paths.merge_group): the last chunk of each group
    merges the group's runs in place of its first, the last group merges the groups' runs. Group counts
    that do not divide the chunks, a last group of a single run (13 chunks in groups of 3), a last chunk
    shorter than the others, ties across chunks and groups, two rows sharing the counters buffer."""
    B, step = shared_b(dev), dev.limits.workgroup(TUN.WORKGROUP) * paths.EPI
    k = big_k(dev)  # pow2(K) = B/2: two runs a load, so one level takes chunks - 1 loads
    # chunk counts whose last group holds one run (already in place: no merge, no write)
    single = next(c for c in range(10, 40) if c % max(paths.merge_group(c, B, B // 2), 2) == 1)
    for rows, chunks in ((2, 16), (1, single)):
        n = chunks * step - 3
        p = paths.device_path(dev.limits, rows, n, k, force="radix", chunks=chunks)
        assert p.chunks == chunks and 1 < p.merge_group < chunks, p
        x = rng.integers(0, n // 8, size=(rows, n)).astype(np.float32)  # each value about 8 times
        check(x, k, 1, direction, force="radix", chunks=chunks)
    # the rule: huge rows at large K merge in two levels, LLM rows (3 chunks) and small K in one
    assert (gpu_path(1, 1 << 26, 1024).merge_group, gpu_path(2, 1 << 25, 1024).merge_group) == (10, 8)
    assert gpu_path(1, 1 << 26, 256).merge_group > 0
    assert gpu_path(1, 151936, 1024).merge_group == gpu_path(8, 151936, 256).merge_group == 0
    assert gpu_path(1, 1 << 26, 8).merge_group == 0


@pytest.mark.parametrize("direction", DIRS)
def test_shuffle_networks(dev, rng, direction):
    """The top_k1_*_sg_* modules (shuffle=True) run the sorting networks' short strides in registers (4
    entries a thread) and subgroup shuffles, the long ones in shared memory: pow2(K) from 2 to B/2 on
    SEG rows (several rows a workgroup; networks of fewer than 4 x subgroup entries stay in shared
    memory), the threshold filter's compactions and radix select's sorts, merges of 2 and 4 runs a
    load; values tied across threads, subgroups and chunks. The same calls without shuffles agree."""
    lim = dev.limits
    if not lim.has_subgroup(*paths.SHUF_SUBGROUP_OPS):
        with pytest.raises(vkops.ValidationError, match="shuffle=True needs subgroup shuffles"):
            tk._top_k(np.zeros((1, 64), np.float32), 2, shuffle=True)
        return
    B, step = shared_b(dev), lim.workgroup(TUN.WORKGROUP) * paths.EPI
    k_big = big_k(dev)
    seg = rng.integers(0, 40, size=(9, B // 2 - 3)).astype(np.float32)
    for k in (2, 3, 17, 100, B // 4 + 1):
        assert paths.device_path(lim, 9, seg.shape[1], k, force="seg", shuffle=True).shuf
        check(seg, k, 1, direction, force="seg", shuffle=True)
    long = rng.integers(-300, 300, size=(2, 3 * step + 5)).astype(np.int16)
    for k in (5, 300, k_big):
        check(long, k, 1, direction, force="filter", chunks=3, shuffle=True)
    for k, chunks in ((k_big, 2), (k_big // 2, 5), (64, 1), (B // 4, 1)):
        check(long, k, 1, direction, force="radix", chunks=chunks, shuffle=True)
        check(long, k, 1, direction, force="radix", chunks=chunks, shuffle=False)
    # the rule: shuffles where the device has them and pow2(K) >= SHUF_MIN_KP, on SEG and filter paths
    assert paths.device_path(lim, 2, 100000, TUN.SHUF_MIN_KP).shuf
    assert not paths.device_path(lim, 2, 100000, TUN.SHUF_MIN_KP // 2).shuf
    assert not paths.device_path(lim.within("minimum"), 2, 100000, 1024).shuf


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.subgroup_free
def test_small_k_filter_path(dev, rng, dtype):
    """Small K on long rows: K = 1 (argmax: each thread keeps its own best over the chunk, then the
    workgroup reduces) and K = 3, 8, 16 (the threshold filter, seeded by K groups of threads while
    32 K <= workgroup: 16 is the last such K at 512 invocations, 17 the first after it). The best values
    tied at several places (first occurrences win; increasing: the least), all in one thread's 16-byte
    loads, a row of positive values only (a seed that counted the zeros loaded past a row's end
    would rank them first, increasing), rows of a step - 1, a step (16-byte loads) and a step + 1
    (element loads) and a step - 64 16-byte loads, several chunks, a strided axis."""
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    step, ev = wg * paths.EPI, 16 // np.dtype(dtype).itemsize
    info = None if np.dtype(dtype).kind == "f" else np.iinfo(np.dtype(dtype))
    hi, lo = (np.inf, -np.inf) if info is None else (info.max, info.min)
    for n in (step - 1, step, step + 1, 9 * step + 40, step - 64 * ev):  # the last: 64 threads load past the end
        x = radix_data(rng, dtype, (5, n), "random")
        if info is not None:  # keep the extremes free, then plant them
            x = np.clip(x, info.min + 1, info.max - 1).astype(dtype)
        one_thread = [j for j in range(0, n, wg * ev)][:4] + [1, 2, ev - 1]  # thread 0 loads these
        for r, at in enumerate(([n - 1, 5, n // 2], [0, n - 1], [(step - 1) % n, step % n, n - 2], one_thread)):
            x[r, at] = hi
            x[r, [a // 3 + 7 for a in at]] = lo
        x[4] = np.abs(x[4]) + 1 if info is None else np.maximum(np.abs(x[4].astype(np.int64)), 1).astype(dtype)
        for k in (1, 3, 8) + ((16, 17) if n > step else ()):
            assert paths.device_path(dev.limits, 4, n, k, force="filter").path == "filter"
            for direction in DIRS:
                for chunks in (None, 3):
                    check(x, k, 1, direction, force="filter", chunks=chunks)
    if info is None:  # NaN ranks above everything (and below, increasing: still first)
        x = radix_data(rng, dtype, (2, step + 8), "random")
        x[0, [7, 3]] = np.nan
        x[1, :] = x[1, 0]
        for direction in DIRS:
            check(x, 1, 1, direction, force="filter", chunks=2)
            check(x, 5, 1, direction, force="filter", chunks=2)
    x = radix_data(rng, dtype, (2 * step + 1, 3), "ties")
    check(x, 1, 0, "decreasing", force="filter")  # strided axis
    check(x, 6, 0, "increasing", force="filter")


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.subgroup_free
def test_compaction_around_rank_bound(dev, rng, dtype):
    """The threshold filter's compactions rank up to min(WG, 256) entries (each counts the entries that
    beat it) and sort more with a bitonic network. K = 17 (no group seed) on an element-loaded row (a
    strided axis) of n <= WG entries: the seed compaction holds exactly n (one entry a thread). n on both
    sides of the bound and of the 8-key unroll, few distinct values (ties by index), or rising values (the
    best entries last in the buffer), both directions."""
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    bound = min(wg, 256)
    for n in (bound - 9, bound - 1, bound, bound + 1):
        if n > wg:
            continue
        x = rng.integers(0, 6, size=(n, 2)).astype(dtype)
        x[:, 1] = np.arange(n) // 3 % 200  # rising: the best at the last threads (the end of the buffer)
        assert paths.device_path(dev.limits, 2, n, 17, force="filter").path == "filter"
        for direction in DIRS:
            check(x, 17, 0, direction, force="filter", chunks=1)
            check(x, 3, 0, direction, force="filter", chunks=1)  # group seed, final compaction of few


@pytest.mark.host_only
def test_llm_row_chunk_rule():
    """Chunks of few long rows on a GPU-sized device (the counts the H100 measured best): >= 56 pow2(K)
    elements, or >= 64 pow2(K) where the rows alone give more than one workgroup per SM; whole steps.
    Tens to 256 rows at 64 <= pow2(K) <= 256: about one wave of workgroups, by radix select (WAVE_*); above that
    K, where the rows alone give more than a workgroup per SM, at most about a wave or 2 chunks a row."""
    want = {(1, 128256, 1024): 3, (8, 128256, 1024): 3, (1, 151936, 1024): 3, (64, 151936, 1024): 2,
            (64, 128256, 1024): 2, (1, 128256, 256): 8, (1, 151936, 256): 10, (64, 151936, 256): 2,
            (1, 151936, 50): 19, (1, 32000, 1024): 1, (64, 151936, 50): 2, (64, 128256, 50): 2,
            (64, 32000, 50): 2, (64, 32000, 256): 2, (32, 151936, 50): 4, (256, 151936, 50): 1,
            (64, 151936, 8): 4, (512, 151936, 50): 1}
    got = {key: gpu_path(*key) for key in want}
    assert {key: p.chunks for key, p in got.items()} == want
    # radix select where the wave rule applies (the filter took 64 x 151936 and 256 x 151936 at K=50 before),
    # not below pow2(K) = 64 nor past WAVE_MAX_SEQ rows of chunks over RADIX_SHORT_CHUNK_B * B
    assert all(got[key].radix for key in ((64, 151936, 50), (256, 151936, 50), (32, 151936, 50)))
    assert not got[(64, 151936, 8)].radix and not got[(512, 151936, 50)].radix


@pytest.mark.host_only
def test_many_rows_chunk_cap():
    """Tens to WAVE_MAX_SEQ rows of up to WAVE_MAX_L above pow2(K) = WAVE_MAX_KP, where the rows alone give more
    than target_groups / 2 chunks: at most max(2, target_groups / 2 / rows) chunks a row (3-5 ran 1.2-1.6x slower
    than 2 on an H100); few rows, longer rows, more rows and the wave's K keep the count of chunks >= 64 pow2(K)."""
    want = {(64, 151936, 1024): 2, (64, 151936, 1000): 2, (48, 151936, 512): 2, (48, 200000, 1024): 2,
            (64, 131072, 512): 2, (96, 131072, 512): 2, (112, 128256, 300): 2, (64, 262144, 1024): 2,
            (40, 131072, 512): 3, (32, 151936, 512): 4,                       # capped at 128 / rows
            (32, 151936, 1024): 3,                                            # few rows: 56 pow2(K) a chunk
            (64, 262145, 1024): 4, (257, 151936, 1024): 1, (64, 151936, 256): 2,  # past WAVE_MAX_L / _SEQ; the wave
            (128, 151936, 1024): 2, (64, 128256, 1024): 2}                    # already at 2
    assert {key: gpu_path(*key).chunks for key in want} == want
    assert gpu_path(31, 151936, 512).chunks == 5  # below WAVE_MIN_SEQ rows: not capped

def radix_data(rng, dtype, shape, kind):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.standard_normal(shape).astype(dt)
        if kind == "ties":
            x = np.round(x * 2).astype(dt)
        elif kind == "special":
            x.flat[rng.choice(x.size, 40, replace=False)] = rng.choice(
                np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dt), 40)
    else:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
        if kind == "ties":
            x = (x % 5).astype(dt)
        elif kind == "special":
            x.flat[rng.choice(x.size, 40, replace=False)] = rng.choice(np.array([info.min, info.max], dt), 40)
    if kind == "const":
        x[:] = x.flat[0]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["random", "ties", "const", "special"])
def test_radix_select_path(dev, rng, dtype, kind):
    """Chunks reduced by radix select (large K): key digits, then a position select among ties."""
    for shape, k in [((2, 5000), 300), ((3, 3001), 17), ((2, 4096), big_k(dev))]:
        x = radix_data(rng, dtype, shape, kind)
        for direction in DIRS:
            for chunks in (None, 3):
                check(x, k, -1, direction, force="radix", chunks=chunks)
    check(radix_data(rng, dtype, (700, 3), kind), 130, 0, "increasing", force="radix")  # strided axis


@pytest.mark.parametrize("dtype,kind", [("float32", "random"), ("float32", "ties"), ("uint8", "random"),
                                        ("float16", "const")])
def test_radix_sampled_threshold_on_long_chunks(dev, rng, dtype, kind):
    """Chunks of >= 2^18 keys first try a threshold guessed from a sample (one collecting pass);
    ties and constant rows overflow or undershoot it and fall back to the exact select."""
    x = radix_data(rng, dtype, (1, 1 << 18), kind)
    check(x, 300, -1, "decreasing", force="radix", chunks=1)
    check(x, big_k(dev), -1, "increasing", force="radix", chunks=2)


def guess_too_high_row(dev, rng, n):
    """A row of n tied losers (-1) but one distinct winner at element 4t of each thread t's first sampled
    strip: the sampled guess then collects only about its rank r of keys."""
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    x = np.full((1, n), -1.0, np.float32)
    x[0, 4 * np.arange(wg)] = 1000.0 + rng.permutation(wg)
    return x


@pytest.mark.parametrize("direction", DIRS)
def test_radix_sampled_guess_too_high(dev, rng, direction):
    """The sampled guess is the r-th best of the threads' best sampled keys. Here every thread's first
    sampled key (element 4t of a row of 2^15, inside the first strip) is one of WG distinct winners and
    every other element is one tied loser, so the guess collects about r keys. On a 512-invocation
    workgroup, K=64 collects fewer than K (r = 39) and K=256 too (r = 101): the next guess's rank, scaled
    toward the middle of [K, B], takes every winner and stands; K past the WG winners falls short at every
    rank and goes on to the exact select over a row of ties. Then a guess that collects more than the
    buffer: B + 52 tied keys (unsampled) above the r-th winner, under the 30th, and the 3 best keys last:
    too many, then too few (rank 19), then a rank between those two (every rank below 30 collects too few,
    every other too many), so the exact select resolves the tie by position."""
    x = guess_too_high_row(dev, rng, 1 << 15)
    if direction == "increasing":
        x = -x
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    assert big_k(dev) > wg  # the last K is past the winners on every profile
    for k in (64, min(256, big_k(dev)), big_k(dev)):
        check(x, k, -1, direction, force="radix", chunks=1)
    x = guess_too_high_row(dev, rng, 1 << 15)
    B = paths.device_path(dev.limits, 1, x.shape[1], 64, force="radix", chunks=1).B
    x[0, 4 * wg:4 * wg + B + 52] = 1000.0 + wg - 30.5  # past strip 0's sampled vectors, before strip 1
    x[0, -3:] = 5000.0  # the best keys, unsampled and last: a guess that kept only B entries would lose them
    if direction == "increasing":
        x = -x
    check(x, 64, -1, direction, force="radix", chunks=1)


@pytest.mark.subgroup_free
def test_short_rows_small_buffer(dev, rng):
    """Many short rows by radix select (one chunk of at most 4 B, longer than ROWS_RADIX_MIN_L) plan a buffer of
    RADIX_SHORT_ROWS_B entries and workgroups of RADIX_SHORT_ROWS_WG up to pow2(K) = 256, any key width;
    exact on random rows and rows of ties (the K-th key's ties fill the buffer: the position select).
    The runs take that plan on 24 rows (a tuning with the rule's row count lowered; the plan checked equal to the one for
    RADIX_ONE_CHUNK_WG_MIN_SEQ rows): a workgroup a row, so 1024 rows only repeated the same work (lavapipe,
    minimum limits: 107 s in the suite, 77 s with 24 rows, most of it compiling the three variants)."""
    assert [(gpu_path(2048, 8192, k, b).B, gpu_path(2048, 8192, k, b).workgroup) for k in (8, 256) for b in (32, 8)] \
        == [(512, 128)] * 4
    assert gpu_path(2048, 8192, 300).B == 2048 and gpu_path(512, 8192, 64).B == 2048  # K, rows outside the rule
    # rows of <= 4096 (which ROWS took before session 17) too
    assert [(gpu_path(2048, n, k).B, gpu_path(2048, n, k).workgroup) for n in (1601, 2048, 4096) for k in (2, 256)] \
        == [(512, 128)] * 6
    assert gpu_path(2048, 1600, 64).B == 2048 and gpu_path(2048, 1024, 64).path == "seg"  # not short radix rows
    B = shared_b(dev)
    n = min(4 * B, 8192)
    rows = 24
    plans = {k: paths.device_path(dev.limits, TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, n, k) for k in (8, 256)}
    low = TUN.replace(RADIX_ONE_CHUNK_WG_MIN_SEQ=rows)  # part of the plan key: no plan made under DEFAULT is replayed
    for k, p in plans.items():
        assert (p.path, p.radix, p.chunks) == ("filter", True, 1)
        assert p.B == max(min(B, TUN.RADIX_SHORT_ROWS_B), 2 * paths._pow2(k), p.workgroup) < B
        assert p.workgroup == min(dev.limits.workgroup(TUN.WORKGROUP), TUN.RADIX_SHORT_ROWS_WG)
        assert paths.device_path(dev.limits, rows, n, k, tuning=low) == p  # what the runs below plan
        assert paths.device_path(dev.limits, rows, n, k) != p  # DEFAULT plans 24 rows otherwise
        for dtype, kind in (("float32", "ties"), ("float16", "random"), ("uint8", "ties")):
            check(radix_data(rng, dtype, (rows, n), kind), k, -1, "decreasing", tuning=low)


def test_rows_of_2k_4k_take_radix_select(dev, rng):
    """Many rows of ROWS_RADIX_MIN_L + 1 to ROWS_MAX_L with keys wider than 8 bits and K >= 2 take radix select
    with the short rows' buffer and workgroups of 128 where the device has ROWS; K=1, 8-bit keys, rows of
    <= ROWS_RADIX_MIN_L and fewer rows keep ROWS. Exact on rows around one step of a 128 workgroup (128 x 16
    elements), with ties at the K-th key."""
    lim, n = dev.limits, TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ
    if lim.has_subgroup(*paths.ROWS_SUBGROUP_OPS):
        for L, k, bits in ((2048, 64, 32), (4096, 256, 16), (1601, 2, 32), (3000, 8, 16)):
            p = paths.device_path(lim, n, L, k, key_bits=bits)
            assert (p.path, p.radix, p.chunks) == ("filter", True, 1), (L, k, bits)
        for nn, L, k, bits in ((n, 2048, 64, 8), (n, 2048, 1, 32), (n, 1600, 64, 32), (n - 1, 2048, 64, 32)):
            assert paths.device_path(lim, nn, L, k, key_bits=bits).path == "rows", (nn, L, k, bits)
    step = 128 * paths.EPI
    # one pipeline for the three (a new one costs lavapipe ~25 s to compile)
    for L, k, direction in ((step - 1, 100, "decreasing"), (step, 2, "increasing"), (step + 1, 256, "decreasing")):
        p = paths.device_path(lim, n, L, k)
        assert (p.path, p.radix, p.chunks) == ("filter", True, 1)
        assert p.workgroup == min(lim.workgroup(TUN.WORKGROUP), TUN.RADIX_SHORT_ROWS_WG)
        check(radix_data(rng, "float32", (n, L), "ties"), k, -1, direction)


def test_one_long_chunk_smaller_buffer(dev, rng):
    """One long chunk a row by radix select plans a buffer of max(4 * pow2(K), RADIX_ONE_CHUNK_MIN_B)
    entries (not the device's largest) and, up to pow2(K) = 256, workgroups of RADIX_ONE_CHUNK_WG (on many
    rows with 32-bit keys, max(2 * pow2(K), RADIX_ONE_CHUNK_WIDE_B) entries, and up to pow2(K) = 128
    workgroups of RADIX_ONE_CHUNK_WIDE_SMALL_WG); its
    sampled guess, retries and exact select stay exact there: random rows, ties, and the guess that falls
    short (as in test_radix_sampled_guess_too_high)."""
    B = shared_b(dev)
    n = 8 * B + 1  # one chunk (the CPU's long chunks, and the H100's 2^15 a row), longer than 4 * B
    for k in (64, 256):
        Kp = paths._pow2(k)
        p = paths.device_path(dev.limits, 1, n, k)
        if not (p.path == "filter" and p.radix and p.chunks == 1):
            continue  # this device plans the row otherwise (e.g. many chunks)
        assert p.B == max(min(B, 4 * Kp), TUN.RADIX_ONE_CHUNK_MIN_B) <= B
        assert p.workgroup == dev.limits.workgroup(TUN.WORKGROUP)  # one row: the usual workgroup
        narrow = paths.device_path(dev.limits, TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, n, k, key_bits=16)
        assert (narrow.chunks, narrow.radix, narrow.B) == (1, True, p.B)
        assert narrow.workgroup == min(p.workgroup, TUN.RADIX_ONE_CHUNK_WG)
        # 32-bit keys: a smaller buffer, and for pow2(K) <= 128 a smaller workgroup still
        many = paths.device_path(dev.limits, TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, n, k, key_bits=32)
        wg = narrow.workgroup
        if Kp <= TUN.RADIX_ONE_CHUNK_WIDE_SMALL_WG_MAX_KP:
            wg = min(wg, TUN.RADIX_ONE_CHUNK_WIDE_SMALL_WG)
        assert (many.chunks, many.radix, many.workgroup) == (1, True, wg)
        assert many.B == max(min(p.B, max(2 * Kp, TUN.RADIX_ONE_CHUNK_WIDE_B)), wg) < p.B
        x = radix_data(rng, "float32", (TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, n), "ties")
        check(x, k, -1, "decreasing")  # the smaller workgroup and buffer, a thousand rows of ties
        for kind in ("random", "ties"):
            check(radix_data(rng, "float32", (2, n), kind), k, -1, "decreasing")
        x = guess_too_high_row(dev, rng, n)
        check(x, k, -1, "increasing")
        check(-x, k, -1, "increasing")
    gpu = gpu_path(4096, 32768, 256, key_bits=16)
    assert (gpu.chunks, gpu.radix, gpu.B) == (1, True, 1024)
    assert [(gpu_path(4096, 32768, k).B, gpu_path(4096, 32768, k).workgroup) for k in (64, 128, 256)] == \
        [(512, 128), (512, 128), (512, 256)]  # 32-bit keys
    assert gpu_path(4096, 32768, 1024).B == 2048
    assert [gpu_path(4096, 32768, k, 16).workgroup for k in (8, 64, 256, 1024)] == [TUN.WORKGROUP, 256, 256, TUN.WORKGROUP]
    assert gpu_path(64, 1 << 20, 256).workgroup == TUN.WORKGROUP  # several chunks a row: 512
    assert gpu_path(256, 151936, 256).workgroup == gpu_path(1, 32000, 50).workgroup == TUN.WORKGROUP  # LLM rows
    assert gpu_path(1, 151936, 256).B == 2048


def push_word(plan, field):
    """`field` of each dispatch's push constants (tk.PUSH of its module's algorithm; None where that push
    block has no such field)."""
    words = [np.array(d.push, np.uint32).view(tk.PUSH[tk.algorithm(d.kernel)])[0] for d in plan.dispatches]
    return [int(w[field]) if field in w.dtype.names else None for w in words]


def test_tune_select_and_guess(dev, rng):
    """TUNE_SELECT (compact resolves the K-th key of more than 256 buffered entries, moves the keys at or
    above its prefix to the front and sorts pow2(K) of them) and TUNE_GUESS (the sampled guess aims
    lower) stay exact: long rows (the sampled guess) and shorter ones (the exact select), K at 256 and at
    the workgroup (WG - 1, WG, WG + 1), ties and special values, ties of the K-th key beyond pow2(K)
    (select_front gives up for the full reduction), 16- and 8-bit keys. The rule sets them for one long
    radix chunk a row on many rows only."""
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    B = shared_b(dev)
    both = paths.TUNE_GUESS | paths.TUNE_SELECT
    n_long = max(1 << 15, 4 * B + 1)  # sampled; 4 B + 1: one long chunk, exact select (below 2^15)
    kinds = itertools.cycle(itertools.product(("random", "ties", "special"), DIRS))
    for n in (n_long, 4 * B + 1):
        for k in sorted({255, 256, 257, wg - 1, wg, wg + 1, big_k(dev)}):
            if paths._pow2(k) <= B // 2:
                kind, direction = next(kinds)
                check(radix_data(rng, "float32", (2, n), kind), k, -1, direction, force="radix", chunks=1, tune=both)
    for k in (100, 300):  # the K-th key tied 3 pow2(K) times (no prefix fits pow2(K)), the best 50 last
        x = np.full((2, n_long), -5.0, np.float32)
        for r in range(2):
            x[r, rng.permutation(n_long // 2)[:3 * paths._pow2(k)]] = 5.0
            x[r, n_long - 1 - rng.permutation(1000)[:50]] = 7.0
        check(x, k, -1, "decreasing", force="radix", chunks=1, tune=both)
        check(-x, k, -1, "increasing", force="radix", chunks=1, tune=both)
    # The K-th key is the resolved prefix itself (1024.0: zero low bits): 200 keys above, 30 of 1024.0,
    # 200 below in the same top byte, so select_front stops after two digits with 230 <= pow2(220).
    x = np.full((2, n_long), -5.0, np.float32)
    for r in range(2):
        at = rng.permutation(n_long)
        x[r, at[:200]] = rng.uniform(1040, 1100, 200)
        x[r, at[200:230]] = 1024.0
        x[r, at[230:430]] = rng.uniform(1000, 1020, 200)
    check(x, 220, -1, "decreasing", force="radix", chunks=1, tune=both)
    check(-x, 220, -1, "increasing", force="radix", chunks=1, tune=both)
    for dtype, (kind, direction) in zip(("float16", "int8", "uint8", "int16"), kinds):
        check(radix_data(rng, dtype, (2, n_long), kind), 300, -1, direction, force="radix", chunks=1, tune=both)
    # the rule (H100-sized paths): 4096 x 32768; 32-bit keys both from pow2(K) = 256, narrower ones the
    # guess from 64 and the select from 1024
    tb = paths.tune_bits
    assert [tb(gpu_path(4096, 32768, k), 4096, 32768, 32) for k in (64, 256, 1024)] == [0, both, both]
    assert [tb(gpu_path(4096, 32768, k), 4096, 32768, 16) for k in (64, 256, 1024)] == [paths.TUNE_GUESS] * 2 + [both]
    assert tb(gpu_path(4096, 32768, 8), 4096, 32768, 32) == 0  # the threshold filter
    assert tb(gpu_path(256, 151936, 256), 256, 151936, 32) == 0  # few rows: a missed guess sets the time
    assert tb(gpu_path(64, 1 << 20, 256), 64, 1 << 20, 32) == 0  # several chunks a row
    limits = dev.limits.replace(name="h100-like", device_type="discrete", shared_memory_bytes=48 * 1024,
                                subgroup_operations=0, max_workgroup_invocations=1024,
                                max_storage_buffer_range=2**32 - 1)
    # K=8: the threshold filter (filter.comp), whose push block has no tune word
    for dtype, k, want in (("float32", 256, both), ("float16", 256, paths.TUNE_GUESS), ("float32", 8, None)):
        xd = vkops.TensorDesc(dtype, (4096, 32768))
        desc = tk.TopK1Desc(xd, *tk.output_descs(xd, 1, k), 1, k, tk.AxisDirection.DECREASING).validate()
        assert push_word(tk.plan(desc, limits), "tune") == [want]


def test_huge_rows_chunks_and_sample_limit(dev, rng):
    """A huge row with K = 1024 takes 128 chunks (about a wave of workgroups; 65536 / K would be 64), of
    2^19 keys, where the sampled guess still applies; two such rows keep 64 each; a chunk past
    SAMPLE_MAX_LEN (2^19) skips the guess for the exact select."""
    p = gpu_path(1, 1 << 26, 1024)
    assert (p.chunks, p.chunk_len, p.radix) == (128, 1 << 19, True)
    assert gpu_path(2, 1 << 25, 1024).chunks == 64
    assert gpu_path(1, 1 << 26, 256).chunks == 256
    x = radix_data(rng, "float32", (1, (1 << 20) + 4096), "random")  # one chunk past SAMPLE_MAX_LEN
    check(x, big_k(dev), -1, "increasing", force="radix", chunks=1)


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.subgroup_free
def test_sort_path(dev, rng, direction):
    B = shared_b(dev)
    x = rng.integers(0, 100, size=(2, 2 * B + 7)).astype(np.float32)
    check(x, B + 3, 1, direction)                   # K > B/2 on a long row: global bitonic sort
    check(x.astype(np.int8), 2 * B + 7, 1, direction)
    check(x[:, :300], 5, 1, direction, force="sort")


def one_chunk_b(dev):
    """The buffer of one radix chunk a row at B/2 < pow2(K) <= B (Facts.one_chunk): the device's, doubled up to
    LARGE_K_MAX_B while shared memory allows (lavapipe's 32 KiB: 2048; an H100: 4096)."""
    wg, b = dev.limits.workgroup(TUN.WORKGROUP), shared_b(dev)
    while 2 * b <= TUN.LARGE_K_MAX_B and paths.shared_bytes(2 * b, wg) <= dev.shared_memory_bytes:
        b *= 2
    return b


def large_k_data(rng, dtype, shape, kind):
    """radix_data, or (kind "nan") rounded values with a third of them NaN (floats; integers: ties), so that
    the K-th key is tied many times (NaN itself where K reaches into them)."""
    if kind != "nan":
        return radix_data(rng, dtype, shape, kind)
    x = radix_data(rng, dtype, shape, "ties")
    if np.dtype(dtype).kind == "f":
        x[rng.random(shape) < 1 / 3] = np.nan
    return x


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint8"])
def test_large_k_one_chunk(dev, rng, dtype):
    """B/2 < pow2(K) <= B on rows longer than B: radix select in one chunk a row, whose buffer ends holding at
    most B collected keys (the exact select stops once the keys at or above the K-th key's prefix fit B, or
    takes the tied K-th keys by position), then sorts pow2(K) = B of them. Rows of B + 1, 2 B, a filter step
    (WG x 16) +- 1, 32000 and 2^17 (the sampled guess at K = B/2 + 1), K from B/2 + 1 to B, both directions,
    ties of the K-th key (by ascending index), NaN, constant rows."""
    B = one_chunk_b(dev)
    step = dev.limits.workgroup(TUN.WORKGROUP) * paths.EPI
    bits = np.dtype(dtype).itemsize * 8
    ks = sorted({B // 2 + 1, B * 1500 // 2048, B * 2000 // 2048, B})
    kinds = itertools.cycle(itertools.product(("ties", "nan", "random", "special", "ties", "const"), DIRS))
    nog = TUN.replace(GRADIX_MIN_KP=0)  # GRADIX takes few long rows at these K by default (its own tests)
    for L in sorted({B + 1, 2 * B, step - 1, step, step + 1, 32000, 1 << 17}):
        if L <= B:
            continue
        rows = 2 if L > 16384 else 3
        for k in ks:
            p = paths.device_path(dev.limits, rows, L, k, key_bits=bits, tuning=nog)
            assert (p.path, p.radix, p.chunks, p.Kp, p.B) == ("filter", True, 1, B, B), (L, k, p)
            for kind, direction in (next(kinds), next(kinds)):
                check(large_k_data(rng, dtype, (rows, L), kind), k, -1, direction, tuning=nog)


def test_large_k_one_chunk_tune_and_strides(dev, rng):
    """One radix chunk a row at pow2(K) = B with the TUNE_* bits (the rule's on >= RADIX_ONE_CHUNK_WG_MIN_SEQ
    rows; compact's select_front where at most 4 WG entries came in, giving up on ties past pow2(K)), on a
    strided axis (element loads, no vectors) and where the knob turns it off (the global sort)."""
    B = one_chunk_b(dev)
    both = paths.TUNE_GUESS | paths.TUNE_SELECT
    n = TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ
    p = paths.device_path(dev.limits, n, 4 * B + 1, B // 2 + 1)  # one chunk longer than 4 B, many rows
    assert (p.radix, p.chunks, p.Kp, p.B) == (True, 1, B, B)
    assert paths.tune_bits(p, n, 4 * B + 1, 32) == both
    check(large_k_data(rng, "float32", (n, 4 * B + 1), "ties"), B // 2 + 1, -1, "decreasing")
    for kind, direction, k in (("random", "increasing", B // 2 + 1), ("ties", "decreasing", B - 3),
                               ("nan", "increasing", B), ("const", "decreasing", B * 3 // 4)):
        x = large_k_data(rng, "float32", (2, 4 * B + 5), kind)
        check(x, k, -1, direction, tune=both)
        check(np.ascontiguousarray(x.T), k, 0, direction)  # strided: element loads
    off = TUN.replace(LARGE_K_ONE_CHUNK_MAX_L=1)
    assert paths.device_path(dev.limits, 2, 4 * B + 5, B, tuning=off).path == "sort"
    check(large_k_data(rng, "float32", (2, 4 * B + 5), "ties"), B, -1, "decreasing", tuning=off)


@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8"])
def test_radix_sort_wg(dev, rng, dtype):
    """RADIX_SORT_WG: a radix chunk whose final sort takes more than 4 entries a thread (networks.glsl's register
    networks) runs in a workgroup of sort entries / 4. Workgroups of 256 make this device's 2048-entry sorts grow
    (where its limits allow): one chunk a row past 4 B (K = B/2 + 1 .. B), the sampled guess's chunk (2^16 keys) and
    the chunks of a long row (2^18), every chunk in whole steps of the grown workgroup; ties of the K-th key by
    ascending index, NaN, constant rows, both directions; the same calls with the knob at 256 (the rule off) agree."""
    low = TUN.replace(WORKGROUP=256, GRADIX_MIN_KP=0)
    off = low.replace(RADIX_SORT_WG=256)
    bits = np.dtype(dtype).itemsize * 8
    lim = dev.limits
    kinds = itertools.cycle(itertools.product(("ties", "nan", "const", "random", "special"), DIRS))
    grown = 0
    B = one_chunk_b(dev)  # 2048 on lavapipe: K = 1025 / 2048 past 4 B, 1100 sampled, 1000 in chunks
    for rows, L, k in ((2, 4 * B + 808, B // 2 + 1), (2, 4 * B + 808, B), (1, 1 << 16, B * 1100 // 2048),
                       (1, 1 << 18, B // 2 - 24)):
        p = paths.device_path(lim, rows, L, k, key_bits=bits, tuning=low)
        base = paths.device_path(lim, rows, L, k, key_bits=bits, tuning=off)
        want = lim.workgroup(min(TUN.RADIX_SORT_WG, paths.radix_sort_entries(base, rows, L, k, bits, low) // 4))
        assert p.radix and base.radix and base.workgroup == lim.workgroup(256), (L, k, p, base)
        assert p.workgroup == max(base.workgroup, want) and p.chunks == base.chunks, (L, k, p, base)
        assert p.chunk_len % (p.workgroup * paths.EPI) == 0
        grown += p.workgroup > base.workgroup
        for kind, direction in (next(kinds), next(kinds)) if L < 1 << 16 else (next(kinds),):
            x = large_k_data(rng, dtype, (rows, L), kind)
            check(x, k, -1, direction, tuning=low)
    check(x, k, -1, direction, tuning=off)
    # lavapipe (1024 invocations, B = 2048): every case grows to 512; a device of 256 invocations keeps 256
    assert grown == (4 if lim.max_workgroup_invocations >= 512 and one_chunk_b(dev) >= 2048 else grown)


@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8"])
def test_radix_short_fit(dev, rng, dtype):
    """RADIX_SHORT_FIT: short rows (RADIX_SHORT_ROWS_MIN_L..4 max(Kp, 512)) above pow2(K) = 256, one radix chunk each in
    a buffer of max(Kp, 512) and Kp / 4 threads, which collects at most max(Kp, 512) keys (the K-th key's ties taken by
    position). The many-rows bound lowered to 3 rows here (the same modules and specialization as thousands of rows);
    rows of 1601, 2048 and 4096 at K = 257, 300, 513, 1000 and 1024 where the buffer allows, ties, NaN, constant rows,
    both directions; the same calls with the rule off agree."""
    t = TUN.replace(RADIX_ONE_CHUNK_WG_MIN_SEQ=3)
    bits = np.dtype(dtype).itemsize * 8
    kinds = itertools.cycle(itertools.product(("ties", "nan", "const", "random", "special"), DIRS))
    taken = 0
    for L, k in ((1601, 257), (2048, 300), (2048, 1000), (4096, 513), (4096, 1024)):
        p = paths.device_path(dev.limits, 3, L, k, key_bits=bits, tuning=t)
        off = paths.device_path(dev.limits, 3, L, k, key_bits=bits, tuning=t.replace(RADIX_SHORT_FIT=False))
        kp = 1 << (k - 1).bit_length()
        if p != off:  # the rule's plan: the buffer and workgroup the register networks want
            assert (p.radix, p.chunks, p.B) == (True, 1, max(kp, 512)) and p.B < off.B or off.path == "rsort", (L, k)
            assert p.workgroup == dev.limits.workgroup(max(kp // 4, 32)), (L, k, p)
            taken += 1
        kind, direction = next(kinds)
        x = large_k_data(rng, dtype, (3, L), kind)
        check(x, k, -1, direction, tuning=t)
    check(x, k, -1, direction, tuning=t.replace(RADIX_SHORT_FIT=False))
    # lavapipe (32 KiB, B = 2048): every case but the buffers already at max(Kp, 512)
    assert taken >= (3 if dev.shared_memory_bytes >= 32768 else 0), taken


@pytest.mark.subgroup_free
def test_row_of_2_pow_20(dev, rng):
    x = rng.standard_normal((1, 1 << 20)).astype(np.float32)
    x[0, rng.integers(0, 1 << 20, 50)] = 3.0  # ties near the top
    check(x, 64, 1)
    check(x, 1, 1, "increasing")


@pytest.mark.subgroup_free
def test_device_tensors_and_batch(dev, rng):
    x = random(rng, "float32", (4, 500))
    xt = vkops.to_device(x)
    with dev.batch():
        v, i = vkops.top_k(xt, 6)
        v2, i2 = vkops.top_k(v, 2, -1, "increasing")
    assert isinstance(v, vkops.DeviceTensor)
    rv, ri = reference.top_k1(x, 6, 1)
    np.testing.assert_array_equal(v.numpy(), rv)
    np.testing.assert_array_equal(i.numpy(), ri)
    np.testing.assert_array_equal(v2.numpy(), reference.top_k1(rv, 2, 1, "increasing")[0])
    vo, io = dev.empty(v.desc), dev.empty(i.desc)
    r = vkops.top_k(xt, 6, out=(vo, io))
    assert r[0] is vo and r[1] is io
    np.testing.assert_array_equal(io.numpy(), ri)


# ---- validation -------------------------------------------------------------------------------
def D(dt, sizes):
    return vkops.TensorDesc(dt, sizes)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(k=9), "TopK1Desc.k must be <= size along axis 3; got k=9 for sizes (1, 1, 3, 4)"),
    (dict(k=0), "TopK1Desc.k must be >= 1; got k=0"),
    (dict(axis=4), "TopK1Desc.axis must be < DimensionCount 4"),
    (dict(output_value=D("float16", (1, 1, 3, 2))), "output_value.data_type must equal input.data_type FLOAT32"),
    (dict(output_index=D("int32", (1, 1, 3, 2))), "output_index.data_type must be UINT32; got INT32"),
    (dict(output_value=D("float32", (1, 3, 2))), "output_value must have the input's DimensionCount 4"),
    (dict(output_index=D("uint32", (1, 1, 3, 3))), "output_index.sizes must equal input sizes with K on axis 3"),
    (dict(axis_direction=2), "axis_direction must be an AxisDirection"),
])
@pytest.mark.host_only
def test_validation_messages(kwargs, msg):
    args = dict(input=D("float32", (1, 1, 3, 4)), output_value=D("float32", (1, 1, 3, 2)),
                output_index=D("uint32", (1, 1, 3, 2)), axis=3, k=2,
                axis_direction=vkops.AxisDirection.DECREASING)
    args.update(kwargs)
    with pytest.raises(vkops.ValidationError) as e:
        vkops.TopK1Desc(**args).validate()
    assert msg in str(e.value)


@pytest.mark.host_only
def test_top_k_argument_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(vkops.ValidationError, match="k must be <= size along axis 1; got k=4"):
        vkops.top_k(x, 4)
    with pytest.raises(vkops.ValidationError, match="axis must be < DimensionCount 2"):
        vkops.top_k(x, 1, axis=2)
    with pytest.raises(vkops.ValidationError, match="direction must be 'decreasing', 'increasing'"):
        vkops.top_k(x, 1, direction="up")
    with pytest.raises(vkops.ValidationError, match="data_type must be one of"):
        vkops.top_k(np.zeros(3, np.float64), 1)
    assert all(push.itemsize <= 128 for push in tk.PUSH.values())


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
