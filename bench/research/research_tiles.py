"""Research sweep (not a benchmark of record): cooperative-matrix tiles and split-K for decoding-sized
QLinearMatMul, GPU ms per variant in one process, each output compared exactly with the oracle on 4
sampled rows ("ok"; an output within float32 rounding of a .5 tie may differ by 1, which the bench's
check allows), torch _int_mm (B column-major, A padded to 32 rows) beside it. docs/tuning/qlmm.md, session 6.

    bash bench/gpu.sh python3 bench/research/research_tiles.py @bench/research/sweep_tiles.json   # -> $OUT/tiles.json

A sweep is [[M, K, N, [[name, config, split_k, DIRECT_MAX_M, "rows" | "cols", kernel], ...]], ...]; a config
not in vkops.ops.qlmm.coopmat.COOPMAT_CONFIGS ("TMxTNxTK_WxH") is added to it for the run."""
import dataclasses
import json
import os
import sys

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the repository root
import vkops
from vkops import reference
from vkops.bench import timing
from vkops.ops.qlmm import coopmat as QC
from vkops.ops.qlmm.tuning import DEFAULT

M_ = timing.Method(reps=20, warm_s=0.3, round_warm_s=0.1)
dev = vkops.Device()
rng = np.random.default_rng(0)
SWEEP = json.load(open(sys.argv[1][1:])) if sys.argv[1].startswith("@") else json.loads(sys.argv[1])  # [[M, K, N, [[name, config, split, direct_max_m, layout], ...]], ...]
out = []
torch = timing.cuda_torch()
for M, K, N, variants in SWEEP:
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    da, db = dev.tensor(a), dev.tensor(b)
    dbc = dev.tensor(np.ascontiguousarray(b.T)).as_strided((K, N), (1, K))
    so = np.float32(0.02 * 0.02 * np.sqrt(K) * 74 * 74 / 40)
    rows = np.sort(rng.choice(M, min(M, 4), replace=False))
    want = reference.quantized_linear_matmul(a[rows], np.float32(0.02), None, b, np.float32(0.02), None, so, None)
    outs = [dev.empty(vkops.TensorDesc("int8", (M, N))) for _ in range(M_.reps)]
    if torch is not None:
        ta = torch.zeros((max(M, 32), K), dtype=torch.int8, device="cuda"); ta[:M] = torch.from_numpy(a).cuda()
        tb = torch.from_numpy(np.ascontiguousarray(b.T)).cuda()
        tg, _ = timing.torch_ms(lambda: torch._int_mm(ta, tb.t()), method=M_)
        out.append({"shape": [M, K, N], "variant": "torch _int_mm", "gpu_ms": tg}); print(out[-1], flush=True)
    for name, config, split, dmax, layout, *kern in variants:
        if config != "auto" and config not in QC.COOPMAT_CONFIGS:  # a tile not in the table: "TMxTNxTK_WxH"
            tm, tn, tk = map(int, config.split("_")[0].split("x"))
            QC.COOPMAT_CONFIGS[config] = (tm, tn, tk) + tuple(map(int, config.split("_")[1].split("x")))
        tun = dataclasses.replace(DEFAULT, COOPMAT_CONFIG=config, COOPMAT_SPLIT_K=split, DIRECT_MAX_M=dmax)
        dev._plans.clear()  # the plan of this variant is then the cache's last entry (read below)
        bb = dbc if layout == "cols" else db
        f = lambda i: vkops.quantized_linear_matmul(da, np.float32(0.02), None, bb, np.float32(0.02), None, so, None, out=outs[i], kernel=(kern or ['auto'])[0], tuning=tun)
        try:
            r = f(0).numpy()
            p = list(dev._plans._entries.values())[-1]
            ok = bool(np.array_equal(r[rows], want))
            g = timing.vk_gpu_ms(f, device=dev, method=M_)
            row = {"shape": [M, K, N], "variant": name, "gpu_ms": g, "ok": ok,
                   "kernel": p.dispatches[-1].kernel, "notes": {k: v for k, v in p.notes if k in ("config", "split_k", "rows")},
                   "groups": p.dispatches[-1].groups}
        except Exception as e:  # noqa: BLE001
            row = {"shape": [M, K, N], "variant": name, "error": repr(e)[:200]}
        out.append(row); print(row, flush=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "tiles.json"), "w"), indent=1)
