"""QUANTIZED_LINEAR_MATRIX_MULTIPLY on packed integer dot products (kernels/qlmm/qlmm_dot.comp): the knobs,
shape rules, tiling and split-K of the decoding-sized kernel, which the lowering (lowering.py, by rule.py) picks
where the device enables VK_KHR_shader_integer_dot_product. Its knobs are a QlmmTuning's DOT_* fields
(tuning.py), part of every plan key."""
from __future__ import annotations

from typing import Optional, Tuple

from ...limits import Limits
from .tuning import DEFAULT, QlmmTuning

# The knobs (DOT, DOT_MAX_M, DOT_MAX_M_COOPMAT, DOT_MAX_ROWS, DOT_COLS, DOT_WG, DOT_TARGET_GROUPS,
# DOT_COOP_MAX_M, DOT_SPLIT_MAX, DOT_UNROLL, DOT_A_BYTES) are QlmmTuning's fields (tuning.py).
MIN_WG = 128  # invocations a workgroup at least: qlmm_dot.comp's NT is 256, or 128 where that is the limit
QUADS = 32  # column quads a workgroup: qlmm_dot.comp's COLS = 128 columns, KS = NT / 32 threads along K each
MIN_CHUNK = 8  # 16-byte k blocks of A a chunk at least, else the device's shared memory is too small for the kernel
MAX_CHUNK = 256  # 16-byte k blocks of A a chunk at most (next to DOT_A_BYTES)
F_NEED_SA, F_NEED_SB = 1024, 2048  # row sums of a' (zb' may be non-zero) / column sums of b' (za')


def rows(lim: Limits, M: int, K: int, N: int, b_st, b_cols: bool,
         tuning: QlmmTuning = DEFAULT) -> Tuple[Optional[int], str]:
    """(ROWS, "") when the integer-dot-product kernel can run this product, else (None, why not)."""
    if not lim.integer_dot_product:
        return None, f"{lim.name} does not offer VK_KHR_shader_integer_dot_product"
    most = tuning.DOT_MAX_M_COOPMAT if lim.cooperative_matrix and lim.coopmat_verified else tuning.DOT_MAX_M
    if M > most:
        return None, f"M = {M} > {most}"
    if K % 16:
        return None, f"K = {K} is not a multiple of 16"
    if not b_cols and (N % 4 or any(x % 4 for x in b_st[:3])):
        return None, f"row-major b needs N and its strides multiples of 4; got N={N}, strides {b_st}"
    r = min(1 << max(M - 1, 0).bit_length(), tuning.DOT_MAX_ROWS)
    wg = lim.workgroup(tuning.DOT_WG)
    if wg < MIN_WG or wg % r:
        return None, f"needs {MIN_WG}-invocation workgroups; {lim.name} allows {lim.max_workgroup_invocations}"
    if chunk(lim, r, tuning) < MIN_CHUNK:
        return None, f"{lim.name}'s {lim.shared_memory_bytes} bytes of shared memory are too few"
    return r, ""


def preferred(M: int, b_cols: bool, direct: bool, tuning: QlmmTuning = DEFAULT) -> bool:
    """Whether auto takes the dot kernel (where rows() allows it) over the kernel it would pick
    otherwise: always, except against the direct-B cooperative-matrix kernel (row-major signed B, no
    zero-point sums) above DOT_COOP_MAX_M rows, whose tensor cores beat the dp4a work there."""
    return b_cols or not direct or M <= tuning.DOT_COOP_MAX_M


def supported(dev) -> bool:
    """Offered (and not ruled out by a profile: dev.limits) and enabled (the kernel's features are on)."""
    return dev.limits.integer_dot_product and dev.supports("qlmm_dot")


def chunk(lim: Limits, rows: int, tuning: QlmmTuning = DEFAULT) -> int:
    """16-byte k blocks of A staged per chunk (a power of two): what shared memory allows next to the
    row sums, at most DOT_A_BYTES and 256 blocks; 0 where not even one partial tile fits."""
    room = min(tuning.DOT_A_BYTES, lim.shared_memory_bytes - 4 * (rows + 1))
    if room < 4 * (rows + 1) * tuning.DOT_COLS:  # the same memory holds partial tiles (and column sums) afterwards
        return 0
    blocks = min(MAX_CHUNK, room // (16 * rows))
    return 1 << (blocks.bit_length() - 1) if blocks > 0 else 0


def spec(lim: Limits, rows: int, tuning: QlmmTuning = DEFAULT) -> Tuple[int, int, int, int]:
    """The kernel's specialization constants: workgroup size, ROWS, CHUNK, UNROLL."""
    return lim.workgroup(tuning.DOT_WG), rows, chunk(lim, rows, tuning), tuning.DOT_UNROLL


def splits(tiles: int, K: int, wg: int, split_k=None, tuning: QlmmTuning = DEFAULT) -> int:
    """Split-K factor: about DOT_TARGET_GROUPS workgroups, each thread keeping at least DOT_UNROLL 16-byte
    blocks of K (at most DOT_SPLIT_MAX); an int split_k forces it (at most one split per block)."""
    nblocks = K // 16
    if split_k in (None, "auto"):
        return max(1, min(tuning.DOT_SPLIT_MAX, tuning.DOT_TARGET_GROUPS // tiles, nblocks // ((wg // QUADS) * tuning.DOT_UNROLL)))
    return max(1, min(int(split_k), nblocks))
