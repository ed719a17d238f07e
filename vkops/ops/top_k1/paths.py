"""TOP_K1's path rule (pure): which path a call takes on a device, with how many chunks, workgroups and
shared entries, read from a `TopK1Tuning` (tuning.py; `DEFAULT` when none is passed). lowering.py lowers
the chosen Path to dispatches. The measurements that set each knob are in docs/tuning/top_k1.md; the
constants here are what the kernels fix (no tuning may change them)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Optional

from ...errors import DeviceLimitError, ValidationError
from ...limits import Limits
from .tuning import DEFAULT, TopK1Tuning

# The ROWS and RSORT modules (rows.comp, rsort.comp) declare these subgroup operations (not guaranteed by
# Vulkan 1.1; rows.comp uses no shuffle, but the rule stays as it was).
ROWS_SUBGROUP_OPS = ("basic", "ballot", "arithmetic", "shuffle")
# The top_k1_*_sg_* modules (SHUF=1: seg.comp, filter.comp, radix.comp) declare these: the sorting networks'
# strides below 4 x the subgroup size run in registers and subgroup shuffles instead of shared memory and
# workgroup barriers. Planned from pow2(K) = TopK1Tuning.SHUF_MIN_KP.
SHUF_SUBGROUP_OPS = ("basic", "shuffle")
# gradix_collect.comp's GTIE_CAP: the cut chunk's ties ranked from a shared list up to this many (else a block scan)
GRADIX_TIE_CAP = 512
EPI = 16  # elements per thread per filter iteration: whole 16-byte loads for every dtype (EPI in filter.comp)
# Bits of kernels/top_k1/radix.comp's push word `tune` (tune_bits below), set for one radix chunk a row on
# >= RADIX_ONE_CHUNK_WG_MIN_SEQ rows. TUNE_GUESS: the sampled guess aims at K + max(K/2, 64) keys instead of
# K + K/2 + 64. TUNE_SELECT: the buffer's compaction first resolves the K-th key by 8-bit digits until the
# keys at or above its prefix fit pow2(K), moves those to the front and sorts pow2(K) entries (select_front).
# Measurements: docs/tuning/top_k1.md#tune_guess-tune_select. TUNE_FIT (any rows): a chunk longer than 4 B
# resolves digits until about pow2(K) keys are left, not B (docs/tuning/top_k1.md#tune_fit).
TUNE_GUESS, TUNE_SELECT, TUNE_FIT = 1, 2, 4
SAMPLE_MIN_LEN = 1 << 15  # radix.comp's: chunks from this long try the sampled guess before the exact select


def _pow2(x: int) -> int:
    return 1 << max(0, int(x) - 1).bit_length()


def merge_loads(runs: int, per_load: int) -> int:
    """Loads (one bitonic merge each) in which merge_cand reduces `runs` sorted runs, `per_load` a load
    (the first load takes that many, each next one per_load - 1 new runs beside the result)."""
    return 0 if runs <= 1 else -(-(runs - 1) // (per_load - 1))


def merge_group(chunks: int, B: int, Kp: int, t: TopK1Tuning = DEFAULT) -> int:
    """Chunks a first-level merge group (0: one level). Several chunks of a row hand their sorted runs to
    the last one to finish, which merges B / Kp of them a load, one after the other. In two levels the last
    chunk of each group merges its group's runs (groups in parallel, while other chunks still run), and the
    last group merges the groups' results: loads(G) + loads(chunks / G) in a row instead of loads(chunks),
    plus a write and a counter. Taken where that saves at least t.MERGE_GROUP_MIN_SAVED loads."""
    per = B // Kp
    one = merge_loads(chunks, per)
    best, best_g = one, 0
    for g in range(2, chunks):
        two = merge_loads(g, per) + merge_loads(-(-chunks // g), per) + 1
        if two < best:
            best, best_g = two, g
    return best_g if one - best >= t.MERGE_GROUP_MIN_SAVED else 0


@dataclass(frozen=True)
class Path:
    """The numbers a path runs with: its kernel family (radix select's chunks are path "filter" with
    radix=True: the chunk layout both share; Choice.path names it "radix"), buffer, workgroup, chunks."""

    path: str            # "seg", "filter", "sort", "rows" or "rsort"
    B: int               # shared buffer entries
    Kp: int
    G: int = 1           # seg, rows: rows per workgroup
    P: int = 1           # seg: slot per row; sort: padded row length
    chunks: int = 1      # filter: workgroups per row
    chunk_len: int = 0
    cap: int = 0         # filter: entries buffered before a compaction; rows: candidate buffer
    radix: bool = False  # filter: chunks by radix select instead of the running threshold
    merge_group: int = 0  # filter: chunks a first-level merge group (0: the last chunk merges every run)
    workgroup: int = 0   # always set by the rule
    rs_sh: int = 1       # rsort: words of its counters (RS_SH in kernels/top_k1/rsort.comp)
    shuf: bool = False   # seg, filter: the top_k1_*_sg_* modules (networks' short strides in shuffles)
    sort_wg: int = 0     # gradix: the workgroup of its survivors' sort (B = Kp entries; `workgroup`: the passes')
    sort_parts: int = 1  # gradix: workgroups a row's sort (gradix_psort over Kp / sort_parts entries each, gradix_pmerge)


NBINS = 256  # radix histogram bins (NBINS in kernels/top_k1/head.glsl)
MAX_B = 2048  # the largest buffer: on an H200, B=2048 streamed 1.5-2x faster than 4096 (buffer_entries)


def shared_bytes(B: int, workgroup: int) -> int:
    """The shared-memory budget a TOP_K1 plan with B buffer entries and this workgroup sets aside (what one
    module holding every algorithm declared until the split into kernels/top_k1/*.comp: skey/sidx[B],
    s_base[WG], hist[NBINS], s_grp[NBINS/32] and 8 scalars). buffer_entries and rows_path size B by it, so
    plans stay as they were; every module declares at most this (module_shared_bytes)."""
    return 4 * (2 * B + workgroup + NBINS + NBINS // 32 + 8)


def module_shared_bytes(algorithm: str, B: int, workgroup: int, rs_sh: int = 1, digit_bits: int = 8) -> int:
    """Shared memory kernels/top_k1/<algorithm>.comp declares with B buffer entries, this workgroup, (rsort)
    RS_SH counter words and (gradix_hist) digit bits (tests/test_portability.py checks it against each module's SPIR-V)."""
    gb = 1 << digit_bits  # gradix_hist's bins (GBINS in gradix.glsl)
    words = {"seg": 2 * B + workgroup,                       # skey/sidx, s_base (row offsets)
             "filter": 2 * B + workgroup + 5,                # skey/sidx, s_base (seed maxima), 5 scalars
             # skey/sidx, hist, s_grp, 5 scalars (compact's stores of the threshold and s_flag, read only by
             # the threshold filter, are dead here: spirv-opt drops them and their variables)
             "radix": 2 * B + NBINS + NBINS // 32 + 5,
             "sort_tile": 2 * B, "sort_global": 0,
             "rows": 2 * B,                                  # subgroup regions of skey/sidx
             "rsort": B + rs_sh + 1,                         # skey, counters, s_flag
             # gradix: hist[NBINS], s_grp, 3 scalars (s_inbin is dead: dropped); s_scan[WG], 6 scalars, s_ties[GRADIX_TIE_CAP],
             # s_nl; skey/sidx[B]
             # (11-bit digits: s_part[WG] instead of s_grp)
             "gradix_hist": gb + (gb // 32 if digit_bits == 8 else workgroup) + 3,
             "gradix_collect": workgroup + 6 + GRADIX_TIE_CAP + 1, "gradix_sort": 2 * B,
             # gradix filtering: fscan adds s_scan2[WG] (uvec2) and 4 scalars; fhist and fcollect as hist and collect
             "gradix_fscan": NBINS + NBINS // 32 + 3 + 2 * workgroup + 4, "gradix_fhist": NBINS + NBINS // 32 + 3,
             "gradix_fcollect": workgroup + 6,
             # gradix_rank: sj[TJ] (uvec2; spec constant 1, here B), s_last
             "gradix_rank": 2 * B + 1,
             # gradix_psort: skey/sidx[B] (B a part's entries); gradix_pmerge: none
             "gradix_psort": 2 * B, "gradix_pmerge": 0}
    return 4 * words[algorithm]


def buffer_entries(shared: int, workgroup: int = DEFAULT.WORKGROUP, t: TopK1Tuning = DEFAULT) -> int:
    """Largest power of two B <= 2048 (and >= the workgroup: a filter step buffers one entry per thread)
    whose shared arrays fit. 2048 also under NVIDIA's 48 KiB: on an H200, B=2048 (16 KiB, more
    workgroups per SM) streamed 1.5-2x faster than B=4096 on every filter shape of bench_top_k1.py."""
    b = MAX_B
    while b > max(t.MIN_B, workgroup) and shared_bytes(b, workgroup) > shared:
        b //= 2
    if shared_bytes(b, workgroup) > shared:
        raise DeviceLimitError(f"TOP_K1 needs {shared_bytes(b, workgroup)} bytes of shared memory (B={b} entries, "
                               f"workgroup {workgroup}); maxComputeSharedMemorySize is {shared}")
    return b


# Chunking of the filter / radix rows (Facts.filter; the measurements are in its comment):
SHORT_CHUNK_STEPS = 8  # rows under 8 filter steps stay one chunk (the merge costs more than it saves)
# ... but on up to 8 rows of 16- and 32-bit keys at K > 1 from 3 steps: H200 1x32000 fp32 K=50 0.0275 -> 0.0161 ms,
# 8x32000 0.0280 -> 0.0165; 4x20000 fp16 K=100 (2.4 steps) lost 7%; 8-bit keys and K = 1 lost (docs/tuning/top_k1.md)
FEW_SHORT_CHUNK_STEPS, FEW_SHORT_MAX_SEQ = 3, 8
FEW_ROWS_CHUNK_KP = 56  # chunks of >= 56 x pow2(K) elements while the rows give <= target_groups / 2 of them
CHUNK_KP = 64  # else chunks of >= 64 x pow2(K): more chunks than about a workgroup per SM lost (H100)
CPU_CHUNK_B, CPU_CHUNK_STEPS = 4, 8  # a CPU (short_chunks False) keeps chunks of >= 4 buffers and 8 steps
MAX_CHUNK_KEYS = 65536  # at most 65536 / K chunks: every chunk's K candidates are merged
COMPACT_CAP = 512  # compact early for small K: entries buffered before a compaction (>= WG, 4 pow2(K))


class Facts:
    """One call's shape on one device under one tuning, with what the path rule reads: Kp, P, the buffer B,
    each path's sizing, computed once and only when a rule row (or a forced path) asks. `limits` None: no
    subgroup paths (choose_path: a bare shared-memory size)."""

    def __init__(self, n_seq: int, length: int, k: int, *, shared: int, target_groups: int, short_chunks: bool,
                 workgroup: int, key_bits: int = 32, chunks: Optional[int] = None, t: TopK1Tuning = DEFAULT,
                 limits: Optional[Limits] = None):
        self.n_seq, self.length, self.k, self.shared = n_seq, length, k, shared
        self.target_groups, self.short_chunks, self.WG = target_groups, short_chunks, workgroup
        self.key_bits, self.chunks, self.t, self.limits = key_bits, chunks, t, limits
        self.Kp, self.P = _pow2(k), _pow2(length)

    @cached_property
    def B(self) -> int:
        """Shared buffer entries (DeviceLimitError where not even MIN_B fit). Where pow2(K) > B/2 on rows longer
        than B (the global sort's case), doubled up to LARGE_K_MAX_B while shared memory allows, if that makes
        pow2(K) <= B/2: radix select then keeps K candidates instead of sorting the row (rows that fit B stay
        in SEG's buffer, which a larger one slowed: docs/tuning/top_k1.md#large_k_max_b). Else the largest
        such buffer where it holds pow2(K) and the row (of at most LARGE_K_ONE_CHUNK_MAX_L) is longer than it,
        no chunks asked for: radix select in one chunk a row (fits_one_chunk)."""
        b = buffer_entries(self.shared, self.WG, self.t)
        if self.Kp > b // 2 and self.P > b:
            g = b
            while self.Kp > g // 2 and 2 * g <= self.t.LARGE_K_MAX_B and shared_bytes(2 * g, self.WG) <= self.shared:
                g *= 2
            if self.Kp <= g // 2 or (self.Kp <= g < self.P and self.length <= self.t.LARGE_K_ONE_CHUNK_MAX_L
                                         and self.chunks in (None, 1)):
                b = g
        return b

    @cached_property
    def gradix(self) -> Optional[Path]:
        """GRADIX's sizing where it fits (else None): gradix_path."""
        t = self.t  # more than GRADIX_FEW_SEQ rows: GRADIX_MANY_TARGET_GROUPS; a CPU: its own target
        groups = (t.GRADIX_MANY_TARGET_GROUPS if self.n_seq > t.GRADIX_FEW_SEQ else t.GRADIX_TARGET_GROUPS) \
            if self.short_chunks else self.target_groups
        return gradix_path(self.n_seq, self.length, self.k, shared=self.shared, workgroup=self.WG,
                           target_groups=groups, chunks=self.chunks, t=self.t)

    @property
    def gradix_auto(self) -> bool:
        """The rule takes GRADIX: GRADIX_MIN_KP set (0: never) and reached (GRADIX_MIN_KP16 for 16-bit keys on few
        rows), rows of >= GRADIX_MIN_L, either few
        (<= GRADIX_FEW_SEQ) rows of >= GRADIX_FEW_MIN_L, or 16/32-bit keys in rows the rank sort takes (<=
        GRADIX_RANK_MAX_SEQ) from pow2(K) = GRADIX_RANK_MIN_KP, or rows radix select cannot take (else the global
        sort: pow2(K) > B/2 on rows past LARGE_K_ONE_CHUNK_MAX_L), or 8/16-bit keys from K = GRADIX_MIN_K, or 16/32-bit
        keys in rows of >= GRADIX_LONG_MIN_L from K >= GRADIX_LONG_MIN_K16 / GRADIX_LONG_MIN_K; and it fits."""
        t, bits = self.t, self.key_bits
        long_k = t.GRADIX_LONG_MIN_K16 if bits == 16 else t.GRADIX_LONG_MIN_K
        few = (self.n_seq <= t.GRADIX_FEW_SEQ and self.length >= t.GRADIX_FEW_MIN_L
               or bits > 8 and self.n_seq <= t.GRADIX_RANK_MAX_SEQ and self.Kp >= t.GRADIX_RANK_MIN_KP
               or not self.fits_filter and not self.fits_one_chunk)  # else the global sort
        min_kp = min(t.GRADIX_MIN_KP, t.GRADIX_MIN_KP16) if few and bits == 16 else t.GRADIX_MIN_KP
        return (t.GRADIX_MIN_KP > 0 and self.Kp >= min_kp and self.length >= t.GRADIX_MIN_L
                and (few or bits <= 16 and self.k >= t.GRADIX_MIN_K
                     or bits > 8 and self.length >= t.GRADIX_LONG_MIN_L and self.k >= long_k)
                and self.gradix is not None)

    @cached_property
    def short_radix(self) -> bool:
        """Short rows (B/2 < L <= 4B, one chunk each) go to radix select from K = SHORT_ROW_RADIX_MIN_K: it reads
        the row a few times but sorts about K entries (docs/tuning/top_k1.md#short_row_radix_min_k). Rows of
        <= B/2 stay in SEG, several per workgroup (it won there)."""
        B, Kp = self.B, self.Kp
        return B // 2 < self.P and self.length <= 4 * B and self.t.SHORT_ROW_RADIX_MIN_K <= self.k and Kp <= B // 2

    @property
    def short_fit(self) -> bool:
        """RADIX_SHORT_FIT: many (>= RADIX_ONE_CHUNK_WG_MIN_SEQ) rows of RADIX_SHORT_ROWS_MIN_L..4 max(Kp, 512) above
        pow2(K) = RADIX_ONE_CHUNK_WG_MAX_KP, one radix chunk each: a buffer of max(Kp, 512), Kp / 4 threads; before
        RSORT up to pow2(K) = RADIX_SHORT_FIT_RSORT_KP (32-bit keys) / _KP16 (16-bit; 8-bit keys: never)."""
        t = self.t
        return (t.RADIX_SHORT_FIT and self.n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ and self.Kp > t.RADIX_ONE_CHUNK_WG_MAX_KP
                and t.RADIX_SHORT_ROWS_MIN_L <= self.length <= 4 * max(self.Kp, 512))

    @property
    def short_fit_first(self) -> bool:
        """short_fit on rows RSORT would take (see short_fit)."""
        t = self.t
        kp = {32: t.RADIX_SHORT_FIT_RSORT_KP, 16: t.RADIX_SHORT_FIT_RSORT_KP16}.get(self.key_bits, 0)
        return self.short_fit and self.Kp <= kp

    @property
    def global_sort(self) -> bool:
        """No later row of the rule takes the call (SEG, radix select, the filter): the global bitonic sort's."""
        return not (self.P <= self.B and not self.short_radix) and not self.fits_filter and not self.fits_one_chunk

    @cached_property
    def rsort(self) -> Optional[Path]:
        """rsort_path; with RSORT_FOR_SORT also, on any rows it fits, what the global sort would take."""
        if self.limits is None:
            return None
        p = rsort_path(self.limits, self.n_seq, self.length, self.k, t=self.t, key_bits=self.key_bits)
        if (p is None and self.t.RSORT_FOR_SORT and self.chunks is None and self.length <= RSORT_MAX_E * RSORT_MAX_WG
                and self.global_sort):  # (rows RSORT can hold at all: no device query past them)
            p = rsort_path(self.limits, self.n_seq, self.length, self.k, force=True, t=self.t, key_bits=self.key_bits)
        return p

    @cached_property
    def rows(self) -> Optional[Path]:
        return (None if self.limits is None else
                rows_path(self.limits, self.n_seq, self.length, self.k, key_bits=self.key_bits, t=self.t))

    @cached_property
    def chunked(self) -> Path:
        """The filter's chunks as the rule sizes them (radix select where the rule's thresholds say)."""
        return self.filter(radix=self.Kp >= self.t.RADIX_MIN_KP or self.short_radix, auto=True)

    @property
    def fits_filter(self) -> bool:
        return self.Kp <= self.B // 2

    @property
    def fits_one_chunk(self) -> bool:
        """B/2 < pow2(K) <= B on rows longer than B (up to LARGE_K_ONE_CHUNK_MAX_L), no chunks asked for: radix
        select, one chunk a row (one_chunk)."""
        return (self.B // 2 < self.Kp <= self.B < self.P and self.length <= self.t.LARGE_K_ONE_CHUNK_MAX_L
                and self.chunks in (None, 1))

    def one_chunk(self) -> Path:
        """Radix select, one chunk a row, for B/2 < pow2(K) <= B: its buffer holds the collected keys (K to B of
        them: the exact select stops once the keys at or above the K-th key's prefix fit B, or takes the tied
        K-th keys by position) and then the sorted top pow2(K), and nothing else. Several chunks a row cannot:
        merge_cand merges two runs of pow2(K) at a time (B / pow2(K) >= 2), and the threshold filter keeps its
        top pow2(K) beside incoming entries."""
        step = self.WG * EPI
        chunk_len = -(-self.length // step) * step
        return Path("filter", self.B, self.Kp, chunks=1, chunk_len=chunk_len, cap=self.B, radix=True,
                    workgroup=self.WG)

    def seg(self) -> Path:
        B, P = self.B, self.P
        return Path("seg", B, self.Kp, G=max(1, min(B // P, self.WG, self.n_seq)), P=P, workgroup=self.WG)

    def sort(self) -> Path:
        return Path("sort", self.B, self.Kp, P=max(self.P, 2 * self.B), workgroup=self.WG)

    def filter(self, radix: bool, auto: bool) -> Path:
        """Chunks a row streamed by the threshold filter or (radix) radix select; `auto`: the rule's own
        choice (radix select on short chunks, smaller buffers and workgroups for one chunk a row), not a forced path."""
        t, n_seq, length, k, Kp = self.t, self.n_seq, self.length, self.k, self.Kp
        WG, B, chunks = self.WG, self.B, self.chunks
        target_groups, short_chunks, key_bits = self.target_groups, self.short_chunks, self.key_bits
        step = WG * EPI
        wave = False
        if chunks is None:
            # Few rows (LLM sampling: 1-64 x 32000-151936) need many chunks to fill a GPU. On an H100,
            # 1 x 151936 ran K=1 in 0.014 ms with 32 chunks vs 0.024 with 3, K=50 0.033 vs 0.045; but each
            # chunk hands K candidates to the merge and costs a sort of its own, so large K wants fewer:
            # chunks of >= 56 * pow2(K) elements. With the merge of sorted runs (merge_cand), K=1024 ran
            # best in 3 chunks (8 x 128256: 0.054 ms; 2 chunks 0.084, 4: 0.058, 8: 0.063; 1 x 151936
            # 0.054, 2: 0.058, 7: 0.063), K=256 in 8-10 (chunk lengths are whole steps). Rows under 8
            # steps stay whole (the merge cost more than it saved: H100 session 7, 1 x 32000 K=50 0.025 ms in one
            # chunk, 0.030 in 4; since the radix chunks and merge of later sessions, up to 8 rows from 2 steps:
            # FEW_SHORT_CHUNK_STEPS). Where the rows alone give more than target_groups / 2 chunks (about one
            # workgroup per SM of an H100), chunks stay at >= 64 * pow2(K): 64 x 128256 K=1024 ran 0.052-0.056
            # ms in 2 chunks, 0.075-0.080 in 3 (192 workgroups). A CPU (short_chunks False) keeps long chunks.
            # At most 65536 / K chunks (every chunk's run is merged), or about a wave of workgroups
            # (session 12 kept 128 with the two-level merge: 0.229 ms, 256 chunks 0.267): 1 x 2^26 K=1024
            # ran 0.549 ms in 128 chunks of 2^19 against 0.880 in 64 and 1.010
            # in 256; 2 x 2^25 0.368 in 2 x 64 against 0.732 in 2 x 128 (H100, session 11).
            few_short = n_seq <= FEW_SHORT_MAX_SEQ and key_bits > 8 and k > 1
            short = short_chunks and length >= (FEW_SHORT_CHUNK_STEPS if few_short else SHORT_CHUNK_STEPS) * step
            few = n_seq * -(-length // (FEW_ROWS_CHUNK_KP * Kp)) <= target_groups // 2
            per = FEW_ROWS_CHUNK_KP if few else CHUNK_KP
            min_chunk = max(step, per * Kp) if short else max(CPU_CHUNK_B * B, CPU_CHUNK_STEPS * step)
            want = -(-target_groups // n_seq)
            # tens of vocabulary-sized rows: about a wave of workgroups (below; and the cap after the count)
            vocab = short_chunks and t.WAVE_MIN_SEQ <= n_seq <= t.WAVE_MAX_SEQ and length <= t.WAVE_MAX_L
            wave = vocab and t.RADIX_SHORT_MIN_KP <= Kp <= t.WAVE_MAX_KP
            if wave:
                # Tens of vocabulary-sized rows: about one wave of workgroups (target_groups / 2), chunks
                # of whole steps, rows under 8 steps too; radix select from pow2(K) = 64 (measured so).
                want, min_chunk = -(-(target_groups // 2) // n_seq), step
            chunks = max(1, min(want, -(-length // min_chunk), max(MAX_CHUNK_KEYS // k, target_groups // 2 // n_seq)))
            if vocab and short and not few and Kp > t.WAVE_MAX_KP:
                # Tens of vocabulary-sized rows above the wave's K: about a wave of workgroups too, or 2 chunks a
                # row (64 x 151936 K=1024 ran 0.064 ms in 3 chunks, 0.044 in 2; #many-rows-chunk-cap).
                chunks = min(chunks, max(2, target_groups // 2 // n_seq))
        chunk_len = -(-length // chunks)
        chunk_len = -(-chunk_len // step) * step
        chunks = -(-length // chunk_len)
        if auto and Kp >= t.RADIX_SHORT_MIN_KP and (chunk_len <= t.RADIX_SHORT_CHUNK_B * B or wave):
            radix = True
        one_chunk = radix and auto and chunks == 1
        many = Kp <= t.RADIX_ONE_CHUNK_WG_MAX_KP and n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ
        if one_chunk and chunk_len <= 4 * B and length >= t.RADIX_SHORT_ROWS_MIN_L and many:
            # Many short rows, each read a few times: at most max(Kp, 512) keys collected, so a small
            # buffer and workgroup let an SM hold more workgroups.
            WG = min(WG, t.RADIX_SHORT_ROWS_WG)
            B = max(min(B, t.RADIX_SHORT_ROWS_B), 2 * Kp, WG)
        elif one_chunk and self.short_fit:
            # Many short rows above that pow2(K) collect at most max(Kp, 512) keys too: a buffer of just that
            # and Kp / 4 threads (the register networks' 4 a thread), so an SM holds more workgroups.
            WG = min(WG, max(Kp // 4, 32))
            B = max(Kp, 512, WG)
            step = WG * EPI
            chunk_len = -(-length // step) * step
        elif one_chunk and chunk_len > 4 * B:
            # One long chunk a row by radix select: its buffer only needs room for the sampled guess's
            # ~1.5K + 64 keys, and a smaller one lets an SM hold more workgroups.
            B = max(min(B, 4 * Kp), t.RADIX_ONE_CHUNK_MIN_B)
            if many:
                WG = min(WG, t.RADIX_ONE_CHUNK_WG)
                if key_bits == 32:
                    if Kp <= t.RADIX_ONE_CHUNK_WIDE_SMALL_WG_MAX_KP:
                        WG = min(WG, t.RADIX_ONE_CHUNK_WIDE_SMALL_WG)
                    B = max(min(B, max(2 * Kp, t.RADIX_ONE_CHUNK_WIDE_B)), WG)
        # Compact early for small K: the threshold rises after fewer buffered elements, and each
        # compaction sorts fewer entries.
        cap = min(B, max(COMPACT_CAP, WG, 4 * Kp))  # >= WG: the seeding step buffers one per thread
        return Path("filter", B, Kp, chunks=chunks, chunk_len=chunk_len, cap=cap, radix=radix, workgroup=WG,
                    merge_group=merge_group(chunks, B, Kp, t))


# force= names, one a path: each runs its own kernels/top_k1/<name>.comp (radix: radix.comp's chunks; the
# Path keeps path "filter" with radix=True, the chunk layout both share).
PATHS = ("rsort", "rows", "seg", "radix", "filter", "sort", "gradix")


@dataclass(frozen=True)
class Choice:
    """The path a call takes (a name of PATHS), why, and the numbers it picked (the Path: buffer, workgroup,
    chunks, cap, shuffles)."""

    path: str
    why: str
    plan: Path


# force=None: the first row whose condition holds runs (its name, the condition on the Facts, why). The
# conditions read the paths' own sizing (rsort_path, rows_path, Facts.filter) and the tuning;
# docs/tuning/top_k1.md "Which path runs where" is this table. `chunks` given (tests, sweeps) skips the
# subgroup paths.
AUTO_RULE = (
    ("gradix", lambda f: f.gradix_auto,
     "GRADIX: pow2(K) >= GRADIX_MIN_KP on rows of >= GRADIX_MIN_L, either <= GRADIX_FEW_SEQ rows of >= "
     "GRADIX_FEW_MIN_L or rows radix select cannot take (pow2(K) > B/2 past LARGE_K_ONE_CHUNK_MAX_L) or 8/16-bit "
     "keys from K = GRADIX_MIN_K or 16/32-bit keys in rows of >= GRADIX_LONG_MIN_L from K >= GRADIX_LONG_MIN_K16 / "
     "GRADIX_LONG_MIN_K, where pow2(K) (key, index) pairs fit shared memory: a radix select of the K-th key over many "
     "workgroups a row, one compaction, one sort"),
    ("rsort", lambda f: f.chunks is None and f.rsort is not None and not f.short_fit_first,
     "RSORT: >= RSORT_MIN_SEQ rows of RSORT_MIN_L..RSORT_MAX_L (8-bit keys: RSORT_MAX_L8) with pow2(K) > "
     "ROWS_MAX_KP and subgroup ballot + arithmetic + shuffle (not the short fit's rows up to "
     "RADIX_SHORT_FIT_RSORT_KP / _KP16), or (RSORT_FOR_SORT) any rows it fits that only the global sort would take: "
     "one workgroup radix-sorts a row"),
    ("rows", lambda f: f.chunks is None and f.rows is not None,
     "ROWS: >= ROWS_MIN_SEQ rows of <= ROWS_MAX_L with pow2(K) <= ROWS_MAX_KP and subgroup ballot + arithmetic + "
     "shuffle (not the many rows longer than ROWS_RADIX_MIN_L with wide keys): one subgroup a row"),
    ("seg", lambda f: f.P <= f.B and not f.short_radix,
     "SEG: the padded row fits the buffer (pow2(L) <= B) and is no short radix row: rows bitonic-sorted in "
     "shared memory, several a workgroup"),
    ("radix", lambda f: f.fits_filter and f.chunked.radix or f.fits_one_chunk,
     "radix select: pow2(K) <= B/2, and pow2(K) >= RADIX_MIN_KP, a short row (B/2 < L <= 4B, K >= "
     "SHORT_ROW_RADIX_MIN_K), or pow2(K) >= RADIX_SHORT_MIN_KP on chunks <= RADIX_SHORT_CHUNK_B * B or in a wave; "
     "or B/2 < pow2(K) <= B on rows longer than B (up to LARGE_K_ONE_CHUNK_MAX_L): one chunk a row"),
    ("filter", lambda f: f.fits_filter,
     "threshold filter: pow2(K) <= B/2, chunks streamed once through a running K-th best"),
    ("sort", lambda f: True,
     "global bitonic sort: pow2(K) > B/2, and pow2(K) > B or rows that fit B or are longer than "
     "LARGE_K_ONE_CHUNK_MAX_L"),
)


def _auto(f: Facts, name: str) -> Path:
    return {"gradix": lambda: f.gradix, "rsort": lambda: f.rsort, "rows": lambda: f.rows, "seg": f.seg,
            "radix": lambda: f.chunked if f.fits_filter else f.one_chunk(),
            "filter": lambda: f.chunked, "sort": f.sort}[name]()


def _forced(f: Facts, force: str) -> Path:
    """The forced path, or ValidationError naming why it cannot run."""
    lim, length, k = f.limits, f.length, f.k
    if force == "gradix":
        p = f.gradix
        if p is None:
            parts = gradix_sort_parts(f.n_seq, f.Kp, f.t)
            what = "pow2(K)" if parts == 1 else f"pow2(K) / {parts} (its sort in {parts} parts)"
            raise ValidationError(f"gradix path needs {what} (key, index) pairs in shared memory for its sort: "
                                  f"{gradix_shared_bytes(f.Kp, parts)} bytes for K={k}; the device has {f.shared}")
        return p
    if force == "rsort" and lim is not None:
        p = rsort_path(lim, f.n_seq, length, k, force=True, t=f.t)
        if p is None:
            raise ValidationError(f"rsort path needs subgroup ballot + arithmetic + shuffle, rows of <= {RSORT_MAX_E} "
                                  f"elements an invocation and its counters in shared memory (128 words a "
                                  f"subgroup); got L={length} on {lim.name} (subgroups of "
                                  f"{lim.min_subgroup_size}-{lim.max_subgroup_size}, "
                                  f"{lim.shared_memory_bytes} bytes of shared memory)")
        return p
    if force == "rows" and lim is not None:
        p = rows_path(lim, f.n_seq, length, k, force=True, cap=f.chunks, key_bits=f.key_bits, t=f.t)
        if p is None:
            raise ValidationError(f"rows path needs subgroup ballot + arithmetic + shuffle and pow2(K) <= "
                                  f"{f.t.ROWS_MAX_KP}; got K={k} on {lim.name}")
        return p
    if force == "seg":
        if f.P > f.B:
            raise ValidationError(f"seg path needs pow2(L) <= {f.B}; got L={length}")
        return f.seg()
    if force == "radix" and not f.fits_filter and f.Kp <= f.B and f.chunks in (None, 1):
        return f.one_chunk()  # one chunk a row holds pow2(K) <= B (Facts.one_chunk)
    if force in ("filter", "radix"):
        if not f.fits_filter:
            more = f" (radix: pow2(K) <= {f.B} in one chunk a row)" if force == "radix" else ""
            raise ValidationError(f"{force} path needs pow2(K) <= {f.B // 2}{more}; got K={k}")
        return f.filter(radix=force == "radix", auto=False)
    if force == "sort":
        return f.sort()
    raise ValidationError(f"TOP_K1 force must be None or one of {', '.join(map(repr, PATHS))}; got {force!r}")


def decide(f: Facts, force: Optional[str] = None) -> Choice:
    """The path rule: AUTO_RULE's rows in order (the first that holds runs), or the forced path."""
    if force is not None:
        return Choice(force, f"forced: force={force!r}", _forced(f, force))
    for name, cond, why in AUTO_RULE:
        if (name not in ("rsort", "rows") or f.limits is not None) and cond(f):
            return Choice(name, why, _auto(f, name))
    raise AssertionError("the last row always holds")


def choose_path(n_seq: int, length: int, k: int, shared: int, *, target_groups: int = 1024,
                force: Optional[str] = None, chunks: Optional[int] = None, workgroup: int = DEFAULT.WORKGROUP,
                short_chunks: bool = False, key_bits: int = 32, tuning: TopK1Tuning = DEFAULT) -> Path:
    """The rule without subgroup paths on a bare shared-memory size (tests: an H100-sized device anywhere).
    `force` / `chunks` exist for tests (exercise every path on small data); `key_bits` (the element width)
    sets the buffer and workgroup of one radix chunk a row on many rows."""
    f = Facts(n_seq, length, k, shared=shared, target_groups=target_groups, short_chunks=short_chunks,
              workgroup=workgroup, key_bits=key_bits, chunks=chunks, t=tuning)
    return decide(f, force).plan


GRADIX_SORT_RE = 4  # entries a thread of the register networks (RE in networks.glsl)
GRADIX_CHUNK_ALIGN = 16  # GRADIX chunks are whole 16-byte loads of every dtype (gradix.glsl's chunk_len)


GRADIX_SORT_MIN_RUN = 128  # a part of the sort holds at least one subgroup of 32's register network (RE a lane)


def gradix_shared_bytes(Kp: int, parts: int = 1) -> int:
    """Shared memory of GRADIX's sort (gradix_sort.comp: skey/sidx[pow2(K)]; in parts, each part's), its largest
    module."""
    return 8 * (Kp // parts)


def gradix_digit_bits(key_bits: int, shared: int, t: TopK1Tuning = DEFAULT) -> int:
    """GRADIX's digit bits: GRADIX_DIGIT_BITS (11: the top_k1_gradix_*_d11_* modules) on 32-bit keys without
    GRADIX_FILTER (its modules take 8-bit digits) where the digit pass's histogram fits shared memory; else 8."""
    if t.GRADIX_DIGIT_BITS == 8 or key_bits != 32 or t.GRADIX_FILTER:
        return 8
    fits = module_shared_bytes("gradix_hist", 0, 1024, digit_bits=t.GRADIX_DIGIT_BITS) <= shared  # any workgroup
    return t.GRADIX_DIGIT_BITS if fits else 8


def gradix_shifts(key_bits: int, digit_bits: int) -> list:
    """Each digit pass's lowest bit, the most significant digit first: 24, 16, 8, 0 for 32-bit keys in 8-bit digits;
    21, 10, 0 in 11-bit ones (the last digit takes what is left: 10 bits)."""
    return [max(0, key_bits - digit_bits * (j + 1)) for j in range(-(-key_bits // digit_bits))]


def gradix_sort_parts(n_seq: int, Kp: int, t: TopK1Tuning = DEFAULT) -> int:
    """Workgroups a row's survivors' sort takes: GRADIX_SORT_PARTS, as many as leave parts of >= GRADIX_SORT_MIN_RUN
    entries, from pow2(K) = GRADIX_SORT_PARTS_MIN_KP on up to GRADIX_SORT_PARTS_MAX_SEQ rows; 1 where the rank sort
    takes the rows (<= GRADIX_RANK_MAX_SEQ of them)."""
    if n_seq <= t.GRADIX_RANK_MAX_SEQ or n_seq > t.GRADIX_SORT_PARTS_MAX_SEQ or Kp < t.GRADIX_SORT_PARTS_MIN_KP:
        return 1
    return max(1, min(t.GRADIX_SORT_PARTS, Kp // GRADIX_SORT_MIN_RUN))


def gradix_path(n_seq: int, length: int, k: int, *, shared: int, workgroup: int, target_groups: int,
                chunks: Optional[int] = None, t: TopK1Tuning = DEFAULT) -> Optional[Path]:
    """The GRADIX lowering (kernels/top_k1/gradix*.comp) where its sort fits shared memory, else None: chunks of
    GRADIX_MIN_CHUNK elements (rounded up to 16), or longer ones where that makes more than about target_groups
    workgroups in all, the row's last chunk what is left (`chunks`: that many a row, for tests and sweeps);
    digit passes and compaction in workgroups of GRADIX_WG (at most the device's), the survivors' sort in one
    workgroup of `workgroup` a row over B = pow2(K) entries (or in gradix_sort_parts workgroups a row: B a part's
    entries, which is what must fit)."""
    Kp = _pow2(k)
    parts = gradix_sort_parts(n_seq, Kp, t)
    if gradix_shared_bytes(Kp, parts) > shared:
        return None
    wg = min(t.GRADIX_WG, workgroup)
    align = lambda n: -(-n // GRADIX_CHUNK_ALIGN) * GRADIX_CHUNK_ALIGN  # noqa: E731
    if chunks is None:  # about target_groups workgroups in all, chunks of >= GRADIX_MIN_CHUNK (a shorter last one)
        chunk_len = max(align(t.GRADIX_MIN_CHUNK), align(-(-length // -(-target_groups // n_seq))))
    else:
        chunk_len = align(-(-length // chunks))
    chunks = -(-length // chunk_len)
    return Path("gradix", Kp // parts, Kp, chunks=chunks, chunk_len=chunk_len, workgroup=wg, sort_wg=workgroup,
                sort_parts=parts)


def tune_bits(p: Path, n_seq: int, length: int, key_bits: int, t: TopK1Tuning = DEFAULT) -> int:
    """The TUNE_* bits of a filter path (see TUNE_GUESS above): one long radix chunk a row (of `length`
    keys); TUNE_FIT from pow2(K) = RADIX_FIT_MIN_KP on rows the sampled guess skips, the others on many rows."""
    if not (p.path == "filter" and p.radix and p.chunks == 1 and p.chunk_len > 4 * p.B):
        return 0
    # (at pow2(K) = B the kernel's two stops are the same)
    fit = TUNE_FIT if t.RADIX_FIT_MIN_KP <= p.Kp < p.B and 4 * p.B < length < SAMPLE_MIN_LEN else 0
    if n_seq < t.RADIX_ONE_CHUNK_WG_MIN_SEQ:
        return fit
    if key_bits == 32:
        return fit | (TUNE_GUESS | TUNE_SELECT if p.Kp >= t.TUNE_SELECT_MIN_KP else 0)
    return fit | TUNE_GUESS | (TUNE_SELECT if p.Kp >= t.TUNE_SELECT_MIN_KP_NARROW else 0)


# ROWS (rows_path): a workgroup of at most 4 subgroups of the smallest size and 128 invocations, so each
# subgroup owns >= B/4; the candidate cap 2 pow2(K) within [128, 256] (measured in rows_path).
ROWS_SUBGROUPS = 4  # subgroups a ROWS workgroup at most
ROWS_MAX_WG = 128  # invocations a ROWS workgroup at most
ROWS_MIN_CAP, ROWS_MAX_CAP = 128, 256  # candidate cap bounds: 2 pow2(K) within them was best on an H100


def rows_path(limits: Limits, n_seq: int, length: int, k: int, force: bool = False,
              cap: Optional[int] = None, key_bits: int = 32, t: TopK1Tuning = DEFAULT) -> Optional[Path]:
    """The ROWS lowering (one subgroup per sequence) where it applies, else None. Subgroup g of a workgroup
    owns B / (subgroups) shared entries: a 256-bin histogram, then the candidates; the workgroup is at most
    4 subgroups of the smallest size the device may run, so each owns >= B/4."""
    Kp = _pow2(k)
    if not limits.has_subgroup(*ROWS_SUBGROUP_OPS) or Kp > t.ROWS_MAX_KP:
        return None
    if not force and (length > t.ROWS_MAX_L or n_seq < t.ROWS_MIN_SEQ):
        return None
    if (not force and length > t.ROWS_RADIX_MIN_L and key_bits > 8 and k >= t.SHORT_ROW_RADIX_MIN_K
            and n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ):
        return None  # radix select with the short rows' buffer and workgroup (ROWS_RADIX_MIN_L)
    smin, smax = limits.min_subgroup_size, limits.max_subgroup_size
    wg = limits.workgroup(min(ROWS_MAX_WG, ROWS_SUBGROUPS * smin))
    if wg < smax:
        return None
    # Stop resolving digits once the keys at or above the prefix fit `cap`. On an H100 (32768 x 1024,
    # 16384 x 2048) 2 pow2(K) within [128, 256] was best: K=64 0.449 ms (cap 32: 0.473), K=256 0.685 (cap
    # 512: 0.934, a longer sort).
    cap = max(Kp, cap or min(ROWS_MAX_CAP, max(ROWS_MIN_CAP, 2 * Kp)))
    # Each subgroup's region holds the histogram, then the candidates; no more shared memory than that
    # (what is left over serves as L1 cache for the re-read rows).
    nsub = wg // smin
    B = max(t.MIN_B, _pow2(nsub * max(NBINS, cap)))
    if shared_bytes(B, wg) > limits.shared_memory_bytes:
        return None
    cap = min(cap, B // nsub)
    return Path("rows", B, Kp, G=max(1, wg // limits.subgroup_size), cap=cap, workgroup=wg)


RSORT_MAX_E = 8       # items a lane at most (RS_E in rsort.comp); the workgroup is pow2(L) / 8 in [64, 512]
RSORT_MAX_WG = 512    # rows of <= 4096 (RS_IB in rsort.comp: 12 index bits)
RSORT_MIN_WG = 64     # the smallest workgroup rsort_path tries (pow2(L) / 8 in [64, 512])


def rsort_shared_words(workgroup: int, min_subgroup: int) -> int:
    """RS_SH: 256 digit counters of 16 bits per subgroup (RS_CW words) and a total per subgroup (for the
    most subgroups the workgroup may be split into)."""
    nsub = workgroup // min_subgroup
    return nsub * (NBINS // 2) + nsub


def rsort_shared_bytes(B: int, workgroup: int, rs_sh: int) -> int:
    """The shared-memory budget rsort_path sizes the workgroup by: skey[B], one word that was sidx's while RSORT
    was a mode of the ROWS modules, RS_SH counter words and s_flag (kept as it was, so plans stay the same;
    rsort.comp declares 4 bytes less: module_shared_bytes)."""
    return 4 * (B + 1 + rs_sh + 1)


def rsort_path(limits: Limits, n_seq: int, length: int, k: int, force: bool = False,
               t: TopK1Tuning = DEFAULT, key_bits: int = 32) -> Optional[Path]:
    """The RSORT lowering where it applies (rows of RSORT_MIN_L..RSORT_MAX_L, 8-bit keys ..RSORT_MAX_L8), else None."""
    Kp = _pow2(k)
    if not limits.has_subgroup(*ROWS_SUBGROUP_OPS):
        return None
    max_l = t.RSORT_MAX_L8 if key_bits == 8 else t.RSORT_MAX_L
    if not force and (Kp <= t.ROWS_MAX_KP or not t.RSORT_MIN_L <= length <= max_l or n_seq < t.RSORT_MIN_SEQ):
        return None
    # The wanted workgroup, or a smaller one (more items a lane) where its counters do not fit: devices
    # with small subgroups need 128 words for each of many subgroups.
    wg = limits.workgroup(min(RSORT_MAX_WG, max(RSORT_MIN_WG, _pow2(length) // RSORT_MAX_E)))
    while wg >= max(RSORT_MIN_WG, limits.max_subgroup_size) and -(-length // wg) <= RSORT_MAX_E:
        B = wg * -(-length // wg)  # the items: a lane's E, padded
        rs_sh = rsort_shared_words(wg, limits.min_subgroup_size)
        if rsort_shared_bytes(B, wg, rs_sh) <= limits.shared_memory_bytes:
            return Path("rsort", B, Kp, workgroup=wg, rs_sh=rs_sh)
        wg //= 2
    return None


def choose(limits: Limits, n_seq: int, length: int, k: int, *, key_bits: int = 32, force: Optional[str] = None,
           chunks: Optional[int] = None, shuffle: Optional[bool] = None, tuning: TopK1Tuning = DEFAULT) -> Choice:
    """The path a call takes on a device, why, and the numbers it picked: the device's shared memory and
    workgroup target (a CPU device gets far fewer chunks), AUTO_RULE in order or the forced path.
    `force="rows"` takes ROWS wherever the device can run it, and then `chunks`, if given, is its candidate
    cap (a knob for bench sweeps). `shuffle` None: the _sg modules from pow2(K) = SHUF_MIN_KP where the device
    has subgroup shuffles; True / False: tests and sweeps."""
    t = tuning
    if shuffle and not limits.has_subgroup(*SHUF_SUBGROUP_OPS):
        raise ValidationError(f"shuffle=True needs subgroup shuffles, which {limits.name} lacks")
    cpu = limits.device_type == "cpu"
    f = Facts(n_seq, length, k, shared=limits.shared_memory_bytes,
              target_groups=t.CPU_TARGET_GROUPS if cpu else t.TARGET_GROUPS, short_chunks=not cpu,
              workgroup=limits.workgroup(t.WORKGROUP), key_bits=key_bits, chunks=chunks, t=t, limits=limits)
    c = decide(f, force)
    if c.path in ("rows", "rsort"):
        return c
    if c.path == "gradix":
        # The survivors' sort by the register networks (top_k1_gradix_sort_sg_*, SHUF) where the device has
        # subgroup shuffles (`shuffle` False: the shared-memory networks), in a workgroup that holds pow2(K)
        # entries at GRADIX_SORT_RE a thread where the device allows (reg_fits in networks.glsl).
        # In parts (sort_parts > 1): a workgroup of a part's B entries at GRADIX_SORT_RE a thread (shared or register
        # networks alike).
        p = c.plan
        shuf = limits.has_subgroup(*SHUF_SUBGROUP_OPS) if shuffle is None else bool(shuffle)
        if p.sort_parts > 1:  # B >= GRADIX_SORT_MIN_RUN
            wg = limits.workgroup(p.B // GRADIX_SORT_RE)
        else:
            wg = limits.workgroup(max(p.sort_wg, p.Kp // GRADIX_SORT_RE)) if shuf else p.sort_wg
        return dataclasses.replace(c, plan=dataclasses.replace(p, shuf=shuf, sort_wg=wg))
    if c.plan.radix:  # forced radix too: the same chunks, the workgroup its sort wants
        c = dataclasses.replace(c, plan=radix_sort_wg(limits, c.plan, n_seq, length, k, key_bits, t))
    shuf = shuffle
    if shuf is None:
        shuf = limits.has_subgroup(*SHUF_SUBGROUP_OPS) and c.plan.Kp >= t.SHUF_MIN_KP
    return dataclasses.replace(c, plan=dataclasses.replace(c.plan, shuf=bool(shuf) and c.plan.path in ("seg", "filter")))


def radix_sort_entries(p: Path, n_seq: int, length: int, k: int, key_bits: int, t: TopK1Tuning = DEFAULT) -> int:
    """Entries a radix chunk's final sort takes (compact.glsl's max(Kp, pow2(c)) for the c keys radix.comp collects):
    about pow2(K) where the chunk is read again cheaply (<= 4 B) or TUNE_FIT stops there; on chunks of >= SAMPLE_MIN_LEN
    pow2 of the sampled guess's K + K/2 + 64 keys and a quarter more (its count varies by about a tenth: 64 x 131072
    fp16 K=1171 sorted 4096 in enough chunks that 512 lost 13%); else up to the buffer's B."""
    if p.chunk_len <= 4 * p.B or tune_bits(p, n_seq, length, key_bits, t) & TUNE_FIT:
        return p.Kp
    if p.chunk_len >= SAMPLE_MIN_LEN:
        guess = k + k // 2 + 64
        return min(p.B, max(p.Kp, _pow2(guess + guess // 4)))
    return p.B


def radix_sort_wg(limits: Limits, p: Path, n_seq: int, length: int, k: int, key_bits: int,
                  t: TopK1Tuning = DEFAULT) -> Path:
    """A radix plan whose final sort takes more than GRADIX_SORT_RE entries a thread (a 4096-entry sort in 512): its
    workgroup grows to sort entries / RE, up to RADIX_SORT_WG and the device's (radix.comp's shared memory does not
    grow with it); its chunks stay, in whole steps of the new workgroup (docs/tuning/top_k1.md#radix_sort_wg)."""
    want = min(t.RADIX_SORT_WG, radix_sort_entries(p, n_seq, length, k, key_bits, t) // GRADIX_SORT_RE)
    wg = limits.workgroup(want) if want > p.workgroup else p.workgroup
    if wg <= p.workgroup:
        return p
    step = wg * EPI
    chunk_len = -(-p.chunk_len // step) * step
    if -(-length // chunk_len) != p.chunks:
        return p
    return dataclasses.replace(p, workgroup=wg, chunk_len=chunk_len, cap=min(p.B, max(p.cap, wg)))


def device_path(limits: Limits, n_seq: int, length: int, k: int, **kw) -> Path:
    """choose()'s Path."""
    return choose(limits, n_seq, length, k, **kw).plan
