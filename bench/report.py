#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn a benchmark run folder (steps.csv, meta.json) into a markdown report.

usage: bench/report.py RUN_DIR [--out FILE]

Prints (and with --out writes) a side-by-side table of the overhead ratio per
step for every allocator, then one detailed table per allocator, then, when
the run has them, the page-level fragmentation tests of seed 000
(hugetlb.csv, highalloc_summary.csv, pagetypeinfo.csv). Numbers come only
from the CSV written inside the guest; nothing is typed by hand.
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
    return rows, load_meta(run_dir)


# Host scripts that moved into a folder per workload (bench/WORKLOAD/run.sh):
# a committed meta.json keeps the command as it was run, the reports show
# the path that runs it now.
MOVED = {"bench/speed.sh": "bench/speed/run.sh", "bench/fio.sh": "bench/fio/run.sh",
         "bench/zswap-time.sh": "bench/zswap-time/run.sh"}


def load_meta(run_dir):
    """RUN_DIR/meta.json as a dict, {} when missing ("command" with MOVED's
    paths)."""
    mpath = os.path.join(run_dir, "meta.json")
    if not os.path.isfile(mpath):
        return {}
    with open(mpath) as f:
        meta = json.load(f)
    cmd = meta.get("command")
    if isinstance(cmd, str) and cmd.split(" ", 1)[0] in MOVED:
        first, sep, rest = cmd.partition(" ")
        meta["command"] = MOVED[first] + sep + rest
    return meta


def pct(x):
    return f"{float(x) * 100:.1f}%"


def huge_page(meta):
    """(order, "2 MiB") of the run's PMD huge page: a page table page of
    PAGE_SIZE / 8 entries maps order log2(PAGE_SIZE / 8) (9 with 4 KiB
    pages, 11 with arm64's 16 KiB: 32 MiB). meta's "page_size", 4096 when
    the run did not record it."""
    ps = int(meta.get("page_size", 4096))
    order = (ps // 8).bit_length() - 1
    return order, f"{(ps << order) >> 20} MiB"


def report(rows, meta):
    out = []
    if meta:
        out.append("Run: " + ", ".join(f"{k} {v}" for k, v in meta.items()
                                      if k in ("kernel", "dataset", "rounds", "comp",
                                               "accelerator", "emulator", "guest_memory", "arch", "page_size",
                                               "guest_cpus", "boot_args", "date",
                                               "seconds", "config_sha256", "source")))
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
                   f"| overhead MB | overhead ratio | U({huge_page(meta)[0]}) | step s |")
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


def read_csv(run_dir, name):
    """Rows of RUN_DIR/NAME as dicts, [] when the file is missing or empty."""
    path = os.path.join(run_dir, name)
    if not os.path.isfile(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fragmentation(run_dir):
    """Markdown for seed 000's tests; '' when the run has none of them."""
    huge = read_csv(run_dir, "hugetlb.csv")
    summ = read_csv(run_dir, "highalloc_summary.csv")
    ptype = read_csv(run_dir, "pagetypeinfo.csv")
    if not (huge or summ or ptype):
        return ""
    order, size = huge_page(load_meta(run_dir))
    out = ["", "## Page-level fragmentation (seed 000)", "",
           "With each allocator's data still resident in zram, after the rm_include "
           "step of the last round; page cache dropped first.", ""]
    if huge:
        cap = ("" if load_meta(run_dir).get("arch", "x86_64") == "x86_64" else
               " (at most what MemFree holds beyond the min watermark and 128 MB, which "
               "the script needs to go on)")
        out += [f"HugeTLB-capability: {size} pages obtained by writing MemTotal/{size}{cap} to "
                "/proc/sys/vm/nr_hugepages:", "",
                f"| allocator | round | after | requested | obtained | free MB before | U({order}) before |",
                "|---|---|---|---|---|---|---|"]
        for r in huge:
            out.append("| {alloc} | {round} | {after_step} | {requested} | {obtained} "
                       "| {free_mb_before} | {u9_before} |".format(**r))
        out.append("")
    if summ:
        out += ["Highalloc-Stress: MemTotal/2 MiB attempts of alloc_pages(order 9, "
                "GFP_HIGHUSER_MOVABLE), successes held until the end (bench/highalloc.sh); "
                "U(9) and the fragmentation index are the kernel's (debugfs extfrag) for the "
                "zone shown:", "",
                "| allocator | round | attempts | successes | % success | zone "
                "| U(9) first | U(9) final | frag. index at failure: mean of >= 0 "
                "| failures with a free order-9 block (index -1) | pages from "
                "| compact stall/success | pages migrated | s |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in summ:
            out.append("| {alloc} | {round} | {attempts} | {successes} | {success_pct}% "
                       "| {u9_zone} | {u9_first} | {u9_final} | {fi} | {fi9_failures_with_block} "
                       "| {zone_allocs} "
                       "| {cs} | {mig} | {seconds} |".format(
                           fi=r["fi9_mean_at_failure"] or "-",
                           cs=f"{r['compact_stall']}/{r['compact_success']}"
                           if r["compact_stall"] else "n/a",
                           mig=r["pgmigrate_success"] or "n/a", **r))
        out.append("")
    if ptype:
        types = [k for k in ptype[0] if k not in ("alloc", "round", "phase", "kind",
                                                  "node", "zone")]
        has_mixed = any(r["kind"] == "mixed" for r in ptype)
        out += ["Pageblocks per migratetype (/proc/pagetypeinfo, all zones; 'before': data "
                "resident, before the attempts; 'held': after them, every success still held)"
                + ("; 'mixed': blocks holding pages of another type (page_owner=on)"
                   if has_mixed else "; no mixed-block counts (boot without page_owner=on)")
                + ":", ""]
        kinds = ["blocks"] + (["mixed"] if has_mixed else [])
        head = [f"{t}" for t in types] + [f"mixed {t}" for t in types if has_mixed]
        out += ["| allocator | round | phase | " + " | ".join(head) + " |",
                "|---|---|---|" + "---|" * len(head)]
        keys = list(dict.fromkeys((r["alloc"], r["round"], r["phase"]) for r in ptype))
        for key in keys:
            cells = []
            for kind in kinds:
                sel = [r for r in ptype if (r["alloc"], r["round"], r["phase"]) == key
                       and r["kind"] == kind]
                cells += [str(sum(int(r[t]) for r in sel)) for t in types]
            out.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _per_alloc(run_dir, name):
    """Rows of RUN_DIR/NAME, the run's meta, and its allocators, zsmalloc first."""
    rows = read_csv(run_dir, name)
    if not rows:
        return [], {}, []
    allocs = list(dict.fromkeys(r["alloc"] for r in rows))
    if "zsmalloc" in allocs:
        allocs = ["zsmalloc"] + [a for a in allocs if a != "zsmalloc"]
    return rows, load_meta(run_dir), allocs


def _ratios(val, runs, cases, base):
    """{case: [val[run, case] / val[run, base(case)] for every run with both]}."""
    out = {}
    for c in cases:
        rs = [val[(rn,) + c] / val[(rn,) + base(c)] for rn in runs
              if (rn,) + c in val and val.get((rn,) + base(c))]
        if rs:
            out[c] = rs
    return out


def speed_ratios(run_dir):
    """Per-run ratios of a bench/speed/run.sh run, in run order.

    Return: {(alloc, op, threads): [ops/s over zsmalloc's ops/s in the same
    run]} for every allocator but zsmalloc; afmalloc's copy ops (alloc-copy,
    read-copy) are compared with zsmalloc's map op for the same work.
    """
    rows = read_csv(run_dir, "speed.csv")
    val = {(r["run"], r["alloc"], r["op"], int(r["threads"])): float(r["ops_per_s"])
           for r in rows}
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    cases = dict.fromkeys((r["alloc"], r["op"], int(r["threads"])) for r in rows
                          if r["alloc"] != "zsmalloc")
    base_op = {"alloc-copy": "alloc-map", "read-copy": "read-map"}
    return _ratios(val, runs, cases,
                   lambda c: ("zsmalloc", base_op.get(c[1], c[1]), c[2]))


def _fio_iops(rows):
    """{(run, alloc, shape): IOPS} of fio.csv rows, read and write added up."""
    iops = {}
    for r in rows:
        k = (r["run"], r["alloc"], r["shape"])
        iops[k] = iops.get(k, 0.0) + float(r["iops"])
    return iops


def fio_ratios(run_dir):
    """Per-run ratios of a bench/fio/run.sh run, in run order.

    Return: {(alloc, shape): [IOPS over zsmalloc's IOPS in the same run]}
    for every allocator but zsmalloc (randrw: read + write IOPS).
    """
    rows = read_csv(run_dir, "fio.csv")
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    cases = dict.fromkeys((r["alloc"], r["shape"]) for r in rows if r["alloc"] != "zsmalloc")
    return _ratios(_fio_iops(rows), runs, cases, lambda c: ("zsmalloc", c[1]))


def speed(run_dir):
    """Markdown table of a bench/speed/run.sh run (speed.csv, meta.json).

    Per operation and thread count: each allocator's median ops/s over the
    runs and the median over the runs of its ratio to zsmalloc's ops/s in
    the same run. afmalloc's copy helpers (alloc-copy, read-copy) are
    compared with zsmalloc's mapping path for the same work (alloc-map,
    read-map): zsmalloc 6.12 has no copy helpers. '' without speed.csv.
    """
    import statistics
    rows, meta, allocs = _per_alloc(run_dir, "speed.csv")
    if not rows:
        return ""
    order = {"alloc-map": 0, "alloc-copy": 1, "read-map": 2, "read-copy": 3}
    cases = sorted(dict.fromkeys((r["op"], int(r["threads"])) for r in rows),
                   key=lambda c: (c[1], order.get(c[0], 9), c[0]))
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    val = {(r["run"], r["alloc"], r["op"], int(r["threads"])): float(r["ops_per_s"])
           for r in rows}
    ratio = speed_ratios(run_dir)

    out = ["## Allocator speed (in-kernel microbenchmark)", ""]
    if meta:
        out += ["Run: " + ", ".join(f"{k} {meta[k]}" for k in (
            "kernel", "accelerator", "emulator", "guest_cpus", "boot_args", "runs", "duration_ms",
            "working_set", "order", "sizes", "date", "config_sha256", "source")
            if meta.get(k) not in (None, ""))
            + ("; one working set shared by the threads (--shared): frees and maps"
               " of objects another CPU allocated" if meta.get("shared") else ""), ""]
    out += _host_note(meta)
    out += [f"Operations per second, median of {len(runs)} run(s) in one boot; "
            "x zsmalloc: median of the per-run ratios to zsmalloc in the same run "
            "(copy ops against zsmalloc's map op for the same work)."
            + (" Under TCG only the ratios mean something." if meta.get("accelerator") == "tcg"
               else ""), ""]
    head = ["op", "threads"]
    for a in allocs:
        head.append(f"{a} ops/s")
        if a != "zsmalloc":
            head.append("x zsmalloc")
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op, thr in cases:
        cells = [op, str(thr)]
        for a in allocs:
            vals = [val[(rn, a, op, thr)] for rn in runs if (rn, a, op, thr) in val]
            cells.append(f"{statistics.median(vals):,.0f}" if vals else "-")
            if a == "zsmalloc":
                continue
            ratios = ratio.get((a, op, thr))
            cells.append(f"{statistics.median(ratios):.2f}" if ratios else "-")
        out.append("| " + " | ".join(cells) + " |")
    out += _speed_held(run_dir, allocs, meta)
    if meta.get("command"):
        out += ["", f"Reproduce: `{meta['command']}`"]
    return "\n".join(out) + "\n"


def _speed_held(run_dir, allocs, meta):
    """Lines of the memory table of a speed run with held.csv (bench/speed/arm64.sh).

    Per phase (the fill, each allocating operation) and thread count: each
    allocator's median over the runs of the pages held in MiB and of its
    overhead (pages held beyond the bytes stored, in % of them), and the
    median of the per-run ratios of its memory held per byte stored to
    zsmalloc's (after the writes the allocators store slightly different
    bytes: each ran its own number of operations).
    """
    import statistics
    rows = read_csv(run_dir, "held.csv")
    if not rows:
        return []
    order = {"fill": 0, "alloc-map": 1, "alloc-copy": 2}
    cases = sorted(dict.fromkeys((r["op"], int(r["threads"])) for r in rows),
                   key=lambda c: (c[1], order.get(c[0], 9), c[0]))
    held = {(r["run"], r["alloc"], r["op"], int(r["threads"])):
            (int(r["held_pages"]) * int(r["page_size"]), int(r["stored_bytes"]))
            for r in rows}
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    out = ["", "Memory held right after the fill and after each allocating operation "
           "(the threads stopped; afmalloc's automatic compaction may have work queued; "
           "zsmalloc never compacted, as zram does not by itself), median over the runs: "
           "pages held in MiB, overhead = held beyond the bytes stored, in % of them; "
           "x zsmalloc: median of the per-run ratios of the memory held per byte stored "
           "to zsmalloc's after its fill or its alloc-map in the same run. afmalloc: every "
           "page of the pool, its tables included (not the few KiB of per-shard structures "
           "it allocates beside them); zsmalloc: its pages and its handles (8 bytes each), "
           "its zspage descriptors not counted.", ""]
    head = ["phase", "threads"]
    for a in allocs:
        head += [f"{a} MiB", "overhead"] + ([] if a == "zsmalloc" else ["x zsmalloc"])
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op, thr in cases:
        cells = [op, str(thr)]
        base_op = "fill" if op == "fill" else "alloc-map"
        for a in allocs:
            vals = [held[(rn, a, op, thr)] for rn in runs if (rn, a, op, thr) in held]
            if not vals:
                cells += ["-", "-"] + ([] if a == "zsmalloc" else ["-"])
                continue
            cells.append(f"{statistics.median(v[0] for v in vals) / 1048576:.1f}")
            cells.append(f"{statistics.median((v[0] - v[1]) / v[1] * 100 for v in vals if v[1]):.1f}%"
                         if any(v[1] for v in vals) else "-")
            if a == "zsmalloc":
                continue
            rs = [(held[(rn, a, op, thr)][0] / held[(rn, a, op, thr)][1])
                  / (held[(rn, "zsmalloc", base_op, thr)][0]
                     / held[(rn, "zsmalloc", base_op, thr)][1])
                  for rn in runs if (rn, a, op, thr) in held
                  and all(held.get((rn, "zsmalloc", base_op, thr), (0, 0)))
                  and held[(rn, a, op, thr)][1]]
            cells.append(f"{statistics.median(rs):.2f}" if rs else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def _run_line(meta, keys):
    """'Run: k v, ...' for the keys of meta that exist."""
    return "Run: " + ", ".join(f"{k} {meta[k]}" for k in keys if k in meta)


def _host_note(meta):
    if "host_load1_start" not in meta:
        return []
    return [f"The host ({meta.get('host_cpus', '?')} CPUs) was shared with other work: "
            f"1-minute load average {meta['host_load1_start']} at the start, "
            f"{meta['host_load1_end']} at the end.", ""]


def fio(run_dir):
    """Markdown tables of a bench/fio/run.sh run (fio.csv, meta.json).

    Per job shape: each allocator's median IOPS over the runs (read and
    write IOPS added up for randrw) and the median over the runs of its
    ratio to zsmalloc's IOPS in the same run of the same boot; then the
    median completion latency percentiles per direction. '' without fio.csv.
    """
    import statistics
    rows, meta, allocs = _per_alloc(run_dir, "fio.csv")
    if not rows:
        return ""
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    iops = _fio_iops(rows)
    ratio = fio_ratios(run_dir)

    out = ["## zram block I/O speed (fio)", ""]
    if meta:
        out += [_run_line(meta, ("kernel", "accelerator", "emulator", "guest_cpus", "guest_memory",
                                 "runs", "runtime_s", "device_size", "comp", "fio", "boot_args",
                                 "date", "config_sha256", "source")), ""]
    out += _host_note(meta)
    out += [f"fio on one zram device per allocator in one boot: 4 KiB psync direct I/O, "
            f"one job, half-compressible data, device filled first"
            + ("; mixwrite: two jobs at once, random writes of data a quarter and "
               "three quarters compressible" if "mixwrite" in shapes else "")
            + f"; IOPS: median of "
            f"{len(runs)} run(s) (randrw: read + write); x zsmalloc: median of the "
            "per-run ratios to zsmalloc in the same run. The allocator order rotates "
            "per run. Under TCG (emulated CPU, shared host) the absolute numbers are "
            "distorted (everything, compression included, runs many times slower "
            "than on hardware); only the ratios mean something.", ""]
    head = ["shape"]
    for a in allocs:
        head.append(f"{a} IOPS")
        if a != "zsmalloc":
            head.append("x zsmalloc")
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in shapes:
        cells = [s]
        for a in allocs:
            vals = [iops[(rn, a, s)] for rn in runs if (rn, a, s) in iops]
            cells.append(f"{statistics.median(vals):,.0f}" if vals else "-")
            if a == "zsmalloc":
                continue
            ratios = ratio.get((a, s))
            cells.append(f"{statistics.median(ratios):.2f}" if ratios else "-")
        out.append("| " + " | ".join(cells) + " |")

    out += ["", "Completion latency, median over the runs of fio's p50 / p99 (us):", ""]
    head = ["shape", "dir"] + [f"{a} p50 / p99" for a in allocs]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s, d in dict.fromkeys((r["shape"], r["dir"]) for r in rows):
        cells = [s, d]
        for a in allocs:
            sel = [r for r in rows if r["alloc"] == a and r["shape"] == s and r["dir"] == d]
            if not sel:
                cells.append("-")
                continue
            p50 = statistics.median(float(r["clat_p50_us"]) for r in sel)
            p99 = statistics.median(float(r["clat_p99_us"]) for r in sel)
            cells.append(f"{p50:,.0f} / {p99:,.0f}")
        out.append("| " + " | ".join(cells) + " |")
    out += fio_memory(run_dir, allocs)
    if meta.get("command"):
        out += ["", f"Reproduce: `{meta['command']}`"]
    return "\n".join(out) + "\n"


def fio_samples(run_dir):
    """Per allocator, its device's mm_samples.csv rows as dicts of numbers.

    Each row gets "shape": the shape of the last job run on that device
    (its own writes change what it holds; a sample taken while another
    device's job runs belongs to the device's last job), "fill" for the
    fill, None before it. "held": every byte the allocator holds, slab
    caches included (held_bytes; mem_used_total in runs without it);
    "max": mm_stat's mem_used_max plus the slab pages of the sample.
    {} without mm_samples.csv (runs before it).
    """
    per = {}
    last = {}
    for r in read_csv(run_dir, "mm_samples.csv"):
        a = r["alloc"]
        job = r["job"].split(" ")
        if len(job) == 3 and job[1] == a:
            last[a] = job[2]
        slab = int(r["slab_pages"]) * 4096 if r.get("slab_pages") else 0
        per.setdefault(a, []).append({
            "t": float(r["t_s"]), "shape": last.get(a), "compr": int(r["compr_data_size"]),
            "held": int(r["held_bytes"]) if r.get("held_bytes") else int(r["mem_used_total"]),
            "max": int(r["mem_used_max"]) + slab, "slabs": bool(r.get("held_bytes"))})
    return per


def fio_memory(run_dir, allocs):
    """Markdown lines: memory held during a fio run (mm_samples.csv), or [].

    Per allocator: zram's own high watermark (mem_used_max), the largest
    sampled memory held with the compressed bytes of that sample and the
    shape it followed; per shape the largest sampled overhead (memory held
    beyond the compressed bytes, in % of them).
    """
    per = fio_samples(run_dir)
    if not per:
        return []
    mib = 2 ** 20
    slabs = all(x["slabs"] for xs in per.values() for x in xs)
    out = ["", "Memory held during the runs: each device's mm_stat"
           + (" and its pool's slab caches" if slabs else "")
           + " sampled once a second (mm_samples.csv; a sample belongs to the last "
           "job run on its device). "
           + ("Memory held: every page the allocator holds, its slab caches included "
              "(zsmalloc's handle and zspage caches, which mm_stat leaves out). "
              "Peak: zram's own high watermark (mem_used_max, every write) plus the "
              "slab pages of the same sample; largest " if slabs else
              "Memory held: mm_stat's mem_used_total (zsmalloc's slab caches not "
              "counted). Peak: zram's own high watermark (mem_used_max, every write); "
              "largest ")
           + "sample: the most memory held among the samples, with the compressed bytes "
           "then; overhead: memory held beyond the compressed bytes, in % of them.", "",
           "| allocator | samples | peak MiB | largest sample MiB | compressed then MiB "
           "| overhead then | after |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for a in allocs:
        xs = per.get(a)
        if not xs:
            continue
        top = max(xs, key=lambda x: x["held"])
        ov = 100 * (top["held"] - top["compr"]) / top["compr"] if top["compr"] else None
        out.append(f"| {a} | {len(xs)} | {max(x['max'] for x in xs) / mib:.1f} "
                   f"| {top['held'] / mib:.1f} | {top['compr'] / mib:.1f} "
                   f"| {'-' if ov is None else f'{ov:.1f}%'} | {top['shape'] or '-'} |")
    shapes = list(dict.fromkeys(x["shape"] for a in allocs for x in per.get(a, [])
                                if x["shape"]))
    out += ["", "Largest overhead in a sample, per shape the device last ran "
            "(memory held / compressed MiB of that sample):", "",
            "| shape | " + " | ".join(allocs) + " |", "|---|" + "---|" * len(allocs)]
    for s in shapes:
        cells = [s]
        for a in allocs:
            xs = [x for x in per.get(a, []) if x["shape"] == s and x["compr"]]
            if not xs:
                cells.append("-")
                continue
            w = max(xs, key=lambda x: x["held"] / x["compr"])
            cells.append(f"{100 * (w['held'] - w['compr']) / w['compr']:.1f}% "
                         f"({w['held'] / mib:.1f} / {w['compr'] / mib:.1f})")
        out.append("| " + " | ".join(cells) + " |")
    return out


def zswap_time(run_dir):
    """Markdown table of a bench/zswap-time/run.sh run (zswap-time.csv, meta.json).

    Per allocator: median over the runs of the workload's write, verify and
    wall time, of what zswap held at the stop (Zswapped/Zswap) and of the
    swap traffic; x zsmalloc: median of the per-run ratios of the wall time
    to zsmalloc's in the same run (below 1: faster). '' without the CSV.
    """
    import statistics
    rows, meta, allocs = _per_alloc(run_dir, "zswap-time.csv")
    if not rows:
        return ""
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    by = {(r["run"], r["alloc"]): r for r in rows}

    def med(a, key, fmt):
        vals = [float(r[key]) for r in rows if r["alloc"] == a]
        return fmt.format(statistics.median(vals)) if vals else "-"

    out = ["## zswap wall time (checksummed workload in a memory-limited cgroup)", ""]
    if meta:
        out += [_run_line(meta, ("kernel", "kernel_kind", "accelerator", "emulator", "guest_cpus",
                                 "guest_memory", "runs", "working_set_mb", "memory_max_mb",
                                 "passes", "date", "config_sha256", "source")), ""]
    out += _host_note(meta)
    out += [f"The zswap test's workload ({meta.get('working_set_mb', '?')} MiB of "
            f"checksummed pages in a cgroup with memory.max "
            f"{meta.get('memory_max_mb', '?')} MiB: written, half rewritten, every byte "
            "verified) with zswap.zpool switched at run time, both allocators in one boot, "
            f"the order alternating per run; medians of {len(runs)} run(s). write: until "
            "the workload's stop, verify: after it (mostly zswap loads), wall: both. "
            "x zsmalloc: median of the per-run ratios of the wall time to zsmalloc's "
            "(below 1 is faster). Under TCG the absolute times are distorted; only "
            "the ratios mean something.", ""]
    head = ["allocator", "write s", "verify s", "wall s", "x zsmalloc",
            "Zswapped/Zswap", "stored pages", "zswpout", "zswpin", "zswpwb"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in allocs:
        ratios = [float(by[(rn, a)]["wall_s"]) / float(by[(rn, "zsmalloc")]["wall_s"])
                  for rn in runs if (rn, a) in by and (rn, "zsmalloc") in by
                  and float(by[(rn, "zsmalloc")]["wall_s"])]
        cells = [a, med(a, "write_s", "{:.1f}"), med(a, "verify_s", "{:.1f}"),
                 med(a, "wall_s", "{:.1f}"),
                 "-" if a == "zsmalloc" or not ratios else f"{statistics.median(ratios):.2f}",
                 med(a, "ratio", "{:.2f}"), med(a, "stored_pages", "{:,.0f}"),
                 med(a, "zswpout", "{:,.0f}"), med(a, "zswpin", "{:,.0f}"),
                 med(a, "zswpwb", "{:,.0f}")]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "Per run (wall s, first allocator of the run first):", ""]
    for rn in runs:
        sel = sorted((r for r in rows if r["run"] == rn), key=lambda r: r["position"])
        out.append(f"- run {rn}: " + ", ".join(f"{r['alloc']} {float(r['wall_s']):.1f}"
                                              for r in sel))
    if meta.get("command"):
        out += ["", f"Reproduce: `{meta['command']}`"]
    return "\n".join(out) + "\n"


def smallpool_medians(run_dir):
    """Medians over the rounds of a bench/smallpool/run.sh run (smallpool.csv).

    {(mode, alloc, grow): (compressed bytes, bytes held, overhead %,
    sorted shards active)}, in the CSV's order; overhead: held beyond the
    compressed bytes, in % of them. {} without the CSV.
    """
    import statistics
    if not os.path.isfile(os.path.join(run_dir, "smallpool.csv")):
        return {}
    rows = read_csv(run_dir, "smallpool.csv")
    out = {}
    for key in dict.fromkeys((r["mode"], r["alloc"], r["grow"]) for r in rows):
        sel = [r for r in rows if (r["mode"], r["alloc"], r["grow"]) == key]
        out[key] = (statistics.median(int(r["compr_data_size"]) for r in sel),
                    statistics.median(int(r["held_bytes"]) for r in sel),
                    statistics.median(100 * (int(r["held_bytes"]) / int(r["compr_data_size"]) - 1)
                                      for r in sel),
                    sorted({int(r["shards_active"]) for r in sel if r["shards_active"]}))
    return out


def smallpool_aux(run_dir):
    """Median afmalloc aux_bytes (kmalloc'd structures, not in held) per
    (mode, alloc, grow) of a bench/smallpool/run.sh run; None where the CSV
    has none (zsmalloc, or a run from before the column).
    """
    import statistics
    rows = read_csv(run_dir, "smallpool.csv")
    out = {}
    for key in dict.fromkeys((r["mode"], r["alloc"], r["grow"]) for r in rows):
        vals = [int(r["aux_bytes"]) for r in rows
                if (r["mode"], r["alloc"], r["grow"]) == key and r.get("aux_bytes")]
        out[key] = statistics.median(vals) if vals else None
    return out


def smallpool(run_dir):
    """Markdown table of a bench/smallpool/run.sh run (smallpool.csv, meta.json):
    per write mode and allocator, smallpool_medians(). '' without the CSV.
    """
    med = smallpool_medians(run_dir)
    if not med:
        return ""
    rows = read_csv(run_dir, "smallpool.csv")
    meta = load_meta(run_dir)
    cpus = rows[0]["cpus"] if rows else "?"

    out = ["## A small zram device written from every CPU", ""]
    if meta:
        out += [_run_line(meta, ("kernel", "accelerator", "emulator", "guest_cpus", "guest_memory",
                                 "boot_args", "rounds", "kib_per_cpu", "comp", "data",
                                 "date", "config_sha256", "source")), ""]
    out += _host_note(meta)
    out += [f"Each of the {cpus} CPUs writes {meta.get('kib_per_cpu', '?')} KiB of real data "
            "to its own part of a new 64 MiB zram device (lz4): seq, one CPU after the "
            "other; par, all at once. Held: every page the allocator holds, its "
            "metadata slab caches included; overhead: held beyond the compressed bytes, "
            f"in % of them; medians of {len({r['round'] for r in rows})} round(s). "
            "afmalloc/zspage allocates in one shard of a new pool and doubles them when "
            "allocations wait for a shard's lock; with zspage_shards_grow=N every shard "
            "(one per CPU) is active from the start.", ""]
    aux = smallpool_aux(run_dir)
    head = ["mode", "allocator", "compressed KiB", "held KiB", "overhead", "shards active"]
    if any(v is not None for v in aux.values()):
        out += ["kmalloc'd KiB: afmalloc's structures allocated with kmalloc (its shards, "
                "table tops, candidate arrays; debugfs aux_bytes), not in held, as "
                "zsmalloc's kmalloc'd pool and size class structures are not (nothing "
                "shows them).", ""]
        head.append("kmalloc'd KiB")
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode in ("seq", "par"):
        for (m, alloc, grow), (comp, held, over, act) in med.items():
            if m != mode:
                continue
            lab = alloc if alloc == "zsmalloc" or grow == "Y" else \
                f"{alloc} (zspage_shards_grow=N)"
            row = (f"| {mode} | {lab} | {comp / 1024:,.0f} | {held / 1024:,.0f} | "
                   f"{over:.1f}% | {', '.join(map(str, act)) if act else '-'} |")
            if "kmalloc'd KiB" in head:
                a = aux.get((m, alloc, grow))
                row += f" {a / 1024:,.0f} |" if a is not None else " - |"
            out.append(row)
    if meta.get("command"):
        out += ["", f"Reproduce: `{meta['command']}`"]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--out")
    ap.add_argument("--kind", choices=("untar-remove", "speed", "fio", "zswap-time",
                                       "smallpool"),
                    default="untar-remove",
                    help="which benchmark's results RUN_DIR holds (default untar-remove)")
    args = ap.parse_args()
    if args.kind == "untar-remove":
        rows, meta = load(args.run_dir)
        text = report(rows, meta) + fragmentation(args.run_dir)
    else:
        text = {"speed": speed, "fio": fio, "zswap-time": zswap_time,
                "smallpool": smallpool}[args.kind](args.run_dir)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
