// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the afmalloc statistics (mm/stats.c and the per-class
 * counters behind them): per-class rows match the objects allocated, their
 * slabs and pages match the folios that really hold the objects' chunks
 * and descriptors, those add up to the pool's pages, and the debugfs files
 * exist.
 */

#include <kunit/test.h>
#include <linux/debugfs.h>
#include <linux/fs.h>

#include "afm_test.h"

struct afm_class_row {
	char name[16];
	unsigned long val[NR_AFM_CLASS_STATS];
};

static struct afm_class_row *afm_test_rows(struct kunit *test,
					   struct afm_pool *pool,
					   unsigned int *nr)
{
	struct afm_class_row *rows;
	unsigned int i;

	*nr = pool->ops->nr_classes(pool);
	rows = kunit_kcalloc(test, *nr, sizeof(*rows), GFP_KERNEL);
	afm_test_need(test, rows);
	for (i = 0; i < *nr; i++)
		pool->ops->class_stats(pool, i, rows[i].name, rows[i].val);
	return rows;
}

static struct afm_class_row *afm_test_row(struct kunit *test,
					  struct afm_class_row *rows,
					  unsigned int nr, const char *name)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	}
	KUNIT_FAIL(test, "no class %s", name);
	return NULL;
}

/* Distinct folios (slabs) seen holding one class's chunks or descriptors. */
struct afm_test_folios {
	struct folio *folio[16];
	unsigned int nr;
	unsigned long pages;
};

static void afm_test_folio_add(struct kunit *test, struct afm_test_folios *f,
			       const void *obj)
{
	struct folio *folio = virt_to_folio(obj);
	unsigned int i;

	for (i = 0; i < f->nr; i++) {
		if (f->folio[i] == folio)
			return;
	}
	if (f->nr == ARRAY_SIZE(f->folio)) {
		KUNIT_FAIL(test, "more than %zu folios in one class",
			   ARRAY_SIZE(f->folio));
		return;
	}
	f->folio[f->nr++] = folio;
	f->pages += folio_nr_pages(folio);
}

/*
 * Per class (index of the "classes" rows), the folios holding the chunks
 * and descriptors of @ts's live objects, found from their addresses: what
 * the page allocator and the slab caches say, not afmalloc's tracker.
 */
static struct afm_test_folios *afm_test_folios(struct kunit *test,
					       struct afm_test_set *ts,
					       unsigned int nr_rows)
{
	unsigned int i, k, nr, sizes[AFM_MAX_CHUNKS + 1];
	void *chunk[AFM_MAX_CHUNKS + 1];
	struct afm_test_folios *f;

	f = kunit_kcalloc(test, nr_rows, sizeof(*f), GFP_KERNEL);
	afm_test_need(test, f);
	for (i = 0; i < ts->n; i++) {
		size_t size = afm_obj_size(ts->pool, ts->h[i]);

		nr = afm_slab_obj_chunks(ts->pool, ts->h[i], chunk);
		KUNIT_ASSERT_EQ(test, nr, afm_slab_decompose(size, sizes));
		for (k = 0; k < nr; k++) {
			unsigned int class = afm_chunk_class(ilog2(sizes[k]));

			KUNIT_ASSERT_LT(test, class, nr_rows);
			afm_test_folio_add(test, &f[class], chunk[k]);
		}
		/* A descriptor handle is the descriptor's address. */
		if (!afm_handle_is_direct(ts->h[i])) {
			KUNIT_ASSERT_LT(test, AFM_DESC_CLASS(nr), nr_rows);
			afm_test_folio_add(test, &f[AFM_DESC_CLASS(nr)],
					   (void *)ts->h[i]);
		}
	}
	return f;
}

static void afm_test_class_stats(struct kunit *test)
{
	const unsigned int n = 10;
	struct afm_test_set *ts = afm_test_set(test, 2 * n + 1);
	unsigned long pages = 0;
	struct afm_class_row *rows, *r;
	struct afm_test_folios *f;
	unsigned int i, nr;
	char page_class[16];

	/* 400 = 256 + 128 + 16 behind a 3-chunk descriptor. */
	for (i = 0; i < n; i++)
		ts->h[i] = afm_test_malloc(test, ts->pool, 400);
	/* Direct 128 byte objects. */
	for (i = n; i < 2 * n; i++)
		ts->h[i] = afm_test_malloc(test, ts->pool, 128);
	ts->h[2 * n] = afm_test_malloc(test, ts->pool, PAGE_SIZE);

	rows = afm_test_rows(test, ts->pool, &nr);
	/* Chunk classes, then descriptor classes up to the largest in use. */
	KUNIT_ASSERT_GT(test, nr, AFM_NR_CHUNK_CLASSES + 1);
	KUNIT_ASSERT_LE(test, nr, AFM_NR_CLASSES);

	r = afm_test_row(test, rows, nr, "256");
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_OBJS], n);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_DIRECT], 0);
	KUNIT_EXPECT_GE(test, r->val[AFM_CLASS_SLABS], 1);
	KUNIT_EXPECT_GE(test, r->val[AFM_CLASS_PAGES], r->val[AFM_CLASS_SLABS]);

	r = afm_test_row(test, rows, nr, "128");
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_OBJS], 2 * n);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_DIRECT], n);

	r = afm_test_row(test, rows, nr, "16");
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_OBJS], n);

	r = afm_test_row(test, rows, nr, "desc3");
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_OBJS], n);

	/* PAGE_SIZE chunks are pages of their own. */
	snprintf(page_class, sizeof(page_class), "%lu", PAGE_SIZE);
	r = afm_test_row(test, rows, nr, page_class);
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_OBJS], 1);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_DIRECT], 1);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_SLABS], 1);
	KUNIT_EXPECT_EQ(test, r->val[AFM_CLASS_PAGES], 1);

	/*
	 * Each row's slabs and pages are those of the folios holding its
	 * chunks or descriptors (the tracker's counts against the slab
	 * allocator's folios), and those folios make the pool's pages.
	 */
	f = afm_test_folios(test, ts, nr);
	for (i = 0; i < nr; i++) {
		KUNIT_EXPECT_EQ_MSG(test, rows[i].val[AFM_CLASS_SLABS], f[i].nr,
				    "class %s", rows[i].name);
		KUNIT_EXPECT_EQ_MSG(test, rows[i].val[AFM_CLASS_PAGES],
				    f[i].pages, "class %s", rows[i].name);
		pages += f[i].pages;
	}
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);

	/* The tracker has nodes once it holds more than one slab. */
	KUNIT_EXPECT_GT(test, ts->pool->ops->aux_bytes(ts->pool), 0);

	for (i = 0; i < ts->n; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	rows = afm_test_rows(test, ts->pool, &nr);
	for (i = 0; i < nr; i++) {
		KUNIT_EXPECT_EQ_MSG(test, rows[i].val[AFM_CLASS_OBJS], 0,
				    "class %s", rows[i].name);
		KUNIT_EXPECT_EQ_MSG(test, rows[i].val[AFM_CLASS_PAGES], 0,
				    "class %s", rows[i].name);
	}
	KUNIT_EXPECT_EQ(test, ts->pool->ops->aux_bytes(ts->pool), 0);
}

static void afm_test_debugfs(struct kunit *test)
{
	struct afm_test_set *ts;
	struct dentry *root, *dir, *f;

	if (!IS_ENABLED(CONFIG_AFMALLOC_STAT))
		kunit_skip(test, "CONFIG_AFMALLOC_STAT is off");
	ts = afm_test_set(test, 0);

	root = debugfs_lookup("afmalloc", NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, root);
	dir = debugfs_lookup(ts->pool->name, root);
	KUNIT_EXPECT_NOT_ERR_OR_NULL(test, dir);
	if (!IS_ERR_OR_NULL(dir)) {
		f = debugfs_lookup("pool", dir);
		KUNIT_EXPECT_NOT_ERR_OR_NULL(test, f);
		dput(f);
		f = debugfs_lookup("classes", dir);
		KUNIT_EXPECT_NOT_ERR_OR_NULL(test, f);
		dput(f);
		dput(dir);
	}
	dput(root);
}

static struct kunit_case afm_stats_test_cases[] = {
	KUNIT_CASE(afm_test_class_stats),
	KUNIT_CASE(afm_test_debugfs),
	{}
};

static struct kunit_suite afm_stats_test_suite = {
	.name = "afmalloc_stats",
	.test_cases = afm_stats_test_cases,
};

kunit_test_suite(afm_stats_test_suite);
