// QUANTIZED_LINEAR_MATRIX_MULTIPLY: not yet ported (placeholder so the library links; a helper replaces this file).
#include "ops.hpp"
namespace vkops {
void qlmm_validate_c(const vkops_quantized_linear_matrix_multiply_desc *) { throw Error(VKOPS_ERROR_UNSUPPORTED, "QLMM: not ported yet"); }
Plan qlmm_plan_c(const vkops_quantized_linear_matrix_multiply_desc *d, const Limits &) { qlmm_validate_c(d); return Plan(); }
}
