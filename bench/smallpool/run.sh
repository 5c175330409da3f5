#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A small zram device written from every CPU of a many-CPU guest (issue
# 16: design for a 128-CPU server and for a phone): builds the lean guest
# kernel, boots ONE guest with --cpus vCPUs (default 8) and runs
# bench/smallpool/guest.sh there: zsmalloc, afmalloc/zspage and
# afmalloc/zspage with every shard active from the start
# (afmalloc.zspage_shards_grow=N), each on a new device written by every
# CPU in turn (seq) and by all at once (par), every page each allocator
# holds counted (metadata slab caches included), every byte read back.
#   bench/smallpool/run.sh [--out DIR] [--cpus N] [--kib N] [--rounds N]
#                          [--memory SIZE]
# Data: the churn workload's pool of real data (bench/churn/run.sh
# --print-bin builds it: text, code and compressed files from the host).
# Results: DIR (default $AFMALLOC_CACHE/results/smallpool-<date>) gets
# smallpool.csv, summary.md (bench/report.py --kind smallpool), meta.json,
# guest.log and console.log.
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

usage() {
	sed -n '11,12p' "$0" | sed 's/^# \{0,1\}//'
}
out='' cpus=8 kib=256 rounds=3 memory=1G
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?--out needs a folder}; shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; opts+=("$1 $2"); shift ;;
	--kib) kib=${2:?--kib needs a number}; opts+=("$1 $2"); shift ;;
	--rounds) rounds=${2:?--rounds needs a number}; opts+=("$1 $2"); shift ;;
	--memory) memory=${2:?--memory needs a size}; opts+=("$1 $2"); shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
vmb_positive cpus kib rounds
[ $((kib % 4)) -eq 0 ] || die "--kib must be a multiple of 4 (whole pages)"

vmb_setup "the small-pool benchmark"
data=$(dirname "$("$AFMALLOC_TOP/bench/churn/run.sh" --print-bin)")/pool.bin
[ -f "$data" ] || die "no data pool $data after bench/churn/run.sh --print-bin"
[ "$(stat -c %s "$data")" -ge $((cpus * kib * 1024)) ] ||
	die "$data holds less than --cpus x --kib ($cpus x $kib KiB)"
vmb_kernel ''
vmb_out smallpool smallpool.csv summary.md meta.json

boot_args="slab_nomerge"
vmb_boot $((600 + rounds * 300)) "small pool: $cpus vCPUs x $kib KiB, $rounds round(s)" \
	--append "$boot_args" -- "$AFMALLOC_TOP/bench/smallpool/guest.sh" --out "$out" \
	--data "$data" --kib "$kib" --rounds "$rounds"
vmb_need_rows "$out/smallpool.csv"

vmb_command "bench/smallpool/run.sh" "${opts[@]}"
vmb_meta "$kernel" <<JSON
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "boot_args": "$boot_args",
  "rounds": $rounds,
  "kib_per_cpu": $kib,
  "comp": "lz4",
  "data": "churn pool.bin (sha256 $(sha256sum "$data" | cut -c1-16))",
JSON
python3 "$AFMALLOC_TOP/bench/report.py" --kind smallpool "$out" --out "$out/summary.md"
vmb_done
