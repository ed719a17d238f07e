"""QUANTIZED_LINEAR_MATRIX_MULTIPLY's cooperative-matrix self-check: small products through every tile the rule may
pick (coopmat.auto_configs), the B-transposed, column-major, direct, streamed and tail-split builds, with and without
zero points, compared with the NumPy oracle before planning trusts the kernels (coopmat._verdict remembers the
verdict across processes). libvkops' vk_selfcheck.cpp is its C counterpart."""
from __future__ import annotations

import numpy as np

from ...tensor import TensorDesc
from . import stream as qlmm_stream
from .coopmat import COOPMAT_CONFIGS, auto_configs, device_limits
from .tuning import DEFAULT


def run(dev, split: bool = False) -> bool:
    """Run small problems through both coopmat variants in a batch of their own; compare with the oracle.
    split=True checks the split-K variants instead. It checks the tiles of the default tuning (its verdict
    is kept per device, whatever tuning a call passes)."""
    from ... import reference  # noqa: PLC0415
    from .desc import QuantizedLinearMatMulDesc  # noqa: PLC0415
    from .lowering import plan  # noqa: PLC0415
    from ...runtime import Batch  # noqa: PLC0415
    from ...runtime.execute import execute  # noqa: PLC0415

    T = DEFAULT
    rng = np.random.default_rng(1234)
    ok = True
    cases = [(np.uint8, np.int8, True, c) for c in auto_configs(T)] + [(np.int8, np.int8, False, T.LARGE_CONFIG),
                                                                       (np.uint8, np.uint8, True, T.LARGE_CONFIG)]
    cases += [(np.int8, np.int8, False, c) for c in T.BT_CONFIGS]  # B staged transposed
    cases += [(np.uint8, np.int8, True, c) for c in T.DB_CONFIGS] + [(np.int8, np.int8, False, c) for c in T.DB_CONFIGS]
    if T.COOPMAT_CONFIG != "auto":
        cases.append((np.int8, np.uint8, True, T.COOPMAT_CONFIG))
    # B read directly, row-major and column-major (a transposed view)
    direct = [(np.int8, np.int8, False, T.DIRECT_CONFIG, sk, cols) for sk in ((3,) if split else (1,))
              for cols in (False, True)]
    # B streamed (kernel "stream", config "nr<NR>"): every tile shape of kernels/variants.py, signed
    # without sums (13 rows) and unsigned with zero points from a column-major view (15 rows and the row
    # of ones)
    stream = [(a, b, zp, f"nr{nr}", 3 if split else 1, cols) for nr in qlmm_stream.TILES
              for a, b, zp, cols in ((np.int8, np.int8, False, False), (np.uint8, np.uint8, True, True))]
    # B column-major staged as it lies (BC), with and without zero-point sums
    bc = [(np.int8, np.int8, False, c, 3 if split else 1, True)
          for c in (T.BC_LARGE_CONFIG, T.BC_MID_CONFIG, T.BC_WAVE_CONFIG, T.MID_WAVE_CONFIG)]
    bc += [(np.uint8, np.int8, True, c, 2 if split else 1, True) for c in (T.BC_LARGE_CONFIG, T.SMALL_CONFIG, T.BC_WAVE_CONFIG)
           + T.WAVE_FIT_CONFIGS + (T.MID_FIT_CONFIG,)]
    # row-major B transposed first (BC_TRANSPOSE_MIN_M rows), with zero-point sums; split without
    tr = (np.int8, np.int8, False, "transposed", 2, False) if split else (np.uint8, np.int8, True, "transposed", 1, False)
    bc = (bc + ([tr] if T.BC_TRANSPOSE_MIN_M else [])) if T.COOPMAT_BC else []
    cases = [c + (1, False) for c in cases] + direct + stream + bc
    if split:  # with and without the row/column sums; K = 400: 4 chunks of 128 (7 of 64), the last one partial
        cases = [(np.uint8, np.int8, True, T.SMALL_CONFIG, 2, False), (np.int8, np.int8, False, T.SMALL_CONFIG, 3, False),
                 (np.uint8, np.uint8, True, T.FEW_TILES_CONFIG, 4, False), (np.int8, np.uint8, True, T.MID_CONFIG, 2, False),
                 (np.uint8, np.int8, True, T.LOW_CONFIG, 3, False), (np.uint8, np.int8, True, T.LARGE_CONFIG, 2, False),
                 (np.int8, np.int8, False, T.LARGE_CONFIG, 3, False)] + direct + stream + bc
        cases += [(np.int8, np.int8, False, c, 2, False) for c in T.BT_CONFIGS]  # B staged transposed
        cases += [(np.int8, np.int8, False, c, 2, False) for c in T.DB_CONFIGS]  # two shared buffers
        cases += [(np.int8, np.int8, False, "tail", None, False),  # a tail split (tail_split), below,
                  (np.uint8, np.int8, True, "tail", None, False)]  # with zero-point sums too
    ran = set()  # the kernels the cases ran: B staged transposed among them, with zero-point sums and without
    for a_dt, b_dt, zps, config, sk, cols in cases:
        M, N, K = (72, 96, 144) if sk == 1 else (40, 96, 400)  # M not a tile multiple, K not of TILE_K
        batches, tun = 2, T
        if config == "tail":  # 10 large tiles in waves of 4: 8 whole, the last 2 split 2 ways (7 K chunks)
            config, M, N, K, batches = T.LARGE_CONFIG, 600, 144, 400, 1
            tun = T.replace(TAIL_SPLIT=True, AUTO_MIN_GROUPS=4, LARGE_MIN_TILES=4, TAIL_MIN_CHUNKS=3)
        if config == T.DIRECT_CONFIG:  # M <= 16 (one batch: two would fold into 26 rows); K a multiple of
            # TILE_K; N a multiple of 16, not of TILE_N
            M, N, K, batches = 13, 144, 2 * COOPMAT_CONFIGS[T.DIRECT_CONFIG][2], 1
        if config == "transposed":  # the threshold's rows, 2 tile columns, N not of 128, K not of 64
            config, M, N, K, batches = T.BC_LARGE_CONFIG, T.BC_TRANSPOSE_MIN_M, 144, 400, 1
        if config.startswith("nr"):  # N not a multiple of NR, K not of the steps
            M, N, K, batches = 15 if zps else 13, 144, 1040, 1
        a = rng.integers(np.iinfo(a_dt).min, np.iinfo(a_dt).max + 1, (batches, 1, M, K)).astype(a_dt)
        b = rng.integers(np.iinfo(b_dt).min, np.iinfo(b_dt).max + 1, (1, 1, K, N)).astype(b_dt)
        sa = rng.uniform(0.01, 0.03, (1, 1, M, 1)).astype(np.float32)
        sb = rng.uniform(0.01, 0.03, (1, 1, 1, N)).astype(np.float32)
        so = np.full((1, 1, 1, 1), 2.0, np.float32)
        za = rng.integers(0, 100, (1, 1, M, 1)).astype(a_dt) if zps else None
        zb = rng.integers(0, 100, (1, 1, 1, N)).astype(b_dt) if zps else None
        zo = np.full((1, 1, 1, 1), 7, np.int8)
        want = reference.quantized_linear_matmul(a, sa, za, b, sb, zb, so, zo)
        ts = [None if x is None else dev.tensor(x) for x in (a, sa, za, None if cols else b, sb, zb, so, zo)]
        if cols:  # b as a {1,1,K,N} view of an N x K matrix
            ts[3] = dev.tensor(np.ascontiguousarray(b[0, 0].T)).as_strided((1, 1, K, N), (0, 0, 1, K))
        desc = QuantizedLinearMatMulDesc(*[None if t is None else t.desc for t in ts],
                                         TensorDesc(np.int8, want.shape)).validate()
        out = dev.empty(desc.output)
        batch = Batch(dev)
        kind = "stream" if config.startswith("nr") else "coopmat"
        lim = device_limits(dev, verified=False)
        lim = lim if tun is T else lim.replace(coopmat_split_verified=True)  # auto split-K: the tail split
        p = plan(desc, lim, kernel=kind, config=config, split_k=sk, tuning=tun)
        assert (p.note("whole_tiles") == 8) == (tun is not T), p.notes  # the tail case runs what it checks
        if config == T.DIRECT_CONFIG or kind == "stream":  # the case runs what it checks
            assert p.dispatches[-1].kernel.startswith("qlmm_coopmat_direct" if kind == "coopmat" else
                                                      "qlmm_stream_m16n" + config[2:])
            assert cols == (p.note("b_layout") == "column-major") and len(p.dispatches) == 1
            assert kind == "coopmat" or p.note("split_k") == sk, (p.note("split_k"), sk)
        elif M >= T.BC_TRANSPOSE_MIN_M > 0 and T.COOPMAT_BC and not cols:  # B transposed first, then BC
            assert [d.kernel for d in p.dispatches] == ["qlmm_transpose", "qlmm_coopmat" + ("_bc" if not zps else "_zp_bc")
                                                         + ("_sk" if p.note("split_k") > 1 else "")], p.dispatches
        elif cols:  # BC: B read as it lies, by the split build where the case splits
            assert p.dispatches[-1].kernel == "qlmm_coopmat" + ("_bc" if not zps else "_zp_bc") + ("_sk" if sk > 1 else "")
            assert p.note("b_layout") == "column-major", p.notes
        execute(p, batch, [t for t in ts if t is not None], [out])
        batch.run()
        ran.update(d.kernel for d in p.dispatches)
        got = out.numpy()
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        ok &= bool(diff.max() <= 1 and (diff == 0).mean() >= 0.99)
    sk = "_sk" if split else ""
    need = {"qlmm_coopmat_bt" + sk} | ({"qlmm_coopmat_zp_bt" + sk} if T.BT_SUMS else set()) if T.BT_CONFIGS else set()
    assert need <= ran, (need, ran)  # the check ran what it vouches for
    return ok


