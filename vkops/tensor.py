"""TensorDesc after DML_BUFFER_TENSOR_DESC: data type, sizes, strides in elements (None = packed).

Pure Python: shape rules here run without a device.

May import: the other pure modules (errors, dtypes); never `vkops.ops`, `vkops.runtime`, `vkops.bench` (nor drivers, vkinfo, kp, the package face `vkops`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple


from .dtypes import DataType
from .errors import ValidationError

MAX_DIMS = 8
# Kernels index elements with uint32 arithmetic.
MAX_ELEMENTS = 2**32 - 1
_CODES = {dt: i for i, dt in enumerate(DataType)}


def packed_strides(sizes) -> Tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def _ints(name: str, values) -> Tuple[int, ...]:
    if type(values) is tuple and all(type(v) is int for v in values):  # the hot path: already ints
        return values
    try:
        out = tuple(int(v) for v in values)
    except TypeError:
        raise ValidationError(f"{name} must be a sequence of integers; got {values!r}") from None
    if any(int(v) != v for v in values):
        raise ValidationError(f"{name} must hold integers; got {tuple(values)}")
    return out


@dataclass(frozen=True)
class TensorDesc:
    """DML_BUFFER_TENSOR_DESC: a DataType (or NumPy dtype), 1 to 8 sizes >= 1, and optional strides in
    elements (>= 0; 0 broadcasts; None = packed C order). The constructor validates and raises
    ValidationError naming `name` (the field the descriptor stands for)."""

    data_type: DataType
    sizes: Tuple[int, ...]
    strides: Optional[Tuple[int, ...]] = None

    def __init__(self, data_type, sizes, strides=None, *, name: str = "TensorDesc"):
        object.__setattr__(self, "data_type", DataType.of(data_type, f"{name}.data_type"))
        object.__setattr__(self, "sizes", _ints(f"{name}.sizes", sizes))
        if strides is not None:
            strides = _ints(f"{name}.strides", strides)
        object.__setattr__(self, "strides", strides)
        # Derived once: descriptors are built and queried on every call's hot path.
        object.__setattr__(self, "_count", math.prod(self.sizes))
        el = strides if strides is not None else packed_strides(self.sizes)
        object.__setattr__(self, "_el", el)
        object.__setattr__(self, "_span", 1 + sum((sz - 1) * st for sz, st in zip(self.sizes, el)))
        self.validate(name)
        # Hashed on every call (plan keys hold the inputs' descriptors): once, here, from ints only, so
        # the hash is the same in every process (a pickled descriptor keeps it).
        object.__setattr__(self, "_hash", hash((_CODES[self.data_type], self.sizes, strides or ())))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if other.__class__ is not TensorDesc:
            return NotImplemented
        return (self._hash == other._hash and self.data_type is other.data_type and self.sizes == other.sizes
                and self.strides == other.strides)

    def validate(self, name: str = "TensorDesc") -> None:
        """Raise ValidationError (naming `name`) unless the sizes, strides and span are valid."""
        n = len(self.sizes)
        if not 1 <= n <= MAX_DIMS:
            raise ValidationError(f"{name}.sizes must have 1 to {MAX_DIMS} dimensions; got {n} in {self.sizes}")
        if any(s < 1 for s in self.sizes):
            raise ValidationError(f"{name}.sizes must all be >= 1; got {self.sizes}")
        if self.strides is not None:
            if len(self.strides) != n:
                raise ValidationError(
                    f"{name}.strides must have one entry per dimension; got {len(self.strides)} strides "
                    f"{self.strides} for sizes {self.sizes}")
            if any(s < 0 for s in self.strides):
                raise ValidationError(f"{name}.strides must be >= 0 (DML strides are unsigned); got {self.strides}")
        if self.span > MAX_ELEMENTS:
            raise ValidationError(
                f"{name} must address at most {MAX_ELEMENTS} elements; sizes {self.sizes} with strides "
                f"{self.strides} reach {self.span}")

    @property
    def rank(self) -> int:
        """DimensionCount: the number of sizes."""
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        """The product of the sizes."""
        return self._count

    @property
    def element_strides(self) -> Tuple[int, ...]:
        """The strides in elements, packed C-order ones when `strides` is None."""
        return self._el

    @property
    def is_packed(self) -> bool:
        """True when the strides are those of a packed C-order tensor (size-1 dims may have any stride)."""
        if self.strides is None:
            return True
        return all(st == ps or sz == 1 for st, ps, sz in zip(self.strides, packed_strides(self.sizes), self.sizes))

    @property
    def span(self) -> int:
        """Elements of the buffer the tensor reaches (DML's minimum buffer size, in elements)."""
        return self._span

    @property
    def nbytes(self) -> int:
        """Bytes of the span (DML's minimum buffer size, before padding to whole 32-bit words)."""
        return self.span * self.data_type.np.itemsize

    def packed(self) -> "TensorDesc":
        """The same type and sizes, packed."""
        return self if self.strides is None else TensorDesc(self.data_type, self.sizes)

    def with_sizes(self, sizes) -> "TensorDesc":
        """A packed descriptor of the same type with other sizes."""
        return TensorDesc(self.data_type, sizes)

    def __repr__(self) -> str:
        st = "" if self.strides is None else f", strides={self.strides}"
        return f"TensorDesc({self.data_type.name}, {self.sizes}{st})"


def validate_fields(desc, fields, optional=()) -> None:
    """Each named field of operator descriptor `desc` is a valid TensorDesc (or None when optional);
    errors are named `<Desc>.<field>`."""
    name = type(desc).__name__
    for f in fields:
        t = getattr(desc, f)
        if t is None and f in optional:
            continue
        if not isinstance(t, TensorDesc):
            raise ValidationError(f"{name}.{f} must be a TensorDesc{' or None' if f in optional else ''}; "
                                  f"got {type(t).__name__}")
        t.validate(f"{name}.{f}")


def check_like_input(desc, field: str, same_type: bool = True) -> None:
    """`desc.<field>` has `desc.input`'s DimensionCount (and data type): a rule every DML operator
    page states for its outputs."""
    name, inp, t = type(desc).__name__, desc.input, getattr(desc, field)
    if t.rank != inp.rank:
        raise ValidationError(f"{name}.{field} must have the input's DimensionCount {inp.rank}; got {t.rank} "
                              f"(sizes {t.sizes} vs input sizes {inp.sizes})")
    if same_type and t.data_type != inp.data_type:
        raise ValidationError(f"{name}.{field}.data_type must equal input.data_type {inp.data_type.name}; "
                              f"got {t.data_type.name}")


def merge_dims(sizes, strides):
    """[[size, stride], ...] with size-1 dimensions dropped and neighbours that walk memory evenly
    (outer stride == inner stride * inner size) merged: the fewest loops that visit the same elements."""
    merged = []
    for sz, st in zip(sizes, strides):
        if sz == 1:
            continue
        if merged and merged[-1][1] == st * sz:
            merged[-1] = [merged[-1][0] * sz, st]
        else:
            merged.append([sz, st])
    return merged
