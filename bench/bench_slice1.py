"""SLICE1 throughput (bytes read + written per second) against torch and a device-to-device copy: a
preset of `python -m vkops bench` (vkops/bench/).

    python bench/bench_slice1.py               # docs/performance/slice1.md's table = python -m vkops bench --op slice --preset paper --against torch
    python bench/bench_slice1.py --gib 0.25    # the same windows on a 256 MiB input

The identity window also runs as a plain vkCmdCopyBuffer of the same bytes (the ceiling). Every
output is checked against vkops.reference (the old --check is now always on).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import vkops  # noqa: E402
from vkops.bench import commands, presets, runner, timing  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=None, help="input size (default: 1 GiB on a GPU, 1/256 on a CPU)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--against", default="torch", help="baselines (default torch)")
    ap.add_argument("--check", action="store_true", help="(always on; kept for old command lines)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    preset = "small" if vkops.Device().device_type == "cpu" else "paper"
    cfg = runner.Config(cases=presets.slice_(preset, args.gib), preset=preset if args.gib is None else None,
                        against=[a for a in args.against.split(",") if a and a != "none"],
                        out=Path(args.out or commands.default_out(HERE / "results")), method=timing.Method(reps=args.reps),
                        command=["python"] + sys.argv)
    sys.exit(commands.finish(*runner.run(cfg)))


if __name__ == "__main__":
    main()
