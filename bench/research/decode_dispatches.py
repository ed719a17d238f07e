"""Research (not a benchmark of record): where the decode step's GPU time goes, dispatch by dispatch (Vulkan
timestamps after each op of one batch: a dispatch's time includes the barrier before it), and each matrix-vector
product of the step alone with B warm in L2 (the same B every call) and cold (calls rotate over copies of B that
together exceed L2). Every output checked.

    bash bench/gpu.sh python3 bench/research/decode_dispatches.py [--step llama-32000,7b-151936] [--tokens 50]
"""
import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops import reference  # noqa: E402
from vkops.bench import decode, timing  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--step", default="llama-32000,7b-151936")
ap.add_argument("--tokens", type=int, default=50)
ap.add_argument("--copies", type=int, default=6, help="copies of B the cold runs rotate over")
ap.add_argument("--swap-gemv", default="", help="run the matrix-vector products on research builds NAME and NAME_sk "
                "of qlmm_gemv.comp (kernels/variants.py) instead of qlmm_gemv and qlmm_gemv_sk")
ap.add_argument("--lead", action="store_true", help="a small top-k (1 x 64 int8) first in each step's batch, so the "
                "first product's interval no longer holds the submission's start")
args = ap.parse_args()


def med_us(rows):
    return [statistics.median(c) / 1e3 for c in zip(*rows)]


for name in args.step.split(","):
    dev = vkops.Device()  # a fresh plan cache: its plans are this step's
    if args.swap_gemv:
        real, swap = dev._pipelines.dispatch_op, {"qlmm_gemv": args.swap_gemv, "qlmm_gemv_sk": args.swap_gemv + "_sk"}
        dev._pipelines.dispatch_op = lambda kernel, *a, real=real, swap=swap, **kw: real(swap.get(kernel, kernel), *a, **kw)
    m = decode.Model(decode.STEPS[name])
    vk = decode.VkopsStep(m, dev)
    xs = m.tokens(args.tokens)
    kernels, h = [], vk.x  # each call's dispatches, in order: the plans each call adds to a fresh cache
    lead = dev.tensor(np.arange(64, dtype=np.int8)[None])
    for f in ([lambda h: (vkops.top_k(lead, 1), h)[1]] if args.lead else []) + [lambda h, w=w, s=s: vkops.quantized_linear_matmul(h, 1.0, None, w, 1.0, None, 1.0 / s, None)
              for w, s in zip(vk.w, m.scales)] + [lambda h: vkops.top_k(h, m.step.k)[0]]:
        before = set(dev._plans._entries)
        h = f(h)
        kernels += [d.kernel for k, p in dev._plans._entries.items() if k not in before for d in p.dispatches]

    def step(x):
        vk.x.upload(x)
        with dev.batch(timestamps=True) as b:
            if args.lead:
                vkops.top_k(lead, 1)
            v, i = vk._calls()
        return list(b.gpu_ns), v.numpy(), i.numpy()

    timing.warm(lambda: step(xs[0]), 0.5)  # the card's clock up; no idle gaps (no oracle) while timing
    got = [step(x) for x in xs]
    rows = [g[0] for g in got]
    bad = sum(not (np.array_equal(v, w[0]) and np.array_equal(i, w[1])) for (_, v, i), w in
              zip(got, map(m.oracle, xs)))
    us = med_us(rows)
    print(f"## {name}: {len(rows)} tokens, {bad} wrong; span {sum(us):.1f} us; weights {m.step.weight_bytes / 1e6:.0f} MB")
    for k, t in zip(kernels + ["?"] * (len(us) - len(kernels)), us):
        print(f"  {k:40s} {t:8.1f} us")
    # each product alone: B warm (one copy) and cold (rotating over copies)
    rng = np.random.default_rng(0)
    for w, s in zip(m.w[:3], m.scales):
        K, N = w.shape
        a = rng.integers(-128, 128, (1, K), np.int8)
        want = reference.quantized_linear_matmul(a, 1.0, None, w, 1.0, None, 1.0 / s, None)
        da = dev.tensor(a)
        bs = [dev.tensor(w) for _ in range(args.copies)]
        res = {}
        for mode, pick in (("warm", lambda r: bs[0]), ("cold", lambda r: bs[r % len(bs)])):
            def once():
                with dev.batch(timestamps=True) as b:
                    outs = [vkops.quantized_linear_matmul(da, 1.0, None, pick(r), 1.0, None, 1.0 / s, None)
                            for r in range(2 * len(bs))]
                return b.gpu_ns[1:], outs  # the first call of a batch follows the host's gap

            timing.warm(once, 0.3)
            got = [once() for _ in range(10)]
            runs = [g[0] for g in got]
            bad = sum(not np.array_equal(o.numpy(), want) for g in got for o in g[1])
            t = statistics.median([x for r in runs for x in r]) / 1e3
            res[mode] = f"{t:7.1f} us {K * N / t / 1e6:5.2f} TB/s ({bad} wrong)"
        print(f"  alone 1x{K}x{N}: warm {res['warm']}, cold {res['cold']}")
        del bs
