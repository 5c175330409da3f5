#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the guest kernel from the prepared tree into an O= dir:
#   tinyconfig + scripts/config/guest.config + guest-ARCH.config
#   [+ debug.config with --debug, debug.config and kasan.config with
#   --kasan, or pagealloc.config with --pagealloc].
# ARCH is x86_64, or arm64 with --arch arm64 (cross-compiled; 4 KiB pages,
# 16 KiB with --pages 16K: arm64-16k.config), booted under QEMU's virt
# machine with an arm64 root of its own (scripts/arm64-root.sh).
# The config is regenerated only when the fragments change, so rebuilds are
# incremental (and ccache'd when ccache is installed). Every option a
# fragment asks for is checked in the final .config.
# Prints the build directory (bzImage in arch/x86/boot/, Image in
# arch/arm64/boot/), and nothing else on stdout: callers take it with
# $(...), so make's output (syncconfig's list of new options when a
# Kconfig changed, say) goes to stderr.
. "$(dirname "$0")/common.sh"

usage="usage: $0 [--arch x86_64|arm64] [--pages 4K|16K] [--debug | --kasan | --pagealloc]"
variant=guest arch=x86_64 pages=4K
cfg=$AFMALLOC_TOP/scripts/config
frags=("$cfg/guest.config")
while [ $# -gt 0 ]; do
	case "$1" in
	--arch) arch=${2:?"$usage"}; shift ;;
	--pages) pages=${2:?"$usage"}; shift ;;
	--debug) variant=guest-debug; frags+=("$cfg/debug.config") ;;
	--kasan) variant=guest-kasan; frags+=("$cfg/debug.config" "$cfg/kasan.config") ;;
	--pagealloc) variant=guest-pagealloc; frags+=("$cfg/pagealloc.config") ;;
	-h|--help) echo "$usage"; exit 0 ;;
	*) die "unknown option '$1' ($usage)" ;;
	esac
	shift
done
case "$arch" in
x86_64) image=arch/x86/boot/bzImage cross=() ;;
arm64) image=arch/arm64/boot/Image cross=(CROSS_COMPILE=aarch64-linux-gnu-)
	variant=${variant/guest/guest-arm64} ;;
*) die "--arch must be x86_64 or arm64, not '$arch'" ;;
esac
case "$pages" in
4K|4k) ;;
16K|16k) [ "$arch" = arm64 ] || die "--pages 16K needs --arch arm64"
	variant=${variant/guest-arm64/guest-arm64-16k}; frags+=("$cfg/arm64-16k.config") ;;
*) die "--pages must be 4K or 16K, not '$pages'" ;;
esac
frags+=("$cfg/guest-$arch.config")

apt_install flex bison bc libelf-dev libssl-dev cpio kmod
[ "$arch" = x86_64 ] || apt_install gcc-aarch64-linux-gnu
lock "build-$variant"
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
out=$AFMALLOC_BUILD/$variant
mkdir -p "$out"
if [ "$arch" = x86_64 ]; then cc=$(kcc); else cc=$(kcc aarch64-linux-gnu-gcc); fi
mk=(make -C "$tree" O="$out" ARCH="$arch" "${cross[@]}" CC="$cc" -j"$AFMALLOC_JOBS")

want=$(cat "${frags[@]}" | sha256sum | cut -d' ' -f1)
if [ ! -f "$out/.config" ] || [ "$(cat "$out/.afmalloc-config" 2>/dev/null)" != "$want" ]; then
	log "configuring $variant: tinyconfig + ${frags[*]##*/}"
	"${mk[@]}" -s tinyconfig >/dev/null
	(cd "$tree" && ARCH=$arch scripts/kconfig/merge_config.sh -m -O "$out" \
		"$out/.config" "${frags[@]}" >/dev/null)
	"${mk[@]}" -s olddefconfig >&2
	# Check every request made it (an unmet dependency drops it silently).
	bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=n) opt=${line%%=*}
			grep -q "^$opt=[ym]" "$out/.config" && { echo "  $opt is set, wanted n" >&2; bad=1; } ;;
		CONFIG_*=*) grep -qxF "$line" "$out/.config" ||
			{ echo "  wanted $line, got: $(grep "^${line%%=*}=\|# ${line%%=*} is" "$out/.config" || echo unset)" >&2; bad=1; } ;;
		"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}
			grep -q "^$opt=[ym]" "$out/.config" && { echo "  $opt is set, wanted unset" >&2; bad=1; } ;;
		esac
	done < <(cat "${frags[@]}")
	[ $bad -eq 0 ] || die "the $variant config lacks options its fragments ask for (see above)"
	echo "$want" > "$out/.afmalloc-config"
fi

# build: vmlinux and modules through ccache, then the boot image without
# it. x86's bzImage embeds the compressed vmlinux with an .incbin in
# arch/x86/boot/compressed/piggy.S, whose text holds only the lengths;
# ccache (depend mode, as here) does not hash the file .incbin reads, so
# after a change that keeps both lengths (an instruction for another of
# its size) it returned the previous build's piggy.o, and the bzImage
# booted the kernel from before the change (seen: a one-instruction
# change to mm/afmalloc/mm/core.c). The boot image is a few small files:
# piggy.o made again each time (make alone keeps a stale one: it is newer
# than piggy.S), the rest without ccache, and checked against vmlinux
# (image_is_vmlinux).
build() {
	"${mk[@]}" -s vmlinux modules >&2
	rm -f "$out/arch/x86/boot/compressed/piggy.o"
	CCACHE_DISABLE=1 "${mk[@]}" -s "${image##*/}" >&2
	"${mk[@]}" -s modules_prepare >&2
}
# image_is_vmlinux: the boot image holds the vmlinux just linked (their
# version banners, which carry the build number and time, match).
image_is_vmlinux() {
	local img=$out/$image re='^Linux version .* #[0-9]+ ' want got
	want=$(strings "$out/vmlinux" | grep -m1 -E "$re")
	if [ "$arch" = x86_64 ]; then
		got=$("$tree/scripts/extract-vmlinux" "$img" 2>/dev/null | strings | grep -m1 -E "$re")
	else
		got=$(strings "$img" | grep -m1 -E "$re")
	fi
	[ -n "$want" ] && [ "$want" = "$got" ]
}

log "building $variant kernel in $out"
build
# The tree is shared by every run using the cache: if another checkout's
# run prepared it during this build, prepare it again and build again.
for try in 1 2; do
	"$AFMALLOC_TOP/scripts/prepare-tree.sh" --check && break
	[ "$try" = 2 ] && die "the shared tree $tree keeps changing under this build (another run from another checkout); run again when it is done, or give each checkout its own AFMALLOC_TREE and AFMALLOC_BUILD"
	log "building $variant again from this checkout's sources"
	"$AFMALLOC_TOP/scripts/prepare-tree.sh" >/dev/null
	build
done
[ -f "$out/$image" ] || die "no $image in $out after the build"
image_is_vmlinux || die "$out/$image does not hold the vmlinux just built (its version banner differs)"
# The project commit this kernel was built from, for the benchmarks'
# meta.json (meta_kernel_fields); "-dirty": uncommitted changes.
git -C "$AFMALLOC_TOP" describe --always --dirty > "$out/.afmalloc-source" 2>/dev/null ||
	echo unknown > "$out/.afmalloc-source"
echo "$out"
