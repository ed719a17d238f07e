"""What the plan-grid recorders (qlmm_plan_grid.py, top_k1_plan_grid.py) and their tests share: each group's
plans hashed into one digest beside what every case chose (as runs, so the file stays small), and the check
that a planner still makes the recorded plans."""
import hashlib
import json

from vkops.limits import PROFILES, Limits

# The devices the grids plan for: an H100 as vkops sees it through Vulkan, lavapipe, Vulkan 1.1's minimums.
H100 = Limits(name="h100-like", device_type="discrete", subgroup_size=32, min_subgroup_size=32, max_subgroup_size=32,
              max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 64), shared_memory_bytes=49152,
              max_storage_buffer_range=2**32 - 1, subgroup_operations=0xFF, cooperative_matrix=True,
              coopmat_verified=True, coopmat_split_verified=True, integer_dot_product=True)
LAVAPIPE = Limits(name="lavapipe-like", device_type="cpu", subgroup_size=8, min_subgroup_size=8, max_subgroup_size=8,
                  max_workgroup_invocations=1024, max_workgroup_size=(1024, 1024, 1024), shared_memory_bytes=32768,
                  max_storage_buffer_range=2**31 - 1, subgroup_operations=0xFF, integer_dot_product=True)
LIMITS = {"h100": H100, "lavapipe": LAVAPIPE, "minimum": PROFILES["minimum"]}


def digest(groups, one, field):
    """{group: {"plans": sha256 of every case's plan JSON, field: what each case chose (one(case)[0]), as runs}}."""
    out = {}
    for g, cases in groups:
        h, chose = hashlib.sha256(), []
        for case in cases:
            k, js = one(case)
            chose.append(k[:72])
            h.update(k.encode() + b"\0" + js.encode() + b"\0")
        out[g] = {"plans": h.hexdigest()[:20], field: runs(chose)}
    return out


def runs(chose):
    """["a", "a", "b"] -> [["a", 2], ["b", 1]]."""
    out = []
    for k in chose:
        if out and out[-1][0] == k:
            out[-1][1] += 1
        else:
            out.append([k, 1])
    return out


def unrun(rs):
    return [k for k, n in rs for _ in range(n)]


def changed_groups(grid, field):
    """The groups whose plans differ from grid.FILE's, each with its first cases whose choice changed."""
    want = json.loads(grid.FILE.read_text())
    got = grid.digest()
    assert sorted(got) == sorted(want)
    bad = []
    for g in sorted(got):
        if got[g] != want[g]:
            names = [c[0] for c in dict(grid.groups())[g]]
            diff = [(m, w, n) for m, w, n in zip(names, unrun(want[g][field]), unrun(got[g][field])) if w != n]
            bad.append(f"{g}: {diff[:3] or 'same choices, other plans'}")
    return bad
