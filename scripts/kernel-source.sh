#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install Debian's linux-source-6.12 if needed and unpack it once into
# $AFMALLOC_SRC (pristine: nothing ever edits or builds in it).
# Prints the kernel version on success.
. "$(dirname "$0")/common.sh"

[ $# -eq 0 ] || die "usage: $0 (no arguments; set AFMALLOC_CACHE to move the cache)"

tarball=${AFMALLOC_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
stamp=$AFMALLOC_SRC/.afmalloc-unpacked

# Concurrent runs (CI beside a benchmark) unpack once, one at a time.
[ -f "$stamp" ] || lock src
if [ ! -f "$stamp" ]; then
	if [ ! -f "$tarball" ]; then
		[ -z "${AFMALLOC_TARBALL:-}" ] || die "AFMALLOC_TARBALL=$tarball does not exist"
		apt_install linux-source-6.12
	fi
	[ -f "$tarball" ] || die "$tarball missing after installing linux-source-6.12"
	log "unpacking $tarball into $AFMALLOC_SRC (once)"
	rm -rf "$AFMALLOC_SRC.tmp"
	mkdir -p "$AFMALLOC_SRC.tmp"
	tar -xf "$tarball" -C "$AFMALLOC_SRC.tmp" --strip-components=1
	rm -rf "$AFMALLOC_SRC"
	mv "$AFMALLOC_SRC.tmp" "$AFMALLOC_SRC"
	chmod -R a-w "$AFMALLOC_SRC"   # keep it pristine
	# The stamp lives in a writable spot next to the (read-only) tree root.
	chmod u+w "$AFMALLOC_SRC"
	touch "$stamp"
	chmod u-w "$AFMALLOC_SRC"
fi

ver=$(make -s -C "$AFMALLOC_SRC" kernelversion 2>/dev/null) ||
	die "cannot read the kernel version of $AFMALLOC_SRC"
case "$ver" in
6.12|6.12.*) ;;
*) die "$AFMALLOC_SRC is Linux $ver, not 6.12.y" ;;
esac
echo "$ver"
