// QUANTIZED_LINEAR_MATRIX_MULTIPLY: push constants, scale / zero-point bindings and the fused
// requantizing epilogue shared by qlmm.comp (portable) and qlmm_coopmat.comp (cooperative matrix).
// Bindings 0 (A) and 1 (B) are declared by each kernel (uint words or uvec4).

// Mirrored by vkops.ops.qlmm.QLMM_PUSH.
layout(push_constant) uniform Push {
    uint M, N, K, flags;
    uint C;                  // output channel count: gl_WorkGroupID.z = b * C + c
    uint a_sb, a_sc, a_sm;   // A element strides (batch, channel, row); the k stride is 1
    uint b_sb, b_sc, b_sk;   // B element strides (batch, channel, k row); the n stride is 1. With
                             // F_B_COLS (qlmm_coopmat DIRECT_B only) b_sk is the n stride, the k stride 1.
    uint splits;             // split-K factor (SPLIT_K variants); 0 or 1: none. qlmm_coopmat: S | F << 8, F
                             // whole tiles before the split ones (a tail split)
} pc;

const uint F_A_SIGNED = 1u, F_B_SIGNED = 2u, F_O_SIGNED = 4u;
const uint F_SA_ROW = 8u, F_ZA_ROW = 16u, F_SB_COL = 32u, F_ZB_COL = 64u, F_SO_ROW = 128u, F_ZO_ROW = 256u;
const uint F_B_COLS = 512u;  // B column-major: each column's K bytes are contiguous

layout(binding = 2) readonly buffer SA { float sa_buf[]; };
layout(binding = 3) readonly buffer ZA { uint za_buf[]; };
layout(binding = 4) readonly buffer SB { float sb_buf[]; };
layout(binding = 5) readonly buffer ZB { uint zb_buf[]; };
layout(binding = 6) readonly buffer SO { float so_buf[]; };
layout(binding = 7) readonly buffer ZO { uint zo_buf[]; };
layout(binding = 8) buffer Out { uint out_buf[]; };

bool has(uint f) { return (pc.flags & f) != 0u; }

// Byte i (0..3) of a word, sign- or zero-extended.
int byte_of(uint word, uint i, bool sgn) {
    return sgn ? bitfieldExtract(int(word), int(i * 8u), 8) : int(bitfieldExtract(word, int(i * 8u), 8));
}

int za_at(uint m) { uint i = has(F_ZA_ROW) ? m : 0u; return byte_of(za_buf[i >> 2], i & 3u, has(F_A_SIGNED)); }
int zb_at(uint n) { uint i = has(F_ZB_COL) ? n : 0u; return byte_of(zb_buf[i >> 2], i & 3u, has(F_B_SIGNED)); }
int zo_at(uint m) { uint i = has(F_ZO_ROW) ? m : 0u; return byte_of(zo_buf[i >> 2], i & 3u, has(F_O_SIGNED)); }
float sa_at(uint m) { return sa_buf[has(F_SA_ROW) ? m : 0u]; }
float sb_at(uint n) { return sb_buf[has(F_SB_COL) ? n : 0u]; }
float so_at(uint m) { return so_buf[has(F_SO_ROW) ? m : 0u]; }

// saturate(roundEven(acc * scale) + zero point), as the output's byte pattern.
uint requant(int acc, float scale, int zo) {
    float y = roundEven(float(acc) * scale) + float(zo);
    y = has(F_O_SIGNED) ? clamp(y, -128.0, 127.0) : clamp(y, 0.0, 255.0);
    return uint(int(y)) & 0xFFu;
}

// Store `cnt` (<= 8) consecutive output bytes starting at element e0. Whole words this thread owns
// are stored; words shared with a neighbour (rows not word-aligned) are merged with atomics on
// disjoint bits, so the result does not depend on which thread gets there first.
void store_bytes(uint e0, uint cnt, uint v[8]) {
    uint i = 0u;
    while (i < cnt) {
        uint e = e0 + i, w = e >> 2, s = e & 3u;
        uint take = min(4u - s, cnt - i);
        uint word = 0u, mask = 0u;
        for (uint t = 0u; t < take; ++t) {
            word |= v[i + t] << ((s + t) * 8u);
            mask |= 0xFFu << ((s + t) * 8u);
        }
        if (take == 4u) {
            out_buf[w] = word;
        } else {
            atomicAnd(out_buf[w], ~mask);
            atomicOr(out_buf[w], word);
        }
        i += take;
    }
}

// Transpose a 4x4 byte block: w[r] holds columns 0..3 of row r; afterwards w[c] holds rows 0..3 of column c.
void transpose4(inout uint w0, inout uint w1, inout uint w2, inout uint w3) {
    uint a0 = (w0 & 0x00FF00FFu) | ((w1 << 8) & 0xFF00FF00u);
    uint a1 = ((w0 >> 8) & 0x00FF00FFu) | (w1 & 0xFF00FF00u);
    uint a2 = (w2 & 0x00FF00FFu) | ((w3 << 8) & 0xFF00FF00u);
    uint a3 = ((w2 >> 8) & 0x00FF00FFu) | (w3 & 0xFF00FF00u);
    w0 = (a0 & 0x0000FFFFu) | (a2 << 16);
    w2 = (a0 >> 16) | (a2 & 0xFFFF0000u);
    w1 = (a1 & 0x0000FFFFu) | (a3 << 16);
    w3 = (a1 >> 16) | (a3 & 0xFFFF0000u);
}

// Requantize sums v of row m, columns n .. n + 3 (those below N) and store them.
void store4(ivec4 v, uint z, uint m, uint n) {
    float sa = sa_at(m), so = so_at(m);
    int zo = zo_at(m);
    uint o[8];
    [[unroll]] for (uint c = 0u; c < 8u; ++c) o[c] = 0u;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) o[c] = n + c < pc.N ? requant(v[c], sa * sb_at(n + c) / so, zo) : 0u;
    store_bytes((z * pc.M + m) * pc.N + n, min(4u, pc.N - n), o);
}
