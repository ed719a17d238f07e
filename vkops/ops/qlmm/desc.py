"""DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY's descriptor and its rules (pure: no device).

Result = saturate(round_half_to_even(sum_k (a - a_zp)(b - b_zp) * a_scale * b_scale / out_scale) + out_zp).
The sum is accumulated exactly in int32: |(a - a_zp)(b - b_zp)| <= 255 * 255 = 65025, so K <= 33025
(= floor((2**31 - 1) / 65025)) can never overflow; larger K is rejected with a DeviceLimitError.
The scale product is formed in float32 on the device (the NumPy oracle uses float64), so an output
may differ from the oracle by 1 where the exact value sits within float32 rounding of a .5 tie.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...dtypes import DataType
from ...errors import DeviceLimitError, ValidationError
from ...tensor import TensorDesc, validate_fields

MAX_K = (2**31 - 1) // (255 * 255)  # 33025: int32 accumulation stays exact up to here
QUANT_TYPES = (DataType.INT8, DataType.UINT8)

@dataclass(frozen=True)
class QuantizedLinearMatMulDesc:
    """DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC: 4-D TensorDescs a {B,C,M,K} and b {B,C,K,N}
    (INT8/UINT8), FLOAT32 scales {1,1,1,1} or per row {1,1,M,1} (a, output) / per column {1,1,1,N} (b),
    zero points shaped like their scale with their tensor's type (or None), output {B,C,M,N} INT8/UINT8."""

    a: TensorDesc
    a_scale: TensorDesc
    a_zero_point: Optional[TensorDesc]
    b: TensorDesc
    b_scale: TensorDesc
    b_zero_point: Optional[TensorDesc]
    output_scale: TensorDesc
    output_zero_point: Optional[TensorDesc]
    output: TensorDesc

    @property
    def m(self) -> int:
        """Rows of a and of the output (a.sizes[2])."""
        return self.a.sizes[2]

    @property
    def k(self) -> int:
        """The inner dimension (a.sizes[3] = b.sizes[2])."""
        return self.a.sizes[3]

    @property
    def n(self) -> int:
        """Columns of b and of the output (b.sizes[3])."""
        return self.b.sizes[3]

    def validate(self) -> "QuantizedLinearMatMulDesc":
        """Check every rule of the DML page without a device; returns self, or raises ValidationError
        naming the field, the rule and the values (DeviceLimitError for K > 33025)."""
        name = "QuantizedLinearMatMulDesc"
        optional = ("a_zero_point", "b_zero_point", "output_zero_point")
        fields = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale",
                  "output_zero_point", "output")
        validate_fields(self, fields, optional)
        for f in fields:
            t = getattr(self, f)
            if t is not None and t.rank != 4:
                raise ValidationError(f"{name}.{f} must have DimensionCount 4; got {t.rank} (sizes {t.sizes})")
        a, b, out = self.a, self.b, self.output
        for f, t in (("a", a), ("b", b), ("output", out)):
            if t.data_type not in QUANT_TYPES:
                raise ValidationError(f"{name}.{f}.data_type must be INT8 or UINT8; got {t.data_type.name}")
        for f in ("a_scale", "b_scale", "output_scale"):
            t = getattr(self, f)
            if t.data_type != DataType.FLOAT32:
                raise ValidationError(f"{name}.{f}.data_type must be FLOAT32; got {t.data_type.name}")
        for f, owner, of in (("a_zero_point", a, "a"), ("b_zero_point", b, "b"),
                             ("output_zero_point", out, "output")):
            t = getattr(self, f)
            if t is not None and t.data_type != owner.data_type:
                raise ValidationError(f"{name}.{f}.data_type must equal {of}.data_type {owner.data_type.name}; "
                                      f"got {t.data_type.name}")
        M, K = a.sizes[2], a.sizes[3]
        Kb, N = b.sizes[2], b.sizes[3]
        if Kb != K:
            raise ValidationError(f"{name}.b.sizes[2] must equal a.sizes[3] (K); got {Kb} vs {K} "
                                  f"(a sizes {a.sizes}, b sizes {b.sizes})")
        batch = []
        for d, what in ((0, "BatchCount"), (1, "ChannelCount")):
            x, y = a.sizes[d], b.sizes[d]
            if x != y and 1 not in (x, y):
                raise ValidationError(f"{name}.a.sizes[{d}] and b.sizes[{d}] ({what}) must be equal or one of them 1; "
                                      f"got {x} and {y} (a sizes {a.sizes}, b sizes {b.sizes})")
            batch.append(max(x, y))
        want = (batch[0], batch[1], M, N)
        if out.sizes != want:
            raise ValidationError(f"{name}.output.sizes must be {{BatchCount, ChannelCount, M, N}} = {want}; "
                                  f"got {out.sizes}")
        if not out.is_packed:
            raise ValidationError(f"{name}.output.strides must be packed (None); got {out.strides} for sizes {out.sizes}")
        rules = {"a_scale": ("row", M), "a_zero_point": ("row", M), "b_scale": ("column", N),
                 "b_zero_point": ("column", N), "output_scale": ("row", M), "output_zero_point": ("row", M)}
        for f, (kind, count) in rules.items():
            t = getattr(self, f)
            if t is None:
                continue
            per = (1, 1, count, 1) if kind == "row" else (1, 1, 1, count)
            if t.sizes not in ((1, 1, 1, 1), per):
                raise ValidationError(f"{name}.{f}.sizes must be {{1,1,1,1}} (per tensor) or "
                                      f"{{{','.join(map(str, per))}}} (per {kind}); got {t.sizes}")
            if not t.is_packed:
                raise ValidationError(f"{name}.{f}.strides must be packed; got {t.strides} for sizes {t.sizes}")
        if K > MAX_K:
            raise DeviceLimitError(
                f"{name}.a.sizes[3] (K) must be <= {MAX_K}: the int32 accumulator is exact only up to "
                f"floor((2**31-1) / (255*255)) = {MAX_K} products; got K={K}")
        return self
