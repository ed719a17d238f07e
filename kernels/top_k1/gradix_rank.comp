#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), the last dispatch for few rows (TopK1Tuning.GRADIX_RANK_MAX_SEQ): the
// row's K survivors (gradix_collect, unordered) ranked over many workgroups instead of gradix_sort's one. The
// output position of survivor i is #{j: key_j > key_i} + #{j: key_j == key_i and idx_j < idx_i} (a permutation
// of 0..K-1: the indices are unique). Workgroup g tiles (row s, i-tile, j-tile): it loads its j-tile of TJ
// (key, index) pairs into shared memory, each thread ranks its E i-survivors (TI = WG * E an i-tile) against
// them and adds the partial ranks into the row's rank counters (ctr, atomically; zero ones skipped); the last
// of an i-tile's workgroups to arrive (merge.glsl's last_to_arrive) reads its survivors' ranks, leaves them
// zero and writes those survivors out. One workgroup of the row also zeroes the survivors' slot counter (as
// gradix_sort does), so every counter is left zero. Bindings: the input, the output values and indices, work,
// ctr. Shared memory: sj[TJ] (uvec2), s_last.
// ctr beyond the rows' CTR_WORDS (lowering.py sizes it): [n CTR_WORDS, + n K) row s's rank counters at s K + i;
// [.., + n ni) each (row, i-tile)'s arrival counter.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define GRADIX_BINDING 3
#include "gradix.glsl"

layout(constant_id = 1) const uint TJ = 256;  // a j-tile's survivors (TopK1Tuning.GRADIX_RANK_TJ)
layout(constant_id = 2) const uint E = 2;     // i-survivors a thread (TopK1Tuning.GRADIX_RANK_E, 1..RANK_EMAX)
const uint RANK_EMAX = 4u;

shared uvec2 sj[TJ];
shared uint s_last;

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint TI = WG * E;
    uint ni = (pc.K + TI - 1u) / TI, nj = (pc.K + TJ - 1u) / TJ;
    uint s = g / (ni * nj), r = g % (ni * nj), it = r / nj, jt = r % nj;
    uint surv = surv_at(s);
    uint j0 = jt * TJ, nt = min(TJ, pc.K - j0);
    for (uint e = tid; e < nt; e += WG) sj[e] = uvec2(work[surv + 2u * (j0 + e)], work[surv + 2u * (j0 + e) + 1u]);
    uint ki[RANK_EMAX], ii[RANK_EMAX], rk[RANK_EMAX];
    [[unroll]] for (uint u = 0u; u < RANK_EMAX; ++u) {
        uint i = it * TI + u * WG + tid;
        bool real = u < E && i < pc.K;
        ki[u] = real ? work[surv + 2u * i] : 0u;
        ii[u] = real ? work[surv + 2u * i + 1u] : SENT_IDX;
        rk[u] = 0u;
    }
    if (r == 0u && tid == 0u) ctr[ctr_row(s) + GBINS + 1u] = 0u;  // the survivors' slot counter (gradix_collect's)
    barrier();
    for (uint j = 0u; j < nt; ++j) {
        uvec2 q = sj[j];
        [[unroll]] for (uint u = 0u; u < RANK_EMAX; ++u)
            if (u < E) rk[u] += uint(q.x > ki[u]) + uint(q.x == ki[u] && q.y < ii[u]);
    }
    uint rank0 = pc.n_seq * CTR_WORDS + s * pc.K;
    [[unroll]] for (uint u = 0u; u < RANK_EMAX; ++u) {
        uint i = it * TI + u * WG + tid;
        if (u < E && i < pc.K && rk[u] != 0u) atomicAdd(ctr[rank0 + i], rk[u]);
    }
    // The last of the i-tile's nj workgroups to arrive: every partial rank is visible to it.
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) {
        uint at = pc.n_seq * (CTR_WORDS + pc.K) + s * ni + it;
        uint done = atomicAdd(ctr[at], 1u);
        s_last = done == nj - 1u ? 1u : 0u;
        if (s_last != 0u) ctr[at] = 0u;
    }
    barrier();
    if (s_last == 0u) return;
    memoryBarrierBuffer();
    uint base = seq_base(s);
    [[unroll]] for (uint u = 0u; u < RANK_EMAX; ++u) {
        uint i = it * TI + u * WG + tid;
        if (u < E && i < pc.K) write_out(s, atomicExchange(ctr[rank0 + i], 0u), ii[u], base);  // read, leave zero
    }
}
