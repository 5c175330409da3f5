#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Report of the swap-churn benchmark (bench/churn/).

    report.py DIR [--out FILE.md] [--plot FILE.png]

DIR holds what bench/churn/churn-guest.sh wrote: samples.csv (one row per
second and run, bench/churn/sample.py) and progress.csv (the workload's
rows, bench/churn/churn.c), and optionally meta.json (bench/churn/run.sh).

Per allocator, run and phase: the phase's length, throughput (pages
touched per second), the latency p50/p99 of faults (the workload's first
touches of at least 2.048 us: swap-ins, swap-cache hits, first touches)
and of swap-ins alone (faults during which the thread's major-fault count
grew; "-" for workload rows older than that column) from the workload's
"phase" row; over the samples taken in the phase: the mean, 95th
percentile and maximum overhead ratio ((pages held * page size - compressed
bytes) / compressed bytes; afmalloc's compressed bytes those its pool file
counts with its pages: load_samples()) and the mean overhead in MiB (a
small pool, as
zswap's under writeback, can have a large ratio of few bytes), counting
only samples that hold at least 1% of the run's peak compressed bytes
(not the swap header alone before the fill); the most pages held; the
swap-outs and swap-ins of the phase (zram: the zram device's writes and
reads; zswap: the cgroup's zswpout and zswpin) and, zswap only, the
pages its shrinker wrote back (the cgroup's zswpwb) to the swap device
behind it (a zram device, whose memory is not counted: held is zswap's
pool alone). Then the overhead ratio
5 s into the rest phase (the first sample at or after 5 s) and at its end
(its last sample, and how far into the rest that was), and for the zspage
store (afmalloc/zspage) where its overhead sits, per phase: the means of
its hole bytes, tail bytes, object headers (5 bytes each), tables and
dead zspages as shares of the compressed bytes, what is left (any
afm-<pool>-* slab caches, and counts of the pool file read at slightly
different moments; in runs sampled before sample.py's own_count(), also
the difference between the store's live bytes and its stored bytes), the
share of
hole bytes recorded on its hole lists and the objects placed in recorded
holes during the phase. Where the guest's /proc/stat was sampled (ctxt,
cpu_busy_ms, cpu_idle_ms, cpu_user_ms), per run and phase: the CPU time
busy per 1000 pages touched and, of it, in user space (the workload's own
code, the same work per page whatever the allocator), the share of CPU
time idle and the context switches per 1000 pages touched, which tell a
run that spent more CPU per page from one that waited more. With --plot
and matplotlib, the overhead ratio over time for every allocator and run.
Tables need only the standard library.
"""
import argparse
import csv
import json
import os
import statistics
import sys

PAGE = 4096    # the guest's page size: set_page()
ZS_PAGES = 8    # pages of a zspage of the zspage store (AFM_ZS_PAGES)
ZS_HDR = 5      # bytes of its object header (AFM_ZS_HDR)


def set_page(meta):
    """Take the page size of the run whose meta.json is @meta ("page_size":
    16384 on an arm64 guest built so; 4096 when absent, as in every x86
    run): held_pages count such pages, and a zspage is 32 KiB."""
    global PAGE, ZS_PAGES
    PAGE = int(meta.get("page_size", 4096))
    ZS_PAGES = 32768 // PAGE


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def pctl(vals, q):
    """Nearest-rank percentile q (0..1) of vals."""
    s = sorted(vals)
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))
    return s[k]


def fmt(v, spec="%.3f"):
    return "-" if v is None else spec % v


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load_samples(path):
    """The rows of samples.csv at path. afmalloc's compressed bytes are
    those its own pool file counted in the read that gave its pages
    (afm_stored_bytes; sample.py's own_count()): for files sampled before
    sample.py wrote compr_ext_bytes, whose compr_bytes was the swap side's
    count read around the pages, compr_bytes, overhead_bytes and
    overhead_ratio are computed again from afm_stored_bytes (the old
    compr_bytes kept as compr_ext_bytes)."""
    rows = load(path)
    for r in rows:
        if not r["alloc"].startswith("afmalloc") or "compr_ext_bytes" in r:
            continue
        c, h = num(r.get("afm_stored_bytes")), num(r.get("held_pages"))
        if c is None or h is None or num(r.get("compr_bytes")) is None:
            continue
        r["compr_ext_bytes"], r["compr_bytes"] = r["compr_bytes"], "%d" % c
        r["overhead_bytes"] = "%d" % (h * PAGE - c)
        r["overhead_ratio"] = "%.6f" % ((h * PAGE - c) / c) if c > 0 else ""
    return rows


def stored(r, floor):
    """Whether sample r counts: at least floor compressed bytes stored, and
    not a torn read (a negative overhead: fewer bytes of pages than the
    bytes stored, the pool having changed between reads)."""
    c, ov = num(r["compr_bytes"]), num(r["overhead_ratio"])
    return c is not None and c >= floor and ov is not None and ov >= 0


def key(r):
    return (r["alloc"], int(r["run"]))


def phase_order(progress):
    seen = []
    for r in progress:
        if r["kind"] == "phase" and r["phase"] not in seen:
            seen.append(r["phase"])
    return seen


def delta(run_rows, phase, col):
    """Growth of counter col over phase: from its first sample (taken as the
    phase starts, sample.py) to the first sample after it, or its last."""
    start = end = None
    for r in run_rows:
        v = num(r.get(col))
        if v is None:
            continue
        if r["phase"] == phase:
            if start is None:
                start = v
            end = v
        elif start is not None:
            end = v
            break
    return None if start is None else end - start


def span(run_rows, col):
    """Growth of cumulative counter col over the whole run (first to last
    sample that has it), or None."""
    v = [num(r.get(col)) for r in run_rows]
    v = [x for x in v if x is not None]
    return v[-1] - v[0] if v else None


def compaction_row(k, s_run):
    """A row of the compaction table: what the allocator's compaction gave
    back over the run and what it cost, where the allocator counts it."""
    if k[0] == "zsmalloc":
        freed = span(s_run, "zs_pages_compacted")
        return "| %s | %d | %s | - | - | - | - | - | - |" % (k[0], k[1], fmt(freed, "%.0f"))
    freed, moved, us, copied, walked, looked = (span(s_run, c) for c in (
        "afm_compact_pages_freed", "afm_compact_objs_moved", "afm_compact_us",
        "afm_compact_bytes", "afm_compact_walked", "afm_compact_looked"))
    mib = freed * PAGE / 2**20 if freed else None

    def per(a, b):
        return a / b if a is not None and b else None
    return "| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
        k[0], k[1], fmt(freed, "%.0f"), fmt(moved, "%.0f"),
        fmt(us / 1000 if us is not None else None, "%.1f"),
        fmt(per(us / 1000 if us is not None else None, mib), "%.2f"),
        fmt(per(copied, freed * PAGE if freed else None), "%.2f"),
        fmt(per(walked, moved), "%.2f"), fmt(per(looked, moved), "%.2f"))


def cpu_row(s_run, ph, pages):
    """Cells of the CPU table for phase ph (pages: the pages it touched), or
    None without the /proc/stat columns or pages."""
    busy, idle, ctxt, user = (delta(s_run, ph, c) for c in (
        "cpu_busy_ms", "cpu_idle_ms", "ctxt", "cpu_user_ms"))
    if busy is None or idle is None or ctxt is None or not pages or busy + idle <= 0:
        return None
    return "%.2f | %s | %.1f%% | %.1f" % (
        1000 * busy / pages, fmt(1000 * user / pages if user is not None else None, "%.2f"),
        100 * idle / (busy + idle), 1000 * ctxt / pages)


def zspage_parts(s_ph, s_run, ph):
    """Means over the samples s_ph of the zspage store's overhead and its
    parts, as fractions of the compressed bytes: [overhead, holes, tails,
    headers, tables, dead, rest, hole bytes on the lists / hole bytes],
    then the objects placed in recorded holes during phase ph, then the
    handle table's pages alone (of tables; None in runs sampled before
    sample.py read them); None when the samples lack the store's columns
    (other allocators, older runs)."""
    acc = [[] for _ in range(8)]
    htab = []
    for r in s_ph:
        c, ov = num(r["compr_bytes"]), num(r["overhead_ratio"])
        v = [num(r.get(x)) for x in ("afm_hole_bytes", "afm_tail_bytes", "afm_objects",
                                     "meta_pages", "afm_dead_zspages", "afm_hole_rec_bytes")]
        if not c or ov is None or any(x is None for x in v):
            continue
        holes, tails, objs, meta, dead, rec = v
        p = [holes / c, tails / c, ZS_HDR * objs / c, meta * PAGE / c,
             dead * ZS_PAGES * PAGE / c]
        for i, x in enumerate([ov] + p + [ov - sum(p)]):
            acc[i].append(x)
        if holes:
            acc[7].append(rec / holes)
        h = num(r.get("afm_htab_pages"))
        if h is not None:
            htab.append(h * PAGE / c)
    if not acc[0]:
        return None
    return ([statistics.mean(a) if a else None for a in acc]
            + [delta(s_run, ph, "afm_hole_reused"), statistics.mean(htab) if htab else None])


def report(d, out, plot):
    meta = {}
    if os.path.exists(os.path.join(d, "meta.json")):
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
    set_page(meta)
    samples = load_samples(os.path.join(d, "samples.csv"))
    progress = load(os.path.join(d, "progress.csv"))
    if not samples or not progress:
        sys.exit("report.py: no samples or progress rows in %s" % d)
    target = samples[0]["target"]
    runs = []
    for r in samples:
        if key(r) not in runs:
            runs.append(key(r))
    runs.sort(key=lambda k: (k[1], [s for s in samples if key(s) == k][0]["pos"]))
    phases = phase_order(progress)
    swap_cols = ("swap_out", "swap_in") if target == "zram" else ("zswpout", "zswpin")
    # zswap: the pages written back leave the pool (held counts the pool only).
    wb = target == "zswap"

    lines = ["# Swap churn: %s, %s" % (target, samples[0]["comp"]), ""]
    if meta:
        lines.append("Kernel %s (%s, %s), guest %s / %s CPUs, %s; %s; host load %s -> %s; %s." % (
            meta.get("kernel", "?"), meta.get("source", "?"),
            meta.get("accelerator", "?") + (", QEMU %s" % meta["emulator"]
                                            if meta.get("emulator") else ""),
            meta.get("guest_memory", "?"), meta.get("guest_cpus", "?"), meta.get("date", "?"),
            meta.get("workload", "?"), meta.get("host_load1_start", "?"),
            meta.get("host_load1_end", "?"), meta.get("command", "?")))
        if meta.get("warmup_s"):
            lines.append("Before run 1, a warm-up per allocator (the fill and %s s of churn, "
                         "not reported: warmup/), as a boot's first run is slower whatever "
                         "its allocator." % meta["warmup_s"])
        if meta.get("note"):
            lines.append("Note: %s (host load averages 1/5/15 min: %s at the start, %s at the "
                         "end)." % (meta["note"], meta.get("host_loadavg_start", "?"),
                                    meta.get("host_loadavg_end", "?")))
        lines.append("")
    lines += [
        "Overhead = (pages held x %d - compressed bytes) / compressed bytes, over the" % PAGE,
        "per-second samples of the phase holding at least 1% of the run's peak compressed",
        "bytes (what is held: bench/churn/sample.py).",
        "Latency: the workload's first touch of each accessed page; faults = accesses of",
        "at least 2.048 us (swap-ins, swap-cache hits, first touches); swap-ins = the faults",
        "during which the thread's major-fault count grew (the page came back from swap);",
        "percentiles are histogram bucket edges (within 12.5%).",
        "Swap-outs/ins: %s. The allocators' CPU time split (alloc/free/compaction) is not" % (
            "zram device writes/reads" if target == "zram" else "the cgroup's zswpout/zswpin"),
        "available yet.",
    ] + ([
        "Written back: the cgroup's zswpwb, pages zswap's shrinker moved from its pool to",
        "the swap device behind it (a zram device, zsmalloc, lz4); pages held count zswap's",
        "pool alone, not that device.",
    ] if wb else []) + [
        "",
        "| allocator | run | phase | s | pages/s | fault p50 us | fault p99 us | all p99 us "
        "| swap-in p50 us | swap-in p99 us "
        "| overhead mean | p95 | max | overhead mean MiB | held max MiB | swap-outs | swap-ins |"
        + (" written back |" if wb else ""),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        + ("---:|" if wb else ""),
    ]
    rest_rows, parts_rows, compact_rows, cpu_rows = [], [], [], []
    for k in runs:
        s_run = [r for r in samples if key(r) == k]
        compact_rows.append(compaction_row(k, s_run))
        # Overhead only where the data is at least 1% of the run's peak:
        # the swap header alone, before the fill, is not the allocator's
        # overhead on the workload.
        floor = 0.01 * max((num(r["compr_bytes"]) or 0) for r in s_run)
        p_run = [r for r in progress if key(r) == k and r["kind"] == "phase"]
        for ph in phases:
            pr = [r for r in p_run if r["phase"] == ph]
            if not pr:
                continue
            pr = pr[-1]
            s_ph = [r for r in s_run if r["phase"] == ph and stored(r, floor)]
            ov = [num(r["overhead_ratio"]) for r in s_ph]
            ov = [v for v in ov if v is not None]
            held = [num(r["held_pages"]) for r in s_ph]
            held = [v for v in held if v is not None]
            ovb = [num(r["overhead_bytes"]) for r in s_ph]
            ovb = [v for v in ovb if v is not None]
            cells = [
                k[0], "%d" % k[1], ph, "%.1f" % (num(pr["interval_s"]) or 0),
                fmt(num(pr["pages_per_s"]), "%.0f"),
                pr["fault_p50_us"] or "-", pr["fault_p99_us"] or "-", pr["all_p99_us"] or "-",
                pr.get("swapin_p50_us") or "-", pr.get("swapin_p99_us") or "-",
                fmt(statistics.mean(ov) if ov else None, "%.4f"),
                fmt(pctl(ov, 0.95) if ov else None, "%.4f"), fmt(max(ov) if ov else None, "%.4f"),
                fmt(statistics.mean(ovb) / 2**20 if ovb else None, "%.2f"),
                fmt(max(held) * PAGE / 2**20 if held else None, "%.1f"),
                fmt(delta(s_run, ph, swap_cols[0]), "%.0f"),
                fmt(delta(s_run, ph, swap_cols[1]), "%.0f")]
            if wb:
                cells.append(fmt(delta(s_run, ph, "zswpwb"), "%.0f"))
            lines.append("| " + " | ".join(cells) + " |")
            cpu = cpu_row(s_run, ph, num(pr.get("pages")))
            if cpu:
                cpu_rows.append("| %s | %d | %s | %s |" % (k[0], k[1], ph, cpu))
            parts = zspage_parts(s_ph, s_run, ph)
            if parts:
                parts_rows.append("| %s | %d | %s | " % (k[0], k[1], ph) + " | ".join(
                    fmt(v * 100 if v is not None and i != 8 else v,
                        "%.0f" if i == 8 else "%.2f%%")
                    for i, v in enumerate(parts)) + " |")
        rest = sorted((r for r in s_run if r["phase"] == "rest" and stored(r, floor)
                       and num(r["phase_t_s"]) is not None),
                      key=lambda r: num(r["phase_t_s"]))
        r5 = next((r for r in rest if num(r["phase_t_s"]) >= 5), None)
        end = rest[-1] if rest else None
        rest_rows.append("| %s | %d | %s | %s | %s | %s | %s |" % (
            k[0], k[1], fmt(num(r5["overhead_ratio"]) if r5 else None, "%.4f"),
            fmt(num(end["overhead_ratio"]) if end else None, "%.4f"),
            fmt(num(end["phase_t_s"]) if end else None, "%.1f"),
            fmt(num(end["held_pages"]) * PAGE / 2**20 if end and num(end["held_pages"]) is not None
                else None, "%.1f"),
            fmt(num(end["compr_bytes"]) / 2**20 if end and num(end["compr_bytes"]) is not None
                else None, "%.1f")))
    lines += ["", "Overhead at rest (the workload idle, its data swapped out): 5 s into the rest "
              "(the first sample at or after 5 s) and at its end (its last sample, \"end at s\" "
              "into it):", "",
              "| allocator | run | after 5 s | at the end | end at s | held MiB at the end "
              "| compressed MiB at the end |",
              "|---|---|---:|---:|---:|---:|---:|"] + rest_rows
    if any("afm_compact_us" in r and r["afm_compact_us"] != "" for r in samples):
        lines += ["", "Compaction over the whole run (fill to verification): pages it gave back "
                  "(zsmalloc: zram's pages_compacted, by its shrinker and any manual compaction; "
                  "its cost is not counted); for afmalloc (debugfs \"compact\" and \"cost\" "
                  "rows) the objects it moved, the wall-clock time of its runs, that time per MiB "
                  "given back, the bytes it copied per byte given back, and per object moved the "
                  "victims' extents it walked and the handle entries it looked at.", "",
                  "| allocator | run | pages given back | objects moved | ms | ms per MiB "
                  "| bytes copied per byte | extents walked per object | entries looked at per "
                  "object |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|"] + compact_rows
    if cpu_rows:
        lines += ["", "The guest's CPUs per phase (/proc/stat, all CPUs, every process and "
                  "kernel thread): busy time (user, system, interrupts) per 1000 pages the "
                  "workload touched and, of it, user space (the workload's own code: the same "
                  "work per page whatever the allocator, so a change there is the machine's "
                  "speed, not the allocator's work); the share of CPU time idle; context "
                  "switches per 1000 pages touched.", "",
                  "| allocator | run | phase | busy ms per 1000 pages | of it user | idle "
                  "| context switches per 1000 pages |",
                  "|---|---|---|---:|---:|---:|---:|"] + cpu_rows
    # The handle-table column only for runs sampled since sample.py reads it.
    htab = any(not r.endswith(" | - |") for r in parts_rows)
    if not htab:
        parts_rows = [r[:-len(" - |")] for r in parts_rows]
    if parts_rows:
        lines += ["", "Where the zspage store's overhead sits: means over the phase's samples "
                  "(those counted above) of each part, in % of the compressed bytes; the parts "
                  "add up to the overhead mean. holes: free bytes inside zspages, left by freed "
                  "objects; tails: free bytes at the ends of zspages; headers: 5 bytes per "
                  "object; tables: handle and descriptor tables (meta_pages); dead: emptied "
                  "zspages not yet freed; rest: the overhead less these (live bytes against the "
                  "compressed bytes the swap side counts, sampled at slightly different "
                  "moments). On lists: recorded holes' bytes in % of the hole bytes (what "
                  "allocation looks in); into holes: objects placed in recorded holes during "
                  "the phase" + ("; of tables, handles: the handle table's pages alone."
                                 if htab else "."), "",
                  "| allocator | run | phase | overhead mean | holes | tails | headers | tables "
                  "| dead | rest | on lists | into holes |" + (" of tables, handles |" if htab
                                                               else ""),
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                  + ("---:|" if htab else "")] + parts_rows
    text = "\n".join(lines) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if plot:
        plot_overhead(samples, runs, plot, target)


def plot_overhead(samples, runs, path, target):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib: %s not drawn" % path, file=sys.stderr)
        return

    def t0(s_run):  # when the fill started: time 0 of the run's curve
        for r in s_run:
            if r["phase"] == "fill":
                return num(r["t_s"]) - (num(r["phase_t_s"]) or 0)
        return 0

    fig, ax = plt.subplots(figsize=(10, 5))
    for k in runs:
        s_run = [r for r in samples if key(r) == k]
        floor = 0.01 * max((num(r["compr_bytes"]) or 0) for r in s_run)
        s = [r for r in s_run if r["phase"] not in ("start", "done") and stored(r, floor)]
        z = t0(s_run)
        ax.plot([num(r["t_s"]) - z for r in s], [num(r["overhead_ratio"]) * 100 for r in s],
                label="%s (run %d)" % k, linewidth=1)
    # Phase starts of the first run, as a guide (the others differ a little).
    first = [r for r in samples if key(r) == runs[0]]
    z, prev = t0(first), None
    for r in first:
        if r["phase"] != prev and r["phase"] not in ("start", "done"):
            x = num(r["t_s"]) - (num(r["phase_t_s"]) or 0) - z
            ax.axvline(x, color="grey", linewidth=0.5, linestyle=":")
            ax.text(x, 1.0, " " + r["phase"], transform=ax.get_xaxis_transform(),
                    fontsize=7, va="top", color="grey")
        prev = r["phase"]
    ax.set_xlabel("seconds since the fill started (phases: %s run %d)" % runs[0])
    ax.set_ylabel("overhead, % of compressed bytes")
    ax.set_title("Swap churn on %s: allocator overhead over time" % target)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--out")
    ap.add_argument("--plot")
    a = ap.parse_args()
    report(a.dir, a.out, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
