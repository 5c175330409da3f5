#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The arm64 guests' root file system: a minimal Debian 12 (bookworm) for
# arm64 in $AFMALLOC_CACHE/arm64/root-HASH (HASH: of its package list),
# made once, and its path printed.
#   scripts/arm64-root.sh --kernel DIR
# An arm64 guest cannot run the host's x86 programs, so the benchmarks'
# guest scripts (bash, tar, mkfs.ext4, awk, ...) need a root of their own.
# debootstrap unpacks its packages on the host (--foreign: no arm64 program
# runs there, so no qemu-user or binfmt_misc); their configuration (the
# second stage) runs inside an arm64 guest booted from the built kernel DIR
# (scripts/build-guest.sh --arch arm64) by scripts/vm-run.sh. Made in a
# temporary folder, renamed when done: an interrupted run leaves no root
# that looks finished. A new package list makes a new root; the old one
# stays until removed by hand (~250 MB).
# Under TCG the second stage takes several minutes.

# Inside the guest: configure what debootstrap unpacked.
if [ "${1:-}" = --second-stage ]; then
	set -eu
	[ "${AFMALLOC_IN_VM:-}" = 1 ] || { echo "arm64-root: --second-stage runs in the guest" >&2; exit 1; }
	# virtme-ng's init hides these under empty tmpfs: the packages
	# debootstrap unpacked wait in /var/cache/apt/archives.
	for d in /var/cache /var/lib/apt /var/log; do
		! mountpoint -q "$d" || umount "$d"
	done
	/debootstrap/debootstrap --second-stage
	# virtme-ng's init ends the guest with poweroff -f, which minbase
	# lacks (no init system): busybox's.
	[ -e /usr/sbin/poweroff ] || ln -s /bin/busybox /usr/sbin/poweroff
	echo "arm64-root: second stage done ($(uname -m), $(. /etc/os-release; echo "$PRETTY_NAME"))"
	exit 0
fi

. "$(dirname "$0")/common.sh"

kernel=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=${2:?--kernel needs a build dir}; shift ;;
	-h|--help) echo "usage: $0 --kernel DIR"; exit 0 ;;
	*) die "unknown option '$1' (usage: $0 --kernel DIR)" ;;
	esac
	shift
done
suite=bookworm
# What the guest scripts run beyond debootstrap's minbase (bash, coreutils,
# tar, grep, sed, mawk, util-linux, findutils, gzip): ext4's mkfs, ps,
# busybox for poweroff, python3 for the churn benchmark's sampler, udev
# for virtme-ng's script ports (/dev/virtio-ports/virtme.*; without them
# the script's output goes through the emulated serial console, which
# under TCG reached the host many minutes late).
pkgs=e2fsprogs,procps,busybox,python3,udev
mirror=${AFMALLOC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
want="$suite minbase $pkgs"
# One folder per package list: a run booted on the root of another list
# (another checkout, an earlier commit) keeps its own while a new one is made.
root=$AFMALLOC_CACHE/arm64/root-$(echo "$want" | sha256sum | cut -c1-12)
if [ "$(cat "$root/.afmalloc-root" 2>/dev/null)" = "$want" ]; then
	echo "$root"
	exit 0
fi
need_root "making the arm64 root file system"
[ -n "$kernel" ] || die "no arm64 root at $root yet: making it needs --kernel DIR (an arm64 guest kernel, scripts/build-guest.sh --arch arm64)"
lock arm64-root
if [ "$(cat "$root/.afmalloc-root" 2>/dev/null)" = "$want" ]; then
	echo "$root"
	exit 0
fi
apt_install debootstrap
tmp=$root.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
log "arm64 root: unpacking Debian $suite (minbase + $pkgs) into $tmp"
debootstrap --foreign --arch=arm64 --variant=minbase --include="$pkgs" \
	"$suite" "$tmp" "$mirror" > "$tmp.log" 2>&1 ||
	{ tail -n 20 "$tmp.log" >&2; die "debootstrap --foreign failed (log: $tmp.log)"; }
# In a container debootstrap makes /proc a link to the host's: the guest
# mounts its own there.
if [ -L "$tmp/proc" ]; then rm "$tmp/proc"; mkdir "$tmp/proc"; fi
log "arm64 root: second stage in an arm64 guest (several minutes under TCG)"
# No boot deadline: the unconfigured root has no script ports, and the
# serial console's late output can hide the script's start for as long.
"$AFMALLOC_TOP/scripts/vm-run.sh" --arch arm64 --root "$tmp" --kernel "$kernel" \
	--timeout 3600 --no-dmesg-check --boot-deadline 0 --boot-retries 0 \
	-- "$AFMALLOC_TOP/scripts/arm64-root.sh" --second-stage >&2 ||
	die "the second stage failed in the guest (its console: the log vm-run.sh named above)"
if [ ! -x "$tmp/sbin/mkfs.ext4" ] || [ -d "$tmp/debootstrap" ]; then
	die "the second stage left no configured root in $tmp"
fi
echo "$want" > "$tmp/.afmalloc-root"
rm -rf "$root"	# a root of this list left unfinished by an older script
mv "$tmp" "$root"
rm -f "$tmp.log"
log "arm64 root: $root"
echo "$root"
