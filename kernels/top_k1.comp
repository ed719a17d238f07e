#version 450
// DML TOP_K1: the best K (value, index) pairs of every sequence along an axis, sorted, ties by index.
//
// Every element becomes an order-preserving uint32 key (NaN canonical and highest, -0.0 == +0.0,
// complemented for INCREASING), so one unsigned compare of (key desc, index asc) ranks every dtype
// and makes ties come out stable. Bitonic top-k after Shanbhag, Pirk & Madden (SIGMOD 2018): sort
// runs of Kp = pow2(K) in shared memory, then repeatedly keep the better half of two runs
// (max(A[j], B[j]) of a descending and an ascending run) and rebuild it into a sorted run.
//
// Modes (specialization constant MODE):
//   SEG    rows of <= B elements: G whole sequences per workgroup, loaded, reduced, written.
//   FILTER long rows, Kp <= B/2: a workgroup streams a chunk of a sequence once; an element enters
//          the shared buffer only if it beats the K-th best seen so far (the threshold); a full
//          buffer is reduced to its top Kp. With several chunks per sequence each writes its top K
//          to `cand`, sorted, and the last workgroup of the sequence to finish (atomic counter)
//          merges those sorted runs (merge_cand) and writes the outputs: one dispatch, input read once.
//          Many chunks merge in two levels: groups of pc.G chunks first, by their last to finish.
//          K = 1 (argmax_chunk) shares no threshold: each thread keeps its own best, no barrier.
//          The threshold starts from the first step: for K <= WG/32 the worst of K thread groups'
//          best keys, else the K-th of the threads' bests (a sort of WG entries).
//          With RADIX (large K) a chunk is instead reduced by radix select (radix_topk): a few
//          reads of the chunk and one sort, instead of compacting the buffer again and again.
//   ROWS   (ROWS variants only) many short rows: one subgroup per sequence (top_k1_rows.glsl).
//   SORT_* K too large for the buffer: a global bitonic sort of (key, index) rows in `cand`
//          (tile sort, global compare-exchange steps, shared-memory merges), output from the last.
// SHUF variants (top_k1_sg_*, planned for pow2(K) >= 1024): SEG's and FILTER's sorting networks hold 4
// entries a thread in registers and exchange strides below 4 x the subgroup size by subgroup shuffles.
#extension GL_GOOGLE_include_directive : require
#ifndef ROWS
#define ROWS 0
#endif
#if ROWS
// ROWS variants (top_k1_rows_*): one subgroup per sequence, see top_k1_rows.glsl. Separate modules, so
// the other variants need no subgroup operations beyond Vulkan 1.1's guaranteed basic ones.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#ifndef SHUF
#define SHUF 0
#endif
#if SHUF && !ROWS
// SHUF variants (top_k1_sg_*): the sorting networks' short strides in registers and subgroup shuffles
// (reg_stage below), for devices that have subgroup shuffles.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint B = 2048;  // shared buffer entries (power of two)
// The mode is a specialization constant, not a push constant: each pipeline then holds only its
// mode's code, and the driver allocates registers for that alone (occupancy of the streaming loop).
layout(constant_id = 2) const uint MODE = 0u;
// FILTER chunks by radix select instead of the running threshold (large K: no repeated compactions).
layout(constant_id = 3) const bool RADIX = false;
// Elements per thread per FILTER iteration, in 16-byte vector loads (mirrored by top_k1.EPI). A
// plain constant, not a specialization constant: spirv-opt then unrolls the loops over registers.
const uint EPI = 16u;
const uint EV = 128u / ELEM_BITS;   // elements per uvec4
const uint NV = EPI / EV;           // uvec4 loads per thread per iteration

layout(binding = 0) readonly buffer Src { uint src[]; };
layout(binding = 0) readonly buffer Src4 { uvec4 src4[]; };   // the same buffer, 16 bytes at a time
layout(binding = 1) buffer OutVal { uint oval[]; };           // atomics for 8/16-bit values
layout(binding = 2) writeonly buffer OutIdx { uint oidx[]; };
layout(binding = 3) coherent buffer Cand { uint cand[]; };    // (key, index) pairs
layout(binding = 4) coherent buffer Ctr { uint ctr[]; };      // finished-chunk counters: per sequence, then per merge group

// Mirrored by vkops.ops.top_k1.TOPK_PUSH.
layout(push_constant) uniform Push {
    uint n_seq;       // sequences
    uint L;           // axis length
    uint K;
    uint Kp;          // pow2 >= K
    uint chunks;      // FILTER: workgroups per sequence; SORT: tiles (or step groups) per sequence
    uint chunk_len;   // FILTER: elements per chunk
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint G;           // SEG: sequences per workgroup; FILTER: chunks a first-level merge group (run_filter)
    uint P;           // SEG: per-sequence slot (pow2); SORT: padded row length
    uint size;        // SORT: bitonic stage size
    uint stride;      // SORT_GLOBAL: compare distance
    uint n_other;     // merged non-axis dims (o_* arrays hold 6: the push block stays <= 128 bytes)
    uint n_groups;    // workgroups with work
    uint vec;         // FILTER: rows are contiguous and 16-byte aligned (uvec4 loads)
    uint cap;         // FILTER: entries buffered before a compaction (<= B; small K compacts early)
    uint tune;        // FILTER radix chunks on many rows: TUNE_* bits (vkops.ops.top_k1_paths)
    uint o_sizes[6];  // merged non-axis sizes, outermost first
    uint o_strides[6];// their input element strides
} pc;

// TUNE_GUESS: the sampled guess aims at K + max(K/2, 64) keys, not K + K/2 + 64 (a missed guess, one
// more read of a row, costs little among thousands of rows; fewer keys to sort). TUNE_SELECT: compact
// takes select_front's shortcut.
const uint TUNE_GUESS = 1u, TUNE_SELECT = 2u;
const uint MODE_SEG = 0, MODE_FILTER = 1, MODE_SORT_INIT = 2, MODE_SORT_GLOBAL = 3, MODE_SORT_LOCAL = 4;
const uint MODE_RSORT = 5;  // ROWS modules: MODE_RSORT runs run_rsort (top_k1_rsort.glsl), any other run_rows
const uint SENT_IDX = 0xFFFFFFFFu;  // sentinel (key 0, index ~0) ranks below every real element
const uint WG = gl_WorkGroupSize.x;

shared uint skey[B];
#if ROWS
// RSORT exchanges one word a position, through skey alone: sidx is ROWS' (its shared memory sets how
// many workgroups an SM holds, which sets RSORT's speed).
shared uint sidx[MODE == MODE_RSORT ? 1u : B];
#else
shared uint sidx[B];
#endif
// SEG: every skey/sidx access goes through SW: entries [32, 64) of each 64-block sit in reversed
// bank order, so the compare-exchange pairs of strides 1..16 (2-way bank conflicts in a plain
// layout) and runs of 32 consecutive entries both touch 32 distinct banks. On an H100 that made SEG
// 5-8% faster and the other modes (less bound by shared memory) slower, so only SEG swizzles.
const bool SWIZZLE = MODE == 0u;
#define SW(i) ((i) ^ (SWIZZLE ? (((i) >> 5u) & 1u) * 31u : 0u))
shared uint s_base[gl_WorkGroupSize.x];  // SEG: row bases; FILTER: the seed's group maxima
shared uint s_count, s_thr_k, s_thr_i, s_last, s_flag;
// 8-bit digits: 11-bit ones (2048 bins) cost more in occupancy than they saved in passes on an H200.
const uint NBINS = 256u;
shared uint hist[NBINS];
shared uint s_grp[NBINS / 32u];
shared uint s_digit, s_above, s_inbin;
#if ROWS
// RSORT's digit counters and subgroup totals (top_k1_rsort.glsl); 1 word for ROWS.
layout(constant_id = 4) const uint RS_SH = 1u;
shared uint rs_sh[RS_SH];
#endif

// ---- keys --------------------------------------------------------------------------------------
uint make_key(uint raw) {
    uint k;
#if KIND == 0 && ELEM_BITS == 32
    uint b = raw;
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) k = 0xFFFFFFFFu;   // every NaN: one key, above +inf
    else {
        if (b == 0x80000000u) b = 0u;                        // -0.0 ties with +0.0
        k = (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
    }
#elif KIND == 0 && ELEM_BITS == 16
    uint h = raw & 0xFFFFu;                                  // compare the half's bits: exact, no FTZ
    if ((h & 0x7FFFu) > 0x7C00u) k = 0xFFFFu;
    else {
        if (h == 0x8000u) h = 0u;
        k = (h & 0x8000u) != 0u ? (~h & 0xFFFFu) : (h | 0x8000u);
    }
#elif KIND == 1
    k = raw ^ (1u << (ELEM_BITS - 1));                       // signed: flip the sign bit
#else
    k = raw;                                                 // unsigned
#endif
    return k ^ pc.flip;
}

// (ka, ia) ranks before (kb, ib): larger key, then smaller index.
bool better(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

// ---- addressing --------------------------------------------------------------------------------
uint seq_base(uint s) {
    uint off = 0u;
    for (int d = int(pc.n_other) - 1; d >= 0; --d) {
        uint sz = pc.o_sizes[d];
        off += (s % sz) * pc.o_strides[d];
        s /= sz;
    }
    return off;
}

uint load_raw(uint base, uint i) { return LOAD_ELEM(src, base + i * pc.axis_stride); }

// Element e of 16 bytes of packed elements (one uvec4 load); e = 0 of a load_raw value is that value.
// A macro, not a function: a function's uvec4 parameter became a local copy in the SPIR-V.
#if ELEM_BITS == 32
#define VEC_ELEM(w, e) ((w)[e])
#else
#define VEC_ELEM(w, e) bitfieldExtract((w)[(e) / (32u / ELEM_BITS)], int(((e) % (32u / ELEM_BITS)) * ELEM_BITS), ELEM_BITS)
#endif

void write_out(uint s, uint j, uint idx, uint base) {
    uint o = (s / pc.inner) * pc.K * pc.inner + (s % pc.inner) + j * pc.inner;
    oidx[o] = idx;
    uint raw = load_raw(base, idx);
#if ELEM_BITS == 32
    oval[o] = raw;
#else
    // Neighbouring output elements may belong to other sequences (other workgroups): update only
    // this element's bits of the shared word, atomically.
    const uint E = 32u / ELEM_BITS;
    uint sh = (o % E) * ELEM_BITS;
    uint w = o / E;
    atomicAnd(oval[w], ~(((1u << ELEM_BITS) - 1u) << sh));
    atomicOr(oval[w], raw << sh);
#endif
}

// ---- shared-memory networks --------------------------------------------------------------------
void cas(uint i, uint j, bool desc) {
    uint ki = skey[SW(i)], kj = skey[SW(j)], ii = sidx[SW(i)], ij = sidx[SW(j)];
    if (better(kj, ij, ki, ii) == desc) {
        skey[SW(i)] = kj; skey[SW(j)] = ki;
        sidx[SW(i)] = ij; sidx[SW(j)] = ii;
    }
}

#if SHUF
// ---- register networks (SHUF) -------------------------------------------------------------------
// A thread holds RE consecutive entries of the network (logical position l = t * RE + e, t numbering
// the threads subgroup by subgroup, so t ^ m for m < the subgroup size is a lane of the same subgroup).
// Strides below RE compare in registers, strides below RE * subgroup size through subgroupShuffleXor,
// longer ones in shared memory as before: for 2048 entries, 49 of the 55 steps of the run sort need
// neither shared memory nor a workgroup barrier.
const uint RE = 4u;  // the code below is written out for 4
uvec4 rk, ri;
uint reg_t() { return gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID; }
// Whether n network entries go through registers: every active subgroup full, at most RE a thread.
uint reg_lim() { return RE * gl_SubgroupSize; }  // the shortest stride left to shared memory
bool reg_fits(uint n) { return n >= reg_lim() && n <= RE * WG; }

// Entry (k, i) takes (pk, pi) where `want` says it keeps the better of the two and that one is better,
// or it keeps the worse and that one is worse.
void reg_take(inout uint k, inout uint i, uint pk, uint pi, bool want) {
    if (better(pk, pi, k, i) == want) { k = pk; i = pi; }
}
void reg_cx(inout uint ka, inout uint ia, inout uint kb, inout uint ib, bool desc) {
    if (better(kb, ib, ka, ia) == desc) { uint k = ka, i = ia; ka = kb; ia = ib; kb = k; ib = i; }
}
// One compare-exchange step of stride s (< RE * subgroup size) on the registers of thread t (entries
// l0 .. l0 + 3): the pair's lower position keeps the better entry where (l & d) == 0, else the worse.
// Written out component by component: an indexed private array went to memory.
void reg_stage(uint s, uint d, uint t) {
    uint l0 = t * RE;
    if (s == 1u) {
        reg_cx(rk.x, ri.x, rk.y, ri.y, (l0 & d) == 0u);
        reg_cx(rk.z, ri.z, rk.w, ri.w, ((l0 + 2u) & d) == 0u);
    } else if (s == 2u) {
        reg_cx(rk.x, ri.x, rk.z, ri.z, (l0 & d) == 0u);
        reg_cx(rk.y, ri.y, rk.w, ri.w, ((l0 + 1u) & d) == 0u);
    } else {
        uint m = s / RE;
        bool lower = (t & m) == 0u;
        uvec4 pk = subgroupShuffleXor(rk, m), pi = subgroupShuffleXor(ri, m);
        reg_take(rk.x, ri.x, pk.x, pi.x, lower == ((l0 & d) == 0u));
        reg_take(rk.y, ri.y, pk.y, pi.y, lower == (((l0 + 1u) & d) == 0u));
        reg_take(rk.z, ri.z, pk.z, pi.z, lower == (((l0 + 2u) & d) == 0u));
        reg_take(rk.w, ri.w, pk.w, pi.w, lower == (((l0 + 3u) & d) == 0u));
    }
}
// A thread's RE entries are consecutive in shared memory too (runs of Kp >= RE): at a, a + 1, ...
uint reg_at(uint t, uint Kp, uint gap) { uint l = t * RE; return (l / Kp) * gap + l % Kp; }
void reg_load(uint a) {
    rk = uvec4(skey[SW(a)], skey[SW(a + 1u)], skey[SW(a + 2u)], skey[SW(a + 3u)]);
    ri = uvec4(sidx[SW(a)], sidx[SW(a + 1u)], sidx[SW(a + 2u)], sidx[SW(a + 3u)]);
}
void reg_store(uint a) {
    skey[SW(a)] = rk.x; skey[SW(a + 1u)] = rk.y; skey[SW(a + 2u)] = rk.z; skey[SW(a + 3u)] = rk.w;
    sidx[SW(a)] = ri.x; sidx[SW(a + 1u)] = ri.y; sidx[SW(a + 2u)] = ri.z; sidx[SW(a + 3u)] = ri.w;
}
#endif

// sort_runs' step of size `size`: entry i sorts descending where (i & mask) == 0 (within runs of Kp by
// its bit `size`, then run by run: all descending when T == 0, else alternating).
uint sort_dmask(uint size, uint Kp, uint T) { return size < Kp ? size : (T == 0u ? 0u : Kp); }
// One compare-exchange step of `stride` over N shared entries, descending where (i & d) == 0.
void sort_step(uint N, uint stride, uint d) {
    for (uint p = gl_LocalInvocationID.x; p < N / 2u; p += WG) {
        uint i = 2u * p - (p & (stride - 1u));
        cas(i, i + stride, (i & d) == 0u);
    }
    barrier();
}
// One step of merge_runs' bitonic merges: nact entries in runs of Kp, run q at q * gap; run q descending
// when `last` or q is even.
void merge_step(uint nact, uint Kp, uint gap, uint stride, bool last) {
    for (uint p = gl_LocalInvocationID.x; p < nact / 2u; p += WG) {
        uint q = p / (Kp >> 1), w = p % (Kp >> 1);
        uint i = q * gap + 2u * w - (w & (stride - 1u));
        cas(i, i + stride, last || (q & 1u) == 0u);
    }
    barrier();
}

// Sort runs of Kp (N = n_seg * (Kp << T) entries) descending when T == 0, else alternating in
// direction (the runs merge_runs will pair). Ends with a barrier.
void sort_runs(uint N, uint Kp, uint T) {
#if SHUF
    if (reg_fits(N)) {
        uint t = reg_t(), lim = reg_lim();
        bool act = t < N / RE;  // whole subgroups
        if (act) reg_load(t * RE);
        for (uint size = 2u; size <= Kp; size <<= 1) {
            uint d = sort_dmask(size, Kp, T);
            uint stride = size >> 1;
            if (stride >= lim) {  // the long strides in shared memory
                if (act) reg_store(t * RE);
                barrier();
                for (; stride >= lim; stride >>= 1) sort_step(N, stride, d);
                if (act) reg_load(t * RE);
            }
            if (act) for (; stride > 0u; stride >>= 1) reg_stage(stride, d, t);
        }
        if (act) reg_store(t * RE);
        barrier();
        return;
    }
#endif
    for (uint size = 2u; size <= Kp; size <<= 1)
        for (uint stride = size >> 1; stride > 0u; stride >>= 1) sort_step(N, stride, sort_dmask(size, Kp, T));
}

// Runs of Kp sorted in alternating directions (run r descending when r is even) become the sorted
// (descending) top Kp of each segment of 2^T runs, at the segment's start: T times, keep the better
// half of each pair of runs in place (runs spread out by 2^t) and rebuild it with one bitonic merge.
// Ends with a barrier.
void merge_runs(uint N, uint Kp, uint T) {
    uint tid = gl_LocalInvocationID.x;
    for (uint t = 0u; t < T; ++t) {
        uint span = Kp << t;
        uint nact = N >> (t + 1u);
#if SHUF
        if (reg_fits(nact) && Kp >= RE) {
            // The better half of each pair of runs straight into registers (logical position l of
            // run q at q * 2 * span + l % Kp, its partner span further), then the merge's steps.
            uint rt = reg_t(), lim = reg_lim(), gap = 2u * span;
            bool act = rt < nact / RE;
            uint d = t + 1u == T ? 0u : Kp;
            uint a0 = reg_at(rt, Kp, gap);
            if (act) {
                reg_load(a0 + span);
                uvec4 pk = rk, pi = ri;
                reg_load(a0);
                reg_take(rk.x, ri.x, pk.x, pi.x, true);
                reg_take(rk.y, ri.y, pk.y, pi.y, true);
                reg_take(rk.z, ri.z, pk.z, pi.z, true);
                reg_take(rk.w, ri.w, pk.w, pi.w, true);
            }
            uint stride = Kp >> 1;
            if (stride >= lim) {
                if (act) reg_store(a0);
                barrier();
                for (; stride >= lim; stride >>= 1) merge_step(nact, Kp, gap, stride, d == 0u);
                if (act) reg_load(a0);
            }
            if (act) for (; stride > 0u; stride >>= 1) reg_stage(stride, d, rt);
            if (act) reg_store(a0);
            barrier();
            continue;
        }
#endif
        for (uint e = tid; e < nact; e += WG) {
            uint r = e / Kp, j = e % Kp;
            uint a = 2u * r * span + j, b = a + span;
            uint ka = skey[SW(a)], kb = skey[SW(b)], ia = sidx[SW(a)], ib = sidx[SW(b)];
            if (better(kb, ib, ka, ia)) { skey[SW(a)] = kb; sidx[SW(a)] = ib; }
        }
        barrier();
        for (uint stride = Kp >> 1; stride > 0u; stride >>= 1) merge_step(nact, Kp, 2u * span, stride, t + 1u == T);
    }
}

// Reduce N = n_seg * (Kp << T) entries to the sorted (descending) top Kp of each segment, found at
// offset seg * (Kp << T). Ends with a barrier.
void reduce_buf(uint N, uint Kp, uint T) {
    sort_runs(N, Kp, T);
    merge_runs(N, Kp, T);
}

uint log2u(uint x) { return uint(findMSB(x)); }
uint pow2_at_least(uint x) { return x <= 1u ? 1u : (1u << (uint(findMSB(x - 1u)) + 1u)); }

// Keys carry ELEM_BITS significant bits (above them only the INCREASING flip's ones, equal for all).
const uint KEY_BITS_MASK = ELEM_BITS == 32 ? 0xFFFFFFFFu : ((1u << ELEM_BITS) - 1u);
// The key bits from `shift` up: those a digit below them must match its prefix on.
uint bits_above(uint shift) { return shift >= 32u ? 0u : (KEY_BITS_MASK << shift) & KEY_BITS_MASK; }

// The bin of hist[0, n) where a count of `need` is reached scanning from the top (from_top) or the
// bottom: s_digit, with s_above the count before it and s_inbin its own. Groups of 32 bins are summed
// in parallel first, so one thread scans at most n/32 + 32 entries. Ends with a barrier.
void pick_bin(uint need, bool from_top, uint n) {
    uint tid = gl_LocalInvocationID.x;
    uint ng = n / 32u;
    barrier();
    for (uint g = tid; g < ng; g += WG) {
        uint t = 0u;
        for (uint j = 0u; j < 32u; ++j) t += hist[g * 32u + j];
        s_grp[g] = t;
    }
    barrier();
    if (tid == 0u) {
        uint acc = 0u, g = 0u;
        for (uint j = 0u; j < ng; ++j) {
            g = from_top ? ng - 1u - j : j;
            if (acc + s_grp[g] >= need) break;
            acc += s_grp[g];
        }
        uint b = 0u;
        for (uint j = 0u; j < 32u; ++j) {
            b = g * 32u + (from_top ? 31u - j : j);
            if (acc + hist[b] >= need) break;
            acc += hist[b];
        }
        s_digit = b;
        s_above = acc;
        s_inbin = hist[b];
    }
    barrier();  // hist is not read after this: the next clear may start at once
}

void clear_hist() {
    for (uint i = gl_LocalInvocationID.x; i < NBINS; i += WG) hist[i] = 0u;
    barrier();
}

// compact's shortcut (TUNE_SELECT) for c in (256, 4 WG]: resolve the K-th best key of the buffer 8 bits at a time
// until the entries at or above the resolved prefix fit Kp, and move those m (K <= m <= Kp) to the
// front, so that a sort of Kp entries replaces the reduction of pow2(c) (4096 x 32768 K=256: ~400
// collected entries, a sort of 256 instead of two of 256 and a merge). Returns 0 (buffer untouched)
// where they never fit: more ties of the K-th key than Kp has room for.
uint select_front(uint c) {
    uint tid = gl_LocalInvocationID.x;
    uint prefix = 0u, need = pc.K, m = 0u;
    for (uint sh = uint(ELEM_BITS) - 8u;; sh -= 8u) {
        clear_hist();
        uint hmask = bits_above(sh + 8u);
        for (uint e = tid; e < c; e += WG) {
            uint k = skey[SW(e)] & KEY_BITS_MASK;
            if ((k & hmask) == prefix) atomicAdd(hist[(k >> sh) & 255u], 1u);
        }
        pick_bin(need, true, NBINS);
        prefix |= s_digit << sh;
        m += s_above;
        need -= s_above;
        if (m + s_inbin <= pc.Kp) { m += s_inbin; break; }  // every key >= prefix fits
        if (sh == 0u) return 0u;
    }
    uint kk[4], ii[4];
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        uint e = tid + u * WG;
        kk[u] = e < c ? skey[SW(e)] : 0u;
        ii[u] = e < c ? sidx[SW(e)] : SENT_IDX;
    }
    if (tid == 0u) s_count = 0u;
    barrier();
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        if (tid + u * WG < c && (kk[u] & KEY_BITS_MASK) >= prefix) {
            uint pos = atomicAdd(s_count, 1u);
            skey[SW(pos)] = kk[u];
            sidx[SW(pos)] = ii[u];
        }
    }
    for (uint e = m + tid; e < pc.Kp; e += WG) { skey[SW(e)] = 0u; sidx[SW(e)] = SENT_IDX; }
    barrier();
    return m;
}

// FILTER: reduce the `c` (<= B) buffered entries to the top Kp; the threshold becomes the K-th best.
const uint CMP_RANK_MAX = 256u, RANK_UNROLL = 8u;
bool rank_beats(uint j, uint kj, uint k, uint i, uint me) {
    if (kj != k) return kj > k;
    uint ij = sidx[SW(j)];
    return ij < i || (ij == i && j < me);  // sentinels repeat: ranks stay a permutation
}
void compact(uint c) {
    uint tid = gl_LocalInvocationID.x;
    if (c <= min(WG, CMP_RANK_MAX)) {
        // Few entries: each takes its place by counting the entries that beat it, RANK_UNROLL keys
        // read at a time (broadcast reads). Two barriers where a sorting network takes dozens. On an
        // H100 this took 4096 x 32768 K=8 from 0.264 to 0.238 ms; one key at a time it lost (0.331),
        // and up to 512 entries it lost on long rows (64 x 2^20 K=64 0.133 -> 0.175).
        uint k = 0u, i = SENT_IDX, r = 0xFFFFFFFFu;
        if (tid < c) {
            k = skey[SW(tid)]; i = sidx[SW(tid)]; r = 0u;
            uint j = 0u;
            for (; j + RANK_UNROLL <= c; j += RANK_UNROLL) {
                uint kk[RANK_UNROLL];
                [[unroll]] for (uint u = 0u; u < RANK_UNROLL; ++u) kk[u] = skey[SW(j + u)];
                [[unroll]] for (uint u = 0u; u < RANK_UNROLL; ++u) r += rank_beats(j + u, kk[u], k, i, tid) ? 1u : 0u;
            }
            for (; j < c; ++j) r += rank_beats(j, skey[SW(j)], k, i, tid) ? 1u : 0u;
        }
        barrier();
        if (r < pc.Kp) { skey[SW(r)] = k; sidx[SW(r)] = i; }
        for (uint e = c + tid; e < pc.Kp; e += WG) { skey[SW(e)] = 0u; sidx[SW(e)] = SENT_IDX; }
        barrier();
    } else if (RADIX && (pc.tune & TUNE_SELECT) != 0u && c <= 4u * WG && select_front(c) != 0u) {
        // RADIX (a specialization constant) keeps select_front's code out of the threshold filter's and
        // argmax's pipelines, where its registers cost occupancy (H100 4096 x 32768 fp32 K=8 0.237 -> 0.281 ms).
        reduce_buf(pc.Kp, pc.Kp, 0u);
    } else {
        uint N = max(pc.Kp, pow2_at_least(c));
        for (uint e = c + tid; e < N; e += WG) { skey[SW(e)] = 0u; sidx[SW(e)] = SENT_IDX; }
        barrier();
        reduce_buf(N, pc.Kp, log2u(N / pc.Kp));
    }
    if (tid == 0u) {
        s_count = pc.Kp;
        s_thr_k = skey[SW(pc.K - 1u)];
        s_thr_i = sidx[SW(pc.K - 1u)];
        s_flag = 0u;
    }
    barrier();
}

// stream_topk: the sequence index of a thread's u-th entry of the step whose keys[0] is entry `first`.
uint slot(bool vec, uint first, uint u) { return vec ? first + (u / EV) * WG * EV + u % EV : first + u * WG; }

// FILTER with K = 1 (argmax, greedy decoding): no threshold to share, so each thread keeps its own
// best (key, index) over a strided walk of entries [start, end), AM_LOADS 16-byte loads in flight and
// no barrier in the loop; then the workgroup's bests are reduced in shared memory into skey/sidx[0].
// The threshold filter stopped at two barriers per WG * EPI entries (4096 x 32768 fp32: 2.1 TB/s).
const uint AM_LOADS = 8u;
void argmax_chunk(uint base, uint start, uint end) {
    uint tid = gl_LocalInvocationID.x;
    uint bk = 0u, bi = SENT_IDX;
    if (pc.vec != 0u) {  // start is a whole number of steps: 16-byte aligned
        const uint STRIDE = WG * EV;
        for (uint i0 = start + tid * EV; i0 < end; i0 += AM_LOADS * STRIDE) {
            uvec4 q[AM_LOADS];
            [[unroll]] for (uint u = 0u; u < AM_LOADS; ++u) {
                uint i = i0 + u * STRIDE;
                q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            }
            [[unroll]] for (uint u = 0u; u < AM_LOADS; ++u) {
                [[unroll]] for (uint e = 0u; e < EV; ++e) {
                    uint i = i0 + u * STRIDE + e, k = make_key(VEC_ELEM(q[u], e));
                    if (i < end && better(k, i, bk, bi)) { bk = k; bi = i; }
                }
            }
        }
    } else {
        for (uint i = start + tid; i < end; i += WG) {
            uint k = make_key(load_raw(base, i));
            if (better(k, i, bk, bi)) { bk = k; bi = i; }
        }
    }
    skey[SW(tid)] = bk;  // B >= WG
    sidx[SW(tid)] = bi;
    barrier();
    for (uint h = pow2_at_least(WG) / 2u; h > 0u; h >>= 1) {
        if (tid < h && tid + h < WG) {
            uint kb = skey[SW(tid + h)], ib = sidx[SW(tid + h)];
            if (better(kb, ib, skey[SW(tid)], sidx[SW(tid)])) { skey[SW(tid)] = kb; sidx[SW(tid)] = ib; }
        }
        barrier();
    }
}

// FILTER: stream entries [start, end) of the input sequence at `base`, keeping the top Kp sorted in
// skey/sidx[0, Kp). An entry is buffered only if it beats the current threshold; a buffer that
// overflows is compacted and the entries that did not fit are tried again (against the new threshold).
void stream_topk(uint base, uint start, uint end) {
    uint tid = gl_LocalInvocationID.x;
    if (pc.Kp == 1u) { argmax_chunk(base, start, end); return; }
    if (tid == 0u) { s_count = 0u; s_thr_k = 0u; s_thr_i = SENT_IDX; s_flag = 0u; }
    barrier();
    const uint STEP = WG * EPI;
    bool vec = pc.vec != 0u;
    // 16-byte rows: the next step's loads are in flight while this step is filtered.
    uvec4 nxt[NV];
    [[unroll]] for (uint v = 0u; v < NV; ++v) {
        uint i0 = start + tid * EV + v * WG * EV;
        nxt[v] = vec && i0 < end ? src4[(base + i0) / EV] : uvec4(0u);
    }
    for (uint b0 = start; b0 < end; b0 += STEP) {
        uint keys[EPI];
        uint first;  // keys[u] is entry slot(vec, first, u)
        if (vec) {
            first = b0 + tid * EV;
            [[unroll]] for (uint v = 0u; v < NV; ++v) {
                uvec4 w = nxt[v];
                uint i1 = first + STEP + v * WG * EV;
                nxt[v] = i1 < end ? src4[(base + i1) / EV] : uvec4(0u);
                [[unroll]] for (uint e = 0u; e < EV; ++e) keys[v * EV + e] = make_key(VEC_ELEM(w, e));
            }
        } else {
            first = b0 + tid;
            [[unroll]] for (uint u = 0u; u < EPI; ++u) {
                uint i = first + u * WG;
                keys[u] = 0u;
                if (i < end) keys[u] = make_key(load_raw(base, i));
            }
        }
        uint pending = 0u;
        [[unroll]] for (uint u = 0u; u < EPI; ++u) {
            if (slot(vec, first, u) < end) pending |= 1u << u;
        }
        uint tk = s_thr_k, ti = s_thr_i;
        if (b0 == start && pc.K * 32u <= WG) {
            // Small K: split the threads into K groups (tid % K); the worst of the groups' best keys
            // bounds the K-th best of the chunk from below (K distinct entries reach it). Three
            // barriers, where the per-thread seed below sorts WG entries.
            uint bk = 0u;
            [[unroll]] for (uint u = 0u; u < EPI; ++u)
                if ((pending & (1u << u)) != 0u) bk = max(bk, keys[u]);
            if (tid < pc.K) s_base[tid] = 0u;
            barrier();
            atomicMax(s_base[tid % pc.K], bk);
            barrier();
            if (tid == 0u) {
                uint m = 0xFFFFFFFFu;
                for (uint g = 0u; g < pc.K; ++g) m = min(m, s_base[g]);
                s_thr_k = m;  // with index SENT_IDX: every entry of key m passes too
            }
            barrier();
            tk = s_thr_k; ti = s_thr_i;
        } else if (b0 == start) {
            // Seed the threshold: each thread buffers only its own best entry, and the K-th best of
            // those bounds the K-th best of the chunk from below. Without it every entry of the first
            // step beats the empty buffer's threshold and the buffer is compacted several times.
            uint bk = 0u, bi = SENT_IDX, bu = EPI;
            [[unroll]] for (uint u = 0u; u < EPI; ++u) {
                if ((pending & (1u << u)) != 0u) {
                    uint ix = slot(vec, first, u);
                    if (bu == EPI || better(keys[u], ix, bk, bi)) { bk = keys[u]; bi = ix; bu = u; }
                }
            }
            if (bu != EPI) {
                uint pos = atomicAdd(s_count, 1u);  // the buffer is empty and cap >= WG: it fits
                skey[SW(pos)] = bk;
                sidx[SW(pos)] = bi;
                pending &= ~(1u << bu);
            }
            barrier();
            uint c = s_count;
            barrier();
            compact(c);
            tk = s_thr_k; ti = s_thr_i;
        }
        for (;;) {
            [[unroll]] for (uint u = 0u; u < EPI; ++u) {
                if ((pending & (1u << u)) != 0u) {
                    uint ix = slot(vec, first, u);
                    if (!better(keys[u], ix, tk, ti)) { pending &= ~(1u << u); continue; }
                    uint pos = atomicAdd(s_count, 1u);
                    if (pos < pc.cap) {
                        skey[SW(pos)] = keys[u];
                        sidx[SW(pos)] = ix;
                        pending &= ~(1u << u);
                    }
                }
            }
            if (pending != 0u) s_flag = 1u;
            barrier();
            uint c = s_count, f = s_flag;
            barrier();
            if (f == 0u) break;                 // uniform: everyone read the same flag
            compact(min(c, pc.cap));
            tk = s_thr_k; ti = s_thr_i;
        }
    }
    barrier();
    uint c = s_count;
    barrier();
    compact(min(c, pc.cap));
}


// FILTER, the last workgroup of a sequence (or of a merge group): the top Kp of `nruns` sorted runs of K
// candidates (run r at cand[c0 + r * rstride * K]) into skey/sidx[0, Kp), sorted. The runs are sorted already, so
// they are only merged: up to B/Kp runs at a time are loaded, odd slots reversed (the alternating
// directions merge_runs pairs), and log2(slots) levels of one bitonic merge each leave the best Kp
// in slot 0, which stays for the next load. On an H100 that replaced stream_topk's repeated
// compactions (whole-buffer sorts) over the candidates.
void merge_cand(uint c0, uint nruns, uint rstride) {
    uint tid = gl_LocalInvocationID.x;
    uint Kp = pc.Kp, R = B / Kp;  // Kp <= B/2: at least two slots
    uint next = 0u, s0 = 0u;      // next run to load; slots already holding a result (0 or 1)
    while (next < nruns) {
        uint take = min(R - s0, nruns - next);
        uint slots = pow2_at_least(s0 + take);
        for (uint e = tid; e < (slots - s0) * Kp; e += WG) {
            uint sl = s0 + e / Kp, j = e % Kp;
            uint r = next + sl - s0, jj = (sl & 1u) != 0u ? Kp - 1u - j : j;
            uint k = 0u, ix = SENT_IDX;
            if (sl < s0 + take && jj < pc.K) {
                uint at = 2u * (c0 + r * rstride * pc.K + jj);
                k = cand[at];
                ix = cand[at + 1u];
            }
            skey[SW(sl * Kp + j)] = k;
            sidx[SW(sl * Kp + j)] = ix;
        }
        barrier();
        merge_runs(slots * Kp, Kp, log2u(slots));
        next += take;
        s0 = 1u;
    }
}

// ---- RADIX: the top Kp of a chunk by radix select -------------------------------------------------
const uint RADIX_LOADS = 4u;  // 8 was no faster on an H100
const uint PASS_KEY_HIST = 0u, PASS_POS_HIST = 1u, PASS_COLLECT = 2u;

// One pass over entries [lo_i, hi_i) of the sequence at `base` (lo_i/hi_i relative to the sequence).
//   KEY_HIST:  hist[the `width` bits at `shift`] of keys whose bits above them equal `prefix`
//   POS_HIST:  hist[(i - lo_i) / w] of entries whose key == prefix (the exact threshold)
//   COLLECT:   append (key, i) when key > prefix, or key == prefix and i < pos_cut, to skey/sidx
void radix_pass(uint pass, uint base, uint lo_i, uint hi_i, uint shift, uint width, uint prefix, uint w,
                uint pos_cut) {
    uint tid = gl_LocalInvocationID.x;
    uint hmask = bits_above(shift + width);
    uint dmask = (1u << width) - 1u;
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    uint a0 = vec ? lo_i - lo_i % EV : lo_i;  // vector loads start on a 16-byte boundary
    for (uint i0 = a0 + (vec ? tid * EV : tid); i0 < hi_i; i0 += RADIX_LOADS * step) {
        uvec4 q[RADIX_LOADS];  // loads in flight per thread; elements are extracted when used
        [[unroll]] for (uint u = 0u; u < RADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < hi_i ? src4[(base + i) / EV] : uvec4(0u);
            else q[u].x = i < hi_i ? load_raw(base, i) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < RADIX_LOADS; ++u) {
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint i = i0 + u * step + e;
                if (i >= hi_i || i < lo_i) continue;
                uint key = make_key(VEC_ELEM(q[u], e)) & KEY_BITS_MASK;  // !vec: e = 0, q[u].x
                if (pass == PASS_KEY_HIST) {
                    if ((key & hmask) == prefix) atomicAdd(hist[(key >> shift) & dmask], 1u);
                } else if (pass == PASS_POS_HIST) {
                    if (key == prefix) atomicAdd(hist[(i - lo_i) / w], 1u);
                } else if (key > prefix || (key == prefix && i < pos_cut)) {
                    uint pos = atomicAdd(s_count, 1u);
                    if (pos < B) {  // the sampled guess may overshoot: count on, store what fits
                        skey[SW(pos)] = key ^ (pc.flip & ~KEY_BITS_MASK);  // restore the flip's high bits
                        sidx[SW(pos)] = i;
                    }
                }
            }
        }
    }
}

// The top Kp (key, index) pairs of entries [start, end) into skey/sidx[0, Kp), sorted: resolve the
// K-th key 8 bits at a time until every key at or above the resolved prefix fits the buffer; if the
// key resolves completely (ties), take the tied entries with the smallest indices (a position
// select), so exactly K entries are collected. Then one sort. Reads the chunk 2-4 times instead of
// compacting the buffer again and again.
// Sampling fast path: a threshold guessed from a sample, with about `want` keys of the chunk at or
// above it if they are spread evenly; one pass collects them. It stands when between K and B entries
// came in (then they hold the top K, ties included); a guess that collects fewer than K or more than B
// is tried again at a rank aimed at the middle of [K, B], strictly between the ranks that collected too
// few and too many, SAMPLE_ATTEMPTS guesses in all, then the exact radix select runs. Random data takes one full read instead of three.
// The sample: every thread's best of m keys from strips of WG loads (16-byte ones where rows allow)
// spread over the chunk (about a quarter of a 2^15 chunk, read again by the collection soon after); the guess is the r-th best
// of those WG keys, r set so that about `want` keys of the chunk beat it (1 - (1 - want/n)^m of the
// threads' bests do), found by 8-bit digits over one key a thread. Digits stop once the picked bin
// holds at most 2 of them: the rest of the bin adds only a few entries to the collection.
const uint SAMPLE_MIN_LEN = 1u << 15;
// ... and at most 2^19: on 2^20-key chunks (1 x 2^26, K=1024: 64 chunks) the exact select ran 0.907 ms
// against the guess's 1.046 (H100); 2^18-key chunks (64 x 2^20) kept it (0.290 against 0.317).
const uint SAMPLE_MAX_LEN = 1u << 19;
const uint SAMPLE_ATTEMPTS = 3u;  // guesses (each a read of the chunk) before the exact select

bool sampled_topk(uint base, uint start, uint end, uint need) {
    uint tid = gl_LocalInvocationID.x;
    uint n = end - start;
    // Keys expected at or above the guess: 1.5 K + 64 kept K=256's collection under 512 entries, a
    // shorter sort (H100, 4096 x 32768: 0.459 -> 0.401 ms against 2 K + 32).
    uint pad = (pc.tune & TUNE_GUESS) != 0u ? max(need / 2u, 64u) : need / 2u + 64u;
    uint want = min(need + pad, B * 3u / 4u);
    // Only chunks of >= 2^15 keys: on an H100 it won from there (4096 x 32768, K=256: 0.56 -> 0.53
    // ms; 64 x 2^20 chunks of 2^16, K=256: 0.35 -> 0.27 ms); shorter chunks are cheap to read again.
    if (n < SAMPLE_MIN_LEN || n > SAMPLE_MAX_LEN || want < need + need / 4u) return false;
    bool vec = pc.vec != 0u;
    uint ev = vec ? EV : 1u;
    uint nl = clamp(n / (WG * ev * 8u), 4u, 16u) & ~3u;  // loads a thread, 4 in flight
    uint strip = n / ev / nl;                             // loads between the strips' starts
    if (strip < WG) return false;
    // Keys a thread takes from each load (eu of its ev): the guess's rank r = WG (1 - (1 - want/n)^m),
    // m = nl * eu, stays <= WG/4, where the threads' bests still stand for the sample's best keys.
    float q = log(1.0 - float(want) / float(n));
    uint eu = ev;
    while (float(nl * eu) * q < log(0.75)) {
        if (eu == 1u) return false;
        eu >>= 1;
    }
    uint mk = 0u;  // this thread's best sampled key
    for (uint l0 = 0u; l0 < nl; l0 += 4u) {
        uvec4 w[4];
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            uint at = (l0 + u) * strip + tid;
            if (vec) w[u] = src4[(base + start) / EV + at];
            else w[u].x = load_raw(base, start + at);
        }
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (e >= eu) break;
                mk = max(mk, make_key(VEC_ELEM(w[u], e)) & KEY_BITS_MASK);
            }
        }
    }
    uint r = max(4u, uint(float(WG) * (1.0 - exp(float(nl * eu) * q)) + 0.5));
    uint r_lo = 0u, c_lo = 0u, r_hi = WG + 1u, c_hi = 0u;  // ranks that collected too few / too many
    for (uint attempt = 0u; attempt < SAMPLE_ATTEMPTS; ++attempt) {
        uint prefix = 0u, rr = r;
        for (uint sh = uint(ELEM_BITS) - 8u;; sh -= 8u) {
            clear_hist();
            uint hmask = bits_above(sh + 8u);
            if ((mk & hmask) == prefix) atomicAdd(hist[(mk >> sh) & 255u], 1u);
            pick_bin(rr, true, 256u);
            prefix |= s_digit << sh;
            rr -= s_above;
            if (sh == 0u || s_inbin <= 2u) break;
        }
        if (prefix == 0u) return false;  // the guess admits every key
        if (tid == 0u) s_count = 0u;
        barrier();
        radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, prefix - 1u, 0u, 0u);
        barrier();
        uint c = s_count;
        barrier();
        if (c >= need && c <= B) { compact(c); return true; }
        // Too few, or more than the buffer holds: the count grows about in proportion to the rank, so
        // the next rank aims at the middle of [need, B], interpolated between the ranks known to collect
        // too few and too many once both are, and strictly between them (ranks 72 -> 1014 keys, 109 ->
        // 2326, then 72 again went on to the exact select on an fp16 chunk of 81920 keys, K=1024, in a
        // NumPy model of this guess). One workgroup's exact select, or one retry, sets a dispatch's time.
        if (c < need) { r_lo = r; c_lo = c; } else { r_hi = r; c_hi = c; }
        if (r_hi <= r_lo + 1u) return false;
        float tgt = 0.5 * float(need + B);
        float est = r_lo > 0u && r_hi <= WG ? float(r_lo) + (tgt - float(c_lo)) * float(r_hi - r_lo) / float(c_hi - c_lo)
                                            : float(r) * tgt / float(max(c, 1u));
        r = uint(clamp(est + 0.5, float(r_lo + 1u), float(r_hi - 1u)));
    }
    return false;
}

void radix_topk(uint base, uint start, uint end) {
    uint tid = gl_LocalInvocationID.x;
    uint need = min(pc.K, end - start);
    if (sampled_topk(base, start, end, need)) return;
    uint prefix = 0u, above = 0u;
    bool resolved = false;
    // Stop resolving digits once the keys at or above the prefix fit `fit` entries. A short chunk
    // (cheap to read again) goes on to about Kp entries, so the final sort is small: on an H100 that
    // took 4096 x 4096 from 0.454 to 0.244 ms at K=256; a long one stops as soon as they fit the buffer
    // (another pass over 2^15+ keys cost more than sorting 2048 entries).
    uint fit = end - start <= 4u * B ? max(pc.Kp, 512u) : B;
    uint lo_key = 0u;
    uint width = 8u;
    for (uint shift = uint(ELEM_BITS) - width;; ) {
        clear_hist();
        radix_pass(PASS_KEY_HIST, base, start, end, shift, width, prefix, 0u, 0u);
        pick_bin(need, true, NBINS);
        uint d = s_digit, acc = s_above, in_bin = s_inbin;
        prefix |= d << shift;
        above += acc;
        need -= acc;
        if (above + in_bin <= fit) { lo_key = prefix; break; }  // all keys >= prefix.000 fit
        if (shift == 0u) { resolved = true; break; }
        width = min(8u, shift);
        shift -= width;
    }
    uint pos_cut = 0xFFFFFFFFu;
    if (resolved) {
        // prefix is the K-th key exactly; take its first `need` occurrences by position.
        uint lo_i = start, hi_i = end;
        for (;;) {
            uint w = max(1u, (hi_i - lo_i + NBINS - 1u) / NBINS);
            clear_hist();
            radix_pass(PASS_POS_HIST, base, lo_i, hi_i, 0u, 0u, prefix, w, 0u);
            pick_bin(need, false, NBINS);
            need -= s_above;
            lo_i += s_digit * w;
            hi_i = min(hi_i, lo_i + w);
            if (w == 1u) { pos_cut = lo_i + 1u; break; }
        }
    }
    if (tid == 0u) s_count = 0u;
    barrier();
    // COLLECT takes key > prefix, and key == prefix below pos_cut: resolved, the K-th key's first
    // occurrences; else every key >= lo_key (all of them when lo_key is 0).
    if (resolved) radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, prefix, 0u, pos_cut);
    else if (lo_key == 0u) radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, 0u, 0u, 0xFFFFFFFFu);
    else radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, lo_key - 1u, 0u, 0u);
    barrier();
    uint c = s_count;
    barrier();
    compact(c);
}

#if ROWS
#include "top_k1_rows.glsl"
#include "top_k1_rsort.glsl"
#endif

// ---- modes -------------------------------------------------------------------------------------
void run_seg(uint g) {
    uint tid = gl_LocalInvocationID.x;
    uint s0 = g * pc.G;
    if (tid < pc.G && s0 + tid < pc.n_seq) s_base[tid] = seq_base(s0 + tid);
    barrier();
    uint N = pc.G * pc.P;
    for (uint e0 = 0u; e0 < N; e0 += 4u * WG) {   // four loads in flight per thread
        uint raw[4];
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            uint e = e0 + u * WG + tid;
            uint q = e / pc.P, i = e % pc.P;
            raw[u] = (e < N && i < pc.L && s0 + q < pc.n_seq) ? load_raw(s_base[q], i) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            uint e = e0 + u * WG + tid;
            if (e >= N) break;
            uint q = e / pc.P, i = e % pc.P;
            bool ok = i < pc.L && s0 + q < pc.n_seq;
            skey[SW(e)] = ok ? make_key(raw[u]) : 0u;
            sidx[SW(e)] = ok ? i : SENT_IDX;
        }
    }
    barrier();
    reduce_buf(N, pc.Kp, log2u(pc.P / pc.Kp));
    for (uint e = tid; e < pc.G * pc.K; e += WG) {
        uint q = e / pc.K, j = e % pc.K;
        if (s0 + q < pc.n_seq) write_out(s0 + q, j, sidx[SW(q * pc.P + j)], s_base[q]);
    }
}

// Whether this workgroup is the last of `n` to arrive at counter `at` (which it then leaves zero for the
// next dispatch); every workgroup's buffer writes before its arrival are visible to the last one.
bool last_to_arrive(uint at, uint n) {
    memoryBarrierBuffer();
    barrier();  // also orders the reads of s_last after an earlier call before its next write
    if (gl_LocalInvocationID.x == 0u) {
        uint done = atomicAdd(ctr[at], 1u);
        s_last = done == n - 1u ? 1u : 0u;
        if (s_last != 0u) ctr[at] = 0u;
    }
    barrier();
    bool last = s_last != 0u;
    if (last) memoryBarrierBuffer();
    return last;
}

void run_filter(uint g) {
    uint tid = gl_LocalInvocationID.x;
    uint s = g / pc.chunks, c = g % pc.chunks;
    uint base = seq_base(s);
    uint start = c * pc.chunk_len;
    if (RADIX) radix_topk(base, start, min(pc.L, start + pc.chunk_len));
    else stream_topk(base, start, min(pc.L, start + pc.chunk_len));
    if (pc.chunks == 1u) {
        for (uint j = tid; j < pc.K; j += WG) write_out(s, j, sidx[SW(j)], base);
        return;
    }
    uint out0 = (s * pc.chunks + c) * pc.K;
    for (uint j = tid; j < pc.K; j += WG) {
        cand[2u * (out0 + j)] = skey[SW(j)];
        cand[2u * (out0 + j) + 1u] = sidx[SW(j)];
    }
    uint c0 = s * pc.chunks * pc.K;
    uint gs = max(pc.G, 1u), ngrp = (pc.chunks + gs - 1u) / gs;
    if (ngrp > 1u) {
        // Two levels: the last chunk of each group of gs merges the group's runs into the place of its
        // first run, then the last group merges the groups' runs. The last workgroup of a row otherwise
        // merges every run in turn (B / Kp at a time): 1 x 2^26 at K=1024, 128 runs, was 127 merges.
        uint grp = c / gs, first = grp * gs, n = min(gs, pc.chunks - first);
        if (!last_to_arrive(pc.n_seq + s * ngrp + grp, n)) return;
        if (n > 1u) {  // a group of one run has it in place already
            merge_cand(c0 + first * pc.K, n, 1u);
            for (uint j = tid; j < pc.K; j += WG) {
                cand[2u * (c0 + first * pc.K + j)] = skey[SW(j)];
                cand[2u * (c0 + first * pc.K + j) + 1u] = sidx[SW(j)];
            }
        }
        if (!last_to_arrive(s, ngrp)) return;
        merge_cand(c0, ngrp, gs);
    } else {
        if (!last_to_arrive(s, pc.chunks)) return;
        merge_cand(c0, pc.chunks, 1u);
    }
    for (uint j = tid; j < pc.K; j += WG) write_out(s, j, sidx[SW(j)], base);
}

// SORT: rows of P (key, index) pairs in cand; global element i sorts descending within the stage
// `size` when (i & size) == 0, so after the last stage (size == P) each row is descending.
void run_sort_tile(uint g, bool init) {
    uint tid = gl_LocalInvocationID.x;
    uint s = g / pc.chunks, t = g % pc.chunks;
    uint base = seq_base(s);
    uint row = s * pc.P, t0 = t * B;
    for (uint e = tid; e < B; e += WG) {
        uint i = t0 + e;
        if (init) {
            uint k = 0u, ix = SENT_IDX;
            if (i < pc.L) { k = make_key(load_raw(base, i)); ix = i; }
            skey[SW(e)] = k; sidx[SW(e)] = ix;
        } else {
            skey[SW(e)] = cand[2u * (row + i)]; sidx[SW(e)] = cand[2u * (row + i) + 1u];
        }
    }
    barrier();
    uint first = init ? 2u : pc.size;
    for (uint size = first; size <= pc.size; size <<= 1) {
        for (uint stride = min(size, B) >> 1; stride > 0u; stride >>= 1) {
            for (uint p = tid; p < B / 2u; p += WG) {
                uint i = 2u * p - (p & (stride - 1u));
                cas(i, i + stride, ((t0 + i) & size) == 0u);
            }
            barrier();
        }
    }
    if (pc.size == pc.P) {  // the last stage: this row is sorted, emit its first K
        for (uint e = tid; e < B; e += WG)
            if (t0 + e < pc.K) write_out(s, t0 + e, sidx[SW(e)], base);
        return;
    }
    for (uint e = tid; e < B; e += WG) {
        cand[2u * (row + t0 + e)] = skey[SW(e)];
        cand[2u * (row + t0 + e) + 1u] = sidx[SW(e)];
    }
}

void run_sort_global(uint g) {
    uint s = g / pc.chunks;
    uint p = (g % pc.chunks) * WG + gl_LocalInvocationID.x;
    if (p >= pc.P / 2u) return;
    uint i = 2u * p - (p & (pc.stride - 1u));
    uint a = 2u * (s * pc.P + i), b = a + 2u * pc.stride;
    uint ka = cand[a], ia = cand[a + 1u], kb = cand[b], ib = cand[b + 1u];
    if (better(kb, ib, ka, ia) == ((i & pc.size) == 0u)) {
        cand[a] = kb; cand[a + 1u] = ib;
        cand[b] = ka; cand[b + 1u] = ia;
    }
}

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
#if ROWS
    if (MODE == MODE_RSORT) run_rsort(g);
    else run_rows(g);
    return;
#endif
    if (MODE == MODE_SEG) run_seg(g);
    else if (MODE == MODE_FILTER) run_filter(g);
    else if (MODE == MODE_SORT_GLOBAL) run_sort_global(g);
    else run_sort_tile(g, MODE == MODE_SORT_INIT);
}
