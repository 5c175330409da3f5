// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: compaction. A pass takes victims from the hole
 * lists, walks their extents (the object headers) and moves their unpinned
 * objects; the automatic worker, the rest run and the shrinker call it
 * (see "Compaction" in zspage_store.c).
 *
 * Locking: &afm_zs_pool.compact_lock (one pass at a time in a shard; under
 * &afm_pool.compact_lock for afm_compact()) -> pool lock
 * (dropped every 256 extents or 16 moves, and for each move's copy) ->
 * entry LOCK (trylock) -> zspage gates, shared (trylock; see
 * afm_zs_move()). Header accesses need no zspage gate: migration takes the
 * pool lock too. A move's copy runs under the gates of both zspages
 * without the pool lock, or, when either gate is held exclusively, under
 * the pool lock; its entry keeps LOCK until the copy is done, which frees
 * and pins wait for.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

/*
 * Automatic compaction starts when holes exceed this many thousandths of
 * the live bytes (and AFM_ZS_AUTO_MIN zspages), and stops at half of it.
 * 0 disables it (the shrinker and afm_compact() still work). A run while
 * writes go on copies at most 3 bytes per byte it frees (it takes zspages
 * with a quarter of their bytes in holes), so a lower trigger means more,
 * smaller runs, not more copying per byte; under random overwrites the
 * holes settle above the trigger, in zspages below that threshold, until
 * the rest run takes them.
 */
unsigned int afm_zs_auto_permille = 1;

/* At most 1000 (holes as many bytes as the live ones): -EINVAL beyond. */
static int afm_zs_auto_permille_set(const char *val,
				    const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 1000);
}

static const struct kernel_param_ops afm_zs_auto_permille_ops = {
	.set	= afm_zs_auto_permille_set,
	.get	= param_get_uint,
};
module_param_cb(zspage_auto_permille, &afm_zs_auto_permille_ops,
		&afm_zs_auto_permille, 0644);
MODULE_PARM_DESC(zspage_auto_permille,
		 "zspage store: holes (per mille of live bytes, 0 to 1000) that start automatic compaction, 0 = off");

/*
 * Compaction moves objects into holes of dense zspages when one fits
 * (afm_zs_hole_find_dense()), else to tails; off, only to tails.
 */
bool afm_zs_compact_holes = true;
module_param_named(zspage_compact_holes, afm_zs_compact_holes, bool, 0644);
MODULE_PARM_DESC(zspage_compact_holes,
		 "zspage store: compaction moves objects into holes of dense zspages (default on), else to tails");

/* Allocation and free */

/* Hole bytes above which automatic compaction runs. Pool lock held. */
static unsigned long afm_zs_trigger(const struct afm_zs_pool *zs)
{
	return max(zs->live_bytes / 1000 * READ_ONCE(afm_zs_auto_permille),
		   (unsigned long)AFM_ZS_AUTO_MIN * AFM_ZS_SIZE);
}

/*
 * Hole bytes above which the rest run comes: the trigger's share of the
 * live bytes, with a floor of AFM_ZS_REST_FLOOR instead of AFM_ZS_AUTO_MIN
 * zspages. That floor batches the runs while writes go on; at rest there
 * is one run, and in a pool of a few MiB (zswap's after writeback, a
 * phone's) 4 zspages of holes would be several per cent of what it
 * stores. Pool lock held.
 */
static unsigned long afm_zs_rest_trigger(const struct afm_zs_pool *zs)
{
	return max(zs->live_bytes / 1000 * READ_ONCE(afm_zs_auto_permille),
		   (unsigned long)AFM_ZS_REST_FLOOR);
}

/*
 * Above the trigger, compaction is queued now (AFM_ZS_AUTO_NOW: it starts
 * at once, or when AFM_ZS_AUTO_GAP since the start of the shard's last run
 * is over) if the holes allocation will not reuse soon
 * (afm_zs_holes_unrecorded(): off the hole index, or beyond its reserve)
 * are above it too and a zspage has enough holes for an automatic pass;
 * else, above the rest trigger (afm_zs_rest_trigger(): at most the
 * trigger), at rest (afm_zs_late_work()). Pool lock held.
 */
int afm_zs_want_auto(struct afm_zs_pool *zs)
{
	unsigned long holes = afm_zs_holes(zs), trigger = afm_zs_trigger(zs);

	lockdep_assert_held(&zs->lock);
	if (!READ_ONCE(afm_zs_auto_permille) || zs->dying ||
	    holes <= afm_zs_rest_trigger(zs))
		return AFM_ZS_AUTO_NO;
	if (holes > trigger && afm_zs_holes_unrecorded(zs) > trigger &&
	    zs->hlist_map >> (AFM_ZS_AUTO_MIN_HOLES / AFM_ZS_MIN_HOLES))
		return AFM_ZS_AUTO_NOW;
	return AFM_ZS_AUTO_LATER;
}

/* Compaction */

/*
 * Leave the pool lock free for the page migrations that wait for it (see
 * @migrate_wait, which a migration leaves once it has the lock): until
 * none waits, at most AFM_ZS_YIELD_SPINS times, preemptible.
 */
static void afm_zs_yield_migration(struct afm_zs_pool *zs)
{
	unsigned int i;

	for (i = 0; i < AFM_ZS_YIELD_SPINS && atomic_read(&zs->migrate_wait) > 0;
	     i++)
		cpu_relax();
}

/*
 * Drop the pool lock during a walk: every 256 entries looked at (a move
 * counts 16), or sooner when someone waits for the lock or the CPU, or a
 * page migration waits for it (then also long enough for it to get it).
 * Bounds the time spent with the lock held, and lets RCU see a quiescent
 * state on non-preemptible kernels.
 */
static bool afm_zs_breathe(struct afm_zs_pool *zs, unsigned int *budget)
{
	bool mig = atomic_read(&zs->migrate_wait) > 0;

	if (*budget < 256 &&
	    (*budget < 16 || (!need_resched() && !mig &&
			      !spin_is_contended(&zs->lock))))
		return false;
	*budget = 0;
	if (mig)
		zs->st.migrate_yields++;
	afm_zs_unlock(zs);
	cond_resched();
	if (mig)
		afm_zs_yield_migration(zs);
	afm_zs_lock(zs);
	return true;
}

/*
 * Pick victims from the top hole lists down to the one of @min_holes, up
 * to AFM_ZS_MAX_VICTIMS, until the bytes they would give back add up to
 * @goal. Mark them victims: no allocation goes to them any more. Looks at
 * the zspages it picks and at AFM_ZS_NR_HLISTS list heads, never at the
 * rest of the pool. Return: the number of victims.
 */
static unsigned int afm_zs_pick(struct afm_zs_pool *zs, unsigned long goal,
				unsigned int min_holes)
{
	int n, low = max(1U, min_holes / AFM_ZS_MIN_HOLES);
	unsigned long sum = 0;
	unsigned int nv = 0;

	afm_zs_lock(zs);
	zs->pass_pages = 0;
	/* No victim with a deferred free; the hole lists up to date. */
	afm_zs_rfree_drain(zs);
	afm_zs_pend_flush(zs);
	for (n = AFM_ZS_NR_HLISTS - 1; n >= low; n--) {
		while (sum < goal && nv < AFM_ZS_MAX_VICTIMS &&
		       !list_empty(&zs->hlists[n])) {
			struct afm_zspage *z = list_first_entry(&zs->hlists[n],
						struct afm_zspage, hlist);

			z->flags |= AFM_ZS_VICTIM;
			afm_zs_hlist_update(zs, z);
			afm_zs_unbucket(zs, z);
			zs->victim_live += z->live;
			zs->victim_pages += afm_zs_npages(z);
			sum += afm_zs_end(z) - z->live - z->objs * AFM_ZS_HDR -
			       z->pad;
			zs->cand[nv++] = z->id;
		}
	}
	zs->nr_cand = nv;
	afm_zs_unlock(zs);
	return nv;
}

/*
 * Pages the shard holds, less those of the dead zspages queued for
 * afm_zs_free_work() (a page another task had locked when its zspage was
 * released, e.g. the kernel's compaction trying to isolate it): given back
 * as far as a compaction pass is concerned, whenever the work runs. Pool
 * lock held.
 */
static long afm_zs_kept_pages(struct afm_zs_pool *zs)
{
	lockdep_assert_held(&zs->lock);
	return atomic_long_read(&zs->total_pages) - zs->dead_pages;
}

/*
 * Credit the running pass with the pages the shard held before one of its
 * own steps (@before, afm_zs_kept_pages()) less those it holds after it:
 * zspages released or made, and the table pages that came or went with
 * them. The pool lock is held across the step (a move credits the pass
 * before it lets go of the lock for its copy, and starts again after it),
 * so nothing else is counted. Pool lock held.
 */
static void afm_zs_pass_credit(struct afm_zs_pool *zs, long before)
{
	zs->pass_pages += before - afm_zs_kept_pages(zs);
}

/* Victim @z is empty: release it. Pool lock held. */
static void afm_zs_victim_done(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int i;
	long before;

	for (i = 0; i < zs->nr_cand; i++) {
		if (zs->cand[i] == z->id) {
			zs->cand[i] = AFM_ZS_DONE;
			break;
		}
	}
	z->flags &= ~AFM_ZS_VICTIM;
	zs->victim_pages -= afm_zs_npages(z);
	zs->st.evacuated++;
	before = afm_zs_kept_pages(zs);
	afm_zs_release(zs, z);
	afm_zs_pass_credit(zs, before);
}

/* KUnit: the hook of a move about to copy without the pool lock. */
static void afm_zs_test_moving(struct afm_zs_pool *zs, struct afm_zspage *v,
			       unsigned int off, struct afm_zspage *d)
{
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	struct afm_zs_set *set = zs->pool->store;
	void (*fn)(void *arg, unsigned long zspage_id, unsigned int offset,
		   unsigned long dst_id);

	/* Pairs with afm_zs_test_move_hook()'s release. */
	fn = smp_load_acquire(&set->test_moving);
	if (fn)
		fn(READ_ONCE(set->test_moving_arg),
		   (unsigned long)v->id << set->shift | zs->nr, off,
		   (unsigned long)d->id << set->shift | zs->nr);
#endif
}

/* KUnit: whether moves copy under the pool lock whatever the gates say. */
static bool afm_zs_test_locked_copy(struct afm_zs_pool *zs)
{
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	struct afm_zs_set *set = zs->pool->store;

	return READ_ONCE(set->test_locked_copies);
#else
	return false;
#endif
}

/*
 * Move the object of entry @ent (value @e, in victim @v, header handle
 * bits @idx) to the end of zspage @d, in an extent without slack, or when
 * @d is NULL into hole @hole (afm_zs_hole_find_dense(), same hold of the
 * pool lock). Pool lock held; let go of for the copy and taken again, the
 * pass credited first with the pages since *@before (afm_zs_pass_credit()),
 * *@before then reset. Return: false if it is pinned (@hole is then left
 * as it was; the lock was held throughout).
 *
 * Under the pool lock the object's entry gets LOCK (pinners spin, a free
 * waits for it), its destination extent is placed and headed, and the
 * object is counted out of @v; then the pool lock is let go of while its
 * bytes are copied, so that the shard's allocations and frees do not wait
 * for copies (a pass copies about as many bytes as the writes it follows).
 * The gates of @v and @d, taken shared as accessors take them, keep page
 * migration and the free of their pages away meanwhile; when either is
 * held exclusively (a migration has it) the copy runs under the pool lock,
 * which such a migration also needs. The entry takes its new value, LOCK
 * cleared, after the copy, with release order: a free or pin that waited
 * finds the object at its destination. Neither zspage can go meanwhile:
 * @v is a victim, which only the pass releases; @d holds the object.
 */
static bool afm_zs_move(struct afm_zs_pool *zs, atomic64_t *ent, s64 e,
			struct afm_zspage *v, struct afm_zspage *d,
			struct afm_zs_hole *hole, unsigned long idx,
			long *before)
{
	unsigned int size = afm_ze_size(e), off = afm_ze_off(e), doff;
	bool unlocked;
	s64 ne;

	lockdep_assert_held(&zs->lock);

	/*
	 * Pinners and frees spin while LOCK is set: hold it with preemption
	 * off; no reader or freer runs in interrupt context (afmalloc.h), so
	 * none can spin on it from under us on this CPU. (Table pages
	 * afm_zs_hole_put() gives back are freed in here: one reason for
	 * Kconfig's !PREEMPT_RT.)
	 */
	preempt_disable();
	if (!atomic64_try_cmpxchg_acquire(ent, &e, e | AFM_ZE_LOCK)) {
		preempt_enable();
		return false;
	}
	lock_map_acquire_try(&afm_ze_map);
	if (!d) {
		d = hole->z;
		doff = afm_zs_hole_put(zs, hole, size, idx);
		zs->st.moved_hole++;
	} else {
		doff = afm_zs_place(zs, d, size);
		afm_zs_hdr_write(zs, d, doff, afm_zs_ext(zs, size), idx);
	}
	afm_zs_unplace_victim(zs, v, size);
	zs->st.moved++;
	zs->st.moved_bytes += size;
	ne = afm_ze_make(d->id, doff + AFM_ZS_HDR, size);

	unlocked = !afm_zs_test_locked_copy(zs) && afm_zg_tryin(v);
	if (unlocked && !afm_zg_tryin(d)) {
		afm_zg_out(v);
		unlocked = false;
	}
	if (unlocked) {
		afm_zs_pass_credit(zs, *before);
		afm_zs_unlock(zs);
		afm_zs_test_moving(zs, v, off, d);
		afm_zs_copy_zz(d, doff + AFM_ZS_HDR, v, off, size);
		afm_zg_out(d);
		afm_zg_out(v);
	} else {
		/* The pool lock keeps migration away from both zspages. */
		afm_zs_copy_zz(d, doff + AFM_ZS_HDR, v, off, size);
	}
	lock_map_release(&afm_ze_map);
	atomic64_set_release(ent, ne);
	preempt_enable();
	if (unlocked) {
		afm_zs_lock(zs);
		*before = afm_zs_kept_pages(zs);
	}
	return true;
}

/*
 * The entry of the live object whose extent starts at @off of victim @v,
 * given the handle bits of its header (@idx), or NULL when the extent is
 * a hole (no live entry points there). Handles above 2^@zs->idx_bits
 * share header bits with lower ones: each is looked at, one table lookup
 * per 2^@zs->idx_bits handles in the table, counted in *@looked unless
 * NULL. Pool lock held.
 */
atomic64_t *afm_zs_owner(struct afm_zs_pool *zs, struct afm_zspage *v,
			 unsigned int off, unsigned long idx, s64 *ep,
			 unsigned long *looked)
{
	unsigned long end = zs->htab.end * AFM_ZH_PER_PAGE, h;

	lockdep_assert_held(&zs->lock);
	for (h = idx; h <= end; h += BIT_ULL(zs->idx_bits)) {
		atomic64_t *ent = h ? afm_zs_entry(zs, h) : NULL;
		s64 e = ent ? atomic64_read(ent) : 0;

		if (looked)
			(*looked)++;
		if ((e & AFM_ZE_LIVE) && afm_ze_id(e) == v->id &&
		    afm_ze_off(e) == off + AFM_ZS_HDR) {
			*ep = e;
			return ent;
		}
	}
	return NULL;
}

/*
 * The tail for compaction's object of @size bytes: the smallest that fits,
 * else that of a new zspage (afm_zs_dest_order(); its pages from @sp,
 * refilled with @gfp; then *@made is set). Pool lock held; dropped to grow
 * the descriptor table or refill @sp, after crediting the pass with the
 * pages since @before (afm_zs_pass_credit()). Return: 0 and *@dp; -EAGAIN
 * when the lock was dropped (look again); -ENOMEM when nothing could be
 * had.
 */
static int afm_zs_dest_tail(struct afm_zs_pool *zs, unsigned int size,
			    struct afm_zs_spare *sp, gfp_t gfp, long before,
			    struct afm_zspage **dp, bool *made)
{
	unsigned int ext = afm_zs_ext(zs, size), meta, order, blocks = 0;
	unsigned long dpg;
	int err;

	*dp = afm_zs_fit(zs, ext);
	if (*dp)
		return 0;
	if (afm_zt_find(&zs->dtab, &dpg))
		return -ENOMEM;
	if (afm_zt_short(&zs->dtab, dpg)) {
		afm_zs_pass_credit(zs, before);
		afm_zs_unlock(zs);
		err = afm_zt_grow(zs, &zs->dtab, dpg, gfp);
		afm_zs_lock(zs);
		return err ? -ENOMEM : -EAGAIN;
	}
	meta = afm_zt_need(&zs->dtab, dpg, &blocks);
	meta += afm_zs_dir_need(zs, blocks);
	order = afm_zs_dest_order(zs, size);
	if (sp->nr_meta < meta || sp->nr_data < 1U << order) {
		afm_zs_pass_credit(zs, before);
		afm_zs_unlock(zs);
		err = fatal_signal_pending(current) ? -EINTR :
		      afm_zs_spare_fill(zs, sp, meta, 1U << order, gfp);
		afm_zs_lock(zs);
		return err ? -ENOMEM : -EAGAIN;
	}
	*dp = afm_zs_new(zs, dpg, sp, order);
	*made = true;
	return 0;
}

/*
 * Move every unpinned object of victim @v elsewhere, walking its extents
 * from *@off (updated) to its fill offset: into a hole of a zspage with
 * fewer than @min_holes bytes of holes (the run's victims have more) and
 * AFM_ZS_DEST_HOLES, else to a tail. Pool lock held; may drop it.
 * Return: 0, or -ENOMEM when no destination could be had (the walk stops).
 */
static int afm_zs_evacuate(struct afm_zs_pool *zs, struct afm_zspage *v,
			   unsigned int *off, unsigned int *budget,
			   unsigned int min_holes, struct afm_zs_spare *sp,
			   gfp_t gfp)
{
	struct afm_zs_hole hole;
	struct afm_zspage *d;
	unsigned long idx;
	unsigned int len;
	atomic64_t *ent;
	long before;
	bool made;
	int err;
	s64 e;

	/* A victim's extents do not change: only frees reach it. */
	while (v->objs && *off < v->tail) {
		len = afm_zs_hdr_read(zs, v, *off, &idx, NULL);
		zs->st.walked++;
		if (WARN_ONCE(len < AFM_ZS_HDR || *off + len > v->tail,
			      "afmalloc: pool %s: bad extent at %u of zspage %u\n",
			      zs->pool->name, *off, v->id))
			return 0;	/* leave the rest of @v where it is */
		ent = idx == AFM_ZS_LINKED ? NULL :
		      afm_zs_owner(zs, v, *off, idx, &e, &zs->st.looked);
		if (!ent || (e & (AFM_ZE_PINS | AFM_ZE_LOCK))) {
			*off += len;
			(*budget)++;
			afm_zs_breathe(zs, budget);
			continue;
		}
		/* The pages this object's move gives back or takes. */
		before = afm_zs_kept_pages(zs);
		d = NULL;
		made = false;
		if (!READ_ONCE(afm_zs_compact_holes) ||
		    !afm_zs_hole_find_dense(zs, afm_zs_ext(zs, afm_ze_size(e)),
					    min_holes, &hole)) {
			err = afm_zs_dest_tail(zs, afm_ze_size(e), sp, gfp,
					       before, &d, &made);
			if (err == -EAGAIN)
				continue;	/* read the extent again */
			if (err)
				return err;
		}
		if (afm_zs_move(zs, ent, e, v, d, &hole, idx, &before))
			zs->st.moved_new += made;
		else if (d && !d->objs)
			afm_zs_release(zs, d);	/* pinned meanwhile */
		/*
		 * Pages filled in for a new zspage that a hole or tail made
		 * unneeded while the lock was dropped: back now, not at the
		 * end of the pass (they are neither movable nor counted).
		 */
		if (!made)
			afm_zs_spare_drain(sp);
		afm_zs_pass_credit(zs, before);
		*off += len;
		*budget += 16;
		afm_zs_breathe(zs, budget);
	}
	return 0;
}

/*
 * One compaction pass: pick victims, walk each victim's extents moving its
 * unpinned objects, release the emptied victims. Its cost is the objects
 * it moves, the extents of its victims and at most AFM_ZS_DEST_TRIES hole
 * records (and their zspages' descriptors) per object, whatever the size
 * of the pool.
 * Caller holds &afm_zs_pool.compact_lock. Return: the number of victims.
 */
static unsigned int afm_zs_pass(struct afm_zs_pool *zs, unsigned long goal,
				unsigned int min_holes, gfp_t gfp)
{
	struct afm_zs_spare sp = { };
	unsigned int budget = 0, i, nv, off;
	long before;
	int err = 0;

	lockdep_assert_held(&zs->compact_lock);

	nv = afm_zs_pick(zs, goal, min_holes);
	if (!nv)
		return 0;

	afm_zs_lock(zs);
	zs->st.passes++;
	for (i = 0; i < zs->nr_cand && !err; i++) {
		struct afm_zspage *v = afm_zs_desc(zs, zs->cand[i]);

		off = 0;
		err = afm_zs_evacuate(zs, v, &off, &budget, min_holes, &sp,
				      gfp);
		if (!v->objs)
			afm_zs_victim_done(zs, v);
	}

	/* Victims left: pinned objects, or the pass stopped early. */
	for (i = 0; i < zs->nr_cand; i++) {
		struct afm_zspage *z;

		if (zs->cand[i] == AFM_ZS_DONE)
			continue;
		z = afm_zs_desc(zs, zs->cand[i]);
		zs->cand[i] = AFM_ZS_DONE;
		z->flags &= ~AFM_ZS_VICTIM;
		zs->victim_live -= z->live;
		zs->victim_pages -= afm_zs_npages(z);
		if (!z->objs) {
			zs->st.evacuated++;
			before = afm_zs_kept_pages(zs);
			afm_zs_release(zs, z);
			afm_zs_pass_credit(zs, before);
		} else {
			afm_zs_rebucket(zs, z);
			afm_zs_hlist_update(zs, z);
		}
	}
	WARN_ON_ONCE(zs->victim_live || zs->victim_pages);
	zs->victim_live = 0;
	zs->victim_pages = 0;
	afm_zs_unlock(zs);

	afm_zs_spare_drain(&sp);
	return nv;
}

/*
 * Compact zspages with at least @min_holes bytes of holes until holes drop
 * by @goal bytes (ULONG_MAX: as far as it goes) or a pass gives back
 * nothing. Caller holds &afm_zs_pool.compact_lock. Return: pages given back
 * (those queued to be freed included): the table pages of the slots kept
 * at hand, and the data pages of the zspages the passes released less
 * those of the zspages they made; not what frees and allocations on other
 * CPUs did meanwhile.
 */
static unsigned long afm_zs_compact_goal(struct afm_zs_pool *zs,
					 unsigned long goal,
					 unsigned int min_holes, gfp_t gfp)
{
	unsigned long holes, done = 0, freed;
	u64 t0 = ktime_get_ns();
	unsigned int pass;
	long before, pages;

	/* Slots kept at hand may hold table pages: give them back first. */
	afm_zs_lock(zs);
	before = afm_zs_kept_pages(zs);
	afm_zt_mag_drain(zs, &zs->htab);
	afm_zt_mag_drain(zs, &zs->rtab);
	freed = max(before - afm_zs_kept_pages(zs), 0L);
	afm_zs_unlock(zs);
	for (pass = 0; pass < AFM_ZS_MAX_PASSES && done < goal; pass++) {
		afm_zs_lock(zs);
		holes = afm_zs_holes(zs);
		afm_zs_unlock(zs);
		if (!afm_zs_pass(zs, goal - done, min_holes, gfp))
			break;
		afm_zs_lock(zs);
		pages = zs->pass_pages;
		if (pages > 0 && holes > afm_zs_holes(zs))
			done += holes - afm_zs_holes(zs);
		afm_zs_unlock(zs);
		if (pages <= 0)
			break;
		freed += pages;
		if (fatal_signal_pending(current))
			break;
	}
	/* Under the lock debugfs's statistics readers hold. */
	afm_zs_lock(zs);
	zs->st.freed += freed;
	zs->st.compact_ns += ktime_get_ns() - t0;
	afm_zs_unlock(zs);
	return freed;
}

/*
 * Compaction allocates destination zspages only without reclaim, and never
 * from the reserves: the shrinker runs in reclaim (PF_MEMALLOC), where the
 * page allocator would otherwise ignore the watermarks, and a pass whose
 * victims keep a pinned object gives nothing back for what it took.
 */
#define AFM_ZS_COMPACT_GFP	(GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC | \
				 __GFP_HIGHMEM | __GFP_MOVABLE)

/* afm_compact(), shard by shard. Return: the pages its passes gave back. */
unsigned long afm_zs_compact(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned long freed = 0;
	unsigned int i;

	lockdep_assert_held(&pool->compact_lock);
	for (i = 0; i < afm_zs_created(set); i++) {
		struct afm_zs_pool *zs = set->shard[i];

		mutex_lock(&zs->compact_lock);
		freed += afm_zs_compact_goal(zs, ULONG_MAX, AFM_ZS_MIN_HOLES,
					     AFM_ZS_COMPACT_GFP |
					     __GFP_DIRECT_RECLAIM);
		mutex_unlock(&zs->compact_lock);
		if (fatal_signal_pending(current))
			break;
	}
	return freed;
}

/*
 * An automatic run: bring the holes (@rest: all of them, else those
 * allocation will not reuse soon) down to half the trigger (@rest: the rest
 * trigger), taking zspages with at least @min_holes bytes of holes.
 */
static void afm_zs_auto(struct afm_zs_pool *zs, bool rest,
			unsigned int min_holes)
{
	unsigned long holes, trigger, freed;
	bool run;

	mutex_lock(&zs->compact_lock);
	afm_zs_lock(zs);
	trigger = rest ? afm_zs_rest_trigger(zs) : afm_zs_trigger(zs);
	holes = rest ? afm_zs_holes(zs) : afm_zs_holes_unrecorded(zs);
	run = holes > trigger / 2 && !zs->dying;
	afm_zs_unlock(zs);
	if (run) {
		freed = afm_zs_compact_goal(zs, holes - trigger / 2, min_holes,
					    AFM_ZS_COMPACT_GFP);
		/*
		 * Under the lock debugfs's statistics readers hold;
		 * afm_zs_stats() reads @auto_freed without it.
		 */
		afm_zs_lock(zs);
		zs->st.auto_runs++;
		zs->st.auto_freed += freed;
		afm_zs_unlock(zs);
	}
	mutex_unlock(&zs->compact_lock);
}

void afm_zs_compact_work(struct work_struct *work)
{
	struct afm_zs_pool *zs = container_of(to_delayed_work(work),
					      struct afm_zs_pool, compact_work);

	/* The next run no sooner than AFM_ZS_AUTO_GAP from now. */
	WRITE_ONCE(zs->auto_next, jiffies + AFM_ZS_AUTO_GAP);
	afm_zs_auto(zs, false, AFM_ZS_AUTO_MIN_HOLES);
}

/*
 * The rest run: AFM_ZS_LATE after the last allocation, count the indexed
 * holes too (nothing is about to reuse them) and take every zspage with
 * AFM_ZS_MIN_HOLES of holes.
 */
void afm_zs_late_work(struct work_struct *work)
{
	struct afm_zs_pool *zs = container_of(to_delayed_work(work),
					      struct afm_zs_pool, late_work);
	unsigned long now = jiffies, due = READ_ONCE(zs->last_alloc) +
					   AFM_ZS_LATE;

	if (!READ_ONCE(zs->late_force) && time_before(now, due)) {
		queue_delayed_work(afm_wq, &zs->late_work,
				   due - now);
		return;
	}
	/* A test's pool: only afm_zs_flush_work() runs it (late_force). */
	if (!READ_ONCE(zs->late_force) &&
	    afm_zs_quiet(zs, AFM_ZS_QUIET_AUTO)) {
		queue_delayed_work(afm_wq, &zs->late_work,
				   AFM_ZS_LATE);
		return;
	}
	afm_zs_auto(zs, true, AFM_ZS_REST_MIN_HOLES);
}

/*
 * Pages compaction could give back: the hole bytes of the zspages on the
 * hole lists (at least AFM_ZS_MIN_HOLES each, what afm_zs_scan() takes),
 * counted by list, rounded down. Without the pool lock: every reclaimer
 * calls every shard's shrinker, and would otherwise contend with the
 * shard's allocations and frees.
 */
unsigned long afm_zs_count(struct afm_zs_pool *zs)
{
	unsigned long holes = READ_ONCE(zs->hlist_units) * AFM_ZS_MIN_HOLES;

	return holes >= AFM_ZS_SIZE ? holes >> PAGE_SHIFT : SHRINK_EMPTY;
}

unsigned long afm_zs_scan(struct afm_zs_pool *zs,
			  unsigned long nr_pages)
{
	unsigned long freed;

	if (!mutex_trylock(&zs->compact_lock))
		return SHRINK_STOP;
	freed = afm_zs_compact_goal(zs, nr_pages << PAGE_SHIFT,
				    AFM_ZS_MIN_HOLES, AFM_ZS_COMPACT_GFP);
	afm_zs_lock(zs);
	zs->st.shrink_scans++;
	zs->st.shrink_freed += freed;
	afm_zs_unlock(zs);
	mutex_unlock(&zs->compact_lock);
	return freed ? freed : SHRINK_STOP;
}

unsigned long afm_zs_count_objects(struct shrinker *shrinker,
				   struct shrink_control *sc)
{
	struct afm_zs_pool *zs = shrinker->private_data;

	if (afm_zs_quiet(zs, AFM_ZS_QUIET_SHRINKER))
		return SHRINK_EMPTY;
	return afm_zs_count(zs);
}

unsigned long afm_zs_scan_objects(struct shrinker *shrinker,
				  struct shrink_control *sc)
{
	struct afm_zs_pool *zs = shrinker->private_data;

	if (afm_zs_quiet(zs, AFM_ZS_QUIET_SHRINKER))
		return SHRINK_STOP;
	return afm_zs_scan(zs, sc->nr_to_scan);
}
