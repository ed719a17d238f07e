"""Captured graphs: operator calls recorded once and run again and again with one submission each,
the Vulkan counterpart of a CUDA graph.

A Graph is a Batch (submit.py) that does not submit: inside `with dev.graph() as g:` operator calls
record into it exactly as into a batch (the same plans, execute path, barriers, scratch), nothing
runs, and at the end of the block its kp ops are recorded once into a kp sequence of its own.
`g.run()` submits that command buffer again (kp's `eval_async` re-submits what is recorded) and
waits: no Python work per operator, no plan, Algorithm, buffer or sequence is made. The graph holds
what the recorded commands use (buffers, scratch, constants, Algorithms pinned in the LRU) until
`close()` or until it is dropped.

Feeds: on a device whose buffers are host-visible (lavapipe) `run(feed=...)` writes straight into
the input's mapped memory before the submission. Otherwise a pooled staging buffer per fed input is
copied into it at the start of the graph's command buffer; the sequence with those copies is
recorded at the first run that feeds that set of inputs and kept.

Fetches work the same way at the other end: `run(fetch=[...])` reads host-visible outputs from their
mapped memory after the wait; otherwise copies of the fetched outputs into pooled staging buffers
(after a barrier on them) end the graph's command buffer, recorded at the first run that feeds and
fetches that combination, so a run with feeds and fetches is one submission and one wait.
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional

import numpy as np

from ..dtypes import pack, words_for
from ..errors import ValidationError
from . import _kp as K
from . import memory as memory_mod
from .memory import DeviceTensor
from .submit import Batch, barrier

# None: stage feeds and fetches only where buffers are not host-visible; True: always (tests run that
# path on lavapipe).
STAGE_FEEDS: Optional[bool] = None


class Graph(Batch):
    """Operator calls captured once, run many times: `with dev.graph() as g: ...`, then `g.run(feed=...)`.
    Inputs and outputs are the device tensors the captured calls took and returned."""

    _flushes = False

    def __init__(self, device):
        super().__init__(device)
        self._pins: List[tuple] = []
        self.capturing = False
        self._calls = 0
        self._inputs: Dict[int, object] = {}  # serial -> buffer read before the graph writes it
        self._written: set = set()
        self._labels: Dict[int, str] = {}  # serial -> how the captured calls named it, for errors
        self._kept: List = []  # the recorded kp ops, in order
        self._seqs: Dict[tuple, tuple] = {}  # (fed (serial, words), fetched (serial, words)) -> (cap, kp sequence)
        self._stages: Dict[int, object] = {}  # serial -> staging buffer of a staged feed
        self._fetch_stages: Dict[tuple, object] = {}  # (serial, words) -> staging buffer of a staged fetch
        self._run_lock = threading.Lock()  # one run of this graph at a time: feeds and outputs are shared
        self._closed = False
        self.runs = 0

    # -- capture -------------------------------------------------------------------------------- #
    def __enter__(self) -> "Graph":
        if self.capturing or self._kept or self._closed:
            raise RuntimeError("a graph is captured once: make a new one with dev.graph()")
        if self.device._active_batch() is not None:
            raise RuntimeError("Device.graph(): cannot capture inside an open batch or graph on this thread; "
                               "leave that `with` block first")
        super().__enter__()
        self.capturing = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.device._local.stack.pop()
        self.capturing = False
        if exc_type is not None:
            self.close()
            return
        try:
            self._finish()
        except BaseException:
            self.close()
            raise

    def admit(self, op: str, inputs, names, params) -> None:
        """Called by Call for each captured call: graphs take device tensors (a NumPy array would be
        captured by value, silently ignoring later changes); small parameters (`params`: scales, zero
        points) become device constants, fixed at capture. Remembers names for feed errors."""
        self._calls += 1
        for i, x in enumerate(inputs):
            name = names[i] if i < len(names) else f"input {i}"
            if isinstance(x, DeviceTensor):
                self._labels.setdefault(x._buffer.serial, f"{name} of call {self._calls} ({op})")
            elif i not in params:
                a = np.asarray(x)
                raise ValidationError(f"vkops.{op}: {name} must be a DeviceTensor while capturing a graph (graphs "
                                      f"replay device tensors; upload it with dev.tensor() first); got a NumPy array of "
                                      f"{a.dtype} {a.shape}")

    def dispatch(self, kernel, bufs, writes, groups, push, spec=()):
        """Batch.dispatch, noting which buffers the graph reads before writing (its inputs)."""
        self._note(bufs, writes)
        super().dispatch(kernel, bufs, writes, groups, push, spec)

    def record(self, prep, bufs):
        """Batch.record, noting per dispatch which buffers the graph reads before writing."""
        for _, rd, wr in prep.steps:
            for s, b in rd.items():
                if s not in self._written:
                    self._inputs.setdefault(s, b)
            self._written.update(wr)
        super().record(prep, bufs)

    def copy(self, src: DeviceTensor, dst: DeviceTensor):
        """Batch.copy, noting src as read and dst as written."""
        self._note([src._buffer, dst._buffer], [1])
        super().copy(src, dst)

    def upload(self, array):
        """Batch.upload: the array is captured by value (every run sees the data it had now)."""
        t = super().upload(array)
        self._written.add(t._buffer.serial)
        return t

    def _note(self, bufs, writes):
        """Inputs are what the graph reads before it writes them: the buffers a feed may fill."""
        wr = [bufs[i] for i in writes]
        for b in bufs:
            if b.serial not in self._written and all(b is not w for w in wr):
                self._inputs.setdefault(b.serial, b)
        self._written.update(b.serial for b in wr)

    def _finish(self):
        if self._downloads:
            raise RuntimeError("a graph downloads nothing: read its output tensors after run()")
        self._kept = [op for _, op in self._ops]
        self._ops = []
        self._registered = False
        self.device._pending.discard(self)  # its tensors may be read and written between runs
        self._touched.clear()
        self._seqs[(frozenset(), ())] = self._record([])

    def _record(self, prefix: List, suffix: List = ()):
        dev = self.device
        cap, seq = dev._sequences.acquire(0)
        with dev._lock:
            for op in prefix + self._kept + list(suffix):
                seq.record(op)
        return cap, seq

    # -- running -------------------------------------------------------------------------------- #
    def run(self, feed: Optional[dict] = None, fetch=None):
        """Write `feed` ({input DeviceTensor: array of its dtype and shape}) into the captured inputs
        and run the whole graph as one submission; wait. Outputs are the captured calls' tensors, read
        after this returns. `fetch` (a tensor or a list): read those here, before another thread's run
        of this graph can overwrite them, in the same submission (staged copies recorded at the end
        of the graph, or mapped memory); returns the array (or a tuple), else None. Inside an open
        batch, what that batch recorded so far is submitted and waited for first (program order)."""
        if self.capturing:
            raise RuntimeError("Graph.run: the graph is still capturing; leave the `with dev.graph()` block first")
        if self._closed:
            raise RuntimeError("Graph.run: this graph was closed")
        writes = self._feeds(feed)
        self.device.synchronize()  # eager calls in flight: the graph's feeds and dispatches come after them
        many = isinstance(fetch, (list, tuple))
        fetched = self._fetches(fetch if many else [fetch]) if fetch is not None else []
        outer = self.device._active_batch()
        if outer is not None:
            if not outer._flushes:
                raise RuntimeError("Graph.run: cannot run a graph while capturing another one")
            outer._flush()
            outer._wait_all()
        staged = STAGE_FEEDS
        with self._run_lock:
            if self._closed:
                raise RuntimeError("Graph.run: this graph was closed")
            fed = []
            for buf, words in writes:
                if staged or (staged is None and not buf.host_visible):
                    stage = self._stages.get(buf.serial)
                    if stage is None:
                        stage = self._stages[buf.serial] = self.device._staging.get(buf.words)
                    stage.host()[:words.size] = words
                    fed.append((buf, words.size))
                else:
                    buf.host()[:words.size] = words  # the last run was waited for: nothing reads it now
            out = []  # (tensor, host buffer it is read from, words), staged or mapped
            copied = []  # (buffer, words) copied into staging at the end of the run
            for t, buf, words in fetched:
                if staged or (staged is None and not buf.reads_mapped(words)):
                    stage = self._fetch_stages.get((buf.serial, words))
                    if stage is None:
                        stage = self._fetch_stages[(buf.serial, words)] = self.device._staging.get(words)
                        self._refs.append(buf)  # the recorded copy reads it: keep it while the graph lives
                    copied.append((buf, words))
                    out.append((t, stage, words))
                else:
                    out.append((t, buf, words))
            key = (frozenset((b.serial, n) for b, n in fed), tuple(dict.fromkeys((b.serial, n) for b, n in copied)))
            entry = self._seqs.get(key)
            if entry is None:
                entry = self._seqs[key] = self._record(self._copies(fed), self._fetch_copies(copied))
            seq = entry[1]
            self.device._sequences.replay(seq)
            self.runs += 1
            if fetch is None:
                return None
            res = tuple(t.from_buffer(host, words) for t, host, words in out)
            return res if many else res[0]

    def _copies(self, fed) -> List:
        """Staging copies into the fed inputs, ordered before every dispatch that reads them."""
        if not fed:
            return []
        k = K.kp()
        ops = [k.OpBufferCopy(self._stages[b.serial].kp, b.kp, n * 4) for b, n in fed]
        return ops + [barrier([b for b, _ in fed])]

    def _fetch_copies(self, copied) -> List:
        """After the graph's last op: a barrier on the fetched buffers, their copies into staging, a
        barrier that makes those copies visible to the host."""
        if not copied:
            return []
        k = K.kp()
        bufs = list({b.serial: b for b, _ in copied}.values())
        ops = [barrier(bufs, dst_access=K.TRANSFER_READ, dst_stage=K.STAGE_TRANSFER)]
        seen = set()
        stages = []
        for b, words in copied:
            if (b.serial, words) in seen:
                continue
            seen.add((b.serial, words))
            stage = self._fetch_stages[(b.serial, words)]
            ops.append(k.OpBufferCopy(b.kp, stage.kp, words * 4))
            stages.append(stage)
        return ops + [barrier(stages, K.TRANSFER_WRITE, K.HOST_READ, K.STAGE_TRANSFER, K.STAGE_HOST)]

    def _fetches(self, fetch) -> List:
        """Checked fetch entries as (tensor, buffer, words to read)."""
        out = []
        for t in fetch:
            if not isinstance(t, DeviceTensor) or t.device is not self.device:
                raise ValidationError(f"Graph.run fetch must be DeviceTensors on {self.device.name!r} (or a list of "
                                      f"them); got {t!r}")
            out.append((t, t._buffer, words_for(t.desc.span, t.data_type)))
        return out

    def _feeds(self, feed) -> List:
        """Checked feed entries as (buffer, uint32 words); nothing is written unless all are valid."""
        if feed is None:
            return []
        if not isinstance(feed, dict):
            raise ValidationError(f"Graph.run feed must be a dict {{DeviceTensor: array}}; got {type(feed).__name__}")
        out = []
        for t, a in feed.items():
            if not isinstance(t, DeviceTensor):
                raise ValidationError(f"Graph.run feed keys must be DeviceTensors captured as inputs; got {t!r}")
            s = t._buffer.serial
            label = self._labels.get(s, repr(t))
            if s not in self._inputs:
                why = "the graph writes it before reading it" if s in self._written else "no captured call uses it"
                names = ", ".join(self._labels.get(i, "?") for i in self._inputs if i in self._labels)
                raise ValidationError(f"Graph.run feed[{label}] must be an input of this graph (a tensor its calls "
                                      f"read before writing); {why}. Its inputs: {names or 'none'}")
            if not t.desc.is_packed:
                raise ValidationError(f"Graph.run feed[{label}] must be a packed tensor (feed the tensor the view "
                                      f"was taken of); got strides {t.desc.strides}")
            a = np.asarray(a)
            if a.dtype != t.dtype:
                raise ValidationError(f"Graph.run feed[{label}].dtype must be {t.dtype} (the captured tensor's); "
                                      f"got {a.dtype}")
            if a.shape != t.shape:
                raise ValidationError(f"Graph.run feed[{label}].shape must be {t.shape} (the captured tensor's); "
                                      f"got {a.shape}")
            out.append((t._buffer, pack(a)))
        return out

    # -- lifetime ------------------------------------------------------------------------------- #
    def close(self) -> None:
        """Let go of everything the graph holds (sequences, buffers, pinned Algorithms); run() then
        raises. Dropping the graph does the same."""
        with self._run_lock:
            if self._closed:
                return
            self._closed = True
            dev = self.device
            for cap, seq in self._seqs.values():
                dev._sequences.release(cap, seq)
            self._seqs.clear()
            self._kept = []
            self._stages.clear()
            self._fetch_stages.clear()
            dev._pipelines.unpin(self._pins)
            self._pins = []
            self._release()

    def __del__(self):
        if not memory_mod._exiting and not getattr(self, "_closed", True):
            self.close()
