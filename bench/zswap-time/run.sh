#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# zswap wall time per allocator (issue #7 item 4c): boots ONE guest and
# times the zswap test's checksummed workload (tests/vm/zswap-test.sh, built
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
# host is shared), zswap-time.md and the guest log.
. "$(dirname "$0")/../../scripts/common.sh"

usage() {
	echo "usage: $0 [--out DIR] [--runs N] [--mb N] [--limit-mb N] [--passes N] [--stock] [--memory SIZE] [--cpus N]"
}
out= runs=4 mb=128 limit_mb=32 passes=2 stock=0 memory=2G cpus=2
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
for v in runs mb limit_mb passes cpus; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive number"
done
[ "$mb" -gt "$limit_mb" ] || die "--mb ($mb) must exceed --limit-mb ($limit_mb), or nothing is swapped"
need_root "the zswap timing (it boots a VM)"

"$AFMALLOC_TOP/scripts/setup.sh"
load=$("$AFMALLOC_TOP/tests/vm/zswap-stock.sh" --print-load)
[ -x "$load" ] || die "no workload binary ($load)"
if [ "$stock" = 1 ]; then
	vars=$("$AFMALLOC_TOP/scripts/stock-kernel.sh")
	eval "$vars"
	kernel=$STOCK_KERNEL kver=$STOCK_KVER config=/boot/config-$STOCK_KVER
	kargs=(--module "$STOCK_MODULE")
	kdesc="Debian $STOCK_KVER, afmalloc.ko (sha256 $(sha256sum "$STOCK_MODULE" | cut -c1-16))"
else
	kdir=$("$AFMALLOC_TOP/scripts/build-guest.sh")
	kernel=$kdir kver=$(cat "$kdir/include/config/kernel.release") config=$kdir/.config
	kargs=(--builtin)
	kdesc="project guest kernel, afmalloc built in"
fi
[ -n "$out" ] || out=$AFMALLOC_CACHE/results/zswap-time-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out/zswap-time.csv" "$out/zswap-time.md" "$out/meta.json"

# Worst case under TCG: boot plus 2 x runs workloads of up to 1200 s.
timeout_s=$((600 + 2 * runs * 1200))
load_start=$(cut -d' ' -f1 /proc/loadavg)
log "zswap-time: $runs run(s), $mb MiB in a $limit_mb MiB cgroup, $passes pass(es), $kdesc (host load $load_start)"
t0=$SECONDS
set +e
"$AFMALLOC_TOP/scripts/vm-run.sh" --kernel "$kernel" --memory "$memory" --cpus "$cpus" \
	--rwdir "$out" --timeout "$timeout_s" \
	"$AFMALLOC_TOP/bench/zswap-time/guest.sh" --load "$load" --out "$out" "${kargs[@]}" \
	--runs "$runs" --mb "$mb" --limit-mb "$limit_mb" --passes "$passes" 2>&1 |
	tee "$out/guest.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || die "the zswap timing failed in the guest (status $rc, log $out/guest.log)"
[ "$(wc -l < "$out/zswap-time.csv")" -gt 1 ] || die "no rows in $out/zswap-time.csv after the guest run"
load_end=$(cut -d' ' -f1 /proc/loadavg)

accel=$(guest_accel "$out/guest.log")
cmd="make bench-zswap-time"
[ ${#opts[@]} -eq 0 ] || cmd="bench/zswap-time/run.sh ${opts[*]}"
{ cat <<JSON
{
  "kernel": "$kver",
  "kernel_kind": "$kdesc",
  "config_sha256": "$(sha256sum "$config" 2>/dev/null | cut -c1-16)",
  "accelerator": "$accel",
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "runs": $runs,
  "working_set_mb": $mb,
  "memory_max_mb": $limit_mb,
  "passes": $passes,
  "workload": "zswap-load from tests/vm/zswap-test.sh (sha256 $(sha256sum "$load" | cut -c1-16))",
  "zswap": "lz4, max_pool_percent 100, in front of zram swap (zsmalloc, lz4)",
JSON
  meta_host_fields "$load_start" "$load_end" "$t0"; echo "}"; } > "$out/meta.json"
python3 "$AFMALLOC_TOP/bench/report.py" --kind zswap-time "$out" --out "$out/zswap-time.md"
log "results in $out ($((SECONDS - t0)) s)"
