#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Time the steps of `make check` (and of anything else that sets
# AFMALLOC_TIMINGS), so that the README's timing table is generated:
#   timed.sh --begin         start a new record (file AFMALLOC_TIMINGS)
#   timed.sh NAME CMD [ARG]  run CMD; append "NAME<TAB>seconds<TAB>status"
#   timed.sh --report        print the record as a table, with the total
#                            (wall clock since --begin: steps may overlap,
#                            make check's KUnit step goes beside the debug
#                            kernel's build), and append it ("# finished")
#   timed.sh --failures      for each step of the record that failed: its
#                            log's path and the last 25 lines of it that
#                            say FAIL, or vm-run.sh's lines naming the first
#                            splat and how the guest ended, so that the end
#                            of a CI log names what
#                            failed even when later output (make check's
#                            KUnit step, printed last) pushed it up
# With AFMALLOC_TIMINGS set, the step's output (stdout and stderr, merged
# into stdout) is also kept in NAME.log in AFMALLOC_TIMINGS_LOGS (default
# $(dirname AFMALLOC_TIMINGS)/logs), which --begin empties; the exit status
# is CMD's. Without it, NAME CMD
# just runs CMD.
set -uo pipefail

f=${AFMALLOC_TIMINGS:-}
logs=${AFMALLOC_TIMINGS_LOGS:-$(dirname "${f:-.}")/logs}
case "${1:-}" in
--begin)
	[ -n "$f" ] || exit 0
	mkdir -p "$logs"
	rm -f "$logs"/*.log
	printf '# started\t%s\t%s\t%s\n' "$(date +%s)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"$(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)" > "$f"
	printf '# machine\t%s cores\t%s\t%s\n' "$(nproc)" \
		"$(awk '/^MemTotal:/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo)" \
		"$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")" >> "$f"
	exit 0 ;;
--report)
	[ -n "$f" ] && [ -s "$f" ] || exit 0
	now=$(date +%s)
	awk -F'\t' -v now="$now" '
		$1 == "# started" { t0 = $2; when = $3; rev = $4; next }
		$1 == "# machine" { mach = $2 ", " $3 ", " $4; next }
		/^#/ { next }
		{ printf "  %-28s %6d s  %s\n", $1, $2, $3 == 0 ? "ok" : "FAILED (" $3 ")" }
		END { printf "  %-28s %6d s  (%s, %s, %s)\n", "total", now - t0, when, rev, mach }' "$f"
	printf '# finished\t%s\n' "$now" >> "$f"
	exit 0 ;;
--failures)
	[ -n "$f" ] && [ -s "$f" ] || exit 0
	awk -F'\t' '!/^#/ && $3 != 0 { print $1 "\t" $3 }' "$f" |
	while IFS=$'\t' read -r name rc; do
		log=$logs/${name//\//_}.log
		echo "timed.sh: step $name FAILED (status $rc); its output: $log"
		[ -f "$log" ] || continue
		grep -E 'FAIL|^\[afmalloc\] (first|the script|the guest|VM )' "$log" |
			grep -v '^\[afmalloc\] ---- the script' | tail -n 25 | sed 's/^/  /'
	done
	exit 0 ;;
esac
[ $# -ge 2 ] || { echo "usage: $0 --begin | --report | --failures | NAME CMD [ARG...]" >&2; exit 2; }
name=$1; shift
t0=$(date +%s)
if [ -n "$f" ]; then
	log=$logs/${name//\//_}.log
	mkdir -p "$(dirname "$log")"
	"$@" 2>&1 | tee "$log"
	st=("${PIPESTATUS[@]}")
	rc=${st[0]}
	[ "${st[1]}" -eq 0 ] || echo "timed.sh: warning: could not write $log" >&2
else
	"$@"
	rc=$?
fi
[ -z "$f" ] || printf '%s\t%d\t%d\n' "$name" $(($(date +%s) - t0)) $rc >> "$f"
if [ "$rc" -ne 0 ] && [ -n "$f" ]; then
	echo "timed.sh: step $name failed (exit $rc); its whole output: $log" >&2
fi
exit $rc
