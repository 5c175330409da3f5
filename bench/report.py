#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn a benchmark run folder (steps.csv, meta.json) into a markdown report.

usage: bench/report.py RUN_DIR [--out FILE]

Prints (and with --out writes) a side-by-side table of the overhead ratio per
step for every allocator, then one detailed table per allocator. Numbers come
only from the CSV written inside the guest; nothing is typed by hand.
"""
import argparse
import csv
import json
import os
import sys

MB = 1048576.0


def load(run_dir):
    path = os.path.join(run_dir, "steps.csv")
    if not os.path.isfile(path):
        sys.exit(f"report: error: no {path} (did the benchmark run?)")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"report: error: {path} has no samples")
    meta = {}
    mpath = os.path.join(run_dir, "meta.json")
    if os.path.isfile(mpath):
        with open(mpath) as f:
            meta = json.load(f)
    return rows, meta


def pct(x):
    return f"{float(x) * 100:.1f}%"


def report(rows, meta):
    out = []
    if meta:
        out.append("Run: " + ", ".join(f"{k} {v}" for k, v in meta.items()
                                      if k in ("kernel", "dataset", "rounds", "comp",
                                               "accelerator", "guest_memory",
                                               "guest_cpus", "date", "config_sha256")))
        out.append("")
    allocs = list(dict.fromkeys(r["alloc"] for r in rows))
    keys = list(dict.fromkeys((r["round"], r["step"]) for r in rows))
    by = {(r["alloc"], r["round"], r["step"]): r for r in rows}

    out.append("Overhead ratio per step (every page held, metadata slabs included):")
    out.append("")
    out.append("| round | step | " + " | ".join(allocs) + " |")
    out.append("|---|---|" + "---|" * len(allocs))
    for rnd, step in keys:
        cells = [pct(by[(a, rnd, step)]["overhead_ratio"]) if (a, rnd, step) in by else "-"
                 for a in allocs]
        out.append(f"| {rnd} | {step} | " + " | ".join(cells) + " |")
    for a in allocs:
        out.append("")
        out.append(f"{a}:")
        out.append("")
        out.append("| round | step | orig MB | compr MB | held MB | slab pages "
                   "| overhead MB | overhead ratio | U(9) | step s |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r["alloc"] != a:
                continue
            out.append("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {} | {:.1f} | {} | {} | {} |".format(
                r["round"], r["step"], int(r["orig_bytes"]) / MB, int(r["compr_bytes"]) / MB,
                int(r["held_bytes"]) / MB, r["slab_pages"],
                int(r["overhead_bytes"]) / MB, pct(r["overhead_ratio"]), r["u9"],
                r["seconds"]))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows, meta = load(args.run_dir)
    text = report(rows, meta)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
