"""TOP_K1's descriptor and its rules (pure): `TopK1Desc.validate()`, `AxisDirection`, `MAX_AXIS_LENGTH`,
`output_descs`."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...dtypes import DataType
from ...errors import ValidationError
from ...tensor import TensorDesc, check_like_input, validate_fields

MAX_AXIS_LENGTH = 2**31 - 1


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


def output_descs(input_desc: TensorDesc, axis: int, k: int) -> Tuple[TensorDesc, TensorDesc]:
    sizes = tuple(k if i == axis else s for i, s in enumerate(input_desc.sizes))
    return (TensorDesc(input_desc.data_type, sizes, name="TopK1Desc.output_value"),
            TensorDesc(DataType.UINT32, sizes, name="TopK1Desc.output_index"))
