// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the afmalloc slab store (mm/slab_store.c): chunk
 * decomposition, chunk placement, exact page accounting, allocation
 * failure unwinding, gfp masking, handle checks and the exact, lock-free
 * count of the tracker's xarray nodes.
 */

#include <kunit/test.h>
#include <linux/debug_locks.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/xarray.h>

#include "afm_test.h"

/* The cost model the store must minimise, computed independently. */
static unsigned int afm_test_cost(unsigned int sum)
{
	return sum + sizeof(struct afm_desc) + hweight32(sum) * sizeof(void *);
}

/*
 * Every size: the chunks are distinct powers of two from AFM_MIN_CHUNK to
 * PAGE_SIZE, largest first, summing to at least the size; power-of-two
 * sizes are one chunk of that size; no other sum at or above the size (in
 * AFM_MIN_CHUNK steps) costs fewer bytes.
 */
static void afm_test_decompose(struct kunit *test)
{
	unsigned int chunks[AFM_MAX_CHUNKS + 1];
	unsigned int size, i, nr, sum, r, errors = 0;

	for (size = 1; size <= PAGE_SIZE && errors < 5; size++) {
		nr = afm_slab_decompose(size, chunks);
		if (nr < 1 || nr > AFM_MAX_CHUNKS) {
			KUNIT_FAIL(test, "size %u: %u chunks", size, nr);
			errors++;
			continue;
		}
		sum = 0;
		for (i = 0; i < nr; i++) {
			if (!is_power_of_2(chunks[i]) ||
			    chunks[i] < AFM_MIN_CHUNK || chunks[i] > PAGE_SIZE ||
			    (i && chunks[i] >= chunks[i - 1])) {
				KUNIT_FAIL(test, "size %u: bad chunk %u (#%u)",
					   size, chunks[i], i);
				errors++;
			}
			sum += chunks[i];
		}
		if (sum < size) {
			KUNIT_FAIL(test, "size %u: chunks sum to %u", size, sum);
			errors++;
		}
		if (size >= AFM_MIN_CHUNK && is_power_of_2(size)) {
			if (nr != 1 || chunks[0] != size) {
				KUNIT_FAIL(test, "size %u: not a single chunk",
					   size);
				errors++;
			}
			continue;
		}
		for (r = round_up(size, AFM_MIN_CHUNK); r <= PAGE_SIZE;
		     r += AFM_MIN_CHUNK) {
			if (afm_test_cost(r) < afm_test_cost(sum)) {
				KUNIT_FAIL(test, "size %u: %u costs %u, %u costs %u",
					   size, sum, afm_test_cost(sum), r,
					   afm_test_cost(r));
				errors++;
				break;
			}
		}
	}
	KUNIT_EXPECT_EQ(test, errors, 0);

	/* The RFC's example. */
	nr = afm_slab_decompose(400, chunks);
	KUNIT_EXPECT_EQ(test, nr, 3);
	KUNIT_EXPECT_EQ(test, chunks[0], 256);
	KUNIT_EXPECT_EQ(test, chunks[1], 128);
	KUNIT_EXPECT_EQ(test, chunks[2], 16);
}

/*
 * Chunks of live objects are naturally aligned linear-map addresses, as
 * the decomposition says, and a direct handle encodes its chunk.
 */
static void afm_test_chunk_layout(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 1);
	unsigned int want[AFM_MAX_CHUNKS + 1];
	void *chunk[AFM_MAX_CHUNKS + 1];
	unsigned int size, i, nr;

	for (size = 1; size <= PAGE_SIZE; size++) {
		ts->h[0] = afm_test_malloc(test, ts->pool, size);
		nr = afm_slab_obj_chunks(ts->pool, ts->h[0], chunk);
		KUNIT_ASSERT_EQ_MSG(test, nr, afm_slab_decompose(size, want),
				    "size %u", size);
		for (i = 0; i < nr; i++) {
			KUNIT_EXPECT_TRUE(test, virt_addr_valid(chunk[i]));
			KUNIT_EXPECT_TRUE_MSG(test,
					      IS_ALIGNED((unsigned long)chunk[i], want[i]),
					      "size %u chunk %u at %p", size,
					      want[i], chunk[i]);
		}
		if (afm_handle_is_direct(ts->h[0]))
			KUNIT_EXPECT_EQ(test, (unsigned long)chunk[0],
					ts->h[0] & ~(unsigned long)(size - 1));
		afm_free(ts->pool, ts->h[0]);
		ts->h[0] = 0;
	}
	/* A freed object has no chunks. */
	ts->h[0] = afm_test_malloc(test, ts->pool, 300);
	afm_free(ts->pool, ts->h[0]);
	KUNIT_EXPECT_EQ(test, afm_slab_obj_chunks(ts->pool, ts->h[0], chunk), 0);
	ts->h[0] = 0;
}

static int afm_test_cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/*
 * The pages of all distinct folios holding the pool's live chunks and
 * descriptors, computed from the objects themselves.
 */
static unsigned long afm_test_expected_pages(struct kunit *test,
					     struct afm_test_set *ts)
{
	unsigned long *pfn, pages = 0;
	void *chunk[AFM_MAX_CHUNKS + 1];
	unsigned int i, k, nr, n = 0;

	pfn = kunit_kcalloc(test, ts->n * (AFM_MAX_CHUNKS + 1), sizeof(*pfn),
			    GFP_KERNEL);
	afm_test_need(test, pfn);
	for (i = 0; i < ts->n; i++) {
		if (!ts->h[i])
			continue;
		nr = afm_slab_obj_chunks(ts->pool, ts->h[i], chunk);
		KUNIT_ASSERT_GT(test, nr, 0);
		for (k = 0; k < nr; k++)
			pfn[n++] = folio_pfn(virt_to_folio(chunk[k]));
		if (!afm_handle_is_direct(ts->h[i]))
			pfn[n++] = folio_pfn(virt_to_folio((void *)ts->h[i]));
	}
	sort(pfn, n, sizeof(*pfn), afm_test_cmp_ulong, NULL);
	for (i = 0; i < n; i++) {
		if (!i || pfn[i] != pfn[i - 1])
			pages += folio_nr_pages(pfn_folio(pfn[i]));
	}
	kunit_kfree(test, pfn);
	return pages;
}

/* afm_get_total_pages() is exact: the pages of the folios in use. */
static void afm_test_page_accounting(struct kunit *test)
{
	const unsigned int n = 600;
	struct afm_test_set *ts = afm_test_set(test, n);
	unsigned int i;

	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);

	ts->h[0] = afm_test_malloc(test, ts->pool, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 1);
	ts->h[1] = afm_test_malloc(test, ts->pool, 16);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
			1 + folio_nr_pages(virt_to_folio((void *)ts->h[1])));

	for (i = 2; i < n; i++)
		ts->h[i] = afm_test_malloc(test, ts->pool,
					   1 + (i * 977) % PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
			afm_test_expected_pages(test, ts));

	for (i = 0; i < n; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
			afm_test_expected_pages(test, ts));

	for (i = 1; i < n; i += 2) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
}

/*
 * Failing the k-th internal allocation of an object (descriptor, each
 * chunk, tracker memory) returns -ENOMEM and leaves nothing behind, for
 * every k until the allocation needs no more than k - 1 allocations.
 */
static void afm_test_alloc_failure(struct kunit *test)
{
	static const size_t sizes[] = { 4000, 400, 100, 1024, PAGE_SIZE };
	struct afm_test_set *ts = afm_test_set(test, 2);
	unsigned int chunks[AFM_MAX_CHUNKS + 1];
	struct afm_pool_stats base, st;
	unsigned long base_pages;
	unsigned int i, k, failures;

	/* Something live, so the baseline is not all zero. */
	ts->h[1] = afm_test_malloc(test, ts->pool, 1000);

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		afm_get_pool_stats(ts->pool, &base);
		base_pages = afm_get_total_pages(ts->pool);
		failures = 0;
		for (k = 1; k < 32; k++) {
			unsigned long h;

			afm_set_fail_nth(ts->pool, k);
			h = afm_malloc(ts->pool, sizes[i], GFP_KERNEL);
			afm_set_fail_nth(ts->pool, 0);
			if (!IS_ERR_VALUE(h)) {
				ts->h[0] = h;
				break;
			}
			failures++;
			KUNIT_EXPECT_EQ(test, (long)h, -ENOMEM);
			afm_get_pool_stats(ts->pool, &st);
			KUNIT_EXPECT_EQ(test, st.objects, base.objects);
			KUNIT_EXPECT_EQ(test, st.stored_bytes, base.stored_bytes);
			KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool),
					base_pages);
		}
		KUNIT_EXPECT_GE_MSG(test, failures, 1, "size %zu", sizes[i]);
		/* The descriptor and each chunk can fail, at least. */
		if (!afm_size_is_direct(sizes[i]))
			KUNIT_EXPECT_GE_MSG(test, failures,
					    1 + afm_slab_decompose(sizes[i], chunks),
					    "size %zu", sizes[i]);
		KUNIT_ASSERT_TRUE_MSG(test, afm_test_handle_ok(ts->h[0]),
				      "size %zu never succeeded", sizes[i]);
		afm_free(ts->pool, ts->h[0]);
		ts->h[0] = 0;
		afm_get_pool_stats(ts->pool, &st);
		KUNIT_EXPECT_EQ(test, st.objects, base.objects);
		KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), base_pages);
	}
}

/* zram's flags: __GFP_HIGHMEM and __GFP_MOVABLE are accepted. */
static void afm_test_gfp(struct kunit *test)
{
	static const gfp_t flags[] = {
		__GFP_KSWAPD_RECLAIM | __GFP_NOWARN | __GFP_HIGHMEM | __GFP_MOVABLE,
		GFP_NOIO | __GFP_HIGHMEM | __GFP_MOVABLE,
		GFP_NOWAIT,
	};
	struct afm_test_set *ts = afm_test_set(test, 3 * ARRAY_SIZE(flags));
	u8 buf[64];
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		size_t size = i % 3 == 0 ? 64 : i % 3 == 1 ? 1500 : PAGE_SIZE;

		ts->h[i] = afm_malloc(ts->pool, size, flags[i / 3]);
		if (ts->h[i] == (unsigned long)ERR_PTR(-ENOMEM))
			kunit_skip(test, "no memory");
		KUNIT_ASSERT_TRUE(test, afm_test_handle_ok(ts->h[i]));
		afm_test_fill(buf, i, sizeof(buf));
		KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[i], buf,
						sizeof(buf)), 0);
	}
	for (i = 0; i < ts->n; i++) {
		u8 *p = afm_map_object(ts->pool, ts->h[i], AFM_MM_RO);

		KUNIT_ASSERT_NOT_NULL(test, p);
		KUNIT_EXPECT_EQ(test, afm_test_check(p, i, sizeof(buf)), -1);
		/* Mappings are in the linear map. */
		KUNIT_EXPECT_TRUE(test, virt_addr_valid(p));
		afm_unmap_object(ts->pool, ts->h[i]);
	}
}

/*
 * Freeing a descriptor handle twice, or a foreign address, is detected
 * (counted each time, warned about once) and changes nothing (best
 * effort: a freed descriptor can be reused; nothing is allocated here in
 * between).
 */
static void afm_test_bad_free(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 2);
	struct afm_pool_stats before, after;
	unsigned long pages, h, misuses;
	struct page *page;
	void *foreign;

	afm_test_expect_warnings(test);
	ts->h[0] = afm_test_malloc(test, ts->pool, 777);
	h = afm_test_malloc(test, ts->pool, 333);
	afm_free(ts->pool, h);

	foreign = kunit_kmalloc(test, 64, GFP_KERNEL);
	afm_test_need(test, foreign);

	afm_get_pool_stats(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);
	kunit_info(test, "expect up to two afmalloc invalid-handle warnings\n");
	misuses = afm_test_misuse_count();
	afm_free(ts->pool, h);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 1);
	afm_free(ts->pool, (unsigned long)foreign);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 2);
	afm_get_pool_stats(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
	KUNIT_EXPECT_EQ(test, after.stored_bytes, before.stored_bytes);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[0]), 777);

	/*
	 * Whole-page objects (direct handles, zram's incompressible pages):
	 * a second free of one while another lives, or a page that is not
	 * the pool's behind such a handle, is refused, not given to
	 * free_page().
	 */
	ts->h[1] = afm_test_malloc(test, ts->pool, PAGE_SIZE);
	h = afm_test_malloc(test, ts->pool, PAGE_SIZE);
	KUNIT_ASSERT_TRUE(test, afm_handle_is_direct(h));
	afm_free(ts->pool, h);
	page = alloc_page(GFP_KERNEL);
	if (!page)
		kunit_skip(test, "no memory for a foreign page");
	afm_get_pool_stats(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);
	afm_free(ts->pool, h);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 3);
	afm_free(ts->pool, (unsigned long)page_address(page) | (h & ~PAGE_MASK));
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 4);
	KUNIT_EXPECT_EQ(test, page_ref_count(page), 1);
	__free_page(page);
	afm_get_pool_stats(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[1]), PAGE_SIZE);

	/*
	 * Direct handles no object can have (no order bit; an order beyond
	 * the word) are refused without shifting out of range.
	 */
	afm_free(ts->pool, AFM_HANDLE_DIRECT);
	afm_free(ts->pool, BIT(BITS_PER_LONG - 1) | AFM_HANDLE_DIRECT);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 6);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, AFM_HANDLE_DIRECT), 0);
	KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, BIT(BITS_PER_LONG - 1) |
					   AFM_HANDLE_DIRECT), 0);
	afm_get_pool_stats(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
}

/* Indices that cross every level boundary of an xarray, both ways. */
static unsigned long afm_test_xa_index(u32 r)
{
	static const unsigned long edge[] = {
		0, 1, 63, 64, 65, 4095, 4096, 4097, 262143, 262144,
		1UL << 30, (1UL << 36) + 5, ULONG_MAX >> 1, ULONG_MAX - 1,
		ULONG_MAX,
	};
	unsigned int bits;

	if (r % 4 == 0)
		return edge[(r >> 2) % ARRAY_SIZE(edge)];
	/* A few clusters of pfn-like indices, a few hundred apart. */
	bits = 6 + (r >> 2) % 4 * 10;
	return (1UL << bits) + (r >> 8) % 40 * 300;
}

/*
 * afm_xa_nodes_of() keeps a node count equal to a walk of the xarray
 * through stores and erases at every level boundary (index 0 alone, the
 * tree growing and shrinking, ULONG_MAX). Breaks: any level counted
 * wrong (e.g. the top levels when the tree grows).
 */
static void afm_test_xa_nodes(struct kunit *test)
{
	struct xarray *xa;
	unsigned long count = 0, walked, idx;
	unsigned int op, errors = 0, stores = 0, erases = 0;
	void *entry;
	u32 r = 1;

	xa = kunit_kzalloc(test, sizeof(*xa), GFP_KERNEL);
	afm_test_need(test, xa);
	xa_init(xa);
	for (op = 0; op < 3000 && errors < 5; op++) {
		r = r * 1103515245 + 12345;
		idx = afm_test_xa_index(r >> 4);
		if (xa_load(xa, idx)) {
			xa_lock(xa);
			count -= afm_xa_nodes_of(xa, idx);
			__xa_erase(xa, idx);
			xa_unlock(xa);
			erases++;
		} else {
			if (xa_err(xa_store(xa, idx, xa_mk_value(op),
					    GFP_KERNEL))) {
				xa_destroy(xa);
				kunit_skip(test, "no memory for xarray nodes");
			}
			xa_lock(xa);
			count += afm_xa_nodes_of(xa, idx);
			xa_unlock(xa);
			stores++;
		}
		xa_lock(xa);
		walked = afm_xa_count_nodes(xa);
		xa_unlock(xa);
		if (count != walked) {
			KUNIT_FAIL(test, "op %u (%s %#lx): counted %lu, walked %lu",
				   op, xa_load(xa, idx) ? "store" : "erase",
				   idx, count, walked);
			errors++;
			count = walked;
		}
	}
	KUNIT_EXPECT_GT(test, stores, 100);
	KUNIT_EXPECT_GT(test, erases, 100);
	xa_lock(xa);
	xa_for_each(xa, idx, entry) {
		count -= afm_xa_nodes_of(xa, idx);
		__xa_erase(xa, idx);
	}
	xa_unlock(xa);
	KUNIT_EXPECT_EQ(test, count, 0);
	KUNIT_EXPECT_TRUE(test, xa_empty(xa));
	xa_destroy(xa);
}

/* aux_bytes against a walk of the tracker. */
static void afm_test_expect_aux(struct kunit *test, struct afm_pool *pool)
{
	struct afm_slab_pool *sp = pool->store;
	int lockdep_on = READ_ONCE(debug_locks);
	unsigned long aux, walked;

	/*
	 * With the pool lock held: aux_bytes must not take it (lockdep, when
	 * on, reports the recursion and turns itself off; without lockdep an
	 * SMP kernel deadlocks here).
	 */
	afm_slab_lock(sp);
	aux = pool->ops->aux_bytes(pool);
	walked = afm_xa_count_nodes(&sp->slabs) * sizeof(struct xa_node);
	afm_slab_unlock(sp);
	KUNIT_EXPECT_EQ(test, aux, walked);
	if (lockdep_on)
		KUNIT_EXPECT_TRUE_MSG(test, READ_ONCE(debug_locks),
				      "lockdep report while reading aux_bytes");
}

/*
 * aux_bytes (debugfs) is exact, equal to a walk of the slab tracker at
 * every step while slabs enter and leave it, and takes no lock: the test
 * reads it with the pool lock held (a reader that took the lock for a
 * walk, as it used to, self-deadlocks here, which lockdep reports).
 */
static void afm_test_aux_bytes(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 2048);
	unsigned int i;

	afm_test_expect_aux(test, ts->pool);
	KUNIT_EXPECT_EQ(test, ts->pool->ops->aux_bytes(ts->pool), 0);
	for (i = 0; i < ts->n; i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool,
					   20 + i * 2654435761U % 4000);
		if (i % 64 == 63)
			afm_test_expect_aux(test, ts->pool);
	}
	KUNIT_EXPECT_GT(test, ts->pool->ops->aux_bytes(ts->pool), 0);
	/* Free in an order that empties slabs all over the tracker. */
	for (i = 0; i < ts->n; i++) {
		unsigned int j = i * 7 % ts->n;

		afm_free(ts->pool, ts->h[j]);
		ts->h[j] = 0;
		if (i % 64 == 63)
			afm_test_expect_aux(test, ts->pool);
	}
	afm_test_expect_aux(test, ts->pool);
	KUNIT_EXPECT_EQ(test, ts->pool->ops->aux_bytes(ts->pool), 0);
}

static struct kunit_case afm_slab_store_test_cases[] = {
	KUNIT_CASE(afm_test_decompose),
	KUNIT_CASE_SLOW(afm_test_chunk_layout),
	KUNIT_CASE(afm_test_page_accounting),
	KUNIT_CASE(afm_test_alloc_failure),
	KUNIT_CASE(afm_test_gfp),
	KUNIT_CASE(afm_test_bad_free),
	KUNIT_CASE_SLOW(afm_test_xa_nodes),
	KUNIT_CASE(afm_test_aux_bytes),
	{}
};

static struct kunit_suite afm_slab_store_test_suite = {
	.name = "afmalloc_slab_store",
	.test_cases = afm_slab_store_test_cases,
};

kunit_test_suite(afm_slab_store_test_suite);
