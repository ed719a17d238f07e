"""vkops.native: each operator's default plan() comes from libvkops (the planner runtimes linking the C library
use), equal to Python's own plan (limits and notes included); any non-default option, VKOPS_NATIVE_PLANNER=0
or a library that is not there takes the Python lowering; errors keep their class and message. Needs
build/libvkops (make libvkops)."""
import dataclasses

import pytest

from plan_grid import LIMITS
from vkops import native
from vkops.errors import DeviceLimitError, ValidationError
from vkops.ops import qlmm, slice1, top_k1
from vkops.ops.qlmm import QuantizedLinearMatMulDesc
from vkops.ops.slice1 import Slice1Desc
from vkops.ops.top_k1 import AxisDirection, TopK1Desc
from vkops.plan import Plan
from vkops.tensor import TensorDesc

pytestmark = [pytest.mark.host_only,
              pytest.mark.skipif(not native.enabled(), reason=f"planner: {native.describe()}")]

LIM = LIMITS["h100"]
ONE = (1, 1, 1, 1)


def slice_desc():
    inp = TensorDesc("float16", (8, 300))
    return Slice1Desc(inp, TensorDesc("float16", (4, 100)), (0, 0), (8, 300), (2, 3)).validate()


def topk_desc(L=5000, k=40):
    return TopK1Desc(TensorDesc("float32", (16, L)), TensorDesc("float32", (16, k)), TensorDesc("uint32", (16, k)), 1, k,
                     AxisDirection.DECREASING).validate()


def qlmm_desc(M=40, K=256, N=96):
    return QuantizedLinearMatMulDesc(
        TensorDesc("int8", (1, 1, M, K)), TensorDesc("float32", ONE), TensorDesc("int8", ONE),
        TensorDesc("int8", (1, 1, K, N)), TensorDesc("float32", (1, 1, 1, N)), None,
        TensorDesc("float32", ONE), TensorDesc("int8", ONE), TensorDesc("int8", (1, 1, M, N))).validate()


CASES = [("slice1", slice1, slice_desc), ("top_k1", top_k1, topk_desc), ("qlmm", qlmm, qlmm_desc)]


@pytest.fixture
def calls(monkeypatch):
    """Counts native.plan calls (the operators reach it as `native.plan`)."""
    seen = []
    real = native.plan

    def counting(op, desc, limits):
        seen.append(op)
        return real(op, desc, limits)

    monkeypatch.setattr(native, "plan", counting)
    return seen


@pytest.mark.parametrize("name,mod,make", CASES, ids=[c[0] for c in CASES])
def test_default_plan_comes_from_libvkops_and_equals_pythons(calls, name, mod, make):
    d = make()
    for lim in LIMITS.values():
        p = mod.plan(d, lim)
        want = mod.python_plan(d, lim)
        assert p == want and p.notes == want.notes and p.limits is lim
        # tuning=DEFAULT is the default too
        assert mod.plan(d, lim, tuning=mod.DEFAULT) == want
    assert len(calls) == 2 * len(LIMITS)
    assert p.notes or name == "slice1"


NON_DEFAULT = [
    ("slice1", lambda: slice1.plan(slice_desc(), LIM, tuning=dataclasses.replace(slice1.DEFAULT, WORDS_PER_THREAD=2))),
    ("top_k1 force", lambda: top_k1.plan(topk_desc(), LIM, force="sort")),
    ("top_k1 chunks", lambda: top_k1.plan(topk_desc(), LIM, chunks=2)),
    ("top_k1 shuffle", lambda: top_k1.plan(topk_desc(), LIM, shuffle=False)),
    ("top_k1 tuning", lambda: top_k1.plan(topk_desc(), LIM, tuning=dataclasses.replace(top_k1.DEFAULT, MIN_B=512))),
    ("qlmm kernel", lambda: qlmm.plan(qlmm_desc(), LIM, kernel="portable")),
    ("qlmm split_k", lambda: qlmm.plan(qlmm_desc(), LIM, split_k=1)),
    ("qlmm tuning", lambda: qlmm.plan(qlmm_desc(), LIM, tuning=dataclasses.replace(qlmm.DEFAULT, SPLIT_MAX=2))),
]


@pytest.mark.parametrize("name,call", NON_DEFAULT, ids=[c[0] for c in NON_DEFAULT])
def test_a_non_default_option_takes_the_python_planner(calls, name, call):
    assert isinstance(call(), Plan)
    assert calls == []


def test_switched_off_or_missing_library_takes_python(calls, monkeypatch):
    monkeypatch.setenv("VKOPS_NATIVE_PLANNER", "0")
    assert not native.enabled() and "VKOPS_NATIVE_PLANNER=0" in native.describe()
    assert top_k1.plan(topk_desc(), LIM) == top_k1.python_plan(topk_desc(), LIM)
    monkeypatch.delenv("VKOPS_NATIVE_PLANNER")
    monkeypatch.setattr(native, "_lib", None)
    monkeypatch.setattr(native, "_tried", True)  # as if no candidate loaded
    assert not native.enabled() and native.describe().startswith("Python")
    assert qlmm.plan(qlmm_desc(), LIM) == qlmm.python_plan(qlmm_desc(), LIM)
    assert calls == []


def test_search_order(monkeypatch, tmp_path):
    monkeypatch.setenv("VKOPS_LIBVKOPS", str(tmp_path / "x.so"))
    c = native.candidates()
    assert c[0] == tmp_path / "x.so"
    assert c[1] == native.PACKAGE / "_native" / "libvkops.so"
    assert c[2] == native.PACKAGE.parent / "build" / "libvkops" / "libvkops.so"


def test_errors_keep_class_and_message():
    # An unvalidated descriptor (the C side validates) and a device limit: the same class and message.
    inp = TensorDesc("float32", (4, 6))
    bad = Slice1Desc(inp, TensorDesc("float32", (4, 6)), (0, 1), (4, 6), (1, 1))
    with pytest.raises(ValidationError) as want:
        bad.validate()
    with pytest.raises(ValidationError) as got:
        slice1.plan(bad, LIM)
    assert type(got.value) is ValidationError and str(got.value) == str(want.value)
    big = Slice1Desc(TensorDesc("float32", (1 << 25, 2)), TensorDesc("float32", (1, 1)), (0, 0), (1, 1), (1, 1))
    with pytest.raises(DeviceLimitError) as want:
        slice1.python_plan(big.validate(), LIMITS["minimum"])
    with pytest.raises(DeviceLimitError) as got:
        slice1.plan(big, LIMITS["minimum"])
    assert str(got.value) == str(want.value)
    assert isinstance(native.error(-3, "x"), native.CError)


def test_notes_round_trip_python_values():
    p = top_k1.python_plan(topk_desc(), LIM)
    p = dataclasses.replace(p, notes=p.notes + (("pair", (1, (2, 3))), ("f", 0.25)))
    assert Plan.from_json(p.to_json()).notes == p.notes
