// The pure entry points: errors, validation and plans as JSON (no Vulkan objects).
#include <cstdlib>
#include <cstring>
#include <new>

#include "api.hpp"
#include "ops.hpp"

namespace vkops {

thread_local std::string last_error;

vkops_status set_error(vkops_status s, const std::string &m) { last_error = m; return s; }

void validate_operator(const vkops_operator_desc *desc) {
    if (!desc || !desc->desc) fail("vkops_operator_desc.desc must not be NULL");
    switch (desc->type) {
    case VKOPS_OPERATOR_SLICE1: slice1_from_c((const vkops_slice1_desc *)desc->desc); return;
    case VKOPS_OPERATOR_TOP_K1: top_k1_validate_c((const vkops_top_k1_desc *)desc->desc); return;
    case VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY:
        qlmm_validate_c((const vkops_quantized_linear_matrix_multiply_desc *)desc->desc); return;
    }
    fail("vkops_operator_desc.type must be VKOPS_OPERATOR_TOP_K1, _SLICE1 or _QUANTIZED_LINEAR_MATRIX_MULTIPLY; got " +
         std::to_string((int)desc->type));
}

Plan plan_operator(const vkops_operator_desc *desc, const Limits &limits) {
    validate_operator(desc);
    switch (desc->type) {
    case VKOPS_OPERATOR_SLICE1: return slice1_plan(slice1_from_c((const vkops_slice1_desc *)desc->desc), limits);
    case VKOPS_OPERATOR_TOP_K1: return top_k1_plan_c((const vkops_top_k1_desc *)desc->desc, limits);
    case VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY:
        return qlmm_plan_c((const vkops_quantized_linear_matrix_multiply_desc *)desc->desc, limits);
    }
    fail("unreachable");
}

char *dup_string(const std::string &s) {
    char *p = (char *)std::malloc(s.size() + 1);
    if (!p) throw std::bad_alloc();
    std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

}  // namespace vkops

using namespace vkops;

extern "C" {

const char *vkops_last_error(void) { return last_error.c_str(); }

void vkops_free(void *p) { std::free(p); }

void vkops_limits_minimum(vkops_limits *out) {
    if (!out) return;
    Limits l;
    l.name = "Vulkan 1.1 minimum";
    *out = l.to_c();
}

vkops_status vkops_validate(const vkops_operator_desc *desc) {
    return guard([&] { validate_operator(desc); });
}

vkops_status vkops_plan_json(const vkops_operator_desc *desc, const vkops_limits *limits, char **json) {
    if (json) *json = nullptr;
    return guard([&] {
        if (!limits || !json) fail("vkops_plan_json: limits and json must not be NULL");
        Plan p = plan_operator(desc, Limits::from_c(*limits));
        *json = dup_string(p.to_json());
    });
}

vkops_status vkops_plan_json_tuned(const vkops_operator_desc *desc, const vkops_limits *limits, const char *knobs,
                                   char **json) {
    if (json) *json = nullptr;
    return guard([&] {
        if (!limits || !json || !knobs) fail("vkops_plan_json_tuned: limits, knobs and json must not be NULL");
        validate_operator(desc);
        bool topk = desc->type == VKOPS_OPERATOR_TOP_K1;
        if (!topk && desc->type != VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY)
            fail("vkops_plan_json_tuned: knobs are read for TOP_K1 and QUANTIZED_LINEAR_MATRIX_MULTIPLY only");
        TopK1Tuning tk;
        QlmmTuning tq;
        std::string s(knobs);
        for (size_t at = 0; at < s.size();) {  // NAME=VALUE;NAME=VALUE
            size_t end = s.find(';', at);
            if (end == std::string::npos) end = s.size();
            std::string kv = s.substr(at, end - at);
            size_t eq = kv.find('=');
            bool ok = eq != std::string::npos;
            if (ok) {
                std::string name = kv.substr(0, eq);
                int64_t v = std::stoll(kv.substr(eq + 1));
                ok = topk ? set_knob(tk, name, v) : set_knob(tq, name, v);
            }
            if (!ok)
                fail(std::string("vkops_plan_json_tuned: no ") + (topk ? "TOP_K1" : "QUANTIZED_LINEAR_MATRIX_MULTIPLY") +
                     " knob " + kv);
            at = end + 1;
        }
        Limits lim = Limits::from_c(*limits);
        Plan p = topk ? top_k1_plan(top_k1_from_c((const vkops_top_k1_desc *)desc->desc), lim, tk)
                      : qlmm_plan_c((const vkops_quantized_linear_matrix_multiply_desc *)desc->desc, lim, tq);
        *json = dup_string(p.to_json());
    });
}

}  // extern "C"
