"""DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY: descriptor and rules (pure), lowering to the portable or the
cooperative-matrix kernel (chosen per device after a self-check). The NumPy face: ops/qlmm_face.py.

Result = saturate(round_half_to_even(sum_k (a - a_zp)(b - b_zp) * a_scale * b_scale / out_scale) + out_zp).
The sum is accumulated exactly in int32: |(a - a_zp)(b - b_zp)| <= 255 * 255 = 65025, so K <= 33025
(= floor((2**31 - 1) / 65025)) can never overflow; larger K is rejected with a DeviceLimitError.
The scale product is formed in float32 on the device (the NumPy oracle uses float64), so an output
may differ from the oracle by 1 where the exact value sits within float32 rounding of a .5 tie.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..dtypes import DataType
from ..errors import DeviceLimitError, ValidationError
from ..tensor import TensorDesc, validate_fields
from ..limits import Limits
from ..plan import Builder, Plan, Ref
from . import qlmm_coopmat as cm
from . import qlmm_dot as qd
from . import qlmm_gemv as qg
from . import qlmm_stream as qs
from .qlmm_tuning import DEFAULT, QlmmTuning
from .slice1 import lower_packed

MAX_K = (2**31 - 1) // (255 * 255)  # 33025: int32 accumulation stays exact up to here
QUANT_TYPES = (DataType.INT8, DataType.UINT8)

# Portable kernel: 16 x TY threads, 4 x 4 outputs each (kernels/qlmm.comp): TY = 16 (a 64 x 64 tile), or 8
# (32 x 64) where a workgroup may have only 128 invocations.
PORTABLE_BN = 64
PORTABLE_WG = 256
# Host mirror of the push-constant block in kernels/qlmm_common.glsl.
QLMM_PUSH = np.dtype([("M", "<u4"), ("N", "<u4"), ("K", "<u4"), ("flags", "<u4"), ("C", "<u4"),
                      ("a_sb", "<u4"), ("a_sc", "<u4"), ("a_sm", "<u4"),
                      ("b_sb", "<u4"), ("b_sc", "<u4"), ("b_sk", "<u4"), ("splits", "<u4")])
F_A_SIGNED, F_B_SIGNED, F_O_SIGNED = 1, 2, 4
F_SA_ROW, F_ZA_ROW, F_SB_COL, F_ZB_COL, F_SO_ROW, F_ZO_ROW = 8, 16, 32, 64, 128, 256
F_B_COLS = 512  # B column-major (the direct-B kernel only): b_sk holds the n stride


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


# ---------------------------------------------------------------------------------------------- #
# Lowering
# ---------------------------------------------------------------------------------------------- #
def _flag(t: Optional[TensorDesc], flag: int) -> int:
    return flag if t is not None and t.element_count > 1 else 0


def _strides(x_desc: TensorDesc) -> Tuple[int, int, int, int]:
    """Element strides with broadcast (size-1) batch dimensions set to 0."""
    st = list(x_desc.element_strides)
    for d in (0, 1):
        if x_desc.sizes[d] == 1:
            st[d] = 0
    return tuple(st)


KERNELS = ("auto", "portable", "coopmat", "stream", "dot", "gemv")


@dataclass(frozen=True)
class Choice:
    """The kernel a product runs and why, with what its rule found: the dot kernel's rows, the stream
    kernel's (MT, NR) tile, the gemv kernel's MR, the cooperative-matrix tile and variant."""

    kernel: str
    why: str
    dot: Optional[int] = None
    stream: Optional[Tuple[int, int]] = None
    gemv: Optional[int] = None
    config: Optional[str] = None
    kname: Optional[str] = None


@dataclass(frozen=True)
class Product:
    """What the kernel rule reads of a product, after packing and folding (ops/qlmm.py lower)."""

    M: int
    N: int
    K: int
    batches: int
    a_st: Tuple[int, ...]
    b_st: Tuple[int, ...]
    b_cols: bool
    a_free: bool      # za' = za - (0 if signed else 128) is zero: no sums of B's columns
    b_free: bool      # zb' is zero: no sums of A's rows
    b_signed: bool

    @property
    def aligned(self) -> bool:
        """K, N and the strides in whole 16-element steps: the cooperative-matrix kernels' shape rule."""
        return (self.K % 16 == 0 and self.N % 16 == 0 and self.a_st[3] == 1 and self.b_st[3] == 1
                and all(s % 16 == 0 for s in self.a_st[:3]) and all(s % 16 == 0 for s in self.b_st[:3]))


def _coopmat(lim: Limits) -> bool:
    return lim.cooperative_matrix and lim.coopmat_verified


# kernel="auto": the first row whose condition holds runs (its name, the condition, why). The conditions
# read the kernels' own shape rules (qlmm_gemv.why_not, qlmm_stream.why_not, qlmm_dot.rows/preferred,
# qlmm_coopmat.resolve) and the tuning; docs/tuning/qlmm.md "Which kernel runs where" is this table.
AUTO_RULE = (
    ("gemv", lambda lim, p, t, f: f.gemv() is not None,
     "one row of A against row-major B: the matrix-vector kernel reads B once"),
    ("stream", lambda lim, p, t, f: _coopmat(lim) and p.aligned and t.STREAM and f.stream() is not None
     and qs.preferred(p.M, t),
     "up to STREAM_MAX_M rows on verified cooperative matrices: B streamed into the tensor cores"),
    ("dot", lambda lim, p, t, f: f.dot() is not None and qd.preferred(p.M, p.b_cols, f.direct(), t),
     "decoding-sized M on integer dot products (beside cooperative matrices: column-major B, zero-point "
     "sums or up to DOT_COOP_MAX_M rows, where direct B would not win)"),
    ("coopmat", lambda lim, p, t, f: _coopmat(lim) and p.aligned,
     "verified cooperative matrices and K, N, strides in whole 16-element steps: the tiled tensor-core kernel"),
    ("portable", lambda lim, p, t, f: True, "anything else: the portable tiled kernel"),
)


class _Facts:
    """Each kernel's shape rule for one product, computed once and only when a rule row asks."""

    def __init__(self, lim: Limits, p: Product, t: QlmmTuning, kernel: str, config: Optional[str]):
        self.lim, self.p, self.t, self.kernel, self.config = lim, p, t, kernel, config
        self._memo = {}

    def _get(self, name, fn):
        if name not in self._memo:
            self._memo[name] = fn()
        return self._memo[name]

    def dot_why(self):
        p = self.p
        return self._get("dot", lambda: qd.rows(self.lim, p.M, p.K, p.N, p.b_st, p.b_cols, self.t)
                         if self.t.DOT or self.kernel == "dot" else (None, "QlmmTuning.DOT is False"))

    def dot(self):
        return self.dot_why()[0]

    def stream_why(self):
        p = self.p
        cfg = self.config if self.kernel == "stream" else None
        return self._get("stream", lambda: qs.why_not(self.lim, p.M, p.N, p.batches, not p.a_free, cfg, self.t))

    def stream(self):
        return self.stream_why()[0]

    def gemv_why(self):
        p = self.p
        return self._get("gemv", lambda: qg.why_not(self.lim, p.M, p.N, p.b_st, p.b_cols, self.t))

    def gemv(self):
        return self.gemv_why()[0]

    def resolved(self):
        """(config, kernel variant) of the cooperative-matrix kernel."""
        p = self.p
        return self._get("resolve", lambda: cm.resolve(self.config or self.t.COOPMAT_CONFIG, p.M, p.N, p.K, p.batches,
                                                       p.a_free and p.b_free, p.b_signed, self.t))

    def direct(self) -> bool:
        """The cooperative-matrix kernel would read B directly (where it would run)."""
        return _coopmat(self.lim) and self.p.aligned and self.resolved()[1] == "qlmm_coopmat_direct"


def choose_kernel(lim: Limits, p: Product, kernel: str = "auto", config: Optional[str] = None,
                  tuning: QlmmTuning = DEFAULT) -> Choice:
    """The kernel for product `p` on `lim`: `kernel` forced (its refusal names why it cannot run), or for
    "auto" the first row of AUTO_RULE that holds; with the facts the lowering needs."""
    t = tuning
    f = _Facts(lim, p, t, kernel, config)

    def done(name, why):
        extra = {}
        if name == "coopmat":
            extra["config"], extra["kname"] = f.resolved()
        return Choice(name, why, dot=f.dot() if name == "dot" else None, stream=f.stream() if name == "stream" else None,
                      gemv=f.gemv() if name == "gemv" else None, **extra)

    if kernel not in KERNELS:
        raise ValidationError(f"kernel must be 'auto', 'portable', 'coopmat', 'stream', 'dot' or 'gemv'; got {kernel!r}")
    if kernel == "auto":
        for name, holds, why in AUTO_RULE:
            if holds(lim, p, t, f):
                return done(name, why)
    if kernel == "portable":
        return done("portable", "forced")
    if kernel in ("coopmat", "stream"):
        if not lim.cooperative_matrix:
            raise DeviceLimitError(f"kernel={kernel!r} needs VK_KHR_cooperative_matrix with shape {cm.COOPMAT_SHAPE} "
                                   f"and 32-lane subgroups; {lim.name} does not offer them")
        if not p.aligned:
            raise ValidationError(f"kernel={kernel!r} needs K and N multiples of 16 and 16-element aligned strides; "
                                  f"got K={p.K}, N={p.N}, a strides {p.a_st}, b strides {p.b_st}")
    for name in ("stream", "dot", "gemv"):
        if kernel == name:
            found, why = getattr(f, name + "_why")()
            if found is None:
                raise DeviceLimitError(f"kernel={name!r} cannot run this product: {why}")
    return done(kernel, "forced")


def _column_major(b: TensorDesc) -> bool:
    """b's k stride is 1 and its n and batch strides are whole 16-element steps (a transposed view of
    an N x K matrix): the direct-B cooperative-matrix kernel reads it without a copy."""
    st = _strides(b)
    return b.sizes[3] > 1 and st[2] == 1 and all(x % 16 == 0 for x in (st[0], st[1], st[3]))


def _zero_point_free(zp, signed: bool, known) -> bool:
    """True when za' = za - (0 if signed else 128) is zero everywhere (no row/column sums needed)."""
    offset = 0 if signed else 128
    if zp is None:
        return offset == 0
    if known is None:
        return False
    return bool(np.all(np.asarray(known).astype(np.int32) == offset))


def foldable(desc: QuantizedLinearMatMulDesc, a_st, b_st, lim: Limits, tuning: QlmmTuning = DEFAULT) -> int:
    """How many GEMMs fold into one (1: none). They fold when b is shared by every batch (its batch
    strides are 0: sizes 1 or a broadcast view), a has the output's batch sizes, and a's rows are
    evenly spaced across its batch dimensions (row r of batch z at (z*M + r) * a_sm), so the batches
    are one {Bo*Co*M, K} matrix. Scales and zero points are never per batch in DML. tuning.FOLD False
    plans one GEMM per batch (bench/research/qlmm_nd.py compares them)."""
    Bo, Co = desc.output.sizes[:2]
    M = desc.m
    if not tuning.FOLD or Bo * Co == 1 or b_st[0] != 0 or b_st[1] != 0 or desc.a.sizes[:2] != (Bo, Co):
        return 1
    if (Co > 1 and a_st[1] != M * a_st[2]) or (Bo > 1 and a_st[0] != Co * M * a_st[2]):
        return 1
    if -(-(Bo * Co * M) // 16) > lim.max_workgroup_count[1]:  # M tiles of the smallest kernel tile
        return 1
    return Bo * Co


def _tile_rows(b: Builder, t: Optional[Ref], rows: int) -> Optional[Ref]:
    """A per-row parameter {1,1,M,1} repeated `rows` times into a packed scratch (an identity SLICE1
    of a stride-0 view); per-tensor parameters and None pass through."""
    if t is None or t.desc.element_count == 1:
        return t
    m = t.desc.element_count
    return lower_packed(b, Ref(t.id, TensorDesc(t.desc.data_type, (rows, m), (0, 1))))


def product(desc: QuantizedLinearMatMulDesc, lim: Limits, zero_points: Optional[Tuple] = None,
            tuning: QlmmTuning = DEFAULT) -> Tuple[Product, int]:
    """(what the kernel rule reads of the product, how many GEMMs fold into it): a with a packed inner
    dimension, b read column-major in place (COOPMAT_COLS) or packed, batches folded into M (foldable)."""
    t = tuning

    def inner_packed(d: TensorDesc) -> TensorDesc:
        return d if d.element_strides[3] == 1 or d.sizes[3] == 1 else d.packed()

    b_cols = t.COOPMAT_COLS and _column_major(desc.b)
    a_st, b_st = _strides(inner_packed(desc.a)), _strides(desc.b if b_cols else inner_packed(desc.b))
    a_st = a_st[:3] + (1,)
    b_st = b_st[:2] + ((b_st[3], 1) if b_cols else (b_st[2], 1))
    M, (Bo, Co) = desc.m, desc.output.sizes[:2]
    rows = foldable(desc, a_st, b_st, lim, t)
    if rows > 1:
        M, Bo, Co = rows * M, 1, 1
        a_st = (0, 0, a_st[2], 1)
    za_known, zb_known = zero_points if zero_points is not None else (None, None)
    a_free = _zero_point_free(desc.a_zero_point, desc.a.data_type.is_signed, za_known)  # za' = 0
    b_free = _zero_point_free(desc.b_zero_point, desc.b.data_type.is_signed, zb_known)  # zb' = 0
    return Product(M, desc.n, desc.k, Bo * Co, a_st, b_st, b_cols, a_free, b_free, desc.b.data_type.is_signed), rows


def choose(desc: QuantizedLinearMatMulDesc, limits: Limits, *, kernel: str = "auto", zero_points: Optional[Tuple] = None,
           config: Optional[str] = None, tuning: Optional[QlmmTuning] = None) -> Choice:
    """The kernel plan() would lower this product to, and why (pure)."""
    t = DEFAULT if tuning is None else tuning
    return choose_kernel(limits, product(desc, limits, zero_points, t)[0], kernel, config, t)


_INPUTS = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point")


def plan(desc: QuantizedLinearMatMulDesc, limits: Limits, *, kernel: str = "auto",
         zero_points: Optional[Tuple] = None, config: Optional[str] = None, group_m: Optional[int] = None,
         split_k=None, tuning: Optional[QlmmTuning] = None) -> Plan:
    """The dispatch of a validated QUANTIZED_LINEAR_MATRIX_MULTIPLY (pure: no device). Its inputs are the
    descriptor's tensors in order, absent zero points left out. `zero_points` = (a_zp, b_zp) as NumPy
    arrays when the host knows them (lets the cooperative-matrix path skip the row/column sums).
    `config`: a cooperative-matrix tile (qlmm_coopmat.COOPMAT_CONFIGS), or "nr32" / "nr64" with
    kernel="stream" (the B-streaming kernel's width). `tuning`: the knobs (None: qlmm_tuning.DEFAULT)."""
    bld = Builder("qlmm", limits)
    ins = [None if getattr(desc, f) is None else bld.input(getattr(desc, f), f) for f in _INPUTS]
    out = bld.output(desc.output, "output")
    bld.notes["kernel"] = lower(bld, desc, *ins, out, kernel=kernel, zero_points=zero_points, config=config,
                                group_m=group_m, split_k=split_k, tuning=tuning)
    return bld.finish()


def lower(batch: Builder, desc: QuantizedLinearMatMulDesc, a, a_scale, a_zp, b, b_scale, b_zp, o_scale, o_zp, out,
          kernel: str = "auto", zero_points: Optional[Tuple] = None, config: Optional[str] = None,
          group_m: Optional[int] = None, split_k=None, tuning: Optional[QlmmTuning] = None) -> str:
    """Dispatch the product into packed `out`; returns the kernel used."""
    t = DEFAULT if tuning is None else tuning
    lim = batch.limits
    N, K = desc.n, desc.k
    Bo, Co = desc.output.sizes[:2]
    prod, rows = product(desc, lim, zero_points, t)
    choice = choose_kernel(lim, prod, kernel, config, t)
    which, M, a_st, b_st, b_cols = choice.kernel, prod.M, prod.a_st, prod.b_st, prod.b_cols
    a_free, b_free = prod.a_free, prod.b_free
    dot, stream, gemv = choice.dot, choice.stream, choice.gemv
    if which == "coopmat":
        config, kname = choice.config, choice.kname
    direct = which == "coopmat" and kname == "qlmm_coopmat_direct"

    def packed_inner(r):
        if r.desc.element_strides[3] == 1 or r.desc.sizes[3] == 1:
            return r
        return lower_packed(batch, r)

    # Column-major B (k stride 1: a transposed N x K weight) is read as it is where the direct-B kernel
    # runs; anywhere else it is packed first (below, once the kernel is known).
    a = packed_inner(a)
    b = b if b_cols else packed_inner(b)
    if rows > 1:
        # One GEMM of rows*M rows instead of rows GEMMs of M: the packed output {Bo,Co,M,N} is the same
        # memory as {Bo*Co*M, N}. Per-row parameters ({1,1,M,1}) repeat for every folded batch.
        Bo, Co = 1, 1
        a_scale, a_zp, o_scale, o_zp = (_tile_rows(batch, r, rows) for r in (a_scale, a_zp, o_scale, o_zp))
        batch.notes["folded"] = rows

    def zero(dt):  # a constant buffer (the runtime shares one per device): nothing uploaded per call
        return batch.constant(np.zeros(4, dt.np), f"zero_{dt.value}")

    a_zp_t = a_zp if a_zp is not None else zero(desc.a.data_type)
    b_zp_t = b_zp if b_zp is not None else zero(desc.b.data_type)
    o_zp_t = o_zp if o_zp is not None else zero(desc.output.data_type)

    if which == "portable":
        wg = lim.workgroup(PORTABLE_WG)
        if wg < 128:
            raise DeviceLimitError(f"the portable QLinearMatMul kernel needs 128-invocation workgroups; "
                                   f"{lim.name} allows {lim.max_workgroup_invocations}")
        kname, spec, bm, bn = "qlmm", (wg,), 4 * (wg // 16), PORTABLE_BN
    elif which == "dot":
        kname, spec, bm, bn = "qlmm_dot", qd.spec(lim, dot, t), dot, t.DOT_COLS
    elif which == "stream":
        (bm, bn), kname = stream, qs.kernel(*stream)
        spec = qs.spec(lim, bm, bn, t)
    elif which == "gemv":
        kname, spec, bm, bn = qg.kernel(gemv), (qg.WG,), gemv, qg.COLS
    else:
        tm, tn, tk, sw, sh = cm.check_config(config)
        gm = t.COOPMAT_GROUP_M if group_m is None else int(group_m)
        spec, bm, bn = (32 * sw * sh, tm, tn, tk, sw, sh, max(1, gm)), tm, tn
    if b_cols and not (which in ("dot", "stream") or direct):
        b_cols = False
        b = packed_inner(b)
        b_st = _strides(b.desc)[:3] + (1,)

    pc = np.zeros((), QLMM_PUSH)
    pc["M"], pc["N"], pc["K"], pc["C"] = M, N, K, Co
    pc["a_sb"], pc["a_sc"], pc["a_sm"] = a_st[:3]
    pc["b_sb"], pc["b_sc"], pc["b_sk"] = b_st[:3]
    flags = F_B_COLS if b_cols else 0
    flags |= F_A_SIGNED if desc.a.data_type.is_signed else 0
    flags |= F_B_SIGNED if desc.b.data_type.is_signed else 0
    flags |= F_O_SIGNED if desc.output.data_type.is_signed else 0
    flags |= _flag(desc.a_scale, F_SA_ROW) | _flag(desc.a_zero_point, F_ZA_ROW)
    flags |= _flag(desc.b_scale, F_SB_COL) | _flag(desc.b_zero_point, F_ZB_COL)
    flags |= _flag(desc.output_scale, F_SO_ROW) | _flag(desc.output_zero_point, F_ZO_ROW)
    if which in ("dot", "stream"):  # zero-point sums only where a shifted zero point may be non-zero
        flags |= (0 if b_free else qd.F_NEED_SA) | (0 if a_free else qd.F_NEED_SB)
    pc["flags"] = flags
    if b_cols:
        batch.notes["b_layout"] = "column-major"
    groups = (-(-N // bn), -(-M // bm), Bo * Co)
    extra, extra_writes = [], []
    tiles = groups[0] * groups[1] * groups[2]
    sk = slot = 1
    if which == "coopmat":
        nchunks = -(-K // tk)
        sk = t.COOPMAT_SPLIT_K if split_k is None else split_k
        if sk == "auto":
            # direct B: more splits (a quarter of the chunks, up to 16) keep more loads in flight
            sk = min(t.SPLIT_MAX, max(1, nchunks // 4)) if kname.startswith("qlmm_coopmat_direct") else \
                cm.auto_split(tiles, nchunks, config, t)
            sk = sk if sk > 1 and lim.coopmat_split_verified else 1
        else:
            sk = max(1, min(int(sk), nchunks))
        slot = tm * tn + tm + tn  # the int32 tile, then its row and column sums
    elif which == "dot":
        sk, slot = qd.splits(tiles, K, spec[0], split_k, t), bm * bn
    elif which == "stream":
        sk, slot = qs.splits(tiles, K, bn, spec[0], split_k, t), bm * bn
        if split_k in (None, "auto") and not lim.coopmat_split_verified:
            sk = 1  # auto splits only where the split-K variants passed their self-check
    elif which == "gemv":
        sk, slot = qg.splits(tiles, K, bm, split_k, t), bm * bn
    if sk > 1 and which == "gemv":  # splits add into sums after the tiles' counters; the last one requantizes
        kname += "_sk"
        pc["splits"] = sk
        extra, extra_writes = [batch.counters(tiles * (1 + slot))], [9]
        groups = (groups[0] * sk, groups[1], groups[2])
    elif sk > 1:  # each split stores its partial tile in a slot; the last of a tile to arrive adds them
        kname += "_sk"
        pc["splits"] = sk
        part = batch.scratch(TensorDesc(DataType.INT32, (tiles * sk * slot,)))
        extra, extra_writes = [part, batch.counters(tiles)], [9, 10]
        groups = (groups[0] * sk, groups[1], groups[2])
    limit = lim.max_workgroup_count
    for g, lmt, what in zip(groups, limit, ("N tiles", "M tiles", "BatchCount*ChannelCount")):
        if g > lmt:
            raise DeviceLimitError(f"QuantizedLinearMatMul needs {g} workgroups along {what}; "
                                   f"{lim.name} allows {lmt}")
    if which == "coopmat":
        batch.notes.update(config=config, split_k=sk)
    elif which in ("dot", "stream", "gemv"):
        batch.notes.update(rows=bm, split_k=sk)
    batch.dispatch(kname, [a, b, a_scale, a_zp_t, b_scale, b_zp_t, o_scale, o_zp_t, out] + extra,
                   writes=[8] + extra_writes,
                   groups=groups, push=pc.reshape(1).view(np.uint32), spec=spec)
    return which
