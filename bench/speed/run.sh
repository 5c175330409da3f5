#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Allocator speed (issue #7 item 4a): builds the guest kernel and
# afm_speed.ko, boots ONE guest (bench/lib/vm-bench.sh) and runs the
# in-kernel microbenchmark there (bench/speed/guest.sh: the module loaded once per run), then prints the
# markdown table (bench/report.py speed(): medians of the runs, ratio to
# zsmalloc of the same run).
#   bench/speed/run.sh [--out DIR] [--runs N] [--duration-ms N] [--working-set N]
#                      [--sizes CSV] [--memory SIZE] [--cpus N] [--append ARGS]
#                      [--sequential | --shared]
# ARGS: extra guest kernel arguments, e.g. afmalloc.zspage_auto_permille=0
# to measure the zspage store without its automatic compaction.
# --sequential: the timed operations replace and read the objects in order,
# oldest first (fio's write and read shapes on a full zram device), not at
# random. --shared: the threads take their random objects from one working
# set, so that frees and maps meet objects another CPU allocated (zram's and
# zswap's: a page swapped out on one CPU comes back or is rewritten on
# another; fio's mixwrite), not each its own.
# Object sizes: bench/data/sizes-lz4.csv (bench/sizes.py: LZ4 sizes of the
# quick dataset's 4 KiB pages). Results: DIR (default
# $AFMALLOC_CACHE/results/speed-<date>) gets speed.csv, speed-run<r>.txt,
# meta.json (with the host's load average at the start and the end: the
# host is shared), speed.md, the guest's output (guest.log) and console
# (console.log).
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

usage() {
	echo "usage: $0 [--out DIR] [--runs N] [--duration-ms N] [--working-set N] [--sizes CSV] [--memory SIZE] [--cpus N] [--append ARGS] [--sequential | --shared]"
}
out='' runs=3 duration_ms=2000 working_set=4096 memory=2G cpus=2 append='' sequential=0 shared=0
sizes=$AFMALLOC_TOP/bench/data/sizes-lz4.csv
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?--out needs a folder}; shift ;;
	--runs) runs=${2:?--runs needs a number}; opts+=("$1 $2"); shift ;;
	--duration-ms) duration_ms=${2:?--duration-ms needs a number}; opts+=("$1 $2"); shift ;;
	--working-set) working_set=${2:?--working-set needs a number}; opts+=("$1 $2"); shift ;;
	--sizes) sizes=${2:?--sizes needs a CSV}; opts+=("$1 $2"); shift ;;
	--memory) memory=${2:?--memory needs a size}; opts+=("$1 $2"); shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; opts+=("$1 $2"); shift ;;
	--append) append=${2:?--append needs kernel arguments}; opts+=("$1 '$2'"); shift ;;
	--sequential) sequential=1; opts+=("$1") ;;
	--shared) shared=1; opts+=("$1") ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
vmb_positive runs duration_ms working_set cpus
[ "$sequential$shared" != 11 ] || die "--sequential and --shared exclude each other"
[ -s "$sizes" ] || die "no size histogram $sizes (make it with bench/sizes.py)"
sizes=$(realpath "$sizes")

vmb_setup "the speed benchmark"
vmb_kernel ''
kodir=$("$AFMALLOC_TOP/bench/build-modules.sh" --kdir "$kernel")
[ -f "$kodir/afm_speed.ko" ] || die "no afm_speed.ko in $kodir"
vmb_out speed speed.csv 'speed-run*.txt' speed.md meta.json

# Worst case under TCG: boot plus runs x 20 cases x (duration + fill/verify).
timeout_s=$((600 + runs * 20 * (duration_ms / 1000 + 10)))
vmb_boot "$timeout_s" "speed: $runs run(s), ${duration_ms} ms per case, $working_set objects per thread" \
	${append:+--append "$append"} -- \
	"$AFMALLOC_TOP/bench/speed/guest.sh" --ko "$kodir/afm_speed.ko" --sizes "$sizes" \
	--out "$out" --runs "$runs" --duration-ms "$duration_ms" --working-set "$working_set" \
	$([ "$sequential" = 0 ] || echo --sequential) $([ "$shared" = 0 ] || echo --shared)
vmb_need_rows "$out/speed.csv"

vmb_command "make bench-speed" "${opts[@]}"
vmb_meta "$kernel" <<JSON
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "boot_args": "$append",
  "runs": $runs,
  "duration_ms": $duration_ms,
  "working_set": $working_set,
  "order": "$([ "$sequential" = 0 ] && echo random || echo sequential)",
  "shared": $([ "$shared" = 0 ] && echo false || echo true),
  "sizes": "$(basename "$sizes") (sha256 $(sha256sum "$sizes" | cut -c1-16))",
$(vmb_speed_meta "$sizes" "$working_set")
JSON
python3 "$AFMALLOC_TOP/bench/report.py" --kind speed "$out" --out "$out/speed.md"
vmb_done
