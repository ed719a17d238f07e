"""Numbers move, none are lost: every number-with-unit or decimal token of the old README.md and DEVELOPERS.md
(a git revision) must still appear in README.md + DEVELOPERS.md + docs/ of the working tree.

    python docs/check_numbers.py [REV]      # REV: the revision with the old files (default 73ac574)

Prints the tokens that are missing (exit 1 if any) and, for information, those that occur fewer times now."""
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = r"(?:ms|µs|us|ns|s|TOPS|TFLOPS|GB/s|TB/s|KiB|MiB|GiB|MB|GB|MHz|%|×|x|M)"
TOKEN = re.compile(r"(?<![\w.])(?:\d+\.\d+|\.\d+|\d+)(?:\s?" + UNITS + r"(?![\w/]))?")


def tokens(text: str) -> Counter:
    text = re.sub(r"\s+", " ", text)
    out = Counter()
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if "." in t or not t.isdigit():      # decimals, and integers that carry a unit
            out[t.replace(" ", "")] += 1
    return out


def main() -> int:
    rev = sys.argv[1] if len(sys.argv) > 1 else "73ac574"
    old = "".join(subprocess.run(["git", "show", f"{rev}:{f}"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout + "\n" for f in ("README.md", "DEVELOPERS.md"))
    new_files = [ROOT / "README.md", ROOT / "DEVELOPERS.md"] + sorted((ROOT / "docs").rglob("*.md"))
    new = "\n".join(f.read_text() for f in new_files)
    a, b = tokens(old), tokens(new)
    missing = sorted(t for t in a if t not in b)
    fewer = sorted(t for t in a if t in b and b[t] < a[t])
    print(f"old: {sum(a.values())} tokens ({len(a)} distinct) in README.md + DEVELOPERS.md at {rev}")
    print(f"new: {sum(b.values())} tokens ({len(b)} distinct) in {len(new_files)} files")
    print(f"missing: {len(missing)}" + (": " + " ".join(missing) if missing else ""))
    print(f"present but fewer times than before: {len(fewer)}" + (": " + " ".join(
        f"{t}({a[t]}->{b[t]})" for t in fewer) if fewer else ""))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
