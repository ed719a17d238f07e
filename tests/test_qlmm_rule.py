"""QLinearMatMul's planner against the plans it made before (tests/qlmm_plans.json, tests/qlmm_plan_grid.py):
every shape, type, zero-point, B-layout, limits and forced-kernel case of the grid plans exactly as before."""
import json

import qlmm_plan_grid as grid


def test_every_plan_of_the_grid_is_unchanged():
    want = json.loads(grid.FILE.read_text())
    got = grid.digest()
    assert sorted(got) == sorted(want)
    bad = []
    for g in sorted(got):
        if got[g] != want[g]:
            ms = [c[0] for c in dict(grid.groups())[g]]
            diff = [(m, w, n) for m, w, n in zip(ms, grid.unrun(want[g]["kernels"]), grid.unrun(got[g]["kernels"])) if w != n]
            bad.append(f"{g}: {diff[:3] or 'same kernels, other plans'}")
    assert not bad, f"{len(bad)} groups changed:\n" + "\n".join(bad[:20])
