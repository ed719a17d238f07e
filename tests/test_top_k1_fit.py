"""TUNE_FIT (kernels/top_k1/radix.comp's push word `tune`): one radix chunk a row longer than 4 B but shorter than
the sampled guess's 2^15 resolves digits until about pow2(K) keys are left, not B, so the final sort is of
pow2(K) entries. Checked: the rule's bits on H100-sized paths on both sides of each threshold, the bit reaching
the dispatch, and exact results with the bit forced (lavapipe's rule never sets it: its pow2(K) stays below
RADIX_FIT_MIN_KP), ties of the K-th key by ascending index, special values, both directions, a strided axis."""
import itertools

import numpy as np
import pytest

from vkops.ops import top_k1 as tk
from vkops.ops.top_k1 import AxisDirection, TopK1Desc, paths
from vkops.tensor import TensorDesc
from vkops.ops.top_k1.tuning import DEFAULT as TUN

from plan_grid import H100
from test_top_k1 import check, gpu_path, push_word, radix_data, shared_b

FIT, GUESS, SELECT = paths.TUNE_FIT, paths.TUNE_GUESS, paths.TUNE_SELECT
DIRS = ("decreasing", "increasing")


def bits(n, L, k, key_bits=32, t=TUN):
    p = paths.choose_path(n, L, k, 48 * 1024, target_groups=t.TARGET_GROUPS, short_chunks=True, key_bits=key_bits,
                          tuning=t)
    return paths.tune_bits(p, n, L, k, key_bits, t)


def test_rule_sets_fit_where_measured():
    """From pow2(K) = RADIX_FIT_MIN_KP (2048 on an H100: the buffer doubled to 4096) on one chunk a row of 4 B + 1
    to 2^15 - 1 keys, any key width, any rows (with TUNE_GUESS / TUNE_SELECT on many rows), up to K = pow2(K) -
    RADIX_FIT_MIN_SLACK; not at pow2(K) = 1024, not past that K, not on rows of 2^15 (the sampled guess) or of
    <= 4 B, not with the knobs past every K."""
    kp, slack = TUN.RADIX_FIT_MIN_KP, TUN.RADIX_FIT_MIN_SLACK
    assert (kp, slack) == (2048, 8)
    top = kp - slack  # the largest K with the bit
    p = gpu_path(64, 32000, kp)
    assert (p.path, p.radix, p.chunks, p.B) == ("filter", True, 1, 2 * kp)
    assert [bits(64, 32000, k) for k in (kp // 2, kp // 2 + 1, 1500, top, top + 1, kp)] == [0, FIT, FIT, FIT, 0, 0]
    assert [bits(64, L, top) for L in (4 * 2 * kp, 4 * 2 * kp + 1, paths.SAMPLE_MIN_LEN - 1, paths.SAMPLE_MIN_LEN)] \
        == [0, FIT, FIT, 0]
    assert [bits(n, 32000, 1500, 16) for n in (1, 8, 256)] == [FIT] * 3
    assert [bits(1, 32000, k, 16) for k in (top, kp)] == [FIT, 0]
    assert bits(64, 32000, 1500, 8) == FIT
    assert bits(TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, 20000, top) == FIT | GUESS | SELECT
    assert bits(TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, 20000, kp, 16) == GUESS | SELECT
    assert bits(64, 32000, top, t=TUN.replace(RADIX_FIT_MIN_KP=1 << 20)) == 0
    assert [bits(64, 32000, k, t=TUN.replace(RADIX_FIT_MIN_KP=kp // 2)) for k in (kp // 2 - slack, kp // 2)] == [FIT, 0]
    assert [bits(64, 32000, kp - 1, t=TUN.replace(RADIX_FIT_MIN_SLACK=s)) for s in (1, 2)] == [FIT, 0]
    assert bits(64, 32000, 1500, t=TUN.replace(RADIX_FIT_MIN_SLACK=kp)) == 0


def test_without_fit_the_sort_takes_the_buffer():
    """At K = pow2(K) (no TUNE_FIT) the chunk's digits stop once its keys at or above the prefix fit B, not pow2(K),
    so the final sort takes up to B entries: the workgroup grows to B / 4 (radix_sort_wg: four entries a thread, the
    merge sort's; 64 x 32000 fp16 K=2048 on an H200 0.0471 -> 0.0385 ms). With the bit, pow2(K) / 4."""
    kp = TUN.RADIX_FIT_MIN_KP
    for dtype in ("float32", "float16"):
        for k, fit in ((kp, False), (kp - TUN.RADIX_FIT_MIN_SLACK, True)):
            plan = tk.python_plan(_desc(64, 32000, k, dtype), H100)
            (d,) = plan.dispatches
            assert d.kernel.startswith("top_k1_radix_m_sg_"), d.kernel
            assert (d.spec[0], push_word(plan, "tune")[0] & FIT) == ((kp if fit else 2 * kp) // 4, FIT if fit else 0)


def test_the_bit_reaches_the_dispatch(dev):
    """The rule's `tune` word is the radix dispatch's push word (RADIX_FIT_MIN_KP lowered to what this device's
    radix chunks reach; the GRADIX rule off): not at pow2(K) = B / 4, nor at K = B / 2 (no slack)."""
    B = shared_b(dev)
    L = 4 * B + 1
    t = TUN.replace(RADIX_FIT_MIN_KP=B // 2, GRADIX_MIN_KP=0)
    for k, want in ((B // 4, 0), (B // 2 - TUN.RADIX_FIT_MIN_SLACK, FIT), (B // 2, 0)):
        plan = tk.python_plan(_desc(2, L, k), dev.limits, tuning=t)
        radix = [w for w, d in zip(push_word(plan, "tune"), plan.dispatches) if "radix" in d.kernel]
        p = paths.device_path(dev.limits, 2, L, k, tuning=t)
        if p.radix and p.chunks == 1 and p.chunk_len > 4 * p.B:
            assert radix == [want], (k, p, radix)


def _desc(n, L, k, dtype="float32"):
    return TopK1Desc(TensorDesc(dtype, (n, L)), TensorDesc(dtype, (n, k)), TensorDesc("uint32", (n, k)), 1,
                     k, AxisDirection.DECREASING).validate()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8"])
def test_forced_fit_is_exact(dev, rng, dtype):
    """TUNE_FIT forced on one radix chunk a row of 4 B + 1 keys to 2^15 - 1, K with pow2(K) = B/4 .. B/2 and
    at the workgroup, random keys, ties of the K-th key, special values and constant rows, both directions."""
    B = shared_b(dev)
    wg = dev.limits.workgroup(TUN.WORKGROUP)
    kinds = itertools.cycle(itertools.product(("ties", "random", "special", "const", "ties"), DIRS))
    for L in sorted({4 * B + 1, 6 * B + 7, paths.SAMPLE_MIN_LEN - 1}):
        for k in sorted({B // 8 + 1, wg - 1, wg + 1, B // 2 - 1, B // 2}):
            if k <= 0 or paths._pow2(k) > B // 2:
                continue
            kind, direction = next(kinds)
            x = radix_data(rng, dtype, (2, L), kind)
            check(x, k, -1, direction, force="radix", chunks=1, tune=FIT)


def test_forced_fit_strided_and_with_the_other_bits(dev, rng):
    """A strided axis (element loads) and the three bits together, exact."""
    B = shared_b(dev)
    L = 4 * B + 33
    x = radix_data(rng, "float32", (L, 3), "ties")
    check(x, B // 2 - 3, 0, "decreasing", force="radix", chunks=1, tune=FIT)
    x = radix_data(rng, "float32", (3, L), "special")
    check(x, B // 2, -1, "increasing", force="radix", chunks=1, tune=FIT | GUESS | SELECT)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unfit_chunk_is_exact(dev, rng, dtype):
    """Without the bit at K = pow2(K) and just under it: one chunk of 4 B + 1 keys (and longer) whose buffer holds up
    to B entries, more than pow2(K), sorted whole (by the merge sort where the register networks run and the
    workgroup is B / 4), random keys, ties of the K-th key, special values, both directions."""
    B = shared_b(dev)
    kinds = itertools.cycle(itertools.product(("ties", "random", "special", "ties"), DIRS))
    for L in (4 * B + 1, 6 * B + 7):
        for k in (B // 2 - 1, B // 2):
            kind, direction = next(kinds)
            check(radix_data(rng, dtype, (3, L), kind), k, -1, direction, force="radix", chunks=1, tune=0)
