# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034 # held, meta: read by the callers
# Guest-side helpers (sourced): every page a zram device's allocator
# holds, counted as bench/untar-remove.sh counts it (bench/fio/guest.sh,
# bench/smallpool/guest.sh). The boot must have slab_nomerge, so that a
# device's slab caches are not merged with others.
#
# slabs: the pages of every device's own slab caches (/proc/slabinfo)
# into the array slab, by device: zsmalloc's zs_handle-<dev> and
# zspage-<dev>, afmalloc's afm-<dev>-*. One awk for all devices.
declare -A slab
slabs() {
	local d p
	slab=()
	while read -r d p; do
		slab[$d]=$p
	done < <(awk 'NR > 2 { n = $1; sub(/^(zs_handle|zspage)-/, "", n); sub(/^afm-/, "", n);
		sub(/-.*/, "", n); if (n ~ /^zram[0-9]+$/ && n != $1) p[n] += $15 * $6 }
		END { for (n in p) print n, p[n] }' /proc/slabinfo)
}
# slab_kmalloc_pages DEV: afmalloc/slab's kmalloc'd metadata of DEV's
# pool, in pages rounded up: its descriptor bitmaps (meta_bytes beyond the
# pages of its descN slabs) and its slab tracker's xarray nodes
# (aux_bytes), both growing with the data (debugfs pool and classes).
slab_kmalloc_pages() {
	local d=/sys/kernel/debug/afmalloc/$1
	awk -v ps="$(getconf PAGESIZE)" '
		FILENAME ~ /pool$/ && ($1 == "meta_bytes" || $1 == "aux_bytes") { b += $2 }
		FILENAME ~ /classes$/ && $1 ~ /^desc/ { b -= $5 * ps }
		END { if (b < 0) b = 0; print int((b + ps - 1) / ps) }' "$d/pool" "$d/classes"
}
# held ALLOC DEV USED: every byte the allocator of DEV holds into $held
# (ALLOC with or without +words, bench/lib/afm-params.sh)
# (and its slab pages into $meta): zsmalloc and afmalloc/zspage:
# mem_used_total (USED) + their slab caches (zsmalloc does not count its
# own); afmalloc/slab: its slab caches + its whole-page chunks (debugfs
# classes row of the page size, "4096" with 4 KiB pages) + slab_kmalloc_pages. Call slabs first.
held() {
	local big=0 c
	meta=${slab[$2]:-0}
	case "${1%%+*}" in
	afmalloc/slab)
		if [ -r "/sys/kernel/debug/afmalloc/$2/classes" ]; then
			while read -r -a c; do
				[ "${c[0]}" != "$pagesize" ] || big=${c[4]}
			done < "/sys/kernel/debug/afmalloc/$2/classes"
		fi
		held=$(((meta + big + $(slab_kmalloc_pages "$2")) * pagesize)) ;;
	*) held=$(($3 + meta * pagesize)) ;;
	esac
}
pagesize=$(getconf PAGESIZE)
