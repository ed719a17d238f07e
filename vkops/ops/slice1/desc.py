"""SLICE1's descriptor and its rules (pure): `Slice1Desc.validate()`, `window_ints` (the window's integers)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...errors import ValidationError
from ...tensor import TensorDesc, check_like_input, validate_fields


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
