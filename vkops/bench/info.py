"""`python -m vkops info`: what this machine offers vkops and its benchmarks. The same facts go into
every result document (device_facts, machine, versions)."""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
from importlib import resources
from pathlib import Path
from typing import Dict, List, Optional

from .. import __version__, drivers, native
from ..runtime.device import EXTENSIONS, devices

OPTIONAL = {"matplotlib": "report plots", "tqdm": "progress bar", "jsonschema": "schema checks in tests",
            "onnx": "ONNX Runtime baseline models, vkops.onnx"}


def _dist_version(name: str) -> Optional[str]:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def device_facts(index: int, features: bool = True) -> dict:
    """The Vulkan device's facts vkops reads (vkops/vkinfo.py), and with `features` the features the
    patched kp enabled (this creates the device)."""
    i = devices()[index]
    vk = drivers.report()
    enabled = None
    if features:
        from ..runtime import Device  # noqa: PLC0415

        enabled = list(Device(index).features)
    return {
        "index": i.index, "name": i.name, "vendor": i.vendor, "vendor_id": i.vendor_id, "device_type": i.device_type,
        "driver": i.driver, "api_version": ".".join(map(str, i.api_version)), "subgroup_size": i.subgroup_size,
        "subgroup_size_range": [i.min_subgroup_size, i.max_subgroup_size],
        "limits": {"max_compute_shared_memory_size": i.shared_memory_bytes,
                   "max_compute_workgroup_invocations": i.max_workgroup_invocations,
                   "max_compute_workgroup_size": list(i.max_workgroup_size),
                   "max_compute_workgroup_count": list(i.max_workgroup_count),
                   "max_storage_buffer_range": i.max_storage_buffer_range,
                   "max_push_constants_size": i.max_push_constants_bytes,
                   "timestamp_period_ns": i.timestamp_period_ns,
                   "device_local_bytes": i.device_local_bytes},
        "cooperative_matrix_shapes": [f"{m}x{n}x{k} {a}*{b}+{c}->{r}" for m, n, k, a, b, c, r in
                                      i.cooperative_matrix_shapes],
        "extensions_used": [e for e in EXTENSIONS if e in i.extensions],
        "features": enabled,
        # Which loader and driver files gave this device, and whether vkops' headless fallback wrote one.
        "vulkan": {"loader": drivers.loader_path(), "icd_files": [f["file"] for f in vk["icd_files"]],
                   "headless_fallback_icd": (vk["headless_fallback"] or {}).get("file")},
    }


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"host": platform.node(), "platform": platform.platform(), "cpu": cpu, "cpu_count": os.cpu_count(),
            "python": platform.python_version()}


def kp_build() -> dict:
    """kp's version, where it is, and whether it is vkops' patched build."""
    from ..runtime import _kp as K  # noqa: PLC0415  (the wheel's vkops._vendor.kp first, as the runtime does)

    try:
        kp = K.kp()
    except ImportError as e:
        return {"version": None, "patched": False, "path": None, "error": str(e)}
    vendored = kp.__name__ != "kp" or "_vendor" in Path(kp.__file__).parts
    return {"version": "0.9.0 (in the vkops wheel)" if vendored else _dist_version("kp"),
            "patched": hasattr(kp, "OpBufferCopy"), "path": kp.__file__}


def spirv_set() -> dict:
    """The kernel manifest vkops runs: where, its format, the modules and a digest of the SPIR-V."""
    spv = resources.files("vkops").joinpath("spv")
    try:
        manifest = json.loads(spv.joinpath("manifest.json").read_text())
    except (FileNotFoundError, OSError):
        return {"manifest": None, "error": "vkops/spv/manifest.json is missing: run `make spv`"}
    h = hashlib.sha256()
    for name in sorted(manifest["modules"]):
        h.update(spv.joinpath(manifest["modules"][name]["file"]).read_bytes())
    return {"manifest": str(spv.joinpath("manifest.json")), "format": manifest["format"],
            "target_env": manifest.get("target_env"), "modules": sorted(manifest["modules"]),
            "sha256": h.hexdigest()[:16]}


def planner() -> dict:
    """Which planner the operators' default plans come from: libvkops (vkops.native, its path) or Python."""
    return {"native": native.enabled(), "library": None if native.path() is None else str(native.path()),
            "text": native.describe()}


def versions(extra: Optional[List[str]] = None) -> Dict[str, Optional[str]]:
    import numpy  # noqa: PLC0415

    out = {"vkops": __version__, "numpy": numpy.__version__, "kp": kp_build()["version"]}
    for name in extra or ():
        out[name] = _dist_version(name)
    return out


def collect(features: bool = True) -> dict:
    from .baselines import status  # noqa: PLC0415

    return {"vkops": __version__, "machine": machine(), "kp": kp_build(), "spirv": spirv_set(),
            "planner": planner(),
            "devices": [device_facts(i.index, features) for i in devices()], "vulkan": drivers.report(),
            "baselines": status(),
            "optional": {name: {"version": _dist_version(name), "for": why} for name, why in OPTIONAL.items()}}


def _mib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def vulkan_lines(vk: dict) -> List[str]:
    """The loader file, the ICD files it read (and where each came from), the headless fallback."""
    lines = [f"Vulkan loader: {vk['loader']}" + ("" if vk["loader"] is None or "vkops.libs" in vk["loader"]
                                                 else " (the system's; no loader bundled in vkops.libs)")]
    env = f" (from {vk['driver_env']}, set by the user)" if vk["driver_env"] else ""
    lines.append(f"ICD files the loader reads{env}:" + (" none" if not vk["icd_files"] else ""))
    lines += [f"  {f['file']} -> {f['library']} ({f['source']})" for f in vk["icd_files"]]
    fb = vk["headless_fallback"]
    lines.append("headless NVIDIA fallback: " + ("not applied" if fb is None else
                 f"applied: wrote {fb['file']} ({fb['library']}) in place of {fb['replaced']}, set VK_DRIVER_FILES"))
    return lines


def text(facts: dict) -> str:
    m, kp, sp = facts["machine"], facts["kp"], facts["spirv"]
    lines = [f"vkops {facts['vkops']} on {m['host']} ({m['platform']}; {m['cpu']}, {m['cpu_count']} CPUs; "
             f"Python {m['python']})"]
    if kp["version"] is None:
        lines.append(f"kp: not importable ({kp.get('error')})")
    else:
        lines.append(f"kp {kp['version']} ({'vkops-patched' if kp['patched'] else 'NOT the patched build'}) "
                     f"at {kp['path']}")
    if sp.get("manifest"):
        lines.append(f"SPIR-V: {len(sp['modules'])} modules for {sp['target_env']} ({sp['format']}, "
                     f"sha256 {sp['sha256']}) from {sp['manifest']}")
    else:
        lines.append(f"SPIR-V: {sp['error']}")
    lines.append(f"planner: {facts['planner']['text']}")
    lines += vulkan_lines(facts["vulkan"])
    for d in facts["devices"]:
        lim = d["limits"]
        lo, hi = d["subgroup_size_range"]
        lines += [f"device {d['index']}: {d['name']}",
                  f"  vendor {d['vendor']}, {d['device_type']}, driver {d['driver']}, Vulkan {d['api_version']}",
                  f"  subgroup size {d['subgroup_size']}" + (f" (can be {lo}..{hi})" if lo != hi else ""),
                  f"  shared memory {lim['max_compute_shared_memory_size']} B; workgroup <= "
                  f"{lim['max_compute_workgroup_invocations']} invocations, size "
                  f"{tuple(lim['max_compute_workgroup_size'])}, count {tuple(lim['max_compute_workgroup_count'])}",
                  f"  storage buffers <= {_mib(lim['max_storage_buffer_range'])}; push constants "
                  f"{lim['max_push_constants_size']} B; timestamps {lim['timestamp_period_ns']:g} ns/tick; "
                  f"device-local memory {_mib(lim['device_local_bytes'])}",
                  "  cooperative matrix: " + (", ".join(d["cooperative_matrix_shapes"]) or "none"),
                  "  extensions used: " + (", ".join(d["extensions_used"]) or "none"),
                  "  features enabled: " + ("(not queried)" if d["features"] is None else
                                            ", ".join(d["features"]) or "none")]
    lines.append("baselines:")
    for name, s in facts["baselines"].items():
        lines.append(f"  {name}: " + (f"{s['version']} ({s['device']})" if s["available"] else s["reason"]))
    lines.append("optional packages:")
    for name, s in facts["optional"].items():
        lines.append(f"  {name}: {s['version'] or 'not installed'} ({s['for']})")
    return "\n".join(lines)
