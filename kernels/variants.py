"""Every SPIR-V module vkops ships: name -> (source, -D defines, compiler options).

A folder per operator (kernels/<op>/), one .comp per operator family there; variants differ only in defines
(ggml-vulkan style); kernels/common.glsl holds the helpers every operator uses. Workgroup sizes
and tile shapes are specialization constants chosen at run time, not variants.
"""
VARIANTS = {
    "slice1_b8": ("slice1/slice1.comp", {"ELEM_BITS": 8}),
    "slice1_b16": ("slice1/slice1.comp", {"ELEM_BITS": 16}),
    "slice1_b32": ("slice1/slice1.comp", {"ELEM_BITS": 32}),
}
VARIANTS.update({  # QUANTIZED_LINEAR_MATRIX_MULTIPLY (ops/qlmm.py)
    "qlmm": ("qlmm/qlmm.comp", {}),
    "qlmm_coopmat": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 0}),
    "qlmm_coopmat_zp": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 1}),
    "qlmm_coopmat_sk": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1}),
    "qlmm_coopmat_zp_sk": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 1, "SPLIT_K": 1}),
    "qlmm_coopmat_bt": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 0, "BT": 1}),
    "qlmm_coopmat_bt_sk": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "BT": 1}),
    "qlmm_coopmat_direct": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 0, "DIRECT_B": 1}),
    "qlmm_coopmat_direct_sk": ("qlmm/qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "DIRECT_B": 1}),
})
VARIANTS.update({  # TOP_K1 (ops/top_k1.py): KIND 0 float, 1 signed, 2 unsigned
    f"top_k1_{t}": ("top_k1.comp", {"ELEM_BITS": bits, "KIND": kind}, {"optimize": True})
    for t, bits, kind in (("f32", 32, 0), ("f16", 16, 0), ("i32", 32, 1), ("i16", 16, 1), ("i8", 8, 1),
                          ("u32", 32, 2), ("u16", 16, 2), ("u8", 8, 2))
})
VARIANTS.update({  # TOP_K1 with the sorting networks' short strides in subgroup shuffles (needs shuffle)
    f"top_k1_sg_{t}": (src, dict(defines, SHUF=1), opts)
    for t, (src, defines, opts) in [(k[len("top_k1_"):], v) for k, v in VARIANTS.items() if k.startswith("top_k1_")]
})
VARIANTS.update({  # TOP_K1 ROWS mode: one subgroup per sequence (needs subgroup ballot + arithmetic)
    f"top_k1_rows_{t}": (src, dict(defines, ROWS=1), opts)
    for t, (src, defines, opts) in [(k[len("top_k1_"):], v) for k, v in VARIANTS.items()
                                     if k.startswith("top_k1_") and not k.startswith("top_k1_sg_")]
})
VARIANTS.update({  # QLinearMatMul for decoding-sized M on integer dot products (ops/qlmm.py)
    "qlmm_dot": ("qlmm/qlmm_dot.comp", {}),
    "qlmm_dot_sk": ("qlmm/qlmm_dot.comp", {"SPLIT_K": 1}),
})
# QLinearMatMul for decoding-sized M, B streamed into cooperative matrices (ops/qlmm_stream.py): one module
# per tile shape (16 rows; columns NR with PF steps in flight), so spirv-opt (run twice) keeps the steps in
# registers.
for _mt in (16,):
    for _nr, _pf in ((32, 2), (64, 4)):
        for _sk in (0, 1):
            VARIANTS[f"qlmm_stream_m{_mt}n{_nr}p{_pf}" + ("_sk" if _sk else "")] = (
                "qlmm/qlmm_stream.comp", {"MT": f"{_mt}u", "NR": f"{_nr}u", "PF": f"{_pf}u", "SPLIT_K": _sk}, {"optimize": 2})
