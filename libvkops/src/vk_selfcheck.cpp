// vkops_context_self_check: the cooperative-matrix kernels run small problems on the caller's queue and are
// compared with a CPU reference before planning may use them (Python's ops/qlmm/selfcheck.py).
// Python forces each tile config; here every case is planned as the rule would plan it with the kernels
// verified, so the cases are shapes chosen to land on each auto tile (SMALL, LOW, MID staged transposed,
// FEW_TILES, LARGE, the 96-row WAVE tiles and the 80- and 112-row fits) and on the B-streaming kernel, with and without zero points, row- and column-major B;
// the split-K check repeats the few-tile shapes with a long K. A case passes as Python's does: every
// element within 1 of the reference and at least 99% equal (float32 requantization of random scales).
// The only libvkops call that allocates device memory and submits: its buffers, pool and command buffer
// are freed before it returns.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "api.hpp"
#include "vk.hpp"

namespace vkops {
namespace {

struct Case {
    u32 batches, M, K, N;
    DT a, b;
    bool zps, cols;
    u32 check_from = 0, check_step = 1;  // the rows compared: from check_from, every check_step-th (a large case's)
};

// Shapes by the rule's row thresholds (QlmmTuning: SMALL up to 32 rows, LOW to 64, MID to 256, then
// FEW_TILES or LARGE by tile count; the stream kernel from 2 to 16 rows). Batches of 2 fold into one GEMM.
const Case NONSPLIT[] = {
    {1, 30, 144, 96, DT::UINT8, DT::INT8, true, false},     {1, 30, 144, 96, DT::INT8, DT::INT8, false, false},
    {1, 40, 144, 96, DT::UINT8, DT::INT8, true, false},     {1, 40, 144, 96, DT::INT8, DT::UINT8, true, true},
    {2, 72, 144, 96, DT::INT8, DT::INT8, false, false},     {2, 72, 144, 96, DT::UINT8, DT::UINT8, true, false},
    {1, 300, 144, 96, DT::UINT8, DT::INT8, true, false},    {1, 2304, 64, 2048, DT::INT8, DT::INT8, false, false},
    {1, 2304, 64, 2048, DT::UINT8, DT::UINT8, true, false}, {1, 13, 1040, 144, DT::INT8, DT::INT8, false, false},
    {1, 15, 1040, 144, DT::UINT8, DT::UINT8, true, true},   {2, 72, 144, 96, DT::INT8, DT::INT8, false, true},
    {1, 300, 144, 96, DT::UINT8, DT::INT8, true, true},     {1, 2304, 64, 2048, DT::INT8, DT::INT8, false, true},
};
const Case SPLIT[] = {
    {1, 40, 2048, 96, DT::UINT8, DT::INT8, true, false}, {1, 30, 2048, 96, DT::INT8, DT::INT8, false, false},
    {1, 100, 4096, 96, DT::INT8, DT::UINT8, true, false}, {1, 13, 4096, 144, DT::INT8, DT::INT8, false, false},
    {1, 15, 4096, 144, DT::UINT8, DT::UINT8, true, true}, {1, 100, 4096, 96, DT::INT8, DT::INT8, false, true},
    {1, 40, 2048, 96, DT::UINT8, DT::INT8, true, true},
};
// The large tile's tail split (QlmmTuning.TAIL_SPLIT), cooperative matrices only (through the portable kernel it
// would take lavapipe half a minute): 272 tiles, 264 whole, the last 8 (in the raster: rows 2048-2175, columns
// 1024-2047) split 8 ways; every 8th row of that tile row compared. B is transposed first (BC_TRANSPOSE_MIN_M).
const Case TAIL[] = {{1, 2176, 4096, 2048, DT::INT8, DT::INT8, false, false, 2048, 8},
                     {1, 2176, 4096, 2048, DT::UINT8, DT::INT8, true, false, 2048, 8}};  // and with zero-point sums
// The 96-row tiles, cooperative matrices only (380 rows of 4096 columns make 128 of WAVE_CONFIG's tiles, one an SM:
// BC_WAVE_CONFIG there, B row-major without zero points (staged transposed); WAVE_FIT_CONFIGS' tiles one an SM: 300
// rows on 80, B row-major without zero points and column-major with them, 448 on 112, B row-major with zero points
// (staged transposed) and column-major without; MID_FIT_CONFIG's 64 x 128 tiles, one wave: 256 rows, B row-major
// without zero points, 224 column-major with them; 640 rows:
// WAVE_CONFIG two an SM, B column-major, and row-major with zero points and without (staged transposed);
// MID_WAVE_CONFIG: 160 rows, 128 tiles of 96 x 64, B column-major, row-major with zero points, and row-major without
// them, staged transposed in the large tile's split-K place: MID_WAVE_SPLIT_MAX_K).
const Case WAVE[] = {{1, 300, 64, 4096, DT::INT8, DT::INT8, false, false}, {1, 300, 64, 4096, DT::UINT8, DT::INT8, true, true},
                     {1, 380, 64, 4096, DT::INT8, DT::INT8, false, false}, {1, 448, 64, 4096, DT::UINT8, DT::INT8, true, false},
                     {1, 448, 64, 4096, DT::INT8, DT::INT8, false, true},  {1, 256, 64, 4096, DT::INT8, DT::INT8, false, false},
                     {1, 224, 64, 4096, DT::UINT8, DT::INT8, true, true},
                     {1, 640, 64, 4096, DT::INT8, DT::INT8, false, true},  {1, 640, 64, 4096, DT::INT8, DT::INT8, false, false},
                     {1, 640, 64, 4096, DT::UINT8, DT::INT8, true, false}, {1, 160, 64, 4096, DT::INT8, DT::INT8, false, true},
                     {1, 160, 64, 4096, DT::UINT8, DT::INT8, true, false}, {1, 160, 64, 4096, DT::INT8, DT::INT8, false, false}};

struct Rng {
    u64 s;
    u32 next() { s = s * 6364136223846793005ull + 1442695040888963407ull; return (u32)(s >> 33); }
    int in(int lo, int hi) { return lo + (int)(next() % (u32)(hi - lo + 1)); }
};

// Host-visible memory for the self-check's one buffer.
u32 host_memory_type(vkops_context *c, u32 bits) {
    VkPhysicalDeviceMemoryProperties mp;
    c->vk.vkGetPhysicalDeviceMemoryProperties(c->physical_device, &mp);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (u32 i = 0; i < mp.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    throw Error(VKOPS_ERROR_UNSUPPORTED, "vkops_context_self_check: no host-visible, coherent memory type");
}

// Everything one case needs on the device, released by the destructor.
struct Scratch {
    vkops_context *c;
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    unsigned char *host = nullptr;
    vkops_operator *op = nullptr;
    explicit Scratch(vkops_context *ctx) : c(ctx) {}
    ~Scratch() {
        if (op) vkops_operator_destroy(op);
        if (host) c->vk.vkUnmapMemory(c->device, mem);
        if (buf) c->vk.vkDestroyBuffer(c->device, buf, c->allocator);
        if (mem) c->vk.vkFreeMemory(c->device, mem, c->allocator);
    }
    void alloc(u64 bytes) {
        VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, nullptr, 0, bytes,
                                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                 VK_SHARING_MODE_EXCLUSIVE, 0, nullptr};
        check_vk("vkCreateBuffer", c->vk.vkCreateBuffer(c->device, &bi, c->allocator, &buf));
        VkMemoryRequirements req;
        c->vk.vkGetBufferMemoryRequirements(c->device, buf, &req);
        VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, req.size,
                                   host_memory_type(c, req.memoryTypeBits)};
        check_vk("vkAllocateMemory", c->vk.vkAllocateMemory(c->device, &ai, c->allocator, &mem));
        check_vk("vkBindBufferMemory", c->vk.vkBindBufferMemory(c->device, buf, mem, 0));
        check_vk("vkMapMemory", c->vk.vkMapMemory(c->device, mem, 0, VK_WHOLE_SIZE, 0, (void **)&host));
        std::memset(host, 0, bytes);
    }
};

int qmin(DT t) { return t == DT::INT8 ? -128 : 0; }
int qmax(DT t) { return t == DT::INT8 ? 127 : 255; }
int qval(const unsigned char *p, DT t) { return t == DT::INT8 ? (int)(signed char)*p : (int)*p; }

// Runs one case through the rule under `lim`; false when the result is off. Adds the kernels it ran.
bool run_case(vkops_context *c, VkQueue queue, VkCommandBuffer cmd, const Limits &lim, const Case &k, Rng &rng,
              std::vector<std::string> &ran) {
    const u32 B = k.batches, M = k.M, K = k.K, N = k.N;
    u32 sa_s[4] = {1, 1, M, 1}, sb_s[4] = {1, 1, 1, N}, one[4] = {1, 1, 1, 1};
    u32 a_s[4] = {B, 1, M, K}, b_s[4] = {1, 1, K, N}, o_s[4] = {B, 1, M, N}, b_cols[4] = {0, 0, 1, K};
    auto dml = [](DT t) { return t == DT::INT8 ? VKOPS_TENSOR_DATA_TYPE_INT8 : t == DT::UINT8 ? VKOPS_TENSOR_DATA_TYPE_UINT8
                                                                                               : VKOPS_TENSOR_DATA_TYPE_FLOAT32; };
    vkops_tensor_desc ta = {dml(k.a), 0, 4, a_s, nullptr, 0, 0}, tb = {dml(k.b), 0, 4, b_s, k.cols ? b_cols : nullptr, 0, 0};
    vkops_tensor_desc tsa = {VKOPS_TENSOR_DATA_TYPE_FLOAT32, 0, 4, sa_s, nullptr, 0, 0};
    vkops_tensor_desc tsb = {VKOPS_TENSOR_DATA_TYPE_FLOAT32, 0, 4, sb_s, nullptr, 0, 0};
    vkops_tensor_desc tso = {VKOPS_TENSOR_DATA_TYPE_FLOAT32, 0, 4, one, nullptr, 0, 0};
    vkops_tensor_desc tza = {dml(k.a), 0, 4, sa_s, nullptr, 0, 0}, tzb = {dml(k.b), 0, 4, sb_s, nullptr, 0, 0};
    vkops_tensor_desc tzo = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, one, nullptr, 0, 0};
    vkops_tensor_desc to = {VKOPS_TENSOR_DATA_TYPE_INT8, 0, 4, o_s, nullptr, 0, 0};
    vkops_quantized_linear_matrix_multiply_desc q = {&ta, &tsa, k.zps ? &tza : nullptr, &tb, &tsb, k.zps ? &tzb : nullptr,
                                                     &tso, &tzo, &to};
    vkops_operator_desc d = {VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY, &q};
    Scratch s(c);
    s.op = compile_operator(c, &d, lim);
    const vkops_operator_properties &pr = s.op->props;
    for (auto &x : s.op->plan.dispatches) ran.push_back(x.kernel);
    // Layout: the inputs in binding order, the output, temporary, persistent; each aligned.
    u64 al = pr.required_offset_alignment, at = 0;
    std::vector<vkops_binding> in(pr.input_count), out(pr.output_count);
    std::vector<u64> in_at(pr.input_count);
    for (u32 i = 0; i < pr.input_count; i++) { in_at[i] = at; at = (at + pr.input_binding_size[i] + al - 1) / al * al; }
    u64 out_at = at;
    at = (at + pr.output_binding_size[0] + al - 1) / al * al;
    u64 tmp_at = at;
    at = (at + pr.temporary_size + al - 1) / al * al;
    u64 per_at = at;
    at += pr.persistent_size + 4;
    s.alloc(at);
    for (u32 i = 0; i < pr.input_count; i++) in[i] = {s.buf, in_at[i], pr.input_binding_size[i]};
    out[0] = {s.buf, out_at, pr.output_binding_size[0]};
    vkops_binding tmp = {s.buf, tmp_at, pr.temporary_size}, per = {s.buf, per_at, pr.persistent_size};
    // Inputs in descriptor order (absent zero points left out): a, sa, [za], b, sb, [zb], so, zo.
    unsigned char *h = s.host;
    int slot = 0;
    unsigned char *pa = h + in_at[slot++], *psa = h + in_at[slot++], *pza = k.zps ? h + in_at[slot++] : nullptr;
    unsigned char *pb = h + in_at[slot++], *psb = h + in_at[slot++], *pzb = k.zps ? h + in_at[slot++] : nullptr;
    unsigned char *pso = h + in_at[slot++], *pzo = h + in_at[slot++];
    for (u64 i = 0; i < (u64)B * M * K; i++) pa[i] = (unsigned char)rng.in(qmin(k.a), qmax(k.a));
    for (u64 i = 0; i < (u64)K * N; i++) pb[i] = (unsigned char)rng.in(qmin(k.b), qmax(k.b));  // N x K when cols
    std::vector<float> sa(M), sb(N);
    for (auto &x : sa) x = 0.01f + 0.02f * (float)(rng.next() % 1000) / 1000.0f;
    for (auto &x : sb) x = 0.01f + 0.02f * (float)(rng.next() % 1000) / 1000.0f;
    std::memcpy(psa, sa.data(), 4 * M);
    std::memcpy(psb, sb.data(), 4 * N);
    float so = 2.0f;
    std::memcpy(pso, &so, 4);
    *pzo = 7;
    if (k.zps) {
        for (u32 i = 0; i < M; i++) pza[i] = (unsigned char)rng.in(0, 99);
        for (u32 i = 0; i < N; i++) pzb[i] = (unsigned char)rng.in(0, 99);
    }
    // Record: persistent set-up, the operator, its outputs to the host.
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                   VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
    check_vk("vkBeginCommandBuffer", c->vk.vkBeginCommandBuffer(cmd, &bi));
    if (pr.persistent_size) {
        vkops_status st = vkops_operator_record_initialize(s.op, cmd, &per);
        if (st != VKOPS_SUCCESS) throw Error(st, last_error);
        VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
        c->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                                   0, nullptr, 0, nullptr);
    }
    vkops_record_info ri = {in.data(), out.data(), pr.temporary_size ? &tmp : nullptr, pr.persistent_size ? &per : nullptr,
                            nullptr};
    vkops_status st = vkops_operator_record(s.op, cmd, &ri);
    if (st != VKOPS_SUCCESS) throw Error(st, last_error);
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT};
    c->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                               0, nullptr);
    check_vk("vkEndCommandBuffer", c->vk.vkEndCommandBuffer(cmd));
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, nullptr, 0, nullptr, nullptr, 1, &cmd, 0, nullptr};
    check_vk("vkQueueSubmit", c->vk.vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE));
    check_vk("vkQueueWaitIdle", c->vk.vkQueueWaitIdle(queue));
    // The reference: int64 sums, float64 scaling, round half to even, + zo, saturate to int8.
    const signed char *got = (const signed char *)(h + out_at);
    u64 equal = 0, total = 0;
    for (u32 bt = 0; bt < B; bt++)
        for (u32 m = k.check_from; m < M; m += k.check_step)
            for (u32 n = 0; n < N; n++, total++) {
                i64 acc = 0, za = k.zps ? qval(pza + m, k.a) : 0, zb = k.zps ? qval(pzb + n, k.b) : 0;
                const unsigned char *ar = pa + ((u64)bt * M + m) * K;
                for (u32 kk = 0; kk < K; kk++) {
                    const unsigned char *bp = k.cols ? pb + (u64)n * K + kk : pb + (u64)kk * N + n;
                    acc += (qval(ar + kk, k.a) - za) * (qval(bp, k.b) - zb);
                }
                double y = std::nearbyint((double)acc * ((double)sa[m] * (double)sb[n] / (double)so)) + 7.0;
                int want = (int)(y < -128 ? -128 : y > 127 ? 127 : y);
                int diff = std::abs(want - (int)got[((u64)bt * M + m) * N + n]);
                if (diff > 1) return false;
                equal += diff == 0;
            }
    return equal * 100 >= total * 99;
}

// Runs `cases` under `lim`; true when all pass and, for each of `needles`, some dispatch ran a kernel whose
// name holds it (the check ran what it vouches for).
bool check(vkops_context *c, VkQueue queue, VkCommandBuffer cmd, const Limits &lim, const Case *cases, size_t n,
           std::initializer_list<const char *> needles) {
    Rng rng{1234};
    std::vector<std::string> ran;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) ok = run_case(c, queue, cmd, lim, cases[i], rng, ran);
    for (const char *needle : needles) {
        bool exercised = false;
        for (auto &k : ran) exercised |= k.find(needle) != std::string::npos;
        ok &= exercised;
    }
    return ok;
}

}  // namespace
}  // namespace vkops

using namespace vkops;

extern "C" vkops_status vkops_context_self_check(vkops_context *c, VkQueue queue) {
    return guard([&] {
        if (!c) fail("vkops_context_self_check: ctx must not be NULL");
        if (!queue) fail("vkops_context_self_check: queue must not be VK_NULL_HANDLE");
        // Only the cooperative-matrix kernels have a self-check. VKOPS_SELF_CHECK_PORTABLE=1 (tests on devices
        // without them) runs its cases through the kernels the device has, and fails if any is off.
        const char *portable = std::getenv("VKOPS_SELF_CHECK_PORTABLE");
        bool test_hook = !c->limits.cooperative_matrix && portable && !std::strcmp(portable, "1");
        if (!c->limits.cooperative_matrix && !test_hook) return;
        VkCommandPool pool = VK_NULL_HANDLE;
        VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                       VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, c->queue_family_index};
        check_vk("vkCreateCommandPool", c->vk.vkCreateCommandPool(c->device, &pci, c->allocator, &pool));
        struct PoolGuard { vkops_context *c; VkCommandPool p; ~PoolGuard() { c->vk.vkDestroyCommandPool(c->device, p, c->allocator); } } g{c, pool};
        VkCommandBuffer cmd;
        VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, pool,
                                           VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        check_vk("vkAllocateCommandBuffers", c->vk.vkAllocateCommandBuffers(c->device, &cai, &cmd));
        Limits lim = c->limits;
        if (test_hook) {
            if (!check(c, queue, cmd, lim, NONSPLIT, sizeof NONSPLIT / sizeof *NONSPLIT, {"qlmm"}) ||
                !check(c, queue, cmd, lim, SPLIT, sizeof SPLIT / sizeof *SPLIT, {"qlmm"}))
                fail("vkops_context_self_check (VKOPS_SELF_CHECK_PORTABLE=1): a case differs from the CPU reference");
            return;
        }
        lim.coopmat_verified = true;
        lim.coopmat_split_verified = false;
        bool ok = check(c, queue, cmd, lim, NONSPLIT, sizeof NONSPLIT / sizeof *NONSPLIT,
                        {"qlmm_coopmat", "qlmm_coopmat_bt", "qlmm_coopmat_zp_bt", "qlmm_stream", "qlmm_coopmat_bc",
                         "qlmm_coopmat_zp_bc", "qlmm_transpose"}) &&
                  check(c, queue, cmd, lim, WAVE, sizeof WAVE / sizeof *WAVE,
                        {"qlmm_coopmat", "qlmm_coopmat_zp_bc", "qlmm_coopmat_bc", "qlmm_coopmat_zp"});
        bool split = false;
        if (ok) {
            lim.coopmat_split_verified = true;
            split = check(c, queue, cmd, lim, SPLIT, sizeof SPLIT / sizeof *SPLIT,
                          {"qlmm_coopmat", "qlmm_stream", "_sk", "_bc_sk", "_zp_bt_sk"}) &&
                    check(c, queue, cmd, lim, TAIL, sizeof TAIL / sizeof *TAIL,
                          {"qlmm_transpose", "qlmm_coopmat_bc_sk", "qlmm_coopmat_zp_bc_sk"});
        }
        std::lock_guard<std::mutex> lock(c->mutex);
        c->limits.coopmat_verified = ok;
        c->limits.coopmat_split_verified = ok && split;
    });
}
