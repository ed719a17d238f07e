"""Runs every bench/bench_*.py in turn (each prints a table and writes JSON under $OUT or bench/results).

Usage: python bench/run.py [name ...]   e.g. `python bench/run.py slice1 top_k1`
"""
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
wanted = set(sys.argv[1:])
rc = 0
for path in sorted(here.glob("bench_*.py")):
    name = path.stem[len("bench_"):]
    if wanted and name not in wanted:
        continue
    print(f"== {name}", flush=True)
    rc |= subprocess.call([sys.executable, str(path)], cwd=here)
sys.exit(rc)
