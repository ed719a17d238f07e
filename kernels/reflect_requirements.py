"""What a host must offer a module beyond its interface, reflected from the SPIR-V (reflect.py uses it for
the manifest): the Vulkan feature behind each capability, the subgroup operation classes, cooperative
matrix types, and workgroup (shared) memory as an expression over the specialization constants.

Shared-memory expression form (docs/c-api.md): `shared_memory.terms` is a list of {"name", "bytes",
"length"}; the module needs sum(bytes * length) bytes. `bytes` is a number (the element's size: scalars
of their width, bool 4, vectors and structs their members' sum, no padding). `length` is an expression:
a number, {"spec": id} (the value given for specialization constant `id`, else its `default`; a bool is
0/1), or {"op": NAME, "args": [expression, ...]} with NAME one of OPS below (SPIR-V's OpSpecConstantOp
operations, evaluated on 32-bit unsigned integers that wrap; comparisons give 0/1; Select is args[0] ?
args[1] : args[2]). A module using any other operation fails the build (UnsupportedSpecOp).
"""
from __future__ import annotations

from typing import Dict, List, Optional

# SPIR-V capability -> (VkPhysicalDevice*Features struct, member, device extension needed on a Vulkan 1.1
# device (None: core in 1.1), Vulkan version it is core in (None: not core)). Structs are the standalone
# (promoted) ones; on Vulkan 1.2+ the same member is also in VkPhysicalDeviceVulkan1xFeatures
# (tests/test_manifest.py checks every row against the Vulkan registry, vk.xml).
FEATURES = {
    "Float64": ("VkPhysicalDeviceFeatures", "shaderFloat64", None, "1.0"),
    "Int64": ("VkPhysicalDeviceFeatures", "shaderInt64", None, "1.0"),
    "Int16": ("VkPhysicalDeviceFeatures", "shaderInt16", None, "1.0"),
    "Float16": ("VkPhysicalDeviceShaderFloat16Int8Features", "shaderFloat16", "VK_KHR_shader_float16_int8", "1.2"),
    "Int8": ("VkPhysicalDeviceShaderFloat16Int8Features", "shaderInt8", "VK_KHR_shader_float16_int8", "1.2"),
    "StorageBuffer16BitAccess": ("VkPhysicalDevice16BitStorageFeatures", "storageBuffer16BitAccess", None, "1.1"),
    "UniformAndStorageBuffer16BitAccess": ("VkPhysicalDevice16BitStorageFeatures",
                                           "uniformAndStorageBuffer16BitAccess", None, "1.1"),
    "StoragePushConstant16": ("VkPhysicalDevice16BitStorageFeatures", "storagePushConstant16", None, "1.1"),
    "StorageBuffer8BitAccess": ("VkPhysicalDevice8BitStorageFeatures", "storageBuffer8BitAccess",
                                "VK_KHR_8bit_storage", "1.2"),
    "UniformAndStorageBuffer8BitAccess": ("VkPhysicalDevice8BitStorageFeatures", "uniformAndStorageBuffer8BitAccess",
                                          "VK_KHR_8bit_storage", "1.2"),
    "StoragePushConstant8": ("VkPhysicalDevice8BitStorageFeatures", "storagePushConstant8",
                             "VK_KHR_8bit_storage", "1.2"),
    "VulkanMemoryModel": ("VkPhysicalDeviceVulkanMemoryModelFeatures", "vulkanMemoryModel",
                          "VK_KHR_vulkan_memory_model", "1.2"),
    "VulkanMemoryModelDeviceScope": ("VkPhysicalDeviceVulkanMemoryModelFeatures", "vulkanMemoryModelDeviceScope",
                                     "VK_KHR_vulkan_memory_model", "1.2"),
    "CooperativeMatrixKHR": ("VkPhysicalDeviceCooperativeMatrixFeaturesKHR", "cooperativeMatrix",
                             "VK_KHR_cooperative_matrix", None),
    "DotProduct": ("VkPhysicalDeviceShaderIntegerDotProductFeatures", "shaderIntegerDotProduct",
                   "VK_KHR_shader_integer_dot_product", "1.3"),
    "DotProductInput4x8BitPacked": ("VkPhysicalDeviceShaderIntegerDotProductFeatures", "shaderIntegerDotProduct",
                                    "VK_KHR_shader_integer_dot_product", "1.3"),
}
# GroupNonUniform* capability -> subgroup operation class (vkops.limits.SUBGROUP_OPS' names) and its
# VkSubgroupFeatureFlagBits value.
SUBGROUP_CLASSES = {"GroupNonUniform": ("basic", 0x1), "GroupNonUniformVote": ("vote", 0x2),
                    "GroupNonUniformArithmetic": ("arithmetic", 0x4), "GroupNonUniformBallot": ("ballot", 0x8),
                    "GroupNonUniformShuffle": ("shuffle", 0x10),
                    "GroupNonUniformShuffleRelative": ("shuffle_relative", 0x20),
                    "GroupNonUniformClustered": ("clustered", 0x40), "GroupNonUniformQuad": ("quad", 0x80)}


def features(caps: List[str]) -> List[Dict]:
    """Each device feature the capabilities need, once, in capability order."""
    out = []
    for c in caps:
        if c in FEATURES:
            struct, member, ext, core = FEATURES[c]
            f = {"struct": struct, "member": member, "extension": ext, "core": core}
            if f not in out:
                out.append(f)
    return out


def subgroup(caps: List[str], size: Optional[int]) -> Dict:
    """`size`: the subgroup size the code assumes (None: any); the operation classes its capabilities use."""
    classes = [SUBGROUP_CLASSES[c] for c in caps if c in SUBGROUP_CLASSES]
    mask = 0
    for _, bit in classes:
        mask |= bit
    return {"size": size, "operations": [n for n, _ in sorted(classes, key=lambda c: c[1])], "operations_mask": mask}


# -- cooperative matrices -------------------------------------------------------------------------- #
TYPE_COOPERATIVE_MATRIX = 4456
SCOPES = {0: "CrossDevice", 1: "Device", 2: "Workgroup", 3: "Subgroup", 4: "Invocation", 5: "QueueFamily"}
VK_SCOPES = {1: "VK_SCOPE_DEVICE_KHR", 2: "VK_SCOPE_WORKGROUP_KHR", 3: "VK_SCOPE_SUBGROUP_KHR",
             5: "VK_SCOPE_QUEUE_FAMILY_KHR"}
USES = {0: "MatrixA", 1: "MatrixB", 2: "MatrixAccumulator"}
# reflect.py's scalar type names -> VkComponentTypeKHR
COMPONENT_TYPES = {"float16": "VK_COMPONENT_TYPE_FLOAT16_KHR", "float32": "VK_COMPONENT_TYPE_FLOAT32_KHR",
                   "float64": "VK_COMPONENT_TYPE_FLOAT64_KHR", "int8": "VK_COMPONENT_TYPE_SINT8_KHR",
                   "int16": "VK_COMPONENT_TYPE_SINT16_KHR", "int32": "VK_COMPONENT_TYPE_SINT32_KHR",
                   "int64": "VK_COMPONENT_TYPE_SINT64_KHR", "uint8": "VK_COMPONENT_TYPE_UINT8_KHR",
                   "uint16": "VK_COMPONENT_TYPE_UINT16_KHR", "uint32": "VK_COMPONENT_TYPE_UINT32_KHR",
                   "uint64": "VK_COMPONENT_TYPE_UINT64_KHR"}


def cooperative_matrix(coop_types: List[List[int]], tname, expr) -> List[Dict]:
    """The OpTypeCooperativeMatrixKHR types declared ([result, component, scope, rows, columns, use] ids),
    once each: rows and columns as numbers (or expressions where specialization constants size them)."""
    out = []
    for _, comp, scope, rows, cols, use in coop_types:
        ct, sc, us = tname(comp), expr(scope), expr(use)
        if not all(isinstance(v, int) for v in (sc, us)):
            raise ValueError("cooperative matrix with a specialized scope or use")
        m = {"component_type": ct, "vk_component_type": COMPONENT_TYPES[ct], "rows": expr(rows), "columns": expr(cols),
             "scope": SCOPES[sc], "vk_scope": VK_SCOPES[sc], "use": USES[us]}
        if m not in out:
            out.append(m)
    return out


# -- shared memory as an expression ----------------------------------------------------------------- #
# OpSpecConstantOp opcode -> (name, 32-bit unsigned evaluation). Only what the modules use; add with care.
M32 = 0xFFFFFFFF
OPS = {128: ("IAdd", lambda x, y: (x + y) & M32), 130: ("ISub", lambda x, y: (x - y) & M32),
       132: ("IMul", lambda x, y: (x * y) & M32), 134: ("UDiv", lambda x, y: x // y), 137: ("UMod", lambda x, y: x % y),
       194: ("ShiftRightLogical", lambda x, y: x >> y), 196: ("ShiftLeftLogical", lambda x, y: (x << y) & M32),
       199: ("BitwiseAnd", lambda x, y: x & y), 197: ("BitwiseOr", lambda x, y: x | y),
       170: ("IEqual", lambda x, y: int(x == y)), 172: ("UGreaterThan", lambda x, y: int(x > y)),
       174: ("UGreaterThanEqual", lambda x, y: int(x >= y)), 176: ("ULessThan", lambda x, y: int(x < y)),
       178: ("ULessThanEqual", lambda x, y: int(x <= y)), 169: ("Select", lambda c, a, b: a if c else b)}
BY_NAME = {name: f for name, f in OPS.values()}
COMPOSITE_EXTRACT = 81


class UnsupportedSpecOp(ValueError):
    pass


def spec_expression(vid: int, consts: Dict, spec: Dict, spec_ids: Dict, spec_ops: Dict):
    """The value of id `vid` as an expression: a number, {"spec": id} or {"op", "args"} (folded where
    every argument is a number)."""
    if vid in spec_ops:
        code, args = spec_ops[vid]
        if code == COMPOSITE_EXTRACT:  # e.g. gl_WorkGroupSize.x: the composite's component
            return spec_expression(consts[args[0]][1][args[1]], consts, spec, spec_ids, spec_ops)
        if code not in OPS:
            raise UnsupportedSpecOp(f"OpSpecConstantOp with opcode {code}: kernels/reflect_requirements.py's OPS "
                                    "lacks it")
        name, f = OPS[code]
        sub = [spec_expression(a, consts, spec, spec_ids, spec_ops) for a in args]
        return f(*sub) if all(isinstance(s, int) for s in sub) else {"op": name, "args": sub}
    if vid in spec:
        return {"spec": spec_ids[vid]} if vid in spec_ids else spec[vid][1]
    value = consts[vid]
    if not isinstance(value, int):
        raise ValueError(f"array length %{vid} is not a scalar constant")
    return value


def evaluate(expr, values: Dict[int, int], defaults: Dict[int, int]) -> int:
    """An expression's value with specialization constant i = values.get(i, defaults[i])."""
    if isinstance(expr, int):
        return expr
    if "spec" in expr:
        return int(values.get(expr["spec"], defaults[expr["spec"]]))
    if expr["op"] not in BY_NAME:
        raise UnsupportedSpecOp(f"unknown operation {expr['op']!r}")
    return BY_NAME[expr["op"]](*(evaluate(a, values, defaults) for a in expr["args"]))


def shared_memory(variables, types, names, scalar_bytes, expr) -> Dict:
    """{"terms": [{"name", "bytes", "length"}]} for the Workgroup variables ((pointer type, id)):
    nested arrays multiply into one length."""
    terms = []
    for ptr, vid in variables:
        t, length = types[ptr][2], 1
        while isinstance(types.get(t), tuple) and types[t][0] == "array":
            n = expr(types[t][2])
            if isinstance(n, int) and isinstance(length, int):
                length *= n
            else:
                length = n if length == 1 else {"op": "IMul", "args": [length, n]}
            t = types[t][1]
        terms.append({"name": names.get(vid, f"%{vid}"), "bytes": scalar_bytes(t), "length": length})
    return {"terms": terms}


def shared_bytes(shared: Dict, values: Dict[int, int], defaults: Dict[int, int]) -> int:
    """The bytes a manifest's `shared_memory` needs with these specialization values."""
    return sum(t["bytes"] * evaluate(t["length"], values, defaults) for t in shared["terms"])
