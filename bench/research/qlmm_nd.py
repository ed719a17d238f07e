"""Research (not a benchmark of record): N-D QLinearMatMul (issue 15): a {B, M, K} `a` times a shared
2-D `b`, against the same data as one 2-D {B*M, K} call. Wall ms per NumPy-level call (median of --reps,
the three calls interleaved), with the fold switched off for the 'before' row; the outputs must be equal.

Usage: python bench/research/qlmm_nd.py [--shape 8,32,256,1024] [--reps 15] [--per-row]
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import vkops  # noqa: E402
from vkops.bench.report import table  # noqa: E402
from vkops.ops.qlmm.tuning import DEFAULT  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="8,32,256,1024", help="B,M,K,N")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--per-row", action="store_true", help="per-row a_scale and output zero point")
    args = ap.parse_args()
    B, M, K, N = map(int, args.shape.split(","))
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (B, M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    sa = rng.uniform(0.01, 0.02, M).astype(np.float32) if args.per_row else np.float32(0.02)
    zo = rng.integers(-5, 5, M).astype(np.int8) if args.per_row else np.int8(3)
    params = (sa, None, b, np.float32(0.01), None, np.float32(0.5), zo)
    flat = (np.tile(sa, B) if args.per_row else sa, None, b, np.float32(0.01), None, np.float32(0.5),
            np.tile(zo, B) if args.per_row else zo)
    nd = lambda: vkops.quantized_linear_matmul(a, *params)  # noqa: E731
    two = lambda: vkops.quantized_linear_matmul(a.reshape(B * M, K), *flat)  # noqa: E731
    assert np.array_equal(nd().reshape(B * M, N), two()), "N-D and 2-D results differ"
    dev = vkops.Device()

    unfold = dataclasses.replace(DEFAULT, FOLD=False)  # the tuning is part of the plan key

    def unfolded():  # as before issue 15: one GEMM per batch
        return vkops.quantized_linear_matmul(a, *params, tuning=unfold)

    assert np.array_equal(unfolded(), nd())
    calls = {f"a {B}x{M}x{K}, one GEMM per batch (before)": unfolded, f"a {B}x{M}x{K}, folded (one GEMM)": nd,
             f"a {B * M}x{K} (2-D)": two}
    times = {name: [] for name in calls}
    for _ in range(args.reps):  # interleaved: a busy host slows all three alike
        for name, fn in calls.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1e3)
    rows = [{"call": name, "wall ms": round(statistics.median(ts), 3)} for name, ts in times.items()]
    print(f"{dev.name}: QLinearMatMul int8, b {K}x{N} shared, {'per-row' if args.per_row else 'per-tensor'} "
          f"a_scale / output zero point; median of {args.reps} NumPy calls")
    print(table(rows, ["call", "wall ms"]))


if __name__ == "__main__":
    main()
