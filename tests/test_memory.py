"""Running out of memory: a clear DeviceMemoryError, nothing lost, the device still usable; idle
cached blocks are freed before giving up. Checked on any device by capping vkops' own budget."""
import gc

import numpy as np
import pytest

import vkops
from vkops.runtime.device import parse_bytes

MiB = 1 << 20


@pytest.fixture
def capped(dev):
    gc.collect()
    dev.trim()
    yield dev
    dev.memory_budget = None
    gc.collect()


@pytest.mark.subgroup_free
def test_budget_exhaustion_raises_and_recovers(capped, rng):
    dev = capped
    x = rng.standard_normal((256, 256)).astype(np.float32)
    keep = vkops.to_device(x, dev)
    dev.memory_budget = dev.memory_held() + 8 * MiB
    held = []
    with pytest.raises(vkops.DeviceMemoryError) as info:
        for _ in range(64):
            held.append(dev.empty(vkops.TensorDesc("float32", (MiB // 4,))))
    msg = str(info.value)
    assert "cannot allocate 1048576 bytes" in msg and "budget" in msg and dev.name in msg
    assert isinstance(info.value, MemoryError)
    assert 6 <= len(held) <= 8
    assert np.array_equal(keep.numpy(), x)  # nothing already on the device is lost
    # An operator that needs more than is left fails the same way, before dispatching anything.
    big = np.zeros((1024, 1024), np.float32)
    with pytest.raises(vkops.DeviceMemoryError, match=r"^vkops.slice: cannot allocate"):
        vkops.slice(big, [0, 0], [1024, 1024], [1, 1])
    del held
    gc.collect()
    y = vkops.slice(keep, [0, 0], [256, 256], [-1, 1])  # usable again once tensors are dropped
    assert np.array_equal(y.numpy(), x[::-1])


@pytest.mark.host_only
def test_idle_blocks_are_freed_before_failing(capped):
    dev = capped
    base = dev.memory_held()
    idle = [dev.empty(vkops.TensorDesc("uint8", (3 * MiB,))) for _ in range(2)]
    del idle
    gc.collect()
    assert dev._memory.idle_bytes >= 6 * MiB
    dev.memory_budget = base + 7 * MiB  # 6 MiB idle + a new 5 MiB class only fit once the idle go
    t = dev.empty(vkops.TensorDesc("uint8", (5 * MiB,)))
    assert dev._memory.idle_bytes == 0 and t.shape == (5 * MiB,)


@pytest.mark.host_only
def test_heap_check_names_what_is_free(dev):
    huge = dev.info.device_local_bytes + (1 << 30)
    why = dev._memory_check(dev._memory, huge)
    assert why and "heap has" in why and "free of" in why


@pytest.mark.host_only
def test_budget_from_environment_and_argument(dev, monkeypatch):
    assert parse_bytes("512M") == 512 * MiB and parse_bytes("8G") == 8 << 30 and parse_bytes("64KiB") == 64 << 10
    assert parse_bytes("1000") == 1000 and parse_bytes(None) is None
    with pytest.raises(vkops.ValidationError, match="VKOPS_MEMORY_BUDGET"):
        parse_bytes("lots")
    assert vkops.Device(dev.index, memory_budget=123 * MiB).memory_budget == 123 * MiB
    dev.memory_budget = None


def test_a_batch_that_fails_midway_leaves_everything_usable(dev, rng):
    x = rng.standard_normal((32, 100)).astype(np.float32)
    xt = vkops.to_device(x, dev)
    before = dev.stats()["submissions"]
    with pytest.raises(vkops.ValidationError, match="TopK1Desc.k"):
        with dev.batch():
            ys = [vkops.slice(xt, [0, 0], [32, 100], [1, -1]) for _ in range(5)]  # some already submitted
            vkops.top_k(ys[0], 101)  # k > 100: the operator names itself
    assert dev.stats()["submissions"] > before
    assert np.array_equal(xt.numpy(), x)
    # Work submitted before the error completed; what was recorded but not submitted was dropped.
    assert np.array_equal(ys[0].numpy(), x[:, ::-1])
    v, _ = vkops.top_k(xt, 3)
    assert np.array_equal(v.numpy(), -np.sort(-x, axis=1)[:, :3])
