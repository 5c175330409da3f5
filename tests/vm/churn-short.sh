#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Short swap-churn test (issue 15), run inside a throw-away guest by
# scripts/vm-run.sh (boot with slab_nomerge):
#
#   churn-short.sh --bin CHURN [--out DIR] [--zram LIST] [--zswap LIST]
#
# CHURN is bench/churn/churn.c built on the host (bench/churn/run.sh
# --print-bin). Runs bench/churn/churn-guest.sh --check with a small working
# set and a few seconds per phase (under a minute of workload per allocator
# under TCG) for zram (default allocators afmalloc/zspage,zsmalloc) and
# then zswap (same default): every page read back is checked against its
# checksum (any mismatch fails), and each run must have swapped out and in
# and the allocator under test must have stored data (and, for afmalloc,
# objects in its pool). An empty LIST skips that target. DIR (default a new
# folder under /tmp in the guest) gets the samples, the workload rows and
# logs; pass a host folder with vm-run.sh --rwdir to keep them.
set -euo pipefail

fail() { echo "churn-short: FAIL: $*" >&2; exit 1; }
bin='' out='' zram=afmalloc/zspage,zsmalloc zswap=afmalloc/zspage,zsmalloc
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) bin=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--zram) zram=${2?}; shift ;;
	--zswap) zswap=${2?}; shift ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done
[ -x "$bin" ] || fail "workload binary '$bin' missing (--bin)"
[ -n "$zram$zswap" ] || fail "nothing to run: --zram and --zswap both empty"
[ -n "$out" ] || out=$(mktemp -d /tmp/churn-short.XXXXXX)
guest=$(dirname "$(realpath "$0")")/../../bench/churn/churn-guest.sh
[ -f "$guest" ] || fail "no $guest"

# 36 MiB in 3 processes under a 12 MiB cgroup: every movement of pages
# (fill, Zipf churn with rewrites, an exit and refill, app switching, the
# final read-back) in 30 to 60 s of workload under TCG.
args=(--mb 36 --procs 3 --threads 1 --pool-mb 3 --churn 5 --exit 2 --switch 5
      --switch-slot 1.5 --rest 2)
for t in zram zswap; do
	[ -n "${!t}" ] || continue
	bash "$guest" --bin "$bin" --out "$out/$t" --target "$t" --alloc "${!t}" --comp lz4 \
		--stall 300 --check -- "${args[@]}" || fail "$t: churn-guest.sh failed (status $?)"
done
echo "churn-short: PASS (zram: ${zram:-skipped}; zswap: ${zswap:-skipped}; results in $out)"
