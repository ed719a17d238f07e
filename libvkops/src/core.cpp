// The planning core: tensors, limits, the plan builder and the plan's JSON (Python's form, byte for byte).
#include "core.hpp"

#include <cstdio>
#include <cstring>

namespace vkops {

static const char *DT_NAMES[] = {"FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"};
static const char *DT_VALUES[] = {"float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8"};
static const int DT_BITS[] = {32, 16, 32, 16, 8, 32, 16, 8};

const char *dt_name(DT t) { return DT_NAMES[(int)t]; }
const char *dt_value(DT t) { return DT_VALUES[(int)t]; }
int dt_bits(DT t) { return DT_BITS[(int)t]; }
bool dt_is_float(DT t) { return t == DT::FLOAT32 || t == DT::FLOAT16; }
bool dt_is_signed(DT t) { return dt_is_float(t) || t == DT::INT32 || t == DT::INT16 || t == DT::INT8; }

DT dt_of_dml(vkops_tensor_data_type t, const std::string &field) {
    switch (t) {
    case VKOPS_TENSOR_DATA_TYPE_FLOAT32: return DT::FLOAT32;
    case VKOPS_TENSOR_DATA_TYPE_FLOAT16: return DT::FLOAT16;
    case VKOPS_TENSOR_DATA_TYPE_UINT32: return DT::UINT32;
    case VKOPS_TENSOR_DATA_TYPE_UINT16: return DT::UINT16;
    case VKOPS_TENSOR_DATA_TYPE_UINT8: return DT::UINT8;
    case VKOPS_TENSOR_DATA_TYPE_INT32: return DT::INT32;
    case VKOPS_TENSOR_DATA_TYPE_INT16: return DT::INT16;
    case VKOPS_TENSOR_DATA_TYPE_INT8: return DT::INT8;
    default: break;
    }
    fail(field + " must be one of FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8; got " +
         std::to_string((int)t));
}

void fail(const std::string &msg) { throw Error(VKOPS_ERROR_VALIDATION, msg); }
void fail_limit(const std::string &msg) { throw Error(VKOPS_ERROR_DEVICE_LIMIT, msg); }

template <class T> static std::string tup_of(const std::vector<T> &v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + (v.size() == 1 ? ",)" : ")");
}
std::string tup(const std::vector<i64> &v) { return tup_of(v); }
std::string tup(const std::vector<u32> &v) { return tup_of(v); }

// ------------------------------------------------------------------ tensors
std::vector<u64> packed_strides(const std::vector<u32> &sizes) {
    std::vector<u64> st(sizes.size());
    u64 acc = 1;
    for (size_t i = sizes.size(); i-- > 0;) { st[i] = acc; acc *= sizes[i]; }
    return st;
}

u64 words_for(u64 count, DT t) { return (count * (u64)(dt_bits(t) / 8) + 3) / 4; }

u64 Tensor::count() const { u64 n = 1; for (u32 s : sizes) n *= s; return n; }

std::vector<u64> Tensor::el_strides() const {
    if (!has_strides) return packed_strides(sizes);
    return std::vector<u64>(strides.begin(), strides.end());
}

u64 Tensor::span() const {
    auto el = el_strides();
    u64 s = 1;
    for (size_t i = 0; i < sizes.size() && i < el.size(); i++) s += (u64)(sizes[i] - (sizes[i] ? 1 : 0)) * el[i];
    return s;
}

bool Tensor::is_packed() const {
    if (!has_strides) return true;
    auto ps = packed_strides(sizes);
    for (size_t i = 0; i < sizes.size(); i++)
        if (strides[i] != ps[i] && sizes[i] != 1) return false;
    return true;
}

static std::string strides_repr(const Tensor &t) { return t.has_strides ? tup(t.strides) : "None"; }

void Tensor::validate(const std::string &name) const {
    size_t n = sizes.size();
    if (n < 1 || n > (size_t)MAX_DIMS)
        fail(name + ".sizes must have 1 to 8 dimensions; got " + std::to_string(n) + " in " + tup(sizes));
    for (u32 s : sizes)
        if (s < 1) fail(name + ".sizes must all be >= 1; got " + tup(sizes));
    if (has_strides && strides.size() != n)
        fail(name + ".strides must have one entry per dimension; got " + std::to_string(strides.size()) +
             " strides " + tup(strides) + " for sizes " + tup(sizes));
    // DML strides are unsigned (uint32): the ">= 0" rule holds by type.
    if (span() > MAX_ELEMENTS)
        fail(name + " must address at most 4294967295 elements; sizes " + tup(sizes) + " with strides " +
             strides_repr(*this) + " reach " + std::to_string(span()));
}

Tensor Tensor::from_c(const vkops_tensor_desc *d, const std::string &name) {
    if (!d) fail(name + " must be a tensor description; got NULL");
    Tensor t;
    t.dt = dt_of_dml(d->data_type, name + ".data_type");
    if (d->flags != 0) fail(name + ".flags must be 0 (DML_TENSOR_FLAG_NONE); got " + std::to_string(d->flags));
    if (d->dimension_count < 1 || d->dimension_count > (u32)MAX_DIMS)
        fail(name + ".sizes must have 1 to 8 dimensions; got " + std::to_string(d->dimension_count));
    if (!d->sizes) fail(name + ".sizes must not be NULL");
    t.sizes.assign(d->sizes, d->sizes + d->dimension_count);
    if (d->strides) { t.strides.assign(d->strides, d->strides + d->dimension_count); t.has_strides = true; }
    t.validate(name);
    u64 need = t.span() * (u64)(dt_bits(t.dt) / 8);
    if (d->total_tensor_size_in_bytes != 0 && d->total_tensor_size_in_bytes < need)
        fail(name + ".total_tensor_size_in_bytes must be >= the span's bytes " + std::to_string(need) +
             " (sizes " + tup(t.sizes) + ", strides " + strides_repr(t) + "); got " +
             std::to_string(d->total_tensor_size_in_bytes));
    return t;
}

std::vector<std::pair<i64, i64>> merge_dims(const std::vector<i64> &sizes, const std::vector<i64> &strides) {
    std::vector<std::pair<i64, i64>> m;
    for (size_t i = 0; i < sizes.size() && i < strides.size(); i++) {
        i64 sz = sizes[i], st = strides[i];
        if (sz == 1) continue;
        if (!m.empty() && m.back().second == st * sz) m.back() = {m.back().first * sz, st};
        else m.push_back({sz, st});
    }
    return m;
}

// ------------------------------------------------------------------ limits
static const char *DEVICE_TYPES[] = {"unknown", "discrete", "integrated", "virtual", "cpu", "other"};

Limits Limits::from_c(const vkops_limits &l) {
    Limits o;
    o.subgroup_size = l.subgroup_size; o.min_subgroup_size = l.min_subgroup_size; o.max_subgroup_size = l.max_subgroup_size;
    o.max_workgroup_invocations = l.max_workgroup_invocations;
    for (int i = 0; i < 3; i++) { o.max_workgroup_size[i] = l.max_workgroup_size[i]; o.max_workgroup_count[i] = l.max_workgroup_count[i]; }
    o.shared_memory_bytes = l.shared_memory_bytes; o.max_push_constants_bytes = l.max_push_constants_bytes;
    o.max_storage_buffer_range = l.max_storage_buffer_range; o.subgroup_operations = l.subgroup_operations;
    o.device_type = DEVICE_TYPES[l.device_type <= 5 ? l.device_type : 0];
    o.cooperative_matrix = l.cooperative_matrix; o.coopmat_verified = l.coopmat_verified;
    o.coopmat_split_verified = l.coopmat_split_verified; o.integer_dot_product = l.integer_dot_product;
    if (l.name[0]) o.name.assign(l.name, strnlen(l.name, sizeof l.name));
    return o;
}

vkops_limits Limits::to_c() const {
    vkops_limits l{};
    l.subgroup_size = subgroup_size; l.min_subgroup_size = min_subgroup_size; l.max_subgroup_size = max_subgroup_size;
    l.max_workgroup_invocations = max_workgroup_invocations;
    for (int i = 0; i < 3; i++) { l.max_workgroup_size[i] = max_workgroup_size[i]; l.max_workgroup_count[i] = max_workgroup_count[i]; }
    l.shared_memory_bytes = shared_memory_bytes; l.max_push_constants_bytes = max_push_constants_bytes;
    l.max_storage_buffer_range = max_storage_buffer_range; l.subgroup_operations = subgroup_operations;
    l.device_type = 0;
    for (u32 i = 0; i < 6; i++) if (device_type == DEVICE_TYPES[i]) l.device_type = i;
    l.cooperative_matrix = cooperative_matrix; l.coopmat_verified = coopmat_verified;
    l.coopmat_split_verified = coopmat_split_verified; l.integer_dot_product = integer_dot_product;
    snprintf(l.name, sizeof l.name, "%s", name.c_str());
    return l;
}

u32 Limits::workgroup(u64 want) const {
    u64 cap = std::min<u64>(want, std::min<u64>(max_workgroup_invocations, max_workgroup_size[0]));
    if (cap < 1) cap = 1;
    return (u32)(1ull << (bit_length(cap) - 1));
}

std::vector<u32> Limits::grid(u64 n, const std::string &what) const {
    u64 mx = max_workgroup_count[0], my = max_workgroup_count[1];
    u64 x = std::max<u64>(1, std::min<u64>(n, mx));
    u64 y = cdiv(n, x);
    if (y > my)
        fail_limit(what + ": " + std::to_string(n) + " workgroups exceed " + name + "'s maxComputeWorkGroupCount " +
                   std::to_string(mx) + " x " + std::to_string(my));
    return {(u32)x, (u32)y, 1};
}

static const char *jbool(bool b) { return b ? "true" : "false"; }

std::string json_str(const std::string &s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') { o += '\\'; o += (char)c; }
        else if (c == '\n') o += "\\n";
        else if (c < 0x20 || c >= 0x7f) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
        else o += (char)c;
    }
    return o + "\"";
}

template <class T> static std::string jlist(const T &v) {
    std::string s = "[";
    bool first = true;
    for (auto x : v) { s += (first ? "" : ", ") + std::to_string(x); first = false; }
    return s + "]";
}

// No iostreams in the library: a statically linked libstdc++ beside another one in the host process can
// break stream formatting (locale facet ids collide), and strings need no locale.
static std::string num(u64 v) { return std::to_string(v); }

std::string Limits::to_json() const {
    std::string o = "{\"name\": " + json_str(name) + ", \"device_type\": " + json_str(device_type) +
        ", \"subgroup_size\": " + num(subgroup_size) + ", \"min_subgroup_size\": " + num(min_subgroup_size) +
        ", \"max_subgroup_size\": " + num(max_subgroup_size) + ", \"max_workgroup_invocations\": " +
        num(max_workgroup_invocations) + ", \"max_workgroup_size\": " +
        jlist(std::vector<u32>(max_workgroup_size, max_workgroup_size + 3)) + ", \"max_workgroup_count\": " +
        jlist(std::vector<u32>(max_workgroup_count, max_workgroup_count + 3)) + ", \"shared_memory_bytes\": " +
        num(shared_memory_bytes) + ", \"max_push_constants_bytes\": " + num(max_push_constants_bytes) +
        ", \"max_storage_buffer_range\": " + num(max_storage_buffer_range) + ", \"subgroup_operations\": " +
        num(subgroup_operations) + ", \"cooperative_matrix\": " + jbool(cooperative_matrix) +
        ", \"coopmat_verified\": " + jbool(coopmat_verified) + ", \"coopmat_split_verified\": " +
        jbool(coopmat_split_verified) + ", \"integer_dot_product\": " + jbool(integer_dot_product) +
        ", \"profile\": " + (profile.empty() ? std::string("null") : json_str(profile)) + "}";
    return o;
}

// ------------------------------------------------------------------ plans
std::vector<int> Plan::ids(const std::string &role) const {
    std::vector<int> v;
    for (size_t i = 0; i < buffers.size(); i++) if (buffers[i].role == role) v.push_back((int)i);
    return v;
}

std::string Plan::to_json(bool with_notes) const {
    std::string o = "{\"format\": \"vkops-plan/1\", \"op\": " + json_str(op) + ", \"notes\": {";
    if (with_notes)
        for (size_t i = 0; i < notes.size(); i++) o += (i ? ", " : "") + json_str(notes[i].key) + ": " + notes[i].json;
    o += "}, \"limits\": " + limits.to_json() + ", \"buffers\": [";
    for (size_t i = 0; i < buffers.size(); i++) {
        const Buffer &b = buffers[i];
        o += (i ? ", " : "") + std::string("{\"name\": ") + json_str(b.name) + ", \"role\": " + json_str(b.role) +
             ", \"bytes\": " + num(b.nbytes);
        if (b.has_tensor)
            o += ", \"tensor\": {\"data_type\": " + json_str(dt_value(b.tensor.dt)) + ", \"sizes\": " + jlist(b.tensor.sizes) +
                 ", \"strides\": " + (b.tensor.has_strides ? jlist(b.tensor.strides) : std::string("null")) + "}";
        if (b.role == "scratch") o += std::string(", \"zeroed\": ") + jbool(b.zeroed);
        if (b.role == "constant") o += ", \"data\": " + jlist(b.data);
        o += "}";
    }
    o += "], \"dispatches\": [";
    for (size_t i = 0; i < dispatches.size(); i++) {
        const Dispatch &d = dispatches[i];
        o += (i ? ", " : "") + std::string("{\"kernel\": ") + json_str(d.kernel) + ", \"spec\": " + jlist(d.spec) +
             ", \"groups\": " + jlist(std::vector<u32>(d.groups, d.groups + 3)) + ", \"push\": " + jlist(d.push) +
             ", \"bindings\": " + jlist(d.bindings) + ", \"writes\": " + jlist(d.writes) +
             ", \"barrier\": " + jlist(d.barrier) + "}";
    }
    return o + "]}";
}

std::vector<std::vector<int>> barriers(const std::vector<std::pair<std::vector<int>, std::vector<int>>> &steps) {
    // Python's Hazards, with insertion-ordered maps as vectors (a barrier's cover lists written, then read).
    std::vector<int> written, read;
    auto has = [](const std::vector<int> &v, int x) { for (int y : v) if (y == x) return true; return false; };
    auto add = [&](std::vector<int> &v, int x) { if (!has(v, x)) v.push_back(x); };
    std::vector<std::vector<int>> out;
    for (auto &s : steps) {
        std::vector<int> wr, rd;
        for (int i : s.second) add(wr, s.first[i]);
        for (int b : s.first) if (!has(wr, b)) add(rd, b);
        bool hazard = false;
        for (int x : written) if (has(rd, x) || has(wr, x)) hazard = true;
        for (int x : read) if (has(wr, x)) hazard = true;
        std::vector<int> cover;
        if (hazard) {
            cover = written;
            for (int x : read) if (has(wr, x)) add(cover, x);
            written.clear();
            read.clear();
        }
        for (int x : wr) add(written, x);
        for (int x : rd) add(read, x);
        out.push_back(cover);
    }
    return out;
}

Ref Builder::add(Buffer b, const Tensor *desc) {
    if (b.nbytes > limits.max_storage_buffer_range)
        fail_limit(op_ + " needs " + b.role + " buffer '" + b.name + "' of " + std::to_string(b.nbytes) + " bytes; " +
                   limits.name + "'s maxStorageBufferRange is " + std::to_string(limits.max_storage_buffer_range));
    buffers_.push_back(std::move(b));
    Ref r;
    r.id = (int)buffers_.size() - 1;
    if (desc) { r.desc = *desc; r.has_desc = true; }
    return r;
}

Ref Builder::input(const Tensor &desc, const std::string &name) {
    Buffer b{name, "input", 4 * std::max<u64>(1, words_for(desc.span(), desc.dt)), true, desc};
    return add(std::move(b), &desc);
}

Ref Builder::output(const Tensor &desc, const std::string &name) {
    Buffer b{name, "output", 4 * std::max<u64>(1, words_for(desc.span(), desc.dt)), true, desc};
    return add(std::move(b), &desc);
}

Ref Builder::scratch(const Tensor &d, const std::string &name) {
    Tensor p = d.packed();
    std::string n = name;
    if (n.empty()) {
        int k = 0;
        for (auto &b : buffers_) k += b.role == "scratch";
        n = "scratch" + std::to_string(k);
    }
    Buffer b{n, "scratch", 4 * std::max<u64>(1, words_for(p.count(), p.dt))};
    return add(std::move(b), &p);
}

Ref Builder::counters(u64 words) {
    words = std::max<u64>(words, 1);
    if (counters_ < 0) {
        Buffer b{"counters", "scratch", 4 * words};
        b.zeroed = true;
        counters_ = add(std::move(b), nullptr).id;
    }
    Buffer &b = buffers_[counters_];
    if (b.words() < words) b.nbytes = 4 * words;
    Ref r;
    r.id = counters_;
    r.desc = Tensor(DT::UINT32, {(u32)b.words()});
    r.has_desc = true;
    return r;
}

Ref Builder::constant(const std::vector<u32> &words, DT dt, const std::vector<u32> &shape, const std::string &name) {
    for (auto &c : constants_)
        if (c.dt == dt && c.shape == shape && c.words == words) {
            Ref r; r.id = c.id; r.desc = Tensor(dt, shape.empty() ? std::vector<u32>{1} : shape); r.has_desc = true;
            return r;
        }
    Buffer b{name, "constant", 4 * (u64)words.size()};
    b.data = words;
    Tensor t(dt, shape.empty() ? std::vector<u32>{1} : shape);
    Ref r = add(std::move(b), &t);
    constants_.push_back({dt, shape, words, r.id});
    return r;
}

void Builder::dispatch(const std::string &kernel, const std::vector<Ref> &refs, const std::vector<int> &writes,
                       const std::vector<u32> &groups, const std::vector<u32> &push, const std::vector<u32> &spec) {
    struct Check { u64 need, have; const char *limit; std::string what; };
    std::vector<Check> checks = {
        {4 * (u64)push.size(), limits.max_push_constants_bytes, "maxPushConstantsSize", "push-constant bytes"},
        {spec.empty() ? 1 : spec[0], limits.max_workgroup_invocations, "maxComputeWorkGroupInvocations", "invocations per workgroup"}};
    static const char *AX[] = {"maxComputeWorkGroupCount[0]", "maxComputeWorkGroupCount[1]", "maxComputeWorkGroupCount[2]"};
    for (int i = 0; i < 3 && i < (int)groups.size(); i++)
        checks.push_back({groups[i], limits.max_workgroup_count[i], AX[i], std::string("workgroups along ") + "xyz"[i]});
    for (auto &c : checks)
        if (c.need > c.have)
            fail_limit(op_ + " dispatch of " + kernel + " needs " + std::to_string(c.need) + " " + c.what + "; " +
                       limits.name + "'s " + c.limit + " is " + std::to_string(c.have));
    Dispatch d;
    d.kernel = kernel;
    d.spec = spec;
    for (int i = 0; i < 3; i++) d.groups[i] = i < (int)groups.size() ? groups[i] : 1;
    d.push = push;
    for (auto &r : refs) d.bindings.push_back(r.id);
    d.writes = writes;
    steps_.push_back(std::move(d));
}

void Builder::note(const std::string &key, const std::string &json_value) {
    for (auto &n : notes_) if (n.key == key) { n.json = json_value; return; }
    notes_.push_back({key, json_value});
}

Plan Builder::finish() {
    std::vector<std::pair<std::vector<int>, std::vector<int>>> s;
    for (auto &d : steps_) s.push_back({d.bindings, d.writes});
    auto bars = barriers(s);
    Plan p;
    p.op = op_;
    p.buffers = buffers_;
    p.dispatches = steps_;
    for (size_t i = 0; i < bars.size(); i++) p.dispatches[i].barrier = bars[i];
    p.limits = limits;
    p.notes = notes_;
    return p;
}

void Push::setf(size_t word, float f) { u32 u; std::memcpy(&u, &f, 4); w.at(word) = u; }

}  // namespace vkops
