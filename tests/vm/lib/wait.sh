# SPDX-License-Identifier: GPL-2.0
# Sourced by the scripts that run inside a guest (tests/vm/*.sh,
# bench/churn/churn-guest.sh).

# wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds; status 1
# when SECONDS pass first.
wait_until() {
	local t=$(( $1 * 10 )); shift
	while ! "$@"; do
		t=$((t - 1))
		[ $t -gt 0 ] || return 1
		sleep 0.1
	done
}
