"""`python -m vkops <command>`: `plan` writes the dispatch plan of one operator call as JSON (what a
host without Python runs with the kernel manifest, docs/c-api.md); `bench`, `report` and `info`
are vkops/bench/commands.py."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from .errors import ValidationError
from .limits import PROFILES, Limits
from .tensor import TensorDesc


def _ints(text: str) -> List[int]:
    try:
        return [int(v) for v in text.replace("x", ",").split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {text!r}") from None


def limits_for(args) -> Limits:
    """--limits FILE (a Limits dict, or a plan whose limits to reuse), else the device's (--device),
    within --limits PROFILE when that names one (e.g. minimum)."""
    profile = None
    if args.limits and args.limits.strip().lower() in PROFILES:
        profile = args.limits
    elif args.limits:
        with open(args.limits) as f:
            d = json.load(f)
        return Limits.from_dict(d.get("limits", d))
    return own_limits(args).within(profile)


def own_limits(args) -> Limits:
    """The device's limits (with the cooperative-matrix verdicts for qlmm, which need the device itself)."""
    if args.op == "qlmm":
        from .ops.qlmm import device_limits  # noqa: PLC0415
        from .runtime import Device  # noqa: PLC0415

        return device_limits(Device(args.device))
    from .runtime.device import devices  # noqa: PLC0415  (vkinfo only: no kp device is created)

    infos = devices()
    if not 0 <= args.device < len(infos):
        raise ValidationError(f"--device must be < {len(infos)} (devices found); got {args.device}")
    return Limits.of_info(infos[args.device])


def plan_top_k(args, limits):
    from .ops import top_k1  # noqa: PLC0415

    x = TensorDesc(args.dtype, args.shape, name="--shape/--dtype")
    axis = args.axis + x.rank if args.axis < 0 else args.axis
    sizes = tuple(args.k if i == axis else s for i, s in enumerate(x.sizes))
    desc = top_k1.TopK1Desc(x, TensorDesc(x.data_type, sizes, name="TopK1Desc.output_value"),
                            TensorDesc("uint32", sizes, name="TopK1Desc.output_index"), axis, args.k,
                            top_k1.AxisDirection.of(args.direction, "--direction")).validate()
    return top_k1.plan(desc, limits)


def plan_slice(args, limits):
    from .ops import slice1  # noqa: PLC0415

    x = TensorDesc(args.dtype, args.shape, name="--shape/--dtype")
    offs, sizes, strides = args.offsets, args.sizes, args.strides
    out = args.output_sizes or [1 + (sz - 1) // abs(st) if st and sz > 0 else 1 for sz, st in zip(sizes, strides)]
    desc = slice1.Slice1Desc(x, TensorDesc(x.data_type, out, name="Slice1Desc.output"), offs, sizes, strides).validate()
    return slice1.plan(desc, limits)


def plan_qlmm(args, limits):
    from .ops import qlmm  # noqa: PLC0415

    (bc, cc), (M, K, N) = args.batch, (args.m, args.k, args.n)
    row, col, one = (1, 1, M, 1), (1, 1, 1, N), (1, 1, 1, 1)
    f32 = "float32"
    a, b = TensorDesc(args.a_dtype, (bc, cc, M, K)), TensorDesc(args.b_dtype, (bc, cc, K, N))
    zp = args.zero_points
    desc = qlmm.QuantizedLinearMatMulDesc(
        a, TensorDesc(f32, row if args.per_axis else one), TensorDesc(args.a_dtype, row) if zp else None,
        b, TensorDesc(f32, col if args.per_axis else one), TensorDesc(args.b_dtype, col) if zp else None,
        TensorDesc(f32, one), TensorDesc(args.output_dtype, one) if zp else None,
        TensorDesc(args.output_dtype, (bc, cc, M, N))).validate()
    return qlmm.plan(desc, limits, kernel=args.kernel)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m vkops", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("plan", help="write one operator call's dispatch plan as JSON")
    ops = pl.add_subparsers(dest="op", required=True)

    def common(p):
        p.add_argument("--device", type=int, default=0, help="plan for this Vulkan device's limits (default 0)")
        p.add_argument("--limits", help="plan for the limits in this JSON file (a Limits dict or a plan), or for "
                       f"the device within a profile ({', '.join(PROFILES)})")
        p.add_argument("--out", help="write here (default: stdout)")
        return p

    tk = common(ops.add_parser("top_k", help="TOP_K1"))
    tk.add_argument("--shape", type=_ints, required=True)
    tk.add_argument("--dtype", default="float32")
    tk.add_argument("--k", type=int, required=True)
    tk.add_argument("--axis", type=int, default=-1)
    tk.add_argument("--direction", default="decreasing", choices=["decreasing", "increasing"])
    tk.set_defaults(make=plan_top_k)
    sl = common(ops.add_parser("slice", help="SLICE1"))
    sl.add_argument("--shape", type=_ints, required=True)
    sl.add_argument("--dtype", default="float32")
    sl.add_argument("--offsets", type=_ints, required=True)
    sl.add_argument("--sizes", type=_ints, required=True)
    sl.add_argument("--strides", type=_ints, required=True)
    sl.add_argument("--output-sizes", type=_ints)
    sl.set_defaults(make=plan_slice)
    q = common(ops.add_parser("qlmm", help="QUANTIZED_LINEAR_MATRIX_MULTIPLY: a {B,C,M,K} x b {B,C,K,N}"))
    for f in ("m", "k", "n"):
        q.add_argument(f"--{f}", type=int, required=True)
    q.add_argument("--batch", type=_ints, default=[1, 1], help="BatchCount,ChannelCount (default 1,1)")
    q.add_argument("--a-dtype", default="uint8", choices=["uint8", "int8"])
    q.add_argument("--b-dtype", default="int8", choices=["uint8", "int8"])
    q.add_argument("--output-dtype", default="uint8", choices=["uint8", "int8"])
    q.add_argument("--zero-points", action="store_true", help="per-row a, per-column b and a scalar output zero point")
    q.add_argument("--per-axis", action="store_true", help="per-row a and per-column b scales (default scalars)")
    q.add_argument("--kernel", default="auto", choices=["auto", "portable", "coopmat", "stream", "dot", "gemv"])
    q.set_defaults(make=plan_qlmm)
    pl.set_defaults(func=run_plan)
    from .bench import commands  # noqa: PLC0415  (argparse only: nothing optional is imported here)

    commands.add_bench(sub)
    commands.add_report(sub)
    commands.add_info(sub)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args.func(args, getattr(args, "parser", ap))


def _kernels_sha256() -> str:
    """The kernel manifest's digest (its top-level sha256), which a plan names: the SPIR-V it was made for."""
    from importlib import resources  # noqa: PLC0415
    try:
        return json.loads(resources.files("vkops").joinpath("spv", "manifest.json").read_text())["sha256"]
    except (OSError, KeyError, ValueError):
        return "unknown"


def run_plan(args, ap) -> int:
    if args.op == "qlmm" and len(args.batch) != 2:
        ap.error(f"--batch takes BatchCount,ChannelCount; got {args.batch}")
    try:
        text = args.make(args, limits_for(args)).to_json(indent=1)
        text = text.replace('"op": ', f'"kernels": "{_kernels_sha256()}",\n "op": ', 1)
    except ValueError as e:  # ValidationError and DeviceLimitError: a usage problem, said plainly
        print(f"python -m vkops plan {args.op}: error: {e}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0
