"""Devices, data types through the device, batches, threads, the pipeline cache, packaged SPIR-V."""
import collections
import gc
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import vkops
from vkops.dtypes import DataType, pack, unpack

ROOT = Path(__file__).resolve().parent.parent


def test_devices_and_facts(dev):
    infos = vkops.devices()
    assert infos and infos[dev.index].name == dev.name
    assert vkops.Device(dev.index) is dev  # one per index per process
    assert dev.subgroup_size >= 1 and dev.shared_memory_bytes >= 16384
    assert dev.max_workgroup_count[0] >= 65535 and dev.max_storage_buffer_range > 0
    assert isinstance(dev.cooperative_matrix, bool)
    assert dev.vendor and dev.device_type and dev.driver
    assert "subgroup" in repr(dev)


@pytest.mark.host_only
def test_bad_device_index():
    with pytest.raises(vkops.ValidationError, match="Device.index must be <"):
        vkops.Device(len(vkops.devices()) + 3)


@pytest.mark.parametrize("dt", list(DataType))
@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 1001])
@pytest.mark.subgroup_free
def test_dtype_round_trip(dev, rng, dt, n):
    """Every dtype, odd byte counts included, up and back; also guards kp built against an old
    pybind11, which reads numpy 2 arrays as zeros."""
    if dt.is_float:
        x = rng.standard_normal(n).astype(dt.np) * 100 + 1
    else:
        info = np.iinfo(dt.np)
        x = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt.np)
        x[0] = info.max if info.max != 0 else 1
    t = vkops.to_device(x, dev)
    assert t.dtype == dt.np and t.shape == (n,)
    back = t.numpy()
    assert back.tobytes() == x.tobytes()
    # Through a kernel too: an identity slice moves every byte through a shader.
    y = vkops.slice(t, [0], [n], [1]).numpy()
    assert y.tobytes() == x.tobytes()


@pytest.mark.host_only
def test_numpy2_arrays_are_not_read_as_zeros(dev):
    x = np.arange(1, 9, dtype=np.uint32)
    assert np.array_equal(vkops.to_device(x, dev).numpy(), x)


@pytest.mark.host_only
def test_pack_unpack_pure():
    x = np.array([1, -2, 3], dtype=np.int8)
    w = pack(x)
    assert w.dtype == np.uint32 and w.size == 1 and w[0] == 0x03FE01
    assert np.array_equal(unpack(w, DataType.INT8, (3,)), x)


@pytest.mark.subgroup_free
def test_batch_equals_eager_and_chains_dependencies(dev, rng, monkeypatch):
    from vkops.runtime import submit

    monkeypatch.setattr(submit, "FIRST_FLUSH", 100)  # dependencies alone never split a submission
    x = rng.integers(-100, 100, size=(64, 300), dtype=np.int16)
    xt = vkops.to_device(x, dev)
    eager = [vkops.slice(x, [0, 1], [64, 299], [-1, 2]), vkops.slice(x, [3, 0], [60, 300], [3, -1])]
    with dev.batch() as b:
        a1 = vkops.slice(xt, [0, 1], [64, 299], [-1, 2])
        a2 = vkops.slice(xt, [3, 0], [60, 300], [3, -1])
        chained = vkops.slice(a1, [0, 0], [64, 150], [-1, -1])  # reads what a1's dispatch writes
        from_numpy = vkops.slice(x, [0, 0], [64, 300], [2, 3])  # NumPy inside a batch -> device tensor
        with pytest.raises(RuntimeError, match="has not run yet"):
            a1.numpy()
    assert b.submissions == 1
    assert np.array_equal(a1.numpy(), eager[0]) and np.array_equal(a2.numpy(), eager[1])
    assert np.array_equal(chained.numpy(), eager[0][::-1, ::-1])
    assert isinstance(from_numpy, vkops.DeviceTensor)
    assert np.array_equal(from_numpy.numpy(), x[::2, ::3])


@pytest.mark.subgroup_free
def test_large_dependent_dispatches_run_in_one_submission_with_barriers(dev, rng, monkeypatch):
    """A chain of dependent dispatches on 8 MiB tensors (and a write-after-read) is one submission,
    ordered by pipeline barriers, and correct."""
    from vkops.runtime import submit

    monkeypatch.setattr(submit, "FIRST_FLUSH", 100)
    x = rng.integers(0, 2**31, size=(1024, 2048), dtype=np.int32)
    xt = vkops.to_device(x, dev)
    before = dev.stats()["submissions"]
    with dev.batch() as b:
        y = vkops.slice(xt, [0, 0], [1024, 2048], [-1, 1])
        z = vkops.slice(y, [0, 0], [1024, 2048], [1, -1])  # read-after-write of y
        vkops.slice(z, [0, 0], [1024, 2048], [-1, -1], out=y)  # write-after-read of y
    assert b.submissions == 1 and b.barriers == 2
    assert dev.stats()["submissions"] == before + 1
    assert np.array_equal(z.numpy(), x[::-1, ::-1])
    assert np.array_equal(y.numpy(), x)


@pytest.mark.subgroup_free
def test_independent_dispatches_get_no_barrier(dev, rng):
    x = vkops.to_device(rng.integers(0, 9, size=(64, 64), dtype=np.int8), dev)
    with dev.batch() as b:
        for _ in range(4):
            vkops.slice(x, [0, 0], [64, 64], [1, -1])
    assert b.barriers == 0


@pytest.mark.subgroup_free
def test_out_argument_is_checked(dev):
    xt = vkops.to_device(np.zeros((4, 4), np.float32), dev)
    wrong = dev.empty(vkops.TensorDesc("float32", (4, 3)))
    with pytest.raises(vkops.ValidationError, match=r"out must be a packed FLOAT32 tensor of sizes \(4, 4\)"):
        vkops.slice(xt, [0, 0], [4, 4], [1, 1], out=wrong)


def test_new_shapes_and_fresh_outputs_compile_no_pipeline(dev, rng):
    """A kernel is compiled once per specialization, whatever shapes and buffers it runs with."""
    x = rng.integers(0, 255, size=(33, 77), dtype=np.uint8)
    vkops.slice(x, [1, 2], [30, 70], [2, -3])
    vkops.slice(rng.integers(0, 255, size=(8, 64), dtype=np.uint8), [0, 0], [8, 64], [-1, 1])  # rows of whole words
    vkops.top_k(rng.standard_normal((3, 300)).astype(np.float32), 4)
    n = dev.pipeline_count()
    for rows, cols in [(5, 9), (40, 100), (7, 300), (64, 64), (1, 1000)]:
        y = rng.integers(0, 255, size=(rows, cols), dtype=np.uint8)
        assert np.array_equal(vkops.slice(y, [0, 1], [rows, cols - 1], [1, -1]), y[:, :0:-1])
        yt = vkops.to_device(y, dev)
        assert np.array_equal(vkops.slice(yt, [0, 0], [rows, cols], [-1, 1]).numpy(), y[::-1])
    for rows, length in [(3, 280), (9, 301), (1, 257)]:  # rows that share TOP_K1's plan
        v, _ = vkops.top_k(rng.standard_normal((rows, length)).astype(np.float32), 4)
        assert v.shape == (rows, 4)
    assert dev.pipeline_count() == n


@pytest.mark.subgroup_free
def test_pipelines_are_shared_by_specialization(dev):
    """The patched kp compiles once per (SPIR-V, specialization): Algorithms over other buffers and
    grids share the pipeline; another specialization compiles anew."""
    from vkops.ops.slice1 import SLICE_PUSH

    mgr = dev._manager()
    spv = dev._pipelines.spirv("slice1_b32")
    bufs = [dev._memory.get(256) for _ in range(4)]
    push = np.zeros(SLICE_PUSH.itemsize // 4, np.uint32)
    before = mgr.compiled_pipelines()
    a = mgr.algorithm([bufs[0].kp, bufs[1].kp], spv, [1, 1, 1], np.array([16, 3], np.uint32), push)
    b = mgr.algorithm([bufs[2].kp, bufs[3].kp], spv, [5, 2, 1], np.array([16, 3], np.uint32), push)
    assert mgr.compiled_pipelines() == before + 1
    c = mgr.algorithm([bufs[0].kp, bufs[1].kp], spv, [1, 1, 1], np.array([8, 3], np.uint32), push)
    assert mgr.compiled_pipelines() == before + 2
    assert a.is_init() and b.is_init() and c.is_init()
    for algo in (a, b, c):
        algo.destroy()


@pytest.mark.subgroup_free
def test_threads(dev):
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for _ in range(15):
                shape = tuple(int(v) for v in r.integers(1, 40, size=3))
                x = r.integers(-2**31, 2**31 - 1, size=shape, dtype=np.int32)
                got = vkops.slice(x, [0, 0, 0], list(shape), [-1, 2, 1])
                if not np.array_equal(got, x[::-1, ::2, :]):
                    errors.append(f"thread {seed}: wrong result for {shape}")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.host_only
def test_packaged_spirv_is_fresh():
    """Every variant has SPIR-V in the package, newer than its GLSL sources."""
    sys.path.insert(0, str(ROOT / "kernels"))
    try:
        import build  # kernels/build.py
    finally:
        sys.path.pop(0)
    out = ROOT / "vkops" / "spv"
    stale = [name for name in build.VARIANTS if build.stale(name, out)]
    assert stale == [], f"run `make spv`: stale or missing SPIR-V for {stale}"


@pytest.mark.host_only
def test_wheel_carries_spirv(tmp_path):
    """`pip wheel .` packages the compiled SPIR-V: no compiler is needed where it is installed."""
    import subprocess
    import zipfile

    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = tmp_path.glob("vkops-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sys.path.insert(0, str(ROOT / "kernels"))
    try:
        import build
    finally:
        sys.path.pop(0)
    missing = [n for n in build.VARIANTS if f"vkops/spv/{n}.spv" not in names]
    assert missing == [] and "vkops/spv/manifest.json" in names
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "vkops").rglob("*.py")}
    assert modules - names == set()  # every module, the runtime package's too


@pytest.mark.subgroup_free
def test_numpy_call_is_one_submission(dev, rng, monkeypatch):
    from vkops import runtime

    seen = []
    real_run = runtime.Batch.run
    monkeypatch.setattr(runtime.Batch, "run", lambda self: (seen.append(self), real_run(self))[1])
    x = rng.integers(0, 255, size=(40, 50), dtype=np.uint8)
    assert np.array_equal(vkops.slice(x, [0, 0], [40, 50], [-1, 3]), x[::-1, ::3])
    assert [b.submissions for b in seen] == [1]


def test_sequences_are_reused(dev, rng):
    x = rng.standard_normal((4, 100)).astype(np.float32)
    xt = vkops.to_device(x, dev)
    vkops.top_k(x, 3)
    vkops.top_k(xt, 3)[0].numpy()
    s0 = dev.stats()
    for _ in range(10):
        vkops.top_k(x, 3)
        vkops.top_k(xt, 3)[0].numpy()
    s1 = dev.stats()
    assert s1["sequences"] == s0["sequences"]
    # A NumPy call is one submission, a device call one, and .numpy() one unless the buffer is mapped.
    assert s1["submissions"] - s0["submissions"] == 20 + (0 if xt._buffer.host_visible else 10)


def test_steady_stream_allocates_nothing(dev, rng):
    """Device-resident calls with fresh outputs, and NumPy calls, reuse the allocator's buffers and
    the descriptor sets built for them."""
    import gc

    x = rng.standard_normal((16, 640)).astype(np.float32)
    xt = vkops.to_device(x, dev)

    def calls():
        v, i = vkops.top_k(xt, 8)
        y = vkops.slice(xt, [0, 0], [16, 640], [1, -1])
        del v, i, y
        vkops.top_k(x, 8)

    from vkops.runtime.device import ASYNC_MAX

    for _ in range(5 + 3 * ASYNC_MAX):  # the calls in flight fill up, the allocator's free lists settle into a cycle
        calls()
    gc.collect()
    s0 = dev.stats()
    for _ in range(60):
        calls()
    s1 = dev.stats()
    assert s1["buffers_created"] == s0["buffers_created"]
    assert s1["staging_created"] == s0["staging_created"]
    assert s1["algorithms"] == s0["algorithms"]
    assert s1["pipelines"] == s0["pipelines"]
    assert s1["buffers_reused"] > s0["buffers_reused"]


def test_batches_of_scratch_using_calls_build_no_descriptor_sets(dev, rng):
    """Batches of the same calls that each take a scratch buffer (TOP_K1's chunk candidates and
    counters, on a long row) bind the same buffers batch after batch, so the descriptor sets of the
    first batch serve every later one. (The allocator hands out its idle blocks lowest serial first;
    last in, first out rotated the batch's scratch by one a batch: ten new sets a batch of ten.)"""
    x = vkops.to_device(rng.standard_normal((2, 300000)).astype(np.float32), dev)
    outs = [(dev.empty(vkops.TensorDesc("float32", (2, 40))), dev.empty(vkops.TensorDesc("uint32", (2, 40))))
            for _ in range(10)]

    def batch():
        with dev.batch():
            for o in outs:
                vkops.top_k(x, 40, out=o)

    batch()
    p = next(reversed(dev._plans._entries.values()))
    assert any(b.role == "scratch" and not b.zeroed for b in p.buffers), "the case must take scratch"
    batch()
    s0 = dev.stats()
    for _ in range(3):
        batch()
    s1 = dev.stats()
    assert s1["algorithms"] == s0["algorithms"] and s1["buffers_created"] == s0["buffers_created"]
    from vkops import reference

    want_v, want_i = reference.top_k1(x.numpy(), 40, 1)
    assert np.array_equal(outs[-1][0].numpy(), want_v) and np.array_equal(outs[-1][1].numpy(), want_i)


@pytest.mark.host_only
def test_allocator_size_classes_and_trim(dev):
    from vkops.runtime.memory import size_class

    limit = 1 << 30
    assert size_class(1, limit) == 256 and size_class(257, limit) == 320
    for w in (300, 1000, 4097, 123457, 10 ** 8):
        c = size_class(w, limit)
        assert w <= c <= w * 1.25
    assert size_class(limit - 5, limit) <= limit and size_class(limit + 1, limit) == limit + 1
    t = dev.empty(vkops.TensorDesc("float32", (1000,)))
    del t
    assert dev._memory.idle_bytes > 0
    assert dev.trim() > 0 and dev._memory.idle_bytes == 0


@pytest.mark.host_only
def test_features_are_reported(dev):
    feats = dev.features
    assert isinstance(feats, tuple) and len(set(feats)) == len(feats)
    known = {"shaderInt16", "shaderInt64", "shaderFloat64", "storageBuffer16BitAccess",
             "uniformAndStorageBuffer16BitAccess", "storagePushConstant16", "storageBuffer8BitAccess",
             "uniformAndStorageBuffer8BitAccess", "storagePushConstant8", "shaderFloat16", "shaderInt8",
             "subgroupSizeControl", "computeFullSubgroups", "cooperativeMatrix", "vulkanMemoryModel",
             "vulkanMemoryModelDeviceScope", "shaderIntegerDotProduct"}
    assert set(feats) <= known
    if "VK_KHR_8bit_storage" in dev.info.extensions:
        assert "storageBuffer8BitAccess" in feats
    # the patched kp chains VK_KHR_shader_integer_dot_product's feature struct (lavapipe offers it)
    assert ("shaderIntegerDotProduct" in feats) == ("VK_KHR_shader_integer_dot_product" in dev.info.extensions)
    assert ("cooperativeMatrix" in feats) == dev.cooperative_matrix


def test_repeated_calls_replay_their_recording(dev, rng):
    """A call repeated with the same descriptors and parameters replays the first one's dispatches
    (no validation or planning), on new data, for NumPy and device inputs, also inside a batch."""
    def data():
        return rng.standard_normal((6, 700)).astype(np.float32)

    vkops.top_k(data(), 5)  # recorded
    r0 = dev.stats()["replays"]
    for _ in range(3):
        x = data()
        v, i = vkops.top_k(x, 5)
        want = np.argsort(-x, axis=1, kind="stable")[:, :5]
        assert np.array_equal(i, want) and np.array_equal(v, np.take_along_axis(x, want, 1))
        xt = vkops.to_device(x, dev)
        vt, it = vkops.top_k(xt, 5)
        assert np.array_equal(it.numpy(), want)
    with dev.batch():
        y = vkops.slice(xt, [0, 0], [6, 700], [1, -1])
        vb, ib = vkops.top_k(y, 5)  # replayed into an outer batch, after a dependent slice
    assert np.array_equal(vb.numpy(), -np.sort(-x[:, ::-1], axis=1)[:, :5])
    assert dev.stats()["replays"] - r0 == 6  # 3 NumPy calls, 2 device calls after the first, 1 in the batch


def test_replay_keys_are_exact(dev, rng):
    x = rng.standard_normal((2, 50)).astype(np.float32)
    vkops.top_k(x, 1)
    with pytest.raises(vkops.ValidationError, match="k must be an integer"):
        vkops.top_k(x, True)  # equal to 1 and hashes alike, but not the same key
    vkops.slice(x, [0, 0], [2, 50], [1, 1])
    with pytest.raises(vkops.ValidationError):
        vkops.slice(x, [0, 0], [2, 51], [1, 1])
    # Same parameters, another layout: a transposed view is a different input descriptor.
    y = rng.standard_normal((50, 2)).astype(np.float32)
    assert np.array_equal(vkops.top_k(y.T, 1)[0], np.max(y.T, axis=1, keepdims=True))


def test_replay_respects_aliased_inputs(dev, rng):
    a = rng.integers(-128, 128, size=(64, 64), dtype=np.int8)
    b = rng.integers(-128, 128, size=(64, 64), dtype=np.int8)
    at, bt = vkops.to_device(a, dev), vkops.to_device(b, dev)

    def qm(x, y):
        return vkops.quantized_linear_matmul(x, 0.05, None, y, 0.05, None, 1.0, None).numpy()

    from vkops import reference

    def want(x, y):
        return reference.quantized_linear_matmul(x, 0.05, 0, y, 0.05, 0, 1.0, 0, np.int8)

    for _ in range(2):
        assert np.array_equal(qm(at, bt), want(a, b))
        assert np.array_equal(qm(at, at), want(a, a))  # the same buffer twice
        assert np.array_equal(qm(bt, bt), want(b, b))


@pytest.mark.subgroup_free
def test_long_batch_submits_as_it_records_and_keeps_dependencies(dev, rng):
    """A batch submits every FLUSH_DISPATCHES dispatches without waiting, so the GPU starts while the
    rest is recorded; barriers still order dependent dispatches across those submissions."""
    from vkops.runtime import submit

    n = submit.FIRST_FLUSH + 2 * submit.FLUSH_DISPATCHES + 1
    x = rng.integers(-2**31, 2**31 - 1, size=(64, 96), dtype=np.int32)
    xt = vkops.to_device(x, dev)
    s0 = dev.stats()
    with dev.batch() as b:
        y = xt
        for _ in range(n):  # a chain: each slice reads the previous one's output
            y = vkops.slice(y, [0, 0], [64, 96], [-1, -1])
        assert b.submissions == 4  # three submitted already, the last still recording
    assert b.submissions == 4 and dev.stats()["submissions"] - s0["submissions"] == 4
    assert b.barriers == n - 1
    assert np.array_equal(y.numpy(), x[::-1, ::-1] if n % 2 else x)


def test_a_sequence_released_unwaited_is_waited_for_first():
    """An exception between submit and wait (Ctrl-C after vkQueueSubmit) releases the sequence unwaited:
    release waits before clearing, so its buffers never return to the allocator under a running GPU."""
    import threading as th

    from vkops.runtime import submit

    calls = []

    class Running:  # a submitted sequence whose work has not finished
        def is_running(self):
            return "await" not in calls

        def eval_await(self):
            calls.append("await")

        def clear(self):
            calls.append("clear")

    seqs = submit.Sequences(manager=None, lock=th.Lock())
    seqs.release(0, Running())
    assert calls == ["await", "clear"]
    assert len(seqs._free[0]) == 1


def test_out_arguments_replay_and_are_checked(dev, rng):
    x = rng.standard_normal((4, 300)).astype(np.float32)
    xt = vkops.to_device(x, dev)
    outs = [(dev.empty(vkops.TensorDesc("float32", (4, 7))), dev.empty(vkops.TensorDesc("uint32", (4, 7))))
            for _ in range(3)]
    r0 = dev.stats()["replays"]
    for v, i in outs:
        vkops.top_k(xt, 7, out=(v, i))
    assert dev.stats()["replays"] - r0 == 2
    want = np.argsort(-x, axis=1, kind="stable")[:, :7]
    for v, i in outs:
        assert np.array_equal(i.numpy(), want)
    bad = (outs[0][1], outs[0][0])  # swapped: same shapes, wrong dtypes
    with pytest.raises(vkops.ValidationError, match="out"):
        vkops.top_k(xt, 7, out=bad)
    with pytest.raises(vkops.ValidationError, match="out"):
        vkops.slice(xt, [0, 0], [4, 300], [1, 1], out=outs[0][0])


def test_mixed_operators_from_eight_threads(dev):
    """Eight threads call the three operators on device tensors they share read-only (and on their
    own NumPy data); every result is checked."""
    from vkops import reference

    rng = np.random.default_rng(7)
    shared = rng.standard_normal((16, 700)).astype(np.float32)
    st = vkops.to_device(shared, dev)
    a = rng.integers(-128, 128, size=(24, 64), dtype=np.int8)
    b = rng.integers(-128, 128, size=(64, 40), dtype=np.int8)
    at, bt = vkops.to_device(a, dev), vkops.to_device(b, dev)
    want_q = reference.quantized_linear_matmul(a, 0.05, 0, b, 0.05, 0, 1.0, 0, np.int8)
    want_v = -np.sort(-shared, axis=1)[:, :5]
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for it in range(6):
                v, _ = vkops.top_k(st, 5)
                if not np.array_equal(v.numpy(), want_v):
                    errors.append(f"{seed}: top_k")
                y = vkops.slice(st, [0, 1], [16, 699], [-1, 2]).numpy()
                if not np.array_equal(y, shared[::-1, 1::2]):
                    errors.append(f"{seed}: slice")
                q = vkops.quantized_linear_matmul(at, 0.05, None, bt, 0.05, None, 1.0, None).numpy()
                if not np.array_equal(q, want_q):
                    errors.append(f"{seed}: qlmm")
                own = r.integers(0, 255, size=(9, 33), dtype=np.uint8)
                if not np.array_equal(vkops.slice(own, [0, 0], [9, 33], [2, -1]), own[::2, ::-1]):
                    errors.append(f"{seed}: own slice")
        except Exception as e:  # noqa: BLE001
            errors.append(f"{seed}: {e!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.subgroup_free
def test_trim_frees_idle_buffers_and_their_descriptor_sets(dev, rng):
    import gc

    xt = vkops.to_device(rng.integers(0, 9, size=(16, 64), dtype=np.int8), dev)
    ys = [vkops.slice(xt, [0, 0], [16, 64], [1, -1]) for _ in range(5)]  # five live outputs
    with dev.batch():
        ys += [vkops.slice(xt, [0, 0], [16, 64], [1, -1]) for _ in range(5)]
    gc.collect()
    n_algos, held = dev._pipelines.algorithm_count, dev.memory_held()
    del ys
    gc.collect()
    assert dev._memory.idle_bytes > 0  # dropped outputs went back to the allocator, not to the driver
    freed = dev.trim()
    assert freed > 0 and dev.memory_held() == held - freed
    assert dev._pipelines.algorithm_count < n_algos  # their descriptor sets went with them
    assert np.array_equal(vkops.slice(xt, [0, 0], [16, 64], [1, -1]).numpy(), xt.numpy()[:, ::-1])


def test_repeated_device_calls_build_no_descriptors(dev, rng, monkeypatch):
    """The host work of a repeated call with device tensors (what a batch of them waits for): no
    TensorDesc is built again. Views of a tensor, output descriptors, Python-scalar parameters and dtype
    lookups are remembered; the call finds its plan by key."""
    from vkops import tensor as T

    a = dev.tensor(rng.integers(-128, 128, (16, 32), dtype=np.int8))
    b = dev.tensor(rng.integers(-128, 128, (32, 16), dtype=np.int8))
    x = dev.tensor(rng.standard_normal((4, 64)).astype(np.float32))
    out = dev.empty(vkops.TensorDesc("int8", (16, 16)))
    built = []
    real = T.TensorDesc.__init__
    monkeypatch.setattr(T.TensorDesc, "__init__", lambda self, *a, **k: (built.append(1), real(self, *a, **k))[1])
    calls = {"qlmm": lambda: vkops.quantized_linear_matmul(a, 0.02, None, b, 0.02, 3, 0.5, None, out=out),
             # a new output each call, reshaped from the plan's {B,C,M,N} to the caller's rank
             "qlmm, new output": lambda: vkops.quantized_linear_matmul(a, 0.02, None, b, 0.02, 3, 0.5, None),
             "top_k": lambda: vkops.top_k(x, 8), "slice": lambda: vkops.slice(x, (0, 1), (4, 60), (1, 2))}
    for name, call in calls.items():
        with dev.batch():
            first = call()
            built.clear()
            again = call()
        assert built == [], name
        for f, s in zip(first if isinstance(first, tuple) else (first,), again if isinstance(again, tuple) else (again,)):
            assert np.array_equal(f.numpy(), s.numpy()), name
    # the remembered views are the same objects; a bad layout is still refused by name
    assert a.as_strided((1, 1, 16, 32), (0, 0, 32, 1)) is a.as_strided((1, 1, 16, 32), (0, 0, 32, 1))
    assert out.reshape(16, 16) is out and out.reshape(1, 16, 16) is out.reshape((1, 16, 16))
    with pytest.raises(vkops.ValidationError, match="as_strided"):
        a.as_strided((16, 1 << 20), (1 << 20, 1))
    with pytest.raises(vkops.ValidationError, match="sizes"):
        a.as_strided([[16], 32], (32, 1))
    assert DataType.of(np.dtype("int8")) is DataType.of("int8") is DataType.INT8 and DataType.INT8.np == np.int8
    with pytest.raises(vkops.ValidationError, match="data_type"):
        DataType.of("complex64")


def test_repeated_calls_reuse_dispatch_ops_and_scalar_constants(dev, rng, monkeypatch):
    """A repeated call records the kp dispatch op its plan made the first time (no new OpAlgoDispatch),
    and its scalar parameters (Python or NumPy) are frozen arrays whose value key and device copy are
    looked up without reading their bytes; an equal scale given another way shares that copy."""
    from vkops.inputs import frozen_key
    from vkops.ops.qlmm import args as qlmm_args
    from vkops.runtime import _kp, pipelines

    a = dev.tensor(rng.integers(-128, 128, (16, 32), dtype=np.int8))
    b = dev.tensor(rng.integers(-128, 128, (32, 16), dtype=np.int8))
    x = dev.tensor(rng.standard_normal((4, 64)).astype(np.float32))
    outs = [dev.empty(vkops.TensorDesc("int8", (16, 16))) for _ in range(2)]
    calls = {"qlmm": lambda i: vkops.quantized_linear_matmul(a, np.float32(0.02), None, b, 0.02, np.int8(3), 0.5,
                                                               None, out=outs[i]),
             "top_k": lambda i: vkops.top_k(x, 8), "slice": lambda i: vkops.slice(x, (0, 1), (4, 60), (1, 2))}
    made = []
    real = _kp.kp()
    counting = type("K", (), {"__getattr__": lambda self, n: getattr(real, n),
                              "OpAlgoDispatch": lambda self, *a: (made.append(1), real.OpAlgoDispatch(*a))[1]})()
    def twice(name, call):  # results dropped on return: the next batch gets the same buffers back
        with dev.batch():
            first, second = call(0), call(1)
        for f, s in zip(first if isinstance(first, tuple) else (first,), second if isinstance(second, tuple) else (second,)):
            assert np.array_equal(f.numpy(), s.numpy()), name

    for name, call in calls.items():
        for _ in range(3):  # outputs come back from the pool in the order they were freed: a few binding sets
            twice(name, call)
        for mod in (_kp, pipelines):
            monkeypatch.setattr(mod, "kp", lambda: counting)
        twice(name, call)
        for mod in (_kp, pipelines):
            monkeypatch.setattr(mod, "kp", lambda: real)
        assert made == [], name
    # a plan's push arrays are read-only and get one op; a writable array may change: a new op each time
    plan = next(p for k, p in dev._plans._entries.items() if k[0][0] == "slice")
    d, push, out = plan.dispatches[0], plan._push[0], dev.empty(plan.outputs[0].tensor)
    op = lambda words: dev._pipelines.dispatch_op(d.kernel, [x._buffer, out._buffer], d.groups, d.spec, words)  # noqa: E731
    assert not push.flags.writeable and op(push) is op(push)
    mutable = push.copy()
    assert op(mutable) is not op(mutable)
    sa = qlmm_args.param(np.float32(0.02), "a_scale", "row", 16, None)
    assert frozen_key(sa) is not None and qlmm_args.param(np.float32(0.02), "a_scale", "row", 16, None) is sa
    with pytest.raises(ValueError):
        sa[...] = 1  # frozen: its key stays its value
    assert frozen_key(np.full((1, 1, 1, 1), 0.02, np.float32)) is None  # a user's array is looked at
    assert dev.constant(sa, frozen_key(sa)) is dev.constant(np.full((1, 1, 1, 1), np.float32(0.02)))


def _lean_calls(dev, rng):
    """Device-tensor calls of the three operators (QLinearMatMul with zero points and scalar scales),
    each with its NumPy oracle."""
    a8 = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    b8 = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    xf = rng.standard_normal((4, 300)).astype(np.float32)
    a, b, x = dev.tensor(a8), dev.tensor(b8), dev.tensor(xf)
    qa = (0.02, 3, 0.02, -7, 0.5, 1)
    return {
        "slice": (lambda: vkops.slice(x, (0, 1), (4, 290), (-1, 3)), lambda: vkops.slice(xf, (0, 1), (4, 290), (-1, 3))),
        "top_k": (lambda: vkops.top_k(x, 9), lambda: vkops.top_k(xf, 9)),
        "qlmm": (lambda: vkops.quantized_linear_matmul(a, qa[0], qa[1], b, qa[2], qa[3], qa[4], qa[5]),
                 lambda: vkops.quantized_linear_matmul(a8, qa[0], qa[1], b8, qa[2], qa[3], qa[4], qa[5])),
    }


def _host(r):
    return tuple(t.numpy() for t in (r if isinstance(r, tuple) else (r,)))


def test_repeated_eager_call_appends_its_prepared_recording(dev, rng, monkeypatch):
    """A repeated eager call on the same device tensors makes no plan, Algorithm, buffer, prepared
    recording or kp object (counted by wrapping the kp module), submits exactly its prepared ops in one
    submission, re-submitting the sequence recorded last time (no kp `record`), and gives the NumPy
    call's bits."""
    from vkops.runtime import _kp, pipelines, submit

    real = _kp.kp()
    active, kp_calls, recorded = [False], [], []

    class Counting:
        def __getattr__(self, name):
            if active[0]:
                kp_calls.append(name)
            return getattr(real, name)

    real_submit = submit.Sequences.submit

    def counting_submit(self, ops, timestamps=False, reuse=None):
        if active[0]:
            recorded.append(len(ops))
        return real_submit(self, ops, timestamps, reuse)

    for mod in (_kp, pipelines):
        monkeypatch.setattr(mod, "kp", lambda: Counting())
    monkeypatch.setattr(submit.Sequences, "submit", counting_submit)
    for name, (call, ref) in _lean_calls(dev, rng).items():
        want = ref()
        want = want if isinstance(want, tuple) else (want,)
        for _ in range(3):
            call()  # the output's buffer goes back to the pool when the result is dropped and the call done
            dev.synchronize()
        prep = list(dev._pipelines._prepared.values())[-1]
        kp_calls.clear()
        recorded.clear()
        made = collections.Counter()
        for _ in range(4):
            s0 = dev.stats()
            active[0] = True
            try:
                r = call()
            finally:
                active[0] = False
            made.update({k: v - s0[k] for k, v in dev.stats().items() if v != s0[k]})
            got = _host(r)
            del r
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), name
        # each call returns in flight (its read waits for it)
        assert dict(made) == {"replays": 4, "submissions": 4, "buffers_reused": 4 * len(got), "in_flight": 4}, \
            (name, made)
        assert prep in dev._sequences._kept  # no "recorded_ops" above: the kept sequence went again
        assert kp_calls == [], (name, kp_calls)  # no OpAlgoDispatch, OpMemoryBarrier, tensor, Algorithm
        assert recorded == [len(prep.ops)] * 4, (name, recorded, len(prep.ops))


def test_prepared_recordings_are_bounded_and_never_stale(dev, rng, monkeypatch):
    """Prepared recordings are kept per (plan, bound buffers) in a bounded LRU, emptied when a buffer's
    memory is freed (its Algorithms destroyed) or an Algorithm leaves the LRU: a new tensor in freed
    memory, or a call whose descriptor set was evicted, records a fresh descriptor set (the validation
    layer watches), with the right bits."""
    from vkops.runtime import pipelines, sequences

    pipes = dev._pipelines
    monkeypatch.setattr(pipelines, "PREPARED_ENTRIES", 4)
    monkeypatch.setattr(sequences, "KEPT_SEQUENCES", 3)
    dev.synchronize()
    dev._sequences.forget_kept()  # none kept from earlier tests: the cap is enforced one recording at a time
    arrays = [rng.standard_normal((4, 300)).astype(np.float32) for _ in range(10)]
    xs = [dev.tensor(a) for a in arrays]
    s0 = dev.stats()
    for x, a in zip(xs, arrays):
        assert vkops.slice(x, (0, 1), (4, 290), (-1, 3)).numpy().tobytes() == a[:, 1:291][::-1, ::3].tobytes()
    assert dev.stats()["prepared"] - s0["prepared"] >= 9 and len(pipes._prepared) <= 4
    assert len(dev._sequences._kept) <= 3
    # Free one input's memory: its Algorithms go, and every prepared recording with them.
    serial = xs[-1]._buffer.serial
    assert any(serial in p.serials for p in pipes._prepared.values())
    del xs[-1]
    gc.collect()
    dev.trim()
    assert not any(serial in p.serials for p in pipes._prepared.values())
    kept = list(dev._sequences._kept)  # no kept command buffer binds a destroyed descriptor set
    assert all(p.live and serial not in p.serials and all(k in pipes._algorithms for k in p.keys) for p in kept)
    assert all(k in pipes._algorithms for p in pipes._prepared.values() for k in p.keys)
    fresh = rng.standard_normal((4, 300)).astype(np.float32)
    s0 = dev.stats()
    x = dev.tensor(fresh)  # may land in the freed memory
    assert vkops.slice(x, (0, 1), (4, 290), (-1, 3)).numpy().tobytes() == fresh[:, 1:291][::-1, ::3].tobytes()
    assert dev.stats()["prepared"] == s0["prepared"] + 1
    # A tiny Algorithm LRU: every eviction empties the prepared recordings, none binds a destroyed set.
    monkeypatch.setattr(pipelines, "ALGORITHM_CACHE_SIZE", 2)
    for r in range(3):
        for x, a in zip(xs[:4], arrays[:4]):
            v, i = vkops.top_k(x, 5)
            want_v, want_i = vkops.top_k(a, 5)
            assert v.numpy().tobytes() == want_v.tobytes() and i.numpy().tobytes() == want_i.tobytes()
            assert all(k in pipes._algorithms for p in pipes._prepared.values() for k in p.keys)
            assert all(p.live and all(k in pipes._algorithms for k in p.keys) for p in dev._sequences._kept)


def test_prepared_recordings_in_batches_and_graphs(dev, rng):
    """The same prepared recording serves a batch whose earlier calls it depends on (barriers from the
    batch's tracking, not the recording's) and a graph capture (its Algorithms pinned)."""
    a = rng.standard_normal((4, 300)).astype(np.float32)
    x = dev.tensor(a)
    y = vkops.slice(x, (0, 0), (4, 300), (1, 1))  # prepared for (x, y)
    vkops.slice(x, (0, 0), (4, 300), (1, 1), out=y)  # again with out=: the same recording
    with dev.batch() as b:
        vkops.slice(x, (0, 0), (4, 300), (-1, 1), out=y)
        v, i = vkops.top_k(y, 7)  # reads y: a barrier from the batch's tracking
    assert b.barriers >= 1
    want_v, _ = vkops.top_k(a[::-1], 7)
    assert v.numpy().tobytes() == want_v.tobytes()
    vkops.top_k(y, 7)  # prepared eagerly, then captured: the outputs take the same buffers back
    dev.synchronize()  # (once the eager call is done)
    s0 = dev.stats()
    with dev.graph() as g:
        gv, gi = vkops.top_k(y, 7)
    assert dev.stats()["prepared"] == s0["prepared"]
    assert len(g._pins) >= 1 and all(dev._pipelines._pinned[k] for k in g._pins)
    vkops.slice(x, (0, 0), (4, 300), (1, 1), out=y)
    g.run()
    want_v, want_i = vkops.top_k(a, 7)
    assert gv.numpy().tobytes() == want_v.tobytes() and gi.numpy().tobytes() == want_i.tobytes()
    g.close()


def test_a_call_in_use_keeps_its_descriptor_set_under_lru_pressure(dev, rng, monkeypatch):
    """A repeated call that finds its prepared recording still marks its Algorithms used: new descriptor
    sets made by other calls push out the least recently used ones, not the hot call's."""
    from vkops.runtime import pipelines

    monkeypatch.setattr(pipelines, "ALGORITHM_CACHE_SIZE", 3)
    a = rng.standard_normal((4, 300)).astype(np.float32)
    x = dev.tensor(a)
    want = a[:, 1:291][::-1, ::3].tobytes()
    hot = lambda: vkops.slice(x, (0, 1), (4, 290), (-1, 3))  # noqa: E731
    hot().numpy()  # read: its output goes back to the pool once the call is done
    others = []
    for _ in range(8):
        others.append(dev.tensor(rng.standard_normal((4, 300)).astype(np.float32)))
        vkops.slice(others[-1], (0, 1), (4, 290), (-1, 3))  # a new descriptor set: one is evicted
        dev.synchronize()  # its dropped output back in the pool, as hot()'s
        s0 = dev.stats()
        assert hot().numpy().tobytes() == want
        assert dev.stats()["algorithms"] == s0["algorithms"] and dev.stats()["prepared"] == s0["prepared"]


def test_tunings_hash_once():
    """Every operator's tuning is part of its plan key: hashed once at construction, not field by field on every
    call (a frozen dataclass subclass gets a generated __hash__ unless it keeps the base's)."""
    import dataclasses

    from vkops.ops.qlmm.tuning import QlmmTuning
    from vkops.ops.slice1.tuning import Slice1Tuning
    from vkops.ops.top_k1.tuning import TopK1Tuning
    from vkops.ops.tuning import Tuning

    assert {c.__name__ for c in Tuning.__subclasses__()} == {"QlmmTuning", "Slice1Tuning", "TopK1Tuning"}
    for cls in (QlmmTuning, Slice1Tuning, TopK1Tuning):
        t = cls()
        h = hash(t)
        for f in dataclasses.fields(t):  # a field changed behind the frozen class's back: the hash stays
            object.__setattr__(t, f.name, ("changed", f.name))
        assert hash(t) == h, cls.__name__


def test_eager_call_of_many_dispatches_is_one_submission(dev, rng, monkeypatch):
    """A one-off call appends its prepared recording whole however many dispatches it has (GRADIX: digit
    passes, compaction, ranks): one submission of the kept sequence, nothing recorded into kp again (a batch
    opened by the user still submits as it records: test_long_batch_submits_as_it_records...)."""
    from vkops import reference
    from vkops.ops import top_k1
    from vkops.runtime import submit

    xf = rng.standard_normal((2, 5000)).astype(np.float32)
    xf[:, 100:140] = xf[0, 7]  # ties across the K-th key
    x = dev.tensor(xf)
    want = reference.top_k1(xf, 40, 1)
    for _ in range(2):
        top_k1._top_k(x, 40, force="gradix")
        dev.synchronize()
    real, log = submit.Sequences.submit, []

    def spy(self, ops, timestamps=False, reuse=None):
        log.append((len(ops), reuse))
        return real(self, ops, timestamps, reuse)
    monkeypatch.setattr(submit.Sequences, "submit", spy)
    s0 = dev.stats()
    v, i = top_k1._top_k(x, 40, force="gradix")
    s1 = dev.stats()
    prep = log[0][1]
    assert len(log) == 1 and prep is not None and prep.dispatches > submit.FIRST_FLUSH + submit.FLUSH_DISPATCHES - 2, log
    assert log[0][0] == len(prep.ops) and s1["recorded_ops"] == s0["recorded_ops"]
    np.testing.assert_array_equal(v.numpy(), want[0])
    np.testing.assert_array_equal(i.numpy(), want[1])
