// TOP_K1 path "gradix" with a sampled bracket (TopK1Tuning.GRADIX_BRACKET; vkops/ops/top_k1/lowering.py): instead of
// one dispatch a digit over the whole row, gradix_bracket.comp guesses from a sample of the row two keys lo <= hi
// that bracket the K-th key T with high probability; gradix_bcollect.comp reads the row once, keys above hi to the
// survivors and keys in [lo, hi] (the candidates) to a buffer of CAP a row; gradix_resolve.comp takes the top of the
// candidates that the survivors lack, or, where the bracket missed (too many above hi, too few at or above lo, more
// candidates than CAP), selects the row's survivors exactly in one workgroup. The survivors' sort is GRADIX's.
// Included after gradix.glsl and the includer's CAP (specialization constant 1: candidates a row). work: as
// gradix.glsl's, row s's bracket at [2s, 2s + 1) (lo, hi; lo one above a plateau's key, whose ties are not
// candidates), its plateau flag at 2n + s (in the ties' words, unused here), then after every row's survivors each
// row's CAP candidates as (key, index) pairs. ctr: the row's first word counts its candidates (gradix_resolve zeroes
// it), the survivor slot counter (GBINS + 1) counts the keys above hi.

layout(binding = GRADIX_BINDING) coherent buffer Work2 { uvec2 work2[]; };  // work, 8 bytes at a time

uint bcand_at(uint s) { return surv_at(pc.n_seq) + 2u * s * CAP; }  // row s's candidates (an even word)

#ifdef GB_SELECT
// Radix selects over keys in shared memory (GB_KEY(j), j < n), two at once (histograms A and B), digits of up to 8
// bits from a given bit down, one shared atomic a key: a subgroup vote that added a subgroup's keys of one bin with one
// atomic cost more than it saved, on plateaus too (gradix_bracket 15.5 -> 11.5 us on 64 x 151936 fp16, 30.0 -> 17.3
// on masked rows: docs/tuning/top_k1.md, session 44). A digit is picked by subgroup prefix sums over the bins, not a
// serial scan. Needs subgroup arithmetic and workgroups of 512 (a bin a thread for each histogram; subgroups tile the
// workgroup in order).
shared uint bh[512];     // A's bins, then B's
shared uint wsum[128];   // each subgroup's sum of its bins (subgroups of >= 4)
shared uint b_res[8];    // A's digit, the count above it and in it; then B's (not uint[6]: the push block's type)

void hist_add(uint bin) { atomicAdd(bh[bin], 1u); }

// For A and B, the bin where a count of need (>= 1, at most the histogram's total) is reached from the top: b_res.
// Thread p of the workgroup (subgroup-major) holds bin 255 - p % 256 of histogram p / 256. Starts and ends with a
// barrier.
void bpick2(uint needA, uint needB) {
    barrier();
    uint p = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    uint h = p / 256u, b = 255u - p % 256u;
    uint v = bh[h * 256u + b];
    uint incl = subgroupInclusiveAdd(v);
    if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u) wsum[gl_SubgroupID] = incl;
    barrier();
    uint above = incl - v, need = h == 0u ? needA : needB;
    for (uint g = h * (256u / gl_SubgroupSize); g < gl_SubgroupID; ++g) above += wsum[g];
    if (above < need && above + v >= need) {
        b_res[3u * h] = b;
        b_res[3u * h + 1u] = above;
        b_res[3u * h + 2u] = v;
    }
    barrier();
}

// The needA-th and (dual) needB-th largest (1 <= need <= n) of the n keys, all of which share `prefix`'s bits from
// bit hb up, resolved down to bit lb (their bits below it zero): TA and TB; in aboveA how many keys are above TA's
// resolved bits, in inbinA how many share them.
void bselect2(uint n, uint needA, uint needB, uint prefix, uint hb, uint lb, bool dual, out uint TA, out uint TB,
              out uint aboveA, out uint inbinA) {
    uint tid = gl_LocalInvocationID.x;
    uint hm = hb >= 32u ? 0u : KEY_BITS_MASK & ~((1u << hb) - 1u);
    uint pa = prefix & hm, pb = pa;
    aboveA = 0u;
    inbinA = n;
    while (hb > lb) {
        uint w = min(8u, hb - lb), sh = hb - w, dm = (1u << w) - 1u;
        bh[tid] = 0u;
        barrier();
        for (uint j = tid; j < n; j += WG) {
            uint k = GB_KEY(j);
            if ((k & hm) == pa) hist_add((k >> sh) & dm);
            if (dual && (k & hm) == pb) hist_add(256u + ((k >> sh) & dm));
        }
        bpick2(needA, needB);
        pa |= b_res[0] << sh;
        needA -= b_res[1];
        aboveA += b_res[1];
        inbinA = b_res[2];
        if (dual) {
            pb |= b_res[3] << sh;
            needB -= b_res[4];
        }
        hm |= dm << sh;
        hb = sh;
    }
    TA = pa;
    TB = pb;
}
#endif
