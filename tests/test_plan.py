"""Plans as data: pure planning, the JSON round trip, and the runtime running exactly a plan."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.limits import Limits
from vkops.ops import qlmm, slice1, top_k1
from vkops.plan import Plan, barriers
from vkops.runtime import Batch
from vkops.runtime.execute import run_plan as run_json_plan
from vkops.tensor import TensorDesc
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm.tuning import DEFAULT as TUNING

ROOT = Path(__file__).resolve().parent.parent
# A device on paper (lavapipe's figures): planning needs no device.
PAPER = Limits(name="paper", device_type="cpu", subgroup_size=8, max_workgroup_invocations=1024,
               max_workgroup_size=(1024, 1024, 1024), shared_memory_bytes=32768)


def topk_desc(shape, k, dtype="float32", axis=-1, direction="decreasing"):
    x = TensorDesc(dtype, shape)
    axis = axis % len(shape)
    o = tuple(k if i == axis else s for i, s in enumerate(shape))
    return top_k1.TopK1Desc(x, TensorDesc(dtype, o), TensorDesc("uint32", o), axis, k,
                            top_k1.AxisDirection.of(direction)).validate()


def slice_desc(shape, offs, sizes, strides, dtype="float32"):
    out = [1 + (sz - 1) // abs(st) for sz, st in zip(sizes, strides)]
    return slice1.Slice1Desc(TensorDesc(dtype, shape), TensorDesc(dtype, out), offs, sizes, strides).validate()


def qlmm_desc(M, K, N, zp=True):
    one, row, col = (1, 1, 1, 1), (1, 1, M, 1), (1, 1, 1, N)
    return qlmm.QuantizedLinearMatMulDesc(
        TensorDesc("uint8", (1, 1, M, K)), TensorDesc("float32", row), TensorDesc("uint8", row) if zp else None,
        TensorDesc("int8", (1, 1, K, N)), TensorDesc("float32", col), TensorDesc("int8", col) if zp else None,
        TensorDesc("float32", one), TensorDesc("uint8", one) if zp else None,
        TensorDesc("uint8", (1, 1, M, N))).validate()


PLANS = {
    "top_k seg": lambda: top_k1.plan(topk_desc((3, 100), 7), PAPER),
    "top_k chunks": lambda: top_k1.plan(topk_desc((2, 40000), 9), PAPER, force="filter", chunks=4),
    "top_k sort": lambda: top_k1.plan(topk_desc((2, 3000), 3000, "float16", direction="increasing"), PAPER),  # pow2(K) > B
    "slice": lambda: slice1.plan(slice_desc((5, 7, 9), (1, 0, 2), (4, 7, 6), (2, -3, 1)), PAPER),
    "qlmm zp": lambda: qlmm.plan(qlmm_desc(20, 48, 40), PAPER),
    "qlmm no zp": lambda: qlmm.plan(qlmm_desc(8, 32, 16, zp=False), PAPER),
}


@pytest.mark.parametrize("name", PLANS)
@pytest.mark.host_only
def test_json_round_trip(name):
    p = PLANS[name]()
    back = Plan.from_json(p.to_json())
    assert back == p
    assert Plan.from_json(p.to_json(indent=1)) == p
    assert back.to_dict() == json.loads(p.to_json())


@pytest.mark.host_only
def test_plans_describe_their_buffers_and_barriers():
    sort = PLANS["top_k sort"]()
    # sort_tile (INIT: specialization constant 2) loads the tiles, sort_global and sort_tile take the stages
    assert sort.note("path") == "sort" and [(d.kernel, d.spec[2:]) for d in sort.dispatches] == [
        ("top_k1_sort_tile_f16", (1,)), ("top_k1_sort_global", ()), ("top_k1_sort_tile_f16", (0,))]
    assert [b.role for b in sort.buffers] == ["input", "output", "output", "scratch"]
    assert not sort.buffers[3].zeroed  # the sort buffer (no counters: no chunk merges)
    assert sort.barrier_count == len(sort.dispatches) - 1  # each pass reads what the last one wrote
    chunks = PLANS["top_k chunks"]()
    assert chunks.note("chunks") == 3
    counters = [b for b in chunks.buffers if b.zeroed]
    assert len(counters) == 1 and counters[0].words >= 2  # one arrival counter per row
    noz = PLANS["qlmm no zp"]()
    consts = [b for b in noz.buffers if b.role == "constant"]
    assert [(b.name, b.data) for b in consts] == [("zero_uint8", (0,)), ("zero_int8", (0,))]  # a and output share
    assert [b.name for b in noz.inputs] == ["a", "a_scale", "b", "b_scale", "output_scale"]
    sl = PLANS["slice"]()
    assert sl.dispatches[0].push[:1] == (3,) and sl.barrier_count == 0
    assert sl.inputs[0].nbytes == 5 * 7 * 9 * 4 and sl.outputs[0].tensor.sizes == (2, 3, 6)


@pytest.mark.host_only
def test_barrier_rule():
    # read-after-write, write-after-read and write-after-write need one; reads alone do not
    assert barriers([((0, 1), (1,)), ((1, 2), (1,))]) == [(), (1,)]
    assert barriers([((0, 1), (1,)), ((0, 2), (1,))]) == [(), ()]
    assert barriers([((0, 1), (1,)), ((2, 0), (1,))]) == [(), (1, 0)]
    assert barriers([((0, 1), (1,)), ((3, 2), (1,)), ((2, 4), (1,))]) == [(), (), (1, 2)]


@pytest.mark.host_only
def test_bad_plans_are_rejected():
    d = json.loads(PLANS["top_k sort"]().to_json())

    def bad(change, match):
        x = json.loads(json.dumps(d))
        change(x)
        with pytest.raises(vkops.ValidationError, match=match):
            Plan.from_dict(x)

    bad(lambda x: x.update(format="vkops-plan/0"), "format")
    bad(lambda x: x["buffers"][0].update(role="temp"), "role")
    bad(lambda x: x["buffers"][0].update(bytes=6), "multiple of 4")
    bad(lambda x: x["dispatches"][1].update(bindings=[0, 1, 2, 9, 4]), "outside")
    bad(lambda x: x["dispatches"][1].update(barrier=[]), "barriers")
    bad(lambda x: x["dispatches"][0].update(groups=[0, 1, 1]), "groups")


@pytest.mark.host_only
def test_planning_needs_no_device():
    """Descriptors and plans are pure: they work with kp impossible to import."""
    code = ("import sys; sys.modules['kp'] = None\n"
            "from tests.test_plan import PLANS\n"
            "print(sum(len(f().dispatches) for f in PLANS.values()))\n"
            "assert 'kp' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 6


def run_plan(dev, plan, arrays):
    """A plan, after a JSON round trip, run by hand: the path a plan from elsewhere takes."""
    batch = Batch(dev)
    return run_json_plan(Plan.from_json(plan.to_json()), arrays, batch=batch), batch


def test_runtime_runs_exactly_the_plan(dev, rng):
    desc = topk_desc((2, 3000), 1500, "float16", direction="increasing")
    x = rng.integers(-8, 8, size=(2, 3000)).astype(np.float16)  # ties everywhere
    plan = top_k1.plan(desc, dev.limits)
    (v, i), batch = run_plan(dev, plan, [x])
    want_v, want_i = reference.top_k1(x, 1500, 1, "increasing")
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, want_i)
    assert batch.barriers == plan.barrier_count  # the batch put barriers where the plan has them
    gv, gi = vkops.top_k(x, 1500, 1, "increasing")  # the NumPy face: the same plan, bit for bit
    assert gv.tobytes() == v.tobytes() and gi.tobytes() == i.tobytes()


def test_plans_with_constants_and_counters_run(dev, rng):
    M, K, N = 20, 48, 40
    a = rng.integers(0, 256, (1, 1, M, K)).astype(np.uint8)
    b = rng.integers(-128, 128, (1, 1, K, N)).astype(np.int8)
    sa, sb, so = (np.full(s, v, np.float32) for s, v in (((1, 1, M, 1), 0.02), ((1, 1, 1, N), 0.03), ((1, 1, 1, 1), 1.5)))
    (got,), _ = run_plan(dev, qlmm.plan(qlmm_desc(M, K, N, zp=False), QC.device_limits(dev)), [a, sa, b, sb, so])
    assert got.tobytes() == vkops.quantized_linear_matmul(a, sa, None, b, sb, None, so, None).tobytes()
    want = reference.quantized_linear_matmul(a, sa, None, b, sb, None, so, None)
    assert np.abs(got.astype(int) - want).max() <= 1  # float32 scale product at .5 ties (ops/qlmm/desc.py)
    x = rng.integers(0, 5, (2, 40000)).astype(np.float32)
    for _ in range(2):  # the counters are left zero: a second run is right too
        (v, i), _ = run_plan(dev, top_k1.plan(topk_desc((2, 40000), 9), dev.limits, force="filter", chunks=4), [x])
        np.testing.assert_array_equal(i, reference.top_k1(x, 9, 1)[1])


@pytest.mark.subgroup_free
def test_calls_take_their_plan_once(dev, rng, monkeypatch):
    made = []
    real = slice1.plan
    monkeypatch.setattr(slice1.face, "plan", lambda *a, **k: made.append(1) or real(*a, **k))  # the face's planner
    x = rng.random((6, 11), dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(vkops.slice(x, [1, 2], [5, 9], [2, -3]),
                                      reference.slice1(x, [1, 2], [5, 9], [2, -3]))
    assert len(made) == 1


@pytest.mark.host_only
def test_cli_writes_a_plan(tmp_path):
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "slice", "--shape", "4,6", "--offsets", "0,1",
                        "--sizes", "4,5", "--strides", "1,-2", "--limits", "/dev/stdin", "--out", str(out)],
                       input=json.dumps(PAPER.to_dict()), cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    p = Plan.from_json(out.read_text())
    assert p == slice1.plan(slice_desc((4, 6), (0, 1), (4, 5), (1, -2)), PAPER)
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "top_k", "--shape", "4,10", "--k", "50",
                        "--limits", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "TopK1Desc.k must be <=" in r.stderr and "k=50" in r.stderr
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "qlmm", "--m", "4"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "--k" in r.stderr
    dot = json.dumps(PAPER.replace(integer_dot_product=True).to_dict())
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "qlmm", "--m", "8", "--k", "256", "--n", "64",
                        "--kernel", "dot", "--limits", "/dev/stdin"], input=dot, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert Plan.from_json(r.stdout).dispatches[-1].kernel.startswith("qlmm_dot")
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "qlmm", "--m", "8", "--k", "256", "--n", "64",
                        "--kernel", "dot", "--limits", "minimum"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "VK_KHR_shader_integer_dot_product" in r.stderr, r.stderr
    coop = json.dumps(PAPER.replace(subgroup_size=32, shared_memory_bytes=49152, cooperative_matrix=True).to_dict())
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "qlmm", "--m", "8", "--k", "4096", "--n", "4096",
                        "--kernel", "stream", "--limits", "/dev/stdin"], input=coop, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert Plan.from_json(r.stdout).dispatches[-1].kernel == "qlmm_stream_m16n32p2"
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "qlmm", "--m", "8", "--k", "256", "--n", "64",
                        "--kernel", "stream", "--limits", "minimum"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "VK_KHR_cooperative_matrix" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "vkops", "plan", "top_k", "--shape", "4,300000", "--k", "50",
                        "--limits", "minimum"], cwd=ROOT, capture_output=True, text=True)
    p = Plan.from_json(r.stdout)
    assert p.limits.profile == "minimum" and p.dispatches[0].spec[:2] == (128, 1024)


@pytest.mark.host_only
def test_qlmm_reads_b_directly_for_decoding_sized_m():
    """With the B-streaming kernel off: M <= 16, signed B, no zero-point sums, K in whole chunks: the
    DIRECT_B variant with more split-K; anything else keeps the staged kernel (planned for a device with
    verified cooperative matrices)."""
    tun = TUNING.replace(STREAM=False)
    lim = PAPER.replace(device_type="discrete", shared_memory_bytes=49152, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True)

    def desc(M, K, N, a="int8", b="int8", zp=False):
        one = (1, 1, 1, 1)
        return qlmm.QuantizedLinearMatMulDesc(
            TensorDesc(a, (1, 1, M, K)), TensorDesc("float32", one), TensorDesc(a, one) if zp else None,
            TensorDesc(b, (1, 1, K, N)), TensorDesc("float32", one), None, TensorDesc("float32", one), None,
            TensorDesc("int8", (1, 1, M, N))).validate()

    def kernel(d, **kw):
        p = qlmm.plan(d, lim, tuning=tun, **kw)
        return p.dispatches[0].kernel, p.note("config"), p.note("split_k")

    assert kernel(desc(16, 4096, 4096)) == ("qlmm_coopmat_direct_sk", TUNING.DIRECT_CONFIG, 4)
    assert kernel(desc(5, 8192, 8192)) == ("qlmm_coopmat_direct_sk", TUNING.DIRECT_CONFIG, 8)
    assert kernel(desc(17, 4096, 4096))[0] == "qlmm_coopmat_bt_sk"                   # two row tiles
    assert kernel(desc(16, 4096, 4096, b="uint8"))[0] == "qlmm_coopmat_zp_bt_sk"     # B needs the offset flip
    assert kernel(desc(16, 4096, 4096, a="uint8", zp=True))[0] == "qlmm_coopmat_zp_bt_sk"  # row/column sums
    assert kernel(desc(16, 4000, 4096))[0] == "qlmm_coopmat_bt_sk"                   # K not whole chunks
    assert kernel(desc(16, 4096, 4096), kernel="portable")[0] == "qlmm"
    assert kernel(desc(16, 4096, 4096), split_k=1)[0] == "qlmm_coopmat_direct"


@pytest.mark.host_only
def test_qlmm_reads_column_major_b_in_place():
    """b viewed column-major (k stride 1: PyTorch's N x K Linear weight, transposed) goes straight to the
    direct-B kernel (flag F_B_COLS, b_sk = the n stride, no copy) with the B-streaming kernel off, and to the
    staged tiles' BC builds (B's columns staged as they lie) for more rows, with zero points too; where the n
    stride is not of 16 elements, or with COOPMAT_BC off, it is packed by a SLICE1 first, as before."""
    tun = TUNING.replace(STREAM=False)
    lim = PAPER.replace(device_type="discrete", shared_memory_bytes=49152, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True)

    def desc(M, K, N, n_stride=None, batch=1, zp=False):
        one = (1, 1, 1, 1)
        b = TensorDesc("int8", (1, 1, K, N), (0, 0, 1, n_stride or K))
        a = "uint8" if zp else "int8"
        return qlmm.QuantizedLinearMatMulDesc(
            TensorDesc(a, (batch, 1, M, K)), TensorDesc("float32", one), TensorDesc(a, one) if zp else None, b,
            TensorDesc("float32", one), None, TensorDesc("float32", one), None, TensorDesc("int8", (batch, 1, M, N))).validate()

    p = qlmm.plan(desc(16, 4096, 4096), lim, tuning=tun)
    (d,) = p.dispatches
    assert d.kernel == "qlmm_coopmat_direct_sk" and p.note("b_layout") == "column-major"
    assert d.push[3] & qlmm.F_B_COLS and d.push[10] == 4096  # flags; b_sk = the n stride
    padded = qlmm.plan(desc(8, 512, 144, n_stride=528), lim, tuning=tun)  # rows of a wider matrix: n stride 528
    assert padded.dispatches[0].push[10] == 528 and len(padded.dispatches) == 1
    for other, last, config in (
            (desc(17, 4096, 4096), "qlmm_coopmat_bc_sk", tun.SMALL_CONFIG),  # two row tiles: staged kernel, B as it lies
            (desc(16, 4000, 4096), "qlmm_coopmat_bc_sk", tun.SMALL_CONFIG),  # K not whole chunks
            (desc(512, 4096, 4096), "qlmm_coopmat_bc", tun.BC_LARGE_CONFIG),  # the large tile, its BC subgroups
            (desc(256, 4096, 8192), "qlmm_coopmat_bc", tun.BC_MID_CONFIG),  # 65-256 rows: not the large tile split
            (desc(100, 4096, 96, zp=True), "qlmm_coopmat_zp_bc_sk", tun.BC_MID_CONFIG)):  # with zero-point sums
        p = qlmm.plan(other, lim, tuning=tun)
        assert [x.kernel for x in p.dispatches] == [last] and p.note("b_layout") == "column-major"
        assert p.note("config") == config, (p.note("config"), config)
        assert p.dispatches[0].push[3] & qlmm.F_B_COLS and p.dispatches[0].push[10] == other.k  # flags; b_sk = the n stride
        packed = qlmm.plan(other, lim, tuning=tun.replace(COOPMAT_BC=False))  # the knob off: packed, staged row-major
        ks = [x.kernel for x in packed.dispatches]
        assert ks[0] == "slice1_b8" and "_bc" not in ks[-1] and not packed.note("b_layout")
    # BC_MID_CONFIG splits toward MID_TARGET_GROUPS as the other middle tiles do: 128 rows of 1024 columns are 32
    # tiles, split 4 ways; of 4096 columns 128 tiles, whole; the knob set to MID_CONFIG plans as before
    mid = qlmm.plan(desc(128, 4096, 1024), lim, tuning=tun)
    assert (mid.dispatches[-1].kernel, mid.note("config"), mid.note("split_k")) == ("qlmm_coopmat_bc_sk", tun.BC_MID_CONFIG, 4)
    assert qlmm.plan(desc(128, 4096, 4096), lim, tuning=tun).note("split_k") == 1
    old = qlmm.plan(desc(128, 4096, 4096), lim, tuning=tun.replace(BC_MID_CONFIG=tun.MID_CONFIG))
    assert (old.note("config"), old.note("split_k")) == (tun.MID_CONFIG, 2)
    ks = [x.kernel for x in qlmm.plan(desc(8, 512, 144, n_stride=520), lim, tuning=tun).dispatches]  # n stride not of 16
    assert ks[0] == "slice1_b8" and ks[-1].startswith("qlmm_coopmat")
    assert [x.kernel for x in qlmm.plan(desc(16, 4096, 4096), lim, kernel="portable", tuning=tun).dispatches] == ["slice1_b8", "qlmm"]
    packs = tun.replace(COOPMAT_COLS=False)  # the knob: pack as before
    assert [x.kernel for x in qlmm.plan(desc(16, 4096, 4096), lim, tuning=packs).dispatches] == ["slice1_b8", "qlmm_coopmat_direct_sk"]
    # the self-check's direct cases (qlmm/selfcheck.py) plan what they check
    for sk in (1, 3):
        p = qlmm.plan(desc(13, 512, 144), lim, kernel="coopmat", config=TUNING.DIRECT_CONFIG, split_k=sk, tuning=tun)
        assert p.dispatches[0].kernel == "qlmm_coopmat_direct" + ("_sk" if sk > 1 else "") and len(p.dispatches) == 1


@pytest.mark.host_only
def test_qlmm_streams_b_for_decoding_sized_m():
    """On a device with verified cooperative matrices, auto takes the B-streaming kernel for up to
    STREAM_MAX_M rows: 32 columns a workgroup while the column tiles fit about a wave, else 64; split-K
    only where the tiles are too few; a row of ones (after at most 15 rows) where B's column sums are needed;
    column-major B read in place. Rows beyond it, or no verified cooperative matrices, plan as before."""
    lim = PAPER.replace(device_type="discrete", subgroup_size=32, shared_memory_bytes=49152, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True, integer_dot_product=True)

    def desc(M, K, N, a="int8", b="int8", zp=False, n_stride=None):
        one = (1, 1, 1, 1)
        bd = TensorDesc(b, (1, 1, K, N), (0, 0, 1, n_stride)) if n_stride else TensorDesc(b, (1, 1, K, N))
        return qlmm.QuantizedLinearMatMulDesc(
            TensorDesc(a, (1, 1, M, K)), TensorDesc("float32", one), TensorDesc(a, one) if zp else None,
            bd, TensorDesc("float32", one), TensorDesc(b, one) if zp else None, TensorDesc("float32", one), None,
            TensorDesc("int8", (1, 1, M, N))).validate()

    def plan(d, limits=lim, **kw):
        p = qlmm.plan(d, limits, **kw)
        last = p.dispatches[-1]
        return [x.kernel for x in p.dispatches], last.groups, p.note("split_k"), last.spec

    assert plan(desc(16, 4096, 4096)) == (["qlmm_stream_m16n32p2"], (128, 1, 1), 1, (256,))
    assert plan(desc(1, 4096, 4096))[0] == ["qlmm_gemv_sk"]  # one row, row-major B: the matrix-vector kernel
    assert plan(desc(2, 4096, 4096))[0] == ["qlmm_gemv_m2_sk"]  # two rows of 16 MiB (GEMV_MULTI_MIN_B): the same
    assert plan(desc(2, 1024, 4096))[0] == ["qlmm_stream_m16n32p2"]  # 4 MiB: not the dot kernel, no split-K
    assert plan(desc(5, 8192, 8192))[:3] == (["qlmm_stream_m16n64p4"], (128, 1, 1), 1)  # 256 tiles of 32
    assert plan(desc(16, 4096, 1024))[:3] == (["qlmm_stream_m16n32p2_sk"], (128, 1, 1), 4)  # 32 tiles
    assert plan(desc(16, 4096, 6144))[:3] == (["qlmm_stream_m16n32p2"], (192, 1, 1), 1)  # 64 wide would split
    assert plan(desc(15, 4096, 4096, "uint8", "uint8", zp=True))[0] == ["qlmm_stream_m16n32p2"]  # + row of ones
    assert plan(desc(16, 4096, 4096, "uint8", zp=True))[0] == ["qlmm_coopmat_zp_bt_sk"]  # no row left: the 32-row tile
    p = qlmm.plan(desc(15, 4096, 4096, zp=True), lim)
    assert p.dispatches[0].push[3] & (1024 | 2048) == 1024 | 2048  # both sums: zero points unknown
    cols = qlmm.plan(desc(16, 4096, 4096, n_stride=4096), lim)
    assert [x.kernel for x in cols.dispatches] == ["qlmm_stream_m16n32p2"] and cols.note("b_layout") == "column-major"
    assert plan(desc(17, 4096, 4096))[0] == ["qlmm_coopmat_bt_sk"]  # above STREAM_MAX_M: the staged kernel
    assert plan(desc(16, 4096, 4096), lim.replace(coopmat_verified=False))[0] != ["qlmm_stream_m16n32p2"]
    assert plan(desc(16, 4096, 4096), lim.replace(coopmat_split_verified=False))[2] == 1
    assert plan(desc(16, 4096, 1024), lim.replace(coopmat_split_verified=False))[:3] == (["qlmm_stream_m16n32p2"], (32, 1, 1), 1)
    # forced: kernel and width (the self-check plans this way), split-K
    assert plan(desc(13, 1040, 144), kernel="stream", config="nr64", split_k=3)[:3] == (["qlmm_stream_m16n64p4_sk"], (9, 1, 1), 3)
    with pytest.raises(vkops.DeviceLimitError, match="M = 17 is above 16 rows"):
        qlmm.plan(desc(17, 4096, 4096), lim, kernel="stream")
    with pytest.raises(vkops.DeviceLimitError, match="cooperative_matrix"):
        qlmm.plan(desc(16, 4096, 4096), PAPER, kernel="stream")
    with pytest.raises(vkops.ValidationError, match="config must be one of"):
        qlmm.plan(desc(16, 4096, 4096), lim, kernel="stream", config="nr48")
    # within the minimum's 16 KiB of shared memory the workgroup shrinks until the slabs fit
    small = lim.replace(shared_memory_bytes=16384)
    assert plan(desc(16, 4096, 4096), small)[3] == (64,)


@pytest.mark.host_only
def test_qlmm_tiles_by_rows():
    """Where 128 x 128 tiles leave too few workgroups, tiles of subgroups 16 columns wide by row count: up to
    32 rows SMALL_CONFIG, 33..64 LOW_CONFIG (split-K toward MID_TARGET_GROUPS, as MID_CONFIG's 256
    invocations; toward LOW_TARGET_GROUPS from LOW_TARGET_MIN_K deep), 65..MID_MAX_M 128 x 64 tiles of 8 subgroups (split-K toward MID_TARGET_GROUPS), or without
    zero-point sums 128 x 128 from LARGE_SPLIT_MIN_TILES of them, split toward SPLIT_TARGET_GROUPS with
    LARGE_SPLIT_MIN_CHUNKS a split; more rows 128 x 128 where that makes LARGE_MIN_TILES tiles (unsplit),
    else 64 x 64 x 64; large products 128 x 128. Each is in the self-check. (Row-major B as it lies: the
    transposed copy from BC_TRANSPOSE_MIN_M rows, off here, is test_qlmm_transposes_b_for_large_products.)"""
    lim = PAPER.replace(device_type="discrete", subgroup_size=32, shared_memory_bytes=49152, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True, integer_dot_product=True)

    def plan(M, K, N, sums=True, tuning=TUNING):
        one = TensorDesc("float32", (1, 1, 1, 1))
        desc = qlmm_desc(M, K, N, zp=False) if sums else qlmm.QuantizedLinearMatMulDesc(  # int8 x int8: no sums
            TensorDesc("int8", (1, 1, M, K)), one, None, TensorDesc("int8", (1, 1, K, N)), one, None, one, None,
            TensorDesc("int8", (1, 1, M, N))).validate()
        p = qlmm.plan(desc, lim, tuning=tuning.replace(BC_TRANSPOSE_MIN_M=0))
        d = p.dispatches[-1]
        return d.kernel, p.note("config"), p.note("split_k"), d.groups

    # (uint8 A: the _zp variants, which shift A into int8; B row-major staged transposed, _zp_bt)
    assert plan(128, 4096, 4096) == ("qlmm_coopmat_zp_bt_sk", TUNING.MID_CONFIG, 2, (128, 1, 1))  # 64 tiles, split 2
    assert plan(65, 8192, 8192) == ("qlmm_coopmat_zp_bt", TUNING.MID_WAVE_CONFIG, 1, (128, 1, 1))  # 128 tiles of 96 rows
    assert plan(65, 8192, 8192, tuning=TUNING.replace(WAVE_MAX_GROUPS=0)) == ("qlmm_coopmat_zp_bt", TUNING.MID_CONFIG, 1, (128, 1, 1))
    nomid = TUNING.replace(MID_FIT_MIN_GROUPS=1000)  # no MID_FIT_CONFIG (one wave of 64 x 128 tiles)
    assert plan(256, 4096, 4096, tuning=nomid) == ("qlmm_coopmat_zp_bt", TUNING.MID_CONFIG, 1, (64, 2, 1))
    assert plan(256, 4096, 4096) == ("qlmm_coopmat_zp_bt", TUNING.MID_FIT_CONFIG, 1, (32, 4, 1))  # 128 of 64 x 128
    # above MID_MAX_M: 128 x 128 tiles from LARGE_MIN_TILES of them, unsplit (96-row ones, WAVE_CONFIG, where those
    # put no more workgroups on an SM; in one wave 80 or 112 rows where those make one too, WAVE_FIT_CONFIGS:
    # test_qlmm_tuning); fewer: 64 x 64 x 64
    nofit = TUNING.replace(WAVE_FIT_CONFIGS=())
    assert plan(257, 4096, 4096) == ("qlmm_coopmat_zp_bt", "80x128x128_4x1", 1, (32, 4, 1))  # 32 x 4 of 80 rows: one wave
    assert plan(257, 4096, 4096, tuning=nofit) == ("qlmm_coopmat_zp_bt", TUNING.WAVE_CONFIG, 1, (32, 3, 1))  # 96 rows
    assert plan(257, 4096, 8192) == ("qlmm_coopmat_zp_bt", TUNING.WAVE_CONFIG, 1, (64, 3, 1))  # 192 of 96 rows, two an SM as 192 large
    assert plan(257, 4096, 11264)[1] == TUNING.WAVE_CONFIG  # 264 either way: two an SM
    assert plan(257, 4096, 11392) == ("qlmm_coopmat_zp_bt_sk", TUNING.LARGE_CONFIG, 8, (288, 1, 1))  # 267: three on some
    # SMs; a wave of 264 whole, the last 3 split 8 ways (TAIL_SPLIT)
    assert plan(257, 4096, 2048)[1:3] == (TUNING.FEW_TILES_CONFIG, 1) and TUNING.FEW_TILES_CONFIG == "64x64x64_2x2"
    assert plan(257, 4096, 3968)[1] == TUNING.FEW_TILES_CONFIG and plan(257, 4096, 3984, tuning=nofit)[1] == TUNING.WAVE_CONFIG  # 93 / 96
    assert plan(256, 4096, 8192)[1] == TUNING.MID_CONFIG  # up to MID_MAX_M rows the 128 x 64 tile, however many
    assert plan(4096, 4096, 4096)[1] == TUNING.LARGE_CONFIG
    assert plan(64, 4096, 4096) == ("qlmm_coopmat_zp_bt_sk", TUNING.LOW_CONFIG, 2, (128, 1, 1))  # 64 tiles, split 2
    assert plan(33, 8192, 8192) == ("qlmm_coopmat_zp_bt_sk", TUNING.LOW_CONFIG, 2, (256, 1, 1))  # 128 tiles, K 8192: split 2
    assert plan(33, 4096, 8192) == ("qlmm_coopmat_zp_bt", TUNING.LOW_CONFIG, 1, (128, 1, 1))  # shallower: unsplit
    # without zero-point sums, 65..MID_MAX_M rows: 128 x 128 tiles from LARGE_SPLIT_MIN_TILES of them, split
    # toward SPLIT_TARGET_GROUPS, LARGE_SPLIT_MIN_CHUNKS (32) K chunks of 64 a split at least; B staged transposed
    assert plan(128, 8192, 8192, sums=False) == ("qlmm_coopmat_bt_sk", TUNING.LARGE_CONFIG, 4, (256, 1, 1))  # 64 tiles
    assert plan(256, 4096, 4096, sums=False, tuning=nomid) == ("qlmm_coopmat_bt_sk", TUNING.LARGE_CONFIG, 2, (64, 2, 1))  # 64
    assert plan(256, 4096, 4096, sums=False)[1:3] == (TUNING.MID_FIT_CONFIG, 1)  # chunks; one wave of 64 x 128 tiles
    assert plan(256, 2048, 4096, sums=False, tuning=nomid)[1:3] == (TUNING.LARGE_CONFIG, 1)  # 32 chunks: one split
    assert plan(256, 4096, 8192, sums=False)[1:3] == (TUNING.LARGE_CONFIG, 1)  # LARGE_MIN_TILES (128): unsplit
    assert plan(128, 4096, 4096, sums=False)[:3] == ("qlmm_coopmat_bt_sk", TUNING.MID_CONFIG, 2)  # 32 tiles
    assert plan(64, 8192, 8192, sums=False)[1] == TUNING.LOW_CONFIG  # up to 64 rows, LOW_CONFIG
    assert plan(257, 4096, 2048, sums=False)[1] == TUNING.FEW_TILES_CONFIG  # above MID_MAX_M as before
    assert plan(32, 4096, 4096) == ("qlmm_coopmat_zp_bt_sk", TUNING.SMALL_CONFIG, 4, (256, 1, 1))
    for c, rows in ((TUNING.SMALL_CONFIG, 32), (TUNING.LOW_CONFIG, 64), (TUNING.MID_CONFIG, 128)):
        tm, tn, tk, sw, sh = QC.check_config(c)
        assert (tm, tn, tn // sw) == (rows, 64, 16) and c in QC.auto_configs(TUNING)


@pytest.mark.host_only
def test_qlmm_transposes_b_for_large_products():
    """Row-major B (DML's packed order) from BC_TRANSPOSE_MIN_M rows: copied column-major into a scratch
    (qlmm_transpose, 64 x 64-byte tiles) and multiplied by the BC builds (BC_LARGE_CONFIG's tile for the large
    tile), with and without zero-point sums, B's k row stride in its push words; not below that many rows, not for several
    matrices of B, not with the knob at 0 or COOPMAT_BC off, and not where workgroups of 256 are too many."""
    lim = PAPER.replace(device_type="discrete", subgroup_size=32, shared_memory_bytes=49152, cooperative_matrix=True,
                        coopmat_verified=True, coopmat_split_verified=True, integer_dot_product=True)
    m0 = TUNING.BC_TRANSPOSE_MIN_M
    assert m0 > TUNING.MID_MAX_M

    def desc(M, K, N, zp=False, b_batch=1, b_stride=None):
        one = TensorDesc("float32", (1, 1, 1, 1))
        a = "uint8" if zp else "int8"
        b = TensorDesc("int8", (b_batch, 1, K, N), (K * (b_stride or N), 0, b_stride or N, 1))
        return qlmm.QuantizedLinearMatMulDesc(
            TensorDesc(a, (b_batch, 1, M, K)), one, TensorDesc(a, (1, 1, 1, 1)) if zp else None, b, one, None, one,
            None, TensorDesc("int8", (b_batch, 1, M, N))).validate()

    for d, last, config in ((desc(m0, 4096, 4096), "qlmm_coopmat_bc", TUNING.BC_LARGE_CONFIG),
                            (desc(4096, 1024, 2048, zp=True), "qlmm_coopmat_zp_bc", TUNING.BC_LARGE_CONFIG),
                            (desc(m0, 512, 1024, b_stride=1040), "qlmm_coopmat_bc", TUNING.BC_LARGE_CONFIG)):
        p = qlmm.plan(d, lim)
        t, g = p.dispatches
        assert (t.kernel, g.kernel.removesuffix("_sk")) == ("qlmm_transpose", last)  # split where few tiles
        assert p.note("b_transposed") and not p.note("b_layout")
        tile = TUNING.BC_TRANSPOSE_TILE
        assert t.groups == (-(-d.n // tile), -(-d.k // tile), 1) and list(t.push) == [d.k, d.n, d.b.element_strides[2]]
        assert t.spec == (256, tile) and g.push[3] & qlmm.F_B_COLS and list(g.push[8:11]) == [0, 0, d.k]
        assert p.note("config") == config
    for d, tun, l2 in ((desc(m0 - 1, 4096, 4096), TUNING, lim), (desc(m0, 4096, 4096, b_batch=2), TUNING, lim),
                       (desc(4096, 4096, 4096), TUNING.replace(BC_TRANSPOSE_MIN_M=0), lim),
                       (desc(4096, 4096, 4096), TUNING.replace(COOPMAT_BC=False), lim),
                       (desc(4096, 4096, 4096), TUNING, lim.replace(max_workgroup_invocations=128))):
        ks = [x.kernel for x in qlmm.plan(d, l2, tuning=tun).dispatches]
        assert "qlmm_transpose" not in ks and not ks[-1].endswith(("_bc", "_bc_sk")), ks
