"""Research: GPU ms of the same cases from bench/research/ab.sh's sides (DIR/new, DIR/old, DIR/<variant>: JSON
results), each side's time and its ratio to new, torch beside new; then the batch wall per call.

    python bench/research/ab_compare.py DIR
"""
import glob
import json
import os
import sys


def load(d, side):
    rows = {}
    for f in sorted(glob.glob(f"{d}/{side}/*.json")):
        for r in json.load(open(f))["rows"]:
            case = f"{r['dtype']} {'x'.join(map(str, r['shape']))} K={r['params']['k']}"
            rows[(case, r["implementation"])] = r
    return rows


def main(d):
    sides = ["new"] + sorted(s for s in os.listdir(d) if s != "new" and os.path.isdir(os.path.join(d, s)))
    res = {s: load(d, s) for s in sides}
    others = sides[1:]
    print(f"{'case':34s} {'torch':>7s} {'new':>7s} {'x torch':>7s} " + " ".join(f"{s[:12]:>12s} {'/new':>5s}" for s in others)
          + " | batch wall torch " + " ".join(sides))
    for (case, impl), r in res["new"].items():
        if impl != "vkops":
            continue
        t = res["new"].get((case, "torch"), {})
        ng, tg = r.get("gpu_ms"), t.get("gpu_ms")
        line = f"{case:34s} {tg or 0:7.3f} {ng:7.3f} {tg / ng if tg else 0:7.2f} "
        walls, bad = [f"{t.get('batch_wall_ms') or 0:.3f}", f"{r.get('batch_wall_ms') or 0:.3f}"], []
        bad += [] if r.get("verified") else ["new"]
        for s in others:
            o = res[s].get((case, impl), {})
            og = o.get("gpu_ms")
            line += f"{og or 0:12.3f} {og / ng if og else 0:5.2f} "
            walls.append(f"{o.get('batch_wall_ms') or 0:.3f}")
            bad += [] if o.get("verified", True) else [s]
        print(line + "| " + " ".join(walls) + (f"  NOT VERIFIED: {bad}" if bad else ""))


if __name__ == "__main__":
    main(sys.argv[1])
