// The embedded kernels (build/libvkops/kernels_gen.cpp, written by libvkops/gen_kernels.py from
// vkops/spv/manifest.json and the .spv files): what a pipeline for each module needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vkops {

// Device features a module's SPIR-V needs (the manifest's device_features).
enum : uint32_t {
    FEAT_SHADER_INT8 = 1u << 0,
    FEAT_VULKAN_MEMORY_MODEL = 1u << 1,
    FEAT_COOPERATIVE_MATRIX = 1u << 2,
    FEAT_INTEGER_DOT_PRODUCT = 1u << 3,
    FEAT_SHADER_INT16 = 1u << 4,
    FEAT_SHADER_INT64 = 1u << 5,
    FEAT_SHADER_FLOAT16 = 1u << 6,
    FEAT_STORAGE_BUFFER_8BIT = 1u << 7,
    FEAT_STORAGE_BUFFER_16BIT = 1u << 8,
};
// Device extensions a module needs (the manifest's device_extensions).
enum : uint32_t {
    EXT_COOPERATIVE_MATRIX = 1u << 0,
    EXT_INTEGER_DOT_PRODUCT = 1u << 1,
    EXT_FLOAT16_INT8 = 1u << 2,
    EXT_VULKAN_MEMORY_MODEL = 1u << 3,
    EXT_8BIT_STORAGE = 1u << 4,
};

struct KernelInfo {
    const char *name;
    const uint32_t *code;
    size_t code_words;
    const char *entry_point;
    uint32_t binding_count;    // set 0, bindings 0..n-1, all storage buffers
    uint32_t push_bytes;       // the push-constant block's size (0: none)
    uint32_t spec_count;
    const uint32_t *spec_ids;  // spec_ids[i]: the constant_id of the plan's spec value i
    uint32_t features, extensions;  // FEAT_* and EXT_* bits
    uint32_t written;          // bit i: binding i is written
};

extern const KernelInfo KERNELS[];
extern const size_t KERNEL_COUNT;
extern const char KERNELS_SHA256[];  // the manifest's top-level sha256: vkops_operator_plan_json names it

// The module's index in KERNELS, or -1.
inline int find_kernel(const char *name) {
    for (size_t i = 0; i < KERNEL_COUNT; i++)
        if (!std::strcmp(KERNELS[i].name, name)) return (int)i;
    return -1;
}

// Union of every module's needs.
inline uint32_t all_features() { uint32_t f = 0; for (size_t i = 0; i < KERNEL_COUNT; i++) f |= KERNELS[i].features; return f; }
inline uint32_t all_extensions() { uint32_t e = 0; for (size_t i = 0; i < KERNEL_COUNT; i++) e |= KERNELS[i].extensions; return e; }

}  // namespace vkops
