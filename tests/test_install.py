"""The install routes, each in a fresh venv holding only numpy.

The wheel route (test_self_contained_wheel): the wheel `make wheels` builds for this Python installs with
`pip install --no-index --find-links dist vkops`, no compiler on PATH; it carries the patched kp
(vkops._vendor.kp) and the Vulkan loader and fmt (vkops.libs/), and all three operators give NumPy's
results on the default device, under the validation layer (the bundled loader finds the system's layers).

The source route: the pure vkops wheel (`pip wheel .`) carries its
SPIR-V and manifest; with only numpy and that wheel, `import vkops` and descriptor validation work and
the first device call raises an ImportError that says how to get the patched kp; with the patched kp
wheel added (build/kp/wheel, which `make setup` built), `pip check` is clean and the operators run.
(The make path is the one the rest of the suite runs in; `make setup` builds kp with `pip wheel` of
the patched tree, the same build `pip install ./patches/kp-0.9.0` does.)

Slow (venvs and pip installs, about a minute), so it runs where VKOPS_TEST_INSTALL=1: CI's first
leg (.ci/run). `VKOPS_TEST_INSTALL=1 .venv/bin/python -m pytest tests/test_install.py` runs it here."""
import json
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
    assert not [n for n in names if n.endswith(".so")], "the pure wheel carries a binary (a stale vendored kp?)"
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


# All three operators on random data against vkops.reference, from an installed wheel; then where kp and the
# Vulkan loader came from and whether the validation layer was loaded (the process's own mappings).
OPERATORS = """
import numpy as np, vkops
from vkops import reference as ref
rng = np.random.default_rng(7)
x = rng.integers(-4, 5, (3, 130)).astype(np.float32)               # ties; rows longer than a workgroup
v, i = vkops.top_k(x, 9)
rv, ri = ref.top_k1(x, 9, 1)
assert np.array_equal(v, rv) and np.array_equal(i, ri), (v, rv)
s = rng.standard_normal((5, 7, 9)).astype(np.float16)
y = vkops.slice(s, (1, 0, 2), (4, 7, 6), (2, -3, 1))
assert np.array_equal(y, ref.slice1(s, (1, 0, 2), (4, 7, 6), (2, -3, 1)))
a, b = rng.integers(-128, 128, (2, 33, 70), np.int8), rng.integers(-128, 128, (70, 17), np.int8)
q = vkops.quantized_linear_matmul(a, 0.013, np.int8(3), b, 0.017, np.int8(-2), 0.7, np.int8(1))  # no exact .5 ties
assert np.array_equal(q, ref.quantized_linear_matmul(a, 0.013, np.int8(3), b, 0.017, np.int8(-2), 0.7, np.int8(1)))
import vkops.runtime._kp as K
maps = open("/proc/self/maps").read()
loaders = sorted({l.split()[-1] for l in maps.splitlines()  # the loader, not the drivers (libvulkan_lvp.so)
                  if l.split()[-1].rsplit("/", 1)[-1].startswith(("libvulkan.so", "libvulkan-"))})
print("KP", K.kp().__file__)
print("LOADER", loaders)
print("LAYER", "libVkLayer_khronos_validation" in maps)
print("DEVICE", vkops.Device().name)
"""


def test_self_contained_wheel(tmp_path, capsys):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    run("make", "-s", "wheels", f"WHEEL_PYS={sys.executable}", cwd=ROOT)
    (wheel,) = (ROOT / "dist").glob(f"vkops-*-{tag}-{tag}-manylinux_*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    vendored = sorted(n for n in names if n.endswith(".so") or ".so." in n)
    assert any(n.startswith("vkops/_vendor/kp.") for n in vendored), vendored
    assert any(n.startswith("vkops.libs/libvulkan") for n in vendored), vendored
    assert any(n.startswith("vkops.libs/libfmt") for n in vendored), vendored
    assert "vkops/_native/libvkops.so" in vendored, vendored  # libvkops: the default planner
    manifest = json.loads(zipfile.ZipFile(wheel).read("vkops/spv/manifest.json"))
    assert all(f"vkops/spv/{m['file']}" in names for m in manifest["modules"].values())
    with capsys.disabled():
        print(f"\n{wheel.name}: {wheel.stat().st_size / 2**20:.1f} MiB; vendors {', '.join(vendored)}")

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    run(py, "-m", "pip", "install", "-q", f"numpy=={np.__version__}")
    # no compiler, no apt, no network: only the venv's own bin/ and the system's core tools
    path = f"{venv / 'bin'}:/usr/bin:/bin"
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("cc", "gcc", "g++", "c++", "cmake", "make"):  # shadow them: pip must not find a compiler
        (bare / tool).write_text("#!/bin/sh\necho compiler called: $0 >&2; exit 99\n")
        (bare / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{bare}:{path}", PIP_NO_INDEX="1")
    env.pop("PYTHONPATH", None)
    run(py, "-m", "pip", "install", "-q", "--no-index", "--find-links", ROOT / "dist", "vkops", env=env, cwd=tmp_path)
    assert "No broken requirements found" in run(py, "-m", "pip", "check", env=env)
    out = run(py, "-c", OPERATORS, env=env, cwd=tmp_path)
    site = run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])", env=env).strip()
    kp_line = next(line for line in out.splitlines() if line.startswith("KP "))
    assert kp_line.startswith(f"KP {site}/vkops/_vendor/kp."), out
    loaders = json.loads(next(line for line in out.splitlines() if line.startswith("LOADER "))[7:].replace("'", '"'))
    assert loaders and all(l.startswith(f"{site}/vkops.libs/libvulkan") for l in loaders), out
    info = run(py, "-m", "vkops", "info", env=env, cwd=tmp_path)  # says which loader: the bundled one
    assert f"Vulkan loader: {site}/vkops.libs/libvulkan" in info and "kp 0.9.0 (in the vkops wheel)" in info, info
    assert f"planner: libvkops ({site}/vkops/_native/libvkops.so)" in info, info
    if os.environ.get("VK_INSTANCE_LAYERS"):  # the suite's validation layer, found by the bundled loader
        assert "LAYER True" in out, out
    with capsys.disabled():
        print(f"installed with pip alone; {kp_line}; {next(l for l in out.splitlines() if l.startswith('DEVICE'))}")
