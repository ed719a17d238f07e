"""QUANTIZED_LINEAR_MATRIX_MULTIPLY for one or two rows of A against B (kernels/qlmm/qlmm_gemv.comp): a
matrix-vector product bound by reading B once (decoding, or two sequences at once); B row-major, or column-major
(a transposed view of an N x K weight: the _bc builds, where QlmmTuning.GEMV_BC allows). The knobs, shape rules and
split-K the lowering in rule.py and lowering.py read; its knobs are a QlmmTuning's GEMV* fields (tuning.py), part
of every plan key."""
from __future__ import annotations

from typing import Optional, Tuple

from ...limits import Limits
from .tuning import DEFAULT, QlmmTuning

# The knobs (GEMV, GEMV_MAX_M, GEMV_MULTI_MIN_B, GEMV_BC_MULTI_MIN_B, GEMV_TARGET_GROUPS, GEMV_BC) are QlmmTuning's
# fields (tuning.py).
ROWS = (1, 2)            # MR variants shipped (kernels/variants.py)
WG = 256                 # the kernel's lane layout: 16 lanes across 256 columns x 16 along K
COLS = 256               # output columns per workgroup
U = 16                   # B rows in flight per lane (the kernel's U): 16 beat 8 by 0-13% on the H100
STEP = 16 * U            # B rows per workgroup step
SLICE_WORDS = 4096       # int32 of A a workgroup stages: 16 KiB (SLICE_MAX = 4096u / MR in qlmm_gemv.comp)


def rows_variant(M: int) -> Optional[int]:
    return next((r for r in ROWS if M <= r), None)


def slice_max(mr: int) -> int:
    """K rows of A a workgroup stages (SLICE_MAX in the kernel): 16 KiB of int32."""
    return SLICE_WORDS // mr


def shared_bytes(mr: int, split: bool, bc: bool = False) -> int:
    """What kernels/qlmm/qlmm_gemv.comp declares: A's range (BC: a padding word after every 16), the tile, the
    row sums, the split flag."""
    a = slice_max(mr) + (slice_max(mr) // 16 if bc else 0)
    return 4 * (mr * a + mr * COLS + mr + int(split))


def why_not(lim: Limits, M: int, K: int, N: int, b_st, b_cols: bool,
            tuning: QlmmTuning = DEFAULT) -> Tuple[Optional[int], str]:
    """(MR, "") when the kernel can run this product on `lim`, else (None, why not). Column-major B (b_cols: b_st's
    third stride is the n stride) takes the _bc builds where GEMV_BC allows, in whole 16-byte steps of K."""
    mr = rows_variant(M)
    if not tuning.GEMV:
        return None, "QlmmTuning.GEMV is False"
    if mr is None or M > tuning.GEMV_MAX_M:
        return None, f"M = {M} is above {min(tuning.GEMV_MAX_M, ROWS[-1])} row(s)"
    if b_cols and not tuning.GEMV_BC:
        return None, "B is column-major and QlmmTuning.GEMV_BC is False"
    if b_cols and K % 16:
        return None, f"column-major B needs K in whole 16-byte steps; got K={K}"
    if N % 16 or any(s % 16 for s in b_st[:3]):
        what = "column and batch" if b_cols else "row and batch"
        return None, f"needs N and B's {what} strides in whole 16-byte steps; got N={N}, strides {tuple(b_st[:3])}"
    if lim.max_workgroup_invocations < WG or lim.max_workgroup_size[0] < WG:
        return None, f"needs workgroups of {WG}; {lim.name} allows {lim.max_workgroup_invocations}"
    if shared_bytes(mr, True, b_cols) > lim.shared_memory_bytes:
        return None, f"{shared_bytes(mr, True, b_cols)} bytes of shared memory; {lim.name} has {lim.shared_memory_bytes}"
    return mr, ""


def preferred(M: int, b_bytes: int, tuning: QlmmTuning = DEFAULT, b_cols: bool = False) -> bool:
    """Whether auto takes this kernel where why_not() allows it: one row always; more where B has at least
    GEMV_MULTI_MIN_B bytes (over all batches; column-major B: GEMV_BC_MULTI_MIN_B): below it the stream kernel's
    tensor cores win."""
    return M == 1 or b_bytes >= (tuning.GEMV_BC_MULTI_MIN_B if b_cols else tuning.GEMV_MULTI_MIN_B)


def kernel(mr: int, bc: bool = False) -> str:
    """The variant of MR rows (bc: B column-major), without the split-K suffix."""
    return ("qlmm_gemv" if mr == 1 else f"qlmm_gemv_m{mr}") + ("_bc" if bc else "")


def splits(tiles: int, K: int, mr: int, split_k=None, tuning: QlmmTuning = DEFAULT) -> int:
    """Split-K factor: at least what keeps a workgroup's K range within slice_max(mr), then as many
    workgroups as GEMV_TARGET_GROUPS holds where they fill at least 7/8 of it (one wave, nearly full: a
    split more spills into a second), else enough to reach it, while each range keeps a whole step (an int
    split_k instead of the target); ranges are whole steps, so the factor is then the fewest that cover K."""
    most = max(1, -(-K // STEP))
    least = -(-K // slice_max(mr))
    if split_k in (None, "auto"):
        t = tuning.GEMV_TARGET_GROUPS
        fl = t // tiles
        want = fl if 8 * fl * tiles >= 7 * t else -(-t // tiles)
    else:
        want = int(split_k)
    s = max(least, min(most, want))
    # the kernel rounds each range up to whole steps: fewer splits may then cover K
    sl = -(-(-(-K // s)) // STEP) * STEP
    return max(least, -(-K // sl))
