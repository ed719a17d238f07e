#version 450
// DML QUANTIZED_LINEAR_MATRIX_MULTIPLY on VK_KHR_cooperative_matrix: s8 x s8 -> s32, 16x16x32.
// Workgroup: SG_W x SG_H subgroups of 32 lanes; it computes a TILE_M x TILE_N output tile, each
// subgroup a (TILE_M/SG_H) x (TILE_N/SG_W) block of 16x16 int32 accumulators. A (TILE_M x TILE_K)
// and B (TILE_K x TILE_N) tiles are staged through registers into skewed shared memory with 128-bit
// loads; the next tile's global loads are issued before the current tile's multiplies, and nothing uses
// their data before the tile is stored (GET_/PUT_ in qlmm_coopmat_stage.glsl).
// BT variants stage B transposed (n-major), below.
// UINT8 inputs are shifted into int8 on the way in (x ^ 0x80 = x - 128), and zero points are folded
// in the epilogue: sum (a-za)(b-zb) = sum a'b' - zb' sum a' - za' sum b' + K za' zb' with
// a' = a - oa, za' = za - oa (oa = 128 for UINT8, else 0). The HAS_SUMS variant accumulates the row
// sums of A and column sums of B from the staged registers (dot products with ones, below); the other variant is
// used when za' and zb' are all zero. The requantization is fused: each 16x16 accumulator goes
// through a small per-subgroup shared buffer to lanes that write packed 8-bit output words.
// Host requirements: K % 16 == 0, N % 16 == 0, A/B row and batch strides multiples of 16 elements,
// subgroup size 32.
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
// DIRECT_B: B is read straight from the buffer into cooperative matrices, not staged through shared
// memory: for decoding-sized M (one 16-row tile), where B is read once and its staging and barriers
// were the cost. Needs signed B (no offset flip), no row/column sums, K % TILE_K == 0. Reads B
// row-major (K x N, DML's packed order) or column-major (F_B_COLS: a transposed view of an N x K
// weight, PyTorch Linear's order), which is the one that loads whole sectors.
#ifndef DIRECT_B
#define DIRECT_B 0
#endif
// BT: B staged transposed (n-major: each column's TILE_K bytes contiguous), so its cooperative-matrix
// loads are column-major, the order the int8 MMA takes B in (row-major int8 B has no transposing
// shared-memory load: each 32-bit fragment register would gather 4 bytes from 4 rows). A thread loads 4
// consecutive k rows of 16 columns and transposes them in registers (4x4 byte blocks); HAS_SUMS takes B's column
// sums from those rows, as the row-major build does.
#ifndef BT
#define BT 0
#endif
#if BT && DIRECT_B
#error BT stages B through shared memory
#endif
// BC: B column-major in the buffer (F_B_COLS: a transposed view of an N x K weight, PyTorch Linear's order),
// staged n-major as BT stages it but without the byte transposes: its columns are loaded and stored as A's rows
// are, and its cooperative-matrix loads are column-major (HAS_SUMS: its column sums as A's row sums). Instead of a
// copy of B packed row-major first.
#ifndef BC
#define BC 0
#endif
#if BC && (BT || DIRECT_B)
#error BC stages column-major B in place of BT's or DIRECT_B's B
#endif
// DB: two shared buffers a tile; a step stores tile c into one while the subgroups multiply tile c - 1 from the
// other, one barrier a step instead of two. It doubles the tiles' shared memory, and on the H100 a 128-invocation
// workgroup past 24 KiB runs one an SM, not two: a research variant (QlmmTuning.DB_CONFIGS, empty by default;
// docs/tuning/qlmm.md, session 28).
#ifndef DB
#define DB 0
#endif
#if DB && DIRECT_B
#error DB double-buffers the staged tiles
#endif
#if HAS_SUMS
// The zero-point sums on packed 4 x 8-bit dot products with ones (OpSDot: one instruction a word), signed: A's rows
// from its loaded words; B's columns from BT's transposed words or BC's loaded ones (row-major B: SWAR byte sums of
// its rows, below). Against byte sums these took 14-29% off the zero-point products (docs/tuning/qlmm.md, session 39).
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4(uint a, uint b, spirv_literal int fmt);
#define ONES4(w) sdot4((w), 0x01010101u, 0)
#define ONES16(v) (ONES4((v).x) + ONES4((v).y) + ONES4((v).z) + ONES4((v).w))
#endif

layout(local_size_x_id = 0) in;  // 32 * SG_W * SG_H
layout(constant_id = 1) const uint TILE_M = 128;
layout(constant_id = 2) const uint TILE_N = 128;
layout(constant_id = 3) const uint TILE_K = 64;
layout(constant_id = 4) const uint SG_W = 2;
layout(constant_id = 5) const uint SG_H = 2;
layout(constant_id = 6) const uint GROUP_M = 1;  // workgroup raster: GROUP_M tile rows walk N together

const uint INV = 32u * SG_W * SG_H;
const uint NSG = SG_W * SG_H;
const uint C_ROWS = TILE_M / SG_H / 16u;
const uint C_COLS = TILE_N / SG_W / 16u;

layout(binding = 0) readonly buffer BufA { uvec4 a_buf[]; };
layout(binding = 1) readonly buffer BufB { uvec4 b_buf[]; };
#include "qlmm_common.glsl"
#if SPLIT_K
// Split-K (pc.splits > 1): workgroup x = split * N_tiles + n_tile. Each split stores its int32 tile
// (and its row / column byte sums) into its slot of Part; the last split of a tile to arrive (per-tile
// counter in Cnt) adds the slots, requantizes, and sets the counter back to 0 for the next use.
layout(binding = 9) coherent buffer Part { int part[]; };
layout(binding = 10) coherent buffer Cnt { uint cnt[]; };
shared uint last_flag;
#endif

#include "qlmm_coopmat_stage.glsl"  // the tiles' shared memory, the epilogue's slices, the prefetch macros

void main() {
    uint M = pc.M, N = pc.N, K = pc.K;
    uint lid = gl_LocalInvocationID.x;
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    uint wx = sg % SG_W, wy = sg / SG_W;
    // Grouped raster (GROUP_M = 1: plain row-major order over (x = N tile, y = M tile)).
    uint gx = (N + TILE_N - 1u) / TILE_N, gy = gl_NumWorkGroups.y;
#if SPLIT_K
    // pc.splits = S | F << 8. F > 0 splits only the tiles after the first F in raster order (the last, partial
    // wave's), on a one-matrix grid of F + (tiles - F) * S workgroups along x: workgroup w < F runs tile w whole.
    uint S = max(pc.splits & 0xFFu, 1u), F = pc.splits >> 8, split, pid;
    if (F > 0u) {
        uint w = gl_WorkGroupID.x, R;
        gy = (M + TILE_M - 1u) / TILE_M;
        R = gx * gy - F;
        pid = w < F ? w : F + (w - F) % R;
        split = w < F ? 0u : (w - F) / R;
        S = w < F ? 1u : S;
    } else {
        split = gl_WorkGroupID.x / gx;
        pid = gl_WorkGroupID.y * gx + gl_WorkGroupID.x % gx;
    }
#else
    // As the split build's grid (split 0): written with constants (split 0, S 1) the driver compiled a kernel 8%
    // slower at 4096^3 (docs/tuning/qlmm.md, session 28).
    uint split = gl_WorkGroupID.x / gx, S = max(pc.splits, 1u);
    uint pid = gl_WorkGroupID.y * gx + gl_WorkGroupID.x % gx;
#endif
    uint per_group = GROUP_M * gx, first_m = (pid / per_group) * GROUP_M;
    uint gsz = min(gy - first_m, GROUP_M), in_group = pid % per_group;
    uint n0 = (in_group / gsz) * TILE_N, m0 = (first_m + in_group % gsz) * TILE_M;
    uint z = gl_WorkGroupID.z, bi = z / pc.C, ci = z % pc.C;
    uint abase = bi * pc.a_sb + ci * pc.a_sc;
    uint bbase = bi * pc.b_sb + ci * pc.b_sc;
    uint a_flip = has(F_A_SIGNED) ? 0u : 0x80808080u;
    uint b_flip = has(F_B_SIGNED) ? 0u : 0x80808080u;

    uint ak = 16u * (lid % IPR_A), ar = lid / IPR_A;
    uint bn = 16u * (lid % IPR_B), bk = lid / IPR_B;  // BC: bn the k offset, bk the column

    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> result[C_ROWS][C_COLS];
    [[unroll]] for (uint i = 0u; i < C_ROWS; ++i)
        [[unroll]] for (uint j = 0u; j < C_COLS; ++j)
            result[i][j] = coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0);

#if HAS_SUMS
    for (uint i = lid; i < TILE_M; i += INV) rowS[i] = 0;
    for (uint i = lid; i < TILE_N; i += INV) colS[i] = 0;
    int rowacc[A_PASSES];  // signed sums (dot products with ones)
    [[unroll]] for (uint p = 0u; p < A_PASSES; ++p) rowacc[p] = 0;
#if BC
    int colacc[B_PASSES];  // a column's: its loaded words
    [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) colacc[p] = 0;
#elif BT
    int colD[16];  // the 16 columns of this thread's block: the transposed words
    [[unroll]] for (uint c = 0u; c < 16u; ++c) colD[c] = 0;
#else
    uvec4 colE = uvec4(0u), colO = uvec4(0u);  // row-major: offset-binary byte sums in 16-bit lanes, flushed
    const uint FLUSH = max(1u, 256u / B_PASSES);  // at most 256 adds of 255
    uint since_flush = 0u;
#endif
#endif

    uvec4 tA[A_PASSES];
#if BT
    uvec4 tB[4u * BT_PASSES];
#elif !DIRECT_B
    uvec4 tB[B_PASSES];
#endif
    uint nchunks = (K + TILE_K - 1u) / TILE_K;
    uint per_split = (nchunks + S - 1u) / S;
    uint c_begin = min(split * per_split, nchunks), c_end = min(c_begin + per_split, nchunks);
    uint okA = 0u, okB = 0u;  // bit i: load i of this thread's tiles lay inside A (B)
    FETCH_TILES(c_begin * TILE_K)  // the first tiles

    // Step `it` stores tile cs (fetched the step before) and multiplies tile cc: the same tile between two
    // barriers, or (DB) tile it - 1 from the other buffer, one barrier after both.
    for (uint it = c_begin; it <= c_end; ++it) {
#if DB
        uint cs = it, cc = it - 1u, ab = ((it - c_begin) & 1u) * ASZ, bb = ((it - c_begin) & 1u) * BSZ;
        uint cab = ASZ - ab, cbb = BSZ - bb;  // the buffers multiplied: the other ones
        bool do_store = it < c_end, do_mul = it > c_begin;
#else
        if (it == c_end) break;
        uint cs = it, cc = it, ab = 0u, bb = 0u, cab = 0u, cbb = 0u;
        const bool do_store = true, do_mul = true;
        barrier();  // everyone is done reading the previous tiles
#endif
        uint k0 = cc * TILE_K;
        if (do_store) {
        [[unroll]] for (uint p = 0u; p < A_PASSES; ++p) {
            tA[p] = PUT_A(tA[p], p);
            Ash[ab + (((ar + p * RA) * STRIDE_A + ak) >> 4)] = tA[p];
        }
#if BT
        [[unroll]] for (uint i = 0u; i < 4u * BT_PASSES; ++i) tB[i] = PUT_B(tB[i], i);
        [[unroll]] for (uint p = 0u; p < BT_PASSES; ++p) {
            uint sl = lid + p * INV, kg = sl / IPR_B, nb = sl % IPR_B;
            if (sl < SLOTS_B) {
                [[unroll]] for (uint c4 = 0u; c4 < 4u; ++c4) {
                    uint x0 = tB[4u * p][c4], x1 = tB[4u * p + 1u][c4], x2 = tB[4u * p + 2u][c4], x3 = tB[4u * p + 3u][c4];
                    // 4 k rows x 4 columns of bytes -> 4 column words of 4 k bytes
                    uint t0 = (x0 & 0x00FF00FFu) | ((x1 & 0x00FF00FFu) << 8u);
                    uint t1 = ((x0 >> 8u) & 0x00FF00FFu) | (x1 & 0xFF00FF00u);
                    uint t2 = (x2 & 0x00FF00FFu) | ((x3 & 0x00FF00FFu) << 8u);
                    uint t3 = ((x2 >> 8u) & 0x00FF00FFu) | (x3 & 0xFF00FF00u);
                    uint at = nb * (BT_BLK / 4u) + 4u * c4 * (STRIDE_BT / 4u) + kg;  // in words
                    uint w0 = (t0 & 0xFFFFu) | (t2 << 16u), w1 = (t1 & 0xFFFFu) | (t3 << 16u);
                    uint w2 = (t0 >> 16u) | (t2 & 0xFFFF0000u), w3 = (t1 >> 16u) | (t3 & 0xFFFF0000u);
                    BshT[bb + (at >> 2)][at & 3u] = w0;
                    at += STRIDE_BT / 4u;
                    BshT[bb + (at >> 2)][at & 3u] = w1;
                    at += STRIDE_BT / 4u;
                    BshT[bb + (at >> 2)][at & 3u] = w2;
                    at += STRIDE_BT / 4u;
                    BshT[bb + (at >> 2)][at & 3u] = w3;
#if HAS_SUMS
                    colD[4u * c4] += ONES4(w0);
                    colD[4u * c4 + 1u] += ONES4(w1);
                    colD[4u * c4 + 2u] += ONES4(w2);
                    colD[4u * c4 + 3u] += ONES4(w3);
#endif
                }
            }
        }
#elif BC
        [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) {
            tB[p] = PUT_B(tB[p], p);
            BshT[bb + (((bk + p * RB) * STRIDE_BT + bn) >> 4)] = tB[p];
        }
#elif !DIRECT_B
        [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) {
            tB[p] = PUT_B(tB[p], p);
            Bsh[bb + (((bk + p * RB) * STRIDE_B + bn) >> 4)] = tB[p];
        }
#endif
#if HAS_SUMS
        [[unroll]] for (uint p = 0u; p < A_PASSES; ++p) rowacc[p] += ONES16(tA[p]);
#if BC
        [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) colacc[p] += ONES16(tB[p]);
#elif !BT  // (BT: colD, from the transposed words above)
        // Offset-binary bytes (x' ^ 0x80 = x' + 128): plain unsigned byte sums of 4-column words.
        [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) {
            uvec4 v = tB[p] ^ 0x80808080u;
            colE += v & 0x00FF00FFu;
            colO += (v >> 8) & 0x00FF00FFu;
        }
        if (++since_flush == FLUSH || cs + 1u == c_end) {
            since_flush = 0u;
            [[unroll]] for (uint w = 0u; w < 4u; ++w) {
                atomicAdd(colS[bn + 4u * w + 0u], int(colE[w] & 0xFFFFu));
                atomicAdd(colS[bn + 4u * w + 1u], int(colO[w] & 0xFFFFu));
                atomicAdd(colS[bn + 4u * w + 2u], int(colE[w] >> 16));
                atomicAdd(colS[bn + 4u * w + 3u], int(colO[w] >> 16));
            }
            colE = uvec4(0u);
            colO = uvec4(0u);
        }
#endif
#endif
        }  // do_store
#if !DB
        barrier();  // tiles are in shared memory
#endif

        if (do_store && cs + 1u < c_end) {  // prefetch the next tiles while the multiplies run
            FETCH_TILES((cs + 1u) * TILE_K)
        }

        if (do_mul)
        [[unroll]] for (uint kk = 0u; kk < TILE_K / 32u; ++kk) {
            coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA> matA[C_ROWS];
            [[unroll]] for (uint i = 0u; i < C_ROWS; ++i) {
                uint si = 16u * (C_ROWS * wy + i);
                coopMatLoad(matA[i], Ash, cab + ((si * STRIDE_A + 32u * kk) >> 4), STRIDE_A >> 4,
                            gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint j = 0u; j < C_COLS; ++j) {
                coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB> matB;
                uint sj = 16u * (C_COLS * wx + j);
#if DIRECT_B
                if (n0 + sj >= N) continue;  // subgroup-uniform: a slab past N
                if (has(F_B_COLS))  // K-contiguous columns: whole 32-byte sectors, the MMA's own order
                    coopMatLoad(matB, b_buf, (bbase + (n0 + sj) * pc.b_sk + k0 + 32u * kk) >> 4, pc.b_sk >> 4,
                                gl_CooperativeMatrixLayoutColumnMajor);
                else
                    coopMatLoad(matB, b_buf, (bbase + (k0 + 32u * kk) * pc.b_sk + n0 + sj) >> 4, pc.b_sk >> 4,
                                gl_CooperativeMatrixLayoutRowMajor);
#elif BT
                coopMatLoad(matB, BshT, cbb + (((sj >> 4) * BT_BLK + 32u * kk) >> 4), STRIDE_BT >> 4,
                            gl_CooperativeMatrixLayoutColumnMajor);
#elif BC
                coopMatLoad(matB, BshT, cbb + ((sj * STRIDE_BT + 32u * kk) >> 4), STRIDE_BT >> 4,
                            gl_CooperativeMatrixLayoutColumnMajor);
#else
                coopMatLoad(matB, Bsh, cbb + ((32u * kk * STRIDE_B + sj) >> 4), STRIDE_B >> 4,
                            gl_CooperativeMatrixLayoutRowMajor);
#endif
                [[unroll]] for (uint i = 0u; i < C_ROWS; ++i)
                    result[i][j] = coopMatMulAdd(matA[i], matB, result[i][j]);
            }
        }
#if DB
        barrier();  // tile cs is stored; tile cc's buffers are free for the next step's store
#endif
    }

    #include "qlmm_coopmat_epilogue.glsl"  // sums, split-K slots, requantization, stores
}
