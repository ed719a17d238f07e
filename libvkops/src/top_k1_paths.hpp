// TOP_K1's path rule (vkops/ops/top_k1/paths.py): which path a call takes on a device under a tuning, with its
// buffer, workgroup and chunks. Only the default choice (no force, chunks, shuffle or tune switches).
#pragma once
#include "ops.hpp"

namespace vkops {

// Python's Path (paths.py), field for field.
struct TopK1Path {
    std::string path;   // "seg", "filter", "sort", "rows", "rsort" or "gradix"
    u64 B = 0, Kp = 0;
    u64 G = 1, P = 1;
    u64 chunks = 1, chunk_len = 0, cap = 0;
    bool radix = false;
    u64 merge_group = 0;
    u64 workgroup = 0;
    u64 rs_sh = 1;
    bool shuf = false;
    u64 sort_wg = 0;    // gradix: the workgroup of its survivors' sort (B = Kp entries; `workgroup`: the passes')
    u64 sort_parts = 1; // gradix: workgroups a row's sort (gradix_psort over Kp / sort_parts entries each, gradix_pmerge)
};

struct TopK1Choice {
    std::string path;  // a name of PATHS (AUTO_RULE's row)
    TopK1Path plan;
};

u64 top_k1_pow2(u64 x);                                         // paths._pow2
bool top_k1_has_ops(const Limits &lim, const std::vector<std::string> &ops);  // Limits.has_subgroup(*ops)
u64 top_k1_shared_bytes(u64 B, u64 workgroup);                   // paths.shared_bytes
u64 top_k1_buffer_entries(u64 shared, u64 workgroup, const TopK1Tuning &t);  // DeviceLimitError where none fits
u64 top_k1_merge_group(u64 chunks, u64 B, u64 Kp, const TopK1Tuning &t);
u32 top_k1_tune_bits(const TopK1Path &p, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t);
bool top_k1_rows_path(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t, TopK1Path &out);
// paths.gradix_path with chunks None: false where its sort does not fit shared memory.
bool top_k1_gradix_path(u64 n_seq, u64 length, u64 k, u64 shared, u64 workgroup, u64 target_groups, const TopK1Tuning &t,
                        TopK1Path &out);
// paths.gradix_bracket_cap: GRADIX_BRACKET's candidates a row where GRADIX brackets the K-th key (0: digit passes).
u64 top_k1_gradix_bracket_cap(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits,
                              const TopK1Tuning &t);
// paths.gradix_digit_bits: GRADIX's digit bits (8, or GRADIX_DIGIT_BITS on 32-bit keys where it fits).
int top_k1_gradix_digit_bits(int key_bits, u64 shared, const TopK1Tuning &t);
bool top_k1_rsort_path(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t,
                       TopK1Path &out, bool force = false);  // force: paths.rsort_path(force=True), only its sizing
// paths.choose(limits, n_seq, length, k, key_bits=..., tuning=t) with no switches.
TopK1Choice top_k1_choose(const Limits &lim, u64 n_seq, u64 length, u64 k, int key_bits, const TopK1Tuning &t);

// lowering.lower: TOP_K1 of x into packed values and indices; returns the path it took.
TopK1Path top_k1_lower(Builder &b, const TopK1 &d, Ref x, const Ref &values, const Ref &indices,
                       const TopK1Tuning &t = TopK1Tuning());

}  // namespace vkops
