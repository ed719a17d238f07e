// libvkops' planning core: the C++ counterparts of Python's pure modules (dtypes, tensor, limits, plan).
// Planning here is pure (no Vulkan): operators' plan functions fill a Builder, as Python's lowering does,
// and the differential tests (tests/test_capi_plans.py) prove the result equal to Python's plan.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "vkops.h"

namespace vkops {

using u32 = uint32_t;
using u64 = uint64_t;
using i64 = int64_t;

// Python's DataType, in its declaration order (a code of its own, not DML's value).
enum class DT { FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8 };
const char *dt_name(DT t);        // "FLOAT32", ... (Python's DataType.name)
const char *dt_value(DT t);       // "float32", ... (Python's DataType.value, the plan JSON's)
int dt_bits(DT t);
bool dt_is_float(DT t);
bool dt_is_signed(DT t);
DT dt_of_dml(vkops_tensor_data_type t, const std::string &field);  // raises Validation naming `field`

// ValidationError / DeviceLimitError: the message names field, rule and values, as Python's does.
struct Error : std::runtime_error {
    vkops_status status;
    Error(vkops_status s, const std::string &m) : std::runtime_error(m), status(s) {}
};
[[noreturn]] void fail(const std::string &msg);        // VKOPS_ERROR_VALIDATION
[[noreturn]] void fail_limit(const std::string &msg);  // VKOPS_ERROR_DEVICE_LIMIT

// Python-style formatting of values in messages: (1, 2, 3), None, 'name'.
std::string tup(const std::vector<i64> &v);
std::string tup(const std::vector<u32> &v);

constexpr int MAX_DIMS = 8;
constexpr u64 MAX_ELEMENTS = 0xFFFFFFFFull;  // kernels index elements with uint32 arithmetic

inline u64 cdiv(u64 a, u64 b) { return (a + b - 1) / b; }
inline u64 pow2_ceil(u64 x) { u64 p = 1; while (p < x) p <<= 1; return p; }   // Python's 1 << (x-1).bit_length()
inline int bit_length(u64 x) { int n = 0; while (x) { n++; x >>= 1; } return n; }

// TensorDesc: data type, sizes, strides in elements (empty = packed). Validated on construction.
struct Tensor {
    DT dt = DT::FLOAT32;
    std::vector<u32> sizes;
    std::vector<u32> strides;  // empty: packed (Python's strides=None)
    bool has_strides = false;

    Tensor() = default;
    Tensor(DT t, std::vector<u32> s) : dt(t), sizes(std::move(s)) {}
    Tensor(DT t, std::vector<u32> s, std::vector<u32> st) : dt(t), sizes(std::move(s)), strides(std::move(st)), has_strides(true) {}
    static Tensor from_c(const vkops_tensor_desc *d, const std::string &name);  // validated, errors name `name`
    void validate(const std::string &name) const;

    int rank() const { return (int)sizes.size(); }
    u64 count() const;
    std::vector<u64> el_strides() const;  // packed ones when has_strides is false
    u64 span() const;                     // elements of the buffer it reaches
    bool is_packed() const;
    Tensor packed() const { return Tensor(dt, sizes); }
    bool operator==(const Tensor &o) const { return dt == o.dt && sizes == o.sizes && has_strides == o.has_strides && strides == o.strides; }
};

std::vector<u64> packed_strides(const std::vector<u32> &sizes);
u64 words_for(u64 count, DT t);  // uint32 words that hold `count` elements
// Python's merge_dims: [[size, stride]] with size-1 dims dropped and evenly walking neighbours merged.
std::vector<std::pair<i64, i64>> merge_dims(const std::vector<i64> &sizes, const std::vector<i64> &strides);

// Python's Limits (vkops/limits.py), with its helpers.
struct Limits {
    std::string name = "unknown";
    std::string device_type = "unknown";
    u32 subgroup_size = 4, min_subgroup_size = 4, max_subgroup_size = 4;
    u32 max_workgroup_invocations = 128;
    u32 max_workgroup_size[3] = {128, 128, 64};
    u32 max_workgroup_count[3] = {65535, 65535, 65535};
    u32 shared_memory_bytes = 16384;
    u32 max_push_constants_bytes = 128;
    u64 max_storage_buffer_range = 1ull << 27;
    u32 subgroup_operations = 0x1;
    bool cooperative_matrix = false, coopmat_verified = false, coopmat_split_verified = false;
    bool integer_dot_product = false;
    std::string profile;  // empty = None

    static Limits from_c(const vkops_limits &l);
    vkops_limits to_c() const;
    u32 workgroup(u64 want) const;                            // largest power of two <= want a 1-D group may have
    std::vector<u32> grid(u64 n_groups, const std::string &what) const;  // 2-D grid (DeviceLimitError beyond)
    bool has_subgroup(u32 mask) const { return (subgroup_operations & mask) == mask; }
    std::string to_json() const;
};
enum : u32 { SG_BASIC = 0x1, SG_VOTE = 0x2, SG_ARITHMETIC = 0x4, SG_BALLOT = 0x8, SG_SHUFFLE = 0x10,
             SG_SHUFFLE_RELATIVE = 0x20, SG_CLUSTERED = 0x40, SG_QUAD = 0x80 };

// A JSON value for plan notes (string, integer, bool, float or a list of integers), kept as its JSON text.
struct Note {
    std::string key, json;
};
std::string json_str(const std::string &s);

struct Buffer {
    std::string name, role;  // role: input | output | scratch | constant
    u64 nbytes = 0;          // a multiple of 4
    bool has_tensor = false;
    Tensor tensor;           // input, output: the tensor it holds
    bool zeroed = false;     // scratch: must start (and is left) all zeros
    std::vector<u32> data;   // constant: its words
    u64 words() const { return nbytes / 4; }
};

struct Dispatch {
    std::string kernel;
    std::vector<u32> spec;
    u32 groups[3] = {1, 1, 1};
    std::vector<u32> push;
    std::vector<int> bindings, writes, barrier;
};

struct Plan {
    std::string op;
    std::vector<Buffer> buffers;
    std::vector<Dispatch> dispatches;
    Limits limits;
    std::vector<Note> notes;
    std::string to_json(bool with_notes = true) const;  // Python's Plan.to_json() (indent=None) byte for byte
    std::vector<int> ids(const std::string &role) const;
};

// A buffer of a plan being built, seen as a tensor (Python's Ref).
struct Ref {
    int id = -1;
    Tensor desc;
    bool has_desc = false;
    const std::vector<u32> &shape() const { return desc.sizes; }
    int ndim() const { return desc.rank(); }
};

// Python's Builder: operators' lowering declares buffers and records dispatches into it.
class Builder {
public:
    Builder(std::string op, Limits lim) : limits(std::move(lim)), op_(std::move(op)) {}
    Ref input(const Tensor &desc, const std::string &name);
    Ref output(const Tensor &desc, const std::string &name);
    Ref scratch(const Tensor &desc, const std::string &name = "");
    Ref counters(u64 words);
    // A small read-only buffer with these words (one per distinct (dtype, shape, words)).
    Ref constant(const std::vector<u32> &words, DT dt, const std::vector<u32> &shape, const std::string &name);
    void dispatch(const std::string &kernel, const std::vector<Ref> &refs, const std::vector<int> &writes,
                  const std::vector<u32> &groups, const std::vector<u32> &push, const std::vector<u32> &spec = {});
    void note(const std::string &key, const std::string &json_value);  // notes[key] = value (order of first set)
    Plan finish();

    Limits limits;

private:
    Ref add(Buffer b, const Tensor *desc);
    std::string op_;
    std::vector<Buffer> buffers_;
    std::vector<Dispatch> steps_;
    int counters_ = -1;
    struct ConstKey { DT dt; std::vector<u32> shape, words; int id; };
    std::vector<ConstKey> constants_;
    std::vector<Note> notes_;
};

// The barrier rule (Python's plan.barriers): per (bindings, writes) step, the ids a barrier before it covers.
std::vector<std::vector<int>> barriers(const std::vector<std::pair<std::vector<int>, std::vector<int>>> &steps);

// Push-constant blocks: words built field by field, as the host mirrors of the shaders' blocks.
struct Push {
    std::vector<u32> w;
    explicit Push(size_t words) : w(words, 0) {}
    void set(size_t word, u64 v) { w.at(word) = (u32)v; }
    void seti(size_t word, i64 v) { w.at(word) = (u32)(int32_t)v; }
    void setf(size_t word, float f);
};

// Operators: validate a C descriptor into the internal one, and plan it (pure).
Plan plan_operator(const vkops_operator_desc *desc, const Limits &limits);
void validate_operator(const vkops_operator_desc *desc);

}  // namespace vkops
