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


def test_the_rule_chooses_what_lower_chose_over_the_grid():
    """qlmm.choose() (the kernel rule, AUTO_RULE in order, and the forced kernels' refusals) against what
    lower() chose for every case of the grid when the file was written (its plans' 'kernel' note, or
    its error)."""
    from vkops.errors import ValidationError
    from vkops.ops import qlmm

    want = json.loads(grid.FILE.read_text())
    bad = []
    for g, cases in grid.groups():
        for (m, lim, d, zps, kw), old in zip(cases, grid.unrun(want[g]["kernels"])):
            ck = {k: v for k, v in kw.items() if k in ("kernel", "config")}
            try:
                new = qlmm.choose(d, lim, zero_points=zps, **ck).kernel
            except (ValidationError, ValueError) as e:
                new = f"{type(e).__name__}: {e}"[:72]
            if new != old:
                bad.append((g, m, kw, old, new))
    assert not bad, f"{len(bad)} cases differ, e.g. {bad[:5]}"
