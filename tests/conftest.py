"""The whole suite runs under the Khronos validation layer; any message it logs fails the test.

The layer is configured through the environment before the first Vulkan instance exists, so this
runs at import time. Set VKOPS_NO_VALIDATION=1 to run without it (e.g. on a machine lacking it).
"""
import contextlib
import gc
import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests (tests/test_properties.py): "ci" by default, `--hypothesis-profile=long` for a long run.
_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
settings.register_profile("ci", max_examples=30, deadline=None, suppress_health_check=_QUIET)
settings.register_profile("long", max_examples=600, deadline=None, suppress_health_check=_QUIET)


def pytest_configure(config):
    if not config.getoption("hypothesis_profile", None):
        settings.load_profile("ci")

# lavapipe's compiled shaders (most of the suite's time: 10-50 s a TOP_K1 variant) stay in Mesa's disk cache
# between runs, one folder per LP_NATIVE_VECTOR_WIDTH: Mesa 22.3 does not key its cache by that width (a
# 4-lane compile was reused at 8 and 16 lanes), so a shared folder would test another width's code.
_cache_base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
os.environ.setdefault("MESA_SHADER_CACHE_DIR", str(
    _cache_base / "vkops-tests" / f"mesa-width-{os.environ.get('LP_NATIVE_VECTOR_WIDTH', 'native')}"))
Path(os.environ["MESA_SHADER_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)  # Mesa makes only the last folder
# vkops' own pipeline cache files go to a fresh directory, so no run reads another's.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="vkops-cache-")

_LOG = None
if not os.environ.get("VKOPS_NO_VALIDATION"):
    _dir = Path(tempfile.mkdtemp(prefix="vkops-vvl-"))
    _LOG = _dir / "validation.log"
    (_dir / "vk_layer_settings.txt").write_text(
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
        "khronos_validation.report_flags = error,warn\n"
        f"khronos_validation.log_filename = {_LOG}\n")
    os.environ["VK_INSTANCE_LAYERS"] = "VK_LAYER_KHRONOS_validation"
    os.environ["VK_LAYER_SETTINGS_PATH"] = str(_dir)


def _quiet_devices():
    """Wait for eager calls a test left in flight (their buffers return to the pool), so the next test
    starts from a quiet device and the layer's messages about them land in this test."""
    mod = sys.modules.get("vkops.runtime.device")
    if mod is not None:
        for d in list(mod.Device._instances.values()):
            d.synchronize()


def _log_size():
    return _LOG.stat().st_size if _LOG is not None and _LOG.exists() else 0


@pytest.fixture(autouse=True)
def no_validation_messages():
    before = _log_size()
    yield
    _quiet_devices()
    after = _log_size()
    if after > before:
        with open(_LOG, "rb") as f:
            f.seek(before)
            text = f.read(4000).decode(errors="replace")
        pytest.fail(f"Vulkan validation layer reported:\n{text}")


@pytest.fixture(autouse=True)
def no_recipes_left():
    """A test's NumPy recipes (runtime/recipe.py) hold buffers and kept sequences: dropped after it, so the next
    test's counts of allocations, Algorithms and kept sequences start from what it does itself."""
    yield
    from vkops.runtime import call

    d = call._default[1]
    if d is not None and d._recipes:
        d._recipes.clear()


@pytest.fixture(scope="session")
def dev():
    import vkops

    return vkops.Device()


@pytest.fixture
def submitted(monkeypatch):
    """The kp op type names of every submission, in order (runtime/submit.py's Sequences.submit spied on)."""
    from vkops.runtime import submit

    real, log = submit.Sequences.submit, []

    def spy(self, ops, timestamps=False, reuse=None):
        log.append([type(op).__name__ for op in ops])
        return real(self, ops, timestamps, reuse)

    monkeypatch.setattr(submit.Sequences, "submit", spy)
    return log


@pytest.fixture
def rng(request):
    import numpy as np

    import zlib

    # A reproducible stream per test (str hash() is salted per process, crc32 is not).
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# --------------------------------------------------------------------------------------------------
# CI legs (.ci/run; DEVELOPERS.md "Limits and CI legs"). $VKOPS_CI_LEG picks what a leg runs:
#   default (or unset)  every test;
#   limits              (with VKOPS_DEVICE_LIMITS=minimum) all but `host_only` tests;
#   subgroup            (with LP_NATIVE_VECTOR_WIDTH=128 or 512) all but `host_only` and `subgroup_free`.
# Unmarked tests run in every leg, so a new test leaves the extra legs only by being marked, and the audit
# below fails a marked test that does what its marker says it does not (in every leg; the first runs all).
#   host_only       nothing the device's limits or subgroup size decide: no kernel run and no plan for the
#                   device's limits in this process (validation errors raised before planning, argument
#                   parsing, ONNX graph parsing, plans for explicit Limits, the kp patch and its build, the
#                   manifest and SPIR-V reflection, docs, the install path).
#   subgroup_free   runs kernels, but none with subgroup operations, and neither it nor the planning of what
#                   it runs reads the device's subgroup size (SLICE1; QLinearMatMul's portable kernel for
#                   more rows than the B-streaming kernel's; TOP_K1 on paths that never consider ROWS,
#                   RSORT or shuffles). Subgroup sizes cannot change such a test.
LEGS = {
    "default": ((), None),
    "limits": (("host_only",), "VKOPS_DEVICE_LIMITS"),
    "subgroup": (("host_only", "subgroup_free"), "LP_NATIVE_VECTOR_WIDTH"),
}
# Files that cannot carry the marker themselves (tests/test_install.py: its own skip keeps it to the
# first leg; it installs into fresh venvs and plans nothing here).
HOST_ONLY_FILES = {"test_install.py"}


def pytest_itemcollected(item):
    if item.path.name in HOST_ONLY_FILES:
        item.add_marker(pytest.mark.host_only)


@pytest.hookimpl(trylast=True)  # after -k / -m, so an empty selection is always this hook's to name
def pytest_collection_modifyitems(config, items):
    leg = os.environ.get("VKOPS_CI_LEG") or "default"
    if leg not in LEGS:
        raise pytest.UsageError(f"VKOPS_CI_LEG must be one of {sorted(LEGS)}; got {leg!r}")
    drop, needs = LEGS[leg]
    if needs and not os.environ.get(needs):
        raise pytest.UsageError(f"VKOPS_CI_LEG={leg} runs what {needs} can change: set {needs} too")
    if not drop:
        return
    keep = [i for i in items if not any(i.get_closest_marker(m) for m in drop)]
    gone = [i for i in items if i not in keep] if len(keep) < len(items) else []
    if items and not keep:
        # An empty leg would end with pytest's exit 5 ("no tests collected"); say why instead.
        raise pytest.UsageError(f"VKOPS_CI_LEG={leg} deselects all {len(items)} tests collected "
                                f"(all marked {' or '.join(drop)})")
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep


# The markers' audit: what a test dispatched in this process, whether it planned for a device's limits, and
# whether it (or the planning of a plan it replayed) read a device's subgroup size. (Subprocesses are not
# seen: a test that runs vkops in one is marked by what it runs there.)
SUBGROUP_SIZE_FIELDS = frozenset(("subgroup_size", "min_subgroup_size", "max_subgroup_size"))
_SEEN = {"kernels": set(), "planned": set(), "sizes": False}
_READS = [0]  # subgroup-size reads so far (planning's included)


def _subgroup_kernels():
    """Kernels whose code depends on the subgroup size: those declaring GroupNonUniform capabilities.
    Cooperative-matrix kernels are left out: they need 32-lane subgroups and cooperative matrices, which
    lavapipe (the one device whose subgroup size a leg sets) never offers, so no subgroup leg runs them."""
    import json

    import vkops
    m = json.loads((Path(vkops.__file__).parent / "spv" / "manifest.json").read_text())["modules"]
    caps = {k: set(v.get("capabilities", ())) for k, v in m.items()}
    return {k for k, c in caps.items() if "GroupNonUniform" in c and "CooperativeMatrixKHR" not in c}


def _install_audit():
    import functools
    import threading
    import weakref

    from vkops.limits import Limits
    from vkops.plan import Builder
    from vkops.runtime.call import Call
    from vkops.runtime.device import Device
    from vkops.runtime.pipelines import Pipelines
    from vkops.runtime.plancache import PlanCache

    # Limits made from a device (Limits.of_info) carry a flag, and so does every copy made of them
    # (replace: within(), device_limits()); reading such a Limits' subgroup size is counted.
    def flagged(lim):
        return object.__getattribute__(lim, "__dict__").get("_ci_device", False)

    def flag(lim):
        object.__setattr__(lim, "_ci_device", True)
        return lim

    # Reads that decide nothing (comparing, hashing, copying, printing Limits) are not counted.
    quiet = [0]

    def uncounted(fn):
        @functools.wraps(fn)
        def run(*a, **k):
            quiet[0] += 1
            try:
                return fn(*a, **k)
            finally:
                quiet[0] -= 1
        return run

    of_info, replace = Limits.of_info.__func__, uncounted(Limits.replace)

    @functools.wraps(of_info)
    def audited_of_info(cls, info):
        return flag(of_info(cls, info))

    @functools.wraps(Limits.replace)
    def audited_replace(self, **changes):
        new = replace(self, **changes)
        return flag(new) if flagged(self) else new

    def audited_getattribute(self, name):
        if name in SUBGROUP_SIZE_FIELDS and not quiet[0] and flagged(self):
            _READS[0] += 1
            _SEEN["sizes"] = True
        return object.__getattribute__(self, name)

    Limits.of_info = classmethod(audited_of_info)
    Limits.replace = audited_replace
    for name in ("__eq__", "__hash__", "__repr__", "to_dict"):
        setattr(Limits, name, uncounted(getattr(Limits, name)))
    Limits.__getattribute__ = audited_getattribute
    size = Device.subgroup_size

    def audited_size(self):
        _READS[0] += 1
        _SEEN["sizes"] = True
        return size.fget(self)

    Device.subgroup_size = property(audited_size, doc=size.__doc__)

    dispatch_op = Pipelines.dispatch_op

    @functools.wraps(dispatch_op)
    def audited_dispatch_op(self, kernel, *a, **k):
        _SEEN["kernels"].add(kernel)
        return dispatch_op(self, kernel, *a, **k)

    Pipelines.dispatch_op = audited_dispatch_op
    init = Builder.__init__

    @functools.wraps(init)
    def audited_init(self, op, limits, *a, **k):
        if isinstance(limits, Limits) and flagged(limits):
            _SEEN["planned"].add(op)
        return init(self, op, limits, *a, **k)

    Builder.__init__ = audited_init

    # libvkops' planner (vkops.native, each operator's default plan) reads Limits in C, unseen: for a
    # device's Limits the Python planner (proven equal, tests/test_capi_*.py) plans too, so the reads and
    # the Builder that decide the markers are the same as without it; the C call itself is not counted.
    from vkops import native
    from vkops.errors import ValidationError
    native_plan = native.plan

    @functools.wraps(native_plan)
    def audited_native_plan(op, desc, limits):
        if isinstance(limits, Limits) and flagged(limits):
            from vkops.ops import qlmm, slice1, top_k1  # noqa: PLC0415
            python = {native.OP_SLICE1: slice1.python_plan, native.OP_TOP_K1: top_k1.python_plan,
                      native.OP_QLMM: qlmm.python_plan}[op]
            try:
                python(desc, limits)
            except ValidationError:
                pass
        quiet[0] += 1
        try:
            return native_plan(op, desc, limits)
        finally:
            quiet[0] -= 1

    native.plan = audited_native_plan

    # A plan a later call replays carries whether its planning read the subgroup size.
    sized = weakref.WeakKeyDictionary()
    local = threading.local()
    enter, exit_ = Call.__enter__, Call.__exit__

    @functools.wraps(enter)
    def audited_enter(self):
        local.__dict__.setdefault("stack", []).append(_READS[0])
        return enter(self)

    @functools.wraps(exit_)
    def audited_exit(self, *exc):
        try:
            return exit_(self, *exc)
        finally:
            local.stack.pop()

    put, get = PlanCache.put, PlanCache.get

    @functools.wraps(put)
    def audited_put(self, key, plan):
        stack = getattr(local, "stack", None)
        if stack and _READS[0] > stack[-1]:
            sized[plan] = True
        return put(self, key, plan)

    @functools.wraps(get)
    def audited_get(self, key):
        plan = get(self, key)
        if plan is not None and sized.get(plan):
            _SEEN["sizes"] = True
        return plan

    Call.__enter__, Call.__exit__ = audited_enter, audited_exit
    PlanCache.put, PlanCache.get = audited_put, audited_get


_install_audit()
_SUBGROUP_KERNELS = _subgroup_kernels()


def _on_lavapipe() -> bool:
    """subgroup_free is a fact about lavapipe, the device whose subgroup size the legs set: on a GPU the
    same call may plan a subgroup path (TOP_K1's ROWS), so the marker is checked where CI checks it."""
    if not _CPU:
        import vkops
        _CPU.append(vkops.devices()[int(os.environ.get("VKOPS_DEVICE", "0"))].device_type == "cpu")
    return _CPU[0]


_CPU = []


@pytest.fixture(autouse=True)
def ci_leg_markers_hold(request):
    _SEEN["kernels"].clear()
    _SEEN["planned"].clear()
    _SEEN["sizes"] = False
    yield
    kernels, planned = sorted(_SEEN["kernels"]), sorted(_SEEN["planned"])
    why = "its marker keeps it out of CI's extra legs (tests/conftest.py, LEGS): remove the marker"
    if request.node.get_closest_marker("host_only") and (kernels or planned):
        pytest.fail(f"marked host_only but ran kernels {kernels} / planned {planned} for the device; {why}")
    sub = sorted(set(kernels) & _SUBGROUP_KERNELS) + (["the device's subgroup size"] if _SEEN["sizes"] else [])
    if request.node.get_closest_marker("subgroup_free") and sub and _on_lavapipe():
        pytest.fail(f"marked subgroup_free but depends on the subgroup size through {sub}; {why}")


@contextlib.contextmanager
def device_memory(dev, kind: str, cached=None):
    """The device's buffers from another allocator inside the block: "storage" (device-local behind staging copies,
    as on a discrete GPU: lavapipe's own are host-visible) or "mapped" (device memory the host maps, as under
    resizable BAR); recipes dropped and the allocator's idle blocks freed on the way in and out."""
    from vkops.runtime.memory import Allocator

    dev.synchronize()
    dev._recipes.clear()
    saved = dev._memory
    dev._memory = Allocator(dev, kind, 64 << 20, dev._forget, cached=cached)
    try:
        yield dev
    finally:
        dev.synchronize()
        dev._recipes.clear()
        gc.collect()
        dev._memory.trim()
        dev._memory = saved
