#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Allocator speed and memory on arm64 with 16 KiB pages (issue 16: Android's
# 16 KiB kernels), or 4 KiB: the in-kernel microbenchmark of make
# bench-speed (bench/module/afm_speed.c) built into an arm64 kernel
# (scripts/config/speed-uml.config plus the page size; kunit.py build,
# cross-compiled, no debugging options) and run at its boot under
# qemu-system-aarch64 (TCG: every instruction emulated, only the ratios to
# zsmalloc mean something), zsmalloc and afmalloc's two stores in the same
# boot on the same object sizes: with 16 KiB pages those of
# bench/data/sizes-lz4-16k.csv (the quick dataset cut into 16 KiB pages,
# bench/sizes.py --page 16384), else bench/data/sizes-lz4.csv. No user
# space: after the runs the kernel panics, finding no root file system;
# success is afm_speed's "boot runs done" line.
#   bench/speed/arm64.sh [--pages 16K|4K] [--out DIR] [--runs N]
#                        [--duration-ms N] [--working-set N] [--cpus N]
#                        [--append ARGS] [--profile OP]
# --profile OP (alloc-map or read-map): after the runs, one more boot per
# allocator (zsmalloc, afmalloc/zspage) running only OP, 15 s a case, its
# guest's program counters sampled for 10 s of the one-thread case through
# QEMU's monitor (bench/speed/pcsample.py; no perf without user space; the
# monitor sees a vCPU's PC as of its last translation block, so the time
# of a block counts where it starts): where the time goes, by kernel
# function, and in the allocators' own functions by source line (the
# kernel built with debug information, in a build directory of its own), in
# DIR/profile-ALLOC-OP.txt. Not with --append
# afm_speed.allocs or afm_speed.ops.
# Results: DIR (default $AFMALLOC_CACHE/results/speed-arm64-16k-<date>)
# gets speed.csv (the columns of make bench-speed), held.csv (after the
# fill and each allocating operation: the pages each pool held against the
# bytes it stored, see afm_speed.c), console.log (the kernel's output),
# meta.json and speed.md.
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

usage() {
	sed -n '15,17p' "$0" | sed 's/^# \{0,1\}//'
}
out='' runs=3 duration_ms=2000 working_set=4096 pages=16K cpus=2 append='' profile=''
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--pages) pages=${2:?--pages needs 16K or 4K}; opts+=("$1 $2"); shift ;;
	--out) out=${2:?--out needs a folder}; shift ;;
	--runs) runs=${2:?--runs needs a number}; opts+=("$1 $2"); shift ;;
	--duration-ms) duration_ms=${2:?--duration-ms needs a number}; opts+=("$1 $2"); shift ;;
	--working-set) working_set=${2:?--working-set needs a number}; opts+=("$1 $2"); shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; opts+=("$1 $2"); shift ;;
	--append) append=${2?--append needs boot arguments}; opts+=("$1 '$2'"); shift ;;
	--profile) profile=${2:?--profile needs an operation}; opts+=("$1 $2"); shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	shift
done
vmb_positive runs duration_ms working_set cpus
case "$pages" in
16K|16k) pages=16K page_size=16384 sizes=$AFMALLOC_TOP/bench/data/sizes-lz4-16k.csv ;;
4K|4k) pages=4K page_size=4096 sizes=$AFMALLOC_TOP/bench/data/sizes-lz4.csv ;;
*) die "--pages must be 16K or 4K, not '$pages'" ;;
esac
[[ -z "$profile" || ! "$append" =~ afm_speed\.(allocs|ops)= ]] ||
	die "--profile chooses afm_speed.allocs and afm_speed.ops itself: not with --append '$append'"
case "$profile" in
'') ;;
alloc-map) pmask=1 ;;
read-map) pmask=4 ;;
*) die "--profile must be alloc-map or read-map, not '$profile'" ;;
esac
tag=$(tr K k <<< "$pages")

"$AFMALLOC_TOP/scripts/setup.sh"
apt_install gcc-aarch64-linux-gnu
qemu_install qemu-system-arm
bdir=$AFMALLOC_BUILD/arm64-speed-$tag
kargs=(--arch=arm64 --cross_compile=aarch64-linux-gnu-)
[ "$pages" = 4K ] || kargs+=(--kconfig_add=CONFIG_ARM64_16K_PAGES=y)
if [ -n "$profile" ]; then
	# Line numbers for the profile: -g, not CONFIG_DEBUG_INFO (which
	# needs DEBUG_KERNEL and the defaults that come with it), changes
	# neither the configuration nor the code; in a build directory of its
	# own so that the runs without keep theirs.
	bdir+=-g
	kargs+=(--make_options=KCFLAGS=-g)
fi
lock "build-$(basename "$bdir")"
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
mkdir -p "$bdir"
log "building the arm64 ($pages pages) speed kernel in $bdir"
t0=$SECONDS
(cd "$tree" && python3 tools/testing/kunit/kunit.py build \
	--kunitconfig="$AFMALLOC_TOP/scripts/config/speed-uml.config" "${kargs[@]}" \
	--build_dir="$bdir" --jobs="$AFMALLOC_JOBS" \
	--make_options="CC=$(kcc aarch64-linux-gnu-gcc)") >&2 ||
	die "building the arm64 speed kernel failed"
image=$bdir/arch/arm64/boot/Image
[ -f "$image" ] || die "no kernel image $image after the build"
grep -qx "CONFIG_ARM64_${pages}_PAGES=y" "$bdir/.config" ||
	die "$bdir/.config is not a $pages-page kernel"
"$AFMALLOC_TOP/scripts/prepare-tree.sh" --check ||
	die "another run (another checkout) prepared the shared tree during this build: run again"
git -C "$AFMALLOC_TOP" describe --always --dirty > "$bdir/.afmalloc-source" 2>/dev/null ||
	echo unknown > "$bdir/.afmalloc-source"
log "built in $((SECONDS - t0)) s"

[ -n "$out" ] || out=$AFMALLOC_CACHE/results/speed-arm64-$tag-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out/speed.csv" "$out/held.csv" "$out/console.log" "$out/meta.json" "$out/speed.md" \
	"$out"/profile-*.txt "$out"/console-profile-*.log

args=(console=ttyAMA0 panic=-1 "afm_speed.boot_runs=$runs" "afm_speed.duration_ms=$duration_ms"
      "afm_speed.working_set=$working_set")
read -r -a extra <<< "$append"
args+=("${extra[@]}")
# Emulated: a case takes several times its duration in fills and checks.
timeout_s=$((600 + runs * 20 * (duration_ms / 1000 + 30)))
memory=2G
emulator=$(qemu-system-aarch64 --version | sed -n '1s/^QEMU emulator version //p')
load_start=$(cut -d' ' -f1 /proc/loadavg)
log "speed on arm64 ($pages pages, TCG, $cpus CPUs): $runs run(s), ${duration_ms} ms per case, $working_set objects a thread (host load $load_start)"
t0=$SECONDS
timeout "$timeout_s" qemu-system-aarch64 -machine virt -cpu max,pauth-impdef=on \
	-smp "$cpus" -m "$memory" -nographic -no-reboot -kernel "$image" \
	-append "${args[*]}" < /dev/null > "$out/console.log" 2>&1 || true
load_end=$(cut -d' ' -f1 /proc/loadavg)
grep -q 'afm_speed: boot runs done' "$out/console.log" || {
	{ grep 'afm_speed:' "$out/console.log" || true; } | tail -n 20 >&2
	tail -n 20 "$out/console.log" >&2
	die "the speed run failed or did not finish (console: $out/console.log)"
}

echo "run,alloc,op,threads,ops_per_s,ns_per_op,ops" > "$out/speed.csv"
echo "run,alloc,op,threads,held_pages,stored_bytes,objects,page_size" > "$out/held.csv"
awk -v speed="$out/speed.csv" -v held="$out/held.csv" -v ps="$page_size" '
	{ sub(/\r$/, "") }
	/afm_speed: boot run [0-9]+ of/ { for (i = 1; i <= NF; i++) if ($i == "run") r = $(i + 1) }
	/afm_speed: .* threads=[0-9]+ (ops|held_pages)=/ {
		for (i = 1; i <= NF; i++) if ($i == "afm_speed:") break
		alloc = $(i + 1); op = $(i + 2)
		delete f
		for (j = i + 3; j <= NF; j++) { split($j, kv, "="); f[kv[1]] = kv[2] }
		if ("ops" in f)
			printf "%s,%s,%s,%s,%s,%s,%s\n", r, alloc, op, f["threads"], f["ops_per_s"], f["ns_per_op"], f["ops"] >> speed
		else
			printf "%s,%s,%s,%s,%s,%s,%s,%s\n", r, alloc, op, f["threads"], f["held_pages"], f["stored_bytes"], f["objects"], ps >> held
	}' "$out/console.log"
# The rows due: per run and thread count (1, and $cpus), vmb_speed_due's.
vmb_speed_due "$append"
nthr=$((cpus > 1 ? 2 : 1))
want=$((runs * nthr * sp_rows))
hwant=$((runs * nthr * sp_held))
rows=$(($(wc -l < "$out/speed.csv") - 1))
hrows=$(($(wc -l < "$out/held.csv") - 1))
if [ "$rows" -lt "$want" ] || [ "$hrows" -lt "$hwant" ]; then
	die "only $rows speed and $hrows memory rows in $out, want $want and $hwant (console: $out/console.log)"
fi
order=random
[[ "$append" != *afm_speed.sequential=1* ]] || order=sequential
shared=false
[[ "$append" != *afm_speed.shared=1* ]] || shared=true

vmb_command "make bench-speed-arm64" "${opts[@]}"
{ cat <<JSON
{
  "kernel": "$(cat "$bdir/include/config/kernel.release") (arm64, $pages pages)",
  "config_sha256": "$(sha256sum "$bdir/.config" | cut -c1-16)",
  "source": "$(cat "$bdir/.afmalloc-source")",
  "accelerator": "tcg",
  "emulator": "$emulator",
  "guest_cpus": $cpus,
  "guest_memory": "$memory",
  "page_size": $page_size,
  "boot_args": "${args[*]}",
  "runs": $runs,
  "duration_ms": $duration_ms,
  "working_set": $working_set,
  "order": "$order",
  "shared": $shared,
  "sizes": "$(basename "$sizes") (sha256 $(sha256sum "$sizes" | cut -c1-16))",
JSON
  vmb_speed_meta "$sizes" "$working_set"
  meta_host_fields "$load_start" "$load_end" "$t0"; echo "}"; } > "$out/meta.json"
python3 -m json.tool "$out/meta.json" > /dev/null || die "$out/meta.json is not valid JSON"

# profile ALLOC MASK: one boot running only $profile of ALLOC (afm_speed's
# allocs bit MASK) with one thread, sampled by pcsample.py.
profile_one() {
	local slug=${1//\//-} sock=$tmp/qmon.sock
	rm -f "$sock"
	log "profile: $1 $profile (one boot, 10 s sampled)"
	timeout 900 qemu-system-aarch64 -machine virt -cpu max,pauth-impdef=on \
		-smp "$cpus" -m "$memory" -nographic -no-reboot -kernel "$image" \
		-monitor "unix:$sock,server,nowait" \
		-append "console=ttyAMA0 panic=-1 nokaslr afm_speed.boot_runs=1 afm_speed.duration_ms=15000 afm_speed.working_set=$working_set afm_speed.allocs=$2 afm_speed.ops=$pmask ${extra[*]}" \
		< /dev/null > "$out/console-profile-$slug-$profile.log" 2>&1 &
	qpid=$!
	python3 "$AFMALLOC_TOP/bench/speed/pcsample.py" --monitor "$sock" \
		--console "$out/console-profile-$slug-$profile.log" \
		--start "afm_speed: $1 fill threads=1 held" --vmlinux "$bdir/vmlinux" \
		--out "$out/profile-$slug-$profile.txt" --lines '^(afm_|zs_|obj_)' \
		--wait 600 || die "profile of $1 failed"
	wait "$qpid" || true
	qpid=
	grep -q 'afm_speed: boot runs done' "$out/console-profile-$slug-$profile.log" ||
		die "the profiled boot of $1 did not finish (console: $out/console-profile-$slug-$profile.log)"
}
if [ -n "$profile" ]; then
	# A profiled boot still running when this script ends (a failure, an
	# interrupt) is stopped; its monitor socket goes with $tmp.
	tmp=$(mktemp -d)
	qpid=
	trap '[ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
	profile_one zsmalloc 1
	profile_one afmalloc/zspage 4
fi
python3 "$AFMALLOC_TOP/bench/report.py" --kind speed "$out" --out "$out/speed.md"
cat "$out/speed.md"
log "results in $out ($((SECONDS - t0)) s)"
