#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Swap-churn benchmark (issue 15), host side: builds the workload
# (bench/churn/churn.c, into $AFMALLOC_CACHE/churn/) and the lean guest
# kernel, boots ONE guest (bench/lib/vm-bench.sh) that runs
# bench/churn/churn-guest.sh for every allocator (and run), then writes
# the report (bench/churn/report.py).
#
#   bench/churn/run.sh [--target zram|zswap] [--alloc LIST] [--comp lz4|zstd]
#                      [--runs N] [--order forward|reverse] [--mb N]
#                      [--procs N] [--threads N] [--churn S] [--exit S]
#                      [--switch S] [--switch-slot S] [--rest S] [--rewrite F]
#                      [--limit-pct P] [--memory SIZE] [--cpus N]
#                      [--kernel DIR] [--append ARGS] [--perf S] [--warmup S]
#                      [--arch arm64 [--pages 16K|4K]] [--out DIR]
#   bench/churn/run.sh --print-bin     build the workload (and its pool.bin),
#                                      print its path
#
# An afmalloc allocator of --alloc may carry module parameters for its
# runs: afmalloc/zspage+zspage_handle_phases=N (churn-guest.sh), so that a
# setting is measured beside the default and zsmalloc in one boot.
#
# Defaults: zram, afmalloc/zspage,afmalloc/slab,zsmalloc, lz4, 1 run,
# 384 MiB in 4 processes x 2 threads, phases churn 120 s, exit 60 s,
# switch 60 s in slots of 15 s (under TCG a process sweeps about 2000
# pages a second: a slot is about one sweep of its 96 MiB), rest 60 s (plus
# the fill and the final verification; about 7 minutes per allocator), a
# cgroup of a third of the working set, a 2 GiB 2-CPU guest booted with
# slab_nomerge. --runs N: the allocator order is reversed on every other
# run (all in the same boot). --warmup S (default 60): before run 1, each
# allocator's fill and S s of churn, not reported (churn-guest.sh
# --warmup: a boot's first run is slower whatever its allocator); 0: none.
#
# bench/churn/hostperf.sh DIR, started beside it: a host profile of QEMU in
# every run (TCG), see there.
# --perf S: a profile of S seconds of every run's churn phase (perf record
# -a -g in the guest, 30 s after the workload starts) in
# DIR/perf-RUN-ALLOC.data, by symbol in DIR/perf-RUN-ALLOC.txt
# (churn-guest.sh --perf); it slows the workload.
#
# --arch arm64: on an emulated arm64 guest with 16 KiB pages by default
# (--pages 4K: 4 KiB; bench/run.sh --arch says how), the workload
# cross-built static for it (its pages are the guest's: 16 KiB there), the
# same pool.bin.
#
# CHURN_NOTE (environment): a sentence on the run's conditions (what else
# ran on the host, say), kept as meta.json's "note" and shown in the report.
#
# Results: DIR (default $AFMALLOC_CACHE/results/churn-<target>-<comp>-<date>)
# gets samples.csv, progress.csv, one log per run and churn-guest.log
# (churn-guest.sh; stall-dmesg.log if its watchdog fired), guest.log (the
# guest's output), console.log (the guest console), meta.json, report.md
# and overhead.png (if matplotlib is in $AFMALLOC_VENV). churn-*.log covers churn-guest.log when a rerun
# clears the folder.
# shellcheck source=../../scripts/common.sh disable=SC1091
. "$(dirname "$0")/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/../lib/vm-bench.sh
. "$AFMALLOC_TOP/bench/lib/vm-bench.sh"

here=$AFMALLOC_TOP/bench/churn

# build_bin: compile churn.c when missing or older than its source, and
# read its pool of real data (6 MiB from /usr/share, /usr/lib, /usr/bin)
# into pool.bin next to it, where churn-guest.sh finds it; print the binary.
# With vmb_arch=arm64: also a static arm64 build in churn-arm64/, beside a
# copy of the same pool.bin, printed instead.
build_bin() {
	local d=$AFMALLOC_CACHE/churn bin tmp a=$AFMALLOC_CACHE/churn-arm64
	bin=$d/churn
	mkdir -p "$d"
	if [ ! -x "$bin" ] || [ "$here/churn.c" -nt "$bin" ]; then
		command -v gcc >/dev/null || apt_install gcc libc6-dev
		tmp=$(mktemp "$d/churn.XXXXXX")
		gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -o "$tmp" "$here/churn.c" -lm ||
			{ rm -f "$tmp"; die "building $here/churn.c failed"; }
		mv -f "$tmp" "$bin"
	fi
	if [ ! -s "$d/pool.bin" ] || [ "$bin" -nt "$d/pool.bin" ]; then
		"$bin" --save-pool "$d/pool.bin" --pool-mb 6 >&2 || die "cannot make $d/pool.bin"
	fi
	if [ "${vmb_arch:-x86_64}" = arm64 ]; then
		mkdir -p "$a"
		if [ ! -x "$a/churn" ] || [ "$here/churn.c" -nt "$a/churn" ]; then
			apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
			tmp=$(mktemp "$a/churn.XXXXXX")
			aarch64-linux-gnu-gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -static \
				-o "$tmp" "$here/churn.c" -lm ||
				{ rm -f "$tmp"; die "building $here/churn.c for arm64 failed"; }
			mv -f "$tmp" "$a/churn"
		fi
		if ! cmp -s "$d/pool.bin" "$a/pool.bin" 2>/dev/null; then
			cp "$d/pool.bin" "$a/pool.bin.$$" && mv -f "$a/pool.bin.$$" "$a/pool.bin"
		fi
		bin=$a/churn
	fi
	echo "$bin"
}

usage() {
	sed -n '9,18p' "$0" | sed 's/^# \{0,1\}//'
}
target=zram allocs=afmalloc/zspage,afmalloc/slab,zsmalloc comp=lz4 runs=1 order=forward perf_s=0
warmup=60
mb=384 procs=4 threads=2 churn=120 exit_s=60 switch=60 switch_slot=15 rest=60 rewrite=0.1 limit_pct=33
memory=2G cpus=2 kernel='' append='' out='' vmb_arch=x86_64 vmb_pages=''
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--print-bin) build_bin; exit 0 ;;
	--target) target=${2:?--target needs zram or zswap} ;;
	--alloc) allocs=${2:?--alloc needs a list} ;;
	--comp) comp=${2:?--comp needs lz4 or zstd} ;;
	--runs) runs=${2:?--runs needs a number} ;;
	--order) order=${2:?--order needs forward or reverse} ;;
	--mb) mb=${2:?--mb needs MiB} ;;
	--procs) procs=${2:?--procs needs a number} ;;
	--threads) threads=${2:?--threads needs a number} ;;
	--churn) churn=${2:?--churn needs seconds} ;;
	--exit) exit_s=${2:?--exit needs seconds} ;;
	--switch) switch=${2:?--switch needs seconds} ;;
	--switch-slot) switch_slot=${2:?--switch-slot needs seconds} ;;
	--rest) rest=${2:?--rest needs seconds} ;;
	--rewrite) rewrite=${2:?--rewrite needs a fraction} ;;
	--limit-pct) limit_pct=${2:?--limit-pct needs a percentage} ;;
	--memory) memory=${2:?--memory needs a size} ;;
	--cpus) cpus=${2:?--cpus needs a number} ;;
	--kernel) kernel=${2:?--kernel needs a build dir} ;;
	--append) append=${2:?--append needs kernel arguments} ;;
	--perf) perf_s=${2:?--perf needs seconds} ;;
	--warmup) warmup=${2:?--warmup needs seconds} ;;
	--out) out=${2:?--out needs a folder} ;;
	--arch) vmb_arch=${2:?--arch needs x86_64 or arm64} ;;
	--pages) vmb_pages=${2:?--pages needs 16K or 4K} ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
	[ "$1" = --out ] || opts+=("$1 $2")
	shift 2
done
case "$target" in zram|zswap) ;; *) die "--target must be zram or zswap, not '$target'" ;; esac
case "$comp" in lz4|zstd) ;; *) die "--comp must be lz4 or zstd, not '$comp'" ;; esac
for v in runs mb procs threads churn exit_s switch switch_slot rest cpus perf_s warmup; do
	n=${v%_s}
	[[ "${!v}" =~ ^[0-9]+$ ]] || die "--${n//_/-} must be a whole number, not '${!v}'"
done
[ "$runs" -ge 1 ] || die "--runs must be at least 1"
[ "$mb" -ge 8 ] || die "--mb must be at least 8"
[ "$switch_slot" -ge 1 ] || die "--switch-slot must be at least 1"
case "${CHURN_NOTE:-}" in *[\"\\]*) die "CHURN_NOTE must not hold quotes or backslashes" ;; esac
vmb_arch_check

vmb_setup "the churn benchmark"
bin=$(build_bin)
vmb_kernel "$kernel"
tag=''
[ "$vmb_arch" = x86_64 ] || tag=-arm64-$(tr K k <<< "$vmb_pages")
vmb_out "churn-$target-$comp$tag" samples.csv progress.csv 'churn-*.log' report.md \
	overhead.png meta.json stall-dmesg.log 'perf-*.txt' 'perf-*.data' warmup

IFS=, read -r -a alist <<< "$allocs"
wargs=(--mb "$mb" --procs "$procs" --threads "$threads" --churn "$churn" --exit "$exit_s"
       --switch "$switch" --switch-slot "$switch_slot" --rest "$rest" --rewrite "$rewrite")
# Worst case under TCG: the boot, then per allocator and run the timed
# phases plus 5 minutes for the device, the sampler's start, the fill and
# the verification (13 s of the 313 s a run took with the default phases
# under TCG, the host otherwise quiet; the margin is for a contended host,
# 1200 s before). A run that makes no progress for as long is reported
# and ends the guest (churn-guest.sh --stall), so a hang costs one run's
# allowance, not the whole timeout.
per_run=$((churn + exit_s + switch + rest + 300))
timeout_s=$((900 + runs * ${#alist[@]} * per_run))
[ "$warmup" = 0 ] || timeout_s=$((timeout_s + ${#alist[@]} * (warmup + 300)))
boot_args="slab_nomerge${append:+ $append}"
vmb_boot "$timeout_s" "churn: $target, $comp, ${alist[*]}, $runs run(s); ${wargs[*]}" \
	--append "$boot_args" --rodir "$(dirname "$bin")" -- "$here/churn-guest.sh" --bin "$bin" --out "$out" \
	--target "$target" --alloc "$allocs" --comp "$comp" --runs "$runs" --order "$order" \
	--limit-pct "$limit_pct" --stall "$per_run" --perf "$perf_s" --warmup "$warmup" \
	-- "${wargs[@]}"

# The script's path and every option (make bench-churn passes them all).
vmb_command bench/churn/run.sh "${opts[@]}"
vmb_meta "$kernel" <<JSON
  "guest_memory": "$memory",
  "guest_cpus": $cpus,
  "arch": "$vmb_arch",
  "page_size": $(vmb_page_size),
  "boot_args": "$boot_args",
  "target": "$target",
  "compressor": "$comp",
  "allocators": "$allocs",
  "runs": $runs,
  "order": "$order",
  "warmup_s": $warmup,
  "workload": "churn $(printf '%s ' "${wargs[@]}")(sha256 of churn.c $(sha256sum "$here/churn.c" | cut -c1-16), of its pool.bin $(sha256sum "$(dirname "$bin")/pool.bin" | cut -c1-16))",
  "memory_max_percent": $limit_pct,
  "memory_limit": "memory.high (memory.max a quarter of the working set above it)",
  "note": "${CHURN_NOTE:-}",
  "host_loadavg_start": "$loadavg_start",
  "host_loadavg_end": "$loadavg_end",
JSON
py=python3
[ -x "$AFMALLOC_VENV/bin/python3" ] && py=$AFMALLOC_VENV/bin/python3
"$py" "$here/report.py" "$out" --out "$out/report.md" --plot "$out/overhead.png"
cat "$out/report.md"
vmb_done
