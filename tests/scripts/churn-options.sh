#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of the churn benchmark's option checks (no VM, no build):
#
#   tests/scripts/churn-options.sh
#
# 1. bench/churn/run.sh refuses a --warmup that is not a whole number of
#    seconds, naming it, before it sets anything up.
# 2. bench/churn/churn-guest.sh refuses one too, before it touches --out.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# 1.
rc=0
"$top/bench/churn/run.sh" --warmup x --out "$t/out" > "$t/run.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "run.sh --warmup x succeeded"
grep -q -- "--warmup must be a whole number, not 'x'" "$t/run.log" ||
	fail "run.sh --warmup x: no clear error (got: $(head -c 300 "$t/run.log"))"
[ ! -e "$t/out" ] || fail "run.sh --warmup x made its results folder"
ok "run.sh refuses --warmup x"

# 2.
rc=0
"$top/bench/churn/churn-guest.sh" --bin /bin/true --out "$t/gout" --warmup -3 -- --mb 8 \
	> "$t/guest.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "churn-guest.sh --warmup -3 succeeded"
grep -q -- "--warmup must be a number of seconds" "$t/guest.log" ||
	fail "churn-guest.sh --warmup -3: no clear error (got: $(head -c 300 "$t/guest.log"))"
[ ! -e "$t/gout" ] || fail "churn-guest.sh --warmup -3 made its output folder"
ok "churn-guest.sh refuses --warmup -3"
