#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The allocator microbenchmark, run inside the guest as root
# (bench/speed/run.sh boots the guest and calls it):
#   bench/speed/guest.sh --ko PATH --sizes CSV --out DIR [--runs N]
#                        [--duration-ms N] [--working-set N] [--seed N]
#                        [--sequential | --shared]
#
# Loads afm_speed.ko (bench/module/afm_speed.c, built by
# bench/build-modules.sh) N times (default 3), one run per load: gives it
# the size histogram (bench/data/sizes-lz4.csv, from bench/sizes.py), runs
# every case (zsmalloc, afmalloc/slab, afmalloc/zspage x alloc-map,
# alloc-copy, read-map, read-copy x 1 and nproc threads; see the module),
# reads the results and unloads it. Run r starts with allocator number
# (r - 1) % 3, so no allocator always goes first. --sequential: the timed
# operations take the objects in order, oldest first (the module's
# sequential parameter: fio's write and read shapes), not at random.
# --shared: the threads take their random objects from one working set
# (the module's shared parameter: frees and maps of objects allocated on
# another CPU, as zram's and zswap's are).
#
# Writes DIR/speed.csv (run,alloc,op,threads,ops_per_s,ns_per_op,ops) and
# DIR/speed-run<r>.txt (the module's raw results). Any failed case (a data
# mismatch, an allocation failure) fails the script: the module's write
# returns an error and its pr_err() lines are printed.
set -euo pipefail

die() { echo "speed-guest: error: $*" >&2; exit 1; }
usage() {
	echo "usage: $0 --ko PATH --sizes CSV --out DIR [--runs N] [--duration-ms N] [--working-set N] [--seed N] [--sequential | --shared]"
}

ko= sizes= out= runs=3 duration_ms=2000 working_set=4096 seed=1 sequential=0 shared=0
while [ $# -gt 0 ]; do
	case "$1" in
	--ko) ko=${2:?}; shift ;;
	--sizes) sizes=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--runs) runs=${2:?}; shift ;;
	--duration-ms) duration_ms=${2:?}; shift ;;
	--working-set) working_set=${2:?}; shift ;;
	--seed) seed=${2:?}; shift ;;
	--sequential) sequential=1 ;;
	--shared) shared=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
[ -n "$ko" ] && [ -n "$sizes" ] && [ -n "$out" ] || { usage >&2; die "--ko, --sizes and --out are required"; }
for v in runs duration_ms working_set seed; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive number"
done
[ "$sequential$shared" != 11 ] || die "--sequential and --shared exclude each other"
[ -f "$ko" ] || die "module $ko not found (build it with bench/build-modules.sh)"
[ -s "$sizes" ] || die "size histogram $sizes not found (make it with bench/sizes.py)"
[ "$(id -u)" -eq 0 ] || die "must run as root (inside the guest)"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
dbg=/sys/kernel/debug/afm_speed
mkdir -p "$out"
csv=$out/speed.csv
echo "run,alloc,op,threads,ops_per_s,ns_per_op,ops" > "$csv"
# The histogram as the module wants it: "<lo> <hi> <count>" lines.
hist=$(grep -v '^#' "$sizes" | awk -F, 'NR > 1 && NF == 3 { print $1, $2, $3 }')
[ -n "$hist" ] || die "$sizes has no size_lo,size_hi,count rows"

cleanup() { [ -d "$dbg" ] && rmmod afm_speed 2>/dev/null || true; }
[ -d "$dbg" ] && { echo "speed-guest: unloading a module left from an earlier run" >&2; cleanup; }
trap cleanup EXIT

echo "speed-guest: $runs run(s), ${duration_ms} ms per case, $working_set objects per thread$([ "$sequential" = 0 ] || echo ', taken in order')$([ "$shared" = 0 ] || echo ', one set shared by the threads'), $(nproc) CPUs"
for ((r = 1; r <= runs; r++)); do
	t0=$SECONDS
	insmod "$ko" "duration_ms=$duration_ms" "working_set=$working_set" "seed=$seed" \
		"rotate=$((r - 1))" "sequential=$sequential" "shared=$shared" || die "cannot load $ko (built for another kernel? this one is $(uname -r))"
	[ -w "$dbg/run" ] || die "the module loaded but $dbg/run is missing"
	# One write per line: the module takes complete lines only.
	exec {fd}> "$dbg/sizes"
	while read -r line; do
		echo "$line" >&"$fd" || die "the module refused the histogram line '$line'"
	done <<< "$hist"
	exec {fd}>&-
	if ! echo 1 > "$dbg/run"; then
		dmesg | grep 'afm_speed:' | tail -n 20 >&2
		die "run $r FAILED (data mismatch or allocation failure: kernel log above)"
	fi
	cat "$dbg/results" > "$out/speed-run$r.txt"
	rmmod afm_speed
	n=$(wc -l < "$out/speed-run$r.txt")
	[ "$n" -gt 0 ] || die "run $r produced no results"
	awk -v r="$r" 'NF == 7 { printf "%s,%s,%s,%s,%s,%s,%s\n", r, $1, $2, $3, $6, $7, $4 }' \
		"$out/speed-run$r.txt" >> "$csv"
	echo "speed-guest: run $r: $n cases in $((SECONDS - t0)) s"
	awk '{ printf "  %-16s %-10s threads %s: %12s ops/s %8s ns/op\n", $1, $2, $3, $6, $7 }' \
		"$out/speed-run$r.txt"
done
trap - EXIT
