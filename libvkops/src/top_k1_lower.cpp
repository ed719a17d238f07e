// TOP_K1's lowering (vkops/ops/top_k1/lowering.py): plan() and lower(), the push blocks of each
// kernels/top_k1/<algorithm>.comp filled field by field by name, as lowering.py's PUSH mirrors them.
#include <algorithm>
#include <map>

#include "top_k1_paths.hpp"

namespace vkops {

using ops_top_k1_lowering::GRADIX_CTR_EXTRA;
using ops_top_k1_lowering::MAX_OTHER_DIMS;
using ops_top_k1_paths::GRADIX_BRACKET_WG;

static const char *KERNEL_TYPE[] = {"f32", "f16", "i32", "i16", "i8", "u32", "u16", "u8"};  // _KERNELS, DT's order

// lowering.PUSH (generated): each module's push block as (field, words), o_sizes[6] and o_strides[6] last.
static const std::vector<std::pair<std::string, u32>> &push_layout(const std::string &alg) {
    for (auto &m : ops_top_k1_lowering::PUSH)
        if (m.first == alg) return m.second;
    throw std::logic_error("TOP_K1: no push block for " + alg);
}

using Fields = std::vector<std::pair<std::string, u64>>;

// A packed uint32 tensor of `words` elements, as Python's TensorDesc(UINT32, (words,)) checks it.
static Tensor u32_tensor(u64 words) {
    if (words > MAX_ELEMENTS)
        fail("TensorDesc must address at most " + std::to_string(MAX_ELEMENTS) + " elements; sizes (" +
             std::to_string(words) + ",) with strides None reach " + std::to_string(words));
    return Tensor(DT::UINT32, {(u32)words});
}

namespace {
struct Lowering {
    Builder &b;
    Fields shape;
    std::vector<std::pair<i64, i64>> other;
    std::string tname;

    // One dispatch of kernels/top_k1/<alg>.comp (`sg`: its _sg module), its push block from the row's shape and `fields`.
    void dispatch(const std::string &alg, const std::vector<Ref> &bufs, const std::vector<int> &writes, u64 n_groups,
                  const std::vector<u32> &spec, bool sg, const Fields &fields, const std::string &var = "") {
        std::map<std::string, u64> vals;
        for (auto &f : shape) vals[f.first] = f.second;
        vals["n_groups"] = n_groups;
        for (auto &f : fields) vals[f.first] = f.second;
        size_t words = 0;
        for (auto &f : push_layout(alg)) words += f.second;
        Push pc(words);
        size_t at = 0;
        for (auto &f : push_layout(alg)) {
            auto it = vals.find(f.first);
            if (f.second == 1 && it != vals.end()) pc.set(at, it->second);
            for (size_t i = 0; i < other.size() && (f.first == "o_sizes" || f.first == "o_strides"); i++)
                pc.set(at + i, f.first == "o_sizes" ? other[i].first : other[i].second);
            at += f.second;
        }
        std::string kernel = "top_k1_" + alg + var + (sg ? "_sg" : "") + (alg == "sort_global" ? "" : "_" + tname);
        b.dispatch(kernel, bufs, writes, b.limits.grid(n_groups, "TOP_K1"), pc.w, spec);
    }
};
}  // namespace

// The non-axis dimensions, merged where they walk memory evenly (lower's other_dims).
static std::vector<std::pair<i64, i64>> other_dims(const TopK1 &d, const std::vector<u64> &strides) {
    std::vector<i64> sz, st;
    for (size_t i = 0; i < d.input.sizes.size(); i++)
        if (i != d.axis) { sz.push_back(d.input.sizes[i]); st.push_back((i64)strides[i]); }
    return merge_dims(sz, st);
}

TopK1Path top_k1_lower(Builder &b, const TopK1 &d, Ref x, const Ref &values, const Ref &indices, const TopK1Tuning &t) {
    const Limits &lim = b.limits;
    const std::vector<u32> &sizes = d.input.sizes;
    u32 axis = d.axis;
    u64 K = d.k;
    std::vector<u64> strides = x.desc.el_strides();
    auto other = other_dims(d, strides);
    if (other.size() > MAX_OTHER_DIMS) {
        // Strides that fold into no fewer than 7 dimensions: copy to a packed tensor first.
        x = slice1_lower_packed(b, x);
        strides = x.desc.el_strides();
        other = other_dims(d, strides);
    }
    u64 L = sizes[axis];
    u64 n_seq = d.input.count() / L;
    u64 inner = 1;
    for (size_t i = axis + 1; i < sizes.size(); i++) inner *= sizes[i];
    int bits = dt_bits(d.input.dt);
    TopK1Path p = top_k1_choose(lim, n_seq, L, K, bits, t).plan;
    u64 ev = 128 / bits;
    u64 flip = d.axis_direction == VKOPS_AXIS_DIRECTION_INCREASING ? 0xFFFFFFFFull : 0;
    bool vec = strides[axis] == 1 && L % ev == 0;
    for (auto &o : other) vec = vec && o.second % (i64)ev == 0;
    Lowering lo{b, {{"n_seq", n_seq}, {"L", L}, {"K", K}, {"Kp", p.Kp}, {"flip", flip}, {"axis_stride", strides[axis]},
                          {"inner", inner}, {"n_other", other.size()}, {"vec", vec ? 1u : 0u}},
                other, KERNEL_TYPE[(int)d.input.dt]};
    std::vector<u32> spec = {(u32)p.workgroup, (u32)p.B};
    if (p.path == "gradix") {
        u64 C = p.chunks;
        // few rows (GRADIX_RANK_MAX_SEQ): the survivors ranked by gradix_rank in (row, i-tile, j-tile) workgroups,
        // its rank counters (K a row) and each (row, i-tile)'s arrival counter after the rows' counters
        bool rank = n_seq <= t.GRADIX_RANK_MAX_SEQ;
        u64 ti = p.workgroup * t.GRADIX_RANK_E, tj = t.GRADIX_RANK_TJ;
        u64 ni = cdiv(K, ti), nj = cdiv(K, tj);
        // GRADIX_DIGIT_BITS = 11 (32-bit keys): digits of 11, 11, 10 bits, every module's _d11 variant (paths.gradix_shifts)
        int digit = top_k1_gradix_digit_bits(bits, lim.shared_memory_bytes, t);
        u64 passes = cdiv(bits, digit);
        std::string var = digit == 11 ? "_d11" : "";
        u64 cw = (u64(1) << digit) + GRADIX_CTR_EXTRA;  // the digit's histogram bins, arrival, survivor slots
        Ref ctr = b.counters(rank ? n_seq * (cw + K + ni) : n_seq * cw);
        u64 tie_bins = u64(1) << (bits - digit * (passes - 1));  // the last digit's bins: 256 (10 bits: 1024)
        // gradix.glsl's `work`: row state, each chunk's histogram of ties, survivors
        u64 words = 2 * n_seq + n_seq * C * tie_bins + 2 * n_seq * K;
        // GRADIX_BRACKET: the K-th key bracketed from a sample (gradix_bracket), the row read once (gradix_bcollect),
        // the candidates resolved a row (gradix_resolve), instead of the digit passes and the compaction; the same sort
        u64 cap = top_k1_gradix_bracket_cap(lim, n_seq, L, K, bits, t);
        bool brk = cap > 0;
        bool filt = t.GRADIX_FILTER && bits > 8 && !brk;  // 8-bit keys: one digit, nothing to filter
        if (filt) words += n_seq * C + 2 * n_seq * C * p.chunk_len;  // each chunk's candidate count, keys, indices
        if (brk) words += 2 * n_seq * cap;  // each row's candidates, (key, index) pairs
        if (words * 4 > lim.max_storage_buffer_range)
            fail_limit("TOP_K1 by GRADIX with k=" + std::to_string(K) + " on " + std::to_string(n_seq) + " rows of " +
                       std::to_string(L) + " in " + std::to_string(C) + " chunks needs " + std::to_string(words * 4) +
                       " bytes of scratch: more than " + lim.name + "'s maxStorageBufferRange of " +
                       std::to_string(lim.max_storage_buffer_range) + " bytes");
        Ref work = b.scratch(u32_tensor(words));
        Fields fields = {{"chunks", C}, {"chunk_len", p.chunk_len}};
        if (brk) {
            lo.dispatch("gradix_bracket", {x, work}, {1}, n_seq, {(u32)GRADIX_BRACKET_WG}, false, fields, "");
            lo.dispatch("gradix_bcollect", {x, work, ctr}, {1, 2}, n_seq * C, {(u32)p.workgroup, (u32)cap}, false,
                        fields, var);
            lo.dispatch("gradix_resolve", {x, work, ctr}, {1, 2}, n_seq, {(u32)GRADIX_BRACKET_WG, (u32)cap}, false,
                        fields, var);
        } else {
            for (u64 j = 0; j < passes; j++) {  // digits from the most significant
                Fields f = fields;
                f.push_back({"shift", (u64)std::max<i64>(0, (i64)bits - (i64)digit * (i64)(j + 1))});
                f.push_back({"last", j == passes - 1 ? 1u : 0u});
                // filtering: the second pass compacts the first digit's bucket, the later ones read only it
                const char *alg = !filt || j == 0 ? "gradix_hist" : j == 1 ? "gradix_fscan" : "gradix_fhist";
                lo.dispatch(alg, {x, work, ctr}, {1, 2}, n_seq * C, {(u32)p.workgroup}, false, f, var);
            }
            lo.dispatch(filt ? "gradix_fcollect" : "gradix_collect", {x, work, ctr}, {1, 2}, n_seq * C,
                        {(u32)p.workgroup}, false, fields, var);
        }
        if (rank)
            lo.dispatch("gradix_rank", {x, values, indices, work, ctr}, {1, 2, 4}, n_seq * ni * nj,
                        {(u32)p.workgroup, (u32)tj, (u32)t.GRADIX_RANK_E}, false, fields, var);
        else if (p.sort_parts > 1) {
            // the sort in parts (GRADIX_SORT_PARTS): each part's run sorted in place in `work` (part 0 zeroes the
            // survivors' slot counter), then one thread a survivor ranks it across the runs and writes it out
            lo.dispatch("gradix_psort", {work, ctr}, {0, 1}, n_seq * p.sort_parts, {(u32)p.sort_wg, (u32)p.B}, p.shuf,
                        fields, var);
            lo.dispatch("gradix_pmerge", {x, values, indices, work}, {1, 2}, n_seq * cdiv(K, p.workgroup),
                        {(u32)p.workgroup, (u32)p.B}, false, fields, var);
        } else
            lo.dispatch("gradix_sort", {x, values, indices, work, ctr}, {1, 2, 4}, n_seq, {(u32)p.sort_wg, (u32)p.B},
                        p.shuf, fields, var);
    } else if (p.path == "rows") {  // G rows a workgroup, one a subgroup
        lo.dispatch("rows", {x, values, indices}, {1, 2}, cdiv(n_seq, p.G), spec, false,
                    {{"G", p.G}, {"cap", p.cap ? p.cap : p.B}});
    } else if (p.path == "rsort") {  // one row a workgroup; its counters' size a specialization constant
        lo.dispatch("rsort", {x, values, indices}, {1, 2}, n_seq, {spec[0], spec[1], (u32)p.rs_sh}, false, {});
    } else if (p.path == "seg") {
        lo.dispatch("seg", {x, values, indices}, {1, 2}, cdiv(n_seq, p.G), spec, p.shuf, {{"G", p.G}, {"P", p.P}});
    } else if (p.path == "filter") {
        std::string alg = p.radix ? "radix" : "filter";
        // RADIX_MASK: the top_k1_radix_m[_sg] modules (16/32-bit keys: a thread's elements of a block fit one mask word)
        // on chunks of >= RADIX_MASK_MIN_L elements (a row's one chunk: the row's length)
        std::string var = p.radix && t.RADIX_MASK && bits > 8 && std::min<u64>(p.chunk_len, L) >= t.RADIX_MASK_MIN_L ? "_m" : "";
        if (p.radix && bits == 16 && n_seq <= t.RADIX_ONE_LOAD_MAX_SEQ) var += "_l1";  // one load a thread and pass
        u32 tune = top_k1_tune_bits(p, n_seq, L, K, bits, t);
        Fields fields = {{"chunk_len", p.chunk_len}, {"cap", p.cap ? p.cap : p.B}, {"tune", tune}};
        // RADIX_SHORT_BUILD: one chunk of <= 4 B keys, no TUNE_* bit, on the register networks (or on at most
        // RADIX_SHORT_BUILD_MAX_SEQ rows): the slim build (top_k1_radix_s[_sg])
        if (p.radix && var.empty() && t.RADIX_SHORT_BUILD && p.chunks == 1 && L <= 4 * (u64)p.B && tune == 0
            && (p.shuf || n_seq <= t.RADIX_SHORT_BUILD_MAX_SEQ))
            var = "_s";
        Ref ctr = b.counters(1);  // bound but unused unless several chunks share a row
        if (p.chunks == 1) {
            fields.push_back({"chunks", 1});
            lo.dispatch(alg, {x, values, indices, ctr, ctr}, {1, 2}, n_seq, spec, p.shuf, fields, var);
        } else {
            // counters: one a row, then (two-level merge) one a merge group of each row
            u64 groups = p.merge_group ? cdiv(p.chunks, p.merge_group) : 0;
            ctr = b.counters(n_seq * (1 + groups));
            Ref cand = b.scratch(u32_tensor(n_seq * p.chunks * K * 2));
            fields.push_back({"chunks", p.chunks});
            fields.push_back({"merge_group", p.merge_group ? p.merge_group : p.chunks});
            lo.dispatch(alg, {x, values, indices, cand, ctr}, {1, 2, 3, 4}, n_seq * p.chunks, spec, p.shuf, fields, var);
        }
    } else {
        u64 P = p.P, B = p.B;
        u64 words = n_seq * P * 2;
        if (words * 4 > lim.max_storage_buffer_range)
            fail_limit("TOP_K1 with k=" + std::to_string(K) + " on rows of " + std::to_string(L) + " sorts " +
                       std::to_string(n_seq) + " padded rows of " + std::to_string(P) + " (key, index) pairs: " +
                       std::to_string(words * 4) + " bytes exceed " + lim.name + "'s maxStorageBufferRange of " +
                       std::to_string(lim.max_storage_buffer_range) + " bytes");
        Ref cand = b.scratch(u32_tensor(words));
        u64 tiles = P / B;
        // sort_tile's specialization constant 2 (INIT): the first dispatch loads its tiles from the input
        lo.dispatch("sort_tile", {x, values, indices, cand}, {3}, n_seq * tiles, {spec[0], spec[1], 1}, false,
                    {{"tiles", tiles}, {"P", P}, {"size", B}});
        for (u64 size = 2 * B; size <= P; size *= 2) {
            for (u64 stride = size / 2; stride >= B; stride /= 2) {
                u64 step_groups = cdiv(P / 2, p.workgroup);
                lo.dispatch("sort_global", {cand}, {0}, n_seq * step_groups, {(u32)p.workgroup}, false,
                            {{"step_groups", step_groups}, {"P", P}, {"size", size}, {"stride", stride}});
            }
            std::vector<int> writes = size == P ? std::vector<int>{1, 2} : std::vector<int>{3};
            lo.dispatch("sort_tile", {x, values, indices, cand}, writes, n_seq * tiles, {spec[0], spec[1], 0}, false,
                        {{"tiles", tiles}, {"P", P}, {"size", size}});
        }
    }
    return p;
}

Plan top_k1_plan(const TopK1 &d, const Limits &limits, const TopK1Tuning &t) {
    Builder b("top_k1", limits);
    Ref x = b.input(d.input, "input");
    Ref v = b.output(d.output_value, "output_value");
    Ref i = b.output(d.output_index, "output_index");
    TopK1Path p = top_k1_lower(b, d, x, v, i, t);
    b.note("path", json_str(p.radix ? "radix" : p.path));
    b.note("chunks", std::to_string(p.chunks));
    b.note("shuffle", p.shuf ? "true" : "false");
    return b.finish();
}

Plan top_k1_plan_c(const vkops_top_k1_desc *d, const Limits &limits) { return top_k1_plan(top_k1_from_c(d), limits); }

}  // namespace vkops
