#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict on every C source and header of this checkout and
# on every patch of patches/, run in the prepared kernel tree (so that it
# knows the kernel's own identifiers: a CamelCase name include/ defines,
# such as __PageMovable, is not flagged, as it was with --no-tree). Every
# finding of every file is printed; exits 1 if any file had one. The
# Debian tree has no git history, so a patch's Fixes: tag cannot be
# checked against it (UNKNOWN_COMMIT_ID, ignored; the ids are upstream's).
#   scripts/checkpatch.sh
. "$(dirname "$0")/common.sh"

tree=$("$AFMALLOC_TOP/scripts/prepare-tree.sh")
cd "$tree" || die "no prepared tree $tree"
[ -x scripts/checkpatch.pl ] || die "no scripts/checkpatch.pl in $tree"
rc=0 n=0 bad=0
while IFS= read -r f; do
	n=$((n + 1))
	./scripts/checkpatch.pl --strict --terse --no-summary -f "$AFMALLOC_TOP/$f" ||
		{ rc=1; bad=$((bad + 1)); }
done < <(git -C "$AFMALLOC_TOP" ls-files '*.c' '*.h')
for p in "$AFMALLOC_TOP"/patches/*.patch; do
	[ -e "$p" ] || continue
	n=$((n + 1))
	./scripts/checkpatch.pl --strict --terse --no-summary \
		--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p" ||
		{ rc=1; bad=$((bad + 1)); }
done
[ "$n" -gt 0 ] || die "no C file or patch found in $AFMALLOC_TOP"
if [ "$rc" = 0 ]; then
	log "checkpatch --strict: $n files and patches, clean"
else
	log "checkpatch --strict: findings in $bad of $n files and patches (above)"
fi
exit "$rc"
