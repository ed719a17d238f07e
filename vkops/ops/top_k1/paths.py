"""DML_TOP_K1's lowering rules (pure): which path a call takes on a device, with how many chunks,
workgroups and shared entries. ops/top_k1.py lowers the chosen Path to dispatches; the numbers in the
comments are the measurements that set each rule."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ...errors import DeviceLimitError, ValidationError
from ...limits import Limits

# Wanted workgroup size; Limits.workgroup() gives what the device allows (128 at Vulkan's minimum). On an
# H200 the filter path ran 10-20% faster with 512 than with 256, and 1024 was slower.
WORKGROUP = 512
# filter: split rows into chunks until about this many workgroups run. On an H100 (132 SMs) 256 beat
# 1024 by 1.2-1.5x on 64 x 2^20 and 1 x 2^26 rows (longer chunks amortize the seed and the sort, and
# fewer candidates are merged), and beat 128 and 64 too.
TARGET_GROUPS = 256
# ROWS (one subgroup per sequence, kernels/top_k1/rows.comp) for rows of at most ROWS_MAX_L elements,
# pow2(K) <= ROWS_MAX_KP, and at least ROWS_MIN_SEQ of them (fewer leave most of a GPU idle). On an H100
# (bench_top_k1.py --grid rows) it beat SEG and radix select 1.1-11x on 32768 x 1024, 16384 x 2048 and
# 4096 x 4096 for K <= 256, and lost to radix select on 2048 x 8192 (0.168 vs 0.102 ms at K=8).
ROWS_MAX_L = 4096
# The ROWS and RSORT modules (rows.comp, rsort.comp) declare these subgroup operations (not guaranteed by
# Vulkan 1.1; rows.comp uses no shuffle, but the rule stays as it was).
ROWS_SUBGROUP_OPS = ("basic", "ballot", "arithmetic", "shuffle")
ROWS_MAX_KP = 256
ROWS_MIN_SEQ = 512
# ... but rows longer than ROWS_RADIX_MIN_L with keys wider than 8 bits, K >= SHORT_ROW_RADIX_MIN_K, on at least
# RADIX_ONE_CHUNK_WG_MIN_SEQ rows go to radix select with the short rows' buffer and workgroup (below): since
# session 16 made those small it wins there. H100, session 17, one process, GPU ms ROWS -> radix select (B 512,
# workgroups of 128): fp32 4096 x 4096 K=8 / 64 / 256 0.137 / 0.143 / 0.220 -> 0.073 / 0.074 / 0.121, 16384 x 2048
# K=2 / 64 / 256 0.250 / 0.329 / 0.450 -> 0.141 / 0.194 / 0.319, 8192 x 3000 K=64 / 256 0.225 / 0.325 -> 0.120 /
# 0.205, 16384 x 1700 / 1800 / 2047 K=64 0.288 / 0.304 / 0.716 -> 0.219 / 0.195 / 0.239; fp16 4096 x 4096 K=8 / 64
# / 256 0.107 / 0.139 / 0.186 -> 0.062 / 0.081 / 0.127, 16384 x 2048 K=8 / 256 0.222 / 0.434 -> 0.166 / 0.398;
# int32 4096 x 4096 K=64 0.115 -> 0.054. Not on shorter rows (fp32 K=64 on rows of 1100 / 1280 / 1500 / 1536 /
# 1600: 0.205 / 0.220 / 0.254 / 0.254 / 0.271 -> 0.289 / 0.288 / 0.295 / 0.293 / 0.284, though K=8 and 256 and
# int32 won at 1500), nor for 8-bit keys (uint8 4096 x 4096 K=256 0.080 -> 0.122), nor at K=1 (SEG, the
# alternative on rows of 2048, ran 0.310 against ROWS' 0.087 in session 10).
ROWS_RADIX_MIN_L = 1600
# The top_k1_*_sg_* modules (SHUF=1: seg.comp, filter.comp, radix.comp) declare these: the sorting networks'
# strides below 4 x the subgroup size run in registers and subgroup shuffles instead of shared memory and
# workgroup barriers. Planned from pow2(K) = SHUF_MIN_KP. H100, session 13, GPU ms: K=1024 LLM rows 7-12%
# faster (fp16 1 x 151936 0.050 -> 0.046), 4096 x 32768 K=1024 0.743 -> 0.658; but at K <= 256 the registers cost the whole kernel
# occupancy (4096 x 32768 K=64 0.274 -> 0.310, K=256 0.339 -> 0.410; LLM K=256 10-20% slower). K=512 unmeasured.
SHUF_SUBGROUP_OPS = ("basic", "shuffle")
SHUF_MIN_KP = 1024
EPI = 16  # elements per thread per filter iteration: whole 16-byte loads for every dtype (EPI in filter.comp)
# pow2(K) from which filter chunks use radix select: on an H200 it halved K=256 and K=1024.
RADIX_MIN_KP = 128
# ... and from pow2(K) = 64 on chunks of at most RADIX_SHORT_CHUNK_B * B elements, where the filter's
# fixed cost per chunk (its seed and final compaction each sort 512 entries for K = 64) weighs most. H100,
# 2026-11-23 (7), same call: 4096 x 32768 (one 32768 chunk a row) K=64 fp32 0.473 -> 0.400 ms, fp16
# 0.498 -> 0.358; every fp16 LLM cell at K=50 (chunks of 8192-16384) 0.76-0.98x the filter's time; but
# chunks of 2^18 (64 x 2^20, 1 x 2^26) 0.139 -> 0.144 and 0.206 -> 0.211: there the filter stays.
RADIX_SHORT_MIN_KP = 64
# One chunk a row by radix select (long rows) keeps a buffer of max(4 * pow2(K), this) entries instead of
# the device's largest: on an H100, 4096 x 32768 K=256 0.400 -> 0.331 ms (fp16 0.399 -> 0.344) with 1024
# instead of 2048 (shared memory decides how many workgroups an SM holds).
RADIX_ONE_CHUNK_MIN_B = 1024
# ... and, for pow2(K) <= 256 on many rows (many waves of workgroups), workgroups of 256 instead of 512.
# H100, session 13, same build, GPU ms: 4096 x 32768 K=64 0.274 -> 0.250, K=256 0.339 -> 0.317 (fp16 0.302 ->
# 0.270 / 0.349 -> 0.315, uint8 0.228 -> 0.211 / 0.281 -> 0.260). Not at K=1024 (0.657 -> 0.985), nor on
# LLM rows' one chunk (1 x 32000 K=50 0.027 -> 0.038, 256 x 151936 K=256 0.080 -> 0.097), nor on other paths
# (64 x 2^20 K=256 0.125 -> 0.349, 4096 x 32768 K=8 0.236 -> 0.322).
RADIX_ONE_CHUNK_WG = 256
RADIX_ONE_CHUNK_WG_MAX_KP = 256
RADIX_ONE_CHUNK_WG_MIN_SEQ = 1024
# ... and there, for 32-bit keys, a buffer of max(2 * pow2(K), this) entries: the guess's ~1.5K + 64 keys
# still fit, and the workgroup's shared memory falls from ~10 to ~6 KiB. H100, session 16, same call, GPU ms:
# fp32 4096 x 32768 K=64 0.252 -> 0.241, K=256 0.293 -> 0.283, 2048 x 65536 K=256 0.297 -> 0.277, 1024 x
# 32768 K=256 0.114 -> 0.095. Not for 16- and 8-bit keys (fp16 K=64 0.248 -> 0.255, uint8 K=256 0.233 ->
# 0.238): their ties and coarser guesses overflow a small buffer more often. With the workgroups below, a
# later call: fp32 4096 x 32768 K=50 / 64 / 100 / 128 / 200 / 256 0.243 / 0.251 / 0.274 / 0.284 / 0.312 /
# 0.292 -> 0.233 / 0.237 / 0.246 / 0.255 / 0.293 / 0.282, int32 K=256 0.281 -> 0.271, 2048 x 65536 K=128
# 0.248 -> 0.233 (docs/tuning/top_k1.md, session 16, footnote 13).
RADIX_ONE_CHUNK_WIDE_B = 512
# ... and, for 32-bit keys with pow2(K) <= 128, workgroups of 128 (same call: fp32 4096 x 32768 K=64 0.242 ->
# 0.238, K=128 0.274 -> 0.255, 1024 x 32768 K=64 0.076 -> 0.068, int32 K=128 0.247 -> 0.241), not at K=256
# (0.283 -> 0.342) nor for narrower keys (fp16 K=64 0.246 -> 0.362).
RADIX_ONE_CHUNK_WIDE_SMALL_WG = 128
RADIX_ONE_CHUNK_WIDE_SMALL_WG_MAX_KP = 128
# Short rows by radix select (one chunk of at most 4 B, read a few times; longer than RADIX_SHORT_ROWS_MIN_L)
# on as many rows, pow2(K) <= 256, every dtype: a buffer of 512 and workgroups of 256, then 128 (it collects
# at most max(pow2(K), 512) keys). H100, session 16, same call, GPU ms,
# 2048 x 8192 K=8 / 64 / 256: fp32 0.100 / 0.100 / 0.152 -> 0.084 / 0.085 / 0.113, fp16 0.076 / 0.112 / 0.143
# -> 0.057 / 0.091 / 0.095 (B 1024 with the same workgroups: within 5% of it; B 1024 and workgroups of 512:
# 0.090 / 0.091 / 0.129 and 0.071 / 0.103 / 0.124).
RADIX_SHORT_ROWS_B = 512
# Workgroups of 128 since session 17 (same call as ROWS_RADIX_MIN_L, GPU ms with 256 -> 128): fp32 2048 x 8192
# K=8 / 64 / 256 0.084 / 0.084 / 0.112 -> 0.066 / 0.070 / 0.100, fp16 K=64 / 256 0.090 / 0.094 -> 0.077 / 0.092;
# fp32 16384 x 2048 K=2 / 64 / 256 0.177 / 0.250 / 0.475 -> 0.141 / 0.194 / 0.319, 4096 x 4096 K=256 0.151 ->
# 0.121 (K=8 / 64 0.072 / 0.073 -> 0.073 / 0.074); fp16 4096 x 4096 K=8 / 256 0.075 / 0.145 -> 0.062 / 0.127.
RADIX_SHORT_ROWS_WG = 128
RADIX_SHORT_ROWS_MIN_L = ROWS_RADIX_MIN_L + 1
RADIX_SHORT_CHUNK_B = 16
# One radix chunk a row on >= RADIX_ONE_CHUNK_WG_MIN_SEQ rows (a few waves of workgroups: 4096 x 32768) sets
# bits of kernels/top_k1/radix.comp's push word `tune` (tune_bits below):
# TUNE_GUESS: the sampled guess aims at K + max(K/2, 64) keys instead of K + K/2 + 64, so fewer are
# sorted; a missed guess (a second read of one row among thousands) costs little there. H100, session 14,
# GPU ms, three calls: fp16 K=64 0.268 -> 0.248 (0.269 -> 0.248), uint8 K=64 0.213 -> 0.202, K=256 0.262 ->
# 0.239, fp32 K=256 0.313 -> 0.301 (0.296 -> 0.293 with TUNE_SELECT); but fp32 K=64 0.250 -> 0.254, 0.252
# -> 0.255, 0.250 -> 0.256 (a second read of 4-byte keys costs more), so 32-bit keys take it from
# TUNE_SELECT_MIN_KP, as TUNE_SELECT. Not on few rows, where one row's second read sets a dispatch's time:
# 256 x 151936 fp16 K=50 0.068 -> 0.138, K=256 0.077 -> 0.125.
# TUNE_SELECT: the buffer's compaction first resolves the K-th key by 8-bit digits until the keys at or
# above its prefix fit pow2(K), moves those to the front and sorts pow2(K) entries (select_front), instead
# of reducing pow2(c) entries (~448 collected at K=256, ~1536 at K=1024). Same call, fp32 4096 x 32768
# K=256 0.314 -> 0.296, K=1024 0.657 -> 0.553; fp16 K=256 0.312 -> 0.315, uint8 K=256 0.256 -> 0.262: so
# from pow2(K) = 256 for 32-bit keys, from 1024 for narrower ones (fp16 K=1024 0.667 -> 0.644, uint8 0.574
# -> 0.582, both bits, the rule's call). Where the sort is not what the dispatch
# waits for it lost: on every compaction it cost 4096 x 32768 K=8 (threshold filter) 0.237 -> 0.281,
# 64 x 2^20 K=64 0.133 -> 0.151, LLM fp16 K=1024 rows (1 x 151936, 8 x 128256) 0.046 -> 0.049-0.050.
TUNE_GUESS, TUNE_SELECT = 1, 2
TUNE_SELECT_MIN_KP = 256
TUNE_SELECT_MIN_KP_NARROW = 1024
# WAVE_MIN_SEQ..WAVE_MAX_SEQ rows of at most WAVE_MAX_L (LLM vocabularies) with pow2(K) in
# [RADIX_SHORT_MIN_KP, WAVE_MAX_KP] make about one wave of workgroups (target_groups / 2) instead of
# target_groups, by radix select. H100, session 12 (bench_top_k1.py --grid llm --force radix --sweep-chunks
# 1,2,3,4,6), GPU ms fp16 / fp32, the previous path -> this one: 64 rows, 4 chunks (1 for 32000) -> 2:
# 128256 K=50 0.037 / 0.043 -> 0.028 / 0.026, K=256 0.050 / 0.047 -> 0.036 / 0.035; 151936 K=50 0.046 /
# 0.044 (threshold filter) -> 0.030 / 0.032, K=256 0.050 / 0.047 -> 0.039 / 0.040; 32000 K=50 0.022 / 0.028
# -> 0.017 / 0.023, K=256 0.030 / 0.029 -> 0.024 / 0.024. 256 rows keep one chunk, by radix select at K=50
# too: 151936 0.092 / 0.084 (filter) -> 0.067 / 0.072, 128256 0.082 / 0.076 -> 0.058 / 0.080. Not at K=1024
# (64 x 151936: 1 chunk 0.062, 2: 0.111, 3: 0.076) nor measured below pow2(K) = 64.
WAVE_MIN_SEQ = 32
WAVE_MAX_SEQ = 256
WAVE_MAX_L = 1 << 18
WAVE_MAX_KP = 256
SHORT_ROW_RADIX_MIN_K = 2


def _pow2(x: int) -> int:
    return 1 << max(0, int(x) - 1).bit_length()


# Two-level merges (merge_group) where they save at least this many loads of the last workgroup.
MERGE_GROUP_MIN_SAVED = 4


def merge_loads(runs: int, per_load: int) -> int:
    """Loads (one bitonic merge each) in which merge_cand reduces `runs` sorted runs, `per_load` a load
    (the first load takes that many, each next one per_load - 1 new runs beside the result)."""
    return 0 if runs <= 1 else -(-(runs - 1) // (per_load - 1))


def merge_group(chunks: int, B: int, Kp: int) -> int:
    """Chunks a first-level merge group (0: one level). Several chunks of a row hand their sorted runs to
    the last one to finish, which merges B / Kp of them a load, one after the other. In two levels the last
    chunk of each group merges its group's runs (groups in parallel, while other chunks still run), and the
    last group merges the groups' results: loads(G) + loads(chunks / G) in a row instead of loads(chunks),
    plus a write and a counter. Taken where that saves at least MERGE_GROUP_MIN_SAVED loads."""
    per = B // Kp
    one = merge_loads(chunks, per)
    best, best_g = one, 0
    for g in range(2, chunks):
        two = merge_loads(g, per) + merge_loads(-(-chunks // g), per) + 1
        if two < best:
            best, best_g = two, g
    return best_g if one - best >= MERGE_GROUP_MIN_SAVED else 0


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
    workgroup: int = WORKGROUP
    rs_sh: int = 1       # rsort: words of its counters (RS_SH in kernels/top_k1/rsort.comp)
    shuf: bool = False   # seg, filter: the top_k1_*_sg_* modules (networks' short strides in shuffles)


NBINS = 256  # radix histogram bins (NBINS in kernels/top_k1/head.glsl)
MIN_B = 256


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


def buffer_entries(shared: int, workgroup: int = WORKGROUP) -> int:
    """Largest power of two B <= 2048 (and >= the workgroup: a filter step buffers one entry per thread)
    whose shared arrays fit. 2048 also under NVIDIA's 48 KiB: on an H200, B=2048 (16 KiB, more
    workgroups per SM) streamed 1.5-2x faster than B=4096 on every filter shape of bench_top_k1.py."""
    b = 2048
    while b > max(MIN_B, workgroup) and shared_bytes(b, workgroup) > shared:
        b //= 2
    if shared_bytes(b, workgroup) > shared:
        raise DeviceLimitError(f"TOP_K1 needs {shared_bytes(b, workgroup)} bytes of shared memory (B={b} entries, "
                               f"workgroup {workgroup}); maxComputeSharedMemorySize is {shared}")
    return b


def choose_path(n_seq: int, length: int, k: int, shared: int, *, target_groups: int = 1024,
                force: Optional[str] = None, chunks: Optional[int] = None, workgroup: int = WORKGROUP,
                short_chunks: bool = False, key_bits: int = 32) -> Path:
    """Pick the lowering. `force` / `chunks` exist for tests (exercise every path on small data); `key_bits`
    (the element width) sets the buffer and workgroup of one radix chunk a row on many rows."""
    WG = workgroup
    B = buffer_entries(shared, WG)
    Kp = _pow2(k)
    P = _pow2(length)
    # Short rows (B/2 < L <= 4B, one chunk each) go to radix select from K = 2: it reads the row a few
    # times but sorts about K entries. On an H100 (16384 x 2048, 4096 x 4096, 8192 x 1500) it beat
    # SEG's whole-row sort 1.1-1.9x at K = 2..1024 and the threshold filter 1.2-1.6x at K = 8 and 64;
    # at K=1 both of those won. Rows of <= B/2 stay in SEG, several per workgroup (it won there).
    short_radix = B // 2 < P and length <= 4 * B and SHORT_ROW_RADIX_MIN_K <= k and Kp <= B // 2
    path = force or ("seg" if P <= B and not short_radix else "filter" if Kp <= B // 2 else "sort")
    # Large K: a threshold filter compacts its buffer again and again; a radix select reads the
    # chunk a few times and sorts once.
    radix = path == "radix" or (force is None and path == "filter" and (Kp >= RADIX_MIN_KP or short_radix))
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
            wave = (short_chunks and WAVE_MIN_SEQ <= n_seq <= WAVE_MAX_SEQ and length <= WAVE_MAX_L
                    and RADIX_SHORT_MIN_KP <= Kp <= WAVE_MAX_KP)
            if wave:
                # Tens of vocabulary-sized rows: about one wave of workgroups (target_groups / 2), chunks
                # of whole steps, rows under 8 steps too; radix select from pow2(K) = 64 (measured so).
                want, min_chunk = -(-(target_groups // 2) // n_seq), step
            chunks = max(1, min(want, -(-length // min_chunk), max(65536 // k, target_groups // 2 // n_seq)))
        chunk_len = -(-length // chunks)
        chunk_len = -(-chunk_len // step) * step
        chunks = -(-length // chunk_len)
        if force is None and Kp >= RADIX_SHORT_MIN_KP and (chunk_len <= RADIX_SHORT_CHUNK_B * B or wave):
            radix = True
        one_chunk = radix and force is None and chunks == 1
        many = Kp <= RADIX_ONE_CHUNK_WG_MAX_KP and n_seq >= RADIX_ONE_CHUNK_WG_MIN_SEQ
        if one_chunk and chunk_len <= 4 * B and length >= RADIX_SHORT_ROWS_MIN_L and many:
            # Many short rows, each read a few times: at most max(Kp, 512) keys collected, so a small
            # buffer and workgroup let an SM hold more workgroups.
            WG = min(WG, RADIX_SHORT_ROWS_WG)
            B = max(min(B, RADIX_SHORT_ROWS_B), 2 * Kp, WG)
        elif one_chunk and chunk_len > 4 * B:
            # One long chunk a row by radix select: its buffer only needs room for the sampled guess's
            # ~1.5K + 64 keys, and a smaller one lets an SM hold more workgroups.
            B = max(min(B, 4 * Kp), RADIX_ONE_CHUNK_MIN_B)
            if many:
                WG = min(WG, RADIX_ONE_CHUNK_WG)
                if key_bits == 32:
                    if Kp <= RADIX_ONE_CHUNK_WIDE_SMALL_WG_MAX_KP:
                        WG = min(WG, RADIX_ONE_CHUNK_WIDE_SMALL_WG)
                    B = max(min(B, max(2 * Kp, RADIX_ONE_CHUNK_WIDE_B)), WG)
        # Compact early for small K: the threshold rises after fewer buffered elements, and each
        # compaction sorts fewer entries.
        cap = min(B, max(512, WG, 4 * Kp))  # >= WG: the seeding step buffers one per thread
        return Path("filter", B, Kp, chunks=chunks, chunk_len=chunk_len, cap=cap, radix=radix, workgroup=WG,
                    merge_group=merge_group(chunks, B, Kp))
    if path == "sort":
        return Path("sort", B, Kp, P=max(P, 2 * B), workgroup=WG)
    raise ValueError(force)


def tune_bits(p: Path, n_seq: int, key_bits: int) -> int:
    """The TUNE_* bits of a filter path (see TUNE_GUESS above): one long radix chunk a row on many rows."""
    if not (p.path == "filter" and p.radix and p.chunks == 1 and p.chunk_len > 4 * p.B
            and n_seq >= RADIX_ONE_CHUNK_WG_MIN_SEQ):
        return 0
    if key_bits == 32:
        return TUNE_GUESS | TUNE_SELECT if p.Kp >= TUNE_SELECT_MIN_KP else 0
    return TUNE_GUESS | (TUNE_SELECT if p.Kp >= TUNE_SELECT_MIN_KP_NARROW else 0)


def rows_path(limits: Limits, n_seq: int, length: int, k: int, force: bool = False,
              cap: Optional[int] = None, key_bits: int = 32) -> Optional[Path]:
    """The ROWS lowering (one subgroup per sequence) where it applies, else None. Subgroup g of a workgroup
    owns B / (subgroups) shared entries: a 256-bin histogram, then the candidates; the workgroup is at most
    4 subgroups of the smallest size the device may run, so each owns >= B/4."""
    Kp = _pow2(k)
    if not limits.has_subgroup(*ROWS_SUBGROUP_OPS) or Kp > ROWS_MAX_KP:
        return None
    if not force and (length > ROWS_MAX_L or n_seq < ROWS_MIN_SEQ):
        return None
    if (not force and length > ROWS_RADIX_MIN_L and key_bits > 8 and k >= SHORT_ROW_RADIX_MIN_K
            and n_seq >= RADIX_ONE_CHUNK_WG_MIN_SEQ):
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
    B = max(MIN_B, _pow2(nsub * max(NBINS, cap)))
    if shared_bytes(B, wg) > limits.shared_memory_bytes:
        return None
    cap = min(cap, B // nsub)
    return Path("rows", B, Kp, G=max(1, wg // limits.subgroup_size), cap=cap, workgroup=wg)


# RSORT (kernels/top_k1/rsort.comp): one workgroup radix-sorts a whole row in
# shared memory. Taken for pow2(K) above ROWS' largest on rows of RSORT_MIN_L..RSORT_MAX_L, at least
# RSORT_MIN_SEQ of them, where SEG sorted the row with a bitonic network of about 55 barrier steps and
# radix select still sorted up to 2K entries. On an H100 (2026-11-24, session 11, docs/tuning/top_k1.md,
# footnote 6), fp32 K=1024, GPU ms RSORT / the previous path: 32768 x 1024 0.84 / SEG 1.55; 64, 256, 512 rows of
# 1024 0.016 / 0.020, 0.017 / 0.020, 0.021 / 0.030; 1 x 1024 0.016 / 0.013 (so from 64 rows); 16384 x 2048
# 0.93 / radix 1.21 (fp16 0.58 / 1.27), 2048 x 2048 0.124 / 0.161; rows of 4096 (workgroups of 512) keep
# radix select: 4096 x 4096 0.66 / 0.355, 1024 x 4096 0.157 / 0.097.
RSORT_MIN_L = 513
RSORT_MAX_L = 2048
RSORT_MIN_SEQ = 64
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


def rsort_path(limits: Limits, n_seq: int, length: int, k: int, force: bool = False) -> Optional[Path]:
    """The RSORT lowering where it applies, else None."""
    Kp = _pow2(k)
    if not limits.has_subgroup(*ROWS_SUBGROUP_OPS):
        return None
    if not force and (Kp <= ROWS_MAX_KP or not RSORT_MIN_L <= length <= RSORT_MAX_L or n_seq < RSORT_MIN_SEQ):
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


def device_path(limits: Limits, n_seq: int, length: int, k: int, **kw) -> Path:
    """choose_path() with the device's shared memory and workgroup target (a CPU device gets far fewer
    chunks); ROWS where it applies. `force="rows"` takes ROWS wherever the device can run it, and then
    `chunks`, if given, is its candidate cap (a knob for bench sweeps)."""
    shuf = kw.pop("shuffle", None)  # None: the rule below; True / False: tests and sweeps
    if shuf and not limits.has_subgroup(*SHUF_SUBGROUP_OPS):
        raise ValidationError(f"shuffle=True needs subgroup shuffles, which {limits.name} lacks")
    force, chunks = kw.get("force"), kw.get("chunks")
    if force == "rsort" or (force is None and chunks is None):
        p = rsort_path(limits, n_seq, length, k, force=force == "rsort")
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
                      key_bits=kw.get("key_bits", 32))
        if p is not None:
            return p
        if force == "rows":
            raise ValidationError(f"rows path needs subgroup ballot + arithmetic + shuffle and pow2(K) <= {ROWS_MAX_KP}; "
                                  f"got K={k} on {limits.name}")
    p = choose_path(n_seq, length, k, limits.shared_memory_bytes,
                    target_groups=TARGET_GROUPS if limits.device_type != "cpu" else 64,
                    short_chunks=limits.device_type != "cpu",
                    workgroup=limits.workgroup(WORKGROUP), **kw)
    if shuf is None:
        shuf = limits.has_subgroup(*SHUF_SUBGROUP_OPS) and p.Kp >= SHUF_MIN_KP
    return dataclasses.replace(p, shuf=bool(shuf) and p.path in ("seg", "filter"))
