#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The afmalloc RFC workload, run inside the guest as root:
#   ext4 on zram mounted -o discard; untar a kernel tree; remove
#   drivers arch fs sound include (in that order) and then the rest;
#   sync and sample after every step; optionally N rounds; optionally zram
#   `compact` after each step (allocator name suffix "+compact").
# An afmalloc allocator may carry module parameters, each "+NAME=VALUE"
# (afmalloc/zspage+zspage_align=16; bench/lib/afm-params.sh): written to
# /sys/module/afmalloc/parameters/NAME while its device's pool is made and
# again while its workload runs, the old value written back after each, so
# that a setting is measured beside the default and zsmalloc in one boot
# (a parameter read at run time, not when a pool is made, is also seen by
# the other devices' pools, idle then). The full name labels its rows and
# files.
# Every allocator runs on the same device size, data and settings in this
# boot, one after the other.
#
# A sample is taken after `sync` once mm_stat's orig_data_size has stopped
# changing (ext4's online discards reach zram asynchronously): polled every
# second until 3 equal readings (at most 120 s); the wait is recorded.
#
# Pages held: every page the allocator holds, metadata slabs included, from
# /proc/slabinfo (needs slab_nomerge) where possible: see held_pages().
# overhead = held - compr_data_size; overhead_ratio = overhead / compr.
#
# Writes OUT/steps.csv, OUT/buddyinfo.csv, OUT/blockers.csv (page_owner=on)
# and OUT/hugetlb.csv (appending;
# the HugeTLB test runs before each allocator's workload, after_step
# "start", and after its last round's rm_include step)
# and, for afmalloc, its debugfs pool/classes files per step in OUT/debugfs/.
#
# With --highalloc-ko PATH (afm_highalloc.ko, bench/build-modules.sh), the
# last round also runs seed 000's Highalloc-Stress test (bench/highalloc.sh)
# right after the HugeTLB-capability test, with the data still resident:
# OUT/highalloc.csv, OUT/highalloc_summary.csv and OUT/pagetypeinfo.csv.
#
# With --hugetlb-take PATH (bench/hugetlb-take.c, built by bench/run.sh),
# that program takes the huge pages and gives the headroom back with its
# pages locked in memory (see hugetlb()).
set -euo pipefail

die() { echo "untar-remove: error: $*" >&2; exit 1; }
usage() {
	echo "usage: $0 --dataset TAR --out DIR [--alloc zsmalloc[,zsmalloc+compact,afmalloc/zspage+NAME=VALUE,...]]"
	echo "          [--rounds N] [--comp lz4|zstd] [--disksize SIZE] [--dev zramN]"
	echo "          [--highalloc-ko PATH] [--hugetlb-take PATH]"
}

dataset='' out='' allocs=zsmalloc rounds=1 comp=lz4 disksize='' dev=zram0 highalloc_ko='' hugetlb_take=''
while [ $# -gt 0 ]; do
	case "$1" in
	--dataset) dataset=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--alloc) allocs=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	--comp) comp=${2:?}; shift ;;
	--disksize) disksize=${2:?}; shift ;;
	--dev) dev=${2:?}; shift ;;
	--highalloc-ko) highalloc_ko=${2:?}; shift ;;
	--hugetlb-take) hugetlb_take=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
if [ -z "$dataset" ] || [ -z "$out" ]; then usage >&2; die "--dataset and --out are required"; fi
[ -f "$dataset" ] || die "dataset $dataset not found (make it with bench/dataset.sh)"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"
[ -z "$highalloc_ko" ] || [ -f "$highalloc_ko" ] ||
	die "--highalloc-ko: no module at $highalloc_ko (bench/build-modules.sh builds it)"
[ -z "$hugetlb_take" ] || [ -x "$hugetlb_take" ] ||
	die "--hugetlb-take: no program at $hugetlb_take (bench/run.sh builds it)"
highalloc=$(dirname "$(realpath "$0")")/highalloc.sh
# shellcheck source=SCRIPTDIR/lib/zram-held.sh
. "$(dirname "$(realpath "$0")")/lib/zram-held.sh"
# shellcheck source=SCRIPTDIR/lib/afm-params.sh
. "$(dirname "$(realpath "$0")")/lib/afm-params.sh"
[ "$(id -u)" -eq 0 ] || die "must run as root (inside the guest)"
grep -qw slab_nomerge /proc/cmdline ||
	die "boot with slab_nomerge: merged slab caches hide the allocators' metadata"
sys=/sys/block/$dev
[ -d "$sys" ] || die "no $sys (is zram built in?)"
grep -qw "$comp" "$sys/comp_algorithm" || die "zram has no '$comp' compressor: $(cat "$sys/comp_algorithm")"
if [ -z "$disksize" ]; then
	# Room for the unpacked tree plus ext4 metadata.
	disksize=$(( $(stat -c %s "$dataset") * 5 / 4 + 256 * 1024 * 1024 ))
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
mkdir -p "$out"
mnt=$(mktemp -d /tmp/afm-bench.XXXXXX)

steps_csv=$out/steps.csv
buddy_csv=$out/buddyinfo.csv
huge_csv=$out/hugetlb.csv
[ -s "$steps_csv" ] || echo "alloc,round,step,seconds,settle_s,orig_bytes,compr_bytes,mem_used_bytes,mem_limit_bytes,mem_used_max_bytes,same_pages,pages_compacted,huge_pages,huge_pages_since,slab_pages,held_bytes,overhead_bytes,overhead_ratio,u9,u9_zone" > "$steps_csv"
# One column per order the buddy allocator has (11 with 4 KiB pages, 12
# with arm64's 16 KiB).
[ -s "$buddy_csv" ] || awk 'NR == 1 { printf "alloc,round,step,node,zone"
	for (j = 0; j <= NF - 5; j++) printf ",o%d", j; printf "\n" }' /proc/buddyinfo > "$buddy_csv"

# held_pages ALLOC: every page the allocator holds, counted independently
# of its own total where it can be: prints "held_pages slab_pages".
#   zsmalloc:      mem_used_total (zspage pages) + its zs_handle-<dev> and
#                  zspage-<dev> slab caches, which zsmalloc does not count
#   afmalloc/slab: all of its afm-<dev>-* slab caches (chunks and
#                  descriptors, empty slabs SLUB keeps included) + its
#                  whole-page chunks (debugfs classes row "4096", the only
#                  pages it takes from the page allocator) + its kmalloc'd
#                  metadata (slab_kmalloc_pages, bench/lib/zram-held.sh;
#                  not in runs before 2026-12)
#   afmalloc/zspage: mem_used_total + any afm-<dev>-* slab caches
held_pages() {
	local used=$(( $(awk '{ print $3 }' "$sys/mm_stat") / $(getconf PAGESIZE) )) meta dbg
	case "$1" in
	zsmalloc)
		meta=$(slab_pages "^(zs_handle|zspage)-$dev\$")
		echo "$((used + meta)) $meta" ;;
	afmalloc/slab)
		dbg=/sys/kernel/debug/afmalloc/$dev/classes
		[ -r "$dbg" ] || die "no $dbg: the guest needs CONFIG_AFMALLOC_STAT and debugfs"
		meta=$(slab_pages "^afm-$dev-")
		echo "$((meta + $(awk -v ps="$(getconf PAGESIZE)" '$1 == ps { print $5 }' "$dbg") + $(slab_kmalloc_pages "$dev"))) $meta" ;;
	afmalloc/zspage)
		meta=$(slab_pages "^afm-$dev-")
		echo "$((used + meta)) $meta" ;;
	esac
}

slab_pages() {  # regex -> pages held by matching caches
	awk -v re="$1" 'NR > 2 && $1 ~ re { p += $15 * $6 } END { print p + 0 }' /proc/slabinfo
}

# The order of a huge page (PMD): 9 with 4 KiB pages (2 MiB), 11 with arm64's
# 16 KiB pages (32 MiB). Column u9 and the report's U(9) are this order's.
hp_kb=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)
[ -n "$hp_kb" ] || hp_kb=$(( $(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size 2>/dev/null || echo 2097152) / 1024 ))
hp_order=$(awk -v n="$(( hp_kb * 1024 / $(getconf PAGESIZE) ))" 'BEGIN { o = 0; while (2^o < n) o++; print o }')
unusable_index_9() {  # "U(hp_order) zone" for the zone with the most free pages
	awk -v h="$hp_order" '{ F = 0; S = 0
		for (j = 0; j <= NF - 5; j++) { n = $(5 + j); F += n * 2^j; if (j >= h) S += n * 2^(j - h) }
		if (F > bestF) { bestF = F; u = (F - S * 2^h) / F; z = $4 } }
		END { if (bestF > 0) printf "%.4f,%s", u, z; else printf "1,none" }' /proc/buddyinfo
}

settle() {  # wait for orig_data_size to stop changing; prints seconds waited
	local prev='' same=0 t=0 cur
	while [ $t -lt 120 ]; do
		cur=$(awk '{ print $1 }' "$sys/mm_stat")
		if [ "$cur" = "$prev" ]; then same=$((same + 1)); else same=0; fi
		[ $same -ge 2 ] && break
		prev=$cur; sleep 1; t=$((t + 1))
	done
	echo $t
}

sample() {  # alloc round step seconds
	local base s meta held
	base=$(afm_base "$1")
	sync
	if afm_has "$1" compact; then echo 1 > "$sys/compact"; fi
	s=$(settle)
	read -r -a m < "$sys/mm_stat"
	read -r held meta <<< "$(held_pages "$base")"
	held=$(( held * $(getconf PAGESIZE) ))
	awk -v a="$1" -v r="$2" -v st="$3" -v sec="$4" -v s="$s" -v meta="$meta" -v held="$held" \
	    -v u9="$(unusable_index_9)" -v m="${m[*]}" 'BEGIN {
		split(m, f, " "); ov = held - f[2]
		printf "%s,%d,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%.6f,%s\n",
			a, r, st, sec, s, f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9],
			meta, held, ov, (f[2] > 0) ? ov / f[2] : 0, u9 }' >> "$steps_csv"
	awk -v a="$1" -v r="$2" -v st="$3" '{ gsub(",", "", $2)
		printf "%s,%d,%s,%s,%s", a, r, st, $2, $4
		for (j = 5; j <= NF; j++) printf ",%s", $j; printf "\n" }' /proc/buddyinfo >> "$buddy_csv"
	# afmalloc's own breakdown (zspages by fill, holes, tails, tables).
	if [ "$base" != zsmalloc ] && [ -r "/sys/kernel/debug/afmalloc/$dev/classes" ]; then
		mkdir -p "$out/debugfs"
		cat "/sys/kernel/debug/afmalloc/$dev/pool" "/sys/kernel/debug/afmalloc/$dev/classes" \
			> "$out/debugfs/${1//\//-}-r$2-$3.txt" 2>/dev/null || true
	fi
	tail -n 1 "$steps_csv" | awk -F, '{ printf "  %-18s r%d %-12s orig %8.1f MB compr %7.1f MB held %7.1f MB overhead %6.2f%% (settled %ss, step %ss)\n",
		$1, $2, $3, $6 / 1048576, $7 / 1048576, $16 / 1048576, $18 * 100, $5, $4 }'
}

# HugeTLB-capability (seed 000): with this allocator's data still resident,
# ask for as many huge pages (2 MiB; 32 MiB with 16 KiB pages) as there is memory and record how many the
# kernel obtains (its allocation compacts and migrates movable pages), then
# give them back. Page cache is dropped first so that every allocator
# starts from the same clean cache state.
#
# While the huge pages are held, almost no memory is free: a fork or a new
# mapping would wake the OOM killer, which would kill this script (seen on
# a fresh machine). So between taking the pages and giving back
# HUGETLB_HEADROOM_MB of them, only shell builtins run (read, echo, no
# command substitution); the blockers' page_owner scan comes after that.
# Builtins were not enough: the kernel's reclaim for the huge pages also
# took the shell's own text, and faulting it back in right after the
# request woke the OOM killer (x86_64 quick tree, console kept). With
# --hugetlb-take the three steps run in a program that has locked its
# pages (bench/hugetlb-take.c), forked before the request; the same
# counts are asked for either way.
HUGETLB_HEADROOM_MB=${HUGETLB_HEADROOM_MB:-128}
hugetlb() {  # alloc round after_step
	local f=/proc/sys/vm/nr_hugepages want got keep free_before u9 headroom
	[ -w "$f" ] || { echo "  hugetlb: no $f (CONFIG_HUGETLBFS off): skipped"; return 0; }
	[ -s "$huge_csv" ] || echo "alloc,round,after_step,requested,obtained,free_mb_before,u9_before" > "$huge_csv"
	sync; echo 3 > /proc/sys/vm/drop_caches
	want=$(awk -v h="$hp_kb" '/^MemTotal:/ { print int($2 / h) }' /proc/meminfo)
	# Off x86_64 (arm64: 32 MiB huge pages with 16 KiB pages, 2 MiB with
	# 4 KiB) the request leaves the headroom and the min watermark (~200 MB
	# with 16 KiB pages: THP sizes min_free_kbytes by the pageblock) free.
	# Without it an unfragmented arm64 guest gave up all but the watermark,
	# reclaiming this script's own text, and the OOM killer took the
	# script (with either page size). x86_64: MemTotal / 2 MiB, as in
	# every run before.
	if [ "$(uname -m)" != x86_64 ]; then
		want=$(awk -v h="$hp_kb" -v m="$(cat /proc/sys/vm/min_free_kbytes)" -v r="$HUGETLB_HEADROOM_MB" -v w="$want" '
			/^MemFree:/ { n = int(($2 - m - r * 1024) / h); print (n < w ? (n > 0 ? n : 0) : w) }' /proc/meminfo)
	fi
	free_before=$(awk '/^MemFree:/ { print int($2 / 1024) }' /proc/meminfo)
	u9=$(unusable_index_9); u9=${u9%%,*}
	headroom=$((HUGETLB_HEADROOM_MB * 1024 / hp_kb))
	if [ -n "$hugetlb_take" ]; then
		# A locked-in-memory program takes them and gives the headroom
		# back; this shell waits in the kernel meanwhile.
		got=$("$hugetlb_take" "$f" "$want" "$headroom") ||
			{ echo "  hugetlb: $hugetlb_take failed: skipped"; echo 0 > "$f"; return 0; }
	else
		# Builtins only from here ...
		echo "$want" > "$f" 2>/dev/null || true
		read -r got < "$f"
		keep=$((got > headroom ? got - headroom : 0))
		echo "$keep" > "$f"
		# ... to here: HUGETLB_HEADROOM_MB are free again.
	fi
	blockers "$1" "$2" "$3" || echo "  blockers: page_owner summary failed (status $?)"
	echo 0 > "$f"
	echo "$1,$2,$3,$want,$got,$free_before,$u9" >> "$huge_csv"
	echo "  hugetlb after $3: $got of $want $((hp_kb / 1024)) MiB pages (free before ${free_before} MB, U($hp_order) $u9)"
}

# blockers ALLOC ROUND STEP: with the huge pages still taken (so what is
# left allocated is what kept the other 2 MiB blocks from being assembled),
# group the allocated pages page_owner lists by allocation site: the first
# two stack frames past the page allocator's own functions (slab pages by
# the cache's caller), and all the allocator's own pages together. Appends "pages, 2 MiB blocks touched" per site to
# OUT/blockers.csv. Needs page_owner=on; HugeTLB pages themselves skipped.
blockers() {
	local po=/sys/kernel/debug/page_owner csv=$out/blockers.csv
	[ -r "$po" ] && grep -qw 'page_owner=on' /proc/cmdline || return 0
	[ -s "$csv" ] || echo "alloc,round,after_step,site,page_type/block_type,pages,blocks" > "$csv"
	# hugetlb() gave back HUGETLB_HEADROOM_MB so that reading page_owner
	# (and awk) can allocate: the blocks they free hold nothing to report.
	# cat reads page_owner (a read must fit a whole record: mawk's buffer
	# is too small).
	awk -v a="$1" -v r="$2" -v st="$3" '
		function flush() {
			if (pfn != "" && site != "" && site !~ /hugetlb|alloc_buddy_hugetlb|alloc_fresh_hugetlb/) {
				k = site "," mt
				pages[k] += 2 ^ order
				if (!((k, blk) in seen)) { seen[k, blk] = 1; blocks[k]++ }
			}
			if (pfn != "" && own) {
				opages += 2 ^ order
				if (!(blk in oseen)) { oseen[blk] = 1; oblocks++ }
			}
			pfn = ""; site = ""; nfr = 0; own = 0
		}
		/^Page allocated via order/ { flush(); order = $5 + 0; instack = 0; next }
		/^PFN / { pfn = $2; blk = $6; mt = $4 "/" $8; instack = 1; next }
		instack && NF > 0 {
			fn = $1; sub(/\+.*/, "", fn)
			if (fn ~ /^(zs_malloc|alloc_zspage|zs_create_pool|afm_)/) own = 1
			if (fn ~ /^(post_alloc_hook|prep_new_page|get_page_from_freelist|__alloc_pages|__alloc_pages_noprof|alloc_pages|alloc_pages_noprof|alloc_pages_mpol|alloc_pages_mpol_noprof|__alloc_pages_slowpath|folio_alloc|folio_alloc_noprof|__folio_alloc|__folio_alloc_noprof|alloc_slab_page|allocate_slab|new_slab|___slab_alloc|__slab_alloc|__slab_alloc.constprop.0|slab_alloc_node|__kmalloc_cache_noprof|__alloc_frozen_pages_noprof|alloc_frozen_pages_noprof|stack_depot_save_flags|__kmalloc_noprof|__kmalloc_node_noprof|__kmalloc_large_node|__kmalloc_large_node_noprof|kmalloc_large_node_noprof|___kmalloc_large_node|__vmalloc_area_node|vm_area_alloc_pages|__vmalloc_node_range_noprof|alloc_pages_bulk_noprof|alloc_pages_bulk_array_mempolicy_noprof)$/ || fn ~ /^(kmem_cache_alloc|kmem_cache_alloc_noprof|kmem_cache_alloc_lru_noprof|kmem_cache_alloc_node_noprof|__kmem_cache_alloc)/)
				next
			if (nfr < 2) { site = (nfr ? site ">" : "") fn; nfr++ }
			next
		}
		NF == 0 { flush() }
		END { flush()
			for (k in pages) printf "%s,%d,%s,%s,%d,%d\n", a, r, st, k, pages[k], blocks[k]
			# Every page allocated under the allocator (zs_malloc,
			# alloc_zspage, zs_create_pool or afm_*), data and metadata.
			printf "%s,%d,%s,ALLOCATOR (all sites),any,%d,%d\n", a, r, st, opages, oblocks }
	' < <(cat "$po") | sort -t, -k6,6nr >> "$csv"
	echo "  blockers (page_owner, top 5 by 2 MiB blocks touched):"
	awk -F, -v a="$1" -v st="$3" '$1 == a && $3 == st' "$csv" | sort -t, -k7,7nr |
		awk -F, 'NR <= 5 || $4 ~ /^ALLOCATOR/ { printf "    %-48s %-12s %7d pages in %5d blocks\n", $4, $5, $6, $7 }'
}

timed() {  # run a step, print elapsed seconds
	local t0 t1
	t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

# config_dev ALLOC: reset $dev, select ALLOC, compressor and disksize. This
# allocates zram's table (vmalloc, order-0 unmovable pages: ~8 MB for a
# 2 GB device) and creates the allocator's pool, so every device is
# configured at the start of the boot, in unfragmented memory: a table
# allocated by the second allocator's run, in memory the first run left
# fragmented, would scatter unmovable pages over many pageblocks and cost
# that allocator huge pages it is not responsible for.
config_dev() {
	local base offered cur t
	base=$(afm_base "$1")
	# A device just hot-added may still be open for udev's probe (EBUSY).
	for t in 1 2 3 4 5 6 7 8 9 10; do
		echo 1 2>/dev/null > "$sys/reset" && break
		[ "$t" -lt 10 ] || die "reset of $dev still busy after 10 s"
		sleep 1
	done
	# /sys/block/zramX/allocator (patches/ series): "[zsmalloc] afmalloc/slab ..."
	if [ -f "$sys/allocator" ]; then
		offered=" $(tr -d '[]' < "$sys/allocator") "
		[[ "$offered" == *" $base "* ]] ||
			die "this kernel's zram does not offer '$base' (it offers:$offered)"
		echo "$base" > "$sys/allocator"
		cur=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$sys/allocator")
		[ "$cur" = "$base" ] || die "selected '$base' but $dev uses '$cur'"
	elif [ "$base" != zsmalloc ]; then
		die "this kernel's zram has no allocator selection (build it with patches/)"
	fi
	echo "$comp" > "$sys/comp_algorithm"
	afm_set_params "$1"
	echo "$disksize" > "$sys/disksize" ||
		die "cannot initialise $dev on '$base' (e.g. an afmalloc store not implemented yet; see dmesg)"
	afm_restore_params
}

# start_dev: ext4 on $dev, mounted on $mnt. Every allocator starts from the
# same clean memory state: the previous run's page cache and reclaimable
# slabs dropped, free memory compacted.
start_dev() {
	sync; echo 3 > /proc/sys/vm/drop_caches
	[ -w /proc/sys/vm/compact_memory ] && echo 1 > /proc/sys/vm/compact_memory
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "/dev/$dev"
	mount -o discard "/dev/$dev" "$mnt"
}

IFS=, read -r -a alloc_list <<< "$allocs"
for a in "${alloc_list[@]}"; do
	afm_check_alloc --guest "$a" compact
done
trap afm_restore_params EXIT
# One zram device per allocator ($dev for the first, then hot-added ones),
# all configured before any workload runs (see config_dev).
devs=()
for i in "${!alloc_list[@]}"; do
	if [ "$i" -eq 0 ]; then
		devs+=("$dev")
	else
		[ -r /sys/class/zram-control/hot_add ] || die "no /sys/class/zram-control/hot_add"
		devs+=("zram$(cat /sys/class/zram-control/hot_add)")
	fi
	dev=${devs[$i]} sys=/sys/block/${devs[$i]}
	config_dev "${alloc_list[$i]}"
done
for i in "${!alloc_list[@]}"; do
	a=${alloc_list[$i]} dev=${devs[$i]} sys=/sys/block/${devs[$i]}
	echo "== $a on $dev: $(basename "$dataset"), $rounds round(s), $comp, disksize $disksize"
	start_dev
	afm_set_params "$a"
	# The same test before this allocator's workload: what the runs before
	# it in this boot left (the later an allocator runs, the fewer huge
	# pages the kernel can assemble for anyone); "start" rows.
	hugetlb "$a" 0 start
	for r in $(seq 1 "$rounds"); do
		sample "$a" "$r" untar "$(timed tar -xf "$dataset" -C "$mnt")"
		for d in drivers arch fs sound include; do
			sample "$a" "$r" "rm_$d" "$(timed rm -rf "$mnt/linux/$d")"
		done
		[ "$r" -eq "$rounds" ] && hugetlb "$a" "$r" rm_include
		# Highalloc-Stress (seed 000); a failure costs its numbers, not the run.
		if [ "$r" -eq "$rounds" ] && [ -n "$highalloc_ko" ]; then
			"$highalloc" --alloc "$a" --round "$r" --out "$out" --ko "$highalloc_ko" ||
				echo "  highalloc: FAILED (status $?): no Highalloc-Stress numbers for $a"
		fi
		sample "$a" "$r" rm_all "$(timed rm -rf "$mnt/linux")"
	done
	umount "$mnt"
	echo 1 > "$sys/reset"
	afm_restore_params
done
rmdir "$mnt"
