#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Medians over the boots of a multi-run benchmark (bench/run.sh --runs N).

    bench/runs_summary.py DIR [--command CMD]

DIR holds run-1 .. run-N, each one boot's results (steps.csv, hugetlb.csv,
highalloc_summary.csv, meta.json with the allocator order of that boot).
Writes DIR/summary.csv (every value, with its boot and its position in the
boot) and DIR/summary.md: medians per allocator, overall and by position,
because an allocator that runs later in a boot finds memory the earlier
runs fragmented. Nothing is typed by hand: every number comes from the CSVs.
"""
import argparse
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
from report import read_csv  # noqa: E402


# page_owner attributes a page to the stack that allocated it; a page the
# allocator's pages were migrated to was allocated by the migration, so
# this count misses every page that migrated (and afmalloc/zspage's and
# zsmalloc's pages do migrate): not a measure of where the data sits.
BLOCKS = "own pages' 2 MiB blocks after (unreliable)"


def collect(top):
    runs = sorted((n for n in os.listdir(top) if n.startswith("run-")),
                  key=lambda n: int(n.split("-", 1)[1]))
    if not runs:
        sys.exit(f"runs_summary: error: no run-K folders in {top}")
    vals, metas = [], []
    for name in runs:
        d = os.path.join(top, name)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        metas.append(meta)
        order = meta["allocators"].split(",")
        pos = {a: i + 1 for i, a in enumerate(order)}
        boot = int(name.split("-", 1)[1])
        steps = read_csv(d, "steps.csv")
        if not steps:
            sys.exit(f"runs_summary: error: {d} has no steps.csv (the boot failed?)")
        last = max(int(r["round"]) for r in steps)
        for r in steps:
            if int(r["round"]) != last:
                continue
            vals.append((r["alloc"], boot, pos[r["alloc"]], "overhead_pct " + r["step"],
                         100 * float(r["overhead_ratio"])))
            if r["step"] == "untar":
                vals.append((r["alloc"], boot, pos[r["alloc"]], "untar_s", float(r["seconds"])))
        for a in order:
            rs = [100 * float(r["overhead_ratio"]) for r in steps
                  if r["alloc"] == a and r["step"].startswith("rm_") and r["step"] != "rm_all"]
            if rs:
                vals.append((a, boot, pos[a], "overhead_pct worst rm step", max(rs)))
        huge = {}
        for r in read_csv(d, "hugetlb.csv"):
            huge[(r["alloc"], r["after_step"])] = int(r["obtained"])
        for a in order:
            if (a, "rm_include") in huge:
                vals.append((a, boot, pos[a], "hugetlb after", huge[(a, "rm_include")]))
            if (a, "start") in huge:
                vals.append((a, boot, pos[a], "hugetlb start", huge[(a, "start")]))
                if (a, "rm_include") in huge:
                    vals.append((a, boot, pos[a], "hugetlb lost",
                                 huge[(a, "start")] - huge[(a, "rm_include")]))
        for r in read_csv(d, "blockers.csv"):
            if r["site"].startswith("ALLOCATOR") and r["after_step"] == "rm_include":
                vals.append((r["alloc"], boot, pos[r["alloc"]], BLOCKS, int(r["blocks"])))
        for r in read_csv(d, "highalloc_summary.csv"):
            vals.append((r["alloc"], boot, pos[r["alloc"]], "highalloc_pct",
                         float(r["success_pct"])))
    return vals, metas


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, metric):
    if x is None:
        return "-"
    if metric.startswith("overhead_pct"):
        return f"{x:.2f}%"
    if metric.startswith("hugetlb") or metric.startswith("own"):
        return f"{x:g}"
    return f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--command", default="bench/run.sh --runs N")
    args = ap.parse_args()
    vals, metas = collect(args.dir)
    with open(os.path.join(args.dir, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["alloc", "boot", "position", "metric", "value"])
        for v in vals:
            w.writerow(v)
    allocs = []
    for m in metas:
        for a in m["allocators"].split(","):
            if a not in allocs:
                allocs.append(a)
    metrics = []
    for v in vals:
        if v[3] not in metrics:
            metrics.append(v[3])
    npos = max(v[2] for v in vals)
    m0 = metas[0]
    huge = report.huge_page(m0)[1]
    out = [f"Medians over {len(metas)} boots ({m0['dataset']}, {m0['rounds']} round(s), "
           f"{m0['comp']}, kernel {m0['kernel']}, config {m0['config_sha256']}, "
           + (f"source {m0['source']}, " if 'source' in m0 else "")
           + f"{m0['accelerator']}, guest {m0['guest_memory']} / {m0['guest_cpus']} CPUs, "
           + (f"{m0['arch']} with {int(m0['page_size']) // 1024} KiB pages, "
              if m0.get("arch", "x86_64") != "x86_64" else "")
           + 
           f"boot args `{m0['boot_args']}`); allocator order per boot: "
           + "; ".join(f"{i + 1}: {m['allocators']}" for i, m in enumerate(metas))
           + f". Reproduce: `{args.command}`.", "",
           "Overhead ratio: (pages held, metadata slabs included, minus compressed bytes) / "
           f"compressed bytes, after each step of the last round. HugeTLB: {huge} pages "
           "obtained by growing vm.nr_hugepages before the allocator's workload (start) and "
           "after its rm_include step with its data resident (after); lost = start - after. "
           "Own pages' blocks (unreliable): 2 MiB blocks holding pages page_owner "
           "attributes to the allocator while the huge pages are held "
           "(bench/untar-remove.sh blockers()); a page that migrated is attributed to "
           "the migration instead, so the count misses every migrated page. "
           "Highalloc: % of order-9 allocations that succeeded (seed 000).", ""]
    head = "| metric | allocator | median (all boots) | " + " | ".join(
        f"median at position {p}" for p in range(1, npos + 1)) + " | values (boot:position=value) |"
    out += [head, "|" + "---|" * (4 + npos)]
    for metric in metrics:
        for a in allocs:
            vs = [v for v in vals if v[0] == a and v[3] == metric]
            if not vs:
                continue
            cells = [fmt(med([v[4] for v in vs]), metric)]
            for p in range(1, npos + 1):
                cells.append(fmt(med([v[4] for v in vs if v[2] == p]), metric))
            detail = ", ".join(f"{v[1]}:{v[2]}={fmt(v[4], metric)}" for v in vs)
            out.append(f"| {metric} | {a} | " + " | ".join(cells) + f" | {detail} |")
    # The HugeTLB comparison the targets ask for: each afmalloc variant
    # against zsmalloc at the same position in the boot, next to how much
    # boots in the same position differ (no verdict: with few boots a
    # difference smaller than that spread is noise).
    if "zsmalloc" in allocs:
        def after(a, p):
            return [v[4] for v in vals if v[0] == a and v[2] == p and v[3] == "hugetlb after"]

        spreads = [max(xs) - min(xs) for xs in (after(a, p) for a in allocs
                                                for p in range(1, npos + 1)) if len(xs) > 1]
        out += ["", "HugeTLB after the workload, each allocator against zsmalloc at the same "
                "position in the boot (median of the boots where it held that position); "
                + (f"boots of one allocator in the same position differ by up to "
                   f"{max(spreads):g} pages:" if spreads else
                   "one boot per position, so the spread between boots is not known:"), ""]
        for a in allocs:
            if a == "zsmalloc":
                continue
            for p in range(1, npos + 1):
                mine, ref = med(after(a, p)), med(after("zsmalloc", p))
                if mine is None or ref is None:
                    continue
                out.append(f"- position {p}: {a} {mine:g} vs zsmalloc {ref:g} "
                           f"(difference {mine - ref:+g})")
    with open(os.path.join(args.dir, "summary.md"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
