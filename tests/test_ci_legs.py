"""CI legs (tests/conftest.py, LEGS; DEVELOPERS.md "Limits and CI legs"): an unmarked test runs in every
leg, a marker takes a test out only of the legs its setting cannot change, and the audit fails a marked
test that runs what its marker says it does not, so a device test cannot drop out of a leg unnoticed."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import conftest

pytestmark = pytest.mark.host_only  # the inner runs set their own legs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

INNER = """
import numpy as np
import pytest
import vkops

def flip():
    return vkops.slice(np.arange(8, dtype=np.float32), [0], [8], [-1])

@pytest.mark.host_only
def test_host_only_runs_a_kernel():
    flip()

@pytest.mark.subgroup_free
def test_subgroup_free_reads_the_subgroup_size():
    assert vkops.Device().subgroup_size >= 1

@pytest.mark.subgroup_free
def test_subgroup_free_slice():
    flip()

@pytest.mark.host_only
def test_host_only_validation():
    with pytest.raises(vkops.ValidationError):
        vkops.top_k(np.zeros(3, np.float64), 1)

def test_unmarked():
    flip()
"""


def test_unmarked_tests_run_in_every_leg():
    def runs_in(leg, *markers):
        return not set(markers) & set(conftest.LEGS[leg][0])

    assert set(conftest.LEGS) == {"default", "limits", "subgroup"}
    assert all(runs_in(leg) for leg in conftest.LEGS)
    assert runs_in("default", "host_only") and runs_in("default", "subgroup_free")
    assert not runs_in("limits", "host_only") and runs_in("limits", "subgroup_free")
    assert not runs_in("subgroup", "host_only") and not runs_in("subgroup", "subgroup_free")


def inner(tmp_path, *args, **env):
    (tmp_path / "tests").mkdir(exist_ok=True)
    shutil.copy(HERE / "conftest.py", tmp_path / "tests" / "conftest.py")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")  # the markers
    (tmp_path / "tests" / "test_inner.py").write_text(INNER)
    e = {k: v for k, v in os.environ.items() if k not in ("VKOPS_CI_LEG", "VKOPS_DEVICE_LIMITS", "LP_NATIVE_VECTOR_WIDTH")}
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    e.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", *args],
                          cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)


def test_the_audit_fails_a_wrong_marker(tmp_path):
    r = inner(tmp_path)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "marked host_only but ran kernels ['slice1_b32']" in out, out
    if conftest._on_lavapipe():  # where subgroup_free is checked
        assert "marked subgroup_free but depends on the subgroup size through [\"the device's subgroup size\"]" in out
        assert "5 passed, 2 errors" in out, out
    else:
        assert "5 passed, 1 error" in out, out


def test_each_leg_leaves_out_only_its_markers(tmp_path):
    def collected(**env):
        r = inner(tmp_path, "--collect-only", **env)
        assert r.returncode == 0, r.stdout + r.stderr
        return sorted(ln.split("::")[1] for ln in r.stdout.splitlines() if "::" in ln)

    everything = collected()
    assert len(everything) == 5
    assert collected(VKOPS_CI_LEG="limits", VKOPS_DEVICE_LIMITS="minimum") == \
        ["test_subgroup_free_reads_the_subgroup_size", "test_subgroup_free_slice", "test_unmarked"]
    assert collected(VKOPS_CI_LEG="subgroup", LP_NATIVE_VECTOR_WIDTH="128") == ["test_unmarked"]
    r = inner(tmp_path, "--collect-only", VKOPS_CI_LEG="subgroup")  # its setting missing
    assert r.returncode == pytest.ExitCode.USAGE_ERROR
    assert "VKOPS_CI_LEG=subgroup runs what LP_NATIVE_VECTOR_WIDTH can change" in r.stderr, r.stderr
    # a leg whose selection is empty stops with a usage error naming why, never pytest's exit 5
    r = inner(tmp_path, "-k", "host_only", VKOPS_CI_LEG="limits", VKOPS_DEVICE_LIMITS="minimum")
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "VKOPS_CI_LEG=limits deselects all 2 tests collected" in r.stderr, r.stderr
