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
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 1 ] || die "usage: $0 tiny|quick|full"
kind=$1
case "$kind" in tiny|quick|full) ;; *) die "unknown dataset '$kind' (want tiny, quick or full)" ;; esac

out=$AFMALLOC_DATA/linux-6.12-$kind.tar
if [ ! -s "$out" ]; then
	ver=$("$AFMALLOC_TOP/scripts/kernel-source.sh")
	mkdir -p "$AFMALLOC_DATA"
	# Two runs that both lack it (CI beside a developer's run) take turns:
	# the second finds it made.
	lock "data-$kind"
fi
if [ ! -s "$out" ]; then
	log "making the $kind dataset from Linux $ver: $out"
	list=$(mktemp)
	(cd "$AFMALLOC_SRC" && find . -type f ! -name .afmalloc-unpacked | LC_ALL=C sort) > "$list"
	case "$kind" in
	quick) awk 'NR % 8 == 1' "$list" > "$list.q" && mv "$list.q" "$list" ;;
	tiny) awk 'NR % 64 == 1' "$list" > "$list.q" && mv "$list.q" "$list" ;;
	esac
	tar -C "$AFMALLOC_SRC" --transform='s|^\./|linux/|' --no-recursion \
		--owner=0 --group=0 --numeric-owner --mtime='2024-11-17 00:00Z' \
		-cf "$out.tmp" -T "$list"
	rm -f "$list"
	mv "$out.tmp" "$out"
fi
echo "$out"
