"""Every SPIR-V module vkops ships: name -> (source, -D defines[, compiler options]).

A folder per operator (kernels/<op>/), one .comp per algorithm, shared code in .glsl includes
(ggml-vulkan style); kernels/common.glsl holds the helpers every operator uses. Variants of one .comp
differ only in defines. Workgroup sizes and tile shapes are specialization constants chosen at run
time, not variants. Each operator's families are listed in a small table below and expanded by one
loop; no entry is derived from earlier ones.
"""
VARIANTS = {}

# SLICE1 (ops/slice1.py): one module per element width.
for _bits in (8, 16, 32):
    VARIANTS[f"slice1_b{_bits}"] = ("slice1/slice1.comp", {"ELEM_BITS": _bits})

# QUANTIZED_LINEAR_MATRIX_MULTIPLY (ops/qlmm.py, qlmm_coopmat.py, qlmm_dot.py): (module, .comp, defines).
QLMM = [
    ("qlmm", "qlmm.comp", {}),
    ("qlmm_coopmat", "qlmm_coopmat.comp", {"HAS_SUMS": 0}),
    ("qlmm_coopmat_zp", "qlmm_coopmat.comp", {"HAS_SUMS": 1}),
    ("qlmm_coopmat_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1}),
    ("qlmm_coopmat_zp_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "SPLIT_K": 1}),
    ("qlmm_coopmat_bt", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "BT": 1}),
    ("qlmm_coopmat_bt_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "BT": 1}),
    ("qlmm_coopmat_zp_bt", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "BT": 1}),
    ("qlmm_coopmat_zp_bt_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "SPLIT_K": 1, "BT": 1}),
    ("qlmm_coopmat_bc", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "BC": 1}),
    ("qlmm_coopmat_bc_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "BC": 1}),
    ("qlmm_coopmat_zp_bc", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "BC": 1}),
    ("qlmm_coopmat_zp_bc_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "SPLIT_K": 1, "BC": 1}),
    ("qlmm_coopmat_db", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "DB": 1}),
    ("qlmm_coopmat_zp_db", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "DB": 1}),
    ("qlmm_coopmat_bt_db", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "BT": 1, "DB": 1}),
    ("qlmm_coopmat_db_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "DB": 1}),
    ("qlmm_coopmat_zp_db_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 1, "SPLIT_K": 1, "DB": 1}),
    ("qlmm_coopmat_bt_db_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "BT": 1, "DB": 1}),
    ("qlmm_coopmat_direct", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "DIRECT_B": 1}),
    ("qlmm_coopmat_direct_sk", "qlmm_coopmat.comp", {"HAS_SUMS": 0, "SPLIT_K": 1, "DIRECT_B": 1}),
    ("qlmm_transpose", "qlmm_transpose.comp", {}),
    ("qlmm_dot", "qlmm_dot.comp", {}),
    ("qlmm_dot_sk", "qlmm_dot.comp", {"SPLIT_K": 1}),
]
for _name, _src, _defines in QLMM:
    VARIANTS[_name] = (f"qlmm/{_src}", _defines)
# QLinearMatMul for one or two rows: a matrix-vector product (ops/qlmm/gemv.py; MR rows), B row-major or (_bc)
# column-major.
for _mr in (1, 2):
    for _bc in (0, 1):
        for _sk in (0, 1):
            _name = ("qlmm_gemv" if _mr == 1 else f"qlmm_gemv_m{_mr}") + ("_bc" if _bc else "") + ("_sk" if _sk else "")
            # one row, column-major B, unsplit (the widest products: vocabulary heads): two 128-byte pieces of K in
            # flight a column, 1 x 4096 x 151936 0.2448 -> 0.2329 ms; split builds lost with it (docs/tuning/qlmm.md, session 35)
            bcu = {"BCU": "2u"} if _bc and _mr == 1 and not _sk else {}
            VARIANTS[_name] = ("qlmm/qlmm_gemv.comp", {"MR": f"{_mr}u", **({"BC": 1} if _bc else {}),
                                                       **({"SPLIT_K": 1} if _sk else {}), **bcu}, {"optimize": True})
# QLinearMatMul for decoding-sized M, B streamed into cooperative matrices (ops/qlmm_stream.py): one module
# per tile shape (16 rows; columns NR with PF steps in flight), so spirv-opt (run twice) keeps the steps in
# registers.
for _mt in (16,):
    for _nr, _pf in ((32, 2), (64, 4)):
        for _sk in (0, 1):
            VARIANTS[f"qlmm_stream_m{_mt}n{_nr}p{_pf}" + ("_sk" if _sk else "")] = (
                "qlmm/qlmm_stream.comp", {"MT": f"{_mt}u", "NR": f"{_nr}u", "PF": f"{_pf}u", "SPLIT_K": _sk},
                {"optimize": 2})

# TOP_K1 (ops/top_k1.py, paths in ops/top_k1_paths.py): one .comp per algorithm (kernels/top_k1/), each with
# its own push block (mirrored by ops/top_k1.py's PUSH). Key types: (suffix, ELEM_BITS, KIND), KIND 0 float,
# 1 signed, 2 unsigned. Families: (module prefix, .comp, key types, defines). SHUF=1 (the `_sg` families):
# the sorting networks' short strides in registers and subgroup shuffles (needs shuffle), planned for
# pow2(K) >= 1024. The ROWS and RSORT modules need subgroup ballot + arithmetic + shuffle; the others run
# on any Vulkan 1.1 device.
TOPK_TYPES = (("f32", 32, 0), ("f16", 16, 0), ("i32", 32, 1), ("i16", 16, 1), ("i8", 8, 1),
              ("u32", 32, 2), ("u16", 16, 2), ("u8", 8, 2))
GFILTER_TYPES = tuple(t for t in TOPK_TYPES if t[1] > 8)
GDIGIT_TYPES = tuple(t for t in TOPK_TYPES if t[1] == 32)
L1_TYPES = tuple(t for t in TOPK_TYPES if t[1] == 16)
TOPK = [
    ("top_k1_seg", "seg.comp", TOPK_TYPES, {}),                # SEG: whole short rows, G a workgroup
    ("top_k1_seg_sg", "seg.comp", TOPK_TYPES, {"SHUF": 1}),
    ("top_k1_filter", "filter.comp", TOPK_TYPES, {}),          # threshold filter (argmax at K = 1) + merge
    ("top_k1_filter_sg", "filter.comp", TOPK_TYPES, {"SHUF": 1}),
    ("top_k1_radix", "radix.comp", TOPK_TYPES, {}),            # radix select of chunks + merge
    ("top_k1_radix_sg", "radix.comp", TOPK_TYPES, {"SHUF": 1}),
    # radix select's passes by bit masks (TopK1Tuning.RADIX_MASK), keys of 16 and 32 bits (a thread's elements of a
    # block fit one 32-bit mask; 8-bit keys keep top_k1_radix[_sg]): no break/continue in the element loops, the
    # collect pass's survivors taken with one atomic a thread and block
    ("top_k1_radix_m", "radix.comp", GFILTER_TYPES, {"RADIX_MASK": 1}),
    ("top_k1_radix_m_sg", "radix.comp", GFILTER_TYPES, {"RADIX_MASK": 1, "SHUF": 1}),
    # ... one 16-byte load a thread and pass (RADIX_ONE_LOAD; TopK1Tuning.RADIX_ONE_LOAD_MAX_SEQ): 16-bit keys on one
    # row, whose one workgroup a chunk runs its code once (8-bit keys take one load in every radix build)
    ("top_k1_radix_l1", "radix.comp", L1_TYPES, {"RADIX_ONE_LOAD": 1}),
    ("top_k1_radix_l1_sg", "radix.comp", L1_TYPES, {"RADIX_ONE_LOAD": 1, "SHUF": 1}),
    ("top_k1_radix_m_l1", "radix.comp", L1_TYPES, {"RADIX_MASK": 1, "RADIX_ONE_LOAD": 1}),
    ("top_k1_radix_m_l1_sg", "radix.comp", L1_TYPES, {"RADIX_MASK": 1, "RADIX_ONE_LOAD": 1, "SHUF": 1}),
    # ... one chunk a row of at most 4 B keys (TopK1Tuning.RADIX_SHORT_BUILD, _MAX_SEQ): without the chunk merge, the sampled
    # guess and select_front, one load a thread and pass (their registers cost occupancy on thousands of short rows)
    ("top_k1_radix_s", "radix.comp", TOPK_TYPES, {"RADIX_SHORT": 1}),
    ("top_k1_radix_s_sg", "radix.comp", TOPK_TYPES, {"RADIX_SHORT": 1, "SHUF": 1}),
    ("top_k1_sort_tile", "sort_tile.comp", TOPK_TYPES, {}),    # global bitonic sort: tiles in shared memory
    ("top_k1_sort_global", "sort_global.comp", (None,), {}),   # ... and its global steps (keys only)
    ("top_k1_rows", "rows.comp", TOPK_TYPES, {}),              # ROWS: one subgroup a row
    ("top_k1_rsort", "rsort.comp", TOPK_TYPES, {}),            # RSORT: one workgroup's radix sort a row
    ("top_k1_gradix_hist", "gradix_hist.comp", TOPK_TYPES, {}),        # GRADIX: a digit pass, many workgroups a row
    ("top_k1_gradix_collect", "gradix_collect.comp", TOPK_TYPES, {}),  # ... the compaction of the K survivors
    ("top_k1_gradix_sort", "gradix_sort.comp", TOPK_TYPES, {}),        # ... their sort, one workgroup a row
    ("top_k1_gradix_sort_sg", "gradix_sort.comp", TOPK_TYPES, {"SHUF": 1}),
    ("top_k1_gradix_rank", "gradix_rank.comp", TOPK_TYPES, {}),        # ... or their ranks over many workgroups (few rows)
    ("top_k1_gradix_psort", "gradix_sort.comp", TOPK_TYPES, {"PSORT": 1}),  # ... or sorted in parts (GRADIX_SORT_PARTS)
    ("top_k1_gradix_psort_sg", "gradix_sort.comp", TOPK_TYPES, {"PSORT": 1, "SHUF": 1}),
    ("top_k1_gradix_pmerge", "gradix_pmerge.comp", TOPK_TYPES, {}),    # ... and the parts' runs merged by rank
    # GRADIX_BRACKET (16/32-bit keys): a sampled bracket of the K-th key, one read of the row, the candidates resolved
    ("top_k1_gradix_bracket", "gradix_bracket.comp", GFILTER_TYPES, {}),
    ("top_k1_gradix_bcollect", "gradix_bcollect.comp", GFILTER_TYPES, {}),
    ("top_k1_gradix_resolve", "gradix_resolve.comp", GFILTER_TYPES, {}),
    # GRADIX filtering (TopK1Tuning.GRADIX_FILTER), keys of 16 and 32 bits (8-bit keys have one digit: plain GRADIX):
    # the first digit's bucket compacted once, the later passes and the compaction over it (gradix.glsl)
    ("top_k1_gradix_fscan", "gradix_hist.comp", GFILTER_TYPES, {"GFILTER": 1}),
    ("top_k1_gradix_fhist", "gradix_hist.comp", GFILTER_TYPES, {"GFILTER": 2}),
    ("top_k1_gradix_fcollect", "gradix_collect.comp", GFILTER_TYPES, {"GFILTER": 1}),
    # GRADIX with 11-bit digits (TopK1Tuning.GRADIX_DIGIT_BITS = 11), 32-bit keys: 3 digit passes instead of 4; every
    # module after the passes too (the row's counters and the ties' histograms take 2048 and 1024 words: gradix.glsl)
    ("top_k1_gradix_hist_d11", "gradix_hist.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
    ("top_k1_gradix_collect_d11", "gradix_collect.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
    ("top_k1_gradix_sort_d11", "gradix_sort.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
    ("top_k1_gradix_sort_d11_sg", "gradix_sort.comp", GDIGIT_TYPES, {"GDIGIT": 11, "SHUF": 1}),
    ("top_k1_gradix_rank_d11", "gradix_rank.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
    ("top_k1_gradix_psort_d11", "gradix_sort.comp", GDIGIT_TYPES, {"GDIGIT": 11, "PSORT": 1}),
    ("top_k1_gradix_psort_d11_sg", "gradix_sort.comp", GDIGIT_TYPES, {"GDIGIT": 11, "PSORT": 1, "SHUF": 1}),
    ("top_k1_gradix_pmerge_d11", "gradix_pmerge.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
    ("top_k1_gradix_bcollect_d11", "gradix_bcollect.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
    ("top_k1_gradix_resolve_d11", "gradix_resolve.comp", GDIGIT_TYPES, {"GDIGIT": 11}),
]
for _prefix, _src, _types, _defines in TOPK:
    for _t in _types:
        _name, _d = (_prefix, dict(_defines)) if _t is None else (
            f"{_prefix}_{_t[0]}", {"ELEM_BITS": _t[1], "KIND": _t[2], **_defines})
        VARIANTS[_name] = (f"top_k1/{_src}", _d, {"optimize": True})

# Research modules (kernels/research/, names research_*): compiled, validated and in the manifest (libvkops embeds
# them too) like every module, but planned by no operator; bench/research scripts dispatch them through a Plan
# built by hand. The cooperative-matrix rate with no memory traffic (bench/research/coopmat_peak.py).
RESEARCH_PREFIX = "research_"
VARIANTS["research_coopmat_peak"] = ("research/coopmat_peak.comp", {})
# The time of reading a buffer and nothing else (bench/research/read_floor.py).
VARIANTS["research_read_floor"] = ("research/read_floor.comp", {})
# The same, a K x N matrix read in column strips as the small-M GEMM kernels read B (read_floor.py --strips).
VARIANTS["research_read_strips"] = ("research/read_strips.comp", {})
# GRADIX's digit pass on float32 cut down (bench/research/gradix_probe.py): 1 the loads alone, 2 with the keys and
# the prefix test, 3 with the shared histogram too; none merges its histogram into the row's.
for _probe in (1, 2, 3):
    VARIANTS[f"research_gradix_probe{_probe}"] = ("top_k1/gradix_hist.comp",
                                                  {"ELEM_BITS": 32, "KIND": 0, "GRADIX_PROBE": _probe}, {"optimize": True})
# GRADIX's compaction (gradix_collect.comp) cut down (bench/research/gradix_collect_probe.py), float32 and float16,
# each adding one part: 1 the loads alone, 2 with the row state and the keys' compare with T (counts only), 3 with
# the block's slots (shared atomics, two barriers, the row's global atomic), 4 with the survivors' writes (no cut-chunk
# tie list, no tail), 5 that without the slot round trip (whole-kernel variants 6-13 measured and removed: the tuning
# log, session 23).
GCOLLECT_PROBES = tuple(range(1, 6))
for _probe in GCOLLECT_PROBES:
    for _t in (("f32", 32), ("f16", 16)):
        VARIANTS[f"research_gcollect_probe{_probe}_{_t[0]}"] = (
            "top_k1/gradix_collect.comp", {"ELEM_BITS": _t[1], "KIND": 0, "GCOLLECT_PROBE": _probe}, {"optimize": True})

# The subgroup size a .comp's code assumes (the manifest's subgroup.size; any size where absent). The
# cooperative-matrix kernels lay out a workgroup as 32-lane subgroups (INV = 32 * SG_W * SG_H, NSG =
# gl_WorkGroupSize.x / 32u, lane loops of stride 32): ops/qlmm/coopmat.py plans them only where the
# device's subgroupSize is 32 (coopmat_supported), ops/qlmm/stream.py with workgroups of 32-lane subgroups.
# The subgroup-operation modules (top_k1 rows, rsort, *_sg_*) work at any size (rsort.comp has a <= 32 fast
# path; ballots read all four words).
SUBGROUP_SIZE = {"qlmm/qlmm_coopmat.comp": 32, "qlmm/qlmm_stream.comp": 32, "research/coopmat_peak.comp": 32}
