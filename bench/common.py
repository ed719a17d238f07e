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


def vk_gpu_ms(record, reps: int = 10, device=None) -> float:
    """Median GPU time (ms) of one recorded operator call, from Vulkan timestamps.

    `record()` is called inside a timestamped batch and must record exactly one operator call
    (which may be several dispatches: their times are summed per call)."""
    dev = device or vkops.Device()
    record_once = dev.batch()
    with record_once:
        record()  # warm-up: pipelines built, scratch allocated
    per_call = []
    for _ in range(reps):
        b = dev.batch(timestamps=True)
        with b:
            record()
        per_call.append(sum(b.gpu_ns) / 1e6)
    return statistics.median(per_call)


def wall_ms(fn, reps: int = 10) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def torch_ms(fn, reps: int = 20):
    """(median CUDA-event ms, median wall ms incl. synchronize) of fn, or (None, None) without CUDA."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    fn()
    torch.cuda.synchronize()
    gpu, wall = [], []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t) * 1e3)
        gpu.append(a.elapsed_time(b))
    return statistics.median(gpu), statistics.median(wall)


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
