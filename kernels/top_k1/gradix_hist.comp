#version 450
// DML TOP_K1, path "gradix" (gradix.glsl), one digit pass of the multi-workgroup radix select: workgroup g
// histograms the 8-bit digit at pc.shift of its chunk's keys whose higher bits equal the row's prefix so far
// (none on the first pass), adds the histogram into the row's global one (ctr), and the last workgroup of the
// row to arrive picks the digit where the K-th key lies (counting from the top), appends it to the prefix
// and leaves the row's histogram and arrival counter zero. On the last pass (pc.last) every workgroup also
// keeps its histogram in `work` (the chunk's ties of the K-th key, for gradix_collect). Bindings: the input,
// work, ctr. Shared memory: hist[NBINS], s_grp[NBINS/32], 4 words.
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"
#define TOPK_NO_OUTPUTS 1
#define GRADIX_BINDING 1
#include "gradix.glsl"

shared uint hist[NBINS];
shared uint s_grp[NBINS / 32u];
shared uint s_digit, s_above, s_inbin, s_last;

// radix.comp's pick_bin: the bin of hist[0, NBINS) where a count of `need` is reached scanning from the top:
// s_digit, with s_above the count above it and s_inbin its own. Groups of 32 bins are summed in parallel
// first, so one thread scans at most NBINS/32 + 32 entries. Ends with a barrier.
void pick_bin_top(uint need) {
    uint tid = gl_LocalInvocationID.x;
    const uint ng = NBINS / 32u;
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

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    uint tid = gl_LocalInvocationID.x;
    uint s, c, start, end;
    chunk_of(g, s, c, start, end);
    uint base = seq_base(s);
    bool first = pc.shift + 8u >= uint(ELEM_BITS);
    uint prefix = first ? 0u : work[2u * s];
    uint shift = pc.shift;
    uint hmask = bits_above(shift + 8u);
    for (uint i = tid; i < NBINS; i += WG) hist[i] = 0u;
    barrier();
    bool vec = pc.vec != 0u;
    uint step = vec ? WG * EV : WG;
    for (uint i0 = start + (vec ? tid * EV : tid); i0 < end; i0 += GRADIX_LOADS * step) {
        uvec4 q[GRADIX_LOADS];
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            uint i = i0 + u * step;
            if (vec) q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            else q[u].x = i < end ? load_raw(base, i) : 0u;
        }
        [[unroll]] for (uint u = 0u; u < GRADIX_LOADS; ++u) {
            [[unroll]] for (uint e = 0u; e < EV; ++e) {
                if (!vec && e > 0u) break;
                uint i = i0 + u * step + e;
                if (i >= end) continue;
                uint key = make_key(VEC_ELEM(q[u], e)) & KEY_BITS_MASK;
                if ((key & hmask) == prefix) atomicAdd(hist[(key >> shift) & 255u], 1u);
            }
        }
    }
    barrier();
    uint row = ctr_row(s);
    for (uint b = tid; b < NBINS; b += WG) {
        uint h = hist[b];
        if (pc.last != 0u) work[tie_at(s, c) + b] = h;
        if (h != 0u) atomicAdd(ctr[row + b], h);
    }
    // The last workgroup of the row to arrive (merge.glsl's last_to_arrive): every workgroup's histogram
    // (its atomics and, on the last pass, its stores) is visible to it.
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) {
        uint done = atomicAdd(ctr[row + NBINS], 1u);
        s_last = done == pc.chunks - 1u ? 1u : 0u;
        if (s_last != 0u) ctr[row + NBINS] = 0u;
    }
    barrier();
    if (s_last == 0u) return;
    memoryBarrierBuffer();
    for (uint b = tid; b < NBINS; b += WG) hist[b] = atomicExchange(ctr[row + b], 0u);  // read, leave zero
    uint need = first ? pc.K : work[2u * s + 1u];
    pick_bin_top(need);
    if (tid == 0u) {
        work[2u * s] = prefix | (s_digit << shift);
        work[2u * s + 1u] = need - s_above;
    }
}
