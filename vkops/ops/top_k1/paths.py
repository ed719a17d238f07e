"""TOP_K1's path rule (pure): which path a call takes on a device, with how many chunks, workgroups and
shared entries, read from a `TopK1Tuning` (tuning.py; `DEFAULT` when none is passed). lowering.py lowers
the chosen Path to dispatches. The rule reads a call's Facts (facts.py) and the paths' sizing (sizing.py);
the measurements that set each knob are in docs/tuning/top_k1.md."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ...errors import ValidationError
from ...limits import Limits
from .tuning import DEFAULT, TopK1Tuning
from .sizing import (  # noqa: F401 (re-exported: paths.<name> is what tests and tools use)
    ROWS_SUBGROUP_OPS, SHUF_SUBGROUP_OPS, GRADIX_TIE_CAP, EPI, TUNE_GUESS, TUNE_SELECT, TUNE_FIT, SAMPLE_MIN_LEN,
    _pow2, merge_loads, merge_group, Path, NBINS, MAX_B, shared_bytes, module_shared_bytes, buffer_entries,
    GRADIX_SORT_RE, GRADIX_CHUNK_ALIGN, GRADIX_SORT_MIN_RUN, gradix_shared_bytes, gradix_digit_bits, gradix_shifts,
    gradix_sort_parts, gradix_path, tune_bits, ROWS_SUBGROUPS, ROWS_MAX_WG, ROWS_MIN_CAP, ROWS_MAX_CAP, rows_path,
    RSORT_MAX_E, RSORT_MAX_WG, RSORT_MIN_WG, rsort_shared_words, rsort_shared_bytes, rsort_path, radix_sort_entries,
    radix_sort_wg, GRADIX_BRACKET_OPS, GRADIX_BRACKET_WG, GRADIX_RESOLVE_SHARED, GRADIX_BRACKET_SAMPLE_BLOCKS,
    gradix_bracket_cap)
from .facts import (  # noqa: F401 (re-exported: paths.<name> is what tests and tools use)
    SHORT_CHUNK_STEPS, FEW_SHORT_CHUNK_STEPS, FEW_SHORT_MAX_SEQ, FEW_ROWS_CHUNK_KP, CHUNK_KP, CPU_CHUNK_B,
    CPU_CHUNK_STEPS, MAX_CHUNK_KEYS, COMPACT_CAP, Facts)


# force= names, one a path: each runs its own kernels/top_k1/<name>.comp (radix: radix.comp's chunks; the
# Path keeps path "filter" with radix=True, the chunk layout both share).
PATHS = ("rsort", "rows", "seg", "radix", "filter", "sort", "gradix")


@dataclass(frozen=True)
class Choice:
    """The path a call takes (a name of PATHS), why, and the numbers it picked (the Path: buffer, workgroup,
    chunks, cap, shuffles)."""

    path: str
    why: str
    plan: Path


# force=None: the first row whose condition holds runs (its name, the condition on the Facts, why). The
# conditions read the paths' own sizing (rsort_path, rows_path, Facts.filter) and the tuning;
# docs/tuning/top_k1.md "Which path runs where" is this table. `chunks` given (tests, sweeps) skips the
# subgroup paths.
AUTO_RULE = (
    ("gradix", lambda f: f.gradix_auto,
     "GRADIX: pow2(K) >= GRADIX_MIN_KP on rows of >= GRADIX_MIN_L, either <= GRADIX_FEW_SEQ rows of >= "
     "GRADIX_FEW_MIN_L or rows radix select cannot take (pow2(K) > B/2 past LARGE_K_ONE_CHUNK_MAX_L) or 8/16-bit "
     "keys from K = GRADIX_MIN_K (16-bit ones not on GRADIX_MIN_K16_RADIX_* rows) or 16/32-bit keys in rows of >= "
     "GRADIX_LONG_MIN_L from K >= GRADIX_LONG_MIN_K16 / "
     "GRADIX_LONG_MIN_K, where pow2(K) (key, index) pairs fit shared memory: a radix select of the K-th key over many "
     "workgroups a row, one compaction, one sort"),
    ("rsort", lambda f: f.chunks is None and f.rsort is not None and not f.short_fit_first,
     "RSORT: >= RSORT_MIN_SEQ rows of RSORT_MIN_L..RSORT_MAX_L (8-bit keys: RSORT_MAX_L8) with pow2(K) > "
     "ROWS_MAX_KP and subgroup ballot + arithmetic + shuffle (not the short fit's rows up to "
     "RADIX_SHORT_FIT_RSORT_KP / _KP16), or (RSORT_FOR_SORT) any rows it fits that only the global sort would take: "
     "one workgroup radix-sorts a row"),
    ("rows", lambda f: f.chunks is None and f.rows is not None,
     "ROWS: >= ROWS_MIN_SEQ rows of <= ROWS_MAX_L with pow2(K) <= ROWS_MAX_KP and subgroup ballot + arithmetic + "
     "shuffle (not the many rows longer than ROWS_RADIX_MIN_L with wide keys): one subgroup a row"),
    ("seg", lambda f: f.P <= f.B and not f.short_radix,
     "SEG: the padded row fits the buffer (pow2(L) <= B) and is no short radix row: rows bitonic-sorted in "
     "shared memory, several a workgroup"),
    ("radix", lambda f: f.fits_filter and f.chunked.radix or f.fits_one_chunk,
     "radix select: pow2(K) <= B/2, and pow2(K) >= RADIX_MIN_KP, a short row (B/2 < L <= 4B, K >= "
     "SHORT_ROW_RADIX_MIN_K), or pow2(K) >= RADIX_SHORT_MIN_KP on chunks <= RADIX_SHORT_CHUNK_B * B or in a wave; "
     "or B/2 < pow2(K) <= B on rows longer than B (up to LARGE_K_ONE_CHUNK_MAX_L): one chunk a row"),
    ("filter", lambda f: f.fits_filter,
     "threshold filter: pow2(K) <= B/2, chunks streamed once through a running K-th best"),
    ("sort", lambda f: True,
     "global bitonic sort: pow2(K) > B/2, and pow2(K) > B or rows that fit B or are longer than "
     "LARGE_K_ONE_CHUNK_MAX_L"),
)


def _auto(f: Facts, name: str) -> Path:
    return {"gradix": lambda: f.gradix, "rsort": lambda: f.rsort, "rows": lambda: f.rows, "seg": f.seg,
            "radix": lambda: f.chunked if f.fits_filter else f.one_chunk(),
            "filter": lambda: f.chunked, "sort": f.sort}[name]()


def _forced(f: Facts, force: str) -> Path:
    """The forced path, or ValidationError naming why it cannot run."""
    lim, length, k = f.limits, f.length, f.k
    if force == "gradix":
        p = f.gradix
        if p is None:
            parts = gradix_sort_parts(f.n_seq, f.Kp, f.t)
            what = "pow2(K)" if parts == 1 else f"pow2(K) / {parts} (its sort in {parts} parts)"
            raise ValidationError(f"gradix path needs {what} (key, index) pairs in shared memory for its sort: "
                                  f"{gradix_shared_bytes(f.Kp, parts)} bytes for K={k}; the device has {f.shared}")
        return p
    if force == "rsort" and lim is not None:
        p = rsort_path(lim, f.n_seq, length, k, force=True, t=f.t)
        if p is None:
            raise ValidationError(f"rsort path needs subgroup ballot + arithmetic + shuffle, rows of <= {RSORT_MAX_E} "
                                  f"elements an invocation and its counters in shared memory (128 words a "
                                  f"subgroup); got L={length} on {lim.name} (subgroups of "
                                  f"{lim.min_subgroup_size}-{lim.max_subgroup_size}, "
                                  f"{lim.shared_memory_bytes} bytes of shared memory)")
        return p
    if force == "rows" and lim is not None:
        p = rows_path(lim, f.n_seq, length, k, force=True, cap=f.chunks, key_bits=f.key_bits, t=f.t)
        if p is None:
            raise ValidationError(f"rows path needs subgroup ballot + arithmetic + shuffle and pow2(K) <= "
                                  f"{f.t.ROWS_MAX_KP}; got K={k} on {lim.name}")
        return p
    if force == "seg":
        if f.P > f.B:
            raise ValidationError(f"seg path needs pow2(L) <= {f.B}; got L={length}")
        return f.seg()
    if force == "radix" and not f.fits_filter and f.Kp <= f.B and f.chunks in (None, 1):
        return f.one_chunk()  # one chunk a row holds pow2(K) <= B (Facts.one_chunk)
    if force in ("filter", "radix"):
        if not f.fits_filter:
            more = f" (radix: pow2(K) <= {f.B} in one chunk a row)" if force == "radix" else ""
            raise ValidationError(f"{force} path needs pow2(K) <= {f.B // 2}{more}; got K={k}")
        return f.filter(radix=force == "radix", auto=False)
    if force == "sort":
        return f.sort()
    raise ValidationError(f"TOP_K1 force must be None or one of {', '.join(map(repr, PATHS))}; got {force!r}")


def decide(f: Facts, force: Optional[str] = None) -> Choice:
    """The path rule: AUTO_RULE's rows in order (the first that holds runs), or the forced path."""
    if force is not None:
        return Choice(force, f"forced: force={force!r}", _forced(f, force))
    for name, cond, why in AUTO_RULE:
        if (name not in ("rsort", "rows") or f.limits is not None) and cond(f):
            return Choice(name, why, _auto(f, name))
    raise AssertionError("the last row always holds")


def choose_path(n_seq: int, length: int, k: int, shared: int, *, target_groups: int = 1024,
                force: Optional[str] = None, chunks: Optional[int] = None, workgroup: int = DEFAULT.WORKGROUP,
                short_chunks: bool = False, key_bits: int = 32, tuning: TopK1Tuning = DEFAULT) -> Path:
    """The rule without subgroup paths on a bare shared-memory size (tests: an H100-sized device anywhere).
    `force` / `chunks` exist for tests (exercise every path on small data); `key_bits` (the element width)
    sets the buffer and workgroup of one radix chunk a row on many rows."""
    f = Facts(n_seq, length, k, shared=shared, target_groups=target_groups, short_chunks=short_chunks,
              workgroup=workgroup, key_bits=key_bits, chunks=chunks, t=tuning)
    return decide(f, force).plan




def choose(limits: Limits, n_seq: int, length: int, k: int, *, key_bits: int = 32, force: Optional[str] = None,
           chunks: Optional[int] = None, shuffle: Optional[bool] = None, tuning: TopK1Tuning = DEFAULT) -> Choice:
    """The path a call takes on a device, why, and the numbers it picked: the device's shared memory and
    workgroup target (a CPU device gets far fewer chunks), AUTO_RULE in order or the forced path.
    `force="rows"` takes ROWS wherever the device can run it, and then `chunks`, if given, is its candidate
    cap (a knob for bench sweeps). `shuffle` None: the _sg modules from pow2(K) = SHUF_MIN_KP (SHUF_SHORT_FIT_MIN_KP on
    RADIX_SHORT_FIT's rows) where the device has subgroup shuffles; True / False: tests and sweeps."""
    t = tuning
    if shuffle and not limits.has_subgroup(*SHUF_SUBGROUP_OPS):
        raise ValidationError(f"shuffle=True needs subgroup shuffles, which {limits.name} lacks")
    cpu = limits.device_type == "cpu"
    f = Facts(n_seq, length, k, shared=limits.shared_memory_bytes,
              target_groups=t.CPU_TARGET_GROUPS if cpu else t.TARGET_GROUPS, short_chunks=not cpu,
              workgroup=limits.workgroup(t.WORKGROUP), key_bits=key_bits, chunks=chunks, t=t, limits=limits)
    c = decide(f, force)
    if c.path in ("rows", "rsort"):
        return c
    if c.path == "gradix":
        # The survivors' sort by the register networks (top_k1_gradix_sort_sg_*, SHUF) where the device has
        # subgroup shuffles (`shuffle` False: the shared-memory networks), in a workgroup that holds pow2(K)
        # entries at GRADIX_SORT_RE a thread where the device allows (reg_fits in networks.glsl).
        # In parts (sort_parts > 1): a workgroup of a part's B entries at GRADIX_SORT_RE a thread (shared or register
        # networks alike).
        p = c.plan
        shuf = limits.has_subgroup(*SHUF_SUBGROUP_OPS) if shuffle is None else bool(shuffle)
        if p.sort_parts > 1:  # B >= GRADIX_SORT_MIN_RUN
            wg = limits.workgroup(p.B // GRADIX_SORT_RE)
        else:
            wg = limits.workgroup(max(p.sort_wg, p.Kp // GRADIX_SORT_RE)) if shuf else p.sort_wg
        return dataclasses.replace(c, plan=dataclasses.replace(p, shuf=shuf, sort_wg=wg))
    if c.plan.radix:  # forced radix too: the same chunks, the workgroup its sort wants
        c = dataclasses.replace(c, plan=radix_sort_wg(limits, c.plan, n_seq, length, k, key_bits, t))
    shuf = shuffle
    if shuf is None:
        kp = min(t.SHUF_SHORT_FIT_MIN_KP, t.SHUF_MIN_KP) if f.short_fit else t.SHUF_MIN_KP
        shuf = limits.has_subgroup(*SHUF_SUBGROUP_OPS) and c.plan.Kp >= kp
    return dataclasses.replace(c, plan=dataclasses.replace(c.plan, shuf=bool(shuf) and c.plan.path in ("seg", "filter")))


def device_path(limits: Limits, n_seq: int, length: int, k: int, **kw) -> Path:
    """choose()'s Path."""
    return choose(limits, n_seq, length, k, **kw).plan
