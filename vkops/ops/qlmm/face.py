"""QUANTIZED_LINEAR_MATRIX_MULTIPLY's NumPy face: arrays or device tensors in, the call planned once per
key (lowering.py) and recorded; its argument normalisation is args.py. A repeated call on device tensors
(scalars, device tensors or None for the parameters) skips the normalisation through a per-device index of
what its first call normalised (see _remember); a repeated NumPy call through a process-wide one to its plan
key, under which the runtime keeps the call's recipe (see _NUMPY)."""
from __future__ import annotations

import functools
from typing import Optional, Tuple

import numpy as np

from ...dtypes import DataType
from ...errors import ValidationError
from ...inputs import frozen_key, is_python
from ...tensor import TensorDesc
from .. import face_runtime
from . import coopmat as cm
from .desc import QuantizedLinearMatMulDesc
from .lowering import plan
from . import args as _args
from .args import _SCALAR_TYPES, is_dev, pad4, param, quant_dtype
from .tuning import DEFAULT, QlmmTuning


_INT8S = (np.dtype(np.int8), np.dtype(np.uint8))
_NAMES = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point")


@functools.lru_cache(maxsize=256)
def _out_desc(dt: np.dtype, sizes: Tuple[int, ...]) -> TensorDesc:
    return TensorDesc(dt, sizes, name="QuantizedLinearMatMulDesc.output")


def quantized_linear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                            output_dtype=None, *, out=None, kernel: str = "auto", tuning: Optional[QlmmTuning] = None):
    """DML QUANTIZED_LINEAR_MATRIX_MULTIPLY (ONNX QLinearMatMul) on NumPy arrays or device tensors:
    out = saturate(round_half_to_even(sum_k (a - a_zero_point)(b - b_zero_point) * a_scale * b_scale
    / output_scale) + output_zero_point), the sum exact in int32.

    a: {..., M, K} and b: {..., K, N}, 2 to 4 dimensions each, INT8 or UINT8 (any combination) NumPy
        arrays or DeviceTensors (a Python list is refused: it does not say INT8 or UINT8). Leading
        (batch) dimensions broadcast where one side has 1; 1 <= K <= 33025 (int32 stays exact).
    a_scale, output_scale: FLOAT32, per tensor (a Python float, 0-d or one element) or per row (length
        M, or DML's {1,1,M,1}); b_scale: per tensor or per column (length N, or {1,1,1,N}). Finite and > 0.
    a_zero_point, b_zero_point, output_zero_point: None (zero), or shaped like the matching scale, of
        the dtype of a, b and the output (Python ints take that dtype, range-checked).
    output_dtype: INT8 or UINT8 when output_zero_point does not fix it; default: a's dtype.
    out: optional packed DeviceTensor of the output's dtype and element count to write into.
    kernel: "auto" (one row against a row-major B, or two against one of 20 MiB or more: the
        matrix-vector kernel, bound by reading B, "gemv"; where the device's cooperative matrices passed
        their self-check: up to 16 rows B streamed through them, "stream"; more rows the tiled
        cooperative-matrix kernel; else packed integer dot products for up to 32 rows where the device has
        them; else the portable kernel), "portable", "coopmat", "stream", "dot" or "gemv" (up to 2 rows).
    tuning: the planning knobs (vkops.ops.qlmm.QlmmTuning; None: its DEFAULT), part of the plan key.

    Returns the int8/uint8 result {..., M, N} with the larger operand's rank: a NumPy array for NumPy
    inputs, a DeviceTensor for device tensors. When b and every parameter are shared across a's
    leading dimensions, those are folded into M and computed as one GEMM.

    Raises ValidationError (a ValueError) naming the field for wrong dtypes, shapes, non-positive or
    non-finite scales, out-of-range zero points; DeviceLimitError for K > 33025 or beyond the device's
    limits; nothing is dispatched then.
    """
    Call, freeze = face_runtime()
    fast = None
    if _args._DEVICE_TENSOR is None:
        is_dev(a)  # imports DeviceTensor (once)
    if a.__class__ is _args._DEVICE_TENSOR and kernel.__class__ is str and \
            (tuning is None or tuning.__class__ is QlmmTuning):
        fast = _fast_key(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point, out,
                         output_dtype, kernel, tuning)
    if fast is not None:
        index = a._device._faces.get("qlmm")
        try:
            hit = None if index is None else index.get(fast)
        except TypeError:  # an unhashable output_dtype: the normalisation names it
            hit = fast = None
        if hit is not None and not CHECK_FAST:
            recipe, names, params, key, input_key, out_desc, out_sizes, known, shaped = hit
            args8 = (a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point)
            ins = []  # the present inputs, in order
            for x, (k, r) in zip(args8, recipe):
                if k == 3:
                    ins.append(x)
                elif k == 2:  # a view of x: x.as_strided(*r) (r is its view key), found in x's views inline
                    v = x._views
                    v = None if v is None else v.get(r)
                    ins.append(x.as_strided(r[0], r[1]) if v is None else v)
                elif k == 1:
                    ins.append(r)
            if out_sizes is not None:  # out.reshape(sizes) as the first call's made it: the same view
                out = out.as_strided(out_sizes, None)
            res = Call.eager(a._device, input_key, ins, () if out is None else (out,), "qlmm")
            if res is None:  # in a graph capture, or the plan was evicted
                raw = [r if k == 1 else None if k == 0 else x.as_strided(r[0], r[1]) if k == 2 else x
                       for x, (k, r) in zip(args8, recipe)]
                res = [_call(Call, raw, names, params, key, out, out_desc, known, kernel, tuning, input_key).result()]
            res = res[0]
            # the result's reshape(shape) as the first call's made it: its packed descriptor over this buffer
            return res if shaped is None else res.__class__(res._buffer, shaped, res._device)
    nk = None
    if a.__class__ is np.ndarray and out is None and kernel.__class__ is str and \
            (tuning is None or tuning.__class__ is QlmmTuning):
        nk = _numpy_key(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                        output_dtype, kernel, tuning)
        try:
            hit = None if nk is None else _NUMPY.get(nk)
        except TypeError:  # an unhashable output_dtype: the normalisation names it
            hit = nk = None
        if hit is not None:
            res = Call.recipe(hit[0], (a,) + (None,) * (hit[1] - 1) + (b,))  # a and b: the inputs it stages
            if res is not None:
                return res.reshape(hit[2])
    n = _normalise(freeze, a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                   output_dtype, out, kernel, tuning)
    raw, names, params, key, out_n, out_desc, known, shape = n
    call = _call(Call, raw, names, params, key, out_n, out_desc, known, kernel, tuning, None)
    res = call.result().reshape(shape)
    if nk is not None and call.input_key is not None:
        if len(_NUMPY) >= _FAST_ENTRIES:
            _NUMPY.clear()
        _NUMPY[nk] = (call.input_key, sum(x is not None for x in raw[:3]), shape)  # b's position among inputs
    if fast is not None:
        _remember(a._device, fast, n, call, res, hit,
                  (a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point), out)
    return res


# A repeated call on device tensors skips the normalisation below: an index per device from the
# arguments (device tensors' descriptors and buffer serials, scalars' types and values, output_dtype,
# kernel, tuning) to what its first call normalised them to and the plan key it computed; that key is
# then looked up in the plan cache as any call's is. Every check of the normalisation and of desc.validate()
# depends only on what the index key holds, so a hit would have passed them; Call's own checks (devices,
# `out=`) and everything after the key run on both paths. Cleared when full.
_FAST_ENTRIES = 512
CHECK_FAST = False  # tests: a hit also normalises and asserts the index held exactly that (and its key)


# A repeated NumPy call (C-order a and b, scalars or None for the parameters, no `out=`) skips the normalisation
# too: an index (process-wide: plan keys are device-independent) from the arguments' layouts, scalars' types
# and values, output_dtype, kernel and tuning to the plan key its first call computed, under which Call keeps
# the call's recipe (runtime/recipe.py); the scalars are staged as the device's constants, so a and b are
# what it copies. The same argument for skipping the checks as for _FAST_ENTRIES' index. Cleared when full.
_NUMPY: dict = {}


def _numpy_key(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point, output_dtype,
               kernel, tuning):
    """The NumPy index key of a call's arguments, or None (normalised every call)."""
    if b.__class__ is not np.ndarray or not a.flags.c_contiguous or not b.flags.c_contiguous:
        return None
    k = ("numpy", kernel, tuning, output_dtype.__class__, output_dtype, a.dtype.str, a.shape, b.dtype.str, b.shape)
    return _args_key(k, (a_scale, a_zero_point, b_scale, b_zero_point, output_scale, output_zero_point), None)


def _args_key(k: tuple, args, DT) -> Optional[tuple]:
    """`k` extended by each argument: a device tensor (of class DT) its descriptor and buffer serial, None, a
    scalar of _SCALAR_TYPES its type and value; None where one is anything else."""
    parts = list(k)  # appended, then one tuple: no tuple made per argument
    ap = parts.append
    for x in args:
        c = x.__class__
        if c is DT:
            ap(x.desc)
            ap(x._buffer.serial)
        elif x is None:
            ap(None)
        elif c in _SCALAR_TYPES:
            ap(c)
            ap(x)
        else:
            return None
    return tuple(parts)


def _fast_key(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point, out,
              output_dtype, kernel, tuning):
    """The index key of a call's arguments, or None where an argument is not a device tensor, None or a
    scalar of _SCALAR_TYPES (NumPy arrays, lists: normalised every call). Flat: a descriptor is followed
    by its buffer's serial, a scalar's type by its value."""
    return _args_key((kernel, tuning, output_dtype.__class__, output_dtype),
                     (a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point, out),
                     _args._DEVICE_TENSOR)


def _remember(dev, fast, n, call, res, hit, args8, out) -> None:
    """Index `fast` to the slow path's results `n` and `call` (its views as layouts of the arguments, to be
    taken again from the next call's own tensors; the device constants its scalars were staged to) and
    its plan key."""
    raw, names, params, key, out_n, out_desc, known, shape = n
    input_key, staged = call.input_key, call.inputs
    recipe = []
    j = 0
    for x, r in zip(args8, raw):
        if r is None:
            recipe.append((0, None))
            continue
        if r.__class__ is np.ndarray:
            t = staged[j]
            if frozen_key(r) is None or not dev._is_owned(t):  # not one of param()'s kept scalars: no index
                return
            recipe.append((1, t))  # the device's shared, never written copy of the scalar
        elif r is x:
            recipe.append((3, None))
        else:
            recipe.append((2, (r.desc.sizes, r.desc.strides)))
        j += 1
    if res.__class__ is not _args._DEVICE_TENSOR or not res.desc.is_packed:
        return
    entry = (tuple(recipe), names, params, key, input_key, out_desc, None if out_n is out else out_n.desc.sizes, known,
             None if res is call.result() else res.desc)
    if hit is not None:  # CHECK_FAST: the index held exactly what the normalisation found
        same = len(hit[0]) == len(entry[0]) and all(
            x[0] == y[0] and (x[1] is y[1] if x[0] == 1 else x[1] == y[1]) for x, y in zip(hit[0], entry[0]))
        same = same and hit[1:7] == entry[1:7] and hit[8] == entry[8] and all(
            (x is None and y is None) or (x is not None and y is not None and x.dtype == y.dtype
                                          and np.array_equal(x, y)) for x, y in zip(hit[7], entry[7]))
        if not same:
            raise AssertionError(f"quantized_linear_matmul's index held {hit!r}; the normalisation found {entry!r}")
        return
    if input_key is None:  # an unhashable parameter: no plan kept either
        return
    index = dev._faces.get("qlmm")
    if index is None or len(index) >= _FAST_ENTRIES:
        index = dev._faces["qlmm"] = {}
    try:
        index[fast] = entry
    except TypeError:  # an unhashable argument the normalisation accepted: normalised every call
        pass


def _normalise(freeze, a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
               output_dtype, out, kernel, tuning):
    """The arguments checked and in DML's shapes: (raw: the eight inputs, None where absent; names, params
    and key for Call; out reshaped; the output's descriptor; host-known zero points; the result's shape)."""
    tuning = DEFAULT if tuning is None else tuning
    if type(tuning) is not QlmmTuning:
        raise ValidationError(f"quantized_linear_matmul: tuning must be a QlmmTuning or None; got {tuning!r:.80}")
    a4, a_nd = pad4(a, "a")
    b4, b_nd = pad4(b, "b")
    M, N = a4.shape[2], b4.shape[3]
    a_dt, b_dt = quant_dtype(a4, "a"), quant_dtype(b4, "b")
    if output_zero_point is not None and not is_python(output_zero_point):
        out_dt = np.dtype(output_zero_point.dtype if is_dev(output_zero_point) else np.asarray(output_zero_point).dtype)
    else:
        out_dt = DataType.of(output_dtype, "quantized_linear_matmul output_dtype").np if output_dtype is not None else a_dt
    if out_dt not in _INT8S:
        raise ValidationError(f"QuantizedLinearMatMulDesc.output.data_type must be INT8 or UINT8; got {out_dt}")
    sa = param(a_scale, "a_scale", "row", M, None)
    sb = param(b_scale, "b_scale", "column", N, None)
    so = param(output_scale, "output_scale", "row", M, None)
    za = param(a_zero_point, "a_zero_point", "row", M, a_dt)
    zb = param(b_zero_point, "b_zero_point", "column", N, b_dt)
    zo = param(output_zero_point, "output_zero_point", "row", M, out_dt)
    rank = max(a_nd, b_nd)

    raw = [a4, sa, za, b4, sb, zb, so, zo]
    names = [n for n, x in zip(_NAMES, raw) if x is not None]
    present = [x for x in raw if x is not None]
    params = [i for i, x in enumerate(present) if x is not a4 and x is not b4]
    sa4, sb4 = a4.shape, b4.shape
    batch_sizes = (max(sa4[0], sb4[0]), max(sa4[1], sb4[1]))
    # Host-known zero points steer the kernel choice, so their values are part of the key.
    known = (None if za is None or is_dev(za) else np.asarray(za), None if zb is None or is_dev(zb) else np.asarray(zb))
    out_desc = _out_desc(out_dt, batch_sizes + (M, N))
    if out is not None:
        if not is_dev(out) or out.desc.element_count != out_desc.element_count:
            raise ValidationError(f"out must be a packed {out_dt} DeviceTensor of {out_desc.element_count} "
                                  f"elements; got {out!r}")
        out = out.reshape(out_desc.sizes) if out.desc.is_packed else out
    key = ("qlmm", output_dtype is None, out_dt.str, freeze(kernel), (za is None, zb is None, zo is None),
           tuning)
    if known[0] is not None or known[1] is not None:
        key += freeze(*(k for k in known if k is not None))
    shape = (batch_sizes + (M, N))[4 - rank:]
    return raw, names, params, key, out, out_desc, known, shape


def _call(Call, raw, names, params, key, out, out_desc, known, kernel, tuning, input_key):
    """The call: its plan from the plan cache, else validated and planned; recorded."""
    present = [x for x in raw if x is not None]
    with Call(*present, params=params, key=key, outs=(out,), names=names, input_key=input_key) as call:
        if call.plan is None:
            descs = iter(call.descs)
            d = [None if x is None else next(descs) for x in raw]
            desc = QuantizedLinearMatMulDesc(*d[:8], out_desc).validate()
            call.plan = plan(desc, cm.device_limits(call.device), kernel=kernel, zero_points=known,
                             tuning=DEFAULT if tuning is None else tuning)
    return call
