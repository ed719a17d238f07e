"""Pipelines: compiled once per (kernel, specialization) in a process, kept across processes in a
pipeline cache file.

The patched kp compiles one VkPipeline per SPIR-V, specialization, binding count and push-constant
size and shares it between kp Algorithms, which add only a descriptor set and a grid. vkops keeps
those Algorithms per bound buffers and grid (LRU); since device buffers come back from the caching
allocator with their serials, a steady stream of calls finds every Algorithm built.

The cache file lives in $XDG_CACHE_HOME/vkops (default ~/.cache/vkops), one per device and driver:
`VKOPSPC1`, the SHA-256 of the payload, then the payload from vkGetPipelineCacheData. A file that is
corrupt or whose Vulkan header names another device is ignored with a warning. VKOPS_PIPELINE_CACHE=0
turns it off. (lavapipe keeps nothing in a VkPipelineCache: a new process compiles again there.)
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import json
import os
import struct
import tempfile
import warnings
from importlib import resources
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ..drivers import cache_base
from ._kp import kp
from .recipe import forget as forget_recipes

ALGORITHM_CACHE_SIZE = 512
# Prepared recordings (runtime/execute.py) kept per (plan, bound buffers' serials), LRU.
PREPARED_ENTRIES = 1024
MAGIC = b"VKOPSPC1"


def cache_dir() -> Optional[Path]:
    """Where pipeline cache files go, or None when VKOPS_PIPELINE_CACHE=0."""
    if os.environ.get("VKOPS_PIPELINE_CACHE", "1").lower() in ("0", "off", "false", "no"):
        return None
    return cache_base()


def cache_file(info) -> Optional[Path]:
    d = cache_dir()
    if d is None:
        return None
    return d / (f"pipelines-{info.vendor_id:04x}-{info.device_id:04x}-{info.pipeline_cache_uuid.hex()}-"
                f"{info.driver_version:08x}.bin")


def check_payload(data: bytes, info) -> Optional[str]:
    """Why `data` (vkGetPipelineCacheData's bytes) cannot serve `info`'s device, or None when it can.
    Its header: length, version (1), vendorID, deviceID, pipelineCacheUUID."""
    if len(data) < 32:
        return f"{len(data)} bytes is shorter than a pipeline cache header"
    length, version, vendor, device = struct.unpack_from("<4I", data)
    if version != 1 or length < 32:
        return f"header version {version}, length {length}"
    if vendor != info.vendor_id or device != info.device_id or data[16:32] != info.pipeline_cache_uuid:
        return (f"made by device {vendor:04x}:{device:04x} cache {data[16:32].hex()}, not "
                f"{info.vendor_id:04x}:{info.device_id:04x} cache {info.pipeline_cache_uuid.hex()}")
    return None


class Pipelines:
    """The pipelines and descriptor sets of one device."""

    def __init__(self, device, manager):
        self.device = device
        self._mgr = manager
        self._spirv: Dict[str, bytes] = {}
        self._manifest: Optional[Dict] = None
        self._algorithms: "collections.OrderedDict[tuple, object]" = collections.OrderedDict()
        self._by_serial: Dict[int, set] = collections.defaultdict(set)
        self._ops: Dict[tuple, dict] = {}  # algorithm key -> {id(push array): (OpAlgoDispatch, array)}
        # Algorithms a captured graph's command buffer binds: destroying one would leave the recorded
        # commands pointing at a freed descriptor set, so the LRU passes over them (key -> graphs).
        self._pinned: Dict[tuple, int] = collections.Counter()
        self.algorithms_created = 0
        # (bound buffers' serials..., id(plan)) -> execute.Prepared: its kp ops bind Algorithms of this
        # cache, so the entries binding one go before it is destroyed (LRU, a freed buffer): no entry
        # ever records a destroyed descriptor set.
        self._prepared: "collections.OrderedDict[tuple, object]" = collections.OrderedDict()
        self._prepared_by_algorithm: Dict[tuple, set] = collections.defaultdict(set)  # Algorithm key -> entries
        self.prepared_created = 0
        # Transfer ops made once per buffers (transfer_op): the barriers around downloads, staged copies;
        # emptied whenever a device or staging buffer is freed (their kp tensors would be gone)
        self._transfers: Dict[tuple, object] = {}
        self.cache_path = cache_file(device.info)
        self.cache_loaded = 0  # bytes of cache data merged at start
        self._saved_at = 0  # compiled count when last saved or loaded
        self._load()
        if self.cache_path is not None:
            atexit.register(self.save)

    # -- kernels ------------------------------------------------------------------------------ #
    def spirv(self, kernel: str) -> bytes:
        code = self._spirv.get(kernel)
        if code is None:
            try:
                code = resources.files("vkops").joinpath("spv", f"{kernel}.spv").read_bytes()
            except FileNotFoundError:
                raise RuntimeError(f"SPIR-V for kernel {kernel!r} is missing: run `make spv`") from None
            self._spirv[kernel] = code
        return code

    def requirements(self, kernel: str) -> Dict:
        """The kernel's entry in vkops/spv/manifest.json (capabilities, extensions, device features)."""
        if self._manifest is None:
            try:
                self._manifest = json.loads(resources.files("vkops").joinpath("spv", "manifest.json").read_text())
            except FileNotFoundError:
                raise RuntimeError("vkops/spv/manifest.json is missing: run `make spv`") from None
        return self._manifest["modules"][kernel]

    @property
    def compiled(self) -> int:
        """Pipelines compiled by this process on this device (each kernel and specialization once)."""
        return self._mgr.compiled_pipelines()

    def dispatch_op(self, kernel: str, buffers: Sequence, groups: Tuple[int, int, int], spec: Tuple[int, ...],
                    push: np.ndarray, pin: Optional[list] = None, keyed: bool = False):
        """A kp OpAlgoDispatch for these buffers, grid and push constants. Its Algorithm (descriptor set)
        is made once per buffers and grid, its pipeline compiled at most once; the op itself is made once
        per read-only push array (a plan's, which live as long as the plan), so a repeated call records
        the same op again. `pin` (a graph's list): the Algorithm is kept until `unpin(pin)`. `keyed`:
        returns (op, the Algorithm's key)."""
        key = (kernel, spec, groups, push.size, tuple([b.serial for b in buffers]))
        with self.device._lock:  # kp's manager is not thread-safe
            if pin is not None:
                self._pinned[key] += 1
                pin.append(key)
            op = self._op(key, kernel, buffers, groups, spec, push)
        return (op, key) if keyed else op

    def _op(self, key, kernel, buffers, groups, spec, push):
        if push.flags.writeable:  # its words may change: kp copies them into the op, so make a new one
            return kp().OpAlgoDispatch(self._algorithm(key, kernel, buffers, groups, spec, push.size), push)
        ops = self._ops.get(key)
        if ops is not None:
            hit = ops.get(id(push))
            if hit is not None:
                self._algorithms.move_to_end(key)
                return hit[0]
        algo = self._algorithm(key, kernel, buffers, groups, spec, push.size)
        ops = self._ops.setdefault(key, {})
        if len(ops) >= 16:  # push arrays of plans since dropped: forget them
            ops.clear()
        op = kp().OpAlgoDispatch(algo, push)
        ops[id(push)] = (op, push)  # the array stays referenced, so its id is not reused
        return op

    def prepared(self, key: tuple, build):
        """The prepared recording under `key`, built by `build()` (runtime/execute.py) when missing."""
        with self.device._lock:
            prep = self._prepared.get(key)
            if prep is not None:
                return prep
            prep = build()
            self.prepared_created += 1
            if all(k in self._algorithms for k in prep.keys):  # none evicted while building
                self._prepared[key] = prep
                for k in prep.keys:
                    self._prepared_by_algorithm[k].add(key)
                while len(self._prepared) > PREPARED_ENTRIES:
                    old_key, old = self._prepared.popitem(last=False)
                    self._unindex(old_key, old)
                    old.live = False
                    self.device._sequences.forget_kept([old])
            else:
                prep.live = False
            return prep

    def _unindex(self, key, prep) -> None:
        for k in prep.keys:
            keys = self._prepared_by_algorithm.get(k)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._prepared_by_algorithm[k]

    def _drop_prepared(self, algorithm_keys) -> None:
        """Forget the prepared recordings that bind these Algorithms (about to be destroyed), and the
        sequences kept recorded with them: no kept or prepared op ever binds a destroyed descriptor set."""
        dropped = []
        for k in algorithm_keys:
            for key in self._prepared_by_algorithm.pop(k, ()):
                prep = self._prepared.pop(key, None)
                if prep is not None:
                    prep.live = False
                    self._unindex(key, prep)
                    dropped.append(prep)
        if dropped:
            self.device._sequences.forget_kept(dropped)
        self.device._sequences.forget_ops()  # recordings kept by op list may bind them too
        forget_recipes(self.device)  # NumPy recipes that submit them

    def transfer_op(self, key: tuple, make):
        """The transfer op (a copy, a barrier) cached under `key` (buffer serials and a kind), made by `make()`
        the first time: repeated NumPy calls record the same op objects (Sequences keeps them by op list)."""
        op = self._transfers.get(key)
        if op is None:
            op = make()
            if len(self._transfers) >= 256:
                self._transfers.clear()
            self._transfers[key] = op
        return op

    def copy_op(self, src, dst, nbytes: int, offset: int = 0):
        """A kp copy of `nbytes` from buffer src into dst at `offset` in both, made once per (src, dst, size,
        offset) while both live."""
        return self.transfer_op((src.serial, dst.serial, nbytes, offset),
                                lambda: kp().OpBufferCopy(src.kp, dst.kp, nbytes, offset, offset))

    def pin(self, keys, pins: list) -> None:
        """Keep these Algorithms out of the LRU's reach until `unpin(pins)` (a graph records them)."""
        with self.device._lock:
            for key in keys:
                self._pinned[key] += 1
            pins.extend(keys)

    def _algorithm(self, key, kernel, buffers, groups, spec, push_words):
        algo = self._algorithms.get(key)
        if algo is not None:
            self._algorithms.move_to_end(key)
            return algo
        algo = self._mgr.algorithm(
            [b.kp for b in buffers], self.spirv(kernel), list(groups),
            np.asarray(spec, dtype=np.uint32), np.zeros(push_words, dtype=np.uint32))
        self.algorithms_created += 1
        self._algorithms[key] = algo
        for b in buffers:
            self._by_serial[b.serial].add(key)
        over = len(self._algorithms) - len(self._pinned) - ALGORITHM_CACHE_SIZE  # pinned ones take no room
        if over > 0:
            self.device.synchronize()  # an eager call in flight may bind one of them
            evict = [k for k in self._algorithms if not self._pinned.get(k) and k != key][:over]
            self._drop_prepared(evict)  # recordings that bind the Algorithms destroyed here
            for old_key in evict:
                old = self._algorithms.pop(old_key)
                self._unlink(old_key)
                self._ops.pop(old_key, None)
                old.destroy()
        return algo

    def unpin(self, keys) -> None:
        """Let the LRU evict these Algorithms again (a graph was closed)."""
        with self.device._lock:
            for key in keys:
                self._pinned[key] -= 1
                if self._pinned[key] <= 0:
                    del self._pinned[key]

    def forget(self, serial: int) -> None:
        """Drop the Algorithms bound to a buffer that is being freed (and every prepared recording:
        some may bind them, and the serial is never seen again)."""
        keys = self._by_serial.pop(serial, ())
        if keys:
            self._drop_prepared(keys)
        self.forget_transfers()
        for key in keys:
            algo = self._algorithms.pop(key, None)
            self._ops.pop(key, None)
            if algo is not None:
                self._unlink(key)
                algo.destroy()

    def forget_transfers(self) -> None:
        """Drop the cached copies and barriers and the recordings kept by op list: a device or staging
        buffer is being freed (it may be one of theirs)."""
        if self._transfers:
            self._transfers.clear()
        self.device._sequences.forget_ops()

    def _unlink(self, key):
        for serial in key[-1]:
            keys = self._by_serial.get(serial)
            if keys is not None:
                keys.discard(key)

    @property
    def algorithm_count(self) -> int:
        return len(self._algorithms)

    # -- the cache file ----------------------------------------------------------------------- #
    def _load(self):
        path = self.cache_path
        if path is None or not path.exists():
            return
        try:
            raw = path.read_bytes()
        except OSError as e:
            warnings.warn(f"vkops: cannot read pipeline cache {path}: {e}", RuntimeWarning, stacklevel=2)
            return
        payload = raw[len(MAGIC) + 32:]
        why = None
        if raw[:len(MAGIC)] != MAGIC or hashlib.sha256(payload).digest() != raw[len(MAGIC):len(MAGIC) + 32]:
            why = "it is corrupt (bad magic or checksum)"
        else:
            bad = check_payload(payload, self.device.info)
            if bad:
                why = f"it is from another device or driver ({bad})"
        if why:
            warnings.warn(f"vkops: ignoring pipeline cache {path}: {why}", RuntimeWarning, stacklevel=2)
            return
        self._mgr.merge_pipeline_cache_data(payload)
        self.cache_loaded = len(payload)

    def save(self) -> Optional[Path]:
        """Write the device's pipeline cache when this process compiled something new (also at exit).
        Atomic: a concurrent process reads the old file or the new one."""
        path = self.cache_path
        if path is None or self._mgr is None or self.compiled == self._saved_at:
            return None
        try:
            payload = bytes(self._mgr.get_pipeline_cache_data())
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".pipelines-")
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except Exception as e:  # noqa: BLE001  (a cache that cannot be written costs speed, not results)
            warnings.warn(f"vkops: cannot write pipeline cache {path}: {e}", RuntimeWarning, stacklevel=2)
            return None
        self._saved_at = self.compiled
        return path

    # -- verdicts ----------------------------------------------------------------------------- #
    def remembered(self, name: str, kernels: Sequence[str], compute) -> bool:
        """A device-specific yes/no (a kernel self-check) kept beside the cache file, keyed by the
        driver (in the file name) and the SPIR-V of `kernels`, so a new process need not compute it
        again. Computed every time when the cache is off."""
        digest = hashlib.sha256(b"".join(self.spirv(k) for k in kernels)).hexdigest()[:16]
        key = f"{name}-{digest}"
        path = None if self.cache_path is None else self.cache_path.with_name(
            self.cache_path.name.replace("pipelines-", "verdicts-").replace(".bin", ".json"))
        data = _read_verdicts(path)
        if isinstance(data.get(key), bool):
            return data[key]
        verdict = bool(compute())
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with _locked(path.with_name(path.name + ".lock")):  # merge with what other processes wrote since
                    data = {**_read_verdicts(path), key: verdict}
                    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".verdicts-")
                    with os.fdopen(fd, "w") as f:
                        json.dump(data, f)
                    os.replace(tmp, path)  # readers see the whole old file or the whole new one
            except OSError as e:
                warnings.warn(f"vkops: cannot write {path}: {e}", RuntimeWarning, stacklevel=2)
        return verdict


def _read_verdicts(path: Optional[Path]) -> Dict[str, bool]:
    """The verdict file's entries; {} when absent, with a warning when it cannot be read or parsed."""
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        return data
    except (OSError, ValueError) as e:
        warnings.warn(f"vkops: ignoring verdict file {path}: {e}", RuntimeWarning, stacklevel=3)
        return {}


@contextlib.contextmanager
def _locked(lock_path: Path):
    """An exclusive advisory lock on `lock_path` (fcntl; none where fcntl is missing)."""
    try:
        import fcntl  # noqa: PLC0415
    except ImportError:
        yield
        return
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
