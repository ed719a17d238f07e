"""Research (not a benchmark of record): the int8 cooperative-matrix multiply-accumulate rate this device runs
through Vulkan with no memory traffic, the ceiling of an int8 GEMM's roofline. kernels/research/coopmat_peak.comp
(s8 16x32 x 32x16 -> s32 at subgroup scope, the shapes of qlmm_coopmat.comp) over a sweep of workgroups per SM,
subgroups per workgroup and independent accumulators (ACC), one hand-built Plan a dispatch; GPU ms from Vulkan
timestamps after a warm-up (vkops.bench.timing), ITERS picked from a probe so that a dispatch takes about --ms.
The output is checked exactly against NumPy first (small ITERS).

    bash bench/gpu.sh python3 bench/research/coopmat_peak.py [--sms 132] [--ms 2]
"""
import argparse
import os
import sys

import numpy as np
sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops.bench import timing  # noqa: E402
from vkops.ops.qlmm.coopmat import coopmat_supported  # noqa: E402
from vkops.plan import Builder  # noqa: E402
from vkops.runtime.execute import execute, run_plan  # noqa: E402

KERNEL = "research_coopmat_peak"
OPS = 2 * 16 * 16 * 32  # per coopMatMulAdd
ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
ap = argparse.ArgumentParser()
ap.add_argument("--sms", type=int, default=132, help="SM count (H100 SXM: 132)")
ap.add_argument("--per-sm", type=ints, default=[1, 2, 4, 8], help="workgroups per SM")
ap.add_argument("--subgroups", type=ints, default=[1, 2, 4, 8], help="subgroups (32 lanes) per workgroup")
ap.add_argument("--acc", type=ints, default=[1, 2, 4, 8], help="independent accumulators per subgroup")
ap.add_argument("--ms", type=float, default=2.0, help="target GPU ms of one dispatch")
args = ap.parse_args()

dev = vkops.Device()
if not (coopmat_supported(dev) and dev.supports(KERNEL)):
    sys.exit(f"coopmat_peak: {dev.info.name} offers no s8 16x16x32 cooperative matrices at subgroup scope with "
             "32-lane subgroups (VK_KHR_cooperative_matrix): nothing to measure")
rng = np.random.default_rng(0)
A = rng.integers(-8, 8, (16, 32), dtype=np.int8)  # small: the check's sums stay far from 2^31
B = rng.integers(-8, 8, (32, 16), dtype=np.int8)
frag_np = np.concatenate([A.ravel(), B.T.ravel()])  # A row-major, B column-major
frag = dev.tensor(frag_np)


def plan(groups, sg, acc, iters):
    b = Builder("coopmat_peak", dev.limits)
    f = b.input(vkops.TensorDesc("int8", (1024,)), "frag")
    o = b.output(vkops.TensorDesc("int32", (groups * sg * 256,)), "tiles")
    b.dispatch(KERNEL, [f, o], [1], (groups, 1, 1), np.array([iters], np.uint32), (32 * sg, acc))
    return b.finish()


def gpu_ms(p, method):
    out = dev.empty(p.outputs[0].tensor)
    return timing.vk_gpu_ms(lambda i: execute(p, dev._active_batch(), [frag], [out]), device=dev, method=method)


# Exactness: every subgroup's tile is ACC * ITERS * (A x B), for each workgroup shape of the sweep.
AB = A.astype(np.int64) @ B.astype(np.int64)
for sg in args.subgroups:
    for acc in args.acc:
        for iters in (1, 1000):
            got = run_plan(plan(3, sg, acc, iters), [frag_np], device=dev)[0].reshape(-1, 16, 16)
            if not (got == acc * iters * AB).all():
                sys.exit(f"coopmat_peak: {sg} subgroups, ACC {acc}, ITERS {iters}: "
                         f"{np.count_nonzero(got != acc * iters * AB)} of {got.size} wrong")
print(f"{dev.info.name}: every tile exact (ITERS 1 and 1000)", flush=True)

PROBE_ITERS = 1024
PROBE = timing.Method(reps=3, warm_s=0.05, round_warm_s=0.0, rounds=2, max_rounds=2)
METHOD = timing.Method(reps=5, warm_s=0.3, round_warm_s=0.1)
rows = []
print(f"{'wg/SM':>5} {'groups':>6} {'sg/wg':>5} {'ACC':>3} {'ITERS':>8} {'GPU ms':>8} {'TOPS':>7}", flush=True)
for per_sm in args.per_sm:
    for sg in args.subgroups:
        for acc in args.acc:
            groups = per_sm * args.sms
            probe = gpu_ms(plan(groups, sg, acc, PROBE_ITERS), PROBE)
            iters = max(64, min(1 << 24, int(PROBE_ITERS * args.ms / probe) // 64 * 64))
            ms = gpu_ms(plan(groups, sg, acc, iters), METHOD)
            tops = OPS * iters * groups * sg * acc / (ms * 1e-3) / 1e12
            rows.append((tops, per_sm, groups, sg, acc, iters, ms))
            print(f"{per_sm:>5} {groups:>6} {sg:>5} {acc:>3} {iters:>8} {ms:>8.3f} {tops:>7.1f}", flush=True)
tops, per_sm, groups, sg, acc, iters, ms = max(rows)
print(f"best: {tops:.1f} TOPS int8 at {per_sm} workgroups/SM ({groups}) of {sg} subgroups, ACC {acc}, "
      f"ITERS {iters}: {ms:.3f} ms")
