// The operators' planners (one file each: slice1.cpp, top_k1*.cpp, qlmm*.cpp), as Python's ops/<op>/ do it.
#pragma once
#include "core.hpp"
#include "tuning_gen.hpp"

namespace vkops {

// SLICE1 (vkops/ops/slice1): the validated descriptor, its plan, and lower() for other operators' packing.
struct Slice1 {
    Tensor input, output;
    std::vector<i64> offsets, sizes, strides;
};
Slice1 slice1_from_c(const vkops_slice1_desc *d);  // validated (Slice1Desc.validate's rules and messages)
void slice1_validate(const Slice1 &s);
Plan slice1_plan(const Slice1 &s, const Limits &limits, const Slice1Tuning &t = Slice1Tuning());
void slice1_lower(Builder &b, const Slice1 &s, const Ref &x, const Ref &out, const Slice1Tuning &t = Slice1Tuning());
Ref slice1_lower_packed(Builder &b, const Ref &x, const Slice1Tuning &t = Slice1Tuning());

// TOP_K1 (vkops/ops/top_k1): the validated descriptor (axis_direction as AxisDirection's value: INCREASING 0,
// DECREASING 1, DML's), its plan under the default tuning and the default path, and lower() for other operators.
struct TopK1 {
    Tensor input, output_value, output_index;
    u32 axis = 0, k = 1;
    u32 axis_direction = VKOPS_AXIS_DIRECTION_DECREASING;
};
TopK1 top_k1_from_c(const vkops_top_k1_desc *d);  // validated (TopK1Desc.validate's rules and messages)
void top_k1_validate(const TopK1 &d);
Plan top_k1_plan(const TopK1 &d, const Limits &limits, const TopK1Tuning &t = TopK1Tuning());
Plan top_k1_plan_c(const vkops_top_k1_desc *d, const Limits &limits);
void top_k1_validate_c(const vkops_top_k1_desc *d);

// QUANTIZED_LINEAR_MATRIX_MULTIPLY (vkops/ops/qlmm; the planner's internals in qlmm.hpp). The plan's input
// buffers are the descriptor's tensors in the descriptor's order with absent (NULL) zero points left out:
//   a, a_scale, [a_zero_point], b, b_scale, [b_zero_point], output_scale, [output_zero_point]
// named by those field names (Python's plan() does the same: lowering._INPUTS), then the one output "output".
// A runtime binds a compiled operator's inputs in this order; with no zero points: a, a_scale, b, b_scale,
// output_scale. Kernel "auto", the default QlmmTuning unless another is given, no zero-point values known to the host.
Plan qlmm_plan_c(const vkops_quantized_linear_matrix_multiply_desc *d, const Limits &limits,
                 const QlmmTuning &t = QlmmTuning());
void qlmm_validate_c(const vkops_quantized_linear_matrix_multiply_desc *d);

}  // namespace vkops
