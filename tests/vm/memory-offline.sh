#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM test of memory hot-remove with zram's pages in the blocks removed
# (run as root in a guest booted with movablecore=SIZE, through
# scripts/vm-run.sh: make vm-test-offline, in make check):
#
#   tests/vm/memory-offline.sh [--alloc LIST] [--mb N]
#
# For each allocator of LIST (default afmalloc/zspage,zsmalloc; zsmalloc
# is the control: where it fails, the set-up does, not afmalloc; make
# vm-test-offline boots once for each, as the blocks brought back online
# are given out last, so that a second allocator's pages would miss them),
# on a fresh zram0 (lz4): N MiB (default 96) of pages of every compressibility
# (generated from a seed: a random part of 16 bytes to a whole page, the
# rest repeated text) are written to the raw
# device and its page cache dropped, so that the pool holds them. zram asks
# for movable pages, which go to ZONE_MOVABLE first: the movable zone's
# used pages must have grown by at least a quarter of the pool's. They
# come from the zone's lowest blocks first (the kernel frees its memory to
# the tail of the free lists at boot, lowest address first; a block
# brought online also goes to the tail, hence a boot per allocator), so
# the pool lies in the blocks taken offline, not only in the top one. Then
# every online memory block of ZONE_MOVABLE without holes (the kernel
# refuses to take one with holes offline; /proc/iomem's System RAM ranges
# tell) is taken offline, one at a time (each within 120 s), which can
# only succeed if every used page in
# it is migrated: the pool's pages among them (as a CMA allocation or
# virtio-mem's unplug needs), while two readers read the whole device
# over and over (O_DIRECT), each pass compared with what was written, so
# that migrations meet zspages being read (afmalloc's migration then waits
# for the reads under way, keeping new ones out, as zsmalloc's does); any
# pass that differs fails the test. Afterwards every byte is read back from zram
# (O_DIRECT) and compared by SHA-256, the pool must still store what it
# stored, and for afmalloc its debugfs "migrate" row must count pages
# migrated (zsmalloc: /proc/vmstat pgmigrate_success must have grown). The
# blocks then go back online (online_movable) and the data is read back
# once more.
#
# Exit status: 0 passed; 1 a failure; 77 nothing to test here (no block of
# ZONE_MOVABLE: the guest was not booted with movablecore=, or its kernel
# lacks CONFIG_MEMORY_HOTREMOVE; or zram has no allocator selection),
# printed as "memory-offline: SKIP: ...".
set -euo pipefail

fail() { echo "memory-offline: FAIL: $*" >&2; exit 1; }
skip() { echo "memory-offline: SKIP: $*"; exit 77; }
say() { echo "memory-offline: $*"; }
allocs=afmalloc/zspage,zsmalloc mb=96
while [ $# -gt 0 ]; do
	case "$1" in
	--alloc) allocs=${2:?}; shift ;;
	--mb) mb=${2:?}; shift ;;
	-h|--help) sed -n '3,/^set -/p' "$0" | sed '$d'; exit 0 ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done

sys=/sys/block/zram0 mem=/sys/devices/system/memory dbg=/sys/kernel/debug
work=$(mktemp -d /tmp/memory-offline.XXXXXX)
trap 'touch "$work/stop"; wait; rm -rf "$work"' EXIT
[ -d $sys ] || modprobe zram num_devices=1 2>/dev/null || true
[ -d $sys ] || fail "no zram0"
[ -f $sys/allocator ] || skip "this zram has no allocator selection (patches/0002)"
mountpoint -q $dbg || mount -t debugfs none $dbg
[ -d $mem ] || skip "no $mem (CONFIG_MEMORY_HOTPLUG)"
# whole N: block N lies in one "System RAM" range of /proc/iomem (the
# kernel refuses to take a block with holes offline: the top one of the
# guest's RAM has some).
bs=$(( 16#$(cat $mem/block_size_bytes) ))
whole() {
	local lo=$(($1 * bs)) hi=$((($1 + 1) * bs - 1)) range _ what
	while read -r range _ what; do
		[ "$what" = "System RAM" ] || continue
		[ $((16#${range%-*})) -le $lo ] && [ $((16#${range#*-})) -ge $hi ] && return 0
	done < <(grep '^[0-9a-f]' /proc/iomem)
	return 1
}
blocks=() holes=()
for b in "$mem"/memory[0-9]*; do
	if [ "$(cat "$b/valid_zones" 2>/dev/null)" != Movable ] || [ "$(cat "$b/state")" != online ] ||
	   [ ! -w "$b/state" ]; then
		continue
	fi
	if whole "${b##*memory}"; then blocks+=("$b"); else holes+=("${b##*/}"); fi
done
[ ${#blocks[@]} -gt 0 ] ||
	skip "no online block of ZONE_MOVABLE without holes (boot with movablecore=; with holes: ${holes[*]:-none})"
say "${#blocks[@]} blocks of ZONE_MOVABLE, $((bs >> 20)) MiB each: ${blocks[*]##*/}${holes:+ (not ${holes[*]}: holes)}"

# movable_used: pages of ZONE_MOVABLE in use (managed - free; offline
# blocks are neither).
movable_used() {
	awk '$1 == "Node" && $3 == "zone" { z = $4 }
		z == "Movable" && $1 == "nr_free_pages" { f = $2 }
		z == "Movable" && $1 == "managed" { m = $2 }
		END { print m - f }' /proc/zoneinfo
}
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
mm() { awk -v f="$1" '{ print $f }' $sys/mm_stat; }
afm_row() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' $dbg/afmalloc/zram0/classes; }
# readback: SHA-256 of the device's first N MiB, read past the page cache.
readback() {
	dd if=/dev/zram0 bs=1M count="$mb" iflag=direct status=none | sha256sum | cut -d' ' -f1
}
# reader K: readback over and over, each pass compared with $sum, until
# $work/stop appears; then "passes mismatches" into $work/reader.K.
reader() {
	local n=0 bad=0
	while [ ! -e "$work/stop" ]; do
		if [ "$(readback)" = "$sum" ]; then n=$((n + 1)); else bad=$((bad + 1)); fi
	done
	echo "$n $bad" > "$work/reader.$1"
}
# generate: N MiB of pages to stdout, their SHA-256 to fd 3.
generate() {
	python3 - "$mb" 3>&- <<'EOF' | tee >(sha256sum | cut -d' ' -f1 >&3)
import random, sys
rnd = random.Random(20261207)
text = b"afmalloc memory offline test: a page of some text, repeated. " * 70
out = sys.stdout.buffer
for i in range(int(sys.argv[1]) * 256):
    k = rnd.randrange(16, 4097)
    out.write(rnd.randbytes(k) + text[:4096 - k])
EOF
}

for a in ${allocs//,/ }; do
	say "== $a"
	echo 1 > $sys/reset
	echo "$a" > $sys/allocator || fail "$a: zram refused it"
	grep -q "\[$a\]" $sys/allocator || fail "$a: zram0 uses $(cat $sys/allocator)"
	echo lz4 > $sys/comp_algorithm
	echo $((2 * mb))M > $sys/disksize
	sync; echo 3 > /proc/sys/vm/drop_caches
	used0=$(movable_used)
	sum=$( { generate | dd of=/dev/zram0 bs=1M iflag=fullblock oflag=direct status=none; } 3>&1 )
	[ -n "$sum" ] || fail "$a: writing the data failed"
	sync; echo 3 > /proc/sys/vm/drop_caches
	pages=$(( $(mm 3) / 4096 )) compr=$(mm 2) used1=$(movable_used)
	say "$a: wrote $mb MiB: mm_stat $(cat $sys/mm_stat); ZONE_MOVABLE used $used0 -> $used1 pages"
	[ "$pages" -gt 0 ] || fail "$a: the pool holds nothing"
	[ $((used1 - used0)) -ge $((pages / 4)) ] ||
		fail "$a: ZONE_MOVABLE took $((used1 - used0)) pages, under a quarter of the pool's $pages: nothing to test"
	mig0=$(vmstat pgmigrate_success) am0=0
	[ "$a" = zsmalloc ] || am0=$(afm_row migrate 2)
	rm -f "$work"/stop "$work"/reader.*
	for k in 1 2; do reader "$k" & done
	t0=$SECONDS
	for b in "${blocks[@]}"; do
		rc=0
		timeout 120 bash -c "echo offline > $b/state" || rc=$?
		if [ "$rc" != 0 ]; then
			dmesg | tail -n 20
			fail "$a: ${b##*/} did not go offline within 120 s (status $rc, 124: timed out; it reads $(cat "$b/state"); dmesg above)"
		fi
		[ "$(cat "$b/state")" = offline ] || fail "$a: ${b##*/} reads $(cat "$b/state")"
	done
	touch "$work/stop"
	wait
	passes=0
	for k in 1 2; do
		read -r n bad < "$work/reader.$k" || fail "$a: reader $k left no count"
		[ "$bad" = 0 ] || fail "$a: reader $k read data that differs in $bad of its $((n + bad)) passes while the blocks went offline"
		passes=$((passes + n))
	done
	say "$a: two readers read the device $passes times in all while the blocks went offline, every pass as written"
	mig=$(( $(vmstat pgmigrate_success) - mig0 ))
	say "$a: ${#blocks[@]} blocks offline in $((SECONDS - t0)) s; pgmigrate_success +$mig; ZONE_MOVABLE used $(movable_used) pages"
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(readback)" = "$sum" ] || fail "$a: data changed after the blocks went offline"
	[ "$(mm 2)" = "$compr" ] || fail "$a: the pool stores $(mm 2) bytes, $compr before"
	if [ "$a" = zsmalloc ]; then
		[ "$mig" -gt 0 ] || fail "$a: no page migrated: none of the pool's pages lay in the blocks"
	else
		am=$(( $(afm_row migrate 2) - am0 ))
		say "$a: afmalloc migrated $am of its pages (debugfs migrate row: $(afm_row migrate 2) $(afm_row migrate 3) $(afm_row migrate 4))"
		[ "$am" -gt 0 ] ||
			fail "$a: afmalloc migrated none of its pages: none of them lay in the blocks, or they went offline unmigrated"
	fi
	for b in "${blocks[@]}"; do
		echo online_movable > "$b/state" || fail "$a: ${b##*/} refused to come back online"
	done
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(readback)" = "$sum" ] || fail "$a: data changed after the blocks came back"
	say "$a: every byte read back after the offline and after the online"
	echo 1 > $sys/reset
done
say "PASS ($allocs)"
