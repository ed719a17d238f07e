// TOP_K1's path rule (vkops/ops/top_k1/paths.py), the default choice: AUTO_RULE's rows in order, each path's
// sizing (sizing.py's gradix_path, rsort_path, rows_path; Facts.seg/filter/sort), the shared-memory budgets, merge
// groups and tune bits. The tuning comes from the generated TopK1Tuning, the kernels' fixed facts and the rule's own constants
// (MAX_B, ROWS_*, RSORT_*, GRADIX_*, the chunking's, COMPACT_CAP) from ops_top_k1_paths.
#include "top_k1_paths.hpp"

#include <algorithm>

namespace vkops {

using namespace ops_top_k1_paths;

static u64 ceil_div(u64 a, u64 b) { return (a + b - 1) / b; }  // Python's -(-a // b), a >= 0
// a // b of the device's subgroup sizes: Python raises ZeroDivisionError on limits that give 0 (no crash here)
static u64 div_by(u64 a, u64 b) {
    if (!b) fail("integer division or modulo by zero");
    return a / b;
}

// limits.SUBGROUP_OPS by name, for the modules' declared operations (ROWS_SUBGROUP_OPS, SHUF_SUBGROUP_OPS, ...).
bool top_k1_has_ops(const Limits &lim, const std::vector<std::string> &ops) {
    static const std::pair<const char *, u32> OPS[] = {
        {"basic", SG_BASIC}, {"vote", SG_VOTE}, {"arithmetic", SG_ARITHMETIC}, {"ballot", SG_BALLOT},
        {"shuffle", SG_SHUFFLE}, {"shuffle_relative", SG_SHUFFLE_RELATIVE}, {"clustered", SG_CLUSTERED}, {"quad", SG_QUAD}};
    for (auto &o : ops)
        for (auto &m : OPS)
            if (o == m.first && !(lim.subgroup_operations & m.second)) return false;
    return true;
}

u64 top_k1_pow2(u64 x) { return x <= 1 ? 1 : 1ull << bit_length(x - 1); }

u64 top_k1_shared_bytes(u64 B, u64 workgroup) { return 4 * (2 * B + workgroup + NBINS + NBINS / 32 + 8); }

u64 top_k1_buffer_entries(u64 shared, u64 workgroup, const TopK1Tuning &t) {
    u64 b = MAX_B;
    while (b > std::max<u64>(t.MIN_B, workgroup) && top_k1_shared_bytes(b, workgroup) > shared) b /= 2;
    if (top_k1_shared_bytes(b, workgroup) > shared)
        fail_limit("TOP_K1 needs " + std::to_string(top_k1_shared_bytes(b, workgroup)) + " bytes of shared memory (B=" +
                   std::to_string(b) + " entries, workgroup " + std::to_string(workgroup) +
                   "); maxComputeSharedMemorySize is " + std::to_string(shared));
    return b;
}

static u64 merge_loads(u64 runs, u64 per_load) { return runs <= 1 ? 0 : ceil_div(runs - 1, per_load - 1); }

u64 top_k1_merge_group(u64 chunks, u64 B, u64 Kp, const TopK1Tuning &t) {
    u64 per = B / Kp;
    u64 one = merge_loads(chunks, per);
    u64 best = one, best_g = 0;
    for (u64 g = 2; g < chunks; g++) {
        u64 two = merge_loads(g, per) + merge_loads(ceil_div(chunks, g), per) + 1;
        if (two < best) { best = two; best_g = g; }
    }
    return one - best >= t.MERGE_GROUP_MIN_SAVED ? best_g : 0;
}

u32 top_k1_tune_bits(const TopK1Path &p, u64 n_seq, u64 length, int key_bits, const TopK1Tuning &t) {
    if (!(p.path == "filter" && p.radix && p.chunks == 1 && p.chunk_len > 4 * p.B)) return 0;
    u32 fit = t.RADIX_FIT_MIN_KP <= p.Kp && p.Kp < p.B && 4 * p.B < length && length < SAMPLE_MIN_LEN ? TUNE_FIT : 0;
    if (n_seq < t.RADIX_ONE_CHUNK_WG_MIN_SEQ) return fit;
    if (key_bits == 32) return fit | (p.Kp >= t.TUNE_SELECT_MIN_KP ? (TUNE_GUESS | TUNE_SELECT) : 0);
    return fit | TUNE_GUESS | (p.Kp >= t.TUNE_SELECT_MIN_KP_NARROW ? TUNE_SELECT : 0);
}

u64 top_k1_gradix_bracket_cap(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t) {
    u64 min_l = key_bits == 32 ? t.GRADIX_BRACKET_MIN_L : key_bits == 16 ? t.GRADIX_BRACKET_MIN_L16 : 0;
    if (!t.GRADIX_BRACKET || min_l == 0 || length < std::max<u64>(256, min_l) || n_seq <= t.GRADIX_RANK_MAX_SEQ ||
        n_seq > t.GRADIX_BRACKET_MAX_SEQ || (key_bits == 16 && n_seq < t.GRADIX_BRACKET_MIN_SEQ16) ||
        (key_bits == 16 && length < t.GRADIX_BRACKET_SHORT_L16 && n_seq > t.GRADIX_BRACKET_SHORT_MAX_SEQ16) ||
        lim.workgroup(GRADIX_BRACKET_WG) != GRADIX_BRACKET_WG || !top_k1_has_ops(lim, GRADIX_BRACKET_OPS))
        return 0;
    i64 free = (i64)lim.shared_memory_bytes - (i64)GRADIX_RESOLVE_SHARED;
    u64 cap = free <= 0 ? 0 : std::min<u64>(t.GRADIX_BRACKET_CAP, u64(free) / 8 / 64 * 64);
    u64 sample = 16 * std::min<u64>(GRADIX_BRACKET_SAMPLE_BLOCKS, length / 16);
    return cap >= 64 && 144 * k * (length - k) <= cap * cap * sample ? cap : 0;  // (1.5 * 8)^2 = 144
}

bool top_k1_rows_path(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t, TopK1Path &out) {
    u64 Kp = top_k1_pow2(k);
    if (!top_k1_has_ops(lim, ROWS_SUBGROUP_OPS) || Kp > t.ROWS_MAX_KP) return false;
    if (length > t.ROWS_MAX_L || n_seq < t.ROWS_MIN_SEQ) return false;
    if (length > t.ROWS_RADIX_MIN_L && key_bits > 8 && k >= t.SHORT_ROW_RADIX_MIN_K && n_seq >= t.RADIX_ONE_CHUNK_WG_MIN_SEQ)
        return false;  // radix select with the short rows' buffer and workgroup (ROWS_RADIX_MIN_L)
    u64 smin = lim.min_subgroup_size, smax = lim.max_subgroup_size;
    u64 wg = lim.workgroup(std::min<u64>(ROWS_MAX_WG, ROWS_SUBGROUPS * smin));
    if (wg < smax) return false;
    u64 cap = std::max<u64>(Kp, std::min<u64>(ROWS_MAX_CAP, std::max<u64>(ROWS_MIN_CAP, 2 * Kp)));
    u64 nsub = div_by(wg, smin);
    u64 B = std::max<u64>(t.MIN_B, top_k1_pow2(nsub * std::max<u64>(NBINS, cap)));
    if (top_k1_shared_bytes(B, wg) > lim.shared_memory_bytes) return false;
    cap = std::min(cap, B / nsub);
    out = TopK1Path();
    out.path = "rows";
    out.B = B;
    out.Kp = Kp;
    out.G = std::max<u64>(1, div_by(wg, lim.subgroup_size));
    out.cap = cap;
    out.workgroup = wg;
    return true;
}

bool top_k1_rsort_path(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t,
                       TopK1Path &out, bool force) {
    u64 Kp = top_k1_pow2(k);
    if (!top_k1_has_ops(lim, ROWS_SUBGROUP_OPS)) return false;
    u64 max_l = key_bits == 8 ? t.RSORT_MAX_L8 : t.RSORT_MAX_L;  // 8-bit keys: one digit pass
    if (!force && (Kp <= t.ROWS_MAX_KP || !(t.RSORT_MIN_L <= length && length <= max_l) || n_seq < t.RSORT_MIN_SEQ))
        return false;
    u64 wg = lim.workgroup(std::min<u64>(RSORT_MAX_WG, std::max<u64>(RSORT_MIN_WG, top_k1_pow2(length) / RSORT_MAX_E)));
    while (wg >= std::max<u64>(RSORT_MIN_WG, lim.max_subgroup_size) && ceil_div(length, wg) <= RSORT_MAX_E) {
        u64 B = wg * ceil_div(length, wg);
        u64 nsub = div_by(wg, lim.min_subgroup_size);
        u64 rs_sh = nsub * (NBINS / 2) + nsub;               // rsort_shared_words
        if (4 * (B + 1 + rs_sh + 1) <= lim.shared_memory_bytes) {  // rsort_shared_bytes
            out = TopK1Path();
            out.path = "rsort";
            out.B = B;
            out.Kp = Kp;
            out.workgroup = wg;
            out.rs_sh = rs_sh;
            return true;
        }
        wg /= 2;
    }
    return false;
}

// paths.gradix_shared_bytes: shared memory of GRADIX's sort (skey/sidx[pow2(K)]; in parts, each part's), its largest
// module.
static u64 gradix_shared_bytes(u64 Kp, u64 parts) { return 8 * (Kp / parts); }

// paths.gradix_sort_parts: GRADIX_SORT_PARTS, as many as leave parts of >= GRADIX_SORT_MIN_RUN entries, from pow2(K) =
// GRADIX_SORT_PARTS_MIN_KP on up to GRADIX_SORT_PARTS_MAX_SEQ rows; 1 where the rank sort takes the rows.
static u64 gradix_sort_parts(u64 n_seq, u64 Kp, const TopK1Tuning &t) {
    if (n_seq <= t.GRADIX_RANK_MAX_SEQ || n_seq > t.GRADIX_SORT_PARTS_MAX_SEQ || Kp < t.GRADIX_SORT_PARTS_MIN_KP) return 1;
    return std::max<u64>(1, std::min<u64>(t.GRADIX_SORT_PARTS, Kp / GRADIX_SORT_MIN_RUN));
}

// paths.gradix_digit_bits: GRADIX_DIGIT_BITS (11: the _d11 modules) on 32-bit keys without GRADIX_FILTER where the
// digit pass's histogram (module_shared_bytes("gradix_hist"): 2^bits bins, the pick's s_part[WG] at the widest
// workgroup (1024), 3 words) fits.
int top_k1_gradix_digit_bits(int key_bits, u64 shared, const TopK1Tuning &t) {
    if (t.GRADIX_DIGIT_BITS == 8 || key_bits != 32 || t.GRADIX_FILTER) return 8;
    u64 gb = u64(1) << t.GRADIX_DIGIT_BITS;
    return 4 * (gb + 1024 + 3) <= shared ? (int)t.GRADIX_DIGIT_BITS : 8;
}

bool top_k1_gradix_path(u64 n_seq, u64 length, u64 k, u64 shared, u64 workgroup, u64 target_groups, const TopK1Tuning &t,
                        TopK1Path &out) {
    u64 Kp = top_k1_pow2(k);
    u64 parts = gradix_sort_parts(n_seq, Kp, t);
    if (gradix_shared_bytes(Kp, parts) > shared) return false;
    u64 wg = std::min<u64>(t.GRADIX_WG, workgroup);
    auto align = [](u64 n) { return ceil_div(n, GRADIX_CHUNK_ALIGN) * GRADIX_CHUNK_ALIGN; };
    // about target_groups workgroups in all, chunks of >= GRADIX_MIN_CHUNK (a shorter last one)
    u64 chunk_len = std::max(align(t.GRADIX_MIN_CHUNK), align(ceil_div(length, ceil_div(target_groups, n_seq))));
    out = TopK1Path();
    out.path = "gradix";
    out.B = Kp / parts;
    out.Kp = Kp;
    out.chunks = ceil_div(length, chunk_len);
    out.chunk_len = chunk_len;
    out.workgroup = wg;
    out.sort_wg = workgroup;
    out.sort_parts = parts;
    return true;
}

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
        p.chunk_len = ceil_div(length, WG * EPI) * (WG * EPI);
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
    // LARGE_K_ONE_CHUNK_MAX_L: else the global sort), or 8/16-bit keys from K = GRADIX_MIN_K or
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
        return t.GRADIX_MIN_KP > 0 && Kp >= min_kp && length >= t.GRADIX_MIN_L &&
               (few || (key_bits <= 16 && k >= t.GRADIX_MIN_K) ||
                (key_bits > 8 && length >= t.GRADIX_LONG_MIN_L && k >= long_k)) &&
               gradix(out);
    }
};

// paths.radix_sort_entries: entries a radix chunk's final sort takes (compact.glsl's max(Kp, pow2(c))): about pow2(K)
// on chunks of <= 4 B or under TUNE_FIT; on chunks of >= SAMPLE_MIN_LEN pow2 of the sampled guess's K + K/2 + 64 keys
// and a quarter more; else up to B
static u64 radix_sort_entries(const TopK1Path &p, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t) {
    if (p.chunk_len <= 4 * p.B || (top_k1_tune_bits(p, n_seq, length, key_bits, t) & TUNE_FIT)) return p.Kp;
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
    u64 step = wg * EPI, chunk_len = ceil_div(p.chunk_len, step) * step;
    if (ceil_div(length, chunk_len) != p.chunks) return;
    p.workgroup = wg;
    p.chunk_len = chunk_len;
    p.cap = std::min<u64>(p.B, std::max<u64>(p.cap, wg));
}

TopK1Path Facts::filter(bool radix) {
    u64 wg = WG, b = B();
    u64 step = wg * EPI;
    bool few_short = n_seq <= FEW_SHORT_MAX_SEQ && key_bits > 8 && k > 1;
    bool short_ = short_chunks && length >= (few_short ? FEW_SHORT_CHUNK_STEPS : SHORT_CHUNK_STEPS) * step;
    bool few = n_seq * ceil_div(length, FEW_ROWS_CHUNK_KP * Kp) <= target_groups / 2;
    u64 per = few ? FEW_ROWS_CHUNK_KP : CHUNK_KP;
    u64 min_chunk = short_ ? std::max(step, per * Kp) : std::max(CPU_CHUNK_B * b, CPU_CHUNK_STEPS * step);
    u64 want = ceil_div(target_groups, n_seq);
    bool vocab = short_chunks && t.WAVE_MIN_SEQ <= n_seq && n_seq <= t.WAVE_MAX_SEQ && length <= t.WAVE_MAX_L;
    bool wave = vocab && t.RADIX_SHORT_MIN_KP <= Kp && Kp <= t.WAVE_MAX_KP;
    if (wave) {
        want = ceil_div(target_groups / 2, n_seq);
        min_chunk = step;
    }
    u64 chunks = std::max<u64>(1, std::min(std::min(want, ceil_div(length, min_chunk)),
                                           std::max<u64>(MAX_CHUNK_KEYS / k, target_groups / 2 / n_seq)));
    // tens of vocabulary-sized rows above the wave's K: about a wave of workgroups too, or 2 chunks a row
    if (vocab && short_ && !few && Kp > t.WAVE_MAX_KP)
        chunks = std::min<u64>(chunks, std::max<u64>(2, target_groups / 2 / n_seq));
    u64 chunk_len = ceil_div(length, chunks);
    chunk_len = ceil_div(chunk_len, step) * step;
    chunks = ceil_div(length, chunk_len);
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
        chunk_len = ceil_div(length, step) * step;
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
    // choose(): the _sg modules from pow2(K) = SHUF_MIN_KP where the device has subgroup shuffles
    bool shuf = top_k1_has_ops(lim, SHUF_SUBGROUP_OPS) && c.plan.Kp >= t.SHUF_MIN_KP;
    c.plan.shuf = shuf && (c.plan.path == "seg" || c.plan.path == "filter");
    return c;
}

}  // namespace vkops
