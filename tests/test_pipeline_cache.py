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
    assert p.remembered("probe", ["slice1_b32"], lambda: False) is False  # a broken file is recomputed
    p.cache_path = None  # this second view of the device's cache writes nothing at exit
