"""TOP_K1 on rows split into chunks: the merges of chunks' results (one level, sorted runs, two levels), the
sorting networks' register and shuffle strides, the threshold filter path and its compaction, and the chunk rules
(long LLM rows, many rows capped near a wave). Exact against reference.top_k1 (check); split from test_top_k1.py."""
import numpy as np
import pytest

import vkops
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

from test_top_k1 import DIRS, DTYPES, big_k, check, gpu_path, radix_data, random, shared_b


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
