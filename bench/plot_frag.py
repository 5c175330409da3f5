#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plot seed 000's Highalloc-Stress curves for every allocator.

usage: bench/plot_frag.py RUN_DIR [--out FILE.png]

Reads RUN_DIR/highalloc.csv (written in the guest by bench/highalloc.sh) and
RUN_DIR/meta.json; writes RUN_DIR/frag.png by default. Top: the unusable free
space index U(9) before every order-9 attempt (the kernel's, debugfs
extfrag/unusable_index), failed attempts marked; bottom: the fragmentation
index at every failure (extfrag/extfrag_index), as in the seed's figures 5-8.
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
    rows = report.read_csv(args.run_dir, "highalloc.csv")
    if not rows:
        sys.exit(f"plot_frag: error: no attempts in {args.run_dir}/highalloc.csv"
                 " (run the benchmark with the highalloc test)")
    meta = report.load_meta(args.run_dir)
    summary = {(r["alloc"], r["round"]): r
               for r in report.read_csv(args.run_dir, "highalloc_summary.csv")}

    runs = list(dict.fromkeys((r["alloc"], r["round"]) for r in rows))
    multi_round = len({rnd for _, rnd in runs}) > 1
    zones = sorted({r["u9_zone"] for r in rows})
    fig, (ax_u, ax_f) = plt.subplots(2, 1, figsize=(9, 7), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
    for alloc, rnd in runs:
        sel = [r for r in rows if r["alloc"] == alloc and r["round"] == rnd]
        label = alloc + (f" r{rnd}" if multi_round else "")
        s = summary.get((alloc, rnd))
        if s:
            label += f" ({s['successes']}/{s['attempts']} = {s['success_pct']}%)"
        xs = [int(r["attempt"]) for r in sel]
        line, = ax_u.plot(xs, [float(r["u9"]) for r in sel], label=label, lw=1.2)
        fails = [r for r in sel if r["success"] == "0"]
        ax_u.plot([int(r["attempt"]) for r in fails], [float(r["u9"]) for r in fails],
                  "x", ms=3, color=line.get_color())
        fi = [r for r in fails if r["fi9"] != ""]
        ax_f.plot([int(r["attempt"]) for r in fi], [float(r["fi9"]) for r in fi],
                  ".", ms=4, color=line.get_color(), label=label)
    ax_u.set_ylabel(f"U(9), zone {'/'.join(zones)}\n(x: the attempt failed)")
    ax_u.set_ylim(-0.02, 1.02)
    ax_u.grid(True, alpha=0.3)
    ax_u.legend(fontsize=8)
    ax_f.set_ylabel("fragmentation index\nat failure (order 9)")
    ax_f.set_xlabel("order-9 attempt (GFP_HIGHUSER_MOVABLE, successes held)")
    ax_f.set_ylim(-1.05, 1.05)
    ax_f.axhline(0, color="grey", lw=0.5)
    ax_f.grid(True, alpha=0.3)
    title = "Highalloc-Stress after untar/remove (data resident in zram)"
    if meta:
        title += f"\n{meta.get('kernel', '')}, {meta.get('dataset', '').split(' ')[0]} dataset, " \
                 f"{meta.get('guest_memory', '')} guest, {meta.get('accelerator', '')}, " \
                 f"{meta.get('date', '')}"
    ax_u.set_title(title, fontsize=9)
    fig.tight_layout()
    out = args.out or os.path.join(args.run_dir, "frag.png")
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
