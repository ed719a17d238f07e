// libvkops' Vulkan half: the function table, the device facts (what a physical device offers and what
// vkops turns on), and the context and operator objects behind the C handles.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core.hpp"
#include "kernels.hpp"

namespace vkops {

constexpr uint32_t MAX_BINDINGS = 16;   // per dispatch (a module's set 0): fixed-size arrays while recording
constexpr uint32_t MAX_PUSH_WORDS = 64; // 256 bytes, the most any device offers in practice

#define VKOPS_INSTANCE_FNS(X)                                                                               \
    X(vkGetPhysicalDeviceProperties) X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)      \
    X(vkEnumerateDeviceExtensionProperties) X(vkGetDeviceProcAddr) X(vkGetPhysicalDeviceMemoryProperties)
#define VKOPS_DEVICE_FNS(X)                                                                                 \
    X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout)                         \
    X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)                    \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkUpdateDescriptorSets) X(vkCmdBindPipeline)         \
    X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier)               \
    X(vkCmdFillBuffer) X(vkCmdUpdateBuffer)                                                                 \
    /* the self-check's own buffers and submission (vk_selfcheck.cpp) */                                    \
    X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory)               \
    X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory) X(vkCreateCommandPool)            \
    X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer)       \
    X(vkQueueSubmit) X(vkQueueWaitIdle)

struct Vk {
#define VKOPS_DECL(f) PFN_##f f = nullptr;
    VKOPS_INSTANCE_FNS(VKOPS_DECL)
    VKOPS_DEVICE_FNS(VKOPS_DECL)
#undef VKOPS_DECL
    PFN_vkCmdPushDescriptorSetKHR vkCmdPushDescriptorSetKHR = nullptr;
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = nullptr;
    // Instance-level functions (throws VKOPS_ERROR_VULKAN naming a missing one).
    void load_instance(VkInstance instance, PFN_vkGetInstanceProcAddr gipa);
    void load_device(VkDevice device, bool push_descriptor);
};

// Optional device extensions vkops asks for, with the core version that promoted them (0: never core).
enum DevExt : uint32_t {
    DX_PUSH_DESCRIPTOR, DX_COOPERATIVE_MATRIX, DX_INTEGER_DOT_PRODUCT, DX_FLOAT16_INT8, DX_VULKAN_MEMORY_MODEL,
    DX_8BIT_STORAGE, DX_SUBGROUP_SIZE_CONTROL, DX_COUNT
};
struct DevExtInfo { const char *name; uint32_t core; uint32_t kernel_bit; };  // kernel_bit: kernels.hpp's EXT_*
extern const DevExtInfo DEV_EXTS[DX_COUNT];

// What a physical device offers, read once.
struct DeviceFacts {
    uint32_t api_version = 0;          // min(instance's, device's)
    bool offered[DX_COUNT] = {};       // extension listed by the device
    VkPhysicalDeviceProperties props{};
    // The extension's functionality is usable: listed, or core at api_version.
    bool usable(DevExt e) const {
        return offered[e] || (DEV_EXTS[e].core && api_version >= DEV_EXTS[e].core);
    }
};
DeviceFacts query_device(const Vk &vk, VkPhysicalDevice pd, uint32_t api_version);
// Requirements from the facts (what vkops' modules use and the device offers).
void fill_requirements(const Vk &vk, VkPhysicalDevice pd, const DeviceFacts &f, vkops_device_requirements *out);
// FEAT_* bits turned on in a requirements struct (the caller's `enabled`), and whether it lists `name`.
uint32_t enabled_features(const vkops_device_requirements &r);
bool lists_extension(const vkops_device_requirements &r, const char *name);

[[noreturn]] void fail_vk(const std::string &what, VkResult r);  // VKOPS_ERROR_VULKAN
void check_vk(const char *what, VkResult r);

struct Module {
    VkShaderModule shader = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
};

}  // namespace vkops

struct vkops_context {
    vkops::Vk vk;
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t queue_family_index = 0;
    const VkAllocationCallbacks *allocator = nullptr;
    VkAllocationCallbacks allocator_copy{};
    VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
    VkPhysicalDeviceLimits device_limits{};
    vkops::Limits limits;
    bool push_descriptors = false;
    uint32_t features = 0;                  // FEAT_* enabled
    std::mutex mutex;                       // guards modules and pipelines
    std::vector<vkops::Module> modules;     // by KERNELS index, created on first use
    std::map<std::pair<int, std::vector<uint32_t>>, VkPipeline> pipelines;  // (kernel, spec values)

    // The module's layouts and shader (created on first use) and the pipeline for these spec values.
    // Takes the mutex; throws on failure.
    VkPipeline pipeline(int kernel, const std::vector<uint32_t> &spec, vkops::Module *module_out);
};

namespace vkops {

enum Where : uint8_t { W_INPUT, W_OUTPUT, W_TEMPORARY, W_PERSISTENT };
struct BufLoc {
    Where where;
    uint32_t index;  // W_INPUT / W_OUTPUT: the caller's binding index
    u64 offset;      // W_TEMPORARY / W_PERSISTENT: offset inside the caller's binding
    u64 size;        // bytes (the plan's, whole words)
};
struct OpDispatch {
    VkPipeline pipeline;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
    uint32_t binding_count;
    uint32_t buffers[MAX_BINDINGS];  // plan buffer ids of bindings 0..n-1
    uint32_t push_words;
    uint32_t push[MAX_PUSH_WORDS];
    uint32_t groups[3];
    bool barrier;
};

}  // namespace vkops

namespace vkops {
// vkops_operator_compile's work under explicit limits (the self-check plans as if verified).
vkops_operator *compile_operator(vkops_context *ctx, const vkops_operator_desc *desc, const Limits &limits);
}

struct vkops_operator {
    vkops_context *ctx = nullptr;
    vkops::Plan plan;
    std::vector<vkops::BufLoc> buffers;         // per plan buffer
    std::vector<vkops::OpDispatch> dispatches;
    vkops_operator_properties props{};
};
