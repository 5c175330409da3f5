#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of scripts/vm-run.sh's failure handling, with virtme-ng
# and QEMU replaced by a stub that prints a scripted guest console (no VM,
# no kernel, a second):
#
#   tests/scripts/vm-run-boot.sh
#
# 1. A guest that panics in its boot (before the script's "guest up" line)
#    is booted once more; the run passes, warns, keeps the failed boot's
#    console in NAME-boot1.log and names its splat.
# 2. A guest that panics in every boot fails with status 125 after two
#    boots, and the last lines of the output name the splat (its first,
#    CPU and RIP lines) and that the script had not started.
# 3. A guest that panics once the script runs is not booted again: status
#    125 after one boot.
# 4. --boot-retries 0: a boot panic fails at once.
# 5. A guest that hangs with no splat (the host's timeout stops it): status
#    124, the output says there is no splat and ends with the timeout.
# 6. --boot-retries with a value that is not a number: refused with a
#    clear error before any boot.
# 7. A script that fails (status 1) after a KUnit case's expected warning
#    (inside its bracket) and a later real splat: the summary names the
#    real splat, not the expected one, and the output's last lines carry
#    the script's FAIL lines (the failing step's name).
# 8. A guest that hangs in its boot (no "guest up" line, no splat, QEMU
#    alive) is stopped --boot-deadline seconds in and booted once more;
#    the run passes and the failed boot's console says why it was stopped.
# 9. --boot-deadline with a value that is not a number: refused before
#    any boot.
# 10. With the accelerator probed (auto) as KVM, a boot that hangs under
#    KVM is booted again under TCG, and the probe's cache says tcg from
#    then on; with --accel kvm given, the next boot stays under KVM.
#
# Needs root (vm-run.sh refuses to run without it); skips otherwise.
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: vm-run.sh needs root"
	exit 0
fi
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
export AFMALLOC_CACHE=$t/cache AFMALLOC_VENV=$t/venv
unset AFMALLOC_ACCEL

mkdir -p "$t/venv/bin" "$t/bin" "$t/kernel"
echo "not a kernel" > "$t/kernel/bzImage"
printf '#!/bin/sh\nexit 0\n' > "$t/bin/qemu-system-x86_64"
printf 'echo hello from the script\n' > "$t/script.sh"
# The stub: boot N prints the console of the Nth word of $t/plan: "panic"
# (the kernel dies in its boot), "pass" (the script runs and passes),
# "late" (the script starts, then the kernel dies).
cat > "$t/venv/bin/vng" <<'STUB'
#!/bin/bash
t=$(dirname "$(dirname "$(dirname "$0")")")
n=$(($(cat "$t/boots" 2>/dev/null || echo 0) + 1))
echo "$n" > "$t/boots"
run= acc=kvm
while [ $# -gt 0 ]; do
	[ "$1" = --disable-kvm ] && acc=tcg
	[ "$1" = --exec ] && [ "$2" = "echo afmalloc-kvm-probe-ok" ] && {
		echo afmalloc-kvm-probe-ok; echo 0 > "$t/boots"; exit 0; }
	[ "$1" = --exec ] && { run=${2#bash }; run=$(dirname "${run%% *}"); }
	shift
done
echo "$acc" >> "$t/accels"
oops() {
	cat <<OOPS
[   24.100000] clocksource: Switched to clocksource tsc
[   24.289000] Oops: int3: 0000 [#1] PREEMPT SMP KASAN NOPTI
[   24.289100] CPU: 1 UID: 0 PID: 0 Comm: swapper/1 Not tainted 6.12.57 #1
[   24.289200] RIP: 0010:sched_clock_tick+0x1/0x220
[   24.289300] Call Trace:
[   24.289400]  <IRQ>
[   24.290052] Kernel panic - not syncing: Fatal exception in interrupt
OOPS
}
echo "[    0.000000] Linux version 6.12.57 (stub boot $n)"
case $(cut -d' ' -f"$n" "$t/plan") in
panic) oops ;;
pass) echo "[afmalloc] guest up in 1.0 s (stub)"
      echo "hello from the script"
      echo 0 > "$run/rc" ;;
late) echo "[afmalloc] guest up in 1.0 s (stub)"
      oops ;;
fail) echo "[afmalloc] guest up in 1.0 s (stub)"
      echo "[   40.000000] afmalloc-kunit: expected warnings begin (afm_test_bad_free)"
      echo "[   40.100000] WARNING: CPU: 1 PID: 252 at mm/afmalloc/mm/slab_store.c:818 afm_slab_free+0x1ad/0x1f0"
      echo "[   40.100100] RIP: 0010:afm_slab_free+0x1ad/0x1f0"
      echo "[   40.200000] afmalloc-kunit: expected warnings end"
      echo "kunit-guest: KUnit: 10 suites, 109 cases: 109 passed, 0 failed, 0 skipped"
      echo "[   90.000000] WARNING: CPU: 0 PID: 300 at mm/zswap.c:100 zswap_store+0x10/0x20"
      echo "[   90.000100] RIP: 0010:zswap_store+0x10/0x20"
      echo "debug-suite: zswap: kernel splat in dmesg (above)"
      for i in $(seq 1 80); do echo "filler line $i"; done
      echo "  zswap              5 s  FAILED (99)"
      echo "debug-suite: FAIL: zswap"
      echo 1 > "$run/rc" ;;
hang) echo "[afmalloc] guest up in 1.0 s (stub)"
      echo "[   30.000000] clocksource: Switched to clocksource tsc"
      exit 124 ;;
boothang) echo "[    2.221815] pci_bus 0000:00: resource 8 [mem 0xc0000000-0xfebfffff window]"
      # Until stopped; a short sleep, so that nothing holds the pipe long.
      while :; do sleep 0.2; done ;;
esac
exit 0
STUB
chmod +x "$t/venv/bin/vng" "$t/bin/qemu-system-x86_64"

# vmrun PLAN [ARGS]: vm-run.sh on the stub; status in $t/rc, output in $t/out.
vmrun() {
	echo "$1" > "$t/plan"
	rm -f "$t/boots" "$t/accels"
	shift
	set +e
	PATH=$t/bin:$PATH timeout 60 "$top/scripts/vm-run.sh" --kernel "$t/kernel/bzImage" \
		--accel tcg --timeout 30 --log "$t/console.log" "$@" "$t/script.sh" > "$t/out" 2>&1
	echo $? > "$t/rc"
	set -e
}
has() { grep -qF -- "$1" "$t/out"; }
boots() { cat "$t/boots"; }

# 1.
vmrun "panic pass"
[ "$(cat "$t/rc")" = 0 ] || fail "1: a boot panic then a good boot: status $(cat "$t/rc"), not 0: $(cat "$t/out")"
[ "$(boots)" = 2 ] || fail "1: $(boots) boots, not 2"
has "WARNING: boot 1 of the guest ended" || fail "1: no warning about the failed boot"
has "hello from the script" || fail "1: the script's output is missing"
grep -q "Oops: int3" "$t/console-boot1.log" || fail "1: the failed boot's console was not kept"
grep -q "Oops: int3" "$t/console.log" && fail "1: the failed boot's console is in the final log"
has "[afmalloc] first: [   24.289000] Oops: int3" || fail "1: the failed boot's splat is not named"
ok "a guest that dies in its boot is booted once more, its console kept"

# 2.
vmrun "panic panic pass"
[ "$(cat "$t/rc")" = 125 ] || fail "2: panics in every boot: status $(cat "$t/rc"), not 125"
[ "$(boots)" = 2 ] || fail "2: $(boots) boots, not 2"
tail -n 12 "$t/out" > "$t/end"
for want in "first: [   24.289000] Oops: int3" "CPU: 1 UID: 0" "RIP: 0010:sched_clock_tick+0x1" \
	"clock: [   24.100000] clocksource: Switched" "died before the script started" \
	"VM ended (status 0) before the script reported a status"; do
	grep -qF -- "$want" "$t/end" || fail "2: the output's last lines do not say '$want': $(cat "$t/end")"
done
ok "a guest that dies in every boot fails (125) and the output ends with its splat"

# 3.
vmrun "late pass"
[ "$(cat "$t/rc")" = 125 ] || fail "3: a panic in the script: status $(cat "$t/rc"), not 125"
[ "$(boots)" = 1 ] || fail "3: a panic once the script ran was booted again ($(boots) boots)"
tail -n 12 "$t/out" | grep -qF "the script had started" || fail "3: the summary does not say the script had started"
ok "a guest that dies once the script runs is not booted again"

# 4.
vmrun "panic pass" --boot-retries 0
[ "$(cat "$t/rc")" = 125 ] || fail "4: --boot-retries 0: status $(cat "$t/rc"), not 125"
[ "$(boots)" = 1 ] || fail "4: --boot-retries 0 booted $(boots) times"
ok "--boot-retries 0 fails on the first boot panic"

# 5.
vmrun "hang pass"
[ "$(cat "$t/rc")" = 124 ] || fail "5: a hang: status $(cat "$t/rc"), not 124: $(tail -n 5 "$t/out")"
[ "$(boots)" = 1 ] || fail "5: a hang once the script ran was booted again ($(boots) boots)"
has "[afmalloc] no kernel splat in the guest console" || fail "5: the output does not say there is no splat"
tail -n 1 "$t/out" | grep -qF "VM timed out after 30s" || fail "5: the output does not end with the timeout: $(tail -n 3 "$t/out")"
grep -qF "[afmalloc] vm-run: status 124" "$t/console.log" || fail "5: the console log does not end with the status"
ok "a guest that hangs with no splat times out (124) and says so last"

# 6.
vmrun "pass" --boot-retries x
[ "$(cat "$t/rc")" = 1 ] || fail "6: --boot-retries x: status $(cat "$t/rc"), not 1"
[ ! -e "$t/boots" ] || fail "6: --boot-retries x booted the guest"
has "error: --boot-retries must be a number, not 'x'" || fail "6: no clear error: $(cat "$t/out")"
ok "--boot-retries x is refused before any boot"

# 7.
vmrun "fail"
[ "$(cat "$t/rc")" = 1 ] || fail "7: a failing script: status $(cat "$t/rc"), not 1"
has "[afmalloc] first: [   90.000000] WARNING: CPU: 0 PID: 300 at mm/zswap.c" ||
	fail "7: the summary does not name the splat outside the bracket: $(grep first: "$t/out")"
has "first: [   40.100000]" && fail "7: the summary names the expected warning inside its bracket"
tail -n 5 "$t/out" > "$t/end"
grep -qF "debug-suite: FAIL: zswap" "$t/end" || fail "7: the output's last lines do not name the failed step: $(cat "$t/end")"
tail -n 1 "$t/out" | grep -qF "the script failed in the guest (status 1)" ||
	fail "7: the output does not end with the script's status: $(tail -n 2 "$t/out")"
ok "a failing script: the expected warning is passed over, its FAIL lines end the output"

# 8.
vmrun "boothang pass" --boot-deadline 3
[ "$(cat "$t/rc")" = 0 ] || fail "8: a boot hang then a good boot: status $(cat "$t/rc"), not 0: $(tail -n 5 "$t/out")"
[ "$(boots)" = 2 ] || fail "8: $(boots) boots, not 2"
has "WARNING: boot 1 of the guest ended" || fail "8: no warning about the stopped boot"
has "hello from the script" || fail "8: the script's output is missing"
grep -qF 'no "guest up" line 3 s after the boot began: stopping it' "$t/console-boot1.log" ||
	fail "8: the stopped boot's console does not say why it was stopped"
ok "a guest that hangs in its boot is stopped at the boot deadline and booted once more"

# 9.
vmrun "pass" --boot-deadline soon
[ "$(cat "$t/rc")" = 1 ] || fail "9: --boot-deadline soon: status $(cat "$t/rc"), not 1"
[ ! -e "$t/boots" ] || fail "9: --boot-deadline soon booted the guest"
has "error: --boot-deadline must be a number of seconds, not 'soon'" || fail "9: no clear error: $(cat "$t/out")"
ok "--boot-deadline soon is refused before any boot"

# 10.
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	rm -f "$AFMALLOC_CACHE/accel"
	vmrun "boothang pass" --boot-deadline 3 --accel auto
	[ "$(cat "$t/rc")" = 0 ] || fail "10: a KVM boot hang: status $(cat "$t/rc"), not 0: $(tail -n 5 "$t/out")"
	[ "$(tr '\n' ' ' < "$t/accels")" = "kvm tcg " ] || fail "10: boots under $(tr '\n' ' ' < "$t/accels"), not kvm then tcg"
	[ "$(cut -d' ' -f2 "$AFMALLOC_CACHE/accel")" = tcg ] || fail "10: the probe's cache says $(cat "$AFMALLOC_CACHE/accel")"
	has "booting under TCG from now on" || fail "10: the output does not say it went to TCG"
	vmrun "boothang pass" --boot-deadline 3 --accel kvm
	[ "$(tr '\n' ' ' < "$t/accels")" = "kvm kvm " ] || fail "10: --accel kvm booted under $(tr '\n' ' ' < "$t/accels")"
	ok "a KVM boot that hangs after the probe passed is booted again under TCG"
else
	echo "skip: 10 needs a /dev/kvm to probe"
fi
