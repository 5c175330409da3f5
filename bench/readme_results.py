#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Regenerate the README's Results section from committed benchmark runs.

usage: bench/readme_results.py [--check] [RUN_DIR ...]
       bench/readme_results.py --collect-check [CACHE_TIMINGS_DIR]

Each RUN_DIR (normally under bench/results/) holds what bench/run.sh writes
(steps.csv, meta.json, overhead.png, and the fragmentation tests' CSVs and
frag.png), or bench/speed.sh's speed.csv, or a make bench-zswap log
(zswap.log), or a copy of make check's step times (check.tsv), or logs of
make check's steps (*.log, named after the step): the summary lines of
tests/vm/fault-inject.sh ("fault-inject: alloc=...") become its table, and
every "reliability: kind=... test=... tried=... expected=... observed=...
lost=N result=pass|FAIL" line of any log becomes a row of one Reliability
table. The text between the markers
'<!-- results:begin -->' and '<!-- results:end -->' in README.md is replaced
by one report per run (bench/report.py) with its plot and the command that
reproduces it. Nothing is typed by hand. --check exits 1 if README.md is out
of date instead of writing it.

--collect-check copies the record of the last `make check` from
CACHE_TIMINGS_DIR (default $AFMALLOC_CACHE/timings, i.e.
~/.cache/afmalloc/timings, written by scripts/timed.sh): check.tsv to
bench/results/make-check/ and, replacing the *.log there, every logs/*.log
with reliability: or fault-inject: lines to bench/results/reliability/.
It refuses a record with a failed step. README.md is not touched: run the
script again without options to regenerate it.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def zswap_section(rel, path):
    """Render the summary lines of a make bench-zswap log."""
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f]
    keep = [ln for ln in lines
            if ln.startswith(("[afmalloc] accelerator", "zswap-test: PASS"))
            or ("stored_pages=" in ln and "ratio=" in ln) or "Zswapped/Zswap" in ln]
    if not any("Zswapped/Zswap" in ln for ln in keep):
        sys.exit(f"readme_results: error: {path} has no Zswapped/Zswap summary")
    return [f"### `{rel}`", "",
            "Reproduce: `make bench-zswap` (Debian's unmodified kernel, afmalloc.ko;"
            " same workload and boot for both allocators)", "", "```"] + keep + ["```", ""]


def timings_section(rel, path):
    """Render the step times of a make check run (scripts/timed.sh)."""
    rows, started, rev, machine = [], "?", "?", "?"
    with open(path) as f:
        for ln in f:
            p = ln.rstrip("\n").split("\t")
            if p[0] == "# started":
                started, rev = p[2], p[3]
            elif p[0] == "# machine":
                machine = ", ".join(p[1:])
            elif len(p) == 3:
                rows.append((p[0], int(p[1]), int(p[2])))
    if not rows or any(rc for _, _, rc in rows):
        sys.exit(f"readme_results: error: {path} is empty or records a failed step")
    out = [f"### `{rel}`", "",
           f"Reproduce: `make check` (times written by `scripts/timed.sh`); run of {started},"
           f" commit {rev}, {machine}", "",
           "| step | seconds |", "|---|---|"]
    out += [f"| {name} | {sec} |" for name, sec, _ in rows]
    out += [f"| **sum of steps** | **{sum(sec for _, sec, _ in rows)}** |", ""]
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


def fault_section(rel, paths):
    """Render the summary lines of tests/vm/fault-inject.sh."""
    rows = [r for p in paths for r in fault_rows(p)]
    if not rows:
        sys.exit(f"readme_results: error: {', '.join(paths)} has no fault-inject summary lines")
    out = [f"### `{rel}`", "",
           "Reproduce: `make vm-test-debug` (part of `make check`: tests/vm/fault-inject.sh"
           " in tests/vm/debug-suite.sh; `make vm-test` runs it for every allocator):"
           " failslab and fail_page_alloc"
           " on the writing process only; every failure must reach the writer as an error,"
           " every successfully written block must read back, nothing may stay allocated"
           " after teardown.", "",
           "| allocator | writes | failed (error returned) | blocks verified | data lost"
           " | pages leaked | faults injected |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.get('alloc')} | {r.get('writes')} | {r.get('failed')} | {r.get('verified')}"
                   f" | {r.get('lost')} | {r.get('leaked_pages')} | {r.get('injected')} |")
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
                sys.exit(f"readme_results: error: {path}:{n}: bad reliability line ({e})")
            missing = [k for k in RELIABILITY_KEYS if k not in row]
            if missing:
                sys.exit(f"readme_results: error: {path}:{n}: reliability line lacks {', '.join(missing)}")
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
                out = ["#### Reliability", "",
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


def collect_check(src):
    """Copy the last make check's record into bench/results (see --collect-check)."""
    tsv = os.path.join(src, "check.tsv")
    if not os.path.isfile(tsv):
        sys.exit(f"readme_results: error: no {tsv}: run make check first")
    with open(tsv) as f:
        failed = [p[0] for p in (ln.rstrip("\n").split("\t") for ln in f)
                  if len(p) == 3 and not p[0].startswith("#") and p[2] != "0"]
    if failed:
        sys.exit(f"readme_results: error: {tsv} records failed steps: {', '.join(failed)}")
    base = os.path.join(TOP, "bench", "results")
    mc, rel = os.path.join(base, "make-check"), os.path.join(base, "reliability")
    os.makedirs(mc, exist_ok=True)
    os.makedirs(rel, exist_ok=True)
    shutil.copyfile(tsv, os.path.join(mc, "check.tsv"))
    print(f"readme_results: {tsv} -> {os.path.relpath(mc, TOP)}/")
    keep = []
    for path in sorted(glob.glob(os.path.join(src, "logs", "*.log"))):
        if reliability_rows(path) or fault_rows(path):
            keep.append(path)
    if not keep:
        sys.exit(f"readme_results: error: no log in {src}/logs has reliability: or fault-inject: lines")
    for old in glob.glob(os.path.join(rel, "*.log")):
        os.remove(old)
    for path in keep:
        shutil.copyfile(path, os.path.join(rel, os.path.basename(path)))
        print(f"readme_results: {path} -> {os.path.relpath(rel, TOP)}/")


def demote(text):
    """Headings of a report nest under the run's ### heading."""
    return "\n".join("##" + ln if ln.startswith("#") else ln for ln in text.splitlines())


def section(run_dirs):
    out = [BEGIN,
           "<!-- generated by bench/readme_results.py from the runs below; do not edit -->",
           ""]
    for d in run_dirs:
        rel = os.path.relpath(os.path.abspath(d), TOP)
        other = ("check.tsv", "speed.csv", "zswap.log", "steps.csv")
        logs = [] if any(os.path.isfile(os.path.join(d, n)) for n in other) else \
            sorted(glob.glob(os.path.join(d, "*.log")))
        flogs = [p for p in logs if fault_rows(p)]
        rtable = reliability_section(d) if logs else []
        if flogs or rtable:
            if flogs:
                out += fault_section(rel, flogs)
            else:
                out += [f"### `{rel}`", ""]
            out += rtable
            continue
        tlog = os.path.join(d, "check.tsv")
        if os.path.isfile(tlog):
            out += timings_section(rel, tlog)
            continue
        if os.path.isfile(os.path.join(d, "speed.csv")):
            meta = report.load_meta(d)
            out += [f"### `{rel}`", "", f"Reproduce: `{meta.get('command', 'bench/speed.sh')}`", "",
                    demote(report.speed(d).rstrip()), ""]
            continue
        if os.path.isfile(os.path.join(d, "fio.csv")):
            meta = report.load_meta(d)
            out += [f"### `{rel}`", "", f"Reproduce: `{meta.get('command', 'bench/fio.sh')}`", "",
                    demote(report.fio(d).rstrip()), ""]
            continue
        if os.path.isfile(os.path.join(d, "zswap-time.csv")):
            meta = report.load_meta(d)
            out += [f"### `{rel}`", "", f"Reproduce: `{meta.get('command', 'bench/zswap-time.sh')}`",
                    "", demote(report.zswap_time(d).rstrip()), ""]
            continue
        summ = os.path.join(d, "summary.md")
        if os.path.isfile(summ):
            # A multi-boot run (bench/run.sh --runs N): its medians.
            with open(summ) as f:
                out += [f"### `{rel}`", "", demote(f.read().rstrip()), ""]
            continue
        zlog = os.path.join(d, "zswap.log")
        if os.path.isfile(zlog):
            out += zswap_section(rel, zlog)
            continue
        rows, meta = report.load(d)
        rel = os.path.relpath(os.path.abspath(d), TOP)
        cmd = meta.get("command", "bench/run.sh")
        out.append(f"### `{rel}`")
        out.append("")
        out.append(f"Reproduce: `{cmd}`")
        out.append("")
        out.append(demote(report.report(rows, meta).rstrip()))
        if os.path.isfile(os.path.join(d, "overhead.png")):
            out.append("")
            out.append(f"![overhead ratio per step]({rel}/overhead.png)")
        frag = report.fragmentation(d)
        if frag:
            out.append("")
            out.append(demote(frag.rstrip()))
        if os.path.isfile(os.path.join(d, "frag.png")):
            out.append("")
            out.append(f"![U(9) over Highalloc-Stress attempts]({rel}/frag.png)")
        out.append("")
    out.append(END)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--collect-check", nargs="?", metavar="CACHE_TIMINGS_DIR",
                    const=os.path.join(os.environ.get("AFMALLOC_CACHE") or
                                       os.path.expanduser("~/.cache/afmalloc"), "timings"),
                    help="copy the last make check's check.tsv and logs into bench/results")
    ap.add_argument("run_dirs", nargs="*",
                    help="default: every folder of bench/results, in name order")
    args = ap.parse_args()
    if args.collect_check:
        if args.check or args.run_dirs:
            ap.error("--collect-check takes no other arguments")
        collect_check(args.collect_check)
        return
    if not args.run_dirs:
        base = os.path.join(TOP, "bench", "results")
        args.run_dirs = [os.path.join(base, n) for n in sorted(os.listdir(base))
                         if os.path.isdir(os.path.join(base, n))]
    path = os.path.join(TOP, "README.md")
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"readme_results: error: {path} lacks the {BEGIN} / {END} markers")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    new = head + section(args.run_dirs) + tail
    if args.check:
        if new != text:
            sys.exit("readme_results: README.md Results are out of date; rerun without --check")
        return
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
