#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plot afmalloc/zspage against zsmalloc for the README (bench/results/summary.png).

usage: bench/plot_summary.py [--out FILE.png]

Draws the numbers of bench/readme_results.py's summary_plot_data(), read
from the committed runs the README's summary table names: the overhead per
untar/remove step on the full tree, the memory held under fio's overwrites
of a full zram device, and the speed ratios of the microbenchmark and fio.
The digest of those numbers is stored in the PNG (text chunk
afmalloc-summary-data), so that `bench/readme_results.py --check` notices
a plot drawn from other numbers without needing matplotlib.
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readme_results as rr  # noqa: E402

COLORS = {rr.ZS: "tab:blue", rr.AF: "tab:orange"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=rr.SUMMARY_PNG)
    args = ap.parse_args()
    data = rr.summary_plot_data()
    fig, (ax_d, ax_m, ax_s) = plt.subplots(1, 3, figsize=(14, 4.8),
                                           gridspec_kw={"width_ratios": [5, 3, 4]})

    den = data["density"]
    xs = range(len(den["steps"]))
    for i, a in enumerate((rr.ZS, rr.AF)):
        ax_d.bar([x + (i - 0.5) * 0.4 for x in xs], den[a], 0.4, label=a, color=COLORS[a])
    ax_d.set_yscale("log")
    ax_d.set_xticks(list(xs))
    ax_d.set_xticklabels(den["steps"], rotation=30, ha="right")
    ax_d.set_ylabel("overhead, % of the compressed bytes (log)")
    ax_d.set_title(f"density: full kernel tree, untar then removes\n({den['run']}; lower is "
                   "better)", fontsize=9)
    ax_d.grid(True, axis="y", alpha=0.3)
    ax_d.legend(fontsize=8)

    mem = data["fio_mem"]
    xs = range(len(mem["points"]))
    for i, a in enumerate((rr.ZS, rr.AF)):
        ax_m.bar([x + (i - 0.5) * 0.4 for x in xs], mem[a], 0.4, label=a, color=COLORS[a])
    ax_m.axhline(mem["compr_mib"], color="grey", lw=1, ls="--",
                 label=f"compressed data ({mem['compr_mib']} MiB)")
    ax_m.set_xticks(list(xs))
    ax_m.set_xticklabels(mem["points"])
    ax_m.set_ylim(0, max(mem[rr.ZS] + mem[rr.AF]) * 1.25)
    ax_m.set_ylabel("memory held, MiB (mm_stat)")
    ax_m.set_title(f"memory: fio overwrites of a full zram device\n({mem['run']}; lower is "
                   "better)", fontsize=9)
    ax_m.grid(True, axis="y", alpha=0.3)
    ax_m.legend(fontsize=7, loc="upper left")

    rat = data["ratios"]
    ys = range(len(rat["labels"]))
    shade = {"slower": "tab:red", "faster": "tab:green", "mixed": "tab:gray"}
    ax_s.barh(list(ys), rat["values"], color=[shade[v] for v in rat["verdicts"]])
    ax_s.axvline(1.0, color=COLORS[rr.ZS], lw=1.5, label="zsmalloc = 1")
    ax_s.set_yticks(list(ys))
    ax_s.set_yticklabels(rat["labels"], fontsize=8)
    ax_s.invert_yaxis()
    ax_s.set_xlim(0, max(1.2, max(rat["values"]) * 1.1))
    for y, v in zip(ys, rat["values"]):
        ax_s.text(v + 0.01, y, f"{v:.2f}", va="center", fontsize=7)
    ax_s.set_xlabel("afmalloc/zspage rate / zsmalloc's\nred: slower in every run, "
                    "grey: runs disagree,\ngreen: faster in every run", fontsize=8)
    ax_s.set_title(f"speed: microbenchmark and fio on zram\n({', '.join(rat['runs'])}; "
                   "medians, TCG)", fontsize=9)
    ax_s.grid(True, axis="x", alpha=0.3)
    ax_s.legend(fontsize=8, loc="lower right")

    fig.tight_layout()
    fig.savefig(args.out, dpi=90, metadata={rr.PNG_KEY: rr.plot_digest(data), "Software": None})
    print(args.out)


if __name__ == "__main__":
    main()
