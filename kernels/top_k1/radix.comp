#version 450
// DML TOP_K1, path "filter" by radix select (ops/top_k1.py; plan note path "radix"): pow2(K) >= 128, short
// rows from K = 2, and the rules of ops/top_k1_paths.py. A chunk is reduced by radix select (radix_topk):
// 8-bit key digits until the keys at or above the K-th key's prefix fit the shared buffer, a position select
// among ties, one sort; chunks of 2^15 to 2^19 keys first try a threshold guessed from a sample, collected
// in one pass (sampled_topk). Several chunks a row: merge.glsl (last to finish merges).
// Its own module, apart from filter.comp: another loop over the chunk (histogram passes, a few reads of
// it, instead of a running threshold), with its own shared memory (the histogram) and the push word
// `tune`; the chunk merge (merge.glsl) and the buffer's final sort (compact.glsl) are shared with it.
// SHUF=1 (top_k1_radix_sg_*): the networks' short strides in registers and subgroup shuffles.
// RADIX_SHORT=1 (top_k1_radix_s[_sg]_*, TopK1Tuning.RADIX_SHORT_BUILD): one chunk a row of at most 4 B keys (so no
// sampled guess and no TUNE_* bits), one load a thread and pass: without the chunk merge, the sampled guess and
// select_front in the module, its registers leave room for more workgroups (H200 16384x2048 K=1024 0.674 -> 0.568 ms).
// RADIX_MASK=1 (top_k1_radix_m[_sg]_*, TopK1Tuning.RADIX_MASK; 16/32-bit keys): radix_pass's element loops
// without break/continue (a thread's valid elements as a bit mask), the collect pass's survivors as a bit mask:
// one shared atomic a thread and block, then a write a set bit (the key read again from the input).
// Shared memory: skey/sidx[B], hist[NBINS], s_grp[NBINS/32], 5 words (compact.glsl's stores of the threshold,
// which only filter.comp reads, are dead here and dropped) (vkops.ops.top_k1_paths.module_shared_bytes).
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#ifndef RADIX_MASK
#define RADIX_MASK 0
#endif
#if RADIX_MASK && ELEM_BITS == 8
#error "RADIX_MASK: built for 16/32-bit keys only (kernels/variants.py); 8-bit keys take the loops with break/continue"
#endif

layout(constant_id = 1) const uint B = 2048;  // shared buffer entries (power of two)

// Mirrored by vkops.ops.top_k1.PUSH["radix"] (tests/test_manifest.py checks it).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint n_seq;       // sequences
    uint L;           // axis length
    uint K;
    uint Kp;          // pow2 >= K
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint n_other;     // merged non-axis dims (o_sizes, o_strides)
    uint chunks;      // workgroups a sequence
    uint chunk_len;   // elements a chunk (whole steps of WG * EPI)
    uint merge_group; // chunks a first-level merge group (run_chunk in merge.glsl)
    uint vec;         // rows are contiguous and 16-byte aligned (uvec4 loads)
    uint tune;        // TUNE_* bits (vkops.ops.top_k1_paths.tune_bits)
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"

// TUNE_GUESS: the sampled guess aims at K + max(K/2, 64) keys, not K + K/2 + 64 (a missed guess, one
// more read of a row, costs little among thousands of rows; fewer keys to sort). TUNE_SELECT: compact
// takes select_front's shortcut.
// TUNE_FIT: a long chunk (> 4 B) also resolves digits to about Kp entries, as a short one does.
const uint TUNE_GUESS = 1u, TUNE_SELECT = 2u, TUNE_FIT = 4u;

shared uint skey[B];
shared uint sidx[B];
shared uint s_count, s_thr_k, s_thr_i, s_last, s_flag;
// 8-bit digits: 11-bit ones (2048 bins) cost more in occupancy than they saved in passes on an H200.
shared uint hist[NBINS];
shared uint s_grp[NBINS / 32u];
shared uint s_digit, s_above, s_inbin;
const bool SWIZZLE = false;
#ifndef PACK16
#define PACK16 (ELEM_BITS <= 16)  // the final merge sort on (key, index) packed into one word (networks.glsl)
#endif
#include "networks.glsl"

#include "select.glsl"


#define RADIX 1
uint cmp_base = 0u, cmp_span = 0xFFFFFFFFu;  // the chunk compact() sorts: its first index, its length (PACK16)
uint pk_shared_hi = 0u;  // compact.glsl's pack_bits: the key bits every entry shares (a private variable)
#include "compact.glsl"

// ---- RADIX: the top Kp of a chunk by radix select -------------------------------------------------
#ifndef RADIX_ONE_LOAD
#define RADIX_ONE_LOAD 0  // 1: the top_k1_radix[_m]_l1 builds (16-bit keys on one row: TopK1Tuning.RADIX_ONE_LOAD_MAX_SEQ)
#endif
// Loads in flight a thread and pass (8 was no faster than 4); 8-bit keys 1, code 4 times shorter: 1 x 32000 int8 after a
// large product 34.3 -> 21.3 µs (docs/tuning/top_k1.md#2026-11-27-session-31-radix-selects-8-bit-passes-one-load-a-thread).
const uint RADIX_LOADS = ELEM_BITS == 8 || RADIX_ONE_LOAD != 0 || RADIX_SHORT != 0 ? 1u : 4u;
const uint PASS_KEY_HIST = 0u, PASS_POS_HIST = 1u, PASS_COLLECT = 2u;

// One pass over entries [lo_i, hi_i) of the sequence at `base` (lo_i/hi_i relative to the sequence).
//   KEY_HIST:  hist[the `width` bits at `shift`] of keys whose bits above them equal `prefix`
//   POS_HIST:  hist[(i - lo_i) / w] of entries whose key == prefix (the exact threshold)
//   COLLECT:   append (key, i) when key > prefix, or key == prefix and i < pos_cut, to skey/sidx
void radix_pass(uint pass, uint base, uint lo_i, uint hi_i, uint shift, uint width, uint prefix, uint w,
                uint pos_cut) {
    uint tid = gl_LocalInvocationID.x;
    uint hmask = bits_above(shift + width);
    uint dmask = (1u << width) - 1u;
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    uint a0 = vec ? lo_i - lo_i % EV : lo_i;  // vector loads start on a 16-byte boundary
#if RADIX_MASK
    // Bit u * EV + e (RADIX_LOADS * EV <= 32) of a block stands for element e of load u. The element loops have no
    // break or continue, so they unroll with constant indices into q: an element outside [lo_i, hi_i) (or e > 0 of
    // a strided row's load) is masked off, its work predicated away.
    uint ev = vec ? EV : 1u;
    for (uint i0 = a0 + (vec ? tid * EV : tid); i0 < hi_i; i0 += RADIX_LOADS * step) {
        uvec4 q[RADIX_LOADS];
        uint vm = 0u;  // the block's elements inside [lo_i, hi_i)
        [[unroll]] for (uint u = 0u; u < RADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < hi_i ? src4[(base + i) / EV] : uvec4(0u);
            else q[u] = uvec4(i < hi_i ? load_raw(base, i) : 0u, 0u, 0u, 0u);
            // elements [lo_e, hi_e) of the load are inside (hi_e <= ev <= 8: the shifts stay in range)
            uint hi_e = i < hi_i ? min(hi_i - i, ev) : 0u;
            uint lo_e = min(i < lo_i ? lo_i - i : 0u, hi_e);
            vm |= ((1u << hi_e) - (1u << lo_e)) << (u * EV);
        }
        uint sm = 0u;  // PASS_COLLECT: the block's survivors
        [[unroll]] for (uint u = 0u; u < RADIX_LOADS; ++u) {
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                uint bit = 1u << (u * EV + e);
                bool ok = (vm & bit) != 0u;
                uint i = i0 + u * step + e;
                uint key = make_key(VEC_ELEM(q[u], e)) & KEY_BITS_MASK;  // !vec: e = 0, q[u].x
                if (pass == PASS_KEY_HIST) {
                    if (ok && (key & hmask) == prefix) atomicAdd(hist[(key >> shift) & dmask], 1u);
                } else if (pass == PASS_POS_HIST) {
                    if (ok && key == prefix) atomicAdd(hist[(i - lo_i) / w], 1u);
                } else if (ok && (key > prefix || (key == prefix && i < pos_cut))) {
                    sm |= bit;
                }
            }
        }
        if (pass == PASS_COLLECT && sm != 0u) {
            // the thread's slots with one atomic; the stores visit only the set bits (compact sorts them after,
            // so their order is free)
            uint pos = atomicAdd(s_count, uint(bitCount(sm)));
            while (sm != 0u) {
                uint b = uint(findLSB(sm));
                sm &= sm - 1u;
                uint i = i0 + (b / EV) * step + b % EV;
                if (pos < B) {  // the sampled guess may overshoot: count on, store what fits
                    skey[SW(pos)] = (make_key(load_raw(base, i)) & KEY_BITS_MASK) ^ (pc.flip & ~KEY_BITS_MASK);
                    sidx[SW(pos)] = i;
                }
                ++pos;
            }
        }
    }
#else
    for (uint i0 = a0 + (vec ? tid * EV : tid); i0 < hi_i; i0 += RADIX_LOADS * step) {
        uvec4 q[RADIX_LOADS];  // loads in flight per thread; elements are extracted when used
        [[unroll]] for (uint u = 0u; u < RADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < hi_i ? src4[(base + i) / EV] : uvec4(0u);
            else q[u].x = i < hi_i ? load_raw(base, i) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < RADIX_LOADS; ++u) {
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint i = i0 + u * step + e;
                if (i >= hi_i || i < lo_i) continue;
                uint key = make_key(VEC_ELEM(q[u], e)) & KEY_BITS_MASK;  // !vec: e = 0, q[u].x
                if (pass == PASS_KEY_HIST) {
                    if ((key & hmask) == prefix) atomicAdd(hist[(key >> shift) & dmask], 1u);
                } else if (pass == PASS_POS_HIST) {
                    if (key == prefix) atomicAdd(hist[(i - lo_i) / w], 1u);
                } else if (key > prefix || (key == prefix && i < pos_cut)) {
                    uint pos = atomicAdd(s_count, 1u);
                    if (pos < B) {  // the sampled guess may overshoot: count on, store what fits
                        skey[SW(pos)] = key ^ (pc.flip & ~KEY_BITS_MASK);  // restore the flip's high bits
                        sidx[SW(pos)] = i;
                    }
                }
            }
        }
    }
#endif
}

// The top Kp (key, index) pairs of entries [start, end) into skey/sidx[0, Kp), sorted: resolve the
// K-th key 8 bits at a time until every key at or above the resolved prefix fits the buffer; if the
// key resolves completely (ties), take the tied entries with the smallest indices (a position
// select), so exactly K entries are collected. Then one sort. Reads the chunk 2-4 times instead of
// compacting the buffer again and again.
// Sampling fast path: a threshold guessed from a sample, with about `want` keys of the chunk at or
// above it if they are spread evenly; one pass collects them. It stands when between K and B entries
// came in (then they hold the top K, ties included); a guess that collects fewer than K or more than B
// is tried again at a rank aimed at the middle of [K, B], strictly between the ranks that collected too
// few and too many, SAMPLE_ATTEMPTS guesses in all, then the exact radix select runs. Random data takes one full read instead of three.
// The sample: every thread's best of m keys from strips of WG loads (16-byte ones where rows allow)
// spread over the chunk (about a quarter of a 2^15 chunk, read again by the collection soon after); the guess is the r-th best
// of those WG keys, r set so that about `want` keys of the chunk beat it (1 - (1 - want/n)^m of the
// threads' bests do), found by 8-bit digits over one key a thread. Digits stop once the picked bin
// holds at most 2 of them: the rest of the bin adds only a few entries to the collection.
const uint SAMPLE_MIN_LEN = 1u << 15;
// ... and at most 2^19: on 2^20-key chunks (1 x 2^26, K=1024: 64 chunks) the exact select ran 0.907 ms
// against the guess's 1.046 (H100); 2^18-key chunks (64 x 2^20) kept it (0.290 against 0.317).
const uint SAMPLE_MAX_LEN = 1u << 19;
const uint SAMPLE_ATTEMPTS = 3u;  // guesses (each a read of the chunk) before the exact select

bool sampled_topk(uint base, uint start, uint end, uint need) {
#if RADIX_SHORT
    return false;  // chunks of at most 4 B < SAMPLE_MIN_LEN keys
#endif
    uint tid = gl_LocalInvocationID.x;
    uint n = end - start;
    // Keys expected at or above the guess: 1.5 K + 64 kept K=256's collection under 512 entries, a
    // shorter sort (H100, 4096 x 32768: 0.459 -> 0.401 ms against 2 K + 32).
    uint pad = (pc.tune & TUNE_GUESS) != 0u ? max(need / 2u, 64u) : need / 2u + 64u;
    uint want = min(need + pad, B * 3u / 4u);
    // Only chunks of >= 2^15 keys: on an H100 it won from there (4096 x 32768, K=256: 0.56 -> 0.53
    // ms; 64 x 2^20 chunks of 2^16, K=256: 0.35 -> 0.27 ms); shorter chunks are cheap to read again.
    if (n < SAMPLE_MIN_LEN || n > SAMPLE_MAX_LEN || want < need + need / 4u) return false;
    bool vec = pc.vec != 0u;
    uint ev = vec ? EV : 1u;
    uint nl = clamp(n / (WG * ev * 8u), 4u, 16u) & ~3u;  // loads a thread, 4 in flight
    uint strip = n / ev / nl;                             // loads between the strips' starts
    if (strip < WG) return false;
    // Keys a thread takes: m of its nl * ev, as many as keep the guess's rank r = WG (1 - (1 - want/n)^m) <= WG/4,
    // where the threads' bests still stand for the sample's best keys (a larger rank is a steadier guess:
    // #sampled-guess-rank), spread over its loads (load l gives m (l+1) / nl - m l / nl); none if even one a
    // load is too many.
    float q = log(1.0 - float(want) / float(n));
    uint m = min(nl * ev, uint(log(0.75) / q));
    if (m < nl) return false;
    uint mk = 0u;  // this thread's best sampled key
    for (uint l0 = 0u; l0 < nl; l0 += 4u) {
        uvec4 w[4];
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            uint at = (l0 + u) * strip + tid;
            if (vec) w[u] = src4[(base + start) / EV + at];
            else w[u].x = load_raw(base, start + at);
        }
        [[unroll]] for (uint u = 0u; u < 4u; ++u) {
            uint take = m * (l0 + u + 1u) / nl - m * (l0 + u) / nl;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (e >= take) break;
                mk = max(mk, make_key(VEC_ELEM(w[u], e)) & KEY_BITS_MASK);
            }
        }
    }
    uint r = max(4u, uint(float(WG) * (1.0 - exp(float(m) * q)) + 0.5));
    uint r_lo = 0u, c_lo = 0u, r_hi = WG + 1u, c_hi = 0u;  // ranks that collected too few / too many
    for (uint attempt = 0u; attempt < SAMPLE_ATTEMPTS; ++attempt) {
        uint prefix = 0u, rr = r;
        for (uint sh = uint(ELEM_BITS) - 8u;; sh -= 8u) {
            clear_hist();
            uint hmask = bits_above(sh + 8u);
            if ((mk & hmask) == prefix) atomicAdd(hist[(mk >> sh) & 255u], 1u);
            pick_bin(rr, true, 256u);
            prefix |= s_digit << sh;
            rr -= s_above;
            if (sh == 0u || s_inbin <= 2u) break;
        }
        if (prefix == 0u) return false;  // the guess admits every key
        if (tid == 0u) s_count = 0u;
        barrier();
        radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, prefix - 1u, 0u, 0u);
        barrier();
        uint c = s_count;
        barrier();
        if (c >= need && c <= B) { compact(c); return true; }
        // Too few, or more than the buffer holds: the count grows about in proportion to the rank, so
        // the next rank aims at the middle of [need, B], interpolated between the ranks known to collect
        // too few and too many once both are, and strictly between them (ranks 72 -> 1014 keys, 109 ->
        // 2326, then 72 again went on to the exact select on an fp16 chunk of 81920 keys, K=1024, in a
        // NumPy model of this guess). One workgroup's exact select, or one retry, sets a dispatch's time.
        if (c < need) { r_lo = r; c_lo = c; } else { r_hi = r; c_hi = c; }
        if (r_hi <= r_lo + 1u) return false;
        float tgt = 0.5 * float(need + B);
        float est = r_lo > 0u && r_hi <= WG ? float(r_lo) + (tgt - float(c_lo)) * float(r_hi - r_lo) / float(c_hi - c_lo)
                                            : float(r) * tgt / float(max(c, 1u));
        r = uint(clamp(est + 0.5, float(r_lo + 1u), float(r_hi - 1u)));
    }
    return false;
}

void radix_topk(uint base, uint start, uint end) {
    uint tid = gl_LocalInvocationID.x;
    uint need = min(pc.K, end - start);
    cmp_base = start; cmp_span = end - start;
    if (sampled_topk(base, start, end, need)) return;
    uint prefix = 0u, above = 0u;
    bool resolved = false;
    // Stop resolving digits once the keys at or above the prefix fit `fit` entries. A short chunk
    // (cheap to read again) goes on to about Kp entries, so the final sort is small: on an H100 that
    // took 4096 x 4096 from 0.454 to 0.244 ms at K=256; a long one stops as soon as they fit the buffer
    // (another pass over 2^15+ keys cost more than sorting 2048 entries).
    // TUNE_FIT: chunks of 4 B to 2^15 keys with pow2(K) = B/2 (a buffer of B collected more than Kp
    // keys: a sort of B; docs/tuning/top_k1.md#tune_fit).
    uint fit = end - start <= 4u * B || (pc.tune & TUNE_FIT) != 0u ? max(pc.Kp, 512u) : B;
    uint lo_key = 0u;
    uint width = 8u;
    for (uint shift = uint(ELEM_BITS) - width;; ) {
        clear_hist();
        radix_pass(PASS_KEY_HIST, base, start, end, shift, width, prefix, 0u, 0u);
        pick_bin(need, true, NBINS);
        uint d = s_digit, acc = s_above, in_bin = s_inbin;
        prefix |= d << shift;
        above += acc;
        need -= acc;
        if (above + in_bin <= fit) { lo_key = prefix; break; }  // all keys >= prefix.000 fit
        if (shift == 0u) { resolved = true; break; }
        width = min(8u, shift);
        shift -= width;
    }
    uint pos_cut = 0xFFFFFFFFu;
    if (resolved) {
        // prefix is the K-th key exactly; take its first `need` occurrences by position.
        uint lo_i = start, hi_i = end;
        for (;;) {
            uint w = max(1u, (hi_i - lo_i + NBINS - 1u) / NBINS);
            clear_hist();
            radix_pass(PASS_POS_HIST, base, lo_i, hi_i, 0u, 0u, prefix, w, 0u);
            pick_bin(need, false, NBINS);
            need -= s_above;
            lo_i += s_digit * w;
            hi_i = min(hi_i, lo_i + w);
            if (w == 1u) { pos_cut = lo_i + 1u; break; }
        }
    }
    if (tid == 0u) s_count = 0u;
    barrier();
    // COLLECT takes key > prefix, and key == prefix below pos_cut: resolved, the K-th key's first
    // occurrences; else every key >= lo_key (all of them when lo_key is 0).
    if (resolved) radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, prefix, 0u, pos_cut);
    else if (lo_key == 0u) radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, 0u, 0u, 0xFFFFFFFFu);
    else radix_pass(PASS_COLLECT, base, start, end, 0u, 0u, lo_key - 1u, 0u, 0u);
    barrier();
    uint c = s_count;
    barrier();
    compact(c);
}

#define CHUNK_TOPK radix_topk
#include "merge.glsl"

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    run_chunk(g);
}
