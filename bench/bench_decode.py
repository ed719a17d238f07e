"""One token of a quantized decoder's tail per token: a preset of `python -m vkops bench` (vkops/bench/decode.py).

    python bench/bench_decode.py                      # = python -m vkops bench --preset decode --against torch
    python bench/bench_decode.py --step tiny --quick  # the lavapipe smoke
    bash bench/gpu.sh python3 bench/bench_decode.py   # on the GPU host; results to $OUT

x (1 x 4096 int8) -> QLinearMatMul to 11008 -> to 4096 -> to the vocabulary (32000, then 151936) -> top_k K=50;
vkops eager, batch and graph, torch eager and CUDA graph, the memory limit; every token checked against NumPy.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vkops.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", "--preset", "decode", "--against", "torch"] + sys.argv[1:]))
