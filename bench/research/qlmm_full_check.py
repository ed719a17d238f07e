"""Research: every element of products (uint8 A with zero point 120 x int8 B with 3 -> uint8, or int8 x int8), under
QlmmTuning sides, against a float64 oracle (BLAS: exact for these sums), within 1 and >= 99% equal as the
self-checks ask; the full output, where the benchmarks check 16 rows. docs/tuning/qlmm.md, session 39.

    bash bench/gpu.sh python3 bench/research/qlmm_full_check.py '{}' 1536x4096x4096 4096x4096x4096c
    bash bench/gpu.sh python3 bench/research/qlmm_full_check.py '{"BT_SUMS": true};{"BT_SUMS": false}' 384x4096x4096
Sides are JSON knob sets separated by ";"; a shape ending in "c" passes B column-major (a transposed view), one
with "i" (before any "c") int8 A x int8 B without zero points -> int8.
"""
import dataclasses, json, sys, os
sys.path.insert(0, os.getcwd())
import numpy as np, vkops
from vkops.ops.qlmm.tuning import DEFAULT
sides = [json.loads(a) for a in sys.argv[1].split(";")]
shapes = [tuple(map(int, s.rstrip("ic").split("x"))) + (s.endswith("c"), "i" in s) for s in sys.argv[2:]]
dev = vkops.Device(); rng = np.random.default_rng(5)
for (M, K, N, cols, i8) in shapes:
    a = rng.integers(-128, 128, (M, K), dtype=np.int8) if i8 else rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    za, zb = (None, None) if i8 else (np.uint8(120), np.int8(3))
    so = np.float32(0.02 * 0.02 * np.sqrt(K) * 74 * 74 / 40)
    acc = (a.astype(np.float64) - (0 if i8 else 120)) @ (b.astype(np.float64) - (0 if i8 else 3))
    y = acc * (np.float64(np.float32(0.02)) * np.float64(np.float32(0.02)) / np.float64(so))
    want = np.clip(np.round(y), -128 if i8 else 0, 127 if i8 else 255).astype(np.int32)  # half to even; A's type out
    da = dev.tensor(a)
    db = dev.tensor(np.ascontiguousarray(b.T)).as_strided((K, N), (1, K)) if cols else dev.tensor(b)
    for knobs in sides:
        tun = dataclasses.replace(DEFAULT, **{k: tuple(v) if isinstance(v, list) else v  # JSON lists: QlmmTuning's tuples
                                              for k, v in knobs.items()})
        r = vkops.quantized_linear_matmul(da, np.float32(0.02), za, db, np.float32(0.02), zb, so, None, tuning=tun).numpy()
        last = next(reversed(dev._plans._entries.values())).dispatches[-1]
        d = np.abs(r.astype(np.int32) - want)
        print((M, K, N), "int8" if i8 else "zp", "cols" if cols else "rows", knobs, last.kernel, last.groups, "max diff", int(d.max()),
              "equal %.4f" % (d == 0).mean(), "OK" if d.max() <= 1 and (d == 0).mean() >= 0.99 else "FAIL", flush=True)
