"""Named shape sweeps. `paper` holds the shapes of the performance tables (docs/performance/), `llm` LLM-vocabulary
TOP_K1 and decoding-sized QLinearMatMul, `small` shapes a CPU driver (lavapipe) runs in seconds."""
from __future__ import annotations

from typing import Dict, List

from .cases import Case, qlmm_case, slice_case, top_k_case

PRESETS = ("small", "paper", "llm")
KS = (1, 8, 64, 256, 1024)
LLM_ROWS, LLM_VOCABS, LLM_KS = (1, 8, 64, 256), (32000, 128256, 151936), (1, 50, 256, 1024)
SLICE_WINDOWS = ("copy", "stride2", "flip0", "crop", "reverse2")


def top_k(preset: str) -> List[Case]:
    if preset == "small":
        grid = [("float32", (16, 4096), KS[:3]), ("float32", (1, 1 << 16), (8, 64)), ("float32", (64, 1024), (8, 256)),
                ("uint8", (16, 4096), (8,)), ("float16", (16, 4096), (8,))]
    elif preset == "paper":  # issue 4's grid, then short rows (radix select from K = 2)
        grid = [("float32", (4096, 32768), KS), ("float32", (64, 1 << 20), KS), ("float32", (1, 1 << 26), KS),
                ("float32", (32768, 1024), KS), ("float32", (1, 1024), KS),
                ("uint8", (4096, 32768), (8, 256)), ("float16", (4096, 32768), (8, 256)),
                ("float32", (4096, 4096), (8, 64, 256, 1024)), ("float32", (16384, 2048), (2, 64, 1024))]
    else:  # sampling over LLM vocabularies
        grid = [(dt, (r, v), LLM_KS) for dt in ("float32", "float16") for v in LLM_VOCABS for r in LLM_ROWS]
    return [top_k_case(shape, dt, k) for dt, shape, ks in grid for k in ks]


def slice_shapes(gib: float):
    """docs/performance/slice1.md's table: a `gib` GiB input, float32 rows of 16384 (4096 below 256 MiB), and the
    same bytes as uint8 with twice the rows and columns' worth of elements."""
    nbytes = int(gib * 2**30)
    c = 16384 if nbytes >= 2**28 else 4096
    r = nbytes // (4 * c)
    return (r, c), (2 * r, 2 * c)


def slice_(preset: str, gib: float = None) -> List[Case]:
    if preset == "llm":
        return []
    f32, u8 = slice_shapes(gib if gib is not None else (1 / 256 if preset == "small" else 1.0))
    return [slice_case(f32, "float32", w) for w in SLICE_WINDOWS[:4]] + [slice_case(u8, "uint8", "reverse2")]


def qlmm(preset: str) -> List[Case]:
    if preset == "small":
        shapes, dts = [(64, 256, 256), (2, 64, 128, 128)], ("int8xint8", "uint8xint8")
    elif preset == "paper":
        shapes, dts = [(4096, 4096, 4096), (8192, 8192, 8192), (32, 4096, 4096), (8, 1024, 1024, 1024)], \
            ("int8xint8", "uint8xint8")
    else:  # decoding: a few rows of activations against a weight matrix
        shapes, dts = [(1, 4096, 4096), (16, 4096, 4096), (16, 8192, 8192), (32, 4096, 4096), (32, 8192, 8192),
                       (128, 4096, 4096)], ("int8xint8",)
    cases = [qlmm_case(s, dt) for s in shapes for dt in dts]
    if preset == "llm":  # uint8 activations with zero points; int8 weights as PyTorch holds them (N x K), read in place
        cases += [qlmm_case(s, "uint8xint8") for s in [(16, 4096, 4096), (16, 8192, 8192)]]
        cases += [qlmm_case(s, "int8xint8", "column-major") for s in [(1, 4096, 4096), (16, 4096, 4096), (16, 8192, 8192)]]
    return cases


SWEEPS = {"top_k": top_k, "slice": slice_, "qlmm": qlmm}


def cases(preset: str, ops) -> List[Case]:
    out: List[Case] = []
    for op in ops:
        out += SWEEPS[op](preset)
    return out


def describe() -> Dict[str, Dict[str, int]]:
    """Cases per preset and operator (for --help)."""
    return {p: {op: len(f(p)) for op, f in SWEEPS.items()} for p in PRESETS}
