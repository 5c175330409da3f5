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

# refuses N MESSAGE ARGS...: arm64.sh ARGS fails, says MESSAGE, makes no
# results folder.
refuses() {
	local n=$1 msg=$2 rc=0
	shift 2
	timeout 120 "$top/bench/speed/arm64.sh" "$@" --out "$t/out" > "$t/$n.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] || fail "arm64.sh $* succeeded"
	grep -q -- "$msg" "$t/$n.log" ||
		fail "arm64.sh $*: no clear error (got: $(head -c 300 "$t/$n.log"))"
	[ ! -e "$t/out" ] || fail "arm64.sh $* made its results folder"
	ok "arm64.sh refuses $*"
}

refuses 1 "--pages must be 16K or 4K, not '8K'" --pages 8K
refuses 2 "--runs must be a positive number, not '0'" --runs 0
refuses 3 "--profile must be alloc-map or read-map, not 'free'" --profile free
