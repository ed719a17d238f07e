"""QUANTIZED_LINEAR_MATRIX_MULTIPLY (TOPS = 2*B*M*N*K / time, requantization included) against
torch._int_mm (B column-major and row-major) and ONNX Runtime's CPU QLinearMatMul: a preset of
`python -m vkops bench` (vkops/bench/).

    python bench/bench_qlmm.py             # docs/performance/qlmm.md's table = python -m vkops bench --op qlmm --preset paper --against torch,onnxruntime
    python bench/bench_qlmm.py --skinny    # decoding-sized M = ... --preset llm
    python bench/bench_qlmm.py --small     # CPU-driver shapes (the default on one)

Research flags, kept here: --configs all (on a cooperative-matrix device, more vkops rows: the
portable kernel and other tiles / split-K; decoding shapes: the
B-streaming kernel off and at each width, and the dot kernel, see SKINNY_CONFIGS). Dropped: the
one-dispatch-per-submission column (ms_1sub) and --configs' group-M variant.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import vkops  # noqa: E402
from vkops.bench import commands, presets, runner, timing  # noqa: E402
from vkops.ops.qlmm import coopmat as QC  # noqa: E402

# Decoding shapes: what auto ran before the B-streaming kernel (STREAM off: the direct-B, staged and
# integer-dot-product kernels), the streaming kernel's two widths, and the dot kernel on its own.
SKINNY_CONFIGS = {"no stream (before)": {"knobs": {"STREAM": False}},
                  **{f"stream {w} wide": {"kernel": "stream", "knobs": {"STREAM_NR": w}} for w in (32, 64)},
                  "dot": {"kernel": "dot"}}
LARGE_CONFIGS = {c: {"config": c} for c in ("128x256x64_4x2", "256x128x64_2x4", "64x64x64_2x2")}
LARGE_CONFIGS.update({"32x64x128 sk1": {"config": "32x64x128_2x2", "split_k": 1},
                      "32x64x128 sk8": {"config": "32x64x128_2x2", "split_k": 8}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="CPU-sized shapes (lavapipe)")
    ap.add_argument("--skinny", action="store_true", help="decoding-sized M (16, 32, 128)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--configs", default="best", choices=["best", "all"])
    ap.add_argument("--against", default="torch,onnxruntime", help="baselines (default torch,onnxruntime)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    dev = vkops.Device()
    preset = "small" if args.small or dev.device_type == "cpu" else ("llm" if args.skinny else "paper")
    variants = {}
    if args.configs == "all" and (QC.coopmat_verified(dev) or args.skinny):
        variants = {"portable": {"kernel": "portable"}, **(SKINNY_CONFIGS if args.skinny else LARGE_CONFIGS)}
    cfg = runner.Config(cases=presets.qlmm(preset), preset=preset, variants=variants,
                        against=[a for a in args.against.split(",") if a and a != "none"],
                        out=Path(args.out or commands.default_out(HERE / "results")), method=timing.Method(reps=args.reps),
                        command=["python"] + sys.argv)
    sys.exit(commands.finish(*runner.run(cfg)))


if __name__ == "__main__":
    main()
