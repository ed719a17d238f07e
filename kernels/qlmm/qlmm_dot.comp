#version 450
// DML QUANTIZED_LINEAR_MATRIX_MULTIPLY for decoding-sized M (a few rows against a large B) on packed
// 4 x 8-bit integer dot products (SPV_KHR_integer_dot_product: one instruction, four products).
// Such a product is a stream of B: a workgroup owns 128 output columns of a K range (split-K across
// workgroups makes enough of them), its threads split that range again, and A's rows for the range sit
// in shared memory. B is read in whole memory sectors:
// - B row-major (K x N, DML's packed order): a thread reads one word (4 columns) of 16 consecutive rows
//   (a subgroup instruction: one 128-byte line of a row) and transposes the 4x4 byte blocks, so each
//   word holds 4 k of one column;
// - B column-major (F_B_COLS, a transposed N x K weight, PyTorch Linear's order): a thread reads
//   16 * UNROLL consecutive bytes (whole 32-byte sectors) of each of its 4 columns.
// Either way a thread then holds 16 k of 4 columns per block and multiplies them with 16 k of each row
// of A.
// UINT8 operands are shifted into int8 (x ^ 0x80 = x - 128) and the offset goes into the zero point:
// sum (a-za)(b-zb) = sum a'b' - zb' sum a' - za' sum b' + K za' zb' (a' = a - oa, za' = za - oa), exact in
// int32 (wrapping in between is harmless: the result fits). Host requirements: K % 16 == 0; row-major B
// with N % 4 == 0 and word-aligned rows; column-major B with 16-byte aligned columns.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#ifndef SPLIT_K
#define SPLIT_K 0
#endif

// OpSDot with PackedVectorFormat4x8Bit: the sum of the four signed byte products of a and b.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4(uint a, uint b, spirv_literal int fmt);
#define DOT(a, b) sdot4((a), (b), 0)

layout(local_size_x_id = 0) in;                 // NT: 256, or 128 where that is the limit
layout(constant_id = 1) const uint ROWS = 16;   // output rows per workgroup
layout(constant_id = 2) const uint CHUNK = 32;  // 16-byte k blocks of A staged at a time
layout(constant_id = 3) const uint UNROLL = 2;  // blocks in flight per thread

const uint NT = gl_WorkGroupSize.x;
const uint KS = NT / 32u;   // threads along K per column quad
const uint COLS = 128u;     // output columns per workgroup: 32 quads
const uint ONES = 0x01010101u;

layout(binding = 0) readonly buffer BufA { uint a_buf[]; };
layout(binding = 1) readonly buffer BufB { uint b_buf[]; };
layout(binding = 1) readonly buffer BufB4 { uvec4 b4_buf[]; };
#include "qlmm_common.glsl"
#if SPLIT_K
// pc.splits > 1: workgroup x = split * N_tiles + n_tile. Each split stores its corrected int32 tile into
// its slot of Part; the last split of a tile to arrive (per-tile counter in Cnt) adds the slots,
// requantizes and sets the counter back to 0 for the next use.
layout(binding = 9) coherent buffer Part { int part[]; };
layout(binding = 10) coherent buffer Cnt { uint cnt[]; };
shared uint last_flag;
#endif
const uint F_NEED_SA = 1024u, F_NEED_SB = 2048u;  // zb' (resp. za') may be non-zero: row (column) sums

// A's staged blocks: sh[block * ROWS + m] = 16 k of row m. After the loop the same memory holds
// TILES subgroups' partial tiles at a time: ROWS x COLS sums and COLS column sums of b', the word of
// column 4q + c of row m at 128 m + 32 c + q (a subgroup stores and loads whole bank rows).
const uint SH_A = CHUNK * ROWS, TILE_WORDS = ROWS * COLS + COLS, SH_RED = TILE_WORDS / 4u;
const uint SH = SH_A > SH_RED ? SH_A : SH_RED;
const uint TILES = 4u * SH / TILE_WORDS;
shared uvec4 sh[SH];
shared int rowS[ROWS];

// Four consecutive 8-bit elements of A from element e (any alignment: a word pair is funnel-shifted).
uint load4_a(uint e) {
    uint wi = e >> 2, s = (e & 3u) * 8u;
    uint lo = a_buf[wi];
    if (s == 0u) return lo;
    uint hi = wi + 1u < uint(a_buf.length()) ? a_buf[wi + 1u] : 0u;
    return (lo >> s) | (hi << (32u - s));
}

// This thread's B blocks j0 .. j0 + UNROLL - 1 (those below ce): bv[u][c] = 16 k of column nq + c.
uvec4 bv[UNROLL][4];
void load_b(uint j0, uint ce, bool cols, uint nq, uint N, uint bbase, uint b_flip) {
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        uint j = j0 + u;
        bool ok = j < ce;
        if (cols) {
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                uint n = nq + c;
                bv[u][c] = ok && n < N ? b4_buf[(bbase + n * pc.b_sk + 16u * j) >> 4] ^ b_flip : uvec4(0u);
            }
        } else {
            uint r[16];
            bool nok = ok && nq < N;
            [[unroll]] for (uint k = 0u; k < 16u; ++k)
                r[k] = nok ? b_buf[(bbase + (16u * j + k) * pc.b_sk + nq) >> 2] ^ b_flip : 0u;
            [[unroll]] for (uint q = 0u; q < 4u; ++q) {
                transpose4(r[4u * q], r[4u * q + 1u], r[4u * q + 2u], r[4u * q + 3u]);
                [[unroll]] for (uint c = 0u; c < 4u; ++c) bv[u][c][q] = r[4u * q + c];
            }
        }
    }
}

// This thread's sums: acc[m][c] of row m0 + m, column nq + c; sb[c] the column sums of b'.
int acc[ROWS][4];
int sb[4];

// Store (add == false) or add (add == true) this thread's sums at tile word `base` + q, in the layout
// above (column 4q + c of row m at 128 m + 32 c + q; the column sums after the ROWS x COLS sums).
void tile_io(uint base, bool add) {
    [[unroll]] for (uint m = 0u; m <= ROWS; ++m)
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            uint e = base + (4u * m + c) * 32u;
            if (m == ROWS) {
                if (add) sb[c] += int(sh[e >> 2][e & 3u]); else sh[e >> 2][e & 3u] = uint(sb[c]);
            } else {
                if (add) acc[m][c] += int(sh[e >> 2][e & 3u]); else sh[e >> 2][e & 3u] = uint(acc[m][c]);
            }
        }
}

void main() {
    uint M = pc.M, N = pc.N, K = pc.K;
    uint t = gl_LocalInvocationID.x;
    uint gx = (N + COLS - 1u) / COLS;
    uint S = max(pc.splits, 1u), split = gl_WorkGroupID.x / gx;
    uint n0 = (gl_WorkGroupID.x % gx) * COLS, m0 = gl_WorkGroupID.y * ROWS;
    uint z = gl_WorkGroupID.z, bi = z / pc.C, ci = z % pc.C;
    uint abase = bi * pc.a_sb + ci * pc.a_sc;
    uint bbase = bi * pc.b_sb + ci * pc.b_sc;
    uint a_flip = has(F_A_SIGNED) ? 0u : 0x80808080u;
    uint b_flip = has(F_B_SIGNED) ? 0u : 0x80808080u;
    bool cols = has(F_B_COLS), need_sa = has(F_NEED_SA), need_sb = has(F_NEED_SB);
    // Subgroup-sized runs of threads own the 32 column quads; they take UNROLL consecutive 16-byte k
    // blocks at a time, in turn. Row-major B: a run reads whole 128-byte lines of 16 rows; column-major
    // B: each thread reads 16 * UNROLL consecutive bytes (whole 32-byte sectors) of each of its columns.
    uint ks = t / 32u, q = t % 32u;
    uint nq = n0 + 4u * q;  // this thread's first column

    uint nblocks = K / 16u, per = (nblocks + S - 1u) / S;
    uint jb = min(split * per, nblocks), je = min(jb + per, nblocks);

    for (uint i = t; i < ROWS; i += NT) rowS[i] = 0;
    [[unroll]] for (uint m = 0u; m < ROWS; ++m)
        [[unroll]] for (uint c = 0u; c < 4u; ++c) acc[m][c] = 0;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) sb[c] = 0;
    int sa = 0;

    for (uint cb = jb; cb < je; cb += CHUNK) {
        uint ce = min(cb + CHUNK, je), j0 = cb + ks * UNROLL;
        // This thread's first B blocks go out before A is staged: their latency overlaps the staging.
        load_b(j0, ce, cols, nq, N, bbase, b_flip);
        barrier();  // the previous chunk's A is no longer read
        for (uint i = t; i < (ce - cb) * ROWS; i += NT) {
            uint m = m0 + i % ROWS, e = abase + m * pc.a_sm + 16u * (cb + i / ROWS);
            sh[i] = m < M ? uvec4(load4_a(e), load4_a(e + 4u), load4_a(e + 8u), load4_a(e + 12u)) ^ a_flip
                          : uvec4(0u);
        }
        barrier();
        if (need_sa)  // row sums of a' over this chunk (thread t meets only row t % ROWS: NT % ROWS == 0)
            for (uint i = t; i < (ce - cb) * ROWS; i += NT)
                sa += DOT(sh[i].x, ONES) + DOT(sh[i].y, ONES) + DOT(sh[i].z, ONES) + DOT(sh[i].w, ONES);

        while (j0 < ce) {
            [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
                uint j = j0 + u;
                if (j >= ce) break;
                uint sbase = (j - cb) * ROWS;
                if (need_sb)
                    [[unroll]] for (uint c = 0u; c < 4u; ++c)
                        sb[c] += DOT(bv[u][c].x, ONES) + DOT(bv[u][c].y, ONES) + DOT(bv[u][c].z, ONES) + DOT(bv[u][c].w, ONES);
                [[unroll]] for (uint m = 0u; m < ROWS; ++m) {
                    uvec4 a = sh[sbase + m];
                    [[unroll]] for (uint c = 0u; c < 4u; ++c)
                        acc[m][c] += DOT(a.x, bv[u][c].x) + DOT(a.y, bv[u][c].y) + DOT(a.z, bv[u][c].z) +
                                     DOT(a.w, bv[u][c].w);
                }
            }
            j0 += KS * UNROLL;
            if (j0 < ce) load_b(j0, ce, cols, nq, N, bbase, b_flip);
        }
    }

    // The workgroup's partial sums: the subgroups along K add their tiles pairwise through shared
    // memory, TILES at a time (shared atomics measured no faster on an H100); subgroup 0 ends with the
    // sum and leaves it in tile 0.
    barrier();  // A is no longer read
    for (uint hw = KS / 2u; hw >= 1u; hw /= 2u) {
        for (uint r = 0u; r * TILES < hw; ++r) {
            if (ks >= hw && ks < 2u * hw && (ks - hw) / TILES == r)
                tile_io(((ks - hw) % TILES) * TILE_WORDS + q, false);
            barrier();
            if (ks < hw && ks / TILES == r) tile_io((ks % TILES) * TILE_WORDS + q, true);
            barrier();
        }
    }
    if (ks == 0u) tile_io(q, false);
    if (need_sa) atomicAdd(rowS[t % ROWS], sa);
    barrier();

    // Zero-point terms of this K range (linear: each split adds its own).
    int oa = has(F_A_SIGNED) ? 0 : 128, ob = has(F_B_SIGNED) ? 0 : 128;
    int kr = int(16u * (je - jb));
#if SPLIT_K
    const uint SLOT = ROWS * COLS;
    uint gy = gl_NumWorkGroups.y;
    uint tile = (z * gy + gl_WorkGroupID.y) * gx + n0 / COLS;
    uint base = (tile * S + split) * SLOT;
#endif
    for (uint i = t; i < ROWS * COLS / 4u; i += NT) {
        uint ml = i / (COLS / 4u), ql = i % (COLS / 4u), nl = 4u * ql;
        uint m = m0 + ml, n = n0 + nl;
        uint e = ml * COLS + ql;
        ivec4 v = ivec4(sh[e >> 2][e & 3u], sh[(e + 32u) >> 2][e & 3u], sh[(e + 64u) >> 2][e & 3u],
                        sh[(e + 96u) >> 2][e & 3u]);
        if (m < M && n < N) {
            int zap = za_at(m) - oa;
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                int zbp = n + c < N ? zb_at(n + c) - ob : 0;
                uint ce_ = ROWS * COLS + c * 32u + ql;  // column sum of b' of column nl + c
                v[c] += -zbp * rowS[ml] - zap * int(sh[ce_ >> 2][ce_ & 3u]) + kr * zap * zbp;
            }
        }
#if SPLIT_K
        uint pe = base + ml * COLS + nl;
        part[pe] = v.x; part[pe + 1u] = v.y; part[pe + 2u] = v.z; part[pe + 3u] = v.w;
#else
        if (m < M && n < N) store4(v, z, m, n);
#endif
    }
#if SPLIT_K
    memoryBarrierBuffer();
    barrier();
    if (t == 0u) last_flag = (atomicAdd(cnt[tile], 1u) == S - 1u) ? 1u : 0u;
    barrier();
    if (last_flag == 0u) return;
    memoryBarrierBuffer();
    if (t == 0u) cnt[tile] = 0u;
    uint tbase = tile * S * SLOT;
    for (uint i = t; i < ROWS * COLS / 4u; i += NT) {
        uint ml = i / (COLS / 4u), nl = 4u * (i % (COLS / 4u));
        uint m = m0 + ml, n = n0 + nl;
        if (m >= M || n >= N) continue;
        ivec4 v = ivec4(0);
        for (uint sp = 0u; sp < S; ++sp) {
            uint e = tbase + sp * SLOT + ml * COLS + nl;
            v += ivec4(part[e], part[e + 1u], part[e + 2u], part[e + 3u]);
        }
        store4(v, z, m, n);
    }
#endif
}
