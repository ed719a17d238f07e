"""TOP_K1's GRADIX with 11-bit digits (TopK1Tuning.GRADIX_DIGIT_BITS = 11; 32-bit keys: digits of 11, 11, 10 bits from
the top, 3 gradix_hist passes instead of 4, every module's _d11 variant: kernels/top_k1/gradix.glsl's GDIGIT): exact
against reference.top_k1, bit for bit, for float32/int32/uint32 keys, both directions, keys that differ only across a
digit's edge (bits 9/10, 20/21), forced ties (all-equal rows, ties spanning chunks, the cut inside a chunk, around the
tie list's cap), NaN payloads (a signaling one whose top mantissa bits are zero), +-inf, -0.0, K around the workgroup
and the chunk, several rows, strided input, each sort that follows (gradix_sort[_sg], gradix_psort + gradix_pmerge,
gradix_rank), repeated calls (the larger counters left zero). 11 is the default since session 24; the knob at 8 plans
the 8-bit modules' four passes (checked exact too); 16/8-bit keys and GRADIX_FILTER keep 8-bit digits. Chunks are short (GRADIX_MIN_CHUNK) and K <= 2048 (the sort fits
Vulkan's minimum 16 KiB), so every CI leg runs these."""
import dataclasses

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.errors import ValidationError
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT
TUN = DEFAULT.replace(GRADIX_BRACKET=False)  # digit passes (bracket: test_top_k1_gbracket)

import top_k1_plan_grid as grid
from test_top_k1_gradix import special_rows

DIRS = ["decreasing", "increasing"]
DTYPES = ["float32", "int32", "uint32"]
CHUNK = 1024  # GRADIX_MIN_CHUNK here: rows of a few thousand run several chunks
T11 = TUN.replace(GRADIX_MIN_CHUNK=CHUNK, GRADIX_DIGIT_BITS=11)
TIE_CAP = paths.GRADIX_TIE_CAP


def desc_of(shape, dtype, k, axis=-1):
    x = vkops.TensorDesc(dtype, shape)
    a = axis % len(shape)
    return tk.TopK1Desc(x, *tk.output_descs(x, a, k), a, k).validate()


def plan_of(lim, shape, dtype, k, axis=-1, tuning=T11, **kw):
    return tk.python_plan(desc_of(shape, dtype, k, axis), lim, force="gradix", tuning=tuning, **kw)


def check(dev, x, k, axis=-1, direction="decreasing", tuning=T11, **kw):
    """GRADIX by 11-bit digits against the oracle, bit for bit; returns the plan's kernels (without the type)."""
    xa = np.asarray(x)
    p = plan_of(dev.limits, xa.shape, xa.dtype, k, axis, tuning, **kw)
    kernels = [d.kernel.rsplit("_", 1)[0] for d in p.dispatches]
    assert kernels[:3] == ["top_k1_gradix_hist_d11"] * 3 and all("_d11" in n for n in kernels), kernels
    assert [d.push[12] for d in p.dispatches[:3]] == [21, 10, 0]  # shift
    v, i = tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning, **kw)
    rv, ri = reference.top_k1(xa, k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == xa.dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0
    return kernels


def data(rng, dtype, shape):
    """Keys over the whole range, many sharing their top digits: values near a few centers whose neighbours differ
    only in bits below 10 or 21 (the second and third digits decide), some exact repeats."""
    x = rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)
    base = np.uint32(0x3F800000 if dtype == "float32" else 0x40000000)
    near = rng.random(shape) < 0.5
    x[near] = base + rng.integers(-(1 << 11), 1 << 11, near.sum()).astype(np.uint32)  # crosses bit 10 and 11
    far = rng.random(shape) < 0.2
    x[far] = base + rng.integers(-(1 << 22), 1 << 22, far.sum()).astype(np.uint32)  # crosses bit 21
    x = x.view(dtype)
    if dtype == "float32":
        x = np.where(np.isnan(x), np.float32(1.5), x)  # NaNs: test_nan_inf_negzero
    x.reshape(-1)[::11] = x.reshape(-1)[5]
    return x


def wg(dev):
    return min(TUN.GRADIX_WG, dev.limits.workgroup(TUN.WORKGROUP))


# ---- the plan (host only) ------------------------------------------------------------------------------------
@pytest.mark.host_only
def test_the_knob_plans_three_passes_and_8_plans_as_before():
    h = grid.H100
    for dtype, s in (("float32", "f32"), ("int32", "i32"), ("uint32", "u32"), ("float16", "f16"), ("int16", "i16"),
                     ("uint8", "u8")):
        for n, k in ((1, 3000), (4, 4096), (64, 3000), (64, 1000)):
            d = desc_of((n, 131072), dtype, k)
            base = tk.python_plan(d, h, force="gradix", tuning=TUN.replace(GRADIX_DIGIT_BITS=8))
            on = tk.python_plan(d, h, force="gradix", tuning=TUN)  # the default: 11
            assert tk.python_plan(d, h, force="gradix", tuning=TUN.replace(GRADIX_DIGIT_BITS=11)) == on
            if dtype.endswith("32"):
                hist = [q for q in on.dispatches if q.kernel.startswith("top_k1_gradix_hist")]
                assert [q.kernel for q in hist] == [f"top_k1_gradix_hist_d11_{s}"] * 3
                assert [(q.push[12], q.push[13]) for q in hist] == [(21, 0), (10, 0), (0, 1)]  # shift, last
                assert len(on.dispatches) == len(base.dispatches) - 1
                for a, b in zip(on.dispatches[3:], base.dispatches[4:]):  # then the same dispatches, _d11 modules
                    assert a.kernel == b.kernel.replace(f"_{s}", f"_d11_{s}").replace("_sg_d11_", "_d11_sg_")
                    assert (a.push, a.groups, a.spec) == (b.push, b.groups, b.spec)
                C = on.dispatches[0].push[9]
                rank = n <= TUN.GRADIX_RANK_MAX_SEQ
                ni = -(-k // (on.dispatches[0].spec[0] * TUN.GRADIX_RANK_E))
                bufs = {x["name"]: x["bytes"] for x in on.to_dict()["buffers"]}
                assert bufs["counters"] == 4 * n * (2050 + (k + ni if rank else 0))  # 2048 bins, arrival, slots
                assert bufs["scratch1"] == 4 * (2 * n + n * C * 1024 + 2 * n * k)  # the ties: 10-bit last digit
            else:  # 16- and 8-bit keys keep 8-bit digits
                assert on == base
            # filtering keeps 8-bit digits
            f8 = tk.python_plan(d, h, force="gradix", tuning=TUN.replace(GRADIX_FILTER=True))
            assert tk.python_plan(d, h, force="gradix", tuning=TUN.replace(GRADIX_FILTER=True, GRADIX_DIGIT_BITS=11)) == f8
    # a device whose shared memory cannot hold the 2048-bin histogram keeps 8-bit digits
    need = paths.module_shared_bytes("gradix_hist", 0, 1024, digit_bits=11)  # its s_part[WG] at the widest workgroup
    assert need == 4 * (2048 + 1024 + 3) <= 16384  # Vulkan's minimum maxComputeSharedMemorySize
    small = dataclasses.replace(h, shared_memory_bytes=8192)
    d = desc_of((4, 131072), "float32", 1000)
    assert paths.gradix_digit_bits(32, need, T11) == 11 and paths.gradix_digit_bits(32, need - 1, T11) == 8
    assert tk.python_plan(d, small, force="gradix", tuning=T11) == tk.python_plan(d, small, force="gradix",
                                                                                    tuning=T11.replace(GRADIX_DIGIT_BITS=8))
    assert paths.gradix_shifts(32, 8) == [24, 16, 8, 0] and paths.gradix_shifts(16, 8) == [8, 0]
    for bad in (9, 16, 0, True):
        with pytest.raises(ValidationError, match="GRADIX_DIGIT_BITS must be"):
            TUN.replace(GRADIX_DIGIT_BITS=bad)


@pytest.mark.host_only
def test_the_default_is_11_bit_digits():
    # the default is 11 (session 24): the auto rule's GRADIX plans of 32-bit keys run the _d11 modules; with the knob at
    # 8 the rule picks the same path, the 8-bit modules and one pass more
    assert TUN.GRADIX_DIGIT_BITS == 11
    for n, L, k in ((64, 131072, 4001), (1, 151936, 4096), (16, 131072, 2048), (64, 131072, 4096)):
        d = desc_of((n, L), "float32", k)
        p11 = tk.python_plan(d, grid.H100, tuning=TUN)
        p8 = tk.python_plan(d, grid.H100, tuning=TUN.replace(GRADIX_DIGIT_BITS=8))
        assert p8.note("path") == p11.note("path") == "gradix", (n, L, k)
        assert not any("_d11" in q.kernel for q in p8.dispatches)
        assert all("_d11" in q.kernel for q in p11.dispatches)
        assert len(p11.dispatches) == len(p8.dispatches) - 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_8_bit_digits_stay_exact(dev, rng, dtype):
    # the knob at 8: four passes of the 8-bit modules, each sort that follows (one workgroup, parts, the rank sort)
    t8 = T11.replace(GRADIX_DIGIT_BITS=8)
    x = data(rng, dtype, (3, 5 * CHUNK + 3))
    for n, k, direction, kw in ((3, 1000, "decreasing", {}), (3, 2048, "increasing", {}), (1, 1500, "decreasing", {}),
                                (3, 1500, "increasing", {"tuning": t8.replace(GRADIX_SORT_PARTS_MIN_KP=256)})):
        tun = kw.get("tuning", t8)
        p = plan_of(dev.limits, (n, x.shape[1]), dtype, k, tuning=tun)
        hist = [d.kernel for d in p.dispatches if d.kernel.startswith("top_k1_gradix_hist")]
        assert len(hist) == 4 and not any("_d11" in d.kernel for d in p.dispatches), hist
        v, i = tk._top_k(x[:n], k, -1, direction, force="gradix", tuning=tun)
        rv, ri = reference.top_k1(x[:n], k, -1, direction)
        np.testing.assert_array_equal(i, ri)
        assert v.tobytes() == rv.tobytes()


# ---- dtypes x directions x K ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_dtypes_directions(dev, rng, dtype, direction):
    x = data(rng, dtype, (3, 5 * CHUNK + 3))  # 3 rows: gradix_sort; a short last chunk
    for k in (1, 2, 100, 1000, 1024, 2048):
        check(dev, x, k, direction=direction)


@pytest.mark.parametrize("dtype", DTYPES)
def test_keys_differing_across_a_digit_edge(dev, rng, dtype):
    # every key one of a few values that differ only in bit 9 / 10 (the last digit against the second) or bit
    # 20 / 21 (the second against the first): the K-th key's digits resolve in the later passes
    base = 0x40000000 if dtype != "uint32" else 0x80000000
    vals = np.array([(base + o) % (1 << 32) for o in (0, 1, (1 << 10) - 1, 1 << 10, (1 << 10) + 1, (1 << 21) - 1,
                                                      1 << 21, (1 << 21) + (1 << 10), -1, -(1 << 10))], np.uint32)
    x = vals[rng.integers(0, len(vals), (3, 4 * CHUNK + 16))].view(dtype)
    for direction in DIRS:
        for k in (300, 1500):
            check(dev, x, k, direction=direction)


# ---- ties ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_all_equal_rows_k_at_chunk_boundaries(dev, dtype, direction):
    # every key a tie: a chunk's ties are the whole chunk, below, at and above the tie list's cap; K one short of, at
    # and one past a chunk's end
    for cl in (TIE_CAP - 16, TIE_CAP + 16):
        x = np.full((3, 4 * cl - 5), 7, dtype)
        x[1, :] = 2
        x[1, cl // 2:] = 7  # row 1: the ties start mid-chunk
        for k in (cl - 1, cl, cl + 1, 2 * cl + 1):
            check(dev, x, k, direction=direction, chunks=4)


def tie_rows(rng, dtype, direction, cl, cuts, own, r, spread=40):
    """4 chunks of cl a row; the K-th value T with `own` ties in chunk cuts[row] and `spread` in every other chunk,
    the cut at the r-th tie of cuts[row]; keys above T fill K. T differs from its neighbours below and above only in
    the last digit (bit 0) and in the second (bit 10). INCREASING: the same ranks from the other end."""
    T = 0x40000000
    lo, hi = T - 1, T + (1 << 10)
    k = spread * 3 + r + 100
    x = np.where(rng.random((len(cuts), 4 * cl)) < 0.5, lo, lo - (1 << 21)).astype(np.int64)
    for row, cut in enumerate(cuts):
        for c in range(4):
            at = rng.choice(cl, own if c == cut else spread, replace=False)
            x[row, c * cl + at] = T
        free = np.nonzero(x[row] != T)[0]
        x[row, rng.choice(free, k - spread * cut - r, replace=False)] = hi
    if direction == "increasing":
        x = 2 * T - x
    return x.astype(np.uint32).view(dtype), k


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_ties_spanning_chunks(dev, rng, dtype, direction):
    # the K-th key's ties in every chunk, the cut chunk first, middle or last, its ties below, at and past the tie
    # list's cap (the shared list or the block scan), the cut at its first, middle or last-but-one tie
    combos = [(TIE_CAP - 1, 0, 1), (TIE_CAP, 1, TIE_CAP // 2), (TIE_CAP + 1, 3, TIE_CAP), (40, 2, 20)]
    for own, cut, r in combos:
        x, k = tie_rows(rng, dtype, direction, 1024, (cut, (cut + 2) % 4, (cut + 1) % 4), own, r)
        check(dev, x, k, direction=direction, chunks=4)


# ---- NaN, inf, -0.0 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction", DIRS)
def test_nan_inf_negzero(dev, rng, direction):
    L = 6 * CHUNK + 3
    x = rng.standard_normal((3, L)).astype(np.float32)
    at = rng.choice(L, 900, replace=False)
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FA00000, 0xFFC00000, 0xFF800001, 0x7FFFFFFF], np.uint32).view(np.float32)
    x[0, at[:300]] = nans[np.arange(300) % len(nans)]  # signaling NaNs: mantissa's top bits zero, the 11-bit digit not
    x[0, at[300:400]] = np.inf
    x[0, at[400:500]] = -np.inf
    x[0, at[500:700]] = -0.0
    x[0, at[700:]] = 0.0
    x[1] = np.where(rng.random(L) < 0.5, np.float32(0.0), np.float32(-0.0))  # zeros tie by index, keep their signs
    x[1, 17] = 1.0
    x[2, ::5] = nans[1]
    for k in (1, 299, 300, 301, 1000, 2048):
        check(dev, x, k, direction=direction)


# ---- whole blocks (chunks past GRADIX_LOADS uvec4 loads a thread): the unchecked loops, each pass one of three -----
# the first (gtop: 11 bits, a NaN's own), a prefix tested on the raw bits, or exact keys (NaN's, zero's key in range)
def block(dev):
    return 4 * wg(dev) * 4


def check_blocks(dev, x, k, direction, chunks=(1, 2)):
    for c in chunks:
        d = plan_of(dev.limits, x.shape, x.dtype, k, chunks=c).dispatches[0]
        assert d.push[11] == 1 and d.push[10] > block(dev), (d.push[10], d.push[11])  # vec; whole blocks, a partial one
        check(dev, x, k, direction=direction, chunks=c)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_whole_blocks_raw_prefix(dev, rng, dtype, direction):
    L = 2 * block(dev) + 48
    x = data(rng, dtype, (2, L))
    if dtype == "float32":
        x[1] = rng.standard_normal(L).astype(np.float32) - 3  # the K-th value negative (DECREASING)
    for k in (1, 300, 2048):
        check_blocks(dev, x, k, direction)


@pytest.mark.parametrize("direction", DIRS)
def test_whole_blocks_exact_prefix(dev, rng, direction):
    # float32 prefixes whose range of keys holds those the raw test would get wrong (test_top_k1_gradix's cases)
    x, y, z = special_rows(rng, "float32", direction, 2 * block(dev) + 48)
    for rows, ks in ((x, (150, 300, 700, 2048)), (y, (300, 2048)), (z, (700, 1500, 2048))):
        for k in ks:
            check_blocks(dev, rows, k, direction)


# ---- rows around the workgroup, the load block and the chunk -------------------------------------------------
@pytest.mark.parametrize("n_seq", [1, 3])
def test_rows_and_k_around_workgroup_and_chunk(dev, rng, n_seq):
    W, c = wg(dev), 2048
    tun = T11.replace(GRADIX_MIN_CHUNK=c)
    block = 4 * W * 4  # GRADIX_LOADS uvec4 loads a thread
    for L in (c - 1, c, c + 1, block - 1, block + 1, 3 * c - 1, 3 * c + 1):
        x = data(rng, "float32", (n_seq, L))
        for k in (W - 1, W, W + 1, min(L, c)):
            check(dev, x, k, direction=DIRS[k % 2], tuning=tun)


# ---- strided input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_input(dev, rng, dtype):
    x = data(rng, dtype, (5 * CHUNK + 7, 3))
    for direction in DIRS:
        check(dev, x, 1025, axis=0, direction=direction)  # a non-last axis (no 16-byte loads)
    y = data(rng, dtype, (3, 2, 4 * CHUNK))
    check(dev, y[:, :, ::2], 1000, axis=2)  # a strided axis
    check(dev, y[::2, 1, :], 2000, axis=1, direction="increasing")  # strided rows


# ---- each sort that follows ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_each_sort(dev, rng, dtype):
    shuf = dev.limits.has_subgroup(*paths.SHUF_SUBGROUP_OPS)
    x = data(rng, dtype, (4, 3 * CHUNK + 5))
    # 3-4 rows: one workgroup's sort (register networks where the device has shuffles), and the shared-memory one
    sg = "_sg" if shuf else ""
    assert check(dev, x[:3], 1000)[-1] == f"top_k1_gradix_sort_d11{sg}"
    assert check(dev, x[:3], 1000, direction="increasing", shuffle=False)[-1] == "top_k1_gradix_sort_d11"
    # in parts (GRADIX_SORT_PARTS), runs merged by rank
    parts = T11.replace(GRADIX_SORT_PARTS=4, GRADIX_SORT_PARTS_MIN_KP=256)
    for k in (700, 1024, 1500):
        kern = check(dev, x, k, direction=DIRS[k % 2], tuning=parts)
        assert kern[-2:] == [f"top_k1_gradix_psort_d11{sg}", "top_k1_gradix_pmerge_d11"], kern
    # 1-2 rows: ranked over many workgroups
    for n in (1, 2):
        for k in (1, 777, 2048):
            assert check(dev, x[:n], k, direction=DIRS[k % 2])[-1] == "top_k1_gradix_rank_d11"


def test_repeated_calls_leave_the_counters_zero(dev, rng):
    # the 2048-bin histograms, arrival and slot counters live in the plan's zeroed counters: every call leaves them
    # zero, or the next call (same plan, other data) goes wrong
    for n in (2, 3):  # the rank sort and the one-workgroup sort
        x = data(rng, "float32", (n, 5 * CHUNK))
        xt = dev.tensor(x)
        for _ in range(3):
            v, i = (t.numpy() for t in tk._top_k(xt, 1500, force="gradix", tuning=T11))
            rv, ri = reference.top_k1(x, 1500, -1)
            np.testing.assert_array_equal(i, ri)
            assert v.tobytes() == rv.tobytes()
        y = x.copy()
        y[:, ::3] = y[0, 7]  # another plan's data between: ties of one value
        check(dev, y, 1500)
