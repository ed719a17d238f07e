"""DML data types as NumPy dtypes, and their packing into 32-bit words.

Every device buffer is an array of uint32 words holding the tensor's bytes, little-endian, zero
padded: kernels use 32-bit storage only, so the same SPIR-V runs on devices without 8/16-bit storage.

May import: the other pure modules (errors); never `vkops.ops`, `vkops.runtime`, `vkops.bench` (nor drivers, vkinfo, kp, the package face `vkops`).
"""
from __future__ import annotations

import enum

import math

import numpy as np

from .errors import ValidationError


class DataType(enum.Enum):
    """DML_TENSOR_DATA_TYPE: the eight types vkops' operators take, each a NumPy dtype (`.np`)."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    UINT32 = "uint32"
    UINT16 = "uint16"
    UINT8 = "uint8"

    @property
    def np(self) -> np.dtype:
        """The NumPy dtype."""
        return self._np  # set below: a dict lookup would hash the member (a Python-level Enum.__hash__)

    @property
    def bits(self) -> int:
        """Bits per element (8, 16 or 32)."""
        return self.np.itemsize * 8

    @property
    def is_float(self) -> bool:
        """FLOAT32 or FLOAT16."""
        return self.np.kind == "f"

    @property
    def is_signed(self) -> bool:
        """Floats and the INT types."""
        return self.np.kind in "fi"

    @classmethod
    def of(cls, x, field: str = "data_type") -> "DataType":
        """The DataType of a DataType, a NumPy dtype (or anything np.dtype takes) or an array; raises
        ValidationError naming `field` for any other type."""
        if isinstance(x, DataType):
            return x
        if hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)):
            x = x.dtype
        try:  # remembered by the dtype, type or name given: np.dtype() costs microseconds a call
            return _OF[x]
        except (KeyError, TypeError):
            pass
        try:
            dt = cls(np.dtype(x).name)
        except (TypeError, ValueError):
            names = ", ".join(d.name for d in cls)
            raise ValidationError(f"{field} must be one of {names}; got {x!r}") from None
        try:
            if len(_OF) < 256:
                _OF[x] = dt
        except TypeError:
            pass
        return dt


_OF: dict = {}  # DataType.of's answers for hashable dtype specs
for _t in DataType:
    _t._np = np.dtype(_t.value)


def words_for(count: int, dtype: DataType) -> int:
    """uint32 words that hold `count` elements of `dtype`."""
    return (count * dtype.np.itemsize + 3) // 4


def pack(arr: np.ndarray, words: int | None = None) -> np.ndarray:
    """C-order bytes of `arr` as a zero-padded uint32 array (a copy; `arr` may be any layout)."""
    arr = np.asarray(arr)
    nbytes = arr.size * arr.itemsize
    out = np.zeros(max(words if words is not None else (nbytes + 3) // 4, 1), dtype="<u4")
    if nbytes:
        out.view(np.uint8)[:nbytes] = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return out


def unpack(words: np.ndarray, dtype: DataType, shape) -> np.ndarray:
    """Inverse of pack: the first prod(shape) elements of `words` as a new array of `dtype`."""
    count = math.prod(shape)
    raw = np.asarray(words, dtype="<u4").view(np.uint8)[: count * dtype.np.itemsize]
    return raw.view(dtype.np).reshape(shape).copy()
