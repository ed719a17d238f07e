"""Shared timing helpers for bench/: Vulkan timestamps, wall clock, torch CUDA events, JSON, tables."""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkops  # noqa: E402


def _warm(run_once, warm_s: float):
    """Keep the GPU busy for warm_s seconds: an idle H200 drops its SM clock to ~345 MHz within
    milliseconds, and a benchmark that leaves host gaps between short dispatches measures that."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        run_once()


def vk_gpu_ms(record, reps: int = 10, device=None, warm_s: float = 0.5, rounds: int = 2) -> float:
    """GPU time (ms) of one operator call, from Vulkan timestamps: the median call of a timed batch,
    once consecutive batches agree (see _settled).

    `record(i)` records one operator call (possibly several dispatches) for i in range(reps). The
    reps are recorded into one batch, so they run back to back in one submission (as a CUDA stream
    runs torch's calls) when they are independent: give each i its own outputs. The GPU is first
    kept busy for `warm_s` with the same batch."""
    dev = device or vkops.Device()
    with dev.batch():
        record(0)  # pipelines built, scratch allocated

    def batch_once(timestamps=False):
        b = dev.batch(timestamps=timestamps)
        with b:
            for i in range(reps):
                record(i)
        return b

    _warm(batch_once, warm_s)

    def timed():
        b = batch_once(timestamps=True)
        n = len(b.gpu_ns) // reps  # dispatches per call
        return statistics.median(sum(b.gpu_ns[j * n:(j + 1) * n]) / 1e6 for j in range(reps))

    return _settled(timed, lambda: _warm(batch_once, ROUND_WARM_S if warm_s else 0), rounds)


ROUND_WARM_S = 0.25


def _settled(timed, warm, rounds: int, tol: float = 0.03, max_rounds: int = 16) -> float:
    """Time `rounds` rounds (each after `warm`), then go on until two consecutive rounds agree within
    `tol`; the lower of those two. On an H100 the first 1-3 seconds after a new input was uploaded
    ran up to 2-4x slower, warm-up or not, then settled; a single timed round would report that."""
    ts = []
    while len(ts) < max(2, rounds) or (abs(ts[-1] - ts[-2]) > tol * min(ts[-1], ts[-2]) and len(ts) < max_rounds):
        warm()
        ts.append(timed())
    return min(ts[-2:])


def wall_ms(fn, reps: int = 10) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def vk_batch_wall_ms(record, reps: int = 10, device=None, rounds: int = 5) -> float:
    """Wall ms per call of `reps` calls recorded in one batch and run (what a user waits for when
    calls are batched): the best of `rounds`."""
    dev = device or vkops.Device()

    def once():
        with dev.batch():
            for i in range(reps):
                record(i)

    once()
    best = None
    for _ in range(rounds):
        t = time.perf_counter()
        once()
        ms = (time.perf_counter() - t) * 1e3 / reps
        best = ms if best is None else min(best, ms)
    return best


def torch_batch_wall_ms(fn, reps: int = 10, rounds: int = 5):
    """Wall ms per call of `reps` torch calls then one synchronize (the batch torch users write)."""
    torch = cuda_torch()
    if torch is None:
        return None
    fn()
    torch.cuda.synchronize()
    best = None
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t) * 1e3 / reps
        best = ms if best is None else min(best, ms)
    return best


def cuda_torch():
    """torch when it has a CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def torch_ms(fn, reps: int = 20, warm_s: float = 0.5, rounds: int = 2):
    """(median CUDA-event ms per call, median wall ms per call incl. synchronize), or (None, None)
    without CUDA. Calls run back to back after the same clock warm-up as vk_gpu_ms."""
    torch = cuda_torch()
    if torch is None:
        return None, None
    def once():
        fn()
        torch.cuda.synchronize()

    once()
    _warm(once, warm_s)

    def timed():
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for a, b in ev:
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in ev)

    gpu = _settled(timed, lambda: _warm(once, ROUND_WARM_S), rounds)
    return gpu, wall_ms(once, reps)


def machine() -> dict:
    dev = vkops.Device()
    info = {"vulkan_device": dev.name, "driver": dev.driver, "host": platform.node(), "python": platform.python_version()}
    try:
        import torch

        if torch.cuda.is_available():
            info["torch"] = torch.__version__
            info["cuda_device"] = torch.cuda.get_device_name()
    except ImportError:
        pass
    return info


def write_results(name: str, rows: list, out_dir=None) -> Path:
    out_dir = Path(out_dir or os.environ.get("OUT") or Path(__file__).resolve().parent / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=1))
    return path


def table(rows: list, cols: list) -> str:
    def fmt(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
        return str(v)

    cells = [[fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(x.ljust(w) for x, w in zip(r, widths)) + " |" for r in cells]
    return "\n".join(lines)
