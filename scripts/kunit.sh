#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run afmalloc's KUnit suites on UML with kunit.py and kunit/.kunitconfig.
# Fails (non-zero) on any failed test, crash or build error.
#   scripts/kunit.sh [extra kunit.py run options, e.g. 'afmalloc*' filter]
. "$(dirname "$0")/common.sh"

for a in "$@"; do
	case "$a" in
	-h|--help) echo "usage: $0 [kunit.py run options]"; exit 0 ;;
	esac
done
lock build-kunit
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
out=$AFMALLOC_BUILD/kunit
mkdir -p "$out"
cd "$tree"
# kunit.py refuses a tree that was built in place; we only ever build with O=.
exec python3 tools/testing/kunit/kunit.py run \
	--kunitconfig="$AFMALLOC_TOP/kunit/.kunitconfig" \
	--build_dir="$out" --jobs="$AFMALLOC_JOBS" --timeout=900 \
	--make_options="CC=$(kcc)" "$@"
