// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the afmalloc public API (mm/core.c): pool creation,
 * argument checks, byte-exact round trips through map and the copy
 * helpers for every size, size queries and statistics.
 */

#include <kunit/test.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "afm_test.h"
#include "../mm/zspage_store.h"

/*
 * afm_create_pool() refuses @name and @type with @err; a pool made anyway
 * is destroyed, so that no later test finds it.
 */
static void afm_test_create_fails(struct kunit *test, const char *name,
				  enum afm_store_type type, int err)
{
	struct afm_pool *p = afm_create_pool(name, type);

	KUNIT_EXPECT_EQ_MSG(test, PTR_ERR_OR_ZERO(p), err, "name \"%s\", store %d",
			    name ? name : "(null)", type);
	if (!IS_ERR(p))
		afm_destroy_pool(p);
}

static void afm_test_create_errors(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 0);
	struct afm_pool *p;
	char *name;

	/* Both stores exist; a zspage pool starts empty. */
	p = afm_create_pool("kunit-zspage", AFM_STORE_ZSPAGE);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(p), 0);
	if (!IS_ERR(p)) {
		KUNIT_EXPECT_EQ(test, afm_get_total_pages(p), 0);
		afm_destroy_pool(p);
	}

	afm_test_create_fails(test, "kunit-badtype", (enum afm_store_type)99,
			      -EINVAL);
	afm_test_create_fails(test, "", AFM_STORE_SLAB, -EINVAL);
	afm_test_create_fails(test, "a/b", AFM_STORE_SLAB, -EINVAL);
	afm_test_create_fails(test, "a b", AFM_STORE_SLAB, -EINVAL);
	afm_test_create_fails(test, NULL, AFM_STORE_SLAB, -EINVAL);
	afm_test_create_fails(test, ".", AFM_STORE_SLAB, -EINVAL);
	afm_test_create_fails(test, "..", AFM_STORE_ZSPAGE, -EINVAL);
	afm_test_create_fails(test, "a\x01", AFM_STORE_SLAB, -EINVAL);
	afm_test_create_fails(test, "a\x7f", AFM_STORE_SLAB, -EINVAL);
	/* AFM_POOL_NAME_MAX bytes are taken, one more is not. */
	name = kunit_kzalloc(test, AFM_POOL_NAME_MAX + 2, GFP_KERNEL);
	afm_test_need(test, name);
	memset(name, 'n', AFM_POOL_NAME_MAX + 1);
	afm_test_create_fails(test, name, AFM_STORE_SLAB, -EINVAL);
	name[AFM_POOL_NAME_MAX] = '\0';
	p = afm_create_pool(name, AFM_STORE_ZSPAGE);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(p), 0);
	if (!IS_ERR(p))
		afm_destroy_pool(p);

	/* Names are unique: caches and debugfs directories are named after them. */
	p = afm_create_pool(ts->pool->name, AFM_STORE_SLAB);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(p), -EEXIST);
	if (!IS_ERR(p))
		afm_destroy_pool(p);

	/*
	 * A built-in afmalloc whose init failed has no bounce buffers: no
	 * pool of either store until it is ready.
	 */
	afm_test_set_ready(false);
	p = afm_create_pool("kunit-notready", AFM_STORE_ZSPAGE);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(p), -ENODEV);
	if (!IS_ERR(p))
		afm_destroy_pool(p);
	p = afm_create_pool("kunit-notready", AFM_STORE_SLAB);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(p), -ENODEV);
	if (!IS_ERR(p))
		afm_destroy_pool(p);
	afm_test_set_ready(true);
}

static void afm_test_invalid_sizes(struct kunit *test)
{
	static const size_t bad[] = { 0, PAGE_SIZE + 1, 2 * PAGE_SIZE, SIZE_MAX };
	struct afm_test_set *ts = afm_test_set(test, 1);
	struct afm_pool_stats before, after;
	unsigned long pages;
	unsigned int i;

	/* One live object, so that "nothing allocated" is not trivially 0. */
	ts->h[0] = afm_test_malloc(test, ts->pool, 100);
	afm_get_pool_stats(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		unsigned long h = afm_malloc(ts->pool, bad[i], GFP_KERNEL);

		KUNIT_EXPECT_TRUE_MSG(test, IS_ERR_VALUE(h), "size %zu", bad[i]);
		KUNIT_EXPECT_EQ_MSG(test, (long)h, -EINVAL, "size %zu", bad[i]);
		if (afm_test_handle_ok(h))
			afm_free(ts->pool, h);
	}

	afm_get_pool_stats(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
	KUNIT_EXPECT_EQ(test, after.stored_bytes, before.stored_bytes);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), pages);

	/* Error values and 0 are ignored by afm_free(). */
	afm_free(ts->pool, 0);
	afm_free(ts->pool, (unsigned long)ERR_PTR(-ENOMEM));
	afm_get_pool_stats(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects);
}

/*
 * Ways to write and read back an object; every size goes through every
 * combination. "rw" writes a pattern through an RW mapping, checking that
 * the previous content was copied in, and reads back through afm_read().
 */
enum afm_test_path { AFM_TP_MAP, AFM_TP_COPY };

struct afm_rt_param {
	const char *desc;
	enum afm_test_path write, read;
	bool rw;
};

static const struct afm_rt_param afm_rt_params[] = {
	{ "write=map-wo,read=map-ro",	AFM_TP_MAP,  AFM_TP_MAP,  false },
	{ "write=copy,read=copy",	AFM_TP_COPY, AFM_TP_COPY, false },
	{ "write=map-wo,read=copy",	AFM_TP_MAP,  AFM_TP_COPY, false },
	{ "write=copy,read=map-ro",	AFM_TP_COPY, AFM_TP_MAP,  false },
	{ "write=copy,rewrite=map-rw",	AFM_TP_COPY, AFM_TP_COPY, true },
};

static void afm_rt_param_desc(const struct afm_rt_param *p, char *desc)
{
	strscpy(desc, p->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_rt, afm_rt_params, afm_rt_param_desc);

static void afm_test_write(struct kunit *test, struct afm_pool *pool,
			   unsigned long h, enum afm_test_path path,
			   unsigned int seed, size_t size)
{
	void *dst;

	if (path == AFM_TP_COPY) {
		void *buf = kunit_kmalloc(test, size, GFP_KERNEL);

		afm_test_need(test, buf);
		afm_test_fill(buf, seed, size);
		KUNIT_ASSERT_EQ(test, afm_write(pool, h, buf, size), 0);
		kunit_kfree(test, buf);
		return;
	}
	dst = afm_map_object(pool, h, AFM_MM_WO);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	afm_test_fill(dst, seed, size);
	afm_unmap_object(pool, h);
}

/* Returns the first wrong byte or -1. */
static long afm_test_read(struct kunit *test, struct afm_pool *pool,
			  unsigned long h, enum afm_test_path path,
			  unsigned int seed, size_t size, void *buf)
{
	const void *src;
	long bad;

	if (path == AFM_TP_COPY) {
		memset(buf, 0, size);
		KUNIT_EXPECT_EQ(test, afm_read(pool, h, buf), size);
		return afm_test_check(buf, seed, size);
	}
	src = afm_map_object(pool, h, AFM_MM_RO);
	if (!src) {
		KUNIT_FAIL(test, "map of a %zu byte object failed", size);
		return 0;
	}
	bad = afm_test_check(src, seed, size);
	afm_unmap_object(pool, h);
	return bad;
}

/* Rewrite an object through an RW mapping, changing every other byte. */
static long afm_test_rewrite(struct afm_pool *pool, unsigned long h,
			     unsigned int seed, size_t size)
{
	u8 *p = afm_map_object(pool, h, AFM_MM_RW);
	long bad;
	size_t j;

	if (!p)
		return 0;
	bad = afm_test_check(p, seed, size);
	for (j = 0; j < size; j += 2)
		p[j] = afm_test_byte(seed + 1, j);
	afm_unmap_object(pool, h);
	return bad;
}

static long afm_test_check_rewritten(const u8 *p, unsigned int seed,
				     size_t size)
{
	size_t j;

	for (j = 0; j < size; j++) {
		if (p[j] != afm_test_byte(j % 2 ? seed : seed + 1, j))
			return j;
	}
	return -1;
}

/*
 * Every size 1..PAGE_SIZE, all objects live at once with distinct
 * patterns, so an object written over another's chunk is caught.
 */
static void afm_test_roundtrip(struct kunit *test)
{
	const struct afm_rt_param *p = test->param_value;
	struct afm_test_set *ts = afm_test_set(test, PAGE_SIZE + 1);
	struct afm_pool *pool = ts->pool;
	unsigned int errors = 0;
	size_t size;
	void *buf;
	long bad;

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	afm_test_need(test, buf);

	for (size = 1; size <= PAGE_SIZE; size++) {
		ts->h[size] = afm_test_malloc(test, pool, size);
		KUNIT_ASSERT_EQ(test, afm_obj_size(pool, ts->h[size]), size);
		afm_test_write(test, pool, ts->h[size], p->write, size, size);
	}

	for (size = 1; size <= PAGE_SIZE; size++) {
		bad = afm_test_read(test, pool, ts->h[size], p->read, size,
				    size, buf);
		if (bad >= 0 && errors++ < 5)
			KUNIT_FAIL(test, "size %zu: byte %ld differs", size, bad);
	}
	KUNIT_EXPECT_EQ(test, errors, 0);

	if (!p->rw)
		return;
	for (size = 1; size <= PAGE_SIZE; size++) {
		bad = afm_test_rewrite(pool, ts->h[size], size, size);
		if (bad >= 0 && errors++ < 5)
			KUNIT_FAIL(test, "size %zu: RW map byte %ld differs",
				   size, bad);
	}
	for (size = 1; size <= PAGE_SIZE; size++) {
		KUNIT_ASSERT_EQ(test, afm_read(pool, ts->h[size], buf), size);
		bad = afm_test_check_rewritten(buf, size, size);
		if (bad >= 0 && errors++ < 5)
			KUNIT_FAIL(test, "size %zu: RW write-back byte %ld differs",
				   size, bad);
	}
	KUNIT_EXPECT_EQ(test, errors, 0);
}

/* afm_write() copies a prefix and refuses to overflow the object. */
static void afm_test_write_bounds(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 2);
	u8 *buf = kunit_kzalloc(test, PAGE_SIZE + 1, GFP_KERNEL);
	unsigned int i;
	size_t j;

	afm_test_need(test, buf);
	ts->h[0] = afm_test_malloc(test, ts->pool, 700);
	ts->h[1] = afm_test_malloc(test, ts->pool, 512);

	for (i = 0; i < 2; i++) {
		size_t size = afm_obj_size(ts->pool, ts->h[i]);

		afm_test_fill(buf, 7, size);
		KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[i], buf, size), 0);
		KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[i], buf, size + 1),
				-EINVAL);
		/* A prefix write leaves the rest alone. */
		afm_test_fill(buf, 8, 10);
		KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[i], buf, 10), 0);
		memset(buf, 0, size);
		KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[i], buf), size);
		KUNIT_EXPECT_EQ(test, afm_test_check(buf, 8, 10), -1);
		for (j = 10; j < size; j++) {
			if (buf[j] != afm_test_byte(7, j)) {
				KUNIT_FAIL(test, "byte %zu clobbered", j);
				break;
			}
		}
	}
}

/*
 * Power-of-two sizes from AFM_MIN_CHUNK up are direct handles, all others
 * are descriptors; the size is reported back either way.
 */
static void afm_test_direct_handles(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 1);
	unsigned int direct = 0;
	size_t size;

	for (size = 1; size <= PAGE_SIZE; size++) {
		bool want = size >= AFM_MIN_CHUNK && is_power_of_2(size);

		ts->h[0] = afm_test_malloc(test, ts->pool, size);
		KUNIT_EXPECT_EQ_MSG(test, afm_handle_is_direct(ts->h[0]), want,
				    "size %zu", size);
		KUNIT_EXPECT_EQ(test, afm_obj_size(ts->pool, ts->h[0]), size);
		direct += afm_handle_is_direct(ts->h[0]);
		afm_free(ts->pool, ts->h[0]);
		ts->h[0] = 0;
	}
	KUNIT_EXPECT_EQ(test, direct, AFM_NR_CHUNK_CLASSES);
}

/*
 * A mapping pins a descriptor object (which is what keeps compaction away
 * from it) until unmap; a direct object has nothing to pin.
 */
static void afm_test_map_pins(struct kunit *test)
{
	static const enum afm_mapmode modes[] = { AFM_MM_RO, AFM_MM_WO, AFM_MM_RW };
	struct afm_test_set *ts = afm_test_set(test, 2);
	struct afm_desc *desc;
	unsigned int i;
	void *p;

	ts->h[0] = afm_test_malloc(test, ts->pool, 1000);
	ts->h[1] = afm_test_malloc(test, ts->pool, 1024);
	KUNIT_ASSERT_FALSE(test, afm_handle_is_direct(ts->h[0]));
	KUNIT_ASSERT_TRUE(test, afm_handle_is_direct(ts->h[1]));
	desc = (struct afm_desc *)ts->h[0];

	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		KUNIT_EXPECT_EQ(test, atomic_read(&desc->state), 0);
		p = afm_map_object(ts->pool, ts->h[0], modes[i]);
		KUNIT_ASSERT_NOT_NULL(test, p);
		KUNIT_EXPECT_EQ(test, atomic_read(&desc->state), 1);
		afm_unmap_object(ts->pool, ts->h[0]);
		KUNIT_EXPECT_EQ(test, atomic_read(&desc->state), 0);
	}
	/* A direct object maps in place, at its chunk. */
	p = afm_map_object(ts->pool, ts->h[1], AFM_MM_RW);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_EQ(test, (unsigned long)p, ts->h[1] & ~1023UL);
	afm_unmap_object(ts->pool, ts->h[1]);
}

/*
 * The class index is the footprint: equal for two sizes costing the same,
 * larger for a size costing more; sizes from the huge class size on cost a
 * page or more.
 */
static void afm_test_class_index(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 0);
	struct afm_pool *pool = ts->pool;
	size_t huge = afm_huge_class_size(pool);
	unsigned int size;

	/* A direct 256 byte object is cheaper than a 250 byte one. */
	KUNIT_EXPECT_LT(test, afm_lookup_class_index(pool, 256),
			afm_lookup_class_index(pool, 250));
	KUNIT_EXPECT_EQ(test, afm_lookup_class_index(pool, 256), 256);
	/* 241..255 all round to one 256 byte chunk. */
	KUNIT_EXPECT_EQ(test, afm_lookup_class_index(pool, 241),
			afm_lookup_class_index(pool, 255));
	KUNIT_EXPECT_EQ(test, afm_lookup_class_index(pool, 241), 256 + 16);
	/* 225..240 cost as much as 256 + descriptor, 224 less. */
	KUNIT_EXPECT_LT(test, afm_lookup_class_index(pool, 224),
			afm_lookup_class_index(pool, 225));

	KUNIT_EXPECT_GT(test, huge, 0);
	KUNIT_EXPECT_LE(test, huge, PAGE_SIZE);
	KUNIT_EXPECT_GE(test, afm_lookup_class_index(pool, huge), PAGE_SIZE);
	if (huge > 1)
		KUNIT_EXPECT_LT(test, afm_lookup_class_index(pool, huge - 1),
				PAGE_SIZE);
	/* From the huge class size on, one class: stored uncompressed. */
	for (size = huge; size <= PAGE_SIZE; size++)
		KUNIT_EXPECT_EQ(test, afm_lookup_class_index(pool, size),
				afm_lookup_class_index(pool, PAGE_SIZE));
	/* Objects below the huge size never cost a page. */
	for (size = 1; size < huge; size++) {
		if (afm_lookup_class_index(pool, size) >= PAGE_SIZE) {
			KUNIT_FAIL(test, "size %u costs a page", size);
			break;
		}
	}
	/* Among descriptor objects, the cost never decreases with size. */
	for (size = 2; size <= PAGE_SIZE; size++) {
		if (afm_size_is_direct(size) || afm_size_is_direct(size - 1))
			continue;
		if (afm_lookup_class_index(pool, size) <
		    afm_lookup_class_index(pool, size - 1)) {
			KUNIT_FAIL(test, "size %u is cheaper than %u", size,
				   size - 1);
			break;
		}
	}
	/* Out-of-range sizes are clamped. */
	KUNIT_EXPECT_EQ(test, afm_lookup_class_index(pool, 0),
			afm_lookup_class_index(pool, 1));
	KUNIT_EXPECT_EQ(test, afm_lookup_class_index(pool, 2 * PAGE_SIZE),
			afm_lookup_class_index(pool, PAGE_SIZE));
}

static void afm_test_stats(struct kunit *test)
{
	static const size_t sizes[] = { 1, 100, 256, 400, 1300, 4000, PAGE_SIZE };
	struct afm_test_set *ts = afm_test_set(test, ARRAY_SIZE(sizes));
	struct afm_pool_stats st;
	size_t total = 0;
	unsigned int i;

	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.objects, 0);
	KUNIT_EXPECT_EQ(test, st.stored_bytes, 0);
	KUNIT_EXPECT_EQ(test, st.meta_bytes, 0);
	KUNIT_EXPECT_EQ(test, st.compactions, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		ts->h[i] = afm_test_malloc(test, ts->pool, sizes[i]);
		total += sizes[i];
	}
	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.objects, ARRAY_SIZE(sizes));
	KUNIT_EXPECT_EQ(test, st.stored_bytes, total);
	/* Descriptor slabs are in use, and their bitmaps. */
	KUNIT_EXPECT_GT(test, st.meta_bytes, PAGE_SIZE);
	KUNIT_EXPECT_LT(test, st.meta_bytes,
			afm_get_total_pages(ts->pool) << PAGE_SHIFT);
	KUNIT_EXPECT_GE(test, afm_get_total_pages(ts->pool) << PAGE_SHIFT,
			total);

	afm_compact(ts->pool);
	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.compactions, 1);

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.objects, 0);
	KUNIT_EXPECT_EQ(test, st.stored_bytes, 0);
	KUNIT_EXPECT_EQ(test, st.meta_bytes, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
}

static const enum afm_store_type afm_irqoff_stores[] = {
	AFM_STORE_SLAB, AFM_STORE_ZSPAGE,
};

static void afm_irqoff_desc(const enum afm_store_type *t, char *desc)
{
	strscpy(desc, *t == AFM_STORE_SLAB ? "slab" : "zspage",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(afm_irqoff, afm_irqoff_stores, afm_irqoff_desc);

/*
 * zram as swap frees with hardirqs off: free_swap_slot() holds the swap
 * slots cache's spin_lock_irq() across swapcache_free_entries() ->
 * zram_slot_free_notify() -> afm_free(). Every object freed so, including
 * the last ones of their zspages or slabs (the pages go back from there),
 * must leave nothing behind and warn about nothing: nothing on the free
 * path may need hardirqs on (re-enabling bottom halves with hardirqs off
 * warns, kernel/softirq.c) or sleep (lockdep reports a sleep in atomic
 * context). The kernel-log checks of scripts/kunit.sh and
 * tests/vm/kunit-guest.sh fail the run on such a warning; the case fails
 * by itself too when no earlier test had tainted the kernel with one (the
 * API-misuse tests warn on purpose: it runs first in its suite, so that
 * at least when this suite runs first it looks).
 */
static void afm_test_free_irqs_off(struct kunit *test)
{
	const enum afm_store_type *type = test->param_value;
	struct afm_test_set *ts = afm_test_set_store(test, 96, *type);
	bool tainted = test_taint(TAINT_WARN);
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < ts->n; i++)
		ts->h[i] = afm_test_malloc(test, ts->pool, 200 + 37 * i);
	KUNIT_ASSERT_GT(test, afm_get_total_pages(ts->pool), 0);
	for (i = 0; i < ts->n; i++) {
		local_irq_save(flags);
		afm_free(ts->pool, ts->h[i]);
		local_irq_restore(flags);
		ts->h[i] = 0;
	}
	/* A zspage whose pages were busy is freed by a worker. */
	if (*type == AFM_STORE_ZSPAGE)
		afm_zs_flush_work(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
	if (!tainted)
		KUNIT_EXPECT_FALSE_MSG(test, test_taint(TAINT_WARN),
				       "a free with hardirqs off warned (kernel log)");
}

/*
 * Misuse of the mapping and copy API is refused, counted and warned
 * about, losing nothing, in both stores: an unmap with nothing mapped; a
 * second map while this CPU has an object mapped (the mapping is per CPU:
 * it would share the bounce buffer, end the first mapping at the first
 * unmap and leave its object pinned for good), and a read or write then
 * (a page migration waiting for the mapped object's zspage keeps new
 * accesses out: one there would wait for ever); a read or write in an
 * interrupt-like context (bottom halves off), where it could spin on a pin
 * the interrupted task holds; a destroy of the pool while an object is
 * mapped (the pool is left alone). The first mapping stays usable and
 * every byte written through it reads back afterwards.
 */
static void afm_test_map_misuse_store(struct kunit *test,
				      enum afm_store_type type, u8 *buf)
{
	struct afm_test_set *ts = afm_test_set_store(test, 2, type);
	unsigned long misuses;
	size_t n;
	u8 *a;
	int rc;

	ts->h[0] = afm_test_malloc(test, ts->pool, 100);
	ts->h[1] = afm_test_malloc(test, ts->pool, 200);
	memset(buf, 0x33, 200);
	KUNIT_ASSERT_EQ(test, afm_write(ts->pool, ts->h[1], buf, 200), 0);
	misuses = afm_test_misuse_count();

	afm_unmap_object(ts->pool, ts->h[0]);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 1);

	a = afm_map_object(ts->pool, ts->h[0], AFM_MM_WO);
	KUNIT_ASSERT_NOT_NULL(test, a);
	memset(a, 0x5a, 100);
	KUNIT_EXPECT_NULL(test, afm_map_object(ts->pool, ts->h[1], AFM_MM_RO));
	/* Nor read nor written while one is mapped here. */
	memset(buf, 0xcc, 200);
	KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[1], buf), 0);
	KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[1], buf, 200), -EINVAL);
	/* Destroyed while an object is mapped: left alone (leaked). */
	afm_destroy_pool(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 5);
	a[99] = 0xa5;
	afm_unmap_object(ts->pool, ts->h[0]);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 5);

	local_bh_disable();
	n = afm_read(ts->pool, ts->h[0], buf);
	rc = afm_write(ts->pool, ts->h[1], buf, 200);
	local_bh_enable();
	KUNIT_EXPECT_EQ(test, n, 0);
	KUNIT_EXPECT_EQ(test, rc, -EINVAL);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 7);

	KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[0], buf), 100);
	KUNIT_EXPECT_NULL(test, memchr_inv(buf, 0x5a, 99));
	KUNIT_EXPECT_EQ(test, buf[99], 0xa5);
	KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[1], buf), 200);
	KUNIT_EXPECT_NULL(test, memchr_inv(buf, 0x33, 200));
	/* Both objects can still be mapped, one after the other. */
	a = afm_map_object(ts->pool, ts->h[1], AFM_MM_RO);
	KUNIT_EXPECT_NOT_NULL(test, a);
	if (a)
		afm_unmap_object(ts->pool, ts->h[1]);
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses + 7);
}

/*
 * Both stores in one case: the warnings are WARN_ON_ONCE(), so the second
 * store's misuses warn no more, and the debug guest wants a warning in
 * every expected-warning bracket (tests/vm/kunit-guest.sh).
 */
static void afm_test_map_misuse(struct kunit *test)
{
	u8 *buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);

	afm_test_need(test, buf);
	afm_test_expect_warnings(test);
	afm_test_map_misuse_store(test, AFM_STORE_SLAB, buf);
	afm_test_map_misuse_store(test, AFM_STORE_ZSPAGE, buf);
}

static struct kunit_case afm_core_test_cases[] = {
	/* First: before the cases that warn on purpose (it checks the taint). */
	KUNIT_CASE_PARAM(afm_test_free_irqs_off, afm_irqoff_gen_params),
	KUNIT_CASE(afm_test_create_errors),
	KUNIT_CASE(afm_test_invalid_sizes),
	KUNIT_CASE_PARAM(afm_test_roundtrip, afm_rt_gen_params),
	KUNIT_CASE(afm_test_write_bounds),
	KUNIT_CASE_SLOW(afm_test_direct_handles),
	KUNIT_CASE(afm_test_map_pins),
	KUNIT_CASE(afm_test_map_misuse),
	KUNIT_CASE(afm_test_class_index),
	KUNIT_CASE(afm_test_stats),
	{}
};

static struct kunit_suite afm_core_test_suite = {
	.name = "afmalloc_core",
	.test_cases = afm_core_test_cases,
};

kunit_test_suite(afm_core_test_suite);

unsigned int afm_test_stress_seconds;
module_param_named(stress_seconds, afm_test_stress_seconds, uint, 0644);
MODULE_PARM_DESC(stress_seconds,
		 "seconds of each stress case (0: their defaults, 4 s slab store, 10 s zspage store; at most 240)");

unsigned int afm_test_destroy_seconds = 2;
module_param_named(destroy_seconds, afm_test_destroy_seconds, uint, 0644);
MODULE_PARM_DESC(destroy_seconds,
		 "seconds of the destroy-vs-shrinker case (default 2, at most 240)");

MODULE_DESCRIPTION("KUnit tests for afmalloc");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
