#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of the arm64 guest's option checks (no build, no VM):
#
#   tests/scripts/arm64-options.sh
#
# 1. bench/run.sh refuses an architecture it has no guest for (--arch
#    sparc), --pages without --arch arm64 (x86_64 has 4 KiB pages only)
#    and a page size the arm64 guest is not built with (--pages 64K),
#    each naming it, before it sets anything up or makes its results
#    folder; so does bench/churn/run.sh.
# 2. scripts/build-guest.sh refuses --pages 16K for x86_64 and an unknown
#    --arch before it configures anything.
# 3. scripts/vm-run.sh refuses --accel kvm with --arch arm64 (always
#    emulated here) and an unknown --arch.
#
# A check that is gone would start a build or a boot: each call is stopped
# after 120 s, and fails.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0

# refuses SCRIPT MESSAGE ARGS...: SCRIPT ARGS fails and says MESSAGE, and
# no results folder appears.
refuses() {
	local script=$1 msg=$2 rc=0
	shift 2
	n=$((n + 1))
	timeout 120 "$top/$script" "$@" > "$t/$n.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] || fail "$script $* succeeded"
	grep -qF -- "$msg" "$t/$n.log" ||
		fail "$script $*: no clear error (got: $(head -c 300 "$t/$n.log"))"
	[ ! -e "$t/out" ] || fail "$script $* made its results folder"
	ok "$script refuses $*"
}

refuses bench/run.sh "--arch must be x86_64 or arm64, not 'sparc'" --arch sparc --out "$t/out"
refuses bench/run.sh "--pages is for --arch arm64" --pages 16K --out "$t/out"
refuses bench/run.sh "--pages must be 16K or 4K, not '64K'" --arch arm64 --pages 64K --out "$t/out"
refuses bench/churn/run.sh "--pages is for --arch arm64" --pages 16K --out "$t/out"
refuses bench/churn/run.sh "--pages must be 16K or 4K, not '8K'" --arch arm64 --pages 8K --out "$t/out"
refuses scripts/build-guest.sh "--pages 16K needs --arch arm64" --pages 16K
refuses scripts/build-guest.sh "--arch must be x86_64 or arm64, not 'sparc'" --arch sparc
refuses scripts/vm-run.sh "an arm64 guest on this host is always emulated" \
	--arch arm64 --accel kvm /bin/true
refuses scripts/vm-run.sh "--arch must be x86_64 or arm64, not 'sparc'" --arch sparc /bin/true
