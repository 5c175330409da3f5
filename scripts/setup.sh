#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install everything the workbench needs on a Debian 12 machine, idempotently:
# Debian packages (toolchain, QEMU, workload tools) and a Python venv in the
# cache with virtme-ng and matplotlib from PyPI. Quick when all is present.
. "$(dirname "$0")/common.sh"

[ $# -eq 0 ] || die "usage: $0 (no arguments)"
apt_install build-essential flex bison bc libelf-dev libssl-dev cpio kmod rsync git \
	ccache xz-utils zstd busybox-static e2fsprogs util-linux \
	fio python3 python3-venv
qemu_install
"$AFMALLOC_TOP/scripts/kernel-source.sh" >/dev/null

# virtme-ng and matplotlib, pinned, in our own venv (no system pip changes).
req="virtme-ng==1.42 matplotlib==3.9.2"
[ "$(cat "$AFMALLOC_VENV/.afmalloc-req" 2>/dev/null)" = "$req" ] || lock venv
if [ "$(cat "$AFMALLOC_VENV/.afmalloc-req" 2>/dev/null)" != "$req" ]; then
	log "creating Python venv $AFMALLOC_VENV ($req)"
	python3 -m venv "$AFMALLOC_VENV" 2>/dev/null || {
		/usr/bin/python3 -m venv "$AFMALLOC_VENV"; }
	"$AFMALLOC_VENV/bin/pip" install -q --disable-pip-version-check $req >&2
	echo "$req" > "$AFMALLOC_VENV/.afmalloc-req"
fi
mkdir -p "$CCACHE_DIR"
command -v ccache >/dev/null && ccache -M 5G >/dev/null
