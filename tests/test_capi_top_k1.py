"""libvkops' TOP_K1 planner against Python's (vkops/ops/top_k1, default path and tuning): every case of the
recorded plan grid (tests/top_k1_plan_grid.py, under each group's limits; its forced-path and switch groups
compared by their descriptors' default plans), thousands of random shapes per limit set, rows on the workgroup
and buffer boundaries with K on pow2(K) boundaries, and each rule of TopK1Desc.validate with the same status
and message. Needs build/libvkops (make libvkops)."""
import math
import random

import pytest

import capi
import top_k1_plan_grid as grid
from plan_grid import LIMITS
from test_capi_plans import TYPES, same
from vkops.errors import ValidationError
from vkops.ops import top_k1
from vkops.ops.top_k1 import AxisDirection, TopK1Desc
from vkops.ops.top_k1.tuning import DEFAULT as TUN
from vkops.tensor import TensorDesc

pytestmark = pytest.mark.host_only

PATHS = {"rows", "rsort", "seg", "radix", "filter", "sort", "gradix"}
# GRADIX's rule at any K, as the research A/B routes it (32-bit keys by the long rows' K since session 29)
ANY_K = {"GRADIX_MIN_K": 1, "GRADIX_LONG_MIN_K": 1}


class Python:
    """Python's plan of a validated descriptor (the C side validates too), noting the paths it took."""

    def __init__(self):
        self.paths = set()

    def __call__(self, desc, limits):
        p = top_k1.python_plan(desc.validate(), limits)
        self.paths.add(p.note("path"))
        return p


def desc(dtype, sizes, axis, k, direction=AxisDirection.DECREASING, strides=None):
    o = tuple(k if i == axis else s for i, s in enumerate(sizes))
    return TopK1Desc(TensorDesc(dtype, sizes, strides), TensorDesc(dtype, o), TensorDesc("uint32", o), axis, k, direction)


def check(d, limits, py):
    return same(capi.OP_TOP_K1, d, py, limits)


def test_plan_grid_every_group():
    # The recorded grid's groups under their own limits; forced-path and switch groups (no C face: libvkops
    # plans the default path) by their descriptors' default plans, once each.
    py, n, groups = Python(), 0, 0
    for name, cases in grid.groups():
        seen = set()
        for _, lim, d, kw in cases:
            if kw and d in seen:
                continue
            seen.add(d)
            check(d, lim, py)
            n += 1
        groups += 1
        assert cases, name
    assert groups > 250 and n > 25000  # 291 groups, 28842 plans when written
    assert py.paths == PATHS


def ksample(rng, L):
    """K from 1 to L: powers of two and their neighbours, K near L, small and random K."""
    p = 1 << rng.randrange(L.bit_length())
    k = rng.choice([1, 2, rng.randint(1, L), rng.randint(1, min(L, 300)), p, p - 1, p + 1, L, L - 1, L - 2,
                    min(L, 50), min(L, 1024)])
    return max(1, min(L, k))


def random_case(rng):
    n = rng.randint(1, 5)
    axis = rng.randrange(n)
    L = rng.choice([int(math.exp(rng.uniform(0, math.log(300000)))),
                    rng.choice([1, 7, 100, 128, 512, 513, 1600, 1601, 2048, 2049, 4096, 4097, 32000, 151936, 262145])])
    rows = int(math.exp(rng.uniform(0, math.log(1 << 17))))
    rows = max(1, min(rows, (1 << 27) // L))
    sizes = []
    for i in range(n):
        if i == axis:
            sizes.append(L)
        else:
            s = rng.choice([1, rng.randint(1, 8), int(math.exp(rng.uniform(0, math.log(max(rows, 1) + 1))))])
            s = max(1, min(s, rows))
            rows = max(1, rows // s)
            sizes.append(s)
    strides = None
    if rng.random() < 0.35:
        kind = rng.random()
        if kind < 0.4:  # a view of a padded tensor
            padded = [s + rng.choice([0, 0, 1, 3, 8]) for s in sizes]
            strides = [1] * n
            for i in range(n - 2, -1, -1):
                strides[i] = strides[i + 1] * padded[i + 1]
        elif kind < 0.7:  # permuted dimensions (a transposed view)
            order = list(range(n))
            rng.shuffle(order)
            acc, strides = 1, [0] * n
            for i in reversed(order):
                strides[i] = acc
                acc *= sizes[i]
        else:  # broadcasts and steps
            strides = [rng.choice([0, 1, 2, 3, 5, 64, 4096]) for _ in range(n)]
        if math.prod(sizes) == 0 or 1 + sum((s - 1) * t for s, t in zip(sizes, strides)) > 2**32 - 1:
            strides = None
    direction = rng.choice([AxisDirection.DECREASING, AxisDirection.INCREASING])
    return desc(rng.choice(TYPES), tuple(sizes), axis, ksample(rng, L), direction, strides)


@pytest.mark.parametrize("limits", sorted(LIMITS))
def test_random(limits):
    rng = random.Random(2000 + sorted(LIMITS).index(limits))
    py, kinds = Python(), []
    for _ in range(3000):
        kinds.append(check(random_case(rng), LIMITS[limits], py))
    assert kinds.count("error") < 300
    want = {"seg", "radix", "filter", "sort"} | ({"rows", "rsort"} if limits != "minimum" else set())
    assert py.paths >= want, py.paths  # every path the device can run was reached


@pytest.mark.parametrize("wg", [128, 256, 512, 1024, 2048, 4096])
def test_workgroup_and_kp_boundaries(wg):
    # Rows of WG-1, WG, WG+1 (and K on pow2(K) boundaries) decide G, P, B, chunking and the path.
    py = Python()
    for lim in LIMITS.values():
        for L in (wg - 1, wg, wg + 1):
            ks = sorted({k for j in range(L.bit_length() + 1) for k in ((1 << j) - 1, 1 << j, (1 << j) + 1)
                         if 1 <= k <= L} | {L - 1, L} - {0})
            for n_seq in (1, 64, 1024):
                for dt in ("float32", "float16", "uint8"):
                    for k in ks:
                        check(desc(dt, (n_seq, L), 1, k), lim, py)
    want = {"rows"} | ({"seg"} if wg <= 2048 else set()) | ({"radix"} if wg >= 512 else set()) | ({"filter", "sort"} if wg >= 1024 else set())
    assert py.paths >= want, py.paths


def test_gradix_rule_thresholds():
    # GRADIX's rule row on both sides of each threshold (rows GRADIX_FEW_SEQ / + 1, rows of GRADIX_FEW_MIN_L - 1 / it
    # and GRADIX_MIN_L - 1 / it, K of GRADIX_MIN_K - 1 / it, pow2(K) GRADIX_MIN_KP / 2 / it), with many rows (its
    # chunks and the sort's workgroup), other key widths, INCREASING and a strided axis, under each limit set: the
    # random shapes above rarely land there.
    t, py = TUN, Python()
    rows = (1, t.GRADIX_RANK_MAX_SEQ, t.GRADIX_RANK_MAX_SEQ + 1, t.GRADIX_FEW_SEQ, t.GRADIX_FEW_SEQ + 1, 64, 300)
    lengths = (t.GRADIX_MIN_L - 1, t.GRADIX_MIN_L, t.GRADIX_FEW_MIN_L - 1, t.GRADIX_FEW_MIN_L, t.GRADIX_LONG_MIN_L - 1,
               t.GRADIX_LONG_MIN_L, 151936)
    ks = (t.GRADIX_MIN_KP // 2, t.GRADIX_MIN_KP // 2 + 1, t.GRADIX_MIN_KP, t.GRADIX_MIN_K - 1, t.GRADIX_MIN_K,
          2 * t.GRADIX_MIN_KP, 2 * t.GRADIX_MIN_KP + 1, t.GRADIX_LONG_MIN_K - 1, t.GRADIX_LONG_MIN_K,
          t.GRADIX_LONG_MIN_K16 - 1, t.GRADIX_LONG_MIN_K16, t.GRADIX_MIN_KP16 // 2, t.GRADIX_MIN_KP16 // 2 + 1,
          t.GRADIX_RANK_MIN_KP // 2, t.GRADIX_RANK_MIN_KP // 2 + 1)
    per_limits = {}
    for name, lim in sorted(LIMITS.items()):
        py.paths = set()
        for n in rows:
            for L in lengths:
                for k in ks:
                    check(desc("float32", (n, L), 1, k), lim, py)
                    check(desc("uint8", (n, L), 1, k, AxisDirection.INCREASING), lim, py)
                    check(desc("float16", (L, n), 0, k), lim, py)  # the axis strided by n
        per_limits[name] = py.paths
    assert "gradix" in per_limits["h100"] and "gradix" in per_limits["lavapipe"], per_limits
    assert all(len(p) > 1 for p in per_limits.values()), per_limits  # both sides of the thresholds


def _same_plans_tuned(knobs, shapes, ks):
    """libvkops' plan under `knobs` (vkops_plan_json_tuned) against Python's, byte for byte: every key width, both
    directions, a strided axis, every limit set (a refusal: the same message); returns the kernels planned."""
    from vkops.plan import Plan
    tun = TUN.replace(**knobs)
    kinds = set()
    for name, lim in sorted(LIMITS.items()):
        for n, L in shapes:
            for k in ks:
                for d in (desc("float32", (n, L), 1, k), desc("float16", (n, L), 1, k, AxisDirection.INCREASING),
                          desc("int32", (L, n), 0, k), desc("uint8", (n, L), 1, k)):
                    try:
                        want = top_k1.python_plan(d.validate(), lim, tuning=tun)
                    except ValidationError as e:
                        with pytest.raises(capi.CError) as got:
                            capi.plan_tuned(capi.OP_TOP_K1, d, lim, knobs)
                        assert got.value.message == str(e)
                        continue
                    got = capi.plan_tuned(capi.OP_TOP_K1, d, lim, knobs)
                    assert capi.comparable(got) == capi.comparable(want.to_dict()), (d, name, knobs)
                    assert Plan.from_dict(got, limits=lim) == want
                    kinds |= {x.kernel.rsplit("_", 1)[0] for x in want.dispatches}
    return kinds


def test_radix_sort_wg_and_gradix_thresholds():
    # RADIX_SORT_WG (a radix sort of more than 4 entries a thread grows the workgroup; the knob at the workgroup: off,
    # and workgroups of 256 that make lavapipe's 2048-entry sorts grow) and GRADIX's session-29 thresholds (K =
    # GRADIX_LONG_MIN_K16 / _K - 1 / it, 8/16-bit keys only from GRADIX_MIN_K, rows past LARGE_K_ONE_CHUNK_MAX_L that
    # radix select cannot take), with the sampled guess's 2048 / 4096 edge (K = 1050 / 1051), byte for byte.
    t = TUN
    shapes = ((64, 32000), (3, 9000), (64, 131072), (64, 151936), (2, 1 << 17), (64, t.LARGE_K_ONE_CHUNK_MAX_L + 1))
    ks = (1024, 1025, 1050, 1051, 1500, 2048, 2049, t.GRADIX_LONG_MIN_K16 - 1, t.GRADIX_LONG_MIN_K16, 3000,
          t.GRADIX_MIN_K - 1, t.GRADIX_MIN_K, t.GRADIX_LONG_MIN_K - 1, t.GRADIX_LONG_MIN_K, 4096)
    for knobs in ({}, {"RADIX_SORT_WG": 512}, {"WORKGROUP": 256}, {"WORKGROUP": 256, "RADIX_SORT_WG": 256}):
        kinds = _same_plans_tuned(knobs, shapes, ks)
        assert {"top_k1_radix_m_sg", "top_k1_gradix_collect"} <= kinds, (knobs, kinds)


def test_packed_radix_thresholds():
    # 16-bit keys from K = GRADIX_MIN_K stay with radix select on GRADIX_MIN_K16_RADIX_MIN_SEQ.._MAX_SEQ rows of <=
    # GRADIX_MIN_K16_RADIX_MAX_L up to pow2(K) = _MAX_KP (session 49): rows, lengths and pow2(K) on both sides of each,
    # the knob off (0) and its bounds moved, byte for byte.
    t = TUN
    lo, hi, ml = t.GRADIX_MIN_K16_RADIX_MIN_SEQ, t.GRADIX_MIN_K16_RADIX_MAX_SEQ, t.GRADIX_MIN_K16_RADIX_MAX_L
    shapes = ((lo - 1, ml), (lo, ml), (hi, ml), (hi + 1, ml), (64, ml + 1), (64, 20000))
    ks = (t.GRADIX_MIN_K - 1, t.GRADIX_MIN_K, t.GRADIX_MIN_K16_RADIX_MAX_KP, t.GRADIX_MIN_K16_RADIX_MAX_KP + 1)
    for knobs in ({}, {"GRADIX_MIN_K16_RADIX_MAX_L": 0}, {"GRADIX_MIN_K16_RADIX_MIN_SEQ": 1},
                  {"GRADIX_MIN_K16_RADIX_MAX_SEQ": 64, "GRADIX_MIN_K16_RADIX_MAX_KP": 8192}):
        kinds = _same_plans_tuned(knobs, shapes, ks)
        assert "top_k1_radix_m_sg" in kinds and any(x.startswith("top_k1_gradix") for x in kinds), (knobs, kinds)


def test_radix_short_fit_thresholds():
    # RADIX_SHORT_FIT: many rows on both sides of RADIX_SHORT_ROWS_MIN_L and 4 max(Kp, 512), pow2(K) on both sides of
    # RADIX_ONE_CHUNK_WG_MAX_KP and of RADIX_SHORT_FIT_RSORT_KP / _KP16 (RSORT's rows), the knob off and the bounds moved;
    # RSORT_MAX_L8 (8-bit keys' RSORT on rows of 2049-4096) at its value and off; RSORT_FOR_SORT (pow2(K) = 4096 on
    # rows of 2049-4096: RSORT instead of the global sort) on and off; SHUF_SHORT_FIT_MIN_KP (the short fit's rows on
    # the register networks from pow2(K) = 512) at its value, as SHUF_MIN_KP, and both lowered
    t = TUN
    n = t.RADIX_ONE_CHUNK_WG_MIN_SEQ
    shapes = ((n - 1, 4096), (n, t.RADIX_SHORT_ROWS_MIN_L - 1), (n, t.RADIX_SHORT_ROWS_MIN_L), (n, 2048), (n, 2049),
              (n, 4096), (n, 4097), (n, 8192))
    ks = (t.RADIX_ONE_CHUNK_WG_MAX_KP, t.RADIX_ONE_CHUNK_WG_MAX_KP + 1, 513, 1024, 1025, 2048, 2049, 4096)
    for knobs in ({}, {"RADIX_SHORT_FIT": False}, {"RADIX_SHORT_FIT_RSORT_KP": 512, "RADIX_SHORT_FIT_RSORT_KP16": 512},
                  {"RSORT_MAX_L8": 2048}, {"RSORT_FOR_SORT": False}, {"SHUF_SHORT_FIT_MIN_KP": 1024},
                  {"SHUF_SHORT_FIT_MIN_KP": 256, "SHUF_MIN_KP": 512}):
        kinds = _same_plans_tuned(knobs, shapes, ks)
        assert {"top_k1_radix_s_sg", "top_k1_rsort"} <= kinds, (knobs, kinds)


def test_radix_short_build_knobs():
    # RADIX_SHORT_BUILD (the slim top_k1_radix_s[_sg] builds: one radix chunk of <= 4 B keys, no TUNE_* bit, on the
    # register networks or on at most RADIX_SHORT_BUILD_MAX_SEQ rows): on, off, and the plain networks' bound at 0 and
    # past many rows; rows of 4 B +- 1 of the short fit's buffers, few and many rows, K on both sides of the networks.
    n = TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ
    shapes = ((2, 4096), (8, 2048), (n - 1, 4096), (n, 2048), (n, 4096), (n, 4097), (8192, 1601), (64, 32000))
    ks = (32, 300, 513, 1024)
    on = _same_plans_tuned({}, shapes, ks)
    assert {"top_k1_radix_s", "top_k1_radix_s_sg", "top_k1_radix", "top_k1_radix_m_sg"} <= on, on
    off = _same_plans_tuned({"RADIX_SHORT_BUILD": False}, shapes, ks)
    assert {"top_k1_radix", "top_k1_radix_sg"} <= off and not {"top_k1_radix_s", "top_k1_radix_s_sg"} & off, off
    plain0 = _same_plans_tuned({"RADIX_SHORT_BUILD_MAX_SEQ": 0}, shapes, ks)
    assert "top_k1_radix_s_sg" in plain0 and "top_k1_radix_s" not in plain0, plain0
    assert "top_k1_radix_s" in _same_plans_tuned({"RADIX_SHORT_BUILD_MAX_SEQ": 100000}, ((8192, 1601),), (32,))


def test_gradix_filter_knob():
    # GRADIX with filtering (TopK1Tuning.GRADIX_FILTER), routed to 64 rows at any K from 256 as the research A/B
    # does it; an unknown knob is refused.
    kinds = _same_plans_tuned({"GRADIX_FILTER": True, "GRADIX_MIN_KP": 256, **ANY_K},
                              ((1, 151936), (64, 131072), (64, 151936), (3, 40001)), (256, 1024, 2048, 3000, 4096))
    assert {"top_k1_gradix_fscan", "top_k1_gradix_fhist", "top_k1_gradix_fcollect", "top_k1_gradix_collect"} <= kinds
    with pytest.raises(capi.CError, match="no TOP_K1 knob"):
        capi.plan_tuned(capi.OP_TOP_K1, desc("float32", (1, 4096), 1, 8), LIMITS["h100"], {"NO_SUCH": 1})


def test_radix_mask_knob():
    # radix select by bit masks (TopK1Tuning.RADIX_MASK): the top_k1_radix_m[_sg] modules for 16/32-bit keys, the
    # old ones for 8-bit keys, the plans otherwise the same.
    kinds = _same_plans_tuned({"RADIX_MASK": True}, ((64, 131072), (64, 32000), (4096, 4096), (3, 40001), (8, 4096),
                                                     (8, 4097)), (50, 256, 1024, 2048))
    assert {"top_k1_radix_m", "top_k1_radix_m_sg", "top_k1_radix", "top_k1_radix_sg"} <= kinds
    off = _same_plans_tuned({"RADIX_MASK": False}, ((64, 131072), (4096, 4096)), (256, 1024))  # off: the old ones only
    assert {"top_k1_radix", "top_k1_radix_sg"} <= off and not {"top_k1_radix_m", "top_k1_radix_m_sg"} & off


def test_radix_fit_thresholds():
    # TUNE_FIT (tune_bits): one radix chunk a row of 4 B + 1 to 2^15 - 1 keys from pow2(K) = RADIX_FIT_MIN_KP, by the
    # default knob and lowered to 512 (every limit set's radix chunks then reach it), rows of 4 B +- 1 and 2^15 +- 1
    # of the H100's doubled buffer (4096) and of lavapipe's, few and many rows, K up to pow2(K) - RADIX_FIT_MIN_SLACK
    # and past it (8 and 3); the push word `tune` compared.
    shapes = ((64, 32000), (2, 16384), (2, 16385), (3, 8193), (3, 32767), (3, 32768), (1024, 20000))
    ks = (256, 257, 504, 505, 512, 513, 1016, 1017, 1024, 1025, 2040, 2041, 2048)
    kinds = _same_plans_tuned({}, shapes, ks) | _same_plans_tuned({"RADIX_FIT_MIN_KP": 512}, shapes, ks)
    kinds |= _same_plans_tuned({"RADIX_FIT_MIN_KP": 512, "RADIX_FIT_MIN_SLACK": 3}, shapes, ks)
    assert {"top_k1_radix_m_sg", "top_k1_radix_m"} & kinds, kinds


def test_many_rows_chunk_cap_thresholds():
    # the many-rows chunk cap (paths.Facts.filter) on both sides of WAVE_MIN_SEQ / WAVE_MAX_SEQ rows, WAVE_MAX_L and
    # pow2(K) = WAVE_MAX_KP, few rows (32 x 151936 at K=1024) and capped ones (48-64 rows at K = 512-1024)
    shapes = ((31, 151936), (32, 151936), (48, 151936), (64, 151936), (256, 151936), (257, 151936), (64, 262144),
              (64, 262145))
    kinds = _same_plans_tuned({}, shapes, (256, 257, 512, 1024))
    assert {"top_k1_radix_m_sg", "top_k1_radix_m"} & kinds, kinds


def test_gradix_rank_knob():
    # GRADIX's rank sort for few rows (TopK1Tuning.GRADIX_RANK_MAX_SEQ, with its tile knobs, with and without
    # GRADIX_FILTER), rows at and past the knob.
    kinds = set()
    for knobs in ({"GRADIX_RANK_MAX_SEQ": 4}, {"GRADIX_RANK_MAX_SEQ": 16, "GRADIX_RANK_E": 1, "GRADIX_RANK_TJ": 128},
                  {"GRADIX_RANK_MAX_SEQ": 64, "GRADIX_RANK_E": 4, "GRADIX_FILTER": True, **ANY_K}):
        kinds |= _same_plans_tuned(knobs, ((1, 151936), (4, 131072), (5, 131072), (16, 131072), (64, 131072),
                                           (3, 40001)), (1, 1500, 2048, 3000, 4096))
    assert {"top_k1_gradix_rank", "top_k1_gradix_fscan", "top_k1_gradix_sort_sg"} <= kinds


def test_gradix_sort_parts_knob():
    # GRADIX's sort in parts (TopK1Tuning.GRADIX_SORT_PARTS: gradix_psort, then gradix_pmerge), with the rank sort on
    # few rows and filtering beside it, K from one part (pow2(K) < 2 GRADIX_SORT_MIN_RUN) to beyond one workgroup's
    # sort on the small-shared-memory limit sets, and routed to 64 rows at any K from 256.
    kinds = set()
    # The default's bounds moved: parts from pow2(K) = 256 on up to 4 rows; 1000 target groups past 4 rows.
    for knobs in ({"GRADIX_SORT_PARTS": 1}, {"GRADIX_SORT_PARTS": 8, "GRADIX_RANK_MAX_SEQ": 4},
                  {"GRADIX_SORT_PARTS": 64, "GRADIX_FILTER": True, "GRADIX_MIN_KP": 256, **ANY_K,
                   "GRADIX_SORT_PARTS_MIN_KP": 256},
                  {"GRADIX_SORT_PARTS_MIN_KP": 256, "GRADIX_SORT_PARTS_MAX_SEQ": 4, "GRADIX_FEW_SEQ": 4,
                   "GRADIX_MANY_TARGET_GROUPS": 1000}):
        kinds |= _same_plans_tuned(knobs, ((1, 151936), (4, 131072), (5, 131072), (16, 131072), (64, 131072),
                                           (65, 131072), (3, 40001)), (1, 200, 1500, 2048, 3000, 4096, 8192))
    assert {"top_k1_gradix_psort", "top_k1_gradix_psort_sg", "top_k1_gradix_pmerge", "top_k1_gradix_rank",
            "top_k1_gradix_fscan"} <= kinds


def test_gradix_digit_bits_knob():
    # GRADIX by 11-bit digits (TopK1Tuning.GRADIX_DIGIT_BITS = 11): the _d11 modules for 32-bit keys (3 passes, larger
    # counters and ties), 8-bit digits for 16/8-bit keys and under GRADIX_FILTER; the rule's thresholds (as
    # test_gradix_rule_thresholds) and every sort that follows (one workgroup, in parts, the rank sort).
    t = TUN
    rows = (1, t.GRADIX_FEW_SEQ, t.GRADIX_FEW_SEQ + 1, 64, 300)
    lengths = (t.GRADIX_MIN_L - 1, t.GRADIX_MIN_L, t.GRADIX_FEW_MIN_L, t.GRADIX_LONG_MIN_L - 1, 151936)
    ks = (t.GRADIX_MIN_KP // 2 + 1, t.GRADIX_MIN_KP, t.GRADIX_MIN_K - 1, t.GRADIX_MIN_K, 2 * t.GRADIX_MIN_KP + 1,
          t.GRADIX_LONG_MIN_K - 1, t.GRADIX_LONG_MIN_K, t.GRADIX_LONG_MIN_K16)
    kinds = _same_plans_tuned({"GRADIX_DIGIT_BITS": 11}, [(n, L) for n in rows for L in lengths], ks)
    kinds |= _same_plans_tuned({"GRADIX_DIGIT_BITS": 8}, [(n, L) for n in rows for L in lengths], ks)
    for knobs in ({"GRADIX_DIGIT_BITS": 11, "GRADIX_MIN_KP": 256, **ANY_K, "GRADIX_SORT_PARTS_MIN_KP": 256},
                  {"GRADIX_DIGIT_BITS": 11, "GRADIX_RANK_MAX_SEQ": 4, "GRADIX_SORT_PARTS": 8},
                  {"GRADIX_DIGIT_BITS": 11, "GRADIX_FILTER": True, "GRADIX_MIN_KP": 256, **ANY_K}):
        kinds |= _same_plans_tuned(knobs, ((1, 151936), (4, 131072), (5, 131072), (64, 131072), (3, 40001)),
                                   (1, 200, 1500, 2048, 3000, 4096))
    assert {"top_k1_gradix_hist_d11", "top_k1_gradix_collect_d11", "top_k1_gradix_rank_d11", "top_k1_gradix_sort_d11_sg",
            "top_k1_gradix_psort_d11_sg", "top_k1_gradix_pmerge_d11", "top_k1_gradix_hist", "top_k1_gradix_fscan",
            "top_k1_gradix_collect", "top_k1_gradix_sort_sg"} <= kinds


def test_gradix_bracket_knobs():
    # GRADIX's sampled bracket (TopK1Tuning.GRADIX_BRACKET, sizing.gradix_bracket_cap): rows on both sides of
    # GRADIX_BRACKET_MIN_L, GRADIX_LONG_MIN_L, the rank sort's, GRADIX_BRACKET_LONG_MAX_SEQ, _MANY_MIN_SEQ and _MAX_SEQ
    # rows, K on both sides of GRADIX_BRACKET_LONG_MIN_K and _MANY_MIN_K, the expected candidates on both sides of the
    # cap (214000 / 215000 at K = 4096 on an H100; a cap knob), 16-bit keys by GRADIX_BRACKET_MIN_L16 and
    # GRADIX_BRACKET_MIN_SEQ16 and, on rows shorter than GRADIX_BRACKET_SHORT_L16, GRADIX_BRACKET_SHORT_MAX_SEQ16 (both
    # sides of each), 8-bit digits, the knob off; every limit set, byte for byte.
    t = TUN
    shapes = ((t.GRADIX_RANK_MAX_SEQ, 131072), (t.GRADIX_RANK_MAX_SEQ + 1, 131072), (64, t.GRADIX_BRACKET_MIN_L - 1),
              (64, t.GRADIX_BRACKET_MIN_L), (64, t.GRADIX_LONG_MIN_L - 1), (64, t.GRADIX_LONG_MIN_L),
              (t.GRADIX_BRACKET_LONG_MAX_SEQ, 131072), (t.GRADIX_BRACKET_LONG_MAX_SEQ + 1, 131072),
              (t.GRADIX_BRACKET_MANY_MIN_SEQ - 1, 131072), (t.GRADIX_BRACKET_MANY_MIN_SEQ, 131072),
              (t.GRADIX_BRACKET_MAX_SEQ, 131072), (t.GRADIX_BRACKET_MAX_SEQ + 1, 131072), (8, 214000), (8, 215000),
              (t.GRADIX_BRACKET_MIN_SEQ16 - 1, 131072), (t.GRADIX_BRACKET_MIN_SEQ16, 131072),
              (64, t.GRADIX_BRACKET_MIN_L16 - 1), (64, t.GRADIX_BRACKET_MIN_L16),
              (t.GRADIX_BRACKET_SHORT_MAX_SEQ16, t.GRADIX_BRACKET_SHORT_L16 - 1),
              (t.GRADIX_BRACKET_SHORT_MAX_SEQ16 + 1, t.GRADIX_BRACKET_SHORT_L16 - 1),
              (t.GRADIX_BRACKET_SHORT_MAX_SEQ16 + 1, t.GRADIX_BRACKET_SHORT_L16))
    ks = (100, t.GRADIX_BRACKET_LONG_MIN_K - 1, t.GRADIX_BRACKET_LONG_MIN_K, t.GRADIX_BRACKET_MANY_MIN_K - 1,
          t.GRADIX_BRACKET_MANY_MIN_K, 4000, 4096)
    kinds = set()
    for knobs in ({}, {"GRADIX_BRACKET_MIN_L16": t.GRADIX_LONG_MIN_L, "GRADIX_BRACKET_MIN_SEQ16": 3, "GRADIX_DIGIT_BITS": 8},
                  {"GRADIX_BRACKET_MIN_L16": 0},
                  {"GRADIX_BRACKET_CAP": 1000, "GRADIX_BRACKET_MIN_L": 256}, {"GRADIX_BRACKET": False}):
        kinds |= _same_plans_tuned(knobs, shapes, ks)
    assert {"top_k1_gradix_bracket", "top_k1_gradix_bcollect_d11", "top_k1_gradix_resolve_d11", "top_k1_gradix_bcollect",
            "top_k1_gradix_resolve", "top_k1_gradix_hist_d11"} <= kinds, kinds


def test_strides_needing_a_packed_copy():
    # Eight dimensions whose seven non-axis ones merge into none: SLICE1 packs the input first.
    py = Python()
    sizes = (2, 3, 2, 3, 2, 3, 2, 600)
    strides = [1] * 8
    for i in range(6, -1, -1):  # each dimension padded by one: no neighbours merge
        strides[i] = strides[i + 1] * (sizes[i + 1] + 1)
    strides = tuple(strides)
    for lim in LIMITS.values():
        for axis in (7, 3):
            for k in (1, 2, 64, 300):
                if k <= sizes[axis]:
                    d = desc("float16", sizes, axis, k, AxisDirection.INCREASING, strides)
                    check(d, lim, py)
    assert any(disp["kernel"].startswith("slice1") for disp in
               capi.plan(capi.OP_TOP_K1, desc("float16", sizes, 7, 8, strides=strides), LIMITS["h100"])["dispatches"])


def bad_descs():
    f32 = TensorDesc("float32", (4, 6))
    o, oi = TensorDesc("float32", (4, 2)), TensorDesc("uint32", (4, 2))
    big = TensorDesc("uint8", (2**31,))
    return [
        TopK1Desc(f32, o, oi, 1, 2, 5),                                          # axis_direction not an AxisDirection
        TopK1Desc(f32, TensorDesc("float32", (8,)), oi, 1, 2),                   # output_value's rank
        TopK1Desc(f32, TensorDesc("float16", (4, 2)), oi, 1, 2),                 # output_value's type
        TopK1Desc(f32, o, TensorDesc("uint32", (4, 2, 1)), 1, 2),                # output_index's rank
        TopK1Desc(f32, o, TensorDesc("int32", (4, 2)), 1, 2),                    # output_index's type
        TopK1Desc(f32, o, oi, 2, 2),                                             # axis past the rank
        TopK1Desc(f32, o, oi, 1, 0),                                             # k < 1
        TopK1Desc(f32, TensorDesc("float32", (4, 7)), TensorDesc("uint32", (4, 7)), 1, 7),  # k > the axis
        TopK1Desc(big, TensorDesc("uint8", (1,)), TensorDesc("uint32", (1,)), 0, 1),  # axis past MAX_AXIS_LENGTH
        TopK1Desc(f32, TensorDesc("float32", (4, 3)), oi, 1, 2),                 # output_value's sizes
        TopK1Desc(f32, o, TensorDesc("uint32", (2, 2)), 1, 2),                   # output_index's sizes
        TopK1Desc(f32, TensorDesc("float32", (4, 2), (4, 1)), oi, 1, 2),         # output_value strided
        TopK1Desc(f32, o, TensorDesc("uint32", (4, 2), (2, 2)), 1, 2),           # output_index strided
        TopK1Desc(None, o, oi, 1, 2),                                            # no input
        TopK1Desc(f32, o, None, 1, 2),                                           # no output_index
    ]


@pytest.mark.parametrize("i", range(len(bad_descs())))
def test_errors_name_field_rule_values(i):
    d = bad_descs()[i]
    with pytest.raises(ValidationError) as e:
        d.validate()
    assert capi.validate(capi.OP_TOP_K1, d) == (-1, str(e.value))
    assert check(d, LIMITS["h100"], Python()) == "error"


def test_valid_descriptors_validate():
    ok = [desc("float32", (4, 6), 1, 6, AxisDirection.INCREASING), desc("int8", (5,), 0, 1),
          desc("uint16", (3, 9, 2), 1, 4, strides=(0, 2, 1)), TopK1Desc(TensorDesc("float16", (4, 6)),
          TensorDesc("float16", (1, 6), (7, 1)), TensorDesc("uint32", (1, 6)), 0, 1)]  # size-1 dims: any stride
    for d in ok:
        d.validate()
        assert capi.validate(capi.OP_TOP_K1, d) == (0, "")


def test_device_limits_are_their_own_status():
    py = Python()
    tiny = LIMITS["minimum"].replace(name="tiny shared", shared_memory_bytes=2048)
    small_grid = LIMITS["h100"].replace(name="small grid", max_workgroup_count=(64, 2, 1))
    small_range = LIMITS["h100"].replace(name="small range", max_storage_buffer_range=1 << 27)
    with pytest.raises(ValidationError, match="GRADIX"):
        top_k1.python_plan(desc("uint8", (4096, 16384), 1, 4000), small_range)
    cases = [(desc("float32", (1 << 25, 2), 1, 1), LIMITS["minimum"]),   # input beyond maxStorageBufferRange
             (desc("float32", (4, 5000), 1, 3), tiny),                     # not even MIN_B entries fit
             (desc("float32", (1024, 3000), 1, 8), small_grid),           # more workgroups than the grid
             (desc("float32", (8, 1 << 22), 1, 5000), LIMITS["minimum"]),  # the sort's scratch beyond the range (K = 3000 fits GRADIX in 2 parts)
             (desc("uint8", (4096, 16384), 1, 4000), small_range)]  # GRADIX's scratch beyond the range
    for d, lim in cases:
        assert check(d, lim, py) == "error", (d, lim.name)
