// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of compaction (mm/zspage_compact.c): manual compaction with
 * every width of handle bits in headers, its cost against the pool size,
 * pinned objects left in place, the automatic worker, the rest run and the
 * shrinker, and moves that copy without the pool lock (an allocation,
 * and a free of the object being moved, meanwhile).
 */

#include "zspage_test.h"

/*
 * Handle bits in object headers: the default, and fewer, so that many
 * handles share the bits of each header, as handles above 2^26 do in a
 * pool that large (compaction must still find every object).
 */
static const unsigned int afm_zs_idx_bits[] = { 0, 8, 1 };

static void afm_zs_idx_bits_desc(const unsigned int *bits, char *desc)
{
	if (*bits)
		snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%u handle bits", *bits);
	else
		snprintf(desc, KUNIT_PARAM_DESC_SIZE, "default handle bits");
}

KUNIT_ARRAY_PARAM(afm_zs_idx_bits, afm_zs_idx_bits, afm_zs_idx_bits_desc);

/*
 * Manual compaction of a pool where three of four objects were freed:
 * pages drop, overhead falls, holes go, every byte stays.
 */
static void afm_zs_test_compact(struct kunit *test)
{
	const unsigned int *bits = test->param_value;
	struct afm_test_set *ts;
	struct afm_zs_counters before, after;
	unsigned long pages, freed, oh_before, oh_after;
	void *buf = afm_zs_buf(test);

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_quiet(ts);
	if (*bits) {
		KUNIT_ASSERT_EQ(test, afm_zs_test_set_idx_bits(ts->pool, *bits),
				0);
		KUNIT_EXPECT_EQ(test, afm_zs_test_set_idx_bits(ts->pool, 0),
				-EINVAL);
	}
	afm_zs_fragment(test, ts, buf);
	/* Only an empty pool changes its header format. */
	KUNIT_EXPECT_EQ(test, afm_zs_test_set_idx_bits(ts->pool, 8), -EINVAL);
	afm_zs_get_counters(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);
	oh_before = afm_zs_overhead_pm(ts->pool);
	KUNIT_ASSERT_GT(test, before.hole_bytes, 0);

	freed = afm_compact(ts->pool);
	/*
	 * Zspages whose pages the kernel had locked for a moment go back
	 * from the pool's worker, after afm_compact() counted: now.
	 */
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	oh_after = afm_zs_overhead_pm(ts->pool);
	kunit_info(test, "pages %lu -> %lu, overhead %lu -> %lu per mille, holes %lu -> %lu\n",
		   pages, afm_get_total_pages(ts->pool), oh_before, oh_after,
		   before.hole_bytes, after.hole_bytes);
	KUNIT_EXPECT_GT(test, freed, 0);
	/*
	 * A deferred zspage's pages went back after afm_compact() counted
	 * (fewer now), or, when the worker ran on another CPU while the run
	 * was still going, before (counted: as many).
	 */
	if (after.deferred_frees == before.deferred_frees)
		KUNIT_EXPECT_EQ(test, pages - freed,
				afm_get_total_pages(ts->pool));
	else
		KUNIT_EXPECT_LE(test, afm_get_total_pages(ts->pool),
				pages - freed);
	/* Three quarters of the data went: most pages should too. */
	KUNIT_EXPECT_LT(test, afm_get_total_pages(ts->pool), pages / 2);
	KUNIT_EXPECT_LT(test, oh_after, oh_before);
	KUNIT_EXPECT_LT(test, oh_after, 60);
	KUNIT_EXPECT_LT(test, after.hole_bytes, before.hole_bytes / 8);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
	KUNIT_EXPECT_GT(test, after.passes, before.passes);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);

	/* Nothing left to gain: a second run frees nothing. */
	KUNIT_EXPECT_EQ(test, afm_compact(ts->pool), 0);
}

/*
 * One run of afm_zs_test_compact_cost(): a pool of @filler dense objects
 * (whole zspages, no holes, tails too small for anything) and then
 * AFM_ZS_COST_ZSPAGES zspages of which three objects in four are freed;
 * afm_compact(). Sets the extents compaction walked, the handle entries it
 * looked at, the objects it moved and the pages it freed; checks the bytes
 * it counts as copied and the survivors' bytes.
 */
#define AFM_ZS_COST_SIZE	16
#define AFM_ZS_COST_ZSPAGES	16

static void afm_zs_cost_run(struct kunit *test, unsigned int filler,
			    unsigned long *walked, unsigned long *looked,
			    unsigned long *moved, unsigned long *freed)
{
	const unsigned int ext = AFM_ZS_COST_SIZE + afm_zs_header_bytes();
	const unsigned int per = AFM_ZS_SIZE / ext;
	const unsigned int frag = AFM_ZS_COST_ZSPAGES * per;
	struct afm_zs_counters before, after;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long pages;
	unsigned int i;

	/* The filler's handles after the fragmented zspages' ones. */
	ts = afm_zs_set(test, frag + filler);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, filler % per, 0);
	for (i = frag; i < frag + filler; i++)
		ts->h[i] = afm_test_malloc(test, ts->pool, AFM_ZS_COST_SIZE);
	for (i = 0; i < frag; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, AFM_ZS_COST_SIZE);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   AFM_ZS_COST_SIZE, buf, 0);
	}
	for (i = 0; i < frag; i++) {
		if (i % 4) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
	}
	afm_zs_get_counters(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);
	afm_compact(ts->pool);
	/* Deferred frees (a page the kernel had locked) counted too. */
	afm_zs_flush_work(ts->pool);
	*freed = pages - afm_get_total_pages(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	*walked = after.walked - before.walked;
	*looked = after.looked - before.looked;
	*moved = after.moved - before.moved;
	KUNIT_EXPECT_EQ(test, after.moved_bytes - before.moved_bytes,
			*moved * AFM_ZS_COST_SIZE);
	for (i = 0; i < frag; i += 4)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, AFM_ZS_COST_SIZE, buf,
						     i & 1));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Compaction's cost is the work it does, not the pool's size: the same
 * fragmented zspages compacted in a pool of about 25 thousand and of about
 * 1.6 million objects make compaction walk exactly the same extents (at
 * most those of the fragmented zspages), look at the same handle entries
 * (one per live object it finds) and move the same objects.
 */
static void afm_zs_test_compact_cost(struct kunit *test)
{
	const unsigned int per = AFM_ZS_SIZE /
				 (AFM_ZS_COST_SIZE + afm_zs_header_bytes());
	unsigned long walked[2], looked[2], moved[2], freed[2];

	afm_zs_permille(test, 0);
	afm_zs_cost_run(test, per, &walked[0], &looked[0], &moved[0],
			&freed[0]);
	afm_zs_cost_run(test, 1024 * per, &walked[1], &looked[1], &moved[1],
			&freed[1]);
	kunit_info(test, "pool of %u objects: %lu extents walked, %lu entries looked at, %lu moved, %lu pages freed; of %u: %lu, %lu, %lu, %lu\n",
		   (1 + AFM_ZS_COST_ZSPAGES) * per, walked[0], looked[0],
		   moved[0], freed[0], (1024 + AFM_ZS_COST_ZSPAGES) * per,
		   walked[1], looked[1], moved[1], freed[1]);
	KUNIT_EXPECT_EQ(test, looked[1], looked[0]);
	KUNIT_EXPECT_GE(test, looked[0], moved[0]);
	KUNIT_EXPECT_LE(test, looked[0], walked[0]);
	KUNIT_EXPECT_GT(test, freed[0], 0);
	KUNIT_EXPECT_EQ(test, freed[1], freed[0]);
	KUNIT_EXPECT_GT(test, moved[0], 0);
	KUNIT_EXPECT_EQ(test, moved[1], moved[0]);
	KUNIT_EXPECT_EQ(test, walked[1], walked[0]);
	KUNIT_EXPECT_LE(test, walked[0], AFM_ZS_COST_ZSPAGES * per);
}

/*
 * A pinned object (as mapped) is never moved; once unpinned, it is. The
 * rest of its zspage is evacuated around it: objects of afm_zs_size_zs(),
 * about 16 a zspage whatever the page size, so that survivors 4, 8 and 12
 * share the pinned object's zspage (objects 0 to 15 fill it).
 */
static void afm_zs_test_compact_pinned(struct kunit *test)
{
	struct afm_zs_obj_info pinned, info;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i, p = 0;
	unsigned long misuses;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 2000);
	afm_zs_quiet(ts);
	afm_zs_fragment_sized(test, ts, buf, afm_zs_size_zs);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[p], &pinned), 0);
	/* Survivors around it, for compaction to evacuate. */
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[p + 4], &info),
			0);
	KUNIT_ASSERT_EQ(test, info.zspage_id, pinned.zspage_id);
	KUNIT_ASSERT_TRUE(test, afm_zs_test_pin(ts->pool, ts->h[p]));

	afm_compact(ts->pool);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[p], &info), 0);
	KUNIT_EXPECT_EQ(test, info.zspage_id, pinned.zspage_id);
	KUNIT_EXPECT_EQ(test, info.offset, pinned.offset);
	KUNIT_EXPECT_EQ(test, info.pins, 1);
	/* Freeing a pinned object is refused (and warns). */
	afm_test_expect_warnings(test);
	kunit_info(test, "expect one afmalloc free-of-mapped-object warning\n");
	misuses = afm_test_misuse_count();
	afm_free(ts->pool, ts->h[p]);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 1);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[p]),
			afm_zs_size_zs(p));
	/* Other objects of that zspage moved away. */
	for (i = 4; i < ts->n; i += 4) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_NE(test, info.zspage_id, pinned.zspage_id);
	}
	afm_zs_test_unpin(ts->pool, ts->h[p]);

	afm_compact(ts->pool);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[p], &info), 0);
	KUNIT_EXPECT_EQ(test, info.pins, 0);
	KUNIT_EXPECT_TRUE(test, info.zspage_id != pinned.zspage_id ||
			  info.offset != pinned.offset);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_zs,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A page migration waiting for a shard's pool lock (holding a zspage's
 * gate, so that its readers wait too) makes a compaction pass let go of
 * the lock after every move, so that it does not wait for a long pass;
 * with none waiting the pass keeps it for its usual stretch. The waiting
 * migration is the hook's count, the state afm_zs_migrate_lock() leaves
 * while it waits: nothing here depends on timing.
 */
static void afm_zs_test_compact_yields(struct kunit *test)
{
	struct afm_zs_counters b, a;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i;
	int shards;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 2000);
	shards = afm_zs_test_alloc_shard(ts->pool, 0);
	/* Every shard created (the hook counts in each), objects in shard 0. */
	KUNIT_ASSERT_GT(test, shards, 0);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, shards - 1),
			shards);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, 0), shards);
	afm_zs_quiet(ts);
	afm_zs_fragment(test, ts, buf);

	/* None waiting: no early let-go, however many moves. */
	afm_zs_get_counters(ts->pool, &b);
	afm_compact(ts->pool);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_ASSERT_GT(test, a.moved, b.moved);
	KUNIT_EXPECT_EQ(test, a.migrate_yields, b.migrate_yields);

	/* Half of the survivors go: holes again, in the zspages they left. */
	for (i = 4; i < ts->n; i += 8) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_test_migrate_wait(ts->pool, 1);
	afm_zs_get_counters(ts->pool, &b);
	KUNIT_EXPECT_EQ(test, b.shards_created, shards);
	KUNIT_EXPECT_EQ(test, b.migrate_waiting, shards);
	afm_compact(ts->pool);
	afm_zs_get_counters(ts->pool, &a);
	afm_zs_test_migrate_wait(ts->pool, -1);
	KUNIT_ASSERT_GT(test, a.moved, b.moved);
	/* Every move is followed by a let-go (the last maybe not). */
	KUNIT_EXPECT_GE(test, a.migrate_yields - b.migrate_yields,
			a.moved - b.moved - 1);
	kunit_info(test, "%lu moves, %lu times the lock let go for a waiting migration\n",
		   a.moved - b.moved, a.migrate_yields - b.migrate_yields);
	afm_zs_get_counters(ts->pool, &a);
	KUNIT_EXPECT_EQ(test, a.migrate_waiting, 0);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Automatic compaction: a free that takes holes past the trigger queues a
 * worker that gives pages back without any afm_compact() call; with the
 * trigger off, frees queue nothing.
 */
static void afm_zs_test_auto_compact(struct kunit *test)
{
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_drive_auto(test, ts, buf, 10);
	afm_zs_get_counters(ts->pool, &c);
	/* The drive's frees with the trigger off queued nothing. */
	KUNIT_EXPECT_EQ(test, c.auto_runs, 1);
}

/*
 * Automatic runs of a shard are batched (AFM_ZS_AUTO_GAP): a free past the
 * trigger before the gap since the start of the last run is over queues
 * the run for later, one after it queues it at once. The gap is moved
 * through a hook, never waited for, so the outcome does not depend on the
 * host's speed; a delayed run is then run by flushing the work.
 */
static void afm_zs_test_auto_gap(struct kunit *test)
{
	struct afm_zs_counters frag, mid, after;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_quiet(ts);
	afm_zs_fragment(test, ts, buf);
	afm_zs_get_counters(ts->pool, &frag);
	KUNIT_ASSERT_GT(test, frag.hole_bytes, 16UL * AFM_ZS_SIZE);

	/* Within the gap: the run is queued for later. */
	afm_zs_test_auto_next(ts->pool, 10 * HZ);
	afm_zs_set_auto_permille(10);
	afm_free(ts->pool, ts->h[4]);
	ts->h[4] = 0;
	afm_zs_get_counters(ts->pool, &mid);
	KUNIT_EXPECT_EQ(test, mid.auto_delayed, frag.auto_delayed + 1);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &mid);
	KUNIT_EXPECT_EQ(test, mid.auto_runs, frag.auto_runs + 1);
	KUNIT_EXPECT_GT(test, mid.auto_freed, frag.auto_freed);

	/* Holes again (half the survivors), then a free after the gap. */
	afm_zs_set_auto_permille(0);
	for (i = 12; i < ts->n; i += 8) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &mid);
	KUNIT_ASSERT_GT(test, mid.hole_bytes, 8UL * AFM_ZS_SIZE);
	afm_zs_test_auto_next(ts->pool, -1);
	afm_zs_set_auto_permille(10);
	afm_free(ts->pool, ts->h[8]);
	ts->h[8] = 0;
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.auto_delayed, mid.auto_delayed);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.auto_runs, mid.auto_runs + 1);
	KUNIT_EXPECT_GT(test, after.auto_freed, mid.auto_freed);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A quiet pool of @n 1000-byte objects (32 a zspage), automatic compaction
 * off, of which every @step-th from the second is freed (the last kept).
 */
static struct afm_test_set *afm_zs_thinned(struct kunit *test, unsigned int n,
					   unsigned int step, void *buf)
{
	struct afm_test_set *ts;
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	afm_zs_flush_work(ts->pool);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size1000(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   afm_zs_size1000(i), buf, i);
	}
	for (i = 1; i < n - 1; i += step) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	return ts;
}

/*
 * With the trigger at @permille, free the last object of @ts, run what
 * that queued as if the pool were at rest (afm_zs_flush_work()), and
 * expect one rest run that gave pages back (from @pages) with every object
 * intact. Return: its holes (hole bytes after the run).
 */
static unsigned long afm_zs_expect_rest_run(struct kunit *test,
					    struct afm_test_set *ts,
					    unsigned int permille,
					    unsigned long pages, void *buf)
{
	struct afm_zs_counters before, after;

	afm_zs_get_counters(ts->pool, &before);
	afm_zs_set_auto_permille(permille);
	afm_free(ts->pool, ts->h[ts->n - 1]);
	ts->h[ts->n - 1] = 0;
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	kunit_info(test, "rest run: %lu -> %lu pages, %lu -> %lu hole bytes\n",
		   pages, afm_get_total_pages(ts->pool), before.hole_bytes,
		   after.hole_bytes);
	KUNIT_EXPECT_EQ(test, after.auto_runs, before.auto_runs + 1);
	KUNIT_EXPECT_LT(test, afm_get_total_pages(ts->pool), pages);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size1000,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);
	return after.hole_bytes;
}

/*
 * A small pool is compacted at rest too: 6 zspages of 1000-byte objects of
 * which one in 4 is freed hold about 48 KiB of holes, under the floor of
 * the trigger of runs while writes go on (4 zspages: 128 KiB, several per
 * cent of a pool this size), above the rest run's (half a zspage, whatever
 * the page size: AFM_ZS_REST_FLOOR); the rest run brings the holes under
 * that and gives pages back.
 */
static void afm_zs_test_rest_small(struct kunit *test)
{
	const unsigned long rest_floor = AFM_ZS_SIZE / 2;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts = afm_zs_thinned(test, 6 * 32, 4, buf);
	struct afm_zs_counters frag;

	afm_zs_get_counters(ts->pool, &frag);
	KUNIT_ASSERT_GT(test, frag.hole_bytes, 2 * rest_floor);
	KUNIT_ASSERT_LT(test, frag.hole_bytes, 4UL * AFM_ZS_SIZE);
	KUNIT_EXPECT_LE(test, afm_zs_expect_rest_run(test, ts, 1,
						     afm_get_total_pages(ts->pool),
						     buf),
			rest_floor);
}

/*
 * At rest, thin holes go too: objects of 1000 bytes (32 a zspage) of which
 * one in 16 is freed leave every zspage with about 6% of its bytes in
 * holes (2010 bytes), too few for a run while writes go on (a quarter),
 * so a free past the trigger queues the rest run; once it has run the
 * holes are below the trigger and the pages are back. The rest run, as
 * compaction on request, takes the zspages on the hole lists: these are
 * expected there, whatever the page size.
 */
static void afm_zs_test_rest_compact(struct kunit *test)
{
	const unsigned int permille = 10;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts = afm_zs_thinned(test, 32 * 256, 16, buf);
	struct afm_zs_counters frag;
	unsigned long trigger;

	afm_zs_get_counters(ts->pool, &frag);
	trigger = max(frag.live_bytes / 1000 * permille, 4UL * AFM_ZS_SIZE);
	KUNIT_ASSERT_GT(test, frag.hole_bytes, 2 * trigger);
	/* No zspage has an eighth of its bytes in holes. */
	KUNIT_ASSERT_LT(test, frag.hole_bytes / frag.zspages, AFM_ZS_SIZE / 8);
	/* Their holes are on the hole lists: the shrinker counts them. */
	KUNIT_EXPECT_NE(test, afm_zs_shrinker_count(ts->pool), SHRINK_EMPTY);
	/* It aims at half the trigger; its last pass may stop short. */
	KUNIT_EXPECT_LE(test, afm_zs_expect_rest_run(test, ts, permille,
						     afm_get_total_pages(ts->pool),
						     buf),
			trigger);
}

/*
 * The shrinker counts reclaimable pages and frees them when asked, and
 * the pool counts them as compacted (zram's mm_stat). The
 * pool is quiet: the kernel's shrink_slab() (drop_caches loops in the debug
 * guest) does not get to its holes first; the stress and destroy cases
 * race with it.
 */
static void afm_zs_test_shrinker(struct kunit *test)
{
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long count, freed, pages, after;
	struct afm_zs_counters before, after_c;
	struct afm_pool_stats st_before, st_after;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_quiet(ts);
	KUNIT_EXPECT_EQ(test, afm_zs_shrinker_count(ts->pool), SHRINK_EMPTY);
	afm_zs_fragment(test, ts, buf);
	pages = afm_get_total_pages(ts->pool);
	count = afm_zs_shrinker_count(ts->pool);
	KUNIT_EXPECT_GT(test, count, 0);
	KUNIT_EXPECT_NE(test, count, SHRINK_EMPTY);
	KUNIT_EXPECT_LT(test, count, pages);

	afm_zs_get_counters(ts->pool, &before);
	afm_get_pool_stats(ts->pool, &st_before);
	freed = afm_zs_shrinker_scan(ts->pool, count);
	KUNIT_EXPECT_NE(test, freed, SHRINK_STOP);
	KUNIT_EXPECT_GT(test, freed, 0);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after_c);
	afm_zs_expect_freed(test, ts->pool, &before, &after_c, pages, freed);
	/* Counted as compacted (zram's mm_stat), as zsmalloc's shrinker is. */
	afm_get_pool_stats(ts->pool, &st_after);
	KUNIT_EXPECT_EQ(test, st_after.pages_compacted,
			st_before.pages_compacted + freed);
	KUNIT_EXPECT_EQ(test, st_after.compactions, st_before.compactions);
	/* What is left is under a zspage's worth: nothing to count. */
	after = afm_zs_shrinker_count(ts->pool);
	KUNIT_EXPECT_TRUE(test, after == SHRINK_EMPTY || after < count);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A shrinker scan reports the pages its passes gave back, not the shard's
 * drop in pages while it ran: frees that other CPUs left to the lock holder
 * (here all the pool's objects, afm_zs_test_busy()) empty every zspage when
 * the scan drains them, before it picks a victim. Those pages go back, but
 * not by compaction: with no zspage left to pick, the scan makes no pass
 * and reports SHRINK_STOP (it used to report the drained frees' pages,
 * telling reclaim that compaction had freed them).
 */
static void afm_zs_test_shrinker_own(struct kunit *test)
{
	const unsigned int n = afm_zs_test_rfree_max(), size = 2000;
	struct afm_zs_counters before, after;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned long pages, freed;
	unsigned int i;

	ts = afm_zs_set_filled(test, n, n, size, buf);
	pages = afm_get_total_pages(ts->pool);
	afm_zs_test_busy(ts->pool, true);
	for (i = 0; i < n; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &before);
	freed = afm_zs_shrinker_scan(ts->pool, pages);
	afm_zs_get_counters(ts->pool, &after);
	afm_zs_test_busy(ts->pool, false);

	KUNIT_EXPECT_EQ(test, before.rfree_waiting, n);
	KUNIT_EXPECT_EQ(test, after.rfree_waiting, 0);
	KUNIT_EXPECT_EQ(test, after.objects, 0);
	/* The drained frees gave the zspages back... */
	KUNIT_EXPECT_LT(test, afm_get_total_pages(ts->pool), pages);
	/* ...not compaction. */
	KUNIT_EXPECT_EQ(test, after.passes, before.passes);
	KUNIT_EXPECT_EQ(test, freed, SHRINK_STOP);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A victim whose pages someone else has locked when compaction empties it
 * (the kernel's compaction trying to isolate them, memory-failure, a page
 * walker) is not freed at once: its zspage is queued for the free work.
 * Its pages are given back all the same, and compaction must count them:
 * with every page that holds an object locked, a shrinker scan frees what
 * it would have freed, reports it (not SHRINK_STOP), and once the pages
 * are unlocked the free work gives back at least that.
 */
static void afm_zs_test_compact_locked(struct kunit *test)
{
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info info;
	struct page **locked;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long count, freed, pages, held;
	unsigned int i, nl = 0;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_quiet(ts);
	locked = kunit_kcalloc(test, ts->n, sizeof(*locked), GFP_KERNEL);
	if (!locked)
		kunit_skip(test, "no memory for the page list");
	afm_zs_fragment(test, ts, buf);
	pages = afm_get_total_pages(ts->pool);
	count = afm_zs_shrinker_count(ts->pool);
	KUNIT_ASSERT_NE(test, count, SHRINK_EMPTY);
	for (i = 0; i < ts->n; i++) {
		if (!ts->h[i])
			continue;
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		/* Already locked: by this loop, for an earlier object. */
		if (trylock_page(info.page))
			locked[nl++] = info.page;
	}
	afm_zs_get_counters(ts->pool, &before);
	freed = afm_zs_shrinker_scan(ts->pool, count);
	afm_zs_get_counters(ts->pool, &after);
	/* Still held: their pages are locked. */
	held = afm_get_total_pages(ts->pool);
	for (i = 0; i < nl; i++)
		unlock_page(locked[i]);
	afm_zs_flush_work(ts->pool);
	kunit_info(test, "%u pages locked: scan of %lu freed %lu of %lu pages (%lu held until unlocked, %lu after), %lu zspages freed late\n",
		   nl, count, freed, pages, held, afm_get_total_pages(ts->pool),
		   after.deferred_frees - before.deferred_frees);
	KUNIT_EXPECT_GT(test, after.deferred_frees, before.deferred_frees);
	KUNIT_EXPECT_NE(test, freed, SHRINK_STOP);
	KUNIT_EXPECT_GT(test, freed, 0);
	KUNIT_EXPECT_GT(test, held, pages - freed);
	/* The free work also gives back the descriptor pages they emptied. */
	KUNIT_EXPECT_LE(test, afm_get_total_pages(ts->pool), pages - freed);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A zspage filled to its last byte (8 objects of an eighth of it: with any
 * page size, others besides the pinned one, the freed one and the tail
 * one), made a victim while one object is pinned: compaction moves the
 * others, its tail object among them, so the zspage keeps its fill offset
 * with one object left. Freeing that object then leaves a zspage of
 * nothing but holes, which must be released, not put on a hole list
 * (there is none for a whole zspage of holes: the stock-kernel zswap test
 * crashed there with "list_add corruption").
 */
static void afm_zs_test_victim_tail(struct kunit *test)
{
	const unsigned int n = 8, size = afm_zs_size_eighth(0);
	struct afm_zs_obj_info first, info;
	struct afm_zs_counters c, after;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long pages;
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.zspages, 1);
	KUNIT_ASSERT_EQ(test, c.tail_bytes, 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &first), 0);
	/*
	 * A hole (an eighth of the zspage: more than the eighth of a page
	 * compaction on request takes), so that compaction takes the
	 * zspage; object 0 stays.
	 */
	afm_free(ts->pool, ts->h[3]);
	ts->h[3] = 0;
	KUNIT_ASSERT_TRUE(test, afm_zs_test_pin(ts->pool, ts->h[0]));
	afm_compact(ts->pool);
	afm_zs_test_unpin(ts->pool, ts->h[0]);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &info), 0);
	KUNIT_EXPECT_EQ(test, info.zspage_id, first.zspage_id);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[n - 1], &info),
			0);
	KUNIT_EXPECT_NE(test, info.zspage_id, first.zspage_id);

	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	pages = afm_get_total_pages(ts->pool);
	afm_free(ts->pool, ts->h[0]);
	ts->h[0] = 0;
	afm_zs_flush_work(ts->pool);
	/* Released: one zspage and its pages fewer. */
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.zspages, c.zspages - 1);
	KUNIT_EXPECT_LE(test, afm_get_total_pages(ts->pool),
			pages - AFM_ZS_PAGES);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf,
						afm_zs_size_eighth, 0), 0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Random overwrites whose sizes change (zram as swap; fio's mixwrite after
 * its fill): a pool of AFM_ZS_OWA_OBJS objects, each then replaced at
 * random, AFM_ZS_OWA_ROUNDS times the pool over, by one of a size drawn
 * as the case says (struct afm_zs_owa_case), with the automatic
 * compaction at a trigger of 1 per mille run every AFM_ZS_OWA_BATCH
 * replacements and at no other time (AFM_ZS_QUIET_AUTO,
 * afm_zs_test_run_auto(): when a run goes is the test's choice, not the
 * host's speed: a batch slower than AFM_ZS_AUTO_GAP would otherwise see
 * runs in its middle). Each case runs twice on the same sizes:
 * compaction moving objects only to tails, then into holes of dense
 * zspages too (zspage_compact_holes). Reports the overhead (pages held
 * against live bytes) over the replacements and the bytes compaction
 * copied per byte it gave back. Checks that compaction gave pages back
 * within its bound (a run while writes go on takes zspages with a quarter
 * of their bytes in holes: at most 3 bytes copied per byte given back),
 * that moving into holes copied less per byte given back and held no more
 * at the mean, every byte and the tables.
 */
#define AFM_ZS_OWA_OBJS		4096
#define AFM_ZS_OWA_ROUNDS	4
#define AFM_ZS_OWA_BATCH	256

static u32 afm_zs_owa_next(u32 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * Sizes: after the replacements from [@lo[0], @lo[0] + @span) or
 * [@lo[1], @lo[1] + @span), one or the other at random; before them from
 * [@fill_lo, @fill_lo + min(@span, 512)), or as after when @fill_lo is 0.
 * The first case is about the lz4 sizes of fio's pages: half
 * compressible, then a quarter or three quarters; the second the same with
 * each size within 32 bytes, as fio's pages are: what an object of one
 * size leaves of the hole of another is then too short for either, so
 * fewer objects find a hole (and fio on zram gains less than the first).
 */
struct afm_zs_owa_case {
	const char *name;
	unsigned int fill_lo, lo[2], span;
};

static const struct afm_zs_owa_case afm_zs_owa_cases[] = {
	{ "fio mixwrite", 1761, { 544, 2644 }, 512 },
	{ "narrow sizes", 2064, { 1034, 3084 }, 32 },
	{ "two sizes throughout", 0, { 544, 2644 }, 512 },
	{ "30-4000 throughout", 0, { 30, 30 }, 3970 },
	{ "pages shrink", 2644, { 544, 544 }, 512 },
	{ "pages grow", 544, { 2644, 2644 }, 512 },
};

static void afm_zs_owa_desc(const struct afm_zs_owa_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_zs_owa, afm_zs_owa_cases, afm_zs_owa_desc);

static size_t afm_zs_owa_size(const struct afm_zs_owa_case *oc, u32 *x,
			      bool mix)
{
	u32 r = afm_zs_owa_next(x);

	if (!mix && oc->fill_lo)
		return oc->fill_lo + (r >> 1) % min(oc->span, 512U);
	return oc->lo[r & 1] + (r >> 1) % oc->span;
}

struct afm_zs_owa_result {
	unsigned long mean_pm, max_pm, copied, freed;
};

static void afm_zs_restore_compact_holes(void *data)
{
	afm_zs_set_compact_holes((unsigned long)data);
}

/* One run of afm_zs_test_overwrite_auto(), into holes or not (@holes). */
static void afm_zs_owa_run(struct kunit *test,
			   const struct afm_zs_owa_case *oc, bool holes,
			   struct afm_zs_owa_result *res)
{
	unsigned long samples = 0, sum_pm = 0, pm;
	struct afm_zs_counters before, after;
	unsigned int *seed, *size, i, n, ops;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	u32 x = 2463534242U;

	seed = kunit_kcalloc(test, AFM_ZS_OWA_OBJS, sizeof(*seed), GFP_KERNEL);
	size = kunit_kcalloc(test, AFM_ZS_OWA_OBJS, sizeof(*size), GFP_KERNEL);
	if (!seed || !size)
		kunit_skip(test, "no memory for the object list");
	afm_zs_set_compact_holes(holes);
	ts = afm_zs_set(test, AFM_ZS_OWA_OBJS);
	afm_zs_quiet_auto(ts);
	afm_zs_test_auto_next(ts->pool, 60 * HZ);
	for (i = 0; i < AFM_ZS_OWA_OBJS; i++) {
		size[i] = afm_zs_owa_size(oc, &x, false);
		seed[i] = i;
		ts->h[i] = afm_test_malloc(test, ts->pool, size[i]);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], seed[i], size[i],
				   buf, i);
	}
	afm_zs_test_run_auto(ts->pool);
	afm_zs_get_counters(ts->pool, &before);
	memset(res, 0, sizeof(*res));
	for (ops = 0; ops < AFM_ZS_OWA_ROUNDS * AFM_ZS_OWA_OBJS; ops++) {
		n = afm_zs_owa_next(&x) % AFM_ZS_OWA_OBJS;
		afm_free(ts->pool, ts->h[n]);
		size[n] = afm_zs_owa_size(oc, &x, true);
		seed[n] = AFM_ZS_OWA_OBJS + ops;
		ts->h[n] = afm_test_malloc(test, ts->pool, size[n]);
		afm_zs_put_pattern(test, ts->pool, ts->h[n], seed[n], size[n],
				   buf, ops);
		if ((ops + 1) % AFM_ZS_OWA_BATCH)
			continue;
		afm_zs_test_run_auto(ts->pool);
		pm = afm_zs_overhead_pm(ts->pool);
		sum_pm += pm;
		res->max_pm = max(res->max_pm, pm);
		samples++;
		cond_resched();
	}
	afm_zs_get_counters(ts->pool, &after);
	res->mean_pm = sum_pm / samples;
	res->copied = after.moved_bytes - before.moved_bytes;
	res->freed = (after.auto_freed - before.auto_freed) << PAGE_SHIFT;
	kunit_info(test, "%s: overhead mean %lu, max %lu per mille; %lu runs moved %lu objects (%lu into holes), copying %lu bytes per 100 given back (%lu pages; %lu zspages freed late)\n",
		   holes ? "into holes" : "to tails", res->mean_pm, res->max_pm,
		   after.auto_runs - before.auto_runs,
		   after.moved - before.moved,
		   after.moved_hole - before.moved_hole,
		   res->freed ? res->copied * 100 / res->freed : 0,
		   res->freed >> PAGE_SHIFT,
		   after.deferred_frees - before.deferred_frees);
	KUNIT_EXPECT_GT(test, res->freed, 0);
	KUNIT_EXPECT_LE(test, res->copied, 3 * res->freed);
	if (!holes)
		KUNIT_EXPECT_EQ(test, after.moved_hole, before.moved_hole);
	for (i = 0; i < AFM_ZS_OWA_OBJS; i++)
		if (!afm_zs_check(test, ts->pool, ts->h[i], seed[i], size[i],
				  buf, i & 1))
			break;
	afm_zs_expect_consistent(test, ts->pool);
}

static void afm_zs_test_overwrite_auto(struct kunit *test)
{
	const struct afm_zs_owa_case *oc = test->param_value;
	struct afm_zs_owa_result tails, holes;
	bool old = afm_zs_set_compact_holes(false);

	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test,
						  afm_zs_restore_compact_holes,
						  (void *)(unsigned long)old));
	afm_zs_permille(test, 1);
	afm_zs_owa_run(test, oc, false, &tails);
	afm_zs_owa_run(test, oc, true, &holes);
	/* copied / freed, into holes against to tails */
	KUNIT_EXPECT_LT(test, holes.copied * (tails.freed >> PAGE_SHIFT),
			tails.copied * (holes.freed >> PAGE_SHIFT));
	KUNIT_EXPECT_LE(test, holes.mean_pm, tails.mean_pm);
}

/* What afm_zs_moving_check() saw from the moves of a pass. */
struct afm_zs_moving {
	struct afm_pool *pool;
	unsigned int calls;
	unsigned int locked;
	unsigned int gates_free;
};

/*
 * From a move about to copy (afm_zs_test_move_hook()): the shard's lock
 * must be free, and both zspages' gates taken (a page migration, which
 * tries them exclusively, would fail). (The lock is only tried: a move
 * holds its object's entry LOCK, which a free waits for holding the pool
 * lock, so taking the pool lock here could deadlock; lockdep says so.)
 */
static void afm_zs_moving_check(void *arg, unsigned long zspage_id,
				unsigned int offset, unsigned long dst_id)
{
	struct afm_zs_moving *m = arg;

	m->calls++;
	if (!afm_zs_test_shard_free(m->pool, 0))
		m->locked++;
	if (!afm_zs_test_gate_busy(m->pool, zspage_id) ||
	    !afm_zs_test_gate_busy(m->pool, dst_id))
		m->gates_free++;
}

/*
 * Fragment a pool of @ts's objects (@buf: a page for patterns) and compact
 * it with afm_zs_moving_check() on every copy without the lock, every
 * move copying under the lock if @locked; the counters before and after.
 */
static struct afm_test_set *afm_zs_compact_watched(struct kunit *test,
						   void *buf, bool locked,
						   struct afm_zs_moving *m,
						   struct afm_zs_counters *before,
						   struct afm_zs_counters *after)
{
	struct afm_test_set *ts;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_quiet(ts);
	afm_zs_fragment(test, ts, buf);
	m->pool = ts->pool;
	afm_zs_get_counters(ts->pool, before);
	afm_zs_test_move_hook(ts->pool, afm_zs_moving_check, m);
	afm_zs_test_locked_copies(ts->pool, locked);
	afm_compact(ts->pool);
	afm_zs_test_locked_copies(ts->pool, false);
	afm_zs_test_move_hook(ts->pool, NULL, NULL);
	afm_zs_get_counters(ts->pool, after);
	return ts;
}

/*
 * A compaction move copies the object's bytes without the shard's pool
 * lock, so that the shard's allocations and frees do not wait for copies:
 * within each move, just before its copy, the lock is free, and the gates
 * of both zspages are held against page migration, which takes the pool
 * lock only after a gate. Every byte of the moved objects is still there
 * after the pass. Needs a trylock that can fail (SMP, or spinlock
 * debugging).
 */
static void afm_zs_test_compact_unlocked(struct kunit *test)
{
	struct afm_zs_moving m = { };
	struct afm_zs_counters before, after;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	if (!IS_ENABLED(CONFIG_SMP) && !IS_ENABLED(CONFIG_DEBUG_SPINLOCK))
		kunit_skip(test, "a trylock cannot fail here");
	ts = afm_zs_compact_watched(test, buf, false, &m, &before, &after);
	kunit_info(test, "%lu moves, %u copied without the lock\n",
		   after.moved - before.moved, m.calls);
	KUNIT_ASSERT_GT(test, after.moved, before.moved);
	/* Every move: no migration took a gate here. */
	KUNIT_EXPECT_EQ(test, m.calls, after.moved - before.moved);
	KUNIT_EXPECT_EQ(test, m.locked, 0);
	KUNIT_EXPECT_EQ(test, m.gates_free, 0);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * When a gate is held (a page migration), a move copies under the pool
 * lock instead (afm_zs_test_locked_copies() makes every move do so): no
 * move calls the hook of the copies without the lock, objects still move,
 * pages come back and every byte reads back.
 */
static void afm_zs_test_compact_locked_copies(struct kunit *test)
{
	struct afm_zs_moving m = { };
	struct afm_zs_counters before, after;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	ts = afm_zs_compact_watched(test, buf, true, &m, &before, &after);
	KUNIT_ASSERT_GT(test, after.moved, before.moved);
	KUNIT_EXPECT_EQ(test, m.calls, 0);
	KUNIT_EXPECT_LT(test, after.data_pages, before.data_pages);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/* What the other thread does to the object being moved. */
enum afm_zs_race {
	AFM_RACE_FREE,		/* allocate and free another, free it */
	AFM_RACE_READ,		/* read it */
};

static const char * const afm_zs_race_names[] = {
	[AFM_RACE_FREE] = "free",
	[AFM_RACE_READ] = "read",
};

static const enum afm_zs_race afm_zs_races[] = {
	AFM_RACE_FREE, AFM_RACE_READ,
};

static void afm_zs_race_desc(const enum afm_zs_race *r, char *desc)
{
	strscpy(desc, afm_zs_race_names[*r], KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_zs_race, afm_zs_races, afm_zs_race_desc);

/*
 * What afm_zs_test_compact_race()'s other thread did while the first move
 * that called the hook was copying: @loc, the objects' places before the
 * pass (no lock can be taken in the hook, see afm_zs_moving_check()).
 */
struct afm_zs_freer {
	struct afm_test_set *ts;
	struct afm_zs_obj_info *loc;
	struct completion go;
	struct completion done;
	enum afm_zs_race race;
	void *rbuf;
	size_t got;
	unsigned long handle;
	unsigned int idx;
	unsigned int calls;
	bool allocated;
	bool no_memory;
	bool seen_locked;
	bool spun;
	bool done_early;
};

/*
 * The other thread: an allocation and a free in the shard (without
 * sleeping: the move's CPU waits for it with preemption off), then the
 * free of the object being moved, which waits for the copy; or a read of
 * that object, which waits for the copy too.
 */
static int afm_zs_freer_fn(void *arg)
{
	struct afm_zs_freer *f = arg;
	unsigned long h;

	wait_for_completion(&f->go);
	if (READ_ONCE(f->handle) && f->race == AFM_RACE_READ) {
		WRITE_ONCE(f->got, afm_read(f->ts->pool, f->handle, f->rbuf));
	} else if (READ_ONCE(f->handle)) {
		h = afm_malloc(f->ts->pool, 100, GFP_NOWAIT | __GFP_NOWARN);
		if (h == (unsigned long)ERR_PTR(-ENOMEM)) {
			WRITE_ONCE(f->no_memory, true);
		} else if (!IS_ERR_VALUE(h) && h) {
			afm_free(f->ts->pool, h);
			WRITE_ONCE(f->allocated, true);
		}
		afm_free(f->ts->pool, f->handle);
	}
	complete(&f->done);
	return 0;
}

/*
 * From the first move about to copy: set the other thread (another CPU)
 * going on the object being moved, then wait (up to 10 s each) for what
 * it must reach before the copy: for a free, the allocation and then the
 * free holding the shard's lock, waiting for this copy; for a read, its
 * pin spinning on the entry's LOCK (and the read not done).
 */
static void afm_zs_moving_free(void *arg, unsigned long zspage_id,
			       unsigned int offset, unsigned long dst_id)
{
	struct afm_zs_freer *f = arg;
	struct afm_pool *pool = f->ts->pool;
	unsigned int i, ms;

	if (f->calls++)
		return;
	for (i = 0; i < f->ts->n; i++) {
		if (f->ts->h[i] && f->loc[i].zspage_id == zspage_id &&
		    f->loc[i].offset == offset)
			break;
	}
	if (i == f->ts->n)
		return;
	f->idx = i;
	afm_zs_test_pin_spun(pool, f->ts->h[i]);
	WRITE_ONCE(f->handle, f->ts->h[i]);
	complete(&f->go);
	if (f->race == AFM_RACE_READ) {
		for (ms = 0; ms < 10000; ms++) {
			if (afm_zs_test_pin_spun(pool, f->handle)) {
				f->spun = true;
				break;
			}
			mdelay(1);
		}
		f->done_early = READ_ONCE(f->got) != 0;
		return;
	}
	for (ms = 0; ms < 10000 && !READ_ONCE(f->allocated) &&
	     !READ_ONCE(f->no_memory); ms++)
		mdelay(1);
	for (ms = 0; ms < 10000; ms++) {
		if (!afm_zs_test_shard_free(pool, 0)) {
			f->seen_locked = true;
			break;
		}
		mdelay(1);
	}
}

/*
 * While compaction copies an object (without the pool lock), another
 * thread acts on that object. Free: it first allocates and frees an
 * object in the same shard (the lock is free), then frees the object
 * being copied: that free waits for the copy, holding the lock, and frees
 * the object at its new place; the object is gone, nothing leaks, the
 * counters match the tables. Read: the read spins until the copy is done
 * and returns every byte, from the object's new place. Every other object
 * reads back. SMP only (the other thread runs on another CPU while the
 * move's CPU waits for it, preemption off); the debug guest of make check
 * runs it.
 */
static void afm_zs_test_compact_race(struct kunit *test)
{
	const enum afm_zs_race *race = test->param_value;
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info info;
	struct afm_zs_freer f = { };
	struct task_struct *t;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int cpu, i;

	if (!IS_ENABLED(CONFIG_SMP) || num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, 4000);
	afm_zs_quiet(ts);
	afm_zs_fragment(test, ts, buf);
	f.ts = ts;
	f.race = *race;
	f.rbuf = afm_zs_buf(test);
	f.loc = kunit_kcalloc(test, ts->n, sizeof(*f.loc), GFP_KERNEL);
	if (!f.loc)
		kunit_skip(test, "no memory for the objects' places");
	for (i = 0; i < ts->n; i++)
		if (ts->h[i])
			KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i],
							      &f.loc[i]), 0);
	init_completion(&f.go);
	init_completion(&f.done);
	afm_zs_get_counters(ts->pool, &before);

	migrate_disable();
	cpu = cpumask_any_but(cpu_online_mask, smp_processor_id());
	t = kthread_create(afm_zs_freer_fn, &f, "afm-zs-freer");
	if (IS_ERR(t)) {
		migrate_enable();
		kunit_skip(test, "no thread for the free");
	}
	kthread_bind(t, cpu);
	wake_up_process(t);
	afm_zs_test_move_hook(ts->pool, afm_zs_moving_free, &f);
	afm_compact(ts->pool);
	afm_zs_test_move_hook(ts->pool, NULL, NULL);
	migrate_enable();
	/* The thread waits for this if no move called the hook. */
	complete(&f.go);
	wait_for_completion(&f.done);

	KUNIT_ASSERT_NE_MSG(test, f.handle, 0,
			    "no move copied without the lock (%u calls)", f.calls);
	if (f.race == AFM_RACE_READ) {
		KUNIT_EXPECT_TRUE_MSG(test, f.spun,
				      "the read did not wait for the copy");
		KUNIT_EXPECT_FALSE(test, f.done_early);
		KUNIT_EXPECT_EQ(test, f.got, afm_zs_size(f.idx));
		KUNIT_EXPECT_EQ(test, afm_test_check(f.rbuf, f.idx,
						     afm_zs_size(f.idx)), -1);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, f.handle,
						      &info), 0);
		KUNIT_EXPECT_TRUE(test,
				  info.zspage_id != f.loc[f.idx].zspage_id ||
				  info.offset != f.loc[f.idx].offset);
	} else {
		if (f.no_memory)
			kunit_skip(test, "no memory for the other allocation");
		KUNIT_EXPECT_TRUE(test, f.allocated);
		KUNIT_EXPECT_TRUE(test, f.seen_locked);
		ts->h[f.idx] = 0;
		KUNIT_EXPECT_EQ(test,
				afm_zs_obj_info(ts->pool, f.handle, &info),
				-ENOENT);
		afm_zs_get_counters(ts->pool, &after);
		KUNIT_EXPECT_EQ(test, after.objects, before.objects - 1);
	}
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Compaction of a shard of short zspages ("Short zspages" in
 * mm/zspage_pages.c): objects of one size fill zspages of 1, 2 and 4
 * pages with 4 KiB pages (of 1 page with 16 KiB pages) until a full
 * zspage opens, whose one object is freed; then every object of the last
 * short zspage but its first and last is freed, so that it is the only
 * zspage with holes and no tail fits its two survivors. afm_compact()
 * must give the victim's pages back for a zspage just long enough for the
 * survivors (a power of two of pages): a full zspage made 11 of 7 data
 * pages, 2 of 1; counting the object being moved twice made a zspage of
 * 2 pages for two objects of 1500 bytes. Every object keeps its bytes.
 */
static const unsigned int afm_zs_cshort_sizes[] = { 1000, 1500 };

static void afm_zs_cshort_desc(const unsigned int *size, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%u bytes", *size);
}

KUNIT_ARRAY_PARAM(afm_zs_cshort, afm_zs_cshort_sizes, afm_zs_cshort_desc);

static void afm_zs_test_compact_short(struct kunit *test)
{
	const unsigned int size = *(const unsigned int *)test->param_value;
	const unsigned int n = 64;
	unsigned int i, last, first = 0, used, ext, want;
	unsigned long victim = ULONG_MAX, vpages = 0, prev = 0;
	struct afm_zs_counters before, after;
	void *buf = afm_zs_buf(test);
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_short(test, true);
	afm_zs_quiet(ts);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
		afm_zs_get_counters(ts->pool, &after);
		if (after.data_pages >= AFM_ZS_PAGES)
			break;
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i],
						      &info), 0);
		if (info.zspage_id != victim) {
			victim = info.zspage_id;
			vpages = after.data_pages - prev;
			first = i;
		}
		prev = after.data_pages;
	}
	KUNIT_ASSERT_LT(test, i, n);
	/* The object that opened a full zspage goes, and that zspage. */
	afm_free(ts->pool, ts->h[i]);
	ts->h[i] = 0;
	used = i;
	last = i - 1;
	KUNIT_ASSERT_GT(test, last, first + 2);
	for (i = first + 1; i < last; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_LT(test, before.data_pages, AFM_ZS_PAGES);
	KUNIT_ASSERT_EQ(test, before.data_pages, prev);
	/* The survivors' extents (unpadded), back to back, in whole pages. */
	ext = size + afm_zs_header_bytes();
	want = roundup_pow_of_two(DIV_ROUND_UP(2 * ext, PAGE_SIZE));

	afm_compact(ts->pool);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	kunit_info(test, "data pages %lu -> %lu, victim of %lu pages and %u objects (2 left)\n",
		   before.data_pages, after.data_pages, vpages,
		   last - first + 1);
	KUNIT_EXPECT_GT(test, after.passes, before.passes);
	KUNIT_EXPECT_EQ(test, after.data_pages,
			before.data_pages - vpages + want);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
	for (i = 0; i < used; i++)
		if (ts->h[i])
			afm_zs_check(test, ts->pool, ts->h[i], i, size, buf,
				     i & 1);
	afm_zs_expect_consistent(test, ts->pool);
}

static struct kunit_case afm_zspage_compact_test_cases[] = {
	KUNIT_CASE_PARAM(afm_zs_test_compact, afm_zs_idx_bits_gen_params),
	KUNIT_CASE(afm_zs_test_compact_pinned),
	KUNIT_CASE(afm_zs_test_victim_tail),
	KUNIT_CASE_PARAM(afm_zs_test_compact_short, afm_zs_cshort_gen_params),
	KUNIT_CASE_SLOW(afm_zs_test_compact_cost),
	KUNIT_CASE(afm_zs_test_auto_compact),
	KUNIT_CASE(afm_zs_test_auto_gap),
	KUNIT_CASE(afm_zs_test_rest_compact),
	KUNIT_CASE(afm_zs_test_rest_small),
	KUNIT_CASE(afm_zs_test_shrinker),
	KUNIT_CASE(afm_zs_test_shrinker_own),
	KUNIT_CASE(afm_zs_test_compact_locked),
	KUNIT_CASE(afm_zs_test_compact_yields),
	KUNIT_CASE(afm_zs_test_compact_unlocked),
	KUNIT_CASE(afm_zs_test_compact_locked_copies),
	KUNIT_CASE_PARAM(afm_zs_test_compact_race, afm_zs_race_gen_params),
	KUNIT_CASE_PARAM_ATTR(afm_zs_test_overwrite_auto, afm_zs_owa_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_suite afm_zspage_compact_test_suite = {
	.name = "afmalloc_zspage_compact",
	.test_cases = afm_zspage_compact_test_cases,
};

kunit_test_suite(afm_zspage_compact_test_suite);
