"""patches/kp-0.9.0/kp_build.py, the code behind `make kp-src` and `pip install ./patches/kp-0.9.0`: the
patch applier is strict (exact context, hunks may move by whole lines, new files), a wrong sdist is
refused by its sha256, and kp.patch parses into the files its README lists. Pure: no download, no build."""
import importlib.util
import tarfile
from pathlib import Path

import pytest

# CI legs (conftest.py): the kp patch applier and its build backend, no device.
pytestmark = pytest.mark.host_only

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("kp_build", ROOT / "patches" / "kp-0.9.0" / "kp_build.py")
kb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kb)

PATCH = """diff -ruN a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -2,3 +2,3 @@
 two
-three
+THREE
 four
diff -ruN a/new/g.txt b/new/g.txt
--- a/new/g.txt
+++ b/new/g.txt
@@ -0,0 +1,2 @@
+hello
+-- not a header
"""


def test_applies_exactly_and_moves_hunks_by_whole_lines(tmp_path):
    (tmp_path / "f.txt").write_text("zero\none\ntwo\nthree\nfour\n")  # the hunk's context is one line lower
    kb.apply(tmp_path, PATCH)
    assert (tmp_path / "f.txt").read_text() == "zero\none\ntwo\nTHREE\nfour\n"
    assert (tmp_path / "new" / "g.txt").read_text() == "hello\n-- not a header\n"


def test_refuses_a_hunk_whose_context_differs(tmp_path):
    (tmp_path / "f.txt").write_text("one\ntwo\nthree!\nfour\n")
    with pytest.raises(kb.PrepareError, match="does not apply to f.txt"):
        kb.apply(tmp_path, PATCH)


def test_refuses_an_sdist_with_another_sha256(tmp_path, monkeypatch):
    fake = tmp_path / "fake.tar.gz"
    with tarfile.open(fake, "w:gz") as tar:
        tar.add(__file__, arcname="kp-0.9.0/setup.py")
    monkeypatch.setenv("KP_SDIST", str(fake))
    with pytest.raises(kb.PrepareError, match=f"expected {kb.SHA256}"):
        kb.prepare(tmp_path / "out")


def test_kp_patch_covers_what_its_readme_lists():
    files = {path for path, _ in kb.parse(kb.PATCH.read_text())}
    assert {"setup.py", "pyproject.toml", "src/Sequence.cpp", "python/src/main.cpp"} <= files
    readme = (ROOT / "patches" / "kp-0.9.0" / "README.md").read_text()
    for f in files:
        assert Path(f).stem in readme, f"{f} is patched but patches/kp-0.9.0/README.md does not say why"
    # the pyproject.toml the patch adds asks for the pybind11 that reads numpy 2 arrays correctly
    (added,) = [h for path, hunks in kb.parse(kb.PATCH.read_text()) if path == "pyproject.toml" for h in hunks]
    assert any('"pybind11>=2.12"' in line for line in added[2])


def test_the_backend_asks_for_pybind11_2_12():
    assert "pybind11>=2.12" in kb.get_requires_for_build_wheel()
    text = (ROOT / "patches" / "kp-0.9.0" / "pyproject.toml").read_text()
    assert 'build-backend = "kp_build"' in text and '"pybind11>=2.12"' in text
