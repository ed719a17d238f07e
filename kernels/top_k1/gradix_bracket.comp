#version 450
// DML TOP_K1, path "gradix" with a sampled bracket (gradix_bracket.glsl), its first dispatch: one workgroup a row
// reads a sample of the row (up to 256 blocks of 16 consecutive keys, spread evenly) and picks two of its keys: hi,
// with about mu - BZ sigma sample keys above it, and lo, with about mu + BZ sigma (mu = K S / L, the sample keys
// expected at or above the row's K-th key; sigma its binomial spread), so that the row has fewer than K keys above
// hi and at least K at or above lo unless the sample is BZ sigma off. No key above hi: hi is the top key; none at or
// below lo: lo is 0. lo and hi to their top 16 bits (32-bit keys); lo to all its bits where the sample has a plateau
// there. Writes (lo, hi) to work[2s, 2s + 1] ((lo + 1, hi) where lo is a plateau's key) and whether it is to
// work[2n + s]. Bindings: the input, work. Needs subgroup arithmetic; workgroups of 512. Shared
// memory: 16 KiB + 2.6 KiB.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"

// The plateau test's room for candidates: 4096, not the plan's cap (5504 on an H100), which the bracket is not
// given: the 100-value rows of session 42 were measured with it (docs/tuning/top_k1.md, session 42)
const uint CAP = 4096u;
const uint SMAX = 4096u;  // sample keys a row at most: 256 blocks of 16
const uint PER = SMAX / 512u;  // sample keys a thread (the host plans workgroups of 512)
// 32-bit keys bracketed to their top 16 bits (2 digit passes, not 4): a 16-bit bin of float32 keys is 2^-7 of its
// value, a few hundred more candidates at most on the vocabulary rows
const uint GB_LB = ELEM_BITS == 32 ? 16u : 0u;
const float BZ = 4.0;     // the bracket's half-width in sigmas (a miss costs a row's exact select in gradix_resolve)
shared uint skey[SMAX];
#define GB_KEY(j) skey[j]
#define GB_SELECT 1
#include "gradix_bracket.glsl"

void main() {
    uint s = linear_group();
    if (s >= pc.n_seq) return;
    uint tid = gl_LocalInvocationID.x;
    uint base = seq_base(s);
    uint nb = min(SMAX / 16u, pc.L / 16u), S = nb * 16u, span = pc.L / 16u;  // the host plans L >= 256
    uint v[PER];  // the loads first, all in flight
    [[unroll]] for (uint u = 0u; u < PER; ++u) {
        uint j = tid + u * WG;
        uint blk = j / 16u;  // block blk starts at floor(blk span / nb) * 16, without the product's overflow
        v[u] = j < S ? load_raw(base, (blk * (span / nb) + blk * (span % nb) / nb) * 16u + j % 16u) : 0u;
    }
    [[unroll]] for (uint u = 0u; u < PER; ++u)
        if (tid + u * WG < S) skey[tid + u * WG] = gkey(v[u]);
    barrier();
    float mu = float(pc.K) * float(S) / float(pc.L);
    float sd = sqrt(mu * max(1.0 - float(pc.K) / float(pc.L), 0.0));
    int rhi = int(floor(mu - BZ * sd)) - 1;  // sample keys above hi
    int rlo = int(ceil(mu + BZ * sd)) + 1;   // sample keys above lo
    // both ranks in one select (a rank past the sample: no bound there, hi the top key or lo 0)
    uint nhi = uint(clamp(rhi + 1, 1, int(S))), nlo = uint(clamp(rlo + 1, 1, int(S))), hi, lo, above, inbin, hi2;
    bselect2(S, nhi, nlo, 0u, ELEM_BITS, GB_LB, true, hi, lo, above, inbin);
    // lo's bin holding more sample keys than the bracket spans, or for a quarter of the candidates' room: a plateau
    // (masked logits' -inf, few values): lo resolved to the key (16-bit keys: it is), which gradix_bcollect leaves out
    // of the candidates and gradix_resolve takes by index where it is the K-th (else the plateau's keys overflow the
    // candidates and the row takes the exact select: 64 rows of 50 values, K = 3000, 0.22 ms on an H100 where one
    // row's bracket held 3; fp16 rows 99% -inf, K = 3000, 0.16 ms)
    bool plat = rlo < int(S) &&
                (b_res[5] > nlo - nhi || 4.0 * float(b_res[5]) * float(pc.L) > float(CAP) * float(S));
    if (GB_LB != 0u && plat) bselect2(S, nlo, nlo, 0u, ELEM_BITS, 0u, false, lo, hi2, above, inbin);
    plat = plat && lo != KEY_BITS_MASK;  // (lo, hi] needs a key above lo (all keys the top one: lo = hi, no pass)
    hi |= (1u << GB_LB) - 1u;  // the bits below GB_LB: lo rounded down, hi up
    if (rhi < 0) hi = KEY_BITS_MASK;
    if (rlo >= int(S)) lo = 0u;
    if (tid == 0u) {
        work2[s] = uvec2(plat ? lo + 1u : lo, hi);  // the lowest candidate key: a plateau's keys are not candidates
        work[2u * pc.n_seq + s] = plat ? 1u : 0u;
    }
}
