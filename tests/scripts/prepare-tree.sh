#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of scripts/prepare-tree.sh on a small fake source tree
# (two files, mm/Kconfig and mm/Makefile) and a fake project whose
# patches/ it applies:
#
#   tests/scripts/prepare-tree.sh
#
# 1. A series whose second patch does not apply fails, after the first
#    patch changed the tree; once the patch is mended the next run applies
#    the whole series from the pristine files (it used to refuse for good:
#    the first patch, applied but not recorded, no longer applied).
# 2. A working copy an interrupted run left half made ($tree.tmp) is
#    thrown away, not copied into.
# 3. --check: 0 while the tree holds this checkout's series and sources, 1
#    (naming what) once another checkout's run prepared it.
# 4. The documentation is overlaid and hooked into Documentation/mm's
#    toctree, and the MAINTAINERS entry added, once each however many
#    times the series is put back and applied again; --check tells
#    another checkout's documentation.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

mkdir -p "$t/src/mm" "$t/top/scripts" "$t/top/patches"
printf 'a1\na2\n' > "$t/src/mm/a.c"
printf 'b1\nb2\n' > "$t/src/mm/b.c"
printf 'menu "Slab allocator options"\nendmenu\n' > "$t/src/mm/Kconfig"
printf 'obj-y += x.o\n' > "$t/src/mm/Makefile"
mkdir -p "$t/src/Documentation/mm"
printf '.. toctree::\n\n   active_mm\n   allocation-profiling\n' > "$t/src/Documentation/mm/index.rst"
printf 'AFFS FILE SYSTEM\nF:\tfs/affs/\n\nAFS FILESYSTEM\nF:\tfs/afs/\n' > "$t/src/MAINTAINERS"
cp "$top/scripts/prepare-tree.sh" "$top/scripts/common.sh" "$t/top/scripts/"
# The pristine source is there already: kernel-source.sh only names it.
printf '#!/bin/sh\necho "%s"\n' "$t/src" > "$t/top/scripts/kernel-source.sh"
chmod +x "$t/top/scripts/"*.sh
touch "$t/top/Kconfig" "$t/top/Kbuild"
mkdir -p "$t/top/mm"
echo 'int x;' > "$t/top/mm/core.c"
mkdir -p "$t/top/Documentation/mm"
echo 'afmalloc' > "$t/top/Documentation/mm/afmalloc.rst"
patch_of() {  # FILE OLD NEW: a one-line change of the second line
	printf -- '--- a/mm/%s\n+++ b/mm/%s\n@@ -1,2 +1,2 @@\n %s1\n-%s\n+%s\n' \
		"$1" "$1" "${1%.c}" "$2" "$3"
}
patch_of a.c a2 A2 > "$t/top/patches/0001-a.patch"
patch_of b.c bX B2 > "$t/top/patches/0002-b.patch"
export AFMALLOC_CACHE=$t/cache AFMALLOC_SRC=$t/src AFMALLOC_TREE=$t/cache/tree
tree=$t/cache/tree

# 1.
if "$t/top/scripts/prepare-tree.sh" > "$t/out" 2>&1; then
	fail "a series with a patch that does not apply was applied"
fi
grep -q "0002-b.patch does not apply" "$t/out" || fail "no error naming the patch: $(cat "$t/out")"
[ "$(cat "$tree/mm/a.c")" = "$(printf 'a1\nA2')" ] || fail "the first patch was not applied"
patch_of b.c b2 B2 > "$t/top/patches/0002-b.patch"
"$t/top/scripts/prepare-tree.sh" > "$t/out" 2>&1 || fail "the mended series: $(cat "$t/out")"
[ "$(cat "$tree/mm/a.c")" = "$(printf 'a1\nA2')" ] || fail "mm/a.c: $(cat "$tree/mm/a.c")"
[ "$(cat "$tree/mm/b.c")" = "$(printf 'b1\nB2')" ] || fail "mm/b.c: $(cat "$tree/mm/b.c")"
grep -qxF 'source "mm/afmalloc/Kconfig"' "$tree/mm/Kconfig" || fail "mm/Kconfig not hooked"
ok "a series stopped by a patch that does not apply is applied whole once mended"

# 2.
rm -f "$tree/.afmalloc-copied"
mkdir -p "$tree.tmp/left-over"
"$t/top/scripts/prepare-tree.sh" > "$t/out" 2>&1 || fail "copy over a left-over: $(cat "$t/out")"
{ [ ! -e "$tree/linux-6.12" ] && [ ! -e "$tree/left-over" ] && [ ! -e "$tree/src" ]; } ||
	fail "the working copy went into the left-over: $(ls "$tree")"
[ "$(cat "$tree/mm/b.c")" = "$(printf 'b1\nB2')" ] || fail "mm/b.c after the new copy"
ok "a half-made working copy is thrown away"

# 3.
"$t/top/scripts/prepare-tree.sh" --check > "$t/out" 2>&1 || fail "--check on a fresh tree: $(cat "$t/out")"
cp -a "$t/top" "$t/other"
echo 'int y;' > "$t/other/mm/core.c"
"$t/other/scripts/prepare-tree.sh" > "$t/out" 2>&1 || fail "the other checkout: $(cat "$t/out")"
[ "$(cat "$tree/mm/afmalloc/mm/core.c")" = "int y;" ] || fail "the other checkout's source not overlaid"
if "$t/top/scripts/prepare-tree.sh" --check > "$t/out" 2>&1; then
	fail "--check passed on another checkout's sources"
fi
grep -q "no longer holds this checkout's mm/afmalloc/" "$t/out" || fail "--check said: $(cat "$t/out")"
patch_of a.c a2 AA2 > "$t/other/patches/0001-a.patch"
"$t/other/scripts/prepare-tree.sh" > "$t/out" 2>&1 || fail "the other series: $(cat "$t/out")"
"$t/top/scripts/prepare-tree.sh" --check > "$t/out" 2>&1 && fail "--check passed on another series"
grep -q "the patch series" "$t/out" || fail "--check said: $(cat "$t/out")"
"$t/top/scripts/prepare-tree.sh" > "$t/out" 2>&1 || fail "back to this checkout: $(cat "$t/out")"
"$t/top/scripts/prepare-tree.sh" --check > "$t/out" 2>&1 || fail "--check after preparing again: $(cat "$t/out")"
[ "$(cat "$tree/mm/a.c")" = "$(printf 'a1\nA2')" ] || fail "this checkout's series not back"
ok "--check tells this checkout's tree from another checkout's"

# 4. (the series was put back and applied three times above)
[ "$(grep -cxF '   afmalloc' "$tree/Documentation/mm/index.rst")" = 1 ] ||
	fail "toctree: $(cat "$tree/Documentation/mm/index.rst")"
[ "$(grep -A1 -xF '   afmalloc' "$tree/Documentation/mm/index.rst" | tail -n 1)" = '   allocation-profiling' ] ||
	fail "toctree entry out of place: $(cat "$tree/Documentation/mm/index.rst")"
[ "$(grep -cxF 'AFMALLOC COMPRESSED MEMORY ALLOCATOR' "$tree/MAINTAINERS")" = 1 ] ||
	fail "MAINTAINERS: $(cat "$tree/MAINTAINERS")"
grep -A8 -xF 'AFMALLOC COMPRESSED MEMORY ALLOCATOR' "$tree/MAINTAINERS" | grep -qxF 'AFS FILESYSTEM' ||
	fail "MAINTAINERS entry not before AFS: $(cat "$tree/MAINTAINERS")"
cmp -s "$t/top/Documentation/mm/afmalloc.rst" "$tree/Documentation/mm/afmalloc.rst" ||
	fail "Documentation/mm/afmalloc.rst not overlaid"
echo 'other' > "$t/other/Documentation/mm/afmalloc.rst"
"$t/other/scripts/prepare-tree.sh" > "$t/out" 2>&1 || fail "the other checkout's docs: $(cat "$t/out")"
"$t/top/scripts/prepare-tree.sh" --check > "$t/out" 2>&1 && fail "--check passed on another checkout's docs"
grep -q "Documentation/mm/afmalloc.rst" "$t/out" || fail "--check said: $(cat "$t/out")"
ok "the documentation is overlaid and hooked, the MAINTAINERS entry added, once each"
