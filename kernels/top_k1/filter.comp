#version 450
// DML TOP_K1, path "filter" without radix select (ops/top_k1.py): long rows, Kp <= B/2. A workgroup
// streams a chunk of a sequence once; an element enters the shared buffer only if it beats the K-th best
// seen so far (the threshold); a full buffer is reduced to its top Kp (compact.glsl). The threshold starts
// from the first step: for K <= WG/32 the worst of K thread groups' best keys, else the K-th of the
// threads' bests (a sort of WG entries). K = 1 (argmax_chunk) shares no threshold: each thread keeps its
// own best, no barrier; it stays in this module (a branch on the push word Kp, as before) so that K = 1
// pipelines are the same as before. Several chunks a row: merge.glsl (last to finish merges).
// Its own module, apart from radix.comp: the chunk's reduction is another loop (a running threshold, not
// histograms of key digits), and its pipelines hold none of radix select's code or shared memory.
// SHUF=1 (top_k1_filter_sg_*): the networks' short strides in registers and subgroup shuffles.
// Shared memory: skey/sidx[B], s_base[WG], 5 words (vkops.ops.top_k1_paths.module_shared_bytes).
#extension GL_GOOGLE_include_directive : require
#include "head.glsl"

layout(constant_id = 1) const uint B = 2048;  // shared buffer entries (power of two)

// Mirrored by vkops.ops.top_k1.PUSH["filter"] (tests/test_manifest.py checks it).
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
    uint cap;         // entries buffered before a compaction (<= B; small K compacts early)
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"
// Elements per thread per FILTER iteration, in 16-byte vector loads (mirrored by top_k1_paths.EPI). A
// plain constant, not a specialization constant: spirv-opt then unrolls the loops over registers.
const uint EPI = 16u;
const uint NV = EPI / EV;           // uvec4 loads per thread per iteration

shared uint skey[B];
shared uint sidx[B];
shared uint s_base[gl_WorkGroupSize.x];  // the seed's group maxima
shared uint s_count, s_thr_k, s_thr_i, s_last, s_flag;
const bool SWIZZLE = false;
#include "networks.glsl"
#define RADIX 0
#include "compact.glsl"

// FILTER with K = 1 (argmax, greedy decoding): no threshold to share, so each thread keeps its own
// best (key, index) over a strided walk of entries [start, end), AM_LOADS 16-byte loads in flight and
// no barrier in the loop; then the workgroup's bests are reduced in shared memory into skey/sidx[0].
// The threshold filter stopped at two barriers per WG * EPI entries (4096 x 32768 fp32: 2.1 TB/s).
const uint AM_LOADS = 8u;
void argmax_chunk(uint base, uint start, uint end) {
    uint tid = gl_LocalInvocationID.x;
    uint bk = 0u, bi = SENT_IDX;
    if (pc.vec != 0u) {  // start is a whole number of steps: 16-byte aligned
        const uint STRIDE = WG * EV;
        for (uint i0 = start + tid * EV; i0 < end; i0 += AM_LOADS * STRIDE) {
            uvec4 q[AM_LOADS];
            [[unroll]] for (uint u = 0u; u < AM_LOADS; ++u) {
                uint i = i0 + u * STRIDE;
                q[u] = i < end ? src4[(base + i) / EV] : uvec4(0u);
            }
            [[unroll]] for (uint u = 0u; u < AM_LOADS; ++u) {
                [[unroll]] for (uint e = 0u; e < EV; ++e) {
                    uint i = i0 + u * STRIDE + e, k = make_key(VEC_ELEM(q[u], e));
                    if (i < end && better(k, i, bk, bi)) { bk = k; bi = i; }
                }
            }
        }
    } else {
        for (uint i = start + tid; i < end; i += WG) {
            uint k = make_key(load_raw(base, i));
            if (better(k, i, bk, bi)) { bk = k; bi = i; }
        }
    }
    skey[SW(tid)] = bk;  // B >= WG
    sidx[SW(tid)] = bi;
    barrier();
    for (uint h = pow2_at_least(WG) / 2u; h > 0u; h >>= 1) {
        if (tid < h && tid + h < WG) {
            uint kb = skey[SW(tid + h)], ib = sidx[SW(tid + h)];
            if (better(kb, ib, skey[SW(tid)], sidx[SW(tid)])) { skey[SW(tid)] = kb; sidx[SW(tid)] = ib; }
        }
        barrier();
    }
}

// FILTER: stream entries [start, end) of the input sequence at `base`, keeping the top Kp sorted in
// skey/sidx[0, Kp). An entry is buffered only if it beats the current threshold; a buffer that
// overflows is compacted and the entries that did not fit are tried again (against the new threshold).
void stream_topk(uint base, uint start, uint end) {
    uint tid = gl_LocalInvocationID.x;
    if (pc.Kp == 1u) { argmax_chunk(base, start, end); return; }
    if (tid == 0u) { s_count = 0u; s_thr_k = 0u; s_thr_i = SENT_IDX; s_flag = 0u; }
    barrier();
    const uint STEP = WG * EPI;
    bool vec = pc.vec != 0u;
    // 16-byte rows: the next step's loads are in flight while this step is filtered.
    uvec4 nxt[NV];
    [[unroll]] for (uint v = 0u; v < NV; ++v) {
        uint i0 = start + tid * EV + v * WG * EV;
        nxt[v] = vec && i0 < end ? src4[(base + i0) / EV] : uvec4(0u);
    }
    for (uint b0 = start; b0 < end; b0 += STEP) {
        uint keys[EPI];
        uint first;  // keys[u] is entry slot(vec, first, u)
        if (vec) {
            first = b0 + tid * EV;
            [[unroll]] for (uint v = 0u; v < NV; ++v) {
                uvec4 w = nxt[v];
                uint i1 = first + STEP + v * WG * EV;
                nxt[v] = i1 < end ? src4[(base + i1) / EV] : uvec4(0u);
                [[unroll]] for (uint e = 0u; e < EV; ++e) keys[v * EV + e] = make_key(VEC_ELEM(w, e));
            }
        } else {
            first = b0 + tid;
            [[unroll]] for (uint u = 0u; u < EPI; ++u) {
                uint i = first + u * WG;
                keys[u] = 0u;
                if (i < end) keys[u] = make_key(load_raw(base, i));
            }
        }
        uint pending = 0u;
        [[unroll]] for (uint u = 0u; u < EPI; ++u) {
            if (slot(vec, first, u) < end) pending |= 1u << u;
        }
        uint tk = s_thr_k, ti = s_thr_i;
        if (b0 == start && pc.K * 32u <= WG) {
            // Small K: split the threads into K groups (tid % K); the worst of the groups' best keys
            // bounds the K-th best of the chunk from below (K distinct entries reach it). Three
            // barriers, where the per-thread seed below sorts WG entries.
            uint bk = 0u;
            [[unroll]] for (uint u = 0u; u < EPI; ++u)
                if ((pending & (1u << u)) != 0u) bk = max(bk, keys[u]);
            if (tid < pc.K) s_base[tid] = 0u;
            barrier();
            atomicMax(s_base[tid % pc.K], bk);
            barrier();
            if (tid == 0u) {
                uint m = 0xFFFFFFFFu;
                for (uint g = 0u; g < pc.K; ++g) m = min(m, s_base[g]);
                s_thr_k = m;  // with index SENT_IDX: every entry of key m passes too
            }
            barrier();
            tk = s_thr_k; ti = s_thr_i;
        } else if (b0 == start) {
            // Seed the threshold: each thread buffers only its own best entry, and the K-th best of
            // those bounds the K-th best of the chunk from below. Without it every entry of the first
            // step beats the empty buffer's threshold and the buffer is compacted several times.
            uint bk = 0u, bi = SENT_IDX, bu = EPI;
            [[unroll]] for (uint u = 0u; u < EPI; ++u) {
                if ((pending & (1u << u)) != 0u) {
                    uint ix = slot(vec, first, u);
                    if (bu == EPI || better(keys[u], ix, bk, bi)) { bk = keys[u]; bi = ix; bu = u; }
                }
            }
            if (bu != EPI) {
                uint pos = atomicAdd(s_count, 1u);  // the buffer is empty and cap >= WG: it fits
                skey[SW(pos)] = bk;
                sidx[SW(pos)] = bi;
                pending &= ~(1u << bu);
            }
            barrier();
            uint c = s_count;
            barrier();
            compact(c);
            tk = s_thr_k; ti = s_thr_i;
        }
        for (;;) {
            [[unroll]] for (uint u = 0u; u < EPI; ++u) {
                if ((pending & (1u << u)) != 0u) {
                    uint ix = slot(vec, first, u);
                    if (!better(keys[u], ix, tk, ti)) { pending &= ~(1u << u); continue; }
                    uint pos = atomicAdd(s_count, 1u);
                    if (pos < pc.cap) {
                        skey[SW(pos)] = keys[u];
                        sidx[SW(pos)] = ix;
                        pending &= ~(1u << u);
                    }
                }
            }
            if (pending != 0u) s_flag = 1u;
            barrier();
            uint c = s_count, f = s_flag;
            barrier();
            if (f == 0u) break;                 // uniform: everyone read the same flag
            compact(min(c, pc.cap));
            tk = s_thr_k; ti = s_thr_i;
        }
    }
    barrier();
    uint c = s_count;
    barrier();
    compact(min(c, pc.cap));
}

#define CHUNK_TOPK stream_topk
#include "merge.glsl"

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    run_chunk(g);
}
