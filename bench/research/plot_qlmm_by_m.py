"""Research plot (docs/performance/qlmm.md): QLinearMatMul by M at fixed K and N from one `vkops bench --op qlmm
--against torch --shape MxKxN ...` JSON document, GPU ms beside torch, issue 38's goal (max(2MKN / 300 TOPS, bytes of
B / 2.5 TB/s)) and the physical limit (max(2MKN / PEAK, (A + B + C) bytes / BW): PEAK the cooperative-matrix rate
measured through Vulkan, 1300 TOPS on the H100; BW the card's memory rate).

    python bench/research/plot_qlmm_by_m.py bench-qlmm-....json --out bench/plots/h100_qlmm_by_m.png [--bw 3.35e12]
"""
import argparse
import json

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("--out", required=True)
ap.add_argument("--bw", type=float, default=3.35e12, help="memory bytes/s (H100 SXM: 3.35e12)")
ap.add_argument("--peak", type=float, default=1300e12, help="cooperative-matrix ops/s through Vulkan")
a = ap.parse_args()
doc = json.load(open(a.json))
rows = [r for r in doc["rows"] if r["op"] == "qlmm" and r.get("gpu_ms")]
by = {}
for r in rows:
    name = r["implementation"] + (" (B row-major)" if "row-major" in (r.get("note") or "") else "")
    by.setdefault(name, []).append((r["shape"][-3], r["gpu_ms"]))
K, N = rows[0]["shape"][-2:]
cmd = doc.get("command") or []
layout = cmd[cmd.index("--b-layout") + 1] if "--b-layout" in cmd else "row-major"  # vkops' B
ms = sorted({m for v in by.values() for m, _ in v})
fig, ax = plt.subplots(figsize=(8, 5))
for name in ("vkops", "torch"):
    pts = sorted(by.get(name, []))
    ax.plot([m for m, _ in pts], [t for _, t in pts], marker="o", label=f"vkops (B {layout})" if name == "vkops" else "torch _int_mm (B column-major)")
ax.plot(ms, [max(2 * m * K * N / 300e12, K * N / 2.5e12) * 1e3 for m in ms], "k--", label="goal: 300 TOPS / B at 2.5 TB/s")
ax.plot(ms, [max(2 * m * K * N / a.peak, (m * K + K * N + m * N) / a.bw) * 1e3 for m in ms], "k:",
        label=f"limit: {a.peak / 1e12:.0f} TOPS / {a.bw / 1e12:.2f} TB/s")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel(f"M (K = {K}, N = {N})")
ax.set_ylabel("GPU ms")
ax.set_title(f"int8 QLinearMatMul by M, {doc['device']['name']}")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(a.out, dpi=110)
print("plot:", a.out)
