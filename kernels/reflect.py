"""SPIR-V reflection for the kernel manifest, read from the binary itself (no SPIRV-Cross needed, and
it skips instructions it does not know, such as cooperative-matrix types).

reflect(spv_bytes) -> dict: entry point, local size (and which dimensions are specialization
constants), specialization constants, storage-buffer bindings (name, access, element type), the
push-constant block (members, offsets, types, size), capabilities, extensions, the Vulkan device
features the capabilities need, subgroup operations, cooperative-matrix types, workgroup memory as an
expression over the specialization constants (reflect_requirements.py) and the module's sha256.
"""
from __future__ import annotations

import hashlib
import struct
from typing import Dict, List, Optional

from reflect_requirements import (TYPE_COOPERATIVE_MATRIX, cooperative_matrix, features, shared_bytes, shared_memory,
                          spec_expression, subgroup)

MAGIC = 0x07230203
CAPABILITIES = {1: "Shader", 9: "Float16", 10: "Float64", 11: "Int64", 22: "Int16", 39: "Int8",
                61: "GroupNonUniform", 62: "GroupNonUniformVote", 63: "GroupNonUniformArithmetic",
                64: "GroupNonUniformBallot", 65: "GroupNonUniformShuffle", 66: "GroupNonUniformShuffleRelative",
                67: "GroupNonUniformClustered", 68: "GroupNonUniformQuad", 4433: "StorageBuffer16BitAccess",
                4434: "UniformAndStorageBuffer16BitAccess", 4435: "StoragePushConstant16",
                4448: "StorageBuffer8BitAccess", 4449: "UniformAndStorageBuffer8BitAccess",
                4450: "StoragePushConstant8", 5345: "VulkanMemoryModel", 5346: "VulkanMemoryModelDeviceScope",
                6018: "DotProductInput4x8BitPacked", 6019: "DotProduct", 6022: "CooperativeMatrixKHR"}
# Capability -> the VkPhysicalDevice*Features member a device must enable for it (`device_features`; the
# struct, extension and core version of each: reflect_requirements.FEATURES, `features`).
FEATURES = {"Float16": "shaderFloat16", "Float64": "shaderFloat64", "Int64": "shaderInt64", "Int16": "shaderInt16",
            "Int8": "shaderInt8", "StorageBuffer16BitAccess": "storageBuffer16BitAccess",
            "UniformAndStorageBuffer16BitAccess": "uniformAndStorageBuffer16BitAccess",
            "StoragePushConstant16": "storagePushConstant16", "StorageBuffer8BitAccess": "storageBuffer8BitAccess",
            "UniformAndStorageBuffer8BitAccess": "uniformAndStorageBuffer8BitAccess",
            "StoragePushConstant8": "storagePushConstant8", "VulkanMemoryModel": "vulkanMemoryModel",
            "CooperativeMatrixKHR": "cooperativeMatrix", "DotProduct": "shaderIntegerDotProduct",
            "DotProductInput4x8BitPacked": "shaderIntegerDotProduct"}
DEVICE_EXTENSIONS = {"SPV_KHR_cooperative_matrix": "VK_KHR_cooperative_matrix",
                     "SPV_KHR_8bit_storage": "VK_KHR_8bit_storage", "SPV_KHR_16bit_storage": "VK_KHR_16bit_storage",
                     "SPV_KHR_integer_dot_product": "VK_KHR_shader_integer_dot_product"}
# Opcodes and decorations used below (SPIR-V 1.6 unified spec).
OP = dict(Name=5, MemberName=6, Extension=10, EntryPoint=15, ExecutionMode=16, Capability=17, TypeBool=20, TypeInt=21,
          TypeFloat=22, TypeVector=23, TypeArray=28, TypeRuntimeArray=29, TypeStruct=30, TypePointer=32,
          Constant=43, SpecConstantTrue=48, SpecConstantFalse=49, SpecConstant=50, SpecConstantComposite=51,
          SpecConstantOp=52, Variable=59, Decorate=71, MemberDecorate=72, ExecutionModeId=331)
SPEC_ID, BUILTIN, NON_WRITABLE, NON_READABLE, BINDING, SET, OFFSET = 1, 11, 24, 25, 33, 34, 35
WORKGROUP_SIZE, LOCAL_SIZE, STORAGE_BUFFER, UNIFORM, PUSH_CONSTANT, WORKGROUP = 25, 17, 12, 2, 9, 4


def _string(words) -> str:
    raw = struct.pack(f"<{len(words)}I", *words)
    return raw[:raw.index(b"\0")].decode()


def instructions(spv: bytes):
    """(opcode, operand words) of each instruction after the header."""
    words = struct.unpack(f"<{len(spv) // 4}I", spv)
    if words[0] != MAGIC:
        raise ValueError("not a SPIR-V module (bad magic)")
    i = 5
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        yield op, words[i + 1:i + n]
        i += max(n, 1)


def reflect(spv: bytes, subgroup_size: Optional[int] = None) -> Dict:
    """`subgroup_size`: the size the module's code assumes (variants.SUBGROUP_SIZE; not in the SPIR-V)."""
    names, members, deco, mdeco, types, consts, spec, variables = {}, {}, {}, {}, {}, {}, {}, []
    spec_ops, coop = {}, []
    caps, exts, entry, local = [], [], None, None
    for op, a in instructions(spv):
        if op == OP["Capability"]:
            caps.append(CAPABILITIES.get(a[0], f"Capability{a[0]}"))
        elif op == OP["Extension"]:
            exts.append(_string(a))
        elif op == OP["EntryPoint"]:
            entry = _string(a[2:])
        elif op == OP["ExecutionMode"] and a[1] == LOCAL_SIZE:
            local = list(a[2:5])
        elif op == OP["Name"]:
            names[a[0]] = _string(a[1:])
        elif op == OP["MemberName"]:
            members.setdefault(a[0], {})[a[1]] = _string(a[2:])
        elif op == OP["Decorate"]:
            deco.setdefault(a[0], {})[a[1]] = list(a[2:])
        elif op == OP["MemberDecorate"]:
            mdeco.setdefault(a[0], {}).setdefault(a[1], {})[a[2]] = list(a[3:])
        elif op == OP["TypeBool"]:
            types[a[0]] = "bool"
        elif op == OP["TypeInt"]:
            types[a[0]] = ("int" if a[2] else "uint") + str(a[1])
        elif op == OP["TypeFloat"]:
            types[a[0]] = f"float{a[1]}"
        elif op == OP["TypeVector"]:
            types[a[0]] = ("vector", a[1], a[2])
        elif op == OP["TypeArray"]:
            types[a[0]] = ("array", a[1], a[2])
        elif op == OP["TypeRuntimeArray"]:
            types[a[0]] = ("runtime_array", a[1])
        elif op == OP["TypeStruct"]:
            types[a[0]] = ("struct", list(a[1:]))
        elif op == OP["TypePointer"]:
            types[a[0]] = ("pointer", a[1], a[2])
        elif op == OP["Constant"]:
            consts[a[1]] = a[2]
        elif op in (OP["SpecConstant"], OP["SpecConstantTrue"], OP["SpecConstantFalse"]):
            value = a[2] if op == OP["SpecConstant"] else int(op == OP["SpecConstantTrue"])
            spec[a[1]] = (a[0], value)
        elif op == OP["SpecConstantComposite"]:
            consts[a[1]] = ("composite", list(a[2:]))
        elif op == OP["SpecConstantOp"]:
            spec_ops[a[1]] = (a[2], list(a[3:]))
        elif op == TYPE_COOPERATIVE_MATRIX:
            coop.append(list(a[:6]))
        elif op == OP["Variable"]:
            variables.append((a[0], a[1], a[2]))

    def tname(t):
        v = types.get(t)
        if isinstance(v, str):
            return v
        if v and v[0] == "vector":
            return f"{tname(v[1])}x{v[2]}"
        if v and v[0] == "array":
            return f"{tname(v[1])}[{consts.get(v[2])}]"
        if v and v[0] == "runtime_array":
            return f"{tname(v[1])}[]"
        return names.get(t, f"%{t}")

    spec_ids = {s: deco[s][SPEC_ID][0] for s in spec if SPEC_ID in deco.get(s, {})}

    def expr(vid):
        return spec_expression(vid, consts, spec, spec_ids, spec_ops)

    def scalar_bytes(t):  # a shared variable's element: no padding (see reflect_requirements.py)
        v = types[t]
        if v == "bool":
            return 4
        if isinstance(v, str):
            return int("".join(ch for ch in v if ch.isdigit())) // 8  # uint32, int8, float16
        if v[0] == "vector":
            return v[2] * scalar_bytes(v[1])
        if v[0] == "struct":
            return sum(scalar_bytes(m) for m in v[1])
        if v[0] == "array" and isinstance(expr(v[2]), int):
            return expr(v[2]) * scalar_bytes(v[1])
        raise ValueError(f"shared variable of unsupported type {v}")

    spec_constants = sorted(({"id": deco[s][SPEC_ID][0], "name": names.get(s, ""), "type": tname(t), "default": v}
                             for s, (t, v) in spec.items() if SPEC_ID in deco.get(s, {})), key=lambda c: c["id"])
    local_size = {"size": local, "spec_ids": [None, None, None]}
    for cid, c in consts.items():  # glslang: a WorkgroupSize composite of spec constants / constants
        if isinstance(c, tuple) and deco.get(cid, {}).get(BUILTIN) == [WORKGROUP_SIZE]:
            parts = c[1]
            for axis, p in zip("xyz", parts):  # glslang leaves local_size_*_id constants unnamed
                for sc in spec_constants:
                    if p in spec and SPEC_ID in deco.get(p, {}) and sc["id"] == deco[p][SPEC_ID][0] and not sc["name"]:
                        sc["name"] = f"local_size_{axis}"
            local_size["spec_ids"] = [deco[p][SPEC_ID][0] if p in spec and SPEC_ID in deco.get(p, {}) else None
                                      for p in parts]
            local_size["size"] = [spec[p][1] if p in spec else consts.get(p) for p in parts]

    bindings: Dict[tuple, Dict] = {}
    push = None
    for ptr, vid, storage in variables:
        _, _, block = types[ptr]
        if storage == PUSH_CONSTANT:
            mem = types[block][1]
            push = {"name": names.get(block, ""), "members": [
                {"name": members.get(block, {}).get(m, f"m{m}"), "offset": mdeco[block][m][OFFSET][0],
                 "type": tname(t)} for m, t in enumerate(mem)]}
            last, t_last = push["members"][-1], types.get(mem[-1])
            count = consts.get(t_last[2], 1) if isinstance(t_last, tuple) and t_last[0] == "array" else 1
            push["size"] = last["offset"] + 4 * count  # members are 32-bit scalars or arrays of them
        elif storage in (STORAGE_BUFFER, UNIFORM) and BINDING in deco.get(vid, {}):
            key = (deco[vid].get(SET, [0])[0], deco[vid][BINDING][0])
            mem_deco = mdeco.get(block, {})
            ro = NON_WRITABLE in deco.get(vid, {}) or all(NON_WRITABLE in d for d in mem_deco.values()) and mem_deco
            wo = NON_READABLE in deco.get(vid, {}) or all(NON_READABLE in d for d in mem_deco.values()) and mem_deco
            elem = tname(types[block][1][-1])
            b = bindings.setdefault(key, {"set": key[0], "binding": key[1], "names": [], "element_types": [],
                                          "read": False, "written": False})
            b["names"].append(names.get(block, f"%{block}"))
            b["element_types"].append(elem)
            b["read"] |= not wo
            b["written"] |= not ro
    return {"entry_point": entry, "local_size": local_size, "spec_constants": spec_constants,
            "bindings": [bindings[k] for k in sorted(bindings)], "push_constants": push,
            "capabilities": caps, "extensions": exts,
            "device_extensions": sorted({DEVICE_EXTENSIONS[e] for e in exts if e in DEVICE_EXTENSIONS}),
            "device_features": sorted({FEATURES[c] for c in caps if c in FEATURES}),
            "features": features(caps), "subgroup": subgroup(caps, subgroup_size),
            "shared_memory": shared_memory([(p, v) for p, v, sc in variables if sc == WORKGROUP], types, names,
                                           scalar_bytes, expr),
            "cooperative_matrix": cooperative_matrix(coop, tname, expr),
            "sha256": hashlib.sha256(spv).hexdigest()}


def shared_memory_bytes(spv: bytes, spec_values: Dict[int, int]) -> int:
    """Bytes of Workgroup (shared) variables the module declares, with specialization constant i set
    to spec_values[i] (others at their defaults): what maxComputeSharedMemorySize must cover."""
    info = reflect(spv)
    return shared_bytes(info["shared_memory"], spec_values, {c["id"]: c["default"] for c in info["spec_constants"]})
