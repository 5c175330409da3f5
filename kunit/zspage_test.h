/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the zspage store's KUnit suites (kunit/zspage_*_test.c,
 * one per file of mm/zspage_*.c): pools of the zspage store, patterns
 * written and checked by three routes, the audit of counters against the
 * tables, a fragmented pool, and a driven automatic compaction run.
 *
 * Nothing asserted depends on the host's speed: what a test counts it
 * drives (a worker is queued by a free, then flushed), and pools whose
 * tests count compaction or migration exactly are kept away from the
 * kernel's shrinker and page migration (afm_zs_test_quiet(): the debug
 * guest runs drop_caches and compact_memory in loops meanwhile).
 */
#ifndef _KUNIT_AFMALLOC_ZSPAGE_TEST_H
#define _KUNIT_AFMALLOC_ZSPAGE_TEST_H

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/migrate.h>
#include <linux/pagemap.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "afm_test.h"
#include "../mm/zspage_store.h"

static inline void afm_zs_restore_short(void *data)
{
	afm_zs_test_set_short((uintptr_t)data);
}

/* Set the zspage_short parameter for the rest of the test. */
static inline void afm_zs_short(struct kunit *test, bool on)
{
	bool old = afm_zs_test_set_short(on);

	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_short,
						  (void *)(uintptr_t)old));
}

/*
 * A new zspage-store pool with @n handle slots, released with the test.
 * Its allocations all go to shard 0, whatever CPU the test runs on, so that
 * where an object goes does not depend on the CPU (the debug guest has
 * two); afm_zs_test_stress and afm_zs_test_shards choose otherwise. Every
 * zspage made during the test has AFM_ZS_PAGES pages (zspage_short off),
 * so that the tests can count zspages by their contents; the tests of
 * short zspages (afm_zs_test_short*) turn it back on.
 */
static inline struct afm_test_set *afm_zs_set(struct kunit *test, unsigned int n)
{
	struct afm_test_set *ts = afm_test_set_store(test, n, AFM_STORE_ZSPAGE);

	afm_zs_short(test, false);
	KUNIT_ASSERT_GT(test, afm_zs_test_alloc_shard(ts->pool, 0), 0);
	return ts;
}

static inline void afm_zs_restore_solo(void *data)
{
	afm_zs_test_set_solo_ext((unsigned long)data);
}

/*
 * Whole pages get a solo zspage (a page, no header) for the rest of the
 * test when nothing fits them: the bound 16 KiB pages have by default
 * (half a zspage is a page there), a page with 4 KiB pages too.
 */
static inline void afm_zs_solo_pages(struct kunit *test)
{
	unsigned long old = afm_zs_test_set_solo_ext(PAGE_SIZE);

	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_solo,
						  (void *)old));
}

static inline void afm_zs_restore_permille(void *data)
{
	afm_zs_set_auto_permille((unsigned long)data);
}

/* Set the automatic compaction trigger for the rest of the test. */
static inline void afm_zs_permille(struct kunit *test, unsigned int permille)
{
	unsigned long old = afm_zs_get_auto_permille();

	afm_zs_set_auto_permille(permille);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_permille,
						  (void *)old));
}

/*
 * Keep the kernel's shrinker and page migration away from @ts's pool, and
 * make its frees wait for a lock one of its workers holds.
 */
static inline void afm_zs_quiet(struct afm_test_set *ts)
{
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
			  AFM_ZS_QUIET_MIGRATION | AFM_ZS_QUIET_RFREE);
}

/*
 * afm_zs_quiet(), and the automatic runs only when the test flushes them or
 * afm_zs_test_auto_next() lets them (not AFM_ZS_AUTO_GAP after a free).
 */
static inline void afm_zs_quiet_auto(struct afm_test_set *ts)
{
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
			  AFM_ZS_QUIET_MIGRATION | AFM_ZS_QUIET_RFREE |
			  AFM_ZS_QUIET_AUTO);
}

static inline void *afm_zs_buf(struct kunit *test)
{
	void *buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);

	if (!buf)
		kunit_skip(test, "no memory for a buffer");
	return buf;
}

/* Sizes of a zram-like spread, deterministic. */
static inline size_t afm_zs_size(unsigned int i)
{
	return 1 + (i * 2654435761U >> 7) % PAGE_SIZE;
}

/*
 * The same spread in a zspage's terms: up to an eighth of a zspage (a page
 * with 4 KiB pages, where these are afm_zs_size()'s sizes), so that a
 * zspage holds about 16 of them whatever the page size (of afm_zs_size()'s,
 * about 4 with 16 KiB pages).
 */
static inline size_t afm_zs_size_zs(unsigned int i)
{
	return 1 + (i * 2654435761U >> 7) % (AFM_ZS_SIZE / 8);
}

/* Objects whose extent (header and data) is exactly a page. */
static inline size_t afm_zs_size_page(unsigned int i)
{
	return PAGE_SIZE - afm_zs_header_bytes();
}

/*
 * Objects whose extent is exactly an eighth of a zspage (a page with 4 KiB
 * pages: afm_zs_size_page()), 8 a zspage whatever the page size.
 */
static inline size_t afm_zs_size_eighth(unsigned int i)
{
	return AFM_ZS_SIZE / 8 - afm_zs_header_bytes();
}

/* Write object @i's pattern into @h, by one of three routes. */
static inline void afm_zs_put_pattern(struct kunit *test, struct afm_pool *pool,
				      unsigned long h, unsigned int seed, size_t size,
				      void *buf, unsigned int how)
{
	void *p;

	switch (how % 3) {
	case 0:
		afm_test_fill(buf, seed, size);
		KUNIT_ASSERT_EQ(test, afm_write(pool, h, buf, size), 0);
		break;
	case 1:
		p = afm_map_object(pool, h, AFM_MM_WO);
		KUNIT_ASSERT_NOT_NULL(test, p);
		afm_test_fill(p, seed, size);
		afm_unmap_object(pool, h);
		break;
	default:
		p = afm_map_object(pool, h, AFM_MM_RW);
		KUNIT_ASSERT_NOT_NULL(test, p);
		afm_test_fill(p, seed, size);
		afm_unmap_object(pool, h);
		break;
	}
}

/*
 * A pool without automatic compaction, quiet for the kernel
 * (afm_zs_quiet()), with @slots handle slots, the first @n holding objects
 * of @size bytes: object i with pattern i, written by route i (through
 * @buf, a page).
 */
static inline struct afm_test_set *afm_zs_set_filled(struct kunit *test,
						     unsigned int slots,
						     unsigned int n,
						     size_t size, void *buf)
{
	struct afm_test_set *ts;
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, slots);
	afm_zs_quiet(ts);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	return ts;
}

/* Check object @h holds @seed's pattern, through read or an RO mapping. */
static inline bool afm_zs_check(struct kunit *test, struct afm_pool *pool,
				unsigned long h, unsigned int seed, size_t size,
				void *buf, bool map)
{
	long bad;
	void *p;

	if (!map) {
		if (afm_read(pool, h, buf) != size) {
			KUNIT_FAIL(test, "object %u: afm_read size", seed);
			return false;
		}
		bad = afm_test_check(buf, seed, size);
	} else {
		p = afm_map_object(pool, h, AFM_MM_RO);
		if (!p) {
			KUNIT_FAIL(test, "object %u: map failed", seed);
			return false;
		}
		bad = afm_test_check(p, seed, size);
		afm_unmap_object(pool, h);
	}
	if (bad >= 0) {
		KUNIT_FAIL(test, "object %u (%zu bytes): byte %ld differs",
			   seed, size, bad);
		return false;
	}
	return true;
}

/* Verify every live object of @ts; object i has seed i + @seed0. */
static inline unsigned int afm_zs_verify_all(struct kunit *test,
					     struct afm_test_set *ts, void *buf,
					     size_t (*size_of)(unsigned int),
					     unsigned int seed0)
{
	unsigned int i, errors = 0;

	for (i = 0; i < ts->n && errors < 5; i++) {
		if (!ts->h[i])
			continue;
		if (!afm_zs_check(test, ts->pool, ts->h[i], i + seed0,
				  size_of(i), buf, i & 1))
			errors++;
	}
	return errors;
}

/*
 * The counters match the tables: objects and bytes recounted from the
 * handle entries, zspages, holes and tails from the descriptors, pages
 * from the descriptors and the table directories (afm_zs_test_audit(),
 * which also checks page chains and the hole index), and the pool's
 * statistics show the same. Callers keep compaction from running
 * meanwhile (trigger off or flushed, pool quiet), so that the statistics
 * read after the audit still match it.
 */
static inline void afm_zs_expect_consistent(struct kunit *test, struct afm_pool *pool)
{
	struct afm_zs_counters c, rc;
	struct afm_pool_stats st;

	KUNIT_EXPECT_EQ(test, afm_zs_test_audit(pool, &c, &rc), 0);
	KUNIT_EXPECT_EQ(test, c.objects, rc.objects);
	KUNIT_EXPECT_EQ(test, c.live_bytes, rc.live_bytes);
	KUNIT_EXPECT_EQ(test, c.solo_objs, rc.solo_objs);
	KUNIT_EXPECT_EQ(test, c.zspages, rc.zspages);
	KUNIT_EXPECT_EQ(test, c.dead_zspages, rc.dead_zspages);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, rc.hole_bytes);
	KUNIT_EXPECT_EQ(test, c.tail_bytes, rc.tail_bytes);
	KUNIT_EXPECT_EQ(test, c.data_pages, rc.data_pages);
	KUNIT_EXPECT_EQ(test, c.table_pages, rc.table_pages);
	KUNIT_EXPECT_EQ(test, c.desc_pages, rc.desc_pages);
	KUNIT_EXPECT_EQ(test, c.hole_pages, rc.hole_pages);
	KUNIT_EXPECT_EQ(test, c.dir_pages, rc.dir_pages);
	KUNIT_EXPECT_EQ(test, c.total_pages, rc.total_pages);
	afm_get_pool_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.objects, rc.objects);
	KUNIT_EXPECT_EQ(test, st.stored_bytes, rc.live_bytes);
	KUNIT_EXPECT_EQ(test, st.meta_bytes,
			(rc.table_pages + rc.desc_pages + rc.hole_pages +
			 rc.dir_pages) << PAGE_SHIFT);
}

/*
 * Fill @ts with objects of @size_of(i) bytes (object i with pattern i,
 * written by route i), free three of every four: survivors 0, 4, 8...
 */
static inline void afm_zs_fragment_sized(struct kunit *test,
					 struct afm_test_set *ts, void *buf,
					 size_t (*size_of)(unsigned int))
{
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size_of(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size_of(i),
				   buf, i);
	}
	for (i = 0; i < ts->n; i++) {
		if (i % 4) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
	}
}

/*
 * Fill with objects of afm_zs_size(i), free three of every four. With
 * 16 KiB pages a zspage holds about 4 such objects, so the frees leave
 * some zspages empty and others with one or two survivors; tests that
 * need every zspage to keep survivors and three quarters of its bytes in
 * holes use afm_zs_fragment_sized() with afm_zs_size_zs().
 */
static inline void afm_zs_fragment(struct kunit *test, struct afm_test_set *ts,
				   void *buf)
{
	afm_zs_fragment_sized(test, ts, buf, afm_zs_size);
}

static inline unsigned long afm_zs_overhead_pm(struct afm_pool *pool)
{
	struct afm_pool_stats st;
	unsigned long bytes = afm_get_total_pages(pool) << PAGE_SHIFT;

	afm_get_pool_stats(pool, &st);
	if (!st.stored_bytes)
		return ULONG_MAX;
	return (bytes - st.stored_bytes) * 1000 / st.stored_bytes;
}

/*
 * After a compaction pass that counted @freed pages given back, between
 * counters @before and @after (the pool's deferred frees done since,
 * afm_zs_flush_work()): the pool holds @pages less @freed. Except that a
 * zspage whose pages the kernel had locked for a moment (isolation takes a
 * page's lock before it asks the pool) is counted when it dies but freed
 * by the pool's worker, which then puts its descriptor back: the
 * descriptor table page that empties, and the directory page its block
 * leaves empty, go back after the count (at most two pages each).
 */
static inline void afm_zs_expect_freed(struct kunit *test,
				       struct afm_pool *pool,
				       const struct afm_zs_counters *before,
				       const struct afm_zs_counters *after,
				       unsigned long pages, unsigned long freed)
{
	unsigned long total = afm_get_total_pages(pool);
	unsigned long late = after->deferred_frees - before->deferred_frees;

	KUNIT_EXPECT_LE(test, total, pages - freed);
	KUNIT_EXPECT_GE(test, total + 2 * late, pages - freed);
}

/*
 * Drive the automatic worker in @ts's pool, whatever it did before: fill
 * @ts with objects of afm_zs_size_zs(i) (about 16 a zspage whatever the
 * page size: objects 0 to 15 fill the first one) and free three of four
 * with the trigger off (nothing compacts meanwhile: no worker, and the
 * pool is kept from the kernel's shrinker and migration), then set the
 * trigger to @permille and free one more survivor. Holes are then far
 * above the trigger and every zspage has about three quarters of its bytes
 * in holes, so that free queues exactly one run, at once, which
 * afm_zs_flush_work() waits for (it would run a rest run at once too).
 * That run must give pages back. Survivors are
 * left in @ts. Return: the pages the run freed.
 */
static inline unsigned long afm_zs_drive_auto(struct kunit *test,
					      struct afm_test_set *ts, void *buf,
					      unsigned int permille)
{
	struct afm_zs_counters frag, after;
	struct afm_zs_obj_info first, last;
	unsigned long pages, trigger, freed, compactions, compacted;
	struct afm_pool_stats st;

	afm_zs_quiet(ts);
	afm_zs_set_auto_permille(0);
	afm_zs_flush_work(ts->pool);
	afm_zs_fragment_sized(test, ts, buf, afm_zs_size_zs);
	/* Survivors 0 and 4 share a zspage: freeing 4 releases none. */
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &first), 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[4], &last), 0);
	KUNIT_ASSERT_EQ(test, first.zspage_id, last.zspage_id);
	afm_zs_get_counters(ts->pool, &frag);
	afm_get_pool_stats(ts->pool, &st);
	pages = afm_get_total_pages(ts->pool);
	trigger = max(frag.live_bytes / 1000 * permille, 4UL * AFM_ZS_SIZE);
	KUNIT_ASSERT_GT(test, frag.hole_bytes, 4 * trigger);

	afm_zs_set_auto_permille(permille);
	afm_free(ts->pool, ts->h[4]);
	ts->h[4] = 0;
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	freed = after.auto_freed - frag.auto_freed;
	kunit_info(test, "automatic run: %lu -> %lu pages, %lu -> %lu hole bytes (%lu recorded, trigger %lu)\n",
		   pages, afm_get_total_pages(ts->pool), frag.hole_bytes,
		   after.hole_bytes, frag.hole_recorded, trigger);
	KUNIT_EXPECT_EQ(test, after.auto_runs, frag.auto_runs + 1);
	KUNIT_EXPECT_GT(test, freed, 0);
	/* Nothing else freed or added a page. */
	afm_zs_expect_freed(test, ts->pool, &frag, &after, pages, freed);
	/*
	 * A run started by a free aims below half the trigger without the
	 * holes recorded for reuse (allocations are about to fill them); a
	 * rest run counts those too. Either way, no more than the recorded
	 * holes, half the trigger and the object freed last (at most an
	 * eighth of a zspage) are left.
	 */
	KUNIT_EXPECT_LE(test, after.hole_bytes,
			frag.hole_recorded + trigger / 2 + AFM_ZS_SIZE / 8);
	KUNIT_EXPECT_GT(test, after.passes, frag.passes);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_zs,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);
	/*
	 * Not afm_compact(): the pool's count of those did not move, but
	 * the pages the run gave back count as compacted (zram's mm_stat).
	 */
	compactions = st.compactions;
	compacted = st.pages_compacted;
	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.compactions, compactions);
	KUNIT_EXPECT_EQ(test, st.pages_compacted, compacted + freed);
	return freed;
}

static inline size_t afm_zs_size16(unsigned int i)
{
	return 16;
}

static inline size_t afm_zs_size1000(unsigned int i)
{
	return 1000;
}

#endif /* _KUNIT_AFMALLOC_ZSPAGE_TEST_H */
