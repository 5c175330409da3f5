#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark driver: builds the guest kernel, makes the dataset, boots ONE
# guest (bench/lib/vm-bench.sh) and runs the untar/remove workload
# (bench/untar-remove.sh) for every allocator in that boot on the same
# data, then prints the markdown report.
#   bench/run.sh [--dataset quick|full] [--rounds N] [--alloc LIST]
#                [--comp lz4|zstd] [--memory SIZE] [--out DIR] [--append ARGS]
#                [--no-highalloc] [--runs N] [--arch arm64 [--pages 16K|4K]]
# ARGS: extra guest kernel arguments (e.g. afmalloc module parameters for
# every pool of the boot). LIST: allocators, each optionally +compact (zram
# compact after every step) and, for afmalloc, +NAME=VALUE module
# parameters for its pool alone (afmalloc/zspage+zspage_align=16), so that
# a setting runs beside the default and zsmalloc in one boot
# (bench/untar-remove.sh).
# --arch arm64: on an emulated arm64 guest (scripts/build-guest.sh --arch
# arm64, QEMU's virt machine under TCG, an arm64 Debian root of its own:
# scripts/arm64-root.sh), with 16 KiB pages by default (--pages 4K: 4 KiB),
# as Android's 16 KiB kernels; no Highalloc-Stress test there (its module
# is built for the x86_64 guest), the HugeTLB test with the arm64 huge page
# (32 MiB with 16 KiB pages).
# --runs N: N boots, each measuring every allocator; the allocator order is
# reversed on every other boot (an allocator that runs later in a boot finds
# memory the earlier runs fragmented), results in DIR/run-1 .. run-N and a
# summary of medians, overall and by position in the boot, in
# DIR/summary.md + summary.csv (bench/runs_summary.py).
# Results: DIR (default $AFMALLOC_CACHE/results/<dataset>-<date>) gets
# steps.csv, buddyinfo.csv, hugetlb.csv, meta.json, report.md, overhead.png,
# the guest log (guest.log: the script's output) and the guest console
# (console.log: kernel log and script output, not committed); with the Highalloc-Stress test (seed 000, on unless
# --no-highalloc: afm_highalloc.ko from bench/build-modules.sh, guest booted
# with page_owner=on for /proc/pagetypeinfo's mixed-block counts) also
# highalloc.csv, highalloc_summary.csv, pagetypeinfo.csv and frag.png.
# shellcheck source=../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../scripts/common.sh"
# shellcheck source=SCRIPTDIR/lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"
# shellcheck source=SCRIPTDIR/lib/afm-params.sh
. "$AFMALLOC_TOP/bench/lib/afm-params.sh"

usage() {
	echo "usage: $0 [--dataset quick|full] [--rounds N] [--alloc LIST] [--comp lz4|zstd] [--memory SIZE] [--out DIR] [--append ARGS] [--no-highalloc] [--runs N] [--arch arm64 [--pages 16K|4K]]"
}
dataset=quick rounds=1 allocs=zsmalloc comp=lz4 memory='' out='' append='' highalloc=1 runs=1
cpus=2 vmb_arch=x86_64 vmb_pages=''
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
	--runs) runs=${2:?--runs needs a number}; shift ;;
	--arch) vmb_arch=${2:?--arch needs x86_64 or arm64}; shift ;;
	--pages) vmb_pages=${2:?--pages needs 16K or 4K}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
case "$dataset" in quick|full) ;; *) die "unknown dataset '$dataset' (want quick or full)" ;; esac
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number, not '$rounds'"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive number, not '$runs'"
case "$comp" in lz4|zstd) ;; *) die "--comp must be lz4 or zstd, not '$comp'" ;; esac
IFS=, read -r -a alist <<< "$allocs"
for a in "${alist[@]}"; do
	afm_check_alloc "$a" compact
done
[ -n "$memory" ] || { [ "$dataset" = full ] && memory=4G || memory=2G; }
vmb_arch_check
if [ "$vmb_arch" = arm64 ]; then
	[ "$highalloc" = 0 ] || log "arm64: no Highalloc-Stress test (its module is built for the x86_64 guest)"
	highalloc=0
fi

vmb_setup "the benchmark"
vmb_kernel ''
boot_args=slab_nomerge
highalloc_args=()
if [ "$highalloc" = 1 ]; then
	kodir=$("$AFMALLOC_TOP/bench/build-modules.sh" --kdir "$kernel")
	highalloc_args=(--highalloc-ko "$kodir/afm_highalloc.ko")
	boot_args+=" page_owner=on"
fi
boot_args+="${append:+ $append}"
# The HugeTLB test's request and release, run with its pages locked
# (bench/hugetlb-take.c, see bench/untar-remove.sh hugetlb()); x86_64
# only: the arm64 guest leaves headroom in what it asks for instead.
take_args=()
if [ "$vmb_arch" = x86_64 ]; then
	take=$("$AFMALLOC_TOP/bench/build-hugetlb-take.sh") || die "cannot build bench/hugetlb-take.c"
	take_args=(--hugetlb-take "$take")
fi
tar=$("$AFMALLOC_TOP/bench/dataset.sh" "$dataset")
[ "$vmb_arch" = x86_64 ] || dataset_tag=$dataset-arm64-$(tr K k <<< "$vmb_pages")
vmb_out "${dataset_tag:-$dataset}"
# shellcheck disable=SC2016 # the quotes are kept in the string, $append expands
if [ "$vmb_arch" = x86_64 ]; then
	cmd="make bench DATASET=$dataset ROUNDS=$rounds ALLOC=$allocs COMP=$comp${append:+ BOOT_ARGS='$append'}"
else
	cmd="make bench-arm64 PAGES=$vmb_pages DATASET=$dataset ROUNDS=$rounds ALLOC_ARM64=$allocs COMP=$comp${append:+ BOOT_ARGS='$append'}"
fi
[ "$runs" = 1 ] || cmd+=" RUNS=$runs"
[ "$highalloc" = 1 ] || [ "$vmb_arch" != x86_64 ] || cmd+=" (bench/run.sh --no-highalloc)"

# run_once DIR ALLOCS RUN: one boot, every allocator of ALLOCS in that order.
# Its own meta.json, without meta_host_fields: the keys of the committed runs.
run_once() {
	local dir=$1 order=$2 run=$3 out=$1 t0	# vmb_out and vmb_boot: this boot's folder
	vmb_out "${dataset_tag:-$dataset}" steps.csv buddyinfo.csv hugetlb.csv debugfs highalloc.csv \
		highalloc_summary.csv pagetypeinfo.csv frag.png
	vmb_boot 14400 "running untar/remove ($dataset, $rounds round(s), $comp) for: $order (boot $run of $runs)" \
		--append "$boot_args" --rodir "$(dirname "$tar")" -- "$AFMALLOC_TOP/bench/untar-remove.sh" --dataset "$tar" \
		--out "$dir" --alloc "$order" --rounds "$rounds" --comp "$comp" "${highalloc_args[@]}" "${take_args[@]}"

	{ echo "{"; meta_kernel_fields "$kernel" "$dir/guest.log"; cat <<JSON; } > "$dir/meta.json"
  "dataset": "$dataset ($(basename "$tar"), sha256 $(sha256sum "$tar" | cut -c1-16))",
  "rounds": $rounds,
  "comp": "$comp",
  "allocators": "$order",
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "arch": "$vmb_arch",
  "page_size": $(vmb_page_size),
  "boot_args": "$boot_args",
  "highalloc": $([ "$highalloc" = 1 ] && echo true || echo false),
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "host_load_1min": "$(cut -d' ' -f1 /proc/loadavg)",
  "seconds": $((SECONDS - t0)),
  "runs": 1,
  "run": $run,
  "command": "$cmd"
}
JSON
	python3 "$AFMALLOC_TOP/bench/report.py" "$dir" --out "$dir/report.md"
	"$AFMALLOC_VENV/bin/python3" "$AFMALLOC_TOP/bench/plot.py" "$dir" --out "$dir/overhead.png" >/dev/null
	if [ -s "$dir/highalloc.csv" ]; then
		"$AFMALLOC_VENV/bin/python3" "$AFMALLOC_TOP/bench/plot_frag.py" "$dir" --out "$dir/frag.png" >/dev/null
	fi
}

if [ "$runs" = 1 ]; then
	run_once "$out" "$allocs" 1
else
	# Reverse the order on every other boot.
	rev=$(printf '%s\n' "${alist[@]}" | tac | paste -sd, -)
	for k in $(seq 1 "$runs"); do
		if [ $((k % 2)) = 1 ]; then order=$allocs; else order=$rev; fi
		run_once "$out/run-$k" "$order" "$k"
	done
	python3 "$AFMALLOC_TOP/bench/runs_summary.py" "$out" --command "$cmd"
	cat "$out/summary.md"
fi
log "results in $out"
