"""The timing method of every vkops benchmark, and torch's under the same rules.

GPU time: the calls of one measurement are recorded into one batch (each with its own outputs where
memory allows, so they run back to back as a CUDA stream runs torch's calls), after `warm_s` of the
same work: an idle H200 drops its SM clock to ~345 MHz within milliseconds, and a lone short dispatch
with host work around it measures the idle clock. Then timed rounds, each after `round_warm_s` more
of the same work, repeat until two consecutive rounds agree within `tol`, and the lower is reported:
on an H100, for 1-3 s after a large upload the same kernel ran 2-4x slower even after a 1 s warm-up,
then settled. GPU time per call is the median call of a round, from Vulkan timestamps (the sum of the
call's dispatches) or CUDA events. Wall time is `time.perf_counter` around whole calls.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Method:
    reps: int = 10              # calls per timed round (torch: twice as many CUDA-event pairs)
    warm_s: float = 0.5         # the same work first, to bring the clock up
    round_warm_s: float = 0.25  # before each timed round
    rounds: int = 2             # at least this many rounds ...
    tol: float = 0.03           # ... then more until two consecutive ones agree within tol
    max_rounds: int = 16
    batch_reps: int = 10        # calls recorded in one batch for "batch wall ms"
    batch_rounds: int = 5       # best of
    cpu_budget_s: float = 2.0   # CPU baselines: at most `reps` calls or this long, at least one call

    def to_dict(self) -> dict:
        return asdict(self)


DEFAULT = Method()
# For tests and smoke runs: no warm-up, two rounds of three calls; the numbers mean little.
QUICK = Method(reps=3, warm_s=0.0, round_warm_s=0.0, rounds=2, max_rounds=2, batch_reps=3, batch_rounds=1,
               cpu_budget_s=0.2)

DESCRIPTION = ("GPU ms: median call of a round of `reps` calls recorded back to back (Vulkan timestamps, "
               "CUDA events for torch), after `warm_s` of the same work; rounds (each after `round_warm_s`) "
               "until two consecutive ones agree within `tol`, the lower kept. wall ms: median of `reps` "
               "eager calls with device-resident data, each waited for. batch wall ms: wall time of "
               "`batch_reps` calls in one batch (torch: one synchronize), per call, best of `batch_rounds`. "
               "CPU baselines: median wall ms of up to `reps` calls within `cpu_budget_s`.")


def warm(run_once: Callable[[], object], seconds: float) -> None:
    """Keep the device busy for `seconds` with the same work (the clock comes up)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        run_once()


def settled(timed: Callable[[], float], warm_round: Callable[[], None], method: Method = DEFAULT) -> float:
    """Time `method.rounds` rounds (each after `warm_round`), then go on until two consecutive rounds
    agree within `method.tol` (or `max_rounds`); the lower of the last two."""
    ts = []
    while len(ts) < max(2, method.rounds) or (
            abs(ts[-1] - ts[-2]) > method.tol * min(ts[-1], ts[-2]) and len(ts) < method.max_rounds):
        warm_round()
        ts.append(timed())
    return min(ts[-2:])


def vk_gpu_ms(record: Callable[[int], object], reps: Optional[int] = None, device=None,
              warm_s: Optional[float] = None, rounds: Optional[int] = None, method: Method = DEFAULT) -> float:
    """GPU ms of one operator call from Vulkan timestamps. `record(i)` records call i (for i in
    range(reps)) into the current batch; give each i its own outputs where it can have them."""
    import vkops  # noqa: PLC0415

    reps = method.reps if reps is None else reps
    warm_s = method.warm_s if warm_s is None else warm_s
    dev = device or vkops.Device()
    with dev.batch():
        record(0)  # pipelines built, scratch allocated

    def batch_once(timestamps=False):
        b = dev.batch(timestamps=timestamps)
        with b:
            for i in range(reps):
                record(i)
        return b

    warm(batch_once, warm_s)

    def timed():
        b = batch_once(timestamps=True)
        n = len(b.gpu_ns) // reps  # dispatches per call
        return statistics.median(sum(b.gpu_ns[j * n:(j + 1) * n]) / 1e6 for j in range(reps))

    m = method if rounds is None else Method(**{**method.to_dict(), "rounds": rounds})
    return settled(timed, lambda: warm(batch_once, m.round_warm_s if warm_s else 0), m)


def wall_ms(fn: Callable[[], object], reps: int = 10) -> float:
    """Median wall ms of `reps` calls of `fn` (after one untimed call)."""
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def cpu_wall_ms(fn: Callable[[], object], method: Method = DEFAULT, warmup: bool = True) -> float:
    """Median wall ms of up to `method.reps` calls within `method.cpu_budget_s` (at least one), after
    one untimed call (`warmup`): a CPU baseline on a GPU-sized shape may take seconds a call."""
    if warmup:
        fn()
    ts = []
    t0 = time.perf_counter()
    while len(ts) < max(1, method.reps) and (not ts or time.perf_counter() - t0 < method.cpu_budget_s):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def vk_batch_wall_ms(record: Callable[[int], object], reps: Optional[int] = None, device=None,
                     rounds: Optional[int] = None, method: Method = DEFAULT) -> float:
    """Wall ms per call of `reps` calls recorded in one batch and run (what a user waits for when
    calls are batched): the best of `rounds`."""
    import vkops  # noqa: PLC0415

    reps = method.batch_reps if reps is None else reps
    rounds = method.batch_rounds if rounds is None else rounds
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


def cuda_torch():
    """torch when it is installed and has a CUDA device, else None."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def torch_ms(fn: Callable[[], object], reps: Optional[int] = None, warm_s: Optional[float] = None,
             rounds: Optional[int] = None, method: Method = DEFAULT):
    """(GPU ms per call from CUDA events, wall ms per call including a synchronize), or (None, None)
    without CUDA. Calls run back to back after the same clock warm-up as vk_gpu_ms."""
    torch = cuda_torch()
    if torch is None:
        return None, None
    reps = 2 * method.reps if reps is None else reps
    warm_s = method.warm_s if warm_s is None else warm_s
    m = method if rounds is None else Method(**{**method.to_dict(), "rounds": rounds})

    def once():
        fn()
        torch.cuda.synchronize()

    once()
    warm(once, warm_s)

    def timed():
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for a, b in ev:
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in ev)

    gpu = settled(timed, lambda: warm(once, m.round_warm_s if warm_s else 0), m)
    return gpu, wall_ms(once, reps)


def torch_batch_wall_ms(fn: Callable[[], object], reps: Optional[int] = None, rounds: Optional[int] = None,
                        method: Method = DEFAULT):
    """Wall ms per call of `reps` torch calls then one synchronize (the batch torch users write)."""
    torch = cuda_torch()
    if torch is None:
        return None
    reps = method.batch_reps if reps is None else reps
    rounds = method.batch_rounds if rounds is None else rounds
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
