"""vkops/spv/manifest.json (written by `make spv` from the SPIR-V itself) agrees with the host: the
push-constant mirrors in vkops/ops, the buffers each operator binds, and the current SPIR-V."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vkops.ops.qlmm import QLMM_PUSH
from vkops.ops.slice1 import SLICE_PUSH
from vkops.ops import top_k1
from vkops.ops.top_k1 import paths as top_k1_paths

ROOT = Path(__file__).resolve().parent.parent
SPV = ROOT / "vkops" / "spv"
sys.path.insert(0, str(ROOT / "kernels"))
from build import tool  # noqa: E402
from reflect import reflect  # noqa: E402
from variants import VARIANTS  # noqa: E402

# CI legs (conftest.py): the manifest and SPIR-V reflection against the host mirrors; no plan, no kernel run.
pytestmark = pytest.mark.host_only

sys.path.pop(0)

# module-name prefix -> (host mirror of its push block, buffers the operator binds)
HOST = {"slice1_": (SLICE_PUSH, 2), "qlmm_coopmat": (QLMM_PUSH, 9), "qlmm": (QLMM_PUSH, 9)}
# TOP_K1: each algorithm (kernels/top_k1/<algorithm>.comp) its own push block and buffers (ops/top_k1/lowering.py lower)
TOPK_BUFFERS = {"seg": 3, "filter": 5, "radix": 5, "sort_tile": 4, "sort_global": 1, "rows": 3, "rsort": 3}


@pytest.fixture(scope="module")
def manifest():
    return json.loads((SPV / "manifest.json").read_text())


def push_differences(module: dict, mirror: np.dtype) -> list:
    """Where a module's reflected push block and a host structured dtype disagree (empty: they agree)."""
    pc = module["push_constants"]
    diffs = []
    if pc["size"] != mirror.itemsize:
        diffs.append(f"size {pc['size']} != {mirror.itemsize}")
    fields = [(n, mirror.fields[n][1], mirror.fields[n][0]) for n in mirror.names]
    if [m["name"] for m in pc["members"]] != [f[0] for f in fields]:
        diffs.append(f"members {[m['name'] for m in pc['members']]} != {[f[0] for f in fields]}")
    for m, (name, offset, dt) in zip(pc["members"], fields):
        count = int(np.prod(dt.shape)) if dt.shape else 1
        want = f"[{count}]" if dt.shape else ""
        if m["offset"] != offset or not m["type"].endswith(want) or dt.base.itemsize != 4:
            diffs.append(f"{name}: offset {m['offset']} type {m['type']} vs offset {offset} dtype {dt}")
    return diffs


def host_for(name):
    if name.startswith("top_k1_"):
        alg = top_k1.algorithm(name)
        return top_k1.PUSH[alg], TOPK_BUFFERS[alg]
    for prefix, v in HOST.items():
        if name.startswith(prefix):
            return v
    raise KeyError(name)


def test_every_variant_is_described(manifest):
    assert set(manifest["modules"]) == set(VARIANTS)
    for name, m in manifest["modules"].items():
        assert m["entry_point"] == "main" and m["file"] == f"{name}.spv"
        assert m["defines"] == VARIANTS[name][1]
        assert m["local_size"]["spec_ids"][0] == 0  # workgroup size is specialization constant 0
        assert m["spec_constants"][0]["name"] == "local_size_x"


def test_push_blocks_match_the_host_mirrors(manifest):
    for name, m in manifest["modules"].items():
        mirror, _ = host_for(name)
        assert push_differences(m, mirror) == [], name


def test_a_drifted_mirror_is_caught(manifest):
    m = manifest["modules"]["slice1_b32"]
    drifted = np.dtype([(n, "<u4") if n != "strides" else (n, "<u4", 7) for n in SLICE_PUSH.names])
    assert push_differences(m, drifted)  # a shorter array: size and a member differ
    swapped = np.dtype([(n, SLICE_PUSH.fields[n][0]) for n in ["n_words", "rank"] + list(SLICE_PUSH.names[2:])])
    assert push_differences(m, swapped)


def test_bindings_match_what_the_operators_bind(manifest):
    for name, m in manifest["modules"].items():
        _, n = host_for(name)
        if name.endswith("_sk"):  # split-K partial sums and arrival counters (qlmm_gemv: sums after the counters)
            n += 1 if name.startswith("qlmm_gemv") else 2
        assert [b["binding"] for b in m["bindings"]] == list(range(n)), name
        assert all(b["set"] == 0 and (b["read"] or b["written"]) for b in m["bindings"])
    top_k = manifest["modules"]["top_k1_filter_f32"]["bindings"]
    assert not top_k[0]["written"] and top_k[2]["written"]  # input read-only, indices written
    assert set(TOPK_BUFFERS) == set(top_k1.PUSH) == {top_k1.algorithm(n) for n in VARIANTS if n.startswith("top_k1_")}


def test_requirements_are_reflected(manifest):
    coop = manifest["modules"]["qlmm_coopmat"]
    assert "CooperativeMatrixKHR" in coop["capabilities"] and "cooperativeMatrix" in coop["device_features"]
    assert coop["device_extensions"] == ["VK_KHR_cooperative_matrix"]
    assert manifest["modules"]["slice1_b8"]["device_features"] == []  # portable: 32-bit storage only
    dot = manifest["modules"]["qlmm_dot"]
    assert {"DotProduct", "DotProductInput4x8BitPacked"} <= set(dot["capabilities"])
    assert dot["device_features"] == ["shaderIntegerDotProduct"]
    assert dot["device_extensions"] == ["VK_KHR_shader_integer_dot_product"]
    # TOP_K1's plain modules run on any Vulkan 1.1 device; the sg modules need exactly the subgroup
    # operations the plan checks for (top_k1_paths.SHUF_SUBGROUP_OPS: basic + shuffle)
    for name, m in manifest["modules"].items():
        if name.startswith("top_k1_") and top_k1.algorithm(name) not in ("rows", "rsort"):
            sg = "_sg_" in name
            assert set(m["capabilities"]) == ({"Shader", "GroupNonUniform", "GroupNonUniformShuffle"} if sg
                                              else {"Shader"}), name
    assert top_k1_paths.SHUF_SUBGROUP_OPS == ("basic", "shuffle")


def test_manifest_is_current(manifest):
    """It describes the SPIR-V files as they are now (make spv rewrites it)."""
    for name, m in manifest["modules"].items():
        now = reflect((SPV / m["file"]).read_bytes())
        assert {k: m[k] for k in now} == json.loads(json.dumps(now)), name


def specialized_text(name: str, spec: dict, tmp_path) -> str:
    """Module `name` with its specialization constants (id -> value) frozen and its dead code removed, as
    the driver compiles a pipeline: disassembled."""
    out = tmp_path / f"{name}.spv"
    values = " ".join(f"{i}:{str(v).lower()}" for i, v in spec.items())
    subprocess.run([tool("spirv-opt"), f"--set-spec-const-default-value={values}", "--freeze-spec-const", "-O",
                    str(SPV / f"{name}.spv"), "-o", str(out)], check=True)
    return subprocess.run([tool("spirv-dis"), str(out)], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("name", ["f32", "f16", "u8", "sg_f32"])
def test_threshold_filter_pipelines_carry_no_radix_code(name, tmp_path):
    """The threshold filter and argmax pipelines (filter.comp) hold none of radix select's code (its
    histogram), which lives in radix.comp: registers are allocated for the whole pipeline, and with the
    buffer's select_front behind a push word alone (session 14) its code cost the filter occupancy: H100 4096
    x 32768 fp32 K=8 0.237 -> 0.281 ms, K=1 0.197 -> 0.215, 64 x 2^20 K=8 0.112 -> 0.133."""
    radix = specialized_text(f"top_k1_radix_{name}", {0: 512, 1: 2048}, tmp_path)
    plain = specialized_text(f"top_k1_filter_{name}", {0: 512, 1: 2048}, tmp_path)
    assert "%hist = OpVariable" in radix  # what the check looks for is there to find
    assert "hist" not in plain


def test_the_device_reports_which_kernels_it_can_run(dev):
    assert dev.supports("slice1_b8") and dev.supports("top_k1_filter_f32") and dev.supports("qlmm")
    coop = dev.supports("qlmm_coopmat")
    assert coop == ({"cooperativeMatrix", "shaderInt8", "vulkanMemoryModel"} <= set(dev.features))
    assert dev.supports("qlmm_dot") == ("shaderIntegerDotProduct" in dev.features)
