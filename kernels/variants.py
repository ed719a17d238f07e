"""Every SPIR-V module vkops ships: name -> (source, -D defines, compiler options).

One .comp per operator family; variants differ only in defines (ggml-vulkan style). Workgroup sizes
and tile shapes are specialization constants chosen at run time, not variants.
"""
VARIANTS = {
    "slice1_b8": ("slice1.comp", {"ELEM_BITS": 8}),
    "slice1_b16": ("slice1.comp", {"ELEM_BITS": 16}),
    "slice1_b32": ("slice1.comp", {"ELEM_BITS": 32}),
}
