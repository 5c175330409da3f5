#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A host-side profile of QEMU during each run of a churn boot: whether the
# emulator itself (its TLB fills, code-cache lookups, memory helpers) spends
# its time differently beside one allocator than beside another, which a
# profile inside the guest cannot show.
#
#   bench/churn/hostperf.sh DIR [DELAY [SECONDS]]
#
# Start it right after bench/churn/run.sh --out DIR (TCG only; one VM at a
# time). For every run the guest announces in DIR/churn-guest.log ("run N/M
# ALLOC: ..."), it waits DELAY seconds (default 30: past the fill, into the
# churn phase), records the QEMU process with perf for SECONDS (default 40)
# and writes DIR/hostperf-K-ALLOC.txt (K: the run's place in the boot), its
# symbols by share (QEMU's own, its JIT code, the host kernel's). It stops
# when DIR/report.md appears. The profile costs the guest some speed: do not
# use the boot's throughput figures.
set -u
die() { echo "hostperf: $*" >&2; exit 1; }
out=${1:?usage: $0 DIR [DELAY [SECONDS]]}
delay=${2:-30}
secs=${3:-40}
command -v perf > /dev/null || die "no perf on the host (apt-get install linux-perf)"
log=$out/churn-guest.log
pat='churn-guest: run [0-9]*/[0-9]* [^:]*: \(zram\|zswap\)'
seen=0
while [ ! -f "$out/report.md" ]; do
	n=$(grep -c "$pat" "$log" 2> /dev/null)
	n=${n:-0}
	if [ "$n" -gt "$seen" ]; then
		seen=$n
		alloc=$(grep "$pat" "$log" | sed -n "${n}p" |
			sed -E 's|.*run [0-9]+/[0-9]+ ([^:]+):.*|\1|' | tr / -)
		sleep "$delay"
		pid=$(pgrep -f qemu-system-x86_64 | head -1)
		[ -n "$pid" ] || die "no QEMU process"
		perf record -q -F 499 -p "$pid" -o "$out/hostperf-$n-$alloc.data" \
			-- sleep "$secs" > /dev/null 2>&1
		perf report -i "$out/hostperf-$n-$alloc.data" --sort dso,sym --stdio \
			2> /dev/null | grep -v '^#' | grep -v '^$' | head -120 \
			> "$out/hostperf-$n-$alloc.txt"
		rm -f "$out/hostperf-$n-$alloc.data"
		echo "hostperf: run $n ($alloc) recorded at $(date +%T)"
	fi
	sleep 2
done
