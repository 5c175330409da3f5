// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the zspage store as a whole (mm/zspage_store.c): byte-exact
 * round trips of every size through map and the copy helpers, back-to-back
 * packing across page boundaries, exact page accounting, invalid handles,
 * gfp flags, size classes, and multi-threaded stress runs with compaction,
 * migration and pool destruction in parallel.
 */

#include "zspage_test.h"

static size_t afm_zs_size_of_index(unsigned int i)
{
	return i + 1;
}

/* Zspage layouts: as the page allocator gives them, or every one a chain. */
static const bool afm_zs_rt_chains[] = { false, true };

static void afm_zs_rt_desc(const bool *chains, char *desc)
{
	strscpy(desc, *chains ? "chains" : "as-allocated", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_zs_rt, afm_zs_rt_chains, afm_zs_rt_desc);

/*
 * Every size from 1 to PAGE_SIZE, all live at once (so objects start at
 * every kind of offset and many cross page boundaries), written through
 * afm_write(), WO and RW mappings, read back through afm_read() and RO
 * mappings, then rewritten through RW mappings: byte-exact throughout.
 * Twice: with zspages as they come (a run of PFNs is reached in place,
 * objects crossing pages too; the case skips if none is reached in place)
 * and with every zspage a chain (page by page, through the bounce buffer
 * when an object crosses pages).
 */
static void afm_zs_test_roundtrip(struct kunit *test)
{
	const bool *chains = test->param_value;
	struct afm_test_set *ts = afm_zs_set(test, PAGE_SIZE);
	void *buf = afm_zs_buf(test);
	struct afm_zs_obj_info info;
	unsigned int i, crossing = 0, in_place = 0, errors;
	void *p;

	/* Pages are compared below: the kernel must not migrate them. */
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_MIGRATION |
			  (*chains ? AFM_ZS_QUIET_RUNS : 0));
	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, i + 1);
		KUNIT_ASSERT_EQ(test, afm_obj_size(ts->pool, ts->h[i]), i + 1);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, i + 1, buf, i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.size, i + 1);
		KUNIT_EXPECT_EQ(test, info.pins, 0);
		if (*chains)
			KUNIT_EXPECT_FALSE(test, info.in_place);
		in_place += info.in_place;
		if (offset_in_page(info.offset) + info.size > PAGE_SIZE) {
			crossing++;
			if (!info.in_place)
				continue;
		}
		/* In place: the mapping is in the object's page. */
		p = afm_map_object(ts->pool, ts->h[i], AFM_MM_RO);
		KUNIT_ASSERT_NOT_NULL(test, p);
		KUNIT_EXPECT_PTR_EQ(test, p, page_address(info.page) +
				    offset_in_page(info.offset));
		afm_unmap_object(ts->pool, ts->h[i]);
	}
	/* Roughly size / PAGE_SIZE of the objects cross a boundary. */
	KUNIT_EXPECT_GT(test, crossing, PAGE_SIZE / 4);
	kunit_info(test, "%u of %lu objects cross a page boundary, %u in zspages reached in place\n",
		   crossing, PAGE_SIZE, in_place);
	if (!*chains && !in_place)
		kunit_skip(test, "nothing in place: no run of PFNs, or highmem, or KASAN tags");

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

static const bool afm_zs_contig_on[] = { true, false };

static void afm_zs_contig_desc(const bool *on, char *desc)
{
	strscpy(desc, *on ? "blocks" : "page-by-page", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_zs_contig, afm_zs_contig_on, afm_zs_contig_desc);

static void afm_zs_restore_contig(void *data)
{
	afm_zs_test_set_contig((uintptr_t)data);
}

/*
 * zspage_contig: the pages of a new zspage allocated as one block (when
 * the page allocator has one) make a run, reached in place: 16 zspages of
 * 3000-byte objects, every one from a block a run, their data byte-exact.
 * Skips when no block came (fragmented memory) and, as no zspage is reached
 * in place there, with highmem or tag-based KASAN. With zspage_contig off
 * no block is taken and the same objects keep their bytes.
 */
static void afm_zs_test_contig(struct kunit *test)
{
	const unsigned int size = 3000, n = 16 * (AFM_ZS_PAGES * PAGE_SIZE / 3005);
	struct afm_test_set *ts = afm_zs_set(test, n);
	const bool *on = test->param_value;
	void *buf = afm_zs_buf(test);
	struct afm_zs_obj_info info;
	struct afm_zs_counters c;
	unsigned int i, in_place = 0;
	bool old;

	if (*on && (IS_ENABLED(CONFIG_HIGHMEM) ||
		    IS_ENABLED(CONFIG_KASAN_SW_TAGS) ||
		    IS_ENABLED(CONFIG_KASAN_HW_TAGS)))
		kunit_skip(test, "no zspage is reached in place in this kernel");
	old = afm_zs_test_set_contig(*on);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_contig,
						  (void *)(uintptr_t)old));
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_MIGRATION);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		in_place += info.in_place;
	}
	afm_zs_get_counters(ts->pool, &c);
	kunit_info(test, "%lu zspages: %lu runs, %lu chains, %lu from one block; %u of %u objects reached in place\n",
		   c.zspages, c.runs, c.chains, c.blocks, in_place, n);
	KUNIT_EXPECT_EQ(test, c.runs + c.chains, c.zspages);
	if (!*on) {
		KUNIT_EXPECT_EQ(test, c.blocks, 0);
	} else {
		if (!c.blocks)
			kunit_skip(test, "the page allocator had no block free");
		KUNIT_EXPECT_GE(test, c.runs, c.blocks);
		KUNIT_EXPECT_GT(test, in_place, 0);
	}
	for (i = 0; i < n; i++)
		afm_zs_check(test, ts->pool, ts->h[i], i, size, buf, i & 1);
	afm_zs_expect_consistent(test, ts->pool);
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
	/*
	 * One table page and one descriptor page, their directories in one
	 * directory page.
	 */
	KUNIT_EXPECT_EQ(test, c.table_pages, 1);
	KUNIT_EXPECT_EQ(test, c.desc_pages, 1);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
			2 * AFM_ZS_PAGES + 3);

	/* The first zspage's tail (8 bytes) takes a small object. */
	KUNIT_ASSERT_GT(test, AFM_ZS_SIZE % ext, hdr);
	afm_free(ts->pool, ts->h[ts->n - 1]);
	ts->h[ts->n - 1] = afm_test_malloc(test, ts->pool,
					   AFM_ZS_SIZE % ext - hdr);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[ts->n - 1],
					      &info), 0);
	KUNIT_EXPECT_EQ(test, info.zspage_id, first.zspage_id);
	KUNIT_EXPECT_EQ(test, info.offset, per_zspage * ext + hdr);
	/* The second zspage's pages, had the kernel one locked: now. */
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.zspages, 1);
	KUNIT_EXPECT_EQ(test, c.tail_bytes, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), AFM_ZS_PAGES + 3);
}

/*
 * zspage_short ("Short zspages" in mm/zspage_pages.c): objects of one size
 * allocated one by one into an empty pool; each zspage a shard opens adds
 * the pages given (1, 2, 4, then AFM_ZS_PAGES, but never more than
 * AFM_ZS_PAGES: 1, 2, 4, 8 with 4 KiB pages, 1, 2, 2, 2 with 16 KiB
 * pages; at least 2 for an object longer than a page, but a whole page
 * with 16 KiB pages gets a solo zspage of 1 (AFM_ZS_WHOLE_SOLO);
 * AFM_ZS_PAGES each with zspage_short off), and the pool holds its data
 * pages and table pages, nothing else. The objects keep their bytes;
 * freeing them all gives every data page back, and the next object opens
 * a short zspage again.
 */
struct afm_zs_short_case {
	unsigned int size;
	bool on;
	unsigned int grow[5];
};

/* A short zspage of @n pages: no longer than a full one. */
#define AFM_ZS_SHORT(n)		MIN(n, AFM_ZS_PAGES)
/*
 * A whole page and its header are longer than half a zspage (16 KiB
 * pages): such a page gets a solo zspage, one page, when nothing fits it.
 */
#define AFM_ZS_WHOLE_SOLO	(AFM_ZS_SIZE <= 2 * PAGE_SIZE)
/* Pages a zspage opened for whole pages adds: @n, or 1 for a solo one. */
#define AFM_ZS_WHOLE(n)		(AFM_ZS_WHOLE_SOLO ? 1 : (n))

static const struct afm_zs_short_case afm_zs_short_cases[] = {
	{ 1000, true, { AFM_ZS_SHORT(1), AFM_ZS_SHORT(2), AFM_ZS_SHORT(4),
			AFM_ZS_PAGES, AFM_ZS_PAGES } },
	{ 3000, true, { AFM_ZS_SHORT(1), AFM_ZS_SHORT(2), AFM_ZS_SHORT(4),
			AFM_ZS_PAGES, AFM_ZS_PAGES } },
	{ PAGE_SIZE, true, { AFM_ZS_WHOLE(2), AFM_ZS_WHOLE(2),
			     AFM_ZS_WHOLE(AFM_ZS_SHORT(4)),
			     AFM_ZS_WHOLE(AFM_ZS_PAGES),
			     AFM_ZS_WHOLE(AFM_ZS_PAGES) } },
	{ 1000, false, { AFM_ZS_PAGES, AFM_ZS_PAGES, AFM_ZS_PAGES,
			 AFM_ZS_PAGES, AFM_ZS_PAGES } },
};

static void afm_zs_short_desc(const struct afm_zs_short_case *p, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%u bytes, short %s", p->size,
		 p->on ? "on" : "off");
}

KUNIT_ARRAY_PARAM(afm_zs_short, afm_zs_short_cases, afm_zs_short_desc);

static void afm_zs_test_short(struct kunit *test)
{
	const struct afm_zs_short_case *p = test->param_value;
	const unsigned int n = 5 * AFM_ZS_SIZE / 1000;
	void *buf = afm_zs_buf(test);
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	unsigned long pages = 0;
	unsigned int i, k = 0, used;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_short(test, p->on);
	afm_zs_quiet(ts);
	for (i = 0; i < n && k < ARRAY_SIZE(p->grow); i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, p->size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, p->size, buf,
				   i);
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_EXPECT_EQ(test, c.total_pages,
				c.data_pages + c.table_pages + c.desc_pages +
				c.hole_pages + c.dir_pages);
		if (c.data_pages == pages)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, c.data_pages - pages, p->grow[k],
				    "zspage %u, object %u", k, i);
		pages = c.data_pages;
		k++;
	}
	KUNIT_ASSERT_EQ(test, k, ARRAY_SIZE(p->grow));
	used = i;
	for (i = 0; i < used; i++)
		afm_zs_check(test, ts->pool, ts->h[i], i, p->size, buf, i & 1);
	afm_zs_expect_consistent(test, ts->pool);

	for (i = 0; i < used; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	/* Zspages whose pages the kernel had locked for a moment: now. */
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.zspages + c.dead_zspages, 0);
	KUNIT_EXPECT_EQ(test, c.data_pages, 0);
	ts->h[0] = afm_test_malloc(test, ts->pool, p->size);
	afm_zs_put_pattern(test, ts->pool, ts->h[0], 0, p->size, buf, 0);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.data_pages, p->grow[0]);
	afm_zs_check(test, ts->pool, ts->h[0], 0, p->size, buf, false);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * The end of a short zspage is the end of its last page: in a one-page
 * zspage made a chain (page by page, no neighbour reached in place), lay
 * out X (100 bytes), Y (100 bytes), A and B (2 bytes) so that B's extent
 * ends at the page's last byte; free X (an indexed hole: the zspage has
 * another when A goes) and then A, whose merge reads the extent after it,
 * B's, which is shorter than an indexed hole's header: the read must stop
 * at the page's end (past it, there is no page: the chain ends). The
 * objects left keep their bytes and the pool stays consistent.
 */
static void afm_zs_test_short_end(struct kunit *test)
{
	const unsigned int hdr = afm_zs_header_bytes(), b = 2;
	const size_t size[] = { 100, 100, PAGE_SIZE - 2 * (100 + hdr) -
				2 * hdr - b, b };
	void *buf = afm_zs_buf(test);
	struct afm_zs_obj_info info;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	unsigned int i;

	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, ARRAY_SIZE(size));
	afm_zs_short(test, true);
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
			  AFM_ZS_QUIET_MIGRATION | AFM_ZS_QUIET_RFREE |
			  AFM_ZS_QUIET_RUNS);
	for (i = 0; i < ARRAY_SIZE(size); i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size[i]);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size[i], buf,
				   0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.data_pages, 1);
	KUNIT_ASSERT_EQ(test, c.zspages, 1);
	KUNIT_ASSERT_EQ(test, c.tail_bytes, 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[3], &info), 0);
	KUNIT_ASSERT_EQ(test, info.offset + b, PAGE_SIZE);
	afm_free(ts->pool, ts->h[0]);
	ts->h[0] = 0;
	afm_zs_expect_consistent(test, ts->pool);
	afm_free(ts->pool, ts->h[2]);
	ts->h[2] = 0;
	afm_zs_expect_consistent(test, ts->pool);
	afm_zs_check(test, ts->pool, ts->h[1], 1, size[1], buf, false);
	afm_zs_check(test, ts->pool, ts->h[3], 3, size[3], buf, true);
}

/*
 * Short zspages under churn: rounds that each start from an empty pool,
 * so that every round's objects land in short zspages first; objects of
 * random sizes (1 to PAGE_SIZE bytes) allocated, a random half freed (holes
 * in and at the end of short zspages, merged or given back to the tail),
 * as many allocated again, then every object checked and the pool audited
 * (extents tile every zspage up to its fill offset, within its own length;
 * page chains as long as the zspage). Odd rounds make every zspage a chain
 * (AFM_ZS_QUIET_RUNS), so that headers and data crossing pages go page by
 * page, never past a short zspage's last page.
 */
static void afm_zs_test_short_churn(struct kunit *test)
{
	const unsigned int n = 48, rounds = 24;
	void *buf = afm_zs_buf(test);
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	unsigned int r, i, short_seen = 0, *seed;
	size_t *size;

	size = kunit_kcalloc(test, n, sizeof(*size), GFP_KERNEL);
	seed = kunit_kcalloc(test, n, sizeof(*seed), GFP_KERNEL);
	if (!size || !seed)
		kunit_skip(test, "no memory for the sizes");
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n);
	afm_zs_short(test, true);
	for (r = 0; r < rounds; r++) {
		afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
				  AFM_ZS_QUIET_MIGRATION | AFM_ZS_QUIET_RFREE |
				  (r & 1 ? AFM_ZS_QUIET_RUNS : 0));
		for (i = 0; i < n; i++) {
			size[i] = 1 + get_random_u32_below(PAGE_SIZE);
			seed[i] = r * n + i;
			ts->h[i] = afm_test_malloc(test, ts->pool, size[i]);
			afm_zs_put_pattern(test, ts->pool, ts->h[i], seed[i],
					   size[i], buf, i);
			afm_zs_get_counters(ts->pool, &c);
			if (c.data_pages % AFM_ZS_PAGES)
				short_seen++;
		}
		for (i = 0; i < n; i++) {
			if (get_random_u32_below(2))
				continue;
			afm_free(ts->pool, ts->h[i]);
			size[i] = 1 + get_random_u32_below(PAGE_SIZE);
			seed[i] += rounds * n;
			ts->h[i] = afm_test_malloc(test, ts->pool, size[i]);
			afm_zs_put_pattern(test, ts->pool, ts->h[i], seed[i],
					   size[i], buf, i);
		}
		for (i = 0; i < n; i++)
			afm_zs_check(test, ts->pool, ts->h[i], seed[i],
				     size[i], buf, i & 1);
		afm_zs_expect_consistent(test, ts->pool);
		for (i = 0; i < n; i++) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
		afm_zs_flush_work(ts->pool);
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_ASSERT_EQ(test, c.data_pages, 0);
	}
	/* Every round opened short zspages. */
	KUNIT_EXPECT_GE(test, short_seen, rounds);
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
	 * descriptor and directory pages (10 pages, 0.7%), the newest
	 * zspage's tail (up to 0.5%) and a few unfillable bytes per zspage:
	 * under 2.5%.
	 */
	limit = stored + stored / 1000 * 25;
	KUNIT_EXPECT_LE(test, bytes, limit);
	KUNIT_EXPECT_EQ(test, c.table_pages, DIV_ROUND_UP(n * 8, PAGE_SIZE));
	KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
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

static struct afm_test_set *afm_zs_set_sharded(struct kunit *test,
					       unsigned int shards,
					       unsigned int n);

/*
 * Invalid handles: a double free, a foreign value and a mapping of a freed
 * handle are each detected (counted, warned about once), and change
 * nothing; so are handles naming a shard not created yet (a pool of eight
 * shards allocates in one until its allocations wait for locks).
 */
static void afm_zs_test_bad_handles(struct kunit *test)
{
	struct afm_test_set *ts = afm_zs_set(test, 1);
	struct afm_zs_counters before, after;
	unsigned long h, misuses;

	afm_test_expect_warnings(test);
	/*
	 * No free left to a migration's hold of the lock: each misuse is
	 * counted before the next line looks.
	 */
	afm_zs_quiet(ts);
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

	ts = afm_zs_set_sharded(test, 8, 1);
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_EQ(test, before.shards_created, 1);
	misuses = afm_test_misuse_count();
	afm_free(ts->pool, 7);
	KUNIT_EXPECT_NULL(test, afm_map_object(ts->pool, 9, AFM_MM_RO));
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, 10), 0);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 2);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.shards_created, 1);
}

static void afm_zs_restore_shards(void *data)
{
	afm_zs_set_shards((unsigned long)data);
}

/*
 * A new pool of @shards shards (zspage_shards, put back with the test)
 * with @n handle slots, kept from the kernel (afm_zs_quiet()), automatic
 * compaction off.
 */
static struct afm_test_set *afm_zs_set_sharded(struct kunit *test,
					       unsigned int shards,
					       unsigned int n)
{
	unsigned long old = afm_zs_get_shards();
	struct afm_test_set *ts;

	afm_zs_permille(test, 0);
	afm_zs_set_shards(shards);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_shards,
						  (void *)old));
	ts = afm_zs_set(test, n);
	afm_zs_quiet(ts);
	return ts;
}

/*
 * Shards: a pool of four (zspage_shards=4) gets objects in the shard the
 * allocation names (one CPU here: afm_zs_test_alloc_shard() names each in
 * turn); each shard packs its own zspages and handle table, handles of
 * every shard reach their objects byte for byte, a freed handle of one
 * shard is no object there (not another shard's object), the
 * counters are the sums of the shards', compaction gives back pages in
 * every shard, and freeing everything gives back every page.
 */
static void afm_zs_test_shards(struct kunit *test)
{
	const unsigned int nr = 4, per = 256, n = nr * per;
	unsigned long h;
	unsigned int i, seen = 0, *sizes;
	struct afm_zs_counters before, c;
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	sizes = kunit_kcalloc(test, n, sizeof(*sizes), GFP_KERNEL);
	afm_test_need(test, sizes);
	ts = afm_zs_set_sharded(test, 3, n);
	/* 3 is rounded up to 4. */
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, -1), nr);
	KUNIT_EXPECT_EQ(test, afm_zs_test_alloc_shard(ts->pool, nr), -EINVAL);
	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, i % nr),
				nr);
		sizes[i] = 100 + (i * 37) % 3000;
		ts->h[i] = afm_test_malloc(test, ts->pool, sizes[i]);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, sizes[i], buf,
				   i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.shard, i % nr);
		KUNIT_EXPECT_EQ(test, info.zspage_id % nr, i % nr);
		seen |= BIT(info.shard);
	}
	KUNIT_EXPECT_EQ(test, seen, BIT(nr) - 1);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.objects, n);
	/*
	 * Each shard has its own handle table page, zspages and directory
	 * page.
	 */
	KUNIT_EXPECT_EQ(test, c.table_pages, nr);
	KUNIT_EXPECT_EQ(test, c.dir_pages, nr);
	KUNIT_EXPECT_GE(test, c.zspages, nr);
	afm_zs_expect_consistent(test, ts->pool);

	/*
	 * A freed handle is no object in its shard, whatever the others hold
	 * (afm_zs_test_bad_handles shows a free of it is refused).
	 */
	h = ts->h[1];
	afm_free(ts->pool, h);
	ts->h[1] = 0;
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, h), 0);
	KUNIT_EXPECT_EQ(test, afm_zs_obj_info(ts->pool, h, &info), -ENOENT);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.objects, n - 1);

	/* Three of every four go, in every shard: compaction frees pages. */
	for (i = 0; i < n; i++) {
		if (i % 8 < 2 || !ts->h[i])
			continue;
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &before);
	afm_compact(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_LT(test, c.total_pages, before.total_pages);
	KUNIT_EXPECT_GT(test, c.moved, before.moved);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = 0; i < n; i++) {
		if (!ts->h[i])
			continue;
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, sizes[i], buf, i & 1));
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.shard, i % nr);
	}
	for (i = 0; i < n; i++) {
		if (!ts->h[i])
			continue;
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
}

/*
 * Shards compact apart: while a compaction pass runs in one shard (here
 * its compaction lock held by the test, afm_zs_test_compact_hold()), a
 * shrinker scan still compacts the other, and leaves the held shard's
 * objects where they are. With one compaction lock a pool, a pass in any
 * shard made every other shard's scan return SHRINK_STOP, and the shards
 * of a pool on many CPUs compacted one at a time.
 */
static void afm_zs_test_shards_compact_apart(struct kunit *test)
{
	const unsigned int nr = 2, per = 512, n = nr * per, size = 1000;
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long *ids, freed, pages;
	unsigned int i, moved[2] = { };

	ids = kunit_kcalloc(test, n, sizeof(*ids), GFP_KERNEL);
	afm_test_need(test, ids);
	ts = afm_zs_set_sharded(test, nr, n);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, -1), nr);
	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, i % nr),
				nr);
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	afm_zs_test_alloc_shard(ts->pool, -1);
	/* Three of every four go, in both shards: zspages of holes. */
	for (i = 0; i < n; i++) {
		if (i % 8 < 2) {
			KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i],
							      &info), 0);
			ids[i] = info.zspage_id;
			continue;
		}
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	pages = afm_get_total_pages(ts->pool);

	KUNIT_ASSERT_EQ(test, afm_zs_test_compact_hold(ts->pool, 0, true), 0);
	afm_zs_get_counters(ts->pool, &before);
	freed = afm_zs_shrinker_scan(ts->pool, pages);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_ASSERT_EQ(test, afm_zs_test_compact_hold(ts->pool, 0, false), 0);

	KUNIT_EXPECT_NE(test, freed, SHRINK_STOP);
	KUNIT_EXPECT_GT(test, after.moved, before.moved);
	KUNIT_EXPECT_LT(test, afm_get_total_pages(ts->pool), pages);
	for (i = 0; i < n; i++) {
		if (!ts->h[i])
			continue;
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.shard, i % nr);
		moved[i % nr] += info.zspage_id != ids[i];
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, size, buf, i & 1));
	}
	KUNIT_EXPECT_EQ(test, moved[0], 0);
	KUNIT_EXPECT_GT(test, moved[1], 0);
	afm_zs_expect_consistent(test, ts->pool);
}

static void afm_zs_restore_shards_grow(void *data)
{
	afm_zs_test_set_shards_grow((uintptr_t)data);
}

/*
 * Active shards: a pool of eight starts allocating in one. Objects
 * allocated as eight CPUs (afm_zs_test_alloc_cpu()) all go to shard 0,
 * whose tables and zspages alone hold pages (one directory and one handle
 * table page, not eight); the active shards double after
 * afm_zs_test_grow_after() allocations found their lock held within
 * AFM_ZS_GROW_WINDOW (one fewer, or a window that ends between them, is
 * not enough), then CPU c allocates in shard c % 2, then c % 4, up to all
 * eight, and no further; objects of every shard read back byte for byte
 * and freeing them gives back every page. A shard is created when it
 * becomes active (the pool's structures grow with it); waits while a
 * doubling is under way do not count toward another. With zspage_shards_grow=N a new pool
 * allocates in all eight from the start, CPU c in shard c.
 */
static void afm_zs_test_shards_grow(struct kunit *test)
{
	const unsigned int nr = 8, per = 16, rounds = 4, n = rounds * nr * per;
	unsigned long now, window, aux;
	unsigned int i, k, r, grow = afm_zs_test_grow_after(&window), want;
	unsigned int size;
	struct afm_zs_obj_info info;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	KUNIT_ASSERT_GT(test, grow, 1);
	ts = afm_zs_set_sharded(test, nr, n);
	/*
	 * The waits counted here come at @now, a window after the pool began
	 * its first: the first wait opens a window of its own, however long
	 * the pool took to create (no tick may fall in between by chance).
	 */
	now = jiffies + window + 1;
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, -1), nr);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.shards_active, 1);
	/* The other shards are created when they become active. */
	KUNIT_EXPECT_EQ(test, c.shards_created, 1);
	aux = ts->pool->ops->aux_bytes(ts->pool);

	for (r = 0, i = 0; r < rounds; r++) {
		want = 1U << r;
		for (k = 0; k < nr * per; k++, i++) {
			afm_zs_test_alloc_cpu(ts->pool, k % nr);
			size = 200 + (i * 53) % 1500;
			ts->h[i] = afm_test_malloc(test, ts->pool, size);
			afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size,
					   buf, i);
			KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i],
							      &info), 0);
			KUNIT_EXPECT_EQ(test, info.shard, (k % nr) % want);
		}
		afm_zs_get_counters(ts->pool, &c);
		KUNIT_EXPECT_EQ(test, c.shards_active, want);
		KUNIT_EXPECT_EQ(test, c.shards_created, want);
		/* Each created shard's structures: more than one's alone. */
		KUNIT_EXPECT_GE(test, ts->pool->ops->aux_bytes(ts->pool),
				want * aux / 2);
		if (!r) {
			/* One shard's metadata, not one a CPU. */
			KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
			KUNIT_EXPECT_EQ(test, c.table_pages, 1);
		}
		if (r + 1 == rounds)
			break;
		if (!r) {
			/* A window that ends between the waits starts anew. */
			KUNIT_EXPECT_EQ(test, afm_zs_test_contended(ts->pool,
								    grow - 1,
								    now), 1);
			now += window + 1;
		}
		KUNIT_EXPECT_EQ(test, afm_zs_test_contended(ts->pool, grow - 1,
							    now), want);
		KUNIT_EXPECT_EQ(test, afm_zs_test_contended(ts->pool, 1, now),
				2 * want);
	}
	/* All eight active: more waits change nothing. */
	KUNIT_EXPECT_EQ(test, afm_zs_test_contended(ts->pool, 2 * grow, now),
			nr);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, 200 + (i * 53) % 1500,
						     buf, i & 1));
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_test_alloc_cpu(ts->pool, -1);
	afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);

	/*
	 * Waits while a doubling is under way (started, blocked on the grow
	 * lock) count toward none: three times grow_after waits, one doubling.
	 */
	ts = afm_zs_set_sharded(test, nr, 1);
	afm_zs_test_grow_hold(ts->pool, true);
	KUNIT_EXPECT_EQ(test, afm_zs_test_contended(ts->pool, 3 * grow, now),
			1);
	afm_zs_test_grow_hold(ts->pool, false);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.shards_active, 2);
	KUNIT_EXPECT_EQ(test, c.shards_created, 2);

	/* zspage_shards_grow=N: every shard of a new pool from the start. */
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_zs_restore_shards_grow,
						  (void *)(uintptr_t)
						  afm_zs_test_set_shards_grow(false)));
	ts = afm_zs_set(test, nr);
	afm_zs_quiet(ts);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, -1), nr);
	for (k = 0; k < nr; k++) {
		afm_zs_test_alloc_cpu(ts->pool, k);
		ts->h[k] = afm_test_malloc(test, ts->pool, 1000);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[k], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.shard, k);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.shards_active, nr);
	KUNIT_EXPECT_EQ(test, c.shards_created, nr);
	KUNIT_EXPECT_EQ(test, c.dir_pages, nr);
}

/*
 * A shard created after afm_zs_test_auto_next() held the automatic runs
 * back takes the same time, as the hook promises: shard 1 of a pool of two
 * is created only after the runs are held back for ten seconds, its objects
 * fragmented, and a free past the trigger then queues its run for later
 * (auto_delayed), not at once; flushing the work runs it. The time is
 * moved through the hook, never waited for.
 */
static void afm_zs_test_auto_next_new_shard(struct kunit *test)
{
	struct afm_zs_counters frag, c;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	ts = afm_zs_set_sharded(test, 2, 4000);
	/*
	 * Held back for as long as the hook says (else for AFM_ZS_AUTO_GAP at
	 * most: a host slow enough between the free and the counters below
	 * would see the run done).
	 */
	afm_zs_quiet_auto(ts);
	afm_zs_test_auto_next(ts->pool, 10 * HZ);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, 1), 2);
	afm_zs_fragment(test, ts, buf);
	afm_zs_get_counters(ts->pool, &frag);
	KUNIT_ASSERT_EQ(test, frag.shards_created, 2);
	KUNIT_ASSERT_GT(test, frag.hole_bytes, 16UL * AFM_ZS_SIZE);

	afm_zs_set_auto_permille(10);
	afm_free(ts->pool, ts->h[4]);
	ts->h[4] = 0;
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.auto_delayed, frag.auto_delayed + 1);
	KUNIT_EXPECT_EQ(test, c.auto_runs, frag.auto_runs);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.auto_runs, frag.auto_runs + 1);
	KUNIT_EXPECT_GT(test, c.auto_freed, frag.auto_freed);
}

/*
 * A free of another shard's object than the one this CPU allocates in
 * (here, with allocations named to shard 0, frees of shard 1's) is left
 * to that shard's lock holder without trying its lock, free though it is,
 * while fewer than afm_zs_test_rfree_remote_max() wait: each returns with its
 * object still live and counted, waiting; a free of the CPU's own shard's
 * object is done at once and takes none of the other shard's. With that
 * many waiting, the next such free takes the lock and frees them all with
 * its own. One more waits, and shard 1's next malloc frees it. The freed
 * handles are gone, the counts drop by them and every other object reads
 * back byte for byte. The shards' workers are kept out
 * (AFM_ZS_QUIET_RWORK), so that what waits is counted whatever the
 * host's speed.
 */
static void afm_zs_test_rfree_remote(struct kunit *test)
{
	const unsigned int size = 300, max = afm_zs_test_rfree_remote_max();
	/* Shard 1: max + 2 freed, one kept; shard 0: one; one new. */
	const unsigned int n1 = max + 3, n = n1 + 2;
	struct afm_zs_counters before, c;
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i;

	KUNIT_ASSERT_GT(test, max, 0);
	KUNIT_ASSERT_LT(test, max, afm_zs_test_rfree_max());
	ts = afm_zs_set_sharded(test, 2, n);
	afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
			  AFM_ZS_QUIET_MIGRATION | AFM_ZS_QUIET_RWORK);
	for (i = 0; i <= n1; i++) {
		/* Objects 0 to n1 - 1 in shard 1, object n1 in shard 0. */
		KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, i < n1),
				2);
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_ASSERT_EQ(test, info.shard, i < n1);
	}
	afm_zs_get_counters(ts->pool, &before);

	/* Allocations go to shard 0: shard 1's objects wait. */
	for (i = 0; i < max; i++)
		afm_free(ts->pool, ts->h[i]);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, max);
	KUNIT_EXPECT_EQ(test, c.rfreed, before.rfreed);
	KUNIT_EXPECT_EQ(test, c.objects, n1 + 1);
	KUNIT_EXPECT_EQ(test, c.live_bytes, (n1 + 1) * size);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[0]), size);

	/* Shard 0's own: at once, and shard 1's still wait. */
	afm_free(ts->pool, ts->h[n1]);
	ts->h[n1] = 0;
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.objects, n1);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, max);

	/* That many waiting: this one takes shard 1's lock, frees them all. */
	afm_free(ts->pool, ts->h[max]);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 0);
	KUNIT_EXPECT_EQ(test, c.rfreed, before.rfreed + max);
	KUNIT_EXPECT_EQ(test, c.objects, n1 - max - 1);
	for (i = 0; i <= max; i++) {
		KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[i]), 0);
		ts->h[i] = 0;
	}

	/* One more waits; shard 1's next malloc frees it. */
	afm_free(ts->pool, ts->h[max + 1]);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 1);
	KUNIT_EXPECT_EQ(test, c.objects, n1 - max - 1);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, 1), 2);
	ts->h[n1 + 1] = afm_test_malloc(test, ts->pool, size);
	afm_zs_put_pattern(test, ts->pool, ts->h[n1 + 1], n1 + 1, size, buf,
			   n1 + 1);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 0);
	KUNIT_EXPECT_EQ(test, c.rfreed, before.rfreed + max + 1);
	KUNIT_EXPECT_EQ(test, c.objects, n1 - max - 1);
	KUNIT_EXPECT_EQ(test, c.live_bytes, (n1 - max - 1) * size);
	if (ts->h[n1 + 1] != ts->h[max + 1])
		KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[max + 1]),
				0);
	ts->h[max + 1] = 0;
	for (i = 0; i < n; i++)
		if (ts->h[i])
			KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool,
							     ts->h[i], i, size,
							     buf, i & 1));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Donors: holes left in a shard whose CPUs stopped allocating are reused.
 * Shard 0 of a pool of two fills and frees every other object, so that it
 * holds far more than AFM_ZS_DONOR_ON bytes of indexed holes; allocations
 * named to shard 1 (no zspage yet) then take those holes instead of
 * opening a zspage: the objects live in shard 0 (their handles say so), no
 * page is added, the donated counter counts each, and every byte reads
 * back. A free of a lent object from shard 1's CPU waits for shard 0's
 * lock holder (see afm_zs_test_rfree_remote), and the next allocation
 * lent by shard 0 frees it (shard 0's own CPUs may never come back). Once
 * shard 0's holes drop below AFM_ZS_DONOR_OFF it is no donor: shard 1
 * opens its own zspage and the rest go there.
 */
static void afm_zs_test_donor(struct kunit *test)
{
	const unsigned int n = 256, size = 1000;
	unsigned int i, donated = 0, own = 0;
	struct afm_zs_counters before, c;
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);

	ts = afm_zs_set_sharded(test, 2, 2 * n);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	for (i = 0; i < n; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	/* Donors give indexed holes: merge the last frees too. */
	afm_zs_test_flush(ts->pool);
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_GE(test, before.hole_recorded, n / 2 * size);

	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, 1), 2);
	for (i = n; i < 2 * n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		if (info.shard == 0) {
			/* Every donated object comes before shard 1's own. */
			KUNIT_EXPECT_EQ(test, own, 0);
			donated++;
		} else {
			own++;
		}
		if (i == n + 1) {
			/* Lent: freed from shard 1's CPU, it waits. */
			KUNIT_ASSERT_EQ(test, info.shard, 0);
			afm_zs_test_quiet(ts->pool, AFM_ZS_QUIET_SHRINKER |
					  AFM_ZS_QUIET_MIGRATION |
					  AFM_ZS_QUIET_RWORK);
			afm_free(ts->pool, ts->h[n]);
			ts->h[n] = 0;
			afm_zs_get_counters(ts->pool, &c);
			KUNIT_EXPECT_EQ(test, c.rfree_waiting, 1);
		} else if (i == n + 2) {
			/* The next lent object's allocation freed it. */
			KUNIT_ASSERT_EQ(test, info.shard, 0);
			afm_zs_get_counters(ts->pool, &c);
			KUNIT_EXPECT_EQ(test, c.rfree_waiting, 0);
			afm_zs_quiet(ts);
		}
		if (i == n + n / 4) {
			/* A quarter in: all in shard 0's holes, no new page. */
			afm_zs_get_counters(ts->pool, &c);
			KUNIT_EXPECT_EQ(test, donated, n / 4 + 1);
			KUNIT_EXPECT_EQ(test, c.total_pages, before.total_pages);
			KUNIT_EXPECT_EQ(test, c.zspages, before.zspages);
		}
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.donated - before.donated, donated);
	/* Shard 0 kept some holes for itself; shard 1 opened zspages. */
	KUNIT_EXPECT_LT(test, donated, n / 2);
	KUNIT_EXPECT_GT(test, own, 0);
	KUNIT_EXPECT_GT(test, c.hole_recorded, 0);
	KUNIT_EXPECT_GT(test, c.zspages, before.zspages);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = 0; i < 2 * n; i++)
		if (ts->h[i])
			KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool,
							     ts->h[i], i, size,
							     buf, i & 1));
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
	/* The figures in afm_huge_class_size()'s kernel-doc and the map. */
	if (PAGE_SIZE == 4096 && afm_zs_get_align() == 1) {
		KUNIT_EXPECT_EQ(test, huge, 4075);
		KUNIT_EXPECT_EQ(test, afm_lookup_class_index(ts->pool, PAGE_SIZE),
				4118);
	}
	for (size = 1; size <= PAGE_SIZE; size++) {
		idx = afm_lookup_class_index(ts->pool, size);
		KUNIT_EXPECT_GE(test, idx, prev);
		KUNIT_EXPECT_GE(test, idx, size + afm_zs_entry_bytes());
		if (size == huge - 1)
			KUNIT_EXPECT_LT(test, idx, PAGE_SIZE);
		if (size == huge)
			KUNIT_EXPECT_GE(test, idx, PAGE_SIZE);
		/* What is stored uncompressed from there on: one class. */
		if (size >= huge)
			KUNIT_EXPECT_EQ(test, idx,
					afm_lookup_class_index(ts->pool,
							       PAGE_SIZE));
		prev = idx;
	}
}

/*
 * Stress: workers, a compactor, a migrator and a shrinker share one pool.
 * A worker for each online CPU, at least AFM_ZS_STRESS_WORKERS (so that
 * workers share CPUs on a small machine), at most AFM_ZS_STRESS_MAX_WORKERS.
 */
#define AFM_ZS_STRESS_WORKERS	3
#define AFM_ZS_STRESS_MAX_WORKERS	16
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
 * @shards_used: a bit for each shard the workers' objects were
 *	allocated in (a handle's low bits name its shard).
 * @nr_shards: the pool's shards, all of them active.
 * @workers: worker threads.
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
	atomic64_t shards_used;
	unsigned int nr_shards;
	unsigned int workers;
	struct completion done;
	unsigned long own;
	spinlock_t lock;	/* protects @shared */
	unsigned long shared[AFM_ZS_STRESS_MAX_WORKERS];
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

/**
 * struct afm_zs_worker - one stress worker
 * @st: the state shared by the threads.
 * @id: the worker's number.
 * @cpu: the CPU it is bound to for its first AFM_ZS_STRESS_SLOTS
 *	operations (so that every online CPU's shard gets objects, whatever
 *	the scheduler does), then free to run anywhere (so that its frees
 *	cross shards); -1: never bound.
 */
struct afm_zs_worker {
	struct afm_zs_stress *st;
	unsigned int id;
	int cpu;
};

static int afm_zs_stress_worker(void *data)
{
	struct afm_zs_worker *w = data;
	struct afm_zs_stress *st = w->st;
	struct afm_zs_slot *slot;
	unsigned int i, seq = 0, ops = 0;
	bool bound = false;
	void *buf, *p;

	if (w->cpu >= 0)
		bound = !set_cpus_allowed_ptr(current, cpumask_of(w->cpu));
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

		if (bound && ops++ == AFM_ZS_STRESS_SLOTS) {
			set_cpus_allowed_ptr(current, cpu_possible_mask);
			bound = false;
		}
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
			atomic64_or(BIT_ULL(s->h & (st->nr_shards - 1)),
				    &st->shards_used);
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
static bool afm_zs_stress_migrate_one(struct afm_zs_stress *st, bool late)
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
		for (i = 0; i < st->workers && !src; i++) {
			h = st->shared[get_random_u32_below(st->workers)];
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
	/*
	 * Late, the pool is kept from the kernel's migration, whose
	 * isolate_page it refuses: isolate as that would, but for the quiet.
	 */
	if (late ? !afm_zs_test_isolate_page(src) :
		   !mops->isolate_page(src, 0)) {
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
static bool afm_zs_stress_migrate_one(struct afm_zs_stress *st, bool late)
{
	return false;
}
#endif

/*
 * Migrates pages until the deadline, and past it until one migration
 * succeeded (bounded): "at least one migration" then holds on any host.
 * Past the deadline the workers have freed their objects, and the pool is
 * kept from the kernel's migration, which could hold the migrator's own
 * page isolated (the migrator then isolates through the test hook, which
 * the quiet does not refuse); a page isolated before is given a moment to
 * come back.
 */
static int afm_zs_stress_migrator(void *data)
{
	struct afm_zs_stress *st = data;
	unsigned int late = 0;

	do {
		afm_zs_stress_migrate_one(st, false);
		cond_resched();
	} while (time_before(jiffies, st->deadline));
	if (IS_ENABLED(CONFIG_COMPACTION) && !atomic_read(&st->migrations)) {
		afm_zs_test_quiet(st->pool, AFM_ZS_QUIET_MIGRATION);
		while (!atomic_read(&st->migrations) &&
		       late++ < AFM_ZS_STRESS_MIGRATE_TRIES) {
			afm_zs_stress_migrate_one(st, true);
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
 * A worker for each online CPU (at least three): each starts bound to a
 * CPU, so that every online CPU's shard gets objects, then runs anywhere.
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
	unsigned int i, started = 0, want, active, used;
	unsigned int online = num_online_cpus();
	unsigned long misuses = afm_test_misuse_count(), driven;
	long kernel_migrations;
	void *buf = afm_zs_buf(test);
	int nr;

	afm_zs_permille(test, 5);
	ts = afm_zs_set(test, AFM_ZS_STRESS_DRIVE);
	st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);
	w = kunit_kcalloc(test, AFM_ZS_STRESS_MAX_WORKERS, sizeof(*w),
			  GFP_KERNEL);
	if (!st || !w)
		kunit_skip(test, "no memory for the stress state");
	st->workers = clamp(online, AFM_ZS_STRESS_WORKERS,
			    AFM_ZS_STRESS_MAX_WORKERS);
	want = st->workers + 3;
	st->pool = ts->pool;
	spin_lock_init(&st->lock);
	init_completion(&st->done);
	atomic_set(&st->running, want + 1);
	st->own = afm_test_malloc(test, ts->pool, AFM_ZS_STRESS_OWN_SIZE);
	afm_zs_put_pattern(test, ts->pool, st->own, AFM_ZS_STRESS_OWN_SEED,
			   AFM_ZS_STRESS_OWN_SIZE, buf, 0);
	st->deadline = jiffies + secs * HZ;
	/*
	 * The workers allocate in the shards of their CPUs, every shard
	 * active (as contention would make it), so that frees cross them.
	 */
	nr = afm_zs_test_alloc_shard(ts->pool, -1);
	KUNIT_ASSERT_GT(test, nr, 0);
	st->nr_shards = nr;
	active = afm_zs_test_contended(ts->pool, UINT_MAX, jiffies);

	for (i = 0; i < want; i++) {
		if (i < st->workers) {
			w[i].st = st;
			w[i].id = i;
			w[i].cpu = cpumask_nth(i % online, cpu_online_mask);
			if (w[i].cpu >= nr_cpu_ids)
				w[i].cpu = -1;
			t = kthread_run(afm_zs_stress_worker, &w[i],
					"afm-zs-stress/%u", i);
		} else if (i == st->workers) {
			t = kthread_run(afm_zs_stress_compactor, st,
					"afm-zs-compact");
		} else if (i == st->workers + 1) {
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
	afm_zs_test_alloc_shard(ts->pool, 0);
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
	used = hweight64(atomic64_read(&st->shards_used));
	kunit_info(test, "%d operations, %d compactions, %d migrations (%d refused, %d freed while isolated), %lu automatic runs, %d shrinker scans (%d pages), %lu passes\n",
		   atomic_read(&st->ops), atomic_read(&st->compactions),
		   atomic_read(&st->migrations), atomic_read(&st->refused),
		   atomic_read(&st->freed_isolated), c.auto_runs,
		   atomic_read(&st->shrinks), atomic_read(&st->shrunk),
		   c.passes);
	/* One line for tests/vm/kunit-guest.sh: key=value, parsed. */
	kunit_info(test, "afmalloc-stress: case=%s store=zspage threads=%u workers=%u cpus=%u shards=%d active=%u shards_used=%u seconds=%u ops=%d stored=%d verified=%d bytes_verified=%lld errors=%d lost=%d compactions=%d auto_runs=%lu shrinker_scans=%d migrations=%d kernel_migrations=%ld migrations_refused=%d freed_isolated=%d\n",
		   test->name, started, st->workers, online, nr, active, used,
		   secs,
		   atomic_read(&st->ops),
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
	/* Not vacuous: objects were stored (and so verified). */
	KUNIT_EXPECT_GT(test, atomic_read(&st->stored), 0);
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

/*
 * Donors give tails too: shard 0 of a pool of two fills zspages, then
 * frees the upper half of each from its top down, so that its free space
 * is all tails (no indexed hole: the regression this covers, fio
 * randwrite after a sequential write, left tens of MiB of tails in the
 * shard a migrating writer had left while the other opened zspages).
 * Allocations named to shard 1 (no zspage yet) go into shard 0's tails,
 * with no new page; every byte reads back.
 */
static void afm_zs_test_donor_tail(struct kunit *test)
{
	const unsigned int n = 256, size = 1000;
	struct afm_zs_counters before, c;
	struct afm_zs_obj_info info;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned int i;
	int k;

	ts = afm_zs_set_sharded(test, 2, n + 8);
	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, 0), 2);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	for (k = n - 1; k >= 0; k--) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[k], &info),
				0);
		if (info.offset < AFM_ZS_SIZE / 2)
			continue;
		afm_free(ts->pool, ts->h[k]);
		ts->h[k] = 0;
	}
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_EQ(test, before.hole_recorded, 0);
	KUNIT_ASSERT_GE(test, before.tail_bytes, 2 * AFM_ZS_SIZE);

	KUNIT_ASSERT_EQ(test, afm_zs_test_alloc_shard(ts->pool, 1), 2);
	for (i = n; i < n + 8; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.shard, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.donated - before.donated, 8);
	KUNIT_EXPECT_EQ(test, c.total_pages, before.total_pages);
	KUNIT_EXPECT_EQ(test, c.zspages, before.zspages);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = 0; i < n + 8; i++)
		if (ts->h[i])
			KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool,
							     ts->h[i], i, size,
							     buf, i & 1));
}

static struct kunit_case afm_zspage_store_test_cases[] = {
	KUNIT_CASE_PARAM(afm_zs_test_roundtrip, afm_zs_rt_gen_params),
	KUNIT_CASE_PARAM(afm_zs_test_contig, afm_zs_contig_gen_params),
	KUNIT_CASE(afm_zs_test_packing),
	KUNIT_CASE_PARAM(afm_zs_test_short, afm_zs_short_gen_params),
	KUNIT_CASE(afm_zs_test_short_end),
	KUNIT_CASE(afm_zs_test_short_churn),
	KUNIT_CASE(afm_zs_test_density),
	KUNIT_CASE(afm_zs_test_bad_handles),
	KUNIT_CASE(afm_zs_test_shards),
	KUNIT_CASE(afm_zs_test_shards_compact_apart),
	KUNIT_CASE(afm_zs_test_shards_grow),
	KUNIT_CASE(afm_zs_test_auto_next_new_shard),
	KUNIT_CASE(afm_zs_test_rfree_remote),
	KUNIT_CASE(afm_zs_test_donor),
	KUNIT_CASE(afm_zs_test_donor_tail),
	KUNIT_CASE(afm_zs_test_gfp),
	KUNIT_CASE(afm_zs_test_classes),
	KUNIT_CASE_SLOW(afm_zs_test_stress),
	KUNIT_CASE_SLOW(afm_zs_test_destroy_vs_shrinker),
	{}
};

static struct kunit_suite afm_zspage_store_test_suite = {
	.name = "afmalloc_zspage_store",
	.test_cases = afm_zspage_store_test_cases,
};

kunit_test_suite(afm_zspage_store_test_suite);
