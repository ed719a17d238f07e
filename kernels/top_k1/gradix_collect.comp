#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), the compaction after the digit passes: with the row's K-th key T
// and the count `need` of its ties among the top K (work), workgroup g writes its chunk's keys above T to
// the row's survivors (slots from the row's counter in ctr, a block of them at a time, in any order:
// gradix_sort orders them) and its ties of T that are among the row's first `need` ties by index
// (reference.top_k1's order for equal values):
// the ties of earlier chunks (their last-pass histograms' bin T & 255) say how many come before this chunk;
// a chunk whose ties all fall before or after the cut takes all or none of them, the one chunk the cut falls
// in ranks its ties by index (a workgroup prefix sum a block, blocks in order) and takes the first ones.
// Bindings: the input, work, ctr. Shared memory: s_scan[WG], 6 words.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"

shared uint s_scan[WG];
shared uint s_before, s_tie, s_run, s_tot, s_blk, s_base;

uint key_at(uint base, uint i) { return gkey(load_raw(base, i)); }

#if GFILTER
// gradix_fcollect: the same over the chunk's candidates (gradix_fscan: keys at ck, indices at ck + chunk_len, in
// index order), the keys above the first digit's bucket already among the survivors. A block is GRADIX_LOADS
// candidates a thread (thread-major); the cut chunk ranks its ties CE consecutive candidates a thread.
const uint CE = 4u;

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint T = work[2u * s], need = work[2u * s + 1u];
    uint above = pc.K - need;
    uint d = T & 255u;
    uint cnt = work[cnt_at(s, c)], ck = cand_at(s, c), ci = ck + pc.chunk_len;
    // Never taken (gradix_fhist's guard: keeps binding 0, the input, in the module)
    if (cnt > pc.chunk_len) cnt = min(load_raw(seq_base(s), 0u), pc.chunk_len);
    if (cnt == 0u) return;
    if (tid == 0u) { s_before = 0u; s_tie = 0u; s_run = 0u; s_tot = 0u; s_blk = 0u; }
    barrier();
    uint part = 0u;
    for (uint c2 = tid; c2 < c; c2 += WG) part += work[tie_at(s, c2) + d];
    if (part != 0u) atomicAdd(s_before, part);
    barrier();
    uint before = s_before, own = work[tie_at(s, c) + d];
    bool all = before + own <= need;
    bool cut = !all && before < need;
    uint surv = surv_at(s), slot = ctr_row(s) + NBINS + 1u;
    for (uint b0 = 0u; b0 < cnt; b0 += GRADIX_LOADS * WG) {
        uint kq[GRADIX_LOADS];
        uint na = 0u, nt = 0u;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = b0 + u * WG + tid;
            kq[u] = i < cnt ? work[ck + i] : 0u;
            if (i < cnt && kq[u] > T) ++na;
            if (i < cnt && kq[u] == T && all) ++nt;
        }
        uint oa = na != 0u ? atomicAdd(s_blk, na) : 0u;
        uint ot = nt != 0u ? above + before + atomicAdd(s_tie, nt) : 0u;
        barrier();
        if (tid == 0u) {
            s_base = s_blk != 0u ? atomicAdd(ctr[slot], s_blk) : 0u;
            s_blk = 0u;
        }
        barrier();
        oa += s_base;
        if (na + nt == 0u) continue;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = b0 + u * WG + tid;
            if (i >= cnt || kq[u] < T || (kq[u] == T && !all)) continue;
            uint pos = kq[u] > T ? oa++ : ot++;
            work[surv + 2u * pos] = kq[u];
            work[surv + 2u * pos + 1u] = work[ci + i];
        }
    }
    if (!cut) return;
    uint r = need - before;
    for (uint blk = 0u; blk < cnt; blk += WG * CE) {
        uint bits = 0u, n = 0u;
        for (uint e = 0u; e < CE; ++e) {
            uint i = blk + tid * CE + e;
            if (i < cnt && work[ck + i] == T) { bits |= 1u << e; ++n; }
        }
        if (n != 0u) atomicAdd(s_tot, n);
        barrier();
        uint tot = s_tot;
        if (tot != 0u) {
            s_scan[tid] = n;
            barrier();
            for (uint off = 1u; off < WG; off <<= 1) {
                uint v = tid >= off ? s_scan[tid - off] : 0u;
                barrier();
                s_scan[tid] += v;
                barrier();
            }
            uint rank = s_run + s_scan[tid] - n;
            for (uint e = 0u; e < CE; ++e) {
                if ((bits & (1u << e)) == 0u) continue;
                if (rank < r) {
                    uint pos = above + before + rank;
                    work[surv + 2u * pos] = T;
                    work[surv + 2u * pos + 1u] = work[ci + blk + tid * CE + e];
                }
                ++rank;
            }
        }
        barrier();
        if (tid == 0u) { s_run += tot; s_tot = 0u; }
        barrier();
        if (s_run >= r) break;
    }
}
#else
void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint base = seq_base(s);
    uint T = work[2u * s], need = work[2u * s + 1u];
    uint above = pc.K - need;  // keys > T in the row: the survivors' first slots
    uint d = T & 255u;
    if (tid == 0u) { s_before = 0u; s_tie = 0u; s_run = 0u; s_tot = 0u; s_blk = 0u; }
    barrier();
    uint part = 0u;
    for (uint c2 = tid; c2 < c; c2 += WG) part += work[tie_at(s, c2) + d];
    if (part != 0u) atomicAdd(s_before, part);
    barrier();
    uint before = s_before, own = work[tie_at(s, c) + d];
    bool all = before + own <= need;  // every tie of this chunk is among the first `need`
    bool cut = !all && before < need; // the cut falls inside this chunk
    uint surv = surv_at(s), slot = ctr_row(s) + NBINS + 1u;
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    // Blocks of GRADIX_LOADS loads a thread: each thread counts its keys above T (and, `all`, its ties), takes
    // that many slots of the workgroup's block with one shared atomic, the block takes its slots of the row
    // with one global atomic, and each thread writes its keys from the registers it loaded them into.
    for (uint b0 = start; b0 < end; b0 += GRADIX_LOADS * step) {
        uint i0 = b0 + (vec ? tid * EV : tid);
        uvec4 q[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            else q[u].x = i < end ? load_raw(base, i) : 0u;
        }
        // A load inside the chunk is wholly inside it (vec: end is a multiple of EV): bounds checked a load, and
        // one compare an element for the common key below T.
        uint na = 0u, nt = 0u;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            if (i0 + u * step >= end) continue;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint key = gkey(VEC_ELEM(q[u], e));
                if (key >= T) {
                    if (key > T) ++na;
                    else if (all) ++nt;
                }
            }
        }
        uint oa = na != 0u ? atomicAdd(s_blk, na) : 0u;
        uint ot = nt != 0u ? above + before + atomicAdd(s_tie, nt) : 0u;
        barrier();
        if (tid == 0u) {
            s_base = s_blk != 0u ? atomicAdd(ctr[slot], s_blk) : 0u;
            s_blk = 0u;
        }
        barrier();
        oa += s_base;
        if (na + nt == 0u) continue;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            if (i0 + u * step >= end) continue;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint i = i0 + u * step + e;
                uint key = gkey(VEC_ELEM(q[u], e));
                if (key < T || (key == T && !all)) continue;
                uint pos = key > T ? oa++ : ot++;
                work[surv + 2u * pos] = key;
                work[surv + 2u * pos + 1u] = i;
            }
        }
    }
    if (!cut) return;
    // The chunk the cut falls in: its first r ties by index, block by block (a thread's EV consecutive
    // elements, the threads in order), ranked by a prefix sum of the threads' tie counts.
    uint r = need - before;
    for (uint blk = start; blk < end; blk += WG * EV) {
        uint bits = 0u, cnt = 0u;
        for (uint e = 0u; e < EV; ++e) {
            uint i = blk + tid * EV + e;
            if (i < end && key_at(base, i) == T) { bits |= 1u << e; ++cnt; }
        }
        if (cnt != 0u) atomicAdd(s_tot, cnt);
        barrier();
        uint tot = s_tot;
        if (tot != 0u) {
            s_scan[tid] = cnt;
            barrier();
            for (uint off = 1u; off < WG; off <<= 1) {  // inclusive prefix sum (Hillis-Steele)
                uint v = tid >= off ? s_scan[tid - off] : 0u;
                barrier();
                s_scan[tid] += v;
                barrier();
            }
            uint rank = s_run + s_scan[tid] - cnt;
            for (uint e = 0u; e < EV; ++e) {
                if ((bits & (1u << e)) == 0u) continue;
                if (rank < r) {
                    uint pos = above + before + rank;
                    work[surv + 2u * pos] = T;
                    work[surv + 2u * pos + 1u] = blk + tid * EV + e;
                }
                ++rank;
            }
        }
        barrier();
        if (tid == 0u) { s_run += tot; s_tot = 0u; }
        barrier();
        if (s_run >= r) break;
    }
}
#endif
