"""vkops.drivers: the loader kp uses, ICD discovery the loader's way, the headless NVIDIA fallback and the
no-device messages. Device-creating cases run in subprocesses (the loader's environment is read at
process start); NVIDIA is simulated with fake ICD files and lavapipe behind libEGL_nvidia.so.0."""
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vkops
from vkops import drivers

ROOT = Path(__file__).resolve().parent.parent
LAYERS = "/usr/share/vulkan/explicit_layer.d"  # the validation layer, still found with XDG_DATA_DIRS moved
DRIVER_VARS = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES")


def _lavapipe() -> str:
    (f,) = glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json")
    return json.loads(Path(f).read_text())["ICD"]["library_path"]


def _libm() -> str:
    import ctypes

    return drivers._real_path(ctypes.CDLL("libm.so.6"), "libm.so.6")


def _icd(path: Path, library: str, api="1.4.312") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"file_format_version": "1.0.1", "ICD": {"library_path": library, "api_version": api}}))
    return path


@pytest.fixture
def box(tmp_path):
    """Empty XDG folders, a library folder on LD_LIBRARY_PATH and a cache folder; the env to run in."""
    assert not glob.glob("/etc/vulkan/icd.d/*.json"), "this machine's /etc/vulkan/icd.d must be empty for these tests"
    for d in ("data", "cfgdirs", "cfg", "home", "cache", "lib"):
        (tmp_path / d).mkdir()
    env = {k: v for k, v in os.environ.items() if k not in DRIVER_VARS}
    env.update(XDG_DATA_DIRS=str(tmp_path / "data"), XDG_CONFIG_DIRS=str(tmp_path / "cfgdirs"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_DATA_HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), LD_LIBRARY_PATH=str(tmp_path / "lib"),
               VK_ADD_LAYER_PATH=LAYERS)
    return tmp_path, env


INTEL = "/usr/lib/x86_64-linux-gnu/libvulkan_intel.so"  # a driver that loads and finds no device here


def _nvidia(tmp: Path, absolute: bool, glx: str = "") -> Path:
    """nvidia_icd.json naming libGLX_nvidia.so.0 (libm: not a driver, or `glx`) beside libEGL_nvidia.so.0 (lavapipe)."""
    lib = tmp / "lib"
    os.symlink(glx or _libm(), lib / "libGLX_nvidia.so.0")
    os.symlink(_lavapipe(), lib / "libEGL_nvidia.so.0")
    name = str(lib / "libGLX_nvidia.so.0") if absolute else "libGLX_nvidia.so.0"
    return _icd(tmp / "data" / "vulkan" / "icd.d" / "nvidia_icd.json", name)


def _py(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)


DEVICE_ERROR = """
import vkops
try:
    vkops.Device()
except vkops.NoDeviceError as e:
    print("OSError" if isinstance(e, OSError) else "",
          "ValidationError" if isinstance(e, vkops.ValidationError) else "")
    print(e)
else:
    print("NO ERROR")
"""


@pytest.mark.parametrize("absolute,glx", [(False, ""), (True, ""), (False, INTEL)],
                         ids=["bare-name", "absolute-path", "zero-devices"])
def test_headless_fallback_writes_egl_icd_and_retries_in_process(box, absolute, glx):
    """GLX's library fails as a driver (VK_ERROR_INCOMPATIBLE_DRIVER) or finds no device (zero devices)."""
    tmp, env = box
    glx = _nvidia(tmp, absolute, glx)
    code = """
import json, os, numpy as np, vkops
from vkops import drivers
assert "VK_DRIVER_FILES" not in os.environ
v, i = vkops.top_k(np.array([[3, 1, 4, 1, 5, 9, 2, 6]], np.float32), 3)
print(json.dumps({"v": v.tolist(), "i": i.tolist(), "env": os.environ["VK_DRIVER_FILES"], "report": drivers.report(),
                  "device": vkops.Device().name}))
"""
    r = _py(code, env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # nothing printed on success
    out = json.loads(r.stdout)
    assert out["v"] == [[9.0, 6.0, 5.0]] and out["i"] == [[5, 7, 4]]
    assert "llvmpipe" in out["device"]
    (written,) = (tmp / "cache" / "vkops").glob("nvidia_egl_icd-*.json")
    egl = str(tmp / "lib" / "libEGL_nvidia.so.0") if absolute else "libEGL_nvidia.so.0"
    assert json.loads(written.read_text()) == {"file_format_version": "1.0.1",
                                               "ICD": {"library_path": egl, "api_version": "1.4.312"}}
    assert out["env"] == str(written)  # the GLX manifest replaced, nothing else was found
    fb = out["report"]["headless_fallback"]
    assert fb["file"] == str(written) and fb["replaced"] == str(glx) and fb["library"] == egl
    assert out["report"]["icd_files"] == [{"file": str(written), "library": egl, "source": "vkops fallback"}]
    assert out["report"]["driver_env"] is None  # vkops' own VK_DRIVER_FILES is not the user's


def test_info_reports_loader_icds_and_fallback(box):
    tmp, env = box
    _nvidia(tmp, absolute=False)
    r = subprocess.run([sys.executable, "-m", "vkops", "info"], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    (written,) = (tmp / "cache" / "vkops").glob("nvidia_egl_icd-*.json")
    assert f"headless NVIDIA fallback: applied: wrote {written} (libEGL_nvidia.so.0)" in r.stdout
    assert f"{written} -> libEGL_nvidia.so.0 (vkops fallback)" in r.stdout
    (loader,) = [ln for ln in r.stdout.splitlines() if ln.startswith("Vulkan loader: ")]
    assert os.path.isabs(loader.split()[2]) and "libvulkan" in loader
    assert "device 0: llvmpipe" in r.stdout


def test_other_icds_are_kept_beside_the_fallback(box):
    tmp, env = box
    _nvidia(tmp, absolute=False)
    other = _icd(tmp / "cfg" / "vulkan" / "icd.d" / "other.json", "libnot_here_vulkan.so")
    r = _py("import os, vkops; vkops.devices(); print(os.environ['VK_DRIVER_FILES'])", env)
    assert r.returncode == 0, r.stderr
    (written,) = (tmp / "cache" / "vkops").glob("nvidia_egl_icd-*.json")
    assert r.stdout.split() == [f"{other}:{written}"]  # the search order kept, GLX swapped for EGL


@pytest.mark.parametrize("var", ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"])
def test_user_driver_files_win_over_the_fallback(box, var):
    tmp, env = box
    glx = _nvidia(tmp, absolute=False)
    r = _py(DEVICE_ERROR, {**env, var: str(glx)})
    assert r.returncode == 0, r.stderr
    assert not list((tmp / "cache").rglob("nvidia_egl_icd-*.json"))  # nothing written
    assert "OSError ValidationError" in r.stdout
    assert f"{var} is set ({glx}), so vkops tried no fallback" in r.stdout
    assert f"{glx} ({var}): library libGLX_nvidia.so.0: loads, but exports no vk_icdGetInstanceProcAddr" in r.stdout


def test_no_loader_says_what_was_tried_and_what_to_install(box):
    tmp, env = box
    code = "from vkops import drivers; drivers.SYSTEM_LOADER_NAMES = ('libvulkan-missing.so.1',)\n" + DEVICE_ERROR
    r = _py(code, env)
    assert r.returncode == 0, r.stderr
    assert "OSError" in r.stdout and "no Vulkan loader found" in r.stdout
    assert "vkops.libs/libvulkan*.so* (none bundled there)" in r.stdout
    assert "libvulkan-missing.so.1 (libvulkan-missing.so.1: cannot open shared object file" in r.stdout
    assert "Install the vkops wheel" in r.stdout and "apt install libvulkan1" in r.stdout


def test_no_icd_lists_the_folders_searched(box):
    tmp, env = box
    r = _py(DEVICE_ERROR, env)
    assert r.returncode == 0, r.stderr
    assert "OSError" in r.stdout and "VK_ERROR_INCOMPATIBLE_DRIVER" in r.stdout
    assert "No ICD manifest files" in r.stdout
    for d in (tmp / "cfg", tmp / "cfgdirs", Path("/etc"), tmp / "home", tmp / "data"):
        assert str(d / "vulkan" / "icd.d") in r.stdout
    assert "Install the GPU driver's Vulkan ICD" in r.stdout and "mesa-vulkan-drivers" in r.stdout


@pytest.mark.parametrize("unreadable", [False, True], ids=["libraries-fail", "and-a-manifest-is-unreadable"])
def test_failing_icds_are_listed_with_their_libraries(box, unreadable):
    tmp, env = box
    os.symlink(_libm(), tmp / "lib" / "libfake_vulkan.so")
    icd_d = tmp / "data" / "vulkan" / "icd.d"
    missing = _icd(icd_d / "a_missing.json", "libnot_a_driver.so")
    fake = _icd(icd_d / "b_fake.json", "libfake_vulkan.so")
    broken = icd_d / "c_broken.json"
    if unreadable:
        broken.write_text("{not json")
    r = _py(DEVICE_ERROR, env)
    assert r.returncode == 0, r.stderr
    assert "OSError" in r.stdout
    if unreadable:  # this loader (1.3.239) then loads no driver at all and says VK_ERROR_OUT_OF_HOST_MEMORY
        assert "returned -1 (VK_ERROR_OUT_OF_HOST_MEMORY)" in r.stdout
        assert "a manifest that cannot be read can stop the loader" in r.stdout
        assert f"{broken} (search): library None: the manifest cannot be read (JSONDecodeError" in r.stdout
    else:
        assert "returned -9 (VK_ERROR_INCOMPATIBLE_DRIVER: no usable driver)" in r.stdout
        assert "c_broken" not in r.stdout and "cannot be read" not in r.stdout
    assert (f"{missing} (search): library libnot_a_driver.so: cannot be loaded: libnot_a_driver.so: "
            "cannot open shared object file") in r.stdout
    assert f"{fake} (search): library libfake_vulkan.so: loads, but exports no vk_icdGetInstanceProcAddr" in r.stdout
    assert "no ICD names libGLX_nvidia.so.0" in r.stdout and "set VK_DRIVER_FILES to a working ICD file" in r.stdout


def test_bad_index_lists_the_devices_and_names_vkops_device(dev, monkeypatch):
    monkeypatch.setenv("VKOPS_DEVICE", "7")
    n = len(vkops.devices())
    with pytest.raises(vkops.ValidationError) as e:
        vkops.Device()
    msg = str(e.value)
    assert isinstance(e.value, vkops.NoDeviceError) and isinstance(e.value, OSError)
    assert f"Device.index must be < {n} (devices found: 0: {dev.name} (cpu, {dev.driver})" in msg
    assert "got 7 (from VKOPS_DEVICE=7)" in msg and "set VKOPS_DEVICE to one" in msg
    monkeypatch.delenv("VKOPS_DEVICE")
    with pytest.raises(vkops.ValidationError, match=rf"got {n + 2}\. Pass an index below {n}"):
        vkops.Device(n + 2)


def test_bundled_loader_is_preferred(box):
    tmp, env = box
    libs = tmp / "site" / "vkops.libs"
    libs.mkdir(parents=True)
    bundled = libs / "libvulkan-0123abcd.so.1.3.239"
    shutil.copy(drivers._real_path(drivers.loader(), "libvulkan.so.1"), bundled)
    env["VK_DRIVER_FILES"] = glob.glob("/usr/share/vulkan/icd.d/lvp_icd*.json")[0]
    code = f"""
from pathlib import Path
from vkops import drivers
drivers.bundled_dir = lambda: Path({str(libs)!r})
print(drivers.loader_candidates()[0]); import vkops; print(vkops.devices()[0].name); print(drivers.loader_path())
"""
    r = _py(code, env)
    assert r.returncode == 0, r.stderr
    first, name, used = r.stdout.split("\n")[:3]
    assert first == str(bundled) and used == str(bundled) and "llvmpipe" in name


def test_icd_discovery_follows_the_loader(tmp_path, monkeypatch):
    for v in DRIVER_VARS:
        monkeypatch.delenv(v, raising=False)
    a = _icd(tmp_path / "cfg" / "vulkan" / "icd.d" / "a.json", "../lib/liba.so")  # relative to the manifest
    b = _icd(tmp_path / "data" / "vulkan" / "icd.d" / "b.json", "libb.so")
    extra = _icd(tmp_path / "extra.json", "/opt/libx.so")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_DIRS", str(tmp_path / "data"))
    monkeypatch.setenv("VK_ADD_DRIVER_FILES", str(extra))
    found = [(i.file, i.path, i.source) for i in drivers.icd_files() if str(tmp_path) in i.file]
    assert found == [(str(extra), "/opt/libx.so", "VK_ADD_DRIVER_FILES"),
                     (str(a), str(tmp_path / "cfg" / "vulkan" / "lib" / "liba.so"), "search"),
                     (str(b), "libb.so", "search")]
    dirs = drivers.search_dirs()
    assert dirs.index(str(tmp_path / "cfg" / "vulkan" / "icd.d")) < dirs.index("/etc/vulkan/icd.d") < \
        dirs.index(str(tmp_path / "data" / "vulkan" / "icd.d"))
    monkeypatch.setenv("VK_ICD_FILENAMES", f"{tmp_path / 'data' / 'vulkan' / 'icd.d'}:{extra}")  # folders too
    assert [(i.file, i.source) for i in drivers.icd_files()] == [(str(b), "VK_ICD_FILENAMES"),
                                                                 (str(extra), "VK_ICD_FILENAMES")]
    assert drivers.user_driver_env() == "VK_ICD_FILENAMES" and drivers.headless_fallback() is None


def test_drivers_that_find_no_device_say_so(box):
    tmp, env = box
    intel = _icd(tmp / "data" / "vulkan" / "icd.d" / "intel.json", INTEL)
    r = _py(DEVICE_ERROR, env)
    assert r.returncode == 0, r.stderr
    assert "OSError ValidationError" in r.stdout
    assert "Device.index must be < 0 (no Vulkan devices found); got 0" in r.stdout
    assert "the loader found 0 devices" in r.stdout
    assert f"{intel} (search): library {INTEL}: loads and exports vk_icdGetInstanceProcAddr" in r.stdout
    assert "Every driver loads but none sees a device: make the GPU visible" in r.stdout
