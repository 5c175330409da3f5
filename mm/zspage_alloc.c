// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: allocation, free and access. The hole cache and
 * placement (hole first, then the best-fitting tail, then a new zspage),
 * afm_zs_malloc() and afm_zs_free(), and the accessors (map, unmap, read,
 * write), which pin the entry and enter the zspage's gate.
 *
 * Locking: malloc and free take the pool lock (bottom halves off; free may
 * run with hardirqs off) and allocate pages only without it; accessors
 * never take it.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

/* Address of the in-place mapping of this CPU's mapped object. */
static DEFINE_PER_CPU(void *, afm_zs_kaddr);

/* Hole cache */

unsigned int afm_zs_hole_bucket(unsigned int size)
{
	return min((size - 1) / AFM_ZS_HOLE_WIDTH, AFM_ZS_HOLE_BUCKETS - 1);
}

/*
 * Forget the recorded holes of zspage @z, which is being released (its id
 * will be reused), or with @z NULL those of the victims just picked.
 */
void afm_zs_holes_forget(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	u64 map = zs->hole_map;

	lockdep_assert_held(&zs->lock);
	while (map) {
		unsigned int b = __ffs64(map), i = 0;

		map &= map - 1;
		while (i < zs->nr_holes[b]) {
			struct afm_zs_hole *h = &zs->holes[b][i];

			if (z ? h->id == z->id :
			    afm_zs_desc(zs, h->id)->flags & AFM_ZS_VICTIM) {
				zs->hole_rec_bytes -= h->size;
				*h = zs->holes[b][--zs->nr_holes[b]];
			} else {
				i++;
			}
		}
		if (!zs->nr_holes[b])
			zs->hole_map &= ~BIT_ULL(b);
	}
}

/* Record @size free bytes at @off of @z, if there is room. */
static void afm_zs_hole_record(struct afm_zs_pool *zs, struct afm_zspage *z,
			       unsigned int off, unsigned int size)
{
	unsigned int b = afm_zs_hole_bucket(size);
	struct afm_zs_hole *h;

	lockdep_assert_held(&zs->lock);
	if (size < AFM_ZS_HOLE_MIN || zs->nr_holes[b] >= AFM_ZS_HOLE_SLOTS)
		return;
	h = &zs->holes[b][zs->nr_holes[b]++];
	h->id = z->id;
	h->off = off;
	h->size = size;
	zs->hole_map |= BIT_ULL(b);
	zs->hole_rec_bytes += size;
}

/*
 * The smallest recorded hole of row @b that holds an extent of @len bytes
 * exactly or with room for the header of the rest, or NULL.
 */
static struct afm_zs_hole *afm_zs_hole_best(struct afm_zs_pool *zs,
					    unsigned int b, unsigned int len)
{
	struct afm_zs_hole *best = NULL;
	unsigned int i;

	for (i = 0; i < zs->nr_holes[b]; i++) {
		struct afm_zs_hole *h = &zs->holes[b][i];

		if ((h->size == len || h->size >= len + AFM_ZS_HDR) &&
		    (!best || h->size < best->size))
			best = h;
	}
	return best;
}

/*
 * Best fit among the recorded holes for an extent of @size bytes: the
 * smallest that holds it in the row of @size, else the smallest of the
 * next row that has any that holds it. Return: the record, or NULL.
 */
static struct afm_zs_hole *afm_zs_hole_find(struct afm_zs_pool *zs,
					    unsigned int size)
{
	unsigned int b = afm_zs_hole_bucket(size);
	struct afm_zs_hole *h;
	u64 map;

	lockdep_assert_held(&zs->lock);
	if (!zs->hole_map)
		return NULL;
	h = afm_zs_hole_best(zs, b, size);
	if (h)
		return h;
	map = zs->hole_map & ~GENMASK_ULL(b, 0);
	return map ? afm_zs_hole_best(zs, __ffs64(map), size) : NULL;
}

/*
 * Put an object of @size bytes into recorded hole @h (from
 * afm_zs_hole_find() for its extent, under the same hold of the pool
 * lock); the rest of the hole gets a hole header. Return: the offset of
 * its extent; *@zp: its zspage.
 */
static unsigned int afm_zs_hole_take(struct afm_zs_pool *zs,
				     struct afm_zs_hole *h, unsigned int size,
				     struct afm_zspage **zp)
{
	struct afm_zs_hole hole = *h;
	unsigned int b = afm_zs_hole_bucket(hole.size);
	struct afm_zspage *z = afm_zs_desc(zs, hole.id);
	unsigned int len = size + AFM_ZS_HDR;

	lockdep_assert_held(&zs->lock);
	VM_WARN_ON_ONCE(z->flags != AFM_ZS_USED ||
			hole.off + hole.size > z->tail);
	*h = zs->holes[b][--zs->nr_holes[b]];
	if (!zs->nr_holes[b])
		zs->hole_map &= ~BIT_ULL(b);
	zs->hole_rec_bytes -= hole.size;
	/* Only the object's bytes leave the holes; fill and tail stay. */
	z->live += size;
	z->objs++;
	zs->live_bytes += size;
	zs->objects++;
	zs->st.hole_reused++;
	zs->st.hole_bytes += size;
	/* The rest is a hole again, recorded if it is not too small. */
	if (hole.size > len) {
		afm_zs_hdr_write(z, hole.off + len, hole.size - len, 0);
		afm_zs_hole_record(zs, z, hole.off + len, hole.size - len);
	}
	afm_zs_hlist_update(zs, z);
	*zp = z;
	return hole.off;
}

/*
 * Append the extent of an object of @size bytes to @z (its holes do not
 * change). Return: the offset of the extent.
 */
unsigned int afm_zs_place(struct afm_zs_pool *zs, struct afm_zspage *z,
			  unsigned int size)
{
	unsigned int off = z->tail;

	z->tail += size + AFM_ZS_HDR;
	z->live += size;
	z->objs++;
	zs->tail_bytes -= size + AFM_ZS_HDR;
	zs->live_bytes += size;
	zs->objects++;
	afm_zs_rebucket(zs, z);
	return off;
}

/*
 * Remove the object of @size bytes at data offset @off from @z's counts;
 * its extent joins the tail if last, else it is a hole (its header stays:
 * compaction steps over it).
 */
void afm_zs_unplace(struct afm_zs_pool *zs, struct afm_zspage *z,
		    unsigned int off, unsigned int size)
{
	z->live -= size;
	z->objs--;
	zs->live_bytes -= size;
	zs->objects--;
	if (z->flags & AFM_ZS_VICTIM) {
		zs->victim_live -= size;
		return;
	}
	if (off + size == z->tail) {
		z->tail = off - AFM_ZS_HDR;
		zs->tail_bytes += size + AFM_ZS_HDR;
		afm_zs_rebucket(zs, z);
	} else if (z->live) {
		afm_zs_hole_record(zs, z, off - AFM_ZS_HDR, size + AFM_ZS_HDR);
	}
	afm_zs_hlist_update(zs, z);
}

unsigned long afm_zs_malloc(struct afm_pool *pool, size_t size,
			    gfp_t gfp)
{
	struct afm_zs_pool *zs = pool->store;
	struct afm_zs_spare sp = { };
	unsigned long hpg, dpg = 0, idx;
	unsigned int meta, data, off;
	struct afm_zs_hole *hole;
	struct afm_zspage *z;
	atomic64_t *ent;

	for (;;) {
		afm_zs_lock(zs);
		if (afm_zt_find(&zs->htab, &hpg))
			goto full;
		if (afm_zt_short(&zs->htab, hpg)) {
			afm_zs_unlock(zs);
			if (afm_zt_grow(zs, &zs->htab, hpg, gfp))
				goto nomem;
			continue;
		}
		meta = afm_zt_need(&zs->htab, hpg);
		data = 0;
		hole = afm_zs_hole_find(zs, size + AFM_ZS_HDR);
		z = hole ? NULL : afm_zs_fit(zs, size + AFM_ZS_HDR);
		if (!hole && !z) {
			if (afm_zt_find(&zs->dtab, &dpg))
				goto full;
			if (afm_zt_short(&zs->dtab, dpg)) {
				afm_zs_unlock(zs);
				if (afm_zt_grow(zs, &zs->dtab, dpg, gfp))
					goto nomem;
				continue;
			}
			meta += afm_zt_need(&zs->dtab, dpg);
			data = AFM_ZS_PAGES;
		}
		if (sp.nr_meta >= meta && sp.nr_data >= data)
			break;
		afm_zs_unlock(zs);
		if (afm_zs_spare_fill(zs, &sp, meta, data, gfp))
			goto nomem;
	}

	if (hole) {
		off = afm_zs_hole_take(zs, hole, size, &z);
	} else {
		if (!z)
			z = afm_zs_new(zs, dpg, &sp);
		off = afm_zs_place(zs, z, size);
	}
	idx = afm_zt_take(zs, &zs->htab, hpg, &sp);
	WRITE_ONCE(zs->last_alloc, jiffies);
	afm_zs_hdr_write(z, off, size + AFM_ZS_HDR, idx + 1);
	ent = afm_zs_entry(zs, idx + 1);
	atomic64_set(ent, afm_ze_make(z->id, off + AFM_ZS_HDR, size));
	afm_zs_unlock(zs);

	afm_zs_spare_drain(&sp);
	return idx + 1;

full:
	afm_zs_unlock(zs);
	pr_warn_ratelimited("pool %s: handle or zspage table full\n",
			    pool->name);
nomem:
	afm_zs_spare_drain(&sp);
	return (unsigned long)ERR_PTR(-ENOMEM);
}

void afm_zs_free(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = pool->store;
	struct afm_zspage *z;
	atomic64_t *ent;
	int want;
	s64 e;

	afm_zs_lock(zs);
	ent = afm_zs_entry(zs, handle);
	if (!ent)
		goto invalid;
	e = atomic64_read(ent);
	do {
		if (!(e & AFM_ZE_LIVE))
			goto invalid;
		/* LOCK is only set under the pool lock: only pins here. */
		if (e & (AFM_ZE_PINS | AFM_ZE_LOCK)) {
			afm_zs_unlock(zs);
			WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of mapped object %#lx, leaking it\n",
				  pool->name, handle);
			return;
		}
	} while (!atomic64_try_cmpxchg(ent, &e, 0));

	z = afm_zs_desc(zs, afm_ze_id(e));
	afm_zs_unplace(zs, z, afm_ze_off(e), afm_ze_size(e));
	afm_zt_put(zs, &zs->htab, handle - 1);
	if (!z->live && !(z->flags & AFM_ZS_VICTIM))
		afm_zs_release(zs, z);
	want = afm_zs_want_auto(zs);
	afm_zs_unlock(zs);

	if (want == AFM_ZS_AUTO_NOW)
		queue_work(system_unbound_wq, &zs->compact_work);
	else if (want == AFM_ZS_AUTO_LATER)
		queue_delayed_work(system_unbound_wq, &zs->late_work,
				   AFM_ZS_LATE);
	return;

invalid:
	afm_zs_unlock(zs);
	WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of invalid handle %#lx\n",
		  pool->name, handle);
}

/* Access */

/*
 * Pin the object of @handle and enter its zspage. Return: its zspage, or
 * NULL (with a warning) for an invalid handle.
 */
struct afm_zspage *afm_zs_get(struct afm_zs_pool *zs,
			      unsigned long handle, atomic64_t **entp,
			      u64 *ep)
{
	atomic64_t *ent = afm_zs_entry(zs, handle);
	struct afm_zspage *z;

	if (!ent || !afm_ze_pin(ent, ep)) {
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: invalid handle %#lx\n",
			  zs->pool->name, handle);
		return NULL;
	}
	z = afm_zs_desc(zs, afm_ze_id(*ep));
	afm_zg_in(z);
	*entp = ent;
	return z;
}

void afm_zs_put(struct afm_zspage *z, atomic64_t *ent)
{
	afm_zg_out(z);
	afm_ze_unpin(ent);
}

void *afm_zs_map(struct afm_pool *pool, unsigned long handle,
		 enum afm_mapmode mm, void *bounce)
{
	struct afm_zspage *z;
	unsigned int off, size;
	atomic64_t *ent;
	void *addr;
	u64 e;

	z = afm_zs_get(pool->store, handle, &ent, &e);
	if (!z)
		return NULL;
	off = afm_ze_off(e);
	size = afm_ze_size(e);
	if (offset_in_page(off) + size <= PAGE_SIZE) {
		addr = kmap_local_page(afm_zs_page(z, off >> PAGE_SHIFT)) +
		       offset_in_page(off);
		this_cpu_write(afm_zs_kaddr, addr);
		return addr;
	}
	if (mm != AFM_MM_WO)
		afm_zs_copy_out(z, off, bounce, size);
	return bounce;
}

void afm_zs_unmap(struct afm_pool *pool, unsigned long handle,
		  enum afm_mapmode mm, void *bounce)
{
	struct afm_zs_pool *zs = pool->store;
	atomic64_t *ent = afm_zs_entry(zs, handle);
	/* Pinned by afm_zs_map(): the entry cannot change. */
	u64 e = atomic64_read(ent);
	struct afm_zspage *z = afm_zs_desc(zs, afm_ze_id(e));
	unsigned int off = afm_ze_off(e), size = afm_ze_size(e);

	if (offset_in_page(off) + size <= PAGE_SIZE)
		kunmap_local(this_cpu_read(afm_zs_kaddr));
	else if (mm != AFM_MM_RO)
		afm_zs_copy_in(z, off, bounce, size);
	afm_zs_put(z, ent);
}

size_t afm_zs_read(struct afm_pool *pool, unsigned long handle,
		   void *dst)
{
	struct afm_zspage *z;
	unsigned int size;
	atomic64_t *ent;
	u64 e;

	z = afm_zs_get(pool->store, handle, &ent, &e);
	if (!z)
		return 0;
	size = afm_ze_size(e);
	afm_zs_copy_out(z, afm_ze_off(e), dst, size);
	afm_zs_put(z, ent);
	return size;
}

int afm_zs_write(struct afm_pool *pool, unsigned long handle,
		 const void *src, size_t len)
{
	struct afm_zspage *z;
	atomic64_t *ent;
	int ret = 0;
	u64 e;

	z = afm_zs_get(pool->store, handle, &ent, &e);
	if (!z)
		return -EINVAL;
	if (len > afm_ze_size(e))
		ret = -EINVAL;
	else
		afm_zs_copy_in(z, afm_ze_off(e), src, len);
	afm_zs_put(z, ent);
	return ret;
}

size_t afm_zs_obj_size(struct afm_pool *pool, unsigned long handle)
{
	atomic64_t *ent = afm_zs_entry(pool->store, handle);
	u64 e;

	if (!ent)
		return 0;
	e = atomic64_read(ent);
	return e & AFM_ZE_LIVE ? afm_ze_size(e) : 0;
}
