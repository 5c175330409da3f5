#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of scripts/timed.sh (make check times its steps with it
# and, on failure, ends its output with what the failed steps said):
#
#   tests/scripts/timed.sh [TIMED]
#
# 1. A step's status is its command's, its output is kept in NAME.log and
#    the record gets one row for it.
# 2. --failures names every failed step, its log and the FAIL lines of
#    that log (the last 25), and says nothing of the steps that passed.
# 3. --failures on a record with no failed step prints nothing.
#
# TIMED defaults to the project's scripts/timed.sh.
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
timed=${1:-$top/scripts/timed.sh}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
export AFMALLOC_TIMINGS=$t/check.tsv AFMALLOC_TIMINGS_LOGS=$t/logs

# 1.
"$timed" --begin
"$timed" good bash -c 'echo all fine' > /dev/null
rc=0
"$timed" vm-debug-suite bash -c 'echo "debug-suite: zswap: kernel splat"
	for i in $(seq 1 40); do echo "line $i FAIL"; done
	echo "[afmalloc] first: [ 9.0] WARNING: CPU: 0 PID: 1 at mm/zswap.c:1"
	echo "debug-suite: FAIL: zswap"; exit 3' > /dev/null || rc=$?
[ "$rc" -eq 3 ] || fail "1: a step whose command exits 3: status $rc"
grep -qx 'all fine' "$t/logs/good.log" || fail "1: the step's output is not in its log"
[ "$(grep -c $'^good\t[0-9]*\t0$' "$t/check.tsv")" -eq 1 ] || fail "1: no single row for the good step: $(cat "$t/check.tsv")"
ok "a step's status, log and row"

# 2.
"$timed" --failures > "$t/out"
grep -qF "step vm-debug-suite FAILED (status 3); its output: $t/logs/vm-debug-suite.log" "$t/out" ||
	fail "2: the failed step is not named: $(cat "$t/out")"
grep -q good "$t/out" && fail "2: a step that passed is named: $(cat "$t/out")"
tail -n 1 "$t/out" | grep -qF "debug-suite: FAIL: zswap" || fail "2: the log's last FAIL line is not last: $(tail -n 2 "$t/out")"
grep -qF "[afmalloc] first: [ 9.0] WARNING" "$t/out" || fail "2: the splat's first line is not shown"
[ "$(grep -c '^  ' "$t/out")" -eq 25 ] || fail "2: not the last 25 lines: $(grep -c '^  ' "$t/out")"
ok "--failures names the failed step and ends with its FAIL lines"

# 3.
"$timed" --begin
"$timed" good true
[ -z "$("$timed" --failures)" ] || fail "3: --failures printed something with no failed step"
ok "--failures is silent when every step passed"
