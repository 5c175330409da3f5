#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run a command beside another at the lowest CPU priority, so that it uses
# the CPU time the other leaves idle (make check: the UML KUnit build and
# run beside the debug kernel's build, idle in its serial parts; not beside
# the emulated guests, which lost more to a niced build than it saved):
#
#   scripts/beside.sh LOG BGCMD... -- FGCMD...
#
# Starts BGCMD under `nice -n 19` in its own process group, its output
# (stdout and stderr) in LOG, then runs FGCMD as usual. When FGCMD ends,
# waits for BGCMD and prints LOG, so that the two outputs never
# interleave. Exit status: 1 if either failed (each failure named), else 0.
# An interrupt or a termination of this script stops BGCMD too.
set -uo pipefail

usage() { echo "usage: $0 LOG BGCMD... -- FGCMD..." >&2; exit 2; }
[ $# -ge 4 ] || usage
log=$1
shift
bg=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	bg+=("$1")
	shift
done
[ $# -ge 2 ] && [ ${#bg[@]} -ge 1 ] || usage
shift
mkdir -p "$(dirname "$log")" || exit 1
: > "$log" || exit 1

# setsid: BGCMD leads its own process group (killed whole below); -w: the
# exit status is BGCMD's.
setsid -w nice -n 19 "${bg[@]}" > "$log" 2>&1 < /dev/null &
pid=$!
stop() {
	trap - INT TERM
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "beside: stopped: ${bg[*]}" >&2
	exit 130
}
trap stop INT TERM
echo "beside: started (nice 19, output in $log): ${bg[*]}"

"$@"
frc=$?
echo "beside: waiting for (if still running): ${bg[*]}"
wait "$pid"
brc=$?
trap - INT TERM
echo "beside: ==== output of: ${bg[*]} ===="
cat "$log"
echo "beside: ==== end of that output (exit status $brc) ===="
rc=0
if [ $frc -ne 0 ]; then
	echo "beside: FAILED (exit status $frc): $*" >&2
	rc=1
fi
if [ $brc -ne 0 ]; then
	echo "beside: FAILED (exit status $brc): ${bg[*]}" >&2
	rc=1
fi
exit $rc
