"""TOP_K1's planner against the plans it made before (tests/top_k1_plans.json, tests/top_k1_plan_grid.py):
every row count, length, K, data type, direction, limits and forced-path case of the grid plans exactly
as before."""
import json

import top_k1_plan_grid as grid


def test_every_plan_of_the_grid_is_unchanged():
    want = json.loads(grid.FILE.read_text())
    got = grid.digest()
    assert sorted(got) == sorted(want)
    bad = []
    for g in sorted(got):
        if got[g] != want[g]:
            names = [c[0] for c in dict(grid.groups())[g]]
            diff = [(m, w, n) for m, w, n in zip(names, grid.unrun(want[g]["paths"]), grid.unrun(got[g]["paths"])) if w != n]
            bad.append(f"{g}: {diff[:3] or 'same paths, other plans'}")
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
        line = re.search(rf"^    {name}: int = .+$", src, re.M)
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
