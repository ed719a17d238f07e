"""QuantizedLinearMatMul's NumPy face on device tensors: a repeated call skips the argument normalisation
through a per-device index (vkops/ops/qlmm/face.py) and must do exactly what the normalising path does:
bit-identical results, the same plan key, every error of a bad call, and far fewer Python calls."""
import sys

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.ops.qlmm import face as qface
from vkops.ops.qlmm.tuning import DEFAULT as TUNING
from vkops.runtime import call as call_mod
from vkops.tensor import TensorDesc

I8, U8 = np.int8, np.uint8


def rand_q(rng, shape, dt):
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def calls_of(f) -> int:
    """Python and builtin function calls made by f() (sys.setprofile: deterministic, unlike timings),
    leaving out those under Batch.run, Batch._flush and Device._retire (the submission and its wait,
    which differ by device) and the test harness's own (conftest.py's audit wrappers and what they call beside vkops):
    the host work of recording the call."""
    import os

    from vkops.runtime.device import Device
    from vkops.runtime.submit import Batch

    pkg = os.path.dirname(vkops.__file__)
    # Device._retire: waiting for the oldest of the calls left in flight
    skip_codes = {Batch.run.__code__, Batch._flush.__code__, Device._retire.__code__}
    n = 0
    roots = []  # frames whose calls are left out, innermost last

    def harness(code) -> bool:
        return code.co_filename.endswith("conftest.py")

    def prof(frame, event, arg):
        nonlocal n
        if event == "call":
            code = frame.f_code
            if roots or harness(code):
                return
            if code in skip_codes or (frame.f_back is not None and harness(frame.f_back.f_code)
                                      and not code.co_filename.startswith(pkg)):
                roots.append(frame)
                return
            n += 1
        elif event == "return":
            if roots and roots[-1] is frame:
                roots.pop()
        elif event == "c_call" and not roots and not harness(frame.f_code):
            n += 1

    sys.setprofile(prof)
    try:
        f()
    finally:
        sys.setprofile(None)
    return n


@pytest.fixture
def index(dev):
    """The device's qlmm index, emptied before and after the test."""
    dev._faces.pop("qlmm", None)
    yield lambda: dev._faces.get("qlmm", {})
    dev._faces.pop("qlmm", None)


def _variants(dev, rng):
    """(name, args, kwargs) of device-tensor calls: Python, NumPy and device scales and zero points, out=."""
    a = vkops.to_device(rand_q(rng, (16, 64), I8), dev)
    a3 = vkops.to_device(rand_q(rng, (2, 16, 64), U8), dev)
    b = vkops.to_device(rand_q(rng, (64, 48), I8), dev)
    sa_row = vkops.to_device(rng.uniform(0.01, 0.02, 16).astype(np.float32), dev)
    sb_col = vkops.to_device(rng.uniform(0.01, 0.02, 48).astype(np.float32), dev)
    zb = vkops.to_device(np.array([3], np.int8), dev)
    zo = vkops.to_device(np.array([-2], np.int8), dev)
    out = dev.empty(TensorDesc("int8", (16, 48)))
    out4 = dev.empty(TensorDesc("uint8", (1, 1, 16, 48)))
    return [
        ("python floats", (a, 0.5, None, b, 0.5, None, 4.0, None), {}),
        ("numpy scalars", (a, np.float32(1 / 16), None, b, np.float32(1 / 32), None, np.float32(1.0), None), {}),
        ("python zero points", (a, 0.02, 3, b, 0.03, -5, 0.4, 7), {}),
        ("numpy zero points", (a, 0.02, np.int8(3), b, 0.03, np.int8(-5), 0.4, np.uint8(100)), {}),
        ("device params", (a, sa_row, None, b, sb_col, zb, np.float32(0.5), zo), {}),
        ("out=", (a, 0.5, None, b, 0.5, None, 4.0, None), {"out": out}),
        ("out= 4-D uint8", (a, 0.5, None, b, 0.5, None, 4.0, None), {"out": out4, "output_dtype": np.uint8}),
        ("3-D uint8 a", (a3, 0.05, 128, b, 0.03, None, 0.5, None), {}),
        ("portable, tuning", (a, 0.5, None, b, 0.5, None, 4.0, None), {"kernel": "portable", "tuning": TUNING}),
    ]


def _host(args):
    """NumPy copies of device arguments; 1-D per-row parameters as columns (the oracle broadcasts)."""
    out = [x.numpy() if isinstance(x, vkops.DeviceTensor) else x for x in args]
    return [x.reshape(-1, 1) if i in (1, 2, 6, 7) and isinstance(x, np.ndarray) and x.ndim == 1 and x.size > 1
            else x for i, x in enumerate(out)]


def test_repeated_calls_bit_identical_and_indexed_exactly(dev, rng, index, monkeypatch):
    """Every variant: the indexed call's result equals the normalising call's bit for bit (and the NumPy
    oracle within 1); with CHECK_FAST the index entry equals what the normalisation finds again."""
    for name, args, kw in _variants(dev, rng):
        first = vkops.quantized_linear_matmul(*args, **kw)
        y0 = first.numpy()
        assert index(), name
        n = len(index())
        monkeypatch.setattr(qface, "CHECK_FAST", True)
        vkops.quantized_linear_matmul(*args, **kw)  # a hit, normalised again and compared (raises if not equal)
        monkeypatch.setattr(qface, "CHECK_FAST", False)
        for _ in range(2):
            y = vkops.quantized_linear_matmul(*args, **kw)
            assert y.shape == first.shape and y.dtype == first.dtype, name
            np.testing.assert_array_equal(y.numpy(), y0, err_msg=name)
        if "out" in kw:
            assert y is not None and np.array_equal(kw["out"].numpy().reshape(y0.shape), y0)
        assert len(index()) == n, name  # hits: nothing added
        want = reference.quantized_linear_matmul(*_host(args), output_dtype=kw.get("output_dtype"))
        assert np.abs(y0.astype(np.int32) - want.astype(np.int32).reshape(y0.shape)).max() <= 1, name


def test_index_hits_go_through_the_plan_cache_and_the_same_key(dev, rng, index, monkeypatch):
    """A hit looks up the normalising call's plan key (Call's input_key) in the plan cache and records the
    call without a Call (Call.eager); with the plan gone (other limits clear the cache) it goes through
    Call with that key and plans again, the same plan."""
    a = vkops.to_device(rand_q(rng, (16, 64), I8), dev)
    b = vkops.to_device(rand_q(rng, (64, 48), I8), dev)
    keys = []
    real, real_eager = call_mod.Call.__enter__, call_mod.Call.eager

    def enter(self):
        r = real(self)
        keys.append(("call", self._known_key is not None, self.input_key, self.replayed))
        return r

    def eager(dev_, key, *args):
        r = real_eager(dev_, key, *args)
        keys.append(("eager", True, key, r is not None))
        return r

    monkeypatch.setattr(call_mod.Call, "__enter__", enter)
    monkeypatch.setattr(call_mod.Call, "eager", staticmethod(eager))
    assert not index()
    dev._plans.clear()
    y0 = vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 4.0, None).numpy()
    y1 = vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 4.0, None).numpy()
    dev._plans.clear()
    y2 = vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 4.0, None).numpy()
    vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 4.0, None)
    assert [k[0] for k in keys] == ["call", "eager", "eager", "call", "eager"]
    assert [k[1] for k in keys] == [False, True, True, True, True]
    assert len({k[2] for k in keys}) == 1  # one plan key, computed once
    assert [k[3] for k in keys] == [False, True, False, False, True]  # replanned after the plan cache lost it
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_array_equal(y2, y0)


def test_index_never_serves_a_stale_entry(dev, rng, index):
    """Different scalars, a freed buffer's block reused by another tensor, another tuning or kernel, other
    aliasing: each result equals a call normalised from scratch."""
    b = vkops.to_device(rand_q(rng, (64, 48), I8), dev)

    def fresh(*args, **kw):  # the normalising path: an empty index
        saved = dev._faces.pop("qlmm", None)
        try:
            return vkops.quantized_linear_matmul(*args, **kw).numpy()
        finally:
            if saved is not None:
                dev._faces["qlmm"] = saved

    a = vkops.to_device(rand_q(rng, (16, 64), I8), dev)
    y1 = vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 4.0, None).numpy()
    y2 = vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 2.0, None).numpy()
    y3 = vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, np.float32(2.0), None).numpy()  # same key as y2
    y4 = vkops.quantized_linear_matmul(a, 0.5, 1, b, 0.5, None, 2.0, None).numpy()
    assert not np.array_equal(y1, y2)
    np.testing.assert_array_equal(y2, fresh(a, 0.5, None, b, 0.5, None, 2.0, None))
    np.testing.assert_array_equal(y3, y2)
    np.testing.assert_array_equal(y4, fresh(a, 0.5, 1, b, 0.5, None, 2.0, None))
    assert len(index()) == 4
    # a freed tensor's block, same descriptor and very likely the same serial, holding other values
    serial = a._buffer.serial
    del a
    a2_host = rand_q(rng, (16, 64), I8)
    a2 = vkops.to_device(a2_host, dev)
    y5 = vkops.quantized_linear_matmul(a2, 0.5, None, b, 0.5, None, 4.0, None).numpy()
    want = reference.quantized_linear_matmul(a2_host, 0.5, None, b.numpy(), 0.5, None, 4.0, None)
    assert np.abs(y5.astype(np.int32) - want.astype(np.int32)).max() <= 1
    np.testing.assert_array_equal(y5, fresh(a2, 0.5, None, b, 0.5, None, 4.0, None))
    if a2._buffer.serial == serial:
        assert len(index()) == 4  # indexed by descriptor and serial, not by the buffer: a hit, correct
    # another tuning and another kernel: other entries, other plan keys
    t2 = TUNING.replace(GEMV=False)
    y6 = vkops.quantized_linear_matmul(a2, 0.5, None, b, 0.5, None, 4.0, None, tuning=t2).numpy()
    y7 = vkops.quantized_linear_matmul(a2, 0.5, None, b, 0.5, None, 4.0, None, kernel="portable").numpy()
    np.testing.assert_array_equal(y6, y5)
    np.testing.assert_array_equal(y7, y5)
    entries = list(index().values())
    # every entry its own plan key but y2's and y3's (and y1's and y5's when a2 took another block)
    assert len({e[4] for e in entries}) == len(entries) - 1 - (a2._buffer.serial != serial)
    # aliasing: b passed as both operands (square), then a copy
    sq = vkops.to_device(rand_q(rng, (32, 32), I8), dev)
    sq2 = vkops.to_device(sq.numpy(), dev)
    ya = vkops.quantized_linear_matmul(sq, 0.5, None, sq, 0.5, None, 8.0, None).numpy()
    yb = vkops.quantized_linear_matmul(sq, 0.5, None, sq2, 0.5, None, 8.0, None).numpy()
    np.testing.assert_array_equal(ya, yb)
    keys = [e[4] for e in index().values()]
    assert len(set(keys)) == len(keys) - 1


def _bad_calls(dev, rng):
    """(name, good args, kwargs, the same call with one argument changed to a bad one)."""
    a = vkops.to_device(rand_q(rng, (16, 64), I8), dev)
    b = vkops.to_device(rand_q(rng, (64, 48), I8), dev)
    bk = vkops.to_device(rand_q(rng, (63, 48), I8), dev)
    af = vkops.to_device(rng.standard_normal((16, 64)).astype(np.float32), dev)
    a1 = vkops.to_device(rand_q(rng, (64,), I8), dev)
    out = dev.empty(TensorDesc("int8", (16, 48)))
    out_small = dev.empty(TensorDesc("int8", (16, 47)))
    out_u8 = dev.empty(TensorDesc("uint8", (16, 48)))
    good = (a, 0.5, None, b, 0.5, None, 4.0, None)

    def w(i, v):
        return good[:i] + (v,) + good[i + 1:]

    return good, [
        ("negative scale", w(1, -0.5), {}),
        ("nan scale", w(1, float("nan")), {}),
        ("zero output scale", w(6, 0.0), {}),
        ("bool scale", w(4, True), {}),
        ("numpy nan scale", w(4, np.float32("nan")), {}),
        ("zero point out of range", w(2, 200), {}),
        ("zero point dtype", w(5, np.uint8(3)), {}),
        ("K mismatch", w(3, bk), {}),
        ("float a", w(0, af), {}),
        ("1-D a", w(0, a1), {}),
        ("output_dtype", good, {"output_dtype": np.float32}),
        ("unhashable output_dtype", good, {"output_dtype": [1]}),
        ("kernel", good, {"kernel": "bogus"}),
        ("tuning", good, {"tuning": "fast"}),
        ("out= size", good, {"out": out_small}),
        ("out= dtype", good, {"out": out_u8}),
        ("out= NumPy", good, {"out": np.empty((16, 48), np.int8)}),
    ], out


def _error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return type(e), str(e)
    return None


def test_a_hit_still_raises_for_a_call_one_argument_away(dev, rng, index, monkeypatch):
    """With the good call indexed (with and without out=), each bad call raises exactly what it raises with
    an empty index, and dispatches nothing."""
    good, bad, out = _bad_calls(dev, rng)
    dispatched = []
    real = call_mod.execute
    monkeypatch.setattr(call_mod, "execute", lambda *a: (dispatched.append(1), real(*a)))
    expected = {}
    for name, args, kw in bad:  # the normalising path's errors
        dev._faces.pop("qlmm", None)
        expected[name] = _error(lambda: vkops.quantized_linear_matmul(*args, **kw))
        assert expected[name] is not None, name
    assert not dispatched
    for good_kw in ({}, {"out": out}):
        for _ in range(2):
            vkops.quantized_linear_matmul(*good, **good_kw)
        assert index()
        dispatched.clear()
        for name, args, kw in bad:
            got = _error(lambda: vkops.quantized_linear_matmul(*args, **{**good_kw, **kw}))
            if "out" in kw or not good_kw:
                assert got == expected[name], (name, got, expected[name])
            else:
                assert got is not None and got[0] is expected[name][0], (name, got)
        assert not dispatched
    assert vkops.quantized_linear_matmul(*good) is not None


def test_a_hit_still_checks_devices(dev, rng, index):
    """Call's own checks run on the indexed path too: an `out=` of another device's is refused."""
    good, _, out = _bad_calls(dev, rng)
    vkops.quantized_linear_matmul(*good, out=out)
    vkops.quantized_linear_matmul(*good, out=out)

    class Other:
        name = "other"

    out_other = vkops.DeviceTensor(out._buffer, out.desc, Other())
    with pytest.raises(vkops.ValidationError, match="out must be a DeviceTensor on"):
        vkops.quantized_linear_matmul(*good, out=out_other)


@pytest.mark.parametrize("variant", ["python floats", "numpy scalars", "device params", "out="])
def test_repeated_call_python_calls(dev, rng, index, variant):
    """Python calls of a repeated device-tensor call, its submission and wait (which differ by device) left
    out: issue 36's host work of recording it. The normalising path made 190-230 (2026-11-25, lavapipe),
    the indexed path 69-87. A bound with margin, and the ratio to the normalising path (the index
    emptied before each call) on the same machine."""
    name, args, kw = next(v for v in _variants(dev, rng) if v[0] == variant)
    f = lambda: vkops.quantized_linear_matmul(*args, **kw)  # noqa: E731

    def slow():
        dev._faces.pop("qlmm", None)
        f()

    from vkops.runtime.device import ASYNC_MAX

    for _ in range(ASYNC_MAX + 3):  # outputs rotate through the buffers the calls in flight hold
        f()
    fast = min(calls_of(f) for _ in range(3))
    normalising = min(calls_of(slow) for _ in range(3))
    assert fast <= 110, (variant, fast, normalising)
    assert fast <= 0.5 * normalising, (variant, fast, normalising)
