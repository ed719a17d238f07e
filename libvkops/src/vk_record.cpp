// Recording: a compiled operator into the caller's command buffer. Every binding is checked first
// (null handles, offset alignment, range against the binding size, VK_WHOLE_SIZE); then per dispatch a
// compute->compute barrier where the plan needs one, the pipeline, the descriptors (pushed, or written
// into the caller's sets), the push constants and the dispatch. Nothing is allocated here: fixed-size
// arrays on the stack, messages formatted into one on failure only.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "api.hpp"
#include "vk.hpp"

namespace vkops {
namespace {

struct Msg { char s[320]; };

vkops_status invalid(const Msg &m) { return set_error(VKOPS_ERROR_VALIDATION, m.s); }

// `field` (e.g. "vkops_record_info.outputs[1]") against the rules; false with the message in `m`.
bool check_binding(const vkops_operator &op, const vkops_binding &b, const char *field, uint64_t need, Msg &m) {
    uint64_t align = op.props.required_offset_alignment;
    if (b.buffer == VK_NULL_HANDLE) {
        snprintf(m.s, sizeof m.s, "%s.buffer must not be VK_NULL_HANDLE", field);
        return false;
    }
    if (b.offset % align) {
        snprintf(m.s, sizeof m.s, "%s.offset must be a multiple of %" PRIu64 " (minStorageBufferOffsetAlignment); got %" PRIu64,
                 field, align, (uint64_t)b.offset);
        return false;
    }
    if (b.range == VK_WHOLE_SIZE) {
        snprintf(m.s, sizeof m.s, "%s.range must be a byte count >= %" PRIu64 " (the binding size); got VK_WHOLE_SIZE",
                 field, need);
        return false;
    }
    if (b.range < need) {
        snprintf(m.s, sizeof m.s, "%s.range must be >= %" PRIu64 " (the binding size); got %" PRIu64, field, need,
                 (uint64_t)b.range);
        return false;
    }
    return true;
}

bool check_array(const vkops_operator &op, const vkops_binding *arr, uint32_t n, const uint64_t *sizes,
                 const char *name, Msg &m) {
    if (!n) return true;
    if (!arr) {
        snprintf(m.s, sizeof m.s, "vkops_record_info.%s must not be NULL (the operator has %u)", name, n);
        return false;
    }
    char field[64];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(field, sizeof field, "vkops_record_info.%s[%u]", name, i);
        if (!check_binding(op, arr[i], field, sizes[i], m)) return false;
    }
    return true;
}

bool check_optional(const vkops_operator &op, const vkops_binding *b, uint64_t size, const char *field, Msg &m) {
    if (!size) return true;
    if (!b) {
        snprintf(m.s, sizeof m.s, "%s must not be NULL (the operator needs %" PRIu64 " bytes)", field, size);
        return false;
    }
    return check_binding(op, *b, field, size, m);
}

// The descriptor of plan buffer `id` on the caller's bindings.
VkDescriptorBufferInfo resolve(const vkops_operator &op, const vkops_record_info &in, uint32_t id) {
    const BufLoc &l = op.buffers[id];
    switch (l.where) {
    case W_INPUT: return {in.inputs[l.index].buffer, in.inputs[l.index].offset, l.size};
    case W_OUTPUT: return {in.outputs[l.index].buffer, in.outputs[l.index].offset, l.size};
    case W_TEMPORARY: return {in.temporary->buffer, in.temporary->offset + l.offset, l.size};
    default: return {in.persistent->buffer, in.persistent->offset + l.offset, l.size};
    }
}

void writes_of(const vkops_operator &op, const vkops_record_info &in, const OpDispatch &d, VkDescriptorSet set,
               VkWriteDescriptorSet *w, VkDescriptorBufferInfo *bi) {
    for (uint32_t j = 0; j < d.binding_count; j++) {
        bi[j] = resolve(op, in, d.buffers[j]);
        w[j] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, j, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                nullptr, &bi[j], nullptr};
    }
}

}  // namespace
}  // namespace vkops

using namespace vkops;

extern "C" {

vkops_status vkops_operator_record_initialize(const vkops_operator *op, VkCommandBuffer cmd,
                                              const vkops_binding *persistent) {
    Msg m;
    last_error.clear();
    if (!op || !cmd) {
        snprintf(m.s, sizeof m.s, "vkops_operator_record_initialize: op and cmd must not be NULL");
        return invalid(m);
    }
    if (!check_optional(*op, persistent, op->props.persistent_size, "persistent", m)) return invalid(m);
    const Vk &vk = op->ctx->vk;
    for (size_t i = 0; i < op->buffers.size(); i++) {
        const BufLoc &l = op->buffers[i];
        if (l.where != W_PERSISTENT) continue;
        const Buffer &b = op->plan.buffers[i];
        VkDeviceSize at = persistent->offset + l.offset;
        if (b.role == "scratch") {
            vk.vkCmdFillBuffer(cmd, persistent->buffer, at, l.size, 0);
        } else {  // constant: its words, 64 KiB per vkCmdUpdateBuffer at most
            for (size_t w = 0; w < b.data.size(); w += 16384) {
                size_t n = std::min<size_t>(16384, b.data.size() - w);
                vk.vkCmdUpdateBuffer(cmd, persistent->buffer, at + 4 * w, 4 * n, b.data.data() + w);
            }
            if (l.size > 4 * b.data.size())  // words the plan sized but gave no data for
                vk.vkCmdFillBuffer(cmd, persistent->buffer, at + 4 * b.data.size(), l.size - 4 * b.data.size(), 0);
        }
    }
    return VKOPS_SUCCESS;
}

vkops_status vkops_operator_record(const vkops_operator *op, VkCommandBuffer cmd, const vkops_record_info *info) {
    Msg m;
    last_error.clear();
    if (!op || !cmd || !info) {
        snprintf(m.s, sizeof m.s, "vkops_operator_record: op, cmd and info must not be NULL");
        return invalid(m);
    }
    const vkops_operator_properties &P = op->props;
    const vkops_context &c = *op->ctx;
    if (!check_array(*op, info->inputs, P.input_count, P.input_binding_size, "inputs", m) ||
        !check_array(*op, info->outputs, P.output_count, P.output_binding_size, "outputs", m) ||
        !check_optional(*op, info->temporary, P.temporary_size, "vkops_record_info.temporary", m) ||
        !check_optional(*op, info->persistent, P.persistent_size, "vkops_record_info.persistent", m))
        return invalid(m);
    VkWriteDescriptorSet w[MAX_BINDINGS];
    VkDescriptorBufferInfo bi[MAX_BINDINGS];
    if (!c.push_descriptors) {
        if (!info->descriptor_sets) {
            snprintf(m.s, sizeof m.s, "vkops_record_info.descriptor_sets must not be NULL without push descriptors "
                                      "(the operator needs %u sets)", P.descriptor_set_count);
            return invalid(m);
        }
        for (uint32_t i = 0; i < P.descriptor_set_count; i++)
            if (info->descriptor_sets[i] == VK_NULL_HANDLE) {
                snprintf(m.s, sizeof m.s, "vkops_record_info.descriptor_sets[%u] must not be VK_NULL_HANDLE", i);
                return invalid(m);
            }
        // Every set written before any is bound (writing a set bound in a recording command buffer would
        // invalidate it).
        for (uint32_t i = 0; i < P.descriptor_set_count; i++) {
            writes_of(*op, *info, op->dispatches[i], info->descriptor_sets[i], w, bi);
            c.vk.vkUpdateDescriptorSets(c.device, op->dispatches[i].binding_count, w, 0, nullptr);
        }
    }
    for (size_t i = 0; i < op->dispatches.size(); i++) {
        const OpDispatch &d = op->dispatches[i];
        if (d.barrier) {  // earlier dispatches' writes visible to this one's reads and writes
            VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                               VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
            c.vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                                      1, &mb, 0, nullptr, 0, nullptr);
        }
        c.vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
        if (c.push_descriptors) {
            writes_of(*op, *info, d, VK_NULL_HANDLE, w, bi);
            c.vk.vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.layout, 0, d.binding_count, w);
        } else {
            c.vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.layout, 0, 1, &info->descriptor_sets[i], 0,
                                         nullptr);
        }
        if (d.push_words)
            c.vk.vkCmdPushConstants(cmd, d.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4 * d.push_words, d.push);
        c.vk.vkCmdDispatch(cmd, d.groups[0], d.groups[1], d.groups[2]);
    }
    return VKOPS_SUCCESS;
}

}  // extern "C"
