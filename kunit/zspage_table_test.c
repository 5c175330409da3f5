// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the slot tables (mm/zspage_table.c): a handle table that grows
 * past what a fixed top level held, and gives every page back; the free
 * slots a table keeps at hand (its magazine); handles in address order
 * without it; directory pages shared by the three tables, counted before
 * an allocation takes anything; the hole table's growth left to a malloc
 * that does not need it, or to the shard's worker when frees come and no
 * malloc does; top levels grown by the shard's worker, ahead of
 * need and for callers that may not sleep; table pages freed after an RCU
 * grace period.
 */

#include "zspage_test.h"

/*
 * Free every object of @ts: every table, directory and zspage page goes
 * back, slots kept at hand included.
 */
static void afm_zs_free_all_empty(struct kunit *test, struct afm_test_set *ts)
{
	struct afm_zs_counters c;
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		if (ts->h[i])
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 0);
	KUNIT_EXPECT_EQ(test, c.desc_pages, 0);
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 0);
	KUNIT_EXPECT_EQ(test, c.total_pages, 0);
}

/*
 * The handle table has no fixed capacity: with small directories
 * (afm_zs_test_small_dirs(): the fewest table pages that hold 1024
 * handles, two with 4 KiB pages, one of 2048 with 16 KiB pages), a pool
 * takes more objects than 256 directories hold (the fixed top level the
 * table used to have) while its top level grows from one directory to
 * hundreds, and past afm_zs_test_top_ahead() directories (AFM_ZT_AHEAD_DIRS:
 * 128 with 4 KiB pages, 512 with 16 KiB pages), from where the shard's
 * worker grows it ahead of need; every object keeps its bytes, compaction
 * works across the directories, and freeing everything gives every table,
 * directory and zspage page back.
 */
static void afm_zs_test_table_growth(struct kunit *test)
{
	const unsigned long per_page = PAGE_SIZE / sizeof(u64);
	const unsigned int shift = order_base_2(DIV_ROUND_UP(1024, per_page));
	const unsigned long per_dir = per_page << shift;
	const unsigned int ahead = afm_zs_test_top_ahead();
	/*
	 * The first top level of at least @ahead directories has fewer than
	 * 2 * @ahead (254 with 4 KiB pages, 1022 with 16 KiB pages: twice one
	 * of fewer than @ahead, filling its allocation of at most a page), so
	 * that its last quarter starts by directory 3 * @ahead / 2 (191 and
	 * 767): 262656 handles with 4 KiB pages, as many as the 256
	 * directories and a half need; 1574912 with 16 KiB pages, where those
	 * take 525312.
	 */
	const unsigned int n = max(256 * per_dir + per_dir / 2,
				   (3 * ahead / 2 + 1) * per_dir);
	/*
	 * About 40 bytes a handle (16 bytes of data, its header, its entry,
	 * its slot in @ts, KASAN's shadow): 10 MiB with 4 KiB pages, 60 MiB
	 * with 16 KiB pages. With five times that available (64 MiB at least),
	 * a failed allocation is the table refusing, a failure, not a skip.
	 */
	const unsigned long avail = max(64UL << 20, 5UL * 40 * n);
	unsigned long maxh = 0, top;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	bool early = false, check;
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, afm_zs_test_small_dirs(ts->pool, shift), 0);
	if (si_mem_available() < avail >> PAGE_SHIFT)
		kunit_skip(test, "less than %lu MiB available", avail >> 20);
	for (i = 0; i < n; i++) {
		/*
		 * A new directory next: in the last quarter of a large top
		 * level, the worker has grown it by the time it is flushed,
		 * before any allocation needs it (GFP_KERNEL here; zswap's
		 * may not sleep). The top level is read before the
		 * allocation that queues the worker, which on SMP may run
		 * before the test looks again.
		 */
		check = false;
		if (!early && i % per_dir == 0) {
			afm_zs_get_counters(ts->pool, &c);
			top = c.top_dirs;
			check = top >= ahead && i / per_dir >= top - top / 4;
		}
		ts->h[i] = afm_malloc(ts->pool, afm_zs_size16(i), GFP_KERNEL);
		KUNIT_ASSERT_TRUE_MSG(test, afm_test_handle_ok(ts->h[i]),
				      "object %u: %ld", i, (long)ts->h[i]);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   afm_zs_size16(i), buf, 0);
		maxh = max(maxh, ts->h[i]);
		if (!check)
			continue;
		afm_zs_flush_work(ts->pool);
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_EXPECT_GE(test, c.top_dirs, 2 * top);
		KUNIT_EXPECT_EQ(test, c.tops_later, 1);
		early = true;
	}
	KUNIT_EXPECT_TRUE(test, early);
	/* Only a pool without directories changes their size. */
	KUNIT_EXPECT_EQ(test, afm_zs_test_small_dirs(ts->pool, 2), -EINVAL);
	KUNIT_EXPECT_GT(test, maxh, 256 * per_dir);
	afm_zs_get_counters(ts->pool, &c);
	/*
	 * Table pages, and a directory block for every 2^shift of them (and
	 * for every 2^shift descriptor pages), eight blocks a directory page.
	 */
	KUNIT_EXPECT_EQ(test, c.table_pages, DIV_ROUND_UP(n, per_page));
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	KUNIT_EXPECT_EQ(test, c.dir_pages,
			DIV_ROUND_UP(DIV_ROUND_UP(n, per_dir) +
				     DIV_ROUND_UP(c.desc_pages, 1U << shift),
				     8));
	afm_zs_expect_consistent(test, ts->pool);

	for (i = 0; i < n; i++) {
		if (i % 4) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
	}
	KUNIT_EXPECT_GT(test, afm_compact(ts->pool), 0);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size16,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);

	afm_zs_free_all_empty(test, ts);
}

/*
 * A freed handle's slot is kept at hand (the table's magazine): the next
 * allocation reuses one of those freed, and a table page whose free slots
 * sit there stays until the magazine is drained (any compaction run, the
 * table's last slot freed, or frees outrunning allocations: too few here),
 * then goes back to the page allocator.
 */
static void afm_zs_test_table_magazine(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	const unsigned int n = per_page + AFM_ZT_MAG;
	struct afm_test_set *ts = afm_zs_set(test, n);
	struct afm_zs_counters c;
	void *buf = afm_zs_buf(test);
	unsigned long lo, hi;
	unsigned int i;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	/* Slots are taken in order: the first per_page on the first page. */
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf,
				   i & 1);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.table_pages, 2);

	/* The second page's objects go; their slots stay at hand. */
	lo = ts->h[per_page];
	hi = ts->h[n - 1];
	for (i = per_page; i < n; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 2);
	/* A slot at hand is reused: a handle of the second page. */
	ts->h[per_page] = afm_test_malloc(test, ts->pool, 100);
	KUNIT_EXPECT_GE(test, ts->h[per_page], lo);
	KUNIT_EXPECT_LE(test, ts->h[per_page], hi);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 2);
	afm_free(ts->pool, ts->h[per_page]);
	ts->h[per_page] = 0;

	/* Compaction drains the magazine: the page goes back. */
	afm_compact(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 1);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = 0; i < per_page; i++)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, 100, buf, i & 1));

	/* The last object freed: no slot kept, no table page left. */
	afm_zs_free_all_empty(test, ts);
}

/* Objects of 100 bytes, for afm_zs_verify_all(). */
static size_t afm_zs_size100(unsigned int i)
{
	return 100;
}

/*
 * A quiet set of @n objects whose tables take a directory every table page
 * (afm_zs_test_small_dirs(), shift 0), with handle slots kept at hand or,
 * without @keep_slots, none (afm_zs_test_handle_mag()).
 */
static struct afm_test_set *afm_zs_dir_set(struct kunit *test, unsigned int n,
					   bool keep_slots)
{
	struct afm_test_set *ts;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, afm_zs_test_small_dirs(ts->pool, 0), 0);
	if (!keep_slots)
		KUNIT_ASSERT_EQ(test, afm_zs_test_handle_mag(ts->pool, 0), 0);
	return ts;
}

/*
 * Table pages go back after an RCU grace period: a lockless lookup (a map)
 * that read an entry's address just before the free of the last live entry
 * of its table page gave the page back still reads that entry, free,
 * from a page not yet back to the page allocator, which may hand it out
 * again (as a map of a stale handle can; when the page went back at once,
 * its count was 0 here and KASAN reported the read a use after free). The
 * pool stops counting the page at once.
 */
static void afm_zs_test_table_page_rcu(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_test_stale seen;
	struct afm_zs_counters c;

	afm_zs_permille(test, 0);
	afm_zs_quiet(ts);
	ts->h[0] = afm_test_malloc(test, ts->pool, 100);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.table_pages, 1);
	KUNIT_ASSERT_TRUE(test, afm_zs_test_free_in_lookup(ts->pool, ts->h[0],
							   0, &seen));
	ts->h[0] = 0;
	KUNIT_EXPECT_FALSE(test, seen.live);
	KUNIT_EXPECT_TRUE(test, seen.page_held);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 0);
	afm_zs_free_all_empty(test, ts);
}

/*
 * Directory blocks cool down for an RCU grace period before a directory
 * takes them again: a lookup that read a directory block's address just
 * before the free that gave the block back reads clear entries, even after
 * an allocation that needed a directory block (when it took the same block
 * at once, the lookup read its new table page; of another table, such as
 * the hole table, the lookup would have taken records for entries). After
 * a grace period the block is free again: the directory page fills up to
 * its eight blocks. With one table page per directory
 * (afm_zs_test_small_dirs(), shift 0) and no handle slots kept at hand: a
 * table page of handles, the first of a second one and a descriptor page
 * take three blocks of one directory page; the newest object goes, its
 * table page and block with it, and the next object needs a table page and
 * a block.
 */
static void afm_zs_test_dir_block_rcu(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	struct afm_zs_test_stale seen;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i, blocks = 0;

	ts = afm_zs_dir_set(test, 8 * per_page, false);
	for (i = 0; i <= per_page; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.table_pages, 2);
	KUNIT_ASSERT_EQ(test, c.desc_pages, 1);
	KUNIT_ASSERT_EQ(test, c.hole_pages, 0);
	KUNIT_ASSERT_EQ(test, c.dir_pages, 1);

	KUNIT_ASSERT_TRUE(test, afm_zs_test_free_in_lookup(ts->pool,
							   ts->h[per_page],
							   100, &seen));
	ts->h[per_page] = seen.handle;
	if (!seen.handle)
		kunit_skip(test, "no memory for an allocation without sleeping");
	afm_zs_put_pattern(test, ts->pool, ts->h[per_page], per_page, 100,
			   buf, 0);
	KUNIT_EXPECT_FALSE(test, seen.live);
	KUNIT_EXPECT_TRUE(test, seen.page_held);
	KUNIT_EXPECT_FALSE(test, seen.dir_set);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 2);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
	afm_zs_expect_consistent(test, ts->pool);

	/*
	 * Blocks that have cooled down serve again: eight fill the directory
	 * page (a grace period before each new table page; a block freed
	 * meanwhile, such as a hole table page's, cools down too).
	 */
	for (i = per_page + 1; i < ts->n; i++) {
		afm_zs_get_counters(ts->pool, &c);
		blocks = c.table_pages + c.desc_pages + c.hole_pages;
		if (blocks >= 8)
			break;
		if (!(i % per_page))
			KUNIT_ASSERT_TRUE(test,
					  afm_zs_test_dir_cool(ts->pool));
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
	}
	KUNIT_ASSERT_EQ(test, blocks, 8);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size100,
						0), 0);
	afm_zs_free_all_empty(test, ts);
}

/*
 * Files, objects 0 to @nfiles - 1 of @ts, written in order, and metadata
 * block m (object @nfiles + m) before every 64th.
 */
static void afm_zs_files_write(struct kunit *test, struct afm_test_set *ts,
			       unsigned int nfiles, void *buf)
{
	unsigned int i, m = 0;

	for (i = 0; i < nfiles; i++) {
		if (i % 64 == 0) {
			ts->h[nfiles + m] = afm_test_malloc(test, ts->pool, 100);
			afm_zs_put_pattern(test, ts->pool, ts->h[nfiles + m],
					   nfiles + m, 100, buf, 0);
			m++;
		}
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
	}
}

/* Object @i of @ts rewritten as zram does: new copy first, then the free. */
static void afm_zs_rewrite(struct kunit *test, struct afm_test_set *ts,
			   unsigned int i, void *buf)
{
	unsigned long h = afm_test_malloc(test, ts->pool, 100);

	afm_zs_put_pattern(test, ts->pool, h, i, 100, buf, 0);
	afm_free(ts->pool, ts->h[i]);
	ts->h[i] = h;
}

/*
 * What is left, objects @from to the end of @ts, fills its table pages
 * but one at most (@kept: it does not, some of the pages the frees left
 * being kept), and reads back; then everything goes.
 */
static void afm_zs_files_left(struct kunit *test, struct afm_test_set *ts,
			      unsigned int from, void *buf, bool kept)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	unsigned int i, few = DIV_ROUND_UP(ts->n - from, per_page) + 1;
	struct afm_zs_counters c;

	afm_zs_get_counters(ts->pool, &c);
	if (kept)
		KUNIT_EXPECT_GT_MSG(test, c.table_pages, few,
				    "%u handles left, phase rules off",
				    ts->n - from);
	else
		KUNIT_EXPECT_LE_MSG(test, c.table_pages, few,
				    "%u handles left", ts->n - from);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = from; i < ts->n; i++)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, 100, buf, i & 1));
	afm_zs_free_all_empty(test, ts);
}

/*
 * Handles keep the locality of the writes that made them, as zram's
 * untar/remove needs (bench/run.sh): files written in order, with a
 * metadata block among every 64 (an inode table, a bitmap); then the
 * last files, during which every metadata block is rewritten as zram
 * does (the new copy allocated, then the old one freed); then every file
 * but the last ones removed. What is left (the last files and the
 * metadata) was written last, and needs two table pages: the pages the
 * removed files filled go back. That holds with the handle table's
 * magazine off (zspage_handle_mag = 0, afm_zs_test_handle_mag()) and with
 * it (the default, 16 slots): the writes outrun the frees, so the table
 * is write-mostly (AFM_ZT_WR_ON) and the old slot of each metadata block
 * goes back to its page instead of to the next file, which would keep
 * every page the files filled. With the phase rules off
 * (zspage_handle_phases = N, afm_zs_test_handle_phases()) they are kept:
 * the rule is what makes the difference, and the parameter turns it off.
 */
struct afm_zs_mag_case {
	unsigned int mag;
	bool phases;
};

static const struct afm_zs_mag_case afm_zs_mag_cases[] = {
	{ 0, true }, { AFM_ZT_MAG, true }, { AFM_ZT_MAG, false },
};

static void afm_zs_mag_desc(const struct afm_zs_mag_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "handle magazine %u%s", c->mag,
		 c->phases ? "" : ", phase rules off");
}

KUNIT_ARRAY_PARAM(afm_zs_mag, afm_zs_mag_cases, afm_zs_mag_desc);

/* A pool of @n handles set up as @c says (afm_zs_test_table_*()). */
static struct afm_test_set *afm_zs_mag_set(struct kunit *test,
					   const struct afm_zs_mag_case *c,
					   unsigned int n)
{
	struct afm_test_set *ts;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, afm_zs_test_handle_mag(ts->pool, c->mag), 0);
	KUNIT_ASSERT_EQ(test, afm_zs_test_handle_phases(ts->pool, c->phases),
			0);
	return ts;
}

static void afm_zs_test_table_locality(struct kunit *test)
{
	const struct afm_zs_mag_case *c = test->param_value;
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	const unsigned int nfiles = 7 * per_page, nmeta = nfiles / 64;
	const unsigned int nlate = per_page, n = nfiles + nmeta + nlate;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i, m = 0;

	ts = afm_zs_mag_set(test, c, n);
	KUNIT_EXPECT_EQ(test, afm_zs_test_handle_mag(ts->pool, 17), -EINVAL);
	afm_zs_files_write(test, ts, nfiles, buf);
	/* Only an empty pool changes them. */
	KUNIT_EXPECT_EQ(test, afm_zs_test_handle_mag(ts->pool, 16), -EINVAL);
	KUNIT_EXPECT_EQ(test, afm_zs_test_handle_phases(ts->pool, true),
			-EINVAL);
	for (i = 0; i < nlate; i++) {
		if (i % 8 == 0 && m < nmeta)
			afm_zs_rewrite(test, ts, nfiles + m++, buf);
		ts->h[nfiles + nmeta + i] = afm_test_malloc(test, ts->pool,
							    100);
		afm_zs_put_pattern(test, ts->pool, ts->h[nfiles + nmeta + i],
				   nfiles + nmeta + i, 100, buf, 0);
	}
	KUNIT_ASSERT_EQ(test, m, nmeta);
	for (i = 0; i < nfiles; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_files_left(test, ts, nfiles, buf, c->mag && !c->phases);
}

/*
 * Removing files keeps the handles of what is written meanwhile together:
 * files written in order with a metadata block among every 64, then
 * every file removed in order, one metadata block rewritten (the new copy
 * allocated, then the old one freed) after every 64 removals, as a
 * directory's would be. The frees outrun the allocations, so the table is
 * free-mostly (AFM_ZT_WR_ON): freed slots go back to their pages, and the
 * new copies take the current page's slots, not those of the pages the
 * removals are emptying (with the magazine, last freed first reused, each
 * copy would keep one of them: every page the files filled). What is left
 * (the metadata) needs two table pages at most, magazine on or off; more
 * with the magazine and the phase rules off.
 */
static void afm_zs_test_table_remove(struct kunit *test)
{
	const struct afm_zs_mag_case *c = test->param_value;
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	const unsigned int nfiles = 7 * per_page, nmeta = nfiles / 64;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i, m = 0;

	ts = afm_zs_mag_set(test, c, nfiles + nmeta);
	afm_zs_files_write(test, ts, nfiles, buf);
	for (i = 0; i < nfiles; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
		if (i % 64 == 63)
			afm_zs_rewrite(test, ts, nfiles + m++, buf);
	}
	KUNIT_ASSERT_EQ(test, m, nmeta);
	afm_zs_files_left(test, ts, nfiles, buf, c->mag && !c->phases);
}

/*
 * Under churn the magazine serves: after a fill (write-mostly) of several
 * table pages, pairs of a free of an old object and an allocation bring
 * the table out of write-mostly within AFM_ZT_WR_MAX pairs, and from then
 * on each allocation takes the slot the free before it gave back (last
 * freed, first reused), touching no table page's free list.
 */
static void afm_zs_test_table_churn_mag(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	const unsigned int n = 4 * per_page, pairs = 3 * AFM_ZT_WR_MAX;
	unsigned int i, j, same = 0, late_same = 0;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long old;
	u32 rnd = 1;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, afm_zs_test_handle_mag(ts->pool, AFM_ZT_MAG), 0);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
	}
	for (j = 0; j < pairs; j++) {
		rnd = rnd * 1103515245 + 12345;
		i = (rnd >> 8) % (n - per_page);	/* full, older pages */
		old = ts->h[i];
		afm_free(ts->pool, old);
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
		if (ts->h[i] == old) {
			same++;
			late_same += j >= pairs - AFM_ZT_WR_MAX;
		}
	}
	/* The last pairs, well past the write-mostly fill, all reuse. */
	KUNIT_EXPECT_EQ_MSG(test, late_same, AFM_ZT_WR_MAX,
			    "%u of %u pairs reused the freed slot", same, pairs);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size100,
						0), 0);
	afm_zs_free_all_empty(test, ts);
}

static size_t afm_zs_size_dir(unsigned int i)
{
	return 100;
}

/*
 * Objects @from to the end of @ts: then 15 handle table pages and a
 * descriptor page, 16 directory blocks in two directory pages.
 */
static void afm_zs_dir_fill(struct kunit *test, struct afm_test_set *ts,
			    unsigned int from, void *buf)
{
	struct afm_zs_counters c;
	unsigned int i;

	for (i = from; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size_dir(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   afm_zs_size_dir(i), buf, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 15);
	KUNIT_EXPECT_EQ(test, c.desc_pages, 1);
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 2);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * The directories of a shard's three tables share its directory pages,
 * eight blocks a page (AFM_ZT_DIRS_PER_PAGE). With one table page per
 * directory (afm_zs_test_small_dirs(), shift 0) every table page takes a
 * block: 15 handle table pages and a descriptor page fill two directory
 * pages; when the last three handle table pages empty, their blocks (in
 * the second directory page) are freed, and the next objects, after a
 * grace period, take them back, not a new directory page (a page with a
 * block not in use comes before full ones); the last free gives every
 * directory page back.
 */
static void afm_zs_test_dir_pages(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i;

	ts = afm_zs_dir_set(test, 15 * per_page, true);
	afm_zs_dir_fill(test, ts, 0, buf);

	/*
	 * The newest objects go, newest first (each gives its extent back
	 * to its zspage's tail: no hole, no hole record); compaction drains
	 * the magazine, so their three table pages empty.
	 */
	for (i = ts->n; i-- > 12 * per_page; ) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_compact(ts->pool);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 12);
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 2);
	afm_zs_expect_consistent(test, ts->pool);

	/*
	 * Their blocks come back once they have cooled down (an RCU grace
	 * period, see afm_zs_test_dir_block_rcu): still two directory pages.
	 */
	KUNIT_ASSERT_TRUE(test, afm_zs_test_dir_cool(ts->pool));
	afm_zs_dir_fill(test, ts, 12 * per_page, buf);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_dir,
						0), 0);

	afm_zs_free_all_empty(test, ts);
}

/*
 * A directory page given back a block goes first on the shard's list only
 * if the first page has no more free blocks: a block given back cools down
 * (afm_zs_test_dir_block_rcu), and a page whose only block not in use is
 * cooling, put before one with a free block, would make the next
 * directory take a new page. Sixteen blocks, taken as a table's new
 * directories take them, fill two directory pages; the last one, given
 * back, is free after a grace period; then one of the first page is given
 * back: the next block comes from the second page, not a third one.
 */
static void afm_zs_test_dir_free_order(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_counters c;
	struct page *first, *second, *got;
	void *blk[16], *dir;
	unsigned int i, n;

	afm_zs_quiet(ts);
	for (n = 0; n < ARRAY_SIZE(blk); n++) {
		blk[n] = afm_zs_test_dir_take(ts->pool);
		if (!blk[n])
			break;
	}
	if (n < ARRAY_SIZE(blk)) {
		while (n)
			afm_zs_test_dir_give(ts->pool, blk[--n]);
		kunit_skip(test, "no memory for a directory page");
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 2);
	first = virt_to_page(blk[0]);
	second = virt_to_page(blk[15]);
	KUNIT_EXPECT_PTR_NE(test, first, second);

	afm_zs_test_dir_give(ts->pool, blk[15]);
	KUNIT_EXPECT_TRUE(test, afm_zs_test_dir_cool(ts->pool));
	afm_zs_test_dir_give(ts->pool, blk[3]);
	dir = afm_zs_test_dir_take(ts->pool);
	if (dir) {
		got = virt_to_page(dir);
		KUNIT_EXPECT_PTR_EQ(test, got, second);
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_EXPECT_EQ(test, c.dir_pages, 2);
	}
	blk[3] = NULL;
	blk[15] = dir;
	for (i = 0; i < ARRAY_SIZE(blk); i++)
		if (blk[i])
			afm_zs_test_dir_give(ts->pool, blk[i]);
	if (!dir)
		kunit_skip(test, "no memory for a directory page");
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 0);
	KUNIT_EXPECT_EQ(test, c.total_pages, 0);
}

/*
 * An allocation counts the pages it needs before it takes anything: here
 * a new handle table page and its directory block, which the first
 * directory page (one with a free block) was counted on to hold. The
 * object then fills the last indexed hole exactly, which frees the hole
 * table's last record, its page, its directory block and the directory
 * page that held only that block; the handle must still get its table
 * page and a directory block from what was counted. With one table page
 * per directory (afm_zs_test_small_dirs(), shift 0) and no handle slots
 * kept at hand: 15 handle table pages and a descriptor page fill two
 * directory pages; a freed object's hole, once on the index, takes a hole
 * table page and a block of a third directory page; the next object, of
 * the same size, goes into that hole with a handle from a 16th table page.
 */
static void afm_zs_test_dir_hole_alloc(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64);
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	ts = afm_zs_dir_set(test, 15 * per_page, false);
	afm_zs_dir_fill(test, ts, 0, buf);

	afm_free(ts->pool, ts->h[0]);
	ts->h[0] = 0;
	KUNIT_EXPECT_EQ(test, afm_zs_test_flush(ts->pool), 1);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.hole_pages, 1);
	KUNIT_ASSERT_EQ(test, c.dir_pages, 3);
	KUNIT_ASSERT_EQ(test, c.table_pages, 15);

	ts->h[0] = afm_test_malloc(test, ts->pool, afm_zs_size_dir(0));
	afm_zs_put_pattern(test, ts->pool, ts->h[0], 0, afm_zs_size_dir(0),
			   buf, 0);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	KUNIT_EXPECT_EQ(test, c.table_pages, 16);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 3);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size_dir,
						0), 0);

	afm_zs_free_all_empty(test, ts);
}

/*
 * A free takes a hole record without sleeping, so the hole table's top
 * level, when a record needs a directory beyond it, is grown by the next
 * malloc (or by the shard's worker, kept out of this test: it would race
 * with the frees). That malloc needs no record: if the growth fails, the
 * malloc still succeeds (a later one tries again). With one table page per
 * directory (afm_zs_test_small_dirs(), shift 0) the hole table's first
 * top level holds one page of records: every other object freed leaves
 * more holes than that, the last ones off the index.
 */
static void afm_zs_test_rtab_grow_fail(struct kunit *test)
{
	const unsigned int n = 2 * (PAGE_SIZE / 8) + 64;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long h;
	unsigned int i;

	ts = afm_zs_dir_set(test, n, true);
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
			  AFM_ZS_QUIET_MIGRATION | AFM_ZS_QUIET_RFREE |
			  AFM_ZS_QUIET_RTAB);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
	}
	for (i = 1; i < n - 1; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_test_flush(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.hole_pages, 1);
	KUNIT_ASSERT_LT(test, c.hole_recorded, c.hole_bytes);

	/*
	 * The growth fails (the first internal allocation from now on: the
	 * malloc needs no page, it fills an indexed hole with a handle slot
	 * freed above); the object is stored anyway.
	 */
	afm_set_fail_nth(ts->pool, 1);
	h = afm_malloc(ts->pool, 100, GFP_KERNEL);
	KUNIT_EXPECT_EQ(test, atomic_read(&ts->pool->fail_nth), 0);
	afm_set_fail_nth(ts->pool, 0);
	KUNIT_ASSERT_TRUE_MSG(test, afm_test_handle_ok(h), "afm_malloc(100) = %ld",
			      (long)h);
	ts->h[1] = h;
	afm_zs_put_pattern(test, ts->pool, h, 1, 100, buf, 0);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size100,
						0), 0);
	afm_zs_free_all_empty(test, ts);
}

/*
 * A shard that frees and does not allocate (zswap's writeback, frees from
 * other CPUs) gets its hole table's top level grown all the same: a free
 * that finds it too small for a record has the shard's worker grow it
 * (before, only the shard's next malloc did, and until one came every hole
 * stayed off the index, left to compaction). With one table page per
 * directory (afm_zs_test_small_dirs(), shift 0) the first top level holds
 * one page of records: the first frees below leave more holes than that.
 * No malloc follows them; once the worker has run, every hole of the next
 * frees is on the index (their records fit the grown top level, two pages
 * at least, whenever the worker ran during the first frees).
 */
static void afm_zs_test_rtab_grow_by_free(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / (2 * sizeof(u64));
	const unsigned int first = per_page + per_page / 4, n = 4 * per_page;
	struct afm_zs_counters c, c2;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long later;
	unsigned int i;

	ts = afm_zs_dir_set(test, n, true);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, 100);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 100, buf, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	later = c.tops_later;
	/* Every other object of the first 2 * first: first holes. */
	for (i = 1; i < 2 * first; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_test_flush(ts->pool);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_GT(test, c.tops_later, later);

	/* per_page / 4 more holes, apart from the first ones. */
	for (i = 2 * first + 9; i < 2 * first + 9 + per_page / 2; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_test_flush(ts->pool);
	afm_zs_get_counters(ts->pool, &c2);
	KUNIT_EXPECT_GT(test, c2.hole_bytes, c.hole_bytes);
	KUNIT_EXPECT_GE(test, c2.hole_pages, 2);
	KUNIT_EXPECT_EQ(test, c2.hole_recorded - c.hole_recorded,
			c2.hole_bytes - c.hole_bytes);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size100,
						0), 0);
	afm_zs_free_all_empty(test, ts);
}

/*
 * A malloc with @gfp whose first internal allocation, the growth of the
 * handle table's top level, fails: -ENOMEM; then the shard's worker is
 * flushed and the counters read into @c.
 */
static void afm_zs_grow_fails(struct kunit *test, struct afm_test_set *ts,
			      size_t size, gfp_t gfp,
			      struct afm_zs_counters *c)
{
	long h;

	afm_set_fail_nth(ts->pool, 1);
	h = afm_malloc(ts->pool, size, gfp);
	afm_set_fail_nth(ts->pool, 0);
	KUNIT_EXPECT_EQ(test, h, -ENOMEM);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, c);
}

/*
 * A caller that may not sleep (zswap's stores) gets a new top level only
 * from kmalloc, several pages at once for a large table: when that fails,
 * its allocation fails (-ENOMEM, nothing stored, nothing lost) and the
 * shard's worker grows the top level with GFP_KERNEL, so that the next
 * such allocation finds it grown. A caller that may sleep has had its
 * try: its failure leaves the worker nothing to do. With one table page
 * per directory (afm_zs_test_small_dirs(), shift 0) the first top level
 * is full after a few pages of handles.
 */
static void afm_zs_test_top_grow_later(struct kunit *test)
{
	const unsigned int per_page = PAGE_SIZE / sizeof(u64), size = 32;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i, n;
	unsigned long top;
	long h;

	ts = afm_zs_dir_set(test, 64 * per_page, true);
	afm_zs_get_counters(ts->pool, &c);
	top = c.top_dirs;
	n = top * per_page;
	KUNIT_ASSERT_LT(test, n, 64 * per_page);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.top_dirs, top);

	afm_zs_grow_fails(test, ts, size, GFP_KERNEL, &c);
	KUNIT_EXPECT_EQ(test, c.top_dirs, top);
	KUNIT_EXPECT_EQ(test, c.tops_later, 0);
	KUNIT_EXPECT_EQ(test, c.objects, n);

	afm_zs_grow_fails(test, ts, size, GFP_NOWAIT, &c);
	KUNIT_EXPECT_GT(test, c.top_dirs, top);
	KUNIT_EXPECT_EQ(test, c.tops_later, 1);
	KUNIT_EXPECT_EQ(test, c.objects, n);

	/* Grown: a caller that may not sleep needs no top level now. */
	top = c.top_dirs;
	h = afm_malloc(ts->pool, size, GFP_NOWAIT);
	if (!afm_test_handle_ok(h)) {
		/* Only the page allocator may refuse: not for a top level. */
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_EXPECT_EQ(test, c.top_dirs, top);
		KUNIT_ASSERT_EQ_MSG(test, (long)h, (long)-ENOMEM,
				    "GFP_NOWAIT allocation failed: %ld", h);
		kunit_skip(test, "no memory without sleeping: %ld", h);
	}
	ts->h[n] = h;
	afm_zs_put_pattern(test, ts->pool, h, n, size, buf, 0);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.top_dirs, top);
	for (i = 0; i <= n; i++)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, size, buf, i & 1));
	afm_zs_expect_consistent(test, ts->pool);
	afm_zs_free_all_empty(test, ts);
}

static struct kunit_case afm_zspage_table_test_cases[] = {
	KUNIT_CASE_SLOW(afm_zs_test_table_growth),
	KUNIT_CASE(afm_zs_test_table_magazine),
	KUNIT_CASE(afm_zs_test_table_page_rcu),
	KUNIT_CASE(afm_zs_test_dir_block_rcu),
	KUNIT_CASE_PARAM(afm_zs_test_table_locality, afm_zs_mag_gen_params),
	KUNIT_CASE_PARAM(afm_zs_test_table_remove, afm_zs_mag_gen_params),
	KUNIT_CASE(afm_zs_test_table_churn_mag),
	KUNIT_CASE(afm_zs_test_dir_pages),
	KUNIT_CASE(afm_zs_test_dir_free_order),
	KUNIT_CASE(afm_zs_test_dir_hole_alloc),
	KUNIT_CASE(afm_zs_test_rtab_grow_fail),
	KUNIT_CASE(afm_zs_test_rtab_grow_by_free),
	KUNIT_CASE(afm_zs_test_top_grow_later),
	{}
};

static struct kunit_suite afm_zspage_table_test_suite = {
	.name = "afmalloc_zspage_table",
	.test_cases = afm_zspage_table_test_cases,
};

kunit_test_suite(afm_zspage_table_test_suite);
