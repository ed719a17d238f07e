"""The step of mlp.c through vkops' Python path, on the inputs mlp.c dumped (`mlp --dump DIR`): checks the
outputs bit for bit against the C runtime's and times the step per call, eager (three calls on device
tensors) and as a captured graph (one submission), next to mlp.c's own figure.

    python examples/libvkops_mlp/python_step.py DIR [--steps 50]
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import vkops


def load(d: Path):
    m = json.loads((d / "meta.json").read_text())
    M, K, H, N, k = m["m"], m["k"], m["hidden"], m["n"], m["topk"]
    raw = lambda name, dt, shape: np.fromfile(d / name, dt).reshape(shape)
    ins = dict(x=raw("x.bin", np.int8, (M, K)), w1=raw("w1.bin", np.int8, (K, H)), w2=raw("w2.bin", np.int8, (H, N)))
    outs = dict(h=raw("h.bin", np.int8, (M, H)), logits=raw("logits.bin", np.int8, (M, N)),
                values=raw("values.bin", np.int8, (M, k)), indices=raw("indices.bin", np.uint32, (M, k)))
    return m, ins, outs


def step(m, x, w1, w2):
    """The three calls (NumPy arrays or device tensors in, the same out)."""
    q = vkops.quantized_linear_matmul
    h = q(x, np.float32(m["a_scale"]), np.int8(m["a_zp"]), w1, np.float32(m["b_scale"]), np.int8(m["b_zp"]),
          np.float32(m["out_scale"]), np.int8(m["out_zp"]))
    logits = q(h, np.float32(m["a_scale"]), np.int8(m["a_zp"]), w2, np.float32(m["b_scale"]), np.int8(m["b_zp"]),
               np.float32(m["out_scale2"]), np.int8(m["out_zp"]))
    values, indices = vkops.top_k(logits, m["topk"], axis=1)
    return h, logits, values, indices


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args(argv)
    m, ins, want = load(a.dir)
    got = dict(zip(("h", "logits", "values", "indices"), step(m, **ins)))
    same = {k: np.array_equal(got[k], want[k]) for k in want}
    print("Python path vs the C runtime, bit for bit:", ", ".join(f"{k} {'equal' if v else 'DIFFERENT'}" for k, v in same.items()))
    dev = vkops.Device()
    from vkops.ops.qlmm import plan as qplan  # noqa: PLC0415 - what each call plans, as mlp.c prints it
    from vkops.ops.qlmm.coopmat import device_limits  # noqa: PLC0415
    from vkops.ops.top_k1 import plan as tplan  # noqa: PLC0415
    T, lim = vkops.TensorDesc, device_limits(dev)
    M, K, H, N = (m[k] for k in ("m", "k", "hidden", "n"))
    one, i8 = (1, 1, 1, 1), np.int8
    for o, (k_, n_) in enumerate(((K, H), (H, N))):
        d = vkops.QuantizedLinearMatMulDesc(T(i8, (1, 1, M, k_)), T(np.float32, one), T(i8, one), T(i8, (1, 1, k_, n_)),
                                            T(np.float32, one), T(i8, one), T(np.float32, one), T(i8, one),
                                            T(i8, (1, 1, M, n_))).validate()
        print(f"  op {o}: notes {dict(qplan(d, lim).notes)}")
    d = vkops.TopK1Desc(T(i8, (M, N)), T(i8, (M, m["topk"])), T(np.uint32, (M, m["topk"])), 1, m["topk"]).validate()
    print(f"  op 2: notes {dict(tplan(d, dev.limits).notes)}")
    x, w1, w2 = (dev.tensor(ins[k]) for k in ("x", "w1", "w2"))
    for _ in range(3):
        outs = step(m, x, w1, w2)
    outs[3].numpy()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        outs = step(m, x, w1, w2)
        outs[2].numpy(), outs[3].numpy()  # the token's result read back, as mlp.c's step does
    eager = (time.perf_counter() - t0) / a.steps * 1e3
    with dev.graph() as g:
        gouts = step(m, x, w1, w2)
    g.run(fetch=list(gouts[2:]))
    t0 = time.perf_counter()
    for _ in range(a.steps):
        g.run(feed={x: ins["x"]}, fetch=list(gouts[2:]))
    graph = (time.perf_counter() - t0) / a.steps * 1e3
    print(f"Python path per step (wall, input written, top-k read): eager {eager:.4f} ms, graph {graph:.4f} ms")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
