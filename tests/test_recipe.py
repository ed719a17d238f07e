"""NumPy recipes (runtime/recipe.py): a repeated small NumPy call runs from what its first call left, with the
same results as the general path, per thread, and after what may invalidate it."""
import cProfile
import pstats
import threading

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.runtime import pipelines, recipe
from conftest import device_memory

A = np.random.default_rng(1).integers(-128, 128, (16, 512), dtype=np.int8)
B = np.random.default_rng(2).integers(-128, 128, (512, 512), dtype=np.int8)


def _top_k(x):
    return vkops.top_k(x, 8)


def _top_k_ref(x):
    i = np.argsort(-x, axis=-1, kind="stable")[..., :8]
    return np.take_along_axis(x, i, -1), i.astype(np.uint32)


def _slice(x):
    return vkops.slice(x, [0, 0], list(x.shape), [-1, 2])


def _qlmm(a):
    return vkops.quantized_linear_matmul(a, 1 / 16, None, B, 1 / 32, None, 1.0, None)


def _qlmm_ref(a):
    return reference.quantized_linear_matmul(a, 1 / 16, 0, B, 1 / 32, 0, 1.0, 0, np.int8)


CASES = {"top_k": (_top_k, _top_k_ref, lambda r: r.standard_normal((1, 1024)).astype(np.float32)),
         "slice": (_slice, lambda x: x[::-1, ::2], lambda r: r.standard_normal((256, 256)).astype(np.float32)),
         "qlmm": (_qlmm, _qlmm_ref, lambda r: r.integers(-128, 128, (16, 512), dtype=np.int8))}


def _same(got, want):
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    return all(g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes() for g, w in zip(got, want))


@pytest.mark.parametrize("name", CASES)
def test_repeat_runs_its_recipe(dev, rng, name):
    """After the first call, a repeat plans, prepares, allocates and records nothing: one recipe run, one
    submission of the kept recording; every result exact as the input's contents change."""
    f, ref, make = CASES[name]
    dev.synchronize()
    f(make(rng))
    s0 = dev.stats()
    for _ in range(5):
        x = make(rng)
        assert _same(f(x), ref(x))
    s = dev.stats()
    assert s["recipe_runs"] - s0["recipe_runs"] == 5
    assert s["submissions"] - s0["submissions"] == 5
    for k in ("recorded_ops", "plans", "prepared", "buffers_created", "buffers_reused", "staging_created",
              "algorithms"):
        assert s[k] == s0[k], k


@pytest.fixture
def device_local(dev):
    """Device-local buffers behind staging copies, as on a discrete GPU (lavapipe's are host-visible)."""
    with device_memory(dev, "storage"):
        yield dev


@pytest.mark.parametrize("name", CASES)
def test_repeat_through_staging(device_local, rng, name):
    """Behind staging, a repeat copies into the staging buffers its first call used and re-submits the kept
    recording with their copies and the downloads' (nothing recorded, nothing allocated); exact."""
    dev = device_local
    f, ref, make = CASES[name]
    x = make(rng)
    assert _same(f(x), ref(x))
    s0 = dev.stats()
    for _ in range(4):
        x = make(rng)
        assert _same(f(x), ref(x))
    s = dev.stats()
    assert s["recipe_runs"] - s0["recipe_runs"] == 4
    for k in ("recorded_ops", "buffers_created", "buffers_reused", "staging_created"):
        assert s[k] == s0[k], k


def test_repeat_python_calls(dev, rng):
    """Python function calls per repeated top_k 1x1024 K=8 NumPy call (kp's included): 249 through Call
    before recipes, 60 from one (docs/tuning/runtime.md, session 22)."""
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    for _ in range(3):
        vkops.top_k(x, 8)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20):
        vkops.top_k(x, 8)
    pr.disable()
    assert pstats.Stats(pr).total_calls / 20 <= 70


def test_qlmm_numpy_index(dev, rng):
    """quantized_linear_matmul's NumPy index (qlmm/face.py _NUMPY) leads only to the recipe of the same
    layouts, scalar types and values: other scales, zero points and dtypes stay exact, bad ones raise;
    a repeat makes 46 Python calls (366 through the normalisation and Call before recipes)."""
    b = np.ascontiguousarray(B[:, :256])
    for _ in range(2):
        for sa, za, zo, dt in ((1 / 16, None, None, np.int8), (1 / 8, None, None, np.int8), (1 / 16, 3, None, np.int8),
                               (np.float32(1 / 16), 3, 5, np.int8), (1 / 16, None, None, np.uint8)):
            a = rng.integers(0 if dt is np.uint8 else -128, 128, (16, 512)).astype(dt)
            got = vkops.quantized_linear_matmul(a, sa, za, b, 1 / 32, None, 1.0, zo)
            want = reference.quantized_linear_matmul(a, sa, za or 0, b, 1 / 32, 0, 1.0, zo or 0, dt)  # out: a's dtype
            assert _same(got, want), (sa, za, zo, dt)
    with pytest.raises(vkops.ValidationError):
        vkops.quantized_linear_matmul(a, -1.0, None, b, 1 / 32, None, 1.0, None)
    with pytest.raises(vkops.ValidationError):
        vkops.quantized_linear_matmul(a, 1 / 16, 300, b, 1 / 32, None, 1.0, None)  # zero point out of range
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20):
        vkops.quantized_linear_matmul(a, 1 / 16, None, b, 1 / 32, None, 1.0, None)
    pr.disable()
    assert pstats.Stats(pr).total_calls / 20 <= 55


def test_other_shapes_and_bad_inputs_are_other_keys(dev, rng):
    """A new shape or dtype between repeats is its own call (validated, planned); the recipe then still
    serves the first shape exactly."""
    x = rng.standard_normal((3, 700)).astype(np.float32)
    _same(vkops.top_k(x, 8), _top_k_ref(x))
    for other in (rng.standard_normal((2, 90)).astype(np.float32), rng.integers(-9, 9, (3, 700), dtype=np.int16),
                  np.asfortranarray(rng.standard_normal((3, 700)).astype(np.float32))):
        assert _same(vkops.top_k(other, 8), _top_k_ref(other))
        x = rng.standard_normal((3, 700)).astype(np.float32)
        assert _same(vkops.top_k(x, 8), _top_k_ref(x))
    f = np.asfortranarray(rng.standard_normal((5, 300)).astype(np.float32))
    c = rng.standard_normal((5, 300)).astype(np.float32)
    for y in (f, f, c, c):  # a strided layout's recipe (staged with its strides) is not a C-order array's
        assert _same(vkops.top_k(y, 8), _top_k_ref(y))
    with pytest.raises(vkops.ValidationError):
        vkops.top_k(x.astype(np.float64), 8)  # not a DML type
    with pytest.raises(vkops.ValidationError):
        vkops.top_k(x, 8.0)  # k must be an integer: not 8's key
    with pytest.raises(vkops.ValidationError):
        vkops.top_k(x[:, :5], 8)  # k past the length
    assert _same(vkops.top_k(x, 8), _top_k_ref(x))


def test_a_recipe_in_use_is_not_shared(dev, rng, monkeypatch):
    """A call of the same key from another thread while a recipe runs (here: between its input copy and
    its submission) takes the general way with its own buffers; both results exact."""
    make = CASES["top_k"][2]
    x = make(rng)
    _top_k(x), _top_k(x)
    xa, xb, res = make(rng), make(rng), {}
    orig = type(dev._sequences).submit

    def submit(self, *a, **k):
        if "b" not in res:
            res["b"] = None
            t = threading.Thread(target=lambda: res.__setitem__("b", _top_k(xb)))
            t.start()
            t.join()
        return orig(self, *a, **k)

    runs = dev.stats()["recipe_runs"]
    monkeypatch.setattr(type(dev._sequences), "submit", submit)
    assert _same(_top_k(xa), _top_k_ref(xa))
    assert _same(res["b"], _top_k_ref(xb))
    assert dev.stats()["recipe_runs"] == runs + 1


def test_two_threads_at_once(dev):
    """Two threads repeat the same NumPy calls on their own data: one runs the recipe while the other takes
    the general way (or its own recipe); every result exact."""
    errors = []
    barrier = threading.Barrier(2)

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            barrier.wait()
            for _ in range(40):
                for f, ref, make in CASES.values():
                    x = make(r)
                    if not _same(f(x), ref(x)):
                        errors.append(f"thread {seed}: {f.__name__} wrong")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(dev._recipes) <= recipe.RECIPES


def test_after_synchronize_free_trim_and_evictions(dev, rng, monkeypatch):
    """Repeats stay exact after Device.synchronize, device-tensor calls in flight, other tensors freed,
    Device.trim (recipes dropped, their buffers freed) and Algorithm evictions (the recipe's recording no
    longer live: dropped, the call takes the general way and leaves a new recipe)."""
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    assert _same(_top_k(x), _top_k_ref(x))
    others = [vkops.to_device(rng.standard_normal((64, 300)).astype(np.float32), dev) for _ in range(4)]
    vkops.top_k(others[0], 3)  # in flight: the NumPy call after it takes the general way
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    assert _same(_top_k(x), _top_k_ref(x))
    dev.synchronize()
    del others
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    assert _same(_top_k(x), _top_k_ref(x))
    dev.trim()
    assert not dev._recipes
    for _ in range(2):
        x = rng.standard_normal((1, 1024)).astype(np.float32)
        assert _same(_top_k(x), _top_k_ref(x))
    runs = dev.stats()["recipe_runs"]
    monkeypatch.setattr(pipelines, "ALGORITHM_CACHE_SIZE", 1)  # every other kernel evicts top_k's Algorithms
    for _ in range(3):
        s = rng.standard_normal((256, 256)).astype(np.float32)
        assert _same(_slice(s), s[::-1, ::2])
        x = rng.standard_normal((1, 1024)).astype(np.float32)
        assert _same(_top_k(x), _top_k_ref(x))
        assert all(r.prep.live for r in dev._recipes.values())  # what a dead recording left is gone
    assert dev.stats()["recipe_runs"] == runs  # each ran the general way: its recording had been dropped


def test_large_calls_keep_no_recipe(dev, rng, monkeypatch):
    """Past RECIPE_BYTES of inputs and outputs a call keeps no recipe (its buffers go back to the allocator):
    every repeat the general way, exact."""
    monkeypatch.setattr(recipe, "RECIPE_BYTES", 4096)  # top_k 1x1024's 4 KiB in and 64 bytes out: past it
    dev._recipes.clear()
    runs = dev.stats()["recipe_runs"]
    for _ in range(3):
        x = rng.standard_normal((1, 1024)).astype(np.float32)
        assert _same(_top_k(x), _top_k_ref(x))
    assert not dev._recipes and dev.stats()["recipe_runs"] == runs
