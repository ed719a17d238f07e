"""Research (not a benchmark of record): the matrix-vector QLinearMatMul kernel (kernels/qlmm/qlmm_gemv.comp) for
1-4 rows against row-major B, beside the kernels auto picked before it (stream, dot) and torch._int_mm, in one
process, GPU ms (Vulkan timestamps / CUDA events) and B's read rate, every output checked exactly against the
oracle. docs/tuning/qlmm.md, 2026-11-25. --cold rotates the calls over copies of B that together exceed L2 (each
call reads B from memory, as a decoder's chain of products does); --swap NAME runs the same plans on research builds
of the kernel too (interleaved; the one device's gemv dispatches swapped only around the research side's calls).

    bash bench/gpu.sh python3 bench/research/research_gemv.py [--target 528,1056,2112] [--shapes 1x4096x11008,...]
        [--cold 300] [--swap research_gemv_x --rounds 3 --no-before] [--b-layout column-major]
"""
import argparse
import dataclasses
import itertools
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
ap.add_argument("--swap", default="", help="also run the gemv plans on research builds of qlmm_gemv.comp named "
                "NAME[_m2][_bc][_sk] after the shipped qlmm_gemv[_m2][_bc][_sk] (kernels/variants.py), interleaved")
ap.add_argument("--rounds", type=int, default=1)
ap.add_argument("--b-layout", default="row-major", choices=("row-major", "column-major"),
                help="column-major: B a transposed view of an N x K tensor (PyTorch's Linear weight)")
ap.add_argument("--cold", type=float, default=0, help="MiB the calls rotate over (copies of B; 0: one B, which stays "
                "in L2 where it fits, 50 MB on the H100): e.g. 300 reads B from memory every call")
ap.add_argument("--no-before", action="store_true", help="skip the kernels auto picked before gemv")
args = ap.parse_args()
M_ = timing.Method(reps=30, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device()
devs = {"": dev}
swap_on = [False]  # while set, the gemv dispatches recorded run the research builds
if args.swap:
    # vkops.Device() is one object an index: the sides share it, so the swap is switched on only around the research
    # side's calls (whose plans have keys of their own, below: recorded while it is on, they keep its pipelines)
    devs[args.swap] = dev
    _real = dev._pipelines.dispatch_op  # qlmm_gemv[_m2][_bc][_sk] -> NAME[_m2][_bc][_sk]
    dev._pipelines.dispatch_op = lambda kernel, *a, **kw: _real(
        args.swap + kernel[len("qlmm_gemv"):] if swap_on[0] and kernel.startswith("qlmm_gemv") else kernel, *a, **kw)
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
    nb = max(1, -(-int(args.cold * 2**20) // b.nbytes)) if args.cold else 1
    def up(d):  # B as the call sees it: K x N, row-major or a view of its N x K transpose
        if args.b_layout == "row-major":
            return d.tensor(b)
        return d.tensor(np.ascontiguousarray(b.T)).as_strided(b.shape, (1, K))
    on = {k: (d.tensor(a), [up(d) for _ in range(nb)], [d.empty(vkops.TensorDesc("int8", (M, N))) for _ in range(M_.reps)])
          for k, d in devs.items()}
    if torch is not None:
        ta = torch.zeros((32, K), dtype=torch.int8, device="cuda")
        ta[:M] = torch.from_numpy(a).cuda()
        tbs = itertools.cycle([torch.from_numpy(np.ascontiguousarray(b.T)).cuda() for _ in range(nb)])
        tg, _ = timing.torch_ms(lambda: torch._int_mm(ta, next(tbs).t()), method=M_)
        emit({"shape": shape, "variant": "torch _int_mm (B col-major, A padded to 32 rows)" + (f" (B cold: {nb} copies)" if nb > 1 else ""), "gpu_ms": tg,
              "TBps": K * N / tg / 1e9})
    variants = [] if args.no_before else [("before (auto without gemv)", "auto", {"GEMV": False}, "")]
    variants += [(f"gemv target {t}" + (f" on {sw}" if sw else ""), "gemv", {"GEMV_TARGET_GROUPS": int(t)}, sw)
                 for _ in range(args.rounds) for t in args.target.split(",") for sw in devs]
    for name, kern, kw, sw in variants:
        d = devs[sw]
        swap_on[0] = bool(sw)
        da, db, outs = on[sw]
        # plans are kept process-wide by key: the research builds' plans get a key of their own through a knob
        # the matrix-vector kernel does not read
        tun = dataclasses.replace(DEFAULT, **kw, **({"DOT_TARGET_GROUPS": DEFAULT.DOT_TARGET_GROUPS + 1} if sw else {}))
        try:
            f = lambda i: vkops.quantized_linear_matmul(da, 1.0, None, db[i % nb], 1.0, None, so, None, out=outs[i],  # noqa: E731
                                                        kernel=kern, tuning=tun)
            got = f(0).numpy()
            p = next(reversed(d._plans._entries.values()))
            ok = bool(np.array_equal(got, want))
            g = timing.vk_gpu_ms(f, device=d, method=M_)
            emit({"shape": shape, "variant": name + (f" (B cold: {nb} copies)" if nb > 1 else ""), "gpu_ms": g, "TBps": K * N / g / 1e9, "exact": ok,
                  "kernel": p.dispatches[-1].kernel, "groups": list(p.dispatches[-1].groups),
                  "notes": {k: v for k, v in p.notes if k in ("rows", "split_k", "kernel")}})
        except Exception as e:  # noqa: BLE001
            emit({"shape": shape, "variant": name, "error": repr(e)[:300]})
with open(os.path.join(OUT, "gemv.json"), "w") as fh:
    json.dump(rows_out, fh, indent=1)
