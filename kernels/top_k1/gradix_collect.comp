#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), the compaction after the digit passes: with the row's K-th key T
// and the count `need` of its ties among the top K (work), workgroup g writes its chunk's keys above T to
// the row's survivors (slots from the row's counter in ctr, in any order: gradix_sort orders them) and its
// ties of T that are among the row's first `need` ties by index (reference.top_k1's order for equal values):
// the ties of earlier chunks (their last-pass histograms' bin T & GTMASK) say how many come before this chunk;
// a chunk whose ties all fall before or after the cut takes all or none of them, the one chunk the cut falls
// in ranks its ties by index and takes the first ones: at most GTIE_CAP ties gathered into a shared list while
// the chunk is read and each ranked by counting the smaller indices, more by a block-by-block prefix sum.
// Slots of the keys above T: one global atomic a workgroup and load block, between two barriers (slots by subgroup
// sums without the barriers measured no faster on an H200: docs/tuning/top_k1.md, session 22).
// Bindings: the input, work, ctr. Shared memory: s_scan[WG], 6 words, s_ties[GTIE_CAP], 1 word.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"

shared uint s_scan[WG];
shared uint s_before, s_tie, s_run, s_tot, s_blk, s_base;

uint key_at(uint base, uint i) { return gkey(load_raw(base, i)); }

#if GFILTER
// gradix_fcollect: the same over the chunk's candidates (gradix_fscan: keys at ck, indices at ck + chunk_len, in
// index order), the keys above the first digit's bucket already among the survivors. A block is GRADIX_LOADS
// candidates a thread (thread-major); the cut chunk ranks its ties CE consecutive candidates a thread.
const uint CE = 4u;

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint T = work[2u * s], need = work[2u * s + 1u];
    uint above = pc.K - need;
    uint d = T & GTMASK;
    uint cnt = work[cnt_at(s, c)], ck = cand_at(s, c), ci = ck + pc.chunk_len;
    // Never taken (gradix_fhist's guard: keeps binding 0, the input, in the module)
    if (cnt > pc.chunk_len) cnt = min(load_raw(seq_base(s), 0u), pc.chunk_len);
    if (cnt == 0u) return;
    if (tid == 0u) { s_before = 0u; s_tie = 0u; s_run = 0u; s_tot = 0u; s_blk = 0u; }
    barrier();
    uint part = 0u;
    for (uint c2 = tid; c2 < c; c2 += WG) part += work[tie_at(s, c2) + d];
    if (part != 0u) atomicAdd(s_before, part);
    barrier();
    uint before = s_before, own = work[tie_at(s, c) + d];
    bool all = before + own <= need;
    bool cut = !all && before < need;
    uint surv = surv_at(s), slot = ctr_row(s) + GBINS + 1u;
    for (uint b0 = 0u; b0 < cnt; b0 += GRADIX_LOADS * WG) {
        uint kq[GRADIX_LOADS];
        uint na = 0u, nt = 0u;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = b0 + u * WG + tid;
            kq[u] = i < cnt ? work[ck + i] : 0u;
            if (i < cnt && kq[u] > T) ++na;
            if (i < cnt && kq[u] == T && all) ++nt;
        }
        uint oa = na != 0u ? atomicAdd(s_blk, na) : 0u;
        uint ot = nt != 0u ? above + before + atomicAdd(s_tie, nt) : 0u;
        barrier();
        if (tid == 0u) {
            s_base = s_blk != 0u ? atomicAdd(ctr[slot], s_blk) : 0u;
            s_blk = 0u;
        }
        barrier();
        oa += s_base;
        if (na + nt == 0u) continue;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = b0 + u * WG + tid;
            if (i >= cnt || kq[u] < T || (kq[u] == T && !all)) continue;
            uint pos = kq[u] > T ? oa++ : ot++;
            work[surv + 2u * pos] = kq[u];
            work[surv + 2u * pos + 1u] = work[ci + i];
        }
    }
    if (!cut) return;
    uint r = need - before;
    for (uint blk = 0u; blk < cnt; blk += WG * CE) {
        uint bits = 0u, n = 0u;
        for (uint e = 0u; e < CE; ++e) {
            uint i = blk + tid * CE + e;
            if (i < cnt && work[ck + i] == T) { bits |= 1u << e; ++n; }
        }
        if (n != 0u) atomicAdd(s_tot, n);
        barrier();
        uint tot = s_tot;
        if (tot != 0u) {
            s_scan[tid] = n;
            barrier();
            for (uint off = 1u; off < WG; off <<= 1) {
                uint v = tid >= off ? s_scan[tid - off] : 0u;
                barrier();
                s_scan[tid] += v;
                barrier();
            }
            uint rank = s_run + s_scan[tid] - n;
            for (uint e = 0u; e < CE; ++e) {
                if ((bits & (1u << e)) == 0u) continue;
                if (rank < r) {
                    uint pos = above + before + rank;
                    work[surv + 2u * pos] = T;
                    work[surv + 2u * pos + 1u] = work[ci + blk + tid * CE + e];
                }
                ++rank;
            }
        }
        barrier();
        if (tid == 0u) { s_run += tot; s_tot = 0u; }
        barrier();
        if (s_run >= r) break;
    }
}
#else
// The cut chunk's ties ranked in shared memory when at most this many (2 KiB: within every TOP_K1 module's budget,
// paths.shared_bytes, down to B = 256 and 64 threads; ranking reads GTIE_CAP^2 / WG shared words): more, the block scan.
const uint GTIE_CAP = 512u;  // paths.GRADIX_TIE_CAP
shared uint s_ties[GTIE_CAP];  // the cut chunk's tie indices, in any order
shared uint s_nl;              // their count so far

// Research copies (kernels/variants.py research_gcollect_probe*, bench/research/gradix_collect_probe.py), the
// same push block, bindings and shared memory; 0 is the real module. Cut down, each adding one part to the one
// before: 1 the block loop's loads alone (no row state, keys or barriers); 2 with the row state (T, need, the
// earlier chunks' ties) and each element's key and compare with T, counts only; 3 with the block's slots (shared
// atomics, the two barriers and the row's global slot atomic), nothing written; 4 with the survivors' writes (keys
// above T and whole-chunk ties), no cut-chunk tie list and no tail; 5 is 4 without the slot round trip (no
// barriers or global atomic: slots from a workgroup's own shared counter, wrapped into the row's K). They cut down
// the element loops 8-bit keys still run; whole-kernel variants of the write phase (unrolled loops, 8-byte stores,
// staged or ballot writes, the bit mask kept below) were measured and removed: docs/tuning/top_k1.md, session 23.
#ifndef GCOLLECT_PROBE
#define GCOLLECT_PROBE 0
#endif
#define GC_FULL (GCOLLECT_PROBE == 0)  // the whole kernel, exact survivors
// 16/32-bit keys (a thread's at most 32 elements a block fit one mask word): survivors found by a bit mask and written
// 8 bytes at a time, 24-31% faster on an H200 (docs/tuning/top_k1.md, session 23); 8-bit keys keep the loops.
#define GC_MASK (GC_FULL && ELEM_BITS > 8)
#define GC_STORE64 GC_MASK
#if GC_STORE64
layout(binding = GRADIX_BINDING) coherent buffer Work2 { uvec2 work2[]; };  // work, 8 bytes at a time
#define PUT(pos, key, idx) work2[surv / 2u + (pos)] = uvec2(key, idx)
#else
#define PUT(pos, key, idx) { work[surv + 2u * (pos)] = key; work[surv + 2u * (pos) + 1u] = idx; }
#endif
#if !GC_FULL
// Keeps a probe's work, its shared memory (the real module's footprint) and its bindings alive; writes the row's
// survivors at most (the probes' outputs mean nothing), and ctr[0] zero (where it is zero).
void probe_sink(uint s, uint probe) {
    uint tid = gl_LocalInvocationID.x;
    if (probe == 0x9E3779B9u || s_ties[tid % GTIE_CAP] == 0x9E3779B9u || s_scan[tid] == 0x9E3779B9u) {
        work[surv_at(s) + tid % (2u * pc.K)] = probe;
        ctr[0] = 0u;
    }
}
#endif

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint base = seq_base(s);
#if GCOLLECT_PROBE == 1  // research_gcollect_probe1: the block loop's loads alone
    {
        bool vec = pc.vec != 0u;
        uint step = vec ? WG * EV : WG;
        uint probe = 0u;
        for (uint b0 = start; b0 < end; b0 += GRADIX_LOADS * step) {
            uint i0 = b0 + (vec ? tid * EV : tid);
            uvec4 q[GRADIX_LOADS];
            [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
                uint i = i0 + u * step;
                if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
                else q[u] = uvec4(i < end ? load_raw(base, i) : 0u, 0u, 0u, 0u);
            }
            [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) probe ^= q[u].x ^ q[u].y ^ q[u].z ^ q[u].w;
        }
        probe_sink(s, probe);
        return;
    }
#endif
    uint T = work[2u * s], need = work[2u * s + 1u];
    uint above = pc.K - need;  // keys > T in the row: the survivors' first slots
    uint d = T & GTMASK;
    if (tid == 0u) { s_before = 0u; s_tie = 0u; s_run = 0u; s_tot = 0u; s_blk = 0u; s_nl = 0u; }
    barrier();
    uint part = 0u;
    for (uint c2 = tid; c2 < c; c2 += WG) part += work[tie_at(s, c2) + d];
    if (part != 0u) atomicAdd(s_before, part);
    barrier();
    uint before = s_before, own = work[tie_at(s, c) + d];
    bool all = before + own <= need;  // every tie of this chunk is among the first `need`
    bool cut = !all && before < need; // the cut falls inside this chunk
#if GCOLLECT_PROBE == 4 || GCOLLECT_PROBE == 5  // no cut-chunk tie list
    bool list = false;
#else
    bool list = cut && own <= GTIE_CAP;  // its ties gathered into s_ties while the chunk is read
#endif
    uint surv = surv_at(s), slot = ctr_row(s) + GBINS + 1u;
#if !GC_FULL
    uint probe = 0u;
#endif
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    // Blocks of GRADIX_LOADS loads a thread: each thread counts its keys above T (and, `all`, its ties; `list`, its
    // ties for s_ties), takes its slots of the keys above T (a shared atomic into the workgroup's block, one global
    // atomic a block between two barriers), its ties' slots with one shared atomic, and writes its keys from the
    // registers it loaded them into.
    for (uint b0 = start; b0 < end; b0 += GRADIX_LOADS * step) {
        uint i0 = b0 + (vec ? tid * EV : tid);
        uvec4 q[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
#if GC_MASK
            else q[u] = uvec4(i < end ? load_raw(base, i) : 0u, 0u, 0u, 0u);
#else
            else q[u].x = i < end ? load_raw(base, i) : 0u;
#endif
        }
        // A load inside the chunk is wholly inside it (vec: end is a multiple of EV): bounds checked a load, and
        // one compare an element for the common key below T.
        uint na = 0u, nt = 0u, nl = 0u;
#if GC_MASK  // bit u * EV + e (at most 32): keys above T in ma, the ties to take or list in mt
        uint ma = 0u, mt = 0u;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            bool in_chunk = i0 + u * step < end;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                uint key = gkey(VEC_ELEM(q[u], e));
                if (in_chunk && (vec || e == 0u) && key >= T) {
                    if (key > T) ma |= 1u << (u * EV + e);
                    else if (all || list) mt |= 1u << (u * EV + e);
                }
            }
        }
        na = uint(bitCount(ma));
        if (all) nt = uint(bitCount(mt));
        else nl = uint(bitCount(mt));
#else
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            if (i0 + u * step >= end) continue;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint key = gkey(VEC_ELEM(q[u], e));
                if (key >= T) {
                    if (key > T) ++na;
                    else if (all) ++nt;
                    else if (list) ++nl;
                }
            }
        }
#endif
#if GCOLLECT_PROBE == 2  // research_gcollect_probe2: counts only
        probe += na + nt + nl;
        continue;
#endif
#if GCOLLECT_PROBE == 5  // research_gcollect_probe5: slots from the workgroup's own counter (never reset), no barriers
        uint oa = na != 0u ? atomicAdd(s_blk, na) : 0u;
#else
        uint oa = na != 0u ? atomicAdd(s_blk, na) : 0u;
        barrier();
        if (tid == 0u) {
            s_base = s_blk != 0u ? atomicAdd(ctr[slot], s_blk) : 0u;
            s_blk = 0u;
        }
        barrier();
        oa += s_base;
#endif
        uint ot = nt != 0u ? above + before + atomicAdd(s_tie, nt) : 0u;
        uint ol = nl != 0u ? atomicAdd(s_nl, nl) : 0u;
#if GCOLLECT_PROBE == 3  // research_gcollect_probe3: slots taken, nothing written
        probe += oa + ot + ol;
        continue;
#endif
        if (na + nt + nl == 0u) continue;
        {
#if GC_MASK  // only the set bits visited; a key above T read again (cached)
        uint m = ma | mt;
        while (m != 0u) {
            uint b = uint(findLSB(m));
            m &= m - 1u;
            uint i = i0 + (b / EV) * step + b % EV;
            if ((ma & (1u << b)) != 0u) {
                uint key = gkey(load_raw(base, i));
                PUT(oa, key, i);
                ++oa;
            } else if (all) {
                PUT(ot, T, i);
                ++ot;
            } else {
                s_ties[ol++] = i;
            }
        }
#else
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            if (i0 + u * step >= end) continue;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint i = i0 + u * step + e;
                uint key = gkey(VEC_ELEM(q[u], e));
                if (key < T) continue;
                if (key > T || all) {
                    uint pos = key > T ? oa++ : ot++;
#if GCOLLECT_PROBE == 5
                    pos %= pc.K;  // the workgroup's running slots, kept inside the row's survivors
#endif
                    PUT(pos, key, i);
                } else if (list) {
                    s_ties[ol++] = i;
                }
            }
        }
#endif
        }
    }
#if !GC_FULL  // research_gcollect_probe2-5: no tail
    probe_sink(s, probe);
    return;
#endif
    if (!cut) return;
    uint r = need - before;  // this chunk's ties to take: 0 < r < own
    if (list) {
        // Each listed tie's rank is the count of smaller indices in the list; a thread holds up to 4 of them
        // against one pass over the list.
        barrier();  // s_ties holds all `own` ties
        for (uint j0 = tid; j0 < own; j0 += 4u * WG) {
            uint idx[4], rank[4];
            [[unroll]] for (uint u = 0u; u < 4u; ++u) {
                uint j = j0 + u * WG;
                idx[u] = j < own ? s_ties[j] : 0u;
                rank[u] = 0u;
            }
            for (uint m = 0u; m < own; ++m) {
                uint v = s_ties[m];
                [[unroll]] for (uint u = 0u; u < 4u; ++u) rank[u] += v < idx[u] ? 1u : 0u;
            }
            [[unroll]] for (uint u = 0u; u < 4u; ++u) {
                if (j0 + u * WG >= own || rank[u] >= r) continue;
                uint pos = above + before + rank[u];
                PUT(pos, T, idx[u]);
            }
        }
        return;
    }
    // More ties than the list holds: the first r by index, block by block (a thread's EV consecutive elements, the
    // threads in order), ranked by a prefix sum of the threads' tie counts.
    for (uint blk = start; blk < end; blk += WG * EV) {
        uint bits = 0u, cnt = 0u;
        for (uint e = 0u; e < EV; ++e) {
            uint i = blk + tid * EV + e;
            if (i < end && key_at(base, i) == T) { bits |= 1u << e; ++cnt; }
        }
        if (cnt != 0u) atomicAdd(s_tot, cnt);
        barrier();
        uint tot = s_tot;
        if (tot != 0u) {
            s_scan[tid] = cnt;
            barrier();
            for (uint off = 1u; off < WG; off <<= 1) {  // inclusive prefix sum (Hillis-Steele)
                uint v = tid >= off ? s_scan[tid - off] : 0u;
                barrier();
                s_scan[tid] += v;
                barrier();
            }
            uint rank = s_run + s_scan[tid] - cnt;
            for (uint e = 0u; e < EV; ++e) {
                if ((bits & (1u << e)) == 0u) continue;
                if (rank < r) {
                    uint pos = above + before + rank;
                    PUT(pos, T, blk + tid * EV + e);
                }
                ++rank;
            }
        }
        barrier();
        if (tid == 0u) { s_run += tot; s_tot = 0u; }
        barrier();
        if (s_run >= r) break;
    }
}
#endif
