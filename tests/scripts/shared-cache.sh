#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of scripts/common.sh: runs that share one cache (a make
# check beside a benchmark, CI in a fresh clone beside a developer's run)
# take turns on it.
#
#   tests/scripts/shared-cache.sh
#
# 1. lock NAME: a second holder waits (and says so, naming the holder's
#    pid and command) until the first lets go.
# 2. apt_install: two runs missing the same package install it once; the
#    second, after waiting for the 'apt' lock, finds it installed. apt-get
#    and dpkg-query are stubs (nothing is installed), so no root is needed.
#
# The state is driven through FIFOs and files; the timeouts only bound a
# failure. Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
cleanup() {
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	rm -rf "$t"
}
trap cleanup EXIT
export AFMALLOC_CACHE=$t/cache

# wait_for FILE PATTERN: until FILE holds PATTERN, at most 60 s.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# in_common CMD: CMD in a bash that sourced common.sh, killed after 60 s.
in_common() {
	timeout 60 bash -c ". '$top/scripts/common.sh'; $1"
}

# 1. lock
mkfifo "$t/release"
in_common "lock x; echo held > '$t/a.state'; read -r _ < '$t/release'" &
a=$!
wait_for "$t/a.state" held || fail "lock: the first run never took the lock"
in_common "lock x; echo got > '$t/b.state'" 2> "$t/b.err" &
b=$!
wait_for "$t/b.err" "waiting for another run holding the 'x' lock" ||
	fail "lock: the second run did not wait for the lock the first holds"
[ ! -e "$t/b.state" ] || fail "lock: the second run took the lock the first holds"
grep -Eq "lock \(pid [0-9]+, since [0-9TZ:-]+: bash -c .*lock x; echo held" "$t/b.err" ||
	fail "lock: the wait does not name the holder: $(cat "$t/b.err")"
echo > "$t/release"
wait "$a" || fail "lock: the first run failed"
wait "$b" || fail "lock: the second run failed: $(cat "$t/b.err")"
[ "$(cat "$t/b.state" 2>/dev/null)" = got ] ||
	fail "lock: the second run never took the lock after the first let go"
ok "lock: the second holder waited for the first"

# 2. apt_install
mkdir -p "$t/bin"
cat > "$t/bin/dpkg-query" <<EOF
#!/bin/sh
[ -e '$t/installed' ] && printf 'install ok installed'
EOF
cat > "$t/bin/apt-get" <<EOF
#!/bin/sh
case " \$* " in *" update "*) exit 0 ;; esac
echo "\$*" >> '$t/apt-calls'
read -r _ < '$t/apt-release'
touch '$t/installed'
EOF
cat > "$t/bin/id" <<'EOF'
#!/bin/sh
echo 0
EOF
chmod +x "$t/bin/dpkg-query" "$t/bin/apt-get" "$t/bin/id"
mkfifo "$t/apt-release"
export PATH=$t/bin:$PATH
in_common "apt_install afm-test-pkg" 2> "$t/a.err" &
a=$!
wait_for "$t/apt-calls" afm-test-pkg || fail "apt_install: the first run never called apt-get install"
in_common "apt_install afm-test-pkg" 2> "$t/b.err" &
b=$!
wait_for "$t/b.err" "waiting for another run holding the 'apt' lock" ||
	fail "apt_install: the second run did not wait for the first's install: $(cat "$t/b.err")"
echo > "$t/apt-release"
wait "$a" || fail "apt_install: the first run failed: $(cat "$t/a.err")"
wait "$b" || fail "apt_install: the second run failed: $(cat "$t/b.err")"
n=$(wc -l < "$t/apt-calls")
[ "$n" -eq 1 ] || fail "apt_install: apt-get install ran $n times, not once"
ok "apt_install: the second run waited and found the package installed"
