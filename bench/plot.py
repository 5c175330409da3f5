#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plot the overhead ratio per untar/remove step for every allocator.

usage: bench/plot.py RUN_DIR [--out FILE.png]

Reads RUN_DIR/steps.csv (written in the guest by bench/untar-remove.sh) and
RUN_DIR/meta.json, writes RUN_DIR/overhead.png by default.
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows, meta = report.load(args.run_dir)

    allocs = list(dict.fromkeys(r["alloc"] for r in rows))
    keys = list(dict.fromkeys((r["round"], r["step"]) for r in rows))
    labels = [s if len({k[0] for k in keys}) == 1 else f"r{r} {s}" for r, s in keys]
    fig, ax = plt.subplots(figsize=(max(7, 0.55 * len(keys) + 3), 4.5))
    for a in allocs:
        by = {(r["round"], r["step"]): float(r["overhead_ratio"]) * 100
              for r in rows if r["alloc"] == a}
        xs = [i for i, k in enumerate(keys) if k in by]
        ax.plot(xs, [by[keys[i]] for i in xs], marker="o", label=a)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel("overhead ratio (%)\n(pages held incl. metadata slabs - compr) / compr")
    # rm_all leaves almost no data: its ratio dwarfs the rest, clip the axis.
    finite = [float(r["overhead_ratio"]) * 100 for r in rows if r["step"] != "rm_all"]
    if finite:
        ax.set_ylim(bottom=0, top=max(finite) * 1.15 + 1)
    ax.grid(True, alpha=0.3)
    ax.legend()
    title = "untar/remove on ext4-on-zram"
    if meta:
        title += f"\n{meta.get('kernel', '')}, {meta.get('dataset', '').split(' ')[0]} dataset, " \
                 f"{meta.get('comp', '')}, {meta.get('accelerator', '')}, {meta.get('date', '')}"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    out = args.out or os.path.join(args.run_dir, "overhead.png")
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
