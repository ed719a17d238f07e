// QUANTIZED_LINEAR_MATRIX_MULTIPLY's kernels: each one's shape rules, tiles, specialization and split-K, as
// vkops/ops/qlmm/coopmat.py, dot.py, stream.py and gemv.py have them. The knobs are QlmmTuning's defaults and
// the tables (COOPMAT_CONFIGS, TILES, ...) and the modules' constants (lanes, workgroup floors, slices, steps) the
// generated header's; the literals left here are the 16x16 tiles' and 16-byte blocks' arithmetic, as in Python.
#include <algorithm>

#include "qlmm.hpp"

namespace vkops {

// ------------------------------------------------------------------ coopmat.py
std::vector<i64> cm_config(const std::string &name) {
    for (auto &c : ops_qlmm_coopmat::COOPMAT_CONFIGS)
        if (c.first == name) return c.second;
    fail("cooperative-matrix config " + name + " is not in COOPMAT_CONFIGS");
}

std::vector<i64> cm_check_config(const std::string &name) {
    std::vector<i64> cfg = cm_config(name);
    i64 tm = cfg[0], tn = cfg[1], tk = cfg[2], sw = cfg[3], sh = cfg[4];
    i64 inv = (i64)ops_qlmm_coopmat::LANES * sw * sh;
    bool ok = tk % 32 == 0 && tm % (16 * sh) == 0 && tn % (16 * sw) == 0 && inv % (tk / 16) == 0 &&
              tm % (inv / (tk / 16)) == 0 && inv % (tn / 16) == 0 && tk % (inv / (tn / 16)) == 0;
    if (!ok) fail("cooperative-matrix config " + name + " " + tup(cfg) + " does not tile evenly");
    return cfg;
}

static bool listed(const std::vector<std::string> &tiles, const std::string &config) {
    return std::find(tiles.begin(), tiles.end(), config) != tiles.end();
}

i64 cm_auto_split(i64 tiles, i64 nchunks, const std::string &config, const QlmmTuning &t) {
    if (config == t.WAVE_CONFIG || config == t.BC_WAVE_CONFIG || config == t.MID_WAVE_CONFIG || config == t.MID_FIT_CONFIG ||
        listed(t.WAVE_FIT_CONFIGS, config))
        return 1;  // chosen by workgroups an SM: unsplit
    if (config == t.LARGE_CONFIG || config == t.BC_LARGE_CONFIG) {  // split only below LARGE_MIN_TILES (65-256 rows)
        if (tiles >= (i64)t.LARGE_MIN_TILES) return 1;
        i64 s = std::min({(i64)t.SPLIT_MAX, (i64)t.SPLIT_TARGET_GROUPS / tiles, nchunks / (i64)t.LARGE_SPLIT_MIN_CHUNKS});
        return s >= 2 ? s : 1;
    }
    if (tiles >= (i64)t.AUTO_MIN_GROUPS / 2) return 1;
    bool deep = nchunks * cm_config(config)[2] >= (i64)t.LOW_TARGET_MIN_K;  // K, in whole chunks
    i64 target = config == t.LOW_CONFIG && deep ? t.LOW_TARGET_GROUPS
                 : config == t.MID_CONFIG || config == t.BC_MID_CONFIG || config == t.LOW_CONFIG ? t.MID_TARGET_GROUPS
                                                                                                 : t.SPLIT_TARGET_GROUPS;
    i64 s = std::min({(i64)t.SPLIT_MAX, std::max<i64>(1, target / tiles), std::max<i64>(1, nchunks / t.SPLIT_MIN_CHUNKS)});
    return s >= 2 ? s : 1;
}

std::pair<i64, i64> cm_tail_split(i64 tiles, i64 nchunks, const std::string &config, const QlmmTuning &t) {
    i64 wave = t.AUTO_MIN_GROUPS, tail = tiles % wave;
    bool large = config == t.LARGE_CONFIG || config == t.BC_LARGE_CONFIG;
    if (!t.TAIL_SPLIT || !large || tiles < wave || tail == 0 || 2 * tail > wave) return {0, 1};
    i64 s = std::min({(i64)t.SPLIT_MAX, wave / tail, nchunks / (i64)t.TAIL_MIN_CHUNKS});
    return s >= 2 ? std::pair<i64, i64>{tiles - tail, s} : std::pair<i64, i64>{0, 1};
}

// Bytes of shared memory qlmm_coopmat.comp's build kname (qlmm_coopmat[_zp][_bt|_bc][_db][_direct][_sk]) declares at
// tile config (coopmat.py's shared_bytes).
i64 cm_shared_bytes(const std::string &config, const std::string &kname) {
    std::vector<i64> c = cm_config(config);
    i64 tm = c[0], tn = c[1], tk = c[2], sw = c[3], sh = c[4];
    auto has = [&](const char *v) { return (kname + "_").find(std::string("_") + v + "_", 12) != std::string::npos; };
    i64 bufs = has("db") ? 2 : 1;
    i64 bt_pad = 16 * std::max((i64)1, 8 / (tn / 16));  // BT's 16-column blocks padded apart
    i64 b = has("direct") ? 0 : has("bt") ? tn / 16 * (16 * (tk + 16) + bt_pad) : has("bc") ? tn * (tk + 16) : tk * (tn + 16);
    i64 csh = 4 * 256 * sw * sh, a = bufs * tm * (tk + 16);
    a = has("db") || has("bc") || has("bt") ? std::max(a, csh) : a + csh;  // the epilogue's slices in A's space
    return a + bufs * b + (has("zp") ? 4 * (tm + tn) : 0) + (has("sk") ? 4 : 0);
}

// Workgroups on the busiest SM when config's tiles spread over WAVE_MAX_GROUPS SMs.
// config's tiles (unsplit workgroups) for M x N, batch matrices.
static i64 cm_groups(i64 M, i64 N, i64 batch, const std::string &config) {
    std::vector<i64> c = cm_config(config);
    return ceil_div(M, c[0]) * ceil_div(N, c[1]) * batch;
}

static i64 cm_per_sm(i64 M, i64 N, i64 batch, const std::string &config, const QlmmTuning &t) {
    return ceil_div(cm_groups(M, N, batch, config), (i64)t.WAVE_MAX_GROUPS);
}

// Above MID_MAX_M rows, where config's tiles run one wave (one workgroup an SM): the tile of WAVE_FIT_CONFIGS with its
// columns and the fewest rows whose tiles run one wave too, where fewer than config's (a wave's time is a tile's).
static std::string cm_fit(const std::string &config, i64 M, i64 N, i64 batch, const QlmmTuning &t) {
    if (!t.WAVE_MAX_GROUPS || cm_per_sm(M, N, batch, config, t) != 1) return config;
    std::string best = config;
    for (const std::string &c : t.WAVE_FIT_CONFIGS)
        if (cm_config(c)[1] == cm_config(config)[1] && cm_per_sm(M, N, batch, c, t) == 1 &&
            cm_config(c)[0] < cm_config(best)[0])
            best = c;  // the first of the fewest: config on a tie
    return best;
}

// MID_WAVE_CONFIG in the middle tile's place (65-MID_MAX_M rows): where that tile runs unsplit (K aside) and the
// 96-row tiles put fewer workgroups on the busiest SM, at most WAVE_MAX_PER_SM, or as many with fewer rows a tile.
static bool cm_mid_wave(i64 M, i64 N, i64 batch, const QlmmTuning &t, bool bc) {
    const std::string &mid = bc ? t.BC_MID_CONFIG : t.MID_CONFIG;
    i64 mtiles = cm_groups(M, N, batch, mid);
    if (!t.WAVE_MAX_GROUPS || cm_auto_split(mtiles, (i64)1 << 30, mid, t) != 1) return false;
    i64 w = cm_per_sm(M, N, batch, t.MID_WAVE_CONFIG, t), m = ceil_div(mtiles, (i64)t.WAVE_MAX_GROUPS);
    return w <= (i64)t.WAVE_MAX_PER_SM && (w < m || (w == m && cm_config(t.MID_WAVE_CONFIG)[0] < cm_config(mid)[0]));
}

std::string cm_auto_config(i64 M, i64 N, i64 batch, const QlmmTuning &t, bool sums, bool bc, i64 K) {
    if (M <= (i64)ops_qlmm_coopmat::SMALL_MAX_M) return t.SMALL_CONFIG;
    if (M > 3 * cm_config(t.MID_FIT_CONFIG)[0] && M <= (i64)t.MID_MAX_M && K <= (i64)t.MID_FIT_MAX_K && !(sums && bc)) {
        i64 groups = cm_groups(M, N, batch, t.MID_FIT_CONFIG);  // one wave of its tiles in four rows and more
        if (groups >= (i64)t.MID_FIT_MIN_GROUPS && groups <= (i64)t.WAVE_MAX_GROUPS && !cm_mid_wave(M, N, batch, t, bc))
            return t.MID_FIT_CONFIG;
    }
    i64 tiles = cm_groups(M, N, batch, t.LARGE_CONFIG);
    bool split = !sums && !bc && M > (i64)ops_qlmm_coopmat::LOW_MAX_M && M <= (i64)t.MID_MAX_M &&
                 tiles >= (i64)t.LARGE_SPLIT_MIN_TILES;
    if (split && tiles < (i64)t.AUTO_MIN_GROUPS && K <= (i64)t.MID_WAVE_SPLIT_MAX_K &&
        listed(t.BT_CONFIGS, t.MID_WAVE_CONFIG) && cm_mid_wave(M, N, batch, t, bc))  // staged transposed there
        return t.MID_WAVE_CONFIG;
    if (tiles >= (i64)t.AUTO_MIN_GROUPS || (M > (i64)t.MID_MAX_M && tiles >= (i64)t.LARGE_MIN_TILES) || split) {
        if (M > (i64)t.MID_MAX_M && t.WAVE_MAX_GROUPS) {  // fewer rows a tile, no more workgroups on the busiest SM
            i64 per_sm = cm_per_sm(M, N, batch, t.WAVE_CONFIG, t);
            if (per_sm <= std::min((i64)t.WAVE_MAX_PER_SM, ceil_div(tiles, (i64)t.WAVE_MAX_GROUPS))) {
                bool deep = bc || (!sums && listed(t.BT_CONFIGS, t.BC_WAVE_CONFIG));  // B n-major: as it lies, or BT
                return cm_fit(deep && per_sm == 1 ? t.BC_WAVE_CONFIG : t.WAVE_CONFIG, M, N, batch, t);
            }
        }
        const std::string &large = bc ? t.BC_LARGE_CONFIG : t.LARGE_CONFIG;
        return M > (i64)t.MID_MAX_M ? cm_fit(large, M, N, batch, t) : large;
    }
    if (M <= (i64)ops_qlmm_coopmat::LOW_MAX_M) return t.LOW_CONFIG;
    if (M <= (i64)t.MID_MAX_M)
        return cm_mid_wave(M, N, batch, t, bc) ? t.MID_WAVE_CONFIG : bc ? t.BC_MID_CONFIG : t.MID_CONFIG;
    return t.FEW_TILES_CONFIG;
}

std::pair<std::string, std::string> cm_resolve(const std::string &config_in, i64 M, i64 N, i64 K, i64 batches, bool free,
                                               bool b_signed, const QlmmTuning &t, bool b_cols) {
    std::string config = config_in;
    bool direct_ok = t.COOPMAT_DIRECT && M <= (i64)t.DIRECT_MAX_M && free && b_signed;
    bool bc = b_cols && t.COOPMAT_BC;
    if (config == "auto") {
        config = cm_auto_config(M, N, batches, t, !free, bc && !listed(t.DB_CONFIGS, t.BC_LARGE_CONFIG), K);
        if (direct_ok && K % cm_config(t.DIRECT_CONFIG)[2] == 0) config = t.DIRECT_CONFIG;
    }
    i64 tk = cm_check_config(config)[2];
    if (direct_ok && cm_config(config)[4] == 1 && K % tk == 0) return {config, "qlmm_coopmat_direct"};
    std::string db = listed(t.DB_CONFIGS, config) ? "_db" : "";
    if (bc && db.empty()) return {config, free ? "qlmm_coopmat_bc" : "qlmm_coopmat_zp_bc"};
    if (!free)  // zero-point sums: B staged transposed (no _zp_bt_db build), or row-major
        return {config, "qlmm_coopmat_zp" + (t.BT_SUMS && listed(t.BT_CONFIGS, config) && db.empty() ? std::string("_bt") : db)};
    return {config, (listed(t.BT_CONFIGS, config) ? "qlmm_coopmat_bt" : "qlmm_coopmat") + db};
}

// ------------------------------------------------------------------ dot.py
i64 dot_rows(const Limits &lim, i64 M, i64 K, i64 N, const St4 &b_st, bool b_cols, const QlmmTuning &t) {
    if (!lim.integer_dot_product) return 0;
    i64 most = lim.cooperative_matrix && lim.coopmat_verified ? t.DOT_MAX_M_COOPMAT : t.DOT_MAX_M;
    if (M > most || K % 16) return 0;
    if (!b_cols && (N % 4 || b_st[0] % 4 || b_st[1] % 4 || b_st[2] % 4)) return 0;
    i64 r = std::min<i64>((i64)1 << bit_length((u64)std::max<i64>(M - 1, 0)), t.DOT_MAX_ROWS);
    i64 wg = lim.workgroup(t.DOT_WG);
    if (wg < (i64)ops_qlmm_dot::MIN_WG || wg % r) return 0;
    if (dot_chunk(lim, r, t) < (i64)ops_qlmm_dot::MIN_CHUNK) return 0;
    return r;
}

bool dot_preferred(i64 M, bool b_cols, bool direct, const QlmmTuning &t) {
    return b_cols || !direct || M <= (i64)t.DOT_COOP_MAX_M;
}

i64 dot_chunk(const Limits &lim, i64 rows, const QlmmTuning &t) {
    i64 room = std::min<i64>(t.DOT_A_BYTES, (i64)lim.shared_memory_bytes - 4 * (rows + 1));
    if (room < 4 * (rows + 1) * (i64)t.DOT_COLS) return 0;  // the same memory holds partial tiles afterwards
    i64 blocks = std::min<i64>(ops_qlmm_dot::MAX_CHUNK, room / (16 * rows));
    return blocks > 0 ? (i64)1 << (bit_length((u64)blocks) - 1) : 0;
}

std::vector<u32> dot_spec(const Limits &lim, i64 rows, const QlmmTuning &t) {
    return {lim.workgroup(t.DOT_WG), (u32)rows, (u32)dot_chunk(lim, rows, t), t.DOT_UNROLL};
}

i64 dot_splits(i64 tiles, i64 K, i64 wg, const QlmmTuning &t) {
    i64 nblocks = K / 16;
    return std::max<i64>(1, std::min({(i64)t.DOT_SPLIT_MAX, (i64)t.DOT_TARGET_GROUPS / tiles,
                                      nblocks / ((wg / ops_qlmm_dot::QUADS) * (i64)t.DOT_UNROLL)}));
}

// ------------------------------------------------------------------ stream.py
static i64 stream_pf(i64 nr) {  // TILES[nr]: steps in flight of the NR-wide variant
    for (auto &p : ops_qlmm_stream::TILES)
        if (p.first == nr) return p.second;
    fail("the stream kernel has no variant " + std::to_string(nr) + " columns wide");
}

static i64 step_k(i64 nr) { return ops_qlmm_stream::STEP_ROWS / (nr / 16); }

static i64 stream_tile_rows(i64 M, bool col_sums) {  // 0: above TILE_ROWS
    i64 mt = 16 * ceil_div(M + (col_sums ? 1 : 0), 16);
    return mt <= ops_qlmm_stream::TILE_ROWS.back() ? mt : 0;
}

static i64 stream_width(i64 N, i64 batches, const QlmmTuning &t) {
    if (t.STREAM_NR != "auto") fail("QlmmTuning.STREAM_NR other than 'auto' is not ported");
    using namespace ops_qlmm_stream;
    if (ceil_div(N, NR_NARROW) * batches <= (i64)t.STREAM_WAVE || ceil_div(N, NR_WIDE) * batches < (i64)t.STREAM_TARGET_GROUPS)
        return NR_NARROW;
    return NR_WIDE;
}

static i64 stream_shared_bytes(i64 wg, i64 mt, i64 nr, bool split = true) {
    i64 sk = step_k(nr), sbs = sk + 16;
    i64 bslab = (nr / 16) * (16 * sbs + sk);
    return (wg / ops_qlmm_stream::LANES) * (bslab + mt * sbs) + 4 * (mt * nr + mt + (split ? 1 : 0));
}

i64 stream_workgroup(const Limits &lim, i64 mt, i64 nr, const QlmmTuning &t) {
    i64 wg = lim.workgroup(t.STREAM_WG);
    while (wg > (i64)ops_qlmm_stream::MIN_WG && stream_shared_bytes(wg, mt, nr) > (i64)lim.shared_memory_bytes) wg /= 2;
    return wg;
}

bool stream_why_not(const Limits &lim, i64 M, i64 N, i64 batches, bool col_sums, const QlmmTuning &t, i64 &mt, i64 &nr) {
    mt = stream_tile_rows(M, col_sums);
    if (!mt || M > (i64)t.STREAM_MAX_M) return false;
    nr = stream_width(N, batches, t);
    i64 wg = stream_workgroup(lim, mt, nr, t);
    if (wg < (i64)ops_qlmm_stream::MIN_WG || !lim.subgroup_size || wg % lim.subgroup_size) return false;
    if (stream_shared_bytes(wg, mt, nr) > (i64)lim.shared_memory_bytes) return false;
    return true;
}

bool stream_preferred(i64 M, const QlmmTuning &t) { return M >= (i64)t.STREAM_MIN_M; }

std::string stream_kernel(i64 mt, i64 nr) {
    return "qlmm_stream_m" + std::to_string(mt) + "n" + std::to_string(nr) + "p" + std::to_string(stream_pf(nr));
}

i64 stream_splits(i64 tiles, i64 K, i64 nr, i64 wg, const QlmmTuning &t) {
    i64 steps = ceil_div(K, step_k(nr));
    i64 want = ceil_div(t.STREAM_TARGET_GROUPS, tiles);
    return std::max<i64>(1, std::min({(i64)t.STREAM_SPLIT_MAX, want, steps / ((wg / ops_qlmm_stream::LANES) * stream_pf(nr))}));
}

// ------------------------------------------------------------------ gemv.py
static i64 gemv_slice_max(i64 mr) { return ops_qlmm_gemv::SLICE_WORDS / mr; }  // K rows of A a workgroup stages

static i64 gemv_shared_bytes(i64 mr, bool split, bool bc) {  // BC: A staged with a padding word after every 16
    i64 a = gemv_slice_max(mr) + (bc ? gemv_slice_max(mr) / 16 : 0);
    return 4 * (mr * a + mr * (i64)ops_qlmm_gemv::COLS + mr + (split ? 1 : 0));
}

i64 gemv_why_not(const Limits &lim, i64 M, i64 K, i64 N, const St4 &b_st, bool b_cols, const QlmmTuning &t) {
    i64 mr = 0;  // rows_variant: the first of ROWS that holds M
    for (i64 r : ops_qlmm_gemv::ROWS)
        if (M <= r) { mr = r; break; }
    if (!t.GEMV || !mr || M > (i64)t.GEMV_MAX_M || (b_cols && (!t.GEMV_BC || K % 16))) return 0;
    if (N % 16 || b_st[0] % 16 || b_st[1] % 16 || b_st[2] % 16) return 0;
    if (lim.max_workgroup_invocations < ops_qlmm_gemv::WG || lim.max_workgroup_size[0] < ops_qlmm_gemv::WG) return 0;
    if (gemv_shared_bytes(mr, true, b_cols) > (i64)lim.shared_memory_bytes) return 0;
    return mr;
}

bool gemv_preferred(i64 M, i64 b_bytes, bool b_cols, const QlmmTuning &t) {
    return M == 1 || b_bytes >= (i64)(b_cols ? t.GEMV_BC_MULTI_MIN_B : t.GEMV_MULTI_MIN_B);
}

std::string gemv_kernel(i64 mr, bool bc) {
    return (mr == 1 ? "qlmm_gemv" : "qlmm_gemv_m" + std::to_string(mr)) + (bc ? "_bc" : "");
}

i64 gemv_splits(i64 tiles, i64 K, i64 mr, const QlmmTuning &t) {
    const i64 STEP = ops_qlmm_gemv::STEP;
    i64 most = std::max<i64>(1, ceil_div(K, STEP));
    i64 least = ceil_div(K, gemv_slice_max(mr));
    // within one wave where it is at least 7/8 full, else up to the target (gemv.py splits)
    i64 T = t.GEMV_TARGET_GROUPS, fl = T / tiles;
    i64 want = 8 * fl * tiles >= 7 * T ? fl : ceil_div(T, tiles);
    i64 s = std::max(least, std::min(most, want));
    // the kernel rounds each range up to whole steps: fewer splits may then cover K
    i64 sl = ceil_div(ceil_div(K, s), STEP) * STEP;
    return std::max(least, ceil_div(K, sl));
}

}  // namespace vkops
