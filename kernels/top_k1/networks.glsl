// TOP_K1's sorting networks over the shared (key, index) buffer skey/sidx, which the including .comp
// declares (with `const bool SWIZZLE`, true in seg.comp only):
// SEG: every skey/sidx access goes through SW: entries [32, 64) of each 64-block sit in reversed
// bank order, so the compare-exchange pairs of strides 1..16 (2-way bank conflicts in a plain
// layout) and runs of 32 consecutive entries both touch 32 distinct banks. On an H100 that made SEG
// 5-8% faster and the other modes (less bound by shared memory) slower, so only SEG swizzles.
#ifndef PACK16
#define PACK16 0  // 1 (radix.comp, 16-bit keys): sort_merge_p16 below
#endif
#define SW(i) ((i) ^ (SWIZZLE ? (((i) >> 5u) & 1u) * 31u : 0u))

// ---- shared-memory networks --------------------------------------------------------------------
void cas(uint i, uint j, bool desc) {
    uint ki = skey[SW(i)], kj = skey[SW(j)], ii = sidx[SW(i)], ij = sidx[SW(j)];
    if (better(kj, ij, ki, ii) == desc) {
        skey[SW(i)] = kj; skey[SW(j)] = ki;
        sidx[SW(i)] = ij; sidx[SW(j)] = ii;
    }
}

#if SHUF
// ---- register networks (SHUF) -------------------------------------------------------------------
// A thread holds RE consecutive entries of the network (logical position l = t * RE + e, t numbering
// the threads subgroup by subgroup, so t ^ m for m < the subgroup size is a lane of the same subgroup).
// Strides below RE compare in registers, strides below RE * subgroup size through subgroupShuffleXor,
// longer ones in shared memory as before: for 2048 entries, 49 of the 55 steps of the run sort need
// neither shared memory nor a workgroup barrier.
const uint RE = 4u;  // the code below is written out for 4
uvec4 rk, ri;
uint reg_t() { return gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID; }
// Whether n network entries go through registers: every active subgroup full, at most RE a thread.
uint reg_lim() { return RE * gl_SubgroupSize; }  // the shortest stride left to shared memory
bool reg_fits(uint n) { return n >= reg_lim() && n <= RE * WG; }

// Entry (k, i) takes (pk, pi) where `want` says it keeps the better of the two and that one is better,
// or it keeps the worse and that one is worse.
void reg_take(inout uint k, inout uint i, uint pk, uint pi, bool want) {
    if (better(pk, pi, k, i) == want) { k = pk; i = pi; }
}
void reg_cx(inout uint ka, inout uint ia, inout uint kb, inout uint ib, bool desc) {
    if (better(kb, ib, ka, ia) == desc) { uint k = ka, i = ia; ka = kb; ia = ib; kb = k; ib = i; }
}
// One compare-exchange step of stride s (< RE * subgroup size) on the registers of thread t (entries
// l0 .. l0 + 3): the pair's lower position keeps the better entry where (l & d) == 0, else the worse.
// Written out component by component: an indexed private array went to memory.
void reg_stage(uint s, uint d, uint t) {
    uint l0 = t * RE;
    if (s == 1u) {
        reg_cx(rk.x, ri.x, rk.y, ri.y, (l0 & d) == 0u);
        reg_cx(rk.z, ri.z, rk.w, ri.w, ((l0 + 2u) & d) == 0u);
    } else if (s == 2u) {
        reg_cx(rk.x, ri.x, rk.z, ri.z, (l0 & d) == 0u);
        reg_cx(rk.y, ri.y, rk.w, ri.w, ((l0 + 1u) & d) == 0u);
    } else {
        uint m = s / RE;
        bool lower = (t & m) == 0u;
        uvec4 pk = subgroupShuffleXor(rk, m), pi = subgroupShuffleXor(ri, m);
        reg_take(rk.x, ri.x, pk.x, pi.x, lower == ((l0 & d) == 0u));
        reg_take(rk.y, ri.y, pk.y, pi.y, lower == (((l0 + 1u) & d) == 0u));
        reg_take(rk.z, ri.z, pk.z, pi.z, lower == (((l0 + 2u) & d) == 0u));
        reg_take(rk.w, ri.w, pk.w, pi.w, lower == (((l0 + 3u) & d) == 0u));
    }
}
// A thread's RE entries are consecutive in shared memory too (runs of Kp >= RE): at a, a + 1, ...
uint reg_at(uint t, uint Kp, uint gap) { uint l = t * RE; return (l / Kp) * gap + l % Kp; }
void reg_load(uint a) {
    rk = uvec4(skey[SW(a)], skey[SW(a + 1u)], skey[SW(a + 2u)], skey[SW(a + 3u)]);
    ri = uvec4(sidx[SW(a)], sidx[SW(a + 1u)], sidx[SW(a + 2u)], sidx[SW(a + 3u)]);
}
void reg_store(uint a) {
    skey[SW(a)] = rk.x; skey[SW(a + 1u)] = rk.y; skey[SW(a + 2u)] = rk.z; skey[SW(a + 3u)] = rk.w;
    sidx[SW(a)] = ri.x; sidx[SW(a + 1u)] = ri.y; sidx[SW(a + 2u)] = ri.z; sidx[SW(a + 3u)] = ri.w;
}
#endif

// sort_runs' step of size `size`: entry i sorts descending where (i & mask) == 0 (within runs of Kp by
// its bit `size`, then run by run: all descending when T == 0, else alternating).
uint sort_dmask(uint size, uint Kp, uint T) { return size < Kp ? size : (T == 0u ? 0u : Kp); }
// One compare-exchange step of `stride` over N shared entries, descending where (i & d) == 0.
void sort_step(uint N, uint stride, uint d) {
    for (uint p = gl_LocalInvocationID.x; p < N / 2u; p += WG) {
        uint i = 2u * p - (p & (stride - 1u));
        cas(i, i + stride, (i & d) == 0u);
    }
    barrier();
}
// One step of merge_runs' bitonic merges: nact entries in runs of Kp, run q at q * gap; run q descending
// when `last` or q is even.
void merge_step(uint nact, uint Kp, uint gap, uint stride, bool last) {
    for (uint p = gl_LocalInvocationID.x; p < nact / 2u; p += WG) {
        uint q = p / (Kp >> 1), w = p % (Kp >> 1);
        uint i = q * gap + 2u * w - (w & (stride - 1u));
        cas(i, i + stride, last || (q & 1u) == 0u);
    }
    barrier();
}

// Sort runs of Kp (N = n_seg * (Kp << T) entries) descending when T == 0, else alternating in
// direction (the runs merge_runs will pair). Ends with a barrier.
void sort_runs(uint N, uint Kp, uint T) {
#if SHUF
    if (reg_fits(N)) {
        uint t = reg_t(), lim = reg_lim();
        bool act = t < N / RE;  // whole subgroups
        if (act) reg_load(t * RE);
        for (uint size = 2u; size <= Kp; size <<= 1) {
            uint d = sort_dmask(size, Kp, T);
            uint stride = size >> 1;
            if (stride >= lim) {  // the long strides in shared memory
                if (act) reg_store(t * RE);
                barrier();
                for (; stride >= lim; stride >>= 1) sort_step(N, stride, d);
                if (act) reg_load(t * RE);
            }
            if (act) for (; stride > 0u; stride >>= 1) reg_stage(stride, d, t);
        }
        if (act) reg_store(t * RE);
        barrier();
        return;
    }
#endif
    for (uint size = 2u; size <= Kp; size <<= 1)
        for (uint stride = size >> 1; stride > 0u; stride >>= 1) sort_step(N, stride, sort_dmask(size, Kp, T));
}

// Runs of Kp sorted in alternating directions (run r descending when r is even) become the sorted
// (descending) top Kp of each segment of 2^T runs, at the segment's start: T times, keep the better
// half of each pair of runs in place (runs spread out by 2^t) and rebuild it with one bitonic merge.
// Ends with a barrier.
void merge_runs(uint N, uint Kp, uint T) {
    uint tid = gl_LocalInvocationID.x;
    for (uint t = 0u; t < T; ++t) {
        uint span = Kp << t;
        uint nact = N >> (t + 1u);
#if SHUF
        if (reg_fits(nact) && Kp >= RE) {
            // The better half of each pair of runs straight into registers (logical position l of
            // run q at q * 2 * span + l % Kp, its partner span further), then the merge's steps.
            uint rt = reg_t(), lim = reg_lim(), gap = 2u * span;
            bool act = rt < nact / RE;
            uint d = t + 1u == T ? 0u : Kp;
            uint a0 = reg_at(rt, Kp, gap);
            if (act) {
                reg_load(a0 + span);
                uvec4 pk = rk, pi = ri;
                reg_load(a0);
                reg_take(rk.x, ri.x, pk.x, pi.x, true);
                reg_take(rk.y, ri.y, pk.y, pi.y, true);
                reg_take(rk.z, ri.z, pk.z, pi.z, true);
                reg_take(rk.w, ri.w, pk.w, pi.w, true);
            }
            uint stride = Kp >> 1;
            if (stride >= lim) {
                if (act) reg_store(a0);
                barrier();
                for (; stride >= lim; stride >>= 1) merge_step(nact, Kp, gap, stride, d == 0u);
                if (act) reg_load(a0);
            }
            if (act) for (; stride > 0u; stride >>= 1) reg_stage(stride, d, rt);
            if (act) reg_store(a0);
            barrier();
            continue;
        }
#endif
        for (uint e = tid; e < nact; e += WG) {
            uint r = e / Kp, j = e % Kp;
            uint a = 2u * r * span + j, b = a + span;
            uint ka = skey[SW(a)], kb = skey[SW(b)], ia = sidx[SW(a)], ib = sidx[SW(b)];
            if (better(kb, ib, ka, ia)) { skey[SW(a)] = kb; sidx[SW(a)] = ib; }
        }
        barrier();
        for (uint stride = Kp >> 1; stride > 0u; stride >>= 1) merge_step(nact, Kp, 2u * span, stride, t + 1u == T);
    }
}

#if SHUF
// ---- merge sort (SHUF) ---------------------------------------------------------------------------
// N = RE * WG entries sorted descending: runs of MERGE_RUN by the register networks, then log2(N / MERGE_RUN)
// merge-path levels, each thread RE outputs of one pair of runs: a binary search for where its outputs start
// (how many come from the first run), then RE steps of a two-way merge. A level reads about 2 log2(n) + RE
// entries a thread where the bitonic merge of the same pairs took log2(2n) compare-exchange steps. Used where the
// sort runs at the speed of many workgroups (thousands of short rows), not one row's latency.
// Runs of 32: H200 16384x2048 K=1024 0.674 ms against 0.694 (8) and 0.704 (128); docs/tuning/top_k1.md#sort_merge
#ifndef MERGE_RUN
#define MERGE_RUN 32u
#endif
void merge_level(uint n) {
    uint d = gl_LocalInvocationID.x * RE;  // output position
    uint a0 = d - d % (2u * n), b0 = a0 + n, dd = d - a0;
    uint lo = dd > n ? dd - n : 0u, hi = min(dd, n);
    while (lo < hi) {  // outputs [0, dd) of the pair hold lo entries of A: the first i where B[dd-1-i] beats A[i]
        uint mid = (lo + hi) >> 1, bj = b0 + dd - 1u - mid;
        if (better(skey[SW(bj)], sidx[SW(bj)], skey[SW(a0 + mid)], sidx[SW(a0 + mid)])) hi = mid; else lo = mid + 1u;
    }
    uint i = lo, j = dd - lo;
    uint ka = 0u, ia = SENT_IDX, kb = 0u, ib = SENT_IDX;
    if (i < n) { ka = skey[SW(a0 + i)]; ia = sidx[SW(a0 + i)]; }
    if (j < n) { kb = skey[SW(b0 + j)]; ib = sidx[SW(b0 + j)]; }
    uint ok[RE], oi[RE];
    [[unroll]] for (uint e = 0u; e < RE; ++e) {
        bool take_b = i >= n || (j < n && better(kb, ib, ka, ia));  // A first on ties (sentinels)
        ok[e] = take_b ? kb : ka;
        oi[e] = take_b ? ib : ia;
        if (take_b) { ++j; if (j < n) { kb = skey[SW(b0 + j)]; ib = sidx[SW(b0 + j)]; } }
        else { ++i; if (i < n) { ka = skey[SW(a0 + i)]; ia = sidx[SW(a0 + i)]; } }
    }
    barrier();
    rk = uvec4(ok[0], ok[1], ok[2], ok[3]);
    ri = uvec4(oi[0], oi[1], oi[2], oi[3]);
    reg_store(d);
    barrier();
}
void sort_merge(uint N) {
    sort_runs(N, MERGE_RUN, 0u);
    for (uint n = MERGE_RUN; n < N; n <<= 1) merge_level(n);
}
#if PACK16
// ---- merge sort of packed 8/16-bit keys (SHUF, PACK16) -------------------------------------------
// Where keys have at most 16 bits and the sorted chunk's indices fit the bits they leave (16; more where the entries
// share their keys' top bits: compact.glsl's pack_bits), an entry is one word, key << 16 | (0xFFFF - (index - base))
// (an 8-bit key's bits 8-15, the flip's, are the same in every entry): one unsigned compare ranks (key desc, index
// asc), a shuffle or a merge-path read moves one word where it moved two (the search compared two words a side). H200
// 64x32000 fp16 K=2048 0.0384 -> 0.0324 ms, int8 0.0336 -> 0.0276, 16384x2048 fp16 K=1024 0.541 -> 0.450
// (docs/tuning/top_k1.md#pack16). Sentinels pack to 0, as at most one real entry may (the worst key at the chunk's last
// index): entries are unpacked by position, [0, c) real.
uvec4 rp;  // a thread's RE = 4 packed entries
void reg_cx1(inout uint a, inout uint b, bool desc) {
    uint hi = max(a, b), lo = min(a, b);
    a = desc ? hi : lo;
    b = desc ? lo : hi;
}
uint keep1(uint v, uint p, bool better_one) { return better_one ? max(v, p) : min(v, p); }
// reg_stage's step on packed entries
void reg_stage1(uint s, uint d, uint t) {
    uint l0 = t * RE;
    if (s == 1u) {
        reg_cx1(rp.x, rp.y, (l0 & d) == 0u);
        reg_cx1(rp.z, rp.w, ((l0 + 2u) & d) == 0u);
    } else if (s == 2u) {
        reg_cx1(rp.x, rp.z, (l0 & d) == 0u);
        reg_cx1(rp.y, rp.w, ((l0 + 1u) & d) == 0u);
    } else {
        uint m = s / RE;
        bool lower = (t & m) == 0u;
        uvec4 p = subgroupShuffleXor(rp, m);
        rp.x = keep1(rp.x, p.x, lower == ((l0 & d) == 0u));
        rp.y = keep1(rp.y, p.y, lower == (((l0 + 1u) & d) == 0u));
        rp.z = keep1(rp.z, p.z, lower == (((l0 + 2u) & d) == 0u));
        rp.w = keep1(rp.w, p.w, lower == (((l0 + 3u) & d) == 0u));
    }
}
uint pack16(uint a, uint base, uint ib) {
    uint ix = sidx[SW(a)];
    return ix == SENT_IDX ? 0u : (skey[SW(a)] << ib) | (((1u << ib) - 1u) - (ix - base));
}
// merge_level on packed entries (skey only)
void merge_level_p(uint n) {
    uint d = gl_LocalInvocationID.x * RE;
    uint a0 = d - d % (2u * n), b0 = a0 + n, dd = d - a0;
    uint lo = dd > n ? dd - n : 0u, hi = min(dd, n);
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (skey[SW(b0 + dd - 1u - mid)] > skey[SW(a0 + mid)]) hi = mid; else lo = mid + 1u;
    }
    uint i = lo, j = dd - lo;
    uint va = i < n ? skey[SW(a0 + i)] : 0u, vb = j < n ? skey[SW(b0 + j)] : 0u;
    uint o[RE];
    [[unroll]] for (uint e = 0u; e < RE; ++e) {
        bool take_b = i >= n || (j < n && vb > va);
        o[e] = take_b ? vb : va;
        if (take_b) { ++j; vb = j < n ? skey[SW(b0 + j)] : 0u; }
        else { ++i; va = i < n ? skey[SW(a0 + i)] : 0u; }
    }
    barrier();
    [[unroll]] for (uint e = 0u; e < RE; ++e) skey[SW(d + e)] = o[e];
    barrier();
}
// sort_merge of N = RE * WG entries, [0, c) real and [c, N) sentinels, of 16-bit keys whose bits 16 - (32 - ib) and up
// are `shared_hi` in every real entry, indices in [base, base + 2^ib) (ib = 16: shared_hi 0): a word is the key's low
// 32 - ib bits << ib | (2^ib - 1 - (index - base)). Runs of min(MERGE_RUN, RE x subgroup) packed and sorted in
// registers (runs of 64 and 128: no faster), then the merge-path levels; skey/sidx hold the sorted (key, index) pairs
// after. Ends with a barrier.
void sort_merge_p16(uint N, uint c, uint base, uint ib, uint shared_hi) {
    uint tid = gl_LocalInvocationID.x, t = reg_t(), run = min(MERGE_RUN, reg_lim());
    uint a = t * RE;  // the thread's own entries: read and written by it alone, no barrier between
    rp = uvec4(pack16(a, base, ib), pack16(a + 1u, base, ib), pack16(a + 2u, base, ib), pack16(a + 3u, base, ib));
    for (uint size = 2u; size <= run; size <<= 1)
        for (uint stride = size >> 1; stride > 0u; stride >>= 1) reg_stage1(stride, size < run ? size : 0u, t);
    skey[SW(a)] = rp.x; skey[SW(a + 1u)] = rp.y; skey[SW(a + 2u)] = rp.z; skey[SW(a + 3u)] = rp.w;
    barrier();
    for (uint n = run; n < N; n <<= 1) merge_level_p(n);
    uint hi = (pc.flip & 0xFFFF0000u) | shared_hi;  // a 16-bit key's bits above 16 in skey (the collect restores them)
    uint m = (1u << ib) - 1u;
    for (uint e = tid; e < N; e += WG) {
        uint p = skey[SW(e)];
        skey[SW(e)] = e < c ? (p >> ib) | hi : 0u;
        sidx[SW(e)] = e < c ? base + m - (p & m) : SENT_IDX;
    }
    barrier();
}
#endif
#endif

// Reduce N = n_seg * (Kp << T) entries to the sorted (descending) top Kp of each segment, found at
// offset seg * (Kp << T). Ends with a barrier.
void reduce_buf(uint N, uint Kp, uint T) {
    sort_runs(N, Kp, T);
    merge_runs(N, Kp, T);
}
