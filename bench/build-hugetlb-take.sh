#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build bench/hugetlb-take.c, the HugeTLB test's request and release with
# its pages locked (bench/untar-remove.sh hugetlb()), for the x86_64 guest,
# which runs it from the host's root file system.
#   bench/build-hugetlb-take.sh [--out PATH]   (default: $AFMALLOC_CACHE/bin/hugetlb-take)
# Prints PATH. Rebuilt when the source's content differs from the one it
# was built from (PATH.sha256), so another checkout's source of other
# content replaces it whatever the files' times.
# shellcheck source=../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../scripts/common.sh"

bin=$AFMALLOC_CACHE/bin/hugetlb-take
while [ $# -gt 0 ]; do
	case "$1" in
	--out) bin=${2:?--out needs a path}; shift ;;
	-h|--help) echo "usage: $0 [--out PATH]"; exit 0 ;;
	*) die "unknown option '$1' (usage: $0 [--out PATH])" ;;
	esac
	shift
done
src=$AFMALLOC_TOP/bench/hugetlb-take.c
sum=$(sha256sum < "$src" | cut -c1-64)
mkdir -p "$(dirname "$bin")"
lock hugetlb-take
if [ ! -x "$bin" ] || [ "$(cat "$bin.sha256" 2>/dev/null)" != "$sum" ]; then
	command -v gcc >/dev/null || apt_install gcc libc6-dev
	gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$bin.$$" "$src" ||
		{ rm -f "$bin.$$"; die "building $src failed"; }
	mv -f "$bin.$$" "$bin"
	echo "$sum" > "$bin.sha256"
fi
echo "$bin"
