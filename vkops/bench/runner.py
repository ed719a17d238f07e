"""The sweep: every case through vkops (and its variants), then each requested baseline; every output
checked against vkops.reference; one JSON document per run, rewritten after each case, so Ctrl-C
(or a crash) keeps the rows measured so far."""
from __future__ import annotations

import datetime
import json
import os
import re
import signal
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, TextIO

import numpy as np

from . import baselines as B
from . import info, report, schema
from .cases import Case
from .specs import SPECS, throughput
from .timing import (DEFAULT, DESCRIPTION, Method, cpu_wall_ms, cuda_torch, torch_batch_wall_ms, torch_ms,
                     vk_batch_wall_ms, vk_gpu_ms, wall_ms)

# Each timed call gets its own outputs (so the calls of a round are independent) while they fit this;
# beyond it the calls share one output and run with barriers between them.
OUTPUT_BYTES = 1 << 30


@dataclass
class Config:
    cases: List[Case]
    against: List[str] = field(default_factory=list)
    device: int = 0
    out: Optional[Path] = None          # a directory; None: write nothing
    method: Method = DEFAULT
    variants: Dict[str, dict] = field(default_factory=dict)  # "name" -> extra arguments of the vkops call
    progress: bool = True
    command: List[str] = field(default_factory=list)
    preset: Optional[str] = None


class Progress:
    """A tqdm bar on `stream` where tqdm is installed and `stream` is a terminal, else a line per case;
    messages go above it."""

    def __init__(self, total: int, stream: TextIO, enabled: bool):
        self.stream, self.enabled, self.done, self.total, self.bar = stream, enabled, 0, total, None
        if enabled and getattr(stream, "isatty", lambda: False)():
            try:
                from tqdm import tqdm  # noqa: PLC0415

                self.bar = tqdm(total=total, file=stream, unit="case", desc="bench", dynamic_ncols=True)
            except ImportError:
                self.write("tqdm is not installed: progress as lines (pip install tqdm, or vkops[bench])")

    def write(self, msg: str):
        if self.bar is not None:
            self.bar.write(msg, file=self.stream)
        else:
            print(msg, file=self.stream, flush=True)

    def start(self, case: Case):
        if self.bar is not None:
            self.bar.set_postfix_str(case.label(), refresh=True)
        elif self.enabled:
            self.write(f"[{self.done + 1}/{self.total}] {case.label()}")

    def step(self):
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


class Interrupts:
    """Ctrl-C (SIGINT) or SIGTERM (a time limit's `timeout`, a batch scheduler's notice) taken at the next safe
    point, between measurements: a KeyboardInterrupt in the middle of a batch could leave submitted work unwaited
    for while the process tears the device down, and a killed process would keep none of its rows. A second
    signal stops at once."""

    NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}

    def __init__(self, log: TextIO):
        self.log, self.pending, self.old = log, False, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.old = {s: signal.signal(s, self._handler) for s in self.NAMES}
        return self

    def _handler(self, signum, frame):
        if self.pending:
            self._restore()
            raise KeyboardInterrupt
        self.pending = True
        name = self.NAMES[signum]
        print(f"\n{name}: stopping after this measurement ({name} again to stop now)", file=self.log, flush=True)

    def check(self):
        if self.pending:
            raise KeyboardInterrupt

    def _restore(self):
        for s, old in self.old.items():
            signal.signal(s, old)
        self.old = {}

    def __exit__(self, *exc):
        self._restore()


def _f(v) -> Optional[float]:
    return None if v is None else float(v)


def make_row(case: Case, impl: str, device: str, gpu=None, wall=None, batch_wall=None, verified=None, check=None,
             note=None) -> dict:
    ms = gpu or wall
    gbs, tops = throughput(case, ms)
    return {"op": case.op, "shape": list(case.shape), "dtype": case.dtype, "params": case.params,
            "implementation": impl, "device": device, "gpu_ms": _f(gpu), "wall_ms": _f(wall),
            "batch_wall_ms": _f(batch_wall), "gb_per_s": _f(gbs), "tops": _f(tops),
            "throughput_from": None if not ms else ("gpu_ms" if gpu else "wall_ms"),
            "verified": verified, "check": check, "note": note or None}


def new_document(cfg: Config, dev, status: Dict[str, dict]) -> dict:
    used = [n for n in cfg.against if status[n]["available"]]
    vers = info.versions(["torch"] * ("torch" in used) + ["onnxruntime", "onnx"] * ("onnxruntime" in used))
    torch = cuda_torch() if "torch" in used else None
    return {"format": schema.FORMAT,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": list(cfg.command), "preset": cfg.preset, "interrupted": False, "machine": info.machine(),
            "versions": vers, "device": info.device_facts(dev.index),
            "cuda_device": torch.cuda.get_device_name() if torch is not None else None,
            "method": {**cfg.method.to_dict(), "description": DESCRIPTION}, "against": list(cfg.against),
            "baselines": status, "skipped": [], "rows": []}


def out_path(cfg: Config, dev) -> Optional[Path]:
    if cfg.out is None:
        return None
    ops = "-".join(dict.fromkeys(c.op for c in cfg.cases)) or "none"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev.name).strip("-").lower()[:40]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(cfg.out) / f"bench-{ops}-{slug}-{stamp}.json"
    n = 1
    while path.exists():  # two runs in one second
        n += 1
        path = Path(cfg.out) / f"bench-{ops}-{slug}-{stamp}-{n}.json"
    return path


def write(doc: dict, path: Optional[Path]) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)  # a reader (or a second Ctrl-C) never sees half a file


class Sweep:
    def __init__(self, cfg: Config, dev, doc: dict, progress: Progress,
                 on_row: Optional[Callable[[dict], None]] = None):
        self.cfg, self.dev, self.doc, self.progress, self.on_row = cfg, dev, doc, progress, on_row
        self.method = cfg.method
        self.interrupts: Optional[Interrupts] = None
        self.path = out_path(cfg, dev)
        self.bases = {n: B.BASELINES[n] for n in cfg.against if doc["baselines"][n]["available"]}

    def add(self, row: dict):
        self.doc["rows"].append(row)
        self.progress.write(report.row_line(row))
        if self.on_row is not None:
            self.on_row(row)
        self.safe_point()

    def safe_point(self):
        if self.interrupts is not None:
            self.interrupts.check()

    def skip(self, case: Case, impl: str, reason: str):
        self.doc["skipped"].append({"op": case.op, "shape": list(case.shape), "dtype": case.dtype,
                                    "params": case.params, "implementation": impl, "reason": reason})
        self.progress.write(f"{case.label()} | {impl}: skipped: {reason}")
        self.safe_point()

    def run(self):
        key = problem = dev_inputs = None
        for case in self.cfg.cases:
            spec = SPECS[case.op]
            self.progress.start(case)
            if spec.input_key(case) != key:
                dev_inputs = problem = None  # the last case's device memory goes back first
                for b in self.bases.values():
                    b.release()
                key = spec.input_key(case)
                # The same data for the same case in every run, whatever else runs.
                problem = spec.make(case, np.random.default_rng(zlib.crc32(repr(key).encode())))
                dev_inputs = {n: (spec.upload(case, self.dev, n, v) if n in spec.device_inputs else v)
                              for n, v in problem.inputs.items()}
            self.case(case, spec, problem, dev_inputs)
            self.progress.step()
            write(self.doc, self.path)

    def case(self, case, spec, problem, dev_inputs):
        self.vkops(case, spec, problem, "vkops", lambda i, o: spec.call(case, dev_inputs, o))
        for name, kw in self.cfg.variants.items():
            with spec.variant(**kw):
                self.vkops(case, spec, problem, f"vkops[{name}]", lambda i, o: spec.call(case, dev_inputs, o, **kw))
        for name, fn in spec.extras(case, self.dev, dev_inputs).items():
            self.vkops(case, spec, problem, name, lambda i, o, fn=fn: fn(o))
        for name, base in self.bases.items():
            try:
                impls = base.impls(case, problem)
            except B.Unsupported as e:
                self.skip(case, name, str(e))
                continue
            for impl in impls:
                self.baseline(case, spec, problem, base, impl)

    def vkops(self, case, spec, problem, name, call):
        m, dev = self.method, self.dev
        n = max(1, min(max(m.reps, m.batch_reps), OUTPUT_BYTES // max(1, spec.out_bytes(case))))
        try:
            outs = spec.outputs(case, dev, n)
            call(0, outs[0])
            note = spec.note(case, dev) if name.startswith("vkops") else None
            record = lambda i: call(i, outs[i % n])  # noqa: E731
            gpu = vk_gpu_ms(record, m.reps, dev, method=m)
            wall = wall_ms(lambda: (record(0), dev.synchronize()), m.reps)  # eager calls return once submitted
            bwall = vk_batch_wall_ms(record, method=m)
            ok, how = spec.check(case, problem, spec.read(outs[0]), strict=True)
        except Exception as e:  # noqa: BLE001 - reported in the document, the sweep goes on
            self.skip(case, name, f"{type(e).__name__}: {e}")
            return
        self.add(make_row(case, name, "vulkan", gpu, wall, bwall, ok, how, note))

    def baseline(self, case, spec, problem, base, impl):
        m = self.method
        try:
            if base.device == "cuda":
                gpu, wall = torch_ms(impl.fn, method=m)
                bwall = torch_batch_wall_ms(impl.fn, method=m)
                res = impl.fn()
            else:
                gpu = bwall = None
                res = impl.fn()
                wall = cpu_wall_ms(impl.fn, m, warmup=False)
            ok, how = spec.check(case, problem, impl.result(res), strict=False)
        except Exception as e:  # noqa: BLE001 - e.g. a dtype the baseline lacks
            self.skip(case, impl.name, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}")
            return
        self.add(make_row(case, impl.name, base.device, gpu, wall, bwall, ok, how, impl.note))


def run(cfg: Config, on_row: Optional[Callable[[dict], None]] = None, log: TextIO = None):
    """Run the sweep; returns (document, path or None). KeyboardInterrupt ends it with the rows so far
    (document["interrupted"] is then true)."""
    import vkops  # noqa: PLC0415

    log = log or sys.stderr
    dev = vkops.Device(cfg.device)
    status = B.status()
    for name in cfg.against:
        if not status[name]["available"]:
            print(f"baseline {name}: {status[name]['reason']}; no {name} rows", file=log)
    doc = new_document(cfg, dev, status)
    progress = Progress(len(cfg.cases), log, cfg.progress)
    sweep = Sweep(cfg, dev, doc, progress, on_row)
    try:
        with Interrupts(log) as sweep.interrupts:
            sweep.run()
    except KeyboardInterrupt:
        doc["interrupted"] = True
    finally:
        progress.close()
        write(doc, sweep.path)
    if doc["interrupted"]:
        print(f"interrupted: kept the {len(doc['rows'])} rows measured", file=log)
    return doc, sweep.path
