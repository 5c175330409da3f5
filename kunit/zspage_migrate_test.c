// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of page migration (mm/zspage_migrate.c): the movable_operations
 * callbacks as the migration core calls them, busy zspages, zspages that
 * empty while a page is isolated, and the migration counters.
 */

#include "zspage_test.h"

#ifdef CONFIG_COMPACTION
/*
 * What afm_zs_migrate() holds while it calls migrate_page, or does before
 * it (AFM_HOLD_FREED: frees the object, the zspage's last).
 */
enum afm_zs_hold {
	AFM_HOLD_NONE, AFM_HOLD_ZSPAGE, AFM_HOLD_FREED
};

/*
 * Migrate the page holding @h's first byte as the migration core would:
 * isolate under the page lock, then lock both and call migrate_page, and
 * put the page back if that fails. Meanwhile @hold: @h's zspage is held
 * (as by a mapping; asynchronous migration only: a synchronous one would
 * wait for ever, see afm_zs_migrate_held()); or before it, with both
 * pages locked, @h is freed.
 * The pool must be quiet for migration. Returns the migrate_page result;
 * *@dstp is the new page on success.
 */
static int afm_zs_migrate(struct kunit *test, struct afm_pool *pool,
			  unsigned long h, enum migrate_mode mode,
			  enum afm_zs_hold hold, struct page **dstp)
{
	const struct movable_operations *mops = NULL;
	struct page *src, *dst;
	int rc = -EINVAL;

	src = afm_zs_test_get_page(pool, h);
	KUNIT_ASSERT_NOT_NULL(test, src);
	dst = alloc_page(GFP_KERNEL);
	if (!dst) {
		put_page(src);
		kunit_skip(test, "no memory for a destination page");
	}
	lock_page(src);
	if (__PageMovable(src))
		mops = page_movable_ops(src);
	KUNIT_EXPECT_NOT_NULL(test, mops);
	/* The pool is quiet: the kernel's compaction cannot have it. */
	KUNIT_EXPECT_FALSE(test, PageIsolated(src));
	if (!mops || PageIsolated(src) || !afm_zs_test_isolate_page(src)) {
		KUNIT_FAIL(test, "page not movable or not isolated");
		unlock_page(src);
		goto out;
	}
	SetPageIsolated(src);
	lock_page(dst);
	if (hold == AFM_HOLD_ZSPAGE && !afm_zs_test_hold_zspage(pool, h)) {
		KUNIT_FAIL(test, "cannot enter the zspage");
		hold = AFM_HOLD_NONE;
	}
	if (hold == AFM_HOLD_FREED)
		afm_free(pool, h);
	rc = mops->migrate_page(dst, src, mode);
	if (hold == AFM_HOLD_ZSPAGE)
		afm_zs_test_release_zspage(pool, h);
	if (rc == MIGRATEPAGE_SUCCESS) {
		/* The old page was handed back to us. */
		KUNIT_EXPECT_NULL(test, page_movable_ops(src));
		KUNIT_EXPECT_TRUE(test, __PageMovable(dst));
		KUNIT_EXPECT_PTR_EQ(test, page_movable_ops(dst), mops);
		if (dstp)
			*dstp = dst;
	} else {
		mops->putback_page(src);
	}
	ClearPageIsolated(src);
	unlock_page(dst);
	unlock_page(src);
out:
	put_page(dst);
	put_page(src);
	return rc;
}

/*
 * A zspage of one page (a new pool's first, a short zspage) stays a run
 * when its page migrates: its object is still reached in place, through
 * the linear map, not through the page chain.
 */
static void afm_zs_test_migrate_one_page(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_counters c;
	struct afm_zs_obj_info info;
	void *buf = afm_zs_buf(test);
	struct page *dst = NULL;

	afm_zs_short(test, true);
	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	ts->h[0] = afm_test_malloc(test, ts->pool, 100);
	afm_zs_put_pattern(test, ts->pool, ts->h[0], 0, 100, buf, 0);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	if (c.data_pages != 1 || !info.in_place)
		kunit_skip(test, "not a one-page zspage in the linear map (%lu pages, in place %d)",
			   c.data_pages, info.in_place);

	KUNIT_ASSERT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[0],
					     MIGRATE_SYNC, AFM_HOLD_NONE, &dst),
			MIGRATEPAGE_SUCCESS);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	KUNIT_EXPECT_PTR_EQ(test, info.page, dst);
	KUNIT_EXPECT_TRUE(test, info.in_place);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[0], 0, 100,
					     buf, true));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A solo zspage's page (a whole page that nothing fitted, no header)
 * migrates as any other: the object still at offset 0, of the new page,
 * byte for byte, and still the only object of a solo zspage.
 */
static void afm_zs_test_migrate_solo(struct kunit *test)
{
	struct afm_test_set *ts;
	struct afm_zs_counters c;
	struct afm_zs_obj_info info;
	void *buf = afm_zs_buf(test);
	struct page *dst = NULL;

	afm_zs_solo_pages(test);
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 1);
	afm_zs_quiet(ts);
	ts->h[0] = afm_test_malloc(test, ts->pool, PAGE_SIZE);
	afm_zs_put_pattern(test, ts->pool, ts->h[0], 5, PAGE_SIZE, buf, 1);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.solo_objs, 1);

	KUNIT_ASSERT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[0],
					     MIGRATE_SYNC, AFM_HOLD_NONE, &dst),
			MIGRATEPAGE_SUCCESS);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	KUNIT_EXPECT_PTR_EQ(test, info.page, dst);
	KUNIT_EXPECT_EQ(test, info.offset, 0);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[0], 5,
					     PAGE_SIZE, buf, true));
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.solo_objs, 1);
	KUNIT_EXPECT_EQ(test, c.data_pages, 1);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Migration replaces one page of a zspage: content copied, handles still
 * reach the same bytes, page counts unchanged; a busy zspage refuses.
 */
static void afm_zs_test_migrate(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 200);
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info info, moved;
	void *buf = afm_zs_buf(test);
	unsigned long pages;
	struct page *dst = NULL;
	unsigned long seen = 0;
	unsigned int i, x = 0;
	void *a;
	int rc;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, afm_zs_size(i),
				   buf, i);
	}
	/* An object crossing into the next page, so two pages matter. */
	for (i = 0; i < ts->n; i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		if (offset_in_page(info.offset) + info.size > PAGE_SIZE) {
			x = i;
			break;
		}
	}
	KUNIT_ASSERT_LT_MSG(test, i, ts->n, "no object crosses a page");
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[x], &info), 0);
	afm_zs_get_counters(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);
	a = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	afm_test_need(test, a);
	memcpy_from_page(a, info.page, 0, PAGE_SIZE);

	rc = afm_zs_migrate(test, ts->pool, ts->h[x], MIGRATE_SYNC, AFM_HOLD_NONE,
			    &dst);
	KUNIT_ASSERT_EQ(test, rc, MIGRATEPAGE_SUCCESS);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[x], &moved), 0);
	KUNIT_EXPECT_PTR_EQ(test, moved.page, dst);
	KUNIT_EXPECT_PTR_NE(test, moved.page, info.page);
	KUNIT_EXPECT_EQ(test, moved.zspage_id, info.zspage_id);
	KUNIT_EXPECT_EQ(test, moved.offset, info.offset);
	buf = afm_zs_buf(test);
	memcpy_from_page(buf, dst, 0, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, memcmp(a, buf, PAGE_SIZE), 0);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.migrated, before.migrated + 1);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);

	/* Migrated again, and written through the new page. */
	KUNIT_ASSERT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[x],
					     MIGRATE_ASYNC, AFM_HOLD_NONE, NULL),
			MIGRATEPAGE_SUCCESS);
	afm_zs_put_pattern(test, ts->pool, ts->h[x], 5555, afm_zs_size(x), buf,
			   1);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[x], 5555,
					     afm_zs_size(x), buf, false));

	/*
	 * A zspage in use (an object mapped) refuses asynchronous migration,
	 * then accepts (synchronous migration waits for the mapping:
	 * afm_zs_test_migrate_waits()).
	 */
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[x],
					     MIGRATE_ASYNC, AFM_HOLD_ZSPAGE, NULL),
			-EAGAIN);
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[x],
					     MIGRATE_SYNC, AFM_HOLD_NONE, NULL),
			MIGRATEPAGE_SUCCESS);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[x], 5555,
					     afm_zs_size(x), buf, true));
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.migrated, before.migrated + 3);

	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);

	/*
	 * Every page of that zspage, so that the first, middle and last links
	 * of its page chain are all replaced (first and last only where a
	 * zspage has two pages: 16 KiB pages); every object still reads back.
	 */
	for (i = 0; i < ts->n; i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &moved),
				0);
		if (moved.zspage_id != info.zspage_id ||
		    (seen & BIT(moved.offset >> PAGE_SHIFT)))
			continue;
		seen |= BIT(moved.offset >> PAGE_SHIFT);
		KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[i],
						     MIGRATE_SYNC, AFM_HOLD_NONE, &dst),
				MIGRATEPAGE_SUCCESS);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &moved),
				0);
		KUNIT_EXPECT_PTR_EQ(test, moved.page, dst);
	}
	KUNIT_EXPECT_GE(test, hweight_long(seen),
			min_t(unsigned long, 3, AFM_ZS_PAGES));
	KUNIT_EXPECT_TRUE(test, seen & BIT(0));
	KUNIT_EXPECT_TRUE(test, seen & BIT(AFM_ZS_PAGES - 1));
	afm_zs_put_pattern(test, ts->pool, ts->h[x], x, afm_zs_size(x), buf, x);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_put_pattern(test, ts->pool, ts->h[x], 5555, afm_zs_size(x), buf,
			   1);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);
	afm_zs_expect_consistent(test, ts->pool);

	/* Compaction and free work on migrated pages. */
	for (i = 0; i < ts->n; i++) {
		if (i % 3 && i != x) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
	}
	afm_compact(ts->pool);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[x], 5555,
					     afm_zs_size(x), buf, false));
	/* Checked with its own seed: not part of the sweep below. */
	afm_free(ts->pool, ts->h[x]);
	ts->h[x] = 0;
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	for (i = 0; i < ts->n; i++) {
		if (ts->h[i])
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	/* Every page back, those that replaced migrated ones included. */
	afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
}

/*
 * Isolate the page holding @h's first byte as the migration core does;
 * it is returned locked, referenced and isolated, or NULL (test failed).
 */
static struct page *afm_zs_isolate(struct kunit *test, struct afm_pool *pool,
				   unsigned long h)
{
	struct page *page = afm_zs_test_get_page(pool, h);

	if (!page) {
		KUNIT_FAIL(test, "no page for handle %#lx", h);
		return NULL;
	}
	lock_page(page);
	if (PageIsolated(page) || !afm_zs_test_isolate_page(page)) {
		KUNIT_FAIL(test, "page of handle %#lx not isolated", h);
		unlock_page(page);
		put_page(page);
		return NULL;
	}
	SetPageIsolated(page);
	return page;
}

/* Undo afm_zs_isolate() as the core does once it is done with the page. */
static void afm_zs_unisolate(struct page *page)
{
	ClearPageIsolated(page);
	unlock_page(page);
	put_page(page);
}

/*
 * The migration counters say what happened to each isolated page:
 * migrating N pages moves "migrated" (and "isolated") by exactly N; a
 * migration refused because the zspage is busy counts as refused and put
 * back, a page isolated and put back as put back, a page whose zspage is
 * freed while it is isolated (the core then frees it without calling
 * migrate_page) as freed while isolated: none of them as migrated.
 */
static void afm_zs_test_migrate_counters(struct kunit *test)
{
	const unsigned int n = 3 * AFM_ZS_PAGES;
	struct afm_test_set *ts = afm_zs_set(test, n);
	struct afm_zs_counters b, a;
	void *buf = afm_zs_buf(test);
	unsigned long pages;
	struct page *page;
	unsigned int i;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	/* Page-sized extents: one per page, in three zspages. */
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size_page(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   afm_zs_size_page(i), buf, i);
	}
	afm_zs_get_counters(ts->pool, &b);
	KUNIT_ASSERT_EQ(test, b.zspages, 3);
	pages = b.total_pages;

	/* Quiet: the kernel's isolation (the callback) is refused. */
	page = afm_zs_test_get_page(ts->pool, ts->h[0]);
	KUNIT_ASSERT_NOT_NULL(test, page);
	lock_page(page);
	KUNIT_EXPECT_FALSE(test, page_movable_ops(page)->isolate_page(page, 0));
	unlock_page(page);
	put_page(page);

	/* Every page once, so N = n. */
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[i],
						     i & 1 ? MIGRATE_SYNC :
						     MIGRATE_ASYNC,
						     AFM_HOLD_NONE, NULL),
				MIGRATEPAGE_SUCCESS);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated + n);
	KUNIT_EXPECT_EQ(test, a.isolated, b.isolated + n);
	KUNIT_EXPECT_EQ(test, a.putback, b.putback);
	KUNIT_EXPECT_EQ(test, a.migrate_busy, b.migrate_busy);
	KUNIT_EXPECT_EQ(test, a.isolated_freed, b.isolated_freed);
	KUNIT_EXPECT_EQ(test, a.total_pages, pages);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_page,
						0), 0);

	/* Refused: the zspage is in use; the page is put back. */
	b = a;
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[0],
					     MIGRATE_ASYNC, AFM_HOLD_ZSPAGE, NULL),
			-EAGAIN);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated);
	KUNIT_EXPECT_EQ(test, a.migrate_busy, b.migrate_busy + 1);
	KUNIT_EXPECT_EQ(test, a.isolated, b.isolated + 1);
	KUNIT_EXPECT_EQ(test, a.putback, b.putback + 1);

	/* Isolated, then put back without a migration attempt. */
	b = a;
	page = afm_zs_isolate(test, ts->pool, ts->h[1]);
	if (page) {
		page_movable_ops(page)->putback_page(page);
		afm_zs_unisolate(page);
	}
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated);
	KUNIT_EXPECT_EQ(test, a.migrate_busy, b.migrate_busy);
	KUNIT_EXPECT_EQ(test, a.isolated, b.isolated + 1);
	KUNIT_EXPECT_EQ(test, a.putback, b.putback + 1);

	/*
	 * Isolated and unlocked (the core's state between isolation and
	 * migration) while every object of its zspage is freed.
	 */
	b = a;
	page = afm_zs_isolate(test, ts->pool, ts->h[2 * AFM_ZS_PAGES]);
	if (page)
		unlock_page(page);
	for (i = 2 * AFM_ZS_PAGES; i < n; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	/*
	 * Had the kernel another page of the zspage locked for a moment, the
	 * pool's worker frees them: before the test takes this one's lock.
	 */
	afm_zs_flush_work(ts->pool);
	if (page) {
		lock_page(page);
		/* Released: the core frees it instead of migrating it. */
		KUNIT_EXPECT_NULL(test, page_movable_ops(page));
		afm_zs_unisolate(page);
	}
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated);
	KUNIT_EXPECT_EQ(test, a.putback, b.putback);
	KUNIT_EXPECT_EQ(test, a.isolated, b.isolated + 1);
	KUNIT_EXPECT_EQ(test, a.isolated_freed, b.isolated_freed + 1);
	KUNIT_EXPECT_EQ(test, a.total_pages, pages - AFM_ZS_PAGES);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_page,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A page whose zspage empties while the page is isolated (the page locked
 * by the migration core, so the zspage's pages are left to the free
 * worker, which waits for that lock) is not copied: migrate_page says
 * -EAGAIN, and the worker frees the page once the core lets go of it (the
 * core's next try finds it freed). Before, it was copied to a new page,
 * which the worker then waited for and freed.
 */
static void afm_zs_test_migrate_dead(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_counters b, a;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	ts->h[0] = afm_test_malloc(test, ts->pool, 100);
	afm_zs_get_counters(ts->pool, &b);
	KUNIT_ASSERT_GT(test, b.total_pages, 0);
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[0],
					     MIGRATE_SYNC, AFM_HOLD_FREED, NULL),
			-EAGAIN);
	ts->h[0] = 0;
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated);
	KUNIT_EXPECT_EQ(test, a.putback, b.putback + 1);
	KUNIT_EXPECT_EQ(test, a.objects, 0);
	KUNIT_EXPECT_EQ(test, a.dead_zspages, 0);
	KUNIT_EXPECT_EQ(test, a.data_pages, 0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * The free worker gets a dead zspage's page that the migration core holds
 * even when the core tries the page again as soon as it lets go of it (a
 * migration pass retries a busy page, CMA its whole range): lock_page()
 * queues the worker, and once the core has taken the page back from under
 * it page_lock_unfairness times (5 by default), the core's unlock hands it
 * the lock. A worker that waited for the page to be unlocked and then
 * tried the lock lost that race every time. The test plays the core: it
 * holds the page isolated and locked while the zspage's last object is
 * freed, waits until someone waits for the page (bounded: that is a
 * state, not a speed), then unlocks and tries the lock again at once, up
 * to AFM_ZS_HANDOFF_TRIES times (a try it wins on a page the worker has
 * meanwhile taken, freed and let go of counts as the worker's): room for
 * the default unfairness and for tries that find PG_waiters still set by
 * a waiter that has gone, or by another page's waiter on the same hashed
 * queue.
 */
#define AFM_ZS_HANDOFF_TRIES	32
static void afm_zs_test_migrate_dead_handoff(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_counters b, a;
	unsigned int tries = 0, naps;
	struct folio *folio;
	struct page *page;
	bool core = true;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	ts->h[0] = afm_test_malloc(test, ts->pool, 100);
	afm_zs_get_counters(ts->pool, &b);
	page = afm_zs_isolate(test, ts->pool, ts->h[0]);
	KUNIT_ASSERT_NOT_NULL(test, page);
	folio = page_folio(page);
	/* The zspage dies with its page locked: left to the worker. */
	afm_free(ts->pool, ts->h[0]);
	ts->h[0] = 0;
	while (core && tries < AFM_ZS_HANDOFF_TRIES) {
		for (naps = 0; !folio_test_waiters(folio) && naps < 10000; naps++)
			usleep_range(1000, 2000);
		if (!folio_test_waiters(folio)) {
			KUNIT_FAIL(test, "the free worker never waited for the page (%u naps)",
				   naps);
			break;
		}
		unlock_page(page);
		core = trylock_page(page);
		tries++;
		/*
		 * On another CPU the worker may have had the page, freed it
		 * (its private field cleared) and let go in between.
		 */
		if (core && !page_private(page)) {
			unlock_page(page);
			core = false;
		}
	}
	KUNIT_EXPECT_FALSE_MSG(test, core,
			       "the core got the page back on each of its %u tries",
			       tries);
	if (core)
		unlock_page(page);
	else
		kunit_info(test, "the worker got the page at the core's try %u",
			   tries);
	afm_zs_flush_work(ts->pool);
	/* The core finds the page freed under it and drops its reference. */
	ClearPageIsolated(page);
	put_page(page);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.isolated_freed, b.isolated_freed + 1);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated);
	KUNIT_EXPECT_EQ(test, a.dead_zspages, 0);
	KUNIT_EXPECT_EQ(test, a.data_pages, 0);
	afm_zs_expect_consistent(test, ts->pool);
}

/* What afm_zs_gate_waited() saw, and the holds it lets go of. */
struct afm_zs_gate_wait {
	struct afm_pool *pool;
	unsigned long h;
	unsigned long zspage_id;
	bool held;		/* the test holds @h's zspage shared */
	bool shard_held;	/* the test holds @h's shard's pool lock */
	unsigned int calls;	/* waits for the gate's sharers */
	unsigned int lock_calls;	/* waits for the pool lock */
	unsigned int other;	/* calls about another zspage */
	bool open;		/* a new sharer got in while it waited */
};

/*
 * The migration wait hook: a migration waits for the sharers of a gate,
 * or (@lock) for the pool lock; let go of what the test holds.
 */
static void afm_zs_gate_waited(void *arg, unsigned long zspage_id, bool lock)
{
	struct afm_zs_gate_wait *w = arg;

	if (zspage_id != w->zspage_id) {
		w->other++;
		return;
	}
	if (lock) {
		w->lock_calls++;
		if (w->shard_held) {
			afm_zs_test_unlock_shard(w->pool, w->h);
			w->shard_held = false;
		}
		return;
	}
	w->calls++;
	if (afm_zs_test_gate_open(w->pool, zspage_id))
		w->open = true;
	if (w->held) {
		afm_zs_test_release_zspage(w->pool, w->h);
		w->held = false;
	}
}

/*
 * Migrate the page of @w->h's first byte while the test holds its zspage
 * shared (as a CPU mapping one of its objects does) or, with @shard, its
 * shard's pool lock (as a malloc or free does), until the migration wait
 * hook lets go of it. Returns the migrate_page result.
 */
static int afm_zs_migrate_held(struct kunit *test, struct afm_zs_gate_wait *w,
			       enum migrate_mode mode, bool shard)
{
	const struct movable_operations *mops;
	struct page *src, *dst;
	int rc;

	dst = alloc_page(GFP_KERNEL);
	if (!dst)
		kunit_skip(test, "no memory for a destination page");
	src = afm_zs_isolate(test, w->pool, w->h);
	if (!src) {
		put_page(dst);
		return -EINVAL;
	}
	mops = page_movable_ops(src);
	lock_page(dst);
	afm_zs_test_gate_wait_hook(w->pool, afm_zs_gate_waited, w);
	if (shard) {
		afm_zs_test_lock_shard(w->pool, w->h);
		w->shard_held = true;
	} else {
		w->held = afm_zs_test_hold_zspage(w->pool, w->h);
		KUNIT_EXPECT_TRUE(test, w->held);
	}
	rc = mops->migrate_page(dst, src, mode);
	if (w->held)
		afm_zs_test_release_zspage(w->pool, w->h);
	w->held = false;
	if (w->shard_held)
		afm_zs_test_unlock_shard(w->pool, w->h);
	w->shard_held = false;
	afm_zs_test_gate_wait_hook(w->pool, NULL, NULL);
	if (rc != MIGRATEPAGE_SUCCESS)
		mops->putback_page(src);
	unlock_page(dst);
	put_page(dst);
	afm_zs_unisolate(src);
	return rc;
}

/*
 * A synchronous migration of a zspage that a CPU is reading waits for
 * that reader, and keeps new readers out meanwhile, as zsmalloc's rwlock
 * does; it no longer gives up because readers that come one after another
 * never all leave at once. Driven, not timed: the test holds the zspage
 * shared as a mapping does; the migration starts waiting (its hook: a new
 * sharer is refused) and the hook lets go of the reader, after which the
 * page moves and its bytes read back. Asynchronous migration does not
 * wait: it is refused at once.
 */
static void afm_zs_test_migrate_waits(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 16);
	struct afm_zs_gate_wait w = {};
	struct afm_zs_counters b, a;
	struct afm_zs_obj_info info, moved;
	void *buf = afm_zs_buf(test);
	unsigned int i;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, afm_zs_size(i),
				   buf, i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	w.pool = ts->pool;
	w.h = ts->h[0];
	w.zspage_id = info.zspage_id;
	afm_zs_get_counters(ts->pool, &b);

	/* Asynchronous: refused at once, no wait. */
	KUNIT_EXPECT_EQ(test, afm_zs_migrate_held(test, &w, MIGRATE_ASYNC,
						  false), -EAGAIN);
	KUNIT_EXPECT_EQ(test, w.calls, 0);

	/* Synchronous: the reader leaves once the migration waits for it. */
	KUNIT_EXPECT_EQ(test, afm_zs_migrate_held(test, &w, MIGRATE_SYNC,
						  false), MIGRATEPAGE_SUCCESS);
	KUNIT_EXPECT_EQ(test, w.calls, 1);
	KUNIT_EXPECT_EQ(test, w.lock_calls, 0);
	KUNIT_EXPECT_EQ(test, w.other, 0);
	KUNIT_EXPECT_FALSE_MSG(test, w.open,
			       "a new reader entered while the migration waited");
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &moved), 0);
	KUNIT_EXPECT_PTR_NE(test, moved.page, info.page);
	KUNIT_EXPECT_EQ(test, moved.offset, info.offset);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated + 1);
	KUNIT_EXPECT_EQ(test, a.migrate_waiting, 0);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A shard whose lock is held (a malloc or free writing headers, which take
 * no gate) refuses asynchronous migration of its zspages' pages; a
 * synchronous one takes the gate and then waits for the lock, counted in
 * the shard's migrate_wait (which a compaction pass holding the lock
 * heeds), and migrates once the holder lets go. Driven: the migration's
 * hook lets go of the lock the test holds. SMP only (skipped otherwise):
 * on a uniprocessor kernel nothing else runs while the lock is held, so a
 * trylock there cannot fail (spinlock debugging reports it as a bug, and
 * without it the trylock is a no-op); the debug guest of make check runs
 * it.
 */
static void afm_zs_test_migrate_shard_locked(struct kunit *test)
{
	struct afm_zs_gate_wait w = {};
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;
	void *buf;

	if (!IS_ENABLED(CONFIG_SMP))
		kunit_skip(test, "a uniprocessor kernel: a trylock cannot fail");
	ts = afm_zs_set(test, 1);
	buf = afm_zs_buf(test);
	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	ts->h[0] = afm_test_malloc(test, ts->pool, 3000);
	afm_zs_put_pattern(test, ts->pool, ts->h[0], 7, 3000, buf, 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	w.pool = ts->pool;
	w.h = ts->h[0];
	w.zspage_id = info.zspage_id;
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_EXPECT_EQ(test, afm_zs_migrate_held(test, &w, MIGRATE_ASYNC,
						  true), -EAGAIN);
	KUNIT_EXPECT_EQ(test, w.lock_calls, 0);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.migrated, before.migrated);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[0], 7, 3000,
					     buf, false));

	KUNIT_EXPECT_EQ(test, afm_zs_migrate_held(test, &w, MIGRATE_SYNC,
						  true), MIGRATEPAGE_SUCCESS);
	KUNIT_EXPECT_EQ(test, w.lock_calls, 1);
	KUNIT_EXPECT_EQ(test, w.calls, 0);
	KUNIT_EXPECT_EQ(test, w.other, 0);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.migrated, before.migrated + 1);
	KUNIT_EXPECT_EQ(test, after.migrate_waiting, 0);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[0], 7, 3000,
					     buf, true));
	afm_zs_expect_consistent(test, ts->pool);
}

#define AFM_ZS_HOT_READERS	3
#define AFM_ZS_HOT_TRIES	64

/* The objects of one zspage that afm_zs_test_migrate_hot()'s readers map. */
struct afm_zs_hot {
	struct afm_pool *pool;
	unsigned long h[AFM_ZS_PAGES * 16];
	unsigned int seed[AFM_ZS_PAGES * 16];
	unsigned int n;
	atomic_t started;
	atomic_t reads;
	atomic_t errors;
	bool stop;
	struct completion done[AFM_ZS_HOT_READERS];
};

struct afm_zs_hot_reader {
	struct afm_zs_hot *hot;
	unsigned int nr;
};

/* Map the zspage's objects one after another, checking each, until told. */
static int afm_zs_hot_read(void *data)
{
	struct afm_zs_hot_reader *r = data;
	struct afm_zs_hot *hot = r->hot;
	unsigned int i;
	void *p;

	atomic_inc(&hot->started);
	while (!READ_ONCE(hot->stop)) {
		for (i = 0; i < hot->n; i++) {
			p = afm_map_object(hot->pool, hot->h[i], AFM_MM_RO);
			if (!p || afm_test_check(p, hot->seed[i],
						 afm_zs_size_zs(hot->seed[i])) >= 0)
				atomic_inc(&hot->errors);
			if (p)
				afm_unmap_object(hot->pool, hot->h[i]);
		}
		atomic_add(hot->n, &hot->reads);
		cond_resched();
	}
	complete(&hot->done[r->nr]);
	return 0;
}

/*
 * Synchronous migrations of a page whose zspage other CPUs read back to
 * back (up to AFM_ZS_HOT_READERS of them, each mapping its objects one
 * after another): each succeeds (it waits for the mappings inside the
 * zspage's gate with new ones kept out, afm_zg_lock_wait(); migrations
 * that only tried the gate lost to readers whose mappings overlapped: with
 * 3 readers in make check's 8-vCPU guest, 8, 44 and 64 of 64 tries
 * succeeded in three runs);
 * every byte the readers see is right, and every object reads back after
 * the migrations. SMP only.
 */
static void afm_zs_test_migrate_hot(struct kunit *test)
{
	struct afm_zs_hot_reader r[AFM_ZS_HOT_READERS];
	struct afm_zs_counters b, a;
	struct afm_zs_obj_info info, o;
	struct afm_test_set *ts;
	struct afm_zs_hot *hot;
	unsigned int i, nr = 0, cpu, ok = 0, naps;
	struct task_struct *t;
	void *buf;

	if (!IS_ENABLED(CONFIG_SMP) || num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	hot = kunit_kzalloc(test, sizeof(*hot), GFP_KERNEL);
	if (!hot)
		kunit_skip(test, "no memory for the readers' state");
	buf = afm_zs_buf(test);
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 64);
	afm_zs_quiet(ts);
	hot->pool = ts->pool;
	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size_zs(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   afm_zs_size_zs(i), buf, i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	for (i = 0; i < ts->n && hot->n < ARRAY_SIZE(hot->h); i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &o), 0);
		if (o.zspage_id != info.zspage_id)
			continue;
		hot->h[hot->n] = ts->h[i];
		hot->seed[hot->n++] = i;
	}
	for (i = 0; i < AFM_ZS_HOT_READERS; i++)
		init_completion(&hot->done[i]);
	afm_zs_get_counters(ts->pool, &b);

	migrate_disable();
	for_each_online_cpu(cpu) {
		if (cpu == smp_processor_id() || nr == AFM_ZS_HOT_READERS)
			continue;
		r[nr].hot = hot;
		r[nr].nr = nr;
		t = kthread_create(afm_zs_hot_read, &r[nr], "afm-zs-hot/%u", nr);
		if (IS_ERR(t))
			break;
		kthread_bind(t, cpu);
		wake_up_process(t);
		nr++;
	}
	/* Every reader reading: a state, waited for with a bound. */
	for (naps = 0; nr && (atomic_read(&hot->started) < nr ||
			      atomic_read(&hot->reads) < nr * hot->n * 4) &&
	     naps < 10000; naps++)
		usleep_range(1000, 2000);
	if (nr && atomic_read(&hot->started) == nr)
		for (i = 0; i < AFM_ZS_HOT_TRIES; i++)
			if (afm_zs_migrate(test, ts->pool, ts->h[0], MIGRATE_SYNC,
					   AFM_HOLD_NONE, NULL) ==
			    MIGRATEPAGE_SUCCESS)
				ok++;
	WRITE_ONCE(hot->stop, true);
	for (i = 0; i < nr; i++)
		wait_for_completion(&hot->done[i]);
	migrate_enable();
	if (!nr)
		kunit_skip(test, "no reader thread");
	KUNIT_ASSERT_EQ_MSG(test, atomic_read(&hot->started), nr,
			    "the readers did not all start");

	kunit_info(test, "%u of %u migrations succeeded while %u CPUs mapped the zspage's %u objects back to back (%d reads)\n",
		   ok, AFM_ZS_HOT_TRIES, nr, hot->n, atomic_read(&hot->reads));
	KUNIT_EXPECT_EQ(test, ok, AFM_ZS_HOT_TRIES);
	KUNIT_EXPECT_EQ(test, atomic_read(&hot->errors), 0);
	KUNIT_EXPECT_GT(test, atomic_read(&hot->reads), 0);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrated, b.migrated + ok);
	KUNIT_EXPECT_EQ(test, a.migrate_waiting, 0);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_zs,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);
}
#else
static void afm_zs_test_migrate(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_counters(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_one_page(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_solo(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_dead(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_dead_handoff(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_waits(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_hot(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_shard_locked(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}
#endif

static struct kunit_case afm_zspage_migrate_test_cases[] = {
	KUNIT_CASE(afm_zs_test_migrate),
	KUNIT_CASE(afm_zs_test_migrate_shard_locked),
	KUNIT_CASE(afm_zs_test_migrate_counters),
	KUNIT_CASE(afm_zs_test_migrate_one_page),
	KUNIT_CASE(afm_zs_test_migrate_solo),
	KUNIT_CASE(afm_zs_test_migrate_dead),
	KUNIT_CASE(afm_zs_test_migrate_dead_handoff),
	KUNIT_CASE(afm_zs_test_migrate_waits),
	KUNIT_CASE(afm_zs_test_migrate_hot),
	{}
};

static struct kunit_suite afm_zspage_migrate_test_suite = {
	.name = "afmalloc_zspage_migrate",
	.test_cases = afm_zspage_migrate_test_cases,
};

kunit_test_suite(afm_zspage_migrate_test_suite);
