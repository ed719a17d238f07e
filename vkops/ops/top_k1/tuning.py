"""TOP_K1's tuning as data: every knob the path rule (paths.py) reads, in one frozen, validated, hashable
value. A plan depends on its tuning, so the tuning is part of every plan key; pass another with
`tuning=DEFAULT.replace(...)` to `plan()`, `vkops.top_k()`, `_top_k()` or a benchmark's variant (`knobs`).
Each default says why in one line; the measurements behind it are in docs/tuning/top_k1.md, section
"The constants' measurements" (each field names its subsection). What the kernels themselves fix (EPI,
NBINS, the TUNE_* bit values, RSORT_MAX_E, RSORT_MAX_WG, the subgroup operations the modules declare)
stays as constants in paths.py: no tuning may change them (pure: imports only errors)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ValidationError
from ..tuning import Tuning

_DOC = "docs/tuning/top_k1.md"  # the sections named below: #<anchor> of this page

# Buffer entries and workgroup sizes: specialization constants the kernels' bitonic networks need as powers of two.
POW2 = ("WORKGROUP", "RADIX_SORT_WG", "RADIX_SHORT_FIT_RSORT_KP", "RADIX_SHORT_FIT_RSORT_KP16", "GRADIX_WG", "GRADIX_SORT_PARTS", "GRADIX_SORT_PARTS_MIN_KP", "MIN_B", "LARGE_K_MAX_B", "RADIX_ONE_CHUNK_MIN_B", "RADIX_ONE_CHUNK_WIDE_B", "RADIX_SHORT_ROWS_B",
        "RADIX_ONE_CHUNK_WG", "RADIX_ONE_CHUNK_WIDE_SMALL_WG", "RADIX_SHORT_ROWS_WG", "GRADIX_MIN_K16_RADIX_MAX_KP")
# Switches, and counts where 0 means never: validated apart from the positive counts.
_BOOLS = ("GRADIX_FILTER", "GRADIX_BRACKET", "RADIX_MASK", "RADIX_SHORT_FIT", "RSORT_FOR_SORT", "RADIX_SHORT_BUILD")
_ZERO_NEVER = ("GRADIX_MIN_KP", "GRADIX_BRACKET_MIN_L16", "GRADIX_MIN_K16_RADIX_MAX_L", "GRADIX_RANK_MAX_SEQ",
               "RADIX_ONE_LOAD_MAX_SEQ", "RADIX_SHORT_BUILD_MAX_SEQ")


@dataclass(frozen=True)
class TopK1Tuning(Tuning):
    """The planning knobs of the path rule, named as the module constants of top_k1_paths.py they were."""

    __hash__ = Tuning.__hash__  # else dataclass(frozen=True) hashes every knob on every call's plan lookup

    # -- every path
    WORKGROUP: int = 512  # wanted workgroup; H200 filter 10-20% faster than 256, 1024 slower (#workgroup)
    TARGET_GROUPS: int = 256  # filter chunks toward this many workgroups; beat 1024 by 1.2-1.5x on an H100 (#target_groups)
    CPU_TARGET_GROUPS: int = 64  # the same on a CPU device (device_type "cpu"), which keeps long chunks (#target_groups)
    MIN_B: int = 256  # the smallest shared buffer a plan takes (#which-path-runs-where)
    MERGE_GROUP_MIN_SAVED: int = 4  # two-level merges where they save this many loads of the last workgroup (#merge_group_min_saved)
    # -- ROWS: one subgroup a row
    ROWS_MAX_L: int = 4096  # ROWS beat SEG and radix select 1.1-11x up to here, lost at 8192 (#rows_max_l)
    ROWS_MAX_KP: int = 256  # ROWS up to this pow2(K); RSORT only above it (#rows_max_l)
    ROWS_MIN_SEQ: int = 512  # fewer rows leave most of a GPU idle (#rows_max_l)
    ROWS_RADIX_MIN_L: int = 1600  # longer rows (16/32-bit keys, K >= 2, many rows) win by radix select: 0.137 -> 0.073 ms (#rows_radix_min_l)
    SHORT_ROW_RADIX_MIN_K: int = 2  # at K = 1 SEG and the threshold filter beat radix select on short rows (#short_row_radix_min_k)
    # -- SEG and filter in the _sg modules
    SHUF_MIN_KP: int = 1024  # register networks 7-12% faster at K=1024, slower at K <= 256 (#shuf_subgroup_ops)
    SHUF_SHORT_FIT_MIN_KP: int = 512  # ... and on RADIX_SHORT_FIT's rows from here: H200 16384x2048 K=300 0.422 -> 0.344 ms (#sort_merge)
    # -- filter chunks by radix select
    RADIX_MIN_KP: int = 128  # radix select from here: it halved K=256 and K=1024 on an H200 (#radix_min_kp)
    RADIX_SHORT_MIN_KP: int = 64  # ... and from here on chunks <= RADIX_SHORT_CHUNK_B * B: 0.473 -> 0.400 ms (#radix_short_min_kp)
    RADIX_SHORT_CHUNK_B: int = 16  # the chunk length (in B) below which RADIX_SHORT_MIN_KP applies (#radix_short_rows_wg)
    RADIX_ONE_CHUNK_MIN_B: int = 1024  # one long radix chunk a row: buffer max(4 Kp, this); 0.400 -> 0.331 ms (#radix_one_chunk_min_b)
    RADIX_ONE_CHUNK_WG: int = 256  # ... on many rows, workgroups of 256: 0.274 -> 0.250 ms (#radix_one_chunk_wg)
    RADIX_ONE_CHUNK_WG_MAX_KP: int = 256  # ... up to this pow2(K); K=1024 lost (0.657 -> 0.985) (#radix_one_chunk_wg)
    RADIX_ONE_CHUNK_WG_MIN_SEQ: int = 1024  # "many rows": several waves of workgroups (#radix_one_chunk_wg)
    RADIX_ONE_CHUNK_WIDE_B: int = 512  # ... 32-bit keys: buffer max(2 Kp, this); 0.252 -> 0.241 ms (#radix_one_chunk_wide_b)
    RADIX_ONE_CHUNK_WIDE_SMALL_WG: int = 128  # ... 32-bit keys, small K: workgroups of 128; 0.274 -> 0.255 ms (#radix_one_chunk_wide_small_wg)
    RADIX_ONE_CHUNK_WIDE_SMALL_WG_MAX_KP: int = 128  # ... up to this pow2(K); K=256 lost (0.283 -> 0.342) (#radix_one_chunk_wide_small_wg)
    RADIX_SHORT_ROWS_B: int = 512  # many short radix rows: buffer of 512; 0.100 -> 0.084 ms (#radix_short_rows_b)
    RADIX_SHORT_ROWS_WG: int = 128  # ... and workgroups of 128: 0.084 -> 0.066 ms (#radix_short_rows_wg)
    RADIX_SHORT_FIT: bool = True  # many radix rows of 1601..4 max(Kp, 512) above RADIX_ONE_CHUNK_WG_MAX_KP: a buffer of max(Kp, 512), Kp / 4 threads; H100 4096x4096 K=1024 0.371 -> 0.263 ms (#radix_short_fit)
    RADIX_SHORT_FIT_RSORT_KP: int = 1024  # ... before RSORT (32-bit keys) up to this pow2(K): 16384x2048 K=300 0.931 -> 0.422 ms, K=1024 0.934 -> 0.833 (#radix_short_fit)
    RADIX_SHORT_FIT_RSORT_KP16: int = 1024  # ... 16-bit keys: 16384x2048 fp16 K=300 0.576 -> 0.407 ms; K=513 0.582 -> 0.526, K=1024 0.589 -> 0.579 on the slim build (8-bit keys: RSORT) (#radix_short_build)
    RADIX_SHORT_ROWS_MIN_L: int = 1601  # ROWS_RADIX_MIN_L + 1: the short-row buffer for rows ROWS no longer takes (#radix_short_rows_wg)
    RADIX_MASK: bool = True  # radix select's passes by bit masks (top_k1_radix_m[_sg]_*, 16/32-bit keys): H200 64x131072 K=1024 0.0463 -> 0.0405 ms, 4096x32768 K=256 0.271 -> 0.237 (#radix_mask)
    RADIX_MASK_MIN_L: int = 4097  # ... on chunks of at least this many elements (4096x4096 K=1024 lost 0.3715 -> 0.3967) (#radix_mask)
    RADIX_SHORT_BUILD: bool = True  # one-chunk radix rows of <= 4 B keys (no TUNE_* bits) on the register networks: the slim build (top_k1_radix_s_sg_*); H200 16384x2048 K=1024 0.674 -> 0.568 ms, fp16 4096x4096 0.282 -> 0.207 (#radix_short_build)
    RADIX_SHORT_BUILD_MAX_SEQ: int = 1023  # ... and on the plain networks (top_k1_radix_s_*) on at most this many rows: 16x2048 fp16 K=256 0.0152 -> 0.0130 ms; 8192x1601 K=32 lost 0.094 -> 0.105 (#radix_short_build)
    RADIX_ONE_LOAD_MAX_SEQ: int = 1  # 16-bit keys on at most this many rows: radix select's one-load builds (top_k1_radix[_m]_l1*); 1x32000 fp16 K=50 0.0181 -> 0.0158 ms, after a large product 30.2 -> 20.6 µs (#radix_one_load_max_seq)
    # -- the radix push word `tune` (TUNE_GUESS, TUNE_SELECT, TUNE_FIT)
    TUNE_SELECT_MIN_KP: int = 256  # 32-bit keys: both bits from here; K=256 0.314 -> 0.296 ms (#tune_guess-tune_select)
    TUNE_SELECT_MIN_KP_NARROW: int = 1024  # 16/8-bit keys: TUNE_SELECT from here; lost at K=256 (#tune_guess-tune_select)
    RADIX_SORT_WG: int = 1024  # radix chunks whose final sort takes > 4 entries a thread (a 4096-entry sort at 512: no register networks): workgroups of up to this; H100 64x151936 fp32 K=2048 0.0750 -> 0.0597 ms (#radix_sort_wg)
    RADIX_FIT_MIN_KP: int = 2048  # TUNE_FIT from here: H200 64x32000 fp32 K=2048 0.063 -> 0.048 ms, fp16 K=1500 0.058 -> 0.039; K=1024 lost (#tune_fit)
    RADIX_FIT_MIN_SLACK: int = 8  # ... where K <= pow2(K) - this: at K = pow2(K) the K-th key's ties take position passes, B and a merge sort won (H200 64x32000 fp16 K=2048 0.0471 -> 0.0385 ms; K=2040 kept, 0.0363 against 0.0383) (#tune_fit)
    # -- LLM rows in one wave
    WAVE_MIN_SEQ: int = 32  # 32-256 vocabulary rows: about one wave of workgroups, 0.037 -> 0.028 ms (#wave_min_seq)
    WAVE_MAX_SEQ: int = 256  # ... up to this many rows (#wave_min_seq)
    WAVE_MAX_L: int = 1 << 18  # ... of at most this length (#wave_min_seq)
    WAVE_MAX_KP: int = 256  # ... up to this pow2(K); K=1024 lost (1 chunk 0.062, 2: 0.111) (#wave_min_seq)
    # -- RSORT: one workgroup's radix sort a row
    RSORT_MIN_L: int = 513  # RSORT from here: 32768 x 1024 K=1024 0.84 ms against SEG's 1.55 (#rsort_min_l)
    RSORT_MAX_L: int = 2048  # rows of 4096 keep radix select: 0.66 against 0.355 ms (#rsort_min_l)
    RSORT_MAX_L8: int = 4096  # ... 8-bit keys (one digit pass) up to this: H100 4096x4096 uint8 K=1024 0.351 -> 0.200 ms, K=300 0.248 -> 0.195 (#rsort_min_l)
    RSORT_FOR_SORT: bool = True  # ... and any rows it fits (<= 4096) the global sort would take: H100 4096x4096 K=3000 1.217 -> 0.673 ms, 64x4096 0.040 -> 0.022 (#rsort_min_l)
    RSORT_MIN_SEQ: int = 64  # one row 0.016 against SEG's 0.013 ms: from 64 rows (#rsort_min_l)
    # -- large K
    LARGE_K_MAX_B: int = 4096  # pow2(K) > MAX_B / 2 keeps radix select in buffers up to this: 64x131072 K=2048 1.864 -> 0.077 ms (#large_k_max_b)
    LARGE_K_ONE_CHUNK_MAX_L: int = 1 << 18  # B/2 < pow2(K) <= B on rows of B < L <= this: radix select, one chunk a row; 64x131072 K=4096 1.866 -> 0.180 ms, 1x2^20 lost (#large_k_one_chunk_max_l)
    # -- GRADIX: a multi-workgroup radix select of the K-th key, one compaction, one sort of the survivors
    GRADIX_MIN_KP: int = 2048  # GRADIX from this pow2(K) (0: never); 1x151936 K=4096 0.184 -> 0.063 ms on an H200 (#gradix)
    GRADIX_MIN_KP16: int = 1024  # ... 16-bit keys on few long rows from this pow2(K): 1x151936 fp16 K=1024 0.0465 -> 0.0339 ms; fp32 and 64 rows lost (#gradix)
    GRADIX_MIN_L: int = 16384  # ... on rows at least this long (#gradix)
    GRADIX_FEW_SEQ: int = 16  # ... on up to this many rows (16x131072 K=2048 0.076 -> 0.074; 64 rows lost below K=4000) (#gradix)
    GRADIX_FEW_MIN_L: int = 65536  # ... of at least this length (8x32000 K=1500 lost: 0.041 -> 0.059) (#gradix)
    GRADIX_RANK_MIN_KP: int = 4096  # ... or, 16/32-bit keys on rows the rank sort takes (<= GRADIX_RANK_MAX_SEQ), from this pow2(K): H200 1x32000 fp32 K=3000 0.064 -> 0.049 ms (#gradix)
    GRADIX_MIN_K: int = 4000  # ... or 8/16-bit keys on any rows from this K (64x32000 fp16 K=4096 0.0654 -> 0.0621 ms before radix select's packed sort, which now keeps the rows below; 32-bit keys lost 0.0609 -> 0.0764 since RADIX_SORT_WG) (#gradix)
    GRADIX_MIN_K16_RADIX_MAX_L: int = 32768  # ... but 16-bit keys on rows of at most this length (0: never) stay with radix select, its final sort packed: H200 64x32000 fp16 K=4096 0.0572 -> 0.0509 ms, 128x32000 0.0676 -> 0.0516; 64x40000 lost 0.0577 -> 0.0710 (#pack16)
    GRADIX_MIN_K16_RADIX_MIN_SEQ: int = 16  # ... on at least this many rows (16x32768 K=4000 0.0517 -> 0.0403 ms; 12x32000 K=4096 even, 1x32000 lost 0.038 -> 0.048) (#pack16)
    GRADIX_MIN_K16_RADIX_MAX_SEQ: int = 512  # ... on at most this many (512x32768 K=4096 0.206 -> 0.197 ms; 1024x32768 lost 0.395 -> 0.530) (#pack16)
    GRADIX_MIN_K16_RADIX_MAX_KP: int = 4096  # ... up to this pow2(K), as measured (#pack16)
    GRADIX_LONG_MIN_L: int = 65536  # ... or on rows this long (16/32-bit keys) from a lower K (64x32000 fp32 K=3000 lost 0.069 -> 0.075) (#gradix)
    GRADIX_LONG_MIN_K: int = 4001  # ... 32-bit keys from this K: since RADIX_SORT_WG radix select won to K=4000 (64x131072 0.0942 against 0.1022 ms), lost at 4096 (0.1269 against 0.1015) (#gradix)
    GRADIX_LONG_MIN_K16: int = 2401  # ... 16-bit keys from this K: with the packed sort radix select won at K=2400 (H200 64x131072 fp16 0.0605 -> 0.0526 ms, 64x151936 0.0658 -> 0.0577), lost at 2500 (0.0609 -> 0.0717: past K = 2457 no sampled guess) (#pack16)
    GRADIX_WG: int = 256  # ... workgroups of its digit passes and compaction (#gradix)
    GRADIX_MIN_CHUNK: int = 4096  # ... chunks of at least this many elements (#gradix)
    GRADIX_TARGET_GROUPS: int = 256  # ... or longer ones toward this many workgroups in all (CPU: CPU_TARGET_GROUPS) (#gradix)
    GRADIX_MANY_TARGET_GROUPS: int = 512  # ... this many on more than GRADIX_FEW_SEQ rows: 64x131072 K=4096 0.120 -> 0.106 ms, 16 rows fp16 K=2048 lost 7% at 512 (#gradix)
    GRADIX_DIGIT_BITS: int = 11  # ... digit bits of 32-bit keys: 8 or 11 (3 passes of 11/11/10 bits, the _d11 modules; 8 under GRADIX_FILTER); H200 with the parallel pick: 1-5% faster on every 32-bit cell, 64x151936 K=4096 0.109 -> 0.105 ms (#gradix)
    GRADIX_FILTER: bool = False  # ... filtering: the first digit's bucket compacted once, later passes read only it (off: won only on fp16 64-row cells from K=3000, lost 1-4% on one row) (#gradix)
    GRADIX_BRACKET: bool = True  # ... the K-th key bracketed from a sample, the row read once, the candidates resolved in shared memory (gradix_bracket_cap): H100 64x131072 fp32 K=4096 0.1015 -> 0.0823 ms, fp16 0.0739 -> 0.0729, 16x131072 fp32 0.0712 -> 0.0621; 64x32000 fp16 lost 3% (#gradix)
    GRADIX_BRACKET_MIN_L: int = 32000  # ... on rows at least this long (>= 256: the sample's blocks); against radix select 64x16384 fp32 K=4096 lost 0.0504 -> 0.0601 ms, 8x32768 won 0.0567 -> 0.0536 (#gradix)
    GRADIX_BRACKET_MIN_L16: int = 32000  # ... 16-bit keys on rows at least this long (0: never): 64x32000 fp16 K=4096 0.0626 -> 0.0584 ms, 64x65536 K=3000 0.0614 -> 0.0568, 128x65536 K=4096 0.0799 -> 0.0742 (#gradix)
    GRADIX_BRACKET_SHORT_L16: int = 100000  # ... rows shorter than this on at most GRADIX_BRACKET_SHORT_MAX_SEQ16 rows: 1024x32768 fp16 K=4096 lost 4% (0.432 -> 0.450 ms), 256x32000 won 2% (#gradix)
    GRADIX_BRACKET_SHORT_MAX_SEQ16: int = 256  # ... (its per-row dispatches, bracket and resolve, cost more than the digit pass they spare once rows fill the card) (#gradix)
    GRADIX_BRACKET_MIN_SEQ16: int = 48  # ... and on at least this many rows: 48x131072 fp16 K=3000 won 3%, 32x151936 K=4096 lost 2.5%, 8x131072 5-9% (#gradix)
    GRADIX_BRACKET_LONG_MIN_K: int = 2049  # ... and 32-bit keys it brackets take GRADIX on rows of >= GRADIX_LONG_MIN_L from this K, not GRADIX_LONG_MIN_K: where pow2(K) reaches 4096, so no K-step makes a call faster (#gradix)
    GRADIX_BRACKET_MAX_SEQ: int = 1024  # ... on up to this many rows (measured to 1024): 128x131072 fp32 K=4096 0.188 -> 0.118 ms, 512x131072 0.598 -> 0.379, 1024x65536 0.781 -> 0.575, 96x131072 fp16 0.098 -> 0.091 (#gradix)
    GRADIX_BRACKET_LONG_MAX_SEQ: int = 64  # ... GRADIX_BRACKET_LONG_MIN_K on up to this many rows (128x131072 fp32 K=2049 bracketed 0.107 ms, radix select 0.064) (#gradix)
    GRADIX_BRACKET_MANY_MIN_SEQ: int = 192  # ... and on at least this many rows from GRADIX_BRACKET_MANY_MIN_K: 192x131072 fp32 K=3000 0.195 -> 0.182 ms, 128 rows lost 0.104 -> 0.111 (#gradix)
    GRADIX_BRACKET_MANY_MIN_K: int = 3000  # ... (256x151936 K=4000 radix select 0.247, bracketed 0.210; K=2500 0.187 / 0.194) (#gradix)
    GRADIX_BRACKET_MANY_TARGET_GROUPS: int = 1024  # ... gradix_bcollect's workgroups on more than GRADIX_FEW_SEQ rows of 32-bit keys: 64x131072 fp32 K=4096 0.0837 -> 0.0788 ms, 64x128256 0.0831 -> 0.0788; 16-bit keys lost 4-5% (64x151936) (#gradix)
    GRADIX_BRACKET_CAP: int = 8192  # ... candidates a row at most (<= 8192; fewer where gradix_resolve's shared memory, 8 bytes each, is less: 5440 on an H100): 2400-3900 at K=4096 of 151936 (#gradix)
    GRADIX_RANK_MAX_SEQ: int = 2  # ... on up to this many rows the survivors ranked over many workgroups, not sorted by one (0: never); 1x151936 K=4096 0.071 -> 0.053 ms, 4 rows K=4096 lost 1% (#gradix)
    GRADIX_RANK_E: int = 1  # ... survivors a thread ranks (1-4; an i-tile is GRADIX_WG of these); 1 against 2: 1x151936 K=2048 0.0502 / 0.0522 ms (#gradix)
    GRADIX_RANK_TJ: int = 128  # ... survivors a workgroup ranks them against (its j-tile, in shared memory; <= 1024); 128 against 256: 0.0502 / 0.0522 (#gradix)
    GRADIX_SORT_PARTS: int = 2  # ... on more rows the survivors' sort in this many workgroups a row (a power of two, 1-64; parts of >= 128), runs merged by rank: 4x131072 K=4096 0.074 -> 0.067 ms, 4 and 8 parts slower on 64 rows (#gradix)
    GRADIX_SORT_PARTS_MIN_KP: int = 4096  # ... from this pow2(K) (16x131072 K=2048 lost 1.5% in 2 parts) (#gradix)
    GRADIX_SORT_PARTS_MAX_SEQ: int = 64  # ... on up to this many rows (256x32000 K=4096 lost 6%: its rows fill the card) (#gradix)

    OP = "TOP_K1"

    def validate(self) -> "TopK1Tuning":
        """Raise ValidationError naming the field, the rule and the value; returns self."""
        self.check_counts([n for n in self.knobs() if n not in _BOOLS + _ZERO_NEVER], pow2=POW2)
        for name in _BOOLS:
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(f"TopK1Tuning.{name} must be a bool; got {getattr(self, name)!r}")
        for name in _ZERO_NEVER:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValidationError(f"TopK1Tuning.{name} must be an int >= 0 (0: never); got {v!r}")
        if self.GRADIX_DIGIT_BITS not in (8, 11):
            raise ValidationError(f"TopK1Tuning.GRADIX_DIGIT_BITS must be 8 or 11 (the gradix modules' GDIGIT); "
                                  f"got {self.GRADIX_DIGIT_BITS!r}")
        if not 1 <= self.GRADIX_RANK_E <= 4:
            raise ValidationError(f"TopK1Tuning.GRADIX_RANK_E must be 1 to 4 (RANK_EMAX in gradix_rank.comp); "
                                  f"got {self.GRADIX_RANK_E!r}")
        if self.GRADIX_RANK_TJ > 1024:
            raise ValidationError(f"TopK1Tuning.GRADIX_RANK_TJ must be <= 1024 (8 KiB of shared memory); "
                                  f"got {self.GRADIX_RANK_TJ!r}")
        if self.GRADIX_BRACKET_CAP > 8192:
            raise ValidationError(f"TopK1Tuning.GRADIX_BRACKET_CAP must be <= 8192 (gradix_resolve's 16 candidates a "
                                  f"thread); got {self.GRADIX_BRACKET_CAP!r}")
        if self.GRADIX_SORT_PARTS > 64:
            raise ValidationError(f"TopK1Tuning.GRADIX_SORT_PARTS must be <= 64 (gradix_pmerge binary-searches every "
                                  f"other part's run for each survivor); got {self.GRADIX_SORT_PARTS!r}")
        return self


DEFAULT = TopK1Tuning()
