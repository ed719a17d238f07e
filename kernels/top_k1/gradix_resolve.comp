#version 450
// DML TOP_K1, path "gradix" with a sampled bracket (gradix_bracket.glsl), after gradix_bcollect.comp: one workgroup a
// row completes its K survivors (gradix_psort / gradix_sort sort them). D keys above hi are among them; where the
// bracket held (D <= K <= D + C with C <= CAP candidates) the other K - D are the candidates' top K - D: a radix
// select over the candidates in shared memory from the highest bit where lo and hi differ gives the (K - D)-th key T,
// the candidates above it are taken, and its ties, at most TCAP, listed and ranked by index in parallel (more: the
// first by a select over their indices). Where lo is a plateau's key (its ties not candidates) and T is lo, the
// candidates are taken, then lo's first ties by index in an ordered read of the row, which stops at the load step
// that completes them (masked rows: the first). Otherwise (the bracket missed) the workgroup selects the row's
// survivors exactly: digit passes over the row (over the bracket's keys alone where T lies in it), then one ordered
// read that takes the keys above T and the first ties of T by index and stops once it has them. Zeroes the row's
// candidate counter (the survivor slot counter: the sort's part 0, as after gradix_collect). Bindings: the input,
// work, ctr. Needs subgroup arithmetic; workgroups of 512.
// Shared memory: CAP x 8 bytes + 4.6 KiB.
#extension GL_GOOGLE_include_directive : require
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
shared uint s_cnt, s_tot;
// The exact select's reads of the row: FB loads a thread from position b0, 16 bytes each where rows are contiguous (a
// macro: the loads stay in the caller's registers)
#define LOAD_BLOCK(q, b0) [[unroll]] for (uint u = 0u; u < FB; ++u) { \
        uint i = (b0) + u * step + i0t; \
        if (vec) q[u] = i < L ? src4[(base + i) / EV] : uvec4(0u); \
        else q[u] = uvec4(i < L ? load_raw(base, i) : 0u, 0u, 0u, 0u); \
    }

void main() {
    uint s = linear_group();
    if (s >= pc.n_seq) return;
    uint tid = gl_LocalInvocationID.x;
    uint slot = ctr_row(s) + GBINS + 1u, cslot = ctr_row(s);
    uint D = ctr[slot], C = ctr[cslot], K = pc.K;  // keys above hi; candidates, in [lo, hi] ((lo, hi] if plat)
    bool plat = work[2u * pc.n_seq + s] != 0u;       // lo is a plateau's key (gradix_bracket)
    uint surv = surv_at(s) / 2u, cand = bcand_at(s) / 2u;
    barrier();  // every thread has read the counts
    if (tid == 0u) { ctr[cslot] = 0u; s_cnt = 0u; s_tot = 0u; }
    for (uint j = tid; j < TCAP; j += WG) trk[j] = 0u;
    if (D <= K && D + C >= K && C <= CAP) {
        if (D == K) return;  // the keys above hi are the row's top K
        uint need = K - D;
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
        uint ties = need - above;  // ties of T to take, by index
        if (inbin <= TCAP) {
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
        // more ties (a row of few values): their `ties` smallest indices by a select over the candidates, each tie
        // keyed by its complemented index, the others by 0
        for (uint j = tid; j < C; j += WG) {
            uint k = ckey[j];
            if (k > T) work2[surv + D + atomicAdd(s_cnt, 1u)] = uvec2(k, cidx[j]);
            ckey[j] = k == T ? ~cidx[j] : 0u;
        }
        barrier();
        uint TI, TI2, a2, i2;
        bselect2(C, ties, ties, 0u, 32u, 0u, false, TI, TI2, a2, i2);
        for (uint j = tid; j < C; j += WG)
            if (ckey[j] >= TI && ckey[j] != 0u) work2[surv + D + above + atomicAdd(s_tot, 1u)] = uvec2(T, cidx[j]);
        return;
    }
    // Past the candidates. A plateau at lo and fewer than K keys above it: the candidates are survivors, then lo's
    // first ties by index in an ordered read of the row (if the row has fewer, the sample misled: as a miss). A miss
    // (the bracket's, or more candidates than CAP): digit passes find T, over the bracket's keys alone where T lies in
    // [lo, hi] (the D keys above hi stay where gradix_bcollect put them), from the highest bit where lo and hi differ,
    // else over every key, every bit; then one ordered read takes the keys in (T, top] and the first ties of T by
    // index, and stops where it has them all. One workgroup reads the row: FB loads of 16 bytes a thread in flight
    // where rows are contiguous.
    if (D == K) return;  // the keys above hi are the row's top K (more candidates than CAP)
    uint base = seq_base(s), L = pc.L;
    uvec2 br = work2[s];
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG, i0t = vec ? tid * EV : tid, nsg = WG / gl_SubgroupSize;
    for (uint attempt = 0u; ; ++attempt) {
        bool lo_ties = attempt == 0u && plat && D + C < K && C <= CAP;
        uint T, top, dst, need, na;  // the ordered read: keys in (T, top] to dst (na of them), then `need` ties of T
        if (lo_ties) {
            for (uint j = tid; j < C; j += WG) work2[surv + D + j] = work2[cand + j];
            T = br.x - 1u;  // lo (br.x: the lowest candidate key)
            top = T;
            dst = surv + D + C;
            need = K - D - C;
            na = 0u;
        } else {
            bool inb = D < K && D + C >= K;
            uint lo = inb ? br.x : 0u, off0 = inb ? D : 0u;
            top = inb ? br.y : ~0u;
            need = K - off0;
            uint hb = inb ? (br.x == br.y ? 0u : uint(findMSB(br.x ^ br.y)) + 1u) : uint(ELEM_BITS);
            uint hmask = hb >= 32u ? 0u : KEY_BITS_MASK & ~((1u << hb) - 1u), prefix = lo & hmask;
            while (hb > 0u) {
                uint w = min(8u, hb), sh = hb - w, dm = (1u << w) - 1u;
                bh[tid] = 0u;
                barrier();
                // this thread's run of keys in one bin, added with one atomic (rows of few values: one bin for all,
                // whose atomics, one a key and subgroup, took ~75 us a pass of 131072 keys on an H100)
                uint rb = 0u, rn = 0u;
                for (uint b0 = 0u; b0 < L; b0 += FB * step) {
                    uvec4 q[FB];
                    LOAD_BLOCK(q, b0);
                    [[unroll]] for (uint u = 0u; u < FB; ++u) {
                        bool in_row = b0 + u * step + i0t < L;
                        [[unroll]] for (uint e = 0u; e < EV; ++e) {
                            uint k = gkey(VEC_ELEM(q[u], e));
                            if (in_row && (vec || e == 0u) && k >= lo && k <= top && (k & hmask) == prefix) {
                                uint b = (k >> sh) & dm;
                                if (b != rb && rn != 0u) { atomicAdd(bh[rb], rn); rn = 0u; }
                                rb = b;
                                ++rn;
                            }
                        }
                    }
                }
                if (rn != 0u) atomicAdd(bh[rb], rn);
                bpick2(need, need);
                prefix |= b_res[0] << sh;
                hmask |= dm << sh;
                need -= b_res[1];
                hb = sh;
            }
            T = prefix;
            dst = surv + off0;
            na = K - off0 - need;
        }
        uint run = 0u;
        barrier();  // s_cnt zeroed (no digit pass may have run)
        for (uint b0 = 0u; b0 < L; b0 += FB * step) {
            uvec4 q[FB];
            LOAD_BLOCK(q, b0);
            [[unroll]] for (uint u = 0u; u < FB; ++u) {
                uint i0 = b0 + u * step + i0t, tm = 0u;  // bit e: element e of this load is a tie of T
                bool in_row = i0 < L;
                [[unroll]] for (uint e = 0u; e < EV; ++e) {
                    uint k = gkey(VEC_ELEM(q[u], e));
                    if (in_row && (vec || e == 0u)) {
                        if (k > T && k <= top) work2[dst + atomicAdd(s_cnt, 1u)] = uvec2(k, i0 + e);
                        else if (k == T) tm |= 1u << e;
                    }
                }
                // the ties' ranks in index order (load u, thread, element e): subgroup prefix sums, then the subgroups'
                uint nt = uint(bitCount(tm)), incl = subgroupInclusiveAdd(nt);
                if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u) wsum[gl_SubgroupID] = incl;
                barrier();
                uint r = run + incl - nt, tot = 0u;
                for (uint g = 0u; g < nsg; ++g) {
                    uint c = wsum[g];
                    if (g < gl_SubgroupID) r += c;
                    tot += c;
                }
                while (tm != 0u && r < need) {
                    uint e = uint(findLSB(tm));
                    tm &= tm - 1u;
                    work2[dst + na + r] = uvec2(T, i0 + e);
                    ++r;
                }
                run += tot;
                barrier();
                if (na == 0u && run >= need) break;  // uniform (run, na): the ties alone were wanted (a plateau's)
            }
            uint got = s_cnt;
            barrier();
            if (got >= na && run >= need) break;  // uniform: every thread read the same counts
        }
        if (!lo_ties || run >= need) return;
        if (tid == 0u) s_cnt = 0u;  // fewer ties of lo than needed: select exactly
    }
}
