"""Research (not a benchmark of record): where a NumPy-in/NumPy-out call's host copies go, against torch's
from_numpy -> cuda -> cpu in the same process. Per size: a plain host memcpy, writing into and reading from
vkops' staging (mapped) memory, the staged DMA alone, vkops' whole upload (to_device + synchronize) and
download (numpy()), torch's. Best / median ms of 20 after 3 warm-ups; every round trip checked.
`bash bench/gpu.sh python3 bench/research/numpy_path.py`"""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import numpy as np  # noqa: E402

import vkops  # noqa: E402
from vkops.runtime.submit import Batch  # noqa: E402

try:
    import torch
    cuda = torch.cuda.is_available()
except ImportError:
    torch, cuda = None, False


def t(f, n=20):
    for _ in range(3):
        f()
    ts = []
    for _ in range(n):
        s = time.perf_counter(); f(); ts.append((time.perf_counter() - s) * 1e3)
    ts.sort()
    return f"{ts[0]:7.3f} {ts[len(ts) // 2]:7.3f}"


dev = vkops.Device()
print(dev.name, "device-local tensors host-visible:", dev._memory.host_visible)
for mb in [float(x) for x in (sys.argv[1:] or ["0.25", "1", "4", "16", "64"])]:
    n = int(mb * (1 << 20))
    a = np.random.default_rng(0).integers(-128, 128, n, dtype=np.int8)
    plain = np.empty(n, np.int8)
    st = dev._staging.get(n // 4)
    h = st.host().view(np.int8)[:n]
    d = dev._memory.get(n // 4)
    out = np.empty(n, np.int8)

    def dma():
        b = Batch(dev)
        b.copy_buffer(st, d, n)
        b.run()
    x = vkops.to_device(a)
    assert np.array_equal(x.numpy(), a)
    rows = {"memcpy host->host": lambda: np.copyto(plain, a),
            "memcpy into staging": lambda: np.copyto(h, a),
            "memcpy out of staging": lambda: np.copyto(out, h),
            "DMA staging->device (batch)": dma,
            "vkops upload (to_device+sync)": lambda: (vkops.to_device(a), dev.synchronize()),
            "vkops download (numpy())": lambda: x.numpy()}
    if cuda:
        tt = torch.from_numpy(a).cuda()
        assert torch.equal(tt.cpu(), torch.from_numpy(a))
        rows["torch upload (from_numpy.cuda+sync)"] = lambda: (torch.from_numpy(a).cuda(), torch.cuda.synchronize())
        rows["torch download (cpu())"] = lambda: tt.cpu()
        pin = torch.empty(n, dtype=torch.int8, pin_memory=True)
        rows["torch pinned copy_ H2D"] = lambda: (tt.copy_(pin, non_blocking=True), torch.cuda.synchronize())
    for name, f in rows.items():
        print(f"{mb:6.2f} MiB  {name:38s} best/median ms {t(f)}", flush=True)
