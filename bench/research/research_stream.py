"""Research (not a benchmark of record): the B-streaming QLinearMatMul kernel (kernels/qlmm/qlmm_stream.comp)
for decoding-sized M, exact against the oracle on edge cases ("check": both widths, zero points and the
row of ones, column-major B, split-K, K and N not in whole steps and tiles, folded and per-batch B),
then GPU ms and batch wall of its knob settings beside the kernels auto picked before it and
torch._int_mm, all in one process ("time"); SLICE1 copies of 1 KiB, 16 and 64 MiB calibrate the run
(the per-dispatch floor and the copy bandwidth, "floor"). docs/tuning/qlmm.md, session 9.

    bash bench/gpu.sh python3 bench/research/research_stream.py [check] [time] [layouts] [floor]   # -> $OUT/stream.json

Session 9 also measured research variants of the kernel (loads only, no products, B only, 128-wide
tiles, barrier semantics, 128-invocation workgroups) as extra entries of kernels/variants.py; docs/tuning/qlmm.md
lists what they showed.
"""
import dataclasses
import json
import os
import sys
import time

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the repository root
import vkops
from vkops import reference
from vkops.bench import timing
from vkops.ops.qlmm.tuning import DEFAULT

ARGS = set(sys.argv[1:]) or {"check", "time", "floor"}
M_ = timing.Method(reps=40, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device()
rng = np.random.default_rng(0)
OUT = os.environ.get("OUT", "/tmp")
rows_out = []
TUNING = DEFAULT  # the calls' tuning: the default with knobs() applied


def knobs(**kw):
    global TUNING
    TUNING = dataclasses.replace(DEFAULT, **kw)
    dev._plans.clear()


def emit(row):
    rows_out.append(row)
    print(json.dumps(row), flush=True)


def problem(M, K, N, a_dt, b_dt, zp, batch=1, b_batch=1):
    ia, ib = np.iinfo(a_dt), np.iinfo(b_dt)
    a = rng.integers(ia.min, ia.max + 1, (batch, 1, M, K)).astype(a_dt)
    b = rng.integers(ib.min, ib.max + 1, (b_batch, 1, K, N)).astype(b_dt)
    sa = rng.uniform(0.01, 0.03, (1, 1, M, 1)).astype(np.float32)
    sb = rng.uniform(0.01, 0.03, (1, 1, 1, N)).astype(np.float32)
    so = np.float32(0.02 * 0.02 * np.sqrt(K) * 74 * 74 / 40 * 0.3)
    za = rng.integers(0, 100, (1, 1, M, 1)).astype(a_dt) if zp else None
    zb = rng.integers(0, 100, (1, 1, 1, N)).astype(b_dt) if zp else None
    zo = np.int8(3)
    return a, sa, za, b, sb, zb, so, zo


def close(got, want):
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    return int(d.max()), float((d == 0).mean())


def check():
    # (M, K, N, a, b, zero points, B column-major, batch, b_batch, knobs)
    cases = []
    for M in (1, 5, 15, 16):
        cases.append((M, 1024, 512, np.int8, np.int8, False, False, 1, 1, {}))
    for nr in (32, 64):
        for K, N in ((1040, 144), (48, 4112), (4096, 96)):  # K not whole steps; N not whole tiles
            cases.append((13, K, N, np.int8, np.int8, False, False, 1, 1, {"STREAM_NR": nr}))
            cases.append((15, K, N, np.uint8, np.uint8, True, False, 1, 1, {"STREAM_NR": nr}))  # the row of ones
            cases.append((7, K, N, np.uint8, np.int8, True, True, 1, 1, {"STREAM_NR": nr}))
            cases.append((16, K, N, np.int8, np.uint8, False, True, 1, 1, {"STREAM_NR": nr}))
    for kw in ({"STREAM_WG": 128}, {"STREAM_TARGET_GROUPS": 4000}, {"STREAM_TARGET_GROUPS": 4000, "STREAM_NR": 64}):
        cases.append((9, 2048, 1024, np.uint8, np.uint8, True, False, 1, 1, kw))
        cases.append((16, 2048, 1024, np.int8, np.int8, False, True, 1, 1, kw))
    cases.append((4, 512, 256, np.int8, np.int8, True, False, 3, 1, {}))     # folded batches: 12 rows
    cases.append((4, 512, 256, np.uint8, np.int8, True, False, 3, 3, {}))    # B per batch: z dimension
    cases.append((15, 4096, 4096, np.uint8, np.uint8, True, False, 1, 1, {}))
    cases.append((12, 8192, 512, np.int8, np.int8, False, False, 1, 1, {"STREAM_NR": 64}))
    bad = 0
    for M, K, N, a_dt, b_dt, zp, cols, batch, b_batch, kw in cases:
        knobs(**kw)
        a, sa, za, b, sb, zb, so, zo = problem(M, K, N, a_dt, b_dt, zp, batch, b_batch)
        want = reference.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo)
        db = dev.tensor(b)
        if cols:
            assert b_batch == 1
            db = dev.tensor(np.ascontiguousarray(b[0, 0].T)).as_strided((1, 1, K, N), (0, 0, 1, K))
        try:
            got = vkops.quantized_linear_matmul(dev.tensor(a), sa, za, db, sb, zb, so, zo, kernel="stream", tuning=TUNING).numpy()
            p = next(reversed(dev._plans._entries.values()))
            mx, eq = close(got, want)
            ok = mx <= 1 and eq >= 0.999
            row = {"check": [M, K, N, np.dtype(a_dt).name, np.dtype(b_dt).name, zp, cols, batch, b_batch], "knobs": kw,
                   "ok": ok, "max_diff": mx, "equal": eq, "kernel": p.dispatches[-1].kernel,
                   "notes": {k: v for k, v in p.notes if k in ("rows", "split_k", "folded")}}
        except Exception as e:  # noqa: BLE001
            ok, row = False, {"check": [M, K, N], "knobs": kw, "error": repr(e)[:300]}
        bad += not ok
        emit(row)
    knobs()
    emit({"checks": len(cases), "failed": bad})


def time_shapes():
    torch = timing.cuda_torch()
    shapes = [(16, 4096, 4096), (1, 4096, 4096), (8, 8192, 8192), (16, 8192, 8192), (16, 4096, 14336), (16, 14336, 4096)]
    variants = [("before (auto, no stream)", "auto", {"STREAM": False}), ("stream auto", "stream", {}),
                ("stream nr32", "stream", {"STREAM_NR": 32}), ("stream nr64", "stream", {"STREAM_NR": 64})]
    for M, K, N in shapes:
        a, sa, za, b, sb, zb, so, zo = problem(M, K, N, np.int8, np.int8, False)
        rows = np.sort(rng.choice(M, min(M, 4), replace=False))
        want = reference.quantized_linear_matmul(a[:, :, rows], sa[:, :, rows], None, b, sb, None, so, zo)
        da, db = dev.tensor(a), dev.tensor(b)
        dsa, dsb = dev.tensor(sa), dev.tensor(sb)
        outs = [dev.empty(vkops.TensorDesc("int8", (1, 1, M, N))) for _ in range(M_.reps)]
        if torch is not None:
            ta = torch.zeros((max(M, 32), K), dtype=torch.int8, device="cuda")
            ta[:M] = torch.from_numpy(a[0, 0]).cuda()
            tb = torch.from_numpy(np.ascontiguousarray(b[0, 0].T)).cuda()
            tg, _ = timing.torch_ms(lambda: torch._int_mm(ta, tb.t()), method=M_)
            tbw = timing.torch_batch_wall_ms(lambda: torch._int_mm(ta, tb.t()))
            emit({"shape": [M, K, N], "variant": "torch _int_mm (A padded to 32 rows, B col-major)", "gpu_ms": tg, "batch_wall_ms": tbw})
        for name, kern, kw in variants:
            if kern == "stream" and M > 16:
                continue
            knobs(**kw)
            f = lambda i: vkops.quantized_linear_matmul(da, dsa, None, db, dsb, None, so, zo, out=outs[i], kernel=kern, tuning=TUNING)
            try:
                r = f(0).numpy()[0, 0]
                p = next(reversed(dev._plans._entries.values()))
                mx, eq = close(r[rows], want[0, 0])
                g = timing.vk_gpu_ms(f, device=dev, method=M_)
                bw = timing.vk_batch_wall_ms(f, device=dev)
                row = {"shape": [M, K, N], "variant": name, "gpu_ms": g, "batch_wall_ms": bw,
                       "ok": mx <= 1 and eq >= 0.999,
                       "kernel": p.dispatches[-1].kernel, "groups": p.dispatches[-1].groups,
                       "notes": {k: v for k, v in p.notes if k in ("config", "split_k", "rows")},
                       "tops": 2 * M * K * N / g / 1e9, "b_tb_s": K * N / g / 1e9}
            except Exception as e:  # noqa: BLE001
                row = {"shape": [M, K, N], "variant": name, "error": repr(e)[:300]}
            emit(row)
    knobs()


def time_layouts():
    """uint8 activations with zero points, and column-major B (PyTorch's N x K weight), before and after."""
    torch = timing.cuda_torch()
    for M, K, N, a_dt, zp, cols in ((16, 4096, 4096, np.uint8, True, False), (16, 8192, 8192, np.uint8, True, False),
                                    (1, 4096, 4096, np.int8, False, True), (16, 4096, 4096, np.int8, False, True),
                                    (16, 8192, 8192, np.int8, False, True)):
        a, sa, za, b, sb, zb, so, zo = problem(M, K, N, a_dt, np.int8, zp)
        zb = np.zeros_like(zb) if zb is not None else None  # int8 weights without zero points, as served
        want = reference.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo)
        da, dsa, dsb = dev.tensor(a), dev.tensor(sa), dev.tensor(sb)
        dza = None if za is None else dev.tensor(za)
        db = dev.tensor(np.ascontiguousarray(b[0, 0].T)).as_strided(b.shape, (0, 0, 1, K)) if cols else dev.tensor(b)
        outs = [dev.empty(vkops.TensorDesc("int8", (1, 1, M, N))) for _ in range(M_.reps)]
        shape = [M, K, N, np.dtype(a_dt).name + ("+zp" if zp else ""), "cols" if cols else "rows"]
        if torch is not None and not zp:
            ta = torch.zeros((max(M, 32), K), dtype=torch.int8, device="cuda")
            ta[:M] = torch.from_numpy(a[0, 0]).cuda()
            tb = torch.from_numpy(np.ascontiguousarray(b[0, 0].T)).cuda()
            tg, _ = timing.torch_ms(lambda: torch._int_mm(ta, tb.t()), method=M_)
            emit({"layout": shape, "variant": "torch _int_mm", "gpu_ms": tg,
                  "batch_wall_ms": timing.torch_batch_wall_ms(lambda: torch._int_mm(ta, tb.t()))})
        for name, kw in (("before (auto, no stream)", {"STREAM": False}), ("auto", {})):
            knobs(**kw)
            f = lambda i: vkops.quantized_linear_matmul(da, dsa, dza, db, dsb, zb, so, zo, out=outs[i], tuning=TUNING)
            r = f(0).numpy()
            p = next(reversed(dev._plans._entries.values()))
            mx, eq = close(r, want)
            emit({"layout": shape, "variant": name, "gpu_ms": timing.vk_gpu_ms(f, device=dev, method=M_),
                  "batch_wall_ms": timing.vk_batch_wall_ms(f, device=dev), "ok": mx <= 1 and eq >= 0.999,
                  "kernels": [d.kernel for d in p.dispatches], "split_k": p.note("split_k")})
    knobs()


def floor():
    for nbytes in (1024, 16 << 20, 64 << 20):
        x = dev.tensor(rng.integers(0, 255, nbytes, dtype=np.uint8))
        outs = [dev.empty(vkops.TensorDesc("uint8", (nbytes,))) for _ in range(10)]
        f = lambda i: vkops.slice(x, [0], [nbytes], [1], out=outs[i % 10])
        g = timing.vk_gpu_ms(f, device=dev, method=M_)
        bw = timing.vk_batch_wall_ms(f, device=dev)
        emit({"floor": f"SLICE1 copy {nbytes} B", "gpu_ms": g, "batch_wall_ms": bw, "copy_tb_s": 2 * nbytes / g / 1e9})


t0 = time.time()
print(dev.info.name if hasattr(dev.info, "name") else dev, flush=True)
if "floor" in ARGS:
    floor()
if "check" in ARGS:
    check()
if "time" in ARGS:
    time_shapes()
if "layouts" in ARGS:
    time_layouts()
json.dump(rows_out, open(os.path.join(OUT, "stream.json"), "w"), indent=1)
print(f"done in {time.time() - t0:.0f} s", flush=True)
