#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), one digit pass of the multi-workgroup radix select: workgroup g
// histograms the digit (8 bits; GDIGIT 11: 11, 11, 10 bits) at pc.shift of its chunk's keys whose higher bits
// equal the row's prefix so far (none on the first pass), adds the histogram into the row's global one (ctr), and
// the last workgroup of the row to arrive picks the digit where the K-th key lies (counting from the top), appends
// it to the prefix and leaves the row's histogram and arrival counter zero. On the last pass (pc.last) every workgroup also
// keeps its histogram in `work` (the chunk's ties of the K-th key, for gradix_collect). Bindings: the input,
// work, ctr. Shared memory: hist[GBINS], s_grp[GBINS/32] (11-bit: s_part[WG]), 4 words.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"

shared uint hist[GBINS];
#ifndef GRADIX_PROBE
#define GRADIX_PROBE 0
#endif
#if GRADIX_PROBE == 2  // research_gradix_probe2: the loads, keys and prefix test, no histogram
#define GRADIX_COUNT(d) probe += (d)
#else
#define GRADIX_COUNT(d) atomicAdd(hist[d], 1u)
#endif
#if GDIGIT == 8
shared uint s_grp[GBINS / 32u];
#else
shared uint s_part[WG];  // pick_bin_top: each thread's GBINS/WG bins, then suffix sums (the 11-bit pick)
#endif
shared uint s_digit, s_above, s_inbin, s_last;
#if GFILTER == 1
// gradix_fscan: a block's candidate counts, one 16-bit field per load (x: loads 0, 1; y: 2, 3), prefix-summed
// over the threads (index order within a load: thread-major), the block's above-key count, candidates so far
shared uvec2 s_scan2[WG];
shared uint s_blk, s_base, s_ctot, s_run;
#endif

// radix.comp's pick_bin (select.glsl): the bin of hist[0, GBINS) where a count of `need` is reached scanning from the top:
// s_digit, with s_above the count above it and s_inbin its own. Groups of 32 bins are summed in parallel
// first, so one thread scans at most GBINS/32 + 32 entries. Ends with a barrier.
#if GDIGIT != 8
// 2048 bins: a serial scan of 64 group sums and 32 bins sat on the pass's tail (each 11-bit pass cost 3-5 us more
// than an 8-bit one, docs/tuning/top_k1.md session 24), so each thread sums its GBINS/WG bins, the sums become
// suffix sums in log2(WG) steps, and the one thread whose bins hold the need-th count scans them.
void pick_bin_top(uint need) {
    uint tid = gl_LocalInvocationID.x;
    const uint per = GBINS / WG;
    barrier();
    uint t = 0u;
    for (uint j = 0u; j < per; ++j) t += hist[tid * per + j];
    s_part[tid] = t;
    barrier();
    for (uint off = 1u; off < WG; off <<= 1) {  // s_part[i]: the count of bins from i's first to the top
        uint v = tid + off < WG ? s_part[tid + off] : 0u;
        barrier();
        s_part[tid] += v;
        barrier();
    }
    uint above = tid + 1u < WG ? s_part[tid + 1u] : 0u;  // counted in the bins above this thread's
    if (above < need && above + t >= need) {
        uint acc = above, b = 0u;
        for (uint j = 0u; j < per; ++j) {
            b = tid * per + per - 1u - j;
            if (acc + hist[b] >= need) break;
            acc += hist[b];
        }
        s_digit = b;
        s_above = acc;
        s_inbin = hist[b];
    }
    barrier();
}
#else
void pick_bin_top(uint need) {
    uint tid = gl_LocalInvocationID.x;
    const uint ng = GBINS / 32u;
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
            g = ng - 1u - j;
            if (acc + s_grp[g] >= need) break;
            acc += s_grp[g];
        }
        uint b = 0u;
        for (uint j = 0u; j < 32u; ++j) {
            b = g * 32u + 31u - j;
            if (acc + hist[b] >= need) break;
            acc += hist[b];
        }
        s_digit = b;
        s_above = acc;
        s_inbin = hist[b];
    }
    barrier();
}
#endif

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint base = seq_base(s);
#if GDIGIT == 8
#define DW 8u       // the pass's digit bits
#define DMASK 255u  // ... and mask
#else
    uint DW = pc.last != 0u ? GLASTW : uint(GDIGIT), DMASK = (1u << DW) - 1u;
#endif
    bool first = pc.shift + DW >= uint(ELEM_BITS);
    uint prefix = first ? 0u : work[2u * s];
    uint shift = pc.shift;
    uint hmask = bits_above(shift + DW);
    for (uint i = tid; i < GBINS; i += WG) hist[i] = 0u;
    barrier();
#if GFILTER == 2
    // gradix_fhist: the chunk's candidates (gradix_fscan), keys only
    uint cnt = work[cnt_at(s, c)], ck = cand_at(s, c);
    // Never taken (a chunk holds at most chunk_len candidates); it keeps binding 0 (the input) in the module, so
    // its bindings stay 0..2 like every GRADIX pass (libvkops/gen_kernels.py wants them contiguous).
    if (cnt > pc.chunk_len) cnt = min(load_raw(base, 0u), pc.chunk_len);
    for (uint i0 = tid; i0 < cnt; i0 += GRADIX_LOADS * WG) {
        uint kq[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * WG;
            kq[u] = i < cnt ? work[ck + i] : ~prefix;
        }
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u)
            if ((kq[u] & hmask) == prefix) atomicAdd(hist[(kq[u] >> shift) & 255u], 1u);
    }
#elif GFILTER == 1
    // gradix_fscan: the first digit (at shift + 8) is resolved in `prefix`; keys above its bucket go to the
    // survivors (slots from the row's counter, a block at a time, as gradix_collect), the bucket's keys (the
    // candidates, `(key & hmask) == prefix`) to the chunk's candidate region in index order, histogrammed by
    // the digit at shift.
    uint ck = cand_at(s, c), surv = surv_at(s), slot = ctr_row(s) + GBINS + 1u;
    if (tid == 0u) { s_blk = 0u; s_ctot = 0u; s_run = 0u; }
    barrier();
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    for (uint b0 = start; b0 < end; b0 += GRADIX_LOADS * step) {
        uint i0 = b0 + (vec ? tid * EV : tid);
        uvec4 q[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            else q[u].x = i < end ? load_raw(base, i) : 0u;
        }
        uint na = 0u;
        uint nc[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            nc[u] = 0u;
            if (i0 + u * step >= end) continue;  // a load inside the chunk is wholly inside it (vec: end % EV == 0)
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint key = gkey(VEC_ELEM(q[u], e));
                uint top = key & hmask;
                if (top > prefix) ++na;
                if (top == prefix) { ++nc[u]; atomicAdd(hist[(key >> shift) & 255u], 1u); }
            }
        }
        uint ncs = nc[0] + nc[1] + nc[2] + nc[3];
        uint oa = na != 0u ? atomicAdd(s_blk, na) : 0u;
        if (ncs != 0u) atomicAdd(s_ctot, ncs);
        barrier();
        if (tid == 0u) s_base = s_blk != 0u ? atomicAdd(ctr[slot], s_blk) : 0u;
        uint ctot = s_ctot;
        uvec2 excl = uvec2(0u), tot = uvec2(0u);
        if (ctot != 0u) {  // the candidates' ranks: an inclusive prefix sum (Hillis-Steele) of packed counts
            uvec2 mine = uvec2(nc[0] | (nc[1] << 16), nc[2] | (nc[3] << 16));
            s_scan2[tid] = mine;
            barrier();
            for (uint off = 1u; off < WG; off <<= 1) {
                uvec2 v = tid >= off ? s_scan2[tid - off] : uvec2(0u);
                barrier();
                s_scan2[tid] += v;
                barrier();
            }
            excl = s_scan2[tid] - mine;
            tot = s_scan2[WG - 1u];
        }
        barrier();
        oa += s_base;
        uint run = s_run;
        if (na + ncs != 0u) {
            uint tl[GRADIX_LOADS] = uint[](tot.x & 0xFFFFu, tot.x >> 16, tot.y & 0xFFFFu, tot.y >> 16);
            uint ex[GRADIX_LOADS] = uint[](excl.x & 0xFFFFu, excl.x >> 16, excl.y & 0xFFFFu, excl.y >> 16);
            uint oc = run;
            [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
                uint pos = oc + ex[u];
                [[unroll]] for (uint e = 0u; e < EV; ++e) {
                    if (!vec && e > 0u) break;
                    uint i = i0 + u * step + e;
                    if (i0 + u * step >= end) break;
                    uint key = gkey(VEC_ELEM(q[u], e));
                    uint top = key & hmask;
                    if (top > prefix) {
                        work[surv + 2u * oa] = key;
                        work[surv + 2u * oa + 1u] = i;
                        ++oa;
                    } else if (top == prefix) {
                        work[ck + pos] = key;
                        work[ck + pc.chunk_len + pos] = i;
                        ++pos;
                    }
                }
                oc += tl[u];
            }
        }
        barrier();
        if (tid == 0u) { s_run = run + ctot; s_blk = 0u; s_ctot = 0u; }
        barrier();
    }
    if (tid == 0u) work[cnt_at(s, c)] = s_run;
#else
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    uint probe = 0u;
    uint b0 = start;
    if (vec) {
        // Blocks wholly inside the chunk (GRADIX_LOADS uvec4 loads a thread): no bounds checks, and one of three
        // loops chosen per pass (uniform): the first pass (no prefix: gtop), a prefix tested on the raw bits
        // (gradix_raw: two instructions an element not in the prefix's range), or exact keys (gkey).
        uint X, rp;
        uint mode = first ? 0u : (gradix_raw(prefix, hmask, X, rp) ? 1u : 2u);
        const uint BLK = GRADIX_LOADS * WG * EV;
        uint v = (base + start) / EV + tid;  // this thread's first uvec4 of the block
        if (mode == 0u) {
            for (; end - b0 >= BLK; b0 += BLK, v += GRADIX_LOADS * WG) {
                uvec4 q[GRADIX_LOADS];
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) q[u] = src4[v + u * WG];
#if GRADIX_PROBE == 1  // research_gradix_probe1: the loads alone
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) probe ^= q[u].x ^ q[u].y ^ q[u].z ^ q[u].w;
#else
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u)
                    [[unroll]] for (uint e = 0u; e < EV; ++e) GRADIX_COUNT(gtop(VEC_ELEM(q[u], e)));
#endif
            }
        } else if (mode == 1u) {
            const uint WE = 32u / ELEM_BITS;  // elements a word: the test runs on the packed word
            for (; end - b0 >= BLK; b0 += BLK, v += GRADIX_LOADS * WG) {
                uvec4 q[GRADIX_LOADS];
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) q[u] = src4[v + u * WG];
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u)
                    [[unroll]] for (uint e = 0u; e < EV; ++e) {
                        uint w = q[u][e / WE];
                        const uint sh = (e % WE) * ELEM_BITS;
                        if ((w & (hmask << sh)) == (rp << sh)) GRADIX_COUNT((((w >> sh) ^ X) >> shift) & DMASK);
                    }
            }
        } else {
            for (; end - b0 >= BLK; b0 += BLK, v += GRADIX_LOADS * WG) {
                uvec4 q[GRADIX_LOADS];
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) q[u] = src4[v + u * WG];
                [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u)
                    [[unroll]] for (uint e = 0u; e < EV; ++e) {
                        uint key = gkey(VEC_ELEM(q[u], e));
                        if ((key & hmask) == prefix) GRADIX_COUNT((key >> shift) & DMASK);
                    }
            }
        }
    }
    // The rest, bounds-checked with exact keys: the chunk's last partial block, or the whole chunk of a strided
    // row (one element a load). A uvec4 inside the chunk is wholly inside it (vec: end is a multiple of EV).
    for (uint i0 = b0 + (vec ? tid * EV : tid); i0 < end; i0 += GRADIX_LOADS * step) {
        uvec4 q[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            else q[u].x = i < end ? load_raw(base, i) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            if (i0 + u * step >= end) continue;
#if GRADIX_PROBE == 1
            probe ^= q[u].x ^ q[u].y ^ q[u].z ^ q[u].w;
#else
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint key = gkey(VEC_ELEM(q[u], e));
                if ((key & hmask) == prefix) GRADIX_COUNT((key >> shift) & DMASK);
            }
#endif
        }
    }
#endif
#if GRADIX_PROBE  // research_gradix_probe*: the pass up to here (probe 3: with the histogram), no merge
    barrier();
    if (probe == 0x9E3779B9u || hist[tid % GBINS] == 0xFFFFFFFFu) { work[2u * pc.n_seq + tid] = probe; ctr[0] = 0u; }
    return;
#endif
    barrier();
    uint row = ctr_row(s);
    for (uint b = tid; b < GBINS; b += WG) {
        uint h = hist[b];
#if GDIGIT == 8
        if (pc.last != 0u) work[tie_at(s, c) + b] = h;
#else
        if (pc.last != 0u && b < GTBINS) work[tie_at(s, c) + b] = h;  // the last digit's bins only
#endif
        if (h != 0u) atomicAdd(ctr[row + b], h);
    }
    // The last workgroup of the row to arrive (merge.glsl's last_to_arrive): every workgroup's histogram
    // (its atomics and, on the last pass, its stores) is visible to it.
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) {
        uint done = atomicAdd(ctr[row + GBINS], 1u);
        s_last = done == pc.chunks - 1u ? 1u : 0u;
        if (s_last != 0u) ctr[row + GBINS] = 0u;
    }
    barrier();
    if (s_last == 0u) return;
    memoryBarrierBuffer();
#if GDIGIT == 8
    for (uint b = tid; b < GBINS; b += WG) hist[b] = atomicExchange(ctr[row + b], 0u);  // read, leave zero
#else
    // 2048 bins: plain coherent loads (the atomics that made them are done: this workgroup arrived last), and a
    // store of zero only where a bin is not, instead of 2048 atomic exchanges a row on the pass's tail
    for (uint b = tid; b < GBINS; b += WG) {
        uint h = ctr[row + b];
        hist[b] = h;
        if (h != 0u) ctr[row + b] = 0u;
    }
#endif
    uint need = first ? pc.K : work[2u * s + 1u];
    pick_bin_top(need);
    if (tid == 0u) {
        work[2u * s] = prefix | (s_digit << shift);
        work[2u * s + 1u] = need - s_above;
    }
}
