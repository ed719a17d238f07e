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

from test_top_k1 import check, gpu_path, push_word, radix_data, shared_b

FIT, GUESS, SELECT = paths.TUNE_FIT, paths.TUNE_GUESS, paths.TUNE_SELECT
DIRS = ("decreasing", "increasing")


def bits(n, L, k, key_bits=32, t=TUN):
    p = paths.choose_path(n, L, k, 48 * 1024, target_groups=t.TARGET_GROUPS, short_chunks=True, key_bits=key_bits,
                          tuning=t)
    return paths.tune_bits(p, n, L, key_bits, t)


def test_rule_sets_fit_where_measured():
    """From pow2(K) = RADIX_FIT_MIN_KP (2048 on an H100: the buffer doubled to 4096) on one chunk a row of 4 B + 1
    to 2^15 - 1 keys, any key width, any rows (with TUNE_GUESS / TUNE_SELECT on many rows); not at pow2(K) =
    1024, not on rows of 2^15 (the sampled guess) or of <= 4 B, not with the knob past every K."""
    kp = TUN.RADIX_FIT_MIN_KP
    assert kp == 2048
    p = gpu_path(64, 32000, kp)
    assert (p.path, p.radix, p.chunks, p.B) == ("filter", True, 1, 2 * kp)
    assert [bits(64, 32000, k) for k in (kp // 2, kp // 2 + 1, 1500, kp)] == [0, FIT, FIT, FIT]
    assert [bits(64, L, kp) for L in (4 * 2 * kp, 4 * 2 * kp + 1, paths.SAMPLE_MIN_LEN - 1, paths.SAMPLE_MIN_LEN)] \
        == [0, FIT, FIT, 0]
    assert [bits(n, 32000, 1500, 16) for n in (1, 8, 256)] == [FIT] * 3
    assert bits(64, 32000, 1500, 8) == FIT
    assert bits(TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, 20000, kp) == FIT | GUESS | SELECT
    assert bits(TUN.RADIX_ONE_CHUNK_WG_MIN_SEQ, 20000, kp, 16) == FIT | GUESS | SELECT
    assert bits(64, 32000, kp, t=TUN.replace(RADIX_FIT_MIN_KP=1 << 20)) == 0
    assert bits(64, 32000, kp // 2, t=TUN.replace(RADIX_FIT_MIN_KP=kp // 2)) == FIT


def test_the_bit_reaches_the_dispatch(dev):
    """The rule's `tune` word is the radix dispatch's push word (RADIX_FIT_MIN_KP lowered to what this device's
    radix chunks reach; the GRADIX rule off)."""
    B = shared_b(dev)
    L = 4 * B + 1
    t = TUN.replace(RADIX_FIT_MIN_KP=B // 2, GRADIX_MIN_KP=0)
    for k, want in ((B // 4, 0), (B // 2, FIT)):
        plan = tk.python_plan(_desc(2, L, k), dev.limits, tuning=t)
        radix = [w for w, d in zip(push_word(plan, "tune"), plan.dispatches) if "radix" in d.kernel]
        p = paths.device_path(dev.limits, 2, L, k, tuning=t)
        if p.radix and p.chunks == 1 and p.chunk_len > 4 * p.B:
            assert radix == [want], (k, p, radix)


def _desc(n, L, k):
    return TopK1Desc(TensorDesc("float32", (n, L)), TensorDesc("float32", (n, k)), TensorDesc("uint32", (n, k)), 1,
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
