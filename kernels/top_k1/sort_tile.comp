#version 450
// DML TOP_K1, path "sort" (ops/top_k1.py), its tile steps: K too large for the shared buffer (pow2(K) >
// B/2). A global bitonic sort of (key, index) rows of P (pow2 >= L, >= 2B) in `cand`: this module sorts
// tiles of B in shared memory (INIT: the first dispatch, loading keys from the input, all stages up to B;
// later dispatches: the stage `size`'s strides below B), sort_global.comp the longer strides; the last
// stage writes the first K of each row. INIT stays a specialization constant (as before): one loop, two
// sources of the tile. Shared memory: skey/sidx[B] (vkops.ops.top_k1_paths.module_shared_bytes).
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"

layout(constant_id = 1) const uint B = 2048;  // shared buffer entries (power of two)
layout(constant_id = 2) const bool INIT = false;  // the first dispatch: tiles from the input

// Mirrored by vkops.ops.top_k1.PUSH["sort_tile"] (tests/test_manifest.py checks it).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint L;           // axis length
    uint K;
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint n_other;     // merged non-axis dims (o_sizes, o_strides)
    uint tiles;       // tiles a row (P / B)
    uint P;           // padded row length (pow2)
    uint size;        // the bitonic stage
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"
layout(binding = 3) coherent buffer Cand { uint cand[]; };    // (key, index) pairs, rows of P

shared uint skey[B];
shared uint sidx[B];
const bool SWIZZLE = false;
#include "networks.glsl"

// SORT: rows of P (key, index) pairs in cand; global element i sorts descending within the stage
// `size` when (i & size) == 0, so after the last stage (size == P) each row is descending.
void run_sort_tile(uint g, bool init) {
    uint tid = gl_LocalInvocationID.x;
    uint s = g / pc.tiles, t = g % pc.tiles;
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

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    run_sort_tile(g, INIT);
}
