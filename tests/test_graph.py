"""Captured graphs (vkops/runtime/graph.py): calls recorded once, each run one submission that makes
nothing new, bit-identical to the same calls made eagerly; feeds, lifetimes, ordering, threads, errors."""
import gc
import sys
import threading

import numpy as np
import pytest

import vkops
from vkops.runtime import graph as graph_mod

STAGES = [None, True]  # feeds written into mapped memory (lavapipe's way) / through recorded staging copies

QLMM_ARGS = dict(a_scale=0.05, a_zero_point=3, b_scale=0.02, b_zero_point=-7, output_scale=0.4,
                 output_zero_point=-5)


def _qlmm(a, b):
    p = QLMM_ARGS
    return vkops.quantized_linear_matmul(a, p["a_scale"], p["a_zero_point"], b, p["b_scale"], p["b_zero_point"],
                                         p["output_scale"], p["output_zero_point"])


def _chain(x):
    """slice -> top_k: the slice's output is a graph temporary when captured."""
    return vkops.top_k(vkops.slice(x, [0, 1], [4, 60], [1, 2]), 7)


def _delta(s0, s1):
    return {k: s1[k] - s0[k] for k in s1 if s1[k] != s0[k]}


@pytest.fixture(params=STAGES, ids=["mapped", "staged"])
def stage(request, monkeypatch):
    monkeypatch.setattr(graph_mod, "STAGE_FEEDS", request.param)
    return request.param


def test_replay_is_one_submission_and_creates_nothing(dev, rng, stage):
    x = dev.tensor(rng.standard_normal((4, 61)).astype(np.float32))
    s0 = dev.stats()
    with dev.graph() as g:
        for _ in range(4):  # more dispatches than a batch records before it starts submitting
            v, i = _chain(x)
    assert dev.stats()["submissions"] == s0["submissions"] and g.runs == 0  # capturing ran nothing
    g.run(feed={x: rng.standard_normal((4, 61)).astype(np.float32)})  # a staged feed records its sequence once
    for feed in ({x: rng.standard_normal((4, 61)).astype(np.float32)}, None):
        s0, p0 = dev.stats(), dev._plans.stored
        g.run(feed=feed)
        assert _delta(s0, dev.stats()) == {"submissions": 1}  # no plan, pipeline, Algorithm, buffer, sequence
        assert dev._plans.stored == p0
    assert g.runs == 3


@pytest.mark.parametrize("op", ["slice", "top_k_ties", "qlmm_zero_points", "chain"])
def test_replays_equal_eager_bit_for_bit(dev, rng, stage, op):
    if op == "slice":
        make = lambda: rng.integers(-1000, 1000, (5, 33)).astype(np.int16)
        def call(x): return vkops.slice(x, [1, 2], [4, 30], [-1, 3])
    elif op == "top_k_ties":  # values from 4 levels: every row is full of ties
        make = lambda: rng.integers(0, 4, (3, 200)).astype(np.float32)
        def call(x): return vkops.top_k(x, 17)
    elif op == "qlmm_zero_points":
        w = rng.integers(-128, 128, (64, 24)).astype(np.int8)
        wt = dev.tensor(w)
        make = lambda: rng.integers(-128, 128, (2, 64)).astype(np.int8)
        def call(x): return _qlmm(x, wt if isinstance(x, vkops.DeviceTensor) else w)
    else:
        make = lambda: rng.standard_normal((4, 61)).astype(np.float32)  # noqa: E731
        call = _chain
    first = make()
    x = dev.tensor(first)
    with dev.graph() as g:
        outs = call(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    gc.collect()  # the chain's middle tensor is referenced by the graph alone
    for r in range(4):
        data = first if r == 0 else make()
        g.run(feed=None if r == 0 else {x: data})  # the first run uses the tensor's own contents
        want = call(data)
        want = want if isinstance(want, tuple) else (want,)
        for got, ref in zip(outs, want):
            a = got.numpy()
            assert a.dtype == ref.dtype and a.shape == ref.shape
            assert a.tobytes() == ref.tobytes(), f"replay {r} differs from the eager call"


def test_captured_tensors_stay_alive_when_the_user_drops_them(dev, rng):
    """The graph holds every buffer it recorded: a dropped weight's block is not handed out again."""
    w = rng.integers(-128, 128, (64, 24)).astype(np.int8)
    wt = dev.tensor(w)
    x = dev.tensor(np.zeros((2, 64), np.int8))
    with dev.graph() as g:
        out = _qlmm(x, wt)
    del wt
    gc.collect()
    junk = [dev.tensor(np.full((64, 24), 99, np.int8)) for _ in range(8)]  # would take a freed block
    a = rng.integers(-128, 128, (2, 64)).astype(np.int8)
    g.run(feed={x: a})
    assert out.numpy().tobytes() == _qlmm(a, w).tobytes()
    del junk


def test_feed_errors_name_the_tensor_rule_and_values(dev, rng):
    x = dev.tensor(np.zeros((4, 61), np.float32))
    with dev.graph() as g:
        v, i = _chain(x)
    label = r"x of call 1 \(slice\)"
    with pytest.raises(vkops.ValidationError, match=label + r"\]\.shape must be \(4, 61\) \(the captured tensor's\); "
                       r"got \(4, 62\)"):
        g.run(feed={x: np.zeros((4, 62), np.float32)})  # "resized"
    with pytest.raises(vkops.ValidationError, match=label + r"\]\.dtype must be float32 .*; got float64"):
        g.run(feed={x: np.zeros((4, 61))})
    x2 = dev.tensor(np.zeros((4, 61), np.float32))  # a replacement: not what was captured
    with pytest.raises(vkops.ValidationError, match=r"must be an input of this graph .*no captured call uses it\. "
                       r"Its inputs: x of call 1 \(slice\)"):
        g.run(feed={x2: np.zeros((4, 61), np.float32)})
    with pytest.raises(vkops.ValidationError, match=r"the graph writes it before reading it"):
        g.run(feed={v: np.zeros(v.shape, np.float32)})  # an output
    with pytest.raises(vkops.ValidationError, match=r"feed keys must be DeviceTensors"):
        g.run(feed={"x": np.zeros((4, 61), np.float32)})
    with pytest.raises(vkops.ValidationError, match=r"feed\[.*\] must be a packed tensor"):
        g.run(feed={x.as_strided((4, 30), (61, 2)): np.zeros((4, 30), np.float32)})
    s0 = dev.stats()
    good = rng.standard_normal((4, 61)).astype(np.float32)
    with pytest.raises(vkops.ValidationError):  # nothing is written unless every entry is valid
        g.run(feed={x: good, x2: good})
    assert dev.stats()["submissions"] == s0["submissions"] and not np.array_equal(x.numpy(), good)
    g.close()
    with pytest.raises(RuntimeError, match="this graph was closed"):
        g.run()


def test_capture_errors(dev, rng):
    x = dev.tensor(np.zeros((4, 61), np.float32))
    with dev.batch():
        with pytest.raises(RuntimeError, match="cannot capture inside an open batch or graph"):
            with dev.graph():
                pass
    with dev.graph() as g:
        with pytest.raises(RuntimeError, match="cannot capture inside an open batch or graph"):
            with dev.graph():
                pass
        with pytest.raises(RuntimeError, match="cannot open a batch while capturing a graph"):
            with dev.batch():
                pass
        with pytest.raises(vkops.ValidationError, match=r"vkops\.top_k: x must be a DeviceTensor while capturing "
                           r"a graph .*got a NumPy array of float32 \(4, 61\)"):
            vkops.top_k(np.zeros((4, 61), np.float32), 3)
        with pytest.raises(vkops.ValidationError, match=r"vkops\.qlmm: b must be a DeviceTensor"):
            _qlmm(dev.tensor(np.zeros((2, 64), np.int8)), np.zeros((64, 24), np.int8))
        v, _ = vkops.top_k(x, 3)
        with pytest.raises(RuntimeError, match="has not run yet"):  # nothing ran during the capture
            v.numpy()
        with pytest.raises(RuntimeError, match="still capturing"):
            g.run()
    g.run()
    with pytest.raises(RuntimeError, match="captured once"):
        with g:
            pass
    with pytest.raises(ZeroDivisionError):
        with dev.graph() as bad:
            vkops.top_k(x, 3)
            1 / 0
    with pytest.raises(RuntimeError, match="closed"):
        bad.run()


def test_runs_are_ordered_with_eager_calls_and_batches(dev, rng):
    src = dev.tensor(rng.integers(-50, 50, (4, 61)).astype(np.float32))
    x = dev.tensor(np.zeros((4, 61), np.float32))
    with dev.graph() as g:
        v, i = _chain(x)
    # A batch writes the graph's input before the run, and reads its output after it, in one block.
    with dev.batch():
        vkops.slice(src, [0, 0], [4, 61], [-1, 1], out=x)
        g.run()
        top = vkops.top_k(v, 2)[0]
        copy = vkops.slice(v, [0, 0], list(v.shape), [1, 1])
    want_v, want_i = _chain(src.numpy()[::-1])
    assert v.numpy().tobytes() == want_v.tobytes() and i.numpy().tobytes() == want_i.tobytes()
    assert top.numpy().tobytes() == want_v[:, :2].tobytes() and copy.numpy().tobytes() == want_v.tobytes()
    # An eager write before, an eager read right after.
    vkops.slice(src, [0, 0], [4, 61], [1, -1], out=x)
    g.run()
    assert vkops.top_k(v, 1)[0].numpy().tobytes() == _chain(src.numpy()[:, ::-1])[0][:, :1].tobytes()


def test_graph_survives_the_algorithm_lru(dev, rng, monkeypatch):
    """Eager calls on other buffers push the graph's Algorithms out of a small LRU: they are pinned,
    so the recorded command buffer still binds live descriptor sets (the validation layer watches)."""
    from vkops.runtime import pipelines

    monkeypatch.setattr(pipelines, "ALGORITHM_CACHE_SIZE", 2)
    x = dev.tensor(np.zeros((4, 61), np.float32))
    with dev.graph() as g:
        v, i = _chain(x)
    for _ in range(6):
        _chain(dev.tensor(rng.standard_normal((4, 61)).astype(np.float32)))
    a = rng.standard_normal((4, 61)).astype(np.float32)
    g.run(feed={x: a})
    assert v.numpy().tobytes() == _chain(a)[0].tobytes()
    g.close()
    assert not dev._pipelines._pinned


@pytest.mark.parametrize("shared", [True, False], ids=["one_graph", "graph_per_thread"])
def test_runs_from_threads(dev, rng, stage, shared):
    inputs = [rng.integers(-20, 20, (4, 61)).astype(np.float32) for _ in range(8)]
    wants = [_chain(a) for a in inputs]

    def capture():
        x = dev.tensor(np.zeros((4, 61), np.float32))
        with dev.graph() as g:
            v, i = _chain(x)
        return g, x, v, i

    graphs = [capture()] if shared else [capture() for _ in range(4)]
    errors = []

    def worker(t):
        g, x, v, i = graphs[0 if shared else t]
        try:
            for r in range(20):
                k = (t * 3 + r) % len(inputs)
                gv, gi = g.run(feed={x: inputs[k]}, fetch=[v, i])
                if gv.tobytes() != wants[k][0].tobytes() or gi.tobytes() != wants[k][1].tobytes():
                    errors.append((t, r))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    s0 = dev.stats()["submissions"]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between any two Python steps of a run, not every 5 ms
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert sum(g.runs for g, *_ in graphs) == 80
    assert dev.stats()["submissions"] - s0 >= 80


@pytest.mark.parametrize("op", ["chain", "qlmm_view"])
def test_run_with_feed_and_fetch_is_one_submission(dev, rng, stage, op):
    """run(feed=, fetch=) reads its outputs in the graph's own submission (staged copies recorded at the
    end of the graph, or mapped memory): one submission and nothing made per run after the first."""
    if op == "chain":
        make = lambda: rng.standard_normal((4, 61)).astype(np.float32)  # noqa: E731
        call = _chain
    else:  # a fetched view (QLinearMatMul's output reshaped) and a slice of it
        w = rng.integers(-128, 128, (64, 24)).astype(np.int8)
        wt = dev.tensor(w)
        make = lambda: rng.integers(-128, 128, (2, 64)).astype(np.int8)  # noqa: E731

        def call(x):
            q = _qlmm(x, wt if isinstance(x, vkops.DeviceTensor) else w)
            return q, vkops.slice(q, [0, 1], [2, 20], [1, 3])
    x = dev.tensor(make())
    with dev.graph() as g:
        outs = call(x)
    fetch = list(outs) + ([outs[0].reshape(outs[0].shape[::-1])] if op == "qlmm_view" else [])
    for r in range(4):
        data = make()
        s0 = dev.stats()
        got = g.run(feed={x: data}, fetch=fetch)
        made = _delta(s0, dev.stats())
        if r == 0:
            assert made.pop("submissions") == 1 and "buffers_created" not in made
        else:
            assert made == {"submissions": 1}  # no staging buffer, sequence, Algorithm or plan per run
        want = call(data)
        if op == "qlmm_view":
            want = tuple(want) + (want[0].reshape(want[0].shape[::-1]),)
        assert len(got) == len(want)
        for a, ref in zip(got, want):
            assert a.dtype == ref.dtype and a.shape == ref.shape and a.tobytes() == ref.tobytes()
    assert bool(g._fetch_stages) == bool(stage)  # the staged path copies; the mapped one reads in place
    single = g.run(feed={x: data}, fetch=outs[0])  # one tensor, not a list: the array
    assert single.tobytes() == want[0].tobytes()
    with pytest.raises(vkops.ValidationError, match="fetch must be DeviceTensors"):
        g.run(fetch=[np.zeros(3)])
