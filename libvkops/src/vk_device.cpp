// Device requirements: what a physical device offers of what vkops' modules use (features and
// extensions), as the feature structs and extension names a caller passes to vkCreateDevice.
#include <cstring>

#include "api.hpp"
#include "vk.hpp"

namespace vkops {

const DevExtInfo DEV_EXTS[DX_COUNT] = {
    {"VK_KHR_push_descriptor", 0, 0},
    {"VK_KHR_cooperative_matrix", 0, EXT_COOPERATIVE_MATRIX},
    {"VK_KHR_shader_integer_dot_product", VK_API_VERSION_1_3, EXT_INTEGER_DOT_PRODUCT},
    {"VK_KHR_shader_float16_int8", VK_API_VERSION_1_2, EXT_FLOAT16_INT8},
    {"VK_KHR_vulkan_memory_model", VK_API_VERSION_1_2, EXT_VULKAN_MEMORY_MODEL},
    {"VK_KHR_8bit_storage", VK_API_VERSION_1_2, EXT_8BIT_STORAGE},
    {"VK_EXT_subgroup_size_control", VK_API_VERSION_1_3, 0},
};

void fail_vk(const std::string &what, VkResult r) {
    throw Error(VKOPS_ERROR_VULKAN, what + " failed: VkResult " + std::to_string((int)r));
}
void check_vk(const char *what, VkResult r) {
    if (r != VK_SUCCESS) fail_vk(what, r);
}

void Vk::load_instance(VkInstance instance, PFN_vkGetInstanceProcAddr gipa) {
    if (!gipa) gipa = vkGetInstanceProcAddr;  // libvulkan's
#define VKOPS_LOAD(f)                                                                                   \
    f = (PFN_##f)gipa(instance, #f);                                                                    \
    if (!f) throw Error(VKOPS_ERROR_UNSUPPORTED, "get_instance_proc_addr(instance, \"" #f "\") returned NULL " \
                                                 "(vkops needs Vulkan 1.1)");
    VKOPS_INSTANCE_FNS(VKOPS_LOAD)
#undef VKOPS_LOAD
    vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)gipa(
        instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
}

static uint32_t version_or_default(uint32_t v) { return v ? v : VK_API_VERSION_1_1; }

DeviceFacts query_device(const Vk &vk, VkPhysicalDevice pd, uint32_t api_version) {
    if (!pd) fail("physical_device must not be VK_NULL_HANDLE");
    DeviceFacts f;
    vk.vkGetPhysicalDeviceProperties(pd, &f.props);
    u32 dev = VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(f.props.apiVersion), VK_API_VERSION_MINOR(f.props.apiVersion), 0);
    u32 inst = version_or_default(api_version);
    f.api_version = std::min(dev, inst);
    if (f.api_version < VK_API_VERSION_1_1)
        throw Error(VKOPS_ERROR_UNSUPPORTED, std::string("vkops needs Vulkan 1.1; ") + f.props.deviceName +
                    " with this instance offers " + std::to_string(VK_API_VERSION_MAJOR(f.api_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(f.api_version)));
    uint32_t n = 0;
    check_vk("vkEnumerateDeviceExtensionProperties", vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr));
    std::vector<VkExtensionProperties> exts(n);
    VkResult r = vk.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) fail_vk("vkEnumerateDeviceExtensionProperties", r);
    for (uint32_t i = 0; i < n; i++)
        for (int e = 0; e < (int)DX_COUNT; e++)
            if (!std::strcmp(exts[i].extensionName, DEV_EXTS[e].name)) f.offered[e] = true;
    return f;
}

namespace {

// The structs of a requirements struct, each with the extension that brings it.
struct Chain {
    void **tail;
    void add(void *s) { *tail = s; tail = (void **)&((VkBaseOutStructure *)s)->pNext; }
};

void init_structs(vkops_device_requirements *o) {
    std::memset(o, 0, sizeof *o);
    o->features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    o->vulkan11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    o->float16_int8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    o->storage8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
    o->memory_model.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
    o->subgroup_size_control.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
    o->integer_dot_product.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    o->cooperative_matrix.sType = VKOPS_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
}

}  // namespace

void fill_requirements(const Vk &vk, VkPhysicalDevice pd, const DeviceFacts &f, vkops_device_requirements *out) {
    // What the device offers: query only structs its extensions (or its core version) know.
    vkops_device_requirements offered;
    init_structs(&offered);
    Chain q{&offered.features2.pNext};
    if (f.usable(DX_FLOAT16_INT8)) q.add(&offered.float16_int8);
    if (f.usable(DX_8BIT_STORAGE)) q.add(&offered.storage8);
    if (f.usable(DX_VULKAN_MEMORY_MODEL)) q.add(&offered.memory_model);
    if (f.usable(DX_INTEGER_DOT_PRODUCT)) q.add(&offered.integer_dot_product);
    if (f.offered[DX_COOPERATIVE_MATRIX]) q.add(&offered.cooperative_matrix);
    vk.vkGetPhysicalDeviceFeatures2(pd, &offered.features2);

    // Turn on what the modules use and the device offers (VkBool32 = VK_TRUE only if both).
    init_structs(out);
    const uint32_t need = all_features();
    auto take = [need](uint32_t bit, VkBool32 &dst, VkBool32 have) { if ((need & bit) && have) dst = VK_TRUE; };
    take(FEAT_SHADER_INT16, out->features2.features.shaderInt16, offered.features2.features.shaderInt16);
    take(FEAT_SHADER_INT64, out->features2.features.shaderInt64, offered.features2.features.shaderInt64);
    take(FEAT_SHADER_INT8, out->float16_int8.shaderInt8, offered.float16_int8.shaderInt8);
    take(FEAT_SHADER_FLOAT16, out->float16_int8.shaderFloat16, offered.float16_int8.shaderFloat16);
    take(FEAT_STORAGE_BUFFER_8BIT, out->storage8.storageBuffer8BitAccess, offered.storage8.storageBuffer8BitAccess);
    take(FEAT_VULKAN_MEMORY_MODEL, out->memory_model.vulkanMemoryModel, offered.memory_model.vulkanMemoryModel);
    // As Python's runtime does: device-scope memory model where the memory model is used and offered.
    take(FEAT_VULKAN_MEMORY_MODEL, out->memory_model.vulkanMemoryModelDeviceScope,
         offered.memory_model.vulkanMemoryModel && offered.memory_model.vulkanMemoryModelDeviceScope);
    take(FEAT_INTEGER_DOT_PRODUCT, out->integer_dot_product.shaderIntegerDotProduct,
         offered.integer_dot_product.shaderIntegerDotProduct);
    take(FEAT_COOPERATIVE_MATRIX, out->cooperative_matrix.cooperativeMatrix, offered.cooperative_matrix.cooperativeMatrix);

    // Chain the structs with something on; list an extension when one of its features is on (and it is
    // not core at the version in use), and VK_KHR_push_descriptor whenever offered.
    out->api_version = f.api_version;
    out->chain = &out->features2;
    Chain c{&out->features2.pNext};
    auto add_ext = [&](DevExt e) {
        if (!f.offered[e] || (DEV_EXTS[e].core && f.api_version >= DEV_EXTS[e].core)) return;
        if (out->extension_count < VKOPS_MAX_REQUIRED_EXTENSIONS) out->extensions[out->extension_count++] = DEV_EXTS[e].name;
    };
    add_ext(DX_PUSH_DESCRIPTOR);
    if (out->float16_int8.shaderInt8 || out->float16_int8.shaderFloat16) { c.add(&out->float16_int8); add_ext(DX_FLOAT16_INT8); }
    if (out->storage8.storageBuffer8BitAccess) { c.add(&out->storage8); add_ext(DX_8BIT_STORAGE); }
    if (out->memory_model.vulkanMemoryModel) { c.add(&out->memory_model); add_ext(DX_VULKAN_MEMORY_MODEL); }
    if (out->integer_dot_product.shaderIntegerDotProduct) { c.add(&out->integer_dot_product); add_ext(DX_INTEGER_DOT_PRODUCT); }
    if (out->cooperative_matrix.cooperativeMatrix) { c.add(&out->cooperative_matrix); add_ext(DX_COOPERATIVE_MATRIX); }
}

uint32_t enabled_features(const vkops_device_requirements &r) {
    uint32_t f = 0;
    auto on = [&f](uint32_t bit, VkBool32 v) { if (v) f |= bit; };
    on(FEAT_SHADER_INT16, r.features2.features.shaderInt16);
    on(FEAT_SHADER_INT64, r.features2.features.shaderInt64);
    on(FEAT_SHADER_INT8, r.float16_int8.shaderInt8);
    on(FEAT_SHADER_FLOAT16, r.float16_int8.shaderFloat16);
    on(FEAT_STORAGE_BUFFER_8BIT, r.storage8.storageBuffer8BitAccess);
    on(FEAT_VULKAN_MEMORY_MODEL, r.memory_model.vulkanMemoryModel);
    on(FEAT_INTEGER_DOT_PRODUCT, r.integer_dot_product.shaderIntegerDotProduct);
    on(FEAT_COOPERATIVE_MATRIX, r.cooperative_matrix.cooperativeMatrix);
    return f;
}

bool lists_extension(const vkops_device_requirements &r, const char *name) {
    for (uint32_t i = 0; i < r.extension_count && i < VKOPS_MAX_REQUIRED_EXTENSIONS; i++)
        if (r.extensions[i] && !std::strcmp(r.extensions[i], name)) return true;
    return false;
}

}  // namespace vkops

using namespace vkops;

extern "C" vkops_status vkops_device_requirements_get(VkInstance instance, VkPhysicalDevice physical_device,
                                                      uint32_t api_version, PFN_vkGetInstanceProcAddr gipa,
                                                      vkops_device_requirements *out) {
    return guard([&] {
        if (!out) fail("vkops_device_requirements_get: out must not be NULL");
        if (!instance) fail("vkops_device_requirements_get: instance must not be VK_NULL_HANDLE");
        Vk vk;
        vk.load_instance(instance, gipa);
        DeviceFacts f = query_device(vk, physical_device, api_version);
        fill_requirements(vk, physical_device, f, out);
    });
}
