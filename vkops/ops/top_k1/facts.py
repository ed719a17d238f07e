"""TOP_K1's facts of one call (pure): a shape on a device under a tuning, with what the path rule (paths.py)
reads, each computed once and only when asked: pow2(K), the shared buffer B, each path's sizing (sizing.py) and
the filter's chunks, whose constants are here (what the kernels and the merge fix; no tuning changes them)."""
from __future__ import annotations

from functools import cached_property
from typing import Optional

from ...limits import Limits
from .tuning import DEFAULT, TopK1Tuning
from .sizing import (EPI, RSORT_MAX_E, RSORT_MAX_WG, Path, _pow2, buffer_entries, gradix_bracket_cap, gradix_path,
                     merge_group, rows_path, rsort_path, shared_bytes)

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
        t = self.t  # more than GRADIX_FEW_SEQ rows: GRADIX_MANY_TARGET_GROUPS (bracketed 32-bit keys:
        # GRADIX_BRACKET_MANY_TARGET_GROUPS); a CPU: its own target
        many = t.GRADIX_BRACKET_MANY_TARGET_GROUPS if self.key_bits == 32 and self.bracket_cap > 0 \
            else t.GRADIX_MANY_TARGET_GROUPS
        groups = (many if self.n_seq > t.GRADIX_FEW_SEQ else t.GRADIX_TARGET_GROUPS) \
            if self.short_chunks else self.target_groups
        return gradix_path(self.n_seq, self.length, self.k, shared=self.shared, workgroup=self.WG,
                           target_groups=groups, chunks=self.chunks, t=self.t)

    @property
    def gradix_auto(self) -> bool:
        """The rule takes GRADIX: GRADIX_MIN_KP set (0: never) and reached (GRADIX_MIN_KP16 for 16-bit keys on few
        rows), rows of >= GRADIX_MIN_L, either few
        (<= GRADIX_FEW_SEQ) rows of >= GRADIX_FEW_MIN_L, or 16/32-bit keys in rows the rank sort takes (<=
        GRADIX_RANK_MAX_SEQ) from pow2(K) = GRADIX_RANK_MIN_KP, or rows radix select cannot take (else the global
        sort: pow2(K) > B/2 on rows past LARGE_K_ONE_CHUNK_MAX_L), or 8/16-bit keys from K = GRADIX_MIN_K (16-bit ones
        not on GRADIX_MIN_K16_RADIX_MIN_SEQ.._MAX_SEQ rows of <= GRADIX_MIN_K16_RADIX_MAX_L to pow2(K) =
        GRADIX_MIN_K16_RADIX_MAX_KP: radix select's packed sort won there), or 16/32-bit
        keys in rows of >= GRADIX_LONG_MIN_L from K >= GRADIX_LONG_MIN_K16 / GRADIX_LONG_MIN_K (32-bit keys where GRADIX
        brackets the K-th key, gradix_bracket_cap: GRADIX_BRACKET_LONG_MIN_K on up to GRADIX_BRACKET_LONG_MAX_SEQ rows,
        GRADIX_BRACKET_MANY_MIN_K on at least GRADIX_BRACKET_MANY_MIN_SEQ); and it fits."""
        t, bits = self.t, self.key_bits
        if bits == 16:
            long_k = t.GRADIX_LONG_MIN_K16
        elif self.bracket_cap > 0 and self.n_seq <= t.GRADIX_BRACKET_LONG_MAX_SEQ:
            long_k = t.GRADIX_BRACKET_LONG_MIN_K
        elif self.bracket_cap > 0 and self.n_seq >= t.GRADIX_BRACKET_MANY_MIN_SEQ:
            long_k = t.GRADIX_BRACKET_MANY_MIN_K
        else:
            long_k = t.GRADIX_LONG_MIN_K
        few = (self.n_seq <= t.GRADIX_FEW_SEQ and self.length >= t.GRADIX_FEW_MIN_L
               or bits > 8 and self.n_seq <= t.GRADIX_RANK_MAX_SEQ and self.Kp >= t.GRADIX_RANK_MIN_KP
               or self.global_sort)
        min_kp = min(t.GRADIX_MIN_KP, t.GRADIX_MIN_KP16) if few and bits == 16 else t.GRADIX_MIN_KP
        packed = (bits == 16 and self.length <= t.GRADIX_MIN_K16_RADIX_MAX_L
                  and self.Kp <= t.GRADIX_MIN_K16_RADIX_MAX_KP
                  and t.GRADIX_MIN_K16_RADIX_MIN_SEQ <= self.n_seq <= t.GRADIX_MIN_K16_RADIX_MAX_SEQ)
        return (t.GRADIX_MIN_KP > 0 and self.Kp >= min_kp and self.length >= t.GRADIX_MIN_L
                and (few or bits <= 16 and self.k >= t.GRADIX_MIN_K and not packed
                     or bits > 8 and self.length >= t.GRADIX_LONG_MIN_L and self.k >= long_k)
                and self.gradix is not None)

    @cached_property
    def bracket_cap(self) -> int:
        """GRADIX_BRACKET's candidates a row on this device (0: no bracket; sizing.gradix_bracket_cap)."""
        return gradix_bracket_cap(self.n_seq, self.length, self.k, self.key_bits, self.limits, self.t)

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
