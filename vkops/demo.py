"""`make demo`: the spec pages' examples through vkops on the default Vulkan device, then a short
throughput line. Run as `python -m vkops.demo`."""
from __future__ import annotations

import time

import numpy as np

import vkops


def show(title, arr):
    body = np.array2string(np.asarray(arr), separator=", ").replace("\n", "\n    ")
    print(f"  {title}:\n    {body}")


def slice_examples():
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    print("SLICE1, InputTensor {1,1,4,4} FLOAT32 = 1..16")
    show("example 1: offsets {0,0,0,1} sizes {1,1,4,3} strides {1,1,2,2}",
         vkops.slice(x, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2]))
    show("example 2: offsets {0,0,0,1} sizes {1,1,4,3} strides {1,1,-2,2}",
         vkops.slice(x, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2]))


def top_k_examples():
    print("TOP_K1, InputTensor {1,1,3,4} FLOAT32")
    x = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], dtype=np.float32)
    for n, axis in ((1, 3), (2, 2)):
        v, i = vkops.top_k(x, 2, axis=axis, direction="decreasing")
        show(f"example {n}: axis {axis}, K 2, DECREASING -> values", v)
        show("indices", i)
    t = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], dtype=np.float32)
    for n, d in ((3, "decreasing"), (4, "increasing")):
        v, i = vkops.top_k(t, 3, axis=3, direction=d)
        show(f"example {n}: tied values, axis 3, K 3, {d.upper()} -> values", v)
        show("indices", i)


def qlmm_example():
    print("QUANTIZED_LINEAR_MATRIX_MULTIPLY, A {1,1,2,3} UINT8, B {1,1,3,2} INT8, per-tensor scales")
    a = np.array([[2, 4, 6], [8, 10, 250]], dtype=np.uint8)
    b = np.array([[1, -2], [3, 4], [-5, 127]], dtype=np.int8)
    out = vkops.quantized_linear_matmul(a, 0.5, np.uint8(2), b, 0.25, np.int8(1), 0.1, np.uint8(128))
    show("(A - 2) * 0.5 @ (B - 1) * 0.25 / 0.1 + 128, saturated to UINT8", out)


def throughput():
    dev = vkops.Device()
    n = (64 << 20) if dev.device_type != "cpu" else (16 << 20)
    x = vkops.to_device(np.random.default_rng(0).standard_normal(n, dtype=np.float32).reshape(-1, 4096), dev)
    y = dev.empty(x.desc)
    args = ([0, 0], list(x.shape), [-1, 1])
    vkops.slice(x, *args, out=y)
    reps = 5
    b = dev.batch(timestamps=True)
    with b:
        for _ in range(reps):
            vkops.slice(x, *args, out=y)
    gpu_s = sum(b.gpu_ns) / reps / 1e9
    t = time.perf_counter()
    for _ in range(reps):
        vkops.slice(x, *args, out=y)
    wall_s = (time.perf_counter() - t) / reps
    moved = 2 * n * 4
    print(f"throughput: SLICE1 x.flip(0) on {n * 4 >> 20} MiB float32: {moved / gpu_s / 1e9:.1f} GB/s GPU "
          f"(Vulkan timestamps), {moved / wall_s / 1e9:.1f} GB/s wall, read + written")


def main():
    dev = vkops.Device()
    print(f"vkops {vkops.__version__} on {dev!r}\n")
    slice_examples()
    print()
    top_k_examples()
    print()
    qlmm_example()
    print()
    throughput()


if __name__ == "__main__":
    main()
