#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM zswap test of afmalloc's zpool driver, run by tests/vm/zswap-stock.sh
# through scripts/vm-run.sh, as root, in a throw-away guest.
#
#   zswap-test.sh --load BIN (--module KO | --builtin) [--kunit DIR]
#                 [--mb N] [--limit-mb N]
#   zswap-test.sh --emit-load-source      print the workload's C source
#
# --module KO: unmodified kernel, afmalloc.ko loaded with insmod (and the
# rmmod rules checked); --builtin: the project's kernel, afmalloc built in.
# --kunit DIR: also load DIR/afmalloc.ko + DIR/afmalloc_kunit.ko (a build
# with CONFIG_AFMALLOC_KUNIT_TEST=m), check every suite passed, unload.
#
# Swap device: a zram disk (zsmalloc, lz4) as the swap device behind zswap.
# It needs no disk image and works in both kernels; zswap sits in front of
# it, so a page reaches zram only when zswap rejects it or writes it back.
# (A swap file on the 9p root or on tmpfs is impossible, and a loop device
# over a tmpfs file would swap tmpfs pages into themselves.)
#
# Workload (the C program from --emit-load-source, built on the host): in a
# cgroup v2 with memory.max = --limit-mb, touch --mb MiB (4x the limit by
# default, at least 2x: refused otherwise) of 4 KiB pages, each a
# deterministic function of (page, pass):
# a pseudo-random head of 16..767 bytes (1 page in 16: up to 3.8 KiB) and
# a repetitive tail, so compressed sizes spread over the whole object range
# and no page is zero-filled; rewrite half of the pages, stop (SIGSTOP) so
# the test can look at zswap while the data sits in it, then verify every
# byte of every page. zswap's compressed pool is charged to the cgroup, so
# the data must compress well for 4x the limit to fit (about 7:1 here).
# Swap-out is certain, not a matter of timing: at a stop at most
# memory.max of the pages can be resident, so at least (mb - limit) MiB
# of them are out; each check below wants a quarter of the pages in zswap.
#
# What afmalloc holds is read from its own debugfs statistics
# (/sys/kernel/debug/afmalloc/zswapN/pool, "objects"; "classes" tells the
# store: only the zspage store's has a "migrate" row): while the workload
# is stopped, the afmalloc zswap pools must hold exactly zswap's
# stored_pages objects when no other pool holds entries (6.12's zswap has
# no same-filled shortcut: every stored page is one zpool object).
#
# Phases:
#  0. the README's recipe (module mode): the module staged as dkms and
#     depmod leave it (its own module tree on /tmp, reached through a
#     modprobe wrapper set in /proc/sys/kernel/modprobe, since the guest's
#     /lib/modules is the host's, read-only); zswap.zpool=afmalloc before
#     zswap was ever enabled loads nothing (it only records the name),
#     enabling zswap then loads afmalloc.ko through request_module() and
#     creates the pool on it; back to zsmalloc, the module unloads.
#  1. bad input: insmod with zswap_store=bogus fails (module mode); writing
#     an unknown store to /sys/module/afmalloc/parameters/zswap_store fails,
#     logs its warning and leaves it unchanged.
#  2. KUnit (--kunit); skipped cases are printed as SKIP (allowed on a
#     stock kernel).
#  3. afmalloc: zswap.zpool=afmalloc, workload; while it is stopped, assert
#     zswap stored pages in afmalloc and afmalloc's zspage pool holds them
#     all; rmmod refused; switch zswap to zsmalloc (the old pool still
#     holds the data): rmmod still refused; resume and verify; swapoff
#     drains the pool; rmmod succeeds.
#  4. zsmalloc: same workload for the baseline (no afmalloc pool may hold
#     anything); print both ratios.
#  5. switching: the workload runs 3 passes, stopping after each: pass 0
#     (the fill) on afmalloc, which must then hold every stored page;
#     pass 1 while zswap.zpool switches between zsmalloc and afmalloc
#     every second; pass 2 on afmalloc again, which must then hold at
#     least a quarter of the pages; every page verifies.
#  6. the non-default store: zswap_store=slab, a new afmalloc zswap pool
#     is created on it (a slab-store pool: no "migrate" row, its own
#     afm-zswapN-* slab caches), holds every stored page while the
#     workload is stopped, and the workload verifies; back to zspage.
# Finally the kernel log must show no WARNING, BUG or Oops.
set -euo pipefail

emit_load_source() {
	cat <<'CEOF'
/* zswap-load: checksummed swap workload for the afmalloc zswap test. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Content of page i at generation g: random head, repetitive tail. */
static void fill(unsigned char *p, uint64_t i, unsigned int g)
{
	uint64_t s = mix(i * 1000003ull + g), r = s;
	size_t head = (s >> 8) % 16 ? 16 + s % 752 : 16 + s % 3800, k;
	char line[64];
	int n;

	for (k = 0; k < head; k += 8) {
		r = mix(r);
		memcpy(p + k, &r, 8);
	}
	n = snprintf(line, sizeof(line), "afmalloc page %llu gen %u. ",
		     (unsigned long long)i, g);
	for (k = head; k < PG; k++)
		p[k] = line[(k - head) % n];
}

int main(int argc, char **argv)
{
	size_t mb, npages, i, bad = 0;
	unsigned int passes, pass, stop, each;
	unsigned char *mem, *gen, ref[PG];

	if (argc < 3) {
		fprintf(stderr, "usage: %s MB PASSES [stop|stopeach]\n", argv[0]);
		return 2;
	}
	mb = strtoul(argv[1], NULL, 0);
	passes = strtoul(argv[2], NULL, 0);
	stop = argc > 3 && !strcmp(argv[3], "stop");
	/* stopeach: stop after every pass (the first: the fill). */
	each = argc > 3 && !strcmp(argv[3], "stopeach");
	npages = mb << 8;
	mem = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gen = calloc(npages, 1);
	if (mem == MAP_FAILED || !gen) {
		perror("zswap-load: mmap");
		return 2;
	}
	madvise(mem, npages * PG, MADV_NOHUGEPAGE);

	for (i = 0; i < npages; i++)
		fill(mem + i * PG, i, 0);
	/* Later passes: check every page, rewrite every other one. */
	for (pass = 1; pass <= passes; pass++) {
		if (each) {
			printf("zswap-load: pass %u of %u done, stopping\n",
			       pass, passes);
			fflush(stdout);
			raise(SIGSTOP);
		}
		if (pass == passes)
			break;
		for (i = 0; i < npages; i++) {
			fill(ref, i, gen[i]);
			if (memcmp(ref, mem + i * PG, PG)) {
				if (bad++ < 10)
					fprintf(stderr, "zswap-load: page %zu gen %u differs (pass %u)\n",
						i, gen[i], pass);
			}
			if ((i + pass) % 2 == 0) {
				gen[i] = pass;
				fill(mem + i * PG, i, pass);
			}
		}
	}
	printf("zswap-load: wrote %zu pages (%zu MiB) in %u passes\n",
	       npages, mb, passes);
	fflush(stdout);
	if (stop)
		raise(SIGSTOP);
	for (i = 0; i < npages; i++) {
		fill(ref, i, gen[i]);
		if (memcmp(ref, mem + i * PG, PG) && bad++ < 10)
			fprintf(stderr, "zswap-load: page %zu gen %u differs\n",
				i, gen[i]);
	}
	printf("zswap-load: verified %zu pages: %zu bad\n", npages, bad);
	return bad ? 1 : 0;
}
CEOF
}

fail() { echo "zswap-test: FAIL: $*" >&2; dmesg | tail -n 30 >&2; exit 1; }
note() { echo "zswap-test: $*"; }

load= module= builtin=0 kunit= mb=128 limit_mb=32
while [ $# -gt 0 ]; do
	case "$1" in
	--emit-load-source) emit_load_source; exit 0 ;;
	--load) load=${2:?}; shift ;;
	--module) module=${2:?}; shift ;;
	--builtin) builtin=1 ;;
	--kunit) kunit=${2:?}; shift ;;
	--mb) mb=${2:?}; shift ;;
	--limit-mb) limit_mb=${2:?}; shift ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done
[ -x "$load" ] || fail "workload binary '$load' missing (--load)"
[[ "$mb" =~ ^[1-9][0-9]*$ && "$limit_mb" =~ ^[1-9][0-9]*$ ]] || fail "--mb and --limit-mb take MiB"
[ "$mb" -ge $((2 * limit_mb)) ] ||
	fail "--mb $mb is less than twice --limit-mb $limit_mb: swap-out would not be certain"
[ -n "$module" ] || [ "$builtin" = 1 ] || fail "give --module KO or --builtin"
[ -z "$module" ] || [ -f "$module" ] || fail "module $module not found"
[ "${AFMALLOC_IN_VM:-}" = 1 ] || fail "runs inside a throw-away VM (scripts/vm-run.sh) only"

zs=/sys/module/zswap/parameters
dbg=/sys/kernel/debug
cg=/sys/fs/cgroup
param=/sys/module/afmalloc/parameters/zswap_store
note "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo)"
[ -d $zs ] || fail "this kernel has no zswap"
mountpoint -q $dbg || mount -t debugfs none $dbg
if ! [ -f $cg/cgroup.controllers ]; then
	mountpoint -q $cg && umount $cg 2>/dev/null || true
	mkdir -p $cg && mount -t cgroup2 none $cg
fi
grep -qw memory $cg/cgroup.controllers || fail "no memory controller in cgroup v2"
# (The kernel log is not cleared: vm-run.sh checks all of it for splats.)

# shellcheck source=lib/wait.sh
. "$(dirname "$(realpath "$0")")/lib/wait.sh"	# wait_until SECONDS CMD...

rmmod_refused() {  # rmmod afmalloc must fail because a pool holds the module
	local out
	if out=$(rmmod afmalloc 2>&1); then
		fail "rmmod afmalloc succeeded while a zswap pool used it"
	fi
	echo "$out" | grep -q 'in use' || fail "rmmod afmalloc failed for another reason: $out"
	note "rmmod refused as expected ($1): '$out', refcnt $(cat /sys/module/afmalloc/refcnt)"
}

set_zpool() {  # set_zpool TYPE: switch zswap's allocator, check it took
	echo "$1" > $zs/zpool || return 1
	[ "$(cat $zs/zpool)" = "$1" ]
}

# --- swap device: zram, lz4 -------------------------------------------------
[ -e /sys/class/zram-control ] || modprobe zram num_devices=1 || fail "no zram"
zdev=/dev/zram0
[ -e /sys/block/zram0 ] || fail "no zram0"
zram_up() {
	# udev probes a device just added (it opens it): reset says EBUSY
	# until it is done (seen once, on a boot of the stock kernel).
	local i
	for i in $(seq 20); do
		echo 1 > /sys/block/zram0/reset 2>/dev/null && break
		[ "$i" -lt 20 ] || fail "zram0: reset refused 20 times (device busy)"
		udevadm settle 2>/dev/null; sleep 0.2
	done
	echo lz4 > /sys/block/zram0/comp_algorithm 2>/dev/null || true
	echo 2G > /sys/block/zram0/disksize
	mkswap -q $zdev >/dev/null
	swapon $zdev
}
zram_up

# --- 0. the README's recipe: zswap loads afmalloc.ko ------------------------
if [ -n "$module" ]; then
	! grep -qw afmalloc /proc/modules || fail "afmalloc already loaded"
	kver=$(uname -r) mroot=/tmp/afm-modroot
	mkdir -p "$mroot/lib/modules/$kver/updates"
	cp "$module" "$mroot/lib/modules/$kver/updates/"
	depmod -b "$mroot" "$kver" || fail "depmod -b $mroot $kver"
	grep -q '^alias zpool-afmalloc afmalloc$' "$mroot/lib/modules/$kver/modules.alias" ||
		fail "depmod found no zpool-afmalloc alias in $module"
	printf '#!/bin/sh\nexec %s -d %s "$@"\n' "$(command -v modprobe)" "$mroot" > "$mroot/modprobe"
	chmod +x "$mroot/modprobe"
	helper=$(cat /proc/sys/kernel/modprobe)
	echo "$mroot/modprobe" > /proc/sys/kernel/modprobe
	was=$(cat $zs/enabled)
	echo afmalloc > $zs/zpool || fail "zswap refused zpool=afmalloc"
	how="zswap already enabled"
	if [ "$was" = N ]; then
		how="zswap never enabled: nothing loaded; then enabled=1"
		! grep -qw afmalloc /proc/modules ||
			fail "zpool=afmalloc loaded afmalloc before zswap was enabled"
		echo 1 > $zs/enabled || fail "zswap refused enabled=1"
	fi
	# A load happens inside the write that creates the pool: zswap's
	# request_module() waits for modprobe to finish. (Its release of the
	# pool below is deferred to a workqueue: rmmod is retried.)
	grep -qw afmalloc /proc/modules ||
		fail "zswap did not load afmalloc.ko (zpool $(cat $zs/zpool); $(dmesg | grep -m1 'zpool afmalloc not available'))"
	[ "$(cat $zs/zpool)" = afmalloc ] || fail "zswap's zpool is '$(cat $zs/zpool)' with afmalloc loaded"
	note "README recipe: zpool=afmalloc ($how): zswap loaded afmalloc.ko through modprobe, zpool $(cat $zs/zpool), refcnt $(cat /sys/module/afmalloc/refcnt)"
	echo 0 > $zs/enabled
	set_zpool zsmalloc || fail "zswap refused zpool=zsmalloc"
	echo "$helper" > /proc/sys/kernel/modprobe
	wait_until 20 rmmod afmalloc 2>/dev/null ||
		fail "afmalloc.ko still held after zswap moved to zsmalloc (refcnt $(cat /sys/module/afmalloc/refcnt))"
	note "README recipe: back on zsmalloc, afmalloc.ko unloaded"
fi

# --- zswap: lz4 if offered, zswap off until a pool is chosen ----------------
echo 0 > $zs/enabled
echo lz4 > $zs/compressor 2>/dev/null || note "lz4 unavailable, compressor $(cat $zs/compressor)"
echo 100 > $zs/max_pool_percent

# --- 1. bad input ------------------------------------------------------------
if [ -n "$module" ]; then
	! grep -qw afmalloc /proc/modules || fail "afmalloc already loaded"
	if out=$(insmod "$module" zswap_store=bogus 2>&1); then
		fail "insmod with zswap_store=bogus succeeded"
	fi
	dmesg | grep -q "afmalloc: zswap_store: unknown store 'bogus'" ||
		fail "no clear message for zswap_store=bogus"
	note "insmod zswap_store=bogus refused: $out; log: $(dmesg | grep -m1 "unknown store 'bogus'")"
	insmod "$module" || fail "insmod $module"
	note "loaded $module"
fi
[ -f $param ] || fail "no $param (zpool driver missing?)"
[ "$(cat $param)" = zspage ] || fail "default store is '$(cat $param)', not zspage"
if echo bogus2 > $param 2>/dev/null; then fail "zswap_store accepted 'bogus2'"; fi
[ "$(cat $param)" = zspage ] || fail "zswap_store changed to '$(cat $param)' by a bad value"
dmesg | grep -q "afmalloc: zswap_store: unknown store 'bogus2'" ||
	fail "zswap_store=bogus2 refused without its warning in the kernel log"
note "zswap_store=bogus2 at run time refused, still $(cat $param); log: $(dmesg | grep -m1 "unknown store 'bogus2'")"

# --- 2. KUnit ----------------------------------------------------------------
if [ -n "$kunit" ]; then
	[ -n "$module" ] || fail "--kunit needs --module"
	rmmod afmalloc || fail "rmmod afmalloc without any pool"
	modprobe kunit 2>/dev/null || true
	before=$(dmesg | wc -l)
	insmod "$kunit/afmalloc.ko" || fail "insmod $kunit/afmalloc.ko"
	insmod "$kunit/afmalloc_kunit.ko" || fail "insmod afmalloc_kunit.ko"
	ktap=$(dmesg | tail -n +"$((before + 1))")
	echo "$ktap" | grep -E '^\[ *[0-9.]+\] +(# [a-z_]+: pass:|(not )?ok [0-9]+ afmalloc)' || true
	suites=$(echo "$ktap" | grep -cE '\] ok [0-9]+ afmalloc' || true)
	failed=$(echo "$ktap" | grep -E '\] +not ok [0-9]+ ' | grep -vc '# SKIP' || true)
	[ "$failed" = 0 ] || { echo "$ktap" | grep -E 'not ok|Expected|FAIL' | head -40; fail "KUnit: $failed failed"; }
	[ "$suites" -ge 1 ] || fail "KUnit: no afmalloc suite reported ok (kunit disabled? $(cat /sys/module/kunit/parameters/enable 2>/dev/null))"
	# A skipped case did not run: say so (allowed here, on a stock kernel).
	kskips=$(echo "$ktap" | grep -E '\] +(not )?ok [0-9]+ .*# SKIP' | sed -E 's/^.*\] +(not )?ok [0-9]+ //' || true)
	if [ -n "$kskips" ]; then
		echo "$kskips" | sed 's/^/zswap-test: SKIP: KUnit case /'
	fi
	note "KUnit: $suites afmalloc suites ok on $(uname -r), $(echo -n "$kskips" | grep -c . || true) cases skipped"
	rmmod afmalloc_kunit && rmmod afmalloc || fail "unloading the KUnit build"
	insmod "$module" || fail "insmod $module again"
fi

# --- workload helpers --------------------------------------------------------
echo +memory > $cg/cgroup.subtree_control 2>/dev/null || true
mkdir -p $cg/afm
echo $((limit_mb << 20)) > $cg/afm/memory.max

start_load() {  # start_load PASSES [stop]: run the workload in the cgroup
	bash -c 'echo $$ > '"$cg"'/afm/cgroup.procs && exec "$@"' _ "$load" "$mb" "$@" &
	lpid=$!
}
wait_stopped() {
	wait_until 150 bash -c '[ "$(awk "{ print \$3 }" /proc/'"$lpid"'/stat 2>/dev/null)" = T ] ||
		! [ -e /proc/'"$lpid"' ]' || fail "workload did not reach its stop in 150 s"
	[ -e /proc/$lpid ] || { wait $lpid || true; fail "workload died before its stop (OOM? see dmesg)"; }
}
finish_load() {
	kill -CONT $lpid 2>/dev/null || true
	wait $lpid || fail "workload failed its verification (status $?)"
}
kb() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
slab_pages() {  # slab_pages REGEX: pages of the matching slab caches
	awk -v re="$1" '$1 ~ re { p += $15 * $6 } END { print p + 0 }' /proc/slabinfo 2>/dev/null || echo 0
}
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
declare -A ratio held_ratio
sample() {  # sample NAME: print what zswap holds, assert it holds enough
	local stored pool zswap zswapped min meta held pools
	stored=$(cat $dbg/zswap/stored_pages)
	pool=$(cat $dbg/zswap/pool_total_size)
	zswap=$(kb Zswap) zswapped=$(kb Zswapped)
	min=$(( (mb << 8) / 4 ))
	note "$1: stored_pages=$stored pool_total_size=$pool Zswap=${zswap} kB Zswapped=${zswapped} kB" \
		"ratio=$(div "$zswapped" "$zswap") reject_alloc_fail=$(cat $dbg/zswap/reject_alloc_fail)" \
		"reject_compress_poor=$(cat $dbg/zswap/reject_compress_poor)" \
		"written_back=$(cat $dbg/zswap/written_back_pages) memory.current=$(cat $cg/afm/memory.current)" \
		"zram orig/compr/used=$(awk '{ print $1 "/" $2 "/" $3 }' /sys/block/zram0/mm_stat)"
	[ "$stored" -ge "$min" ] || fail "$1: zswap stored only $stored pages (< $min)"
	ratio[$1]=$(div "$zswapped" "$zswap")
	# Every page the allocator holds: zsmalloc's pool_total_size leaves out
	# its handle and zspage descriptor slabs (separate with slab_nomerge);
	# afmalloc's counts every page it holds (zspage store: data, handle and
	# descriptor table pages; slab store: its descriptors too), and
	# /proc/slabinfo of its caches (slab store only; it also shows empty
	# slabs SLUB keeps cached, but not the pages of PAGE_SIZE chunks) is
	# printed as a cross-check.
	if [ "$1" = zsmalloc ]; then
		meta=$(slab_pages '^(zs_handle|zspage)-zswap')
	else
		meta=0
		note "afmalloc: slabinfo pages of afm-zswap* caches: $(slab_pages '^afm-zswap')" \
			"(pool_total_size: $((pool / 4096)) pages)"
	fi
	held=$(( pool / 1024 + meta * 4 ))
	held_ratio[$1]=$(div "$zswapped" "$held")
	note "$1: held incl. metadata slabs ($meta pages) = $held kB, Zswapped/held = ${held_ratio[$1]}"
}
drain() {  # swapoff frees every zswap entry (and flushes the swap slot caches)
	swapoff $zdev || fail "swapoff"
	swapon $zdev || fail "swapon"
}
afm_pools() { ls $dbg/afmalloc 2>/dev/null | grep -c '^zswap' || true; }
# afmalloc's own count of what its zswap pools hold (debugfs); without its
# statistics (a module built with CONFIG_AFMALLOC_STAT=n) the checks on it
# are skipped, and say so, on a stock kernel only.
afm_stats=1
if [ ! -d $dbg/afmalloc ]; then
	[ -n "$module" ] || fail "no $dbg/afmalloc: afmalloc built in without CONFIG_AFMALLOC_STAT"
	afm_stats=0
	note "SKIP: afmalloc's own object counts (no $dbg/afmalloc: module without CONFIG_AFMALLOC_STAT)"
fi
afm_objects() {  # objects in every afmalloc zswap pool
	local f n=0
	for f in $dbg/afmalloc/zswap*/pool; do
		[ -r "$f" ] || continue
		n=$((n + $(awk '$1 == "objects" { print $2 }' "$f")))
	done
	echo $n
}
# afm_check NAME STORE EXACT: while the workload is stopped, afmalloc's
# zswap pools hold at least a quarter of the workload's pages (all of
# zswap's stored_pages with EXACT=1: no other pool holds entries), and
# every afmalloc zswap pool is on STORE (zspage|slab).
afm_check() {
	local name=$1 store=$2 exact=$3 stored objs try p min
	[ $afm_stats = 1 ] || { note "SKIP: $name: afmalloc's object count (no statistics)"; return 0; }
	min=$(( (mb << 8) / 4 ))
	# Re-read while something still moves (frees batched by the swap
	# slot cache, a late reclaim): the values must agree once it stops.
	for try in 1 2 3 4 5 6 7 8 9 10; do
		stored=$(cat $dbg/zswap/stored_pages)
		objs=$(afm_objects)
		[ "$stored" = "$(cat $dbg/zswap/stored_pages)" ] &&
			{ [ "$exact" = 0 ] || [ "$objs" = "$stored" ]; } && break
		sleep 0.5
	done
	note "$name: afmalloc zswap pools $(ls $dbg/afmalloc | grep '^zswap' | tr '\n' ' ')hold $objs objects;" \
		"zswap stored_pages $stored"
	[ "$objs" -ge "$min" ] || fail "$name: afmalloc holds $objs objects, fewer than $min (a quarter of the workload's pages)"
	[ "$exact" = 0 ] || [ "$objs" = "$stored" ] ||
		fail "$name: afmalloc holds $objs objects, zswap stored $stored pages, all of them in afmalloc"
	for p in $(ls $dbg/afmalloc | grep '^zswap'); do
		case "$store" in
		zspage) grep -q '^migrate ' $dbg/afmalloc/$p/classes ||
				fail "$name: afmalloc pool $p is not on the zspage store" ;;
		slab) ! grep -q '^migrate ' $dbg/afmalloc/$p/classes ||
				fail "$name: afmalloc pool $p is not on the slab store"
			grep -q "^afm-$p-" /proc/slabinfo ||
				fail "$name: afmalloc pool $p has no afm-$p-* slab cache" ;;
		esac
	done
}

# --- 3. afmalloc -------------------------------------------------------------
set_zpool afmalloc || fail "cannot select afmalloc as zswap.zpool"
echo 1 > $zs/enabled
[ "$(cat $zs/zpool)" = afmalloc ] || fail "zswap fell back to $(cat $zs/zpool)"
note "zswap: zpool=$(cat $zs/zpool) compressor=$(cat $zs/compressor) enabled=$(cat $zs/enabled)"
t0=$(date +%s)
start_load 2 stop
wait_stopped
note "afmalloc: workload written in $(( $(date +%s) - t0 )) s"
sample afmalloc
afm_check afmalloc zspage 1
[ -z "$module" ] || rmmod_refused "pool current"
set_zpool zsmalloc || fail "cannot switch zswap to zsmalloc"
note "switched zswap to zsmalloc with the data still in afmalloc: stored_pages=$(cat $dbg/zswap/stored_pages)"
[ -z "$module" ] || rmmod_refused "old pool still holds entries"
finish_load
note "afmalloc: written and verified in $(( $(date +%s) - t0 )) s"
drain
if [ -n "$module" ]; then
	wait_until 20 rmmod afmalloc 2>/dev/null || fail "rmmod afmalloc still refused after the pool drained"
	note "rmmod afmalloc succeeded after switching away and draining"
	! grep -qw afmalloc /proc/modules || fail "afmalloc still loaded"
else
	wait_until 20 [ "$(afm_pools)" = 0 ] || fail "the drained afmalloc zswap pool was not destroyed"
	note "drained afmalloc zswap pool destroyed"
fi

# --- 4. zsmalloc baseline ----------------------------------------------------
t0=$(date +%s)
start_load 2 stop
wait_stopped
note "zsmalloc: workload written in $(( $(date +%s) - t0 )) s"
sample zsmalloc
[ $afm_stats = 0 ] || [ "$(afm_objects)" = 0 ] ||
	fail "zsmalloc: afmalloc's zswap pools hold $(afm_objects) objects"
finish_load
note "zsmalloc: written and verified in $(( $(date +%s) - t0 )) s"
drain
note "effective compression ratio, same workload, same boot: Zswapped/Zswap" \
	"afmalloc ${ratio[afmalloc]}, zsmalloc ${ratio[zsmalloc]};" \
	"Zswapped/(pages held incl. metadata slabs) afmalloc ${held_ratio[afmalloc]}, zsmalloc ${held_ratio[zsmalloc]}"

# --- 5. switching back and forth under load ----------------------------------
# Pass 0 on afmalloc, pass 1 switching every second, pass 2 on afmalloc;
# the workload stops after each (the switches between passes are certain,
# those during pass 1 as many as its duration allows).
[ -z "$module" ] || insmod "$module" || fail "insmod $module after rmmod"
[ "$(afm_pools)" = 0 ] || fail "afmalloc zswap pools left before phase 5: $(ls $dbg/afmalloc)"
set_zpool afmalloc || fail "cannot select afmalloc again"
t0=$(date +%s)
start_load 3 stopeach
wait_stopped
afm_check "switching, pass 0 on afmalloc" zspage 1
set_zpool zsmalloc || fail "cannot switch to zsmalloc after pass 0"
switches=1 errs=0
kill -CONT $lpid
while [ -e /proc/$lpid ] && [[ "$(awk '{ print $3 }' /proc/$lpid/stat 2>/dev/null)" != [TZ] ]]; do
	sleep 1
	for a in afmalloc zsmalloc; do
		if set_zpool $a 2>/dev/null; then switches=$((switches + 1)); else errs=$((errs + 1)); fi
		[ $switches -lt 400 ] || break 2
	done
done
wait_stopped
note "switching: pass 1 done with $((switches - 1)) switches during it: stored_pages $(cat $dbg/zswap/stored_pages)," \
	"afmalloc objects $([ $afm_stats = 1 ] && afm_objects || echo '?')"
set_zpool afmalloc || fail "cannot switch to afmalloc after pass 1"
switches=$((switches + 1))
kill -CONT $lpid
wait_stopped
afm_check "switching, pass 2 on afmalloc" zspage 0
finish_load
[ "$errs" = 0 ] || fail "$errs zswap.zpool switches failed"
note "switched zswap.zpool $switches times while the workload ran 3 passes ($(( $(date +%s) - t0 )) s): every page verified"
set_zpool zsmalloc || fail "cannot switch to zsmalloc"
drain
if [ -n "$module" ]; then
	wait_until 20 rmmod afmalloc 2>/dev/null || fail "rmmod afmalloc refused after switching away"
	note "rmmod afmalloc succeeded again"
	insmod "$module" || fail "insmod $module"
fi

# --- 6. the other store -------------------------------------------------------
# No afmalloc zswap pool may be left: zswap would reuse it, not create one.
wait_until 20 [ "$(afm_pools)" = 0 ] || fail "afmalloc zswap pools left: $(ls $dbg/afmalloc)"
echo slab > $param || fail "zswap_store=slab refused"
set_zpool afmalloc || fail "zswap_store=slab: cannot create an afmalloc zswap pool"
[ $afm_stats = 0 ] || [ "$(afm_pools)" = 1 ] ||
	fail "zswap_store=slab: $(afm_pools) afmalloc zswap pools, not the one new pool"
t0=$(date +%s)
start_load 1 stop
wait_stopped
afm_check "zswap_store=slab" slab 1
finish_load
note "zswap_store=slab: workload written and verified in $(( $(date +%s) - t0 )) s" \
	"(stored_pages now $(cat $dbg/zswap/stored_pages))"
set_zpool zsmalloc || fail "cannot switch back to zsmalloc"
drain
echo zspage > $param
echo 0 > $zs/enabled
swapoff $zdev
[ -z "$module" ] || { wait_until 20 rmmod afmalloc 2>/dev/null || fail "final rmmod afmalloc"; }

if dmesg | grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace' >&2; then
	fail "kernel log shows warnings or oopses"
fi
note "PASS ($(uname -r), $([ -n "$module" ] && echo "module $module" || echo built-in))"
