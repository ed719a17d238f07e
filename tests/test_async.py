"""Eager calls on device tensors return once submitted (runtime/submit.py Batch.run_async): the next
calls order after them by barriers, host reads and writes wait for them, at most ASYNC_MAX stay in
flight. lavapipe runs one submission after another, so a missing barrier cannot corrupt a result
here: the barriers are checked in the submitted op lists, the results on every ordering case."""
import threading

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.runtime import device as device_mod
from vkops.runtime import submit

from conftest import device_memory

WIN = ((0, 0), (64, 4096), (1, -1))


def _top(m, k):
    return -np.sort(-m, axis=1)[:, :k]


@pytest.fixture(params=["mapped", "staged", "bar"])
def memory(request, dev):
    """Device buffers as the device gives them (lavapipe: host-visible, read and written in place), or
    device-local ones behind staging copies, as on a discrete GPU (uploads submitted without waiting,
    downloads ordered by their barrier), or device memory the host maps as under resizable BAR (written
    in place, read in place up to MAPPED_READ_BYTES, through staging beyond)."""
    if request.param == "mapped":
        yield request.param
        return
    with device_memory(dev, "storage" if request.param == "staged" else "mapped"):
        yield request.param


@pytest.fixture
def data(dev, rng, memory):
    a = rng.standard_normal((64, 4096)).astype(np.float32)
    b = rng.standard_normal((64, 4096)).astype(np.float32)
    dev.synchronize()
    x, x2 = dev.tensor(a), dev.tensor(b)
    assert x._buffer.host_visible == (memory != "staged")
    dev.synchronize()  # staged: their uploads were in flight
    yield a, b, x, x2
    del x, x2


def test_eager_call_returns_in_flight_and_reads_wait(dev, data):
    a, _, x, _ = data
    for rep in range(2):  # the second time every call's recording is kept and submitted again
        y = vkops.slice(x, *WIN)
        v, _ = vkops.top_k(y, 16)
        assert dev.stats()["in_flight"] == 2, rep
        np.testing.assert_array_equal(v.numpy(), _top(a[:, ::-1], 16))
        assert dev.stats()["in_flight"] == 0
        np.testing.assert_array_equal(y.numpy(), a[:, ::-1])


def test_dependent_call_records_a_barrier_in_front(dev, data, submitted):
    """Read after write, write after write and write after read across submissions: the later call's
    submission starts with a barrier; an independent call's does not; a call after a synchronize
    neither (nothing in flight)."""
    a, b, x, x2 = data
    for rep in range(2):
        dev.synchronize()
        submitted.clear()
        y = vkops.slice(x, *WIN)
        vkops.top_k(y, 4)  # reads y
        z = vkops.slice(x2, *WIN, out=y)  # writes y: after the read and the write in flight
        w = vkops.slice(x2, *WIN)  # reads x2 only, as the last call: no hazard
        firsts = [ops[0] for ops in submitted]
        assert firsts[0] != "OpMemoryBarrier" and firsts[1] == "OpMemoryBarrier", (rep, submitted)
        assert firsts[2] == "OpMemoryBarrier" and firsts[3] != "OpMemoryBarrier", (rep, submitted)
        np.testing.assert_array_equal(z.numpy(), b[:, ::-1])
        np.testing.assert_array_equal(w.numpy(), b[:, ::-1])


def test_host_write_after_the_calls_reading_it(dev, data, memory, submitted):
    """Mapped: the write waits for the call in flight that reads x. Staged: the copy is submitted
    behind a barrier and left in flight; the next call reading x records one in front."""
    a, b, x, _ = data
    for rep in range(2):
        t = vkops.slice(x, *WIN)
        submitted.clear()
        n = dev.stats()["in_flight"]
        x.upload(b)
        if memory != "staged":  # written in place
            assert dev.stats()["in_flight"] == 0 and submitted == []
        else:
            assert dev.stats()["in_flight"] == n + 1 and submitted == [["OpMemoryBarrier", "OpBufferCopy"]]
        u = vkops.slice(x, *WIN)
        if memory == "staged":
            assert submitted[-1][0] == "OpMemoryBarrier"
        np.testing.assert_array_equal(t.numpy(), a[:, ::-1])
        np.testing.assert_array_equal(u.numpy(), b[:, ::-1])
        np.testing.assert_array_equal(x.numpy(), b)
        x.upload(a)


def test_batch_and_graph_after_calls_in_flight(dev, data, submitted):
    a, b, x, x2 = data
    y = vkops.slice(x, *WIN)
    submitted.clear()
    with dev.batch():
        v, _ = vkops.top_k(y, 4)  # y is written by the call in flight
    assert submitted[0][0] == "OpMemoryBarrier"
    np.testing.assert_array_equal(v.numpy(), _top(a, 4))
    y = vkops.slice(x, *WIN)
    with dev.graph() as g:
        gv, _ = vkops.top_k(y, 3)
    vkops.slice(x2, *WIN, out=y)  # in flight when the graph runs: the run waits for it
    g.run()
    np.testing.assert_array_equal(gv.numpy(), _top(b, 3))
    g.close()


def test_calls_in_flight_are_bounded_and_their_buffers_held(dev, data):
    a, _, x, _ = data
    s0 = dev.stats()
    outs = []
    for j in range(3 * device_mod.ASYNC_MAX):
        vkops.slice(x, (0, j), (64, 4096 - j), (1, -1))  # dropped at once: its buffer stays held
        outs.append(vkops.slice(x, (0, j), (64, 4096 - j), (1, -1)))
        assert dev.stats()["in_flight"] <= device_mod.ASYNC_MAX
    assert dev.stats()["in_flight"] == device_mod.ASYNC_MAX
    for j, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), a[:, j:][:, ::-1])
    made = dev.stats()["buffers_created"] - s0["buffers_created"]
    assert made <= len(outs) + device_mod.ASYNC_MAX + 1  # the dropped outputs' buffers came back
    dev.synchronize()
    assert dev.stats()["in_flight"] == 0


def test_bad_call_with_calls_in_flight(dev, data):
    a, _, x, _ = data
    y = vkops.slice(x, *WIN)
    before = dev.stats()
    with pytest.raises(vkops.ValidationError, match="k"):
        vkops.top_k(y, 5000)
    after = dev.stats()
    assert after["submissions"] == before["submissions"] and after["in_flight"] == before["in_flight"] == 1
    np.testing.assert_array_equal(y.numpy(), a[:, ::-1])


def test_threads_each_with_a_chain_in_flight(dev, rng):
    arrays = [rng.standard_normal((8, 2048)).astype(np.float32) for _ in range(4)]
    errors = []

    def chain(a):
        try:
            x = dev.tensor(a)
            for k in (1, 5, 17):
                y = vkops.slice(x, (0, 0), (8, 2048), (1, -1))
                z = vkops.slice(y, (0, 0), (8, 2048), (1, -1))
                v, _ = vkops.top_k(z, k)
                np.testing.assert_array_equal(v.numpy(), _top(a, k))
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=chain, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    dev.synchronize()


def test_repeated_read_submits_its_recorded_download(dev, data, memory):
    """Staged (and 128 KiB of BAR memory, read through staging): a read of a small device-local tensor keeps
    its download recorded; reading it again records nothing and submits once; the recording goes with the
    buffer's memory."""
    staged = memory != "mapped"
    a, b, x, _ = data
    t = vkops.slice(x, (0, 0), (8, 4096), (1, -1))
    np.testing.assert_array_equal(t.numpy(), a[:8, ::-1])
    for src in (b, a):
        vkops.slice(dev.tensor(src), (0, 0), (8, 4096), (1, -1), out=t)
        s0 = dev.stats()
        np.testing.assert_array_equal(t.numpy(), src[:8, ::-1])
        s1 = dev.stats()
        assert s1["recorded_ops"] == s0["recorded_ops"] and s1["submissions"] - s0["submissions"] == \
            (1 if staged else 0)
    serial = t._buffer.serial
    assert any(k[0] == serial for k in dev._reads) == staged
    del t
    import gc

    gc.collect()
    dev.trim()  # frees the idle block: its kept read goes with it
    assert not any(k[0] == serial for k in dev._reads)


def test_repeated_numpy_call_submits_its_recording_again(dev, rng, memory):
    """NumPy in, NumPy out: the staged uploads, the dispatches and the downloads of a repeated call are the
    same op objects (copies and barriers made once per buffers), so its recording is kept and submitted
    again: nothing recorded, one submission a call; a freed staging buffer takes the kept recordings."""
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    a8 = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    b8 = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    calls = [(lambda: vkops.top_k(x, 8)[0], _top(x, 8)),
             (lambda: vkops.slice(x, (0, 0), (4, 1000), (1, -2)), x[:, ::-1][:, ::2]),
             (lambda: vkops.quantized_linear_matmul(a8, 0.5, None, b8, 0.5, None, 4.0, None),
              reference.quantized_linear_matmul(a8, 0.5, None, b8, 0.5, None, 4.0, None))]
    for f, want in calls:
        f()
        f()
        s0 = dev.stats()
        for _ in range(3):
            np.testing.assert_array_equal(f(), want)
        s1 = dev.stats()
        assert s1["recorded_ops"] == s0["recorded_ops"] and s1["submissions"] - s0["submissions"] == 3, (want.shape,)
    import gc

    gc.collect()
    dev.trim()  # frees idle staging buffers: the recordings that copy through them go
    f, want = calls[0]
    s0 = dev.stats()
    np.testing.assert_array_equal(f(), want)
    assert dev.stats()["recorded_ops"] > s0["recorded_ops"]
