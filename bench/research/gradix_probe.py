"""Research (not a benchmark of record): where GRADIX's digit pass spends its time on many rows. The first digit pass
of a float32 GRADIX plan (top_k1_gradix_hist_f32) beside three cut-down copies with the same push block, groups and
buffers (kernels/variants.py research_gradix_probe*): 1 the loads alone, 2 with the keys and the prefix test,
3 with the shared histogram too; none merges its histogram into the row's. GPU ms from Vulkan timestamps and the row
data's read rate. The probes' outputs mean nothing (nothing is checked); the real pass leaves the counters zero.

    bash bench/gpu.sh python3 bench/research/gradix_probe.py [--shape 64x131072] [--k 256] [--chunks 4,16]
"""
import argparse
import os
import sys

import numpy as np
sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops.bench import timing  # noqa: E402
from vkops.ops import top_k1  # noqa: E402
from vkops.plan import Builder  # noqa: E402
from vkops.runtime.execute import execute  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="64x131072")
ap.add_argument("--k", type=int, default=256)
ap.add_argument("--chunks", default="", help="GRADIX chunks a row to plan with (comma list; default: the rule's)")
args = ap.parse_args()
dev = vkops.Device()
M_ = timing.Method(reps=30, warm_s=0.3, round_warm_s=0.1)
shape = tuple(map(int, args.shape.split("x")))
x_np = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
x = dev.tensor(x_np)
xd = x.desc
print("device", dev.name, "shape", shape, "K", args.k, flush=True)
for chunks in [int(c) for c in args.chunks.split(",") if c] or [None]:
    d = top_k1.TopK1Desc(xd, *top_k1.output_descs(xd, 1, args.k), 1, args.k).validate()
    p = top_k1.plan(d, dev.limits, force="gradix", chunks=chunks)
    first = p.dispatches[0]
    assert first.kernel == "top_k1_gradix_hist_f32", first.kernel
    bufs = [p.buffers[i] for i in first.bindings]
    for kernel in ("top_k1_gradix_hist_f32", "research_gradix_probe3", "research_gradix_probe2",
                   "research_gradix_probe1"):
        b = Builder("gradix_probe", dev.limits)
        xi = b.input(xd, "x")
        work = b.scratch(vkops.TensorDesc("uint32", (bufs[1].words,)), "work")
        ctr = b.counters(bufs[2].words)
        b.dispatch(kernel, [xi, work, ctr], [1, 2], first.groups, np.array(first.push, np.uint32), first.spec)
        plan = b.finish()
        ms = timing.vk_gpu_ms(lambda i=0, plan=plan: execute(plan, dev._active_batch(), [x], []), device=dev, method=M_)
        print(f"chunks {p.note('chunks') if hasattr(p, 'note') else chunks}  groups {first.groups}  {kernel:26s} "
              f"{ms * 1000:7.1f} us  {x_np.nbytes / ms / 1e9:6.2f} TB/s", flush=True)
