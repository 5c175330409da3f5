// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc as a zpool driver, so that zswap can keep its compressed pages
 * in afmalloc: zswap.zpool=afmalloc on the command line, or at run time
 *
 *   echo afmalloc > /sys/module/zswap/parameters/zpool
 *
 * Built only when the kernel has the zpool API (CONFIG_ZPOOL, up to 6.17:
 * 6.18 removed zpool and its zswap calls zsmalloc directly). Without it
 * the module still loads and offers the afm_* API; only this driver (and
 * its zswap_store parameter) is absent. On the command line the module
 * must be loadable when zswap sets up its pool: with zswap enabled at
 * boot that is its late_initcall, before the root file system is mounted
 * (the module has to be in the initramfs, else zswap falls back to its
 * default zpool and logs that afmalloc is not available).
 *
 * Module lifetime: zpool_create_pool() takes a reference on the driver's
 * owner (try_module_get(driver->owner)) for every pool and drops it in
 * zpool_destroy_pool(), so while zswap has an afmalloc pool, including an
 * old pool that is no longer current but still holds entries, rmmod
 * afmalloc fails with EBUSY ("Module afmalloc is in use"). The module exit
 * can thus only run without pools, when zpool_unregister_driver() cannot
 * fail; once unloading has begun try_module_get() fails and no new pool
 * can appear. MODULE_ALIAS("zpool-afmalloc") lets zswap load the module on
 * demand (zpool's request_module("zpool-%s")) when it is installed.
 *
 * The store of new pools is the module parameter zswap_store (zspage or
 * slab; default zspage: it is the denser store in the benchmarks, its
 * pages are movable and it compacts itself, see include/linux/afmalloc.h).
 * Changing it affects pools created afterwards: zswap creates a pool when
 * zswap.zpool or zswap.compressor changes to a pair it has no pool for;
 * when it still has a pool for the pair (an older pool that holds
 * entries), it makes that one current again, whatever its store.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/err.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/zpool.h>

#include <kunit/visibility.h>

#include "afmalloc_internal.h"

static const char *const afm_zpool_store_names[] = {
	[AFM_STORE_SLAB]	= "slab",
	[AFM_STORE_ZSPAGE]	= "zspage",
};

/* Store of the zswap pools created from now on; see the file comment. */
static enum afm_store_type afm_zswap_store = AFM_STORE_ZSPAGE;

static struct zpool_driver afm_zpool_driver;

static int afm_zswap_store_set(const char *val, const struct kernel_param *kp)
{
	int type = sysfs_match_string(afm_zpool_store_names, val);

	if (type < 0) {
		pr_warn("zswap_store: unknown store '%.*s', valid stores: slab, zspage; keeping %s\n",
			(int)strcspn(val, "\n"), val,
			afm_zpool_store_names[READ_ONCE(afm_zswap_store)]);
		return -EINVAL;
	}
	WRITE_ONCE(afm_zswap_store, type);
	return 0;
}

static int afm_zswap_store_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n",
			  afm_zpool_store_names[READ_ONCE(afm_zswap_store)]);
}

static const struct kernel_param_ops afm_zswap_store_ops = {
	.set = afm_zswap_store_set,
	.get = afm_zswap_store_get,
};
module_param_cb(zswap_store, &afm_zswap_store_ops, &afm_zswap_store, 0644);
MODULE_PARM_DESC(zswap_store,
		 "store of new zswap pools: zspage (default) or slab");

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_zpool_test_set_store() - set the store of new zswap pools (KUnit)
 * @type: the store, as the zswap_store parameter would set it.
 *
 * Context: process context.
 * Return: the store it replaces.
 */
enum afm_store_type afm_zpool_test_set_store(enum afm_store_type type)
{
	enum afm_store_type old = READ_ONCE(afm_zswap_store);

	WRITE_ONCE(afm_zswap_store, type);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zpool_test_set_store);

/**
 * afm_zpool_test_driver() - the zpool driver, as zpool calls it (KUnit)
 *
 * 6.12 exports zpool's driver registration but not its pool API (only
 * built-in zswap calls it), so a test module calls the driver's
 * operations the way zpool_create_pool(), zpool_malloc() and the others
 * do: one indirect call each, with the same arguments.
 *
 * Context: any context.
 * Return: afmalloc's zpool driver.
 */
const struct zpool_driver *afm_zpool_test_driver(void)
{
	return &afm_zpool_driver;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zpool_test_driver);
#endif

static void *afm_zpool_create(const char *name, gfp_t gfp)
{
	enum afm_store_type type = READ_ONCE(afm_zswap_store);
	struct afm_pool *pool;

	/*
	 * As for zsmalloc, @gfp is ignored: the pool's own allocations are
	 * made with GFP_KERNEL, objects with the flags given to malloc.
	 */
	pool = afm_create_pool(name, type);
	if (IS_ERR(pool)) {
		pr_warn("cannot create zswap pool %s with the %s store: %pe\n",
			name, afm_zpool_store_names[type], pool);
		return NULL;
	}
	return pool;
}

static void afm_zpool_destroy(void *pool)
{
	afm_destroy_pool(pool);
}

static int afm_zpool_malloc(void *pool, size_t size, gfp_t gfp,
			    unsigned long *handle)
{
	unsigned long h;

	/*
	 * zsmalloc's convention, which zswap relies on: an object larger
	 * than a page is -ENOSPC (counted as reject_compress_poor), not
	 * -EINVAL.
	 */
	if (unlikely(!size))
		return -EINVAL;
	if (unlikely(size > PAGE_SIZE))
		return -ENOSPC;

	h = afm_malloc(pool, size, gfp);
	if (IS_ERR_VALUE(h))
		return PTR_ERR((void *)h);
	*handle = h;
	return 0;
}

static void afm_zpool_free(void *pool, unsigned long handle)
{
	afm_free(pool, handle);
}

static void *afm_zpool_map(void *pool, unsigned long handle,
			   enum zpool_mapmode mm)
{
	enum afm_mapmode afm_mm;

	switch (mm) {
	case ZPOOL_MM_RO:
		afm_mm = AFM_MM_RO;
		break;
	case ZPOOL_MM_WO:
		afm_mm = AFM_MM_WO;
		break;
	case ZPOOL_MM_RW:
	default:
		afm_mm = AFM_MM_RW;
		break;
	}
	return afm_map_object(pool, handle, afm_mm);
}

static void afm_zpool_unmap(void *pool, unsigned long handle)
{
	afm_unmap_object(pool, handle);
}

static u64 afm_zpool_total_pages(void *pool)
{
	return afm_get_total_pages(pool);
}

/*
 * The flags are per driver, not per pool:
 * - malloc_support_movable: true, so that zswap passes __GFP_HIGHMEM |
 *   __GFP_MOVABLE to malloc, whatever the store of the pool it allocates
 *   from: the zspage store honours them (its pages are movable and only
 *   reached through kmap_local_page()), the slab store drops them (slab
 *   pages are never movable). A flag that followed the store of the pool
 *   created last would lie once zswap went back to an older pool of the
 *   other store without creating one (a compressor switched back), or
 *   after a pool creation that zswap then failed: the zspage pool would
 *   get unmovable pages (KUnit afm_zpool_test_movable).
 * - sleep_mapped: false, for every store. afm_map_object() returns with a
 *   per-CPU local lock held (preemption disabled) until
 *   afm_unmap_object(), as zs_map_object() does; zswap then copies out
 *   before a decompression that may sleep.
 * zswap copies an object out first if its mapped address is not in the
 * linear map (virt_addr_valid()), so either kind of address is fine.
 */
static struct zpool_driver afm_zpool_driver = {
	.type			= "afmalloc",
	.owner			= THIS_MODULE,
	.create			= afm_zpool_create,
	.destroy		= afm_zpool_destroy,
	.malloc_support_movable	= true,
	.malloc			= afm_zpool_malloc,
	.free			= afm_zpool_free,
	.sleep_mapped		= false,
	.map			= afm_zpool_map,
	.unmap			= afm_zpool_unmap,
	.total_pages		= afm_zpool_total_pages,
};

MODULE_ALIAS("zpool-afmalloc");

/**
 * afm_zpool_init() - register the zpool driver
 *
 * Called last in the module init, once the rest of afmalloc is ready:
 * zswap may create a pool as soon as the driver is registered.
 *
 * Context: process context (module init).
 */
void afm_zpool_init(void)
{
	zpool_register_driver(&afm_zpool_driver);
}

/**
 * afm_zpool_exit() - unregister the zpool driver
 *
 * Called in the module exit, after afm_exit() destroyed any pool left
 * behind. Every zswap pool holds a reference on this module, so none
 * exists here and unregistering cannot fail. Only a forced unload (rmmod
 * -f, CONFIG_MODULE_FORCE_UNLOAD) gets here from a zswap that had pools:
 * afm_exit() destroyed them with a warning each, zswap keeps pointers to
 * them and into the unloaded module, and all this can do is say so.
 *
 * Context: process context (module exit).
 */
void afm_zpool_exit(void)
{
	WARN(zpool_unregister_driver(&afm_zpool_driver),
	     "afmalloc: zpool driver still in use at exit\n");
}
