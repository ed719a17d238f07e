"""Which Vulkan loader vkops and kp use, which driver (ICD) files it reads, and why no device was found."""
# Pure Python and ctypes (no kp): vkinfo creates the first VkInstance through `loader()` and, on "no
# usable driver", calls `headless_fallback()` once; the loader reads VK_DRIVER_FILES at every
# vkCreateInstance, so the retry, and kp's later instance, see the drivers it chose.
from __future__ import annotations

import ctypes as C
import glob
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

# The system loader under its Linux/Android, Windows and macOS names, tried after a bundled one.
SYSTEM_LOADER_NAMES = ("libvulkan.so.1", "libvulkan.so", "vulkan-1.dll", "libvulkan.1.dylib", "libMoltenVK.dylib")
DRIVER_ENV = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")  # the user's override, newest name first
GLX_NVIDIA, EGL_NVIDIA = "libGLX_nvidia.so.0", "libEGL_nvidia.so.0"
VK_ERROR_INCOMPATIBLE_DRIVER = -9
RESULTS = {-1: "VK_ERROR_OUT_OF_HOST_MEMORY", -3: "VK_ERROR_INITIALIZATION_FAILED", -6: "VK_ERROR_LAYER_NOT_PRESENT",
           -7: "VK_ERROR_EXTENSION_NOT_PRESENT", -9: "VK_ERROR_INCOMPATIBLE_DRIVER: no usable driver"}

_loaded: Optional[Tuple[C.CDLL, str]] = None
# The headless fallback, once applied: {"file", "library", "replaced", "api_version"}.
fallback: Optional[dict] = None


def bundled_dir() -> Path:
    """Where auditwheel puts the libraries of the vkops wheel (vkops._vendor.kp links its loader there)."""
    return Path(__file__).resolve().parent.parent / "vkops.libs"


def loader_candidates() -> List[str]:
    """The loaders to try, in order: the wheel's bundled one (kp's), then the system's names."""
    return sorted(glob.glob(str(bundled_dir() / "libvulkan*.so*"))) + list(SYSTEM_LOADER_NAMES)


def loader() -> C.CDLL:
    """The Vulkan loader, loaded once; raises vkops.NoDeviceError (an OSError) naming what was tried."""
    global _loaded
    if _loaded is None:
        tried = []
        for name in loader_candidates():
            try:
                lib = C.CDLL(name)
            except OSError as e:
                tried.append(f"{name} ({e})")
                continue
            _loaded = (lib, _real_path(lib, name))
            break
        else:
            from .errors import NoDeviceError  # noqa: PLC0415

            raise NoDeviceError(
                f"no Vulkan loader found: tried {bundled_dir()}/libvulkan*.so* (none bundled there) and "
                f"{'; '.join(tried)}. Install the vkops wheel (it bundles the loader) or the system's Vulkan "
                f"loader (Debian/Ubuntu: apt install libvulkan1; Fedora: dnf install vulkan-loader)")
    return _loaded[0]


def loader_path() -> Optional[str]:
    """The real path of the loader `loader()` loaded, or None before it did."""
    return None if _loaded is None else _loaded[1]


class _LinkMap(C.Structure):
    _fields_ = [("l_addr", C.c_void_p), ("l_name", C.c_char_p)]


def _real_path(lib: C.CDLL, name: str) -> str:
    """The file dlopen chose for `lib`: dlinfo's link map, else /proc/self/maps, else the name."""
    try:
        lm = C.POINTER(_LinkMap)()
        if C.CDLL(None).dlinfo(C.c_void_p(lib._handle), 2, C.byref(lm)) == 0 and lm.contents.l_name:  # RTLD_DI_LINKMAP
            return os.path.realpath(lm.contents.l_name.decode())
    except (AttributeError, OSError, ValueError):
        pass
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "libvulkan" in ln and "/" in ln}
        want = os.path.basename(name).split(".so")[0]
        hit = sorted(p for p in paths if os.path.basename(p).startswith(want))
        if hit:
            return os.path.realpath(hit[0])
    except OSError:
        pass
    return name


@dataclass(frozen=True)
class ICD:
    """One driver manifest the loader reads: the file, the library it names (as written and as the
    loader would dlopen it), its api_version, and where it was found."""
    file: str
    library: Optional[str]
    path: Optional[str]  # absolute for a path, the bare name for dlopen's own search
    api_version: Optional[str]
    source: str  # "VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", "search", "vkops fallback"
    error: Optional[str] = None  # why the manifest could not be read


def user_driver_env() -> Optional[str]:
    """The variable (VK_DRIVER_FILES or VK_ICD_FILENAMES) the user set, or None (vkops' own is not the user's)."""
    for var in DRIVER_ENV:
        if os.environ.get(var) and not (var == "VK_DRIVER_FILES" and fallback is not None):
            return var
    return None


def search_dirs() -> List[str]:
    """The directories the Linux loader searches for ICD manifests when no override is set, in its order."""
    home = os.path.expanduser("~")
    bases = [os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")]
    bases += (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") + ["/etc"]
    bases += [os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")]
    bases += (os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
    out = []
    for b in bases:
        d = os.path.join(b, "vulkan", "icd.d")
        if b and d not in out:
            out.append(d)
    return out


def _files(entries: List[str]) -> List[str]:
    """Manifest files of ':'-separated entries that are files or directories (directories: their *.json)."""
    out = []
    for e in entries:
        out += sorted(glob.glob(os.path.join(e, "*.json"))) if os.path.isdir(e) else [e] if e else []
    return out


def read_icd(file: str, source: str) -> ICD:
    """One manifest with its library_path resolved the loader's way (relative to the file's folder)."""
    try:
        with open(file) as f:
            icd = json.load(f)["ICD"]
        lib = icd["library_path"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return ICD(file, None, None, None, source, f"{type(e).__name__}: {e}")
    path = lib if "/" not in lib else os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(file)), lib))
    return ICD(file, lib, path, icd.get("api_version"), source)


def icd_files() -> List[ICD]:
    """The ICD manifests the loader will read now: the override variable's files and folders when set,
    else VK_ADD_DRIVER_FILES' and the search path's."""
    var = next((v for v in DRIVER_ENV if os.environ.get(v)), None)
    if var is not None:
        ours = fallback is not None and var == "VK_DRIVER_FILES"  # then the others came from the search
        return [read_icd(f, var if not ours else "vkops fallback" if f == fallback["file"] else "search")
                for f in _files(os.environ[var].split(os.pathsep))]
    extra = os.environ.get("VK_ADD_DRIVER_FILES", "").split(os.pathsep)
    add = [read_icd(f, "VK_ADD_DRIVER_FILES") for f in _files(extra)]
    return add + [read_icd(f, "search") for d in search_dirs() if os.path.isdir(d) for f in _files([d])]


def cache_base() -> Path:
    """vkops' cache folder: $XDG_CACHE_HOME/vkops, default ~/.cache/vkops (pipeline caches live there too)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / "vkops"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # a concurrent process reads the whole old file or the whole new one


def headless_fallback() -> Optional[str]:
    """After "no usable driver": where a found ICD names NVIDIA's GLX library (which needs a display),
    write one naming the same driver's EGL library into the cache folder, point VK_DRIVER_FILES at it
    and the other ICDs, and return its path (the caller retries once). None when the user set
    VK_DRIVER_FILES/VK_ICD_FILENAMES, it was applied already, or no ICD names the GLX library."""
    global fallback
    if fallback is not None or user_driver_env() is not None:
        return None
    icds = icd_files()
    glx = next((i for i in icds if i.library and os.path.basename(i.library) == GLX_NVIDIA), None)
    if glx is None:
        return None
    egl = os.path.join(os.path.dirname(glx.path), EGL_NVIDIA) if "/" in glx.library else EGL_NVIDIA
    if "/" in egl and not os.path.exists(egl):
        return None
    text = json.dumps({"file_format_version": "1.0.1",
                       "ICD": {"library_path": egl, "api_version": glx.api_version or "1.1.0"}}, separators=(",", ":"))
    path = cache_base() / f"nvidia_egl_icd-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    _write_atomic(path, text)
    files = [str(path) if i is glx else i.file for i in icds if i.error is None]
    fallback = {"file": str(path), "library": egl, "replaced": glx.file, "api_version": glx.api_version}
    os.environ["VK_DRIVER_FILES"] = os.pathsep.join(dict.fromkeys(files))
    return str(path)


def check_library(icd: ICD) -> str:
    """Whether the ICD's library can be dlopen'ed and exports the driver entry point, in words."""
    if icd.error:
        return f"the manifest cannot be read ({icd.error})"
    try:
        lib = C.CDLL(icd.path)
    except OSError as e:
        return f"cannot be loaded: {e}"
    if not any(hasattr(lib, s) for s in ("vk_icdGetInstanceProcAddr", "vkGetInstanceProcAddr")):
        return "loads, but exports no vk_icdGetInstanceProcAddr (it is not a Vulkan driver)"
    return "loads and exports vk_icdGetInstanceProcAddr (its driver found no device it can use)"


def diagnose(result: int, found: int) -> str:
    """Why the loader gave no device (vkCreateInstance's VkResult, devices found) and what to do."""
    what = (f"vkCreateInstance returned {result} ({RESULTS.get(result, 'see the Vulkan spec')})" if result
            else f"the loader found {found} devices")
    head = f"no Vulkan device: {what}, through the loader {loader_path()}"
    icds = icd_files()
    var = user_driver_env()
    if not icds:
        where = f"{var}={os.environ[var]}" if var else "the search path " + ", ".join(search_dirs())
        return (f"{head}. No ICD manifest files (the drivers' *.json) were found in {where}. Install the GPU "
                f"driver's Vulkan ICD (NVIDIA: the driver's Vulkan/GL component), or mesa-vulkan-drivers for "
                f"the CPU (lavapipe)" + (f", or unset {var}" if var else ""))
    checks = [check_library(i) for i in icds]
    lines = [f"  {i.file} ({i.source}): library {i.library}: {c}" for i, c in zip(icds, checks)]
    tail = (f"{var} is set ({os.environ[var]}), so vkops tried no fallback" if var else
            f"vkops' headless fallback {fallback['file']} ({fallback['library']}) was tried too" if fallback else
            f"no ICD names {GLX_NVIDIA}, so vkops' headless NVIDIA fallback did not apply")
    if any(i.error for i in icds):  # the loader (1.3.239 here) gives up on every driver at a manifest it cannot parse
        tail += ("; a manifest that cannot be read can stop the loader from loading any driver "
                 "(it then returns VK_ERROR_OUT_OF_HOST_MEMORY): fix or remove it")
    todo = ("Install or repair the driver whose library fails (NVIDIA: its Vulkan ICD and glvnd's libEGL/libGLX; "
            "CPU: mesa-vulkan-drivers), or set VK_DRIVER_FILES to a working ICD file")
    if all(c.startswith("loads and exports") for c in checks):  # drivers that load but see no GPU
        todo = ("Every driver loads but none sees a device: make the GPU visible to this process (/dev/dri, "
                "/dev/nvidia*, the container's GPU options), install the driver of the GPU you have, or "
                "mesa-vulkan-drivers for the CPU")
    return f"{head}. The ICD files and their libraries:\n" + "\n".join(lines) + f"\n{tail}. {todo}"


def report() -> dict:
    """What `python -m vkops info` shows: the loader file, the ICD files read, and the fallback."""
    return {"loader": loader_path(), "loader_candidates": loader_candidates(), "driver_env": user_driver_env(),
            "icd_files": [{"file": i.file, "library": i.library, "source": i.source} for i in icd_files()],
            "headless_fallback": fallback}
