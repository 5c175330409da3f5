#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# zram block I/O speed per allocator with fio (issue #7 item 4b): installs
# fio, builds the guest kernel, boots ONE guest (bench/lib/vm-bench.sh) and
# runs bench/fio/guest.sh there (one zram device per allocator, the same size and compressor, the
# job shapes of bench/fio/zram.fio, allocator order rotated per run), then
# prints the markdown table (bench/report.py fio(): median IOPS of the runs,
# median of the per-run ratios to zsmalloc in the same boot).
#   bench/fio/run.sh [--out DIR] [--runs N] [--runtime SEC] [--size SIZE]
#                    [--alloc LIST] [--shapes LIST] [--memory SIZE] [--cpus N]
#                    [--append ARGS] [--settle SEC]
# --append: kernel arguments for the guest (e.g. afmalloc.zspage_align=16)
# after slab_nomerge, recorded in meta.json (boot_args). LIST: an afmalloc
# allocator may carry module parameters for its own device,
# afmalloc/zspage+NAME=VALUE (bench/fio/guest.sh), so that a setting runs
# beside the default and zsmalloc in one boot. --settle: seconds
# every device is left idle after the last job before its end row of
# mm_stat.csv is read (default 5; meta.json settle_s).
# Results: DIR (default $AFMALLOC_CACHE/results/fio-<date>) gets fio.csv,
# fio/*.json (fio's own output per job), mm_stat.csv, mm_samples.csv, meta.json, fio.md, the
# guest's output (guest.log) and console (console.log). meta.json records the host's load average at the start and
# the end: the host is shared, and under TCG the guest's speed follows it.
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

usage() {
	echo "usage: $0 [--out DIR] [--runs N] [--runtime SEC] [--size SIZE] [--alloc LIST] [--shapes LIST] [--memory SIZE] [--cpus N] [--append ARGS] [--settle SEC]"
}
out='' runs=3 runtime=10 size=256M memory=2G cpus=2 append='' settle=5
allocs=zsmalloc,afmalloc/zspage,afmalloc/slab shapes=write,read,randwrite,randread,randrw,mixwrite
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?--out needs a folder}; shift ;;
	--runs) runs=${2:?--runs needs a number}; opts+=("$1 $2"); shift ;;
	--runtime) runtime=${2:?--runtime needs seconds}; opts+=("$1 $2"); shift ;;
	--size) size=${2:?--size needs a size}; opts+=("$1 $2"); shift ;;
	--alloc) allocs=${2:?--alloc needs a list}; opts+=("$1 $2"); shift ;;
	--shapes) shapes=${2:?--shapes needs a list}; opts+=("$1 $2"); shift ;;
	--memory) memory=${2:?--memory needs a size}; opts+=("$1 $2"); shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; opts+=("$1 $2"); shift ;;
	--append) append=${2:?--append needs kernel arguments}; opts+=("$1 '$2'"); shift ;;
	--settle) settle=${2:?--settle needs seconds}; opts+=("$1 $2"); shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
vmb_positive runs runtime cpus
[[ "$settle" =~ ^(0|[1-9][0-9]*)$ ]] || die "--settle must be a number of seconds, not '$settle'"
[[ "$size" =~ ^[1-9][0-9]*[MG]$ ]] || die "--size must look like 256M or 1G, not '$size'"
IFS=, read -r -a alist <<< "$allocs"
IFS=, read -r -a slist <<< "$shapes"
# shellcheck source=SCRIPTDIR/../lib/afm-params.sh
. "$AFMALLOC_TOP/bench/lib/afm-params.sh"
for a in "${alist[@]}"; do
	afm_check_alloc "$a"
done

vmb_setup "the fio benchmark"
apt_install fio
vmb_kernel ''
vmb_out fio fio.csv fio mm_stat.csv mm_samples.csv debugfs fio.md meta.json

# Worst case under TCG: boot, fills, and every job with fio's start-up.
timeout_s=$((900 + settle + ${#alist[@]} * 120 + runs * ${#alist[@]} * ${#slist[@]} * (runtime + 30)))
# slab_nomerge: each pool's slab caches stay its own (guest.sh counts them).
boot_args="slab_nomerge${append:+ $append}"
vmb_boot "$timeout_s" "fio: $runs run(s) x ${#alist[@]} allocator(s) x ${#slist[@]} shape(s) x $runtime s, $size per device" \
	--append "$boot_args" -- "$AFMALLOC_TOP/bench/fio/guest.sh" --out "$out" --alloc "$allocs" --runs "$runs" \
	--runtime "$runtime" --size "$size" --shapes "$shapes" --settle "$settle"
vmb_need_rows "$out/fio.csv"

vmb_command "make bench-fio" "${opts[@]}"
vmb_meta "$kernel" <<JSON
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "boot_args": "$boot_args",
  "runs": $runs,
  "runtime_s": $runtime,
  "settle_s": $settle,
  "device_size": "$size",
  "comp": "lz4",
  "allocators": "$allocs",
  "shapes": "$shapes",
  "job_file": "bench/fio/zram.fio (sha256 $(sha256sum "$AFMALLOC_TOP/bench/fio/zram.fio" | cut -c1-16))",
  "fio": "$(fio --version)",
JSON
python3 "$AFMALLOC_TOP/bench/report.py" --kind fio "$out" --out "$out/fio.md"
vmb_done
