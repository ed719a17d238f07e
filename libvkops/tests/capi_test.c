/* libvkops' C API test (C99): a host that owns its instance, device, queue, command buffers and buffers
 * runs operators through libvkops, under the Khronos validation layer with synchronization validation.
 *
 *   make capi-test                       (builds libvkops and this test, runs it)
 *   build/libvkops/capi_test [--verbose] [--no-validation]
 *
 * Per case (CASES below: SLICE1, TOP_K1 and QUANTIZED_LINEAR_MATRIX_MULTIPLY rows) and per descriptor
 * mode (push descriptors, and VKOPS_CONTEXT_NO_PUSH_DESCRIPTORS with sets allocated here): compile, record
 * the persistent set-up and the operator into one command buffer, run it, compare the outputs with a CPU
 * reference, check that the bytes after each binding's size are untouched (the 8/16-bit padding
 * contract), that bad bindings are refused with VKOPS_ERROR_VALIDATION and a message, and that recording
 * allocated nothing through the context's VkAllocationCallbacks. Exits non-zero on any failure (a case
 * that fails to compile included) and on any validation-layer warning or error, and unless some TOP_K1
 * case ran with several dispatches, barriers, temporary and persistent memory, some ran rows in several
 * chunks (record_initialize's zeroed counters and the scratch layout in use) and some by the GRADIX path.
 */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "vkops.h"

static int verbose, failures, vl_messages;
static int topk_multi;   /* TOP_K1 cases run with > 1 dispatch, barriers, temporary and persistent memory */
static int topk_chunked; /* TOP_K1 cases run with rows in several chunks (scratch, counters zeroed by record_initialize) */
static int topk_gradix;  /* TOP_K1 cases run by the GRADIX path (digit passes, compaction, sort of the survivors) */
#define FAIL(...) (printf("FAIL: " __VA_ARGS__), printf("\n"), failures++)
#define VK(call) do { VkResult r_ = (call); if (r_ != VK_SUCCESS) { printf("FATAL: %s = %d\n", #call, (int)r_); exit(2); } } while (0)

/* ------------------------------------------------------------------ allocation counting */
static long n_alloc, n_free;
static void *VKAPI_PTR count_alloc(void *u, size_t size, size_t align, VkSystemAllocationScope s) {
    void *p = NULL;
    (void)u; (void)s;
    n_alloc++;
    return posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1) ? NULL : p;
}
static void VKAPI_PTR count_free(void *u, void *p) { (void)u; if (p) n_free++; free(p); }
static void *VKAPI_PTR count_realloc(void *u, void *old, size_t size, size_t align, VkSystemAllocationScope s) {
    void *p;
    if (!old) return count_alloc(u, size, align, s);
    if (!size) { count_free(u, old); return NULL; }
    p = count_alloc(u, size, align, s);
    if (p) { memcpy(p, old, size); /* callers only grow here; lavapipe never reallocates pipelines */ count_free(u, old); }
    return p;
}
static const VkAllocationCallbacks COUNTING = {NULL, count_alloc, count_realloc, count_free, NULL, NULL};

/* ------------------------------------------------------------------ cases */
#define MAXT 8
typedef struct {
    vkops_tensor_desc t;
    uint32_t sizes[VKOPS_MAX_DIMS], strides[VKOPS_MAX_DIMS];
    unsigned char *data; /* inputs: contents; outputs: expected bytes (packed) */
    size_t bytes;        /* tensor bytes (span x element size) */
} Tensor;
typedef struct {
    vkops_operator_desc op;
    vkops_slice1_desc slice;
    vkops_top_k1_desc topk;
    vkops_quantized_linear_matrix_multiply_desc qlmm;
    uint32_t offsets[VKOPS_MAX_DIMS], wsizes[VKOPS_MAX_DIMS];
    int32_t wstrides[VKOPS_MAX_DIMS];
    Tensor in[MAXT], out[MAXT];
    int n_in, n_out;
} Case;
typedef struct { const char *name; void (*make)(Case *); } CaseRow;

static int esize(vkops_tensor_data_type t) {
    switch (t) {
    case VKOPS_TENSOR_DATA_TYPE_UINT8: case VKOPS_TENSOR_DATA_TYPE_INT8: return 1;
    case VKOPS_TENSOR_DATA_TYPE_UINT16: case VKOPS_TENSOR_DATA_TYPE_INT16: case VKOPS_TENSOR_DATA_TYPE_FLOAT16: return 2;
    default: return 4;
    }
}

/* A tensor of `rank` sizes (strides NULL = packed); its span's bytes allocated, filled with a pattern. */
static void tensor(Tensor *T, vkops_tensor_data_type dt, int rank, const uint32_t *sizes, const uint32_t *strides) {
    uint64_t span = 1, packed = 1;
    int i;
    memset(T, 0, sizeof *T);
    T->t.data_type = dt;
    T->t.dimension_count = (uint32_t)rank;
    T->t.sizes = T->sizes;
    for (i = rank - 1; i >= 0; i--) {
        T->sizes[i] = sizes[i];
        T->strides[i] = strides ? strides[i] : (uint32_t)packed;
        span += (uint64_t)(sizes[i] - 1) * T->strides[i];
        packed *= sizes[i];
    }
    T->t.strides = strides ? T->strides : NULL;
    T->bytes = (size_t)span * (size_t)esize(dt);
    T->data = calloc(T->bytes, 1);
    for (i = 0; i < (int)T->bytes; i++) T->data[i] = (unsigned char)(i * 37 + 11);
}

/* SLICE1's reference: out[o] = in[start + stride * o] per dimension (start = offset, or its window's
 * last element for a negative stride), over the input's element strides. */
static void slice1_case(Case *C, vkops_tensor_data_type dt, int rank, const uint32_t *sizes, const uint32_t *in_strides,
                        const uint32_t *offs, const uint32_t *wsz, const int32_t *wst) {
    uint32_t osz[VKOPS_MAX_DIMS], idx[VKOPS_MAX_DIMS] = {0};
    uint64_t n = 1, o;
    int i, e = esize(dt);
    tensor(&C->in[0], dt, rank, sizes, in_strides);
    for (i = 0; i < rank; i++) {
        osz[i] = 1 + (wsz[i] - 1) / (uint32_t)abs(wst[i]);
        n *= osz[i];
        C->offsets[i] = offs[i]; C->wsizes[i] = wsz[i]; C->wstrides[i] = wst[i];
    }
    tensor(&C->out[0], dt, rank, osz, NULL);
    for (o = 0; o < n; o++) {
        uint64_t at = 0;
        for (i = 0; i < rank; i++) {
            int64_t start = offs[i] + (wst[i] < 0 ? wsz[i] - 1 : 0);
            at += (uint64_t)(start + (int64_t)wst[i] * idx[i]) * C->in[0].strides[i];
        }
        memcpy(C->out[0].data + o * e, C->in[0].data + at * e, (size_t)e);
        for (i = rank - 1; i >= 0 && ++idx[i] == osz[i]; i--) idx[i] = 0;
    }
    C->n_in = C->n_out = 1;
    C->slice = (vkops_slice1_desc){&C->in[0].t, &C->out[0].t, (uint32_t)rank, C->offsets, C->wsizes, C->wstrides};
    C->op = (vkops_operator_desc){VKOPS_OPERATOR_SLICE1, &C->slice};
}

static void slice_u8(Case *C) {   /* 8-bit, negative strides, 6 output bytes (binding 8: 2 padding bytes) */
    static const uint32_t s[] = {5, 9}, o[] = {0, 2}, w[] = {5, 6};
    static const int32_t st[] = {-2, -3};
    slice1_case(C, VKOPS_TENSOR_DATA_TYPE_UINT8, 2, s, NULL, o, w, st);
}
static void slice_i8_strided(Case *C) {  /* 8-bit, strided input, odd output count */
    static const uint32_t s[] = {3, 4, 5}, ist[] = {41, 10, 2}, o[] = {0, 1, 0}, w[] = {3, 3, 5};
    static const int32_t st[] = {1, -1, -2};
    slice1_case(C, VKOPS_TENSOR_DATA_TYPE_INT8, 3, s, ist, o, w, st);
}
static void slice_f16(Case *C) {  /* 16-bit, negative strides, 3 output elements (binding 8: 2 padding bytes) */
    static const uint32_t s[] = {4, 6, 3}, o[] = {1, 0, 2}, w[] = {3, 6, 1};
    static const int32_t st[] = {-3, -2, 1};
    slice1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT16, 3, s, NULL, o, w, st);
}
static void slice_i16_rows(Case *C) {  /* 16-bit rows wide enough for the packed paths */
    static const uint32_t s[] = {6, 70}, o[] = {1, 3}, w[] = {5, 61};
    static const int32_t st[] = {-1, 1};
    slice1_case(C, VKOPS_TENSOR_DATA_TYPE_INT16, 2, s, NULL, o, w, st);
}
static void slice_f32(Case *C) {
    static const uint32_t s[] = {2, 3, 4, 5}, o[] = {0, 1, 1, 0}, w[] = {2, 2, 3, 5};
    static const int32_t st[] = {1, -1, 2, -2};
    slice1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 4, s, NULL, o, w, st);
}

/* ------------------------------------------------------------------ element access, values */
static uint32_t rng_state = 12345u;
static uint32_t rnd(void) { rng_state = rng_state * 1664525u + 1013904223u; return rng_state >> 8; }

static uint16_t to_half(double v) {  /* exact for the values used here (integers, halves, inf, NaN, -0) */
    uint16_t sign = (uint16_t)(signbit(v) ? 0x8000 : 0);
    int e;
    double m;
    if (isnan(v)) return 0x7e00;
    if (isinf(v)) return (uint16_t)(sign | 0x7c00);
    if (v == 0) return sign;
    m = frexp(fabs(v), &e);  /* v = m * 2^e, m in [0.5, 1) */
    return (uint16_t)(sign | (uint16_t)((e + 14) << 10) | (uint16_t)((uint32_t)ldexp(m, 11) & 0x3ff));
}
static double from_half(uint16_t h) {
    int e = (h >> 10) & 0x1f;
    double m = h & 0x3ff, v;
    if (e == 0x1f) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp(m, -24);
    else v = ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* The element at element offset `at`, as a double (NaN, infinities and -0.0 kept). */
static double get(const Tensor *T, uint64_t at) {
    const unsigned char *p = T->data + at * (uint64_t)esize(T->t.data_type);
    float f; uint32_t u32; int32_t i32; uint16_t u16; int16_t i16;
    switch (T->t.data_type) {
    case VKOPS_TENSOR_DATA_TYPE_FLOAT32: memcpy(&f, p, 4); return f;
    case VKOPS_TENSOR_DATA_TYPE_FLOAT16: memcpy(&u16, p, 2); return from_half(u16);
    case VKOPS_TENSOR_DATA_TYPE_UINT32: memcpy(&u32, p, 4); return u32;
    case VKOPS_TENSOR_DATA_TYPE_INT32: memcpy(&i32, p, 4); return i32;
    case VKOPS_TENSOR_DATA_TYPE_UINT16: memcpy(&u16, p, 2); return u16;
    case VKOPS_TENSOR_DATA_TYPE_INT16: memcpy(&i16, p, 2); return i16;
    case VKOPS_TENSOR_DATA_TYPE_UINT8: return *p;
    case VKOPS_TENSOR_DATA_TYPE_INT8: return (int8_t)*p;
    default: return 0;
    }
}
static void put(Tensor *T, uint64_t at, double v) {
    unsigned char *p = T->data + at * (uint64_t)esize(T->t.data_type);
    float f = (float)v; uint32_t u32 = (uint32_t)v; int32_t i32 = (int32_t)v; uint16_t u16; int16_t i16 = (int16_t)v;
    int8_t i8 = (int8_t)v;
    switch (T->t.data_type) {
    case VKOPS_TENSOR_DATA_TYPE_FLOAT32: memcpy(p, &f, 4); break;
    case VKOPS_TENSOR_DATA_TYPE_FLOAT16: u16 = to_half(v); memcpy(p, &u16, 2); break;
    case VKOPS_TENSOR_DATA_TYPE_UINT32: memcpy(p, &u32, 4); break;
    case VKOPS_TENSOR_DATA_TYPE_INT32: memcpy(p, &i32, 4); break;
    case VKOPS_TENSOR_DATA_TYPE_UINT16: u16 = (uint16_t)v; memcpy(p, &u16, 2); break;
    case VKOPS_TENSOR_DATA_TYPE_INT16: memcpy(p, &i16, 2); break;
    case VKOPS_TENSOR_DATA_TYPE_UINT8: *p = (unsigned char)v; break;
    case VKOPS_TENSOR_DATA_TYPE_INT8: memcpy(p, &i8, 1); break;
    default: break;
    }
}

/* ------------------------------------------------------------------ TOP_K1 */
/* The reference (vkops/reference.py top_k1): one total order, NaN above +inf, -0.0 == 0.0, ties (and NaNs)
 * in ascending index order in both directions; DECREASING takes the K largest, INCREASING the K smallest
 * (NaN last, as NumPy's stable sort). The values are the input's bytes at the chosen indices. */
typedef struct { double v; int nan; uint32_t i; } Key;
static int topk_decreasing;
static int key_cmp(const void *pa, const void *pb) {
    const Key *a = pa, *b = pb;
    int c = 0;  /* > 0: a ranks above b */
    if (a->nan != b->nan) c = a->nan ? 1 : -1;
    else if (!a->nan && a->v != b->v) c = a->v > b->v ? 1 : -1;
    if (c) return topk_decreasing ? -c : c;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The value of element j of row r (few distinct values: ties). */
typedef double (*ValueFn)(uint64_t r, uint64_t j);

/* The element offset of packed index `n` in T (over its sizes and element strides). */
static uint64_t at_of(const Tensor *T, uint64_t n) {
    uint64_t at = 0;
    int d;
    for (d = (int)T->t.dimension_count - 1; d >= 0; d--) {
        at += (n % T->sizes[d]) * T->strides[d];
        n /= T->sizes[d];
    }
    return at;
}

static void top_k1_case(Case *C, vkops_tensor_data_type dt, int rank, const uint32_t *sizes, const uint32_t *in_strides,
                        uint32_t axis, uint32_t k, vkops_axis_direction dir, ValueFn value) {
    uint32_t osz[VKOPS_MAX_DIMS];
    uint64_t outer = 1, inner = 1, L = sizes[axis], o, i, l, j;
    int d, e = esize(dt);
    Key *keys = malloc(L * sizeof *keys);
    for (d = 0; d < rank; d++) {
        osz[d] = (uint32_t)d == axis ? k : sizes[d];
        if ((uint32_t)d < axis) outer *= sizes[d];
        if ((uint32_t)d > axis) inner *= sizes[d];
    }
    tensor(&C->in[0], dt, rank, sizes, in_strides);
    tensor(&C->out[0], dt, rank, osz, NULL);
    tensor(&C->out[1], VKOPS_TENSOR_DATA_TYPE_UINT32, rank, osz, NULL);
    for (o = 0; o < outer; o++)
        for (i = 0; i < inner; i++) {
            for (l = 0; l < L; l++) put(&C->in[0], at_of(&C->in[0], (o * L + l) * inner + i), value(o * inner + i, l));
            for (l = 0; l < L; l++) {
                keys[l].v = get(&C->in[0], at_of(&C->in[0], (o * L + l) * inner + i));
                keys[l].nan = isnan(keys[l].v) != 0;
                keys[l].i = (uint32_t)l;
            }
            topk_decreasing = dir == VKOPS_AXIS_DIRECTION_DECREASING;
            qsort(keys, (size_t)L, sizeof *keys, key_cmp);
            for (j = 0; j < k; j++) {
                uint64_t at = (o * k + j) * inner + i;
                memcpy(C->out[0].data + at * e, C->in[0].data + at_of(&C->in[0], (o * L + keys[j].i) * inner + i) * e,
                       (size_t)e);
                memcpy(C->out[1].data + at * 4, &keys[j].i, 4);
            }
        }
    free(keys);
    C->n_in = 1;
    C->n_out = 2;
    C->topk = (vkops_top_k1_desc){&C->in[0].t, &C->out[0].t, &C->out[1].t, axis, k, dir};
    C->op = (vkops_operator_desc){VKOPS_OPERATOR_TOP_K1, &C->topk};
}

/* Floats: 13 distinct finite values (many ties), and NaN, +-inf, -0.0 / 0.0 sprinkled in. */
static double float_ties(uint64_t r, uint64_t j) {
    uint64_t h = (j * 7 + r * 3) % 101;
    if (h == 5) return NAN;
    if (h == 17) return INFINITY;
    if (h == 29) return -INFINITY;
    if (h == 41) return -0.0;
    if (h == 53) return 0.0;
    return (double)((int)((j * 5 + r) % 13) - 6) * 0.5;
}
static double float_wide(uint64_t r, uint64_t j) {  /* 4096 values in ~500 distinct ones: ties everywhere */
    (void)r; (void)j;
    return (double)((int)(rnd() % 500) - 250);
}
static double int8_values(uint64_t r, uint64_t j) { (void)r; (void)j; return (double)((int)(rnd() % 256) - 128); }
static double int8_ties(uint64_t r, uint64_t j) {  /* int8: few values, 127 and -128 included */
    static const double V[] = {-128, -3, 0, 5, 5, 99, 127, 127};
    (void)r; (void)j;
    return V[rnd() % 8];
}
static double uint16_values(uint64_t r, uint64_t j) {
    static const double V[] = {0, 1, 7, 300, 300, 40000, 65535, 65535, 12};
    (void)r; (void)j;
    return V[rnd() % 9];
}

static void topk_f32_1023_k1(Case *C) {
    static const uint32_t s[] = {5, 1023};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 1, VKOPS_AXIS_DIRECTION_DECREASING, float_ties);
}
static void topk_f32_1024_k50(Case *C) {
    static const uint32_t s[] = {4, 1024};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 50, VKOPS_AXIS_DIRECTION_DECREASING, float_ties);
}
static void topk_f32_1025_k512(Case *C) {
    static const uint32_t s[] = {3, 1025};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 512, VKOPS_AXIS_DIRECTION_DECREASING, float_ties);
}
static void topk_f32_1024_k512_inc(Case *C) {
    static const uint32_t s[] = {2, 1024};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 512, VKOPS_AXIS_DIRECTION_INCREASING, float_ties);
}
static void topk_f32_1025_k50_inc(Case *C) {
    static const uint32_t s[] = {3, 1025};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 50, VKOPS_AXIS_DIRECTION_INCREASING, float_ties);
}
static void topk_i8_chunked(Case *C) {
    static const uint32_t s[] = {64, 4097};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_INT8, 2, s, NULL, 1, 50, VKOPS_AXIS_DIRECTION_DECREASING, int8_values);
}
static void topk_i8_long(Case *C) {  /* rows long enough to be chunked on a CPU device too (4 chunks of 57344) */
    static const uint32_t s[] = {2, 200003};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_INT8, 2, s, NULL, 1, 50, VKOPS_AXIS_DIRECTION_DECREASING, int8_values);
}
/* 8 dimensions whose strides (a one-element gap after each) fold into 7 others, more than the kernels walk
 * (MAX_OTHER_DIMS 6): a SLICE1 packs the input into temporary memory first, then TOP_K1 reads it. */
static void topk_f32_8d_strided(Case *C) {
    static const uint32_t s[] = {2, 2, 2, 1500, 2, 2, 2, 2};
    uint32_t st[8];
    int d;
    st[7] = 1;
    for (d = 6; d >= 0; d--) st[d] = st[d + 1] * s[d + 1] + 1;
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 8, s, st, 3, 50, VKOPS_AXIS_DIRECTION_DECREASING, float_ties);
}
static void topk_i8_ties_inc(Case *C) {
    static const uint32_t s[] = {3, 4097};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_INT8, 2, s, NULL, 1, 50, VKOPS_AXIS_DIRECTION_INCREASING, int8_ties);
}
static void topk_u16_axis0(Case *C) {
    static const uint32_t s[] = {300, 3, 5};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_UINT16, 3, s, NULL, 0, 20, VKOPS_AXIS_DIRECTION_DECREASING, uint16_values);
}
static void topk_f16_inc(Case *C) {
    static const uint32_t s[] = {5, 777};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT16, 2, s, NULL, 1, 33, VKOPS_AXIS_DIRECTION_INCREASING, float_ties);
}
static void topk_f32_sort(Case *C) {
    static const uint32_t s[] = {1, 4096};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 2000, VKOPS_AXIS_DIRECTION_DECREASING, float_wide);
}
/* GRADIX (TopK1Tuning: pow2(K) >= GRADIX_MIN_KP on <= GRADIX_FEW_SEQ rows of >= GRADIX_FEW_MIN_L, or K >=
 * GRADIX_MIN_K on rows of >= GRADIX_MIN_L): rows in several chunks, ties of the K-th key across them. */
static void topk_f32_gradix(Case *C) {
    static const uint32_t s[] = {2, 65536};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 2, s, NULL, 1, 2048, VKOPS_AXIS_DIRECTION_DECREASING, float_ties);
}
static void topk_i8_gradix_inc(Case *C) {
    static const uint32_t s[] = {3, 16384};
    top_k1_case(C, VKOPS_TENSOR_DATA_TYPE_INT8, 2, s, NULL, 1, 4000, VKOPS_AXIS_DIRECTION_INCREASING, int8_ties);
}

/* ------------------------------------------------------------------ QUANTIZED_LINEAR_MATRIX_MULTIPLY */
/* The reference (vkops/reference.py quantized_linear_matmul): int64 sum of (a - za)(b - zb), times
 * (double)sa * sb / so of its element (per tensor, per row of a / the output, per column of b), rounded
 * half to even (nearbyint), + zo, saturated to the output type. Scales are powers of two, so a float32
 * computation rounds the same: the outputs must match exactly. */
enum { PER_TENSOR = 1, PER_AXIS = 2 };  /* a scale / zero point: absent (0, zero points only), {1,1,1,1}, per row/column */
typedef struct {
    vkops_tensor_data_type a, b, out;
    uint32_t asz[4], bsz[4];
    const uint32_t *bstrides;  /* NULL: packed */
    int sa, za, sb, zb, so, zo;
} QCase;

static double pow2_scale(int lo, int hi) { return ldexp(1.0, lo + (int)(rnd() % (uint32_t)(hi - lo + 1))); }
static double quant_value(vkops_tensor_data_type dt) {
    return dt == VKOPS_TENSOR_DATA_TYPE_INT8 ? (double)((int)(rnd() % 256) - 128) : (double)(rnd() % 256);
}

/* An optional per-tensor / per-row ({1,1,M,1}) / per-column ({1,1,1,N}) tensor as input n; -1 when absent. */
static int q_param(Case *C, int mode, vkops_tensor_data_type dt, int row, uint32_t n, int lo, int hi) {
    uint32_t s[4] = {1, 1, 1, 1}, i;
    Tensor *T;
    if (!mode) return -1;
    if (mode == PER_AXIS) s[row ? 2 : 3] = n;
    T = &C->in[C->n_in];
    tensor(T, dt, 4, s, NULL);
    for (i = 0; i < (mode == PER_AXIS ? n : 1); i++)
        put(T, i, dt == VKOPS_TENSOR_DATA_TYPE_FLOAT32 ? pow2_scale(lo, hi) : quant_value(dt));
    return C->n_in++;
}
static double q_at(const Case *C, int t, uint32_t m) {  /* a parameter's value for row / column m */
    if (t < 0) return 0;
    return get(&C->in[t], C->in[t].sizes[2] * C->in[t].sizes[3] > 1 ? m : 0);
}

static void qlmm_case(Case *C, const QCase *q) {
    uint32_t M = q->asz[2], K = q->asz[3], N = q->bsz[3], osz[4], b0, c0, m, n, k;
    int ia, isa, iza, ib, isb, izb, iso, izo;
    double lo = q->out == VKOPS_TENSOR_DATA_TYPE_INT8 ? -128 : 0, hi = q->out == VKOPS_TENSOR_DATA_TYPE_INT8 ? 127 : 255;
    uint64_t i;
    osz[0] = q->asz[0] > q->bsz[0] ? q->asz[0] : q->bsz[0];
    osz[1] = q->asz[1] > q->bsz[1] ? q->asz[1] : q->bsz[1];
    osz[2] = M; osz[3] = N;
    C->n_in = 0;
    ia = C->n_in++;
    tensor(&C->in[ia], q->a, 4, q->asz, NULL);
    for (i = 0; i < C->in[ia].bytes; i++) put(&C->in[ia], i, quant_value(q->a));
    isa = q_param(C, q->sa, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 1, M, -4, -3);
    iza = q_param(C, q->za, q->a, 1, M, 0, 0);
    ib = C->n_in++;
    tensor(&C->in[ib], q->b, 4, q->bsz, q->bstrides);
    for (i = 0; i < C->in[ib].bytes; i++) put(&C->in[ib], i, quant_value(q->b));
    isb = q_param(C, q->sb, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 0, N, -3, -2);
    izb = q_param(C, q->zb, q->b, 0, N, 0, 0);
    iso = q_param(C, q->so, VKOPS_TENSOR_DATA_TYPE_FLOAT32, 1, M, 1, 4);
    izo = q_param(C, q->zo, q->out, 1, M, 0, 0);
    C->n_out = 1;
    tensor(&C->out[0], q->out, 4, osz, NULL);
    for (b0 = 0; b0 < osz[0]; b0++)
        for (c0 = 0; c0 < osz[1]; c0++)
            for (m = 0; m < M; m++)
                for (n = 0; n < N; n++) {
                    const Tensor *A = &C->in[ia], *B = &C->in[ib];
                    uint64_t abase = (uint64_t)(A->sizes[0] > 1 ? b0 : 0) * A->strides[0] +
                                     (uint64_t)(A->sizes[1] > 1 ? c0 : 0) * A->strides[1] + (uint64_t)m * A->strides[2];
                    uint64_t bbase = (uint64_t)(B->sizes[0] > 1 ? b0 : 0) * B->strides[0] +
                                     (uint64_t)(B->sizes[1] > 1 ? c0 : 0) * B->strides[1] + (uint64_t)n * B->strides[3];
                    int64_t acc = 0, za = (int64_t)q_at(C, iza, m), zb = (int64_t)q_at(C, izb, n);
                    double scale = q_at(C, isa, m) * q_at(C, isb, n) / q_at(C, iso, m), y;
                    for (k = 0; k < K; k++)
                        acc += ((int64_t)get(A, abase + (uint64_t)k * A->strides[3]) - za) *
                               ((int64_t)get(B, bbase + (uint64_t)k * B->strides[2]) - zb);
                    y = nearbyint((double)acc * scale) + q_at(C, izo, m);
                    put(&C->out[0], ((uint64_t)(b0 * osz[1] + c0) * M + m) * N + n, y < lo ? lo : y > hi ? hi : y);
                }
    C->qlmm = (vkops_quantized_linear_matrix_multiply_desc){
        &C->in[ia].t, &C->in[isa].t, iza < 0 ? NULL : &C->in[iza].t, &C->in[ib].t, &C->in[isb].t,
        izb < 0 ? NULL : &C->in[izb].t, &C->in[iso].t, izo < 0 ? NULL : &C->in[izo].t, &C->out[0].t};
    C->op = (vkops_operator_desc){VKOPS_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY, &C->qlmm};
}

#define I8 VKOPS_TENSOR_DATA_TYPE_INT8
#define U8 VKOPS_TENSOR_DATA_TYPE_UINT8
static void qlmm_i8_m1(Case *C) {
    static const QCase q = {I8, I8, I8, {1, 1, 1, 37}, {1, 1, 37, 19}, NULL,
                            PER_TENSOR, PER_TENSOR, PER_TENSOR, PER_TENSOR, PER_TENSOR, PER_TENSOR};
    qlmm_case(C, &q);
}
static void qlmm_u8i8_m3_axis(Case *C) {
    static const QCase q = {U8, I8, I8, {1, 1, 3, 45}, {1, 1, 45, 21}, NULL,
                            PER_AXIS, PER_AXIS, PER_AXIS, PER_AXIS, PER_AXIS, PER_AXIS};
    qlmm_case(C, &q);
}
static void qlmm_i8u8_m33(Case *C) {
    static const QCase q = {I8, U8, U8, {1, 1, 33, 70}, {1, 1, 70, 40}, NULL,
                            PER_AXIS, 0, PER_TENSOR, PER_AXIS, PER_TENSOR, PER_TENSOR};
    qlmm_case(C, &q);
}
static void qlmm_u8_nozp(Case *C) {
    static const QCase q = {U8, U8, U8, {1, 1, 33, 13}, {1, 1, 13, 9}, NULL,
                            PER_TENSOR, 0, PER_AXIS, 0, PER_AXIS, 0};
    qlmm_case(C, &q);
}
static void qlmm_b_colmajor(Case *C) {  /* b a column-major view: a SLICE1 packs it into temporary memory first */
    static const uint32_t bst[] = {23 * 17, 23 * 17, 1, 23};
    static const QCase q = {I8, U8, I8, {1, 1, 5, 23}, {1, 1, 23, 17}, bst,
                            PER_TENSOR, PER_AXIS, PER_AXIS, PER_TENSOR, PER_AXIS, PER_AXIS};
    qlmm_case(C, &q);
}
static void qlmm_batch(Case *C) {  /* a {2,1,M,K} x b {1,1,K,N}: b broadcast over the batch */
    static const QCase q = {U8, I8, U8, {2, 1, 3, 30}, {1, 1, 30, 11}, NULL,
                            PER_AXIS, PER_TENSOR, PER_AXIS, PER_AXIS, PER_TENSOR, PER_AXIS};
    qlmm_case(C, &q);
}
static void qlmm_batch_channels(Case *C) {  /* a {1,2,M,K} x b {3,1,K,N} -> {3,2,M,N} */
    static const QCase q = {I8, I8, U8, {1, 2, 33, 7}, {3, 1, 7, 6}, NULL,
                            PER_TENSOR, PER_AXIS, PER_TENSOR, PER_AXIS, PER_AXIS, PER_TENSOR};
    qlmm_case(C, &q);
}

static const CaseRow CASES[] = {
    {"SLICE1 uint8 [5,9] strides (-2,-3)", slice_u8},
    {"SLICE1 int8 strided input [3,4,5] strides (1,-1,-2)", slice_i8_strided},
    {"SLICE1 float16 [4,6,3] strides (-3,-2,1)", slice_f16},
    {"SLICE1 int16 [6,70] strides (-1,1)", slice_i16_rows},
    {"SLICE1 float32 [2,3,4,5] strides (1,-1,2,-2)", slice_f32},
    {"TOP_K1 float32 [5,1023] K=1 DECREASING, ties/NaN/inf/-0", topk_f32_1023_k1},
    {"TOP_K1 float32 [4,1024] K=50 DECREASING, ties/NaN/inf/-0", topk_f32_1024_k50},
    {"TOP_K1 float32 [3,1025] K=512 DECREASING, ties/NaN/inf/-0", topk_f32_1025_k512},
    {"TOP_K1 float32 [2,1024] K=512 INCREASING, ties/NaN/inf/-0", topk_f32_1024_k512_inc},
    {"TOP_K1 float32 [3,1025] K=50 INCREASING, ties/NaN/inf/-0", topk_f32_1025_k50_inc},
    {"TOP_K1 int8 [64,4097] K=50 DECREASING (chunked where target groups are many)", topk_i8_chunked},
    {"TOP_K1 int8 [2,200003] K=50 DECREASING (chunked filter + merge)", topk_i8_long},
    {"TOP_K1 int8 [3,4097] K=50 INCREASING, 6 values", topk_i8_ties_inc},
    {"TOP_K1 float32 8-D strided [2,2,2,1500,2,2,2,2] axis 3 K=50 (packed first)", topk_f32_8d_strided},
    {"TOP_K1 uint16 [300,3,5] axis 0 K=20 DECREASING", topk_u16_axis0},
    {"TOP_K1 float16 [5,777] K=33 INCREASING, ties/NaN/inf/-0", topk_f16_inc},
    {"TOP_K1 float32 [1,4096] K=2000 DECREASING (global sort)", topk_f32_sort},
    {"TOP_K1 float32 [2,65536] K=2048 DECREASING, ties/NaN/inf/-0 (GRADIX)", topk_f32_gradix},
    {"TOP_K1 int8 [3,16384] K=4000 INCREASING, 6 values (GRADIX)", topk_i8_gradix_inc},
    {"QLMM int8 x int8 -> int8, M=1 K=37 N=19, per-tensor", qlmm_i8_m1},
    {"QLMM uint8 x int8 -> int8, M=3 K=45 N=21, per-row/per-column", qlmm_u8i8_m3_axis},
    {"QLMM int8 x uint8 -> uint8, M=33 K=70 N=40, mixed, no a zero point", qlmm_i8u8_m33},
    {"QLMM uint8 x uint8 -> uint8, M=33 K=13 N=9, no zero points", qlmm_u8_nozp},
    {"QLMM int8 x uint8 -> int8, M=5 K=23 N=17, b column-major", qlmm_b_colmajor},
    {"QLMM uint8 x int8 -> uint8, a {2,1,3,30} x b {1,1,30,11}", qlmm_batch},
    {"QLMM int8 x int8 -> uint8, a {1,2,33,7} x b {3,1,7,6}", qlmm_batch_channels},
};

/* ------------------------------------------------------------------ Vulkan set-up */
static struct {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    VkCommandPool pool;
    VkPhysicalDeviceMemoryProperties mem;
    vkops_device_requirements req;
} G;

static VkBool32 VKAPI_PTR on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT type,
                                     const VkDebugUtilsMessengerCallbackDataEXT *d, void *u) {
    (void)type; (void)u;
    if (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        vl_messages++;
        printf("VALIDATION %s: %s\n", sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
               d->pMessage);
    }
    return VK_FALSE;
}

static int layer_has_extension(const char *layer, const char *ext) {
    uint32_t n = 0, i;
    VkExtensionProperties *e;
    int found = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &n, NULL) != VK_SUCCESS) return 0;
    e = calloc(n + 1, sizeof *e);
    vkEnumerateInstanceExtensionProperties(layer, &n, e);
    for (i = 0; i < n; i++) found |= !strcmp(e[i].extensionName, ext);
    free(e);
    return found;
}

/* VK_EXT_layer_settings (newer layers), declared here for headers that predate it (Debian 12's). */
typedef struct { const char *pLayerName, *pSettingName; int32_t type; uint32_t valueCount; const void *pValues; } LayerSetting;
typedef struct { VkStructureType sType; const void *pNext; uint32_t settingCount; const LayerSetting *pSettings; } LayerSettingsInfo;
#define STYPE_LAYER_SETTINGS_CREATE_INFO ((VkStructureType)1000496000)
#define LAYER_SETTING_TYPE_BOOL32 0

static void create_instance(int validation) {
    static const char *LAYER = "VK_LAYER_KHRONOS_validation";
    const char *exts[3];
    uint32_t n_ext = 0, n = 0, i;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, NULL, 1, &sync, 0, NULL};
    VkBool32 on = VK_TRUE;
    LayerSetting ls = {"VK_LAYER_KHRONOS_validation", "validate_sync", LAYER_SETTING_TYPE_BOOL32, 1, &on};
    LayerSettingsInfo lsi = {STYPE_LAYER_SETTINGS_CREATE_INFO, NULL, 1, &ls};
    VkDebugUtilsMessengerCreateInfoEXT mi = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
        VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT, on_message, NULL};
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "capi_test", 1, "vkops", 1, VK_API_VERSION_1_3};
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, &mi, 0, &app, 0, NULL, 0, exts};
    const char *how = "none";
    if (validation) {
        VkLayerProperties *lp;
        int have = 0;
        vkEnumerateInstanceLayerProperties(&n, NULL);
        lp = calloc(n + 1, sizeof *lp);
        vkEnumerateInstanceLayerProperties(&n, lp);
        for (i = 0; i < n; i++) have |= !strcmp(lp[i].layerName, LAYER);
        free(lp);
        if (!have) { printf("FATAL: %s is not installed (apt install vulkan-validationlayers), or pass --no-validation\n", LAYER); exit(2); }
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = &LAYER;
        exts[n_ext++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        /* Synchronization validation: VK_EXT_validation_features where the layer has it, else
         * VK_EXT_layer_settings (layers that dropped the former). */
        if (layer_has_extension(LAYER, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME)) {
            exts[n_ext++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
            mi.pNext = &vf;
            how = "VK_EXT_validation_features";
        } else if (layer_has_extension(LAYER, "VK_EXT_layer_settings")) {
            exts[n_ext++] = "VK_EXT_layer_settings";
            mi.pNext = &lsi;
            how = "VK_EXT_layer_settings";
        } else {
            printf("FATAL: the validation layer offers neither VK_EXT_validation_features nor VK_EXT_layer_settings\n");
            exit(2);
        }
    } else {
        ci.pNext = NULL;
    }
    ci.enabledExtensionCount = n_ext;
    VK(vkCreateInstance(&ci, NULL, &G.instance));
    if (validation) {
        PFN_vkCreateDebugUtilsMessengerEXT f =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(G.instance, "vkCreateDebugUtilsMessengerEXT");
        mi.pNext = NULL;
        VK(f(G.instance, &mi, NULL, &G.messenger));
    }
    printf("validation: %s (synchronization validation via %s)\n", validation ? "VK_LAYER_KHRONOS_validation" : "off", how);
}

static void create_device(void) {
    uint32_t n = 1, nq = 0, i;
    VkPhysicalDevice pds[8];
    VkPhysicalDeviceProperties p;
    VkQueueFamilyProperties qf[16];
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1, &prio};
    VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qi, 0, NULL, 0, NULL, NULL};
    VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                  VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, 0};
    VkResult r;
    vkops_status s;
    n = 8;
    r = vkEnumeratePhysicalDevices(G.instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) { printf("FATAL: vkEnumeratePhysicalDevices = %d\n", (int)r); exit(2); }
    if (!n) { printf("FATAL: no Vulkan device\n"); exit(2); }
    G.phys = pds[0];
    for (i = 0; i < n; i++) {  /* lavapipe (the CPU device) where there is one */
        vkGetPhysicalDeviceProperties(pds[i], &p);
        if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) { G.phys = pds[i]; break; }
    }
    vkGetPhysicalDeviceProperties(G.phys, &p);
    vkGetPhysicalDeviceMemoryProperties(G.phys, &G.mem);
    nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(G.phys, &nq, qf);
    for (i = 0; i < nq && !(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT); i++) {}
    G.family = qi.queueFamilyIndex = i;
    s = vkops_device_requirements_get(G.instance, G.phys, VK_API_VERSION_1_3, NULL, &G.req);
    if (s != VKOPS_SUCCESS) { printf("FATAL: vkops_device_requirements_get: %d %s\n", s, vkops_last_error()); exit(2); }
    printf("device: %s (Vulkan %u.%u); vkops turns on shaderInt8 %u, vulkanMemoryModel %u, shaderIntegerDotProduct %u, "
           "cooperativeMatrix %u and asks for %u extension(s):", p.deviceName, VK_API_VERSION_MAJOR(p.apiVersion),
           VK_API_VERSION_MINOR(p.apiVersion), G.req.float16_int8.shaderInt8, G.req.memory_model.vulkanMemoryModel,
           G.req.integer_dot_product.shaderIntegerDotProduct, G.req.cooperative_matrix.cooperativeMatrix,
           G.req.extension_count);
    for (i = 0; i < G.req.extension_count; i++) printf(" %s", G.req.extensions[i]);
    printf("\n");
    di.pNext = G.req.chain;  /* vkops' feature structs; pEnabledFeatures stays NULL */
    di.enabledExtensionCount = G.req.extension_count;
    di.ppEnabledExtensionNames = G.req.extensions;
    VK(vkCreateDevice(G.phys, &di, NULL, &G.device));
    vkGetDeviceQueue(G.device, G.family, 0, &G.queue);
    pi.queueFamilyIndex = G.family;
    VK(vkCreateCommandPool(G.device, &pi, NULL, &G.pool));
}

typedef struct { VkBuffer buf; VkDeviceMemory mem; unsigned char *map; VkDeviceSize size; } Buf;

static Buf make_buf(VkDeviceSize size) {
    Buf b;
    VkMemoryRequirements r;
    uint32_t t;
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, size,
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, 0, 0};
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    b.size = size;
    VK(vkCreateBuffer(G.device, &bi, NULL, &b.buf));
    vkGetBufferMemoryRequirements(G.device, b.buf, &r);
    for (t = 0; t < G.mem.memoryTypeCount; t++)
        if ((r.memoryTypeBits & (1u << t)) && (G.mem.memoryTypes[t].propertyFlags & want) == want) break;
    ai.allocationSize = r.size;
    ai.memoryTypeIndex = t;
    VK(vkAllocateMemory(G.device, &ai, NULL, &b.mem));
    VK(vkBindBufferMemory(G.device, b.buf, b.mem, 0));
    VK(vkMapMemory(G.device, b.mem, 0, VK_WHOLE_SIZE, 0, (void **)&b.map));
    return b;
}
static void free_buf(Buf *b) {
    if (!b->buf) return;
    vkUnmapMemory(G.device, b->mem);
    vkDestroyBuffer(G.device, b->buf, NULL);
    vkFreeMemory(G.device, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ one case, one descriptor mode */
#define SENTINEL 0xCD
#define TAIL 64 /* sentinel bytes after each binding */

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage,
                    VkAccessFlags dst) {
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, src, dst};
    vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* A binding at offset `align` of a new buffer, TAIL sentinel bytes after its size. */
static Buf bound(VkDeviceSize align, VkDeviceSize size, vkops_binding *b) {
    Buf B = make_buf(align + size + TAIL);
    memset(B.map, SENTINEL, (size_t)B.size);
    b->buffer = B.buf; b->offset = align; b->range = size;
    return B;
}

static int untouched(const Buf *B, VkDeviceSize from, VkDeviceSize to) {
    VkDeviceSize i;
    for (i = from; i < to; i++) if (B->map[i] != SENTINEL) return 0;
    return 1;
}

/* A bad binding must be refused with VKOPS_ERROR_VALIDATION and a message containing `want`. */
static void expect_refused(const vkops_operator *op, VkCommandBuffer cb, const vkops_record_info *ri, const char *what,
                           const char *want) {
    vkops_status s = vkops_operator_record(op, cb, ri);
    if (s != VKOPS_ERROR_VALIDATION || !strstr(vkops_last_error(), want))
        FAIL("%s: expected VKOPS_ERROR_VALIDATION with \"%s\"; got %d \"%s\"", what, want, (int)s, vkops_last_error());
    else if (verbose) printf("  refused %s: %s\n", what, vkops_last_error());
}

static void run_case(vkops_context *ctx, const CaseRow *row, int push) {
    Case C;
    vkops_operator *op = NULL;
    vkops_operator_properties P;
    vkops_binding in[MAXT], out[MAXT], tmp, pers, bad[MAXT];
    Buf bin[MAXT], bout[MAXT], btmp = {0}, bpers = {0};
    VkDescriptorSet sets[256];
    VkDescriptorPool dpool = VK_NULL_HANDLE;
    vkops_record_info ri;
    VkCommandBuffer cb;
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, G.pool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                   VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cb, 0, NULL};
    VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    VkFence fence;
    long a0, f0;
    int i, before = failures;
    vkops_status s;
    const char *mode = push ? "push descriptors" : "descriptor sets";

    memset(&C, 0, sizeof C);
    row->make(&C);
    s = vkops_operator_compile(ctx, &C.op, &op);
    if (s != VKOPS_SUCCESS) { FAIL("%s: vkops_operator_compile = %d: %s", row->name, (int)s, vkops_last_error()); goto free_case; }
    vkops_operator_get_properties(op, &P);
    if ((int)P.input_count != C.n_in || (int)P.output_count != C.n_out) {
        FAIL("%s: %u inputs, %u outputs; the case has %d, %d", row->name, P.input_count, P.output_count, C.n_in, C.n_out);
        goto free_op;
    }
    if (verbose) {
        char *json = NULL;
        if (vkops_operator_plan_json(op, &json) == VKOPS_SUCCESS) printf("  plan: %.300s...\n", json);
        vkops_free(json);
    }
    for (i = 0; i < C.n_in; i++) {
        bin[i] = bound(P.required_offset_alignment, P.input_binding_size[i], &in[i]);
        memcpy(bin[i].map + in[i].offset, C.in[i].data, C.in[i].bytes);
    }
    for (i = 0; i < C.n_out; i++) bout[i] = bound(P.required_offset_alignment, P.output_binding_size[i], &out[i]);
    if (P.temporary_size) btmp = bound(P.required_offset_alignment, P.temporary_size, &tmp);
    if (P.persistent_size) bpers = bound(P.required_offset_alignment, P.persistent_size, &pers);
    memset(&ri, 0, sizeof ri);
    ri.inputs = in; ri.outputs = out;
    ri.temporary = P.temporary_size ? &tmp : NULL;
    ri.persistent = P.persistent_size ? &pers : NULL;
    if (!push) {
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 16 * P.descriptor_set_count};
        VkDescriptorPoolCreateInfo pci = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, P.descriptor_set_count, 1, &ps};
        VkDescriptorSetLayout layouts[256];
        VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, VK_NULL_HANDLE,
                                           P.descriptor_set_count, layouts};
        if (P.descriptor_set_count == 0 || P.descriptor_set_count > 256) {
            FAIL("%s: descriptor_set_count %u without push descriptors", row->name, P.descriptor_set_count);
            goto free_bufs;
        }
        for (i = 0; i < (int)P.descriptor_set_count; i++) layouts[i] = vkops_operator_descriptor_set_layout(op, (uint32_t)i);
        VK(vkCreateDescriptorPool(G.device, &pci, NULL, &dpool));
        dai.descriptorPool = dpool;
        VK(vkAllocateDescriptorSets(G.device, &dai, sets));
        ri.descriptor_sets = sets;
    } else if (P.descriptor_set_count != 0) {
        FAIL("%s: descriptor_set_count %u with push descriptors", row->name, P.descriptor_set_count);
    }

    VK(vkAllocateCommandBuffers(G.device, &cai, &cb));
    VK(vkBeginCommandBuffer(cb, &bi));
    /* Before: the host's writes of inputs (and of the persistent buffer, here its sentinels) ordered before
     * the transfer that initializes it and the shaders that read them. (vkQueueSubmit already makes host
     * writes made before it visible; the barrier states it, and is needed for host writes signalled later.) */
    barrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    if (P.persistent_size) {
        s = vkops_operator_record_initialize(op, cb, &pers);
        if (s != VKOPS_SUCCESS) FAIL("%s: record_initialize = %d: %s", row->name, (int)s, vkops_last_error());
        /* The persistent set-up (vkCmdFillBuffer / vkCmdUpdateBuffer) before the shaders use it. */
        barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    }
    /* Bad bindings: refused before anything is recorded. */
    {
        vkops_record_info r2 = ri;
        memcpy(bad, out, sizeof out);
        r2.outputs = bad;
        bad[0].offset = out[0].offset + 2;
        expect_refused(op, cb, &r2, "a misaligned offset", "outputs[0].offset must be a multiple of");
        bad[0] = out[0]; bad[0].range = out[0].range - 4;
        expect_refused(op, cb, &r2, "a short range", "outputs[0].range must be >=");
        bad[0] = out[0]; bad[0].range = VK_WHOLE_SIZE;
        expect_refused(op, cb, &r2, "VK_WHOLE_SIZE", "VK_WHOLE_SIZE");
        bad[0] = out[0]; bad[0].buffer = VK_NULL_HANDLE;
        expect_refused(op, cb, &r2, "a null buffer", "outputs[0].buffer must not be VK_NULL_HANDLE");
        r2 = ri; memcpy(bad, in, sizeof in); r2.inputs = bad;
        bad[0].range = in[0].range - 1;
        expect_refused(op, cb, &r2, "a short input range", "inputs[0].range must be >=");
        if (!push) {
            r2 = ri; r2.descriptor_sets = NULL;
            expect_refused(op, cb, &r2, "no descriptor sets", "descriptor_sets must not be NULL");
        }
    }
    a0 = n_alloc; f0 = n_free;
    s = vkops_operator_record(op, cb, &ri);
    if (s != VKOPS_SUCCESS) FAIL("%s: vkops_operator_record = %d: %s", row->name, (int)s, vkops_last_error());
    if (n_alloc != a0 || n_free != f0)
        FAIL("%s: recording allocated %ld and freed %ld times through the context's allocator", row->name, n_alloc - a0, n_free - f0);
    /* After: the shaders' writes of the outputs visible to the host's reads (after the fence wait). */
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    VK(vkEndCommandBuffer(cb));
    VK(vkCreateFence(G.device, &fi, NULL, &fence));
    VK(vkQueueSubmit(G.queue, 1, &si, fence));
    VK(vkWaitForFences(G.device, 1, &fence, VK_TRUE, UINT64_MAX));
    vkDestroyFence(G.device, fence, NULL);
    vkFreeCommandBuffers(G.device, G.pool, 1, &cb);

    for (i = 0; i < C.n_out; i++) {
        const unsigned char *got = bout[i].map + out[i].offset;
        if (memcmp(got, C.out[i].data, C.out[i].bytes)) {
            size_t j = 0;
            while (got[j] == C.out[i].data[j]) j++;
            FAIL("%s: output %d differs from the reference at byte %lu (got 0x%02x, want 0x%02x)", row->name, i,
                 (unsigned long)j, got[j], C.out[i].data[j]);
        }
        if (!untouched(&bout[i], 0, out[i].offset) ||
            !untouched(&bout[i], out[i].offset + P.output_binding_size[i], bout[i].size))
            FAIL("%s: output %d: bytes outside [offset, offset + binding size %lu) were written", row->name, i,
                 (unsigned long)P.output_binding_size[i]);
    }
    if (C.op.type == VKOPS_OPERATOR_TOP_K1 && failures == before && P.dispatch_count > 1 && P.barrier_count > 0 &&
        P.temporary_size > 0 && P.persistent_size > 0)
        topk_multi++;
    {
        char *json = NULL;
        const char *notes = "", *end;
        int len = 0;
        if (vkops_operator_plan_json(op, &json) == VKOPS_SUCCESS && (notes = strstr(json, "\"notes\": {")) &&
            (end = strchr(notes, '}')))
            len = (int)(end - notes - 9), notes += 10;
        {   /* the plan names the kernels it was made for: the embedded manifest's sha256 (64 hex digits) */
            const char *k = json ? strstr(json, "\"kernels\": \"") : NULL;
            size_t hex = k ? strspn(k + 12, "0123456789abcdef") : 0;
            if (hex != 64 || k[12 + 64] != '"') FAIL("%s: the plan JSON does not name the kernels' sha256", row->name);
        }
        if (C.op.type == VKOPS_OPERATOR_TOP_K1 && failures == before && strstr(notes, "\"chunks\": ") &&
            atoi(strstr(notes, "\"chunks\": ") + 10) > 1 && P.temporary_size > 0 && P.persistent_size > 0)
            topk_chunked++;
        if (C.op.type == VKOPS_OPERATOR_TOP_K1 && failures == before && strstr(notes, "\"path\": \"gradix\""))
            topk_gradix++;
        printf("%s %s [%s]: %u dispatch(es), %u barrier(s), output binding %lu bytes for %lu tensor bytes, temporary %lu, "
               "persistent %lu; %.*s\n", failures == before ? "ok  " : "FAIL", row->name, mode, P.dispatch_count,
               P.barrier_count, (unsigned long)P.output_binding_size[0], (unsigned long)C.out[0].bytes,
               (unsigned long)P.temporary_size, (unsigned long)P.persistent_size, len, notes);
        vkops_free(json);
    }
free_bufs:
    if (dpool) vkDestroyDescriptorPool(G.device, dpool, NULL);
    for (i = 0; i < C.n_in; i++) free_buf(&bin[i]);
    for (i = 0; i < C.n_out; i++) free_buf(&bout[i]);
    free_buf(&btmp);
    free_buf(&bpers);
free_op:
    vkops_operator_destroy(op);
free_case:
    for (i = 0; i < C.n_in; i++) free(C.in[i].data);
    for (i = 0; i < C.n_out; i++) free(C.out[i].data);
}

static int lists(const vkops_device_requirements *r, const char *ext) {
    uint32_t i;
    for (i = 0; i < r->extension_count; i++) if (!strcmp(r->extensions[i], ext)) return 1;
    return 0;
}

/* Extensions promoted to core are listed only below their core version: the 1.3 requirements the device
 * was made with list none of them; for a 1.1 instance every feature turned on brings its extension. */
static void check_requirements_versions(void) {
    vkops_device_requirements r;
    uint32_t i;
    if (G.req.api_version != VK_API_VERSION_1_3) FAIL("requirements.api_version is 0x%x for a 1.3 instance", G.req.api_version);
    if (lists(&G.req, "VK_KHR_shader_float16_int8") || lists(&G.req, "VK_KHR_vulkan_memory_model") ||
        lists(&G.req, "VK_KHR_shader_integer_dot_product"))
        FAIL("the Vulkan 1.3 requirements list an extension that is core in 1.3");
    if (vkops_device_requirements_get(G.instance, G.phys, VK_API_VERSION_1_1, NULL, &r) != VKOPS_SUCCESS) {
        FAIL("vkops_device_requirements_get(1.1): %s", vkops_last_error());
        return;
    }
    if ((r.float16_int8.shaderInt8 && !lists(&r, "VK_KHR_shader_float16_int8")) ||
        (r.memory_model.vulkanMemoryModel && !lists(&r, "VK_KHR_vulkan_memory_model")) ||
        (r.integer_dot_product.shaderIntegerDotProduct && !lists(&r, "VK_KHR_shader_integer_dot_product")))
        FAIL("the Vulkan 1.1 requirements turn on a feature without its extension");
    printf("requirements for a Vulkan 1.1 instance: shaderInt8 %u, vulkanMemoryModel %u, shaderIntegerDotProduct %u; extensions:",
           r.float16_int8.shaderInt8, r.memory_model.vulkanMemoryModel, r.integer_dot_product.shaderIntegerDotProduct);
    for (i = 0; i < r.extension_count; i++) printf(" %s", r.extensions[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    int validation = 1, i, push;
    size_t c;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--no-validation")) validation = 0;
        else { printf("usage: %s [--verbose] [--no-validation]\n", argv[0]); return 2; }
    }
    create_instance(validation);
    create_device();
    check_requirements_versions();
    for (push = 1; push >= 0; push--) {
        vkops_context *ctx = NULL;
        vkops_limits L;
        vkops_context_create_info ci;
        vkops_status s;
        long a0;
        memset(&ci, 0, sizeof ci);
        ci.instance = G.instance; ci.physical_device = G.phys; ci.api_version = VK_API_VERSION_1_3;
        ci.device = G.device; ci.queue_family_index = G.family; ci.allocator = &COUNTING;
        ci.enabled = &G.req;
        ci.flags = push ? 0 : VKOPS_CONTEXT_NO_PUSH_DESCRIPTORS;
        s = vkops_context_create(&ci, &ctx);
        if (s != VKOPS_SUCCESS) { FAIL("vkops_context_create = %d: %s", (int)s, vkops_last_error()); break; }
        vkops_context_get_limits(ctx, &L);
        printf("context [%s]: %s, subgroup %u (%u..%u, ops 0x%x), workgroup <= %u, shared %u, push %u, "
               "storage range %lu, device type %u, cooperative_matrix %u, integer_dot_product %u\n",
               push ? "push descriptors" : "VKOPS_CONTEXT_NO_PUSH_DESCRIPTORS", L.name, L.subgroup_size,
               L.min_subgroup_size, L.max_subgroup_size, L.subgroup_operations, L.max_workgroup_invocations,
               L.shared_memory_bytes, L.max_push_constants_bytes, (unsigned long)L.max_storage_buffer_range,
               L.device_type, L.cooperative_matrix, L.integer_dot_product);
        a0 = n_alloc - n_free;
        for (c = 0; c < sizeof CASES / sizeof CASES[0]; c++) run_case(ctx, &CASES[c], push);
        if (verbose) printf("  context allocations live after the cases: %ld (pipelines, layouts)\n", n_alloc - n_free - a0);
        vkops_context_destroy(ctx);
    }
    if (topk_multi < 2)  /* one such case per descriptor mode */
        FAIL("no TOP_K1 case ran with > 1 dispatch, barriers, temporary and persistent memory (record_initialize "
             "and the scratch layout untested)");
    if (topk_chunked < 2)
        FAIL("no TOP_K1 case ran rows in several chunks (the merge's counters and scratch untested)");
    if (topk_gradix < 2)
        FAIL("no TOP_K1 case ran by the GRADIX path (its digit passes, compaction and sort untested)");
    if (n_alloc != n_free) FAIL("the context's allocator: %ld allocations, %ld frees after vkops_context_destroy", n_alloc, n_free);
    vkDestroyCommandPool(G.device, G.pool, NULL);
    vkDestroyDevice(G.device, NULL);
    if (G.messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT f =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(G.instance, "vkDestroyDebugUtilsMessengerEXT");
        f(G.instance, G.messenger, NULL);
    }
    vkDestroyInstance(G.instance, NULL);
    printf("validation-layer messages: %d; failures: %d\n", vl_messages, failures);
    return failures || vl_messages ? 1 : 0;
}
