"""Research A/B (not a benchmark of record): QLinearMatMul's tiles (QlmmTuning's SMALL_CONFIG, LOW_CONFIG,
MID_CONFIG, LARGE_CONFIG) against the ones before them (32 x 64 x 128, 64 x 64 x 64 and 128 x 128 x 64 tiles
of 2 x 2 subgroups, split toward 256 workgroups), int8 and uint8 with zero points, GPU ms from Vulkan timestamps in
one process, the first and last rows of each output checked against the oracle (within 1: float32 rounding at a .5
tie; the last rows are in the last tiles of the raster, a tail split's).
docs/tuning/qlmm.md, session 10.

    bash bench/gpu.sh python3 bench/research/research_mid.py [MxKxN ...]
    bash bench/gpu.sh python3 bench/research/research_mid.py --now '{"LARGE_CONFIG": "128x128x64_2x2"}' \
        --before '{"LARGE_CONFIG": "128x128x64_4x1"}' 4096x4096x4096     # any knobs against any others
    bash bench/gpu.sh python3 bench/research/research_mid.py --before '{"STREAM_SUMS": false}' \
        --now '{"STREAM_SUMS": true}' --also '{"STREAM_SUMS": true, "STREAM_SUMS_TARGET": 1024}' 16x4096x4096
A config not in vkops.ops.qlmm.coopmat.COOPMAT_CONFIGS ("TMxTNxTK_WxH") is added to it for the run. `--int8` times
only int8 x int8 (no zero points), `--zp` only uint8 x int8 with them. Each
`--also '<JSON>'` (repeatable) is one more side, DEFAULT with those knobs, timed beside now and before. Each side
prints (GPU ms, exact within 1 on the first and last min(M, 16) rows, its last dispatch's kernel and workgroups).
"""
import dataclasses, json, os, sys
import numpy as np
sys.path.insert(0, os.getcwd())
import vkops
from vkops import reference
from vkops.bench import timing
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm.tuning import DEFAULT
M_ = timing.Method(reps=20, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device(); rng = np.random.default_rng(0)
BEFORE = {"MID_MAX_M": 0, "SMALL_CONFIG": "32x64x128_2x2", "LOW_CONFIG": "64x64x64_2x2", "LARGE_CONFIG": "128x128x64_2x2"}
args = sys.argv[1:]
opts, ALSO = {}, []
B_COLS = "--b-cols" in args  # B a transposed view of an N x K matrix (column-major), as PyTorch's Linear weight
INT8, ZP = "--int8" in args, "--zp" in args  # only the int8 rows (no zero points), or only the zero-point ones
args = [a for a in args if a not in ("--b-cols", "--int8", "--zp")]
while args and args[0] in ("--now", "--before", "--also"):
    if args[0] == "--also":
        ALSO.append(json.loads(args[1]))
    else:
        opts[args[0]] = json.loads(args[1])
    args = args[2:]
BEFORE = opts.get("--before", BEFORE)
NOW = {k: getattr(DEFAULT, k) for k in BEFORE}
NOW.update(opts.get("--now", {}))
SIDES = [("now", NOW), ("before", BEFORE)] + [(f"also{i}", knobs) for i, knobs in enumerate(ALSO, 1)]
for v in [v for _, knobs in SIDES for v in knobs.values()]:  # a tile not in the table: "TMxTNxTK_WxH"
    if isinstance(v, str) and v[:1].isdigit() and v not in QC.COOPMAT_CONFIGS:
        t, w = v.split("_")
        QC.COOPMAT_CONFIGS[v] = tuple(map(int, t.split("x"))) + tuple(map(int, w.split("x")))
print("  ".join(f"{side} {knobs}" for side, knobs in SIDES), flush=True)
SHAPES = [tuple(map(int, a.split("x"))) for a in args] or [
    (32, 4096, 4096), (32, 8192, 8192), (64, 4096, 4096), (64, 8192, 8192), (128, 4096, 4096),
    (256, 4096, 4096), (128, 8192, 8192), (96, 4096, 4096)]
for (M, K, N) in SHAPES:
    for zp in (False,) if INT8 else (True,) if ZP else (True, False):
        a = rng.integers(0, 256, (M, K), dtype=np.uint8) if zp else rng.integers(-128, 128, (M, K), dtype=np.int8)
        b = rng.integers(-128, 128, (K, N), dtype=np.int8)
        za = np.uint8(120) if zp else None; zb = np.int8(3) if zp else None
        so = np.float32(0.02 * 0.02 * np.sqrt(K) * 74 * 74 / 40)
        da = dev.tensor(a)
        db = dev.tensor(np.ascontiguousarray(b.T)).as_strided((K, N), (1, K)) if B_COLS else dev.tensor(b)
        rows = np.r_[0:min(M, 16), max(M - 16, 0):M]  # the first and last (a tail split's) rows
        want = reference.quantized_linear_matmul(a[rows], np.float32(0.02), za, b, np.float32(0.02), zb, so, None)
        res = {}
        for side, knobs in SIDES:
            tun = dataclasses.replace(DEFAULT, **{k: tuple(v) if isinstance(v, list) else v for k, v in knobs.items()})  # JSON lists: the tuples QlmmTuning takes
            f = lambda i=0, tun=tun: vkops.quantized_linear_matmul(da, np.float32(0.02), za, db, np.float32(0.02), zb, so,
                                                                   None, tuning=tun)
            r = f().numpy()
            last = next(reversed(dev._plans._entries.values())).dispatches[-1]
            ok = np.abs(r[rows].astype(int) - want.astype(int)).max() <= 1
            res[side] = (round(timing.vk_gpu_ms(f, device=dev, method=M_), 4), bool(ok), last.kernel, last.groups[0])
        print((M, K, N), "zp" if zp else "int8", "  ".join(f"{side} {res[side]}" for side, _ in SIDES), flush=True)
