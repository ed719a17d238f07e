"""Research (not a benchmark of record): host work of a repeated small NumPy-in/NumPy-out call (issue 36). Per
call: median µs of 2000 outside kp's submission and wait (Sequences.submit / wait timed and taken off), the
same split over the runtime's phases (each timed by a wrapper: its own overhead counts in it), and Python
function calls per call (cProfile). Measures the vkops package in the current directory.
`python bench/research/numpy_host.py`; on a GPU: `bash bench/gpu.sh python3 bench/research/numpy_host.py`"""
import collections
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

import vkops  # noqa: E402
from vkops.runtime import call as C, sequences as Q, submit as S  # noqa: E402
try:
    from vkops.runtime import recipe as R
except ImportError:  # before the NumPy recipes (session 22)
    R = None

rng = np.random.default_rng(0)
x = rng.standard_normal((1, 1024)).astype(np.float32)
s = rng.standard_normal((256, 256)).astype(np.float32)
a = rng.integers(-128, 128, (16, 512), dtype=np.int8)
b = rng.integers(-128, 128, (512, 512), dtype=np.int8)
cases = {"top_k 1x1024 K=8": lambda: vkops.top_k(x, 8),
         "slice 256^2 [::-1, ::2]": lambda: vkops.slice(s, [0, 0], [256, 256], [-1, 2]),
         "qlmm 16x512x512": lambda: vkops.quantized_linear_matmul(a, 1 / 16, None, b, 1 / 32, None, 1.0, None)}
acc = collections.Counter()


def timed(cls, name, label):
    f = getattr(cls, name, None)
    if f is None:  # a phase this version of the runtime does not have
        return

    def w(*args, **kw):
        t = time.perf_counter()
        try:
            return f(*args, **kw)
        finally:
            acc[label] += time.perf_counter() - t
    setattr(cls, name, w)


timed(Q.Sequences, "submit", "submit")
timed(Q.Sequences, "wait", "wait")


def host_us(f, n=2000):
    for _ in range(100):
        f()
    hs = []
    for _ in range(n):
        acc.clear()
        t = time.perf_counter(); f(); hs.append((time.perf_counter() - t - acc["submit"] - acc["wait"]) * 1e6)
    return sorted(hs)[n // 2]


def calls(f, n=200):
    pr = cProfile.Profile(); pr.enable()
    for _ in range(n):
        f()
    pr.disable()
    return pstats.Stats(pr).total_calls / n


print(f"{'call':26s} {'host us':>8s} {'Python calls':>12s}  (median outside submit/wait)")
plain = {name: (host_us(f), calls(f)) for name, f in cases.items()}
for name, (h, c) in plain.items():
    print(f"{name:26s} {h:8.1f} {c:12.1f}", flush=True)
phases = [(C.Call, "__init__"), (C.Call, "__enter__"), (C.Call, "_run"), (C.Call, "__exit__"), (S.Batch, "upload"),
          (S.Batch, "run"), (S.Batch, "host_words"), (S.Batch, "_release"), (R, "replay")]
for cls, name in [p for p in phases if p[0] is not None]:
    timed(cls, name, f"{getattr(cls, '__name__', cls)}.{name}".replace("vkops.runtime.", ""))
print("phases (us/call, nested ones inside their callers; submit and wait inside Batch.run / recipe.replay):")
for name, f in cases.items():
    for _ in range(100):
        f()
    acc.clear(); n = 2000
    t = time.perf_counter()
    for _ in range(n):
        f()
    tot = (time.perf_counter() - t) / n * 1e6
    rest = tot - sum(acc[k] for k in acc if k in ("Call.__init__", "Call.__enter__", "Call.__exit__",
                                                     "recipe.replay")) / n * 1e6
    print(f"  {name}: total {tot:.1f}, outside Call and recipe.replay (the face) {rest:.1f}")
    for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
        print(f"    {k:24s} {v / n * 1e6:7.1f}")
