/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * afmalloc internals shared by the core, the stores, the statistics code
 * and the KUnit tests. Not a stable interface.
 */
#ifndef _MM_AFMALLOC_INTERNAL_H
#define _MM_AFMALLOC_INTERNAL_H

/*
 * Real declarations from <linux/afmalloc.h> even out of tree, where the
 * kernel's configuration does not define CONFIG_AFMALLOC: afmalloc's files
 * include this header, never <linux/afmalloc.h> before it.
 */
#define AFMALLOC_IMPL
#include <linux/afmalloc.h>
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>

struct afm_pool;
struct dentry;

/*
 * The workqueue of the work that gives memory back (frees left to a lock
 * holder, emptied zspages, compaction): WQ_MEM_RECLAIM, so that it runs
 * under memory pressure, when the kernel cannot start a worker, which is
 * when zram and zswap need it. Made by afm_init(), before any pool.
 * WQ_SYSFS: /sys/devices/virtual/workqueue/afmalloc/ lets an administrator
 * confine that work to some CPUs (cpumask: the little cores of a phone,
 * the housekeeping CPUs of a server) or lower its priority (nice).
 */
extern struct workqueue_struct *afm_wq;

/**
 * struct afm_store_stats - store-wide counters, see afm_get_pool_stats()
 * @objects: live objects.
 * @stored_bytes: sum of the sizes of live objects.
 * @meta_bytes: metadata bytes (see &struct afm_pool_stats).
 * @self_compacted: pages given back by the compaction the store runs by
 *	itself (the zspage store's automatic runs and shrinker scans), not
 *	by afm_compact(); 0 in a store that runs none.
 */
struct afm_store_stats {
	unsigned long objects;
	unsigned long stored_bytes;
	unsigned long meta_bytes;
	unsigned long self_compacted;
};

/**
 * enum afm_class_stat - per-class statistics columns (debugfs "classes")
 * @AFM_CLASS_OBJS: live objects of the class: chunks for a chunk class,
 *	descriptors for a descriptor class.
 * @AFM_CLASS_DIRECT: of those, chunks that are whole objects behind a
 *	direct handle (they cannot be moved by compaction).
 * @AFM_CLASS_SLABS: slabs (folios) holding at least one live object of the
 *	class; for the PAGE_SIZE chunk class, one per chunk.
 * @AFM_CLASS_PAGES: pages of those slabs, counted in afm_get_total_pages().
 * @NR_AFM_CLASS_STATS: number of columns.
 */
enum afm_class_stat {
	AFM_CLASS_OBJS,
	AFM_CLASS_DIRECT,
	AFM_CLASS_SLABS,
	AFM_CLASS_PAGES,
	NR_AFM_CLASS_STATS,
};

/**
 * struct afm_store_ops - a storage back end of afmalloc
 * @name: short name, for messages.
 * @create: set up @pool->store. Process context.
 * @destroy: tear down @pool->store. Process context.
 * @malloc: allocate; @size is already checked to be 1..PAGE_SIZE. Returns
 *	a handle or a negative errno as an unsigned long.
 * @free: free a valid-looking handle (not 0, not an error value).
 * @map: pin the object and return its address: in place, or @bounce
 *	(PAGE_SIZE bytes, per CPU) filled unless @mm is %AFM_MM_WO. Called
 *	with the per-CPU map area locked. NULL if the handle is invalid.
 * @unmap: write @bounce back if @map returned it and @mm is not
 *	%AFM_MM_RO, then unpin.
 * @read: copy the whole object to @dst, return its size (0 if invalid).
 * @write: copy @len bytes to the start of the object; 0 or -EINVAL.
 * @obj_size: object size, 0 if invalid.
 * @total_pages: pages held, see afm_get_total_pages(). Lockless.
 * @compact: compact; return the pages that compaction gave back, by the
 *	store's own count (what its passes freed, not what other users of
 *	the pool freed or took meanwhile: the pool's @pages_compacted).
 *	Called with &afm_pool.compact_lock held.
 * @stats: fill store-wide counters.
 * @nr_classes: number of rows of the debugfs "classes" table.
 * @class_stats: fill @name (at most 15 chars) and @val for row @class.
 * @aux_bytes: bookkeeping bytes outside afm_get_total_pages() and
 *	&afm_store_stats.meta_bytes, found by walking the store's indexes
 *	(debugfs only: may be slow, takes store locks).
 * @huge_class_size: see afm_huge_class_size().
 * @class_index: see afm_lookup_class_index(); @size is 1..PAGE_SIZE.
 *
 * A store owns its objects, handle encoding and locking; the core owns
 * argument checks, the per-CPU map area, the pool list, compaction
 * serialisation and statistics export. Every callback is mandatory.
 */
struct afm_store_ops {
	const char *name;
	int (*create)(struct afm_pool *pool);
	void (*destroy)(struct afm_pool *pool);
	unsigned long (*malloc)(struct afm_pool *pool, size_t size, gfp_t gfp);
	void (*free)(struct afm_pool *pool, unsigned long handle);
	void *(*map)(struct afm_pool *pool, unsigned long handle,
		     enum afm_mapmode mm, void *bounce);
	void (*unmap)(struct afm_pool *pool, unsigned long handle,
		      enum afm_mapmode mm, void *bounce);
	size_t (*read)(struct afm_pool *pool, unsigned long handle, void *dst);
	int (*write)(struct afm_pool *pool, unsigned long handle,
		     const void *src, size_t len);
	size_t (*obj_size)(struct afm_pool *pool, unsigned long handle);
	unsigned long (*total_pages)(struct afm_pool *pool);
	unsigned long (*compact)(struct afm_pool *pool);
	void (*stats)(struct afm_pool *pool, struct afm_store_stats *stats);
	unsigned int (*nr_classes)(struct afm_pool *pool);
	void (*class_stats)(struct afm_pool *pool, unsigned int class,
			    char name[16], unsigned long val[NR_AFM_CLASS_STATS]);
	unsigned long (*aux_bytes)(struct afm_pool *pool);
	size_t (*huge_class_size)(struct afm_pool *pool);
	unsigned int (*class_index)(struct afm_pool *pool, unsigned int size);
};

/**
 * struct afm_pool - an afmalloc pool (store-independent part)
 * @name: pool name (owned).
 * @type: store type.
 * @ops: store operations.
 * @store: store private data, set by &afm_store_ops.create.
 * @list: entry in the global pool list, under afm_pools_lock.
 * @compact_lock: serialises afm_compact() runs of this pool. Outermost
 *	lock of the pool; may sleep while held.
 * @compactions: afm_compact() runs, written under @compact_lock.
 * @pages_compacted: pages those runs gave back (&afm_store_ops.compact's
 *	count), written under @compact_lock.
 * @debugfs_dir: afmalloc/<name>/ (CONFIG_AFMALLOC_STAT).
 * @fail_nth: test hook (CONFIG_AFMALLOC_KUNIT_TEST): when positive, the
 *	store fails its @fail_nth-th internal allocation from now on, then
 *	the hook disarms itself. See afm_should_fail().
 * @compact_hook: test hook (CONFIG_AFMALLOC_KUNIT_TEST): called by
 *	compaction once a batch's destinations are allocated and before its
 *	chunks move, with no lock held but &afm_pool.compact_lock.
 * @compact_hook_data: argument of @compact_hook.
 */
struct afm_pool {
	const char *name;
	enum afm_store_type type;
	const struct afm_store_ops *ops;
	void *store;
	struct list_head list;
	struct mutex compact_lock;	/* see above: outermost, sleeps */
	atomic_long_t compactions;
	atomic_long_t pages_compacted;
#ifdef CONFIG_AFMALLOC_STAT
	struct dentry *debugfs_dir;
#endif
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	atomic_t fail_nth;
	void (*compact_hook)(struct afm_pool *pool, void *data);
	void *compact_hook_data;
#endif
};

extern const struct afm_store_ops afm_slab_store_ops;
extern const struct afm_store_ops afm_zspage_store_ops;
void afm_slab_store_init(void);

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_should_fail() - fault injection point for internal allocations
 * @pool: the pool
 *
 * Return: true if the caller must behave as if its allocation failed.
 */
static inline bool afm_should_fail(struct afm_pool *pool)
{
	return atomic_dec_if_positive(&pool->fail_nth) == 0;
}

void afm_set_fail_nth(struct afm_pool *pool, unsigned int nth);
bool afm_test_set_ready(bool ready);

/* Whether afm_should_fail() is counting down to a failure. */
static inline bool afm_fail_armed(struct afm_pool *pool)
{
	return atomic_read(&pool->fail_nth) > 0;
}

static inline void afm_compact_test_hook(struct afm_pool *pool)
{
	if (pool->compact_hook)
		pool->compact_hook(pool, pool->compact_hook_data);
}

extern atomic_long_t afm_misuses;
unsigned long afm_test_misuse_count(void);

/**
 * afm_misused() - count a misuse of the API by a caller
 * @cond: whether the caller misused the API
 *
 * Wraps the condition of each WARN about a caller's mistake (invalid or
 * mapped handle freed, invalid handle accessed, pool destroyed with live
 * objects). Those warnings print once per call site and boot, so the KUnit
 * suites check afm_test_misuse_count() instead of the log to know that
 * the misuse they commit was detected.
 *
 * Return: @cond.
 */
static inline bool afm_misused(bool cond)
{
	if (unlikely(cond))
		atomic_long_inc(&afm_misuses);
	return cond;
}
#else
static inline bool afm_should_fail(struct afm_pool *pool)
{
	return false;
}

static inline bool afm_fail_armed(struct afm_pool *pool)
{
	return false;
}

static inline void afm_compact_test_hook(struct afm_pool *pool)
{
}

static inline bool afm_misused(bool cond)
{
	return cond;
}
#endif

#ifdef CONFIG_AFMALLOC_STAT
void afm_stat_init(void);
void afm_stat_exit(void);
void afm_stat_pool_add(struct afm_pool *pool);
void afm_stat_pool_del(struct afm_pool *pool);
#else
static inline void afm_stat_init(void) { }
static inline void afm_stat_exit(void) { }
static inline void afm_stat_pool_add(struct afm_pool *pool) { }
static inline void afm_stat_pool_del(struct afm_pool *pool) { }
#endif

/* zpool driver for zswap (zpool.c): last in module init, after the pools in exit. */
#ifdef CONFIG_ZPOOL
void afm_zpool_init(void);
void afm_zpool_exit(void);
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
struct zpool_driver;
enum afm_store_type afm_zpool_test_set_store(enum afm_store_type type);
const struct zpool_driver *afm_zpool_test_driver(void);
#endif
#else
static inline void afm_zpool_init(void) { }
static inline void afm_zpool_exit(void) { }
#endif

#endif /* _MM_AFMALLOC_INTERNAL_H */
