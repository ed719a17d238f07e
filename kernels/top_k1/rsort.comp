#version 450
// DML TOP_K1, path "rsort" (ops/top_k1.py): one workgroup sorts one whole row of at most RS_E * WG
// elements by a stable LSD radix sort in shared memory (8-bit digits), then writes its first K. For
// large K on short rows (pow2(K) above ROWS' 256), where SEG's bitonic network took about 55
// compare-exchange steps with workgroup barriers a row and radix select still sorted up to 2K entries.
//
// Item e of lane l of subgroup g sits at position p = g * E * SGS + e * SGS + l (E items a lane). The
// positions start as the indices, and each pass orders the items by (digit descending, position), a
// stable order: after the last digit, keys descend and equal keys keep ascending indices.
// A pass first matches every item (the lanes holding the same digit find each other with 8 ballots),
// then counts the items of each digit per subgroup, item by item in order: the lowest lane of a match
// adds their count to its subgroup's counter of that digit and hands the old count to the others by a
// shuffle (items e and e+1 are ordered by a subgroup barrier). One scan over (digit descending,
// subgroup) turns the counters into first positions, and every item is stored at its place. A digit
// shared by every item (the high bytes of narrow keys, constant data) makes the pass the identity: it
// is skipped.
//
// Shared memory sets the speed: each workgroup is a chain of dependent steps, so what counts is how
// many an SM holds. On an H100, 16 KiB more a workgroup made 32768 x 1024 K=1024 2.7x slower, and
// cutting it from ~13 KiB to ~6 (the changes below) 1.31 -> 0.84 ms. So the items move through one
// word a position (skey alone): the key bits later passes still
// read together with the index where they fit (pass 0 of 16-bit keys, passes 1-2 of 32-bit keys),
// keys then indices in two rounds where they do not (pass 0 of 32-bit keys), indices alone in the
// last pass (the values are re-read from the input; 8-bit keys have only that one). The counters hold
// 16 bits (two digits a word, updated atomically).
//
// rs_sh (RS_SH words, sized by the host: ops/top_k1_paths.py): [g * RS_CW + w] subgroup g's counters of
// digit ranks 2w (low half) and 2w + 1 (high half) (rank r = 255 - digit, so the scan runs in output
// order), then one total per subgroup.
// Its own module (it was a mode of the ROWS modules): one sort of the whole row, no radix select.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "head.glsl"

layout(constant_id = 1) const uint B = 2048;  // positions: the row's items, padded to E a lane
// RSORT's digit counters and subgroup totals, sized by the host (vkops.ops.top_k1_paths.rsort_shared_words).
layout(constant_id = 2) const uint RS_SH = 1u;

// Mirrored by vkops.ops.top_k1.PUSH["rsort"] (tests/test_manifest.py checks it).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint L;           // axis length
    uint K;
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint n_other;     // merged non-axis dims (o_sizes, o_strides)
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"
#include "subgroup.glsl"

shared uint skey[B];
shared uint rs_sh[RS_SH];
shared uint s_flag;

const uint RS_CW = 128u;  // counter words a subgroup: 256 digits, 16 bits each
const uint RS_IB = 12u;   // index bits in an exchanged word (rows of <= 4096; padding 4095, never written)
const uint RS_PAD = (1u << RS_IB) - 1u;
const uint RS_E = 8u;  // items a lane at most (registers: a key, an index, a match/rank each); 16 ran 5% slower

void rs_match(uint r, out uint cnt, out uint excl, out uint leader) {
    if (gl_SubgroupSize <= 32u) {  // one word of ballot bits: a quarter of the general case's work
        uint m = gl_SubgroupSize == 32u ? 0xFFFFFFFFu : ((1u << gl_SubgroupSize) - 1u);
        [[unroll]] for (uint b = 0u; b < 8u; ++b) {
            bool bit = ((r >> b) & 1u) != 0u;
            uint v = subgroupBallot(bit).x;
            m &= bit ? v : ~v;
        }
        cnt = bitCount(m);
        excl = bitCount(m & gl_SubgroupLtMask.x);
        leader = uint(findLSB(m));
    } else {
        uvec4 m = subgroupBallot(true);
        [[unroll]] for (uint b = 0u; b < 8u; ++b) {
            bool bit = ((r >> b) & 1u) != 0u;
            uvec4 v = subgroupBallot(bit);
            m &= bit ? v : ~v;
        }
        cnt = subgroupBallotBitCount(m);
        excl = subgroupBallotExclusiveBitCount(m);
        leader = subgroupBallotFindLSB(m);
    }
}

void run_rsort(uint s) {
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, SGS = gl_SubgroupSize, NSG = gl_NumSubgroups;
    uint tid = gl_LocalInvocationID.x;
    uint E = (pc.L + WG - 1u) / WG;
    uint n_items = E * WG;
    uint c0 = sg * RS_CW;                  // this subgroup's counters
    uint t0 = NSG * RS_CW;                 // subgroup totals
    uint slot = sg * SGS + lane;           // the scan's order (gl_LocalInvocationID need not follow subgroups)
    uint p0 = sg * E * SGS + lane;         // position of item 0; item e is at p0 + e * SGS
    uint base = seq_base(s);

    uint k[RS_E], ix[RS_E], rk[RS_E];
    [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
        uint p = p0 + e * SGS;
        bool ok = e < E && p < pc.L;
        k[e] = ok ? make_key(load_raw(base, p)) & KEY_BITS_MASK : 0u;  // padding ranks last (key 0,
        ix[e] = ok ? p : RS_PAD;                                        // positions after every element)
    }
    for (uint d = lane; d < RS_CW; d += SGS) rs_sh[c0 + d] = 0u;
    if (tid == 0u) s_flag = 0u;            // ordered before its first use by the barrier after the counts
    sg_sync();

    for (uint sh = 0u; sh < ELEM_BITS; sh += 8u) {
        // Match every item first (ballots only: independent, so they overlap), then count and rank item
        // by item in position order (the part that waits on shared memory).
        [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
            if (e < E) {
                uint cnt, excl, leader;
                rs_match(255u - ((k[e] >> sh) & 255u), cnt, excl, leader);
                rk[e] = cnt | (excl << 8) | (leader << 16);  // each < 256: subgroups of <= 128
            }
        }
        [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
            if (e < E) {
                uint r = 255u - ((k[e] >> sh) & 255u);
                uint leader = rk[e] >> 16;
                uint old = 0u;
                if (lane == leader) {  // two digits share a word (16-bit halves): atomic
                    uint hs = (r & 1u) * 16u;
                    old = (atomicAdd(rs_sh[c0 + (r >> 1)], (rk[e] & 255u) << hs) >> hs) & 0xFFFFu;
                }
                sg_sync();             // orders this item's counts before the next item's
                rk[e] = subgroupShuffle(old, leader) + ((rk[e] >> 8) & 255u);
            }
        }
        barrier();
        // Scan: thread `slot` takes counter words [slot * WPT, slot * WPT + WPT) (two digit ranks each);
        // each count becomes its subgroup's first position of the digit.
        const uint WPT = WG >= RS_CW ? 1u : RS_CW / WG;
        uint tot[4];                           // 2 * WPT <= 4: the host's workgroups have >= 64 invocations
        uint mine = 0u;
        [[unroll]] for (uint j = 0u; j < 2u; ++j) {
            uint w = slot * WPT + j;
            tot[2u * j] = 0u; tot[2u * j + 1u] = 0u;
            if (j < WPT && w < RS_CW) {
                for (uint g = 0u; g < NSG; ++g) {
                    uint c = rs_sh[g * RS_CW + w];
                    rs_sh[g * RS_CW + w] = tot[2u * j] | (tot[2u * j + 1u] << 16);
                    tot[2u * j] += c & 0xFFFFu;
                    tot[2u * j + 1u] += c >> 16;
                }
                mine += tot[2u * j] + tot[2u * j + 1u];
            }
        }
        uint incl = subgroupInclusiveAdd(mine);
        if (lane == SGS - 1u) rs_sh[t0 + sg] = incl;
        barrier();
        uint first = incl - mine;
        for (uint g = 0u; g < sg; ++g) first += rs_sh[t0 + g];
        [[unroll]] for (uint j = 0u; j < 2u; ++j) {
            uint w = slot * WPT + j;
            if (j < WPT && w < RS_CW) {
                uint lo = tot[2u * j], hi = tot[2u * j + 1u];
                // one digit holds every item: the pass keeps the order
                if (lo == n_items || hi == n_items) s_flag = sh + 1u;
                uint add = first | ((first + lo) << 16);  // positions < 2^16: no carry between halves
                for (uint g = 0u; g < NSG; ++g) rs_sh[g * RS_CW + w] += add;
                first += lo + hi;
            }
        }
        barrier();
        if (s_flag != sh + 1u) {
            // Every item to its place through one word a position: the key bits later passes read and
            // the index together where they fit in 32 bits, else keys and indices in two rounds; the
            // last pass moves indices only (the values are re-read from the input).
            uint pos[RS_E];
            [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
                uint r = 255u - ((k[e] >> sh) & 255u);
                pos[e] = e < E ? ((rs_sh[c0 + (r >> 1)] >> ((r & 1u) * 16u)) & 0xFFFFu) + rk[e] : 0u;
            }
            uint hi_bits = ELEM_BITS - sh - 8u;  // key bits still to sort
            if (hi_bits > 32u - RS_IB) {
                [[unroll]] for (uint e = 0u; e < RS_E; ++e) if (e < E) skey[pos[e]] = k[e];
                barrier();
                [[unroll]] for (uint e = 0u; e < RS_E; ++e) if (e < E) k[e] = skey[p0 + e * SGS];
                barrier();
                [[unroll]] for (uint e = 0u; e < RS_E; ++e) if (e < E) skey[pos[e]] = ix[e];
                barrier();
                [[unroll]] for (uint e = 0u; e < RS_E; ++e) if (e < E) ix[e] = skey[p0 + e * SGS];
            } else {
                uint lo_sh = sh + 8u;          // < 32 here: the last pass has hi_bits 0
                [[unroll]] for (uint e = 0u; e < RS_E; ++e)
                    if (e < E) skey[pos[e]] = (hi_bits == 0u ? 0u : (k[e] >> lo_sh)) | (ix[e] << (32u - RS_IB));
                barrier();
                [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
                    if (e < E) {
                        uint w = skey[p0 + e * SGS];
                        k[e] = hi_bits == 0u ? 0u : (w & ((1u << (32u - RS_IB)) - 1u)) << lo_sh;
                        ix[e] = w >> (32u - RS_IB);
                    }
                }
            }
        }
        for (uint d = lane; d < RS_CW; d += SGS) rs_sh[c0 + d] = 0u;
        barrier();                             // skey is read; counters cleared
    }
    // Item e of this lane is the (p0 + e * SGS)-th best: positions below K are outputs.
    [[unroll]] for (uint e = 0u; e < RS_E; ++e) {
        uint p = p0 + e * SGS;
        if (e < E && p < pc.K) write_out(s, p, ix[e], base);
    }
}

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    run_rsort(g);
}
