#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), the last dispatch: one workgroup a row loads its K survivors
// (gradix_collect), pads them to B = pow2(K) with sentinels, bitonic-sorts them in shared memory (networks.glsl's
// sort_runs: key descending, then index ascending) and writes the first K; it leaves the row's survivor slot
// counter zero. Bindings: the input, the output values and indices, work, ctr. Shared memory: skey/sidx[B]
// (B = 4096: 32 KiB; vkops.ops.top_k1.paths.gradix_path plans it only where that fits). SHUF=1
// (top_k1_gradix_sort_sg_*): the network's short strides in registers and subgroup shuffles, planned with a
// workgroup of B/4 where the device allows (up to 1024).
//
// PSORT=1 (top_k1_gradix_psort[_sg]_*, TopK1Tuning.GRADIX_SORT_PARTS = P > 1): the sort in P parts a row, one
// workgroup each: part p sorts survivors [p B, (p + 1) B) (B = pow2(K) / P here; entries >= K are sentinels,
// which sort after every real one) and writes its real entries back in place, sorted: a run of the row's survivors
// in `work`. Part 0 zeroes the row's survivor slot counter. gradix_pmerge.comp then merges the P runs into the
// output. Bindings: work, ctr (the input is not read: io.glsl's binding 0 is dropped as dead).
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#ifndef PSORT
#define PSORT 0
#endif
#if PSORT
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 0
#else
#define GRADIX_BINDING 3
#endif
#include "gradix.glsl"

layout(constant_id = 1) const uint B = 4096;  // pow2(K): the sort's entries (PSORT: pow2(K) / P, a part's)

shared uint skey[B];
shared uint sidx[B];
const bool SWIZZLE = false;
#include "networks.glsl"

void main() {
#if PSORT
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint P = pc.Kp / B;
    uint s = g / P, e0 = (g % P) * B;
    if (e0 >= pc.K) return;  // a part of sentinels only (the whole workgroup)
    uint nreal = min(B, pc.K - e0);
#else
    uint s = linear_group();
    if (s >= pc.n_groups) return;
    uint e0 = 0u, nreal = pc.K;
#endif
    uint tid = gl_LocalInvocationID.x;
    uint surv = surv_at(s) + 2u * e0;
    for (uint e = tid; e < B; e += WG) {
        bool real = e < nreal;
        skey[e] = real ? work[surv + 2u * e] : 0u;
        sidx[e] = real ? work[surv + 2u * e + 1u] : SENT_IDX;
    }
    if (tid == 0u && e0 == 0u) ctr[ctr_row(s) + GBINS + 1u] = 0u;
    barrier();
    sort_runs(B, B, 0u);
#if PSORT
    for (uint e = tid; e < nreal; e += WG) {
        work[surv + 2u * e] = skey[e];
        work[surv + 2u * e + 1u] = sidx[e];
    }
#else
    uint base = seq_base(s);
    for (uint j = tid; j < pc.K; j += WG) write_out(s, j, sidx[j], base);
#endif
}
