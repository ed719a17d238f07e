"""TOP_K1's GRADIX path with filtering (TopK1Tuning.GRADIX_FILTER; kernels top_k1_gradix_fscan/fhist/fcollect:
the second digit pass compacts the first digit's bucket per chunk in index order, the later passes and the
compaction read only it): exact against reference.top_k1, bit for bit, for every 16/32-bit dtype (8-bit keys
plan plain GRADIX), both directions, K around the workgroup (GRADIX_WG) and chunk sizes with forced ties,
constant rows (the whole row is the bucket), ties across chunks, NaN/inf/-0.0, strided and non-last axes,
repeated calls. Chunks are short (GRADIX_MIN_CHUNK) so small rows run many workgroups a row (lavapipe)."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT

import top_k1_plan_grid as grid

# 8-bit digits (four passes, the GRADIX modules without _d11): the default's 11-bit ones are tests/test_top_k1_gdigit.py's
TUN = DEFAULT.replace(GRADIX_DIGIT_BITS=8, GRADIX_BRACKET=False)  # digit passes (bracket: test_top_k1_gbracket)

DIRS = ["decreasing", "increasing"]
CHUNK = 1024
TF = TUN.replace(GRADIX_MIN_CHUNK=CHUNK, GRADIX_FILTER=True)
WG = TUN.GRADIX_WG


def plan_of(lim, shape, dtype, k, axis=-1, tuning=TF, **kw):
    x = vkops.TensorDesc(dtype, shape)
    a = axis % len(shape)
    d = tk.TopK1Desc(x, *tk.output_descs(x, a, k), a, k).validate()
    return tk.python_plan(d, lim, force="gradix", tuning=tuning, **kw)


def check(dev, x, k, axis=-1, direction="decreasing", tuning=TF, **kw):
    """The filtering GRADIX's result against the oracle, bit for bit (skipped where its sort does not fit)."""
    if paths.gradix_shared_bytes(paths._pow2(k)) > dev.shared_memory_bytes:
        return
    x = np.asarray(x)
    kernels = [d.kernel for d in plan_of(dev.limits, x.shape, x.dtype, k, axis, tuning, **kw).dispatches]
    assert any("gradix_fscan" in n for n in kernels) == (x.dtype.itemsize > 1), kernels  # the filter runs
    v, i = tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning, **kw)
    rv, ri = reference.top_k1(x, k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == x.dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0


# ---- the plan (host only) ------------------------------------------------------------------------------------
@pytest.mark.host_only
def test_the_knob_plans_the_filter_kernels():
    h = grid.H100
    for dtype, s, kinds in (("float32", "f32", ["hist", "fscan", "fhist", "fhist", "fcollect"]),
                            ("int16", "i16", ["hist", "fscan", "fcollect"]), ("uint8", "u8", ["hist", "collect"])):
        p = plan_of(h, (64, 131072), dtype, 2048, tuning=TUN.replace(GRADIX_FILTER=True))
        assert [d.kernel for d in p.dispatches] == [f"top_k1_gradix_{k}_{s}" for k in kinds] + \
            [f"top_k1_gradix_sort_sg_{s}"]
        last = [tk.PUSH[tk.algorithm(d.kernel)] for d in p.dispatches][0]
        shifts = [np.frombuffer(np.array(d.push, np.uint32).tobytes(), last)["shift"][0] for d in p.dispatches[:-2]]
        assert shifts == list(range(np.dtype(dtype).itemsize * 8 - 8, -1, -8))
        off = plan_of(h, (64, 131072), dtype, 2048, tuning=TUN)
        assert [d.kernel for d in off.dispatches][-1] == p.dispatches[-1].kernel
    # the default tuning is unchanged: the rule never plans the filter kernels
    assert TUN.GRADIX_FILTER is False
    for n, L, k in ((1, 151936, 4096), (64, 131072, 4096), (16, 131072, 2048)):
        x = vkops.TensorDesc("float32", (n, L))
        d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
        assert not any("gradix_f" in q.kernel for q in tk.python_plan(d, h).dispatches)
    # the research A/B's routing: 64 rows at any K from 256 through the rule's knobs
    on = TUN.replace(GRADIX_FILTER=True, GRADIX_MIN_KP=256, GRADIX_MIN_K=1, GRADIX_LONG_MIN_K=1)  # 32-bit keys: the long rows' K
    for k in (256, 1024, 2048, 3000):
        assert paths.choose(h, 64, 131072, k, tuning=on).path == "gradix"
    with pytest.raises(vkops.errors.ValidationError, match="GRADIX_FILTER must be a bool"):
        TUN.replace(GRADIX_FILTER=1)


# ---- dtypes x directions x K around the workgroup ----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int16", "uint32", "uint16"])
@pytest.mark.parametrize("direction", DIRS)
def test_dtypes_directions_k_around_the_workgroup(dev, rng, dtype, direction):
    L = 6 * CHUNK + 5  # 7 chunks, the last of 5 elements
    if dtype.startswith("float"):
        x = rng.standard_normal((2, L)).astype(dtype)
        x[:, ::5] = np.round(x[:, ::5], 1)  # ties among the large values
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, int(info.max) + 1, (2, L), dtype=dtype)
        x[0, ::3] = x[0, 7]  # one value tied a third of the row: the K-th key for many K
        x[1, :20] = info.max
        x[1, -20:] = info.min
    for k in (WG - 1, WG, WG + 1, 4 * WG, 2049):
        check(dev, x, k, direction=direction)


def test_k_around_the_chunk_with_forced_ties(dev, rng):
    # the K-th key tied across every chunk; K at the chunk and workgroup sizes +-1
    L = 5 * CHUNK
    x = rng.integers(0, 8, (3, L)).astype(np.float32)  # 8 values: the first digit's bucket is an eighth of the row
    x[2] = rng.integers(0, 2, L)  # 2 values: half the row
    for k in (WG - 1, WG, WG + 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 1, 4096):
        for direction in DIRS:
            check(dev, x, k, direction=direction)
            check(dev, x.astype(np.float16), k, direction=direction)


def test_keys_above_the_bucket_and_in_it(dev, rng):
    # values spread over many first digits (int32 from a wide range, then the K-th key's bucket split over the
    # later digits): the survivors come from gradix_fscan (above the bucket) and gradix_fcollect (in it)
    L = 8 * CHUNK
    x = rng.integers(-2**31, 2**31 - 1, (2, L), dtype=np.int64).astype(np.int32)
    x[0, rng.choice(L, 3000, replace=False)] = 0x12345678 + rng.integers(0, 300, 3000)  # one bucket, many keys
    for k in (100, 1500, 2049, 3001):
        for direction in DIRS:
            check(dev, x, k, direction=direction)


# ---- ties and whole-row buckets ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "int16", "uint32"])
def test_constant_rows(dev, dtype):
    # the whole row is the first digit's bucket: every chunk's candidate region full
    x = np.full((3, 4 * CHUNK + 100), 3, dtype)
    for direction in DIRS:
        for k in (WG + 1, 2048, 4096):
            check(dev, x, k, direction=direction)


@pytest.mark.parametrize("direction", DIRS)
def test_ties_across_chunks(dev, rng, direction):
    # the K-th value repeated across every chunk, the cut in a middle chunk: ties by ascending index over the row
    L = 10 * CHUNK
    x = rng.integers(-50, 50, (2, L)).astype(np.float32)
    x[0, rng.choice(L, 1500, replace=False)] = 100
    tie = rng.choice(np.nonzero(x[0] != 100)[0], 2000, replace=False)
    x[0, tie] = 60
    if direction == "increasing":
        x = -x
    for k in (2600, 1501, 3499):
        check(dev, x, k, direction=direction)
        check(dev, x.astype(np.float16), k, direction=direction)
        check(dev, x.astype(np.int32), k, direction=direction)


def test_ties_dense_in_one_chunk_and_late_blocks(dev, rng):
    # ties of the K-th key clustered in one chunk (the cut chunk's ranks over several rank blocks of
    # gradix_fcollect) and spread thin; long chunks (several scan blocks of gradix_fscan a chunk)
    L = 6 * CHUNK
    x = rng.standard_normal((2, L)).astype(np.float32) - 10
    x[0, :2000] = 5 + (np.arange(2000) % 3 == 0)
    x[1, ::3] = 5
    for k in (700, 2048, 2049, 2100):
        check(dev, x, k)
    y = rng.integers(0, 200, (2, 40000)).astype(np.float32)
    for chunks in (1, 3):
        check(dev, y, 3000, chunks=chunks)
        check(dev, y[:, :39999], 3000, chunks=chunks)  # no 16-byte loads


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
    x[1, at[:300]] = nan2  # another NaN payload
    z = np.where(rng.random((2, L)) < 0.5, 0.0, -0.0).astype(dtype)  # +-0.0 tie: one bucket
    for k in (150, 250, 2049):
        check(dev, x, k, direction=direction)
        check(dev, z, k, direction=direction)


# ---- axes, strides, repeated calls ---------------------------------------------------------------------------
def test_non_last_axis_and_strided_views(dev, rng):
    x = rng.integers(0, 30, (5 * CHUNK + 7, 3)).astype(np.float32)
    for direction in DIRS:
        check(dev, x, 2049, axis=0, direction=direction)
    y = rng.standard_normal((3, 2, 4 * CHUNK)).astype(np.float16)
    check(dev, y, 2048, axis=2)
    check(dev, y[:, :, ::2], 1000, axis=2)  # a strided axis
    check(dev, y[::2, 1, :], 3000, axis=1)  # strided rows
    check(dev, np.ascontiguousarray(np.moveaxis(y, 2, 1)), 257, axis=1)


def test_repeated_calls_leave_the_counters_zero(dev, rng):
    x = rng.standard_normal((3, 5 * CHUNK)).astype(np.float32)
    xt = dev.tensor(x)
    for _ in range(3):
        v, i = (t.numpy() for t in tk._top_k(xt, 1000, force="gradix", tuning=TF))
        rv, ri = reference.top_k1(x, 1000, -1)
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_array_equal(v, rv)
    for k in (1000, 1001):
        check(dev, np.round(x, 1), k)


def test_tiny_rows(dev, rng):
    for shape, k in (((1, 1), 1), ((3, 5), 5), ((2, 17), 3), ((4, 33), 33)):
        for dtype in ("float32", "int16"):
            x = (rng.standard_normal(shape) * 50).astype(dtype)
            for direction in DIRS:
                check(dev, x, k, direction=direction)
