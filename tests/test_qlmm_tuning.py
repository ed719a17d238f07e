"""QUANTIZED_LINEAR_MATRIX_MULTIPLY's rule for small M and QlmmTuning: the kernel each shape gets, the tuning in
the plan key, its fields' validation and the links to their measurements, the large tile's tail split."""
import numpy as np
import pytest

import vkops
from vkops.ops import qlmm as qmod
from vkops.tensor import TensorDesc
from vkops.ops.qlmm.tuning import DEFAULT as TUNING, QlmmTuning
from qlmm_cases import I8, U8, gemms
from vkops.ops.qlmm.coopmat import COOPMAT_CONFIGS

# An H100's limits with verified cooperative matrices and no integer dot products (the large tiles' rules)
COOPMAT_H100 = vkops.Limits(name="coopmat", subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32,
                            max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64),
                            shared_memory_bytes=49152, max_storage_buffer_range=2**32 - 1, cooperative_matrix=True,
                            coopmat_verified=True, coopmat_split_verified=True)


def last_gemm(M, K, N, batch, cols, zp, tun=TUNING):
    """The last GEMM of an M x K x N product's plan on COOPMAT_H100: B column-major (cols) or row-major, uint8 with
    zero points (zp) or int8 without."""
    t, one = TensorDesc, (1, 1, 1, 1)
    b = t(I8, (1, batch, K, N), (0, K * N, 1, K)) if cols else t(I8, (1, batch, K, N))
    adt = U8 if zp else I8
    d = vkops.QuantizedLinearMatMulDesc(t(adt, (1, batch, M, K)), t(np.float32, one), t(adt, one) if zp else None,
                                        b, t(np.float32, one), t(I8, one) if zp else None, t(np.float32, one), None,
                                        t(adt, (1, batch, M, N))).validate()
    return gemms(qmod.plan(d, COOPMAT_H100, tuning=tun))[-1]


@pytest.mark.host_only
def test_auto_kernel_rule_for_small_m():
    """Pure planning: where cooperative matrices are verified, the B-streaming kernel takes every
    product of up to STREAM_MAX_M rows (any layout of B, zero points or not; 15 when B's column sums take
    a row of A's tile). With it off, the direct-B
    kernel keeps row-major signed B without zero-point sums above DOT_COOP_MAX_M rows; the dot kernel
    takes fewer rows, column-major B and zero points, up to DOT_MAX_M_COOPMAT rows; a device without
    cooperative matrices gets the dot kernel for M <= DOT_MAX_M."""
    h100 = vkops.Limits(name="coopmat+dot", subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32,
                        max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64), shared_memory_bytes=49152,
                        max_storage_buffer_range=2**32 - 1, subgroup_operations=0xFF, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True, integer_dot_product=True)
    t = TensorDesc

    tun = TUNING

    def kernel(lim, M, adt=I8, bdt=I8, zp=False, cols=False, K=4096, N=4096):
        b = t(bdt, (1, 1, K, N), (0, 0, 1, K)) if cols else t(bdt, (1, 1, K, N))
        one = (1, 1, 1, 1)
        d = vkops.QuantizedLinearMatMulDesc(t(adt, (1, 1, M, K)), t(np.float32, one), t(adt, one) if zp else None, b,
                                            t(np.float32, one), t(bdt, one) if zp else None, t(np.float32, one), None,
                                            t(adt, (1, 1, M, N))).validate()
        return gemms(qmod.plan(d, lim, tuning=tun))[-1].kernel

    # one row: the matrix-vector kernel (any signedness, zero points or not; column-major B on its _bc build);
    # N not in whole 16-column steps goes on to the rules below (the dot kernel, either layout)
    assert kernel(h100, 1) == kernel(h100, 1, U8, U8, zp=True) == "qlmm_gemv_sk"
    # two rows where B has GEMV_MULTI_MIN_B bytes (4096^2: 16 MiB; 4096 x 1024 is 4 MiB: the stream kernel), column-major
    # B GEMV_BC_MULTI_MIN_B (4096 x 11008: 45 MB; 4096^2 the stream kernel)
    assert kernel(h100, 2) == kernel(h100, 2, U8, U8, zp=True) == kernel(h100, 2, N=11008) == "qlmm_gemv_m2_sk"
    assert kernel(h100, 2, N=1024).startswith("qlmm_stream") and kernel(h100, 2, cols=True).startswith("qlmm_stream")
    assert kernel(h100, 2, cols=True, N=11008) == "qlmm_gemv_m2_bc_sk"
    assert kernel(h100, 3, N=11008).startswith("qlmm_stream")
    assert kernel(h100, 1, cols=True) == "qlmm_gemv_bc_sk"
    assert kernel(h100, 1, N=4100).startswith("qlmm_dot") and kernel(h100, 1, cols=True, N=4100).startswith("qlmm_dot")
    assert kernel(h100.replace(max_workgroup_invocations=128), 1).startswith("qlmm_stream")
    tun = TUNING.replace(GEMV=False)
    for k in (kernel(h100, 1), kernel(h100, 16), kernel(h100, 16, cols=True), kernel(h100, 15, U8, I8, zp=True),
              kernel(h100, 15, I8, U8, zp=True), kernel(h100, 16, I8, U8)):  # B's offset: row sums of A only
        assert k.startswith("qlmm_stream"), k
    # B's column sums: no row left; the 32-row tile, not the dot kernel (DOT_MAX_M_COOPMAT), either layout
    assert kernel(h100, 16, U8, I8, zp=True) == "qlmm_coopmat_zp_bt_sk" and kernel(h100, 16, U8, I8, zp=True, cols=True) == "qlmm_coopmat_zp_bc_sk"
    assert kernel(h100, 16, U8, I8, zp=True, K=4000).startswith("qlmm_coopmat_zp")
    assert kernel(h100, 17).startswith("qlmm_coopmat") and kernel(h100, 16, K=4000).startswith("qlmm_stream")
    # 65..MID_MAX_M rows take MID_CONFIG, with split-K (128 x 4096^2: 64 tiles) and without (128 x 4096 x 6144: 96),
    # where the large tile makes fewer than LARGE_SPLIT_MIN_TILES; from there (no zero-point sums) the large tile,
    # split below LARGE_MIN_TILES (128 x 8192^2: 64 tiles) and unsplit from there (256 x 8192^2: 128); every auto
    # tile stages row-major B transposed (the _bt builds), with zero-point sums too (BT_SUMS; else row-major)
    bt = (TUNING.LARGE_CONFIG, TUNING.MID_CONFIG, TUNING.WAVE_CONFIG, TUNING.BC_WAVE_CONFIG, TUNING.MID_WAVE_CONFIG,
          TUNING.SMALL_CONFIG, TUNING.LOW_CONFIG, TUNING.FEW_TILES_CONFIG)
    assert set(bt) <= set(TUNING.BT_CONFIGS), TUNING.BT_CONFIGS
    assert kernel(h100, 128, N=6144) == kernel(h100, 256, N=3968) == "qlmm_coopmat_bt"  # 62 large tiles
    assert kernel(h100, 128, K=8192, N=8192) == "qlmm_coopmat_bt_sk" and kernel(h100, 256, K=8192, N=8192) == "qlmm_coopmat_bt"
    assert kernel(h100, 128) == "qlmm_coopmat_bt_sk" and kernel(h100, 2047) == "qlmm_coopmat_bt"
    assert kernel(h100, 2048) == "qlmm_coopmat_bc"  # BC_TRANSPOSE_MIN_M: B transposed first (test_plan.py)
    assert kernel(h100, 128, U8, I8, zp=True) == "qlmm_coopmat_zp_bt_sk"
    assert kernel(h100, 128, U8, I8, zp=True, K=8192, N=8192) == "qlmm_coopmat_zp_bt"  # zero points: MID_CONFIG, unsplit
    tun = TUNING.replace(GEMV=False, BT_SUMS=False)
    assert kernel(h100, 128, U8, I8, zp=True) == "qlmm_coopmat_zp_sk" and kernel(h100, 128) == "qlmm_coopmat_bt_sk"
    tun = TUNING.replace(GEMV=False, BT_CONFIGS=())
    assert kernel(h100, 128) == "qlmm_coopmat_sk" and kernel(h100, 128, N=6144) == "qlmm_coopmat"
    # the large tile's last wave, under half full, split-K (TAIL_SPLIT), zero-point sums or not; 4096 rows' last
    # wave of 232 tiles (on the BC build after B's transposed copy) and one matrix's 8 are left whole
    assert kernel(h100, 1536) == kernel(h100, 1280, K=8192) == "qlmm_coopmat_sk" and kernel(h100, 4096) == "qlmm_coopmat_bc"
    assert kernel(h100, 1536, U8, I8, zp=True) == "qlmm_coopmat_zp_sk" and kernel(h100, 1024) == "qlmm_coopmat"
    tun = TUNING.replace(GEMV=False)
    assert kernel(h100, 1536, U8, I8, zp=True) == "qlmm_coopmat_zp_bt_sk" and kernel(h100, 1024) == "qlmm_coopmat_bt"
    # research knob: the tiles of DB_CONFIGS staged in two shared buffers (every kernel of the tile, split or not)
    assert TUNING.DB_CONFIGS == ()
    tun = TUNING.replace(GEMV=False, DB_CONFIGS=(TUNING.LARGE_CONFIG, TUNING.MID_CONFIG))
    assert kernel(h100, 1024) == "qlmm_coopmat_bt_db" and kernel(h100, 1024, U8, I8, zp=True) == "qlmm_coopmat_zp_db"
    assert kernel(h100, 128, K=8192, N=8192) == "qlmm_coopmat_bt_db_sk"
    # MID_CONFIG's B-transposed tiles doubled declare 55 KiB, over this device's 48: the rule passes on to portable
    assert kernel(h100, 128) == "qlmm" and kernel(h100.replace(shared_memory_bytes=56 * 1024), 128) == "qlmm_coopmat_bt_db_sk"
    tun = TUNING.replace(GEMV=False, STREAM=False)
    cap = TUNING.DOT_COOP_MAX_M
    assert kernel(h100, 16).startswith("qlmm_coopmat_direct") and kernel(h100, cap + 1).startswith("qlmm_coopmat_direct")
    dmax = TUNING.DOT_MAX_M_COOPMAT
    for k in (kernel(h100, cap), kernel(h100, 1), kernel(h100, dmax, cols=True), kernel(h100, dmax, U8, I8, zp=True),
              kernel(h100, dmax, I8, U8, zp=True)):
        assert k.startswith("qlmm_dot"), k
    assert kernel(h100, dmax + 1, cols=True).startswith("qlmm_coopmat") and kernel(h100, dmax + 1, U8, I8, zp=True).startswith("qlmm_coopmat")
    assert kernel(h100, 17).startswith("qlmm_coopmat") and not kernel(h100, 17).startswith("qlmm_coopmat_direct")
    # research knobs: B read directly for 32 rows with a 32-row, one-subgroup-high tile
    tun = TUNING.replace(GEMV=False, STREAM=False, COOPMAT_CONFIG="32x64x256_4x1")
    assert not kernel(h100, 32).startswith("qlmm_coopmat_direct")
    tun = tun.replace(DIRECT_MAX_M=32)
    assert kernel(h100, 32).startswith("qlmm_coopmat_direct") and not kernel(h100, 33).startswith("qlmm_coopmat_direct")
    tun = TUNING.replace(GEMV=False, STREAM=False)
    assert kernel(h100.replace(integer_dot_product=False), 1).startswith("qlmm_coopmat_direct")
    plain = h100.replace(cooperative_matrix=False, coopmat_verified=False, coopmat_split_verified=False)
    assert TUNING.DOT_MAX_M_COOPMAT == 15 < TUNING.DOT_MAX_M == 32
    assert kernel(plain, 16).startswith("qlmm_dot") and kernel(plain, 32).startswith("qlmm_dot")
    assert kernel(plain, 33) == "qlmm"


def test_the_tuning_is_in_the_plan_key(dev, rng):
    """A call under another tuning plans again instead of reusing a stale plan; an equal tuning (another
    object) reuses it; the bench's variants replace exactly QlmmTuning's fields."""
    from vkops.bench.specs import QLinearMatMul as Spec

    a = dev.tensor(rng.integers(-128, 128, (4, 32), dtype=np.int8))
    b = dev.tensor(rng.integers(-128, 128, (32, 16), dtype=np.int8))
    call = lambda **kw: vkops.quantized_linear_matmul(a, 0.5, None, b, 0.5, None, 1.0, None, **kw)  # noqa: E731
    want = call().numpy()
    stored = dev._plans.stored
    call()
    call(tuning=QlmmTuning())
    assert dev._plans.stored == stored  # repeated (the same tuning): the plan is reused
    other = TUNING.replace(SPLIT_TARGET_GROUPS=TUNING.SPLIT_TARGET_GROUPS + 1)
    assert np.array_equal(call(tuning=other).numpy(), want) and dev._plans.stored == stored + 1
    with pytest.raises(ValueError, match="no QLinearMatMul knob 'COOPMAT_CONFIGS'"):
        Spec.variant(knobs={"COOPMAT_CONFIGS": {}})
    assert Spec.tuning(config="64x64x64_2x2", split_k=2, knobs={"DOT_UNROLL": 4}) == TUNING.replace(
        COOPMAT_CONFIG="64x64x64_2x2", COOPMAT_SPLIT_K=2, DOT_UNROLL=4)
    with pytest.raises(vkops.ValidationError, match="tuning must be a QlmmTuning"):
        call(tuning={"DOT": False})


def test_no_planning_knob_is_left_in_a_module():
    """Every knob lives in QlmmTuning: none is a module attribute anyone could set."""
    import importlib

    mods = [qmod] + [importlib.import_module(f"vkops.ops.qlmm.{n}")
                     for n in ("desc", "rule", "lowering", "coopmat", "dot", "stream", "gemv", "face", "args")]
    for m in mods:
        left = [k for k in QlmmTuning.knobs() if hasattr(m, k)] + (["KNOBS"] if hasattr(m, "KNOBS") else [])
        assert not left, (m.__name__, left)


@pytest.mark.parametrize("knob, value, rule", [
    ("STREAM_NR", 48, "'auto' or one of (32, 64)"), ("LARGE_CONFIG", "128x128", "a cooperative-matrix tile"),
    ("COOPMAT_CONFIG", "99x1x1_1x1", "a cooperative-matrix tile"), ("BT_CONFIGS", ["128x64x128_4x2"], "a tuple"),
    ("BT_CONFIGS", ("nope",), "a cooperative-matrix tile"), ("DOT", 1, "True or False"), ("DOT_WG", 0, "an int >= 1"),
    ("STREAM_MIN_M", -1, "an int >= 0"), ("SPLIT_MAX", 2.0, "an int >= 1"), ("SPLIT_MAX", 256, "at most 255"),
    ("COOPMAT_SPLIT_K", 256, "'auto' or an int from 1 to 255"), ("COOPMAT_SPLIT_K", 0, "'auto' or an int"),
    ("BC_LARGE_CONFIG", "64x64x64_2x2", "a tile of LARGE_CONFIG's rows and columns"),
    ("BC_TRANSPOSE_TILE", 32, "64 or 128"), ("WAVE_MAX_GROUPS", -1, "an int >= 0"),
    ("WAVE_CONFIG", "96x128x64_2x4", "a cooperative-matrix tile"), ("WAVE_MAX_PER_SM", 0, "an int >= 1"),
    ("WAVE_CONFIG", "128x128x64_2x2", "a tile of fewer rows than LARGE_CONFIG's"),
    ("BC_WAVE_CONFIG", "96x64x128_2x2", "a tile of WAVE_CONFIG's rows and columns"),
    ("MID_WAVE_CONFIG", "96x64", "a cooperative-matrix tile"),
])
def test_tuning_validates_its_fields(knob, value, rule):
    """A bad knob is a ValidationError naming the field, the rule and the value."""
    assert TUNING.validate() is TUNING
    with pytest.raises(vkops.ValidationError) as e:
        TUNING.replace(**{knob: value})
    got = value[0] if value == ("nope",) else value
    assert str(e.value).startswith(f"QlmmTuning.{knob} must be {rule}") and str(e.value).endswith(f"got {got!r}"), e.value


@pytest.mark.parametrize("M, K, N, batch, wave", [
    (257, 4096, 4096, 1, True),    # 3 large tile rows, 3 of 96: 96 tiles either way, each of fewer rows
    (384, 4096, 4096, 1, True),    # 96 large tiles, 128 of 96 rows: one an SM still (WAVE_MAX_GROUPS 132)
    (384, 11008, 4096, 1, True),   # K does not count
    (384, 4096, 4224, 1, True),    # 4 x 33 = 132: the last one that fits one an SM
    (384, 4096, 4352, 1, False),   # 4 x 34 = 136: two on some SMs against the large tile's one (102)
    (384, 4096, 8448, 1, True),    # 198 large tiles, two on some SMs; 4 x 66 = 264: two on every SM
    (384, 4096, 8576, 1, False),   # 4 x 67 = 268: three on some (WAVE_MAX_PER_SM 2)
    (384, 4096, 11008, 1, False),  # 344 tiles of 96 rows (measured 0.13 against 0.077 ms)
    (448, 4096, 3072, 1, True),    # 5 x 24 = 120 against the large tile's 96
    (1536, 4096, 1024, 1, True),   # 16 x 8 = 128
    (300, 4096, 2048, 2, True),    # two matrices (B batched too: no fold): 2 x 4 x 16 = 128 against the large tile's 96
    (300, 4096, 2048, 3, True),    # three: 192 tiles of 96 rows against 144, two an SM either way
    (300, 4096, 2048, 5, False),   # five: 320 of 96 rows (three an SM) against 240 (two)
    (512, 4096, 4096, 1, False),   # 128 large tiles (one an SM), 192 of 96 rows (two on some)
    (513, 4096, 4096, 1, True),    # 160 large tiles, 192 of 96 rows: two an SM either way
    (768, 4096, 4096, 1, True),    # 192 / 256
    (769, 4096, 4096, 1, False),   # 224 large tiles, 288 of 96 rows: three on some SMs
    (1024, 4096, 4096, 1, False),  # 256 / 352
    (256, 4096, 4096, 1, False),   # MID_MAX_M rows: the middle tiles' rule
])
@pytest.mark.host_only
def test_wave_tile_where_it_keeps_the_workgroups_an_sm(M, K, N, batch, wave):
    """WAVE_CONFIG (96-row tiles) in the large tile's place above MID_MAX_M rows where its own tiles put no more
    workgroups on the busiest SM (ceil(tiles / WAVE_MAX_GROUPS)) than the large tiles do and at most WAVE_MAX_PER_SM,
    unsplit, for B row-major and column-major, zero points or not (row-major int8 staged transposed); WAVE_MAX_GROUPS
    0: the large tile everywhere; WAVE_MAX_PER_SM 1: only where the 96-row tiles make one wave. Without
    WAVE_FIT_CONFIGS (test_wave_fit_tiles)."""
    T = TUNING.replace(WAVE_FIT_CONFIGS=())
    last = lambda cols, zp, tun=T: last_gemm(M, K, N, batch, cols, zp, tun)  # noqa: E731
    if M <= T.MID_MAX_M:  # the middle tiles' rows: not this rule's
        assert all(last(c, z).spec[1:3] != (96, 128) for c in (False, True) for z in (False, True))
        return
    tm, tn = (96, 128) if wave else (128, 128)
    one_an_sm = -(-M // 96) * -(-N // 128) * batch <= 132
    for cols in (False, True):
        for zp in (False, True):
            g = last(cols, zp)
            bc = "_bc" if cols else ""
            want = "qlmm_coopmat" + ("_zp" if zp else "") + (bc or "_bt")  # row-major: transposed
            assert g.kernel == want, (cols, zp, g.kernel)  # unsplit: no _sk build
            assert g.spec[1:3] == (tm, tn) and g.groups == (-(-N // tn), -(-M // tm), batch), (cols, zp, g.spec, g.groups)
            if wave:  # 4 x 1 subgroups of 96 x 32, 64 deep; B staged n-major (column-major as it lies, or row-major
                # transposed: no zero points) one an SM: BC_WAVE_CONFIG, 2 x 2, 128 deep; BT_CONFIGS without it: not so
                deep = (cols or not zp) and one_an_sm
                assert g.spec[3:6] == ((128, 2, 2) if deep else (64, 4, 1)), (cols, zp, g.spec)
                bt = tuple(c for c in T.BT_CONFIGS if c != T.BC_WAVE_CONFIG)
                assert last(cols, zp, T.replace(BT_CONFIGS=bt)).spec[3:6] == ((128, 2, 2) if cols and one_an_sm
                                                                                   else (64, 4, 1))
                off = last(cols, zp, T.replace(WAVE_MAX_GROUPS=0))
                assert off.spec[1:3] == (128, 128), off.spec
                single = last(cols, zp, T.replace(WAVE_MAX_PER_SM=1)).spec[1:3]
                assert single == ((96, 128) if one_an_sm else (128, 128)), single
                same = last(cols, zp, T.replace(BC_WAVE_CONFIG=T.WAVE_CONFIG)).spec[3:6]
                assert same == (64, 4, 1), same


@pytest.mark.parametrize("M, N, batch, want", [
    (257, 4096, 1, 80),    # 4 x 32 = 128 of 80 rows, one an SM (96 rows: 3 x 32 = 96)
    (320, 4096, 1, 80),
    (321, 4096, 1, 96),    # 5 x 32 = 160 of 80 rows: two on some SMs; 4 x 32 of 96
    (384, 4096, 1, 96),
    (385, 4096, 1, 112),   # 5 x 32 of 96 rows, 4 x 32 of 112 (the large tile's place: 128 of 128 rows)
    (448, 4096, 1, 112),
    (449, 4096, 1, 128),   # 5 x 32 of 112: the large tile
    (300, 2048, 2, 80),    # two matrices (B batched: no fold), 2 x 4 x 16 = 128 of 80 rows
    (768, 2048, 1, 96),    # 8 x 16 = 128 of 96 rows; 80 rows make 10 x 16
    (1024, 2048, 1, 128),  # 128 large tiles: 112 rows make 10 x 16
    (513, 4096, 1, 96),    # two an SM: not this rule's (WAVE_CONFIG)
    (320, 8192, 1, 96),    # 3 x 64 of 96 rows, two an SM: not this rule's
])
@pytest.mark.host_only
def test_wave_fit_tiles(M, N, batch, want):
    """Above MID_MAX_M rows, where the rule's tile (96 or 128 rows, 128 columns) runs one workgroup an SM, the tile of
    WAVE_FIT_CONFIGS with the fewest rows whose tiles run one an SM too takes its place (a wave's time is a tile's),
    unsplit, either layout of B, zero points or not (staged transposed: in BT_CONFIGS); WAVE_FIT_CONFIGS () or
    WAVE_MAX_GROUPS 0: the rule's tile; only the 112-row tile: 96 rows where 80 would run."""
    fits = {c: COOPMAT_CONFIGS[c] for c in TUNING.WAVE_FIT_CONFIGS}
    assert sorted(v[0] for v in fits.values()) == [80, 112] and all(v[1] == 128 for v in fits.values())
    assert set(fits) <= set(TUNING.BT_CONFIGS)
    only112 = TUNING.replace(WAVE_FIT_CONFIGS=tuple(c for c in fits if fits[c][0] == 112))
    for cols in (False, True):
        for zp in (False, True):
            g = last_gemm(M, 4096, N, batch, cols, zp)
            assert g.spec[1] == want and g.spec[2] == 128, (cols, zp, g.spec)
            assert g.groups == (-(-N // 128), -(-M // want), batch), g.groups
            assert g.kernel == "qlmm_coopmat" + ("_zp" if zp else "") + ("_bc" if cols else "_bt"), g.kernel  # unsplit
            if want in (80, 112):
                assert g.spec[3:6] == (128, 4, 1), g.spec
                for off in (TUNING.replace(WAVE_FIT_CONFIGS=()), TUNING.replace(WAVE_MAX_GROUPS=0)):
                    assert last_gemm(M, 4096, N, batch, cols, zp, off).spec[1] in (96, 128)
                assert last_gemm(M, 4096, N, batch, cols, zp, only112).spec[1] == (112 if want == 112 else 96)


@pytest.mark.parametrize("M, K, N, fit", [
    (193, 4096, 4096, True),   # four rows of 64 x 128 tiles, 32 columns: 128 workgroups, one wave
    (224, 4096, 4096, True),
    (256, 4096, 4096, True),
    (256, 8192, 4096, False),  # deeper than MID_FIT_MAX_K
    (256, 4096, 4224, True),   # 132: a whole wave
    (256, 4096, 4352, False),  # 136: two on some SMs
    (256, 4096, 3200, True),   # 100: MID_FIT_MIN_GROUPS
    (256, 4096, 3072, False),  # 96
    (192, 4096, 4096, False),  # three rows of 64 (the 96 x 64 tiles' rows)
    (257, 4096, 4096, False),  # above MID_MAX_M
])
@pytest.mark.host_only
def test_mid_fit_tile(M, K, N, fit):
    """MID_FIT_CONFIG (64 x 128 tiles, 4 x 1 subgroups, 128 deep) in more than three of its tile rows up to MID_MAX_M,
    up to MID_FIT_MAX_K deep, where its tiles make one wave of MID_FIT_MIN_GROUPS to WAVE_MAX_GROUPS workgroups,
    unsplit, either layout of B, zero points or not (row-major staged transposed) but column-major B with them;
    MID_FIT_MIN_GROUPS past WAVE_MAX_GROUPS, or WAVE_MAX_GROUPS 0: the rules before it; MID_FIT_MAX_K 8192: K 8192."""
    assert COOPMAT_CONFIGS[TUNING.MID_FIT_CONFIG] == (64, 128, 128, 4, 1) and TUNING.MID_FIT_CONFIG in TUNING.BT_CONFIGS
    for cols in (False, True):
        for zp in (False, True):
            g = last_gemm(M, K, N, 1, cols, zp)
            assert (g.spec[1:6] == (64, 128, 128, 4, 1)) == (fit and not (cols and zp)), (cols, zp, g.spec)
            deep = last_gemm(M, K, N, 1, cols, zp, TUNING.replace(MID_FIT_MAX_K=8192)).spec[1:3] == (64, 128)
            assert deep == ((fit or (K == 8192 and M == 256 and N == 4096)) and not (cols and zp)), (cols, zp, deep)
            if not fit or (cols and zp):
                continue
            assert g.kernel == "qlmm_coopmat" + ("_zp" if zp else "") + ("_bc" if cols else "_bt"), g.kernel  # unsplit
            assert g.groups == (-(-N // 128), -(-M // 64), 1), g.groups
            for off in (TUNING.replace(MID_FIT_MIN_GROUPS=1000), TUNING.replace(WAVE_MAX_GROUPS=0)):
                assert last_gemm(M, K, N, 1, cols, zp, off).spec[1:3] != (64, 128)


@pytest.mark.parametrize("M, N, cols, zp, mid_wave", [
    (129, 4096, True, False, True),    # 192 tiles of 64 x 64 (two on some SMs), 128 of 96 x 64 (one an SM)
    (192, 4096, True, True, True),
    (193, 4096, True, False, False),   # 256 against 192: two an SM either way, and 96 rows are more than 64
    (128, 4096, True, False, False),   # 128 against 128: one an SM either way
    (96, 4096, True, False, False),    # 128 against 64
    (160, 4096, False, True, True),    # row-major B, zero points: MID_CONFIG's 128 x 64 tiles, 128 either way, 96 rows fewer
    (193, 4096, False, True, False),   # 128 against 192
    (128, 4096, False, True, False),   # MID_CONFIG split-K (64 tiles): not this rule's
    (160, 8192, True, False, True),    # 384 (three an SM) against 256 (two)
    (160, 8192, False, True, True),    # 256 against 256, fewer rows
    (160, 16384, True, False, False),  # 512 of 96 x 64: four an SM, past WAVE_MAX_PER_SM
])
@pytest.mark.host_only
def test_mid_wave_tile_where_it_puts_fewer_workgroups_on_an_sm(M, N, cols, zp, mid_wave):
    """MID_WAVE_CONFIG (96 x 64 tiles) in the unsplit middle tile's place (65-MID_MAX_M rows) where its tiles put fewer
    workgroups on the busiest SM, or as many with fewer rows a tile, at most WAVE_MAX_PER_SM; unsplit (row-major B
    without zero points where the large tile would split: the next test); WAVE_MAX_GROUPS 0: never."""
    g = last_gemm(M, 4096, N, 1, cols, zp)
    if mid_wave:
        assert g.spec[1:6] == (96, 64, 128, 2, 2) and "_sk" not in g.kernel, (g.kernel, g.spec)
        assert g.groups == (-(-N // 64), -(-M // 96), 1), g.groups
        off = last_gemm(M, 4096, N, 1, cols, zp, TUNING.replace(WAVE_MAX_GROUPS=0))
        assert off.spec[1:3] == ((64, 64) if cols else (128, 64)), off.spec
    else:
        assert g.spec[1:3] != (96, 64), (g.kernel, g.spec)


@pytest.mark.parametrize("M, K, N, want", [
    (160, 4096, 4096, "wave"),    # 128 tiles of 96 x 64 (one an SM) in the large tile's split-K place
    (129, 4096, 4096, "wave"),
    (192, 8192, 4096, "wave"),    # K = MID_WAVE_SPLIT_MAX_K
    (192, 8208, 4096, "large"),   # deeper: the large tile, split
    (160, 4096, 6144, "wave"),    # 192 tiles of 96 x 64 against the middle tile's 192: two an SM, fewer rows
    (160, 4096, 8192, "wave"),    # 256 against 256
    (80, 4096, 11008, "wave"),    # 172 against 172
    (193, 4096, 4096, "large"),   # 192 against the middle tile's 128: two on some SMs against one
    (160, 4096, 16384, "large"),  # 512: four an SM, past WAVE_MAX_PER_SM (the large tile unsplit, 256 tiles)
    (160, 8192, 3072, "mid"),     # the middle tile's place (too few large tiles to split)
])
@pytest.mark.host_only
def test_mid_wave_tile_before_the_large_split_b_staged_transposed(M, K, N, want):
    """Row-major B without zero points: where MID_WAVE_CONFIG stages B transposed (in BT_CONFIGS) and holds by its
    rule (fewer workgroups on the busiest SM than the middle tile, or as many with fewer rows, at most
    WAVE_MAX_PER_SM), it takes the large tile's place (split-K below LARGE_MIN_TILES) up to MID_WAVE_SPLIT_MAX_K deep; that knob 0, or
    the tile staged row-major, gives the large tile back. Zero points and column-major B keep their builds. Without
    MID_FIT_CONFIG (test_mid_fit_tile)."""
    T = TUNING.replace(MID_FIT_MIN_GROUPS=1000)
    g = last_gemm(M, K, N, 1, False, False, T)
    if want == "large":
        assert g.spec[1:3] == (128, 128) and g.kernel.startswith("qlmm_coopmat_bt"), (g.kernel, g.spec)
        return
    assert g.spec[1:6] == (96, 64, 128, 2, 2) and g.kernel == "qlmm_coopmat_bt", (g.kernel, g.spec)
    assert g.groups == (-(-N // 64), -(-M // 96), 1), g.groups
    if want == "wave":  # in the large tile's place: either knob gives it back
        bt = tuple(c for c in T.BT_CONFIGS if c != T.MID_WAVE_CONFIG)
        for off in (T.replace(MID_WAVE_SPLIT_MAX_K=0), T.replace(BT_CONFIGS=bt)):
            o = last_gemm(M, K, N, 1, False, False, off)
            assert o.spec[1:3] == (128, 128), (o.kernel, o.spec)  # split 2 below LARGE_MIN_TILES
    zp, cols = last_gemm(M, K, N, 1, False, True, T), last_gemm(M, K, N, 1, True, False, T)
    assert zp.kernel == "qlmm_coopmat_zp_bt" and "_bt" not in cols.kernel, (zp.kernel, cols.kernel)  # their own rules


@pytest.mark.parametrize("M, K, N, split", [
    (64, 8192, 8192, 2),   # 128 tiles of 64 x 64, 64 K chunks: toward two workgroups an SM
    (33, 8192, 8192, 2),
    (40, 8192, 4096, 4),   # 64 tiles: 4 splits of 16 chunks
    (64, 11008, 4096, 4),  # 86 chunks
    (64, 8064, 8192, 1),   # 63 chunks, under LOW_TARGET_MIN_K: toward one an SM (128 tiles: unsplit)
    (64, 4096, 4096, 2),   # 64 tiles, 32 chunks: one an SM
    (64, 4096, 8192, 1),
    (64, 8192, 16384, 1),  # 256 tiles: unsplit either way
])
@pytest.mark.host_only
def test_low_tile_splits_toward_two_an_sm_from_deep_k(M, K, N, split):
    """33-64 rows on LOW_CONFIG split K toward LOW_TARGET_GROUPS (two workgroups an SM) from LOW_TARGET_MIN_K deep (K
    in whole chunks), shallower toward MID_TARGET_GROUPS (one an SM), either layout of B, zero points or not; the
    knobs move the line."""
    def splits(cols, zp, tun=TUNING):
        g = last_gemm(M, K, N, 1, cols, zp, tun)
        assert g.spec[1:6] == (64, 64, 128, 4, 2), g.spec  # LOW_CONFIG
        s = g.groups[0] // -(-N // 64)
        assert g.kernel.endswith("_sk") == (s > 1), (g.kernel, s)
        return s
    for cols in (False, True):
        for zp in (False, True):
            assert splits(cols, zp) == split, (cols, zp)
            shallow = splits(cols, zp, TUNING.replace(LOW_TARGET_MIN_K=1 << 20))  # all toward one an SM
            assert shallow == (split // 2 if K >= 8192 and split > 1 else split), (cols, zp, shallow)
            deep = splits(cols, zp, TUNING.replace(LOW_TARGET_MIN_K=1))  # all toward two an SM
            assert deep == (split if K >= 8192 or N > 8192 else 2 * split), (cols, zp, deep)


@pytest.mark.parametrize("M, K, whole, S", [
    (1536, 4096, 264, 2),   # 384 large tiles: 264 whole, the last 120 split 2 ways (264 // 120)
    (1280, 8192, 264, 4),   # 320: the last 56 split 4 ways (264 // 56)
    (1280, 4096, 264, 4),   # the same with 64 K chunks: 16 a split, TAIL_MIN_CHUNKS (8) allows it
    (2560, 4096, 528, 2),   # 640: two whole waves, then 112 tiles split
    (1152, 4096, 264, 8),   # 288: a last wave of 24 tiles could split 11 ways but K's 64 chunks hold 8 of 8
    (4096, 4096, 0, 1),     # 1024: a last wave of 232 tiles, over half full: whole
    (1024, 4096, 0, 1),     # 256 tiles: no whole wave
])
@pytest.mark.parametrize("zp", [False, True])
@pytest.mark.host_only
def test_tail_split_plan(M, K, whole, S, zp):
    """TAIL_SPLIT: the large tile's whole waves (AUTO_MIN_GROUPS workgroups) run whole and the last wave's tiles, fewer
    than half a wave, split-K on a one-matrix grid of F + (tiles - F) * S workgroups; the push constants' splits word
    carries S | F << 8, the slots (the tile, its row and column sums) and counters are the split tiles' only. Off: the
    whole grid unsplit. From BC_TRANSPOSE_MIN_M rows the same on the BC builds, after B's transposed copy (a scratch of
    K x N bytes). Zero-point sums or not (zp: uint8 A with zero points, the _zp builds)."""
    N = 4096
    t = lambda dt, shape: vkops.TensorDesc(dt, shape)
    one = (1, 1, 1, 1)
    adt = "uint8" if zp else "int8"
    d = vkops.QuantizedLinearMatMulDesc(t(adt, (1, 1, M, K)), t("float32", one), t(adt, one) if zp else None,
                                        t("int8", (1, 1, K, N)), t("float32", one), t("int8", one) if zp else None,
                                        t("float32", one), None, t(adt, (1, 1, M, N))).validate()
    h100 = COOPMAT_H100
    tiles = -(-M // 128) * (N // 128)
    p = qmod.python_plan(d, h100, tuning=TUNING.replace(GEMV=False))
    g = p.dispatches[-1]
    slot = 128 * 128 + 256
    tr = M >= TUNING.BC_TRANSPOSE_MIN_M  # B transposed first, then the BC builds
    kname, copy = ("qlmm_coopmat_bc", [K * N]) if tr else ("qlmm_coopmat_bt", [])  # B staged transposed (BT_CONFIGS)
    kname = kname.replace("coopmat_", "coopmat_zp_") if zp else kname
    assert [x.kernel for x in p.dispatches[:-1]] == (["qlmm_transpose"] if tr else [])
    if whole:
        assert g.kernel == kname + "_sk" and g.groups == (whole + (tiles - whole) * S, 1, 1)
        assert g.push[11] == S | whole << 8 and p.note("whole_tiles") == whole and p.note("split_k") == S
        scratch = sorted(b.nbytes for b in p.buffers if b.role == "scratch")
        assert scratch == sorted([4 * (tiles - whole) * S * slot, 4 * (tiles - whole)] + copy), scratch
    else:
        assert g.kernel == kname and g.groups == (N // 128, -(-M // 128), 1) and p.note("whole_tiles") is None
    off = qmod.python_plan(d, h100, tuning=TUNING.replace(GEMV=False, TAIL_SPLIT=False)).dispatches[-1]
    assert off.kernel == kname and off.groups == (N // 128, -(-M // 128), 1) and off.push[11] == 0


def test_every_knob_says_why_and_links_its_measurements():
    """Each QlmmTuning field's comment ends with a link to the entry of docs/tuning/qlmm.md that measured it."""
    import re
    from pathlib import Path

    from vkops.ops.qlmm import tuning

    src = Path(tuning.__file__).read_text()
    doc = (Path(__file__).resolve().parent.parent / "docs" / "tuning" / "qlmm.md").read_text()
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#{2,4} (.+)$", doc, re.M)}
    assert "2026-11-27-session-33-column-major-b-staged-as-it-lies" in anchors
    for name in tuning.QlmmTuning.knobs():
        line = re.search(rf"^    {name}: .+$", src, re.M)
        assert line, name
        link = re.search(r"  # .+ \(#([\w-]+)\)$", line.group(0))
        assert link and link.group(1) in anchors, (name, line.group(0))


@pytest.mark.host_only
@pytest.mark.parametrize("cols", [False, True])
def test_a_tile_past_the_devices_shared_memory_is_not_planned(cols):
    """A cooperative-matrix tile whose builds declare more shared memory than the device has (128x64x256_4x1, a
    research tile of the table: 58 KiB with B row-major, 51 KiB staged as it lies, against the H100's 48) is never
    dispatched: forced by the tuning, kernel='auto' passes on to the portable kernel; forced as config= with
    kernel='coopmat', a DeviceLimitError names the tile, its bytes and the device's."""
    big = "128x64x256_4x1"
    kname = "qlmm_coopmat_bc" if cols else "qlmm_coopmat"
    need = qmod.coopmat.shared_bytes(big, kname + "_sk")
    assert need > COOPMAT_H100.shared_memory_bytes
    g = last_gemm(300, 4096, 4096, 1, cols, False, TUNING.replace(COOPMAT_CONFIG=big))
    assert g.kernel == "qlmm", g.kernel
    roomy = COOPMAT_H100.replace(shared_memory_bytes=need)
    b = TensorDesc(I8, (1, 1, 4096, 4096), (0, 0, 1, 4096)) if cols else TensorDesc(I8, (1, 1, 4096, 4096))
    one = TensorDesc(np.float32, (1, 1, 1, 1))
    d = vkops.QuantizedLinearMatMulDesc(TensorDesc(I8, (1, 1, 300, 4096)), one, None, b, one, None, one, None,
                                        TensorDesc(I8, (1, 1, 300, 4096))).validate()
    assert gemms(qmod.plan(d, roomy, kernel="coopmat", config=big))[-1].spec[1:3] == (128, 64)
    with pytest.raises(vkops.DeviceLimitError) as e:
        qmod.plan(d, COOPMAT_H100, kernel="coopmat", config=big)
    assert str(e.value) == (f"kernel='coopmat' cannot run this product: tile {big} ({kname}) needs {need} bytes of shared "
                            f"memory; {COOPMAT_H100.name} has {COOPMAT_H100.shared_memory_bytes}"), e.value
