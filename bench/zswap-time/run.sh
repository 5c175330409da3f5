#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# zswap wall time per allocator (issue #7 item 4c): boots ONE guest
# (bench/lib/vm-bench.sh) and times the zswap test's checksummed workload (tests/vm/zswap-test.sh, built
# by tests/vm/zswap-stock.sh --print-load) in a memory-limited cgroup with
# zswap.zpool switched at run time between afmalloc and zsmalloc, the order
# alternating per run (bench/zswap-time/guest.sh), then prints the markdown
# table (bench/report.py zswap_time(): medians of the runs, ratio to
# zsmalloc in the same run).
#   bench/zswap-time/run.sh [--out DIR] [--runs N] [--mb N] [--limit-mb N]
#                           [--passes N] [--stock] [--memory SIZE] [--cpus N]
# Kernel: the project's guest kernel, afmalloc built in (default), or with
# --stock Debian's unmodified 6.12 kernel with afmalloc.ko
# (scripts/stock-kernel.sh). Results: DIR (default
# $AFMALLOC_CACHE/results/zswap-time-<date>) gets zswap-time.csv,
# meta.json (with the host's load average at the start and the end: the
# host is shared), zswap-time.md, the guest's output (guest.log) and
# console (console.log).
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

usage() {
	echo "usage: $0 [--out DIR] [--runs N] [--mb N] [--limit-mb N] [--passes N] [--stock] [--memory SIZE] [--cpus N]"
}
out='' runs=4 mb=128 limit_mb=32 passes=2 stock=0 memory=2G cpus=2
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?--out needs a folder}; shift ;;
	--runs) runs=${2:?--runs needs a number}; opts+=("$1 $2"); shift ;;
	--mb) mb=${2:?--mb needs MiB}; opts+=("$1 $2"); shift ;;
	--limit-mb) limit_mb=${2:?--limit-mb needs MiB}; opts+=("$1 $2"); shift ;;
	--passes) passes=${2:?--passes needs a number}; opts+=("$1 $2"); shift ;;
	--stock) stock=1; opts+=("$1") ;;
	--memory) memory=${2:?--memory needs a size}; opts+=("$1 $2"); shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; opts+=("$1 $2"); shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
vmb_positive runs mb limit_mb passes cpus
[ "$mb" -gt "$limit_mb" ] || die "--mb ($mb) must exceed --limit-mb ($limit_mb), or nothing is swapped"

vmb_setup "the zswap timing"
load=$("$AFMALLOC_TOP/tests/vm/zswap-stock.sh" --print-load)
[ -x "$load" ] || die "no workload binary ($load)"
if [ "$stock" = 1 ]; then
	vmb_stock_kernel
	kver=$STOCK_KVER config=/boot/config-$STOCK_KVER
	kargs=(--module "$STOCK_MODULE")
	kdesc="Debian $STOCK_KVER, afmalloc.ko (sha256 $(sha256sum "$STOCK_MODULE" | cut -c1-16))"
	# afmalloc.ko is built from this checkout (scripts/stock-kernel.sh).
	source=$(git -C "$AFMALLOC_TOP" describe --always --dirty 2>/dev/null || echo unknown)
else
	vmb_kernel ''
	kver=$(cat "$kernel/include/config/kernel.release") config=$kernel/.config
	kargs=(--builtin)
	kdesc="project guest kernel, afmalloc built in"
	source=$(cat "$kernel/.afmalloc-source" 2>/dev/null || echo unknown)
fi
vmb_out zswap-time zswap-time.csv zswap-time.md meta.json

# Worst case under TCG: boot plus 2 x runs workloads of up to 1200 s.
timeout_s=$((600 + 2 * runs * 1200))
vmb_boot "$timeout_s" "zswap-time: $runs run(s), $mb MiB in a $limit_mb MiB cgroup, $passes pass(es), $kdesc" \
	-- "$AFMALLOC_TOP/bench/zswap-time/guest.sh" --load "$load" --out "$out" "${kargs[@]}" \
	--runs "$runs" --mb "$mb" --limit-mb "$limit_mb" --passes "$passes"
vmb_need_rows "$out/zswap-time.csv"

vmb_command "make bench-zswap-time" "${opts[@]}"
# Its own kernel lines (no KDIR for vmb_meta): the stock kernel has no
# build dir. "source": the commit afmalloc was built from.
vmb_meta '' <<JSON
  "kernel": "$kver",
  "source": "$source",
  "kernel_kind": "$kdesc",
  "config_sha256": "$(sha256sum "$config" 2>/dev/null | cut -c1-16)",
  "accelerator": "$(guest_accel "$out/guest.log")",
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "runs": $runs,
  "working_set_mb": $mb,
  "memory_max_mb": $limit_mb,
  "passes": $passes,
  "workload": "zswap-load from tests/vm/zswap-test.sh (sha256 $(sha256sum "$load" | cut -c1-16))",
  "zswap": "lz4, max_pool_percent 100, in front of zram swap (zsmalloc, lz4)",
JSON
python3 "$AFMALLOC_TOP/bench/report.py" --kind zswap-time "$out" --out "$out/zswap-time.md"
vmb_done
