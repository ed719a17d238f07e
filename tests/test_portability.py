"""Any Vulkan device: plans derived from limits, checked against the SPIR-V, under the smallest limits
Vulkan allows; profiles; and a DeviceLimitError naming the limit where no plan fits."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.limits import PROFILES, Limits
from vkops.ops import qlmm, slice1, top_k1
from vkops.ops.top_k1 import paths as top_k1_paths
from vkops.ops.qlmm import stream as qlmm_stream
from vkops.tensor import TensorDesc
from vkops.ops.qlmm import coopmat as QC

ROOT = Path(__file__).resolve().parent.parent
SPV = ROOT / "vkops" / "spv"
sys.path.insert(0, str(ROOT / "kernels"))
from reflect import shared_memory_bytes  # noqa: E402
from variants import VARIANTS  # noqa: E402

sys.path.pop(0)

PAPER = Limits(name="paper", device_type="discrete", subgroup_size=32, max_workgroup_invocations=1024,
               max_workgroup_size=(1024, 1024, 64), shared_memory_bytes=49152, max_storage_buffer_range=2**32 - 1)
# The same with subgroup ballot + arithmetic (NVIDIA's set): TOP_K1 ROWS (128 invocations) becomes possible.
PAPER_SG = PAPER.replace(name="paper+subgroups", subgroup_operations=0xFF, min_subgroup_size=32, max_subgroup_size=32)
LIMITS = {"minimum": PROFILES["minimum"], "v3dv": PROFILES["raspberry-pi-v3dv"], "paper": PAPER,
          "paper+subgroups": PAPER_SG,
          # integer dot products (the decoding-sized qlmm kernel) within the smallest limits, and on paper
          "minimum+dot": PROFILES["minimum"].replace(integer_dot_product=True),
          "paper+dot": PAPER.replace(integer_dot_product=True),
          # verified cooperative matrices: decoding-sized qlmm streams B (kernels/qlmm/qlmm_stream.comp)
          "paper+coopmat": PAPER.replace(name="paper+coopmat", cooperative_matrix=True, coopmat_verified=True,
                                         coopmat_split_verified=True)}


def topk(shape, k, dtype="float32", axis=-1):
    axis %= len(shape)
    o = tuple(k if i == axis else s for i, s in enumerate(shape))
    return top_k1.TopK1Desc(TensorDesc(dtype, shape), TensorDesc(dtype, o), TensorDesc("uint32", o), axis, k).validate()


def slc(shape, offs, sizes, strides, dtype="float32"):
    out = [1 + (s - 1) // abs(t) for s, t in zip(sizes, strides)]
    return slice1.Slice1Desc(TensorDesc(dtype, shape), TensorDesc(dtype, out), offs, sizes, strides).validate()


def qd(B, M, K, N, zp=True, shared_b=True):
    one, row, col = (1, 1, 1, 1), (1, 1, M, 1), (1, 1, 1, N)
    return qlmm.QuantizedLinearMatMulDesc(
        TensorDesc("uint8", (B, 1, M, K)), TensorDesc("float32", row), TensorDesc("uint8", row) if zp else None,
        TensorDesc("int8", (1 if shared_b else B, 1, K, N)), TensorDesc("float32", col), TensorDesc("int8", col) if zp else None,
        TensorDesc("float32", one), None, TensorDesc("uint8", (B, 1, M, N))).validate()


def plans(lim):
    """A spread of calls over every path of every operator."""
    yield top_k1.plan(topk((3, 100), 7), lim)                        # seg
    yield top_k1.plan(topk((2, 3000), 2, "float16"), lim)            # short rows: radix
    yield top_k1.plan(topk((4, 300000), 50), lim)                    # filter, chunks
    yield top_k1.plan(topk((2, 300000), 400, "uint8"), lim)          # radix chunks
    yield top_k1.plan(topk((2, 5000), 3000, "int16"), lim)           # bitonic sort
    yield top_k1.plan(topk((7, 5, 33), 4, axis=1), lim)              # strided axis
    yield top_k1.plan(topk((600, 1000), 50), lim)                    # many short rows: ROWS if subgroups
    yield slice1.plan(slc((6, 7, 9), (1, 0, 2), (4, 7, 6), (2, -3, 1)), lim)
    yield slice1.plan(slc((4, 100000), (0, 0), (4, 100000), (1, 1), "uint8"), lim)
    yield qlmm.plan(qd(2, 70, 96, 40), lim)
    yield qlmm.plan(qd(1, 3, 5000, 7, zp=False), lim)
    yield qlmm.plan(qd(1, 9, 4096, 260), lim)                        # decoding-sized: dot where offered
    yield qlmm.plan(qd(1, 33, 160, 4096, zp=False), lim)
    yield qlmm.plan(qd(1, 32, 256, 512, zp=False), lim)               # 32 rows: dot where its tile fits
    yield qlmm.plan(qd(1, 15, 4096, 4096), lim)                        # aligned: B streamed where verified


@pytest.mark.parametrize("name", LIMITS)
@pytest.mark.host_only
def test_plans_fit_their_limits(name):
    """Every dispatch's workgroup, shared memory (by the SPIR-V's own declarations), push constants,
    grid and buffers fit the limits the plan was made for."""
    lim = LIMITS[name]
    seen = set()
    for p in plans(lim):
        for b in p.buffers:
            assert b.nbytes <= lim.max_storage_buffer_range
        for d in p.dispatches:
            wg = d.spec[0]
            assert wg <= lim.max_workgroup_invocations and wg <= lim.max_workgroup_size[0], (p.op, d.kernel, wg)
            assert 4 * len(d.push) <= lim.max_push_constants_bytes
            assert all(g <= m for g, m in zip(d.groups, lim.max_workgroup_count))
            shared = shared_memory_bytes((SPV / f"{d.kernel}.spv").read_bytes(), dict(enumerate(d.spec)))
            assert shared <= lim.shared_memory_bytes, (p.op, d.kernel, d.spec, shared)
            seen.add((p.op, wg))
    if name == "minimum":
        assert seen == {("top_k1", 128), ("slice1", 128), ("qlmm", 128)}
    if name.endswith("+dot"):
        assert any(p.dispatches[-1].kernel.startswith("qlmm_dot") for p in plans(lim))
    if name == "paper+coopmat":
        assert any(p.dispatches[-1].kernel.startswith("qlmm_stream") for p in plans(lim))
    if name == "paper":  # where the device allows, the sizes the kernels were tuned with (1024: radix select's
        # 4096-entry sort, RADIX_SORT_WG)
        assert seen == {("top_k1", 512), ("top_k1", 1024), ("slice1", 256), ("qlmm", 256)}
    if name == "paper+subgroups":
        assert seen == {("top_k1", 512), ("top_k1", 1024), ("top_k1", 128), ("slice1", 256), ("qlmm", 256)}


@pytest.mark.host_only
def test_shared_memory_mirror_matches_the_spirv():
    # TOP_K1: every module (kernels/top_k1/<algorithm>.comp) declares what module_shared_bytes says, within
    # the budget its plans size B by (shared_bytes; rsort_shared_bytes for RSORT's counters)
    for name in (n for n in VARIANTS if n.startswith("top_k1_")):
        alg, spv = top_k1.algorithm(name), (SPV / f"{name}.spv").read_bytes()
        if alg == "rsort":
            for wg, B, sub in ((128, 1024, 32), (64, 512, 4), (128, 640, 8)):
                rs = top_k1_paths.rsort_shared_words(wg, sub)
                got = shared_memory_bytes(spv, {0: wg, 1: B, 2: rs})
                want = top_k1_paths.module_shared_bytes(alg, B, wg, rs)
                assert got == want <= top_k1_paths.rsort_shared_bytes(B, wg, rs) < 4 * (2 * B + rs), (name, wg, B)
            continue
        if alg in ("gradix_bracket", "gradix_bcollect", "gradix_resolve"):  # GRADIX_BRACKET: its own budget
            for wg, B in ((512, 5504), (512, 64), (256, 3456)):  # B: the candidates a row (gradix_bracket_cap)
                got = shared_memory_bytes(spv, {0: wg, 1: B})
                assert got == top_k1_paths.module_shared_bytes(alg, B, wg), (name, wg, B)
                if alg == "gradix_resolve":  # what gradix_bracket_cap fits the candidates to
                    assert got == 8 * B + top_k1_paths.GRADIX_RESOLVE_SHARED
            continue
        # the _d11 modules (GRADIX_DIGIT_BITS = 11): gradix_hist's 2048-bin histogram, planned where it fits (gradix_digit_bits)
        bits = 11 if "_d11_" in name else 8
        for wg, B in ((512, 2048), (128, 1024), (256, 512), (64, 256), (32, 2048), (16, 1024)):
            got = shared_memory_bytes(spv, {0: wg, 1: B})
            want = top_k1_paths.module_shared_bytes(alg, B, wg, digit_bits=bits, slim=name.startswith("top_k1_radix_s_"))
            assert got == want <= max(top_k1_paths.shared_bytes(B, wg), 16384 if bits == 11 else 0), (name, wg, B)
    q = (SPV / "qlmm.spv").read_bytes()
    assert shared_memory_bytes(q, {0: 256}) == 8192 and shared_memory_bytes(q, {0: 128}) == 6144
    # qlmm_stream: per subgroup its slabs, then the workgroup's tile and row sums (and the split flag)
    for mt in qlmm_stream.TILE_ROWS:
        for nr in qlmm_stream.TILES:
            for sk in ("", "_sk"):
                s = (SPV / f"{qlmm_stream.kernel(mt, nr)}{sk}.spv").read_bytes()
                for wg in (64, 128, 256):
                    assert shared_memory_bytes(s, {0: wg}) == qlmm_stream.shared_bytes(wg, mt, nr, bool(sk)), (mt, nr, sk, wg)
    # qlmm_dot: A's chunk or one partial tile, whichever is larger (a spec-constant select), + row sums
    for name, extra in (("qlmm_dot", 0), ("qlmm_dot_sk", 4)):
        d = (SPV / f"{name}.spv").read_bytes()
        for rows, chunk in ((16, 128), (16, 8), (1, 256), (1, 32), (32, 32)):
            want = 16 * max(chunk * rows, (rows * 128 + 128) // 4) + 4 * rows + extra
            assert shared_memory_bytes(d, {0: 256, 1: rows, 2: chunk, 3: 2}) == want, (name, rows, chunk)


@pytest.mark.parametrize("make,limits,match", [
    (lambda lim: top_k1.plan(topk((3, 100), 7), lim), {"shared_memory_bytes": 2048}, "maxComputeSharedMemorySize is 2048"),
    (lambda lim: top_k1.plan(topk((20, 600000), 300000), lim), "minimum", "maxStorageBufferRange of 134217728"),
    (lambda lim: top_k1.plan(topk((64, 600000), 5), lim), "minimum",
     "needs input buffer 'input' of 153600000 bytes; paper's maxStorageBufferRange is 134217728"),
    (lambda lim: slice1.plan(slc((4, 10**6), (0, 0), (4, 10**6), (1, 1)), lim), {"max_workgroup_count": [10, 10, 10]},
     "maxComputeWorkGroupCount 10 x 10"),
    (lambda lim: qlmm.plan(qd(70, 8, 16, 8, shared_b=False), lim), {"max_workgroup_count": [65535, 65535, 64]},
     "allows 64"),
    (lambda lim: top_k1.plan(topk((3, 100), 7), lim), {"max_push_constants_bytes": 64}, "maxPushConstantsSize is 64"),
    (lambda lim: qlmm.plan(qd(1, 8, 16, 8), lim), {"max_workgroup_invocations": 64}, "128-invocation workgroups"),
])
@pytest.mark.host_only
def test_where_no_plan_fits_the_limit_is_named(make, limits, match):
    lim = PAPER.within(limits)
    with pytest.raises(vkops.DeviceLimitError, match=match):
        make(lim)


@pytest.mark.host_only
def test_profiles_clamp_the_devices_limits():
    big = PAPER.replace(cooperative_matrix=True, coopmat_verified=True)
    m = big.within("minimum")
    assert (m.max_workgroup_invocations, m.max_workgroup_size, m.shared_memory_bytes, m.max_push_constants_bytes,
            m.max_storage_buffer_range, m.max_workgroup_count) == (128, (128, 128, 64), 16384, 128, 2**27, (65535,) * 3)
    assert m.profile == "minimum" and not m.cooperative_matrix and not m.coopmat_verified
    assert m.subgroup_size == 32 and m.name == "paper"  # facts of the device stay its own
    v = big.within("Raspberry-Pi-V3DV")
    assert v.max_workgroup_invocations == 256 and v.shared_memory_bytes == 16384
    c = big.within({"shared_memory_bytes": 20000})
    assert c.shared_memory_bytes == 20000 and c.max_workgroup_invocations == 1024 and c.cooperative_matrix
    assert Limits.from_dict(m.to_dict()) == m
    with pytest.raises(vkops.ValidationError, match="minimum"):
        big.within("tiny")
    with pytest.raises(vkops.ValidationError, match="unknown field"):
        big.within({"shared_memory": 1})


@pytest.fixture
def restore(dev):
    yield dev
    dev._set_limits(os.environ.get("VKOPS_DEVICE_LIMITS") or "device")


def test_device_plans_within_a_profile(restore, rng):
    dev = restore
    own = Limits.of_info(dev.info)
    d = vkops.Device(dev.index, limits="minimum")
    assert d is dev and dev.limits.profile == "minimum"
    assert (dev.max_workgroup_invocations, dev.shared_memory_bytes) == (128, min(16384, own.shared_memory_bytes))
    x = rng.integers(0, 9, (3, 5000)).astype(np.float32)  # ties
    v, i = vkops.top_k(x, 40)
    np.testing.assert_array_equal(i, reference.top_k1(x, 40, 1)[1])
    a = rng.integers(0, 256, (33, 40)).astype(np.uint8)
    b = rng.integers(-128, 128, (40, 20)).astype(np.int8)
    got = vkops.quantized_linear_matmul(a, 0.02, 7, b, 0.03, None, 0.5, np.uint8(9))
    assert np.abs(got.astype(int) - reference.quantized_linear_matmul(a, 0.02, 7, b, 0.03, None, 0.5, np.uint8(9))).max() <= 1
    p = qlmm.plan(qd(1, 33, 40, 20), QC.device_limits(dev))
    assert p.dispatches[0].spec == (128,) and p.note("kernel") == "portable"
    vkops.Device(dev.index, limits="device")
    assert dev.limits == own
    with pytest.raises(vkops.ValidationError, match="raspberry-pi-v3dv"):
        vkops.Device(dev.index, limits="phone")


@pytest.mark.host_only
def test_environment_sets_the_profile():
    code = "import vkops; d = vkops.Device(); print(d.limits.profile, d.max_workgroup_invocations)"
    env = dict(os.environ, VKOPS_DEVICE_LIMITS="minimum")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["minimum", "128"]
