#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the benchmark's helper modules (bench/module/: afm_highalloc.ko) out
# of tree against a kernel build dir, from a copy of the sources under
# $AFMALLOC_CACHE/build/bench-module (nothing is written into the checkout).
#   bench/build-modules.sh [--kdir DIR]   (default: $AFMALLOC_BUILD/guest)
# Prints the folder holding the .ko files. The copy is refreshed by content
# (rsync -c): unchanged sources keep their mtime and are not rebuilt, and
# another checkout's older file still replaces a different one.
. "$(dirname "$0")/../scripts/common.sh"

kdir=$AFMALLOC_BUILD/guest
while [ $# -gt 0 ]; do
	case "$1" in
	--kdir) kdir=${2:?--kdir needs a kernel build dir}; shift ;;
	-h|--help) echo "usage: $0 [--kdir DIR]"; exit 0 ;;
	*) die "unknown option '$1' (usage: $0 [--kdir DIR])" ;;
	esac
	shift
done
[ -f "$kdir/Module.symvers" ] && [ -f "$kdir/include/config/kernel.release" ] ||
	die "$kdir is not a built kernel tree (build it with scripts/build-guest.sh)"
kdir=$(realpath "$kdir")

out=$AFMALLOC_BUILD/bench-module
lock bench-module
# The guest kernel must not change under the module build: share its lock
# (scripts/build-guest.sh holds it while building).
[ "$kdir" = "$(realpath -m "$AFMALLOC_BUILD/guest")" ] && lock build-guest
mkdir -p "$out"
# A different kernel (another build dir or release) starts from a clean copy.
stamp="$kdir $(cat "$kdir/include/config/kernel.release") $(sha256sum < "$kdir/.config" | cut -c1-16)"
if [ "$(cat "$out/.afmalloc-kdir" 2>/dev/null)" != "$stamp" ]; then
	find "$out" -mindepth 1 -delete
	echo "$stamp" > "$out/.afmalloc-kdir"
fi
command -v rsync >/dev/null || apt_install rsync
rsync -c "$AFMALLOC_TOP"/bench/module/Kbuild "$AFMALLOC_TOP"/bench/module/*.c "$out/"
log "building bench modules against $kdir in $out"
make -s -C "$kdir" M="$out" ARCH=x86_64 CC="$(kcc)" modules >&2 ||
	die "bench module build failed against $kdir"
ls "$out"/*.ko >/dev/null 2>&1 || die "no .ko in $out after the build"
echo "$out"
