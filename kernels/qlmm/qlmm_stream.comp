#version 450
// DML QUANTIZED_LINEAR_MATRIX_MULTIPLY for decoding-sized M on cooperative matrices (s8 x s8 -> s32,
// 16x16x32): a stream of B. A workgroup owns NR output columns (and MT rows) over a K range; its
// subgroups take the range's steps of STEP_K rows in turn, each on its own, with no workgroup barrier
// until the end:
// - a lane loads 4 whole 16-byte pieces of B per step (a subgroup instruction: whole 32-byte sectors),
//   PF steps ahead of the step it multiplies;
// - row-major B (K x N, DML's packed order): a lane holds 4 consecutive rows of 16 columns and
//   transposes the 4x4 byte blocks, so each word holds 4 k of one column; column-major B (F_B_COLS, a
//   transposed N x K weight) arrives that way. Either way the words go to the subgroup's own slab of
//   shared memory, k contiguous per column, the order the tensor cores take B in;
// - A's rows for the step go to a second slab; the subgroup multiplies the two (subgroup barriers only).
// At the end the subgroups add their tiles with shared atomics and the workgroup requantizes (or, split
// across K, stores a partial tile; the last split of a tile adds them).
// UINT8 operands are shifted into int8 (x ^ 0x80 = x - 128), the offset moved into the zero point:
// sum (a-za)(b-zb) = sum a'b' - zb' sum a' - za' sum b' + K za' zb' (a' = a - oa, za' = za - oa). The row
// sums of a' come from the loaded words; the column sums of b' from the tensor cores: F_NEED_SB puts a
// row of ones in A's first row past M (the host leaves one: M < MT).
// Host requirements: K % 16 == 0, N % 16 == 0, A/B row and batch strides multiples of 16 elements,
// subgroup size 32, one row of tiles (M <= MT).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#include "common.glsl"
#ifndef SPLIT_K
#define SPLIT_K 0
#endif

// Tile shape: compile-time (variants.py), so spirv-opt turns the steps in flight into plain registers.
#ifndef MT
#define MT 16u      // output rows: 16 (variants.py; 32 works, and lost with the row of ones)
#endif
#ifndef NR
#define NR 32u      // output columns per workgroup: 32 (64-row steps) or 64 (32-row steps)
#endif
#ifndef PF
#define PF 2u       // steps in flight per subgroup
#endif
layout(local_size_x_id = 0) in;     // 32 * subgroups

// A subgroup's slabs between its lanes: an execution barrier with shared-memory semantics only (GLSL's
// subgroupBarrier() also orders buffer memory; on the H100 both measured the same).
#define SLAB_SYNC() controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease)

const uint NSG = gl_WorkGroupSize.x / 32u;
const uint TA = MT / 16u, TB = NR / 16u;
const uint LPR = NR / 16u;          // lanes per row of B in a step (row-major B)
const uint STEP_K = 128u / LPR;     // k rows per step: a subgroup loads 2 KiB of B
const uint KT = STEP_K / 32u;       // 16x16x32 products per step and tile
const uint BQ = STEP_K / 16u;       // 16-byte pieces per column (column-major B) or A row, per step
const uint SBS = STEP_K + 16u;      // slab bytes per column of B / row of A, skewed against bank conflicts
// B slab: 16-column tiles TS uvec4s apart, the extra STEP_K bytes shifting each tile's banks, so the LPR
// lanes of a row (one per tile) store into different banks.
const uint TS = (16u * SBS + STEP_K) / 16u;
const uint BSLAB = TB * TS;         // uvec4s per subgroup
const uint ASLAB = MT * SBS / 16u;
const uint AP = MT * BQ / 32u;      // A pieces per lane and step
const uint ONES = 0x01010101u;

layout(binding = 0) readonly buffer BufA { uvec4 a_buf[]; };
layout(binding = 1) readonly buffer BufB { uvec4 b_buf[]; };
#include "qlmm_common.glsl"
#if SPLIT_K
// pc.splits > 1: workgroup x = split * N_tiles + n_tile. Each split stores its corrected int32 tile into
// its slot of Part; the last split of a tile to arrive (per-tile counter in Cnt) adds the slots,
// requantizes and sets the counter back to 0 for the next use.
layout(binding = 9) coherent buffer Part { int part[]; };
layout(binding = 10) coherent buffer Cnt { uint cnt[]; };
shared uint last_flag;
#endif
// zb' (resp. za') may be non-zero: row (column) sums; the values of qlmm_dot.comp (ops/qlmm_dot.py sets both)
const uint F_NEED_SA = 1024u, F_NEED_SB = 2048u;

shared uvec4 Bsl[NSG * BSLAB];
shared uvec4 Asl[NSG * ASLAB];
shared int red[MT * NR];  // the workgroup's tile
shared int rowS[MT];

// Steps in flight: rb[p] the B pieces, ra[p] the A pieces of slot p (raw: flipped when used).
uvec4 rb[PF][4];
uvec4 ra[PF][AP];
uint g_M, g_N, g_K, g_m0, g_n0, g_abase, g_bbase, g_lane;
bool g_cols;

// A clamped index, not a select on the loaded data (which waits for the load where it is issued, as in
// qlmm_coopmat.comp): a piece outside A or B holds element 0, which the step's use never counts (rows
// past M and k past K are zeros in A's slab, columns past N are not stored).
void load_step(uint p, uint st) {
    uint k0 = st * STEP_K;
    if (g_cols) {  // piece i: 16 k of column (lane + 32 i) / BQ
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
            uint idx = g_lane + 32u * i, n = g_n0 + idx / BQ, k = k0 + 16u * (idx % BQ);
            rb[p][i] = b_buf[n < g_N && k < g_K ? (g_bbase + n * pc.b_sk + k) >> 4 : 0u];
        }
    } else {  // piece i: row 4 (lane / LPR) + i, columns 16 (lane % LPR) .. + 15
        uint k = k0 + 4u * (g_lane / LPR), n = g_n0 + 16u * (g_lane % LPR);
        [[unroll]] for (uint i = 0u; i < 4u; ++i)
            rb[p][i] = b_buf[n < g_N && k + i < g_K ? (g_bbase + (k + i) * pc.b_sk + n) >> 4 : 0u];
    }
    [[unroll]] for (uint q = 0u; q < AP; ++q) {
        uint idx = g_lane + 32u * q, m = g_m0 + idx / BQ, k = k0 + 16u * (idx % BQ);
        ra[p][q] = a_buf[m < g_M && k < g_K ? (g_abase + m * pc.a_sm + k) >> 4 : 0u];
    }
}

uint bsum(uvec4 v) {  // sum of the 16 bytes
    uvec4 s = (v & 0x00FF00FFu) + ((v >> 8) & 0x00FF00FFu);
    uint t = s.x + s.y + s.z + s.w;
    return (t & 0xFFFFu) + (t >> 16);
}

void main() {
    uint M = pc.M, N = pc.N, K = pc.K;
    uint lid = gl_LocalInvocationID.x, NT = gl_WorkGroupSize.x;
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    uint gx = (N + NR - 1u) / NR;
    uint S = max(pc.splits, 1u), split = gl_WorkGroupID.x / gx;
    uint n0 = (gl_WorkGroupID.x % gx) * NR, m0 = gl_WorkGroupID.y * MT;
    uint z = gl_WorkGroupID.z, bi = z / pc.C, ci = z % pc.C;
    g_M = M; g_N = N; g_K = K; g_m0 = m0; g_n0 = n0; g_lane = lane; g_cols = has(F_B_COLS);
    g_abase = bi * pc.a_sb + ci * pc.a_sc;
    g_bbase = bi * pc.b_sb + ci * pc.b_sc;
    uint a_flip = has(F_A_SIGNED) ? 0u : 0x80808080u;
    uint b_flip = has(F_B_SIGNED) ? 0u : 0x80808080u;
    bool need_sa = has(F_NEED_SA), need_sb = has(F_NEED_SB);

    // This split's steps, and this subgroup's among them: first, first + NSG, ...
    uint nsteps = (K + STEP_K - 1u) / STEP_K, per = (nsteps + S - 1u) / S;
    uint s_begin = min(split * per, nsteps), s_end = min(s_begin + per, nsteps);
    uint first = s_begin + sg;
    uint mine = s_end > first ? (s_end - first + NSG - 1u) / NSG : 0u;
    [[unroll]] for (uint p = 0u; p < PF; ++p) {
        if (p < mine) load_step(p, first + p * NSG);
    }

    for (uint i = lid; i < MT * NR; i += NT) red[i] = 0;
    for (uint i = lid; i < MT; i += NT) rowS[i] = 0;
    // Per A piece of this lane: its row (the same every step) and that row's sum of a' over the pieces.
    uint a_row[AP];
    int rowacc[AP];
    [[unroll]] for (uint q = 0u; q < AP; ++q) {
        a_row[q] = (lane + 32u * q) / BQ;
        rowacc[q] = 0;
    }
    uint ones_row = need_sb ? M - m0 : MT;  // local row of ones (the host leaves M < MT)

    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[TA][TB];
    [[unroll]] for (uint i = 0u; i < TA; ++i)
        [[unroll]] for (uint j = 0u; j < TB; ++j)
            acc[i][j] = coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0);

    uint bs = sg * BSLAB, as_ = sg * ASLAB;
    for (uint it = 0u; it < mine; it += PF) {
        // One step per slot p (an if, not continue or break: spirv-opt then unrolls the loop and the
        // slots become plain registers).
        [[unroll]] for (uint p = 0u; p < PF; ++p) {
            uint i = it + p;
            if (i < mine) {
                uint k0 = (first + i * NSG) * STEP_K;
                SLAB_SYNC();  // the previous step's slabs have been read
                // B into the slab: column c's k bytes contiguous (tile c / 16, column c % 16).
                if (g_cols) {
                    [[unroll]] for (uint t = 0u; t < 4u; ++t) {
                        uint idx = lane + 32u * t, c = idx / BQ, kq = idx % BQ;
                        uvec4 v = rb[p][t] ^ (k0 + 16u * kq < K ? uvec4(b_flip) : uvec4(0u));
                        Bsl[bs + (c / 16u) * TS + ((c % 16u) * SBS + 16u * kq) / 16u] = v;
                    }
                } else {
                    uint r4 = 4u * (lane / LPR), cb = lane % LPR;
                    uvec4 w[4];
                    [[unroll]] for (uint t = 0u; t < 4u; ++t)
                        w[t] = rb[p][t] ^ (k0 + r4 + t < K ? uvec4(b_flip) : uvec4(0u));
                    uint wbase = (bs + cb * TS) * 4u + r4 / 4u;  // word of (column 16 cb, k r4)
                    [[unroll]] for (uint q4 = 0u; q4 < 4u; ++q4) {
                        uint x0 = w[0][q4], x1 = w[1][q4], x2 = w[2][q4], x3 = w[3][q4];
                        transpose4(x0, x1, x2, x3);  // xc: rows r4 .. r4+3 of column 16 cb + 4 q4 + c
                        uint e = wbase + 4u * q4 * (SBS / 4u);
                        Bsl[e >> 2][e & 3u] = x0;
                        e += SBS / 4u;
                        Bsl[e >> 2][e & 3u] = x1;
                        e += SBS / 4u;
                        Bsl[e >> 2][e & 3u] = x2;
                        e += SBS / 4u;
                        Bsl[e >> 2][e & 3u] = x3;
                    }
                }
                // A's rows into the other slab; the row of ones where asked.
                [[unroll]] for (uint q = 0u; q < AP; ++q) {
                    uint kq = (lane + 32u * q) % BQ, r = a_row[q];
                    bool k_ok = k0 + 16u * kq < K;
                    uvec4 v = m0 + r < M ? (k_ok ? ra[p][q] ^ uvec4(a_flip) : uvec4(0u))
                                         : (r == ones_row && k_ok ? uvec4(ONES) : uvec4(0u));
                    if (need_sa) rowacc[q] += int(bsum(v ^ 0x80808080u)) - 2048;
                    Asl[as_ + (r * SBS + 16u * kq) / 16u] = v;
                }
                // The slot is free: the step PF ahead goes out now, its latency behind these products.
                if (i + PF < mine) load_step(p, first + (i + PF) * NSG);
                SLAB_SYNC();
                [[unroll]] for (uint kt = 0u; kt < KT; ++kt) {
                    coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> mA[TA];
                    [[unroll]] for (uint ia = 0u; ia < TA; ++ia)
                        coopMatLoad(mA[ia], Asl, as_ + (16u * ia * SBS + 32u * kt) / 16u, SBS / 16u,
                                    gl_CooperativeMatrixLayoutRowMajor);
                    [[unroll]] for (uint jb = 0u; jb < TB; ++jb) {
                        coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> mB;
                        coopMatLoad(mB, Bsl, bs + jb * TS + 2u * kt, SBS / 16u,
                                    gl_CooperativeMatrixLayoutColumnMajor);
                        [[unroll]] for (uint ia = 0u; ia < TA; ++ia)
                            acc[ia][jb] = coopMatMulAdd(mA[ia], mB, acc[ia][jb]);
                    }
                }
            }
        }
    }
    // The subgroups' tiles into red (each through its own slab), the row sums into rowS.
    barrier();  // red and rowS are zeroed
    [[unroll]] for (uint ia = 0u; ia < TA; ++ia)
        [[unroll]] for (uint jb = 0u; jb < TB; ++jb) {
            SLAB_SYNC();
            coopMatStore(acc[ia][jb], Bsl, bs, 4u, gl_CooperativeMatrixLayoutRowMajor);
            SLAB_SYNC();
            for (uint e = lane; e < 256u; e += 32u)
                atomicAdd(red[(16u * ia + e / 16u) * NR + 16u * jb + e % 16u], int(Bsl[bs + e / 4u][e % 4u]));
        }
    if (need_sa)
        [[unroll]] for (uint q = 0u; q < AP; ++q) atomicAdd(rowS[a_row[q]], rowacc[q]);
    barrier();

    // Zero-point terms of this K range (linear: each split adds its own).
    int oa = has(F_A_SIGNED) ? 0 : 128, ob = has(F_B_SIGNED) ? 0 : 128;
    int kr = int(min(s_end * STEP_K, K) - min(s_begin * STEP_K, K));
#if SPLIT_K
    const uint SLOT = MT * NR;
    uint tile = (z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gx + n0 / NR;
    uint base = (tile * S + split) * SLOT;
#endif
    for (uint idx = lid; idx < MT * NR / 4u; idx += NT) {
        uint ml = idx / (NR / 4u), nl = 4u * (idx % (NR / 4u));
        uint m = m0 + ml, n = n0 + nl;
        ivec4 v = ivec4(red[ml * NR + nl], red[ml * NR + nl + 1u], red[ml * NR + nl + 2u], red[ml * NR + nl + 3u]);
        if (m < M && n < N) {
            int zap = za_at(m) - oa;
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                int zbp = zb_at(n + c) - ob;
                int colsum = need_sb ? red[ones_row * NR + nl + c] : 0;
                v[c] += -zbp * rowS[ml] - zap * colsum + kr * zap * zbp;
            }
        }
#if SPLIT_K
        uint pe = base + ml * NR + nl;
        part[pe] = v.x; part[pe + 1u] = v.y; part[pe + 2u] = v.z; part[pe + 3u] = v.w;
#else
        if (m < M && n < N) store4(v, z, m, n);
#endif
    }
#if SPLIT_K
    memoryBarrierBuffer();
    barrier();
    if (lid == 0u) last_flag = (atomicAdd(cnt[tile], 1u) == S - 1u) ? 1u : 0u;
    barrier();
    if (last_flag == 0u) return;
    memoryBarrierBuffer();
    if (lid == 0u) cnt[tile] = 0u;
    uint tbase = tile * S * SLOT;
    for (uint idx = lid; idx < MT * NR / 4u; idx += NT) {
        uint ml = idx / (NR / 4u), nl = 4u * (idx % (NR / 4u));
        uint m = m0 + ml, n = n0 + nl;
        if (m >= M || n >= N) continue;
        ivec4 v = ivec4(0);
        for (uint sp = 0u; sp < S; ++sp) {
            uint e = tbase + sp * SLOT + ml * NR + nl;
            v += ivec4(part[e], part[e + 1u], part[e + 2u], part[e + 3u]);
        }
        store4(v, z, m, n);
    }
#endif
}
