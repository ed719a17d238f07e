"""SLICE1's lowering (pure): the window folded into one affine map (`affine`), `plan()`, `lower()`,
`lower_packed()` (an identity SLICE1: how other operators pack a strided view) and the push-constant mirror
`SLICE_PUSH`. Which of slice1.comp's three loops runs (16-byte vectors along rows, rows word by word, one
word a step) is decided in `lower()` (docs/tuning/slice1.md "Which loop runs where")."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from ... import native
from ...limits import Limits
from ...plan import Builder, Plan, Ref
from ...tensor import MAX_DIMS, merge_dims
from .desc import Slice1Desc
from .tuning import DEFAULT, Slice1Tuning


# Host mirror of slice1.comp's push-constant block.
SLICE_PUSH = np.dtype([("rank", "<u4"), ("n_words", "<u4"), ("n_elems", "<u4"), ("base", "<u4"),
                       ("row_words", "<u4"), ("tiles_per_row", "<u4"), ("n_groups", "<u4"), ("vec", "<u4"),
                       ("sizes", "<u4", MAX_DIMS), ("strides", "<i4", MAX_DIMS)])


def affine(desc: Slice1Desc, input_strides: Sequence[int]) -> Tuple[int, Tuple[int, ...], Tuple[int, ...]]:
    """(base element, merged output sizes, merged input strides): the window folded into one affine
    map, size-1 dimensions dropped and dimensions that walk memory evenly merged."""
    base, steps = 0, []
    for off, wsz, wst, tst in zip(desc.input_window_offsets, desc.input_window_sizes,
                                  desc.input_window_strides, input_strides):
        base += (off + (wsz - 1 if wst < 0 else 0)) * tst
        steps.append(wst * tst)
    merged = merge_dims(desc.output.sizes, steps) or [[1, 1]]
    return base, tuple(d[0] for d in merged), tuple(d[1] for d in merged)


def plan(desc: Slice1Desc, limits: Limits, *, tuning: Optional[Slice1Tuning] = None) -> Plan:
    """The dispatches of a validated SLICE1 (no device) under `tuning` (DEFAULT when None): libvkops' planner
    (vkops.native) under the default tuning where the library loaded, else python_plan()."""
    if (tuning is None or tuning == DEFAULT) and native.enabled():
        return native.plan(native.OP_SLICE1, desc, limits)
    return python_plan(desc, limits, tuning=tuning)


def python_plan(desc: Slice1Desc, limits: Limits, *, tuning: Optional[Slice1Tuning] = None) -> Plan:
    """plan() by the Python lowering (pure), whatever the options: the planner libvkops' is checked against."""
    b = Builder("slice1", limits)
    lower(b, desc, b.input(desc.input, "input"), b.output(desc.output, "output"), tuning=tuning)
    return b.finish()


def lower(b: Builder, desc: Slice1Desc, x: Ref, out: Ref, *, tuning: Optional[Slice1Tuning] = None) -> None:
    """Dispatch the slice of `x` (its buffer holds desc.input) into packed `out` under `tuning` (DEFAULT when None)."""
    t = DEFAULT if tuning is None else tuning
    bits = desc.input.data_type.bits
    wg = b.limits.workgroup(t.WORKGROUP)
    base, sizes, strides = affine(desc, desc.input.element_strides)
    e = 32 // bits
    n_elems = desc.output.element_count
    if bits < 32 and strides[-1] == 1 and sizes[-1] % e == 0 and base % e == 0 and \
            all(s % e == 0 for s in strides[:-1]):
        # Rows of 8/16-bit data that are contiguous, word-aligned runs: copy them as 32-bit words.
        bits, sizes, base = 32, sizes[:-1] + (sizes[-1] // e,), base // e
        strides = tuple(s // e for s in strides[:-1]) + (1,)
        n_elems, e = n_elems // e, 1
    n_words = -(-n_elems // e)
    per_group = wg * t.WORDS_PER_THREAD
    pc = np.zeros((), SLICE_PUSH)
    row_len = sizes[-1]
    if bits == 32 and strides[-1] in (1, 2) and row_len % 4 == 0 and base % 4 == 0 and \
            all(s % 4 == 0 for s in strides[:-1]) and row_len >= 4 * wg:
        pc["vec"] = strides[-1]
        pc["row_words"] = row_len
        pc["tiles_per_row"] = -(-(row_len // 4) // per_group)
        n_groups = (n_elems // row_len) * int(pc["tiles_per_row"])
    elif row_len % e == 0 and row_len // e >= wg:
        pc["row_words"] = row_len // e
        pc["tiles_per_row"] = -(-(row_len // e) // per_group)
        n_groups = (n_elems // row_len) * int(pc["tiles_per_row"])
    else:
        n_groups = -(-n_words // per_group)
    pc["rank"], pc["n_words"], pc["n_elems"], pc["base"], pc["n_groups"] = len(sizes), n_words, n_elems, base, n_groups
    pc["sizes"][: len(sizes)] = sizes
    pc["strides"][: len(strides)] = strides
    b.dispatch(f"slice1_b{bits}", [x, out], writes=[1], groups=b.limits.grid(n_groups, "SLICE1"),
               push=pc.reshape(1).view(np.uint32), spec=(wg, t.WORDS_PER_THREAD))


def lower_packed(b: Builder, x: Ref, *, tuning: Optional[Slice1Tuning] = None) -> Ref:
    """A packed scratch copy of (strided) `x`, as an identity SLICE1: how an operator whose kernel
    wants packed input takes any view (SLICE1's `tuning`, DEFAULT when None)."""
    n = x.ndim
    out = b.scratch(x.desc.packed())
    lower(b, Slice1Desc(x.desc, out.desc, (0,) * n, x.shape, (1,) * n).validate(), x, out, tuning=tuning)
    return out
