"""libvkops from Python through ctypes, for the differential tests: the C structs of libvkops/include/vkops.h
mirrored, Python descriptors turned into C ones, and the library's plan/validation called."""
import ctypes as C
import json
import os
from pathlib import Path

from vkops.dtypes import DataType
from vkops.limits import Limits

ROOT = Path(__file__).resolve().parents[1]
LIB = Path(os.environ.get("VKOPS_LIBVKOPS", ROOT / "build/libvkops/libvkops.so"))

DML_TYPE = {DataType.FLOAT32: 1, DataType.FLOAT16: 2, DataType.UINT32: 3, DataType.UINT16: 4, DataType.UINT8: 5,
            DataType.INT32: 6, DataType.INT16: 7, DataType.INT8: 8}
DEVICE_TYPES = ["unknown", "discrete", "integrated", "virtual", "cpu", "other"]
OP_TOP_K1, OP_SLICE1, OP_QLMM = 1, 2, 3


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


class QlmmDescC(C.Structure):
    _fields_ = [(f, P) for f in ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                                 "b_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor",
                                 "output_tensor")]


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


_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = C.CDLL(str(LIB))
        _lib.vkops_last_error.restype = C.c_char_p
        _lib.vkops_plan_json.argtypes = [C.POINTER(OperatorDescC), C.POINTER(LimitsC), C.POINTER(C.c_void_p)]
        _lib.vkops_validate.argtypes = [C.POINTER(OperatorDescC)]
        _lib.vkops_free.argtypes = [C.c_void_p]
    return _lib


class Keep(list):
    """Holds the ctypes objects a C descriptor points into."""

    def arr(self, ctype, values):
        a = (ctype * max(1, len(values)))(*values)
        self.append(a)
        return a

    def tensor(self, t, sizes=None):
        if t is None:
            return None
        d = TensorDescC(DML_TYPE[t.data_type], 0, t.rank, self.arr(C.c_uint32, t.sizes),
                        None if t.strides is None else self.arr(C.c_uint32, t.strides), 0, 0)
        self.append(d)
        return C.pointer(d)


def c_desc(op, desc, keep):
    """(type, C descriptor) of a Python descriptor (not validated)."""
    if op == OP_SLICE1:
        n = desc.input.rank
        d = Slice1DescC(keep.tensor(desc.input), keep.tensor(desc.output), n,
                        keep.arr(C.c_uint32, desc.input_window_offsets), keep.arr(C.c_uint32, desc.input_window_sizes),
                        keep.arr(C.c_int32, desc.input_window_strides))
    elif op == OP_TOP_K1:
        d = TopK1DescC(keep.tensor(desc.input), keep.tensor(desc.output_value), keep.tensor(desc.output_index),
                       int(desc.axis), int(desc.k), int(desc.axis_direction))
    else:
        d = QlmmDescC(*(keep.tensor(getattr(desc, f)) for f in (
            "a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point",
            "output")))
    keep.append(d)
    od = OperatorDescC(op, C.cast(C.pointer(d), C.c_void_p))
    keep.append(od)
    return od


def c_limits(lim: Limits) -> LimitsC:
    return LimitsC(lim.subgroup_size, lim.min_subgroup_size, lim.max_subgroup_size, lim.max_workgroup_invocations,
                   (C.c_uint32 * 3)(*lim.max_workgroup_size), (C.c_uint32 * 3)(*lim.max_workgroup_count),
                   lim.shared_memory_bytes, lim.max_push_constants_bytes, min(lim.max_storage_buffer_range, 2**64 - 1),
                   lim.subgroup_operations, DEVICE_TYPES.index(lim.device_type) if lim.device_type in DEVICE_TYPES else 0,
                   lim.cooperative_matrix, lim.coopmat_verified, lim.coopmat_split_verified, lim.integer_dot_product,
                   lim.name.encode()[:255])


class CError(Exception):
    def __init__(self, status, message):
        super().__init__(f"{status}: {message}")
        self.status, self.message = status, message


def plan(op, desc, limits: Limits) -> dict:
    """libvkops' plan of a Python descriptor as a dict (to_dict()'s form); raises CError."""
    keep = Keep()
    od = c_desc(op, desc, keep)
    out = C.c_void_p()
    st = lib().vkops_plan_json(C.byref(od), C.byref(c_limits(limits)), C.byref(out))
    if st != 0:
        raise CError(st, lib().vkops_last_error().decode())
    try:
        return json.loads(C.string_at(out.value).decode())
    finally:
        lib().vkops_free(out)


def validate(op, desc):
    """(status, message) of vkops_validate on a Python descriptor."""
    keep = Keep()
    od = c_desc(op, desc, keep)
    st = lib().vkops_validate(C.byref(od))
    return st, lib().vkops_last_error().decode()


def comparable(d: dict) -> dict:
    """A plan dict without what the two sides may name differently (limits' name/profile, notes)."""
    d = dict(d)
    d.pop("notes", None)
    lim = dict(d.pop("limits"))
    return d
