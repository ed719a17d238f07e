"""Research (not a benchmark of record): host work of a repeated device call, kp's submission stubbed:
Python function calls per call and best / median µs per call recorded in a batch of 10 (300 batches),
then the same for the call made eagerly (its own one-off batch, what bench_latency.py's "python ms" times).
Measures the vkops package in the current directory, so `cd .old && python ../bench/research/host_work.py`
measures a saved copy (bench/research/ab.sh's header says how to make one) beside
`python bench/research/host_work.py` here."""
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

import vkops  # noqa: E402
from vkops.runtime import submit  # noqa: E402

rng = np.random.default_rng(0)
dev = vkops.Device()
a = vkops.to_device(rng.integers(-128, 128, (16, 512), dtype=np.int8))
b = vkops.to_device(rng.integers(-128, 128, (512, 512), dtype=np.int8))
out = dev.empty(vkops.TensorDesc("int8", (16, 512)))
x = vkops.to_device(rng.standard_normal((8, 32000)).astype(np.float32))
s = vkops.to_device(rng.standard_normal((1024, 1024)).astype(np.float32))
sa, sb, so = np.float32(1/16), np.float32(1/32), np.float32(1.0)
calls = {"qlmm 16x512^2 out=": lambda: vkops.quantized_linear_matmul(a, sa, None, b, sb, None, so, None, out=out),
         "qlmm 16x512^2": lambda: vkops.quantized_linear_matmul(a, sa, None, b, sb, None, so, None),
         "top_k 8x32000 K=50": lambda: vkops.top_k(x, 50),
         "slice 1024^2 [::-1, ::2]": lambda: vkops.slice(s, [0, 0], [1024, 1024], [-1, 2])}
for f in calls.values():
    f()
    f()
dev.synchronize()  # before the stubs: a stubbed wait would let go of buffers the GPU still uses
submit.Sequences.submit = lambda self, ops, timestamps=False, reuse=None: None
submit.Sequences.wait = lambda self, pending, timestamps=False: []
for name, f in calls.items():
    def batch10():
        with dev.batch():
            for _ in range(10): f()
    for _ in range(50): batch10()
    pr = cProfile.Profile(); pr.enable()
    for _ in range(10): batch10()
    pr.disable()
    n = pstats.Stats(pr).total_calls / 100
    ts = []
    for _ in range(300):
        t = time.perf_counter(); batch10(); ts.append((time.perf_counter() - t) / 10 * 1e6)
    ts.sort()
    print(f"{name:28s} {n:6.1f} Python calls/call, us/call best {ts[0]:6.1f} median {ts[150]:6.1f}", flush=True)
for name, f in calls.items():
    for _ in range(200): f()
    pr = cProfile.Profile(); pr.enable()
    for _ in range(100): f()
    pr.disable()
    n = pstats.Stats(pr).total_calls / 100
    ts = []
    for _ in range(3000):
        t = time.perf_counter(); f(); ts.append((time.perf_counter() - t) * 1e6)
    ts.sort()
    print(f"{name + ', eager':28s} {n:6.1f} Python calls/call, us/call best {ts[0]:6.1f} median {ts[1500]:6.1f}",
          flush=True)
