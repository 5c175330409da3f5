// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the afmalloc zspage store (mm/zspage_store.c): byte-exact
 * round trips of every size through map and the copy helpers, back-to-back
 * packing across page boundaries, exact page accounting, reuse of recorded
 * holes (fit, slack, split, records dropped with their zspage), compaction
 * of fragmented pools (manual, automatic, shrinker), pinned objects left in
 * place, page migration through the movable_operations callbacks and its
 * counters, allocation-failure injection and a multi-threaded stress run
 * with compaction and migration in parallel.
 *
 * Nothing asserted depends on the host's speed: what a test counts it
 * drives (a worker is queued by a free, then flushed), and pools whose
 * tests count compaction or migration exactly are kept away from the
 * kernel's shrinker and page migration (afm_zs_test_quiet(): the debug
 * guest runs drop_caches and compact_memory in loops meanwhile).
 */

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

/* A new zspage-store pool with @n handle slots, released with the test. */
static struct afm_test_set *afm_zs_set(struct kunit *test, unsigned int n)
{
	return afm_test_set_store(test, n, AFM_STORE_ZSPAGE);
}

static void afm_zs_restore_permille(void *data)
{
	afm_zs_set_auto_permille((unsigned long)data);
}

/* Set the automatic compaction trigger for the rest of the test. */
static void afm_zs_permille(struct kunit *test, unsigned int permille)
{
	unsigned long old = afm_zs_get_auto_permille();

	afm_zs_set_auto_permille(permille);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_permille,
						  (void *)old));
}

/* Keep the kernel's shrinker and page migration away from @ts's pool. */
static void afm_zs_quiet(struct afm_test_set *ts)
{
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
			  AFM_ZS_QUIET_MIGRATION);
}

static void *afm_zs_buf(struct kunit *test)
{
	void *buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);

	if (!buf)
		kunit_skip(test, "no memory for a buffer");
	return buf;
}

/* Sizes of a zram-like spread, deterministic. */
static size_t afm_zs_size(unsigned int i)
{
	return 1 + (i * 2654435761U >> 7) % PAGE_SIZE;
}

/* Objects whose extent (header and data) is exactly a page. */
static size_t afm_zs_size_page(unsigned int i)
{
	return PAGE_SIZE - afm_zs_header_bytes();
}

/* Write object @i's pattern into @h, by one of three routes. */
static void afm_zs_put_pattern(struct kunit *test, struct afm_pool *pool,
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

/* Check object @h holds @seed's pattern, through read or an RO mapping. */
static bool afm_zs_check(struct kunit *test, struct afm_pool *pool,
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
static unsigned int afm_zs_verify_all(struct kunit *test,
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
 * which also checks page chains and the hole cache), and the pool's
 * statistics show the same. Callers keep compaction from running
 * meanwhile (trigger off or flushed, pool quiet), so that the statistics
 * read after the audit still match it.
 */
static void afm_zs_expect_consistent(struct kunit *test, struct afm_pool *pool)
{
	struct afm_zs_counters c, rc;
	struct afm_pool_stats st;

	KUNIT_EXPECT_EQ(test, afm_zs_test_audit(pool, &c, &rc), 0);
	KUNIT_EXPECT_EQ(test, c.objects, rc.objects);
	KUNIT_EXPECT_EQ(test, c.live_bytes, rc.live_bytes);
	KUNIT_EXPECT_EQ(test, c.zspages, rc.zspages);
	KUNIT_EXPECT_EQ(test, c.dead_zspages, rc.dead_zspages);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, rc.hole_bytes);
	KUNIT_EXPECT_EQ(test, c.tail_bytes, rc.tail_bytes);
	KUNIT_EXPECT_EQ(test, c.data_pages, rc.data_pages);
	KUNIT_EXPECT_EQ(test, c.table_pages, rc.table_pages);
	KUNIT_EXPECT_EQ(test, c.desc_pages, rc.desc_pages);
	KUNIT_EXPECT_EQ(test, c.total_pages, rc.total_pages);
	afm_pool_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.objects, rc.objects);
	KUNIT_EXPECT_EQ(test, st.stored_bytes, rc.live_bytes);
	KUNIT_EXPECT_EQ(test, st.meta_bytes,
			(rc.table_pages + rc.desc_pages) << PAGE_SHIFT);
}

static size_t afm_zs_size_of_index(unsigned int i)
{
	return i + 1;
}

/*
 * Every size from 1 to PAGE_SIZE, all live at once (so objects start at
 * every kind of offset and many cross page boundaries), written through
 * afm_write(), WO and RW mappings, read back through afm_read() and RO
 * mappings, then rewritten through RW mappings: byte-exact throughout.
 */
static void afm_zs_test_roundtrip(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, PAGE_SIZE);
	void *buf = afm_zs_buf(test);
	struct afm_zs_obj_info info;
	unsigned int i, crossing = 0, errors;
	void *p;

	/* Pages are compared below: the kernel must not migrate them. */
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_MIGRATION);
	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, i + 1);
		KUNIT_ASSERT_EQ(test, afm_obj_size(ts->pool, ts->h[i]), i + 1);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, i + 1, buf, i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.size, i + 1);
		KUNIT_EXPECT_EQ(test, info.pins, 0);
		if (offset_in_page(info.offset) + info.size > PAGE_SIZE) {
			crossing++;
			continue;
		}
		/* In place: the mapping is in the object's page. */
		p = afm_map_object(ts->pool, ts->h[i], AFM_MM_RO);
		KUNIT_ASSERT_NOT_NULL(test, p);
		KUNIT_EXPECT_PTR_EQ(test, (void *)PAGE_ALIGN_DOWN((unsigned long)p),
				    page_address(info.page));
		afm_unmap_object(ts->pool, ts->h[i]);
	}
	/* Roughly size / PAGE_SIZE of the objects cross a boundary. */
	KUNIT_EXPECT_GT(test, crossing, PAGE_SIZE / 4);
	kunit_info(test, "%u of %lu objects cross a page boundary\n",
		   crossing, PAGE_SIZE);

	errors = afm_zs_verify_all(test, ts, buf, afm_zs_size_of_index, 0);
	KUNIT_EXPECT_EQ(test, errors, 0);

	for (i = 0; i < ts->n; i++)
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i + 7777, i + 1,
				   buf, 2);
	errors = afm_zs_verify_all(test, ts, buf, afm_zs_size_of_index, 7777);
	KUNIT_EXPECT_EQ(test, errors, 0);
	afm_zs_expect_consistent(test, ts->pool);

	/* A partial write leaves the rest of the object alone. */
	afm_test_fill(buf, 99, 10);
	KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[99], buf, 10), 0);
	KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[99], buf, 101), -EINVAL);
	KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[99], buf), 100);
	KUNIT_EXPECT_EQ(test, afm_test_check(buf, 99, 10), -1);
	for (i = 10; i < 100; i++) {
		if (((u8 *)buf)[i] != afm_test_byte(99 + 7777, i)) {
			KUNIT_FAIL(test, "byte %u changed by a partial write", i);
			break;
		}
	}
}

/*
 * Objects are packed back to back with byte alignment, each after its
 * header: in a fresh pool, a run of equal objects lies at consecutive
 * extents of one zspage, across page boundaries, until the zspage is full.
 */
static void afm_zs_test_packing(struct kunit *test)
{
	const unsigned int size = 100, hdr = afm_zs_header_bytes();
	const unsigned int ext = size + hdr, per_zspage = AFM_ZS_SIZE / ext;
	struct afm_test_set *ts = afm_zs_set(test, per_zspage + 1);
	struct afm_zs_obj_info info, first;
	struct afm_zs_counters c;
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		if (!i)
			first = info;
		if (i < per_zspage) {
			KUNIT_EXPECT_EQ(test, info.zspage_id, first.zspage_id);
			KUNIT_EXPECT_EQ(test, info.offset, i * ext + hdr);
		} else {
			/* The tail was too small: a new zspage. */
			KUNIT_EXPECT_NE(test, info.zspage_id, first.zspage_id);
			KUNIT_EXPECT_EQ(test, info.offset, hdr);
		}
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.zspages, 2);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, 0);
	KUNIT_EXPECT_EQ(test, c.live_bytes, ts->n * size);
	/* One table page and one descriptor page, with a directory each. */
	KUNIT_EXPECT_EQ(test, c.table_pages, 2);
	KUNIT_EXPECT_EQ(test, c.desc_pages, 2);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
			2 * AFM_ZS_PAGES + 4);

	/* The first zspage's tail (8 bytes) takes a small object. */
	KUNIT_ASSERT_GT(test, AFM_ZS_SIZE % ext, hdr);
	afm_free(ts->pool, ts->h[ts->n - 1]);
	ts->h[ts->n - 1] = afm_test_malloc(test, ts->pool,
					   AFM_ZS_SIZE % ext - hdr);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[ts->n - 1],
					      &info), 0);
	KUNIT_EXPECT_EQ(test, info.zspage_id, first.zspage_id);
	KUNIT_EXPECT_EQ(test, info.offset, per_zspage * ext + hdr);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.zspages, 1);
	KUNIT_EXPECT_EQ(test, c.tail_bytes, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), AFM_ZS_PAGES + 4);
}

/*
 * Density: many objects of mixed sizes cost their bytes plus the entry
 * plus little else; the exact page split adds up; freeing everything
 * gives every page back.
 */
static void afm_zs_test_density(struct kunit *test)
{
	const unsigned int n = 3000;
	struct afm_test_set *ts;
	struct afm_zs_counters c;
	unsigned long stored = 0, bytes, limit;
	unsigned int i;

	/* Nothing compacts while the frees below check the counters. */
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size(i));
		stored += afm_zs_size(i);
	}
	afm_zs_get_counters(ts->pool, &c);
	bytes = afm_get_total_pages(ts->pool) << PAGE_SHIFT;
	KUNIT_EXPECT_EQ(test, c.live_bytes, stored);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, 0);
	/*
	 * Headers and entries (13 bytes an object, 0.6% here), table,
	 * descriptor and directory pages (13 pages, 0.8%), the newest
	 * zspage's tail (up to 0.5%) and a few unfillable bytes per zspage:
	 * under 2.5%.
	 */
	limit = stored + stored / 1000 * 25;
	KUNIT_EXPECT_LE(test, bytes, limit);
	KUNIT_EXPECT_EQ(test, c.table_pages, DIV_ROUND_UP(n * 8, PAGE_SIZE) + 1);
	kunit_info(test, "%u objects, %lu bytes stored in %lu pages: overhead %lu.%02lu%%\n",
		   n, stored, bytes >> PAGE_SHIFT, (bytes - stored) * 100 / stored,
		   (bytes - stored) * 10000 / stored % 100);
	afm_zs_expect_consistent(test, ts->pool);

	for (i = 0; i < n; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
		if (i % 500 == 0)
			afm_zs_expect_consistent(test, ts->pool);
	}
	afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
}

/* Fill with AFM objects of afm_zs_size(i), free three of every four. */
static void afm_zs_fragment(struct kunit *test, struct afm_test_set *ts,
			    void *buf)
{
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, afm_zs_size(i));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, afm_zs_size(i),
				   buf, i);
	}
	for (i = 0; i < ts->n; i++) {
		if (i % 4) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
	}
}

static unsigned long afm_zs_overhead_pm(struct afm_pool *pool)
{
	struct afm_pool_stats st;
	unsigned long bytes = afm_get_total_pages(pool) << PAGE_SHIFT;

	afm_pool_stats(pool, &st);
	if (!st.stored_bytes)
		return ULONG_MAX;
	return (bytes - st.stored_bytes) * 1000 / st.stored_bytes;
}

/*
 * Handle bits in object headers: the default, and fewer, so that many
 * handles share the bits of each header, as handles above 2^27 do in a
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
	afm_zs_get_counters(ts->pool, &after);
	oh_after = afm_zs_overhead_pm(ts->pool);
	kunit_info(test, "pages %lu -> %lu, overhead %lu -> %lu per mille, holes %lu -> %lu\n",
		   pages, afm_get_total_pages(ts->pool), oh_before, oh_after,
		   before.hole_bytes, after.hole_bytes);
	KUNIT_EXPECT_GT(test, freed, 0);
	KUNIT_EXPECT_EQ(test, pages - freed, afm_get_total_pages(ts->pool));
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
 * afm_compact(). Sets the extents compaction walked, the objects it moved
 * and the pages it freed; checks the survivors' bytes.
 */
#define AFM_ZS_COST_SIZE	16
#define AFM_ZS_COST_ZSPAGES	16

static void afm_zs_cost_run(struct kunit *test, unsigned int filler,
			    unsigned long *walked, unsigned long *moved,
			    unsigned long *freed)
{
	const unsigned int ext = AFM_ZS_COST_SIZE + afm_zs_header_bytes();
	const unsigned int per = AFM_ZS_SIZE / ext;
	const unsigned int frag = AFM_ZS_COST_ZSPAGES * per;
	struct afm_zs_counters before, after;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
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
	*freed = afm_compact(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	*walked = after.walked - before.walked;
	*moved = after.moved - before.moved;
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
 * most those of the fragmented zspages) and move the same objects.
 */
static void afm_zs_test_compact_cost(struct kunit *test)
{
	const unsigned int per = AFM_ZS_SIZE /
				 (AFM_ZS_COST_SIZE + afm_zs_header_bytes());
	unsigned long walked[2], moved[2], freed[2];

	afm_zs_permille(test, 0);
	afm_zs_cost_run(test, per, &walked[0], &moved[0], &freed[0]);
	afm_zs_cost_run(test, 1024 * per, &walked[1], &moved[1], &freed[1]);
	kunit_info(test, "pool of %u objects: %lu extents walked, %lu moved, %lu pages freed; of %u: %lu, %lu, %lu\n",
		   (1 + AFM_ZS_COST_ZSPAGES) * per, walked[0], moved[0],
		   freed[0], (1024 + AFM_ZS_COST_ZSPAGES) * per, walked[1],
		   moved[1], freed[1]);
	KUNIT_EXPECT_GT(test, freed[0], 0);
	KUNIT_EXPECT_EQ(test, freed[1], freed[0]);
	KUNIT_EXPECT_GT(test, moved[0], 0);
	KUNIT_EXPECT_EQ(test, moved[1], moved[0]);
	KUNIT_EXPECT_EQ(test, walked[1], walked[0]);
	KUNIT_EXPECT_LE(test, walked[0], AFM_ZS_COST_ZSPAGES * per);
}

static size_t afm_zs_size16(unsigned int i)
{
	return 16;
}

/*
 * The handle table has no fixed capacity: with two table pages per
 * directory (afm_zs_test_small_dirs()), a pool takes more objects than 256
 * directories hold (the fixed top level the table used to have) while its
 * top level grows from one directory to hundreds; every object keeps its
 * bytes, compaction works across the directories, and freeing everything
 * gives every table, directory and zspage page back.
 */
static void afm_zs_test_table_growth(struct kunit *test)
{
	const unsigned long per_dir = 2 * (PAGE_SIZE / sizeof(u64));
	const unsigned int n = 256 * per_dir + per_dir / 2;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long maxh = 0;
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, afm_zs_test_small_dirs(ts->pool, 1), 0);
	/*
	 * About 12 MiB are needed: with far more available, a failed
	 * allocation is the table refusing, a failure, not a skip.
	 */
	if (si_mem_available() < (64UL << 20) >> PAGE_SHIFT)
		kunit_skip(test, "less than 64 MiB available");
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_malloc(ts->pool, afm_zs_size16(i), GFP_KERNEL);
		KUNIT_ASSERT_TRUE_MSG(test, afm_test_handle_ok(ts->h[i]),
				      "object %u: %ld", i, (long)ts->h[i]);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i,
				   afm_zs_size16(i), buf, 0);
		maxh = max(maxh, ts->h[i]);
	}
	/* Only a pool without directories changes their size. */
	KUNIT_EXPECT_EQ(test, afm_zs_test_small_dirs(ts->pool, 2), -EINVAL);
	KUNIT_EXPECT_GT(test, maxh, 256 * per_dir);
	afm_zs_get_counters(ts->pool, &c);
	/* Table pages, and a directory for every two of them. */
	KUNIT_EXPECT_EQ(test, c.table_pages,
			DIV_ROUND_UP(n, PAGE_SIZE / sizeof(u64)) +
			DIV_ROUND_UP(n, per_dir));
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

	for (i = 0; i < n; i++) {
		if (ts->h[i])
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.table_pages, 0);
	KUNIT_EXPECT_EQ(test, c.desc_pages, 0);
	KUNIT_EXPECT_EQ(test, c.total_pages, 0);
}

/*
 * A pinned object (as mapped) is never moved; once unpinned, it is. The
 * rest of its zspage is evacuated around it.
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
	afm_zs_fragment(test, ts, buf);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[p], &pinned), 0);
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
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[p]), afm_zs_size(p));
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
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Drive the automatic worker in @ts's pool, whatever it did before: fill
 * @ts with objects of afm_zs_size(i) and free three of four with the
 * trigger off (nothing compacts meanwhile: no worker, and the pool is kept
 * from the kernel's shrinker and migration), then set the trigger to
 * @permille and free one more survivor. Holes are then far above the
 * trigger and every zspage has about three quarters of its bytes in holes,
 * so that free queues exactly one run, at once, which afm_zs_flush_work()
 * waits for (it would run a rest run at once too). That run must give
 * pages back. Survivors are
 * left in @ts. Return: the pages the run freed.
 */
static unsigned long afm_zs_drive_auto(struct kunit *test,
				       struct afm_test_set *ts, void *buf,
				       unsigned int permille)
{
	struct afm_zs_counters frag, after;
	struct afm_zs_obj_info first, last;
	unsigned long pages, trigger, freed, compactions;
	struct afm_pool_stats st;

	afm_zs_quiet(ts);
	afm_zs_set_auto_permille(0);
	afm_zs_flush_work(ts->pool);
	afm_zs_fragment(test, ts, buf);
	/* Survivors 0 and 4 share a zspage: freeing 4 releases none. */
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &first), 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[4], &last), 0);
	KUNIT_ASSERT_EQ(test, first.zspage_id, last.zspage_id);
	afm_zs_get_counters(ts->pool, &frag);
	afm_pool_stats(ts->pool, &st);
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
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages - freed);
	/*
	 * A run started by a free aims below half the trigger without the
	 * holes recorded for reuse (allocations are about to fill them); a
	 * rest run counts those too. Either way, no more than the recorded
	 * holes, half the trigger and the object freed last are left.
	 */
	KUNIT_EXPECT_LE(test, after.hole_bytes,
			frag.hole_recorded + trigger / 2 + PAGE_SIZE);
	KUNIT_EXPECT_GT(test, after.passes, frag.passes);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
	/* Not afm_compact(): the pool's count of those did not move. */
	compactions = st.compactions;
	afm_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.compactions, compactions);
	return freed;
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

static size_t afm_zs_size1000(unsigned int i)
{
	return 1000;
}

/*
 * At rest, thin holes go too: objects of 1000 bytes (32 a zspage) of which
 * one in 16 is freed leave every zspage with about 6% of its bytes in
 * holes, too few for a run while writes go on (an eighth), so a free past
 * the trigger queues the rest run; once it has run (afm_zs_flush_work()
 * runs it as if the pool were at rest) the holes are below the trigger
 * and the pages are back.
 */
static void afm_zs_test_rest_compact(struct kunit *test)
{
	const unsigned int n = 32 * 256, permille = 10;
	struct afm_zs_counters frag, after;
	unsigned long pages, trigger;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
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
	for (i = 1; i < n; i += 16) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &frag);
	pages = afm_get_total_pages(ts->pool);
	trigger = max(frag.live_bytes / 1000 * permille, 4UL * AFM_ZS_SIZE);
	KUNIT_ASSERT_GT(test, frag.hole_bytes, 2 * trigger);
	/* No zspage has an eighth of its bytes in holes. */
	KUNIT_ASSERT_LT(test, frag.hole_bytes / frag.zspages, AFM_ZS_SIZE / 8);

	afm_zs_set_auto_permille(permille);
	afm_free(ts->pool, ts->h[n - 1]);
	ts->h[n - 1] = 0;
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	kunit_info(test, "rest run: %lu -> %lu pages, %lu -> %lu hole bytes (trigger %lu)\n",
		   pages, afm_get_total_pages(ts->pool), frag.hole_bytes,
		   after.hole_bytes, trigger);
	KUNIT_EXPECT_EQ(test, after.auto_runs, frag.auto_runs + 1);
	/* It aims at half the trigger; its last pass may stop short. */
	KUNIT_EXPECT_LE(test, after.hole_bytes, trigger);
	KUNIT_EXPECT_LT(test, afm_get_total_pages(ts->pool), pages);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size1000,
						0), 0);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * The shrinker counts reclaimable pages and frees them when asked. The
 * pool is quiet: the kernel's shrink_slab() (drop_caches loops in the debug
 * guest) does not get to its holes first; the stress and destroy cases
 * race with it.
 */
static void afm_zs_test_shrinker(struct kunit *test)
{
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long count, freed, pages, after;

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

	freed = afm_zs_shrinker_scan(ts->pool, count);
	KUNIT_EXPECT_NE(test, freed, SHRINK_STOP);
	KUNIT_EXPECT_GT(test, freed, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages - freed);
	/* What is left is under a zspage's worth: nothing to count. */
	after = afm_zs_shrinker_count(ts->pool);
	KUNIT_EXPECT_TRUE(test, after == SHRINK_EMPTY || after < count);
	KUNIT_EXPECT_EQ(test, afm_zs_verify_all(test, ts, buf, afm_zs_size, 0),
			0);
	afm_zs_expect_consistent(test, ts->pool);
}

#ifdef CONFIG_COMPACTION
/*
 * Migrate the page holding @h's first byte as the migration core would:
 * isolate under the page lock, then lock both and call migrate_page, and
 * put the page back if that fails. With @hold, @h's zspage is held (as by
 * a mapping) meanwhile. The pool must be quiet for migration. Returns the
 * migrate_page result; *@dstp is the new page on success.
 */
static int afm_zs_migrate(struct kunit *test, struct afm_pool *pool,
			  unsigned long h, enum migrate_mode mode, bool hold,
			  struct page **dstp)
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
	if (hold && !afm_zs_test_hold_zspage(pool, h)) {
		KUNIT_FAIL(test, "cannot enter the zspage");
		hold = false;
	}
	rc = mops->migrate_page(dst, src, mode);
	if (hold)
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
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[x], &info), 0);
	afm_zs_get_counters(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);
	a = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	memcpy_from_page(a, info.page, 0, PAGE_SIZE);

	rc = afm_zs_migrate(test, ts->pool, ts->h[x], MIGRATE_SYNC, false, &dst);
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
					     MIGRATE_ASYNC, false, NULL),
			MIGRATEPAGE_SUCCESS);
	afm_zs_put_pattern(test, ts->pool, ts->h[x], 5555, afm_zs_size(x), buf,
			   1);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[x], 5555,
					     afm_zs_size(x), buf, false));

	/* A zspage in use (an object mapped) refuses, then accepts. */
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[x],
					     MIGRATE_ASYNC, true, NULL),
			-EAGAIN);
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[x],
					     MIGRATE_SYNC, true, NULL),
			-EAGAIN);
	KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[x],
					     MIGRATE_SYNC, false, NULL),
			MIGRATEPAGE_SUCCESS);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[x], 5555,
					     afm_zs_size(x), buf, true));
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.migrated, before.migrated + 3);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);

	/*
	 * Every page of that zspage, so that the first, middle and last links
	 * of its page chain are all replaced; every object still reads back.
	 */
	for (i = 0; i < ts->n; i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &moved),
				0);
		if (moved.zspage_id != info.zspage_id ||
		    (seen & BIT(moved.offset >> PAGE_SHIFT)))
			continue;
		seen |= BIT(moved.offset >> PAGE_SHIFT);
		KUNIT_EXPECT_EQ(test, afm_zs_migrate(test, ts->pool, ts->h[i],
						     MIGRATE_SYNC, false, &dst),
				MIGRATEPAGE_SUCCESS);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &moved),
				0);
		KUNIT_EXPECT_PTR_EQ(test, moved.page, dst);
	}
	KUNIT_EXPECT_GE(test, hweight_long(seen), 3);
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
						     MIGRATE_ASYNC, false, NULL),
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
					     MIGRATE_ASYNC, true, NULL),
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
#else
static void afm_zs_test_migrate(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}

static void afm_zs_test_migrate_counters(struct kunit *test)
{
	kunit_skip(test, "CONFIG_COMPACTION is off: pages are not movable");
}
#endif

/*
 * Failing the k-th internal allocation returns -ENOMEM and leaves counts
 * and pages as they were, for every k until the allocation succeeds: 12
 * allocations (two directory pages, two table pages, eight data pages) for
 * the first object of a pool, eight for one that needs a new zspage.
 */
static void afm_zs_test_alloc_failure(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, AFM_ZS_PAGES + 1);
	struct afm_zs_counters base, c;
	unsigned int i, k, failures, round;
	unsigned long h = 0;

	for (round = 0; round < 2; round++) {
		afm_zs_get_counters(ts->pool, &base);
		failures = 0;
		for (k = 1; k < 32; k++) {
			afm_set_fail_nth(ts->pool, k);
			h = afm_malloc(ts->pool, afm_zs_size_page(0), GFP_KERNEL);
			afm_set_fail_nth(ts->pool, 0);
			if (!IS_ERR_VALUE(h))
				break;
			failures++;
			KUNIT_EXPECT_EQ(test, (long)h, -ENOMEM);
			afm_zs_get_counters(ts->pool, &c);
			KUNIT_EXPECT_EQ(test, c.objects, base.objects);
			KUNIT_EXPECT_EQ(test, c.live_bytes, base.live_bytes);
			KUNIT_EXPECT_EQ(test, c.total_pages, base.total_pages);
		}
		KUNIT_ASSERT_TRUE(test, afm_test_handle_ok(h));
		ts->h[round ? AFM_ZS_PAGES : 0] = h;
		KUNIT_EXPECT_EQ(test, failures, round ? AFM_ZS_PAGES
						      : 4 + AFM_ZS_PAGES);
		if (round)
			break;
		/* Fill the zspage, so the next object needs a new one. */
		for (i = 1; i < AFM_ZS_PAGES; i++)
			ts->h[i] = afm_test_malloc(test, ts->pool,
						   afm_zs_size_page(i));
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_ASSERT_EQ(test, c.zspages, 1);
		KUNIT_ASSERT_EQ(test, c.tail_bytes, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.zspages, 2);
	KUNIT_EXPECT_EQ(test, c.total_pages, 2 * AFM_ZS_PAGES + 4);
}

/*
 * Invalid handles: a double free, a foreign value and a mapping of a freed
 * handle are each detected (counted, warned about once), and change
 * nothing.
 */
static void afm_zs_test_bad_handles(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_counters before, after;
	unsigned long h, misuses;

	afm_test_expect_warnings(test);
	ts->h[0] = afm_test_malloc(test, ts->pool, 777);
	h = afm_test_malloc(test, ts->pool, 333);
	afm_free(ts->pool, h);
	afm_zs_get_counters(ts->pool, &before);
	kunit_info(test, "expect afmalloc invalid-handle warnings\n");
	misuses = afm_test_misuse_count();
	afm_free(ts->pool, h);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 1);
	afm_free(ts->pool, 1UL << 40);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 2);
	KUNIT_EXPECT_NULL(test, afm_map_object(ts->pool, h, AFM_MM_RO));
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 3);
	/* A size query is no misuse: 0 for what is not an object. */
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, h), 0);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, 1UL << 40), 0);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 3);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
	KUNIT_EXPECT_EQ(test, after.live_bytes, before.live_bytes);
	KUNIT_EXPECT_EQ(test, after.total_pages, before.total_pages);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[0]), 777);
}

/* zram's flags are honoured: data pages are movable zspage pages. */
static void afm_zs_test_gfp(struct kunit *test)
{
	static const gfp_t flags[] = {
		__GFP_KSWAPD_RECLAIM | __GFP_NOWARN | __GFP_HIGHMEM | __GFP_MOVABLE,
		GFP_NOIO | __GFP_HIGHMEM | __GFP_MOVABLE,
		GFP_NOWAIT,
	};
	struct afm_test_set *ts = afm_zs_set(test, ARRAY_SIZE(flags));
	void *buf = afm_zs_buf(test);
	struct page *page;
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_malloc(ts->pool, 3000, flags[i]);
		if (ts->h[i] == (unsigned long)ERR_PTR(-ENOMEM))
			kunit_skip(test, "no memory");
		KUNIT_ASSERT_TRUE(test, afm_test_handle_ok(ts->h[i]));
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, 3000, buf, i);
	}
	for (i = 0; i < ts->n; i++) {
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i], i,
						     3000, buf, true));
		page = afm_zs_test_get_page(ts->pool, ts->h[i]);
		KUNIT_ASSERT_NOT_NULL(test, page);
		if (IS_ENABLED(CONFIG_COMPACTION))
			KUNIT_EXPECT_TRUE(test, __PageMovable(page));
		put_page(page);
	}
}

/* Size queries: huge class and class index follow the footprint. */
static void afm_zs_test_classes(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 0);
	size_t huge = afm_huge_class_size(ts->pool);
	unsigned int size, prev = 0, idx;

	KUNIT_EXPECT_GT(test, huge, PAGE_SIZE - 64);
	KUNIT_EXPECT_LE(test, huge, PAGE_SIZE);
	for (size = 1; size <= PAGE_SIZE; size++) {
		idx = afm_lookup_class_index(ts->pool, size);
		KUNIT_EXPECT_GE(test, idx, prev);
		KUNIT_EXPECT_GE(test, idx, size + afm_zs_entry_bytes());
		if (size == huge - 1)
			KUNIT_EXPECT_LT(test, idx, PAGE_SIZE);
		if (size == huge)
			KUNIT_EXPECT_GE(test, idx, PAGE_SIZE);
		prev = idx;
	}
}

/*
 * Hole cache: an object freed between two others leaves a hole that the
 * next allocation of the same size fills exactly (same zspage, same
 * offset, no new page, holes back to where they were); one 10 bytes
 * smaller fills it too and the 10 bytes stay a hole; a larger one does not
 * fit it and goes to a tail; one half its size splits it (the rest gets a
 * header of its own) and the rest is reused in turn, but only by an object
 * that leaves it empty or leaves room for another header. Every object
 * keeps its bytes.
 */
static const unsigned int afm_zs_hole_sizes[] = { 20, 100, 700, 1300, 2500, 4000 };

static void afm_zs_hole_desc(const unsigned int *size, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%u bytes", *size);
}

KUNIT_ARRAY_PARAM(afm_zs_hole, afm_zs_hole_sizes, afm_zs_hole_desc);

struct afm_zs_hole_set {
	struct afm_test_set *ts;
	unsigned int size[8];
	void *buf;
};

/* Allocate slot @i with @size bytes of its pattern. */
static void afm_zs_hole_put(struct kunit *test, struct afm_zs_hole_set *hs,
			    unsigned int i, unsigned int size)
{
	hs->ts->h[i] = afm_test_malloc(test, hs->ts->pool, size);
	hs->size[i] = size;
	afm_zs_put_pattern(test, hs->ts->pool, hs->ts->h[i], i, size, hs->buf,
			   i);
}

static void afm_zs_hole_free(struct afm_zs_hole_set *hs, unsigned int i)
{
	afm_free(hs->ts->pool, hs->ts->h[i]);
	hs->ts->h[i] = 0;
}

/* Slot @i's object lies @delta bytes into the hole at @where. */
static void afm_zs_hole_expect_at(struct kunit *test,
				  struct afm_zs_hole_set *hs, unsigned int i,
				  const struct afm_zs_obj_info *where,
				  unsigned int delta)
{
	struct afm_zs_obj_info info;

	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(hs->ts->pool, hs->ts->h[i],
					      &info), 0);
	KUNIT_EXPECT_EQ(test, info.zspage_id, where->zspage_id);
	KUNIT_EXPECT_EQ(test, info.offset, where->offset + delta);
}

static void afm_zs_test_hole_reuse(struct kunit *test)
{
	const unsigned int *param = test->param_value, size = *param;
	const unsigned int hdr = afm_zs_header_bytes();
	struct afm_zs_hole_set hs = { .buf = afm_zs_buf(test) };
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info hole, info;
	struct afm_pool *pool;
	unsigned int i;

	afm_zs_permille(test, 0);
	hs.ts = afm_zs_set(test, ARRAY_SIZE(hs.size));
	pool = hs.ts->pool;
	/* 0..3 back to back in one zspage; 3 keeps 1 and 2 off the tail. */
	for (i = 0; i < 4; i++)
		afm_zs_hole_put(test, &hs, i, size);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[1], &hole), 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[3], &info), 0);
	KUNIT_ASSERT_EQ(test, info.zspage_id, hole.zspage_id);

	/* Same size: exactly into the hole, no new page, holes as before. */
	afm_zs_get_counters(pool, &before);
	afm_zs_hole_free(&hs, 1);
	afm_zs_hole_put(test, &hs, 1, size);
	afm_zs_get_counters(pool, &after);
	afm_zs_hole_expect_at(test, &hs, 1, &hole, 0);
	KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 1);
	KUNIT_EXPECT_EQ(test, after.hole_bytes, before.hole_bytes);
	KUNIT_EXPECT_EQ(test, after.total_pages, before.total_pages);

	if (size >= 32) {
		/* 10 bytes smaller: into the hole, the 10 bytes stay a hole. */
		afm_zs_hole_free(&hs, 1);
		afm_zs_hole_put(test, &hs, 1, size - 10);
		afm_zs_get_counters(pool, &after);
		afm_zs_hole_expect_at(test, &hs, 1, &hole, 0);
		KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 2);
		KUNIT_EXPECT_EQ(test, after.hole_bytes, before.hole_bytes + 10);
		/* That smaller hole cannot take the full size: a tail does. */
		afm_zs_hole_free(&hs, 1);
		afm_zs_hole_put(test, &hs, 4, size);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[4], &info),
				0);
		KUNIT_EXPECT_NE(test, info.offset, hole.offset);
		afm_zs_hole_put(test, &hs, 1, size - 10);
		afm_zs_hole_expect_at(test, &hs, 1, &hole, 0);
	}
	if (size >= 64) {
		/*
		 * Half of it: a split. The rest (size - size / 2 bytes with
		 * its header) is not taken by an object 3 bytes short of
		 * filling it (no room for the header of what would be left):
		 * that one goes to a tail. One 8 bytes short fills it.
		 */
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[2], &hole),
				0);
		afm_zs_hole_free(&hs, 2);
		afm_zs_get_counters(pool, &before);
		afm_zs_hole_put(test, &hs, 5, size / 2);
		afm_zs_hole_expect_at(test, &hs, 5, &hole, 0);
		afm_zs_hole_put(test, &hs, 7, size - size / 2 - hdr - 3);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[7], &info),
				0);
		KUNIT_EXPECT_NE(test, info.offset, hole.offset + size / 2 + hdr);
		afm_zs_hole_put(test, &hs, 6, size - size / 2 - hdr - 8);
		afm_zs_hole_expect_at(test, &hs, 6, &hole, size / 2 + hdr);
		afm_zs_get_counters(pool, &after);
		KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 2);
		KUNIT_EXPECT_EQ(test, after.hole_bytes,
				before.hole_bytes - size - hdr + 8);
		KUNIT_EXPECT_EQ(test, after.total_pages, before.total_pages);
	}
	for (i = 0; i < ARRAY_SIZE(hs.size); i++) {
		if (hs.ts->h[i])
			afm_zs_check(test, pool, hs.ts->h[i], i, hs.size[i],
				     hs.buf, i & 1);
	}
	afm_zs_expect_consistent(test, pool);
}

/*
 * Recorded holes die with their zspage: when it is released (its id is
 * then reused for another zspage) no record of it is left and the next
 * allocation is not put into it; after compaction every record still
 * describes free bytes of a live zspage, and allocations into them keep
 * every other object intact.
 */
static void afm_zs_test_hole_forget(struct kunit *test)
{
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info first, info;
	unsigned int i, nr, n = 3 * AFM_ZS_SIZE / 1000 + 3;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long *h;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n + 8);
	afm_zs_quiet(ts);
	h = ts->h;
	for (i = 0; i < n; i++) {
		h[i] = afm_test_malloc(test, ts->pool, 1000);
		afm_zs_put_pattern(test, ts->pool, h[i], i, 1000, buf, i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, h[0], &first), 0);

	/* Holes in the first zspage, then all of it freed: released. */
	for (i = 1; i < 4; i++) {
		afm_free(ts->pool, h[i]);
		h[i] = 0;
	}
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(ts->pool, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 3);
	for (i = 0; i < n; i++) {
		if (!h[i] || afm_zs_obj_info(ts->pool, h[i], &info) ||
		    info.zspage_id != first.zspage_id)
			continue;
		afm_free(ts->pool, h[i]);
		h[i] = 0;
	}
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(ts->pool, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 0);
	afm_zs_get_counters(ts->pool, &before);
	h[n] = afm_test_malloc(test, ts->pool, 1000);
	afm_zs_put_pattern(test, ts->pool, h[n], n, 1000, buf, n);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused);

	/* Holes everywhere, compaction, then allocations into what is left. */
	for (i = 0; i < n; i++) {
		if (h[i] && i % 3) {
			afm_free(ts->pool, h[i]);
			h[i] = 0;
		}
	}
	KUNIT_EXPECT_GT(test, afm_compact(ts->pool), 0);
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(ts->pool, &nr), 0);
	for (i = n + 1; i < n + 8; i++) {
		h[i] = afm_test_malloc(test, ts->pool, 1000);
		afm_zs_put_pattern(test, ts->pool, h[i], i, 1000, buf, i);
	}
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(ts->pool, &nr), 0);
	for (i = 0; i < n + 8; i++) {
		if (h[i])
			afm_zs_check(test, ts->pool, h[i], i, 1000, buf, i & 1);
	}
	afm_zs_expect_consistent(test, ts->pool);
}

/* Stress: workers, a compactor, a migrator and a shrinker share one pool. */
#define AFM_ZS_STRESS_WORKERS	3
#define AFM_ZS_STRESS_SLOTS	256
#define AFM_ZS_STRESS_SECONDS	10
/* Objects of the automatic-compaction drive that follows the churn. */
#define AFM_ZS_STRESS_DRIVE	2000
/*
 * Attempts the migrator may still make after the deadline until its first
 * successful migration (its own object's page, in a pool the workers have
 * left and the kernel's migration is kept from): only a broken migration
 * needs more than one.
 */
#define AFM_ZS_STRESS_MIGRATE_TRIES	1000
#define AFM_ZS_STRESS_OWN_SIZE	3000
#define AFM_ZS_STRESS_OWN_SEED	0xfffffffU

struct afm_zs_slot {
	unsigned long h;
	unsigned int size;
	unsigned int seed;
};

/**
 * struct afm_zs_stress - state shared by the zspage stress threads
 * @pool: the pool under test.
 * @deadline: jiffies after which the threads stop, each having done at
 *	least one round of its work whatever the host's speed.
 * @running: threads still running, plus one for the starter.
 * @errors: failed operations and data mismatches.
 * @ops: allocations and frees of the workers.
 * @compactions: afm_compact() calls of the compactor.
 * @migrations: pages the migrator migrated (migrate_page succeeded).
 * @refused: migrations refused (zspage busy), the page put back.
 * @freed_isolated: pages the migrator had isolated when their zspage was
 *	freed (the core frees those; no migration).
 * @shrinks: shrinker scans of the shrinker thread.
 * @shrunk: pages they freed.
 * @stored: objects allocated and written.
 * @verified: objects checked byte for byte before their free.
 * @lost: objects that did not read back intact.
 * @verified_bytes: bytes of the verified objects.
 * @done: completed by the last thread to stop.
 * @own: the migrator's own object, which keeps a page to migrate.
 * @lock: protects @shared.
 * @shared: handles the migrator may look at, one per worker.
 */
struct afm_zs_stress {
	struct afm_pool *pool;
	unsigned long deadline;
	atomic_t running;
	atomic_t errors;
	atomic_t ops;
	atomic_t compactions;
	atomic_t migrations;
	atomic_t refused;
	atomic_t freed_isolated;
	atomic_t shrinks;
	atomic_t shrunk;
	atomic_t stored;
	atomic_t verified;
	atomic_t lost;
	atomic64_t verified_bytes;
	struct completion done;
	unsigned long own;
	spinlock_t lock;	/* protects @shared */
	unsigned long shared[AFM_ZS_STRESS_WORKERS];
};

static void afm_zs_stress_error(struct afm_zs_stress *st, const char *what,
				unsigned int seed)
{
	if (atomic_inc_return(&st->errors) <= 5)
		pr_err("afmalloc zspage stress: %s (object %#x)\n", what, seed);
}

static bool afm_zs_stress_ok(struct afm_zs_stress *st, struct afm_zs_slot *s,
			     void *buf, bool map)
{
	const void *p;
	bool ok;

	if (!map)
		return afm_read(st->pool, s->h, buf) == s->size &&
		       afm_test_check(buf, s->seed, s->size) < 0;
	p = afm_map_object(st->pool, s->h, AFM_MM_RO);
	if (!p)
		return false;
	ok = afm_test_check(p, s->seed, s->size) < 0;
	afm_unmap_object(st->pool, s->h);
	return ok;
}

/* Check every byte of @s before its free, and count the outcome. */
static void afm_zs_stress_verify(struct afm_zs_stress *st,
				 struct afm_zs_slot *s, void *buf, bool map,
				 const char *what)
{
	if (!afm_zs_stress_ok(st, s, buf, map)) {
		afm_zs_stress_error(st, what, s->seed);
		atomic_inc(&st->lost);
		return;
	}
	atomic_inc(&st->verified);
	atomic64_add(s->size, &st->verified_bytes);
}

static void afm_zs_stress_exit(struct afm_zs_stress *st)
{
	if (atomic_dec_and_test(&st->running))
		complete(&st->done);
}

struct afm_zs_worker {
	struct afm_zs_stress *st;
	unsigned int id;
};

static int afm_zs_stress_worker(void *data)
{
	struct afm_zs_worker *w = data;
	struct afm_zs_stress *st = w->st;
	struct afm_zs_slot *slot;
	unsigned int i, seq = 0;
	void *buf, *p;

	slot = kcalloc(AFM_ZS_STRESS_SLOTS, sizeof(*slot), GFP_KERNEL);
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!slot || !buf) {
		afm_zs_stress_error(st, "no memory for the worker", 0);
		goto out;
	}
	/* At least one operation, however late the thread starts. */
	do {
		u32 r = get_random_u32();
		struct afm_zs_slot *s = &slot[r % AFM_ZS_STRESS_SLOTS];

		r /= AFM_ZS_STRESS_SLOTS;
		if (s->h) {
			afm_zs_stress_verify(st, s, buf, r & 1, "data mismatch");
			spin_lock(&st->lock);
			if (st->shared[w->id] == s->h)
				st->shared[w->id] = 0;
			spin_unlock(&st->lock);
			afm_free(st->pool, s->h);
			s->h = 0;
		} else {
			s->size = 1 + get_random_u32_below(PAGE_SIZE);
			s->seed = w->id << 24 | (seq++ & 0xffffff);
			s->h = afm_malloc(st->pool, s->size, GFP_KERNEL |
					  __GFP_HIGHMEM | __GFP_MOVABLE);
			if (IS_ERR_VALUE(s->h)) {
				if (s->h != (unsigned long)ERR_PTR(-ENOMEM))
					afm_zs_stress_error(st, "malloc", s->seed);
				s->h = 0;
				continue;
			}
			atomic_inc(&st->stored);
			if (r & 1) {
				afm_test_fill(buf, s->seed, s->size);
				if (afm_write(st->pool, s->h, buf, s->size))
					afm_zs_stress_error(st, "write", s->seed);
			} else {
				p = afm_map_object(st->pool, s->h, AFM_MM_WO);
				if (!p) {
					afm_zs_stress_error(st, "map", s->seed);
				} else {
					afm_test_fill(p, s->seed, s->size);
					afm_unmap_object(st->pool, s->h);
				}
			}
			if (!(r & 6)) {
				spin_lock(&st->lock);
				st->shared[w->id] = s->h;
				spin_unlock(&st->lock);
			}
		}
		atomic_inc(&st->ops);
		cond_resched();
	} while (time_before(jiffies, st->deadline));
	spin_lock(&st->lock);
	st->shared[w->id] = 0;
	spin_unlock(&st->lock);
	for (i = 0; i < AFM_ZS_STRESS_SLOTS; i++) {
		if (!slot[i].h)
			continue;
		afm_zs_stress_verify(st, &slot[i], buf, i & 1,
				     "final mismatch");
		afm_free(st->pool, slot[i].h);
	}
out:
	kfree(buf);
	kfree(slot);
	afm_zs_stress_exit(st);
	return 0;
}

static int afm_zs_stress_compactor(void *data)
{
	struct afm_zs_stress *st = data;

	/* At least one afm_compact() call, however late the thread starts. */
	do {
		afm_compact(st->pool);
		atomic_inc(&st->compactions);
		msleep(20);
	} while (time_before(jiffies, st->deadline));
	afm_zs_stress_exit(st);
	return 0;
}

#ifdef CONFIG_COMPACTION
/*
 * Migrate the page of a live object as the migration core does: a
 * worker's object, or the migrator's own (always, until one migration
 * succeeded). Return: whether a page was isolated.
 */
static bool afm_zs_stress_migrate_one(struct afm_zs_stress *st)
{
	const struct movable_operations *mops;
	struct page *src = NULL, *dst;
	unsigned long h;
	unsigned int i;
	int rc;

	if (!atomic_read(&st->migrations) || get_random_u32_below(4) == 0) {
		src = afm_zs_test_get_page(st->pool, st->own);
	} else {
		spin_lock(&st->lock);
		for (i = 0; i < AFM_ZS_STRESS_WORKERS && !src; i++) {
			h = st->shared[get_random_u32_below(AFM_ZS_STRESS_WORKERS)];
			if (h)
				src = afm_zs_test_get_page(st->pool, h);
		}
		spin_unlock(&st->lock);
	}
	if (!src)
		return false;
	dst = alloc_page(GFP_KERNEL | __GFP_HIGHMEM | __GFP_MOVABLE);
	if (!dst)
		goto put;
	lock_page(src);
	/*
	 * Its zspage may have been freed since: then it is not movable. The
	 * kernel's compaction (the guest's compact_memory loop) may have it.
	 */
	if (!__PageMovable(src) || !page_movable_ops(src) ||
	    PageIsolated(src)) {
		unlock_page(src);
		__free_page(dst);
		goto put;
	}
	mops = page_movable_ops(src);
	if (!mops->isolate_page(src, 0)) {
		unlock_page(src);
		__free_page(dst);
		goto put;
	}
	SetPageIsolated(src);
	unlock_page(src);
	cond_resched();

	lock_page(src);
	lock_page(dst);
	if (!__PageMovable(src) || !page_movable_ops(src)) {
		/* Freed while isolated: the core drops it, nothing moves. */
		atomic_inc(&st->freed_isolated);
	} else {
		rc = mops->migrate_page(dst, src, MIGRATE_SYNC);
		if (rc == MIGRATEPAGE_SUCCESS) {
			atomic_inc(&st->migrations);
		} else {
			if (rc != -EAGAIN)
				afm_zs_stress_error(st, "migrate_page error",
						    -rc);
			atomic_inc(&st->refused);
			mops->putback_page(src);
		}
	}
	ClearPageIsolated(src);
	unlock_page(dst);
	unlock_page(src);
	put_page(dst);
put:
	put_page(src);
	return true;
}
#else
static bool afm_zs_stress_migrate_one(struct afm_zs_stress *st)
{
	return false;
}
#endif

/*
 * Migrates pages until the deadline, and past it until one migration
 * succeeded (bounded): "at least one migration" then holds on any host.
 * Past the deadline the workers have freed their objects, and the pool is
 * kept from the kernel's migration, which could hold the migrator's own
 * page isolated; a page isolated before is given a moment to come back.
 */
static int afm_zs_stress_migrator(void *data)
{
	struct afm_zs_stress *st = data;
	unsigned int late = 0;

	do {
		afm_zs_stress_migrate_one(st);
		cond_resched();
	} while (time_before(jiffies, st->deadline));
	if (IS_ENABLED(CONFIG_COMPACTION) && !atomic_read(&st->migrations)) {
		afm_zs_test_quiet(st->pool, AFM_ZS_QUIET_MIGRATION);
		while (!atomic_read(&st->migrations) &&
		       late++ < AFM_ZS_STRESS_MIGRATE_TRIES) {
			afm_zs_stress_migrate_one(st);
			usleep_range(1000, 2000);
		}
		afm_zs_test_quiet(st->pool, 0);
	}
	afm_zs_stress_exit(st);
	return 0;
}

/*
 * The pool's shrinker callbacks, as shrink_slab() calls them under memory
 * pressure (in the debug guest, drop_caches also calls the registered
 * shrinker itself while this runs).
 */
static int afm_zs_stress_shrinker(void *data)
{
	struct afm_zs_stress *st = data;
	unsigned long n;

	do {
		n = afm_zs_shrinker_count(st->pool);
		if (n && n != SHRINK_EMPTY) {
			n = afm_zs_shrinker_scan(st->pool, n);
			atomic_inc(&st->shrinks);
			if (n != SHRINK_STOP)
				atomic_add(n, &st->shrunk);
		}
		msleep(20);
	} while (time_before(jiffies, st->deadline));
	afm_zs_stress_exit(st);
	return 0;
}

/*
 * Workers allocate, write, map, verify and free random objects while one
 * thread compacts the pool in a loop (afm_compact()), another migrates
 * pages of live objects and a third calls the shrinker's count and scan;
 * automatic compaction is on with a low trigger. Every object is checked
 * byte for byte before its free. Runs for the stress_seconds module
 * parameter, default AFM_ZS_STRESS_SECONDS.
 *
 * What the threads achieve in that time depends on the host; only what
 * each is built to do at least once is asserted (an operation, a
 * compaction, a migration). Whether the automatic worker ran during the
 * churn depends on the host too (its heuristics wait for frees to outrun
 * the compactor): afterwards, in the same pool, it is driven
 * (afm_zs_drive_auto()) and must run and give pages back.
 */
static void afm_zs_test_stress(struct kunit *test)
{
	unsigned int secs = afm_test_stress_secs(AFM_ZS_STRESS_SECONDS);
	struct afm_zs_worker *w;
	struct afm_zs_stress *st;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	struct task_struct *t;
	unsigned int i, started = 0, want = AFM_ZS_STRESS_WORKERS + 3;
	unsigned long misuses = afm_test_misuse_count(), driven;
	long kernel_migrations;
	void *buf = afm_zs_buf(test);

	afm_zs_permille(test, 5);
	ts = afm_zs_set(test, AFM_ZS_STRESS_DRIVE);
	st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);
	w = kunit_kcalloc(test, AFM_ZS_STRESS_WORKERS, sizeof(*w), GFP_KERNEL);
	if (!st || !w)
		kunit_skip(test, "no memory for the stress state");
	st->pool = ts->pool;
	spin_lock_init(&st->lock);
	init_completion(&st->done);
	atomic_set(&st->running, want + 1);
	st->own = afm_test_malloc(test, ts->pool, AFM_ZS_STRESS_OWN_SIZE);
	afm_zs_put_pattern(test, ts->pool, st->own, AFM_ZS_STRESS_OWN_SEED,
			   AFM_ZS_STRESS_OWN_SIZE, buf, 0);
	st->deadline = jiffies + secs * HZ;

	for (i = 0; i < want; i++) {
		if (i < AFM_ZS_STRESS_WORKERS) {
			w[i].st = st;
			w[i].id = i;
			t = kthread_run(afm_zs_stress_worker, &w[i],
					"afm-zs-stress/%u", i);
		} else if (i == AFM_ZS_STRESS_WORKERS) {
			t = kthread_run(afm_zs_stress_compactor, st,
					"afm-zs-compact");
		} else if (i == AFM_ZS_STRESS_WORKERS + 1) {
			t = kthread_run(afm_zs_stress_migrator, st,
					"afm-zs-migrate");
		} else {
			t = kthread_run(afm_zs_stress_shrinker, st,
					"afm-zs-shrink");
		}
		if (IS_ERR(t))
			break;
		started++;
	}
	if (atomic_sub_and_test(want + 1 - started, &st->running))
		complete(&st->done);
	wait_for_completion(&st->done);
	/* The migrator's object, migrated and moved about, is intact. */
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, st->own,
					     AFM_ZS_STRESS_OWN_SEED,
					     AFM_ZS_STRESS_OWN_SIZE, buf, true));
	afm_free(ts->pool, st->own);
	if (started < want)
		kunit_skip(test, "could only start %u threads", started);

	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	/* Migrations not done by the migrator: the kernel's (compact_memory). */
	kernel_migrations = (long)c.migrated - atomic_read(&st->migrations);
	kunit_info(test, "%d operations, %d compactions, %d migrations (%d refused, %d freed while isolated), %lu automatic runs, %d shrinker scans (%d pages), %lu passes\n",
		   atomic_read(&st->ops), atomic_read(&st->compactions),
		   atomic_read(&st->migrations), atomic_read(&st->refused),
		   atomic_read(&st->freed_isolated), c.auto_runs,
		   atomic_read(&st->shrinks), atomic_read(&st->shrunk),
		   c.passes);
	/* One line for tests/vm/kunit-guest.sh: key=value, parsed. */
	kunit_info(test, "afmalloc-stress: case=%s store=zspage threads=%u seconds=%u ops=%d stored=%d verified=%d bytes_verified=%lld errors=%d lost=%d compactions=%d auto_runs=%lu shrinker_scans=%d migrations=%d kernel_migrations=%ld migrations_refused=%d freed_isolated=%d\n",
		   test->name, started, secs, atomic_read(&st->ops),
		   atomic_read(&st->stored), atomic_read(&st->verified),
		   (long long)atomic64_read(&st->verified_bytes),
		   atomic_read(&st->errors), atomic_read(&st->lost),
		   atomic_read(&st->compactions), c.auto_runs,
		   atomic_read(&st->shrinks), atomic_read(&st->migrations),
		   kernel_migrations, atomic_read(&st->refused),
		   atomic_read(&st->freed_isolated));
	KUNIT_EXPECT_EQ(test, atomic_read(&st->errors), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&st->lost), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&st->verified),
			atomic_read(&st->stored));
	KUNIT_EXPECT_GT(test, atomic_read(&st->ops), 0);
	KUNIT_EXPECT_GT(test, atomic_read(&st->compactions), 0);
	if (IS_ENABLED(CONFIG_COMPACTION))
		KUNIT_EXPECT_GT(test, atomic_read(&st->migrations), 0);
	/* The pool counts every migration, the migrator's among them. */
	KUNIT_EXPECT_GE(test, kernel_migrations, 0);
	KUNIT_EXPECT_GE(test, c.putback, atomic_read(&st->refused));
	KUNIT_EXPECT_GE(test, c.isolated_freed,
			atomic_read(&st->freed_isolated));
	KUNIT_EXPECT_EQ(test, c.objects, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
	/* No API misuse went unnoticed: the stress makes none. */
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses);

	/* The automatic worker, driven in the churned pool. */
	driven = afm_zs_drive_auto(test, ts, buf, 5);
	kunit_info(test, "driven automatic run after the churn: %lu pages freed\n",
		   driven);
}

/* Destroy vs shrinker: pools of both stores created and destroyed in a loop. */
#define AFM_DVS_OBJS	512

/**
 * struct afm_dvs - what the destroy-vs-shrinker rounds did
 * @rounds: pools created and destroyed, per store (slab, zspage).
 * @reported: zspage pools whose shrinker count showed pages to free.
 * @stored: objects allocated and written.
 * @verified: objects checked byte for byte before their free.
 * @verified_bytes: their bytes.
 * @lost: objects that did not read back intact.
 * @nomem: allocations that failed for lack of memory.
 * @left: objects left live in the pool destroyed with live objects.
 * @h: handles of the current round.
 * @buf: a page-sized buffer.
 */
struct afm_dvs {
	unsigned int rounds[2];
	unsigned int reported;
	unsigned int stored, verified, lost, nomem, left;
	u64 verified_bytes;
	unsigned long *h;
	void *buf;
};

/* Check object @i of the round and count the outcome. */
static void afm_dvs_verify(struct kunit *test, struct afm_dvs *d,
			   struct afm_pool *pool, unsigned int i)
{
	size_t size = afm_zs_size(i);

	if (afm_read(pool, d->h[i], d->buf) != size ||
	    afm_test_check(d->buf, i, size) >= 0) {
		if (d->lost++ < 5)
			KUNIT_FAIL(test, "%s: object %u (%zu bytes) differs",
				   pool->name, i, size);
		return;
	}
	d->verified++;
	d->verified_bytes += size;
}

/*
 * One round: a pool of store @type, AFM_DVS_OBJS objects, three of four
 * freed (holes for the zspage store's shrinker to report), sometimes a
 * manual compaction, the rest verified, freed unless @leave_live, and the
 * pool destroyed.
 */
static void afm_dvs_round(struct kunit *test, struct afm_dvs *d,
			  enum afm_store_type type, bool leave_live)
{
	static atomic_t seq = ATOMIC_INIT(0);
	unsigned int i, n = atomic_inc_return(&seq);
	bool first = type == AFM_STORE_ZSPAGE && !d->rounds[1];
	struct afm_pool *pool;
	unsigned long cnt;
	char name[48];
	size_t size;

	snprintf(name, sizeof(name), "kunit-dvs-%s-%u",
		 type == AFM_STORE_ZSPAGE ? "zs" : "slab", n);
	pool = afm_create_pool(name, type);
	if (PTR_ERR_OR_ZERO(pool) == -ENOMEM) {
		d->nomem++;
		return;
	}
	if (IS_ERR(pool)) {
		KUNIT_FAIL(test, "create %s: %ld", name, PTR_ERR(pool));
		return;
	}
	/* The first zspage pool's holes are counted before shrink_slab()'s. */
	if (first)
		afm_zs_test_quiet(pool, AFM_ZS_QUIET_SHRINKER);
	for (i = 0; i < AFM_DVS_OBJS; i++) {
		size = afm_zs_size(i);
		d->h[i] = afm_malloc(pool, size, GFP_KERNEL | __GFP_HIGHMEM |
				     __GFP_MOVABLE | __GFP_NOWARN);
		if (d->h[i] == (unsigned long)ERR_PTR(-ENOMEM)) {
			d->h[i] = 0;
			d->nomem++;
			continue;
		}
		if (!afm_test_handle_ok(d->h[i])) {
			KUNIT_FAIL(test, "%s: afm_malloc(%zu) = %ld", name,
				   size, (long)d->h[i]);
			d->h[i] = 0;
			continue;
		}
		afm_test_fill(d->buf, i, size);
		if (afm_write(pool, d->h[i], d->buf, size)) {
			KUNIT_FAIL(test, "%s: afm_write of object %u", name, i);
			afm_free(pool, d->h[i]);
			d->h[i] = 0;
			continue;
		}
		d->stored++;
	}
	for (i = 0; i < AFM_DVS_OBJS; i++) {
		if (d->h[i] && i % 4) {
			afm_dvs_verify(test, d, pool, i);
			afm_free(pool, d->h[i]);
			d->h[i] = 0;
		}
	}
	if (type == AFM_STORE_ZSPAGE) {
		cnt = afm_zs_shrinker_count(pool);
		d->reported += cnt && cnt != SHRINK_EMPTY;
		if (first)
			afm_zs_test_quiet(pool, 0);
	}
	if (n % 3 == 0)
		afm_compact(pool);
	for (i = 0; i < AFM_DVS_OBJS; i++) {
		if (!d->h[i])
			continue;
		afm_dvs_verify(test, d, pool, i);
		if (leave_live)
			d->left++;
		else
			afm_free(pool, d->h[i]);
		d->h[i] = 0;
	}
	if (leave_live) {
		/* Documented: warns, and frees the zspages anyway. */
		unsigned long misuses = afm_test_misuse_count();

		afm_test_warnings_begin(test);
		kunit_info(test, "expect one afmalloc destroyed-with-live-objects warning\n");
		afm_destroy_pool(pool);
		afm_test_warnings_end(NULL);
		KUNIT_EXPECT_EQ_MSG(test, afm_test_misuse_count(), misuses + 1,
				    "%s destroyed with live objects", name);
	} else {
		afm_destroy_pool(pool);
	}
	d->rounds[type == AFM_STORE_ZSPAGE]++;
}

/*
 * Pools of both stores created, filled, fragmented and destroyed in a
 * loop for destroy_seconds (module parameter). Each zspage pool registers
 * a shrinker (shrinker_alloc(), shrinker_register()) and frees it at
 * destroy (shrinker_free()); in the debug guest, tests/vm/kunit-guest.sh
 * writes 2 to /proc/sys/vm/drop_caches in a loop meanwhile, so the kernel's
 * shrink_slab() calls into shrinkers being registered and freed. The
 * automatic compaction worker is on every other round, racing destroy
 * too. One zspage pool is destroyed with live objects, which the API
 * documents as a warning and a forced free; the slab store leaks such
 * objects, so its pools are always emptied first.
 */
static void afm_zs_test_destroy_vs_shrinker(struct kunit *test)
{
	unsigned int secs = min_t(unsigned int,
				  READ_ONCE(afm_test_destroy_seconds),
				  AFM_TEST_MAX_SECONDS);
	unsigned long deadline = jiffies + max(secs, 1U) * HZ;
	unsigned int k = 0;
	struct afm_dvs *d;

	d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	if (!d)
		kunit_skip(test, "no memory for the test state");
	d->h = kunit_kcalloc(test, AFM_DVS_OBJS, sizeof(*d->h), GFP_KERNEL);
	if (!d->h)
		kunit_skip(test, "no memory for the handles");
	d->buf = afm_zs_buf(test);
	afm_zs_permille(test, 0);

	do {
		afm_zs_set_auto_permille(k & 1 ? 5 : 0);
		afm_dvs_round(test, d, AFM_STORE_SLAB, false);
		afm_dvs_round(test, d, AFM_STORE_ZSPAGE, k == 1);
		k++;
		cond_resched();
	} while (k < 2 || time_before(jiffies, deadline));

	kunit_info(test, "%u slab and %u zspage pools, %u zspage shrinker counts above 0, %u objects verified (%llu bytes), %u left live in one pool, %u out of memory\n",
		   d->rounds[0], d->rounds[1], d->reported, d->verified,
		   d->verified_bytes, d->left, d->nomem);
	/* One line for tests/vm/kunit-guest.sh: key=value, parsed. */
	kunit_info(test, "afmalloc-stress: case=%s store=slab+zspage threads=1 seconds=%u ops=%u stored=%u verified=%u bytes_verified=%llu errors=%u lost=%u left_live=%u\n",
		   test->name, secs, d->rounds[0] + d->rounds[1], d->stored,
		   d->verified, d->verified_bytes, d->lost, d->lost, d->left);
	KUNIT_EXPECT_EQ(test, d->lost, 0);
	KUNIT_EXPECT_EQ(test, d->verified, d->stored);
	/* Counts are off without memory; a skip must not hide a failure. */
	if (d->nomem && READ_ONCE(test->status) != KUNIT_FAILURE)
		kunit_skip(test, "%u allocations failed for lack of memory",
			   d->nomem);
	if (d->nomem)
		return;
	KUNIT_EXPECT_GE(test, d->rounds[0], 2);
	KUNIT_EXPECT_GE(test, d->rounds[1], 2);
	/*
	 * Rounds without the automatic worker leave holes to report; in the
	 * guest, drop_caches may compact them first, except in the first
	 * zspage round (no worker, kernel's shrinker kept away until the
	 * count): at least that one reports.
	 */
	KUNIT_EXPECT_GT(test, d->reported, 0);
	KUNIT_EXPECT_EQ(test, d->left, AFM_DVS_OBJS / 4);
}

static struct kunit_case afm_zspage_store_test_cases[] = {
	KUNIT_CASE(afm_zs_test_roundtrip),
	KUNIT_CASE(afm_zs_test_packing),
	KUNIT_CASE(afm_zs_test_density),
	KUNIT_CASE_PARAM(afm_zs_test_compact, afm_zs_idx_bits_gen_params),
	KUNIT_CASE(afm_zs_test_compact_pinned),
	KUNIT_CASE_SLOW(afm_zs_test_compact_cost),
	KUNIT_CASE_SLOW(afm_zs_test_table_growth),
	KUNIT_CASE(afm_zs_test_auto_compact),
	KUNIT_CASE(afm_zs_test_rest_compact),
	KUNIT_CASE(afm_zs_test_shrinker),
	KUNIT_CASE(afm_zs_test_migrate),
	KUNIT_CASE(afm_zs_test_migrate_counters),
	KUNIT_CASE(afm_zs_test_alloc_failure),
	KUNIT_CASE(afm_zs_test_bad_handles),
	KUNIT_CASE(afm_zs_test_gfp),
	KUNIT_CASE(afm_zs_test_classes),
	KUNIT_CASE_PARAM(afm_zs_test_hole_reuse, afm_zs_hole_gen_params),
	KUNIT_CASE(afm_zs_test_hole_forget),
	KUNIT_CASE_SLOW(afm_zs_test_stress),
	KUNIT_CASE_SLOW(afm_zs_test_destroy_vs_shrinker),
	{}
};

static struct kunit_suite afm_zspage_store_test_suite = {
	.name = "afmalloc_zspage_store",
	.test_cases = afm_zspage_store_test_cases,
};

kunit_test_suite(afm_zspage_store_test_suite);
