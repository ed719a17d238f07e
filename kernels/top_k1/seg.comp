#version 450
// DML TOP_K1, path "seg" (ops/top_k1.py): rows of <= B elements. G whole sequences a workgroup, each in a
// slot of P = pow2(L) entries of the shared buffer as (key, index) pairs (keys in io.glsl), reduced to each
// row's sorted top Kp by the bitonic networks (networks.glsl: runs of Kp sorted, then the better half of
// two runs kept and merged, Shanbhag, Pirk & Madden, SIGMOD 2018), the first K written. One dispatch.
// Its own module: the only algorithm that swizzles the shared buffer (SWIZZLE) and holds no streaming or
// radix code. SHUF=1 (top_k1_seg_sg_*): the networks' short strides in registers and subgroup shuffles.
// Shared memory: skey/sidx[B], s_base[WG] (vkops.ops.top_k1_paths.module_shared_bytes).
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"

layout(constant_id = 1) const uint B = 2048;  // shared buffer entries (power of two)

// Mirrored by vkops.ops.top_k1.PUSH["seg"] (tests/test_manifest.py checks it).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint n_seq;       // sequences
    uint L;           // axis length
    uint K;
    uint Kp;          // pow2 >= K
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint n_other;     // merged non-axis dims (o_sizes, o_strides)
    uint G;           // sequences a workgroup
    uint P;           // slot a sequence (pow2 >= L)
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"

shared uint skey[B];
shared uint sidx[B];
shared uint s_base[gl_WorkGroupSize.x];  // the rows' input offsets
const bool SWIZZLE = true;
#include "networks.glsl"

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

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    run_seg(g);
}
