#version 450
// DML QUANTIZED_LINEAR_MATRIX_MULTIPLY, portable: any Vulkan device, no optional features.
// One workgroup computes a BM x BN output tile of one batch (gl_WorkGroupID = (n tile, m tile, batch)).
// A (BM x BK) and B (BK x BN) tiles are read as 32-bit words of four 8-bit values (any alignment:
// a word pair is funnel-shifted), zero points subtracted on the way into shared memory, products
// accumulated exactly in int32 (|a - za| * |b - zb| <= 255 * 255, K <= 33025), and the
// requantization runs in the epilogue straight to packed 8-bit output words.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;  // TX * TY: 256, or 128 where that is the device's limit

const uint TM = 4u, TN = 4u;     // outputs per thread (rows, columns)
const uint TX = 16u;             // threads across N
const uint TY = gl_WorkGroupSize.x / TX;  // threads across M
const uint BM = TM * TY, BN = TN * TX, BK = 16u;
// Words of the B tile each thread stages per K step: BK * BN / 4 words over the workgroup.
const uint B_PASSES = (BK * BN / 4u) / gl_WorkGroupSize.x;

layout(binding = 0) readonly buffer BufA { uint a_buf[]; };
layout(binding = 1) readonly buffer BufB { uint b_buf[]; };
#include "qlmm_common.glsl"

shared int As[BK * BM];  // [k][m], zero point subtracted
shared int Bs[BK * BN];  // [k][n]

// Four consecutive 8-bit elements starting at element e (e need not be word aligned).
#define LOAD4(buf, e, out_) {                                                  \
    uint wi_ = (e) >> 2, sh_ = ((e) & 3u) * 8u;                                \
    uint lo_ = buf[wi_];                                                       \
    if (sh_ == 0u) out_ = lo_;                                                 \
    else {                                                                     \
        uint hi_ = wi_ + 1u < uint(buf.length()) ? buf[wi_ + 1u] : 0u;         \
        out_ = (lo_ >> sh_) | (hi_ << (32u - sh_));                            \
    } }

void main() {
    uint M = pc.M, N = pc.N, K = pc.K;
    uint lid = gl_LocalInvocationID.x;
    uint tx = lid % TX, ty = lid / TX;
    uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
    uint z = gl_WorkGroupID.z, bi = z / pc.C, ci = z % pc.C;
    uint abase = bi * pc.a_sb + ci * pc.a_sc;
    uint bbase = bi * pc.b_sb + ci * pc.b_sc;
    bool a_sgn = has(F_A_SIGNED), b_sgn = has(F_B_SIGNED);

    // The word of A (and the first of B) this thread stages per K step.
    uint arow = lid / (BK / 4u), akq = 4u * (lid % (BK / 4u));
    uint bkr = lid / (BN / 4u), bnq = 4u * (lid % (BN / 4u));
    uint am = m0 + arow;
    int za = am < M ? za_at(am) : 0;
    int zb[4];
    [[unroll]] for (uint t = 0u; t < 4u; ++t) zb[t] = n0 + bnq + t < N ? zb_at(n0 + bnq + t) : 0;

    int acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i)
        [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = 0;

    for (uint k0 = 0u; k0 < K; k0 += BK) {
        {
            uint k = k0 + akq, w = 0u;
            if (am < M && k < K) LOAD4(a_buf, abase + am * pc.a_sm + k, w);
            [[unroll]] for (uint t = 0u; t < 4u; ++t)
                As[(akq + t) * BM + arow] = (am < M && k + t < K) ? byte_of(w, t, a_sgn) - za : 0;
        }
        for (uint p = 0u; p < B_PASSES; ++p) {
            uint r = bkr + p * (gl_WorkGroupSize.x / (BN / 4u));
            uint k = k0 + r, n = n0 + bnq, w = 0u;
            if (k < K && n < N) LOAD4(b_buf, bbase + k * pc.b_sk + n, w);
            [[unroll]] for (uint t = 0u; t < 4u; ++t)
                Bs[r * BN + bnq + t] = (k < K && n + t < N) ? byte_of(w, t, b_sgn) - zb[t] : 0;
        }
        barrier();
        [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
            int a[TM], b[TN];
            [[unroll]] for (uint i = 0u; i < TM; ++i) a[i] = As[kk * BM + ty * TM + i];
            [[unroll]] for (uint j = 0u; j < TN; ++j) b[j] = Bs[kk * BN + tx * TN + j];
            [[unroll]] for (uint i = 0u; i < TM; ++i)
                [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        barrier();
    }

    // Epilogue: requantize and store whole output words.
    uint nt = n0 + tx * TN;
    if (nt >= N) return;
    uint cnt = min(TN, N - nt);
    float sb[TN];
    [[unroll]] for (uint j = 0u; j < TN; ++j) sb[j] = nt + j < N ? sb_at(nt + j) : 0.0;
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
        uint m = m0 + ty * TM + i;
        if (m >= M) break;
        float sa = sa_at(m), so = so_at(m);
        int zo = zo_at(m);
        uint v[8];
        [[unroll]] for (uint j = 0u; j < 8u; ++j) v[j] = 0u;
        [[unroll]] for (uint j = 0u; j < TN; ++j) v[j] = requant(acc[i][j], sa * sb[j] / so, zo);
        store_bytes((z * M + m) * N + nt, cnt, v);
    }
}
