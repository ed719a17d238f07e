"""QLinearMatMul plans over a grid of shapes, types, zero points, B layouts, device limits and forced
kernels, digested: tests/qlmm_plans.json holds what the planner made when it was written, so a refactor of
the planner (tests/test_qlmm_rule.py) is checked to leave every plan as it was. Rewrite the file only for
a change meant to alter plans: `.venv/bin/python tests/qlmm_plan_grid.py --write`.

`--dense FILE` writes one line per case of the unforced grid with every M in 1..300 (259200 cases, about
50 s): run it under two checkouts (PYTHONPATH=<checkout>) and compare the files; issue 35's refactor
compared its commit with the one before it this way: identical."""
import hashlib
import itertools
import json
import sys
from pathlib import Path

import numpy as np

import plan_grid
from vkops.errors import ValidationError
from vkops.limits import Limits
from vkops.ops import qlmm
from vkops.tensor import TensorDesc as T

FILE = Path(__file__).with_name("qlmm_plans.json")
H100, LAVAPIPE, LIMITS = plan_grid.H100, plan_grid.LAVAPIPE, plan_grid.LIMITS
PAPER_GEMV = Limits(name="256 invocations", max_workgroup_invocations=256, max_workgroup_size=(256, 256, 64),
                    shared_memory_bytes=32768)  # no subgroup operations, dot products or cooperative matrices
MS = tuple(range(1, 21)) + (24, 31, 32, 33, 48, 63, 64, 65, 100, 128, 129, 200, 256, 257, 300)
KS = (64, 1040, 4096)
NS = (20, 144, 4096, 11008)
SIGNS = (("int8", "int8"), ("uint8", "int8"), ("int8", "uint8"), ("uint8", "uint8"))
ZPS = ("none", "known", "device")  # no zero points; zero points the host knows (the offsets: free); unknown
LAYOUTS = ("rows", "cols")
FORCED = ("portable", "coopmat", "stream", "dot", "gemv")


def desc(M, K, N, adt, bdt, zp, layout, batch=1, b_batch=1):
    one = (1, 1, 1, 1)
    b = T(bdt, (b_batch, 1, K, N), (K * N if b_batch > 1 else 0, 0, 1, K)) if layout == "cols" else T(bdt, (b_batch, 1, K, N))
    return qlmm.QuantizedLinearMatMulDesc(
        T(adt, (batch, 1, M, K)), T("float32", (1, 1, M, 1)), None if zp == "none" else T(adt, one), b,
        T("float32", one), None if zp == "none" else T(bdt, one), T("float32", one), None,
        T(adt, (max(batch, b_batch), 1, M, N))).validate()


def known(adt, bdt, zp):
    if zp != "known":
        return None
    off = lambda dt: np.full((1, 1, 1, 1), 0 if dt == "int8" else 128, dt)  # noqa: E731
    return off(adt), off(bdt)


def one(lim, d, zps, **kw):
    """(note 'kernel' or the error, the plan's JSON) of one case."""
    try:
        p = qlmm.plan(d, lim, zero_points=zps, **kw)
    except (ValidationError, ValueError) as e:
        return f"{type(e).__name__}: {e}", ""
    return p.note("kernel"), p.to_json()


def products():
    """Every (limits, K, N, signedness, zero points, B layout) of the main grid, in the file's order."""
    return itertools.product(LIMITS.items(), KS, NS, SIGNS, ZPS, LAYOUTS)


def groups():
    """(group name, [(case name, lim, desc, zero points, plan kwargs)])."""
    for (ln, lim), K, N, (adt, bdt), zp, layout in products():
        g = f"{ln} K={K} N={N} {adt}x{bdt} zp={zp} b={layout}"
        yield g, [(M, lim, desc(M, K, N, adt, bdt, zp, layout), known(adt, bdt, zp), {}) for M in MS]
    for ln, lim in LIMITS.items():  # batches: folded into M (b shared) or not (b per batch)
        for b_batch in (1, 3):
            for layout in LAYOUTS:
                g = f"{ln} batch=3 b_batch={b_batch} b={layout}"
                yield g, [(M, lim, desc(M, 1040, 144, "uint8", "int8", "device", layout, 3, b_batch), None, {})
                          for M in (1, 5, 6, 16, 33, 100)]
    for kernel in FORCED:  # forced kernels, and the coopmat / stream configs and splits
        for ln, lim in LIMITS.items():
            for layout in LAYOUTS:
                g = f"{ln} kernel={kernel} b={layout}"
                yield g, [(M, lim, desc(M, K, N, "int8", "int8", "none", layout), None, {"kernel": kernel})
                          for M in (1, 2, 16, 17, 33, 100) for K, N in ((64, 20), (1040, 144), (4096, 4096))]
    yield "h100 configs", [(M, H100, desc(M, 4096, 4096, "uint8", "int8", "device", "rows"), None, kw)
                           for M in (1, 16, 100) for kw in (
                               {"kernel": "coopmat", "config": "64x64x64_2x2"}, {"kernel": "coopmat", "split_k": 3},
                               {"kernel": "coopmat", "config": "16x64x256_4x1", "split_k": 2},
                               {"kernel": "coopmat", "group_m": 2}, {"kernel": "stream", "config": "nr64"},
                               {"kernel": "stream", "config": "nr32", "split_k": 5}, {"kernel": "dot", "split_k": 2},
                               {"kernel": "gemv", "split_k": 3}, {"split_k": 2}, {"kernel": "stream", "config": "nr8"})]


def digest():
    """{group: {"plans": sha256 of every plan's JSON, "kernels": each case's kernel or error, as runs}}."""
    return plan_grid.digest(groups(), lambda c: one(c[1], c[2], c[3], **c[4]), "kernels")


runs, unrun = plan_grid.runs, plan_grid.unrun


def dense(path):
    with open(path, "w") as out:
        for (ln, lim), K, N, (adt, bdt), zp, layout in products():
            for M in range(1, 301):
                k, js = one(lim, desc(M, K, N, adt, bdt, zp, layout), known(adt, bdt, zp))
                sha = hashlib.sha1(js.encode()).hexdigest()[:12]
                out.write(f"{ln} {K} {N} {adt} {bdt} {zp} {layout} {M} {k[:40]} {sha}\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dense"]:
        dense(sys.argv[2])
    elif sys.argv[1:] == ["--write"]:
        d = digest()
        FILE.write_text("{\n" + ",\n".join(f"{json.dumps(g)}: {json.dumps(d[g])}" for g in sorted(d)) + "\n}\n")
        print(f"wrote {FILE}")
