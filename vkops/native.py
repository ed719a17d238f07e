"""libvkops through ctypes: the C library's planner (libvkops/include/vkops.h), the one every runtime that
links libvkops uses, as the operators' default planner in Python too; and its host reads of mapped device memory
(`mapped_reader`, which the runtime's reads use).

`plan(op, desc, limits)` is vkops_plan_json of a Python descriptor, read back as the `Plan` Python's own
lowering makes (the caller's `Limits` put back in; notes, buffers, dispatches equal: tests/test_capi_*.py).
`enabled()` says whether the operators plan through it (the library loaded, VKOPS_NATIVE_PLANNER not 0). Where it is searched, first found wins:

  1. $VKOPS_LIBVKOPS (a path to libvkops.so);
  2. the package's own copy, vkops/_native/libvkops.so (what a wheel ships);
  3. a source tree's build/libvkops/libvkops.so next to the package (`make libvkops`, `make setup`), unless
     older than a source it is built from (vkops/ops, libvkops/, the kernel manifest): a stale build would
     plan by old rules, so the operators stay on Python's until `make libvkops`.

VKOPS_NATIVE_PLANNER=0 turns it off; a library not found (or one that fails to load) leaves the operators
on their Python lowering, silently (`python -m vkops info` says which planner runs).

The C structs of vkops.h are mirrored here (TensorDescC, ..., LimitsC) with the conversion of Python
descriptors to C ones; tests/capi.py uses them for the differential tests.

May import: the pure modules (errors, dtypes, limits, plan); never `vkops.ops`, `vkops.runtime`, `vkops.bench`
(nor drivers, vkinfo, kp, the package face `vkops`). Descriptors are read by their fields, not imported.
"""
from __future__ import annotations

import ctypes as C
import json
import os
from pathlib import Path
from typing import Optional

from .dtypes import DataType
from .errors import DeviceLimitError, ValidationError
from .limits import Limits
from .plan import Plan

PACKAGE = Path(__file__).resolve().parent
OP_TOP_K1, OP_SLICE1, OP_QLMM = 1, 2, 3

DML_TYPE = {DataType.FLOAT32: 1, DataType.FLOAT16: 2, DataType.UINT32: 3, DataType.UINT16: 4, DataType.UINT8: 5,
            DataType.INT32: 6, DataType.INT16: 7, DataType.INT8: 8}
DEVICE_TYPES = ["unknown", "discrete", "integrated", "virtual", "cpu", "other"]


class TensorDescC(C.Structure):
    _fields_ = [("data_type", C.c_int), ("flags", C.c_uint32), ("dimension_count", C.c_uint32),
                ("sizes", C.POINTER(C.c_uint32)), ("strides", C.POINTER(C.c_uint32)),
                ("total_tensor_size_in_bytes", C.c_uint64), ("guaranteed_base_offset_alignment", C.c_uint32)]


P = C.POINTER(TensorDescC)


class TopK1DescC(C.Structure):
    _fields_ = [("input_tensor", P), ("output_value_tensor", P), ("output_index_tensor", P), ("axis", C.c_uint32),
                ("k", C.c_uint32), ("axis_direction", C.c_int)]


class Slice1DescC(C.Structure):
    _fields_ = [("input_tensor", P), ("output_tensor", P), ("dimension_count", C.c_uint32),
                ("input_window_offsets", C.POINTER(C.c_uint32)), ("input_window_sizes", C.POINTER(C.c_uint32)),
                ("input_window_strides", C.POINTER(C.c_int32))]


QLMM_FIELDS = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point",
               "output")


class QlmmDescC(C.Structure):
    _fields_ = [(f + "_tensor", P) for f in QLMM_FIELDS]


class OperatorDescC(C.Structure):
    _fields_ = [("type", C.c_int), ("desc", C.c_void_p)]


class LimitsC(C.Structure):
    _fields_ = [("subgroup_size", C.c_uint32), ("min_subgroup_size", C.c_uint32), ("max_subgroup_size", C.c_uint32),
                ("max_workgroup_invocations", C.c_uint32), ("max_workgroup_size", C.c_uint32 * 3),
                ("max_workgroup_count", C.c_uint32 * 3), ("shared_memory_bytes", C.c_uint32),
                ("max_push_constants_bytes", C.c_uint32), ("max_storage_buffer_range", C.c_uint64),
                ("subgroup_operations", C.c_uint32), ("device_type", C.c_uint32), ("cooperative_matrix", C.c_uint32),
                ("coopmat_verified", C.c_uint32), ("coopmat_split_verified", C.c_uint32),
                ("integer_dot_product", C.c_uint32), ("name", C.c_char * 256)]


def candidates():
    """The paths searched for libvkops.so, in order (see the module's docstring)."""
    out = []
    env = os.environ.get("VKOPS_LIBVKOPS")
    if env:
        out.append(Path(env))
    out.append(PACKAGE / "_native" / "libvkops.so")
    out.append(PACKAGE.parent / "build" / "libvkops" / "libvkops.so")
    return out


def stale(so: Path) -> Optional[Path]:
    """A source newer than a source tree's build/libvkops/libvkops.so (its C++ sources, header, version
    script, generators, the kernel manifest) or than the stamp of its generated tuning header (the Python
    vkops/ops/*/*.py it reads: libvkops/Makefile.inc), else None."""
    root = so.parents[2]
    stamp = so.parent / "tuning_gen.stamp"
    checks = [(so, [*root.glob("libvkops/src/*"), *root.glob("libvkops/include/*"), root / "libvkops" / "vkops.map",
                    *root.glob("libvkops/*.py"), root / "vkops" / "spv" / "manifest.json"]),
              (stamp, list(root.glob("vkops/ops/*/*.py")))]
    for built, srcs in checks:
        t = built.stat().st_mtime if built.is_file() else 0.0
        newer = next((f for f in srcs if f.is_file() and f.stat().st_mtime > t), None)
        if newer is not None:
            return newer
    return None


_lib = None
_path: Optional[Path] = None
_tried = False
_why = ""


def load(path: Path):
    """libvkops at `path` with the argument types set (raises OSError)."""
    lib = C.CDLL(str(path))
    lib.vkops_last_error.restype = C.c_char_p
    lib.vkops_plan_json.argtypes = [C.POINTER(OperatorDescC), C.POINTER(LimitsC), C.POINTER(C.c_void_p)]
    lib.vkops_validate.argtypes = [C.POINTER(OperatorDescC)]
    lib.vkops_free.argtypes = [C.c_void_p]
    if hasattr(lib, "vkops_read_mapped"):  # a library built before it: reads stay NumPy's
        lib.vkops_read_mapped.argtypes = [C.c_void_p, C.c_void_p, C.c_size_t]
        lib.vkops_read_mapped.restype = None
        lib.vkops_read_mapped_streams.restype = C.c_int
    return lib


def lib():
    """The loaded library, or None (not found, not loadable); tried once."""
    global _lib, _path, _tried, _why
    if not _tried:
        _tried = True
        tree = PACKAGE.parent / "build" / "libvkops" / "libvkops.so"
        for p in candidates():
            if not p.is_file():
                continue
            newer = stale(p) if p == tree else None
            if newer is not None:
                _why = f"{p} is older than {newer}: make libvkops"
                continue
            try:
                _lib, _path = load(p), p
                break
            except OSError as e:  # a copy for another platform, a missing libvulkan: the next one, else Python
                _why = f"{p}: {e}"
        else:
            _why = _why or "libvkops.so not found (" + ", ".join(str(p) for p in candidates()) + ")"
    return _lib


def path() -> Optional[Path]:
    """The library's path once loaded, else None."""
    lib()
    return _path


def enabled() -> bool:
    """Whether the operators' default plans come from libvkops: not turned off (VKOPS_NATIVE_PLANNER=0)
    and the library loaded."""
    return os.environ.get("VKOPS_NATIVE_PLANNER", "1") != "0" and lib() is not None



def mapped_reader():
    """vkops_read_mapped (dst, src, bytes: reads of device memory the host maps uncached, by streaming loads) where
    the library loaded, has it and streams on this CPU; else None. Independent of VKOPS_NATIVE_PLANNER."""
    lv = lib()
    if lv is None or not hasattr(lv, "vkops_read_mapped") or not lv.vkops_read_mapped_streams():
        return None
    return lv.vkops_read_mapped


def describe() -> str:
    """Which planner the operators' default plans come from, in words (`python -m vkops info`)."""
    if os.environ.get("VKOPS_NATIVE_PLANNER", "1") == "0":
        return "Python (VKOPS_NATIVE_PLANNER=0)"
    if lib() is None:
        return f"Python (libvkops: {_why})"
    return f"libvkops ({_path})"


class Keep(list):
    """Holds the ctypes objects a C descriptor points into."""

    def arr(self, ctype, values):
        a = (ctype * max(1, len(values)))(*values)
        self.append(a)
        return a

    def tensor(self, t):
        if t is None:
            return None
        d = TensorDescC(DML_TYPE[t.data_type], 0, t.rank, self.arr(C.c_uint32, t.sizes),
                        None if t.strides is None else self.arr(C.c_uint32, t.strides), 0, 0)
        self.append(d)
        return C.pointer(d)


def c_desc(op: int, desc, keep: Keep) -> OperatorDescC:
    """The C descriptor (vkops_operator_desc) of a Python one (not validated); `keep` holds what it points into."""
    if op == OP_SLICE1:
        n = desc.input.rank
        d = Slice1DescC(keep.tensor(desc.input), keep.tensor(desc.output), n,
                        keep.arr(C.c_uint32, desc.input_window_offsets), keep.arr(C.c_uint32, desc.input_window_sizes),
                        keep.arr(C.c_int32, desc.input_window_strides))
    elif op == OP_TOP_K1:
        d = TopK1DescC(keep.tensor(desc.input), keep.tensor(desc.output_value), keep.tensor(desc.output_index),
                       int(desc.axis), int(desc.k), int(desc.axis_direction))
    elif op == OP_QLMM:
        d = QlmmDescC(*(keep.tensor(getattr(desc, f)) for f in QLMM_FIELDS))
    else:
        raise ValueError(f"unknown operator type {op}")
    keep.append(d)
    od = OperatorDescC(op, C.cast(C.pointer(d), C.c_void_p))
    keep.append(od)
    return od


def c_limits(lim: Limits) -> LimitsC:
    """vkops_limits of Python's Limits."""
    return LimitsC(lim.subgroup_size, lim.min_subgroup_size, lim.max_subgroup_size, lim.max_workgroup_invocations,
                   (C.c_uint32 * 3)(*lim.max_workgroup_size), (C.c_uint32 * 3)(*lim.max_workgroup_count),
                   lim.shared_memory_bytes, lim.max_push_constants_bytes, min(lim.max_storage_buffer_range, 2**64 - 1),
                   lim.subgroup_operations, DEVICE_TYPES.index(lim.device_type) if lim.device_type in DEVICE_TYPES else 0,
                   lim.cooperative_matrix, lim.coopmat_verified, lim.coopmat_split_verified, lim.integer_dot_product,
                   lim.name.encode()[:255])


class CError(Exception):
    """A status other than VKOPS_SUCCESS, VKOPS_ERROR_VALIDATION or VKOPS_ERROR_DEVICE_LIMIT."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status, self.message = status, message


def error(status: int, message: str) -> Exception:
    """Python's error for a libvkops status: -1 ValidationError, -2 DeviceLimitError (the same messages
    as Python's planner), anything else CError."""
    if status == -2:
        return DeviceLimitError(message)
    if status == -1:
        return ValidationError(message)
    return CError(status, message)


def plan_dict(op: int, desc, limits: Limits, library=None) -> dict:
    """vkops_plan_json of a Python descriptor as a dict (Plan.to_dict()'s form); raises CError with the
    status (tests/capi.py compares statuses). `library`: a loaded libvkops (load()), else lib()."""
    keep = Keep()
    od = c_desc(op, desc, keep)
    out = C.c_void_p()
    lb = library or lib()
    st = lb.vkops_plan_json(C.byref(od), C.byref(c_limits(limits)), C.byref(out))
    if st != 0:
        raise CError(st, lb.vkops_last_error().decode())
    try:
        return json.loads(C.string_at(out.value).decode())
    finally:
        lb.vkops_free(out)


def plan(op: int, desc, limits: Limits) -> Plan:
    """libvkops' plan of a Python descriptor: the Plan Python's default lowering makes, with `limits` (the
    caller's own object) in it. Raises ValidationError / DeviceLimitError as Python's planner does."""
    try:
        d = plan_dict(op, desc, limits)
    except CError as e:
        raise error(e.status, e.message) from None
    return Plan.from_dict(d, limits=limits)


def validate(op: int, desc, library=None):
    """(status, message) of vkops_validate on a Python descriptor (`library` as in plan_dict)."""
    keep = Keep()
    od = c_desc(op, desc, keep)
    lb = library or lib()
    st = lb.vkops_validate(C.byref(od))
    return st, lb.vkops_last_error().decode()
