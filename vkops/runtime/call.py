"""The NumPy face's plumbing, shared by every operator: one operator call from arrays or device
tensors to a recorded batch and back."""
from __future__ import annotations

import os
from typing import List, Optional, Sequence

import numpy as np

from ..dtypes import DataType
from ..errors import DeviceLimitError, DeviceMemoryError, ValidationError
from ..inputs import as_array, frozen_key
from ..plan import Plan
from ..tensor import TensorDesc
from .device import CONSTANT_BYTES, Device
from .execute import execute
from .memory import DeviceTensor, host_layout
from .recipe import capture, keep, replay, take
from .submit import Batch


_default = (None, None)  # ($VKOPS_DEVICE when looked up, Device()): NumPy-only calls find it without Device()


def _default_device() -> Device:
    global _default
    env = os.environ.get("VKOPS_DEVICE")
    if _default[1] is None or _default[0] != env:
        _default = (env, Device())
    return _default[1]


def eager(dev: Device, key: tuple, inputs: Sequence[DeviceTensor], outs: Sequence = (), op: str = "call"):
    """A repeated call on device tensors (`inputs`, `outs` the `out=` tensors or ()) outside a graph capture,
    whose complete plan key `key` an operator's own index gave it: what Call does for it (the plan from the
    device's cache, outputs allocated, recorded into the thread's open batch, or into a one-off submitted
    without waiting) without a Call. Returns its outputs, or None where Call must run it (a graph capture
    is open: it admits the call; the plan was evicted)."""
    stack = getattr(dev._local, "stack", None)
    outer = stack[-1] if stack else None
    if outer is not None and not outer._flushes:  # capturing a graph: Call admits the call (runtime/graph.py)
        return None
    plan = dev._plans.get(key)
    if plan is None:
        return None
    mem = dev._memory
    outputs = []
    batch = outer or Batch(dev, pending=False)
    try:
        for j, (desc, words) in enumerate(plan._outs):
            u = outs[j] if j < len(outs) else None
            outputs.append(DeviceTensor(mem.get(words), desc, dev) if u is None else
                           _checked_out(dev, desc, u, "out" if len(plan._outs) == 1 else f"out[{j}]"))
        execute(plan, batch, inputs, outputs)
    except BaseException as e:
        _named(e, op)
        if outer is None:  # an open batch stays the caller's (as Call._failed leaves it)
            batch._release()
        raise
    if outer is None:
        batch.run_async()
    return outputs


def _checked_out(dev: Device, desc: TensorDesc, out, field: str) -> DeviceTensor:
    if not isinstance(out, DeviceTensor) or out.device is not dev:
        raise ValidationError(f"{field} must be a DeviceTensor on {dev.name!r}; got {out!r}")
    if out.data_type != desc.data_type or out.shape != desc.sizes or not out.desc.is_packed:
        raise ValidationError(f"{field} must be a packed {desc.data_type.name} tensor of sizes {desc.sizes}; "
                              f"got {out.desc}")
    return out


def _named(exc, op) -> None:
    """Name the operator that failed in a device memory or limit error."""
    if isinstance(exc, (DeviceMemoryError, DeviceLimitError)) and op and exc.args \
            and not str(exc.args[0]).startswith("vkops."):
        exc.args = (f"vkops.{op}: {exc.args[0]}",) + exc.args[1:]


class Call:
    """One operator call from the NumPy face: finds the device, looks up the plan of an earlier call
    with the same key and input descriptors, stages NumPy inputs, runs the plan in the thread's
    current batch or a one-off one, and converts outputs back.

        with Call(x, key=("op",) + freeze(params)) as call:
            if call.plan is None:            # first call of this key: validate and plan (pure)
                call.plan = op.plan(desc, call.device.limits)
        return call.result()
    """

    __slots__ = ("device", "numpy_in", "_params", "_raw", "_outer", "batch", "_inputs", "_outputs", "_host",
                 "_key", "_op", "_user_outs", "plan", "replayed", "_known_key", "_recipe", "_prep")

    def __init__(self, *inputs, device: Optional[Device] = None, params: Sequence[int] = (), key=None,
                 outs: Sequence = (), names: Sequence[str] = (), input_key: Optional[tuple] = None):
        dev = device
        numpy_in = True
        every = True  # every input is a device tensor: nothing to convert
        for x in inputs:
            if x.__class__ is DeviceTensor:
                numpy_in = False
                if dev is None:
                    dev = x._device
                elif x._device is not dev:
                    raise ValidationError(f"inputs live on different devices: {dev.name!r} and {x.device.name!r}")
            else:
                every = False
        if dev is None:
            dev = _default_device()
        self.device = dev
        self.numpy_in = numpy_in
        self._params = params
        if not every:
            inputs = tuple([x if x.__class__ is DeviceTensor else as_array(x, i in params)
                            for i, x in enumerate(inputs)])
        self._raw = inputs
        stack = getattr(dev._local, "stack", None)  # Device._active_batch()
        outer = self._outer = stack[-1] if stack else None
        if outer is not None and not outer._flushes:  # capturing a graph (runtime/graph.py)
            outer.admit(key[0] if key else "call", inputs, names, params)
        self.batch = outer or Batch(dev, pending=False)  # a one-off: runs before the caller sees a tensor
        if outer is None and numpy_in:
            self.batch._keep_ops = []  # the same op objects call after call: its recording is kept
            self.batch._staged = []  # and its uploads listed: runtime/recipe.py keeps them
        self._inputs: Optional[List[DeviceTensor]] = inputs if every else None
        self._outputs: List[DeviceTensor] = []
        self._host: List[np.ndarray] = []
        self._key = key
        self._op = key[0] if key else None  # the operator's name, for errors
        self._user_outs = outs  # the `out=` tensors, in the order the operator makes its outputs
        self.plan: Optional[Plan] = None
        self.replayed = False  # True when the plan came from an earlier call
        # The complete key (`input_key` after an earlier call) when the operator knows that _input_key()
        # would compute it for these inputs (an index of its own earlier calls' keys, e.g. qlmm/face.py).
        self._known_key = input_key
        self._recipe = self._prep = None  # a repeat's recipe (runtime/recipe.py); the prepared recording run

    eager = staticmethod(eager)

    @staticmethod
    def eager_one(key: tuple, x, outs: Sequence = ()):
        """eager() for a one-input operator `key` (its name and frozen parameters) on the device tensor `x`
        with `out=` tensors `outs`: its complete key as _input_key() makes it. None: run it through Call."""
        if x.__class__ is not DeviceTensor:
            return None
        full = [key, x.desc, 0]
        first = {x._buffer.serial: 0}
        for i, o in enumerate(outs, 1):
            if o.__class__ is not DeviceTensor:
                return None
            full.append(o.desc)
            full.append(first.setdefault(o._buffer.serial, i))
        try:
            res = Call.eager(x._device, tuple(full), (x,), outs, key[0])
        except TypeError:  # an unhashable parameter: Call names it
            return None
        return None if res is None else res[0] if len(res) == 1 else tuple(res)

    @staticmethod
    def replay(key: tuple, x):
        """The results of a NumPy call of operator `key` (its name and frozen parameters, no `out=`) on the
        one input `x` from the recipe its earlier call left (runtime/recipe.py), or None: run it through Call."""
        if x.__class__ is not np.ndarray:
            return None
        return Call.recipe((key, frozen_key(x) or (x.dtype.str, x.shape, x.strides, None)), (x,))  # _input_key's

    @staticmethod
    def recipe(full: tuple, arrays: Sequence):
        """The results of a NumPy call whose complete key (`input_key`) is `full` on `arrays` (its inputs in
        order; those its recipe stages) from the recipe an earlier call left, or None: run it through Call."""
        dev = _default_device()
        if dev._async or getattr(dev._local, "stack", None):  # calls in flight, or an open batch or capture
            return None
        rec = take(dev, full)
        if rec is None:
            return None
        res = replay(dev, rec, arrays)
        if res is None:  # no longer live: dropped
            return None
        keep(dev, full, rec)
        return res[0] if len(res) == 1 else tuple(res)

    def __enter__(self) -> "Call":
        """With a `key` (the operator's name and parameters), a call whose key, input descriptors and
        `out=` tensors' descriptors match an earlier one's takes that call's plan."""
        if self._key is not None:
            try:
                self._key = self._input_key() if self._known_key is None else self._known_key
                if self.numpy_in and self._outer is None and not self.device._async:
                    self._recipe = take(self.device, self._key)
                    if self._recipe is not None:
                        self.plan, self.replayed = self._recipe.plan, True
                        return self
                self.plan = self.device._plans.get(self._key)
            except TypeError:  # an unhashable parameter: this call's plan is not kept
                self._key = None
            self.replayed = self.plan is not None
        return self

    @property
    def input_key(self) -> Optional[tuple]:
        """After `with`: the complete plan key (operator key, input and `out=` descriptors), or None
        when a parameter was unhashable (the plan is not kept)."""
        return self._key

    def _input_key(self) -> tuple:
        """The operator's key, then each input's and `out=` tensor's descriptor (a device tensor's, with
        the first position whose buffer it shares: which alias which) or key (NumPy), flat."""
        parts, first = [self._key], {}
        i = 0
        for seq in (self._raw, self._user_outs):
            for x in seq:
                if x.__class__ is DeviceTensor:
                    parts.append(x.desc)
                    parts.append(first.setdefault(x._buffer.serial, i))
                elif x is None:
                    parts.append(None)
                else:
                    k = frozen_key(x)
                    if k is None:
                        a = np.asarray(x)
                        small = i in self._params and a.nbytes <= CONSTANT_BYTES
                        k = (a.dtype.str, a.shape, a.strides, a.tobytes() if small else None)
                    parts.append(k)
                i += 1
        return tuple(parts)

    @property
    def descs(self) -> List[TensorDesc]:
        """The inputs' descriptors, for validation and planning before anything is staged."""
        out = []
        for i, x in enumerate(self._raw):
            if isinstance(x, DeviceTensor):
                out.append(x.desc)
            elif i in self._params:  # staged packed (kernels index parameters densely)
                out.append(TensorDesc(DataType.of(x, "input data_type"), x.shape or (1,), name="input"))
            else:  # as upload() stages it: a transposed or broadcast view keeps its strides
                out.append(host_layout(np.asarray(x))[1])
        return out

    @property
    def inputs(self) -> List[DeviceTensor]:
        """Device tensors of the inputs; NumPy inputs are staged and their upload recorded."""
        if self._inputs is None:
            self._inputs = [x if isinstance(x, DeviceTensor) else self._stage(i, np.asarray(x))
                            for i, x in enumerate(self._raw)]
        return self._inputs

    def _stage(self, i: int, x: np.ndarray) -> DeviceTensor:
        if i in self._params:
            if x.nbytes > CONSTANT_BYTES:
                return self.batch.upload(np.ascontiguousarray(x))
            t = self.device.constant(x, frozen_key(x))
            self.batch.hold(t)
            return t
        return self.batch.upload(x)

    def output(self, desc: TensorDesc, out: Optional[DeviceTensor] = None, field: str = "out") -> DeviceTensor:
        """A packed output: `out` when given (checked against `desc`), a batch temporary when it goes
        straight back to NumPy, else a new device tensor (from the caching allocator)."""
        if out is not None:
            t = self._checked_out(desc, out, field)
        elif self.numpy_in and self._outer is None:
            t = self.batch.scratch(desc)
        else:
            t = self.device.empty(desc)
        self._outputs.append(t)
        return t

    def _checked_out(self, desc: TensorDesc, out, field: str) -> DeviceTensor:
        return _checked_out(self.device, desc, out, field)

    def _run(self) -> None:
        plan = self.plan
        if plan is None:
            raise RuntimeError(f"vkops.{self._op}: the operator made no plan")
        if self._key is not None and not self.replayed:
            self.device._plans.put(self._key, plan)
        user = self._user_outs
        outputs = self._outputs
        if self.numpy_in and self._outer is None:  # straight back to NumPy: batch temporaries
            outs = plan.outputs
            for j, b in enumerate(outs):
                self.output(b.tensor, user[j] if j < len(user) else None, "out" if len(outs) == 1 else f"out[{j}]")
        else:
            mem, dev = self.device._memory, self.device
            for j, (desc, words) in enumerate(plan._outs):  # packed descriptors and words, made once per plan
                u = user[j] if j < len(user) else None
                if u is None:
                    outputs.append(DeviceTensor(mem.get(words), desc, dev))
                else:
                    outputs.append(self._checked_out(desc, u, "out" if len(plan._outs) == 1 else f"out[{j}]"))
        self._prep = execute(plan, self.batch, self.inputs, outputs)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and self._recipe is not None:
            try:
                self._host = replay(self.device, self._recipe, self._raw)
            except BaseException as e:
                self._failed(e)
                raise
            if self._host is not None:
                keep(self.device, self._key, self._recipe)
                return
            self._recipe = None  # no longer live: dropped, the call runs the general way
        if exc_type is None:
            try:
                self._run()
            except BaseException as e:
                self._failed(e)
                raise
        else:
            self._failed(exc)
            return
        if self._outer is not None:
            return
        if self.numpy_in:
            b = self.batch
            for t in self._outputs:
                b.download(t)
            refs = list(b._refs) if self._key is not None and self._prep is not None else None  # run() lets go
            b.run()
            self._host = [b.read(t) for t in self._outputs]
            if refs is not None:
                rec = capture(self, self._prep, refs)
                if rec is not None:
                    keep(self.device, self._key, rec)
            b._release()
        else:
            self.batch.run_async()  # device tensors: returns once submitted (Device.synchronize)

    def _failed(self, exc) -> None:
        _named(exc, self._op)
        if self._outer is None:
            self.batch._release()

    def result(self, *outs: DeviceTensor):
        """NumPy arrays when the call came in with NumPy outside a batch, else the device tensors
        (`outs`, or every output in the order they were made)."""
        if self.numpy_in and self._outer is None:
            res = [self._host[self._outputs.index(t)] for t in outs] if outs else self._host
            return res[0] if len(res) == 1 else tuple(res)
        res = outs or self._outputs
        return res[0] if len(res) == 1 else tuple(res)
