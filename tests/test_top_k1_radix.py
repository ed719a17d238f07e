"""TOP_K1's radix select (chunks selected by radix passes, then merged): every key type and kind of data, the
sampled threshold on long chunks and a guess too high, short rows in a small buffer, TUNE_SELECT / TUNE_GUESS, huge
rows, the global sort for K past the buffer, large K in one chunk a row (LARGE_K_*), RADIX_SORT_WG, RADIX_SHORT_FIT
and a row of 2^20. Exact against reference.top_k1 (check); split from test_top_k1.py."""
import itertools

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

from test_top_k1 import DIRS, DTYPES, big_k, check, gpu_path, guess_too_high_row, push_word, radix_data, shared_b


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
    assert [tb(gpu_path(4096, 32768, k), 4096, 32768, k, 32) for k in (64, 256, 1024)] == [0, both, both]
    assert [tb(gpu_path(4096, 32768, k), 4096, 32768, k, 16) for k in (64, 256, 1024)] == [paths.TUNE_GUESS] * 2 + [both]
    assert tb(gpu_path(4096, 32768, 8), 4096, 32768, 8, 32) == 0  # the threshold filter
    assert tb(gpu_path(256, 151936, 256), 256, 151936, 256, 32) == 0  # few rows: a missed guess sets the time
    assert tb(gpu_path(64, 1 << 20, 256), 64, 1 << 20, 256, 32) == 0  # several chunks a row
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
    assert paths.tune_bits(p, n, 4 * B + 1, B // 2 + 1, 32) == both
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


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_two_runs_merge_by_merge_path(dev, rng, dtype):
    """The last chunk of a row merges two sorted runs that fill 4 entries a thread (2 pow2(K) = 4 x the workgroup, on
    the register networks) by one merge-path level (merge.glsl's merge_cand), 2-4 chunks a row (a third and fourth run
    merge into the kept result the same way), K = pow2(K) and under it, ties, NaN, constant rows, both directions;
    asserts such plans ran where the device has subgroup shuffles."""
    kinds = itertools.cycle(itertools.product(("ties", "special", "random", "const"), DIRS))
    merged = 0
    for chunks in (2, 3, 4):
        p = paths.device_path(dev.limits, 3, 1 << 16, 2, force="radix", chunks=chunks)
        for k in (p.B // 2, p.B // 2 - 5, p.B // 4 + 1):
            L = chunks * 8 * p.B - 5
            x = radix_data(rng, dtype, (3, L), next(kinds)[0])
            desc = tk.TopK1Desc(vkops.TensorDesc(dtype, (3, L)), vkops.TensorDesc(dtype, (3, k)),
                                vkops.TensorDesc("uint32", (3, k)), 1, k).validate()
            plan = tk.python_plan(desc, dev.limits, force="radix", chunks=chunks)
            (d,) = plan.dispatches
            assert d.groups[0] >= 3 * 2, (chunks, k, d)  # runs to merge in every row
            merged += "_sg_" in d.kernel and 2 * push_word(plan, "Kp")[0] == 4 * d.spec[0]
            check(x, k, -1, next(kinds)[1], force="radix", chunks=chunks)
    assert merged > 0 or not dev.limits.has_subgroup(*paths.SHUF_SUBGROUP_OPS)


@pytest.mark.parametrize("dtype", ["float16", "int16", "uint8"])
def test_packed_merge_sort_at_the_span_limit(dev, rng, dtype):
    """Keys of at most 16 bits merge-sort (key, index - chunk start) packed in one word (radix.comp's PACK16,
    networks.glsl's sort_merge_p16) where the chunk's indices fit: 16 bits, or 16 + the top key bits every collected
    entry shares (compact.glsl's pack_bits), else the (key, index) pairs. Chunks of 2^16, 2^16 + 1 and 2^17 + 1 keys,
    one and two a row (the second chunk's indices start past 0), K = B/2 and B/2 - 3 (the sampled guess collects more
    than B/2 keys: a buffer of 4 entries a thread, the merge sort's), random keys (16-bit ones repeat), special values,
    and rows whose top K hold both signs (no shared top bit: past 2^16 the pairs' sort), both directions; the row's last
    key (a chunk's last index) ties the row's (K/2)-th best, so it is sorted in among its ties. Asserts the merge sort's
    plans ran where the device has subgroup shuffles."""
    dirs = itertools.cycle(DIRS)
    kinds = itertools.cycle(("random", "special", "mixed"))
    merged = 0
    cases = [(1, span) for span in (1 << 16, (1 << 16) + 1, (1 << 17) + 1)] + [(2, 1 << 16), (2, (1 << 16) + 1)]
    for (chunks, span), k_less in itertools.product(cases, (0, 3)):
        L, direction, kind = chunks * span, next(dirs), next(kinds)
        p = paths.device_path(dev.limits, 2, L, 2, force="radix", chunks=chunks)
        k = p.B // 2 - k_less
        desc = tk.TopK1Desc(vkops.TensorDesc(dtype, (2, L)), vkops.TensorDesc(dtype, (2, k)),
                            vkops.TensorDesc("uint32", (2, k)), 1, k).validate()
        (d,) = tk.python_plan(desc, dev.limits, force="radix", chunks=chunks).dispatches
        merged += "_sg_" in d.kernel and p.B == 4 * d.spec[0]
        x = radix_data(rng, dtype, (2, L), "random" if kind == "mixed" else kind)
        for r in range(2):
            _, ri = reference.top_k1(x[r:r + 1], k, -1, direction)
            if kind == "mixed":  # the row's (K/2)-th best moves to 0 (integers: the middle of their range)
                lo, hi = (-np.inf, np.inf) if dtype == "float16" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
                mid = 0 if dtype == "float16" else (int(lo) + int(hi) + 1) // 2
                x[r] = np.clip(x[r].astype(np.float64) - float(x[r, ri[0, k // 2]]) + mid, lo, hi).astype(dtype)
            x[r, -1] = x[r, ri[0, k // 2]]
        check(x, k, -1, direction, force="radix", chunks=chunks)
    assert merged > 0 or not dev.limits.has_subgroup(*paths.SHUF_SUBGROUP_OPS)
