#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the x86_64 guest kernel from the prepared tree into an O= dir:
#   tinyconfig + scripts/config/guest.config [+ debug.config with --debug,
#   debug.config and kasan.config with --kasan, or pagealloc.config with
#   --pagealloc].
# The config is regenerated only when the fragments change, so rebuilds are
# incremental (and ccache'd when ccache is installed). Every option a
# fragment asks for is checked in the final .config.
# Prints the build directory (bzImage in arch/x86/boot/), and nothing else
# on stdout: callers take it with $(...), so make's output (syncconfig's
# list of new options when a Kconfig changed, say) goes to stderr.
. "$(dirname "$0")/common.sh"

variant=guest
frags=("$AFMALLOC_TOP/scripts/config/guest.config")
while [ $# -gt 0 ]; do
	case "$1" in
	--debug) variant=guest-debug; frags+=("$AFMALLOC_TOP/scripts/config/debug.config") ;;
	--kasan) variant=guest-kasan; frags+=("$AFMALLOC_TOP/scripts/config/debug.config"
					      "$AFMALLOC_TOP/scripts/config/kasan.config") ;;
	--pagealloc) variant=guest-pagealloc; frags+=("$AFMALLOC_TOP/scripts/config/pagealloc.config") ;;
	-h|--help) echo "usage: $0 [--debug | --kasan | --pagealloc]"; exit 0 ;;
	*) die "unknown option '$1' (usage: $0 [--debug | --kasan | --pagealloc])" ;;
	esac
	shift
done

apt_install flex bison bc libelf-dev libssl-dev cpio kmod
lock "build-$variant"
tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
out=$AFMALLOC_BUILD/$variant
mkdir -p "$out"
mk=(make -C "$tree" O="$out" ARCH=x86_64 CC="$(kcc)" -j"$AFMALLOC_JOBS")

want=$(cat "${frags[@]}" | sha256sum | cut -d' ' -f1)
if [ ! -f "$out/.config" ] || [ "$(cat "$out/.afmalloc-config" 2>/dev/null)" != "$want" ]; then
	log "configuring $variant: tinyconfig + ${frags[*]##*/}"
	"${mk[@]}" -s tinyconfig >/dev/null
	(cd "$tree" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m -O "$out" \
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

log "building $variant kernel in $out"
"${mk[@]}" -s bzImage modules >&2
"${mk[@]}" -s modules_prepare >&2
# The tree is shared by every run using the cache: if another checkout's
# run prepared it during this build, prepare it again and build again.
for try in 1 2; do
	"$AFMALLOC_TOP/scripts/prepare-tree.sh" --check && break
	[ "$try" = 2 ] && die "the shared tree $tree keeps changing under this build (another run from another checkout); run again when it is done, or give each checkout its own AFMALLOC_TREE and AFMALLOC_BUILD"
	log "building $variant again from this checkout's sources"
	"$AFMALLOC_TOP/scripts/prepare-tree.sh" >/dev/null
	"${mk[@]}" -s bzImage modules >&2
	"${mk[@]}" -s modules_prepare >&2
done
# The project commit this kernel was built from, for the benchmarks'
# meta.json (meta_kernel_fields); "-dirty": uncommitted changes.
git -C "$AFMALLOC_TOP" describe --always --dirty > "$out/.afmalloc-source" 2>/dev/null ||
	echo unknown > "$out/.afmalloc-source"
echo "$out"
