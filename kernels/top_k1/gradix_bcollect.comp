#version 450
// DML TOP_K1, path "gradix" with a sampled bracket (gradix_bracket.glsl), the one read of the row: workgroup g takes
// its chunk's keys above hi to the row's survivors (slots from the survivor slot counter; the first K kept) and its
// keys in [lo, hi] to the row's candidates (slots from the row's first counter; the first CAP kept), in any order (on
// a row whose sample showed a plateau, lo is one above its key: the plateau's keys, as masked logits' -inf, would
// overflow the candidates; gradix_resolve takes them by index). gradix_resolve.comp reads both counts. A block is
// GRADIX_LOADS loads a thread; its keys to keep marked in two bit masks (16/32-bit keys: at most 32 a thread), slots
// by one shared atomic a thread and one global atomic a counter and block, as gradix_collect.comp. Bindings: the
// input, work, ctr. Shared memory: 4 words.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"
layout(constant_id = 1) const uint CAP = 4096;  // candidates a row (GRADIX_BRACKET_CAP fit to shared memory)
#include "gradix_bracket.glsl"

shared uint s_na, s_nc, s_ba, s_bc;

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint base = seq_base(s);
    uvec2 br = work2[s];
    uint lo = br.x, hi = br.y;
    uint surv = surv_at(s) / 2u, cand = bcand_at(s) / 2u;
    uint slot = ctr_row(s) + GBINS + 1u, cslot = ctr_row(s);
    if (tid == 0u) { s_na = 0u; s_nc = 0u; }
    barrier();
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    for (uint b0 = start; b0 < end; b0 += GRADIX_LOADS * step) {
        uint i0 = b0 + (vec ? tid * EV : tid);
        uvec4 q[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            else q[u] = uvec4(i < end ? load_raw(base, i) : 0u, 0u, 0u, 0u);
        }
        // bit u * EV + e: keys above hi in ma, candidates in mc (a load inside the chunk is wholly inside it)
        uint ma = 0u, mc = 0u;
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            bool in_chunk = i0 + u * step < end;
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                uint key = gkey(VEC_ELEM(q[u], e));
                if (in_chunk && (vec || e == 0u) && key >= lo) {
                    if (key > hi) ma |= 1u << (u * EV + e);
                    else mc |= 1u << (u * EV + e);
                }
            }
        }
        uint na = uint(bitCount(ma)), nc = uint(bitCount(mc));
        uint oa = na != 0u ? atomicAdd(s_na, na) : 0u;
        uint oc = nc != 0u ? atomicAdd(s_nc, nc) : 0u;
        barrier();
        if (tid == 0u) {
            s_ba = s_na != 0u ? atomicAdd(ctr[slot], s_na) : 0u;
            s_bc = s_nc != 0u ? atomicAdd(ctr[cslot], s_nc) : 0u;
            s_na = 0u;
            s_nc = 0u;
        }
        barrier();
        oa += s_ba;
        oc += s_bc;
        if (oa >= pc.K) ma = 0u;  // past what is kept (a missed bracket): counted, not revisited
        if (oc >= CAP) mc = 0u;
        uint m = ma | mc;
        while (m != 0u) {  // only the set bits visited; the key read again (cached)
            uint b = uint(findLSB(m));
            m &= m - 1u;
            uint i = i0 + (b / EV) * step + b % EV;
            uint key = gkey(load_raw(base, i));
            if ((ma & (1u << b)) != 0u) {
                if (oa < pc.K) work2[surv + oa] = uvec2(key, i);
                ++oa;
            } else {
                if (oc < CAP) work2[cand + oc] = uvec2(key, i);
                ++oc;
            }
        }
    }
}
