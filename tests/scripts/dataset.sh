#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of bench/dataset.sh on a small fake pristine tree:
#
#   tests/scripts/dataset.sh
#
# 1. The tar holds the tree's files in sorted order under linux/, every
#    64th for tiny, and its list is kept beside it.
# 2. A file written into the pristine tree after unpacking (checkpatch.pl's
#    .checkpatch-camelcase.* cache, as found in the cache of the project's
#    machine) is left out, with a warning: the tar is byte for byte the one
#    made before it (it used to go into the tar, so that the tar of the same
#    package differed from machine to machine).
# 3. A tar made before the list was kept is kept when it holds the tree's
#    files, and made again when it holds such a file.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

src=$t/src
mkdir -p "$src/mm" "$src/fs" "$t/top/scripts" "$t/top/bench"
for i in $(seq 1 130); do echo "file $i" > "$src/fs/f$i.c"; done
echo 'int x;' > "$src/mm/a.c"
# As the Debian tarball unpacks: old mtimes, then the stamp.
find "$src" -type f -exec touch -d '2025-11-17 10:07' {} +
touch "$src/.afmalloc-unpacked"
cp "$top/bench/dataset.sh" "$t/top/bench/"
cp "$top/scripts/common.sh" "$t/top/scripts/"
printf '#!/bin/sh\necho 6.12.0\n' > "$t/top/scripts/kernel-source.sh"
chmod +x "$t/top/scripts/kernel-source.sh" "$t/top/bench/dataset.sh"
export AFMALLOC_CACHE=$t/cache AFMALLOC_SRC=$src AFMALLOC_DATA=$t/cache/data
data=$t/cache/data

# 1.
out=$("$t/top/bench/dataset.sh" full 2> "$t/err")
[ "$out" = "$data/linux-6.12-full.tar" ] || fail "full: printed '$out'"
want=$( (cd "$src" && find . -type f ! -name .afmalloc-unpacked | LC_ALL=C sort) | sed 's|^\./|linux/|')
[ "$(tar -tf "$out")" = "$want" ] || fail "full: the tar's members are not the tree's files in order"
[ "$(wc -l < "$out.files")" = 131 ] || fail "full: no list of its 131 files beside it"
tiny=$("$t/top/bench/dataset.sh" tiny 2>/dev/null)
[ "$(tar -tf "$tiny")" = "$(echo "$want" | awk 'NR % 64 == 1')" ] || fail "tiny: not every 64th file"
ok "the tar holds the tree's files, sorted; tiny every 64th; lists kept"

# 2.
sum=$(sha256sum < "$out")
cp "$out" "$t/full-before.tar"
rm -f "$out" "$out.files"
sleep 1
: > "$src/.checkpatch-camelcase.date.0"
"$t/top/bench/dataset.sh" full > /dev/null 2> "$t/err"
[ "$(sha256sum < "$out")" = "$sum" ] ||
	fail "a file written into the pristine tree changed the tar: $(tar -tf "$out" | grep checkpatch || true)"
grep -q "left out of the datasets: ./.checkpatch-camelcase.date.0" "$t/err" ||
	fail "no warning naming the file: $(cat "$t/err")"
ok "a file written into the tree after unpacking is left out, with a warning; the tar is the same"

# 3.
rm -f "$out.files"
"$t/top/bench/dataset.sh" full > /dev/null 2> "$t/err"
grep -q "holds the tree's files: keeping it" "$t/err" || fail "an old tar of the tree's files was not kept: $(cat "$t/err")"
cmp -s "$out" "$t/full-before.tar" || fail "the old tar changed"
[ -s "$out.files" ] || fail "no list kept for the old tar"
# An old tar made with the file in it.
(cd "$src" && find . -type f ! -name .afmalloc-unpacked | LC_ALL=C sort) > "$t/with"
tar -C "$src" --transform='s|^\./|linux/|' --no-recursion -cf "$out" -T "$t/with"
rm -f "$out.files"
"$t/top/bench/dataset.sh" full > /dev/null 2> "$t/err"
grep -q "making it again" "$t/err" || fail "an old tar holding the file was kept: $(cat "$t/err")"
[ "$(sha256sum < "$out")" = "$sum" ] || fail "the tar made again is not the tree's"
ok "an old tar is kept when it holds the tree's files, made again when not"
