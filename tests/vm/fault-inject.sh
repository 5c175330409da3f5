#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM fault-injection test (issue #8): under failslab and fail_page_alloc,
# every allocation failure must surface as an error to the caller, and
# nothing may be lost or leaked. Run as root inside the guest through
# scripts/vm-run.sh (boot with slab_nomerge, so every allocator's slab
# caches are its own; page_owner=on adds a page leak check by stack):
#
#   scripts/vm-run.sh --memory 2G --timeout 1200 \
#       --append "slab_nomerge page_owner=on" \
#       tests/vm/fault-inject.sh [--alloc LIST|none] [--blocks N] [--no-zswap]
#
# How faults are injected: failslab and fail_page_alloc (debugfs) with
# task-filter=Y, so only allocations made in the context of a task whose
# /proc/PID/make-it-fail is 1 can fail. A small C helper (built here with
# the host's gcc, seen through the shared root) sets its own make-it-fail
# around each pwrite(2) only, so its own page faults, the shell and the
# rest of the guest are never hit. ignore-gfp-wait=N (zram's second,
# sleeping GFP_NOIO attempt fails too), ignore-gfp-highmem=N (zram and
# zswap allocate with __GFP_HIGHMEM), min-order=0, interval=1, verbose=0.
# Injected faults are counted exactly: 'times' is set to a large number
# instead of -1, and the kernel decrements it once per injected failure
# (6.12's fault_attr has no other counter).
#
# Per zram allocator (default: every one /sys/block/zram0/allocator lists):
#   1. a 32 MiB device; N (default 4096) 4 KiB blocks, each a deterministic
#      function of (block, generation): same-filled words, incompressible
#      pages (huge) and text with a random head of 16..3015 bytes, so the
#      compressed sizes cover the allocator's whole object range;
#   2. pass 1 writes generation 1 to the first half of the blocks with
#      O_DIRECT under injection (40%): each write must succeed or fail
#      with EIO/ENOMEM (anything else, a short write or a silent success
#      fails the test), and some must fail; io_stat's failed_writes must
#      grow by exactly the failures seen, and mm_stat's orig_data_size
#      must equal the blocks holding data. Why 40%: a write fails only
#      when zram's two allocation attempts both fail, and afmalloc/zspage
#      opens a zspage (about 20 objects) with one order-3 allocation, then
#      page by page: at 25% a zspage failed both attempts about once in
#      20, a few writes in 2048 (one in a make check run); at 40%, one in
#      6 or 7;
#   3. pass 2 writes generation 2 to every block (50%): in the first half
#      an overwrite, which a failed write must leave with the block's
#      previous content; in the second half new data, which no allocator
#      can place in the memory it already holds, so the writer itself
#      must allocate pages, and some of those writes must fail (an
#      overwrite alone may fit in the holes the previous ones left and
#      never reach the page allocator). afmalloc's automatic compaction is
#      off during both passes, so that only the writer allocates;
#   4. injection off: every block is read back and compared byte for byte
#      with what its last successful write wrote (zeros if none): lost = 0;
#   5. 3 blocks in 4 discarded, with afmalloc's automatic compaction off
#      (afmalloc.zspage_auto_permille=0) so that the holes stay for the
#      compact attribute (an afmalloc/zspage pool must show at least half
#      the discarded compressed bytes as holes in its debugfs "free" row);
#      compaction triggered three times by the helper under injection
#      (10%; afmalloc's compaction allocates its destinations, so for its
#      stores the faults injected over the three must be > 0; zsmalloc's
#      allocates nothing and gets none), then once
#      without: pages_compacted (mm_stat) must have grown and
#      mem_used_total shrunk over the four (the zspage store: by at least
#      a quarter of its holes, which must have shrunk too); every block
#      verified again;
#   6. every block not at generation 2 is rewritten (must all succeed) and
#      the whole device verified again;
#   7. the whole device is discarded: orig/compr_data_size 0, and after
#      compaction the allocator holds no page (mem_used_total, afmalloc's
#      debugfs "pages") and its slab caches no object (/proc/slabinfo,
#      after a shrink); reset: afmalloc's debugfs pool and the pool's slab
#      caches are gone; with page_owner=on, no page allocated under the
#      allocator's functions is still allocated.
# zswap on afmalloc: zram (zsmalloc) is the swap device; a process in a
# cgroup with memory.max 24 MiB fills 64 MiB of checksummed anonymous memory
# while its make-it-fail is 1 (all its allocations, including those of the
# reclaim it does itself, i.e. zswap stores, may fail), then verifies every
# page with injection off. zswap's reject_alloc_fail (zpool_malloc(), i.e.
# afmalloc, failed) must grow; reject_kmemcache_fail (zswap's own entry
# cache failed before the allocator was called) is counted apart and
# proves nothing about afmalloc. After swapoff and switching zswap away,
# the afmalloc pool and its caches must be gone.
#
# afmalloc's own statistics (debugfs pool "objects", "stored_bytes") must
# account for what zram stored after each write pass: objects = stored
# blocks - same-filled blocks, stored_bytes = compr_data_size; so every
# failed write left nothing behind in afmalloc. (In 6.12's zram a
# full-page write fails only when the allocator's malloc or write does:
# failed_writes > 0 means the injected faults reached the allocator.)
#
# Output: one summary line per allocator, the source of the README's
# reliability table:
#   fault-inject: alloc=NAME writes=N failed=M verified=K lost=0 leaked_pages=0 injected=X
# (zswap: writes = store attempts that reached the allocator, failed =
# stores zswap rejected because afmalloc's malloc failed,
# rejected_before_alloc = zswap entry cache failures, verified = pages
# checked) and "fault-inject: PASS" or "fault-inject: FAIL: ..." with exit
# status 1; status 77 ("fault-inject: SKIPPED") when nothing failed but
# the page_owner leak check could not run (boot without page_owner=on).
# About 3 minutes under TCG with page_owner=on (2.5 without).
set -euo pipefail

summary=()
fail() {
	fi_off 2>/dev/null || true
	[ ${#summary[@]} -eq 0 ] || printf '%s\n' "${summary[@]}"
	echo "fault-inject: FAIL: $*" >&2
	exit 1
}
say() { echo "fault-inject: $*"; }

allocs= blocks=4096 do_zswap=1 swap_mb=64 limit_mb=24
while [ $# -gt 0 ]; do
	case "$1" in
	--alloc) allocs=${2:?}; shift ;;
	--blocks) blocks=${2:?}; shift ;;
	--no-zswap) do_zswap=0 ;;
	--swap-mb) swap_mb=${2:?}; shift ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || fail "must run as root (inside the guest)"
[ "${AFMALLOC_IN_VM:-}" = 1 ] || fail "runs inside a throw-away VM (scripts/vm-run.sh) only"
[[ "$blocks" =~ ^[1-9][0-9]*$ ]] && [ "$blocks" -ge 2 ] && [ "$blocks" -le 8192 ] || fail "--blocks wants 2..8192"
for t in gcc blkdiscard mkswap swapon swapoff; do
	command -v $t >/dev/null || fail "$t not found"
done

dbg=/sys/kernel/debug
mountpoint -q $dbg || mount -t debugfs none $dbg
fs=$dbg/failslab fp=$dbg/fail_page_alloc
[ -d $fs ] && [ -d $fp ] ||
	fail "no $fs or $fp: kernel without CONFIG_FAILSLAB/CONFIG_FAIL_PAGE_ALLOC/CONFIG_FAULT_INJECTION_DEBUG_FS"
[ -f /proc/self/make-it-fail ] || fail "no /proc/self/make-it-fail"
grep -qw slab_nomerge /proc/cmdline ||
	say "note: booted without slab_nomerge: the allocators' slab caches may be merged with others"
sys=/sys/block/zram0
[ -d $sys ] || fail "no zram0 (is zram built in?)"
if [ -z "$allocs" ]; then
	if [ -f $sys/allocator ]; then
		allocs=$(tr -d '[]' < $sys/allocator | tr ' ' ',')
	else
		allocs=zsmalloc
	fi
fi
page_owner=0 skipped=()
if [ -r $dbg/page_owner_stacks/show_stacks ]; then  # only there with page_owner=on
	page_owner=1
else
	say "SKIP: the page leak check by allocation stack (boot with page_owner=on)"
	skipped+=(page_owner)
fi
say "kernel $(uname -r), $(nproc) CPUs, allocators: $allocs, $blocks blocks;" \
	"page_owner $([ $page_owner = 1 ] && echo on || echo "off (boot with page_owner=on for the page leak check by stack)")"

work=$(mktemp -d /tmp/fault-inject.XXXXXX)
swapdev= cgdir= zswap_was=
auto=/sys/module/afmalloc/parameters/zspage_auto_permille auto_was=
cleanup() {
	fi_off 2>/dev/null || true
	[ -z "$auto_was" ] || echo "$auto_was" > $auto 2>/dev/null || true
	[ -z "$swapdev" ] || swapoff "$swapdev" 2>/dev/null || true
	[ -z "$zswap_was" ] || echo "$zswap_was" > /sys/module/zswap/parameters/enabled 2>/dev/null || true
	echo 1 > $sys/reset 2>/dev/null || true
	[ -z "$cgdir" ] || rmdir "$cgdir" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# ------------------------------------------------------------ the helper

cat > "$work/fi-helper.c" <<'CEOF'
/*
 * fi-helper: writes, reads and swaps under fault injection; sets its own
 * /proc/self/make-it-fail only around the calls that are meant to fail.
 *   write DEV N GEN STATE inject|clean [COUNT]
 *                                        write block i = content(i, GEN)
 *                                        for i < COUNT (default: N)
 *   verify DEV N STATE                   read back, compare with STATE
 *   discard DEV N STATE                  discard 3 blocks in 4
 *   compact SYSFILE                      write "1" to SYSFILE, injected
 *   swap MB                              zswap workload (see the script)
 * STATE: one byte per block, the generation it holds (0: never written).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096
static int mif = -1;
static int no_random;	/* swap: well-compressible pages only */

static void die(const char *what)
{
	fprintf(stderr, "fi-helper: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void inject(int on)
{
	if (mif < 0 || pwrite(mif, on ? "1" : "0", 1, 0) != 1)
		die("make-it-fail");
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Block i, generation g: same-filled (1/32), random (2/32) or text. */
static void fill(unsigned char *p, uint64_t i, unsigned int g)
{
	uint64_t s = mix(i * 1000003ull + g * 7919ull + 1), r = s, w;
	unsigned int kind = (s >> 40) % 32;
	size_t head, k;
	char line[64];
	int n;

	if (!g) {
		memset(p, 0, PG);
		return;
	}
	if (kind == 0) {
		w = s | 1;
		for (k = 0; k < PG; k += 8)
			memcpy(p + k, &w, 8);
		return;
	}
	if (no_random)	/* about 8:1, so 3x memory.max fits compressed */
		head = 16 + s % 752;
	else
		head = kind <= 2 ? PG : 16 + s % 3000;
	for (k = 0; k < head; k += 8) {
		r = mix(r);
		memcpy(p + k, &r, head - k < 8 ? head - k : 8);
	}
	n = snprintf(line, sizeof(line), "fault-inject block %llu gen %u. ",
		     (unsigned long long)i, g);
	for (k = head; k < PG; k++)
		p[k] = line[(k - head) % n];
}

static unsigned char *load_state(const char *path, size_t n)
{
	unsigned char *st = calloc(n, 1);
	FILE *f = fopen(path, "rb");

	if (!st)
		die("calloc");
	if (f) {
		if (fread(st, 1, n, f) != n)
			die("short state file");
		fclose(f);
	}
	return st;
}

static void save_state(const char *path, const unsigned char *st, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(st, 1, n, f) != n || fclose(f))
		die("state file");
}

static int do_write(const char *dev, size_t n, unsigned int gen,
		    const char *state, int inj, size_t count)
{
	unsigned char *buf, *st = load_state(state, n);
	size_t i, ok = 0, eio = 0, enomem = 0;
	int fd = open(dev, O_RDWR | O_DIRECT);
	ssize_t ret;
	int err;

	if (fd < 0)
		die(dev);
	if (posix_memalign((void **)&buf, PG, PG))
		die("posix_memalign");
	for (i = 0; i < count; i++) {
		fill(buf, i, gen);
		if (inj)
			inject(1);
		ret = pwrite(fd, buf, PG, (off_t)i * PG);
		err = errno;
		if (inj)
			inject(0);
		if (ret == PG) {
			st[i] = gen;
			ok++;
		} else if (ret < 0 && err == EIO) {
			eio++;
		} else if (ret < 0 && err == ENOMEM) {
			enomem++;
		} else {
			fprintf(stderr, "fi-helper: block %zu: pwrite returned %zd (%s)\n",
				i, ret, ret < 0 ? strerror(err) : "short write");
			return 2;
		}
		if (!inj && ret != PG) {
			fprintf(stderr, "fi-helper: block %zu: write without injection failed: %s\n",
				i, strerror(err));
			return 2;
		}
	}
	close(fd);
	save_state(state, st, n);
	printf("writes=%zu ok=%zu failed=%zu eio=%zu enomem=%zu stored=", count, ok,
	       eio + enomem, eio, enomem);
	for (ok = 0, i = 0; i < n; i++)
		ok += st[i] != 0;
	printf("%zu\n", ok);
	return 0;
}

static int do_verify(const char *dev, size_t n, const char *state)
{
	unsigned char *buf, *ref, *st = load_state(state, n);
	size_t i, verified = 0, zero = 0, lost = 0;
	int fd = open(dev, O_RDONLY | O_DIRECT);

	if (fd < 0)
		die(dev);
	if (posix_memalign((void **)&buf, PG, PG) || !(ref = malloc(PG)))
		die("alloc");
	for (i = 0; i < n; i++) {
		if (pread(fd, buf, PG, (off_t)i * PG) != PG) {
			fprintf(stderr, "fi-helper: block %zu: read failed: %s\n",
				i, strerror(errno));
			lost++;
			continue;
		}
		fill(ref, i, st[i]);
		if (memcmp(buf, ref, PG)) {
			if (lost < 10)
				fprintf(stderr, "fi-helper: block %zu differs from generation %u\n",
					i, st[i]);
			lost++;
		} else if (st[i]) {
			verified++;
		} else {
			zero++;
		}
	}
	close(fd);
	printf("verified=%zu zero=%zu lost=%zu\n", verified, zero, lost);
	return 0;
}

/* Discard every block but one in four (state: never written). */
static int do_discard(const char *dev, size_t n, const char *state)
{
	unsigned char *st = load_state(state, n);
	int fd = open(dev, O_RDWR);
	uint64_t range[2];
	size_t i, done = 0;

	if (fd < 0)
		die(dev);
	for (i = 0; i < n; i++) {
		if (i % 4 == 0)
			continue;
		range[0] = (uint64_t)i * PG;
		range[1] = PG;
		if (ioctl(fd, BLKDISCARD, range))
			die("BLKDISCARD");
		st[i] = 0;
		done++;
	}
	close(fd);
	save_state(state, st, n);
	for (range[0] = 0, i = 0; i < n; i++)
		range[0] += st[i] != 0;
	printf("discarded=%zu stored=%llu\n", done, (unsigned long long)range[0]);
	return 0;
}

static int do_compact(const char *path)
{
	int fd = open(path, O_WRONLY), tries;
	ssize_t ret = -1;

	if (fd < 0)
		die(path);
	/* sysfs may fail the write's own buffer allocation: try again. */
	for (tries = 1; tries <= 1000; tries++) {
		inject(1);
		ret = pwrite(fd, "1", 1, 0);
		inject(0);
		if (ret == 1 || (ret < 0 && errno != ENOMEM))
			break;
	}
	if (ret != 1)
		die("compact");
	printf("compact tries=%d\n", tries);
	return 0;
}

/* Fill MB MiB with make-it-fail set, so that the reclaim this task does
 * under its cgroup's memory.max (zswap stores) runs under injection. */
static int do_swap(size_t mb)
{
	size_t npages = mb << 8, i, bad = 0;
	unsigned char *mem, ref[PG];

	mem = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");
	madvise(mem, npages * PG, MADV_NOHUGEPAGE);
	/* Compressible only: zswap sends a random page to the swap device. */
	no_random = 1;
	inject(1);
	for (i = 0; i < npages; i++)
		fill(mem + i * PG, i, 1);
	/* Read every other page back, still under injection: swap-ins. */
	for (i = 0; i < npages; i += 2)
		bad += mem[i * PG + PG - 1] == 0;
	inject(0);
	for (i = 0; i < npages; i++) {
		fill(ref, i, 1);
		if (memcmp(ref, mem + i * PG, PG) && bad++ < 10)
			fprintf(stderr, "fi-helper: page %zu differs\n", i);
	}
	printf("verified=%zu lost=%zu\n", npages - bad, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	mif = open("/proc/self/make-it-fail", O_WRONLY);	/* checked by inject() */
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "write")) {
		size_t n = strtoul(argv[3], NULL, 0);
		size_t count = argc == 8 ? strtoul(argv[7], NULL, 0) : n;

		return do_write(argv[2], n, strtoul(argv[4], NULL, 0), argv[5],
				!strcmp(argv[6], "inject"),
				count < n ? count : n);
	}
	if (argc == 5 && !strcmp(argv[1], "verify"))
		return do_verify(argv[2], strtoul(argv[3], NULL, 0), argv[4]);
	if (argc == 5 && !strcmp(argv[1], "discard"))
		return do_discard(argv[2], strtoul(argv[3], NULL, 0), argv[4]);
	if (argc == 3 && !strcmp(argv[1], "compact"))
		return do_compact(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "swap"))
		return do_swap(strtoul(argv[2], NULL, 0));
	fprintf(stderr, "fi-helper: bad arguments\n");
	return 2;
}
CEOF
gcc -O2 -Wall -Werror -o "$work/fi-helper" "$work/fi-helper.c" || fail "cannot build the helper"
helper=$work/fi-helper

# --------------------------------------------------------- fault injection

BIG=1000000000
fi_on() {  # PERCENT: arm both, for make-it-fail tasks only
	local d
	for d in $fs $fp; do
		echo Y > $d/task-filter
		echo 0 > $d/verbose
		echo 0 > $d/space
		echo 1 > $d/interval
		echo N > $d/ignore-gfp-wait
		echo $BIG > $d/times
		echo "$1" > $d/probability
	done
	echo N > $fs/cache-filter
	echo N > $fp/ignore-gfp-highmem
	echo 0 > $fp/min-order
}
fi_off() {
	echo 0 > $fs/probability
	echo 0 > $fp/probability
}
fi_count() {  # faults injected since fi_on (slab + page)
	echo $(( 2 * BIG - $(cat $fs/times) - $(cat $fp/times) ))
}
fi_count_detail() { echo "failslab $(( BIG - $(cat $fs/times) )), fail_page_alloc $(( BIG - $(cat $fp/times) ))"; }

# ---------------------------------------------------------------- helpers

mm() { awk -v f="$1" '{ print $f }' $sys/mm_stat; }
failed_writes() { awk '{ print $2 }' $sys/io_stat; }
kv() { sed -n "s/.*\<$1=\([0-9]*\).*/\1/p" <<< "$2"; }

caches_re() {  # ALLOC POOL: regex of the allocator's own slab caches
	case "$1" in
	zsmalloc) echo "^(zs_handle|zspage)-$2\$" ;;
	afmalloc/*) echo "^afm-$2-" ;;
	*) echo '^$' ;;
	esac
}
cache_names() { awk -v re="$1" 'NR > 2 && $1 ~ re { print $1 }' /proc/slabinfo; }
cache_objs() {  # REGEX: live objects of the matching caches, after a shrink
	local c
	for c in $(cache_names "$1"); do
		[ -w /sys/kernel/slab/$c/shrink ] && echo 1 > /sys/kernel/slab/$c/shrink
	done
	awk -v re="$1" 'NR > 2 && $1 ~ re { n += $2 } END { print n + 0 }' /proc/slabinfo
}
afm_pages() {  # POOL: afmalloc's own count of the pages the pool holds
	awk '$1 == "pages" { print $2 }' $dbg/afmalloc/$1/pool 2>/dev/null || echo 0
}
afm_stat() {  # POOL ROW: a row of afmalloc's debugfs pool file
	awk -v k="$2" '$1 == k { print $2 }' $dbg/afmalloc/$1/pool
}
afm_holes() {  # POOL: hole bytes of a zspage-store pool (classes, "free")
	awk '$1 == "free" { print $2 }' $dbg/afmalloc/$1/classes
}
# afm_account ALLOC WHEN: afmalloc's statistics of zram0's pool hold what
# zram stored, no more (idle device only).
afm_account() {
	local objs bytes want
	case "$1" in afmalloc/*) ;; *) return 0 ;; esac
	[ -r $dbg/afmalloc/zram0/pool ] || fail "$1: $2: no afmalloc debugfs pool for zram0"
	objs=$(afm_stat zram0 objects) bytes=$(afm_stat zram0 stored_bytes)
	want=$(( $(mm 1) / 4096 - $(mm 6) ))
	say "$1: $2: afmalloc pool zram0 holds $objs objects, $bytes bytes;" \
		"zram: $want blocks in the allocator, compr_data_size $(mm 2)"
	[ "$objs" -eq "$want" ] && [ "$bytes" -eq "$(mm 2)" ] ||
		fail "$1: $2: afmalloc holds $objs objects ($bytes bytes), zram stored $want blocks ($(mm 2) bytes) in it"
}
# Pages still allocated whose allocation stack runs through REGEX, slab
# pages excepted (a kmalloc slab page first allocated for the allocator may
# legitimately live on with other objects; the allocator's own caches are
# checked through slabinfo and by their destruction), and so are the stack
# depot's pages (KASAN and kmemleak record allocation stacks there; the
# depot keeps its pages for good, whoever's allocation filled them).
owner_pages() {
	[ $page_owner = 1 ] || { echo 0; return; }
	awk -v re="$1" '
		/^nr_base_pages:/ { if (hit && !slab) n += $2; hit = slab = 0; next }
		/allocate_slab|new_slab|stack_depot_save/ { slab = 1 }
		$0 ~ re { hit = 1 }
		END { print n + 0 }' $dbg/page_owner_stacks/show_stacks
}
owner_stacks() {  # REGEX: print the stacks counted by owner_pages
	awk -v re="$1" '
		/^nr_base_pages:/ { if (hit && !slab) printf "%s%s\n", s, $0; hit = slab = 0; s = ""; next }
		{ s = s $0 "\n" }
		/allocate_slab|new_slab|stack_depot_save/ { slab = 1 }
		$0 ~ re { hit = 1 }' $dbg/page_owner_stacks/show_stacks | head -n 60 >&2
}
owner_re() {
	case "$1" in
	zsmalloc) echo '(zs_malloc|alloc_zspage|zs_create_pool)' ;;
	afmalloc/*|zswap) echo '(afm_[a-z_]+|afmalloc)' ;;
	esac
}
# shellcheck source=lib/wait.sh
. "$(dirname "$(realpath "$0")")/lib/wait.sh"	# wait_until SECONDS CMD...

# ------------------------------------------------------------------- zram

zram_one() {  # ALLOC
	local a=$1 st=$work/state out inj=0 t0 f0 f1 total_writes=0 total_failed=0
	local verified lost leaked=0 held objs re pool=zram0 own0 own1 v c0 u0
	t0=$(date +%s)
	say "== $a"
	echo 1 > $sys/reset
	[ ! -f $sys/allocator ] || echo "$a" > $sys/allocator || fail "$a: cannot select it"
	echo lz4 > $sys/comp_algorithm
	echo 32M > $sys/disksize || fail "$a: disksize"
	re=$(caches_re "$a" $pool)
	rm -f "$st"
	own0=$(owner_pages "$(owner_re "$a")")

	# Only the writer allocates while faults are injected: afmalloc's
	# compaction worker, which may open zspages, waits until after the
	# compaction below.
	if [ -w $auto ]; then
		auto_was=$(cat $auto)
		echo 0 > $auto
	fi
	for pass in 1:40:$((blocks / 2)) 2:50:$blocks; do
		local gen=${pass%%:*} pct count=${pass##*:}
		pct=${pass#*:} pct=${pct%:*}
		f0=$(failed_writes)
		fi_on "$pct"
		out=$("$helper" write /dev/zram0 "$blocks" "$gen" "$st" inject "$count") ||
			{ fi_off; fail "$a: pass $gen: $out"; }
		v=$(fi_count)
		fi_off
		inj=$((inj + v))
		f1=$(failed_writes)
		say "$a: pass $gen (${pct}%): $out; injected $(fi_count_detail);" \
			"failed_writes $f0 -> $f1; mm_stat $(cat $sys/mm_stat)"
		total_writes=$((total_writes + $(kv writes "$out")))
		total_failed=$((total_failed + $(kv failed "$out")))
		[ "$v" -gt 0 ] || fail "$a: pass $gen: no fault was injected"
		[ "$(kv writes "$out")" -eq "$count" ] || fail "$a: pass $gen: $out, but $count writes were asked for"
		[ "$(kv failed "$out")" -gt 0 ] || fail "$a: pass $gen: $v faults injected, yet no write failed"
		[ $((f1 - f0)) -eq "$(kv failed "$out")" ] ||
			fail "$a: pass $gen: io_stat failed_writes grew by $((f1 - f0)), the writer saw $(kv failed "$out") failures"
		[ "$(mm 1)" -eq $(( $(kv stored "$out") * 4096 )) ] ||
			fail "$a: pass $gen: orig_data_size $(mm 1), but $(kv stored "$out") blocks hold data"
		afm_account "$a" "pass $gen"
	done

	# The page_owner check should see the allocator's pages while it holds
	# some. It cannot always: page_owner saves each new allocation stack in
	# the stack depot, whose own allocations in the writer's context are
	# subject to the injected failures (the page is then recorded under
	# page_owner's failure stack), and the slab store's pages are mostly
	# slab pages, which this check leaves aside. So a miss here is reported,
	# not fatal; the leak checks below still count every page that was
	# recorded, and mm_stat, afmalloc's debugfs count and slabinfo are
	# checked independently of page_owner.
	if [ $page_owner = 1 ]; then
		v=$(owner_pages "$(owner_re "$a")")
		if [ "$v" -gt "$own0" ]; then
			say "$a: page_owner: $((v - own0)) pages allocated under $(owner_re "$a") (slab pages aside)"
		else
			say "$a: page_owner: no recorded page under $(owner_re "$a") with $(mm 3) bytes in use" \
				"(stacks lost to injected stack-depot failures, or slab pages only); leak check by stack weaker for this allocator"
		fi
	fi

	# Every block, injection off: what its last successful write wrote.
	out=$("$helper" verify /dev/zram0 "$blocks" "$st")
	say "$a: read back (injection off): $out"
	lost=$(kv lost "$out") verified=$(kv verified "$out")
	[ "$lost" -eq 0 ] || fail "$a: $lost blocks lost or corrupted"

	# Compaction, itself under injection, after freeing 3 objects in 4.
	# The zspage store's automatic compaction would take those holes
	# first (and the compact attribute would find nothing): still off.
	local h0= h1= cinj=0 cc0 cu0 cb
	cb=$(mm 2)
	out=$("$helper" discard /dev/zram0 "$blocks" "$st") || fail "$a: discard: $out"
	[ "$(mm 1)" -eq $(( $(kv stored "$out") * 4096 )) ] ||
		fail "$a: after discarding 3 blocks in 4: orig_data_size $(mm 1), but $(kv stored "$out") blocks hold data"
	say "$a: $out; mm_stat $(cat $sys/mm_stat)"
	afm_account "$a" "after the discard"
	if [ "$a" = afmalloc/zspage ]; then
		# Nearly every zspage keeps some of its objects: the discarded
		# bytes stay as holes, unless something compacted them away.
		h0=$(afm_holes zram0)
		say "$a: holes before compaction: $h0 bytes ($((cb - $(mm 2))) compressed bytes discarded)"
		[ "$h0" -ge $(( (cb - $(mm 2)) / 2 )) ] ||
			fail "$a: only $h0 bytes of holes after discarding $((cb - $(mm 2))) bytes: compacted before the compact attribute ran"
	fi
	cc0=$(mm 7) cu0=$(mm 3)
	# 10%, three times: a pass may stop at its first failed allocation,
	# the point is failures in the middle of one; then once without
	# injection, which must finish the job.
	for v in 1 2 3 clean; do
		c0=$(mm 7) u0=$(mm 3)
		if [ $v = clean ]; then
			echo 1 > $sys/compact
			out="without injection" v=0
		else
			fi_on 10
			out=$("$helper" compact $sys/compact) || { fi_off; fail "$a: compact: $out"; }
			v=$(fi_count)
			fi_off
			out="under injection: $out, injected $v"
		fi
		inj=$((inj + v)) cinj=$((cinj + v))
		say "$a: compaction $out;" \
			"mem_used_total $u0 -> $(mm 3), pages_compacted $c0 -> $(mm 7)" \
			"$([ -z "$h0" ] || echo ", holes $(afm_holes zram0) bytes")"
	done
	[ -z "$auto_was" ] || { echo "$auto_was" > $auto; auto_was=; }
	[ "$(mm 7)" -gt "$cc0" ] || fail "$a: compaction gave no page back (pages_compacted $cc0 -> $(mm 7))"
	[ "$(mm 3)" -lt "$cu0" ] || fail "$a: mem_used_total did not shrink with compaction ($cu0 -> $(mm 3))"
	if [ -n "$h0" ]; then
		h1=$(afm_holes zram0)
		[ "$h1" -lt "$h0" ] || fail "$a: compaction left the holes at $h1 bytes (before: $h0)"
		[ $((cu0 - $(mm 3))) -ge $((h0 / 4)) ] ||
			fail "$a: compaction gave back $((cu0 - $(mm 3))) bytes of pages, less than a quarter of the $h0 bytes of holes"
	fi
	# zsmalloc's compaction moves objects into its zspages' free slots and
	# allocates nothing; afmalloc's allocates where the objects go.
	case "$a" in
	afmalloc/*) [ "$cinj" -gt 0 ] || fail "$a: no fault was injected into the three compactions" ;;
	esac
	say "$a: compaction: $((cu0 - $(mm 3))) bytes of pages given back, pages_compacted +$(( $(mm 7) - cc0 ))," \
		"$cinj faults injected into it"
	afm_account "$a" "after compaction"
	out=$("$helper" verify /dev/zram0 "$blocks" "$st")
	say "$a: read back after compaction: $out"
	v=$(kv lost "$out")
	lost=$((lost + v))
	[ "$v" -eq 0 ] || fail "$a: $v blocks lost or corrupted by compaction"

	out=$("$helper" write /dev/zram0 "$blocks" 2 "$st" clean) || fail "$a: rewrite: $out"
	out=$("$helper" verify /dev/zram0 "$blocks" "$st")
	[ "$(kv lost "$out")" -eq 0 ] && [ "$(kv verified "$out")" -eq "$blocks" ] ||
		fail "$a: after rewriting the failed blocks: $out"
	say "$a: failed blocks rewritten without injection; all $blocks blocks verified"

	# Free everything: nothing may stay behind.
	blkdiscard /dev/zram0
	[ "$(mm 1)" -eq 0 ] && [ "$(mm 2)" -eq 0 ] ||
		fail "$a: after discarding the whole device: mm_stat $(cat $sys/mm_stat)"
	echo 1 > $sys/compact
	wait_until 10 [ "$(mm 3)" -eq 0 ] || true
	held=$(( $(mm 3) / 4096 ))
	objs=$(cache_objs "$re")
	say "$a: all discarded: mm_stat $(cat $sys/mm_stat); objects in $(cache_names "$re" | wc -l) caches: $objs" \
		"$([ -d $dbg/afmalloc/$pool ] && echo "; afmalloc pool pages $(afm_pages $pool)")"
	[ "$held" -eq 0 ] || say "$a: LEAK: $held pages still held with nothing stored"
	[ "$objs" -eq 0 ] || say "$a: LEAK: $objs slab objects still live with nothing stored"
	[ ! -d $dbg/afmalloc/$pool ] || [ "$(afm_pages $pool)" -eq 0 ] ||
		say "$a: LEAK: afmalloc debugfs counts $(afm_pages $pool) pages"
	leaked=$((held + objs))

	echo 1 > $sys/reset
	[ "$(mm 3)" -eq 0 ] || fail "$a: mem_used_total $(mm 3) after reset"
	[ ! -e $dbg/afmalloc/$pool ] || { say "$a: LEAK: afmalloc pool $pool still in debugfs after reset"; leaked=$((leaked + 1)); }
	v=$(cache_names "$re" | tr '\n' ' ')
	[ -z "$v" ] || { say "$a: LEAK: caches left after reset: $v"; leaked=$((leaked + 1)); }
	if [ $page_owner = 1 ]; then
		own1=$(owner_pages "$(owner_re "$a")")
		if [ "$own1" -gt "$own0" ]; then
			say "$a: LEAK: $((own1 - own0)) pages allocated under $(owner_re "$a") still allocated after reset:"
			owner_stacks "$(owner_re "$a")"
			leaked=$((leaked + own1 - own0))
		fi
	fi
	say "$a: done in $(( $(date +%s) - t0 )) s"
	summary+=("fault-inject: alloc=$a writes=$total_writes failed=$total_failed verified=$verified lost=$lost leaked_pages=$leaked injected=$inj")
	[ "$leaked" -eq 0 ] || fail "$a: leaked (see above)"
}

[ "$allocs" = none ] || for a in ${allocs//,/ }; do
	zram_one "$a"
done

# ------------------------------------------------------------------ zswap

zswap_afmalloc() {
	local zs=/sys/module/zswap/parameters cg=/sys/fs/cgroup z=$dbg/zswap
	local out rc inj t0 r0 r1 k0 k1 o0 o1 failed kfailed writes verified lost leaked=0 v own0
	t0=$(date +%s)
	say "== zswap on afmalloc"
	[ -d $zs ] || fail "this kernel has no zswap"
	zswap_was=$(cat $zs/enabled)
	echo 0 > $zs/enabled
	echo lz4 > $zs/compressor 2>/dev/null || true
	echo 100 > $zs/max_pool_percent
	own0=$(owner_pages "$(owner_re zswap)")
	echo afmalloc > $zs/zpool || fail "cannot select afmalloc as zswap.zpool"
	[ "$(cat $zs/zpool)" = afmalloc ] || fail "zswap.zpool is $(cat $zs/zpool)"
	echo 1 > $zs/enabled

	echo 1 > $sys/reset
	[ ! -f $sys/allocator ] || echo zsmalloc > $sys/allocator
	echo lz4 > $sys/comp_algorithm
	echo 512M > $sys/disksize
	mkswap -q /dev/zram0 >/dev/null
	swapon /dev/zram0
	swapdev=/dev/zram0

	grep -q "^cgroup2 $cg " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2"
	grep -qw memory $cg/cgroup.controllers || fail "no memory controller in cgroup v2"
	echo +memory > $cg/cgroup.subtree_control 2>/dev/null || true
	cgdir=$cg/fault-inject
	mkdir -p $cgdir
	echo $((limit_mb << 20)) > $cgdir/memory.max

	r0=$(cat $z/reject_alloc_fail) k0=$(cat $z/reject_kmemcache_fail)
	o0=$(awk '$1 == "zswpout" { print $2 }' $cgdir/memory.stat)
	fi_on 20
	rc=0
	out=$(bash -c 'echo $$ > '"$cgdir"'/cgroup.procs && exec "$@"' _ "$helper" swap "$swap_mb") || rc=$?
	inj=$(fi_count)
	say "zswap: injected $(fi_count_detail)"
	fi_off
	r1=$(cat $z/reject_alloc_fail) k1=$(cat $z/reject_kmemcache_fail)
	o1=$(awk '$1 == "zswpout" { print $2 }' $cgdir/memory.stat)
	say "zswap: workload ($swap_mb MiB, memory.max ${limit_mb} MiB): $out; zswpout $((o1 - o0))," \
		"reject_alloc_fail $r0 -> $r1, reject_kmemcache_fail $k0 -> $k1, written_back_pages $(cat $z/written_back_pages)," \
		"swap device mm_stat $(cat $sys/mm_stat)," \
		"memory.events: $(tr '\n' ' ' < $cgdir/memory.events)"
	[ $rc -eq 0 ] || fail "zswap: the workload failed (status $rc): $out"
	verified=$(kv verified "$out") lost=$(kv lost "$out")
	[ "$lost" -eq 0 ] || fail "zswap: $lost pages lost"
	[ "$verified" -eq $((swap_mb << 8)) ] || fail "zswap: only $verified pages verified"
	# Only reject_alloc_fail is a failure of afmalloc (zpool_malloc());
	# reject_kmemcache_fail is zswap's entry cache, before the allocator.
	failed=$(( r1 - r0 )) kfailed=$(( k1 - k0 ))
	writes=$(( o1 - o0 + failed ))
	[ "$inj" -gt 0 ] || fail "zswap: no fault was injected"
	[ "$failed" -gt 0 ] ||
		fail "zswap: $inj faults injected, yet no store failed in afmalloc (reject_alloc_fail +0; reject_kmemcache_fail +$kfailed, zswap's own cache)"
	[ $((o1 - o0)) -gt $((swap_mb << 6)) ] || fail "zswap: only $((o1 - o0)) pages went to zswap"

	# Drain: swapoff frees every entry (the workload has exited, so there
	# are none left); the pool must then hold nothing.
	swapoff /dev/zram0
	swapdev=
	[ "$(cat $z/stored_pages)" -eq 0 ] || fail "zswap: stored_pages $(cat $z/stored_pages) after swapoff"
	local pools p
	pools=$(ls $dbg/afmalloc 2>/dev/null | grep '^zswap' || true)
	for p in $pools; do
		v=$(afm_pages "$p")
		say "zswap: drained afmalloc pool $p: pages $v, objects in its caches $(cache_objs "^afm-$p-")"
		[ "$v" -eq 0 ] || { say "zswap: LEAK: pool $p holds $v pages after swapoff"; leaked=$((leaked + v)); }
		v=$(cache_objs "^afm-$p-")
		[ "$v" -eq 0 ] || { say "zswap: LEAK: $v objects live in afm-$p-* after swapoff"; leaked=$((leaked + v)); }
	done
	echo zsmalloc > $zs/zpool
	echo 0 > $zs/enabled
	wait_until 20 [ -z "$(ls $dbg/afmalloc 2>/dev/null | grep '^zswap')" ] ||
		{ say "zswap: LEAK: afmalloc pools left: $(ls $dbg/afmalloc)"; leaked=$((leaked + 1)); }
	v=$(cache_names '^afm-zswap' | tr '\n' ' ')
	[ -z "$v" ] || { say "zswap: LEAK: caches left: $v"; leaked=$((leaked + 1)); }
	if [ $page_owner = 1 ]; then
		v=$(( $(owner_pages "$(owner_re zswap)") - own0 ))
		if [ "$v" -gt 0 ]; then
			say "zswap: LEAK: $v pages allocated under afmalloc still allocated:"
			owner_stacks "$(owner_re zswap)"
			leaked=$((leaked + v))
		fi
	fi
	echo 1 > $sys/reset
	rmdir $cgdir; cgdir=
	say "zswap: done in $(( $(date +%s) - t0 )) s"
	summary+=("fault-inject: alloc=zswap/afmalloc writes=$writes failed=$failed rejected_before_alloc=$kfailed verified=$verified lost=$lost leaked_pages=$leaked injected=$inj")
	[ "$leaked" -eq 0 ] || fail "zswap: leaked (see above)"
}

[ $do_zswap = 0 ] || zswap_afmalloc

if dmesg | grep -E 'Objects remaining|Slab cache still has objects|Bad page state' >&2; then
	fail "the kernel log reports leaked or damaged objects or pages"
fi
printf '%s\n' "${summary[@]}"
if [ ${#skipped[@]} -gt 0 ]; then
	say "SKIPPED: ${skipped[*]} (see SKIP above); nothing failed"
	exit 77
fi
say "PASS"
