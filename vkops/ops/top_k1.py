"""DML_TOP_K1: descriptor (pure), lowering to the top_k1 kernels, and the NumPy face. Which path a call
takes is decided by the rules in top_k1_paths.py (pure); each path runs kernels/top_k1/<algorithm>.comp,
module top_k1_<algorithm>[_sg]_<type> (PUSH mirrors each one's push block):
  rows    many rows of <= ROWS_MAX_L with pow2(K) <= 256, on devices with subgroup ballot + arithmetic + shuffle:
          one subgroup per row, radix select over a subgroup-private histogram, no workgroup barrier
          (rows.comp; rows of <= 32 keys per lane stay in registers). Thousands of rows
          longer than ROWS_RADIX_MIN_L with 16- or 32-bit keys and K >= 2 take radix select instead.
  seg     the padded row (pow2 >= L) fits the shared buffer: G rows per workgroup, one dispatch (seg.comp;
          rows of more than B/2 only for K = 1 or pow2(K) > B/2; see below).
  filter  longer rows with pow2(K) <= B/2: each workgroup streams a chunk once, keeping only elements
          that beat its running K-th best; several chunks per row merge in the same dispatch (the
          last workgroup to finish a row reduces the chunks' candidates and writes the row): filter.comp
          (K = 1: each thread's own best, no threshold).
          From pow2(K) >= RADIX_MIN_KP, and on short rows (B/2 < L <= 4B) from K = 2, a chunk is
          reduced by radix select instead (8-bit key digits until the keys at or above the K-th
          key's prefix fit the buffer, a position select among ties), then sorted once: radix.comp.
  rsort   >= 64 rows of 513..2048 with pow2(K) > 256, on devices with subgroup ballot + arithmetic + shuffle: one
          workgroup radix-sorts the whole row in shared memory (8-bit digits, ballot-matched ranks: a
          stable order, so ties keep ascending indices), then writes its first K
          (rsort.comp).
  sort    pow2(K) > B/2 on long rows: a global bitonic sort of (key, index) rows in a scratch
          buffer, O(log^2) dispatches (sort_tile.comp in shared memory, sort_global.comp the long strides);
          the last one writes the first K.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..dtypes import DataType
from ..errors import DeviceLimitError, ValidationError
from ..tensor import TensorDesc, check_like_input, merge_dims, validate_fields
from ..limits import Limits
from ..plan import Builder, Plan, Ref
from . import face_runtime
from .slice1 import lower_packed
from .top_k1_paths import Path, device_path, tune_bits

MAX_AXIS_LENGTH = 2**31 - 1
SENT_IDX = 0xFFFFFFFF

_KERNELS = {DataType.FLOAT32: "f32", DataType.FLOAT16: "f16", DataType.INT32: "i32", DataType.INT16: "i16",
            DataType.INT8: "i8", DataType.UINT32: "u32", DataType.UINT16: "u16", DataType.UINT8: "u8"}


class AxisDirection(enum.IntEnum):
    """DML_AXIS_DIRECTION (values as in directml.h)."""

    INCREASING = 0
    DECREASING = 1

    @classmethod
    def of(cls, d, field: str = "axis_direction") -> "AxisDirection":
        """An AxisDirection from itself or its name ("decreasing", "increasing", any case); raises
        ValidationError naming `field` otherwise."""
        if isinstance(d, AxisDirection):
            return d
        if isinstance(d, str) and d.strip().upper() in cls.__members__:
            return cls[d.strip().upper()]
        raise ValidationError(f"{field} must be 'decreasing', 'increasing' or an AxisDirection; got {d!r}")


@dataclass(frozen=True)
class TopK1Desc:
    """DML_TOP_K1_OPERATOR_DESC: input (1-8 dimensions, any DML data type), output_value (input's type
    and sizes with K on `axis`, packed), output_index (UINT32, same sizes, packed), axis, k and
    axis_direction (an AxisDirection)."""

    input: TensorDesc
    output_value: TensorDesc
    output_index: TensorDesc
    axis: int
    k: int
    axis_direction: AxisDirection = AxisDirection.DECREASING

    def validate(self) -> "TopK1Desc":
        """Check every rule of DML_TOP_K1_OPERATOR_DESC without a device (output_value like input with K on
        `axis`, output_index UINT32, 0 <= axis < DimensionCount, 1 <= k <= input.sizes[axis]); returns
        self, or raises ValidationError naming the field, the rule and the values."""
        name = "TopK1Desc"
        validate_fields(self, ("input", "output_value", "output_index"))
        inp, val, idx = self.input, self.output_value, self.output_index
        for f in ("axis", "k"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValidationError(f"{name}.{f} must be an integer; got {v!r}")
        if not isinstance(self.axis_direction, AxisDirection):
            raise ValidationError(f"{name}.axis_direction must be an AxisDirection (INCREASING or DECREASING); "
                                  f"got {self.axis_direction!r}")
        n = inp.rank
        check_like_input(self, "output_value")
        check_like_input(self, "output_index", same_type=False)
        if idx.data_type != DataType.UINT32:
            raise ValidationError(f"{name}.output_index.data_type must be UINT32; got {idx.data_type.name}")
        if not 0 <= self.axis < n:
            raise ValidationError(f"{name}.axis must be < DimensionCount {n} (and >= 0); got axis={self.axis} "
                                  f"for sizes {inp.sizes}")
        a = int(self.axis)
        length = inp.sizes[a]
        if self.k < 1:
            raise ValidationError(f"{name}.k must be >= 1; got k={self.k}")
        if self.k > length:
            raise ValidationError(f"{name}.k must be <= size along axis {a}; got k={self.k} for sizes {inp.sizes}")
        if length > MAX_AXIS_LENGTH:
            raise ValidationError(f"{name}.input.sizes[axis] must be <= {MAX_AXIS_LENGTH}; got {length} "
                                  f"along axis {a}")
        want = tuple(int(self.k) if i == a else s for i, s in enumerate(inp.sizes))
        for f, t in (("output_value", val), ("output_index", idx)):
            if t.sizes != want:
                raise ValidationError(f"{name}.{f}.sizes must equal input sizes with K on axis {a}, {want}; "
                                      f"got {t.sizes}")
            if not t.is_packed:
                raise ValidationError(f"{name}.{f}.strides must be packed (None); got {t.strides} "
                                      f"for sizes {t.sizes}")
        return self


# Host mirrors of each kernels/top_k1/<algorithm>.comp's push-constant block, one meaning a field
# (tests/test_manifest.py checks each against the SPIR-V): the row's shape first, the algorithm's own
# fields, then the merged non-axis dimensions.
_HEAD = ("n_groups", "n_seq", "L", "K", "Kp", "flip", "axis_stride", "inner", "n_other")
_KEYS = ("n_groups", "L", "K", "flip", "axis_stride", "inner", "n_other")  # modules without n_seq, Kp
_OTHER = [("o_sizes", "<u4", 6), ("o_strides", "<u4", 6)]


def _push(fields, other=True) -> np.dtype:
    return np.dtype([(f, "<u4") for f in fields] + (_OTHER if other else []))


PUSH = {
    "seg": _push(_HEAD + ("G", "P")),
    "filter": _push(_HEAD + ("chunks", "chunk_len", "merge_group", "vec", "cap")),
    "radix": _push(_HEAD + ("chunks", "chunk_len", "merge_group", "vec", "tune")),
    "sort_tile": _push(_KEYS + ("tiles", "P", "size")),
    "sort_global": _push(("n_groups", "step_groups", "P", "size", "stride"), other=False),
    "rows": _push(_KEYS[:1] + ("n_seq",) + _KEYS[1:] + ("G", "vec", "cap")),
    "rsort": _push(_KEYS),
}


def algorithm(kernel: str) -> str:
    """The algorithm (a key of PUSH, a .comp of kernels/top_k1/) of a TOP_K1 module name."""
    name = kernel[len("top_k1_"):]
    for a in sorted(PUSH, key=len, reverse=True):
        if name == a or name.startswith(a + "_"):
            return a
    raise KeyError(kernel)


MAX_OTHER_DIMS = 6

def plan(desc: TopK1Desc, limits: Limits, *, force: Optional[str] = None, chunks: Optional[int] = None,
         shuffle: Optional[bool] = None, tune: Optional[int] = None) -> Plan:
    """The dispatches of a validated TOP_K1 (pure: no device). `force` / `chunks` / `shuffle` / `tune` pick
    a path for tests."""
    b = Builder("top_k1", limits)
    x = b.input(desc.input, "input")
    v, i = b.output(desc.output_value, "output_value"), b.output(desc.output_index, "output_index")
    p = lower(b, desc, x, v, i, force=force, chunks=chunks, shuffle=shuffle, tune=tune)
    b.notes.update(path="radix" if p.radix else p.path, chunks=p.chunks, shuffle=p.shuf)
    return b.finish()


def lower(b: Builder, desc: TopK1Desc, x: Ref, values: Ref, indices: Ref, *, force: Optional[str] = None,
          chunks: Optional[int] = None, shuffle: Optional[bool] = None, tune: Optional[int] = None) -> Path:
    """Dispatch TOP_K1 of `x` into packed `values` and `indices`."""
    lim = b.limits
    inp = desc.input
    axis, K = int(desc.axis), int(desc.k)
    sizes = inp.sizes

    def other_dims(strides):  # the non-axis dimensions, merged where they walk memory evenly
        return merge_dims([s for i, s in enumerate(sizes) if i != axis],
                          [t for i, t in enumerate(strides) if i != axis])

    strides = x.desc.element_strides
    other = other_dims(strides)
    if len(other) > MAX_OTHER_DIMS:
        # Strides that fold into no fewer than 7 dimensions: copy to a packed tensor first.
        x = lower_packed(b, x)
        strides = x.desc.element_strides
        other = other_dims(strides)
    L = sizes[axis]
    n_seq = inp.element_count // L
    inner = int(np.prod(sizes[axis + 1:], dtype=np.int64))
    bits = inp.data_type.bits
    p = device_path(lim, n_seq, L, K, force=force, chunks=chunks, shuffle=shuffle, key_bits=bits)
    tname = _KERNELS[inp.data_type]
    ev = 128 // bits
    flip = 0xFFFFFFFF if desc.axis_direction == AxisDirection.INCREASING else 0
    shape = dict(n_seq=n_seq, L=L, K=K, Kp=p.Kp, flip=flip, axis_stride=strides[axis], inner=inner, n_other=len(other),
                 vec=int(strides[axis] == 1 and L % ev == 0 and all(t % ev == 0 for _, t in other)))

    def dispatch(alg, buffers, writes, n_groups, spec, sg=False, **fields):
        """One dispatch of kernels/top_k1/<alg>.comp (its `t` module, `_sg` with shuffles), its push block
        filled from the row's shape and `fields`."""
        pc = np.zeros((), PUSH[alg])
        for f, v in dict(shape, n_groups=n_groups, **fields).items():
            if f in pc.dtype.names:
                pc[f] = v
        if "o_sizes" in pc.dtype.names:
            for i, (size, stride) in enumerate(other):
                pc["o_sizes"][i], pc["o_strides"][i] = size, stride
        kernel = f"top_k1_{alg}" + ("_sg" if sg else "") + ("" if alg == "sort_global" else f"_{tname}")
        b.dispatch(kernel, buffers, writes=writes, groups=lim.grid(n_groups, "TOP_K1"),
                   push=pc.reshape(1).view(np.uint32), spec=spec)

    spec = (p.workgroup, p.B)
    if p.path == "rows":  # G rows a workgroup, one a subgroup
        dispatch("rows", [x, values, indices], [1, 2], -(-n_seq // p.G), spec, G=p.G, cap=p.cap or p.B)
    elif p.path == "rsort":  # one row a workgroup; its counters' size a specialization constant
        dispatch("rsort", [x, values, indices], [1, 2], n_seq, spec + (p.rs_sh,))
    elif p.path == "seg":
        dispatch("seg", [x, values, indices], [1, 2], -(-n_seq // p.G), spec, p.shuf, G=p.G, P=p.P)
    elif p.path == "filter":
        alg = "radix" if p.radix else "filter"
        fields = dict(chunk_len=p.chunk_len, cap=p.cap or p.B,
                      tune=tune_bits(p, n_seq, bits) if tune is None else tune)
        ctr = b.counters(1)  # bound but unused unless several chunks share a row
        if p.chunks == 1:
            dispatch(alg, [x, values, indices, ctr, ctr], [1, 2], n_seq, spec, p.shuf, chunks=1, **fields)
        else:
            # counters: one a row, then (two-level merge) one a merge group of each row
            groups = -(-p.chunks // p.merge_group) if p.merge_group else 0
            ctr = b.counters(n_seq * (1 + groups))
            cand = b.scratch(TensorDesc(DataType.UINT32, (n_seq * p.chunks * K * 2,)))
            dispatch(alg, [x, values, indices, cand, ctr], [1, 2, 3, 4], n_seq * p.chunks, spec, p.shuf,
                     chunks=p.chunks, merge_group=p.merge_group or p.chunks, **fields)
    else:
        P, B = p.P, p.B
        words = n_seq * P * 2
        if words * 4 > lim.max_storage_buffer_range:
            raise DeviceLimitError(
                f"TOP_K1 with k={K} on rows of {L} sorts {n_seq} padded rows of {P} (key, index) pairs: "
                f"{words * 4} bytes exceed {lim.name}'s maxStorageBufferRange of "
                f"{lim.max_storage_buffer_range} bytes")
        cand = b.scratch(TensorDesc(DataType.UINT32, (words,)))
        tiles = P // B
        # sort_tile's specialization constant 2 (INIT): the first dispatch loads its tiles from the input
        dispatch("sort_tile", [x, values, indices, cand], [3], n_seq * tiles, spec + (1,), tiles=tiles, P=P, size=B)
        size = 2 * B
        while size <= P:
            stride = size // 2
            while stride >= B:
                step_groups = -(-(P // 2) // p.workgroup)
                dispatch("sort_global", [cand], [0], n_seq * step_groups, (p.workgroup,), step_groups=step_groups,
                         P=P, size=size, stride=stride)
                stride //= 2
            writes = [1, 2] if size == P else [3]
            dispatch("sort_tile", [x, values, indices, cand], writes, n_seq * tiles, spec + (0,), tiles=tiles, P=P,
                     size=size)
            size *= 2
    return p


def output_descs(input_desc: TensorDesc, axis: int, k: int) -> Tuple[TensorDesc, TensorDesc]:
    sizes = tuple(k if i == axis else s for i, s in enumerate(input_desc.sizes))
    return (TensorDesc(input_desc.data_type, sizes, name="TopK1Desc.output_value"),
            TensorDesc(DataType.UINT32, sizes, name="TopK1Desc.output_index"))


def top_k(x, k: int, axis: int = -1, direction=None, *, largest: Optional[bool] = None, sorted: bool = True,
          out=None):
    """DML TOP_K1: the K largest or smallest elements of every sequence along `axis`, and their indices.

    x: a NumPy array or DeviceTensor of 1 to 8 dimensions and any DML data type (float32, float16,
        int32, int16, int8, uint32, uint16, uint8), or a Python list (floats -> float32, ints -> int32).
        Strided views are read in place.
    k: 1 <= k <= x.shape[axis] (k equal to the length is a full stable sort).
    axis: the dimension to search; negative counts from the end.
    direction: "decreasing" (the K largest, sorted descending; the default) or "increasing" (the K
        smallest, sorted ascending), or an AxisDirection.
    largest: torch's alias: True is "decreasing", False "increasing". Giving both `largest` and a
        `direction` that disagrees raises ValidationError.
    sorted: torch's alias, accepted for compatibility: results are always sorted (True or False).
    out: optional (values, indices) packed DeviceTensors to write into (device-tensor calls).

    Returns (values, indices): values have x's dtype, indices are UINT32 positions within the sequence;
    both have x's shape with K on `axis`. Equal values keep ascending indices in both directions,
    NaN ranks above +inf and -0.0 ties with +0.0. NumPy (or list) in -> NumPy out; DeviceTensor in ->
    DeviceTensors out.

    Raises ValidationError (a ValueError) naming the field for a bad k, axis, direction or input, and
    DeviceLimitError when the call exceeds the device's limits; nothing is dispatched then.
    """
    return _top_k(x, k, axis, _direction(direction, largest, sorted), out=out)


def _direction(direction, largest, sorted_) -> AxisDirection:
    """The AxisDirection of `direction` and torch's `largest` (None: not given)."""
    if not isinstance(sorted_, (bool, np.bool_)):
        raise ValidationError(f"top_k sorted must be True or False (results are always sorted); got {sorted_!r}")
    d = None if direction is None else AxisDirection.of(direction, "top_k direction")
    if largest is None:
        return AxisDirection.DECREASING if d is None else d
    if not isinstance(largest, (bool, np.bool_)):
        raise ValidationError(f"top_k largest must be True or False; got {largest!r}")
    want = AxisDirection.DECREASING if largest else AxisDirection.INCREASING
    if d is not None and d != want:
        raise ValidationError(f"top_k direction={direction!r} and largest={largest!r} disagree: largest=True is "
                              f"'decreasing', largest=False 'increasing'; pass one of them")
    return want


def _top_k(x, k, axis=-1, direction="decreasing", *, out=None, force: Optional[str] = None,
           chunks: Optional[int] = None, shuffle: Optional[bool] = None, tune: Optional[int] = None):
    """top_k() with the path switches tests and benchmarks use: `force` ("seg", "filter", "radix", "sort",
    "rows" or "rsort"), `chunks` (workgroups per row on the filter path; ROWS' candidate cap), `shuffle`
    (the top_k1_*_sg_* modules or not) and `tune` (the TUNE_* bits of top_k1_paths) override the choice of
    device_path() and tune_bits()."""
    Call, freeze = face_runtime()

    key = ("top_k",) + freeze(k, axis, direction, force, chunks, shuffle, tune)
    outs = () if out is None else tuple(out) if isinstance(out, (tuple, list)) else (out,)
    with Call(x, key=key, outs=outs, names=("x",)) as call:
        if call.plan is None:
            (xd,) = call.descs
            if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
                raise ValidationError(f"top_k axis must be an integer; got {axis!r}")
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise ValidationError(f"TopK1Desc.k must be an integer; got {k!r}")
            ax = int(axis) + xd.rank if axis < 0 else int(axis)
            if not 0 <= ax < xd.rank:
                raise ValidationError(f"TopK1Desc.axis must be < DimensionCount {xd.rank} (negative counts from "
                                      f"the end); got axis={axis} for sizes {xd.sizes}")
            kk = int(k)
            osz = tuple(max(kk, 1) if i == ax else s for i, s in enumerate(xd.sizes))
            vdesc = TensorDesc(xd.data_type, osz, name="TopK1Desc.output_value")
            idesc = TensorDesc(DataType.UINT32, osz, name="TopK1Desc.output_index")
            desc = TopK1Desc(xd, vdesc, idesc, ax, kk, AxisDirection.of(direction, "top_k direction")).validate()
            call.plan = plan(desc, call.device.limits, force=force, chunks=chunks, shuffle=shuffle, tune=tune)
    return call.result()
