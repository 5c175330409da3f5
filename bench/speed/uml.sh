#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Allocator speed on the host's own CPU (issue 16): the in-kernel
# microbenchmark of make bench-speed (bench/module/afm_speed.c) built into
# a UML kernel (scripts/config/speed-uml.config, kunit.py build, no
# debugging options) and run at its boot, natively instead of under TCG,
# where every instruction and memory access is emulated. UML has one CPU:
# one thread only. With --perf the run is sampled (perf record, cpu-clock)
# and the hottest functions are kept.
#   bench/speed/uml.sh [--out DIR] [--runs N] [--duration-ms N]
#                      [--working-set N] [--append ARGS] [--perf]
#                      [--sequential]
# --working-set: objects a thread (default 4096, about 6 MiB of the lz4 sizes,
# inside a server's L2 or L3; 65536, about 92 MiB, beyond the L2 and most
# L3s, as a zram pool is). --sequential: the objects are replaced and read
# in order, oldest first (fio's write and read shapes), not at random.
# Results: DIR (default $AFMALLOC_CACHE/results/speed-uml-<date>) gets
# speed.csv (the columns of make bench-speed), console.log (UML's output),
# meta.json, speed.md and, with --perf, perf-report.txt (functions by share
# of the samples of the whole run, its data checks included).
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

usage() {
	sed -n '10,12p' "$0" | sed 's/^# \{0,1\}//'
}
out='' runs=3 duration_ms=2000 working_set=4096 perf=0 append='' sequential=0
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?--out needs a folder}; shift ;;
	--runs) runs=${2:?--runs needs a number}; opts+=("$1 $2"); shift ;;
	--duration-ms) duration_ms=${2:?--duration-ms needs a number}; opts+=("$1 $2"); shift ;;
	--working-set) working_set=${2:?--working-set needs a number}; opts+=("$1 $2"); shift ;;
	--append) append=${2?--append needs boot arguments}; opts+=("$1 '$2'"); shift ;;
	--perf) perf=1; opts+=("$1") ;;
	--sequential) sequential=1; opts+=("$1") ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
vmb_positive runs duration_ms working_set
sizes=$AFMALLOC_TOP/bench/data/sizes-lz4.csv

"$AFMALLOC_TOP/scripts/setup.sh"
[ "$perf" = 0 ] || command -v perf >/dev/null || apt_install linux-perf
lock build-uml-speed
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
bdir=$AFMALLOC_BUILD/uml-speed
mkdir -p "$bdir"
log "building the UML speed kernel in $bdir"
(cd "$tree" && python3 tools/testing/kunit/kunit.py build \
	--kunitconfig="$AFMALLOC_TOP/scripts/config/speed-uml.config" \
	--build_dir="$bdir" --jobs="$AFMALLOC_JOBS" --make_options="CC=$(kcc)") >&2 ||
	die "building the UML speed kernel failed"
[ -x "$bdir/linux" ] || die "no UML kernel $bdir/linux after the build"
git -C "$AFMALLOC_TOP" describe --always --dirty > "$bdir/.afmalloc-source" 2>/dev/null ||
	echo unknown > "$bdir/.afmalloc-source"

[ -n "$out" ] || out=$AFMALLOC_CACHE/results/speed-uml-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out/speed.csv" "$out/console.log" "$out/meta.json" "$out/speed.md" "$out/perf-report.txt"

# UML has no root file system here: after the boot runs it panics trying
# to mount one, so success is the module's "boot runs done" line, not the
# exit status. Worst case: 3 allocators x 4 operations x duration, plus
# fills and data checks.
args=(mem=1G "afm_speed.boot_runs=$runs" "afm_speed.duration_ms=$duration_ms"
      "afm_speed.working_set=$working_set")
[ "$sequential" = 0 ] || args+=(afm_speed.sequential=1)
# Extra boot arguments (e.g. afmalloc.zspage_auto_permille=0), word by word.
read -r -a extra <<< "$append"
args+=("${extra[@]}")
timeout_s=$((120 + runs * 12 * (duration_ms / 1000 + 10)))
run=(timeout "$timeout_s" "$bdir/linux" "${args[@]}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$perf" = 0 ] || run=(perf record -q -F 999 -g -o "$tmp/perf.data" -- "${run[@]}")
load_start=$(cut -d' ' -f1 /proc/loadavg)
log "speed on UML: $runs run(s), ${duration_ms} ms per case, $working_set objects (host load $load_start)"
t0=$SECONDS
"${run[@]}" < /dev/null > "$out/console.log" 2>&1 || true
load_end=$(cut -d' ' -f1 /proc/loadavg)
grep -q 'afm_speed: boot runs done' "$out/console.log" || {
	{ grep 'afm_speed:' "$out/console.log" || true; } | tail -n 20 >&2
	die "the speed run failed or did not finish (UML output: $out/console.log)"
}

# "afm_speed: boot run R of N", then "afm_speed: ALLOC OP threads=T
# ops=O ops_per_s=S ns_per_op=P" per case.
echo "run,alloc,op,threads,ops_per_s,ns_per_op,ops" > "$out/speed.csv"
awk '
	/afm_speed: boot run [0-9]+ of/ { for (i = 1; i <= NF; i++) if ($i == "run") r = $(i + 1) }
	/afm_speed: .* threads=[0-9]+ ops=/ {
		for (i = 1; i <= NF; i++) if ($i == "afm_speed:") break
		alloc = $(i + 1); op = $(i + 2)
		for (j = i + 3; j <= NF; j++) { split($j, kv, "="); f[kv[1]] = kv[2] }
		printf "%s,%s,%s,%s,%s,%s,%s\n", r, alloc, op, f["threads"], f["ops_per_s"], f["ns_per_op"], f["ops"]
	}' "$out/console.log" >> "$out/speed.csv"
rows=$(($(wc -l < "$out/speed.csv") - 1))
# Rows a run gives (one thread): vmb_speed_due's.
vmb_speed_due "$append"
want=$((runs * sp_rows))
[ "$rows" -ge "$want" ] ||
	die "only $rows result rows in $out/speed.csv (UML output: $out/console.log)"

if [ "$perf" = 1 ]; then
	{ echo "# perf record -F 999 -g (cpu-clock) of the whole UML run, $(perf --version)"
	  echo "# self time by function; afm_* and zs_*/obj_* are the allocators, sp_* the benchmark"
	  perf report -i "$tmp/perf.data" --no-children --sort symbol --stdio -g none \
		--percent-limit 0.3 2>/dev/null | grep -v '^#' | grep -v '^$'
	} > "$out/perf-report.txt"
fi

# make bench-speed-uml passes --perf: the defaults with it are the make target.
[ "${opts[*]}" != --perf ] || opts=()
vmb_command "make bench-speed-uml" "${opts[@]}"
{ cat <<JSON
{
  "kernel": "$(cat "$bdir/include/config/kernel.release") (UML)",
  "config_sha256": "$(sha256sum "$bdir/.config" | cut -c1-16)",
  "source": "$(cat "$bdir/.afmalloc-source")",
  "accelerator": "none (UML, native)",
  "guest_cpus": 1,
  "boot_args": "${args[*]}",
  "runs": $runs,
  "duration_ms": $duration_ms,
  "working_set": $working_set,
  "order": "$([ "$sequential" = 0 ] && echo random || echo sequential)",
  "sizes": "$(basename "$sizes") (sha256 $(sha256sum "$sizes" | cut -c1-16))",
  "host_cpu": "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)",
JSON
  vmb_speed_meta "$sizes" "$working_set"
  meta_host_fields "$load_start" "$load_end" "$t0"; echo "}"; } > "$out/meta.json"
python3 "$AFMALLOC_TOP/bench/report.py" --kind speed "$out" --out "$out/speed.md"
cat "$out/speed.md"
log "results in $out ($((SECONDS - t0)) s)"
