// TOP_K1's descriptor and its rules (vkops/ops/top_k1/desc.py: TopK1Desc.validate), with the same messages.
#include "ops.hpp"

namespace vkops {

using ops_top_k1_desc::MAX_AXIS_LENGTH;

static std::string strides_repr(const Tensor &t) { return t.has_strides ? tup(t.strides) : "None"; }

// TopK1Desc.validate after validate_fields (the tensors are valid: Tensor::from_c checked them).
void top_k1_validate(const TopK1 &d) {
    const std::string name = "TopK1Desc";
    const Tensor &inp = d.input, &val = d.output_value, &idx = d.output_index;
    // Python's AxisDirection is an IntEnum with DML's values: INCREASING 0, DECREASING 1.
    if (d.axis_direction != VKOPS_AXIS_DIRECTION_INCREASING && d.axis_direction != VKOPS_AXIS_DIRECTION_DECREASING)
        fail(name + ".axis_direction must be an AxisDirection (INCREASING or DECREASING); got " +
             std::to_string(d.axis_direction));
    int n = inp.rank();
    // check_like_input(output_value), then (any type) output_index
    if (val.rank() != n)
        fail(name + ".output_value must have the input's DimensionCount " + std::to_string(n) + "; got " +
             std::to_string(val.rank()) + " (sizes " + tup(val.sizes) + " vs input sizes " + tup(inp.sizes) + ")");
    if (val.dt != inp.dt)
        fail(name + ".output_value.data_type must equal input.data_type " + dt_name(inp.dt) + "; got " + dt_name(val.dt));
    if (idx.rank() != n)
        fail(name + ".output_index must have the input's DimensionCount " + std::to_string(n) + "; got " +
             std::to_string(idx.rank()) + " (sizes " + tup(idx.sizes) + " vs input sizes " + tup(inp.sizes) + ")");
    if (idx.dt != DT::UINT32) fail(name + ".output_index.data_type must be UINT32; got " + dt_name(idx.dt));
    if (d.axis >= (u32)n)
        fail(name + ".axis must be < DimensionCount " + std::to_string(n) + " (and >= 0); got axis=" +
             std::to_string(d.axis) + " for sizes " + tup(inp.sizes));
    u32 a = d.axis;
    u64 length = inp.sizes[a];
    if (d.k < 1) fail(name + ".k must be >= 1; got k=" + std::to_string(d.k));
    if (d.k > length)
        fail(name + ".k must be <= size along axis " + std::to_string(a) + "; got k=" + std::to_string(d.k) +
             " for sizes " + tup(inp.sizes));
    if (length > MAX_AXIS_LENGTH)
        fail(name + ".input.sizes[axis] must be <= " + std::to_string(MAX_AXIS_LENGTH) + "; got " +
             std::to_string(length) + " along axis " + std::to_string(a));
    std::vector<u32> want = inp.sizes;
    want[a] = d.k;
    const char *fields[] = {"output_value", "output_index"};
    const Tensor *ts[] = {&val, &idx};
    for (int f = 0; f < 2; f++) {
        const Tensor &t = *ts[f];
        if (t.sizes != want)
            fail(name + "." + fields[f] + ".sizes must equal input sizes with K on axis " + std::to_string(a) + ", " +
                 tup(want) + "; got " + tup(t.sizes));
        if (!t.is_packed())
            fail(name + "." + fields[f] + ".strides must be packed (None); got " + strides_repr(t) + " for sizes " +
                 tup(t.sizes));
    }
}

TopK1 top_k1_from_c(const vkops_top_k1_desc *d) {
    TopK1 s;
    const vkops_tensor_desc *ts[] = {d->input_tensor, d->output_value_tensor, d->output_index_tensor};
    const char *fields[] = {"input", "output_value", "output_index"};
    Tensor *outs[] = {&s.input, &s.output_value, &s.output_index};
    for (int i = 0; i < 3; i++) {
        // validate_fields' message for a missing tensor (Python: None is no TensorDesc)
        if (!ts[i]) fail(std::string("TopK1Desc.") + fields[i] + " must be a TensorDesc; got NoneType");
        *outs[i] = Tensor::from_c(ts[i], std::string("TopK1Desc.") + fields[i]);
    }
    s.axis = d->axis;
    s.k = d->k;
    s.axis_direction = (u32)d->axis_direction;
    top_k1_validate(s);
    return s;
}

void top_k1_validate_c(const vkops_top_k1_desc *d) { top_k1_from_c(d); }

}  // namespace vkops
