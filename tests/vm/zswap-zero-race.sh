#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# zswap's stale entries behind zero-filled pages (tests/vm/zswap-zero-race.c
# says what it looks for): boot a kernel, run the stress program with zswap
# in front of a zram swap device, every page checked.
#
#   tests/vm/zswap-zero-race.sh [--stock | --kernel DIR] [--zpool LIST]
#                               [--events E] [--seconds S] [--pages N]
#                               [--runs R] [--out DIR]
#   tests/vm/zswap-zero-race.sh --print-bin   build the program, print its path
#   tests/vm/zswap-zero-race.sh --guest --bin BIN [--zpool LIST] [...]
#
# --stock: Debian's unmodified 6.12 kernel (scripts/stock-kernel.sh), where
# zswap's zpool can be zsmalloc only (no afmalloc.ko is loaded: the race is
# in the swap core, and that kernel has it). --kernel DIR: the project's
# kernel built in DIR (default $AFMALLOC_BUILD/guest, make guest), which
# carries the fix (patches/0006-*) and where --zpool may also name
# afmalloc/zspage and afmalloc/slab. LIST defaults to zsmalloc. Each zpool
# gets R runs (default 3) on N pages (default 512); a run lasts until the
# kernel has done E (default 200) zswap writebacks and E zero-filled
# swap-outs, the two things the race needs, or stops at the first wrong
# page; S seconds (default 300) is only a backstop, after which the run
# fails as inconclusive. --out DIR keeps the guest console there
# (guest.log).
#
# In the guest (--guest: through scripts/vm-run.sh, or as a step of
# tests/vm/debug-suite.sh): zram0 (lz4, 256 MiB) is the only swap; zswap
# (lz4, shrinker on) in front of it; the program runs in a cgroup whose
# memory.zswap.max is 16 KiB (a few of its pages), so every zswap store
# writes back the cgroup's oldest entries. A run passes when every page
# read back is what was written and the kernel did E zswap writebacks
# (zswpwb) and E zero-filled swap-outs (swpout_zero) before the backstop.
# Afterwards zram0 is swapped off and zswap's enabled, zpool and
# compressor are put back.
#
# Exit status: 0 all runs passed; 3 a page read back wrong; 1 otherwise.
. "$(dirname "$0")/../../scripts/common.sh"

self=$(realpath "$0")

guest() {
	local bin='' zpools=zsmalloc events=200 seconds=300 pages=512 runs=3
	while [ $# -gt 0 ]; do
		case "$1" in
		--bin) bin=${2:?}; shift ;;
		--zpool) zpools=${2:?}; shift ;;
		--seconds) seconds=${2:?}; shift ;;
		--events) events=${2:?}; shift ;;
		--pages) pages=${2:?}; shift ;;
		--runs) runs=${2:?}; shift ;;
		*) die "unknown guest option '$1'" ;;
		esac
		shift
	done
	[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "--guest runs inside a throw-away VM only"
	[ -x "$bin" ] || die "no program '$bin'"
	local zs=/sys/module/zswap/parameters cg=/sys/fs/cgroup z=/sys/block/zram0
	[ -d $zs ] || die "this kernel has no zswap"
	[ -e /sys/class/zram-control ] || modprobe zram num_devices=1 || die "no zram"
	[ -e $z ] || die "no zram0"
	if ! [ -f $cg/cgroup.controllers ]; then
		mkdir -p $cg && mount -t cgroup2 none $cg
	fi
	grep -qw memory $cg/cgroup.controllers || die "no memory controller in cgroup v2"
	echo +memory > $cg/cgroup.subtree_control 2>/dev/null || true
	echo lz4 > $z/comp_algorithm 2>/dev/null || true
	echo 256M > $z/disksize || die "zram0 disksize"
	mkswap -q /dev/zram0 >/dev/null && swapon /dev/zram0 || die "swapon /dev/zram0"
	local was_enabled was_zpool was_comp
	was_enabled=$(cat $zs/enabled) was_zpool=$(cat $zs/zpool) was_comp=$(cat $zs/compressor)
	echo lz4 > $zs/compressor || die "zswap compressor lz4"
	echo Y > $zs/shrinker_enabled 2>/dev/null || true
	echo Y > $zs/enabled || die "cannot enable zswap"
	echo "zswap-zero-race: kernel $(uname -r), $(nproc) CPUs"

	local vm=(zswpout zswpin zswpwb swpout_zero swpin_zero pswpout pswpin)
	vmstat() { local k; for k in "${vm[@]}"; do awk -v k="$k" '$1 == k { print $2 }' /proc/vmstat; done; }
	local zp a r rc=0 st before after c i line
	for zp in ${zpools//,/ }; do
		case "$zp" in
		zsmalloc) a=zsmalloc ;;
		afmalloc/zspage|afmalloc/slab)
			echo "${zp#afmalloc/}" > /sys/module/afmalloc/parameters/zswap_store ||
				die "afmalloc.zswap_store=${zp#afmalloc/} refused"
			a=afmalloc ;;
		*) die "unknown zpool '$zp' (zsmalloc, afmalloc/zspage, afmalloc/slab)" ;;
		esac
		echo "$a" > $zs/zpool && [ "$(cat $zs/zpool)" = "$a" ] || die "cannot switch zswap.zpool to $a"
		for r in $(seq 1 "$runs"); do
			c=$cg/zzr.$r
			mkdir "$c" || die "cannot create $c"
			echo 16K > "$c/memory.zswap.max" || die "memory.zswap.max (CONFIG_ZSWAP with memcg)"
			mapfile -t before < <(vmstat)
			set +e
			bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$c" \
				"$bin" --pages "$pages" --events "$events" --seconds "$seconds" --seed "$r"
			st=$?
			set -e
			mapfile -t after < <(vmstat)
			line=''
			for i in "${!vm[@]}"; do
				line+=" ${vm[$i]}=$(( ${after[$i]:-0} - ${before[$i]:-0} ))"
			done
			echo "zswap-zero-race: $zp run $r:$line"
			rmdir "$c" 2>/dev/null || true
			if [ "$st" = 3 ]; then
				echo "zswap-zero-race: FAIL: $zp run $r: a page read back wrong"
				rc=3
			elif [ "$st" = 4 ]; then
				echo "zswap-zero-race: FAIL: $zp run $r: inconclusive (fewer than $events zswap writebacks or zero-filled swap-outs in $seconds s)"
				[ "$rc" = 3 ] || rc=1
			elif [ "$st" != 0 ]; then
				echo "zswap-zero-race: FAIL: $zp run $r: the program exited $st"
				[ "$rc" = 3 ] || rc=1
			elif [ $(( ${after[3]:-0} - ${before[3]:-0} )) -le 0 ] ||
			     [ $(( ${after[2]:-0} - ${before[2]:-0} )) -le 0 ]; then
				echo "zswap-zero-race: FAIL: $zp run $r: inconclusive (no zero-filled swap-out or no zswap writeback)"
				[ "$rc" = 3 ] || rc=1
			fi
		done
	done
	swapoff /dev/zram0 || { echo "zswap-zero-race: FAIL: swapoff /dev/zram0"; rc=1; }
	echo "$was_zpool" > $zs/zpool || true
	echo "$was_comp" > $zs/compressor || true
	echo "$was_enabled" > $zs/enabled || true
	[ "$rc" = 0 ] && echo "zswap-zero-race: PASS ($zpools, $runs runs of $events zswap writebacks and zero-filled swap-outs each)"
	return "$rc"
}

if [ "${1:-}" = --guest ]; then
	shift
	guest "$@"
	exit $?
fi

stock=0 kdir=$AFMALLOC_BUILD/guest out='' gargs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--print-bin) test_prog zswap-zero-race; exit 0 ;;
	--stock) stock=1 ;;
	--kernel) kdir=${2:?--kernel needs a build dir}; shift ;;
	--out) out=${2:?--out needs a folder}; shift ;;
	--zpool|--events|--seconds|--pages|--runs) gargs+=("$1" "${2:?$1 needs a value}"); shift ;;
	-h|--help) sed -n '3,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1'" ;;
	esac
	shift
done
need_root "booting a VM"
bin=$(test_prog zswap-zero-race)
if [ "$stock" = 1 ]; then
	eval "$("$AFMALLOC_TOP/scripts/stock-kernel.sh" --no-build)"
	kernel=$STOCK_KERNEL
else
	kernel=$kdir/arch/x86/boot/bzImage
	[ -f "$kernel" ] || die "no kernel at $kernel (make guest)"
fi
logargs=()
if [ -n "$out" ]; then
	mkdir -p "$out"
	logargs=(--log "$out/guest.log")
fi
log "zswap-zero-race on $kernel"
exec "$AFMALLOC_TOP/scripts/vm-run.sh" --kernel "$kernel" --memory 1G --timeout 1800 \
	"${logargs[@]}" "$self" --guest --bin "$bin" "${gargs[@]}"
