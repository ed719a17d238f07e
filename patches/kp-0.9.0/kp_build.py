"""vkops' patched kp (Kompute) 0.9.0 from PyPI's sdist: fetch it, check its sha256, apply kp.patch.

    python patches/kp-0.9.0/kp_build.py prepare build/kp      # build/kp/kp-0.9.0, patched (make kp-src)
    pip install ./patches/kp-0.9.0                            # the same, then build and install the wheel

The second line works because this file is also a PEP 517 build backend (pyproject.toml beside it):
pip installs setuptools, wheel and pybind11>=2.12 into an isolated build environment, and build_wheel
prepares the patched source in a temporary folder and hands it to setuptools. The patched setup.py
(see README.md) then builds against the system's Vulkan headers, libvulkan and fmt, so
libvulkan-dev, libfmt-dev, cmake and g++ (Debian names) must be installed.

The sdist comes from `python -m pip download` (pip's own index settings apply), or from the file
$KP_SDIST names; either way its sha256 must be SHA256 below, and the patch must apply exactly (every
hunk's context matches; a hunk may only move by whole lines), else the build stops naming the file.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PATCH = HERE / "kp.patch"
NAME, VERSION = "kp", "0.9.0"
SDIST = f"{NAME}-{VERSION}.tar.gz"
# PyPI's published digest of kp-0.9.0.tar.gz (https://pypi.org/simple/kp/).
SHA256 = "98e583dc6e9731ff6d7a3e3317817e4d93f7b2945929619e29a56325db279949"
BUILD_REQUIRES = ["setuptools>=61", "wheel", "pybind11>=2.12", "pip"]


class PrepareError(RuntimeError):
    """The sdist could not be fetched, is not the expected file, or the patch does not apply."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(dest: Path) -> Path:
    """The verified sdist in `dest`: $KP_SDIST when set, else `pip download` (no build isolation first,
    as kp's sdist needs only setuptools to report its metadata)."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / SDIST
    local = os.environ.get("KP_SDIST")
    if local:
        shutil.copyfile(local, target)
    elif not target.exists():
        base = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(dest),
                f"{NAME}=={VERSION}"]
        for cmd in (base[:4] + ["--no-build-isolation"] + base[4:], base):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode == 0 and target.exists():
                break
        else:
            raise PrepareError(f"could not download {SDIST} with pip ({r.stderr.strip()[-400:]}); download it "
                               f"yourself and set KP_SDIST=/path/to/{SDIST}")
    got = sha256(target)
    if got != SHA256:
        raise PrepareError(f"{target} has sha256 {got}; expected {SHA256} (PyPI's kp 0.9.0 sdist)")
    return target


def parse(patch_text: str):
    """[(path relative to the tree, [(old start, old lines, new lines), ...])] of a `diff -ruN a/... b/...`
    patch, read by the hunk headers' line counts (so a removed line that reads "-- x" is not a header)."""
    lines = patch_text.split("\n")
    files, i = [], 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        path = lines[i + 1][4:].split("\t")[0].strip().split("/", 1)[1]  # -p1
        hunks, i = [], i + 2
        while i < len(lines) and lines[i].startswith("@@"):
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", lines[i])
            if not m:
                raise PrepareError(f"kp.patch: bad hunk header {lines[i]!r}")
            n_old = int(m.group(2) if m.group(2) is not None else 1)
            n_new = int(m.group(4) if m.group(4) is not None else 1)
            old, new, i = [], [], i + 1
            while len(old) < n_old or len(new) < n_new:
                if i >= len(lines):
                    raise PrepareError(f"kp.patch: the hunk for {path} at line {m.group(1)} is cut short")
                line, i = lines[i], i + 1
                tag, text = line[:1], line[1:]
                if tag == "\\":  # "\ No newline at end of file"
                    continue
                if tag not in (" ", "", "-", "+"):
                    raise PrepareError(f"kp.patch: unexpected line in a hunk for {path}: {line!r}")
                if tag != "+":
                    old.append(text)
                if tag != "-":
                    new.append(text)
            while i < len(lines) and lines[i].startswith("\\"):
                i += 1
            hunks.append((int(m.group(1)), old, new))
        files.append((path, hunks))
    return files


def apply(tree: Path, patch_text: str) -> None:
    """Apply a unified diff to `tree`, strictly: each hunk's old lines must match exactly, at its line
    or moved by whole lines (no fuzz); a file that does not exist counts as empty (diff -N)."""
    for rel, hunks in parse(patch_text):
        path = tree / rel
        text = ""
        if path.exists():
            with open(path, encoding="utf-8", newline="") as f:
                text = f.read()
        ends_nl = text.endswith("\n") or text == ""
        body = text.split("\n")
        if body and body[-1] == "":
            body.pop()
        shift = 0
        for start, old, new in hunks:
            at = max(start - 1 + shift, 0) if old else min(start + shift, len(body))
            cands = [p for p in range(len(body) - len(old) + 1) if body[p:p + len(old)] == old]
            if not cands:
                raise PrepareError(f"kp.patch does not apply to {rel}: the hunk at line {start} finds no match "
                                   f"(see patches/kp-0.9.0/README.md)")
            p = min(cands, key=lambda c: abs(c - at)) if old else at
            body[p:p + len(old)] = new
            shift += len(new) - len(old)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(body) + ("\n" if ends_nl and body else ""))


def prepare(dest: Path) -> Path:
    """dest/kp-0.9.0: the verified sdist, unpacked and patched (a fresh copy each time)."""
    dest = Path(dest)
    sdist = fetch(dest)
    src = dest / f"{NAME}-{VERSION}"
    shutil.rmtree(src, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            if m.name.startswith(("/", "..")) or ".." in Path(m.name).parts or not (m.isfile() or m.isdir()):
                raise PrepareError(f"{sdist}: unexpected member {m.name!r}")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12 (and backports): refuse links out of dest
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)
    apply(src, PATCH.read_text(encoding="utf-8"))
    return src


# -- PEP 517 backend: pip install ./patches/kp-0.9.0 --------------------------------------------- #
def get_requires_for_build_wheel(config_settings=None):
    """What the isolated build environment needs (pyproject.toml lists the same)."""
    return list(BUILD_REQUIRES)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Prepare the patched source in a temporary folder and build it with setuptools."""
    with tempfile.TemporaryDirectory(prefix="kp-vkops-") as tmp:
        src = prepare(Path(tmp))
        cwd = os.getcwd()
        os.chdir(src)
        sys.path.insert(0, str(src))
        try:
            from setuptools import build_meta  # noqa: PLC0415

            return build_meta.build_wheel(os.path.abspath(wheel_directory), config_settings)
        finally:
            sys.path.remove(str(src))
            os.chdir(cwd)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "prepare":
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        src = prepare(Path(argv[1]))
    except PrepareError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"kp {VERSION} with vkops' patch: {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
