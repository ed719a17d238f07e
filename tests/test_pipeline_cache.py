"""The pipeline cache file: written at exit, reloaded by the next process, ignored with a warning
when corrupt or made by another device, off with VKOPS_PIPELINE_CACHE=0."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = """
import json, numpy as np, vkops
x = np.arange(60, dtype=np.int16).reshape(6, 10)
assert np.array_equal(vkops.slice(x, [0, 0], [6, 10], [-1, 2]), x[::-1, ::2])
print(json.dumps(vkops.Device().stats()))
"""


def _run(cache_home, **env):
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    e = dict(os.environ, XDG_CACHE_HOME=str(cache_home), PYTHONPATH=path, **env)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=e, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def _files(cache_home):
    return sorted((cache_home / "vkops").glob("pipelines-*.bin"))


@pytest.mark.subgroup_free
def test_written_then_reloaded(tmp_path):
    stats, err = _run(tmp_path)
    assert stats["pipelines"] >= 1 and stats["pipeline_cache_loaded_bytes"] == 0
    (f,) = _files(tmp_path)
    raw = f.read_bytes()
    assert raw[:8] == b"VKOPSPC1" and hashlib.sha256(raw[40:]).digest() == raw[8:40]
    stats, err = _run(tmp_path)
    assert stats["pipeline_cache_loaded_bytes"] == len(raw) - 40
    assert "ignoring pipeline cache" not in err


@pytest.mark.parametrize("damage, why", [("payload", "corrupt"), ("vendor", "another device")])
@pytest.mark.subgroup_free
def test_bad_file_is_ignored_with_a_warning(tmp_path, damage, why):
    _run(tmp_path)
    (f,) = _files(tmp_path)
    raw = bytearray(f.read_bytes())
    if damage == "payload":
        raw[-1] ^= 0xFF  # the checksum no longer matches
    else:
        raw[40 + 8] ^= 0xFF  # the Vulkan header's vendorID, checksum made to match
        raw[8:40] = hashlib.sha256(bytes(raw[40:])).digest()
    f.write_bytes(bytes(raw))
    stats, err = _run(tmp_path)
    assert "ignoring pipeline cache" in err and why in err
    assert stats["pipeline_cache_loaded_bytes"] == 0
    # The process still compiled and ran, and left a good file behind.
    stats, err = _run(tmp_path)
    assert "ignoring pipeline cache" not in err and stats["pipeline_cache_loaded_bytes"] > 0


@pytest.mark.subgroup_free
def test_off_by_environment(tmp_path):
    _run(tmp_path, VKOPS_PIPELINE_CACHE="0")
    assert _files(tmp_path) == []


@pytest.mark.host_only
def test_verdicts_are_remembered_per_spirv(dev, tmp_path, monkeypatch):
    """A self-check's verdict is kept beside the pipeline cache, keyed by the SPIR-V it checked."""
    from vkops.runtime.pipelines import Pipelines

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    p = Pipelines(dev, dev._manager())
    calls = []

    def check():
        calls.append(1)
        return True

    assert p.remembered("probe", ["slice1_b32"], check) is True
    assert p.remembered("probe", ["slice1_b32"], check) is True
    assert len(calls) == 1
    assert p.remembered("probe", ["slice1_b16"], check) is True  # other SPIR-V: checked again
    assert len(calls) == 2
    (f,) = (tmp_path / "vkops").glob("verdicts-*.json")
    f.write_text("{not json")
    with pytest.warns(RuntimeWarning, match="ignoring verdict file"):  # never silently
        assert p.remembered("probe", ["slice1_b32"], lambda: False) is False  # a broken file is recomputed
    p.cache_path = None  # this second view of the device's cache writes nothing at exit


RACER = """
import json, struct, sys, time, warnings
from pathlib import Path
warnings.simplefilter("error")  # an ignored (torn) cache or verdict file fails this process
from vkops.runtime.pipelines import MAGIC, Pipelines

home, me, rounds = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

class Info:  # what the cache file name and its header check read of a device
    vendor_id, device_id, driver_version, pipeline_cache_uuid = 0x10005, 7, 1, bytes(range(16))

class Manager:  # stands in for kp's: payloads of 4 KiB to 1 MiB, so a non-atomic write would be seen torn
    n = merged = 0
    def compiled_pipelines(self): return self.n
    def get_pipeline_cache_data(self):
        size = 4096 * (1 + (self.n * 37 + me * 11) % 256)
        return struct.pack("<4I", 32, 1, Info.vendor_id, Info.device_id) + Info.pipeline_cache_uuid + bytes([me]) * size
    def merge_pipeline_cache_data(self, data): self.merged += 1

class Dev:
    info = Info()

p = Pipelines(Dev(), Manager())
verdicts = p.cache_path.with_name(p.cache_path.name.replace("pipelines-", "verdicts-").replace(".bin", ".json"))
while not (home / "go").exists():  # start together
    time.sleep(0.001)
reads = 0
for i in range(rounds):
    p._mgr.n += 1
    assert p.save() == p.cache_path
    p._load()  # checks magic, checksum and header; would warn (an error here) on a torn file
    assert p.remembered(f"v{me}-{i}", ["slice1_b32"], lambda: (me + i) % 3 == 0) == ((me + i) % 3 == 0)
    assert isinstance(json.loads(verdicts.read_text()), dict)
    reads += 2
print(reads, p._mgr.merged)
"""


def test_concurrent_processes_never_read_a_partial_cache_or_verdict_file(tmp_path):
    """Processes started together write and read the pipeline cache and the verdict file; every read
    parses and checks out (temp file + rename), and no process's verdict is lost (merged under a lock)."""
    procs, rounds = 6, 25
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    ps = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path), str(me), str(rounds)], env=env, cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for me in range(procs)]
    (tmp_path / "go").touch()
    for me, p in enumerate(ps):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"process {me}: {err[-2000:]}"
        reads, merged = map(int, out.split())
        assert reads == 2 * rounds and merged >= rounds  # every load found a whole file
    (cache,) = (tmp_path / "vkops").glob("pipelines-*.bin")
    raw = cache.read_bytes()
    assert raw[:8] == b"VKOPSPC1" and hashlib.sha256(raw[40:]).digest() == raw[8:40]
    (vfile,) = (tmp_path / "vkops").glob("verdicts-*.json")
    data = json.loads(vfile.read_text())
    want = {f"v{me}-{i}": (me + i) % 3 == 0 for me in range(procs) for i in range(rounds)}
    assert {k.rsplit("-", 1)[0]: v for k, v in data.items()} == want
    assert not list((tmp_path / "vkops").glob(".*-*"))  # no temp file left behind
