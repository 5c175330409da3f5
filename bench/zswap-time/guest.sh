#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# zswap timing, run inside the guest as root (bench/zswap-time/run.sh boots
# the guest and calls it):
#   bench/zswap-time/guest.sh --load BIN --out DIR (--module KO | --builtin)
#                             [--runs N] [--mb N] [--limit-mb N] [--passes N]
#
# The workload is tests/vm/zswap-test.sh's checksummed program (BIN, built
# by tests/vm/zswap-stock.sh --print-load): in a cgroup v2 with memory.max =
# --limit-mb it writes --mb MiB of pages (4x the limit by default), rewrites
# half of them on each later pass, stops, and then verifies every byte.
# Swap: a zram disk (zsmalloc, lz4) behind zswap (lz4, max_pool_percent
# 100), as in the test. zswap.zpool is switched at run time between
# afmalloc and zsmalloc; run r does afmalloc first when r is odd, zsmalloc
# first when it is even. Before each workload: swap drained (swapoff,
# swapon), page cache dropped, memory compacted.
#
# Timed (wall clock, date +%s.%N): from the start to the stop (write_s)
# and from the resume to the exit (verify_s; every page read back, most
# from zswap); while it is stopped the test samples what zswap holds
# (Zswap, Zswapped, stored_pages, pool_total_size), which is not timed.
# zswpout/zswpin/zswpwb: the workload's own cgroup's memory.stat (a new
# cgroup per workload; /proc/vmstat has no events without
# CONFIG_VM_EVENT_COUNTERS, which the project's guest kernel lacks).
#
# Writes DIR/zswap-time.csv, one row per run and allocator. Fails when the
# workload fails its verification or zswap held less than a quarter of the
# working set (the timing would not measure zswap).
set -euo pipefail

die() { echo "zswap-time-guest: error: $*" >&2; dmesg | tail -n 20 >&2; exit 1; }
note() { echo "zswap-time-guest: $*"; }
usage() {
	echo "usage: $0 --load BIN --out DIR (--module KO | --builtin) [--runs N] [--mb N] [--limit-mb N] [--passes N]"
}

load= out= module= builtin=0 runs=4 mb=128 limit_mb=32 passes=2
while [ $# -gt 0 ]; do
	case "$1" in
	--load) load=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--module) module=${2:?}; shift ;;
	--builtin) builtin=1 ;;
	--runs) runs=${2:?}; shift ;;
	--mb) mb=${2:?}; shift ;;
	--limit-mb) limit_mb=${2:?}; shift ;;
	--passes) passes=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
[ -x "$load" ] || die "workload binary '$load' missing (--load)"
[ -n "$out" ] || die "--out is required"
[ -n "$module" ] || [ "$builtin" = 1 ] || die "give --module KO or --builtin"
[ -z "$module" ] || [ -f "$module" ] || die "module $module not found"
for v in runs mb limit_mb passes; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive number"
done
[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "runs inside a throw-away VM (scripts/vm-run.sh) only"

zs=/sys/module/zswap/parameters
dbg=/sys/kernel/debug
cg=/sys/fs/cgroup
[ -d $zs ] || die "this kernel has no zswap"
mountpoint -q $dbg || mount -t debugfs none $dbg
if ! [ -f $cg/cgroup.controllers ]; then
	mountpoint -q $cg && umount $cg 2>/dev/null || true
	mkdir -p $cg && mount -t cgroup2 none $cg
fi
grep -qw memory $cg/cgroup.controllers || die "no memory controller in cgroup v2"
note "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)," \
	"$runs run(s), $mb MiB in a $limit_mb MiB cgroup, $passes pass(es)"

# Swap device: zram0, zsmalloc, lz4 (see tests/vm/zswap-test.sh).
[ -e /sys/class/zram-control ] || modprobe zram num_devices=1 || die "no zram"
[ -e /sys/block/zram0 ] || die "no zram0"
zdev=/dev/zram0
echo 1 > /sys/block/zram0/reset
echo lz4 > /sys/block/zram0/comp_algorithm 2>/dev/null || true
echo 2G > /sys/block/zram0/disksize
mkswap -q $zdev >/dev/null
swapon $zdev

echo 0 > $zs/enabled
echo lz4 > $zs/compressor 2>/dev/null || note "lz4 unavailable, compressor $(cat $zs/compressor)"
echo 100 > $zs/max_pool_percent
if [ -n "$module" ]; then
	grep -qw afmalloc /proc/modules || insmod "$module" || die "insmod $module"
	note "loaded $module"
fi
[ -f /sys/module/afmalloc/parameters/zswap_store ] || die "no afmalloc zpool driver"
note "afmalloc zswap_store=$(cat /sys/module/afmalloc/parameters/zswap_store)"

echo +memory > $cg/cgroup.subtree_control 2>/dev/null || true

set_zpool() {
	echo "$1" > $zs/zpool || return 1
	[ "$(cat $zs/zpool)" = "$1" ]
}
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
kb() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
mstat() { awk -v k="$1" '$1 == k { print $2 }' "$2/memory.stat"; }
state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || true; }
drain() {
	swapoff $zdev || die "swapoff"
	swapon $zdev || die "swapon"
}

mkdir -p "$out"
csv=$out/zswap-time.csv
echo "run,alloc,position,write_s,verify_s,wall_s,stored_pages,pool_total_size,zswap_kb,zswapped_kb,ratio,zswpout,zswpin,zswpwb,written_back,reject_alloc_fail,reject_compress_poor" > "$csv"
min=$(( (mb << 8) / 4 ))

# one RUN ALLOC POSITION: time one workload with zswap on ALLOC.
one() {
	local r=$1 a=$2 pos=$3 t0 t1 t2 t3 pid st c=$cg/afm-time-$1-$3
	local zo zi po pi wb raf rcp stored pool zswap zswapped i ws vs
	set_zpool "$a" || die "cannot switch zswap.zpool to $a"
	echo 1 > $zs/enabled
	[ "$(cat $zs/zpool)" = "$a" ] || die "zswap fell back to $(cat $zs/zpool)"
	sync; echo 3 > /proc/sys/vm/drop_caches
	[ -w /proc/sys/vm/compact_memory ] && echo 1 > /proc/sys/vm/compact_memory
	mkdir "$c" || die "cannot create the cgroup $c"
	echo $((limit_mb << 20)) > "$c/memory.max"
	wb=$(cat $dbg/zswap/written_back_pages) raf=$(cat $dbg/zswap/reject_alloc_fail)
	rcp=$(cat $dbg/zswap/reject_compress_poor)
	t0=$(now)
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$c" "$load" "$mb" "$passes" stop &
	pid=$!
	# Until it stops (or dies): 0.05 s steps, at most 1200 s.
	for ((i = 0; i < 24000; i++)); do
		st=$(state $pid)
		[ "$st" = T ] || [ -z "$st" ] || [ "$st" = Z ] && break
		sleep 0.05
	done
	t1=$(now)
	[ "$(state $pid)" = T ] || { wait $pid || true; die "run $r $a: the workload died or hung before its stop (OOM? dmesg above)"; }
	stored=$(cat $dbg/zswap/stored_pages) pool=$(cat $dbg/zswap/pool_total_size)
	zswap=$(kb Zswap) zswapped=$(kb Zswapped)
	t2=$(now)
	kill -CONT $pid
	wait $pid || die "run $r $a: the workload failed its verification (status $?)"
	t3=$(now)
	[ "$stored" -ge "$min" ] || die "run $r $a: zswap stored only $stored pages (< $min): not a zswap timing"
	ws=$(sub "$t0" "$t1") vs=$(sub "$t2" "$t3")
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$r" "$a" "$pos" \
		"$ws" "$vs" "$(sub 0 "$(awk -v a="$ws" -v b="$vs" 'BEGIN { print a + b }')")" \
		"$stored" "$pool" "$zswap" "$zswapped" \
		"$(awk -v a="$zswapped" -v b="$zswap" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" \
		"$(mstat zswpout "$c")" "$(mstat zswpin "$c")" "$(mstat zswpwb "$c")" \
		$(( $(cat $dbg/zswap/written_back_pages) - wb )) \
		$(( $(cat $dbg/zswap/reject_alloc_fail) - raf )) \
		$(( $(cat $dbg/zswap/reject_compress_poor) - rcp )) >> "$csv"
	tail -n 1 "$csv" | awk -F, '{
		printf "zswap-time-guest: run %s %-8s (%s): write %6.2f s verify %6.2f s wall %6.2f s;", $1, $2, $3, $4, $5, $6
		printf " stored_pages %s Zswap %s kB Zswapped %s kB ratio %s;", $7, $9, $10, $11
		printf " zswpout %s zswpin %s zswpwb %s\n", $12, $13, $14 }'
	drain
	rmdir "$c" 2>/dev/null || true
}

for ((r = 1; r <= runs; r++)); do
	if [ $((r % 2)) = 1 ]; then order=(afmalloc zsmalloc); else order=(zsmalloc afmalloc); fi
	one "$r" "${order[0]}" first
	one "$r" "${order[1]}" second
done
set_zpool zsmalloc || true
echo 0 > $zs/enabled
swapoff $zdev
note "$(($(wc -l < "$csv") - 1)) rows in $csv"
