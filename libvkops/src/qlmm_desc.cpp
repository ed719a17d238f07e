// QUANTIZED_LINEAR_MATRIX_MULTIPLY's descriptor and its rules (vkops/ops/qlmm/desc.py): the same checks in the
// same order, with the same messages.
#include "qlmm.hpp"

namespace vkops {

const char *const QLMM_FIELDS[Q_FIELDS] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                                           "output_scale", "output_zero_point", "output"};

static bool is_quant(DT t) { return t == DT::INT8 || t == DT::UINT8; }

void qlmm_validate(const Qlmm &q) {
    const std::string name = "QuantizedLinearMatMulDesc";
    for (int f = 0; f < Q_FIELDS; f++)
        if (q.has[f]) q.t[f].validate(name + "." + QLMM_FIELDS[f]);
    for (int f = 0; f < Q_FIELDS; f++)
        if (q.has[f] && q.t[f].rank() != 4)
            fail(name + "." + QLMM_FIELDS[f] + " must have DimensionCount 4; got " + std::to_string(q.t[f].rank()) +
                 " (sizes " + tup(q.t[f].sizes) + ")");
    const Tensor &a = q.a(), &b = q.b(), &out = q.out();
    for (int f : {Q_A, Q_B, Q_OUT})
        if (!is_quant(q.t[f].dt))
            fail(name + "." + QLMM_FIELDS[f] + ".data_type must be INT8 or UINT8; got " + dt_name(q.t[f].dt));
    for (int f : {Q_SA, Q_SB, Q_SO})
        if (q.t[f].dt != DT::FLOAT32)
            fail(name + "." + QLMM_FIELDS[f] + ".data_type must be FLOAT32; got " + dt_name(q.t[f].dt));
    const int zps[3][2] = {{Q_ZA, Q_A}, {Q_ZB, Q_B}, {Q_ZO, Q_OUT}};
    for (auto &z : zps)
        if (q.has[z[0]] && q.t[z[0]].dt != q.t[z[1]].dt)
            fail(name + "." + QLMM_FIELDS[z[0]] + ".data_type must equal " + QLMM_FIELDS[z[1]] + ".data_type " +
                 dt_name(q.t[z[1]].dt) + "; got " + dt_name(q.t[z[0]].dt));
    u32 M = a.sizes[2], K = a.sizes[3], Kb = b.sizes[2], N = b.sizes[3];
    std::string ab = " (a sizes " + tup(a.sizes) + ", b sizes " + tup(b.sizes) + ")";
    if (Kb != K)
        fail(name + ".b.sizes[2] must equal a.sizes[3] (K); got " + std::to_string(Kb) + " vs " + std::to_string(K) + ab);
    std::vector<u32> want;
    const char *what[2] = {"BatchCount", "ChannelCount"};
    for (int d = 0; d < 2; d++) {
        u32 x = a.sizes[d], y = b.sizes[d];
        if (x != y && x != 1 && y != 1)
            fail(name + ".a.sizes[" + std::to_string(d) + "] and b.sizes[" + std::to_string(d) + "] (" + what[d] +
                 ") must be equal or one of them 1; got " + std::to_string(x) + " and " + std::to_string(y) + ab);
        want.push_back(std::max(x, y));
    }
    want.push_back(M);
    want.push_back(N);
    if (out.sizes != want)
        fail(name + ".output.sizes must be {BatchCount, ChannelCount, M, N} = " + tup(want) + "; got " + tup(out.sizes));
    if (!out.is_packed())
        fail(name + ".output.strides must be packed (None); got " + tup(out.strides) + " for sizes " + tup(out.sizes));
    // a_scale, a_zero_point, output_scale, output_zero_point per row; b_scale, b_zero_point per column.
    const int order[6] = {Q_SA, Q_ZA, Q_SB, Q_ZB, Q_SO, Q_ZO};
    for (int f : order) {
        if (!q.has[f]) continue;
        bool row = f != Q_SB && f != Q_ZB;
        const Tensor &t = q.t[f];
        std::vector<u32> per = row ? std::vector<u32>{1, 1, M, 1} : std::vector<u32>{1, 1, 1, N};
        if (t.sizes != std::vector<u32>{1, 1, 1, 1} && t.sizes != per)
            fail(name + "." + QLMM_FIELDS[f] + ".sizes must be {1,1,1,1} (per tensor) or {1,1," +
                 (row ? std::to_string(M) + ",1" : "1," + std::to_string(N)) + "} (per " + (row ? "row" : "column") +
                 "); got " + tup(t.sizes));
        if (!t.is_packed())
            fail(name + "." + QLMM_FIELDS[f] + ".strides must be packed; got " + tup(t.strides) + " for sizes " +
                 tup(t.sizes));
    }
    if (K > ops_qlmm_desc::MAX_K)
        fail_limit(name + ".a.sizes[3] (K) must be <= " + std::to_string(ops_qlmm_desc::MAX_K) +
                   ": the int32 accumulator is exact only up to floor((2**31-1) / (255*255)) = " +
                   std::to_string(ops_qlmm_desc::MAX_K) + " products; got K=" + std::to_string(K));
}

Qlmm qlmm_from_c(const vkops_quantized_linear_matrix_multiply_desc *d) {
    if (!d) fail("QuantizedLinearMatMulDesc must not be NULL");
    const vkops_tensor_desc *c[Q_FIELDS] = {d->a_tensor, d->a_scale_tensor, d->a_zero_point_tensor, d->b_tensor,
                                            d->b_scale_tensor, d->b_zero_point_tensor, d->output_scale_tensor,
                                            d->output_zero_point_tensor, d->output_tensor};
    Qlmm q;
    for (int f = 0; f < Q_FIELDS; f++) {
        bool optional = f == Q_ZA || f == Q_ZB || f == Q_ZO;
        if (!c[f] && optional) continue;
        q.t[f] = Tensor::from_c(c[f], std::string("QuantizedLinearMatMulDesc.") + QLMM_FIELDS[f]);
        q.has[f] = true;
    }
    qlmm_validate(q);
    return q;
}

void qlmm_validate_c(const vkops_quantized_linear_matrix_multiply_desc *d) { qlmm_from_c(d); }

}  // namespace vkops
