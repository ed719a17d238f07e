// SLICE1 (vkops/ops/slice1/desc.py and lowering.py): the window folded into one affine map, one dispatch.
#include "ops.hpp"

namespace vkops {

static std::string tupi(const std::vector<i64> &v) { return tup(v); }

void slice1_validate(const Slice1 &s) {
    const std::string name = "Slice1Desc";
    const Tensor &inp = s.input, &out = s.output;
    if (out.rank() != inp.rank())
        fail(name + ".output must have the input's DimensionCount " + std::to_string(inp.rank()) + "; got " +
             std::to_string(out.rank()) + " (sizes " + tup(out.sizes) + " vs input sizes " + tup(inp.sizes) + ")");
    if (out.dt != inp.dt)
        fail(name + ".output.data_type must equal input.data_type " + dt_name(inp.dt) + "; got " + dt_name(out.dt));
    size_t n = inp.rank();
    if (!out.is_packed())
        fail(name + ".output.strides must be packed (None); got " + tup(out.strides) + " for sizes " + tup(out.sizes));
    const char *fields[] = {"input_window_offsets", "input_window_sizes", "input_window_strides"};
    const std::vector<i64> *vals[] = {&s.offsets, &s.sizes, &s.strides};
    for (int f = 0; f < 3; f++)
        if (vals[f]->size() != n)
            fail(name + "." + fields[f] + " must have DimensionCount=" + std::to_string(n) + " entries; got " +
                 std::to_string(vals[f]->size()) + " in " + tupi(*vals[f]));
    for (size_t i = 0; i < n; i++) {
        i64 off = s.offsets[i], sz = s.sizes[i], st = s.strides[i];
        std::string at = " at dimension " + std::to_string(i) + " in ";
        if (off < 0) fail(name + ".input_window_offsets must be >= 0; got " + std::to_string(off) + at + tupi(s.offsets));
        if (sz < 1)
            fail(name + ".input_window_sizes must be >= 1 (the window may not be empty); got " + std::to_string(sz) + at +
                 tupi(s.sizes));
        if (off + sz > (i64)inp.sizes[i])
            fail(name + ".input_window_offsets + input_window_sizes must be <= input sizes; got " + std::to_string(off) +
                 " + " + std::to_string(sz) + " > " + std::to_string(inp.sizes[i]) + " at dimension " + std::to_string(i) +
                 " (offsets " + tupi(s.offsets) + ", sizes " + tupi(s.sizes) + ", input sizes " + tup(inp.sizes) + ")");
        if (st == 0) fail(name + ".input_window_strides must be nonzero; got 0" + at + tupi(s.strides));
    }
    std::vector<i64> mx;
    for (size_t i = 0; i < n; i++) mx.push_back(1 + (s.sizes[i] - 1) / (s.strides[i] < 0 ? -s.strides[i] : s.strides[i]));
    for (size_t i = 0; i < n; i++)
        if (!(1 <= (i64)out.sizes[i] && (i64)out.sizes[i] <= mx[i]))
            fail(name + ".output.sizes must satisfy 1 <= OutputSizes[i] <= MaxCopiedElements[i]; got " +
                 std::to_string(out.sizes[i]) + " at dimension " + std::to_string(i) + " with MaxCopiedElements " + tupi(mx) +
                 " (output sizes " + tup(out.sizes) + ")");
}

Slice1 slice1_from_c(const vkops_slice1_desc *d) {
    Slice1 s;
    s.input = Tensor::from_c(d->input_tensor, "Slice1Desc.input");
    s.output = Tensor::from_c(d->output_tensor, "Slice1Desc.output");
    u32 n = d->dimension_count;
    if (n != (u32)s.input.rank())
        fail("Slice1Desc.dimension_count must equal input's DimensionCount " + std::to_string(s.input.rank()) + "; got " +
             std::to_string(n));
    if (!d->input_window_offsets || !d->input_window_sizes || !d->input_window_strides)
        fail("Slice1Desc.input_window_offsets, _sizes and _strides must not be NULL");
    for (u32 i = 0; i < n; i++) {
        s.offsets.push_back(d->input_window_offsets[i]);
        s.sizes.push_back(d->input_window_sizes[i]);
        s.strides.push_back(d->input_window_strides[i]);
    }
    slice1_validate(s);
    return s;
}

// Python's affine(): (base element, merged output sizes, merged input strides).
static void affine(const Slice1 &s, const std::vector<u64> &in_strides, i64 &base, std::vector<i64> &sizes,
                   std::vector<i64> &strides) {
    base = 0;
    std::vector<i64> steps, out_sizes;
    for (size_t i = 0; i < s.offsets.size(); i++) {
        i64 tst = (i64)in_strides[i];
        base += (s.offsets[i] + (s.strides[i] < 0 ? s.sizes[i] - 1 : 0)) * tst;
        steps.push_back(s.strides[i] * tst);
        out_sizes.push_back(s.output.sizes[i]);
    }
    auto merged = merge_dims(out_sizes, steps);
    if (merged.empty()) merged.push_back({1, 1});
    sizes.clear();
    strides.clear();
    for (auto &m : merged) { sizes.push_back(m.first); strides.push_back(m.second); }
}

Plan slice1_plan(const Slice1 &s, const Limits &limits, const Slice1Tuning &t) {
    Builder b("slice1", limits);
    Ref x = b.input(s.input, "input");
    Ref out = b.output(s.output, "output");
    slice1_lower(b, s, x, out, t);
    return b.finish();
}

// The push block of slice1.comp (SLICE_PUSH): rank, n_words, n_elems, base, row_words, tiles_per_row,
// n_groups, vec, sizes[8], strides[8] (int32).
void slice1_lower(Builder &b, const Slice1 &s, const Ref &x, const Ref &out, const Slice1Tuning &t) {
    (void)out;
    int bits = dt_bits(s.input.dt);
    u32 wg = b.limits.workgroup(t.WORKGROUP);
    i64 base;
    std::vector<i64> sizes, strides;
    affine(s, s.input.el_strides(), base, sizes, strides);
    i64 e = 32 / bits;
    i64 n_elems = (i64)s.output.count();
    size_t r = sizes.size();
    auto all_mod = [&](i64 m) { for (size_t i = 0; i + 1 < r; i++) if (strides[i] % m) return false; return true; };
    if (bits < 32 && strides[r - 1] == 1 && sizes[r - 1] % e == 0 && base % e == 0 && all_mod(e)) {
        // Rows of 8/16-bit data that are contiguous, word-aligned runs: copy them as 32-bit words.
        bits = 32;
        sizes[r - 1] /= e;
        base /= e;
        for (size_t i = 0; i + 1 < r; i++) strides[i] /= e;
        strides[r - 1] = 1;
        n_elems /= e;
        e = 1;
    }
    i64 n_words = (n_elems + e - 1) / e;
    i64 per_group = (i64)wg * t.WORDS_PER_THREAD;
    Push pc(24);
    i64 row_len = sizes[r - 1], n_groups;
    if (bits == 32 && (strides[r - 1] == 1 || strides[r - 1] == 2) && row_len % 4 == 0 && base % 4 == 0 && all_mod(4) &&
        row_len >= 4 * (i64)wg) {
        pc.set(7, strides[r - 1]);
        pc.set(4, row_len);
        pc.set(5, ((row_len / 4) + per_group - 1) / per_group);
        n_groups = (n_elems / row_len) * (i64)pc.w[5];
    } else if (row_len % e == 0 && row_len / e >= (i64)wg) {
        pc.set(4, row_len / e);
        pc.set(5, (row_len / e + per_group - 1) / per_group);
        n_groups = (n_elems / row_len) * (i64)pc.w[5];
    } else {
        n_groups = (n_words + per_group - 1) / per_group;
    }
    pc.set(0, r);
    pc.set(1, n_words);
    pc.set(2, n_elems);
    pc.set(3, base);
    pc.set(6, n_groups);
    for (size_t i = 0; i < r; i++) { pc.set(8 + i, sizes[i]); pc.seti(16 + i, strides[i]); }
    b.dispatch("slice1_b" + std::to_string(bits), {x, out}, {1}, b.limits.grid(n_groups, "SLICE1"), pc.w,
               {wg, t.WORDS_PER_THREAD});
}

Ref slice1_lower_packed(Builder &b, const Ref &x, const Slice1Tuning &t) {
    int n = x.ndim();
    Ref out = b.scratch(x.desc.packed());
    Slice1 s;
    s.input = x.desc;
    s.output = out.desc;
    s.offsets.assign(n, 0);
    for (int i = 0; i < n; i++) s.sizes.push_back(x.desc.sizes[i]);
    s.strides.assign(n, 1);
    slice1_validate(s);
    slice1_lower(b, s, x, out, t);
    return out;
}

}  // namespace vkops
