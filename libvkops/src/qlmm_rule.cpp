// QUANTIZED_LINEAR_MATRIX_MULTIPLY's kernel rule (vkops/ops/qlmm/rule.py): the product as the rule reads it
// (packing and folding as the lowering does them) and AUTO_RULE's rows tried in order. The C API plans with
// kernel "auto", the default tuning and no zero points known to the host.
#include "qlmm.hpp"

namespace vkops {

St4 batch_strides(const Tensor &x) {
    std::vector<u64> el = x.el_strides();
    St4 st(el.begin(), el.end());
    for (int d = 0; d < 2; d++)
        if (x.sizes[d] == 1) st[d] = 0;
    return st;
}

bool QProduct::aligned() const {
    if (K % 16 || N % 16 || a_st[3] != 1 || b_st[3] != 1) return false;
    for (int i = 0; i < 3; i++)
        if (a_st[i] % 16 || b_st[i] % 16) return false;
    return true;
}

// b's k stride is 1 and its n and batch strides whole 16-element steps (a transposed N x K matrix).
static bool column_major(const Tensor &b) {
    St4 st = batch_strides(b);
    return b.sizes[3] > 1 && st[2] == 1 && st[0] % 16 == 0 && st[1] % 16 == 0 && st[3] % 16 == 0;
}

// How many GEMMs fold into one (1: none): b shared by every batch, a with the output's batch sizes and its
// rows evenly spaced across its batch dimensions.
static i64 foldable(const Qlmm &q, const St4 &a_st, const St4 &b_st, const Limits &lim, const QlmmTuning &t) {
    i64 Bo = q.out().sizes[0], Co = q.out().sizes[1], M = q.m();
    if (!t.FOLD || Bo * Co == 1 || b_st[0] != 0 || b_st[1] != 0 || q.a().sizes[0] != Bo || q.a().sizes[1] != Co)
        return 1;
    if ((Co > 1 && a_st[1] != M * a_st[2]) || (Bo > 1 && a_st[0] != Co * M * a_st[2])) return 1;
    if (ceil_div(Bo * Co * M, 16) > (i64)lim.max_workgroup_count[1]) return 1;  // M tiles of the smallest tile
    return Bo * Co;
}

static Tensor inner_packed(const Tensor &d) {
    return d.el_strides()[3] == 1 || d.sizes[3] == 1 ? d : d.packed();
}

// za' = za - (0 if signed else 128) is zero everywhere: with no zero point known to the host, only an
// absent one of a signed tensor.
static bool zero_point_free(bool has_zp, DT dt) { return !has_zp && dt_is_signed(dt); }

QProduct qlmm_product(const Qlmm &q, const Limits &lim, i64 &rows, const QlmmTuning &t) {
    QProduct p;
    p.b_cols = t.COOPMAT_COLS && column_major(q.b());
    St4 a_st = batch_strides(inner_packed(q.a()));
    St4 b_st = batch_strides(p.b_cols ? q.b() : inner_packed(q.b()));
    a_st[3] = 1;
    b_st = {b_st[0], b_st[1], p.b_cols ? b_st[3] : b_st[2], 1};
    i64 M = q.m(), Bo = q.out().sizes[0], Co = q.out().sizes[1];
    rows = foldable(q, a_st, b_st, lim, t);
    if (rows > 1) {
        M = rows * M;
        Bo = Co = 1;
        a_st = {0, 0, a_st[2], 1};
    }
    p.M = M;
    p.N = q.n();
    p.K = q.k();
    p.batches = Bo * Co;
    p.a_st = a_st;
    p.b_st = b_st;
    p.a_free = zero_point_free(q.has[Q_ZA], q.a().dt);
    p.b_free = zero_point_free(q.has[Q_ZB], q.b().dt);
    p.b_signed = dt_is_signed(q.b().dt);
    return p;
}

// rule.py's Facts, for kernel "auto": each kernel's shape rule computed once, when a row asks.
namespace {
struct Facts {
    const Limits &lim;
    const QProduct &p;
    const QlmmTuning &t;
    int have_gemv = 0, have_stream = 0, have_dot = 0, have_resolved = 0;
    i64 gemv_ = 0, dot_ = 0, mt_ = 0, nr_ = 0;
    bool stream_ok_ = false;
    std::pair<std::string, std::string> resolved_;

    bool coopmat() const { return lim.cooperative_matrix && lim.coopmat_verified && p.aligned(); }
    // Row-major B transposed first (qlmm_lower.cpp's transpose) for the BC builds.
    bool b_transpose() const {
        return !p.b_cols && t.COOPMAT_BC && t.BC_TRANSPOSE_MIN_M > 0 && p.M >= (i64)t.BC_TRANSPOSE_MIN_M &&
               (p.batches == 1 || (p.b_st[0] == 0 && p.b_st[1] == 0)) &&
               lim.max_workgroup_invocations >= ops_qlmm_coopmat::TRANSPOSE_WG;
    }
    i64 gemv() {
        if (!have_gemv++) gemv_ = gemv_why_not(lim, p.M, p.K, p.N, p.b_st, p.b_cols, t);
        return gemv_;
    }
    bool stream() {
        if (!have_stream++) stream_ok_ = stream_why_not(lim, p.M, p.N, p.batches, !p.a_free, t, mt_, nr_);
        return stream_ok_;
    }
    i64 dot() {
        if (!have_dot++) dot_ = t.DOT ? dot_rows(lim, p.M, p.K, p.N, p.b_st, p.b_cols, t) : 0;
        return dot_;
    }
    const std::pair<std::string, std::string> &resolved() {
        if (!have_resolved++)
            resolved_ = cm_resolve(t.COOPMAT_CONFIG, p.M, p.N, p.K, p.batches, p.a_free && p.b_free, p.b_signed, t,
                                   p.b_cols || b_transpose());
        return resolved_;
    }
    // The tile within the device's shared memory, split-K's flag included (rule.py's Facts.fits).
    bool fits() { return cm_shared_bytes(resolved().first, resolved().second + "_sk") <= (i64)lim.shared_memory_bytes; }
    bool direct() { return coopmat() && fits() && resolved().second == "qlmm_coopmat_direct"; }
};
}  // namespace

QChoice qlmm_choose(const Limits &lim, const QProduct &p, const QlmmTuning &t) {
    Facts f{lim, p, t};
    QChoice c;
    // AUTO_RULE, in order: gemv, stream, dot, coopmat, portable.
    if (f.gemv() && gemv_preferred(p.M, p.batches * p.K * p.N, p.b_cols, t)) {
        c.kernel = "gemv";
        c.gemv = f.gemv();
    } else if (f.coopmat() && t.STREAM && f.stream() && stream_preferred(p.M, t)) {
        c.kernel = "stream";
        c.stream_mt = f.mt_;
        c.stream_nr = f.nr_;
    } else if (f.dot() && dot_preferred(p.M, p.b_cols, f.direct(), t)) {
        c.kernel = "dot";
        c.dot = f.dot();
    } else if (f.coopmat() && f.fits()) {
        c.kernel = "coopmat";
        c.config = f.resolved().first;
        c.kname = f.resolved().second;
    } else {
        c.kernel = "portable";
    }
    return c;
}

}  // namespace vkops
