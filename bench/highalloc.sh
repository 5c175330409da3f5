#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Highalloc-Stress (seed 000), run inside the guest as root, with the data
# of the allocator under test still resident in zram:
#   bench/highalloc.sh --alloc NAME --round N --out DIR --ko PATH [--max N]
#
# afm_highalloc.ko (bench/module/, built by bench/build-modules.sh) makes one
# alloc_pages(order 9) per write to its debugfs "attempt" file and keeps the
# page on success; the gfp mask and why are in its source. As in the seed,
# the module is asked for "as many HugeTLB-sized pages as the system has":
# MemTotal / 2 MiB attempts (the seed's report: successes + failures = the
# machine's number of huge pages), each made whether the previous ones
# failed or not, all successes held until the end. --max N lowers the count.
#
# Before every attempt the kernel's unusable free space index U(9)
# (debugfs extfrag/unusable_index) is read, after every failure its
# fragmentation index (extfrag/extfrag_index): the kernel's own formulas
# (mm/vmstat.c), never recomputed here. Both are per zone; the u9 and fi9
# columns are those of the zone with the most managed pages (DMA32 in a 2G
# or 4G x86-64 guest: fixed for the whole test so the curve is one zone's),
# u9_all and fi9_all list every populated zone as ZONE:VALUE.
#
# Appends to DIR (headers written when a file is new):
#   highalloc.csv          alloc,round,attempt,success,zone,ns,u9,u9_zone,fi9,u9_all,fi9_all
#                          (zone: where the page came from; ns: the attempt's
#                          time in the kernel)
#   highalloc_summary.csv  one row per test: counts, % success, U(9) at the
#                          first attempt and after the last one, mean
#                          fragmentation index over the failures where it is
#                          >= 0 and the number where it is -1 (a free block
#                          of the order existed: the watermarks refused it,
#                          not fragmentation), successes per
#                          zone, compaction/reclaim counters (deltas; empty
#                          without CONFIG_VM_EVENT_COUNTERS)
#   pagetypeinfo.csv       /proc/pagetypeinfo "Number of blocks type" rows
#                          (kind=blocks) and, when booted with page_owner=on,
#                          "Number of mixed blocks" rows (kind=mixed), taken
#                          before the attempts (phase=before) and after them
#                          with every page but the last 128 MB still held
#                          (phase=held; see HIGHALLOC_HEADROOM_MB)
# then frees everything, unloads the module and prints a one-line summary.
set -euo pipefail

die() { echo "highalloc: error: $*" >&2; exit 1; }
usage() { echo "usage: $0 --alloc NAME --round N --out DIR --ko PATH [--max N]"; }

alloc= round= out= ko= max=
while [ $# -gt 0 ]; do
	case "$1" in
	--alloc) alloc=${2:?}; shift ;;
	--round) round=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--ko) ko=${2:?}; shift ;;
	--max) max=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
[ -n "$alloc" ] && [ -n "$round" ] && [ -n "$out" ] && [ -n "$ko" ] ||
	{ usage >&2; die "--alloc, --round, --out and --ko are required"; }
[[ "$round" =~ ^[0-9]+$ ]] || die "--round must be a number"
[ -z "$max" ] || [[ "$max" =~ ^[1-9][0-9]*$ ]] || die "--max must be a positive number"
[ -f "$ko" ] || die "module $ko not found (build it with bench/build-modules.sh)"
[ "$(id -u)" -eq 0 ] || die "must run as root (inside the guest)"

order=9
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
ui=/sys/kernel/debug/extfrag/unusable_index
ei=/sys/kernel/debug/extfrag/extfrag_index
[ -r "$ui" ] && [ -r "$ei" ] || die "no $ui / $ei (the kernel needs CONFIG_DEBUG_FS and CONFIG_COMPACTION)"
dbg=/sys/kernel/debug/afm_highalloc
mkdir -p "$out"
csv=$out/highalloc.csv
sum_csv=$out/highalloc_summary.csv
ptype_csv=$out/pagetypeinfo.csv

# The zone whose indices fill the u9/fi9 columns: most managed pages.
main_zone=$(awk '/^Node/ { z = $4 } $1 == "managed" && $2 > best { best = $2; m = z }
	END { print m }' /proc/zoneinfo)
[ -n "$main_zone" ] || die "no populated zone in /proc/zoneinfo"

# read_index FILE: per-zone order-$order values of a debugfs extfrag file
# ("Node 0, zone    DMA32 v0 v1 ... v10"), bash builtins only (it runs
# around every attempt, and forks are slow under TCG). Sets idx (main zone)
# and idx_all ("ZONE:V ZONE:V").
read_index() {
	local f
	idx= idx_all=
	while read -r -a f; do
		[ "${f[0]}" = Node ] || continue
		idx_all+="${idx_all:+ }${f[3]}:${f[$((4 + order))]}"
		[ "${f[3]}" = "$main_zone" ] && idx=${f[$((4 + order))]}
	done < "$1"
	return 0
}

# pagetypeinfo PHASE: the block-count sections of /proc/pagetypeinfo as CSV
# rows; the header comes from the kernel's migratetype names.
pagetypeinfo() {
	local hdr rows
	hdr=$(awk '/^Number of blocks type/ { printf "alloc,round,phase,kind,node,zone"
		for (i = 5; i <= NF; i++) printf ",%s", $i; printf "\n"; exit }' /proc/pagetypeinfo)
	[ -n "$hdr" ] || die "no block counts in /proc/pagetypeinfo"
	rows=$(awk -v a="$alloc" -v r="$round" -v ph="$1" '
		/^Number of blocks type/ { kind = "blocks"; next }
		/^Number of mixed blocks/ { kind = "mixed"; next }
		/^$/ || /^[A-Z]/ && $1 != "Node" { kind = ""; next }
		kind != "" && $1 == "Node" { node = $2; sub(",", "", node)
			printf "%s,%s,%s,%s,%s,%s", a, r, ph, kind, node, $4
			for (i = 5; i <= NF; i++) printf ",%s", $i; printf "\n" }
		' /proc/pagetypeinfo)
	if [ -s "$ptype_csv" ]; then
		[ "$(head -n 1 "$ptype_csv")" = "$hdr" ] ||
			die "$ptype_csv has another header than this kernel's migratetypes ($hdr)"
	else
		echo "$hdr" > "$ptype_csv"
	fi
	[ -z "$rows" ] || echo "$rows" >> "$ptype_csv"
}

vmstat_counters="compact_stall compact_fail compact_success compact_migrate_scanned compact_free_scanned pgmigrate_success allocstall_normal allocstall_dma32 pgsteal_direct"
# Counters absent from /proc/vmstat (CONFIG_VM_EVENT_COUNTERS=n, as in the
# tinyconfig guest) print as "-" and leave their summary columns empty.
vmstat_snapshot() {
	awk -v want=" $vmstat_counters " 'index(want, " " $1 " ") { v[$1] = $2 }
		END { n = split(want, w, " ")
			for (i = 1; i <= n; i++) printf "%s ", (w[i] in v) ? v[w[i]] : "-" }' /proc/vmstat
}

cleanup() {
	if [ -d "$dbg" ]; then
		echo all > "$dbg/release" 2>/dev/null || true
		rmmod afm_highalloc 2>/dev/null || true
	fi
}

[ -d "$dbg" ] && { echo "highalloc: unloading a module left from an earlier run" >&2; cleanup; }
sync
echo 3 > /proc/sys/vm/drop_caches
memtotal_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
attempts=$(( memtotal_kb / (4 << order) ))
[ -n "$max" ] && [ "$max" -lt "$attempts" ] && attempts=$max
pagetypeinfo before
vm0=$(vmstat_snapshot)

insmod "$ko" "order=$order" || die "cannot load $ko (built for another kernel? this one is $(uname -r))"
trap cleanup EXIT
[ -w "$dbg/attempt" ] || die "the module loaded but $dbg/attempt is missing"

[ -s "$csv" ] || echo "alloc,round,attempt,success,zone,ns,u9,u9_zone,fi9,u9_all,fi9_all" > "$csv"
exec {csvfd}>>"$csv"
ok_n=0 fail_n=0 fi_sum=0 fi_n=0 fi_neg=0 u9_first=
t0=$SECONDS
for ((i = 1; i <= attempts; i++)); do
	read_index "$ui"
	u9=$idx u9_all=$idx_all
	[ -n "$u9_first" ] || u9_first=$u9
	if echo 1 > "$dbg/attempt" 2>/dev/null; then ok=1; else ok=0; fi
	read -r last_ok last_zone last_ns < "$dbg/last"
	[ "$last_ok" = "$ok" ] || die "attempt $i: the write said $ok, $dbg/last says $last_ok"
	fi9= fi9_all=
	if [ "$ok" = 1 ]; then
		ok_n=$((ok_n + 1))
	else
		fail_n=$((fail_n + 1)); last_zone=
		read_index "$ei"
		fi9=$idx fi9_all=$idx_all
		# -1 means a free block of the order existed (the failure was the
		# watermarks', not fragmentation's): counted apart from the mean.
		# Summed in thousandths (the kernel prints three decimals).
		if [ "${fi9:0:1}" = - ]; then
			fi_neg=$((fi_neg + 1))
		elif [ -n "$fi9" ]; then
			fi_sum=$((fi_sum + 10#${fi9%.*} * 1000 + 10#${fi9#*.})) fi_n=$((fi_n + 1))
		fi
	fi
	printf '%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s\n' "$alloc" "$round" "$i" "$ok" "$last_zone" \
		"$last_ns" "$u9" "$main_zone" "$fi9" "$u9_all" "$fi9_all" >&"$csvfd"
done
exec {csvfd}>&-
secs=$((SECONDS - t0))
read_index "$ui"
u9_final=$idx
# The attempts leave almost nothing free: the loop above runs builtins only;
# before the first fork below, give back HIGHALLOC_HEADROOM_MB (the blocks
# obtained last) so that neither awk nor this script wakes the OOM killer.
echo $(( ${HIGHALLOC_HEADROOM_MB:-128} >> (order + 2 - 10) )) > "$dbg/release"
zone_allocs=$(awk '$1 == "zone" { printf "%s%s:%s", sep, $2, $3; sep = " " }' "$dbg/stats")
pagetypeinfo held
vm1=$(vmstat_snapshot)
echo all > "$dbg/release"
rmmod afm_highalloc
trap - EXIT

[ -s "$sum_csv" ] || echo "alloc,round,order,memtotal_kb,attempts,successes,failures,success_pct,u9_zone,u9_first,u9_final,fi9_mean_at_failure,fi9_failures_with_block,zone_allocs,seconds,${vmstat_counters// /,}" > "$sum_csv"
deltas=$(awk -v a="$vm0" -v b="$vm1" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
	for (i = 1; i <= n; i++) printf (x[i] == "-" || y[i] == "-") ? "," : ",%d", y[i] - x[i] }')
pct=$(awk -v s=$ok_n -v n="$attempts" 'BEGIN { printf "%.1f", n ? 100 * s / n : 0 }')
fimean=$(awk -v s=$fi_sum -v n=$fi_n 'BEGIN { if (n) printf "%.3f", s / n / 1000 }')
echo "$alloc,$round,$order,$memtotal_kb,$attempts,$ok_n,$fail_n,$pct,$main_zone,$u9_first,$u9_final,$fimean,$fi_neg,$zone_allocs,$secs$deltas" >> "$sum_csv"
echo "  highalloc: $ok_n of $attempts order-$order attempts succeeded ($pct%), U(9) $main_zone $u9_first -> $u9_final, mean fragmentation index at failure ${fimean:-n/a} ($fi_neg failures with a free order-$order block) (${secs}s)"
