"""Research A/B (not a benchmark of record): TOP_K1's path-rule knobs (fields of vkops.ops.top_k1.TopK1Tuning)
and _top_k's switches, several configurations side by side in one process, every output checked against the
oracle, torch beside. GPU ms from Vulkan timestamps; each configuration is timed twice, interleaved (A B A B),
so a drift of the card's clock shows as a spread.

    bash bench/gpu.sh python3 bench/research/research_topk_knobs.py \
        --configs '{"old": {"knobs": {"ROWS_RADIX_MIN_L": 4096, "RADIX_SHORT_ROWS_MIN_L": 4097}}, "new": {}}' \
        --case 4096x4096:float32:8,64,256 --case 16384x2048:float32:1024

A configuration is {"knobs": {KNOB: value, ...}, "kw": {force/chunks/shuffle/tune: value}} ("paths" is the old
spelling of "knobs", as in docs/tuning/top_k1.md's log): each configuration plans with its own TopK1Tuning,
which is part of the plan key, so configurations never share a plan. The GRADIX path (off by default) against
the default plans, with a chunk-length variant:

    bash bench/gpu.sh python3 bench/research/research_topk_knobs.py \
        --configs '{"default": {}, "gradix": {"kw": {"force": "gradix"}},
                    "gradix_c2k": {"knobs": {"GRADIX_MIN_CHUNK": 2048}, "kw": {"force": "gradix"}}}' \
        --case 1x151936:float32:1024,2048,3000,4096 --case 1x151936:float16:1024,2048,3000,4096

GRADIX with filtering (TopK1Tuning.GRADIX_FILTER: the second digit pass compacts the first digit's bucket, the
later passes read only it) against the default plans and plain GRADIX, forced on 64 rows at any K (or routed by
the rule: {"knobs": {"GRADIX_FILTER": true, "GRADIX_MIN_KP": 256, "GRADIX_MIN_K": 1, "GRADIX_LONG_MIN_K": 1}}; since
session 29 GRADIX_MIN_K routes 8/16-bit keys only, 32-bit keys by GRADIX_LONG_MIN_K on rows of GRADIX_LONG_MIN_L):

    bash bench/gpu.sh python3 bench/research/research_topk_knobs.py \
        --configs '{"default": {}, "gradix": {"kw": {"force": "gradix"}},
                    "gfilter": {"knobs": {"GRADIX_FILTER": true}, "kw": {"force": "gradix"}}}' \
        --case 64x131072:float32:256,1024,2048,3000,4096 --case 1x151936:float16:2048,3000,4096

GRADIX's rank sort for few rows (TopK1Tuning.GRADIX_RANK_MAX_SEQ: the survivors ranked over (row, i-tile, j-tile)
workgroups, i-tiles of GRADIX_WG x GRADIX_RANK_E, j-tiles of GRADIX_RANK_TJ) against the default plans (the rule
takes GRADIX on these), with GPU us per dispatch (the last one: gradix_sort_sg against gradix_rank):

    bash bench/gpu.sh python3 bench/research/research_topk_knobs.py --dispatches \
        --configs '{"default": {}, "rank": {"knobs": {"GRADIX_RANK_MAX_SEQ": 16}},
                    "rank_e1": {"knobs": {"GRADIX_RANK_MAX_SEQ": 16, "GRADIX_RANK_E": 1}},
                    "rank_e1_tj128": {"knobs": {"GRADIX_RANK_MAX_SEQ": 16, "GRADIX_RANK_E": 1, "GRADIX_RANK_TJ": 128}}}' \
        --case 1x151936:float32:2048,3000,4096 --case 1x151936:float16:2048,3000,4096 \
        --case 1x131072:float32:2048,4096 --case 4x131072:float32:2048,4096 --case 16x131072:float32:2048,4096

GRADIX's sort in parts on more rows (TopK1Tuning.GRADIX_SORT_PARTS: gradix_psort sorts pow2(K) / P survivors a
workgroup, gradix_pmerge merges the runs by rank) against the default plans, per dispatch:

    bash bench/gpu.sh python3 bench/research/research_topk_knobs.py --dispatches \
        --configs '{"default": {}, "p2": {"knobs": {"GRADIX_SORT_PARTS": 2}}, "p4": {"knobs": {"GRADIX_SORT_PARTS": 4}},
                    "p8": {"knobs": {"GRADIX_SORT_PARTS": 8}}}' \
        --case 64x131072:float32:4096 --case 64x131072:float16:4096 --case 64x151936:float32:4096 \
        --case 16x131072:float32:2048,4096 --case 4x131072:float32:4096

Every row of 2-D cases with at most --check-all-rows rows is checked against the oracle (else 16 sampled rows);
a wrong output prints WRONG.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops import reference  # noqa: E402
from vkops.bench import timing  # noqa: E402
from vkops.ops import top_k1  # noqa: E402
from vkops.ops.top_k1 import paths as TP  # noqa: E402

M_ = timing.Method(reps=20, warm_s=0.3, round_warm_s=0.1)


def data(shape, dtype, rng, kind="normal"):
    """kind: normal; masked<P> (P% of each row the dtype's lowest value, -inf for floats: masked logits);
    const (every key equal); few<N> (N distinct values)."""
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        low = -np.inf
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
        low = info.min
    if kind.startswith("masked"):
        x[rng.random(shape) < float(kind[6:]) / 100] = low
    elif kind == "const":
        x[...] = x.flat[0]
    elif kind.startswith("few"):
        x = rng.integers(0, int(kind[3:]), shape).astype(dtype)
    elif kind != "normal":
        raise SystemExit(f"unknown data kind {kind!r}")
    return x


def dispatch_us(dev, f):
    """'kernel us' per dispatch of one call, best of 5 timestamped batches (the timestamps around each dispatch
    include its barrier's wait)."""
    from vkops.runtime import call as call_mod  # noqa: PLC0415

    real, plans = call_mod.execute, []

    def spy(plan, batch, inputs, outputs):
        plans.append(plan)
        return real(plan, batch, inputs, outputs)
    call_mod.execute = spy
    try:
        best = None
        for _ in range(5):
            with dev.batch(timestamps=True) as b:
                f()
            best = b.gpu_ns if best is None else [min(x, y) for x, y in zip(best, b.gpu_ns)]
    finally:
        call_mod.execute = real
    names = [s[0] for s in plans[-1]._steps]
    return "  ".join(f"{n} {t / 1000:.1f}" for n, t in zip(names, best)) + f"  (sum {sum(best) / 1000:.1f} us)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", required=True, help="JSON: name -> {paths: {...}, kw: {...}}")
    ap.add_argument("--case", action="append", required=True, help="RxL:dtype:k1,k2[:data], data one of normal (default), masked<P>, const, few<N>")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--dispatches", action="store_true",
                    help="also each configuration's GPU time per dispatch (best of 5 timestamped batches of one call)")
    ap.add_argument("--serial", action="store_true",
                    help="every call of a timed batch writes the same outputs: barriers between calls, so a call's "
                         "time is its latency, not its share of calls that overlap")
    ap.add_argument("--check-all-rows", type=int, default=256,
                    help="check every row of 2-D cases with at most this many rows (else 16 sampled rows)")
    ap.add_argument("--seed", type=int, default=0, help="the data's random seed")
    args = ap.parse_args()
    configs = json.loads(args.configs)
    tunings = {name: top_k1.DEFAULT.replace(**cfg.get("knobs", cfg.get("paths", {}))) for name, cfg in configs.items()}

    dev = vkops.Device()
    rng = np.random.default_rng(args.seed)
    torch = timing.cuda_torch()
    print("device", dev.name, "configs", configs, flush=True)
    for spec in args.case:
        shape_s, dtype, ks, kind = (spec.split(":") + ["normal"])[:4]
        shape = tuple(map(int, shape_s.split("x")))
        x = data(shape, dtype, rng, kind)
        xt = dev.tensor(x)
        n_rows = int(np.prod(shape[:-1]))
        rows = (list(range(shape[0])) if len(shape) == 2 and n_rows <= args.check_all_rows else
                sorted({0, shape[0] - 1} | set(rng.integers(0, shape[0], 14).tolist())))
        full_v, full_i = reference.top_k1(x[rows], shape[-1], -1)
        tx = torch.from_numpy(x).cuda() if torch is not None else None
        for k in map(int, ks.split(",")):
            outs = [(dev.empty(vkops.TensorDesc(dtype, shape[:-1] + (k,))),
                     dev.empty(vkops.TensorDesc("uint32", shape[:-1] + (k,)))) for _ in range(M_.reps)]
            res = {name: [] for name in configs}
            notes, refused = {}, {}
            for _ in range(args.passes):
                for name, cfg in configs.items():
                    kw, tun = cfg.get("kw", {}), tunings[name]
                    f = lambda i=0: top_k1._top_k(xt, k, out=outs[0 if args.serial else i], tuning=tun,  # noqa: E731
                                                  **kw)
                    if name in refused:
                        continue
                    if name not in notes:
                        try:
                            v, i = (t.numpy() for t in f())
                        except vkops.ValidationError as e:  # a forced path that cannot run this case
                            refused[name] = str(e)
                            continue
                        ok = np.array_equal(v[rows], full_v[:, :k]) and np.array_equal(i[rows], full_i[:, :k])
                        p = TP.device_path(dev.limits, int(np.prod(shape[:-1])), shape[-1], k,
                                           key_bits=np.dtype(dtype).itemsize * 8, tuning=tun,
                                           **{a: b for a, b in kw.items() if a in ("force", "chunks", "shuffle")})
                        filt = p.path == "gradix" and tun.GRADIX_FILTER and np.dtype(dtype).itemsize > 1
                        if p.path == "gradix" and top_k1.sizing.gradix_bracket_cap(
                                n_rows, shape[-1], k, np.dtype(dtype).itemsize * 8, dev.limits, tun):
                            filt = "bracket"
                        rank = p.path == "gradix" and int(np.prod(shape[:-1])) <= tun.GRADIX_RANK_MAX_SEQ
                        notes[name] = (f"{p.path}{' radix' if p.radix else ''}{(' ' + filt if isinstance(filt, str) else ' filter') if filt else ''} B={p.B} WG={p.workgroup} "
                                       f"chunks={p.chunks}{' shuf' if p.shuf else ''}"
                                       f"{f' chunk_len={p.chunk_len} sort_wg={p.sort_wg}' if p.path == 'gradix' and not rank else ''}"
                                       f"{f' parts={p.sort_parts}' if p.path == 'gradix' and p.sort_parts > 1 else ''}"
                                       f"{f' chunk_len={p.chunk_len} rank E={tun.GRADIX_RANK_E} TJ={tun.GRADIX_RANK_TJ}' if rank else ''}"
                                       f" rows_checked={len(rows)}", ok)
                    res[name].append(timing.vk_gpu_ms(f, device=dev, method=M_))
            tms = ""
            if tx is not None:
                try:
                    tg, _ = timing.torch_ms(lambda: torch.topk(tx, k, dim=-1, sorted=True), method=M_)
                    tms = f" torch {tg:.4f}"
                except (NotImplementedError, RuntimeError) as e:  # e.g. no uint32 topk in torch
                    tms = f" torch: {type(e).__name__}"
            print(f"{shape_s} {dtype} K={k}{'' if kind == 'normal' else ' ' + kind}{tms}", flush=True)
            for name in configs:
                if name in refused:
                    print(f"   {name:24s} refused: {refused[name]}", flush=True)
                    continue
                note, ok = notes[name]
                print(f"   {name:24s} {' / '.join(f'{t:.4f}' for t in res[name])}  {'ok' if ok else 'WRONG'}  {note}",
                      flush=True)
                if args.dispatches:
                    kw, tun = configs[name].get("kw", {}), tunings[name]
                    print(f"      {dispatch_us(dev, lambda: top_k1._top_k(xt, k, out=outs[0], tuning=tun, **kw))}", flush=True)


if __name__ == "__main__":
    main()
