#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of scripts/beside.sh (make check runs its UML KUnit step
# beside the debug kernel's build with it):
#
#   tests/scripts/beside.sh
#
# 1. Both commands pass: status 0; the background one ran at nice 19 and
#    its output comes after the foreground's, whole.
# 2. The background command fails: status 1, its failure named.
# 3. The foreground command fails: status 1, its failure named.
# 4. Bad usage: status 2.
# 5. A termination of beside.sh stops the background command's whole
#    process group (its children too).
#
# The state is driven through files; the timeouts only bound a failure.
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
beside=$top/scripts/beside.sh
t=$(mktemp -d)
cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	[ -f "$t/bg.pid" ] && kill -TERM -- "-$(cat "$t/bg.pid")" 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT

# 1. The background command waits for the foreground one to have printed,
# so that its output is printed after it only if beside.sh holds it back.
rc=0
"$beside" "$t/1.log" bash -c "until [ -f '$t/fg.done' ]; do sleep 0.1; done; echo bg-line-1; echo nice=\$(nice); echo bg-line-2" -- \
	bash -c "echo fg-line; touch '$t/fg.done'; sleep 0.5" > "$t/1.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { cat "$t/1.out"; fail "case 1: status $rc, wanted 0"; }
grep -qx "nice=19" "$t/1.out" || { cat "$t/1.out"; fail "case 1: the background command did not run at nice 19"; }
order=$(grep -xE 'fg-line|bg-line-1|bg-line-2' "$t/1.out" | tr '\n' ' ')
[ "$order" = "fg-line bg-line-1 bg-line-2 " ] ||
	{ cat "$t/1.out"; fail "case 1: output order '$order', wanted the foreground's, then the background's whole"; }
ok "both pass: status 0, background at nice 19, its output after the foreground's"

# 2. The background command fails.
rc=0
"$beside" "$t/2.log" bash -c 'echo bg-says-no; exit 3' -- true > "$t/2.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$t/2.out"; fail "case 2: status $rc, wanted 1"; }
grep -q "FAILED (exit status 3): bash -c" "$t/2.out" && grep -qx "bg-says-no" "$t/2.out" ||
	{ cat "$t/2.out"; fail "case 2: the background failure or its output is not shown"; }
ok "background fails: status 1, named, its output shown"

# 3. The foreground command fails.
rc=0
"$beside" "$t/3.log" true -- bash -c 'exit 4' > "$t/3.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$t/3.out"; fail "case 3: status $rc, wanted 1"; }
grep -q "FAILED (exit status 4): bash -c" "$t/3.out" ||
	{ cat "$t/3.out"; fail "case 3: the foreground failure is not named"; }
ok "foreground fails: status 1, named"

# 4. Bad usage.
for args in "" "$t/4.log true" "$t/4.log -- true" "$t/4.log true --"; do
	rc=0
	# shellcheck disable=SC2086 # word splitting wanted
	"$beside" $args > "$t/4.out" 2>&1 || rc=$?
	[ "$rc" -eq 2 ] || { cat "$t/4.out"; fail "case 4: '$args': status $rc, wanted 2"; }
done
ok "bad usage: status 2"

# 5. Terminated while both run: the background command and its child go.
"$beside" "$t/5.log" bash -c "echo \$\$ > '$t/bg.pid'; sleep 300 & echo \$! > '$t/bgchild.pid'; wait" -- \
	sleep 301 > "$t/5.out" 2>&1 &
b=$!
for ((i = 0; i < 600; i++)); do
	[ -s "$t/bgchild.pid" ] && pgrep -P "$b" -x sleep > /dev/null && break
	sleep 0.1
done
[ -s "$t/bgchild.pid" ] || fail "case 5: the background command did not start its child"
# As on an interrupt from make: the signal reaches beside.sh and its
# foreground command (the background one has its own process group).
pkill -TERM -P "$b" -x sleep || fail "case 5: no foreground command to stop"
kill -TERM "$b"
for ((i = 0; i < 600; i++)); do kill -0 "$b" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$b" 2>/dev/null || fail "case 5: beside.sh did not end on TERM"
for f in bg.pid bgchild.pid; do
	p=$(cat "$t/$f")
	for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$p" 2>/dev/null || fail "case 5: the background $f process $p is still running"
done
grep -q "beside: stopped" "$t/5.out" || { cat "$t/5.out"; fail "case 5: no 'stopped' message"; }
ok "terminated: the background process group is stopped"
