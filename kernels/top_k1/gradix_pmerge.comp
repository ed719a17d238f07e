#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), the last dispatch after gradix_psort (TopK1Tuning.GRADIX_SORT_PARTS): each
// row's survivors sit in `work` as P sorted runs of R = pow2(K) / P (the last ones shorter or empty past K). One
// thread a survivor: its output position is its position in its own run plus, for every other run, how many of
// that run's entries beat it (networks' order: key descending, then index ascending), found by binary search; the
// (key, index) pairs are unique, so the positions are a permutation of 0..K-1. Writes the output values and
// indices; reads no counter (gradix_psort zeroed the row's survivor slot counter). Bindings: the input, the output
// values and indices, work (ctr at binding 4 is dead: dropped). No shared memory.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define GRADIX_BINDING 3
#include "gradix.glsl"

layout(constant_id = 1) const uint R = 512;  // a run's entries: pow2(K) / P

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint per = (pc.K + WG - 1u) / WG;  // workgroups a row
    uint s = g / per, i = (g % per) * WG + gl_LocalInvocationID.x;
    if (i >= pc.K) return;
    uint surv = surv_at(s);
    uint k = work[surv + 2u * i], x = work[surv + 2u * i + 1u];
    uint r = i / R, pos = i - r * R;
    uint P = pc.Kp / R;
    for (uint q = 0u; q < P; ++q) {
        uint a = q * R;
        if (q == r || a >= pc.K) continue;
        // the entries of run q that beat (k, x): a prefix of the run, its length by binary search in [lo, hi)
        uint lo = 0u, hi = min(R, pc.K - a);
        while (lo < hi) {
            uint m = (lo + hi) >> 1;
            uint e = surv + 2u * (a + m);
            if (better(work[e], work[e + 1u], k, x)) lo = m + 1u; else hi = m;
        }
        pos += lo;
    }
    write_out(s, pos, x, seq_base(s));
}
