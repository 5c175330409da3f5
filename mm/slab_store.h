/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * afmalloc slab store internals, shared by slab_store.c, compact.c and the
 * KUnit tests. See the comment at the top of core.c for the object model.
 */
#ifndef _MM_AFMALLOC_SLAB_STORE_H
#define _MM_AFMALLOC_SLAB_STORE_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/xarray.h>

#include "afmalloc_internal.h"

/* Smallest chunk: sizes are rounded up to a multiple of it. */
#define AFM_MIN_CHUNK_SHIFT	4
#define AFM_MIN_CHUNK		BIT(AFM_MIN_CHUNK_SHIFT)

/* Chunk classes: one per power of two from AFM_MIN_CHUNK to PAGE_SIZE. */
#define AFM_NR_CHUNK_CLASSES	(PAGE_SHIFT - AFM_MIN_CHUNK_SHIFT + 1)
/* The PAGE_SIZE class is served by the page allocator, not by a cache. */
#define AFM_PAGE_CLASS		(AFM_NR_CHUNK_CLASSES - 1)
/* Most chunks an object can have: every bit of PAGE_SIZE - AFM_MIN_CHUNK. */
#define AFM_MAX_CHUNKS		(PAGE_SHIFT - AFM_MIN_CHUNK_SHIFT)
/* Descriptor classes: descriptors with 1..AFM_MAX_CHUNKS chunk pointers. */
#define AFM_NR_DESC_CLASSES	AFM_MAX_CHUNKS
#define AFM_NR_CLASSES		(AFM_NR_CHUNK_CLASSES + AFM_NR_DESC_CLASSES)
#define AFM_DESC_CLASS(nr)	(AFM_NR_CHUNK_CLASSES + (nr) - 1)

/* Sizes in units of AFM_MIN_CHUNK. */
#define AFM_NR_UNITS		(PAGE_SIZE >> AFM_MIN_CHUNK_SHIFT)

/* Low bit of a handle: set for a direct handle, clear for a descriptor. */
#define AFM_HANDLE_DIRECT	1UL

/*
 * &afm_desc.state: bits 0..29 count pins (mappings, afm_read() and
 * afm_write() in progress); AFM_DESC_LOCKED is set while compaction
 * changes the chunk pointers.
 */
#define AFM_DESC_LOCKED		BIT(30)
#define AFM_DESC_PINS		(AFM_DESC_LOCKED - 1)

/*
 * Granule of descriptor addresses inside a slab, for the per-slab bitmap
 * of live descriptors: descriptor caches are created with this alignment.
 */
#define AFM_DESC_ALIGN		sizeof(void *)

/**
 * struct afm_desc - descriptor of an object stored in several chunks or in
 * one chunk larger than the object
 * @state: pin count and AFM_DESC_LOCKED, see above. Pins are taken without
 *	any lock; AFM_DESC_LOCKED only with a trylock under the pool lock.
 * @size: object size in bytes, fixed for the object's life.
 * @chunk: chunk addresses, largest chunk first: the object's bytes are laid
 *	out over them in that order. Stable while the object is pinned;
 *	changed only by compaction under the pool lock and AFM_DESC_LOCKED.
 *
 * A descriptor is the handle of its object, so it never moves.
 */
struct afm_desc {
	atomic_t state;
	unsigned int size;
	void *chunk[];
};

/**
 * struct afm_dslab - live-descriptor bitmap of one descriptor slab
 * @live: descriptors live in the slab.
 * @class: descriptor class (AFM_DESC_CLASS()) of the slab's cache.
 * @map: one bit per AFM_DESC_ALIGN bytes of the folio, set at the offset
 *	of every live descriptor. Lets compaction enumerate the objects
 *	without any per-object list.
 */
struct afm_dslab {
	unsigned int live;
	unsigned int class;
	unsigned long map[];
};

/**
 * struct afm_move - one chunk for compaction to move
 * @desc: descriptor of its object.
 * @old: the chunk.
 * @new: its destination, once allocated.
 * @idx: its index in @desc->chunk.
 * @class: its class.
 * @moved: the object now uses @new; @old is to be freed.
 */
struct afm_move {
	struct afm_desc *desc;
	void *old;
	void *new;
	unsigned int idx;
	unsigned int class;
	bool moved;
};

/* Slab orders whose capacity afm_slab_class.cap_seen records. */
#define AFM_NR_SLAB_ORDERS	(MAX_PAGE_ORDER + 1)

/**
 * struct afm_slab_class - one cache of the pool and its counters
 * @cache: the pool's cache; NULL for AFM_PAGE_CLASS (page allocator).
 * @size: object size of the cache (chunk or descriptor size).
 * @stat: counters, see &enum afm_class_stat. Under the pool lock.
 * @cap_seen: per slab order, the most live objects seen in one slab: a
 *	lower bound of the real capacity, which slab debugging (red zones,
 *	tracking) makes smaller than folio size / @size and which the slab
 *	API does not expose. Compaction uses it so as never to overestimate
 *	the free room. Under the pool lock.
 */
struct afm_slab_class {
	struct kmem_cache *cache;
	unsigned int size;
	unsigned long stat[NR_AFM_CLASS_STATS];
	unsigned int cap_seen[AFM_NR_SLAB_ORDERS];
};

/**
 * struct afm_slab_pool - slab store state of a pool
 * @pool: the generic pool.
 * @slabs: slab tracker, indexed by the pfn of the first page of each slab
 *	(folio) that holds live chunks or descriptors of the pool. A chunk
 *	slab maps to a value entry (see afm_trk_*()), a descriptor slab to a
 *	&struct afm_dslab. Its xa_lock is the pool lock, which protects
 *	everything below except @total_pages, which is written under it
 *	and read locklessly.
 * @class: chunk classes (AFM_MIN_CHUNK..PAGE_SIZE) then descriptor classes.
 * @total_pages: pages of all tracked slabs plus PAGE_SIZE chunks.
 * @objects: live objects.
 * @stored_bytes: sum of live object sizes.
 * @dslab_bytes: bytes allocated for &struct afm_dslab bitmaps.
 * @trk_nodes: xarray nodes of @slabs, counted where slabs enter and
 *	leave it (afm_xa_nodes_of(), from the set of indices), for aux_bytes
 *	without a walk; an estimate after an insertion failed for memory,
 *	which can leave the tree a level taller than its indices need.
 * @cmoves: the chunks of the compaction batch in progress, with their
 *	destinations allocated, while &afm_pool.compact_hook runs (KUnit);
 *	else NULL. Written and read only by the compacting thread.
 * @nr_cmoves: their number.
 */
struct afm_slab_pool {
	struct afm_pool *pool;
	struct xarray slabs;
	struct afm_slab_class class[AFM_NR_CLASSES];
	atomic_long_t total_pages;
	unsigned long objects;
	unsigned long stored_bytes;
	unsigned long dslab_bytes;
	unsigned long trk_nodes;
	struct afm_move *cmoves;
	unsigned int nr_cmoves;
};

#define afm_slab_lock(sp)	xa_lock(&(sp)->slabs)
#define afm_slab_unlock(sp)	xa_unlock(&(sp)->slabs)
#define afm_slab_lockdep_assert_held(sp) \
	lockdep_assert_held(&(sp)->slabs.xa_lock)

/*
 * Value entries of chunk slabs in &afm_slab_pool.slabs:
 * bits 0..4 class, then the live chunk count, then the count of those
 * that are direct objects.
 */
#define AFM_TRK_CLASS_BITS	5
#define AFM_TRK_COUNT_BITS	((BITS_PER_LONG - 1 - AFM_TRK_CLASS_BITS) / 2)
#define AFM_TRK_COUNT_MAX	((1UL << AFM_TRK_COUNT_BITS) - 1)

static inline unsigned long afm_trk_pack(unsigned int class,
					 unsigned long live,
					 unsigned long direct)
{
	return class | live << AFM_TRK_CLASS_BITS |
	       direct << (AFM_TRK_CLASS_BITS + AFM_TRK_COUNT_BITS);
}

static inline unsigned int afm_trk_class(unsigned long v)
{
	return v & ((1UL << AFM_TRK_CLASS_BITS) - 1);
}

static inline unsigned long afm_trk_live(unsigned long v)
{
	return (v >> AFM_TRK_CLASS_BITS) & AFM_TRK_COUNT_MAX;
}

static inline unsigned long afm_trk_direct(unsigned long v)
{
	return (v >> (AFM_TRK_CLASS_BITS + AFM_TRK_COUNT_BITS)) &
	       AFM_TRK_COUNT_MAX;
}

static inline bool afm_handle_is_direct(unsigned long handle)
{
	return handle & AFM_HANDLE_DIRECT;
}

static inline unsigned int afm_chunk_class(unsigned int order)
{
	return order - AFM_MIN_CHUNK_SHIFT;
}

static inline unsigned int afm_class_order(unsigned int class)
{
	return class + AFM_MIN_CHUNK_SHIFT;
}

/* Objects of these sizes are one chunk behind a direct handle. */
static inline bool afm_size_is_direct(size_t size)
{
	return size >= AFM_MIN_CHUNK && is_power_of_2(size);
}

/* Size rounding and chunk layout, see afm_slab_store_init(). */
unsigned int afm_slab_sum(size_t size);

/* Pin and compaction lock of a descriptor. */
void afm_desc_pin(struct afm_desc *desc);
void afm_desc_unpin(struct afm_desc *desc);

static inline bool afm_desc_trylock(struct afm_desc *desc)
{
	int old = 0;

	return atomic_try_cmpxchg_acquire(&desc->state, &old, AFM_DESC_LOCKED);
}

static inline void afm_desc_unlock(struct afm_desc *desc)
{
	atomic_set_release(&desc->state, 0);
}

/* Slab tracker, pool lock held. */
int afm_track_get(struct afm_slab_pool *sp, void *obj, unsigned int class,
		  bool direct, gfp_t gfp);
void afm_track_put(struct afm_slab_pool *sp, void *obj, unsigned int class,
		   bool direct);
int afm_desc_chunk_class(const struct afm_desc *desc, unsigned int idx);
bool afm_desc_is_live(struct afm_slab_pool *sp, struct afm_desc *desc);
void *afm_chunk_alloc(struct afm_slab_pool *sp, unsigned int class,
		      gfp_t gfp);
void afm_chunk_free(struct afm_slab_pool *sp, unsigned int class,
		    void *chunk);

unsigned long afm_slab_compact(struct afm_pool *pool);

/* KUnit hooks (EXPORT_SYMBOL_IF_KUNIT). */
unsigned int afm_slab_decompose(size_t size, unsigned int *chunks);
unsigned int afm_slab_obj_chunks(struct afm_pool *pool, unsigned long handle,
				 void **chunks);
unsigned long afm_xa_count_nodes(struct xarray *xa);
#if IS_ENABLED(CONFIG_KUNIT)
unsigned long afm_xa_nodes_of(struct xarray *xa, unsigned long index);
#endif

#endif /* _MM_AFMALLOC_SLAB_STORE_H */
