"""Device memory the host maps (resizable BAR: kp `device_host` tensors, runtime/memory.py): uploads are written in
place with no submission, reads up to MAPPED_READ_BYTES are made in place, larger ones through staging; which
devices get it. lavapipe offers such memory (its one memory type is device-local and host-visible), so the
allocator of a GPU with resizable BAR runs here as it would there."""
import types

import numpy as np
import pytest

import vkops
from vkops.bench import decode
from vkops.runtime import device as device_mod
from vkops.runtime import memory
from conftest import device_memory


@pytest.fixture
def bar(dev):
    with device_memory(dev, "mapped"):
        yield dev


def _fake(device_type="discrete", mapped=0, local=80 << 30):
    info = types.SimpleNamespace(mapped_local_bytes=mapped, device_local_bytes=local)
    return types.SimpleNamespace(device_type=device_type, info=info)


@pytest.mark.parametrize("kind, mapped, local, env", [
    ("mapped", 80 << 30, 80 << 30, ""),        # resizable BAR: the whole heap is mapped
    ("mapped", 80 << 30, 80 << 30 | 1 << 28, ""),  # and a small extra device-local heap
    ("storage", 1 << 28, 8 << 30, ""),         # a 256 MiB window: device memory behind staging
    ("storage", 0, 8 << 30, ""),               # no such memory type
    ("storage", 80 << 30, 80 << 30, "0"),      # turned off
    ("mapped", 1 << 28, 8 << 30, "1"),         # asked for
    ("storage", 0, 8 << 30, "1"),              # asked for, not offered
])
def test_memory_kind(monkeypatch, kind, mapped, local, env):
    monkeypatch.setenv("VKOPS_MAPPED_MEMORY", env)
    assert device_mod.Device._memory_kind(_fake(mapped=mapped, local=local)) == kind
    assert device_mod.Device._memory_kind(_fake("cpu", mapped, local)) == "host"


def test_upload_in_place(bar, rng):
    """An upload into mapped device memory is a write: no submission, no staging buffer."""
    dev = bar
    a = rng.standard_normal((256, 1024)).astype(np.float32)
    x = dev.tensor(a)
    assert x._buffer.host_visible and not x._buffer.host_cached
    s0 = dev.stats()
    b = rng.standard_normal((256, 1024)).astype(np.float32)
    x.upload(b)
    s = dev.stats()
    assert s["submissions"] == s0["submissions"] and s["staging_created"] == s0["staging_created"]
    np.testing.assert_array_equal(x.numpy(), b)


@pytest.mark.parametrize("extra", [-4, 0, 4])
def test_read_in_place_up_to_the_limit(bar, rng, extra):
    """A read of MAPPED_READ_BYTES or less is made in place (no submission); 4 bytes more go through staging (one
    submission); exact either way, after a call writes the tensor."""
    dev = bar
    n = (memory.MAPPED_READ_BYTES + extra) // 4
    a = rng.standard_normal((1, n)).astype(np.float32)
    x = dev.tensor(a)
    y = vkops.slice(x, (0, 0), (1, n), (1, -1))  # in flight: the read waits for it
    s0 = dev.stats()
    np.testing.assert_array_equal(y.numpy(), a[:, ::-1])
    s = dev.stats()
    assert s["submissions"] - s0["submissions"] == (1 if extra > 0 else 0)


def test_numpy_calls(bar, rng):
    """NumPy calls on mapped memory: inputs written in place, small outputs read in place, large through staging;
    exact, and repeats (recipes) too."""
    dev = bar
    for rows, cols in ((1, 64), (64, 2048)):  # 128 bytes out, read in place; 256 KiB, staged
        for _ in range(3):
            a = rng.standard_normal((rows, cols)).astype(np.float32)
            np.testing.assert_array_equal(vkops.slice(a, (0, 0), (rows, cols), (1, -2)), a[:, ::-2])
            v, i = vkops.top_k(a, 5)
            want = np.argsort(-a, axis=1, kind="stable")[:, :5]
            np.testing.assert_array_equal(i, want)
            np.testing.assert_array_equal(v, np.take_along_axis(a, want, 1))


@pytest.mark.parametrize("mode", ["eager", "batch", "replay"])
def test_decode_step(bar, mode):
    """The decode step's token written in place and its top-k read in place: every token exact."""
    model = decode.Model(decode.STEPS["tiny"])
    vk = decode.VkopsStep(model, bar)
    for x in model.tokens(4):
        assert decode._check(mode, getattr(vk, mode)(x), model.oracle(x)) is None
    if mode == "replay":
        assert not vk.graph._fetch_stages and not vk.graph._stages  # fed and fetched in place
        s0 = bar.stats()
        vk.replay(model.tokens(1, seed=9)[0])
        assert bar.stats()["submissions"] - s0["submissions"] == 1
        vk.graph.close()


def test_graph_fetch_beyond_the_limit_is_staged(bar, rng):
    dev = bar
    n = memory.MAPPED_READ_BYTES // 4 + 256
    x = dev.tensor(rng.standard_normal((1, n)).astype(np.float32))
    with dev.graph() as g:
        y = vkops.slice(x, (0, 0), (1, n), (1, -1))
    for _ in range(2):
        a = rng.standard_normal((1, n)).astype(np.float32)
        np.testing.assert_array_equal(g.run(feed={x: a}, fetch=y), a[:, ::-1])
    assert len(g._fetch_stages) == 1 and not g._stages
    g.close()


def test_cached_mapped_memory_reads_in_place(dev, rng):
    """An integrated GPU's mapped memory is HOST_CACHED too (DeviceInfo.mapped_local_cached): reads of any size are
    made in place."""
    with device_memory(dev, "mapped", cached=dev.info.mapped_local_cached):
        assert dev.info.mapped_local_cached and dev.info.mapped_local_bytes == dev.info.device_local_bytes  # lavapipe: one type, cached
        a = rng.standard_normal((256, 1024)).astype(np.float32)
        y = vkops.slice(dev.tensor(a), (0, 0), (256, 1024), (1, -1))
        s0 = dev.stats()
        np.testing.assert_array_equal(y.numpy(), a[:, ::-1])
        assert dev.stats()["submissions"] == s0["submissions"]
        del y
