#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Short swap-churn test (issue 15), run inside a throw-away guest by
# scripts/vm-run.sh (boot with slab_nomerge):
#
#   churn-short.sh --bin CHURN [--out DIR] [--zram LIST] [--zswap LIST]
#                  [--hotplug]
#
# CHURN is bench/churn/churn.c built on the host (bench/churn/run.sh
# --print-bin). Runs bench/churn/churn-guest.sh --check with a small working
# set and a few seconds per phase (under a minute of workload per allocator
# under TCG) for zram (default allocators afmalloc/zspage,zsmalloc) and
# then zswap (same default): every page read back is checked against its
# checksum (any mismatch fails), and each run must have swapped out and in
# and the allocator under test must have stored data (and, for afmalloc,
# objects in its pool; on zram, afmalloc/zspage's count of the pages its
# compaction gave back, its automatic runs under churn included, must be
# zram's pages_compacted). With afmalloc in a LIST, afmalloc's workqueue is
# confined to CPU 0 through its sysfs cpumask for the runs (it must have
# one). With --hotplug, every CPU but CPU 0 is taken offline and back
# online, one after the other, over and over while the workload runs (a
# phone parks cores, a server loses them): objects stay in the shards of
# CPUs that are gone, whose frees other CPUs leave to those shards and
# whose zspages compaction still takes; the test fails unless every CPU
# went offline and came back at least once while the workload ran, and
# every CPU is online again at its end. An empty LIST skips that target. DIR (default a new
# folder under /tmp in the guest) gets the samples, the workload rows and
# logs; pass a host folder with vm-run.sh --rwdir to keep them.
set -euo pipefail

fail() { echo "churn-short: FAIL: $*" >&2; exit 1; }
bin='' out='' zram=afmalloc/zspage,zsmalloc zswap=afmalloc/zspage,zsmalloc hotplug=0
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) bin=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--zram) zram=${2?}; shift ;;
	--zswap) zswap=${2?}; shift ;;
	--hotplug) hotplug=1 ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done
[ -x "$bin" ] || fail "workload binary '$bin' missing (--bin)"
[ -n "$zram$zswap" ] || fail "nothing to run: --zram and --zswap both empty"
[ -n "$out" ] || out=$(mktemp -d /tmp/churn-short.XXXXXX)
mkdir -p "$out"
guest=$(dirname "$(realpath "$0")")/../../bench/churn/churn-guest.sh
[ -f "$guest" ] || fail "no $guest"

# 36 MiB in 3 processes under a 12 MiB cgroup: every movement of pages
# (fill, Zipf churn with rewrites, an exit and refill, app switching, the
# final read-back) in 30 to 60 s of workload under TCG.
args=(--mb 36 --procs 3 --threads 1 --pool-mb 3 --churn 5 --exit 2 --switch 5
      --switch-slot 1.5 --rest 2)
# afmalloc's workqueue (compaction, deferred frees, table growth) is
# WQ_SYSFS, so that a phone can keep that work on its little cores: the
# runs below have it confined to CPU 0 (put back at exit), and must pass
# all the same. A kernel with afmalloc must show the workqueue's files.
wq=/sys/devices/virtual/workqueue/afmalloc wq_mask=
case "$zram,$zswap" in
*afmalloc*)
	[ -d /sys/module/afmalloc ] || fail "afmalloc asked for but /sys/module/afmalloc missing"
	[ -w $wq/cpumask ] || fail "no $wq/cpumask: afmalloc's workqueue is not WQ_SYSFS"
	wq_mask=$(cat $wq/cpumask)
	trap 'echo "$wq_mask" > $wq/cpumask' EXIT
	echo 1 > $wq/cpumask || fail "$wq/cpumask refused CPU 0's mask"
	[ $((16#$(tr -d ',' < $wq/cpumask))) = 1 ] || fail "$wq/cpumask reads $(cat $wq/cpumask), not 1"
	echo "churn-short: afmalloc's workqueue confined to CPU 0 (cpumask was $wq_mask)" ;;
esac
# --hotplug: the CPUs that can go offline (all but CPU 0 here), each
# taken offline and brought back in turn until the file $stop appears
# (looked for before each CPU); prints the rounds in which every one of
# them went and came back before it appeared.
cpus=() hp_pid='' stop=$out/.hotplug-stop
if [ "$hotplug" = 1 ]; then
	for f in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[ -w "$f" ] && [ "$f" != /sys/devices/system/cpu/cpu0/online ] && cpus+=("$f")
	done
	[ ${#cpus[@]} -gt 0 ] || fail "--hotplug: no CPU can go offline here ($(nproc) online; CONFIG_HOTPLUG_CPU?)"
	hotplug_loop() {
		local n=0 f
		while :; do
			for f in "${cpus[@]}"; do
				[ ! -e "$stop" ] || break 2
				echo 0 > "$f" || { echo "churn-short: $f: offline refused"; return 1; }
				sleep 0.3
				echo 1 > "$f" || { echo "churn-short: $f: online refused"; return 1; }
				sleep 0.3
			done
			n=$((n + 1))
		done
		echo "$n"
	}
	rm -f "$stop"
	hotplug_loop > "$out/.hotplug" 2>&1 &
	hp_pid=$!
	trap 'touch "$stop"; [ -z "$hp_pid" ] || wait "$hp_pid" || true
		for f in "${cpus[@]}"; do echo 1 > "$f" 2>/dev/null || true; done
		[ -z "$wq_mask" ] || echo "$wq_mask" > $wq/cpumask || true' EXIT
	echo "churn-short: taking ${cpus[*]%/online} offline and back in turn while the workload runs"
fi
for t in zram zswap; do
	[ -n "${!t}" ] || continue
	bash "$guest" --bin "$bin" --out "$out/$t" --target "$t" --alloc "${!t}" --comp lz4 \
		--stall 300 --check -- "${args[@]}" || fail "$t: churn-guest.sh failed (status $?)"
done
if [ -n "$hp_pid" ]; then
	touch "$stop"
	rc=0
	wait "$hp_pid" || rc=$?
	hp_pid=''
	rounds=$(tail -n 1 "$out/.hotplug")
	[ "$rc" = 0 ] || fail "--hotplug: $rounds"
	for f in "${cpus[@]}"; do
		[ "$(cat "$f")" = 1 ] || fail "--hotplug: $f reads $(cat "$f") at the end"
	done
	[ "$rounds" -gt 0 ] ||
		fail "--hotplug: the workload ended before every CPU had gone offline and back once"
	rm -f "$stop"
	echo "churn-short: every CPU but CPU 0 went offline and came back $rounds time(s) while the workload ran"
fi
# most COLUMN: the largest value of an afmalloc column in any sample.
most() {
	awk -F, -v k="$1" 'FNR == 1 { c = 0; for (i = 1; i <= NF; i++) if ($i == k) c = i; next }
		c && $c + 0 > m { m = $c + 0 } END { print m + 0 }' "$out"/*/samples.csv 2>/dev/null
}
if [ -n "$wq_mask" ]; then
	# The work ran with the mask narrowed: the most automatic compaction
	# runs a sample of either target counted (reported, not required: a run
	# this short may not pass the trigger).
	runs=$(most afm_auto_runs) shards=$(most afm_shards_active)
	echo "churn-short: afmalloc's automatic compaction runs with the workqueue on CPU 0: ${runs:-0};" \
		"shards allocation took: ${shards:-0}"
fi
echo "churn-short: PASS (zram: ${zram:-skipped}; zswap: ${zswap:-skipped}; results in $out)"
