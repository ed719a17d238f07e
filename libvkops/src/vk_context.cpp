// Contexts: the caller's device with vkops' device functions, the limits plans are made under (as
// Python's Limits.of_info and the runtime derive them), and the shader modules, layouts and pipelines
// shared by every operator compiled for the context.
#include <algorithm>
#include <cstring>

#include "api.hpp"
#include "tuning_gen.hpp"
#include "vk.hpp"

namespace vkops {

void Vk::load_device(VkDevice device, bool push_descriptor) {
#define VKOPS_LOAD(f)                                                                                   \
    f = (PFN_##f)vkGetDeviceProcAddr(device, #f);                                                       \
    if (!f) throw Error(VKOPS_ERROR_UNSUPPORTED, "vkGetDeviceProcAddr(device, \"" #f "\") returned NULL");
    VKOPS_DEVICE_FNS(VKOPS_LOAD)
#undef VKOPS_LOAD
    if (push_descriptor) {
        vkCmdPushDescriptorSetKHR = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(device, "vkCmdPushDescriptorSetKHR");
        if (!vkCmdPushDescriptorSetKHR)
            throw Error(VKOPS_ERROR_UNSUPPORTED, "VK_KHR_push_descriptor is enabled but vkGetDeviceProcAddr(device, "
                                                 "\"vkCmdPushDescriptorSetKHR\") returned NULL");
    }
}

namespace {

// The extension whose features a FEAT_* bit belongs to (DX_COUNT: core 1.0/1.1).
DevExt ext_of(uint32_t feat) {
    switch (feat) {
    case FEAT_SHADER_INT8: case FEAT_SHADER_FLOAT16: return DX_FLOAT16_INT8;
    case FEAT_VULKAN_MEMORY_MODEL: return DX_VULKAN_MEMORY_MODEL;
    case FEAT_COOPERATIVE_MATRIX: return DX_COOPERATIVE_MATRIX;
    case FEAT_INTEGER_DOT_PRODUCT: return DX_INTEGER_DOT_PRODUCT;
    case FEAT_STORAGE_BUFFER_8BIT: return DX_8BIT_STORAGE;
    default: return DX_COUNT;
    }
}

// vkops_limits.device_type: 0 unknown, 1 discrete, 2 integrated, 3 virtual, 4 cpu, 5 other.
uint32_t device_type_of(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_OTHER: return 5;
    default: return 0;
    }
}

// Python's qlmm coopmat_supported(): the s8 16x16x32 (s32 accumulator and result) shape at subgroup
// scope, 32-lane subgroups, 48 KiB of shared memory, every coopmat module's features enabled.
bool coopmat_shape_offered(const Vk &vk, VkPhysicalDevice pd) {
    if (!vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) return false;
    uint32_t n = 0;
    if (vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, nullptr) != VK_SUCCESS || !n) return false;
    std::vector<VkCooperativeMatrixPropertiesKHR> p(n);
    for (auto &x : p) { std::memset(&x, 0, sizeof x); x.sType = VKOPS_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR; }
    VkResult r = vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, p.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return false;
    for (uint32_t i = 0; i < n; i++)
        if (p[i].MSize == 16 && p[i].NSize == 16 && p[i].KSize == 32 && p[i].AType == VK_COMPONENT_TYPE_SINT8_KHR &&
            p[i].BType == VK_COMPONENT_TYPE_SINT8_KHR && p[i].CType == VK_COMPONENT_TYPE_SINT32_KHR &&
            p[i].ResultType == VK_COMPONENT_TYPE_SINT32_KHR && p[i].scope == VK_SCOPE_SUBGROUP_KHR)
            return true;
    return false;
}

Limits limits_of(const Vk &vk, VkPhysicalDevice pd, const DeviceFacts &f, uint32_t features, bool coop_ext) {
    VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties ssc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sub};
    if (f.usable(DX_SUBGROUP_SIZE_CONTROL)) sub.pNext = &ssc;  // chain only what the device knows
    vk.vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceLimits &L = p2.properties.limits;
    Limits l;
    l.name = p2.properties.deviceName;
    if (l.name.empty()) l.name = "unknown";
    l.subgroup_size = sub.subgroupSize;
    l.min_subgroup_size = ssc.minSubgroupSize ? ssc.minSubgroupSize : sub.subgroupSize;
    l.max_subgroup_size = ssc.maxSubgroupSize ? ssc.maxSubgroupSize : sub.subgroupSize;
    l.max_workgroup_invocations = L.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) {
        l.max_workgroup_size[i] = L.maxComputeWorkGroupSize[i];
        l.max_workgroup_count[i] = L.maxComputeWorkGroupCount[i];
    }
    l.shared_memory_bytes = L.maxComputeSharedMemorySize;
    l.max_push_constants_bytes = L.maxPushConstantsSize;
    l.max_storage_buffer_range = L.maxStorageBufferRange;
    l.subgroup_operations = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sub.supportedOperations : 0;
    vkops_limits c = l.to_c();
    c.device_type = device_type_of(p2.properties.deviceType);
    l = Limits::from_c(c);
    uint32_t coop_needs = 0;
    for (size_t i = 0; i < KERNEL_COUNT; i++)
        if (KERNELS[i].extensions & EXT_COOPERATIVE_MATRIX) coop_needs |= KERNELS[i].features;
    l.cooperative_matrix = coop_ext && coop_needs && (features & coop_needs) == coop_needs && l.subgroup_size == ops_qlmm_coopmat::LANES &&
                           l.shared_memory_bytes >= ops_qlmm_coopmat::COOPMAT_MIN_SHARED && coopmat_shape_offered(vk, pd);
    l.integer_dot_product = (features & FEAT_INTEGER_DOT_PRODUCT) != 0;
    return l;
}

}  // namespace

}  // namespace vkops

using namespace vkops;

VkPipeline vkops_context::pipeline(int k, const std::vector<uint32_t> &spec, Module *module_out) {
    std::lock_guard<std::mutex> lock(mutex);
    const KernelInfo &K = KERNELS[k];
    Module &m = modules[k];
    if (!m.layout) {
        if (!m.shader) {
            VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr, 0, K.code_words * 4, K.code};
            check_vk("vkCreateShaderModule", vk.vkCreateShaderModule(device, &ci, allocator, &m.shader));
        }
        if (!m.set_layout) {
            VkDescriptorSetLayoutBinding b[MAX_BINDINGS];
            for (uint32_t i = 0; i < K.binding_count; i++)
                b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
            VkDescriptorSetLayoutCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, nullptr,
                                               push_descriptors ? (VkDescriptorSetLayoutCreateFlags)
                                                                      VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0u,
                                               K.binding_count, b};
            check_vk("vkCreateDescriptorSetLayout", vk.vkCreateDescriptorSetLayout(device, &ci, allocator, &m.set_layout));
        }
        VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, K.push_bytes};
        VkPipelineLayoutCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, nullptr, 0, 1, &m.set_layout,
                                      K.push_bytes ? 1u : 0u, &pr};
        check_vk("vkCreatePipelineLayout", vk.vkCreatePipelineLayout(device, &ci, allocator, &m.layout));
    }
    *module_out = m;
    auto key = std::make_pair(k, spec);
    auto it = pipelines.find(key);
    if (it != pipelines.end()) return it->second;
    std::vector<VkSpecializationMapEntry> map(spec.size());
    for (uint32_t i = 0; i < spec.size(); i++) map[i] = {i, 4 * i, 4};  // the plan's spec[i] is constant_id i
    VkSpecializationInfo si{(uint32_t)spec.size(), map.data(), 4 * spec.size(), spec.data()};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, nullptr, 0,
                                   {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0,
                                    VK_SHADER_STAGE_COMPUTE_BIT, m.shader, K.entry_point, spec.empty() ? nullptr : &si},
                                   m.layout, VK_NULL_HANDLE, -1};
    VkPipeline p = VK_NULL_HANDLE;
    VkResult r = vk.vkCreateComputePipelines(device, pipeline_cache, 1, &ci, allocator, &p);
    if (r != VK_SUCCESS) fail_vk(std::string("vkCreateComputePipelines (") + K.name + ")", r);
    pipelines.emplace(key, p);
    return p;
}

extern "C" {

vkops_status vkops_context_create(const vkops_context_create_info *info, vkops_context **out) {
    if (out) *out = nullptr;
    return guard([&] {
        if (!info || !out) fail("vkops_context_create: info and out must not be NULL");
        if (!info->instance) fail("vkops_context_create_info.instance must not be VK_NULL_HANDLE");
        if (!info->device) fail("vkops_context_create_info.device must not be VK_NULL_HANDLE");
        if (info->flags & ~VKOPS_CONTEXT_NO_PUSH_DESCRIPTORS)
            fail("vkops_context_create_info.flags must be a combination of VKOPS_CONTEXT_*; got " +
                 std::to_string(info->flags));
        std::unique_ptr<vkops_context> c(new vkops_context);
        c->vk.load_instance(info->instance, info->get_instance_proc_addr);
        DeviceFacts f = query_device(c->vk, info->physical_device, info->api_version);
        vkops_device_requirements mine;
        const vkops_device_requirements *en = info->enabled;
        if (!en) { fill_requirements(c->vk, info->physical_device, f, &mine); en = &mine; }
        // A feature counts where its extension is enabled or core at the version in use.
        uint32_t feats = enabled_features(*en);
        for (uint32_t bit = 1; bit; bit <<= 1) {
            DevExt e = ext_of(bit);
            if ((feats & bit) && e != DX_COUNT && !(DEV_EXTS[e].core && f.api_version >= DEV_EXTS[e].core) &&
                !lists_extension(*en, DEV_EXTS[e].name))
                feats &= ~bit;
        }
        c->features = feats;
        c->push_descriptors = lists_extension(*en, DEV_EXTS[DX_PUSH_DESCRIPTOR].name) &&
                              !(info->flags & VKOPS_CONTEXT_NO_PUSH_DESCRIPTORS);
        c->physical_device = info->physical_device;
        c->device = info->device;
        c->queue_family_index = info->queue_family_index;
        if (info->allocator) { c->allocator_copy = *info->allocator; c->allocator = &c->allocator_copy; }
        c->pipeline_cache = info->pipeline_cache;
        c->device_limits = f.props.limits;
        c->vk.load_device(info->device, c->push_descriptors);
        c->limits = limits_of(c->vk, info->physical_device, f, feats,
                              lists_extension(*en, DEV_EXTS[DX_COOPERATIVE_MATRIX].name));
        c->modules.resize(KERNEL_COUNT);
        *out = c.release();
    });
}

void vkops_context_destroy(vkops_context *c) {
    if (!c) return;
    for (auto &p : c->pipelines) c->vk.vkDestroyPipeline(c->device, p.second, c->allocator);
    for (auto &m : c->modules) {
        if (m.layout) c->vk.vkDestroyPipelineLayout(c->device, m.layout, c->allocator);
        if (m.set_layout) c->vk.vkDestroyDescriptorSetLayout(c->device, m.set_layout, c->allocator);
        if (m.shader) c->vk.vkDestroyShaderModule(c->device, m.shader, c->allocator);
    }
    delete c;
}

void vkops_context_get_limits(const vkops_context *c, vkops_limits *out) {
    if (!c || !out) return;
    *out = c->limits.to_c();
}

}  // extern "C"
