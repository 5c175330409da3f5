#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-second sampler of the churn benchmark, run inside the guest.

    sample.py --target zram|zswap --alloc NAME --dev zramN --cgroup DIR
              --progress CSV --out CSV [--run R] [--pos P] [--comp C]
              [--interval S]

Started by bench/churn/churn-guest.sh next to the workload (outside its
cgroup), it appends one row per --interval (default 1 s) to --out until
SIGTERM, when it takes a last sample and exits. Each row is tagged with the
workload's phase and the time into it, followed from the workload's --out
CSV (--progress): this is where the two are merged. A new phase is looked
for every 0.1 s and sampled at once, so that each phase's first sample
marks its start (within 0.1 s plus the time a sample takes) and counters
can be split by phase.

--dev: for target zram the swap device holding the data, for target zswap
the swap device behind zswap (written-back and rejected pages).

What is counted (every count in pages of the guest's size unless _bytes):
  orig_bytes    data stored, uncompressed: zram mm_stat orig_data_size;
                zswap: the workload cgroup's memory.stat "zswapped"
  compr_bytes   compressed bytes stored, read with the pages held, so
                that the two describe the same moment (under churn a pool
                changes by several per cent a second):
    zsmalloc         zram: mm_stat compr_data_size, in the same read as
                     mem_used; zswap: memory.stat "zswap" (the compressed
                     size zswap charges per entry), read right before and
                     right after zswap/pool_total_size and averaged
                     (orig_bytes likewise)
    afmalloc         the stored_bytes of its own debugfs pool file, in the
                     same read as its pages (afm_stored_bytes); equal to
                     the swap side's count when the pool is still
  compr_ext_bytes  afmalloc: the swap side's count (zram mm_stat
                compr_data_size; zswap memory.stat "zswap"), read before
                and after the pages held and averaged, as compr_bytes was
                before 2026-12 (bench/churn/report.py's load_samples() reads
                older files so)
  compr_skew_bytes  how far apart the two reads of the swap side's count
                were (0 for zsmalloc on zram: one read)
  held_pages    every page the allocator holds, data and metadata:
    zsmalloc         zram: mm_stat mem_used_total; zswap: debugfs
                     zswap/pool_total_size (every zswap pool: only one
                     allocator's pools exist during a run); plus the pages
                     of its zs_handle-<pool> and zspage-<pool> slab caches
                     (/proc/slabinfo; the boot needs slab_nomerge), which
                     zsmalloc itself does not count
    afmalloc/zspage  the "pages" of debugfs afmalloc/<pool>/pool (zspages
                     plus its handle and descriptor tables) plus any
                     afm-<pool>-* slab caches
    afmalloc/slab    the pages of its afm-<pool>-* slab caches (chunks and
                     descriptors, empty slabs SLUB keeps cached included)
                     plus its whole-page chunks (debugfs classes row of
                     the page size, 4096)
                     plus its kmalloc'd descriptor bitmaps and slab tracker
                     nodes, rounded up to pages (slab_kmalloc_pages(); not
                     in runs before 2026-12), as bench/untar-remove.sh
                     counts them
                <pool> is the zram device for zram, every zswapN pool of
                that allocator for zswap
  meta_pages    of held_pages, metadata: zsmalloc its two slab caches;
                afmalloc meta_bytes / page size from debugfs (tables or
                descriptor slabs)
  (pages: of the guest's size, 4 KiB, or 16 KiB on arm64 kernels built so)
  overhead_bytes = held_pages * page size - compr_bytes;
  overhead_ratio = overhead_bytes / compr_bytes (empty when nothing stored)
  swap_out, swap_in   writes and reads completed on --dev (/sys/block/
                <dev>/stat; each swap I/O is one page): for zram every page
                swapped out to or in from zram, for zswap only the pages
                that went past zswap (rejected or written back)
  pswpout, pswpin    /proc/vmstat (empty on kernels without
                CONFIG_VM_EVENT_COUNTERS; the project's guest has them
                since scripts/config/guest.config asks for them)
  zswpout, zswpin, zswpwb, swpout_zero, swpin_zero, pgmajfault   the
                workload cgroup's memory.stat
  memory_current, swap_current   the cgroup's memory.current and
                memory.swap.current, bytes
  zswap_*       debugfs zswap/ (pool_total_size bytes; stored_pages;
                written_back_pages and reject_* since the sampler started)
  same_pages, huge_pages, zs_pages_compacted   zram mm_stat (pages
                compacted: zsmalloc's own count, manual and shrinker)
  afm_*         afmalloc debugfs, summed over its pools: pool file
                (objects, stored_bytes, pages, compactions of
                afm_compact() runs, pages_compacted of every compaction
                since 7 December 2026, before of those runs alone; aux_bytes, its
                kmalloc'd structures, not in held_pages, as zsmalloc's
                kmalloc'd pool and classes are not) and, zspage store,
                the classes counter rows: compact (objects moved, passes,
                pages freed by manual, automatic and shrinker compaction),
                migrate (pages migrated, refused), auto (automatic runs,
                shrinker scans); the overhead's parts, zspage store
                only, from the "free" and "reuse" rows of its classes
                table (afm_zs_class_stats in mm/zspage_store.c):
      afm_hole_bytes      free bytes inside zspages, below their fill
                          offset (left by freed objects)
      afm_tail_bytes      free bytes at the ends of zspages, past the
                          fill offset
      afm_dead_zspages    emptied zspages waiting for the deferred free
                          (each 8 pages, still held)
      afm_hole_reused, afm_hole_reused_bytes   objects placed in recorded
                          holes and their bytes (cumulative, this pool)
      afm_holes_rec, afm_hole_rec_bytes   holes recorded now, where
                          allocation looks, and their bytes: the hole
                          lists, since d4ab594 the hole index (every hole
                          of 17 bytes or more)
      afm_zspages_run, afm_zspages_chain   zspages made (cumulative)
                          whose pages were a run of PFNs (reached in
                          place) and the others ("runs" row)
      afm_compact_us, afm_compact_bytes, afm_compact_walked,
      afm_compact_looked  what compaction cost ("cost" row, cumulative):
                          microseconds in its runs (wall clock), bytes
                          it copied, victims' extents it walked, handle
                          entries it looked at
                The rest of a zspage pool's overhead is its 5-byte
                object headers (5 x afm_objects), its tables (meta_pages)
                and the dead zspages.
  ctxt, cpu_busy_ms, cpu_idle_ms, cpu_user_ms   the guest's context
                switches and its CPUs' time busy (user, nice, system, irq,
                softirq), idle (idle, iowait) and, of the busy time, in user
                space (user, nice), summed over CPUs, from /proc/stat:
                whether a run that touched fewer pages per second spent
                more CPU per page or waited more, and whether the workload's
                own code got slower too (under TCG, a slower machine) or
                only the kernel
  cpu_alloc_ns, cpu_free_ns, cpu_compact_ns   allocator CPU time split:
                not available yet (no counter exists in either
                allocator), always empty
  afm_rfrees, afm_donated   frees that found the shard's lock held and
                          were left to its holder, and objects allocated
                          by a donor shard for another ("shards" row,
                          cumulative)
  afm_moved_hole, afm_moved_tail, afm_moved_new   where compaction put
                          the objects it moved: into holes of dense
                          zspages, to tails, and the zspages it made for
                          them ("dest" row, cumulative)
  afm_htab_pages, afm_htab_dir_pages   handle table pages, and those plus
                          the directory pages of the three tables
                          ("handles" row)
  afm_dtab_pages, afm_dtab_rtab_pages   descriptor table pages, and those
                          plus the hole table's ("descs" row); with
                          afm_htab_dir_pages they add up to meta_pages
  afm_shards_active   shards allocation takes now ("shards" row; summed
                          over pools, as every afm_ column: zswap's pools)
Counters from /proc/vmstat, /proc/stat, debugfs zswap/ and the block
device are differences from the sampler's first reading; the others are
the raw values (a fresh zram device, cgroup and afmalloc pool per run).
"""
import argparse
import glob
import os
import re
import signal
import sys
import time

# The guest's page size: 4096, or 16384 on an arm64 kernel built so
# (held_pages and meta_pages count pages of this size).
PAGE = os.sysconf("SC_PAGE_SIZE")
COLUMNS = (
    "wall_s,t_s,run,pos,target,alloc,comp,phase,phase_t_s,"
    "orig_bytes,compr_bytes,held_pages,meta_pages,overhead_bytes,overhead_ratio,"
    "swap_out,swap_in,pswpout,pswpin,zswpout,zswpin,zswpwb,swpout_zero,swpin_zero,"
    "pgmajfault,memory_current,swap_current,"
    "zswap_pool_total_size,zswap_stored_pages,zswap_written_back_pages,"
    "zswap_reject_compress_poor,zswap_reject_compress_fail,zswap_reject_alloc_fail,"
    "zswap_reject_kmemcache_fail,zswap_reject_reclaim_fail,zswap_pool_limit_hit,"
    "same_pages,huge_pages,zs_pages_compacted,"
    "afm_objects,afm_stored_bytes,afm_pages,afm_compactions,afm_pages_compacted,"
    "afm_compact_objs_moved,afm_compact_passes,afm_compact_pages_freed,"
    "afm_migrated,afm_migrate_busy,afm_auto_runs,afm_shrinker_scans,"
    "afm_hole_bytes,afm_tail_bytes,afm_dead_zspages,afm_hole_reused,afm_hole_reused_bytes,"
    "afm_holes_rec,afm_hole_rec_bytes,afm_zspages_run,afm_zspages_chain,"
    "afm_compact_us,afm_compact_bytes,afm_compact_walked,afm_compact_looked,"
    "cpu_alloc_ns,cpu_free_ns,cpu_compact_ns,afm_rfrees,afm_donated,"
    "ctxt,cpu_busy_ms,cpu_idle_ms,cpu_user_ms,"
    "afm_moved_hole,afm_moved_tail,afm_moved_new,compr_skew_bytes,"
    "afm_htab_pages,afm_htab_dir_pages,afm_dtab_pages,afm_dtab_rtab_pages,"
    "afm_shards_active,afm_aux_bytes,compr_ext_bytes"
).split(",")
DELTA = {"swap_out", "swap_in", "pswpout", "pswpin", "zswap_written_back_pages",
         "zswap_reject_compress_poor", "zswap_reject_compress_fail",
         "zswap_reject_alloc_fail", "zswap_reject_kmemcache_fail",
         "zswap_reject_reclaim_fail", "zswap_pool_limit_hit", "ctxt", "cpu_busy_ms",
         "cpu_idle_ms", "cpu_user_ms"}
DBG = "/sys/kernel/debug"


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def cpu_times():
    """/proc/stat: context switches, CPU time busy, idle and user (ms, all CPUs)."""
    out = {}
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    for line in (read("/proc/stat") or "").splitlines():
        f = line.split()
        if f and f[0] == "cpu" and len(f) >= 8:
            t = [int(x) for x in f[1:8]]  # user nice system idle iowait irq softirq
            out["cpu_busy_ms"] = round((t[0] + t[1] + t[2] + t[5] + t[6]) * tick_ms)
            out["cpu_idle_ms"] = round((t[3] + t[4]) * tick_ms)
            out["cpu_user_ms"] = round((t[0] + t[1]) * tick_ms)
        elif f and f[0] == "ctxt" and len(f) == 2:
            out["ctxt"] = int(f[1])
    return out


def keyed(path):
    """'name value' lines -> dict of ints."""
    out = {}
    for line in (read(path) or "").splitlines():
        f = line.split()
        if len(f) >= 2:
            try:
                out[f[0]] = int(f[1])
            except ValueError:
                pass
    return out


def slab_pages(regex):
    """Pages held by the slab caches whose name matches regex."""
    text = read("/proc/slabinfo")
    if text is None:
        return None
    r = re.compile(regex)
    total = 0
    for line in text.splitlines()[2:]:
        f = line.split()
        # name active_objs num_objs objsize objperslab pagesperslab :
        # tunables ... : slabdata active_slabs num_slabs sharedavail
        if len(f) >= 15 and r.search(f[0]):
            total += int(f[14]) * int(f[5])
    return total


def afm_pools(pattern):
    return sorted(glob.glob(os.path.join(DBG, "afmalloc", pattern)))


def afm_stats(dirs):
    """Sum of afmalloc's debugfs pool files and counter rows over dirs."""
    s = {}
    rows = {"compact": ("afm_compact_objs_moved", None, "afm_compact_passes",
                        "afm_compact_pages_freed"),
            "migrate": ("afm_migrated", "afm_migrate_busy", None, None),
            "auto": ("afm_auto_runs", "afm_shrinker_scans", None, None),
            "free": ("afm_hole_bytes", "afm_tail_bytes", "afm_dead_zspages", None),
            "reuse": ("afm_hole_reused", "afm_hole_reused_bytes", "afm_holes_rec",
                      "afm_hole_rec_bytes"),
            "runs": ("afm_zspages_run", "afm_zspages_chain", None, None),
            "cost": ("afm_compact_us", "afm_compact_bytes", "afm_compact_walked",
                     "afm_compact_looked"),
            "shards": ("afm_rfrees", None, "afm_donated", "afm_shards_active"),
            "dest": ("afm_moved_hole", "afm_moved_tail", "afm_moved_new", None),
            "handles": (None, None, "afm_htab_pages", "afm_htab_dir_pages"),
            "descs": (None, None, "afm_dtab_pages", "afm_dtab_rtab_pages")}
    four_k = desc = 0
    for d in dirs:
        p = keyed(os.path.join(d, "pool"))
        for k in ("objects", "stored_bytes", "pages", "meta_bytes", "aux_bytes",
                  "compactions", "pages_compacted"):
            s["afm_" + k] = s.get("afm_" + k, 0) + p.get(k, 0)
        for line in (read(os.path.join(d, "classes")) or "").splitlines()[1:]:
            f = line.split()
            if len(f) < 5:
                continue
            if f[0] == str(PAGE):
                four_k += int(f[4])
            if f[0].startswith("desc") and f[4].isdigit():
                desc += int(f[4])
            for name, val in zip(rows.get(f[0], ()), f[1:5]):
                if name:
                    s[name] = s.get(name, 0) + int(val)
    s["afm_4096_pages"] = four_k
    s["afm_desc_pages"] = desc
    return s


def slab_kmalloc_pages(afm):
    """afmalloc/slab's kmalloc'd metadata, in pages rounded up: its
    descriptor bitmaps (meta_bytes beyond the descriptor slabs' pages) and
    its slab tracker's xarray nodes (aux_bytes); both grow with the data."""
    b = (afm.get("afm_meta_bytes", 0) - afm.get("afm_desc_pages", 0) * PAGE
         + afm.get("afm_aux_bytes", 0))
    return -(-max(b, 0) // PAGE)


def held(args, row, afm):
    """Fill held_pages and meta_pages of row (see the module comment)."""
    pool = args.dev if args.target == "zram" else "zswap[0-9a-f]+"
    if args.kind == "zsmalloc":
        meta = slab_pages(r"^(zs_handle|zspage)-%s$" % pool)
        if args.target == "zram":
            data = row.get("_mem_used")
        else:
            t = row.get("zswap_pool_total_size")
            data = None if t is None else t // PAGE
        if data is None or meta is None:
            return
        row["held_pages"], row["meta_pages"] = data + meta, meta
        return
    if not afm:
        return
    slabs = slab_pages(r"^afm-%s-" % pool) or 0
    if args.kind == "afmalloc/slab":
        row["held_pages"] = slabs + afm.get("afm_4096_pages", 0) + slab_kmalloc_pages(afm)
    else:
        row["held_pages"] = afm.get("afm_pages", 0) + slabs
    row["meta_pages"] = afm.get("afm_meta_bytes", 0) // PAGE


class Progress:
    """Follows the workload's CSV: current phase and its start."""

    def __init__(self, path):
        self.path, self.off, self.phase, self.start, self.head = path, 0, "start", None, None

    def poll(self):
        """Read new rows; True if the phase changed."""
        before = self.phase
        try:
            if os.path.getsize(self.path) <= self.off:
                return False
            with open(self.path) as f:
                f.seek(self.off)
                while True:
                    line = f.readline()
                    if not line.endswith("\n"):
                        break
                    self.off += len(line.encode())
                    f_ = line.rstrip("\n").split(",")
                    if self.head is None:
                        self.head = f_
                        continue
                    r = dict(zip(self.head, f_))
                    self.phase = r.get("phase", self.phase)
                    self.start = float(r["wall_s"]) - float(r.get("phase_t_s") or 0)
        except OSError:
            pass
        return self.phase != before


def bracket(args, row):
    """Read the swap side's compressed bytes again after the pages held and
    keep the mean of the two reads (compr_skew_bytes: how far apart they
    were). Under churn a pool changes by several per cent a second (zswap).
    zsmalloc on zram: nothing to do (its pages come in the same mm_stat
    read). zsmalloc on zswap: its pages (zswap/pool_total_size) are read
    again between two reads of memory.stat, one right after the other, so
    that the mean is of the moment the pages were read. afmalloc: the mean
    is kept as compr_ext_bytes; what it is compared with is what its pool
    file counts in the read that gave its pages (own_count())."""
    if row.get("compr_bytes") is None:
        return
    if args.target == "zram":
        if args.kind == "zsmalloc":
            row["compr_skew_bytes"] = 0
            return
        mm = (read("/sys/block/%s/mm_stat" % args.dev) or "").split()
        if len(mm) < 2:
            return
        o2, c2 = int(mm[0]), int(mm[1])
    elif args.kind == "zsmalloc":
        stat = os.path.join(args.cgroup, "memory.stat")
        ms1 = keyed(stat)
        t = read(os.path.join(DBG, "zswap", "pool_total_size"))
        ms2 = keyed(stat)
        if ("zswapped" not in ms1 or "zswapped" not in ms2 or t is None
                or not t.strip().isdigit() or "held_pages" not in row):
            return
        t = int(t)
        row["held_pages"] += t // PAGE - row["zswap_pool_total_size"] // PAGE
        row["zswap_pool_total_size"] = t
        row["compr_skew_bytes"] = abs(ms2["zswap"] - ms1["zswap"])
        row["orig_bytes"] = (ms1["zswapped"] + ms2["zswapped"]) // 2
        row["compr_bytes"] = (ms1["zswap"] + ms2["zswap"]) // 2
        return
    else:
        ms = keyed(os.path.join(args.cgroup, "memory.stat"))
        if "zswapped" not in ms:
            return
        o2, c2 = ms["zswapped"], ms["zswap"]
    row["compr_skew_bytes"] = abs(c2 - row["compr_bytes"])
    row["orig_bytes"] = (row["orig_bytes"] + o2) // 2
    row["compr_bytes"] = (row["compr_bytes"] + c2) // 2


def own_count(args, row, afm):
    """afmalloc: compare its pages with the bytes its pool file counts in
    the same read (afm_stored_bytes), not with the swap side's count read
    around them (kept as compr_ext_bytes): with the swap side's count the
    mean of two reads faced pages read right after the first, which made
    the ratio too low while the pool grew (below zero at times in the fill
    of zram runs) and too high while it shrank; zsmalloc on zram has its
    pages and bytes in one read."""
    if args.kind == "zsmalloc" or afm.get("afm_stored_bytes") is None:
        return
    row["compr_ext_bytes"] = row.get("compr_bytes")
    row["compr_bytes"] = afm["afm_stored_bytes"]


def sample(args, base, prog, t0):
    row = {}
    now = time.time()
    prog.poll()
    row.update(wall_s="%.3f" % now, t_s="%.3f" % (now - t0), run=args.run, pos=args.pos,
               target=args.target, alloc=args.alloc, comp=args.comp, phase=prog.phase,
               phase_t_s="" if prog.start is None else "%.3f" % (now - prog.start))
    st = (read("/sys/block/%s/stat" % args.dev) or "").split()
    if len(st) >= 5:
        row["swap_in"], row["swap_out"] = int(st[0]), int(st[4])
    vm = keyed("/proc/vmstat")
    for k in ("pswpout", "pswpin"):
        if k in vm:
            row[k] = vm[k]
    row.update(cpu_times())
    ms = keyed(os.path.join(args.cgroup, "memory.stat"))
    for k in ("zswpout", "zswpin", "zswpwb", "swpout_zero", "swpin_zero", "pgmajfault"):
        if k in ms:
            row[k] = ms[k]
    for k, f in (("memory_current", "memory.current"), ("swap_current", "memory.swap.current")):
        v = read(os.path.join(args.cgroup, f))
        if v is not None and v.strip().isdigit():
            row[k] = int(v)
    zdir = os.path.join(DBG, "zswap")
    for k in ("pool_total_size", "stored_pages", "written_back_pages", "reject_compress_poor",
              "reject_compress_fail", "reject_alloc_fail", "reject_kmemcache_fail",
              "reject_reclaim_fail", "pool_limit_hit"):
        v = read(os.path.join(zdir, k))
        if v is not None and v.strip().isdigit():
            row["zswap_" + k] = int(v)
    if args.target == "zram":
        mm = (read("/sys/block/%s/mm_stat" % args.dev) or "").split()
        if len(mm) >= 8:
            row["orig_bytes"], row["compr_bytes"] = int(mm[0]), int(mm[1])
            row["_mem_used"] = int(mm[2]) // PAGE
            row["same_pages"], row["zs_pages_compacted"] = int(mm[5]), int(mm[6])
            row["huge_pages"] = int(mm[7])
            if args.kind != "zsmalloc":
                del row["zs_pages_compacted"]
        afm_dirs = afm_pools(args.dev) if args.kind != "zsmalloc" else []
    else:
        if "zswapped" in ms:
            row["orig_bytes"], row["compr_bytes"] = ms["zswapped"], ms["zswap"]
        afm_dirs = afm_pools("zswap*") if args.kind != "zsmalloc" else []
    afm = afm_stats(afm_dirs) if afm_dirs else {}
    for k, v in afm.items():
        if k in COLUMNS:
            row[k] = v
    held(args, row, afm)
    bracket(args, row)
    own_count(args, row, afm)
    if "held_pages" in row and row.get("compr_bytes") is not None:
        ov = row["held_pages"] * PAGE - row["compr_bytes"]
        row["overhead_bytes"] = ov
        if row["compr_bytes"] > 0:
            row["overhead_ratio"] = "%.6f" % (ov / row["compr_bytes"])
    for k in DELTA:
        if k in row:
            if k not in base:
                base[k] = row[k]
            row[k] -= base[k]
    return ",".join(str(row.get(c, "")) for c in COLUMNS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=("zram", "zswap"), required=True)
    ap.add_argument("--alloc", required=True,
                    help="zsmalloc, afmalloc/zspage or afmalloc/slab, perhaps with "
                    "+NAME=VALUE module parameters (churn-guest.sh), the label of the rows")
    ap.add_argument("--dev", required=True)
    ap.add_argument("--cgroup", required=True)
    ap.add_argument("--progress", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--run", default="1")
    ap.add_argument("--pos", default="1")
    ap.add_argument("--comp", default="")
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    args.kind = args.alloc.split("+")[0]

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    new = not os.path.exists(args.out) or os.path.getsize(args.out) == 0
    base, prog, t0 = {}, Progress(args.progress), time.time()
    with open(args.out, "a") as out:
        if new:
            out.write(",".join(COLUMNS) + "\n")
        tick = time.monotonic()
        while True:
            out.write(sample(args, base, prog, t0) + "\n")
            out.flush()
            if stop:
                break
            tick += args.interval
            if tick < time.monotonic():  # fell behind (a slow guest): no burst
                tick = time.monotonic()
            # Until the next tick, look for a new phase every 0.1 s: its
            # first sample is taken at once, so that it marks its start.
            while not stop and time.monotonic() < tick:
                time.sleep(max(0, min(0.1, tick - time.monotonic())))
                if prog.poll():
                    tick = time.monotonic()
    return 0


if __name__ == "__main__":
    sys.exit(main())
