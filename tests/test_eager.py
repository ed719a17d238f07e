"""The eager shortcut (runtime/call.py `eager`): a repeated call on device tensors outside a graph capture, whose
complete plan key an operator's own index gives (qlmm's argument index; top_k's and slice's key and input
descriptor), records without a Call (into the open batch, if any). Checked: which calls take it, that they equal
the general path's bits, and each case that must go the general way (a graph capture, an evicted plan, a new
descriptor)."""
import numpy as np
import pytest

import vkops
from vkops.runtime import call as call_mod


@pytest.fixture
def counted(monkeypatch):
    """Counts of Calls made and of Call.eager's answers (served or passed on), per test."""
    seen = {"call": 0, "served": 0, "passed": 0}
    real_init, real_eager = call_mod.Call.__init__, call_mod.Call.eager

    def init(self, *a, **kw):
        seen["call"] += 1
        real_init(self, *a, **kw)

    def eager(*a, **kw):
        r = real_eager(*a, **kw)
        seen["served" if r is not None else "passed"] += 1
        return r

    monkeypatch.setattr(call_mod.Call, "__init__", init)
    monkeypatch.setattr(call_mod.Call, "eager", staticmethod(eager))
    return seen


def _ops(dev, rng):
    """name: (device-tensor call taking an optional out=, the NumPy call, the out= tensors' descriptors)"""
    xf = rng.standard_normal((4, 300)).astype(np.float32)
    xf[:, 100:140] = 0.5  # ties around the K-th value
    a8 = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    b8 = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    x, a, b = dev.tensor(xf), dev.tensor(a8), dev.tensor(b8)
    q = (0.02, 3, 0.02, -7, 0.5, 1)
    return {
        "top_k": (lambda out=None: vkops.top_k(x, 9, out=out), lambda: vkops.top_k(xf, 9),
                  (vkops.TensorDesc("float32", (4, 9)), vkops.TensorDesc("uint32", (4, 9)))),
        "slice": (lambda out=None: vkops.slice(x, (0, 1), (4, 290), (-1, 3), out=out),
                  lambda: vkops.slice(xf, (0, 1), (4, 290), (-1, 3)), (vkops.TensorDesc("float32", (4, 97)),)),
        "qlmm": (lambda out=None: vkops.quantized_linear_matmul(a, q[0], q[1], b, q[2], q[3], q[4], q[5], out=out),
                 lambda: vkops.quantized_linear_matmul(a8, q[0], q[1], b8, q[2], q[3], q[4], q[5]),
                 (vkops.TensorDesc("int8", (16, 32)),)),
    }


def _bits(r):
    return [t.numpy().tobytes() for t in (r if isinstance(r, tuple) else (r,))]


def _want(ref):
    r = ref()
    return [t.tobytes() for t in (r if isinstance(r, tuple) else (r,))]


@pytest.mark.parametrize("op", ["top_k", "slice", "qlmm"])
def test_repeated_device_calls_take_the_shortcut(dev, rng, counted, op):
    """The first call goes through a Call; each repeat (with fresh or given out= tensors) is served without
    one and gives the NumPy call's bits."""
    call, ref, out_descs = _ops(dev, rng)[op]
    want = _want(ref)
    assert _bits(call()) == want
    calls = counted["call"]
    for _ in range(3):
        assert _bits(call()) == want
    assert counted["call"] == calls and counted["served"] == 3
    outs = tuple(dev.empty(d) for d in out_descs)
    out = outs if len(outs) > 1 else outs[0]
    r = call(out)  # a new key (the out= descriptors): the general path once
    assert counted["call"] == calls + 1
    assert all(x._buffer is y._buffer for x, y in zip(r if isinstance(r, tuple) else (r,), outs))
    assert _bits(r) == want
    r = call(out)  # the same out= tensors again: served
    assert counted["call"] == calls + 1 and counted["served"] == 4 and _bits(r) == want
    # The same descriptors over other buffers: served for top_k and slice (their key holds descriptors);
    # qlmm's index keys its arguments' buffers, so its first call with them normalises once.
    other = tuple(dev.empty(d) for d in out_descs)
    other = other if len(other) > 1 else other[0]
    for _ in range(2):
        r = call(other)
        assert all(x._buffer is y._buffer for x, y in zip(r if isinstance(r, tuple) else (r,),
                                                          other if isinstance(other, tuple) else (other,)))
        assert _bits(r) == want
    assert counted["call"] == calls + 1 + (op == "qlmm")
    assert counted["served"] == 6 - (op == "qlmm")


@pytest.mark.parametrize("op", ["top_k", "slice", "qlmm"])
def test_batches_captures_and_evicted_plans_take_the_general_path(dev, rng, counted, op):
    """Inside a batch a repeat is served into the batch; inside a graph capture, and once the plan cache has
    lost the plan, it goes through a Call; the same bits every way."""
    call, ref, _ = _ops(dev, rng)[op]
    want = _want(ref)
    call()
    n = counted["call"]
    served = counted["served"]
    with dev.batch():
        r = call()
        r2 = call()
    assert counted["call"] == n and counted["served"] == served + 2 and _bits(r) == want and _bits(r2) == want
    with dev.graph() as g:
        r = call()
    g.run()
    assert counted["call"] == n + 1 and _bits(r) == want
    dev._plans.clear()
    assert _bits(call()) == want
    assert counted["call"] == n + 2
    assert _bits(call()) == want
    assert counted["call"] == n + 2


def test_a_chain_of_shortcut_calls_is_ordered(dev, rng, counted):
    """Shortcut calls in flight that feed each other (top_k's values into slice, overwritten in place by
    the next top_k with out=) read what the one before wrote."""
    xs = [rng.standard_normal((8, 1000)).astype(np.float32) for _ in range(4)]
    x = dev.tensor(xs[0])
    vals, idx = dev.empty(vkops.TensorDesc("float32", (8, 16))), dev.empty(vkops.TensorDesc("uint32", (8, 16)))
    got = []
    for i in range(4):
        x.upload(xs[i])
        vkops.top_k(x, 16, out=(vals, idx))
        got.append(vkops.slice(vals, (0, 0), (8, 16), (1, -1)))
    assert counted["served"] >= 6
    for i in range(4):
        v, _ = vkops.top_k(xs[i], 16)
        np.testing.assert_array_equal(got[i].numpy(), v[:, ::-1])


def test_a_new_parameter_or_descriptor_is_validated(dev, rng, counted):
    """A repeat whose parameters or input descriptor differ finds no key: validated by the general path."""
    x = dev.tensor(rng.standard_normal((4, 300)).astype(np.float32))
    vkops.top_k(x, 9)
    vkops.top_k(x, 9)
    with pytest.raises(vkops.ValidationError, match="k"):
        vkops.top_k(x, 301)
    with pytest.raises(vkops.ValidationError, match="axis"):
        vkops.top_k(x, 9, axis=2)
    with pytest.raises(vkops.ValidationError, match="input_window"):
        vkops.slice(x.reshape((2, 600)), (0, 0), (4, 300), (1, 1))
    assert counted["served"] == 1


def test_top_k_argument_memo_is_exact(dev, rng, counted):
    """top_k's memo of argument sets (each value with its class) serves only the same arguments: k=True
    after k=1 is refused, largest=False and direction="increasing" give the smallest, each the NumPy bits."""
    xf = rng.standard_normal((4, 300)).astype(np.float32)
    xf[:, ::7] = 0.25  # ties
    x = dev.tensor(xf)
    for _ in range(2):
        vkops.top_k(x, 1)
    with pytest.raises(vkops.ValidationError, match="integer"):
        vkops.top_k(x, True)
    for kw in ({"largest": False}, {"direction": "increasing"}, {"largest": True}, {}):
        want = [t.tobytes() for t in vkops.top_k(xf, 5, **kw)]
        for _ in range(3):
            assert _bits(vkops.top_k(x, 5, **kw)) == want, kw
    with pytest.raises(vkops.ValidationError, match="disagree"):
        vkops.top_k(x, 5, direction="increasing", largest=True)
    assert counted["served"] >= 9


def test_a_failed_allocation_names_the_operator_and_leaves_nothing_recorded(dev, rng, counted, monkeypatch):
    """An allocation refused inside the shortcut raises the device's error naming the operator; nothing was
    submitted, and the next call runs."""
    from vkops.errors import DeviceMemoryError

    x = dev.tensor(rng.standard_normal((4, 300)).astype(np.float32))
    want = _bits(vkops.top_k(x, 9))
    real = type(dev._memory).get

    def refuse(self, words):
        raise DeviceMemoryError("no memory for this test")

    s0 = dev.stats()["submissions"]
    monkeypatch.setattr(type(dev._memory), "get", refuse)
    with pytest.raises(DeviceMemoryError, match=r"^vkops\.top_k: no memory for this test"):
        vkops.top_k(x, 9)
    monkeypatch.setattr(type(dev._memory), "get", real)
    assert dev.stats()["submissions"] == s0 and counted["passed"] == 0
    assert _bits(vkops.top_k(x, 9)) == want
