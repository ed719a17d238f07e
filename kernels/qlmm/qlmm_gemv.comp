#version 450
// DML QUANTIZED_LINEAR_MATRIX_MULTIPLY for a few rows of A (decoding: M = 1..MR) against a large row-major
// B (K x N, DML's packed order): a matrix-vector product, bound by reading B once. No tensor cores and no
// transposes: each B byte is multiplied by the rows' (a - za) where it lies.
// A workgroup of 256 owns 256 output columns over one K range (split-K across workgroups gives the GPU
// enough of them): lane c of 16 reads 16 consecutive columns (one uvec4) of every 16th row, lane group r
// of 16 starts at row r, so a subgroup instruction reads two whole 256-byte row pieces; U rows in flight
// per lane. The 16 lane groups' sums meet in shared memory (each group's written, then a column a thread: NT =
// COLS), the zero point of B comes off as sum (a - za)(b - zb) = sum (a - za) b - zb sum (a - za), and the tile
// is requantized (or, split across K, stored as a partial tile: the last split of a tile to arrive adds them and
// requantizes).
// BC=1 (qlmm_gemv[_m2]_bc[_sk], QlmmTuning.GEMV_BC): B column-major, a transposed view of an N x K weight (b_sk:
// the n stride): a lane reads 16 consecutive bytes of a column's K, 8 lanes one 128-byte piece of a column, a
// subgroup's loads whole pieces of 4 columns; each group of 8 lanes takes 8 of the workgroup's columns, their 8
// loads (BCU pieces of K: 8 x BCU) in flight, and adds its sums into `red` once its K range is done. A is staged
// one padding word per 16 (AIDX): the 8 lanes of a group read A 16 words apart, which would share banks.
// Host requirements (ops/qlmm/gemv.py): M <= MR, N % 16 == 0, B's row (BC: column) and batch strides multiples of
// 16; BC: K % 16 == 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#ifndef MR
#define MR 1u       // rows of A (variants.py ships 1 and 2: 4 rows lost to qlmm_stream.comp on the H100)
#endif
#ifndef U
#define U 16u       // B rows in flight per lane (ops/qlmm_gemv.py U)
#endif
#ifndef BC
#define BC 0
#endif
#ifndef BCU
#define BCU 1u      // BC: 128-byte pieces of a column's K in flight a step (variants.py: 2 for the one-row unsplit build)
#endif
#if BC
#define AIDX(x) ((x) + (x) / 16u)  // A's staging index, a padding word after every 16
#else
#define AIDX(x) (x)
#endif

layout(local_size_x_id = 0) in;                // 256 (ops/qlmm_gemv.py WG): 16 lane groups
const uint NT = gl_WorkGroupSize.x, COLS = 256u, RG = NT / 16u;   // columns per workgroup, lane groups along K
const uint STEP = RG * U;                      // B rows per workgroup step

layout(binding = 0) readonly buffer BufA { uint a_buf[]; };
layout(binding = 1) readonly buffer BufB { uvec4 b_buf[]; };
#include "qlmm_common.glsl"
#if SPLIT_K
// pc.splits > 1: the device's zeroed counters, per tile (t = z * tiles + tile) an arrival counter, then
// after all counters MR x COLS int32 sums that every split adds its tile into (L2 atomics). The last split
// of a tile to arrive takes the sums out (atomicExchange: read and zero) and requantizes; everything is
// left zero for the next use.
layout(binding = 9) coherent buffer Cnt { uint cnt[]; };
shared uint last_flag;
#endif

const uint SLICE_MAX = 4096u / MR;   // K rows of A staged per workgroup: 16 KiB (ops/qlmm_gemv.py: slice_max)
const uint ASTRIDE = AIDX(SLICE_MAX);  // words a row of A takes in ash (BC: the padding words too)
shared int ash[MR * ASTRIDE];        // (a - za) of the workgroup's K range, row after row
shared int red[MR * COLS];
shared int rowS[MR];

void main() {
    const uint lid = gl_LocalInvocationID.x, c = lid % RG, r = lid / RG;
    const uint M = pc.M, N = pc.N, K = pc.K, S = max(pc.splits, 1u);
    const uint tiles = (N + COLS - 1u) / COLS;
    const uint tile = gl_WorkGroupID.x % tiles, split = gl_WorkGroupID.x / tiles;
    const uint z = gl_WorkGroupID.z, zb = z / pc.C, zc = z % pc.C;
    // The split's K range, whole steps: the host plans S so that SL <= SLICE_MAX.
    const uint SL = ((K + S - 1u) / S + STEP - 1u) / STEP * STEP;
    const uint k0 = min(split * SL, K), k1 = min(k0 + SL, K);
    const bool sa = has(F_A_SIGNED), sb = has(F_B_SIGNED);

#if BC
    for (uint i = lid; i < MR * COLS; i += NT) red[i] = 0;  // the lane groups' atomics add into it
#endif
    if (lid < MR) rowS[lid] = 0;
    barrier();
    // (a - za) of this K range into shared memory, and its row sums (for B's zero point).
    for (uint m = 0u; m < MR; ++m) {
        int part_sum = 0;
        if (m < M) {
            uint abase = zb * pc.a_sb + zc * pc.a_sc + m * pc.a_sm;
            int za = za_at(m);
            for (uint k = k0 + lid; k < k1; k += NT) {
                uint e = abase + k;
                int v = byte_of(a_buf[e >> 2], e & 3u, sa) - za;
                ash[m * ASTRIDE + AIDX(k - k0)] = v;
                part_sum += v;
            }
        }
        if (m < M) atomicAdd(rowS[m], part_sum);
    }
    barrier();

#if BC
    const uint l8 = lid % 8u, g8 = lid / 8u, NG = NT / 8u, CG = COLS / NG;  // 32 groups of 8 lanes, 8 columns each
    const uint PIECE = 8u * 16u;  // bytes of a column's K a group's 8 lanes read at once
    const uint bz = zb * pc.b_sb + zc * pc.b_sc;
    int acc[MR][CG];
    [[unroll]] for (uint m = 0u; m < MR; ++m)
        [[unroll]] for (uint j = 0u; j < CG; ++j) acc[m][j] = 0;
    for (uint kb = k0; kb < k1; kb += PIECE * BCU) {
        uvec4 w[BCU][CG];
        [[unroll]] for (uint p = 0u; p < BCU; ++p) {
            const uint k = kb + PIECE * p + 16u * l8;  // this lane's 16 bytes of K: in the range or wholly past it (K % 16 == 0)
            [[unroll]] for (uint j = 0u; j < CG; ++j) {
                uint n = tile * COLS + g8 + NG * j;  // column g8 + NG j of the tile: a subgroup's 4 groups on 4 in a row
                w[p][j] = b_buf[n < N && k < k1 ? (bz + n * pc.b_sk + k) / 16u : 0u];  // clamped, as below
            }
        }
        [[unroll]] for (uint p = 0u; p < BCU; ++p) {
            const uint k = kb + PIECE * p + 16u * l8;
            if (k >= k1) continue;
            [[unroll]] for (uint q = 0u; q < 4u; ++q)
                [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                    int av[MR];
                    [[unroll]] for (uint m = 0u; m < MR; ++m) av[m] = ash[m * ASTRIDE + AIDX(k - k0 + 4u * q + i)];
                    [[unroll]] for (uint j = 0u; j < CG; ++j) {
                        int bv = byte_of(w[p][j][q], i, sb);
                        [[unroll]] for (uint m = 0u; m < MR; ++m) acc[m][j] += av[m] * bv;
                    }
                }
        }
    }
    [[unroll]] for (uint j = 0u; j < CG; ++j) {
        uint nl = g8 + NG * j;
        if (tile * COLS + nl < N)
            [[unroll]] for (uint m = 0u; m < MR; ++m) atomicAdd(red[m * COLS + nl], acc[m][j]);
    }
#else
    const uint n0 = tile * COLS + 16u * c;                       // this lane's 16 columns
    const bool live = n0 < N;
    const uint bbase = (zb * pc.b_sb + zc * pc.b_sc + n0) / 16u;  // uvec4 index of row 0
    const uint bstride = pc.b_sk / 16u;
    int acc[MR][16];
    [[unroll]] for (uint m = 0u; m < MR; ++m)
        [[unroll]] for (uint j = 0u; j < 16u; ++j) acc[m][j] = 0;
    for (uint kb = k0; kb < k1; kb += STEP) {
        uvec4 w[U];
        [[unroll]] for (uint u = 0u; u < U; ++u) {
            uint k = kb + r + RG * u;
            // A clamped index, not a select on the data (which made the H100 wait on each load, as in
            // qlmm_coopmat.comp): a row past k1 meets av = 0 below, a lane past N stores nothing.
            w[u] = b_buf[live && k < k1 ? bbase + k * bstride : 0u];
        }
        [[unroll]] for (uint u = 0u; u < U; ++u) {
            uint kk = kb + r + RG * u - k0;
            int av[MR];
            [[unroll]] for (uint m = 0u; m < MR; ++m) av[m] = kb + r + RG * u < k1 ? ash[m * ASTRIDE + kk] : 0;
            [[unroll]] for (uint q = 0u; q < 4u; ++q)
                [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                    int bv = byte_of(w[u][q], i, sb);
                    [[unroll]] for (uint m = 0u; m < MR; ++m) acc[m][4u * q + i] += av[m] * bv;
                }
        }
    }
    // The 16 lane groups' sums through ash (dead now: 16 x COLS words, a row of A's at a time), then a column a
    // thread adds its 16: not 16 shared atomics a lane on the same words (2 x 4096^2 0.0144 -> 0.0119 ms on the
    // H100, docs/tuning/qlmm.md session 44). Word j of a lane's 16 lies at j ^ (c / 2) ^ 8 (r % 2): a subgroup's
    // stores and loads hit 32 banks.
    [[unroll]] for (uint m = 0u; m < MR; ++m) {
        barrier();  // ash's last reads: the loop's, or the previous row's sums
        const uint sw = (c >> 1u) ^ (8u * (r & 1u));
        [[unroll]] for (uint j = 0u; j < 16u; ++j) ash[r * COLS + 16u * c + (j ^ sw)] = acc[m][j];
        barrier();
        const uint cc = lid / 16u, jj = lid % 16u;
        int sum = 0;
        [[unroll]] for (uint g = 0u; g < RG; ++g) sum += ash[g * COLS + 16u * cc + (jj ^ (cc >> 1u) ^ (8u * (g & 1u)))];
        red[m * COLS + lid] = sum;
    }
#endif
    barrier();

    // B's zero point off this K range's sums (linear: each split takes off its own), then out.
#if SPLIT_K
    const uint SLOT = MR * COLS;
    const uint t = z * tiles + tile, sums = tiles * gl_NumWorkGroups.z + t * SLOT;
#endif
    for (uint idx = lid; idx < MR * COLS / 4u; idx += NT) {
        uint m = idx / (COLS / 4u), nl = 4u * (idx % (COLS / 4u)), n = tile * COLS + nl;
        if (m >= M || n >= N) continue;
        ivec4 v = ivec4(red[m * COLS + nl], red[m * COLS + nl + 1u], red[m * COLS + nl + 2u], red[m * COLS + nl + 3u]);
        [[unroll]] for (uint q = 0u; q < 4u; ++q) v[q] -= zb_at(n + q) * rowS[m];
#if SPLIT_K
        [[unroll]] for (uint q = 0u; q < 4u; ++q) atomicAdd(cnt[sums + m * COLS + nl + q], uint(v[q]));
#else
        store4(v, z, m, n);
#endif
    }
#if SPLIT_K
    memoryBarrierBuffer();
    barrier();
    if (lid == 0u) last_flag = (atomicAdd(cnt[t], 1u) == S - 1u) ? 1u : 0u;
    barrier();
    if (last_flag == 0u) return;
    memoryBarrierBuffer();
    if (lid == 0u) cnt[t] = 0u;
    for (uint idx = lid; idx < MR * COLS / 4u; idx += NT) {
        uint m = idx / (COLS / 4u), nl = 4u * (idx % (COLS / 4u)), n = tile * COLS + nl;
        if (m >= M || n >= N) continue;
        ivec4 v;
        [[unroll]] for (uint q = 0u; q < 4u; ++q) v[q] = int(atomicExchange(cnt[sums + m * COLS + nl + q], 0u));
        store4(v, z, m, n);
    }
#endif
}
