#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# fio on zram, one device per allocator, run inside the guest as root
# (bench/fio/run.sh boots the guest and calls it):
#   bench/fio/guest.sh --out DIR [--alloc LIST] [--runs N] [--runtime SEC]
#                      [--size SIZE] [--shapes LIST] [--comp ALG]
#                      [--settle SEC]
#
# Configures one zram device per allocator (hot-added; allocator, then
# compressor, then the same disksize, all before any I/O), fills each
# device once with half-compressible data (bench/fio/zram.fio [fill]), then
# for every run, every shape and every allocator runs the [shape] job for
# --runtime seconds (the shape mixwrite: the [mix25] and [mix75] jobs
# together, random overwrites of changing compressibility). Allocator order rotates: run r starts with allocator
# number (r - 1) % N, so no allocator always goes first. After the last job
# every device is left idle --settle seconds (default 5) before its end row
# is read, so that each is read at least that long after its own last
# write whatever the order (what an allocator does by itself once writes
# stop, such as afmalloc/zspage's rest run a second after its last
# allocation, is then in it for all).
#
# Writes DIR/fio/run<r>-<alloc>-<shape>.json (fio's JSON output, "/" in the
# allocator name written as "-"), DIR/fio.csv (run, alloc, shape, dir, iops,
# bw_kib, clat_p50_us, clat_p99_us, io_mib; one row per direction, randrw
# has two), DIR/mm_stat.csv (each device's mm_stat after its fill and at
# the end, with slab_pages and held_bytes: every page the allocator holds,
# its slab caches included, as bench/untar-remove.sh counts them) and
# DIR/mm_samples.csv (every device's compressed bytes and memory held,
# once a second from the first fill to the end, with the job running then:
# so that the peak memory mm_stat reports can be set against the data held
# at that moment), and DIR/debugfs/ (each afmalloc pool's debugfs tables
# after its fill and after every job). A failed fio job (an I/O error)
# fails the script.
#
# An afmalloc allocator may carry module parameters, each "+NAME=VALUE"
# (afmalloc/zspage+zspage_auto_permille=20; bench/lib/afm-params.sh):
# written to /sys/module/afmalloc/parameters/NAME while its device's pool
# is made and while each of its jobs (the fill included) runs, the old
# value written back after each, so that a setting is measured beside the
# default and zsmalloc in one boot (a parameter read at run time, not when
# a pool is made, is also seen by the other pools, idle then but for the
# work they queued themselves). The full name labels its rows and files.
set -euo pipefail

die() { echo "fio-guest: error: $*" >&2; exit 1; }
usage() {
	echo "usage: $0 --out DIR [--alloc LIST] [--runs N] [--runtime SEC] [--size SIZE] [--shapes LIST] [--comp ALG] [--settle SEC]"
}
here=$(cd "$(dirname "$0")" && pwd)
jobfile=$here/zram.fio
out='' allocs=zsmalloc,afmalloc/zspage,afmalloc/slab runs=3 runtime=10 size=256M
shapes=write,read,randwrite,randread,randrw,mixwrite comp=lz4 settle=5
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?}; shift ;;
	--alloc) allocs=${2:?}; shift ;;
	--runs) runs=${2:?}; shift ;;
	--runtime) runtime=${2:?}; shift ;;
	--size) size=${2:?}; shift ;;
	--shapes) shapes=${2:?}; shift ;;
	--comp) comp=${2:?}; shift ;;
	--settle) settle=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
[ -n "$out" ] || { usage >&2; die "--out is required"; }
for v in runs runtime; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--$v must be a positive number"
done
[[ "$settle" =~ ^(0|[1-9][0-9]*)$ ]] || die "--settle must be a number of seconds, not '$settle'"
[[ "$size" =~ ^[1-9][0-9]*[MG]$ ]] || die "--size must look like 256M or 1G, not '$size'"
[ "$(id -u)" -eq 0 ] || die "must run as root (inside the guest)"
[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "runs inside a throw-away VM (scripts/vm-run.sh) only"
command -v fio >/dev/null || die "fio missing (bench/fio/run.sh installs it on the host)"
[ -f "$jobfile" ] || die "no job file $jobfile"
IFS=, read -r -a alist <<< "$allocs"
# shellcheck source=SCRIPTDIR/../lib/afm-params.sh
. "$here/../lib/afm-params.sh"
for a in "${alist[@]}"; do
	afm_check_alloc --guest "$a"
done
IFS=, read -r -a slist <<< "$shapes"
for s in "${slist[@]}"; do
	case "$s" in write|read|randwrite|randread|randrw|mixwrite) ;;
	*) die "unknown shape '$s' (known: write, read, randwrite, randread, randrw, mixwrite)" ;;
	esac
done

mkdir -p "$out/fio"
rm -f "$out"/fio/*.json "$out"/debugfs/*.txt
csv=$out/fio.csv mm=$out/mm_stat.csv
echo "run,alloc,shape,dir,iops,bw_kib,clat_p50_us,clat_p99_us,io_mib" > "$csv"
samples=$out/mm_samples.csv
echo "t_s,job,alloc,dev,compr_data_size,mem_used_total,mem_used_max,slab_pages,held_bytes" > "$samples"
echo "alloc,dev,when,orig_data_size,compr_data_size,mem_used_total,mem_limit,mem_used_max,same_pages,pages_compacted,huge_pages,huge_pages_since,slab_pages,held_bytes" > "$mm"
echo "fio-guest: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)," \
	"$(fio --version), $runs run(s) x ${#alist[@]} allocator(s) x ${#slist[@]} shape(s) x $runtime s, $size per device, $comp"

[ -r /sys/class/zram-control/hot_add ] || modprobe zram 2>/dev/null || true
[ -r /sys/class/zram-control/hot_add ] || die "no /sys/class/zram-control/hot_add (zram missing?)"

# config_dev DEV ALLOC: allocator, compressor, disksize (the pool made
# with ALLOC's module parameters).
config_dev() {
	local sys=/sys/block/$1 cur b
	b=$(afm_base "$2")
	[ -f "$sys/allocator" ] || die "this kernel's zram has no allocator selection (build it with patches/)"
	echo "$b" > "$sys/allocator" || die "$1: allocator '$b' refused (offered: $(cat "$sys/allocator"))"
	cur=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$sys/allocator")
	[ "$cur" = "$b" ] || die "selected '$b' but $1 uses '$cur'"
	echo "$comp" > "$sys/comp_algorithm" || die "$1: compressor '$comp' refused"
	afm_set_params "$2"
	echo "$size" > "$sys/disksize" || die "cannot initialise $1 on '$2' (see dmesg)"
	afm_restore_params
}
# slabs, held: every page each device's allocator holds (see there).
# shellcheck source=SCRIPTDIR/../lib/zram-held.sh
. "$here/../lib/zram-held.sh"
# sampler: once a second, one row per device of mm_samples.csv (t_s, the
# job running (run, allocator, shape; "-" between jobs), alloc, dev,
# compr_data_size, mem_used_total, mem_used_max, slab_pages, held_bytes),
# read with builtins but for one awk over /proc/slabinfo and sleep. The
# job is taken from the file $jobf.
sampler() {
	local t0=${EPOCHREALTIME/./} job i f ms
	while :; do
		read -r job < "$jobf" || job=-
		ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
		slabs
		for i in "${!alist[@]}"; do
			read -r -a f < "/sys/block/${devs[$i]}/mm_stat" || continue
			held "${alist[$i]}" "${devs[$i]}" "${f[2]}"
			printf '%d.%03d,%s,%s,%s,%s,%s,%s,%s,%s\n' $((ms / 1000)) $((ms % 1000)) \
				"$job" "${alist[$i]}" "${devs[$i]}" "${f[1]}" "${f[2]}" "${f[4]}" \
				"$meta" "$held"
		done >> "$samples"
		sleep 1
	done
}
jobf=$(mktemp)
set_job() { echo "$1" > "$jobf"; }
# keep_debugfs ALLOC DEV NAME: the afmalloc pool's debugfs tables (the
# zspage store's hole, tail, reuse and compaction counters) after a job,
# into DIR/debugfs/NAME-<file>.txt; nothing for zsmalloc.
keep_debugfs() {
	local d=/sys/kernel/debug/afmalloc/$2 f
	[ -d "$d" ] || return 0
	mkdir -p "$out/debugfs"
	for f in pool classes; do
		[ -r "$d/$f" ] && cat "$d/$f" > "$out/debugfs/$3-$f.txt"
	done
	return 0
}
mm_row() {  # mm_row ALLOC DEV WHEN
	local f
	read -r -a f < "/sys/block/$2/mm_stat"
	slabs
	held "$1" "$2" "${f[2]}"
	echo "$1,$2,$3,$(IFS=,; echo "${f[*]:0:9}"),$meta,$held" >> "$mm"
}
# run_fio SECTIONS DEV RW JSON: one fio call running the job file's
# SECTIONS (comma-separated) together, its JSON to a file.
run_fio() {
	local secs=() s
	IFS=, read -r -a s <<< "$1"
	secs=("${s[@]/#/--section=}")
	FIO_DEV=/dev/$2 FIO_SIZE=$size FIO_RW=$3 FIO_RUNTIME=$runtime \
		fio "${secs[@]}" --output-format=json --output="$4" "$jobfile" ||
		{ cat "$4" >&2 2>/dev/null || true; die "fio $1 $3 on /dev/$2 failed"; }
}
# to_csv RUN ALLOC SHAPE JSON [ALLOC SHAPE JSON]...: rows for fio.csv on
# stdout (one python start per run: it costs seconds under TCG); fails on
# a job that reports an error or moved no data.
to_csv() {
	python3 - "$@" <<'PY'
import json, sys
run, args = sys.argv[1], sys.argv[2:]
for alloc, shape, path in zip(args[0::3], args[1::3], args[2::3]):
    j = json.load(open(path))["jobs"][0]
    if j.get("error"):
        sys.exit(f"fio-guest: error: {path}: fio error {j['error']}")
    rows = 0
    for d in ("read", "write"):
        x = j[d]
        if not x["io_bytes"]:
            continue
        rows += 1
        p = x["clat_ns"].get("percentile", {})
        print(f"{run},{alloc},{shape},{d},{x['iops']:.1f},{x['bw']},"
              f"{p.get('50.000000', 0) / 1000:.1f},{p.get('99.000000', 0) / 1000:.1f},"
              f"{x['io_bytes'] / 1048576:.1f}")
    if not rows:
        sys.exit(f"fio-guest: error: {path}: no I/O")
PY
}

devs=()
for a in "${alist[@]}"; do
	d=zram$(cat /sys/class/zram-control/hot_add)
	config_dev "$d" "$a"
	devs+=("$d")
done
set_job -
sampler &
sampler_pid=$!
trap 'kill "$sampler_pid" 2>/dev/null || true; rm -f "$jobf"; afm_restore_params' EXIT
for i in "${!alist[@]}"; do
	t0=$SECONDS
	set_job "0 ${alist[$i]} fill"
	afm_set_params "${alist[$i]}"
	run_fio fill "${devs[$i]}" write "$out/fio/fill-${alist[$i]//\//-}.json"
	afm_restore_params
	set_job -
	mm_row "${alist[$i]}" "${devs[$i]}" fill
	keep_debugfs "${alist[$i]}" "${devs[$i]}" "fill-${alist[$i]//\//-}"
	echo "fio-guest: ${alist[$i]} on ${devs[$i]}: filled $size in $((SECONDS - t0)) s, mm_stat $(cat "/sys/block/${devs[$i]}/mm_stat")"
done

n=${#alist[@]}
for ((r = 1; r <= runs; r++)); do
	t0=$SECONDS
	order=()
	for ((k = 0; k < n; k++)); do order+=($(((r - 1 + k) % n))); done
	jobs=()
	for s in "${slist[@]}"; do
		for i in "${order[@]}"; do
			a=${alist[$i]}
			json=$out/fio/run$r-${a//\//-}-$s.json
			sec=shape
			[ "$s" != mixwrite ] || sec=mix25,mix75
			set_job "$r $a $s"
			afm_set_params "$a"
			run_fio "$sec" "${devs[$i]}" "$s" "$json"
			afm_restore_params
			set_job -
			keep_debugfs "$a" "${devs[$i]}" "run$r-${a//\//-}-$s"
			jobs+=("$a" "$s" "$json")
		done
	done
	to_csv "$r" "${jobs[@]}" > "$out/fio-run$r.csv" || die "run $r: a fio job failed (above)"
	cat "$out/fio-run$r.csv" >> "$csv"
	awk -F, '{ printf "  run %s %-16s %-9s %-5s %9.0f IOPS %8d KiB/s clat p50 %7.1f us p99 %8.1f us\n",
		$1, $2, $3, $4, $5, $6, $7, $8 }' "$out/fio-run$r.csv"
	rm -f "$out/fio-run$r.csv"
	echo "fio-guest: run $r (first: ${alist[${order[0]}]}) done in $((SECONDS - t0)) s"
done
echo "fio-guest: every device idle for $settle s before the end rows"
sleep "$settle"
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
trap - EXIT
rm -f "$jobf"
for i in "${!alist[@]}"; do
	mm_row "${alist[$i]}" "${devs[$i]}" end
done
echo "fio-guest: $(($(wc -l < "$csv") - 1)) rows in $csv"
