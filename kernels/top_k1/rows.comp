#version 450
// DML TOP_K1, path "rows" (ops/top_k1.py): one subgroup per sequence, for many short
// rows. The workgroup-wide modes spend most of their time in workgroup barriers when a row holds only a
// few thousand elements (32768 x 1024: ~55 barrier steps of a whole-row bitonic sort per row); a
// subgroup needs none. Per row: radix select of the K-th key, 8 bits a time, over a subgroup-private
// histogram (re-reading the row, which stays in L1), until the keys at or above the resolved prefix
// fit the candidate buffer; an ordered compaction (ballot / scan, so ties keep ascending indices)
// collects exactly those keys - or, once the K-th key is fully resolved, the keys above it and its
// first occurrences - and a bitonic sort of the few candidates ranks them.
//
// Shared memory: subgroup g owns entries [g*R, (g+1)*R) of skey/sidx, R = B / gl_NumSubgroups; the
// histogram lives in skey[g*R, g*R + NBINS) and candidates reuse the whole region once it is dead.
// The host (ops/top_k1.py) keeps R >= NBINS and R >= the candidate cap.
// Its own module: no workgroup-wide code at all; K = 1 stays a branch on the push word K, as before.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "head.glsl"

layout(constant_id = 1) const uint B = 2048;  // shared entries: B / (subgroups) a subgroup

// Mirrored by vkops.ops.top_k1.PUSH["rows"] (tests/test_manifest.py checks it).
layout(push_constant) uniform Push {
    uint n_groups;    // workgroups with work
    uint n_seq;       // sequences
    uint L;           // axis length
    uint K;
    uint flip;        // 0 (DECREASING) or ~0 (INCREASING)
    uint axis_stride; // input element stride along the axis
    uint inner;       // product of output sizes after the axis
    uint n_other;     // merged non-axis dims (o_sizes, o_strides)
    uint G;           // sequences a workgroup (one a subgroup at a time)
    uint vec;         // rows are contiguous and 16-byte aligned (uvec4 loads)
    uint cap;         // the candidate buffer (<= B / subgroups)
    uint o_sizes[6];  // merged non-axis sizes, outermost first (6: the push block stays <= 128 bytes)
    uint o_strides[6];// their input element strides
} pc;

#include "io.glsl"
#include "subgroup.glsl"

shared uint skey[B];
shared uint sidx[B];

// Candidates ranked by counting (cnt^2 compares) rather than sorted by a network.
const uint RANK_MAX = 128u;
// Elements one lane handles per step: a 16-byte vector when rows are contiguous and aligned.
const uint REV = EV;

// Lane rank among the active invocations (ascending with gl_SubgroupInvocationID, so scans and
// ballots, which order by invocation ID, order by rank too) and the number of them.
uint r_lane, r_n;

// The `n` (1 or REV) raw elements of step `v` of the row at `base`: element indices v*n + e.
void row_step(uint base, uint v, uint n, out uint raw[REV]) {
    if (n == 1u) {
        raw[0] = v < pc.L ? load_raw(base, v) : 0u;
        return;
    }
    uvec4 w = v * REV < pc.L ? src4[base / REV + v] : uvec4(0u);
    [[unroll]] for (uint e = 0u; e < REV; ++e) raw[e] = VEC_ELEM(w, e);
}

// The histogram bin (counting from the top) where a count of `need` is reached: (bin, count above it,
// its own count). Every lane sums a run of bins, one scan finds the lane holding it.
uvec3 rows_pick(uint h0, uint need) {
    uint per = (NBINS + r_n - 1u) / r_n;
    uint lo = r_lane * per;
    uint t = 0u;
    for (uint j = 0u; j < per; ++j)
        if (lo + j < NBINS) t += skey[h0 + NBINS - 1u - (lo + j)];
    uint incl = subgroupInclusiveAdd(t);
    uint win = subgroupBallotFindLSB(subgroupBallot(incl >= need));
    uint d = 0u, above = 0u, inb = 0u;
    if (gl_SubgroupInvocationID == win) {
        uint acc = incl - t;
        for (uint j = 0u; j < per; ++j) {
            uint b = NBINS - 1u - (lo + j);
            uint c = skey[h0 + b];
            if (acc + c >= need) { d = b; above = acc; inb = c; break; }
            acc += c;
        }
    }
    return uvec3(subgroupMax(d), subgroupMax(above), subgroupMax(inb));
}

// K = 1: the best (key, index) over the subgroup from each lane's best; one lane writes it.
void rows_write_best(uint s, uint base, uint bk, uint bi) {
    uint mk = subgroupMax(bk);
    uint mi = subgroupMin(bk == mk ? bi : SENT_IDX);
    if (subgroupElect()) write_out(s, 0u, mi, base);
}

// Radix select, start of the digit at bit `sh`: a cleared histogram; returns the mask of the bits above it.
uint rows_clear_hist(uint h0, int sh) {
    for (uint b = r_lane; b < NBINS; b += r_n) skey[h0 + b] = 0u;
    sg_sync();
    return sh + 8 >= 32 ? 0u : (KEY_BITS_MASK << uint(sh + 8)) & KEY_BITS_MASK;
}

// Radix select, end of a digit: its bin from the filled histogram, added to the prefix. True when done:
// every key >= prefix (lower bits 0) fits `cap` (collect them all), or the K-th key is resolved.
bool rows_digit(uint h0, int sh, uint cap, inout uint need, inout uint prefix, inout uint above,
                inout bool resolved) {
    sg_sync();
    uvec3 p = rows_pick(h0, need);
    sg_sync();                            // the histogram was read: it may be cleared or reused
    prefix |= p.x << uint(sh);
    above += p.y;
    need -= p.y;
    if (above + p.z <= cap) return true;
    resolved = sh == 0;
    return resolved;
}

// Ordered compaction of one step: this lane's tied entries (eqm) join its takes (gtm) in index order
// while fewer than `need` ties came before them; returns the takes, `pos` where the lane's first goes.
uint rows_takes(uint eqm, uint gtm, uint need, inout uint ties, inout uint cnt, out uint pos) {
    uint eq_before = ties + subgroupExclusiveAdd(bitCount(eqm));
    ties += subgroupAdd(bitCount(eqm));
    [[unroll]] for (uint e = 0u; e < REV; ++e) {
        if ((eqm & (1u << e)) != 0u) {
            if (eq_before < need) gtm |= 1u << e;
            ++eq_before;
        }
    }
    pos = cnt + subgroupExclusiveAdd(bitCount(gtm));
    cnt += subgroupAdd(bitCount(gtm));
    return gtm;
}

void rows_cas(uint h0, uint i, uint j, bool desc) {
    uint ki = skey[h0 + i], kj = skey[h0 + j], ii = sidx[h0 + i], ij = sidx[h0 + j];
    if (better(kj, ij, ki, ii) == desc) {
        skey[h0 + i] = kj; skey[h0 + j] = ki;
        sidx[h0 + i] = ij; sidx[h0 + j] = ii;
    }
}

// Rank the `cnt` collected candidates and write the best K of them.
void rows_finish(uint s, uint base, uint h0, uint cnt) {
    sg_sync();
    if (cnt <= RANK_MAX) {
        // Few candidates: each one's rank is the number that beat it; the top K go straight to their
        // output slots. cnt^2 / lanes broadcast reads, one synchronisation, instead of a sorting network.
        for (uint c = r_lane; c < cnt; c += r_n) {
            uint kc = skey[h0 + c], ic = sidx[h0 + c], rank = 0u;
            for (uint d = 0u; d < cnt; ++d) rank += better(skey[h0 + d], sidx[h0 + d], kc, ic) ? 1u : 0u;
            if (rank < pc.K) write_out(s, rank, ic, base);
        }
    } else {
        // Sort the candidates (padded with sentinels to a power of two), best first.
        uint N = pow2_at_least(cnt);
        for (uint e = cnt + r_lane; e < N; e += r_n) { skey[h0 + e] = 0u; sidx[h0 + e] = SENT_IDX; }
        sg_sync();
        for (uint size = 2u; size <= N; size <<= 1) {
            for (uint stride = size >> 1; stride > 0u; stride >>= 1) {
                for (uint p = r_lane; p < N / 2u; p += r_n) {
                    uint i = 2u * p - (p & (stride - 1u));
                    rows_cas(h0, i, i + stride, (i & size) == 0u);
                }
                sg_sync();
            }
        }
        for (uint j = r_lane; j < pc.K; j += r_n) write_out(s, j, sidx[h0 + j], base);
    }
}

void rows_one(uint s, uint h0, uint cap) {
    uint base = seq_base(s);
    uint L = pc.L;
    uint n = pc.vec != 0u ? REV : 1u;     // elements per lane per step
    uint steps = (L + n - 1u) / n;
    if (pc.K == 1u) {                     // one pass: the best (key, index) of each lane, then of all
        uint bk = 0u, bi = SENT_IDX;
        for (uint v = r_lane; v < steps; v += r_n) {
            uint raw[REV];
            row_step(base, v, n, raw);
            [[unroll]] for (uint e = 0u; e < REV; ++e) {
                if (e >= n) break;
                uint i = v * n + e;
                uint key = make_key(raw[e]) & KEY_BITS_MASK;
                if (i < L && better(key, i, bk, bi)) { bk = key; bi = i; }
            }
        }
        rows_write_best(s, base, bk, bi);
        return;
    }
    // Radix select: resolve the K-th key's digits until the keys at or above the prefix fit `cap`.
    uint need = pc.K, prefix = 0u, above = 0u;
    bool resolved = false;
    for (int sh = int(ELEM_BITS) - 8; ; sh -= 8) {
        uint hmask = rows_clear_hist(h0, sh);
        for (uint v = r_lane; v < steps; v += r_n) {
            uint raw[REV];
            row_step(base, v, n, raw);
            [[unroll]] for (uint e = 0u; e < REV; ++e) {
                if (e >= n) break;
                uint key = make_key(raw[e]) & KEY_BITS_MASK;
                if (v * n + e < L && (key & hmask) == prefix) atomicAdd(skey[h0 + ((key >> uint(sh)) & 255u)], 1u);
            }
        }
        if (rows_digit(h0, sh, cap, need, prefix, above, resolved)) break;
    }
    // Ordered compaction into the candidate region: a lane's takes go after those of lower lanes.
    // Resolved: keys above the K-th key, and its first `need` occurrences; else every key >= prefix.
    uint cnt = 0u, ties = 0u;
    for (uint v0 = 0u; v0 < steps; v0 += r_n) {
        uint v = v0 + r_lane;
        uint raw[REV];
        row_step(base, v, n, raw);
        uint eqm = 0u, gtm = 0u;
        [[unroll]] for (uint e = 0u; e < REV; ++e) {
            if (e >= n) break;
            uint key = make_key(raw[e]) & KEY_BITS_MASK;
            bool ok = v < steps && v * n + e < L;
            if (ok && (resolved ? key > prefix : key >= prefix)) gtm |= 1u << e;
            if (ok && resolved && key == prefix) eqm |= 1u << e;
        }
        uint pos;
        gtm = rows_takes(eqm, gtm, need, ties, cnt, pos);
        [[unroll]] for (uint e = 0u; e < REV; ++e) {
            if ((gtm & (1u << e)) != 0u) {
                skey[h0 + pos] = make_key(raw[e]) & KEY_BITS_MASK;
                sidx[h0 + pos] = v * n + e;
                ++pos;
            }
        }
    }
    rows_finish(s, base, h0, cnt);
    sg_sync();                            // the region is reused by the next row
}

// Rows of at most RK keys per lane (vector loads): the keys stay in registers, so the radix passes and
// the collection read no memory. Same steps as rows_one, every loop unrolled over the lane's keys.
const uint RK = 32u;
const uint RT = RK / REV;             // vector steps per lane

void rows_one_regs(uint s, uint h0, uint cap) {
    uint base = seq_base(s);
    uint steps = pc.L / REV;
    uint rk[RK];
    [[unroll]] for (uint t = 0u; t < RT; ++t) {
        uint raw[REV];
        row_step(base, r_lane + t * r_n, REV, raw);
        [[unroll]] for (uint e = 0u; e < REV; ++e) rk[t * REV + e] = make_key(raw[e]) & KEY_BITS_MASK;
    }
    // Key (t, e) is element (r_lane + t * r_n) * REV + e, present when r_lane + t * r_n < steps.
    if (pc.K == 1u) {
        uint bk = 0u, bi = SENT_IDX;
        [[unroll]] for (uint t = 0u; t < RT; ++t) {
            uint v = r_lane + t * r_n;
            [[unroll]] for (uint e = 0u; e < REV; ++e)
                if (v < steps && better(rk[t * REV + e], v * REV + e, bk, bi)) { bk = rk[t * REV + e]; bi = v * REV + e; }
        }
        rows_write_best(s, base, bk, bi);
        return;
    }
    uint need = pc.K, prefix = 0u, above = 0u;
    bool resolved = false;
    for (int sh = int(ELEM_BITS) - 8; ; sh -= 8) {
        uint hmask = rows_clear_hist(h0, sh);
        [[unroll]] for (uint t = 0u; t < RT; ++t) {
            if (r_lane + t * r_n < steps) {
                [[unroll]] for (uint e = 0u; e < REV; ++e) {
                    uint key = rk[t * REV + e];
                    if ((key & hmask) == prefix) atomicAdd(skey[h0 + ((key >> uint(sh)) & 255u)], 1u);
                }
            }
        }
        if (rows_digit(h0, sh, cap, need, prefix, above, resolved)) break;
    }
    uint cnt = 0u, ties = 0u;
    [[unroll]] for (uint t = 0u; t < RT; ++t) {
        uint v = r_lane + t * r_n;
        uint eqm = 0u, gtm = 0u;
        [[unroll]] for (uint e = 0u; e < REV; ++e) {
            uint key = rk[t * REV + e];
            if (v < steps && (resolved ? key > prefix : key >= prefix)) gtm |= 1u << e;
            if (v < steps && resolved && key == prefix) eqm |= 1u << e;
        }
        uint pos;
        gtm = rows_takes(eqm, gtm, need, ties, cnt, pos);
        [[unroll]] for (uint e = 0u; e < REV; ++e) {
            if ((gtm & (1u << e)) != 0u) {
                skey[h0 + pos] = rk[t * REV + e];
                sidx[h0 + pos] = v * REV + e;
                ++pos;
            }
        }
    }
    rows_finish(s, base, h0, cnt);
    sg_sync();
}

// Workgroup g holds sequences [g*G, (g+1)*G); its subgroups take them in turn. `cap` (pc.cap) is the
// candidate buffer, <= R.
void run_rows(uint g) {
    uvec4 act = subgroupBallot(true);
    r_lane = subgroupBallotExclusiveBitCount(act);
    r_n = subgroupBallotBitCount(act);
    uint R = B / gl_NumSubgroups;
    uint h0 = gl_SubgroupID * R;
    for (uint r = gl_SubgroupID; r < pc.G; r += gl_NumSubgroups) {
        uint s = g * pc.G + r;
        if (s >= pc.n_seq) break;
        if (pc.vec != 0u && pc.L <= RK * r_n) rows_one_regs(s, h0, min(pc.cap, R));
        else rows_one(s, h0, min(pc.cap, R));
    }
}

void main() {
    uint g = linear_group();
    if (g >= pc.n_groups) return;
    run_rows(g);
}
