#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Swap-churn benchmark, guest side (issue 15), run as root inside a
# throw-away guest by scripts/vm-run.sh (bench/churn/run.sh boots it):
#
#   churn-guest.sh --bin CHURN --out DIR [--pool FILE] [--target zram|zswap]
#                  [--alloc afmalloc/zspage,afmalloc/slab,zsmalloc]
#                  [--comp lz4|zstd] [--runs N] [--order forward|reverse]
#                  [--limit-pct P] [--stall S] [--check] [--perf S]
#                  [--warmup S] [-- CHURN_ARGS...]
#
# For run r = 1..N and every allocator of --alloc (run 1 in the order given,
# or reversed with --order reverse; every other run reversed again), on a
# fresh swap setup:
#   zram   a new zram device (hot_add) with that allocator (its "allocator"
#          attribute, patches/0002) and --comp, twice the working set as
#          disksize, as the only swap; afterwards swapoff, reset, hot_remove.
#   zswap  zswap (compressor --comp, max_pool_percent 100, shrinker on) in
#          front of a new zram device (zsmalloc, lz4) as the only swap, as
#          tests/vm/zswap-test.sh does; zswap.zpool switched at run time:
#          afmalloc/zspage and afmalloc/slab are zpool afmalloc with
#          afmalloc.zswap_store zspage or slab, zsmalloc is zsmalloc.
#          Afterwards swapoff drains it, zswap.zpool goes back to zsmalloc
#          and the drained afmalloc pool must be gone before the next run.
# An afmalloc allocator may carry module parameters for its runs, each
# "+NAME=VALUE" (afmalloc/zspage+zspage_handle_phases=N): written to
# /sys/module/afmalloc/parameters/NAME before its pool is made, the old
# value written back after the run, so that a setting is measured beside
# the default in one boot (bench/lib/afm-params.sh). The full name labels
# its rows and files.
# CHURN (bench/churn/churn.c, built on the host) takes its page contents
# from the pool file FILE (default: pool.bin next to CHURN, which
# bench/churn/run.sh --print-bin makes on the host; without one it reads
# /usr itself, which takes a minute under TCG). It runs in a new cgroup v2
# with memory.high = --limit-pct (default 33) percent of its --mb, so its
# pages are swapped out and in all the time. memory.high, not memory.max,
# is the limit: the kernel reclaims above it and throttles the faulting
# threads, but never OOM-kills (with memory.max alone, the switch phase,
# one process sweeping 3/4 of the limit while 8 threads fault, ran into
# memcg OOM kills on an unloaded host: the threads outran reclaim).
# memory.max = memory.high + a quarter of --mb is only a backstop against
# a runaway workload; usage stays at memory.high. bench/churn/sample.py samples
# the allocator, zram/zswap and the cgroup every second next to it (outside
# the cgroup). Before each run: page cache dropped, memory compacted.
#
# --warmup S: before run 1, the workload once per allocator (in run 1's
# order) on its own fresh device and cgroup: the fill and S seconds of
# churn, no other phase, no verification; its samples, progress and log go
# to DIR/warmup/, outside the report. A boot's first run is slower than the
# others whatever its allocator (bench/results/churn-zram-lz4-first: with
# zsmalloc first in the boot, zsmalloc's first run touched 6% fewer pages a
# second than its second, and afmalloc/zspage's first run, second in the
# boot, was not slow), and the first in the boot is always the allocator
# listed first; the warm-up takes that cost instead of run 1.
#
# --perf S: where the CPU goes, for comparing the allocators' costs: S
# seconds of `perf record -a` (the host's perf, cpu-clock at 499 Hz) from
# 30 s after each run's workload starts (in its churn phase), kept with
# call graphs in DIR/perf-RUN-ALLOC.data and reported by symbol into
# DIR/perf-RUN-ALLOC.txt. Profiling costs the same for every
# allocator but slows the workload: not for runs whose figures are kept.
#
# A stalled step is reported rather than waited on: every "churn-guest:"
# line marks progress, and a watchdog in the background, when no line came
# for --stall seconds (default 900; bench/churn/run.sh passes the timed
# phases plus 300), prints the last one and the kernel's view of every task
# (sysrq w: blocked tasks, l: CPU backtraces, t: all tasks) on the
# console, then powers the guest off (sysrq o), so that a hang costs
# --stall seconds instead of the VM's whole timeout. It uses no program
# from the 9p root (bash builtins, /proc, /run), which may be what hangs,
# but for dmesg, which it runs in the background to save the kernel log
# next to the results (stall-dmesg.log) before the power-off.
#
# The guest's console can stop passing output to the host while the guest
# runs on (seen under TCG on a loaded host: kernel messages and the
# script's lines alike, for good), so every line the script prints is
# also appended, with the UTC time and the guest's uptime, to
# DIR/churn-guest.log, and what the watchdog found too.
#
# DIR gets, appended per run: samples.csv (sample.py's columns, documented
# there), progress.csv (churn's --out rows prefixed with
# run,pos,target,alloc,comp), churn-<run>-<alloc>.log (its output) and
# churn-guest.log (the lines above).
#
# Fails when the workload fails (checksum mismatch: status 1, printed
# page), dies, or (with --check, the short in-VM test) when a run swapped
# nothing out or nothing in, or the allocator under test never stored an
# object (from the samples: peak compr_bytes, plus for afmalloc its
# objects; for zswap also zswpout/zswpin and, for afmalloc, an afmalloc
# pool), or when on zram afmalloc/zspage's count of the pages its
# compaction gave back, its own runs under churn included, is not the
# pages_compacted zram shows (compacted_agree()).
set -euo pipefail

hb='' notes=''
# keep LINE: append LINE to DIR/churn-guest.log (once DIR exists), stamped.
keep() {
	local up
	[ -n "$notes" ] || return 0
	read -r up _ < /proc/uptime || up='?'
	TZ=UTC printf '%(%Y-%m-%dT%H:%M:%SZ)T [%s] %s\n' -1 "$up" "$1" >> "$notes" 2>/dev/null || true
}
die() {
	keep "churn-guest: error: $*"
	echo "churn-guest: error: $*" >&2
	dmesg | tail -n 20 >&2
	exit 1
}
# note MSG: print MSG, keep it in DIR/churn-guest.log; it is also the
# watchdog's heartbeat (the time and the line, in the guest's tmpfs /run),
# written after the console took it.
note() {
	keep "churn-guest: $*"
	echo "churn-guest: $*"
	[ -z "$hb" ] || printf '%(%s)T %s\n' -1 "$*" > "$hb" 2>/dev/null || true
}
usage() {
	echo "usage: $0 --bin CHURN --out DIR [--pool FILE] [--target zram|zswap] [--alloc LIST] [--comp lz4|zstd]"
	echo "          [--runs N] [--order forward|reverse] [--limit-pct P] [--stall S] [--check]"
	echo "          [--perf S] [--warmup S] [-- CHURN_ARGS...]"
}

bin='' out='' pool='' target=zram allocs=afmalloc/zspage,afmalloc/slab,zsmalloc comp=lz4 runs=1
order=forward limit_pct=33 check=0 stall=900 perf_s=0 warmup=0
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) bin=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--pool) pool=${2:?}; shift ;;
	--target) target=${2:?}; shift ;;
	--alloc) allocs=${2:?}; shift ;;
	--comp) comp=${2:?}; shift ;;
	--runs) runs=${2:?}; shift ;;
	--order) order=${2:?}; shift ;;
	--limit-pct) limit_pct=${2:?}; shift ;;
	--stall) stall=${2:?}; shift ;;
	--check) check=1 ;;
	--perf) perf_s=${2:?}; shift ;;
	--warmup) warmup=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
churn_args=("$@")
[ -x "$bin" ] || die "workload binary '$bin' missing (--bin; bench/churn/run.sh --print-bin builds it)"
[ -n "$out" ] || die "--out is required"
[ -n "$pool" ] || [ ! -f "$(dirname "$bin")/pool.bin" ] || pool=$(dirname "$bin")/pool.bin
[ -z "$pool" ] || [ -f "$pool" ] || die "no pool file $pool"
pool_args=()
[ -z "$pool" ] || pool_args=(--pool "$pool")
case "$target" in zram|zswap) ;; *) die "--target must be zram or zswap, not '$target'" ;; esac
case "$comp" in lz4|zstd) ;; *) die "--comp must be lz4 or zstd, not '$comp'" ;; esac
case "$order" in forward|reverse) ;; *) die "--order must be forward or reverse" ;; esac
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive number"
[[ "$limit_pct" =~ ^[1-9][0-9]?$ ]] || die "--limit-pct must be 1..99"
[[ "$stall" =~ ^[1-9][0-9]*$ ]] || die "--stall must be a positive number of seconds"
[[ "$perf_s" =~ ^[0-9]+$ ]] || die "--perf must be a number of seconds"
[[ "$warmup" =~ ^[0-9]+$ ]] || die "--warmup must be a number of seconds"
if [ "$perf_s" -gt 0 ]; then
	command -v perf >/dev/null || die "--perf: no perf in the guest (the host's root; apt-get install linux-perf)"
	echo -1 > /proc/sys/kernel/perf_event_paranoid
	echo 0 > /proc/sys/kernel/kptr_restrict
fi
IFS=, read -r -a alist <<< "$allocs"
# shellcheck source=SCRIPTDIR/../lib/afm-params.sh
. "$(dirname "$(realpath "$0")")/../lib/afm-params.sh"
# shellcheck disable=SC2034 # read by afm-params.sh
AFM_NOTE=note
for a in "${alist[@]}"; do
	afm_check_alloc --guest "$a"
done
[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "runs inside a throw-away VM (scripts/vm-run.sh) only"
grep -qw slab_nomerge /proc/cmdline ||
	die "boot with slab_nomerge: merged slab caches hide zsmalloc's metadata"
# The working set, from CHURN_ARGS (--mb N or --mb=N).
mb=
for ((i = 0; i < ${#churn_args[@]}; i++)); do
	case "${churn_args[i]}" in
	--mb) mb=${churn_args[i + 1]:-} ;;
	--mb=*) mb=${churn_args[i]#--mb=} ;;
	esac
done
[[ "$mb" =~ ^[1-9][0-9]*$ ]] || die "give the workload's size as '-- --mb N ...'"
here=$(dirname "$(realpath "$0")")
sampler=$here/sample.py
py=/usr/bin/python3
[ -x $py ] || py=python3

dbg=/sys/kernel/debug
cg=/sys/fs/cgroup
zs=/sys/module/zswap/parameters
ctl=/sys/class/zram-control
mountpoint -q $dbg || mount -t debugfs none $dbg
if ! [ -f $cg/cgroup.controllers ]; then
	if mountpoint -q $cg; then umount $cg 2>/dev/null || true; fi
	mkdir -p $cg && mount -t cgroup2 none $cg
fi
grep -qw memory $cg/cgroup.controllers || die "no memory controller in cgroup v2 (CONFIG_MEMCG)"
echo +memory > $cg/cgroup.subtree_control 2>/dev/null || true
[ -d $ctl ] || modprobe zram num_devices=0 2>/dev/null || true
[ -w $ctl/hot_add ] || die "no $ctl/hot_add (CONFIG_ZRAM)"
[ -d $zs ] || die "this kernel has no zswap (CONFIG_ZSWAP)"
[ -d $dbg/afmalloc ] || case "$allocs" in *afmalloc*) die "no $dbg/afmalloc (CONFIG_AFMALLOC_STAT)" ;; esac
swapoff -a 2>/dev/null || true
echo 0 > $zs/enabled

mkdir -p "$out"
out=$(realpath "$out")
notes=$out/churn-guest.log
samples=$out/samples.csv progress=$out/progress.csv
limit=$(( (mb << 20) * limit_pct / 100 ))
note "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo);" \
	"target $target, $comp, allocators ${alist[*]}, $runs run(s), order $order;" \
	"workload ${churn_args[*]} in a cgroup of memory.high $((limit >> 20)) MiB" \
	"(memory.max $(((limit + (mb << 20) / 4) >> 20)) MiB), pool ${pool:-read from /usr}"

# zram_new ALLOC COMP DISKSIZE: hot_add a device, configure it; prints zramN.
zram_new() {
	local id dev t
	id=$(cat $ctl/hot_add) || die "zram hot_add failed"
	dev=zram$id
	echo "$1" > /sys/block/"$dev"/allocator || die "$dev: allocator '$1' refused"
	grep -q "\[$1\]" /sys/block/"$dev"/allocator || die "$dev: allocator is $(cat /sys/block/"$dev"/allocator)"
	echo "$2" > /sys/block/"$dev"/comp_algorithm || die "$dev: compressor '$2' refused"
	# A new disk may still be probed (udev): retry for a while.
	for t in 1 2 3 4 5 6 7 8 9 10; do
		echo "$3" > /sys/block/"$dev"/disksize 2>/dev/null && break
		[ $t = 10 ] && die "$dev: cannot set disksize $3"
		sleep 0.5
	done
	mkswap -q /dev/"$dev" >/dev/null || die "mkswap /dev/$dev"
	swapon -p 100 /dev/"$dev" || die "swapon /dev/$dev"
	echo "$dev"
}
zram_del() {
	local dev=$1 t
	swapoff /dev/"$dev" 2>/dev/null || true
	for t in 1 2 3 4 5 6 7 8 9 10; do
		echo 1 > /sys/block/"$dev"/reset 2>/dev/null && break
		sleep 0.5
	done
	echo "${dev#zram}" > $ctl/hot_remove 2>/dev/null || note "$dev: hot_remove refused (left in place)"
}
set_zpool() {
	echo "$1" > $zs/zpool 2>/dev/null || return 1
	[ "$(cat $zs/zpool)" = "$1" ]
}
afm_zswap_pools() { find $dbg/afmalloc -maxdepth 1 -name 'zswap*' 2>/dev/null | wc -l; }
# shellcheck source=../../tests/vm/lib/wait.sh
. "$here/../../tests/vm/lib/wait.sh"	# wait_until SECONDS CMD...
nlines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
no_afm_zswap_pool() { [ "$(afm_zswap_pools)" = 0 ]; }
sampled() { [ "$(nlines "$samples")" -gt "$(($1 + ($1 == 0)))" ]; }
rm_cgroup() { rmdir "$1" 2>/dev/null || ! [ -d "$1" ]; }

# watchdog: see the header. Sleeps with read -t on a pipe nobody writes.
watchdog() {
	local last msg now nap line
	exec {nap}<> <(:)
	while :; do
		read -r -t 30 -u "$nap" _ || true
		read -r last msg < "$hb" || continue	# also while note() rewrites it
		[[ "$last" =~ ^[0-9]+$ ]] || continue
		printf -v now "%(%s)T" -1
		[ $((now - last)) -ge "$stall" ] || continue
		line="churn-guest: STALL: no progress for $((now - last)) s (--stall $stall) since"
		line+=" \"$msg\"; blocked tasks, CPU backtraces and every task follow (sysrq w, l, t;"
		line+=" also in $out/stall-dmesg.log), then the guest powers off"
		echo "$line"
		keep "$line" &
		echo w > /proc/sysrq-trigger
		echo l > /proc/sysrq-trigger
		echo t > /proc/sysrq-trigger
		dmesg > "$out/stall-dmesg.log" 2>&1 &
		read -r -t 20 -u "$nap" _ || true
		echo "churn-guest: STALL: powering off (sysrq o)"
		echo o > /proc/sysrq-trigger
		return
	done
}
wdpid=''
if [ -w /proc/sysrq-trigger ] && [ -d /run ] && [ -w /run ]; then
	hb=/run/churn-guest-$$.hb
	note "watchdog: a report and power-off after $stall s without progress (heartbeat $hb)"
	watchdog &
	wdpid=$!
else
	note "watchdog: off (no /proc/sysrq-trigger: CONFIG_MAGIC_SYSRQ)"
fi

# On any exit, also a failed run: stop the sampler and the workload, remove
# the cgroup and the swap device, so that later tests in the same boot
# start clean; then stop the watchdog.
cur_spid='' cur_cg='' cur_dev=''
cleanup() {
	local rc=$?
	note "exiting (status $rc): cleaning up${cur_spid:+ sampler $cur_spid}${cur_cg:+ cgroup $cur_cg}${cur_dev:+ device $cur_dev}"
	[ -z "$cur_spid" ] || kill -TERM "$cur_spid" 2>/dev/null || true
	if [ -n "$cur_cg" ] && [ -d "$cur_cg" ]; then
		echo 1 > "$cur_cg/cgroup.kill" 2>/dev/null || true
		wait_until 30 rm_cgroup "$cur_cg" || note "cannot remove the cgroup $cur_cg"
	fi
	if [ -n "$cur_dev" ]; then
		if [ "$target" = zswap ]; then
			set_zpool zsmalloc || true
			echo 0 > $zs/enabled
		fi
		zram_del "$cur_dev"
	fi
	afm_restore_params
	if [ -n "$wdpid" ]; then
		kill "$wdpid" 2>/dev/null || true
		rm -f "$hb"
	fi
	echo "churn-guest: exit status $rc"
	exit "$rc"
}
trap cleanup EXIT

peak() {  # peak FILE RUN ALLOC COLUMN: largest value of COLUMN for the run
	awk -F, -v r="$2" -v a="$3" -v c="$4" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
		$3 == r && $6 == a && $k != "" && $k + 0 > m { m = $k + 0 }
		END { print m + 0 }' "$1"
}

# profile BASE: --perf's profile with call graphs, BASE.data, and its
# flat report BASE.txt (on the host: perf report -i BASE.data --vmlinux
# \$AFMALLOC_BUILD/guest/vmlinux, -G for callers).
profile() {
	sleep 30
	perf record -q -a -g -F 499 -o "$1.data" -- sleep "$perf_s" 2>/dev/null &&
		perf report -i "$1.data" -n --no-children --sort sym --stdio -g none 2>/dev/null |
		grep -v '^#' | grep -v '^$' | head -n 80 > "$1.txt"
}

# afm_row FILE ROW N: field N of row ROW of an afmalloc debugfs table.
afm_row() { awk -v k="$2" -v f="$3" '$1 == k { print $f }' "$1"; }
# compacted_agree DEV WHAT: (--check, zram, afmalloc/zspage) zram's
# pages_compacted (mm_stat field 7) must be every page the pool's
# compaction gave back, the debugfs "compact" row's count (field 5), which
# includes the store's own runs under churn (automatic runs and shrinker
# scans, the "auto" row's fields 4 and 5), as zsmalloc's includes its
# shrinker's. Both only grow and a run may end between the reads: read
# until they agree. Prints the store's own share.
compacted_agree() {
	local dev=$1 a=$2 cls=$dbg/afmalloc/$1/classes tries=50 m1 c m2
	[ -r "$cls" ] || die "$a: no $cls"
	while :; do
		read -r _ _ _ _ _ _ m1 _ < /sys/block/"$dev"/mm_stat
		c=$(afm_row "$cls" compact 5)
		read -r _ _ _ _ _ _ m2 _ < /sys/block/"$dev"/mm_stat
		[ "$m1" = "$c" ] && [ "$c" = "$m2" ] && break
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] ||
			die "$a: zram's pages_compacted ($m1, then $m2) is not the $c pages the pool's compaction gave back"
		sleep 0.1
	done
	echo "$c $(( $(afm_row "$cls" auto 4) + $(afm_row "$cls" auto 5) ))"
}

# one RUN POS ALLOC
one() {
	local r=$1 pos=$2 a=$3 dev c=$cg/churn-$$-$1-$2 slug=${3//\//-} log spid rc=0 t0 n0 cc
	local b
	b=$(afm_base "$a")
	sync; echo 3 > /proc/sys/vm/drop_caches
	[ -w /proc/sys/vm/compact_memory ] && echo 1 > /proc/sys/vm/compact_memory
	afm_set_params "$a"
	if [ "$target" = zram ]; then
		dev=$(zram_new "$b" "$comp" $((2 * mb))M)
		cur_dev=$dev
		note "run $r/$pos $a: /dev/$dev, allocator $(cat /sys/block/"$dev"/allocator), comp_algorithm $(cat /sys/block/"$dev"/comp_algorithm)"
	else
		wait_until 30 no_afm_zswap_pool || die "an old afmalloc zswap pool is still there: $(ls $dbg/afmalloc)"
		dev=$(zram_new zsmalloc lz4 $((2 * mb))M)
		cur_dev=$dev
		echo "$comp" > $zs/compressor || die "zswap: compressor '$comp' refused"
		echo 100 > $zs/max_pool_percent
		echo Y > $zs/shrinker_enabled
		case "$b" in
		afmalloc/*)
			echo "${b#afmalloc/}" > "$AFM_PAR/zswap_store" ||
				die "afmalloc.zswap_store=${b#afmalloc/} refused"
			set_zpool afmalloc || die "cannot switch zswap.zpool to afmalloc" ;;
		*) set_zpool zsmalloc || die "cannot switch zswap.zpool to zsmalloc" ;;
		esac
		echo 1 > $zs/enabled
		note "run $r/$pos $a: zswap zpool=$(cat $zs/zpool) compressor=$(cat $zs/compressor)" \
			"shrinker=$(cat $zs/shrinker_enabled) afmalloc pools: $(find $dbg/afmalloc -mindepth 1 -maxdepth 1 -printf '%f ')" \
			"in front of /dev/$dev (zsmalloc, lz4)"
	fi
	mkdir "$c" || die "cannot create the cgroup $c"
	cur_cg=$c
	echo "$((limit + (mb << 20) / 4))" > "$c/memory.max"
	echo "$limit" > "$c/memory.high"
	log=$out/churn-$r-$slug.log
	n0=$(nlines "$samples")
	$py "$sampler" --target "$target" --alloc "$a" --dev "$dev" --cgroup "$c" \
		--progress "$out/.progress-$r-$slug.csv" --out "$samples" --run "$r" --pos "$pos" \
		--comp "$comp" &
	spid=$!
	cur_spid=$spid
	# The workload starts once the sampler has its first reading (the
	# baseline of its counters); python starts slowly under TCG.
	wait_until 120 sampled "$n0" || die "the sampler did not start (status of $spid)"
	t0=$SECONDS
	[ "$perf_s" = 0 ] || profile "$out/perf-$r-$slug" &
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$c" \
		"$bin" "${pool_args[@]}" "${churn_args[@]}" --out "$out/.progress-$r-$slug.csv" > "$log" 2>&1 || rc=$?
	kill -TERM $spid 2>/dev/null || true
	wait $spid || note "sampler exited with status $?"
	cur_spid=''
	sed 's/^/  /' "$log"
	[ -s "$progress" ] || { printf 'run,pos,target,alloc,comp,'; head -n 1 "$out/.progress-$r-$slug.csv"; } > "$progress"
	tail -n +2 "$out/.progress-$r-$slug.csv" | sed "s|^|$r,$pos,$target,$a,$comp,|" >> "$progress"
	rm -f "$out/.progress-$r-$slug.csv"
	# churn's emulator check (see churn.c): the machine, not the software.
	if grep -q 'EMULATOR FAULT' "$log"; then
		note "run $r $a: the CPU emulator's state was corrupted during this run" \
			"(churn: EMULATOR FAULT, $log); any failure below may be the machine's"
	fi
	[ $rc = 0 ] || die "run $r $a: the workload failed (status $rc; $log, dmesg below)"
	if [ "$target" = zswap ]; then
		swapoff /dev/"$dev" || die "swapoff /dev/$dev"
		set_zpool zsmalloc || die "cannot switch zswap back to zsmalloc"
		echo 0 > $zs/enabled
		wait_until 30 no_afm_zswap_pool || die "the drained afmalloc zswap pool was not destroyed"
	fi
	if [ "$check" = 1 ] && [ "$target" = zram ] && [ "$b" = afmalloc/zspage ]; then
		cc=$(compacted_agree "$dev" "run $r $a")
		note "run $r $a: zram's pages_compacted is the pool's count of pages its compaction gave back," \
			"${cc% *}, of them by its own runs ${cc#* }"
	fi
	note "run $r/$pos $a: workload and sampler ended, removing /dev/$dev and the cgroup"
	zram_del "$dev"
	cur_dev=''
	wait_until 30 rm_cgroup "$c" || die "cannot remove the cgroup $c"
	cur_cg=''
	afm_restore_params
	note "run $r/$pos $a: done in $((SECONDS - t0)) s"
	[ "$check" = 1 ] || return 0

	# The short variant's assertions, from the samples of this run.
	local so si stored objs
	stored=$(peak "$samples" "$r" "$a" compr_bytes)
	if [ "$target" = zram ]; then
		so=$(peak "$samples" "$r" "$a" swap_out) si=$(peak "$samples" "$r" "$a" swap_in)
	else
		so=$(peak "$samples" "$r" "$a" zswpout) si=$(peak "$samples" "$r" "$a" zswpin)
	fi
	[ "$so" -gt 0 ] || die "run $r $a: nothing was swapped out (check the cgroup limit)"
	[ "$si" -gt 0 ] || die "run $r $a: nothing was swapped in"
	[ "$stored" -gt 0 ] || die "run $r $a: $target never stored compressed data"
	if [ "$b" != zsmalloc ]; then
		objs=$(peak "$samples" "$r" "$a" afm_objects)
		[ "$objs" -gt 0 ] || die "run $r $a: afmalloc never held an object (pool not used?)"
	else
		objs=-
	fi
	note "run $r $a: check ok: swap-outs $so, swap-ins $si, peak compressed $stored bytes, peak afmalloc objects $objs"
}

# run_order R: the allocators of run R, in order, into seq.
run_order() {
	local k
	seq=("${alist[@]}")
	if { [ "$order" = reverse ] && [ $(($1 % 2)) = 1 ]; } ||
	   { [ "$order" = forward ] && [ $(($1 % 2)) = 0 ]; }; then
		seq=()
		for ((k = ${#alist[@]} - 1; k >= 0; k--)); do seq+=("${alist[k]}"); done
	fi
}

# warm: --warmup's runs (run 0), into DIR/warmup/ (see the header).
warm() {
	local k keep_out=$out keep_check=$check keep_perf=$perf_s
	local keep_args=("${churn_args[@]}")
	out=$keep_out/warmup samples=$keep_out/warmup/samples.csv progress=$keep_out/warmup/progress.csv
	check=0 perf_s=0
	churn_args+=(--churn "$warmup" --exit 0 --switch 0 --rest 0 --no-verify)
	mkdir -p "$out"
	run_order 1
	for ((k = 0; k < ${#seq[@]}; k++)); do
		note "warm-up $((k + 1))/${#seq[@]}: ${seq[k]}, the fill and $warmup s of churn (not reported; $out)"
		one 0 $((k + 1)) "${seq[k]}"
	done
	out=$keep_out samples=$keep_out/samples.csv progress=$keep_out/progress.csv
	check=$keep_check perf_s=$keep_perf
	churn_args=("${keep_args[@]}")
}
[ "$warmup" = 0 ] || warm

for ((r = 1; r <= runs; r++)); do
	run_order "$r"
	for ((k = 0; k < ${#seq[@]}; k++)); do
		one "$r" $((k + 1)) "${seq[k]}"
	done
done
note "all $runs run(s) done; counting the rows of $samples and $progress"
note "$(($(wc -l < "$samples") - 1)) samples in $samples, $(($(wc -l < "$progress") - 1)) workload rows in $progress"
