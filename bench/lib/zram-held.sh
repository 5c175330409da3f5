# SPDX-License-Identifier: GPL-2.0
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
# held ALLOC DEV USED: every byte the allocator of DEV holds into $held
# (and its slab pages into $meta): zsmalloc and afmalloc/zspage:
# mem_used_total (USED) + their slab caches (zsmalloc does not count its
# own); afmalloc/slab: its slab caches + its whole-page chunks (debugfs
# classes row "4096"). Call slabs first.
held() {
	local big=0 c
	meta=${slab[$2]:-0}
	case "$1" in
	afmalloc/slab)
		if [ -r "/sys/kernel/debug/afmalloc/$2/classes" ]; then
			while read -r -a c; do
				[ "${c[0]}" != 4096 ] || big=${c[4]}
			done < "/sys/kernel/debug/afmalloc/$2/classes"
		fi
		held=$(((meta + big) * pagesize)) ;;
	*) held=$(($3 + meta * pagesize)) ;;
	esac
}
pagesize=$(getconf PAGESIZE)
