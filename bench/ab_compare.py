"""Research: GPU ms of the same cases from bench/ab.sh's two sides (DIR/new and DIR/old JSON results),
new / old, and torch beside the new side; batch wall per call of each.

    python bench/ab_compare.py DIR
"""
import glob
import json
import sys


def load(d, side):
    rows = {}
    for f in sorted(glob.glob(f"{d}/{side}/*.json")):
        for r in json.load(open(f))["rows"]:
            case = f"{r['dtype']} {'x'.join(map(str, r['shape']))} K={r['params']['k']}"
            rows[(case, r["implementation"])] = r
    return rows


def main(d):
    new, old = load(d, "new"), load(d, "old")
    print(f"{'case':34s} {'old':>7s} {'new':>7s} {'new/old':>7s} {'torch':>7s} {'x torch':>7s} | batch wall old/new/torch")
    for (case, impl), r in new.items():
        if impl != "vkops":
            continue
        o, t = old.get((case, impl), {}), new.get((case, "torch"), {})
        ng, og, tg = r.get("gpu_ms"), o.get("gpu_ms"), t.get("gpu_ms")
        bad = "" if r.get("verified") and o.get("verified", True) else "  NOT VERIFIED"
        print(f"{case:34s} {og or 0:7.3f} {ng:7.3f} {ng / og if og else 0:7.2f} {tg or 0:7.3f} "
              f"{tg / ng if tg else 0:7.2f} | {o.get('batch_wall_ms') or 0:.3f} {r.get('batch_wall_ms') or 0:.3f} "
              f"{t.get('batch_wall_ms') or 0:.3f}{bad}")


if __name__ == "__main__":
    main(sys.argv[1])
