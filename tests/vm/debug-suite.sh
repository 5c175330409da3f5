#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The in-VM tests of `make check`, in ONE boot of the debug guest kernel
# (scripts/build-guest.sh --debug: lockdep, DEBUG_VM, DEBUG_LIST, kmemleak,
# fault injection; --kasan, for make vm-test-kasan: the same and KASAN,
# which this script's --kasan then requires), run as root inside it by
# scripts/vm-run.sh, which then fails the run on any splat in dmesg and
# scans for leaks.
# Under TCG the debug kernel boots and scans memory for leaks in minutes,
# so the tests share one boot instead of paying that once each:
#
#   1. tests/vm/kunit-guest.sh   the KUnit suites (stress, destroy vs
#                                shrinker) beside compact_memory and
#                                drop_caches loops
#   2. tests/vm/zram-integrity.sh  ext4 on zram on afmalloc/zspage
#   3. tests/vm/fault-inject.sh  failslab + fail_page_alloc, afmalloc/zspage
#                                and zswap on afmalloc
#   4. tests/vm/bad-input.sh     the bad-input matrix
#   5. tests/vm/zswap-test.sh    zswap on afmalloc (built in), 32 MiB
#                                working set in an 8 MiB cgroup (the same
#                                4:1 as the lean kernel's 64 in 16; half
#                                the time: 568 s of 1960 under TCG)
#   6. tests/vm/churn-short.sh   swap churn (issue 15's workload, short)
#                                on zram, afmalloc/zspage: every page read
#                                back checked, then on zswap, both
#                                with zspage_contig=N (objects that cross
#                                a page are read through the per-CPU
#                                buffer CPU hotplug frees and makes), while
#                                CPU 1 goes offline and back over and over
#                                (--hotplug)
#   7. tests/vm/zswap-zero-race.sh  pages rewritten with zeros under zswap
#                                writeback, zsmalloc and afmalloc/zspage
#                                (slab: make vm-test-zero-race): the
#                                kernel fix in patches/0006
#
# Every test runs even if an earlier one failed; the exit status is 1 if
# any failed. Between tests every zram device is reset and zram's default
# allocator put back, so that no test inherits another's state.
#
# Skips: a test exits 77 when nothing failed but something it was asked
# to test could not run (printed by the test as "SKIP: ..."). This suite
# runs on the project's own debug kernel, which has everything each test
# needs (afmalloc built in, the zram patches, KUnit modules, fault
# injection, zswap), so every step here is mandatory: a skip is shown as
# "SKIPPED" in the summary and fails the suite like a failure. The steps
# and why each must run here:
#   kunit           every KUnit case (a skipped case is untested code)
#   zram-integrity  afmalloc/zspage must create a pool and hold the data
#   fault-inject    the failure paths of afmalloc/zspage and of zswap
#   bad-input       zram's allocator selection and afmalloc's parameters
#   zswap           afmalloc as zswap's zpool, both stores
#   churn           swap churn on zram, across the pool's shards
#   zero-race       zswap's stale entries behind zero-filled pages (0006)
# (Only tests/vm/zswap-stock.sh on Debian's kernel may skip what that
# kernel cannot do, e.g. KUnit without CONFIG_KUNIT; it prints the skip.)
#
#   tests/vm/debug-suite.sh --kunit-dir DIR --dataset TAR --zswap-load BIN
#                           --churn-bin BIN --zero-race-bin BIN
#                           [--stress-seconds N] [--kasan]
#                           [--only NAME[,NAME...]] [--skip NAME[,NAME...]]
#
# --only runs just the steps named, --skip all but those (make check runs
# the KUnit step in a boot of its own with 8 vCPUs, make vm-test-smp, and
# skips it here).
set -uo pipefail

here=$(dirname "$(realpath "$0")")
kdir= dataset= load= churn= zrace= stress_s=10 only= skip= kasan=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kunit-dir) kdir=${2:?}; shift ;;
	--dataset) dataset=${2:?}; shift ;;
	--zswap-load) load=${2:?}; shift ;;
	--churn-bin) churn=${2:?}; shift ;;
	--zero-race-bin) zrace=${2:?}; shift ;;
	--stress-seconds) stress_s=${2:?}; shift ;;
	--kasan) kasan=(--kasan) ;;
	--only) only=${2:?}; shift ;;
	--skip) skip=${2:?}; shift ;;
	-h|--help) sed -n '3,/^set -/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "debug-suite: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$kdir" ] && [ -f "$dataset" ] && [ -x "$load" ] && [ -x "$churn" ] && [ -x "$zrace" ] || {
	echo "debug-suite: --kunit-dir, --dataset TAR, --zswap-load BIN, --churn-bin BIN and --zero-race-bin BIN are required" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "debug-suite: must run as root (inside the guest)" >&2; exit 2; }

param=/sys/module/zram/parameters/default_allocator
default_alloc=$(cat "$param" 2>/dev/null || true)
clean_zram() {
	local d
	swapoff -a 2>/dev/null || true
	for d in /sys/block/zram*; do
		[ -e "$d/reset" ] || continue
		umount "/dev/${d##*/}" 2>/dev/null || true
		echo 1 > "$d/reset" 2>/dev/null || true
	done
	[ -z "$default_alloc" ] || echo "$default_alloc" > "$param" 2>/dev/null || true
}

# Splats a test left in the kernel log fail that test; then the log is
# cleared, so that the next test's own log checks see only its messages
# (scripts/vm-run.sh checks what the last test left, and scans for leaks).
splat_re=${AFMALLOC_SPLAT_RE:?run this through scripts/vm-run.sh, which sets the splat pattern}
check_log() {  # NAME
	if dmesg | grep -E -m 20 -B 2 -A 25 "$splat_re"; then
		echo "debug-suite: $1: kernel splat in dmesg (above)" >&2
		dmesg -C
		return 1
	fi
	dmesg -C
}

# The steps that must not skip (see above): all of them.
mandatory=",kunit,zram-integrity,fault-inject,bad-input,zswap,churn,zero-race,"
failed=() summary=() ran=0
step() {  # NAME CMD...: run one test, record its status and time
	local name=$1 t0=$SECONDS rc res
	shift
	if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then
		return 0
	fi
	if [[ ",$skip," == *",$name,"* ]]; then
		summary+=("$(printf '%-16s %4s    %s' "$name" - "not run here (--skip)")")
		return 0
	fi
	ran=$((ran + 1))
	echo "== debug-suite: $name: $*"
	"$@"
	rc=$?
	clean_zram
	check_log "$name" || { [ $rc -ne 0 ] && [ $rc -ne 77 ] || rc=99; }
	case $rc in
	0) res=pass ;;
	77)
		if [[ "$mandatory" == *",$name,"* ]]; then
			res="SKIPPED: mandatory on this kernel, counts as a failure"
			failed+=("$name(skipped)")
		else
			res="skipped (allowed)"
		fi ;;
	*) res="FAILED ($rc)"; failed+=("$name") ;;
	esac
	summary+=("$(printf '%-16s %4d s  %s' "$name" $((SECONDS - t0)) "$res")")
}

echo "debug-suite: $(uname -r), $(nproc) CPUs, $(awk '/^MemTotal:/ { print int($2 / 1024) " MB" }' /proc/meminfo)"
step kunit "$here/kunit-guest.sh" --kunit-dir "$kdir" --stress-seconds "$stress_s" "${kasan[@]}"
# The default store only where a test repeats per store: the slab store
# runs through the same tests on the lean kernel (make vm-test) and through
# the KUnit suites here; the debug kernel is too slow under TCG for both.
step zram-integrity "$here/zram-integrity.sh" --dataset "$dataset" --alloc afmalloc/zspage
step fault-inject "$here/fault-inject.sh" --alloc afmalloc/zspage
step bad-input "$here/bad-input.sh"
step zswap "$here/zswap-test.sh" --load "$load" --builtin --mb 32 --limit-mb 8
step churn "$here/churn-short.sh" --bin "$churn" --zram afmalloc/zspage+zspage_contig=N --zswap afmalloc/zspage+zspage_contig=N --hotplug
step zero-race "$here/zswap-zero-race.sh" --guest --bin "$zrace" \
	--zpool zsmalloc,afmalloc/zspage --runs 1 --events 100 --seconds 300

[ $ran -gt 0 ] || { echo "debug-suite: FAIL: --only '$only' --skip '$skip' leave no step" >&2; exit 1; }
echo "== debug-suite: summary"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "debug-suite: FAIL: ${failed[*]}" >&2
	exit 1
fi
echo "debug-suite: PASS"
