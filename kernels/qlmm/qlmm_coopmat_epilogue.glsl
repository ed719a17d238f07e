// qlmm_coopmat.comp's end of main(), included there after the K loop: the zero-point sums' last adds, split-K's
// slots (the last split of a tile to arrive adds the others) and the requantizing epilogue. A fragment of main(),
// not a function: it reads main()'s accumulators, tile coordinates and sums, and the SPIR-V is the one the single
// file gave.
#if (BC || BT) && !DB
    barrier();  // the last tile's multiplies are done: Ash holds the epilogue's slices (CSH)
#endif
#if BC || BT
    const int kpadB = 0;  // B's column sums signed, as A's row sums: zeros outside added nothing
#else
    int kpadB = int(nchunks * TILE_K * 128u);  // row-major B's offset-binary sums: 128 a k row, padding included
#endif
    int oa = has(F_A_SIGNED) ? 0 : 128, ob = has(F_B_SIGNED) ? 0 : 128;
#if HAS_SUMS
    [[unroll]] for (uint p = 0u; p < A_PASSES; ++p) atomicAdd(rowS[ar + p * RA], rowacc[p]);
#if BC
    [[unroll]] for (uint p = 0u; p < B_PASSES; ++p) atomicAdd(colS[bk + p * RB], colacc[p]);
#elif BT
    if (lid < SLOTS_B) [[unroll]] for (uint c = 0u; c < 16u; ++c) atomicAdd(colS[bn + c], colD[c]);
#endif
    barrier();
#endif

#if SPLIT_K
    // Store this split's slot; the last split of the tile to arrive adds the other slots into its own
    // accumulators (cooperative-matrix loads: wide, all in flight) and takes the epilogue below. A loop of
    // scalar loads there instead waited on each load in turn (docs/tuning/qlmm.md, session 27).
    if (S > 1u) {  // a split tile (the first F of a tail split run whole)
    const uint SLOT = TILE_M * TILE_N + TILE_M + TILE_N;
    uint tile = F > 0u ? pid - F : (z * gy + m0 / TILE_M) * gx + n0 / TILE_N;  // its slots and counter
    uint tbase = tile * S * SLOT, base = tbase + split * SLOT;
    [[unroll]] for (uint i = 0u; i < C_ROWS; ++i)
        [[unroll]] for (uint j = 0u; j < C_COLS; ++j)
            coopMatStore(result[i][j], part, base + 16u * (C_ROWS * wy + i) * TILE_N + 16u * (C_COLS * wx + j),
                         TILE_N, gl_CooperativeMatrixLayoutRowMajor);
#if HAS_SUMS
    for (uint i = lid; i < TILE_M; i += INV) part[base + TILE_M * TILE_N + i] = rowS[i];
    for (uint i = lid; i < TILE_N; i += INV) part[base + TILE_M * TILE_N + TILE_M + i] = colS[i];
#endif
    memoryBarrierBuffer();
    barrier();
    if (lid == 0u) last_flag = (atomicAdd(cnt[tile], 1u) == S - 1u) ? 1u : 0u;
    barrier();
    if (last_flag == 0u) return;
    memoryBarrierBuffer();
    if (lid == 0u) cnt[tile] = 0u;
    for (uint sp = 0u; sp < S; ++sp) {
        if (sp == split) continue;
        uint b0 = tbase + sp * SLOT;
        [[unroll]] for (uint i = 0u; i < C_ROWS; ++i)
            [[unroll]] for (uint j = 0u; j < C_COLS; ++j) {
                coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> o;
                coopMatLoad(o, part, b0 + 16u * (C_ROWS * wy + i) * TILE_N + 16u * (C_COLS * wx + j),
                            TILE_N, gl_CooperativeMatrixLayoutRowMajor);
                result[i][j] = result[i][j] + o;
            }
#if HAS_SUMS
        for (uint i = lid; i < TILE_M; i += INV) rowS[i] += part[b0 + TILE_M * TILE_N + i];
        for (uint i = lid; i < TILE_N; i += INV) colS[i] += part[b0 + TILE_M * TILE_N + TILE_M + i];
#endif
    }
#if HAS_SUMS
    barrier();  // the sums are whole
#endif
    }
#endif
    // Epilogue: each accumulator goes through this subgroup's 16x16 slice of Csh (DB: of Ash); lane l requantizes
    // row l/2, columns 8*(l%2) .. +7 and stores two output words (8 bytes at a multiple of 8: N % 16 == 0).
    // Where all three scales are per tensor the tile takes one scale, not a division an output.
    uint r = lane >> 1, c8 = (lane & 1u) * 8u;
    bool one_scale = (pc.flags & (F_SA_ROW | F_SB_COL | F_SO_ROW)) == 0u;
    float scale1 = sa_at(0u) * sb_at(0u) / so_at(0u);
    [[unroll]] for (uint i = 0u; i < C_ROWS; ++i) {
        uint ml = 16u * (C_ROWS * wy + i) + r, m = m0 + ml;
        bool row_ok = m < M;
        float sa = 0.0, so = 1.0;
        int zo = 0, zap = 0, sum_a = 0;
        if (row_ok) {
            sa = sa_at(m); so = so_at(m); zo = zo_at(m);
#if HAS_SUMS
            zap = za_at(m) - oa;
            sum_a = rowS[ml];
#endif
        }
        [[unroll]] for (uint j = 0u; j < C_COLS; ++j) {
            coopMatStore(result[i][j], CSH, CSH_BASE, CSH_STRIDE, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint nl = 16u * (C_COLS * wx + j) + c8, n = n0 + nl;
            if (row_ok && n < N) {
                int acc[8];
                [[unroll]] for (uint t = 0u; t < 8u; ++t) {
                    acc[t] = CSH_AT(r * 16u + c8 + t);
#if HAS_SUMS
                    int zbp = zb_at(n + t) - ob;
                    acc[t] += -zbp * sum_a - zap * (colS[nl + t] - kpadB) + int(K) * zap * zbp;
#endif
                }
                uint v[8];
                if (one_scale) {
                    [[unroll]] for (uint t = 0u; t < 8u; ++t) v[t] = requant(acc[t], scale1, zo);
                } else {
                    [[unroll]] for (uint t = 0u; t < 8u; ++t) v[t] = requant(acc[t], sa * sb_at(n + t) / so, zo);
                }
                uint w = ((z * M + m) * N + n) >> 2;
                out_buf[w] = v[0] | (v[1] << 8u) | (v[2] << 16u) | (v[3] << 24u);
                out_buf[w + 1u] = v[4] | (v[5] << 8u) | (v[6] << 16u) | (v[7] << 24u);
            }
            subgroupBarrier();
        }
    }
