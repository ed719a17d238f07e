"""libvkops' QUANTIZED_LINEAR_MATRIX_MULTIPLY planner against Python's (vkops.ops.qlmm.python_plan, kernel "auto", the
default tuning): every case of the recorded plan grid, thousands of random shapes per limit set (broadcast
batches, strided and column-major b, int8/uint8 mixes, per-tensor/row/column scales and zero points), the
tiles' and the rule's thresholds +-1, and every rule of QuantizedLinearMatMulDesc.validate() with the same
status and message. Needs build/libvkops (make libvkops).

The C API knows no zero-point values on the host and forces no kernel: the grid's cases that pass
zero_points or a forced kernel / config / split are compared as the C API plans them (auto, unknown)."""
import dataclasses
import random
from collections import Counter

import pytest

import capi
import qlmm_plan_grid as grid
from plan_grid import LIMITS
from test_capi_plans import same
from vkops.errors import DeviceLimitError, ValidationError
from vkops.limits import PROFILES
from vkops.ops import qlmm
from vkops.ops.qlmm import MAX_K, QuantizedLinearMatMulDesc
from vkops.ops.qlmm.coopmat import COOPMAT_CONFIGS, LOW_MAX_M, SMALL_MAX_M
from vkops.ops.qlmm.tuning import DEFAULT as T
from vkops.tensor import TensorDesc

pytestmark = pytest.mark.host_only

OP = capi.OP_QLMM
ONE = (1, 1, 1, 1)


class Record:
    """Python's plan as same() wants it (validated first), remembering each plan's kernels."""

    def __init__(self):
        self.kernels = Counter()

    def __call__(self, desc, limits):
        p = qlmm.python_plan(desc.validate(), limits)
        self.kernels[p.dispatches[-1].kernel] += 1
        self.kernels["kernel=" + p.note("kernel")] += 1
        if len(p.dispatches) > 1:
            self.kernels["packed"] += 1
        if p.note("folded"):
            self.kernels["folded"] += 1
        if p.note("b_transposed"):
            self.kernels["b_transposed"] += 1
        return p


def make(M, K, N, adt="int8", bdt="int8", odt="int8", a_b=(1, 1), b_b=(1, 1), a_st=None, b_st=None,
         sa="tensor", za=None, sb="tensor", zb=None, so="tensor", zo=None):
    """A descriptor; scales / zero points "tensor", "row" / "column" or None (zero points absent)."""
    def param(kind, dt, per):
        if kind is None:
            return None
        return TensorDesc(dt, ONE if kind == "tensor" else per)

    out = (max(a_b[0], b_b[0]), max(a_b[1], b_b[1]), M, N)
    return QuantizedLinearMatMulDesc(
        TensorDesc(adt, a_b + (M, K), a_st), param(sa, "float32", (1, 1, M, 1)), param(za, adt, (1, 1, M, 1)),
        TensorDesc(bdt, b_b + (K, N), b_st), param(sb, "float32", (1, 1, 1, N)), param(zb, bdt, (1, 1, 1, N)),
        param(so, "float32", (1, 1, M, 1)), param(zo, odt, (1, 1, M, 1)), TensorDesc(odt, out))


# ---------------------------------------------------------------- the recorded grid
def test_the_plan_grid():
    rec, seen, n = Record(), set(), 0
    groups = list(grid.groups())
    for g, cases in groups:
        for _, lim, d, _, _ in cases:
            if (d, lim) in seen:  # forced kernels and known zero points repeat descriptors the C API plans alike
                continue
            seen.add((d, lim))
            same(OP, d, rec, lim)
            n += 1
    assert n > 20000 and len(groups) == 3 * 3 * 4 * 4 * 3 * 2 + 12 + 30 + 1
    for k in ("qlmm", "qlmm_dot", "qlmm_gemv", "qlmm_coopmat", "qlmm_coopmat_zp", "qlmm_coopmat_bt", "qlmm_coopmat_zp_bt",
              "qlmm_stream_m16n32p2", "packed", "folded"):
        assert any(x.startswith(k) for x in rec.kernels), (k, rec.kernels)
    assert any(x.endswith("_sk") for x in rec.kernels)


# ---------------------------------------------------------------- random shapes
THRESHOLDS = (T.GEMV_MAX_M, T.STREAM_MAX_M, T.DOT_MAX_M, T.DOT_MAX_M_COOPMAT, T.DOT_COOP_MAX_M, T.DIRECT_MAX_M,
              T.DOT_MAX_ROWS, T.MID_MAX_M, SMALL_MAX_M, LOW_MAX_M, T.BC_TRANSPOSE_MIN_M)


def dim(rng, hi, aligned):
    r = rng.random()
    if aligned or r < 0.45:  # whole steps of a tile size (aligned: of 16 at least), or one off
        q = rng.choice((16, 32, 64, 128) if aligned else (4, 16, 32, 64, 128))
        return max(1, min(hi, q * rng.randint(1, max(1, hi // q // 4))) + (0 if aligned else rng.choice((0, 0, 0, -1, 1))))
    if r < 0.8:
        return max(1, int(2 ** rng.uniform(0, 13.2)) % hi or 1)
    return rng.randint(1, 300)


def m_of(rng):
    r = rng.random()
    if r < 0.25:
        return rng.randint(1, 20)
    if r < 0.45:
        return max(1, rng.choice(THRESHOLDS) + rng.choice((-1, 0, 1)))
    return max(1, min(9000, int(2 ** rng.uniform(0, 13.2))))


def random_case(rng):
    Bo, Co = rng.choice((1, 1, 2, 3)), rng.choice((1, 1, 2, 4))
    a_b = (Bo if rng.random() < 0.8 else 1, Co if rng.random() < 0.8 else 1)
    b_b = (Bo if rng.random() < 0.3 else 1, Co if rng.random() < 0.3 else 1)
    aligned = rng.random() < 0.5  # K, N and strides in whole 16-element steps: the cooperative-matrix kernels'
    M, K, N = m_of(rng), dim(rng, 4500, aligned), dim(rng, 12000, aligned)
    while max(a_b[0], b_b[0]) * max(a_b[1], b_b[1]) * M * max(K, N) > 1 << 26:  # most within Vulkan 1.1's 2^27 bytes
        M = max(1, M // 2) if rng.random() < 0.5 else M
        K, N = (max(16, K // 32 * 16), max(16, N // 32 * 16)) if aligned else (max(1, K // 2), max(1, N // 2))
    pads = (0, 16, 64) if aligned else (0, 1, 15, 16, 64)
    a_st = b_st = None
    r = rng.random()
    if r < 0.2:  # padded rows, batches apart (or broadcast: stride 0)
        sm = K + rng.choice(pads)
        sc = M * sm + rng.choice((0, 0, 16))
        a_st = (rng.choice((a_b[1] * sc, 0)) if a_b[0] > 1 else rng.choice((0, 7)), sc if rng.random() < 0.8 else 0,
                sm, 1)
    elif r < 0.32:  # column-major a: packed first
        a_st = (a_b[1] * M * K, M * K, 1, M)
    elif r < 0.4:
        a_st = (0, 0, K, 1)
    r = rng.random()
    if r < 0.3:  # column-major b: a transposed N x K weight (k stride 1)
        sc = K * N + rng.choice((0, 0, 16 - (K * N) % 16) + (() if aligned else (1,)))
        b_st = (b_b[1] * sc if rng.random() < 0.8 else 0, sc if rng.random() < 0.8 else 0, 1, K + rng.choice(pads))
    elif r < 0.45:
        sk = N + rng.choice(pads)
        b_st = (b_b[1] * K * sk, K * sk if rng.random() < 0.8 else 0, sk, 1)
    elif r < 0.55:
        b_st = (0, 0, N, 1)
    elif r < 0.6 and not aligned:
        b_st = (0, 0, 2 * N, 2)
    q = ("int8", "uint8")
    adt, bdt, odt = rng.choice(q), rng.choice(q), rng.choice(q)
    zp = lambda per: rng.choice((None, None, "tensor", per))  # noqa: E731
    return make(M, K, N, adt, bdt, odt, a_b, b_b, a_st, b_st, rng.choice(("tensor", "row")), zp("row"),
                rng.choice(("tensor", "column")), zp("column"), rng.choice(("tensor", "row")), zp("row"))


WANT = {"h100": {"kernel=gemv", "kernel=stream", "kernel=dot", "kernel=coopmat", "kernel=portable", "folded", "packed"},
        "lavapipe": {"kernel=gemv", "kernel=dot", "kernel=portable", "folded", "packed"},
        "minimum": {"kernel=portable", "folded", "packed"}}


@pytest.mark.parametrize("limits", sorted(LIMITS))
def test_random_shapes(limits):
    rng, rec = random.Random(2000 + sorted(LIMITS).index(limits)), Record()
    for _ in range(3000):
        if same(OP, random_case(rng), rec, LIMITS[limits]) == "error":
            rec.kernels["error"] += 1
    assert WANT[limits] <= set(rec.kernels), rec.kernels
    if limits == "h100":
        assert {"qlmm_coopmat_zp_bt", "qlmm_stream_m16n32p2"} <= set(rec.kernels)
        assert any(k.startswith("qlmm_coopmat") and k.endswith("_sk") for k in rec.kernels), rec.kernels


# Limits planning reads beyond the three sets: coopmat_verified / coopmat_split_verified / integer_dot_product /
# cooperative_matrix as inputs, shared memory (dot's chunk, stream's and gemv's slabs), workgroup sizes and counts.
H100, LAVAPIPE = LIMITS["h100"], LIMITS["lavapipe"]
ODD = [H100.replace(name="h100 unverified", coopmat_verified=False, coopmat_split_verified=False),
       H100.replace(name="no split", coopmat_split_verified=False),
       H100.replace(name="no dot, subgroups of 64", integer_dot_product=False, subgroup_size=64),
       H100.replace(name="16 KiB shared", shared_memory_bytes=16384),
       H100.replace(name="24 KiB shared", shared_memory_bytes=24576),
       H100.replace(name="512 invocations", max_workgroup_invocations=512, max_workgroup_size=(512, 512, 64)),
       H100.replace(name="few groups", max_workgroup_count=(4096, 1024, 64)),
       LAVAPIPE.replace(name="8 KiB shared", shared_memory_bytes=8192),
       PROFILES["minimum"].replace(name="64 invocations", max_workgroup_invocations=64, max_workgroup_size=(64, 64, 64)),
       PROFILES["raspberry-pi-v3dv"]]


def test_random_shapes_under_other_limits_notes_too():
    rng, rec = random.Random(77), Record()
    for lim in ODD:
        for _ in range(300):
            d = random_case(rng)
            if same(OP, d, rec, lim) != "error":
                assert capi.plan(OP, d, lim)["notes"] == qlmm.python_plan(d, lim).to_dict()["notes"]
    assert {"kernel=gemv", "kernel=stream", "kernel=dot", "kernel=coopmat", "kernel=portable"} <= set(rec.kernels)


# ---------------------------------------------------------------- tiles and thresholds
def around(*xs):
    return sorted({max(1, x + d) for x in xs for d in (-1, 0, 1)})


def test_tile_and_threshold_boundaries():
    rec = Record()
    tiles = {c[0] for c in COOPMAT_CONFIGS.values()} | {c[1] for c in COOPMAT_CONFIGS.values()}
    Ms = around(*THRESHOLDS, 128)  # 128: the large tile's rows
    Ns = around(16, 32, 64, 128, 256, *tiles)  # portable 64, dot 128, stream 32/64, gemv 256, coopmat tiles
    Ks = around(16, 32, 64, 128, 256, 512, 4096)  # coopmat TILE_K, gemv STEP and slice_max
    variants = ((dict(), {}), (dict(adt="uint8", za="tensor", zb="column"), {}), (dict(bdt="uint8"), {}))
    n = 0
    for lim in LIMITS.values():
        for kw, _ in variants:
            for M in Ms:
                for N in Ns:
                    n += same(OP, make(M, 1024, N, **kw), rec, lim) is not None
                for K in Ks:
                    same(OP, make(M, K, 4096, **kw), rec, lim)
                    same(OP, make(M, K, 144, b_st=(0, 0, 1, K), **kw), rec, lim)  # column-major b
    # split-K and wave thresholds by tile count: N tiles of 32/64/128 around STREAM_WAVE, targets
    for lim in LIMITS.values():
        for N in around(32 * T.STREAM_WAVE, 64 * T.STREAM_TARGET_GROUPS, 128 * T.DOT_TARGET_GROUPS,
                        256 * T.GEMV_TARGET_GROUPS // 2, 256 * T.GEMV_TARGET_GROUPS // 3 + 256,  # gemv: 2 / 3 splits
                        32000, 50304,  # gemv: a wave 7/8 full (2 splits) or not (197 tiles: 2, not 1)
                        128 * T.AUTO_MIN_GROUPS // 2):
            for M in (1, 4, 16, 100):
                same(OP, make(M, 512, N), rec, lim)
    # column-major B's middle tile (BC_MID_CONFIG) around its splits toward MID_TARGET_GROUPS: 1-3 row tiles of 64
    # against 16-64 column tiles (split 4, 2, then whole)
    bn = COOPMAT_CONFIGS[T.BC_MID_CONFIG][1]
    for lim in LIMITS.values():
        for M in (65, 128, 129, 192, 256):
            for N in around(bn * T.MID_TARGET_GROUPS // 8, bn * T.MID_TARGET_GROUPS // 4, bn * T.MID_TARGET_GROUPS // 2):
                same(OP, make(M, 4096, N, b_st=(0, 0, 1, 4096)), rec, lim)
                same(OP, make(M, 4096, N, b_st=(0, 0, 1, 4096), adt="uint8", za="tensor"), rec, lim)
    # the large tile's tail split (coopmat.tail_split): whole waves and a last one split, over half full, or with sums
    for lim in LIMITS.values():
        for M, K, N in ((1536, 4096, 4096), (1280, 8192, 4096), (1152, 4096, 4096), (4096, 4096, 4096), (2560, 4096, 4096)):
            same(OP, make(M, K, N), rec, lim)
            same(OP, make(M, K, N, adt="uint8", za="tensor"), rec, lim)
    # the 96-row tiles (WAVE_CONFIG, BC_WAVE_CONFIG, MID_WAVE_CONFIG) and the 80- and 112-row fits (WAVE_FIT_CONFIGS)
    # around their row tiles and their workgroups an SM
    for M in (96, 97, 128, 129, 192, 193, 256, 257, 320, 321, 384, 385, 448, 449, 512, 513, 768, 769):
        for N in (4096, 4224, 4352, 8192, 8448, 8576, 16896, 17024):  # 32-34, 64-67 and 132-133 tiles of 128 columns
            for kw in (dict(), dict(b_st=(0, 0, 1, 4096)), dict(adt="uint8", za="tensor"),
                       dict(adt="uint8", za="tensor", b_st=(0, 0, 1, 4096))):
                same(OP, make(M, 4096, N, **kw), rec, LIMITS["h100"])
    # row-major B without zero points: MID_WAVE_CONFIG in the large tile's place up to MID_WAVE_SPLIT_MAX_K deep (the
    # threshold and one step past it), one and two an SM (the N of 4096-8448: 64-132 tiles of 64 columns a row tile)
    kmax = T.MID_WAVE_SPLIT_MAX_K
    for M in (65, 96, 128, 129, 160, 192, 193):
        for K, N in ((kmax, 4096), (kmax + 16, 4096), (4096, 6144), (4096, 8448), (4096, 8576), (4096, 11008),
                     (2048, 4096)):
            same(OP, make(M, K, N), rec, LIMITS["h100"])
            same(OP, make(M, K, N, a_b=(2, 1), b_b=(2, 1)), rec, LIMITS["h100"])
    # folding: Bo*Co*M rows in 16-row tiles around maxComputeWorkGroupCount[1]
    for lim in (LIMITS["h100"], LIMITS["minimum"]):
        for M in (8190, 8191, 8192):
            same(OP, make(M, 16, 16, a_b=(128, 1), sa="row"), rec, lim)
    assert {"kernel=gemv", "kernel=stream", "kernel=dot", "kernel=coopmat", "kernel=portable", "folded",
            "b_transposed", "qlmm_coopmat_bc", "qlmm_coopmat_zp_bc"} <= set(rec.kernels), rec.kernels


# ---------------------------------------------------------------- invalid descriptors
def rep(d, field, value):
    return dataclasses.replace(d, **{field: value})


def bad_descs():
    """(what, descriptor breaking one rule of QuantizedLinearMatMulDesc.validate())."""
    t = TensorDesc
    ok = dict(M=5, K=8, N=7)
    yield "a rank", QuantizedLinearMatMulDesc(t("int8", (5, 8)), t("float32", ONE), None, t("int8", (1, 1, 8, 7)),
                                              t("float32", ONE), None, t("float32", ONE), None, t("int8", (1, 1, 5, 7)))
    yield "scale rank", rep(make(**ok), "a_scale", t("float32", (1,)))
    yield "zp rank", rep(make(**ok), "b_zero_point", t("int8", (1, 1, 1)))
    yield "output rank", rep(make(**ok), "output", t("int8", (5, 7)))
    yield "a type", rep(make(**ok), "a", t("int16", (1, 1, 5, 8)))
    yield "b type", rep(make(**ok), "b", t("float32", (1, 1, 8, 7)))
    yield "output type", rep(make(**ok), "output", t("int32", (1, 1, 5, 7)))
    yield "a_scale type", rep(make(**ok), "a_scale", t("float16", ONE))
    yield "b_scale type", rep(make(**ok), "b_scale", t("int8", ONE))
    yield "output_scale type", rep(make(**ok), "output_scale", t("uint8", ONE))
    yield "a_zp type", rep(make(**ok, za="tensor"), "a_zero_point", t("uint8", ONE))
    yield "b_zp type", rep(make(**ok, bdt="uint8", zb="tensor"), "b_zero_point", t("int8", ONE))
    yield "output_zp type", rep(make(**ok, zo="row"), "output_zero_point", t("uint8", (1, 1, 5, 1)))
    yield "K", rep(make(**ok), "b", t("int8", (1, 1, 9, 7)))
    yield "batch", rep(make(**ok, a_b=(2, 1)), "b", t("int8", (3, 1, 8, 7)))
    yield "channel", rep(make(**ok, a_b=(1, 2)), "b", t("int8", (1, 4, 8, 7)))
    yield "output sizes", rep(make(**ok), "output", t("int8", (1, 1, 7, 5)))
    yield "output batch", rep(make(**ok, a_b=(2, 1)), "output", t("int8", (1, 1, 5, 7)))
    yield "output strides", rep(make(**ok), "output", t("int8", (1, 1, 5, 7), (35, 35, 1, 5)))
    yield "a_scale sizes", rep(make(**ok), "a_scale", t("float32", (1, 1, 1, 5)))
    yield "a_zp sizes", rep(make(**ok, za="tensor"), "a_zero_point", t("int8", (1, 1, 4, 1)))
    yield "b_scale sizes", rep(make(**ok), "b_scale", t("float32", (1, 1, 7, 1)))
    yield "b_zp sizes", rep(make(**ok, zb="tensor"), "b_zero_point", t("int8", (1, 2, 1, 7)))
    yield "output_scale sizes", rep(make(**ok), "output_scale", t("float32", (1, 1, 1, 7)))
    yield "output_zp sizes", rep(make(**ok, zo="tensor"), "output_zero_point", t("int8", (5, 1, 1, 1)))
    yield "scale strides", rep(make(**ok), "a_scale", t("float32", (1, 1, 5, 1), (0, 0, 2, 1)))
    yield "zp strides", rep(make(**ok, zb="tensor"), "b_zero_point", t("int8", (1, 1, 1, 7), (0, 0, 0, 3)))
    yield "K > MAX_K", make(3, MAX_K + 1, 16)
    yield "K = MAX_K", make(3, MAX_K, 16)  # valid


def test_invalid_descriptors_same_status_and_message():
    for what, d in bad_descs():
        try:
            d.validate()
            want = (0, "")
        except ValidationError as e:
            want = (-2 if isinstance(e, DeviceLimitError) else -1, str(e))
        assert capi.validate(OP, d) == want, what
        assert (want[0] == 0) == (what == "K = MAX_K"), what
        for lim in LIMITS.values():
            same(OP, d, Record(), lim)
    assert capi.validate(OP, make(5, 8, 7, za="row", zb="column", zo="tensor")) == (0, "")


def test_device_limits_are_their_own_status():
    lim = PROFILES["minimum"]
    cases = [make(1, 1, 65535 * 64 + 1),                     # portable: N tiles past maxComputeWorkGroupCount[0]
             make(1, 16, 16, a_b=(256, 256), b_b=(256, 256)),  # 65536 batches, not folded (b per batch)
             make(4096, 4096, 16, adt="uint8"),               # output_scale fine, a of 16 MiB fine ...
             make(1 << 14, (1 << 13) + 4, 16)]                # ... a of 128 MiB + 64 KiB past maxStorageBufferRange
    rec = Record()
    assert [same(OP, d, rec, lim) for d in cases] == ["error", "error", "qlmm", "error"]
    assert same(OP, make(1, 16, 16, a_b=(256, 256), b_b=(256, 256)), rec, LIMITS["h100"]) == "error"


def test_inputs_are_the_descriptors_tensors_in_order():
    # The C runtime binds a compiled operator's inputs in the descriptor's order, absent zero points left out.
    fields = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point")
    for za in (None, "row"):
        for zb in (None, "tensor"):
            for zo in (None, "tensor"):
                d = make(4, 32, 48, "uint8", "uint8", "int8", za=za, zb=zb, zo=zo)
                want = [f for f in fields if getattr(d, f) is not None]
                for p in (qlmm.python_plan(d.validate(), LIMITS["h100"]).to_dict(), capi.plan(OP, d, LIMITS["h100"])):
                    assert [b["name"] for b in p["buffers"] if b["role"] == "input"] == want
                    assert [b["tensor"] for b in p["buffers"] if b["role"] == "input"] == [
                        {"data_type": getattr(d, f).data_type.value, "sizes": list(getattr(d, f).sizes),
                         "strides": None} for f in want]


def test_gemv_column_major_b_under_gemv_bc():
    """libvkops under QlmmTuning.GEMV_BC (vkops_plan_json_tuned) plans column-major B on the matrix-vector kernel's
    _bc builds as Python does, byte for byte: one to three rows, K in and out of 16-byte steps, N around the
    256-column workgroup and a decoder's widths, with and without zero points, split or whole; errors alike."""
    knobs = {"GEMV_BC": True}
    tun, kinds = T.replace(**knobs), Counter()
    for lim in LIMITS.values():
        for M in (1, 2, 3):
            for K, kst in ((64, 64), (40, 48), (4096, 4096), (4112, 4128)):
                for N in (16, 256, 272, 11008):
                    for kw in (dict(), dict(adt="uint8", za="tensor", zb="column")):
                        kinds[same(OP, make(M, K, N, b_st=(0, 0, 1, kst), **kw),
                                   lambda d, l: qlmm.plan(d, l, tuning=tun), lim, knobs)] += 1
    assert {"qlmm_gemv_bc", "qlmm_gemv_bc_sk", "qlmm_gemv_m2_bc_sk"} <= set(kinds), kinds
