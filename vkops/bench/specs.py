"""Per operator, what the sweep needs of a case (vkops/bench/cases.py): its inputs, the vkops call
and its outputs, the check of any implementation's result against vkops.reference, the work done
(bytes or operations) and a note on what ran (the plan's path or kernel)."""
from __future__ import annotations

import contextlib
import math
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import reference
from .cases import WINDOWS, slice_output_sizes


def last_plan(dev):
    """The plan of the device's most recent operator call (the plan cache keeps them in use order)."""
    return next(reversed(dev._plans._entries.values()), None)


class Problem:
    """A case's host inputs (shared by the cases with the same `input_key`) and cached reference data."""

    def __init__(self, inputs: Dict[str, Any]):
        self.inputs = inputs
        self._ref: Dict[Any, Any] = {}

    def cached(self, key, make):
        if key not in self._ref:
            self._ref[key] = make()
        return self._ref[key]


def random_array(rng, shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape, dtype=np.float32).astype(dt, copy=False)
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dt)


class OneInput:
    """Operators of one random input `x` (TOP_K1, SLICE1): its key and how it is made."""

    device_inputs = ("x",)

    @staticmethod
    def upload(case, dev, name, value):
        return dev.tensor(value)

    @staticmethod
    def input_key(case):
        return case.op, case.shape, case.dtype

    @staticmethod
    def make(case, rng) -> Problem:
        return Problem({"x": random_array(rng, case.shape, case.dtype)})


class TopK(OneInput):
    name, unit = "top_k", "GB/s"

    @staticmethod
    def work(case) -> float:  # bytes read
        return math.prod(case.shape) * np.dtype(case.dtype).itemsize

    @staticmethod
    def out_bytes(case) -> int:
        return math.prod(case.shape[:-1]) * case.params["k"] * (np.dtype(case.dtype).itemsize + 4)

    @staticmethod
    def extras(case, dev, dev_inputs):
        return {}

    @staticmethod
    def outputs(case, dev, n):
        import vkops  # noqa: PLC0415

        sizes = case.shape[:-1] + (case.params["k"],)
        return [(dev.empty(vkops.TensorDesc(case.dtype, sizes)), dev.empty(vkops.TensorDesc("uint32", sizes)))
                for _ in range(n)]

    @staticmethod
    def call(case, dev_inputs, out, knobs=None, **variant):
        import vkops  # noqa: PLC0415
        from vkops.ops import top_k1  # noqa: PLC0415

        tuning = TopK.tuning(knobs)
        if variant:  # research switches: top_k1._top_k(force=, chunks=, shuffle=, tune=)
            return top_k1._top_k(dev_inputs["x"], case.params["k"], out=out, tuning=tuning, **variant)
        return vkops.top_k(dev_inputs["x"], case.params["k"], out=out, tuning=tuning)

    @staticmethod
    def tuning(knobs=None):
        """A variant's tuning: the default with `knobs` (name -> value, e.g. {"WORKGROUP": 256}) replaced;
        ValidationError (a ValueError) for a knob TopK1Tuning does not have or a bad value."""
        from ..ops.top_k1 import DEFAULT  # noqa: PLC0415

        return DEFAULT.replace(**knobs) if knobs else DEFAULT

    @staticmethod
    def variant(knobs=None, **_):  # top_k's research switches (chunks, force) are call arguments
        """Checks the variant's tuning before the sweep; the tuning itself travels in call()."""
        TopK.tuning(knobs)
        return contextlib.nullcontext()

    @staticmethod
    def read(out):
        return out[0].numpy(), out[1].numpy()

    @staticmethod
    def note(case, dev) -> str:
        p = last_plan(dev)
        chunks = p.note("chunks", 1) if p is not None else 1
        return "" if p is None else f"path {p.note('path')}" + (f", {chunks} chunks" if chunks > 1 else "")

    @staticmethod
    def check(case, problem, result, strict: bool) -> Tuple[bool, str]:
        """On every row, or CHECK_ROWS sampled ones (the first and last among them) of a larger input,
        values must equal the stable oracle's. Indices: with `strict`, equal to the oracle's (the spec's
        rule: among equal values indices ascend); else each must address its value, once."""
        x, k = problem.inputs["x"], case.params["k"]
        n = x.shape[-1]
        x2 = x.reshape(-1, n)
        rows = problem.cached("rows", lambda: sample_rows(x2.shape[0]))
        xs = x2[rows]
        rv, ri = problem.cached("top_k", lambda: reference.top_k1(xs, n, -1))  # the whole order, once
        rv, ri = rv[:, :k], ri[:, :k]
        v, i = (np.asarray(r).reshape(-1, np.asarray(r).shape[-1])[rows] for r in result)
        where = "" if len(rows) == x2.shape[0] else f" ({len(rows)} of {x2.shape[0]} rows)"
        if v.shape != rv.shape or not np.array_equal(v.astype(x.dtype), rv, equal_nan=x.dtype.kind == "f"):
            return False, "values differ from vkops.reference" + where
        if np.array_equal(i.astype(np.int64), ri.astype(np.int64)):
            return True, "exact" + where
        if strict:
            return False, "indices differ from vkops.reference (ties must keep ascending indices)" + where
        i64 = i.astype(np.int64)
        if i64.min() < 0 or i64.max() >= n:
            return False, "index out of range" + where
        if not np.array_equal(np.take_along_axis(xs, i64, -1), v.astype(x.dtype)):
            return False, "indices do not address their values" + where
        srt = np.sort(i64, axis=-1)
        if np.any(srt[..., 1:] == srt[..., :-1]):
            return False, "an index appears twice" + where
        return True, "values exact; tie order differs" + where


CHECK_ROWS = 64


def sample_rows(n_rows: int) -> np.ndarray:
    """Every row up to CHECK_ROWS, else the first, the last and a fixed random sample between."""
    if n_rows <= CHECK_ROWS:
        return np.arange(n_rows)
    mid = np.random.default_rng(n_rows).choice(np.arange(1, n_rows - 1), CHECK_ROWS - 2, replace=False)
    return np.sort(np.concatenate([[0, n_rows - 1], mid]))


class Slice(OneInput):
    name, unit = "slice", "GB/s"

    @staticmethod
    def work(case) -> float:  # bytes read + written
        return 2 * math.prod(slice_output_sizes(case.params)) * np.dtype(case.dtype).itemsize

    @staticmethod
    def out_bytes(case) -> int:
        return math.prod(slice_output_sizes(case.params)) * np.dtype(case.dtype).itemsize

    @staticmethod
    def extras(case, dev, dev_inputs):
        """The identity window beside a plain device-to-device copy of the same bytes (the ceiling)."""
        if case.params["window"] != "copy":
            return {}

        def copy(out):
            b = dev._active_batch()
            if b is not None:
                return b.copy(dev_inputs["x"], out)
            with dev.batch() as b:
                b.copy(dev_inputs["x"], out)

        return {"vkCmdCopyBuffer": copy}

    @staticmethod
    def outputs(case, dev, n):
        import vkops  # noqa: PLC0415

        return [dev.empty(vkops.TensorDesc(case.dtype, slice_output_sizes(case.params))) for _ in range(n)]

    @staticmethod
    def call(case, dev_inputs, out, knobs=None, **_):
        import vkops  # noqa: PLC0415

        p = case.params
        return vkops.slice(dev_inputs["x"], p["offsets"], p["sizes"], p["strides"], out=out, tuning=Slice.tuning(knobs))

    @staticmethod
    def tuning(knobs=None):
        """A variant's tuning: the default with `knobs` (name -> value, e.g. {"WORDS_PER_THREAD": 8}) replaced;
        ValidationError (a ValueError) for a knob Slice1Tuning does not have or a bad value."""
        from ..ops.slice1.tuning import DEFAULT  # noqa: PLC0415

        return DEFAULT.replace(**knobs) if knobs else DEFAULT

    @staticmethod
    def variant(knobs=None, **_):
        """Checks the variant's tuning before the sweep; the tuning itself travels in call()."""
        Slice.tuning(knobs)
        return contextlib.nullcontext()

    @staticmethod
    def read(out):
        return out.numpy()

    @staticmethod
    def note(case, dev) -> str:
        return WINDOWS[case.params["window"]]

    @staticmethod
    def check(case, problem, result, strict: bool) -> Tuple[bool, str]:
        p = case.params
        want = problem.cached(("slice", case.params["window"]),
                              lambda: reference.slice1(problem.inputs["x"], p["offsets"], p["sizes"], p["strides"]))
        ok = (result.dtype == want.dtype and result.shape == want.shape
              and np.array_equal(np.ascontiguousarray(result).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)))
        return (True, "exact") if ok else (False, "differs from vkops.reference")


class QLinearMatMul:
    """a int8/uint8 (B, M, K) x b (B, K, N), per-tensor scales, output dtype a's. Zero points where an
    operand is uint8: 128 for uint8 operands, 3 for int8 ones; the output's 128 (uint8) or 0."""
    name, unit = "qlmm", "TOPS"
    device_inputs = ("a", "b")

    @staticmethod
    def dims(case):
        s = case.shape
        return (1,) + tuple(s) if len(s) == 3 else tuple(s)  # B, M, K, N

    @staticmethod
    def input_key(case):
        return case.op, case.shape, case.dtype, case.params.get("b_layout")

    @classmethod
    def upload(cls, case, dev, name, value):
        """b column-major: the transposed matrix goes up packed, and the call sees a {B,K,N} view of it."""
        if name != "b" or case.params.get("b_layout") != "column-major":
            return dev.tensor(value)
        B, M, K, N = cls.dims(case)
        t = dev.tensor(np.ascontiguousarray(np.swapaxes(value, -1, -2)))
        return t.as_strided(value.shape, (N * K, 1, K)[3 - value.ndim:])

    @classmethod
    def make(cls, case, rng) -> Problem:
        B, M, K, N = cls.dims(case)
        adt, bdt = (np.dtype(t) for t in case.dtype.split("x"))
        zp = case.params["zero_points"]
        a, b = random_array(rng, (B, M, K), adt), random_array(rng, (B, K, N), bdt)
        # The output's spread is about 40 steps: neither saturated nor all zero.
        so = np.float32(0.02 * 0.02 * math.sqrt(K) * 74 * 74 / 40)

        def zero(dt, v):
            return dt.type(v if dt.kind == "u" else 3) if zp else None

        return Problem({"a": a, "a_scale": np.float32(0.02), "a_zero_point": zero(adt, 128),
                        "b": b, "b_scale": np.float32(0.02), "b_zero_point": zero(bdt, 128),
                        "output_scale": so, "output_zero_point": (adt.type(128 if adt.kind == "u" else 0) if zp else None),
                        "output_dtype": adt, "rows": np.sort(rng.choice(M, min(M, 16), replace=False))})

    @classmethod
    def work(cls, case) -> float:  # int8 operations: a multiply and an add per term
        B, M, K, N = cls.dims(case)
        return 2.0 * B * M * K * N

    @classmethod
    def out_bytes(cls, case) -> int:
        B, M, K, N = cls.dims(case)
        return B * M * N

    @staticmethod
    def extras(case, dev, dev_inputs):
        return {}

    @classmethod
    def outputs(cls, case, dev, n):
        import vkops  # noqa: PLC0415

        B, M, K, N = cls.dims(case)
        return [dev.empty(vkops.TensorDesc(case.dtype.split("x")[0], (B, M, N))) for _ in range(n)]

    @staticmethod
    def call(case, dev_inputs, out, kernel="auto", config=None, split_k=None, knobs=None, **_):
        import vkops  # noqa: PLC0415

        d = dev_inputs
        return vkops.quantized_linear_matmul(d["a"], d["a_scale"], d["a_zero_point"], d["b"], d["b_scale"],
                                             d["b_zero_point"], d["output_scale"], d["output_zero_point"],
                                             output_dtype=d["output_dtype"], out=out, kernel=kernel,
                                             tuning=QLinearMatMul.tuning(config, split_k, knobs))

    @staticmethod
    def tuning(config=None, split_k=None, knobs=None):
        """A variant's tuning: the default with the cooperative-matrix tile and split-K (`config`,
        `split_k`) and any other knob (`knobs`: name -> value, e.g. {"DOT_UNROLL": 4}) replaced;
        ValidationError (a ValueError) for a knob QlmmTuning does not have or a bad value."""
        from ..ops.qlmm import DEFAULT  # noqa: PLC0415

        if config is None and split_k is None and not knobs:
            return DEFAULT
        return DEFAULT.replace(**{"COOPMAT_CONFIG": config or "auto",
                                  "COOPMAT_SPLIT_K": "auto" if split_k is None else split_k, **(knobs or {})})

    @staticmethod
    def variant(config=None, split_k=None, knobs=None, **_):
        """Checks the variant's tuning before the sweep; the tuning itself travels in call()."""
        QLinearMatMul.tuning(config, split_k, knobs)
        return contextlib.nullcontext()

    @staticmethod
    def read(out):
        return out.numpy()

    @staticmethod
    def note(case, dev) -> str:
        p = last_plan(dev)
        if p is None:
            return ""
        cfg, sk = p.note("config", None), p.note("split_k", None)
        return f"kernel {p.dispatches[-1].kernel}" + (f" {cfg}" if cfg else "") + (f", split-K {sk}" if sk and sk > 1 else "")

    @staticmethod
    def check(case, problem, result, strict: bool) -> Tuple[bool, str]:
        """On up to 16 sampled rows of a: requantized outputs within 1 of the float64 oracle and equal
        on >= 99% (the float32 scale product, README); ("accumulator", int32) results (torch._int_mm)
        equal to the exact sum."""
        p, rows = problem.inputs, problem.inputs["rows"]
        a = p["a"][:, rows, :]
        if isinstance(result, tuple) and result[0] == "accumulator":
            want = np.matmul(a.astype(np.int64), p["b"].astype(np.int64))
            got = result[1][:, rows, :].astype(np.int64)
            ok = got.shape == want.shape and np.array_equal(got, want)
            return (True, "int32 sums exact (no requantization)") if ok else (False, "int32 sums differ")
        want = reference.quantized_linear_matmul(a, p["a_scale"], p["a_zero_point"], p["b"], p["b_scale"],
                                                 p["b_zero_point"], p["output_scale"], p["output_zero_point"],
                                                 p["output_dtype"])
        got = np.asarray(result).reshape(want.shape[0], -1, want.shape[-1])[:, rows, :]
        d = np.abs(got.astype(np.int32) - want.astype(np.int32))
        exact = float((d == 0).mean())
        if d.max() > 1 or exact < 0.99:
            return False, f"max |diff| {int(d.max())}, {exact:.1%} exact on {len(rows)} rows"
        return True, "exact" if exact == 1.0 else f"{exact:.2%} exact, max |diff| 1 ({len(rows)} rows)"


SPECS = {"top_k": TopK, "slice": Slice, "qlmm": QLinearMatMul}


def throughput(case, ms: Optional[float]) -> Tuple[Optional[float], Optional[float]]:
    """(GB/s, TOPS) of one call taking `ms`; the one that does not apply is None."""
    if not ms:
        return None, None
    spec = SPECS[case.op]
    v = spec.work(case) / ms / (1e6 if spec.unit == "GB/s" else 1e9)
    return (v, None) if spec.unit == "GB/s" else (None, v)
