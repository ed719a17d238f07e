"""SLICE1 throughput: bytes read + written per second, from Vulkan timestamps and wall clock.

On a GPU with torch beside it, the same run times a device-to-device copy (Vulkan vkCmdCopyBuffer and
torch), torch's `x[:, ::2].contiguous()`, `x.flip(0)` and a reversed + strided uint8 slice.
Usage: python bench/bench_slice1.py [--gib 1.0] [--check]
"""
from __future__ import annotations

import argparse

import numpy as np

from common import cuda_torch, table, torch_ms, vk_gpu_ms, wall_ms, write_results

import vkops


def cases(n_rows, n_cols_f32, n_cols_u8):
    # (name, dtype, shape, offsets, sizes, strides, torch expression)
    R, C, C8 = n_rows, n_cols_f32, n_cols_u8
    return [
        ("copy (identity slice)", np.float32, (R, C), (0, 0), (R, C), (1, 1), lambda x: x.clone()),
        ("x[:, ::2]", np.float32, (R, C), (0, 0), (R, C), (1, 2), lambda x: x[:, ::2].contiguous()),
        ("x.flip(0)", np.float32, (R, C), (0, 0), (R, C), (-1, 1), lambda x: x.flip(0)),
        ("x[R/8:, 64:-64] window", np.float32, (R, C), (R // 8, 64), (R - R // 8, C - 128), (1, 1),
         lambda x: x[R // 8:, 64:C - 64].contiguous()),
        ("u8 x[::-1, ::-2]", np.uint8, (R, C8), (0, 0), (R, C8), (-1, -2), lambda x: x[:, 1::2].flip(0, 1)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=None, help="input size (default: 1 GiB on a GPU, 1/16 on CPU)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--check", action="store_true", help="compare every output with torch/NumPy")
    args = ap.parse_args()
    dev = vkops.Device()
    gib = args.gib or (1.0 if dev.device_type != "cpu" else 1 / 16)
    nbytes = int(gib * 2**30)
    C = 16384 if nbytes >= 2**28 else 4096
    R = nbytes // (4 * C)
    C8 = C * 2
    torch = cuda_torch()

    rows = []
    rng = np.random.default_rng(0)
    for name, dt, shape, offs, sizes, strides, texpr in cases(R, C, C8):
        if dt == np.uint8:
            shape = (R * 2, C8)
            sizes = (R * 2, C8)
        host = rng.integers(0, 255, size=shape, dtype=np.uint8) if dt == np.uint8 else \
            rng.standard_normal(shape, dtype=np.float32)
        x = vkops.to_device(host, dev)
        out_sizes = tuple(1 + (s - 1) // abs(st) for s, st in zip(sizes, strides))
        y = dev.empty(vkops.TensorDesc(host.dtype, out_sizes))
        moved = 2 * int(np.prod(out_sizes)) * host.itemsize
        # Reps share one 1 GiB output, so each runs in its own submission (memory-bound: the clock
        # matters little here).
        gpu = vk_gpu_ms(lambda r: vkops.slice(x, offs, sizes, strides, out=y), args.reps, dev)
        wall = wall_ms(lambda: vkops.slice(x, offs, sizes, strides, out=y), args.reps)
        row = {"case": name, "dtype": np.dtype(dt).name, "shape": "x".join(map(str, shape)),
               "MiB moved": moved / 2**20, "vk gpu ms": gpu, "vk GB/s": moved / gpu / 1e6, "vk wall ms": wall}
        if torch is not None:
            tx = torch.from_numpy(host).cuda()
            tg, tw = torch_ms(lambda: texpr(tx), args.reps * 2)
            row.update({"torch gpu ms": tg, "torch GB/s": moved / tg / 1e6, "torch wall ms": tw})
            if args.check:
                ref = texpr(tx).cpu().numpy()
                row["exact"] = bool(np.array_equal(y.numpy(), ref))
            del tx
        elif args.check:
            row["exact"] = bool(np.array_equal(y.numpy(), vkops.reference.slice1(host, offs, sizes, strides)))
        if name.startswith("copy"):
            # The ceiling: a plain device-to-device copy of the same bytes.
            x2 = dev.empty(x.desc)
            cg = vk_gpu_ms(lambda r: dev._active_batch().copy(x, x2), args.reps, dev)
            rows.append({"case": "vkCmdCopyBuffer (D2D)", "dtype": row["dtype"], "shape": row["shape"],
                         "MiB moved": moved / 2**20, "vk gpu ms": cg, "vk GB/s": moved / cg / 1e6})
            if torch is not None:
                a = torch.empty(host.size, dtype=torch.float32, device="cuda")
                b = torch.empty_like(a)
                tg, tw = torch_ms(lambda: b.copy_(a), args.reps * 2)
                rows[-1].update({"torch gpu ms": tg, "torch GB/s": moved / tg / 1e6, "torch wall ms": tw})
                del a, b
            del x2
        rows.append(row)
        del x, y

    cols = ["case", "dtype", "shape", "MiB moved", "vk gpu ms", "vk GB/s", "vk wall ms", "torch gpu ms",
            "torch GB/s", "torch wall ms"] + (["exact"] if args.check else [])
    print(f"SLICE1 on {dev.name} ({dev.driver})")
    print(table(rows, cols))
    print("results:", write_results("slice1", rows))


if __name__ == "__main__":
    import vkops.reference  # noqa: F401

    main()
