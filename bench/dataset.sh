#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Make a benchmark dataset (once) in $AFMALLOC_DATA and print its path:
#   full   the whole Debian linux-source-6.12 tree (~1.5 GB, ~92k files)
#   quick  a deterministic 1/8 subset: every 8th file in sorted path order,
#          so drivers/ arch/ fs/ sound/ include/ keep their proportions
#   tiny   every 64th file the same way (~20 MB), for the in-VM tests on
#          the debug kernel (KASAN under TCG is several times slower)
# Both are uncompressed, reproducible tars (sorted, fixed owner and mtime),
# so untar time inside a TCG guest measures the file system, not xz.
#
# The files are those the Debian tarball unpacked: anything written into
# the pristine tree later is left out, with a warning. Root writes into it
# although it is read-only (checkpatch.pl run there leaves its
# .checkpatch-camelcase.* cache, Python a __pycache__), and one such file
# made the tar of the same package differ from machine to machine. The
# file list of every tar is kept beside it ($out.files); a tar whose list
# is not the tree's (made from a tree with such a file, or before the list
# was kept and found to differ) is made again.
# shellcheck source=../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 1 ] || die "usage: $0 tiny|quick|full"
kind=$1
case "$kind" in tiny|quick|full) ;; *) die "unknown dataset '$kind' (want tiny, quick or full)" ;; esac

out=$AFMALLOC_DATA/linux-6.12-$kind.tar

# files: the dataset's files, sorted, as "./path" (the tar's members are
# "linux/path"). The unpacked files keep the tarball's mtimes, all older
# than the stamp kernel-source.sh touches after unpacking.
files() {
	(cd "$AFMALLOC_SRC" &&
		find . -type f ! -name .afmalloc-unpacked ! -newer .afmalloc-unpacked |
		LC_ALL=C sort) |
		case "$kind" in
		quick) awk 'NR % 8 == 1' ;;
		tiny) awk 'NR % 64 == 1' ;;
		*) cat ;;
		esac
}

# Made, and of the tree's files: nothing to do.
if [ -s "$out" ] && [ -s "$out.files" ] && [ -f "$AFMALLOC_SRC/.afmalloc-unpacked" ] &&
	files | cmp -s - "$out.files"; then
	echo "$out"
	exit 0
fi

ver=$("$AFMALLOC_TOP/scripts/kernel-source.sh")
mkdir -p "$AFMALLOC_DATA"
# Two runs that both lack it (CI beside a developer's run) take turns: the
# second finds it made.
lock "data-$kind"
added=$(cd "$AFMALLOC_SRC" && find . -type f ! -name .afmalloc-unpacked -newer .afmalloc-unpacked | head -n 5)
[ -z "$added" ] ||
	log "files written into the pristine tree $AFMALLOC_SRC after unpacking, left out of the datasets: $(echo "$added" | tr '\n' ' ')"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
files > "$list"
[ -s "$list" ] || die "no files in $AFMALLOC_SRC"
if [ -s "$out" ] && [ -s "$out.files" ] && cmp -s "$list" "$out.files"; then
	: # the other run made it
elif [ -s "$out" ] && tar -tf "$out" | sed 's|^linux/|./|' | cmp -s - "$list"; then
	log "$out holds the tree's files: keeping it, its list in $out.files"
	cat "$list" > "$out.files"
else
	if [ -s "$out" ]; then
		log "$out does not hold the files of $AFMALLOC_SRC (one written there after unpacking?): making it again"
	fi
	log "making the $kind dataset from Linux $ver: $out"
	rm -f "$out.files"
	tar -C "$AFMALLOC_SRC" --transform='s|^\./|linux/|' --no-recursion \
		--owner=0 --group=0 --numeric-owner --mtime='2024-11-17 00:00Z' \
		-cf "$out.tmp" -T "$list"
	mv "$out.tmp" "$out"
	cat "$list" > "$out.files"
fi
echo "$out"
