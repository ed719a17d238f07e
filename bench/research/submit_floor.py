"""Research (not a benchmark of record): the wall time of a replayed graph whose GPU work is next to nothing, the
floor under the decode step's graph that no kernel removes: one top-k of a 1 x 64 int8 row, the row fed and the
top-k fetched in the replay's one submission, as the decode step's graph does; beside torch's CUDA graph of one
topk on the same row in the same process (fed from pinned memory, replayed, read back with .cpu(), as the decode
benchmark's torch graph does). Every replay's output checked.

    bash bench/gpu.sh python3 bench/research/submit_floor.py [--reps 400] [--k 1]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops.bench import timing  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=400)
ap.add_argument("--k", type=int, default=1)
ap.add_argument("--n", type=int, default=64, help="the row's length")
args = ap.parse_args()
rng = np.random.default_rng(0)
rows = [rng.permutation(np.arange(-args.n // 2, args.n // 2)).astype(np.int8)[None] for _ in range(8)]
want = [np.sort(r[0])[::-1][:args.k] for r in rows]


def wall_us(replay, check):
    """Median and best wall µs of `reps` replays (after a second of them), each fed a row and its output checked."""
    t_end = time.perf_counter() + 1.0
    while time.perf_counter() < t_end:
        replay(rows[0])
    ts, bad = [], 0
    for i in range(args.reps):
        t = time.perf_counter()
        got = replay(rows[i % len(rows)])
        ts.append((time.perf_counter() - t) * 1e6)
        bad += not check(got, i % len(rows))
    return statistics.median(ts), min(ts), bad


dev = vkops.Device()
print(dev.info.name, flush=True)
x = dev.tensor(rows[0])
with dev.graph() as g:
    v, i = vkops.top_k(x, args.k)
replay = lambda r: g.run(feed={x: r}, fetch=[v, i])  # noqa: E731
med, best, bad = wall_us(replay, lambda got, j: np.array_equal(got[0][0], want[j]))
print(f"vkops graph, one top-k 1x{args.n} K={args.k}, fed and fetched: median {med:.1f} us, best {best:.1f} ({bad} wrong)")
with dev.batch(timestamps=True) as b:
    vkops.top_k(x, args.k)
print(f"  its GPU time (timestamps): {sum(b.gpu_ns) / 1e3:.1f} us")

torch = timing.cuda_torch()
if torch is not None:
    tx = torch.from_numpy(rows[0]).cuda()
    host = torch.zeros_like(tx, device="cpu").pin_memory()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            torch.topk(tx, args.k, dim=1)
    torch.cuda.current_stream().wait_stream(s)
    cg = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cg):
        out = torch.topk(tx, args.k, dim=1)

    def treplay(r):
        host.copy_(torch.from_numpy(r))
        tx.copy_(host, non_blocking=True)
        cg.replay()
        return out[0].cpu().numpy(), out[1].cpu().numpy()

    med, best, bad = wall_us(treplay, lambda got, j: np.array_equal(got[0][0], want[j]))
    print(f"torch CUDA graph, one topk, fed and fetched: median {med:.1f} us, best {best:.1f} ({bad} wrong)")
