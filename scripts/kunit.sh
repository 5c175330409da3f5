#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run afmalloc's KUnit suites with kunit.py and kunit/.kunitconfig: on UML
# (the default, what make check runs), or with --arm64 on an arm64 kernel
# (4 KiB pages, 2 CPUs; --arm64-16k: 16 KiB pages, as Android's 16 KiB
# kernels) under qemu-system-aarch64, cross-compiled (make kunit-arm64
# [PAGES=16K]: a 64-bit architecture other than x86, as phones run; the
# cross compiler and QEMU's arm64 emulator are installed if missing).
# Fails (non-zero) on any failed test, crash or build error.
#   scripts/kunit.sh [--arm64|--arm64-16k] [kunit.py run options, e.g. 'afmalloc*']
. "$(dirname "$0")/common.sh"

arm64=
case "${1:-}" in
--arm64) arm64=4k; shift ;;
--arm64-16k) arm64=16k; shift ;;
esac
for a in "$@"; do
	case "$a" in
	-h|--help) echo "usage: $0 [--arm64|--arm64-16k] [kunit.py run options]"; exit 0 ;;
	esac
done
if [ -n "$arm64" ]; then
	apt_install gcc-aarch64-linux-gnu
	qemu_install qemu-system-arm
	# Under emulation every case runs several times slower than on UML.
	args=(--arch=arm64 --cross_compile=aarch64-linux-gnu-
	      --qemu_args="-smp 2" --timeout=3600
	      --make_options="CC=$(kcc aarch64-linux-gnu-gcc)")
	out=$AFMALLOC_BUILD/kunit-arm64
	if [ "$arm64" = 16k ]; then
		args+=(--kconfig_add=CONFIG_ARM64_16K_PAGES=y)
		out=$out-16k
	fi
	lock "build-$(basename "$out")"
else
	args=(--timeout=900 --make_options="CC=$(kcc)")
	lock build-kunit
	out=$AFMALLOC_BUILD/kunit
fi
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
mkdir -p "$out"
cd "$tree"
# kunit.py refuses a tree that was built in place; we only ever build with O=.
rm -f "$out/test.log"
python3 tools/testing/kunit/kunit.py run \
	--kunitconfig="$AFMALLOC_TOP/kunit/.kunitconfig" \
	--build_dir="$out" --jobs="$AFMALLOC_JOBS" "${args[@]}" "$@"
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
