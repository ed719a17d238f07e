"""NumPy recipes (issue 36, a lean eager path): a repeated small NumPy-in/NumPy-out call (the same operator,
parameters and input layouts: the plan key) without the runtime's plumbing. Its first call runs the general way
(runtime/call.py); its one-off batch is then kept as a recipe: the buffers it bound (held: no other call gets
them while the recipe lives), the op list it submitted (its kp sequence kept recorded by Sequences as an
OpsKey), where each input's bytes go and where each output's come back from. A repeat copies its inputs' bytes
into that mapped memory, submits the kept recording again, waits and copies the outputs out.

A recipe is out of the device's table while a thread runs it (another thread's call of the key runs the general
way, with buffers of its own), is dropped when the prepared recording it submits is no longer live (an
Algorithm it binds was destroyed: runtime/pipelines.py), and all are dropped by Device.trim (so by an
allocation over budget). Calls in flight on the device (Device._async) or an open batch take the general way.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from . import hostcopy
from .memory import host_layout

# Recipes kept per device, least recently used dropped first: each holds its buffers.
RECIPES = 16
# Bytes of inputs and outputs a recipe is made for at most: the small calls whose host work is the plumbing.
RECIPE_BYTES = 1 << 20


class Recipe:
    """What a repeat of one call does: `ins` (input index, its typed mapped destination or None where the
    input is not one C-order run of bytes, mapped buffer, words, whether a parameter), `zeros` (mapped
    bytes zeroed every call), `outs` (typed views of the mapped outputs, each with its buffer where that is
    uncached device memory, else None); `refs` holds every buffer the ops bind."""

    __slots__ = ("plan", "prep", "refs", "ops", "reuse", "ins", "zeros", "outs")


def capture(call, prep, refs: list) -> Optional[Recipe]:
    """A recipe of `call` (a one-off NumPy call that just ran: runtime/call.py) whose batch submitted the
    prepared recording `prep` and bound `refs`; None where its batch is not one kept recording of small
    packed copies."""
    batch, dev = call.batch, call.device
    if batch._sent is None or batch._submitted != 1 or not prep.live or dev._async or call._outer is not None:
        return None
    sizes = [t.desc.element_count * t.dtype.itemsize for t in call._outputs]
    if sum(w for _, _, w in batch._staged) * 4 + sum(sizes) > RECIPE_BYTES:
        return None
    ins, zeros, outs = [], [], []
    bufs = [t._buffer for t in call._inputs]
    for buf, host, words in batch._staged:
        view = host.host().view(np.uint8)[:words * 4]
        if buf not in bufs:  # a zeroed scratch buffer (execute._bind)
            zeros.append(view)
            continue
        i = bufs.index(buf)
        if buf.serial in prep.writes:  # an input the plan writes: its padding would not stay zero
            return None
        a, param = call._raw[i], i in call._params
        # a C-order array lands as its bytes: a typed view of them takes the next call's array in one copy
        dst = view[:a.nbytes].view(a.dtype).reshape(a.shape) if a.flags.c_contiguous and a.ndim else None
        ins.append((i, dst, host, words, param))
    for t, n in zip(call._outputs, sizes):
        host = next((h for b, h, _ in batch._downloads if b is t._buffer), None)
        if host is None or not t.desc.is_packed:
            return None
        # copied out every call; uncached mapped memory (read in place) by libvkops' streaming loads where offered
        outs.append((host.host().view(np.uint8)[:n].view(t.dtype).reshape(t.shape), None if host.host_cached else host))
    r = Recipe()
    r.plan, r.prep, r.refs, r.ops, r.reuse = call.plan, prep, refs, list(batch._sent.ops), batch._sent
    r.ins, r.zeros, r.outs = ins, zeros, outs
    return r


def take(dev, key) -> Optional[Recipe]:
    """The recipe of `key`, out of the table until `keep` puts it back (None: none, or an unhashable key)."""
    try:
        return dev._recipes.pop(key, None)  # atomic under the GIL: one thread at a time has it
    except TypeError:
        return None


def keep(dev, key, rec: Recipe) -> None:
    """Put `rec` (back) into the table: the newest; the oldest past RECIPES is dropped (its buffers freed)."""
    table = dev._recipes
    table.setdefault(key, rec)  # atomic under the GIL; another thread's, kept meanwhile, stays
    if len(table) > RECIPES:
        with dev._lock:
            while len(table) > RECIPES:
                try:
                    del table[next(iter(table))]
                except (KeyError, RuntimeError, StopIteration):  # taken by a thread meanwhile
                    pass


def forget(dev) -> None:
    """Drop the recipes whose recording is no longer live (Pipelines: Algorithms destroyed)."""
    table = dev._recipes
    if table:
        with dev._lock:
            dead = [table.pop(k) for k in [k for k, r in table.items() if not r.prep.live]]
        del dead  # their buffers go back to the allocator here, after the table's iteration


def replay(dev, rec: Recipe, arrays) -> Optional[List[np.ndarray]]:
    """Run `rec` on `arrays` (the call's inputs, in its order): its outputs as new arrays, or None (and the
    recipe is to be dropped) when its prepared recording is no longer live."""
    algorithms = dev._pipelines._algorithms
    try:
        for k in rec.prep.keys:  # in use: keep its Algorithms at the LRU's young end, as execute() does
            algorithms.move_to_end(k)
    except KeyError:  # one destroyed: the recording binds it
        return None
    if not rec.prep.live:
        return None
    for i, dst, host, words, param in rec.ins:
        if dst is None:  # a strided view or a 0-d parameter: staged as Call._stage and Batch.upload do
            a = arrays[i]
            dev._pack_into(host, np.ascontiguousarray(a) if param else host_layout(a)[0], words)
        else:
            np.copyto(dst, arrays[i])  # the padding past it stays zero: nothing writes an input
    for z in rec.zeros:
        z[:] = 0
    seqs = dev._sequences
    seqs.wait(seqs.submit(rec.ops, False, rec.reuse))
    dev._recipe_runs += 1
    read = hostcopy.mapped_reader()
    return [o.copy() if mapped is None or read is None else hostcopy.read_mapped(read, mapped, o.shape, o.dtype)
            for o, mapped in rec.outs]
