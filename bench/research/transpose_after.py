"""Research (not a benchmark of record): why the BC product is slower after row-major B's transposed copy than on
column-major B alone (docs/tuning/qlmm.md, session 35). Per-dispatch GPU us from Vulkan timestamps (median of 20 calls
in a timestamped batch, after 0.3 s of warm-up), K = N = 4096, 384 / 512 / 1024 rows: the product alone on a
column-major B; after the copy into a device tensor, on that tensor; after a copy into another tensor, on the first
B; on the copied tensor without a copy; and two products in a row.

    bash bench/gpu.sh python3 bench/research/transpose_after.py
"""
import os, sys, statistics, time
import numpy as np
sys.path.insert(0, os.getcwd())
import vkops
from vkops.ops.qlmm import coopmat as cm
from vkops.ops.qlmm.lowering import TRANSPOSE_PUSH
from vkops.plan import Builder
from vkops.runtime.execute import execute
from vkops.tensor import TensorDesc as T
dev, rng = vkops.Device(), np.random.default_rng(0)

def per_dispatch_us(record, reps=20, warm_s=0.3):
    with dev.batch() as b:
        record(b)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        with dev.batch() as b:
            for _ in range(reps):
                record(b)
    with dev.batch(timestamps=True) as b:
        for _ in range(reps):
            record(b)
    n = len(b.gpu_ns) // reps
    return [statistics.median(b.gpu_ns[j * n + i] for j in range(reps)) / 1000 for i in range(n)]

K = N = 4096
src = rng.integers(-128, 128, (K, N), dtype=np.int8)
dx = dev.tensor(src)
bld = Builder("qlmm", dev.limits)
x, out = bld.input(T("int8", (K, N)), "b"), bld.output(T("int8", (N, K)), "t")
pc = np.zeros((), TRANSPOSE_PUSH); pc["K"], pc["N"], pc["b_sk"] = K, N, N
bld.dispatch("qlmm_transpose", [x, out], writes=[1], groups=(N // 64, K // 64, 1), push=pc.reshape(1).view(np.uint32), spec=(cm.TRANSPOSE_WG, 64))
tplan = bld.finish()
dout = dev.empty(T("int8", (N, K)))
other = dev.empty(T("int8", (N, K)))
native = dev.tensor(np.ascontiguousarray(src.T))
for M in (384, 512, 1024):
    a = dev.tensor(rng.integers(-128, 128, (M, K), dtype=np.int8))
    mm = lambda bb: vkops.quantized_linear_matmul(a, 0.02, None, bb.as_strided((K, N), (1, K)), 0.02, None, 1.0, None)
    r = {}
    r["native alone"] = per_dispatch_us(lambda _b: mm(native))
    r["copy into a tensor, product on it"] = per_dispatch_us(lambda _b: (execute(tplan, _b, [dx], [dout]), mm(dout)))
    r["copy into another tensor, product on native"] = per_dispatch_us(lambda _b: (execute(tplan, _b, [dx], [other]), mm(native)))
    r["product on the copied tensor, no copy"] = per_dispatch_us(lambda _b: mm(dout))
    r["product twice on native"] = per_dispatch_us(lambda _b: (mm(native), mm(native)))
    for k, v in r.items():
        print(f"{M} rows, {k}: " + ", ".join(f"{u:.1f}" for u in v), flush=True)
