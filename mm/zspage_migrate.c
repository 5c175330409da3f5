// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: page migration. The movable_operations of zspage
 * pages: isolate, migrate (replace one page of a zspage under its
 * exclusive gate), putback.
 *
 * Locking: called by the migration core with the page locked; takes the
 * exclusive gate (keeps out accessors and compaction's copies without the
 * pool lock, which take it shared) and then the pool lock (keeps out
 * malloc, free and compaction's header accesses, which take no gate, and
 * the copies it makes under the lock when a gate is held). Asynchronous
 * migration tries each once. Synchronous migration takes the gate as a
 * queued rwlock's writer does (new sharers kept out while those inside
 * finish their access, preemption disabled, as zsmalloc's
 * migrate_write_lock()), and then waits for the pool lock (as zsmalloc's
 * migration does for its class lock), saying so in the shard's
 * @migrate_wait, so that a compaction pass holding the lock lets go of it
 * after its current move (afm_zs_breathe()). It returns -EAGAIN when an
 * asynchronous one finds either busy, or when the zspage has emptied since
 * the page was isolated (nothing is copied, the free worker takes the page
 * once the core unlocks it).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

/* Page migration */

#ifdef CONFIG_COMPACTION
bool afm_zs_isolate(struct page *page, bool kernel)
{
	/* Page locked and movable: its zspage is not freed under us. */
	struct afm_zspage *z = (struct afm_zspage *)page_private(page);
	struct afm_zs_pool *zs;

	if (!z || (READ_ONCE(z->flags) & AFM_ZS_DEAD))
		return false;
	zs = afm_zs_desc_pool(z);
	if (kernel && afm_zs_quiet(zs, AFM_ZS_QUIET_MIGRATION))
		return false;
	atomic_long_inc(&zs->st.isolated);
	return true;
}

static bool afm_zs_isolate_page(struct page *page, isolate_mode_t mode)
{
	return afm_zs_isolate(page, true);
}

/*
 * The exclusive gate of @z and its pool lock. Without @wait, each with a
 * trylock. With @wait, the gate as a queued rwlock's writer takes it
 * (waiting for the accesses inside, new ones kept out: afm_zg_lock_wait())
 * and then the lock, counted in @zs->migrate_wait while it waits for it,
 * so that a compaction pass holding it lets go after its current move.
 * Nothing that holds the pool lock waits for a gate (they only try), so
 * the order gate, then lock, cannot close a cycle. Return: true if both
 * are held (afm_zs_migrate_unlock()); with @wait, always.
 */
static bool afm_zs_migrate_lock(struct afm_zspage *z, struct afm_zs_pool *zs,
				bool wait)
{
	if (!wait) {
		if (!afm_zg_lock(z))
			return false;
		if (spin_trylock(&zs->lock))
			return true;
		afm_zg_unlock(z);
		return false;
	}
	afm_zg_lock_wait(z);
	if (!spin_trylock(&zs->lock)) {
		atomic_inc(&zs->migrate_wait);
		afm_zs_test_migrate_waits(z, true);
		spin_lock(&zs->lock);
		atomic_dec(&zs->migrate_wait);
	}
	return true;
}

static void afm_zs_migrate_unlock(struct afm_zspage *z, struct afm_zs_pool *zs)
	__releases(&zs->lock)
{
	spin_unlock(&zs->lock);
	afm_zg_unlock(z);
}

static int afm_zs_migrate_page(struct page *dst, struct page *src,
			       enum migrate_mode mode)
{
	struct afm_zspage *z = (struct afm_zspage *)page_private(src);
	struct afm_zs_pool *zs;
	struct page *prev = NULL, *p;
	bool run;

	if (WARN_ON_ONCE(!z))
		return -EINVAL;
	zs = afm_zs_desc_pool(z);
	if (!afm_zs_migrate_lock(z, zs, mode != MIGRATE_ASYNC)) {
		atomic_long_inc(&zs->st.migrate_busy);
		return -EAGAIN;
	}
	/*
	 * Emptied since its isolation: the free worker waits for this page's
	 * lock to free it. Nothing to copy: the core tries again a bounded
	 * number of times and then lets go of the page, which the worker
	 * frees; the core's next look at it (a later try, the putback) finds
	 * it freed.
	 */
	if (z->flags & AFM_ZS_DEAD) {
		afm_zs_migrate_unlock(z, zs);
		return -EAGAIN;
	}
	/* Find the link to @src: the descriptor's or its predecessor's. */
	for (p = z->first; p && p != src; p = (struct page *)p->index)
		prev = p;
	if (WARN_ON_ONCE(!p)) {
		afm_zs_migrate_unlock(z, zs);
		return -EINVAL;
	}
	copy_highpage(dst, src);
	set_page_private(dst, (unsigned long)z);
	dst->index = src->index;
	__SetPageMovable(dst, &afm_zspage_mops);
	if (prev)
		WRITE_ONCE(prev->index, (unsigned long)dst);
	else
		WRITE_ONCE(z->first, dst);
	/*
	 * @dst is not @src's PFN: a run of pages is broken, follow the
	 * chain; a zspage of one page stays a run.
	 */
	run = afm_zs_npages(z) == 1 && !afm_zs_quiet(zs, AFM_ZS_QUIET_RUNS);
	if (z->run && !run)
		atomic_long_inc(&zs->st.runs_broken);
	WRITE_ONCE(z->run, run);
	afm_zs_migrate_unlock(z, zs);

	/* The zspage's reference moves to @dst; the core frees @src. */
	get_page(dst);
	afm_zs_reset_page(src);
	put_page(src);
	atomic_long_inc(&zs->st.migrated);
	return MIGRATEPAGE_SUCCESS;
}

/* Page locked, still movable: its zspage is alive. */
static void afm_zs_putback_page(struct page *page)
{
	struct afm_zspage *z = (struct afm_zspage *)page_private(page);

	if (!WARN_ON_ONCE(!z))
		atomic_long_inc(&afm_zs_desc_pool(z)->st.putback);
}

const struct movable_operations afm_zspage_mops = {
	.isolate_page	= afm_zs_isolate_page,
	.migrate_page	= afm_zs_migrate_page,
	.putback_page	= afm_zs_putback_page,
};
#endif /* CONFIG_COMPACTION */
