#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A small zram device written from every CPU, run inside the guest as root
# (bench/smallpool/run.sh boots a guest with many vCPUs and calls it):
#   bench/smallpool/guest.sh --out DIR --data FILE [--kib N] [--rounds N]
#
# What a pool that stores little costs when its writes come from many
# CPUs (a phone's zram, zswap at low pressure, a small zram device on a
# large server): each of zsmalloc, afmalloc/zspage (a new pool allocates in
# one shard and takes more when allocations wait for a shard's lock) and
# afmalloc/zspage with afmalloc.zspage_shards_grow=N (every shard active
# from the start, one per CPU) gets a new zram device (lz4, 64 MiB), and
#   seq: every CPU in turn writes N KiB of FILE (real data) to its own part
#        of the device (taskset, O_DIRECT), one CPU after the other: no
#        two allocations at once;
#   par: on a second new device, every CPU writes its part at the same
#        time, so that allocations meet on a shard's lock.
# After each, the device's mm_stat and every page its allocator holds
# (bench/lib/zram-held.sh: metadata slab caches included) go to
# DIR/smallpool.csv (round, mode, alloc, grow, dev, cpus, orig_data_size,
# compr_data_size, mem_used_total, slab_pages, held_bytes,
# shards_active: afmalloc's debugfs "shards" row, its fourth column,
# aux_bytes: afmalloc's kmalloc'd structures, debugfs "pool" aux_bytes, not
# in held_bytes, as zsmalloc's kmalloc'd pool and class structures are
# not, which nothing shows), and
# every byte is read back and compared (a mismatch fails the script).
# Rounds rotate the allocator order.
set -euo pipefail

die() { echo "smallpool-guest: error: $*" >&2; exit 1; }
usage() {
	echo "usage: $0 --out DIR --data FILE [--kib N] [--rounds N]"
}
here=$(cd "$(dirname "$0")" && pwd)
out='' data='' kib=256 rounds=3
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?}; shift ;;
	--data) data=${2:?}; shift ;;
	--kib) kib=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
if [ -z "$out" ] || [ -z "$data" ]; then usage >&2; die "--out and --data are required"; fi
for v in kib rounds; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--$v must be a positive number"
done
[ $((kib % 4)) -eq 0 ] || die "--kib must be a multiple of 4 (whole pages)"
[ "$(id -u)" -eq 0 ] || die "must run as root (inside the guest)"
[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "runs inside a throw-away VM (scripts/vm-run.sh) only"
cpus=$(nproc)
pages=$((kib / 4))
[ "$(stat -c %s "$data")" -ge $((cpus * kib * 1024)) ] ||
	die "$data holds less than $cpus x $kib KiB"
param=/sys/module/afmalloc/parameters/zspage_shards_grow
[ -w "$param" ] || die "no $param (afmalloc built without the active shards?)"
[ -r /sys/class/zram-control/hot_add ] || modprobe zram 2>/dev/null || true
[ -r /sys/class/zram-control/hot_add ] || die "no /sys/class/zram-control/hot_add (zram missing?)"
# slabs, held: every page each device's allocator holds (see there).
# shellcheck source=SCRIPTDIR/../lib/zram-held.sh
. "$here/../lib/zram-held.sh"

csv=$out/smallpool.csv
echo "round,mode,alloc,grow,dev,cpus,orig_data_size,compr_data_size,mem_used_total,slab_pages,held_bytes,shards_active,aux_bytes" > "$csv"
echo "smallpool-guest: $(uname -r), $cpus CPUs, $kib KiB a CPU, $rounds round(s), data $data"

# write_part DEV CPU: CPU's part of FILE to the same place of DEV.
write_part() {
	taskset -c "$2" dd if="$data" of="/dev/$1" bs=4096 count=$pages \
		skip=$(($2 * pages)) seek=$(($2 * pages)) oflag=direct status=none
}
# one ROUND MODE ALLOC GROW: a new device, written in MODE, counted,
# checked and removed.
one() {
	local round=$1 mode=$2 alloc=$3 grow=$4 d sys c f active='' aux=''
	echo "$grow" > "$param"
	d=zram$(cat /sys/class/zram-control/hot_add)
	sys=/sys/block/$d
	echo "$alloc" > "$sys/allocator" || die "$d: allocator '$alloc' refused"
	echo lz4 > "$sys/comp_algorithm" || die "$d: lz4 refused"
	echo 64M > "$sys/disksize" || die "cannot initialise $d on '$alloc'"
	if [ "$mode" = seq ]; then
		for ((c = 0; c < cpus; c++)); do
			write_part "$d" "$c" || die "$d: write from CPU $c failed"
		done
	else
		local pids=()
		for ((c = 0; c < cpus; c++)); do
			write_part "$d" "$c" & pids+=($!)
		done
		for c in "${pids[@]}"; do
			wait "$c" || die "$d: a parallel write failed"
		done
	fi
	sync
	read -r -a f < "$sys/mm_stat"
	slabs
	held "$alloc" "$d" "${f[2]}"
	if [ "$alloc" != zsmalloc ]; then
		active=$(awk '$1 == "shards" { print $5 }' "/sys/kernel/debug/afmalloc/$d/classes")
		aux=$(awk '$1 == "aux_bytes" { print $2 }' "/sys/kernel/debug/afmalloc/$d/pool")
	fi
	echo "$round,$mode,$alloc,$grow,$d,$cpus,${f[0]},${f[1]},${f[2]},$meta,$held,$active,$aux" >> "$csv"
	echo "smallpool-guest: round $round $mode $alloc grow=$grow: $((f[1] / 1024)) KiB compressed, $((held / 1024)) KiB held${active:+, $active shard(s) active}"
	cmp -n $((cpus * kib * 1024)) "/dev/$d" "$data" || die "$d: data read back differs"
	idle_write "$sys/reset" 1
	idle_write /sys/class/zram-control/hot_remove "${d#zram}"
}
# idle_write FILE VALUE: udev's probe of a new or written device holds it
# open for a moment (tests/vm/bad-input.sh idle_try), and zram refuses a
# reset or hot_remove meanwhile: wait for udev, up to 10 times.
idle_write() {
	local n
	for ((n = 0; n < 10; n++)); do
		udevadm settle 2>/dev/null || true
		{ echo "$2" > "$1"; } 2>/dev/null && return 0
		sleep 0.2
	done
	die "writing '$2' to $1 refused 10 times"
}

configs=("zsmalloc Y" "afmalloc/zspage Y" "afmalloc/zspage N")
old=$(cat "$param")
for ((r = 1; r <= rounds; r++)); do
	for mode in seq par; do
		for ((i = 0; i < ${#configs[@]}; i++)); do
			read -r a g <<< "${configs[$(((i + r - 1) % ${#configs[@]}))]}"
			one "$r" "$mode" "$a" "$g"
		done
	done
done
echo "$old" > "$param"
echo "smallpool-guest: done"
