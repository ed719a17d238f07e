"""Reused kp sequences: a device keeps a few and re-records them (the patched kp resets a sequence's fence and
command buffer instead of creating them per `eval`), keeps a one-off call's recording to submit it again
(by its prepared recording, or a NumPy call's by its op list), and replays a captured graph's."""
from __future__ import annotations

import collections
from typing import Dict, List

# One-off calls' recordings kept recorded (a kp sequence each: a command pool, buffer and fence), LRU:
# a repeated eager call re-submits its command buffer instead of recording it again.
KEPT_SEQUENCES = 32


class OpsKey:
    """A one-off NumPy call's op list as a key of kept sequences: the same op objects (cached copies and
    barriers, a prepared recording's dispatches) in the same order are the same recording."""

    __slots__ = ("ops", "_h", "keys")
    live = True

    def __init__(self, ops, keys):
        self.ops, self.keys = tuple(ops), keys  # keys: the Algorithms its dispatches bind
        self._h = hash(self.ops)  # kp ops hash and compare by identity

    def __hash__(self):
        return self._h

    def __eq__(self, other):
        return other.__class__ is OpsKey and other.ops == self.ops


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


class Sequences:
    """Reusable kp sequences of one device: plain ones, and ones with timestamp queries by capacity."""

    def __init__(self, manager, lock):
        self._mgr = manager
        self._lock = lock  # the device's: kp's manager and the queue are not thread-safe
        self._free: Dict[int, list] = {}
        # execute.Prepared -> (cap, sequence) recorded with exactly its ops, not in use
        self._kept: "collections.OrderedDict[object, tuple]" = collections.OrderedDict()
        self.created = 0
        self.submissions = 0
        self.recorded_ops = 0  # ops recorded into sequences (kp `record` calls) by submit()

    def acquire(self, timestamps: int = 0):
        cap = _pow2(timestamps) if timestamps else 0
        with self._lock:
            free = self._free.get(cap)
            if free:
                return cap, free.pop()
            self.created += 1
            return cap, self._mgr.sequence(0, cap)

    def release(self, cap: int, seq, reuse=None, waited: bool = False) -> None:
        """Take a sequence back. `reuse`: the prepared recording (runtime/execute.py) it holds exactly,
        kept recorded for the next call of it while that recording is live (its Algorithms exist).
        `waited`: its eval_await returned (no need to ask kp whether it still runs)."""
        if not waited and seq.is_running():  # released unwaited (e.g. Ctrl-C between submit and wait)
            seq.eval_await()
        if reuse is not None and reuse.live and not cap:
            with self._lock:
                if reuse.live and reuse not in self._kept:
                    self._kept[reuse] = (cap, seq)
                    if len(self._kept) <= KEPT_SEQUENCES:
                        return
                    reuse, (cap, seq) = self._kept.popitem(last=False)
        seq.clear()  # drops the recorded ops (and the buffers they hold); the command buffer is reset on reuse
        with self._lock:
            self._free.setdefault(cap, []).append(seq)

    def forget_kept(self, preps=None) -> None:
        """Clear the kept recordings of these prepared recordings (all when None): Pipelines calls this
        before it destroys an Algorithm they bind."""
        with self._lock:
            if preps is None:
                kept = list(self._kept.values())
                self._kept.clear()
            else:
                preps = list(preps) + [p._led for p in preps if getattr(p, "_led", None) is not None]
                kept = [h for h in (self._kept.pop(p, None) for p in preps) if h is not None]
        for cap, seq in kept:
            self.release(cap, seq)

    def forget_ops(self) -> None:
        """Clear every recording kept by its op list (OpsKey): a buffer one of them copies is being freed."""
        with self._lock:
            keys = [k for k in self._kept if k.__class__ is OpsKey]
            kept = [self._kept.pop(k) for k in keys]
        for cap, seq in kept:
            self.release(cap, seq)

    def submit(self, ops: List, timestamps: bool = False, reuse=None):
        """Record `ops` into a reused sequence and submit it without waiting; returns what `wait` takes.
        `reuse`: a prepared recording (runtime/execute.py) whose ops `ops` are exactly; a sequence an
        earlier call recorded with them is submitted again as it is (no kp `record`)."""
        if reuse is not None and not timestamps:
            with self._lock:
                held = self._kept.pop(reuse, None)
                if held is not None and reuse.live:
                    try:
                        held[1].eval_async()
                    except BaseException:
                        self.release(*held)
                        raise
                    self.submissions += 1
                    return held[0], held[1], reuse
            if held is not None:
                self.release(*held)
        cap, seq = self.acquire(len(ops) + 1 if timestamps else 0)
        try:
            with self._lock:
                for op in ops:
                    seq.record(op)
                self.recorded_ops += len(ops)
                seq.eval_async()
                self.submissions += 1
        except BaseException:
            self.release(cap, seq)
            raise
        return cap, seq, None if timestamps else reuse

    def replay(self, seq) -> None:
        """Submit a sequence recorded earlier (a captured graph's) again and wait for it."""
        with self._lock:
            seq.eval_async()
            self.submissions += 1
        seq.eval_await()

    def wait(self, pending, timestamps: bool = False) -> List[int]:
        """Wait for a submitted sequence; its timestamps (ticks) when asked; the sequence is reused."""
        cap, seq, reuse = pending
        waited = False
        try:
            seq.eval_await()
            waited = True
            return list(seq.get_timestamps()) if timestamps else []
        finally:
            self.release(cap, seq, reuse, waited)

    def run(self, ops: List, timestamps: bool = False) -> List[int]:
        """Record `ops` into a reused sequence, submit, wait; per-op GPU ticks when `timestamps`."""
        return self.wait(self.submit(ops, timestamps), timestamps)
