"""Research A/B (not a benchmark of record): QlmmTuning.TAIL_SPLIT, the large tile's last partial wave split-K while
the whole waves run unsplit, against the plan without it. GPU ms from Vulkan timestamps in one process, int8 and uint8
with zero points; each output compared with the other side's in full (integer sums: a tail split must give the same
bits) and the last 64 rows with the oracle. docs/tuning/qlmm.md, session 28.

    bash bench/gpu.sh python3 bench/research/research_tail.py 1536x4096x4096 1280x4096x4096 ...
"""
import dataclasses, os, sys
import numpy as np
sys.path.insert(0, os.getcwd())
import vkops
from vkops import reference
from vkops.bench import timing
from vkops.ops.qlmm.tuning import DEFAULT
M_ = timing.Method(reps=20, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device(); rng = np.random.default_rng(0)
for M, K, N in [tuple(map(int, a.split("x"))) for a in sys.argv[1:]]:
    for zp in (False, True):
        a = rng.integers(0, 256, (M, K), dtype=np.uint8) if zp else rng.integers(-128, 128, (M, K), dtype=np.int8)
        b = rng.integers(-128, 128, (K, N), dtype=np.int8)
        za = np.uint8(120) if zp else None; zb = np.int8(3) if zp else None
        so = np.float32(0.02 * 0.02 * np.sqrt(K) * 74 * 74 / 40)
        da, db = dev.tensor(a), dev.tensor(b)
        want = reference.quantized_linear_matmul(a[-64:], np.float32(0.02), za, b, np.float32(0.02), zb, so, None)
        res, outs = {}, {}
        for side, on in (("whole", False), ("tail", True)):
            tun = dataclasses.replace(DEFAULT, TAIL_SPLIT=on)
            f = lambda i=0, tun=tun: vkops.quantized_linear_matmul(da, np.float32(0.02), za, db, np.float32(0.02), zb, so,
                                                                   None, tuning=tun)
            outs[side] = f().numpy()
            p = next(reversed(dev._plans._entries.values()))
            ok = np.abs(outs[side][-64:].astype(int) - want.astype(int)).max() <= 1
            res[side] = (round(timing.vk_gpu_ms(f, device=dev, method=M_), 4), bool(ok), p.dispatches[-1].kernel,
                         p.dispatches[-1].groups[0], dict(p.notes).get("whole_tiles", 0))
        same = bool(np.array_equal(outs["whole"], outs["tail"]))
        print((M, K, N), "zp" if zp else "int8", "same" if same else "DIFFERENT",
              "  ".join(f"{side} {res[side]}" for side in res), flush=True)
