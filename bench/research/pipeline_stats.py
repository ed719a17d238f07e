"""Research (not a benchmark of record): what the driver says about compiled kernels' compute pipelines through
VK_KHR_pipeline_executable_properties: each executable's name and description and every statistic it gives
(on NVIDIA: registers, shared memory, spills, ...), and with --ir DIR its internal representations (assembly),
one file each. Pure ctypes against the Vulkan loader vkops.drivers finds (the one kp uses; its headless NVIDIA
fallback where no driver answers); the device gets the extensions and features vkops' patched kp enables (kp.patch), plus
pipelineExecutableInfo, so the code is the one vkops runs. Layout: bindings 0-15 storage buffers, 128 bytes of
push constants. --spec ID=VALUE,... sets uint32 specialization constants (local_size_x is constant_id 0);
--preset qlmm reports the cooperative-matrix and stream qlmm kernels with vkops' tile configs. A device without
the extension (Mesa 22.3's lavapipe) only compiles each pipeline: a check of the kernel, features and layout.

    bash bench/gpu.sh python3 bench/research/pipeline_stats.py --preset qlmm [--ir /tmp/ir] [--json]
    python bench/research/pipeline_stats.py vkops/spv/slice1_b32.spv --spec 0=256 --kernel top_k1_rows_f32.spv:0=256
"""
import argparse
import ctypes as C
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this tree's vkops (its drivers.py, the qlmm configs; an installed one's vkops.libs)
from vkops import drivers  # noqa: E402  (the loader and the headless fallback, as vkops finds them)
u32, u64, vp, i32, sz = C.c_uint32, C.c_uint64, C.c_void_p, C.c_int32, C.c_size_t
EXT_PEP = "VK_KHR_pipeline_executable_properties"
# vkops/runtime/device.py's EXTENSIONS (those the device offers are enabled) and the feature struct each adds:
# sType, fields, fields kp enables (the others stay off: robustness changes the code).
EXTS = {"VK_KHR_8bit_storage": (1000177000, "sb8 usb8 pc8", "sb8 usb8 pc8"),
        "VK_KHR_shader_float16_int8": (1000082000, "f16 i8", "f16 i8"),
        "VK_EXT_subgroup_size_control": (1000225002, "ssc full", "ssc full"),
        "VK_KHR_cooperative_matrix": (1000506000, "coopmat robust", "coopmat"),
        "VK_KHR_vulkan_memory_model": (1000211000, "mm dev chains", "mm dev"),
        "VK_EXT_memory_budget": None,
        "VK_KHR_shader_integer_dot_product": (1000280000, "idot", "idot"),
        EXT_PEP: (1000269000, "pei", "pei")}
STORAGE16 = (1000083000, "sb16 usb16 pc16 io16", "sb16 usb16 pc16")  # core 1.1, chained always (as kp does)
FEATURES = {39: "shaderFloat64", 40: "shaderInt64", 41: "shaderInt16"}  # of VkPhysicalDeviceFeatures' 55 VkBool32s


def struct(name, fields, head=True):
    """A ctypes Structure; head: led by sType and pNext."""
    return type(name, (C.Structure,), {"_fields_": [("sType", u32), ("pNext", vp)] * head + fields})


def feat_struct(fields):
    return struct("Feat", [(f, u32) for f in fields.split()])


ch256, fu = C.c_char * 256, [("flags", u32)]
Ext = struct("Ext", [("name", ch256), ("ver", u32)], False)
QueueFamily = struct("QueueFamily", [("flags", u32), ("count", u32), ("ts", u32), ("gran", u32 * 3)], False)
Features2 = struct("Features2", [("f", u32 * 55)])
AppInfo = struct("AppInfo", [("app", C.c_char_p), ("appv", u32), ("eng", C.c_char_p), ("engv", u32), ("api", u32)])
InstanceCI = struct("InstanceCI", fu + [("app", C.POINTER(AppInfo)), ("nl", u32), ("layers", vp), ("ne", u32),
                                        ("exts", vp)])
QueueCI = struct("QueueCI", fu + [("family", u32), ("count", u32), ("prio", C.POINTER(C.c_float))])
DeviceCI = struct("DeviceCI", fu + [("nq", u32), ("queues", C.POINTER(QueueCI)), ("nl", u32), ("layers", vp),
                                    ("ne", u32), ("exts", C.POINTER(C.c_char_p)), ("feat", vp)])
ModuleCI = struct("ModuleCI", fu + [("size", sz), ("code", vp)])
Binding = struct("Binding", [("binding", u32), ("type", u32), ("count", u32), ("stages", u32), ("samplers", vp)], False)
SetLayoutCI = struct("SetLayoutCI", fu + [("n", u32), ("bindings", vp)])
PushRange = struct("PushRange", [("stages", u32), ("offset", u32), ("size", u32)], False)
LayoutCI = struct("LayoutCI", fu + [("nsets", u32), ("sets", vp), ("npush", u32), ("push", vp)])
MapEntry = struct("MapEntry", [("id", u32), ("offset", u32), ("size", sz)], False)
SpecInfo = struct("SpecInfo", [("n", u32), ("entries", vp), ("size", sz), ("data", vp)], False)
StageCI = struct("StageCI", fu + [("stage", u32), ("module", u64), ("name", C.c_char_p), ("spec", C.POINTER(SpecInfo))])
ComputeCI = struct("ComputeCI", fu + [("stage", StageCI), ("layout", u64), ("base", u64), ("base_index", i32)])
ReqSubgroup = struct("ReqSubgroup", [("size", u32)])
PipelineInfo = struct("PipelineInfo", [("pipeline", u64)])
ExecInfo = struct("ExecInfo", [("pipeline", u64), ("index", u32)])
ExecProps = struct("ExecProps", [("stages", u32), ("name", ch256), ("desc", ch256), ("subgroup", u32)])
StatValue = type("StatValue", (C.Union,), {"_fields_": [("b32", u32), ("i64", C.c_int64), ("u64", u64),
                                                        ("f64", C.c_double)]})
Stat = struct("Stat", [("name", ch256), ("desc", ch256), ("format", u32), ("value", StatValue)])
IR = struct("IR", [("name", ch256), ("desc", ch256), ("text", u32), ("size", sz), ("data", vp)])
S_PIPELINE_INFO, S_EXEC_PROPS, S_EXEC_INFO, S_STAT, S_IR = range(1000269001, 1000269006)


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what} returned VkResult {r}")


def cstr(b):
    return b.decode(errors="replace")


class Vk:
    """An instance and a device on physical device `index` with vkops' features and pipelineExecutableInfo."""

    def __init__(self, index):
        self.lib, self.loader = drivers.loader(), drivers.loader_path()  # the loader kp uses
        self.inst, pds = self._instance()
        if not pds:
            self._instance_fallback()
            self.inst, pds = self._instance()
        if index >= len(pds):
            self.close()
            sys.exit(f"device {index}: the loader found {len(pds)} devices")
        pd = self.pd = pds[index]
        props = (C.c_uint8 * 2048)()  # VkPhysicalDeviceProperties: apiVersion, ..., deviceName at 20
        self.call("vkGetPhysicalDeviceProperties", pd, props)
        self.name = cstr(bytes(props[20:276]).split(b"\0")[0])
        self.api = C.cast(props, C.POINTER(u32))[0]
        self.shared_memory = C.cast(C.byref(props, 512), C.POINTER(u32))[0]  # limits.maxComputeSharedMemorySize
        n = u32()
        self.call("vkEnumerateDeviceExtensionProperties", pd, None, C.byref(n), None)
        exts = (Ext * n.value)()
        self.call("vkEnumerateDeviceExtensionProperties", pd, None, C.byref(n), exts)
        self.exts = {cstr(e.name) for e in exts}
        enable = [e for e in EXTS if e in self.exts]
        f2, chain = Features2(1000059000), []  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
        for st, fields, on in [STORAGE16] + [EXTS[e] for e in enable if EXTS[e]]:
            s = feat_struct(fields)(st, f2.pNext)
            f2.pNext = C.cast(C.pointer(s), vp)
            chain.append((s, fields.split(), on.split()))
        self.call("vkGetPhysicalDeviceFeatures2", pd, C.byref(f2))
        self.features = {FEATURES[i]: f2.f[i] for i in FEATURES}
        offered = list(f2.f)
        for i in range(55):
            f2.f[i] = offered[i] if i in FEATURES else 0
        for s, fields, on in chain:
            for f in fields:
                self.features[f] = getattr(s, f)
                setattr(s, f, getattr(s, f) if f in on else 0)
        self.pei = bool(self.features.get("pei"))  # else pipelines are only compiled (a check of the rest)
        nq = u32()
        self.call("vkGetPhysicalDeviceQueueFamilyProperties", pd, C.byref(nq), None)
        fams = (QueueFamily * nq.value)()
        self.call("vkGetPhysicalDeviceQueueFamilyProperties", pd, C.byref(nq), fams)
        fam = next(i for i, q in enumerate(fams) if q.flags & 2)  # VK_QUEUE_COMPUTE_BIT
        prio = C.c_float(1.0)
        q = QueueCI(2, None, 0, fam, 1, C.pointer(prio))
        names = (C.c_char_p * len(enable))(*[e.encode() for e in enable])
        ci = DeviceCI(3, C.cast(C.pointer(f2), vp), 0, 1, C.pointer(q), 0, None, len(enable), names, None)
        self.dev = vp()
        check(self.call("vkCreateDevice", pd, C.byref(ci), None, C.byref(self.dev)), "vkCreateDevice")
        self.enabled = enable
        gdpa = self.lib.vkGetDeviceProcAddr
        gdpa.restype, gdpa.argtypes = vp, [vp, C.c_char_p]
        proto = C.CFUNCTYPE(i32, vp, vp, vp, vp)
        self.khr = {k: proto(gdpa(self.dev, f"vkGetPipelineExecutable{k}KHR".encode()))
                    for k in ("Properties", "Statistics", "InternalRepresentations")} if self.pei else {}
        bindings = (Binding * 16)(*[Binding(b, 7, 1, 0x20, None) for b in range(16)])  # STORAGE_BUFFER, COMPUTE
        self.set_layout, self.layout = u64(), u64()
        sci = SetLayoutCI(32, None, 0, 16, C.cast(bindings, vp))
        check(self.call("vkCreateDescriptorSetLayout", self.dev, C.byref(sci), None, C.byref(self.set_layout)),
              "vkCreateDescriptorSetLayout")
        push = PushRange(0x20, 0, 128)
        lci = LayoutCI(30, None, 0, 1, C.cast(C.pointer(self.set_layout), vp), 1, C.cast(C.pointer(push), vp))
        check(self.call("vkCreatePipelineLayout", self.dev, C.byref(lci), None, C.byref(self.layout)),
              "vkCreatePipelineLayout")

    def call(self, name, *args):
        f = getattr(self.lib, name)
        f.restype = i32
        return f(*[a if not isinstance(a, int) else u64(a) for a in args])

    def _instance(self):
        app = AppInfo(0, None, b"pipeline_stats", 1, b"vkops", 1, (1 << 22) | (3 << 12))
        inst = vp()
        r = self.call("vkCreateInstance", C.byref(InstanceCI(1, None, 0, C.pointer(app), 0, None, 0, None)), None,
                      C.byref(inst))
        if r == -9:  # VK_ERROR_INCOMPATIBLE_DRIVER: no usable driver
            return None, []
        check(r, "vkCreateInstance")
        n = u32()
        self.call("vkEnumeratePhysicalDevices", inst, C.byref(n), None)
        pds = (vp * n.value)()
        self.call("vkEnumeratePhysicalDevices", inst, C.byref(n), pds)
        if not n.value:
            self.call("vkDestroyInstance", inst, None)
            return None, []
        return inst, list(pds)

    def _instance_fallback(self):
        """vkops.drivers' headless NVIDIA fallback (an EGL ICD for a GLX one), as vkops.Device() takes it."""
        if not drivers.headless_fallback():
            sys.exit("no Vulkan device: `python -m vkops info` says why")

    def pipeline(self, spv, spec, subgroup=None, ir=False):
        """{"executables": [...]} for the SPIR-V file with the {constant_id: uint32} specialization."""
        code = Path(spv).read_bytes()
        buf = C.create_string_buffer(code, len(code))
        module, pipe = u64(), u64()
        check(self.call("vkCreateShaderModule", self.dev, C.byref(ModuleCI(16, None, 0, len(code), C.cast(buf, vp))),
                        None, C.byref(module)), f"vkCreateShaderModule({spv})")
        try:
            ids = sorted(spec)
            entries = (MapEntry * len(ids))(*[MapEntry(k, 4 * i, 4) for i, k in enumerate(ids)])
            data = (u32 * len(ids))(*[spec[k] for k in ids])
            si = SpecInfo(len(ids), C.cast(entries, vp), 4 * len(ids), C.cast(data, vp))
            req = ReqSubgroup(1000225001, None, subgroup or 0)
            stage = StageCI(18, C.cast(C.pointer(req), vp) if subgroup else None, 0, 0x20, module.value, b"main",
                            C.pointer(si))
            flags = (0x40 | (0x80 if ir else 0)) if self.pei else 0  # CAPTURE_STATISTICS | _INTERNAL_REPRESENTATIONS
            ci = ComputeCI(29, None, flags, stage, self.layout.value, 0, -1)
            check(self.call("vkCreateComputePipelines", self.dev, 0, 1, C.byref(ci), None, C.byref(pipe)),
                  f"vkCreateComputePipelines({spv})")
            try:
                return {"executables": self._executables(pipe.value, ir)} if self.pei else {"executables": []}
            finally:
                self.call("vkDestroyPipeline", self.dev, pipe, None)
        finally:
            self.call("vkDestroyShaderModule", self.dev, module, None)

    def _two_calls(self, fn, info, cls, stype, fill=None):
        n = u32()
        check(fn(self.dev, C.byref(info), C.byref(n), None), "count")
        arr = (cls * n.value)()
        for a in arr:
            a.sType = stype
        if fill:
            check(fn(self.dev, C.byref(info), C.byref(n), arr), "sizes")
            fill(arr)
        check(fn(self.dev, C.byref(info), C.byref(n), arr), "fill")
        return arr[:n.value]

    def _executables(self, pipe, ir):
        out = []
        for i, e in enumerate(self._two_calls(self.khr["Properties"], PipelineInfo(S_PIPELINE_INFO, None, pipe),
                                              ExecProps, S_EXEC_PROPS)):
            info = ExecInfo(S_EXEC_INFO, None, pipe, i)
            stats = [{"name": cstr(s.name), "description": cstr(s.desc),
                      "value": {0: bool(s.value.b32), 1: s.value.i64, 2: s.value.u64, 3: s.value.f64}.get(s.format)}
                     for s in self._two_calls(self.khr["Statistics"], info, Stat, S_STAT)]
            x = {"name": cstr(e.name), "description": cstr(e.desc), "stages": e.stages, "subgroup_size": e.subgroup,
                 "statistics": stats}
            if ir:
                keep = []

                def alloc(arr):
                    for a in arr:
                        keep.append(C.create_string_buffer(a.size))
                        a.data = C.cast(keep[-1], vp)
                irs = self._two_calls(self.khr["InternalRepresentations"], info, IR, S_IR, alloc)
                x["irs"] = [{"name": cstr(r.name), "description": cstr(r.desc), "text": bool(r.text),
                             "data": C.string_at(r.data, r.size)} for r in irs]
            out.append(x)
        return out

    def close(self):
        if getattr(self, "dev", None):
            self.call("vkDestroyPipelineLayout", self.dev, self.layout, None)
            self.call("vkDestroyDescriptorSetLayout", self.dev, self.set_layout, None)
            self.call("vkDestroyDevice", self.dev, None)
            self.dev = None
        if getattr(self, "inst", None):
            self.call("vkDestroyInstance", self.inst, None)
            self.inst = None


def parse_spec(s):
    return {int(k): int(v, 0) for k, v in (kv.split("=") for kv in s.split(",") if kv)} if s else {}


def spv_path(name):
    p = Path(name)
    if p.exists():
        return p
    q = ROOT / "vkops" / "spv" / (p.name if p.suffix == ".spv" else p.name + ".spv")
    if not q.exists():
        sys.exit(f"{name}: no such SPIR-V file (nor {q})")
    return q


def qlmm_preset(vk):
    """(label, kernel, spec) of the qlmm kernels vkops runs on cooperative matrices, with its tile configs."""
    from vkops.ops.qlmm import coopmat as cm, stream as qs  # noqa: PLC0415
    from vkops.ops.qlmm.tuning import DEFAULT as T  # noqa: PLC0415
    jobs = []
    for kernel, configs in (("qlmm_coopmat", ("128x128x64_4x1", "128x64x128_4x2", "64x64x64_2x2", "64x64x128_4x2",
                                              "32x64x128_4x1")),
                            ("qlmm_coopmat_bt", ("128x64x128_4x2", "128x128x64_4x1"))):
        for c in configs:  # lowering.py: (LANES * SG_W * SG_H, TILE_M, TILE_N, TILE_K, SG_W, SG_H, GROUP_M)
            tm, tn, tk, sw, sh = cm.check_config(c)
            spec = (cm.LANES * sw * sh, tm, tn, tk, sw, sh, max(1, T.COOPMAT_GROUP_M))
            jobs.append((f"{kernel} {c} group_m={spec[6]}", kernel, dict(enumerate(spec))))
    for nr in qs.TILES:  # stream.workgroup(): STREAM_WG halved while the slabs do not fit shared memory
        wg = T.STREAM_WG
        while wg > qs.MIN_WG and qs.shared_bytes(wg, 16, nr) > vk.shared_memory:
            wg //= 2
        jobs.append((f"{qs.kernel(16, nr)} wg={wg}", qs.kernel(16, nr), {0: wg}))
    return jobs


def show(label, spv, spec, res):
    print(f"== {label}  [{spv.name} spec {','.join(f'{k}={v}' for k, v in sorted(spec.items())) or '-'}]")
    if "error" in res or not res["executables"]:
        print(f"   {res.get('error', 'compiled (no executables reported)')}")
    for i, e in enumerate(res.get("executables", [])):
        print(f"  [{i}] {e['name']}: {e['description']} (subgroup {e['subgroup_size']})")
        w = max([len(s["name"]) for s in e["statistics"]] + [4])
        for s in e["statistics"]:
            v = s["value"]
            v = f"{v:.4g}" if isinstance(v, float) else str(v)
            print(f"      {s['name']:<{w}} {v:>10}  {s['description']}")
        for r in e.get("irs", []):
            print(f"      IR {r['name']}: {r['bytes']} bytes -> {r['file']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spv", nargs="*", help="SPIR-V files (or names in vkops/spv), each with --spec")
    ap.add_argument("--spec", default="", help="ID=VALUE,... (uint32) for the positional files")
    ap.add_argument("--kernel", action="append", default=[], help="NAME.spv:ID=VALUE,... (repeatable)")
    ap.add_argument("--preset", choices=["qlmm"], help="qlmm: the cooperative-matrix qlmm kernels vkops runs")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--subgroup", type=int, help="required subgroup size (VK_EXT_subgroup_size_control)")
    ap.add_argument("--ir", metavar="DIR", help="capture internal representations into DIR, a file each")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    a = ap.parse_args()
    jobs = [(p, p, parse_spec(a.spec)) for p in a.spv]
    jobs += [(k, k.partition(":")[0], parse_spec(k.partition(":")[2])) for k in a.kernel]
    if not jobs and not a.preset:
        ap.error("name SPIR-V files, --kernel or --preset")
    vk = Vk(a.device)
    try:
        head = {"device": vk.name, "api": f"{vk.api >> 22}.{(vk.api >> 12) & 0x3FF}.{vk.api & 0xFFF}",
                "loader": vk.loader, "extensions": vk.enabled, "pipeline_executable_info": vk.pei}
        if a.preset == "qlmm":
            if "VK_KHR_cooperative_matrix" in vk.exts:
                jobs += qlmm_preset(vk)
            else:
                head["skipped"] = "--preset qlmm: the device offers no VK_KHR_cooperative_matrix"
        if not a.json:
            print(f"{head['device']} (Vulkan {head['api']}, loader {head['loader']}); enabled {', '.join(vk.enabled)}")
            if not vk.pei:
                print(f"{EXT_PEP} (pipelineExecutableInfo) is not offered: pipelines are compiled, nothing reported")
            if "skipped" in head:
                print(head["skipped"] + "; its kernels are skipped")
        if a.subgroup and not vk.features.get("ssc"):
            sys.exit("--subgroup: subgroupSizeControl is not supported")
        results = []
        for label, name, spec in jobs:
            spv = spv_path(name)
            try:
                res = vk.pipeline(spv, spec, a.subgroup, bool(a.ir))
            except RuntimeError as e:
                res = {"error": str(e)}
            for i, e in enumerate(res.get("executables", [])):
                for j, r in enumerate(e.get("irs", [])):
                    os.makedirs(a.ir, exist_ok=True)
                    stem = re.sub(r"[^\w.=-]+", "_", f"{label}.{i}.{j}.{r['name']}")
                    r["file"] = os.path.join(a.ir, stem + (".txt" if r["text"] else ".bin"))
                    data = r.pop("data")
                    data = data.rstrip(b"\0") if r["text"] else data
                    Path(r["file"]).write_bytes(data)
                    r["bytes"] = len(data)
            results.append({"label": label, "spv": str(spv), "spec": spec, **res})
            if not a.json:
                show(label, spv, spec, res)
        if a.json:
            print(json.dumps({**head, "pipelines": results}, indent=1))
    finally:
        vk.close()


if __name__ == "__main__":
    main()
