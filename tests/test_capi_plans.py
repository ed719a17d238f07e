"""libvkops' planner against Python's: for dense grids and thousands of random shapes per operator, under the
H100's, lavapipe's and Vulkan 1.1's minimum limits, the C library's plan equals Python's plan (buffers,
dispatches, push words, specialization values, barriers, notes), and an invalid descriptor gets the same error
(status and message) from both. Needs build/libvkops (make libvkops)."""
import math
import random

import pytest

import capi
from plan_grid import LIMITS
from vkops.errors import DeviceLimitError, ValidationError
from vkops.ops.slice1 import python_plan as slice1_plan
from vkops.plan import Plan
from vkops.ops.slice1.desc import Slice1Desc
from vkops.tensor import TensorDesc

pytestmark = pytest.mark.host_only

TYPES = ["float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8"]


def same(op, desc, python_plan, limits, knobs=None):
    """Python's plan (or its error) and libvkops' agree: as dicts (to_dict()'s form, notes included) and as
    Plans (libvkops' read back by Plan.from_dict with Python's limits: notes' values and order too). knobs:
    libvkops plans under them (vkops_plan_json_tuned), as python_plan must."""
    c_plan = capi.plan if knobs is None else (lambda o, d, l: capi.plan_tuned(o, d, l, knobs))  # noqa: E731
    try:
        plan = python_plan(desc, limits)
    except ValidationError as e:
        status = -2 if isinstance(e, DeviceLimitError) else -1
        with pytest.raises(capi.CError) as got:
            c_plan(op, desc, limits)
        assert (got.value.status, got.value.message) == (status, str(e))
        return "error"
    want = plan.to_dict()
    got = c_plan(op, desc, limits)
    assert capi.comparable(got) == capi.comparable(want), f"{desc} under {limits.name}"
    assert Plan.from_dict(got, limits=limits) == plan, f"{desc} under {limits.name}: notes {got['notes']} vs {plan.notes}"
    return want["dispatches"][0]["kernel"]


def slice1_case(rng, dtype=None):
    n = rng.randint(1, 5)
    sizes = [rng.choice([1, 2, 3, 4, 7, 8, 16, 31, 64, 127, 256, 513]) for _ in range(n)]
    while math.prod(sizes) > 1 << 22:
        sizes[rng.randrange(n)] = rng.choice([1, 2, 3])
    strides = None
    if rng.random() < 0.3:
        strides = [rng.randint(0, 3) * rng.choice([1, 4, 64]) or 1 for _ in range(n)]
    inp = TensorDesc(dtype or rng.choice(TYPES), sizes, strides)
    offs, wins, steps, out = [], [], [], []
    for s in sizes:
        o = rng.randint(0, s - 1)
        w = rng.randint(1, s - o)
        st = rng.choice([1, 1, 1, 2, 3, -1, -2, 5])
        offs.append(o)
        wins.append(w)
        steps.append(st)
        out.append(1 + (w - 1) // abs(st))
    return Slice1Desc(inp, TensorDesc(inp.data_type, out), offs, wins, steps)


@pytest.mark.parametrize("limits", sorted(LIMITS))
def test_slice1_random(limits):
    rng = random.Random(1000 + sorted(LIMITS).index(limits))
    kernels = set()
    for _ in range(3000):
        kernels.add(same(capi.OP_SLICE1, slice1_case(rng), slice1_plan, LIMITS[limits]))
    assert {"slice1_b8", "slice1_b16", "slice1_b32"} <= kernels  # every variant was reached


@pytest.mark.parametrize("wg", [127, 128, 129, 255, 256, 257, 1023, 1024, 1025])
def test_slice1_rows_on_workgroup_boundaries(wg):
    # Rows of WG-1, WG, WG+1 elements (and 4x that) decide which of slice1.comp's loops runs.
    for limits in LIMITS.values():
        for dtype in ("float32", "float16", "int8"):
            for row in (wg, 4 * wg):
                inp = TensorDesc(dtype, (3, row + 2))
                for strides in ((1, 1), (1, -1), (2, 2)):
                    d = Slice1Desc(inp, TensorDesc(dtype, (2 if strides[0] == 2 else 3, 1 + (row - 1) // abs(strides[1]))),
                                   (0, 1), (3, row), strides)
                    same(capi.OP_SLICE1, d, slice1_plan, limits)


def test_slice1_errors_name_field_rule_values():
    inp = TensorDesc("float32", (4, 6))
    bad = [Slice1Desc(inp, TensorDesc("float32", (4, 6)), (0, 1), (4, 6), (1, 1)),    # window past the input
           Slice1Desc(inp, TensorDesc("float32", (4, 6)), (0, 0), (4, 6), (1, 0)),    # zero stride
           Slice1Desc(inp, TensorDesc("float16", (4, 6)), (0, 0), (4, 6), (1, 1)),    # output type
           Slice1Desc(inp, TensorDesc("float32", (4, 4)), (0, 0), (4, 6), (1, 2)),    # too many copied
           Slice1Desc(inp, TensorDesc("float32", (4,)), (0, 0), (4, 6), (1, 1)),      # rank
           Slice1Desc(inp, TensorDesc("float32", (4, 6), (1, 4)), (0, 0), (4, 6), (1, 1))]  # strided output
    for d in bad:
        with pytest.raises(ValidationError) as e:
            d.validate()
        st, msg = capi.validate(capi.OP_SLICE1, d)
        assert (st, msg) == (-1, str(e.value))
        assert same(capi.OP_SLICE1, d, lambda d, l: slice1_plan(d.validate(), l), LIMITS["h100"]) == "error"
    ok = Slice1Desc(inp, TensorDesc("float32", (4, 3)), (0, 0), (4, 6), (1, -2))
    assert capi.validate(capi.OP_SLICE1, ok) == (0, "")


def test_slice1_device_limit_is_its_own_status():
    # 2^27 bytes is Vulkan 1.1's maxStorageBufferRange: a larger input is valid by the spec, beyond the device.
    d = Slice1Desc(TensorDesc("float32", (1 << 25, 2)), TensorDesc("float32", (1, 1)), (0, 0), (1, 1), (1, 1))
    assert same(capi.OP_SLICE1, d, slice1_plan, LIMITS["minimum"]) == "error"


def test_shared_library_exports_the_c_api_only():
    # libvkops.so exports every function of the header and nothing else (libvkops/vkops.map): its C++
    # internals cannot clash with a host's.
    import re
    import subprocess
    out = subprocess.run(["nm", "-D", "--defined-only", str(capi.LIB)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    header = (capi.ROOT / "libvkops/include/vkops.h").read_text()
    api = set(re.findall(r"VKOPS_API [^;]*?\b(vkops_\w+)\(", header))
    assert len(api) >= 15 and api <= {n.split("@")[0] for n in names}
    assert {n.split("@")[0] for n in names if not n.startswith("VKOPS_")} == api
