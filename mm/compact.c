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
 *  4. move, per class, in batches of at most AFM_COMPACT_BATCH_BYTES:
 *     a. shrink the class's cache, which gives back the slabs emptied by
 *        the previous batch and sorts the partial lists fullest first,
 *        then allocate a destination for every chunk of the batch: they
 *        come from the fullest partial slabs, not from the sparse ones
 *        being emptied (SLUB sorts only slabs with few free slots, so an
 *        allocation that lands in a picked slab is held until the batch
 *        has its destinations, which moves SLUB on, then freed). An
 *        allocation failure ends the pass: the chunks that got a
 *        destination still move, the others stay where they are;
 *     b. under the pool lock, for each chunk whose object is still live
 *        and not pinned: copy it to its destination and point the
 *        descriptor there;
 *     c. free the chunks given up: the sources of the moved chunks and
 *        the destinations not used.
 *     A source is freed only once its data is in its destination, so an
 *     allocation failure never leaves data without a place: compaction is
 *     optional work and never insists on memory (no __GFP_NOFAIL, no
 *     retry loop).
 * Rounds repeat while they move something, up to AFM_COMPACT_MAX_ROUNDS.
 * Finally every cache of the pool is shrunk.
 *
 * Pinned (mapped) objects are never moved and never waited for: step 4b
 * takes AFM_DESC_LOCKED with a trylock that fails while the object is
 * pinned, and the chunk stays where it is (a later pass may move it).
 * AFM_DESC_LOCKED is held only for the copy of one chunk, so a user
 * pinning the object spins at most that long.
 *
 * Not moved: direct objects (their handle is their address; their slabs are
 * never picked), descriptors (they are the handles) and PAGE_SIZE chunks
 * (a page each, nothing to compact).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/bsearch.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "slab_store.h"

/* Destinations allocated at once: at most this many bytes, at least one. */
#define AFM_COMPACT_BATCH_BYTES	SZ_64K
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
 * struct afm_compact_ctl - state of one compaction run
 * @sp: the store.
 * @nomem: an allocation failed: the pass ends after the current batch.
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
 * @cand_free: per class, free slots of the picked slabs.
 */
struct afm_compact_ctl {
	struct afm_slab_pool *sp;
	bool nomem;
	unsigned long *cand;
	unsigned int nr_cand;
	struct afm_move *moves;
	unsigned int nr_moves;
	unsigned long live[AFM_NR_SLAB_CLASSES][AFM_COMPACT_BUCKETS];
	unsigned long free_in[AFM_NR_SLAB_CLASSES][AFM_COMPACT_BUCKETS];
	unsigned long free_all[AFM_NR_SLAB_CLASSES];
	int threshold[AFM_NR_SLAB_CLASSES];
	unsigned long allow[AFM_NR_SLAB_CLASSES];
	unsigned long cand_free[AFM_NR_SLAB_CLASSES];
};

/*
 * Chunk slots of the slab at @pfn: folio size / chunk size, or fewer when
 * no slab of that order was ever seen fuller (slab debugging pads objects).
 * Never more than the real capacity once a slab of that order has filled.
 * Pool lock held.
 */
static unsigned long afm_slab_capacity(struct afm_slab_pool *sp,
				       unsigned long pfn, unsigned int class)
{
	struct folio *folio = pfn_folio(pfn);
	unsigned int order = folio_order(folio);
	unsigned long cap = folio_size(folio) >> afm_class_order(class);

	afm_slab_lockdep_assert_held(sp);
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
 * Pool lock held (afm_slab_capacity()).
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
	ctl->cand_free[class] += cap - afm_trk_live(v);
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
	memset(ctl->cand_free, 0, sizeof(ctl->cand_free));
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

/* Does @p lie in a slab picked for evacuation? */
static bool afm_compact_picked(struct afm_compact_ctl *ctl, void *p)
{
	unsigned long pfn = folio_pfn(virt_to_folio(p));

	return bsearch(&pfn, ctl->cand, ctl->nr_cand, sizeof(*ctl->cand),
		       afm_cmp_pfn);
}

/*
 * Move @mv to its destination @mv->new. Pool lock held; may drop and
 * retake it. Returns 1 when moved (@mv->old is then to be freed, else
 * @mv->new), 0 when left where it is, -ENOMEM when tracking @mv->new
 * needed memory there was none of.
 */
static int afm_compact_switch(struct afm_compact_ctl *ctl, struct afm_move *mv)
{
	struct afm_slab_pool *sp = ctl->sp;

	if (!afm_move_valid(sp, mv, mv->old) ||
	    afm_compact_picked(ctl, mv->new))
		return 0;	/* freed, or nothing gained */
	/* May drop the pool lock: validate again. */
	if (afm_track_get(sp, mv->new, mv->class, false,
			  GFP_NOIO | __GFP_NORETRY | __GFP_NOWARN))
		return -ENOMEM;
	if (!afm_move_valid(sp, mv, mv->old) || !afm_desc_trylock(mv->desc)) {
		/* Freed, or pinned: it stays where it is. */
		afm_track_put(sp, mv->new, mv->class, false);
		return 0;
	}
	memcpy(mv->new, mv->old, sp->class[mv->class].size);
	mv->desc->chunk[mv->idx] = mv->new;
	afm_desc_unlock(mv->desc);
	afm_track_put(sp, mv->old, mv->class, false);
	return 1;
}

/* Move @n chunks of one class. Returns chunks moved. */
static unsigned int afm_compact_batch(struct afm_compact_ctl *ctl,
				      struct afm_move *m, unsigned int n)
{
	struct afm_slab_pool *sp = ctl->sp;
	unsigned int class = m[0].class;
	unsigned int k, nr_new, moved = 0;
	unsigned long budget;
	void *held = NULL;
	int ret;

	/*
	 * a: destinations, from the fullest partial slabs. One that lands in
	 * a picked slab (whose free slots SLUB may hand out before those of
	 * fuller slabs) is held, linked through itself, until the batch has
	 * its destinations, so that SLUB moves on; at most as many as the
	 * picked slabs have free slots.
	 */
	kmem_cache_shrink(sp->class[class].cache);
	budget = n + ctl->cand_free[class];
	for (nr_new = 0; nr_new < n && budget; budget--) {
		void *p = afm_chunk_alloc(sp, class, GFP_NOIO |
					  __GFP_NORETRY | __GFP_NOWARN);

		if (!p) {
			ctl->nomem = true;
			break;
		}
		if (!(budget % AFM_COMPACT_LOCK_BATCH))
			cond_resched();
		if (afm_compact_picked(ctl, p)) {
			*(void **)p = held;
			held = p;
			continue;
		}
		m[nr_new].moved = false;
		m[nr_new++].new = p;
	}
	while (held) {
		void *next = *(void **)held;

		afm_chunk_free(sp, class, held);
		held = next;
	}
	sp->cmoves = m;
	sp->nr_cmoves = nr_new;
	afm_compact_test_hook(sp->pool);
	sp->cmoves = NULL;
	sp->nr_cmoves = 0;

	/* b: copy and switch, object by object */
	afm_slab_lock(sp);
	for (k = 0; k < nr_new; k++) {
		if (k && !(k % AFM_COMPACT_LOCK_BATCH)) {
			afm_slab_unlock(sp);
			cond_resched();
			afm_slab_lock(sp);
		}
		ret = afm_compact_switch(ctl, &m[k]);
		if (ret < 0) {
			ctl->nomem = true;
			break;
		}
		m[k].moved = ret;
		moved += ret;
	}
	afm_slab_unlock(sp);

	/* c: free what was given up */
	for (k = 0; k < nr_new; k++)
		afm_chunk_free(sp, class, m[k].moved ? m[k].old : m[k].new);
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
	for (i = 0; i < ctl->nr_moves && !ctl->nomem; i = j) {
		size_t per = max_t(size_t, 1, AFM_COMPACT_BATCH_BYTES /
				   ctl->sp->class[m[i].class].size);

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
 * Moves chunks out of sparse slabs and gives the emptied slabs back, see
 * the top of this file. Gives up early, leaving every object in a valid
 * place, on an allocation failure or a fatal signal.
 *
 * Context: Process context; &afm_pool.compact_lock held.
 * Return: the pages the pool held before less those it holds after (the
 * store has no compaction but this, and no count of its own of what it
 * freed: frees and allocations meanwhile count too).
 */
unsigned long afm_slab_compact(struct afm_pool *pool)
{
	struct afm_slab_pool *sp = pool->store;
	unsigned long before = atomic_long_read(&sp->total_pages), after;
	struct afm_compact_ctl *ctl;
	unsigned int round, class;

	lockdep_assert_held(&pool->compact_lock);

	ctl = kzalloc(sizeof(*ctl), GFP_KERNEL);
	if (!ctl)
		goto shrink;
	ctl->sp = sp;
	ctl->cand = kvmalloc_array(AFM_COMPACT_MAX_SLABS, sizeof(*ctl->cand),
				   GFP_KERNEL);
	ctl->moves = kvmalloc_array(AFM_COMPACT_MAX_MOVES, sizeof(*ctl->moves),
				    GFP_KERNEL);
	if (!ctl->cand || !ctl->moves)
		goto free;

	for (round = 0; round < AFM_COMPACT_MAX_ROUNDS; round++) {
		if (!afm_compact_plan(ctl) || !afm_compact_pick(ctl))
			break;
		afm_compact_collect(ctl);
		if (!afm_compact_move(ctl) || ctl->nomem ||
		    fatal_signal_pending(current))
			break;
	}

free:
	kvfree(ctl->moves);
	kvfree(ctl->cand);
	kfree(ctl);
shrink:
	/* Give back the empty slabs SLUB keeps cached, in every cache. */
	for (class = 0; class < AFM_NR_CLASSES; class++) {
		if (sp->class[class].cache)
			kmem_cache_shrink(sp->class[class].cache);
	}
	after = atomic_long_read(&sp->total_pages);
	return before > after ? before - after : 0;
}
