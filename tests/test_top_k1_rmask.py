"""TOP_K1's radix select by bit masks (TopK1Tuning.RADIX_MASK; modules top_k1_radix_m[_sg]_* of 16/32-bit keys,
kernels/top_k1/radix.comp with RADIX_MASK=1: the passes' element loops without break/continue, a thread's valid
elements and the collect pass's survivors as bit masks, one shared atomic a thread's survivors of a block): exact
against reference.top_k1, bit for bit, for float32/float16/int32/uint16 keys, both directions, K around powers of
two, rows around the workgroup, the load block and the chunk (and +-1), strided rows (scalar loads), forced ties
(the position select's windows), constant rows and the sampled guess (its collection, its overshoot past the buffer).
8-bit keys keep top_k1_radix[_sg]_*."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT as TUN

import top_k1_plan_grid as grid
from test_top_k1 import big_k, guess_too_high_row, radix_data

DIRS = ["decreasing", "increasing"]
TM = TUN.replace(RADIX_MASK=True, RADIX_MASK_MIN_L=1)  # on (the default since session 23) on chunks of any length
TOFF = TUN.replace(RADIX_MASK=False)
DTYPES = ["float32", "float16", "int32", "uint16"]
RADIX_LOADS, EPI = 4, paths.EPI  # radix.comp's loads a thread in flight; a chunk is whole steps of WG * EPI


def plan_of(lim, shape, dtype, k, axis=-1, tuning=TM, **kw):
    x = vkops.TensorDesc(dtype, shape)
    a = axis % len(shape)
    d = tk.TopK1Desc(x, *tk.output_descs(x, a, k), a, k).validate()
    return tk.python_plan(d, lim, force="radix", tuning=tuning, **kw)


def check(dev, x, k, axis=-1, direction="decreasing", **kw):
    """Radix select with RADIX_MASK against the oracle, bit for bit; the plan runs the _m module."""
    x = np.asarray(x)
    (disp,) = plan_of(dev.limits, x.shape, x.dtype, k, axis, **kw).dispatches
    assert disp.kernel.startswith("top_k1_radix_m_"), disp.kernel
    v, i = tk._top_k(x, k, axis, direction, force="radix", tuning=TM, **kw)
    rv, ri = reference.top_k1(x, k, axis, direction)
    np.testing.assert_array_equal(i, ri)
    assert v.dtype == x.dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0


def wg(dev):
    return dev.limits.workgroup(TUN.WORKGROUP)


# ---- the plan (host only) ------------------------------------------------------------------------------------
@pytest.mark.host_only
def test_the_knob_plans_the_mask_modules():
    h = grid.H100
    for dtype, s in (("float32", "f32"), ("float16", "f16"), ("int32", "i32"), ("int16", "i16"), ("uint32", "u32"),
                     ("uint16", "u16"), ("int8", "i8"), ("uint8", "u8")):
        for k, sg in ((256, ""), (1024, "_sg")):
            off = plan_of(h, (64, 131072), dtype, k, tuning=TOFF)
            on = plan_of(h, (64, 131072), dtype, k)
            m = "_m" if np.dtype(dtype).itemsize > 1 else ""  # 8-bit keys: no _m builds, the old modules
            assert [d.kernel for d in off.dispatches] == [f"top_k1_radix{sg}_{s}"]
            assert [d.kernel for d in on.dispatches] == [f"top_k1_radix{m}{sg}_{s}"]
            # the same plan otherwise: push words, groups, specialization constants, buffers
            (a,), (b,) = off.dispatches, on.dispatches
            assert (a.push, a.groups, a.spec) == (b.push, b.groups, b.spec)
    # the default tuning plans them wherever the rule picks radix select on chunks of >= RADIX_MASK_MIN_L (rows of
    # 4096 keep the old modules); RADIX_MASK=False never
    assert TUN.RADIX_MASK is True
    for n, L, k in ((64, 131072, 1024), (64, 131072, 2048), (4096, 4096, 256), (4096, 4096, 1024), (64, 32000, 1024),
                    (1, 151936, 50), (64, 4097, 1024)):
        x = vkops.TensorDesc("float32", (n, L))
        d = tk.TopK1Desc(x, *tk.output_descs(x, 1, k), 1, k).validate()
        assert not any("_m_" in q.kernel for q in tk.python_plan(d, h, tuning=TOFF).dispatches)
        p = tk.python_plan(d, h)
        assert any("radix_m_" in q.kernel for q in p.dispatches) == \
            (p.note("path") == "radix" and (n, L) != (4096, 4096)), (n, L, k)
    with pytest.raises(vkops.errors.ValidationError, match="RADIX_MASK must be a bool"):
        TUN.replace(RADIX_MASK=1)


# ---- dtypes x directions x K around powers of two ------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_dtypes_directions_k_around_pow2(dev, rng, dtype, direction):
    x = radix_data(rng, dtype, (2, 5000), "random")
    x[1, ::7] = x[1, 3]  # one value tied a seventh of the row: the K-th key for many K
    for k in (2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, big_k(dev)):
        check(dev, x, k, direction=direction)
    for chunks in (2, 3):
        for k in (129, 300):
            check(dev, x, k, direction=direction, chunks=chunks)


# ---- rows around the workgroup, the load block and the chunk -------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rows_around_the_workgroup_block_and_chunk(dev, rng, dtype):
    W = wg(dev)
    ev = 16 // np.dtype(dtype).itemsize
    block, step = RADIX_LOADS * W * ev, W * EPI  # a thread's loads in flight; a chunk's step
    # L % ev != 0 reads scalars (vec = 0): the strided rows' masks
    for L in (W - 1, W, W + 1, block - 1, block, block + 1, step - 1, step + 1, 2 * step - 1, 2 * step + 1):
        x = radix_data(rng, dtype, (2, L), "random")
        k = min(300, L)
        for direction in DIRS:
            check(dev, x, k, direction=direction)
            check(dev, x, min(k, W + 1), direction=direction, chunks=2 if L > step else None)


# ---- strided rows --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_rows(dev, rng, dtype):
    x = radix_data(rng, dtype, (3001, 3), "random")
    for direction in DIRS:
        check(dev, x, 130, 0, direction)
        check(dev, x, big_k(dev, 700), 0, direction, chunks=2)  # capped by the device's limits (the minimum leg)
    t = radix_data(rng, dtype, (3001, 3), "ties")
    check(dev, t, 257, 0, "decreasing")


# ---- ties ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", DIRS)
def test_forced_ties(dev, rng, dtype, direction):
    # few distinct values: the K-th key resolves fully and the position select narrows windows that start and end
    # inside a 16-byte load
    for levels in (2, 3, 5):
        x = rng.integers(0, levels, (2, 6007)).astype(dtype)
        x[1, 4096:] = x[1, 4096:].max()  # the best keys crowd the row's end
        for k in (127, 128, 129, big_k(dev) if levels == 2 else min(511, big_k(dev)), big_k(dev)):
            check(dev, x, k, direction=direction)
            check(dev, x[:, :6000], k, direction=direction, chunks=3)  # vector loads, 3 chunks
    c = np.full((2, 5000), 7, dtype)  # a constant row: every key tied
    for k in (128, 257, big_k(dev)):
        check(dev, c, k, direction=direction)


# ---- the sampled guess (chunks of >= 2^15 keys) ---------------------------------------------------------------
@pytest.mark.parametrize("dtype,kind", [("float32", "random"), ("float16", "ties"), ("int32", "special"),
                                        ("uint16", "random")])
def test_sampled_guess(dev, rng, dtype, kind):
    x = radix_data(rng, dtype, (1, 1 << 15), kind)
    check(dev, x, 300, direction="decreasing", chunks=1)
    check(dev, x, big_k(dev), direction="increasing", chunks=1)


@pytest.mark.parametrize("direction", DIRS)
def test_sampled_guess_past_the_buffer(dev, rng, direction):
    # a guess that collects more than B: the slots count on past the buffer (stores dropped), then tighter guesses
    x = guess_too_high_row(dev, rng, 1 << 15)
    B = paths.device_path(dev.limits, 1, x.shape[1], 64, force="radix", chunks=1).B
    W = wg(dev)
    x[0, 4 * W:4 * W + B + 52] = 1000.0 + W - 30.5
    x[0, -3:] = 5000.0
    if direction == "increasing":
        x = -x
    check(dev, x, 64, direction=direction, chunks=1)
    for k in (min(256, big_k(dev)), big_k(dev)):
        check(dev, guess_too_high_row(dev, rng, 1 << 15) * (1 if direction == "decreasing" else -1), k,
              direction=direction, chunks=1)


# ---- shuffles or not -----------------------------------------------------------------------------------------
def test_with_and_without_shuffles(dev, rng):
    x = radix_data(rng, "float32", (2, 9000), "ties")
    # the _m_sg modules where the device has subgroup shuffles (not under the minimum limits' leg)
    shuffles = (True, False) if dev.limits.has_subgroup(*paths.SHUF_SUBGROUP_OPS) else (False,)
    for shuffle in shuffles:
        for direction in DIRS:
            check(dev, x, big_k(dev), direction=direction, shuffle=shuffle)
            check(dev, x, big_k(dev, 600), direction=direction, chunks=2, shuffle=shuffle)
