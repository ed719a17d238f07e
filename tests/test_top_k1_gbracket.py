"""TOP_K1's GRADIX with a sampled bracket (TopK1Tuning.GRADIX_BRACKET; kernels gradix_bracket, gradix_bcollect,
gradix_resolve): where the plan takes it (sizing.gradix_bracket_cap: key widths, rows, the device's subgroup operations,
workgroups and shared memory; the path rule's 32-bit keys from GRADIX_MIN_K), and exact against reference.top_k1, bit
for bit, where the bracket holds (random rows, both directions, six dtypes, K from 1 to the row, the survivors' sort
whole or in parts, a strided axis) and where it misses and one workgroup a row selects exactly (constant rows, a few
distinct values, more ties of the K-th key than the tie list holds, samples fooled by the rows' layout, masked rows,
candidates past a small GRADIX_BRACKET_CAP, NaN/inf/-0.0). Repeated calls check the counters it leaves zero. Sizes stay small
(lavapipe); chunks are short (GRADIX_MIN_CHUNK) so that a row runs several workgroups."""
import json

import numpy as np
import pytest

import vkops
from vkops import reference
from vkops.errors import ValidationError
from vkops.limits import SUBGROUP_OPS
from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import paths
from vkops.ops.top_k1.tuning import DEFAULT
from vkops.runtime.execute import run_plan
from vkops.plan import Plan

from plan_grid import LIMITS
from test_top_k1_gradix import special_rows
from test_top_k1_grank import counters_zero

# short chunks, and the bracket on any rows of 16/32-bit keys (by default: 32-bit keys in rows of >= 32000)
T = DEFAULT.replace(GRADIX_MIN_CHUNK=1024, GRADIX_BRACKET_MIN_L=256, GRADIX_BRACKET_MIN_L16=256)
DIRS = ["decreasing", "increasing"]


def plan_of(lim, shape, dtype, k, tuning=DEFAULT, **kw):
    x = vkops.TensorDesc(np.dtype(dtype), shape)
    d = tk.TopK1Desc(x, *tk.output_descs(x, len(shape) - 1, k), len(shape) - 1, k)
    return tk.python_plan(d.validate(), lim, tuning=tuning, **kw)


def kernels(plan):
    return [d.kernel for d in plan.dispatches]


def bracketed(plan):
    ks = kernels(plan)
    return any("gradix_bracket" in k for k in ks)


def can_bracket(dev, shape, dtype, k, tuning=T):
    """Whether the test device's limits take the bracket for rows of this shape (CI's minimum-limits leg does not:
    there the same calls check GRADIX's digit passes)."""
    return paths.gradix_bracket_cap(int(np.prod(shape[:-1])), shape[-1], k, np.dtype(dtype).itemsize * 8, dev.limits,
                                    tuning) > 0


def check(dev, x, k, direction="decreasing", axis=-1, tuning=T):
    """The result against the oracle, bit for bit, twice, the device's counters zero after each call, on the bracket's
    plan where the device takes it; where GRADIX's sort does not fit its shared memory (K > 2048 under Vulkan's minimum
    16 KiB in one workgroup), the refusal instead."""
    xa = np.asarray(x)
    rows = np.moveaxis(xa, axis, -1).shape
    kp = paths._pow2(k)
    if paths.gradix_shared_bytes(kp, paths.gradix_sort_parts(xa.size // rows[-1], kp, tuning)) > \
            dev.limits.shared_memory_bytes:
        with pytest.raises(ValidationError, match="gradix path needs pow2"):
            tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning)
        return
    plan = plan_of(dev.limits, rows, xa.dtype, k, tuning, force="gradix")
    assert bracketed(plan) == can_bracket(dev, rows, xa.dtype, k, tuning)
    rv, ri = reference.top_k1(xa, k, axis, direction)
    for _ in range(2):
        v, i = tk._top_k(x, k, axis, direction, force="gradix", tuning=tuning)
        np.testing.assert_array_equal(i, ri)
        assert v.dtype == xa.dtype and v.tobytes() == rv.tobytes()  # bit patterns: NaN payloads, -0.0
        counters_zero(dev)


# ---- where the plan takes it -----------------------------------------------------------------------------------

@pytest.mark.host_only
def test_plan_takes_the_bracket_where_it_fits():
    h100, lp = LIMITS["h100"], LIMITS["lavapipe"]
    p = plan_of(h100, (64, 131072), "float32", 4096)
    assert kernels(p)[:3] == ["top_k1_gradix_bracket_f32", "top_k1_gradix_bcollect_d11_f32",
                              "top_k1_gradix_resolve_d11_f32"]
    assert not any("gradix_hist" in k or "gradix_collect" in k for k in kernels(p))
    cap = paths.gradix_bracket_cap(64, 131072, 4096, 32, h100, DEFAULT)
    assert cap == (49152 - paths.GRADIX_RESOLVE_SHARED) // 8 // 64 * 64 == 5504
    assert p.dispatches[1].spec == (DEFAULT.GRADIX_WG, cap) and p.dispatches[2].spec == (512, cap)
    assert paths.gradix_bracket_cap(64, 131072, 100, 32, lp, DEFAULT) == 3456  # 32 KiB of shared memory
    assert paths.gradix_bracket_cap(64, 131072, 100, 32, h100, DEFAULT.replace(GRADIX_BRACKET_CAP=1000)) == 1000
    # 32-bit keys on rows of >= GRADIX_BRACKET_MIN_L; 16-bit ones of >= GRADIX_BRACKET_MIN_L16 (0: never) on at least
    # GRADIX_BRACKET_MIN_SEQ16 rows
    assert not bracketed(plan_of(h100, (64, 31999), "float32", 4096, force="gradix"))
    assert bracketed(plan_of(h100, (64, 32000), "float32", 4096, force="gradix"))
    assert (DEFAULT.GRADIX_BRACKET_MIN_L16, DEFAULT.GRADIX_BRACKET_MIN_SEQ16) == (32000, 48)
    assert (DEFAULT.GRADIX_BRACKET_SHORT_L16, DEFAULT.GRADIX_BRACKET_SHORT_MAX_SEQ16) == (100000, 256)
    assert bracketed(plan_of(h100, (64, 131072), "float16", 4096))
    assert bracketed(plan_of(h100, (48, 32000), "float16", 4096, force="gradix"))  # the rule: radix select (#pack16)
    assert not bracketed(plan_of(h100, (48, 31999), "float16", 4096, force="gradix"))
    assert not bracketed(plan_of(h100, (47, 131072), "float16", 4096, force="gradix"))
    # ... rows shorter than GRADIX_BRACKET_SHORT_L16 on at most GRADIX_BRACKET_SHORT_MAX_SEQ16 rows (32-bit keys: any)
    assert bracketed(plan_of(h100, (256, 99999), "float16", 4096))
    assert not bracketed(plan_of(h100, (257, 99999), "float16", 4096, force="gradix"))
    assert bracketed(plan_of(h100, (257, 100000), "float16", 4096))
    assert bracketed(plan_of(h100, (257, 99999), "float32", 4096))
    assert bracketed(plan_of(h100, (47, 131072), "float32", 4096))  # the row count binds 16-bit keys only
    assert not bracketed(plan_of(h100, (64, 131072), "float16", 4096, DEFAULT.replace(GRADIX_BRACKET_MIN_L16=0),
                                 force="gradix"))
    l16 = DEFAULT.replace(GRADIX_BRACKET_MIN_L16=65536, GRADIX_BRACKET_MIN_SEQ16=3)
    assert bracketed(plan_of(h100, (3, 65536), "float16", 4096, l16))
    assert not bracketed(plan_of(h100, (64, 65535), "float16", 4096, l16, force="gradix"))
    # not: 8-bit keys, the rank sort's rows, more than GRADIX_BRACKET_MAX_SEQ rows, the knob off
    assert not bracketed(plan_of(h100, (64, 131072), "uint8", 4096, force="gradix"))
    assert not bracketed(plan_of(h100, (2, 131072), "float32", 4096))
    assert bracketed(plan_of(h100, (3, 131072), "float32", 4096))
    assert not bracketed(plan_of(h100, (1025, 131072), "float32", 4096))
    assert not bracketed(plan_of(h100, (64, 131072), "float32", 4096, DEFAULT.replace(GRADIX_BRACKET=False)))
    # not on devices without subgroup arithmetic (vote and ballot: no longer needed), workgroups of 512, or room for 64
    # candidates
    for op in ("vote", "ballot", "arithmetic"):
        lim = h100.replace(subgroup_operations=h100.subgroup_operations & ~SUBGROUP_OPS[op])
        assert (paths.gradix_bracket_cap(64, 131072, 100, 32, lim, DEFAULT) == 0) == (op == "arithmetic"), op
    assert paths.gradix_bracket_cap(64, 131072, 100, 32, h100.replace(max_workgroup_invocations=256), DEFAULT) == 0
    assert paths.gradix_bracket_cap(64, 131072, 100, 32, h100.replace(shared_memory_bytes=16384), DEFAULT) == 1408
    assert paths.gradix_bracket_cap(64, 131072, 100, 32, h100.replace(shared_memory_bytes=5120), DEFAULT) == 0  # 59 < 64
    assert paths.gradix_bracket_cap(64, 131072, 100, 32, None, DEFAULT) == 0
    # where the candidates a bracket expects, 8 sqrt(K (L - K) / S), times 1.5 pass the cap: the digit passes
    for L, k, want in ((151936, 4096, True), (214000, 4096, True), (215000, 4096, False), (300000, 2049, True),
                       (1 << 20, 512, True), (1 << 20, 1024, False)):
        assert (paths.gradix_bracket_cap(8, L, k, 32, h100, DEFAULT) > 0) == want, (L, k)
        assert 144 * k * (L - k) <= 5504 ** 2 * 4096 if want else 144 * k * (L - k) > 5504 ** 2 * 4096


@pytest.mark.host_only
def test_rule_takes_gradix_for_32_bit_keys_it_brackets():
    # 32-bit keys it brackets on rows of >= GRADIX_LONG_MIN_L from GRADIX_BRACKET_LONG_MIN_K (2049: where pow2(K) reaches
    # 4096, H100 64x131072 fp32 K=3000 0.0925 -> 0.0790 ms), not GRADIX_LONG_MIN_K (4001); shorter rows keep radix
    # select (64x32000 fp32: K=3999 0.052 ms by radix select, K=4000 0.061 bracketed)
    h100, off = LIMITS["h100"], DEFAULT.replace(GRADIX_BRACKET=False)
    for L in (65536, 131072, 151936):
        assert plan_of(h100, (64, L), "float32", 2049).notes[0] == ("path", "gradix"), L
        assert plan_of(h100, (64, L), "float32", 2048).notes[0] != ("path", "gradix"), L
        assert plan_of(h100, (64, L), "float32", 4000, off).notes[0] != ("path", "gradix"), L
    assert plan_of(h100, (64, 65535), "float32", 4096).notes[0] != ("path", "gradix")
    assert plan_of(h100, (64, 32000), "float32", 4096).notes[0] != ("path", "gradix")
    # gradix_bcollect's workgroups on more than GRADIX_FEW_SEQ rows: GRADIX_BRACKET_MANY_TARGET_GROUPS (1024) for
    # 32-bit keys, GRADIX_MANY_TARGET_GROUPS (512) for 16-bit ones and the digit passes
    chunks = lambda p: dict(p.notes)["chunks"]  # noqa: E731
    assert (DEFAULT.GRADIX_BRACKET_MANY_TARGET_GROUPS, DEFAULT.GRADIX_MANY_TARGET_GROUPS) == (1024, 512)
    assert chunks(plan_of(h100, (64, 131072), "float32", 4096)) == 16
    assert chunks(plan_of(h100, (64, 131072), "float16", 4096)) == 8
    assert chunks(plan_of(h100, (64, 131072), "float32", 4096, off)) == 8
    assert chunks(plan_of(h100, (1025, 131072), "float32", 4096)) == 1
    assert chunks(plan_of(h100, (16, 131072), "float32", 4096)) == chunks(plan_of(h100, (16, 131072), "float32", 4096, off))
    # past GRADIX_BRACKET_LONG_MAX_SEQ rows (64) GRADIX_LONG_MIN_K again (128x131072 K=2049 radix select 0.064 ms,
    # bracketed 0.107), bracketed up to GRADIX_BRACKET_MAX_SEQ (1024: 512x131072 K=4096 0.598 -> 0.379), not past it
    assert (DEFAULT.GRADIX_BRACKET_LONG_MAX_SEQ, DEFAULT.GRADIX_BRACKET_MAX_SEQ) == (64, 1024)
    assert plan_of(h100, (64, 131072), "float32", 3000).notes[0] == ("path", "gradix")
    assert plan_of(h100, (65, 131072), "float32", 3000).notes[0] != ("path", "gradix")
    assert plan_of(h100, (65, 131072), "float32", 4000).notes[0] != ("path", "gradix")
    for n in (65, 1024):
        assert bracketed(plan_of(h100, (n, 131072), "float32", 4001)), n
        assert bracketed(plan_of(h100, (n, 131072), "float16", 4096)), n
    # from GRADIX_BRACKET_MANY_MIN_SEQ rows (192) again from a lower K, GRADIX_BRACKET_MANY_MIN_K (3000: 256x151936
    # K=4000 radix select 0.247 ms, bracketed 0.210; K=2500 0.187 / 0.194)
    assert (DEFAULT.GRADIX_BRACKET_MANY_MIN_SEQ, DEFAULT.GRADIX_BRACKET_MANY_MIN_K) == (192, 3000)
    assert plan_of(h100, (191, 131072), "float32", 3000).notes[0] != ("path", "gradix")
    assert plan_of(h100, (192, 131072), "float32", 2999).notes[0] != ("path", "gradix")
    for n in (192, 1024):
        assert bracketed(plan_of(h100, (n, 131072 if n < 1024 else 65536), "float32", 3000)), n
    assert plan_of(h100, (1025, 131072), "float32", 4096).notes[0] == ("path", "gradix")  # unbracketed
    assert not bracketed(plan_of(h100, (1025, 131072), "float32", 4096))
    assert not bracketed(plan_of(h100, (1025, 131072), "float16", 4096))


# ---- exact where the bracket holds ---------------------------------------------------------------------------------

def rows_of(rng, dtype, shape):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint32", "int16", "uint16"])
def test_exact_random_rows(dev, rng, dtype, direction):
    x = rows_of(rng, dtype, (4, 9000))
    for k in (1, 255, 256, 257, 2048, 4095, 4096):
        check(dev, x, k, direction)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exact_on_past_64_rows(dev, rng, dtype):
    # past the old 64 rows (GRADIX_BRACKET_MAX_SEQ: 1024): a bracket, candidates and flag a row each
    for n in (65, 300):
        x = rows_of(rng, dtype, (n, 1500))
        assert bracketed(plan_of(dev.limits, x.shape, x.dtype, 600, T, force="gradix")) == \
            can_bracket(dev, x.shape, dtype, 600)
        check(dev, x, 600)
    x = rows_of(rng, dtype, (300, 1500))
    x[::3, :] = 0  # every third row one tie: its bracket misses while the others' hold
    check(dev, x, 600)


def bracket_model(x, k):
    """Each row's (lo, hi) and plateau flag as gradix_bracket.comp picks them for float16 keys, largest first: the
    nhi-th and nlo-th largest of the row's sample keys (256 blocks of 16, spread evenly), the ranks from K, the sample
    and L in float32; lo a plateau's key (the flag set, lo + 1 written) where the sample holds more keys equal to it
    than the bracket spans or a quarter of the plateau test's room (4096) in the row."""
    n, L = x.shape
    raw = x.view(np.uint16).astype(np.int64)
    key = np.where(raw & 0x8000, ~raw & 0xFFFF, raw | 0x8000)  # no NaN, no -0.0
    nb = min(256, L // 16)
    S, span = nb * 16, L // 16
    blk = np.arange(S) // 16
    pos = (blk * (span // nb) + blk * (span % nb) // nb) * 16 + np.arange(S) % 16
    f = np.float32
    mu = f(k) * f(S) / f(L)
    sd = np.sqrt(mu * max(f(1) - f(k) / f(L), f(0)))
    rhi, rlo = int(np.floor(mu - f(4) * sd)) - 1, int(np.ceil(mu + f(4) * sd)) + 1
    nhi, nlo = min(max(rhi + 1, 1), S), min(max(rlo + 1, 1), S)
    out = []
    for r in range(n):
        top = np.sort(key[r, pos])[::-1]
        lo, hi = (0 if rlo >= S else int(top[nlo - 1])), (0xFFFF if rhi < 0 else int(top[nhi - 1]))
        b = int((top == top[nlo - 1]).sum())
        plat = rlo < S and (b > nlo - nhi or f(4) * f(b) * f(L) > f(4096) * f(S)) and lo != 0xFFFF
        out.append((lo + plat, hi, int(plat)))
    return out


@pytest.mark.parametrize("data", ["normal", "masked", "few"])
@pytest.mark.parametrize("k", [700, 3000, 6000])
def test_bracket_is_the_samples_ranks(dev, rng, k, data):
    # the bracket's keys and plateau flags read back (its dispatch alone, `work` made an output) against the model: the
    # outputs alone cannot tell a wrong bracket (a miss selects exactly, only slower). Masked rows (99% -inf) and rows
    # of 10 values: lo a plateau's key on most rows
    x = (rng.standard_normal((12, 20000)) * 3).astype(np.float16)
    if data == "masked":
        x[rng.random(x.shape) < 0.99] = -np.inf
    elif data == "few":
        x = rng.integers(-5, 5, x.shape).astype(np.float16)
    t = T.replace(GRADIX_BRACKET_MIN_SEQ16=1)
    if not can_bracket(dev, x.shape, x.dtype, k, t):  # the minimum-limits leg: the digit passes, or (K = 6000) no room
        try:                                           # for GRADIX's sort at all
            assert not bracketed(plan_of(dev.limits, x.shape, x.dtype, k, t, force="gradix"))
        except ValidationError as e:
            assert "gradix path needs" in str(e)
        return
    plan = plan_of(dev.limits, x.shape, x.dtype, k, t, force="gradix")
    j = json.loads(plan.to_json())
    assert j["dispatches"][0]["kernel"] == "top_k1_gradix_bracket_f16"
    work = j["dispatches"][0]["bindings"][1]
    j["dispatches"] = j["dispatches"][:1]
    buf = j["buffers"][work]
    buf.update(role="output", tensor={"data_type": "uint32", "sizes": [buf["bytes"] // 4], "strides": None})
    got = run_plan(Plan.from_json(json.dumps(j)), [x], device=dev)[-1]
    want = bracket_model(x, k)
    n = len(x)
    assert [(int(got[2 * r]), int(got[2 * r + 1]), int(got[2 * n + r])) for r in range(n)] == want
    flags = sum(w[2] for w in want)
    assert flags == 0 if data == "normal" else flags > n // 2  # the cases test what they name
    check(dev, x, k, tuning=t)  # and the whole call on the bracket, exact


def test_exact_k_near_the_row(dev, rng):
    x = rng.standard_normal((3, 2000)).astype(np.float32)  # the sample: every 16-key block of the row
    for k in (1500, 1999, 2000):
        check(dev, x, k)
    check(dev, rng.standard_normal((3, 256)).astype(np.float32), 256)


def test_exact_sorts_whole_and_in_parts(dev, rng):
    # more rows than the rank sort's, pow2(K) from GRADIX_SORT_PARTS_MIN_KP: the survivors sorted in parts
    x = rng.standard_normal((5, 12000)).astype(np.float32)
    assert not can_bracket(dev, x.shape, x.dtype, 3000) or not dev.limits.has_subgroup("shuffle") or \
        "top_k1_gradix_psort_d11_sg_f32" in kernels(plan_of(dev.limits, x.shape, x.dtype, 3000, T, force="gradix"))
    check(dev, x, 3000)
    check(dev, x, 1024)


def test_exact_strided_axis(dev, rng):
    x = rng.standard_normal((9000, 4)).astype(np.float32)
    assert bracketed(plan_of(dev.limits, (4, 9000), np.float32, 700, T, force="gradix")) == \
        can_bracket(dev, (4, 9000), np.float32, 700)
    check(dev, x, 700, axis=0)
    check(dev, x, 700, "increasing", axis=0)


# ---- exact where it misses: one workgroup a row selects exactly ---------------------------------------------------

@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exact_where_the_bracket_misses(dev, rng, dtype, direction):
    L = 9000
    check(dev, np.zeros((3, L), dtype), 700, direction)                           # every key one tie
    check(dev, rng.integers(0, 3, (3, L)).astype(dtype), 3000, direction)        # candidates past CAP
    # 100 values in rows of 131072: each value's keys fill a quarter of the cap, lo taken as a plateau's key
    check(dev, rng.integers(0, 100, (3, 131072)).astype(dtype), 2049, direction)
    x = rng.standard_normal((3, L)).astype(dtype)
    x[:, rng.permutation(L)[:600]] = 1.5                                         # 600 ties of T: past the tie list
    check(dev, x, 300, direction)
    check(dev, x, 500, direction)
    # ...and ties first in rows longer than one block of the exact select's reads (8 x 512 loads of 16 bytes): the
    # first ties by index come early, the keys above T to the row's end
    w = rng.standard_normal((3, 70000)).astype(dtype)
    w[:, :2000] = 1.5
    check(dev, w, 5000 if direction == "decreasing" else 65000, direction)
    # a row the sample misreads: the sampled blocks hold its smallest keys
    nb, span = min(256, L // 16), L // 16
    sampled = np.zeros(L, bool)
    for j in range(nb):
        sampled[(j * span // nb) * 16:(j * span // nb) * 16 + 16] = True
    y = rng.standard_normal((3, L)).astype(dtype)
    y[:, sampled] = (-5 if direction == "decreasing" else 5)
    check(dev, y, 1000, direction)
    # ... the sampled blocks one value above the rest: a plateau at lo with fewer keys than K (4096 sampled)
    y[:, sampled] = (5 if direction == "decreasing" else -5)
    check(dev, y, 5000, direction)


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exact_masked_rows(dev, rng, dtype, direction):
    # masked logits: ~95% of each row -inf (+inf increasing). K past the finite keys: T is the mask, with more ties than
    # the tie list and the cap; the exact select counts the bracket's keys alone and its ordered read stops once it has
    # the first ties by index. K below them: the bracket holds or misses on the finite keys. Rows of 9000 (16-byte
    # loads) and 9001, and a strided axis (one key a load).
    for L in (9000, 9001):
        x = rng.standard_normal((3, L)).astype(dtype)
        x[rng.random((3, L)) < 0.95] = -np.inf if direction == "decreasing" else np.inf
        x[1, :50] = x[1, 60]  # a row that starts with ties of a finite key
        for k in (100, 1000, 5000, L):
            check(dev, x, k, direction)
    check(dev, np.ascontiguousarray(x.T), 1000, direction, axis=0)
    # exactly F finite keys a row and K about F: the sample's plateau makes lo the mask's key; K <= F takes the top of
    # the finite candidates, K > F all of them and the first masked keys
    F = 1000
    y = np.full((3, 9000), -np.inf if direction == "decreasing" else np.inf, dtype)
    for r in range(3):
        y[r, rng.permutation(9000)[:F]] = rng.standard_normal(F)
    for k in (F - 10, F, F + 10):
        check(dev, y, k, direction)


def test_exact_where_every_survivor_is_above_the_bracket(dev, rng):
    # the top K all outside the sampled blocks, the rest one value: the bracket is that value, its candidates past the
    # cap, and the K keys above it are the survivors (gradix_resolve has nothing to select)
    L, k = 9000, 1000
    nb, span = min(256, L // 16), L // 16
    sampled = np.zeros(L, bool)
    for j in range(nb):
        sampled[(j * span // nb) * 16:(j * span // nb) * 16 + 16] = True
    x = np.zeros((3, L), np.float32)
    for r in range(3):
        x[r, rng.permutation(np.flatnonzero(~sampled))[:k]] = rng.uniform(1, 2, k)
    check(dev, x, k)
    check(dev, x, k + 1)  # one tie of the plateau


def test_exact_past_a_small_cap(dev, rng):
    x = rng.standard_normal((4, 9000)).astype(np.float32)
    small = T.replace(GRADIX_BRACKET_CAP=64)
    if can_bracket(dev, x.shape, x.dtype, 10, small):
        assert plan_of(dev.limits, x.shape, x.dtype, 10, small, force="gradix").dispatches[2].spec[1] == 64
    assert not can_bracket(dev, x.shape, x.dtype, 2000, small)  # 1.5 x 8 sqrt(K (L - K) / S) candidates: 1043
    for k in (10, 40, 2000):
        check(dev, x, k, tuning=small)


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_exact_special_values(dev, rng, dtype, direction):
    # NaNs of both signs and payloads, +-inf, +-0.0 and the smallest subnormals around the K-th key (gradix's rows)
    x, y, z = special_rows(rng, dtype, direction, 12000)
    for rows, ks in ((x, (300, 2049)), (y, (300, 3000)), (z, (700, 2200))):
        for k in ks:
            check(dev, np.concatenate([rows, rows[:1]]), k, direction)  # 3 rows: more than the rank sort's
