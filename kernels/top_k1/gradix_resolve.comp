#version 450
// DML TOP_K1, path "gradix" with a sampled bracket (gradix_bracket.glsl), after gradix_bcollect.comp: one workgroup a
// row completes its K survivors (gradix_psort / gradix_sort sort them). D keys above hi are among them; where the
// bracket held (D <= K <= D + C with C <= CAP candidates) the other K - D are the candidates' top K - D: a radix
// select over the candidates in shared memory from the highest bit where lo and hi differ gives the (K - D)-th key T,
// the candidates above it are taken, and its ties, at most TCAP, listed and ranked by index in parallel. Otherwise
// (the bracket missed, or more ties) the workgroup selects the row's survivors exactly: digit passes over the row,
// then one ordered read that takes the keys above T and the first ties of T by index. Zeroes the row's candidate
// counter (the survivor slot counter: the sort's part 0, as after gradix_collect). Bindings: the input, work, ctr.
// Needs subgroup vote, ballot and arithmetic; workgroups of 512. Shared memory: CAP x 8 bytes + 3 KiB + WG words.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"

layout(constant_id = 1) const uint CAP = 4096;  // candidates a row (GRADIX_BRACKET_CAP fit to shared memory)
shared uint ckey[CAP];
#define GB_KEY(j) ckey[j]
#define GB_SELECT 1
#include "gradix_bracket.glsl"
const uint PER = 16u;    // candidates a thread at most: CAP <= 8192 over 512 threads
const uint TCAP = 256u;  // ties of T ranked in shared memory; more: the exact select
const uint FB = 8u;      // the exact select's loads a thread in flight
shared uint cidx[CAP];
shared uint tl[TCAP], trk[TCAP];  // the ties' indices and ranks
shared uint s_scan[WG];
shared uint s_cnt, s_run, s_tot;

void main() {
    uint s = linear_group();
    if (s >= pc.n_seq) return;
    uint tid = gl_LocalInvocationID.x;
    uint slot = ctr_row(s) + GBINS + 1u, cslot = ctr_row(s);
    uint D = ctr[slot], C = ctr[cslot], K = pc.K;
    uint surv = surv_at(s) / 2u;
    barrier();  // every thread has read the counts
    if (tid == 0u) { ctr[cslot] = 0u; s_cnt = 0u; s_run = 0u; s_tot = 0u; }
    for (uint j = tid; j < TCAP; j += WG) trk[j] = 0u;
    if (D <= K && D + C >= K && C <= CAP) {
        if (D == K) return;  // the keys above hi are the row's top K
        uint need = K - D, cand = bcand_at(s) / 2u;
        uvec2 v[PER];
        [[unroll]] for (uint u = 0u; u < PER; ++u) {
            uint j = tid + u * WG;
            v[u] = j < C ? work2[cand + j] : uvec2(0u);
        }
        [[unroll]] for (uint u = 0u; u < PER; ++u) {
            uint j = tid + u * WG;
            if (j < C) { ckey[j] = v[u].x; cidx[j] = v[u].y; }
        }
        barrier();
        uvec2 br = work2[s];
        uint diff = br.x ^ br.y, T, T2, above, inbin;
        bselect2(C, need, need, br.x, diff == 0u ? 0u : uint(findMSB(diff)) + 1u, 0u, false, T, T2,
                 above, inbin);
        if (inbin <= TCAP) {
            uint ties = need - above;  // ties of T to take, by index
            for (uint j = tid; j < C; j += WG) {
                uint k = ckey[j];
                if (k > T) work2[surv + D + atomicAdd(s_cnt, 1u)] = uvec2(k, cidx[j]);
                else if (k == T) tl[atomicAdd(s_tot, 1u)] = cidx[j];
            }
            barrier();
            for (uint p = tid; p < inbin * inbin; p += WG) {  // tie a's rank: the ties with smaller indices
                uint a = p % inbin, b = p / inbin;
                if (tl[b] < tl[a]) atomicAdd(trk[a], 1u);
            }
            barrier();
            for (uint a = tid; a < inbin; a += WG)
                if (trk[a] < ties) work2[surv + D + above + trk[a]] = uvec2(T, tl[a]);
            return;
        }
    }
    // The row's K-th key by digits over the whole row, and its survivors in one ordered read; one workgroup reads the
    // whole row, FB loads a thread in flight.
    uint base = seq_base(s), L = pc.L;
    uint prefix = 0u, hmask = 0u, need = K;
    for (int sh = ELEM_BITS - 8; sh >= 0; sh -= 8) {
        bh[tid] = 0u;
        barrier();
        for (uint i0 = tid; i0 < L; i0 += FB * WG) {
            uint raw[FB];
            [[unroll]] for (uint u = 0u; u < FB; ++u) raw[u] = i0 + u * WG < L ? load_raw(base, i0 + u * WG) : 0u;
            [[unroll]] for (uint u = 0u; u < FB; ++u) {
                uint k = gkey(raw[u]);
                if (i0 + u * WG < L && (k & hmask) == prefix) hist_add((k >> uint(sh)) & 255u);
            }
        }
        bpick2(need, need);
        prefix |= b_res[0] << uint(sh);
        hmask |= 255u << uint(sh);
        need -= b_res[1];
    }
    uint T = prefix, above = K - need;
    // keys above T to slots in any order, the first `need` ties of T by index (a prefix sum a block, blocks in order)
    for (uint b0 = 0u; b0 < L; b0 += FB * WG) {
        uint raw[FB];
        [[unroll]] for (uint u = 0u; u < FB; ++u) {
            uint i = b0 + u * WG + tid;
            raw[u] = i < L ? load_raw(base, i) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < FB; ++u) {
            uint i = b0 + u * WG + tid;
            uint k = gkey(raw[u]);
            if (i < L && k > T) work2[surv + atomicAdd(s_cnt, 1u)] = uvec2(k, i);
            uint t = i < L && k == T && s_run < need ? 1u : 0u;
            if (t != 0u) atomicAdd(s_tot, 1u);
            barrier();
            uint tot = s_tot;
            if (tot != 0u) {
                s_scan[tid] = t;
                barrier();
                for (uint off = 1u; off < WG; off <<= 1) {  // inclusive prefix sum (Hillis-Steele)
                    uint v = tid >= off ? s_scan[tid - off] : 0u;
                    barrier();
                    s_scan[tid] += v;
                    barrier();
                }
                uint r = s_run + s_scan[tid] - t;
                if (t != 0u && r < need) work2[surv + above + r] = uvec2(T, i);
            }
            barrier();
            if (tid == 0u) { s_run += tot; s_tot = 0u; }
            barrier();
        }
    }
}
