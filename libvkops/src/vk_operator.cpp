// Compiled operators: an operator's plan under its context's limits, laid out on the caller's bindings
// (inputs and outputs in plan order; non-zeroed scratch in the temporary buffer; zeroed scratch and
// constants in the persistent buffer), with its pipelines created now.
#include <algorithm>
#include <cstring>

#include "api.hpp"
#include "vk.hpp"

namespace vkops {
namespace {

u64 align_up(u64 x, u64 a) { return (x + a - 1) / a * a; }

void layout_buffers(vkops_operator &op, u64 align) {
    vkops_operator_properties &P = op.props;
    const Plan &plan = op.plan;
    u64 temp = 0, pers = 0;
    for (const Buffer &b : plan.buffers) {
        BufLoc l{W_INPUT, 0, 0, b.nbytes};
        if (b.nbytes % 4 || b.nbytes == 0)
            fail(plan.op + ": plan buffer '" + b.name + "' has " + std::to_string(b.nbytes) + " bytes, not whole words");
        if (b.role == "input") {
            if (P.input_count >= 12) fail(plan.op + ": more than 12 input tensors");
            l.index = P.input_count;
            P.input_binding_size[P.input_count++] = b.nbytes;
        } else if (b.role == "output") {
            if (P.output_count >= 4) fail(plan.op + ": more than 4 output tensors");
            l = {W_OUTPUT, P.output_count, 0, b.nbytes};
            P.output_binding_size[P.output_count++] = b.nbytes;
        } else if (b.role == "scratch" && !b.zeroed) {
            temp = align_up(temp, align);
            l = {W_TEMPORARY, 0, temp, b.nbytes};
            temp += b.nbytes;
        } else if (b.role == "scratch" || b.role == "constant") {
            pers = align_up(pers, align);
            l = {W_PERSISTENT, 0, pers, b.nbytes};
            pers += b.nbytes;
        } else {
            fail(plan.op + ": plan buffer '" + b.name + "' has unknown role '" + b.role + "'");
        }
        op.buffers.push_back(l);
    }
    P.temporary_size = temp;
    P.persistent_size = pers;
}

void build_dispatches(vkops_operator &op) {
    vkops_context *c = op.ctx;
    const Plan &plan = op.plan;
    for (size_t i = 0; i < plan.dispatches.size(); i++) {
        const Dispatch &d = plan.dispatches[i];
        std::string where = plan.op + " dispatch " + std::to_string(i) + " (" + d.kernel + ")";
        int k = find_kernel(d.kernel.c_str());
        if (k < 0) fail(where + ": no embedded module of that name (rebuild libvkops after `make spv`)");
        const KernelInfo &K = KERNELS[k];
        if ((K.features & c->features) != K.features)
            throw Error(VKOPS_ERROR_UNSUPPORTED, where + " needs device features this device did not enable "
                                                 "(see vkops_device_requirements_get)");
        if (d.bindings.size() != K.binding_count || K.binding_count > MAX_BINDINGS)
            fail(where + ": " + std::to_string(d.bindings.size()) + " bindings for a module with " +
                 std::to_string(K.binding_count));
        if (d.push.size() * 4 != K.push_bytes || d.push.size() > MAX_PUSH_WORDS)
            fail(where + ": " + std::to_string(d.push.size() * 4) + " push-constant bytes for a module with " +
                 std::to_string(K.push_bytes));
        if (d.spec.size() > K.spec_count)
            fail(where + ": " + std::to_string(d.spec.size()) + " specialization values for a module with " +
                 std::to_string(K.spec_count));
        if (K.push_bytes > c->device_limits.maxPushConstantsSize)
            fail_limit(where + " needs " + std::to_string(K.push_bytes) + " push-constant bytes; maxPushConstantsSize is " +
                       std::to_string(c->device_limits.maxPushConstantsSize));
        OpDispatch o{};
        Module m;
        o.pipeline = c->pipeline(k, d.spec, &m);
        o.layout = m.layout;
        o.set_layout = m.set_layout;
        o.binding_count = K.binding_count;
        for (uint32_t j = 0; j < K.binding_count; j++) {
            int b = d.bindings[j];
            if (b < 0 || (size_t)b >= plan.buffers.size()) fail(where + ": binding " + std::to_string(j) + " names no buffer");
            o.buffers[j] = (uint32_t)b;
        }
        o.push_words = (uint32_t)d.push.size();
        std::copy(d.push.begin(), d.push.end(), o.push);
        for (int a = 0; a < 3; a++) o.groups[a] = d.groups[a];
        o.barrier = !d.barrier.empty();
        op.props.barrier_count += o.barrier;
        op.dispatches.push_back(o);
    }
    op.props.dispatch_count = (uint32_t)op.dispatches.size();
    op.props.descriptor_set_count = c->push_descriptors ? 0 : op.props.dispatch_count;
}

}  // namespace
vkops_operator *compile_operator(vkops_context *ctx, const vkops_operator_desc *desc, const Limits &limits) {
    std::unique_ptr<vkops_operator> op(new vkops_operator);
    op->ctx = ctx;
    op->plan = plan_operator(desc, limits);
    op->props.required_offset_alignment = std::max<VkDeviceSize>(4, ctx->device_limits.minStorageBufferOffsetAlignment);
    layout_buffers(*op, op->props.required_offset_alignment);
    build_dispatches(*op);
    return op.release();
}

}  // namespace vkops

using namespace vkops;

extern "C" {

vkops_status vkops_operator_compile(vkops_context *ctx, const vkops_operator_desc *desc, vkops_operator **out) {
    if (out) *out = nullptr;
    return guard([&] {
        if (!ctx || !out) fail("vkops_operator_compile: ctx and out must not be NULL");
        *out = compile_operator(ctx, desc, ctx->limits);
    });
}

void vkops_operator_destroy(vkops_operator *op) { delete op; }

void vkops_operator_get_properties(const vkops_operator *op, vkops_operator_properties *out) {
    if (!op || !out) return;
    *out = op->props;
}

VkDescriptorSetLayout vkops_operator_descriptor_set_layout(const vkops_operator *op, uint32_t i) {
    if (!op || i >= op->dispatches.size()) return VK_NULL_HANDLE;
    return op->dispatches[i].set_layout;
}

vkops_status vkops_operator_plan_json(const vkops_operator *op, char **json) {
    if (json) *json = nullptr;
    return guard([&] {
        if (!op || !json) fail("vkops_operator_plan_json: op and json must not be NULL");
        // The plan names the kernels it was made for: the manifest's digest, as `python -m vkops plan` does.
        std::string j = op->plan.to_json();
        j.insert(j.find("\"op\": "), std::string("\"kernels\": \"") + KERNELS_SHA256 + "\", ");
        *json = dup_string(j);
    });
}

}  // extern "C"
