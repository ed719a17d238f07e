"""QuantizedLinearMatMul's lowering: plan() and lower() dispatch the kernel choose_kernel() picks (the
portable, cooperative-matrix, B-streaming, integer-dot-product or matrix-vector kernel) with its
specialization, push constants, split-K and scratch (pure: no device)."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ...dtypes import DataType
from ...errors import DeviceLimitError
from ...tensor import TensorDesc
from ... import native
from ...limits import Limits
from ...plan import Builder, Plan, Ref
from . import coopmat as cm
from . import dot as qd
from . import gemv as qg
from . import stream as qs
from .rule import choose_kernel, product, batch_strides
from .desc import QuantizedLinearMatMulDesc
from .tuning import DEFAULT, SPLITS_MAX, QlmmTuning
from ..slice1 import lower_packed

# Portable kernel: 16 x TY threads, 4 x 4 outputs each (kernels/qlmm.comp): TY = 16 (a 64 x 64 tile), or 8
# (32 x 64) where a workgroup may have only 128 invocations.
PORTABLE_BN = 64
PORTABLE_WG = 256
PORTABLE_MIN_WG = 128  # qlmm.comp's smallest layout: 16 x 8 threads (a 32 x 64 tile)
# Host mirror of the push-constant block in kernels/qlmm/qlmm_common.glsl.
QLMM_PUSH = np.dtype([("M", "<u4"), ("N", "<u4"), ("K", "<u4"), ("flags", "<u4"), ("C", "<u4"),
                      ("a_sb", "<u4"), ("a_sc", "<u4"), ("a_sm", "<u4"),
                      ("b_sb", "<u4"), ("b_sc", "<u4"), ("b_sk", "<u4"), ("splits", "<u4")])
F_A_SIGNED, F_B_SIGNED, F_O_SIGNED = 1, 2, 4
F_SA_ROW, F_ZA_ROW, F_SB_COL, F_ZB_COL, F_SO_ROW, F_ZO_ROW = 8, 16, 32, 64, 128, 256
F_B_COLS = 512  # B column-major (direct-B, dot, stream and BC kernels): b_sk holds the n stride
# Host mirror of kernels/qlmm/qlmm_transpose.comp's push block.
TRANSPOSE_PUSH = np.dtype([("K", "<u4"), ("N", "<u4"), ("b_sk", "<u4")])


def _flag(t: Optional[TensorDesc], flag: int) -> int:
    return flag if t is not None and t.element_count > 1 else 0


def lower_transpose(b: Builder, x: Ref, K: int, N: int, sk: int, out: Optional[Ref] = None,
                    tile: int = DEFAULT.BC_TRANSPOSE_TILE) -> Ref:
    """Row-major B (K x N, k rows `sk` elements apart) copied column-major into a packed N x K scratch
    (qlmm_transpose in tiles of `tile` bytes a side; `out` instead where given); its ref is that scratch
    viewed as the K x N matrix it holds."""
    out = out if out is not None else b.scratch(TensorDesc(x.desc.data_type, (1, 1, N, K)))
    pc = np.zeros((), TRANSPOSE_PUSH)
    pc["K"], pc["N"], pc["b_sk"] = K, N, sk
    b.dispatch("qlmm_transpose", [x, out], writes=[1], groups=(-(-N // tile), -(-K // tile), 1),
               push=pc.reshape(1).view(np.uint32), spec=(cm.TRANSPOSE_WG, tile))
    return Ref(out.id, TensorDesc(x.desc.data_type, (1, 1, K, N), (0, 0, 1, K)))


def _tile_rows(b: Builder, t: Optional[Ref], rows: int) -> Optional[Ref]:
    """A per-row parameter {1,1,M,1} repeated `rows` times into a packed scratch (an identity SLICE1
    of a stride-0 view); per-tensor parameters and None pass through."""
    if t is None or t.desc.element_count == 1:
        return t
    m = t.desc.element_count
    return lower_packed(b, Ref(t.id, TensorDesc(t.desc.data_type, (rows, m), (0, 1))))


_INPUTS = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point")


def plan(desc: QuantizedLinearMatMulDesc, limits: Limits, *, kernel: str = "auto",
         zero_points: Optional[Tuple] = None, config: Optional[str] = None, group_m: Optional[int] = None,
         split_k=None, tuning: Optional[QlmmTuning] = None) -> Plan:
    """The dispatch of a validated QUANTIZED_LINEAR_MATRIX_MULTIPLY (pure: no device). Its inputs are the
    descriptor's tensors in order, absent zero points left out. `zero_points` = (a_zp, b_zp) as NumPy
    arrays when the host knows them (lets the cooperative-matrix path skip the row/column sums).
    `config`: a cooperative-matrix tile (coopmat.COOPMAT_CONFIGS), or "nr32" / "nr64" with
    kernel="stream" (the B-streaming kernel's width). `tuning`: the knobs (None: tuning.DEFAULT).
    With every option at its default, libvkops' planner (vkops.native) where the library loaded; else
    python_plan()."""
    if kernel == "auto" and zero_points is None and config is None and group_m is None and split_k is None and \
            (tuning is None or tuning == DEFAULT) and native.enabled():
        return native.plan(native.OP_QLMM, desc, limits)
    return python_plan(desc, limits, kernel=kernel, zero_points=zero_points, config=config, group_m=group_m,
                       split_k=split_k, tuning=tuning)


def python_plan(desc: QuantizedLinearMatMulDesc, limits: Limits, *, kernel: str = "auto",
                zero_points: Optional[Tuple] = None, config: Optional[str] = None, group_m: Optional[int] = None,
                split_k=None, tuning: Optional[QlmmTuning] = None) -> Plan:
    """plan() by the Python lowering (pure), whatever the options: the planner libvkops' is checked against."""
    bld = Builder("qlmm", limits)
    ins = [None if getattr(desc, f) is None else bld.input(getattr(desc, f), f) for f in _INPUTS]
    out = bld.output(desc.output, "output")
    bld.notes["kernel"] = lower(bld, desc, *ins, out, kernel=kernel, zero_points=zero_points, config=config,
                                group_m=group_m, split_k=split_k, tuning=tuning)
    return bld.finish()


def lower(batch: Builder, desc: QuantizedLinearMatMulDesc, a, a_scale, a_zp, b, b_scale, b_zp, o_scale, o_zp, out,
          kernel: str = "auto", zero_points: Optional[Tuple] = None, config: Optional[str] = None,
          group_m: Optional[int] = None, split_k=None, tuning: Optional[QlmmTuning] = None) -> str:
    """Dispatch the product into packed `out`; returns the kernel used: the one choose_kernel() picks for
    the product as product() sees it (the refs a .. o_zp carry desc's tensor descriptors)."""
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

    # Column-major B (k stride 1: a transposed N x K weight) is read as it is where the direct-B, dot, stream,
    # gemv (GEMV_BC) or BC kernel runs; anywhere else it is packed first (below, once the kernel is known).
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
        if wg < PORTABLE_MIN_WG:
            raise DeviceLimitError(f"the portable QLinearMatMul kernel needs {PORTABLE_MIN_WG}-invocation workgroups; "
                                   f"{lim.name} allows {lim.max_workgroup_invocations}")
        kname, spec, bm, bn = "qlmm", (wg,), 4 * (wg // 16), PORTABLE_BN
    elif which == "dot":
        kname, spec, bm, bn = "qlmm_dot", qd.spec(lim, dot, t), dot, t.DOT_COLS
    elif which == "stream":
        (bm, bn), kname = stream, qs.kernel(*stream)
        spec = qs.spec(lim, bm, bn, t)
    elif which == "gemv":
        kname, spec, bm, bn = qg.kernel(gemv, b_cols), (qg.WG,), gemv, qg.COLS  # b_cols here: GEMV_BC allowed it
    else:
        tm, tn, tk, sw, sh = cm.check_config(config)
        gm = t.COOPMAT_GROUP_M if group_m is None else int(group_m)
        spec, bm, bn = (cm.LANES * sw * sh, tm, tn, tk, sw, sh, max(1, gm)), tm, tn
    bc = which == "coopmat" and kname.endswith("_bc")  # B column-major: as it lies, or transposed first
    if bc and not b_cols:  # row-major B (rule.Facts.b_transpose)
        b, b_cols, b_st = lower_transpose(batch, b, K, N, b_st[2], tile=t.BC_TRANSPOSE_TILE), True, (0, 0, K, 1)
        batch.notes["b_transposed"] = True
    elif b_cols and not (which in ("dot", "stream", "gemv") or direct or bc):
        b_cols = False
        b = packed_inner(b)
        b_st = batch_strides(b.desc)[:3] + (1,)

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
    if b_cols and not batch.notes.get("b_transposed"):
        batch.notes["b_layout"] = "column-major"
    groups = (-(-N // bn), -(-M // bm), Bo * Co)
    extra, extra_writes = [], []
    tiles = groups[0] * groups[1] * groups[2]
    sk = slot = 1
    whole = 0  # a tail split: the first `whole` tiles run unsplit (coopmat.tail_split)
    if which == "coopmat":
        nchunks = -(-K // tk)
        sk = t.COOPMAT_SPLIT_K if split_k is None else split_k
        if sk == "auto":
            # direct B: more splits (a quarter of the chunks, up to 16) keep more loads in flight
            sk = min(t.SPLIT_MAX, max(1, nchunks // 4)) if kname.startswith("qlmm_coopmat_direct") else \
                cm.auto_split(tiles, nchunks, config, t)
            sk = sk if sk > 1 and lim.coopmat_split_verified else 1
            if sk == 1 and groups[2] == 1 and lim.coopmat_split_verified:
                whole, sk = cm.tail_split(tiles, nchunks, config, t)
        else:
            sk = max(1, min(int(sk), nchunks, SPLITS_MAX))
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
        pc["splits"] = sk | whole << 8
        part = batch.scratch(TensorDesc(DataType.INT32, ((tiles - whole) * sk * slot,)))
        extra, extra_writes = [part, batch.counters(tiles - whole)], [9, 10]
        groups = (whole + (tiles - whole) * sk, 1, 1) if whole else (groups[0] * sk, groups[1], groups[2])
    limit = lim.max_workgroup_count
    for g, lmt, what in zip(groups, limit, ("N tiles", "M tiles", "BatchCount*ChannelCount")):
        if g > lmt:
            raise DeviceLimitError(f"QuantizedLinearMatMul needs {g} workgroups along {what}; "
                                   f"{lim.name} allows {lmt}")
    if which == "coopmat":
        batch.notes.update(config=config, split_k=sk, **({"whole_tiles": whole} if whole else {}))
    elif which in ("dot", "stream", "gemv"):
        batch.notes.update(rows=bm, split_k=sk)
    batch.dispatch(kname, [a, b, a_scale, a_zp_t, b_scale, b_zp_t, o_scale, o_zp_t, out] + extra,
                   writes=[8] + extra_writes,
                   groups=groups, push=pc.reshape(1).view(np.uint32), spec=spec)
    return which
