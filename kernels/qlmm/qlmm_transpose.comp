#version 450
// QUANTIZED_LINEAR_MATRIX_MULTIPLY's B transposed: row-major K x N bytes (DML's packed order) copied column-major
// (N x K, each column's K bytes contiguous) for the cooperative-matrix tiles' BC builds, which multiply B column-major
// faster than the row-major tiles by more than this copy costs on large products (QlmmTuning.BC_TRANSPOSE_MIN_M,
// docs/tuning/qlmm.md, session 33). One workgroup a T x T-byte tile: its rows loaded 16 bytes a thread into shared
// memory (all of a thread's loads issued first), then its columns stored 16 bytes a thread. Host requirements:
// K % 16 == 0, N % 16 == 0, the k row stride a multiple of 16 bytes; 256 invocations.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint T = 64u;  // tile side in bytes, 64 or 128 (QlmmTuning.BC_TRANSPOSE_TILE)
layout(binding = 0) readonly buffer BufB { uvec4 b_buf[]; };
layout(binding = 1) writeonly buffer BufT { uvec4 t_buf[]; };

// Mirrored by vkops.ops.qlmm.TRANSPOSE_PUSH.
layout(push_constant) uniform Push {
    uint K, N;
    uint b_sk;  // B's k row stride in bytes (elements)
} pc;

const uint WG = 256u;
const uint SW = T / 4u + 1u;      // words a shared row: one more against bank conflicts
const uint LPR = T / 16u;         // 16-byte loads a tile row (stores a column)
const uint RPP = WG / LPR;        // rows (columns) a pass
const uint PASSES = T / RPP;      // T = 64: 1, T = 128: 4
shared uint sh[T * SW];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint n0 = gl_WorkGroupID.x * T, k0 = gl_WorkGroupID.y * T;
    uint c = (lid % LPR) * 16u, r0 = lid / LPR;  // load: k rows r0 + p * RPP, 16 columns from c
    uvec4 v[PASSES];
    [[unroll]] for (uint p = 0u; p < PASSES; ++p) {
        uint r = r0 + p * RPP;
        v[p] = (k0 + r < pc.K && n0 + c < pc.N) ? b_buf[((k0 + r) * pc.b_sk + n0 + c) >> 4] : uvec4(0u);
    }
    [[unroll]] for (uint p = 0u; p < PASSES; ++p)
        [[unroll]] for (uint q = 0u; q < 4u; ++q) sh[(r0 + p * RPP) * SW + c / 4u + q] = v[p][q];
    barrier();
    // store: columns lid / LPR + p * RPP, 16 k rows from kc: consecutive lanes along a column's k, whole 32-byte
    // sectors a warp (consecutive lanes on consecutive columns, 16 bytes each, took 22.5 against 13.1 us for 16 MiB:
    // docs/tuning/qlmm.md, session 33)
    uint kc = (lid % LPR) * 16u;
    [[unroll]] for (uint p = 0u; p < PASSES; ++p) {
        uint n = lid / LPR + p * RPP;
        if (n0 + n >= pc.N || k0 + kc >= pc.K) continue;
        uint w = n >> 2u, s = (n & 3u) * 8u;
        uvec4 o;
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
            uint k = kc + 4u * q;
            o[q] = ((sh[k * SW + w] >> s) & 0xFFu) | (((sh[(k + 1u) * SW + w] >> s) & 0xFFu) << 8u) |
                   (((sh[(k + 2u) * SW + w] >> s) & 0xFFu) << 16u) | (((sh[(k + 3u) * SW + w] >> s) & 0xFFu) << 24u);
        }
        t_buf[((n0 + n) * pc.K + k0 + kc) >> 4] = o;
    }
}
