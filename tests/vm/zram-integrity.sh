#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM integration test (run by `make check` through scripts/vm-run.sh):
# ext4 on zram mounted -o discard; write checksummed data (the quick
# dataset plus generated files of every compressibility); remove part of it;
# compact; drop the page cache so reads come back from zram; verify every
# byte; unmount, remount and verify again. Runs once per allocator given
# (default: every allocator this kernel's zram offers).
#   tests/vm/zram-integrity.sh --dataset TAR [--alloc LIST]
#
# The allocator really used is checked, not assumed: after the selection,
# /sys/block/zram0/allocator must show the requested name in brackets
# (patches/0002); for an afmalloc allocator, afmalloc's own debugfs
# statistics of the device's pool (/sys/kernel/debug/afmalloc/zram0/pool)
# must account for what zram stored: once the file system is unmounted,
# "objects" = stored pages - same-filled pages (mm_stat fields 1 and 6)
# and "stored_bytes" = compr_data_size (field 2), and the pool's "classes"
# rows must be those of the requested store (the zspage store's include
# "migrate"); for zsmalloc, no afmalloc pool may exist for zram0.
#
# Exit status: 0 every allocator passed; 1 a failure; 77 nothing failed
# but an allocator could not be tested (no allocator selection in this
# zram, or it cannot create a pool: EOPNOTSUPP), each printed as
# "zram-integrity: SKIP: ...". tests/vm/debug-suite.sh fails on 77.
set -euo pipefail

fail() { echo "zram-integrity: FAIL: $*" >&2; exit 1; }
skipped=()
skip() { echo "zram-integrity: SKIP: $*"; skipped+=("$1"); }
dataset= allocs=
while [ $# -gt 0 ]; do
	case "$1" in
	--dataset) dataset=${2:?}; shift ;;
	--alloc) allocs=${2:?}; shift ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done
[ -f "$dataset" ] || fail "dataset '$dataset' not found"
sys=/sys/block/zram0
[ -d $sys ] || fail "no zram0"
if [ -z "$allocs" ]; then
	if [ -f $sys/allocator ]; then
		allocs=$(tr -d '[]' < $sys/allocator | tr ' ' ',')
	else
		allocs=zsmalloc
	fi
fi

dbg=/sys/kernel/debug
mountpoint -q $dbg || mount -t debugfs none $dbg || fail "cannot mount debugfs"

# selected: the bracketed name in /sys/block/zram0/allocator.
selected() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' $sys/allocator; }
mm() { awk -v f="$1" '{ print $f }' $sys/mm_stat; }
afm_stat() { awk -v k="$1" '$1 == k { print $2 }' $dbg/afmalloc/zram0/pool; }
# afm_row ROW N: field N of that row of the pool's debugfs "classes" table.
afm_row() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' $dbg/afmalloc/zram0/classes; }
# check_pool ALLOC: the allocator that holds zram0's data is ALLOC, and
# (afmalloc) its own counters account for every stored page. Quiescent
# device only: nothing may write to zram0 meanwhile.
check_pool() {
	local a=$1 pages same objs bytes compr
	pages=$(( $(mm 1) / 4096 )) same=$(mm 6) compr=$(mm 2)
	case "$a" in
	afmalloc/*)
		[ -r $dbg/afmalloc/zram0/pool ] ||
			fail "$a: no afmalloc debugfs pool for zram0 ($dbg/afmalloc: $(ls $dbg/afmalloc 2>&1 | tr '\n' ' '))"
		objs=$(afm_stat objects) bytes=$(afm_stat stored_bytes)
		echo "afmalloc pool zram0: objects $objs stored_bytes $bytes pages $(afm_stat pages);" \
			"zram: $pages pages stored, $same same-filled, compr_data_size $compr"
		[ "$objs" -gt 0 ] || fail "$a: afmalloc's pool holds no object"
		[ "$objs" -eq $((pages - same)) ] ||
			fail "$a: afmalloc holds $objs objects, zram stored $((pages - same)) pages in its allocator"
		[ "$bytes" -eq "$compr" ] ||
			fail "$a: afmalloc holds $bytes bytes, zram's compr_data_size is $compr"
		if [ "$a" = afmalloc/zspage ]; then
			grep -q '^migrate ' $dbg/afmalloc/zram0/classes ||
				fail "$a: pool zram0 is not a zspage-store pool (no 'migrate' row in classes)"
			check_compacted "$a"
		else
			! grep -q '^migrate ' $dbg/afmalloc/zram0/classes ||
				fail "$a: pool zram0 is a zspage-store pool"
		fi ;;
	*)
		[ ! -e $dbg/afmalloc/zram0 ] || fail "$a: zram0 has an afmalloc pool" ;;
	esac
}

# check_compacted ALLOC (afmalloc/zspage): zram's pages_compacted (mm_stat
# field 7) is every page the pool's compaction gave back, the compact
# attribute's and the store's own (automatic runs and shrinker scans,
# the "auto" row), as zsmalloc's counts its shrinker's: the "compact"
# row's count of pages freed. Both only grow and a run may end between
# the reads, so they are read until they agree. With the tiny dataset the
# store's own runs seldom give anything back here (what they add to the
# count is asserted by KUnit: afm_zs_drive_auto(), afm_zs_test_shrinker);
# this checks that zram shows the pool's count.
check_compacted() {
	local a=$1 tries=50 m1 c m2 own
	while :; do
		m1=$(mm 7) c=$(afm_row compact 5) m2=$(mm 7)
		if [ "$m1" = "$c" ] && [ "$c" = "$m2" ]; then
			break
		fi
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] ||
			fail "$a: zram's pages_compacted ($m1, then $m2) is not the $c pages the pool's compaction gave back"
		sleep 0.1
	done
	own=$(( $(afm_row auto 4) + $(afm_row auto 5) ))
	echo "pages_compacted: zram's $m2, the pool's compaction $c (its automatic runs and shrinker scans: $own; debugfs pool: $(afm_stat pages_compacted))"
}

mnt=$(mktemp -d /tmp/afm-int.XXXXXX)
sums=$(mktemp /tmp/afm-sums.XXXXXX)

gen_files() {  # dir: 200 files of varied size and compressibility, deterministic
	python3 "$(dirname "$(realpath "$0")")/lib/gen-files.py" "$1"
}

for a in ${allocs//,/ }; do
	echo "== zram-integrity: $a"
	echo 1 > $sys/reset
	if [ -f $sys/allocator ]; then
		echo "$a" > $sys/allocator || fail "$a: cannot select it"
	elif [ "$a" != zsmalloc ]; then
		skip "$a" "this zram has no allocator selection (patches/0002), so only zsmalloc"
		continue
	fi
	echo lz4 > $sys/comp_algorithm
	if ! err=$( { echo 1G > $sys/disksize; } 2>&1 ); then
		case "$err" in
		*"Operation not supported"*)
			skip "$a" "cannot create a pool in this kernel (disksize: EOPNOTSUPP)"
			continue ;;
		esac
		fail "$a: disksize: $err"
	fi
	if [ -f $sys/allocator ]; then
		[ "$(selected)" = "$a" ] ||
			fail "$a requested, but zram0 uses '$(selected)' ($(cat $sys/allocator))"
	fi
	echo "zram0 allocator: $(cat $sys/allocator 2>/dev/null || echo 'zsmalloc (no selection)')"
	mkfs.ext4 -q -F /dev/zram0
	mount -o discard /dev/zram0 "$mnt"

	tar -xf "$dataset" -C "$mnt"
	gen_files "$mnt/gen"
	(cd "$mnt" && find . -type f ! -path './lost+found/*' -print0 | sort -z |
		xargs -0 sha256sum) > "$sums"
	total=$(wc -l < "$sums")
	[ "$total" -gt 1000 ] || fail "only $total files written"

	# Remove about half: whole directories and every other generated file.
	rm -rf "$mnt/linux/drivers" "$mnt/linux/arch" "$mnt/linux/sound"
	rm -f "$mnt"/gen/f*[13579]
	sync
	grep -v -e ' ./linux/drivers/' -e ' ./linux/arch/' -e ' ./linux/sound/' \
		-e ' ./gen/f[0-9]*[13579]$' "$sums" > "$sums.kept"
	kept=$(wc -l < "$sums.kept")
	echo "wrote $total files, kept $kept"

	before=$(awk '{ print $3 }' $sys/mm_stat)
	echo 1 > $sys/compact
	after=$(awk '{ print $3 }' $sys/mm_stat)
	echo "mem_used_total $before -> $after after compact; mm_stat: $(cat $sys/mm_stat)"
	echo 3 > /proc/sys/vm/drop_caches

	(cd "$mnt" && sha256sum --quiet -c "$sums.kept") || fail "$a: data changed after compact"
	# Removed files really are gone.
	[ ! -e "$mnt/linux/drivers" ] || fail "$a: removed directory still there"

	umount "$mnt"
	check_pool "$a"
	mount -o discard /dev/zram0 "$mnt"
	(cd "$mnt" && sha256sum --quiet -c "$sums.kept") || fail "$a: data changed after remount"
	echo "verified $kept files, every byte, after compaction and remount"
	umount "$mnt"
	echo 1 > $sys/reset
done
rm -f "$sums" "$sums.kept"
rmdir "$mnt"
if [ ${#skipped[@]} -gt 0 ]; then
	echo "zram-integrity: SKIPPED: ${skipped[*]} not tested (see SKIP above); nothing failed"
	exit 77
fi
echo "zram-integrity: PASS ($allocs)"
