// TOP_K1's path rule (vkops/ops/top_k1/paths.py, facts.py), the default choice: AUTO_RULE's rows in order, Facts'
// seg / filter / one-chunk / sort paths, radix select's final sort, and the choice returned. The paths sized by name
// (gradix, rows, the bracket's cap, merge groups, tune bits) are top_k1_sizing.cpp's. The tuning comes from the
// generated TopK1Tuning, the kernels' fixed facts and the rule's own constants (MAX_B, ROWS_*, RSORT_*, GRADIX_*, the
// chunking's, COMPACT_CAP) from ops_top_k1_paths.
#include "top_k1_paths.hpp"

#include <algorithm>

namespace vkops {

using namespace ops_top_k1_paths;

namespace {

// Python's Facts with chunks=None and limits given: B (and so its DeviceLimitError) only where a row needs it.
struct Facts {
    u64 n_seq, length, k, shared, target_groups;
    bool short_chunks;
    u64 WG;
    int key_bits;
    const TopK1Tuning &t;
    u64 Kp, P;
    u64 bracket_cap;  // Facts.bracket_cap (top_k1_gradix_bracket_cap)
    u64 B_ = 0;

    // facts.py Facts.B: where pow2(K) > B/2 on rows longer than B, B doubled up to LARGE_K_MAX_B while shared
    // memory allows, if that makes pow2(K) <= B/2 (radix select instead of the global sort); else the largest
    // such B where it holds pow2(K) and the row (of at most LARGE_K_ONE_CHUNK_MAX_L) is longer (one radix chunk
    // a row).
    u64 B() {
        if (B_) return B_;
        u64 b = top_k1_buffer_entries(shared, WG, t);
        if (Kp > b / 2 && P > b) {
            u64 g = b;
            while (Kp > g / 2 && 2 * g <= t.LARGE_K_MAX_B && top_k1_shared_bytes(2 * g, WG) <= shared) g *= 2;
            if (Kp <= g / 2 || (Kp <= g && g < P && length <= t.LARGE_K_ONE_CHUNK_MAX_L)) b = g;
        }
        return B_ = b;
    }
    bool short_radix() {
        u64 b = B();
        return b / 2 < P && length <= 4 * b && t.SHORT_ROW_RADIX_MIN_K <= k && Kp <= b / 2;
    }
    // Facts.short_fit / short_fit_first: many rows of RADIX_SHORT_ROWS_MIN_L..4 max(Kp, 512) above pow2(K) =
    // RADIX_ONE_CHUNK_WG_MAX_KP, one radix chunk each, in a buffer of max(Kp, 512) and Kp / 4 threads; before RSORT up
    // to pow2(K) = RADIX_SHORT_FIT_RSORT_KP (32-bit keys) / _KP16 (16-bit; 8-bit keys never)
    bool short_fit() {
        return t.RADIX_SHORT_FIT && n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ && Kp > t.RADIX_ONE_CHUNK_WG_MAX_KP &&
               t.RADIX_SHORT_ROWS_MIN_L <= length && length <= 4 * std::max<u64>(Kp, 512);
    }
    bool short_fit_first() {
        u64 kp = key_bits == 32 ? t.RADIX_SHORT_FIT_RSORT_KP : key_bits == 16 ? t.RADIX_SHORT_FIT_RSORT_KP16 : 0;
        return short_fit() && Kp <= kp;
    }
    bool fits_filter() { return Kp <= B() / 2; }
    // Facts.global_sort: no later row of the rule takes the call (SEG, radix select, the filter)
    bool global_sort() { return !(P <= B() && !short_radix()) && !fits_filter() && !fits_one_chunk(); }
    // facts.py Facts.fits_one_chunk / one_chunk: B/2 < pow2(K) <= B on rows longer than B, one radix chunk a row
    bool fits_one_chunk() { return B() / 2 < Kp && Kp <= B() && B() < P && length <= t.LARGE_K_ONE_CHUNK_MAX_L; }
    TopK1Path one_chunk() {
        TopK1Path p;
        p.path = "filter";
        p.B = B();
        p.Kp = Kp;
        p.chunks = 1;
        p.chunk_len = cdiv(length, WG * EPI) * (WG * EPI);
        p.cap = p.B;
        p.radix = true;
        p.workgroup = WG;
        return p;
    }

    TopK1Path seg() {
        TopK1Path p;
        p.path = "seg";
        p.B = B();
        p.Kp = Kp;
        p.G = std::max<u64>(1, std::min(std::min(p.B / P, WG), n_seq));
        p.P = P;
        p.workgroup = WG;
        return p;
    }
    TopK1Path sort() {
        TopK1Path p;
        p.path = "sort";
        p.B = B();
        p.Kp = Kp;
        p.P = std::max(P, 2 * p.B);
        p.workgroup = WG;
        return p;
    }
    TopK1Path filter(bool radix);  // Facts.filter(radix, auto=True), chunks None

    // Facts.gradix (a CPU: its own target groups) and Facts.gradix_auto: GRADIX_MIN_KP set (0: never) and reached
    // (GRADIX_MIN_KP16 for 16-bit keys on few rows),
    // rows of >= GRADIX_MIN_L, either few (<= GRADIX_FEW_SEQ) rows of >= GRADIX_FEW_MIN_L or 16/32-bit keys in <=
    // GRADIX_RANK_MAX_SEQ rows from pow2(K) = GRADIX_RANK_MIN_KP, or rows radix select cannot take (pow2(K) > B/2 past
    // LARGE_K_ONE_CHUNK_MAX_L: else the global sort), or 8/16-bit keys from K = GRADIX_MIN_K (16-bit ones not on
    // GRADIX_MIN_K16_RADIX_MIN_SEQ.._MAX_SEQ rows of <= GRADIX_MIN_K16_RADIX_MAX_L to pow2(K) = _MAX_KP) or
    // 16/32-bit keys in rows of >= GRADIX_LONG_MIN_L from K >= GRADIX_LONG_MIN_K16 / _K (GRADIX_BRACKET_LONG_MIN_K where
    // it brackets on up to GRADIX_BRACKET_LONG_MAX_SEQ rows, GRADIX_BRACKET_MANY_MIN_K on at least
    // GRADIX_BRACKET_MANY_MIN_SEQ), and it fits.
    bool gradix(TopK1Path &out) {
        // more than GRADIX_FEW_SEQ rows: GRADIX_MANY_TARGET_GROUPS (bracketed 32-bit keys:
        // GRADIX_BRACKET_MANY_TARGET_GROUPS); a CPU: its own target
        u64 many = key_bits == 32 && bracket_cap > 0 ? t.GRADIX_BRACKET_MANY_TARGET_GROUPS : t.GRADIX_MANY_TARGET_GROUPS;
        u64 groups = short_chunks ? (n_seq > t.GRADIX_FEW_SEQ ? many : t.GRADIX_TARGET_GROUPS) : target_groups;
        return top_k1_gradix_path(n_seq, length, k, shared, WG, groups, t, out);
    }
    bool gradix_auto(TopK1Path &out) {
        u64 long_k = key_bits == 16                                                  ? t.GRADIX_LONG_MIN_K16
                     : bracket_cap > 0 && n_seq <= t.GRADIX_BRACKET_LONG_MAX_SEQ ? t.GRADIX_BRACKET_LONG_MIN_K
                     : bracket_cap > 0 && n_seq >= t.GRADIX_BRACKET_MANY_MIN_SEQ ? t.GRADIX_BRACKET_MANY_MIN_K
                                                                                 : t.GRADIX_LONG_MIN_K;
        bool few = (n_seq <= t.GRADIX_FEW_SEQ && length >= t.GRADIX_FEW_MIN_L) ||
                   (key_bits > 8 && n_seq <= t.GRADIX_RANK_MAX_SEQ && Kp >= t.GRADIX_RANK_MIN_KP) ||
                   global_sort();
        u64 min_kp = few && key_bits == 16 ? std::min<u64>(t.GRADIX_MIN_KP, t.GRADIX_MIN_KP16) : t.GRADIX_MIN_KP;
        bool packed = key_bits == 16 && length <= t.GRADIX_MIN_K16_RADIX_MAX_L && Kp <= t.GRADIX_MIN_K16_RADIX_MAX_KP &&
                      n_seq >= t.GRADIX_MIN_K16_RADIX_MIN_SEQ && n_seq <= t.GRADIX_MIN_K16_RADIX_MAX_SEQ;
        return t.GRADIX_MIN_KP > 0 && Kp >= min_kp && length >= t.GRADIX_MIN_L &&
               (few || (key_bits <= 16 && k >= t.GRADIX_MIN_K && !packed) ||
                (key_bits > 8 && length >= t.GRADIX_LONG_MIN_L && k >= long_k)) &&
               gradix(out);
    }
};

// paths.radix_sort_entries: entries a radix chunk's final sort takes (compact.glsl's max(Kp, pow2(c))): about pow2(K)
// on chunks of <= 4 B or under TUNE_FIT; on chunks of >= SAMPLE_MIN_LEN pow2 of the sampled guess's K + K/2 + 64 keys
// and a quarter more; else up to B
static u64 radix_sort_entries(const TopK1Path &p, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t) {
    if (p.chunk_len <= 4 * p.B || (top_k1_tune_bits(p, n_seq, length, k, key_bits, t) & TUNE_FIT)) return p.Kp;
    if (p.chunk_len >= SAMPLE_MIN_LEN) {
        u64 guess = k + k / 2 + 64;
        return std::min<u64>(p.B, std::max<u64>(p.Kp, top_k1_pow2(guess + guess / 4)));
    }
    return p.B;
}

// paths.radix_sort_wg: more than GRADIX_SORT_RE sort entries a thread grow the workgroup to entries / RE, up to
// RADIX_SORT_WG and the device's; the chunks stay, in whole steps of the new workgroup
static void radix_sort_wg(const Limits &lim, TopK1Path &p, u64 n_seq, u64 length, u64 k, int key_bits,
                          const TopK1Tuning &t) {
    u64 want = std::min<u64>(t.RADIX_SORT_WG, radix_sort_entries(p, n_seq, length, k, key_bits, t) / GRADIX_SORT_RE);
    if (want <= p.workgroup) return;
    u64 wg = lim.workgroup(want);
    if (wg <= p.workgroup) return;
    u64 step = wg * EPI, chunk_len = cdiv(p.chunk_len, step) * step;
    if (cdiv(length, chunk_len) != p.chunks) return;
    p.workgroup = wg;
    p.chunk_len = chunk_len;
    p.cap = std::min<u64>(p.B, std::max<u64>(p.cap, wg));
}

TopK1Path Facts::filter(bool radix) {
    u64 wg = WG, b = B();
    u64 step = wg * EPI;
    bool few_short = n_seq <= FEW_SHORT_MAX_SEQ && key_bits > 8 && k > 1;
    bool short_ = short_chunks && length >= (few_short ? FEW_SHORT_CHUNK_STEPS : SHORT_CHUNK_STEPS) * step;
    bool few = n_seq * cdiv(length, FEW_ROWS_CHUNK_KP * Kp) <= target_groups / 2;
    u64 per = few ? FEW_ROWS_CHUNK_KP : CHUNK_KP;
    u64 min_chunk = short_ ? std::max(step, per * Kp) : std::max(CPU_CHUNK_B * b, CPU_CHUNK_STEPS * step);
    u64 want = cdiv(target_groups, n_seq);
    bool vocab = short_chunks && t.WAVE_MIN_SEQ <= n_seq && n_seq <= t.WAVE_MAX_SEQ && length <= t.WAVE_MAX_L;
    bool wave = vocab && t.RADIX_SHORT_MIN_KP <= Kp && Kp <= t.WAVE_MAX_KP;
    if (wave) {
        want = cdiv(target_groups / 2, n_seq);
        min_chunk = step;
    }
    u64 chunks = std::max<u64>(1, std::min(std::min(want, cdiv(length, min_chunk)),
                                           std::max<u64>(MAX_CHUNK_KEYS / k, target_groups / 2 / n_seq)));
    // tens of vocabulary-sized rows above the wave's K: about a wave of workgroups too, or 2 chunks a row
    if (vocab && short_ && !few && Kp > t.WAVE_MAX_KP)
        chunks = std::min<u64>(chunks, std::max<u64>(2, target_groups / 2 / n_seq));
    u64 chunk_len = cdiv(length, chunks);
    chunk_len = cdiv(chunk_len, step) * step;
    chunks = cdiv(length, chunk_len);
    if (Kp >= t.RADIX_SHORT_MIN_KP && (chunk_len <= t.RADIX_SHORT_CHUNK_B * b || wave)) radix = true;
    bool one_chunk = radix && chunks == 1;
    bool many = Kp <= t.RADIX_ONE_CHUNK_WG_MAX_KP && n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ;
    if (one_chunk && chunk_len <= 4 * b && length >= t.RADIX_SHORT_ROWS_MIN_L && many) {
        wg = std::min<u64>(wg, t.RADIX_SHORT_ROWS_WG);
        b = std::max(std::max(std::min<u64>(b, t.RADIX_SHORT_ROWS_B), 2 * Kp), wg);
    } else if (one_chunk && short_fit()) {
        wg = std::min<u64>(wg, std::max<u64>(Kp / 4, 32));
        b = std::max<u64>(std::max<u64>(Kp, 512), wg);
        step = wg * EPI;
        chunk_len = cdiv(length, step) * step;
    } else if (one_chunk && chunk_len > 4 * b) {
        b = std::max<u64>(std::min(b, 4 * Kp), t.RADIX_ONE_CHUNK_MIN_B);
        if (many) {
            wg = std::min<u64>(wg, t.RADIX_ONE_CHUNK_WG);
            if (key_bits == 32) {
                if (Kp <= t.RADIX_ONE_CHUNK_WIDE_SMALL_WG_MAX_KP) wg = std::min<u64>(wg, t.RADIX_ONE_CHUNK_WIDE_SMALL_WG);
                b = std::max(std::min<u64>(b, std::max<u64>(2 * Kp, t.RADIX_ONE_CHUNK_WIDE_B)), wg);
            }
        }
    }
    TopK1Path p;
    p.path = "filter";
    p.B = b;
    p.Kp = Kp;
    p.chunks = chunks;
    p.chunk_len = chunk_len;
    p.cap = std::min(b, std::max(std::max<u64>(COMPACT_CAP, wg), 4 * Kp));
    p.radix = radix;
    p.workgroup = wg;
    p.merge_group = top_k1_merge_group(chunks, b, Kp, t);
    return p;
}

}  // namespace

TopK1Choice top_k1_choose(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t) {
    bool cpu = lim.device_type == "cpu";
    Facts f{n_seq, length, k, lim.shared_memory_bytes, cpu ? t.CPU_TARGET_GROUPS : t.TARGET_GROUPS, !cpu,
            lim.workgroup(t.WORKGROUP), key_bits, t, top_k1_pow2(k), top_k1_pow2(length),
            top_k1_gradix_bracket_cap(lim, n_seq, length, k, key_bits, t)};
    TopK1Choice c;
    // AUTO_RULE's rows in order (paths.py states each row's reason)
    if (f.gradix_auto(c.plan)) {
        // choose(): the survivors' sort by the register networks (SHUF) where the device has subgroup shuffles, in a
        // workgroup that holds pow2(K) entries at GRADIX_SORT_RE a thread where the device allows; in parts, a
        // workgroup of a part's B entries at GRADIX_SORT_RE a thread (shared or register networks alike)
        c.path = "gradix";
        c.plan.shuf = top_k1_has_ops(lim, SHUF_SUBGROUP_OPS);
        if (c.plan.sort_parts > 1)
            c.plan.sort_wg = lim.workgroup(c.plan.B / GRADIX_SORT_RE);
        else if (c.plan.shuf)
            c.plan.sort_wg = lim.workgroup(std::max<u64>(c.plan.sort_wg, c.plan.Kp / GRADIX_SORT_RE));
        return c;
    }
    // Facts.rsort: with RSORT_FOR_SORT also, on any rows it fits, what the global sort would take
    if (!f.short_fit_first() && (top_k1_rsort_path(lim, n_seq, length, k, key_bits, t, c.plan) ||
                                 (t.RSORT_FOR_SORT && length <= RSORT_MAX_E * RSORT_MAX_WG && f.global_sort() &&
                                  top_k1_rsort_path(lim, n_seq, length, k, key_bits, t, c.plan, true)))) {
        c.path = "rsort";
        return c;
    }
    if (top_k1_rows_path(lim, n_seq, length, k, key_bits, t, c.plan)) { c.path = "rows"; return c; }
    if (f.P <= f.B() && !f.short_radix()) {
        c = {"seg", f.seg()};
    } else if (f.fits_filter()) {
        // Facts.chunked, which both the radix and the filter rows read
        TopK1Path ch = f.filter(f.Kp >= t.RADIX_MIN_KP || f.short_radix());
        c = {ch.radix ? "radix" : "filter", ch};
    } else if (f.fits_one_chunk()) {
        c = {"radix", f.one_chunk()};
    } else {
        c = {"sort", f.sort()};
    }
    if (c.plan.radix) radix_sort_wg(lim, c.plan, n_seq, length, k, key_bits, t);
    // choose(): the _sg modules from pow2(K) = SHUF_MIN_KP (SHUF_SHORT_FIT_MIN_KP on short_fit's rows) where the
    // device has subgroup shuffles
    u64 shuf_kp = f.short_fit() ? std::min(t.SHUF_SHORT_FIT_MIN_KP, t.SHUF_MIN_KP) : t.SHUF_MIN_KP;
    bool shuf = top_k1_has_ops(lim, SHUF_SUBGROUP_OPS) && c.plan.Kp >= shuf_kp;
    c.plan.shuf = shuf && (c.plan.path == "seg" || c.plan.path == "filter");
    return c;
}

}  // namespace vkops
