#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of the arm64 speed benchmark's option checks (no build,
# no VM):
#
#   tests/scripts/speed-options.sh
#
# 1. bench/speed/arm64.sh refuses a page size it has no kernel and no size
#    histogram for (--pages 8K), naming it, before it sets anything up.
# 2. It refuses --runs 0 the same way.
# 3. It refuses a --profile operation it cannot profile (--profile free).
#
# A check that is gone would start the build: each call is stopped after
# 120 s, and fails.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# 1.
rc=0
timeout 120 "$top/bench/speed/arm64.sh" --pages 8K --out "$t/out" > "$t/1.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "arm64.sh --pages 8K succeeded"
grep -q -- "--pages must be 16K or 4K, not '8K'" "$t/1.log" ||
	fail "arm64.sh --pages 8K: no clear error (got: $(head -c 300 "$t/1.log"))"
[ ! -e "$t/out" ] || fail "arm64.sh --pages 8K made its results folder"
ok "arm64.sh refuses --pages 8K"

# 2.
rc=0
timeout 120 "$top/bench/speed/arm64.sh" --runs 0 --out "$t/out" > "$t/2.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "arm64.sh --runs 0 succeeded"
grep -q -- "runs" "$t/2.log" ||
	fail "arm64.sh --runs 0: no clear error (got: $(head -c 300 "$t/2.log"))"
[ ! -e "$t/out" ] || fail "arm64.sh --runs 0 made its results folder"
ok "arm64.sh refuses --runs 0"

# 3.
rc=0
timeout 120 "$top/bench/speed/arm64.sh" --profile free --out "$t/out" > "$t/3.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "arm64.sh --profile free succeeded"
grep -q -- "--profile must be alloc-map or read-map, not 'free'" "$t/3.log" ||
	fail "arm64.sh --profile free: no clear error (got: $(head -c 300 "$t/3.log"))"
[ ! -e "$t/out" ] || fail "arm64.sh --profile free made its results folder"
ok "arm64.sh refuses --profile free"
