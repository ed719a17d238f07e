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
//   [2n, 2n + TB n C)           the last pass's histogram of chunk c of row s at 2n + (s C + c) TB: bin d
//                               counts the chunk's keys equal to prefix | d (ties of T: bin T & (TB - 1));
//                               TB = GTBINS, the last digit's bins (256; 1024 for GDIGIT 11)
//   [2n + TB n C, + 2 n K)      row s's K survivors as (key, index) pairs, unordered
//   GFILTER plans, then: [.., + n C) each chunk's candidate count; [.., + 2 n C chunk_len) chunk c of row s's
//                               candidates: chunk_len keys, then chunk_len indices, in index order
//   GRADIX_BRACKET plans, instead of the ties: the rows' brackets and candidates (gradix_bracket.glsl)
// ctr (zeroed; left zero): row s at s * CTR_WORDS: the row's histogram [0, GB) (GB = GBINS: 256; 2048 for GDIGIT
//   11), the pass's arrival counter (GB; the last workgroup to arrive zeroes it), the survivors' slot counter
//   (GB + 1; gradix_sort, gradix_psort or gradix_rank zeroes it). gradix_rank plans, then: [CTR_WORDS n, + n K)
//   each row's rank counters, [.., + n ni) each (row, i-tile)'s arrival counter (gradix_rank.comp).

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
    uint shift;       // gradix_hist: the digit's lowest bit (ELEM_BITS - GDIGIT, ..., 0)
    uint last;        // gradix_hist: 1 on the last pass (shift 0): keep each chunk's histogram for the ties
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"
#ifndef GFILTER
#define GFILTER 0
#endif
// GDIGIT: a digit pass's bits (TopK1Tuning.GRADIX_DIGIT_BITS; the _d11 modules, 32-bit keys): 8, or 11 (digits of
// 11, 11, 10 bits from the top: 3 passes over the row instead of 4). Macros at 8 keep those modules' SPIR-V as it was.
#ifndef GDIGIT
#define GDIGIT 8
#endif
#if GDIGIT == 8
#define GBINS NBINS     // a pass's bins (the row's histogram in ctr)
#define GTBINS NBINS    // the last pass's bins (a chunk's ties histogram in work)
#define GTMASK 255u     // the last digit's mask: the ties of T are bin T & GTMASK
#else
const uint GBINS = 1u << GDIGIT;
const uint GLASTW = uint(ELEM_BITS - (ELEM_BITS - 1) / GDIGIT * GDIGIT);  // the last (lowest) digit's bits: 10 of 32
const uint GTBINS = 1u << GLASTW;
const uint GTMASK = GTBINS - 1u;
#endif

layout(binding = GRADIX_BINDING) coherent buffer Work { uint work[]; };
layout(binding = GRADIX_BINDING + 1) coherent buffer Ctr { uint ctr[]; };

const uint CTR_WORDS = GBINS + 2u;  // a row's counters: histogram, arrival, survivor slots
uint ctr_row(uint s) { return s * CTR_WORDS; }
uint tie_at(uint s, uint c) { return 2u * pc.n_seq + (s * pc.chunks + c) * GTBINS; }
uint surv_at(uint s) { return 2u * pc.n_seq + pc.n_seq * pc.chunks * GTBINS + 2u * s * pc.K; }

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

// ---- GRADIX's keys: io.glsl's make_key(raw) & KEY_BITS_MASK (the same keys), in fewer instructions --------
// A digit pass spends its time on per-element instructions (bench/research/gradix_probe.py), so its keys are
// branch-free here, and a pass with a prefix tests it on the raw bits where it can (gradix_raw).
const uint G_SB = 1u << (ELEM_BITS - 1);  // the sign bit
#if KIND == 0
const uint G_INFK = (ELEM_BITS == 32 ? 0x7F800000u : 0x7C00u) | G_SB;  // +inf's key before the flip
#endif

// make_key(raw) & KEY_BITS_MASK of a zero-extended raw value, branch-free. Floats: t = raw | sign bit is the key
// of a positive value and of both zeros (-0.0 ties with +0.0); a negative value other than -0.0 and NaN
// (raw in [sign + 1, -inf]) takes its complement; every NaN (t above +inf's key) takes the top key.
uint gkey(uint raw) {
#if KIND == 0
    uint t = raw | G_SB;
    bool neg = raw - (G_SB + 1u) < G_INFK - G_SB;
    uint k = t > G_INFK ? KEY_BITS_MASK : t;
    return (k ^ (neg ? ~pc.flip : pc.flip)) & KEY_BITS_MASK;
#elif KIND == 1
    return (raw ^ G_SB ^ pc.flip) & KEY_BITS_MASK;
#else
    return (raw ^ pc.flip) & KEY_BITS_MASK;
#endif
}

// The first pass's digit (shift ELEM_BITS - GDIGIT): gkey(raw) >> shift. float32 with 8-bit digits needs no NaN
// select there: a NaN's t already has the top key's top 8 bits (the sign and 7 of the 8 exponent bits, all ones).
uint gtop(uint raw) {
#if KIND == 0 && ELEM_BITS == 32 && GDIGIT == 8
    bool neg = raw - (G_SB + 1u) < G_INFK - G_SB;
    return ((raw | G_SB) ^ (neg ? ~pc.flip : pc.flip)) >> 24;
#else
    return gkey(raw) >> (ELEM_BITS - GDIGIT);  // 11 bits: a NaN's t may have zeros in them (its mantissa's top 2)
#endif
}

// A pass with a prefix (hmask holds the key's top bit): its keys (key & hmask == prefix) all come from raw values of
// one sign, whose keys are raw ^ X for one X (floats: X = sign bit or all bits, then the flip), except NaN and -0.0.
// True where the test can run on the raw bits, (raw & hmask) == rp, the digit being ((raw ^ X) >> shift) & 255:
// always for integers; for floats where the prefix's range of keys (before the flip: [lo, hi]) holds neither
// NaN's key (the top one) nor zero's (the sign bit), nor any raw ^ X of a NaN (positive ones: above +inf's key;
// negative ones: below -inf's) or of -0.0 (the sign bit less one).
bool gradix_raw(uint prefix, uint hmask, out uint X, out uint rp) {
#if KIND == 0
    uint lo = (prefix ^ pc.flip) & hmask, hi = lo | (KEY_BITS_MASK & ~hmask);
    X = ((lo & G_SB) != 0u ? G_SB : KEY_BITS_MASK) ^ (pc.flip & KEY_BITS_MASK);
    rp = (prefix ^ X) & hmask;
    return (hmask & G_SB) != 0u && hi <= G_INFK && lo >= (~G_INFK & KEY_BITS_MASK) && hi != G_SB - 1u && lo != G_SB;
#else
    X = ((KIND == 1 ? G_SB : 0u) ^ pc.flip) & KEY_BITS_MASK;
    rp = (prefix ^ X) & hmask;
    return true;
#endif
}
