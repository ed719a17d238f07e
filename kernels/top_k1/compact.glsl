// A chunk's buffer (skey/sidx, `c` <= B entries) reduced to its top Kp, sorted, with the K-th best as
// the threshold (s_thr_k, s_thr_i): the threshold filter's compaction (filter.comp) and radix select's
// final sort (radix.comp). The including .comp defines RADIX (1: the select_front shortcut under the
// push word `tune`, and select_front itself) and declares s_count, s_thr_k, s_thr_i and s_flag.
// RADIX_SHORT (radix.comp's slim build, whose plans set no TUNE_* bit): without select_front.
// FILTER: reduce the `c` (<= B) buffered entries to the top Kp; the threshold becomes the K-th best.
const uint CMP_RANK_MAX = 256u, RANK_UNROLL = 8u;
bool rank_beats(uint j, uint kj, uint k, uint i, uint me) {
    if (kj != k) return kj > k;
    uint ij = sidx[SW(j)];
    return ij < i || (ij == i && j < me);  // sentinels repeat: ranks stay a permutation
}
#if RADIX && SHUF && PACK16
// The index bits of sort_merge_p16's words for the chunk radix.comp set (cmp_base, cmp_span): 16 where it spans <= 2^16
// indices; past that 16 + the top bits of the 16-bit key that every real entry shares (pk_shared_hi: those bits; a
// long chunk's top K often of one sign: H200 64x151936 fp16, chunks of 75968, #pack16); 0 where the indices do not fit.
uint pack_bits(uint c) {
    pk_shared_hi = 0u;
    if (cmp_span <= 0x10000u) return 16u;
    uint tid = gl_LocalInvocationID.x;
    if (tid == 0u) { hist[0] = 0xFFFFu; hist[1] = 0u; }  // the digit passes' histogram is free here
    barrier();
    uint a = 0xFFFFu, o = 0u;
    for (uint e = tid; e < c; e += WG) { uint k = skey[SW(e)] & 0xFFFFu; a &= k; o |= k; }
    atomicAnd(hist[0], a);
    atomicOr(hist[1], o);
    barrier();
    uint d = hist[0] ^ hist[1];  // the key bits that differ between entries
    uint kb = d == 0u ? 1u : uint(findMSB(d)) + 1u, ib = 32u - kb;
    pk_shared_hi = hist[0] & 0xFFFFu & ~((1u << kb) - 1u);  // hist is next written after compact's barriers
    return (cmp_span - 1u) >> ib == 0u ? ib : 0u;
}
#endif
void compact(uint c) {
    uint tid = gl_LocalInvocationID.x;
    if (c <= min(WG, CMP_RANK_MAX)) {
        // Few entries: each takes its place by counting the entries that beat it, RANK_UNROLL keys
        // read at a time (broadcast reads). Two barriers where a sorting network takes dozens. On an
        // H100 this took 4096 x 32768 K=8 from 0.264 to 0.238 ms; one key at a time it lost (0.331),
        // and up to 512 entries it lost on long rows (64 x 2^20 K=64 0.133 -> 0.175).
        uint k = 0u, i = SENT_IDX, r = 0xFFFFFFFFu;
        if (tid < c) {
            k = skey[SW(tid)]; i = sidx[SW(tid)]; r = 0u;
            uint j = 0u;
            for (; j + RANK_UNROLL <= c; j += RANK_UNROLL) {
                uint kk[RANK_UNROLL];
                [[unroll]] for (uint u = 0u; u < RANK_UNROLL; ++u) kk[u] = skey[SW(j + u)];
                [[unroll]] for (uint u = 0u; u < RANK_UNROLL; ++u) r += rank_beats(j + u, kk[u], k, i, tid) ? 1u : 0u;
            }
            for (; j < c; ++j) r += rank_beats(j, skey[SW(j)], k, i, tid) ? 1u : 0u;
        }
        barrier();
        if (r < pc.Kp) { skey[SW(r)] = k; sidx[SW(r)] = i; }
        for (uint e = c + tid; e < pc.Kp; e += WG) { skey[SW(e)] = 0u; sidx[SW(e)] = SENT_IDX; }
        barrier();
#if RADIX && !RADIX_SHORT
    } else if ((pc.tune & TUNE_SELECT) != 0u && c <= 4u * WG && select_front(c) != 0u) {
        // Only in radix.comp (RADIX 1, which defines select_front): its code stays out of the threshold
        // filter's and argmax's pipelines, where its registers cost occupancy (H100 4096 x 32768 fp32 K=8
        // 0.237 -> 0.281 ms).
        reduce_buf(pc.Kp, pc.Kp, 0u);
#endif
    } else {
        uint N = max(pc.Kp, pow2_at_least(c));
        for (uint e = c + tid; e < N; e += WG) { skey[SW(e)] = 0u; sidx[SW(e)] = SENT_IDX; }
        barrier();
#if RADIX && SHUF
        // One run of RE a thread: merge path after runs of 32, N = Kp (H200 4096x4096 K=1024 0.264 -> 0.223 ms) or a
        // buffer past Kp (64x131072 fp32 K=1500 0.0568 -> 0.0480); GRADIX's sorts keep the bitonic network, where the
        // 64-row cells did not move (docs/tuning/top_k1.md#sort_merge)
#if PACK16
        // Keys of <= 16 bits: one word an entry where the chunk's indices fit (pack_bits)
        uint ib = N == RE * WG && N > MERGE_RUN ? pack_bits(c) : 0u;
        if (ib != 0u) sort_merge_p16(N, c, cmp_base, ib, pk_shared_hi);
        else
#endif
        if (N == RE * WG && N > MERGE_RUN) sort_merge(N);
        else
#endif
        reduce_buf(N, pc.Kp, log2u(N / pc.Kp));
    }
    if (tid == 0u) {
        s_count = pc.Kp;
        s_thr_k = skey[SW(pc.K - 1u)];
        s_thr_i = sidx[SW(pc.K - 1u)];
        s_flag = 0u;
    }
    barrier();
}

// stream_topk: the sequence index of a thread's u-th entry of the step whose keys[0] is entry `first`.
uint slot(bool vec, uint first, uint u) { return vec ? first + (u / EV) * WG * EV + u % EV : first + u * WG; }
