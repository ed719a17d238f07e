"""Research (not a benchmark of record): the GPU time of reading a buffer once and doing nothing else, the floor
under a memory-bound kernel such as a decoding-sized int8 GEMM, which reads B once (issue 36: 16 x 4096^2 reads
16 MiB of B). kernels/research/read_floor.comp (a workgroup XORs a contiguous range, U 16-byte loads in flight a
lane) over a sweep of workgroups, invocations and U, one hand-built Plan a dispatch; GPU ms from Vulkan timestamps
after a warm-up (vkops.bench.timing), every output checked against NumPy's XOR of the input's words.

    bash bench/gpu.sh python3 bench/research/read_floor.py [--mib 0.001,16,45,64] [--groups 132,264,528,1056] [--cold 300]

--cold MiB: the calls rotate over copies of the data that together exceed it (from memory, not L2: 50 MB on the H100).

--strips KxN reads a K x N byte matrix as a small-M GEMM's workgroups read B (kernels/research/read_strips.comp):
each workgroup a strip of --width bytes of every row over 1/--splits of the rows.

    bash bench/gpu.sh python3 bench/research/read_floor.py --strips 4096x4096 --width 32,64,128,256 --splits 1,2,4
"""
import argparse
import os
import sys

import numpy as np
sys.path.insert(0, os.getcwd())
import vkops  # noqa: E402
from vkops.bench import timing  # noqa: E402
from vkops.plan import Builder  # noqa: E402
from vkops.runtime.execute import execute, run_plan  # noqa: E402

KERNEL = "research_read_floor"
ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
ap = argparse.ArgumentParser()
ap.add_argument("--mib", type=lambda s: [float(x) for x in s.split(",")], default=[0.001, 16, 45, 64],
                help="MiB read (16: 16 x 4096^2's B; 45: 4096 x 11008)")
ap.add_argument("--groups", type=ints, default=[132, 264, 528, 1056, 2112])
ap.add_argument("--wg", type=ints, default=[256, 512, 1024], help="invocations a workgroup (powers of 2)")
ap.add_argument("--u", type=ints, default=[4, 8, 16], help="16-byte loads in flight a lane")
ap.add_argument("--strips", default=None, help="KxN: read a K x N byte matrix in column strips instead")
ap.add_argument("--width", type=ints, default=[16, 32, 64, 128, 256], help="--strips: bytes a workgroup reads a row")
ap.add_argument("--splits", type=ints, default=[1, 2, 4, 8], help="--strips: K ranges a strip is split into")
ap.add_argument("--cold", type=float, default=0, help="MiB the calls rotate over (copies of the data; 0: one copy, "
                "which stays in L2 where it fits, 50 MB on the H100): e.g. 200 reads every call from memory")
args = ap.parse_args()

dev = vkops.Device()
METHOD = timing.Method(reps=20, warm_s=0.3, round_warm_s=0.1)
rng = np.random.default_rng(0)
print(f"{dev.info.name}", flush=True)


def run_one(kernel, data, src, groups, push, spec):
    """A one-dispatch plan of `kernel` over `data` (its device copies `src`, call i reading copy i): (its output
    words, GPU ms)."""
    b = Builder(kernel, dev.limits)
    i = b.input(vkops.TensorDesc("uint32", (data.size,)), "in")
    o = b.output(vkops.TensorDesc("uint32", (groups,)), "out")
    b.dispatch(kernel, [i, o], [1], (groups, 1, 1), np.array(push, np.uint32), spec)
    p = b.finish()
    got = run_plan(p, [data], device=dev)[0]
    out = dev.empty(p.outputs[0].tensor)
    return got, timing.vk_gpu_ms(lambda k: execute(p, dev._active_batch(), [src[k % len(src)]], [out]), device=dev,
                                 method=METHOD)


def copies(data):
    """The data's device copies: one, or enough to exceed --cold MiB (each call then reads from memory)."""
    n = max(1, -(-int(args.cold * 2**20) // data.nbytes)) if args.cold else 1
    return [dev.tensor(data) for _ in range(n)]


def strips(kn):
    k, n = (int(x) for x in kn.split("x"))
    data = rng.integers(0, 2**32, k * n // 4, dtype=np.uint32)
    src = copies(data)
    rows = data.reshape(k, n // 16, 4)
    print(f"{'KxN':>12} {'width':>5} {'splits':>6} {'groups':>6} {'wg':>5} {'U':>3} {'GPU ms':>9} {'TB/s':>6}", flush=True)
    for width in args.width:
        w16 = width // 16
        for splits in args.splits:
            per = -(-k // splits)
            want = [int(np.bitwise_xor.reduce(rows[s_ * per:(s_ + 1) * per, c * w16:(c + 1) * w16].ravel()))
                    for s_ in range(splits) for c in range(n // width)]
            groups = len(want)
            for wg in args.wg:
                for u in args.u:
                    got, ms = run_one("research_read_strips", data, src, groups, [k, n // 16, splits], (wg, u, w16))
                    if [int(x) for x in got] != want:
                        sys.exit(f"read_strips: {kn} width {width} splits {splits} wg {wg} U {u}: wrong XORs")
                    print(f"{kn:>12} {width:>5} {splits:>6} {groups:>6} {wg:>5} {u:>3} {ms:>9.4f} "
                          f"{k * n / (ms * 1e-3) / 1e12:>6.2f}", flush=True)


if args.strips:
    strips(args.strips)
    sys.exit(0)
print(f"{'MiB':>8} {'groups':>6} {'wg':>5} {'U':>3} {'GPU ms':>9} {'TB/s':>6}", flush=True)
for mib in args.mib:
    n16 = max(1, int(mib * 2**20) // 16)
    data = rng.integers(0, 2**32, n16 * 4, dtype=np.uint32)
    src = copies(data)
    want = int(np.bitwise_xor.reduce(data))
    best = None
    for groups in args.groups:
        for wg in args.wg:
            for u in args.u:
                words, ms = run_one(KERNEL, data, src, groups, [n16], (wg, u))
                got = int(np.bitwise_xor.reduce(words))
                if got != want:
                    sys.exit(f"read_floor: {mib} MiB, {groups} groups, wg {wg}, U {u}: XOR {got:#x}, want {want:#x}")
                tbs = n16 * 16 / (ms * 1e-3) / 1e12
                best = min(best or (ms, groups, wg, u), (ms, groups, wg, u))
                print(f"{mib:>8} {groups:>6} {wg:>5} {u:>3} {ms:>9.4f} {tbs:>6.2f}", flush=True)
    ms, groups, wg, u = best
    print(f"best {mib} MiB: {ms:.4f} ms ({n16 * 16 / (ms * 1e-3) / 1e12:.2f} TB/s) at {groups} groups of {wg}, U {u}",
          flush=True)
