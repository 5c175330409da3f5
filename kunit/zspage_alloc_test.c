// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of allocation and the hole cache (mm/zspage_alloc.c): allocation
 * failure injection at every internal allocation, reuse of recorded holes
 * (fit, slack, split, headers of the rest) and records dropped with their
 * zspage.
 */

#include "zspage_test.h"

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

static struct kunit_case afm_zspage_alloc_test_cases[] = {
	KUNIT_CASE(afm_zs_test_alloc_failure),
	KUNIT_CASE_PARAM(afm_zs_test_hole_reuse, afm_zs_hole_gen_params),
	KUNIT_CASE(afm_zs_test_hole_forget),
	{}
};

static struct kunit_suite afm_zspage_alloc_test_suite = {
	.name = "afmalloc_zspage_alloc",
	.test_cases = afm_zspage_alloc_test_cases,
};

kunit_test_suite(afm_zspage_alloc_test_suite);
