// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of afmalloc's zpool driver (mm/zpool.c), called as zpool
 * calls it for zswap (6.12 exports no zpool pool API to modules, so the
 * driver's operations are called directly, as zpool_create_pool(),
 * zpool_malloc() and the others do): the flags zswap allocates with,
 * whatever the store of the pool it allocates from, and the errors it
 * relies on.
 */

#include <kunit/test.h>
#include <linux/gfp.h>
#include <linux/string.h>
#include <linux/zpool.h>

#include "afm_test.h"
#include "../mm/zspage_store.h"

/* A pool of the driver's, as zpool_create_pool() made it. */
struct afm_zpool_test {
	const struct zpool_driver *drv;
	void *pool;
};

/* zswap's flags (mm/zswap.c, zswap_compress()). */
static gfp_t afm_zpool_test_gfp(struct afm_zpool_test *zp)
{
	gfp_t gfp = __GFP_NORETRY | __GFP_NOWARN | __GFP_KSWAPD_RECLAIM;

	/* zpool_malloc_support_movable(): the driver's flag. */
	if (zp->drv->malloc_support_movable)
		gfp |= __GFP_HIGHMEM | __GFP_MOVABLE;
	return gfp;
}

static void afm_zpool_test_destroy(void *data)
{
	struct afm_zpool_test *zp = data;

	zp->drv->destroy(zp->pool);
}

/* A zpool of afmalloc's with the store @type, destroyed when the test ends. */
static struct afm_zpool_test *afm_zpool_test_create(struct kunit *test,
						    const char *name,
						    enum afm_store_type type)
{
	struct afm_zpool_test *zp = kunit_kzalloc(test, sizeof(*zp), GFP_KERNEL);
	enum afm_store_type old;

	if (!zp)
		kunit_skip(test, "no memory for the test's pool");
	zp->drv = afm_zpool_test_driver();
	old = afm_zpool_test_set_store(type);
	zp->pool = zp->drv->create(name, GFP_KERNEL);
	if (!zp->pool) {
		/* The driver says NULL whatever failed: ask for the error. */
		struct afm_pool *pool = afm_create_pool(name, type);

		afm_zpool_test_set_store(old);
		if (!IS_ERR(pool)) {
			/* A failure that passed: memory, for a moment. */
			afm_destroy_pool(pool);
			kunit_skip(test, "zpool %s failed once, then not", name);
		}
		if (PTR_ERR(pool) == -ENOMEM)
			kunit_skip(test, "no memory for zpool %s", name);
		KUNIT_FAIL_AND_ABORT(test, "cannot create zpool %s: %pe", name,
				     pool);
	}
	afm_zpool_test_set_store(old);
	if (kunit_add_action_or_reset(test, afm_zpool_test_destroy, zp))
		kunit_skip(test, "no memory for the cleanup of %s", name);
	return zp;
}

/* Store @len bytes of @seed in @zp and read them back. */
static void afm_zpool_test_roundtrip(struct kunit *test,
				     struct afm_zpool_test *zp, size_t len,
				     u8 seed)
{
	unsigned long handle;
	u8 *p;
	size_t i;
	int err;

	err = zp->drv->malloc(zp->pool, len, afm_zpool_test_gfp(zp), &handle);
	if (err == -ENOMEM)
		kunit_skip(test, "no memory for a %zu-byte object", len);
	KUNIT_ASSERT_EQ(test, err, 0);
	p = zp->drv->map(zp->pool, handle, ZPOOL_MM_WO);
	for (i = 0; i < len; i++)
		p[i] = seed + i * 7;
	zp->drv->unmap(zp->pool, handle);
	p = zp->drv->map(zp->pool, handle, ZPOOL_MM_RO);
	for (i = 0; i < len; i++)
		if (p[i] != (u8)(seed + i * 7))
			break;
	zp->drv->unmap(zp->pool, handle);
	KUNIT_EXPECT_EQ_MSG(test, i, len, "byte %zu of %zu differs", i, len);
	zp->drv->free(zp->pool, handle);
}

/*
 * zswap passes __GFP_HIGHMEM | __GFP_MOVABLE only to a driver that says it
 * takes them, and asks the driver, not the pool. A zspage pool keeps
 * getting them after a slab pool was created (zswap goes back to an older
 * pool when the compressor is switched back, without creating one), and
 * the slab pool takes them too.
 */
static void afm_zpool_test_movable(struct kunit *test)
{
	struct afm_zpool_test *zs, *slab;

	zs = afm_zpool_test_create(test, "kunit-zpool-zspage", AFM_STORE_ZSPAGE);
	/* One driver for both stores: the flag is the driver's. */
	KUNIT_EXPECT_TRUE(test, zs->drv->malloc_support_movable);
	slab = afm_zpool_test_create(test, "kunit-zpool-slab", AFM_STORE_SLAB);
	KUNIT_EXPECT_PTR_EQ(test, slab->drv, zs->drv);
	afm_zpool_test_roundtrip(test, zs, 1500, 0x11);
	afm_zpool_test_roundtrip(test, slab, 1500, 0x22);
	afm_zpool_test_roundtrip(test, zs, PAGE_SIZE, 0x33);
	afm_zpool_test_roundtrip(test, slab, PAGE_SIZE, 0x44);
	/*
	 * Every object freed: the zspage pool holds no page any more, once
	 * the frees deferred while the kernel held a page or the pool's lock
	 * (migration, in the debug guest's compact_memory loop) are done.
	 */
	afm_zs_flush_work(zs->pool);
	KUNIT_EXPECT_EQ(test, zs->drv->total_pages(zs->pool), 0);
}

/*
 * zsmalloc's convention, which zswap relies on: no object of 0 bytes
 * (-EINVAL), one larger than a page is -ENOSPC (zswap counts it as
 * reject_compress_poor); the handle is left alone.
 */
static void afm_zpool_test_sizes(struct kunit *test)
{
	static const struct {
		size_t len;
		int err;
	} sizes[] = {
		{ 0, -EINVAL },
		{ PAGE_SIZE + 1, -ENOSPC },
		{ 2 * PAGE_SIZE, -ENOSPC },
		{ SIZE_MAX, -ENOSPC },
	};
	struct afm_zpool_test *zp;
	unsigned int i;

	zp = afm_zpool_test_create(test, "kunit-zpool-sizes", AFM_STORE_ZSPAGE);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		unsigned long handle = 12345;

		KUNIT_EXPECT_EQ_MSG(test, zp->drv->malloc(zp->pool, sizes[i].len,
							  GFP_KERNEL, &handle),
				    sizes[i].err, "size %zu", sizes[i].len);
		KUNIT_EXPECT_EQ(test, handle, 12345);
	}
	afm_zpool_test_roundtrip(test, zp, 1, 0x55);
}

static struct kunit_case afm_zpool_test_cases[] = {
	KUNIT_CASE(afm_zpool_test_movable),
	KUNIT_CASE(afm_zpool_test_sizes),
	{}
};

static struct kunit_suite afm_zpool_test_suite = {
	.name = "afmalloc_zpool",
	.test_cases = afm_zpool_test_cases,
};

kunit_test_suite(afm_zpool_test_suite);
