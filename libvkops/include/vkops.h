/* libvkops: vkops' operators (DirectML's TOP_K1, SLICE1 and QUANTIZED_LINEAR_MATRIX_MULTIPLY) recorded
 * into a caller's Vulkan command buffer, on the caller's device, for shapes known only at run time.
 *
 * The flow follows DirectML's: describe an operator (vkops_*_desc, mirroring DML_*_OPERATOR_DESC),
 * compile it for a context (validation, the plan, pipelines shared per context), record its
 * initialization once (persistent memory), then record it into command buffers as often as wanted,
 * each time with the caller's buffers. The library never submits, never waits and never allocates
 * device memory except in vkops_context_self_check(), an explicit call on the caller's queue.
 *
 * C99, C ABI; links libvulkan only. docs/libvkops.md is the integration guide. Thread safety: a context
 * may be used from several threads; an operator is immutable after compile (recording only reads it).
 */
#ifndef VKOPS_H
#define VKOPS_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(VKOPS_SHARED)
#  ifdef VKOPS_BUILD
#    define VKOPS_API __declspec(dllexport)
#  else
#    define VKOPS_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define VKOPS_API __attribute__((visibility("default")))
#else
#  define VKOPS_API
#endif

/* Vulkan headers older than 1.3.255 (Debian 12 ships 1.3.239) lack VK_KHR_cooperative_matrix: the
 * declarations vkops uses, as the registry defines them. */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VKOPS_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VKOPS_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef enum VkComponentTypeKHR {
    VK_COMPONENT_TYPE_FLOAT16_KHR = 0, VK_COMPONENT_TYPE_FLOAT32_KHR = 1, VK_COMPONENT_TYPE_FLOAT64_KHR = 2,
    VK_COMPONENT_TYPE_SINT8_KHR = 3, VK_COMPONENT_TYPE_SINT16_KHR = 4, VK_COMPONENT_TYPE_SINT32_KHR = 5,
    VK_COMPONENT_TYPE_SINT64_KHR = 6, VK_COMPONENT_TYPE_UINT8_KHR = 7, VK_COMPONENT_TYPE_UINT16_KHR = 8,
    VK_COMPONENT_TYPE_UINT32_KHR = 9, VK_COMPONENT_TYPE_UINT64_KHR = 10, VK_COMPONENT_TYPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkComponentTypeKHR;
typedef enum VkScopeKHR {
    VK_SCOPE_DEVICE_KHR = 1, VK_SCOPE_WORKGROUP_KHR = 2, VK_SCOPE_SUBGROUP_KHR = 3, VK_SCOPE_QUEUE_FAMILY_KHR = 5,
    VK_SCOPE_MAX_ENUM_KHR = 0x7FFFFFFF
} VkScopeKHR;
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeKHR AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef VkResult (VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice physicalDevice, uint32_t *pPropertyCount, VkCooperativeMatrixPropertiesKHR *pProperties);
#else
#define VKOPS_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR \
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
#define VKOPS_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#endif

#define VKOPS_VERSION_MAJOR 0
#define VKOPS_VERSION_MINOR 1

/* ---------------------------------------------------------------- status and errors */
typedef enum vkops_status {
    VKOPS_SUCCESS = 0,
    VKOPS_ERROR_VALIDATION = -1,     /* a descriptor or argument breaks a rule (field, rule, values named) */
    VKOPS_ERROR_DEVICE_LIMIT = -2,   /* valid by the spec, beyond what this device can bind or address */
    VKOPS_ERROR_UNSUPPORTED = -3,    /* the device lacks a feature or extension the operator needs */
    VKOPS_ERROR_VULKAN = -4,         /* a Vulkan call failed (its VkResult is in the message) */
    VKOPS_ERROR_OUT_OF_MEMORY = -5   /* host memory */
} vkops_status;

/* The message of this thread's last failed call ("" when none): names the field, the rule and the values.
 * Valid until this thread's next libvkops call. */
VKOPS_API const char *vkops_last_error(void);

/* ---------------------------------------------------------------- tensors (DML_BUFFER_TENSOR_DESC) */
typedef enum vkops_tensor_data_type {  /* DML_TENSOR_DATA_TYPE's values */
    VKOPS_TENSOR_DATA_TYPE_UNKNOWN = 0,
    VKOPS_TENSOR_DATA_TYPE_FLOAT32 = 1,
    VKOPS_TENSOR_DATA_TYPE_FLOAT16 = 2,
    VKOPS_TENSOR_DATA_TYPE_UINT32 = 3,
    VKOPS_TENSOR_DATA_TYPE_UINT16 = 4,
    VKOPS_TENSOR_DATA_TYPE_UINT8 = 5,
    VKOPS_TENSOR_DATA_TYPE_INT32 = 6,
    VKOPS_TENSOR_DATA_TYPE_INT16 = 7,
    VKOPS_TENSOR_DATA_TYPE_INT8 = 8
} vkops_tensor_data_type;

#define VKOPS_MAX_DIMS 8

typedef struct vkops_tensor_desc {     /* DML_BUFFER_TENSOR_DESC */
    vkops_tensor_data_type data_type;
    uint32_t flags;                    /* DML_TENSOR_FLAGS: must be 0 */
    uint32_t dimension_count;          /* 1 to VKOPS_MAX_DIMS */
    const uint32_t *sizes;
    const uint32_t *strides;           /* in elements; NULL = packed C order */
    uint64_t total_tensor_size_in_bytes; /* 0 = the minimum (span x element size); else at least that */
    uint32_t guaranteed_base_offset_alignment; /* informational; 0 = none */
} vkops_tensor_desc;

/* ---------------------------------------------------------------- operator descriptors */
typedef enum vkops_axis_direction {    /* DML_AXIS_DIRECTION */
    VKOPS_AXIS_DIRECTION_INCREASING = 0,
    VKOPS_AXIS_DIRECTION_DECREASING = 1
} vkops_axis_direction;

typedef struct vkops_top_k1_desc {     /* DML_TOP_K1_OPERATOR_DESC */
    const vkops_tensor_desc *input_tensor;
    const vkops_tensor_desc *output_value_tensor;
    const vkops_tensor_desc *output_index_tensor;  /* UINT32 */
    uint32_t axis;
    uint32_t k;
    vkops_axis_direction axis_direction;
} vkops_top_k1_desc;

typedef struct vkops_slice1_desc {     /* DML_SLICE1_OPERATOR_DESC */
    const vkops_tensor_desc *input_tensor;
    const vkops_tensor_desc *output_tensor;
    uint32_t dimension_count;
    const uint32_t *input_window_offsets;
    const uint32_t *input_window_sizes;
    const int32_t *input_window_strides;
} vkops_slice1_desc;

typedef struct vkops_quantized_linear_matrix_multiply_desc {  /* DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC */
    const vkops_tensor_desc *a_tensor;
    const vkops_tensor_desc *a_scale_tensor;
    const vkops_tensor_desc *a_zero_point_tensor;       /* optional (NULL) */
    const vkops_tensor_desc *b_tensor;
    const vkops_tensor_desc *b_scale_tensor;
    const vkops_tensor_desc *b_zero_point_tensor;       /* optional */
    const vkops_tensor_desc *output_scale_tensor;
    const vkops_tensor_desc *output_zero_point_tensor;  /* optional */
    const vkops_tensor_desc *output_tensor;
} vkops_quantized_linear_matrix_multiply_desc;

typedef enum vkops_operator_type {     /* DML_OPERATOR_TYPE's names */
    VKOPS_OPERATOR_TOP_K1 = 1,
    VKOPS_OPERATOR_SLICE1 = 2,
    VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY = 3
} vkops_operator_type;

typedef struct vkops_operator_desc {   /* DML_OPERATOR_DESC */
    vkops_operator_type type;
    const void *desc;                  /* the vkops_*_desc of `type` */
} vkops_operator_desc;

/* Validate a descriptor by the same rules as Python's (no device): VKOPS_SUCCESS or
 * VKOPS_ERROR_VALIDATION / VKOPS_ERROR_DEVICE_LIMIT with vkops_last_error() naming field, rule, values. */
VKOPS_API vkops_status vkops_validate(const vkops_operator_desc *desc);

/* ---------------------------------------------------------------- device facts planning reads */
typedef struct vkops_limits {          /* Python's vkops.limits.Limits, field for field */
    uint32_t subgroup_size, min_subgroup_size, max_subgroup_size;
    uint32_t max_workgroup_invocations;
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_count[3];
    uint32_t shared_memory_bytes;
    uint32_t max_push_constants_bytes;
    uint64_t max_storage_buffer_range;
    uint32_t subgroup_operations;      /* VkSubgroupFeatureFlags of the compute stage */
    uint32_t device_type;              /* 0 unknown, 1 discrete, 2 integrated, 3 virtual, 4 cpu, 5 other */
    uint32_t cooperative_matrix;       /* the s8 16x16x32 subgroup shape, its features enabled */
    uint32_t coopmat_verified;         /* ... and vkops_context_self_check() passed it */
    uint32_t coopmat_split_verified;
    uint32_t integer_dot_product;      /* VK_KHR_shader_integer_dot_product enabled */
    char name[256];                    /* the device's name, as messages say it ("" = "unknown") */
} vkops_limits;

/* Vulkan 1.1's required minimums (what Python calls the "minimum" profile). */
VKOPS_API void vkops_limits_minimum(vkops_limits *out);

/* The plan of a validated descriptor under `limits`, as "vkops-plan/1" JSON (docs/c-api.md), the same
 * text Python's plan(desc, limits).to_json() gives (notes aside). Pure: no device. Free with vkops_free. */
VKOPS_API vkops_status vkops_plan_json(const vkops_operator_desc *desc, const vkops_limits *limits, char **json);
/* For differential tests: vkops_plan_json of a TOP_K1 or QUANTIZED_LINEAR_MATRIX_MULTIPLY descriptor under a tuning
 * other than the default, `knobs` "NAME=VALUE;..." naming integer or boolean fields of Python's TopK1Tuning or
 * QlmmTuning (VALUE an integer, booleans 0/1). */
VKOPS_API vkops_status vkops_plan_json_tuned(const vkops_operator_desc *desc, const vkops_limits *limits,
                                             const char *knobs, char **json);
VKOPS_API void vkops_free(void *p);

/* ---------------------------------------------------------------- host reads */
/* Copy `bytes` from `src` in memory the host maps from a device (vkMapMemory) to `dst`. Where that memory is
 * uncached (HOST_VISIBLE without HOST_CACHED: a discrete GPU's resizable BAR, write-combining), a plain copy pays
 * one PCIe round trip per load; this one, on x86-64 with SSE4.1 and `src` 16-byte aligned, reads whole 64-byte
 * lines with streaming loads (it may read up to 15 bytes past `bytes` inside the same aligned 16 bytes); else
 * memcpy. Call it after the wait that makes the device's writes visible (it fences first). */
VKOPS_API void vkops_read_mapped(void *dst, const void *src, size_t bytes);
/* 1 where vkops_read_mapped uses streaming loads on this CPU, else 0. */
VKOPS_API int vkops_read_mapped_streams(void);

/* ---------------------------------------------------------------- device requirements */
#define VKOPS_MAX_REQUIRED_EXTENSIONS 16

typedef struct vkops_device_requirements {
    uint32_t extension_count;
    const char *extensions[VKOPS_MAX_REQUIRED_EXTENSIONS];  /* add to ppEnabledExtensionNames */
    /* Filled feature structs, linked through pNext from `chain` (always &features2, then only the structs
     * with a feature turned on); put `chain` into VkDeviceCreateInfo.pNext (or append your own chain
     * after the last one) and leave pEnabledFeatures NULL: put your own core features into
     * features2.features. Only what the physical device offers and vkops' modules use is set to VK_TRUE;
     * structs left out of the chain are all VK_FALSE. If your chain already has
     * VkPhysicalDeviceVulkan11Features/Vulkan12Features/Vulkan13Features, copy these flags into those
     * instead (Vulkan forbids both forms of one feature in a chain). */
    void *chain;
    VkPhysicalDeviceFeatures2 features2;
    VkPhysicalDeviceVulkan11Features vulkan11;  /* not chained by this version (no module needs its features) */
    VkPhysicalDeviceShaderFloat16Int8Features float16_int8;
    VkPhysicalDevice8BitStorageFeatures storage8;
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model;
    VkPhysicalDeviceSubgroupSizeControlFeatures subgroup_size_control; /* not chained by this version */
    VkPhysicalDeviceShaderIntegerDotProductFeatures integer_dot_product;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cooperative_matrix;
    /* The Vulkan version these requirements assume: min(the api_version passed, the device's
     * apiVersion). Extensions promoted to core at or below it are not listed (their features are). */
    uint32_t api_version;
    uint32_t reserved[63];
} vkops_device_requirements;

/* Fill `out` for `physical_device` (before vkCreateDevice). `api_version`: the VkApplicationInfo.apiVersion
 * the instance was created with (0 = VK_API_VERSION_1_1; vkops needs 1.1). `get_instance_proc_addr` may be
 * NULL (libvulkan's). The struct must not move between this call and vkCreateDevice (chain points into it).
 * VKOPS_ERROR_UNSUPPORTED when the device is older than Vulkan 1.1. */
VKOPS_API vkops_status vkops_device_requirements_get(VkInstance instance, VkPhysicalDevice physical_device,
                                                     uint32_t api_version,
                                                     PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                                     vkops_device_requirements *out);

/* ---------------------------------------------------------------- context */
typedef struct vkops_context vkops_context;

#define VKOPS_CONTEXT_NO_PUSH_DESCRIPTORS 0x1u  /* use caller-allocated descriptor sets even where
                                                    VK_KHR_push_descriptor is enabled */

typedef struct vkops_context_create_info {
    VkInstance instance;
    VkPhysicalDevice physical_device;
    uint32_t api_version;                             /* the instance's VkApplicationInfo.apiVersion (0 = 1.1) */
    VkDevice device;
    uint32_t queue_family_index;
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* NULL = libvulkan's */
    const VkAllocationCallbacks *allocator;           /* optional */
    VkPipelineCache pipeline_cache;                    /* optional */
    /* What the caller enabled at vkCreateDevice: the requirements it passed (NULL = exactly what
     * vkops_device_requirements_get() returned for this physical device and api_version). The
     * context keeps no pointer to it. */
    const vkops_device_requirements *enabled;
    uint32_t flags;                                    /* VKOPS_CONTEXT_* */
} vkops_context_create_info;

VKOPS_API vkops_status vkops_context_create(const vkops_context_create_info *info, vkops_context **out);
/* Destroy every operator compiled for `ctx` first (they use its pipelines); then the device may go. */
VKOPS_API void vkops_context_destroy(vkops_context *ctx);
/* The limits this context plans with (after vkops_context_self_check(), with its verdicts). */
VKOPS_API void vkops_context_get_limits(const vkops_context *ctx, vkops_limits *out);
/* Run vkops' device self-checks (the cooperative-matrix kernels) once, on the caller's queue: the only
 * call that submits, waits and allocates (its own temporary buffers and command pool, freed before it
 * returns). Without it, the cooperative-matrix paths stay off. Not thread-safe with other use of `queue`. */
VKOPS_API vkops_status vkops_context_self_check(vkops_context *ctx, VkQueue queue);

/* ---------------------------------------------------------------- compiled operators */
typedef struct vkops_operator vkops_operator;

typedef struct vkops_operator_properties {
    uint32_t input_count, output_count;        /* tensors, in the descriptor's order (optional ones absent) */
    uint64_t input_binding_size[12];           /* the least range each tensor's binding must have: the */
    uint64_t output_binding_size[4];           /* span rounded up to 4 bytes (8/16-bit data is written as */
                                               /* whole 32-bit words: the padding bytes may be written) */
    uint64_t temporary_size;                   /* scratch for one execution; 0 = none */
    uint64_t persistent_size;                  /* kept between executions; set up by record_initialize */
    uint32_t dispatch_count, barrier_count;
    uint32_t descriptor_set_count;             /* without push descriptors: sets one record needs */
    uint64_t required_offset_alignment;        /* minStorageBufferOffsetAlignment: every binding's offset */
} vkops_operator_properties;

VKOPS_API vkops_status vkops_operator_compile(vkops_context *ctx, const vkops_operator_desc *desc,
                                              vkops_operator **out);
VKOPS_API void vkops_operator_destroy(vkops_operator *op);
VKOPS_API void vkops_operator_get_properties(const vkops_operator *op, vkops_operator_properties *out);
/* Without push descriptors: the layout of descriptor set i (allocate descriptor_set_count sets, set i
 * with layout i, from a pool with VK_DESCRIPTOR_TYPE_STORAGE_BUFFER descriptors). */
VKOPS_API VkDescriptorSetLayout vkops_operator_descriptor_set_layout(const vkops_operator *op, uint32_t i);
/* The plan this operator records ("vkops-plan/1" JSON). Free with vkops_free. */
VKOPS_API vkops_status vkops_operator_plan_json(const vkops_operator *op, char **json);

typedef struct vkops_binding {
    VkBuffer buffer;
    VkDeviceSize offset;  /* a multiple of required_offset_alignment */
    VkDeviceSize range;   /* at least the binding size; VK_WHOLE_SIZE is not accepted */
} vkops_binding;

typedef struct vkops_record_info {
    const vkops_binding *inputs;    /* input_count, in the descriptor's order */
    const vkops_binding *outputs;   /* output_count */
    const vkops_binding *temporary; /* NULL when temporary_size == 0 */
    const vkops_binding *persistent;/* NULL when persistent_size == 0 */
    const VkDescriptorSet *descriptor_sets; /* descriptor_set_count sets, without push descriptors; else NULL */
} vkops_record_info;

/* Record the persistent memory's set-up (zeroed counters, constants) into `cmd`: once per persistent
 * buffer, before its first vkops_operator_record, which must be ordered after it (a transfer-to-compute
 * barrier: see docs/libvkops.md). */
VKOPS_API vkops_status vkops_operator_record_initialize(const vkops_operator *op, VkCommandBuffer cmd,
                                                        const vkops_binding *persistent);
/* Record the operator into `cmd` (compute dispatches, pipeline barriers between them). Checks every
 * binding against alignment and sizes first; allocates nothing. The caller orders what precedes and
 * follows with its own barriers (docs/libvkops.md, "Barriers"). */
VKOPS_API vkops_status vkops_operator_record(const vkops_operator *op, VkCommandBuffer cmd,
                                             const vkops_record_info *info);

#ifdef __cplusplus
}
#endif
#endif /* VKOPS_H */
