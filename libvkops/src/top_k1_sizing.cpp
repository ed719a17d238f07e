// TOP_K1's path sizing (vkops/ops/top_k1/sizing.py): the shared-memory budgets, the buffer, merge groups and tune
// bits, and the sizes of the paths the rule picks by name (gradix_path with its sort parts and digit bits, the bracket's
// cap, rows_path). top_k1_paths.cpp holds the rule (paths.py, facts.py) that calls them. The tuning comes from the
// generated TopK1Tuning, the rule's own constants from ops_top_k1_paths.
#include "top_k1_paths.hpp"

#include <algorithm>

namespace vkops {

using namespace ops_top_k1_paths;
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

static u64 merge_loads(u64 runs, u64 per_load) { return runs <= 1 ? 0 : cdiv(runs - 1, per_load - 1); }

u64 top_k1_merge_group(u64 chunks, u64 B, u64 Kp, const TopK1Tuning &t) {
    u64 per = B / Kp;
    u64 one = merge_loads(chunks, per);
    u64 best = one, best_g = 0;
    for (u64 g = 2; g < chunks; g++) {
        u64 two = merge_loads(g, per) + merge_loads(cdiv(chunks, g), per) + 1;
        if (two < best) { best = two; best_g = g; }
    }
    return one - best >= t.MERGE_GROUP_MIN_SAVED ? best_g : 0;
}

u32 top_k1_tune_bits(const TopK1Path &p, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t) {
    if (!(p.path == "filter" && p.radix && p.chunks == 1 && p.chunk_len > 4 * p.B)) return 0;
    u32 fit = t.RADIX_FIT_MIN_KP <= p.Kp && p.Kp < p.B && 4 * p.B < length && length < SAMPLE_MIN_LEN &&
              k + t.RADIX_FIT_MIN_SLACK <= p.Kp ? TUNE_FIT : 0;
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
    while (wg >= std::max<u64>(RSORT_MIN_WG, lim.max_subgroup_size) && cdiv(length, wg) <= RSORT_MAX_E) {
        u64 B = wg * cdiv(length, wg);
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
    auto align = [](u64 n) { return cdiv(n, GRADIX_CHUNK_ALIGN) * GRADIX_CHUNK_ALIGN; };
    // about target_groups workgroups in all, chunks of >= GRADIX_MIN_CHUNK (a shorter last one)
    u64 chunk_len = std::max(align(t.GRADIX_MIN_CHUNK), align(cdiv(length, cdiv(target_groups, n_seq))));
    out = TopK1Path();
    out.path = "gradix";
    out.B = Kp / parts;
    out.Kp = Kp;
    out.chunks = cdiv(length, chunk_len);
    out.chunk_len = chunk_len;
    out.workgroup = wg;
    out.sort_wg = workgroup;
    out.sort_parts = parts;
    return true;
}

}  // namespace vkops
