#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Does the guest CPU keep the flags register right across cmpxchg16b?
# (tests/vm/cx16-flags.c says what it checks and why): boot a kernel and
# run the program in it, no zram, zswap or afmalloc involved.
#
#   tests/vm/cx16-flags.sh [--kernel DIR] [--cpus N] [--seconds S]
#                          [--threads T] [--out DIR]
#   tests/vm/cx16-flags.sh --print-bin   build the program, print its path
#   tests/vm/cx16-flags.sh --guest --bin BIN [--seconds S] [--threads T]
#
# --kernel DIR: the kernel built in DIR (default $AFMALLOC_BUILD/guest,
# make guest), booted with N CPUs (default 2) under the accelerator
# scripts/vm-run.sh picks; the program runs S seconds (default 600) with T
# threads (default: twice the guest's CPUs). --out DIR keeps the guest
# console there (guest.log). The guest prints the CPU model and whether it
# has cx16, then the program's lines and its summary:
#   cx16-flags: threads=N seconds=S ops=N bad_flags=N bad_zf=N bad_value=N result=pass|FAIL
#
# Exit status: 0 nothing wrong; 3 the program saw a wrong flags register,
# ZF or value; 1 otherwise.

. "$(dirname "$0")/../../scripts/common.sh"

self=$(realpath "$0")

guest() {
	local bin='' seconds=600 threads=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--bin) bin=${2:?}; shift ;;
		--seconds) seconds=${2:?}; shift ;;
		--threads) threads=${2:?}; shift ;;
		*) die "unknown guest option '$1'" ;;
		esac
		shift
	done
	[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "--guest runs inside a throw-away VM only"
	[ -x "$bin" ] || die "no program '$bin'"
	echo "cx16-flags-guest: $(uname -r), $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
		"cx16: $(grep -qw cx16 /proc/cpuinfo && echo yes || echo no)"
	local args=(--seconds "$seconds")
	[ "$threads" -gt 0 ] && args+=(--threads "$threads")
	local rc=0
	"$bin" "${args[@]}" || rc=$?
	case $rc in
	0) return 0 ;;
	1) return 3 ;;
	*) return 1 ;;
	esac
}

if [ "${1:-}" = --guest ]; then
	shift
	guest "$@"
	exit $?
fi

kdir=$AFMALLOC_BUILD/guest out='' cpus=2 seconds=600 gargs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--print-bin) test_prog cx16-flags; exit 0 ;;
	--kernel) kdir=${2:?--kernel needs a build dir}; shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; shift ;;
	--seconds) seconds=${2:?--seconds needs a number}; shift ;;
	--threads) gargs+=("$1" "${2:?$1 needs a value}"); shift ;;
	--out) out=${2:?--out needs a folder}; shift ;;
	-h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1'" ;;
	esac
	shift
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive number, not '$seconds'"
[ ${#gargs[@]} -eq 0 ] || [[ "${gargs[1]}" =~ ^[1-9][0-9]*$ ]] ||
	die "--threads must be a positive number, not '${gargs[1]}'"
need_root "booting a VM"
bin=$(test_prog cx16-flags)
kernel=$kdir/arch/x86/boot/bzImage
[ -f "$kernel" ] || die "no kernel at $kernel (make guest)"
logargs=()
if [ -n "$out" ]; then
	mkdir -p "$out"
	logargs=(--log "$out/guest.log")
fi
log "cx16-flags on $kernel, $cpus CPUs, $seconds s"
exec "$AFMALLOC_TOP/scripts/vm-run.sh" --kernel "$kernel" --cpus "$cpus" --memory 1G \
	--timeout $((seconds + 600)) "${logargs[@]}" \
	"$self" --guest --bin "$bin" --seconds "$seconds" "${gargs[@]}"
