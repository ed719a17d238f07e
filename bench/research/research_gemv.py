"""Research (not a benchmark of record): the matrix-vector QLinearMatMul kernel (kernels/qlmm/qlmm_gemv.comp) for
1-4 rows against row-major B, beside the kernels auto picked before it (stream, dot) and torch._int_mm, in one
process, GPU ms (Vulkan timestamps / CUDA events) and B's read rate, every output checked exactly against the
oracle. docs/tuning/qlmm.md, 2026-11-25.

    bash bench/gpu.sh python3 bench/research/research_gemv.py [--target 528,1056,2112] [--shapes 1x4096x11008,...]
"""
import argparse
import dataclasses
import json
import os
import sys

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import vkops  # noqa: E402
from vkops import reference  # noqa: E402
from vkops.bench import timing  # noqa: E402
from vkops.ops.qlmm.tuning import DEFAULT  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--shapes", default="1x4096x4096,1x4096x11008,1x11008x4096,1x4096x32000,1x4096x151936")
ap.add_argument("--target", default=str(DEFAULT.GEMV_TARGET_GROUPS), help="GEMV_TARGET_GROUPS values to sweep")
args = ap.parse_args()
M_ = timing.Method(reps=30, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device()
rng = np.random.default_rng(0)
torch = timing.cuda_torch()
OUT = os.environ.get("OUT", "/tmp")
rows_out = []


def emit(row):
    rows_out.append(row)
    print(json.dumps(row), flush=True)


for shape in args.shapes.split(","):
    M, K, N = map(int, shape.split("x"))
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    so = float(2.0 ** round(np.log2(np.sqrt(K) * 74 * 74 / 16)))  # power of two: exact in float32 too
    want = reference.quantized_linear_matmul(a, 1.0, None, b, 1.0, None, so, None)
    da, db = dev.tensor(a), dev.tensor(b)
    outs = [dev.empty(vkops.TensorDesc("int8", (M, N))) for _ in range(M_.reps)]
    if torch is not None:
        ta = torch.zeros((32, K), dtype=torch.int8, device="cuda")
        ta[:M] = torch.from_numpy(a).cuda()
        tb = torch.from_numpy(np.ascontiguousarray(b.T)).cuda()
        tg, _ = timing.torch_ms(lambda: torch._int_mm(ta, tb.t()), method=M_)
        emit({"shape": shape, "variant": "torch _int_mm (B col-major, A padded to 32 rows)", "gpu_ms": tg,
              "TBps": K * N / tg / 1e9})
    variants = [("before (auto without gemv)", "auto", {"GEMV": False})]
    variants += [(f"gemv target {t}", "gemv", {"GEMV_TARGET_GROUPS": int(t)}) for t in args.target.split(",")]
    for name, kern, kw in variants:
        tun = dataclasses.replace(DEFAULT, **kw)
        try:
            f = lambda i: vkops.quantized_linear_matmul(da, 1.0, None, db, 1.0, None, so, None, out=outs[i], kernel=kern,  # noqa: E731
                                                        tuning=tun)
            got = f(0).numpy()
            p = next(reversed(dev._plans._entries.values()))
            ok = bool(np.array_equal(got, want))
            g = timing.vk_gpu_ms(f, device=dev, method=M_)
            emit({"shape": shape, "variant": name, "gpu_ms": g, "TBps": K * N / g / 1e9, "exact": ok,
                  "kernel": p.dispatches[-1].kernel, "groups": list(p.dispatches[-1].groups),
                  "notes": {k: v for k, v in p.notes if k in ("rows", "split_k", "kernel")}})
        except Exception as e:  # noqa: BLE001
            emit({"shape": shape, "variant": name, "error": repr(e)[:300]})
with open(os.path.join(OUT, "gemv.json"), "w") as fh:
    json.dump(rows_out, fh, indent=1)
