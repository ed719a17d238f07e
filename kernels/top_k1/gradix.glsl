// TOP_K1 path "gradix" (vkops/ops/top_k1/paths.py Facts.gradix; lowering.py lower): a radix select of each
// row's K-th key over MANY workgroups a row, then one compaction and one sort of the K survivors, as
// torch/CUB do for large K. Included by gradix_hist.comp (one dispatch a digit pass), gradix_collect.comp
// (the compaction) and gradix_sort.comp (one workgroup a row sorts its survivors), after head.glsl; it
// declares their common push block (mirrored by vkops.ops.top_k1.PUSH["gradix_*"]), includes io.glsl and
// binds the scratch `work` and the zeroed `ctr` at GRADIX_BINDING and GRADIX_BINDING + 1.
//
// Keys: io.glsl's make_key, masked to ELEM_BITS (the order of every dtype, NaN above +inf, -0.0 == +0.0,
// complemented for INCREASING), so the K-th key T and the survivors match the oracle; ties of T go to the
// smallest indices (reference.top_k1 orders equal values by ascending index in both directions).
//
// work (uint32 words; n rows, C chunks a row):
//   [0, 2n)                     row s: prefix (the K-th key's digits resolved so far; the whole key T after
//                               the last pass), need (keys equal to the prefix still to take among K)
//   [2n, 2n + 256 n C)          the last pass's histogram of chunk c of row s at 2n + (s C + c) 256: bin d
//                               counts the chunk's keys equal to prefix | d (ties of T: bin T & 255)
//   [2n + 256 n C, + 2 n K)     row s's K survivors as (key, index) pairs, unordered
//   GFILTER plans, then: [.., + n C) each chunk's candidate count; [.., + 2 n C chunk_len) chunk c of row s's
//                               candidates: chunk_len keys, then chunk_len indices, in index order
// ctr (zeroed; left zero): row s at s * CTR_WORDS: the row's histogram [0, 256), the pass's arrival counter
//   (256; the last workgroup to arrive zeroes it), the survivors' slot counter (257; gradix_sort or gradix_rank
//   zeroes it). gradix_rank plans, then: [CTR_WORDS n, + n K) each row's rank counters, [.., + n ni) each (row,
//   i-tile)'s arrival counter (gradix_rank.comp).

// Mirrored by vkops.ops.top_k1.PUSH["gradix_hist"], ["gradix_collect"], ["gradix_sort"] (tests/test_manifest.py).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint n_seq;       // sequences
    uint L;           // axis length
    uint K;
    uint Kp;          // pow2 >= K (gradix_sort's buffer)
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint n_other;     // merged non-axis dims (o_sizes, o_strides)
    uint chunks;      // workgroups a sequence (gradix_hist, gradix_collect)
    uint chunk_len;   // elements a chunk (a multiple of 16: 16-byte loads start aligned)
    uint vec;         // rows are contiguous and 16-byte aligned (uvec4 loads)
    uint shift;       // gradix_hist: the digit's lowest bit (ELEM_BITS - 8, ..., 0)
    uint last;        // gradix_hist: 1 on the last pass (shift 0): keep each chunk's histogram for the ties
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"
#ifndef GFILTER
#define GFILTER 0
#endif

layout(binding = GRADIX_BINDING) coherent buffer Work { uint work[]; };
layout(binding = GRADIX_BINDING + 1) coherent buffer Ctr { uint ctr[]; };

const uint CTR_WORDS = NBINS + 2u;  // a row's counters: histogram, arrival, survivor slots
uint ctr_row(uint s) { return s * CTR_WORDS; }
uint tie_at(uint s, uint c) { return 2u * pc.n_seq + (s * pc.chunks + c) * NBINS; }
uint surv_at(uint s) { return 2u * pc.n_seq + pc.n_seq * pc.chunks * NBINS + 2u * s * pc.K; }

// The chunk [start, end) of workgroup g's row s (c its chunk).
void chunk_of(uint g, out uint s, out uint c, out uint start, out uint end) {
    s = g / pc.chunks;
    c = g % pc.chunks;
    start = c * pc.chunk_len;
    end = min(pc.L, start + pc.chunk_len);
}

#if GFILTER
// The filtering variant (TopK1Tuning.GRADIX_FILTER; top_k1_gradix_f*): after the first digit pass,
// gradix_fscan reads the row once more, writes the keys whose first digit is above the K-th key's to the
// survivors and compacts the first digit's bucket (the candidates) chunk by chunk, in index order, after the
// survivors: chunk c of row s holds its candidates' keys at cand_at(s, c) and their indices chunk_len words
// further on, their count at cnt_at(s, c). The later digit passes (gradix_fhist) and the compaction
// (gradix_fcollect) read only the candidates.
uint cnt_at(uint s, uint c) { return surv_at(pc.n_seq) + s * pc.chunks + c; }
uint cand_at(uint s, uint c) {
    return surv_at(pc.n_seq) + pc.n_seq * pc.chunks + 2u * (s * pc.chunks + c) * pc.chunk_len;
}
#endif

const uint GRADIX_LOADS = 4u;  // loads in flight per thread (radix.comp's RADIX_LOADS)
