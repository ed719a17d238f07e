// qlmm_coopmat.comp's staging, included there before main(): the A and B tiles' shared memory (skewed rows; BT's
// padded n-major blocks, BC's columns, DB's two buffers), the epilogue's 16x16 slices (CSH), the zero-point sums'
// arrays, each thread's share of a tile's loads (IPR_*, *_PASSES) and the prefetch macros (GET_/PUT_, BT_FETCH,
// FETCH_B, FETCH_TILES). Declarations and macros only, read by main(): the SPIR-V is the one the single file gave.
const uint STRIDE_A = TILE_K + 16u;  // bytes per shared row, skewed by 16 against bank conflicts
const uint STRIDE_B = TILE_N + 16u;
const uint ASZ = TILE_M * STRIDE_A / 16u;  // uvec4s a buffer of A's tile
#if DB
const uint ASH_A = 2u * ASZ;
#else
const uint ASH_A = ASZ;
#endif
#if DB || BC || BT
const uint ASH_N = ASH_A > NSG * 64u ? ASH_A : NSG * 64u;  // and at least the epilogue's slices (CSH, below)
#else
const uint ASH_N = ASH_A;
#endif
shared uvec4 Ash[ASH_N];
#if BT || BC
const uint STRIDE_BT = TILE_K + 16u;  // bytes per shared column of B, skewed like A's rows
#if BT
// BT: each 16-column block of B's tile BT_PAD bytes (32 / IPR_B words, in whole uvec4s) past the last, so that a
// warp's word stores (32 / IPR_B k groups of its IPR_B blocks, below) fall in distinct banks; BC stores whole
// columns and needs none.
const uint BT_PAD = 16u * (TILE_N > 128u ? 1u : 8u / (TILE_N / 16u)), BT_BLK = 16u * STRIDE_BT + BT_PAD;  // bytes
const uint BSZ = (TILE_N / 16u) * BT_BLK / 16u;
#else
const uint BSZ = TILE_N * STRIDE_BT / 16u;
#endif
// uvec4, though stored a word at a time: the loads below need 16-byte alignment, which a uint array need not
// get (as one, the split-K build, whose shared uint last_flag is declared first, summed wrongly on an H100).
#if DB
shared uvec4 BshT[2u * BSZ];
#else
shared uvec4 BshT[BSZ];
#endif
#elif !DIRECT_B
const uint BSZ = TILE_K * STRIDE_B / 16u;
#if DB
shared uvec4 Bsh[2u * BSZ];
#else
shared uvec4 Bsh[BSZ];
#endif
#endif
#if DB || BC || BT
// DB, BC, BT: the epilogue's 16x16 slices (256 ints a subgroup) live in Ash, dead after the K loop (DB's last step
// ends with a barrier, BC's and BT's epilogue starts with one): the n-major B tiles (BT's padded) and the zero-point
// sums, or DB's two buffers, stay within the 24 KiB that keeps two 128-invocation workgroups an SM on the H100
// (docs/tuning/qlmm.md, session 28).
#define CSH Ash
#define CSH_BASE (sg * 64u)  // uvec4s
#define CSH_STRIDE 4u
#define CSH_AT(i) int(Ash[CSH_BASE + ((i) >> 2)][(i) & 3u])
#else
shared int Csh[NSG * 256u];
#define CSH Csh
#define CSH_BASE (sg * 256u)
#define CSH_STRIDE 16u
#define CSH_AT(i) Csh[CSH_BASE + (i)]
#endif
#if HAS_SUMS
shared int rowS[TILE_M];
shared int colS[TILE_N];
#endif

const uint IPR_A = TILE_K / 16u, RA = INV / IPR_A, A_PASSES = TILE_M / RA;
#if BC
const uint IPR_B = TILE_K / 16u, RB = INV / IPR_B, B_PASSES = TILE_N / RB;  // B's columns as A's rows
#else
const uint IPR_B = TILE_N / 16u, RB = INV / IPR_B, B_PASSES = TILE_K / RB;
#endif
#if BT
// BT: slot = (k group of 4 rows, 16-column block), blocks fastest: a warp's loads read whole row pieces of IPR_B x 16
// bytes (k groups fastest read 16 bytes of a 32-byte sector a row, 32 rows an instruction); BT_PASSES slots a thread.
const uint KG = TILE_K / 4u, SLOTS_B = KG * IPR_B;
const uint BT_PASSES = SLOTS_B >= INV ? SLOTS_B / INV : 1u;
// This thread's slots' 4 rows from k row kb on into tB, zero outside B (the first fetch and each prefetch).
#define BT_FETCH(kb) \
    [[unroll]] for (uint p = 0u; p < BT_PASSES; ++p) { \
        uint sl = lid + p * INV, n = n0 + 16u * (sl % IPR_B); \
        [[unroll]] for (uint r = 0u; r < 4u; ++r) { \
            uint k = (kb) + 4u * (sl / IPR_B) + r; \
            GET_B(tB[4u * p + r], 4u * p + r, sl < SLOTS_B && k < K && n < N, bbase + k * pc.b_sk + n) \
        } \
    }
#endif

// A prefetch load and its use: the load's index is clamped (element 0 outside A or B) and whether it lay
// inside is kept in a bit of okA / okB; the flip and the zeros outside are applied where the tile is stored.
// Selecting on the loaded data instead (ok ? load ^ flip : 0) cost a third of the time at 8192^3
// (docs/tuning/qlmm.md#2026-11-26-session-26-prefetch-loads-whose-data-waits-for-the-store).
#define GET_A(dst, bit, ok, e) { bool ok_ = (ok); dst = a_buf[ok_ ? (e) >> 4 : 0u]; \
                                 okA = ok_ ? okA | (1u << (bit)) : okA & ~(1u << (bit)); }
#define GET_B(dst, bit, ok, e) { bool ok_ = (ok); dst = b_buf[ok_ ? (e) >> 4 : 0u]; \
                                 okB = ok_ ? okB | (1u << (bit)) : okB & ~(1u << (bit)); }
#define PUT_A(v, bit) ((((okA >> (bit)) & 1u) != 0u) ? (v) ^ a_flip : uvec4(0u))
#define PUT_B(v, bit) ((((okB >> (bit)) & 1u) != 0u) ? (v) ^ b_flip : uvec4(0u))
// This thread's loads of the A and B tiles from k row kb on (B staged: row-major, or transposed by BT_FETCH).
#if BT
#define FETCH_B(kb) BT_FETCH(kb)
#elif BC
#define FETCH_B(kb) \
    [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) { \
        uint n = n0 + bk + p * RB, k = (kb) + bn; \
        GET_B(tB[p], p, n < N && k < K, bbase + n * pc.b_sk + k) \
    }
#elif !DIRECT_B
#define FETCH_B(kb) \
    [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) { \
        uint k = (kb) + bk + p * RB, n = n0 + bn; \
        GET_B(tB[p], p, k < K && n < N, bbase + k * pc.b_sk + n) \
    }
#else
#define FETCH_B(kb)
#endif
#define FETCH_TILES(kb) \
    [[unroll]] for (uint p = 0u; p < A_PASSES; ++p) { \
        uint m = m0 + ar + p * RA, k = (kb) + ak; \
        GET_A(tA[p], p, m < M && k < K, abase + m * pc.a_sm + k) \
    } \
    FETCH_B(kb)
