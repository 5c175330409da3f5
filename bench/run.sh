#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark driver: builds the guest kernel, makes the dataset, boots ONE
# guest and runs the untar/remove workload for every allocator in that boot
# on the same data, then prints the markdown report.
#   bench/run.sh [--dataset quick|full] [--rounds N] [--alloc LIST]
#                [--comp lz4|zstd] [--memory SIZE] [--out DIR] [--append ARGS]
#                [--no-highalloc]
# ARGS: extra guest kernel arguments (e.g. afmalloc module parameters).
# Results: DIR (default $AFMALLOC_CACHE/results/<dataset>-<date>) gets
# steps.csv, buddyinfo.csv, hugetlb.csv, meta.json, report.md, overhead.png
# and the guest log; with the Highalloc-Stress test (seed 000, on unless
# --no-highalloc: afm_highalloc.ko from bench/build-modules.sh, guest booted
# with page_owner=on for /proc/pagetypeinfo's mixed-block counts) also
# highalloc.csv, highalloc_summary.csv, pagetypeinfo.csv and frag.png.
. "$(dirname "$0")/../scripts/common.sh"

usage() {
	echo "usage: $0 [--dataset quick|full] [--rounds N] [--alloc LIST] [--comp lz4|zstd] [--memory SIZE] [--out DIR] [--append ARGS] [--no-highalloc]"
}
dataset=quick rounds=1 allocs=zsmalloc comp=lz4 memory= out= append= highalloc=1
while [ $# -gt 0 ]; do
	case "$1" in
	--dataset) dataset=${2:?--dataset needs quick or full}; shift ;;
	--rounds) rounds=${2:?--rounds needs a number}; shift ;;
	--alloc) allocs=${2:?--alloc needs a list}; shift ;;
	--comp) comp=${2:?--comp needs lz4 or zstd}; shift ;;
	--memory) memory=${2:?--memory needs a size}; shift ;;
	--out) out=${2:?--out needs a folder}; shift ;;
	--append) append=${2:?--append needs kernel arguments}; shift ;;
	--no-highalloc) highalloc=0 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
case "$dataset" in quick|full) ;; *) die "unknown dataset '$dataset' (want quick or full)" ;; esac
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number, not '$rounds'"
case "$comp" in lz4|zstd) ;; *) die "--comp must be lz4 or zstd, not '$comp'" ;; esac
IFS=, read -r -a alist <<< "$allocs"
for a in "${alist[@]}"; do
	case "${a%+compact}" in zsmalloc|afmalloc/slab|afmalloc/zspage) ;;
	*) die "unknown allocator '$a' (known: zsmalloc, afmalloc/slab, afmalloc/zspage, each optionally +compact)" ;;
	esac
done
[ -n "$memory" ] || { [ "$dataset" = full ] && memory=4G || memory=2G; }
need_root "the benchmark (it boots a VM)"

"$AFMALLOC_TOP/scripts/setup.sh"
kdir=$("$AFMALLOC_TOP/scripts/build-guest.sh")
boot_args=slab_nomerge
highalloc_args=()
if [ "$highalloc" = 1 ]; then
	kodir=$("$AFMALLOC_TOP/bench/build-modules.sh" --kdir "$kdir")
	highalloc_args=(--highalloc-ko "$kodir/afm_highalloc.ko")
	boot_args+=" page_owner=on"
fi
boot_args+="${append:+ $append}"
tar=$("$AFMALLOC_TOP/bench/dataset.sh" "$dataset")
[ -n "$out" ] || out=$AFMALLOC_CACHE/results/$dataset-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "$out/steps.csv" "$out/buddyinfo.csv" "$out/hugetlb.csv" "$out/debugfs" \
	"$out/highalloc.csv" "$out/highalloc_summary.csv" "$out/pagetypeinfo.csv" "$out/frag.png"

log "running untar/remove ($dataset, $rounds round(s), $comp) for: $allocs"
set +e
"$AFMALLOC_TOP/scripts/vm-run.sh" --kernel "$kdir" --memory "$memory" --cpus 2 \
	--append "$boot_args" --rwdir "$out" --timeout 14400 \
	"$AFMALLOC_TOP/bench/untar-remove.sh" --dataset "$tar" --out "$out" \
	--alloc "$allocs" --rounds "$rounds" --comp "$comp" "${highalloc_args[@]}" 2>&1 |
	tee "$out/guest.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 0 ] || die "the benchmark failed in the guest (status $rc, log $out/guest.log)"

accel=$(sed -n 's/.*accelerator: \([a-z]*\).*/\1/p' "$out/guest.log" | head -n 1)
cat > "$out/meta.json" <<JSON
{
  "kernel": "$(cat "$kdir/include/config/kernel.release")",
  "config_sha256": "$(sha256sum "$kdir/.config" | cut -c1-16)",
  "dataset": "$dataset ($(basename "$tar"), sha256 $(sha256sum "$tar" | cut -c1-16))",
  "rounds": $rounds,
  "comp": "$comp",
  "allocators": "$allocs",
  "accelerator": "${accel:-unknown}",
  "guest_memory": "$memory",
  "guest_cpus": 2,
  "boot_args": "$boot_args",
  "highalloc": $([ "$highalloc" = 1 ] && echo true || echo false),
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "runs": 1,
  "command": "make bench DATASET=$dataset ROUNDS=$rounds ALLOC=$allocs COMP=$comp${append:+ BOOT_ARGS='$append'}$([ "$highalloc" = 1 ] || echo " (bench/run.sh --no-highalloc)")"
}
JSON
python3 "$AFMALLOC_TOP/bench/report.py" "$out" --out "$out/report.md"
"$AFMALLOC_VENV/bin/python3" "$AFMALLOC_TOP/bench/plot.py" "$out" --out "$out/overhead.png" >/dev/null
if [ -s "$out/highalloc.csv" ]; then
	"$AFMALLOC_VENV/bin/python3" "$AFMALLOC_TOP/bench/plot_frag.py" "$out" --out "$out/frag.png" >/dev/null
fi
log "results in $out"
