// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of allocation and the hole index (mm/zspage_alloc.c):
 * allocation failure injection at every internal allocation, reuse of
 * indexed holes (fit, slack, split, merging), holes leaving the index with
 * their zspage, extent alignment, frees that find the lock held, and
 * density under random overwrites against zsmalloc.
 */

#include <linux/atomic.h>
#include <linux/zsmalloc.h>

#include "zspage_test.h"

/*
 * Failing the k-th internal allocation returns -ENOMEM and leaves counts
 * and pages as they were, for every k until the allocation succeeds:
 * 3 + AFM_ZS_PAGES allocations (a directory page for the two tables'
 * directories, two table pages, AFM_ZS_PAGES data pages: 11 with 4 KiB
 * pages, 5 with 16 KiB pages) for the first object of a pool, AFM_ZS_PAGES
 * for one that needs a new zspage.
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
						      : 3 + AFM_ZS_PAGES);
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
	KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
	KUNIT_EXPECT_EQ(test, c.total_pages, 2 * AFM_ZS_PAGES + 3);
}

/*
 * A free that cannot get a hole record without sleeping (the first record
 * of a pool needs a hole table page and a directory block: failed here)
 * loses nothing: the hole stays off the index, counted in the holes, and
 * every object keeps its bytes; the next free gets a record (its hole is on
 * the index), and an object of the first hole's size goes there, not to
 * the hole off the index.
 */
static void afm_zs_test_hole_nomem(struct kunit *test)
{
	const unsigned int size = 500, hdr = afm_zs_header_bytes();
	struct afm_test_set *ts = afm_zs_set(test, 6);
	struct afm_zs_obj_info second, info;
	struct afm_zs_counters c;
	void *buf = afm_zs_buf(test);
	unsigned int i;

	afm_zs_permille(test, 0);
	for (i = 0; i < 5; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[3], &second), 0);
	afm_set_fail_nth(ts->pool, 1);
	afm_free(ts->pool, ts->h[1]);
	/* Its merge, deferred, asks for the record. */
	KUNIT_EXPECT_EQ(test, afm_zs_test_flush(ts->pool), 1);
	afm_set_fail_nth(ts->pool, 0);
	ts->h[1] = 0;
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, 0);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, size + hdr);
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	afm_zs_expect_consistent(test, ts->pool);

	afm_free(ts->pool, ts->h[3]);
	ts->h[3] = 0;
	afm_zs_test_flush(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, size + hdr);
	/* A table page; its directory shares the others' directory page. */
	KUNIT_EXPECT_EQ(test, c.hole_pages, 1);
	KUNIT_EXPECT_EQ(test, c.dir_pages, 1);
	afm_zs_expect_consistent(test, ts->pool);

	ts->h[5] = afm_test_malloc(test, ts->pool, size);
	afm_zs_put_pattern(test, ts->pool, ts->h[5], 5, size, buf, 5);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[5], &info), 0);
	KUNIT_EXPECT_EQ(test, info.zspage_id, second.zspage_id);
	KUNIT_EXPECT_EQ(test, info.offset, second.offset);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, 0);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, size + hdr);
	KUNIT_EXPECT_EQ(test, c.hole_pages, 0);
	for (i = 0; i < 6; i++)
		if (ts->h[i])
			KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool,
							     ts->h[i], i, size,
							     buf, i & 1));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Hole index: an object freed between two others leaves a hole that the
 * next allocation of the same size fills exactly (same zspage, same
 * offset, no new page, holes back to where they were); a larger one does
 * not fit it and goes to a tail; one 10 bytes smaller fills it, keeping
 * the 10 bytes in its extent, so that the whole hole comes back when it is
 * freed; one half its size splits it (the rest gets a header and goes on
 * the index) and the rest is reused in turn; a freed object merges with
 * the hole after it. Every object keeps its bytes.
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

/*
 * Free slot @i and merge its extent at once (the free defers it): these
 * tests look at the hole index after every free.
 */
static void afm_zs_hole_free(struct afm_zs_hole_set *hs, unsigned int i)
{
	afm_free(hs->ts->pool, hs->ts->h[i]);
	hs->ts->h[i] = 0;
	afm_zs_test_flush(hs->ts->pool);
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

	/* 20 bytes larger: does not fit the hole, goes to a tail. */
	afm_zs_hole_free(&hs, 1);
	afm_zs_hole_put(test, &hs, 4, size + 20);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[4], &info), 0);
	KUNIT_EXPECT_NE(test, info.offset, hole.offset);
	afm_zs_hole_put(test, &hs, 1, size);
	afm_zs_hole_expect_at(test, &hs, 1, &hole, 0);

	if (size >= 32) {
		/*
		 * 10 bytes smaller: into the hole, the 10 bytes stay in its
		 * extent (too few for a hole on the index); freed, the whole
		 * hole comes back and takes the full size again.
		 */
		afm_zs_hole_free(&hs, 1);
		afm_zs_hole_put(test, &hs, 1, size - 10);
		afm_zs_get_counters(pool, &after);
		afm_zs_hole_expect_at(test, &hs, 1, &hole, 0);
		KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 3);
		KUNIT_EXPECT_EQ(test, after.hole_bytes, before.hole_bytes + 10);
		KUNIT_EXPECT_EQ(test, after.hole_recorded, 0);
		afm_zs_hole_free(&hs, 1);
		afm_zs_hole_put(test, &hs, 1, size);
		afm_zs_get_counters(pool, &after);
		afm_zs_hole_expect_at(test, &hs, 1, &hole, 0);
		KUNIT_EXPECT_EQ(test, after.hole_bytes, before.hole_bytes);
	}
	if (size >= 64) {
		unsigned int rest = size - size / 2;

		/*
		 * Half of it: a split, the rest (with its header) a hole on
		 * the index, taken by an object 3 bytes short of filling it
		 * (the 3 bytes stay in its extent). Both freed, the second
		 * first: the first merges with the hole the second left,
		 * and the whole hole takes the full size again.
		 */
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[2], &hole),
				0);
		afm_zs_get_counters(pool, &before);
		afm_zs_hole_free(&hs, 2);
		afm_zs_hole_put(test, &hs, 5, size / 2);
		afm_zs_hole_expect_at(test, &hs, 5, &hole, 0);
		afm_zs_get_counters(pool, &after);
		KUNIT_EXPECT_EQ(test, after.hole_recorded, rest);
		afm_zs_hole_put(test, &hs, 7, rest - hdr - 3);
		afm_zs_hole_expect_at(test, &hs, 7, &hole, size / 2 + hdr);
		afm_zs_get_counters(pool, &after);
		KUNIT_EXPECT_EQ(test, after.hole_bytes, before.hole_bytes + 3);
		KUNIT_EXPECT_EQ(test, after.hole_recorded, 0);
		KUNIT_EXPECT_EQ(test, after.total_pages, before.total_pages);
		afm_zs_hole_free(&hs, 7);
		afm_zs_hole_free(&hs, 5);
		afm_zs_get_counters(pool, &after);
		KUNIT_EXPECT_EQ(test, after.hole_recorded, size + hdr);
		afm_zs_hole_put(test, &hs, 6, size);
		afm_zs_hole_expect_at(test, &hs, 6, &hole, 0);
		afm_zs_get_counters(pool, &after);
		KUNIT_EXPECT_EQ(test, after.hole_bytes, before.hole_bytes);
		KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 3);
	}
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(pool, &i), 0);
	KUNIT_EXPECT_EQ(test, i, 0);
	for (i = 0; i < ARRAY_SIZE(hs.size); i++) {
		if (hs.ts->h[i])
			afm_zs_check(test, pool, hs.ts->h[i], i, hs.size[i],
				     hs.buf, i & 1);
	}
	afm_zs_expect_consistent(test, pool);
}

static void afm_zs_restore_align(void *data)
{
	afm_zs_set_align((unsigned long)data);
}

/*
 * Extent alignment (zspage_align): a value that is not a power of two from
 * 1 to 64 is refused and changes nothing. In a pool made with 16, objects
 * lie back to back in extents of a multiple of 16 bytes; the padding is
 * counted as padding, not as holes (a zspage filled back to back has
 * none); the hole a freed object leaves takes an object up to 15 bytes
 * larger (the largest of the same extent length), with no new page, where
 * with exact extents it would not fit (afm_zs_test_hole_reuse()). The pool
 * keeps its alignment when the parameter changes. Every object keeps its
 * bytes.
 */
static void afm_zs_test_align(struct kunit *test)
{
	const unsigned int *param = test->param_value, size = *param;
	const unsigned int hdr = afm_zs_header_bytes(), a = 16;
	const unsigned int ext = ALIGN(size + hdr, a), big = ext - hdr;
	struct afm_zs_hole_set hs = { .buf = afm_zs_buf(test) };
	unsigned long old = afm_zs_get_align();
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info hole, info;
	unsigned int i;

	KUNIT_EXPECT_EQ(test, afm_zs_set_align(0), -EINVAL);
	KUNIT_EXPECT_EQ(test, afm_zs_set_align(24), -EINVAL);
	KUNIT_EXPECT_EQ(test, afm_zs_set_align(128), -EINVAL);
	KUNIT_EXPECT_EQ(test, afm_zs_get_align(), old);
	KUNIT_ASSERT_EQ(test, afm_zs_set_align(a), 0);
	KUNIT_ASSERT_EQ(test,
			kunit_add_action_or_reset(test, afm_zs_restore_align,
						  (void *)old), 0);
	afm_zs_permille(test, 0);
	hs.ts = afm_zs_set(test, ARRAY_SIZE(hs.size));
	/* The pool keeps the alignment it was made with. */
	afm_zs_set_align(1);
	for (i = 0; i < 4; i++) {
		afm_zs_hole_put(test, &hs, i, size);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(hs.ts->pool, hs.ts->h[i],
						      &info), 0);
		KUNIT_EXPECT_EQ(test, info.offset, i * ext + hdr);
	}
	afm_zs_get_counters(hs.ts->pool, &before);
	KUNIT_EXPECT_EQ(test, before.pad_bytes, 4 * (ext - size - hdr));
	KUNIT_EXPECT_EQ(test, before.hole_bytes, 0);
	KUNIT_EXPECT_EQ(test, before.tail_bytes, AFM_ZS_SIZE - 4 * ext);

	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(hs.ts->pool, hs.ts->h[1], &hole),
			0);
	afm_zs_hole_free(&hs, 1);
	afm_zs_get_counters(hs.ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.hole_bytes, ext);
	KUNIT_EXPECT_EQ(test, after.pad_bytes, 3 * (ext - size - hdr));
	afm_zs_hole_put(test, &hs, 4, big);
	afm_zs_hole_expect_at(test, &hs, 4, &hole, 0);
	afm_zs_get_counters(hs.ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.hole_bytes, 0);
	KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 1);
	KUNIT_EXPECT_EQ(test, after.total_pages, before.total_pages);
	KUNIT_EXPECT_EQ(test, after.pad_bytes,
			3 * (ext - size - hdr) + ext - big - hdr);
	for (i = 0; i < ARRAY_SIZE(hs.size); i++)
		if (hs.ts->h[i])
			afm_zs_check(test, hs.ts->pool, hs.ts->h[i], i,
				     hs.size[i], hs.buf, i & 1);
	afm_zs_expect_consistent(test, hs.ts->pool);
}

/*
 * Holes merge both ways: of objects 0 to 5 back to back in one zspage, 1
 * freed, then 2 (it merges with the hole before it), then 4, then 3 (with
 * the holes on both sides) leave one hole of the four extents, which takes
 * an object as long as the four (up to a page) at 1's offset; freed, that
 * one merges back with the rest after it, if any. Then 5, the last, freed
 * gives its extent back to the tail together with the hole before it: no
 * hole is left, and the next object goes to 1's offset. Sizes whose four
 * extents fit one (AFM_ZS_MAX_EXT). Every object keeps its bytes.
 */
static const unsigned int afm_zs_merge_sizes[] = { 20, 100, 700, 1300, 2000 };

KUNIT_ARRAY_PARAM(afm_zs_merge, afm_zs_merge_sizes, afm_zs_hole_desc);

static void afm_zs_test_hole_merge(struct kunit *test)
{
	const unsigned int *param = test->param_value, size = *param;
	const unsigned int ext = size + afm_zs_header_bytes();
	struct afm_zs_hole_set hs = { .buf = afm_zs_buf(test) };
	static const unsigned int order[] = { 1, 2, 4, 3 };
	unsigned int i, nr, big, rest;
	struct afm_zs_obj_info hole;
	struct afm_zs_counters c;
	struct afm_pool *pool;

	afm_zs_permille(test, 0);
	hs.ts = afm_zs_set(test, ARRAY_SIZE(hs.size));
	afm_zs_quiet(hs.ts);
	pool = hs.ts->pool;
	for (i = 0; i < 6; i++)
		afm_zs_hole_put(test, &hs, i, size);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(pool, hs.ts->h[1], &hole), 0);

	for (i = 0; i < ARRAY_SIZE(order); i++) {
		afm_zs_hole_free(&hs, order[i]);
		afm_zs_get_counters(pool, &c);
		KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(pool, &nr), 0);
		/* After 1, 2: one hole; after 4: two; after 3: one. */
		KUNIT_EXPECT_EQ_MSG(test, nr, i == 2 ? 2 : 1, "freed %u",
				    order[i]);
		KUNIT_EXPECT_EQ(test, c.hole_recorded, (i + 1) * ext);
	}

	big = min(4 * ext, (unsigned int)PAGE_SIZE + afm_zs_header_bytes()) -
	      afm_zs_header_bytes();
	rest = 4 * ext - big - afm_zs_header_bytes();
	afm_zs_hole_put(test, &hs, 6, big);
	afm_zs_hole_expect_at(test, &hs, 6, &hole, 0);
	afm_zs_get_counters(pool, &c);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, rest >= 17 ? rest : 0);
	afm_zs_hole_free(&hs, 6);
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(pool, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 1);

	afm_zs_hole_free(&hs, 5);
	afm_zs_get_counters(pool, &c);
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(pool, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 0);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, 0);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, 0);
	afm_zs_hole_put(test, &hs, 7, size);
	afm_zs_hole_expect_at(test, &hs, 7, &hole, 0);
	for (i = 0; i < ARRAY_SIZE(hs.size); i++) {
		if (hs.ts->h[i])
			afm_zs_check(test, pool, hs.ts->h[i], i, hs.size[i],
				     hs.buf, i & 1);
	}
	afm_zs_expect_consistent(test, pool);
}

/*
 * Deferred frees (see "Deferred frees" in zspage_alloc.c): a free only
 * queues its extent, counted in the holes at once but off the index (an
 * object of its size goes to the tail, not into it), until
 * afm_zs_test_pend_max() frees are queued; the next free merges them all
 * (their holes on the index, one left queued). A zspage released while
 * extents of it are queued drops them (its pages go back, nothing of it
 * stays queued), and a compaction pass merges the queue before it picks
 * its victims, those of other zspages too. Every object keeps its bytes.
 */
static void afm_zs_test_deferred_free(struct kunit *test)
{
	const unsigned int size = 100, ext = size + afm_zs_header_bytes();
	const unsigned int max = afm_zs_test_pend_max(), n = 2 * max + 6;
	const unsigned int big = 1000;
	struct afm_zs_obj_info zero, first, info;
	struct afm_zs_counters c, before;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned int i, k;
	unsigned long *h;

	ts = afm_zs_set_filled(test, 2 * n, n, size, buf);
	h = ts->h;
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, h[0], &zero), 0);

	afm_free(ts->pool, h[1]);
	h[1] = 0;
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.pending, 1);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, ext);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, 0);
	h[n] = afm_test_malloc(test, ts->pool, size);
	afm_zs_put_pattern(test, ts->pool, h[n], n, size, buf, n);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, h[n], &info), 0);
	KUNIT_EXPECT_EQ(test, info.offset, zero.offset + n * ext);

	/* Odd slots: holes between live objects, none merges with another. */
	for (k = 1; k < max; k++) {
		afm_free(ts->pool, h[2 * k + 1]);
		h[2 * k + 1] = 0;
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.pending, max);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, 0);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, max * ext);
	afm_free(ts->pool, h[2 * max + 1]);
	h[2 * max + 1] = 0;
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.pending, 1);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, max * ext);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, (max + 1) * ext);
	before = c;
	h[n + 1] = afm_test_malloc(test, ts->pool, size);
	afm_zs_put_pattern(test, ts->pool, h[n + 1], n + 1, size, buf, n + 1);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.hole_reused, before.hole_reused + 1);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, (max - 1) * ext);
	/* The audit checks the queued extent, then merges it. */
	KUNIT_EXPECT_EQ(test, c.pending, 1);
	afm_zs_expect_consistent(test, ts->pool);

	/* Everything freed, extents still queued: the zspage is released. */
	for (i = 0; i < n + 2; i++) {
		if (!h[i])
			continue;
		afm_zs_get_counters(ts->pool, &c);
		afm_free(ts->pool, h[i]);
		h[i] = 0;
	}
	KUNIT_EXPECT_EQ(test, c.objects, 1);
	KUNIT_EXPECT_GT(test, c.pending, 0);
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.pending, 0);
	KUNIT_EXPECT_EQ(test, c.zspages, 0);
	KUNIT_EXPECT_EQ(test, c.data_pages, 0);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_EQ(test, afm_zs_test_flush(ts->pool), 0);

	/* Two zspages, the first left with a few objects: compaction. */
	k = min(2 * AFM_ZS_SIZE / big, 2 * n);
	for (i = 0; i < k; i++) {
		h[i] = afm_test_malloc(test, ts->pool, big);
		afm_zs_put_pattern(test, ts->pool, h[i], i, big, buf, i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, h[0], &first), 0);
	for (i = 0; i < k; i++) {
		if (afm_zs_obj_info(ts->pool, h[i], &info) ||
		    info.zspage_id != first.zspage_id || i % 8 == 0)
			continue;
		afm_free(ts->pool, h[i]);
		h[i] = 0;
	}
	/* And queued frees in the second, which is no victim. */
	for (i = k - 2; i > k - 8; i -= 2) {
		afm_free(ts->pool, h[i]);
		h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_GE(test, c.pending, 3);
	afm_compact(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.pending, 0);
	KUNIT_EXPECT_GT(test, c.passes, 0);
	for (i = 0; i < k; i++)
		if (h[i])
			KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool,
							     h[i], i, big,
							     buf, i & 1));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A new pool of @n handles holding objects of @sizes (@nr of them, each
 * with its pattern) back to back from the start of a new zspage; skipped
 * unless extents are exact (zspage_align 1). *@first: where the first is.
 */
static struct afm_test_set *afm_zs_set_sized(struct kunit *test,
					     unsigned int n,
					     const unsigned int *sizes,
					     unsigned int nr, void *buf,
					     struct afm_zs_obj_info *first)
{
	struct afm_test_set *ts = afm_zs_set_filled(test, n, 0, 0, buf);
	unsigned int i;

	if (afm_zs_get_align() > 1)
		kunit_skip(test, "sizes assume zspage_align 1");
	for (i = 0; i < nr; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, sizes[i]);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, sizes[i], buf,
				   i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], first), 0);
	KUNIT_ASSERT_EQ(test, first->offset, afm_zs_header_bytes());
	return ts;
}

/*
 * Skip unless two indexed holes can lie side by side in a zspage: only
 * when together they pass AFM_ZS_MAX_EXT (else they merge), and only below
 * a live extent (a free at the fill offset gives the holes below it back
 * to the tail), so that it takes AFM_ZS_MAX_EXT + 1 bytes for the two and
 * the extent of a one-byte object after them (8198 bytes with 4 KiB
 * pages). With 16 KiB pages a zspage has AFM_ZS_MAX_EXT + 1 bytes (32
 * KiB): indexed holes never lie side by side there, and no rest of a hole
 * ever joins the one after it.
 */
static void afm_zs_need_two_holes(struct kunit *test)
{
	if (afm_zs_max_extent() + 1 + afm_zs_header_bytes() + 1 > AFM_ZS_SIZE)
		kunit_skip(test, "no two indexed holes side by side in a zspage of %lu bytes",
			   AFM_ZS_SIZE);
}

/*
 * The rest of a hole an object takes joins the indexed hole after it when
 * the two fit one extent: objects B and C (96 bytes short of half of
 * AFM_ZS_MAX_EXT + 1: 4000 bytes with 4 KiB pages), D (1000 bytes shorter:
 * 3000) and E (100) back to back in a new zspage; C and D freed make one
 * hole (7010 bytes); B freed stays a hole of its own (with C and D it
 * would pass AFM_ZS_MAX_EXT: 4005 + 7010 > 8191). An object 100 bytes
 * shorter than B (3900) then goes into B's hole, and what it leaves of it
 * (100 bytes) and the hole of C and D become one hole on the index (7110
 * bytes; the audit finds no two indexed holes side by side that fit one
 * extent). Skipped where a zspage holds no two indexed holes side by side
 * (afm_zs_need_two_holes(): 16 KiB pages).
 */
static void afm_zs_test_rest_join(struct kunit *test)
{
	const unsigned int half = (afm_zs_max_extent() + 1) / 2;
	const unsigned int sizes[] = { half - 96, half - 96, half - 1096, 100 };
	const unsigned int hdr = afm_zs_header_bytes(), size = sizes[0] - 100;
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info first, obj;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned int i, total = 0;
	unsigned long h;

	afm_zs_need_two_holes(test);
	/* B, C, D and E in one zspage. */
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		total += sizes[i] + hdr;
	KUNIT_ASSERT_LE(test, total, AFM_ZS_SIZE);
	ts = afm_zs_set_sized(test, 8, sizes, ARRAY_SIZE(sizes), buf, &first);
	/* C, then D (merged with C), then B (kept apart), one at a time. */
	for (i = 1; i <= 3; i++) {
		afm_free(ts->pool, ts->h[i % 3]);
		ts->h[i % 3] = 0;
		afm_zs_test_flush(ts->pool);
	}
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_EQ(test, before.hole_recorded,
			(unsigned long)(sizes[0] + sizes[1] + sizes[2] +
					3 * hdr));
	KUNIT_ASSERT_EQ(test, afm_zs_test_audit(ts->pool, &before, &after), 0);
	afm_zs_get_counters(ts->pool, &before);

	h = afm_test_malloc(test, ts->pool, size);
	afm_zs_put_pattern(test, ts->pool, h, 9, size, buf, 0);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, h, &obj), 0);
	KUNIT_EXPECT_EQ(test, obj.zspage_id, first.zspage_id);
	KUNIT_EXPECT_EQ(test, obj.offset, hdr);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.hole_reused, before.hole_reused + 1);
	KUNIT_EXPECT_EQ(test, after.rest_joined, before.rest_joined + 1);
	KUNIT_EXPECT_EQ(test, after.hole_recorded,
			before.hole_recorded - size - hdr);
	/* Not two indexed holes side by side that fit one extent. */
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, h, 9, size, buf,
					     true));
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[3], 3, 100,
					     buf, false));
	afm_free(ts->pool, h);
}

/*
 * A freed object at the top of its zspage takes back into the tail every
 * indexed hole right below it, also two side by side (kept apart since
 * together they pass AFM_ZS_MAX_EXT, 8191 bytes with 4 KiB pages):
 * objects X (100 bytes), A and B (PAGE_SIZE each, or as long as X and T
 * leave them in one zspage: 16274 bytes with 16 KiB pages) and T (100)
 * back to back in a new zspage; A and B freed make two holes (4101 bytes
 * each), or one where they fit one extent (32558 bytes with 16 KiB pages,
 * where AFM_ZS_MAX_EXT is 32767: no two indexed holes lie side by side,
 * see afm_zs_need_two_holes()); T freed leaves the fill offset at the end
 * of X.
 */
static void afm_zs_test_tail_takes_holes(struct kunit *test)
{
	const unsigned int hdr = afm_zs_header_bytes();
	const unsigned int big = min_t(unsigned int, PAGE_SIZE,
				       (AFM_ZS_SIZE - 2 * (100 + hdr)) / 2 -
				       hdr);
	const unsigned int sizes[] = { 100, big, big, 100 };
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info first, last;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned int i, nr;

	ts = afm_zs_set_sized(test, 4, sizes, ARRAY_SIZE(sizes), buf, &first);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[3], &last), 0);
	KUNIT_ASSERT_EQ(test, last.zspage_id, first.zspage_id);
	for (i = 1; i <= 2; i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
		afm_zs_test_flush(ts->pool);
	}
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_EQ(test, before.hole_recorded,
			(unsigned long)(2 * (big + hdr)));
	KUNIT_EXPECT_EQ(test, afm_zs_test_bad_holes(ts->pool, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr,
			2 * (big + hdr) > afm_zs_max_extent() ? 2 : 1);

	afm_free(ts->pool, ts->h[3]);
	ts->h[3] = 0;
	afm_zs_test_flush(ts->pool);
	afm_zs_get_counters(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.hole_recorded, 0);
	KUNIT_EXPECT_EQ(test, after.hole_bytes, 0);
	KUNIT_EXPECT_EQ(test, after.tail_bytes - before.tail_bytes,
			(unsigned long)(2 * (big + hdr) + 100 + hdr));
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[0], 0, 100,
					     buf, true));
}

/*
 * Indexed holes leave the index with their zspage: when it is released
 * (its id is then reused for another zspage) none of its holes is left on
 * the index and the next allocation is not put into it; after compaction
 * every hole on the index is still free bytes of a live zspage, and
 * allocations into them keep every other object intact.
 */
static void afm_zs_test_hole_forget(struct kunit *test)
{
	struct afm_zs_counters before, after;
	struct afm_zs_obj_info first, info;
	unsigned int i, nr, n = 3 * AFM_ZS_SIZE / 1000 + 3;
	struct afm_test_set *ts;
	void *buf = afm_zs_buf(test);
	unsigned long *h;

	ts = afm_zs_set_filled(test, n + 8, n, 1000, buf);
	h = ts->h;
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, h[0], &first), 0);

	/* Holes in the first zspage, then all of it freed: released. */
	for (i = 1; i < 6; i += 2) {
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

/*
 * Random overwrites (zram as swap, fio on zram): each object in turn of a
 * random choice is replaced by one of a new random size, the new one
 * allocated before the old one is freed (zram's order), with automatic
 * compaction off and the shrinker away, so that only hole reuse keeps the
 * pool dense: after eight rounds of the pool the holes (slack in extents
 * included) must stay under AFM_ZS_OW_MAX_PM per mille of the live bytes
 * (a cache of recent holes left 265-485; freed extents merged only with
 * the hole after them 53-105, both ways 36-70). Then the writes stop and
 * the rest run (driven) must bring the pool to no more pages than zsmalloc's
 * data pages after the same sequence (its metadata not counted). For sizes
 * close to each other (fio's buffers) and spread wide (zram's). Every
 * object keeps its bytes.
 */
#define AFM_ZS_OW_OBJS		2048
#define AFM_ZS_OW_ROUNDS	8
#define AFM_ZS_OW_MAX_PM	80

struct afm_zs_ow_case {
	unsigned int lo, hi;
};

static const struct afm_zs_ow_case afm_zs_ow_cases[] = {
	{ 2000, 2200 }, { 30, 4000 }, { 100, 1000 },
};

static void afm_zs_ow_desc(const struct afm_zs_ow_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%u-%u bytes", c->lo, c->hi);
}

KUNIT_ARRAY_PARAM(afm_zs_ow, afm_zs_ow_cases, afm_zs_ow_desc);

/*
 * The same sequence of sizes in a zsmalloc pool (allocation and free only):
 * its data pages at the end, the last ones it held, or 0 without zsmalloc.
 * Pages its shrinker gave back meanwhile (the debug guest runs drop_caches
 * in a loop) are counted as held: the comparison is with what allocation
 * and free leave, whenever the kernel's reclaim happens to run.
 */
static unsigned long afm_zs_ow_zsmalloc(struct kunit *test,
					const struct afm_zs_ow_case *oc)
{
	unsigned long pages = 0;
#if IS_REACHABLE(CONFIG_ZSMALLOC)
	unsigned int i, k, sz, seed = 1;
	struct zs_pool_stats st = { };
	struct zs_pool *zp;
	unsigned long *h;

	h = kunit_kcalloc(test, AFM_ZS_OW_OBJS, sizeof(*h), GFP_KERNEL);
	zp = zs_create_pool("afm-kunit-ow");
	if (!h || !zp)
		kunit_skip(test, "no zsmalloc pool");
	for (k = 0; k <= AFM_ZS_OW_ROUNDS * AFM_ZS_OW_OBJS; k++) {
		unsigned long n;

		i = k < AFM_ZS_OW_OBJS ? k : (seed >> 8) % AFM_ZS_OW_OBJS;
		seed = seed * 1103515245 + 12345;
		sz = oc->lo + (seed >> 8) % (oc->hi - oc->lo + 1);
		seed = seed * 1103515245 + 12345;
		n = zs_malloc(zp, sz, GFP_KERNEL);
		if (IS_ERR_VALUE(n)) {
			/* Not the whole sequence: nothing to compare with. */
			for (i = 0; i < AFM_ZS_OW_OBJS; i++)
				if (h[i])
					zs_free(zp, h[i]);
			zs_destroy_pool(zp);
			kunit_skip(test, "zsmalloc out of memory: %ld", (long)n);
		}
		if (h[i])
			zs_free(zp, h[i]);
		h[i] = n;
	}
	zs_pool_stats(zp, &st);
	pages = zs_get_total_pages(zp) +
		atomic_long_read(&st.pages_compacted);
	for (i = 0; i < AFM_ZS_OW_OBJS; i++) {
		if (h[i])
			zs_free(zp, h[i]);
	}
	zs_destroy_pool(zp);
#endif
	return pages;
}

static void afm_zs_test_overwrite(struct kunit *test)
{
	const struct afm_zs_ow_case *oc = test->param_value;
	struct afm_zs_counters c;
	struct afm_test_set *ts;
	unsigned int *size, *key, i, k, seed = 1;
	void *buf = afm_zs_buf(test);
	unsigned long h, pm, zpages;

	/* zsmalloc first: skipped, if it must be, before any expectation. */
	zpages = afm_zs_ow_zsmalloc(test, oc);
	if (!zpages)
		kunit_skip(test, "no zsmalloc to compare with");
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, AFM_ZS_OW_OBJS);
	afm_zs_quiet(ts);
	size = kunit_kcalloc(test, AFM_ZS_OW_OBJS, sizeof(*size), GFP_KERNEL);
	key = kunit_kcalloc(test, AFM_ZS_OW_OBJS, sizeof(*key), GFP_KERNEL);
	if (!size || !key)
		kunit_skip(test, "no memory for the sizes");
	for (k = 0; k <= AFM_ZS_OW_ROUNDS * AFM_ZS_OW_OBJS; k++) {
		i = k < AFM_ZS_OW_OBJS ? k : (seed >> 8) % AFM_ZS_OW_OBJS;
		seed = seed * 1103515245 + 12345;
		size[i] = oc->lo + (seed >> 8) % (oc->hi - oc->lo + 1);
		seed = seed * 1103515245 + 12345;
		h = afm_test_malloc(test, ts->pool, size[i]);
		afm_zs_put_pattern(test, ts->pool, h, k, size[i], buf, k);
		if (ts->h[i])
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = h;
		key[i] = k;
	}
	afm_zs_get_counters(ts->pool, &c);
	pm = c.hole_bytes * 1000 / c.live_bytes;
	kunit_info(test, "writing: %lu live bytes, %lu in holes (%lu per mille), %lu in tails, %lu on the hole index, %lu objects placed in holes, %lu pages; zsmalloc: %lu data pages\n",
		   c.live_bytes, c.hole_bytes, pm, c.tail_bytes, c.hole_recorded,
		   c.hole_reused, c.total_pages, zpages);
	KUNIT_EXPECT_LE(test, pm, AFM_ZS_OW_MAX_PM);

	/* At rest: the rest run (trigger 1 per mille, driven). */
	afm_zs_set_auto_permille(1);
	afm_free(ts->pool, afm_test_malloc(test, ts->pool, oc->lo));
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	kunit_info(test, "at rest: %lu in holes (%lu per mille), %lu pages; %lu objects moved\n",
		   c.hole_bytes, c.hole_bytes * 1000 / c.live_bytes,
		   c.total_pages, c.moved);
	KUNIT_EXPECT_LE(test, c.total_pages, zpages);
	for (i = 0; i < AFM_ZS_OW_OBJS; i++)
		afm_zs_check(test, ts->pool, ts->h[i], key[i], size[i], buf,
			     i & 1);
	afm_zs_expect_consistent(test, ts->pool);
}

/* What frees the frees left to the lock holder in afm_zs_test_rfree(). */
enum afm_zs_rfree_by { AFM_ZS_RFREE_BY_MALLOC, AFM_ZS_RFREE_BY_FREE,
		       AFM_ZS_RFREE_BY_WORK };

static const enum afm_zs_rfree_by afm_zs_rfree_bys[] = {
	AFM_ZS_RFREE_BY_MALLOC, AFM_ZS_RFREE_BY_FREE, AFM_ZS_RFREE_BY_WORK,
};

static void afm_zs_rfree_desc(const enum afm_zs_rfree_by *by, char *desc)
{
	static const char * const names[] = { "malloc", "free", "work" };

	strscpy(desc, names[*by], KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_zs_rfree, afm_zs_rfree_bys, afm_zs_rfree_desc);

/*
 * Frees that find the pool lock held (another CPU's malloc or free, or
 * compaction, holds it; here afm_zs_test_busy()) do not wait: each of
 * afm_zs_test_rfree_max() frees returns at once, its object still live
 * while the lock is held. Once it is let go, the next malloc, the next free or, with
 * neither, the shard's worker frees them: each handle gone, the counts
 * down by them, the other objects' bytes intact, the pool consistent.
 */
static void afm_zs_test_rfree(struct kunit *test)
{
	const enum afm_zs_rfree_by *by = test->param_value;
	const unsigned int size = 300, max = afm_zs_test_rfree_max();
	const unsigned int n = max + 2;
	struct afm_zs_counters before, c;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned int i, live;
	unsigned long *h;

	ts = afm_zs_set_filled(test, n + 1, n, size, buf);
	h = ts->h;
	afm_zs_get_counters(ts->pool, &before);
	KUNIT_ASSERT_EQ(test, before.objects, n);

	afm_zs_test_busy(ts->pool, true);
	for (i = 0; i < max; i++)
		afm_free(ts->pool, h[i]);
	/* Returned without the lock: nothing freed yet. */
	live = 0;
	for (i = 0; i < max; i++)
		live += afm_obj_size(ts->pool, h[i]) == size;
	afm_zs_get_counters(ts->pool, &c);
	afm_zs_test_busy(ts->pool, false);
	KUNIT_EXPECT_EQ(test, live, max);
	KUNIT_EXPECT_EQ(test, c.objects, n);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, max);

	switch (*by) {
	case AFM_ZS_RFREE_BY_MALLOC:
		h[n] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, h[n], n, size, buf, n);
		live = n - max + 1;
		break;
	case AFM_ZS_RFREE_BY_FREE:
		afm_free(ts->pool, h[n - 1]);
		h[n - 1] = 0;
		live = n - max - 1;
		break;
	case AFM_ZS_RFREE_BY_WORK:
		afm_zs_flush_work(ts->pool);
		live = n - max;
		break;
	}
	/* Gone (the new object may have one of their handles). */
	for (i = 0; i < max; i++) {
		if (h[i] != h[n])
			KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, h[i]), 0);
		h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.objects, live);
	KUNIT_EXPECT_EQ(test, c.live_bytes, live * size);
	KUNIT_EXPECT_EQ(test, c.rfreed - before.rfreed, max);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 0);
	for (i = 0; i <= n; i++)
		if (h[i])
			KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool,
							     h[i], i, size,
							     buf, i & 1));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Bad frees left to the lock holder: a second free of a handle, a free of
 * a pinned (mapped) object and a foreign value, made while the lock is
 * held, return at once like any other free. The holder's drain reports
 * each (one misuse counted each; its warnings, printed once per boot, are
 * its own, not afm_zs_test_bad_handles()' or afm_zs_test_compact_pinned()'
 * whose brackets need theirs) and changes nothing:
 * the counts hold, the pinned object stays byte for byte, and the freed
 * handle's slot in the handle table is not given out twice.
 */
static void afm_zs_test_rfree_bad(struct kunit *test)
{
	const unsigned int size = 300, n = 3;
	struct afm_zs_counters before, c;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned long misuses, h;

	ts = afm_zs_set_filled(test, n + 1, n, size, buf);
	/* A handle freed (directly) before the lock is taken. */
	h = ts->h[n - 1];
	afm_free(ts->pool, h);
	ts->h[n - 1] = 0;
	KUNIT_ASSERT_TRUE(test, afm_zs_test_pin(ts->pool, ts->h[0]));
	afm_zs_get_counters(ts->pool, &before);

	afm_test_expect_warnings(test);
	kunit_info(test, "expect afmalloc invalid-handle and free-of-mapped-object warnings, left to the lock holder\n");
	misuses = afm_test_misuse_count();
	afm_zs_test_busy(ts->pool, true);
	afm_free(ts->pool, h);
	afm_free(ts->pool, ts->h[0]);
	afm_free(ts->pool, 1UL << 40);
	afm_zs_get_counters(ts->pool, &c);
	afm_zs_test_busy(ts->pool, false);
	/* Left in the slots, nothing reported yet. */
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 3);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses);

	afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 3);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 0);
	KUNIT_EXPECT_EQ(test, c.rfreed - before.rfreed, 3);
	KUNIT_EXPECT_EQ(test, c.objects, before.objects);
	KUNIT_EXPECT_EQ(test, c.live_bytes, before.live_bytes);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[0]), size);
	afm_zs_test_unpin(ts->pool, ts->h[0]);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[0], 0,
					     size, buf, false));
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[1], 1,
					     size, buf, true));
	/* The two next objects get two handles: the freed one once. */
	ts->h[n - 1] = afm_test_malloc(test, ts->pool, size);
	ts->h[n] = afm_test_malloc(test, ts->pool, size);
	KUNIT_EXPECT_NE(test, ts->h[n - 1], ts->h[n]);
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A free with hardirqs off (zram's, from the swap slots cache, a batch at
 * a time) that gets the pool lock frees, of the frees left to the lock
 * holder, only afm_zs_test_rfree_irqs_off() besides its own (each may
 * release a zspage); the rest wait for the next holder or the shard's
 * worker, which frees them all. The worker is held back while the test
 * is busy, so what the free took is counted exactly.
 */
static void afm_zs_test_rfree_hardirqs_off(struct kunit *test)
{
	const unsigned int size = 300, max = afm_zs_test_rfree_max();
	const unsigned int cap = afm_zs_test_rfree_irqs_off(), n = max + 2;
	struct afm_zs_counters before, c;
	void *buf = afm_zs_buf(test);
	struct afm_test_set *ts;
	unsigned long flags;
	unsigned int i;

	KUNIT_ASSERT_LT(test, cap, max);
	ts = afm_zs_set_filled(test, n, n, size, buf);
	afm_zs_get_counters(ts->pool, &before);
	afm_zs_test_busy(ts->pool, true);
	for (i = 0; i < max; i++)
		afm_free(ts->pool, ts->h[i]);
	/* Every slot taken: this free takes the lock. */
	local_irq_save(flags);
	afm_free(ts->pool, ts->h[max]);
	local_irq_restore(flags);
	afm_zs_get_counters(ts->pool, &c);
	afm_zs_test_busy(ts->pool, false);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, max - cap);
	KUNIT_EXPECT_EQ(test, c.rfreed - before.rfreed, cap);
	KUNIT_EXPECT_EQ(test, c.objects, n - cap - 1);

	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.rfree_waiting, 0);
	KUNIT_EXPECT_EQ(test, c.rfreed - before.rfreed, max);
	KUNIT_EXPECT_EQ(test, c.objects, n - max - 1);
	KUNIT_EXPECT_EQ(test, c.live_bytes, (n - max - 1) * size);
	for (i = 0; i <= max; i++) {
		KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[i]), 0);
		ts->h[i] = 0;
	}
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[n - 1],
					     n - 1, size, buf, true));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * A zspage released with a corrupted header below an indexed hole (its
 * extent walk stops there, with a warning) still takes that hole's record
 * off the hole index: none is left naming a freed zspage's id, which the
 * next zspage may take and an allocation would then follow into it.
 */
static void afm_zs_test_release_bad_extent(struct kunit *test)
{
	const unsigned int size = 500, hdr = afm_zs_header_bytes(), n = 4;
	struct afm_test_set *ts = afm_zs_set(test, n);
	struct afm_zs_obj_info first, info;
	void *buf = afm_zs_buf(test);
	struct afm_zs_counters c;
	struct page *page;
	unsigned int i;
	u8 *p;

	afm_zs_permille(test, 0);
	/* No free left to a migration's hold of the lock: counted below. */
	afm_zs_quiet(ts);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[0], &first), 0);
	for (i = 1; i < n; i++) {
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		if (info.shard != first.shard ||
		    info.zspage_id != first.zspage_id)
			kunit_skip(test, "objects not in one zspage");
	}
	KUNIT_ASSERT_GE(test, offset_in_page(first.offset), hdr);
	afm_free(ts->pool, ts->h[1]);
	ts->h[1] = 0;
	afm_zs_test_flush(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_ASSERT_EQ(test, c.hole_recorded, size + hdr);

	/*
	 * The first object's header, below the indexed hole, zeroed (the
	 * page reference keeps migration from moving it meanwhile).
	 */
	page = afm_zs_test_get_page(ts->pool, ts->h[0]);
	KUNIT_ASSERT_NOT_NULL(test, page);
	p = kmap_local_page(page);
	memset(p + offset_in_page(first.offset) - hdr, 0, hdr);
	kunmap_local(p);
	put_page(page);
	afm_test_expect_warnings(test);
	kunit_info(test, "expect an afmalloc bad-extent warning\n");
	for (i = 0; i < n; i++) {
		if (ts->h[i])
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.objects, 0);
	KUNIT_EXPECT_EQ(test, c.hole_recorded, 0);
	afm_zs_expect_consistent(test, ts->pool);

	/* The pool goes on: new objects keep their bytes. */
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, size, buf, i);
	}
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i],
						     i, size, buf, true));
	afm_zs_expect_consistent(test, ts->pool);
}

/*
 * Whole pages that nothing fits get a solo zspage each (see "Solo zspages"
 * in zspage_alloc.c; with 16 KiB pages by default, where two of them with
 * their headers do not fit one zspage and each took two pages): n of them
 * hold n data pages, their data at offset 0, no hole, tail or padding;
 * one a little shorter than a page gets one too, the rest of it padding;
 * they read back byte for byte; a small object opens a zspage of its own;
 * a whole page that a tail fits goes there with its header, as any
 * object; compaction finds nothing to take; each free gives its page
 * back, and the last one every page.
 */
static void afm_zs_test_solo(struct kunit *test)
{
	const unsigned int n = 48, small = 100, hdr = afm_zs_header_bytes();
	struct afm_zs_obj_info info;
	struct afm_test_set *ts;
	struct afm_zs_counters c;
	void *buf = afm_zs_buf(test);
	unsigned long pages;
	unsigned int i;

	afm_zs_solo_pages(test);
	afm_zs_permille(test, 0);
	ts = afm_zs_set(test, n + 2);
	afm_zs_quiet(ts);
	for (i = 0; i < n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, PAGE_SIZE);
		afm_zs_put_pattern(test, ts->pool, ts->h[i], i, PAGE_SIZE, buf,
				   i);
		KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[i], &info),
				0);
		KUNIT_EXPECT_EQ(test, info.offset, 0);
	}
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.solo_objs, n);
	KUNIT_EXPECT_EQ(test, c.zspages, n);
	KUNIT_EXPECT_EQ(test, c.data_pages, n);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, 0);
	KUNIT_EXPECT_EQ(test, c.tail_bytes, 0);
	KUNIT_EXPECT_EQ(test, c.pad_bytes, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
			n + c.table_pages + c.desc_pages + c.hole_pages +
			c.dir_pages);
	afm_zs_expect_consistent(test, ts->pool);

	/* A little less than a page: a solo zspage, the rest padding. */
	ts->h[n] = afm_test_malloc(test, ts->pool, PAGE_SIZE - 2);
	afm_zs_put_pattern(test, ts->pool, ts->h[n], n, PAGE_SIZE - 2, buf, n);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.solo_objs, n + 1);
	KUNIT_EXPECT_EQ(test, c.data_pages, n + 1);
	KUNIT_EXPECT_EQ(test, c.pad_bytes, 2);
	KUNIT_EXPECT_EQ(test, c.hole_bytes, 0);
	afm_zs_expect_consistent(test, ts->pool);
	KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[n], n,
					     PAGE_SIZE - 2, buf, true));
	afm_free(ts->pool, ts->h[n]);
	ts->h[n] = 0;
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.solo_objs, n);
	KUNIT_EXPECT_EQ(test, c.data_pages, n);
	KUNIT_EXPECT_EQ(test, c.pad_bytes, 0);

	/* A small object opens a zspage; a whole page then fits its tail. */
	ts->h[n] = afm_test_malloc(test, ts->pool, small);
	afm_zs_put_pattern(test, ts->pool, ts->h[n], n, small, buf, n);
	ts->h[n + 1] = afm_test_malloc(test, ts->pool, PAGE_SIZE);
	afm_zs_put_pattern(test, ts->pool, ts->h[n + 1], n + 1, PAGE_SIZE,
			   buf, n + 1);
	KUNIT_ASSERT_EQ(test, afm_zs_obj_info(ts->pool, ts->h[n + 1], &info),
			0);
	KUNIT_EXPECT_EQ(test, info.offset, small + 2 * hdr);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.solo_objs, n);
	KUNIT_EXPECT_EQ(test, c.data_pages, n + AFM_ZS_PAGES);

	KUNIT_EXPECT_EQ(test, afm_compact(ts->pool), 0);
	for (i = 0; i < n + 2; i++)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i], i,
						     i == n ? small : PAGE_SIZE,
						     buf, i % 2));
	afm_zs_expect_consistent(test, ts->pool);

	pages = afm_get_total_pages(ts->pool);
	for (i = 0; i < n; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_flush_work(ts->pool);
	afm_zs_get_counters(ts->pool, &c);
	KUNIT_EXPECT_EQ(test, c.solo_objs, n / 2);
	KUNIT_EXPECT_EQ(test, c.data_pages, n / 2 + AFM_ZS_PAGES);
	KUNIT_EXPECT_LE(test, afm_get_total_pages(ts->pool), pages - n / 2);
	afm_zs_expect_consistent(test, ts->pool);
	for (i = 1; i < n + 2; i += 2)
		KUNIT_EXPECT_TRUE(test, afm_zs_check(test, ts->pool, ts->h[i], i,
						     PAGE_SIZE, buf, false));
	for (i = 0; i < n + 2; i++) {
		if (ts->h[i])
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
}

static struct kunit_case afm_zspage_alloc_test_cases[] = {
	KUNIT_CASE(afm_zs_test_alloc_failure),
	KUNIT_CASE(afm_zs_test_hole_nomem),
	KUNIT_CASE_PARAM(afm_zs_test_hole_reuse, afm_zs_hole_gen_params),
	KUNIT_CASE_PARAM(afm_zs_test_align, afm_zs_hole_gen_params),
	KUNIT_CASE_PARAM(afm_zs_test_hole_merge, afm_zs_merge_gen_params),
	KUNIT_CASE(afm_zs_test_rest_join),
	KUNIT_CASE(afm_zs_test_tail_takes_holes),
	KUNIT_CASE(afm_zs_test_hole_forget),
	KUNIT_CASE(afm_zs_test_deferred_free),
	KUNIT_CASE_PARAM(afm_zs_test_rfree, afm_zs_rfree_gen_params),
	KUNIT_CASE(afm_zs_test_rfree_bad),
	KUNIT_CASE(afm_zs_test_rfree_hardirqs_off),
	KUNIT_CASE(afm_zs_test_release_bad_extent),
	KUNIT_CASE(afm_zs_test_solo),
	KUNIT_CASE_PARAM_ATTR(afm_zs_test_overwrite, afm_zs_ow_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_suite afm_zspage_alloc_test_suite = {
	.name = "afmalloc_zspage_alloc",
	.test_cases = afm_zspage_alloc_test_cases,
};

kunit_test_suite(afm_zspage_alloc_test_suite);
