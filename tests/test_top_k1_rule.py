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
