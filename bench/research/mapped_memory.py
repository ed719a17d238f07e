"""Research: host reads and writes of device memory the host maps (resizable BAR, kp `device_host` tensors)
against the staging path of device-local memory, by size, on the default device: best and median µs of
`t.numpy()` and `t.upload(a)` followed by `synchronize()` (a staged upload is submitted without waiting),
every read checked. Mapped reads twice: by libvkops' streaming loads (vkops_read_mapped, where the library
loaded) and by NumPy's copy (`hostcopy.STREAM_READS` False).

    bash bench/gpu.sh python3 bench/research/mapped_memory.py
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402

import vkops  # noqa: E402
from vkops.runtime import hostcopy, memory  # noqa: E402
from vkops.runtime.memory import Allocator  # noqa: E402

dev = vkops.Device()
print(dev, "memory kind:", dev._memory._type)
memory.MAPPED_READ_BYTES = memory.MAPPED_STREAM_READ_BYTES = 1 << 40  # every read in place: staged is the other allocator
print("libvkops' streaming reads:", hostcopy.mapped_reader() is not None)
mapped = Allocator(dev, "mapped", 1 << 30, dev._forget)
kinds = {"mapped, streaming": mapped, "mapped, numpy": mapped, "staged": Allocator(dev, "storage", 1 << 30, dev._forget)}
rng = np.random.default_rng(0)


def t_us(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e6)
    return min(ts), statistics.median(ts)


print(f"{'bytes':>10} | " + " | ".join(f"{k} read best/med" for k in kinds) + " | "
      + " | ".join(f"{k} write best/med" for k in kinds))
for nbytes in [64, 256, 1024, 2048, 4096, 8192, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]:
    a = rng.integers(0, 2**32, nbytes // 4, dtype=np.uint32).view(np.float32)
    reps = 50 if nbytes <= (1 << 20) else 10
    row = []
    for k, alloc in kinds.items():
        dev._memory = alloc
        hostcopy.STREAM_READS = k != "mapped, numpy"
        x = dev.tensor(a)
        dev.synchronize()
        got = x.numpy()
        assert got.tobytes() == a.tobytes(), k
        r = t_us(x.numpy, reps)
        w = t_us(lambda: (x.upload(a), dev.synchronize()), reps)
        row.append((r, w))
        del x
    print(f"{nbytes:>10} | " + " | ".join(f"{r[0]:9.1f} / {r[1]:9.1f}" for r, _ in row) + " | "
          + " | ".join(f"{w[0]:9.1f} / {w[1]:9.1f}" for _, w in row), flush=True)
