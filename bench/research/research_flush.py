"""Research (not a benchmark of record): how often a Batch submits while it records
(vkops/runtime/submit.py FIRST_FLUSH / FLUSH_DISPATCHES), by wall time per call of calls recorded in one
batch, the settings interleaved round by round in one process (this card's walls drift between
processes). Outputs are not checked here (the bench's rows are): only when work reaches the GPU changes.

    bash bench/gpu.sh python3 bench/research/research_flush.py [rounds]
"""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

import vkops  # noqa: E402
from vkops.runtime import submit as S  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
SETTINGS = [(2, 4), (1, 1), (1, 2), (2, 2), (1, 3)]  # (FIRST_FLUSH, FLUSH_DISPATCHES)
rng = np.random.default_rng(0)
dev = vkops.Device()
x1 = vkops.to_device(rng.standard_normal((1, 32000)).astype(np.float16))
x2 = vkops.to_device(rng.standard_normal((1, 151936)).astype(np.float32))
x3 = vkops.to_device(rng.standard_normal((8, 32000)).astype(np.float32))
x4 = vkops.to_device(rng.standard_normal((32768, 1024)).astype(np.float32))
a = vkops.to_device(rng.integers(-128, 128, (16, 4096), dtype=np.int8))
b = vkops.to_device(rng.integers(-128, 128, (4096, 4096), dtype=np.int8))
out = dev.empty(vkops.TensorDesc("int8", (16, 4096)))
s1 = vkops.to_device(rng.standard_normal((16, 16)).astype(np.float32))
s2 = vkops.to_device(rng.standard_normal((1024, 1024)).astype(np.float32))
sa, sb, so = np.float32(1 / 16), np.float32(1 / 32), np.float32(1.0)
CALLS = {
    "top_k fp16 1x32000 K=1024": lambda: vkops.top_k(x1, 1024),
    "top_k fp32 1x151936 K=50": lambda: vkops.top_k(x2, 50),
    "top_k fp32 8x32000 K=50": lambda: vkops.top_k(x3, 50),
    "top_k fp32 32768x1024 K=64": lambda: vkops.top_k(x4, 64),
    "qlmm 16x4096^2 out=": lambda: vkops.quantized_linear_matmul(a, sa, None, b, sb, None, so, None, out=out),
    "slice 16x16 [::2]": lambda: vkops.slice(s1, [0, 0], [16, 16], [1, 2]),
    "slice 1024^2 [::-1, ::2]": lambda: vkops.slice(s2, [0, 0], [1024, 1024], [-1, 2]),
}


def batch(f, n):
    t = time.perf_counter()
    with dev.batch():
        for _ in range(n):
            f()
    return (time.perf_counter() - t) / n * 1e6


for name, f in CALLS.items():
    for n in (10, 100):
        res = {s: [] for s in SETTINGS}
        for s in SETTINGS:
            S.FIRST_FLUSH, S.FLUSH_DISPATCHES = s
            for _ in range(5):
                batch(f, n)
        for _ in range(ROUNDS if n == 10 else max(5, ROUNDS // 5)):
            for s in SETTINGS:
                S.FIRST_FLUSH, S.FLUSH_DISPATCHES = s
                res[s].append(batch(f, n))
        row = "  ".join(f"{s[0]}/{s[1]}: {min(v):6.1f} / {sorted(v)[len(v) // 2]:6.1f}" for s, v in res.items())
        print(f"{name:28s} x{n:<3d} us/call best / median  {row}", flush=True)
