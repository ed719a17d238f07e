"""vkops' patch to kp 0.9.0 (patches/kp-0.9.0/), one behaviour a test, through kp itself. Each runs
under the validation layer, which reports a reused fence that was not reset, a command buffer begun
again without a resettable pool, or a timestamp query written before it was reset."""
import subprocess
import sys

import numpy as np
import pytest

from vkops.runtime import _kp
from vkops.runtime.pipelines import check_payload

# CI legs (conftest.py): the patched kp's own ops (copies, timestamps, async waits, cache data); no vkops kernel or plan.
pytestmark = pytest.mark.host_only


@pytest.fixture
def kp(dev):
    return _kp.kp()


def _host(dev, kp, words, fill=0):
    t = dev._manager().tensor_t(np.full(words, fill, np.uint32), kp.TensorTypes.host)
    return t


def _storage(dev, kp, words):
    return dev._manager().tensor_t(np.zeros(words, np.uint32), kp.TensorTypes.storage)


def test_a_sequence_evaluates_again_and_is_re_recorded(dev, kp):
    """One fence per sequence, reset per eval; a command pool that allows re-recording."""
    src = _host(dev, kp, 64)
    src.data()[:] = np.arange(64, dtype=np.uint32)
    mid, dst = _storage(dev, kp, 64), _host(dev, kp, 64)
    seq = dev._manager().sequence()
    for _ in range(3):  # the same recording, evaluated again
        seq.record(kp.OpBufferCopy(src, mid, 256))
        seq.eval()
        seq.clear()
    for shift in (1, 2, 3):  # re-recorded with other ops each time
        src.data()[:] = np.arange(64, dtype=np.uint32) + shift
        seq.record(kp.OpBufferCopy(src, mid, 256))
        seq.record(kp.OpMemoryBarrier([mid], _kp.TRANSFER_WRITE, _kp.TRANSFER_READ,
                                      _kp.STAGE_TRANSFER, _kp.STAGE_TRANSFER))
        seq.record(kp.OpBufferCopy(mid, dst, 256))
        seq.eval()
        seq.clear()
        assert np.array_equal(dst.data(), np.arange(64, dtype=np.uint32) + shift)


def test_timestamps_on_a_reused_sequence(dev, kp):
    a, b = _storage(dev, kp, 1024), _storage(dev, kp, 1024)
    seq = dev._manager().sequence(0, 4)
    for _ in range(3):
        seq.record(kp.OpBufferCopy(a, b, 4096))
        seq.record(kp.OpBufferCopy(b, a, 4096))
        seq.eval()
        ts = seq.get_timestamps()
        assert len(ts) == 3 and ts[0] <= ts[1] <= ts[2]
        seq.clear()


def test_buffer_copy_takes_byte_ranges_and_checks_them(dev, kp):
    src = _host(dev, kp, 16)
    src.data()[:] = np.arange(100, 116, dtype=np.uint32)
    dst = _host(dev, kp, 16, fill=7)
    dev._manager().sequence().eval(kp.OpBufferCopy(src, dst, 12, 8, 20))  # words 2..4 -> 5..7
    want = np.full(16, 7, np.uint32)
    want[5:8] = [102, 103, 104]
    assert np.array_equal(dst.data(), want)
    with pytest.raises(RuntimeError, match="exceeds"):
        kp.OpBufferCopy(src, dst, 64, 4, 0)


def test_pipeline_cache_data_round_trips(dev, kp):
    mgr = dev._manager()
    data = mgr.get_pipeline_cache_data()
    assert check_payload(data, dev.info) is None  # a header naming this device
    mgr.merge_pipeline_cache_data(data)
    assert "shorter" in check_payload(b"\0" * 8, dev.info)
    other = bytearray(data)
    other[8] ^= 0xFF  # vendorID
    assert "made by device" in check_payload(bytes(other), dev.info)


def test_numpy_requirement_is_not_pinned_below_2():
    r = subprocess.run([sys.executable, "-m", "pip", "show", "kp"], capture_output=True, text=True)
    if r.returncode != 0:  # kp from a path without pip metadata: nothing to check
        return
    requires = [ln for ln in r.stdout.splitlines() if ln.startswith("Requires:")]
    assert requires and "numpy" in requires[0]
    r = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert "kp 0.9.0 requires numpy<2" not in r.stdout


def test_eval_async_returns_before_waiting(dev, kp):
    """`eval_async()` submits and returns (0.9.0's binding ran the blocking eval); `eval_await()` waits."""
    a, b = _storage(dev, kp, 1 << 16), _storage(dev, kp, 1 << 16)
    seq = dev._manager().sequence()
    seq.record(kp.OpBufferCopy(a, b, 1 << 18))
    seq.eval_async()
    assert seq.is_running()
    seq.eval_await()
    assert not seq.is_running()
    seq.clear()


def test_eval_await_polls_then_blocks(dev, kp):
    """`eval_await()` polls the fence for up to 200 us, then blocks in vkWaitForFences: a short
    submission (done within the poll) and a long one (copies of 32 MiB, done well after it) both come
    back complete, again and again on the same sequence and fence."""
    small_src, small_dst = _host(dev, kp, 64), _host(dev, kp, 64)
    words = 8 << 20
    big = _host(dev, kp, words)
    mid, big_dst = _storage(dev, kp, words), _host(dev, kp, words)
    seq = dev._manager().sequence()
    for round_ in range(3):
        small_src.data()[:] = np.arange(64, dtype=np.uint32) + round_
        seq.record(kp.OpBufferCopy(small_src, small_dst, 256))
        seq.eval_async()
        seq.eval_await()
        seq.clear()
        assert np.array_equal(small_dst.data(), np.arange(64, dtype=np.uint32) + round_)
        big.data()[::4096] = round_ + 7
        for _ in range(4):
            seq.record(kp.OpBufferCopy(big, mid, words * 4))
            seq.record(kp.OpMemoryBarrier([mid], _kp.TRANSFER_WRITE, _kp.TRANSFER_READ, _kp.STAGE_TRANSFER,
                                          _kp.STAGE_TRANSFER, True))
            seq.record(kp.OpBufferCopy(mid, big_dst, words * 4))
        seq.eval_async()
        seq.eval_await()
        assert not seq.is_running()
        seq.clear()
        assert np.all(big_dst.data()[::4096] == round_ + 7)


def test_device_host_tensors_are_mapped_and_copied(dev, kp):
    """`device_host` tensors (device-local memory the host maps): data() is the mapping, written and read in
    place, and they take buffer copies both ways; their initial data is not copied in."""
    t = dev._manager().tensor_t(np.full(64, 7, np.uint32), kp.TensorTypes.device_host)
    assert t.tensor_type() == kp.TensorTypes.device_host
    t.data()[:] = np.arange(64, dtype=np.uint32)
    src, dst = _host(dev, kp, 64, 5), _host(dev, kp, 64)
    seq = dev._manager().sequence()
    seq.record(kp.OpBufferCopy(t, dst, 128, 64, 0))  # words 16..47 of t
    seq.record(kp.OpBufferCopy(src, t, 64, 0, 0))  # 5s over words 0..15
    seq.eval()
    np.testing.assert_array_equal(dst.data()[:32], np.arange(16, 48, dtype=np.uint32))
    np.testing.assert_array_equal(t.data()[:16], np.full(16, 5, np.uint32))
    np.testing.assert_array_equal(t.data()[16:], np.arange(16, 64, dtype=np.uint32))
    t.destroy()
