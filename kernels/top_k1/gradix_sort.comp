#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), the last dispatch: one workgroup a row loads its K survivors
// (gradix_collect), pads them to B = pow2(K) with sentinels, bitonic-sorts them in shared memory (networks.glsl's
// sort_runs: key descending, then index ascending) and writes the first K; it leaves the row's survivor slot
// counter zero. Bindings: the input, the output values and indices, work, ctr. Shared memory: skey/sidx[B]
// (B = 4096: 32 KiB; vkops.ops.top_k1.paths.gradix_path plans it only where that fits). SHUF=1
// (top_k1_gradix_sort_sg_*): the network's short strides in registers and subgroup shuffles, planned with a
// workgroup of B/4 where the device allows (up to 1024).
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define GRADIX_BINDING 3
#include "gradix.glsl"

layout(constant_id = 1) const uint B = 4096;  // pow2(K): the sort's entries

shared uint skey[B];
shared uint sidx[B];
const bool SWIZZLE = false;
#include "networks.glsl"

void main() {
    uint s = linear_group();
    if (s >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint surv = surv_at(s);
    for (uint e = tid; e < B; e += WG) {
        bool real = e < pc.K;
        skey[e] = real ? work[surv + 2u * e] : 0u;
        sidx[e] = real ? work[surv + 2u * e + 1u] : SENT_IDX;
    }
    if (tid == 0u) ctr[ctr_row(s) + NBINS + 1u] = 0u;
    barrier();
    sort_runs(B, B, 0u);
    uint base = seq_base(s);
    for (uint j = tid; j < pc.K; j += WG) write_out(s, j, sidx[j], base);
}
