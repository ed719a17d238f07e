"""The result document of one `python -m vkops bench` run ("format": "vkops-bench/1"), as a JSON
Schema (draft 2020-12, a subset: type, enum, const, properties, required, additionalProperties,
items, minimum, minItems) and a validator for that subset that needs no package.

One document per run: what ran where (machine, versions, the Vulkan device's facts, the CUDA device),
how it was timed (method), which baselines were asked for and which could run, the cases that could
not run for an implementation (skipped), and one row per (case, implementation):

- op, shape, dtype, params: the case (vkops/bench/cases.py says what shapes and dtypes mean)
- implementation: "vkops", "vkops[<variant>]", "vkCmdCopyBuffer", "torch", "torch (B row-major)",
  "numpy", "onnxruntime"; device: "vulkan" (vkops), "cuda" (torch) or "cpu"
- gpu_ms: GPU time per call (Vulkan timestamps, CUDA events), null on the CPU
- wall_ms: wall time per eager call (device-resident data, waited for); batch_wall_ms: per call of
  `method.batch_reps` calls in one batch or one torch synchronize (null on the CPU)
- gb_per_s (TOP_K1: bytes read; SLICE1: bytes read + written) or tops (QLinearMatMul: 2*B*M*K*N
  operations), from gpu_ms where there is one, else wall_ms (`throughput_from` says which)
- verified: the output matched vkops.reference (`check` says how); note: what ran (path, kernel)
"""
from __future__ import annotations

from typing import Any, List

from .cases import OPS

FORMAT = "vkops-bench/1"

_num = {"type": ["number", "null"], "minimum": 0}
_str = {"type": "string"}
_strn = {"type": ["string", "null"]}
_shape = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}

ROW = {
    "type": "object",
    "required": ["op", "shape", "dtype", "params", "implementation", "device", "gpu_ms", "wall_ms", "batch_wall_ms",
                 "gb_per_s", "tops", "throughput_from", "verified", "check", "note"],
    "additionalProperties": False,
    "properties": {
        "op": {"enum": list(OPS)},
        "shape": _shape,
        "dtype": _str,
        "params": {"type": "object"},
        "implementation": _str,
        "device": {"enum": ["vulkan", "cuda", "cpu"]},
        "gpu_ms": _num, "wall_ms": _num, "batch_wall_ms": _num, "gb_per_s": _num, "tops": _num,
        "throughput_from": {"enum": ["gpu_ms", "wall_ms", None]},
        "verified": {"type": ["boolean", "null"]},
        "check": _strn,
        "note": _strn,
    },
}

SKIPPED = {
    "type": "object",
    "required": ["op", "shape", "dtype", "params", "implementation", "reason"],
    "additionalProperties": False,
    "properties": {"op": {"enum": list(OPS)}, "shape": _shape, "dtype": _str, "params": {"type": "object"}, "implementation": _str,
                   "reason": _str},
}

DEVICE = {
    "type": "object",
    "required": ["index", "name", "vendor", "device_type", "driver", "api_version", "subgroup_size", "limits",
                 "cooperative_matrix_shapes", "features"],
    "properties": {
        "index": {"type": "integer", "minimum": 0}, "name": _str, "vendor": _str, "device_type": _str, "driver": _str,
        "api_version": _str, "subgroup_size": {"type": "integer"}, "limits": {"type": "object"},
        "cooperative_matrix_shapes": {"type": "array", "items": _str},
        "features": {"type": ["array", "null"], "items": _str},
        "vulkan": {"type": "object", "required": ["loader", "icd_files", "headless_fallback_icd"],
                   "properties": {"loader": _strn, "icd_files": {"type": "array", "items": _str},
                                  "headless_fallback_icd": _strn}},
    },
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "vkops benchmark results",
    "type": "object",
    "required": ["format", "created", "command", "interrupted", "machine", "versions", "device", "cuda_device",
                 "method", "against", "baselines", "skipped", "rows"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "created": _str,                                   # ISO 8601, UTC
        "command": {"type": "array", "items": _str},       # the argv that made it
        "preset": _strn,
        "interrupted": {"type": "boolean"},                # Ctrl-C or SIGTERM: the rows measured until then
        "machine": {"type": "object", "required": ["host", "platform", "cpu", "cpu_count", "python"],
                    "properties": {"host": _str, "platform": _str, "cpu": _str,
                                   "cpu_count": {"type": ["integer", "null"]}, "python": _str}},
        "versions": {"type": "object", "required": ["vkops", "numpy"],
                     "additionalProperties": {"type": ["string", "null"]}},
        "device": DEVICE,
        "cuda_device": _strn,
        "method": {"type": "object", "required": ["reps", "warm_s", "rounds", "tol", "description"]},
        "against": {"type": "array", "items": {"enum": ["torch", "numpy", "onnxruntime"]}},
        "baselines": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["available"], "properties": {"available": {"type": "boolean"}}}},
        "skipped": {"type": "array", "items": SKIPPED},
        "rows": {"type": "array", "items": ROW},
    },
}

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[t])


def errors(doc: Any, schema: dict = SCHEMA, path: str = "$") -> List[str]:
    """Every way `doc` breaks `schema` (the subset above), as 'path: what' lines; [] when valid."""
    out: List[str] = []
    if "const" in schema and doc != schema["const"]:
        out.append(f"{path}: must be {schema['const']!r}, got {doc!r}")
    if "enum" in schema and doc not in schema["enum"]:
        out.append(f"{path}: must be one of {schema['enum']}, got {doc!r}")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(doc, t) for t in types):
            return out + [f"{path}: must be {' or '.join(types)}, got {type(doc).__name__}"]
    if "minimum" in schema and _is(doc, "number") and doc < schema["minimum"]:
        out.append(f"{path}: must be >= {schema['minimum']}, got {doc}")
    if isinstance(doc, dict):
        for key in schema.get("required", ()):
            if key not in doc:
                out.append(f"{path}: missing {key!r}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, value in doc.items():
            if key in props:
                out += errors(value, props[key], f"{path}.{key}")
            elif extra is False:
                out.append(f"{path}: unexpected {key!r}")
            elif isinstance(extra, dict):
                out += errors(value, extra, f"{path}.{key}")
    if isinstance(doc, list):
        if len(doc) < schema.get("minItems", 0):
            out.append(f"{path}: needs at least {schema['minItems']} items, got {len(doc)}")
        if "items" in schema:
            for i, value in enumerate(doc):
                out += errors(value, schema["items"], f"{path}[{i}]")
    return out


def validate(doc: Any) -> None:
    """Raise ValueError listing what is wrong with a result document."""
    errs = errors(doc)
    if errs:
        raise ValueError(f"not a {FORMAT} document:\n  " + "\n  ".join(errs[:20]))
