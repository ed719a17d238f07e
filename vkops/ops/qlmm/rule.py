"""QuantizedLinearMatMul's kernel rule: what the rule reads of a product (Product: after packing and
folding), and choose_kernel(), whose AUTO_RULE rows are tried in order (the first that holds runs), or a
forced kernel checked with its refusal naming why (pure: no device)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional, Tuple

import numpy as np

from ...errors import DeviceLimitError, ValidationError
from ...limits import Limits
from ...tensor import TensorDesc
from . import coopmat as cm
from . import dot as qd
from . import gemv as qg
from . import stream as qs
from .desc import QuantizedLinearMatMulDesc
from .tuning import DEFAULT, QlmmTuning


def batch_strides(x_desc: TensorDesc) -> Tuple[int, int, int, int]:
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
    """What the kernel rule reads of a product, after packing and folding (lowering.py packs and folds alike)."""

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


class Facts:
    """One product on one device under one tuning (`lim`, `p`, `t`), with each kernel's shape rule computed
    once and only when a rule row (or a forced kernel) asks: `*_why` is (what it found or None, why not)."""

    def __init__(self, lim: Limits, p: Product, t: QlmmTuning, kernel: str = "auto", config: Optional[str] = None):
        self.lim, self.p, self.t, self.kernel, self.config = lim, p, t, kernel, config

    @property
    def b_transpose(self) -> bool:
        """Row-major B transposed first (lowering.lower_transpose) for the BC builds: COOPMAT_BC, from
        BC_TRANSPOSE_MIN_M rows, one matrix of B (or one shared by the batches), 256-invocation workgroups."""
        p, t = self.p, self.t
        return (not p.b_cols and t.COOPMAT_BC and 0 < t.BC_TRANSPOSE_MIN_M <= p.M
                and (p.batches == 1 or p.b_st[0] == p.b_st[1] == 0)
                and self.lim.max_workgroup_invocations >= cm.TRANSPOSE_WG)

    @property
    def coopmat(self) -> bool:
        """Verified cooperative matrices, and the product in whole 16-element steps."""
        return self.lim.cooperative_matrix and self.lim.coopmat_verified and self.p.aligned

    @cached_property
    def gemv_why(self) -> Tuple[Optional[int], str]:
        p = self.p
        return qg.why_not(self.lim, p.M, p.K, p.N, p.b_st, p.b_cols, self.t)

    @cached_property
    def stream_why(self) -> Tuple[Optional[Tuple[int, int]], str]:
        p, cfg = self.p, (self.config if self.kernel == "stream" else None)
        return qs.why_not(self.lim, p.M, p.N, p.batches, not p.a_free, cfg, self.t)

    @cached_property
    def dot_why(self) -> Tuple[Optional[int], str]:
        p = self.p
        if not (self.t.DOT or self.kernel == "dot"):
            return None, "QlmmTuning.DOT is False"
        return qd.rows(self.lim, p.M, p.K, p.N, p.b_st, p.b_cols, self.t)

    @cached_property
    def resolved(self) -> Tuple[str, str]:
        """(tile config, kernel variant) of the cooperative-matrix kernel."""
        p = self.p
        return cm.resolve(self.config or self.t.COOPMAT_CONFIG, p.M, p.N, p.K, p.batches, p.a_free and p.b_free,
                          p.b_signed, self.t, p.b_cols or self.b_transpose)

    @cached_property
    def shared(self) -> int:
        """Bytes of shared memory the cooperative-matrix tile declares, split-K's flag included."""
        config, kname = self.resolved
        return cm.shared_bytes(config, kname + "_sk")

    @property
    def fits(self) -> bool:
        """The cooperative-matrix tile within the device's shared memory (every auto tile is within the 48 KiB
        coopmat_supported asks; a forced one need not be)."""
        return self.shared <= self.lim.shared_memory_bytes

    @property
    def direct(self) -> bool:
        """The cooperative-matrix kernel would run and read B directly."""
        return self.coopmat and self.fits and self.resolved[1] == "qlmm_coopmat_direct"

    gemv = property(lambda self: self.gemv_why[0])
    stream = property(lambda self: self.stream_why[0])
    dot = property(lambda self: self.dot_why[0])


# kernel="auto": the first row whose condition holds runs (its name, the condition on the Facts, why).
# The conditions read the kernels' own shape rules (gemv.why_not, stream.why_not, dot.rows / preferred,
# coopmat.resolve) and the tuning; docs/tuning/qlmm.md "Which kernel runs where" is this table.
AUTO_RULE = (
    ("gemv", lambda f: f.gemv is not None and qg.preferred(f.p.M, f.p.batches * f.p.K * f.p.N, f.t, f.p.b_cols),
     "one row of A (two where B has at least GEMV_MULTI_MIN_B bytes, column-major B GEMV_BC_MULTI_MIN_B): the "
     "matrix-vector kernel reads B once"),
    ("stream", lambda f: f.coopmat and f.t.STREAM and f.stream is not None and qs.preferred(f.p.M, f.t),
     "up to STREAM_MAX_M rows on verified cooperative matrices: B streamed into the tensor cores"),
    ("dot", lambda f: f.dot is not None and qd.preferred(f.p.M, f.p.b_cols, f.direct, f.t),
     "decoding-sized M on integer dot products (beside cooperative matrices: column-major B, zero-point "
     "sums or up to DOT_COOP_MAX_M rows, where direct B would not win)"),
    ("coopmat", lambda f: f.coopmat and f.fits,
     "verified cooperative matrices, K, N, strides in whole 16-element steps and the tile in shared memory: the tiled "
     "tensor-core kernel"),
    ("portable", lambda f: True, "anything else: the portable tiled kernel"),
)


def choose_kernel(lim: Limits, p: Product, kernel: str = "auto", config: Optional[str] = None,
                  tuning: QlmmTuning = DEFAULT) -> Choice:
    """The kernel for product `p` on `lim`: `kernel` forced (its refusal names why it cannot run), or for
    "auto" the first row of AUTO_RULE that holds; with the facts the lowering needs."""
    f = Facts(lim, p, tuning, kernel, config)

    def done(name, why):
        config, kname = f.resolved if name == "coopmat" else (None, None)
        return Choice(name, why, dot=f.dot if name == "dot" else None, stream=f.stream if name == "stream" else None,
                      gemv=f.gemv if name == "gemv" else None, config=config, kname=kname)

    if kernel not in KERNELS:
        raise ValidationError(f"kernel must be 'auto', 'portable', 'coopmat', 'stream', 'dot' or 'gemv'; got {kernel!r}")
    if kernel == "auto":
        for name, holds, why in AUTO_RULE:
            if holds(f):
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
    if kernel == "coopmat" and not f.fits:
        config, kname = f.resolved
        raise DeviceLimitError(f"kernel='coopmat' cannot run this product: tile {config} ({kname}) needs {f.shared} "
                               f"bytes of shared memory; {lim.name} has {lim.shared_memory_bytes}")
    for name in ("stream", "dot", "gemv"):
        if kernel == name:
            found, why = getattr(f, name + "_why")
            if found is None:
                raise DeviceLimitError(f"kernel={name!r} cannot run this product: {why}")
    return done(kernel, "forced")


def _column_major(b: TensorDesc) -> bool:
    """b's k stride is 1 and its n and batch strides are whole 16-element steps (a transposed view of
    an N x K matrix): the direct-B cooperative-matrix kernel reads it without a copy."""
    st = batch_strides(b)
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


def product(desc: QuantizedLinearMatMulDesc, lim: Limits, zero_points: Optional[Tuple] = None,
            tuning: QlmmTuning = DEFAULT) -> Tuple[Product, int]:
    """(what the kernel rule reads of the product, how many GEMMs fold into it): a with a packed inner
    dimension, b read column-major in place (COOPMAT_COLS) or packed, batches folded into M (foldable)."""
    t = tuning

    def inner_packed(d: TensorDesc) -> TensorDesc:
        return d if d.element_strides[3] == 1 or d.sizes[3] == 1 else d.packed()

    b_cols = t.COOPMAT_COLS and _column_major(desc.b)
    a_st, b_st = batch_strides(inner_packed(desc.a)), batch_strides(desc.b if b_cols else inner_packed(desc.b))
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
