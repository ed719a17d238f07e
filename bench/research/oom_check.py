"""Allocate 4 GiB device tensors until the device runs out: vkops must raise DeviceMemoryError (not
crash), keep what is already on the device, and stay usable. Not a benchmark: run it by hand.

Usage: python bench/research/oom_check.py [--raw]   (--raw: skip vkops' budget check, so the driver refuses)
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
import vkops  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", action="store_true", help="no budget pre-check: let vkAllocateMemory fail")
    ap.add_argument("--max", type=int, default=64, help="give up after this many tensors")
    args = ap.parse_args()
    dev = vkops.Device()
    if args.raw:
        dev._memory_check = lambda allocator, nbytes: None
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4096)).astype(np.float32)
    keep = vkops.to_device(x)
    want = -np.sort(-x, axis=1)[:, :8]
    n = min((1 << 30) - 1024, dev.max_storage_buffer_range // 4)  # 4 GiB where the device allows it
    gib = n * 4 / 2**30
    held = []
    t0 = time.perf_counter()
    try:
        for _ in range(args.max):
            held.append(dev.empty(vkops.TensorDesc("float32", (n,))))
            print(f"{len(held)} x {gib:.2f} GiB held, vkops holds {dev.memory_held() / 2**30:.1f} GiB", flush=True)
        print("no error within --max tensors")
    except vkops.DeviceMemoryError as e:
        print(f"DeviceMemoryError after {len(held)} tensors ({time.perf_counter() - t0:.1f} s): {e}", flush=True)
    ok_keep = np.array_equal(keep.numpy(), x)
    v, _ = vkops.top_k(keep, 8)
    ok_op = np.array_equal(v.numpy(), want)
    del held
    gc.collect()
    freed = dev.trim()
    again = dev.empty(vkops.TensorDesc("float32", (n,)))
    print(f"kept data intact: {ok_keep}; top_k after the error correct: {ok_op}; freed {freed / 2**30:.1f} GiB; "
          f"a new {gib:.2f} GiB tensor afterwards: {again.shape}")
    sys.exit(0 if ok_keep and ok_op else 1)


if __name__ == "__main__":
    main()
