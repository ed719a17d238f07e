"""Device memory the host maps (resizable BAR: kp `device_host` tensors, runtime/memory.py): uploads are written in
place with no submission; an eager read is made in place up to MAPPED_STREAM_READ_BYTES where libvkops' streaming loads
are there (else MAPPED_READ_BYTES), a batch's download or a graph's fetch up to MAPPED_READ_BYTES (their staging copy
rides in a submission made anyway), larger ones through staging; which devices get it. lavapipe offers such memory (its one memory type is device-local and host-visible), so the
allocator of a GPU with resizable BAR runs here as it would there."""
import types

import numpy as np
import pytest

import vkops
from vkops.bench import decode
import capi
from vkops.runtime import device as device_mod
from vkops.runtime import hostcopy, memory
from conftest import device_memory


@pytest.fixture
def reads(monkeypatch):
    """The bytes of each read libvkops' vkops_read_mapped (the source tree's build, as tests/capi.py loads it) makes
    for the runtime."""
    real, seen = capi.lib().vkops_read_mapped, []
    monkeypatch.setattr(hostcopy, "_reader", lambda dst, src, n: (seen.append(n), real(dst, src, n))[1])
    return seen


@pytest.fixture(params=["streaming", "numpy"])
def bar(request, dev, reads, monkeypatch):
    """Device memory as under resizable BAR, read in place by libvkops' streaming loads or by NumPy's copy."""
    monkeypatch.setattr(hostcopy, "STREAM_READS", request.param == "streaming")
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


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 52, 63, 64, 65, 200, 1000, 4096])
@pytest.mark.parametrize("offset", [0, 16, 3])
def test_vkops_read_mapped(rng, n, offset):
    """libvkops' copy out of mapped memory (streaming loads where the source is 16-byte aligned, memcpy where not) is
    exact at every length around its 16- and 64-byte steps; nothing written past `n`."""
    lib = capi.lib()
    src = np.zeros(n + 64 + 16, np.uint8)
    start = (-src.ctypes.data) % 16 + offset
    src[start:start + n] = rng.integers(0, 256, n, dtype=np.uint8)
    dst = np.full(n + 32, 0xA5, np.uint8)
    lib.vkops_read_mapped(dst.ctypes.data, src.ctypes.data + start, n)
    np.testing.assert_array_equal(dst[:n], src[start:start + n])
    assert (dst[n:] == 0xA5).all()
    assert lib.vkops_read_mapped_streams() in (0, 1)


@pytest.mark.parametrize("dtype, shape", [("int8", (1, 50)), ("uint32", (1, 50)), ("float16", (3, 77)),
                                          ("float32", (2, 512))])
def test_reads_by_streaming_loads(dev, reads, monkeypatch, rng, dtype, shape):
    """With libvkops' reader, an eager read of mapped device memory up to MAPPED_STREAM_READ_BYTES goes through it
    once, exact, for packed tensors and strided views; a graph's fetch up to MAPPED_READ_BYTES too, a larger one is
    staged in the graph's submission."""
    monkeypatch.setattr(hostcopy, "STREAM_READS", True)
    with device_memory(dev, "mapped"):
        a = (rng.standard_normal(shape) * 100).astype(dtype)
        x = dev.tensor(a)
        y = vkops.slice(x, (0, 0), shape, (1, -1))
        np.testing.assert_array_equal(y.numpy(), a[:, ::-1])
        assert reads == [a.nbytes]
        view = x.as_strided((shape[0], -(-shape[1] // 2)), (shape[1], 2))  # every other element: not packed
        np.testing.assert_array_equal(view.numpy(), a[:, ::2])
        assert len(reads) == 2
        with dev.graph() as g:
            z = vkops.slice(x, (0, 0), shape, (1, -1))
        for _ in range(2):
            b = (rng.standard_normal(shape) * 100).astype(dtype)
            np.testing.assert_array_equal(g.run(feed={x: b}, fetch=z), b[:, ::-1])
        in_place = a.nbytes <= memory.MAPPED_READ_BYTES
        assert len(reads) == (4 if in_place else 2) and bool(g._fetch_stages) != in_place
        g.close()
        del x, y, z


def test_numpy_calls_read_by_streaming_loads(dev, reads, monkeypatch, rng):
    """A small NumPy call on mapped memory reads its outputs in place through libvkops' reader: the first call
    (its batch's downloads) and its repeats (a recipe) alike, one read an output, exact."""
    monkeypatch.setattr(hostcopy, "STREAM_READS", True)
    with device_memory(dev, "mapped"):
        r0 = dev.stats()["recipe_runs"]
        for _ in range(3):
            a = rng.standard_normal((2, 300)).astype(np.float32)
            v, i = vkops.top_k(a, 7)
            want = np.argsort(-a, axis=1, kind="stable")[:, :7]
            np.testing.assert_array_equal(i, want)
            np.testing.assert_array_equal(v, np.take_along_axis(a, want, 1))
        assert dev.stats()["recipe_runs"] - r0 == 2 and reads == [2 * 7 * 4] * 6


@pytest.mark.parametrize("extra", [-4, 0, 4])
def test_read_in_place_up_to_the_limit(bar, rng, extra):
    """An eager read of mapped_read_bytes(alone=True) or less is made in place (no submission); 4 bytes more go
    through staging (one submission); exact either way, after a call writes the tensor."""
    dev = bar
    limit = memory.MAPPED_STREAM_READ_BYTES if hostcopy.STREAM_READS else memory.MAPPED_READ_BYTES
    assert memory.mapped_read_bytes(alone=True) == limit and memory.mapped_read_bytes() == memory.MAPPED_READ_BYTES
    n = (limit + extra) // 4
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


@pytest.mark.parametrize("extra", [0, 4])
def test_batch_download_in_place_up_to_the_limit(bar, rng, extra):
    """A batch's download of mapped memory is read in place up to MAPPED_READ_BYTES (streaming loads or not);
    beyond it the copy into staging rides in the batch's own submission."""
    dev = bar
    n = (memory.MAPPED_READ_BYTES + extra) // 4
    a = rng.standard_normal((1, n)).astype(np.float32)
    x = dev.tensor(a)
    b = dev.batch()
    with b:
        y = vkops.slice(x, (0, 0), (1, n), (1, -1))
        b.download(y)
    host = [h for buf, h, _ in b._downloads if buf is y._buffer][0]
    assert (host is y._buffer) == (extra == 0)
    np.testing.assert_array_equal(b.host_words(y).view(np.float32).reshape(1, n), a[:, ::-1])


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
