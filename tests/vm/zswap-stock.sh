#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# zswap on afmalloc in a VM (host side; the guest part is zswap-test.sh).
#
#   tests/vm/zswap-stock.sh [--own-kernel | --kernel DIR] [--no-kunit] [--mb N]
#                           [--limit-mb N] [--timeout SEC]
#   tests/vm/zswap-stock.sh --print-load   build the workload, print its path
#
# Default: the unmodified Debian kernel. scripts/stock-kernel.sh installs
# linux-image/linux-headers 6.12.N+deb12-amd64 and builds afmalloc.ko (and
# the KUnit modules when that kernel has CONFIG_KUNIT); the VM boots
# /boot/vmlinuz-KVER (virtme-ng takes its modules from /lib/modules/KVER),
# insmods afmalloc.ko and switches zswap to it at run time.
# --own-kernel: the project's guest kernel (scripts/build-guest.sh), where
# afmalloc is built in: same test without insmod/rmmod.
# --kernel DIR: as --own-kernel, with the build dir DIR (e.g. the debug
# guest, $AFMALLOC_BUILD/guest-debug).
# The workload program is built here with the host's gcc into
# $AFMALLOC_BUILD/zswap-load/ (the guest shares the host's root fs);
# --print-load only builds it and prints its path, booting nothing
# (bench/zswap-time/run.sh times the same workload).
#
# Skips: Debian's kernel may lack something a check needs (KUnit without
# CONFIG_KUNIT; afmalloc's debugfs statistics in a module built without
# them). Such a skip is allowed on that kernel only, and printed as
# "SKIP: ..." (here, or by zswap-test.sh in the guest); the run still
# passes. On the project's kernel (--own-kernel, --kernel), zswap-test.sh
# fails instead of skipping.
. "$(dirname "$0")/../../scripts/common.sh"

own=0 own_kdir= kunit=1 mb=128 limit_mb=32 timeout_s=420 print_load=0
while [ $# -gt 0 ]; do
	case "$1" in
	--own-kernel) own=1 ;;
	--kernel) own=1; own_kdir=${2:?--kernel needs a build dir}; shift ;;
	--no-kunit) kunit=0 ;;
	--mb) mb=${2:?}; shift ;;
	--limit-mb) limit_mb=${2:?}; shift ;;
	--timeout) timeout_s=${2:?}; shift ;;
	--print-load) print_load=1 ;;
	-h|--help) sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1'" ;;
	esac
	shift
done
[[ "$mb" =~ ^[1-9][0-9]*$ && "$limit_mb" =~ ^[1-9][0-9]*$ ]] || die "--mb and --limit-mb take MiB"
need_root "booting a VM"
test_sh=$AFMALLOC_TOP/tests/vm/zswap-test.sh

# The workload binary, rebuilt when its source changes.
loaddir=$AFMALLOC_BUILD/zswap-load
mkdir -p "$loaddir"
bash "$test_sh" --emit-load-source > "$loaddir/zswap-load.c.new"
if ! cmp -s "$loaddir/zswap-load.c.new" "$loaddir/zswap-load.c" || [ ! -x "$loaddir/zswap-load" ]; then
	mv "$loaddir/zswap-load.c.new" "$loaddir/zswap-load.c"
	gcc -O2 -Wall -Werror -o "$loaddir/zswap-load" "$loaddir/zswap-load.c" ||
		die "cannot build the workload"
else
	rm -f "$loaddir/zswap-load.c.new"
fi
if [ "$print_load" = 1 ]; then
	echo "$loaddir/zswap-load"
	exit 0
fi

args=(--load "$loaddir/zswap-load" --mb "$mb" --limit-mb "$limit_mb")
if [ "$own" = 1 ]; then
	kernel=${own_kdir:-$AFMALLOC_BUILD/guest}/arch/x86/boot/bzImage
	[ -f "$kernel" ] || die "no guest kernel at $kernel: run scripts/build-guest.sh [--debug] (make guest)"
	args+=(--builtin)
	log "zswap test on the project's kernel ($kernel), afmalloc built in"
else
	vars=$("$AFMALLOC_TOP/scripts/stock-kernel.sh")
	eval "$vars"
	kernel=$STOCK_KERNEL
	args+=(--module "$STOCK_MODULE")
	if [ "$kunit" = 1 ] && [ -n "$STOCK_KUNIT_DIR" ]; then
		args+=(--kunit "$STOCK_KUNIT_DIR")
	elif [ "$kunit" = 1 ]; then
		log "SKIP: KUnit on the stock kernel: $STOCK_KVER has CONFIG_KUNIT=$STOCK_KUNIT_CONFIG" \
			"(allowed there; the suites run on UML and in the debug guest)"
	else
		log "KUnit not requested (--no-kunit)"
	fi
	log "zswap test on the stock kernel $STOCK_KVER ($kernel), afmalloc.ko from $STOCK_MODULE"
fi

# slab_nomerge: zsmalloc's handle and zspage caches show up on their own in
# /proc/slabinfo, so the test can count every page each allocator holds.
exec "$AFMALLOC_TOP/scripts/vm-run.sh" --kernel "$kernel" --memory 2G --cpus 2 \
	--append slab_nomerge --timeout "$timeout_s" "$test_sh" "${args[@]}"
