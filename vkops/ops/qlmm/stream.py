"""QUANTIZED_LINEAR_MATRIX_MULTIPLY for decoding-sized M with B streamed into cooperative matrices
(kernels/qlmm/qlmm_stream.comp): the knobs, shape rules, tiling and split-K the kernel rule (rule.py) and the lowering (lowering.py) read.
A workgroup owns NR columns of B (and all of M's rows) over a K range; its subgroups take that range's
steps in turn, each through its own shared-memory slabs, without workgroup barriers. Its knobs are a
QlmmTuning's STREAM_* fields (tuning.py), part of every plan key."""
from __future__ import annotations

from typing import Optional, Tuple

from ...errors import ValidationError
from ...limits import Limits
from .tuning import DEFAULT, QlmmTuning

# The knobs (STREAM, STREAM_MAX_M, STREAM_MIN_M, STREAM_NR, STREAM_WAVE, STREAM_WG, STREAM_TARGET_GROUPS,
# STREAM_SPLIT_MAX) are QlmmTuning's fields (tuning.py). Tile widths (variants.py): NR columns with
# PF steps in flight, 32 while the column tiles fit about a wave (STREAM_WAVE workgroups) or 64 would need
# split-K, else 64.
NR_NARROW, NR_WIDE = 32, 64  # the two widths (variants.py ships NR = 32 and 64; width() picks)
TILES = {NR_NARROW: 2, NR_WIDE: 4}
LANES = 32  # lanes a subgroup: qlmm_stream.comp needs 32-lane subgroups (NSG = gl_WorkGroupSize.x / 32u)
MIN_WG = 2 * LANES  # two subgroups at least: workgroup() halves no further, why_not() refuses fewer
STEP_ROWS = 128  # qlmm_stream.comp's STEP_K = 128u / LPR: k rows a step for one lane a row (2 KiB of B)
# MT: 16 rows (the row of ones for B's column sums included). The kernel takes 32 too, but 16 rows and
# the row of ones lost there (H100, uint8 with zero points: 16 x 4096^2 30.7 us against the dot kernel's
# 24.4; 16 x 8192^2 112 against 68): twice A's traffic and products.
TILE_ROWS = (16,)


def step_k(nr: int) -> int:
    """B rows a subgroup takes per step: 2 KiB of B, 16 bytes a lane for 4 rows."""
    return STEP_ROWS // (nr // 16)


def tile_rows(M: int, col_sums: bool) -> Optional[int]:
    """MT: M's rows (and a row of ones for B's column sums) rounded up to 16; None above TILE_ROWS."""
    mt = 16 * -(-(M + int(col_sums)) // 16)
    return mt if mt <= TILE_ROWS[-1] else None


def width(N: int, batches: int, tuning: QlmmTuning = DEFAULT) -> int:
    """NR for N columns (and `batches` GEMMs): STREAM_NR, or by the rule above."""
    if tuning.STREAM_NR != "auto":
        return tuning.STREAM_NR
    if (-(-N // NR_NARROW) * batches <= tuning.STREAM_WAVE
            or -(-N // NR_WIDE) * batches < tuning.STREAM_TARGET_GROUPS):
        return NR_NARROW
    return NR_WIDE


def shared_bytes(wg: int, mt: int, nr: int, split: bool = True) -> int:
    """What kernels/qlmm/qlmm_stream.comp declares: per subgroup a B slab (16-column tiles, skewed) and an A
    slab, then the workgroup's int32 tile, row sums and (split-K variants) the last-arrival flag."""
    sk = step_k(nr)
    sbs = sk + 16
    bslab = (nr // 16) * (16 * sbs + sk)
    return (wg // LANES) * (bslab + mt * sbs) + 4 * (mt * nr + mt + int(split))


def workgroup(lim: Limits, mt: int, nr: int, tuning: QlmmTuning = DEFAULT) -> int:
    """STREAM_WG invocations (or the device's most), halved while the slabs do not fit shared memory."""
    wg = lim.workgroup(tuning.STREAM_WG)
    while wg > MIN_WG and shared_bytes(wg, mt, nr) > lim.shared_memory_bytes:
        wg //= 2
    return wg


def why_not(lim: Limits, M: int, N: int, batches: int, col_sums: bool,
            config: Optional[str] = None, tuning: QlmmTuning = DEFAULT) -> Tuple[Optional[Tuple[int, int]], str]:
    """((MT, NR), "") when the kernel can run an M-row product on `lim`, else (None, why not). `config`
    "nr32" / "nr64" forces the width. The shape's own rules (K, N, strides in whole 16-element steps)
    and the device's cooperative matrices are the cooperative-matrix kernel's (rule.py: Product.aligned)."""
    mt = tile_rows(M, col_sums)
    if mt is None or M > tuning.STREAM_MAX_M:
        most = min(tuning.STREAM_MAX_M, TILE_ROWS[-1] - int(col_sums))
        return None, f"M = {M} is above {most} rows" + (" (with a row for B's column sums)" if col_sums else "")
    if config is not None and config not in [f"nr{w}" for w in TILES]:
        raise ValidationError(f"the stream kernel's config must be one of {[f'nr{w}' for w in TILES]}; got {config!r}")
    nr = int(config[2:]) if config is not None else width(N, batches, tuning)
    wg = workgroup(lim, mt, nr, tuning)
    if wg < MIN_WG or wg % lim.subgroup_size:
        return None, f"needs workgroups of two or more 32-lane subgroups; {lim.name} allows {lim.max_workgroup_invocations}"
    if shared_bytes(wg, mt, nr) > lim.shared_memory_bytes:
        return None, f"{shared_bytes(wg, mt, nr)} bytes of shared memory; {lim.name} has {lim.shared_memory_bytes}"
    return (mt, nr), ""


def preferred(M: int, tuning: QlmmTuning = DEFAULT) -> bool:
    """Whether auto takes this kernel where why_not() allows it (over the direct-B, staged and
    integer-dot-product kernels)."""
    return M >= tuning.STREAM_MIN_M


def kernel(mt: int, nr: int) -> str:
    """The variant of this tile shape (kernels/variants.py), without the split-K suffix."""
    return f"qlmm_stream_m{mt}n{nr}p{TILES[nr]}"


def spec(lim: Limits, mt: int, nr: int, tuning: QlmmTuning = DEFAULT) -> Tuple[int]:
    """The kernel's specialization constant: the workgroup size."""
    return (workgroup(lim, mt, nr, tuning),)


def splits(tiles: int, K: int, nr: int, wg: int, split_k=None, tuning: QlmmTuning = DEFAULT) -> int:
    """Split-K factor: enough workgroups for STREAM_TARGET_GROUPS, each subgroup keeping at least its
    steps in flight (at most STREAM_SPLIT_MAX); an int split_k forces it (at most one split per step)."""
    steps = -(-K // step_k(nr))
    if split_k in (None, "auto"):
        want = -(-tuning.STREAM_TARGET_GROUPS // tiles)
        return max(1, min(tuning.STREAM_SPLIT_MAX, want, steps // ((wg // LANES) * TILES[nr])))
    return max(1, min(int(split_k), steps))
