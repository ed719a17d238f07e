"""DML_SLICE1: descriptor and shape rules (pure), lowering to the slice1 kernel, and the NumPy face."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from ..errors import ValidationError
from ..limits import Limits
from ..plan import Builder, Plan, Ref
from ..tensor import MAX_DIMS, TensorDesc, check_like_input, merge_dims, validate_fields
from . import face_runtime

WORKGROUP = 256  # wanted; Limits.workgroup() gives what the device allows (128 at Vulkan's minimum)
WORDS_PER_THREAD = 4


@dataclass(frozen=True)
class Slice1Desc:
    """DML_SLICE1_OPERATOR_DESC. DimensionCount is the tensors' rank."""

    input: TensorDesc
    output: TensorDesc
    input_window_offsets: Tuple[int, ...]
    input_window_sizes: Tuple[int, ...]
    input_window_strides: Tuple[int, ...]

    def __post_init__(self):
        for f in ("input_window_offsets", "input_window_sizes", "input_window_strides"):
            object.__setattr__(self, f, window_ints(f, getattr(self, f)))

    @property
    def max_copied_elements(self) -> Tuple[int, ...]:
        """DML's MaxCopiedElements: 1 + (input_window_sizes - 1) // |input_window_strides| per dimension."""
        return tuple(1 + (sz - 1) // abs(st) for sz, st in zip(self.input_window_sizes, self.input_window_strides))

    def validate(self) -> "Slice1Desc":
        """Check every rule of DML_SLICE1_OPERATOR_DESC without a device; returns self, or raises
        ValidationError naming the field, the rule and the values."""
        name = "Slice1Desc"
        validate_fields(self, ("input", "output"))
        check_like_input(self, "output")
        inp, out = self.input, self.output
        n = inp.rank
        if not out.is_packed:
            raise ValidationError(f"{name}.output.strides must be packed (None); got {out.strides} "
                                  f"for sizes {out.sizes}")
        offs, sizes, strides = self.input_window_offsets, self.input_window_sizes, self.input_window_strides
        for f, v in (("input_window_offsets", offs), ("input_window_sizes", sizes), ("input_window_strides", strides)):
            if len(v) != n:
                raise ValidationError(f"{name}.{f} must have DimensionCount={n} entries; got {len(v)} in {v}")
        for i in range(n):
            if offs[i] < 0:
                raise ValidationError(f"{name}.input_window_offsets must be >= 0; got {offs[i]} at dimension {i} "
                                      f"in {offs}")
            if sizes[i] < 1:
                raise ValidationError(f"{name}.input_window_sizes must be >= 1 (the window may not be empty); "
                                      f"got {sizes[i]} at dimension {i} in {sizes}")
            if offs[i] + sizes[i] > inp.sizes[i]:
                raise ValidationError(
                    f"{name}.input_window_offsets + input_window_sizes must be <= input sizes; got "
                    f"{offs[i]} + {sizes[i]} > {inp.sizes[i]} at dimension {i} (offsets {offs}, sizes {sizes}, "
                    f"input sizes {inp.sizes})")
            if strides[i] == 0:
                raise ValidationError(f"{name}.input_window_strides must be nonzero; got 0 at dimension {i} "
                                      f"in {strides}")
        mx = self.max_copied_elements
        for i in range(n):
            if not 1 <= out.sizes[i] <= mx[i]:
                raise ValidationError(
                    f"{name}.output.sizes must satisfy 1 <= OutputSizes[i] <= MaxCopiedElements[i]; got "
                    f"{out.sizes[i]} at dimension {i} with MaxCopiedElements {mx} (output sizes {out.sizes})")
        return self


def window_ints(field: str, values) -> Tuple[int, ...]:
    """A window parameter as integers; fractions, booleans and non-numbers are rejected (not truncated)."""
    try:
        items = list(values)
    except TypeError:
        raise ValidationError(f"Slice1Desc.{field} must be a sequence of integers; got {values!r}") from None
    out = []
    for i, v in enumerate(items):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer, float, np.floating)) \
                or v != v or int(v) != v:
            raise ValidationError(f"Slice1Desc.{field} must hold integers; got {v!r} at dimension {i} in "
                                  f"{tuple(items)}")
        out.append(int(v))
    return tuple(out)


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


def plan(desc: Slice1Desc, limits: Limits) -> Plan:
    """The dispatches of a validated SLICE1 (pure: no device)."""
    b = Builder("slice1", limits)
    lower(b, desc, b.input(desc.input, "input"), b.output(desc.output, "output"))
    return b.finish()


def lower(b: Builder, desc: Slice1Desc, x: Ref, out: Ref) -> None:
    """Dispatch the slice of `x` (its buffer holds desc.input) into packed `out`."""
    bits = desc.input.data_type.bits
    wg = b.limits.workgroup(WORKGROUP)
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
    per_group = wg * WORDS_PER_THREAD
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
               push=pc.reshape(1).view(np.uint32), spec=(wg, WORDS_PER_THREAD))


def lower_packed(b: Builder, x: Ref) -> Ref:
    """A packed scratch copy of (strided) `x`, as an identity SLICE1: how an operator whose kernel
    wants packed input takes any view."""
    n = x.ndim
    out = b.scratch(x.desc.packed())
    lower(b, Slice1Desc(x.desc, out.desc, (0,) * n, x.shape, (1,) * n).validate(), x, out)
    return out


def slice(x, offsets, sizes, strides, output_sizes: Optional[Sequence[int]] = None, *, out=None):
    """DML SLICE1: `out[o] = x[start + strides * o]` per dimension, where a window of `sizes` elements
    begins at `offsets` and a negative stride starts at the window's end.

    x: a NumPy array or DeviceTensor of 1 to 8 dimensions and any DML data type (float32, float16,
        int32, int16, int8, uint32, uint16, uint8), or a Python list (floats -> float32, ints ->
        int32). Strided, transposed and broadcast views are read in place.
    offsets, sizes, strides: one integer per dimension: offsets >= 0, sizes >= 1 with
        offsets + sizes <= x.shape, strides nonzero (negative reverses). Integral floats are integers;
        0.5 or True is refused, not truncated.
    output_sizes: default MaxCopiedElements = 1 + (sizes - 1) // |strides|; each in 1..that.
    out: optional packed DeviceTensor of x's dtype and the output's sizes to write into.

    Returns an array of x's dtype and `output_sizes`, bitwise equal to the NumPy indexing it
    describes: NumPy (or list) in -> NumPy out; DeviceTensor in -> DeviceTensor out.

    Raises ValidationError (a ValueError) naming the field and the rule for a window outside x, a zero
    stride, non-integer parameters or a bad input; DeviceLimitError beyond the device's limits;
    nothing is dispatched then.
    """
    Call, freeze = face_runtime()

    key = ("slice",) + freeze(offsets, sizes, strides, output_sizes)
    with Call(x, key=key, outs=(out,), names=("x",)) as call:
        if call.plan is None:
            (xd,) = call.descs
            offsets = window_ints("input_window_offsets", offsets)
            sizes = window_ints("input_window_sizes", sizes)
            strides = window_ints("input_window_strides", strides)
            if output_sizes is None:
                # MaxCopiedElements; a zero stride or bad size is left for validate() to name.
                output_sizes = tuple(1 + (sz - 1) // abs(st) if st and sz > 0 else 1 for sz, st in zip(sizes, strides))
            desc = Slice1Desc(xd, TensorDesc(xd.data_type, output_sizes, name="Slice1Desc.output"),
                              offsets, sizes, strides).validate()
            call.plan = plan(desc, call.device.limits)
    return call.result()
