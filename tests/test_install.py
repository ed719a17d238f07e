"""The README's install path without make, in a fresh venv: the vkops wheel (`pip wheel .`) carries its
SPIR-V and manifest; with only numpy and that wheel, `import vkops` and descriptor validation work and
the first device call raises an ImportError that says how to get the patched kp; with the patched kp
wheel added (build/kp/wheel, which `make setup` built), `pip check` is clean and the operators run.
(The make path is the one the rest of the suite runs in; `make setup` builds kp with `pip wheel` of
the patched tree, the same build `pip install ./patches/kp-0.9.0` does.)

Slow (a venv and pip installs, about half a minute), so it runs where VKOPS_TEST_INSTALL=1: CI's first
leg (.ci/run). `VKOPS_TEST_INSTALL=1 .venv/bin/python -m pytest tests/test_install.py` runs it here."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(os.environ.get("VKOPS_TEST_INSTALL") != "1",
                                reason="install paths: set VKOPS_TEST_INSTALL=1 (CI's first leg does)")

SMOKE = """
import numpy as np, vkops
vkops.TensorDesc("float32", (2, 3)).validate()
try:
    vkops.Slice1Desc(vkops.TensorDesc("float32", (4,)), vkops.TensorDesc("float32", (3,)), (0,), (4,), (2,)).validate()
    raise SystemExit("validation did not run")
except vkops.ValidationError as e:
    assert "MaxCopiedElements" in str(e)
try:
    v, i = vkops.top_k(np.array([[3.0, 1.0, 2.0]], np.float32), 2)
except ImportError as e:
    print("IMPORTERROR", e)
else:
    assert v.tolist() == [[3.0, 2.0]] and i.tolist() == [[0, 2]], (v, i)
    y = vkops.quantized_linear_matmul(np.ones((3, 2, 4), np.int8), 0.5, None, np.ones((4, 5), np.int8), 0.5, None,
                                      0.25, None)
    assert y.shape == (3, 2, 5) and (y == 4).all(), y
    print("RAN", vkops.Device().name)
"""


def run(*cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_wheel_without_kp_then_with_it(tmp_path):
    kp_wheels = sorted((ROOT / "build" / "kp" / "wheel").glob(f"kp-0.9.0-cp{sys.version_info[0]}{sys.version_info[1]}-*.whl"))
    assert kp_wheels, "build/kp/wheel has no kp wheel for this Python: run `make setup` first"

    # the vkops wheel carries every SPIR-V module named in its manifest
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", ROOT,
        cwd=ROOT)
    (wheel,) = (tmp_path / "dist").glob("vkops-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "vkops/spv/manifest.json" in names
    import json
    manifest = json.loads(zipfile.ZipFile(wheel).read("vkops/spv/manifest.json"))
    for mod in manifest["modules"].values():
        assert f"vkops/spv/{mod['file']}" in names

    # a fresh venv with numpy and the wheel only
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    run(py, "-m", "pip", "install", "-q", f"numpy=={np.__version__}", wheel)
    out = run(py, "-c", SMOKE, cwd=tmp_path)
    assert "IMPORTERROR" in out, out
    assert "make kp-wheel" in out and f"{py} -m pip install dist/kp-0.9.0-" in out
    assert f"{py} -m pip install ./patches/kp-0.9.0" in out

    # the patched kp wheel added: the supported set, and pip agrees with its requirements
    run(py, "-m", "pip", "install", "-q", "--no-deps", kp_wheels[-1])
    assert "No broken requirements found" in run(py, "-m", "pip", "check")
    out = run(py, "-c", SMOKE, cwd=tmp_path)
    assert "RAN" in out and "IMPORTERROR" not in out, out
