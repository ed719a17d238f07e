"""QLinearMatMul's planner against the plans it made before (tests/qlmm_plans.json, tests/qlmm_plan_grid.py):
every shape, type, zero-point, B-layout, limits and forced-kernel case of the grid plans exactly as before."""
import json

import plan_grid
import qlmm_plan_grid as grid


def test_every_plan_of_the_grid_is_unchanged():
    bad = plan_grid.changed_groups(grid, "kernels")
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


# One test per row of the rule (qlmm.AUTO_RULE, tried in order), and the forced kernels.
def _choose(lim, M, K=4096, N=4096, adt="int8", bdt="int8", zp="none", layout="rows", **kw):
    from vkops.ops import qlmm

    return qlmm.choose(grid.desc(M, K, N, adt, bdt, zp, layout), lim, zero_points=grid.known(adt, bdt, zp), **kw)


def test_the_rule_is_its_rows_in_order():
    from vkops.ops import qlmm

    assert [r[0] for r in qlmm.AUTO_RULE] == ["gemv", "stream", "dot", "coopmat", "portable"]
    # one row of row-major B on the H100-like device: every row's condition holds; the first one runs
    c = _choose(grid.H100, 1)
    assert (c.kernel, c.gemv) == ("gemv", 1) and "matrix-vector" in c.why
    assert _choose(grid.H100, 1, layout="cols").kernel == "gemv"  # column-major B: the _bc build (GEMV_BC)
    assert _choose(grid.H100, 1, N=4100, layout="cols").kernel == "dot"  # gemv's condition fails: a later row


def test_rule_row_gemv():
    from vkops.ops.qlmm.tuning import DEFAULT

    assert _choose(grid.LAVAPIPE, 1).kernel == _choose(grid.PAPER_GEMV, 1).kernel == "gemv"  # any device
    assert _choose(grid.H100, 3, N=11008).kernel != "gemv" and _choose(grid.H100, 1, N=4100).kernel != "gemv"
    # two rows where B has GEMV_MULTI_MIN_B bytes or more (all batches), one row at any size
    least = DEFAULT.GEMV_MULTI_MIN_B
    assert least % 4096 == 0 and least // 4096 % 16 == 0
    c = _choose(grid.H100, 2, N=least // 4096)
    assert (c.kernel, c.gemv) == ("gemv", 2)
    assert _choose(grid.H100, 2, N=least // 4096 - 16).kernel == "stream"
    assert _choose(grid.H100, 2, N=least // 4096 - 16, tuning=DEFAULT.replace(GEMV_MULTI_MIN_B=least - 16 * 4096)).kernel == "gemv"
    # column-major B: its own threshold (the _bc builds), either knob only for its layout
    least_bc = DEFAULT.GEMV_BC_MULTI_MIN_B
    assert least_bc > least and least_bc % 4096 == 0 and least_bc // 4096 % 16 == 0
    c = _choose(grid.H100, 2, N=least_bc // 4096, layout="cols")
    assert (c.kernel, c.gemv) == ("gemv", 2)
    assert _choose(grid.H100, 2, N=least_bc // 4096 - 16, layout="cols").kernel == "stream"
    assert _choose(grid.H100, 2, N=least // 4096, layout="cols").kernel == "stream"
    assert _choose(grid.H100, 2, N=least // 4096, layout="cols", tuning=DEFAULT.replace(GEMV_BC_MULTI_MIN_B=least)).kernel == "gemv"
    assert _choose(grid.H100, 2, N=least // 4096, tuning=DEFAULT.replace(GEMV_BC_MULTI_MIN_B=1 << 40)).kernel == "gemv"
    assert _choose(grid.H100, 1, K=16, N=16).kernel == "gemv"
    assert _choose(grid.H100, 2, N=11008, tuning=DEFAULT.replace(GEMV_MAX_M=1)).kernel == "stream"
    assert _choose(grid.H100, 1, tuning=DEFAULT.replace(GEMV=False)).kernel == "stream"


def test_rule_row_stream():
    from vkops.ops.qlmm.tuning import DEFAULT

    c = _choose(grid.H100, 16)
    assert (c.kernel, c.stream) == ("stream", (16, 32)) and "STREAM_MAX_M" in c.why
    assert _choose(grid.H100, 5, N=11008).stream == (16, 64)
    assert _choose(grid.H100, 15, adt="uint8", bdt="uint8", zp="device").kernel == "stream"  # + the row of ones
    # no row left for it: the tiles beside cooperative matrices (DOT_MAX_M_COOPMAT), the dot kernel without them
    assert _choose(grid.H100, 16, adt="uint8", zp="device").kernel == "coopmat"
    assert _choose(grid.H100.replace(coopmat_verified=False), 16, adt="uint8", zp="device").kernel == "dot"
    assert _choose(grid.H100, 17).kernel == "coopmat"
    assert _choose(grid.H100.replace(coopmat_verified=False), 16).kernel == "dot"
    assert _choose(grid.H100, 16, tuning=DEFAULT.replace(STREAM=False)).kernel == "coopmat"


def test_rule_row_dot():
    from vkops.ops.qlmm.tuning import DEFAULT

    c = _choose(grid.LAVAPIPE, 32)
    assert (c.kernel, c.dot) == ("dot", 32) and "integer dot products" in c.why
    assert _choose(grid.LAVAPIPE, 33).kernel == "portable" and _choose(grid.LAVAPIPE, 8, K=1040 - 8).kernel == "portable"
    no_stream = DEFAULT.replace(STREAM=False)  # beside cooperative matrices: where direct B would not win
    assert _choose(grid.H100, 4, tuning=no_stream).kernel == "dot"  # <= DOT_COOP_MAX_M rows
    assert _choose(grid.H100, 5, tuning=no_stream).kernel == "coopmat"  # direct B
    assert _choose(grid.H100, 15, layout="cols", tuning=no_stream).kernel == "dot"  # <= DOT_MAX_M_COOPMAT rows
    assert _choose(grid.H100, 15, adt="uint8", zp="device", tuning=no_stream).kernel == "dot"
    assert _choose(grid.H100, 16, layout="cols", tuning=no_stream).kernel == "coopmat"
    assert _choose(grid.LAVAPIPE, 8, tuning=DEFAULT.replace(DOT=False)).kernel == "portable"


def test_rule_row_coopmat():
    c = _choose(grid.H100, 100)
    assert (c.kernel, c.config, c.kname) == ("coopmat", "128x64x128_4x2", "qlmm_coopmat_bt") and "16-element" in c.why
    assert _choose(grid.H100, 100, N=20).kernel == "portable"  # not in whole 16-element steps


def test_rule_row_portable():
    assert _choose(grid.LIMITS["minimum"], 8).kernel == "portable"  # no dot products, no cooperative matrices


def test_forced_kernels_and_their_refusals():
    import pytest

    from vkops.errors import DeviceLimitError, ValidationError

    assert _choose(grid.H100, 1, kernel="portable").kernel == "portable"
    assert _choose(grid.H100, 1, kernel="coopmat").kernel == "coopmat"
    assert _choose(grid.H100, 1, kernel="dot").kernel == "dot"
    for kernel, lim, M, kw, err, why in (
            ("coopmat", grid.LAVAPIPE, 16, {}, DeviceLimitError, "kernel='coopmat' needs VK_KHR_cooperative_matrix"),
            ("stream", grid.H100, 16, {"N": 20}, ValidationError, "kernel='stream' needs K and N multiples of 16"),
            ("stream", grid.H100, 17, {}, DeviceLimitError, "kernel='stream' cannot run this product: M = 17 is above 16"),
            ("dot", grid.LIMITS["minimum"], 1, {}, DeviceLimitError, "kernel='dot' cannot run this product: Vulkan 1.1"),
            ("gemv", grid.H100, 3, {}, DeviceLimitError, "kernel='gemv' cannot run this product: M = 3 is above 2"),
            ("fast", grid.H100, 2, {}, ValidationError, "kernel must be 'auto', 'portable'")):
        with pytest.raises(err, match=why):
            _choose(lim, M, kernel=kernel, **kw)
