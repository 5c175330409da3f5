#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM test of memory hot-remove with zram's pages in the blocks removed
# (run as root in a guest booted with movablecore=SIZE, through
# scripts/vm-run.sh: make vm-test-offline, in make check):
#
#   tests/vm/memory-offline.sh [--alloc LIST] [--mb N] [--zswap-mb M]
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
# every online memory block of ZONE_MOVABLE without holes or reserved
# pages (the kernel refuses to take such a block offline; /proc/iomem's
# System RAM ranges and /proc/kpageflags tell) is taken offline, one at a
# time (each within 300 s: offlining retries until every page has moved,
# as fast as the host lets it), which can only succeed if every used page in
# it is migrated: the pool's pages among them (as a CMA allocation or
# virtio-mem's unplug needs), while two readers read the whole device
# over and over (O_DIRECT), each pass compared with what was written, so
# that migrations meet zspages being read (afmalloc's migration then waits
# for the reads under way, keeping new ones out, as zsmalloc's does); any
# pass that differs fails the test. In the same boot the allocator also
# serves zswap (afmalloc as zswap's zpool, its zswap_store the store of
# LIST; swap on a second zram device, on zsmalloc): a
# process in a memory cgroup of M/2 MiB (zswap's pool is charged to it
# too) fills M MiB (default 64, at least 8; 0: no zswap part) of pages (a random part
# of 16 bytes to half a page, the rest text), so that most of them go to
# zswap, and while the blocks go offline it checks all of its pages
# against their SHA-1 over and over and rewrites a quarter of them after
# each pass (swap-ins load and free zswap's objects, swap-outs store new
# ones, of new sizes); a pass that differs fails the test, and there must
# have been swap-ins from zswap while the blocks went offline. Afterwards every byte is read back from zram
# (O_DIRECT) and compared by SHA-256, the pool must still store what it
# stored, and for afmalloc the debugfs "migrate" rows of its zram pool and
# of its zswap pool must count pages migrated (zsmalloc:
# /proc/vmstat pgmigrate_success must have grown). The
# blocks then go back online (online_movable) and the data is read back
# once more.
#
# Exit status: 0 passed; 1 a failure; 77 nothing to test here (no block of
# ZONE_MOVABLE to take offline: the guest was not booted with movablecore=,
# or its kernel lacks CONFIG_MEMORY_HOTREMOVE or /proc/kpageflags; or zram
# has no allocator selection),
# printed as "memory-offline: SKIP: ...".
set -euo pipefail

fail() { echo "memory-offline: FAIL: $*" >&2; exit 1; }
skip() { echo "memory-offline: SKIP: $*"; exit 77; }
say() { echo "memory-offline: $*"; }
allocs=afmalloc/zspage,zsmalloc mb=96 zmb=64 zpool='' swapdev=''
while [ $# -gt 0 ]; do
	case "$1" in
	--alloc) allocs=${2:?}; shift ;;
	--mb) mb=${2:?}; shift ;;
	--zswap-mb) zmb=${2:?}; shift ;;
	-h|--help) sed -n '3,/^set -/p' "$0" | sed '$d'; exit 0 ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done

[[ "$mb" =~ ^[1-9][0-9]*$ ]] || fail "--mb $mb: a number of MiB, at least 1"
[[ "$zmb" =~ ^(0|[1-9][0-9]+|[89])$ ]] || fail "--zswap-mb $zmb: 0 or a number of MiB, at least 8"
sys=/sys/block/zram0 mem=/sys/devices/system/memory dbg=/sys/kernel/debug
zsw=/sys/module/zswap/parameters cg=/sys/fs/cgroup/afm-memory-offline
work=$(mktemp -d /tmp/memory-offline.XXXXXX)
cleanup() {
	touch "$work/stop"
	wait
	if [ -n "$swapdev" ]; then
		swapoff "/dev/$swapdev" 2>/dev/null
		echo 1 > "/sys/block/$swapdev/reset" 2>/dev/null
	fi
	rmdir "$cg" 2>/dev/null
	rm -rf "$work"
}
trap 'cleanup || true' EXIT
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
# reserved N: how many pages of block N are reserved (/proc/kpageflags'
# KPF_RESERVED, bit 32): memory the kernel took at boot, which it cannot
# move, so that it refuses to take the block offline (-EBUSY, "unmovable
# page"). ZONE_MOVABLE can hold some: the KASAN kernel with 4 vCPUs had
# a page reserved at the top of the guest's second-highest block.
reserved() {
	python3 - "$1" "$bs" <<'EOF'
import os, struct, sys
n = int(sys.argv[2]) // os.sysconf("SC_PAGE_SIZE")
with open("/proc/kpageflags", "rb") as f:
    f.seek(int(sys.argv[1]) * n * 8)
    flags = f.read(n * 8)
print(sum(v >> 32 & 1 for (v,) in struct.iter_unpack("<Q", flags)))
EOF
}
[ -r /proc/kpageflags ] || skip "no /proc/kpageflags (CONFIG_PROC_PAGE_MONITOR) to find reserved pages with"
blocks=() holes=() busy=()
for b in "$mem"/memory[0-9]*; do
	if [ "$(cat "$b/valid_zones" 2>/dev/null)" != Movable ] || [ "$(cat "$b/state")" != online ] ||
	   [ ! -w "$b/state" ]; then
		continue
	fi
	if ! whole "${b##*memory}"; then
		holes+=("${b##*/}")
	elif [ "$(reserved "${b##*memory}")" != 0 ]; then
		busy+=("${b##*/}: $(reserved "${b##*memory}") reserved pages")
	else
		blocks+=("$b")
	fi
done
[ ${#blocks[@]} -gt 0 ] ||
	skip "no online block of ZONE_MOVABLE without holes or reserved pages (boot with movablecore=; with holes: ${holes[*]:-none}; with reserved pages: ${busy[*]:-none})"
say "${#blocks[@]} blocks of ZONE_MOVABLE, $((bs >> 20)) MiB each: ${blocks[*]##*/}${holes:+ (not ${holes[*]}: holes)}${busy:+ (not ${busy[*]})}"

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
# afm_row KEY FIELD [POOL]: a field of a row of an afmalloc pool's debugfs
# classes (default: zram0's).
afm_row() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$dbg/afmalloc/${3:-zram0}/classes"; }
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

# The zswap part: zsw_setup once (swap on a second zram device, a memory
# cgroup), then for each allocator zsw_start (zswap's zpool, the hog
# started and its pages stored) and the hog's result after the offlining.
zsw_setup() {
	[ "$zmb" -gt 0 ] || return 0
	if [ ! -d $zsw ]; then
		say "no zswap in this kernel: zram only"
		zmb=0
		return 0
	fi
	swapdev=zram$(cat /sys/class/zram-control/hot_add) || fail "no second zram device for swap"
	[ ! -f "/sys/block/$swapdev/allocator" ] || echo zsmalloc > "/sys/block/$swapdev/allocator"
	echo $((2 * zmb))M > "/sys/block/$swapdev/disksize"
	mkswap -q "/dev/$swapdev" >/dev/null || fail "mkswap /dev/$swapdev"
	swapon "/dev/$swapdev" || fail "swapon /dev/$swapdev"
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	mkdir -p $cg
	echo $((zmb / 2))M > $cg/memory.max || fail "no memory cgroup"
	echo lz4 > $zsw/compressor
	[ ! -w $zsw/shrinker_enabled ] || echo N > $zsw/shrinker_enabled
}
# The hog: fills its pages, then checks all of them against their SHA-1
# and rewrites every fourth (a different quarter each time) until
# $work/stop appears; "passes failed-passes pages-that-differed" into
# $work/hog.out.
hog_py='
import hashlib, mmap, os, random, sys
work, page = sys.argv[2], mmap.PAGESIZE
n = int(sys.argv[1]) * (1 << 20) // page
text = b"afmalloc memory offline test, zswap: some text, repeated. " * (page // 32)
rnd = random.Random(20261208)
mem = mmap.mmap(-1, n * page)
sums = [b""] * n
def put(i):
    k = rnd.randrange(16, page // 2 + 1)
    d = rnd.randbytes(k) + text[:page - k]
    mem[i * page:(i + 1) * page] = d
    sums[i] = hashlib.sha1(d).digest()
for i in range(n):
    put(i)
open(work + "/hog.ready", "w").close()
passes = bad = pages = 0
while not os.path.exists(work + "/stop"):
    d = sum(hashlib.sha1(mem[i * page:(i + 1) * page]).digest() != sums[i] for i in range(n))
    passes, bad, pages = passes + (d == 0), bad + (d > 0), pages + d
    for i in range((passes + bad) % 4, n, 4):
        put(i)
with open(work + "/hog.out", "w") as f:
    f.write("%d %d %d\n" % (passes, bad, pages))
'
# zsw_start ALLOC: zswap's zpool to ALLOC's, the hog started in the cgroup
# (charged from its first page: it enters, then execs) and waited for
# until it has filled its pages; sets $zpool (afmalloc's pool's debugfs
# name) and $zin0.
zsw_start() {
	local a=$1 z=zsmalloc i stored
	if [ "${a%%/*}" = afmalloc ]; then
		z=afmalloc
		echo "${a#afmalloc/}" > /sys/module/afmalloc/parameters/zswap_store ||
			fail "$a: afmalloc refused zswap_store ${a#afmalloc/}"
	fi
	echo $z > $zsw/zpool || fail "$a: zswap refused zpool $z"
	echo Y > $zsw/enabled
	zpool=
	[ $z = zsmalloc ] || zpool=$(find $dbg/afmalloc -mindepth 1 -maxdepth 1 ! -name 'zram*' -printf '%f\n' | head -n 1)
	[ $z = zsmalloc ] || [ -n "$zpool" ] || fail "$a: zswap made no afmalloc pool"
	rm -f "$work"/hog.*
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec python3 -c "$@"' \
		sh "$cg" "$hog_py" "$zmb" "$work" 2> "$work/hog.err" &
	for ((i = 0; i < 600; i++)); do
		[ ! -e "$work/hog.ready" ] || break
		kill -0 $! 2>/dev/null ||
			fail "$a: the zswap process died filling its pages (the console has the kernel's log): $(cat "$work/hog.err")"
		sleep 1
	done
	[ -e "$work/hog.ready" ] || fail "$a: the zswap process did not fill its $zmb MiB within 600 s"
	stored=$(cat $dbg/zswap/stored_pages)
	say "$a: zswap ($z${zpool:+, afmalloc pool $zpool}) stores $stored pages of the process's $((zmb * 256)) (pool_total_size $(cat $dbg/zswap/pool_total_size))"
	[ "$stored" -ge $((zmb * 256 / 2)) ] ||
		fail "$a: zswap stores $stored pages, under half of the process's: nothing to test"
	zin0=$(vmstat zswpin)
}
# zsw_check ALLOC: after the offlining (the hog has stopped): its passes
# as written, swap-ins from zswap meanwhile, afmalloc's zswap pool
# migrated pages.
zsw_check() {
	local a=$1 n bad pages am
	read -r n bad pages < "$work/hog.out" ||
		fail "$a: the zswap process left no count: $(cat "$work/hog.err")"
	[ "$bad" = 0 ] ||
		fail "$a: the zswap process read changed memory in $bad of its $((n + bad)) passes ($pages pages in all) while the blocks went offline"
	say "$a: the zswap process's passes over its $zmb MiB while the blocks went offline: $n, every one as written; zswpin +$(( $(vmstat zswpin) - zin0 ))"
	[ $(( $(vmstat zswpin) - zin0 )) -gt 0 ] || fail "$a: no swap-in from zswap while the blocks went offline"
	[ -n "$zpool" ] || return 0
	am=$(( $(afm_row migrate 2 "$zpool") - zam0 ))
	say "$a: afmalloc migrated $am pages of its zswap pool (debugfs migrate row: $(afm_row migrate 2 "$zpool") $(afm_row migrate 3 "$zpool") $(afm_row migrate 4 "$zpool"))"
	[ "$am" -gt 0 ] ||
		fail "$a: afmalloc migrated none of its zswap pool's pages"
}

zsw_setup
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
	rm -f "$work"/stop "$work"/reader.*
	[ "$zmb" = 0 ] || zsw_start "$a"
	mig0=$(vmstat pgmigrate_success) am0=0 zam0=0
	[ "$a" = zsmalloc ] || am0=$(afm_row migrate 2)
	[ -z "$zpool" ] || zam0=$(afm_row migrate 2 "$zpool")
	for k in 1 2; do reader "$k" & done
	t0=$SECONDS
	for b in "${blocks[@]}"; do
		rc=0
		timeout 300 bash -c "echo offline > $b/state" || rc=$?
		if [ "$rc" != 0 ]; then
			dmesg | tail -n 20
			fail "$a: ${b##*/} did not go offline within 300 s (status $rc, 124: timed out; it reads $(cat "$b/state"); dmesg above)"
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
	[ "$zmb" = 0 ] || zsw_check "$a"
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
