"""Research (not a benchmark of record): where the time of row-major B's transposed copy goes (qlmm_transpose, the BC
builds' input from BC_TRANSPOSE_MIN_M rows; docs/tuning/qlmm.md, session 33). Per dispatch, from Vulkan timestamps
(median of 20 calls in a timestamped batch, after 0.3 s of warm-up): the copy alone at 64- and 128-byte tiles (a
research variant: another kernel name), every output checked against NumPy's transpose;
then whole products with the copy forced (BC_TRANSPOSE_MIN_M 1), copy and product apart; with `--after M,...`
(K = N = 4096) what the copy leaves in L2: the BC product alone on a column-major B, after the copy on the copy's
output, after a copy of other data on the first B, on the copy's output without a copy, and two products in a row
(docs/tuning/qlmm.md, session 35).

    bash bench/gpu.sh python3 bench/research/research_transpose.py [--after 384,512,1024] [KxN ...] [--gemm MxKxN ...]
"""
import dataclasses, os, statistics, sys, time
import numpy as np
sys.path.insert(0, os.getcwd())
import vkops
from vkops.ops.qlmm import coopmat as cm
from vkops.ops.qlmm.lowering import TRANSPOSE_PUSH
from vkops.ops.qlmm.tuning import DEFAULT
from vkops.plan import Builder
from vkops.runtime.execute import execute
from vkops.tensor import TensorDesc as T

dev, rng = vkops.Device(), np.random.default_rng(0)
args = sys.argv[1:]
after = []
if "--after" in args:
    i = args.index("--after")
    after, args = [int(m) for m in args[i + 1].split(",")], args[:i] + args[i + 2:]
gemm = [tuple(map(int, a.split("x"))) for a in args[args.index("--gemm") + 1:]] if "--gemm" in args else \
    [(512, 4096, 4096), (4096, 4096, 4096)]
args = args[:args.index("--gemm")] if "--gemm" in args else args
sizes = [tuple(map(int, a.split("x"))) for a in args] or [(4096, 4096), (4096, 11008), (8192, 8192)]


def per_dispatch_us(record, reps=20, warm_s=0.3):
    """record(batch) records one call into `batch` (the current one)."""
    with dev.batch() as b:
        record(b)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        with dev.batch() as b:
            for _ in range(reps):
                record(b)
    with dev.batch(timestamps=True) as b:
        for _ in range(reps):
            record(b)
    n = len(b.gpu_ns) // reps
    return [statistics.median(b.gpu_ns[j * n + i] for j in range(reps)) / 1000 for i in range(n)]


def transpose_plan(K, N, tile, kernel="qlmm_transpose"):
    """The copy alone: a K x N input into an N x K output."""
    b = Builder("qlmm", dev.limits)
    x, out = b.input(T("int8", (K, N)), "b"), b.output(T("int8", (N, K)), "t")
    pc = np.zeros((), TRANSPOSE_PUSH)
    pc["K"], pc["N"], pc["b_sk"] = K, N, N
    b.dispatch(kernel, [x, out], writes=[1], groups=(-(-N // tile), -(-K // tile), 1),
               push=pc.reshape(1).view(np.uint32), spec=(cm.TRANSPOSE_WG, tile))
    return b.finish()


for K, N in sizes:
    src = rng.integers(-128, 128, (K, N), dtype=np.int8)
    dx, want = dev.tensor(src), np.ascontiguousarray(src.T)
    for kernel, tile in (("qlmm_transpose", 64), ("qlmm_transpose", 128)):
        plan, dout = transpose_plan(K, N, tile, kernel), dev.empty(T("int8", (N, K)))

        def record(batch, plan=plan, dout=dout):
            execute(plan, batch, [dx], [dout])
        us = per_dispatch_us(record)[0]
        ok = np.array_equal(dout.numpy(), want)
        print(f"{K}x{N} {kernel} tile {tile}: {us:.1f} us, {2 * K * N / us / 1e6:.2f} TB/s of traffic, exact {ok}",
              flush=True)

for M, K, N in gemm:
    a = dev.tensor(rng.integers(-128, 128, (M, K), dtype=np.int8))
    bt = dev.tensor(rng.integers(-128, 128, (K, N), dtype=np.int8))
    for tile in (64, 128):
        tun = dataclasses.replace(DEFAULT, BC_TRANSPOSE_MIN_M=1, BC_TRANSPOSE_TILE=tile)
        us = per_dispatch_us(lambda _b: vkops.quantized_linear_matmul(a, 0.02, None, bt, 0.02, None, 1.0, None, tuning=tun))
        print(f"{M}x{K}x{N} transposed (tile {tile}): " + ", ".join(f"{u:.1f}" for u in us) + " us a dispatch", flush=True)
    us = per_dispatch_us(lambda _b: vkops.quantized_linear_matmul(a, 0.02, None, bt, 0.02, None, 1.0, None,
                                                               tuning=dataclasses.replace(DEFAULT, BC_TRANSPOSE_MIN_M=0)))
    print(f"{M}x{K}x{N} row-major tiles: " + ", ".join(f"{u:.1f}" for u in us) + " us a dispatch", flush=True)

if after:
    K = N = 4096
    src = rng.integers(-128, 128, (K, N), dtype=np.int8)
    dx, tplan = dev.tensor(src), transpose_plan(K, N, 64)
    dout, other = dev.empty(T("int8", (N, K))), dev.empty(T("int8", (N, K)))
    native = dev.tensor(np.ascontiguousarray(src.T))
for M in after:
    a = dev.tensor(rng.integers(-128, 128, (M, K), dtype=np.int8))

    def mm(bb, a=a):
        return vkops.quantized_linear_matmul(a, 0.02, None, bb.as_strided((K, N), (1, K)), 0.02, None, 1.0, None)
    for what, record in (
            ("product alone, column-major B", lambda _b: mm(native)),
            ("copy, then the product on its output", lambda _b: (execute(tplan, _b, [dx], [dout]), mm(dout))),
            ("copy of other data, then the product on the first B", lambda _b: (execute(tplan, _b, [dx], [other]), mm(native))),
            ("product on the copy's output, no copy", lambda _b: mm(dout)),
            ("two products in a row", lambda _b: (mm(native), mm(native)))):
        print(f"{M}x{K}x{N} {what}: " + ", ".join(f"{u:.1f}" for u in per_dispatch_us(record)) + " us a dispatch", flush=True)
