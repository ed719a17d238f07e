"""`make provider-test`: one plan per operator, planned in Python (pure, for the default device's limits),
run by the C host (vkops_host, libvulkan only) and compared with the NumPy oracle and, bit for bit, with
vkops' own execution of the same plan.

    python examples/c_host/provider_test.py path/to/vkops_host [--device N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from vkops import reference  # noqa: E402
from vkops.dtypes import pack  # noqa: E402
from vkops.limits import Limits  # noqa: E402
from vkops.ops import qlmm, slice1, top_k1  # noqa: E402
from vkops.tensor import TensorDesc  # noqa: E402

MANIFEST = ROOT / "vkops" / "spv" / "manifest.json"


def topk_desc(shape, k, dtype, direction):
    o = tuple(shape[:-1]) + (k,)
    return top_k1.TopK1Desc(TensorDesc(dtype, shape), TensorDesc(dtype, o), TensorDesc("uint32", o), len(shape) - 1, k,
                            top_k1.AxisDirection.of(direction)).validate()


def cases(limits: Limits, rng):
    """(name, plan, inputs, check(outputs)) per case."""
    # TOP_K1, a multi-dispatch path: the bitonic sort (init, global and local passes with barriers) ...
    x = rng.integers(-20, 20, (2, 3000)).astype(np.float16)  # ties everywhere
    want = reference.top_k1(x, 1500, 1, "increasing")
    yield ("top_k1 sort fp16", top_k1.plan(topk_desc(x.shape, 1500, "float16", "increasing"), limits, force="sort"), [x],
           lambda o, w=want: all(np.array_equal(a, b) for a, b in zip(o, w)))
    # ... and chunks of a row merged by the last to arrive (a zeroed counters buffer)
    x = rng.integers(0, 50, (3, 40000)).astype(np.int32)
    want = reference.top_k1(x, 9, 1, "decreasing")
    yield ("top_k1 chunks int32", top_k1.plan(topk_desc(x.shape, 9, "int32", "decreasing"), limits, force="filter",
                                              chunks=4), [x],
           lambda o, w=want: all(np.array_equal(a, b) for a, b in zip(o, w)))
    # SLICE1 with negative strides, 32- and 8-bit
    for dt in ("float32", "uint8"):
        x = (rng.random((5, 7, 9)) * 200).astype(dt)
        offs, sizes, strides = (1, 0, 2), (4, 7, 6), (2, -3, -1)
        out = [1 + (s - 1) // abs(t) for s, t in zip(sizes, strides)]
        d = slice1.Slice1Desc(TensorDesc(dt, x.shape), TensorDesc(dt, out), offs, sizes, strides).validate()
        want = reference.slice1(x, offs, sizes, strides)
        yield (f"slice1 negative strides {dt}", slice1.plan(d, limits), [x], lambda o, w=want: np.array_equal(o[0], w))
    # QLinearMatMul with zero points (per row of a, per column of b, the output's), per-axis scales; then
    # decoding-sized: the integer-dot-product kernel where the device offers it (split-K: a zeroed counter)
    for name, (M, K, N, out_scale) in (("qlmm zero points", (37, 80, 70, 0.9)), ("qlmm decoding", (9, 2064, 132, 4.0))):
        a = rng.integers(0, 256, (1, 1, M, K)).astype(np.uint8)
        b = rng.integers(-128, 128, (1, 1, K, N)).astype(np.int8)
        sa = rng.uniform(0.01, 0.03, (1, 1, M, 1)).astype(np.float32)
        sb = rng.uniform(0.01, 0.03, (1, 1, 1, N)).astype(np.float32)
        so = np.full((1, 1, 1, 1), out_scale, np.float32)
        za = rng.integers(100, 150, (1, 1, M, 1)).astype(np.uint8)
        zb = rng.integers(-5, 5, (1, 1, 1, N)).astype(np.int8)
        zo = np.full((1, 1, 1, 1), 128, np.uint8)
        ins = [a, sa, za, b, sb, zb, so, zo]
        d = qlmm.QuantizedLinearMatMulDesc(*[TensorDesc(v.dtype, v.shape) for v in ins],
                                           TensorDesc("uint8", (1, 1, M, N))).validate()
        want = reference.quantized_linear_matmul(*ins)
        p = qlmm.plan(d, limits)
        yield (name if M > 16 else f"{name} ({p.dispatches[-1].kernel})", p, ins,
               lambda o, w=want: np.abs(o[0].astype(int) - w).max() <= 1 and (o[0] == w).mean() > 0.99)


def run_host(host, plan, arrays, work: Path, name: str, device: int):
    stem = work / name.replace(" ", "_")
    (stem.with_suffix(".plan.json")).write_text(plan.to_json(indent=1))
    cmd = [str(host), "--device", str(device), "--quiet", str(MANIFEST), str(stem.with_suffix(".plan.json"))]
    for i, a in enumerate(arrays):
        f = work / f"{stem.name}.in{i}.bin"
        f.write_bytes(pack(a).tobytes())
        cmd += ["--in", str(f)]
    outs = [work / f"{stem.name}.out{j}.bin" for j in range(len(plan.outputs))]
    for f in outs:
        cmd += ["--out", str(f)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or r.stderr:
        raise SystemExit(f"{name}: vkops_host exited {r.returncode}\n{r.stderr}")
    res = []
    for b, f in zip(plan.outputs, outs):
        t = b.tensor
        res.append(np.frombuffer(f.read_bytes(), t.data_type.np, t.element_count).reshape(t.sizes))
    return res


def run_python(plan, arrays, device: int):
    """The same plan through vkops' runtime (None without kp)."""
    try:
        from vkops.runtime import Device  # noqa: PLC0415
        from vkops.runtime.execute import run_plan  # noqa: PLC0415

        return run_plan(plan, arrays, Device(device))
    except ImportError:
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("host")
    ap.add_argument("--device", type=int, default=int(os.environ.get("VKOPS_DEVICE", "0")))
    ap.add_argument("--keep", help="keep plans, inputs and outputs in this directory")
    args = ap.parse_args(argv)
    from vkops.runtime.device import devices  # noqa: PLC0415  (vkinfo: facts only, no kp device)

    info = devices()[args.device]
    limits = Limits.of_info(info)  # portable kernels: the cooperative-matrix verdict needs vkops' self-check
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vkops-provider-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, plan, arrays, check in cases(limits, np.random.default_rng(7)):
        got = run_host(args.host, plan, arrays, work, name, args.device)
        ok = bool(check(got))
        py = run_python(plan, arrays, args.device)
        same = py is None or all(a.tobytes() == b.tobytes() for a, b in zip(got, py))
        failed += not (ok and same)
        print(f"{'ok  ' if ok and same else 'FAIL'} {name}: {len(plan.dispatches)} dispatch(es), "
              f"{plan.barrier_count} barrier(s); oracle {'matches' if ok else 'DIFFERS'}; "
              f"python runtime {'not available' if py is None else 'bit-identical' if same else 'DIFFERS'}")
    print(f"provider-test on {info.name}: {'all passed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
