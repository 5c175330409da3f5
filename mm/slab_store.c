// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc slab store: objects as power-of-two chunks from the pool's own
 * slab caches, behind direct or descriptor handles. The object model,
 * handle encoding, costs, page accounting and locking are described at the
 * top of core.c; compaction lives in compact.c.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/gfp.h>
#include <linux/kasan.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include <kunit/visibility.h>

#include "slab_store.h"

/*
 * afm_sum_units[u]: total chunk size, in AFM_MIN_CHUNK units, of an object
 * of u units (size rounded up to AFM_MIN_CHUNK). Its set bits are the
 * object's chunks. Filled by afm_slab_store_init().
 */
static u16 afm_sum_units[AFM_NR_UNITS + 1] __ro_after_init;
static unsigned int afm_max_chunks __ro_after_init;
static size_t afm_huge_size __ro_after_init;

static unsigned int afm_desc_size(unsigned int nr)
{
	return sizeof(struct afm_desc) + nr * sizeof(void *);
}

/* Footprint of chunks totalling @sum bytes plus their descriptor. */
static unsigned int afm_sum_cost(unsigned int sum)
{
	return sum + afm_desc_size(hweight32(sum));
}

unsigned int afm_slab_sum(size_t size)
{
	return afm_sum_units[DIV_ROUND_UP(size, AFM_MIN_CHUNK)]
		<< AFM_MIN_CHUNK_SHIFT;
}

static unsigned int afm_footprint(size_t size)
{
	if (afm_size_is_direct(size))
		return size;
	return afm_sum_cost(afm_slab_sum(size));
}

/*
 * Chunk classes of an object whose chunks total @sum bytes, largest first.
 * Returns the number of chunks.
 */
static unsigned int afm_sum_classes(unsigned int sum, u8 *class)
{
	unsigned int nr = 0;

	while (sum) {
		unsigned int order = __fls(sum);

		class[nr++] = afm_chunk_class(order);
		sum &= ~(1U << order);
	}
	return nr;
}

static unsigned int afm_desc_nr(const struct afm_desc *desc)
{
	return hweight32(afm_slab_sum(desc->size));
}

/**
 * afm_desc_chunk_class() - class of one chunk of an object
 * @desc: the object's descriptor
 * @idx: chunk index
 *
 * Return: the class of chunk @idx, or -1 if the object has no such chunk.
 */
int afm_desc_chunk_class(const struct afm_desc *desc, unsigned int idx)
{
	unsigned int sum = afm_slab_sum(desc->size);

	while (sum) {
		unsigned int order = __fls(sum);

		if (!idx--)
			return afm_chunk_class(order);
		sum &= ~(1U << order);
	}
	return -1;
}

/**
 * afm_slab_store_init() - compute the size tables
 *
 * For each size, in AFM_MIN_CHUNK units, pick the chunk total with the
 * smallest footprint among the size rounded up to AFM_MIN_CHUNK and to each
 * larger power of two (only those can do better: any other total at or
 * above the size has a bit set where such a rounding has none). Ties go to
 * the larger total, which has fewer chunks to copy.
 */
void __init afm_slab_store_init(void)
{
	unsigned int u, shift, size;

	for (u = 1; u <= AFM_NR_UNITS; u++) {
		unsigned int r = u << AFM_MIN_CHUNK_SHIFT, best = r;

		for (shift = AFM_MIN_CHUNK_SHIFT + 1; shift <= PAGE_SHIFT;
		     shift++) {
			unsigned int c = round_up(r, 1U << shift);

			if (afm_sum_cost(c) <= afm_sum_cost(best))
				best = c;
		}
		afm_sum_units[u] = best >> AFM_MIN_CHUNK_SHIFT;
		afm_max_chunks = max(afm_max_chunks, hweight32(best));
	}

	afm_huge_size = PAGE_SIZE;
	for (size = 1; size < PAGE_SIZE; size++) {
		if (afm_footprint(size) >= PAGE_SIZE) {
			afm_huge_size = size;
			break;
		}
	}
}

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_slab_decompose() - chunk sizes of an object (KUnit hook)
 * @size: object size, 1..PAGE_SIZE
 * @chunks: filled with the chunk sizes, largest first (AFM_MAX_CHUNKS)
 *
 * Context: any context.
 * Return: the number of chunks.
 */
unsigned int afm_slab_decompose(size_t size, unsigned int *chunks)
{
	unsigned int sum, nr = 0;

	if (afm_size_is_direct(size)) {
		chunks[0] = size;
		return 1;
	}
	for (sum = afm_slab_sum(size); sum; nr++) {
		chunks[nr] = 1U << __fls(sum);
		sum &= ~chunks[nr];
	}
	return nr;
}
EXPORT_SYMBOL_IF_KUNIT(afm_slab_decompose);
#endif

/* Handles */

static unsigned long afm_direct_handle(void *chunk, unsigned int order)
{
	return (unsigned long)chunk | 1UL << (order - 1) | AFM_HANDLE_DIRECT;
}

/*
 * The chunk and order of a direct handle. A handle no direct handle can
 * be (no order bit, or one above PAGE_SHIFT) gives order 0 or that order
 * and NULL, without shifting out of range: callers refuse orders outside
 * AFM_MIN_CHUNK_SHIFT..PAGE_SHIFT.
 */
static void *afm_direct_chunk(unsigned long handle, unsigned int *order)
{
	unsigned long low = handle & ~AFM_HANDLE_DIRECT;
	unsigned int o;

	if (!low) {
		*order = 0;
		return NULL;
	}
	o = __ffs(low) + 1;
	*order = o;
	if (o > PAGE_SHIFT)
		return NULL;
	return (void *)(low & ~((1UL << o) - 1));
}

static struct afm_desc *afm_handle_desc(unsigned long handle)
{
	return (struct afm_desc *)handle;
}

/* Pins */

/**
 * afm_desc_pin() - keep compaction away from an object
 * @desc: the object's descriptor
 *
 * Spins while compaction holds AFM_DESC_LOCKED, which it does only for a
 * copy of at most PAGE_SIZE bytes under a spinlock.
 *
 * Context: task context; spins, without sleeping, while compaction copies
 * the object.
 * Return: nothing.
 */
void afm_desc_pin(struct afm_desc *desc)
{
	int old = atomic_read(&desc->state);

	do {
		while (unlikely(old & AFM_DESC_LOCKED)) {
			cpu_relax();
			old = atomic_read(&desc->state);
		}
	} while (!atomic_try_cmpxchg_acquire(&desc->state, &old, old + 1));
	WARN_ON_ONCE((old & AFM_DESC_PINS) == AFM_DESC_PINS);
}
EXPORT_SYMBOL_IF_KUNIT(afm_desc_pin);

/**
 * afm_desc_unpin() - drop a pin taken by afm_desc_pin()
 * @desc: the object's descriptor
 *
 * Context: any context, after afm_desc_pin() of the same object.
 * Return: nothing.
 */
void afm_desc_unpin(struct afm_desc *desc)
{
	int old = atomic_fetch_dec_release(&desc->state);

	WARN_ON_ONCE(!(old & AFM_DESC_PINS));
}
EXPORT_SYMBOL_IF_KUNIT(afm_desc_unpin);

/* Copies between an object's chunks and a linear buffer */

static void afm_desc_gather(const struct afm_desc *desc, void *dst)
{
	unsigned int sum = afm_slab_sum(desc->size);
	size_t left = desc->size;
	unsigned int i;

	for (i = 0; left; i++) {
		size_t n = min_t(size_t, left, 1U << __fls(sum));

		memcpy(dst, desc->chunk[i], n);
		sum &= ~(1U << __fls(sum));
		dst += n;
		left -= n;
	}
}

static void afm_desc_scatter(struct afm_desc *desc, const void *src,
			     size_t len)
{
	unsigned int sum = afm_slab_sum(desc->size);
	unsigned int i;

	for (i = 0; len; i++) {
		size_t n = min_t(size_t, len, 1U << __fls(sum));

		memcpy(desc->chunk[i], src, n);
		sum &= ~(1U << __fls(sum));
		src += n;
		len -= n;
	}
}

/* Chunks */

/* page_private() of a page holding a whole-page object behind a direct handle. */
static unsigned long afm_direct_page_tag(struct afm_slab_pool *sp)
{
	return (unsigned long)sp | 1;
}

/**
 * afm_chunk_alloc() - allocate a chunk of a class
 * @sp: the store
 * @class: chunk class
 * @gfp: allocation flags, without __GFP_HIGHMEM and __GFP_MOVABLE
 *
 * Return: the chunk, or NULL.
 */
void *afm_chunk_alloc(struct afm_slab_pool *sp, unsigned int class, gfp_t gfp)
{
	struct page *page;

	if (afm_should_fail(sp->pool))
		return NULL;
	if (class != AFM_PAGE_CLASS)
		return kmem_cache_alloc(sp->class[class].cache, gfp);
	page = alloc_page(gfp);
	return page ? page_address(page) : NULL;
}

/**
 * afm_chunk_free() - free a chunk from afm_chunk_alloc()
 * @sp: the store
 * @class: chunk class
 * @chunk: the chunk
 */
void afm_chunk_free(struct afm_slab_pool *sp, unsigned int class, void *chunk)
{
	if (class != AFM_PAGE_CLASS)
		kmem_cache_free(sp->class[class].cache, chunk);
	else
		free_page((unsigned long)chunk);
}

/* Slab tracker */

/* Are there indices of @xa in [@lo, @hi] other than @index? */
static bool afm_xa_other(struct xarray *xa, unsigned long lo,
			 unsigned long hi, unsigned long index)
{
	unsigned long i = lo;

	if (!xa_find(xa, &i, hi, XA_PRESENT))
		return false;
	return i != index || xa_find_after(xa, &i, hi, XA_PRESENT);
}

/**
 * afm_xa_nodes_of() - xarray nodes that exist because of one index
 * @xa: an xarray without multi-index entries
 * @index: an index present in @xa
 *
 * The nodes of such an xarray follow from its set of indices S alone (an
 * empty node is freed at once, the tree shrinks as soon as its root uses
 * slot 0 alone): none if S is empty or {0}; else, for the height h that
 * the largest index needs, one node per distinct value of
 * index >> ((L + 1) * XA_CHUNK_SHIFT) at each level L < h. Called right
 * after @index is stored and right before it is erased, this gives the
 * change in node count, which keeps a counter exact without any walk.
 *
 * Context: @xa's lock held.
 * Return: nodes(S) - nodes(S without @index).
 */
VISIBLE_IF_KUNIT
unsigned long afm_xa_nodes_of(struct xarray *xa, unsigned long index)
{
	void *head = xa_head_locked(xa);
	unsigned int h, ht, level;
	unsigned long n = 0;
	bool others;

	if (!xa_is_node(head))
		return 0;
	h = xa_to_node(head)->shift / XA_CHUNK_SHIFT + 1;
	/* Height without @index: 0 if nothing but index 0 is left. */
	others = afm_xa_other(xa, 0, ULONG_MAX, index);
	ht = 0;
	if (afm_xa_other(xa, 1, ULONG_MAX, index)) {
		for (ht = 1; ht < h; ht++) {
			if (!afm_xa_other(xa, 1UL << (ht * XA_CHUNK_SHIFT),
					  ULONG_MAX, index))
				break;
		}
	}
	for (level = 0; level < h; level++) {
		unsigned int shift = (level + 1) * XA_CHUNK_SHIFT;
		unsigned long lo = 0, hi = ULONG_MAX;

		if (shift < BITS_PER_LONG) {
			lo = index >> shift << shift;
			hi = lo + (1UL << shift) - 1;
		}
		if (level < ht)		/* @index's own node, if alone in it */
			n += !afm_xa_other(xa, lo, hi, index);
		else			/* above the rest: the whole level */
			n += 1 + (others && lo);
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(afm_xa_nodes_of);

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_xa_count_nodes() - count the nodes of an xarray by walking it
 * @xa: the xarray
 *
 * Leaf nodes as the walk meets them in index order, then each ancestor the
 * first time it is met (a node's subtree is walked contiguously). O(size):
 * for KUnit, which checks &afm_slab_pool.trk_nodes against it.
 *
 * Context: @xa's lock held.
 * Return: the number of nodes.
 */
unsigned long afm_xa_count_nodes(struct xarray *xa)
{
	XA_STATE(xas, xa, 0);
	struct xa_node *last[BITS_PER_LONG / XA_CHUNK_SHIFT + 1] = { };
	unsigned long nodes = 0;
	void *entry;

	xas_for_each(&xas, entry, ULONG_MAX) {
		struct xa_node *node = xas.xa_node;

		while (node && !xas_invalid(&xas)) {
			unsigned int level = node->shift / XA_CHUNK_SHIFT;

			if (last[level] == node)
				break;
			last[level] = node;
			nodes++;
			node = xa_parent_locked(xa, node);
		}
	}
	return nodes;
}
EXPORT_SYMBOL_IF_KUNIT(afm_xa_count_nodes);
#endif

static void afm_class_account(struct afm_slab_pool *sp, unsigned int class,
			      long slabs, long pages)
{
	struct afm_slab_class *c = &sp->class[class];

	c->stat[AFM_CLASS_SLABS] += slabs;
	c->stat[AFM_CLASS_PAGES] += pages;
	atomic_long_add(pages, &sp->total_pages);
}

static size_t afm_dslab_bytes(struct folio *folio)
{
	return kmalloc_size_roundup(struct_size_t(struct afm_dslab, map,
				    BITS_TO_LONGS(folio_size(folio) /
						  AFM_DESC_ALIGN)));
}

static struct afm_dslab *afm_dslab_alloc(struct afm_slab_pool *sp,
					 struct folio *folio,
					 unsigned int class, gfp_t gfp)
{
	size_t bytes = afm_dslab_bytes(folio);
	struct afm_dslab *ds;

	if (gfpflags_allow_blocking(gfp)) {
		afm_slab_unlock(sp);
		ds = kzalloc(bytes, gfp);
		afm_slab_lock(sp);
	} else {
		ds = kzalloc(bytes, gfp);
	}
	if (ds)
		ds->class = class;
	return ds;
}

/*
 * Bit of descriptor @obj in the bitmap of its descriptor slab @folio. The
 * slab allocator's pointers carry a KASAN tag (arm64 with
 * CONFIG_KASAN_SW_TAGS or CONFIG_KASAN_HW_TAGS) that a slab page's
 * address does not: reset it before taking the offset, as obj_to_index()
 * in mm/slab.h does.
 */
static unsigned long afm_desc_bit(struct folio *folio, const void *obj)
{
	return (kasan_reset_tag(obj) - folio_address(folio)) / AFM_DESC_ALIGN;
}

/**
 * afm_track_get() - account a live chunk or descriptor
 * @sp: the store
 * @obj: the chunk or descriptor
 * @class: its class
 * @direct: @obj is a whole object behind a direct handle
 * @gfp: flags for allocating tracker memory
 *
 * Adds @obj to the count of its slab, entering the slab in the tracker if
 * it is its first live object. For a descriptor, sets its bit in the
 * slab's bitmap, which publishes the object to compaction: track the
 * chunks first.
 *
 * Context: Pool lock held; dropped and retaken when @gfp allows blocking
 * and memory must be allocated.
 * Return: 0 or -ENOMEM.
 */
int afm_track_get(struct afm_slab_pool *sp, void *obj, unsigned int class,
		  bool direct, gfp_t gfp)
{
	struct afm_slab_class *c = &sp->class[class];
	struct folio *folio;
	unsigned long pfn;
	void *entry;

	afm_slab_lockdep_assert_held(sp);

	if (class == AFM_PAGE_CLASS) {
		/* Names a whole-page object's page as this pool's. */
		if (direct)
			set_page_private(virt_to_page(obj), afm_direct_page_tag(sp));
		afm_class_account(sp, class, 1, 1);
		goto count;
	}

	folio = virt_to_folio(obj);
	pfn = folio_pfn(folio);
	for (;;) {
		void *new;
		int err;

		entry = xa_load(&sp->slabs, pfn);
		if (entry)
			break;
		if (afm_should_fail(sp->pool))
			return -ENOMEM;
		if (class < AFM_NR_CHUNK_CLASSES)
			new = xa_mk_value(afm_trk_pack(class, 0, 0));
		else
			new = afm_dslab_alloc(sp, folio, class, gfp);
		if (!new)
			return -ENOMEM;
		/* The lock may have been dropped: look again. */
		if (!xa_is_value(new) && xa_load(&sp->slabs, pfn)) {
			kfree(new);
			continue;
		}
		err = __xa_insert(&sp->slabs, pfn, new, gfp);
		if (!err) {
			WRITE_ONCE(sp->trk_nodes, sp->trk_nodes +
				   afm_xa_nodes_of(&sp->slabs, pfn));
			if (!xa_is_value(new))
				sp->dslab_bytes += afm_dslab_bytes(folio);
			afm_class_account(sp, class, 1, folio_nr_pages(folio));
			entry = new;
			break;
		}
		if (!xa_is_value(new))
			kfree(new);
		if (err != -EBUSY)
			return -ENOMEM;
	}

	if (xa_is_value(entry)) {
		unsigned long v = xa_to_value(entry);
		unsigned long live = afm_trk_live(v);
		unsigned long dir = afm_trk_direct(v) + direct;

		unsigned int order = folio_order(folio);

		if (WARN_ON_ONCE(afm_trk_class(v) != class ||
				 live == AFM_TRK_COUNT_MAX))
			return -ENOMEM;
		entry = __xa_store(&sp->slabs, pfn,
				   xa_mk_value(afm_trk_pack(class, live + 1, dir)),
				   GFP_NOWAIT);
		WARN_ON_ONCE(xa_is_err(entry));
		if (order < AFM_NR_SLAB_ORDERS && live + 1 > c->cap_seen[order])
			c->cap_seen[order] = live + 1;
	} else {
		struct afm_dslab *ds = entry;
		unsigned long bit = afm_desc_bit(folio, obj);

		if (WARN_ON_ONCE(ds->class != class || test_bit(bit, ds->map)))
			return -ENOMEM;
		__set_bit(bit, ds->map);
		ds->live++;
	}
count:
	c->stat[AFM_CLASS_OBJS]++;
	if (direct)
		c->stat[AFM_CLASS_DIRECT]++;
	return 0;
}

/**
 * afm_track_put() - undo afm_track_get()
 * @sp: the store
 * @obj: the chunk or descriptor, still allocated
 * @class: its class
 * @direct: as passed to afm_track_get()
 *
 * Context: Pool lock held.
 */
void afm_track_put(struct afm_slab_pool *sp, void *obj, unsigned int class,
		   bool direct)
{
	struct afm_slab_class *c = &sp->class[class];
	struct folio *folio;
	unsigned long pfn;
	void *entry;

	afm_slab_lockdep_assert_held(sp);

	if (class == AFM_PAGE_CLASS) {
		if (direct)
			set_page_private(virt_to_page(obj), 0);
		afm_class_account(sp, class, -1, -1);
		goto count;
	}

	folio = virt_to_folio(obj);
	pfn = folio_pfn(folio);
	entry = xa_load(&sp->slabs, pfn);
	if (WARN_ON_ONCE(!entry))
		return;

	if (xa_is_value(entry)) {
		unsigned long v = xa_to_value(entry);
		unsigned long live = afm_trk_live(v);
		unsigned long dir = afm_trk_direct(v);

		if (WARN_ON_ONCE(afm_trk_class(v) != class || !live ||
				 dir < direct))
			return;
		if (live == 1) {
			WRITE_ONCE(sp->trk_nodes, sp->trk_nodes -
				   afm_xa_nodes_of(&sp->slabs, pfn));
			__xa_erase(&sp->slabs, pfn);
			afm_class_account(sp, class, -1,
					  -(long)folio_nr_pages(folio));
		} else {
			v = afm_trk_pack(class, live - 1, dir - direct);
			__xa_store(&sp->slabs, pfn, xa_mk_value(v), GFP_NOWAIT);
		}
	} else {
		struct afm_dslab *ds = entry;
		unsigned long bit = afm_desc_bit(folio, obj);

		if (WARN_ON_ONCE(!test_bit(bit, ds->map)))
			return;
		__clear_bit(bit, ds->map);
		if (!--ds->live) {
			WRITE_ONCE(sp->trk_nodes, sp->trk_nodes -
				   afm_xa_nodes_of(&sp->slabs, pfn));
			__xa_erase(&sp->slabs, pfn);
			sp->dslab_bytes -= afm_dslab_bytes(folio);
			kfree(ds);
			afm_class_account(sp, class, -1,
					  -(long)folio_nr_pages(folio));
		}
	}
count:
	c->stat[AFM_CLASS_OBJS]--;
	if (direct)
		c->stat[AFM_CLASS_DIRECT]--;
}

/**
 * afm_desc_is_live() - is @desc a published descriptor of the pool?
 * @sp: the store
 * @desc: candidate descriptor address
 *
 * Context: Pool lock held.
 * Return: true if @desc is live in one of the pool's descriptor slabs.
 */
bool afm_desc_is_live(struct afm_slab_pool *sp, struct afm_desc *desc)
{
	struct afm_dslab *ds;
	struct folio *folio;

	afm_slab_lockdep_assert_held(sp);

	if (!IS_ALIGNED((unsigned long)desc, AFM_DESC_ALIGN) ||
	    !virt_addr_valid(desc))
		return false;
	folio = virt_to_folio(desc);
	ds = xa_load(&sp->slabs, folio_pfn(folio));
	if (!ds || xa_is_value(ds))
		return false;
	return test_bit(afm_desc_bit(folio, desc), ds->map);
}

/*
 * Is @chunk a live direct object of class @class? Pool lock held. A
 * whole-page one is known by its page's private field, which
 * afm_track_get() sets to afm_direct_page_tag() and afm_track_put() clears:
 * a second free of it, or a page that is not the pool's, is refused.
 */
static bool afm_direct_is_live(struct afm_slab_pool *sp, void *chunk,
			       unsigned int class)
{
	struct folio *folio;
	void *entry;

	afm_slab_lockdep_assert_held(sp);
	if (class > AFM_PAGE_CLASS || !virt_addr_valid(chunk))
		return false;
	if (class == AFM_PAGE_CLASS)
		return !folio_test_slab(virt_to_folio(chunk)) &&
		       page_private(virt_to_page(chunk)) == afm_direct_page_tag(sp);
	folio = virt_to_folio(chunk);
	entry = xa_load(&sp->slabs, folio_pfn(folio));
	return xa_is_value(entry) &&
	       afm_trk_class(xa_to_value(entry)) == class &&
	       afm_trk_direct(xa_to_value(entry));
}

/*
 * Debug check of a handle before using it without the pool lock (map,
 * read, write): catches stale and foreign handles on CONFIG_DEBUG_VM.
 */
static bool afm_handle_valid(struct afm_slab_pool *sp, unsigned long handle)
{
	unsigned int order;
	bool ok;

	if (!IS_ENABLED(CONFIG_DEBUG_VM))
		return true;

	afm_slab_lock(sp);
	if (afm_handle_is_direct(handle)) {
		void *chunk = afm_direct_chunk(handle, &order);

		ok = order >= AFM_MIN_CHUNK_SHIFT && order <= PAGE_SHIFT &&
		     afm_direct_is_live(sp, chunk, afm_chunk_class(order));
	} else {
		ok = afm_desc_is_live(sp, afm_handle_desc(handle));
	}
	afm_slab_unlock(sp);
	WARN_ONCE(afm_misused(!ok), "afmalloc: pool %s: invalid handle %#lx\n",
		  sp->pool->name, handle);
	return ok;
}

/* Allocation and free */

static unsigned long afm_slab_malloc_direct(struct afm_slab_pool *sp,
					    size_t size, gfp_t gfp)
{
	unsigned int order = ilog2(size);
	unsigned int class = afm_chunk_class(order);
	void *chunk;
	int err;

	chunk = afm_chunk_alloc(sp, class, gfp);
	if (!chunk)
		return (unsigned long)ERR_PTR(-ENOMEM);

	afm_slab_lock(sp);
	err = afm_track_get(sp, chunk, class, true, gfp);
	if (!err) {
		sp->objects++;
		sp->stored_bytes += size;
	}
	afm_slab_unlock(sp);

	if (err) {
		afm_chunk_free(sp, class, chunk);
		return (unsigned long)ERR_PTR(-ENOMEM);
	}
	return afm_direct_handle(chunk, order);
}

static unsigned long afm_slab_malloc(struct afm_pool *pool, size_t size,
				     gfp_t gfp)
{
	struct afm_slab_pool *sp = pool->store;
	unsigned int nr, dclass, i, t = 0;
	u8 class[AFM_MAX_CHUNKS];
	struct afm_desc *desc;
	int err = 0;

	/* Slab and page chunks are neither highmem nor movable. */
	gfp &= ~(__GFP_HIGHMEM | __GFP_MOVABLE);

	if (afm_size_is_direct(size))
		return afm_slab_malloc_direct(sp, size, gfp);

	nr = afm_sum_classes(afm_slab_sum(size), class);
	dclass = AFM_DESC_CLASS(nr);
	if (afm_should_fail(pool))
		return (unsigned long)ERR_PTR(-ENOMEM);
	desc = kmem_cache_alloc(sp->class[dclass].cache, gfp);
	if (!desc)
		return (unsigned long)ERR_PTR(-ENOMEM);
	atomic_set(&desc->state, 0);
	desc->size = size;

	for (i = 0; i < nr; i++) {
		desc->chunk[i] = afm_chunk_alloc(sp, class[i], gfp);
		if (!desc->chunk[i])
			goto free_chunks;
	}

	afm_slab_lock(sp);
	for (t = 0; t < nr; t++) {
		err = afm_track_get(sp, desc->chunk[t], class[t], false, gfp);
		if (err)
			goto untrack;
	}
	/* Publishes the descriptor to compaction: last. */
	err = afm_track_get(sp, desc, dclass, false, gfp);
	if (err)
		goto untrack;
	sp->objects++;
	sp->stored_bytes += size;
	afm_slab_unlock(sp);
	return (unsigned long)desc;

untrack:
	while (t--)
		afm_track_put(sp, desc->chunk[t], class[t], false);
	afm_slab_unlock(sp);
free_chunks:
	while (i--)
		afm_chunk_free(sp, class[i], desc->chunk[i]);
	kmem_cache_free(sp->class[dclass].cache, desc);
	return (unsigned long)ERR_PTR(-ENOMEM);
}

/*
 * Unpublish and free a descriptor object. Pool lock held on entry,
 * released on return. A compaction about to move one of its chunks
 * notices the object is gone and frees the destination it allocated.
 */
static void afm_slab_free_desc(struct afm_slab_pool *sp,
			       struct afm_desc *desc)
	__releases(&sp->slabs.xa_lock)
{
	unsigned int nr, i, dclass;
	u8 class[AFM_MAX_CHUNKS];

	afm_slab_lockdep_assert_held(sp);

	nr = afm_sum_classes(afm_slab_sum(desc->size), class);
	dclass = AFM_DESC_CLASS(nr);
	for (i = 0; i < nr; i++)
		afm_track_put(sp, desc->chunk[i], class[i], false);
	afm_track_put(sp, desc, dclass, false);
	sp->objects--;
	sp->stored_bytes -= desc->size;
	afm_slab_unlock(sp);

	for (i = 0; i < nr; i++)
		afm_chunk_free(sp, class[i], desc->chunk[i]);
	kmem_cache_free(sp->class[dclass].cache, desc);
}

static void afm_slab_free(struct afm_pool *pool, unsigned long handle)
{
	struct afm_slab_pool *sp = pool->store;
	struct afm_desc *desc;
	unsigned int order, class;
	void *chunk;

	if (afm_handle_is_direct(handle)) {
		chunk = afm_direct_chunk(handle, &order);
		class = afm_chunk_class(order);

		afm_slab_lock(sp);
		if (order < AFM_MIN_CHUNK_SHIFT || order > PAGE_SHIFT ||
		    !afm_direct_is_live(sp, chunk, class)) {
			afm_slab_unlock(sp);
			WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of invalid handle %#lx\n",
				  pool->name, handle);
			return;
		}
		afm_track_put(sp, chunk, class, true);
		sp->objects--;
		sp->stored_bytes -= 1UL << order;
		afm_slab_unlock(sp);
		afm_chunk_free(sp, class, chunk);
		return;
	}

	desc = afm_handle_desc(handle);
	afm_slab_lock(sp);
	if (!afm_desc_is_live(sp, desc)) {
		afm_slab_unlock(sp);
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of invalid handle %#lx\n",
			  pool->name, handle);
		return;
	}
	/* Not AFM_DESC_LOCKED: that is only held under the pool lock. */
	if (atomic_read(&desc->state)) {
		afm_slab_unlock(sp);
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of mapped object %#lx, leaking it\n",
			  pool->name, handle);
		return;
	}
	afm_slab_free_desc(sp, desc);
}

/* Access */

static void *afm_slab_map(struct afm_pool *pool, unsigned long handle,
			  enum afm_mapmode mm, void *bounce)
{
	struct afm_desc *desc;
	unsigned int order;

	if (!afm_handle_valid(pool->store, handle))
		return NULL;
	if (afm_handle_is_direct(handle))
		return afm_direct_chunk(handle, &order);

	desc = afm_handle_desc(handle);
	afm_desc_pin(desc);
	if (afm_desc_nr(desc) == 1)
		return desc->chunk[0];
	if (mm != AFM_MM_WO)
		afm_desc_gather(desc, bounce);
	return bounce;
}

static void afm_slab_unmap(struct afm_pool *pool, unsigned long handle,
			   enum afm_mapmode mm, void *bounce)
{
	struct afm_desc *desc;

	if (afm_handle_is_direct(handle))
		return;

	desc = afm_handle_desc(handle);
	if (afm_desc_nr(desc) > 1 && mm != AFM_MM_RO)
		afm_desc_scatter(desc, bounce, desc->size);
	afm_desc_unpin(desc);
}

static size_t afm_slab_read(struct afm_pool *pool, unsigned long handle,
			    void *dst)
{
	struct afm_desc *desc;
	unsigned int order;
	size_t size;

	if (!afm_handle_valid(pool->store, handle))
		return 0;
	if (afm_handle_is_direct(handle)) {
		void *chunk = afm_direct_chunk(handle, &order);

		if (!chunk)
			return 0;
		memcpy(dst, chunk, 1UL << order);
		return 1UL << order;
	}

	desc = afm_handle_desc(handle);
	afm_desc_pin(desc);
	afm_desc_gather(desc, dst);
	size = desc->size;
	afm_desc_unpin(desc);
	return size;
}

static int afm_slab_write(struct afm_pool *pool, unsigned long handle,
			  const void *src, size_t len)
{
	struct afm_desc *desc;
	unsigned int order;

	if (!afm_handle_valid(pool->store, handle))
		return -EINVAL;
	if (afm_handle_is_direct(handle)) {
		void *chunk = afm_direct_chunk(handle, &order);

		if (!chunk || len > 1UL << order)
			return -EINVAL;
		memcpy(chunk, src, len);
		return 0;
	}

	desc = afm_handle_desc(handle);
	if (len > desc->size)
		return -EINVAL;
	afm_desc_pin(desc);
	afm_desc_scatter(desc, src, len);
	afm_desc_unpin(desc);
	return 0;
}

static size_t afm_slab_obj_size(struct afm_pool *pool, unsigned long handle)
{
	unsigned int order;

	if (!afm_handle_valid(pool->store, handle))
		return 0;
	if (afm_handle_is_direct(handle))
		return afm_direct_chunk(handle, &order) ? 1UL << order : 0;
	return afm_handle_desc(handle)->size;
}

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_slab_obj_chunks() - chunk addresses of an object (KUnit hook)
 * @pool: the pool
 * @handle: the object
 * @chunks: filled with the chunk addresses, largest first (AFM_MAX_CHUNKS)
 *
 * Context: process context; takes the pool lock.
 * Return: the number of chunks, 0 if @handle is not a live object.
 */
unsigned int afm_slab_obj_chunks(struct afm_pool *pool, unsigned long handle,
				 void **chunks)
{
	struct afm_slab_pool *sp = pool->store;
	struct afm_desc *desc = afm_handle_desc(handle);
	unsigned int i, nr = 0, order;

	afm_slab_lock(sp);
	if (afm_handle_is_direct(handle)) {
		void *chunk = afm_direct_chunk(handle, &order);

		if (order >= AFM_MIN_CHUNK_SHIFT && order <= PAGE_SHIFT &&
		    afm_direct_is_live(sp, chunk, afm_chunk_class(order))) {
			chunks[0] = chunk;
			nr = 1;
		}
	} else if (afm_desc_is_live(sp, desc)) {
		nr = afm_desc_nr(desc);
		for (i = 0; i < nr; i++)
			chunks[i] = desc->chunk[i];
	}
	afm_slab_unlock(sp);
	return nr;
}
EXPORT_SYMBOL_IF_KUNIT(afm_slab_obj_chunks);
#endif

/* Pool setup and queries */

static int afm_slab_create(struct afm_pool *pool)
{
	struct afm_slab_pool *sp;
	unsigned int class;

	sp = kzalloc(sizeof(*sp), GFP_KERNEL);
	if (!sp)
		return -ENOMEM;
	sp->pool = pool;
	xa_init(&sp->slabs);

	for (class = 0; class < AFM_NR_CLASSES; class++) {
		struct afm_slab_class *c = &sp->class[class];
		struct kmem_cache_args args = { };
		char *name;

		if (class < AFM_NR_CHUNK_CLASSES) {
			c->size = 1U << afm_class_order(class);
			/* Natural alignment: direct handles encode the order. */
			args.align = c->size;
			if (class == AFM_PAGE_CLASS)
				continue;
			name = kasprintf(GFP_KERNEL, "afm-%s-%u", pool->name,
					 c->size);
		} else {
			unsigned int nr = class - AFM_NR_CHUNK_CLASSES + 1;

			c->size = afm_desc_size(nr);
			if (nr > afm_max_chunks)
				continue;
			args.align = AFM_DESC_ALIGN;
			name = kasprintf(GFP_KERNEL, "afm-%s-desc%u", pool->name,
					 nr);
		}
		if (!name)
			goto fail;
		/* SLAB_NO_MERGE: every page of the cache is the pool's. */
		c->cache = kmem_cache_create(name, c->size, &args,
					     SLAB_NO_MERGE);
		kfree(name);	/* the slab allocator keeps its own copy */
		if (!c->cache)
			goto fail;
	}
	pool->store = sp;
	return 0;

fail:
	for (class = 0; class < AFM_NR_CLASSES; class++)
		kmem_cache_destroy(sp->class[class].cache);
	kfree(sp);
	return -ENOMEM;
}

/* Free the descriptor objects of one descriptor slab (pool teardown). */
static void afm_slab_free_dslab(struct afm_slab_pool *sp, unsigned long pfn)
{
	struct folio *folio = pfn_folio(pfn);
	unsigned long nbits = folio_size(folio) / AFM_DESC_ALIGN;
	struct afm_dslab *ds;
	unsigned long bit;

	for (;;) {
		afm_slab_lock(sp);
		ds = xa_load(&sp->slabs, pfn);
		if (!ds || xa_is_value(ds)) {
			afm_slab_unlock(sp);
			return;
		}
		bit = find_first_bit(ds->map, nbits);
		if (WARN_ON_ONCE(bit >= nbits)) {
			afm_slab_unlock(sp);
			return;
		}
		afm_slab_free_desc(sp, folio_address(folio) +
				   bit * AFM_DESC_ALIGN);
	}
}

static void afm_slab_destroy(struct afm_pool *pool)
{
	struct afm_slab_pool *sp = pool->store;
	unsigned long pfn;
	unsigned int class;
	void *entry;

	/*
	 * Freeing the pool with live objects is a caller bug. Free the
	 * descriptor objects; direct objects cannot be enumerated, so
	 * kmem_cache_destroy() reports them and their caches are leaked.
	 */
	if (WARN(afm_misused(sp->objects), "afmalloc: pool %s destroyed with %lu live objects\n",
		 pool->name, sp->objects)) {
		xa_for_each(&sp->slabs, pfn, entry) {
			if (!xa_is_value(entry))
				afm_slab_free_dslab(sp, pfn);
		}
	}
	xa_destroy(&sp->slabs);
	for (class = 0; class < AFM_NR_CLASSES; class++)
		kmem_cache_destroy(sp->class[class].cache);
	kfree(sp);
}

static unsigned long afm_slab_total_pages(struct afm_pool *pool)
{
	struct afm_slab_pool *sp = pool->store;

	return atomic_long_read(&sp->total_pages);
}

static void afm_slab_stats(struct afm_pool *pool, struct afm_store_stats *st)
{
	struct afm_slab_pool *sp = pool->store;
	unsigned long desc_pages = 0;
	unsigned int class;

	afm_slab_lock(sp);
	st->objects = sp->objects;
	st->stored_bytes = sp->stored_bytes;
	for (class = AFM_NR_CHUNK_CLASSES; class < AFM_NR_CLASSES; class++)
		desc_pages += sp->class[class].stat[AFM_CLASS_PAGES];
	st->meta_bytes = (desc_pages << PAGE_SHIFT) + sp->dslab_bytes;
	afm_slab_unlock(sp);
	/* Compacted by afm_compact() alone. */
	st->self_compacted = 0;
}

static unsigned int afm_slab_nr_classes(struct afm_pool *pool)
{
	return AFM_NR_CHUNK_CLASSES + afm_max_chunks;
}

static void afm_slab_class_stats(struct afm_pool *pool, unsigned int class,
				 char name[16],
				 unsigned long val[NR_AFM_CLASS_STATS])
{
	struct afm_slab_pool *sp = pool->store;

	if (class < AFM_NR_CHUNK_CLASSES)
		snprintf(name, 16, "%u", sp->class[class].size);
	else
		snprintf(name, 16, "desc%u", class - AFM_NR_CHUNK_CLASSES + 1);
	afm_slab_lock(sp);
	memcpy(val, sp->class[class].stat, sizeof(sp->class[class].stat));
	afm_slab_unlock(sp);
}

/*
 * Bytes of xarray nodes of the slab tracker: exact, from the count kept
 * where slabs enter and leave it. No lock: a debugfs read neither waits
 * for nor holds up the pool.
 */
static unsigned long afm_slab_aux_bytes(struct afm_pool *pool)
{
	struct afm_slab_pool *sp = pool->store;

	return READ_ONCE(sp->trk_nodes) * sizeof(struct xa_node);
}

static size_t afm_slab_huge_class_size(struct afm_pool *pool)
{
	return afm_huge_size;
}

static unsigned int afm_slab_class_index(struct afm_pool *pool,
					 unsigned int size)
{
	return afm_footprint(size);
}

const struct afm_store_ops afm_slab_store_ops = {
	.name			= "slab",
	.create			= afm_slab_create,
	.destroy		= afm_slab_destroy,
	.malloc			= afm_slab_malloc,
	.free			= afm_slab_free,
	.map			= afm_slab_map,
	.unmap			= afm_slab_unmap,
	.read			= afm_slab_read,
	.write			= afm_slab_write,
	.obj_size		= afm_slab_obj_size,
	.total_pages		= afm_slab_total_pages,
	.compact		= afm_slab_compact,
	.stats			= afm_slab_stats,
	.nr_classes		= afm_slab_nr_classes,
	.class_stats		= afm_slab_class_stats,
	.aux_bytes		= afm_slab_aux_bytes,
	.huge_class_size	= afm_slab_huge_class_size,
	.class_index		= afm_slab_class_index,
};
