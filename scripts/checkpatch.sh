#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict on every C source, header and reStructuredText
# document of this checkout and on every patch of patches/, run in the prepared kernel tree (so that it
# knows the kernel's own identifiers: a CamelCase name include/ defines,
# such as __PageMovable, is not flagged, as it was with --no-tree). Every
# finding of every file is printed; exits 1 if any file had one. The
# Debian tree has no git history, so a patch's Fixes: tag cannot be
# checked against it (UNKNOWN_COMMIT_ID, ignored; the ids are upstream's).
#   scripts/checkpatch.sh
# shellcheck source=common.sh disable=SC1091
. "$(dirname "$0")/common.sh"

tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
cd "$tree" || die "no prepared tree $tree"
[ -x scripts/checkpatch.pl ] || die "no scripts/checkpatch.pl in $tree"
# One checkpatch.pl per file, as many at once as there are CPUs (it is
# perl on one core: 30 s for the whole list one at a time here).
mapfile -t files < <(git -C "$AFMALLOC_TOP" ls-files '*.c' '*.h' '*.rst' | sed "s|^|$AFMALLOC_TOP/|")
[ "${#files[@]}" -gt 0 ] || die "no C file found in $AFMALLOC_TOP"
rc=0
printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$AFMALLOC_JOBS" \
	./scripts/checkpatch.pl --strict --terse --no-summary -f || rc=1
n=${#files[@]}
for p in "$AFMALLOC_TOP"/patches/*.patch; do
	[ -e "$p" ] || continue
	n=$((n + 1))
	./scripts/checkpatch.pl --strict --terse --no-summary \
		--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p" || rc=1
done
if [ "$rc" = 0 ]; then
	log "checkpatch --strict: $n files and patches, clean"
else
	log "checkpatch --strict: findings (above) among $n files and patches"
fi
exit "$rc"
