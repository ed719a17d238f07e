"""Research (not a benchmark of record): what the decode step's top-k costs after its product. The step's last
matrix-vector product (1 x 4096 x vocab, int8) writes the logits and the top-k (K = 50) reads them, one batch with
timestamps (GPU us a dispatch, median of --reps batches; a dispatch's time runs from the previous op's end, its
barrier included): the pair as the step runs it, the top-k alone, the top-k after a top-k (same outputs: serial),
the product then a slice of the logits, and the pair under other top-k tunings (--configs, TopK1Tuning knobs or
_top_k's switches, as research_topk_knobs.py; "swap": "research_x" runs the plan with radix select's modules
top_k1_radix<variant>_<type> swapped for research builds research_x<variant>_<type> of radix.comp, which
kernels/variants.py must then declare, as session 31's did: docs/tuning/top_k1.md). The logits are the step's own (a token's hidden state through the
first two products). Every top-k output checked against NumPy.

    bash bench/gpu.sh python3 bench/research/decode_chain.py [--vocab 32000] \
        --configs '{"chunks2": {"kw": {"chunks": 2}}, "wg256": {"knobs": {"WORKGROUP": 256}}}'
"""
import argparse
import dataclasses
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops import reference  # noqa: E402
from vkops.bench import decode, timing  # noqa: E402
from vkops.ops import top_k1  # noqa: E402
from vkops.runtime.execute import execute  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--configs", default="{}")
    ap.add_argument("--dtype", default="int8", help="float16 / float32: the top-k reads the logits converted (its rows "
                    "after the product then follow a product it does not depend on)")
    args = ap.parse_args()
    dev = vkops.Device()
    m = decode.Model(decode.Step("chain", 4096, 11008, args.vocab))
    w, s = dev.tensor(m.w[2]), m.scales[2]
    rng = np.random.default_rng(1)
    token = m.tokens(1)[0]
    h = dev.tensor(m.hidden(token, 2))  # the step's own hidden state: logits spread as the step's
    logits_np = m.hidden(token)
    logits = dev.tensor(logits_np)
    if args.dtype != "int8":  # the same values as floats, spread a little so that they do not tie
        logits_np = logits_np.astype(args.dtype) + rng.standard_normal(logits_np.shape).astype(args.dtype) * 0.25
    want = reference.top_k1(logits_np, args.k, -1)
    src = dev.tensor(logits_np) if args.dtype != "int8" else logits
    ov = dev.empty(vkops.TensorDesc(args.dtype, (1, args.k)))
    oi = dev.empty(vkops.TensorDesc("uint32", (1, args.k)))
    configs = {"default": {}, **json.loads(args.configs)}
    print("device", dev.name, "vocab", args.vocab, "K", args.k, flush=True)

    def topk(cfg):
        tun = top_k1.DEFAULT.replace(**cfg.get("knobs", {}))
        if not cfg.get("swap"):
            return lambda: top_k1._top_k(src, args.k, out=(ov, oi), tuning=tun, **cfg.get("kw", {}))
        # radix select's dispatches swapped for research builds of radix.comp
        d = top_k1.TopK1Desc(src.desc, *top_k1.output_descs(src.desc, 1, args.k), 1, args.k).validate()
        p = top_k1.python_plan(d, dev.limits, tuning=tun, **cfg.get("kw", {}))
        to = cfg["swap"]  # top_k1_radix<variant>_<type> -> <swap><variant>_<type>
        ds = tuple(dataclasses.replace(q, kernel=to + q.kernel[len("top_k1_radix"):])
                   if q.kernel.startswith("top_k1_radix") else q for q in p.dispatches)
        assert ds != p.dispatches, [q.kernel for q in p.dispatches]
        p = dataclasses.replace(p, dispatches=ds)
        return lambda: execute(p, dev._active_batch(), [src], [ov, oi])

    def product():
        vkops.quantized_linear_matmul(h, 1.0, None, w, 1.0, None, 1.0 / s, None, out=logits)  # acc * s, as the step

    def sl():
        vkops.slice(logits, [0, 0], [1, 64], [1, 1])

    def timed(name, fns):
        def once():
            t = time.perf_counter()
            with dev.batch(timestamps=True) as b:
                for f in fns:
                    f()
            return list(b.gpu_ns), time.perf_counter() - t
        timing.warm(once, 0.3)
        rows = [once() for _ in range(args.reps)]
        us = [statistics.median(c) / 1e3 for c in zip(*[r[0] for r in rows])]
        wall = statistics.median([r[1] for r in rows]) * 1e6
        ok = np.array_equal(ov.numpy(), want[0]) and np.array_equal(oi.numpy(), want[1])
        print(f"  {name:34s} " + "  ".join(f"{u:6.1f}" for u in us) + f"   (sum {sum(us):6.1f} us, wall {wall:6.1f})"
              + ("" if ok else "  WRONG"), flush=True)

    timing.warm(lambda: (product(), topk({})()), 1.0)  # the process's first calls run slow
    for name, cfg in configs.items():
        f = topk(cfg)
        print(f"## top-k {name} {cfg}", flush=True)
        timed("product, top-k", [product, f])
        timed("top-k alone", [f])
        timed("top-k, top-k", [f, f])
        timed("product, top-k, top-k", [product, f, f])
    timed("product, slice (64 B)", [product, sl])
    timed("product alone", [product])
    f = topk({})
    timed("product, slice, top-k", [product, sl, f])
    timed("product, top-k (again)", [product, f])
    timed("product, top-k, slice", [product, f, sl])
    fresh = lambda: top_k1._top_k(src, args.k)  # noqa: E731
    timed("product, top-k (fresh outputs)", [product, fresh])
    small_w = dev.tensor(m.w[2][:, :min(8192, args.vocab)].copy())
    small_out = dev.empty(vkops.TensorDesc("int8", (1, min(8192, args.vocab))))
    small = lambda: vkops.quantized_linear_matmul(h, 1.0, None, small_w, 1.0, None, 1.0 / s, None, out=small_out)  # noqa: E731
    timed("product 4096x8192, top-k", [small, f])
    timed("product 4096x8192 alone", [small])


if __name__ == "__main__":
    main()
