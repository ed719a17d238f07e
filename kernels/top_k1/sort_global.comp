#version 450
// DML TOP_K1, path "sort" (ops/top_k1.py), its global steps: one compare-exchange step of the bitonic
// sort of (key, index) rows in `cand` with a stride of B or more (sort_tile.comp does the shorter ones).
// Keys only: one module for every data type. No shared memory.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"

// Mirrored by vkops.ops.top_k1.PUSH["sort_global"] (tests/test_manifest.py checks it).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint step_groups; // workgroups a row
    uint P;           // padded row length (pow2)
    uint size;        // the bitonic stage
    uint stride;      // the compare distance
} pc;

layout(binding = 0) coherent buffer Cand { uint cand[]; };    // (key, index) pairs, rows of P

// Rows of P (key, index) pairs; global element i sorts descending within the stage `size` when
// (i & size) == 0.
void run_sort_global(uint g) {
    uint s = g / pc.step_groups;
    uint p = (g % pc.step_groups) * WG + gl_LocalInvocationID.x;
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
    run_sort_global(g);
}
