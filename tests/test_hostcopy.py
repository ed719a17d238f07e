"""Host copies of large data: split over threads (runtime/hostcopy.py), and staged uploads in parts whose
copies are submitted while the next part is written (Batch._stage_into). Sizes at the parts' boundaries,
on device-local memory behind staging copies as on a discrete GPU."""
import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.runtime import hostcopy, transfers
from conftest import device_memory

PART = 4096  # bytes a part in these tests (UPLOAD_PART is MiBs)


@pytest.fixture
def staged(dev, monkeypatch):
    """Device-local buffers behind staging copies, uploads in parts of PART bytes, host copies split from
    SPLIT_BYTES = SPLIT_OUT_BYTES = 2 * PART on 3 threads."""
    monkeypatch.setattr(transfers, "UPLOAD_PART", PART)
    monkeypatch.setattr(hostcopy, "SPLIT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "SPLIT_OUT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "THREADS", 3)
    monkeypatch.setattr(hostcopy, "_pool", None)
    with device_memory(dev, "storage"):
        yield dev


@pytest.mark.parametrize("n", [1, 4095, 4096, 4097, 2 * 4096 - 1, 2 * 4096, 2 * 4096 + 1, 5 * 4096 + 3, 1 << 20])
def test_copy_splits_into_parts_with_every_byte(monkeypatch, rng, n):
    monkeypatch.setattr(hostcopy, "SPLIT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "SPLIT_OUT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "THREADS", 3)
    monkeypatch.setattr(hostcopy, "_pool", None)
    src = rng.integers(0, 256, n + 7, dtype=np.uint8)[3:n + 3]  # not page-aligned
    dst = np.full(n + 2, 7, np.uint8)
    hostcopy.copy(dst[1:n + 1], src)
    np.testing.assert_array_equal(dst[1:n + 1], src)
    assert dst[0] == 7 and dst[-1] == 7  # nothing outside
    out = hostcopy.copy_out(src, np.dtype(np.int8), (n,))
    np.testing.assert_array_equal(out.view(np.uint8), src)
    assert out.flags.owndata and out.flags.c_contiguous


def test_copies_out_split_from_their_own_size(monkeypatch, rng):
    # copy_out (out of staging) splits from SPLIT_OUT_BYTES, copy (into staging) from SPLIT_BYTES: between the two
    # only copy_out hands parts to the pool
    monkeypatch.setattr(hostcopy, "SPLIT_BYTES", 8 * PART)
    monkeypatch.setattr(hostcopy, "SPLIT_OUT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "THREADS", 2)
    monkeypatch.setattr(hostcopy, "_pool", None)
    parts = []
    real = hostcopy._executor

    class Spy:
        def submit(self, f, *a):
            parts.append(a[0].size)
            return real().submit(f, *a)
    monkeypatch.setattr(hostcopy, "_executor", Spy)
    src = rng.integers(0, 256, 4 * PART, dtype=np.uint8)
    dst = np.zeros_like(src)
    hostcopy.copy(dst, src)
    assert parts == [] and np.array_equal(dst, src)
    out = hostcopy.copy_out(src, np.dtype(np.uint16), (2 * PART,))
    assert parts == [2 * PART] and np.array_equal(out.view(np.uint8), src)


def test_copy_raises_a_part_s_error_after_every_part(monkeypatch):
    monkeypatch.setattr(hostcopy, "SPLIT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "SPLIT_OUT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "THREADS", 3)
    monkeypatch.setattr(hostcopy, "_pool", None)
    dst = np.zeros(3 * PART, np.uint8)
    dst.flags.writeable = False  # every part fails, the workers' too
    with pytest.raises(ValueError):
        hostcopy.copy(dst, np.ones(3 * PART, np.uint8))
    with pytest.raises(ValueError, match="sizes"):
        hostcopy.copy(np.zeros(3 * PART, np.uint8), np.ones(3 * PART + 1, np.uint8))


@pytest.mark.parametrize("nbytes", [2 * PART - 4, 2 * PART, 2 * PART + 4, 3 * PART - 4, 3 * PART + 4, 7 * PART + 8])
def test_upload_in_parts(staged, submitted, rng, nbytes):
    a = rng.integers(-2 ** 31, 2 ** 31, nbytes // 4, dtype=np.int64).astype(np.int32)
    x = staged.tensor(a)
    parts = -(-nbytes // PART) if nbytes >= 2 * PART else 1
    assert len(submitted) == parts  # one submission a part, none waited for
    assert all(s == ["OpBufferCopy"] for s in submitted)
    assert not x._buffer.host_visible
    np.testing.assert_array_equal(x.numpy(), a)
    x.upload(a[::-1])  # a strided view; the buffer is in use: ordered after what reads it
    np.testing.assert_array_equal(x.numpy(), a[::-1])


def test_upload_in_parts_after_a_call_in_flight_reading_it(staged, submitted, rng):
    """Write after read: every part's copy waits for the eager call that reads the old data."""
    a = rng.standard_normal((4, 3 * PART // 16)).astype(np.float32)
    x = staged.tensor(a)
    staged.synchronize()
    v, _ = vkops.top_k(x, 3)  # in flight, reads x
    del submitted[:]
    b = a[:, ::-1].copy()
    x.upload(b)
    assert submitted[0][0] == "OpMemoryBarrier" and submitted[0][1] == "OpBufferCopy"
    assert sum(s.count("OpBufferCopy") for s in submitted) == 3
    np.testing.assert_array_equal(v.numpy(), -np.sort(-a, axis=1)[:, :3])
    np.testing.assert_array_equal(x.numpy(), b)


@pytest.mark.parametrize("cols", [2 * PART // 4 - 1, 2 * PART // 4, 5 * PART // 4 + 1])
def test_numpy_call_uploads_its_input_in_parts(staged, submitted, rng, cols):
    """A NumPy call's input in parts, then the call: the same bits as the oracle, twice (the second call
    submits the recordings kept by op list)."""
    a = rng.standard_normal((2, cols)).astype(np.float32)
    a[:, 5:9] = a[0, 0]  # ties
    for rep in range(2):
        del submitted[:]
        v, i = vkops.top_k(a, 8)
        want = reference.top_k1(a, 8, 1)
        np.testing.assert_array_equal(v, want[0])
        np.testing.assert_array_equal(i, want[1])
        assert sum(s.count("OpBufferCopy") for s in submitted) >= -(-a.nbytes // PART), rep


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
def test_a_forked_child_copies_on_its_own_threads(monkeypatch):
    """The pool's threads do not survive fork: a child that copies after its parent did starts without the
    parent's pool and makes its own."""
    import os

    monkeypatch.setattr(hostcopy, "SPLIT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "SPLIT_OUT_BYTES", 2 * PART)
    monkeypatch.setattr(hostcopy, "THREADS", 3)
    src = np.arange(6 * PART, dtype=np.uint32).view(np.uint8)
    dst = np.zeros_like(src)
    hostcopy.copy(dst, src)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if it starts without the parent's pool and its split copy is right
        try:
            if hostcopy._pool is not None:
                os._exit(3)
            d2 = np.zeros_like(src)
            hostcopy.copy(d2, src)
            os._exit(0 if np.array_equal(d2, src) else 1)
        except BaseException:
            os._exit(2)
    deadline = __import__("time").monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if __import__("time").monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's copy hung")
        __import__("time").sleep(0.01)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
