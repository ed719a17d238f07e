/* A small inference runtime on libvkops: it owns its Vulkan instance, device, queue, command buffers and one
 * large device buffer in which every tensor lives at an offset, and runs a quantized two-layer MLP followed
 * by TOP_K1 through libvkops, for sizes given on the command line:
 *
 *   x (M x K int8) -> QLinearMatMul W1 (K x H) -> h (M x H int8) -> QLinearMatMul W2 (H x N) -> logits (M x N
 *   int8) -> TOP_K1 (k largest of each row: values int8, indices uint32)
 *
 *   mlp [--device I] [--m M] [--k K] [--hidden H] [--n N] [--topk k] [--steps S] [--check-rows R] [--dump DIR]
 *
 * One command buffer holds a whole step (the input's upload, three operators, the top-k's read-back), is
 * recorded once and submitted S times; it prints GPU time (timestamps) and wall time per step and checks
 * every output against a CPU reference (the first R rows; all by default). With VKOPS_VALIDATE=1 it runs
 * under the Khronos validation layer with synchronization validation and fails on any message. --dump
 * writes the inputs and outputs (raw little-endian) for tests/test_capi_run.py's bit-for-bit comparison
 * with vkops' Python path. C99; libvkops and libvulkan only. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vkops.h"

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mlp: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}
#define VK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) die("%s failed: VkResult %d", #x, (int)r_); } while (0)
#define OPS(x) do { if ((x) != VKOPS_SUCCESS) die("%s: %s", #x, vkops_last_error()); } while (0)

static int validation_messages;
static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *d, void *user) {
    (void)type; (void)user;
    if (sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        validation_messages++;
        fprintf(stderr, "validation: %s\n", d->pMessage);
    }
    return VK_FALSE;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Deterministic inputs: a 64-bit LCG's high bits. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static int8_t rnd_i8(int lo, int hi) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int8_t)(lo + (int)((rng_state >> 33) % (uint64_t)(hi - lo + 1)));
}

/* ---------------------------------------------------------------- CPU reference */
static void ref_qlmm(const int8_t *a, float sa, int8_t za, const int8_t *b, float sb, int8_t zb, float so, int8_t zo,
                     int8_t *out, int rows, int K, int N) {
    double scale = ((double)sa * (double)sb) / (double)so;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < N; j++) {
            int64_t acc = 0;
            for (int k = 0; k < K; k++) acc += (int64_t)(a[(size_t)i * K + k] - za) * (int64_t)(b[(size_t)k * N + j] - zb);
            double y = nearbyint((double)acc * scale) + zo;  /* round half to even, then saturate */
            out[(size_t)i * N + j] = (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
        }
}

/* The k largest of each row, ties in ascending index order. */
static void ref_top_k(const int8_t *x, int rows, int N, int k, int8_t *vals, uint32_t *idx) {
    for (int i = 0; i < rows; i++) {
        const int8_t *r = x + (size_t)i * N;
        int taken = 0;
        for (int v = 127; v >= -128 && taken < k; v--)
            for (int j = 0; j < N && taken < k; j++)
                if (r[j] == v) { vals[(size_t)i * k + taken] = (int8_t)v; idx[(size_t)i * k + taken] = (uint32_t)j; taken++; }
    }
}

/* ---------------------------------------------------------------- the runtime */
typedef struct { VkDeviceSize offset, size; } Region;

static VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

static uint32_t memory_type(VkPhysicalDevice pd, uint32_t bits, VkMemoryPropertyFlags want) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    die("no memory type with flags 0x%x", want);
    return 0;
}

static void make_buffer(VkDevice dev, VkPhysicalDevice pd, VkDeviceSize size, VkBufferUsageFlags usage,
                        VkMemoryPropertyFlags props, VkBuffer *buf, VkDeviceMemory *mem) {
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, size, usage, VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
    VK(vkCreateBuffer(dev, &bi, NULL, buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, *buf, &req);
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size,
                               memory_type(pd, req.memoryTypeBits, props)};
    VK(vkAllocateMemory(dev, &ai, NULL, mem));
    VK(vkBindBufferMemory(dev, *buf, *mem, 0));
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags sa, VkPipelineStageFlags dst, VkAccessFlags da) {
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, sa, da};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}
#define COMPUTE VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
#define TRANSFER VK_PIPELINE_STAGE_TRANSFER_BIT

static void write_file(const char *dir, const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) die("cannot write %s", path);
    fclose(f);
}

int main(int argc, char **argv) {
    int dev_index = 0, M = 4, K = 256, H = 512, N = 1000, TOPK = 8, steps = 20, check_rows = -1;
    const char *dump = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *dst = !strcmp(a, "--device") ? &dev_index : !strcmp(a, "--m") ? &M : !strcmp(a, "--k") ? &K :
                   !strcmp(a, "--hidden") ? &H : !strcmp(a, "--n") ? &N : !strcmp(a, "--topk") ? &TOPK :
                   !strcmp(a, "--steps") ? &steps : !strcmp(a, "--check-rows") ? &check_rows : NULL;
        if (!v) die("%s needs a value", a);
        if (!strcmp(a, "--dump")) dump = v;
        else if (dst) *dst = atoi(v);
        else die("unknown option %s (see the comment at the top of mlp.c)", a);
        i++;
    }
    if (M < 1 || K < 1 || H < 1 || N < 1 || TOPK < 1 || steps < 1) die("sizes and --steps must be >= 1");
    if (check_rows < 0 || check_rows > M) check_rows = M;
    int validate = getenv("VKOPS_VALIDATE") && atoi(getenv("VKOPS_VALIDATE"));

    /* -- instance (with the validation layer and synchronization validation when asked) */
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "vkops-mlp", 1, NULL, 0, VK_API_VERSION_1_1};
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *inst_ext[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, NULL, 1, enables, 0, NULL};
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, validate ? &vf : NULL, 0, &app,
                                validate ? 1u : 0u, layers, validate ? 1u : 0u, inst_ext};
    VkInstance inst;
    VK(vkCreateInstance(&ici, NULL, &inst));
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT mi = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT, on_message, NULL};
        VK(create(inst, &mi, NULL, &messenger));
    }
    uint32_t n_pd = 0;
    VK(vkEnumeratePhysicalDevices(inst, &n_pd, NULL));
    VkPhysicalDevice pds[16];
    if (n_pd > 16) n_pd = 16;
    VK(vkEnumeratePhysicalDevices(inst, &n_pd, pds));
    if (dev_index < 0 || (uint32_t)dev_index >= n_pd) die("no device %d (%u found)", dev_index, n_pd);
    VkPhysicalDevice pd = pds[dev_index];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);

    /* -- device: a compute queue, and what libvkops asks for */
    uint32_t n_qf = 0, qf = UINT32_MAX;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_qf, NULL);
    VkQueueFamilyProperties qfp[32];
    if (n_qf > 32) n_qf = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_qf, qfp);
    for (uint32_t i = 0; i < n_qf && qf == UINT32_MAX; i++)
        if (qfp[i].queueFlags & VK_QUEUE_COMPUTE_BIT) qf = i;
    if (qf == UINT32_MAX) die("no compute queue");
    static vkops_device_requirements req;  /* the chain points into it: it must stay put */
    OPS(vkops_device_requirements_get(inst, pd, app.apiVersion, NULL, &req));
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, qf, 1, &prio};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, req.chain, 0, 1, &qci, 0, NULL,
                              req.extension_count, req.extensions, NULL};  /* features go in req.features2 */
    VkDevice dev;
    VK(vkCreateDevice(pd, &dci, NULL, &dev));
    VkQueue queue;
    vkGetDeviceQueue(dev, qf, 0, &queue);

    vkops_context_create_info cci = {inst, pd, app.apiVersion, dev, qf, NULL, NULL, VK_NULL_HANDLE, &req, 0};
    vkops_context *ctx;
    OPS(vkops_context_create(&cci, &ctx));
    OPS(vkops_context_self_check(ctx, queue));

    /* -- the three operators, from DML-style descriptors */
    uint32_t a1s[] = {1, 1, (uint32_t)M, (uint32_t)K}, w1s[] = {1, 1, (uint32_t)K, (uint32_t)H};
    uint32_t hs[] = {1, 1, (uint32_t)M, (uint32_t)H}, w2s[] = {1, 1, (uint32_t)H, (uint32_t)N};
    uint32_t ls[] = {1, 1, (uint32_t)M, (uint32_t)N}, one[] = {1, 1, 1, 1};
    uint32_t l2[] = {(uint32_t)M, (uint32_t)N}, o2[] = {(uint32_t)M, (uint32_t)TOPK};
    vkops_tensor_desc tx = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, a1s, NULL, 0, 0};
    vkops_tensor_desc tw1 = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, w1s, NULL, 0, 0};
    vkops_tensor_desc th = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, hs, NULL, 0, 0};
    vkops_tensor_desc tw2 = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, w2s, NULL, 0, 0};
    vkops_tensor_desc tl = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, ls, NULL, 0, 0};
    vkops_tensor_desc tsc = {VKOPS_TENSOR_DATA_TYPE_FLOAT32, 0, 4, one, NULL, 0, 0};
    vkops_tensor_desc tzp = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, one, NULL, 0, 0};
    vkops_tensor_desc tl2 = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 2, l2, NULL, 0, 0};
    vkops_tensor_desc tv = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 2, o2, NULL, 0, 0};
    vkops_tensor_desc ti = {VKOPS_TENSOR_DATA_TYPE_UINT32, 0, 2, o2, NULL, 0, 0};
    vkops_quantized_linear_matrix_multiply_desc q1 = {&tx, &tsc, &tzp, &tw1, &tsc, &tzp, &tsc, &tzp, &th};
    vkops_quantized_linear_matrix_multiply_desc q2 = {&th, &tsc, &tzp, &tw2, &tsc, &tzp, &tsc, &tzp, &tl};
    vkops_top_k1_desc tk = {&tl2, &tv, &ti, 1, (uint32_t)TOPK, VKOPS_AXIS_DIRECTION_DECREASING};
    vkops_operator_desc d1 = {VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY, &q1};
    vkops_operator_desc d2 = {VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY, &q2};
    vkops_operator_desc d3 = {VKOPS_OPERATOR_TOP_K1, &tk};
    vkops_operator *op[3];
    double t0 = now_ms();
    OPS(vkops_operator_compile(ctx, &d1, &op[0]));
    OPS(vkops_operator_compile(ctx, &d2, &op[1]));
    OPS(vkops_operator_compile(ctx, &d3, &op[2]));
    double compile_ms = now_ms() - t0;
    vkops_operator_properties pr[3];
    for (int i = 0; i < 3; i++) vkops_operator_get_properties(op[i], &pr[i]);

    /* -- one device buffer: every tensor, each operator's persistent memory, one shared temporary region
     *    (the operators run one after another, a barrier between them, so they may share it) */
    enum { X, SA, ZA, W1, SB, ZB, SO, ZO, SO2, Hh, W2, L, V, I, NT };
    /* qlmm inputs in descriptor order: a, a_scale, a_zp, b, b_scale, b_zp, out_scale, out_zp; output. */
    int in1[] = {X, SA, ZA, W1, SB, ZB, SO, ZO}, in2[] = {Hh, SA, ZA, W2, SB, ZB, SO2, ZO}, in3[] = {L};
    int out1[] = {Hh}, out2[] = {L}, out3[] = {V, I};
    int *ins[] = {in1, in2, in3}, *outs[] = {out1, out2, out3};
    VkDeviceSize need[NT] = {0}, al = pr[0].required_offset_alignment;
    for (int o = 0; o < 3; o++) {
        for (uint32_t j = 0; j < pr[o].input_count; j++)
            if (pr[o].input_binding_size[j] > need[ins[o][j]]) need[ins[o][j]] = pr[o].input_binding_size[j];
        for (uint32_t j = 0; j < pr[o].output_count; j++)
            if (pr[o].output_binding_size[j] > need[outs[o][j]]) need[outs[o][j]] = pr[o].output_binding_size[j];
    }
    Region t[NT], pers[3], temp = {0, 0};
    VkDeviceSize total = 0;
    for (int j = 0; j < NT; j++) { t[j].offset = total; t[j].size = need[j]; total = align_up(total + need[j], al); }
    for (int o = 0; o < 3; o++) {
        pers[o].offset = total; pers[o].size = pr[o].persistent_size; total = align_up(total + pr[o].persistent_size, al);
        if (pr[o].temporary_size > temp.size) temp.size = pr[o].temporary_size;
    }
    temp.offset = total;
    total += temp.size + 4;
    VkBuffer big, stage;
    VkDeviceMemory big_mem, stage_mem;
    make_buffer(dev, pd, total, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &big, &big_mem);
    make_buffer(dev, pd, total, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &stage, &stage_mem);
    uint8_t *host;
    VK(vkMapMemory(dev, stage_mem, 0, VK_WHOLE_SIZE, 0, (void **)&host));
    memset(host, 0, total);

    /* -- data: small weights keep int8 outputs away from saturation; scales by hand */
    int8_t *x = (int8_t *)(host + t[X].offset), *w1 = (int8_t *)(host + t[W1].offset), *w2 = (int8_t *)(host + t[W2].offset);
    for (size_t j = 0; j < (size_t)M * K; j++) x[j] = rnd_i8(-100, 100);
    for (size_t j = 0; j < (size_t)K * H; j++) w1[j] = rnd_i8(-8, 8);
    for (size_t j = 0; j < (size_t)H * N; j++) w2[j] = rnd_i8(-8, 8);
    /* Powers of two, so the scale product is exact in float32 (the kernels) and float64 (the reference)
     * alike; output scales that keep each layer's int8 output mostly inside [-128, 127]. */
    float sa = 1.0f / 16, sb = 1.0f / 32;
    float so = exp2f(roundf(log2f(0.0083f * sqrtf((float)K)))), so2 = exp2f(roundf(log2f(0.005f * sqrtf((float)H))));
    memcpy(host + t[SA].offset, &sa, 4);
    memcpy(host + t[SB].offset, &sb, 4);
    memcpy(host + t[SO].offset, &so, 4);
    memcpy(host + t[SO2].offset, &so2, 4);
    host[t[ZA].offset] = 3; host[t[ZB].offset] = (uint8_t)-1; host[t[ZO].offset] = 2;

    VkCommandPool pool;
    VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, qf};
    VK(vkCreateCommandPool(dev, &pci, NULL, &pool));
    VkCommandBuffer cb[2];
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 2};
    VK(vkAllocateCommandBuffers(dev, &cai, cb));
    VkQueryPool qp;
    VkQueryPoolCreateInfo qpi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, NULL, 0, VK_QUERY_TYPE_TIMESTAMP, 2, 0};
    VK(vkCreateQueryPool(dev, &qpi, NULL, &qp));
    VkFence fence;
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    VK(vkCreateFence(dev, &fci, NULL, &fence));
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};

    /* -- set-up, once: weights, scales and zero points up; each operator's persistent memory initialized */
    VK(vkBeginCommandBuffer(cb[0], &bi));
    VkBufferCopy up = {0, 0, t[Hh].offset};  /* x .. SO2 lie before h */
    vkCmdCopyBuffer(cb[0], stage, big, 1, &up);
    VkBufferCopy up2 = {t[W2].offset, t[W2].offset, t[W2].size};
    vkCmdCopyBuffer(cb[0], stage, big, 1, &up2);
    barrier(cb[0], TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT, TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT);
    vkops_binding pb[3];
    for (int o = 0; o < 3; o++) {
        pb[o] = (vkops_binding){big, pers[o].offset, pers[o].size};
        if (pr[o].persistent_size) OPS(vkops_operator_record_initialize(op[o], cb[0], &pb[o]));
    }
    VK(vkEndCommandBuffer(cb[0]));
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cb[0], 0, NULL};
    VK(vkQueueSubmit(queue, 1, &si, fence));
    VK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
    VK(vkResetFences(dev, 1, &fence));

    /* -- one step, recorded once: x up, the three operators, the outputs down */
    VK(vkBeginCommandBuffer(cb[1], &bi));
    vkCmdResetQueryPool(cb[1], qp, 0, 2);
    /* the previous step's reads of x (and of anything) come before this step's copy into x */
    barrier(cb[1], COMPUTE | TRANSFER, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
            TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferCopy cx = {t[X].offset, t[X].offset, t[X].size};
    vkCmdCopyBuffer(cb[1], stage, big, 1, &cx);
    /* the set-up's transfers and this upload before the first dispatch (libvkops' "before" barrier) */
    barrier(cb[1], TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT, COMPUTE, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vkCmdWriteTimestamp(cb[1], VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
    vkops_binding tb = {big, temp.offset, temp.size ? temp.size : 4};
    for (int o = 0; o < 3; o++) {
        vkops_binding bin[12], bout[4];
        for (uint32_t j = 0; j < pr[o].input_count; j++) bin[j] = (vkops_binding){big, t[ins[o][j]].offset, t[ins[o][j]].size};
        for (uint32_t j = 0; j < pr[o].output_count; j++) bout[j] = (vkops_binding){big, t[outs[o][j]].offset, t[outs[o][j]].size};
        vkops_record_info ri = {bin, bout, pr[o].temporary_size ? &tb : NULL, pr[o].persistent_size ? &pb[o] : NULL, NULL};
        if (o) /* the previous operator's writes (h, logits, the shared temporary) before this one */
            barrier(cb[1], COMPUTE, VK_ACCESS_SHADER_WRITE_BIT, COMPUTE, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        OPS(vkops_operator_record(op[o], cb[1], &ri));
    }
    vkCmdWriteTimestamp(cb[1], VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
    barrier(cb[1], COMPUTE, VK_ACCESS_SHADER_WRITE_BIT, TRANSFER, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy down[2] = {{t[V].offset, t[V].offset, t[V].size}, {t[I].offset, t[I].offset, t[I].size}};
    vkCmdCopyBuffer(cb[1], big, stage, 2, down);  /* a token's result: the top-k values and indices */
    barrier(cb[1], TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    VK(vkEndCommandBuffer(cb[1]));

    double gpu_ms = 0, wall_ms = 0, first_ms = 0, *gpu_each = calloc((size_t)steps, sizeof(double));
    if (!gpu_each) die("out of memory");
    si.pCommandBuffers = &cb[1];
    for (int s = 0; s < steps; s++) {
        double w0 = now_ms();
        VK(vkQueueSubmit(queue, 1, &si, fence));
        VK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
        double w = now_ms() - w0;
        VK(vkResetFences(dev, 1, &fence));
        uint64_t ts[2];
        VK(vkGetQueryPoolResults(dev, qp, 0, 2, sizeof ts, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        double g = (double)(ts[1] - ts[0]) * props.limits.timestampPeriod / 1e6;
        gpu_each[s] = g;
        if (s == 0) first_ms = w;
        else { gpu_ms += g; wall_ms += w; }
    }
    int timed = steps > 1 ? steps - 1 : 1;

    /* -- the intermediate tensors down too, once, for the checks */
    VK(vkResetCommandBuffer(cb[0], 0));
    VK(vkBeginCommandBuffer(cb[0], &bi));
    VkBufferCopy mid[2] = {{t[Hh].offset, t[Hh].offset, t[Hh].size}, {t[L].offset, t[L].offset, t[L].size}};
    vkCmdCopyBuffer(cb[0], big, stage, 2, mid);
    barrier(cb[0], TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    VK(vkEndCommandBuffer(cb[0]));
    si.pCommandBuffers = &cb[0];
    VK(vkQueueSubmit(queue, 1, &si, fence));
    VK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));

    /* -- check against the CPU reference */
    int8_t *h_ref = malloc((size_t)M * H), *l_ref = malloc((size_t)M * N), *v_ref = malloc((size_t)M * TOPK);
    uint32_t *i_ref = malloc((size_t)M * TOPK * 4);
    if (!h_ref || !l_ref || !v_ref || !i_ref) die("out of memory");
    int8_t za = 3, zb = -1, zo = 2;
    ref_qlmm(x, sa, za, w1, sb, zb, so, zo, h_ref, check_rows, K, H);
    ref_qlmm(h_ref, sa, za, w2, sb, zb, so2, zo, l_ref, check_rows, H, N);
    ref_top_k(l_ref, check_rows, N, TOPK, v_ref, i_ref);
    int bad = 0;
    bad += memcmp(h_ref, host + t[Hh].offset, (size_t)check_rows * H) != 0;
    bad += memcmp(l_ref, host + t[L].offset, (size_t)check_rows * N) != 0;
    bad += memcmp(v_ref, host + t[V].offset, (size_t)check_rows * TOPK) != 0;
    bad += memcmp(i_ref, host + t[I].offset, (size_t)check_rows * TOPK * 4) != 0;

    printf("device: %s (Vulkan %u.%u.%u)\n", props.deviceName, VK_VERSION_MAJOR(props.apiVersion),
           VK_VERSION_MINOR(props.apiVersion), VK_VERSION_PATCH(props.apiVersion));
    printf("step: %dx%d int8 -> QLinearMatMul %d -> QLinearMatMul %d -> TOP_K1 k=%d (%u+%u+%u dispatches)\n", M, K, H, N,
           TOPK, pr[0].dispatch_count, pr[1].dispatch_count, pr[2].dispatch_count);
    vkops_limits lim;
    vkops_context_get_limits(ctx, &lim);
    printf("cooperative matrices: %s; integer dot products: %s\n",
           !lim.cooperative_matrix ? "not offered" : lim.coopmat_split_verified ? "self-check passed (split-K too)" :
           lim.coopmat_verified ? "self-check passed (split-K failed)" : "self-check FAILED (paths off)",
           lim.integer_dot_product ? "on" : "off");
    printf("one buffer of %llu bytes; compile %.2f ms; first step %.3f ms\n", (unsigned long long)total, compile_ms, first_ms);
    qsort(gpu_each + (steps > 1), (size_t)timed, sizeof(double), cmp_double);
    printf("per step over %d steps: GPU %.4f ms (median %.4f), wall (submit + wait) %.4f ms\n", timed, gpu_ms / timed,
           gpu_each[(steps > 1) + timed / 2], wall_ms / timed);
    for (int o = 0; o < 3; o++) {  /* what each operator runs: its plan's notes */
        char *js;
        OPS(vkops_operator_plan_json(op[o], &js));
        char *n = strstr(js, "\"notes\": "), *e = n ? strstr(n, "}") : NULL;
        if (n && e) printf("  op %d: %.*s}\n", o, (int)(e - n), n);
        vkops_free(js);
    }
    free(gpu_each);
    printf("check (%d of %d rows) against the CPU reference: %s\n", check_rows, M, bad ? "MISMATCH" : "equal");
    if (dump) {
        write_file(dump, "x.bin", x, (size_t)M * K);
        write_file(dump, "w1.bin", w1, (size_t)K * H);
        write_file(dump, "w2.bin", w2, (size_t)H * N);
        write_file(dump, "h.bin", host + t[Hh].offset, (size_t)M * H);
        write_file(dump, "logits.bin", host + t[L].offset, (size_t)M * N);
        write_file(dump, "values.bin", host + t[V].offset, (size_t)M * TOPK);
        write_file(dump, "indices.bin", host + t[I].offset, (size_t)M * TOPK * 4);
        char meta[640];
        int n = snprintf(meta, sizeof meta,
                         "{\"m\": %d, \"k\": %d, \"hidden\": %d, \"n\": %d, \"topk\": %d, \"a_scale\": %.9g, "
                         "\"b_scale\": %.9g, \"out_scale\": %.9g, \"out_scale2\": %.9g, \"a_zp\": %d, \"b_zp\": %d, "
                         "\"out_zp\": %d}\n", M, K, H, N, TOPK, sa, sb, so, so2, za, zb, zo);
        write_file(dump, "meta.json", meta, (size_t)n);
    }

    free(h_ref); free(l_ref); free(v_ref); free(i_ref);
    for (int o = 0; o < 3; o++) vkops_operator_destroy(op[o]);
    vkops_context_destroy(ctx);
    vkDestroyFence(dev, fence, NULL);
    vkDestroyQueryPool(dev, qp, NULL);
    vkDestroyCommandPool(dev, pool, NULL);
    vkUnmapMemory(dev, stage_mem);
    vkDestroyBuffer(dev, big, NULL); vkFreeMemory(dev, big_mem, NULL);
    vkDestroyBuffer(dev, stage, NULL); vkFreeMemory(dev, stage_mem, NULL);
    vkDestroyDevice(dev, NULL);
    if (messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkDestroyDebugUtilsMessengerEXT");
        destroy(inst, messenger, NULL);
    }
    vkDestroyInstance(inst, NULL);
    if (validate) printf("validation messages: %d\n", validation_messages);
    return bad || validation_messages ? 1 : 0;
}
