"""vkops/spv/manifest.json (written by `make spv` from the SPIR-V itself) agrees with the host: the
push-constant mirrors in vkops/ops, the buffers each operator binds, and the current SPIR-V."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from vkops.ops.qlmm import QLMM_PUSH
from vkops.ops.slice1 import SLICE_PUSH
from vkops.ops.top_k1 import TOPK_PUSH
from vkops.ops import top_k1_paths

ROOT = Path(__file__).resolve().parent.parent
SPV = ROOT / "vkops" / "spv"
sys.path.insert(0, str(ROOT / "kernels"))
from reflect import reflect  # noqa: E402
from variants import VARIANTS  # noqa: E402

sys.path.pop(0)

# module-name prefix -> (host mirror of its push block, buffers the operator binds)
HOST = {"slice1_": (SLICE_PUSH, 2), "top_k1_rows_": (TOPK_PUSH, 3), "top_k1_": (TOPK_PUSH, 5), "qlmm_coopmat": (QLMM_PUSH, 9), "qlmm": (QLMM_PUSH, 9)}


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
        if name.endswith("_sk"):
            n += 2  # split-K partial sums and arrival counters
        assert [b["binding"] for b in m["bindings"]] == list(range(n)), name
        assert all(b["set"] == 0 and (b["read"] or b["written"]) for b in m["bindings"])
    top_k = manifest["modules"]["top_k1_f32"]["bindings"]
    assert not top_k[0]["written"] and top_k[2]["written"]  # input read-only, indices written


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
    caps = {n: set(manifest["modules"][n]["capabilities"]) for n in ("top_k1_f16", "top_k1_sg_f16")}
    assert caps["top_k1_f16"] == {"Shader"}
    assert caps["top_k1_sg_f16"] == {"Shader", "GroupNonUniform", "GroupNonUniformShuffle"}
    assert top_k1_paths.SHUF_SUBGROUP_OPS == ("basic", "shuffle")


def test_manifest_is_current(manifest):
    """It describes the SPIR-V files as they are now (make spv rewrites it)."""
    for name, m in manifest["modules"].items():
        now = reflect((SPV / m["file"]).read_bytes())
        assert {k: m[k] for k in now} == json.loads(json.dumps(now)), name


def test_the_device_reports_which_kernels_it_can_run(dev):
    assert dev.supports("slice1_b8") and dev.supports("top_k1_f32") and dev.supports("qlmm")
    coop = dev.supports("qlmm_coopmat")
    assert coop == ({"cooperativeMatrix", "shaderInt8", "vulkanMemoryModel"} <= set(dev.features))
    assert dev.supports("qlmm_dot") == ("shaderIntegerDotProduct" in dev.features)
