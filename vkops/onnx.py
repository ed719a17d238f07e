"""vkops.onnx: an ONNX backend (`onnx.backend.base.Backend`) for graphs of TopK, Slice and QLinearMatMul.

    import vkops.onnx
    outputs = vkops.onnx.prepare(model).run([x, k])     # NumPy in, NumPy out (ONNX dtypes kept)

Nodes run in the graph's order (onnx.checker requires it topological) through vkops' NumPy face
(vkops.top_k, vkops.slice, vkops.quantized_linear_matmul) on vkops' default Vulkan device, plus
Identity and Constant. ONNX types vkops lacks are converted where every value fits exactly
(int64 -> int32, uint64 -> uint32, bool -> uint8) and converted back on the way out; anything else
raises a ValidationError naming op, input and values. Other op types raise NotImplementedError.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
    from onnx.backend.base import Backend, BackendRep, namedtupledict
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("vkops.onnx needs the onnx package: pip install onnx") from e

import vkops
from vkops import ValidationError

SUPPORTED = tuple(np.dtype(t) for t in ("float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8"))
# ONNX types vkops lacks -> the type that holds every value exactly when it is in range.
NARROW = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
          np.dtype(np.bool_): np.dtype(np.uint8)}
__all__ = ["VkopsBackend", "VkopsRep", "prepare", "run_model", "run_node", "supports_device"]

_SUPPORTED_TEXT = ", ".join(t.name for t in SUPPORTED) + "; int64/uint64/bool where values fit 32/8 bits"


# ---------------------------------------------------------------------------------------------- #
# dtype conversion
# ---------------------------------------------------------------------------------------------- #
def to_vkops(x: np.ndarray, op: str, field: str) -> np.ndarray:
    """`x` in a dtype vkops has: unchanged, or narrowed exactly (int64 -> int32 ...), else an error."""
    x = np.asarray(x)
    if x.dtype in SUPPORTED:
        return x
    if x.dtype not in NARROW:
        raise ValidationError(f"vkops.onnx: {op} input {field} has dtype {x.dtype}, which vkops does not support "
                              f"(supported: {_SUPPORTED_TEXT})")
    to = NARROW[x.dtype]
    if x.dtype != np.bool_ and x.size:
        info = np.iinfo(to)
        lo, hi = x.min(), x.max()
        if lo < info.min or hi > info.max:
            raise ValidationError(f"vkops.onnx: {op} input {field} has dtype {x.dtype} with values in [{lo}, {hi}]; "
                                  f"vkops has no 64-bit types and runs it as {to} only when every value lies in "
                                  f"[{info.min}, {info.max}]")
    return x.astype(to)


def ints(x, op: str, field: str) -> List[int]:
    """A 1-D (or 0-d) integer parameter tensor (K, starts, axes ...) as Python ints (no overflow)."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu" or a.ndim > 1:
        raise ValidationError(f"vkops.onnx: {op} input {field} must be a 1-D integer tensor; got {a.dtype} "
                              f"of shape {a.shape}")
    return [int(v) for v in a.reshape(-1)]


def _axis(axis: int, rank: int, op: str, field: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ValidationError(f"vkops.onnx: {op} {field} must be in [{-rank}, {rank - 1}] for rank {rank}; got {axis}")
    return axis % rank


# ---------------------------------------------------------------------------------------------- #
# operators: fn(label naming the node, attributes, *inputs (None where omitted)) -> list of outputs
# ---------------------------------------------------------------------------------------------- #
def top_k(op: str, attrs: Dict[str, Any], x, k_in=None) -> list:
    x = np.asarray(x)
    if "k" in attrs:  # opset 1: attribute; opset 10+: a 1-element int64 input
        k = int(attrs["k"])
    elif k_in is not None:
        kk = ints(k_in, op, "K")
        if len(kk) != 1:
            raise ValidationError(f"vkops.onnx: {op} input K must hold exactly one value; got {kk}")
        k = kk[0]
    else:
        raise ValidationError(f"vkops.onnx: {op} needs K (the input from opset 10, the attribute before)")
    if x.ndim == 0:
        raise ValidationError(f"vkops.onnx: {op} input X must have at least 1 dimension; got a scalar")
    axis = _axis(int(attrs.get("axis", -1)), x.ndim, op)
    if not 0 <= k <= x.shape[axis]:
        raise ValidationError(f"vkops.onnx: {op} K must be in [0, {x.shape[axis]}] (the size of axis {axis} of "
                              f"X {x.shape}); got {k}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    if k == 0 or x.size == 0:  # DML needs K >= 1 and non-empty tensors: the empty answer is known on the host
        return [np.empty(shape, x.dtype), np.empty(shape, np.int64)]
    xv = to_vkops(x, op, "X")
    # largest=0 -> ascending; sorted=0 leaves the order undefined, so the sorted result is valid too.
    direction = "decreasing" if int(attrs.get("largest", 1)) else "increasing"
    values, indices = vkops.top_k(xv, k, axis, direction)
    return [values.astype(x.dtype, copy=False), indices.astype(np.int64)]


def slice_window(starts, ends, axes, steps, shape, op: str):
    """ONNX Slice (opset 13 clamping rules) -> DML window (offsets, sizes, strides) and output shape."""
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValidationError(f"vkops.onnx: {op} starts, ends, axes and steps must have equal lengths; got "
                              f"{len(starts)}, {len(ends)}, {len(axes)}, {len(steps)}")
    offsets, sizes, strides = [0] * rank, list(shape), [1] * rank
    out = list(shape)
    seen = set()
    for start, end, ax, step in zip(starts, ends, axes, steps):
        a = _axis(ax, rank, op, "axes value")
        if a in seen:
            raise ValidationError(f"vkops.onnx: {op} axes must not repeat; axis {a} appears twice in {axes}")
        seen.add(a)
        if step == 0:
            raise ValidationError(f"vkops.onnx: {op} steps must not be 0; got {steps} (axis {a})")
        dim = shape[a]
        start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
            n = max(0, -(-(end - start) // step))
            offsets[a], sizes[a] = start, end - start
        else:  # DML starts a negative stride at the window's end: the window is [end + 1, start]
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            n = max(0, -(-(start - end) // -step))
            offsets[a], sizes[a] = end + 1, start - end
        strides[a], out[a] = step, n
    return offsets, sizes, strides, tuple(out)


def slice_(op: str, attrs: Dict[str, Any], x, starts=None, ends=None, axes=None, steps=None) -> list:
    x = np.asarray(x)
    if "starts" in attrs:  # opset 1: attributes, no steps
        starts, ends, axes = attrs["starts"], attrs["ends"], attrs.get("axes")
    elif starts is None or ends is None:
        raise ValidationError(f"vkops.onnx: {op} needs starts and ends (inputs from opset 10, attributes before)")
    else:
        starts, ends = ints(starts, op, "starts"), ints(ends, op, "ends")
        axes = None if axes is None else ints(axes, op, "axes")
        steps = None if steps is None else ints(steps, op, "steps")
    if x.ndim == 0:
        raise ValidationError(f"vkops.onnx: {op} input data must have at least 1 dimension; got a scalar")
    offsets, sizes, strides, shape = slice_window(list(starts), list(ends), axes, steps, x.shape, op)
    if 0 in shape:  # DML windows hold >= 1 element: an empty result never reaches the device
        return [np.empty(shape, x.dtype)]
    y = vkops.slice(to_vkops(x, op, "data"), offsets, sizes, strides, shape)
    return [y.astype(x.dtype, copy=False)]


def _quant(x, op: str, field: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise ValidationError(f"vkops.onnx: {op} input {field} must be int8 or uint8 for vkops; got {x.dtype}")
    return x


def _scale(x, op: str, field: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float16)):
        raise ValidationError(f"vkops.onnx: {op} input {field} must be float32 or float16 for vkops; got {x.dtype}")
    return x.astype(np.float32)  # float16 -> float32 is exact


def _per_axis(p, field: str, op: str, batch: tuple, n: int, row: bool):
    """An ONNX scale / zero point as (batch-independent 1-D or scalar, or None) and as a full array of
    shape batch + (n, 1) (row) or batch + (1, n) (column), for the per-batch fallback."""
    if p is None:
        return None, None
    tail = (n, 1) if row else (1, n)
    shape, flat = p.shape, None
    if p.size == 1:
        flat = p = p.reshape(())
    elif p.ndim == 1 and p.size == n:
        flat, p = p, p.reshape(tail)
    elif p.ndim >= 2 and p.shape[-2:] == tail:
        flat = p.reshape(n) if p.size == n else None  # batch dims all 1 -> one vector for every batch
    try:
        if p.ndim == 1:
            raise ValueError
        return flat, np.broadcast_to(p, batch + tail)
    except ValueError:
        raise ValidationError(f"vkops.onnx: {op} input {field} must be a scalar, a {n}-element vector or shaped "
                              f"(..., {tail[0]}, {tail[1]}) with batch dimensions broadcasting to {batch} "
                              f"({'per row' if row else 'per column'}); got {shape}") from None


def qlinear_matmul(op: str, attrs: Dict[str, Any], a, sa, za, b, sb, zb, sy, zy) -> list:
    a, b = _quant(a, op, "a"), _quant(b, op, "b")
    za, zb = (None if z is None else _quant(z, op, f) for z, f in ((za, "a_zero_point"), (zb, "b_zero_point")))
    zy = None if zy is None else _quant(zy, op, "y_zero_point")
    sa, sb, sy = (_scale(s, op, f) for s, f in ((sa, "a_scale"), (sb, "b_scale"), (sy, "y_scale")))
    out_dt = zy.dtype if zy is not None else a.dtype
    # numpy.matmul's 1-D rules: a vector a is a row, a vector b a column, and that axis is dropped after.
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    (M, K), N = a2.shape[-2:], b2.shape[-1]
    if b2.shape[-2] != K:
        raise ValidationError(f"vkops.onnx: {op} needs a's last dimension to equal b's second-to-last; got a "
                              f"{a.shape} and b {b.shape}")
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValidationError(f"vkops.onnx: {op} batch dimensions of a {a.shape} and b {b.shape} do not "
                              f"broadcast") from None
    params = [_per_axis(p, f, op, batch, n, row) for p, f, n, row in (
        (sa, "a_scale", M, True), (za, "a_zero_point", M, True), (sb, "b_scale", N, False),
        (zb, "b_zero_point", N, False), (sy, "y_scale", M, True), (zy, "y_zero_point", M, True))]
    shape = batch + (M, N)
    if 0 in shape:
        y = np.empty(shape, out_dt)
    elif K == 0:  # an empty sum: every output is its zero point (not a DML shape, so done here)
        y = np.broadcast_to(np.zeros((), out_dt) if zy is None else params[5][1], shape).astype(out_dt)
    else:
        y = _qlmm_batched(a2, b2, batch, params, out_dt)
    if a.ndim == 1:
        y = y[..., 0, :]
    if b.ndim == 1:
        y = y[..., 0]
    return [np.ascontiguousarray(y)]


def _qlmm_batched(a, b, batch, params, out_dt):
    """One vkops call with the batch flattened to 3-D where every scale / zero point is the same for
    every batch; else one 2-D call per batch element (per-batch parameters are not a DML shape)."""
    (M, K), N = a.shape[-2:], b.shape[-1]
    nb = int(np.prod(batch, dtype=np.int64))
    a3 = np.broadcast_to(a, batch + (M, K)).reshape(nb, M, K)
    b3 = np.broadcast_to(b, batch + (K, N)).reshape(nb, K, N)
    if all(full is None or flat is not None for flat, full in params):
        flat = [f for f, _ in params]
        y = vkops.quantized_linear_matmul(a3, flat[0], flat[1], b3, flat[2], flat[3], flat[4], flat[5], out_dt)
        return y.reshape(batch + (M, N))
    full = [None if f is None else f.reshape(nb, *f.shape[-2:]) for _, f in params]
    ys = []
    for i in range(nb):
        p = [None if f is None else (f[i].reshape(-1) if f[i].size > 1 else f[i].reshape(())) for f in full]
        ys.append(vkops.quantized_linear_matmul(a3[i], p[0], p[1], b3[i], p[2], p[3], p[4], p[5], out_dt))
    return np.stack(ys).reshape(batch + (M, N))


def constant(op: str, attrs: Dict[str, Any]) -> list:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in attrs:
            v = attrs[key]
            if key == "value":
                return [v]
            return [np.array(v, np.float32 if "float" in key else np.int64)]
    raise NotImplementedError(f"vkops.onnx: {op} supports the value, value_float(s) and value_int(s) attributes; "
                              f"got {sorted(attrs)}")


OPS = {"TopK": top_k, "Slice": slice_, "QLinearMatMul": qlinear_matmul,
       "Identity": lambda op, attrs, x: [np.asarray(x)], "Constant": constant}


# ---------------------------------------------------------------------------------------------- #
# graph execution
# ---------------------------------------------------------------------------------------------- #
def _attrs(node) -> Dict[str, Any]:
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        out[a.name] = numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
    return out


def _label(node) -> str:
    return f"{node.op_type} (node {node.name!r})" if node.name else node.op_type


def run_nodes(nodes, values: Dict[str, Any]) -> Dict[str, Any]:
    """Run `nodes` (topologically sorted: onnx.checker requires it) on `values` (name -> array),
    adding their outputs."""
    for node in nodes:
        if node.domain not in ("", "ai.onnx"):
            raise NotImplementedError(f"vkops.onnx: {_label(node)} is in domain {node.domain!r}; vkops runs only "
                                      f"the default ONNX domain's {', '.join(OPS)}")
        fn = OPS.get(node.op_type)
        if fn is None:
            raise NotImplementedError(f"vkops.onnx: op type {node.op_type!r} (node {node.name!r}) is not supported; "
                                      f"vkops runs {', '.join(OPS)}")
        missing = [i for i in node.input if i and i not in values]
        if missing:
            raise ValidationError(f"vkops.onnx: {_label(node)} reads {missing}, which no input, initializer or "
                                  f"earlier node provides")
        args = [values[i] if i else None for i in node.input]  # '' = an omitted optional input
        outs = fn(_label(node), _attrs(node), *args)
        values.update((name, y) for name, y in zip(node.output, outs) if name)
    return values


class VkopsRep(BackendRep):
    """A prepared model: initializers converted once; run() executes the graph."""

    def __init__(self, model: onnx.ModelProto):
        g = model.graph
        self.graph = g
        self.initializers = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.input_names = [i.name for i in g.input if i.name not in self.initializers]
        self.output_names = [o.name for o in g.output]

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        """Run the graph on `inputs` (a list in the graph's input order, one array, or a dict by name) and
        return the outputs as a named tuple of NumPy arrays (ONNX dtypes kept). Raises ValidationError
        for inputs vkops cannot take, NotImplementedError for op types it does not implement."""
        values = dict(self.initializers)
        if isinstance(inputs, dict):
            values.update(inputs)
        else:
            inputs = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            names = self.input_names if len(inputs) == len(self.input_names) else [i.name for i in self.graph.input]
            if len(inputs) != len(names):
                raise ValidationError(f"vkops.onnx: the model takes {len(self.input_names)} inputs "
                                      f"{self.input_names}; got {len(inputs)}")
            values.update(zip(names, inputs))
        values = run_nodes(list(self.graph.node), {k: np.asarray(v) for k, v in values.items()})
        return namedtupledict("Outputs", self.output_names)(*(np.asarray(values[n]) for n in self.output_names))


class VkopsBackend(Backend):
    """Inputs and outputs are host NumPy arrays ('CPU' in ONNX's terms); the kernels run on vkops'
    default Vulkan device ($VKOPS_DEVICE, else 0)."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> VkopsRep:
        """Check `model` with onnx.checker and read its initializers once; returns a VkopsRep to run."""
        super().prepare(model, device, **kwargs)  # onnx.checker.check_model
        return VkopsRep(model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        """prepare(model).run(inputs): the outputs as a named tuple of NumPy arrays."""
        return super().run_model(model, inputs, device, **kwargs)

    @classmethod
    def run_node(cls, node, inputs, device: str = "CPU", outputs_info=None, **kwargs: Any) -> tuple:
        """Run one node on `inputs` (NumPy arrays in the node's input order); returns its outputs."""
        super().run_node(node, inputs, device=device, outputs_info=outputs_info, **kwargs)
        values = run_nodes([node], {n: np.asarray(x) for n, x in zip(node.input, inputs) if n})
        return namedtupledict("Outputs", list(node.output))(*(values[o] for o in node.output))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for "CPU": inputs and outputs are host arrays (the kernels run on a Vulkan device)."""
        return onnx.backend.base.Device(device).type == onnx.backend.base.DeviceType.CPU


prepare = VkopsBackend.prepare
run_model = VkopsBackend.run_model
run_node = VkopsBackend.run_node
supports_device = VkopsBackend.supports_device
