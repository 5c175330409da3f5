# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034,SC2154
# (SC2034, SC2154: the variables below are the run.sh's, set or read here.)
#
# The host side every VM benchmark shares. Source it after
# scripts/common.sh; do not run it.
#
# A VM workload is a folder, bench/WORKLOAD/: run.sh on the host (its
# options, then the steps below) and a guest script that scripts/vm-run.sh
# runs inside ONE throw-away guest, writing its CSVs into the results
# folder (shared read-write with the guest). A run.sh reads:
#
#   vmb_setup "the fio benchmark"          root, scripts/setup.sh
#   vmb_kernel "$kernel"                   the guest kernel (built if needed)
#   vmb_out fio fio.csv fio.md ...         the results folder, old results gone
#   vmb_boot "$timeout_s" "fio: ..." [VM-RUN OPTION...] -- GUEST [ARG...]
#   vmb_need_rows "$out/fio.csv"
#   vmb_command "make bench-fio" "${opts[@]}"
#   vmb_meta "$kernel" <<JSON              the workload's meta.json lines
#     "runs": $runs,                       (each ending in a comma)
#   JSON
#   python3 .../report.py ... ; vmb_done
#
# What each function reads and sets (plain shell variables of the run.sh):
#
# vmb_setup WHAT       need_root, then scripts/setup.sh. Sets vmb_what (WHAT,
#                      e.g. "the fio benchmark"), which vmb_boot's error names.
# vmb_arch_check      dies unless vmb_arch (an --arch option) is x86_64 or
#                      arm64 and vmb_pages (--pages) empty for x86_64, 16K
#                      or 4K for arm64 (set to 16K when empty).
# vmb_kernel [DIR]     the guest kernel: the build dir DIR (a --kernel option)
#                      or, when DIR is empty, the lean guest kernel that
#                      scripts/build-guest.sh builds or finds up to date.
#                      Sets kernel; dies without DIR/arch/x86/boot/bzImage.
#                      With vmb_arch=arm64 (and vmb_pages=4K or 16K) the
#                      arm64 guest kernel (DIR/arch/arm64/boot/Image) and
#                      its root file system (scripts/arm64-root.sh, made
#                      once with that kernel).
# vmb_page_size        the page size of $kernel's build (16384 for an arm64
#                      kernel with 16 KiB pages, else 4096): meta.json's
#                      "page_size".
# vmb_stock_kernel     Debian's unmodified 6.12 kernel and afmalloc.ko built
#                      against its headers (scripts/stock-kernel.sh installs
#                      and builds what is missing). Sets kernel (the image in
#                      /boot) and STOCK_KVER, STOCK_KERNEL, STOCK_MODULE,
#                      STOCK_KUNIT_DIR, STOCK_KUNIT_CONFIG.
# vmb_out NAME [FILE...]  the results folder. Reads out (--out DIR; when
#                      empty $AFMALLOC_CACHE/results/NAME-<UTC date>). Makes
#                      it, sets out to its absolute path and removes the FILEs
#                      (names or globs inside it) an earlier run left.
#                      guest.log and console.log are rewritten by vmb_boot.
# vmb_boot TIMEOUT MESSAGE [VM-RUN OPTION...] -- GUEST [ARG...]
#                      logs MESSAGE and the host's load, then boots ONE guest:
#                      scripts/vm-run.sh --kernel $kernel --memory $memory
#                      --cpus $cpus --arch $vmb_arch (x86_64 unless set)
#                      --rwdir $out --timeout TIMEOUT
#                      --log $out/console.log [OPTION...] -- GUEST ARG...
#                      (the guest console always kept in console.log), the
#                      guest's output shown and kept in $out/guest.log. Dies,
#                      naming both logs, unless GUEST exits 0. Reads kernel,
#                      memory, cpus, out, vmb_what. Sets t0 ($SECONDS at the
#                      boot), load_start, load_end (the host's 1-minute load
#                      average before and after: the host is shared, and under
#                      TCG the guest's speed follows it), loadavg_start,
#                      loadavg_end (the 1, 5 and 15-minute averages).
# vmb_need_rows FILE   dies unless the CSV FILE has a row below its header.
# vmb_positive VAR...  dies unless every named variable holds a positive whole
#                      number; the message names the option (--VAR, _ as -).
# vmb_speed_meta SIZES N  meta.json lines of a speed run: N objects a
#                      thread in MiB (N times the mean of the size histogram
#                      SIZES) and the host's L2 and L3 sizes (lscpu).
# vmb_speed_due APPEND  the rows afm_speed gives a run and thread count for
#                      the allocators and operations afm_speed.allocs and
#                      afm_speed.ops in APPEND pick (a bit each; default all):
#                      sets sp_rows (zsmalloc's map operations, each
#                      afmalloc store's four) and sp_held (a memory row after
#                      each fill and allocating operation); dies when they
#                      pick nothing.
# vmb_command DEFAULT [OPT...]  sets cmd, meta.json's "command": DEFAULT
#                      (e.g. the make target that runs the defaults) without
#                      OPTs, else this run.sh's path in the checkout and the
#                      OPTs ("--runs 3": each option with its value).
# vmb_meta KDIR        writes $out/meta.json: "{", meta_kernel_fields KDIR
#                      (scripts/common.sh; nothing when KDIR is '', for a
#                      workload that writes its own kernel lines), the
#                      workload's lines from stdin (each ending in a comma),
#                      meta_host_fields, "}"; dies if that is not valid JSON.
#                      Reads out, load_start, load_end, t0, cmd.
# vmb_done             logs where the results are and the seconds since t0.

vmb_setup() {
	vmb_what=$1
	need_root "$vmb_what (it boots a VM)"
	"$AFMALLOC_TOP/scripts/setup.sh"
}

vmb_arch_check() {
	case "$vmb_arch" in
	x86_64) [ -z "$vmb_pages" ] || die "--pages is for --arch arm64 (x86_64 has 4 KiB pages)" ;;
	arm64) case "${vmb_pages:=16K}" in 16K|4K) ;; *) die "--pages must be 16K or 4K, not '$vmb_pages'" ;; esac ;;
	*) die "--arch must be x86_64 or arm64, not '$vmb_arch'" ;;
	esac
}

vmb_kernel() {
	local image=arch/x86/boot/bzImage bargs=()
	kernel=${1:-}
	if [ "${vmb_arch:-x86_64}" != x86_64 ]; then
		image=arch/arm64/boot/Image
		bargs=(--arch "$vmb_arch" --pages "${vmb_pages:-16K}")
	fi
	[ -n "$kernel" ] || kernel=$("$AFMALLOC_TOP/scripts/build-guest.sh" "${bargs[@]}")
	[ -f "$kernel/$image" ] || die "no kernel image in $kernel"
	[ "${vmb_arch:-x86_64}" = x86_64 ] || "$AFMALLOC_TOP/scripts/arm64-root.sh" --kernel "$kernel" >/dev/null
}

vmb_page_size() {
	if grep -q '^CONFIG_ARM64_16K_PAGES=y' "$kernel/.config"; then echo 16384; else echo 4096; fi
}

vmb_stock_kernel() {
	local vars
	vars=$("$AFMALLOC_TOP/scripts/stock-kernel.sh")
	eval "$vars"
	kernel=$STOCK_KERNEL
}

vmb_out() {
	local name=$1 f
	shift
	[ -n "${out:-}" ] || out=$AFMALLOC_CACHE/results/$name-$(date -u +%Y%m%dT%H%M%SZ)
	mkdir -p "$out"
	out=$(realpath "$out")
	for f in "$@"; do
		# shellcheck disable=SC2086 # FILE may be a glob
		rm -rf "${out:?}"/$f
	done
}

vmb_boot() {
	local timeout_s=$1 msg=$2 rc
	shift 2
	loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)
	load_start=${loadavg_start%% *}
	log "$msg (host load $load_start)"
	t0=$SECONDS
	set +e
	"$AFMALLOC_TOP/scripts/vm-run.sh" --kernel "$kernel" --memory "$memory" --cpus "$cpus" \
		--arch "${vmb_arch:-x86_64}" --rwdir "$out" --timeout "$timeout_s" \
		--log "$out/console.log" "$@" 2>&1 |
		tee "$out/guest.log"
	rc=${PIPESTATUS[0]}
	set -e
	[ "$rc" -eq 0 ] || die "$vmb_what failed in the guest (status $rc; its output: $out/guest.log, the guest console: $out/console.log)"
	loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)
	load_end=${loadavg_end%% *}
}

vmb_need_rows() {
	if [ ! -f "$1" ] || [ "$(wc -l < "$1")" -lt 2 ]; then
		die "no rows in $1 after the guest run"
	fi
}

vmb_positive() {
	local v
	for v in "$@"; do
		[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive number, not '${!v}'"
	done
}

vmb_speed_meta() {
	printf '  "working_set_mib": %s,\n' "$(awk -F, -v n="$2" \
		'$1 ~ /^[0-9]/ { c += $3; s += ($1 + $2) / 2 * $3 }
		 END { printf "%.1f", n * s / c / 1048576 }' "$1")"
	printf '  "host_l2": "%s",\n  "host_l3": "%s",\n' \
		"$(lscpu | sed -n 's/^L2 cache:[[:space:]]*//p')" \
		"$(lscpu | sed -n 's/^L3 cache:[[:space:]]*//p')"
}

vmb_speed_due() {
	local mask opm nzs nafm hzs hafm
	mask=$(sed -n 's/.*afm_speed\.allocs=\([0-9]*\).*/\1/p' <<< "$1")
	mask=${mask:-7}
	opm=$(sed -n 's/.*afm_speed\.ops=\([0-9]*\).*/\1/p' <<< "$1")
	opm=${opm:-15}
	nzs=$(((opm & 1) + (opm >> 2 & 1)))
	nafm=$(((opm & 1) + (opm >> 1 & 1) + (opm >> 2 & 1) + (opm >> 3 & 1)))
	hzs=$((1 + (opm & 1)))
	hafm=$((1 + (opm & 1) + (opm >> 1 & 1)))
	sp_rows=$((nzs * (mask & 1) + nafm * (mask >> 1 & 1) + nafm * (mask >> 2 & 1)))
	sp_held=$((hzs * (mask & 1) + hafm * (mask >> 1 & 1) + hafm * (mask >> 2 & 1)))
	[ "$sp_rows" -gt 0 ] || die "afm_speed.allocs=$mask and afm_speed.ops=$opm select nothing"
}

vmb_command() {
	cmd=$1
	shift
	[ $# -eq 0 ] || cmd="$(realpath --relative-to="$AFMALLOC_TOP" "$0") $*"
}

vmb_meta() {
	{ echo "{"
	  [ -z "$1" ] || meta_kernel_fields "$1" "$out/guest.log"
	  cat
	  meta_host_fields "$load_start" "$load_end" "$t0"
	  echo "}"; } > "$out/meta.json"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$out/meta.json" ||
		die "$out/meta.json is not valid JSON"
}

vmb_done() {
	log "results in $out ($((SECONDS - t0)) s)"
}
