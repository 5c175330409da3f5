#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM test of memory hot-remove, or of a CMA allocation, with the pools'
# pages in the memory taken (run as root in a guest booted with
# movablecore=SIZE, or cma=SIZE for --cma, through scripts/vm-run.sh:
# make vm-test-offline, in make check, and make vm-test-cma):
#
#   tests/vm/memory-offline.sh [--alloc LIST] [--mb N] [--zswap-mb M] [--cma]
#
# For each allocator of LIST (default afmalloc/zspage,zsmalloc; zsmalloc
# is the control: where it fails, the set-up does, not afmalloc; the make
# targets boot once for each, as memory given back is given out last, so
# that a second allocator's pages would miss it), on a fresh zram0 (lz4):
# N MiB (default 96) of pages of every compressibility (generated from a
# seed: a random part of 16 bytes to a whole page, the rest repeated text)
# are written to the raw device and its page cache dropped, so that the
# pool holds them. zram asks for movable pages, which go to ZONE_MOVABLE
# first, and to a CMA area first while it holds more than half of the
# zone's free pages: the zone's (the area's) used pages must have grown by
# at least a quarter of the pool's. They come from the zone's lowest
# blocks first (the kernel frees its memory to the tail of the free lists
# at boot, lowest address first), so that the pool lies in the blocks
# taken offline, not only in the top one.
#
# Then every page there must move, which only succeeds if the pool's
# pages among them migrate. Without --cma, every online memory block of
# ZONE_MOVABLE without holes or reserved pages (the kernel refuses to take
# such a block offline; /proc/iomem's System RAM ranges and
# /proc/kpageflags tell) is taken offline, one at a time (each within
# 300 s: offlining retries until every page has moved, as fast as the host
# lets it), as virtio-mem's unplug does. With --cma, the whole CMA area is
# allocated through debugfs, 4 MiB (or its largest free run) at a time,
# as a camera or display driver on a phone calls cma_alloc(), which tries
# each free range once, each batch of pages a few times, and fails
# (-EBUSY) where a page would not move; failed requests are repeated for
# up to 300 s.
# Meanwhile two readers read the whole device over and over (O_DIRECT),
# each pass compared with what was written, so that migrations meet
# zspages being read (afmalloc's migration then waits for the reads under
# way, keeping new ones out, as zsmalloc's does); any pass that differs
# fails the test. In the same boot the allocator also serves zswap
# (afmalloc as zswap's zpool, its zswap_store the store of LIST, one
# afmalloc store per boot; swap on a second zram device, on zsmalloc): a
# process in a memory cgroup of M/2 MiB (zswap's pool is charged to it
# too) fills M MiB (default 64, at least 32; 0: no zswap part) of private
# anonymous pages (a random part of 16 bytes to half a page, the rest
# text), so that most of them go to zswap, and while the pages move it
# checks all of its pages against their SHA-1 over and over and rewrites
# a quarter of them after each pass (swap-ins load and free zswap's
# objects, swap-outs store new ones, of new sizes), then checks them all
# once more; a pass that differs fails the test, and the cgroup must have
# had swap-ins from zswap while the pages moved. Afterwards every byte is
# read back from zram (O_DIRECT) and compared by SHA-256, the pool must
# still store what it stored, and for afmalloc the debugfs "migrate" rows
# of its zram pool and of its zswap pool must count pages migrated
# (zsmalloc: /proc/vmstat pgmigrate_success must have grown, whatever
# moved). The blocks then go back online (online_movable), or the CMA
# allocation is freed, and the data is read back once more.
#
# Exit status: 0 passed; 1 a failure; 77 nothing to test here (no block of
# ZONE_MOVABLE to take offline: the guest was not booted with movablecore=,
# or its kernel lacks CONFIG_MEMORY_HOTREMOVE or /proc/kpageflags; with
# --cma no CMA area in debugfs: no cma= or no CONFIG_CMA_DEBUGFS; or zram
# has no allocator selection), printed as "memory-offline: SKIP: ...".
set -euo pipefail

fail() { echo "memory-offline: FAIL: $*" >&2; exit 1; }
skip() { echo "memory-offline: SKIP: $*"; exit 77; }
say() { echo "memory-offline: $*"; }
allocs=afmalloc/zspage,zsmalloc mb=96 zmb=64 zpool='' swapdev='' cma=0
while [ $# -gt 0 ]; do
	case "$1" in
	--alloc) allocs=${2:?}; shift ;;
	--mb) mb=${2:?}; shift ;;
	--zswap-mb) zmb=${2:?}; shift ;;
	--cma) cma=1 ;;
	-h|--help) sed -n '3,/^set -/p' "$0" | sed '$d'; exit 0 ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done

[[ "$mb" =~ ^[1-9][0-9]*$ ]] || fail "--mb $mb: a number of MiB, at least 1"
if ! [[ "$zmb" =~ ^(0|[1-9][0-9]*)$ ]] || { [ "$zmb" != 0 ] && [ "$zmb" -lt 32 ]; }; then
	fail "--zswap-mb $zmb: 0 or a number of MiB, at least 32 (the cgroup of half of it holds the process and zswap's compressed copies)"
fi
# zswap keeps using the afmalloc pool it has, whatever zswap_store says
# (a zpool written again is no change): one afmalloc store per boot.
[ "$zmb" = 0 ] || [ "$(tr , '\n' <<< "$allocs" | grep -c '^afmalloc/')" -le 1 ] ||
	fail "--alloc $allocs: with zswap (--zswap-mb), one afmalloc store per boot"
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
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# whole N: block N lies in one "System RAM" range of /proc/iomem (the
# kernel refuses to take a block with holes offline: the top one of the
# guest's RAM has some).
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
# 10861 in the guest's second-highest block.
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
if [ $cma = 1 ]; then
	[ -d $dbg/cma ] || skip "no $dbg/cma (CONFIG_CMA_DEBUGFS)"
	cmad=$(find $dbg/cma -mindepth 1 -maxdepth 1 -type d | head -n 1)
	[ -n "$cmad" ] || skip "no CMA area (boot with cma=SIZE)"
	cma_pages=$(cat "$cmad/count")
	[ "$(cat "$cmad/used")" = 0 ] || fail "the CMA area ${cmad##*/} has $(cat "$cmad/used") pages allocated already"
	area="the CMA area ${cmad##*/}" during="while the CMA area was allocated"
	after="after the CMA allocation was freed"
	say "$area: $cma_pages pages from pfn $(cat "$cmad/base_pfn")"
else
	[ -d $mem ] || skip "no $mem (CONFIG_MEMORY_HOTPLUG)"
	bs=$(( 16#$(cat $mem/block_size_bytes) ))
	[ -r /proc/kpageflags ] || skip "no /proc/kpageflags (CONFIG_PROC_PAGE_MONITOR) to find reserved pages with"
	blocks=() holes=() busy=()
	for b in "$mem"/memory[0-9]*; do
		if [ "$(cat "$b/valid_zones" 2>/dev/null)" != Movable ] || [ "$(cat "$b/state")" != online ] ||
		   [ ! -w "$b/state" ]; then
			continue
		fi
		if ! whole "${b##*memory}"; then
			holes+=("${b##*/}")
		elif r=$(reserved "${b##*memory}") || fail "cannot read the page flags of ${b##*/}"; [ "$r" != 0 ]; then
			busy+=("${b##*/}: $r reserved pages")
		else
			blocks+=("$b")
		fi
	done
	[ ${#blocks[@]} -gt 0 ] ||
		skip "no online block of ZONE_MOVABLE without holes or reserved pages (boot with movablecore=; with holes: ${holes[*]:-none}; with reserved pages: ${busy[*]:-none})"
	say "${#blocks[@]} blocks of ZONE_MOVABLE, $((bs >> 20)) MiB each: ${blocks[*]##*/}${holes:+ (not ${holes[*]}: holes)}${busy:+ (not ${busy[*]})}"
	area=ZONE_MOVABLE during="while the blocks went offline"
	after="after the blocks came back online"
fi

# used: pages of ZONE_MOVABLE in use (managed - free; offline blocks are
# neither), or of the CMA area (its size - its free pages).
used() {
	if [ $cma = 1 ]; then
		echo $((cma_pages - $(vmstat nr_free_cma)))
		return
	fi
	awk '$1 == "Node" && $3 == "zone" { z = $4 }
		z == "Movable" && $1 == "nr_free_pages" { f = $2 }
		z == "Movable" && $1 == "managed" { m = $2 }
		END { print m - f }' /proc/zoneinfo
}
# take: every page of the area must move: the blocks taken offline, one
# at a time, or (--cma) the CMA area allocated whole, 4 MiB at a time or
# the largest free run of it (cma_alloc() tries every free range of the
# area for each, the migrations of each a few times; after a range fails
# it tries the one a page further on, leaving runs shorter than 4 MiB),
# requests that fail (every range of their size failed) repeated until
# 300 s have passed, counted in $cma_fails; give: back.
take() {
	local b rc=0 n
	if [ $cma = 1 ]; then
		cma_fails=0
		while n=$(cat "$cmad/used"); [ "$n" -lt "$cma_pages" ]; do
			[ $((SECONDS - t0)) -lt 300 ] || {
				dmesg | tail -n 20
				fail "$a: $area has $n of its $cma_pages pages allocated after 300 s, $cma_fails requests failed (dmesg above)"
			}
			n=$(cat "$cmad/maxchunk")
			echo $((n < 1024 ? n : 1024)) > "$cmad/alloc" 2>/dev/null || cma_fails=$((cma_fails + 1))
		done
		return
	fi
	for b in "${blocks[@]}"; do
		timeout 300 bash -c "echo offline > $b/state" || rc=$?
		if [ "$rc" != 0 ]; then
			dmesg | tail -n 20
			fail "$a: ${b##*/} did not go offline within 300 s (status $rc, 124: timed out; it reads $(cat "$b/state"); dmesg above)"
		fi
		[ "$(cat "$b/state")" = offline ] || fail "$a: ${b##*/} reads $(cat "$b/state")"
	done
}
give() {
	local b
	if [ $cma = 1 ]; then
		echo "$cma_pages" > "$cmad/free" || fail "$a: $area's pages did not go back"
		return
	fi
	for b in "${blocks[@]}"; do
		echo online_movable > "$b/state" || fail "$a: ${b##*/} refused to come back online"
	done
}
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
# The hog: fills its pages (private anonymous memory, as a process's
# heap), then checks all of them against their SHA-1 and rewrites every
# fourth (a different quarter each time) until $work/stop appears, then
# checks all of them once more (what zswap held when the pages had moved);
# "passes failed-passes pages-that-differed pages-that-differed-at-the-end"
# into $work/hog.out.
hog_py='
import hashlib, mmap, os, random, sys
work, page = sys.argv[2], mmap.PAGESIZE
n = int(sys.argv[1]) * (1 << 20) // page
text = b"afmalloc memory offline test, zswap: some text, repeated. " * (page // 32)
rnd = random.Random(20261208)
mem = mmap.mmap(-1, n * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
sums = [b""] * n
def put(i):
    k = rnd.randrange(16, page // 2 + 1)
    d = rnd.randbytes(k) + text[:page - k]
    mem[i * page:(i + 1) * page] = d
    sums[i] = hashlib.sha1(d).digest()
for i in range(n):
    put(i)
open(work + "/hog.ready", "w").close()
def check():
    return sum(hashlib.sha1(mem[i * page:(i + 1) * page]).digest() != sums[i] for i in range(n))
passes = bad = pages = 0
while not os.path.exists(work + "/stop"):
    d = check()
    passes, bad, pages = passes + (d == 0), bad + (d > 0), pages + d
    for i in range((passes + bad) % 4, n, 4):
        put(i)
with open(work + "/hog.out", "w") as f:
    f.write("%d %d %d %d\n" % (passes, bad, pages, check()))
'
# zsw_start ALLOC: zswap's zpool to ALLOC's, the hog started in the cgroup
# (charged from its first page: it enters, then execs) and waited for
# until it has filled its pages; sets $zpool (afmalloc's pool's debugfs
# name).
zsw_start() {
	local a=$1 z=zsmalloc i stored np=$((zmb * 1048576 / $(getconf PAGESIZE)))
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
	if [ ! -e "$work/hog.ready" ]; then
		kill $! 2>/dev/null
		fail "$a: the zswap process did not fill its $zmb MiB within 600 s"
	fi
	stored=$(cat $dbg/zswap/stored_pages)
	say "$a: zswap ($z${zpool:+, afmalloc pool $zpool}) stores $stored pages of the process's $np (pool_total_size $(cat $dbg/zswap/pool_total_size))"
	[ "$stored" -ge $((np / 2)) ] ||
		fail "$a: zswap stores $stored pages, under half of the process's: nothing to test"
}
# zswpin: the cgroup's swap-ins from zswap so far (0 without zswap).
zswpin() {
	if [ "$zmb" = 0 ]; then echo 0; else awk '$1 == "zswpin" { print $2 }' $cg/memory.stat; fi
}
# zsw_check ALLOC: after the pages moved (the hog has stopped): its
# passes as written, and its last check of every page, swap-ins from zswap
# while the pages moved (the cgroup's zswpin from $zin0 to $zin1),
# afmalloc's zswap pool migrated pages.
zsw_check() {
	local a=$1 n bad pages last am
	read -r n bad pages last < "$work/hog.out" ||
		fail "$a: the zswap process left no count: $(cat "$work/hog.err")"
	[ "$bad" = 0 ] ||
		fail "$a: the zswap process read changed memory in $bad of its $((n + bad)) passes ($pages pages in all) $during"
	[ "$last" = 0 ] ||
		fail "$a: the zswap process's last check, after $area's pages had moved, found $last pages changed"
	say "$a: the zswap process's passes over its $zmb MiB $during: $n, every one as written, and every page as written after it; its swap-ins from zswap meanwhile: $((zin1 - zin0))"
	[ $((zin1 - zin0)) -gt 0 ] || fail "$a: no swap-in from zswap $during"
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
	used0=$(used)
	sum=$( { generate | dd of=/dev/zram0 bs=1M iflag=fullblock oflag=direct status=none; } 3>&1 )
	[ -n "$sum" ] || fail "$a: writing the data failed"
	sync; echo 3 > /proc/sys/vm/drop_caches
	pages=$(( $(mm 3) / 4096 )) compr=$(mm 2) used1=$(used)
	say "$a: wrote $mb MiB: mm_stat $(cat $sys/mm_stat); $area used $used0 -> $used1 pages"
	[ "$pages" -gt 0 ] || fail "$a: the pool holds nothing"
	[ $((used1 - used0)) -ge $((pages / 4)) ] ||
		fail "$a: $area took $((used1 - used0)) pages, under a quarter of the pool's $pages: nothing to test"
	rm -f "$work"/stop "$work"/reader.*
	[ "$zmb" = 0 ] || zsw_start "$a"
	mig0=$(vmstat pgmigrate_success) am0=0 zam0=0
	[ "$a" = zsmalloc ] || am0=$(afm_row migrate 2)
	[ -z "$zpool" ] || zam0=$(afm_row migrate 2 "$zpool")
	for k in 1 2; do reader "$k" & done
	t0=$SECONDS zin0=$(zswpin)
	take
	t1=$SECONDS zin1=$(zswpin)
	touch "$work/stop"
	wait
	passes=0
	for k in 1 2; do
		read -r n bad < "$work/reader.$k" || fail "$a: reader $k left no count"
		[ "$bad" = 0 ] || fail "$a: reader $k read data that differs in $bad of its $((n + bad)) passes $during"
		passes=$((passes + n))
	done
	say "$a: two readers read the device $passes times in all $during, every pass as written"
	[ "$zmb" = 0 ] || zsw_check "$a"
	mig=$(( $(vmstat pgmigrate_success) - mig0 ))
	if [ $cma = 1 ]; then
		say "$a: all of $area allocated in $((t1 - t0)) s, $cma_fails requests failing on the way; pgmigrate_success +$mig"
	else
		say "$a: ${#blocks[@]} blocks offline in $((t1 - t0)) s; pgmigrate_success +$mig; $area used $(used) pages"
	fi
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(readback)" = "$sum" ] || fail "$a: data changed $during"
	[ "$(mm 2)" = "$compr" ] || fail "$a: the pool stores $(mm 2) bytes, $compr before"
	if [ "$a" = zsmalloc ]; then
		# Anything in the area counts, not only the pools' pages: the
		# control shows that the set-up works and zsmalloc survives it.
		[ "$mig" -gt 0 ] || fail "$a: no page migrated at all: nothing lay in $area"
	else
		am=$(( $(afm_row migrate 2) - am0 ))
		say "$a: afmalloc migrated $am of its pages (debugfs migrate row: $(afm_row migrate 2) $(afm_row migrate 3) $(afm_row migrate 4))"
		[ "$am" -gt 0 ] ||
			fail "$a: afmalloc migrated none of its pages: none of them lay in $area, or they were taken unmigrated"
	fi
	give
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(readback)" = "$sum" ] || fail "$a: data changed $after"
	say "$a: every byte read back $during and $after"
	echo 1 > $sys/reset
done
say "PASS ($allocs)"
