// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: allocation, free and access. The hole index and
 * placement (hole first, then the best-fitting tail, then a donor shard's
 * hole, then a new zspage), afm_zs_malloc(), afm_zs_free() and the merge
 * of the frees it defers (see "Deferred frees" below), and the accessors
 * (map, unmap, read, write), which pin the entry and enter the zspage's
 * gate.
 *
 * Locking: malloc and free take the pool lock (free may run with hardirqs
 * off; a free that finds it held leaves its handle to the holder, see
 * "Frees that find the lock held"), which is all their header accesses
 * (struct afm_zs_cur) need:
 * migration takes it too. A free (or the holder freeing what was left to
 * it) of an object compaction is copying waits for that one copy, holding
 * the pool lock (afm_zs_free_wait_move(); the copy runs without it).
 * Malloc allocates pages only without the pool lock, and takes a donor
 * shard's lock only with spin_trylock() after dropping its own; the merge
 * of deferred frees may take a hole table page with GFP_NOWAIT under it
 * (else the hole stays off the index). The hole index (heads, records)
 * and the queue of deferred frees
 * (afm_zs_pool.pend) are under the pool lock. Accessors never take it.
 * Malloc, before it takes its shard's lock, may queue the doubling of the
 * active shards (afm_zs_contended(), "Active shards"); it never takes the
 * grow lock nor waits for the work.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

/**
 * struct afm_zs_mapped - the object mapped on this CPU (one at most: the
 * core holds its map area's local lock from map to unmap)
 * @z: its zspage, whose gate afm_zs_map() holds.
 * @ent: its entry, which afm_zs_map() pinned.
 * @kaddr: a local mapping to drop (kunmap_local()), or NULL.
 * @off: the object's offset in @z, to copy the bounce buffer back.
 * @size: its size; 0 when mapped in place (nothing to copy back).
 */
struct afm_zs_mapped {
	struct afm_zspage *z;
	atomic64_t *ent;
	void *kaddr;
	unsigned int off;
	unsigned int size;
};

static DEFINE_PER_CPU(struct afm_zs_mapped, afm_zs_mapped);

/*
 * Solo zspages
 * ------------
 * An extent longer than half a zspage cannot share one with another of
 * its length. With 16 KiB pages a page that does not compress (zram
 * stores it whole) is such an extent with its header, 5 bytes over half
 * the 32 KiB zspage: each took a zspage of two pages, half of it a tail
 * that only smaller objects could fill, twice what zsmalloc's one-page
 * class holds for data that does not compress. When no indexed hole and
 * no tail fits such an extent (a tail smaller objects left does: it goes
 * there with its header, as any object), and no donor has one, it gets a
 * solo zspage instead of a new one: a single page (objects are at most
 * PAGE_SIZE bytes) holding its data at offset 0, with no header; what is
 * left of the page is counted as padding (struct afm_zspage, @solo).
 * Nothing else goes there (no tail, no hole), so compaction never takes
 * it and nothing walks its extents; the free of its object releases it
 * (its last object); migration moves its page as any other. It costs a
 * descriptor and a handle entry. Compaction does not make solo zspages:
 * a whole page it moves out of a victim goes to a tail or to a new
 * zspage, whose rest the other objects the pass moves fill. With 4 KiB
 * pages no extent is that long (afm_zs_solo_ext: half a zspage): nothing
 * changes there, but KUnit lowers the bound (afm_zs_test_set_solo_ext())
 * to run whole 4 KiB pages through the same path.
 */
unsigned int afm_zs_solo_ext = AFM_ZS_SIZE / 2;

/* An extent of @ext bytes gets a solo zspage when nothing fits it. */
static __always_inline bool afm_zs_solo(unsigned int ext)
{
	return ext > READ_ONCE(afm_zs_solo_ext);
}

/* Hole index */

unsigned int afm_zs_hole_class(unsigned int len)
{
	return min(len / AFM_ZS_HCLASS_W, AFM_ZS_NR_HCLASSES - 1);
}

/*
 * afm_zs_rec_new() from table page @pg (not the magazine): out of line,
 * off the merge's fast path.
 */
static noinline u32 afm_zs_rec_new_page(struct afm_zs_pool *zs,
					unsigned long pg)
{
	struct afm_zs_spare sp;
	unsigned int meta, blocks = 0;
	unsigned long r;

	afm_zs_spare_init(&sp);
	if (afm_zt_short(&zs->rtab, pg)) {
		/*
		 * The shard's worker grows the top level, and so does the next
		 * malloc if it comes first: a shard that frees and does not
		 * allocate (zswap's writeback, frees from other CPUs) would
		 * otherwise leave the holes of its frees off the index until
		 * one comes.
		 */
		zs->rtab_short = true;
		if (!afm_zs_quiet(zs, AFM_ZS_QUIET_RTAB))
			afm_zt_grow_later(zs, &zs->rtab, pg);
		return 0;
	}
	meta = afm_zt_need(&zs->rtab, pg, &blocks);
	meta += afm_zs_dir_need(zs, blocks);
	/* A record is optional: never from the reserves (free in reclaim). */
	if (afm_zs_spare_fill(zs, &sp, meta, 0,
			      GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC)) {
		afm_zs_spare_drain(&sp);
		return 0;
	}
	r = afm_zt_take(zs, &zs->rtab, pg, &sp);
	afm_zs_spare_drain(&sp);
	return r + 1;
}

/*
 * A free record of the hole table, or 0 (then the hole stays off the
 * index, left to compaction). A table page it needs is allocated without
 * sleeping: free may run in atomic context, and a hole off the index loses
 * no data. Return: its number + 1.
 */
static __always_inline u32 afm_zs_rec_new(struct afm_zs_pool *zs)
{
	unsigned long pg;

	lockdep_assert_held(&zs->lock);
	if (afm_zt_find(&zs->rtab, &pg))
		return 0;
	if (pg == AFM_ZT_FROM_MAG)
		return afm_zt_take(zs, &zs->rtab, pg, NULL) + 1;
	return afm_zs_rec_new_page(zs, pg);
}

/*
 * Put record @rec, number @r1 - 1, holding the @len bytes at @off of @z
 * (at least AFM_ZS_HOLE_MIN, free, below its fill offset), first on the
 * list of its class. The caller writes the hole's header
 * (afm_zs_chole_write()) before it lets go of the pool lock. The callers
 * of this and of afm_zs_hole_unlink() have the record at hand: passed, not
 * looked up again.
 */
static __always_inline void afm_zs_hole_link(struct afm_zs_pool *zs,
					     struct afm_zspage *z,
					     struct afm_zs_hrec *rec, u32 r1,
					     unsigned int off, unsigned int len)
{
	unsigned int c = afm_zs_hole_class(len);
	u32 head = zs->hole_heads[c];

	lockdep_assert_held(&zs->lock);
	rec->id = z->id;
	rec->off = off;
	rec->len = len;
	rec->prev = 0;
	rec->next = head;
	if (head)
		afm_zs_rec(zs, head)->prev = r1;
	zs->hole_heads[c] = r1;
	__set_bit(c, zs->hole_map);
	z->linked++;
	zs->hole_nr++;
	zs->hole_rec_bytes += len;
	afm_zs_donor_update(zs);
}

/*
 * Take record @rec of a hole of @z off the list of its class; the record
 * and the hole's header stay as they are (the caller reuses or frees the
 * one and rewrites the other).
 */
static __always_inline void afm_zs_hole_unlink(struct afm_zs_pool *zs,
					       struct afm_zspage *z,
					       struct afm_zs_hrec *rec)
{
	unsigned int c = afm_zs_hole_class(rec->len);

	lockdep_assert_held(&zs->lock);
	if (rec->prev)
		afm_zs_rec(zs, rec->prev)->next = rec->next;
	else
		zs->hole_heads[c] = rec->next;
	if (rec->next)
		afm_zs_rec(zs, rec->next)->prev = rec->prev;
	if (!zs->hole_heads[c])
		__clear_bit(c, zs->hole_map);
	z->linked--;
	zs->hole_nr--;
	zs->hole_rec_bytes -= rec->len;
	afm_zs_donor_update(zs);
}

/*
 * Take the indexed hole with record @rec, number @r1 - 1, of @z off the
 * index for good: its record is freed, its header left without
 * AFM_ZH_HOLE.
 */
static void afm_zs_hole_drop(struct afm_zs_pool *zs, struct afm_zspage *z,
			     struct afm_zs_hrec *rec, u32 r1)
{
	afm_zs_hole_unlink(zs, z, rec);
	afm_zs_hdr_write(zs, z, rec->off, rec->len, 0);
	afm_zt_put(zs, &zs->rtab, r1 - 1);
}

/*
 * After a bad extent of @z: take its holes' records off the index by
 * walking every hole list (only after a corrupted header was reported),
 * so that no allocation follows one into @z's id once it is reused.
 */
static void afm_zs_holes_unlink_scan(struct afm_zs_pool *zs,
				     struct afm_zspage *z)
{
	struct afm_zs_hrec *rec;
	unsigned int c;
	u32 r1, next;

	for (c = 0; c < AFM_ZS_NR_HCLASSES && z->linked; c++) {
		for (r1 = zs->hole_heads[c]; r1 && z->linked; r1 = next) {
			rec = afm_zs_rec(zs, r1);
			next = rec->next;
			if (rec->id != z->id)
				continue;
			afm_zs_hole_unlink(zs, z, rec);
			afm_zt_put(zs, &zs->rtab, r1 - 1);
		}
	}
	WARN_ON_ONCE(z->linked);
}

/*
 * Take every indexed hole of @z off the hole index: it is being released.
 * Walks its extents up to its last indexed hole; should one of them be
 * corrupted, the hole lists instead.
 */
void afm_zs_holes_unlink_all(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int off = 0, len;
	unsigned long idx;
	u32 r1 = 0;

	lockdep_assert_held(&zs->lock);
	while (z->linked && off < z->tail) {
		len = afm_zs_hdr_read(zs, z, off, &idx, &r1);
		if (WARN_ONCE(len < AFM_ZS_HDR || off + len > z->tail,
			      "afmalloc: pool %s: bad extent at %u of zspage %u\n",
			      zs->pool->name, off, z->id))
			break;
		if (idx == AFM_ZS_LINKED) {
			afm_zs_hole_unlink(zs, z, afm_zs_rec(zs, r1));
			afm_zt_put(zs, &zs->rtab, r1 - 1);
		}
		off += len;
	}
	if (unlikely(z->linked))
		afm_zs_holes_unlink_scan(zs, z);
}

/*
 * A hole for an extent of @need bytes: the first that fits among the
 * first AFM_ZS_HOLE_TRIES holes of its class (the rest of a hole of the
 * same class is slack: under 16 bytes), else the first hole of the next
 * class with any (all of them fit). Holes of victims met on the way are
 * taken off the index. Only records are read. Return: true and *@h, or
 * false.
 */
static __always_inline bool afm_zs_hole_find(struct afm_zs_pool *zs,
					     unsigned int need,
					     struct afm_zs_hole *h)
{
	unsigned int c0 = afm_zs_hole_class(need), c = c0, tries = 0;
	u32 r1 = zs->hole_heads[c0];
	struct afm_zs_hrec *rec;

	lockdep_assert_held(&zs->lock);
	for (;;) {
		if (!r1 || (c == c0 && tries >= AFM_ZS_HOLE_TRIES)) {
			c = find_next_bit(zs->hole_map, AFM_ZS_NR_HCLASSES,
					  c + 1);
			if (c >= AFM_ZS_NR_HCLASSES)
				return false;
			r1 = zs->hole_heads[c];
		}
		tries++;
		rec = afm_zs_rec(zs, r1);
		h->r1 = r1;
		r1 = rec->next;
		if (rec->len < need)
			continue;
		h->z = afm_zs_desc_locked(zs, rec->id);
		if (h->z->flags & AFM_ZS_VICTIM) {
			afm_zs_hole_drop(zs, h->z, rec, h->r1);
			continue;
		}
		h->rec = rec;
		h->off = rec->off;
		h->len = rec->len;
		return true;
	}
}

/*
 * Count an object of @size bytes into @z: a solo zspage's (@z->solo set)
 * has no header, and the rest of its page is its padding.
 */
static void afm_zs_count_in(struct afm_zs_pool *zs, struct afm_zspage *z,
			    unsigned int size)
{
	unsigned int pad;

	if (unlikely(z->solo)) {
		pad = afm_zs_end(z) - size;
		zs->solo_objs++;
	} else {
		pad = afm_zs_pad(zs, size);
	}
	z->live += size;
	z->objs++;
	z->pad += pad;
	zs->live_bytes += size;
	zs->objects++;
	zs->pad_bytes += pad;
}

/*
 * Before the rest of hole @h (the object takes its first @ext bytes) goes
 * back on the index: if the extent after @h is an indexed hole of @z that
 * the two together fit (they were kept apart when @h was made because
 * they did not), @h takes it in, with its record (its footer already ends
 * the two): @h->len, @h->rec and @h->r1 change, @h's own record is freed.
 * Called only when @z has another indexed hole.
 */
static void afm_zs_rest_join(struct afm_zs_pool *zs, struct afm_zspage *z,
			     struct afm_zs_hole *h, unsigned int ext)
{
	unsigned int end = h->off + h->len, nlen;
	struct afm_zs_hrec *next;
	unsigned long idx;
	u32 r1 = 0;

	if (end >= z->tail)
		return;
	nlen = afm_zs_hdr_read(zs, z, end, &idx, &r1);
	if (idx != AFM_ZS_LINKED || h->len - ext + nlen > AFM_ZS_MAX_EXT)
		return;
	next = r1 ? afm_zs_rec(zs, r1) : NULL;
	if (WARN_ONCE(!next || next->id != z->id || next->off != end ||
		      next->len != nlen,
		      "afmalloc: pool %s: hole at %u of zspage %u not on the index\n",
		      zs->pool->name, end, z->id))
		return;		/* leave the two apart */
	afm_zs_hole_unlink(zs, z, next);
	afm_zt_put(zs, &zs->rtab, h->r1 - 1);
	h->rec = next;
	h->r1 = r1;
	h->len += nlen;
	zs->st.rest_joined++;
}

/*
 * Put an object of @size bytes into hole @h (from afm_zs_hole_find() or
 * afm_zs_hole_find_dense(), under the same hold of the pool lock), for an
 * allocation (@alloc: counted as reuse) or for compaction. A rest of at least
 * AFM_ZS_HOLE_MIN bytes becomes a hole on the index, with the hole's
 * record, or with the indexed hole after it (afm_zs_rest_join(): @h then
 * says the two); a smaller one stays in the object's extent and the record
 * is freed. Return: the length of the object's extent; shorter than
 * @h->len when there is a rest (its header and the object's are the
 * caller's to write).
 */
static __always_inline unsigned int afm_zs_hole_take(struct afm_zs_pool *zs,
						     struct afm_zs_hole *h,
						     unsigned int size,
						     bool alloc)
{
	unsigned int ext = afm_zs_ext(zs, size);
	struct afm_zspage *z = h->z;

	lockdep_assert_held(&zs->lock);
	VM_WARN_ON_ONCE(z->flags != AFM_ZS_USED || h->off + h->len > z->tail ||
			h->len < ext);
	afm_zs_hole_unlink(zs, z, h->rec);
	afm_zs_count_in(zs, z, size);
	if (alloc) {
		zs->st.hole_reused++;
		zs->st.hole_bytes += size;
	}
	if (h->len - ext >= AFM_ZS_HOLE_MIN) {
		/* Two indexed holes side by side never fit one extent. */
		if (z->linked && h->len + (z->tail - h->off - h->len) >
				 AFM_ZS_MAX_EXT)
			afm_zs_rest_join(zs, z, h, ext);
		afm_zs_hole_link(zs, z, h->rec, h->r1, h->off + ext,
				 h->len - ext);
	} else {
		afm_zt_put(zs, &zs->rtab, h->r1 - 1);
		ext = h->len;
	}
	afm_zs_hlist_update(zs, z);
	return ext;
}

/*
 * A hole for compaction's extent of @need bytes: the first that fits
 * among the first AFM_ZS_DEST_TRIES holes of its class and the classes
 * above, in a zspage with fewer than AFM_ZS_DEST_HOLES and @max_holes
 * bytes of holes (a dense one, which the run, taking zspages with
 * @max_holes, will not take: an object moved into a sparse one would
 * likely be moved again, and would keep it from emptying). Holes of
 * victims met on the way are taken off the index, as allocation does.
 * Pool lock held. Return: true and *@h, or false.
 */
bool afm_zs_hole_find_dense(struct afm_zs_pool *zs, unsigned int need,
			    unsigned int max_holes, struct afm_zs_hole *h)
{
	unsigned int c = afm_zs_hole_class(need), tries = 0;
	struct afm_zs_hrec *rec;
	struct afm_zspage *z;
	u32 r1, next;

	lockdep_assert_held(&zs->lock);
	max_holes = min_t(unsigned int, max_holes, AFM_ZS_DEST_HOLES);
	for (c = find_next_bit(zs->hole_map, AFM_ZS_NR_HCLASSES, c);
	     c < AFM_ZS_NR_HCLASSES;
	     c = find_next_bit(zs->hole_map, AFM_ZS_NR_HCLASSES, c + 1)) {
		for (r1 = zs->hole_heads[c]; r1; r1 = next) {
			if (++tries > AFM_ZS_DEST_TRIES)
				return false;
			rec = afm_zs_rec(zs, r1);
			next = rec->next;
			if (rec->len < need)
				continue;
			z = afm_zs_desc_locked(zs, rec->id);
			if (z->flags & AFM_ZS_VICTIM) {
				/* As allocation does: it goes with @z. */
				afm_zs_hole_drop(zs, z, rec, r1);
				continue;
			}
			if (z->flags != AFM_ZS_USED ||
			    afm_zs_zholes(z) >= max_holes)
				continue;
			h->z = z;
			h->rec = rec;
			h->r1 = r1;
			h->off = rec->off;
			h->len = rec->len;
			return true;
		}
	}
	return false;
}

/*
 * Put compaction's object of @size bytes, whose handle bits are @idx,
 * into hole @h (afm_zs_hole_find_dense(), under the same hold of the pool
 * lock), writing its header and the rest's. Return: the offset of its
 * extent.
 */
unsigned int afm_zs_hole_put(struct afm_zs_pool *zs, struct afm_zs_hole *h,
			     unsigned int size, unsigned long idx)
{
	unsigned int ext = afm_zs_hole_take(zs, h, size, false);
	struct afm_zs_cur c;

	afm_zs_cur_begin(&c, zs, h->z);
	afm_zs_chdr_write(&c, h->off, ext, idx);
	if (ext < h->len)
		afm_zs_chole_write(&c, h->off + ext, h->len - ext, h->r1);
	return h->off;
}

/*
 * Append the extent of an object of @size bytes to @z (its holes do not
 * change). Return: the offset of the extent.
 */
unsigned int afm_zs_place(struct afm_zs_pool *zs, struct afm_zspage *z,
			  unsigned int size)
{
	unsigned int off = z->tail, ext = afm_zs_ext(zs, size);

	lockdep_assert_held(&zs->lock);
	z->tail += ext;
	zs->tail_bytes -= ext;
	afm_zs_donor_update(zs);
	afm_zs_count_in(zs, z, size);
	afm_zs_rebucket(zs, z);
	return off;
}

/*
 * Give new one-page zspage @z whole to an object of @size bytes, with no
 * header (a solo zspage). Pool lock held. Return: the offset of its data,
 * 0.
 */
static unsigned int afm_zs_place_solo(struct afm_zs_pool *zs,
				      struct afm_zspage *z, unsigned int size)
{
	lockdep_assert_held(&zs->lock);
	z->solo = 1;
	z->tail = afm_zs_end(z);
	zs->tail_bytes -= afm_zs_end(z);
	afm_zs_donor_update(zs);
	afm_zs_count_in(zs, z, size);
	afm_zs_rebucket(zs, z);
	return 0;
}

/*
 * The indexed hole of @z that ends at @off, where the extent being freed
 * begins, or 0. The footer before @off names it (afm_zs_cfoot_read());
 * when the extent before @off is not an indexed hole those bytes are an
 * object's data or a stale footer, so the record they name must be in use
 * (a freed record is zeroed: its length is 0) and be a hole of @z ending at
 * @off: a record on the index says where its hole is. Return: its record
 * number + 1, and the record in *@recp.
 */
static __always_inline u32 afm_zs_hole_before(struct afm_zs_pool *zs,
					      struct afm_zspage *z,
					      struct afm_zs_cur *c,
					      unsigned int off,
					      struct afm_zs_hrec **recp)
{
	struct afm_zs_hrec *rec;
	u32 r1;

	BUILD_BUG_ON(AFM_ZS_HOLE_HDR + AFM_ZS_RECNO > AFM_ZS_HOLE_MIN);
	lockdep_assert_held(&zs->lock);
	if (!z->linked || off < AFM_ZS_HOLE_MIN)
		return 0;
	r1 = afm_zs_cfoot_read(c, off);
	if (!r1 || (r1 - 1) / AFM_ZR_PER_PAGE >= zs->rtab.end)
		return 0;
	rec = afm_zs_rec(zs, r1);
	if (!rec || rec->len < AFM_ZS_HOLE_MIN || rec->id != z->id ||
	    rec->off + rec->len != off)
		return 0;
	*recp = rec;
	return r1;
}

/* Count the object of @size bytes out of @z. */
static __always_inline void afm_zs_count_out(struct afm_zs_pool *zs,
					     struct afm_zspage *z,
					     unsigned int size)
{
	unsigned int pad;

	if (unlikely(z->solo)) {
		/* Its only object: the zspage is released next. */
		pad = afm_zs_end(z) - size;
		zs->solo_objs--;
		z->solo = 0;
	} else {
		pad = afm_zs_pad(zs, size);
	}
	z->live -= size;
	z->objs--;
	z->pad -= pad;
	zs->live_bytes -= size;
	zs->objects--;
	zs->pad_bytes -= pad;
}

/*
 * Give the extent of @len bytes at @hoff of @z (live, not a victim, with
 * objects), an object's that went, back: it joins the tail if last (with
 * the indexed hole before it, if any); else it becomes a hole on the
 * index, merged with the indexed holes around it (up to AFM_ZS_MAX_EXT
 * bytes; the merged hole keeps the record of the hole after it, else of
 * the one before it, whose footer is then rewritten); without a record it
 * stays off the index (its header stays in any case: compaction steps
 * over it). @c: a cursor on @z.
 */
static __always_inline void afm_zs_merge(struct afm_zs_pool *zs,
					 struct afm_zspage *z,
					 struct afm_zs_cur *c,
					 unsigned int hoff, unsigned int len)
{
	struct afm_zs_hrec *prev, *rec = NULL;
	unsigned int nlen;
	bool foot = true;
	unsigned long idx;
	u32 r1 = 0, p1;

	if (hoff + len == z->tail) {
		z->tail = hoff;
		zs->tail_bytes += len;
		/*
		 * With the indexed holes below: two lie side by side when
		 * together they would pass AFM_ZS_MAX_EXT.
		 */
		while ((p1 = afm_zs_hole_before(zs, z, c, z->tail, &prev))) {
			afm_zs_hole_unlink(zs, z, prev);
			z->tail = prev->off;
			zs->tail_bytes += prev->len;
			afm_zt_put(zs, &zs->rtab, p1 - 1);
		}
		afm_zs_donor_update(zs);
		afm_zs_rebucket(zs, z);
		return;
	}
	p1 = afm_zs_hole_before(zs, z, c, hoff, &prev);
	/* The next extent can only be an indexed hole if @z has another. */
	nlen = 0;
	idx = 0;
	if (z->linked > !!p1)
		nlen = afm_zs_chdr_read(c, hoff + len, &idx, &r1);
	if (idx == AFM_ZS_LINKED && len + nlen <= AFM_ZS_MAX_EXT) {
		/* Its footer is already at the end. */
		rec = afm_zs_rec(zs, r1);
		afm_zs_hole_unlink(zs, z, rec);
		len += nlen;
		foot = false;
	} else if (idx == AFM_ZS_LINKED) {
		r1 = 0;
	}
	if (p1 && prev->len + len <= AFM_ZS_MAX_EXT) {
		afm_zs_hole_unlink(zs, z, prev);
		hoff = prev->off;
		len += prev->len;
		if (r1) {
			afm_zt_put(zs, &zs->rtab, p1 - 1);
		} else {
			r1 = p1;
			rec = prev;
		}
	}
	if (len >= AFM_ZS_HOLE_MIN && !r1) {
		r1 = afm_zs_rec_new(zs);
		if (r1)
			rec = afm_zs_rec(zs, r1);
	}
	if (r1) {
		afm_zs_hole_link(zs, z, rec, r1, hoff, len);
		afm_zs_chole_write(c, hoff, len, r1);
		if (foot)
			afm_zs_cfoot_write(c, hoff, len, r1);
	}
}

/*
 * Count the object of @size bytes out of victim @z (compaction moved it
 * away): its extent goes with @z.
 */
void afm_zs_unplace_victim(struct afm_zs_pool *zs, struct afm_zspage *z,
			   unsigned int size)
{
	lockdep_assert_held(&zs->lock);
	afm_zs_count_out(zs, z, size);
	zs->victim_live -= size;
}

/*
 * Deferred frees
 * --------------
 * A free under the pool lock only clears its entry, counts its object out
 * and queues its zspage and extent offset on the shard's @pend; the
 * extent's merge (afm_zs_merge(): header, footer before it, header after
 * it, hole records) waits until @pend is full, and then the whole batch is
 * merged in three passes, each starting the cache misses of the next for
 * every entry at once (the headers, then the headers after the extents),
 * instead of one free at a time waiting for each line in turn. Until then
 * a queued extent is a hole off the index, as one a free could not get a
 * record for: counted in the holes (afm_zs_holes(), afm_zs_zholes()),
 * stepped over by compaction, its header unchanged (only its own merge
 * writes it: a merge takes indexed holes around it, never a queued
 * extent, whose stale header and data name no hole). What looks at the
 * index or at the hole lists as a whole flushes first: compaction's pick
 * (so no victim has a queued extent), the KUnit audit; a zspage's release
 * drops its entries (its extents go with it).
 */

/* Drop the queued extents of @z, which is being released. */
void afm_zs_pend_drop(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int i, n = 0;

	lockdep_assert_held(&zs->lock);
	for (i = 0; i < zs->pend_nr; i++)
		if (zs->pend[i].z != z)
			zs->pend[n++] = zs->pend[i];
	zs->pend_nr = n;
}

/**
 * afm_zs_pend_flush() - merge the extents of the deferred frees
 * @zs: the shard
 *
 * Context: pool lock held.
 */
void afm_zs_pend_flush(struct afm_zs_pool *zs)
{
	/* Each of the first n set in pass 2 before pass 3 reads it. */
	unsigned int len[AFM_ZS_PEND] __uninitialized;
	unsigned int i, n = zs->pend_nr;
	struct afm_zs_cur c;
	struct afm_zs_pend *p;
	unsigned long idx;
	u8 *lin;

	lockdep_assert_held(&zs->lock);
	if (!n)
		return;
	zs->pend_nr = 0;
	/* The headers, and the footers before them. */
	for (i = 0; i < n; i++) {
		p = &zs->pend[i];
		lin = afm_zs_lin(p->z);
		if (lin) {
			prefetchw(lin + p->off);
			if (p->off >= AFM_ZS_RECNO)
				prefetch(lin + p->off - AFM_ZS_RECNO);
		}
	}
	/* The lengths, and the headers after the extents. */
	for (i = 0; i < n; i++) {
		p = &zs->pend[i];
		len[i] = 0;
		/* Only a live zspage's header is read (checked below). */
		if (p->z->flags != AFM_ZS_USED || !p->z->objs)
			continue;
		afm_zs_cur_begin(&c, zs, p->z);
		len[i] = afm_zs_chdr_read(&c, p->off, &idx, NULL);
		if (c.lin && p->off + len[i] < p->z->tail)
			prefetchw(c.lin + p->off + len[i]);
	}
	for (i = 0; i < n; i++) {
		p = &zs->pend[i];
		if (WARN_ONCE(len[i] <= AFM_ZS_HDR ||
			      p->off + len[i] > p->z->tail,
			      "afmalloc: pool %s: bad deferred free at %u of zspage %u\n",
			      zs->pool->name, p->off, p->z->id))
			continue;
		afm_zs_cur_begin(&c, zs, p->z);
		afm_zs_merge(zs, p->z, &c, p->off, len[i]);
		afm_zs_hlist_update(zs, p->z);
	}
}

/*
 * The donor after @zs (in shard order, wrapping), or NULL. Read without a
 * lock: a stale bit costs one failed trylock or one missed donor.
 */
static struct afm_zs_pool *afm_zs_donor(struct afm_zs_set *set,
					struct afm_zs_pool *zs)
{
	unsigned int d;

	if (set->nr == 1)
		return NULL;
	d = find_next_bit(set->donors, set->nr, zs->nr + 1);
	if (d >= set->nr)
		d = find_first_bit(set->donors, zs->nr);
	return d < set->nr && d != zs->nr ? READ_ONCE(set->shard[d]) : NULL;
}

/*
 * Finish an allocation of @size bytes in @z of @zs at data offset @off, an
 * extent of @ext bytes (in hole @hole, NULL if appended to the tail), with
 * handle table slot @idx (taken before the hole or the tail, see
 * afm_zs_malloc()): write the headers and the entry, drop the pool lock.
 * Return: the handle.
 */
static __always_inline unsigned long
afm_zs_commit(struct afm_zs_set *set, struct afm_zs_pool *zs,
	      struct afm_zspage *z, struct afm_zs_hole *hole, unsigned int off,
	      unsigned int ext, unsigned long idx, size_t size)
	__releases(&zs->lock)
{
	unsigned int data = off;
	struct afm_zs_cur c;

	WRITE_ONCE(zs->last_alloc, jiffies);
	/* A solo zspage was made for this object: no header. */
	if (likely(!z->solo)) {
		afm_zs_cur_begin(&c, zs, z);
		afm_zs_chdr_write(&c, off, ext, idx + 1);
		if (hole && ext < hole->len)
			afm_zs_chole_write(&c, off + ext, hole->len - ext,
					   hole->r1);
		data += AFM_ZS_HDR;
	}
	atomic64_set(afm_zs_entry_locked(zs, idx + 1),
		     afm_ze_make(z->id, data, size));
	afm_zs_unlock(zs);
	return (idx + 1) << set->shift | zs->nr;
}

static __always_inline void afm_zs_rfree_take(struct afm_zs_pool *zs);

/*
 * Allocate @size bytes in an indexed hole, else in a tail, of donor @zs,
 * on behalf of another shard: without waiting for its lock, growing any
 * table or allocating. Return: the handle, or 0.
 */
static unsigned long afm_zs_malloc_donor(struct afm_zs_set *set,
					 struct afm_zs_pool *zs, size_t size)
{
	unsigned int ext = afm_zs_ext(zs, size), off;
	struct afm_zs_spare sp __uninitialized;
	struct afm_zs_hole hole;
	unsigned int blocks = 0;
	struct afm_zspage *z;
	unsigned long hpg, idx;

	afm_zs_spare_init(&sp);
	if (!spin_trylock(&zs->lock))
		return 0;
	/*
	 * A donor's own CPUs may no longer allocate: the frees of what it
	 * lent wait for a lock holder (see "Frees that find the lock held").
	 */
	afm_zs_rfree_take(zs);
	if (afm_zt_find(&zs->htab, &hpg) || afm_zt_short(&zs->htab, hpg) ||
	    afm_zt_need(&zs->htab, hpg, &blocks) || blocks)
		goto none;
	if (afm_zs_hole_find(zs, ext, &hole)) {
		zs->st.donated++;
		idx = afm_zt_take(zs, &zs->htab, hpg, &sp);
		ext = afm_zs_hole_take(zs, &hole, size, true);
		return afm_zs_commit(set, zs, hole.z, &hole, hole.off, ext,
				     idx, size);
	}
	z = afm_zs_fit(zs, ext);
	if (!z)
		goto none;
	zs->st.donated++;
	idx = afm_zt_take(zs, &zs->htab, hpg, &sp);
	off = afm_zs_place(zs, z, size);
	return afm_zs_commit(set, zs, z, NULL, off, ext, idx, size);

none:
	afm_zs_unlock(zs);
	return 0;
}

/*
 * Active shards
 * -------------
 * A pool allocates in the first &afm_zs_set.active of its shards, CPU c
 * in shard c & (active - 1), starting with one: each shard allocated from
 * holds table pages and an open zspage's tail of its own (a few pages:
 * about 35 KiB a shard in bench/smallpool's run on 8 vCPUs, so on 64
 * shards a pool storing little would pay a MiB or two), and a pool that
 * few CPUs use at a time (a phone's zram, zswap at low pressure, a small
 * zram device on a large server) does not need more. An allocation that
 * finds its shard's lock held counts itself (afm_zs_contended());
 * AFM_ZS_GROW_AFTER of them within AFM_ZS_GROW_WINDOW double the active
 * shards, up to all of them. They never shrink: the objects of a shard
 * stay where they are (their handles name it), and its holes and tails
 * are lent to the others (donors). The count is approximate under races
 * (a window's reset may be lost); the allocation that makes it reach
 * AFM_ZS_GROW_AFTER starts a new window and queues &afm_zs_set.grow_work,
 * which doubles the active shards (under &afm_zs_set.grow_lock); until the
 * work is done (&afm_zs_set.grow_from set) waits are not counted, so one
 * burst of them doubles the shards once.
 *
 * A shard is created when it first becomes active, not with the pool: its
 * struct afm_zs_pool (about 8 KiB), candidate array, table tops and
 * shrinker are then paid by the shards a pool uses, not by every possible
 * CPU's. Allocation may not sleep, so the work creates them (GFP_KERNEL)
 * and publishes each (&afm_zs_set.created, then &afm_zs_set.active, with
 * release; afm_zs_here() reads active with acquire); until it has run,
 * allocations go on in the shards already active. A shard that cannot be
 * had for memory leaves the active shards as they were.
 */

/*
 * An allocation found its shard's lock held at jiffies @now: count it, and
 * queue the doubling of the active shards once AFM_ZS_GROW_AFTER such fell
 * within AFM_ZS_GROW_WINDOW.
 */
static noinline void afm_zs_contended(struct afm_zs_set *set,
				      unsigned long now)
{
	unsigned int a = READ_ONCE(set->active);

	if (a >= set->nr || READ_ONCE(set->grow_from))
		return;
	if (time_after(now, READ_ONCE(set->contended_since) +
			    AFM_ZS_GROW_WINDOW)) {
		WRITE_ONCE(set->contended_since, now);
		atomic_set(&set->contended, 0);
	}
	if (atomic_inc_return(&set->contended) != AFM_ZS_GROW_AFTER)
		return;
	atomic_set(&set->contended, 0);
	WRITE_ONCE(set->contended_since, now);
	if (!cmpxchg(&set->grow_from, 0, a))
		queue_work(system_unbound_wq, &set->grow_work);
}

/* Take @zs's lock for an allocation, counting a wait for it. */
static __always_inline void afm_zs_lock_alloc(struct afm_zs_set *set,
					      struct afm_zs_pool *zs)
	__acquires(&zs->lock)
{
	if (likely(spin_trylock(&zs->lock)))
		return;
	afm_zs_contended(set, jiffies);
	afm_zs_lock(zs);
}

/* The shard for an allocation on this CPU. */
static struct afm_zs_pool *afm_zs_here(struct afm_zs_set *set)
{
	unsigned int cpu = raw_smp_processor_id();

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	int t = READ_ONCE(set->test_shard);

	if (t >= 0)
		return set->shard[t];
	t = READ_ONCE(set->test_cpu);
	if (t >= 0)
		cpu = t;
#endif
	/* Acquire: the shards active names exist (afm_zs_grow_work()). */
	return set->shard[cpu & (smp_load_acquire(&set->active) - 1)];
}

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_zs_test_alloc_cpu() - choose new objects' shard as if on another CPU
 *	(KUnit hook)
 * @pool: a zspage-store pool
 * @cpu: the CPU number to choose for, or -1 for the current CPU's
 *
 * Lets a test on one CPU allocate as CPUs that share no shard would, with
 * the active shards (see "Active shards") deciding where each goes;
 * afm_zs_test_alloc_shard(), when set, comes first.
 *
 * Context: any context.
 * Return: nothing.
 */
void afm_zs_test_alloc_cpu(struct afm_pool *pool, int cpu)
{
	struct afm_zs_set *set = pool->store;

	WRITE_ONCE(set->test_cpu, max(cpu, -1));
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_alloc_cpu);

/**
 * afm_zs_test_contended() - count allocations that found their shard's
 *	lock held (KUnit hook)
 * @pool: a zspage-store pool
 * @n: how many (fewer once every shard is active)
 * @now: the jiffies they count at
 *
 * The doubling they queue is waited for after each; one that cannot be
 * had for memory ends the waits. Under afm_zs_test_grow_hold(), a queued
 * doubling is only let start (it then waits for the grow lock).
 *
 * Context: process context; may sleep.
 * Return: the active shards after them.
 */
unsigned int afm_zs_test_contended(struct afm_pool *pool, unsigned int n,
				   unsigned long now)
{
	struct afm_zs_set *set = pool->store;

	unsigned int a;

	while (n-- && (a = READ_ONCE(set->active)) < set->nr) {
		afm_zs_contended(set, now);
		if (set->test_grow_held) {
			/*
			 * Let a doubling queued start (it then waits for the
			 * lock); one queued again behind it stays queued.
			 */
			while (work_pending(&set->grow_work) &&
			       !(work_busy(&set->grow_work) & WORK_BUSY_RUNNING))
				usleep_range(1000, 2000);
			continue;
		}
		if (!READ_ONCE(set->grow_from))
			continue;
		flush_work(&set->grow_work);
		/* Out of memory for a shard: more waits would not help. */
		if (READ_ONCE(set->active) == a)
			break;
	}
	return READ_ONCE(set->active);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_contended);

/**
 * afm_zs_test_grow_hold() - hold back the doubling of the active shards
 *	(KUnit hook)
 * @pool: a zspage-store pool
 * @hold: true: take the grow lock, so that a doubling that starts waits
 *	for it; false: let go of it and wait for the doubling queued, if any
 *
 * Lets a test count waits for a shard's lock while a doubling is under
 * way (afm_zs_test_contended()). Called in pairs, by one task.
 *
 * Context: process context; may sleep.
 * Return: nothing.
 */
void afm_zs_test_grow_hold(struct afm_pool *pool, bool hold)
{
	struct afm_zs_set *set = pool->store;

	if (hold) {
		mutex_lock(&set->grow_lock);
		set->test_grow_held = true;
		return;
	}
	set->test_grow_held = false;
	mutex_unlock(&set->grow_lock);
	flush_work(&set->grow_work);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_grow_hold);

/**
 * afm_zs_test_grow_after() - AFM_ZS_GROW_AFTER and AFM_ZS_GROW_WINDOW
 *	(KUnit hook)
 * @window: set to AFM_ZS_GROW_WINDOW
 *
 * Context: any context.
 * Return: the waits for a shard's lock, within *@window jiffies, that
 * double the active shards.
 */
unsigned int afm_zs_test_grow_after(unsigned long *window)
{
	*window = AFM_ZS_GROW_WINDOW;
	return AFM_ZS_GROW_AFTER;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_grow_after);
#endif /* CONFIG_AFMALLOC_KUNIT_TEST */

unsigned long afm_zs_malloc(struct afm_pool *pool, size_t size,
			    gfp_t gfp)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs = afm_zs_here(set);
	unsigned long hpg, dpg = 0, rpg, handle, idx;
	unsigned int meta, data, off, ext, order = AFM_ZS_ORDER, blocks;
	struct afm_zs_spare sp __uninitialized;
	struct afm_zs_pool *donor;
	struct afm_zs_hole hole;
	bool in_hole, asked = false, grow_rtab = true, solo = false;
	struct afm_zspage *z;

	afm_zs_spare_init(&sp);
	for (;;) {
		afm_zs_lock_alloc(set, zs);
		if (unlikely(atomic_read(&zs->rfree_nr) > 0))
			afm_zs_rfree_drain(zs);
		if (afm_zt_find(&zs->htab, &hpg))
			goto full;
		if (afm_zt_short(&zs->htab, hpg)) {
			afm_zs_unlock(zs);
			if (afm_zt_grow(zs, &zs->htab, hpg, gfp))
				goto nomem;
			continue;
		}
		/*
		 * Frees take hole records without sleeping: grow here. This
		 * allocation needs no record: if the top level cannot grow
		 * now, it goes on, and the next one tries again.
		 */
		if (unlikely(zs->rtab_short) && grow_rtab &&
		    !afm_zt_find(&zs->rtab, &rpg)) {
			if (afm_zt_short(&zs->rtab, rpg)) {
				afm_zs_unlock(zs);
				grow_rtab = !afm_zt_grow(zs, &zs->rtab, rpg,
							 gfp);
				continue;
			}
			zs->rtab_short = false;
		}
		blocks = 0;
		meta = afm_zt_need(&zs->htab, hpg, &blocks);
		data = 0;
		/*
		 * The hole or the tail the extent fits more tightly; no tail
		 * is looked at for a hole it fills but for slack (a hole of
		 * its own class, see afm_zs_hole_find()).
		 */
		ext = afm_zs_ext(zs, size);
		in_hole = afm_zs_hole_find(zs, ext, &hole);
		z = NULL;
		solo = false;
		if (!in_hole || hole.len - ext >= AFM_ZS_HOLE_MIN) {
			z = afm_zs_fit(zs, ext);
			if (in_hole && z && afm_zs_end(z) - z->tail < hole.len)
				in_hole = false;
			else if (in_hole)
				z = NULL;
		}
		if (!in_hole && !z && !asked) {
			/* Rather a hole of a donor than a new zspage. */
			asked = true;
			donor = afm_zs_donor(set, zs);
			if (donor) {
				afm_zs_unlock(zs);
				handle = afm_zs_malloc_donor(set, donor, size);
				if (handle) {
					afm_zs_spare_drain(&sp);
					return handle;
				}
				continue;
			}
		}
		if (!in_hole && !z) {
			if (afm_zt_find(&zs->dtab, &dpg))
				goto full;
			if (afm_zt_short(&zs->dtab, dpg)) {
				afm_zs_unlock(zs);
				if (afm_zt_grow(zs, &zs->dtab, dpg, gfp))
					goto nomem;
				continue;
			}
			meta += afm_zt_need(&zs->dtab, dpg, &blocks);
			solo = afm_zs_solo(ext);
			order = solo ? 0 : afm_zs_new_order(zs, ext);
			data = 1U << order;
		}
		meta += afm_zs_dir_need(zs, blocks);
		if (sp.nr_meta >= meta && sp.nr_data >= data)
			break;
		afm_zs_unlock(zs);
		if (afm_zs_spare_fill(zs, &sp, meta, data, gfp))
			goto nomem;
	}

	/*
	 * Every slot and page counted above is taken before anything is given
	 * back: taking a hole may free the hole table's last record and with
	 * it a directory page, one whose free block afm_zs_dir_need() counted
	 * on (KUnit afm_zs_test_dir_hole_alloc). (A directory block given back
	 * never puts a page with fewer free blocks before the one counted on:
	 * afm_zt_dir_free().)
	 */
	idx = afm_zt_take(zs, &zs->htab, hpg, &sp);
	if (in_hole) {
		z = hole.z;
		off = hole.off;
		ext = afm_zs_hole_take(zs, &hole, size, true);
	} else {
		if (!z)
			z = afm_zs_new(zs, dpg, &sp, order);
		off = solo ? afm_zs_place_solo(zs, z, size) :
			     afm_zs_place(zs, z, size);
	}
	handle = afm_zs_commit(set, zs, z, in_hole ? &hole : NULL, off, ext,
			       idx, size);
	afm_zs_spare_drain(&sp);
	return handle;

full:
	afm_zs_unlock(zs);
	pr_warn_ratelimited("pool %s: handle or zspage table full\n",
			    pool->name);
nomem:
	afm_zs_spare_drain(&sp);
	return (unsigned long)ERR_PTR(-ENOMEM);
}

/*
 * Wait, as a pinner does, for compaction to finish moving the object of
 * @ent: its copy runs without the pool lock, which the caller holds
 * (afm_zs_move(); the mover needs neither the pool lock nor anything else
 * before it clears LOCK, and runs with preemption off). Return: the entry
 * with LOCK clear, the object at its new location.
 */
static noinline s64 afm_zs_free_wait_move(atomic64_t *ent)
{
	s64 e;

	lock_map_acquire_read(&afm_ze_map);
	while ((e = atomic64_read_acquire(ent)) & AFM_ZE_LOCK)
		cpu_relax();
	lock_map_release(&afm_ze_map);
	return e;
}

/*
 * Free shard handle @h (@handle, as the caller gave it, for the warnings)
 * of @zs; @left: the free was left to the lock holder (see "Frees that find
 * the lock held"), whose stack a warning then shows, not the freer's: its
 * warnings say so. Pool lock held. Return: what afm_zs_want_auto() said
 * after it.
 */
static int afm_zs_free_locked(struct afm_zs_pool *zs, unsigned long h,
			      unsigned long handle, bool left)
{
	struct afm_zspage *z;
	unsigned int size;
	atomic64_t *ent;
	s64 e;

	lockdep_assert_held(&zs->lock);
	/*
	 * The wait for a move below orders the pool lock before the entry:
	 * tell lockdep on every free (compiled out without it), not only
	 * on the rare one that meets a move.
	 */
	lock_map_acquire_read(&afm_ze_map);
	lock_map_release(&afm_ze_map);
	ent = afm_zs_entry_locked(zs, h);
	if (!ent)
		goto invalid;
	e = atomic64_read(ent);
	do {
		if (unlikely((e & (AFM_ZE_LIVE | AFM_ZE_LOCK)) ==
			     (AFM_ZE_LIVE | AFM_ZE_LOCK)))
			e = afm_zs_free_wait_move(ent);
		if (!(e & AFM_ZE_LIVE))
			goto invalid;
		if (e & AFM_ZE_PINS) {
			if (left)
				WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of mapped object %#lx, leaking it (left to the lock holder: not the freer's stack)\n",
					  zs->pool->name, handle);
			else
				WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of mapped object %#lx, leaking it\n",
					  zs->pool->name, handle);
			return AFM_ZS_AUTO_NO;
		}
	} while (!atomic64_try_cmpxchg(ent, &e, 0));
	/* Under the pool lock only the pins of a live entry change. */
	z = afm_zs_desc_locked(zs, afm_ze_id(e));
	size = afm_ze_size(e);
	afm_zs_count_out(zs, z, size);
	afm_zt_put(zs, &zs->htab, h - 1);
	if (z->flags & AFM_ZS_VICTIM) {
		zs->victim_live -= size;
	} else if (!z->objs) {
		afm_zs_release(zs, z);
	} else {
		if (zs->pend_nr == AFM_ZS_PEND)
			afm_zs_pend_flush(zs);
		zs->pend[zs->pend_nr].z = z;
		zs->pend[zs->pend_nr++].off = afm_ze_off(e) - AFM_ZS_HDR;
	}
	return afm_zs_want_auto(zs);

invalid:
	if (left)
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of invalid handle %#lx (left to the lock holder: not the freer's stack)\n",
			  zs->pool->name, handle);
	else
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: free of invalid handle %#lx\n",
			  zs->pool->name, handle);
	return AFM_ZS_AUTO_NO;
}

/* Queue what afm_zs_want_auto() asked for. */
static void afm_zs_auto_queue(struct afm_zs_pool *zs, int want)
{
	/* Mostly queued already under churn: no atomic bit op then. */
	if (want == AFM_ZS_AUTO_NOW &&
	    !delayed_work_pending(&zs->compact_work)) {
		long wait = (long)(READ_ONCE(zs->auto_next) - jiffies);
		long most = AFM_ZS_AUTO_GAP;

		/* A test holds the run back as long as it says. */
		if (afm_zs_quiet(zs, AFM_ZS_QUIET_AUTO))
			most = MAX_JIFFY_OFFSET;
		wait = clamp_t(long, wait, 0, most);
		if (wait)
			atomic_long_inc(&zs->st.auto_delayed);
		queue_delayed_work(afm_wq, &zs->compact_work, wait);
	} else if (want == AFM_ZS_AUTO_LATER &&
		 !delayed_work_pending(&zs->late_work))
		queue_delayed_work(afm_wq, &zs->late_work,
				   AFM_ZS_LATE);
}

/*
 * Frees that find the lock held
 * -----------------------------
 * A shard is allocated from by its CPU and freed into from every CPU
 * (zswap writes back and loads on any CPU; zram frees where the slot
 * goes). A free that finds the pool lock held does not wait for it: it
 * leaves its handle (as the caller passed it) in a free slot of @rfree
 * (cmpxchg from 0, trying every slot once from one that depends on the
 * CPU; none when @rfree_nr says all are taken) and returns; only with
 * every slot taken does it wait for the lock. A free of another shard's
 * object than the one this CPU allocates in (afm_zs_here()) does the same
 * without trying the lock while fewer than AFM_ZS_RFREE_REMOTE handles
 * wait: the shard's lock, entries, descriptors, hole index and deferred
 * frees then stay in the caches of the CPU that allocates there, which
 * frees such handles a batch at a time at its next malloc, and the freer
 * writes a slot and the count (bench/speed/run.sh --shared: allocation +
 * write + free with two threads whose frees are of either CPU's objects
 * went from behind zsmalloc to ahead of it). With more waiting (the
 * shard's CPUs allocate no more, or not as fast: zswap's writeback frees
 * from a worker on any CPU) the free takes the lock as any other and
 * frees them all, so that what waits stays below AFM_ZS_RFREE_REMOTE
 * objects a shard (a donor's lock holder frees them too: its own CPUs
 * may not come back), besides what waits AFM_ZS_RFREE_DELAY for the
 * worker after the last free.
 * The next holder of the lock frees them: afm_zs_malloc() and
 * afm_zs_free() call afm_zs_rfree_drain() once they hold it (a read of
 * @rfree_nr when there are none; a free with hardirqs off takes at most
 * AFM_ZS_RFREE_IRQS_OFF of them), as do compaction's pick,
 * afm_zs_test_flush() and the destruction; and when
 * none comes, @rfree_work, queued AFM_ZS_RFREE_DELAY after the free that
 * found no handle there before it (or by a drain that leaves some behind:
 * a free that filled a slot behind its scan). Until then the object is
 * live in every count (its handle is no longer the caller's: a free is
 * final; a second free of it, or a free of a mapped object, is reported
 * when the holder gets to it, from the holder's stack, in warnings of
 * their own that say so) and compaction may move it. Why not wait:
 * on a shard the holder is usually its own CPU's malloc, and with zswap's
 * writeback freeing in LRU order from any CPU, half the frees on two CPUs
 * met it and spun (bench/churn/run.sh --perf).
 */

/*
 * Leave @handle, the caller's (so that a warning about it names what the
 * caller passed), of shard @zs to the lock holder. Return: false if every
 * slot is taken, or for handle 0 (an empty slot; no object's).
 */
static bool afm_zs_rfree_put(struct afm_zs_pool *zs, unsigned long handle)
{
	unsigned int i, s;

	if (unlikely(!handle) ||
	    atomic_read(&zs->rfree_nr) >= AFM_ZS_RFREE)
		return false;
	/*
	 * Not preempted between a slot's fill and its count: until the count
	 * is up, no lock holder looks at the slots and no work is queued, so
	 * a free preempted there (and, with a drain's decrement ahead of its
	 * increment, the next free's) would wait for this task to run again.
	 */
	guard(preempt)();
	s = smp_processor_id() % AFM_ZS_RFREE;
	for (i = 0; i < AFM_ZS_RFREE; i++) {
		atomic_long_t *slot = &zs->rfree[(s + i) % AFM_ZS_RFREE];
		long old = 0;

		if (!atomic_long_read(slot) &&
		    atomic_long_try_cmpxchg(slot, &old, handle)) {
			if (atomic_inc_return(&zs->rfree_nr) == 1 &&
			    !delayed_work_pending(&zs->rfree_work))
				queue_delayed_work(afm_wq,
						   &zs->rfree_work,
						   AFM_ZS_RFREE_DELAY);
			return true;
		}
	}
	return false;
}

/*
 * Free up to @max of the handles frees left to the lock holder of @zs;
 * when some stay behind, @rfree_work is queued for them. Pool lock held.
 */
static void afm_zs_rfree_drain_max(struct afm_zs_pool *zs, unsigned int max)
{
	struct afm_zs_set *set = zs->pool->store;
	unsigned long handle, h;
	unsigned int i, n = 0;

	lockdep_assert_held(&zs->lock);
	for (i = 0; i < AFM_ZS_RFREE && n < max; i++) {
		if (!atomic_long_read(&zs->rfree[i]))
			continue;
		handle = atomic_long_xchg(&zs->rfree[i], 0);
		if (!handle)
			continue;
		atomic_dec(&zs->rfree_nr);
		zs->st.rfrees++;
		n++;
		/* As afm_zs_of() made it: a bad shard number names no entry. */
		h = handle >> set->shift;
		if ((handle & (set->nr - 1)) != zs->nr)
			h = ULONG_MAX >> set->shift;
		afm_zs_auto_queue(zs, afm_zs_free_locked(zs, h, handle, true));
	}
	/*
	 * Those beyond @max, or a free that filled a slot behind this scan
	 * while the count was above zero (it queued no work: it would wait
	 * for the next lock holder).
	 */
	if (atomic_read(&zs->rfree_nr) > 0 && !zs->dying &&
	    !delayed_work_pending(&zs->rfree_work))
		queue_delayed_work(afm_wq, &zs->rfree_work,
				   AFM_ZS_RFREE_DELAY);
}

/*
 * What a free or a donor's allocation takes of the frees left to the lock
 * holder of @zs: all of them, but with hardirqs off (zram's frees from the
 * swap slots cache, a batch of them at a time) only a few: each may
 * release a zspage, and what it leaves goes to @rfree_work. Pool lock held.
 */
static __always_inline void afm_zs_rfree_take(struct afm_zs_pool *zs)
{
	if (unlikely(atomic_read(&zs->rfree_nr) > 0))
		afm_zs_rfree_drain_max(zs, irqs_disabled() ?
				       AFM_ZS_RFREE_IRQS_OFF : AFM_ZS_RFREE);
}

/**
 * afm_zs_rfree_drain() - free the handles frees left to the lock holder
 * @zs: the shard
 *
 * Context: pool lock held.
 */
void afm_zs_rfree_drain(struct afm_zs_pool *zs)
{
	afm_zs_rfree_drain_max(zs, AFM_ZS_RFREE);
}

/* @rfree_work: the frees no lock holder came to take. */
void afm_zs_rfree_work(struct work_struct *work)
{
	struct afm_zs_pool *zs = container_of(to_delayed_work(work),
					      struct afm_zs_pool, rfree_work);

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	/* While a test holds them back, whatever the time it takes. */
	if (READ_ONCE(((struct afm_zs_set *)zs->pool->store)->test_busy)) {
		queue_delayed_work(afm_wq, &zs->rfree_work,
				   AFM_ZS_RFREE_DELAY);
		return;
	}
	/* A test waits for a lock holder instead, whenever it comes. */
	if (afm_zs_quiet(zs, AFM_ZS_QUIET_RWORK)) {
		queue_delayed_work(afm_wq, &zs->rfree_work,
				   AFM_ZS_RFREE_DELAY);
		return;
	}
#endif
	afm_zs_lock(zs);
	afm_zs_rfree_drain(zs);
	afm_zs_unlock(zs);
}

void afm_zs_free(struct afm_pool *pool, unsigned long handle)
{
	unsigned long h = handle;
	struct afm_zs_pool *zs = afm_zs_of(pool, &h);
	int want;

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	if (READ_ONCE(((struct afm_zs_set *)pool->store)->test_busy) &&
	    afm_zs_rfree_put(zs, handle))
		return;
#endif
	/*
	 * Another CPU's shard: left to its lock holder without trying the
	 * lock while half the slots are free (see "Frees that find the lock
	 * held").
	 */
	if (zs != afm_zs_here(pool->store) &&
	    atomic_read(&zs->rfree_nr) < AFM_ZS_RFREE_REMOTE &&
	    !afm_zs_quiet(zs, AFM_ZS_QUIET_RFREE) &&
	    afm_zs_rfree_put(zs, handle))
		return;
	if (!spin_trylock(&zs->lock)) {
		if (!afm_zs_quiet(zs, AFM_ZS_QUIET_RFREE) &&
		    afm_zs_rfree_put(zs, handle))
			return;
		afm_zs_lock(zs);
	}
	afm_zs_rfree_take(zs);
	want = afm_zs_free_locked(zs, h, handle, false);
	afm_zs_unlock(zs);
	afm_zs_auto_queue(zs, want);
}

/* Access */

void *afm_zs_map(struct afm_pool *pool, unsigned long handle,
		 enum afm_mapmode mm, void *bounce)
{
	struct afm_zs_mapped *m = this_cpu_ptr(&afm_zs_mapped);
	struct afm_zs_pool *zs;
	struct afm_zspage *z;
	unsigned int off, size;
	atomic64_t *ent;
	void *addr;
	u8 *lin;
	u64 e;

	zs = afm_zs_of(pool, &handle);
	z = afm_zs_get(zs, handle, &ent, &e);
	if (!z)
		return NULL;
	off = afm_ze_off(e);
	size = afm_ze_size(e);
	m->z = z;
	m->ent = ent;
	m->kaddr = NULL;
	m->size = 0;
	lin = afm_zs_lin(z);
	if (lin)
		return lin + off;
	if (offset_in_page(off) + size <= PAGE_SIZE) {
		addr = kmap_local_page(afm_zs_page(z, off >> PAGE_SHIFT)) +
		       offset_in_page(off);
		m->kaddr = addr;
		return addr;
	}
	if (mm != AFM_MM_WO)
		afm_zs_copy_out(z, off, bounce, size);
	if (mm != AFM_MM_RO) {
		m->off = off;
		m->size = size;
	}
	return bounce;
}

void afm_zs_unmap(struct afm_pool *pool, unsigned long handle,
		  enum afm_mapmode mm, void *bounce)
{
	struct afm_zs_mapped *m = this_cpu_ptr(&afm_zs_mapped);

	/* The core unmaps what this CPU mapped, whatever @handle says. */
	if (m->kaddr)
		kunmap_local(m->kaddr);
	else if (m->size)
		afm_zs_copy_in(m->z, m->off, bounce, m->size);
	afm_zs_put(m->z, m->ent);
	m->z = NULL;
}

size_t afm_zs_read(struct afm_pool *pool, unsigned long handle,
		   void *dst)
{
	struct afm_zs_pool *zs;
	struct afm_zspage *z;
	unsigned int size;
	atomic64_t *ent;
	u64 e;

	zs = afm_zs_of(pool, &handle);
	z = afm_zs_get(zs, handle, &ent, &e);
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
	struct afm_zs_pool *zs;
	struct afm_zspage *z;
	atomic64_t *ent;
	int ret = 0;
	u64 e;

	zs = afm_zs_of(pool, &handle);
	z = afm_zs_get(zs, handle, &ent, &e);
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
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	atomic64_t *ent;
	u64 e = 0;

	/* As in afm_zs_get(): the table page outlives the section. */
	rcu_read_lock();
	ent = afm_zs_entry(zs, handle);
	if (ent)
		e = atomic64_read(ent);
	rcu_read_unlock();
	return e & AFM_ZE_LIVE ? afm_ze_size(e) : 0;
}
