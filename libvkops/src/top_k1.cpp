// TOP_K1: not yet ported (placeholder so the library links; a helper replaces this file).
#include "ops.hpp"
namespace vkops {
void top_k1_validate_c(const vkops_top_k1_desc *) { throw Error(VKOPS_ERROR_UNSUPPORTED, "TOP_K1: not ported yet"); }
Plan top_k1_plan_c(const vkops_top_k1_desc *d, const Limits &) { top_k1_validate_c(d); return Plan(); }
}
