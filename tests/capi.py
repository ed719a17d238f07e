"""libvkops from Python through ctypes, for the differential tests: vkops.native's mirrors of the C structs of
libvkops/include/vkops.h and its descriptor conversion, with the library's plan/validation as dicts and
statuses. LIB is $VKOPS_LIBVKOPS, else the source tree's build/libvkops/libvkops.so (not the package's copy:
these tests check the tree's build)."""
import os
from pathlib import Path

from vkops import native
from vkops.native import (DEVICE_TYPES, DML_TYPE, OP_QLMM, OP_SLICE1, OP_TOP_K1, CError, Keep, LimitsC,  # noqa: F401
                          OperatorDescC, TensorDescC, c_desc, c_limits)

ROOT = Path(__file__).resolve().parents[1]
LIB = Path(os.environ.get("VKOPS_LIBVKOPS", ROOT / "build/libvkops/libvkops.so"))

_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = native.load(LIB)
    return _lib


def plan(op, desc, limits) -> dict:
    """libvkops' plan of a Python descriptor as a dict (to_dict()'s form); raises CError."""
    return native.plan_dict(op, desc, limits, lib())


def plan_tuned(op, desc, limits, knobs: dict) -> dict:
    """vkops_plan_json_tuned: libvkops' TOP_K1 or QLMM plan under the default tuning with `knobs` (ints, bools) changed."""
    import ctypes as C
    import json
    lb, keep = lib(), Keep()
    od, out = c_desc(op, desc, keep), C.c_void_p()
    spec = ";".join(f"{k}={int(v)}" for k, v in knobs.items()).encode()
    fn = lb.vkops_plan_json_tuned
    fn.argtypes = [C.c_void_p, C.c_void_p, C.c_char_p, C.c_void_p]
    st = fn(C.byref(od), C.byref(native.c_limits(limits)), spec, C.byref(out))
    if st != 0:
        raise CError(st, lb.vkops_last_error().decode())
    try:
        return json.loads(C.string_at(out.value).decode())
    finally:
        lb.vkops_free(out)


def validate(op, desc):
    """(status, message) of vkops_validate on a Python descriptor."""
    return native.validate(op, desc, lib())


def comparable(d: dict) -> dict:
    """A plan dict without what the two sides may name differently (limits' name/profile); notes stay."""
    d = dict(d)
    d.pop("limits")
    return d
