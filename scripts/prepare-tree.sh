#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prepare the working kernel tree $AFMALLOC_TREE:
#   1. a writable copy of the pristine 6.12 source (made once);
#   2. patches/*.patch applied in order (git apply), re-applied from a clean
#      copy of the touched files whenever the series changes;
#   3. mm/Kconfig and mm/Makefile hooked to mm/afmalloc/, the
#      documentation to Documentation/mm/index.rst, a MAINTAINERS entry;
#   4. the project's sources overlaid: Kconfig Kbuild mm/ kunit/ include/ as
#      mm/afmalloc/, include/linux/afmalloc.h as include/linux/afmalloc.h,
#      Documentation/mm/afmalloc.rst as itself.
# Idempotent; files whose content did not change keep their mtime, so
# incremental kernel builds stay incremental. Prints the tree path.
#
#   scripts/prepare-tree.sh --check: changes nothing; exits 0 if the tree
#   holds this checkout's series and sources, 1 (saying so) if another run,
#   from another checkout, prepared it since (the builders check after
#   building: the tree is shared by every run using the cache).
# shellcheck source=common.sh disable=SC1091
. "$(dirname "$0")/common.sh"

check=0
case "${1:-}" in
--check) check=1; shift ;;
esac
[ $# -eq 0 ] || die "usage: $0 [--check]"
"$AFMALLOC_TOP/scripts/kernel-source.sh" >/dev/null
command -v rsync >/dev/null || apt_install rsync
command -v git >/dev/null || apt_install git

tree=$AFMALLOC_TREE
# git apply must never find an enclosing repository of the cache folder.
GIT_CEILING_DIRECTORIES=$(dirname "$tree")
export GIT_CEILING_DIRECTORIES
state=$tree/.afmalloc-state
shopt -s nullglob
patches=("$AFMALLOC_TOP"/patches/*.patch)
want=$( { cat "$0"; for p in "${patches[@]}"; do cat "$p"; done; } | sha256sum | cut -d' ' -f1)
# The project's files the tree holds at their own paths.
own_files=(include/linux/afmalloc.h Documentation/mm/afmalloc.rst)
# The project's sources as the tree holds them (mm/afmalloc/).
overlay() {
	rsync -rc --delete --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.mod*' \
		--include='/Kconfig' --include='/Kbuild' \
		--include='/mm/***' --include='/kunit/***' --include='/include/***' \
		--include='/bench/' --include='/bench/module/***' \
		--include='/bench/data/' --include='/bench/data/sizes-lz4*.csv' \
		--exclude='*' "$@" "$AFMALLOC_TOP/" "$tree/mm/afmalloc/"
}

if [ "$check" = 1 ]; then
	lock tree
	stale=()
	[ "$(head -n1 "$state" 2>/dev/null)" = "$want" ] || stale+=("the patch series")
	# Not grep -q: it would stop reading, and rsync's SIGPIPE fail the pipe.
	# shellcheck disable=SC2143
	[ -z "$(overlay -n --out-format='%n' 2>/dev/null | grep -v '/$')" ] || stale+=("mm/afmalloc/")
	for f in "${own_files[@]}"; do
		[ ! -f "$AFMALLOC_TOP/$f" ] || cmp -s "$AFMALLOC_TOP/$f" "$tree/$f" || stale+=("$f")
	done
	[ ${#stale[@]} -eq 0 ] && exit 0
	log "the shared tree $tree no longer holds this checkout's ${stale[*]}: another run (another checkout) prepared it"
	exit 1
fi

lock tree

if [ ! -f "$tree/.afmalloc-copied" ]; then
	log "making a working copy of $AFMALLOC_SRC in $tree (once)"
	rm -rf "$tree"
	mkdir -p "$(dirname "$tree")"
	# A copy an interrupted run left half done: cp would nest into it.
	rm -rf "$tree.tmp"
	cp -a "$AFMALLOC_SRC" "$tree.tmp"
	chmod -R u+w "$tree.tmp"
	rm -f "$tree.tmp/.afmalloc-unpacked"
	mv "$tree.tmp" "$tree"
	touch "$tree/.afmalloc-copied"
fi

hook_kconfig='source "mm/afmalloc/Kconfig"'
hook_make='obj-y += afmalloc/'
hook_doc='   afmalloc'
hook_maint='AFMALLOC COMPRESSED MEMORY ALLOCATOR'
maint_entry="$hook_maint
M:	afmalloc developers <afmalloc@example.invalid>
L:	linux-mm@kvack.org
S:	Maintained
F:	Documentation/mm/afmalloc.rst
F:	include/linux/afmalloc.h
F:	mm/afmalloc/
"
have=$(head -n1 "$state" 2>/dev/null || true)

if [ "$want" != "$have" ]; then
	# Put back every file the previous series (and hooks) touched.
	if [ -f "$state" ]; then
		tail -n +2 "$state" | while read -r f; do
			if [ -f "$AFMALLOC_SRC/$f" ]; then
				cp "$AFMALLOC_SRC/$f" "$tree/$f" && chmod u+w "$tree/$f"
			else
				rm -f "$tree/$f"
			fi
		done
	fi
	touched=$(mktemp)
	printf '%s\n' mm/Kconfig mm/Makefile Documentation/mm/index.rst MAINTAINERS > "$touched"
	for p in "${patches[@]}"; do
		(cd "$tree" && git apply --numstat "$p" | cut -f3- >> "$touched") ||
			die "cannot read $p"
	done
	# Before the first patch: every file the series touches, so that a
	# run stopped half way (a patch that does not apply, an interrupt)
	# leaves a state the next run puts back from the pristine source.
	{ echo incomplete; sort -u "$touched"; } > "$state"
	for p in "${patches[@]}"; do
		log "applying $(basename "$p")"
		(cd "$tree" && git apply --whitespace=nowarn "$p") ||
			die "$(basename "$p") does not apply to $(basename "$AFMALLOC_SRC"); the next run starts the series again from the pristine files"
	done
	# Hooks: our Kconfig after zsmalloc's options, our kbuild dir in mm/.
	grep -qxF "$hook_kconfig" "$tree/mm/Kconfig" ||
		sed -i "/^menu \"Slab allocator options\"/i $hook_kconfig\n" "$tree/mm/Kconfig"
	grep -qxF "$hook_kconfig" "$tree/mm/Kconfig" || die "could not hook mm/Kconfig"
	grep -qxF "$hook_make" "$tree/mm/Makefile" || echo "$hook_make" >> "$tree/mm/Makefile"
	# The documentation in the mm toctree, in its alphabetical place;
	# the MAINTAINERS entry in its own (before AFS).
	grep -qxF "$hook_doc" "$tree/Documentation/mm/index.rst" ||
		sed -i "/^   allocation-profiling\$/i\\$hook_doc" "$tree/Documentation/mm/index.rst"
	grep -qxF "$hook_doc" "$tree/Documentation/mm/index.rst" || die "could not hook Documentation/mm/index.rst"
	if ! grep -qxF "$hook_maint" "$tree/MAINTAINERS"; then
		awk -v e="$maint_entry" '/^AFS FILESYSTEM$/ { print e } { print }' "$tree/MAINTAINERS" > "$tree/MAINTAINERS.tmp" &&
			mv "$tree/MAINTAINERS.tmp" "$tree/MAINTAINERS"
	fi
	grep -qxF "$hook_maint" "$tree/MAINTAINERS" || die "could not add the MAINTAINERS entry"
	{ echo "$want"; sort -u "$touched"; } > "$state"
	rm -f "$touched"
fi

# Overlay the project's sources (checksum compare: unchanged files keep mtime).
mkdir -p "$tree/mm/afmalloc"
overlay
for f in "${own_files[@]}"; do
	[ ! -f "$AFMALLOC_TOP/$f" ] || rsync -c "$AFMALLOC_TOP/$f" "$tree/$f"
done
echo "$tree"
