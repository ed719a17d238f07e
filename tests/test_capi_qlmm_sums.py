"""libvkops' QUANTIZED_LINEAR_MATRIX_MULTIPLY planner against Python's with the stream kernel's split-K sums on
(QlmmTuning.STREAM_SUMS, a target and a floor of steps other than the defaults): the C API plans only with the
tuning its header was generated with, so this compares a second build whose defaults are this tuning:

    VKOPS_GEN_TUNING='{"QlmmTuning": {"STREAM_SUMS": true, "STREAM_SUMS_TARGET": 700, "STREAM_SUMS_MIN_STEPS": 2}}' \\
        make -s libvkops LV=build/libvkops-sums

($VKOPS_LIBVKOPS_SUMS names another path; skipped where neither exists). Random shapes under the H100-like
limits and the odd ones, and the sums' thresholds (tiles around the target, K around the steps floor) +-1."""
import json
import os
import random

import pytest

import capi
from plan_grid import LIMITS
from test_capi_plans import same
from test_capi_qlmm import ODD, Record, around, make, random_case
from vkops import native
from vkops.ops import qlmm
from vkops.ops.qlmm import stream as QS
from vkops.ops.qlmm.tuning import DEFAULT

pytestmark = pytest.mark.host_only

KNOBS = {"STREAM_SUMS": True, "STREAM_SUMS_TARGET": 700, "STREAM_SUMS_MIN_STEPS": 2}
TUNING = DEFAULT.replace(**KNOBS)
LIB = os.environ.get("VKOPS_LIBVKOPS_SUMS", str(capi.ROOT / "build/libvkops-sums/libvkops.so"))
BUILD = (f"VKOPS_GEN_TUNING='{json.dumps({'QlmmTuning': KNOBS})}' make -s libvkops LV=build/libvkops-sums")
OP = capi.OP_QLMM


@pytest.fixture(scope="module", autouse=True)
def sums_lib():
    if not os.path.exists(LIB):
        pytest.skip(f"no {LIB}: build it with {BUILD}")
    saved = capi._lib
    capi._lib = native.load(LIB)
    try:
        yield
    finally:
        capi._lib = saved


class SumsRecord(Record):
    def __call__(self, desc, limits):
        p = qlmm.python_plan(desc.validate(), limits, tuning=TUNING)
        self.kernels[p.dispatches[-1].kernel] += 1
        self.kernels["kernel=" + p.note("kernel")] += 1
        return p


def test_the_build_has_the_knobs():
    """The library was generated with KNOBS (not the defaults): 16 x 4096^2 splits toward 700 workgroups, 4
    of its 64 steps a split at most (8 subgroups keeping 2 steps each): 512 workgroups."""
    got = capi.plan(OP, make(16, 4096, 4096), LIMITS["h100"])
    last = got["dispatches"][-1]
    assert last["kernel"] == "qlmm_stream_m16n32p2_sums", f"{LIB} is not built with {KNOBS}: {BUILD}"
    assert list(last["groups"]) == [128 * 4, 1, 1]


def test_random_shapes():
    rng, rec = random.Random(4242), SumsRecord()
    for lim in [LIMITS["h100"]] * 4 + ODD:
        for _ in range(400):
            same(OP, random_case(rng), rec, lim)
    assert any(k.endswith("_sums") for k in rec.kernels), rec.kernels
    assert "kernel=gemv" in rec.kernels and "kernel=coopmat" in rec.kernels


def test_sums_thresholds():
    rec = SumsRecord()
    lim = LIMITS["h100"]
    T = TUNING
    for nr in QS.TILES:
        # tiles around the target (one split more or less), and K around the steps each subgroup keeps
        for tiles in around(T.STREAM_SUMS_TARGET // 2, T.STREAM_SUMS_TARGET // 3, T.STREAM_SUMS_TARGET,
                            T.STREAM_WAVE, T.STREAM_TARGET_GROUPS):
            for M in (1, 2, 15, 16):
                same(OP, make(M, 2048, 16 * max(1, nr * tiles // 16)), rec, lim)
        sgs = T.STREAM_WG // QS.LANES
        for k_steps in around(sgs * T.STREAM_SUMS_MIN_STEPS, 2 * sgs * T.STREAM_SUMS_MIN_STEPS, 17 * sgs):
            for N in (256, 4096):
                for kw in (dict(), dict(adt="uint8", za="tensor", zb="column"), dict(b_st=None, bdt="uint8")):
                    same(OP, make(7, 16 * max(1, k_steps * QS.step_k(nr) // 16), N, **kw), rec, lim)
    assert sum(v for k, v in rec.kernels.items() if k.endswith("_sums")) > 50, rec.kernels
