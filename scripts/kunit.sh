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
rm -f "$out/test.log"
python3 tools/testing/kunit/kunit.py run \
	--kunitconfig="$AFMALLOC_TOP/kunit/.kunitconfig" \
	--build_dir="$out" --jobs="$AFMALLOC_JOBS" --timeout=900 \
	--make_options="CC=$(kcc)" "$@"
# The tree is shared by every run using the cache: what ran must have been
# this checkout's code.
"$AFMALLOC_TOP/scripts/prepare-tree.sh" --check ||
	die "another run (another checkout) prepared the shared tree during this KUnit run: its result is not this checkout's; run again"
# A passing suite can still have splatted (a lockdep report, a WARN in
# another context): the kernel log must be clean too.
[ -f "$out/test.log" ] || die "kunit.py left no $out/test.log"
# WARNINGs are allowed only inside the brackets of tests that misuse the API
# on purpose (afm_test_expect_warnings()) and from UML's own virt-pci probe.
if ! awk '
	/afmalloc-kunit: expected warnings begin/ { inside = 1 }
	/afmalloc-kunit: expected warnings end/ { inside = 0 }
	/WARNING:/ && !inside && !/arch\/um\/drivers\// { print FILENAME ":" FNR ": " $0; bad = 1 }
	/BUG:|KASAN|possible recursive locking|possible circular locking|inconsistent lock state|Oops|kernel BUG|list_add corruption|list_del corruption|suspicious RCU usage/ {
		print FILENAME ":" FNR ": " $0; bad = 1 }
	END { exit bad }' "$out/test.log" >&2; then
	die "the kernel log of the KUnit run shows the splats above ($out/test.log)"
fi
log "KUnit kernel log clean (no BUG, WARNING, KASAN or lockdep report)"
