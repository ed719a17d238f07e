"""Research (not a benchmark of record): host work of a repeated small NumPy-in/NumPy-out call (issue 36). Per
call: mean µs over 2000 outside kp's submission and wait (Sequences.submit / wait timed and taken off), the
same split over the runtime's phases (each timed by a wrapper: its own overhead counts in it), Python function
calls per call (cProfile), and the host work alone (submission stubbed, median); each call first checked on 30
new contents of its arrays. Measures the vkops package in the current directory (`cd .old && python
../bench/research/numpy_host.py` a saved copy: ab.sh's header).
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
import vkops.reference  # noqa: E402
from vkops.runtime import call as C, sequences as Q, submit as S  # noqa: E402

rng = np.random.default_rng(0)
x = rng.standard_normal((1, 1024)).astype(np.float32)
s = rng.standard_normal((256, 256)).astype(np.float32)
a = rng.integers(-128, 128, (16, 512), dtype=np.int8)
b = rng.integers(-128, 128, (512, 512), dtype=np.int8)
cases = {"top_k 1x1024 K=8": lambda: vkops.top_k(x, 8),
         "slice 256^2 [::-1, ::2]": lambda: vkops.slice(s, [0, 0], [256, 256], [-1, 2]),
         "qlmm 16x512x512": lambda: vkops.quantized_linear_matmul(a, 1 / 16, None, b, 1 / 32, None, 1.0, None)}
for _ in range(30):  # every call exact on new contents of the same arrays (the repeats' path)
    x[...] = rng.standard_normal(x.shape); s[...] = rng.standard_normal(s.shape)
    a[...] = rng.integers(-128, 128, a.shape); b[...] = rng.integers(-128, 128, b.shape)
    i = np.argsort(-x, axis=1, kind="stable")[:, :8]
    v, j = cases["top_k 1x1024 K=8"]()
    assert np.array_equal(v, np.take_along_axis(x, i, 1)) and np.array_equal(j, i)
    assert np.array_equal(cases["slice 256^2 [::-1, ::2]"](), s[::-1, ::2])
    want = vkops.reference.quantized_linear_matmul(a, 1 / 16, 0, b, 1 / 32, 0, 1.0, 0, np.int8)
    assert np.array_equal(cases["qlmm 16x512x512"](), want)
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
    """Mean µs per call outside submit/wait over n calls in a loop (.phase_probe.py's way)."""
    for _ in range(100):
        f()
    acc.clear()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return ((time.perf_counter() - t) - acc["submit"] - acc["wait"]) / n * 1e6


def calls(f, n=200):
    pr = cProfile.Profile(); pr.enable()
    for _ in range(n):
        f()
    pr.disable()
    return pstats.Stats(pr).total_calls / n


def stubbed_us(f, n=5000):
    """Median µs per call with kp's submission and wait stubbed (host_work.py's way): the host work alone,
    without the CPU Vulkan driver's threads beside it (on a 2-core box they slow the host work 2-3x)."""
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return sorted(ts)[n // 2] * 1e6


rows = {name: [host_us(f), calls(f)] for name, f in cases.items()}
phases = [(C.Call, "__init__"), (C.Call, "__enter__"), (C.Call, "_run"), (C.Call, "__exit__"), (S.Batch, "upload"),
          (S.Batch, "run"), (S.Batch, "host_words"), (S.Batch, "_release"), (C, "replay")]
for cls, name in phases:
    timed(cls, name, "recipe.replay" if cls is C else f"{cls.__name__}.{name}")
report = []
for name, f in cases.items():
    for _ in range(100):
        f()
    acc.clear(); n = 2000
    t = time.perf_counter()
    for _ in range(n):
        f()
    tot = (time.perf_counter() - t) / n * 1e6
    inner = (acc["Call.__init__"] + acc["Call.__enter__"] + (acc["Call.__exit__"] or acc["recipe.replay"])) / n * 1e6
    report.append(f"  {name}: total {tot:.1f}, outside Call and recipe.replay (the face) {tot - inner:.1f}")
    report += [f"    {k:24s} {v / n * 1e6:7.1f}" for k, v in sorted(acc.items(), key=lambda kv: -kv[1])]
vkops.Device().synchronize()  # before the stubs: a stubbed wait would let go of buffers the GPU still uses
Q.Sequences.submit = lambda self, ops, timestamps=False, reuse=None: None
Q.Sequences.wait = lambda self, pending, timestamps=False: []
for name, f in cases.items():
    rows[name].append(stubbed_us(f))
print(f"{'call':26s} {'host us':>8s} {'stubbed':>8s} {'Python calls':>12s}  (host: mean outside submit/wait; "
      f"stubbed: median with submit/wait stubbed)")
for name, (h, c, st) in rows.items():
    print(f"{name:26s} {h:8.1f} {st:8.1f} {c:12.1f}")
print("phases (us/call, wrapped: each wrapper's own cost counts; submit and wait inside Batch.run / recipe.replay):")
print("\n".join(report))
