"""TOP_K1's radix select with one 16-byte load a thread and pass (kernels/top_k1/radix.comp RADIX_LOADS 1): every build
for 8-bit keys (top_k1_radix[_sg]_{i8,u8}), and the top_k1_radix[_m]_l1[_sg]_{f16,i16,u16} builds that 16-bit keys on
at most TopK1Tuning.RADIX_ONE_LOAD_MAX_SEQ rows take; a chunk is read in blocks of 16 WG (8-bit) or 8 WG (16-bit)
keys. Exact against reference.top_k1, bit for bit: both directions, rows around the workgroup, the load block and the
chunk step (and +-1), strided rows (scalar loads), forced ties (the K-th key resolved, then the position select),
saturated rows and the decode step's logits (a Gaussian spread of 16, one row of 32000), in one to three chunks.
And the short build (top_k1_radix_s[_sg], TopK1Tuning.RADIX_SHORT_BUILD, _MAX_SEQ): one chunk a row of at most 4 B
keys, one load a thread and pass, without the chunk merge, the sampled guess and select_front."""
import itertools

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

import top_k1_plan_grid as grid
from test_top_k1 import big_k, push_word
from test_top_k1_radix import large_k_data

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


def short_build(p, n, L, t=TUN) -> bool:
    """Whether a radix plan is the short build's: one chunk of at most 4 B keys, no TUNE_* bit, no _m / _l1 build, the
    register networks or at most RADIX_SHORT_BUILD_MAX_SEQ rows."""
    q = p.dispatches[0]
    return (t.RADIX_SHORT_BUILD and p.note("path") == "radix" and p.note("chunks") == 1 and L <= 4 * q.spec[1]
            and push_word(p, "tune") == [0] and "_m_" not in q.kernel and "_l1" not in q.kernel
            and ("_sg_" in q.kernel or n <= t.RADIX_SHORT_BUILD_MAX_SEQ))


@pytest.mark.host_only
def test_short_rows_plan_the_short_build():
    """RADIX_SHORT_BUILD on H100-like and lavapipe limits: one-chunk rows of 2048-4096 on the register networks (the
    short fit) take top_k1_radix_s_sg, and rows of a few thousand on few rows top_k1_radix_s; many rows on the plain
    networks, long rows, several chunks, TUNE_* bits and the _m / _l1 builds keep theirs; with the knob off every plan
    is the same but for the module's name."""
    named = {(16384, 2048, 1024, "float32"): "top_k1_radix_s_sg_f32",
             (4096, 4096, 1024, "float16"): "top_k1_radix_s_sg_f16",
             (16384, 2048, 300, "float32"): "top_k1_radix_s_sg_f32",
             (16384, 2048, 1024, "float16"): "top_k1_radix_s_sg_f16",  # RADIX_SHORT_FIT_RSORT_KP16 1024
             (8, 4096, 1024, "float32"): "top_k1_radix_s_sg_f32",
             (2, 4096, 50, "float32"): "top_k1_radix_s_f32",
             (2, 5000, 50, "float32"): "top_k1_radix_m_f32",  # RADIX_MASK_MIN_L
             (8192, 1601, 32, "float32"): "top_k1_radix_f32",  # many rows on the plain networks
             (64, 131072, 1024, "float32"): "top_k1_radix_m_sg_f32",
             (4096, 32768, 256, "float32"): "top_k1_radix_m_f32"}
    seen = set()
    for lim in (grid.H100, grid.LAVAPIPE):
        for t in (TUN, TUN.replace(RADIX_SHORT_BUILD_MAX_SEQ=0)):
            for dtype in ("float32", "float16", "int8", "uint32"):
                for n, L, k in ((16384, 2048, 1024), (4096, 4096, 1024), (16384, 2048, 300), (8192, 3000, 700),
                                (4096, 2048, 64), (64, 131072, 1024), (4096, 32768, 256), (2, 5000, 50), (1, 4096, 50),
                                (8, 4096, 1024), (8192, 1601, 32), (1023, 3000, 50), (1024, 3000, 50), (2, 4096, 50)):
                    x = vkops.TensorDesc(dtype, (n, L))
                    d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
                    p = tk.python_plan(d, lim, tuning=t)
                    if p.note("path") != "radix":
                        continue
                    kern = [q.kernel for q in p.dispatches]
                    short = short_build(p, n, L, t)
                    assert kern[0].startswith("top_k1_radix_s_") == short and len(kern) == 1, (lim.name, n, L, k, kern)
                    if lim is grid.H100 and t is TUN and (n, L, k, dtype) in named:
                        assert kern == [named[n, L, k, dtype]], (n, L, k, dtype, kern)
                        seen.add((n, L, k, dtype))
                    off = tk.python_plan(d, lim, tuning=t.replace(RADIX_SHORT_BUILD=False))
                    assert [q.kernel.replace("top_k1_radix_s_", "top_k1_radix_", 1) for q in p.dispatches] == \
                        [q.kernel for q in off.dispatches]
                    assert [(q.push, q.groups, q.spec) for q in off.dispatches] == \
                        [(q.push, q.groups, q.spec) for q in p.dispatches]
    assert seen == set(named), set(named) - seen


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_short_build(dev, rng, dtype):
    """The short build exact against the oracle on 3 rows planned as thousands are (RADIX_ONE_CHUNK_WG_MIN_SEQ 3):
    rows of B + 1, the load block (WG x 16 bytes) - 1 / + 1, 4 B - 1 and 4 B (the longest it takes; 4 B + 1 takes the
    general build), K = 50, 300 and big_k, ties of the K-th key, NaN, constant rows, both directions, with and without
    the register networks (SHUF); the general build (the knob off) agrees."""
    t = TUN.replace(RADIX_ONE_CHUNK_WG_MIN_SEQ=3)
    ev = 16 // np.dtype(dtype).itemsize
    kinds = itertools.cycle(itertools.product(("ties", "nan", "const", "random", "special"), DIRS))
    taken = set()
    ks = sorted({50, 300, big_k(dev)})
    for k in ks:
        for shuffle in (None, False):
            x0 = vkops.TensorDesc(dtype, (3, 2 * k))
            d0 = tk.TopK1Desc(x0, *tk.output_descs(x0, 1, k), 1, k).validate()
            q0 = tk.python_plan(d0, dev.limits, force="radix", shuffle=shuffle, tuning=t).dispatches[0]
            W, B = q0.spec
            for L in sorted({B + 1, W * ev - 1, W * ev + 1, 4 * B - 1, 4 * B, 4 * B + 1}):
                if L <= k:
                    continue
                kind, direction = next(kinds)
                x = large_k_data(rng, dtype, (3, L), kind)
                xd = vkops.TensorDesc(dtype, x.shape)
                d = tk.TopK1Desc(xd, *tk.output_descs(xd, 1, k), 1, k).validate()
                p = tk.python_plan(d, dev.limits, force="radix", shuffle=shuffle, tuning=t)
                if short_build(p, 3, L, t):
                    taken.add((k, p.dispatches[0].kernel))
                for tt in (t, t.replace(RADIX_SHORT_BUILD=False)):
                    v, i = tk._top_k(x, k, -1, direction, force="radix", shuffle=shuffle, tuning=tt)
                    rv, ri = reference.top_k1(x, k, -1, direction)
                    np.testing.assert_array_equal(i, ri, err_msg=f"{dtype} L={L} k={k} {kind} {direction} {shuffle}")
                    assert v.tobytes() == rv.tobytes()
    # both slim builds where the device has subgroup shuffles (the minimum limits: the plain one only), at each K
    mods = {m for _, m in taken}
    sg = dev.limits.has_subgroup(*paths.SHUF_SUBGROUP_OPS)
    assert any("_s_sg_" in m for m in mods) == sg and any("_s_sg_" not in m for m in mods), taken
    assert {k for k, _ in taken} == set(ks), (taken, ks)
