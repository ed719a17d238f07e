"""libvkops on a device: the example runtime (examples/libvkops_mlp/mlp.c: its own instance, device, one
buffer, its command buffer) runs a quantized two-layer MLP and TOP_K1 through libvkops on the default
Vulkan device under the validation layer with synchronization validation (zero messages), checks itself
against its CPU reference, and its outputs equal vkops' Python path's bit for bit on the same inputs."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build/libvkops/mlp"
sys.path.insert(0, str(ROOT / "examples/libvkops_mlp"))
import python_step  # noqa: E402


@pytest.fixture(scope="module")
def mlp():
    r = subprocess.run(["make", "-s", "capi-example"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return EXE


def run(exe, *args, validate=True):
    env = dict(os.environ, VKOPS_VALIDATE="1" if validate else "0")
    env.pop("VK_LAYER_SETTINGS_PATH", None)  # the example sets the layer up itself and counts its messages
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


# Sizes on the operators' boundaries: one row (the GEMV path), a few rows, rows of a workgroup +- 1, and
# vocabularies below and above a TOP_K1 workgroup's buffer.
@pytest.mark.parametrize("m,k,hidden,n,topk", [(1, 64, 96, 1000, 8), (3, 70, 130, 257, 5), (17, 255, 256, 513, 50),
                                                (2, 32, 64, 4097, 1)])
def test_example_equals_python_path(mlp, tmp_path, m, k, hidden, n, topk):
    r = run(mlp, "--m", m, "--k", k, "--hidden", hidden, "--n", n, "--topk", topk, "--steps", 3, "--dump", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check (%d of %d rows) against the CPU reference: equal" % (m, m) in r.stdout
    assert "validation messages: 0" in r.stdout and "validation:" not in r.stderr
    meta, ins, want = python_step.load(tmp_path)
    got = python_step.step(meta, **ins)
    for name, g in zip(("h", "logits", "values", "indices"), got):
        assert np.array_equal(g, want[name]), name


def test_self_check_runs_its_cases(mlp):
    # lavapipe has no cooperative matrices: VKOPS_SELF_CHECK_PORTABLE=1 sends the self-check's cases (every
    # auto tile's shape, split-K ones, column-major B, zero points) through the kernels it has, on the
    # caller's queue, under the validation layer; a case off from the CPU reference fails the call.
    env = dict(os.environ, VKOPS_VALIDATE="1", VKOPS_SELF_CHECK_PORTABLE="1")
    env.pop("VK_LAYER_SETTINGS_PATH", None)
    r = subprocess.run([str(mlp), "--m", "2", "--k", "40", "--hidden", "48", "--n", "100", "--topk", "3", "--steps", "1"],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "validation messages: 0" in r.stdout and "cooperative matrices: not offered" in r.stdout
