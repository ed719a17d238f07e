"""QUANTIZED_LINEAR_MATRIX_MULTIPLY throughput (TOPS = 2*B*M*N*K / time), requantization included.

On a GPU with torch beside it, the same run times torch._int_mm (int8 x int8 -> int32, no
requantization) with B column-major (the cuBLASLt fast path) and row-major, as the cross-API anchor,
and onnxruntime's CPU QLinearMatMul where installed. Every vkops kernel configuration is checked
against the NumPy oracle on sampled rows first.
Usage: python bench/bench_qlmm.py [--small] [--reps 10] [--configs all|best]
"""
from __future__ import annotations

import argparse
import time
import traceback

import numpy as np

from common import cuda_torch, table, torch_ms, vk_gpu_ms, write_results

import vkops
from vkops.ops import qlmm_coopmat as QC


def operands(rng, batch, M, K, N, adt, bdt, zp):
    a = rng.integers(np.iinfo(adt).min, np.iinfo(adt).max + 1, (batch, M, K)).astype(adt)
    b = rng.integers(np.iinfo(bdt).min, np.iinfo(bdt).max + 1, (batch, K, N)).astype(bdt)
    sa = rng.uniform(0.5, 1.5, M).astype(np.float32) * 0.02
    sb = rng.uniform(0.5, 1.5, N).astype(np.float32) * 0.02
    so = np.float32(0.02 * 0.02 * np.sqrt(K) * 128 * 128 / 3 / 60)
    za = (np.full(M, 3, adt) if zp else None)
    zb = (rng.integers(0, 9, N).astype(bdt) if zp else None)
    zo = np.int8(0)
    return a, sa, za, b, sb, zb, so, zo


def check_rows(dev_out, args, rows):
    """Compare sampled output rows with the oracle's formula; the sums go through float64 BLAS, which
    is exact here (|sum| <= 255 * 255 * K << 2**53)."""
    a, sa, za, b, sb, zb, so, zo = args
    got = dev_out.numpy()[:, rows, :]
    a64 = a[:, rows, :].astype(np.float64) - (0 if za is None else za[rows, None].astype(np.float64))
    b64 = b.astype(np.float64) - (0 if zb is None else zb.astype(np.float64))
    acc = np.matmul(a64, b64)
    y = np.rint(acc * (sa[rows, None].astype(np.float64) * sb / np.float64(so))) + float(zo)
    want = np.clip(y, -128, 127).astype(np.int8)
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    return int(d.max()), float((d == 0).mean())


_cache = {}
def cached_operands(rng, batch, M, K, N, adt, bdt, zp):
    key = (batch, M, K, N, np.dtype(adt).name, np.dtype(bdt).name, zp)
    if key not in _cache:
        _cache.clear()
        host = operands(rng, batch, M, K, N, adt, bdt, zp)
        dev = [None if x is None else (vkops.to_device(x) if isinstance(x, np.ndarray) and x.ndim >= 1 else x)
               for x in host]
        _cache[key] = (host, dev)
    return _cache[key]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="CPU-sized shapes (lavapipe)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--configs", default="all")
    ap.add_argument("--skinny", action="store_true", help="decoding-sized M (16, 32, 128) and 16-row tiles")
    args = ap.parse_args()
    dev = vkops.Device()
    args.small = args.small or dev.device_type == "cpu"  # lavapipe: CPU-sized shapes
    rng = np.random.default_rng(0)
    print(dev, flush=True)
    coop = QC.coopmat_supported(dev)
    verdict = None
    if coop:
        try:
            verdict = QC.self_check(dev)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            verdict = False
    split_ok = QC.split_verified(dev) if coop else None
    print(f"coopmat supported: {coop}; self-check: {verdict}; split-K self-check: {split_ok}", flush=True)
    torch = cuda_torch()

    if args.skinny:
        # 32 x 4096^2 first, as a sacrifice: on the lent H100 the whole first shape of a process measured
        # 2-4x slow, torch's calls too (16x4096^2 _int_mm 0.037 ms first, 0.023 later), and a 3 s warm-up
        # first did not help
        shapes = [("32x4096x4096", 1, 32, 4096, 4096), ("16x4096x4096", 1, 16, 4096, 4096),
                  ("16x8192x8192", 1, 16, 8192, 8192), ("128x4096x4096", 1, 128, 4096, 4096)]
    elif args.small:
        shapes = [("256^3", 1, 256, 256, 256), ("512^3", 1, 512, 512, 512), ("4x256^3", 4, 256, 256, 256)]
    else:
        shapes = [("4096^3", 1, 4096, 4096, 4096), ("8192^3", 1, 8192, 8192, 8192),
                  ("32x4096x4096", 1, 32, 4096, 4096), ("8x1024^3", 8, 1024, 1024, 1024)]
    rows_out = []

    def vk_case(shape_name, batch, M, K, N, adt, bdt, zp, kernel, config=None, split_k=None, group_m=None):
        args_, dargs = cached_operands(rng, batch, M, K, N, adt, bdt, zp)
        QC.COOPMAT_CONFIG = config or "auto"
        QC.COOPMAT_SPLIT_K = "auto" if split_k is None else split_k
        QC.COOPMAT_GROUP_M = 1 if group_m is None else group_m
        used = QC.auto_config(M, N, batch) if QC.COOPMAT_CONFIG == "auto" else config
        nout = 4 if M * N * batch >= 8192 * 8192 else (20 if M * N * batch >= 4096 * 4096 else 40)
        outs = [dev.empty(vkops.TensorDesc(np.int8, (1, batch, M, N))) for _ in range(nout)]
        call = lambda o: vkops.quantized_linear_matmul(*dargs, out=o, kernel=kernel)  # noqa: E731
        call(outs[0])
        rows = np.sort(rng.choice(M, min(M, 16), replace=False))
        mx, ex = check_rows(outs[0].reshape(batch, M, N), args_, rows)
        # len(outs) calls into distinct outputs, back to back in one submission
        ms = vk_gpu_ms(lambda r: call(outs[r]), len(outs), dev)
        ms1 = vk_gpu_ms(lambda r: call(outs[0]), args.reps, dev, warm_s=0)  # one dispatch per submission, no warm-up
        ops = 2.0 * batch * M * N * K
        tiles = -(-M // QC.COOPMAT_CONFIGS[used][0]) * -(-N // QC.COOPMAT_CONFIGS[used][1]) * batch
        nch = -(-K // QC.COOPMAT_CONFIGS[used][2])
        sk = (QC.auto_split(tiles, nch) if QC.COOPMAT_SPLIT_K == "auto" else int(QC.COOPMAT_SPLIT_K)) if kernel != "portable" else 1
        last = next(reversed(dev._plans._entries.values()))  # the plan the calls ran: its kernel and tile
        if kernel != "portable":
            used, sk = last.note("config", used), last.note("split_k", sk)
        which = kernel if kernel == "portable" else (f"{last.dispatches[-1].kernel} {used}{' (auto)' if not config else ''}"
                                                     f"{f' splitK{sk}' if sk > 1 else ''}{f' G{group_m}' if group_m else ''}")
        row = {"shape": shape_name, "types": f"{np.dtype(adt).name}x{np.dtype(bdt).name}", "zp": zp, "impl": which,
               "ms": ms, "TOPS": ops / ms / 1e9, "ms_1sub": ms1, "maxdiff": mx, "exact": ex}
        rows_out.append(row)
        print(row, flush=True)
        write_results("qlmm", rows_out)
        del outs
        QC.COOPMAT_CONFIG, QC.COOPMAT_SPLIT_K, QC.COOPMAT_GROUP_M = "auto", "auto", 1
        return row

    def torch_case(shape_name, batch, M, K, N):
        Mp = max(M, 32)  # torch._int_mm needs M > 16: A padded with zero rows; TOPS count the real M
        A = torch.randint(-128, 128, (batch, Mp, K), dtype=torch.int8, device="cuda")
        Bt = torch.randint(-128, 128, (batch, N, K), dtype=torch.int8, device="cuda")
        Brow = Bt.transpose(1, 2).contiguous()
        ops = 2.0 * batch * M * N * K
        for layout, Bs in (("B col-major", [Bt[i].t() for i in range(batch)]), ("B row-major", [Brow[i] for i in range(batch)])):
            try:
                ms, _ = torch_ms(lambda: [torch._int_mm(A[i], Bs[i]) for i in range(batch)], args.reps)
            except Exception as e:  # noqa: BLE001
                print("torch._int_mm failed:", e)
                continue
            pad = f" (A padded to {Mp} rows)" if Mp != M else ""
            row = {"shape": shape_name, "types": "int8xint8->int32", "zp": False, "impl": f"torch._int_mm {layout}{pad}",
                   "ms": ms, "TOPS": ops / ms / 1e9}
            rows_out.append(row)
            print(row, flush=True)
        del A, Bt, Brow

    def ort_case(shape_name, batch, M, K, N):
        try:
            import onnxruntime as ort
            from onnx import TensorProto, helper
        except ImportError:
            return
        g = helper.make_graph(
            [helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "so", "zo"], ["y"])], "q",
            [helper.make_tensor_value_info("a", TensorProto.UINT8, [batch, M, K]),
             helper.make_tensor_value_info("b", TensorProto.INT8, [batch, K, N])],
            [helper.make_tensor_value_info("y", TensorProto.UINT8, [batch, M, N])],
            [helper.make_tensor("sa", TensorProto.FLOAT, [], [0.02]), helper.make_tensor("za", TensorProto.UINT8, [], [128]),
             helper.make_tensor("sb", TensorProto.FLOAT, [], [0.02]), helper.make_tensor("zb", TensorProto.INT8, [], [0]),
             helper.make_tensor("so", TensorProto.FLOAT, [], [0.5]), helper.make_tensor("zo", TensorProto.UINT8, [], [100])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        a = rng.integers(0, 256, (batch, M, K)).astype(np.uint8)
        b = rng.integers(-128, 128, (batch, K, N)).astype(np.int8)
        sess.run(None, {"a": a, "b": b})
        ts = []
        for _ in range(2):
            t = time.perf_counter()
            sess.run(None, {"a": a, "b": b})
            ts.append((time.perf_counter() - t) * 1e3)
        ms = float(np.median(ts))
        row = {"shape": shape_name, "types": "uint8xint8->uint8", "zp": True, "impl": "onnxruntime CPU QLinearMatMul",
               "ms": ms, "TOPS": 2.0 * batch * M * N * K / ms / 1e9}
        rows_out.append(row)
        print(row, flush=True)

    summary = []
    for i, (name, batch, M, K, N) in enumerate(shapes):
        main_rows = {}
        if coop:
            extra = []
            if args.skinny and M <= 16:  # B read directly (int8 x int8), against the staged kernel's auto tile
                extra = [dict(config="16x64x128_4x1", split_k=sk) for sk in (4, 8, 16)]
                extra += [dict(config="16x64x256_4x1", split_k=sk) for sk in (2, 4, 8)]
                extra += [dict(config=c) for c in ("16x128x128_4x1", "32x64x128_2x2")]
            elif args.configs == "all" and not args.small and not args.skinny:
                if i == 0:
                    extra = [dict(config=c) for c in ("128x256x64_4x2", "256x128x64_2x4", "64x64x64_2x2")]
                    extra += [dict(group_m=8)]
                elif M <= 64:
                    extra = [dict(config="32x64x128_2x2", split_k=1), dict(config="32x64x128_2x2", split_k=8),
                             dict(config="32x64x128_2x2", split_k=16), dict(config="32x64x256_2x2", split_k=4)]
            for kw in extra:
                try:
                    vk_case(name, batch, M, K, N, np.int8, np.int8, False, "coopmat", **kw)
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
            for adt, bdt, zp in ((np.int8, np.int8, False), (np.uint8, np.int8, True), (np.uint8, np.uint8, False)):
                try:
                    main_rows[(np.dtype(adt).name, np.dtype(bdt).name, zp)] = vk_case(
                        name, batch, M, K, N, adt, bdt, zp, "coopmat")
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
        if (i == 0 and not args.skinny) or args.small:
            vk_case(name, batch, M, K, N, np.int8, np.int8, False, "portable")
            vk_case(name, batch, M, K, N, np.uint8, np.int8, True, "portable")
        _cache.clear()
        n_before = len(rows_out)
        if torch is not None:
            torch_case(name, batch, M, K, N)
        tr = {r["impl"]: r for r in rows_out[n_before:]}
        if name != "8192^3":
            try:
                ort_case(name, batch, M, K, N)
            except Exception:  # noqa: BLE001
                traceback.print_exc()
        ii = main_rows.get(("int8", "int8", False), {})
        uz = main_rows.get(("uint8", "int8", True), {})
        tc = next((r["TOPS"] for k, r in tr.items() if k.startswith("torch._int_mm B col-major")), None)
        trw = next((r["TOPS"] for k, r in tr.items() if k.startswith("torch._int_mm B row-major")), None)
        summary.append({"shape": name, "ours i8xi8": ii.get("TOPS"), "ours u8xs8+zp": uz.get("TOPS"),
                        "torch col-major": tc, "torch row-major": trw,
                        "ours/col": (ii["TOPS"] / tc) if ii and tc else None,
                        "ours/row": (ii["TOPS"] / trw) if ii and trw else None,
                        "check maxdiff": max([r.get("maxdiff", 0) for r in main_rows.values()] or [None]) if main_rows else None,
                        "check exact": min([r.get("exact", 1.0) for r in main_rows.values()] or [None]) if main_rows else None})

    print(f"\nQUANTIZED_LINEAR_MATRIX_MULTIPLY on {dev.name} ({dev.driver}); coopmat self-check: {verdict}, split-K: {split_ok}")
    print(table(rows_out, ["shape", "types", "zp", "impl", "ms", "TOPS", "ms_1sub", "maxdiff", "exact"]))
    print("\nSummary (TOPS incl. requantization; ms = median per dispatch, back to back in one submission, "
          "timed as bench/common.py does; ms_1sub = one dispatch per submission, clock not held up):")
    print(table(summary, ["shape", "ours i8xi8", "ours u8xs8+zp", "torch col-major", "torch row-major", "ours/col",
                          "ours/row", "check maxdiff", "check exact"]))
    print("results:", write_results("qlmm", rows_out))


if __name__ == "__main__":
    main()
