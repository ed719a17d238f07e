"""vkops/spv/manifest.json (written by `make spv` from the SPIR-V itself) agrees with the host: the
push-constant mirrors in vkops/ops, the buffers each operator binds, and the current SPIR-V; its
shared-memory formulas with modules specialized by spirv-opt, its features with the Vulkan registry
(vk.xml), its subgroup facts with the planners."""
import hashlib
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from vkops.ops.qlmm import QLMM_PUSH
from vkops.ops.qlmm.lowering import TRANSPOSE_PUSH
from vkops.ops.slice1 import SLICE_PUSH
from vkops.ops import top_k1
from vkops.ops.top_k1 import paths as top_k1_paths
from vkops.ops.qlmm import coopmat as qlmm_coopmat
from vkops.ops.qlmm import gemv as QG
from vkops.limits import SUBGROUP_OPS

ROOT = Path(__file__).resolve().parent.parent
SPV = ROOT / "vkops" / "spv"
sys.path.insert(0, str(ROOT / "kernels"))
from build import tool  # noqa: E402
from reflect import instructions, reflect  # noqa: E402
from reflect_requirements import shared_bytes  # noqa: E402
from variants import RESEARCH_PREFIX, SUBGROUP_SIZE, VARIANTS  # noqa: E402

# CI legs (conftest.py): the manifest and SPIR-V reflection against the host mirrors; no plan, no kernel run.
pytestmark = pytest.mark.host_only

sys.path.pop(0)

# module-name prefix -> (host mirror of its push block, buffers the operator binds)
HOST = {"slice1_": (SLICE_PUSH, 2), "qlmm_coopmat": (QLMM_PUSH, 9), "qlmm_transpose": (TRANSPOSE_PUSH, 2),
        "qlmm": (QLMM_PUSH, 9)}
# Research modules (planned by no operator): the push block and buffers of the bench/research script that runs each
RESEARCH = {"research_coopmat_peak": (np.dtype([("iters", "<u4")]), 2),  # bench/research/coopmat_peak.py
            "research_read_floor": (np.dtype([("n", "<u4")]), 2),  # bench/research/read_floor.py
            "research_read_strips": (np.dtype([("rows", "<u4"), ("row16", "<u4"), ("splits", "<u4")]), 2),  # read_floor.py --strips
            **{f"research_gradix_probe{i}": (top_k1.PUSH["gradix_hist"], 3) for i in (1, 2, 3)},  # gradix_probe.py
            **{f"research_gcollect_probe{i}_{t}": (top_k1.PUSH["gradix_collect"], 3)  # gradix_collect_probe.py
               for i in range(1, 6) for t in ("f32", "f16")}}
# TOP_K1: each algorithm (kernels/top_k1/<algorithm>.comp) its own push block and buffers (ops/top_k1/lowering.py lower)
TOPK_BUFFERS = {"seg": 3, "filter": 5, "radix": 5, "sort_tile": 4, "sort_global": 1, "rows": 3, "rsort": 3,
                "gradix_hist": 3, "gradix_collect": 3, "gradix_sort": 5, "gradix_fscan": 3, "gradix_fhist": 3,
                "gradix_fcollect": 3, "gradix_rank": 5, "gradix_psort": 2, "gradix_pmerge": 4, "gradix_bracket": 2,
                "gradix_bcollect": 3, "gradix_resolve": 3}


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
    if name.startswith(RESEARCH_PREFIX):
        return RESEARCH[name]
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
        if name.startswith("top_k1_") and top_k1.algorithm(name) in ("gradix_bracket", "gradix_resolve"):
            assert set(m["capabilities"]) == {"Shader", "GroupNonUniform", "GroupNonUniformArithmetic"}, name
        elif name.startswith("top_k1_") and top_k1.algorithm(name) not in ("rows", "rsort"):
            sg = "_sg_" in name
            assert set(m["capabilities"]) == ({"Shader", "GroupNonUniform", "GroupNonUniformShuffle"} if sg
                                              else {"Shader"}), name
    assert top_k1_paths.SHUF_SUBGROUP_OPS == ("basic", "shuffle")


def test_manifest_is_current(manifest):
    """It describes the SPIR-V files as they are now (make spv rewrites it)."""
    for name, m in manifest["modules"].items():
        now = reflect((SPV / m["file"]).read_bytes(), SUBGROUP_SIZE.get(m["source"]))
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


# -- shared memory: the formula against modules specialized by spirv-opt ------------------------------ #
def spec_sets(module: dict) -> list:
    """Specialization values to check a module at: its defaults, every value doubled (bools flipped), and
    tripled (not a power of two: divisions round)."""
    out = [{}]
    for factor in (2, 3):
        out.append({c["id"]: (not c["default"]) if c["type"] == "bool" else c["default"] * factor
                    for c in module["spec_constants"]})
    return out


def frozen_shared_bytes(name: str, spec: dict, tmp_path) -> int:
    """Workgroup-variable bytes of module `name` specialized by spirv-opt (spec constants set and frozen,
    their expressions folded), read from the now-constant array lengths: independent of the formula."""
    out = tmp_path / f"{name}-{'-'.join(f'{i}_{v}' for i, v in sorted(spec.items()))}.spv"
    cmd = [tool("spirv-opt"), "--freeze-spec-const", "--fold-spec-const-op-composite", str(SPV / f"{name}.spv"),
           "-o", str(out)]
    if spec:
        cmd.insert(1, "--set-spec-const-default-value=" + " ".join(f"{i}:{str(v).lower()}" for i, v in spec.items()))
    subprocess.run(cmd, check=True, capture_output=True)
    types, consts, total = {}, {}, 0
    for op, a in instructions(out.read_bytes()):
        if op in (20, 21, 22):  # OpTypeBool / Int / Float
            types[a[0]] = 4 if op == 20 else a[1] // 8
        elif op == 23:  # OpTypeVector
            types[a[0]] = a[2] * types[a[1]]
        elif op == 28:  # OpTypeArray: its length must now be a plain OpConstant
            assert a[2] in consts, f"{name}: array length %{a[2]} not frozen"
            types[a[0]] = None if types.get(a[1]) is None else consts[a[2]] * types[a[1]]
        elif op == 30:  # OpTypeStruct (None: holds a runtime array, a buffer block's)
            sizes = [types.get(m) for m in a[1:]]
            types[a[0]] = None if None in sizes else sum(sizes)
        elif op == 32:  # OpTypePointer
            types[a[0]] = (a[1], a[2])
        elif op == 43:  # OpConstant
            consts[a[1]] = a[2]
        elif op == 59 and a[2] == 4:  # OpVariable, Workgroup
            total += types[types[a[0]][1]]
    return total


def shared_differences(name: str, module: dict, tmp_path) -> list:
    """Where the manifest's shared_memory formula and the specialized module disagree (empty: agree)."""
    defaults = {c["id"]: int(c["default"]) for c in module["spec_constants"]}
    diffs = []
    for spec in spec_sets(module):
        want = frozen_shared_bytes(name, spec, tmp_path)
        got = shared_bytes(module["shared_memory"], {i: int(v) for i, v in spec.items()}, defaults)
        if got != want:
            diffs.append(f"{name} at {spec}: formula {got} bytes, specialized module {want}")
    return diffs


def test_shared_memory_formulas_match_specialized_modules(manifest, tmp_path):
    mods = manifest["modules"]
    with ThreadPoolExecutor(8) as pool:
        diffs = sum(pool.map(lambda n: shared_differences(n, mods[n], tmp_path), mods), [])
    assert diffs == []
    ops = json.dumps([m["shared_memory"] for m in mods.values()])
    assert all(f'"{op}"' in ops for op in ("IMul", "UDiv", "IAdd", "Select", "UGreaterThan"))  # exercised
    assert mods["top_k1_rsort_f32"]["shared_memory"]["terms"] == [  # what ops/top_k1/paths.py plans with
        {"name": "rs_sh", "bytes": 4, "length": {"spec": 2}}, {"name": "s_flag", "bytes": 4, "length": 1},
        {"name": "skey", "bytes": 4, "length": {"spec": 1}}]


def test_gemv_shared_bytes_mirror_the_modules(manifest):
    """ops/qlmm/gemv.py's shared_bytes, what its why_not holds against the device, is what each qlmm_gemv build
    declares at the workgroup it runs (the _bc builds' padded A included)."""
    for mr in QG.ROWS:
        for bc in (False, True):
            for sk in (False, True):
                m = manifest["modules"][QG.kernel(mr, bc) + ("_sk" if sk else "")]
                defaults = {c["id"]: int(c["default"]) for c in m["spec_constants"]}
                assert shared_bytes(m["shared_memory"], {0: QG.WG}, defaults) == QG.shared_bytes(mr, sk, bc), (mr, bc, sk)


def test_coopmat_shared_bytes_mirror_the_modules(manifest):
    """ops/qlmm/coopmat.py's shared_bytes, what the rule holds a cooperative-matrix tile to against the device, is
    what every qlmm_coopmat build declares at every tile of COOPMAT_CONFIGS; and every tile the rule picks under the
    default tuning fits the 48 KiB coopmat_supported asks for, in every build but the two-buffer research ones."""
    cm = qlmm_coopmat
    builds = [k for k in manifest["modules"] if k.startswith("qlmm_coopmat")]
    assert len(builds) == 20, builds  # plain, zp, bt, zp_bt, bc, zp_bc, db, zp_db, bt_db, direct, each with _sk
    for k in builds:
        m = manifest["modules"][k]
        defaults = {c["id"]: int(c["default"]) for c in m["spec_constants"]}
        for name, (tm, tn, tk, sw, sh) in cm.COOPMAT_CONFIGS.items():
            spec = {0: cm.LANES * sw * sh, 1: tm, 2: tn, 3: tk, 4: sw, 5: sh}
            assert shared_bytes(m["shared_memory"], spec, defaults) == cm.shared_bytes(name, k), (k, name)
    for name in cm.auto_configs():
        assert max(cm.shared_bytes(name, k) for k in builds if "_db" not in k) <= cm.COOPMAT_MIN_SHARED, name


def test_a_wrong_shared_memory_term_is_caught(manifest, tmp_path):
    m = json.loads(json.dumps(manifest["modules"]["qlmm_coopmat"]))
    ash = m["shared_memory"]["terms"][0]
    assert ash["name"] == "Ash" and ash["length"]["op"] == "UDiv"
    ash["length"]["args"][1] = 32  # TILE_M * (TILE_K + 16) / 32: half the rows
    assert shared_differences("qlmm_coopmat", m, tmp_path)
    m = json.loads(json.dumps(manifest["modules"]["top_k1_rsort_f32"]))
    m["shared_memory"]["terms"][0]["length"] = {"spec": 1}  # rs_sh sized by B instead of RS_SH
    assert shared_differences("top_k1_rsort_f32", m, tmp_path)


def test_an_unsupported_spec_operation_fails_loudly():
    from reflect_requirements import UnsupportedSpecOp, evaluate  # noqa: PLC0415
    with pytest.raises(UnsupportedSpecOp):
        evaluate({"op": "SDiv", "args": [4, 2]}, {}, {})


# -- features: against the Vulkan registry ---------------------------------------------------------- #
VK_XML = Path("/usr/share/vulkan/registry/vk.xml")


@pytest.fixture(scope="module")
def registry():
    if not VK_XML.exists():
        pytest.skip("no Vulkan registry (vk.xml, Debian's libvulkan-dev)")
    return ET.parse(VK_XML).getroot()


def feature_differences(cap: str, f: dict, reg) -> list:
    """Where a manifest feature entry for SPIR-V capability `cap` and the Vulkan registry disagree."""
    structs = {t.get("name"): t for t in reg.iter("type") if t.get("category") == "struct"}
    exts = {e.get("name"): e for e in reg.iter("extension")}
    diffs = []
    if f["struct"] not in structs:
        return [f"{cap}: no struct {f['struct']}"]
    members = lambda s: {m.findtext("name") for m in structs[s].iter("member")}  # noqa: E731
    if f["member"] not in members(f["struct"]):
        diffs.append(f"{cap}: {f['struct']} has no member {f['member']}")
    enables = [e for c in reg.iter("spirvcapability") if c.get("name") in (cap, cap + "KHR") for e in c.iter("enable")]
    if f["member"] not in {e.get("feature") for e in enables}:
        diffs.append(f"{cap}: the registry enables it with {[e.get('feature') for e in enables]}, not {f['member']}")
    if f["core"] == "1.0":
        if f["struct"] != "VkPhysicalDeviceFeatures" or f["extension"] is not None:
            diffs.append(f"{cap}: a Vulkan 1.0 feature lives in VkPhysicalDeviceFeatures, needs no extension")
        return diffs
    core_struct = None if f["core"] is None else f"VkPhysicalDeviceVulkan{f['core'].replace('.', '')}Features"
    if core_struct and f["member"] not in members(core_struct):
        diffs.append(f"{cap}: {f['member']} is not a Vulkan {f['core']} feature")
    # the extension that brings the struct (as itself or its KHR/EXT alias), and the version it was promoted to
    owners = [n for n, e in exts.items() for t in e.iter("type") if t.get("name") in
              (f["struct"], f["struct"] + "KHR", f["struct"] + "EXT", f["struct"].removesuffix("KHR"))]
    if len(owners) != 1:
        return diffs + [f"{cap}: {f['struct']} belongs to extensions {owners}"]
    promoted = exts[owners[0]].get("promotedto")
    if promoted != (None if f["core"] is None else "VK_VERSION_" + f["core"].replace(".", "_")):
        diffs.append(f"{cap}: {owners[0]} is promoted to {promoted}, not core {f['core']}")
    if f["extension"] != (None if f["core"] == "1.1" else owners[0]):  # vkops targets Vulkan 1.1
        diffs.append(f"{cap}: extension {f['extension']}, the registry says {owners[0]} (core {promoted})")
    return diffs


def test_features_match_the_vulkan_registry(manifest, registry):
    from reflect_requirements import FEATURES  # noqa: PLC0415
    in_registry = {t.get("name") for t in registry.iter("type")}
    checked = 0
    for cap, (struct, member, ext, core) in FEATURES.items():
        if struct not in in_registry and struct == "VkPhysicalDeviceCooperativeMatrixFeaturesKHR":
            continue  # VK_KHR_cooperative_matrix (1.3.255) is newer than Debian 12's registry (1.3.239)
        assert feature_differences(cap, dict(struct=struct, member=member, extension=ext, core=core), registry) == []
        checked += 1
    assert checked >= len(FEATURES) - 1
    for name, m in manifest["modules"].items():  # each module: one entry per feature its capabilities need
        want = [dict(zip(("struct", "member", "extension", "core"), FEATURES[c])) for c in m["capabilities"]
                if c in FEATURES]
        assert m["features"] == [f for i, f in enumerate(want) if f not in want[:i]], name
        assert sorted({f["member"] for f in m["features"]}) == m["device_features"], name
    coop = manifest["modules"]["qlmm_coopmat"]["features"]
    assert {"struct": "VkPhysicalDeviceCooperativeMatrixFeaturesKHR", "member": "cooperativeMatrix",
            "extension": "VK_KHR_cooperative_matrix", "core": None} in coop


def test_a_wrong_feature_is_caught(registry):
    int8 = {"struct": "VkPhysicalDeviceShaderFloat16Int8Features", "member": "shaderInt8",
            "extension": "VK_KHR_shader_float16_int8", "core": "1.2"}
    assert feature_differences("Int8", int8, registry) == []
    for wrong in ({"struct": "VkPhysicalDevice8BitStorageFeatures"}, {"extension": None}, {"core": "1.1"},
                  {"member": "shaderInt16"}):
        assert feature_differences("Int8", {**int8, **wrong}, registry), wrong
    s16 = {"struct": "VkPhysicalDevice16BitStorageFeatures", "member": "storageBuffer16BitAccess",
           "extension": None, "core": "1.1"}
    assert feature_differences("StorageBuffer16BitAccess", s16, registry) == []
    assert feature_differences("StorageBuffer16BitAccess", {**s16, "extension": "VK_KHR_16bit_storage"}, registry)


# -- subgroups, cooperative matrices, hashes --------------------------------------------------------- #
def test_subgroup_requirements_match_the_planners(manifest):
    for name, m in manifest["modules"].items():
        sg = m["subgroup"]
        assert sg["operations_mask"] == sum(SUBGROUP_OPS[o] for o in sg["operations"]), name
        # the planner checks the device for (at least) what the module uses: rows.comp uses no shuffle,
        # ROWS_SUBGROUP_OPS (shared with rsort) asks for it anyway
        if name.startswith("top_k1_") and top_k1.algorithm(name) in ("rows", "rsort"):
            assert set(sg["operations"]) <= set(top_k1_paths.ROWS_SUBGROUP_OPS), name
            unused = {"shuffle"} if top_k1.algorithm(name) == "rows" else set()
            assert set(sg["operations"]) == set(top_k1_paths.ROWS_SUBGROUP_OPS) - unused, name
        elif name.startswith("top_k1_") and top_k1.algorithm(name) in ("gradix_bracket", "gradix_resolve"):
            assert set(sg["operations"]) == set(top_k1_paths.GRADIX_BRACKET_OPS), name
        elif "_sg_" in name:
            assert set(sg["operations"]) == set(top_k1_paths.SHUF_SUBGROUP_OPS), name
        elif not name.startswith(("qlmm_coopmat", "qlmm_stream", RESEARCH_PREFIX)):
            assert sg["operations"] == [], name  # planned on any Vulkan 1.1 device
        # 32 exactly for the cooperative-matrix modules, which the planner gates on a 32-lane device (research
        # modules: their script, through coopmat_supported; the line after holds for them too)
        if not name.startswith(RESEARCH_PREFIX):
            assert sg["size"] == (32 if name in qlmm_coopmat._COOPMAT_KERNELS else None), name
        assert (sg["size"] == 32) == ("CooperativeMatrixKHR" in m["capabilities"]), name
    dev = SimpleNamespace(cooperative_matrix=True, info=SimpleNamespace(cooperative_matrix_shapes=[
        qlmm_coopmat.COOPMAT_SHAPE]), subgroup_size=32, shared_memory_bytes=1 << 16, supports=lambda k: True)
    assert qlmm_coopmat.coopmat_supported(dev)
    dev.subgroup_size = 64
    assert not qlmm_coopmat.coopmat_supported(dev)


def test_cooperative_matrix_types(manifest):
    for name, m in manifest["modules"].items():
        assert bool(m["cooperative_matrix"]) == ("CooperativeMatrixKHR" in m["capabilities"]), name
    shapes = {(c["use"], c["rows"], c["columns"], c["component_type"], c["scope"])
              for c in manifest["modules"]["qlmm_stream_m16n64p4"]["cooperative_matrix"]}
    m_, n_, k_, a, b, c_, r = qlmm_coopmat.COOPMAT_SHAPE  # what the planner asks the device for: 16x16x32 s8
    assert (m_, n_, k_, a, b, r) == (16, 16, 32, "s8", "s8", "s32")
    assert shapes == {("MatrixA", 16, 32, "int8", "Subgroup"), ("MatrixB", 32, 16, "int8", "Subgroup"),
                      ("MatrixAccumulator", 16, 16, "int32", "Subgroup")}


def test_hashes(manifest):
    h = hashlib.sha256()
    for name in sorted(manifest["modules"]):
        data = (SPV / manifest["modules"][name]["file"]).read_bytes()
        assert manifest["modules"][name]["sha256"] == hashlib.sha256(data).hexdigest(), name
        h.update(data)
    assert manifest["sha256"] == h.hexdigest()
    from vkops.bench.info import spirv_set  # noqa: PLC0415
    assert spirv_set()["sha256"] == manifest["sha256"][:16]  # the digest `vkops info` shows


def test_plans_name_the_manifest_digest(tmp_path):
    # A plan names the SPIR-V it was made for: `python -m vkops plan` writes the manifest's top-level sha256
    # ("kernels"), and libvkops' vkops_operator_plan_json names the digest of the manifest it embeds
    # (libvkops/tests/capi_test.c checks that side).
    from vkops.limits import PROFILES
    lim = tmp_path / "limits.json"
    lim.write_text(json.dumps(PROFILES["minimum"].to_dict()))
    out = subprocess.run([sys.executable, "-m", "vkops", "plan", "top_k", "--shape", "4,100", "--dtype", "float32",
                          "--k", "5", "--limits", str(lim)], capture_output=True, text=True, check=True).stdout
    plan = json.loads(out)
    manifest = json.loads((Path(__file__).resolve().parents[1] / "vkops/spv/manifest.json").read_text())
    assert plan["kernels"] == manifest["sha256"] and len(plan["kernels"]) == 64
