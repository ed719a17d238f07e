"""SLICE1 against NumPy fancy indexing (vkops.reference.slice1), bit for bit."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops import slice1 as slice_mod

# CI legs (conftest.py): SLICE1's kernel has no subgroup operations and its plans read workgroup and grid limits only.
pytestmark = pytest.mark.subgroup_free

DTYPES = ["float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8"]
SPEC_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def random_array(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        # Raw bit patterns (NaNs, infs, -0.0 included): a slice must copy bits, not values.
        bits = rng.integers(0, 2 ** (8 * dt.itemsize), size=shape, dtype=np.uint64)
        return bits.astype(f"u{dt.itemsize}").view(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def random_window(rng, shape):
    offs, sizes, strides, outs = [], [], [], []
    for n in shape:
        off = int(rng.integers(0, n))
        sz = int(rng.integers(1, n - off + 1))
        st = int(rng.choice([1, 1, 2, 3, -1, -2, 5])) * (1 if rng.random() < 0.7 else -1)
        mx = 1 + (sz - 1) // abs(st)
        out = mx if rng.random() < 0.7 else int(rng.integers(1, mx + 1))
        offs.append(off), sizes.append(sz), strides.append(st), outs.append(out)
    return offs, sizes, strides, outs


def check(x, offs, sizes, strides, outs=None):
    got = vkops.slice(x, offs, sizes, strides, outs)
    want = reference.slice1(x, offs, sizes, strides, outs)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (offs, sizes, strides, outs)


def test_spec_example_1_positive_strides():
    out = vkops.slice(SPEC_INPUT, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2])
    np.testing.assert_array_equal(out, np.array([[[[2, 4], [10, 12]]]], dtype=np.float32))


def test_spec_example_2_negative_strides():
    out = vkops.slice(SPEC_INPUT, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])
    np.testing.assert_array_equal(out, np.array([[[[14, 16], [6, 8]]]], dtype=np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", range(1, 9))
def test_random_against_numpy(rng, dtype, rank):
    for _ in range(3):
        shape = tuple(int(v) for v in rng.integers(1, {1: 300, 2: 40, 3: 14}.get(rank, 5), size=rank))
        x = random_array(rng, shape, dtype)
        check(x, *random_window(rng, shape))


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32"])
def test_odd_byte_counts_and_size_one_dims(rng, dtype):
    for shape in [(1,), (3,), (5, 1, 7), (1, 1, 1, 1, 1, 1, 1, 1), (7, 1, 3, 1)]:
        x = random_array(rng, shape, dtype)
        check(x, [0] * len(shape), list(shape), [1] * len(shape))
        check(x, [0] * len(shape), list(shape), [-1] * len(shape))


# One workgroup covers WORKGROUP * WORDS_PER_THREAD output words; rows of WORKGROUP words switch to
# row mode and rows of 4 * WORKGROUP words to 16-byte vectors.
GROUP_WORDS = slice_mod.DEFAULT.WORKGROUP * slice_mod.DEFAULT.WORDS_PER_THREAD
WG = slice_mod.DEFAULT.WORKGROUP


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32"])
@pytest.mark.parametrize("words", [GROUP_WORDS - 1, GROUP_WORDS, GROUP_WORDS + 1, WG - 1, WG, WG + 1,
                                   4 * WG - 4, 4 * WG, 4 * WG + 4, 4 * GROUP_WORDS + 4])
def test_workgroup_boundaries(rng, dtype, words):
    per_word = 4 // np.dtype(dtype).itemsize
    n = words * per_word
    x = random_array(rng, (3, n + 2), dtype)
    check(x, [0, 0], [3, n], [1, 1])  # rows that are word runs (vector or row mode)
    check(x, [0, 1], [3, n], [-1, 1])  # unaligned rows
    check(x, [0, 0], [3, n + 2], [1, 2])  # stride 2
    check(x, [0, 2], [3, n], [1, -1])  # reversed rows
    check(x.reshape(-1), [0], [3 * n], [1], [3 * n - 1])  # output smaller than the window


def test_output_smaller_than_window(rng):
    x = random_array(rng, (9, 10, 11), "int16")
    check(x, [1, 0, 2], [8, 10, 9], [3, -2, 4], [2, 4, 1])


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32"])
def test_strided_numpy_inputs(rng, dtype):
    base = random_array(rng, (20, 31), dtype)
    check(base.T, [1, 2], [20, 15], [2, -3])  # transposed view
    check(base[::2, 1::3], [0, 0], [10, 10], [-1, 1])  # strided view
    bcast = np.broadcast_to(base[3], (6, 31))  # stride 0
    check(bcast, [0, 0], [6, 31], [1, -1])


def test_strided_device_tensor_views(dev, rng):
    host = random_array(rng, (12, 10), "uint16")
    t = vkops.to_device(host, dev)
    tr = t.as_strided((10, 12), (1, 10))
    got = vkops.slice(tr, [0, 0], [10, 12], [1, 1]).numpy()
    np.testing.assert_array_equal(got, host.T)
    bc = t.as_strided((4, 10), (0, 1))
    got = vkops.slice(bc, [0, 0], [4, 10], [1, -1]).numpy()
    np.testing.assert_array_equal(got, np.broadcast_to(host[0, ::-1], (4, 10)))


def test_large_past_workgroup_grid(rng):
    # More output words than 65535 workgroups x 256 threads: the grid goes 2-D.
    n = 65535 * 256 * 4 + 4 * 1000 + 3
    x = rng.integers(0, 255, size=n, dtype=np.uint8)
    got = vkops.slice(x, [1], [n - 1], [-1])  # reversed, unaligned: the generic path
    assert np.array_equal(got, x[1:][::-1])
    got = vkops.slice(x.reshape(1, n), [0, 3], [1, n - 3], [1, 1])
    assert np.array_equal(got[0], x[3:])


def test_byte_size_up_to_max_storage_buffer_range(dev, rng):
    limit = dev.max_storage_buffer_range
    n = min(limit, 2**28)  # lavapipe: 128 MiB; a GPU: 256 MiB here, 2^28 fp32 elements in bench/
    x = np.empty(n, np.uint8)
    x[:] = np.arange(n, dtype=np.uint32).astype(np.uint8)
    x[::4097] = 7
    got = vkops.slice(x.reshape(-1, 4096), [0, 1], [n // 4096, 4095], [-1, 2])
    assert np.array_equal(got, x.reshape(-1, 4096)[::-1, 1::2])


def test_beyond_max_storage_buffer_range_is_a_clear_error(dev):
    n = dev.max_storage_buffer_range + 4
    if n > 2**31:
        pytest.skip("this device binds more than 2 GiB")
    x = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (n,), (0,))  # no host memory needed
    x = np.ascontiguousarray(x[: n])
    with pytest.raises(vkops.DeviceLimitError, match="maxStorageBufferRange"):
        vkops.slice(x, [0], [n], [1])


# ---------------------------------------------------------------------------------- validation
def desc(in_sizes=(1, 1, 4, 4), out_sizes=(1, 1, 2, 2), offs=(0, 0, 0, 1), sizes=(1, 1, 4, 3),
         strides=(1, 1, 2, 2), in_dt="float32", out_dt="float32", out_strides=None):
    return vkops.Slice1Desc(vkops.TensorDesc(in_dt, in_sizes), vkops.TensorDesc(out_dt, out_sizes, out_strides),
                            offs, sizes, strides)


@pytest.mark.parametrize("kwargs, message", [
    (dict(out_sizes=(1, 2, 2)), r"Slice1Desc.output must have the input's DimensionCount 4; got 3"),
    (dict(out_dt="float16"), r"Slice1Desc.output.data_type must equal input.data_type FLOAT32; got FLOAT16"),
    (dict(offs=(0, 0, 0)), r"Slice1Desc.input_window_offsets must have DimensionCount=4 entries; got 3"),
    (dict(sizes=(1, 1, 0, 3)), r"Slice1Desc.input_window_sizes must be >= 1 .*got 0 at dimension 2"),
    (dict(offs=(0, 0, 2, 1)), r"offsets \+ input_window_sizes must be <= input sizes; got 2 \+ 4 > 4 at dimension 2"),
    (dict(offs=(0, 0, -1, 1)), r"Slice1Desc.input_window_offsets must be >= 0; got -1 at dimension 2"),
    (dict(strides=(1, 1, 0, 2)), r"Slice1Desc.input_window_strides must be nonzero; got 0 at dimension 2"),
    (dict(out_sizes=(1, 1, 3, 2)), r"1 <= OutputSizes\[i\] <= MaxCopiedElements\[i\]; got 3 at dimension 2 "
                                   r"with MaxCopiedElements \(1, 1, 2, 2\)"),
    (dict(out_strides=(4, 4, 1, 2)), r"Slice1Desc.output.strides must be packed"),
])
@pytest.mark.host_only
def test_each_rule_violated(kwargs, message):
    with pytest.raises(vkops.ValidationError, match=message):
        desc(**kwargs).validate()


@pytest.mark.parametrize("sizes, message", [
    ((), r"sizes must have 1 to 8 dimensions; got 0"),
    ((1,) * 9, r"sizes must have 1 to 8 dimensions; got 9"),
    ((2, 0), r"sizes must all be >= 1; got \(2, 0\)"),
])
@pytest.mark.host_only
def test_tensor_desc_rules(sizes, message):
    with pytest.raises(vkops.ValidationError, match=message):
        vkops.TensorDesc("float32", sizes)


def test_invalid_call_dispatches_nothing(dev, monkeypatch):
    calls = []
    for name in ("dispatch", "record", "upload", "scratch_words", "copy"):  # every way work enters a batch
        real = getattr(vkops.Batch, name)
        monkeypatch.setattr(vkops.Batch, name, lambda *a, name=name, real=real, **k: (calls.append(name), real(*a, **k))[1])
    vkops.slice(SPEC_INPUT, [0, 0, 0, 0], [1, 1, 4, 4], [1, 1, 1, 1])  # a valid call is seen
    assert "record" in calls and "upload" in calls  # plans enter as prepared recordings (runtime/execute.py)
    calls.clear()
    with pytest.raises(vkops.ValidationError, match="input_window_strides must be nonzero"):
        vkops.slice(SPEC_INPUT, [0, 0, 0, 0], [1, 1, 4, 4], [1, 1, 0, 1])
    with pytest.raises(vkops.ValidationError, match="MaxCopiedElements"):
        vkops.slice(SPEC_INPUT, [0, 0, 0, 0], [1, 1, 4, 4], [1, 1, 1, 1], [1, 1, 5, 4])
    assert calls == []


@pytest.mark.host_only
def test_validation_runs_without_a_device():
    import subprocess
    import sys

    code = ("import sys; sys.modules['kp'] = None\n"  # importing kp would fail
            "import vkops\n"
            "vkops.Slice1Desc(vkops.TensorDesc('int8', (4, 4)), vkops.TensorDesc('int8', (2, 4)), (0, 0), (4, 4),"
            " (2, 1)).validate()\n"
            "try:\n"
            "    vkops.Slice1Desc(vkops.TensorDesc('int8', (4,)), vkops.TensorDesc('int8', (3,)), (0,), (4,), (2,)).validate()\n"
            "except vkops.ValidationError as e:\n"
            "    print('rejected:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "rejected: Slice1Desc.output.sizes" in r.stdout


def test_tuning_is_data_in_the_plan():
    """Slice1Tuning (WORKGROUP, WORDS_PER_THREAD) steers the plan through tuning=, validated naming the field."""
    from vkops.errors import ValidationError
    from vkops.limits import PROFILES
    from vkops.tensor import TensorDesc

    d = slice_mod.Slice1Desc(TensorDesc("float32", (64, 4096)), TensorDesc("float32", (64, 4096)), (0, 0),
                             (64, 4096), (1, 1)).validate()
    lim = PROFILES["minimum"]
    base = slice_mod.plan(d, lim)
    assert base == slice_mod.plan(d, lim, tuning=slice_mod.DEFAULT) and base.dispatches[0].spec == (128, 4)
    assert slice_mod.plan(d, lim, tuning=slice_mod.DEFAULT.replace(WORKGROUP=64, WORDS_PER_THREAD=2)).dispatches[0].spec == (64, 2)
    for kw, msg in (({"WORKGROUP": 96}, "Slice1Tuning.WORKGROUP must be a power of two .*; got 96"),
                    ({"WORDS_PER_THREAD": 0}, "Slice1Tuning.WORDS_PER_THREAD must be an int >= 1; got 0"),
                    ({"VEC": 1}, "no SLICE1 knob 'VEC'")):
        with pytest.raises(ValidationError, match=msg):
            slice_mod.DEFAULT.replace(**kw)
    # the benchmarks' variants take the same tuning (`knobs`), checked before the sweep
    from vkops.bench.specs import Slice

    assert Slice.tuning({"WORDS_PER_THREAD": 2}) == slice_mod.DEFAULT.replace(WORDS_PER_THREAD=2)
    with pytest.raises(ValidationError, match="no SLICE1 knob 'VEC'"):
        Slice.variant(knobs={"VEC": 1})
