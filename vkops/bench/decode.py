"""`python -m vkops bench --preset decode` (and bench/bench_decode.py): one token of a quantized decoder's
tail, per token, every way vkops can run it beside torch on the same card, every token checked.

The step: x (1 x hidden, int8) -> QLinearMatMul to ffn -> to hidden -> to vocab (int8 weights and
outputs, per-tensor scales, requantized) -> top_k K on the logits. Output scales are powers of two, so
the scale product is exact in float32 and float64 alike and every implementation must give the oracle's
bits. Per token: vkops eager (four calls on device tensors, each submitted without waiting, as torch's
are; reading the top-k waits), vkops batch (the four in one batch), vkops graph (captured once, replayed with the token fed into its submission),
torch eager and torch with a CUDA graph (`_int_mm` with B column-major, A padded to 32 rows as
`_int_mm` needs, requantized in float32, `topk`), and the memory limit: the weights' bytes at the
card's peak HBM rate, where the card is known. Wall time per token includes writing the token in and
reading the top-k out; GPU time is the step's dispatches (Vulkan timestamps) or CUDA events. vkops' weights are
K x N (DML's row-major B) or, with b_layout "column-major", N x K matrices passed as transposed views (PyTorch's
Linear weight as it lies)."""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import reference

# Peak HBM bandwidth (bytes/s) by device name: the memory limit column. Unknown cards get none.
PEAK_BW = {"H100 80GB HBM3": 3.35e12, "H100 NVL": 3.9e12, "H100 PCIe": 2.0e12, "H200": 4.8e12}


@dataclass(frozen=True)
class Step:
    name: str
    hidden: int
    ffn: int
    vocab: int
    k: int = 50

    @property
    def weight_bytes(self) -> int:
        return self.hidden * self.ffn * 2 + self.hidden * self.vocab


STEPS = {
    "llama-32000": Step("llama-32000", 4096, 11008, 32000),      # issue 36's first step
    "7b-151936": Step("7b-151936", 4096, 11008, 151936),         # a 7B-class step with a 151936-row vocabulary
    "tiny": Step("tiny", 64, 160, 1000),                        # lavapipe / CI smoke: shapes, not speed
}


def _pow2_scale(acc_std: float, target: float = 16.0) -> float:
    """The factor (a power of two) from int32 sums to int8 that puts most requantized values well inside int8."""
    return float(2.0 ** round(np.log2(target / max(acc_std, 1.0))))


class Model:
    """Random int8 weights, power-of-two output scales, and the NumPy oracle of one token."""

    def __init__(self, step: Step, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.step = step
        self.w = [rng.integers(-128, 128, shape, np.int8) for shape in
                  ((step.hidden, step.ffn), (step.ffn, step.hidden), (step.hidden, step.vocab))]
        self._w64 = [w.astype(np.float64) for w in self.w]  # exact sums through BLAS (|sum| < 2**53)
        x = rng.integers(-128, 128, (1, step.hidden), np.int8)
        self.scales = []
        for w in self._w64:
            acc = x.astype(np.float64) @ w
            self.scales.append(_pow2_scale(float(acc.std())))
            x = self._requant(acc, self.scales[-1])

    def tokens(self, n: int, seed: int = 1) -> List[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.integers(-128, 128, (1, self.step.hidden), np.int8) for _ in range(n)]

    @staticmethod
    def _requant(acc: np.ndarray, scale: float) -> np.ndarray:
        return np.clip(np.rint(acc * scale), -128, 127).astype(np.int8)

    def hidden(self, x: np.ndarray, products: int = 3) -> np.ndarray:
        """Token x through the step's first `products` products, requantized (3: the logits)."""
        for w, s in zip(self._w64[:products], self.scales[:products]):
            x = self._requant(x.astype(np.float64) @ w, s)
        return x

    def oracle(self, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(values, indices) of the step for token x, by vkops.reference's rules (BLAS for the sums)."""
        return reference.top_k1(self.hidden(x), self.step.k, 1)


# -- vkops ------------------------------------------------------------------------------------------ #
class VkopsStep:
    """The step on one device: weights resident, the token tensor fixed; eager, batch and graph runs."""

    def __init__(self, model: Model, device=None, b_layout: str = "row-major"):
        import vkops  # noqa: PLC0415

        self.vk, self.m = vkops, model
        self.dev = device or vkops.Device()
        if b_layout == "column-major":  # N x K on the device, read through a K x N view: nothing packed per call
            self.w = [self.dev.tensor(np.ascontiguousarray(w.T)).as_strided(w.shape, (1, w.shape[0])) for w in model.w]
        else:
            self.w = [self.dev.tensor(w) for w in model.w]
        self.x = self.dev.tensor(np.zeros((1, model.step.hidden), np.int8))
        self.graph, self.outs = None, None

    def _calls(self):
        h = self.x
        for w, s in zip(self.w, self.m.scales):
            h = self.vk.quantized_linear_matmul(h, 1.0, None, w, 1.0, None, 1.0 / s, None)
        return self.vk.top_k(h, self.m.step.k)

    def eager(self, x: np.ndarray):
        self.x.upload(x)
        v, i = self._calls()
        return v.numpy(), i.numpy()

    def batch(self, x: np.ndarray, timestamps: bool = False):
        self.x.upload(x)
        with self.dev.batch(timestamps=timestamps) as b:
            v, i = self._calls()
        self.last_gpu_ns = sum(b.gpu_ns) if timestamps else None
        return v.numpy(), i.numpy()

    def replay(self, x: np.ndarray):
        if self.graph is None:
            with self.dev.graph() as g:
                self.outs = self._calls()
            self.graph = g
        return self.graph.run(feed={self.x: x}, fetch=list(self.outs))


# -- torch ------------------------------------------------------------------------------------------ #
class TorchStep:
    """The same step in torch on CUDA: `_int_mm` (B column-major, A padded to 32 rows), float32 requantization
    (round half to even, then saturate), `topk`; eager and as a CUDA graph."""

    def __init__(self, model: Model):
        import torch  # noqa: PLC0415

        self.t, self.m = torch, model
        dev = torch.device("cuda")
        self.b = [torch.from_numpy(np.ascontiguousarray(w.T)).to(dev).t() for w in model.w]  # K x N, column-major
        self.x = torch.zeros((32, model.step.hidden), dtype=torch.int8, device=dev)
        self.host = torch.zeros((1, model.step.hidden), dtype=torch.int8).pin_memory()
        self.cuda_graph, self.outs = None, None

    def _calls(self):
        t, h = self.t, self.x
        for b, s in zip(self.b, self.m.scales):
            h = t.clamp(t.round(t._int_mm(h, b).float() * s), -128, 127).to(t.int8)
        return t.topk(h[:1], self.m.step.k, dim=1)

    def _feed(self, x):
        self.host.copy_(self.t.from_numpy(x))
        self.x[:1].copy_(self.host, non_blocking=True)

    def eager(self, x: np.ndarray):
        self._feed(x)
        v, i = self._calls()
        return v.cpu().numpy(), i.cpu().numpy()

    def replay(self, x: np.ndarray):
        t = self.t
        if self.cuda_graph is None:
            s = t.cuda.Stream()
            s.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(s):
                for _ in range(3):
                    self._calls()
            t.cuda.current_stream().wait_stream(s)
            self.cuda_graph = t.cuda.CUDAGraph()
            with t.cuda.graph(self.cuda_graph):
                self.outs = self._calls()
        self._feed(x)
        self.cuda_graph.replay()
        v, i = self.outs
        return v.cpu().numpy(), i.cpu().numpy()

    def gpu_ms(self, x: np.ndarray, reps: int) -> float:
        """Median CUDA-event time of the step (graph replays, the token already fed)."""
        t = self.t
        self.replay(x)
        times = []
        for _ in range(reps):
            a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            a.record()
            self.cuda_graph.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times)


# -- the run ---------------------------------------------------------------------------------------- #
def _check(name: str, got, want) -> Optional[str]:
    """None when (values, indices) equal the oracle's; else what differs. torch.topk does not order ties
    by index, so torch rows pass on equal values with indices that hold those values."""
    (v, i), (rv, ri) = got, want
    v, i = np.asarray(v).reshape(rv.shape), np.asarray(i).reshape(ri.shape).astype(np.int64)
    if np.array_equal(v, rv) and np.array_equal(i, ri):
        return None
    if name.startswith("torch") and np.array_equal(v, rv) and len(set(i.ravel())) == i.size:
        return None
    return f"{name}: top-k differs from the oracle ({int((v != rv).sum())} values, {int((i != ri).sum())} indices)"


def _time(fn: Callable, tokens: List[np.ndarray], warm_s: float) -> Tuple[float, list]:
    """Median wall ms per token over `tokens` (after `warm_s` of the same work), and the outputs."""
    end = time.perf_counter() + warm_s
    while time.perf_counter() < end:
        fn(tokens[0])
    outs, walls = [], []
    for x in tokens:
        t0 = time.perf_counter()
        outs.append(fn(x))
        walls.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(walls), outs


def run(step: Step, tokens: int = 32, against_torch: bool = True, warm_s: float = 0.5,
        device=None, b_layout: str = "row-major") -> dict:
    """Every implementation over the same `tokens` tokens; a result document (JSON-ready)."""
    model = Model(step)
    xs = model.tokens(tokens)
    want = [model.oracle(x) for x in xs]
    vk = VkopsStep(model, device, b_layout)
    impls: Dict[str, Callable] = {"vkops eager": vk.eager, "vkops batch": vk.batch, "vkops graph": vk.replay}
    ts = None
    if against_torch:
        try:
            import torch  # noqa: PLC0415
            ok = torch.cuda.is_available()
        except ImportError:
            ok = False
        if ok:
            ts = TorchStep(model)
            impls.update({"torch eager": ts.eager, "torch CUDA graph": ts.replay})
    rows, failures = [], []
    for name, fn in impls.items():
        wall, outs = _time(fn, xs, warm_s)
        bad = [e for got, w in zip(outs, want) for e in [_check(name, got, w)] if e]
        failures += bad[:1]
        rows.append({"implementation": name, "wall_ms_per_token": wall, "tokens_checked": len(outs),
                     "verified": not bad})
    gpu = {}
    vk.batch(xs[0], timestamps=True)
    samples = []
    for x in xs[: max(5, min(tokens, 20))]:
        vk.batch(x, timestamps=True)
        samples.append(vk.last_gpu_ns / 1e6)
    gpu["vkops"] = statistics.median(samples)
    if ts is not None:
        gpu["torch"] = ts.gpu_ms(xs[0], 20)
    name = vk.dev.name
    peak = next((bw for k, bw in PEAK_BW.items() if k in name), None)
    return {"step": asdict(step), "b_layout": b_layout, "device": name, "driver": vk.dev.driver, "tokens": tokens,
            "scales": model.scales, "rows": rows, "gpu_ms_per_token": gpu, "weight_bytes": step.weight_bytes,
            "memory_limit_ms": None if peak is None else step.weight_bytes / peak * 1e3,
            "peak_bandwidth": peak, "failures": failures}


def table(doc: dict) -> str:
    s = doc["step"]
    lim = doc["memory_limit_ms"]
    lines = [f"decode step {s['name']}: {s['hidden']} -> {s['ffn']} -> {s['hidden']} -> {s['vocab']}, top_k K={s['k']}, "
             f"vkops' weights {doc['b_layout']}, {doc['device']} ({doc['driver']}), {doc['tokens']} tokens, every one checked",
             "| implementation | wall ms / token | checked |", "|---|---|---|"]
    for r in doc["rows"]:
        lines.append(f"| {r['implementation']} | {r['wall_ms_per_token']:.3f} | "
                     f"{'yes' if r['verified'] else 'FAILED'} ({r['tokens_checked']}) |")
    gpu = ", ".join(f"{k} {v:.3f}" for k, v in doc["gpu_ms_per_token"].items())
    lines.append(f"GPU ms per token: {gpu}; weights {doc['weight_bytes'] / 1e6:.0f} MB"
                 + (f", memory limit {lim:.3f} ms at {doc['peak_bandwidth'] / 1e12:.2f} TB/s" if lim else ""))
    return "\n".join(lines)


def main(steps: List[str], tokens: int, against_torch: bool, out: Optional[Path], quick: bool = False,
         b_layout: str = "row-major") -> int:
    status = 0
    for name in steps:
        doc = run(STEPS[name], tokens=tokens, against_torch=against_torch, warm_s=0.0 if quick else 0.5,
                  b_layout=b_layout)
        print(table(doc))
        for f in doc["failures"]:
            print("FAILED", f)
        if any(not r["verified"] for r in doc["rows"] if r["implementation"].startswith("vkops")):
            status = 1
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"decode-{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
            path.write_text(json.dumps(doc, indent=1))
            print(f"results: {path}")
    return status
