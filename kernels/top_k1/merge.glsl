// TOP_K1's chunks of one row (filter.comp, radix.comp): each chunk's top K either goes out (one chunk a
// row) or to `cand`, and the last chunk of the row to finish (atomic counters in `ctr`) merges the sorted
// runs and writes the row, in the same dispatch. Bindings 3-4; the including .comp declares s_last and a
// push block with n_seq, L, K, Kp, chunks, chunk_len and merge_group.
layout(binding = 3) coherent buffer Cand { uint cand[]; };    // (key, index) pairs
layout(binding = 4) coherent buffer Ctr { uint ctr[]; };      // finished-chunk counters: per sequence, then per merge group

// FILTER, the last workgroup of a sequence (or of a merge group): the top Kp of `nruns` sorted runs of K
// candidates (run r at cand[c0 + r * rstride * K]) into skey/sidx[0, Kp), sorted. The runs are sorted already, so
// they are only merged: up to B/Kp runs at a time are loaded, odd slots reversed (the alternating
// directions merge_runs pairs), and log2(slots) levels of one bitonic merge each leave the best Kp
// in slot 0, which stays for the next load. On an H100 that replaced stream_topk's repeated
// compactions (whole-buffer sorts) over the candidates. Two slots of 4 entries a thread (SHUF) merge by one
// merge-path level (networks.glsl's merge_level) instead, neither reversed.
void merge_cand(uint c0, uint nruns, uint rstride) {
    uint tid = gl_LocalInvocationID.x;
    uint Kp = pc.Kp, R = B / Kp;  // Kp <= B/2: at least two slots
    uint next = 0u, s0 = 0u;      // next run to load; slots already holding a result (0 or 1)
    while (next < nruns) {
        uint take = min(R - s0, nruns - next);
        uint slots = pow2_at_least(s0 + take);
#if SHUF
        // Two runs that fill 4 entries a thread: one merge-path level, not a bitonic merge (the odd slot not reversed):
        // H200 64x131072 fp32 K=1024 0.0367 -> 0.0357 ms, K=2048 0.0487 -> 0.0471 (docs/tuning/top_k1.md#sort_merge)
        bool mp = s0 + take == 2u && 2u * Kp == RE * WG;
#else
        const bool mp = false;
#endif
        for (uint e = tid; e < (slots - s0) * Kp; e += WG) {
            uint sl = s0 + e / Kp, j = e % Kp;
            uint r = next + sl - s0, jj = (sl & 1u) != 0u && !mp ? Kp - 1u - j : j;
            uint k = 0u, ix = SENT_IDX;
            if (sl < s0 + take && jj < pc.K) {
                uint at = 2u * (c0 + r * rstride * pc.K + jj);
                k = cand[at];
                ix = cand[at + 1u];
            }
            skey[SW(sl * Kp + j)] = k;
            sidx[SW(sl * Kp + j)] = ix;
        }
        barrier();
#if SHUF
        if (mp) merge_level(Kp);
        else
#endif
        merge_runs(slots * Kp, Kp, log2u(slots));
        next += take;
        s0 = 1u;
    }
}

// Whether this workgroup is the last of `n` to arrive at counter `at` (which it then leaves zero for the
// next dispatch); every workgroup's buffer writes before its arrival are visible to the last one.
bool last_to_arrive(uint at, uint n) {
    memoryBarrierBuffer();
    barrier();  // also orders the reads of s_last after an earlier call before its next write
    if (gl_LocalInvocationID.x == 0u) {
        uint done = atomicAdd(ctr[at], 1u);
        s_last = done == n - 1u ? 1u : 0u;
        if (s_last != 0u) ctr[at] = 0u;
    }
    barrier();
    bool last = s_last != 0u;
    if (last) memoryBarrierBuffer();
    return last;
}

// Workgroup g: chunk c of sequence s. CHUNK_TOPK(base, start, end), which the including .comp defines
// (stream_topk in filter.comp, radix_topk in radix.comp), leaves the chunk's top Kp in skey/sidx[0, Kp),
// sorted; its first K go out where the chunk is the row's only one, else to the chunk's run of `cand`, and
// the last chunk to finish merges the runs (in two levels for merge groups of pc.merge_group chunks) and
// writes the row.
void run_chunk(uint g) {
    uint tid = gl_LocalInvocationID.x;
    uint s = g / pc.chunks, c = g % pc.chunks;
    uint base = seq_base(s);
    uint start = c * pc.chunk_len;
    CHUNK_TOPK(base, start, min(pc.L, start + pc.chunk_len));
#if RADIX_SHORT
    // One chunk a row (the plan's): the merge's code stays out of the module, its bindings (3, 4) in its interface
    // (a one-chunk plan binds them as any radix plan does), through accesses no plan reaches.
    if (pc.chunks != 1u) { uint v = ctr[0]; ctr[0] = cand[0]; cand[0] = v; }
#endif
    if (RADIX_SHORT != 0 || pc.chunks == 1u) {
        for (uint j = tid; j < pc.K; j += WG) write_out(s, j, sidx[SW(j)], base);
        return;
    }
    uint out0 = (s * pc.chunks + c) * pc.K;
    for (uint j = tid; j < pc.K; j += WG) {
        cand[2u * (out0 + j)] = skey[SW(j)];
        cand[2u * (out0 + j) + 1u] = sidx[SW(j)];
    }
    uint c0 = s * pc.chunks * pc.K;
    uint gs = max(pc.merge_group, 1u), ngrp = (pc.chunks + gs - 1u) / gs;
    if (ngrp > 1u) {
        // Two levels: the last chunk of each group of gs merges the group's runs into the place of its
        // first run, then the last group merges the groups' runs. The last workgroup of a row otherwise
        // merges every run in turn (B / Kp at a time): 1 x 2^26 at K=1024, 128 runs, was 127 merges.
        uint grp = c / gs, first = grp * gs, n = min(gs, pc.chunks - first);
        if (!last_to_arrive(pc.n_seq + s * ngrp + grp, n)) return;
        if (n > 1u) {  // a group of one run has it in place already
            merge_cand(c0 + first * pc.K, n, 1u);
            for (uint j = tid; j < pc.K; j += WG) {
                cand[2u * (c0 + first * pc.K + j)] = skey[SW(j)];
                cand[2u * (c0 + first * pc.K + j) + 1u] = sidx[SW(j)];
            }
        }
        if (!last_to_arrive(s, ngrp)) return;
        merge_cand(c0, ngrp, gs);
    } else {
        if (!last_to_arrive(s, pc.chunks)) return;
        merge_cand(c0, pc.chunks, 1u);
    }
    for (uint j = tid; j < pc.K; j += WG) write_out(s, j, sidx[SW(j)], base);
}
