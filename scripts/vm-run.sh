#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot a built kernel with virtme-ng (QEMU), the host root file system shared
# read-only over 9p, run SCRIPT [ARGS...] inside as root, print its output and
# exit with its status. With --arch arm64 the kernel is an arm64 one
# (scripts/build-guest.sh --arch arm64), always emulated (TCG, QEMU's virt
# machine, its most capable CPU model: 16 KiB pages need it), and the root is
# an arm64 one of our own (--root, scripts/arm64-root.sh), shared read-write
# (virtme-ng makes the mount points of the shared folders in it); this
# checkout, the script's folder and the --rodir folders are shared
# read-only, at the same paths as on the host. The status travels through a file in a shared
# writable folder, so it does not depend on virtme-ng's script I/O ports.
#
# Accelerator: with --accel auto (default), a bounded probe boots the kernel
# once under KVM; if /dev/kvm is missing or the guest does not answer in
# time (nested KVM hangs on these machines) the run uses TCG. The choice is
# cached per host boot and printed as "[afmalloc] accelerator: kvm|tcg".
#
# After the script, the kernel log is searched for splats (BUG, WARNING,
# Oops, KASAN, lockdep, kmemleak reports after a forced scan, hung tasks,
# RCU stalls); any splat fails the run with status 99 and is printed.
#
# Every run keeps its guest console in a file (--log, default
# $AFMALLOC_CACHE/vm/logs/DATE-SCRIPT.log): the kernel log as the serial
# console printed it (so an OOM kill or a panic that ends the guest is in
# it) interleaved with the script's output, then the guest's dmesg if the
# guest lived to the end. The terminal shows the script's output (all of
# the console with --console); on failure, the console's last lines, then
# the first kernel splat in it from its first line, then a short summary
# (the splat's first, CPU and RIP lines, clocksource changes), then the
# lines in which the script said FAIL: a CI log that keeps only the end of
# the output still says what happened. A KUnit case's expected warning
# (inside its bracket) is not taken for the first splat.
#
# A guest that dies before the script starts (no "guest up" line: in the
# kernel's boot or in early user space, before any test ran) is booted once
# more (--boot-retries, default 1); the failed boot's console is kept beside
# the log (NAME-boot1.log) and its summary printed with a warning. So is a
# guest that hangs there: a boot whose "guest up" line has not come
# --boot-deadline seconds after it began is stopped (seen under TCG with
# QEMU 10.0: the console silent after the kernel's PCI setup, QEMU idle,
# until the benchmark's four-hour timeout). A guest that dies once the
# script runs is never booted again.
#
# Exit status: the script's (99 if it passed but dmesg has a splat); 124 if
# the VM timed out; 125 if the VM died before the script reported a status.
# The whole script is one block, parsed before it runs: a benchmark keeps
# this script running for half an hour, and bash would otherwise read an
# edit of the file made meanwhile from the middle of a line.
{
. "$(dirname "$0")/common.sh"

usage() {
	cat <<USAGE
usage: $0 [options] SCRIPT [ARGS...]
  --kernel PATH     bzImage (Image with --arch arm64), or a build dir holding
                    arch/x86/boot/bzImage (arch/arm64/boot/Image)
                    (default: $AFMALLOC_BUILD/guest; guest-arm64 with --arch arm64)
  --arch ARCH       x86_64 (default) or arm64
  --root DIR        arm64's root file system (default: scripts/arm64-root.sh's)
  --rodir DIR       host folder readable from an arm64 guest (repeatable;
                    an x86_64 guest sees the whole host read-only)
  --memory SIZE     guest memory, e.g. 4G (default 2G)
  --cpus N          guest CPUs (default 2)
  --append ARGS     extra kernel command line (repeatable)
  --rwdir DIR       host folder writable from the guest (repeatable)
  --timeout SEC     stop the VM after SEC seconds (default 1800)
  --accel MODE      auto | kvm | tcg (default auto, or \$AFMALLOC_ACCEL)
  --console         also show the kernel console on the terminal
  --log FILE        keep the guest console here (default: a new file in
                    \$AFMALLOC_CACHE/vm/logs, printed at the start)
  --no-dmesg-check  do not fail the run on kernel splats in dmesg
  --boot-retries N  boot again up to N times when the guest dies before the
                    script starts (default 1)
  --boot-deadline SEC  stop a boot that has not started the script SEC
                    seconds after it began, so that it counts as a boot that
                    died (default 900: under TCG the guest's output can
                    reach the host minutes late; 0: never)
USAGE
}

kernel='' memory=2G cpus=2 timeout_s=1800
accel=${AFMALLOC_ACCEL:-auto} console=0 dmesg_check=1 boot_retries=1
boot_deadline=900 arch=x86_64 root=''
append=() rwdirs=() rodirs=() logf=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=${2:?--kernel needs a path}; shift ;;
	--memory) memory=${2:?--memory needs a size}; shift ;;
	--cpus) cpus=${2:?--cpus needs a number}; shift ;;
	--append) append+=("${2:?--append needs arguments}"); shift ;;
	--rwdir) rwdirs+=("${2:?--rwdir needs a folder}"); shift ;;
	--rodir) rodirs+=("${2:?--rodir needs a folder}"); shift ;;
	--arch) arch=${2:?--arch needs x86_64 or arm64}; shift ;;
	--root) root=${2:?--root needs a folder}; shift ;;
	--timeout) timeout_s=${2:?--timeout needs seconds}; shift ;;
	--accel) accel=${2:?--accel needs auto, kvm or tcg}; shift ;;
	--console) console=1 ;;
	--log) logf=${2:?--log needs a file}; shift ;;
	--no-dmesg-check) dmesg_check=0 ;;
	--boot-retries) boot_retries=${2:?--boot-retries needs a number}; shift ;;
	--boot-deadline) boot_deadline=${2:?--boot-deadline needs seconds}; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-*) usage >&2; die "unknown option '$1'" ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || { usage >&2; die "no script to run"; }
case "$arch" in x86_64|arm64) ;; *) die "--arch must be x86_64 or arm64, not '$arch'" ;; esac
[ "$arch" = x86_64 ] || [ "$accel" != kvm ] ||
	die "--accel kvm: an arm64 guest on this host is always emulated (TCG)"
need_root "booting a VM with the host root file system"
case "$accel" in auto|kvm|tcg) ;; *) die "--accel must be auto, kvm or tcg, not '$accel'" ;; esac
[[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "--cpus must be a positive number, not '$cpus'"
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"
[[ "$boot_retries" =~ ^[0-9]+$ ]] || die "--boot-retries must be a number, not '$boot_retries'"
[[ "$boot_deadline" =~ ^[0-9]+$ ]] || die "--boot-deadline must be a number of seconds, not '$boot_deadline'"
[[ "$memory" =~ ^[1-9][0-9]*[MG]?$ ]] || die "--memory must look like 2G or 512M, not '$memory'"
case "$arch" in
x86_64) kernel=${kernel:-$AFMALLOC_BUILD/guest}; image=arch/x86/boot/bzImage
	qemu="qemu-system-x86_64" ;;
arm64) kernel=${kernel:-$AFMALLOC_BUILD/guest-arm64}; image=arch/arm64/boot/Image
	qemu="qemu-system-aarch64"
	accel=tcg
	[ -n "$root" ] || root=$("$AFMALLOC_TOP/scripts/arm64-root.sh")
	[ -x "$root/bin/bash" ] || die "no arm64 root at $root (scripts/arm64-root.sh makes it)" ;;
*) die "--arch must be x86_64 or arm64, not '$arch'" ;;
esac
[ -d "$kernel" ] && kernel=$kernel/$image
[ -f "$kernel" ] || die "no kernel image at $kernel (build one with scripts/build-guest.sh$([ "$arch" = x86_64 ] || echo " --arch $arch"))"
script=$1; shift
[ -f "$script" ] || die "script $script not found"
script=$(realpath "$script")

vng=$AFMALLOC_VENV/bin/vng
[ -x "$vng" ] || "$AFMALLOC_TOP/scripts/setup.sh"
[ "$arch" = x86_64 ] || qemu_install qemu-system-arm
command -v "$qemu" >/dev/null || die "$qemu missing (scripts/setup.sh)"

# share DIR: how vng names a host folder shared at the same path: DIR
# itself, or GUEST=HOST with an arm64 root (a bare path names a folder
# inside that root).
share() {
	if [ "$arch" = x86_64 ]; then echo "$1"; else echo "$1=$1"; fi
}

# run_vng ACCEL TIMEOUT EXTRA_VNG_ARGS... -- exec string
run_vng() {
	local a=$1 t=$2; shift 2
	local args=(--run "$kernel" --force-9p --memory "$memory" --cpus "$cpus") d
	[ "$a" = tcg ] && args+=(--disable-kvm)
	if [ "$arch" = arm64 ]; then
		args+=(--arch arm64 --root "$root" --rw "--qemu-opts=-cpu max,pauth-impdef=on"
		       --rodir "$(share "$AFMALLOC_TOP")" --rodir "$(share "$(dirname "$script")")")
		for d in "${rodirs[@]}"; do args+=(--rodir "$(share "$d")"); done
	fi
	# Through a pipe: QEMU reopens its stdout, which on a regular file
	# would write from offset 0 over what came before.
	# PYTHONUNBUFFERED: vng's own lines reach the log as they come (a
	# pipe would make Python buffer them). QEMU writes the guest's
	# console and the script's output to the pipe itself (file chardevs).
	PATH=$AFMALLOC_VENV/bin:$PATH PYTHONUNBUFFERED=1 \
		timeout --kill-after=15 "$t" "$vng" "${args[@]}" "$@" </dev/null 2>&1 | cat
	return "${PIPESTATUS[0]}"
}

# show_guest LOG: copy the guest's output (stdin) into LOG and show the
# terminal the script's lines: none of the boot (up to inner.sh's "guest
# up" line; on failure the log's tail is printed anyway) and, after it,
# none of the kernel's (printk.time=1 marks those "[ seconds.micros]").
# With --console the terminal gets every line.
show_guest() {
	awk -v logfile="$1" -v all="$console" '
		{ print >> logfile; fflush(logfile) }
		/^\[afmalloc\] guest up in / { up = 1 }
		all || (up && !/^\[ *[0-9]+\.[0-9]+\] /) { print; fflush() }'
}

probe_accel() {
	local cache=$AFMALLOC_CACHE/accel boot
	boot=$(cat /proc/sys/kernel/random/boot_id)
	if [ -f "$cache" ] && [ "$(cut -d' ' -f1 "$cache")" = "$boot" ]; then
		case $(cut -d' ' -f2 "$cache") in
		kvm|tcg) cut -d' ' -f2 "$cache"; return ;;
		esac
	fi
	local got=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		log "probing KVM (a guest must answer within 60 s)"
		if run_vng kvm 60 --exec 'echo afmalloc-kvm-probe-ok' 2>/dev/null |
			grep -q afmalloc-kvm-probe-ok; then
			got=kvm
		else
			log "KVM guest did not answer: falling back to TCG"
		fi
	else
		log "/dev/kvm not usable: using TCG"
	fi
	mkdir -p "$AFMALLOC_CACHE"
	# Whole or not at all: a half-written cache would read as KVM.
	echo "$boot $got" > "$cache.$$" && mv "$cache.$$" "$cache"
	echo "$got"
}

accel_probed=0
if [ "$accel" = auto ]; then
	accel=$(probe_accel)
	accel_probed=1
fi
log "accelerator: $accel"
if [ -z "$logf" ]; then
	mkdir -p "$AFMALLOC_CACHE/vm/logs"
	# Keep the newest 200 logs.
	find "$AFMALLOC_CACHE/vm/logs" -maxdepth 1 -name '*.log' -printf '%T@ %p\n' |
		sort -rn | tail -n +200 | cut -d' ' -f2- | xargs -r rm -f
	logf=$AFMALLOC_CACHE/vm/logs/$(date -u +%Y%m%dT%H%M%SZ)-$(basename "$script" .sh)-$$.log
fi
mkdir -p "$(dirname "$logf")"
logf=$(realpath "$logf")
log "guest console log: $logf"
# start_log WHAT: a new console log, headed by WHAT and the VM's shape.
start_log() {
	{ echo "[afmalloc] $(date -u +%Y-%m-%dT%H:%M:%SZ) vm-run: $1"
	  echo "[afmalloc] kernel $kernel, accelerator $accel, memory $memory, cpus $cpus${root:+, root $root}"
	  echo "[afmalloc] emulator: $qemu_version"; } > "$logf"
}
qemu_version=$("$qemu" --version 2>/dev/null | head -n 1 |
	sed 's/^QEMU emulator version //')
qemu_version=${qemu_version:-unknown}
log "emulator: $qemu_version"
# Under TCG, QEMU before 8.0 miscomputes the flags after cmpxchg16b
# (scripts/common.sh, QEMU_MIN): say so where a run's failure will be read.
if [ "$arch" = x86_64 ] && [ "$accel" = tcg ] && ! qemu_ok; then
	log "WARNING: qemu-system-x86 older than $QEMU_MIN under TCG: the guest may see wrong flags after cmpxchg16b (tests/vm/cx16-flags.c); scripts/setup.sh installs a newer one"
fi
start_log "$script $*"
# guest_up LOG: whether the script started in the guest (inner.sh's line).
guest_up() {
	awk '/^\[afmalloc\] guest up in / { f = 1; exit } END { exit !f }' "$1"
}

# What counts as a kernel splat in dmesg.
AFMALLOC_SPLAT_RE='(^|[] ])(BUG:|WARNING:|Oops|general protection fault|KASAN:|UBSAN:|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|rcu: INFO|kmemleak: unreferenced|list_add corruption|list_del corruption|kernel BUG at)'
mkdir -p "$AFMALLOC_CACHE/vm"
run=$(mktemp -d "$AFMALLOC_CACHE/vm/run.XXXXXX")
# If this script is stopped (Ctrl-C, kill, a CI timeout), stop its VM too:
# timeout(1) runs vng in a process group of its own, out of reach of a
# signal sent to ours. timeout, vng and virtme-run have the run folder's
# inner.sh in their command lines; timeout passes the signal on to QEMU.
vm_running=0
trap '[ "$vm_running" = 0 ] || pkill -TERM -f -- "$run/inner.sh"; rm -rf "$run"' EXIT
trap 'exit 143' TERM HUP
trap 'exit 130' INT
cmd=$(printf '%q ' "$script" "$@")
# The guest's own watchdog (inner.sh): a sixth of the timeout (at least 2
# minutes) before it, or none for runs of under 4 minutes. Not closer: the
# guest's output can reach the host minutes late (seen under TCG: the
# console and the script's lines stood still for 7 to 10 minutes, then came
# in one burst), and what QEMU has not passed on when it is killed is lost.
watchdog_s=0
if [ "$timeout_s" -ge 240 ]; then
	watchdog_s=$((timeout_s / 6))
	[ "$watchdog_s" -ge 120 ] || watchdog_s=120
	watchdog_s=$((timeout_s - watchdog_s))
fi
cat > "$run/inner.sh" <<INNER
#!/bin/bash
export AFMALLOC_IN_VM=1 AFMALLOC_ACCEL=$accel
export AFMALLOC_SPLAT_RE=$(printf '%q' "$AFMALLOC_SPLAT_RE")
cd $(printf '%q' "$PWD") 2>/dev/null || cd /
# The script's stderr goes where its stdout goes (the host keeps both).
exec 2>&1
echo "[afmalloc] guest up in \$(cut -d' ' -f1 /proc/uptime) s (\$(uname -r))"
# A hang must leave a trace: $watchdog_s s in (before the host's
# timeout stops the VM), every process's state and what every CPU, every
# task and every held lock is doing go to the console, which the host keeps.
if [ $watchdog_s -gt 0 ]; then
	( sleep $watchdog_s
	  echo "[afmalloc] watchdog: still running \$SECONDS s in; processes, then sysrq l (CPUs), d (locks held), t (tasks), m (memory):"
	  ps -eo pid,ppid,stat,etime,time,wchan:32,args 2>&1 | head -n 120
	  echo 1 > /proc/sys/kernel/sysrq 2>/dev/null
	  for k in l d t m; do echo \$k > /proc/sysrq-trigger 2>/dev/null; sleep 2; done ) &
fi
bash $cmd
rc=\$?
if [ $dmesg_check = 1 ]; then
	if [ -w /sys/kernel/debug/kmemleak ]; then
		t0=\$SECONDS
		echo scan > /sys/kernel/debug/kmemleak; sleep 1
		echo scan > /sys/kernel/debug/kmemleak
		cat /sys/kernel/debug/kmemleak > /tmp/afm-kmemleak 2>/dev/null
		[ -s /tmp/afm-kmemleak ] && { head -n 40 /tmp/afm-kmemleak; echo "kmemleak: unreferenced objects" | tee /dev/kmsg; }
		echo "[afmalloc] kmemleak: two scans in \$((SECONDS - t0)) s, \$(grep -c '^unreferenced object' /tmp/afm-kmemleak) unreferenced objects"
	fi
	if dmesg | grep -E -m 20 -B 2 -A 25 $(printf '%q' "$AFMALLOC_SPLAT_RE"); then
		echo "[afmalloc] kernel splat in dmesg (above)" >&2
		[ \$rc -eq 0 ] && rc=99
	fi
fi
dmesg > $run/dmesg 2>/dev/null
echo \$rc > $run/rc
sync
exit \$rc
INNER
# --verbose: the kernel console on vng's stderr, kept in the log.
vargs=(--verbose --rwdir "$(share "$run")" --append printk.time=1)
for d in "${rwdirs[@]}"; do vargs+=(--rwdir "$(share "$(realpath "$d")")"); done
# Under TCG on a busy 2-core host a vCPU can be starved for longer than
# RCU's default 21 s stall timeout while it runs guest code correctly (seen:
# a stall report inside LZ4_decompress_safe while two other guests ran).
# Give emulation the maximum, 300 s; a real hang still trips it, and every
# test has its own timeout.
[ "$accel" = tcg ] && vargs+=(--append "rcupdate.rcu_cpu_stall_timeout=300")
# Under TCG the guest's TSC is the host's (invariant, the same on every
# vCPU), but the clocksource watchdog checks it against an emulated HPET or
# ACPI PM timer that lags while the host is loaded, and marks it unstable
# (seen 200 s into a churn benchmark's boot): the guest then reads time from
# the HPET, slower by far, for the rest of the boot (a benchmark's later
# runs timed on another clock), and the sched_clock switch patches kernel
# text, which once ended a guest in an int3 Oops in sched_clock_cpu().
# tsc=reliable keeps the TSC and skips the watchdog.
[ "$accel" = tcg ] && [ "$arch" = x86_64 ] && vargs+=(--append "tsc=reliable")
# x86_64's is built in (scripts/config/guest-x86_64.config).
[ "$arch" = x86_64 ] || vargs+=(--append "watchdog_thresh=60")
for a in "${append[@]}"; do vargs+=(--append "$a"); done

# splat_summary LOG: the first kernel splat in LOG from its first line (5
# lines of context before it, 45 after), then a short summary of it: a CI
# page that shows only the end of the output still names the failure.
splat_summary() {
	local f=$1 n
	# awk on the file, no pipes: this runs under errexit and pipefail, where
	# a grep that finds nothing, or one that stops early, would end the script.
	# An afmalloc WARNING inside a KUnit case's expected-warnings bracket
	# (kunit/afm_test.h) is what that case tests, not a failure: skipped,
	# as tests/vm/kunit-guest.sh allows it.
	n=$(awk -v re="$AFMALLOC_SPLAT_RE|Kernel panic|double fault" '
		/afmalloc-kunit: expected warnings begin/ { inside = 1; next }
		/afmalloc-kunit: expected warnings end/ { inside = 0; next }
		inside && /WARNING: .* at mm\/afmalloc\// { next }
		$0 ~ re { print NR; exit }' "$f")
	if [ -z "$n" ]; then
		echo "[afmalloc] no kernel splat in the guest console ($f)"
	else
		echo "[afmalloc] ---- first kernel splat in the guest console ($f, line $n) ----"
		awk -v n="$n" 'NR >= n - 5 && NR <= n + 45' "$f"
		echo "[afmalloc] ---- summary of that splat ----"
		awk -v n="$n" 'NR == n { print "[afmalloc] first: " $0 }
			NR > n && !c && / CPU: / { print "[afmalloc] " $0; c = 1 }
			NR > n && !r && / RIP: / { print "[afmalloc] " $0; r = 1 }' "$f"
	fi
	awk '/clocksource: .*(unstable|Switched)|sched_clock: Marking|tsc: Marking|TSC synchronization/ {
		l[++k] = $0 } END { for (i = (k > 3 ? k - 2 : 1); i <= k; i++) print "[afmalloc] clock: " l[i] }' "$f"
	if guest_up "$f"; then
		echo "[afmalloc] the script had started (its \"guest up\" line is in the console)"
	else
		echo "[afmalloc] the guest died before the script started (no \"guest up\" line)"
	fi
}

# script_failures LOG: the lines in which the script (a test suite) said
# what failed ("FAIL" in capitals: debug-suite's summary, kunit-guest's and
# each test's own failure lines), the last 20, so that the end of the
# output names the failing test, not only the kernel's first splat.
script_failures() {
	local f=$1
	awk '/FAIL/ && !/^\[afmalloc\] (first|----)/ { l[++k] = $0 }
		END {
			if (!k) { print "[afmalloc] no line of the script says FAIL"; exit }
			print "[afmalloc] ---- the script'"'"'s FAIL lines (last 20 of " k ") ----"
			for (i = (k > 20 ? k - 19 : 1); i <= k; i++) print "[afmalloc] " l[i]
		}' "$f"
}

# boot_watch: stop this boot (as the EXIT trap stops the VM) if its
# "guest up" line is not in the console --boot-deadline seconds after it
# began; pointless when the timeout comes first.
boot_watch() {
	local waited=0
	[ "$boot_deadline" -gt 0 ] && [ "$boot_deadline" -lt "$timeout_s" ] || return 0
	while [ "$waited" -lt "$boot_deadline" ]; do
		sleep 1
		waited=$((waited + 1))
		guest_up "$logf" && return 0
	done
	echo "[afmalloc] vm-run: no \"guest up\" line $boot_deadline s after the boot began: stopping it" >> "$logf"
	pkill -TERM -f -- "$run/inner.sh"
}

set +e
boot=1
while :; do
	rm -f "$run/rc" "$run/dmesg"
	boot_watch &
	watch_pid=$!
	# In the background: bash runs a trap only once the foreground
	# command ends, but interrupts a wait.
	vm_running=1
	run_vng "$accel" "$timeout_s" "${vargs[@]}" --exec "bash $run/inner.sh" | show_guest "$logf" &
	wait $!
	vrc=$?
	vm_running=0
	kill "$watch_pid" 2>/dev/null
	wait "$watch_pid" 2>/dev/null
	[ ! -f "$run/rc" ] && [ $vrc -ne 124 ] && [ $vrc -ne 137 ] &&
		[ "$boot" -le "$boot_retries" ] &&
		! guest_up "$logf" || break
	# Died before the script started: keep that console, boot again.
	failed=${logf%.log}-boot$boot.log
	mv "$logf" "$failed"
	echo "[afmalloc] vm-run: boot $boot ended (status $vrc) before the script started; its console: $failed" >> "$failed"
	{ echo "[afmalloc] ---- last 30 lines of the guest console ($failed) ----"
	  tail -n 30 "$failed"
	  splat_summary "$failed"; } >&2
	log "WARNING: boot $boot of the guest ended (status $vrc) before the script started (above); booting again"
	# A KVM that answered the probe but hangs a real boot (nested KVM
	# does): the next boots, and the next runs of this host boot, go
	# under TCG. Not when KVM was asked for.
	if [ "$accel" = kvm ] && [ "$accel_probed" = 1 ]; then
		accel=tcg
		echo "$(cat /proc/sys/kernel/random/boot_id) tcg" > "$AFMALLOC_CACHE/accel.$$" &&
			mv "$AFMALLOC_CACHE/accel.$$" "$AFMALLOC_CACHE/accel"
		log "the KVM boot did not come up: booting under TCG from now on (accelerator: tcg)"
	fi
	start_log "boot $((boot + 1)): boot $boot died before the script started; its console: $failed"
	boot=$((boot + 1))
done
set -e
# done RC MESSAGE: on failure say what happened and show the end of the
# console, its first splat and a summary; then keep the guest's dmesg (if
# it got that far) in the log.
done_run() {
	if [ "$1" != 0 ]; then
		{ echo "[afmalloc] ---- last 60 lines of the guest console ($logf) ----"
		  tail -n 60 "$logf"
		  echo "[afmalloc] ---- end of the guest console tail ----"
		  splat_summary "$logf" || true
		  script_failures "$logf"; } >&2
		log "$2"
	fi
	if [ -s "$run/dmesg" ]; then
		{ echo "[afmalloc] ---- guest dmesg at the end of the run ----"; cat "$run/dmesg"; } >> "$logf"
	fi
	echo "[afmalloc] vm-run: status $1" >> "$logf"
	exit "$1"
}
if [ -f "$run/rc" ]; then
	rc=$(cat "$run/rc")
	done_run "$rc" "the script failed in the guest (status $rc)"
elif [ $vrc -eq 124 ] || [ $vrc -eq 137 ]; then
	done_run 124 "VM timed out after ${timeout_s}s"
fi
done_run 125 "VM ended (status $vrc) before the script reported a status"
}
