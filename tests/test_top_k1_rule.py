"""TOP_K1's planner against the plans it made before (tests/top_k1_plans.json, tests/top_k1_plan_grid.py):
every row count, length, K, data type, direction, limits and forced-path case of the grid plans exactly
as before."""

import plan_grid
import top_k1_plan_grid as grid


def test_every_plan_of_the_grid_is_unchanged():
    bad = plan_grid.changed_groups(grid, "paths")
    assert not bad, f"{len(bad)} groups changed:\n" + "\n".join(bad[:20])


# ---- the tuning: TopK1Tuning, every knob as data ---------------------------------------------------------
def test_every_knob_says_why_and_links_its_measurements():
    import re
    from pathlib import Path

    from vkops.ops.top_k1 import paths, tuning

    src = Path(tuning.__file__).read_text()
    doc = (Path(__file__).resolve().parent.parent / "docs" / "tuning" / "top_k1.md").read_text()
    anchors = {"which-path-runs-where"} | {h.strip().lower().replace(",", "").replace(" ", "-")
                                           for h in re.findall(r"^#### (.+)$", doc, re.M)}
    for name in tuning.TopK1Tuning.knobs():
        line = re.search(rf"^    {name}: (int|bool) = .+$", src, re.M)
        assert line, name
        link = re.search(r"  # .+ \(#([\w-]+)\)$", line.group(0))
        assert link and link.group(1) in anchors, (name, line.group(0))
        assert not hasattr(paths, name), f"paths.{name}: a module-level knob is left"


def test_tuning_is_validated_naming_field_rule_and_value():
    import pytest

    from vkops.errors import ValidationError
    from vkops.ops.top_k1 import DEFAULT, TopK1Tuning

    assert DEFAULT == TopK1Tuning() and hash(DEFAULT) == hash(TopK1Tuning())
    assert DEFAULT.replace(WORKGROUP=256).WORKGROUP == 256 and DEFAULT.WORKGROUP == 512
    for kw, msg in (({"WORKGROUP": 384}, "TopK1Tuning.WORKGROUP must be a power of two .*; got 384"),
                    ({"ROWS_MAX_L": 0}, "TopK1Tuning.ROWS_MAX_L must be an int >= 1; got 0"),
                    ({"RSORT_MIN_SEQ": True}, "TopK1Tuning.RSORT_MIN_SEQ must be an int >= 1; got True"),
                    ({"RADIX_SHORT_ROWS_B": 500}, "TopK1Tuning.RADIX_SHORT_ROWS_B must be a power of two"),
                    ({"NOPE": 1}, "no TOP_K1 knob 'NOPE'")):
        with pytest.raises(ValidationError, match=msg):
            DEFAULT.replace(**kw)


def test_a_tuning_steers_the_plan():
    from vkops.ops import top_k1

    d = grid.desc(4096, 32768, 64)
    base = top_k1.plan(d, grid.H100)
    assert top_k1.plan(d, grid.H100, tuning=top_k1.DEFAULT) == base
    wide = top_k1.plan(d, grid.H100, tuning=top_k1.DEFAULT.replace(RADIX_ONE_CHUNK_WIDE_SMALL_WG=256))
    assert base.dispatches[0].spec[0] == 128 and wide.dispatches[0].spec[0] == 256
    cpu = grid.desc(64, 1 << 20, 8)
    assert (top_k1.plan(cpu, grid.LAVAPIPE, tuning=top_k1.DEFAULT.replace(CPU_TARGET_GROUPS=256)).note("chunks")
            > top_k1.plan(cpu, grid.LAVAPIPE).note("chunks"))


def test_the_tuning_is_part_of_the_plan_key(dev, rng):
    import numpy as np

    import vkops
    from vkops.ops import top_k1

    x = rng.standard_normal((3, 5000)).astype(np.float32)
    v0, i0 = vkops.top_k(x, 40)
    n = dev._plans.stored
    other = top_k1.DEFAULT.replace(RADIX_SHORT_ROWS_MIN_L=6000, ROWS_RADIX_MIN_L=5999)
    v1, i1 = vkops.top_k(x, 40, tuning=other)
    assert dev._plans.stored == n + 1  # its own plan, not the default's
    vkops.top_k(x, 40, tuning=top_k1.DEFAULT.replace())  # an equal tuning finds the default's plan
    assert dev._plans.stored == n + 1
    assert np.array_equal(v0, v1) and np.array_equal(i0, i1)


# ---- the path rule: one test per row of AUTO_RULE (tried in order), and the forced paths ----------------
def _choose(lim, n, L, k, **kw):
    """paths.choose; the tuning without GRADIX_BRACKET unless given (its routing: test_top_k1_gbracket.py)."""
    from vkops.ops.top_k1 import DEFAULT, paths

    kw.setdefault("tuning", DEFAULT.replace(GRADIX_BRACKET=False))
    return paths.choose(lim, n, L, k, **kw)


def test_the_rule_is_its_rows_in_order():
    from vkops.ops.top_k1 import paths

    assert [r[0] for r in paths.AUTO_RULE] == ["gradix", "rsort", "rows", "seg", "radix", "filter", "sort"]
    assert sorted(paths.PATHS) == sorted(r[0] for r in paths.AUTO_RULE)  # force= names, one a path
    # 4096 rows of 1024 at K = 64 on the H100-like device: ROWS's condition holds, so SEG's (which holds too) never runs
    c = _choose(grid.H100, 4096, 1024, 64)
    assert c.path == "rows" and "one subgroup a row" in c.why
    assert _choose(grid.H100, 4096, 1024, 64, chunks=1).path == "seg"  # chunks given: the subgroup rows are skipped


def test_rule_row_rsort():
    from vkops.ops.top_k1 import DEFAULT

    c = _choose(grid.H100, 64, 2048, 1024)
    assert (c.path, c.plan.path, c.plan.workgroup) == ("rsort", "rsort", 256) and "RSORT_MIN_SEQ" in c.why
    assert _choose(grid.H100, 63, 2048, 1024).path != "rsort"  # RSORT_MIN_SEQ
    assert _choose(grid.H100, 64, 2049, 1024).path != "rsort" and _choose(grid.H100, 64, 512, 300).path != "rsort"
    assert _choose(grid.H100, 64, 2048, 256).path != "rsort"  # pow2(K) <= ROWS_MAX_KP: ROWS' region
    assert _choose(grid.LIMITS["minimum"], 64, 2048, 1024).path != "rsort"  # no subgroup ballot
    assert _choose(grid.H100, 64, 2048, 1024, tuning=DEFAULT.replace(RSORT_MIN_SEQ=65)).path != "rsort"


def test_rule_row_rows():
    from vkops.ops.top_k1 import DEFAULT

    c = _choose(grid.H100, 512, 4096, 256, key_bits=8)
    assert (c.path, c.plan.path) == ("rows", "rows")
    assert _choose(grid.H100, 511, 1024, 64).path != "rows" and _choose(grid.H100, 512, 4097, 64).path != "rows"
    assert _choose(grid.H100, 1024, 1601, 64).path == "radix"  # many rows longer than ROWS_RADIX_MIN_L, wide keys
    assert _choose(grid.H100, 1024, 1601, 64, key_bits=8).path == "rows"
    assert _choose(grid.H100, 1024, 1601, 1).path == "rows"  # K below SHORT_ROW_RADIX_MIN_K
    assert _choose(grid.H100, 1024, 1601, 64, tuning=DEFAULT.replace(ROWS_RADIX_MIN_L=4096)).path == "rows"


def test_rule_row_seg():
    c = _choose(grid.H100, 3, 100, 7)
    assert (c.path, c.plan.path, c.plan.B, c.plan.P, c.plan.G) == ("seg", "seg", 2048, 128, 3) and "pow2(L) <= B" in c.why
    assert _choose(grid.H100, 3, 2048, 1).path == "seg"  # K = 1: no short radix row
    assert _choose(grid.H100, 3, 2048, 2).path == "radix"  # B/2 < pow2(L), K >= SHORT_ROW_RADIX_MIN_K
    assert _choose(grid.H100, 3, 1024, 2).path == "seg"  # rows of <= B/2 stay in SEG


def test_rule_row_radix():
    from vkops.ops.top_k1 import DEFAULT

    c = _choose(grid.H100, 2, 300000, 128)
    assert (c.path, c.plan.path, c.plan.radix) == ("radix", "filter", True) and "RADIX_MIN_KP" in c.why
    assert _choose(grid.H100, 64, 1 << 20, 64).path == "filter"  # chunks of 2^18 at pow2(K) = 64: the filter stays
    assert _choose(grid.H100, 4096, 32768, 64).path == "radix"  # one chunk <= RADIX_SHORT_CHUNK_B * B
    assert _choose(grid.H100, 64, 151936, 50).path == "radix"  # a wave of vocabulary rows
    assert _choose(grid.H100, 64, 1 << 20, 128).path == "radix"
    assert _choose(grid.H100, 64, 1 << 20, 128, tuning=DEFAULT.replace(RADIX_MIN_KP=256)).path == "filter"
    one = _choose(grid.H100, 4096, 32768, 64).plan  # one long chunk a row on many rows, 32-bit keys
    assert (one.chunks, one.B, one.workgroup) == (1, 512, 128)
    assert _choose(grid.H100, 4096, 32768, 64, key_bits=16).plan.workgroup == 256
    # B/2 < pow2(K) <= B on rows longer than B: one chunk a row in the largest buffer (H100: 4096, K = 2049-4096;
    # lavapipe's 32 KiB: 2048, K = 1025-2048), the usual workgroup; the sort where the knob turns it off
    # (GRADIX takes 64 long rows from K = GRADIX_LONG_MIN_K by default: off here, see test_rule_gradix_long_rows)
    nolong = DEFAULT.replace(GRADIX_LONG_MIN_L=1 << 30)
    for lim, n, L, k in ((grid.H100, 64, 131072, 3000), (grid.H100, 1, 4097, 4096), (grid.LAVAPIPE, 3, 2049, 1025),
                         (grid.LAVAPIPE, 64, 131072, 2048), (grid.LIMITS["minimum"], 2, 32000, 1000)):
        c = _choose(lim, n, L, k, tuning=nolong)
        p = c.plan
        assert (c.path, p.path, p.radix, p.chunks, p.merge_group) == ("radix", "filter", True, 1, 0), (lim.name, L, k)
        assert p.B // 2 < p.Kp == p.B < L <= p.chunk_len and "one chunk a row" in c.why
        # the usual workgroup, or RADIX_SORT_WG's where the sort takes more than 4 entries a thread (the H100's 4096)
        assert p.workgroup == max(lim.workgroup(DEFAULT.WORKGROUP), lim.workgroup(min(DEFAULT.RADIX_SORT_WG, p.B // 4)))
        off = nolong.replace(LARGE_K_ONE_CHUNK_MAX_L=L - 1)  # GRADIX where it may run (session 29), else the sort
        gradix = L >= DEFAULT.GRADIX_MIN_L and p.Kp >= DEFAULT.GRADIX_MIN_KP
        assert _choose(lim, n, L, k, tuning=off).path == ("gradix" if gradix else "sort"), (lim.name, L, k)
        assert _choose(lim, n, L, k, tuning=off.replace(GRADIX_MIN_KP=0)).path == "sort"
        assert _choose(lim, n, L, k, force="radix", tuning=nolong).plan == p  # forced: the same one chunk
        assert _choose(lim, n, L, k, force="radix", chunks=1, tuning=nolong).plan == p
    assert _choose(grid.H100, 64, 131072, 3000, tuning=nolong).plan.B == 4096  # where the sort keeps 2048
    assert _choose(grid.H100, 64, 131072, 3000, tuning=nolong.replace(LARGE_K_ONE_CHUNK_MAX_L=1)).plan.B == 2048


def test_rule_radix_sort_wg():
    """RADIX_SORT_WG: a radix plan whose final sort (compact.glsl: max(Kp, pow2(c)) entries) takes more than 4 entries
    a thread grows its workgroup to entries / 4, up to the knob and the device's, its chunks kept in whole steps
    (docs/tuning/top_k1.md, session 29). On an H100's limits: B = 4096 sorts in 1024; where TUNE_FIT (to K = 2048 - 8)
    or a chunk of <= 4 B keep the sort at pow2(K) = 2048, or the sampled guess's 5/4 (K + K/2 + 64) fits 2048, it
    stays at 512."""
    from vkops.ops.top_k1 import DEFAULT, paths

    want = {(64, 151936, 2048, 32): (1024, 2), (64, 131072, 1500, 32): (1024, 2), (64, 32000, 3000, 32): (1024, 1),
            (64, 32000, 4096, 32): (1024, 1), (64, 131072, 4000, 32): (1024, 1), (4096, 32768, 1500, 32): (1024, 1),
            (64, 131072, 1500, 8): (1024, 2), (64, 131072, 2048, 16): (1024, 2), (64, 16384, 3000, 32): (1024, 1),
            (64, 131072, 1051, 16): (1024, 2), (64, 131072, 1050, 16): (512, 2),  # the guess: 4096 from 1051
            (64, 32000, 2040, 32): (512, 1), (4096, 32000, 2040, 16): (512, 1),   # TUNE_FIT: a sort of 2048
            (64, 32000, 2048, 32): (1024, 1), (4096, 32000, 2048, 16): (1024, 1),  # ... not at K = pow2(K)
            (64, 131072, 1024, 32): (512, 2), (1023, 4096, 1024, 32): (512, 1)}   # B = 2048 in 512
    got = {}
    for (n, L, k, bits), (wg, chunks) in want.items():
        c = _choose(grid.H100, n, L, k, key_bits=bits)
        p = c.plan
        assert c.path == "radix" and p.radix, (n, L, k, bits, c.path)
        got[(n, L, k, bits)] = (p.workgroup, p.chunks)
        assert p.chunk_len % (p.workgroup * paths.EPI) == 0 and -(-L // p.chunk_len) == p.chunks
        base = _choose(grid.H100, n, L, k, key_bits=bits, tuning=DEFAULT.replace(RADIX_SORT_WG=512,
                                                                                  GRADIX_BRACKET=False)).plan
        assert (base.workgroup, base.chunks, base.B) == (512, p.chunks, p.B)  # the knob at 512: the rule off
        assert _choose(grid.H100, n, L, k, key_bits=bits, force="radix").plan.workgroup == p.workgroup
        small = grid.H100.replace(max_workgroup_invocations=512)
        assert _choose(small, n, L, k, key_bits=bits).plan.workgroup == 512  # the device's bound
        entries = paths.radix_sort_entries(p, n, L, k, bits)
        assert entries == 4096 if wg == 1024 else entries <= 2048, (n, L, k, bits, entries)
    assert got == want


def test_rule_radix_short_fit():
    """RADIX_SHORT_FIT: many rows of RADIX_SHORT_ROWS_MIN_L..4 max(Kp, 512) above pow2(K) = 256 take one radix chunk in a
    buffer of max(Kp, 512) and Kp / 4 threads; before RSORT on rows of <= RSORT_MAX_L up to pow2(K) = 1024 (32- and
    16-bit keys; 16-bit: 512 until session 47), never for 8-bit keys (docs/tuning/top_k1.md, session 29)."""
    from vkops.ops.top_k1 import DEFAULT

    want = {(4096, 4096, 1024, 32): ("radix", 1024, 256), (4096, 4096, 513, 16): ("radix", 1024, 256),
            (8192, 3000, 1024, 32): ("radix", 1024, 256), (4096, 1601, 300, 32): ("radix", 512, 128),
            (16384, 2048, 300, 32): ("radix", 512, 128), (16384, 2048, 1024, 32): ("radix", 1024, 256),
            (16384, 2048, 300, 16): ("radix", 512, 128), (4096, 4096, 1500, 32): ("radix", 2048, 512),
            (16384, 2048, 1024, 16): ("radix", 1024, 256), (16384, 2048, 1025, 16): ("rsort", 2048, 256),
            (16384, 2048, 300, 8): ("rsort", 2048, 256),
            (16384, 2048, 1500, 32): ("rsort", 2048, 256), (16384, 1600, 1024, 32): ("rsort", 1792, 256),
            (1023, 4096, 1024, 32): ("radix", 2048, 512), (4096, 4096, 300, 32): ("radix", 2048, 512),
            (4096, 4097, 1024, 32): ("radix", 2048, 512)}
    got = {}
    for (n, L, k, bits) in want:
        c = _choose(grid.H100, n, L, k, key_bits=bits)
        got[(n, L, k, bits)] = (c.path, c.plan.B, c.plan.workgroup)
        if c.path == "radix":
            assert c.plan.chunks == 1 and c.plan.chunk_len % (c.plan.workgroup * 16) == 0 and c.plan.chunk_len >= L
        off = _choose(grid.H100, n, L, k, key_bits=bits, tuning=DEFAULT.replace(RADIX_SHORT_FIT=False))
        if got[(n, L, k, bits)] != (off.path, off.plan.B, off.plan.workgroup):  # the rule's own cells
            assert c.path == "radix" and c.plan.B == max(_pow2(k), 512) < off.plan.B or off.path == "rsort", (n, L, k)
    assert got == want


def test_rule_shuffle_on_short_fit_rows():
    """SHUF_SHORT_FIT_MIN_KP: RADIX_SHORT_FIT's rows take the register networks (the _sg modules, whose final sort is
    the merge sort) from pow2(K) = 512, other radix rows from SHUF_MIN_KP (1024); devices without subgroup shuffles
    never (docs/tuning/top_k1.md#sort_merge)."""
    from vkops.ops.top_k1 import DEFAULT

    old = DEFAULT.replace(SHUF_SHORT_FIT_MIN_KP=DEFAULT.SHUF_MIN_KP)
    for n, L, k, bits in ((16384, 2048, 300, 32), (16384, 2048, 257, 32), (4096, 1601, 512, 32), (16384, 2048, 300, 16)):
        c = _choose(grid.H100, n, L, k, key_bits=bits)
        assert (c.path, c.plan.B, c.plan.workgroup, c.plan.shuf) == ("radix", 512, 128, True), (n, L, k, bits)
        assert not _choose(grid.H100, n, L, k, key_bits=bits, tuning=old).plan.shuf
        assert not _choose(grid.H100, n, L, k, key_bits=bits, shuffle=False).plan.shuf
    # not short fit: rows of 4096 at pow2(K) = 512, a few rows, pow2(K) = 256
    for n, L, k in ((4096, 4096, 300), (1023, 2048, 300), (16384, 2048, 256)):
        assert not _choose(grid.H100, n, L, k).plan.shuf, (n, L, k)
    assert _choose(grid.H100, 16384, 2048, 1024).plan.shuf  # SHUF_MIN_KP as before


def test_rule_rsort_8_bit_rows_of_4096():
    """RSORT_MAX_L8: 8-bit keys take RSORT on rows up to 4096 (one digit pass; the radix select's short fit lost 1.3-3x
    there), 16/32-bit keys up to RSORT_MAX_L (2048) as before (docs/tuning/top_k1.md, session 29)."""
    from vkops.ops.top_k1 import DEFAULT

    for n, L, k in ((4096, 4096, 1024), (4096, 4096, 300), (64, 2049, 2048), (8192, 3000, 1024)):
        assert _choose(grid.H100, n, L, k, key_bits=8).path == "rsort", (n, L, k)
        assert _choose(grid.H100, n, L, k, key_bits=8, tuning=DEFAULT.replace(RSORT_MAX_L8=2048)).path != "rsort"
        assert _choose(grid.H100, n, L, k, key_bits=16).path != "rsort"
    assert _choose(grid.H100, 4096, 4097, 1024, key_bits=8).path != "rsort"
    assert _choose(grid.H100, 63, 4096, 1024, key_bits=8).path != "rsort"
    assert _choose(grid.H100, 4096, 4096, 256, key_bits=8).path != "rsort"  # pow2(K) <= ROWS_MAX_KP
    assert _choose(grid.LAVAPIPE, 4096, 4096, 1024, key_bits=8).path != "rsort"  # its counters do not fit 32 KiB


def test_rule_rsort_for_the_global_sort():
    """RSORT_FOR_SORT: rows only the global bitonic sort would take (pow2(K) > B/2 on rows of 2049-4096 that fit no
    buffer) take RSORT wherever its rows fit, any row count (H100: 1.8-3.1x faster; docs/tuning/top_k1.md, session 29);
    the knob off, longer rows and a device whose counters do not fit keep the sort."""
    from vkops.ops.top_k1 import DEFAULT

    off = DEFAULT.replace(RSORT_FOR_SORT=False)
    for n, L, k, bits in ((4096, 4096, 3000, 32), (4096, 4096, 4096, 32), (1, 4096, 3000, 32), (64, 3000, 2500, 16),
                          (1024, 2049, 3000, 32)):
        c = _choose(grid.H100, n, L, k, key_bits=bits)
        assert (c.path, c.plan.B) == ("rsort", c.plan.workgroup * -(-L // c.plan.workgroup)), (n, L, k, c.path)
        assert _choose(grid.H100, n, L, k, key_bits=bits, tuning=off).path == "sort", (n, L, k)
    assert _choose(grid.H100, 4096, 4097, 3000).path == "radix"  # one chunk a row in 4096 (past RSORT: 8 a lane of 512)
    assert _choose(grid.LAVAPIPE, 64, 4096, 3000).path == "sort"  # its counters do not fit 32 KiB
    assert _choose(grid.H100, 4096, 4096, 2048).path == "radix"  # another row of the rule takes it


def _pow2(x):
    return 1 << max(0, x - 1).bit_length()


def test_rule_gradix_long_rows():
    """GRADIX on many rows of >= GRADIX_LONG_MIN_L from K = GRADIX_LONG_MIN_K (32-bit keys) / _K16 (16-bit); 8-bit
    keys, shorter rows and smaller K keep their paths (docs/tuning/top_k1.md, sessions 23 and 29). 8/16-bit keys on
    any rows from K = GRADIX_MIN_K, 32-bit keys not (radix select won on rows of 32000 at K = 4096); rows radix
    select cannot take (pow2(K) > B/2 past LARGE_K_ONE_CHUNK_MAX_L, or a small device's buffer) take GRADIX, not the
    global sort."""
    from vkops.ops.top_k1 import DEFAULT as t

    L = t.GRADIX_LONG_MIN_L
    for bits, k in ((32, t.GRADIX_LONG_MIN_K), (16, t.GRADIX_LONG_MIN_K16)):
        assert _choose(grid.H100, 64, L, k, key_bits=bits).path == "gradix", bits
        assert _choose(grid.H100, 64, 131072, k, key_bits=bits).path == "gradix", bits
        assert _choose(grid.H100, 64, L, k - 1, key_bits=bits).path != "gradix", bits
        assert _choose(grid.H100, 64, L - 1, k, key_bits=bits).path != "gradix", bits
    assert _choose(grid.H100, 64, 131072, 3000, key_bits=8).path != "gradix"
    assert _choose(grid.H100, 64, 131072, 3000, key_bits=16).path == "gradix"
    assert _choose(grid.H100, 64, 131072, 3000, key_bits=32).path == "radix"  # below GRADIX_LONG_MIN_K since session 29
    for bits, L in ((8, 32000), (16, t.GRADIX_MIN_K16_RADIX_MAX_L + 1)):
        assert _choose(grid.H100, 64, L, t.GRADIX_MIN_K, key_bits=bits).path == "gradix", bits
        assert _choose(grid.H100, 64, L, t.GRADIX_MIN_K - 1, key_bits=bits).path == "radix", bits
    assert _choose(grid.H100, 64, 32000, 4096, key_bits=32).path == "radix"
    past = t.LARGE_K_ONE_CHUNK_MAX_L + 1
    for bits, k in ((32, 2500), (8, 3000), (16, 4096)):
        assert _choose(grid.H100, 64, past, k, key_bits=bits).path == "gradix", bits
        assert _choose(grid.H100, 64, past, k, key_bits=bits,
                       tuning=t.replace(GRADIX_MIN_KP=0, GRADIX_BRACKET=False)).path == "sort", bits
    assert _choose(grid.LAVAPIPE, 3, 32000, 3000).path == "gradix"  # B = 2048: pow2(K) > B
    assert _choose(grid.LIMITS["minimum"], 3, 32000, 1025).path == "gradix"


def test_rule_gradix_few_rows_16_bit_keys():
    """16-bit keys on few long rows take GRADIX from pow2(K) = GRADIX_MIN_KP16 (1024), 32-bit keys and many rows from
    GRADIX_MIN_KP (docs/tuning/top_k1.md, session 23)."""
    from vkops.ops.top_k1 import DEFAULT as t

    kp16 = t.GRADIX_MIN_KP16
    n, L = t.GRADIX_FEW_SEQ, t.GRADIX_FEW_MIN_L
    assert _choose(grid.H100, 1, 151936, kp16, key_bits=16).path == "gradix"
    assert _choose(grid.H100, n, L, kp16 // 2 + 1, key_bits=16).path == "gradix"
    assert _choose(grid.H100, n, L, kp16 // 2, key_bits=16).path != "gradix"  # pow2(K) below it
    assert _choose(grid.H100, n + 1, L, kp16, key_bits=16).path != "gradix"  # many rows
    assert _choose(grid.H100, n, L - 1, kp16, key_bits=16).path != "gradix"  # shorter rows
    assert _choose(grid.H100, 1, 151936, kp16, key_bits=32).path != "gradix"
    assert _choose(grid.H100, 1, 151936, kp16, key_bits=16, tuning=t.replace(GRADIX_MIN_KP=0)).path != "gradix"


def test_rule_gradix_rank_rows_from_kp_4096(dev, rng):
    """16/32-bit keys on the rows the rank sort takes (<= GRADIX_RANK_MAX_SEQ) of >= GRADIX_MIN_L take GRADIX from
    pow2(K) = GRADIX_RANK_MIN_KP (docs/tuning/top_k1.md, session 24); more rows, pow2(K) below it, shorter rows,
    8-bit keys and the knob past every K keep their paths. The rule's GRADIX there is exact on this device."""
    import numpy as np

    from test_top_k1 import check, radix_data
    from vkops.ops.top_k1 import DEFAULT as t

    kp, n, L = t.GRADIX_RANK_MIN_KP, t.GRADIX_RANK_MAX_SEQ, t.GRADIX_MIN_L
    for bits in (32, 16):
        assert _choose(grid.H100, n, L, kp // 2 + 1, key_bits=bits).path == "gradix", bits
        assert _choose(grid.H100, 1, 32000, 3000, key_bits=bits).path == "gradix", bits
        assert _choose(grid.H100, n, L, kp // 2, key_bits=bits).path != "gradix", bits
        assert _choose(grid.H100, n + 1, L, kp // 2 + 1, key_bits=bits).path != "gradix", bits
        assert _choose(grid.H100, n, L - 1, kp // 2 + 1, key_bits=bits).path != "gradix", bits
    assert _choose(grid.H100, 1, 32000, 3000, key_bits=8).path != "gradix"
    assert _choose(grid.H100, 1, 32000, 3000, tuning=t.replace(GRADIX_RANK_MIN_KP=1 << 20)).path != "gradix"
    for dtype, direction in (("float32", "decreasing"), ("float16", "increasing")):
        x = radix_data(rng, dtype, (1, L + 5), "ties")
        k = kp // 2 + 1
        if _choose(dev.limits, 1, L + 5, k, key_bits=np.dtype(dtype).itemsize * 8).path == "gradix":
            check(x, k, -1, direction)


def test_rule_row_filter():
    c = _choose(grid.H100, 2, 300000, 9)
    assert (c.path, c.plan.path, c.plan.radix) == ("filter", "filter", False) and "threshold" in c.why
    assert c.plan.chunks > 1 and _choose(grid.LAVAPIPE, 2, 300000, 9).plan.chunks < c.plan.chunks  # CPU: long chunks


def test_rule_row_sort():
    c = _choose(grid.H100, 2, 10000, 5000)
    assert (c.path, c.plan.path, c.plan.P, c.plan.B) == ("sort", "sort", 16384, 2048) and "pow2(K) > B/2" in c.why
    from vkops.ops.top_k1 import DEFAULT

    # rows that fit 4096: the sort's buffer stays (RSORT takes them by default: test_rule_rsort_for_the_global_sort)
    assert _choose(grid.H100, 2, 4096, 3000, tuning=DEFAULT.replace(RSORT_FOR_SORT=False)).plan.B == 2048
    assert _choose(grid.LAVAPIPE, 2, 5000, 3000).path == "sort"  # pow2(K) > B = 2048
    assert _choose(grid.H100, 2, 5000, 3000, chunks=2).path == "sort"  # chunks asked for: no one chunk a row


def test_forced_paths_map_one_to_one_and_name_why_they_cannot_run():
    import dataclasses

    import pytest

    from vkops.errors import ValidationError

    for force in ("seg", "filter", "radix", "sort", "rows", "rsort"):
        c = _choose(grid.H100, 600, 1000, 300 if force == "rsort" else 8, force=force)
        assert c.path == force and c.why == f"forced: force={force!r}"
    r, f = _choose(grid.H100, 2, 40000, 8, force="radix"), _choose(grid.H100, 2, 40000, 8, force="filter")
    assert r.plan.radix and not f.plan.radix and dataclasses.replace(r.plan, radix=False) == f.plan
    assert _choose(grid.H100, 2, 40000, 8, force="radix", chunks=3).plan.chunks == 3
    for lim, kw, why in (
            (grid.H100, {"force": "seg", "L": 3000}, "seg path needs pow2"),
            (grid.LAVAPIPE, {"force": "radix", "k": 3000},
             r"radix path needs pow2\(K\) <= 1024 \(radix: pow2\(K\) <= 2048 in one"),
            (grid.LAVAPIPE, {"force": "filter", "k": 2000}, r"filter path needs pow2\(K\) <= 1024; got"),
            (grid.LIMITS["minimum"], {"force": "rows"}, "rows path needs subgroup ballot"),
            (grid.LIMITS["minimum"], {"force": "rsort"}, "rsort path needs subgroup ballot"),
            (grid.H100, {"force": "bitonic"}, "TOP_K1 force must be None or one of 'rsort', 'rows'"),
            (grid.LIMITS["minimum"], {"shuffle": True}, "shuffle=True needs subgroup shuffles")):
        kw = dict({"L": 4000, "k": 8}, **kw)
        with pytest.raises(ValidationError, match=why):
            _choose(lim, 4, kw.pop("L"), kw.pop("k"), **kw)


def test_rule_16_bit_keys_packed_sort_stays_radix():
    """16-bit keys from K = GRADIX_MIN_K keep radix select (its final sort on packed words, session 49) on
    GRADIX_MIN_K16_RADIX_MIN_SEQ.._MAX_SEQ rows of at most GRADIX_MIN_K16_RADIX_MAX_L, up to pow2(K) = _MAX_KP
    (H200 64x32000 fp16 K=4096 0.0572 -> 0.0509 ms); GRADIX on fewer or more rows, longer rows, larger K, 8-bit keys,
    and with the knob at 0 (docs/tuning/top_k1.md#pack16)."""
    from vkops.ops.top_k1 import DEFAULT as t

    lo, hi, ml, kp = (t.GRADIX_MIN_K16_RADIX_MIN_SEQ, t.GRADIX_MIN_K16_RADIX_MAX_SEQ, t.GRADIX_MIN_K16_RADIX_MAX_L,
                      t.GRADIX_MIN_K16_RADIX_MAX_KP)
    assert (lo, hi, ml, kp, t.GRADIX_MIN_K) == (16, 512, 32768, 4096, 4000)
    for n, L, k in ((lo, ml, t.GRADIX_MIN_K), (64, 32000, kp), (hi, 20000, t.GRADIX_MIN_K), (128, ml, kp)):
        assert _choose(grid.H100, n, L, k, key_bits=16).path == "radix", (n, L, k)
    for n, L, k in ((lo - 1, ml, kp), (hi + 1, ml, kp), (64, ml + 1, kp), (64, 20000, kp + 1)):
        assert _choose(grid.H100, n, L, k, key_bits=16).path == "gradix", (n, L, k)
    assert _choose(grid.H100, 64, 32000, kp, key_bits=8).path == "gradix"
    off = t.replace(GRADIX_MIN_K16_RADIX_MAX_L=0)
    assert _choose(grid.H100, 64, 32000, kp, key_bits=16, tuning=off).path == "gradix"
    assert _choose(grid.H100, 64, 65536, 2400, key_bits=16).path == "radix"  # GRADIX_LONG_MIN_K16 - 1
    assert _choose(grid.H100, 64, 65536, t.GRADIX_LONG_MIN_K16, key_bits=16).path == "gradix"
