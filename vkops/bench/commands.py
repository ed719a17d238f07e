"""The `bench`, `report` and `info` commands of `python -m vkops` (vkops/cli.py dispatches): their
arguments, the checks that turn bad ones into usage errors naming the option, and what they print."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import List

from .cases import OPS, QLMM_DTYPES, WINDOWS, cases_for, check_case
from .presets import PRESETS, cases as preset_cases

AGAINST = ("torch", "numpy", "onnxruntime")


def _shape(text: str):
    try:
        dims = tuple(int(v) for v in text.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 64x4096, got {text!r}") from None
    if not dims:
        raise argparse.ArgumentTypeError(f"expected sizes like 64x4096, got {text!r}")
    return dims


def _list(text: str) -> List[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _ints(text: str) -> List[int]:
    try:
        return [int(v) for v in _list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None


def default_out(fallback="bench/results") -> str:
    """Where results go without --out: $OUT (the folder a lent GPU machine sends back), else `fallback`."""
    return os.environ.get("OUT") or str(fallback)


def add_bench(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "bench", help="time operators against torch, NumPy and ONNX Runtime; JSON results",
        description="Time vkops' operators on a Vulkan device beside the baselines asked for, check every "
                    "output against vkops.reference, print a table and write one JSON document (schema: "
                    "vkops/bench/schema.py) to --out. Ctrl-C keeps the rows measured so far.")
    p.add_argument("--op", choices=OPS + ("all",), default="all", help="operator (default all)")
    p.add_argument("--preset", choices=PRESETS + ("decode",), help="a shape sweep: small (CPU drivers, seconds), paper "
                   "(the tables of docs/performance), llm (LLM vocabularies, decoding-sized qlmm); default small unless "
                   "--shape is given. decode: one token of a quantized decoder's tail (3 QLinearMatMul + top_k) per "
                   "token, vkops eager / batch / graph beside torch eager / CUDA graph (vkops/bench/decode.py)")
    p.add_argument("--step", type=_list, action="append", help="decode steps, comma-separated: llama-32000, 7b-151936, "
                   "tiny (default the first two; tiny on a CPU driver)")
    p.add_argument("--tokens", type=int, default=32, help="decode: tokens timed and checked per implementation (32)")
    p.add_argument("--shape", type=_shape, action="append", help="a shape, repeatable: top_k/slice input sizes "
                   "(top_k along the last axis), qlmm MxKxN or BATCHxMxKxN; needs one --op")
    p.add_argument("--dtype", type=_list, action="append", help="dtypes, comma-separated or repeated: top_k/slice "
                   f"float32 (default), float16, int8, uint8, ...; qlmm {', '.join(QLMM_DTYPES)} (default int8xint8). "
                   "With a preset: only its cases of these dtypes")
    p.add_argument("--k", type=_ints, action="append", help="top_k K values (default 8; with a preset: only these)")
    p.add_argument("--window", type=_list, action="append",
                   help=f"slice windows with --shape: {', '.join(f'{k} ({v})' for k, v in WINDOWS.items())} (default all)")
    p.add_argument("--b-layout", type=_list, action="append", help="qlmm with --shape: b row-major (DML's packed K x N, "
                   "the default), column-major (a transposed view of an N x K matrix: PyTorch's Linear weight), or both, "
                   "comma-separated; --preset decode: its weights' layout, one of the two")
    p.add_argument("--against", type=_list, default=list(AGAINST),
                   help="baselines, comma-separated: torch (CUDA), numpy, onnxruntime (CPU), or none "
                        "(default all three; one not installed is reported and left out)")
    p.add_argument("--device", type=int, default=None, help="Vulkan device index (default $VKOPS_DEVICE, else 0)")
    p.add_argument("--out", default=None, help="directory for the JSON document (default $OUT, else bench/results)")
    p.add_argument("--quick", action="store_true", help="no warm-up, 3 calls, 2 rounds: a smoke test, not a measurement")
    p.add_argument("--reps", type=int, default=None, help="calls per timed round (default 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run_bench, parser=p)
    return p


def b_layouts(args, ap) -> list:
    """--b-layout's values, in order, once each; a name other than row-major or column-major is a usage error."""
    layouts = list(dict.fromkeys(x for group in args.b_layout or [] for x in group))
    bad = [x for x in layouts if x not in ("row-major", "column-major")]
    if bad:
        ap.error(f"argument --b-layout: row-major or column-major, not {bad[0]!r}")
    return layouts


def bench_cases(args, ap):
    """The cases the arguments ask for; bad combinations are usage errors naming the option."""
    ops = list(OPS) if args.op == "all" else [args.op]
    dtypes = [d for group in args.dtype or [] for d in group]
    ks = [k for group in args.k or [] for k in group]
    windows = [w for group in args.window or [] for w in group]
    layouts = b_layouts(args, ap)
    if args.shape:
        if args.preset:
            ap.error("argument --shape: not with --preset (a preset brings its own shapes)")
        if args.op == "all":
            ap.error("argument --shape: needs one --op (shapes mean different things per operator)")
        if windows and args.op != "slice":
            ap.error("argument --window: applies to --op slice")
        if ks and args.op != "top_k":
            ap.error("argument --k: applies to --op top_k")
        if layouts and args.op != "qlmm":
            ap.error("argument --b-layout: applies to --op qlmm")
        cases = cases_for(args.op, args.shape, dtypes or ["int8xint8" if args.op == "qlmm" else "float32"],
                          ks or [8], windows or list(WINDOWS), tuple(layouts) or ("row-major",))
    else:
        if windows or layouts:
            ap.error(f"argument {'--window' if windows else '--b-layout'}: applies to --shape (presets bring their own)")
        cases = preset_cases(args.preset or "small", ops)
        if not cases:
            ap.error(f"argument --op: preset {args.preset} has no {args.op} cases")
        cases = [c for c in cases if (not dtypes or c.dtype in dtypes) and
                 (not ks or c.op != "top_k" or c.params["k"] in ks)]
        if not cases:
            ap.error(f"argument --dtype/--k: no case of preset {args.preset or 'small'} is left "
                     f"(dtypes {dtypes or 'any'}, K {ks or 'any'})")
    for c in cases:
        bad = check_case(c)
        if bad:
            ap.error(f"argument {bad[0]}: {bad[1]}")
    return cases


def run_decode(args, ap) -> int:
    from . import decode  # noqa: PLC0415
    from ..runtime.device import devices  # noqa: PLC0415

    if args.shape or args.dtype or args.k or args.window or args.op != "all":
        ap.error("argument --preset decode: takes --step, --tokens, --b-layout, --against, --out, --quick only")
    layouts = b_layouts(args, ap) or ["row-major"]
    if len(layouts) > 1:
        ap.error(f"argument --b-layout: the decode preset takes one of row-major, column-major; got {','.join(layouts)}")
    steps = [s for group in args.step or [] for s in group]
    for s in steps:
        if s not in decode.STEPS:
            ap.error(f"argument --step: {s!r} is not one of {', '.join(decode.STEPS)}")
    if args.tokens < 1:
        ap.error(f"argument --tokens: must be >= 1; got {args.tokens}")
    if not steps:
        cpu = devices()[args.device or 0].device_type == "cpu"
        steps = ["tiny"] if cpu else ["llama-32000", "7b-151936"]
    against = [] if args.against == ["none"] else args.against
    return decode.main(steps, args.tokens, "torch" in against, Path(args.out or default_out()), quick=args.quick,
                       b_layout=layouts[0])


def run_bench(args, ap) -> int:
    if args.preset == "decode":
        return run_decode(args, ap)
    if args.step:
        ap.error("argument --step: applies to --preset decode")
    from .runner import Config, run  # noqa: PLC0415
    from .timing import DEFAULT, QUICK, Method  # noqa: PLC0415
    from ..runtime.device import devices  # noqa: PLC0415

    cases = bench_cases(args, ap)
    against = [] if args.against == ["none"] else args.against
    for name in against:
        if name not in AGAINST:
            ap.error(f"argument --against: {name!r} is not one of {', '.join(AGAINST)} (or none)")
    n_dev = len(devices())
    device = args.device if args.device is not None else int(os.environ.get("VKOPS_DEVICE", "0"))
    if not 0 <= device < n_dev:
        ap.error(f"argument --device: must be < {n_dev} (Vulkan devices found); got {device}")
    method = QUICK if args.quick else DEFAULT
    if args.reps is not None:
        if args.reps < 1:
            ap.error(f"argument --reps: must be >= 1; got {args.reps}")
        method = Method(**{**method.to_dict(), "reps": args.reps})
    out = Path(args.out or default_out())
    cfg = Config(cases=cases, against=against, device=device, out=out, method=method, progress=not args.no_progress,
                 command=["python", "-m", "vkops"] + args.argv, preset=None if args.shape else (args.preset or "small"))
    return finish(*run(cfg))


def finish(doc, path) -> int:
    """Print the run's table and where it went; the exit status (1: a vkops row failed its check, 130:
    interrupted by Ctrl-C or SIGTERM, with the rows measured until then). A baseline that fails its check is reported in its row, not in the status."""
    from .report import run_table  # noqa: PLC0415

    d = doc["device"]
    print(f"\n{d['name']} ({d['driver']})" + (f", {doc['cuda_device']}" if doc["cuda_device"] else ""))
    if doc["rows"]:
        print(run_table(doc))
    for s in doc["skipped"]:
        print(f"not run: {s['op']} {s['dtype']} {'x'.join(map(str, s['shape']))} {s['implementation']}: {s['reason']}")
    failed = [r for r in doc["rows"] if r["verified"] is False]
    ours = [r for r in failed if r["device"] == "vulkan"]
    if failed:
        print(f"{len(failed)} rows FAILED their check against vkops.reference ({len(ours)} of vkops)", file=sys.stderr)
    if path is not None:
        print(f"results: {path}")
    return 130 if doc["interrupted"] else (1 if ours else 0)


def add_report(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("report", help="Markdown report and PNG plots from bench results",
                       description="Write DIR/report.md and PNG plots (matplotlib) from one or more result "
                                   "documents of `python -m vkops bench`; several runs are also compared.")
    p.add_argument("results", nargs="+", help="result JSON files")
    p.add_argument("--out", required=True, help="directory for report.md and the PNGs")
    p.add_argument("--baseline", choices=AGAINST, help="speedups against this (default: torch, else onnxruntime, "
                                                       "else numpy, whichever the run has)")
    p.set_defaults(func=run_report, parser=p)
    return p


def run_report(args, ap) -> int:
    from .report import load, write_report  # noqa: PLC0415

    for f in args.results:
        if not Path(f).is_file():
            ap.error(f"argument results: no such file {f!r}")
    try:
        docs = load(args.results)
    except (ValueError, json.JSONDecodeError) as e:
        ap.error(f"argument results: {e}")
    path, pngs = write_report(docs, Path(args.out), args.baseline)
    print(f"report: {path}")
    for p in pngs:
        print(f"plot: {p}")
    return 0


def add_info(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("info", help="Vulkan devices, kp build, SPIR-V set, baselines",
                       description="Every Vulkan device with the facts vkops reads, the kp build, the SPIR-V set "
                                   "and which comparison baselines are importable.")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--no-features", action="store_true",
                   help="do not create the devices to read the features kp enables")
    p.set_defaults(func=run_info, parser=p)
    return p


def run_info(args, ap) -> int:
    from .info import collect, text  # noqa: PLC0415

    facts = collect(features=not args.no_features)
    print(json.dumps(facts, indent=1) if args.json else text(facts))
    return 0
