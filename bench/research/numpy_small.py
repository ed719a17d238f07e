"""Research (not a benchmark of record): where a small NumPy-in/NumPy-out call's wall time goes, torch beside in
the same process. Per call: median wall of 200 after warm-ups, split into vkops' submission (Sequences.submit),
its wait (Sequences.wait) and the rest (host work); the same call on device tensors + synchronize; torch's
from_numpy -> cuda, op, cpu, each timed with a synchronize after it. Every output checked.
`bash bench/gpu.sh python3 bench/research/numpy_small.py`"""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

import vkops  # noqa: E402
from vkops.runtime import sequences  # noqa: E402

try:
    import torch
    cuda = torch.cuda.is_available()
except ImportError:
    torch, cuda = None, False

acc = {"submit": 0.0, "wait": 0.0}
for name in ("submit", "wait"):
    orig = getattr(sequences.Sequences, name)

    def timed(self, *a, _orig=orig, _name=name, **k):
        s = time.perf_counter()
        try:
            return _orig(self, *a, **k)
        finally:
            acc[_name] += time.perf_counter() - s
    setattr(sequences.Sequences, name, timed)


def med(f, n=200):
    for _ in range(20):
        f()
    ts, sub, wt = [], [], []
    for _ in range(n):
        acc["submit"] = acc["wait"] = 0.0
        s = time.perf_counter(); f(); ts.append((time.perf_counter() - s) * 1e3)
        sub.append(acc["submit"] * 1e3); wt.append(acc["wait"] * 1e3)
    o = np.argsort(ts)[n // 2]
    return ts[o], sub[o], wt[o]


rng = np.random.default_rng(0)
dev = vkops.Device()
x = rng.standard_normal((1, 1024)).astype(np.float32)
s = rng.standard_normal((1024, 1024)).astype(np.float32)
xd, sd = vkops.to_device(x), vkops.to_device(s)
ref_v = -np.sort(-x, axis=1)[:, :8]
ref_s = s[::-1, ::2]
cases = {
    "top_k 1x1024 K=8": (lambda: vkops.top_k(x, 8), lambda: (vkops.top_k(xd, 8), dev.synchronize()),
                         lambda r: np.array_equal(r[0], ref_v)),
    "slice 1024^2 [::-1, ::2]": (lambda: vkops.slice(s, [0, 0], [1024, 1024], [-1, 2]),
                                 lambda: (vkops.slice(sd, [0, 0], [1024, 1024], [-1, 2]), dev.synchronize()),
                                 lambda r: np.array_equal(r, ref_s)),
}
print(dev.name)
print(f"{'call':28s} {'wall':>7s} {'submit':>7s} {'wait':>7s} {'host':>7s} | {'device+sync':>11s} | torch: "
      f"{'h2d':>6s} {'op':>6s} {'d2h':>6s} {'all':>6s}  (ms, medians)")
for name, (np_call, dev_call, check) in cases.items():
    assert check(np_call()), name
    w, sb, wt = med(np_call)
    dw, _, _ = med(dev_call)
    row = f"{name:28s} {w:7.3f} {sb:7.3f} {wt:7.3f} {w - sb - wt:7.3f} | {dw:11.3f} |"
    if cuda:
        sync = torch.cuda.synchronize
        src = x if name.startswith("top_k") else s
        tx = torch.from_numpy(src).cuda()
        op = (lambda t: torch.topk(t, 8)[0]) if name.startswith("top_k") else (lambda t: t.flip(0)[:, ::2].contiguous())
        r = op(tx).cpu().numpy()
        assert np.array_equal(r, ref_v if name.startswith("top_k") else ref_s), name
        h2d = med(lambda: (torch.from_numpy(src).cuda(), sync()))[0]
        opt = med(lambda: (op(tx), sync()))[0]
        y = op(tx)
        d2h = med(lambda: y.cpu())[0]
        allt = med(lambda: op(torch.from_numpy(src).cuda()).cpu())[0]
        row += f"        {h2d:6.3f} {opt:6.3f} {d2h:6.3f} {allt:6.3f}"
    print(row, flush=True)
