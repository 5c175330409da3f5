/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * afmalloc: anti-fragmentation allocator for compressed memory.
 *
 * afmalloc stores objects of 1 byte to PAGE_SIZE (compressed pages of
 * zram and zswap) behind opaque handles. It offers the operations zram and
 * zswap use from zsmalloc, plus copy helpers that avoid the bounce buffer.
 * Each pool uses one of two stores (&enum afm_store_type). See
 * mm/afmalloc/mm/core.c for the slab store and the common rules, and
 * mm/afmalloc/mm/zspage_store.c for the zspage store.
 *
 * Handles are opaque: an object's bytes can only be reached through
 * afm_map_object()/afm_unmap_object() or the copy helpers afm_read() and
 * afm_write(). With the zspage store an object's pages may be highmem
 * pages, outside the kernel linear map, and may be migrated at any time
 * while the object is not mapped.
 */
#ifndef _LINUX_AFMALLOC_H
#define _LINUX_AFMALLOC_H

#include <linux/err.h>
#include <linux/gfp_types.h>
#include <linux/kconfig.h>
#include <linux/types.h>

/**
 * enum afm_store_type - how a pool lays out its objects
 * @AFM_STORE_SLAB: objects are split into power-of-two chunks taken from
 *	the pool's own slab caches (and whole pages for PAGE_SIZE chunks).
 *	Its pages are never highmem and never movable: it drops
 *	__GFP_HIGHMEM and __GFP_MOVABLE.
 * @AFM_STORE_ZSPAGE: objects are packed back to back, without size
 *	classes, into zspages of 32 KiB, 8 order-0 pages owned by the pool
 *	(2 with 16 KiB pages, where a whole page that nothing else fits
 *	gets one page of its own; fewer while a shard holds less). It
 *	honours __GFP_HIGHMEM and __GFP_MOVABLE: zspage pages allocated with
 *	them are movable (page migration: memory compaction, CMA, memory
 *	offlining) and are reached only through kmap_local_page(). It also
 *	compacts itself (a shrinker and an automatic worker, see
 *	afm_compact()).
 */
enum afm_store_type {
	AFM_STORE_SLAB,
	AFM_STORE_ZSPAGE,
};

/**
 * enum afm_mapmode - access mode of afm_map_object()
 * @AFM_MM_RW: read-write: the object is copied in at map time and out at
 *	unmap time when it goes through the bounce buffer.
 * @AFM_MM_RO: read-only: nothing is copied back at unmap time. Writing
 *	through the mapping is a bug; the write may be lost.
 * @AFM_MM_WO: write-only: the mapping starts with undefined content and
 *	is copied out at unmap time. Only for initialising a new object: a
 *	partial write through a WO mapping leaves the rest of the object
 *	undefined.
 *
 * The values and order match &enum zs_mapmode.
 */
enum afm_mapmode {
	AFM_MM_RW,
	AFM_MM_RO,
	AFM_MM_WO,
};

/**
 * struct afm_pool_stats - pool statistics returned by afm_get_pool_stats()
 * @pages_compacted: pages given back to the page allocator by compaction
 *	since the pool was created: by afm_compact() (the pages its passes
 *	freed; slab store: the pages the pool held before each call less
 *	those after) and, in the zspage store, by its automatic runs and
 *	shrinker scans (the pages they freed),
 *	as zsmalloc's &zs_pool_stats.pages_compacted counts its shrinker's
 *	compaction with zs_compact()'s.
 * @compactions: number of afm_compact() runs.
 * @objects: live objects.
 * @stored_bytes: sum of the sizes passed to afm_malloc() of live objects.
 * @meta_bytes: bytes of metadata. Slab store: descriptor slabs (counted in
 *	afm_get_total_pages()) plus descriptor bitmaps (allocated outside
 *	it). Zspage store: handle table, descriptor table, hole table and
 *	directory pages, all counted in afm_get_total_pages().
 *
 * @compactions counts afm_compact() calls only; the zspage store's
 * automatic and shrinker-driven runs are shown in debugfs
 * (afmalloc/<pool>/), each kind with the pages it freed.
 */
struct afm_pool_stats {
	unsigned long pages_compacted;
	unsigned long compactions;
	unsigned long objects;
	unsigned long stored_bytes;
	unsigned long meta_bytes;
};

struct afm_pool;

/* The longest pool name afm_create_pool() takes, in bytes. */
#define AFM_POOL_NAME_MAX	64

/*
 * afmalloc's own sources define AFMALLOC_IMPL: they need the declarations
 * even when built out of tree against a kernel whose configuration does
 * not know CONFIG_AFMALLOC (then only the make command line sets it).
 */
#if IS_REACHABLE(CONFIG_AFMALLOC) || defined(AFMALLOC_IMPL)

/**
 * afm_create_pool() - create an afmalloc pool
 * @name: pool name, used for the debugfs directory (afmalloc/<name>/),
 *	the slab store's caches (afm-<name>-<size>) and the zspage store's
 *	shrinkers, one per shard (afm-zspage-<name>-<shard>). It must be
 *	unique among the pools (a pool being destroyed keeps its name until
 *	afm_destroy_pool() returns), at most %AFM_POOL_NAME_MAX bytes, not
 *	"." or "..", and must not contain '/', spaces or control characters.
 * @type: the store to use, see &enum afm_store_type.
 *
 * Context: Process context, may sleep.
 * Return: the new pool, or an ERR_PTR(): -EINVAL for a bad name or type,
 * -EEXIST if a pool of that name exists, -ENOMEM, -ENODEV if afmalloc's
 * initialisation failed (built in, its initcall's error does not unload
 * it) or has not run yet. -EOPNOTSUPP when afmalloc is not built (the stub below); both
 * stores are implemented.
 */
struct afm_pool *afm_create_pool(const char *name, enum afm_store_type type);

/**
 * afm_destroy_pool() - destroy a pool
 * @pool: the pool; every object must have been freed.
 *
 * No object of the pool may be mapped, and no other call on it may run,
 * meanwhile; a pool with an object mapped is left alone (leaked) with a
 * warning. NULL and error pointers are ignored.
 *
 * Objects still allocated are reported with a warning, and their handles
 * become invalid. The slab store frees those it reaches through their
 * descriptors and leaks those stored behind a direct handle (power-of-two
 * sizes, which nothing enumerates), with their caches; the zspage store
 * frees all their pages, as movable pages must not outlive their pool.
 *
 * Context: Process context, may sleep.
 * Return: nothing.
 */
void afm_destroy_pool(struct afm_pool *pool);

/**
 * afm_malloc() - allocate an object
 * @pool: pool to allocate from
 * @size: object size in bytes, 1 to PAGE_SIZE
 * @gfp: allocation flags for the pages the pool may need. __GFP_HIGHMEM
 *	and __GFP_MOVABLE are accepted (zram passes them, zswap does when the
 *	zpool driver asks for them). The zspage store honours them for its
 *	zspage pages (its tables never use them); the slab store drops them.
 *
 * The handle stays valid, and keeps designating the same bytes, until
 * afm_free(), whatever compaction and page migration do underneath.
 *
 * Context: Task context, not in interrupt (the slab store's pool lock does
 * not disable interrupts or bottom halves), preemption may be disabled;
 * sleeps only if @gfp allows direct reclaim.
 * Return: a handle, or a negative errno encoded as in ERR_PTR() (test it
 * with IS_ERR_VALUE()): -EINVAL for @size 0 or above PAGE_SIZE, -ENOMEM,
 * -EOPNOTSUPP without CONFIG_AFMALLOC.
 */
unsigned long afm_malloc(struct afm_pool *pool, size_t size, gfp_t gfp);

/**
 * afm_free() - free an object
 * @pool: pool the object belongs to
 * @handle: handle from afm_malloc(); error values and 0 are ignored.
 *
 * The object must not be mapped. Freeing a mapped object, or a handle the
 * pool does not know, triggers a warning and the object is leaked rather
 * than corrupted (best effort: a reused handle cannot be told apart). Not
 * so for a slab-store object behind a direct handle (a power-of-two size
 * stored as one chunk, the handle its address): it is never pinned, so
 * freeing it while mapped, or a second time while its slab holds another,
 * goes undetected (a use after free, as with zsmalloc); a whole-page one
 * (PAGE_SIZE) is known by its page, so a second free of it is refused.
 * With the zspage store, a free that leaves enough holes queues the
 * automatic compaction worker (see afm_compact()); a free that finds its
 * shard's lock held does not wait for it: the holder, or a worker within
 * a tenth of a second, frees the object (until then its bytes count as
 * the pool's, and the warnings above come from there). A free of an
 * object that compaction is copying at that moment spins until that copy
 * (of at most a page) is done, as a map of it does.
 *
 * Context: Task context, not in interrupt (neither store's locks disable
 * bottom halves, as zsmalloc's do not); hardirqs may be disabled (zram as
 * swap frees so); does not sleep.
 * Return: nothing.
 */
void afm_free(struct afm_pool *pool, unsigned long handle);

/**
 * afm_map_object() - map an object for direct access
 * @pool: pool the object belongs to
 * @handle: handle of the object
 * @mm: access mode, see &enum afm_mapmode
 *
 * Slab store: an object stored as one chunk is mapped in place, in the
 * kernel linear map; an object stored as several chunks is copied into a
 * per-CPU buffer (copied in unless @mm is %AFM_MM_WO).
 * Zspage store: an object within one page is mapped in place with
 * kmap_local_page(), so the address is outside the linear map when the
 * page is a highmem page (virt_addr_valid() is then false); an object
 * crossing a page boundary is mapped in place, in the linear map, when its
 * zspage's pages are consecutive and not highmem, else copied into the
 * per-CPU buffer, as above.
 * kmap_local rules apply: local mappings the caller takes after this call
 * must be released before afm_unmap_object().
 *
 * The address is only valid until afm_unmap_object(). The object cannot be
 * moved by compaction, nor its page migrated, while it is mapped.
 *
 * Only one object can be mapped per CPU at a time, there is no nesting
 * (a second map while one is held is refused, as are afm_read() and
 * afm_write(): a page migration waiting for the first object's zspage
 * keeps new accesses to it out), and afm_unmap_object() must be called on
 * the same CPU. Do not sleep in between, and keep the mapping short: a
 * page migration of the object's zspage spins until it ends.
 *
 * Context: Task context, not in interrupt (in_interrupt() must be false).
 * Returns with a per-CPU local lock held, so preemption disabled, until
 * afm_unmap_object().
 * Return: the address of the object's first byte, or NULL on misuse
 * (interrupt context, invalid handle, an object already mapped on this
 * CPU), with a warning; the mapping already held stays as it was. The zspage store
 * checks every handle; the slab store, handles other than 0 and error
 * values only with CONFIG_DEBUG_VM (so for afm_read(), afm_write() and
 * afm_obj_size() too).
 */
void *afm_map_object(struct afm_pool *pool, unsigned long handle,
		     enum afm_mapmode mm);

/**
 * afm_unmap_object() - unmap an object mapped by afm_map_object()
 * @pool: pool the object belongs to
 * @handle: handle passed to afm_map_object()
 *
 * Writes the per-CPU buffer back to the object for %AFM_MM_WO and
 * %AFM_MM_RW mappings that went through it (multi-chunk objects of the
 * slab store, page-crossing objects of the zspage store not mapped in
 * place), and drops the
 * local mapping of an object mapped in place.
 *
 * Context: The context afm_map_object() returned in; re-enables
 * preemption. With nothing mapped on this CPU, or in interrupt context,
 * it warns and does nothing; naming another object than the one mapped
 * here warns and unmaps the one mapped here.
 * Return: nothing.
 */
void afm_unmap_object(struct afm_pool *pool, unsigned long handle);

/**
 * afm_read() - copy a whole object out
 * @pool: pool the object belongs to
 * @handle: handle of the object
 * @dst: destination, at least afm_obj_size() bytes
 *
 * Copies straight from the chunks (slab store) or the zspage pages, page
 * by page through kmap_local_page() (zspage store), without the per-CPU
 * buffer or its lock. The slab store does not disable preemption; the
 * zspage store disables it only for the copy. The object may be mapped or
 * read concurrently, but not written.
 *
 * Context: Task context, not in interrupt, no object mapped on this CPU;
 * does not sleep.
 * Return: the number of bytes copied (the object size), 0 for an invalid
 * handle, in interrupt context (it could spin on an object the
 * interrupted task holds) or with an object mapped on this CPU (see
 * afm_map_object()), the last three with a warning.
 */
size_t afm_read(struct afm_pool *pool, unsigned long handle, void *dst);

/**
 * afm_write() - copy data into an object
 * @pool: pool the object belongs to
 * @handle: handle of the object
 * @src: source
 * @len: bytes to copy to the start of the object, at most afm_obj_size()
 *
 * Copies straight into the chunks (slab store) or the zspage pages
 * (zspage store), without the per-CPU buffer. The object must not be
 * mapped or accessed concurrently.
 *
 * Context: Task context, not in interrupt, no object mapped on this CPU;
 * does not sleep.
 * Return: 0, or -EINVAL if @len exceeds the object size, the handle is
 * invalid, the caller is in interrupt context or has an object mapped on
 * this CPU (the last three with a warning), or -EOPNOTSUPP without
 * CONFIG_AFMALLOC.
 */
int afm_write(struct afm_pool *pool, unsigned long handle, const void *src,
	      size_t len);

/**
 * afm_obj_size() - size of an object
 * @pool: pool the object belongs to
 * @handle: handle of the object
 *
 * Context: Task context, not in interrupt; does not sleep.
 * Return: the size passed to afm_malloc() (for a direct handle, the chunk
 * size, which is the same), 0 for an invalid handle.
 */
size_t afm_obj_size(struct afm_pool *pool, unsigned long handle);

/**
 * afm_get_total_pages() - pages held by the pool
 * @pool: the pool
 *
 * Counts pages exactly, not by estimate.
 * Slab store: every page of every slab of the pool's caches that holds at
 * least one live chunk or descriptor, plus the pages of PAGE_SIZE chunks.
 * Empty slabs that the slab allocator keeps cached are not counted;
 * afm_compact() gives them back.
 * Zspage store: every page the pool holds: zspage pages (including those
 * of emptied zspages waiting for their deferred free), handle table,
 * descriptor table, hole table and directory pages. Only the shard
 * structures, the tables' top arrays and the compaction candidate arrays
 * are allocated outside them (debugfs aux_bytes). Either store reads one
 * counter, whatever the number of CPUs: zram calls this on every write
 * and zswap on every store.
 *
 * Context: Any context; lockless.
 * Return: the number of pages.
 */
unsigned long afm_get_total_pages(struct afm_pool *pool);

/**
 * afm_compact() - compact a pool
 * @pool: the pool
 *
 * Slab store: moves chunks out of the most sparsely used slabs, in
 * address order, into the fuller ones, and gives emptied slabs back to the
 * page allocator. Objects stored behind a direct handle (power-of-two
 * sizes) cannot be moved. Compaction happens only when this is called.
 *
 * Zspage store: evacuates, sparsest first, every zspage with at least
 * 512 bytes of holes (free bytes inside it left by freed
 * objects), moving its live objects into holes of dense zspages where one
 * fits, else to the free tails of other zspages or to new ones, and frees
 * the emptied zspages; passes repeat until one frees nothing (at most 64).
 * Destination zspages are allocated without I/O but may use direct
 * reclaim. The store also compacts by itself, so calling this is seldom
 * needed: its shrinker compacts under memory pressure; a free queues a
 * worker when the holes allocation will not reuse soon exceed
 * zspage_auto_permille thousandths of the live bytes (afmalloc module
 * parameter, 0 disables both automatic runs) and 4 zspages' worth, which
 * takes zspages with a quarter of their bytes in holes and aims at half
 * that; and a second after the last allocation (the pool at rest) a run
 * takes every zspage with 512 bytes of holes once all the holes exceed
 * that share of the live bytes and half a zspage. Each shard runs one
 * compaction at a time (those runs, or this call's pass over it); the
 * pages they give back count in &afm_pool_stats.pages_compacted, the runs
 * not in &afm_pool_stats.compactions.
 *
 * In both stores, mapped objects (and objects being read or written) are
 * not moved.
 *
 * Context: Process context, may sleep. Runs of one pool are serialised.
 * Return: the number of pages freed (pages held before minus after; other
 * users of the pool may make this differ from the pages compaction freed,
 * and pages of zspages whose free is deferred to a worker are counted only
 * once that worker has run).
 */
unsigned long afm_compact(struct afm_pool *pool);

/**
 * afm_get_pool_stats() - read pool statistics
 * @pool: the pool
 * @stats: filled in
 *
 * The zspage store's figures are read without its shards' locks (zram
 * reads @stats->pages_compacted on every read of mm_stat), each a value it
 * had while they were read, not all of them at one moment; the slab
 * store's under its pool lock.
 *
 * Context: Task context, not in interrupt; does not sleep.
 * Return: nothing.
 */
void afm_get_pool_stats(struct afm_pool *pool, struct afm_pool_stats *stats);

/**
 * afm_huge_class_size() - size from which objects cost a page or more
 * @pool: the pool
 *
 * An object of this size or larger costs at least PAGE_SIZE bytes of pool
 * memory, as one in zsmalloc's huge class does; zram then stores the page
 * uncompressed (as with zs_huge_class_size()), so that reading it is a
 * copy, not a decompression. With 4 KiB pages it is 4033 for the slab
 * store, where the uncompressed page costs no more than the object would,
 * and 4075 for the zspage store with its default alignment (an object
 * costs its size, a 5-byte header, an 8-byte handle table entry and a
 * share of its zspage's descriptor; see zspage_store.c), where the
 * uncompressed page costs up to 22 bytes more than the object would.
 *
 * Context: Any context.
 * Return: the size in bytes.
 */
size_t afm_huge_class_size(struct afm_pool *pool);

/**
 * afm_lookup_class_index() - memory class of an object size
 * @pool: the pool
 * @size: object size in bytes (clamped to 1..PAGE_SIZE)
 *
 * Two sizes with the same index take the same amount of pool memory, and
 * a smaller index takes less memory, so a caller such as zram's
 * recompression can tell whether a smaller object would save memory.
 * Indices are only comparable within one pool. The index is the object's
 * footprint in bytes: chunks plus descriptor for the slab store; object,
 * handle table entry and share of its zspage descriptor for the zspage
 * store. Sizes from afm_huge_class_size() on all have PAGE_SIZE's index,
 * as they share zsmalloc's huge class: the caller stores such a page
 * uncompressed, and an object a few bytes smaller would save less than
 * its decompression on every read costs (so zram's recompression leaves
 * such a page as it is, as with zsmalloc).
 *
 * Context: Any context.
 * Return: the class index.
 */
unsigned int afm_lookup_class_index(struct afm_pool *pool, unsigned int size);

#else /* !(IS_REACHABLE(CONFIG_AFMALLOC) || AFMALLOC_IMPL) */

static inline struct afm_pool *afm_create_pool(const char *name,
					       enum afm_store_type type)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void afm_destroy_pool(struct afm_pool *pool)
{
}

static inline unsigned long afm_malloc(struct afm_pool *pool, size_t size,
				       gfp_t gfp)
{
	return (unsigned long)ERR_PTR(-EOPNOTSUPP);
}

static inline void afm_free(struct afm_pool *pool, unsigned long handle)
{
}

static inline void *afm_map_object(struct afm_pool *pool,
				   unsigned long handle, enum afm_mapmode mm)
{
	return NULL;
}

static inline void afm_unmap_object(struct afm_pool *pool,
				    unsigned long handle)
{
}

static inline size_t afm_read(struct afm_pool *pool, unsigned long handle,
			      void *dst)
{
	return 0;
}

static inline int afm_write(struct afm_pool *pool, unsigned long handle,
			    const void *src, size_t len)
{
	return -EOPNOTSUPP;
}

static inline size_t afm_obj_size(struct afm_pool *pool, unsigned long handle)
{
	return 0;
}

static inline unsigned long afm_get_total_pages(struct afm_pool *pool)
{
	return 0;
}

static inline unsigned long afm_compact(struct afm_pool *pool)
{
	return 0;
}

static inline void afm_get_pool_stats(struct afm_pool *pool,
				      struct afm_pool_stats *stats)
{
	*stats = (struct afm_pool_stats){ };
}

static inline size_t afm_huge_class_size(struct afm_pool *pool)
{
	return 0;
}

static inline unsigned int afm_lookup_class_index(struct afm_pool *pool,
						  unsigned int size)
{
	return 0;
}

#endif /* IS_REACHABLE(CONFIG_AFMALLOC) || AFMALLOC_IMPL */

#endif /* _LINUX_AFMALLOC_H */
