/* vkops_host: runs a vkops plan ("vkops-plan/1", JSON) with the SPIR-V kernels of a vkops kernel
 * manifest ("vkops-kernel-manifest/1") on a Vulkan device. C99; needs only libvulkan and libc.
 * Everything that can be checked without a device is checked before Vulkan is touched.
 * Exit codes: 0 ok, 1 out of host memory, 2 bad arguments/plan/manifest/files or a device limit,
 * 3 Vulkan error, 4 ran but the validation layer (VKOPS_VALIDATION=1) reported a warning or error.
 * See README.md next to this file. */
#include <vulkan/vulkan.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Headers older than 1.3.255 lack VK_KHR_cooperative_matrix; its feature struct is all we need. */
#ifndef VK_KHR_cooperative_matrix
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#endif
/* VK_KHR_shader_integer_dot_product's feature struct under a name of our own (core 1.3 renamed it). */
typedef struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderIntegerDotProduct;
} IntegerDotFeatures;
#define STYPE_INTEGER_DOT_FEATURES ((VkStructureType)1000280000)

static void cleanup(void);

/* ---- errors and allocation ---------------------------------------------------------------- */

/* Messages quote names from the plan: control characters and invalid UTF-8 become '?', so an error
 * stays one readable line whatever the file held. */
static void print_clean(const char *msg)
{
    const unsigned char *p = (const unsigned char *)msg;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1, i;
        for (i = 1; i <= n && (p[i] & 0xC0) == 0x80; i++) {}
        if (n < 0 || i <= n || (n == 0 && (*p < 0x20 || *p == 0x7F))) { fputc('?', stderr); p++; continue; }
        fwrite(p, 1, (size_t)n + 1, stderr);
        p += n + 1;
    }
}

static void die(int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("vkops_host: error: ", stderr);
    print_clean(msg);
    fputc('\n', stderr);
    cleanup();
    exit(code);
}

/* Every host allocation is linked into one list and freed by cleanup(), so no error path leaks. */
typedef union Block { union Block *next; long double ld; uint64_t u; void *p; } Block;
static Block *g_blocks;
static int g_saw_message; /* a validation warning or error was seen; outlives cleanup() */

static void *xalloc(size_t n)
{
    Block *b;
    if (n > (SIZE_MAX - sizeof *b) / 2 || !(b = calloc(1, sizeof *b + n)))
        die(1, "out of host memory (%lu bytes)", (unsigned long)n);
    b->next = g_blocks;
    g_blocks = b;
    return b + 1;
}

static char *xstrcat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = xalloc(la + lb + lc + 1);
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc);
    return s;
}

/* The whole file; 2 for an unreadable one. */
static unsigned char *read_file(const char *path, size_t *len, const char *what)
{
    FILE *f = fopen(path, "rb");
    long n;
    unsigned char *data;
    if (!f) die(2, "cannot open %s \"%s\"", what, path);
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        die(2, "cannot determine the size of %s \"%s\"", what, path);
    }
    data = xalloc((size_t)n + 1); /* +1: a NUL after JSON text */
    if (fread(data, 1, (size_t)n, f) != (size_t)n || ferror(f)) {
        fclose(f);
        die(2, "cannot read %s \"%s\"", what, path);
    }
    fclose(f);
    *len = (size_t)n;
    return data;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
static const char *const JTYPE[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};

typedef struct JNode {
    int type, b;
    int is_uint; /* a number without sign, fraction or exponent that fits in 64 bits: value in u */
    uint64_t u;
    const char *s;           /* string value; for numbers the literal text */
    size_t n;                /* array/object entries */
    struct JNode *kids;      /* array items, object values */
    const char **keys;       /* object keys */
} JNode;

typedef struct { const char *start, *p, *end, *file; int depth; } JP;

static void jfail(const JP *P, const char *msg)
{
    int line = 1, col = 1;
    const char *q;
    for (q = P->start; q < P->p && q < P->end; q++) {
        if (*q == '\n') { line++; col = 1; } else col++;
    }
    die(2, "invalid JSON (%s), %s line %d column %d", msg, P->file, line, col);
}

static int jpeek(JP *P)
{
    while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r')) P->p++;
    return P->p < P->end ? (unsigned char)*P->p : -1;
}

static int jdigit(const JP *P) { return P->p < P->end && *P->p >= '0' && *P->p <= '9'; }

static unsigned jhex4(JP *P)
{
    unsigned v = 0;
    int i, c;
    for (i = 0; i < 4; i++, P->p++) {
        c = P->p < P->end ? (unsigned char)*P->p : -1;
        if (c >= '0' && c <= '9') v = v * 16 + (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v = v * 16 + (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v = v * 16 + (unsigned)(c - 'A' + 10);
        else jfail(P, "bad \\u escape");
    }
    return v;
}

static const char *jstring(JP *P)
{
    const char *q = ++P->p;
    char *out, *o;
    while (q < P->end && *q != '"') q += *q == '\\' ? 2 : 1;
    if (q >= P->end) jfail(P, "unterminated string");
    o = out = xalloc((size_t)(q - P->p) + 1); /* decoding never lengthens the text */
    for (;;) {
        unsigned c = (unsigned char)*P->p++, cp;
        if (c == '"') break;
        if (c < 0x20) { P->p--; jfail(P, "control character in string"); }
        if (c != '\\') { *o++ = (char)c; continue; }
        switch (c = (unsigned char)*P->p++) {
        case '"': case '\\': case '/': *o++ = (char)c; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u':
            cp = jhex4(P);
            if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
                unsigned lo;
                if (P->end - P->p < 6 || P->p[0] != '\\' || P->p[1] != 'u') jfail(P, "lone surrogate");
                P->p += 2;
                lo = jhex4(P);
                if (lo < 0xDC00 || lo > 0xDFFF) jfail(P, "lone surrogate");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) jfail(P, "lone surrogate");
            if (cp == 0) jfail(P, "\\u0000 in string");
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) { *o++ = (char)(0xC0 | cp >> 6); *o++ = (char)(0x80 | (cp & 63)); }
            else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | cp >> 12); *o++ = (char)(0x80 | (cp >> 6 & 63)); *o++ = (char)(0x80 | (cp & 63));
            } else {
                *o++ = (char)(0xF0 | cp >> 18); *o++ = (char)(0x80 | (cp >> 12 & 63));
                *o++ = (char)(0x80 | (cp >> 6 & 63)); *o++ = (char)(0x80 | (cp & 63));
            }
            break;
        default: P->p--; jfail(P, "bad escape in string");
        }
    }
    *o = 0;
    return out;
}

static void jnumber(JP *P, JNode *n)
{
    const char *s = P->p;
    int exact = 1, ovf = 0;
    uint64_t u = 0;
    char *t;
    if (*P->p == '-') { exact = 0; P->p++; }
    if (!jdigit(P)) jfail(P, "bad number");
    if (*P->p == '0') P->p++;
    else while (jdigit(P)) {
        unsigned d = (unsigned)(*P->p++ - '0');
        if (u > (UINT64_MAX - d) / 10) ovf = 1; else u = u * 10 + d;
    }
    if (P->p < P->end && *P->p == '.') {
        exact = 0; P->p++;
        if (!jdigit(P)) jfail(P, "bad number");
        while (jdigit(P)) P->p++;
    }
    if (P->p < P->end && (*P->p == 'e' || *P->p == 'E')) {
        exact = 0; P->p++;
        if (P->p < P->end && (*P->p == '+' || *P->p == '-')) P->p++;
        if (!jdigit(P)) jfail(P, "bad number");
        while (jdigit(P)) P->p++;
    }
    n->type = J_NUM;
    n->is_uint = exact && !ovf;
    n->u = u;
    n->s = t = xalloc((size_t)(P->p - s) + 1);
    memcpy(t, s, (size_t)(P->p - s));
}

static int jlit(JP *P, const char *w)
{
    size_t l = strlen(w);
    if ((size_t)(P->end - P->p) < l || memcmp(P->p, w, l) != 0) return 0;
    P->p += l;
    return 1;
}

static void jvalue(JP *P, JNode *n)
{
    int c = jpeek(P);
    memset(n, 0, sizeof *n);
    if (++P->depth > 64) jfail(P, "nested deeper than 64 levels"); /* bounds the recursion */
    if (c == '{' || c == '[') {
        int obj = c == '{', close = obj ? '}' : ']';
        size_t cap = 0, i;
        n->type = obj ? J_OBJ : J_ARR;
        P->p++;
        if (jpeek(P) == close) P->p++;
        else for (;;) {
            if (n->n == cap) { /* grow; the old arrays stay in the allocation list */
                JNode *k = xalloc((cap = cap ? 2 * cap : 8) * sizeof *k);
                const char **ks = xalloc(cap * sizeof *ks);
                if (n->n) { memcpy(k, n->kids, n->n * sizeof *k); memcpy(ks, n->keys, n->n * sizeof *ks); }
                n->kids = k;
                n->keys = ks;
            }
            if (obj) {
                if (jpeek(P) != '"') jfail(P, "expected a string key");
                n->keys[n->n] = jstring(P);
                for (i = 0; i < n->n; i++)
                    if (!strcmp(n->keys[i], n->keys[n->n])) jfail(P, "duplicate key");
                if (jpeek(P) != ':') jfail(P, "expected ':'");
                P->p++;
            }
            jvalue(P, &n->kids[n->n++]);
            c = jpeek(P);
            if (c == ',') { P->p++; continue; }
            if (c == close) { P->p++; break; }
            jfail(P, c < 0 ? "unexpected end of file" : obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    } else if (c == '"') { n->type = J_STR; n->s = jstring(P); }
    else if (c == '-' || (c >= '0' && c <= '9')) jnumber(P, n);
    else if (jlit(P, "true")) { n->type = J_BOOL; n->b = 1; }
    else if (jlit(P, "false")) n->type = J_BOOL;
    else if (jlit(P, "null")) n->type = J_NULL;
    else jfail(P, c < 0 ? "unexpected end of file" : "unexpected character");
    P->depth--;
}

static JNode *parse_json_file(const char *path, const char *what)
{
    size_t len;
    JP P;
    JNode *root = xalloc(sizeof *root);
    P.start = P.p = (const char *)read_file(path, &len, what);
    P.end = P.start + len;
    P.file = path;
    P.depth = 0;
    if (len >= 3 && !memcmp(P.p, "\xEF\xBB\xBF", 3)) P.p += 3; /* UTF-8 byte order mark */
    jvalue(&P, root);
    if (jpeek(&P) >= 0) jfail(&P, "text after the JSON value");
    return root;
}

/* ---- typed access with errors that name the field and where it is ----------------------------- */

static const JNode *jget(const JNode *o, const char *key)
{
    size_t i;
    for (i = 0; o && o->type == J_OBJ && i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->kids[i];
    return NULL;
}

static const JNode *need(const JNode *o, const char *key, int type, const char *where)
{
    const JNode *v = jget(o, key);
    if (!v) die(2, "missing field \"%s\", %s", key, where);
    if (v->type != type) die(2, "field \"%s\" must be %s, got %s, %s", key, JTYPE[type], JTYPE[v->type], where);
    return v;
}

static uint64_t as_uint(const JNode *v, uint64_t max, const char *what, const char *where)
{
    if (v->type != J_NUM || !v->is_uint || v->u > max)
        die(2, "%s must be an integer in [0, %llu], got %s, %s", what, (unsigned long long)max,
            v->type == J_NUM ? v->s : JTYPE[v->type], where);
    return v->u;
}

/* An array of uint32 (push words, spec values, buffer ids...). */
static uint32_t *u32_array(const JNode *o, const char *key, size_t *n, const char *where)
{
    const JNode *a = need(o, key, J_ARR, where);
    uint32_t *out = xalloc((a->n + 1) * sizeof *out);
    char what[96];
    size_t i;
    for (i = 0; i < a->n; i++) {
        sprintf(what, "\"%.40s\"[%lu]", key, (unsigned long)i);
        out[i] = (uint32_t)as_uint(&a->kids[i], 0xFFFFFFFFu, what, where);
    }
    *n = a->n;
    return out;
}

/* ---- the plan and manifest in C ----------------------------------------------------------------- */

enum { R_INPUT, R_OUTPUT, R_SCRATCH, R_CONSTANT };

typedef struct {
    const char *name;
    int role, zeroed;
    uint64_t bytes;
    uint64_t file_bytes;  /* inputs: bytes of the tensor's span; outputs: packed bytes */
    const uint32_t *data; /* constants */
    const unsigned char *init; /* inputs: file contents */
    size_t init_len;
    const char *path;     /* --in / --out file */
    VkBuffer buf;
    VkDeviceMemory mem;
    unsigned char *map;
} Buf;

typedef struct {
    const char *name, *where;
    const JNode *m;          /* manifest entry */
    const uint32_t *code;
    size_t code_bytes;
    size_t nbind, nspec_ids; /* bindings; 1 + largest specialization constant id */
    uint32_t push_size;
    const char *entry;
    VkShaderModule shader;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
} Kernel;

typedef struct {
    Kernel *k;
    char where[160];
    uint32_t *spec, *push, *bind, *writes, *barrier;
    size_t nspec, npush, nbind, nwrites, nbarrier;
    uint32_t groups[3], local[3];
    size_t pipe;
    VkDescriptorSet set;
} Disp;

typedef struct { const Kernel *k; const uint32_t *spec; size_t nspec; VkPipeline p; } Pipe;

/* Features a manifest may list: where they live and the extension that provides them on 1.1. */
enum { FS_CORE, FS_16BIT, FS_8BIT, FS_F16I8, FS_VMM, FS_COOP, FS_IDOT, FS_COUNT };
static const struct { const char *name; int st; size_t off; } FEATURES[] = {
    {"shaderInt16", FS_CORE, offsetof(VkPhysicalDeviceFeatures2, features.shaderInt16)},
    {"shaderInt64", FS_CORE, offsetof(VkPhysicalDeviceFeatures2, features.shaderInt64)},
    {"shaderFloat64", FS_CORE, offsetof(VkPhysicalDeviceFeatures2, features.shaderFloat64)},
    {"storageBuffer16BitAccess", FS_16BIT, offsetof(VkPhysicalDevice16BitStorageFeatures, storageBuffer16BitAccess)},
    {"storageBuffer8BitAccess", FS_8BIT, offsetof(VkPhysicalDevice8BitStorageFeaturesKHR, storageBuffer8BitAccess)},
    {"shaderInt8", FS_F16I8, offsetof(VkPhysicalDeviceShaderFloat16Int8FeaturesKHR, shaderInt8)},
    {"shaderFloat16", FS_F16I8, offsetof(VkPhysicalDeviceShaderFloat16Int8FeaturesKHR, shaderFloat16)},
    {"vulkanMemoryModel", FS_VMM, offsetof(VkPhysicalDeviceVulkanMemoryModelFeaturesKHR, vulkanMemoryModel)},
    {"cooperativeMatrix", FS_COOP, offsetof(VkPhysicalDeviceCooperativeMatrixFeaturesKHR, cooperativeMatrix)},
    {"shaderIntegerDotProduct", FS_IDOT, offsetof(IntegerDotFeatures, shaderIntegerDotProduct)},
};
#define NFEATURES (sizeof FEATURES / sizeof FEATURES[0])
typedef union {
    VkBaseOutStructure base;
    VkPhysicalDeviceFeatures2 core;
    VkPhysicalDevice16BitStorageFeatures s16;
    VkPhysicalDevice8BitStorageFeaturesKHR s8;
    VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16i8;
    VkPhysicalDeviceVulkanMemoryModelFeaturesKHR vmm;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop;
    IntegerDotFeatures idot;
} FeatStruct;
static const struct { VkStructureType stype; const char *ext; } FSTRUCTS[FS_COUNT] = {
    {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, NULL},
    {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, NULL}, /* core in 1.1 */
    {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR, "VK_KHR_8bit_storage"},
    {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR, "VK_KHR_shader_float16_int8"},
    {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR, "VK_KHR_vulkan_memory_model"},
    {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, "VK_KHR_cooperative_matrix"},
    {STYPE_INTEGER_DOT_FEATURES, "VK_KHR_shader_integer_dot_product"},
};

static struct {
    int quiet, validation;
    Buf *bufs;
    size_t nbufs;
    Kernel *kernels;
    size_t nkernels;
    Disp *disps;
    size_t ndisps;
    Pipe *pipes;
    size_t npipes;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    VkDescriptorPool dpool;
    VkCommandPool cpool;
    VkFence fence;
} G;

/* ---- loading and validating (no Vulkan yet) ------------------------------------------------------ */

static int dtype_bits(const char *t)
{
    static const char *const names[] = {"float32", "int32", "uint32", "float16", "int16", "uint16", "int8", "uint8"};
    static const int bits[] = {32, 32, 32, 16, 16, 16, 8, 8};
    size_t i;
    for (i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (!strcmp(t, names[i])) return bits[i];
    return 0;
}

#define TOO_BIG ((uint64_t)1 << 48) /* keeps size arithmetic far from overflow */

static uint64_t mul_checked(uint64_t a, uint64_t b, const char *where)
{
    if (a && b > TOO_BIG / a) die(2, "tensor too large, %s", where);
    return a * b;
}

/* Input tensors: bytes of their span; outputs: packed bytes (and their strides must be packed). */
static uint64_t tensor_bytes(const JNode *t, int output, const char *where)
{
    const char *dt = need(t, "data_type", J_STR, where)->s;
    const JNode *sj = jget(t, "strides");
    int bits = dtype_bits(dt);
    size_t n, ns, i;
    uint32_t *sizes = u32_array(t, "sizes", &n, where), *strides = NULL;
    uint64_t elems = 1, span = 1, packed = 1;
    if (!bits) die(2, "unknown tensor data_type \"%s\" (float32, float16, int32, int16, int8, uint32, uint16, uint8), %s", dt, where);
    if (n < 1) die(2, "tensor \"sizes\" must have at least one dimension, %s", where);
    if (!sj) die(2, "missing field \"strides\" (null for packed), %s", where);
    if (sj->type != J_NULL) {
        strides = u32_array(t, "strides", &ns, where);
        if (ns != n) die(2, "tensor has %lu strides for %lu sizes, %s", (unsigned long)ns, (unsigned long)n, where);
    }
    for (i = n; i-- > 0;) {
        if (sizes[i] < 1) die(2, "tensor \"sizes\"[%lu] must be >= 1, got 0, %s", (unsigned long)i, where);
        if (strides && strides[i] != packed && output)
            die(2, "output tensors must be packed; \"strides\"[%lu] is %lu, packed is %llu, %s",
                (unsigned long)i, (unsigned long)strides[i], (unsigned long long)packed, where);
        span += mul_checked(sizes[i] - 1, strides ? strides[i] : packed, where);
        if (span > TOO_BIG) die(2, "tensor too large, %s", where);
        elems = mul_checked(elems, sizes[i], where);
        packed = elems;
    }
    return ((output ? elems : span) * (uint64_t)bits + 7) / 8;
}

static void load_buffers(const JNode *plan)
{
    const JNode *a = need(plan, "buffers", J_ARR, "plan");
    size_t i, j;
    G.nbufs = a->n;
    G.bufs = xalloc((a->n + 1) * sizeof *G.bufs);
    for (i = 0; i < a->n; i++) {
        const JNode *b = &a->kids[i];
        Buf *B = &G.bufs[i];
        char where[160];
        const char *role;
        sprintf(where, "plan buffer %lu", (unsigned long)i);
        if (b->type != J_OBJ) die(2, "buffer must be an object, got %s, %s", JTYPE[b->type], where);
        B->name = need(b, "name", J_STR, where)->s;
        sprintf(where, "plan buffer %lu \"%.100s\"", (unsigned long)i, B->name);
        role = need(b, "role", J_STR, where)->s;
        B->bytes = as_uint(need(b, "bytes", J_NUM, where), TOO_BIG, "\"bytes\"", where);
        if (B->bytes < 4 || B->bytes % 4)
            die(2, "\"bytes\" must be a multiple of 4 and >= 4, got %llu, %s", (unsigned long long)B->bytes, where);
        if (!strcmp(role, "input") || !strcmp(role, "output")) {
            B->role = role[0] == 'i' ? R_INPUT : R_OUTPUT;
            B->file_bytes = tensor_bytes(need(b, "tensor", J_OBJ, where), B->role == R_OUTPUT, where);
            if (B->file_bytes > B->bytes)
                die(2, "the tensor needs %llu bytes, more than \"bytes\" %llu, %s",
                    (unsigned long long)B->file_bytes, (unsigned long long)B->bytes, where);
        } else if (!strcmp(role, "scratch")) {
            B->role = R_SCRATCH;
            B->zeroed = need(b, "zeroed", J_BOOL, where)->b;
        } else if (!strcmp(role, "constant")) {
            size_t n;
            B->role = R_CONSTANT;
            B->data = u32_array(b, "data", &n, where);
            if (n != B->bytes / 4)
                die(2, "constant \"data\" has %lu words, \"bytes\" %llu needs %llu, %s", (unsigned long)n,
                    (unsigned long long)B->bytes, (unsigned long long)B->bytes / 4, where);
        } else die(2, "unknown buffer \"role\" \"%s\" (input, output, scratch, constant), %s", role, where);
        for (j = 0; j < i; j++)
            if (!strcmp(G.bufs[j].name, B->name)) die(2, "duplicate buffer name, %s", where);
    }
}

/* The manifest entry of a kernel, checked once; its SPIR-V file is read here too. */
static Kernel *find_kernel(const JNode *modules, const char *manifest_path, const char *name, const char *where)
{
    size_t i, len;
    Kernel *K;
    const JNode *m = jget(modules, name), *bindings, *pc, *sc, *feats, *exts;
    const char *file, *slash = NULL, *q;
    char *dir;
    for (i = 0; i < G.nkernels; i++)
        if (!strcmp(G.kernels[i].name, name)) return &G.kernels[i];
    if (!m) die(2, "unknown kernel \"%s\" (not in the manifest), %s", name, where);
    K = &G.kernels[G.nkernels++];
    K->name = name;
    K->m = m;
    K->where = xstrcat3("manifest module \"", name, "\"");
    if (m->type != J_OBJ) die(2, "module must be an object, %s", K->where);
    K->entry = need(m, "entry_point", J_STR, K->where)->s;
    bindings = need(m, "bindings", J_ARR, K->where);
    K->nbind = bindings->n;
    for (i = 0; i < bindings->n; i++) { /* the plan addresses bindings by position: set 0, 0..n-1 */
        const JNode *b = &bindings->kids[i];
        uint64_t set = as_uint(need(b, "set", J_NUM, K->where), 0xFFFFFFFFu, "binding \"set\"", K->where);
        uint64_t bn = as_uint(need(b, "binding", J_NUM, K->where), 0xFFFFFFFFu, "\"binding\"", K->where);
        if (set != 0 || bn >= bindings->n)
            die(2, "binding (set %llu, binding %llu) is not supported by this host (needs set 0, bindings 0..%lu), %s",
                (unsigned long long)set, (unsigned long long)bn, (unsigned long)bindings->n - 1, K->where);
    }
    pc = jget(m, "push_constants");
    if (pc && pc->type != J_NULL) {
        if (pc->type != J_OBJ) die(2, "field \"push_constants\" must be an object or null, %s", K->where);
        K->push_size = (uint32_t)as_uint(need(pc, "size", J_NUM, K->where), 0xFFFFu, "push_constants \"size\"", K->where);
        if (K->push_size % 4) die(2, "push_constants \"size\" %lu is not a multiple of 4, %s", (unsigned long)K->push_size, K->where);
    }
    sc = need(m, "spec_constants", J_ARR, K->where);
    for (i = 0; i < sc->n; i++) {
        uint64_t id = as_uint(need(&sc->kids[i], "id", J_NUM, K->where), 1023, "spec constant \"id\"", K->where);
        const char *t = need(&sc->kids[i], "type", J_STR, K->where)->s;
        if (strcmp(t, "uint32") && strcmp(t, "int32") && strcmp(t, "float32") && strcmp(t, "bool"))
            die(2, "spec constant %llu has type \"%s\", not supported by this host (4-byte types only), %s",
                (unsigned long long)id, t, K->where);
        if (id + 1 > K->nspec_ids) K->nspec_ids = (size_t)id + 1;
    }
    feats = need(m, "device_features", J_ARR, K->where);
    for (i = 0; i < feats->n; i++) {
        size_t f;
        if (feats->kids[i].type != J_STR) die(2, "\"device_features\" must hold strings, %s", K->where);
        for (f = 0; f < NFEATURES && strcmp(FEATURES[f].name, feats->kids[i].s); f++) {}
        if (f == NFEATURES) die(2, "needs feature %s, not supported by this host, %s", feats->kids[i].s, K->where);
    }
    exts = need(m, "device_extensions", J_ARR, K->where);
    for (i = 0; i < exts->n; i++)
        if (exts->kids[i].type != J_STR) die(2, "\"device_extensions\" must hold strings, %s", K->where);
    /* SPIR-V lives next to the manifest. */
    file = need(m, "file", J_STR, K->where)->s;
    for (q = manifest_path; *q; q++)
        if (*q == '/' || *q == '\\') slash = q;
    len = slash && file[0] != '/' && file[0] != '\\' ? (size_t)(slash - manifest_path) + 1 : 0;
    dir = xalloc(len + 1);
    memcpy(dir, manifest_path, len);
    K->code = (const uint32_t *)read_file(xstrcat3(dir, file, ""), &K->code_bytes, "SPIR-V file");
    if (K->code_bytes < 20 || K->code_bytes % 4 || K->code[0] != 0x07230203u)
        die(2, "\"%s%s\" is not a SPIR-V module (%lu bytes), %s", dir, file, (unsigned long)K->code_bytes, K->where);
    return K;
}

static uint32_t *copy_u32(const uint32_t *a, size_t n)
{
    uint32_t *b = xalloc((n + 1) * sizeof *b);
    memcpy(b, a, n * sizeof *a);
    return b;
}

static void load_dispatches(const JNode *plan, const JNode *manifest, const char *manifest_path)
{
    const JNode *a = need(plan, "dispatches", J_ARR, "plan");
    const JNode *modules = need(manifest, "modules", J_OBJ, "manifest");
    size_t i, j, n;
    if (a->n == 0) die(2, "plan has no dispatches, plan");
    G.ndisps = a->n;
    G.disps = xalloc(a->n * sizeof *G.disps);
    G.kernels = xalloc(a->n * sizeof *G.kernels);
    G.pipes = xalloc(a->n * sizeof *G.pipes);
    for (i = 0; i < a->n; i++) {
        const JNode *d = &a->kids[i], *ls;
        Disp *D = &G.disps[i];
        Kernel *K;
        const char *name;
        uint32_t *groups;
        sprintf(D->where, "plan dispatch %lu", (unsigned long)i);
        if (d->type != J_OBJ) die(2, "dispatch must be an object, got %s, %s", JTYPE[d->type], D->where);
        name = need(d, "kernel", J_STR, D->where)->s;
        sprintf(D->where, "plan dispatch %lu \"%.100s\"", (unsigned long)i, name);
        D->k = K = find_kernel(modules, manifest_path, name, D->where);
        D->spec = u32_array(d, "spec", &D->nspec, D->where);
        D->push = u32_array(d, "push", &D->npush, D->where);
        D->bind = u32_array(d, "bindings", &D->nbind, D->where);
        D->writes = u32_array(d, "writes", &D->nwrites, D->where);
        D->barrier = u32_array(d, "barrier", &D->nbarrier, D->where);
        groups = u32_array(d, "groups", &n, D->where);
        if (n != 3) die(2, "\"groups\" must have 3 entries, got %lu, %s", (unsigned long)n, D->where);
        for (j = 0; j < 3; j++) {
            if (!groups[j]) die(2, "\"groups\"[%lu] is 0 (each must be >= 1), %s", (unsigned long)j, D->where);
            D->groups[j] = groups[j];
        }
        if (D->npush * 4 != K->push_size)
            die(2, "wrong push constant count, %s: %lu push words, manifest says %lu (push_constants.size %lu bytes)",
                D->where, (unsigned long)D->npush, (unsigned long)K->push_size / 4, (unsigned long)K->push_size);
        if (D->nbind != K->nbind)
            die(2, "wrong binding count, %s: %lu bindings, manifest says %lu", D->where,
                (unsigned long)D->nbind, (unsigned long)K->nbind);
        if (D->nspec > K->nspec_ids)
            die(2, "too many spec constants, %s: %lu spec values, manifest has %lu specialization constants",
                D->where, (unsigned long)D->nspec, (unsigned long)K->nspec_ids);
        for (j = 0; j < D->nspec; j++) { /* positions are constant_ids: each must exist, bools be 0/1 */
            const JNode *sc = need(K->m, "spec_constants", J_ARR, K->where);
            size_t s;
            for (s = 0; s < sc->n && jget(&sc->kids[s], "id")->u != j; s++) {}
            if (s == sc->n)
                die(2, "spec value %lu has no specialization constant with that id in the manifest, %s",
                    (unsigned long)j, D->where);
            if (!strcmp(jget(&sc->kids[s], "type")->s, "bool") && D->spec[j] > 1)
                die(2, "spec value %lu (bool \"%s\") must be 0 or 1, got %lu, %s", (unsigned long)j,
                    jget(&sc->kids[s], "name") && jget(&sc->kids[s], "name")->type == J_STR ? jget(&sc->kids[s], "name")->s : "?",
                    (unsigned long)D->spec[j], D->where);
        }
        for (j = 0; j < D->nbind; j++)
            if (D->bind[j] >= G.nbufs)
                die(2, "buffer id out of range, %s: \"bindings\"[%lu] is %lu, the plan has %lu buffers", D->where,
                    (unsigned long)j, (unsigned long)D->bind[j], (unsigned long)G.nbufs);
        for (j = 0; j < D->nwrites; j++)
            if (D->writes[j] >= D->nbind)
                die(2, "\"writes\"[%lu] is %lu, not a binding position (the dispatch has %lu bindings), %s",
                    (unsigned long)j, (unsigned long)D->writes[j], (unsigned long)D->nbind, D->where);
        for (j = 0; j < D->nbarrier; j++)
            if (D->barrier[j] >= G.nbufs)
                die(2, "buffer id out of range, %s: \"barrier\"[%lu] is %lu, the plan has %lu buffers", D->where,
                    (unsigned long)j, (unsigned long)D->barrier[j], (unsigned long)G.nbufs);
        /* Workgroup size: spec values override the manifest's local_size where it names spec ids. */
        ls = need(K->m, "local_size", J_OBJ, K->where);
        {
            size_t ns, nids;
            uint32_t *size = u32_array(ls, "size", &ns, K->where);
            const JNode *ids = need(ls, "spec_ids", J_ARR, K->where);
            nids = ids->n;
            if (ns != 3 || nids != 3) die(2, "\"local_size\" must have 3 sizes and 3 spec_ids, %s", K->where);
            for (j = 0; j < 3; j++) {
                D->local[j] = size[j];
                if (ids->kids[j].type != J_NULL) {
                    uint64_t id = as_uint(&ids->kids[j], 1023, "local_size spec id", K->where);
                    if (id < D->nspec) D->local[j] = D->spec[id];
                }
                if (!D->local[j]) die(2, "workgroup size %lu is 0, %s", (unsigned long)j, D->where);
            }
        }
        /* One pipeline per (kernel, spec values). */
        for (D->pipe = 0; D->pipe < G.npipes; D->pipe++) {
            Pipe *p = &G.pipes[D->pipe];
            if (p->k == K && p->nspec == D->nspec && !memcmp(p->spec, D->spec, D->nspec * 4)) break;
        }
        if (D->pipe == G.npipes) {
            G.pipes[G.npipes].k = K;
            G.pipes[G.npipes].spec = copy_u32(D->spec, D->nspec);
            G.pipes[G.npipes++].nspec = D->nspec;
        }
    }
}

static void attach_files(char **ins, size_t nin, char **outs, size_t nout)
{
    size_t i, ki = 0, ko = 0;
    for (i = 0; i < G.nbufs; i++) ki += G.bufs[i].role == R_INPUT, ko += G.bufs[i].role == R_OUTPUT;
    if (ki != nin || ko != nout)
        die(2, "the plan has %lu inputs and %lu outputs, the command line gives %lu --in and %lu --out files",
            (unsigned long)ki, (unsigned long)ko, (unsigned long)nin, (unsigned long)nout);
    for (i = ki = ko = 0; i < G.nbufs; i++) {
        Buf *B = &G.bufs[i];
        if (B->role == R_OUTPUT) B->path = outs[ko++];
        if (B->role != R_INPUT) continue;
        B->path = ins[ki++];
        B->init = read_file(B->path, &B->init_len, "input file");
        /* The tensor's span, that padded to whole words (what vkops.dtypes.pack writes), or the buffer. */
        if (B->init_len != B->bytes && B->init_len != B->file_bytes && B->init_len != (B->file_bytes + 3) / 4 * 4)
            die(2, "wrong input file size, plan buffer %lu \"%s\": \"%s\" has %lu bytes, expected %llu (the tensor), "
                "%llu (word-padded) or %llu (\"bytes\")", (unsigned long)i, B->name, B->path, (unsigned long)B->init_len,
                (unsigned long long)B->file_bytes, (unsigned long long)(B->file_bytes + 3) / 4 * 4,
                (unsigned long long)B->bytes);
    }
}

/* ---- Vulkan ---------------------------------------------------------------------------------------- */

static const char *vk_result_name(VkResult r)
{
    switch (r) {
#define R(x) case x: return #x;
    R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE) R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_MEMORY_MAP_FAILED)
    R(VK_ERROR_LAYER_NOT_PRESENT) R(VK_ERROR_EXTENSION_NOT_PRESENT) R(VK_ERROR_FEATURE_NOT_PRESENT)
    R(VK_ERROR_INCOMPATIBLE_DRIVER) R(VK_ERROR_TOO_MANY_OBJECTS) R(VK_ERROR_FORMAT_NOT_SUPPORTED)
    R(VK_ERROR_FRAGMENTED_POOL) R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    R(VK_ERROR_FRAGMENTATION) R(VK_ERROR_INVALID_SHADER_NV) R(VK_ERROR_UNKNOWN)
#undef R
    default: return "VkResult";
    }
}

static void vk_check(VkResult r, const char *call, const char *where)
{
    if (r != VK_SUCCESS) die(3, "%s failed with %s (%d), %s", call, vk_result_name(r), (int)r, where);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    const char *s = sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error"
                  : sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT ? "warning" : "info";
    (void)type, (void)user;
    if (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT))
        g_saw_message = 1;
    fprintf(stderr, "vkops_host: validation %s: %s\n", s, data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

static void create_instance(void)
{
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "vkops_host", 1, NULL, 0, VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
    VkDebugUtilsMessengerCreateInfoEXT mci = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        on_message, NULL};
    /* VKOPS_VALIDATION=sync adds synchronization validation: it reports a missing plan barrier as a hazard,
     * which no CPU device shows (lavapipe runs dispatches one after another). */
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, NULL, 1, &sync, 0, NULL};
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *exts[2] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    uint32_t api = VK_API_VERSION_1_0;
    PFN_vkEnumerateInstanceVersion enum_version =
        (PFN_vkEnumerateInstanceVersion)vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (!enum_version || enum_version(&api) != VK_SUCCESS || api < VK_API_VERSION_1_1)
        die(3, "the Vulkan loader does not support Vulkan 1.1, instance");
    if (G.validation) {
        uint32_t n = 0, i;
        VkLayerProperties *props;
        vk_check(vkEnumerateInstanceLayerProperties(&n, NULL), "vkEnumerateInstanceLayerProperties", "instance");
        props = xalloc((n + 1) * sizeof *props);
        vk_check(vkEnumerateInstanceLayerProperties(&n, props), "vkEnumerateInstanceLayerProperties", "instance");
        for (i = 0; i < n && strcmp(props[i].layerName, layer); i++) {}
        if (i == n) die(3, "VKOPS_VALIDATION=1 but %s is not installed, instance", layer);
        /* Chained here too, so messages from instance creation and destruction are seen. */
        ici.pNext = &mci;
        ici.enabledLayerCount = 1;
        ici.ppEnabledLayerNames = &layer;
        ici.enabledExtensionCount = G.validation == 2 ? 2 : 1;
        ici.ppEnabledExtensionNames = exts;
        if (G.validation == 2) {
            vf.pNext = &mci;
            ici.pNext = &vf;
        }
    }
    vk_check(vkCreateInstance(&ici, NULL, &G.instance), "vkCreateInstance", "instance");
    if (G.validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(G.instance, "vkCreateDebugUtilsMessengerEXT");
        if (!create) die(3, "vkCreateDebugUtilsMessengerEXT not found, instance");
        vk_check(create(G.instance, &mci, NULL, &G.messenger), "vkCreateDebugUtilsMessengerEXT", "instance");
    }
}

static int has_ext(const VkExtensionProperties *e, uint32_t n, const char *name)
{
    uint32_t i;
    for (i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return 1;
    return 0;
}

static void create_device(uint32_t index)
{
    uint32_t n = 0, i, nq = 0, qf, nenable = 0;
    VkPhysicalDevice *devs;
    VkPhysicalDeviceProperties props;
    VkQueueFamilyProperties *qfp;
    VkExtensionProperties *exts;
    const char **enable;
    FeatStruct have[FS_COUNT], want[FS_COUNT];
    int used[FS_COUNT] = {0};
    void *chain = NULL;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, 0, 1, &prio};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, NULL, 0, 1, &qci, 0, NULL, 0, NULL, NULL};
    char dev[320];
    size_t d, k, j;

    vk_check(vkEnumeratePhysicalDevices(G.instance, &n, NULL), "vkEnumeratePhysicalDevices", "instance");
    if (index >= n) die(2, "--device %lu, but there are %lu Vulkan devices", (unsigned long)index, (unsigned long)n);
    devs = xalloc((n + 1) * sizeof *devs);
    vk_check(vkEnumeratePhysicalDevices(G.instance, &n, devs), "vkEnumeratePhysicalDevices", "instance");
    if (index >= n) die(2, "--device %lu, but there are %lu Vulkan devices", (unsigned long)index, (unsigned long)n);
    G.phys = devs[index];
    vkGetPhysicalDeviceProperties(G.phys, &props);
    sprintf(dev, "device %lu \"%.256s\"", (unsigned long)index, props.deviceName);
    if (props.apiVersion < VK_API_VERSION_1_1) die(3, "%s supports only Vulkan 1.0 (1.1 needed)", dev);

    /* Device limits the plan must respect. */
    for (d = 0; d < G.ndisps; d++) {
        const Disp *D = &G.disps[d];
        const VkPhysicalDeviceLimits *L = &props.limits;
        for (j = 0; j < 3; j++) {
            if (D->groups[j] > L->maxComputeWorkGroupCount[j])
                die(2, "group count above the device limit, %s: groups[%lu] = %lu, maxComputeWorkGroupCount[%lu] = %lu on %s",
                    D->where, (unsigned long)j, (unsigned long)D->groups[j], (unsigned long)j,
                    (unsigned long)L->maxComputeWorkGroupCount[j], dev);
            if (D->local[j] > L->maxComputeWorkGroupSize[j])
                die(2, "workgroup size above the device limit, %s: local size[%lu] = %lu, maxComputeWorkGroupSize[%lu] = %lu on %s",
                    D->where, (unsigned long)j, (unsigned long)D->local[j], (unsigned long)j,
                    (unsigned long)L->maxComputeWorkGroupSize[j], dev);
        }
        if ((uint64_t)D->local[0] * D->local[1] * D->local[2] > L->maxComputeWorkGroupInvocations)
            die(2, "workgroup size above the device limit, %s: %lu x %lu x %lu invocations, maxComputeWorkGroupInvocations = %lu on %s",
                D->where, (unsigned long)D->local[0], (unsigned long)D->local[1], (unsigned long)D->local[2],
                (unsigned long)L->maxComputeWorkGroupInvocations, dev);
        if (D->k->push_size > L->maxPushConstantsSize)
            die(2, "push constants above the device limit, %s: %lu bytes, maxPushConstantsSize = %lu on %s", D->where,
                (unsigned long)D->k->push_size, (unsigned long)L->maxPushConstantsSize, dev);
        if (D->nbind > L->maxPerStageDescriptorStorageBuffers)
            die(2, "too many storage buffers for the device, %s: %lu, maxPerStageDescriptorStorageBuffers = %lu on %s",
                D->where, (unsigned long)D->nbind, (unsigned long)L->maxPerStageDescriptorStorageBuffers, dev);
    }
    for (d = 0; d < G.nbufs; d++)
        if (G.bufs[d].bytes > props.limits.maxStorageBufferRange)
            die(2, "buffer above the device limit, plan buffer %lu \"%s\": %llu bytes, maxStorageBufferRange = %lu on %s",
                (unsigned long)d, G.bufs[d].name, (unsigned long long)G.bufs[d].bytes,
                (unsigned long)props.limits.maxStorageBufferRange, dev);

    vkGetPhysicalDeviceQueueFamilyProperties(G.phys, &nq, NULL);
    qfp = xalloc((nq + 1) * sizeof *qfp);
    vkGetPhysicalDeviceQueueFamilyProperties(G.phys, &nq, qfp);
    for (qf = 0; qf < nq && !(qfp[qf].queueFlags & VK_QUEUE_COMPUTE_BIT); qf++) {}
    if (qf == nq) die(3, "%s has no compute queue", dev);
    qci.queueFamilyIndex = qf;

    n = 0;
    vk_check(vkEnumerateDeviceExtensionProperties(G.phys, NULL, &n, NULL), "vkEnumerateDeviceExtensionProperties", dev);
    exts = xalloc((n + 1) * sizeof *exts);
    vk_check(vkEnumerateDeviceExtensionProperties(G.phys, NULL, &n, exts), "vkEnumerateDeviceExtensionProperties", dev);

    /* What the device offers: query only the structs whose extension it has. */
    memset(have, 0, sizeof have);
    memset(want, 0, sizeof want);
    for (k = FS_COUNT; k-- > 0;) {
        have[k].base.sType = want[k].base.sType = FSTRUCTS[k].stype;
        if (k == FS_CORE || !FSTRUCTS[k].ext || has_ext(exts, n, FSTRUCTS[k].ext)) {
            have[k].base.pNext = chain;
            chain = &have[k];
        }
    }
    vkGetPhysicalDeviceFeatures2(G.phys, &have[FS_CORE].core);

    /* What the plan's kernels need: manifest device_features and device_extensions. */
    for (k = 0, j = FS_COUNT + 1; k < G.nkernels; k++) j += jget(G.kernels[k].m, "device_extensions")->n;
    enable = xalloc(j * sizeof *enable);
    for (k = 0; k < G.nkernels; k++) {
        const Kernel *K = &G.kernels[k];
        const JNode *feats = jget(K->m, "device_features"), *ex = jget(K->m, "device_extensions");
        for (j = 0; j < feats->n; j++) {
            size_t f, st;
            for (f = 0; strcmp(FEATURES[f].name, feats->kids[j].s); f++) {} /* known: checked at load */
            st = (size_t)FEATURES[f].st;
            if (FSTRUCTS[st].ext && !has_ext(exts, n, FSTRUCTS[st].ext))
                die(2, "kernel \"%s\" needs feature %s, but %s lacks %s", K->name, FEATURES[f].name, dev, FSTRUCTS[st].ext);
            if (!*(VkBool32 *)((char *)&have[st] + FEATURES[f].off))
                die(2, "kernel \"%s\" needs feature %s, not supported by %s", K->name, FEATURES[f].name, dev);
            *(VkBool32 *)((char *)&want[st] + FEATURES[f].off) = VK_TRUE;
            used[st] = 1;
        }
        for (j = 0; j < ex->n; j++) {
            if (!has_ext(exts, n, ex->kids[j].s))
                die(2, "kernel \"%s\" needs device extension %s, not supported by %s", K->name, ex->kids[j].s, dev);
            for (i = 0; i < nenable && strcmp(enable[i], ex->kids[j].s); i++) {}
            if (i == nenable) enable[nenable++] = ex->kids[j].s;
        }
    }
    chain = NULL;
    for (k = FS_COUNT; k-- > 0;) {
        if (k != FS_CORE && !used[k]) continue;
        want[k].base.pNext = chain;
        chain = &want[k];
        if (FSTRUCTS[k].ext) {
            for (i = 0; i < nenable && strcmp(enable[i], FSTRUCTS[k].ext); i++) {}
            if (i == nenable) enable[nenable++] = FSTRUCTS[k].ext;
        }
    }
    dci.pNext = chain; /* VkPhysicalDeviceFeatures2 heads it; pEnabledFeatures stays NULL */
    dci.enabledExtensionCount = nenable;
    dci.ppEnabledExtensionNames = enable;
    vk_check(vkCreateDevice(G.phys, &dci, NULL, &G.device), "vkCreateDevice", dev);
    vkGetDeviceQueue(G.device, qf, 0, &G.queue);
    if (!G.quiet)
        printf("vkops_host: %s, queue family %lu%s\n", dev, (unsigned long)qf, G.validation ? ", validation layer on" : "");

    {
        VkCommandPoolCreateInfo cpi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL, 0, qf};
        vk_check(vkCreateCommandPool(G.device, &cpi, NULL, &G.cpool), "vkCreateCommandPool", dev);
    }
}

static void create_buffers(void)
{
    VkPhysicalDeviceMemoryProperties mp;
    size_t i;
    vkGetPhysicalDeviceMemoryProperties(G.phys, &mp);
    for (i = 0; i < G.nbufs; i++) {
        Buf *B = &G.bufs[i];
        char where[160];
        VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, NULL, 0, B->bytes,
                                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, VK_SHARING_MODE_EXCLUSIVE, 0, NULL};
        VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, 0, UINT32_MAX};
        VkMemoryRequirements req;
        const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        uint32_t t;
        void *map;
        sprintf(where, "plan buffer %lu \"%.100s\"", (unsigned long)i, B->name);
        vk_check(vkCreateBuffer(G.device, &bci, NULL, &B->buf), "vkCreateBuffer", where);
        vkGetBufferMemoryRequirements(G.device, B->buf, &req);
        /* Host-visible coherent memory, device-local too where there is such (integrated GPUs, ReBAR). */
        for (t = 0; t < mp.memoryTypeCount; t++) {
            VkMemoryPropertyFlags f = mp.memoryTypes[t].propertyFlags;
            if (!(req.memoryTypeBits >> t & 1) || (f & hv) != hv) continue;
            if (mai.memoryTypeIndex == UINT32_MAX || (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) mai.memoryTypeIndex = t;
            if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) break;
        }
        if (mai.memoryTypeIndex == UINT32_MAX) die(3, "no host-visible coherent memory type for %s", where);
        mai.allocationSize = req.size;
        vk_check(vkAllocateMemory(G.device, &mai, NULL, &B->mem), "vkAllocateMemory", where);
        vk_check(vkBindBufferMemory(G.device, B->buf, B->mem, 0), "vkBindBufferMemory", where);
        vk_check(vkMapMemory(G.device, B->mem, 0, VK_WHOLE_SIZE, 0, &map), "vkMapMemory", where);
        B->map = map;
        /* Everything starts zeroed: padding, zeroed scratch, and determinism for the rest. */
        memset(B->map, 0, (size_t)B->bytes);
        if (B->role == R_INPUT) memcpy(B->map, B->init, B->init_len);
        if (B->role == R_CONSTANT) {
            uint64_t w;
            for (w = 0; w < B->bytes / 4; w++) { /* little-endian words, whatever the host's byte order */
                B->map[4 * w] = (unsigned char)B->data[w];
                B->map[4 * w + 1] = (unsigned char)(B->data[w] >> 8);
                B->map[4 * w + 2] = (unsigned char)(B->data[w] >> 16);
                B->map[4 * w + 3] = (unsigned char)(B->data[w] >> 24);
            }
        }
    }
}

static void create_pipelines(void)
{
    size_t i, j, total = 0;
    for (i = 0; i < G.nkernels; i++) {
        Kernel *K = &G.kernels[i];
        VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0, K->code_bytes, K->code};
        VkDescriptorSetLayoutBinding *lb = xalloc((K->nbind + 1) * sizeof *lb);
        VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0,
                                               (uint32_t)K->nbind, lb};
        VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, K->push_size};
        VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, &K->dsl,
                                          K->push_size ? 1 : 0, &pcr};
        vk_check(vkCreateShaderModule(G.device, &smi, NULL, &K->shader), "vkCreateShaderModule", K->where);
        for (j = 0; j < K->nbind; j++) {
            lb[j].binding = (uint32_t)j;
            lb[j].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            lb[j].descriptorCount = 1;
            lb[j].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        vk_check(vkCreateDescriptorSetLayout(G.device, &dli, NULL, &K->dsl), "vkCreateDescriptorSetLayout", K->where);
        vk_check(vkCreatePipelineLayout(G.device, &pli, NULL, &K->layout), "vkCreatePipelineLayout", K->where);
    }
    for (i = 0; i < G.npipes; i++) {
        Pipe *P = &G.pipes[i];
        VkSpecializationMapEntry *me = xalloc((P->nspec + 1) * sizeof *me);
        VkSpecializationInfo si = {(uint32_t)P->nspec, me, P->nspec * 4, P->spec};
        VkComputePipelineCreateInfo cpi = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
            {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT,
             P->k->shader, P->k->entry, P->nspec ? &si : NULL},
            P->k->layout, VK_NULL_HANDLE, -1};
        for (j = 0; j < P->nspec; j++) { /* position j is constant_id j, 4 bytes each */
            me[j].constantID = (uint32_t)j;
            me[j].offset = (uint32_t)(4 * j);
            me[j].size = 4;
        }
        vk_check(vkCreateComputePipelines(G.device, VK_NULL_HANDLE, 1, &cpi, NULL, &P->p), "vkCreateComputePipelines",
                 P->k->where);
    }
    for (i = 0; i < G.ndisps; i++) total += G.disps[i].nbind;
    {
        /* At least one descriptor: older Vulkan versions require a non-empty pool size list. */
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, (uint32_t)(total ? total : 1)};
        VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0,
                                          (uint32_t)G.ndisps, 1, &ps};
        vk_check(vkCreateDescriptorPool(G.device, &dpi, NULL, &G.dpool), "vkCreateDescriptorPool", "plan");
    }
    for (i = 0; i < G.ndisps; i++) {
        Disp *D = &G.disps[i];
        VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, G.dpool, 1, &D->k->dsl};
        VkDescriptorBufferInfo *bi = xalloc((D->nbind + 1) * sizeof *bi);
        VkWriteDescriptorSet *w = xalloc((D->nbind + 1) * sizeof *w);
        vk_check(vkAllocateDescriptorSets(G.device, &dai, &D->set), "vkAllocateDescriptorSets", D->where);
        for (j = 0; j < D->nbind; j++) {
            bi[j].buffer = G.bufs[D->bind[j]].buf;
            bi[j].offset = 0;
            bi[j].range = VK_WHOLE_SIZE;
            w[j].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
            w[j].dstSet = D->set;
            w[j].dstBinding = (uint32_t)j;
            w[j].descriptorCount = 1;
            w[j].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w[j].pBufferInfo = &bi[j];
        }
        if (D->nbind) vkUpdateDescriptorSets(G.device, (uint32_t)D->nbind, w, 0, NULL);
    }
}

static void run_plan(void)
{
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, G.cpool,
                                       VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBufferBeginInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                    VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT,
                          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, NULL, 0, NULL};
    VkCommandBuffer cb;
    VkPipeline bound = VK_NULL_HANDLE;
    size_t i;
    vk_check(vkAllocateCommandBuffers(G.device, &cai, &cb), "vkAllocateCommandBuffers", "plan");
    vk_check(vkBeginCommandBuffer(cb, &cbi), "vkBeginCommandBuffer", "plan");
    for (i = 0; i < G.ndisps; i++) {
        const Disp *D = &G.disps[i];
        VkPipeline p = G.pipes[D->pipe].p;
        if (D->nbarrier)
            vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                                 0, NULL, 0, NULL);
        if (p != bound) vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, bound = p);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, D->k->layout, 0, 1, &D->set, 0, NULL);
        if (D->k->push_size)
            vkCmdPushConstants(cb, D->k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, D->k->push_size, D->push);
        vkCmdDispatch(cb, D->groups[0], D->groups[1], D->groups[2]);
    }
    /* Shader writes made visible to the host reads of the outputs after the fence. */
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer", "plan");
    si.pCommandBuffers = &cb;
    vk_check(vkCreateFence(G.device, &fci, NULL, &G.fence), "vkCreateFence", "plan");
    vk_check(vkQueueSubmit(G.queue, 1, &si, G.fence), "vkQueueSubmit", "plan");
    vk_check(vkWaitForFences(G.device, 1, &G.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences", "plan");
}

static void write_outputs(void)
{
    size_t i;
    for (i = 0; i < G.nbufs; i++) {
        const Buf *B = &G.bufs[i];
        FILE *f;
        int bad;
        if (B->role != R_OUTPUT) continue;
        if (!(f = fopen(B->path, "wb"))) die(2, "cannot create output file \"%s\", plan buffer %lu \"%s\"", B->path, (unsigned long)i, B->name);
        bad = fwrite(B->map, 1, (size_t)B->file_bytes, f) != (size_t)B->file_bytes;
        if (fclose(f) != 0 || bad) die(2, "cannot write output file \"%s\", plan buffer %lu \"%s\"", B->path, (unsigned long)i, B->name);
    }
}

/* Safe from any state: destroys what exists, in reverse order of creation. */
static void cleanup(void)
{
    size_t i;
    if (G.device) {
        vkDeviceWaitIdle(G.device);
        if (G.fence) vkDestroyFence(G.device, G.fence, NULL);
        if (G.cpool) vkDestroyCommandPool(G.device, G.cpool, NULL);
        if (G.dpool) vkDestroyDescriptorPool(G.device, G.dpool, NULL);
        for (i = 0; i < G.npipes; i++)
            if (G.pipes[i].p) vkDestroyPipeline(G.device, G.pipes[i].p, NULL);
        for (i = 0; i < G.nkernels; i++) {
            Kernel *K = &G.kernels[i];
            if (K->layout) vkDestroyPipelineLayout(G.device, K->layout, NULL);
            if (K->dsl) vkDestroyDescriptorSetLayout(G.device, K->dsl, NULL);
            if (K->shader) vkDestroyShaderModule(G.device, K->shader, NULL);
        }
        for (i = 0; i < G.nbufs; i++) {
            Buf *B = &G.bufs[i];
            if (B->buf) vkDestroyBuffer(G.device, B->buf, NULL);
            if (B->map) vkUnmapMemory(G.device, B->mem);
            if (B->mem) vkFreeMemory(G.device, B->mem, NULL);
        }
        vkDestroyDevice(G.device, NULL);
    }
    if (G.messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(G.instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(G.instance, G.messenger, NULL);
    }
    if (G.instance) vkDestroyInstance(G.instance, NULL);
    while (g_blocks) {
        Block *b = g_blocks;
        g_blocks = b->next;
        free(b);
    }
    memset(&G, 0, sizeof G);
}

static const char USAGE[] =
    "usage: vkops_host [--device N] [--quiet] MANIFEST.json PLAN.json --in FILE... --out FILE...\n"
    "Runs a vkops plan on Vulkan device N (default 0). Inputs and outputs in plan order.\n"
    "VKOPS_VALIDATION=1 enables VK_LAYER_KHRONOS_validation (exit 4 on any warning or error);\n"
    "VKOPS_VALIDATION=sync adds its synchronization validation (missing barriers).\n";

int main(int argc, char **argv)
{
    char **ins = xalloc((size_t)argc * sizeof *ins), **outs = xalloc((size_t)argc * sizeof *outs);
    const char *pos[2] = {NULL, NULL}, *env = getenv("VKOPS_VALIDATION");
    size_t nin = 0, nout = 0, npos = 0;
    unsigned long device = 0;
    int mode = 0, i;
    JNode *manifest, *plan;
    const JNode *fmt;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(USAGE, stdout); cleanup(); return 0; }
        else if (!strcmp(a, "--quiet")) G.quiet = 1;
        else if (!strcmp(a, "--in")) mode = 1;
        else if (!strcmp(a, "--out")) mode = 2;
        else if (!strcmp(a, "--device")) {
            char *end;
            if (++i == argc || argv[i][0] < '0' || argv[i][0] > '9' || (device = strtoul(argv[i], &end, 10), *end) ||
                device > 0xFFFFFFFFul)
                die(2, "--device needs a device index (0, 1, ...) (vkops_host --help)");
        } else if (a[0] == '-' && a[1]) die(2, "unknown option \"%s\" (vkops_host --help)", a);
        else if (mode == 1) ins[nin++] = argv[i];
        else if (mode == 2) outs[nout++] = argv[i];
        else if (npos < 2) pos[npos++] = a;
        else die(2, "unexpected argument \"%s\" (files after --in/--out) (vkops_host --help)", a);
    }
    if (npos != 2) die(2, "need MANIFEST.json and PLAN.json (vkops_host --help)");
    G.validation = env && !strcmp(env, "1") ? 1 : env && !strcmp(env, "sync") ? 2 : 0;

    manifest = parse_json_file(pos[0], "manifest");
    plan = parse_json_file(pos[1], "plan");
    if (manifest->type != J_OBJ || !(fmt = jget(manifest, "format")) || fmt->type != J_STR ||
        strcmp(fmt->s, "vkops-kernel-manifest/1"))
        die(2, "not a kernel manifest (needs \"format\": \"vkops-kernel-manifest/1\"), %s", pos[0]);
    if (plan->type != J_OBJ || !(fmt = jget(plan, "format")) || fmt->type != J_STR || strcmp(fmt->s, "vkops-plan/1"))
        die(2, "not a plan (needs \"format\": \"vkops-plan/1\"), %s", pos[1]);
    load_buffers(plan);
    load_dispatches(plan, manifest, pos[0]);
    attach_files(ins, nin, outs, nout);

    create_instance();
    create_device((uint32_t)device);
    create_buffers();
    create_pipelines();
    run_plan();
    write_outputs();
    if (!G.quiet)
        printf("vkops_host: ran %lu dispatches, %lu pipelines, %lu buffers\n", (unsigned long)G.ndisps,
               (unsigned long)G.npipes, (unsigned long)G.nbufs);
    cleanup(); /* before reading saw_message: leaks are reported while destroying the device and instance */
    return g_saw_message ? 4 : 0;
}
