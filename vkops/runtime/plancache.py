"""Plans kept by call: an operator call repeated with the same parameters and input descriptors gets
the same plan, so later calls skip validation and planning (a descriptor that validated once validates
again) and only bind their own buffers."""
from __future__ import annotations

import collections

import numpy as np

PLAN_ENTRIES = 1024
_PLAIN = frozenset((int, str, bool, float, type(None)))


def freeze(*values) -> tuple:
    """A memo key from an operator's parameters, exact about types (so `k=True` never finds `k=1`'s
    plan and skips the check that rejects it); lists become tuples. Raises TypeError for values that
    cannot be keys."""
    out = []
    for v in values:
        t = type(v)
        if t in _PLAIN:  # most parameters: no isinstance chain, no hash() probe
            out.append((t, v))
        elif t is list or t is tuple:
            types = tuple(map(type, v))
            if _PLAIN.issuperset(types):  # windows, shapes: the element types and values, no recursion
                out.append((t, types, tuple(v)))
            else:
                out.append((t.__name__, freeze(*v)))
        elif isinstance(v, (list, tuple)):
            out.append((type(v).__name__, freeze(*v)))
        elif isinstance(v, np.ndarray):
            out.append(("ndarray", v.dtype.str, v.shape, v.tobytes()))
        else:
            hash(v)
            out.append((type(v).__name__, v))
    return tuple(out)


class PlanCache:
    """The plans of one device's calls, LRU by key."""

    def __init__(self, lock):
        self._lock = lock
        self._entries: "collections.OrderedDict[tuple, object]" = collections.OrderedDict()
        self.hits = 0
        self.stored = 0
        # The youngest entry as (key, plan, generation): a call repeated back to back (a batch of the same
        # call, a loop) finds its plan without hashing its key again or moving it. `_gen` changes whenever
        # an entry may have gone (clear, put's eviction), which retires it.
        self._young = None
        self._gen = 0

    def get(self, key):
        y = self._young
        if y is not None and y[2] == self._gen:
            try:
                same = y[0] is key or y[0] == key  # the same objects inside: compared by identity, no __eq__
            except Exception:  # noqa: BLE001  (an array in a key the dict will refuse below)
                same = False
            if same:
                self.hits += 1
                return y[1]
        gen = self._gen  # read before the lookup: a clear() after it retires what is noted below
        plan = self._entries.get(key)  # atomic under the GIL; put() evicts under the lock
        if plan is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # evicted by another thread just now: still a valid plan
                pass
            self.hits += 1
            self._young = (key, plan, gen)
        return plan

    def clear(self) -> None:
        with self._lock:
            self._gen += 1
            self._entries.clear()

    def put(self, key, plan) -> None:
        with self._lock:
            self._gen += 1  # rare (a key's first call): the youngest entry may move or go
            self._entries[key] = plan
            self.stored += 1
            if len(self._entries) > PLAN_ENTRIES:
                self._entries.popitem(last=False)
