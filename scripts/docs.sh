#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the kernel documentation that holds afmalloc's
# (Documentation/mm/afmalloc.rst and, through its kernel-doc directive,
# include/linux/afmalloc.h) with the kernel's own Sphinx build, in the
# prepared tree, out of tree in $AFMALLOC_BUILD/docs:
#   make -C TREE O=... SPHINXDIRS=mm htmldocs
# Fails when the build fails, when any of its warnings names an afmalloc
# file (the kernel's other documents may warn on their own), or when the
# page lacks the interface (afm_create_pool() from the header). Prints the
# page's path.
#   scripts/docs.sh
# shellcheck source=common.sh disable=SC1091
. "$(dirname "$0")/common.sh"

command -v sphinx-build >/dev/null || apt_install python3-sphinx
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
out=$AFMALLOC_BUILD/docs
lock build-docs
# From nothing every time (5 to 10 s here): Sphinx reads again only what
# changed, so a warning of an unchanged document would not show twice.
rm -rf "$out"
mkdir -p "$out"
log "building Documentation/mm (htmldocs) in $out"
if ! make -C "$tree" O="$out" SPHINXDIRS=mm htmldocs > "$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	die "the documentation build failed (log: $out/build.log)"
fi
"$AFMALLOC_TOP/scripts/prepare-tree.sh" --check ||
	die "the tree changed under the documentation build; run again"
# Sphinx names a document without its suffix (Documentation/mm/afmalloc:N).
if grep -i 'warning\|error' "$out/build.log" |
	grep -E 'Documentation/mm/afmalloc[.:]|include/linux/afmalloc\.h|/mm/afmalloc/' >&2; then
	die "warnings about afmalloc's documentation (above; log: $out/build.log)"
fi
page=$out/Documentation/output/mm/afmalloc.html
[ -f "$page" ] || die "no $page after the build (log: $out/build.log)"
grep -q 'afm_create_pool' "$page" || die "$page has no interface section (kernel-doc of include/linux/afmalloc.h)"
log "documentation built: $page"
echo "$page"
