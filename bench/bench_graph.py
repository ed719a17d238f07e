"""Host time of 20 small operator calls: eager (20 submissions, then one wait), in one batch, and as one
replay of a captured graph (Device.graph(); one submission, no Python work per operator).

Two measurements: wall (the device runs the work: on lavapipe, a CPU driver, its execution dominates)
and host (vkQueueSubmit and the waits stubbed out, kp's recording kept: what Python and kp cost the
host per replay or per 20 calls; DEVELOPERS.md "Host work of a call").
The 20 calls: 5 rounds of slice -> top_k -> QLinearMatMul (zero points) -> top_k on small device tensors,
each round reading the previous round's output, so the graph holds a chain of temporaries. Each row is
the median of N repetitions of `time.perf_counter` around the whole thing (a replay includes writing
its input through `feed`); outputs of the replay are checked bit for bit against the eager calls.
Usage: python bench/bench_graph.py [N]   (default 50)
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkops  # noqa: E402
from vkops.runtime import submit  # noqa: E402

ROUNDS = 5  # x 4 calls = 20


def calls(dev, x, w):
    """The 20 calls on device tensors; returns the last outputs."""
    h = x
    for _ in range(ROUNDS):
        s = vkops.slice(h, [0, 0], [1, 256], [1, 1])                      # (1, 256) int8
        v, _ = vkops.top_k(s, 64)                                          # (1, 64) int8
        q = vkops.quantized_linear_matmul(v, 0.05, 3, w, 0.02, -7, 0.4, -5)  # (1, 256) int8
        h, i = vkops.top_k(q, 256)                                         # sorted copy of q
    return h, i


def median_ms(fn, n: int) -> float:
    fn()  # warm: plans, pipelines, Algorithms, buffers
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(n: int = 50) -> None:
    dev = vkops.Device()
    rng = np.random.default_rng(0)
    x = dev.tensor(rng.integers(-128, 128, (1, 256)).astype(np.int8))
    w = dev.tensor(rng.integers(-128, 128, (64, 256)).astype(np.int8))
    data = rng.integers(-128, 128, (1, 256)).astype(np.int8)

    def eager():
        x.upload(data)
        out = calls(dev, x, w)
        dev.synchronize()  # the calls return once submitted
        return out

    def batched():
        x.upload(data)
        with dev.batch():
            out = calls(dev, x, w)
        return out

    with dev.graph() as g:
        gh, gi = calls(dev, x, w)

    def replay():
        g.run(feed={x: data})

    replay()
    eh, ei = eager()
    assert gh.numpy().tobytes() == eh.numpy().tobytes() and gi.numpy().tobytes() == ei.numpy().tobytes()
    s0 = dev.stats()
    replay()
    s1 = dev.stats()
    made = {k: s1[k] - s0[k] for k in s1 if s1[k] != s0[k]}

    print(f"{dev.name}: 20 calls ({ROUNDS} x slice, top_k, qlmm, top_k on (1, 256) int8), median of {n}")
    print(f"  one replay created/counted: {made}")
    for what, stubbed in (("wall, the device runs it", False), ("host, submission stubbed", True)):
        with stub_submission(stubbed):
            e, b, r = median_ms(eager, n), median_ms(batched, n), median_ms(replay, n)
        print(f"{what}:")
        print(f"  eager, 20 submissions       {e:8.3f} ms")
        print(f"  one batch                   {b:8.3f} ms   ({b / e:.3f} of eager)")
        print(f"  graph replay (with feed)    {r:8.3f} ms   ({r / e:.3f} of eager, {e / r:.1f}x faster)")


class stub_submission:
    """Record into kp sequences as usual but submit and wait for nothing (the device never runs)."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        S = submit.Sequences
        self.real = S.submit, S.wait, S.replay
        if self.on:
            def record(seqs, ops, timestamps=False, reuse=None):
                cap, seq = seqs.acquire(0)
                with seqs._lock:
                    for op in ops:
                        seq.record(op)
                return cap, seq, None

            S.submit = record
            S.wait = lambda seqs, pending, timestamps=False: seqs.release(*pending) or []
            S.replay = lambda seqs, seq: None

    def __exit__(self, *exc):
        S = submit.Sequences
        S.submit, S.wait, S.replay = self.real


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
