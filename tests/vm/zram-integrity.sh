#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM integration test (run by `make check` through scripts/vm-run.sh):
# ext4 on zram mounted -o discard; write checksummed data (the quick
# dataset plus generated files of every compressibility); remove part of it;
# compact; drop the page cache so reads come back from zram; verify every
# byte; unmount, remount and verify again. Runs once per allocator given
# (default: every allocator this kernel's zram offers).
#   tests/vm/zram-integrity.sh --dataset TAR [--alloc LIST]
set -euo pipefail

fail() { echo "zram-integrity: FAIL: $*" >&2; exit 1; }
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

mnt=$(mktemp -d /tmp/afm-int.XXXXXX)
sums=$(mktemp /tmp/afm-sums.XXXXXX)

gen_files() {  # dir: 200 files of varied size and compressibility, deterministic
	python3 "$(dirname "$(realpath "$0")")/lib/gen-files.py" "$1"
}

for a in ${allocs//,/ }; do
	echo "== zram-integrity: $a"
	echo 1 > $sys/reset
	if [ -f $sys/allocator ]; then echo "$a" > $sys/allocator; fi
	echo lz4 > $sys/comp_algorithm
	if ! err=$( { echo 1G > $sys/disksize; } 2>&1 ); then
		case "$err" in
		*"Operation not supported"*)
			echo "== zram-integrity: $a cannot create a pool in this kernel (EOPNOTSUPP): skipped"
			continue ;;
		esac
		fail "$a: disksize: $err"
	fi
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
	mount -o discard /dev/zram0 "$mnt"
	(cd "$mnt" && sha256sum --quiet -c "$sums.kept") || fail "$a: data changed after remount"
	echo "verified $kept files, every byte, after compaction and remount"
	umount "$mnt"
	echo 1 > $sys/reset
done
rm -f "$sums" "$sums.kept"
rmdir "$mnt"
echo "zram-integrity: PASS ($allocs)"
