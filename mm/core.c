// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc: anti-fragmentation allocator for compressed memory.
 *
 * This file holds the store-independent core: the pool list, argument
 * checks, the per-CPU map area, compaction serialisation and module setup.
 * Objects are kept by a store (struct afm_store_ops): the slab store
 * (slab_store.c, compact.c), described below, and the zspage store
 * (zspage_store.c), summarised in "Zspage store" below and described in
 * full at the top of zspage_store.c.
 *
 * Object model (slab store)
 * -------------------------
 * A request of size bytes (1..PAGE_SIZE) is rounded up to a multiple of
 * AFM_MIN_CHUNK (16 bytes) and split into power-of-two chunks, following the
 * binary decomposition of the rounded size: 400 B = 256 + 128 + 16. Each
 * chunk comes from the pool's own cache of that size (afm-<pool>-<size>,
 * SLAB_NO_MERGE, naturally aligned), except PAGE_SIZE chunks, which are
 * order-0 pages from the page allocator: a PAGE_SIZE slab cache would use
 * order-3 slabs of 8 objects that fragment like zspages do, while a page
 * per chunk never leaves part of a slab unused.
 *
 * When rounding further up removes chunks, and so descriptor pointers,
 * costing fewer bytes in total, the store rounds further (4000 B keeps
 * 2048+1024+512+256+128+32, 4040 B becomes one 4096 B chunk): the sum of the
 * chunks is the multiple of 16 at or above size, or that value rounded up
 * to a larger power of two, whichever has the smallest footprint (below).
 * At most AFM_MAX_CHUNKS chunks are needed; 4 KiB pages never use more
 * than 7.
 *
 * Handle encoding
 * ---------------
 * - Direct handle (bit 0 set): the object size is a power of two from 16
 *   to PAGE_SIZE, so the object is exactly one chunk. The handle is the
 *   chunk address, which is aligned to its size 2^o, with bit o-1 set to
 *   record o, and bit 0 set:  handle = addr | 1 << (o - 1) | 1.
 *   There is no descriptor. The handle is the address, so compaction can
 *   never move a direct object: slabs holding one cannot be emptied by
 *   compaction and are skipped by it. A PAGE_SIZE direct object's page
 *   has page_private() set to the pool's tag while the object lives
 *   (afm_direct_page_tag(), under the pool lock): how a free tells a live
 *   one from a freed or foreign page.
 * - Descriptor handle (bit 0 clear): the address of a struct afm_desc from
 *   the pool's cache for descriptors of that many chunks
 *   (afm-<pool>-desc<n>): a state word (pin count and compaction lock), the
 *   size, and one pointer per chunk, largest first. The descriptor never
 *   moves; compaction moves chunks and updates the pointers, so handles are
 *   stable for the object's life.
 * Error values (IS_ERR_VALUE()) are never valid handles: no slab or page
 * address lies in the last page of the address space.
 *
 * Per-object cost (64-bit, 4 KiB pages)
 * -------------------------------------
 * With sum the total chunk size chosen for size, and n its number of chunks:
 *   direct (size = 2^k >= 16):  footprint = size
 *   otherwise:                  footprint = sum + 8 + 8 * n
 * (the 8 + 8 * n byte descriptor is allocated from a cache of exactly that
 * object size). Examples: 16 -> 16; 1 -> 32; 100 -> 144 (+44%);
 * 250 -> 272; 400 -> 432 (+8%); 1300 -> 1344 (+3.4%); 2000 -> 2056;
 * 4000 -> 4056 (+1.4%); 4033..4095 -> 4112, so afm_huge_class_size() is
 * 4033. Averaged over sizes 1..4096 the overhead is 46 bytes (at most 79).
 * Chunk caches of power-of-two sizes have no tail waste inside a slab. On
 * top of that, per slab: one slot in the slab tracker (an xarray indexed
 * by pfn, not in the pool's pages: 576-byte nodes of 64 slots, so 9 to 576
 * bytes per slab depending on how densely the pool's slabs sit in physical
 * memory, shown as aux_bytes in debugfs) and for descriptor slabs a live
 * bitmap of one bit per 8 bytes (72 bytes, 96 after kmalloc rounding, per
 * 4 KiB slab; counted in meta_bytes).
 * For comparison, zsmalloc in 6.12 spends 16 bytes per object (an 8-byte
 * handle slot and an 8-byte header in the object) plus class rounding of 8
 * bytes on average plus zspage tail waste.
 *
 * Page accounting (slab store)
 * ----------------------------
 * The slab tracker counts, per slab folio, the pool's live chunks (and live
 * descriptors, in the bitmap) in it; a folio enters the tracker when its
 * first live object is allocated and leaves when its last one is freed.
 * afm_get_total_pages() is the sum of folio_nr_pages() of the tracked
 * folios plus one page per PAGE_SIZE chunk: exact, not estimated, for both
 * built-in and modular builds, since it needs neither struct slab nor
 * slabinfo internals. Not counted: empty slabs SLUB keeps in its per-CPU
 * and per-node partial lists until kmem_cache_shrink() (afm_compact()
 * shrinks every cache of the pool); the tracker's own xarray nodes (shown
 * in debugfs as aux_bytes) and descriptor bitmaps (in meta_bytes); the
 * destinations compaction holds while a batch moves. /proc/slabinfo of
 * the pool's caches therefore shows at least the tracked pages; after afm_compact()
 * the two agree up to slabs allocated concurrently. Note that slabinfo
 * multiplies slabs by the cache's preferred order, while the tracker counts
 * the real size of fallback lower-order slabs.
 *
 * Locking
 * -------
 * In the order they nest:
 *   afm_pools_lock (mutex)       pool list and names; create/destroy only.
 *                                 Held across a store's create, so that a
 *                                 name is taken once, not across its
 *                                 destroy, which waits for workers, a
 *                                 shrinker scan and page locks: a pool
 *                                 stays listed, its name taken, until its
 *                                 store is gone, then leaves the list.
 *   afm_pool.compact_lock (mutex) one compaction per pool; may sleep.
 *   pool lock (xa_lock of afm_slab_pool.slabs, spinlock)
 *                                 slab tracker, descriptor bitmaps, class
 *                                 counters, and the chunk pointers of
 *                                 published descriptors.
 *                                 Taken by malloc, free, compaction and stats,
 *                                 not by map (except to check the handle with
 *                                 CONFIG_DEBUG_VM). Not IRQ or BH safe, hence
 *                                 no calls from interrupt context. malloc may
 *                                 drop it to allocate tracker memory.
 *   AFM_DESC_LOCKED (bit in afm_desc.state)
 *                                 compaction's exclusive access to one
 *                                 descriptor: only trylock, only under the
 *                                 pool lock, never held across a sleep or a
 *                                 drop of the pool lock.
 * Map path, separately:
 *   afm_map_area.lock (local_lock) -> descriptor pin (count in
 *   afm_desc.state, taken with cmpxchg, spins while AFM_DESC_LOCKED is set;
 *   afm_read()/afm_write() pin without the local lock).
 * A pinned object is never moved: compaction's trylock fails on a non-zero
 * state and the chunk is left in place; compaction never waits for a pin.
 *
 * Known limitations
 * -----------------
 * - Direct objects, descriptors and PAGE_SIZE chunks never move, so
 *   descriptor slabs fragment like zsmalloc's handle cache does and are
 *   given back only when they empty.
 * - Slab pages are not movable: kernel compaction, CMA and memory offlining
 *   cannot migrate them, unlike zsmalloc's zspages.
 * - One pool lock serialises malloc and free (zsmalloc has one per class),
 *   and a compaction round walks every descriptor of the pool.
 * - PREEMPT_RT: a pin spins on AFM_DESC_LOCKED, whose holder runs under a
 *   spinlock that RT makes preemptible.
 *
 * Zspage store (AFM_STORE_ZSPAGE, zspage_store.c)
 * ------------------------------------------------
 * - Objects: packed back to back, byte aligned, no size classes, into
 *   zspages of 8 order-0 pages (caller's gfp: highmem and movable pages
 *   are fine; 1, 2 or 4 while a shard holds fewer than 8); objects may
 *   cross page boundaries. An object's extent is a 5-byte header (its
 *   handle index: the reverse map compaction uses) and its data; with
 *   16 KiB pages a whole page that nothing fits gets a page of its own
 *   instead, with no header (a solo zspage). Frees leave holes, reused
 *   through a hole index (lists by length); compaction evacuates the
 *   zspages with the most holes.
 * - Handles: shard number and 1 + index of an 8-byte entry (zspage id,
 *   offset, size, pin count, move lock) in the shard's handle table, a
 *   slot table that grows and shrinks by pages, without a fixed limit.
 * - Shards: by default one per possible CPU rounded up to a power of two,
 *   at most 64 (module parameter zspage_shards), each with its own lock,
 *   tables and zspages.
 * - Compaction: afm_compact(), a shrinker per shard, and an automatic
 *   worker queued by free when holes exceed a threshold (module parameter
 *   zspage_auto_permille). Zspage pages are movable (__SetPageMovable()),
 *   migrated by kernel compaction, CMA and memory offlining.
 * - Locks: compact_lock -> shard compact_lock (one pass at a time in a
 *   shard: automatic runs, shrinker) -> page lock -> shard pool lock
 *   (spinlock) -> entry move lock; map/read/write take only an entry pin
 *   and the zspage gate (shared); migration takes the gate (exclusive;
 *   synchronous migration waits for its sharers, new ones kept out),
 *   then the pool lock. The whole map, with the lock rules, opens
 *   zspage_store.c.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/cpuhotplug.h>
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/hardirq.h>
#include <linux/list.h>
#include <linux/local_lock.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <kunit/visibility.h>

#include "afmalloc_internal.h"

/* Kconfig excludes it; out-of-tree module builds do not read Kconfig. */
#ifdef CONFIG_PREEMPT_RT
#error "afmalloc does not support PREEMPT_RT (see its Kconfig entry)"
#endif
/*
 * Nor 32-bit kernels or pages of 64 KiB: the zspage store's entry bit
 * fields, 64-byte descriptors and 32 KiB zspages assume 64-bit and pages of
 * 4 or 16 KiB.
 */
#if !defined(CONFIG_64BIT) || (PAGE_SHIFT != 12 && PAGE_SHIFT != 14)
#error "afmalloc needs a 64-bit kernel with 4 KiB or 16 KiB pages (see its Kconfig entry)"
#endif

static const struct afm_store_ops *const afm_stores[] = {
	[AFM_STORE_SLAB]	= &afm_slab_store_ops,
	[AFM_STORE_ZSPAGE]	= &afm_zspage_store_ops,
};

static const char *const afm_store_names[] = {
	[AFM_STORE_SLAB]	= "slab",
	[AFM_STORE_ZSPAGE]	= "zspage",
};

static LIST_HEAD(afm_pools);		/* under afm_pools_lock */
static DEFINE_MUTEX(afm_pools_lock);

/**
 * struct afm_map_area - per-CPU state of afm_map_object()
 * @lock: held from afm_map_object() to afm_unmap_object().
 * @buf: PAGE_SIZE bounce buffer for multi-chunk objects.
 * @pool: pool of the mapped object, for checking the unmap.
 * @handle: handle of the mapped object.
 * @mm: mapping mode.
 */
struct afm_map_area {
	local_lock_t lock;
	void *buf;
	struct afm_pool *pool;
	unsigned long handle;
	enum afm_mapmode mm;
};

static DEFINE_PER_CPU(struct afm_map_area, afm_map_area) = {
	.lock = INIT_LOCAL_LOCK(lock),
};

static enum cpuhp_state afm_cpuhp_state;

/*
 * Set once afm_init() has succeeded, never cleared while pools exist: a
 * built-in afmalloc whose init failed stays in the kernel with its API
 * exported but without the per-CPU bounce buffers, so afm_create_pool()
 * refuses (-ENODEV) until then. KUnit clears it for a moment.
 */
static bool afm_ready;

static bool afm_handle_ok(unsigned long handle)
{
	return handle && !IS_ERR_VALUE(handle);
}

/*
 * A pool name names a debugfs directory, slab caches and shrinkers: not
 * empty, "." or "..", at most AFM_POOL_NAME_MAX bytes, no '/', space or
 * control character.
 */
static bool afm_name_ok(const char *name)
{
	size_t len, i;

	if (!name)
		return false;
	len = strnlen(name, AFM_POOL_NAME_MAX + 1);
	if (!len || len > AFM_POOL_NAME_MAX || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return false;
	for (i = 0; i < len; i++) {
		if (name[i] == '/' || name[i] <= ' ' || name[i] == 0x7f)
			return false;
	}
	return true;
}

struct afm_pool *afm_create_pool(const char *name, enum afm_store_type type)
{
	const struct afm_store_ops *ops;
	struct afm_pool *pool, *p;
	int err;

	if (!afm_name_ok(name))
		return ERR_PTR(-EINVAL);
	if ((unsigned int)type >= ARRAY_SIZE(afm_stores))
		return ERR_PTR(-EINVAL);
	if (!READ_ONCE(afm_ready))
		return ERR_PTR(-ENODEV);
	ops = afm_stores[type];
	if (!ops) {
		pr_err("pool %s: the %s store is not implemented\n", name,
		       afm_store_names[type]);
		return ERR_PTR(-EOPNOTSUPP);
	}

	pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	pool->name = kstrdup(name, GFP_KERNEL);
	if (!pool->name) {
		err = -ENOMEM;
		goto free_pool;
	}
	pool->type = type;
	pool->ops = ops;
	mutex_init(&pool->compact_lock);

	mutex_lock(&afm_pools_lock);
	list_for_each_entry(p, &afm_pools, list) {
		if (!strcmp(p->name, name)) {
			err = -EEXIST;
			goto unlock;
		}
	}
	err = ops->create(pool);
	if (err)
		goto unlock;
	list_add(&pool->list, &afm_pools);
	mutex_unlock(&afm_pools_lock);

	afm_stat_pool_add(pool);
	return pool;

unlock:
	mutex_unlock(&afm_pools_lock);
	mutex_destroy(&pool->compact_lock);
	kfree(pool->name);
free_pool:
	kfree(pool);
	return ERR_PTR(err);
}
EXPORT_SYMBOL_GPL(afm_create_pool);

void afm_destroy_pool(struct afm_pool *pool)
{
	int cpu;

	if (IS_ERR_OR_NULL(pool))
		return;
	/*
	 * An object mapped (a caller's bug): its user would go on with freed
	 * memory, and the zspage store would wait for the mapping for good.
	 * Leak the pool instead.
	 */
	for_each_possible_cpu(cpu) {
		if (WARN_ONCE(afm_misused(per_cpu(afm_map_area.pool, cpu) == pool),
			      "afmalloc: pool %s destroyed with an object mapped on CPU %d; leaking it\n",
			      pool->name, cpu))
			return;
	}

	afm_stat_pool_del(pool);
	/*
	 * Not under afm_pools_lock: it may wait long (see "Locking"), and
	 * pools created meanwhile need not wait for it. The name stays taken
	 * until the store's caches and shrinkers named after it are gone.
	 */
	pool->ops->destroy(pool);
	mutex_lock(&afm_pools_lock);
	list_del(&pool->list);
	mutex_unlock(&afm_pools_lock);
	mutex_destroy(&pool->compact_lock);
	kfree(pool->name);
	kfree(pool);
}
EXPORT_SYMBOL_GPL(afm_destroy_pool);

unsigned long afm_malloc(struct afm_pool *pool, size_t size, gfp_t gfp)
{
	if (unlikely(!size || size > PAGE_SIZE))
		return (unsigned long)ERR_PTR(-EINVAL);

	return pool->ops->malloc(pool, size, gfp);
}
EXPORT_SYMBOL_GPL(afm_malloc);

void afm_free(struct afm_pool *pool, unsigned long handle)
{
	if (!afm_handle_ok(handle))
		return;

	pool->ops->free(pool, handle);
}
EXPORT_SYMBOL_GPL(afm_free);

/*
 * Whether this CPU has an object mapped. Only the task that mapped it can
 * be running here then (a mapping keeps preemption off, and interrupts map
 * nothing), so the answer, true, is about the caller; false stays true
 * wherever the caller runs next.
 */
static bool afm_mapped_here(void)
{
	return this_cpu_read(afm_map_area.pool);
}

void *afm_map_object(struct afm_pool *pool, unsigned long handle,
		     enum afm_mapmode mm)
{
	struct afm_map_area *area;
	void *addr;

	/*
	 * The map area is per CPU and shared by all pools: an interrupt
	 * mapping an object would clobber the mapping it interrupted.
	 */
	if (WARN_ON_ONCE(afm_misused(in_interrupt())) ||
	    WARN_ON_ONCE(afm_misused(!afm_handle_ok(handle))) ||
	    WARN_ON_ONCE(afm_misused(afm_mapped_here())))
		return NULL;

	local_lock(&afm_map_area.lock);
	area = this_cpu_ptr(&afm_map_area);
	addr = pool->ops->map(pool, handle, mm, area->buf);
	if (unlikely(!addr)) {
		local_unlock(&afm_map_area.lock);
		return NULL;
	}
	area->pool = pool;
	area->handle = handle;
	area->mm = mm;
	return addr;
}
EXPORT_SYMBOL_GPL(afm_map_object);

void afm_unmap_object(struct afm_pool *pool, unsigned long handle)
{
	struct afm_map_area *area;

	/*
	 * Nothing mapped on this CPU (an unbalanced or cross-CPU unmap), or
	 * an interrupt, which would end the mapping of the task it
	 * interrupted (no mapping is made in one).
	 */
	if (WARN_ON_ONCE(afm_misused(in_interrupt())) ||
	    WARN_ON_ONCE(afm_misused(!afm_mapped_here())))
		return;
	/* Preemption is off from here: the mapping holds the local lock. */
	area = this_cpu_ptr(&afm_map_area);
	/*
	 * Unmap what is mapped here even if the caller names another
	 * object: unpinning the wrong one would let compaction move it
	 * under its user, and the local lock must be released.
	 */
	WARN_ON_ONCE(afm_misused(area->pool != pool || area->handle != handle));
	area->pool->ops->unmap(area->pool, area->handle, area->mm, area->buf);
	area->pool = NULL;
	area->handle = 0;
	local_unlock(&afm_map_area.lock);
}
EXPORT_SYMBOL_GPL(afm_unmap_object);

size_t afm_read(struct afm_pool *pool, unsigned long handle, void *dst)
{
	/*
	 * In an interrupt it could spin on a pin the interrupted task holds;
	 * with an object mapped here, on a zspage gate that a migration
	 * waits for while the mapping holds it.
	 */
	if (WARN_ON_ONCE(afm_misused(in_interrupt())) ||
	    WARN_ON_ONCE(afm_misused(!afm_handle_ok(handle))) ||
	    WARN_ON_ONCE(afm_misused(afm_mapped_here())))
		return 0;

	return pool->ops->read(pool, handle, dst);
}
EXPORT_SYMBOL_GPL(afm_read);

int afm_write(struct afm_pool *pool, unsigned long handle, const void *src,
	      size_t len)
{
	if (WARN_ON_ONCE(afm_misused(in_interrupt())) ||
	    WARN_ON_ONCE(afm_misused(!afm_handle_ok(handle))) ||
	    WARN_ON_ONCE(afm_misused(afm_mapped_here())))
		return -EINVAL;

	return pool->ops->write(pool, handle, src, len);
}
EXPORT_SYMBOL_GPL(afm_write);

size_t afm_obj_size(struct afm_pool *pool, unsigned long handle)
{
	if (!afm_handle_ok(handle))
		return 0;

	return pool->ops->obj_size(pool, handle);
}
EXPORT_SYMBOL_GPL(afm_obj_size);

unsigned long afm_get_total_pages(struct afm_pool *pool)
{
	return pool->ops->total_pages(pool);
}
EXPORT_SYMBOL_GPL(afm_get_total_pages);

unsigned long afm_compact(struct afm_pool *pool)
{
	unsigned long before, after, freed, own;

	mutex_lock(&pool->compact_lock);
	before = pool->ops->total_pages(pool);
	own = pool->ops->compact(pool);
	after = pool->ops->total_pages(pool);
	freed = before > after ? before - after : 0;
	atomic_long_inc(&pool->compactions);
	/*
	 * The store's own count: before less after would also count what an
	 * automatic run of another shard freed meanwhile, which that run
	 * counts itself (afm_get_pool_stats() adds both).
	 */
	atomic_long_add(own, &pool->pages_compacted);
	mutex_unlock(&pool->compact_lock);

	return freed;
}
EXPORT_SYMBOL_GPL(afm_compact);

void afm_get_pool_stats(struct afm_pool *pool, struct afm_pool_stats *stats)
{
	struct afm_store_stats ss;

	pool->ops->stats(pool, &ss);
	stats->pages_compacted = atomic_long_read(&pool->pages_compacted) +
				 ss.self_compacted;
	stats->compactions = atomic_long_read(&pool->compactions);
	stats->objects = ss.objects;
	stats->stored_bytes = ss.stored_bytes;
	stats->meta_bytes = ss.meta_bytes;
}
EXPORT_SYMBOL_GPL(afm_get_pool_stats);

size_t afm_huge_class_size(struct afm_pool *pool)
{
	return pool->ops->huge_class_size(pool);
}
EXPORT_SYMBOL_GPL(afm_huge_class_size);

unsigned int afm_lookup_class_index(struct afm_pool *pool, unsigned int size)
{
	size = clamp_t(unsigned int, size, 1, PAGE_SIZE);
	/* Stored uncompressed by the caller: see the kernel-doc. */
	if (size >= afm_huge_class_size(pool))
		size = PAGE_SIZE;
	return pool->ops->class_index(pool, size);
}
EXPORT_SYMBOL_GPL(afm_lookup_class_index);

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/* Misuses of the API detected, see afm_misused(). */
atomic_long_t afm_misuses = ATOMIC_LONG_INIT(0);

/**
 * afm_test_misuse_count() - misuses of the API detected so far (KUnit hook)
 *
 * Every detection counts, also when its warning was already printed once.
 *
 * Context: any context.
 * Return: the number of misuses afmalloc detected since it was loaded.
 */
unsigned long afm_test_misuse_count(void)
{
	return atomic_long_read(&afm_misuses);
}
EXPORT_SYMBOL_IF_KUNIT(afm_test_misuse_count);

/**
 * afm_set_fail_nth() - arm allocation-failure injection
 * @pool: the pool
 * @nth: fail the @nth internal allocation from now (1 = the next one);
 *	0 disarms.
 *
 * Context: any context.
 * Return: nothing.
 */
void afm_set_fail_nth(struct afm_pool *pool, unsigned int nth)
{
	atomic_set(&pool->fail_nth, nth);
}
EXPORT_SYMBOL_IF_KUNIT(afm_set_fail_nth);

/**
 * afm_test_set_ready() - pretend afmalloc's initialisation failed or not
 * @ready: false makes afm_create_pool() refuse as after a failed init.
 *
 * Context: process context; the caller restores true.
 * Return: the previous state.
 */
bool afm_test_set_ready(bool ready)
{
	bool old = READ_ONCE(afm_ready);

	WRITE_ONCE(afm_ready, ready);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_test_set_ready);
#endif

static int afm_cpu_prepare(unsigned int cpu)
{
	struct afm_map_area *area = per_cpu_ptr(&afm_map_area, cpu);
	struct page *page;

	if (area->buf)
		return 0;
	page = alloc_pages_node(cpu_to_node(cpu), GFP_KERNEL, 0);
	if (!page)
		return -ENOMEM;
	area->buf = page_address(page);
	return 0;
}

static int afm_cpu_dead(unsigned int cpu)
{
	struct afm_map_area *area = per_cpu_ptr(&afm_map_area, cpu);

	free_page((unsigned long)area->buf);
	area->buf = NULL;
	return 0;
}

struct workqueue_struct *afm_wq;

static int __init afm_init(void)
{
	int ret;

	afm_wq = alloc_workqueue("afmalloc",
				 WQ_UNBOUND | WQ_MEM_RECLAIM | WQ_SYSFS, 0);
	if (!afm_wq)
		return -ENOMEM;
	afm_slab_store_init();
	ret = cpuhp_setup_state(CPUHP_BP_PREPARE_DYN, "mm/afmalloc:prepare",
				afm_cpu_prepare, afm_cpu_dead);
	if (ret < 0) {
		destroy_workqueue(afm_wq);
		afm_wq = NULL;
		return ret;
	}
	afm_cpuhp_state = ret;
	afm_stat_init();
	WRITE_ONCE(afm_ready, true);
	afm_zpool_init();
	return 0;
}

static void __exit afm_exit(void)
{
	struct afm_pool *pool, *last = NULL;

	/*
	 * A pool left by a user that was unloaded without destroying it
	 * (zswap's pools hold a reference on the module, zram's users link
	 * to it): its shrinkers, movable pages and work must not outlive the
	 * module's code. Warn, then destroy it.
	 */
	for (;;) {
		mutex_lock(&afm_pools_lock);
		pool = list_first_entry_or_null(&afm_pools, struct afm_pool, list);
		mutex_unlock(&afm_pools_lock);
		/* None left, or one afm_destroy_pool() left alone (mapped). */
		if (!pool || pool == last)
			break;
		WARN(1, "afmalloc: pool %s still exists at module unload; destroying it\n",
		     pool->name);
		afm_destroy_pool(pool);
		last = pool;
	}
	afm_zpool_exit();
	afm_stat_exit();
	cpuhp_remove_state(afm_cpuhp_state);
	destroy_workqueue(afm_wq);
	/* The zspage store's table pages freed by RCU callbacks in this module. */
	rcu_barrier();
}

module_init(afm_init);
module_exit(afm_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Anti-fragmentation allocator for compressed memory");
