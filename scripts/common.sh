# SPDX-License-Identifier: GPL-2.0
# Shared settings for the afmalloc workbench scripts. Source it; do not run it.
#
# Every cache lives outside the checkout, under $AFMALLOC_CACHE
# (default ~/.cache/afmalloc), so a fresh clone reuses kernel trees,
# build directories, ccache and datasets from earlier runs.

set -euo pipefail

AFMALLOC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AFMALLOC_CACHE=${AFMALLOC_CACHE:-$HOME/.cache/afmalloc}
AFMALLOC_SRC=${AFMALLOC_SRC:-$AFMALLOC_CACHE/src/linux-6.12}     # pristine, never edited
AFMALLOC_TREE=${AFMALLOC_TREE:-$AFMALLOC_CACHE/tree/linux-6.12}  # working copy with overlay
AFMALLOC_BUILD=${AFMALLOC_BUILD:-$AFMALLOC_CACHE/build}          # O= build dirs
AFMALLOC_VENV=${AFMALLOC_VENV:-$AFMALLOC_CACHE/venv}             # virtme-ng, matplotlib
AFMALLOC_DATA=${AFMALLOC_DATA:-$AFMALLOC_CACHE/data}             # benchmark datasets
AFMALLOC_JOBS=${AFMALLOC_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$AFMALLOC_CACHE/ccache}
# ccache's depend mode: a miss costs what the compiler does, not also a
# preprocessor run (ccache 4.8, kernel objects from an empty cache: 80 s
# against 108 s for mm/ and kernel/; plain gcc 78 s). Hits are direct-mode
# hits either way.
export CCACHE_DEPEND=${CCACHE_DEPEND:-1}
export AFMALLOC_TOP AFMALLOC_CACHE AFMALLOC_SRC AFMALLOC_TREE AFMALLOC_BUILD \
	AFMALLOC_VENV AFMALLOC_DATA AFMALLOC_JOBS

die() { echo "error: $*" >&2; exit 1; }
log() { echo "[afmalloc] $*" >&2; }

need_root() {
	[ "$(id -u)" -eq 0 ] || die "$1 needs root (run as root, e.g. with sudo)"
}

# kcc [CC]: CC (default gcc), behind ccache when it is installed.
kcc() {
	if command -v ccache >/dev/null 2>&1; then echo "ccache ${1:-gcc}"; else echo "${1:-gcc}"; fi
}

# apt_install PKG...: install Debian packages that are missing (idempotent).
# Concurrent runs take turns (the 'apt' lock; apt-get also waits for a dpkg
# lock held by anything else).
apt_install() {
	local missing=()
	_apt_missing "$@"
	[ ${#missing[@]} -eq 0 ] && return 0
	need_root "installing ${missing[*]}"
	(
	lock apt
	missing=()
	_apt_missing "$@"
	[ ${#missing[@]} -eq 0 ] && exit 0
	_apt_get_install
	) || exit
}

# _apt_missing PKG...: the packages not installed, into the caller's missing.
_apt_missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
}

# _apt_get_install [APT-GET-INSTALL-OPTION...]: install the caller's
# missing packages (with those options), apt-get update first when the
# last one is over 12 hours old or its stamp was removed.
_apt_get_install() {
	log "installing Debian packages: ${missing[*]}${*:+ ($*)}"
	mkdir -p "$AFMALLOC_CACHE"
	local alog=$AFMALLOC_CACHE/apt.log
	if [ ! -f "$AFMALLOC_CACHE/.apt-updated" ] ||
	   [ -n "$(find "$AFMALLOC_CACHE/.apt-updated" -mmin +720 2>/dev/null)" ]; then
		apt-get update -q -o DPkg::Lock::Timeout=600 >"$alog" 2>&1 || { tail -n 20 "$alog" >&2; die "apt-get update failed"; }
		touch "$AFMALLOC_CACHE/.apt-updated"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=600 "$@" "${missing[@]}" >"$alog" 2>&1 ||
		{ tail -n 20 "$alog" >&2; die "could not install ${missing[*]} (log: $alog)"; }
}

# QEMU_MIN: the oldest qemu-system-x86 whose TCG keeps the flags right
# across cmpxchg16b. 7.2 (Debian 12's) computes them, after an instruction
# that set them in the same translation block, from a stale operation:
# garbage flags (reserved bits, TF, DF, IF) reach the guest kernel through
# SLUB's per-CPU cmpxchg16b (tests/vm/cx16-flags.c; docs/log.md, "Data
# integrity: the emulator"). 8.0 rewrote the instruction's translation
# (checked here on 10.0, bookworm-backports' version).
QEMU_MIN=1:8.0

# qemu_ok [PKG]: the installed PKG (default qemu-system-x86) is at least
# QEMU_MIN.
qemu_ok() {
	local v
	v=$(dpkg-query -W -f='${Version}' "${1:-qemu-system-x86}" 2>/dev/null) || return 1
	[ -n "$v" ] && dpkg --compare-versions "$v" ge "$QEMU_MIN"
}

# qemu_install [PKG]: PKG (default qemu-system-x86; qemu-system-arm for
# make kunit-arm64, whose version must match the x86 one's common files) at
# least QEMU_MIN; on Debian 12 from bookworm-backports (its source added
# once, as a file of ours in sources.list.d; backports are pinned below the
# release, so nothing else is taken from there), elsewhere the release's
# own.
qemu_install() {
	local pkg=${1:-qemu-system-x86}

	qemu_ok "$pkg" && return 0
	if ! grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
		apt_install "$pkg"
		qemu_ok "$pkg" || log "warning: $pkg older than $QEMU_MIN: TCG guests may see wrong flags after cmpxchg16b"
		return 0
	fi
	need_root "installing $pkg from bookworm-backports"
	(
	lock apt
	qemu_ok "$pkg" && exit 0
	local src=/etc/apt/sources.list.d/afmalloc-bookworm-backports.sources
	if ! grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		log "adding bookworm-backports to apt's sources ($src)"
		printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' \
			'Suites: bookworm-backports' 'Components: main' \
			'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' > "$src"
	fi
	# The release's 7.2 miscomputes flags under TCG; the stamp goes so
	# that apt-get update reads the backports list first.
	rm -f "$AFMALLOC_CACHE/.apt-updated"
	missing=("$pkg")
	_apt_get_install -t bookworm-backports
	qemu_ok "$pkg" || die "$pkg is still older than $QEMU_MIN after the install (log: $AFMALLOC_CACHE/apt.log)"
	) || exit
}

# lock NAME: hold an exclusive lock on $AFMALLOC_CACHE/locks/NAME until this
# shell exits, so concurrent runs never share a tree or build dir mid-build.
lock() {
	local fd f=$AFMALLOC_CACHE/locks/$1
	mkdir -p "$AFMALLOC_CACHE/locks"
	# <>: opening must not truncate what the holder wrote into it.
	exec {fd}<>"$f"
	if ! flock -n "$fd"; then
		log "waiting for another run holding the '$1' lock ($(head -c 300 "$f" 2>/dev/null || true))"
		flock "$fd"
	fi
	# Who holds it, for the next one that waits.
	printf 'pid %s, since %s: %s' "$$" "$(date -u +%FT%TZ)" \
		"$(tr '\0' ' ' < "/proc/$$/cmdline" 2>/dev/null | head -c 200)" > "$f"
}

# test_prog NAME: tests/vm/NAME.c built for the host (and the guest, which
# shares its userland) into $AFMALLOC_BUILD/NAME/NAME when missing or built
# from other source; prints its path.
test_prog() {
	local bdir=$AFMALLOC_BUILD/$1 src=$AFMALLOC_TOP/tests/vm/$1.c sum
	mkdir -p "$bdir"
	# By the source's content, not its mtime (another checkout's may be
	# older); built to a temporary name, so an interrupted build leaves
	# no binary to trust.
	sum=$(sha256sum < "$src" | cut -c1-16)
	if [ ! -x "$bdir/$1" ] || [ "$(cat "$bdir/$1.src" 2>/dev/null)" != "$sum" ]; then
		gcc -O2 -Wall -Werror -pthread -o "$bdir/$1.tmp" "$src" ||
			die "cannot build $src"
		mv "$bdir/$1.tmp" "$bdir/$1"
		echo "$sum" > "$bdir/$1.src"
	fi
	echo "$bdir/$1"
}

# guest_emulator LOG: the QEMU scripts/vm-run.sh booted the guest of LOG
# with (its --version line, Debian's version in brackets), from LOG or
# else from the guest console kept beside it (console.log).
guest_emulator() {
	local e
	e=$(cat "$1" "$(dirname "$1")/console.log" 2>/dev/null |
		sed -n 's/^\[afmalloc\] emulator: //p' | head -n 1)
	echo "${e:-unknown}"
}

# guest_accel LOG: the accelerator scripts/vm-run.sh reported in LOG (its
# last word on it: a probed KVM whose boot hung is given up for TCG).
guest_accel() {
	local a
	a=$(sed -n 's/.*accelerator: \([a-z]*\).*/\1/p' "$1" | tail -n 1)
	echo "${a:-unknown}"
}

# meta_kernel_fields KDIR LOG: the meta.json lines every benchmark records
# about the kernel it booted (release, config hash), the project commit it
# was built from (written by scripts/build-guest.sh at build time; "-dirty"
# if the checkout had uncommitted changes) and the accelerator.
meta_kernel_fields() {
	printf '  "kernel": "%s",\n  "config_sha256": "%s",\n  "source": "%s",\n  "accelerator": "%s",\n  "emulator": "%s",\n' \
		"$(cat "$1/include/config/kernel.release")" \
		"$(sha256sum "$1/.config" | cut -c1-16)" \
		"$(cat "$1/.afmalloc-source" 2>/dev/null || echo unknown)" \
		"$(guest_accel "$2")" "$(guest_emulator "$2")"
}

# meta_host_fields LOAD_START LOAD_END T0: the meta.json lines on the shared
# host (CPUs, 1-minute load before and after), the date, the seconds since
# T0 (a $SECONDS value) and, last, "command": $cmd.
meta_host_fields() {
	printf '  "host_cpus": %s,\n  "host_shared": true,\n  "host_load1_start": %s,\n  "host_load1_end": %s,\n' \
		"$(nproc)" "$1" "$2"
	printf '  "date": "%s",\n  "seconds": %d,\n  "command": "%s"\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" $((SECONDS - $3)) "$cmd"
}
