"""A benchmark case: one operator call, (op, shape, dtype, params), and the rules its options follow.
What each operator does with a case (inputs, the vkops call, the check) is vkops/bench/specs.py.

A case is (op, shape, dtype, params). Shapes: TOP_K1 and SLICE1 the input's sizes (TOP_K1 along the
last axis); QLinearMatMul M x K x N, or BATCH x M x K x N. QLinearMatMul dtypes name both operands,
"int8xint8"; where either is uint8, every implementation gets zero points (a per-tensor one each).
SLICE1 windows are named (`WINDOWS`) and expand to DML offsets, sizes and strides for the shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

OPS = ("top_k", "slice", "qlmm")
TOPK_DTYPES = ("float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8")
QLMM_DTYPES = ("int8xint8", "uint8xint8", "uint8xuint8", "int8xuint8")
# SLICE1 windows, after docs/performance/slice1.md's table: name -> what it copies (NumPy spelling).
WINDOWS = {"copy": "x (identity window)", "stride2": "x[..., ::2]", "flip0": "x[::-1]",
           "crop": "x[R/8:, ..., 64:-64]", "reverse2": "x[::-1, ..., ::-2]"}


@dataclass
class Case:
    op: str
    shape: Tuple[int, ...]
    dtype: str
    params: Dict[str, Any] = field(default_factory=dict)

    @property
    def shape_text(self) -> str:
        return "x".join(map(str, self.shape))

    def label(self) -> str:
        return " ".join([self.op, self.dtype, self.shape_text] + [param_text(k, v) for k, v in self.params.items()
                                                                 if k in LABEL_PARAMS])


LABEL_PARAMS = ("k", "window", "zero_points", "b_layout")


def param_text(k: str, v) -> str:
    if k == "k":
        return f"K={v}"
    if k == "zero_points":
        return "zp" if v else "no zp"
    if k == "b_layout":
        return f"B {v}"
    return str(v)


# -- the shape rules each option must satisfy (the CLI names the option in its usage error) ---------- #
def check_case(case: Case) -> Optional[Tuple[str, str]]:
    """(option, why) when the case cannot run, else None."""
    if case.op == "top_k":
        if case.dtype not in TOPK_DTYPES:
            return "--dtype", f"top_k takes {', '.join(TOPK_DTYPES)}; got {case.dtype!r}"
        if not 1 <= case.params["k"] <= case.shape[-1]:
            return "--k", f"K must be 1..{case.shape[-1]} (the last dimension of {case.shape_text}); got {case.params['k']}"
    elif case.op == "slice":
        if case.dtype not in TOPK_DTYPES:
            return "--dtype", f"slice takes {', '.join(TOPK_DTYPES)}; got {case.dtype!r}"
        if case.params["window"] not in WINDOWS:
            return "--window", f"windows are {', '.join(WINDOWS)}; got {case.params['window']!r}"
    elif case.op == "qlmm":
        if case.dtype not in QLMM_DTYPES:
            return "--dtype", f"qlmm takes {', '.join(QLMM_DTYPES)} (a x b); got {case.dtype!r}"
        if len(case.shape) not in (3, 4):
            return "--shape", f"qlmm shapes are MxKxN or BATCHxMxKxN; got {case.shape_text}"
    if any(s < 1 for s in case.shape):
        return "--shape", f"sizes must be >= 1; got {case.shape_text}"
    return None


def top_k_case(shape, dtype, k) -> Case:
    return Case("top_k", tuple(shape), dtype, {"k": int(k)})


def slice_case(shape, dtype, window) -> Case:
    offsets, sizes, strides = slice_window(tuple(shape), window) if window in WINDOWS else ((), (), ())
    return Case("slice", tuple(shape), dtype, {"window": window, "offsets": list(offsets), "sizes": list(sizes),
                                               "strides": list(strides)})


def qlmm_case(shape, dtype, b_layout: str = "row-major") -> Case:
    """b_layout "column-major": b is a transposed view of an N x K device tensor (PyTorch's Linear weight)."""
    params = {"zero_points": "uint8" in dtype}
    if b_layout != "row-major":
        params["b_layout"] = b_layout
    return Case("qlmm", tuple(shape), dtype, params)


def slice_window(shape: Tuple[int, ...], window: str):
    """DML (offsets, sizes, strides) of a named window on `shape`."""
    n = len(shape)
    offsets, sizes, strides = [0] * n, list(shape), [1] * n
    if window == "stride2":
        strides[-1] = 2
    elif window == "flip0":
        strides[0] = -1
    elif window == "crop":
        offsets[0], sizes[0] = shape[0] // 8, shape[0] - shape[0] // 8
        trim = min(64, (shape[-1] - 1) // 2)
        offsets[-1], sizes[-1] = trim, shape[-1] - 2 * trim
    elif window == "reverse2":
        strides = [-1] * n
        strides[-1] = -2
    return tuple(offsets), tuple(sizes), tuple(strides)


def slice_output_sizes(params) -> Tuple[int, ...]:
    return tuple(1 + (sz - 1) // abs(st) for sz, st in zip(params["sizes"], params["strides"]))


def numpy_index(params) -> Tuple[slice, ...]:
    """The NumPy basic index that copies what the DML window copies (negative strides start at the
    window's end)."""
    idx = []
    for off, sz, st in zip(params["offsets"], params["sizes"], params["strides"]):
        if st > 0:
            idx.append(slice(off, off + sz, st))
        else:
            idx.append(slice(off + sz - 1, off - 1 if off > 0 else None, st))
    return tuple(idx)


def case_from_row(row: dict) -> Case:
    return Case(row["op"], tuple(row["shape"]), row["dtype"], dict(row.get("params") or {}))


def cases_for(op: str, shapes: List[Tuple[int, ...]], dtypes: List[str], ks: List[int], windows: List[str],
              b_layouts: Tuple[str, ...] = ("row-major",)):
    """The cross product of the CLI's --shape, --dtype, --k (top_k), --window (slice) and --b-layout (qlmm)."""
    out = []
    for shape in shapes:
        for dt in dtypes:
            if op == "top_k":
                out += [top_k_case(shape, dt, k) for k in ks]
            elif op == "slice":
                out += [slice_case(shape, dt, w) for w in windows]
            else:
                out += [qlmm_case(shape, dt, lay) for lay in b_layouts]
    return out
