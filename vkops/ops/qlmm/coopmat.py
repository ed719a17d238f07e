"""QUANTIZED_LINEAR_MATRIX_MULTIPLY on cooperative matrices: the tile configurations and split-K rules
the lowering (lowering.py, by rule.py) picks from, which devices qualify, and the verdict of the self-check
(selfcheck.py; remembered across processes) that must pass before the kernels are trusted. Its knobs (the tiles
by shape, split-K, the raster, direct B) are a QlmmTuning's fields (tuning.py), part of every plan key."""
from __future__ import annotations

import threading
from typing import Dict, Tuple

from ...errors import ValidationError
from ...limits import Limits
from . import dot as qlmm_dot, stream as qlmm_stream
from .tuning import DEFAULT, QlmmTuning

# Cooperative-matrix kernel: (TILE_M, TILE_N, TILE_K, SG_W, SG_H); bench/bench_qlmm.py compares several.
COOPMAT_CONFIGS = {
    "128x128x64_2x2": (128, 128, 64, 2, 2),
    "128x128x64_4x1": (128, 128, 64, 4, 1),  # LARGE_CONFIG: 4 subgroups of 128 rows x 32 columns
    "128x256x64_4x2": (128, 256, 64, 4, 2),
    "256x128x64_2x4": (256, 128, 64, 2, 4),
    "128x128x32_2x2": (128, 128, 32, 2, 2),
    "64x64x64_2x2": (64, 64, 64, 2, 2),
    "64x64x128_2x2": (64, 64, 128, 2, 2),  # BC_MID_CONFIG: 65-256 rows, B column-major
    "32x64x128_2x2": (32, 64, 128, 2, 2),
    "32x64x256_2x2": (32, 64, 256, 2, 2),
    "32x32x256_1x2": (32, 32, 256, 1, 2),
    # one 16-row tile: decoding-sized M, where B streams once and A is tiny
    "16x64x256_4x1": (16, 64, 256, 4, 1),
    "16x128x256_8x1": (16, 128, 256, 8, 1),
    "16x32x512_2x1": (16, 32, 512, 2, 1),
    "16x64x128_4x1": (16, 64, 128, 4, 1),
    "16x128x128_4x1": (16, 128, 128, 4, 1),
    "16x128x256_4x1": (16, 128, 256, 4, 1),
    # research (bench/research/research_tiles.py, DIRECT_MAX_M raised): B read directly for more rows lost 1.4-25x
    "16x32x256_2x1": (16, 32, 256, 2, 1),
    "32x64x256_4x1": (32, 64, 256, 4, 1),
    "32x32x256_2x1": (32, 32, 256, 2, 1),
    "64x64x256_4x1": (64, 64, 256, 4, 1),
    "128x64x256_4x1": (128, 64, 256, 4, 1),
    "128x64x128_4x1": (128, 64, 128, 4, 1),
    # subgroups of 16 columns and the tile's rows: up to 32 rows (SMALL_CONFIG), 33-64 (LOW_CONFIG) and
    # 65-256 (MID_CONFIG, 64 rows a subgroup)
    "32x64x128_4x1": (32, 64, 128, 4, 1),
    "64x64x128_4x2": (64, 64, 128, 4, 2),
    "128x64x128_4x2": (128, 64, 128, 4, 2),
    # WAVE_FIT_CONFIGS: 80 and 112 rows a tile (128 deep: 64 would not tile 4 subgroups' A loads evenly), one wave
    "80x128x128_4x1": (80, 128, 128, 4, 1),
    "112x128x128_4x1": (112, 128, 128, 4, 1),
    "64x128x128_4x1": (64, 128, 128, 4, 1),  # MID_FIT_CONFIG: 193-256 rows of about 4096 columns in one wave
    # WAVE_CONFIG: 96 rows a tile (4 subgroups of 96 x 32) where that puts no more workgroups on an SM than 128 rows
    "96x128x64_4x1": (96, 128, 64, 4, 1),
    "96x128x128_2x2": (96, 128, 128, 2, 2),  # BC_WAVE_CONFIG: the same tile, deeper, B column-major one an SM
    "96x64x128_2x2": (96, 64, 128, 2, 2),  # MID_WAVE_CONFIG: 96 rows of 64 columns in the middle rows
}
LANES = 32  # lanes a subgroup: qlmm_coopmat.comp (and qlmm_stream.comp) run 32-lane subgroups, 32 * SG_W * SG_H a workgroup
TRANSPOSE_WG = 256  # qlmm_transpose.comp's invocations a workgroup
SMALL_MAX_M, LOW_MAX_M = 32, 64  # auto_config: SMALL_CONFIG up to 32 rows, LOW_CONFIG up to 64 (their tiles' rows)
# The knobs (COOPMAT_CONFIG, LARGE_CONFIG, AUTO_MIN_GROUPS, LARGE_MIN_TILES, LARGE_SPLIT_MIN_TILES,
# LARGE_SPLIT_MIN_CHUNKS, TAIL_SPLIT, TAIL_MIN_CHUNKS, MID_CONFIG, BC_MID_CONFIG, MID_MAX_M, MID_TARGET_GROUPS, BT_CONFIGS,
# DB_CONFIGS, SMALL_CONFIG, LOW_CONFIG, FEW_TILES_CONFIG, COOPMAT_SPLIT_K, SPLIT_TARGET_GROUPS, SPLIT_MIN_CHUNKS,
# SPLIT_MAX, COOPMAT_GROUP_M, COOPMAT_DIRECT, DIRECT_CONFIG, DIRECT_MAX_M, COOPMAT_COLS) are QlmmTuning's fields
# (tuning.py); their measurements are in docs/tuning/qlmm.md.


def auto_split(tiles: int, nchunks: int, config: str, tuning: QlmmTuning = DEFAULT) -> int:
    """Split-K for few output tiles (small M, N and batch): a factor so that about SPLIT_TARGET_GROUPS
    (MID_TARGET_GROUPS for the middle tiles MID_CONFIG, BC_MID_CONFIG and LOW_CONFIG; LOW_TARGET_GROUPS for LOW_CONFIG
    from LOW_TARGET_MIN_K deep) workgroups run, each with at least
    SPLIT_MIN_CHUNKS K-chunks; LARGE_CONFIG below LARGE_MIN_TILES tiles toward SPLIT_TARGET_GROUPS with
    LARGE_SPLIT_MIN_CHUNKS a split (from LARGE_MIN_TILES: unsplit); the 96-row tiles WAVE_CONFIG (fewer rows than the
    large tile, by validation), BC_WAVE_CONFIG, MID_WAVE_CONFIG, MID_FIT_CONFIG and WAVE_FIT_CONFIGS unsplit
    (auto_config counts their workgroups)."""
    t = tuning
    if config in (t.WAVE_CONFIG, t.BC_WAVE_CONFIG, t.MID_WAVE_CONFIG, t.MID_FIT_CONFIG) + t.WAVE_FIT_CONFIGS:  # a wave
        return 1
    if config in (t.LARGE_CONFIG, t.BC_LARGE_CONFIG):  # split only below LARGE_MIN_TILES (65-MID_MAX_M rows)
        if tiles >= t.LARGE_MIN_TILES:
            return 1
        s = min(t.SPLIT_MAX, t.SPLIT_TARGET_GROUPS // tiles, nchunks // t.LARGE_SPLIT_MIN_CHUNKS)
        return s if s >= 2 else 1
    if tiles >= t.AUTO_MIN_GROUPS // 2:
        return 1
    deep = nchunks * COOPMAT_CONFIGS[config][2] >= t.LOW_TARGET_MIN_K  # K, in whole chunks
    target = (t.LOW_TARGET_GROUPS if config == t.LOW_CONFIG and deep else
              t.MID_TARGET_GROUPS if config in (t.MID_CONFIG, t.BC_MID_CONFIG, t.LOW_CONFIG) else t.SPLIT_TARGET_GROUPS)
    s = min(t.SPLIT_MAX, max(1, target // tiles), max(1, nchunks // t.SPLIT_MIN_CHUNKS))
    return s if s >= 2 else 1


def tail_split(tiles: int, nchunks: int, config: str, tuning: QlmmTuning = DEFAULT) -> Tuple[int, int]:
    """(F, S) for LARGE_CONFIG's unsplit products of one matrix, zero-point sums or not: the first F tiles (whole
    waves of AUTO_MIN_GROUPS, two workgroups an SM) run whole and the tiles of a last wave under half full split S
    ways (S tiles' worth of workgroups fill that wave, with at least TAIL_MIN_CHUNKS K chunks a split);
    (0, 1): none."""
    t = tuning
    wave = t.AUTO_MIN_GROUPS
    tail = tiles % wave
    large = config in (t.LARGE_CONFIG, t.BC_LARGE_CONFIG)
    if not t.TAIL_SPLIT or not large or tiles < wave or tail == 0 or 2 * tail > wave:
        return 0, 1
    s = min(t.SPLIT_MAX, wave // tail, nchunks // t.TAIL_MIN_CHUNKS)
    return (tiles - tail, s) if s >= 2 else (0, 1)


def auto_config(M: int, N: int, batch: int, tuning: QlmmTuning = DEFAULT, sums: bool = False, bc: bool = False, *,
                K: int) -> str:
    """The tile by shape: SMALL_CONFIG up to 32 rows; MID_FIT_CONFIG in more than three of its tile rows up to
    MID_MAX_M, up to MID_FIT_MAX_K deep, but for column-major B with zero-point sums, where its tiles make one wave of
    MID_FIT_MIN_GROUPS to WAVE_MAX_GROUPS workgroups and MID_WAVE_CONFIG's rule (below) does not hold;
    LARGE_CONFIG where its tiles make AUTO_MIN_GROUPS
    workgroups, or LARGE_MIN_TILES above MID_MAX_M rows, or (without zero-point sums, B row-major) LARGE_SPLIT_MIN_TILES
    in 65-MID_MAX_M rows (split-K then); else LOW_CONFIG up to 64 rows, MID_CONFIG up to MID_MAX_M, FEW_TILES_CONFIG
    above. With B staged as it lies (bc) the large tile is BC_LARGE_CONFIG (the same tile, other subgroups) and
    the 65-MID_MAX_M-row tile BC_MID_CONFIG. Above MID_MAX_M rows WAVE_CONFIG takes the large tile's place where its
    own tiles put no more workgroups on the busiest SM (ceil(tiles / WAVE_MAX_GROUPS)) than the large tiles do, and
    at most WAVE_MAX_PER_SM: one wave of shorter tiles, or two an SM where the large tiles make two too; with bc (or B
    staged transposed: BC_WAVE_CONFIG in BT_CONFIGS, no zero-point sums) and one an SM, BC_WAVE_CONFIG (the same tile,
    deeper). Where the tile above MID_MAX_M rows runs one an SM, a tile of WAVE_FIT_CONFIGS of fewer rows takes its
    place if its tiles run one an SM too (_fit). In 65-MID_MAX_M rows MID_WAVE_CONFIG takes the unsplit middle
    tile's place where it puts fewer workgroups on the busiest SM (at most WAVE_MAX_PER_SM), or as many with fewer
    rows a tile, and there also the large tile's (split-K) place, up to MID_WAVE_SPLIT_MAX_K deep, where it stages B
    transposed (MID_WAVE_CONFIG in BT_CONFIGS: row-major B without zero-point sums)."""
    t = tuning
    if M <= SMALL_MAX_M:
        return t.SMALL_CONFIG
    fm = COOPMAT_CONFIGS[t.MID_FIT_CONFIG][0]  # four of its tile rows and more (measured there: 193-256 rows)
    if (3 * fm < M <= t.MID_MAX_M and K <= t.MID_FIT_MAX_K and not (sums and bc)
            and t.MID_FIT_MIN_GROUPS <= _groups(M, N, batch, t.MID_FIT_CONFIG) <= t.WAVE_MAX_GROUPS
            and not _mid_wave(M, N, batch, t, bc)):
        return t.MID_FIT_CONFIG
    tiles = _groups(M, N, batch, t.LARGE_CONFIG)
    split = not sums and not bc and LOW_MAX_M < M <= t.MID_MAX_M and tiles >= t.LARGE_SPLIT_MIN_TILES
    if (split and tiles < t.AUTO_MIN_GROUPS and K <= t.MID_WAVE_SPLIT_MAX_K and t.MID_WAVE_CONFIG in t.BT_CONFIGS
            and _mid_wave(M, N, batch, t, bc)):
        return t.MID_WAVE_CONFIG
    if tiles >= t.AUTO_MIN_GROUPS or (M > t.MID_MAX_M and tiles >= t.LARGE_MIN_TILES) or split:
        if M > t.MID_MAX_M and t.WAVE_MAX_GROUPS:  # workgroups on the busiest SM: the wave tile's no more, both few
            per_sm = _per_sm(M, N, batch, t.WAVE_CONFIG, t)
            if per_sm <= min(t.WAVE_MAX_PER_SM, -(-tiles // t.WAVE_MAX_GROUPS)):
                deep = bc or (not sums and t.BC_WAVE_CONFIG in t.BT_CONFIGS)  # B staged n-major: as it lies, or transposed
                return _fit(t.BC_WAVE_CONFIG if deep and per_sm == 1 else t.WAVE_CONFIG, M, N, batch, t)
        large = t.BC_LARGE_CONFIG if bc else t.LARGE_CONFIG
        return _fit(large, M, N, batch, t) if M > t.MID_MAX_M else large
    if M <= LOW_MAX_M:
        return t.LOW_CONFIG
    if M <= t.MID_MAX_M:
        return t.MID_WAVE_CONFIG if _mid_wave(M, N, batch, t, bc) else t.BC_MID_CONFIG if bc else t.MID_CONFIG
    return t.FEW_TILES_CONFIG


def _mid_wave(M: int, N: int, batch: int, t: QlmmTuning, bc: bool) -> bool:
    """MID_WAVE_CONFIG in the middle tile's place (65-MID_MAX_M rows): where that tile runs unsplit (K aside) and the
    96-row tiles put fewer workgroups on the busiest SM, at most WAVE_MAX_PER_SM, or as many with fewer rows a tile."""
    mid = t.BC_MID_CONFIG if bc else t.MID_CONFIG
    mtiles = _groups(M, N, batch, mid)
    if not t.WAVE_MAX_GROUPS or auto_split(mtiles, 1 << 30, mid, t) != 1:
        return False
    w, m = _per_sm(M, N, batch, t.MID_WAVE_CONFIG, t), -(-mtiles // t.WAVE_MAX_GROUPS)
    return w <= t.WAVE_MAX_PER_SM and (w < m or (w == m and COOPMAT_CONFIGS[t.MID_WAVE_CONFIG][0] < COOPMAT_CONFIGS[mid][0]))


def _fit(config: str, M: int, N: int, batch: int, t: QlmmTuning) -> str:
    """Above MID_MAX_M rows, where `config`'s tiles run one wave (one workgroup an SM): the tile of WAVE_FIT_CONFIGS
    with its columns and the fewest rows whose tiles run one wave too, where fewer than `config`'s (a wave's time is a
    tile's); else `config`."""
    if not t.WAVE_MAX_GROUPS or _per_sm(M, N, batch, config, t) != 1:
        return config
    tn = COOPMAT_CONFIGS[config][1]
    fits = [c for c in t.WAVE_FIT_CONFIGS if COOPMAT_CONFIGS[c][1] == tn and _per_sm(M, N, batch, c, t) == 1]
    return min([config] + fits, key=lambda c: COOPMAT_CONFIGS[c][0])  # the first of the fewest: config on a tie


def _groups(M: int, N: int, batch: int, config: str) -> int:
    """`config`'s tiles (unsplit workgroups) for M x N, batch matrices."""
    tm, tn = COOPMAT_CONFIGS[config][:2]
    return -(-M // tm) * -(-N // tn) * batch


def _per_sm(M: int, N: int, batch: int, config: str, t: QlmmTuning) -> int:
    """Workgroups on the busiest SM when `config`'s tiles spread over WAVE_MAX_GROUPS SMs."""
    return -(-_groups(M, N, batch, config) // t.WAVE_MAX_GROUPS)


def auto_configs(tuning: QlmmTuning = DEFAULT) -> Tuple[str, ...]:
    """Every tile auto_config() may pick under `tuning` (the self-check covers each)."""
    t = tuning
    return (t.LARGE_CONFIG, t.BC_LARGE_CONFIG, t.FEW_TILES_CONFIG, t.SMALL_CONFIG, t.LOW_CONFIG, t.MID_CONFIG,
            t.BC_MID_CONFIG, t.WAVE_CONFIG, t.BC_WAVE_CONFIG, t.MID_WAVE_CONFIG, t.MID_FIT_CONFIG) + t.WAVE_FIT_CONFIGS


def resolve(config: str, M: int, N: int, K: int, batches: int, free: bool, b_signed: bool,
            tuning: QlmmTuning = DEFAULT, b_cols: bool = False) -> Tuple[str, str]:
    """The tile config and kernel for a product ("auto" picks by shape). B is read straight into
    cooperative matrices (DIRECT_B, no shared staging) for one 16-row tile with signed B (no offset
    flip), no zero-point sums and whole K chunks; column-major B (b_cols) is staged as it lies (BC,
    COOPMAT_BC) by a tile outside DB_CONFIGS, row-major B staged transposed (BT) by the tiles of BT_CONFIGS (with
    zero-point sums where BT_SUMS, outside DB_CONFIGS), and the other kernels stage B row-major."""
    t = tuning
    direct_ok = t.COOPMAT_DIRECT and M <= t.DIRECT_MAX_M and free and b_signed
    bc = b_cols and t.COOPMAT_BC
    if config == "auto":
        config = auto_config(M, N, batches, t, sums=not free, bc=bc and t.BC_LARGE_CONFIG not in t.DB_CONFIGS, K=K)
        if direct_ok and K % COOPMAT_CONFIGS[t.DIRECT_CONFIG][2] == 0:
            config = t.DIRECT_CONFIG
    tm, _, tk, _, _ = check_config(config)
    if direct_ok and COOPMAT_CONFIGS[config][4] == 1 and K % tk == 0:
        return config, "qlmm_coopmat_direct"
    db = "_db" if config in t.DB_CONFIGS else ""
    if bc and not db:
        return config, "qlmm_coopmat" + ("_bc" if free else "_zp_bc")
    if not free:  # zero-point sums: B staged transposed (no _zp_bt_db build), or row-major
        return config, "qlmm_coopmat_zp" + ("_bt" if t.BT_SUMS and config in t.BT_CONFIGS and not db else db)
    return config, ("qlmm_coopmat_bt" if config in t.BT_CONFIGS else "qlmm_coopmat") + db


def check_config(name: str) -> Tuple[int, int, int, int, int]:
    tm, tn, tk, sw, sh = cfg = COOPMAT_CONFIGS[name]
    inv = LANES * sw * sh
    ok = (tk % 32 == 0 and tm % (16 * sh) == 0 and tn % (16 * sw) == 0 and inv % (tk // 16) == 0
          and tm % (inv // (tk // 16)) == 0 and inv % (tn // 16) == 0 and tk % (inv // (tn // 16)) == 0)
    if not ok:
        raise ValidationError(f"cooperative-matrix config {name} {cfg} does not tile evenly")
    return cfg


def shared_bytes(config: str, kname: str) -> int:
    """Bytes of shared memory kernels/qlmm/qlmm_coopmat.comp's build `kname` (qlmm_coopmat[_zp][_bt|_bc][_db][_direct]
    [_sk]) declares at tile `config`: A's skewed tile; B's, row-major or (BT, BC) n-major (BT's 16-column blocks padded
    apart), none where read directly; two of each with DB; the epilogue's 16 x 16 slices, in A's space (at least theirs)
    for BC, BT and DB; the zero-point sums; split-K's flag."""
    tm, tn, tk, sw, sh = COOPMAT_CONFIGS[config]
    v = set(kname.split("_")[2:])
    bufs = 2 if "db" in v else 1
    bt_pad = 16 * max(1, 8 // (tn // 16))
    b = (0 if "direct" in v else tn // 16 * (16 * (tk + 16) + bt_pad) if "bt" in v else tn * (tk + 16) if "bc" in v
         else tk * (tn + 16))
    c = 4 * 256 * sw * sh
    a = max(bufs * tm * (tk + 16), c) if v & {"db", "bc", "bt"} else bufs * tm * (tk + 16) + c  # slices in A's space
    return a + bufs * b + (4 * (tm + tn) if "zp" in v else 0) + (4 if "sk" in v else 0)


COOPMAT_SHAPE = (16, 16, 32, "s8", "s8", "s32", "s32")
COOPMAT_MIN_SHARED = 48 * 1024  # bytes of shared memory a device must offer for the cooperative-matrix kernels' tiles
def coopmat_supported(dev) -> bool:
    """The device offers the s8 16x16x32 shape at subgroup scope, with 32-lane subgroups, and the
    features the kernel's SPIR-V declares (cooperativeMatrix, shaderInt8, vulkanMemoryModel) are enabled."""
    info = dev.info
    return (dev.cooperative_matrix and COOPMAT_SHAPE in tuple(info.cooperative_matrix_shapes)
            and dev.subgroup_size == LANES and dev.shared_memory_bytes >= COOPMAT_MIN_SHARED
            and all(dev.supports(k) for k in _COOPMAT_KERNELS))  # features the SPIR-V declares, enabled


_COOPMAT_KERNELS = ("qlmm_coopmat", "qlmm_coopmat_zp", "qlmm_coopmat_sk", "qlmm_coopmat_zp_sk",
                    "qlmm_coopmat_bt", "qlmm_coopmat_bt_sk", "qlmm_coopmat_zp_bt", "qlmm_coopmat_zp_bt_sk",
                    "qlmm_coopmat_bc", "qlmm_coopmat_bc_sk", "qlmm_coopmat_zp_bc", "qlmm_coopmat_zp_bc_sk",
                    "qlmm_coopmat_db", "qlmm_coopmat_zp_db", "qlmm_coopmat_bt_db",
                    "qlmm_coopmat_db_sk", "qlmm_coopmat_zp_db_sk", "qlmm_coopmat_bt_db_sk",
                    "qlmm_coopmat_direct", "qlmm_coopmat_direct_sk") + tuple(
    qlmm_stream.kernel(mt, nr) + sk for mt in qlmm_stream.TILE_ROWS for nr in qlmm_stream.TILES for sk in ("", "_sk"))
_verdicts: Dict[Tuple[int, bool], bool] = {}  # (device index, split-K) -> self-check passed
_verdict_lock = threading.Lock()


def _verdict(dev, split: bool) -> bool:
    with _verdict_lock:
        key = (dev.index, split)
        if key not in _verdicts:
            def check():
                try:
                    return self_check(dev, split=split)
                except Exception:  # noqa: BLE001 - a kernel that cannot run is a failed check
                    return False

            # Kept across processes (keyed by driver and SPIR-V), so a new process starts in ~1 ms.
            kernels = [n for n in _COOPMAT_KERNELS if n.endswith("_sk") == split]
            _verdicts[key] = dev._pipelines.remembered(f"qlmm-self-check-split{int(split)}", kernels, check)
        return _verdicts[key]


def coopmat_verified(dev) -> bool:
    """Supported, and a self-check on first use matched the NumPy oracle (cached per device)."""
    return coopmat_supported(dev) and _verdict(dev, False)


def split_verified(dev) -> bool:
    """The split-K variants passed their own self-check (cached per device); auto split-K needs it."""
    return coopmat_verified(dev) and _verdict(dev, True)


_limits: Dict[Limits, Limits] = {}  # by the device's limits


def device_limits(dev, verified: bool = True) -> Limits:
    """`dev.limits` with what this operator learns by trying the device: whether the cooperative-matrix
    kernels are offered and (verified=True) passed their self-checks, and whether the integer dot
    product kernel's features were enabled."""
    if not verified:
        return dev.limits.replace(cooperative_matrix=coopmat_supported(dev),
                                  integer_dot_product=qlmm_dot.supported(dev))
    base = dev.limits
    lim = _limits.get(base)
    if lim is None:
        ok = coopmat_supported(dev)  # reads the effective shared memory: False within small profiles
        lim = _limits[base] = base.replace(cooperative_matrix=ok, coopmat_verified=ok and coopmat_verified(dev),
                                           coopmat_split_verified=ok and split_verified(dev),
                                           integer_dot_product=qlmm_dot.supported(dev))
    return lim


def self_check(dev, split: bool = False) -> bool:
    """Run small problems through the cooperative-matrix kernels (split=True: their split-K builds) and compare with
    the oracle (selfcheck.run); its verdict is kept per device by coopmat_verified / split_verified."""
    from .selfcheck import run  # noqa: PLC0415 - it plans and executes: imports the lowering and the runtime

    return run(dev, split=split)
