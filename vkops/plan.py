"""Plans: what an operator call runs, as data. Pure Python: no device, no kp.

An operator's `plan(desc, limits)` returns a `Plan`: the buffers (the call's inputs and outputs, scratch
with its size and whether it must start zeroed, small constants with their words), the ordered
dispatches (kernel, specialization values, group counts, push-constant words, bound buffers) and the
barriers between them. The runtime runs exactly this (vkops.runtime.execute), and so can any host that
reads `plan.to_json()` and the kernel manifest (docs/c-api.md; libvkops records the same plans in C).

Buffers hold a tensor's elements little-endian in memory order over its span, zero-padded to whole
32-bit words. A zeroed scratch buffer must hold zeros when the plan starts; the plan leaves it zero
(counters that the last workgroup to arrive resets), so a host may keep one for every run.

May import: the other pure modules (errors, dtypes, tensor, limits); never `vkops.ops`, `vkops.runtime`, `vkops.bench` (nor drivers, vkinfo, kp, the package face `vkops`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .dtypes import DataType, pack, words_for
from .errors import DeviceLimitError, ValidationError
from .limits import Limits
from .tensor import TensorDesc

FORMAT = "vkops-plan/1"
ROLES = ("input", "output", "scratch", "constant")


@dataclass(frozen=True)
class Buffer:
    name: str
    role: str                              # input | output | scratch | constant
    nbytes: int                            # a multiple of 4
    tensor: Optional[TensorDesc] = None    # input, output: the tensor it holds
    zeroed: bool = False                   # scratch: must start (and is left) all zeros
    data: Optional[Tuple[int, ...]] = None  # constant: its 32-bit words

    @property
    def words(self) -> int:
        return self.nbytes // 4


@dataclass(frozen=True)
class Dispatch:
    kernel: str                      # a module of vkops/spv/manifest.json
    spec: Tuple[int, ...]            # specialization constant i = spec[i]
    groups: Tuple[int, int, int]
    push: Tuple[int, ...]            # push-constant block as uint32 words
    bindings: Tuple[int, ...]        # buffer ids; binding i of set 0 = buffers[bindings[i]]
    writes: Tuple[int, ...]          # positions in `bindings` the dispatch writes
    barrier: Tuple[int, ...] = ()    # buffer ids whose earlier writes must be visible first

    @property
    def written_buffers(self) -> Tuple[int, ...]:
        return tuple(self.bindings[i] for i in self.writes)


@dataclass(frozen=True)
class Plan:
    """What one operator call runs, as data: `buffers` (input, output, scratch, constant), the ordered
    `dispatches` with their barriers, and the `limits` it was made for. Operators' `plan(desc, limits)`
    make one; `to_json()` / `from_json()` carry it to another host (format "vkops-plan/1")."""

    op: str
    buffers: Tuple[Buffer, ...]
    dispatches: Tuple[Dispatch, ...]
    limits: Limits
    notes: Tuple[Tuple[str, object], ...] = ()  # how the op lowered (path, kernel, ...), for people and tests
    _push: list = field(default=None, init=False, repr=False, compare=False)  # per dispatch, as np.uint32
    _constants: dict = field(default=None, init=False, repr=False, compare=False)  # runtime's, by (device, id)
    _roles: dict = field(default=None, init=False, repr=False, compare=False)  # role -> its buffers, in order
    _slots: tuple = field(default=None, init=False, repr=False, compare=False)  # (role, words, zeroed) per buffer
    _steps: tuple = field(default=None, init=False, repr=False, compare=False)  # per dispatch, what the runtime records
    _io: tuple = field(default=None, init=False, repr=False, compare=False)  # per buffer: its place in inputs + outputs, or -1
    _io_only: bool = field(default=False, init=False, repr=False, compare=False)  # buffers = inputs + outputs, in order
    _binds: tuple = field(default=None, init=False, repr=False, compare=False)  # runtime/execute.py _bind's steps
    _tail: tuple = field(default=None, init=False, repr=False, compare=False)  # _binds after inputs + outputs in order
    _outs: tuple = field(default=None, init=False, repr=False, compare=False)  # per output: (packed desc, words)

    def __post_init__(self):
        push = [np.array(d.push, np.uint32) for d in self.dispatches]
        for p in push:
            p.flags.writeable = False  # the runtime records one kp op per array (Pipelines.dispatch_op)
        object.__setattr__(self, "_push", push)
        object.__setattr__(self, "_constants", {})
        object.__setattr__(self, "_slots", tuple((b.role, b.words, b.zeroed) for b in self.buffers))
        object.__setattr__(self, "_steps", tuple((d.kernel, d.bindings, d.writes, d.groups, p, d.spec)
                                                 for d, p in zip(self.dispatches, push)))
        n_in = sum(1 for b in self.buffers if b.role == "input")
        io, seen = [], {"input": 0, "output": n_in}
        for b in self.buffers:
            if b.role in seen:
                io.append(seen[b.role])
                seen[b.role] += 1
            else:
                io.append(-1)
        object.__setattr__(self, "_io", tuple(io))
        object.__setattr__(self, "_io_only", io == list(range(len(io))))
        # Per buffer (kind, index into inputs + outputs or constant's id, words): 0 io, 1 the device's zeroed
        # counters, 2 a zeroed upload (a second zeroed scratch), 3 scratch, 4 a constant.
        binds, zeroed = [], False
        for i, b in enumerate(self.buffers):
            if io[i] >= 0:
                binds.append((0, io[i], b.words))
            elif b.role == "scratch":
                binds.append((3 if not b.zeroed else 2 if zeroed else 1, i, b.words))
                zeroed = zeroed or b.zeroed
            else:
                binds.append((4, i, b.words))
        object.__setattr__(self, "_binds", tuple(binds))
        # Most plans bind inputs + outputs first, in order, then scratch, counters, constants: _bind then
        # starts from the io list and walks only the rest (None: buffers in another order).
        n = len(io) - io.count(-1)
        object.__setattr__(self, "_tail", tuple(binds[n:]) if io[:n] == list(range(n)) else None)
        object.__setattr__(self, "_outs", tuple((b.tensor.packed(), words_for(b.tensor.element_count, b.tensor.data_type))
                                                for b in self.buffers if b.role == "output"))
        roles = {r: [] for r in ROLES}
        for b in self.buffers:
            roles.setdefault(b.role, []).append(b)
        object.__setattr__(self, "_roles", {r: tuple(bs) for r, bs in roles.items()})

    def ids(self, role: str) -> List[int]:
        """Ids (positions) of the buffers with this role."""
        return [i for i, b in enumerate(self.buffers) if b.role == role]

    @property
    def inputs(self) -> Tuple[Buffer, ...]:
        """The input buffers, in the order the operator takes its inputs."""
        return self._roles["input"]

    @property
    def outputs(self) -> Tuple[Buffer, ...]:
        """The output buffers, in the order the operator returns them."""
        return self._roles["output"]

    @property
    def barrier_count(self) -> int:
        """Dispatches that wait for earlier writes (one pipeline barrier each)."""
        return sum(1 for d in self.dispatches if d.barrier)

    def note(self, key: str, default=None):
        """What the lowering recorded under `key` (path, kernel, chunks...), else `default`."""
        return dict(self.notes).get(key, default)

    def to_dict(self) -> dict:
        """The plan as JSON-ready data (the "vkops-plan/1" format docs/c-api.md describes)."""
        def buf(b: Buffer) -> dict:
            d = {"name": b.name, "role": b.role, "bytes": b.nbytes}
            if b.tensor is not None:
                t = b.tensor
                d["tensor"] = {"data_type": t.data_type.value, "sizes": list(t.sizes),
                               "strides": None if t.strides is None else list(t.strides)}
            if b.role == "scratch":
                d["zeroed"] = b.zeroed
            if b.data is not None:
                d["data"] = list(b.data)
            return d

        return {"format": FORMAT, "op": self.op, "notes": {k: v for k, v in self.notes},
                "limits": self.limits.to_dict(), "buffers": [buf(b) for b in self.buffers],
                "dispatches": [{"kernel": d.kernel, "spec": list(d.spec), "groups": list(d.groups),
                                "push": list(d.push), "bindings": list(d.bindings), "writes": list(d.writes),
                                "barrier": list(d.barrier)} for d in self.dispatches]}

    def to_json(self, indent: Optional[int] = None) -> str:
        """to_dict() as JSON text; with `indent`, lists of numbers stay on one line."""
        text = json.dumps(self.to_dict(), indent=indent)
        if indent is not None:  # lists of numbers on one line: push words and the like stay readable
            text = re.sub(r"\[\s*([-\d.,\s]*?)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
        return text

    @classmethod
    def from_dict(cls, d: dict, limits: Optional[Limits] = None) -> "Plan":
        """A Plan from to_dict()'s form, checked (see check()); raises ValidationError when malformed.
        `limits`: the plan's Limits instead of d["limits"] (libvkops names limits its own way: vkops.native)."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValidationError(f"plan.format must be {FORMAT!r}; got {d.get('format') if isinstance(d, dict) else d!r}")
        bufs = []
        for i, b in enumerate(d["buffers"]):
            t = b.get("tensor")
            desc = None if t is None else TensorDesc(t["data_type"], t["sizes"], t["strides"], name=f"plan.buffers[{i}].tensor")
            data = b.get("data")
            bufs.append(Buffer(b["name"], b["role"], int(b["bytes"]), desc, bool(b.get("zeroed", False)),
                               None if data is None else tuple(int(x) for x in data)))
        disp = [Dispatch(x["kernel"], tuple(x["spec"]), tuple(x["groups"]), tuple(x["push"]), tuple(x["bindings"]),
                         tuple(x["writes"]), tuple(x.get("barrier", ()))) for x in d["dispatches"]]
        plan = cls(d.get("op", "?"), tuple(bufs), tuple(disp), Limits.from_dict(d.get("limits", {})) if limits is None else limits,
                   tuple((k, _tuples(v)) for k, v in d.get("notes", {}).items()))
        return plan.check()

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        """from_dict() of JSON text."""
        return cls.from_dict(json.loads(text))

    def check(self) -> "Plan":
        """Internal consistency: roles, sizes, buffer ids, and the barriers that ordering needs."""
        for i, b in enumerate(self.buffers):
            if b.role not in ROLES:
                raise ValidationError(f"plan.buffers[{i}].role must be one of {ROLES}; got {b.role!r}")
            if b.nbytes < 4 or b.nbytes % 4:
                raise ValidationError(f"plan.buffers[{i}].bytes must be a positive multiple of 4; got {b.nbytes}")
            if b.role in ("input", "output") and b.tensor is None:
                raise ValidationError(f"plan.buffers[{i}] ({b.role}) needs a tensor")
            if b.role == "constant" and (b.data is None or len(b.data) != b.words):
                raise ValidationError(f"plan.buffers[{i}].data must hold bytes/4 = {b.words} words")
        n = len(self.buffers)
        for j, d in enumerate(self.dispatches):
            if any(not 0 <= x < n for x in d.bindings + d.barrier):
                raise ValidationError(f"plan.dispatches[{j}] binds a buffer id outside 0..{n - 1}: {d.bindings}")
            if any(not 0 <= w < len(d.bindings) for w in d.writes):
                raise ValidationError(f"plan.dispatches[{j}].writes must index its bindings; got {d.writes}")
            if len(d.groups) != 3 or any(g < 1 for g in d.groups):
                raise ValidationError(f"plan.dispatches[{j}].groups must be three counts >= 1; got {d.groups}")
        want = barriers([(d.bindings, d.writes) for d in self.dispatches])
        got = [d.barrier for d in self.dispatches]
        if [bool(b) for b in got] != [bool(b) for b in want]:
            raise ValidationError(f"plan barriers before dispatches {[j for j, b in enumerate(got) if b]} do not "
                                  f"order its dependencies (needed before {[j for j, b in enumerate(want) if b]})")
        return self


def _tuples(v):
    """A note's value as the lowering recorded it: JSON lists back to tuples (notes are hashable data)."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


class Hazards:
    """The barrier rule, one step at a time: a step that reads what was written, or writes what was read
    or written, since the last barrier gets one over every buffer written since then (and those read
    that it writes), and tracking restarts there. `reads`/`writes` map a buffer's key to what the
    caller needs back (plan buffer ids here, device buffers in runtime/submit.py's Batch)."""

    def __init__(self):
        self.written: Dict = {}
        self.read: Dict = {}

    def step(self, reads: Dict, writes: Dict) -> Optional[Dict]:
        """What a barrier before this step must cover (None: no barrier), then note its accesses."""
        cover = None
        written, read = self.written, self.read
        w = written.keys()
        if not (w.isdisjoint(reads) and w.isdisjoint(writes) and read.keys().isdisjoint(writes)):
            cover = dict(written)
            if not read.keys().isdisjoint(writes):  # a write after read: those reads too, in their order
                cover.update([(k, v) for k, v in read.items() if k in writes])
            written.clear()
            read.clear()
        written.update(writes)
        read.update(reads)
        return cover

    def clear(self) -> None:
        self.written.clear()
        self.read.clear()


def barriers(steps: Sequence[Tuple[Sequence[int], Sequence[int]]]) -> List[Tuple[int, ...]]:
    """For each (bindings, writes) step, the buffer ids a barrier before it must cover (empty: none)."""
    h, out = Hazards(), []
    for bindings, writes in steps:
        wr = dict.fromkeys(bindings[i] for i in writes)
        cover = h.step(dict.fromkeys(b for b in bindings if b not in wr), wr)
        out.append(tuple(cover or ()))
    return out


class Ref:
    """A buffer of a plan being built, seen as a tensor (the lowering code reads its descriptor)."""

    __slots__ = ("id", "desc")

    def __init__(self, id: int, desc: Optional[TensorDesc]):
        self.id, self.desc = id, desc

    @property
    def shape(self):
        return self.desc.sizes

    @property
    def ndim(self):
        return self.desc.rank

    @property
    def data_type(self):
        return self.desc.data_type


class Builder:
    """Collects a plan: operators' lowering code declares buffers and records dispatches into it."""

    def __init__(self, op: str, limits: Limits):
        self.op, self.limits = op, limits
        self._buffers: List[Buffer] = []
        self._steps: List[tuple] = []
        self._counters: Optional[int] = None
        self._constants: Dict[tuple, Ref] = {}
        self.notes: Dict[str, object] = {}

    def _add(self, buf: Buffer, desc: Optional[TensorDesc]) -> Ref:
        lim = self.limits
        if buf.nbytes > lim.max_storage_buffer_range:
            raise DeviceLimitError(f"{self.op} needs {buf.role} buffer {buf.name!r} of {buf.nbytes} bytes; "
                                   f"{lim.name}'s maxStorageBufferRange is {lim.max_storage_buffer_range}")
        self._buffers.append(buf)
        return Ref(len(self._buffers) - 1, desc)

    def input(self, desc: TensorDesc, name: str) -> Ref:
        return self._add(Buffer(name, "input", 4 * max(1, words_for(desc.span, desc.data_type)), desc), desc)

    def output(self, desc: TensorDesc, name: str) -> Ref:
        return self._add(Buffer(name, "output", 4 * max(1, words_for(desc.span, desc.data_type)), desc), desc)

    def scratch(self, desc: TensorDesc, name: Optional[str] = None) -> Ref:
        """A packed temporary."""
        desc = desc.packed()
        name = name or f"scratch{sum(b.role == 'scratch' for b in self._buffers)}"
        return self._add(Buffer(name, "scratch", 4 * max(1, words_for(desc.element_count, desc.data_type))), desc)

    def counters(self, words: int) -> Ref:
        """The plan's one zeroed scratch buffer of uint32 counters, at least `words` long."""
        words = max(int(words), 1)
        if self._counters is None:
            self._counters = self._add(Buffer("counters", "scratch", 4 * words, zeroed=True), None).id
        b = self._buffers[self._counters]
        if b.words < words:
            self._buffers[self._counters] = Buffer(b.name, b.role, 4 * words, zeroed=True)
        return Ref(self._counters, TensorDesc(DataType.UINT32, (self._buffers[self._counters].words,)))

    def constant(self, array: np.ndarray, name: str) -> Ref:
        """A small read-only buffer with these contents (one per distinct content)."""
        array = np.ascontiguousarray(array)
        words = tuple(int(w) for w in pack(array))
        key = (array.dtype.str, array.shape, words)
        if key not in self._constants:
            desc = TensorDesc(DataType.of(array), array.shape or (1,))
            self._constants[key] = self._add(Buffer(name, "constant", 4 * len(words), data=words), desc)
        return self._constants[key]

    def dispatch(self, kernel: str, refs: Sequence[Ref], writes: Sequence[int], groups: Sequence[int],
                 push: np.ndarray, spec: Sequence[int] = ()) -> None:
        words = tuple(int(w) for w in np.ascontiguousarray(push).reshape(-1).view(np.uint32))
        lim = self.limits
        # Spec constant 0 is every kernel's workgroup size (tests/test_manifest.py checks it).
        checks = ((4 * len(words), lim.max_push_constants_bytes, "maxPushConstantsSize", "push-constant bytes"),
                  (int(spec[0]) if spec else 1, lim.max_workgroup_invocations, "maxComputeWorkGroupInvocations",
                   "invocations per workgroup"))
        checks += tuple((int(g), m, f"maxComputeWorkGroupCount[{i}]", f"workgroups along {'xyz'[i]}")
                        for i, (g, m) in enumerate(zip(groups, lim.max_workgroup_count)))
        for need, have, limit, what in checks:
            if need > have:
                raise DeviceLimitError(f"{self.op} dispatch of {kernel} needs {need} {what}; {lim.name}'s {limit} "
                                       f"is {have}")
        self._steps.append((kernel, tuple(int(s) for s in spec), tuple(int(g) for g in groups), words,
                            tuple(r.id for r in refs), tuple(int(w) for w in writes)))

    def finish(self) -> Plan:
        bars = barriers([(s[4], s[5]) for s in self._steps])
        disp = tuple(Dispatch(*s, barrier=b) for s, b in zip(self._steps, bars))
        return Plan(self.op, tuple(self._buffers), disp, self.limits, tuple(self.notes.items()))
