"""Research (docs/tuning/qlmm.md, session 40; not a benchmark of record): do two QLinearMatMul products on one B,
recorded back to back with distinct outputs (no barrier between them), overlap on the GPU? M = M1 + M2 rows as the
whole product, the first M1 rows alone, the last M2 alone, and both (each order); GPU ms from Vulkan timestamps
(a pair: the sum of its dispatches' intervals), the halves' outputs checked equal to the whole product's.

    bash bench/gpu.sh python3 bench/research/qlmm_row_split.py [--b-cols] [M1+M2 ...]     # default 512+1 512+8 ...
"""
import os, sys
import numpy as np
sys.path.insert(0, os.getcwd())
import vkops
from vkops.bench import timing
M_ = timing.Method(reps=20, warm_s=0.3, round_warm_s=0.1)
args = sys.argv[1:]
COLS = "--b-cols" in args  # B a transposed view of an N x K matrix (column-major)
SPLITS = [tuple(map(int, a.split("+"))) for a in args if a != "--b-cols"] or [(512, 1), (512, 8), (512, 32), (384, 1)]
dev = vkops.Device(); rng = np.random.default_rng(0)
K = N = 4096
b = rng.integers(-128, 128, (K, N), dtype=np.int8)
so = np.float32(0.02 * 0.02 * np.sqrt(K) * 74 * 74 / 40)
db = dev.tensor(np.ascontiguousarray(b.T)).as_strided((K, N), (1, K)) if COLS else dev.tensor(b)


def prod(da):
    return vkops.quantized_linear_matmul(da, np.float32(0.02), None, db, np.float32(0.02), None, so, None)


for M1, M2 in SPLITS:
    a = rng.integers(-128, 128, (M1 + M2, K), dtype=np.int8)
    dA, d1, d2 = dev.tensor(a), dev.tensor(a[:M1].copy()), dev.tensor(a[M1:].copy())
    ok = np.array_equal(prod(dA).numpy(), np.concatenate([prod(d1).numpy(), prod(d2).numpy()]))
    t = {"whole": timing.vk_gpu_ms(lambda i: prod(dA), device=dev, method=M_),
         "first": timing.vk_gpu_ms(lambda i: prod(d1), device=dev, method=M_),
         "rest": timing.vk_gpu_ms(lambda i: prod(d2), device=dev, method=M_),
         "both": timing.vk_gpu_ms(lambda i: (prod(d1), prod(d2)), device=dev, method=M_),
         "rest first": timing.vk_gpu_ms(lambda i: (prod(d2), prod(d1)), device=dev, method=M_)}
    print("B column-major" if COLS else "B row-major", f"{M1}+{M2}", "equal" if ok else "DIFFERENT",
          {k: round(v, 4) for k, v in t.items()}, flush=True)
