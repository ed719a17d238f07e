"""DML TOP_K1: the spec's examples, differential tests against reference.top_k1 on every dtype, axis, layout
and edge value, device tensors and batches, validation messages; the helpers the other TOP_K1 test files import.
Path by path: test_top_k1_chunks.py (chunk merges, sorting networks, the filter path, chunk rules),
test_top_k1_radix.py (radix select, its sampled guess and tunings, the global sort, large K in one chunk),
test_top_k1_rows.py (ROWS, RSORT), test_top_k1_g*.py (GRADIX), test_top_k1_rule.py (the path rule).
Sizes stay small: lavapipe is slow."""
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


def random(rng, dtype, shape, low=None, high=None):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = (info.min, info.max) if low is None else (low, high)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=dt)


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


def guess_too_high_row(dev, rng, n):
    """A row of n tied losers (-1) but one distinct winner at element 4t of each thread t's first sampled
    strip: the sampled guess then collects only about its rank r of keys."""
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    x = np.full((1, n), -1.0, np.float32)
    x[0, 4 * np.arange(wg)] = 1000.0 + rng.permutation(wg)
    return x


def push_word(plan, field):
    """`field` of each dispatch's push constants (tk.PUSH of its module's algorithm; None where that push
    block has no such field)."""
    words = [np.array(d.push, np.uint32).view(tk.PUSH[tk.algorithm(d.kernel)])[0] for d in plan.dispatches]
    return [int(w[field]) if field in w.dtype.names else None for w in words]


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
