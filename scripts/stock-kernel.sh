#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepare an unmodified Debian 6.12 kernel for the out-of-tree afmalloc
# module: install linux-image-KVER and linux-headers-KVER (unless --kver is
# given, the newest 6.12.N+deb12-amd64 already installed with its headers,
# else the newest the archive offers; apt-get, idempotent; the image goes
# into /boot and the boot loader's menu, it is booted only in a VM here),
# then build afmalloc.ko against those headers in
# $AFMALLOC_BUILD/stock-KVER (never in the checkout: the module sources are
# copied there first), and, when the kernel has CONFIG_KUNIT, a second
# build with the KUnit suites (afmalloc.ko with test hooks +
# afmalloc_kunit.ko).
#
# Prints, on stdout, shell assignments for the callers:
#   STOCK_KVER=6.12.N+deb12-amd64
#   STOCK_KERNEL=/boot/vmlinuz-KVER
#   STOCK_MODULE=.../stock-KVER/module/afmalloc.ko
#   STOCK_KUNIT_DIR=.../stock-KVER/kunit     (empty without CONFIG_KUNIT)
#   STOCK_KUNIT_CONFIG=y|m|n                 (CONFIG_KUNIT of that kernel)
#
#   scripts/stock-kernel.sh [--kver KVER] [--no-build]
. "$(dirname "$0")/common.sh"

kver=${AFMALLOC_STOCK_KVER:-} build=1
while [ $# -gt 0 ]; do
	case "$1" in
	--kver) kver=${2:?--kver needs a kernel release, e.g. 6.12.117+deb12-amd64}; shift ;;
	--no-build) build=0 ;;
	-h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1'" ;;
	esac
	shift
done

# newest_kver: the newest linux-image-6.12.N+deb12-amd64 with an install
# candidate, from the local package lists (updated once if they know none).
newest_kver() {
	local names
	names=$(apt-cache pkgnames linux-image-6.12. 2>/dev/null |
		grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' | sort -V -r || true)
	if [ -z "$names" ]; then
		need_root "updating the package lists"
		apt-get update -q >/dev/null 2>&1 || true
		names=$(apt-cache pkgnames linux-image-6.12. 2>/dev/null |
			grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' | sort -V -r || true)
	fi
	local n
	for n in $names; do
		# Not "| grep -q": under pipefail, apt-cache would die of SIGPIPE.
		if [[ "$(apt-cache policy "$n")" == *"Candidate: "[0-9]* ]]; then
			echo "${n#linux-image-}"
			return 0
		fi
	done
	return 1
}

# installed_kver: the newest linux-image-6.12.N+deb12-amd64 already
# installed with its headers, if any: taken before the archive's newest, so
# that a kernel update in the archive does not install another kernel (and
# its /boot entry) on the host at every run.
installed_kver() {
	local n
	n=$(dpkg-query -W -f '${Status} ${Package}\n' 'linux-headers-6.12.*+deb12-amd64' 2>/dev/null |
		sed -n 's/^install ok installed linux-headers-\(6\.12\.[0-9]*+deb12-amd64\)$/\1/p' |
		sort -V -r) || true
	for n in $n; do
		[ -r "/boot/vmlinuz-$n" ] && [ -r "/boot/config-$n" ] && { echo "$n"; return 0; }
	done
	return 1
}

if [ -z "$kver" ]; then
	kver=$(installed_kver) || kver=$(newest_kver) ||
		die "no linux-image-6.12.*+deb12-amd64 in the package lists (bookworm-security/backports enabled?)"
fi
[[ "$kver" =~ ^6\.12\.[0-9]+\+deb12-[a-z0-9-]+$ ]] ||
	die "--kver must look like 6.12.117+deb12-amd64, not '$kver'"
log "stock kernel: $kver"

apt_install "linux-image-$kver" "linux-headers-$kver" gcc make rsync
kernel=/boot/vmlinuz-$kver
kdir=/usr/src/linux-headers-$kver
kconfig=/boot/config-$kver
[ -r "$kernel" ] || die "$kernel missing after installing linux-image-$kver"
[ -f "$kdir/Makefile" ] || die "$kdir missing after installing linux-headers-$kver"
[ -r "$kconfig" ] || die "$kconfig missing"

kunit=$(sed -n 's/^CONFIG_KUNIT=\([ym]\)$/\1/p' "$kconfig")
kunit=${kunit:-n}
grep -qx 'CONFIG_ZPOOL=y' "$kconfig" ||
	log "warning: $kver has no CONFIG_ZPOOL: afmalloc.ko will load without the zpool driver"

out=$AFMALLOC_BUILD/stock-$kver
# build_module DIR MAKE-VARS...: copy the module sources to DIR, build there.
build_module() {
	local dir=$1; shift
	local mlog=$dir/build.log
	mkdir -p "$dir"
	# Only sources: build outputs in DIR (excluded names) survive --delete.
	# By content (-rc): an unchanged file keeps its mtime, so a rebuild is
	# incremental, and a changed one gets a new mtime even when it comes
	# from another checkout with an older one (-a kept that, and kbuild
	# then kept the other checkout's objects).
	rsync -rc --delete --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.d' --exclude='*.a' \
		--exclude='.kunitconfig' \
		"$AFMALLOC_TOP/Kbuild" "$AFMALLOC_TOP/mm" "$AFMALLOC_TOP/include" \
		"$AFMALLOC_TOP/kunit" "$dir/"
	log "building afmalloc against $kdir in $dir ($*)"
	if ! make -C "$kdir" M="$dir" -j"$AFMALLOC_JOBS" "$@" modules >"$mlog" 2>&1; then
		tail -n 40 "$mlog" >&2
		die "module build failed (log: $mlog)"
	fi
	grep -E 'warning:|error:' "$mlog" >&2 || true
}

if [ "$build" = 1 ]; then
	lock "stock-$kver"
	build_module "$out/module" CONFIG_AFMALLOC=m CONFIG_AFMALLOC_WERROR=y
	[ -f "$out/module/afmalloc.ko" ] || die "no afmalloc.ko in $out/module"
	if [ "$kunit" != n ]; then
		build_module "$out/kunit" CONFIG_AFMALLOC=m CONFIG_AFMALLOC_KUNIT_TEST=m \
			CONFIG_AFMALLOC_WERROR=y
		[ -f "$out/kunit/afmalloc_kunit.ko" ] || die "no afmalloc_kunit.ko in $out/kunit"
	fi
fi

printf "STOCK_KVER=%q\n" "$kver"
printf "STOCK_KERNEL=%q\n" "$kernel"
printf "STOCK_MODULE=%q\n" "$out/module/afmalloc.ko"
if [ "$kunit" != n ]; then printf "STOCK_KUNIT_DIR=%q\n" "$out/kunit"; else echo "STOCK_KUNIT_DIR="; fi
echo "STOCK_KUNIT_CONFIG=$kunit"
