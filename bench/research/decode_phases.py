"""Where an eager decode token's wall time goes: the step of `python -m vkops bench --preset decode`, each
phase timed on the host (median µs over the tokens), vkops and torch in one process, and variants that
leave one phase out (their outputs are not checked: they time the rest). Every full token is checked.

    bash bench/gpu.sh python3 bench/research/decode_phases.py [--step 32000] [--tokens 200]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402

from vkops.bench import decode  # noqa: E402


def phases(fns, tokens, warm=20):
    """Each fn(x) -> None; per phase the median µs (and the whole token's)."""
    for x in tokens[:warm]:
        for f in fns.values():
            f(x)
    t = {k: [] for k in fns}
    tot = []
    for x in tokens:
        t0 = time.perf_counter()
        a = t0
        for k, f in fns.items():
            f(x)
            b = time.perf_counter()
            t[k].append(b - a)
            a = b
        tot.append(a - t0)
    out = {k: statistics.median(v) * 1e6 for k, v in t.items()}
    out["token"] = statistics.median(tot) * 1e6
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--step", default="32000")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    step = next(s for s in decode.STEPS.values() if a.step in (s.name, str(s.vocab)))
    model = decode.Model(step)
    vk = decode.VkopsStep(model)
    toks = model.tokens(a.tokens)
    want = [model.oracle(x) for x in toks[:8]]
    for x, w in zip(toks[:8], want):
        got = vk.eager(x)
        assert decode._check("eager", got, w) is None, decode._check("eager", got, w)
    st = {}

    def up(x):
        vk.x.upload(x)

    def calls(x):
        st["vi"] = vk._calls()

    def read_v(x):
        st["v"] = st["vi"][0].numpy()

    def read_i(x):
        st["i"] = st["vi"][1].numpy()

    def sync(x):
        vk.dev.synchronize()

    variants = {
        "vkops eager": {"upload": up, "calls": calls, "read v": read_v, "read i": read_i},
        "no upload": {"calls": calls, "read v": read_v, "read i": read_i},
        "read v only": {"upload": up, "calls": calls, "read v": read_v},
        "no reads (sync)": {"upload": up, "calls": calls, "sync": sync},
        "calls + sync": {"calls": calls, "sync": sync},
    }
    try:
        import torch
        ts = decode.TorchStep(model)
        tt = {}

        def tfeed(x):
            ts._feed(x)

        def tcalls(x):
            tt["vi"] = ts._calls()

        def tv(x):
            tt["v"] = tt["vi"][0].cpu()

        def ti(x):
            tt["i"] = tt["vi"][1].cpu()

        def tsync(x):
            torch.cuda.synchronize()

        variants.update({
            "torch eager": {"upload": tfeed, "calls": tcalls, "read v": tv, "read i": ti},
            "torch no reads (sync)": {"upload": tfeed, "calls": tcalls, "sync": tsync},
        })
    except ImportError:
        pass
    for r in range(a.repeat):
        for name, fns in variants.items():
            res = phases(fns, toks)
            print(f"[{r}] {name:24s} " + "  ".join(f"{k} {v:7.1f}" for k, v in res.items()), flush=True)
    subs = vk.dev._sequences.submissions
    for x in toks[:10]:
        vk.eager(x)
    print("submissions per eager token:", (vk.dev._sequences.submissions - subs) / 10)


if __name__ == "__main__":
    main()
