"""TOP_K1 against torch.topk(..., sorted=True): a preset of `python -m vkops bench` (vkops/bench/).

    python bench/bench_top_k1.py               # docs/performance/top_k1.md's grid = python -m vkops bench --op top_k --preset paper --against torch
    python bench/bench_top_k1.py --grid llm    # LLM vocabularies = ... --preset llm
    python bench/bench_top_k1.py --small       # CPU-driver shapes (the default on one) = ... --preset small

    python bench/bench_top_k1.py --grid rows   # many short rows: ROWS and RSORT against the workgroup paths (forced)

Research flags, kept here: --workgroup N (TOP_K1's wanted workgroup size: the tuning's WORKGROUP of every
vkops row but the default one, and one more vkops row with it alone),
--sweep-chunks 2,4,8,16 [--force filter|radix|seg|sort|rows|rsort] (one more vkops row per forced chunk count;
with rows: per candidate cap),
--only 1x151936,8x32000, --dtypes float16 and --k 256,1024 (subsets of the grid). Every row is checked against
vkops.reference (the old --no-check is gone).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import vkops  # noqa: E402
from vkops.bench import cases, commands, presets, runner, timing  # noqa: E402


# Many short rows (ROWS, one subgroup per row, and RSORT, one workgroup's radix sort per row, against SEG and
# radix select); 2048 x 8192 is past ROWS_MAX_L.
ROWS_GRID = [cases.top_k_case(shape, dt, k) for dt, shape, ks in (
    ("float32", (32768, 1024), (1, 8, 64, 256, 1024)), ("float32", (16384, 2048), (1, 8, 64, 256, 1024)),
    ("float32", (4096, 4096), (1, 8, 64, 256, 1024)), ("float32", (2048, 8192), (8, 64, 256)),
    ("float32", (512, 1024), (8, 64, 256, 1024)), ("float32", (2048, 1024), (1024,)), ("float32", (8192, 1024), (1024,)),
    ("float32", (1, 1024), (1024,)), ("float32", (64, 1024), (512, 1024)), ("float32", (256, 1024), (1024,)),
    ("float32", (2048, 2048), (1024,)), ("float32", (1024, 4096), (1024,)), ("float16", (16384, 2048), (1024,)),
    ("float16", (32768, 1024), (8, 256, 1024)),
    ("uint8", (32768, 1024), (8, 256, 1024)))
    for k in ks]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--grid", default="default", choices=["default", "llm", "rows"])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--only", default=None, help="shapes to run, e.g. 1x151936,8x32000")
    ap.add_argument("--k", default=None, help="values of K to run, e.g. 256,1024")
    ap.add_argument("--dtypes", default=None, help="dtypes to run, e.g. float32")
    ap.add_argument("--against", default="torch", help="baselines (default torch)")
    ap.add_argument("--workgroup", type=int, default=None, help="TOP_K1's wanted workgroup size (default 512)")
    ap.add_argument("--force", default=None, choices=["filter", "radix", "seg", "sort", "rows", "rsort"],
                    help="with --sweep-chunks")
    ap.add_argument("--sweep-chunks", default=None, help="e.g. 2,4,8,16: a vkops row per forced chunk count")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    small = args.small or vkops.Device().device_type == "cpu"
    preset = "small" if small else ("llm" if args.grid == "llm" else "paper")
    grid = ROWS_GRID if args.grid == "rows" else presets.top_k(preset)
    cases = [c for c in grid if (not args.only or c.shape_text in args.only.split(","))
             and (not args.dtypes or c.dtype in args.dtypes.split(","))
             and (not args.k or c.params["k"] in map(int, args.k.split(",")))]
    variants = {}
    if args.grid == "rows":  # every short-row path forced (a path that cannot take a case is listed as skipped)
        variants = {f: {"force": f} for f in ("rows", "rsort", "radix", "seg")}
    for c in map(int, (args.sweep_chunks or "").split(",") if args.sweep_chunks else []):
        variants[f"chunks={c}" + (f" {args.force}" if args.force else "")] = {"chunks": c, "force": args.force}
    if args.workgroup:  # a tuning, part of each plan's key: the default row stays beside as the baseline
        knobs = {"WORKGROUP": args.workgroup}
        variants = {f"{n} wg={args.workgroup}": dict(v, knobs=knobs) for n, v in variants.items()}
        variants[f"wg={args.workgroup}"] = {"knobs": knobs}
    cfg = runner.Config(cases=cases, against=[a for a in args.against.split(",") if a and a != "none"],
                        out=Path(args.out or commands.default_out(HERE / "results")), variants=variants, preset=preset,
                        method=timing.Method(reps=args.reps), command=["python"] + sys.argv)
    sys.exit(commands.finish(*runner.run(cfg)))


if __name__ == "__main__":
    main()
