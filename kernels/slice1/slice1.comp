#version 450
// DML SLICE1: out[o] = in[base + sum_d coord_d(o) * stride_d], output packed.
// The host folds the window (offsets, sign of strides) and the input's own strides into `base` and
// `stride`, and merges dimensions that walk memory evenly, so most slices reach here with rank 1-3.
// One thread writes whole output words (32/ELEM_BITS elements each): no two threads share a word.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WORDS_PER_THREAD = 4;

layout(binding = 0) readonly buffer Src { uint src[]; };
layout(binding = 1) writeonly buffer Dst { uint dst[]; };
// The same buffers as 16-byte vectors, for rows that are 16-byte aligned runs (vec mode).
layout(binding = 0) readonly buffer Src4 { uvec4 src4[]; };
layout(binding = 1) writeonly buffer Dst4 { uvec4 dst4[]; };

// Mirrored by vkops.ops.slice1.SlicePush.
layout(push_constant) uniform Push {
    uint rank;       // merged rank, outermost first
    uint n_words;    // output words
    uint n_elems;    // output elements
    uint base;       // input element of output element 0
    uint row_words;  // words per output row when rows are word-aligned, else 0 (generic mode)
    uint tiles_per_row;
    uint n_groups;   // workgroups that have work
    uint vec;        // 32-bit rows of 16-byte aligned runs: 1 = inner stride 1, 2 = inner stride 2; else 0
    uint sizes[8];   // merged output sizes
    uint strides[8]; // input element strides (int32 bit patterns; uint arithmetic wraps correctly)
} pc;

const uint E = 32u / ELEM_BITS;  // elements per word

// Input element of the output element whose coordinates in dims [0, last] are those of `e`.
uint input_index(uint e, uint last) {
    uint idx = pc.base;
    for (int d = int(last); d >= 0; --d) {
        uint s = pc.sizes[d];
        idx += (e % s) * pc.strides[d];
        e /= s;
    }
    return idx;
}

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint wg = gl_WorkGroupSize.x;
    uint inner = pc.rank - 1;
    uint s_in = pc.strides[inner];

#if ELEM_BITS == 32
    if (pc.vec != 0) {
        // 16-byte loads and stores; all loads issue before the first store.
        uint row = g / pc.tiles_per_row;
        uint tile = g - row * pc.tiles_per_row;
        uint row_base = (inner == 0 ? pc.base : input_index(row, inner - 1)) / 4;
        uint row_vecs = pc.row_words / 4;
        uint out_base = row * row_vecs;
        uvec4 v[WORDS_PER_THREAD];
        [[unroll]] for (uint k = 0; k < WORDS_PER_THREAD; ++k) {
            uint j = (tile * WORDS_PER_THREAD + k) * wg + gl_LocalInvocationID.x;
            if (j < row_vecs) {
                if (pc.vec == 1) {
                    v[k] = src4[row_base + j];
                } else {
                    uvec4 a = src4[row_base + 2 * j], b = src4[row_base + 2 * j + 1];
                    v[k] = uvec4(a.x, a.z, b.x, b.z);
                }
            }
        }
        [[unroll]] for (uint k = 0; k < WORDS_PER_THREAD; ++k) {
            uint j = (tile * WORDS_PER_THREAD + k) * wg + gl_LocalInvocationID.x;
            if (j < row_vecs) dst4[out_base + j] = v[k];
        }
        return;
    }
#endif
    if (pc.row_words != 0) {
        // Rows start on word boundaries: decompose the row once, then walk the inner dimension.
        uint row = g / pc.tiles_per_row;
        uint tile = g - row * pc.tiles_per_row;
        uint row_base = inner == 0 ? pc.base : input_index(row, inner - 1);
        uint out_base = row * pc.row_words;
        [[unroll]] for (uint k = 0; k < WORDS_PER_THREAD; ++k) {
            uint j = (tile * WORDS_PER_THREAD + k) * wg + gl_LocalInvocationID.x;
            if (j >= pc.row_words) break;
            uint idx = row_base + j * E * s_in;
            uint word = 0;
            [[unroll]] for (uint b = 0; b < E; ++b) {
                word |= LOAD_ELEM(src, idx) << (b * ELEM_BITS);
                idx += s_in;
            }
            dst[out_base + j] = word;
        }
        return;
    }

    // Generic: any word may straddle rows; decompose its first element, then carry as we walk.
    [[unroll]] for (uint k = 0; k < WORDS_PER_THREAD; ++k) {
        uint w = (g * WORDS_PER_THREAD + k) * wg + gl_LocalInvocationID.x;
        if (w >= pc.n_words) break;
        uint e = w * E;
        uint idx = input_index(e, inner);
        uint c = e % pc.sizes[inner];
        uint word = 0;
        for (uint b = 0; b < E && e + b < pc.n_elems; ++b) {
            word |= LOAD_ELEM(src, idx) << (b * ELEM_BITS);
            if (++c == pc.sizes[inner]) {
                c = 0;
                idx = input_index(e + b + 1, inner);
            } else {
                idx += s_in;
            }
        }
        dst[w] = word;
    }
}
