"""Tables and a report from result documents (vkops/bench/schema.py): `python -m vkops report
RESULTS.json [more.json ...] --out DIR` writes DIR/report.md and PNG plots (matplotlib, Agg).

Per run and operator: a table of every case with each implementation's time, vkops' throughput and
its speedup against the chosen baseline, a throughput plot (bars per implementation per case) and a
speedup plot. With several runs, the same cases across runs (vkops' throughput per machine).
Times compared: GPU ms where both sides have it (vkops, torch), else wall ms (the CPU baselines
against vkops' eager device-resident call).
"""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .cases import case_from_row
from .specs import SPECS
from .schema import errors

DPI = 100
HEIGHT_IN = 4.0
MANY = 24  # cases in one plot beyond which labels stand upright (and the figure grows to hold them)
PREFERRED_BASELINES = ("torch", "onnxruntime", "numpy")


# -- text tables ------------------------------------------------------------------------------------ #
def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) >= 100 else f"{v:.3f}" if abs(v) >= 0.01 or v == 0 else f"{v:.3g}"
    return str(v)


def table(rows: Sequence[dict], cols: Sequence[str], headers: Optional[Sequence[str]] = None) -> str:
    """A Markdown table of `cols` of each row (missing values as '-')."""
    headers = list(headers or cols)
    cells = [[fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max([len(h)] + [len(x[i]) for x in cells]) for i, h in enumerate(headers)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(x.ljust(w) for x, w in zip(r, widths)) + " |" for r in cells]
    return "\n".join(lines)


def case_label(row: dict, with_op: bool = False) -> str:
    label = case_from_row(row).label()
    return label if with_op else label.split(" ", 1)[1]


def unit(op: str) -> str:
    return SPECS[op].unit


def row_line(row: dict) -> str:
    """One measured row as a line (the sweep prints these as it goes)."""
    tp = row["gb_per_s"] if row["gb_per_s"] is not None else row["tops"]
    parts = [f"{case_label(row, True)} | {row['implementation']}:"]
    if row["gpu_ms"] is not None:
        parts.append(f"GPU {row['gpu_ms']:.3f} ms,")
    parts.append(f"wall {fmt(row['wall_ms'])} ms,")
    if tp is not None:
        parts.append(f"{tp:.4g} {unit(row['op'])},")
    parts.append(("verified" if row["verified"] else "FAILED") + (f" ({row['check']})" if row["check"] else ""))
    return " ".join(parts)


def run_table(doc: dict) -> str:
    """Every row of one run, as the sweep prints it at the end."""
    rows = [{**r, "case": case_label(r, True), "throughput": r["gb_per_s"] if r["gb_per_s"] is not None else r["tops"],
             "unit": unit(r["op"]), "ok": {True: "yes", False: "FAILED", None: "-"}[r["verified"]]}
            for r in doc["rows"]]
    return table(rows, ["case", "implementation", "gpu_ms", "wall_ms", "batch_wall_ms", "throughput", "unit", "ok",
                        "note"],
                 ["case", "implementation", "GPU ms", "wall ms", "batch wall ms", "throughput", "unit", "verified",
                  "note"])


# -- grouping ----------------------------------------------------------------------------------------- #
def _key(row: dict) -> Tuple:
    return row["op"], tuple(row["shape"]), row["dtype"], json.dumps(row["params"], sort_keys=True)


def by_case(rows: Sequence[dict]) -> Dict[Tuple, Dict[str, dict]]:
    """case key -> implementation -> row, in first-seen order."""
    out: Dict[Tuple, Dict[str, dict]] = {}
    for r in rows:
        out.setdefault(_key(r), {})[r["implementation"]] = r
    return out


def implementations(rows: Sequence[dict]) -> List[str]:
    names = list(dict.fromkeys(r["implementation"] for r in rows))
    return sorted(names, key=lambda n: (0 if n.startswith("vkops") else 1 if n.startswith("vkCmd") else 2, names.index(n)))


def compare_ms(mine: dict, other: dict) -> Tuple[Optional[float], Optional[float]]:
    """(my ms, their ms) on one basis: GPU where both have it, else wall."""
    if mine.get("gpu_ms") is not None and other.get("gpu_ms") is not None:
        return mine["gpu_ms"], other["gpu_ms"]
    return mine.get("wall_ms"), other.get("wall_ms")


def speedup(impls: Dict[str, dict], baseline: Optional[str]) -> Optional[float]:
    if baseline is None or "vkops" not in impls or baseline not in impls:
        return None
    a, b = compare_ms(impls["vkops"], impls[baseline])
    return b / a if a and b else None


def main_ms(row: dict) -> Optional[float]:
    return row["gpu_ms"] if row["gpu_ms"] is not None else row["wall_ms"]


def throughput(row: Optional[dict]) -> Optional[float]:
    if row is None:
        return None
    return row["gb_per_s"] if row["gb_per_s"] is not None else row["tops"]


def choose_baseline(rows: Sequence[dict], wanted: Optional[str]) -> Optional[str]:
    names = {r["implementation"] for r in rows}
    if wanted:
        return wanted if wanted in names else None
    return next((n for n in PREFERRED_BASELINES if n in names), None)


# -- plots ------------------------------------------------------------------------------------------- #
def fig_size(n_cases: int) -> Tuple[float, float]:
    """Inches: half an inch a case, 6 to 16 wide, HEIGHT_IN high (one more beyond MANY cases); at DPI,
    whole pixels."""
    return min(16.0, max(6.0, 2.0 + 0.5 * n_cases)), HEIGHT_IN + (n_cases > MANY)


def _pyplot():
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return None
    return plt


def _bars(plt, path: Path, labels: List[str], series: Dict[str, List[Optional[float]]], ylabel: str, title: str,
          hline: Optional[float] = None) -> Path:
    fig, ax = plt.subplots(figsize=fig_size(len(labels)), dpi=DPI)
    n = max(1, len(series))
    width = 0.8 / n
    vals = [v for s in series.values() for v in s if v]
    for j, (name, ys) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(labels))]
        ax.bar(xs, [y or 0 for y in ys], width, label=name)
    if vals and max(vals) / max(min(vals), 1e-12) > 100:
        ax.set_yscale("log")
    if hline is not None:
        ax.axhline(hline, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)))
    many = len(labels) > MANY
    ax.set_xticklabels(labels, rotation=90 if many else 35 if len(labels) > 4 else 0,
                       ha="center" if many or len(labels) <= 4 else "right", fontsize=5 if many else 7)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    if n > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=DPI, format="png")
    plt.close(fig)
    _small_png(buf, path)
    return path


def _small_png(buf: io.BytesIO, path: Path) -> None:
    """A 256-colour palette PNG (a fifth of the RGBA file: small enough to commit), when Pillow is
    there (matplotlib depends on it); else the PNG as drawn."""
    try:
        from PIL import Image  # noqa: PLC0415
    except ImportError:
        path.write_bytes(buf.getvalue())
        return
    buf.seek(0)
    Image.open(buf).convert("RGB").quantize(colors=256).save(path, optimize=True)


# -- the report ---------------------------------------------------------------------------------------- #
def load(paths: Sequence[str]) -> List[dict]:
    docs = []
    for p in paths:
        doc = json.loads(Path(p).read_text())
        errs = errors(doc)
        if errs:
            raise ValueError(f"{p} is not a vkops bench result: {'; '.join(errs[:3])}")
        doc["_path"] = str(p)
        docs.append(doc)
    return docs


def run_name(doc: dict, i: int) -> str:
    return f"run {i + 1}: {doc['device']['name']}" + (f" + {doc['cuda_device']}" if doc.get("cuda_device") else "")


def write_report(docs: List[dict], out: Path, baseline: Optional[str] = None, log=None) -> Tuple[Path, List[Path]]:
    """Write out/report.md and the PNGs; returns (report path, PNG paths)."""
    log = log or sys.stderr
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    pngs: List[Path] = []
    md = ["# vkops benchmark report", ""]
    if plt is None:
        msg = "matplotlib is not installed: no plots (pip install matplotlib, or vkops[bench])"
        print(msg, file=log)
        md += [f"_{msg}_", ""]
    md += [table([{"run": run_name(d, i), "driver": d["device"]["driver"], "host": d["machine"]["host"],
                   "created": d["created"], "rows": len(d["rows"]), "interrupted": d["interrupted"],
                   "file": Path(d["_path"]).name} for i, d in enumerate(docs)],
                 ["run", "driver", "host", "created", "rows", "interrupted", "file"]), ""]
    multi = len(docs) > 1
    for i, doc in enumerate(docs):
        md += [f"## {run_name(doc, i)}", "",
               f"Method: reps {doc['method']['reps']}, warm-up {doc['method']['warm_s']} s, rounds until two agree "
               f"within {doc['method']['tol']:.0%}. Versions: " +
               ", ".join(f"{k} {v}" for k, v in doc["versions"].items() if v) + ".", ""]
        for op in dict.fromkeys(r["op"] for r in doc["rows"]):
            rows = [r for r in doc["rows"] if r["op"] == op]
            md += _op_section(op, rows, baseline, plt, out, f"run{i + 1}_" if multi else "", pngs)
        if doc["skipped"]:
            md += ["Not run:", ""] + [f"- {s['op']} {s['dtype']} {'x'.join(map(str, s['shape']))} "
                                      f"{s['implementation']}: {s['reason']}" for s in doc["skipped"]] + [""]
    if multi:
        md += _across(docs, plt, out, pngs)
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n")
    return path, pngs


def _op_section(op, rows, baseline, plt, out, prefix, pngs) -> List[str]:
    u = unit(op)
    cases = by_case(rows)
    names = implementations(rows)
    base = choose_baseline(rows, baseline)
    table_rows, labels = [], []
    for impls in cases.values():
        any_row = next(iter(impls.values()))
        label = case_label(any_row)
        labels.append(label)
        t = {"case": label}
        for n in names:
            t[n] = main_ms(impls[n]) if n in impls else None
        t["tp"] = throughput(impls.get("vkops"))
        t["speedup"] = speedup(impls, base)
        bad = [n for n, r in impls.items() if r["verified"] is False]
        t["verified"] = "all" if not bad else "FAILED: " + ", ".join(bad)
        table_rows.append(t)
    cols = ["case"] + names + ["tp"] + (["speedup"] if base else []) + ["verified"]
    heads = ["case"] + [f"{n} ms" for n in names] + [f"vkops {u}"] + ([f"vs {base}"] if base else []) + ["verified"]
    md = [f"### {op}", "", "ms: GPU time for vkops and torch, wall time for CPU baselines"
          + (f"; vs {base}: {base}'s time / vkops' (GPU against GPU, else wall against wall)" if base else "") + ".",
          "", table(table_rows, cols, heads), ""]
    if op == "top_k" and base:
        md += _k_grid(cases, base)
    if plt is not None:
        series = {n: [throughput(impls.get(n)) for impls in cases.values()] for n in names}
        p = _bars(plt, out / f"{prefix}{op}_throughput.png", labels, series, u, f"{op}: throughput ({u}, higher is better)")
        pngs.append(p)
        md += [f"![{op} throughput]({p.name})", ""]
        if base and any(t["speedup"] for t in table_rows):
            p = _bars(plt, out / f"{prefix}{op}_speedup.png", labels, {f"vkops vs {base}": [t["speedup"] for t in table_rows]},
                      f"speedup over {base}", f"{op}: vkops against {base} (above 1: vkops faster)", hline=1.0)
            pngs.append(p)
            md += [f"![{op} speedup]({p.name})", ""]
    return md


def _k_grid(cases, base) -> List[str]:
    """TOP_K1 as docs/performance/top_k1.md's tables: a row per dtype and shape, a column per K, "vkops / base (speedup)"."""
    grid: Dict[Tuple, Dict[int, str]] = {}
    for impls in cases.values():
        mine, theirs = impls.get("vkops"), impls.get(base)
        if mine is None or theirs is None:
            continue
        a, b = compare_ms(mine, theirs)
        if a and b:
            grid.setdefault((mine["dtype"], "x".join(map(str, mine["shape"]))), {})[mine["params"]["k"]] = \
                f"{a:.3f} / {b:.3f} ({b / a:.2f}x)"
    ks = sorted({k for row in grid.values() for k in row})
    if len(ks) < 2:
        return []
    rows = [{"dtype": dt, "shape": shape, **{f"K={k}": cells.get(k) for k in ks}} for (dt, shape), cells in grid.items()]
    return [f"ms vkops / {base} (speedup), by K:", "", table(rows, ["dtype", "shape"] + [f"K={k}" for k in ks]), ""]


def _across(docs, plt, out, pngs) -> List[str]:
    md = ["## Across runs", "", "vkops' throughput on each run, for the cases the runs share.", ""]
    per_run = [by_case(d["rows"]) for d in docs]
    keys = [k for k in dict.fromkeys(k for c in per_run for k in c) if sum(k in c for c in per_run) > 1]
    for op in dict.fromkeys(k[0] for k in keys):
        ks = [k for k in keys if k[0] == op]
        labels = [case_label(next(iter(next(c[k] for c in per_run if k in c).values()))) for k in ks]
        series = {run_name(d, i): [throughput(c.get(k, {}).get("vkops")) for k in ks] for i, (d, c) in
                  enumerate(zip(docs, per_run))}
        rows = [{"case": lab, **{n: s[j] for n, s in series.items()}} for j, lab in enumerate(labels)]
        md += [f"### {op} ({unit(op)})", "", table(rows, ["case"] + list(series)), ""]
        if plt is not None:
            p = _bars(plt, out / f"across_{op}.png", labels, series, unit(op), f"{op}: vkops across runs ({unit(op)})")
            pngs.append(p)
            md += [f"![{op} across runs]({p.name})", ""]
    return md
