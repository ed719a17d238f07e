"""What a user waits for: wall time per call, side by side with torch in the same process.

Rows (every output checked against torch on CUDA, else NumPy):
- eager calls, NumPy -> NumPy (torch: from_numpy -> cuda -> op -> cpu) and device-resident (torch: op +
  synchronize): top_k 1x1024 K=8, 1x151936 K=50, 8x151936 K=50 (fp32, fp16); slice 1024x1024
  [::-1, ::2]; qlmm 16x4096x4096 and 128x4096x4096 (torch._int_mm needs M > 16: M=16 is padded to 32);
- the first call on a shape not seen before (after the kernel was used), against a repeated call;
- the first call in a fresh process, with the pipeline cache file present, against a repeated call;
- 10 independent calls in one batch for the operator benches' large shapes: wall / 10 beside GPU time.
Usage: python bench/bench_latency.py [--small] [--skip-fresh]   (--small: CPU-sized batch shapes)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vkops  # noqa: E402
from vkops.bench.info import machine  # noqa: E402
from vkops.bench.report import table  # noqa: E402
from vkops.bench.timing import cuda_torch, torch_ms, vk_gpu_ms, wall_ms  # noqa: E402
REPS = 30


def write_results(name: str, rows: list) -> Path:
    """bench/results/<name>.json (or under $OUT): this benchmark's rows, not a `vkops bench` document."""
    out = Path(os.environ.get("OUT") or ROOT / "bench" / "results")
    out.mkdir(parents=True, exist_ok=True)
    dev = vkops.Device()
    path = out / f"{name}.json"
    path.write_text(json.dumps({"machine": {**machine(), "vulkan_device": dev.name, "driver": dev.driver},
                                "rows": rows}, indent=1))
    return path


def topk_ref(x, k):
    idx = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.uint32)


def qlmm_ref(a, b):
    """The bench's quantization: scales 1/16 (a), 1/32 (b), 1.0 (out), zero points 0."""
    acc = a.astype(np.int64) @ b.astype(np.int64)
    return np.clip(np.rint(acc / 512.0), -128, 127).astype(np.int8)


def qlmm_call(a, b, out=None):
    return vkops.quantized_linear_matmul(a, np.float32(1 / 16), None, b, np.float32(1 / 32), None,
                                         np.float32(1.0), None, output_dtype=np.int8, out=out)


class Case:
    """One operator call: vkops NumPy/device callables, torch equivalents, and a result check."""

    def __init__(self, name, np_call, dev_call, check, t_np=None, t_dev=None):
        self.name, self.np_call, self.dev_call, self.check = name, np_call, dev_call, check
        self.t_np, self.t_dev = t_np, t_dev


def cases(torch, rng, small):
    out = []
    for dt, rows, L, k in [("float32", 1, 1024, 8), ("float32", 1, 151936, 50), ("float32", 8, 151936, 50),
                           ("float16", 1, 151936, 50), ("float16", 8, 151936, 50)]:
        x = rng.standard_normal((rows, L)).astype(dt)
        xt = vkops.to_device(x)
        rv, ri = topk_ref(x, k)

        def chk(res, rv=rv, ri=ri):
            v, i = (r.numpy() if isinstance(r, vkops.DeviceTensor) else r for r in res)
            return np.array_equal(v, rv) and np.array_equal(i, ri)

        t_np = t_dev = None
        if torch is not None:
            tx = torch.from_numpy(x).cuda()
            t_np = lambda x=x, k=k: [r.cpu() for r in torch.topk(torch.from_numpy(x).cuda(), k)]  # noqa: E731
            t_dev = lambda tx=tx, k=k: torch.topk(tx, k)  # noqa: E731
        out.append(Case(f"top_k {dt.replace('float', 'fp')} {rows}x{L} K={k}",
                        lambda x=x, k=k: vkops.top_k(x, k), lambda xt=xt, k=k: vkops.top_k(xt, k), chk, t_np, t_dev))
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    xt = vkops.to_device(x)
    want = x[::-1, ::2]
    args = ([0, 0], [1024, 1024], [-1, 2])
    t_np = t_dev = None
    if torch is not None:
        tx = torch.from_numpy(x).cuda()
        t_np = lambda: torch.from_numpy(x).cuda()[:, ::2].flip(0).cpu()  # noqa: E731
        t_dev = lambda: tx[:, ::2].flip(0)  # noqa: E731
    out.append(Case("slice fp32 1024x1024 [::-1, ::2]", lambda: vkops.slice(x, *args), lambda: vkops.slice(xt, *args),
                    lambda r: np.array_equal(r.numpy() if isinstance(r, vkops.DeviceTensor) else r, want), t_np, t_dev))
    KN = 512 if small else 4096  # lavapipe runs the portable kernel at ~0.002 TOPS
    for M in (16, 128):
        a = rng.integers(-128, 128, size=(M, KN), dtype=np.int8)
        b = rng.integers(-128, 128, size=(KN, KN), dtype=np.int8)
        at, bt = vkops.to_device(a), vkops.to_device(b)
        want_q = qlmm_ref(a, b)
        t_np = t_dev = None
        if torch is not None:
            Mp = max(M, 32)
            ta = torch.zeros((Mp, KN), dtype=torch.int8, device="cuda")
            ta[:M] = torch.from_numpy(a).cuda()
            tb = torch.from_numpy(b).cuda()
            t_np = lambda a=a, b=b, Mp=Mp, M=M: torch._int_mm(  # noqa: E731
                torch.nn.functional.pad(torch.from_numpy(a).cuda(), (0, 0, 0, Mp - M)), torch.from_numpy(b).cuda()).cpu()
            t_dev = lambda ta=ta, tb=tb: torch._int_mm(ta, tb)  # noqa: E731
        out.append(Case(f"qlmm int8 {M}x{KN}x{KN}", lambda a=a, b=b: qlmm_call(a, b),
                        lambda at=at, bt=bt: qlmm_call(at, bt),
                        lambda r, w=want_q: np.array_equal(r.numpy() if isinstance(r, vkops.DeviceTensor) else r, w),
                        t_np, t_dev))
    return out


def vk_sync(dev, f):
    """f, then a wait for the device's calls in flight: eager calls on device tensors return once
    submitted, as torch's do (whose side gets torch.cuda.synchronize())."""
    return lambda: (f(), dev.synchronize())


def interleaved(fns, rounds=5):
    """Median wall ms of each callable (None stays None), timed in turns over `rounds` rounds and
    the lowest round kept: the card's clock and the host wander from one second to the next."""
    best = [None] * len(fns)
    for _ in range(rounds):
        for j, fn in enumerate(fns):
            if fn is not None:
                t = wall_ms(fn, REPS)
                best[j] = t if best[j] is None else min(best[j], t)
    return best


def eager_rows(dev, torch, rng, small):
    rows = []
    for c in cases(torch, rng, small):
        ok = c.check(c.np_call()) and c.check(c.dev_call())
        s0 = dev.stats()
        sync = (lambda f: (lambda: (f(), torch.cuda.synchronize()))) if torch is not None else None
        np_ms, dev_ms, t_np, t_dev = interleaved([
            c.np_call, vk_sync(dev, c.dev_call), c.t_np and sync(c.t_np), c.t_dev and sync(c.t_dev)])
        s1 = dev.stats()
        row = {"case": c.name, "vk numpy ms": np_ms, "vk device ms": dev_ms,
               "torch numpy ms": t_np, "torch device ms": t_dev,
               "new buffers": s1["buffers_created"] - s0["buffers_created"],
               "new pipelines": s1["pipelines"] - s0["pipelines"], "verified": bool(ok)}
        if row["torch device ms"]:
            row["device / torch"] = dev_ms / row["torch device ms"]
            row["numpy / torch"] = np_ms / row["torch numpy ms"]
        rows.append(row)
        print(row, flush=True)
    return rows


def breakdown_rows(dev, rng, small):
    """Where a device-resident call's wall time goes: Python (kp's record and submit stubbed out),
    one empty submission on a reused sequence (submit + fence wait), and the call's GPU time."""
    from vkops.runtime import _kp, submit

    k = _kp.kp()
    probe = dev.empty(vkops.TensorDesc("uint32", (1,)))
    empty = lambda: dev._sequences.run([k.OpMemoryBarrier([probe._buffer.kp], _kp.SHADER_WRITE, _kp.SHADER_READ,  # noqa: E731
                                                          _kp.STAGE_COMPUTE, _kp.STAGE_COMPUTE, True)])
    floor = wall_ms(empty, REPS)
    rows = []
    for c in cases(None, rng, small):
        full = wall_ms(vk_sync(dev, c.dev_call), REPS)
        b = dev.batch(timestamps=True)
        with b:
            c.dev_call()
        gpu = sum(b.gpu_ns) / 1e6
        real = submit.Sequences.submit, submit.Sequences.wait
        submit.Sequences.submit = lambda self, ops, timestamps=False, reuse=None: None
        submit.Sequences.wait = lambda self, pending, timestamps=False: []
        try:
            py = wall_ms(vk_sync(dev, c.dev_call), REPS)
        finally:
            submit.Sequences.submit, submit.Sequences.wait = real
        row = {"case": c.name, "wall ms": full, "python ms": py, "empty submit ms": floor, "GPU ms (1 call)": gpu,
               "rest ms": full - py - floor - gpu}
        rows.append(row)
        print(row, flush=True)
    return rows


def new_shape_rows(dev, rng, small):
    """The first call on a shape not seen before, once its kernel has been used, against a repeat."""
    rows = []
    KN = 512 if small else 4096
    specs = [("top_k fp32 1xL K=50", lambda n: (rng.standard_normal((1, n)).astype(np.float32),),
              lambda x: vkops.top_k(x, 50), [151936, 150001, 149000, 128256]),
             ("slice fp32 Rx1024 [::-1, ::2]", lambda n: (rng.standard_normal((n, 1024)).astype(np.float32),),
              lambda x: vkops.slice(x, [0, 0], list(x.shape), [-1, 2]), [1024, 1000, 999, 777]),
             (f"qlmm int8 Mx{KN}x{KN}", lambda n: (rng.integers(-128, 128, (n, KN), dtype=np.int8),),
              None, [16, 17, 24, 31])]
    b = vkops.to_device(rng.integers(-128, 128, (KN, KN), dtype=np.int8))
    for name, make, call, sizes in specs:
        if call is None:
            call = lambda a: qlmm_call(a, b)  # noqa: E731
        dev_in = [vkops.to_device(make(n)[0]) for n in sizes]
        call(dev_in[0])  # the kernel has been used
        for n, x in zip(sizes[1:], dev_in[1:]):
            s0 = dev.stats()
            t = time.perf_counter()
            call(x)
            dev.synchronize()
            first = (time.perf_counter() - t) * 1e3
            s1 = dev.stats()
            again = wall_ms(vk_sync(dev, lambda: call(x)), 10)
            row = {"case": f"{name} n={n}", "first ms": first, "repeat ms": again, "ratio": first / again,
                   "new pipelines": s1["pipelines"] - s0["pipelines"]}
            rows.append(row)
            print(row, flush=True)
    return rows


FRESH = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np, vkops
dev = vkops.Device(); dev._manager()
ready = (time.perf_counter() - t0) * 1e3
rng = np.random.default_rng(0)
x = vkops.to_device(rng.standard_normal((1, 151936)).astype(np.float32))
s = vkops.to_device(rng.standard_normal((1024, 1024)).astype(np.float32))
a = vkops.to_device(rng.integers(-128, 128, (16, 4096), dtype=np.int8))
b = vkops.to_device(rng.integers(-128, 128, (4096, 4096), dtype=np.int8))
q = lambda: vkops.quantized_linear_matmul(a, np.float32(1/16), None, b, np.float32(1/32), None, np.float32(1.0), None)
calls = {"top_k 1x151936 K=50": lambda: vkops.top_k(x, 50), "slice 1024x1024": lambda: vkops.slice(s, [0, 0], [1024, 1024], [-1, 2]),
         "qlmm 16x4096x4096": q}
out = {"device ready ms": ready}
for name, f in calls.items():
    t = time.perf_counter(); f(); first = (time.perf_counter() - t) * 1e3
    ts = []
    for _ in range(10):
        t = time.perf_counter(); f(); ts.append((time.perf_counter() - t) * 1e3)
    out[name] = (first, sorted(ts)[5])
out["loaded"] = dev.stats()["pipeline_cache_loaded_bytes"]
print(json.dumps(out))
"""


def fresh_rows():
    """A fresh process: first with an empty cache directory, then with the file the first one wrote."""
    rows = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, XDG_CACHE_HOME=d, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        for label in ("no cache file", "cache file present"):
            r = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, env=env, timeout=600)
            if r.returncode != 0:
                print(r.stderr[-2000:])
                continue
            res = json.loads(r.stdout.strip().splitlines()[-1])
            for name, v in res.items():
                if isinstance(v, list):
                    row = {"case": f"fresh process, {label}: {name}", "first ms": v[0], "repeat ms": v[1],
                           "extra ms": v[0] - v[1], "device ready ms": res["device ready ms"],
                           "cache bytes loaded": res["loaded"]}
                    rows.append(row)
                    print(row, flush=True)
    return rows


def batch_rows(dev, torch, rng, small):
    """10 independent calls recorded in one batch: wall / 10 against GPU time, and torch's."""
    n = 10
    rows = []
    if small:
        specs = [("top_k fp32 512x1024 K=64", "topk", (512, 1024), 64), ("slice fp32 2048x2048 [:, ::2]", "slice", (2048, 2048), None),
                 ("qlmm int8 256^3", "qlmm", (256, 256, 256), None)]
    else:
        specs = [("top_k fp32 32768x1024 K=64", "topk", (32768, 1024), 64), ("top_k fp32 4096x32768 K=8", "topk", (4096, 32768), 8),
                 ("top_k fp32 16384x2048 K=1024", "topk", (16384, 2048), 1024),
                 ("slice fp32 16384x16384 [:, ::2]", "slice", (16384, 16384), None), ("qlmm int8 4096^3", "qlmm", (4096, 4096, 4096), None)]
    for name, op, shape, k in specs:
        if op == "topk":
            x = rng.standard_normal(shape).astype(np.float32)
            xt = vkops.to_device(x)
            outs = [(dev.empty(vkops.TensorDesc("float32", (shape[0], k))), dev.empty(vkops.TensorDesc("uint32", (shape[0], k))))
                    for _ in range(n)]
            rec = lambda i: vkops.top_k(xt, k, out=outs[i])  # noqa: E731
            rv, _ = topk_ref(x[:64], k)
            check = lambda: all(np.array_equal(o[0].numpy()[:64], rv) for o in outs)  # noqa: E731
            tfn = (lambda tx=torch.from_numpy(x).cuda(): torch.topk(tx, k)) if torch else None
        elif op == "slice":
            x = rng.standard_normal(shape).astype(np.float32)
            xt = vkops.to_device(x)
            outs = [dev.empty(vkops.TensorDesc("float32", (shape[0], shape[1] // 2))) for _ in range(n)]
            rec = lambda i: vkops.slice(xt, [0, 0], list(shape), [1, 2], out=outs[i])  # noqa: E731
            check = lambda: all(np.array_equal(o.numpy(), x[:, ::2]) for o in outs[:2])  # noqa: E731
            tfn = (lambda tx=torch.from_numpy(x).cuda(): tx[:, ::2].contiguous()) if torch else None
        else:
            M, K, N = shape
            a = rng.integers(-128, 128, (M, K), dtype=np.int8)
            b = rng.integers(-128, 128, (K, N), dtype=np.int8)
            at, bt = vkops.to_device(a), vkops.to_device(b)
            outs = [dev.empty(vkops.TensorDesc("int8", (M, N))) for _ in range(n)]
            rec = lambda i: qlmm_call(at, bt, out=outs[i])  # noqa: E731
            want = qlmm_ref(a[:16], b)
            check = lambda: all(np.array_equal(o.numpy()[:16], want) for o in outs[:2])  # noqa: E731
            tfn = (lambda ta=torch.from_numpy(a).cuda(), tb=torch.from_numpy(b).cuda(): torch._int_mm(ta, tb)) if torch else None

        def batch10():
            with dev.batch():
                for i in range(n):
                    rec(i)

        batch10()
        ok = check()
        gpu = vk_gpu_ms(rec, n, dev)
        wall = wall_ms(batch10, 10) / n
        row = {"case": name, "vk GPU ms": gpu, "vk wall/call ms": wall, "wall/GPU": wall / gpu, "verified": bool(ok)}
        if torch is not None:
            tg, _ = torch_ms(tfn, reps=n)
            tw = wall_ms(lambda: ([tfn() for _ in range(n)], torch.cuda.synchronize()), 10) / n
            row.update({"torch GPU ms": tg, "torch wall/call ms": tw})
        rows.append(row)
        print(row, flush=True)
        del outs
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="CPU-sized batch shapes (lavapipe)")
    ap.add_argument("--skip-fresh", action="store_true")
    args = ap.parse_args()
    dev = vkops.Device()
    small = args.small or dev.device_type == "cpu"
    torch = cuda_torch()
    rng = np.random.default_rng(0)
    print(dev, "features:", ",".join(dev.features), flush=True)
    t0 = time.time()
    global REPS
    REPS = 10 if small else REPS
    eager = eager_rows(dev, torch, rng, small)
    parts = breakdown_rows(dev, rng, small)
    new = new_shape_rows(dev, rng, small)
    fresh = [] if args.skip_fresh else fresh_rows()
    batch = batch_rows(dev, torch, rng, small)
    write_results("latency", eager + parts + new + fresh + batch)
    print(f"\nLatency on {dev.name} ({dev.driver}), {time.time() - t0:.0f} s")
    print(table(eager, ["case", "vk numpy ms", "torch numpy ms", "vk device ms", "torch device ms",
                        "new buffers", "new pipelines", "verified"]))
    print(table(parts, ["case", "wall ms", "python ms", "empty submit ms", "GPU ms (1 call)", "rest ms"]))
    print(table(new + fresh, ["case", "first ms", "repeat ms", "new pipelines", "extra ms", "cache bytes loaded"]))
    print(table(batch, ["case", "vk GPU ms", "vk wall/call ms", "wall/GPU", "torch GPU ms", "torch wall/call ms",
                        "verified"]))
    print(f"stats: {dev.stats()}")


if __name__ == "__main__":
    main()
