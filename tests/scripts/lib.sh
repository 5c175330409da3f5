# SPDX-License-Identifier: GPL-2.0
# Sourced by the host-side script tests (tests/scripts/*.sh): the checkout's
# top folder and the ok / FAIL reporting they share.

# shellcheck disable=SC2034  # used by the scripts that source this
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
