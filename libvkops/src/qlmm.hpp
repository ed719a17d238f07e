// QUANTIZED_LINEAR_MATRIX_MULTIPLY's planner (vkops/ops/qlmm): the validated descriptor (qlmm_desc.cpp), each
// kernel's shape rules, tiles and split-K (qlmm_kernels.cpp: coopmat.py, dot.py, stream.py, gemv.py), the
// kernel rule (qlmm_rule.cpp: rule.py) and the lowering (qlmm_lower.cpp: lowering.py). Pure: no device.
// The tuning is always the default (QlmmTuning of tuning_gen.hpp) and the kernel "auto", as the C API plans.
#pragma once
#include "ops.hpp"

namespace vkops {

// The descriptor's tensors in its order (= the compiled operator's inputs, absent zero points left out,
// then the output).
enum QlmmField { Q_A, Q_SA, Q_ZA, Q_B, Q_SB, Q_ZB, Q_SO, Q_ZO, Q_OUT, Q_FIELDS };
extern const char *const QLMM_FIELDS[Q_FIELDS];  // "a", "a_scale", "a_zero_point", ... (Python's names)

struct Qlmm {
    Tensor t[Q_FIELDS];
    bool has[Q_FIELDS] = {};  // false: an absent zero point (None)
    const Tensor &a() const { return t[Q_A]; }
    const Tensor &b() const { return t[Q_B]; }
    const Tensor &out() const { return t[Q_OUT]; }
    i64 m() const { return t[Q_A].sizes[2]; }
    i64 k() const { return t[Q_A].sizes[3]; }
    i64 n() const { return t[Q_B].sizes[3]; }
};
Qlmm qlmm_from_c(const vkops_quantized_linear_matrix_multiply_desc *d);  // QuantizedLinearMatMulDesc.validate()'s rules
void qlmm_validate(const Qlmm &q);

using St4 = std::vector<i64>;  // four element strides

// rule.py's Product: what the kernel rule reads, after packing and folding.
struct QProduct {
    i64 M, N, K, batches;
    St4 a_st, b_st;
    bool b_cols, a_free, b_free, b_signed;
    bool aligned() const;
};
// rule.py's Choice (kernel "auto"): the kernel and what its rule found (0: none).
struct QChoice {
    std::string kernel;
    i64 dot = 0, gemv = 0, stream_mt = 0, stream_nr = 0;
    std::string config, kname;  // coopmat
};
St4 batch_strides(const Tensor &x);
QProduct qlmm_product(const Qlmm &q, const Limits &lim, i64 &rows, const QlmmTuning &t);
QChoice qlmm_choose(const Limits &lim, const QProduct &p, const QlmmTuning &t);

// coopmat.py
std::vector<i64> cm_config(const std::string &name);  // COOPMAT_CONFIGS[name]: TILE_M, TILE_N, TILE_K, SG_W, SG_H
std::vector<i64> cm_check_config(const std::string &name);
i64 cm_auto_split(i64 tiles, i64 nchunks, const std::string &config, const QlmmTuning &t);
std::pair<i64, i64> cm_tail_split(i64 tiles, i64 nchunks, const std::string &config, const QlmmTuning &t);
std::string cm_auto_config(i64 M, i64 N, i64 batch, const QlmmTuning &t, bool sums, bool bc, i64 K);
i64 cm_shared_bytes(const std::string &config, const std::string &kname);
std::pair<std::string, std::string> cm_resolve(const std::string &config, i64 M, i64 N, i64 K, i64 batches, bool free,
                                               bool b_signed, const QlmmTuning &t, bool b_cols = false);
// dot.py (rows: 0 where it cannot run)
i64 dot_rows(const Limits &lim, i64 M, i64 K, i64 N, const St4 &b_st, bool b_cols, const QlmmTuning &t);
bool dot_preferred(i64 M, bool b_cols, bool direct, const QlmmTuning &t);
i64 dot_chunk(const Limits &lim, i64 rows, const QlmmTuning &t);
std::vector<u32> dot_spec(const Limits &lim, i64 rows, const QlmmTuning &t);
i64 dot_splits(i64 tiles, i64 K, i64 wg, const QlmmTuning &t);
// stream.py (why_not: false where it cannot run)
bool stream_why_not(const Limits &lim, i64 M, i64 N, i64 batches, bool col_sums, const QlmmTuning &t, i64 &mt, i64 &nr);
bool stream_preferred(i64 M, const QlmmTuning &t);
std::string stream_kernel(i64 mt, i64 nr);
i64 stream_workgroup(const Limits &lim, i64 mt, i64 nr, const QlmmTuning &t);
i64 stream_splits(i64 tiles, i64 K, i64 nr, i64 wg, const QlmmTuning &t);
// gemv.py (why_not: 0 where it cannot run, else MR)
i64 gemv_why_not(const Limits &lim, i64 M, i64 K, i64 N, const St4 &b_st, bool b_cols, const QlmmTuning &t);
bool gemv_preferred(i64 M, i64 b_bytes, bool b_cols, const QlmmTuning &t);  // gemv.py preferred
std::string gemv_kernel(i64 mr, bool bc);  // bc: B column-major (the _bc builds)
i64 gemv_splits(i64 tiles, i64 K, i64 mr, const QlmmTuning &t);

// Python's -(-a // b) for a >= 0, b > 0 (every use here), and (a).bit_length().
inline i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

}  // namespace vkops
