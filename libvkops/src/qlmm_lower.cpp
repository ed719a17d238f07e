// QUANTIZED_LINEAR_MATRIX_MULTIPLY's lowering (vkops/ops/qlmm/lowering.py: plan() and lower()): the kernel the
// rule picks, with its specialization, push constants (QLMM_PUSH, word by word), split-K and scratch.
#include <tuple>

#include "qlmm.hpp"

namespace vkops {

namespace L = ops_qlmm_lowering;

static u32 flag(const Qlmm &q, int f, u32 bit) { return q.has[f] && q.t[f].count() > 1 ? bit : 0; }

// A per-row parameter {1,1,M,1} repeated `rows` times into a packed scratch (an identity SLICE1 of a stride-0
// view); per-tensor parameters and absent ones pass through.
static Ref tile_rows(Builder &b, const Ref &t, i64 rows) {
    if (t.id < 0 || t.desc.count() == 1) return t;
    Ref v;
    v.id = t.id;
    v.desc = Tensor(t.desc.dt, {(u32)rows, (u32)t.desc.count()}, {0, 1});
    v.has_desc = true;
    return slice1_lower_packed(b, v);
}

// Row-major B (K x N, k rows sk elements apart) copied column-major into a packed N x K scratch (lowering.py's
// lower_transpose): the scratch viewed as the K x N matrix it holds.
static Ref transpose_b(Builder &b, const Ref &x, i64 K, i64 N, i64 sk, u32 tile) {
    Ref out = b.scratch(Tensor(x.desc.dt, {1, 1, (u32)N, (u32)K}));
    b.dispatch("qlmm_transpose", {x, out}, {1}, {(u32)ceil_div(N, tile), (u32)ceil_div(K, tile), 1},
               {(u32)K, (u32)N, (u32)sk}, {ops_qlmm_coopmat::TRANSPOSE_WG, tile});
    Ref v;
    v.id = out.id;
    v.desc = Tensor(x.desc.dt, {1, 1, (u32)K, (u32)N}, {0, 0, 1, (u32)K});
    v.has_desc = true;
    return v;
}

static Ref packed_inner(Builder &b, const Ref &r) {
    if (r.desc.el_strides()[3] == 1 || r.desc.sizes[3] == 1) return r;
    return slice1_lower_packed(b, r);
}

static std::string lower(Builder &bld, const Qlmm &q, Ref in[Q_FIELDS], const QlmmTuning &t) {
    const Limits &lim = bld.limits;
    i64 N = q.n(), K = q.k(), Bo = q.out().sizes[0], Co = q.out().sizes[1];
    i64 rows = 1;
    QProduct prod = qlmm_product(q, lim, rows, t);
    QChoice choice = qlmm_choose(lim, prod, t);
    const std::string &which = choice.kernel;
    i64 M = prod.M;
    St4 a_st = prod.a_st, b_st = prod.b_st;
    bool b_cols = prod.b_cols;
    std::string config, kname;
    if (which == "coopmat") { config = choice.config; kname = choice.kname; }
    bool direct = which == "coopmat" && kname == "qlmm_coopmat_direct";

    // Column-major B is read as it is where the direct-B, dot, stream or BC kernel runs; else packed (below).
    Ref a = packed_inner(bld, in[Q_A]);
    Ref b = b_cols ? in[Q_B] : packed_inner(bld, in[Q_B]);
    Ref a_scale = in[Q_SA], a_zp = in[Q_ZA], o_scale = in[Q_SO], o_zp = in[Q_ZO];
    if (rows > 1) {  // one GEMM of rows*M rows: per-row parameters repeat for every folded batch
        Bo = Co = 1;
        a_scale = tile_rows(bld, a_scale, rows);
        a_zp = tile_rows(bld, a_zp, rows);
        o_scale = tile_rows(bld, o_scale, rows);
        o_zp = tile_rows(bld, o_zp, rows);
        bld.note("folded", std::to_string(rows));
    }
    // Absent zero points: a constant buffer of zeros (np.zeros(4, dtype): one word) per data type.
    auto zero = [&](DT dt) { return bld.constant({0}, dt, {4}, std::string("zero_") + dt_value(dt)); };
    Ref a_zp_t = a_zp.id >= 0 ? a_zp : zero(q.a().dt);
    Ref b_zp_t = in[Q_ZB].id >= 0 ? in[Q_ZB] : zero(q.b().dt);
    Ref o_zp_t = o_zp.id >= 0 ? o_zp : zero(q.out().dt);

    std::vector<u32> spec;
    i64 bm = 0, bn = 0, tm = 0, tn = 0, tk = 0;
    if (which == "portable") {
        u32 wg = lim.workgroup(L::PORTABLE_WG);
        if (wg < L::PORTABLE_MIN_WG)
            fail_limit("the portable QLinearMatMul kernel needs " + std::to_string(L::PORTABLE_MIN_WG) +
                       "-invocation workgroups; " + lim.name + " allows " +
                       std::to_string(lim.max_workgroup_invocations));
        kname = "qlmm";
        spec = {wg};
        bm = 4 * (wg / 16);
        bn = L::PORTABLE_BN;
    } else if (which == "dot") {
        kname = "qlmm_dot";
        spec = dot_spec(lim, choice.dot, t);
        bm = choice.dot;
        bn = t.DOT_COLS;
    } else if (which == "stream") {
        bm = choice.stream_mt;
        bn = choice.stream_nr;
        kname = stream_kernel(bm, bn);
        spec = {(u32)stream_workgroup(lim, bm, bn, t)};
    } else if (which == "gemv") {
        kname = gemv_kernel(choice.gemv, b_cols);  // b_cols here: GEMV_BC allowed it
        spec = {ops_qlmm_gemv::WG};
        bm = choice.gemv;
        bn = ops_qlmm_gemv::COLS;
    } else {
        std::vector<i64> c = cm_check_config(config);
        tm = c[0], tn = c[1], tk = c[2];
        i64 sw = c[3], sh = c[4];
        spec = {(u32)(ops_qlmm_coopmat::LANES * sw * sh), (u32)tm, (u32)tn, (u32)tk, (u32)sw, (u32)sh, std::max<u32>(1, t.COOPMAT_GROUP_M)};
        bm = tm;
        bn = tn;
    }
    bool bc = kname.size() > 3 && kname.compare(kname.size() - 3, 3, "_bc") == 0;  // B staged as it lies
    bool transposed = which == "coopmat" && bc && !b_cols;  // row-major B transposed first (Facts::b_transpose)
    if (transposed) {
        b = transpose_b(bld, b, K, N, b_st[2], t.BC_TRANSPOSE_TILE);
        b_cols = true;
        b_st = {0, 0, K, 1};
        bld.note("b_transposed", "true");
    } else if (b_cols && !(which == "dot" || which == "stream" || direct || bc)) {
        b_cols = false;
        b = packed_inner(bld, b);
        St4 st = batch_strides(b.desc);
        b_st = {st[0], st[1], st[2], 1};
    }

    // QLMM_PUSH (kernels/qlmm/qlmm_common.glsl): M, N, K, flags, C, a_sb, a_sc, a_sm, b_sb, b_sc, b_sk, splits.
    Push pc(12);
    pc.set(0, M);
    pc.set(1, N);
    pc.set(2, K);
    pc.set(4, Co);
    for (int i = 0; i < 3; i++) { pc.set(5 + i, a_st[i]); pc.set(8 + i, b_st[i]); }
    u32 flags = b_cols ? L::F_B_COLS : 0;
    flags |= dt_is_signed(q.a().dt) ? L::F_A_SIGNED : 0;
    flags |= dt_is_signed(q.b().dt) ? L::F_B_SIGNED : 0;
    flags |= dt_is_signed(q.out().dt) ? L::F_O_SIGNED : 0;
    flags |= flag(q, Q_SA, L::F_SA_ROW) | flag(q, Q_ZA, L::F_ZA_ROW) | flag(q, Q_SB, L::F_SB_COL) |
             flag(q, Q_ZB, L::F_ZB_COL) | flag(q, Q_SO, L::F_SO_ROW) | flag(q, Q_ZO, L::F_ZO_ROW);
    if (which == "dot" || which == "stream")  // zero-point sums only where a shifted zero point may be non-zero
        flags |= (prod.b_free ? 0 : ops_qlmm_dot::F_NEED_SA) | (prod.a_free ? 0 : ops_qlmm_dot::F_NEED_SB);
    pc.set(3, flags);
    if (b_cols && !transposed) bld.note("b_layout", json_str("column-major"));
    i64 groups[3] = {ceil_div(N, bn), ceil_div(M, bm), Bo * Co};
    std::vector<Ref> extra;
    std::vector<int> extra_writes;
    i64 tiles = groups[0] * groups[1] * groups[2];
    i64 sk = 1, slot = 1, whole = 0;  // a tail split's unsplit tiles (cm_tail_split)
    if (which == "coopmat") {
        if (t.COOPMAT_SPLIT_K != "auto") fail("QlmmTuning.COOPMAT_SPLIT_K other than 'auto' is not ported");
        i64 nchunks = ceil_div(K, tk);
        // direct B: more splits (a quarter of the chunks, up to SPLIT_MAX) keep more loads in flight
        sk = kname.rfind("qlmm_coopmat_direct", 0) == 0 ? std::min<i64>(t.SPLIT_MAX, std::max<i64>(1, nchunks / 4))
                                                         : cm_auto_split(tiles, nchunks, config, t);
        sk = sk > 1 && lim.coopmat_split_verified ? sk : 1;
        if (sk == 1 && groups[2] == 1 && lim.coopmat_split_verified)
            std::tie(whole, sk) = cm_tail_split(tiles, nchunks, config, t);
        slot = tm * tn + tm + tn;  // the int32 tile, then its row and column sums
    } else if (which == "dot") {
        sk = dot_splits(tiles, K, spec[0], t);
        slot = bm * bn;
    } else if (which == "stream") {
        sk = stream_splits(tiles, K, bn, spec[0], t);
        slot = bm * bn;
        if (!lim.coopmat_split_verified) sk = 1;  // auto splits only where the split-K variants passed
    } else if (which == "gemv") {
        sk = gemv_splits(tiles, K, bm, t);
        slot = bm * bn;
    }
    if (sk > 1 && which == "gemv") {  // splits add into sums after the tiles' counters; the last requantizes
        kname += "_sk";
        pc.set(11, sk);
        extra = {bld.counters(tiles * (1 + slot))};
        extra_writes = {9};
        groups[0] *= sk;
    } else if (sk > 1) {  // each split stores its partial tile in a slot; the last of a tile adds them
        kname += "_sk";
        pc.set(11, sk | whole << 8);
        Ref part = bld.scratch(Tensor(DT::INT32, {(u32)((tiles - whole) * sk * slot)}));
        extra = {part, bld.counters(tiles - whole)};
        extra_writes = {9, 10};
        if (whole) {
            groups[0] = whole + (tiles - whole) * sk;
            groups[1] = groups[2] = 1;
        } else {
            groups[0] *= sk;
        }
    }
    const char *what[3] = {"N tiles", "M tiles", "BatchCount*ChannelCount"};
    for (int i = 0; i < 3; i++)
        if (groups[i] > (i64)lim.max_workgroup_count[i])
            fail_limit("QuantizedLinearMatMul needs " + std::to_string(groups[i]) + " workgroups along " + what[i] + "; " +
                       lim.name + " allows " + std::to_string(lim.max_workgroup_count[i]));
    if (which == "coopmat") {
        bld.note("config", json_str(config));
        bld.note("split_k", std::to_string(sk));
        if (whole) bld.note("whole_tiles", std::to_string(whole));
    } else if (which != "portable") {
        bld.note("rows", std::to_string(bm));
        bld.note("split_k", std::to_string(sk));
    }
    std::vector<Ref> refs = {a, b, a_scale, a_zp_t, in[Q_SB], b_zp_t, o_scale, o_zp_t, in[Q_OUT]};
    refs.insert(refs.end(), extra.begin(), extra.end());
    std::vector<int> writes = {8};
    writes.insert(writes.end(), extra_writes.begin(), extra_writes.end());
    bld.dispatch(kname, refs, writes, {(u32)groups[0], (u32)groups[1], (u32)groups[2]}, pc.w, spec);
    return which;
}

// The plan's inputs are the descriptor's tensors in its order, absent zero points left out (ops.hpp).
Plan qlmm_plan_c(const vkops_quantized_linear_matrix_multiply_desc *d, const Limits &limits, const QlmmTuning &t) {
    Qlmm q = qlmm_from_c(d);
    Builder bld("qlmm", limits);
    Ref in[Q_FIELDS];
    for (int f = 0; f < Q_OUT; f++)
        if (q.has[f]) in[f] = bld.input(q.t[f], QLMM_FIELDS[f]);
    in[Q_OUT] = bld.output(q.out(), "output");
    bld.note("kernel", json_str(lower(bld, q, in, t)));
    return bld.finish();
}

}  // namespace vkops
