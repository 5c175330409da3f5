#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of bench/hugetlb-take.c, the HugeTLB test's request and
# release (no VM, no huge page: a plain file stands in for
# /proc/sys/vm/nr_hugepages, which reads back what was written, so the
# kernel always "obtains" all it is asked for).
#
#   tests/scripts/hugetlb-take.sh
#
# 1. bench/build-hugetlb-take.sh builds it, and again only when the
#    source's content changes.
# 2. It writes WANT, prints what it read back, and leaves that less
#    HEADROOM in the file (0 when HEADROOM is larger).
# 3. Bad arguments and a missing file: exit status 1 and a message, and
#    no file written.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
bin=$t/bin/hugetlb-take

out=$(AFMALLOC_CACHE=$t/cache "$top/bench/build-hugetlb-take.sh" --out "$bin" 2>&1) ||
	fail "build-hugetlb-take.sh failed: $out"
{ [ "$out" = "$bin" ] && [ -x "$bin" ]; } || fail "build-hugetlb-take.sh printed '$out', no program at $bin"
touch -d '2000-01-01' "$bin"
AFMALLOC_CACHE=$t/cache "$top/bench/build-hugetlb-take.sh" --out "$bin" > /dev/null 2>&1
[ "$(stat -c %Y "$bin")" = "$(date -d 2000-01-01 +%s)" ] || fail "rebuilt with the same source"
echo 0 > "$bin.sha256"
AFMALLOC_CACHE=$t/cache "$top/bench/build-hugetlb-take.sh" --out "$bin" > /dev/null 2>&1
[ "$(stat -c %Y "$bin")" != "$(date -d 2000-01-01 +%s)" ] || fail "not rebuilt for another source"
ok "build-hugetlb-take.sh builds once per source"

# take WANT HEADROOM EXPECT_PRINTED EXPECT_LEFT
take() {
	local got left
	echo 0 > "$t/nr"
	got=$("$bin" "$t/nr" "$1" "$2") || fail "hugetlb-take $1 $2 failed"
	read -r left < "$t/nr"
	[ "$got" = "$3" ] || fail "hugetlb-take $1 $2 printed '$got', not $3"
	[ "$left" = "$4" ] || fail "hugetlb-take $1 $2 left $left, not $4"
}
take 996 64 996 932
take 10 64 10 0
take 64 64 64 0
take 0 0 0 0
ok "hugetlb-take asks for WANT and gives HEADROOM back"

# refused WHAT ARGS...
refused() {
	local what=$1 err
	shift
	rm -f "$t/absent"
	if err=$("$bin" "$@" 2>&1 >/dev/null); then fail "$what: accepted"; fi
	[ -n "$err" ] || fail "$what: no message"
	[ ! -e "$t/absent" ] || fail "$what: wrote $t/absent"
}
refused "no arguments"
refused "WANT not a number" "$t/nr" x 1
refused "negative HEADROOM" "$t/nr" 1 -1
refused "trailing words" "$t/nr" 1 1 1
refused "missing file" "$t/absent" 1 1
ok "hugetlb-take refuses bad arguments with a message"
