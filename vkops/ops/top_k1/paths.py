"""TOP_K1's path rule (pure): which path a call takes on a device, with how many chunks, workgroups and
shared entries, read from a `TopK1Tuning` (tuning.py; `DEFAULT` when none is passed). lowering.py lowers
the chosen Path to dispatches. The measurements that set each knob are in docs/tuning/top_k1.md; the
constants here are what the kernels fix (no tuning may change them)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
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
EPI = 16  # elements per thread per filter iteration: whole 16-byte loads for every dtype (EPI in filter.comp)
# Bits of kernels/top_k1/radix.comp's push word `tune` (tune_bits below), set for one radix chunk a row on
# >= RADIX_ONE_CHUNK_WG_MIN_SEQ rows. TUNE_GUESS: the sampled guess aims at K + max(K/2, 64) keys instead of
# K + K/2 + 64. TUNE_SELECT: the buffer's compaction first resolves the K-th key by 8-bit digits until the
# keys at or above its prefix fit pow2(K), moves those to the front and sorts pow2(K) entries (select_front).
# Measurements: docs/tuning/top_k1.md#tune_guess-tune_select.
TUNE_GUESS, TUNE_SELECT = 1, 2


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
    path: str            # "seg", "filter", "sort" or "rows"
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


NBINS = 256  # radix histogram bins (NBINS in kernels/top_k1/head.glsl)


def shared_bytes(B: int, workgroup: int) -> int:
    """The shared-memory budget a TOP_K1 plan with B buffer entries and this workgroup sets aside (what one
    module holding every algorithm declared until the split into kernels/top_k1/*.comp: skey/sidx[B],
    s_base[WG], hist[NBINS], s_grp[NBINS/32] and 8 scalars). buffer_entries and rows_path size B by it, so
    plans stay as they were; every module declares at most this (module_shared_bytes)."""
    return 4 * (2 * B + workgroup + NBINS + NBINS // 32 + 8)


def module_shared_bytes(algorithm: str, B: int, workgroup: int, rs_sh: int = 1) -> int:
    """Shared memory kernels/top_k1/<algorithm>.comp declares with B buffer entries, this workgroup and (rsort)
    RS_SH counter words (tests/test_portability.py checks it against each module's SPIR-V)."""
    words = {"seg": 2 * B + workgroup,                       # skey/sidx, s_base (row offsets)
             "filter": 2 * B + workgroup + 5,                # skey/sidx, s_base (seed maxima), 5 scalars
             # skey/sidx, hist, s_grp, 5 scalars (compact's stores of the threshold and s_flag, read only by
             # the threshold filter, are dead here: spirv-opt drops them and their variables)
             "radix": 2 * B + NBINS + NBINS // 32 + 5,
             "sort_tile": 2 * B, "sort_global": 0,
             "rows": 2 * B,                                  # subgroup regions of skey/sidx
             "rsort": B + rs_sh + 1}                         # skey, counters, s_flag
    return 4 * words[algorithm]


def buffer_entries(shared: int, workgroup: int = DEFAULT.WORKGROUP, t: TopK1Tuning = DEFAULT) -> int:
    """Largest power of two B <= 2048 (and >= the workgroup: a filter step buffers one entry per thread)
    whose shared arrays fit. 2048 also under NVIDIA's 48 KiB: on an H200, B=2048 (16 KiB, more
    workgroups per SM) streamed 1.5-2x faster than B=4096 on every filter shape of bench_top_k1.py."""
    b = 2048
    while b > max(t.MIN_B, workgroup) and shared_bytes(b, workgroup) > shared:
        b //= 2
    if shared_bytes(b, workgroup) > shared:
        raise DeviceLimitError(f"TOP_K1 needs {shared_bytes(b, workgroup)} bytes of shared memory (B={b} entries, "
                               f"workgroup {workgroup}); maxComputeSharedMemorySize is {shared}")
    return b


def choose_path(n_seq: int, length: int, k: int, shared: int, *, target_groups: int = 1024,
                force: Optional[str] = None, chunks: Optional[int] = None, workgroup: int = DEFAULT.WORKGROUP,
                short_chunks: bool = False, key_bits: int = 32, tuning: TopK1Tuning = DEFAULT) -> Path:
    """Pick the lowering. `force` / `chunks` exist for tests (exercise every path on small data); `key_bits`
    (the element width) sets the buffer and workgroup of one radix chunk a row on many rows."""
    t = tuning
    WG = workgroup
    B = buffer_entries(shared, WG, t)
    Kp = _pow2(k)
    P = _pow2(length)
    # Short rows (B/2 < L <= 4B, one chunk each) go to radix select from K = 2: it reads the row a few
    # times but sorts about K entries (docs/tuning/top_k1.md#short_row_radix_min_k). Rows of <= B/2 stay
    # in SEG, several per workgroup (it won there).
    short_radix = B // 2 < P and length <= 4 * B and t.SHORT_ROW_RADIX_MIN_K <= k and Kp <= B // 2
    path = force or ("seg" if P <= B and not short_radix else "filter" if Kp <= B // 2 else "sort")
    # Large K: a threshold filter compacts its buffer again and again; a radix select reads the
    # chunk a few times and sorts once.
    radix = path == "radix" or (force is None and path == "filter" and (Kp >= t.RADIX_MIN_KP or short_radix))
    if path == "radix":
        path = "filter"
    if path == "seg":
        if P > B:
            raise ValidationError(f"seg path needs pow2(L) <= {B}; got L={length}")
        return Path("seg", B, Kp, G=max(1, min(B // P, WG, n_seq)), P=P, workgroup=WG)
    if path == "filter":
        if Kp > B // 2:
            raise ValidationError(f"filter path needs pow2(K) <= {B // 2}; got K={k}")
        step = WG * EPI
        wave = False
        if chunks is None:
            # Few rows (LLM sampling: 1-64 x 32000-151936) need many chunks to fill a GPU. On an H100,
            # 1 x 151936 ran K=1 in 0.014 ms with 32 chunks vs 0.024 with 3, K=50 0.033 vs 0.045; but each
            # chunk hands K candidates to the merge and costs a sort of its own, so large K wants fewer:
            # chunks of >= 56 * pow2(K) elements. With the merge of sorted runs (merge_cand), K=1024 ran
            # best in 3 chunks (8 x 128256: 0.054 ms; 2 chunks 0.084, 4: 0.058, 8: 0.063; 1 x 151936
            # 0.054, 2: 0.058, 7: 0.063), K=256 in 8-10 (chunk lengths are whole steps). Rows under 8
            # steps stay whole (the merge costs more than it saves: 1 x 32000 K=50 0.025 ms in one chunk,
            # 0.030 in 4). Where the rows alone give more than target_groups / 2 chunks (about one
            # workgroup per SM of an H100), chunks stay at >= 64 * pow2(K): 64 x 128256 K=1024 ran 0.052-0.056
            # ms in 2 chunks, 0.075-0.080 in 3 (192 workgroups). A CPU (short_chunks False) keeps long chunks.
            # At most 65536 / K chunks (every chunk's run is merged), or about a wave of workgroups
            # (session 12 kept 128 with the two-level merge: 0.229 ms, 256 chunks 0.267): 1 x 2^26 K=1024
            # ran 0.549 ms in 128 chunks of 2^19 against 0.880 in 64 and 1.010
            # in 256; 2 x 2^25 0.368 in 2 x 64 against 0.732 in 2 x 128 (H100, session 11).
            short = short_chunks and length >= 8 * step
            per = 56 if n_seq * -(-length // (56 * Kp)) <= target_groups // 2 else 64
            min_chunk = max(step, per * Kp) if short else max(4 * B, 8 * step)
            want = -(-target_groups // n_seq)
            wave = (short_chunks and t.WAVE_MIN_SEQ <= n_seq <= t.WAVE_MAX_SEQ and length <= t.WAVE_MAX_L
                    and t.RADIX_SHORT_MIN_KP <= Kp <= t.WAVE_MAX_KP)
            if wave:
                # Tens of vocabulary-sized rows: about one wave of workgroups (target_groups / 2), chunks
                # of whole steps, rows under 8 steps too; radix select from pow2(K) = 64 (measured so).
                want, min_chunk = -(-(target_groups // 2) // n_seq), step
            chunks = max(1, min(want, -(-length // min_chunk), max(65536 // k, target_groups // 2 // n_seq)))
        chunk_len = -(-length // chunks)
        chunk_len = -(-chunk_len // step) * step
        chunks = -(-length // chunk_len)
        if force is None and Kp >= t.RADIX_SHORT_MIN_KP and (chunk_len <= t.RADIX_SHORT_CHUNK_B * B or wave):
            radix = True
        one_chunk = radix and force is None and chunks == 1
        many = Kp <= t.RADIX_ONE_CHUNK_WG_MAX_KP and n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ
        if one_chunk and chunk_len <= 4 * B and length >= t.RADIX_SHORT_ROWS_MIN_L and many:
            # Many short rows, each read a few times: at most max(Kp, 512) keys collected, so a small
            # buffer and workgroup let an SM hold more workgroups.
            WG = min(WG, t.RADIX_SHORT_ROWS_WG)
            B = max(min(B, t.RADIX_SHORT_ROWS_B), 2 * Kp, WG)
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
        cap = min(B, max(512, WG, 4 * Kp))  # >= WG: the seeding step buffers one per thread
        return Path("filter", B, Kp, chunks=chunks, chunk_len=chunk_len, cap=cap, radix=radix, workgroup=WG,
                    merge_group=merge_group(chunks, B, Kp, t))
    if path == "sort":
        return Path("sort", B, Kp, P=max(P, 2 * B), workgroup=WG)
    raise ValueError(force)


def tune_bits(p: Path, n_seq: int, key_bits: int, t: TopK1Tuning = DEFAULT) -> int:
    """The TUNE_* bits of a filter path (see TUNE_GUESS above): one long radix chunk a row on many rows."""
    if not (p.path == "filter" and p.radix and p.chunks == 1 and p.chunk_len > 4 * p.B
            and n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ):
        return 0
    if key_bits == 32:
        return TUNE_GUESS | TUNE_SELECT if p.Kp >= t.TUNE_SELECT_MIN_KP else 0
    return TUNE_GUESS | (TUNE_SELECT if p.Kp >= t.TUNE_SELECT_MIN_KP_NARROW else 0)


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
    wg = limits.workgroup(min(128, 4 * smin))
    if wg < smax:
        return None
    # Stop resolving digits once the keys at or above the prefix fit `cap`. On an H100 (32768 x 1024,
    # 16384 x 2048) 2 pow2(K) within [128, 256] was best: K=64 0.449 ms (cap 32: 0.473), K=256 0.685 (cap
    # 512: 0.934, a longer sort).
    cap = max(Kp, cap or min(256, max(128, 2 * Kp)))
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
               t: TopK1Tuning = DEFAULT) -> Optional[Path]:
    """The RSORT lowering where it applies, else None."""
    Kp = _pow2(k)
    if not limits.has_subgroup(*ROWS_SUBGROUP_OPS):
        return None
    if not force and (Kp <= t.ROWS_MAX_KP or not t.RSORT_MIN_L <= length <= t.RSORT_MAX_L or n_seq < t.RSORT_MIN_SEQ):
        return None
    # The wanted workgroup, or a smaller one (more items a lane) where its counters do not fit: devices
    # with small subgroups need 128 words for each of many subgroups.
    wg = limits.workgroup(min(RSORT_MAX_WG, max(64, _pow2(length) // RSORT_MAX_E)))
    while wg >= max(64, limits.max_subgroup_size) and -(-length // wg) <= RSORT_MAX_E:
        B = wg * -(-length // wg)  # the items: a lane's E, padded
        rs_sh = rsort_shared_words(wg, limits.min_subgroup_size)
        if rsort_shared_bytes(B, wg, rs_sh) <= limits.shared_memory_bytes:
            return Path("rsort", B, Kp, workgroup=wg, rs_sh=rs_sh)
        wg //= 2
    return None


def device_path(limits: Limits, n_seq: int, length: int, k: int, *, tuning: TopK1Tuning = DEFAULT, **kw) -> Path:
    """choose_path() with the device's shared memory and workgroup target (a CPU device gets far fewer
    chunks); ROWS where it applies. `force="rows"` takes ROWS wherever the device can run it, and then
    `chunks`, if given, is its candidate cap (a knob for bench sweeps)."""
    t = tuning
    shuf = kw.pop("shuffle", None)  # None: the rule below; True / False: tests and sweeps
    if shuf and not limits.has_subgroup(*SHUF_SUBGROUP_OPS):
        raise ValidationError(f"shuffle=True needs subgroup shuffles, which {limits.name} lacks")
    force, chunks = kw.get("force"), kw.get("chunks")
    if force == "rsort" or (force is None and chunks is None):
        p = rsort_path(limits, n_seq, length, k, force=force == "rsort", t=t)
        if p is not None:
            return p
        if force == "rsort":
            raise ValidationError(f"rsort path needs subgroup ballot + arithmetic + shuffle, rows of <= {RSORT_MAX_E} "
                                  f"elements an invocation and its counters in shared memory (128 words a "
                                  f"subgroup); got L={length} on {limits.name} (subgroups of "
                                  f"{limits.min_subgroup_size}-{limits.max_subgroup_size}, "
                                  f"{limits.shared_memory_bytes} bytes of shared memory)")
    if force == "rows" or (force is None and chunks is None):
        p = rows_path(limits, n_seq, length, k, force=force == "rows", cap=chunks if force == "rows" else None,
                      key_bits=kw.get("key_bits", 32), t=t)
        if p is not None:
            return p
        if force == "rows":
            raise ValidationError(f"rows path needs subgroup ballot + arithmetic + shuffle and pow2(K) <= {t.ROWS_MAX_KP}; "
                                  f"got K={k} on {limits.name}")
    p = choose_path(n_seq, length, k, limits.shared_memory_bytes,
                    target_groups=t.TARGET_GROUPS if limits.device_type != "cpu" else t.CPU_TARGET_GROUPS,
                    short_chunks=limits.device_type != "cpu",
                    workgroup=limits.workgroup(t.WORKGROUP), tuning=t, **kw)
    if shuf is None:
        shuf = limits.has_subgroup(*SHUF_SUBGROUP_OPS) and p.Kp >= t.SHUF_MIN_KP
    return dataclasses.replace(p, shuf=bool(shuf) and p.path in ("seg", "filter"))
