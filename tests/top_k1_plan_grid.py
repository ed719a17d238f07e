"""TOP_K1 plans over a grid of row counts, row lengths, K, data types, directions, device limits and
forced paths, digested: tests/top_k1_plans.json holds what the planner made when it was written, so a
refactor of the path rule or the tuning (tests/test_top_k1_rule.py) is checked to leave every plan as it
was (kernel names, groups, specialization, push words, buffers: the plan's JSON). The lengths sit on the
workgroup and buffer boundaries and on the thresholds of the path rule (vkops/ops/top_k1 tuning: ROWS_MAX_L,
ROWS_RADIX_MIN_L, RSORT_*, WAVE_*, RADIX_*, ...). Rewrite the file only for a change meant to alter plans:
`PYTHONPATH=. .venv/bin/python tests/top_k1_plan_grid.py --write`."""
import json
import sys
from pathlib import Path

import plan_grid
from vkops.errors import ValidationError
from vkops.ops import top_k1
from vkops.tensor import TensorDesc as T

FILE = Path(__file__).with_name("top_k1_plans.json")
H100, LAVAPIPE, LIMITS = plan_grid.H100, plan_grid.LAVAPIPE, plan_grid.LIMITS
# Row lengths: workgroup and buffer boundaries (B = 256..2048, 4 B), ROWS_MAX_L, ROWS_RADIX_MIN_L,
# RSORT_MIN_L / RSORT_MAX_L, 8 filter steps, WAVE_MAX_L, LLM vocabularies, long rows.
LS = (1, 7, 100, 128, 129, 256, 257, 512, 513, 1024, 1025, 1600, 1601, 2048, 2049, 4096, 4097, 8192, 8193,
      16384, 32000, 32768, 65537, 151936, 262144, 262145, 1 << 20)
NSEQ = (1, 3, 24, 32, 64, 256, 257, 512, 1024, 4096)
KS = (1, 2, 8, 50, 64, 65, 128, 129, 256, 257, 1000, 1024, 1025, 3000)
DTYPES = ("float32", "float16", "uint8")
FORCED = (("seg", None), ("filter", None), ("filter", 4), ("radix", None), ("radix", 1), ("sort", None),
          ("rows", None), ("rows", 64), ("rsort", None))


def desc(n, L, K, dtype="float32", direction="decreasing", axis=1):
    shape = (n, L) if axis == 1 else (L, n)
    o = tuple(K if i == axis else s for i, s in enumerate(shape))
    return top_k1.TopK1Desc(T(dtype, shape), T(dtype, o), T("uint32", o), axis, K,
                            top_k1.AxisDirection.of(direction)).validate()


def one(lim, d, **kw):
    """(note 'path chunks shuffle' or the error, the plan's JSON) of one case."""
    try:
        p = top_k1.plan(d, lim, **kw)
    except (ValidationError, ValueError) as e:
        return f"{type(e).__name__}: {e}", ""
    return f"{p.note('path')} {p.note('chunks')}{' sg' if p.note('shuffle') else ''}", p.to_json()


def groups():
    """(group name, [(case name, lim, desc, plan kwargs)])."""
    for ln, lim in LIMITS.items():
        for dt in DTYPES:
            for L in LS:
                yield f"{ln} {dt} L={L}", [(f"{n}x{L} K={K}", lim, desc(n, L, K, dt), {})
                                           for n in NSEQ for K in KS if K <= L and n * L < 2**32]
    for ln, lim in LIMITS.items():  # directions, other key widths, a strided axis
        for dt in ("int32", "int16", "int8", "uint32", "uint16"):
            yield f"{ln} {dt} increasing", [(f"{n}x{L} K={K}", lim, desc(n, L, K, dt, "increasing"), {})
                                            for n in (1, 1024) for L in (100, 2048, 8193, 151936) for K in (1, 8, 64, 256) if K <= L]
        yield f"{ln} float32 axis 0", [(f"{L}x{n} K={K}", lim, desc(n, L, K, "float32", "increasing", 0), {})
                                       for n in (1, 5, 600) for L in (100, 3000, 40000) for K in (1, 64, 1000) if K <= L]
    for force, chunks in FORCED:  # forced paths, chunks, shuffles, tune bits
        for ln, lim in LIMITS.items():
            yield f"{ln} force={force} chunks={chunks}", [
                (f"{n}x{L} K={K}", lim, desc(n, L, K, "float16"), {"force": force, "chunks": chunks})
                for n in (1, 600) for L in (100, 1000, 3000, 40000) for K in (1, 8, 300, 2000) if K <= L]
    for ln, lim in LIMITS.items():
        yield f"{ln} switches", [(f"{n}x{L} K={K} {kw}", lim, desc(n, L, K), kw)
                                 for n in (1, 1024) for L in (1000, 40000) for K in (8, 300)
                                 for kw in ({"shuffle": False}, {"shuffle": True}, {"tune": 0}, {"tune": 3})]


def digest():
    """{group: {"plans": sha256 of every plan's JSON, "paths": each case's path or error, as runs}}."""
    return plan_grid.digest(groups(), lambda c: one(c[1], c[2], **c[3]), "paths")


runs, unrun = plan_grid.runs, plan_grid.unrun


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        d = digest()
        FILE.write_text("{\n" + ",\n".join(f"{json.dumps(g)}: {json.dumps(d[g])}" for g in sorted(d)) + "\n}\n")
        print(f"wrote {FILE}")
