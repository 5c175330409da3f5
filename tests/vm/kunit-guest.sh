#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# afmalloc's KUnit suites in the x86_64 debug guest kernel (run as root in
# the guest through scripts/vm-run.sh, kernel from scripts/build-guest.sh
# --debug: lockdep, DEBUG_VM, DEBUG_LIST, kmemleak, afmalloc built in,
# KUnit and the suites as modules; --kasan: the same and KASAN):
#
#   tests/vm/kunit-guest.sh --kunit-dir DIR [--kasan] [--stress-seconds N]
#                           [--destroy-seconds N]
#   tests/vm/kunit-guest.sh --check-log FILE
#
# DIR is the debug build dir (DIR/lib/kunit/kunit.ko and
# DIR/mm/afmalloc/afmalloc_kunit.ko, reached over the read-only 9p root);
# with --kasan its kernel must have KASAN too.
# While background loops run `echo 1 > /proc/sys/vm/compact_memory` (the
# kernel's compaction migrating zspage pages) and
# `echo 2 > /proc/sys/vm/drop_caches` (shrink_slab() calling every
# registered shrinker, including those of pools being created and
# destroyed), loads kunit.ko then afmalloc_kunit.ko with
# stress_seconds=N (each stress case, default 60) and destroy_seconds=N
# (the destroy-vs-shrinker case, default: the stress seconds). The suites
# run inside insmod; their KTAP is read from the kernel log.
#
# Fails on any failed case, a missing suite or stress summary, or a kernel
# splat (scripts/vm-run.sh's patterns) outside the brackets that tests of
# API misuse print around the afmalloc warnings they cause on purpose
# (afm_test_expect_warnings(): only "WARNING: ... at mm/afmalloc/" lines are
# allowed inside), and on a bracket without any such warning (the misuse
# did not warn). Once that check passes (even if a case failed), the
# kernel log is cleared so that scripts/vm-run.sh's own check (and kmemleak
# scan), which run after this script and know nothing of the brackets, see
# only what follows.
#
# Prints `reliability:` rows: one kind=stress row per stress case
# (lost = objects stored but not read back byte-exact) and one kind=debug
# row for the whole run.
#
# Skipped cases (KTAP "# SKIP", summed from the suites' "# Totals" skip
# counts) are not passes: each is printed as "kunit-guest: SKIP: ...",
# the debug row's result is SKIP, and the exit status is 77 when nothing
# failed (1 if something did); tests/vm/debug-suite.sh fails on 77.
#
# --check-log FILE: no guest, no insmod: only the checks above (KTAP,
# skips, splats, warning brackets) on a saved kernel log (a UML
# test.log of scripts/kunit.sh, or this script's own log, from its start
# marker if it has one), to check the checks; same output and status.
set -euo pipefail

kdir= stress_s=60 destroy_s= check_log= kasan=
while [ $# -gt 0 ]; do
	case "$1" in
	--kunit-dir) kdir=${2:?--kunit-dir needs the debug build dir}; shift ;;
	--kasan) kasan=KASAN:KASAN ;;
	--stress-seconds) stress_s=${2:?--stress-seconds needs a number}; shift ;;
	--destroy-seconds) destroy_s=${2:?--destroy-seconds needs a number}; shift ;;
	--check-log) check_log=${2:?--check-log needs a kernel log file}; shift ;;
	-h|--help) sed -n '3,/^set -/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "kunit-guest: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
destroy_s=${destroy_s:-$stress_s}

fail() { echo "kunit-guest: FAIL: $*" >&2; exit 1; }
log() { echo "[kunit-guest] $*"; }

work=$(mktemp -d /tmp/afm-kunit.XXXXXX)
compact_pid= drop_pid= klog_pid=
stop_loops() {
	local p
	for p in $compact_pid $drop_pid; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in $compact_pid $drop_pid; do
		wait "$p" 2>/dev/null || true
	done
	compact_pid= drop_pid=
}
cleanup() {
	set +e
	stop_loops
	[ -n "$klog_pid" ] && kill "$klog_pid" 2>/dev/null && wait "$klog_pid" 2>/dev/null
	if [ -z "$check_log" ]; then
		grep -qw '^afmalloc_kunit' /proc/modules && rmmod afmalloc_kunit
		grep -qw '^kunit' /proc/modules && rmmod kunit
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# The prefix of the start marker this script writes to the kernel log.
marker="afmalloc-kunit-guest: start"

# run_suites: run the suites in this guest; the kernel log from the start
# marker in $work/klog, from after it in $work/run.
run_suites() {
	[ "$(id -u)" -eq 0 ] || fail "must run as root (inside the guest)"
	[ -n "$kdir" ] || fail "--kunit-dir DIR is required (the debug guest build dir)"
	for v in "$stress_s" "$destroy_s"; do
		[[ "$v" =~ ^[1-9][0-9]*$ ]] && [ "$v" -le 240 ] ||
			fail "seconds must be 1..240 (KUnit kills a case after 300 s), not '$v'"
	done
	kunit_ko=$kdir/lib/kunit/kunit.ko
	afm_ko=$kdir/mm/afmalloc/afmalloc_kunit.ko
	[ -f "$kunit_ko" ] || fail "no $kunit_ko (a kernel built with CONFIG_KUNIT=m: scripts/build-guest.sh --debug)"
	[ -f "$afm_ko" ] || fail "no $afm_ko (CONFIG_AFMALLOC_KUNIT_TEST=m: scripts/build-guest.sh --debug)"
	[ -f "$kdir/include/config/kernel.release" ] &&
		[ "$(cat "$kdir/include/config/kernel.release")" = "$(uname -r)" ] ||
		fail "the running kernel $(uname -r) is not the one built in $kdir"
	[ -d /sys/module/afmalloc ] || fail "afmalloc is not in the running kernel"
	! grep -qw '^afmalloc_kunit' /proc/modules || fail "afmalloc_kunit is already loaded"

	# The debug row names the checkers: they must be in this kernel.
	checkers=()
	for opt in $kasan PROVE_LOCKING:lockdep DEBUG_VM:DEBUG_VM \
		   DEBUG_LIST:DEBUG_LIST DEBUG_KMEMLEAK:kmemleak; do
		grep -qx "CONFIG_${opt%%:*}=y" "$kdir/.config" ||
			fail "the kernel in $kdir lacks CONFIG_${opt%%:*}=y"
		checkers+=("${opt#*:}")
	done
	dbg=/sys/kernel/debug
	mountpoint -q $dbg || mount -t debugfs none $dbg 2>/dev/null || true

	# Kernel-wide migration counters, when the kernel has them
	# (CONFIG_VM_EVENT_COUNTERS); the zspage stress reports its own.
	vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
	mig0=$(vmstat pgmigrate_success)

	# loop NAME FILE VALUE PAUSE: write VALUE to FILE until TERM, then record
	# the number of writes in $work/NAME.n.
	loop() {
		local n=0
		trap 'echo $n > "$work/$1.n"; exit 0' TERM
		while :; do
			echo "$3" > "$2" || { echo "kunit-guest: writing $2 failed" >&2; echo -1 > "$work/$1.n"; exit 1; }
			n=$((n + 1))
			sleep "$4"
		done
	}

	# Everything the kernel logs from here on, without the ring buffer's size
	# limit; the marker bounds this run's part.
	dmesg --notime --follow > "$work/klog" 2>&1 &
	klog_pid=$!
	sleep 0.5
	marker="$marker $$.$RANDOM"	# this run's own
	echo "$marker" > /dev/kmsg

	loop compact /proc/sys/vm/compact_memory 1 0.5 &
	compact_pid=$!
	loop drop /proc/sys/vm/drop_caches 2 0.1 &
	drop_pid=$!
	log "compact_memory and drop_caches loops running"

	start=$(date +%s)
	insmod "$kunit_ko" || fail "insmod $kunit_ko"
	log "running the afmalloc suites: stress_seconds=$stress_s destroy_seconds=$destroy_s"
	set +e
	insmod "$afm_ko" stress_seconds="$stress_s" destroy_seconds="$destroy_s"
	irc=$?
	set -e
	elapsed=$(($(date +%s) - start))
	stop_loops
	[ "$(cat "$work/compact.n" 2>/dev/null || echo -1)" -ge 0 ] ||
		fail "the compact_memory loop failed"
	[ "$(cat "$work/drop.n" 2>/dev/null || echo -1)" -ge 0 ] ||
		fail "the drop_caches loop failed"
	ncompact=$(cat "$work/compact.n") ndrop=$(cat "$work/drop.n")
	if [ -n "$mig0" ]; then
		mig="pgmigrate_success +$(($(vmstat pgmigrate_success) - mig0))"
	else
		mig="no pgmigrate counters (no CONFIG_VM_EVENT_COUNTERS)"
	fi
	log "suites done in ${elapsed}s (insmod status $irc): $ncompact compact_memory and $ndrop drop_caches runs, $mig"
	sleep 1
	kill "$klog_pid" 2>/dev/null; wait "$klog_pid" 2>/dev/null || true
	klog_pid=
	awk -v m="$marker" 'found { print } index($0, m) { found = 1 }' "$work/klog" > "$work/run"
	[ -s "$work/run" ] || fail "no kernel log after the start marker (dmesg --follow failed?)"

	rmmod afmalloc_kunit || fail "rmmod afmalloc_kunit"
	rmmod kunit || fail "rmmod kunit"
	[ "$irc" -eq 0 ] || fail "insmod $afm_ko failed (status $irc)"
}

if [ -z "$check_log" ]; then
	run_suites
else
	[ -f "$check_log" ] || fail "--check-log: no file '$check_log'"
	cp "$check_log" "$work/klog"
	if grep -qF "$marker" "$work/klog"; then
		awk -v m="$marker" 'found { print } index($0, m) { found = 1 }' "$work/klog" > "$work/run"
	else
		# A UML test.log: all of it is the run; bracket the whole log.
		{ echo "$marker (--check-log)"; cat "$check_log"; } > "$work/klog"
		cp "$check_log" "$work/run"
	fi
	irc=0 elapsed=0 ncompact=0 ndrop=0 mig="--check-log $check_log" checkers=("none (--check-log)")
	log "checking the kernel log $check_log (no suites run)"
fi

# --- KTAP --------------------------------------------------------------------
# Suites: "ok N afmalloc_x" at column 0, each with a "# Totals:" line that
# counts its cases as KUnit (and make kunit) do: each parameter of a
# parameterised case is one. Cases: "    ok N name".
grep -E '^(not )?ok [0-9]+ afmalloc|^ +not ok |^    # [a-z_]+: (afmalloc-stress|[0-9]+ )|^# Totals' \
	"$work/run" || true
nsuites=$(grep -cE '^(not )?ok [0-9]+ afmalloc' "$work/run" || true)
bad_suites=$(grep -cE '^not ok [0-9]+ afmalloc' "$work/run" || true)
read -r npassed nfailed nskipped ncases < <(awk '
	/^# Totals: pass:[0-9]+ fail:[0-9]+ skip:[0-9]+ total:[0-9]+/ {
		for (i = 3; i <= 6; i++) { split($i, kv, ":"); n[i] += kv[2] }
	}
	END { printf "%d %d %d %d\n", n[3], n[4], n[5], n[6] }' "$work/run")
# A failed case is a failure whatever the totals say.
nnotok=$(grep -cE '^ +not ok [0-9]+ ' "$work/run" || true)
if [ "$nnotok" -gt "$nfailed" ]; then
	npassed=$((npassed - (nnotok - nfailed))) nfailed=$nnotok
	[ "$npassed" -ge 0 ] || npassed=0
fi
log "KUnit: $nsuites suites, $ncases cases: $npassed passed, $nfailed failed, $nskipped skipped"
# Every skip by name: a case (or a parameter of one, or a whole suite)
# whose KTAP result line ends in "# SKIP reason".
grep -E '^ *ok [0-9]+ .*# SKIP' "$work/run" | sed -E 's/^ *ok [0-9]+ /kunit-guest: SKIP: /' > "$work/skips" || true
nskiplines=$(wc -l < "$work/skips")
cat "$work/skips"
if [ "$nskiplines" -gt 0 ] && [ "$nskipped" -eq 0 ]; then
	nskipped=$nskiplines	# "# Totals" lines missing or wrong: the KTAP lines count
fi

# --- splats ------------------------------------------------------------------
# scripts/vm-run.sh's pattern; inside expected-warning brackets only
# afmalloc's own WARNINGs are allowed.
splat_re=${AFMALLOC_SPLAT_RE:?run this through scripts/vm-run.sh, which sets the splat pattern}
# A bracket in which no afmalloc warning appeared is reported as
# "silent: NAME": the misuse it brackets did not warn.
awk -v re="$splat_re" -v m="$marker" '
	function close_bracket() {
		if (inside && !seen) print "silent: " name
		inside = 0
	}
	index($0, m) { run = 1; next }
	run && /afmalloc-kunit: expected warnings begin/ {
		close_bracket()
		name = $0; sub(/.*expected warnings begin */, "", name)
		inside = 1; seen = 0; brackets++; next
	}
	run && /afmalloc-kunit: expected warnings end/ { close_bracket(); next }
	$0 ~ re {
		if (run && inside && /WARNING: .* at mm\/afmalloc\//) { allowed++; seen = 1; next }
		print "unexpected: " $0; bad++; ctx = 25; next
	}
	ctx > 0 { print "  " $0; ctx-- }
	END {
		close_bracket()
		printf "%d allowed %d brackets\n", allowed, brackets > "/dev/stderr"
		exit (bad > 0)
	}' \
	"$work/klog" > "$work/splats" 2> "$work/allowed" || true
nallowed=$(awk '{ print $1 }' "$work/allowed")
nbrackets=$(awk '{ print $3 }' "$work/allowed")
nsplats=$(grep -c '^unexpected: ' "$work/splats" || true)
grep '^silent: ' "$work/splats" | sed 's/^silent: //' > "$work/silent" || true
nsilent=$(wc -l < "$work/silent")
if [ "$nsilent" -gt 0 ]; then
	echo "kunit-guest: expected-warning brackets without any afmalloc WARNING (the misuse did not warn):" >&2
	sed 's/^/  /' "$work/silent" >&2
fi
if [ "$nsplats" -gt 0 ]; then
	echo "kunit-guest: kernel splats outside expected-warning brackets:" >&2
	head -200 "$work/splats" >&2
else
	# Checked: clear the expected warnings so that scripts/vm-run.sh's
	# bracket-unaware check sees only what happens from now on.
	if [ -z "$check_log" ]; then
		dmesg -C
		echo "afmalloc-kunit-guest: kernel log checked by tests/vm/kunit-guest.sh and cleared ($nallowed expected afmalloc warnings inside $nbrackets brackets)" > /dev/kmsg
	fi
fi

# --- reliability rows ----------------------------------------------------------
clean() {
	local s=${1//\"/\'}
	s=${s//\\/\\\\}
	printf '%s' "${s//$'\n'/\\n}"
}
nfail=0
row() {  # row KIND TEST TRIED EXPECTED OBSERVED LOST RESULT [KEY=VALUE...]
	local k=$1 t=$2 tried=$3 exp=$4 obs=$5 lost=$6 res=$7
	shift 7
	[ "$res" != FAIL ] || nfail=$((nfail + 1))
	printf 'reliability: kind=%s test=%s tried="%s" expected="%s" observed="%s" lost=%s result=%s%s\n' \
		"$k" "$t" "$(clean "$tried")" "$(clean "$exp")" "$(clean "$obs")" "$lost" "$res" "${*:+ $*}"
}
loops="with compact_memory + drop_caches loops"
# stress_row CASE TEST TRIED
stress_row() {
	local c=$1 t=$2 tried=$3 line st res lost obs
	local -A kv=()
	line=$(grep -m1 -E "^    # $c: afmalloc-stress: " "$work/run" || true)
	st=$(grep -m1 -E "^    (not )?ok [0-9]+ $c( |$)" "$work/run" || true)
	case "$st" in
	"    not ok "*) res=FAIL ;;
	*"# SKIP"*) res=FAIL ;;
	"    ok "*) res=pass ;;
	*) res=FAIL st="no result" ;;
	esac
	if [ -z "$line" ]; then
		tried=${tried//SECS/?}
		tried=${tried//WORKERS/?}
		row stress "$t" "$tried" "every object stored reads back byte-exact; case passes" \
			"no summary line from $c (${st:-case did not run})" 0 FAIL
		return
	fi
	for tok in ${line#*afmalloc-stress: }; do kv[${tok%%=*}]=${tok#*=}; done
	tried=${tried//SECS/${kv[seconds]}}
	tried=${tried//WORKERS/${kv[workers]:-?}}
	lost=$((kv[stored] - kv[verified]))
	[ "$lost" -eq 0 ] && [ "${kv[errors]}" -eq 0 ] || res=FAIL
	obs="${kv[verified]}/${kv[stored]} objects (${kv[bytes_verified]} bytes) verified byte-exact, ${kv[errors]} errors"
	for k in compactions auto_runs shrinker_scans migrations kernel_migrations left_live; do
		[ -n "${kv[$k]:-}" ] && obs+=", $k ${kv[$k]}"
	done
	[ -n "${kv[shards_used]:-}" ] &&
		obs+=", ${kv[cpus]} CPUs, objects in ${kv[shards_used]} of ${kv[shards]} shards (${kv[active]} active)"
	obs+="; KUnit: ${st#    }"
	row stress "$t" "$tried" "every object stored reads back byte-exact; case passes" \
		"$obs" "$lost" "$res" ops="${kv[ops]}" seconds="${kv[seconds]}" \
		threads="${kv[threads]}" store="${kv[store]}"
}
stress_row afm_test_compact_stress kunit-stress-slab \
	"3 threads alloc/write/map/verify/free random 1-4096 B objects in a slab-store pool, 1 thread afm_compact() every 20 ms, SECS s, debug kernel $loops"
stress_row afm_zs_test_stress kunit-stress-zspage \
	"WORKERS threads (one a CPU, at least 3) alloc/write/map/verify/free random objects in a zspage-store pool (movable pages), each bound to a CPU for its first 256 operations; afm_compact() loop, page migration through movable_ops, shrinker count/scan loop, automatic compaction at 0.5%, SECS s, debug kernel $loops"
stress_row afm_zs_test_destroy_vs_shrinker kunit-destroy-vs-shrinker \
	"pools of both stores created, filled (512 objects), fragmented (3/4 freed) and destroyed in a loop for SECS s, one zspage pool destroyed with live objects, while drop_caches runs shrink_slab() over their registered shrinkers"

res=pass
[ "$nskipped" -eq 0 ] || res=SKIP
[ "$nfailed" -eq 0 ] && [ "$bad_suites" -eq 0 ] && [ "$nsuites" -ge 5 ] &&
	[ "$ncases" -ge 1 ] && [ "$nsplats" -eq 0 ] && [ "$nsilent" -eq 0 ] || res=FAIL
joined=$(IFS=,; echo "${checkers[*]}")
ncpus=
[ -n "$check_log" ] || ncpus=$(nproc)
row debug kunit-debug-guest \
	"$ncases KUnit cases under ${joined//,/, }${ncpus:+ on $ncpus CPUs} $loops" \
	"every case passes (none skipped); no splat outside expected-warning brackets; each bracket has its afmalloc warning" \
	"$npassed passed, $nfailed failed, $nskipped skipped in $nsuites suites ($elapsed s); $nsplats unexpected splats, $nallowed expected afmalloc warnings in $nbrackets brackets, $nsilent without; $ncompact compact_memory and $ndrop drop_caches runs, $mig" \
	0 "$res" cases="$ncases" seconds="$elapsed"

if [ "$nsplats" -gt 0 ]; then
	fail "kernel splats during the suites (above)"
fi
[ "$nsuites" -ge 5 ] || fail "only $nsuites afmalloc suites reported (expected 5)"
[ "$nfailed" -eq 0 ] && [ "$bad_suites" -eq 0 ] || {
	grep -E 'not ok|Expected|FAIL|afmalloc.*stress:' "$work/run" | head -40 >&2
	fail "KUnit: $nfailed failed cases"
}
[ "$nsilent" -eq 0 ] || fail "$nsilent expected-warning brackets without their afmalloc warning (above)"
[ "$nfail" -eq 0 ] || fail "$nfail reliability rows failed"
if [ "$nskipped" -gt 0 ]; then
	echo "kunit-guest: SKIPPED: $nskipped of $ncases cases skipped (listed above), $npassed passed, none failed"
	exit 77
fi
log "pass: $npassed/$ncases cases passed, none skipped, no unexpected splat"
