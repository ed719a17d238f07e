"""What vkops is compared with, in the same run: torch on CUDA, NumPy and ONNX Runtime on the CPU.

A baseline turns a case and its host inputs into one or more `Impl`s: a call to time and a way to
hand its result to the case's check (vkops/bench/specs.py). A baseline that is not installed says
why (`missing`); one that cannot run a case raises `Unsupported` with the reason. Both end up in the
result document, never as a crash.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from . import cases as C
from .specs import QLinearMatMul
from .timing import cuda_torch

NAMES = ("torch", "numpy", "onnxruntime")


class Unsupported(Exception):
    """This baseline cannot run this case (the message says why)."""


@dataclass
class Impl:
    name: str                       # the implementation column: "torch", "torch (B row-major)", ...
    fn: Callable[[], Any]           # one call, inputs already where they live (GPU memory for torch)
    result: Callable[[Any], Any]    # fn's value -> what the case's check takes
    note: str = ""


def version(module: str) -> Optional[str]:
    try:
        return importlib.import_module(module).__version__
    except Exception:  # noqa: BLE001 - not installed, or broken: either way not usable
        return None


class Torch:
    name, device = "torch", "cuda"

    def missing(self) -> Optional[str]:
        v = version("torch")
        if v is None:
            return "torch is not installed (pip install torch, or vkops[bench])"
        if cuda_torch() is None:
            return f"torch {v} sees no CUDA device"
        return None

    def version(self):
        t = cuda_torch()
        return f"{t.__version__} (CUDA {t.version.cuda}, {t.cuda.get_device_name()})" if t else version("torch")

    def impls(self, case, problem) -> List[Impl]:
        torch = cuda_torch()

        def gpu(name):
            def up():
                try:
                    return torch.from_numpy(np.ascontiguousarray(problem.inputs[name])).cuda()
                except (TypeError, RuntimeError) as e:
                    raise Unsupported(f"torch cannot hold {problem.inputs[name].dtype}: {e}") from None
            return problem.cached(("torch", name), up)

        if case.op == "top_k":
            x, k = gpu("x"), case.params["k"]
            return [Impl("torch", lambda: torch.topk(x, k, dim=-1, sorted=True),
                         lambda r: (r[0].cpu().numpy(), r[1].cpu().numpy()), "torch.topk(sorted=True)")]
        if case.op == "slice":
            x = gpu("x")
            idx, flips = [], []
            for d, (off, sz, st) in enumerate(zip(*(case.params[f] for f in ("offsets", "sizes", "strides")))):
                if st > 0:
                    idx.append(slice(off, off + sz, st))
                else:  # torch has no negative steps: the same elements forward, then flipped
                    idx.append(slice(off + (sz - 1) % -st, off + sz, -st))
                    flips.append(d)
            idx = tuple(idx)
            if flips:
                fn = lambda: x[idx].flip(flips)  # noqa: E731 - flip copies
            else:
                fn = lambda: x[idx].clone(memory_format=torch.contiguous_format)  # noqa: E731
            return [Impl("torch", fn, lambda r: r.cpu().numpy())]
        # qlmm: torch._int_mm (int8 x int8 -> int32, no requantization), the cross-API anchor
        if case.dtype != "int8xint8":
            raise Unsupported("torch._int_mm multiplies int8 x int8 only")
        B, M, K, N = QLinearMatMul.dims(case)
        if K % 8 or N % 8:
            raise Unsupported(f"torch._int_mm needs K and N multiples of 8; got K={K}, N={N}")
        Mp = max(M, 32)  # _int_mm needs more than 16 rows: A padded with zero rows (TOPS count M)
        a = torch.zeros((B, Mp, K), dtype=torch.int8, device="cuda")
        a[:, :M] = gpu("a")
        b = gpu("b")
        bt = b.transpose(1, 2).contiguous()  # (B, N, K): B column-major through .t()
        pad = f"; A padded to {Mp} rows" if Mp != M else ""

        def acc(r):
            return "accumulator", np.stack([t[:M].cpu().numpy() for t in r])

        return [Impl("torch", lambda: [torch._int_mm(a[i], bt[i].t()) for i in range(B)], acc,
                     f"torch._int_mm, B column-major (cuBLASLt), int32 out{pad}"),
                Impl("torch (B row-major)", lambda: [torch._int_mm(a[i], b[i]) for i in range(B)], acc,
                     f"torch._int_mm, B row-major, int32 out{pad}")]

    def release(self):
        t = cuda_torch()
        if t is not None:
            t.cuda.empty_cache()


class NumPy:
    name, device = "numpy", "cpu"

    def missing(self):
        return None

    def version(self):
        return np.__version__

    def impls(self, case, problem) -> List[Impl]:
        p = problem.inputs
        if case.op == "top_k":
            x, k = p["x"], case.params["k"]
            n = x.shape[-1]

            def top_k():  # partition, then sort the K (descending; stable ascending sort reversed)
                part = np.argpartition(x, n - k, axis=-1)[..., n - k:]
                vals = np.take_along_axis(x, part, -1)
                order = np.argsort(vals, axis=-1, kind="stable")[..., ::-1]
                return np.take_along_axis(vals, order, -1), np.take_along_axis(part, order, -1)

            return [Impl("numpy", top_k, lambda r: r, "argpartition + argsort")]
        if case.op == "slice":
            x, idx = p["x"], C.numpy_index(case.params)
            return [Impl("numpy", lambda: x[idx].copy(), lambda r: r, "x[window].copy()")]

        def qlmm():  # float64 BLAS: exact here (|sum| <= 255 * 255 * K < 2**53)
            za = 0.0 if p["a_zero_point"] is None else float(p["a_zero_point"])
            zb = 0.0 if p["b_zero_point"] is None else float(p["b_zero_point"])
            acc = np.matmul(p["a"].astype(np.float64) - za, p["b"].astype(np.float64) - zb)
            scale = np.float64(p["a_scale"]) * np.float64(p["b_scale"]) / np.float64(p["output_scale"])
            zo = 0.0 if p["output_zero_point"] is None else float(p["output_zero_point"])
            info = np.iinfo(p["output_dtype"])
            return np.clip(np.rint(acc * scale) + zo, info.min, info.max).astype(p["output_dtype"])

        return [Impl("numpy", qlmm, lambda r: r, "float64 matmul, requantized")]

    def release(self):
        pass


class OnnxRuntime:
    """ONNX Runtime's CPU execution provider running a one-node model (TopK 11, Slice 13,
    QLinearMatMul 10), built with the `onnx` package."""
    name, device = "onnxruntime", "cpu"

    def missing(self):
        if version("onnxruntime") is None:
            return "onnxruntime is not installed (pip install onnxruntime, or vkops[bench])"
        if version("onnx") is None:
            return "onnx is not installed (it builds the models onnxruntime runs)"
        return None

    def version(self):
        return version("onnxruntime")

    @staticmethod
    def _session(nodes, inputs, outputs, inits=()):
        import onnxruntime as ort  # noqa: PLC0415
        from onnx import helper  # noqa: PLC0415

        g = helper.make_graph(nodes, "bench", inputs, outputs, list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        try:
            return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - e.g. no kernel for this type
            raise Unsupported(f"onnxruntime: {str(e).strip().splitlines()[0][:200]}") from None

    def impls(self, case, problem) -> List[Impl]:
        from onnx import TensorProto, helper  # noqa: PLC0415
        from onnx.helper import np_dtype_to_tensor_dtype  # noqa: PLC0415

        p = problem.inputs

        def vi(name, arr_or_dt, shape):
            dt = arr_or_dt if isinstance(arr_or_dt, np.dtype) else arr_or_dt.dtype
            return helper.make_tensor_value_info(name, np_dtype_to_tensor_dtype(dt), list(shape))

        if case.op == "top_k":
            x = p["x"]
            out = x.shape[:-1] + (case.params["k"],)

            def make():
                return self._session([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=1, sorted=1)],
                                     [vi("x", x, x.shape), helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
                                     [vi("v", x, out), helper.make_tensor_value_info("i", TensorProto.INT64, list(out))])
            sess = problem.cached(("onnxruntime", "top_k"), make)
            feed = {"x": x, "k": np.array([case.params["k"]], np.int64)}
            return [Impl("onnxruntime", lambda: sess.run(None, feed), lambda r: (r[0], r[1]), "TopK (CPU)")]
        if case.op == "slice":
            x = p["x"]
            starts, ends, steps = [], [], []
            for s in C.numpy_index(case.params):
                starts.append(s.start)
                ends.append(s.stop if s.stop is not None else -(2 ** 62))  # clamps to "before element 0"
                steps.append(s.step)
            inits = [helper.make_tensor(n, TensorProto.INT64, [len(v)], v) for n, v in
                     (("starts", starts), ("ends", ends), ("axes", list(range(x.ndim))), ("steps", steps))]
            sess = self._session([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
                                 [vi("x", x, x.shape)], [vi("y", x, C.slice_output_sizes(case.params))], inits)
            return [Impl("onnxruntime", lambda: sess.run(None, {"x": x}), lambda r: r[0], "Slice (CPU)")]
        a, b = p["a"], p["b"]

        def scalar(name, v, dt):  # ONNX QLinearMatMul's zero points are inputs: absent ones are 0
            dt = np.dtype(dt)
            return helper.make_tensor(name, np_dtype_to_tensor_dtype(dt), [], [dt.type(0 if v is None else v).item()])

        od = p["output_dtype"]
        inits = [scalar("sa", p["a_scale"], np.float32), scalar("za", p["a_zero_point"], a.dtype),
                 scalar("sb", p["b_scale"], np.float32), scalar("zb", p["b_zero_point"], b.dtype),
                 scalar("so", p["output_scale"], np.float32), scalar("zo", p["output_zero_point"], od)]
        out = a.shape[:-1] + b.shape[-1:]
        sess = self._session([helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "so", "zo"], ["y"])],
                             [vi("a", a, a.shape), vi("b", b, b.shape)], [vi("y", np.dtype(od), out)], inits)
        note = "QLinearMatMul (CPU)"
        if a.dtype == np.uint8 and b.dtype == np.int8:  # seen: max |diff| 37 at 16x64x32 on an AVX2 CPU
            note += "; u8 x s8: x86 kernels without VNNI saturate 16-bit pair sums when b uses all 8 bits"
        return [Impl("onnxruntime", lambda: sess.run(None, {"a": a, "b": b}), lambda r: r[0], note)]

    def release(self):
        pass


BASELINES: Dict[str, Any] = {"torch": Torch(), "numpy": NumPy(), "onnxruntime": OnnxRuntime()}


def status() -> Dict[str, dict]:
    """Per baseline: whether it can run here, its version, and why not."""
    out = {}
    for name, b in BASELINES.items():
        why = b.missing()
        out[name] = {"available": why is None, "device": b.device, "version": b.version(),
                     **({"reason": why} if why else {})}
    return out
