// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc slab store compaction: address-sorted evacuation of sparse slabs.
 *
 * Slab pages cannot be migrated, and a slab goes back to the page allocator
 * only when all its objects are freed. Compaction therefore empties the
 * most sparsely used slabs of each chunk class by moving their chunks
 * elsewhere, which only afmalloc can do: it owns the pointers to them.
 *
 * A round:
 *  1. plan: walk the slab tracker and, per chunk class, histogram the slabs
 *     without direct objects by occupancy (live chunks / capacity, the
 *     capacity being folio size / chunk size, or less under slab debugging,
 *     see afm_slab_capacity()). Pick the largest occupancy threshold such
 *     that the live chunks of the slabs below it fit in the free slots of
 *     all the others.
 *  2. pick: walk the tracker again, in pfn (so address) order, and take the
 *     slabs below the threshold, at most AFM_COMPACT_MAX_SLABS slabs and
 *     AFM_COMPACT_MAX_MOVES chunks.
 *  3. collect: walk the descriptors (through the live bitmaps of the
 *     descriptor slabs: there is no per-object list) and note every chunk
 *     lying in a picked slab. Sort by class and address.
 *  4. move, per class, in batches that fit the compaction buffer:
 *     a. under the pool lock, for each chunk whose object is not pinned:
 *        copy it into the buffer, point the descriptor at the copy, drop
 *        the chunk from the tracker;
 *     b. free the old chunks: the picked slabs are now empty;
 *        kmem_cache_shrink() gives them back to the page allocator and
 *        sorts the partial lists fullest first;
 *     c. allocate new chunks, which come from the fullest partial slabs,
 *        copy the data back and point the descriptors at them.
 *     While a chunk is in the buffer its object stays fully usable: the
 *     descriptor points at the copy, so map, read, write and free work as
 *     usual (free leaves the copy alone, the buffer is compaction's).
 * Rounds repeat while they move something, up to AFM_COMPACT_MAX_ROUNDS.
 * Finally every cache of the pool is shrunk.
 *
 * Pinned (mapped) objects are never moved: step 4a takes AFM_DESC_LOCKED
 * with a trylock that fails while the object is pinned. If an object gets
 * pinned while its chunk is in the buffer, step 4c waits for the pin to go
 * away (pins are short: a mapping is held with preemption disabled).
 *
 * Not moved: direct objects (their handle is their address; their slabs are
 * never picked), descriptors (they are the handles) and PAGE_SIZE chunks
 * (a page each, nothing to compact).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/bsearch.h>
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "slab_store.h"

/* Compaction buffer: at most this big, at least PAGE_SIZE. */
#define AFM_COMPACT_BUF_MAX	SZ_64K
/* Per round: slabs picked and chunks moved at most. */
#define AFM_COMPACT_MAX_SLABS	512
#define AFM_COMPACT_MAX_MOVES	4096
#define AFM_COMPACT_MAX_ROUNDS	256
/* Occupancy histogram resolution. */
#define AFM_COMPACT_BUCKETS	16
/* Tracker entries or chunks handled per hold of the pool lock. */
#define AFM_COMPACT_LOCK_BATCH	64
/* Chunk classes backed by a slab cache. */
#define AFM_NR_SLAB_CLASSES	AFM_PAGE_CLASS

/**
 * struct afm_move - one chunk to move
 * @desc: descriptor of its object.
 * @old: the chunk.
 * @tmp: its copy in the compaction buffer while it moves, else NULL.
 * @new: its replacement, once allocated.
 * @idx: its index in @desc->chunk.
 * @class: its class.
 */
struct afm_move {
	struct afm_desc *desc;
	void *old;
	void *tmp;
	void *new;
	unsigned int idx;
	unsigned int class;
};

/**
 * struct afm_compact_ctl - state of one compaction run
 * @sp: the store.
 * @buf: compaction buffer (linear map), @buf_size bytes.
 * @buf_size: size of @buf.
 * @cand: pfns of the picked slabs, ascending.
 * @nr_cand: number of picked slabs.
 * @moves: chunks to move.
 * @nr_moves: number of chunks to move.
 * @live: per class and occupancy bucket, live chunks of slabs without
 *	direct objects.
 * @free_in: same, free slots.
 * @free_all: per class, free slots of all its slabs.
 * @threshold: per class, slabs below this bucket are picked, -1 for none.
 * @allow: per class, free slots left for slabs of bucket @threshold.
 */
struct afm_compact_ctl {
	struct afm_slab_pool *sp;
	void *buf;
	size_t buf_size;
	unsigned long *cand;
	unsigned int nr_cand;
	struct afm_move *moves;
	unsigned int nr_moves;
	unsigned long live[AFM_NR_SLAB_CLASSES][AFM_COMPACT_BUCKETS];
	unsigned long free_in[AFM_NR_SLAB_CLASSES][AFM_COMPACT_BUCKETS];
	unsigned long free_all[AFM_NR_SLAB_CLASSES];
	int threshold[AFM_NR_SLAB_CLASSES];
	unsigned long allow[AFM_NR_SLAB_CLASSES];
};

/*
 * Chunk slots of the slab at @pfn: folio size / chunk size, or fewer when
 * no slab of that order was ever seen fuller (slab debugging pads objects).
 * Never more than the real capacity once a slab of that order has filled.
 */
static unsigned long afm_slab_capacity(struct afm_slab_pool *sp,
				       unsigned long pfn, unsigned int class)
{
	struct folio *folio = pfn_folio(pfn);
	unsigned int order = folio_order(folio);
	unsigned long cap = folio_size(folio) >> afm_class_order(class);

	if (order < AFM_NR_SLAB_ORDERS)
		cap = min_t(unsigned long, cap,
			    sp->class[class].cap_seen[order]);
	return cap;
}

/* Drop the pool lock every AFM_COMPACT_LOCK_BATCH steps of a walk. */
static void afm_compact_breathe(struct afm_slab_pool *sp,
				struct xa_state *xas, unsigned int *n)
{
	if (++*n % AFM_COMPACT_LOCK_BATCH)
		return;
	xas_pause(xas);
	afm_slab_unlock(sp);
	cond_resched();
	afm_slab_lock(sp);
}

/*
 * Chunk slab @v at @pfn: its class and occupancy bucket if it may be
 * evacuated, false if not (full, other class, or holding direct objects).
 */
static bool afm_compact_slab(struct afm_slab_pool *sp, unsigned long pfn,
			     unsigned long v, unsigned int *class,
			     unsigned int *bucket, unsigned long *cap)
{
	unsigned long live = afm_trk_live(v);

	*class = afm_trk_class(v);
	if (*class >= AFM_NR_SLAB_CLASSES)
		return false;
	*cap = afm_slab_capacity(sp, pfn, *class);
	if (live >= *cap)
		return false;
	*bucket = live * AFM_COMPACT_BUCKETS / *cap;
	return !afm_trk_direct(v);
}

static void afm_compact_plan_slab(struct afm_compact_ctl *ctl,
				  unsigned long pfn, unsigned long v)
{
	unsigned long live = afm_trk_live(v), cap = 0;
	unsigned int class, b;
	bool movable;

	movable = afm_compact_slab(ctl->sp, pfn, v, &class, &b, &cap);
	if (class >= AFM_NR_SLAB_CLASSES || live >= cap)
		return;
	ctl->free_all[class] += cap - live;
	if (movable) {
		ctl->live[class][b] += live;
		ctl->free_in[class][b] += cap - live;
	}
}

static bool afm_compact_plan(struct afm_compact_ctl *ctl)
{
	struct afm_slab_pool *sp = ctl->sp;
	XA_STATE(xas, &sp->slabs, 0);
	unsigned int class, b, n = 0;
	bool any = false;
	void *entry;

	memset(ctl->live, 0, sizeof(ctl->live));
	memset(ctl->free_in, 0, sizeof(ctl->free_in));
	memset(ctl->free_all, 0, sizeof(ctl->free_all));

	afm_slab_lock(sp);
	xas_for_each(&xas, entry, ULONG_MAX) {
		if (xa_is_value(entry))
			afm_compact_plan_slab(ctl, xas.xa_index,
					      xa_to_value(entry));
		afm_compact_breathe(sp, &xas, &n);
	}
	afm_slab_unlock(sp);

	for (class = 0; class < AFM_NR_SLAB_CLASSES; class++) {
		unsigned long moved = 0, lost = 0, room;

		ctl->threshold[class] = -1;
		for (b = 0; b < AFM_COMPACT_BUCKETS; b++) {
			/* Free slots outside the slabs evacuated so far. */
			room = ctl->free_all[class] - lost;
			if (moved + ctl->live[class][b] +
			    ctl->free_in[class][b] > room) {
				/* Bucket b only partly: see afm_compact_pick(). */
				ctl->threshold[class] = b;
				ctl->allow[class] = room - moved;
				break;
			}
			moved += ctl->live[class][b];
			lost += ctl->free_in[class][b];
		}
		if (b == AFM_COMPACT_BUCKETS) {
			ctl->threshold[class] = b;
			ctl->allow[class] = 0;
		}
		if (moved || ctl->allow[class])
			any = true;
	}
	return any;
}

/* Pick the slab at @pfn if it qualifies. False when the round is full. */
static bool afm_compact_pick_slab(struct afm_compact_ctl *ctl,
				  unsigned long pfn, unsigned long v,
				  unsigned long *budget)
{
	unsigned long cap = 0;
	unsigned int class, b;

	if (!afm_compact_slab(ctl->sp, pfn, v, &class, &b, &cap) ||
	    (int)b > ctl->threshold[class])
		return true;
	if ((int)b == ctl->threshold[class]) {
		/* Its live chunks move out and its free slots are lost. */
		if (cap > ctl->allow[class])
			return true;
		ctl->allow[class] -= cap;
	}
	if (*budget + afm_trk_live(v) > AFM_COMPACT_MAX_MOVES)
		return false;
	*budget += afm_trk_live(v);
	ctl->cand[ctl->nr_cand++] = pfn;
	return ctl->nr_cand < AFM_COMPACT_MAX_SLABS;
}

static bool afm_compact_pick(struct afm_compact_ctl *ctl)
{
	struct afm_slab_pool *sp = ctl->sp;
	XA_STATE(xas, &sp->slabs, 0);
	unsigned long budget = 0;
	unsigned int n = 0;
	void *entry;

	ctl->nr_cand = 0;
	afm_slab_lock(sp);
	xas_for_each(&xas, entry, ULONG_MAX) {
		if (xa_is_value(entry) &&
		    !afm_compact_pick_slab(ctl, xas.xa_index,
					   xa_to_value(entry), &budget))
			break;
		afm_compact_breathe(sp, &xas, &n);
	}
	afm_slab_unlock(sp);
	return ctl->nr_cand;
}

static int afm_cmp_pfn(const void *key, const void *elt)
{
	unsigned long a = *(const unsigned long *)key;
	unsigned long b = *(const unsigned long *)elt;

	return a < b ? -1 : a > b;
}

/* Note the chunks of @desc that lie in picked slabs. False when full. */
static bool afm_compact_collect_desc(struct afm_compact_ctl *ctl,
				     struct afm_desc *desc)
{
	u8 class[AFM_MAX_CHUNKS];
	unsigned int i, nr = 0;
	unsigned int sum = afm_slab_sum(desc->size);

	while (sum) {
		class[nr++] = afm_chunk_class(__fls(sum));
		sum &= ~(1U << __fls(sum));
	}
	for (i = 0; i < nr; i++) {
		unsigned long pfn;

		if (class[i] >= AFM_NR_SLAB_CLASSES ||
		    ctl->threshold[class[i]] < 0)
			continue;
		pfn = folio_pfn(virt_to_folio(desc->chunk[i]));
		if (!bsearch(&pfn, ctl->cand, ctl->nr_cand, sizeof(*ctl->cand),
			     afm_cmp_pfn))
			continue;
		if (ctl->nr_moves == AFM_COMPACT_MAX_MOVES)
			return false;
		ctl->moves[ctl->nr_moves++] = (struct afm_move) {
			.desc = desc,
			.old = desc->chunk[i],
			.idx = i,
			.class = class[i],
		};
	}
	return true;
}

/* Walk the live descriptors of one descriptor slab. False when full. */
static bool afm_compact_collect_dslab(struct afm_compact_ctl *ctl,
				      unsigned long pfn, struct afm_dslab *ds)
{
	struct folio *folio = pfn_folio(pfn);
	unsigned long bit;

	for_each_set_bit(bit, ds->map, folio_size(folio) / AFM_DESC_ALIGN) {
		if (!afm_compact_collect_desc(ctl, folio_address(folio) +
					      bit * AFM_DESC_ALIGN))
			return false;
	}
	return true;
}

static void afm_compact_collect(struct afm_compact_ctl *ctl)
{
	struct afm_slab_pool *sp = ctl->sp;
	XA_STATE(xas, &sp->slabs, 0);
	unsigned int n = 0;
	void *entry;

	ctl->nr_moves = 0;
	afm_slab_lock(sp);
	xas_for_each(&xas, entry, ULONG_MAX) {
		if (!xa_is_value(entry) &&
		    !afm_compact_collect_dslab(ctl, xas.xa_index, entry))
			break;
		afm_compact_breathe(sp, &xas, &n);
	}
	afm_slab_unlock(sp);
}

/* Is @mv still chunk @mv->idx of a live object, currently at @at? */
static bool afm_move_valid(struct afm_slab_pool *sp, struct afm_move *mv,
			   void *at)
{
	return afm_desc_is_live(sp, mv->desc) &&
	       afm_desc_chunk_class(mv->desc, mv->idx) == (int)mv->class &&
	       mv->desc->chunk[mv->idx] == at;
}

static void *afm_compact_alloc(struct afm_slab_pool *sp, unsigned int class)
{
	struct kmem_cache *cache = sp->class[class].cache;
	void *p = kmem_cache_alloc(cache, GFP_NOIO | __GFP_NOWARN);

	/*
	 * The batch has just given back at least as much memory as it needs
	 * here, and the data has nowhere else to go: the buffer is needed
	 * for the next batch.
	 */
	return p ?: kmem_cache_alloc(cache, GFP_NOIO | __GFP_NOFAIL);
}

/* Put @mv->new in place of the copy. True when @mv is done. */
static bool afm_compact_install(struct afm_slab_pool *sp, struct afm_move *mv)
{
	size_t csize = sp->class[mv->class].size;

	afm_slab_lock(sp);
	if (!afm_move_valid(sp, mv, mv->tmp))
		goto gone;
	if (atomic_read(&mv->desc->state))
		goto busy;
	/* May drop the pool lock: validate again. */
	if (afm_track_get(sp, mv->new, mv->class, false, GFP_NOIO | __GFP_NOWARN))
		goto busy;
	if (!afm_move_valid(sp, mv, mv->tmp)) {
		afm_track_put(sp, mv->new, mv->class, false);
		goto gone;
	}
	if (!afm_desc_trylock(mv->desc)) {
		afm_track_put(sp, mv->new, mv->class, false);
		goto busy;
	}
	memcpy(mv->new, mv->tmp, csize);
	mv->desc->chunk[mv->idx] = mv->new;
	afm_desc_unlock(mv->desc);
	afm_slab_unlock(sp);
	mv->tmp = NULL;
	mv->new = NULL;
	return true;

gone:
	/* Freed while in the buffer: afm_free() left the copy to us. */
	afm_slab_unlock(sp);
	kmem_cache_free(sp->class[mv->class].cache, mv->new);
	mv->tmp = NULL;
	mv->new = NULL;
	return true;

busy:
	afm_slab_unlock(sp);
	return false;
}

static void afm_compact_reinstall(struct afm_compact_ctl *ctl,
				  struct afm_move *m, unsigned int n,
				  unsigned int pending)
{
	struct afm_slab_pool *sp = ctl->sp;
	unsigned long start = jiffies;
	bool warned = false;
	unsigned int k;

	for (;;) {
		for (k = 0; k < n; k++) {
			if (!m[k].tmp)
				continue;
			if (!m[k].new)
				m[k].new = afm_compact_alloc(sp, m[k].class);
			if (afm_compact_install(sp, &m[k]))
				pending--;
		}
		if (!pending)
			return;
		/* Objects pinned since step a: wait for their users. */
		if (!warned && time_after(jiffies, start + 10 * HZ)) {
			pr_warn("pool %s: compaction waits for a pinned object\n",
				sp->pool->name);
			warned = true;
		}
		schedule_timeout_uninterruptible(1);
	}
}

/* Move @n chunks of one class through the buffer. Returns chunks moved. */
static unsigned int afm_compact_batch(struct afm_compact_ctl *ctl,
				      struct afm_move *m, unsigned int n)
{
	struct afm_slab_pool *sp = ctl->sp;
	unsigned int class = m[0].class;
	struct kmem_cache *cache = sp->class[class].cache;
	size_t csize = sp->class[class].size;
	unsigned int k, moved = 0;
	void *slot = ctl->buf;

	/* a: copy out, point the descriptors at the copies */
	afm_slab_lock(sp);
	for (k = 0; k < n; k++) {
		struct afm_move *mv = &m[k];

		if (k && !(k % AFM_COMPACT_LOCK_BATCH)) {
			afm_slab_unlock(sp);
			cond_resched();
			afm_slab_lock(sp);
		}
		mv->tmp = NULL;
		mv->new = NULL;
		if (!afm_move_valid(sp, mv, mv->old) ||
		    !afm_desc_trylock(mv->desc))
			continue;	/* freed, or pinned: leave it */
		memcpy(slot, mv->old, csize);
		mv->desc->chunk[mv->idx] = slot;
		afm_desc_unlock(mv->desc);
		afm_track_put(sp, mv->old, class, false);
		mv->tmp = slot;
		slot += csize;
		moved++;
	}
	afm_slab_unlock(sp);
	if (!moved)
		return 0;

	/* b: empty the sparse slabs and give them back */
	for (k = 0; k < n; k++) {
		if (m[k].tmp)
			kmem_cache_free(cache, m[k].old);
	}
	kmem_cache_shrink(cache);
	afm_compact_test_hook(sp->pool);

	/* c: new chunks come from the fullest partial slabs */
	afm_compact_reinstall(ctl, m, n, moved);
	return moved;
}

static int afm_cmp_move(const void *a, const void *b)
{
	const struct afm_move *x = a, *y = b;

	if (x->class != y->class)
		return x->class < y->class ? -1 : 1;
	if (x->old != y->old)
		return x->old < y->old ? -1 : 1;
	return 0;
}

static unsigned int afm_compact_move(struct afm_compact_ctl *ctl)
{
	struct afm_move *m = ctl->moves;
	unsigned int i, j, moved = 0;

	sort(m, ctl->nr_moves, sizeof(*m), afm_cmp_move, NULL);
	for (i = 0; i < ctl->nr_moves; i = j) {
		size_t per = ctl->buf_size / ctl->sp->class[m[i].class].size;

		for (j = i + 1; j < ctl->nr_moves && j - i < per &&
		     m[j].class == m[i].class; j++)
			;
		moved += afm_compact_batch(ctl, &m[i], j - i);
		cond_resched();
		if (fatal_signal_pending(current))
			break;
	}
	return moved;
}

/**
 * afm_slab_compact() - compact a slab store pool
 * @pool: the pool
 *
 * Context: Process context; &afm_pool.compact_lock held.
 */
void afm_slab_compact(struct afm_pool *pool)
{
	struct afm_slab_pool *sp = pool->store;
	struct afm_compact_ctl *ctl;
	unsigned int round, class;
	size_t size;

	lockdep_assert_held(&pool->compact_lock);

	ctl = kzalloc(sizeof(*ctl), GFP_KERNEL);
	if (!ctl)
		goto shrink;
	ctl->sp = sp;
	ctl->cand = kvmalloc_array(AFM_COMPACT_MAX_SLABS, sizeof(*ctl->cand),
				   GFP_KERNEL);
	ctl->moves = kvmalloc_array(AFM_COMPACT_MAX_MOVES, sizeof(*ctl->moves),
				    GFP_KERNEL);
	/* Linear-map memory: mappings of a moving chunk point into it. */
	for (size = AFM_COMPACT_BUF_MAX; size >= PAGE_SIZE; size >>= 1) {
		ctl->buf = kmalloc(size, GFP_KERNEL | __GFP_NORETRY |
				   __GFP_NOWARN);
		if (ctl->buf)
			break;
	}
	ctl->buf_size = size;
	if (!ctl->cand || !ctl->moves || !ctl->buf)
		goto free;

	afm_slab_lock(sp);
	sp->cbuf = ctl->buf;
	sp->cbuf_size = ctl->buf_size;
	afm_slab_unlock(sp);

	for (round = 0; round < AFM_COMPACT_MAX_ROUNDS; round++) {
		if (!afm_compact_plan(ctl) || !afm_compact_pick(ctl))
			break;
		afm_compact_collect(ctl);
		if (!afm_compact_move(ctl) || fatal_signal_pending(current))
			break;
	}

	afm_slab_lock(sp);
	sp->cbuf = NULL;
	sp->cbuf_size = 0;
	afm_slab_unlock(sp);
free:
	kfree(ctl->buf);
	kvfree(ctl->moves);
	kvfree(ctl->cand);
	kfree(ctl);
shrink:
	/* Give back the empty slabs SLUB keeps cached, in every cache. */
	for (class = 0; class < AFM_NR_CLASSES; class++) {
		if (sp->class[class].cache)
			kmem_cache_shrink(sp->class[class].cache);
	}
}
