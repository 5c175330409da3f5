#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Generate the README's figures and bench/results/README.md from committed results.

usage: bench/readme_results.py           rewrite both files from bench/results/
       bench/readme_results.py --check   rewrite nothing; fail if anything is stale
       bench/readme_results.py --collect-check [CACHE_TIMINGS_DIR]
       ... [--results DIR] [--readme FILE]   another results folder and README
                                             (a copy to try the script on)

bench/results/README.md is generated whole: an index of the folders of
bench/results/ and one section per folder, in name order. A folder holds
what bench/run.sh writes (steps.csv, meta.json, overhead.png, the
fragmentation tests' CSVs and frag.png; with --runs N, run-K folders and
summary.md), bench/speed/run.sh's speed.csv, bench/fio/run.sh's fio.csv,
bench/zswap-time/run.sh's zswap-time.csv, a make bench-zswap log (zswap.log),
bench/churn/run.sh's swap-churn run (samples.csv, progress.csv, meta.json;
skipped with a note on stderr while meta.json is missing: a run still
going), a make check or make demo record of scripts/timed.sh (check.tsv or demo.tsv; folders
make-check, make-demo: warm caches, make-check-cold, make-demo-cold: cold
caches on a fresh machine), or logs of make check's steps (*.log): the
summary lines of tests/vm/fault-inject.sh ("fault-inject: alloc=...")
become its table, and every "reliability: kind=... test=... tried=...
expected=... observed=... lost=N result=pass|FAIL" line of any log a row of
one Reliability table.

In README.md only the text between '<!-- generated: NAME -->' and
'<!-- end: NAME -->' is replaced: the summary against zsmalloc (read from
the runs named in SUMMARY; for swap churn, rows stating issue 16's targets
met or missed), the measured times of make demo and make
check, and the benchmark's run times. Every figure of the README is in
those blocks: --check fails on a percentage, an x-ratio or a duration
outside them. bench/plot_summary.py draws bench/results/summary.png from
the same numbers (summary_plot_data()) and records their digest in it.

--check regenerates both files in memory and exits 1, printing a diff or
the reason, when README.md or bench/results/README.md differ from what the
results give, when a figure sits outside the generated blocks, when a
hexadecimal commit id in either file (hashes after "sha256" or "config"
excepted) is not in `git log`, when a relative link in either file points
nowhere, when README prose names a commit ("on 1234abc") just before a
link to a run whose meta.json records another source (a run installed
under that name since: the prose meant the old one, now NAME-OLDSOURCE),
or when summary.png was drawn from other numbers. The design log,
docs/*.md, is written by hand and checked as the README's prose is
(figures, commit ids, links, runs named by commit). It needs only
python3 and git.

--collect-check copies the record of the last `make check` from
CACHE_TIMINGS_DIR (default $AFMALLOC_CACHE/timings, i.e.
~/.cache/afmalloc/timings, written by scripts/timed.sh): check.tsv to
bench/results/make-check/ and, replacing the *.log there, every logs/*.log
with reliability: or fault-inject: lines to bench/results/reliability/.
It refuses a record with a failed step. Nothing else is touched: run the
script again without options to regenerate the READMEs.
"""
import argparse
import bisect
import collections
import contextlib
import csv
import difflib
import glob
import hashlib
import importlib.util
import io
import json
import math
import os
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def _load_churn_report():
    """bench/churn/report.py as a module (its name clashes with bench/report.py)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "churn", "report.py")
    spec = importlib.util.spec_from_file_location("churn_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


churn_report = _load_churn_report()

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(TOP, "bench", "results")
README = os.path.join(TOP, "README.md")
RESULTS_README = os.path.join(RESULTS, "README.md")
SUMMARY_PNG = os.path.join(RESULTS, "summary.png")
PNG_KEY = "afmalloc-summary-data"

ZS, AF = "zsmalloc", "afmalloc/zspage"

# The runs the README's summary table and plot are read from (folders of
# bench/results). Point these at the new folder when a run is superseded.
SUMMARY = {
    "full": "full-lz4",                     # density on the full tree
    "full_boots": "full-lz4-2boots",        # the same over two boots, both orders
    "rounds": "quick-lz4-10rounds",         # repeated churn
    "zstd": "quick-zstd-4allocs",           # another compressor, all allocators
    "fio": "fio-tcg",                       # fio on zram: IOPS and memory held
    "speed": "speed-tcg",                   # in-kernel microbenchmark
    # The same with a working set of 92 MiB, beyond the L2 and most L3s
    # (--working-set); missing: left out with a note.
    "speed_large": "speed-tcg-large",
    "speed_native": "speed-uml",            # the same natively, on UML
    # The same with a working set of 92 MiB, beyond the L2 and most L3s
    # (uml.sh --working-set); missing: left out with a note.
    "speed_native_large": "speed-uml-large",
    # The objects replaced and read in order, oldest first (fio's write and
    # read shapes; --sequential), under TCG and natively; missing: left out
    # with a note.
    "speed_seq": "speed-tcg-seq",
    "speed_native_seq": "speed-uml-seq",
    # One working set shared by the threads (--shared: frees and maps of
    # objects another CPU allocated); missing: left out with a note.
    "speed_shared": "speed-tcg-shared",
    # The microbenchmark on an emulated arm64 kernel with 16 KiB pages
    # (bench/speed/arm64.sh), with the memory each pool holds; missing: left
    # out with a note.
    "speed_arm64": "speed-arm64-16k",
    "speed_arm64_large": "speed-arm64-16k-large",   # 65536 objects a thread
    "huge": ("full-lz4-2boots", "quick-lz4-4boots", "quick-lz4-2boots"),
    # Untar/remove on an emulated arm64 guest (make bench-arm64): one boot
    # of the full tree, and boots of the quick tree in both orders with 16
    # KiB and with 4 KiB pages; missing: left out with a note.
    "arm64": ("full-lz4-arm64-16k", "quick-lz4-arm64-16k-4boots", "quick-lz4-arm64-4k-4boots"),
    "zswap_time": "zswap-time-tcg",         # zswap on the project's kernel
    # A small zram device written from every CPU of a many-CPU guest
    # (bench/smallpool/run.sh); missing: left out with a note.
    "smallpool": "smallpool-tcg",
    "zswap_stock": "zswap-stock",           # zswap on Debian's kernel
    # Swap churn (bench/churn/), a row group each; one still running (no
    # meta.json) or missing is left out with a note.
    "churn": ("churn-zram-lz4", "churn-zswap-lz4", "churn-zram-zstd", "churn-zswap-zstd",
              # on emulated arm64, 16 KiB pages:
              "churn-zram-lz4-arm64-16k", "churn-zswap-lz4-arm64-16k",
              "churn-zswap-zstd-arm64-16k"),
    # Extent alignment (zspage_align, README "Extent alignment"): the same
    # benchmark with the default and with afmalloc.zspage_align=16, each
    # against zsmalloc in its own boot. A pair with a missing folder is
    # left out with a note.
    "align": (("fio-tcg-a543431", "fio-tcg-align16"),
              ("quick-lz4-align1", "quick-lz4-align16"),
              ("churn-zram-lz4-3e75791", "churn-zram-lz4-align16")),
    # ... and the two settings beside zsmalloc in one boot (the benchmarks'
    # afmalloc/zspage+zspage_align=16 allocator): swap churn, the quick tree
    # (a boot in each order) and fio; a missing run is named in a line.
    "align_beside": ("churn-zram-lz4-align-beside", "quick-lz4-align-beside",
                     "fio-tcg-params"),
    # Compaction trigger (README "Compaction trigger"): fio with the default
    # and afmalloc/zspage+zspage_auto_permille=20 beside zsmalloc in one boot.
    "auto": ("fio-tcg-params",),
    # Handle slot reuse (README "Handle slot reuse"): the same benchmark with
    # the default and with afmalloc.zspage_handle_mag=0, alternating boots;
    # keys: the parameter's value.
    "handle_mag": {
        # Later defaults, each measured on the commit that made it (the runs'
        # source): the quick tree with it and with zspage_handle_mag=0, one
        # boot each, same session; missing: a line says so. 9ca3a27: the
        # magazine takes no slot of a full, old table page while writes
        # outrun frees ("write-mostly"); then it is emptied and unused
        # while frees outrun writes ("free-mostly").
        "later": (
            {"what": "the magazine takes no slot of a full table page other than the "
                     "current one while allocations outrun frees (an untar), and every "
                     "freed slot under churn as before",
             "16": ("quick-zstd-hwr-1",), "0": ("quick-zstd-hwr-hmag0-1",)},
            {"what": "the magazine is also emptied, and left unused, while frees outrun "
                     "allocations (files removed, zswap's writeback)",
             "16": ("quick-zstd-hfr-1",), "0": ("quick-zstd-hfr-hmag0-1",)},
        ),
        # Both rules against zspage_handle_phases=N (add8d3b), swap churn
        # with the two and zsmalloc in one boot.
        "phases": ("churn-zswap-lz4-phases", "churn-zram-lz4-phases"),
        "16": {"quick": ("quick-zstd-hmag16-1", "quick-zstd-hmag16-2"),
               "speed": ("speed-uml-hmag16-1", "speed-uml-hmag16-2"),
               "speed_large": ("speed-uml-large-hmag16",),
               "churn": ("churn-zram-lz4-631dd32",)},
        "0": {"quick": ("quick-zstd-hmag0-1", "quick-zstd-hmag0-2"),
              "speed": ("speed-uml-hmag0-1", "speed-uml-hmag0-2"),
              "speed_large": ("speed-uml-large-hmag0",),
              "churn": ("churn-zram-lz4-hmag0",)},
    },
}

# The zspage store's hole cache: runs whose kernel predates it are labelled.
HOLE_CACHE = "ed98775"
# Runs whose meta.json names no commit that is in git log (before e2989b7
# the "source" field was the checkout when the run ended, and older runs
# have none): the commit their kernel was built from, as the message of the
# commit that added them (91b7b9c) states.
KERNEL_SOURCE = {
    "full-lz4-2boots-dc6c7fd": "dc6c7fd",  # its boots ran f398b05 and dc6c7fd
    "quick-lz4-10rounds-dc6c7fd": "dc6c7fd",
    "quick-lz4-hole-cache": "ed98775",
    # meta.json says a77a66c: the same tree as 75cb817, the commit in the
    # clone it ran from, whose messages were reworded before git am (the
    # run committed as churn-zram-lz4 in 84b77bd, renamed in 233e9fe).
    "churn-zram-lz4-75cb817": "75cb817",
}
# Commit ids a run's meta.json names that git log lacks, and the commit of
# git log with the same tree: --check accepts them in the READMEs.
# 478431e: the make check of session 54 started on it; its message was
# reworded (fd21ad9, the same tree) while the check ran.
COMMIT_ALIASES = {"a77a66c": "75cb817", "478431e": "fd21ad9"}
# The zspage store's hole index (every hole on lists linked through the
# holes): churn runs whose kernel predates it say so.
HOLE_INDEX = "d4ab594"
# Runs without any kernel commit, committed (last changed) before the hole
# cache existed: their kernel predates it.
COMMITTED_IN = {
    "quick-lz4-4boots-64c6d8e": "64c6d8e",
    "quick-lz4-after-d3bd6e7": "f001ae1",
    "zswap-stock-23dfff9": "23dfff9",
    "zswap-time-tcg-539f31e": "539f31e",
}

BLOCK_RE = re.compile(r"<!-- generated: ([\w-]+) -->\n(.*?)<!-- end: \1 -->", re.S)
BLOCKS = ("summary", "commands", "benchmark", "align", "auto", "handle_mag")


def fail(msg):
    sys.exit(f"readme_results: error: {msg}")


# --- git ---------------------------------------------------------------------

class Git:
    """The commits of git log (HEAD's history), read once."""

    def __init__(self):
        self.commits = self.after = None
        try:
            self.commits = self._run("rev-list", "HEAD")
            hole = self._run("rev-parse", "--verify", HOLE_CACHE + "^{commit}")
            self.after = set(hole + self._run("rev-list", "--ancestry-path",
                                              f"{HOLE_CACHE}..HEAD"))
        except (OSError, subprocess.CalledProcessError):
            pass

    @staticmethod
    def _run(*args):
        return subprocess.run(["git", "-C", TOP] + list(args), check=True,
                              capture_output=True, text=True).stdout.split()

    def full(self, short):
        """The full id of a commit of git log starting with short, or None."""
        if not self.commits or not short:
            return None
        hits = [c for c in self.commits if c.startswith(short.lower())]
        return hits[0] if len(hits) == 1 else None

    def known(self, short):
        """Whether short names a commit of git log (True without git)."""
        return self.commits is None or self.full(short) is not None


GIT = None


def git():
    global GIT
    if GIT is None:
        GIT = Git()
    return GIT


def run_source(name):
    """(commit, how) of the kernel a run was built from; commit may be None."""
    meta = run_meta(name)
    src = meta.get("source")
    if src and git().full(src):
        return src, "meta.json"
    if src and src.endswith("-dirty") and git().full(src[:-len("-dirty")]):
        # git describe --dirty: built from that commit with uncommitted changes.
        return src[:-len("-dirty")], "meta.json, dirty"
    if name in KERNEL_SOURCE:
        return KERNEL_SOURCE[name], "commit message"
    return None, ""


def before_index(name):
    """' (kernel C, before the hole index)' for a run whose kernel commit C
    predates HOLE_INDEX; '' when it has it or git cannot tell."""
    src, _ = run_source(name)
    g = git()
    if not src or not g.full(src) or not g.full(HOLE_INDEX):
        return ""
    r = subprocess.run(["git", "-C", TOP, "merge-base", "--is-ancestor", g.full(HOLE_INDEX),
                        g.full(src)], capture_output=True)
    return f" (kernel {src}, before the hole index)" if r.returncode == 1 else ""


def hole_cache(name):
    """True/False: the run's kernel has/predates the hole cache; None: unknown."""
    g = git()
    if g.after is None:
        return None
    src, _ = run_source(name)
    if src:
        return g.full(src) in g.after
    if name in COMMITTED_IN and g.full(COMMITTED_IN[name]):
        return False if g.full(COMMITTED_IN[name]) not in g.after else None
    return None


# --- reading runs --------------------------------------------------------------

def rdir(name):
    return os.path.join(RESULTS, name)


def run_meta(name):
    """meta.json of a run folder (of its run-1 for a multi-boot run), {} if none."""
    d = rdir(name)
    if not os.path.isfile(os.path.join(d, "meta.json")) and \
            os.path.isfile(os.path.join(d, "run-1", "meta.json")):
        d = os.path.join(d, "run-1")
    return report.load_meta(d)


def working_set_mib(meta):
    """A speed run's live bytes a thread, MiB: meta.json's working_set_mib,
    else its working set times the mean size of its size histogram."""
    if "working_set_mib" in meta:
        return float(meta["working_set_mib"])
    path = os.path.join(TOP, "bench", "data", meta["sizes"].split(" ")[0])
    n = s = 0
    with open(path) as f:
        for row in csv.reader(line for line in f if line[:1].isdigit()):
            lo, hi, c = (int(x) for x in row[:3])
            n += c
            s += (lo + hi) / 2 * c
    return int(meta["working_set"]) * s / n / 2**20


def speed_ws(name):
    """(objects a thread, their MiB, the host's L3 or None, the order the
    objects are taken in) of a speed run."""
    m = run_meta(name)
    return (int(m["working_set"]), working_set_mib(m), m.get("host_l3"),
            "shared" if m.get("shared") else m.get("order", "random"))


def speed_held(name):
    """Memory held after the writes (alloc-map) of a speed run with held.csv:
    {threads: {allocator: [overhead % per run]}, ("x", threads): [afmalloc's
    pages over zsmalloc's per run]}, runs in order."""
    rows = report.read_csv(rdir(name), "held.csv")
    runs = sorted(dict.fromkeys(r["run"] for r in rows), key=int)
    h = {(r["run"], r["alloc"], int(r["threads"])):
         (int(r["held_pages"]) * int(r["page_size"]), int(r["stored_bytes"]))
         for r in rows if r["op"] == "alloc-map"}
    out = {}
    for t in sorted({k[2] for k in h}):
        out[t] = {a: [100 * (h[(rn, a, t)][0] - h[(rn, a, t)][1]) / h[(rn, a, t)][1]
                      for rn in runs if (rn, a, t) in h and h[(rn, a, t)][1]]
                  for a in (ZS, AF)}
        # Memory held per byte stored, afmalloc's over zsmalloc's.
        out[("x", t)] = [(h[(rn, AF, t)][0] / h[(rn, AF, t)][1])
                         / (h[(rn, ZS, t)][0] / h[(rn, ZS, t)][1]) for rn in runs
                         if (rn, AF, t) in h and (rn, ZS, t) in h
                         and h[(rn, AF, t)][1] and all(h[(rn, ZS, t)])]
        if not (out[t][ZS] and out[t][AF] and out[("x", t)]):
            del out[t], out[("x", t)]
    return out


def ws_words(ws):
    """How a speed row names its working set."""
    n, mib, l3, order = ws
    return (f"{n} objects a thread, {mib:.0f} MiB" + (f", host L3 {l3.split(' (')[0]}" if l3 else "")
            + (", taken in order, oldest first: fio's write and read shapes"
               if order == "sequential" else "")
            + (", one set shared by the threads: frees and maps of objects another CPU allocated"
               if order == "shared" else ""))


def need(name, *files):
    for f in files:
        if not os.path.isfile(os.path.join(rdir(name), f)):
            fail(f"the README summary needs bench/results/{name}/{f} (see SUMMARY in {__file__})")


def steps(name):
    need(name, "steps.csv")
    return report.read_csv(rdir(name), "steps.csv")


def boot_steps(name):
    """steps.csv rows of a run folder, or of each run-K of a multi-boot one."""
    d = rdir(name)
    if os.path.isfile(os.path.join(d, "steps.csv")):
        return [report.read_csv(d, "steps.csv")]
    return [report.read_csv(k, "steps.csv")
            for k in sorted(glob.glob(os.path.join(d, "run-*")))
            if os.path.isfile(os.path.join(k, "steps.csv"))]


def ovh(rows, alloc, step, rnd=None):
    """Overhead in % of the compressed bytes of alloc after step (last round)."""
    sel = [r for r in rows if r["alloc"] == alloc and r["step"] == step
           and (rnd is None or r["round"] == str(rnd))]
    if not sel:
        fail(f"no {alloc} {step} row")
    return 100 * float(sel[-1]["overhead_ratio"])


RM_STEPS = ("rm_drivers", "rm_arch", "rm_fs", "rm_sound", "rm_include")


def summary_csv(name):
    """{(alloc, metric): [(boot, position, value)]} of a multi-boot run."""
    need(name, "summary.csv")
    out = {}
    for r in report.read_csv(rdir(name), "summary.csv"):
        out.setdefault((r["alloc"], r["metric"]), []).append(
            (int(r["boot"]), int(r["position"]), float(r["value"])))
    return out


def med(xs):
    return statistics.median(xs)


def by_position(vals, pos):
    return [v for _, p, v in vals if p == pos]


# --- swap churn (bench/churn/) ---------------------------------------------------
#
# A churn folder holds what bench/churn/run.sh writes: samples.csv (a row per
# second, allocator and run: bench/churn/sample.py), progress.csv (the
# workload's rows), one log per run, guest.log and console.log; at the very
# end meta.json, then report.md and overhead.png. A folder without meta.json
# is a run still going (or one that failed): it is skipped with a note. The
# per-run, per-phase figures are bench/churn/report.py's own, read from the
# tables of the report it makes from the folder, so that both say the same;
# this script only takes medians over runs and pairs the samples of
# afmalloc/zspage and zsmalloc.

CHURN_SKIPPED = set()


def is_churn(name):
    return os.path.isfile(os.path.join(rdir(name), "samples.csv"))


def churn_done(name):
    """Whether a churn folder holds a finished run (meta.json, written last
    but for the report); notes on stderr, once, a folder that does not."""
    if os.path.isfile(os.path.join(rdir(name), "meta.json")):
        if not os.path.isfile(os.path.join(rdir(name), "progress.csv")):
            fail(f"{rdir(name)} has meta.json but no progress.csv")
        return True
    if name not in CHURN_SKIPPED:
        CHURN_SKIPPED.add(name)
        print(f"readme_results: note: {rdir(name)} has no meta.json yet (a churn run in "
              "progress, or one that failed): skipped", file=sys.stderr)
    return False


def md_tables(text):
    """The Markdown tables of a text, each a list of {header: cell} rows."""
    out, lines = [], text.splitlines()
    for i, ln in enumerate(lines[:-1]):
        if ln.startswith("|") and lines[i + 1].startswith("|---") and \
                (i == 0 or not lines[i - 1].startswith("|")):
            head = [c.strip() for c in ln.strip().strip("|").split("|")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(head, (c.strip() for c in row.strip().strip("|").split("|")))))
            out.append((head, rows))
    return out


def cnum(cell):
    """A number of a report table cell, None for '-'."""
    return churn_report.num(cell) if cell not in ("", "-") else None


CHURN_CACHE = {}
# report.py's columns this script reads (a renamed column fails loudly).
CHURN_PHASE_COLS = ("allocator", "run", "phase", "s", "pages/s", "fault p99 us",
                    "overhead mean", "max", "swap-outs", "swap-ins")
CHURN_REST_COLS = ("allocator", "run", "after 5 s", "at the end", "end at s")
CHURN_REST_MIB_COL = "compressed MiB at the end"
# Read when the report has them (workload rows with swap-ins; samples with
# the zspage store's holes and tails).
CHURN_SWAPIN_COL = "swap-in p99 us"
# zswap runs: pages zswap's shrinker wrote back to the swap device behind it.
CHURN_WB_COL = "written back"
CHURN_PARTS_COLS = ("allocator", "run", "phase", "overhead mean", "holes", "tails", "headers",
                    "tables", "dead", "rest", "on lists", "into holes")
# The guest's CPU table (runs sampled with /proc/stat): the workload's own
# user-space time per 1000 pages, the same work whatever the allocator, so
# the host's speed at the time.
CHURN_CPU_COLS = ("allocator", "run", "phase", "busy ms per 1000 pages", "of it user")


def churn(name):
    """Everything the README and bench/results/README.md say of a churn run:
    {"meta", "text" (bench/churn/report.py's report), "allocs", "runs",
    "phases", "phase": {(alloc, phase): {column: [per run]}}, "rest":
    {alloc: {"5": [...], "60": [...]}} ("60": report.py's "at the end", the
    rest's last sample), "rest_at": the seconds into the rest of those last
    samples, "lat": the latency column compared (swap-in p99 when every
    churn-phase row has one, else fault p99), "parts": {phase: {column: [per
    run]}} of report.py's table of the zspage store's overhead parts (empty
    without one), "pairs": {phase or None (all): (pairs, afmalloc held more,
    zsmalloc held more, most MiB afmalloc held beyond zsmalloc, pairs with
    overhead ratios, afmalloc's higher, zsmalloc's higher)}}."""
    d = rdir(name)
    if d in CHURN_CACHE:
        return CHURN_CACHE[d]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        churn_report.report(d, None, None)
    text = buf.getvalue()
    tables = md_tables(text)
    pt = [(head, rows) for head, rows in tables if all(c in head for c in CHURN_PHASE_COLS)]
    rt = [rows for head, rows in tables if all(c in head for c in CHURN_REST_COLS)]
    zt = [rows for head, rows in tables if all(c in head for c in CHURN_PARTS_COLS)]
    ct = [rows for head, rows in tables if all(c in head for c in CHURN_CPU_COLS)]
    if len(pt) != 1 or len(rt) != 1:
        fail(f"bench/churn/report.py's report of {d} lacks its per-phase table (columns "
             f"{', '.join(CHURN_PHASE_COLS)}) or its rest table ({', '.join(CHURN_REST_COLS)})")
    samples = churn_report.load_samples(os.path.join(d, "samples.csv"))
    progress = churn_report.load(os.path.join(d, "progress.csv"))
    phases = churn_report.phase_order(progress)
    allocs = list(dict.fromkeys(r["alloc"] for r in samples))
    runs = sorted({int(r["run"]) for r in samples})
    per = {}
    head, pt = pt[0]
    cols = CHURN_PHASE_COLS[3:] + tuple(x for x in (CHURN_SWAPIN_COL, CHURN_WB_COL, "held max MiB")
                                         if x in head)
    for r in pt:
        c = per.setdefault((r["allocator"], r["phase"]), {})
        secs = cnum(r["s"])
        c.setdefault("run", []).append(int(r["run"]))
        for col in cols:
            c.setdefault(col, []).append(cnum(r[col]))
        for col in ("swap-outs", "swap-ins") + ((CHURN_WB_COL,) if CHURN_WB_COL in head else ()):
            v = cnum(r[col])
            c.setdefault(col + "/s", []).append(v / secs if v is not None and secs else None)
    rest, rest_at = {}, []
    for r in rt[0]:
        c = rest.setdefault(r["allocator"], {"5": [], "60": [], "mib": [], "run": []})
        c["run"].append(int(r["run"]))
        c["5"].append(cnum(r["after 5 s"]))
        c["60"].append(cnum(r["at the end"]))
        c["mib"].append(cnum(r.get(CHURN_REST_MIB_COL, "")))
        if cnum(r["end at s"]) is not None:
            rest_at.append(cnum(r["end at s"]))
    swapin = [per.get((a, "churn"), {}).get(CHURN_SWAPIN_COL) for a in (AF, ZS)]
    lat = CHURN_SWAPIN_COL if all(v and None not in v for v in swapin) else "fault p99 us"
    cpu = {}
    for r in (ct[0] if ct else []):
        cpu.setdefault((r["allocator"], r["phase"]), {})[int(r["run"])] = cnum(r["of it user"])
    parts = {}
    for r in (zt[0] if zt else []):
        if r["allocator"] != AF:
            continue
        c = parts.setdefault(r["phase"], {})
        c.setdefault("run", []).append(int(r["run"]))
        for col in CHURN_PARTS_COLS[3:]:
            c.setdefault(col, []).append(cnum(r[col].rstrip("%")))
    # Pairs: each allocator runs alone, so samples are matched by run, phase
    # and whole second into the phase (the last sample of that second); in
    # the exit phase by exit (the n-th of the run) and whole second since it,
    # as churn.c's "exit" rows are for: an exit comes when the refill after
    # the one before is done, at each allocator's own pace.
    # Held: every sample; overhead ratio: samples report.py counts (stored()).
    held, ratio, raw, peak, exits, since = {}, {}, {}, {}, {}, {}
    # Each run's exit-phase samples by allocator: (seconds into the phase,
    # overhead ratio), counted ones only (stored(), not torn), to read
    # zsmalloc's ratio at the moment after an exit of afmalloc's sample.
    curve = {}
    for r in progress:
        if r["kind"] == "exit" and churn_report.num(r["phase_t_s"]) is not None:
            exits.setdefault((r["run"], r["alloc"]), []).append(
                churn_report.num(r["phase_t_s"]))
    for ex in exits.values():
        ex.sort()
    for r in samples:
        c = churn_report.num(r["compr_bytes"]) or 0
        peak[churn_report.key(r)] = max(peak.get(churn_report.key(r), 0), c)
    for r in samples:
        t, h = churn_report.num(r["phase_t_s"]), churn_report.num(r["held_pages"])
        # A torn read: fewer bytes of pages than the bytes stored (the pool
        # changed between the sampler's reads) says nothing; left out.
        torn = (churn_report.num(r["overhead_ratio"]) or 0) < 0
        if r["phase"] in phases and t is not None and h is not None and not torn:
            k = (r["run"], r["phase"], int(t))
            ex = exits.get((r["run"], r["alloc"]))
            if r["phase"] == "exit" and ex:
                i = bisect.bisect_right(ex, t) - 1
                k = (r["run"], r["phase"], (i, int(t - ex[i]) if i >= 0 else int(t)))
                if i >= 0:
                    since.setdefault(r["alloc"], {})[k] = t - ex[i]
            held.setdefault(r["alloc"], {})[k] = h
            raw.setdefault(r["alloc"], {})[k] = churn_report.num(r["overhead_ratio"])
            if churn_report.stored(r, 0.01 * peak[churn_report.key(r)]):
                ratio.setdefault(r["alloc"], {})[k] = churn_report.num(r["overhead_ratio"])
                if r["phase"] == "exit":
                    curve.setdefault((r["run"], r["alloc"]), []).append(
                        (t, churn_report.num(r["overhead_ratio"])))
            else:
                ratio.setdefault(r["alloc"], {}).pop(k, None)
    pairs = {}
    if AF in held and ZS in held:
        for ph in phases + [None]:
            ks = [k for k in held[AF] if k in held[ZS] and (ph is None or k[1] == ph)]
            diff = [held[AF][k] - held[ZS][k] for k in ks]
            rk = [k for k in ks if k in ratio.get(AF, {}) and k in ratio.get(ZS, {})]
            # More memory for the same data: more pages at a higher ratio
            # (more pages at a lower ratio: more compressed bytes stored at
            # that second), every sample's ratio counting (ratio_worse()).
            loss = [held[AF][k] - held[ZS][k] for k in ks if held[AF][k] > held[ZS][k]
                    and ratio_worse(raw[AF][k], raw[ZS][k])]
            # Ratio pairs afmalloc loses at the first sample after an exit
            # (its frees then still coming in): the seconds since the exit
            # of both samples, afmalloc's then zsmalloc's.
            rexit = [(since[AF][k], since[ZS][k], ratio[AF][k],
                      ratio_at(curve.get((k[0], ZS), []), exits.get((k[0], ZS), []),
                               k[2][0], since[AF][k]))
                     for k in rk
                     if ratio[AF][k] > ratio[ZS][k] and isinstance(k[2], tuple) and k[2][1] == 0
                     and k in since.get(AF, {}) and k in since.get(ZS, {})]
            pairs[ph] = Pairs(
                rexit=rexit,
                n=len(ks), more=sum(x > 0 for x in diff), less=sum(x < 0 for x in diff),
                most_mib=max([x for x in diff if x > 0], default=0) * churn_report.PAGE / 2**20,
                rn=len(rk), rmore=sum(ratio[AF][k] > ratio[ZS][k] for k in rk),
                rless=sum(ratio[AF][k] < ratio[ZS][k] for k in rk),
                loss=len(loss), loss_pages=max(loss, default=0),
                zloss=sum(held[ZS][k] > held[AF][k] and ratio_worse(raw[ZS][k], raw[AF][k])
                          for k in ks))
    out = {"meta": report.load_meta(d), "text": text, "allocs": allocs, "runs": runs,
           "phases": phases, "phase": per, "rest": rest, "rest_at": rest_at, "lat": lat,
           "parts": parts, "pairs": pairs, "cpu": cpu}
    CHURN_CACHE[d] = out
    return out


def ratio_at(curve, exits, i, after):
    """An allocator's overhead ratio @after seconds after its exit number @i,
    interpolated linearly between its counted samples on either side
    (@curve: (seconds into the exit phase, ratio), @exits: the seconds into
    the phase of its exits); None where it has no sample on one side."""
    if i < 0 or i >= len(exits):
        return None
    t = exits[i] + after
    pts = sorted(curve)
    j = bisect.bisect_left(pts, (t,))
    if j == 0 or j == len(pts):
        return None
    (t0, r0), (t1, r1) = pts[j - 1], pts[j]
    return r0 + (r1 - r0) * (t - t0) / (t1 - t0) if t1 > t0 else r1


# Paired churn samples of one phase (None: all): pairs, afmalloc/zspage
# holding more / fewer pages, by at most most_mib; pairs with ratios (both
# samples counted by report.py), afmalloc's higher / lower; afmalloc holding
# more pages at a higher ratio (loss pairs, by at most loss_pages), and
# zsmalloc doing so (zloss).
# rexit: of the rmore pairs, those at the first sample after an exit, each
# as (afmalloc's seconds since the exit, zsmalloc's, afmalloc's ratio,
# zsmalloc's ratio as many seconds after the same exit as afmalloc's sample,
# interpolated between its samples, or None: ratio_at()).
Pairs = collections.namedtuple(
    "Pairs", "n more less most_mib rn rmore rless loss loss_pages zloss rexit",
    defaults=(0,) * 10 + ((),))


def ratio_worse(a, z):
    """Whether overhead ratio a is higher than z, None (nothing stored) the
    highest: a sample storing nothing is worse than one storing anything,
    and two storing nothing are compared by pages alone (worse: True)."""
    if a is None or z is None:
        return a is None
    return a > z


def cmed(xs):
    """Median of the known values, None if there is none."""
    xs = [x for x in xs if x is not None]
    return med(xs) if xs else None


def cpct(ratio):
    return "-" if ratio is None else pct(100 * ratio)


def frac(k, n):
    return f"{k} of {n} ({100 * k / n:.1f}%)" if n else "no pairs"


CHURN_HALF = 0.5      # issue 16: mean overhead per phase at most half of zsmalloc's
CHURN_REST = 0.02     # issue 16: within 60 s of rest, overhead at most 2%
# Issue 16, untar/remove on the full tree: no regression, at most 1% after
# the untar and 3% after every remove step (rm_all, which leaves a few per
# cent of the data, is not one: it was at 8% before the redesign).
UNTAR_TARGET, RM_TARGET = 1.0, 3.0


def rest_none(c):
    """Why runs lack an overhead at rest (report.py counts no sample under 1%
    of the run's peak compressed bytes)."""
    return ("no sample in the rest held 1% of the run's peak compressed bytes"
            + (": zswap's shrinker had written back nearly everything"
               if c["meta"].get("target") == "zswap" else ""))


def rest_parts(c):
    """Where afmalloc/zspage's overhead at rest sits, in the runs with a
    figure: its table pages and zspage tails (report.py's parts of the rest
    phase, in % of the compressed bytes), and how much the pool stored."""
    r, parts = c["rest"].get(AF, {}), c["parts"].get("rest", {})
    runs = [n for n, x in zip(r.get("run", []), r.get("60", [])) if x is not None]
    mib = [x for n, x in zip(r.get("run", []), r.get("mib", [])) if n in runs and x is not None]
    by = {n: (t, tl) for n, t, tl in zip(parts.get("run", []), parts.get("tables", []),
                                         parts.get("tails", []))}
    if not runs or any(n not in by or None in by[n] for n in runs):
        return ""
    tab, tails = [by[n][0] for n in runs], [by[n][1] for n in runs]
    return (f"; of it, in % of the compressed bytes, table pages (handles, descriptors, holes, "
            f"directories) {span(tab, pct)} and zspage tails {span(tails, pct)}"
            + (f", in a pool left storing {span(mib, lambda x: f'{x:.1f}')} MiB" if mib else "")
            + " (a table page stays while any of its entries lives; each shard has its own "
            "tables and open zspage)")


def rest_label(c):
    """How the overhead '60 s into the rest' was read (see churn())."""
    if not c["rest_at"]:
        return "at the end of the rest"
    at = span(c["rest_at"], lambda t: f"{t:.0f}")
    return f"at the end of the rest, its last sample {at} s in"


def lat_label(c, short=False):
    """The latency compared (see churn()): swap-in or fault p99."""
    if c["lat"] == CHURN_SWAPIN_COL:
        return "swap-in p99" if short else \
            ("swap-in p99 latency (faults during which the thread's major-fault count grew; "
             "the upper edge of its bucket in churn.c's histogram, eight buckets a power of "
             "two: a ratio one bucket off 1.00x is 1.07x to 1.13x)")
    return "fault p99" if short else "fault p99 latency (first touches of at least 2.048 us)"


def rexit_text(p):
    """Where the pairs with afmalloc's higher ratio lie when some are at the
    first sample after an exit: the exit's frees come in over a fraction of
    a second, and a sample taken later into them sees more of them freed
    before compaction has given their pages back."""
    if not p.rexit:
        return ""
    later = [(a, z) for a, z, _, _ in p.rexit if a > z]
    n = len(p.rexit)
    out = f" ({n} of them at the first sample after a process exit"
    if later:
        each = ("taken" if n == 1 else "each taken") if len(later) == n else \
            f"{len(later)} taken"
        out += (f", {each} later into the exit than the zsmalloc sample paired with it: "
                f"{span([a for a, _ in later], sec2)} s after it against "
                f"{span([z for _, z in later], sec2)} s")
    # The same moment after the exit: zsmalloc's ratio read off the line
    # between its samples on either side.
    at = [(ra, rz) for _, _, ra, rz in p.rexit if rz is not None]
    if at:
        lower = sum(ra < rz for ra, rz in at)
        out += (f"; against zsmalloc's ratio as long after the same exit, interpolated "
                f"between its samples either side, afmalloc's is lower in {lower} of "
                f"{len(at)}")
    return out + ")"


def sec2(x):
    return f"{x:.2f}"


def churn_targets(c):
    """Issue 16's targets for afmalloc/zspage on a churn run, each a dict:
    short (a few words), what (the target), met (True, False, None: not
    measured), measured (the figures)."""
    out = []
    p = c["pairs"].get(None, Pairs())
    n, more, most, rn, rmore, loss = p.n, p.more, p.most_mib, p.rn, p.rmore, p.loss
    worst = max((ph for ph in c["phases"] if ph in c["pairs"]),
                key=lambda ph: c["pairs"][ph].loss_pages, default=None)
    out.append({"short": "never more memory than zsmalloc",
                "what": "at every one-second sample no more memory than zsmalloc (paired "
                        "samples: neither a higher overhead ratio nor more pages held, unless "
                        "at a lower ratio, which means more compressed bytes stored at that "
                        "second; for pages held the ratios of all samples, however little "
                        "they store, nothing stored the highest)",
                "met": None if not n else loss == 0 and rmore == 0,
                "measured": f"a higher overhead ratio in {frac(rmore, rn)} of the pairs"
                + rexit_text(p) + f"; more pages held at a higher ratio in {frac(loss, n)}"
                + (f", by up to {p.loss_pages:.0f} pages (in the {worst} "
                   "phase)" if loss else "")
                + f"; more pages held at all in {frac(more, n)}"
                + (f" (by up to {most:.1f} MiB)" if more else "")})
    over, alone = [], []
    for ph in c["phases"]:
        a = cmed(c["phase"].get((AF, ph), {}).get("overhead mean", []))
        z = cmed(c["phase"].get((ZS, ph), {}).get("overhead mean", []))
        if a is not None and z:
            over.append((ph, a / z))
        elif a is not None:
            # afmalloc has a figure, zsmalloc none (no sample it stored
            # 1% of its peak in): said, not silently left out.
            alone.append(ph)
    uncompared = (f"; not compared in {', '.join(alone)} (zsmalloc: no sample holding "
                  "1% of its run's peak compressed bytes)" if alone else "")
    # Rounded up, so that a ratio just over the half does not read 0.50x.
    missed = [f"{ph} {math.ceil(r * 100) / 100:.2f}x" for ph, r in over if r > CHURN_HALF]
    out.append({"short": "mean overhead per phase at most half of zsmalloc's",
                "what": "mean overhead in every phase at most half of zsmalloc's (medians "
                        "of runs)",
                "met": None if not over else not missed,
                "measured": ("no phase with figures of both" if not over else
                             ("over half of zsmalloc's in " + ", ".join(missed)) if missed else
                             f"at most {max(r for _, r in over):.2f}x zsmalloc's")
                + uncompared})
    r60 = c["rest"].get(AF, {}).get("60", [])
    known = [x for x in r60 if x is not None]
    out.append({"short": f"at most {pct(100 * CHURN_REST)} within 60 s of rest",
                "what": f"overhead at most {pct(100 * CHURN_REST)} within 60 s of rest, in "
                        f"every run ({rest_label(c)})",
                # Over the target in a run that has a figure: missed, even
                # if another run has none.
                "met": False if known and max(known) > CHURN_REST else
                None if not known or len(known) < len(r60) else True,
                "measured": (f"{span([100 * x for x in known], pct)} in {len(known)} of "
                             f"{len(r60)} runs"
                             + (f"; in the others {rest_none(c)}" if len(known) < len(r60)
                                else "")
                             + (rest_parts(c) if max(known) > CHURN_REST else ""))
                if known else "no sample in the rest"})
    tput = per_run_ratios(c, "churn", "pages/s")
    lat = per_run_ratios(c, "churn", c["lat"])
    out.append({"short": f"churn throughput at least 1.0x, {lat_label(c, True)} no worse",
                "what": "in the churn phase, pages touched per second at least 1.0x "
                        f"zsmalloc's and {lat_label(c)} no worse (medians of the per-run "
                        "ratios)",
                "met": None if not (tput and lat) else med(tput) >= 1 and med(lat) <= 1,
                "measured": (f"throughput {xr(med(tput))}, {lat_label(c, True)} {xr(med(lat))}"
                             + (f"; throughput {xr(med(st))} with each run's rate scaled by "
                                "the workload's own user-space CPU time per page then (the "
                                "host's speed; not the target's measure)"
                                if (st := scaled_tput(c)) else ""))
                if tput and lat else "no run of both"})
    return out


def untar_targets_line(d):
    """Issue 16's untar/remove target on the full-tree run, one line."""
    n = SUMMARY["full"]
    f = d["full"][AF]
    head = f"**Issue 16's untar/remove target, full tree, {link(n)}:** "
    if before_index(n):
        return head + (f"not measured: that run's kernel ({run_source(n)[0]}) predates the "
                       f"redesign (the hole index, {HOLE_INDEX}).")
    rm = [f[s] for s in RM_STEPS]
    t = [(f["untar"] <= UNTAR_TARGET,
          f"at most {pct(UNTAR_TARGET)} after the untar ({pct(f['untar'])})"),
         (max(rm) <= RM_TARGET,
          f"at most {pct(RM_TARGET)} after every remove step ({span(rm, pct)})")]
    parts = [w + " " + "; ".join(x for ok, x in t if ok is v)
             for w, v in (("**missed:**", False), ("met:", True)) if any(ok is v for ok, _ in t)]
    return head + "; ".join(parts) + "."


def speed_targets_line(d):
    """Issue 16's speed targets on the summary's microbenchmark (TCG) and fio
    runs, one line: allocate + write + free at least 1.0x zsmalloc with 1
    and with 2 threads (the guest's vCPUs), afmalloc's scaling from 1 to 2
    threads at least zsmalloc's (per run: its 2-thread ratio over its
    1-thread ratio), fio IOPS at least 1.0x in every shape; medians of the
    per-run ratios, as the summary's rows; with the shared working set's
    run (speed_shared) the 2-thread ratio and the scaling there too."""
    one, two = d["speed"].get("alloc-map 1"), d["speed"].get("alloc-map 2")
    if not one or not two:
        return ""

    def x(r):
        v = med(r)
        return (f"{v:.4f}".rstrip("0") + "x") if v < 1 and xr(v) == "1.00x" else xr(v)

    def runs(r):
        return {"slower": f"slower in all {len(r)} runs", "faster": f"faster in all {len(r)} runs",
                "mixed": f"runs disagree, {len(r)} runs"}[runs_verdict(r)]

    scale = [b / a for a, b in zip(one, two)]
    t = [(med(one) >= 1, "allocate + write + free at least 1.0x zsmalloc with 1 thread "
          f"({x(one)}, {runs(one)})"),
         (med(two) >= 1, "allocate + write + free at least 1.0x zsmalloc with 2 threads, the "
          f"guest's vCPUs ({x(two)}, {runs(two)})"),
         (med(scale) >= 1, "scaling from 1 to 2 threads at least zsmalloc's (afmalloc's over "
          f"zsmalloc's {x(scale)}, {runs(scale)})")]
    sh = d.get("speed_shared", {})
    one_s, two_s = sh.get("alloc-map 1"), sh.get("alloc-map 2")
    if one_s and two_s:
        scale_s = [b / a for a, b in zip(one_s, two_s)]
        where = link(SUMMARY["speed_shared"])
        t += [(med(two_s) >= 1, "allocate + write + free at least 1.0x zsmalloc with 2 threads "
               f"that free each other's objects as often as their own ({where}: {x(two_s)}, "
               f"{runs(two_s)})"),
              (med(scale_s) >= 1, "scaling from 1 to 2 such threads at least zsmalloc's "
               f"({where}: afmalloc's over zsmalloc's {x(scale_s)}, {runs(scale_s)})")]
    arm = d.get("speed_arm64", {})
    one_a, two_a = arm.get("alloc-map 1"), arm.get("alloc-map 2")
    if one_a and two_a:
        where = link(SUMMARY["speed_arm64"])
        t += [(med(one_a) >= 1, "allocate + write + free at least 1.0x zsmalloc with 1 thread "
               f"on an emulated arm64 kernel with 16 KiB pages ({where}: {x(one_a)}, "
               f"{runs(one_a)})"),
              (med(two_a) >= 1, "with 2 threads there, its vCPUs "
               f"({where}: {x(two_a)}, {runs(two_a)})")]
    fio = d.get("fio_iops", {})
    if fio:
        low = [f"{s} {x(r)}" for s, r in fio.items() if med(r) < 1]
        t.append((not low, "fio IOPS at least 1.0x in every shape ("
                  + (", ".join(low) if low else
                     f"at least {xr(min(med(r) for r in fio.values()))}") + ")"))
    parts = [w + " " + "; ".join(x for ok, x in t if ok is v)
             for w, v in (("**missed:**", False), ("met:", True)) if any(ok is v for ok, _ in t)]
    return (f"**Issue 16's speed targets, {link(SUMMARY['speed'])}, {link(SUMMARY['fio'])}:** "
            + "; ".join(parts) + ".")


def targets_line(n, c):
    """One line of issue 16's targets met and missed on a churn run."""
    t = churn_targets(c)
    parts = [f"{w} " + "; ".join(f"{x['short']} ({x['measured']})"
                                 for x in t if x["met"] is v)
             for w, v in (("**missed:**", False), ("met:", True), ("not measured:", None))
             if any(x["met"] is v for x in t)]
    m = c["meta"]
    guest = ("" if m.get("arch", "x86_64") == "x86_64" else
             f", emulated {m['arch']} with {int(m.get('page_size', 4096)) // 1024} KiB pages")
    return (f"**Issue 16's swap-churn targets, {m.get('target', '?')} "
            f"({m.get('compressor', '?')}){guest}, {link(n)}:** " + "; ".join(parts) + ".")


ZSWAP_WHAT = ("zswap runs in front of a zram device (zsmalloc, lz4) as the only swap, with its "
              "shrinker on: pages held are zswap's pool alone (what the allocator under test "
              "holds), not that device, to which the shrinker writes back")


def churn_wb(c):
    """Whether a churn run is on zswap with report.py's written-back column."""
    return c["meta"].get("target") == "zswap" and any(
        CHURN_WB_COL in v for v in c["phase"].values())


def churn_wb_text(c):
    """'; ...': how much of what zswap took it wrote back, and the most its
    pool held, per allocator (sums and maxima over runs and phases)."""
    out = []
    for a in (AF, ZS):
        took, back, most = churn_wb_sums(c, (a,))
        if took:
            out.append(f"{a} {100 * back / took:.0f}% of the {took:.0f} pages zswap took"
                       + (f", its pool at most {most:.1f} MiB" if most is not None else ""))
    return ("; written back over the runs: " + ", ".join(out)) if out else ""


def churn_wb_sums(c, allocs):
    """(pages zswap took, pages it wrote back, most MiB its pool held) over
    the runs and phases of allocs (report.py's per-run figures)."""
    vs = [v for (a, _), v in c["phase"].items() if a in allocs]
    took = sum(x or 0 for v in vs for x in v["swap-outs"])
    back = sum(x or 0 for v in vs for x in v.get(CHURN_WB_COL, []))
    most = max((x for v in vs for x in v.get("held max MiB", []) if x is not None),
               default=None)
    return took, back, most


def churn_section(name):
    """bench/results/README.md's section of a churn run."""
    c = churn(name)
    m = c["meta"]
    nr = len(c["runs"])
    src = m.get("source", "?")
    wb = churn_wb(c)
    out = [f"Reproduce: `{m.get('command', 'bench/churn/run.sh')}`", "",
           f"Swap churn on {m.get('target', '?')}, {m.get('compressor', '?')}: "
           f"{', '.join(c['allocs'])}; {nr} run(s) in one boot, the allocator order "
           f"reversed on every other run (first run {m.get('order', '?')})"
           + (f", after a warm-up per allocator (its fill and {m['warmup_s']} s of "
              "churn, not reported: warmup/)" if m.get("warmup_s") else " (no warm-up)")
           + f". Kernel {m.get('kernel', '?')} built from {src}"
           + (" (uncommitted changes in the checkout)" if src.endswith("-dirty") else "")
           + (f" (the tree of {KERNEL_SOURCE[name]})" if not git().full(src)
              and name in KERNEL_SOURCE else "")
           + before_index(name).replace(f"kernel {run_source(name)[0]}, ", "")
           + f", {m.get('accelerator', '?')}"
           + (f" (QEMU {m['emulator']})" if m.get("emulator") else "")
           + f", guest {m.get('guest_memory', '?')} / "
           f"{m.get('guest_cpus', '?')} CPUs (`{m.get('boot_args', '')}`), cgroup "
           f"{m.get('memory_limit', 'memory.max').split()[0]} "
           f"{m.get('memory_max_percent', '?')}% of the working set; workload "
           f"`{m.get('workload', '?')}`; host {m.get('host_cpus', '?')} CPUs, shared, 1-min "
           f"load {m.get('host_load1_start', '?')} at the start, {m.get('host_load1_end', '?')} "
           f"at the end; {m.get('date', '?')}."
           + (f" Note: {m['note']}." if m.get("note") else "")
           + (f" {ZSWAP_WHAT}{churn_wb_text(c)}." if wb else ""), "",
           f"### Medians of the {nr} runs", "",
           "Per phase, the median over runs of bench/churn/report.py's per-run figures "
           "(below): overhead = (pages held x the page size, 4096 on x86, - compressed bytes) / compressed bytes, "
           "pages held counting every page of the allocator, metadata included "
           "(bench/churn/sample.py), mean and max over the phase's one-second samples that "
           "hold at least 1% of the run's peak compressed bytes; pages/s: pages the workload "
           "touched per second; swap-outs/s and swap-ins/s: "
           + ("zram device writes and reads" if m.get("target") == "zram" else
              "the cgroup's zswpout and zswpin") + " per second of the phase"
           + ("; written back/s: the cgroup's zswpwb (pages zswap's shrinker moved to the swap "
              "device behind it) per second of the phase" if wb else "") + "; fault p99: "
           "the workload's first touches of at least 2.048 us (swap-ins, swap-cache hits, "
           "first touches); swap-in p99: those of them during which the thread's major-fault "
           "count grew (histogram bucket edges).", "",
           "| phase | allocator | s | overhead mean | overhead max | pages/s | swap-outs/s "
           "| swap-ins/s |" + (" written back/s |" if wb else "")
           + " fault p99 us | swap-in p99 us |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if wb else "")]
    for ph in c["phases"]:
        for a in c["allocs"]:
            v = c["phase"].get((a, ph))
            if not v:
                continue
            out.append("| " + " | ".join([ph, a, fmt1(cmed(v["s"]), "%.1f"),
                                          cpct(cmed(v["overhead mean"])), cpct(cmed(v["max"])),
                                          fmt1(cmed(v["pages/s"]), "%.0f"),
                                          fmt1(cmed(v["swap-outs/s"]), "%.0f"),
                                          fmt1(cmed(v["swap-ins/s"]), "%.0f")]
                                         + ([fmt1(cmed(v[CHURN_WB_COL + "/s"]), "%.0f")]
                                            if wb else [])
                                         + [fmt1(cmed(v["fault p99 us"]), "%.0f"),
                                          fmt1(cmed(v.get(CHURN_SWAPIN_COL, [])), "%.0f")])
                       + " |")
    out += ["", "Overhead at rest (the workload idle, its data swapped out), median of the runs: "
            "after 5 s, the first sample at or after 5 s into the rest phase; at the end, its "
            "last sample"
            + (f" ({span(c['rest_at'], lambda t: f'{t:.1f}')} s in)" if c["rest_at"] else "")
            + " (report.py's).", "",
            "| allocator | after 5 s | at the end |", "|---|---:|---:|"]
    for a in c["allocs"]:
        r = c["rest"].get(a, {"5": [], "60": []})
        out.append(f"| {a} | {cpct(cmed(r['5']))} | {cpct(cmed(r['60']))} |")
    if c["parts"]:
        out += ["", f"### Where {AF}'s overhead sits", "",
                "Per phase, the median over runs of report.py's per-run means (below) of each "
                "part of the zspage store's overhead, in % of the compressed bytes: holes (free "
                "bytes inside zspages, left by freed objects), tails (free bytes at the ends of "
                "zspages), headers (5 bytes per object), tables (handle and descriptor tables), "
                "dead (emptied zspages not yet freed), rest (the overhead less these: live bytes "
                "against the compressed bytes counted by the swap side, and samples read at "
                "slightly different moments); on lists: recorded holes' bytes in % of the hole "
                "bytes (where allocation looks); into holes: objects placed in recorded holes "
                "during the phase. Medians of parts need not add up to the median overhead.", "",
                "| phase | " + " | ".join(CHURN_PARTS_COLS[3:]) + " |",
                "|---|" + "---:|" * len(CHURN_PARTS_COLS[3:])]
        for ph in c["phases"]:
            v = c["parts"].get(ph)
            if not v:
                continue
            out.append(f"| {ph} | " + " | ".join(
                fmt1(cmed(v[col]), "%.0f") if col == "into holes" else
                cpct(None if cmed(v[col]) is None else cmed(v[col]) / 100)
                for col in CHURN_PARTS_COLS[3:]) + " |")
    if c["pairs"]:
        out += ["", f"### {AF} against {ZS}, sample by sample", "",
                "Each allocator runs alone in the boot, so samples are not aligned in time: "
                f"each one-second sample of {AF} is paired with {ZS}'s of the same run, phase "
                "and whole second into the phase (phases last about as long for both; the "
                "fill, the exits' refills and the verification end when their work is done); "
                "in the exit phase, where a process exits when the refill after the one before "
                "is done, at each allocator's own pace, with the sample of the same exit (the "
                "n-th of the run) and whole second since it. Samples whose pages held are fewer "
                "bytes than the compressed bytes they store are left out (a torn read: the pool "
                "changed between the sampler's reads). "
                "Held: every page the allocator holds, metadata included. The two need not "
                "store the same data at the same second (the fill and the refills run at "
                "their own speed), so the column \"ratio higher\" compares the overhead ratios of the "
                "pairs where both samples count in report.py's figures (at least 1% of the "
                "run's peak compressed bytes). More pages at a lower overhead ratio means "
                "more compressed bytes stored at that second; the last column counts the "
                f"pairs where {AF} held more memory for the same data: more pages at a higher "
                "ratio, the ratios of all samples compared here, however little they store "
                "(issue 16's target).", "",
                f"| phase | pairs | {AF} held more | by at most | {ZS} held more "
                f"| pairs with overhead ratios | {AF}'s ratio higher "
                f"| {AF} held more at a higher ratio |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for ph in c["phases"] + [None]:
            if ph not in c["pairs"]:
                continue
            p = c["pairs"][ph]
            out.append(f"| {ph or '**all**'} | {p.n} | {frac(p.more, p.n)} | "
                       f"{f'{p.most_mib:.1f} MiB' if p.more else '-'} | {frac(p.less, p.n)} "
                       f"| {p.rn} | {frac(p.rmore, p.rn)} | {frac(p.loss, p.n)} |")
        out += ["", f"Issue 16's targets for {AF} under swap churn:", ""]
        for t in churn_targets(c):
            verdict = {True: "met", False: "**missed**", None: "not measured"}[t["met"]]
            out.append(f"- {t['what']}: {verdict} ({t['measured']}).")
    out += ["", "Per run, as bench/churn/report.py gives it:", "",
            demote(demote(c["text"].rstrip()))]
    if os.path.isfile(os.path.join(rdir(name), "overhead.png")):
        out += ["", f"![overhead ratio over time]({name}/overhead.png)"]
    return out + [""]


def fmt1(v, spec):
    return "-" if v is None else spec % v


# --- the README's summary against zsmalloc ----------------------------------

def pct(x):
    return f"{x:.1f}%" if abs(x) >= 10 else f"{x:.2f}%"


def rel(x):
    """A relative difference in %, signed."""
    return f"{x:+.0f}%" if abs(x) >= 10 else f"{x:+.1f}%"


def xr(x):
    return f"{x:.2f}x"


def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def runs_verdict(ratios):
    """'slower'/'faster'/'mixed' for per-run ratios of afmalloc to zsmalloc."""
    if all(r < 1 for r in ratios):
        return "slower"
    if all(r > 1 for r in ratios):
        return "faster"
    return "mixed"


def arm64_verdicts(u):
    """(density, huge pages) of an arm64_untar(): "afmalloc", "zsmalloc" or
    "neither" for density (less overhead after the untar and after the worst
    remove step), None for huge pages when the run has none."""
    dens = ("afmalloc" if all(u[AF][k] < u[ZS][k] for k in ("untar", "worst")) else
            "zsmalloc" if all(u[AF][k] > u[ZS][k] for k in ("untar", "worst")) else "neither")
    if u[ZS]["huge"] is None or u[AF]["huge"] is None:
        return dens, None
    gaps = u.get("huge_gaps") or [u[AF]["huge"] - u[ZS]["huge"]]
    if u.get("huge_spread") and max(abs(g) for g in gaps) <= u["huge_spread"]:
        return dens, "neither"
    huge = ("afmalloc" if min(gaps) > 0 else "zsmalloc" if max(gaps) < 0 else "neither")
    return dens, huge


def arm64_better(u):
    """The summary's "better" cell of an arm64 untar row: where zsmalloc is
    better first (so that the row counts as a loss)."""
    dens, huge = arm64_verdicts(u)
    cells = [("density", dens)] + ([("huge pages", huge)] if huge else [])
    lost = [w for w, v in cells if v == "zsmalloc"]
    won = [w for w, v in cells if v == "afmalloc"]
    same = [w for w, v in cells if v == "neither"]
    parts = ([f"**zsmalloc** for {' and '.join(lost)}"] if lost else []) + \
        ([f"afmalloc for {' and '.join(won)}"] if won else []) + \
        ([f"neither for {' and '.join(same)}"] if same else [])
    return "; ".join(parts)


def arm64_loss(u, tree, kib):
    """What afmalloc loses in an arm64 untar row, for "Where zsmalloc is better"."""
    dens, huge = arm64_verdicts(u)
    lost = ([f"overhead ({pct(u[AF]['untar'])} / {pct(u[AF]['worst'])})"]
            if dens == "zsmalloc" else []) + \
        ([f"huge pages ({u[AF]['huge']:g} against {u[ZS]['huge']:g})"]
         if huge == "zsmalloc" else [])
    return f"{' and '.join(lost)} on the {tree} tree on emulated arm64 with {kib} KiB pages"


def arm64_untar(name):
    """An arm64 untar/remove run's figures, None when the folder has neither
    steps.csv (one boot) nor summary.csv (boots): per allocator the overhead
    (%) after the untar and after the worst remove step and the huge pages
    obtained after rm_include (medians over the boots), with "boots" and
    "kib" (the page size); over boots also "huge_gaps" (afmalloc's huge
    pages less zsmalloc's at the same position in the boot, medians) and
    "huge_spread" (the most two boots of one allocator in one position
    differ by)."""
    d = rdir(name)
    out = {"kib": int(run_meta(name).get("page_size", 4096)) // 1024}
    if os.path.isfile(os.path.join(d, "summary.csv")):
        sc = summary_csv(name)
        for a in (ZS, AF):
            out[a] = {m: med([v for _, _, v in sc[(a, k)]])
                      for m, k in (("untar", "overhead_pct untar"),
                                   ("worst", "overhead_pct worst rm step"),
                                   ("huge", "hugetlb after"))}
        out["boots"] = len({b for vals in sc.values() for b, _, _ in vals})
        hv = {a: sc[(a, "hugetlb after")] for a in (ZS, AF)}
        pos = sorted({p for vals in hv.values() for _, p, _ in vals})
        out["huge_gaps"] = [med(by_position(hv[AF], p)) - med(by_position(hv[ZS], p))
                            for p in pos if by_position(hv[AF], p) and by_position(hv[ZS], p)]
        out["huge_spread"] = max([max(x) - min(x) for x in (by_position(hv[a], p)
                                                          for a in (ZS, AF) for p in pos)
                                  if len(x) > 1], default=0)
        return out
    if not os.path.isfile(os.path.join(d, "steps.csv")):
        return None
    rows = steps(name)
    huge = {r["alloc"]: int(r["obtained"]) for r in report.read_csv(d, "hugetlb.csv")
            if r["after_step"] == "rm_include"}
    for a in (ZS, AF):
        out[a] = {"untar": ovh(rows, a, "untar"),
                  "worst": worst_rm(rows, a), "huge": huge.get(a)}
    out["boots"] = 1
    return out


def summary_data():
    """Every number the summary table and plot show, from the SUMMARY runs."""
    d = {}
    # Density on the full tree, one boot.
    rows = steps(SUMMARY["full"])
    d["full"] = {a: {s: ovh(rows, a, s) for s in ("untar",) + RM_STEPS + ("rm_all",)}
                 for a in (ZS, AF)}
    untar = [int(r["compr_bytes"]) for r in rows if r["step"] == "untar"]
    left = [int(r["compr_bytes"]) for r in rows if r["step"] == "rm_all"]
    d["full_left"] = [100 * b / a for a, b in zip(untar, left)]
    # The same over boots in both orders: medians.
    sc = summary_csv(SUMMARY["full_boots"])
    d["full_boots"] = {a: {m: med([v for _, _, v in sc[(a, "overhead_pct " + m)]])
                           for m in ("untar", "worst rm step")} for a in (ZS, AF)}
    d["full_boots_n"] = len({b for b, _, _ in sc[(ZS, "overhead_pct untar")]})
    # Repeated churn.
    rows = steps(SUMMARY["rounds"])
    d["rounds"] = {}
    for a in (ZS, AF):
        d["rounds"][a] = {
            "untar": [ovh(rows, a, "untar", r["round"]) for r in rows
                      if r["alloc"] == a and r["step"] == "untar"],
            "worst": max(100 * float(r["overhead_ratio"]) for r in rows
                         if r["alloc"] == a and r["step"] in RM_STEPS)}
    d["rounds_n"] = len({r["round"] for r in rows})
    # zstd, every allocator.
    rows = steps(SUMMARY["zstd"])
    d["zstd"] = {a: {"untar": ovh(rows, a, "untar"),
                     "worst": worst_rm(rows, a)}
                 for a in dict.fromkeys(r["alloc"] for r in rows)}
    # fio: memory held and IOPS. Runs that record held_bytes (every page,
    # slab caches included, bench/fio/guest.sh) are compared on it; the
    # peak is mm_stat's mem_used_max plus the slab pages at the end (zram
    # keeps no peak of them; they follow the object count, which a full
    # device keeps). Older runs: mm_stat alone (zsmalloc's slabs left out).
    need(SUMMARY["fio"], "mm_stat.csv", "fio.csv")
    mm = {(r["alloc"], r["when"]): r for r in report.read_csv(rdir(SUMMARY["fio"]), "mm_stat.csv")}
    held = all(mm[(a, w)].get("held_bytes") for a in (ZS, AF) for w in ("fill", "end"))
    col = "held_bytes" if held else "mem_used_total"
    d["fio_held"] = held
    d["fio_mem"] = {a: {"fill": int(mm[(a, "fill")][col]),
                        "end": int(mm[(a, "end")][col]),
                        "peak": int(mm[(a, "end")]["mem_used_max"]) + (
                            int(mm[(a, "end")]["slab_pages"])
                            * int(run_meta(SUMMARY["fio"]).get("page_size", 4096)) if held else 0),
                        "compr": int(mm[(a, "end")]["compr_data_size"]),
                        "compr_fill": int(mm[(a, "fill")]["compr_data_size"])}
                    for a in (ZS, AF)}
    fr = report.fio_ratios(rdir(SUMMARY["fio"]))
    d["fio_iops"] = {s: fr[(AF, s)] for (a, s) in fr if a == AF}
    # Microbenchmark.
    need(SUMMARY["speed"], "speed.csv")
    sr = report.speed_ratios(rdir(SUMMARY["speed"]))
    d["speed"] = {f"{op} {t}": sr[(AF, op, t)] for (a, op, t) in sr
                  if a == AF and op in ("alloc-map", "read-map")}
    d["speed_ws"] = {"speed": speed_ws(SUMMARY["speed"])}
    for key in ("speed_large", "speed_seq", "speed_shared"):
        if not os.path.isfile(os.path.join(rdir(SUMMARY[key]), "speed.csv")):
            print(f"readme_results: note: no {rdir(SUMMARY[key])}/speed.csv: "
                  "the summary has no row for it", file=sys.stderr)
            continue
        sr = report.speed_ratios(rdir(SUMMARY[key]))
        d[key] = {f"{op} {t}": sr[(AF, op, t)] for (a, op, t) in sr
                  if a == AF and op in ("alloc-map", "read-map")}
        d["speed_ws"][key] = speed_ws(SUMMARY[key])
    need(SUMMARY["speed_native"], "speed.csv")
    d["speed_native_ws"] = {}
    for key in ("speed_native", "speed_native_large", "speed_native_seq"):
        name = SUMMARY[key]
        if not os.path.isfile(os.path.join(rdir(name), "speed.csv")):
            print(f"readme_results: note: no {rdir(name)}/speed.csv: the summary has no row for it",
                  file=sys.stderr)
            continue
        sr = report.speed_ratios(rdir(name))
        d[key] = {op: sr[(AF, op, t)] for (a, op, t) in sr
                  if a == AF and t == 1 and op in ("alloc-map", "read-map")}
        d["speed_native_ws"][key] = speed_ws(name)
    for key in ("speed_arm64", "speed_arm64_large"):
        name = SUMMARY[key]
        if not os.path.isfile(os.path.join(rdir(name), "held.csv")):
            print(f"readme_results: note: no {rdir(name)}/held.csv: the summary has no row for it",
                  file=sys.stderr)
            continue
        sr = report.speed_ratios(rdir(name))
        d[key] = {f"{op} {t}": sr[(AF, op, t)] for (a, op, t) in sr
                  if a == AF and op in ("alloc-map", "read-map")}
        d[key + "_held"] = speed_held(name)
        d["speed_ws"][key] = speed_ws(name)
    # Untar/remove on emulated arm64.
    d["arm64"] = {}
    for name in SUMMARY["arm64"]:
        u = arm64_untar(name)
        if u is None:
            print(f"readme_results: note: no {rdir(name)}/steps.csv or summary.csv: "
                  "the summary has no row for it", file=sys.stderr)
            continue
        d["arm64"][name] = u
    # Huge pages and Highalloc-Stress by position in the boot.
    d["huge"] = {}
    for name in SUMMARY["huge"]:
        sc = summary_csv(name)
        npos = max(p for vals in sc.values() for _, p, _ in vals)
        d["huge"][name] = {
            m: {a: [med(by_position(sc[(a, m)], p)) for p in range(1, npos + 1)]
                for a in (ZS, AF)}
            for m in ("hugetlb after", "highalloc_pct")}
        d["huge"][name]["highalloc all"] = {
            a: med([v for _, _, v in sc[(a, "highalloc_pct")]]) for a in (ZS, AF)}
        d["huge"][name]["boots"] = len({b for vals in sc.values() for b, _, _ in vals})
        d["huge"][name]["spread"] = {
            m: [max(xs) - min(xs) for xs in (by_position(sc[(a, m)], p)
                                             for a in (ZS, AF) for p in range(1, npos + 1))
                if len(xs) > 1]
            for m in ("hugetlb after", "highalloc_pct")}
    # A small pool written from many CPUs: overhead, and afmalloc's shards.
    name = SUMMARY["smallpool"]
    sp = report.smallpool_medians(rdir(name))
    if sp:
        spa = report.smallpool_aux(rdir(name))
        rounds = report.read_csv(rdir(name), "smallpool.csv")
        d["smallpool"] = {"cpus": rounds[0]["cpus"],
                          "rounds": len({r["round"] for r in rounds})}
        for mode in ("seq", "par"):
            for key, (alloc, grow) in (("zs", (ZS, "Y")), ("af", (AF, "Y")),
                                       ("all", (AF, "N"))):
                _, _, over, act = sp[(mode, alloc, grow)]
                d["smallpool"][(mode, key)] = (over, act, spa[(mode, alloc, grow)])
    else:
        print(f"readme_results: note: no {rdir(name)}/smallpool.csv: the summary has no row "
              "for it", file=sys.stderr)
    # zswap on the project's kernel: density and time.
    need(SUMMARY["zswap_time"], "zswap-time.csv")
    zt = report.read_csv(rdir(SUMMARY["zswap_time"]), "zswap-time.csv")
    zb = {(r["run"], r["alloc"].split("/")[0]): r for r in zt}
    runs = sorted({r["run"] for r in zt}, key=int)
    d["zswap_time"] = {
        "ratio": {a: med([float(zb[(n, a)]["ratio"]) for n in runs])
                  for a in ("zsmalloc", "afmalloc")},
        "kb": {a: med([float(zb[(n, a)]["zswap_kb"]) for n in runs])
               for a in ("zsmalloc", "afmalloc")},
        "wall": [float(zb[(n, "afmalloc")]["wall_s"]) / float(zb[(n, "zsmalloc")]["wall_s"])
                 for n in runs],
        "verify": [float(zb[(n, "afmalloc")]["verify_s"]) / float(zb[(n, "zsmalloc")]["verify_s"])
                   for n in runs],
        "walls": [float(r["wall_s"]) for r in zt]}
    # zswap on Debian's kernel.
    need(SUMMARY["zswap_stock"], "zswap.log")
    with open(os.path.join(rdir(SUMMARY["zswap_stock"]), "zswap.log")) as f:
        m = re.search(r"Zswapped/Zswap afmalloc ([\d.]+), zsmalloc ([\d.]+); Zswapped/\(pages held "
                      r"incl\. metadata slabs\) afmalloc ([\d.]+), zsmalloc ([\d.]+)", f.read())
    if not m:
        fail(f"bench/results/{SUMMARY['zswap_stock']}/zswap.log has no effective ratio line")
    d["zswap_stock"] = [float(x) for x in m.groups()]
    # Swap churn: the finished runs.
    d["churn"] = {}
    for name in SUMMARY["churn"]:
        if not os.path.isdir(rdir(name)):
            print(f"readme_results: note: no {rdir(name)}: the summary has no row for it",
                  file=sys.stderr)
        elif churn_done(name):
            d["churn"][name] = churn(name)
    return d


def link(name):
    return f"[{name}](bench/results/README.md#{name})"


def before(name):
    """' (before the hole cache)' or ' (kernel C, before the redesign)' (issue
    16's, from the hole index on) for a run whose kernel predates it."""
    if hole_cache(name) is False:
        return " (before the hole cache)"
    return " (kernel %s, before the redesign)" % run_source(name)[0] if before_index(name) else ""


def speed_rows(add, word, sp, n, where, label="In-kernel microbenchmark", on=""):
    """The rows of TCG speed run @n (ratios @sp, working set in @where)."""
    for op, what in (("alloc-map", "allocate + write + free"), ("read-map", "map + read")):
        cases = [(t, sp[f"{op} {t}"]) for t in (1, 2) if f"{op} {t}" in sp]
        verdicts = [(t, runs_verdict(r), len(r)) for t, r in cases]
        if len({v for _, v, _ in verdicts}) == 1:
            v, k = verdicts[0][1], verdicts[0][2]
            better = word[v] + (f" (all {k} runs of each)" if v != "mixed" else " (runs disagree)")
        else:
            better = "; ".join(
                word[v] + f" with {t} thread{'s' if t > 1 else ''}"
                + (f" (all {k} runs)" if v != "mixed" else " (runs disagree)")
                for t, v, k in verdicts)
        slow = [f"{xr(med(r))} with {t} thread{'s' if t > 1 else ''}" for t, r in cases
                if runs_verdict(r) == "slower"]
        add(f"{label}{before(n)} ({where}): {what}, ops/s with 1 / 2 threads",
            "1.00x", " / ".join(xr(med(r)) for _, r in cases), None, link(n),
            f"{what} in the microbenchmark with {where.split(',')[0]}"
            + (" in order" if "in order" in where else "")
            + (" shared by the threads" if "shared by the threads" in where else "")
            + on + f" ({', '.join(slow)})",
            better=better)


def summary_rows(d):
    """(measure, zsmalloc, afmalloc/zspage, better, runs, loss) rows; loss:
    what afmalloc loses, in a few words, for the rows where zsmalloc is better."""
    rows = []

    def add(measure, zs, af, af_better, runs, loss, better=None):
        if better is None:
            better = af_better if isinstance(af_better, str) else \
                ("afmalloc" if af_better else "**zsmalloc**")
        rows.append((measure, zs, af, better, runs,
                     loss if better.startswith("**zsmalloc**") else None))

    f = d["full"]
    n = SUMMARY["full"]
    add(f"Full kernel tree, lz4{before(n)}: overhead after the untar",
        pct(f[ZS]["untar"]), pct(f[AF]["untar"]), None, link(n),
        f"overhead after the untar ({pct(f[AF]['untar'])})",
        better=f"afmalloc ({f[ZS]['untar'] / f[AF]['untar']:.1f}x less)"
        if f[AF]["untar"] < f[ZS]["untar"] else "**zsmalloc**")
    zs_rm, af_rm = [f[ZS][s] for s in RM_STEPS], [f[AF][s] for s in RM_STEPS]
    add("... after each of the five remove steps", span(zs_rm, pct), span(af_rm, pct),
        all(a < z for a, z in zip(af_rm, zs_rm)), link(n),
        f"overhead after the remove steps ({span(af_rm, pct)})")
    add(f"... after removing the rest ({span(d['full_left'], lambda x: f'{x:.1f}%')} "
        "of the data left)", pct(f[ZS]["rm_all"]), pct(f[AF]["rm_all"]),
        f[AF]["rm_all"] < f[ZS]["rm_all"], link(n),
        f"overhead with little data left ({pct(f[AF]['rm_all'])})")
    n = SUMMARY["full_boots"]
    fb = d["full_boots"]
    add(f"Full tree, median of {d['full_boots_n']} boots in both orders{before(n)}: "
        "untar / worst remove step",
        f"{pct(fb[ZS]['untar'])} / {pct(fb[ZS]['worst rm step'])}",
        f"{pct(fb[AF]['untar'])} / {pct(fb[AF]['worst rm step'])}",
        all(fb[AF][k] < fb[ZS][k] for k in fb[AF]), link(n),
        "full-tree overhead over two boots")
    n = SUMMARY["rounds"]
    rd = d["rounds"]
    add(f"Quick tree, {d['rounds_n']} rounds of untar and removes{before(n)}: "
        "every untar / worst remove step",
        f"{span(rd[ZS]['untar'], pct)} / {pct(rd[ZS]['worst'])}",
        f"{span(rd[AF]['untar'], pct)} / {pct(rd[AF]['worst'])}",
        max(rd[AF]["untar"]) < min(rd[ZS]["untar"]) and rd[AF]["worst"] < rd[ZS]["worst"],
        link(n), "overhead over repeated rounds")
    n = SUMMARY["zstd"]
    z = d["zstd"]
    zc = z.get("zsmalloc+compact")
    add(f"Quick tree, zstd{before(n)}: untar / worst remove step",
        f"{pct(z[ZS]['untar'])} / {pct(z[ZS]['worst'])}"
        + (f" (zram `compact` after every step: {pct(zc['untar'])} / {pct(zc['worst'])})"
           if zc else ""),
        f"{pct(z[AF]['untar'])} / {pct(z[AF]['worst'])}",
        all(z[AF][k] < min(v[k] for a, v in z.items() if a != AF) for k in ("untar", "worst")),
        link(n), "overhead with zstd")
    for n, u in d["arm64"].items():
        kib = u["kib"]
        hp = report.huge_page({"page_size": kib * 1024})[1]
        tree = run_meta(n).get("dataset", "?").split()[0]
        what = (f"one boot, {run_meta(n).get('allocators', '?').split(',')[0]} first"
                if u["boots"] == 1 else f"median of {u['boots']} boots in both orders")
        has_huge = all(u[a]["huge"] is not None for a in (ZS, AF))
        add(f"{tree.capitalize()} tree on an emulated arm64 guest with {kib} KiB pages, "
            f"{what}{before(n)}: untar / worst remove step"
            + (f" / {hp} huge pages obtained after the remove steps" if has_huge else ""),
            f"{pct(u[ZS]['untar'])} / {pct(u[ZS]['worst'])}"
            + (f" / {u[ZS]['huge']:g}" if has_huge else ""),
            f"{pct(u[AF]['untar'])} / {pct(u[AF]['worst'])}"
            + (f" / {u[AF]['huge']:g}" if has_huge else ""),
            None, link(n), arm64_loss(u, tree, kib), better=arm64_better(u))
    for n, c in d["churn"].items():
        churn_rows(n, c, add)
    n = SUMMARY["fio"]
    fm = d["fio_mem"]
    mib = 1048576.0
    pts = ("fill", "end", "peak")
    # Jobs of random contents (mixwrite) leave each device with different
    # data: the end is then compared per compressed byte; the peak, whose
    # compressed size mm_stat does not keep, as memory held.
    base = {"fill": "compr_fill", "end": "compr", "peak": None}
    per = {a: {k: fm[a][k] / (fm[a][base[k]] if base[k] else 1) for k in pts} for a in (ZS, AF)}
    deltas = [100 * (per[AF][k] / per[ZS][k] - 1) for k in pts]
    same = abs(fm[AF]["compr"] / fm[ZS]["compr"] - 1) < 0.005
    what = (f"memory held for {fm[ZS]['compr'] / mib:.1f} MiB compressed" if same else
            f"memory held (at the end for different data: {fm[ZS]['compr'] / mib:.1f} MiB "
            f"compressed on zsmalloc's device, {fm[AF]['compr'] / mib:.1f} MiB on afmalloc's, "
            "so the end is compared per compressed byte)")
    # Every point where afmalloc holds more is a loss, the fill included.
    names = {"fill": "after the fill",
             "end": "at the end" + ("" if same else " per compressed byte"), "peak": "at peak"}
    lost = [k for k, x in zip(pts, deltas) if x > 0]
    won = [k for k in pts if k not in lost]
    spread = " (afmalloc " + " / ".join(rel(x) for x in deltas) + ")"
    better = ("afmalloc" if not lost else
              "**zsmalloc**" + (" " + " and ".join(names[k] for k in lost) if won else "")
              + (", afmalloc " + " and ".join(names[k] for k in won) if won else "")) + spread
    add(f"fio overwriting a full {run_meta(n).get('device_size', '?')} zram device{before(n)}: "
        f"{what}, after the fill / at the end / peak ("
        + ("every page, slab caches included" if d["fio_held"] else "mm_stat")
        + (f"; the end read after every device sat idle {run_meta(n)['settle_s']} s"
           if run_meta(n).get("settle_s") else
           "; the end read right after the last run's last job, the device that ran it "
           "given no idle time")
        + ")",
        " / ".join(f"{fm[ZS][k] / mib:.1f}" for k in pts) + " MiB",
        " / ".join(f"{fm[AF][k] / mib:.1f}" for k in pts) + " MiB",
        None, link(n),
        "memory held under fio on a full zram device ("
        + ", ".join(f"{rel(deltas[pts.index(k)])} {names[k]}" for k in lost) + ")",
        better=better)
    word = {"slower": "**zsmalloc**", "faster": "afmalloc", "mixed": "neither"}
    for key in ("speed", "speed_large", "speed_seq", "speed_shared"):
        if key in d["speed_ws"]:
            speed_rows(add, word, d[key], SUMMARY[key], ws_words(d["speed_ws"][key]))
    for key in ("speed_arm64", "speed_arm64_large"):
        if key not in d:
            continue
        n = SUMMARY[key]
        kib = int(run_meta(n).get("page_size", 16384)) // 1024
        label = f"The same on an emulated arm64 kernel with {kib} KiB pages"
        ws = d["speed_ws"][key]
        where = (f"{ws[0]} objects a thread, {ws[1]:.0f} MiB, sizes of the quick dataset "
                 f"in {kib} KiB pages")
        speed_rows(add, word, d[key], n, where, label,
                   f" on emulated arm64 with {kib} KiB pages")
        hd = d[key + "_held"]
        ts = [t for t in hd if not isinstance(t, tuple)]
        if not ts:
            continue

        def thr(t):
            return f"{t} thread{'s' if t > 1 else ''}"
        # Less memory per byte stored in every run: afmalloc better.
        mword = {"faster": "**zsmalloc**", "slower": "afmalloc", "mixed": "neither"}
        verdicts = [(t, runs_verdict(hd[("x", t)]), len(hd[("x", t)])) for t in ts]
        if len({v for _, v, _ in verdicts}) == 1:
            v, k = verdicts[0][1], verdicts[0][2]
            better = mword[v] + (f" (all {k} runs of each)" if v != "mixed"
                                 else " (runs disagree)")
        else:
            better = "; ".join(mword[v] + f" with {thr(t)}"
                               + (f" (all {k} runs)" if v != "mixed" else " (runs disagree)")
                               for t, v, k in verdicts)
        add(f"{label}{before(n)} ({where}): memory held after the writes (allocate + write "
            f"+ free), overhead with {' / '.join(str(t) for t in ts)} threads (every page; "
            "zsmalloc's zspage descriptors not counted, zsmalloc not compacted)",
            " / ".join(f"{med(hd[t][ZS]):.1f}%" for t in ts),
            " / ".join(f"{med(hd[t][AF]):.1f}%" for t in ts), None, link(n),
            f"memory held in the microbenchmark on arm64 with {kib} KiB pages ("
            + ", ".join(f"{xr(med(hd[('x', t)]))} per byte stored with {thr(t)}"
                        for t in ts) + ")",
            better=better)
    for key in ("speed_native", "speed_native_large", "speed_native_seq"):
        if key not in d["speed_native_ws"]:
            continue
        n = SUMMARY[key]
        where = ws_words(d["speed_native_ws"][key])
        ws = d["speed_native_ws"][key][0]
        for op, what in (("alloc-map", "allocate + write + free"), ("read-map", "map + read")):
            r = d[key].get(op)
            if r is None:   # not measured in this run (afm_speed.ops)
                continue
            v = runs_verdict(r)
            add(f"The same natively on the host's CPU (UML, 1 thread; {where}): {what}, ops/s",
                "1.00x", xr(med(r)), None, link(n),
                f"{what} natively with {ws} objects a thread"
                + (" in order" if "in order" in where else "") + f" ({xr(med(r))})",
                better=word[v] + (f" (all {len(r)} runs)" if v != "mixed" else " (runs disagree)"))
    n = SUMMARY["fio"]
    fi = d["fio_iops"]
    slower = [s for s, r in fi.items() if runs_verdict(r) == "slower"]
    faster = [s for s, r in fi.items() if runs_verdict(r) == "faster"]
    parts = ([f"**zsmalloc** for {', '.join(slower)} (all runs)"] if slower else []) + \
        ([f"afmalloc for {', '.join(faster)} (all runs)"] if faster else [])
    if len(slower) + len(faster) < len(fi):
        parts.append("neither for the rest (runs disagree)")
    add(f"fio on zram, IOPS{before(n)}: " + " / ".join(fi), "1.00x",
        " / ".join(xr(med(r)) for r in fi.values()), None, link(n),
        "fio IOPS (" + ", ".join(f"{s} {xr(med(fi[s]))}" for s in slower) + ")",
        better="; ".join(parts))
    hz, ha, spreads, hs, gaps, labels = [], [], [], [], [], []
    for name in SUMMARY["huge"]:
        h = d["huge"][name]["hugetlb after"]
        labels.append(f"{run_meta(name).get('dataset', '?').split()[0]} tree, "
                      f"{d['huge'][name]['boots']} boots{before(name)}")
        hz.append(" / ".join(f"{x:g}" for x in h[ZS]))
        ha.append(" / ".join(f"{x:g}" for x in h[AF]))
        gaps += [a - z for a, z in zip(h[AF], h[ZS])]
        spreads += d["huge"][name]["spread"]["hugetlb after"]
        hs.append(name)
    within = spreads and max(abs(g) for g in gaps) <= max(spreads)
    add("2 MiB huge pages obtained with the data resident, running first / second "
        "in the boot (medians); one line each: " + "; ".join(labels),
        "<br>".join(hz), "<br>".join(ha), None, ", ".join(link(x) for x in hs),
        f"huge pages ({min(gaps):+g} to {max(gaps):+g})",
        better=(f"neither: gaps of {min(gaps):+g} to {max(gaps):+g} pages, boots in the same "
                f"position differ by up to {max(spreads):g}") if within else
        ("afmalloc" if min(gaps) > 0 else "**zsmalloc**" if max(gaps) < 0 else "neither"))
    hz, ha, gaps, spreads = [], [], [], []
    for name in SUMMARY["huge"]:
        h = d["huge"][name]["highalloc all"]
        hz.append(f"{h[ZS]:.1f}%")
        ha.append(f"{h[AF]:.1f}%")
        gaps.append(h[AF] - h[ZS])
        spreads += d["huge"][name]["spread"]["highalloc_pct"]
    within = spreads and max(abs(g) for g in gaps) <= max(spreads)
    add("Highalloc-Stress: order-9 allocations that succeed, median of the same runs",
        " / ".join(hz), " / ".join(ha), None, ", ".join(link(x) for x in hs),
        "Highalloc-Stress successes",
        better=(f"neither: gaps of {min(gaps):+.1f} to {max(gaps):+.1f} points, boots in the "
                f"same position differ by up to {max(spreads):.1f}") if within else
        ("afmalloc" if min(gaps) > 0 else "**zsmalloc**" if max(gaps) < 0 else "neither"))
    if "smallpool" in d:
        n = SUMMARY["smallpool"]
        sp = d["smallpool"]
        kib = run_meta(n).get("kib_per_cpu", "?")

        def shards(lst, aux=None):
            n = str(lst[0]) if len(lst) == 1 else f"{lst[0]}-{lst[-1]}"
            n += " shard" if lst == [1] else " shards"
            return n + (f"; {aux / 1024:,.0f} KiB kmalloc'd" if aux is not None else "")

        def kmalloc(m):
            a = sp[(m, "all")][2]
            return f" ({a / 1024:,.0f} KiB kmalloc'd)" if a is not None else ""
        has_aux = any(v[2] is not None for k, v in sp.items() if isinstance(k, tuple))
        zs_o = [sp[(m, "zs")][0] for m in ("seq", "par")]
        af_o = [sp[(m, "af")][0] for m in ("seq", "par")]
        al_o = [sp[(m, "all")][0] for m in ("seq", "par")]
        add(f"A small zram device{before(n)}, {kib} KiB of real data written from each of "
            f"{sp['cpus']} vCPUs one after the other / all at once, median of "
            f"{sp['rounds']} rounds: overhead (every page, metadata slabs included); "
            "afmalloc: the shards it allocated in, and with every shard active from the "
            "start (`zspage_shards_grow=N`, as before the active shards)"
            + ("; afmalloc's kmalloc'd structures (debugfs aux_bytes) are not in the "
               "overhead, as zsmalloc's kmalloc'd pool and class structures are not "
               "(nothing shows them)" if has_aux else ""),
            " / ".join(pct(x) for x in zs_o),
            " / ".join(f"{pct(x)} ({shards(sp[(m, 'af')][1], sp[(m, 'af')][2])})"
                       for x, m in zip(af_o, ("seq", "par")))
            + "<br>every shard: " + " / ".join(pct(x) + kmalloc(m)
                                                for x, m in zip(al_o, ("seq", "par"))),
            all(a < z for a, z in zip(af_o, zs_o)), link(n),
            f"a small pool written from {sp['cpus']} CPUs ({' / '.join(pct(x) for x in af_o)})")
    n = SUMMARY["zswap_time"]
    zt = d["zswap_time"]
    nr = len(zt["wall"])
    add(f"zswap on the project's kernel{before(n)}: Zswapped/Zswap, median of {nr} runs",
        f"{zt['ratio']['zsmalloc']:.2f}", f"{zt['ratio']['afmalloc']:.2f}", None, link(n),
        "zswap's compression ratio",
        better=(f"afmalloc ({100 * (1 - zt['kb']['afmalloc'] / zt['kb']['zsmalloc']):.0f}% less "
                "memory)") if zt["ratio"]["afmalloc"] > zt["ratio"]["zsmalloc"] else "**zsmalloc**")
    fast_w = sum(r < 1 for r in zt["wall"])
    slow_v = sum(r > 1 for r in zt["verify"])
    wv = runs_verdict([1 / r for r in zt["wall"]])
    add("... wall time of the same runs (write, then verify: mostly swap-ins)",
        "1.00x", f"{xr(med(zt['wall']))} zsmalloc's time: shorter in {fast_w} of {nr} "
        + (f"runs, but the verify phase longer in {slow_v} of {nr}" if slow_v else
           "runs, the verify phase too"), None, link(n),
        f"zswap wall time ({xr(med(zt['wall']))} zsmalloc's)",
        better={"slower": "**zsmalloc**", "faster": "afmalloc"}.get(
            wv, f"neither: single runs took {span(zt['walls'], lambda x: f'{x:.0f} s')}"))
    n = SUMMARY["zswap_stock"]
    af_r, zs_r, af_h, zs_h = d["zswap_stock"]
    add(f"zswap on Debian's kernel with `afmalloc.ko`{before(n)}: Zswapped/Zswap, one run",
        f"{zs_r:.2f} ({zs_h:.2f} counting its metadata slabs)", f"{af_r:.2f}",
        af_h > zs_h and af_r > zs_r, link(n), "zswap on Debian's kernel")
    return rows


def scaled_tput(c):
    """Per run, afmalloc's churn-phase pages/s over zsmalloc's, each rate
    first scaled by the workload's own user-space CPU time per page in that
    run (the same code whatever the allocator: how fast the shared, emulated
    host ran it then); [] without the guest's CPU table."""
    a = c["phase"].get((AF, "churn"), {})
    z = c["phase"].get((ZS, "churn"), {})
    ua, uz = c.get("cpu", {}).get((AF, "churn"), {}), c.get("cpu", {}).get((ZS, "churn"), {})
    zr = dict(zip(z.get("run", []), z.get("pages/s", [])))
    return [v * ua[r] / (zr[r] * uz[r]) for r, v in zip(a.get("run", []), a.get("pages/s", []))
            if v and zr.get(r) and ua.get(r) and uz.get(r)]


def per_run_ratios(c, phase, col, alloc=AF, over=ZS):
    """@alloc's value of a report column over @over's (afmalloc/zspage's
    over zsmalloc's), per run."""
    a = c["phase"].get((alloc, phase), {})
    z = c["phase"].get((over, phase), {})
    zr = dict(zip(z.get("run", []), z.get(col, [])))
    return [v / zr[r] for r, v in zip(a.get("run", []), a.get(col, []))
            if v is not None and zr.get(r)]


def churn_ok(n, c, note=False):
    """Whether a churn run has both afmalloc/zspage and zsmalloc in its churn phase."""
    ok = bool(c["phase"].get((AF, "churn")) and c["phase"].get((ZS, "churn")))
    if not ok and note:
        print(f"readme_results: note: {rdir(n)} lacks {AF} or {ZS}: no summary row",
              file=sys.stderr)
    return ok


def churn_rows(n, c, add):
    """The summary rows of a swap-churn run, each stating issue 16's target."""
    m = c["meta"]
    if not churn_ok(n, c, note=True):
        return
    targets = churn_targets(c)
    verdict = {True: "met", False: "**missed**", None: "not measured"}

    def target(k, what):
        return f"issue 16's target ({what}): {verdict[targets[k]['met']]}"

    nr = len(c["runs"])
    where = f"{m.get('target', '?')} ({m.get('compressor', '?')})"
    pool = guest = ""
    if m.get("arch", "x86_64") != "x86_64":
        guest = (f" on an emulated {m['arch']} guest with "
                 f"{int(m.get('page_size', 4096)) // 1024} KiB pages")
    if churn_wb(c):
        took, back, most = churn_wb_sums(c, (AF, ZS))
        pool = (" in front of a zram device" + guest
                + ", counting zswap's pool alone ("
                + (f"at most {most:.1f} MiB; " if most is not None else "")
                + (f"its shrinker wrote back {100 * back / took:.0f}% of the pages zswap took "
                   if took else "") + "to that device, not counted)")
    else:
        where += guest
    # Phases where both allocators have a median (zswap's rest can have no
    # sample holding 1% of the peak: everything written back).
    phases = [ph for ph in c["phases"]
              if c["phase"].get((AF, ph)) and c["phase"].get((ZS, ph))
              and all(cmed(c["phase"][(a, ph)]["overhead mean"]) is not None for a in (AF, ZS))]
    mean = {a: [cmed(c["phase"][(a, ph)]["overhead mean"]) for ph in phases] for a in (ZS, AF)}
    lower = sum(x < z for x, z in zip(mean[AF], mean[ZS]))
    better = ("afmalloc" if lower == len(phases) else "**zsmalloc**" if lower == 0 else
              f"neither: afmalloc lower in {lower} of {len(phases)} phases")
    add(f"Swap churn on {where}{pool}, {nr} run{'s' if nr != 1 else ''} in one boot{before(n)}: mean "
        "overhead per phase "
        f"({' / '.join(phases)}), median of runs",
        " / ".join(cpct(x) for x in mean[ZS]), " / ".join(cpct(x) for x in mean[AF]), None,
        link(n), f"mean overhead under swap churn on {where} ("
        + ", ".join(f"{ph} {cpct(x)}" for ph, x, z in zip(phases, mean[AF], mean[ZS]) if x > z)
        + ")",
        better=f"{better}; " + target(1, "at most half of zsmalloc's in every phase")
        + (f", {targets[1]['measured']}" if targets[1]["met"] is False else ""))
    p = c["pairs"][None]
    pn, rn, rmore, rless, loss, zloss = p.n, p.rn, p.rmore, p.rless, p.loss, p.zloss
    held_b = "afmalloc" if loss < zloss else "**zsmalloc**" if loss > zloss else "neither"
    ratio_b = "afmalloc" if rmore < rless else "**zsmalloc**" if rmore > rless else "neither"
    better = held_b if held_b == ratio_b else \
        f"neither: {held_b.strip('*')} by pages held, {ratio_b.strip('*')} by overhead ratio"
    add("... one-second samples, paired by run, phase and second into the phase (exit "
        "phase: by exit and second since it): "
        "more pages held than the other allocator at a higher overhead ratio (more pages at "
        "a lower ratio: more data stored at that second) / a higher overhead ratio",
        f"{100 * zloss / pn:.1f}% of {pn} / {100 * rless / rn:.1f}% of {rn}"
        if pn and rn else "-",
        f"{100 * loss / pn:.1f}% / {100 * rmore / rn:.1f}%" if pn and rn else "-",
        None, link(n),
        f"memory held under swap churn on {where} (more than zsmalloc at a higher overhead "
        f"ratio in {100 * loss / pn:.1f}% of the paired samples, a higher ratio in "
        f"{100 * rmore / rn:.1f}%)" if pn and rn else "",
        better=f"{better}; " + target(0, "never more than zsmalloc"))
    rest = {a: [x for x in c["rest"].get(a, {}).get("60", []) if x is not None]
            for a in (ZS, AF)}
    if rest[ZS] and rest[AF]:
        a60, z60 = med(rest[AF]), med(rest[ZS])
        nrest = {a: len(c["rest"].get(a, {}).get("60", [])) for a in (ZS, AF)}
        few = [f"{a} {len(rest[a])} of {nrest[a]}" for a in (ZS, AF) if len(rest[a]) < nrest[a]]
        add(f"... overhead {rest_label(c)}, workload idle, median of runs (range)"
            + (f"; runs with a figure: {', '.join(few)} (in the others {rest_none(c)})"
               if few else ""),
            f"{pct(100 * z60)} ({span([100 * x for x in rest[ZS]], pct)})",
            f"{pct(100 * a60)} ({span([100 * x for x in rest[AF]], pct)})", None, link(n),
            f"overhead at rest after swap churn on {where} ({pct(100 * a60)})",
            better=("afmalloc" if a60 < z60 else "**zsmalloc**" if a60 > z60 else "neither")
            + "; " + target(2, f"at most {pct(100 * CHURN_REST)} in every run"))
    tput = per_run_ratios(c, "churn", "pages/s")
    lat = per_run_ratios(c, "churn", c["lat"])
    if tput and lat:
        def verdict_of(ratios):
            return "equal" if all(r == 1 for r in ratios) else runs_verdict(ratios)

        def why(v, k):
            return {"mixed": " (runs disagree)", "equal": " (the same in every run)"}.get(
                v, f" (all {k} runs)" if k > 1 else " (one run)")
        tv, lv = verdict_of(tput), verdict_of([1 / x for x in lat])
        word = {"slower": "**zsmalloc**", "faster": "afmalloc", "mixed": "neither",
                "equal": "neither"}
        parts = [word[tv] + " for throughput" + why(tv, len(tput)),
                 word[lv] + " for latency" + why(lv, len(lat))]
        parts.sort(key=lambda p: not p.startswith("**zsmalloc**"))
        slow = ([f"churn throughput {xr(med(tput))}"] if tv == "slower" else []) + \
            ([f"{lat_label(c, True)} {xr(med(lat))}"] if lv == "slower" else [])
        add(f"... churn phase: pages the workload touched per second / {lat_label(c)}, "
            "afmalloc's over zsmalloc's, median of the per-run ratios", "1.00x / 1.00x",
            f"{xr(med(tput))} / {xr(med(lat))}", None,
            link(n), f"swap churn on {where}: " + ", ".join(slow),
            better="; ".join(parts) + "; " + target(3, "throughput at least 1.0x, p99 no worse"))


def least_everywhere():
    """(runs, boots, [where afmalloc/zspage did not hold the least]) over
    every untar/remove run of bench/results."""
    runs = boots = 0
    beaten = []
    for name in folders():
        # Boots with afmalloc/zspage beside another allocator.
        bs = [b for b in boot_steps(name) if any(r["alloc"] == AF for r in b)
              and len({r["alloc"] for r in b}) > 1]
        runs += bool(bs)
        boots += len(bs)
        for k, rows in enumerate(bs, 1):
            held = {}
            for r in rows:
                held.setdefault((r["round"], r["step"]), {})[r["alloc"]] = int(r["held_bytes"])
            for (rnd, step), v in held.items():
                if AF in v and len(v) > 1 and v[AF] > min(v.values()):
                    beaten.append(f"{name} boot {k} round {rnd} {step}")
    return runs, boots, beaten


def zs_compaction_line(d):
    """One line: how many pages zsmalloc's own compaction gave back in the
    summary's zram churn runs and its fio run (zram's pages_compacted; zswap
    does not show it), beside afmalloc/zspage's automatic compaction."""
    churn = []
    for n, c in d["churn"].items():
        if not churn_ok(n, c) or c["meta"].get("target", n.split("-")[1]) != "zram":
            continue
        last = {}
        churn_report.set_page(run_meta(n))
        for r in churn_report.load_samples(os.path.join(rdir(n), "samples.csv")):
            v = churn_report.num(r.get("zs_pages_compacted"))
            if r["alloc"] == ZS and v is not None:
                last[r["run"]] = max(last.get(r["run"], 0), v)
        if last:
            churn.append((n, int(sum(last.values())), len(last)))
    fio = None
    path = os.path.join(rdir(SUMMARY["fio"]), "mm_stat.csv")
    if os.path.isfile(path):
        with open(path, newline="") as f:
            fio = max((int(r["pages_compacted"]) for r in csv.DictReader(f)
                       if r["alloc"] == ZS and r["pages_compacted"].isdigit()), default=None)
    if not churn and fio is None:
        return None
    parts = [f"{k} pages in {n}'s {runs} run{'s' if runs != 1 else ''}" for n, k, runs in churn]
    if fio is not None:
        parts.append(f"{fio} pages in {SUMMARY['fio']}")
    return ("**zsmalloc's compaction in these runs:** it gave back " + ", ".join(parts)
            + " (zram's pages_compacted; zswap does not show it). Nothing asked it to run: "
            "the benchmarks never write zram's compact, and zsmalloc's shrinker runs under "
            "global memory pressure, not the cgroup limits these runs work under; "
            "afmalloc/zspage compacts without being asked. A deployment that writes compact "
            "periodically would see zsmalloc's overhead drop after each write, as the zstd "
            "untar row shows with compact written after every step.")


def summary_block(d):
    rows = summary_rows(d)
    out = ["afmalloc/zspage (the default store) against zsmalloc, each pair measured in one "
           "boot on the same data under QEMU TCG on a shared 2-core machine (only ratios "
           "and memory mean something). Overhead: memory held, metadata slabs included, "
           "beyond the compressed bytes, in % of them; x ratios: afmalloc's rate over "
           "zsmalloc's, median of the per-run ratios.", "",
           "| measure | zsmalloc | afmalloc/zspage | better | run |",
           "|---|---|---|---|---|"]
    out += ["| " + " | ".join(cell(c) for c in r[:5]) + " |" for r in rows]
    losses = [r[5] for r in rows if r[5]]
    runs, boots, beaten = least_everywhere()
    out += ["", (f"In all {runs} untar/remove runs in bench/results ({boots} boots), "
                 "afmalloc/zspage held the least memory of the allocators measured after "
                 "every step." if not beaten else
                 f"In the {runs} untar/remove runs in bench/results ({boots} boots), "
                 "afmalloc/zspage did not hold the least memory after: "
                 + ", ".join(beaten) + ".")]
    out += ["", "**Where zsmalloc is better:** " + ("; ".join(losses) if losses else
                                                    "nowhere in these runs") + "."]
    zc = zs_compaction_line(d)
    out += ["", zc] if zc else []
    out += ["", untar_targets_line(d)]
    speed = speed_targets_line(d)
    out += ["", speed] if speed else []
    out += [x for n, c in d["churn"].items() if churn_ok(n, c) for x in ("", targets_line(n, c))]
    out += ["",
            "![afmalloc/zspage against zsmalloc: density, memory under fio, speed]"
            "(bench/results/summary.png)", ""]
    return "\n".join(out) + "\n"


MICRO_OPS = {"alloc-map": "alloc+write+free", "read-map": "map+read"}


def summary_plot_data(d=None):
    """The numbers bench/plot_summary.py draws, rounded (their digest goes into the PNG)."""
    d = d or summary_data()
    mib = 1048576.0
    return {
        "density": {"run": SUMMARY["full"], "steps": ["untar"] + list(RM_STEPS) + ["rm_all"],
                    ZS: [round(d["full"][ZS][s], 3) for s in ("untar",) + RM_STEPS + ("rm_all",)],
                    AF: [round(d["full"][AF][s], 3) for s in ("untar",) + RM_STEPS + ("rm_all",)]},
        "fio_mem": {"run": SUMMARY["fio"], "points": ["after fill", "at end", "peak"],
                    "compr_mib": round(d["fio_mem"][ZS]["compr"] / mib, 1),
                    ZS: [round(d["fio_mem"][ZS][k] / mib, 1) for k in ("fill", "end", "peak")],
                    AF: [round(d["fio_mem"][AF][k] / mib, 1) for k in ("fill", "end", "peak")]},
        "ratios": {"runs": [SUMMARY["speed"], SUMMARY["fio"]],
                   "labels": [f"micro {MICRO_OPS.get(k.split()[0], k.split()[0])}, "
                              f"{k.split()[1]} thr" for k in d["speed"]]
                   + [f"fio {s}" for s in d["fio_iops"]],
                   "values": [round(med(r), 3) for r in d["speed"].values()]
                   + [round(med(r), 3) for r in d["fio_iops"].values()],
                   "verdicts": [runs_verdict(r) for r in d["speed"].values()]
                   + [runs_verdict(r) for r in d["fio_iops"].values()]},
    }


def plot_digest(data):
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def png_text(path):
    """The tEXt/iTXt entries of a PNG file, {} if it cannot be read."""
    out = {}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return out
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return out
    i = 8
    while i + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        body = data[i + 8:i + 8 + n]
        if kind == b"tEXt" and b"\0" in body:
            k, v = body.split(b"\0", 1)
            out[k.decode("latin-1")] = v.decode("latin-1")
        elif kind == b"iTXt" and b"\0" in body:
            k, rest = body.split(b"\0", 1)
            if rest[:1] == b"\0":
                out[k.decode("latin-1")] = rest[2:].split(b"\0", 2)[-1].decode("utf-8", "replace")
        i += 12 + n
    return out


# --- make demo / make check times ------------------------------------------------

def read_timings(path):
    """(started, rev, machine, [(step, seconds, status)]) of a scripts/timed.sh record."""
    return read_timings_wall(path)[:4]


def read_timings_wall(path):
    """read_timings() and the wall-clock seconds from the start to the
    '# finished' line (timed.sh --report), None in records without one."""
    rows, started, rev, machine, t0, t1 = [], "?", "?", "?", None, None
    with open(path) as f:
        for ln in f:
            p = ln.rstrip("\n").split("\t")
            if p[0] == "# started":
                started, rev, t0 = p[2], p[3], int(p[1])
            elif p[0] == "# finished":
                t1 = int(p[1])
            elif p[0] == "# machine":
                machine = ", ".join(p[1:])
            elif len(p) == 3 and not p[0].startswith("#"):
                rows.append((p[0], int(p[1]), int(p[2])))
    if not rows or any(rc for _, _, rc in rows):
        fail(f"{path} is empty or records a failed step")
    return started, rev, machine, rows, (t1 - t0 if t0 is not None and t1 is not None else None)


def timings_total(rows, wall):
    """Seconds a timed.sh record took: its wall clock where it has one, else
    (records from before steps could overlap) the sum of its steps."""
    return wall if wall is not None else sum(s for _, s, _ in rows)


def timings_file(folder):
    """The scripts/timed.sh record of a results folder (check.tsv or demo.tsv), or None."""
    for n in ("check.tsv", "demo.tsv"):
        if os.path.isfile(os.path.join(rdir(folder), n)):
            return os.path.join(rdir(folder), n)
    return None


def timings_note(tsv):
    """The '# note' line of a timed.sh record (conditions of the run), or ''."""
    with open(tsv) as f:
        for ln in f:
            p = ln.rstrip("\n").split("\t")
            if p[0] == "# note" and len(p) > 1:
                return p[1]
    return ""


def minutes(sec):
    return f"{sec / 60:.0f} min" if sec >= 600 else f"{sec / 60:.1f} min"


def commands_block():
    out = ["Measured on the project's machine (QEMU TCG), each the wall-clock time "
           "`scripts/timed.sh` recorded from the first step to the end (records "
           "made before make check ran its KUnit step beside the others: the sum of "
           "the steps); cold: a fresh machine with empty caches "
           "(kernel source, datasets and every build included; package downloads "
           "only where the run's note does not say otherwise), "
           "warm: caches already filled:", ""]
    for cmd in ("demo", "check"):
        parts = []
        for kind, folder in (("cold", f"make-{cmd}-cold"), ("warm", f"make-{cmd}")):
            tsv = timings_file(folder)
            if not tsv:
                parts.append(f"{kind}: not yet measured")
                continue
            started, rev, machine, rows, wall = read_timings_wall(tsv)
            total = timings_total(rows, wall)
            note = timings_note(tsv)
            parts.append(f"{kind}: {minutes(total)} ({total} s; {started[:10]}, commit {rev}, "
                         f"{machine}; [{folder}](bench/results/README.md#{folder}))"
                         + (f" [{note}]" if note else ""))
        # Earlier cold runs kept beside the latest (make-check-cold-<commit>):
        # each named while they are few; then their range, the slowest and
        # the most recent (every one is in bench/results/README.md).
        earlier = []
        for folder in sorted(n for n in os.listdir(RESULTS)
                             if n.startswith(f"make-{cmd}-cold-") and timings_file(n)):
            started, rev, _, rows, wall = read_timings_wall(timings_file(folder))
            earlier.append((timings_total(rows, wall), started, rev, folder))

        def one(run):
            total, started, rev, folder = run
            return (f"{minutes(total)} ({total} s; {started[:10]}, commit {rev}; "
                    f"[{folder}](bench/results/README.md#{folder}))")
        if len(earlier) <= 3:
            parts += [f"an earlier cold run: {one(r)}" for r in earlier]
        else:
            secs = sorted(r[0] for r in earlier)
            slowest = max(earlier, key=lambda r: r[0])
            latest = max(earlier, key=lambda r: (r[1], r[3]))
            parts.append(f"{len(earlier)} earlier cold runs, {minutes(secs[0])} to "
                         f"{minutes(secs[-1])} (median {minutes(statistics.median(secs))}): "
                         f"the slowest {one(slowest)}"
                         + (f", the most recent {one(latest)}" if latest is not slowest else ""))
        out.append(f"- `make {cmd}`: " + "; ".join(parts) + ".")
    return "\n".join(out) + "\n"


def benchmark_block():
    untar = {}
    for name in sorted(os.listdir(RESULTS)):
        ds = run_meta(name).get("dataset", "").split(" ")[0]
        for rows in boot_steps(name):
            untar.setdefault(ds, []).extend(float(r["seconds"]) for r in rows
                                            if r["step"] == "untar")
    rounds = steps(SUMMARY["rounds"])
    nr = len({r["round"] for r in rounds})
    spent = sum(float(r["seconds"]) for r in rounds)
    parts = [f"the {ds} tree {span(v, lambda s: f'{s / 60:.1f}')} min ({len(v)} untars)"
             for ds, v in sorted(untar.items()) if ds and v]
    return ("Under TCG here one untar took, per allocator, " + ", ".join(parts)
            + f", depending on what else shared the two cores (the `step s` column of the "
            f"untar rows in [bench/results](bench/results/README.md)); the {nr} rounds of "
            f"[{SUMMARY['rounds']}](bench/results/README.md#{SUMMARY['rounds']}) spent "
            f"{minutes(spent)} in their steps.\n")


def fio_worst(per, alloc, shape):
    """@alloc's largest overhead (a fraction) in a one-second sample of
    report.fio_samples() @per while @shape ran, or None."""
    return max((x["held"] / x["compr"] - 1 for x in per.get(alloc, [])
                if x["shape"] == shape and x["compr"]), default=None)


def fio_end_rel(mm, alloc):
    """@alloc's memory held at the end per compressed byte over zsmalloc's,
    in % (mm_stat.csv rows @mm by (alloc, when)), or None."""
    e, z = mm.get((alloc, "end"), {}), mm.get((ZS, "end"), {})
    if not (e.get("held_bytes") and z.get("held_bytes")):
        return None
    return 100 * (int(e["held_bytes"]) / int(e["compr_data_size"])
                  / (int(z["held_bytes"]) / int(z["compr_data_size"])) - 1)


def fio_mm(d):
    """mm_stat.csv rows of fio run folder @d by (alloc, when)."""
    return {(r["alloc"], r["when"]): r for r in report.read_csv(d, "mm_stat.csv")}


def align_rows(name):
    """[(measure, "zsmalloc / afmalloc" text)] of one run for align_block()."""
    d = rdir(name)
    if os.path.isfile(os.path.join(d, "fio.csv")):
        per = report.fio_samples(d)
        out = []
        for shape in ("randwrite", "mixwrite"):
            worst = [fio_worst(per, a, shape) for a in (ZS, AF)]
            if None not in worst:
                out.append((f"fio {shape}: largest overhead in a one-second sample",
                            " / ".join(pct(100 * w) for w in worst)))
        end = fio_end_rel(fio_mm(d), AF)
        if end is not None:
            out.append(("fio: memory held at the end per compressed byte, over zsmalloc's",
                        rel(end)))
        return out
    if is_churn(name):
        c = churn(name)
        ratios = [cmed(c["phase"][(AF, ph)]["overhead mean"])
                  / cmed(c["phase"][(ZS, ph)]["overhead mean"])
                  for ph in c["phases"] if (AF, ph) in c["phase"] and (ZS, ph) in c["phase"]
                  and cmed(c["phase"][(ZS, ph)]["overhead mean"])]
        p = c["pairs"].get(None, Pairs())
        n, more, most = p.n, p.more, p.most_mib
        tp = per_run_ratios(c, "churn", "pages/s")
        return [("swap churn (zram, lz4): afmalloc's mean overhead per phase over zsmalloc's, "
                 "the highest phase", xr(max(ratios)) if ratios else "-"),
                ("swap churn: one-second samples where afmalloc held more pages",
                 f"{frac(more, n)}, by up to {most:.1f} MiB"),
                ("swap churn: pages touched per second, afmalloc's over zsmalloc's",
                 xr(med(tp)) if tp else "-")]
    rows = steps(name)
    return [("quick tree: overhead after the untar",
             " / ".join(pct(ovh(rows, a, "untar")) for a in (ZS, AF))),
            ("quick tree: the worst remove step",
             " / ".join(pct(worst_rm(rows, a)) for a in (ZS, AF)))]


def align_block():
    """README: the same benchmarks with exact and with 16-byte extents."""
    out = ["Each row: the default (exact extents) and `afmalloc.zspage_align=16`, "
           "each run against zsmalloc in its own boot (runs named in the last "
           "column); zsmalloc / afmalloc where two figures are given.", "",
           "| measure | default | zspage_align=16 | runs |", "|---|---|---|---|"]
    left = []
    for base, a16 in SUMMARY["align"]:
        if not all(churn_done(n) if is_churn(n) else os.path.isfile(
                os.path.join(rdir(n), "meta.json")) for n in (base, a16)):
            left.append(f"{base} / {a16}")
            continue
        r1, r16 = dict(align_rows(base)), dict(align_rows(a16))
        for k in r1:
            if k in r16:
                out.append(f"| {k} | {r1[k]} | {r16[k]} | {link(base)}, {link(a16)} |")
    if left:
        out += ["", "Not measured yet: " + "; ".join(left) + "."]
    out += align_beside()
    return "\n".join(out) + "\n"


def fio_beside_rows(n, var):
    """Rows of fio run @n with afmalloc/zspage and afmalloc/zspage+@var
    beside zsmalloc in one boot: IOPS over zsmalloc's per shape, the
    setting's over the default's, the largest overhead in a one-second
    sample under randwrite and mixwrite, memory at the end per compressed
    byte over zsmalloc's."""
    d = rdir(n)
    off = f"{AF}+{var}"
    r = report.fio_ratios(d)
    iops = report._fio_iops(report.read_csv(d, "fio.csv"))
    runs = sorted({k[0] for k in iops}, key=int)
    shapes = list(dict.fromkeys(k[2] for k in iops))
    out = []
    for sh in shapes:
        vs = [iops[(ru, off, sh)] / iops[(ru, AF, sh)] for ru in runs
              if iops.get((ru, AF, sh)) and (ru, off, sh) in iops]
        out.append(f"| fio {sh}: IOPS over zsmalloc's in the same run, median of runs (range); "
                   f"the setting over the default | {med_span(r.get((AF, sh), []), xr)} | "
                   f"{med_span(r.get((off, sh), []), xr)}; {med_span(vs, xr)} | {link(n)} |")
    per = report.fio_samples(d)
    for sh in ("randwrite", "mixwrite"):
        cells = [fio_worst(per, a, sh) for a in (AF, off)]
        out.append(f"| fio {sh}: largest overhead in a one-second sample | "
                   + " | ".join("-" if w is None else pct(100 * w) for w in cells)
                   + f" | {link(n)} |")
    mm = fio_mm(d)
    ends = ["-" if e is None else rel(e) for e in (fio_end_rel(mm, a) for a in (AF, off))]
    out.append("| fio: memory held at the end per compressed byte, over zsmalloc's | "
               f"{ends[0]} | {ends[1]} | {link(n)} |")
    return out


def worst_rm(rows, a):
    """@a's highest overhead after a remove step (rm_all aside), in %."""
    return max(ovh(rows, a, st) for st in RM_STEPS)


def quick_beside_rows(n, var):
    """Rows of untar/remove run @n (one boot or several) with afmalloc/zspage
    and afmalloc/zspage+@var beside zsmalloc: zsmalloc / afmalloc overhead
    after the untar, the worst remove step and the rest, a line per boot."""
    off = f"{AF}+{var}"
    boots = boot_steps(n)

    def cell(a, fn):
        return "<br>".join(f"{pct(fn(rows, ZS))} / {pct(fn(rows, a))}" for rows in boots)
    out = []
    for label, fn in (("overhead after the untar", lambda rows, a: ovh(rows, a, "untar")),
                      ("the worst remove step", worst_rm),
                      ("after removing the rest", lambda rows, a: ovh(rows, a, "rm_all"))):
        out.append(f"| quick tree: {label} | {cell(AF, fn)} | {cell(off, fn)} | {link(n)} |")
    return out


def align_beside():
    """The align block's table of both settings beside zsmalloc in one boot
    (SUMMARY "align_beside"), a line naming runs still missing."""
    var = "zspage_align=16"
    names, tail = beside_missing(list(SUMMARY["align_beside"]),
                                 "Both settings beside zsmalloc in one boot")
    if not names:
        return tail
    src = ", ".join(sorted({run_source(n)[0] for n in names}))
    k = sorted({len(churn(n)["runs"]) for n in names if is_churn(n)})
    runs = f"swap churn {'/'.join(map(str, k))} run(s) in its boot, " if k else ""
    out = ["", "Both settings beside zsmalloc in one boot (the benchmarks' "
           f"`afmalloc/zspage+{var}` allocator; {runs}the quick tree a boot in each order, a "
           f"line each), on {src}; zsmalloc / afmalloc where two figures are given:", "",
           f"| measure | default | {var} | runs |", "|---|---|---|---|"]
    for n in names:
        if is_churn(n):
            out += beside_rows(n, var, "16-byte extents")
        elif os.path.isfile(os.path.join(rdir(n), "fio.csv")):
            out += fio_beside_rows(n, var)
        else:
            out += quick_beside_rows(n, var)
    return out + tail


def auto_block():
    """README: the automatic compaction's trigger, the default against
    zspage_auto_permille=20 beside zsmalloc in one boot (SUMMARY "auto")."""
    var = "zspage_auto_permille=20"
    names, tail = beside_missing(list(SUMMARY["auto"]),
                                 f"The default and `{var}` beside zsmalloc in one boot")
    if not names:
        return "\n".join(tail[1:]) + "\n"
    src = ", ".join(sorted({run_source(n)[0] for n in names}))
    out = [f"The default and `afmalloc/zspage+{var}` beside zsmalloc in one boot, on "
           f"{src}:", "", f"| measure | default | {var} | runs |", "|---|---|---|---|"]
    for n in names:
        out += fio_beside_rows(n, var)
    return "\n".join(out + tail) + "\n"


def table_pages(name, step):
    """(handle table pages, handles) of afmalloc/zspage after @step (debugfs
    "handles" row: handles, free slots, table pages, with directories)."""
    path = os.path.join(rdir(name), "debugfs", f"afmalloc-zspage-r1-{step}.txt")
    with open(path) as f:
        for ln in f:
            p = ln.split()
            if p and p[0] == "handles":
                return int(p[3]), int(p[1])
    fail(f"no handles row in {path}")


def handle_mag_block():
    """README: the quick tree and the UML microbenchmark with the handle
    table's magazine (the default) and without it."""
    hm = SUMMARY["handle_mag"]
    names = [n for v in ("16", "0") for k, ns in hm[v].items() if k != "churn" for n in ns]
    if not all(os.path.isfile(os.path.join(rdir(n), "meta.json")) for n in names):
        return "Not measured yet: " + ", ".join(names) + ".\n"
    out = ["Each cell: the magazine as it was until 9ca3a27 (16 freed handle slots at hand "
           "per shard, every freed slot going there) / "
           "`afmalloc.zspage_handle_mag=0`; the quick tree (zstd) with afmalloc/zspage "
           "alone, one line per boot, boots alternating; the microbenchmark natively on "
           "UML, one thread, afmalloc/zspage's allocate + write + free rate over "
           "zsmalloc's in the same run, median of the per-run ratios of the boots (range)"
           + (churn_what(hm) if all(hm[v].get("churn") for v in ("16", "0")) else "."),
           "", "| measure | magazine until 9ca3a27 | zspage_handle_mag=0 | runs |",
           "|---|---|---|---|"]

    def runs(key):
        return ", ".join(link(n) for v in ("16", "0") for n in hm[v][key])

    out += quick_hmag_rows([hm[v]["quick"] for v in ("16", "0")], runs("quick"))
    for key in ("speed", "speed_large"):
        cells = []
        for v in ("16", "0"):
            rs = [x for n in hm[v][key]
                  for x in report.speed_ratios(rdir(n)).get((AF, "alloc-map", 1), [])]
            cells.append(f"{xr(med(rs))} ({span(rs, xr)}; {len(rs)} runs)" if rs else "-")
        ws = speed_ws(hm["16"][key][0])
        out.append(f"| microbenchmark ({ws_words(ws)}): allocate + write + free over zsmalloc | "
                   f"{cells[0]} | {cells[1]} | {runs(key)} |")
    out += handle_mag_churn(hm)
    for later in hm["later"]:
        out += handle_mag_later(later)
    out += handle_phases(hm["phases"])
    return "\n".join(out) + "\n"


def med_span(v, f):
    """Median of @v and its range, each formatted by @f; "-" if empty."""
    return f"{f(med(v))} ({span(v, f)})" if v else "-"


def phase_ratio_max(c, alloc=AF):
    """[@alloc's mean overhead over zsmalloc's in the phase where it is
    highest] of churn run @c (medians of the runs), or []."""
    out = []
    for ph in c["phases"]:
        a = cmed(c["phase"].get((alloc, ph), {}).get("overhead mean", []))
        z = cmed(c["phase"].get((ZS, ph), {}).get("overhead mean", []))
        if a is not None and z:
            out.append(a / z)
    return [max(out)] if out else []


def beside_missing(names, what):
    """(@names with a meta.json, or a summary.csv of several boots, and
    lines for the others): the runs of a table of a setting measured beside
    the default in one boot."""
    missing = [n for n in names if not any(os.path.isfile(os.path.join(rdir(n), f))
                                           for f in ("meta.json", "summary.csv"))]
    names = [n for n in names if n not in missing]
    if not names:
        return names, ["", f"{what}: not measured yet (" + ", ".join(missing) + ")."]
    return names, (["", "Not measured yet: " + ", ".join(missing) + "."] if missing else [])


def beside_rows(n, var, label, extra=()):
    """Table rows of swap-churn run @n with the default and afmalloc/zspage
    +@var (a module parameter, NAME=VALUE) beside zsmalloc in one boot:
    throughput and latency over zsmalloc's, overhead per phase and at rest,
    @extra rows (label, fn(alloc), fmt), and the setting's throughput over
    the default's; @label names the setting in the last row."""
    c = churn(n)
    m = c["meta"]
    what = f"{m.get('target', '?')}, {m.get('compressor', '?')}"
    lat = c["lat"]
    off = f"{AF}+{var}"
    rows = [("pages the workload touched per second in the churn phase, over "
             "zsmalloc's in the same run, median of runs (range)",
             lambda a: per_run_ratios(c, "churn", "pages/s", a), lambda v: med_span(v, xr)),
            (f"{lat_label(c, True)} in the churn phase over zsmalloc's in the same run, "
             "median of runs (range)",
             lambda a: per_run_ratios(c, "churn", lat, a), lambda v: med_span(v, xr)),
            ("mean overhead per phase over zsmalloc's, the highest phase",
             lambda a: phase_ratio_max(c, a), lambda v: xr(max(v)) if v else "-"),
            ("overhead at the end of the rest, median of runs (range)",
             lambda a: [100 * x for x in c["rest"].get(a, {}).get("60", [])
                        if x is not None], lambda v: med_span(v, pct)), *extra]
    out = [f"| swap churn ({what}): {lb} | {fmt(fn(AF))} | {fmt(fn(off))} | {link(n)} |"
           for lb, fn, fmt in rows]
    v = per_run_ratios(c, "churn", "pages/s", off, AF)
    out.append(f"| swap churn ({what}): pages touched per second in the churn phase with "
               f"{label} over the default in the same run, median of runs (range) "
               f"| - | {med_span(v, xr)} | {link(n)} |")
    return out


def handle_phases(names):
    """The handle_mag block's table of the phase rules against
    zspage_handle_phases=N: swap-churn runs with both and zsmalloc in one
    boot (SUMMARY handle_mag "phases"), a line naming those still
    missing."""
    names, tail = beside_missing(
        names, "The phase rules against `zspage_handle_phases=N` under swap churn")
    if not names:
        return tail
    src = ", ".join(sorted({run_source(n)[0] for n in names}))
    k = sorted({len(churn(n)["runs"]) for n in names})
    out = ["", "What the two rules cost under swap churn: `afmalloc.zspage_handle_phases=N` "
           "(read when a pool is made) turns both off; the default, that setting and "
           f"zsmalloc in one boot per line, {'/'.join(map(str, k))} runs each, the order "
           f"rotating, on {src}:", "",
           "| measure | default | zspage_handle_phases=N | runs |", "|---|---|---|---|"]
    for n in names:
        out += beside_rows(n, "zspage_handle_phases=N", "the rules off", extra=[
            ("handle table pages at the end of the rest, per run (handles)",
             lambda a, n=n: [f"{p} ({h})" for p, h in htab_at_rest(n, a)],
             lambda v: "<br>".join(v) if v else "-")])
    return out + tail


def quick_hmag_rows(cols, links):
    """The handle_mag block's quick-tree rows: overhead after the untar, the
    worst remove step and the rest, handle table pages after the last two
    steps, for the runs of each column of @cols (one line per boot)."""
    def cells(fn):
        return ["<br>".join(fn(n) for n in col) for col in cols]

    def ovh_of(step):
        return lambda n: pct(ovh(steps(n), AF, step))

    out = ["| quick tree: overhead after the untar | %s | %s | %s |"
           % (*cells(ovh_of("untar")), links),
           "| ... after the worst remove step | %s | %s | %s |"
           % (*cells(lambda n: pct(worst_rm(steps(n), AF))), links),
           "| ... after removing the rest | %s | %s | %s |"
           % (*cells(ovh_of("rm_all")), links)]
    for step, what in (("rm_include", "the last remove step"), ("rm_all", "removing the rest")):
        hs = {table_pages(n, step)[1] for col in cols for n in col}
        out.append(f"| ... handle table pages after {what} ({'/'.join(map(str, sorted(hs)))} "
                   "handles left) | %s | %s | %s |"
                   % (*cells(lambda n, st=step: str(table_pages(n, st)[0])), links))
    return out


def handle_mag_later(later):
    """Rows of the handle_mag block for a later default (SUMMARY handle_mag
    "later": what it changed, and its runs) against zspage_handle_mag=0, the
    quick tree in one boot each, both on the commit that made it; a line
    saying so while either run is missing."""
    names = [n for v in ("16", "0") for n in later[v]]
    missing = [n for n in names if not os.path.isfile(os.path.join(rdir(n), "meta.json"))]
    if missing:
        return ["", f"A later default ({later['what']}) against `zspage_handle_mag=0`: "
                "not measured yet (" + ", ".join(missing) + ")."]
    src = ", ".join(sorted({run_source(n)[0] for n in names}))
    return ["", f"Since {src} {later['what']}; the quick tree (zstd) with afmalloc/zspage "
            f"alone, one boot each on {src}:", "",
            "| measure | default | zspage_handle_mag=0 | runs |", "|---|---|---|---|"] + \
        quick_hmag_rows([later[v] for v in ("16", "0")], ", ".join(link(n) for n in names))


def htab_at_rest(name, alloc=AF):
    """@alloc's handle table pages and objects at the last rest sample of
    each run of churn run @name: [(pages, objects)] (runs sampled before
    sample.py read the table pages: none)."""
    last = {}
    churn_report.set_page(run_meta(name))
    for r in churn_report.load_samples(os.path.join(rdir(name), "samples.csv")):
        if r["alloc"] == alloc and r["phase"] == "rest" and r.get("afm_htab_pages"):
            last[r["run"]] = (int(r["afm_htab_pages"]), int(r["afm_objects"]))
    return [last[k] for k in sorted(last, key=int)]


def churn_what(hm):
    """The handle_mag block's words on its swap-churn pair."""
    names = [n for v in ("16", "0") for n in hm[v]["churn"]]
    if not all(os.path.isfile(os.path.join(rdir(n), "meta.json")) for n in names):
        return "."
    k = sorted({len(churn(n)["runs"]) for n in names})
    return (f"; swap churn with each setting in its own boot ({'/'.join(map(str, k))} runs "
            "each), against zsmalloc in the same boot.")


def handle_mag_churn(hm):
    """Rows of the handle_mag block for its swap-churn pair (SUMMARY key
    "churn" of both settings), each run against zsmalloc in its own boot;
    a line saying so while either run is missing."""
    pair = [hm[v].get("churn", ()) for v in ("16", "0")]
    if not all(pair):
        return []
    missing = [n for ns in pair for n in ns if not os.path.isfile(os.path.join(rdir(n), "meta.json"))]
    if missing:
        return ["", "Swap churn with either setting: not measured yet (" + ", ".join(missing) + ")."]
    m = churn(pair[0][0])["meta"]
    what = f"swap churn ({m.get('target', '?')}, {m.get('compressor', '?')})"
    links = ", ".join(link(n) for ns in pair for n in ns)

    def ph_ratio(n, c):
        return phase_ratio_max(c)

    rows = [("mean overhead in the churn phase, median of runs (range)",
             lambda n, c: [100 * x for x in c["phase"].get((AF, "churn"), {})
                           .get("overhead mean", []) if x is not None],
             lambda v: med_span(v, pct)),
            ("afmalloc's mean overhead per phase over zsmalloc's in the same boot, the "
             "highest phase", ph_ratio, lambda v: xr(max(v))),
            ("overhead at the end of the rest, median of runs (range)",
             lambda n, c: [100 * x for x in c["rest"].get(AF, {}).get("60", []) if x is not None],
             lambda v: med_span(v, pct)),
            ("pages the workload touched per second in the churn phase, over zsmalloc's in "
             "the same run, median of runs (range)",
             lambda n, c: per_run_ratios(c, "churn", "pages/s"),
             lambda v: med_span(v, xr)),
            ("handle table pages at the end of the rest, per run (handles)",
             lambda n, c: [f"{p} ({h})" for p, h in htab_at_rest(n)],
             lambda v: "<br>".join(v))]
    out = []
    for label, fn, fmt in rows:
        a, b = ([x for n in ns for x in fn(n, churn(n))] for ns in pair)
        if a and b:
            out.append(f"| {what}: {label} | {fmt(a)} | {fmt(b)} | {links} |")
    return out


# --- bench/results/README.md ----------------------------------------------------

def zswap_section(path):
    """The summary lines of a make bench-zswap log."""
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f]
    keep = [ln for ln in lines
            if ln.startswith(("[afmalloc] accelerator", "zswap-test: PASS"))
            or ("stored_pages=" in ln and "ratio=" in ln) or "Zswapped/Zswap" in ln]
    if not any("Zswapped/Zswap" in ln for ln in keep):
        fail(f"{path} has no Zswapped/Zswap summary")
    return ["Reproduce: `make bench-zswap` (Debian's unmodified kernel, afmalloc.ko;"
            " same workload and boot for both allocators)", "", "```"] + keep + ["```", ""]


def timings_section(name, path):
    """The step times of a make check or make demo record (scripts/timed.sh)."""
    started, rev, machine, rows, wall = read_timings_wall(path)
    cmd = "make demo" if name.startswith("make-demo") else "make check"
    caches = "cold caches" if "-cold" in name else "warm caches"
    out = [f"Reproduce: `{cmd}` (times written by `scripts/timed.sh`); {caches}, run of "
           f"{started}, commit {rev}, {machine}", "",
           "| step | seconds |", "|---|---|"]
    note = timings_note(path)
    if note:
        out[0] += f" ({note})"
    out += [f"| {step} | {sec} |" for step, sec, _ in rows]
    out += [f"| **sum of steps** | **{sum(sec for _, sec, _ in rows)}** |"]
    if wall is not None:
        out += [f"| **wall clock** (steps overlap) | **{wall}** |"]
    out += [""]
    return out


def fault_rows(path):
    """The summary lines of tests/vm/fault-inject.sh in a log, as dicts."""
    rows = []
    with open(path, errors="replace") as f:
        for ln in f:
            ln = ln.strip()
            if ln.startswith("fault-inject: alloc="):
                rows.append(dict(kv.split("=", 1) for kv in ln.split()[1:]))
    return rows


def fault_section(paths):
    """The summary lines of tests/vm/fault-inject.sh, as a table."""
    rows = [r for p in paths for r in fault_rows(p)]
    out = ["Reproduce: `make vm-test-debug` (part of `make check`: tests/vm/fault-inject.sh"
           " in tests/vm/debug-suite.sh; `make vm-test` runs it for every allocator):"
           " failslab and fail_page_alloc"
           " on the writing process only; every failure must reach the writer as an error,"
           " every successfully written block must read back, nothing may stay allocated"
           " after teardown.", "",
           "| allocator | writes | failed (error returned) | blocks verified | data lost"
           " | pages leaked | faults injected |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(k)) for k in (
            "alloc", "writes", "failed", "verified", "lost", "leaked_pages", "injected")) + " |")
    return out + [""]


RELIABILITY_RE = re.compile(r"^\s*reliability: (.*)$")
RELIABILITY_KEYS = ("kind", "test", "tried", "expected", "observed", "lost", "result")


def reliability_rows(path):
    """The reliability: lines of a log (format in the module docstring)."""
    rows = []
    with open(path, errors="replace") as f:
        for n, ln in enumerate(f, 1):
            m = RELIABILITY_RE.match(ln.rstrip("\r\n"))
            if not m:
                continue
            try:
                row = dict(kv.split("=", 1) for kv in shlex.split(m.group(1)))
            except ValueError as e:
                fail(f"{path}:{n}: bad reliability line ({e})")
            missing = [k for k in RELIABILITY_KEYS if k not in row]
            if missing:
                fail(f"{path}:{n}: reliability line lacks {', '.join(missing)}")
            rows.append(row)
    return rows


def make_check_steps():
    """make check step name -> the command it runs, from the Makefile's
    '$(TIMED) NAME CMD' lines ($(TOP)/ dropped, $$ made $)."""
    steps = {}
    try:
        with open(os.path.join(TOP, "Makefile")) as f:
            text = f.read().replace("\\\n", " ")
    except OSError:
        return steps
    for m in re.finditer(r"^\t\$\(TIMED\) ([\w.-]+) (.*)$", text, re.M):
        cmd = re.sub(r"\s+", " ", m.group(2)).replace("$(TOP)/", "").replace("$$", "$")
        if "$(" in cmd:
            # Make variables in it: name the target whose recipe runs it.
            rules = re.findall(r"^([\w.-]+):", text[:m.start()], re.M)
            cmd = f"make {rules[-1]}" if rules else "make check"
        steps[m.group(1)] = cmd.strip()
    return steps


def reproduce(step, steps):
    """The command that reproduces a make check step's log."""
    for name in (step, "vm-" + step):
        if name in steps:
            return f"`{steps[name]}` (`make check` step {name})"
    return "`make check`"


def cell(text):
    """Text for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def reliability_section(d):
    """One table of every reliability: line of the logs in d."""
    steps = make_check_steps()
    out = []
    for path in sorted(glob.glob(os.path.join(d, "*.log"))):
        step = os.path.basename(path)[:-len(".log")]
        for r in reliability_rows(path):
            if not out:
                out = ["### Reliability", "",
                       "Every `reliability:` line of the make check step logs in this folder"
                       " (one row per input, fault or run tried; a test fails if any of its"
                       " rows does), with the command that reproduces the step.", "",
                       "| kind | test | tried | expected | observed | ops/seconds | data lost"
                       " | result | reproduce |",
                       "|---|---|---|---|---|---|---|---|---|"]
            amount = " / ".join(f"{r[k]} {k}" for k in ("ops", "seconds") if k in r)
            res = r["result"] if r["result"] == "pass" else f"**{r['result']}**"
            out.append("| " + " | ".join(cell(x) for x in (
                r["kind"], r["test"], r["tried"], r["expected"], r["observed"], amount,
                r["lost"], res, reproduce(step, steps))) + " |")
    return out + [""] if out else []


def demote(text):
    """Headings of a report nest under the folder's ## heading."""
    return "\n".join("#" + ln if ln.startswith("#") else ln for ln in text.splitlines())


SOURCE_RE = re.compile(r"\bsource ([0-9a-f]{7,40})\b")


def known_sources(text):
    """'source ID' of a report, unless ID is not in git log (then not kept)."""
    return SOURCE_RE.sub(lambda m: m.group(0) if git().known(m.group(1)) else
                         "source not recorded (see the index)", text)


# Boot arguments every run of a kind has (bench scripts add them): not
# worth naming in the index.
USUAL_ARGS = {"slab_nomerge", "page_owner=on"}


def unusual_args(meta):
    """' (`ARGS`)' for the boot arguments of a run beyond USUAL_ARGS, or ''."""
    extra = [a for a in meta.get("boot_args", "").split() if a not in USUAL_ARGS]
    return f" (`{' '.join(extra)}`)" if extra else ""


def kind(name):
    """What a results folder holds, for the index."""
    d = rdir(name)

    def has(f):
        return os.path.isfile(os.path.join(d, f))

    meta = run_meta(name)
    if is_churn(name):
        return f"swap churn, {meta.get('target', '?')}, {meta.get('compressor', '?')}, " \
            f"{meta.get('runs', '?')} run(s) in one boot" + unusual_args(meta)
    if timings_file(name):
        return ("`make demo`" if name.startswith("make-demo") else "`make check`") + \
            (" times, cold caches" if "-cold" in name else " times, warm caches")
    if has("speed.csv") and meta.get("accelerator", "").startswith("none (UML"):
        return "in-kernel microbenchmark, natively on UML (one CPU)"
    if has("speed.csv") and "arm64" in meta.get("kernel", ""):
        ps = meta.get("page_size", 4096) // 1024
        return (f"in-kernel microbenchmark, emulated arm64, {ps} KiB pages, memory held"
                + (", profiled" if glob.glob(os.path.join(d, "profile-*.txt")) else "")
                + unusual_args({"boot_args": " ".join(
                    a for a in meta.get("boot_args", "").split()
                    if not a.startswith(("console=", "panic=", "afm_speed.boot_runs=",
                                         "afm_speed.duration_ms=", "afm_speed.working_set=")))}))
    if has("speed.csv"):
        return "in-kernel microbenchmark" + unusual_args(meta)
    if has("fio.csv"):
        return "fio on zram" + unusual_args(meta)
    if has("zswap-time.csv"):
        return "zswap wall time, project kernel"
    if has("smallpool.csv"):
        return f"small zram device written from {meta.get('guest_cpus', '?')} vCPUs"
    if has("zswap.log"):
        return "zswap on Debian's kernel (`afmalloc.ko`)"
    boots = len(glob.glob(os.path.join(d, "run-*")))
    if not (has("steps.csv") or boots):
        return "`make check` step logs: reliability and fault injection"
    what = f"untar/remove, {meta.get('dataset', '?').split(' ')[0]} tree, " \
           f"{meta.get('rounds', '?')} round(s), {meta.get('comp', '?')}"
    return what + (f", {boots} boots" if boots else "") + unusual_args(meta)


def index_rows():
    out = ["| folder | what | date | kernel built from | hole cache |", "|---|---|---|---|---|"]
    for name in folders():
        meta = run_meta(name)
        src, how = run_source(name)
        recorded = meta.get("source")
        if src and how == "commit message":
            where = f"{src} (the commit adding the run says so" + \
                ("; meta.json names a commit not in git log)" if recorded else ")")
        elif src:
            where = src + (" with uncommitted changes" if how.endswith("dirty") else "")
        elif name in COMMITTED_IN:
            where = f"not recorded; committed in {COMMITTED_IN[name]}"
        else:
            where = "not recorded" if meta or os.path.isfile(
                os.path.join(rdir(name), "steps.csv")) else "-"
        hc = {True: "yes", False: "no", None: "?"}[hole_cache(name)]
        if kind(name).startswith(("`make", "`make check` step")):
            where, hc = "-", "-"
        out.append(f"| [{name}](#{name}) | {kind(name)} | {meta.get('date', '-')[:10] or '-'} "
                   f"| {where} | {hc} |")
    return out


def folders():
    """The result folders of bench/results, but churn runs still going."""
    return [n for n in sorted(os.listdir(RESULTS)) if os.path.isdir(rdir(n))
            and not (is_churn(n) and not churn_done(n))]


def folder_section(name):
    d = rdir(name)
    out = [f"## {name}", ""]
    if is_churn(name):
        return out + churn_section(name)
    other = ("check.tsv", "demo.tsv", "speed.csv", "zswap.log", "steps.csv", "smallpool.csv")
    logs = [] if any(os.path.isfile(os.path.join(d, n)) for n in other) else \
        sorted(glob.glob(os.path.join(d, "*.log")))
    flogs = [p for p in logs if fault_rows(p)]
    rtable = reliability_section(d) if logs else []
    if flogs or rtable:
        return out + (fault_section(flogs) if flogs else []) + rtable
    if timings_file(name):
        return out + timings_section(name, timings_file(name))
    meta = report.load_meta(d)
    for csvname, fn, default in (("speed.csv", report.speed, "bench/speed/run.sh"),
                                 ("fio.csv", report.fio, "bench/fio/run.sh"),
                                 ("zswap-time.csv", report.zswap_time,
                                  "bench/zswap-time/run.sh"),
                                 ("smallpool.csv", report.smallpool,
                                  "bench/smallpool/run.sh")):
        if os.path.isfile(os.path.join(d, csvname)):
            text = fn(d).rstrip()
            if "Reproduce:" not in text:
                out += [f"Reproduce: `{meta.get('command', default)}`", ""]
            return out + [demote(text), ""]
    if os.path.isfile(os.path.join(d, "summary.md")):
        # A multi-boot run (bench/run.sh --runs N): its medians.
        with open(os.path.join(d, "summary.md")) as f:
            return out + [demote(f.read().rstrip()), ""]
    if os.path.isfile(os.path.join(d, "zswap.log")):
        return out + zswap_section(os.path.join(d, "zswap.log"))
    if not os.path.isfile(os.path.join(d, "steps.csv")):
        fail(f"bench/results/{name} holds no result this script knows")
    rows, meta = report.load(d)
    out += [f"Reproduce: `{meta.get('command', 'bench/run.sh')}`", "",
            demote(report.report(rows, meta).rstrip())]
    if os.path.isfile(os.path.join(d, "overhead.png")):
        out += ["", f"![overhead ratio per step]({name}/overhead.png)"]
    frag = report.fragmentation(d)
    if frag:
        out += ["", demote(frag.rstrip())]
    if os.path.isfile(os.path.join(d, "frag.png")):
        out += ["", f"![U(9) over Highalloc-Stress attempts]({name}/frag.png)"]
    return out + [""]


def results_readme():
    out = ["# Benchmark and test results", "",
           "<!-- generated by bench/readme_results.py from the folders below; do not edit -->",
           "",
           "Generated by `bench/readme_results.py` from the folders of `bench/results/`, "
           "one section each, in name order; nothing here is typed by hand. Each folder "
           "keeps the raw data (CSV, meta.json with kernel, config hash, dataset hash, "
           "accelerator, guest size, date and the command that reproduces the run; the "
           "guest's log). Every run is one boot unless it says otherwise. Absolute times "
           "come from QEMU TCG emulation on a shared 2-core machine (the UML microbenchmark "
           "runs natively, on one CPU) and say little about "
           "speed on hardware: compare allocators only through ratios measured in the same "
           "boot. The README's summary table is read from these runs.", "",
           "Kernel built from: meta.json's `source` when it names a commit of `git log` "
           "(runs before e2989b7 recorded the checkout at the end of the run instead; "
           "for those the commit message that added the run names the tree); hole cache: "
           f"whether that kernel has the zspage store's hole cache ({HOLE_CACHE}).", ""]
    out += index_rows() + [""]
    for name in folders():
        out += folder_section(name)
    return known_sources("\n".join(out).rstrip("\n") + "\n")


# --- README.md's generated blocks ---------------------------------------------

def render_readme(text):
    blocks = {"summary": summary_block(summary_data()), "commands": commands_block(),
              "benchmark": benchmark_block(), "align": align_block(),
              "auto": auto_block(), "handle_mag": handle_mag_block()}
    seen = [m.group(1) for m in BLOCK_RE.finditer(text)]
    missing = [b for b in BLOCKS if b not in seen]
    unknown = [b for b in seen if b not in BLOCKS]
    if missing or unknown:
        fail(f"README.md: generated blocks missing: {', '.join(missing) or 'none'}; "
             f"unknown: {', '.join(unknown) or 'none'} (markers '<!-- generated: NAME -->' "
             f"... '<!-- end: NAME -->')")
    return BLOCK_RE.sub(lambda m: f"<!-- generated: {m.group(1)} -->\n{blocks[m.group(1)]}"
                        f"<!-- end: {m.group(1)} -->", text)


# --- --check ------------------------------------------------------------------------

FIGURE_RE = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*\s?%|\d+(?:\.\d+)?x\b"
                       r"|\d+(?:\.\d+)?\s?(?:s|ms|sec|seconds?|min|minutes?|h|hours?)\b)")
HEX_RE = re.compile(r"(?<![\w/.#-])[0-9a-f]{7,40}(?![\w-])")
# A hash, not a commit id: after "sha256", "config" or "config_sha256", or
# after "of FILE.EXT " (bench/churn/run.sh's "sha256 of churn.c H, of its
# pool.bin H").
HASH_BEFORE_RE = re.compile(r"((sha256|config|config_sha256)[\s:=\"(]*|\bof (its )?[\w.-]+\.\w+ )$")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")


def loose_figures(text):
    """Figures in README.md outside the generated blocks: (line, figure)."""
    out = []
    stripped = BLOCK_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for n, ln in enumerate(stripped.splitlines(), 1):
        out += [(n, m.group(0)) for m in FIGURE_RE.finditer(ln)]
    return out


def commit_ids(text):
    """Hexadecimal tokens that can be commit ids: a digit and a letter, not a hash."""
    out = []
    for m in HEX_RE.finditer(text):
        tok = m.group(0)
        if not (re.search(r"\d", tok) and re.search(r"[a-f]", tok)):
            continue
        if HASH_BEFORE_RE.search(text[max(0, m.start() - 40):m.start()]):
            continue
        out.append(tok)
    return list(dict.fromkeys(out))


def bad_links(path, text):
    base = os.path.dirname(path)
    out = []
    for m in LINK_RE.finditer(text):
        target = m.group(1).split("#", 1)[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue
        if not os.path.exists(os.path.join(base, target)):
            out.append(m.group(1))
    return out


# Prose that says which commit a run measured, then links the run: "on
# 1234abc (...) ([name](bench/results/README.md#name))": the last "on
# COMMIT" within 160 characters before the link, with no ";" or "[" between
# the two (a later clause is about something else).
RUN_LINK_RE = re.compile(r"\[[^\]]*\]\((?:\.\./)?bench/results/README\.md#([\w.-]+)\)")
ON_COMMIT_RE = re.compile(r"\bon\s+([0-9a-f]{7,40})\b")


def stale_run_links(text):
    """Prose links to a run whose meta.json source is not the commit the
    prose names just before the link: a run installed under that name since
    (its old run now NAME-OLDSOURCE). Return: [(line, name, named, source)]."""
    out = []
    prose = BLOCK_RE.sub(lambda m: " " * len(m.group(0)), text)
    for m in RUN_LINK_RE.finditer(prose):
        name = m.group(1)
        before = prose[max(0, m.start() - 160):m.start()]
        ons = list(ON_COMMIT_RE.finditer(before))
        if not ons or re.search(r"[;\[]", before[ons[-1].end():]):
            continue
        named = ons[-1].group(1)
        src = (run_meta(name).get("source") or "") if os.path.isdir(rdir(name)) else ""
        src = src.removesuffix("-dirty")
        if src and not (src.startswith(named) or named.startswith(src)):
            out.append((text.count("\n", 0, m.start()) + 1, name, named, src))
    return out


def check(files):
    """files: {path: (on disk, regenerated)}. Return the problems found."""
    problems = []
    for path, (old, new) in files.items():
        relp = os.path.relpath(path, TOP)
        if old != new:
            diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(),
                                             f"{relp} (committed)", f"{relp} (from the results)",
                                             lineterm="", n=1))
            shown = diff[:60] + ([f"... {len(diff) - 60} more diff lines"]
                                 if len(diff) > 60 else [])
            problems.append(f"{relp} is out of date; run python3 bench/readme_results.py\n"
                            + "\n".join(shown))
        g = git()
        if g.commits is None:
            print(f"readme_results: warning: not a git checkout, commit ids in {relp} not checked",
                  file=sys.stderr)
        else:
            ids = [i for i in commit_ids(old) if not g.known(i)
                   and not g.known(COMMIT_ALIASES.get(i, i))]
            if ids:
                problems.append(f"{relp}: commit ids not in git log: {', '.join(ids)}")
        links = bad_links(path, old)
        if links:
            problems.append(f"{relp}: links to nothing: {', '.join(links)}")
    for path in [README] + [p for p in files if p not in (README, RESULTS_README)]:
        relp, prose = os.path.relpath(path, TOP), files[path][0]
        loose = loose_figures(prose)
        if loose:
            problems.append(f"{relp}: figures outside the generated blocks (generate them in "
                            "bench/readme_results.py instead): "
                            + ", ".join(f"line {n}: {fig!r}" for n, fig in loose))
        stale = stale_run_links(prose)
        if stale:
            problems.append(f"{relp}: prose names one commit and links a run of another (the "
                            "run was replaced since: link the old one, NAME-OLDSOURCE, or "
                            "update the prose): "
                            + ", ".join(f"line {n}: on {c} -> {name} (source {src})"
                                        for n, name, c, src in stale))
    g = git()
    if g.commits is not None:
        cited = [c for c in list(KERNEL_SOURCE.values()) + list(COMMITTED_IN.values())
                 + [HOLE_CACHE] if not g.known(c)]
        if cited:
            problems.append(f"{__file__}: commits not in git log: {', '.join(cited)}")
    want = plot_digest(summary_plot_data())
    have = png_text(SUMMARY_PNG).get(PNG_KEY)
    if have != want:
        problems.append(f"bench/results/summary.png was drawn from other numbers (digest {have}, "
                        f"the results give {want}): run bench/plot_summary.py (matplotlib)")
    return problems


# --- --collect-check --------------------------------------------------------------

def collect_check(src):
    """Copy the last make check's record into bench/results (see --collect-check)."""
    tsv = os.path.join(src, "check.tsv")
    if not os.path.isfile(tsv):
        fail(f"no {tsv}: run make check first")
    with open(tsv) as f:
        failed = [p[0] for p in (ln.rstrip("\n").split("\t") for ln in f)
                  if len(p) == 3 and not p[0].startswith("#") and p[2] != "0"]
    if failed:
        fail(f"{tsv} records failed steps: {', '.join(failed)}")
    mc, rel_dir = rdir("make-check"), rdir("reliability")
    os.makedirs(mc, exist_ok=True)
    os.makedirs(rel_dir, exist_ok=True)
    shutil.copyfile(tsv, os.path.join(mc, "check.tsv"))
    print(f"readme_results: {tsv} -> {os.path.relpath(mc, TOP)}/")
    keep = [p for p in sorted(glob.glob(os.path.join(src, "logs", "*.log")))
            if reliability_rows(p) or fault_rows(p)]
    if not keep:
        fail(f"no log in {src}/logs has reliability: or fault-inject: lines")
    for old in glob.glob(os.path.join(rel_dir, "*.log")):
        os.remove(old)
    for path in keep:
        shutil.copyfile(path, os.path.join(rel_dir, os.path.basename(path)))
        print(f"readme_results: {path} -> {os.path.relpath(rel_dir, TOP)}/")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if README.md or bench/results/README.md is stale")
    ap.add_argument("--collect-check", nargs="?", metavar="CACHE_TIMINGS_DIR",
                    const=os.path.join(os.environ.get("AFMALLOC_CACHE") or
                                       os.path.expanduser("~/.cache/afmalloc"), "timings"),
                    help="copy the last make check's check.tsv and logs into bench/results")
    ap.add_argument("--results", metavar="DIR",
                    help="read the results from DIR (default bench/results) and write its "
                    "README.md and summary.png check there (for trying the script on a copy)")
    ap.add_argument("--readme", metavar="FILE",
                    help="the README to fill or check (default README.md of the checkout)")
    args = ap.parse_args()
    global RESULTS, RESULTS_README, SUMMARY_PNG, README
    if args.results:
        RESULTS = os.path.abspath(args.results)
        RESULTS_README = os.path.join(RESULTS, "README.md")
        SUMMARY_PNG = os.path.join(RESULTS, "summary.png")
    if args.readme:
        README = os.path.abspath(args.readme)
    if args.collect_check:
        if args.check:
            ap.error("--collect-check takes no other option")
        collect_check(args.collect_check)
        return
    files = {}
    for path, render in ((README, render_readme), (RESULTS_README, None)):
        try:
            with open(path) as f:
                old = f.read()
        except FileNotFoundError:
            old = ""
        files[path] = (old, render(old) if render else results_readme())
    # The design log (docs/*.md): written by hand, checked like the README's prose.
    for path in sorted(glob.glob(os.path.join(TOP, "docs", "*.md"))):
        with open(path) as f:
            old = f.read()
        files[path] = (old, old)
    if args.check:
        problems = check(files)
        for p in problems:
            print(f"readme_results: {p}", file=sys.stderr)
        sys.exit(1 if problems else 0)
    for path, (old, new) in files.items():
        if old != new:
            with open(path, "w") as f:
                f.write(new)
            print(f"readme_results: wrote {os.path.relpath(path, TOP)}")
    if plot_digest(summary_plot_data()) != png_text(SUMMARY_PNG).get(PNG_KEY):
        print("readme_results: bench/results/summary.png is stale: run bench/plot_summary.py",
              file=sys.stderr)


if __name__ == "__main__":
    main()
