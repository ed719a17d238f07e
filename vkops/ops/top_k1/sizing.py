"""TOP_K1's paths sized (pure): what the kernels fix (subgroup operations, EPI, NBINS, the TUNE_* bits, RSORT's
and the register networks' bounds), the `Path` a rule row returns, shared-memory budgets and buffers, and each
path's own sizing (merge groups, GRADIX, ROWS, RSORT, the radix push word and workgroup). paths.py's rule (AUTO_RULE,
choose, reading facts.py's Facts) picks among them and re-exports every name here; docs/tuning/top_k1.md has the measurements."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ...errors import DeviceLimitError
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


def module_shared_bytes(algorithm: str, B: int, workgroup: int, rs_sh: int = 1, digit_bits: int = 8,
                        slim: bool = False) -> int:
    """Shared memory kernels/top_k1/<algorithm>.comp declares with B buffer entries, this workgroup, (rsort)
    RS_SH counter words, (gradix_hist) digit bits and (radix) the slim build's (top_k1_radix_s*: no chunk merge, so
    no s_last) (tests/test_portability.py checks it against each module's SPIR-V)."""
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
             "gradix_psort": 2 * B, "gradix_pmerge": 0,
             # GRADIX_BRACKET: gradix_bracket's sample skey[4096], bh[512], wsum[128], b_res[8]; gradix_bcollect's 4
             # scalars; gradix_resolve's ckey/cidx[CAP] (spec constant 1, here B), the same bh, wsum, b_res, tl/trk[256]
             # and 2 scalars
             "gradix_bracket": 4096 + 512 + 128 + 8, "gradix_bcollect": 4,
             "gradix_resolve": 2 * B + GRADIX_RESOLVE_SHARED // 4}
    return 4 * (words[algorithm] - (1 if slim and algorithm == "radix" else 0))


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


# gradix_bracket.glsl's picks (its histograms: one atomic a key, no subgroup vote since session 44)
GRADIX_BRACKET_OPS = ("basic", "arithmetic")
GRADIX_BRACKET_WG = 512  # gradix_bracket and gradix_resolve: a bin a thread for each of two 256-bin histograms
GRADIX_BRACKET_SAMPLE_BLOCKS = 256  # gradix_bracket's sample: up to 256 blocks of 16 keys (SMAX)
# gradix_resolve's shared memory besides its candidates (8 bytes each): bh 2 KiB, wsum 512 B, the ties' list and
# ranks 2 KiB, b_res and 2 words (module_shared_bytes; tests/test_portability.py checks it)
GRADIX_RESOLVE_SHARED = 2048 + 512 + 2048 + 32 + 8


def gradix_bracket_cap(n_seq: int, length: int, k: int, key_bits: int, limits: Optional[Limits],
                       t: TopK1Tuning = DEFAULT) -> int:
    """GRADIX_BRACKET's candidates a row where GRADIX brackets the K-th key from a sample (0: it runs its digit
    passes): 32-bit keys in rows of >= GRADIX_BRACKET_MIN_L, 16-bit ones in rows of >= GRADIX_BRACKET_MIN_L16 (0: none)
    and at least GRADIX_BRACKET_MIN_SEQ16 rows (rows shorter than GRADIX_BRACKET_SHORT_L16: at most
    GRADIX_BRACKET_SHORT_MAX_SEQ16 rows), more rows than the rank sort takes and at most GRADIX_BRACKET_MAX_SEQ,
    rows of >= 256 (the sample's blocks), workgroups of 512 with subgroup arithmetic;
    GRADIX_BRACKET_CAP fit to gradix_resolve's shared memory, at least 64 and 1.5 times the candidates a bracket of
    +-4 sigma expects, 8 sqrt(K (L - K) / S) for a sample of S keys (more would make most rows take the exact select:
    8x300000 fp32 K=4096 0.74 ms)."""
    min_l = {32: t.GRADIX_BRACKET_MIN_L, 16: t.GRADIX_BRACKET_MIN_L16}.get(key_bits, 0)
    if (not t.GRADIX_BRACKET or limits is None or min_l == 0 or length < max(256, min_l)
            or not t.GRADIX_RANK_MAX_SEQ < n_seq <= t.GRADIX_BRACKET_MAX_SEQ
            or (key_bits == 16 and n_seq < t.GRADIX_BRACKET_MIN_SEQ16)
            or (key_bits == 16 and length < t.GRADIX_BRACKET_SHORT_L16 and n_seq > t.GRADIX_BRACKET_SHORT_MAX_SEQ16)
            or limits.workgroup(GRADIX_BRACKET_WG) != GRADIX_BRACKET_WG
            or not limits.has_subgroup(*GRADIX_BRACKET_OPS)):
        return 0
    free = limits.shared_memory_bytes - GRADIX_RESOLVE_SHARED
    cap = min(t.GRADIX_BRACKET_CAP, free // 8 // 64 * 64)
    sample = 16 * min(GRADIX_BRACKET_SAMPLE_BLOCKS, length // 16)
    return cap if cap >= 64 and 144 * k * (length - k) <= cap * cap * sample else 0  # (1.5 * 8)^2 = 144


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


def tune_bits(p: Path, n_seq: int, length: int, k: int, key_bits: int, t: TopK1Tuning = DEFAULT) -> int:
    """The TUNE_* bits of a filter path (see TUNE_GUESS above): one long radix chunk a row (of `length`
    keys); TUNE_FIT from pow2(K) = RADIX_FIT_MIN_KP on rows the sampled guess skips where K leaves pow2(K) room for
    RADIX_FIT_MIN_SLACK more keys (the K-th key's ties), the others on many rows."""
    if not (p.path == "filter" and p.radix and p.chunks == 1 and p.chunk_len > 4 * p.B):
        return 0
    # (at pow2(K) = B the kernel's two stops are the same)
    fit = TUNE_FIT if (t.RADIX_FIT_MIN_KP <= p.Kp < p.B and 4 * p.B < length < SAMPLE_MIN_LEN
                       and k + t.RADIX_FIT_MIN_SLACK <= p.Kp) else 0
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


def radix_sort_entries(p: Path, n_seq: int, length: int, k: int, key_bits: int, t: TopK1Tuning = DEFAULT) -> int:
    """Entries a radix chunk's final sort takes (compact.glsl's max(Kp, pow2(c)) for the c keys radix.comp collects):
    about pow2(K) where the chunk is read again cheaply (<= 4 B) or TUNE_FIT stops there; on chunks of >= SAMPLE_MIN_LEN
    pow2 of the sampled guess's K + K/2 + 64 keys and a quarter more (its count varies by about a tenth: 64 x 131072
    fp16 K=1171 sorted 4096 in enough chunks that 512 lost 13%); else up to the buffer's B."""
    if p.chunk_len <= 4 * p.B or tune_bits(p, n_seq, length, k, key_bits, t) & TUNE_FIT:
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
    if want <= p.workgroup or limits.workgroup(want) <= p.workgroup:
        return p
    wg = limits.workgroup(want)
    step = wg * EPI
    chunk_len = -(-p.chunk_len // step) * step
    if -(-length // chunk_len) != p.chunks:
        return p
    return dataclasses.replace(p, workgroup=wg, chunk_len=chunk_len, cap=min(p.B, max(p.cap, wg)))
