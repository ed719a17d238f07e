"""TOP_K1's radix select with one 16-byte load a thread and pass (kernels/top_k1/radix.comp RADIX_LOADS 1): every build
for 8-bit keys (top_k1_radix[_sg]_{i8,u8}), and the top_k1_radix[_m]_l1[_sg]_{f16,i16,u16} builds that 16-bit keys on
at most TopK1Tuning.RADIX_ONE_LOAD_MAX_SEQ rows take; a chunk is read in blocks of 16 WG (8-bit) or 8 WG (16-bit)
keys. Exact against reference.top_k1, bit for bit: both directions, rows around the workgroup, the load block and the
chunk step (and +-1), strided rows (scalar loads), forced ties (the K-th key resolved, then the position select),
saturated rows and the decode step's logits (a Gaussian spread of 16, one row of 32000), in one to three chunks."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

import top_k1_plan_grid as grid
from test_top_k1 import big_k

DIRS = ["decreasing", "increasing"]
DTYPES = ["int8", "uint8"]
DTYPES16 = ["float16", "int16", "uint16"]
EV, EPI = 16, paths.EPI  # 8-bit keys a 16-byte load (one a thread and pass); a chunk is whole steps of WG * EPI


def data(rng, dtype, shape, kind):
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape) * (16 if kind == "logits" else 1)
        return (np.round(x) if kind in ("2", "3", "5", "saturated") else x).astype(dtype)
    info = np.iinfo(dtype)
    if kind == "random":
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    if kind == "logits":  # requantized sums: most keys near the middle, the best few far above
        mid = (int(info.min) + int(info.max)) // 2
        return np.clip(np.rint(rng.standard_normal(shape) * 16) + mid, info.min, info.max).astype(dtype)
    if kind == "saturated":  # hundreds of keys tied at the top value
        return np.clip(np.rint(rng.standard_normal(shape) * 200), info.min, info.max).astype(dtype)
    return rng.integers(0, int(kind), size=shape).astype(dtype)  # "2", "3", "5": that many levels


def check(dev, x, k, axis=-1, direction="decreasing", **kw):
    """Radix select against the oracle, bit for bit; 16-bit keys on one row run the one-load (_l1) builds."""
    x = np.asarray(x)
    if x.dtype.itemsize == 2:
        xd, a = vkops.TensorDesc(x.dtype, x.shape), axis % x.ndim
        d = tk.TopK1Desc(xd, *tk.output_descs(xd, a, k), a, k).validate()
        kernels = [q.kernel for q in tk.python_plan(d, dev.limits, force="radix", **kw).dispatches]
        rows = x.size // x.shape[axis]
        assert all(("_l1" in n) == (rows <= TUN.RADIX_ONE_LOAD_MAX_SEQ) for n in kernels), kernels
    v, i = tk._top_k(x, k, axis, direction, force="radix", **kw)
    rv, ri = reference.top_k1(x, k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == x.dtype and v.tobytes() == rv.tobytes()


def wg(dev):
    return dev.limits.workgroup(TUN.WORKGROUP)


@pytest.mark.host_only
def test_8_bit_keys_plan_the_radix_modules():
    for dtype, s in (("int8", "i8"), ("uint8", "u8")):
        for n, L, k in ((1, 32000, 50), (64, 32000, 256), (1, 151936, 50), (4096, 32768, 50)):
            x = vkops.TensorDesc(dtype, (n, L))
            d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
            p = tk.python_plan(d, grid.H100)
            assert p.note("path") == "radix" and [q.kernel for q in p.dispatches] == [f"top_k1_radix_{s}"], \
                (dtype, n, L, k, [q.kernel for q in p.dispatches])


@pytest.mark.host_only
def test_16_bit_keys_on_one_row_plan_the_one_load_builds():
    h = grid.H100
    for dtype, s in (("float16", "f16"), ("int16", "i16"), ("uint16", "u16"), ("float32", "f32"), ("int8", "i8")):
        for n, L, k in ((1, 32000, 50), (2, 32000, 50), (1, 4096, 50), (1, 151936, 256), (64, 131072, 256)):
            x = vkops.TensorDesc(dtype, (n, L))
            d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
            p = tk.python_plan(d, h)
            if p.note("path") != "radix":
                continue
            one = n <= TUN.RADIX_ONE_LOAD_MAX_SEQ and np.dtype(dtype).itemsize == 2
            assert all(("_l1" in q.kernel) == one for q in p.dispatches), (dtype, n, L, k, p.dispatches[0].kernel)
            off = tk.python_plan(d, h, tuning=TUN.replace(RADIX_ONE_LOAD_MAX_SEQ=0))
            assert not any("_l1" in q.kernel for q in off.dispatches)
            assert [(q.push, q.groups, q.spec) for q in off.dispatches] == [(q.push, q.groups, q.spec) for q in p.dispatches]
    x = vkops.TensorDesc("float16", (1, 32000))
    d = tk.TopK1Desc(x, *tk.output_descs(x, 1, 50), 1, 50).validate()
    assert [q.kernel for q in tk.python_plan(d, h).dispatches] == ["top_k1_radix_m_l1_f16"]
    assert [q.kernel for q in tk.python_plan(d, h, tuning=TUN.replace(RADIX_MASK=False)).dispatches] == \
        ["top_k1_radix_l1_f16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_around_the_workgroup_block_and_chunk_step(dev, rng, dtype):
    W = wg(dev)
    block, step = W * EV, W * EPI
    # L % 16 != 0 reads scalars (vec = 0)
    for L in (W - 1, W, W + 1, block - 1, block, block + 1, 2 * block + 1, step - 1, step + 1, 2 * step + 1):
        x = data(rng, dtype, (2, L), "random")
        x[1, ::5] = x[1, 7]  # a fifth of the row tied: the K-th key for many K
        for direction in DIRS:
            check(dev, x, min(50, L), direction=direction)
            check(dev, x, min(big_k(dev, 300), L), direction=direction, chunks=2 if L > step else None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_forced_ties(dev, rng, dtype, direction):
    W = wg(dev)
    for kind in ("2", "3", "5", "saturated"):
        x = data(rng, dtype, (2, 3 * W * EV + 7), kind)
        x[1, W * EV:] = x[1, W * EV:].max()  # the best keys crowd the row past its first block
        for k in (1, 63, 64, 65, 255, 256, 257, big_k(dev)):
            check(dev, x, k, direction=direction)
            check(dev, x[:, :3 * W * EV], k, direction=direction, chunks=3)  # vector loads, 3 chunks
    c = np.full((1, 5000), 7, dtype)  # a constant row: every key tied
    for k in (50, 257):
        check(dev, c, k, direction=direction)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_rows(dev, rng, dtype):
    x = data(rng, dtype, (3001, 3), "logits")
    for direction in DIRS:
        check(dev, x, 130, 0, direction)
        check(dev, x, big_k(dev, 700), 0, direction, chunks=2)


@pytest.mark.parametrize("kind", ["logits", "saturated", "random"])
def test_the_decode_steps_row(dev, rng, kind):
    """One row of 32000 int8 logits, K = 50 (the decode step's top-k), as the rule plans it and in 2 and 4 chunks."""
    x = data(rng, "int8", (1, 32000), kind)
    for chunks in (None, 2, 4):
        for direction in DIRS:
            check(dev, x, 50, direction=direction, chunks=chunks)


@pytest.mark.parametrize("dtype", DTYPES16)
def test_16_bit_keys_on_one_row(dev, rng, dtype):
    W = wg(dev)
    block, step = W * 8, W * EPI  # 8 16-bit keys a load
    for L in (W - 1, W + 1, block - 1, block, block + 1, 2 * block + 1, step - 1, step + 1, 2 * step + 1):
        x = data(rng, dtype, (1, L), "logits")
        x[0, ::5] = x[0, 7]
        for direction in DIRS:
            check(dev, x, min(50, L), direction=direction)
            check(dev, x, min(big_k(dev, 300), L), direction=direction, chunks=2 if L > step else None)
    for kind in ("2", "3", "saturated"):
        x = data(rng, dtype, (1, 3 * block + 7), kind)
        for k in (1, 64, 129, big_k(dev)):
            check(dev, x, k, direction="decreasing")
            check(dev, x[:, :3 * block], k, direction="increasing", chunks=3)
    check(dev, data(rng, dtype, (3001, 1), "logits"), 130, 0)  # one strided row: scalar loads
    check(dev, data(rng, dtype, (2, 5000), "logits"), 50)  # two rows: the four-load builds
