// radix.comp's histogram selection, included after its shared declarations: pick_bin (the bin where a count is
// reached), clear_hist, and select_front (the sorted-prefix shortcut compact.glsl takes under RADIX).
// The bin of hist[0, n) where a count of `need` is reached scanning from the top (from_top) or the
// bottom: s_digit, with s_above the count before it and s_inbin its own. Groups of 32 bins are summed
// in parallel first, so one thread scans at most n/32 + 32 entries. Ends with a barrier.
void pick_bin(uint need, bool from_top, uint n) {
    uint tid = gl_LocalInvocationID.x;
    uint ng = n / 32u;
    barrier();
    for (uint g = tid; g < ng; g += WG) {
        uint t = 0u;
        for (uint j = 0u; j < 32u; ++j) t += hist[g * 32u + j];
        s_grp[g] = t;
    }
    barrier();
    if (tid == 0u) {
        uint acc = 0u, g = 0u;
        for (uint j = 0u; j < ng; ++j) {
            g = from_top ? ng - 1u - j : j;
            if (acc + s_grp[g] >= need) break;
            acc += s_grp[g];
        }
        uint b = 0u;
        for (uint j = 0u; j < 32u; ++j) {
            b = g * 32u + (from_top ? 31u - j : j);
            if (acc + hist[b] >= need) break;
            acc += hist[b];
        }
        s_digit = b;
        s_above = acc;
        s_inbin = hist[b];
    }
    barrier();  // hist is not read after this: the next clear may start at once
}

void clear_hist() {
    for (uint i = gl_LocalInvocationID.x; i < NBINS; i += WG) hist[i] = 0u;
    barrier();
}

// compact's shortcut (TUNE_SELECT) for c in (256, 4 WG]: resolve the K-th best key of the buffer 8 bits at a time
// until the entries at or above the resolved prefix fit Kp, and move those m (K <= m <= Kp) to the
// front, so that a sort of Kp entries replaces the reduction of pow2(c) (4096 x 32768 K=256: ~400
// collected entries, a sort of 256 instead of two of 256 and a merge). Returns 0 (buffer untouched)
// where they never fit: more ties of the K-th key than Kp has room for.
uint select_front(uint c) {
    uint tid = gl_LocalInvocationID.x;
    uint prefix = 0u, need = pc.K, m = 0u;
    for (uint sh = uint(ELEM_BITS) - 8u;; sh -= 8u) {
        clear_hist();
        uint hmask = bits_above(sh + 8u);
        for (uint e = tid; e < c; e += WG) {
            uint k = skey[SW(e)] & KEY_BITS_MASK;
            if ((k & hmask) == prefix) atomicAdd(hist[(k >> sh) & 255u], 1u);
        }
        pick_bin(need, true, NBINS);
        prefix |= s_digit << sh;
        m += s_above;
        need -= s_above;
        if (m + s_inbin <= pc.Kp) { m += s_inbin; break; }  // every key >= prefix fits
        if (sh == 0u) return 0u;
    }
    uint kk[4], ii[4];
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        uint e = tid + u * WG;
        kk[u] = e < c ? skey[SW(e)] : 0u;
        ii[u] = e < c ? sidx[SW(e)] : SENT_IDX;
    }
    if (tid == 0u) s_count = 0u;
    barrier();
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        if (tid + u * WG < c && (kk[u] & KEY_BITS_MASK) >= prefix) {
            uint pos = atomicAdd(s_count, 1u);
            skey[SW(pos)] = kk[u];
            sidx[SW(pos)] = ii[u];
        }
    }
    for (uint e = m + tid; e < pc.Kp; e += WG) { skey[SW(e)] = 0u; sidx[SW(e)] = SENT_IDX; }
    barrier();
    return m;
}
