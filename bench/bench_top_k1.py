"""TOP_K1 against torch.topk(..., sorted=True): GPU time (Vulkan timestamps / CUDA events) and wall time.

The grid of issue 4: fp32 4096x32768, 64x2^20, 1x2^26, 32768x1024, 1x1024 with K in {1, 8, 64, 256,
1024}, plus one uint8 and one fp16 shape. Each row also checks the result against torch (values equal,
indices point at those values; exact index equality where torch's tie order agrees) or NumPy.
`--grid rows`: many short rows, ROWS (one subgroup per row) against the workgroup paths, with
`--sweep-chunks` sweeping ROWS' candidate cap. `--grid llm`: sampling over LLM vocabularies (1, 8, 64, 256 rows x 32000, 128256, 151936; K 1, 50,
256, 1024; fp32 and fp16), with the wall of a 10-call batch. `--sweep-chunks` times forced chunk counts.
Usage: python bench/bench_top_k1.py [--small] [--grid default|llm] [--reps 10] [--only 4096x32768]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from common import (cuda_torch, table, torch_batch_wall_ms, torch_ms, vk_batch_wall_ms, vk_gpu_ms, wall_ms,
                    write_results)

import vkops
from vkops import reference
from vkops.ops import top_k1 as topk_mod

KS = (1, 8, 64, 256, 1024)


LLM_ROWS, LLM_VOCABS, LLM_KS = (1, 8, 64, 256), (32000, 128256, 151936), (1, 50, 256, 1024)


def grid(small: bool, which: str = "default"):
    if which == "rows":  # many short rows: ROWS (one subgroup per row) against the workgroup paths
        return [("float32", (32768, 1024), KS), ("float32", (16384, 2048), KS), ("float32", (4096, 4096), KS),
                ("float32", (2048, 8192), (8, 64, 256)), ("float32", (256, 4096), (8, 64, 256)),
                ("float32", (512, 16384), (8, 64, 256)), ("float16", (32768, 1024), (8, 256)),
                ("uint8", (32768, 1024), (8, 256))]
    if which == "llm":
        rows = LLM_ROWS[:2] if small else LLM_ROWS
        vocabs = LLM_VOCABS[:1] if small else LLM_VOCABS
        return [(dt, (r, v), LLM_KS) for dt in ("float32", "float16") for v in vocabs for r in rows]
    if small:  # for a CPU driver
        return [("float32", (64, 4096), KS[:4]), ("float32", (1, 1 << 18), KS[:4]), ("float32", (512, 1024), KS),
                ("uint8", (64, 4096), (8, 256)), ("float16", (64, 4096), (8, 256))]
    return [("float32", (4096, 32768), KS), ("float32", (64, 1 << 20), KS), ("float32", (1, 1 << 26), KS),
            ("float32", (32768, 1024), KS), ("float32", (1, 1024), KS),
            ("uint8", (4096, 32768), (8, 256)), ("float16", (4096, 32768), (8, 256)),
            # off the grid: short rows (radix select from K = 2)
            ("float32", (4096, 4096), (8, 64, 256, 1024)), ("float32", (16384, 2048), (2, 64, 1024))]


def make(dtype, shape, torch):
    if torch is not None:
        g = torch.Generator(device="cuda").manual_seed(0)
        if dtype == "uint8":
            t = torch.randint(0, 256, shape, generator=g, device="cuda", dtype=torch.uint8)
        else:
            t = torch.randn(shape, generator=g, device="cuda", dtype=getattr(torch, dtype))
        return t.cpu().numpy(), t
    rng = np.random.default_rng(0)
    if dtype == "uint8":
        return rng.integers(0, 256, size=shape, dtype=np.uint8), None
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype), None


def check(host, k, v, i, tx, torch):
    """'exact' (values and indices equal to the stable reference or torch), 'ok' (values equal,
    indices address them), or 'FAIL'."""
    vv, ii = v.numpy(), i.numpy()
    if torch is not None:
        tv, ti = torch.topk(tx if tx.dtype != torch.uint8 else tx.to(torch.int32), k, dim=-1, sorted=True)
        tv = tv.cpu().numpy().astype(host.dtype)
        ti = ti.cpu().numpy()
        if not np.array_equal(vv, tv):
            return "FAIL(values)"
        picked = np.take_along_axis(host, ii.astype(np.int64), axis=-1)
        if not np.array_equal(picked, vv) or np.any(ii >= host.shape[-1]):
            return "FAIL(indices)"
        # ties (uint8, fp16): indices must be ascending within runs of equal values
        same = vv[..., 1:] == vv[..., :-1]
        if np.any(same & (ii[..., 1:] <= ii[..., :-1])):
            return "FAIL(tie order)"
        return "exact" if np.array_equal(ii, ti) else "ok"
    rv, ri = reference.top_k1(host, k, -1)
    return "exact" if np.array_equal(vv, rv) and np.array_equal(ii, ri) else "FAIL"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--only", default=None, help="shapes to run, e.g. 1x151936,8x32000")
    ap.add_argument("--dtypes", default=None, help="dtypes to run, e.g. float32")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--grid", default="default", choices=["default", "llm", "rows"])
    ap.add_argument("--workgroup", type=int, default=None, help="TOP_K1's wanted workgroup size (default 512)")
    ap.add_argument("--force", default=None, choices=["filter", "radix", "seg", "sort"], help="with --sweep-chunks")
    ap.add_argument("--sweep-chunks", default=None, help="e.g. 2,4,8,16: GPU ms per forced chunk count (--grid rows: per ROWS candidate cap)")
    args = ap.parse_args()
    dev = vkops.Device()
    if args.workgroup:
        topk_mod.WORKGROUP = args.workgroup  # read at planning time; this process plans every call with it
    small = args.small or dev.device_type == "cpu"
    torch = cuda_torch()
    rows = []
    t_start = time.time()
    for dtype, shape, ks in grid(small, args.grid):
        name = "x".join(map(str, shape))
        if args.dtypes and dtype not in args.dtypes.split(","):
            continue
        if args.only and name not in args.only.split(","):
            continue
        host, tx = make(dtype, shape, torch)
        x = vkops.to_device(host, dev)
        for k in ks:
            if k > shape[-1]:
                continue
            vdesc, idesc = topk_mod.output_descs(x.desc, len(shape) - 1, k)
            # One output pair per rep: the timed reps are independent and run back to back.
            outs = [(dev.empty(vdesc), dev.empty(idesc)) for _ in range(args.reps)]
            v, i = outs[0]
            n_seq = host.size // shape[-1]
            p = topk_mod.device_path(dev.limits, n_seq, shape[-1], k)
            gpu = vk_gpu_ms(lambda r: vkops.top_k(x, k, out=outs[r]), args.reps, dev)
            wall = wall_ms(lambda: vkops.top_k(x, k, out=(v, i)), args.reps)
            row = {"dtype": dtype, "shape": name, "K": k, "path": f"{p.path}/{p.chunks}" if p.path == "filter"
                   else p.path, "vk gpu ms": gpu, "vk GB/s": host.nbytes / gpu / 1e6, "vk wall ms": wall}
            if args.grid == "llm":
                row["vk batch wall ms"] = vk_batch_wall_ms(lambda r: vkops.top_k(x, k, out=outs[r]), args.reps, dev)
            if args.grid == "rows":  # A/B: ROWS forced, and the path ROWS replaced (or would replace)
                n_min, topk_mod.ROWS_MIN_SEQ = topk_mod.ROWS_MIN_SEQ, 2**31
                old = topk_mod.device_path(dev.limits, n_seq, shape[-1], k)
                topk_mod.ROWS_MIN_SEQ = n_min
                force = "radix" if old.radix else old.path
                row["old"] = force
                row["old gpu ms"] = vk_gpu_ms(lambda r: vkops.top_k(x, k, out=outs[r], _force=force), args.reps, dev)
                if k <= 256:
                    row["rows gpu ms"] = vk_gpu_ms(lambda r: vkops.top_k(x, k, out=outs[r], _force="rows"),
                                                   args.reps, dev)
                    for c in map(int, (args.sweep_chunks or "").split(",") if args.sweep_chunks else ()):
                        row[f"cap{c}"] = vk_gpu_ms(lambda r, c=c: vkops.top_k(x, k, out=outs[r], _force="rows",
                                                                               _chunks=c), args.reps, dev, warm_s=0.1)
            if args.sweep_chunks and p.path == "filter" and args.grid != "rows":
                for c in map(int, args.sweep_chunks.split(",")):
                    row[f"c{c}"] = vk_gpu_ms(lambda r, c=c: topk_mod._top_k(x, k, out=outs[r], chunks=c, force=args.force),
                                             args.reps, dev, warm_s=0.1)
            if torch is not None:
                tt = tx if tx.dtype != torch.uint8 else tx  # torch.topk supports uint8 on CUDA
                try:
                    tg, tw = torch_ms(lambda: torch.topk(tt, k, dim=-1, sorted=True), args.reps * 2)
                    row.update({"torch gpu ms": tg, "torch wall ms": tw, "speedup": tg / gpu})
                    if args.grid == "llm":
                        row["torch batch wall ms"] = torch_batch_wall_ms(
                            lambda: torch.topk(tt, k, dim=-1, sorted=True), args.reps)
                except RuntimeError as e:  # a dtype torch.topk lacks on CUDA
                    row["torch gpu ms"] = None
                    print("torch:", str(e)[:100])
            if not args.no_check:
                row["check"] = check(host, k, v, i, tx, torch)
            rows.append(row)
            print(row, flush=True)
            del v, i, outs
        del x, tx
        if torch is not None:
            torch.cuda.empty_cache()
    print(f"\nTOP_K1 on {dev.name} ({dev.driver}), {time.time() - t_start:.0f} s")
    cols = ["dtype", "shape", "K", "path", "vk gpu ms", "vk GB/s", "vk wall ms", "torch gpu ms", "torch wall ms",
            "speedup", "check"]
    if args.grid == "llm":
        cols[7:7] = ["vk batch wall ms"]
        cols.insert(-2, "torch batch wall ms")
    if args.grid == "rows":
        cols += ["old", "old gpu ms", "rows gpu ms"] + [f"cap{c}" for c in (args.sweep_chunks or "").split(",") if c]
    elif args.sweep_chunks:
        cols += [f"c{c}" for c in args.sweep_chunks.split(",")]
    print(table(rows, cols))
    print("results:", write_results("top_k1", rows))


if __name__ == "__main__":
    main()
