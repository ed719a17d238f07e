"""QUANTIZED_LINEAR_MATRIX_MULTIPLY's tuning as data: every knob planning reads, in one frozen,
validated, hashable value. A plan depends on its tuning, so the tuning is part of every plan key; pass
another with `tuning=dataclasses.replace(DEFAULT, ...)` (or `DEFAULT.replace(...)`) to `plan()`, the
NumPy face or a benchmark's variant. Each default says why in one line; the measurements behind it are
in docs/tuning/qlmm.md (pure: imports only errors, and the kernels' tile tables when validating)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Tuple, Union

from ...errors import ValidationError
from ..tuning import Tuning

_DOC = "docs/tuning/qlmm.md"  # the sections named below: #<anchor> of this page


SPLITS_MAX = 255  # qlmm_coopmat.comp's splits word: S in its low 8 bits, a tail split's whole tiles above

@dataclass(frozen=True)
class QlmmTuning(Tuning):
    """The planning knobs of the lowering (FOLD), coopmat.py (COOPMAT_*, *_CONFIG, SPLIT_*, ...),
    dot.py (DOT*), stream.py (STREAM*) and gemv.py (GEMV*), named as the module constants they were."""

    __hash__ = Tuning.__hash__  # else dataclass(frozen=True) hashes every knob on every call's plan lookup

    # -- lowering.py (folding)
    FOLD: bool = True  # b shared by a's batches: one GEMM of all their rows, 534 -> 271 ms (#which-kernel-runs-where)
    # -- coopmat.py: the cooperative-matrix tiles
    COOPMAT_CONFIG: str = "auto"  # a tile by shape (below); a name forces one (#which-kernel-runs-where)
    LARGE_CONFIG: str = "128x128x64_4x1"  # 4096^3 0.574 -> 0.493 ms on the H100 (#2026-11-24-session-10-large-tiles-and-the-raster)
    AUTO_MIN_GROUPS: int = 264  # large tiles from about two workgroups an SM (#2026-11-24-session-10-large-tiles-and-the-raster)
    LARGE_MIN_TILES: int = 96  # ... and above MID_MAX_M rows from this many large tiles, unsplit: 1024x4096^2 0.265 -> 0.123 ms on an H200 (#2026-11-25-session-20-large-tiles-from-384-rows)
    MID_CONFIG: str = "128x64x128_4x2"  # 65-256 rows: 128 x 4096^2 0.047 -> 0.0385 ms (#2026-11-24-session-10-tiles-by-row-count)
    MID_MAX_M: int = 256  # MID_CONFIG up to here, FEW_TILES_CONFIG above (#2026-11-24-session-10-tiles-by-row-count)
    MID_TARGET_GROUPS: int = 128  # MID_CONFIG's, BC_MID_CONFIG's and LOW_CONFIG's split-K toward one workgroup an SM; LOW 64 x 4096^2 split 4 -> 2: 0.0281 -> 0.0250 ms (#2026-11-26-session-27-one-scale-a-tile-split-k-in-registers)
    LOW_TARGET_GROUPS: int = 256  # LOW_CONFIG's split-K toward two workgroups an SM from LOW_TARGET_MIN_K: 64 x 8192^2 0.075 -> 0.052 ms, 64 x 11008 x 4096 0.056 -> 0.040 (#2026-11-27-session-39-33-64-rows-split-toward-two-workgroups-an-sm-from-k--8192)
    LOW_TARGET_MIN_K: int = 8192  # ... shallower, toward MID_TARGET_GROUPS: 64 x 4096 x 8192 B column-major lost 0.021 -> 0.024 ms split (#2026-11-27-session-39-33-64-rows-split-toward-two-workgroups-an-sm-from-k--8192)
    LARGE_SPLIT_MIN_TILES: int = 64  # 65-MID_MAX_M rows without zero-point sums: LARGE_CONFIG split-K from this many of its tiles; 128 x 8192^2 0.092 -> 0.071 ms (#2026-11-26-session-27-one-scale-a-tile-split-k-in-registers)
    LARGE_SPLIT_MIN_CHUNKS: int = 32  # LARGE_CONFIG's splits keep this many 64-deep K chunks: 192 x 4096^2 split 2 0.0425 ms, 4: 0.0459 (#2026-11-26-session-27-one-scale-a-tile-split-k-in-registers)
    BT_CONFIGS: Tuple[str, ...] = ("128x128x64_4x1", "128x64x128_4x2", "96x128x64_4x1", "96x128x128_2x2", "96x64x128_2x2", "32x64x128_4x1", "64x64x128_4x2", "64x64x64_2x2", "80x128x128_4x1", "112x128x128_4x1", "64x128x128_4x1")  # row-major B staged transposed on every auto tile: 384 x 4096^2 0.057 -> 0.042 ms, 1024 x 4096 x 11008 0.290 -> 0.240 (#2026-11-27-session-38-row-major-b-staged-transposed-on-every-tile)
    BT_SUMS: bool = True  # ... with zero-point sums too (qlmm_coopmat_zp_bt): 384 x 4096^2 0.072 -> 0.050 ms, 1024 x 4096 x 11008 0.388 -> 0.268 (#2026-11-27-session-39-zero-point-sums-on-dot-products-row-major-b-staged-transposed-with-them)
    DB_CONFIGS: Tuple[str, ...] = ()  # tiles staged in two shared buffers, one barrier a step (research: one an SM past 24 KiB) (#2026-11-26-session-28-the-large-tiles-knobs-re-swept-two-shared-buffers-and-the-h100s-24-kib-a-workgroup)
    BC_TRANSPOSE_MIN_M: int = 2048  # row-major B (one matrix) transposed into a scratch for the BC builds from this many rows (0: never): 4096^3 0.374 -> 0.324 ms, 1024 rows lost 0.095 -> 0.109 (#2026-11-27-session-33-column-major-b-staged-as-it-lies)
    BC_TRANSPOSE_TILE: int = 64  # ... in tiles of this many bytes a side, 64 or 128: tied (#2026-11-27-session-33-column-major-b-staged-as-it-lies)
    BC_LARGE_CONFIG: str = "128x128x64_2x2"  # LARGE_CONFIG's tile where B is staged as it lies (BC): 4096^3 0.302 -> 0.282 ms, with zero points 0.403 -> 0.376 (#2026-11-27-session-33-column-major-b-staged-as-it-lies)
    BC_MID_CONFIG: str = "64x64x128_2x2"  # MID_CONFIG's rows where B is staged as it lies (BC): 128 x 4096^2 0.0220 -> 0.0206 ms, 256 rows 0.0307 -> 0.0291 (#2026-11-27-session-34-the-middle-rows-tiles-and-splits)
    TAIL_SPLIT: bool = True  # LARGE_CONFIG: a last wave under half full split-K, the rest whole: 1536 x 4096^2 0.209 -> 0.166 ms; with zero points 1280 x 4096^2 0.182 -> 0.160 (session 39) (#2026-11-26-session-28-the-last-partial-wave-split-k)
    TAIL_MIN_CHUNKS: int = 8  # a tail split's 64-deep K chunks a split, at least: 1280 x 4096^2 0.158 (32) -> 0.140 ms (#2026-11-26-session-28-the-last-partial-wave-split-k)
    SMALL_CONFIG: str = "32x64x128_4x1"  # up to 32 rows: 32 x 4096^2 0.0253 -> 0.0225 ms (#2026-11-24-session-10-tiles-by-row-count)
    LOW_CONFIG: str = "64x64x128_4x2"  # 33-64 rows: 64 x 8192^2 0.1005 -> 0.0816 ms (#2026-11-24-session-10-tiles-by-row-count)
    FEW_TILES_CONFIG: str = "64x64x64_2x2"  # > MID_MAX_M rows with too few large tiles (#which-kernel-runs-where)
    WAVE_CONFIG: str = "96x128x64_4x1"  # > MID_MAX_M rows, the large tile's place where shorter tiles keep the workgroups an SM: 384 x 4096^2 B column-major 0.046 -> 0.040 ms (#2026-11-27-session-36-96-row-tiles-for-one-wave)
    WAVE_MAX_GROUPS: int = 132  # ... the SMs both tiles' workgroups are counted on (H100's; 0: never); 384 x 4096 x 11008's 344 lost 0.077 -> 0.13 (#2026-11-27-session-36-96-row-tiles-for-one-wave)
    WAVE_MAX_PER_SM: int = 2  # ... and at most this many an SM (two fit one): 768 x 4096^2 0.094 -> 0.085 ms, 1024 (three) lost 0.099 -> 0.170 (#2026-11-27-session-37-96-row-tiles-two-an-sm-deeper-and-narrower)
    BC_WAVE_CONFIG: str = "96x128x128_2x2"  # WAVE_CONFIG's tile, 128 deep, where B is staged n-major (as it lies, or transposed: in BT_CONFIGS) and one runs an SM: 320 x 4096^2 0.0397 -> 0.0356 ms (#2026-11-27-session-37-96-row-tiles-two-an-sm-deeper-and-narrower)
    WAVE_FIT_CONFIGS: Tuple[str, ...] = ("80x128x128_4x1", "112x128x128_4x1")  # > MID_MAX_M rows, one an SM: of these and the rule's tile, the fewest rows still one wave (same columns): 320 x 4096^2 0.0428 -> 0.0398 ms, 448 0.0532 -> 0.0490 (#2026-11-27-session-40-tile-heights-fit-to-one-wave)
    MID_FIT_CONFIG: str = "64x128x128_4x1"  # 65-MID_MAX_M rows where its tiles make one wave of MID_FIT_MIN_GROUPS or more: 256 x 4096^2 0.0401 -> 0.0368 ms, B column-major 0.0290 -> 0.0286 (#2026-11-27-session-40-tile-heights-fit-to-one-wave)
    MID_FIT_MAX_K: int = 4096  # ... up to this K (row-major int8 256 x 8192 x 4096 lost 0.0667 -> 0.0697 ms), not for column-major B with zero-point sums (224 x 4096^2 0.0315 -> 0.0335) (#2026-11-27-session-40-tile-heights-fit-to-one-wave)
    MID_FIT_MIN_GROUPS: int = 100  # ... at least this many workgroups (three quarters of WAVE_MAX_GROUPS; more than it: never); 160-192 rows' 96 of 48 x 128 lost 0.029 -> 0.033 (#2026-11-27-session-40-tile-heights-fit-to-one-wave)
    MID_WAVE_CONFIG: str = "96x64x128_2x2"  # 65-MID_MAX_M rows, the unsplit middle tile's place with fewer an SM (or fewer rows): 192 x 4096^2 B column-major 0.0283 -> 0.0243 ms (#2026-11-27-session-37-96-row-tiles-two-an-sm-deeper-and-narrower)
    MID_WAVE_SPLIT_MAX_K: int = 8192  # ... also in LARGE_CONFIG's split-K place (B row-major, no zero points, staged transposed) up to this K (0: never): 160 x 4096 x 8192 0.0652 -> 0.0459 ms, 192 x 11008 x 4096 tied (#2026-11-27-session-38-row-major-b-staged-transposed-on-every-tile)
    COOPMAT_SPLIT_K: Union[str, int] = "auto"  # split-K by tiles and chunks; an int forces it (#2026-11-23-session-6-tiles-and-splits-for-m--16-128)
    SPLIT_TARGET_GROUPS: int = 256  # H200 32x4096^2: split 4 (256 groups) 37 TOPS, 8: 33, none: 23 (#2026-11-23-session-6-tiles-and-splits-for-m--16-128)
    SPLIT_MIN_CHUNKS: int = 4  # each split keeps at least this many K chunks (#2026-11-23-session-6-tiles-and-splits-for-m--16-128)
    SPLIT_MAX: int = 16  # more splits lost (split 32 slower) (#2026-11-23-decoding-sized-m-b-read-straight-into-cooperative-matrices)
    COOPMAT_GROUP_M: int = 4  # raster: 8192^3 4.73 -> 4.25 ms with 4 tile rows (#2026-11-24-session-10-large-tiles-and-the-raster)
    COOPMAT_DIRECT: bool = True  # B read straight into cooperative matrices for <= 16 rows (#2026-11-23-decoding-sized-m-b-read-straight-into-cooperative-matrices)
    DIRECT_CONFIG: str = "16x64x256_4x1"  # 16 x 8192^2 0.054 ms, the staged tile 0.080 (#2026-11-23-decoding-sized-m-b-read-straight-into-cooperative-matrices)
    DIRECT_MAX_M: int = 16  # more rows a B load lost 1.4-25x (#2026-11-23-session-6-tiles-and-splits-for-m--16-128)
    COOPMAT_COLS: bool = True  # column-major B read in place, not copied first (#2026-11-23-column-major-b-read-in-place)
    COOPMAT_BC: bool = True  # column-major B staged as it lies (qlmm_coopmat[_zp]_bc), not packed first: 4096^3 0.526 -> 0.288 ms (#2026-11-27-session-33-column-major-b-staged-as-it-lies)
    # -- dot.py: packed integer dot products
    DOT: bool = True  # decoding-sized M without cooperative matrices (#2026-11-23-session-5-integer-dot-products)
    DOT_MAX_M: int = 32  # lavapipe 32x1024^2 76 ms against the portable 255 (#2026-11-23-session-5-integer-dot-products)
    DOT_MAX_M_COOPMAT: int = 15  # beside verified coopmat: 16 rows with zero points go to the tiles, 16 x 4096^2 0.0246 -> 0.0198 ms (#2026-11-27-session-35-sixteen-rows-with-zero-points-on-the-tiles)
    DOT_MAX_ROWS: int = 32  # rows a workgroup; more M takes several row tiles (#2026-11-23-session-5-integer-dot-products)
    DOT_COLS: int = 128  # columns of B a workgroup streams (the kernel's width) (#2026-11-23-session-5-integer-dot-products)
    DOT_WG: int = 256  # invocations a workgroup (#2026-11-23-session-5-integer-dot-products)
    DOT_TARGET_GROUPS: int = 132  # one an H100 SM: faster than 264 and 528 (#2026-11-23-session-5-integer-dot-products)
    DOT_COOP_MAX_M: int = 4  # beside direct B, dot only up to this many rows (#2026-11-23-session-5-integer-dot-products)
    DOT_SPLIT_MAX: int = 32  # at most this many splits (#2026-11-23-session-5-integer-dot-products)
    DOT_UNROLL: int = 2  # 16-byte K blocks a thread keeps per split at least (#2026-11-23-session-5-integer-dot-products)
    DOT_A_BYTES: int = 32 << 10  # A staged per chunk at most (#2026-11-23-session-5-integer-dot-products)
    # -- stream.py: B streamed into the tensor cores
    STREAM: bool = True  # 16 x 4096^2 13.3 us against direct B's 20.6 (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_MAX_M: int = 16  # 17-32 rows lost to the staged tile: 31-36 us against 26 (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_MIN_M: int = 1  # fewer rows go to the integer-dot-product kernel (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_NR: Union[str, int] = "auto"  # 32 columns while they fill a wave, else 64; an int forces (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_WAVE: int = 160  # 4096 columns: 128 groups of 32 13.3 us, 64 wide 32-46 (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_WG: int = 256  # 8 subgroups take a K range's steps in turn; 128 slower (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_TARGET_GROUPS: int = 120  # split-K below about one workgroup an H100 SM (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    STREAM_SPLIT_MAX: int = 16  # at most this many splits (#2026-11-24-session-9-b-streamed-into-the-tensor-cores)
    # -- gemv.py: one or two rows of A as a matrix-vector product
    GEMV: bool = True  # 1x4096x11008 0.0205 ms against the stream kernel's 0.047 (#2026-11-25-one-row-of-a-as-a-matrix-vector-product)
    GEMV_MAX_M: int = 2  # 2x4096x11008 0.0243 ms against the stream kernel's 0.0440; 4 rows tie or lose, 8 lose 2x (#2026-11-27-session-32-two-rows-by-the-matrix-vector-kernel)
    GEMV_MULTI_MIN_B: int = 8 << 20  # bytes of row-major B from which 2 rows take it: 2x4096x3072 0.0115 ms against the stream kernel's 0.0178, 2x4096^2 0.0119 against 0.0137; 2x1024x4096 (4 MiB) lost 0.0094 to 0.0078 (#2026-11-28-session-44-the-matrix-vector-kernels-sums-without-atomics-two-rows-from-8-mib)
    GEMV_BC_MULTI_MIN_B: int = 20 << 20  # ... of column-major B (its _bc builds): 2x4096^2 0.0128 against 0.0114, 2x8192x2048 tied (#2026-11-27-session-35-the-matrix-vector-kernel-on-column-major-b-measured)
    GEMV_TARGET_GROUPS: int = 264  # splits stay within it where they fill 7/8 (one wave of two an SM): 1x4096x32000 0.0518 ms at 250 groups, 0.0565 at 375 (#2026-11-26-session-30-the-read-rate-by-strip-width-the-matrix-vector-split-within-one-wave)
    GEMV_BC: bool = True  # column-major B (a transposed N x K weight) on the matrix-vector kernel's _bc builds: 1 x 4096 x 11008 0.0446 -> 0.0227 ms (#2026-11-27-session-35-the-matrix-vector-kernel-on-column-major-b-measured)

    OP = "QLinearMatMul"

    def _validates_at_init(self) -> bool:  # DEFAULT is built while the kernel modules validate() reads still import
        return _READY

    def validate(self) -> "QlmmTuning":
        """Raise ValidationError naming the field, the rule and the value; returns self."""
        from .coopmat import COOPMAT_CONFIGS, check_config  # noqa: PLC0415 - the tile table, at check time
        from .stream import TILES  # noqa: PLC0415

        def fail(f, rule, v):
            raise ValidationError(f"QlmmTuning.{f} must be {rule}; got {v!r}")

        def config(f, v):
            if not isinstance(v, str) or v not in COOPMAT_CONFIGS:
                fail(f, f"a cooperative-matrix tile of vkops.ops.qlmm.coopmat.COOPMAT_CONFIGS ({', '.join(COOPMAT_CONFIGS)})", v)
            try:
                check_config(v)
            except ValidationError as e:
                fail(f, f"a tile that tiles evenly ({e})", v)

        for f in dataclasses.fields(self):
            v, kind = getattr(self, f.name), f.type
            if kind == "bool" and not isinstance(v, bool):
                fail(f.name, "True or False", v)
            low = 0 if f.name.endswith(("_M", "_MAX_K")) or f.name == "WAVE_MAX_GROUPS" else 1  # 0: never
            if kind == "int" and (not isinstance(v, int) or isinstance(v, bool) or v < low):
                fail(f.name, f"an int >= {low}", v)
            if f.name.endswith("_CONFIG") and not (f.name == "COOPMAT_CONFIG" and v == "auto"):
                config(f.name, v)
        if COOPMAT_CONFIGS[self.BC_LARGE_CONFIG][:2] != COOPMAT_CONFIGS[self.LARGE_CONFIG][:2]:
            fail("BC_LARGE_CONFIG", f"a tile of LARGE_CONFIG's rows and columns ({self.LARGE_CONFIG}: the rules count its "
                 "tiles)", self.BC_LARGE_CONFIG)
        if COOPMAT_CONFIGS[self.WAVE_CONFIG][0] >= COOPMAT_CONFIGS[self.LARGE_CONFIG][0]:  # never the large tile itself
            fail("WAVE_CONFIG", f"a tile of fewer rows than LARGE_CONFIG's ({self.LARGE_CONFIG})", self.WAVE_CONFIG)
        if COOPMAT_CONFIGS[self.BC_WAVE_CONFIG][:2] != COOPMAT_CONFIGS[self.WAVE_CONFIG][:2]:
            fail("BC_WAVE_CONFIG", f"a tile of WAVE_CONFIG's rows and columns ({self.WAVE_CONFIG}: the rule counts its "
                 "tiles)", self.BC_WAVE_CONFIG)
        if self.BC_TRANSPOSE_TILE not in (64, 128):
            fail("BC_TRANSPOSE_TILE", "64 or 128", self.BC_TRANSPOSE_TILE)
        if not isinstance(self.BT_CONFIGS, tuple):
            fail("BT_CONFIGS", "a tuple of tile names", self.BT_CONFIGS)
        for c in self.BT_CONFIGS:
            config("BT_CONFIGS", c)
        if not isinstance(self.WAVE_FIT_CONFIGS, tuple):
            fail("WAVE_FIT_CONFIGS", "a tuple of tile names", self.WAVE_FIT_CONFIGS)
        for c in self.WAVE_FIT_CONFIGS:
            config("WAVE_FIT_CONFIGS", c)
        if not isinstance(self.DB_CONFIGS, tuple):
            fail("DB_CONFIGS", "a tuple of tile names", self.DB_CONFIGS)
        for c in self.DB_CONFIGS:
            config("DB_CONFIGS", c)
        sk = self.COOPMAT_SPLIT_K
        if sk != "auto" and (not isinstance(sk, int) or isinstance(sk, bool) or sk < 1 or sk > SPLITS_MAX):
            fail("COOPMAT_SPLIT_K", f"'auto' or an int from 1 to {SPLITS_MAX}", sk)
        if self.SPLIT_MAX > SPLITS_MAX:
            fail("SPLIT_MAX", f"at most {SPLITS_MAX} (the split builds read S from 8 bits of a push word)", self.SPLIT_MAX)
        if self.STREAM_NR != "auto" and (isinstance(self.STREAM_NR, bool) or self.STREAM_NR not in TILES):
            fail("STREAM_NR", f"'auto' or one of {tuple(TILES)}", self.STREAM_NR)
        return self


_READY = False
DEFAULT = QlmmTuning()  # tests/test_qlmm_tuning.py validates it
_READY = True
