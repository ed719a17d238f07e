"""TOP_K1's lowering (pure): `plan()` and `lower()`, the push-constant mirrors `PUSH`. Which path a call
takes is decided by the rules in paths.py (pure); each path runs kernels/top_k1/<algorithm>.comp,
module top_k1_<algorithm>[_m][_sg]_<type> (PUSH mirrors each one's push block):
  rows    many rows of <= ROWS_MAX_L with pow2(K) <= 256, on devices with subgroup ballot + arithmetic + shuffle:
          one subgroup per row, radix select over a subgroup-private histogram, no workgroup barrier
          (rows.comp; rows of <= 32 keys per lane stay in registers). Thousands of rows
          longer than ROWS_RADIX_MIN_L with 16- or 32-bit keys and K >= 2 take radix select instead.
  seg     the padded row (pow2 >= L) fits the shared buffer: G rows per workgroup, one dispatch (seg.comp;
          rows of more than B/2 only for K = 1 or pow2(K) > B/2; see below).
  filter  longer rows with pow2(K) <= B/2: each workgroup streams a chunk once, keeping only elements
          that beat its running K-th best; several chunks per row merge in the same dispatch (the
          last workgroup to finish a row reduces the chunks' candidates and writes the row): filter.comp
          (K = 1: each thread's own best, no threshold).
          From pow2(K) >= RADIX_MIN_KP, and on short rows (B/2 < L <= 4B) from K = 2, a chunk is
          reduced by radix select instead (8-bit key digits until the keys at or above the K-th
          key's prefix fit the buffer, a position select among ties), then sorted once: radix.comp.
  rsort   >= 64 rows of 513..2048 with pow2(K) > 256, on devices with subgroup ballot + arithmetic + shuffle: one
          workgroup radix-sorts the whole row in shared memory (8-bit digits, ballot-matched ranks: a
          stable order, so ties keep ascending indices), then writes its first K
          (rsort.comp).
          B/2 < pow2(K) <= B on rows longer than B: radix select, one chunk a row (no merge: it needs two
          runs of pow2(K) in the buffer).
  gradix  pow2(K) >= GRADIX_MIN_KP on up to GRADIX_FEW_SEQ rows of >= GRADIX_FEW_MIN_L, or K >= GRADIX_MIN_K on
          rows of >= GRADIX_MIN_L (16-bit keys: not on GRADIX_MIN_K16_RADIX_* rows), or (16/32-bit keys) K >=
          GRADIX_LONG_MIN_K16 / _K on rows of >= GRADIX_LONG_MIN_L, or
          pow2(K) >= GRADIX_RANK_MIN_KP on up to GRADIX_RANK_MAX_SEQ rows (paths.AUTO_RULE's first row; force="gradix"
          anywhere it fits): the K-th key by a radix select over many workgroups a row (one gradix_hist.comp dispatch
          per digit: 32-bit keys in 11/11/10-bit digits, the _d11 modules, GRADIX_DIGIT_BITS; narrower keys in 8-bit ones,
          the row's last workgroup to arrive picks the digit), one compaction of the K survivors (gradix_collect:
          keys above the K-th, and its ties with the smallest indices) and their bitonic sort in shared
          memory, one workgroup a row (gradix_sort; gradix_sort_sg with subgroup shuffles: its short strides in
          registers); GRADIX_SORT_PARTS > 1 sorts it in parts, several workgroups a row (gradix_psort), and merges
          the parts' sorted runs by rank, one thread a survivor (gradix_pmerge). GRADIX_BRACKET
          (sizing.gradix_bracket_cap: 32-bit keys in rows of >= 32000 on 3-64 rows, where its candidates fit) replaces the digit passes and the
          compaction: a sample brackets the K-th key (gradix_bracket), one read of the row keeps the keys above the
          bracket and those in it (gradix_bcollect), one workgroup a row takes the candidates it needs, or selects
          exactly where the bracket missed (gradix_resolve).
  sort    pow2(K) > B on long rows: a global bitonic sort of (key, index) rows in a scratch
          buffer, O(log^2) dispatches (sort_tile.comp in shared memory, sort_global.comp the long strides);
          the last one writes the first K.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...dtypes import DataType
from ...errors import DeviceLimitError
from ... import native
from ...limits import Limits
from ...plan import Builder, Plan, Ref
from ...tensor import TensorDesc, merge_dims
from ..slice1 import lower_packed
from .desc import AxisDirection, TopK1Desc
from .paths import Path, device_path, gradix_digit_bits, gradix_shifts, tune_bits
from . import sizing
from .tuning import DEFAULT, TopK1Tuning

SENT_IDX = 0xFFFFFFFF
GRADIX_CTR_EXTRA = 2  # a row's counters in gradix.glsl (CTR_WORDS): the digit's 2^bits histogram bins, then arrival, survivor slots

_KERNELS = {DataType.FLOAT32: "f32", DataType.FLOAT16: "f16", DataType.INT32: "i32", DataType.INT16: "i16",
            DataType.INT8: "i8", DataType.UINT32: "u32", DataType.UINT16: "u16", DataType.UINT8: "u8"}


# Host mirrors of each kernels/top_k1/<algorithm>.comp's push-constant block, one meaning a field
# (tests/test_manifest.py checks each against the SPIR-V): the row's shape first, the algorithm's own
# fields, then the merged non-axis dimensions.
_HEAD = ("n_groups", "n_seq", "L", "K", "Kp", "flip", "axis_stride", "inner", "n_other")
_KEYS = ("n_groups", "L", "K", "flip", "axis_stride", "inner", "n_other")  # modules without n_seq, Kp
_OTHER = [("o_sizes", "<u4", 6), ("o_strides", "<u4", 6)]


def _push(fields, other=True) -> np.dtype:
    return np.dtype([(f, "<u4") for f in fields] + (_OTHER if other else []))


PUSH = {
    "seg": _push(_HEAD + ("G", "P")),
    "filter": _push(_HEAD + ("chunks", "chunk_len", "merge_group", "vec", "cap")),
    "radix": _push(_HEAD + ("chunks", "chunk_len", "merge_group", "vec", "tune")),
    "sort_tile": _push(_KEYS + ("tiles", "P", "size")),
    "sort_global": _push(("n_groups", "step_groups", "P", "size", "stride"), other=False),
    "rows": _push(_KEYS[:1] + ("n_seq",) + _KEYS[1:] + ("G", "vec", "cap")),
    "rsort": _push(_KEYS),
}
# GRADIX's modules share one push block (kernels/top_k1/gradix.glsl).
PUSH.update(dict.fromkeys(("gradix_hist", "gradix_collect", "gradix_sort", "gradix_fscan", "gradix_fhist",
                           "gradix_fcollect", "gradix_rank", "gradix_psort", "gradix_pmerge", "gradix_bracket",
                           "gradix_bcollect", "gradix_resolve"),
                          _push(_HEAD + ("chunks", "chunk_len", "vec", "shift", "last"))))


def algorithm(kernel: str) -> str:
    """The algorithm (a key of PUSH, a .comp of kernels/top_k1/) of a TOP_K1 module name."""
    name = kernel[len("top_k1_"):]
    for a in sorted(PUSH, key=len, reverse=True):
        if name == a or name.startswith(a + "_"):
            return a
    raise KeyError(kernel)


MAX_OTHER_DIMS = 6

def plan(desc: TopK1Desc, limits: Limits, *, force: Optional[str] = None, chunks: Optional[int] = None,
         shuffle: Optional[bool] = None, tune: Optional[int] = None, tuning: Optional[TopK1Tuning] = None) -> Plan:
    """The dispatches of a validated TOP_K1 (no device) under `tuning` (DEFAULT when None). `force` /
    `chunks` / `shuffle` / `tune` pick a path for tests. Without them and under the default tuning, libvkops'
    planner (vkops.native) where the library loaded; else python_plan()."""
    if force is None and chunks is None and shuffle is None and tune is None and \
            (tuning is None or tuning == DEFAULT) and native.enabled():
        return native.plan(native.OP_TOP_K1, desc, limits)
    return python_plan(desc, limits, force=force, chunks=chunks, shuffle=shuffle, tune=tune, tuning=tuning)


def python_plan(desc: TopK1Desc, limits: Limits, *, force: Optional[str] = None, chunks: Optional[int] = None,
                shuffle: Optional[bool] = None, tune: Optional[int] = None,
                tuning: Optional[TopK1Tuning] = None) -> Plan:
    """plan() by the Python lowering (pure), whatever the options: the planner libvkops' is checked against."""
    b = Builder("top_k1", limits)
    x = b.input(desc.input, "input")
    v, i = b.output(desc.output_value, "output_value"), b.output(desc.output_index, "output_index")
    p = lower(b, desc, x, v, i, force=force, chunks=chunks, shuffle=shuffle, tune=tune, tuning=tuning)
    b.notes.update(path="radix" if p.radix else p.path, chunks=p.chunks, shuffle=p.shuf)
    return b.finish()


def lower(b: Builder, desc: TopK1Desc, x: Ref, values: Ref, indices: Ref, *, force: Optional[str] = None,
          chunks: Optional[int] = None, shuffle: Optional[bool] = None, tune: Optional[int] = None,
          tuning: Optional[TopK1Tuning] = None) -> Path:
    """Dispatch TOP_K1 of `x` into packed `values` and `indices` under `tuning` (DEFAULT when None)."""
    t = DEFAULT if tuning is None else tuning
    lim = b.limits
    inp = desc.input
    axis, K = int(desc.axis), int(desc.k)
    sizes = inp.sizes

    def other_dims(strides):  # the non-axis dimensions, merged where they walk memory evenly
        return merge_dims([s for i, s in enumerate(sizes) if i != axis],
                          [t for i, t in enumerate(strides) if i != axis])

    strides = x.desc.element_strides
    other = other_dims(strides)
    if len(other) > MAX_OTHER_DIMS:
        # Strides that fold into no fewer than 7 dimensions: copy to a packed tensor first.
        x = lower_packed(b, x)
        strides = x.desc.element_strides
        other = other_dims(strides)
    L = sizes[axis]
    n_seq = inp.element_count // L
    inner = int(np.prod(sizes[axis + 1:], dtype=np.int64))
    bits = inp.data_type.bits
    p = device_path(lim, n_seq, L, K, force=force, chunks=chunks, shuffle=shuffle, key_bits=bits, tuning=t)
    tname = _KERNELS[inp.data_type]
    ev = 128 // bits
    flip = 0xFFFFFFFF if desc.axis_direction == AxisDirection.INCREASING else 0
    shape = dict(n_seq=n_seq, L=L, K=K, Kp=p.Kp, flip=flip, axis_stride=strides[axis], inner=inner, n_other=len(other),
                 vec=int(strides[axis] == 1 and L % ev == 0 and all(t % ev == 0 for _, t in other)))

    def dispatch(alg, buffers, writes, n_groups, spec, sg=False, var="", **fields):
        """One dispatch of kernels/top_k1/<alg>.comp (its `t` module, `var` a variant's suffix such as radix's "_m",
        `_sg` with shuffles), its push block filled from the row's shape and `fields`."""
        pc = np.zeros((), PUSH[alg])
        for f, v in dict(shape, n_groups=n_groups, **fields).items():
            if f in pc.dtype.names:
                pc[f] = v
        if "o_sizes" in pc.dtype.names:
            for i, (size, stride) in enumerate(other):
                pc["o_sizes"][i], pc["o_strides"][i] = size, stride
        kernel = f"top_k1_{alg}" + var + ("_sg" if sg else "") + ("" if alg == "sort_global" else f"_{tname}")
        b.dispatch(kernel, buffers, writes=writes, groups=lim.grid(n_groups, "TOP_K1"),
                   push=pc.reshape(1).view(np.uint32), spec=spec)

    spec = (p.workgroup, p.B)
    if p.path == "gradix":
        C = p.chunks
        # few rows (GRADIX_RANK_MAX_SEQ): the survivors ranked by gradix_rank in (row, i-tile, j-tile) workgroups,
        # its rank counters (K a row) and each (row, i-tile)'s arrival counter after the rows' counters
        rank = n_seq <= t.GRADIX_RANK_MAX_SEQ
        ti, tj = p.workgroup * t.GRADIX_RANK_E, t.GRADIX_RANK_TJ
        ni, nj = -(-K // ti), -(-K // tj)
        # GRADIX_DIGIT_BITS = 11 (32-bit keys): digits of 11, 11, 10 bits, each module's _d11 variant (gradix.glsl)
        digit = gradix_digit_bits(bits, lim.shared_memory_bytes, t)
        shifts = gradix_shifts(bits, digit)
        var = "_d11" if digit == 11 else ""
        cw = (1 << digit) + GRADIX_CTR_EXTRA
        ctr = b.counters(n_seq * (cw + K + ni) if rank else n_seq * cw)
        tie_bins = 1 << (bits - digit * (len(shifts) - 1))  # the last digit's bins: 256 (10 bits: 1024)
        words = 2 * n_seq + n_seq * C * tie_bins + 2 * n_seq * K  # gradix.glsl's `work`: row state, ties, survivors
        # GRADIX_BRACKET: the K-th key bracketed from a sample (gradix_bracket), the row read once (gradix_bcollect),
        # the candidates resolved a row (gradix_resolve), instead of the digit passes and the compaction; the same sort
        cap = sizing.gradix_bracket_cap(n_seq, L, K, bits, lim, t)
        brk = cap > 0
        filt = t.GRADIX_FILTER and bits > 8 and not brk  # 8-bit keys: one digit, nothing to filter
        if filt:  # ... then each chunk's candidate count and its candidates' keys and indices
            words += n_seq * C + 2 * n_seq * C * p.chunk_len
        if brk:  # ... then each row's candidates, (key, index) pairs
            words += 2 * n_seq * cap
        if words * 4 > lim.max_storage_buffer_range:
            raise DeviceLimitError(
                f"TOP_K1 by GRADIX with k={K} on {n_seq} rows of {L} in {C} chunks needs {words * 4} bytes of "
                f"scratch: more than {lim.name}'s maxStorageBufferRange of {lim.max_storage_buffer_range} bytes")
        work = b.scratch(TensorDesc(DataType.UINT32, (words,)))
        fields = dict(chunks=C, chunk_len=p.chunk_len)
        if brk:
            dispatch("gradix_bracket", [x, work], [1], n_seq, (sizing.GRADIX_BRACKET_WG,), False, "", **fields)
            dispatch("gradix_bcollect", [x, work, ctr], [1, 2], n_seq * C, (p.workgroup, cap), False,
                     var, **fields)
            dispatch("gradix_resolve", [x, work, ctr], [1, 2], n_seq, (sizing.GRADIX_BRACKET_WG, cap), False, var,
                     **fields)
        else:
            for j, shift in enumerate(shifts):  # digits from the most significant
                # filtering: the second pass compacts the first digit's bucket, the later ones read only it
                alg = "gradix_hist" if not filt or j == 0 else "gradix_fscan" if j == 1 else "gradix_fhist"
                dispatch(alg, [x, work, ctr], [1, 2], n_seq * C, (p.workgroup,), False, var, shift=shift,
                         last=int(j == len(shifts) - 1), **fields)
            dispatch("gradix_fcollect" if filt else "gradix_collect", [x, work, ctr], [1, 2], n_seq * C,
                     (p.workgroup,), False, var, **fields)
        if rank:
            dispatch("gradix_rank", [x, values, indices, work, ctr], [1, 2, 4], n_seq * ni * nj,
                     (p.workgroup, tj, t.GRADIX_RANK_E), False, var, **fields)
        elif p.sort_parts > 1:
            # the sort in parts (GRADIX_SORT_PARTS): each part's run sorted in place in `work` (part 0 zeroes the
            # survivors' slot counter), then one thread a survivor ranks it across the runs and writes it out
            dispatch("gradix_psort", [work, ctr], [0, 1], n_seq * p.sort_parts, (p.sort_wg, p.B), p.shuf, var, **fields)
            dispatch("gradix_pmerge", [x, values, indices, work], [1, 2], n_seq * -(-K // p.workgroup),
                     (p.workgroup, p.B), False, var, **fields)
        else:
            dispatch("gradix_sort", [x, values, indices, work, ctr], [1, 2, 4], n_seq, (p.sort_wg, p.B), p.shuf, var,
                     **fields)
    elif p.path == "rows":  # G rows a workgroup, one a subgroup
        dispatch("rows", [x, values, indices], [1, 2], -(-n_seq // p.G), spec, G=p.G, cap=p.cap or p.B)
    elif p.path == "rsort":  # one row a workgroup; its counters' size a specialization constant
        dispatch("rsort", [x, values, indices], [1, 2], n_seq, spec + (p.rs_sh,))
    elif p.path == "seg":
        dispatch("seg", [x, values, indices], [1, 2], -(-n_seq // p.G), spec, p.shuf, G=p.G, P=p.P)
    elif p.path == "filter":
        alg = "radix" if p.radix else "filter"
        # RADIX_MASK: the top_k1_radix_m[_sg] modules (16/32-bit keys: a thread's elements of a block fit one mask word)
        # on chunks of >= RADIX_MASK_MIN_L elements (a row's one chunk: the row's length)
        var = "_m" if p.radix and t.RADIX_MASK and bits > 8 and min(p.chunk_len, L) >= t.RADIX_MASK_MIN_L else ""
        if p.radix and bits == 16 and n_seq <= t.RADIX_ONE_LOAD_MAX_SEQ:  # one load a thread and pass (RADIX_ONE_LOAD)
            var += "_l1"
        fields = dict(chunk_len=p.chunk_len, cap=p.cap or p.B,
                      tune=tune_bits(p, n_seq, L, K, bits, t) if tune is None else tune)
        # RADIX_SHORT_BUILD: one chunk of <= 4 B keys, no TUNE_* bit, on the register networks (or on at most
        # RADIX_SHORT_BUILD_MAX_SEQ rows): the slim build (top_k1_radix_s[_sg])
        if (p.radix and not var and t.RADIX_SHORT_BUILD and p.chunks == 1 and L <= 4 * p.B and fields["tune"] == 0
                and (p.shuf or n_seq <= t.RADIX_SHORT_BUILD_MAX_SEQ)):
            var = "_s"
        ctr = b.counters(1)  # bound but unused unless several chunks share a row
        if p.chunks == 1:
            dispatch(alg, [x, values, indices, ctr, ctr], [1, 2], n_seq, spec, p.shuf, var, chunks=1, **fields)
        else:
            # counters: one a row, then (two-level merge) one a merge group of each row
            groups = -(-p.chunks // p.merge_group) if p.merge_group else 0
            ctr = b.counters(n_seq * (1 + groups))
            cand = b.scratch(TensorDesc(DataType.UINT32, (n_seq * p.chunks * K * 2,)))
            dispatch(alg, [x, values, indices, cand, ctr], [1, 2, 3, 4], n_seq * p.chunks, spec, p.shuf, var,
                     chunks=p.chunks, merge_group=p.merge_group or p.chunks, **fields)
    else:
        P, B = p.P, p.B
        words = n_seq * P * 2
        if words * 4 > lim.max_storage_buffer_range:
            raise DeviceLimitError(
                f"TOP_K1 with k={K} on rows of {L} sorts {n_seq} padded rows of {P} (key, index) pairs: "
                f"{words * 4} bytes exceed {lim.name}'s maxStorageBufferRange of "
                f"{lim.max_storage_buffer_range} bytes")
        cand = b.scratch(TensorDesc(DataType.UINT32, (words,)))
        tiles = P // B
        # sort_tile's specialization constant 2 (INIT): the first dispatch loads its tiles from the input
        dispatch("sort_tile", [x, values, indices, cand], [3], n_seq * tiles, spec + (1,), tiles=tiles, P=P, size=B)
        size = 2 * B
        while size <= P:
            stride = size // 2
            while stride >= B:
                step_groups = -(-(P // 2) // p.workgroup)
                dispatch("sort_global", [cand], [0], n_seq * step_groups, (p.workgroup,), step_groups=step_groups,
                         P=P, size=size, stride=stride)
                stride //= 2
            writes = [1, 2] if size == P else [3]
            dispatch("sort_tile", [x, values, indices, cand], writes, n_seq * tiles, spec + (0,), tiles=tiles, P=P,
                     size=size)
            size *= 2
    return p
