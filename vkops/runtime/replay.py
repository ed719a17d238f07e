"""Replaying a call: an operator call repeated with the same descriptors and parameters records the
same dispatches, so the first call's recording is kept by role and later calls skip validation and
planning (a descriptor that validated once validates again).

While an operator records, a `Recorder` stands in for the batch and notes each dispatch's kernel,
grid, push constants and specialization, and for each bound tensor its role: the call's i-th input,
j-th output or k-th scratch tensor (with the view's descriptor), or a device-owned tensor (shared
counters, cached constants) used as is. Anything else an operator does makes the call unrepeatable.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import List, Tuple

import numpy as np

from .memory import DeviceTensor

REPLAY_ENTRIES = 1024


@dataclass
class Recording:
    out_descs: List = field(default_factory=list)  # (desc, field name)
    scratch_descs: List = field(default_factory=list)
    steps: List[Tuple] = field(default_factory=list)  # ("dispatch", ...) / ("hold", tensor)


def freeze(*values) -> tuple:
    """A memo key from an operator's parameters, exact about types (so `k=True` never finds `k=1`'s
    recording and skips the check that rejects it); lists become tuples. Raises TypeError for
    values that cannot be keys."""
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.append((type(v).__name__, freeze(*v)))
        elif isinstance(v, np.ndarray):
            out.append(("ndarray", v.dtype.str, v.shape, v.tobytes()))
        else:
            hash(v)
            out.append((type(v).__name__, v))
    return tuple(out)


class Recorder:
    """A batch stand-in for the first call of a key: forwards to the batch and notes what it records."""

    def __init__(self, batch, call):
        self._batch, self._call = batch, call
        self.device = batch.device
        self.rec = Recording()
        self.ok = True

    def scratch(self, desc):
        t = self._batch.scratch(desc)
        self.rec.scratch_descs.append((t._buffer, t.desc))
        return t

    def hold(self, tensor):
        self._batch.hold(tensor)
        if not self.device._is_owned(tensor):
            self.ok = False
        self.rec.steps.append(("hold", tensor))

    def dispatch(self, kernel, tensors, writes, groups, push, spec=()):
        push = np.ascontiguousarray(push, dtype=np.uint32).copy()
        roles = [self._role(t) for t in tensors]
        self.rec.steps.append(("dispatch", kernel, roles, tuple(writes), tuple(groups), push, tuple(spec)))
        self._batch.dispatch(kernel, tensors, writes, groups, push, spec)

    def _role(self, t: DeviceTensor):
        buf = t._buffer
        for i, x in enumerate(self._call._inputs or ()):
            if x._buffer is buf:
                return ("in", i, t.desc)
        for j, o in enumerate(self._call._outputs):
            if o._buffer is buf:
                return ("out", j, t.desc)
        for k, (b, _) in enumerate(self.rec.scratch_descs):
            if b is buf:
                return ("scratch", k, t.desc)
        if not self.device._is_owned(t):
            self.ok = False
        return ("fixed", t)

    def __getattr__(self, name):
        # upload, copy, ...: not kept by role, so this call is recorded but not memoized
        self.ok = False
        return getattr(self._batch, name)

    def finish(self) -> Recording:
        self.rec.out_descs = list(zip([o.desc for o in self._call._outputs], self._call._out_fields))
        self.rec.scratch_descs = [d for _, d in self.rec.scratch_descs]
        return self.rec


def replay(rec: Recording, call) -> None:
    """Record `rec`'s dispatches into the call's batch with the call's own tensors."""
    batch, dev = call.batch, call.device
    ins = call.inputs
    user = call._user_outs
    outs = [call.output(d, user[j] if j < len(user) else None, f) for j, (d, f) in enumerate(rec.out_descs)]
    scratch = [batch.scratch(d) for d in rec.scratch_descs]
    pools = {"in": ins, "out": outs, "scratch": scratch}

    def resolve(role):
        if role[0] == "fixed":
            return role[1]
        t = pools[role[0]][role[1]]
        return t if t.desc == role[2] else DeviceTensor(t._buffer, role[2], dev)

    for step in rec.steps:
        if step[0] == "hold":
            batch.hold(step[1])
            continue
        _, kernel, roles, writes, groups, push, spec = step
        batch.dispatch(kernel, [resolve(r) for r in roles], writes, groups, push, spec)


class Replays:
    """The recordings of one device, LRU by key."""

    def __init__(self, lock):
        self._lock = lock
        self._entries: "collections.OrderedDict[tuple, Recording]" = collections.OrderedDict()
        self.hits = 0
        self.stored = 0

    def get(self, key):
        with self._lock:
            rec = self._entries.get(key)
            if rec is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return rec

    def put(self, key, rec: Recording):
        with self._lock:
            self._entries[key] = rec
            self.stored += 1
            if len(self._entries) > REPLAY_ENTRIES:
                self._entries.popitem(last=False)
