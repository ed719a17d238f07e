"""Import direction inside vkops: each module imports only the layers the table below allows.

Every module under vkops/ is parsed with `ast` (no import runs): every `import` and `from ... import` at
any depth (function-local and TYPE_CHECKING ones included), relative imports resolved to absolute names,
`from pkg import name` counted as the submodule `pkg.name` where one exists. Dynamic imports
(`importlib.import_module`) are not seen. The same rules are stated in the docstrings of vkops/__init__.py,
ops/__init__.py, runtime/__init__.py, bench/__init__.py and the pure modules, and in
docs/architecture.md#import-direction.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "vkops"

# Layer of each vkops module: an exact module name, or a package and everything under it. A new module
# needs a line here (the test names it otherwise).
LAYER_OF = {
    "vkops.errors": "pure", "vkops.dtypes": "pure", "vkops.tensor": "pure", "vkops.limits": "pure",
    "vkops.plan": "pure", "vkops.inputs": "pure",
    "vkops.reference": "reference",        # the NumPy oracles
    "vkops.native": "native",              # libvkops' planner through ctypes
    "vkops.drivers": "platform", "vkops.vkinfo": "platform",   # the Vulkan loader and device facts, no kp
    "vkops._vendor": "vendor",             # the wheel's kp
    "vkops.runtime": "runtime",            # the package and its modules
    "vkops.ops": "ops",
    "vkops": "face",                       # vkops/__init__.py: the public face
    "vkops.onnx": "users", "vkops.demo": "users",
    "vkops.bench": "bench",
    "vkops.cli": "command", "vkops.__main__": "command",
}

# The vkops layers a layer may import (its own included where listed).
MAY_IMPORT = {
    "pure": {"pure"},
    "reference": {"pure"},
    "native": {"pure"},
    "platform": {"pure", "platform"},
    "vendor": set(),
    "runtime": {"pure", "native", "platform", "vendor", "runtime"},
    "ops": {"pure", "reference", "native", "runtime", "ops"},
    "face": {"pure", "runtime", "ops", "face"},
    "users": {"pure", "runtime", "ops", "face"},
    "bench": {"pure", "reference", "native", "platform", "runtime", "ops", "face", "bench"},
    "command": {"pure", "reference", "native", "platform", "runtime", "ops", "face", "users", "bench", "command"},
}

# Names outside vkops that no vkops module may import (the repository's bench/ folder and tests), and
# those only some layers may: kp is the runtime's alone.
NEVER = ("bench", "tests", "conftest")
ONLY = {"kp": {"runtime"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules():
    """{module name: (path, is_package)} for every .py file under vkops/."""
    return {module_name(p): (p, p.name == "__init__.py") for p in sorted(PKG.rglob("*.py"))}


def layer(name: str):
    """The layer of a vkops module name: its own entry in LAYER_OF, else that of the package below vkops
    that holds it (`vkops` itself holds nothing: a new top-level module has no layer), else None."""
    if name in LAYER_OF:
        return LAYER_OF[name]
    parent = name.rpartition(".")[0]
    while parent not in ("", "vkops"):
        if parent in LAYER_OF:
            return LAYER_OF[parent]
        parent = parent.rpartition(".")[0]
    return None


def imports(source: str, module: str, is_package: bool, known):
    """(line, absolute name) of every import in `source`, at any depth; `known` is the set of vkops module
    names, so `from pkg import x` counts as `pkg.x` where that is a module, else as `pkg`."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level - 1 >= len(base):
                    raise ValueError(f"{module}:{node.lineno}: relative import above the top package")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append((node.lineno, sub if sub in known else target))
    return found


def violations(module: str, source: str, is_package: bool, known):
    """Each import of `module` that breaks the table, as a sentence; a module without a layer is one too."""
    mine = layer(module)
    if mine is None:
        return [f"{module}: not in tests/test_layers.py's LAYER_OF (give the new module a layer)"]
    out = []
    for line, name in imports(source, module, is_package, known):
        top = name.split(".")[0]
        if top == "vkops":
            theirs = layer(name)
            if theirs is None:
                out.append(f"{module}:{line} imports {name}, which has no layer in LAYER_OF")
            elif theirs not in MAY_IMPORT[mine]:
                out.append(f"{module}:{line} ({mine}) imports {name} ({theirs}); {mine} may import "
                           f"{', '.join(sorted(MAY_IMPORT[mine])) or 'nothing in vkops'}")
        elif top in NEVER:
            out.append(f"{module}:{line} imports {name}: nothing in vkops imports the repository's bench/ "
                       f"or tests/")
        elif top in ONLY and mine not in ONLY[top]:
            out.append(f"{module}:{line} ({mine}) imports {name}: only {', '.join(sorted(ONLY[top]))} may")
    return out


def test_every_module_keeps_the_import_direction():
    mods = all_modules()
    assert {"vkops.plan", "vkops.ops.top_k1", "vkops.runtime.call", "vkops.bench.runner"} <= set(mods)
    bad = [v for name, (path, is_pkg) in mods.items()
           for v in violations(name, path.read_text(encoding="utf-8"), is_pkg, set(mods))]
    assert not bad, "imports against the direction:\n" + "\n".join(bad)


def test_the_table_is_whole():
    """Every module has a layer, every layer a rule, and every rule names layers that exist."""
    assert set(LAYER_OF.values()) == set(MAY_IMPORT)
    assert all(allowed <= set(MAY_IMPORT) for allowed in MAY_IMPORT.values())
    assert [m for m in all_modules() if layer(m) is None] == []
    # the direction the docstrings state
    for low in ("pure", "reference", "native", "platform", "runtime"):
        assert not MAY_IMPORT[low] & {"ops", "bench", "face", "users", "command"}, low
    assert "runtime" not in MAY_IMPORT["pure"] and "bench" not in MAY_IMPORT["ops"]


# The checker must be able to fail: synthetic modules that break each rule, run through the same code.
KNOWN = set(all_modules())
BAD = [
    ("vkops.runtime.fake", False, "def f():\n    from ..ops import top_k1\n", "vkops.ops.top_k1 (ops)"),
    ("vkops.runtime", True, "from ..ops import face_runtime\n", "vkops.ops (ops)"),
    ("vkops.runtime.fake", False, "import vkops.bench.timing\n", "vkops.bench.timing (bench)"),
    ("vkops.ops.fake", False, "class A:\n    def m(self):\n        from ..bench import timing\n",
     "vkops.bench.timing (bench)"),
    ("vkops.ops.fake", False, "from vkops import cli\n", "vkops.cli (command)"),
    ("vkops.plan", False, "from .runtime import Device\n", "vkops.runtime (runtime)"),
    ("vkops.limits", False, "from . import vkinfo\n", "vkops.vkinfo (platform)"),
    ("vkops.tensor", False, "if False:\n    from .ops.slice1 import Slice1Desc\n", "vkops.ops.slice1 (ops)"),
    ("vkops.errors", False, "from vkops.bench import specs\n", "vkops.bench.specs (bench)"),
    ("vkops", True, "from .bench import runner\n", "vkops.bench.runner (bench)"),
    ("vkops.bench.fake", False, "import bench.run\n", "the repository's bench/ or tests/"),
    ("vkops.ops.qlmm", False, "from tests.conftest import x\n", "the repository's bench/ or tests/"),
    ("vkops.ops.fake", False, "import kp\n", "only runtime may"),
    ("vkops.native", False, "from .ops.top_k1 import TopK1Desc\n", "vkops.ops.top_k1 (ops)"),
    ("vkops.newthing", False, "import numpy\n", "not in tests/test_layers.py's LAYER_OF"),
]


@pytest.mark.parametrize("module,is_pkg,source,expect", BAD, ids=[f"{m}:{e}" for m, _, _, e in BAD])
def test_checker_catches_a_violation(module, is_pkg, source, expect):
    found = violations(module, source, is_pkg, KNOWN)
    assert len(found) == 1 and expect in found[0], found


def test_checker_passes_what_the_table_allows():
    ok = [("vkops.ops.fake", False, "from . import face_runtime\nfrom ..runtime import Call\n"
                                    "from .. import reference\nimport numpy as np\n"),
          ("vkops.runtime.fake", False, "from ..plan import Plan\nfrom .. import drivers\nimport kp\n"),
          ("vkops.bench.fake", False, "import vkops\nfrom ..ops import qlmm\nfrom .. import __version__\n"),
          ("vkops.cli", False, "from .bench import commands\nfrom . import onnx\n")]
    for module, is_pkg, source in ok:
        assert violations(module, source, is_pkg, KNOWN) == [], module


def test_relative_imports_resolve_to_absolute_names():
    src = "from . import face_runtime, slice1\nfrom .. import reference\nfrom ..runtime.plancache import freeze\n"
    names = [n for _, n in imports(src, "vkops.ops.top_k1", False, KNOWN)]
    assert names == ["vkops.ops", "vkops.ops.slice1", "vkops.reference", "vkops.runtime.plancache"]
    assert [n for _, n in imports("from .device import Device\n", "vkops.runtime", True, KNOWN)] == \
        ["vkops.runtime.device"]
    with pytest.raises(ValueError, match="above the top package"):
        imports("from ... import x\n", "vkops.plan", False, KNOWN)


DOCSTRINGS = ["vkops/__init__.py", "vkops/ops/__init__.py", "vkops/runtime/__init__.py",
              "vkops/bench/__init__.py", "vkops/plan.py", "vkops/limits.py", "vkops/tensor.py",
              "vkops/dtypes.py", "vkops/errors.py", "vkops/native.py"]


@pytest.mark.parametrize("path", DOCSTRINGS)
def test_docstring_states_what_it_may_import(path):
    doc = ast.get_docstring(ast.parse((ROOT / path).read_text(encoding="utf-8"))) or ""
    assert "May import" in doc, f"{path}'s docstring should say what it may import (tests/test_layers.py)"
