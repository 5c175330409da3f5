#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side tests of bench/lib/afm-params.sh, the allocator names with
# afmalloc module parameters of the guest benchmarks (no VM, no build):
# a folder of files stands in for /sys/module/afmalloc/parameters.
#
#   tests/scripts/afm-params.sh
#
# 1. afm_check_alloc takes the allocators, their flags and NAME=VALUE
#    parameters, and refuses, naming the word: an unknown allocator, a
#    parameter on zsmalloc, a malformed NAME=VALUE, a word that is no flag
#    of the benchmark, and (in the guest) a parameter the kernel lacks.
# 2. afm_set_params writes the parameters and afm_restore_params puts the
#    old values back, last set first: a name given twice ends as it was.
# 3. bench/run.sh refuses an allocator with an unknown word before it sets
#    anything up.
# 4. bench/fio/run.sh refuses a parameter on zsmalloc before it sets
#    anything up.
#
# Prints "ok" lines, exits non-zero on the first failure.
set -euo pipefail

# shellcheck source=tests/scripts/lib.sh
. "$(dirname "$0")/lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir "$t/par"
echo 1 > "$t/par/zspage_align"
echo Y > "$t/par/zspage_handle_phases"

# check ARGS...: afm_check_alloc ARGS in a subshell; its error on stdout.
check() {
	(
		die() { echo "error: $*"; exit 1; }
		AFM_PAR=$t/par
		# shellcheck source=bench/lib/afm-params.sh
		. "$top/bench/lib/afm-params.sh"
		afm_check_alloc "$@"
	) 2>&1
}

# 1.
for a in zsmalloc afmalloc/slab afmalloc/zspage zsmalloc+compact \
	 afmalloc/zspage+zspage_align=16+compact afmalloc/zspage+zspage_handle_phases=N; do
	out=$(check --guest "$a" compact) || fail "afm_check_alloc refused '$a': $out"
done
ok "afm_check_alloc takes allocators, flags and parameters"
while IFS='|' read -r a flags want; do
	# shellcheck disable=SC2086  # flags: none or one word
	if out=$(check --guest "$a" $flags); then
		fail "afm_check_alloc took '$a' (flags: ${flags:-none})"
	fi
	[[ "$out" == *"$want"* ]] || fail "'$a': no clear error (want '$want', got: $out)"
done <<'EOF'
zmalloc|compact|unknown allocator 'zmalloc'
zsmalloc+zspage_align=16|compact|zsmalloc takes no afmalloc parameters
afmalloc/zspage+zspage_align==16|compact|'zspage_align==16' is not NAME=VALUE
afmalloc/zspage+Align=16|compact|'Align=16' is not NAME=VALUE
afmalloc/zspage+compact||unknown word 'compact'
afmalloc/zspage+fast|compact|unknown word 'fast'
afmalloc/zspage+zspage_nope=1|compact|no writable afmalloc parameter zspage_nope
EOF
out=$(check afmalloc/zspage+zspage_nope=1 compact) ||
	fail "afm_check_alloc without --guest looked for the parameter: $out"
ok "afm_check_alloc refuses bad names with a clear error"

# 2.
(
	die() { echo "error: $*" >&2; exit 1; }
	AFM_PAR=$t/par AFM_NOTE=:
	# shellcheck source=bench/lib/afm-params.sh
	. "$top/bench/lib/afm-params.sh"
	afm_set_params "afmalloc/zspage+zspage_align=16+compact+zspage_handle_phases=N+zspage_align=64"
	[ "$(cat "$t/par/zspage_align")" = 64 ] || fail "zspage_align not set: $(cat "$t/par/zspage_align")"
	[ "$(cat "$t/par/zspage_handle_phases")" = N ] || fail "zspage_handle_phases not set"
	afm_restore_params
	[ "$(cat "$t/par/zspage_align")" = 1 ] ||
		fail "zspage_align given twice restored to $(cat "$t/par/zspage_align"), not 1"
	[ "$(cat "$t/par/zspage_handle_phases")" = Y ] || fail "zspage_handle_phases not restored"
	afm_set_params zsmalloc+compact
	[ "${#AFM_SAVED[@]}" = 0 ] || fail "a flag was taken for a parameter: ${AFM_SAVED[*]}"
) || exit 1
ok "afm_set_params / afm_restore_params write and put back, last set first"

# 3.
rc=0
"$top/bench/run.sh" --alloc zsmalloc,afmalloc/zspage+fast --out "$t/out" > "$t/run.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "bench/run.sh --alloc afmalloc/zspage+fast succeeded"
grep -q "unknown word 'fast'" "$t/run.log" ||
	fail "bench/run.sh: no clear error (got: $(head -c 300 "$t/run.log"))"
[ ! -e "$t/out" ] || fail "bench/run.sh made its results folder"
ok "bench/run.sh refuses an allocator with an unknown word"

# 4.
rc=0
"$top/bench/fio/run.sh" --alloc zsmalloc,zsmalloc+zspage_align=16 --out "$t/fout" > "$t/fio.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "bench/fio/run.sh --alloc zsmalloc+zspage_align=16 succeeded"
grep -q "zsmalloc takes no afmalloc parameters" "$t/fio.log" ||
	fail "bench/fio/run.sh: no clear error (got: $(head -c 300 "$t/fio.log"))"
[ ! -e "$t/fout" ] || fail "bench/fio/run.sh made its results folder"
ok "bench/fio/run.sh refuses parameters on zsmalloc"
