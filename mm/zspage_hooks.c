// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: KUnit hooks, built only with
 * CONFIG_AFMALLOC_KUNIT_TEST (the design, the handle encoding and the lock
 * order are in the map at the top of zspage_store.c).
 *
 * What the suites in kunit/zspage_*_test.c reach inside a pool: its
 * counters, an audit of every invariant the store keeps (tables against
 * zspages, extents against headers and the hole index, pending frees),
 * the workers run or flushed on demand, faults and contention staged
 * (pins, held zspages and shard locks, frees that find the lock held,
 * waiting migrations) and geometry shrunk so that a test with few
 * objects crosses what a real pool meets only at scale (slot table
 * directories, top levels, handle magazines, index bits). The setters of
 * the module parameters and the choice of a shard to allocate in stay in
 * zspage_store.c beside the parameters they set.
 *
 * Lock rules: no lock of its own. A hook that reads or changes one shard's
 * state takes that shard's pool lock (helpers that expect it held say so
 * with lockdep_assert_held()); one that sets a value in every shard walks
 * the created shards under the set's grow_lock, as shard creation copies
 * those values from the first shard under it; staged contention takes the
 * locks of the path it stands in for, in the order of zspage_store.c's map.
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/* The counters of @zs as they stand. Pool lock held. */
static void afm_zs_read_counters(struct afm_zs_pool *zs,
				 struct afm_zs_counters *c)
{
	lockdep_assert_held(&zs->lock);
	c->objects = zs->objects;
	c->live_bytes = zs->live_bytes;
	c->pad_bytes = zs->pad_bytes;
	c->solo_objs = zs->solo_objs;
	c->zspages = zs->zspages;
	c->dead_zspages = zs->dead_zspages;
	c->hole_bytes = afm_zs_holes(zs);
	c->tail_bytes = zs->tail_bytes;
	c->data_pages = zs->data_pages + zs->dead_pages;
	c->table_pages = zs->htab.pages;
	c->desc_pages = zs->dtab.pages;
	c->hole_pages = zs->rtab.pages;
	c->dir_pages = zs->dir_pages;
	c->total_pages = atomic_long_read(&zs->total_pages);
	c->migrated = atomic_long_read(&zs->st.migrated);
	c->migrate_busy = atomic_long_read(&zs->st.migrate_busy);
	c->isolated = atomic_long_read(&zs->st.isolated);
	c->putback = atomic_long_read(&zs->st.putback);
	c->isolated_freed = atomic_long_read(&zs->st.isolated_freed);
	c->auto_runs = zs->st.auto_runs;
	c->auto_freed = zs->st.auto_freed;
	c->auto_delayed = atomic_long_read(&zs->st.auto_delayed);
	c->passes = zs->st.passes;
	c->moved = zs->st.moved;
	c->moved_bytes = zs->st.moved_bytes;
	c->moved_hole = zs->st.moved_hole;
	c->moved_new = zs->st.moved_new;
	c->deferred_frees = zs->st.deferred_frees;
	c->walked = zs->st.walked;
	c->looked = zs->st.looked;
	c->hole_reused = zs->st.hole_reused;
	c->rest_joined = zs->st.rest_joined;
	c->donated = zs->st.donated;
	c->hole_recorded = zs->hole_rec_bytes;
	c->pending = zs->pend_nr;
	c->runs = zs->st.runs;
	c->chains = zs->st.chains;
	c->blocks = atomic_long_read(&zs->st.blocks);
	c->rfreed = zs->st.rfrees;
	c->rfree_waiting = max(atomic_read(&zs->rfree_nr), 0);
	c->top_dirs = afm_zt_top(&zs->htab)->size;
	c->tops_later = zs->st.tops_later;
	c->migrate_yields = zs->st.migrate_yields;
	c->migrate_waiting = max(atomic_read(&zs->migrate_wait), 0);
}

/* Add @src to @dst, field by field (all unsigned long). */
static void afm_zs_add_counters(struct afm_zs_counters *dst,
				const struct afm_zs_counters *src)
{
	unsigned long *d = (unsigned long *)dst;
	const unsigned long *v = (const unsigned long *)src;
	unsigned int i;

	BUILD_BUG_ON(sizeof(*dst) % sizeof(unsigned long));
	for (i = 0; i < sizeof(*dst) / sizeof(unsigned long); i++)
		d[i] += v[i];
}

/**
 * afm_zs_get_counters() - snapshot of the store's counters (KUnit hook)
 * @pool: a zspage-store pool
 * @c: filled in: the sums over its shards
 *
 * Context: process context; takes each shard's pool lock.
 * Return: nothing.
 */
void afm_zs_get_counters(struct afm_pool *pool, struct afm_zs_counters *c)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_counters one;
	unsigned int i;

	unsigned long top = 0;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < afm_zs_created(set); i++) {
		afm_zs_lock(set->shard[i]);
		afm_zs_read_counters(set->shard[i], &one);
		afm_zs_unlock(set->shard[i]);
		afm_zs_add_counters(c, &one);
		top = max(top, one.top_dirs);
	}
	c->top_dirs = top;
	c->shards_active = READ_ONCE(set->active);
	c->shards_created = afm_zs_created(set);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_get_counters);

/*
 * Free slots of the table page at @base (its free chain from ->index,
 * 1-based, through the slots' links), or ULONG_MAX when the chain is
 * longer than the page's free slots, names a slot beyond the page, or
 * holds slot @find (below @t->per_page; otherwise none is looked for).
 */
static unsigned long afm_zs_audit_chain_free(const struct afm_zs_table *t,
					     const void *base,
					     unsigned long find)
{
	const struct page *tp = virt_to_page(base);
	unsigned long next = tp->index, n = 0;

	while (next) {
		if (next > t->per_page || next - 1 == find ||
		    ++n > t->per_page - page_private(tp))
			return ULONG_MAX;
		next = afm_zt_link_get(base + (next - 1) * t->slot_size);
	}
	return n;
}

/*
 * Table pages of table @t, counted from its directories; its directory
 * blocks are added to *@dirs. Counts in *@bad a directory whose counts of
 * present and open table pages are wrong, or whose block its directory
 * page does not mark in use; a table page whose slots in use and free
 * chain do not add up to its slots, or whose OPEN bit disagrees with its
 * free slots; a table whose pages' slots in use are not its used and
 * magazine slots; a magazine slot twice, in no table page or in its
 * page's free chain; a table page below @t->hint that is open or missing
 * (afm_zt_find_page() would never take it); and a table whose count of
 * blocks is wrong. Pool lock held.
 */
static unsigned long afm_zs_audit_table(const struct afm_zs_table *t,
					unsigned long *dirs, unsigned int *bad)
{
	const struct afm_zt_top *top = afm_zt_top(t);
	unsigned long i, j, d, pg, pages = 0, n, open, blocks = 0, used = 0;

	for (i = 0; i < top->size; i++) {
		const struct afm_zt_dent *de = &top->dir[i];
		const unsigned long *dir = de->dir;

		if (!dir)
			continue;
		for (n = 0, open = 0, d = 0; d < 1UL << t->dshift; d++) {
			const void *base = (void *)(dir[d] & ~AFM_ZT_OPEN);
			unsigned long free;
			bool is_open;

			n += !!dir[d];
			open += dir[d] & AFM_ZT_OPEN;
			if (!base)
				continue;
			free = afm_zs_audit_chain_free(t, base, ULONG_MAX);
			is_open = free >= t->open_free;
			if (free == ULONG_MAX ||
			    free + page_private(virt_to_page(base)) !=
			    t->per_page ||
			    !!(dir[d] & AFM_ZT_OPEN) != is_open)
				(*bad)++;
			used += page_private(virt_to_page(base));
		}
		if (n != de->pages || open != de->open || !n ||
		    !(page_private(virt_to_page(dir)) &
		      BIT(offset_in_page(dir) / AFM_ZT_DIR_BYTES)))
			(*bad)++;
		pages += n;
		blocks++;
	}
	if (blocks != t->dirs || used != t->used + t->mag_nr)
		(*bad)++;
	for (pg = 0; pg < t->hint; pg++) {
		const struct afm_zt_dent *de;
		unsigned long ent;

		if (afm_zt_d(t, pg) >= top->size) {
			(*bad)++;
			break;
		}
		de = &top->dir[afm_zt_d(t, pg)];
		ent = de->dir ? de->dir[afm_zt_di(t, pg)] : 0;
		if (!ent || (ent & AFM_ZT_OPEN)) {
			(*bad)++;
			break;
		}
	}
	for (i = 0; i < t->mag_nr; i++) {
		const void *base = afm_zt_page(t, t->mag[i] >> t->pshift);

		for (j = 0; j < i; j++)
			if (t->mag[j] == t->mag[i])
				(*bad)++;
		if (!base ||
		    afm_zs_audit_chain_free(t, base, t->mag[i] &
					    (t->per_page - 1)) == ULONG_MAX)
			(*bad)++;
	}
	*dirs += blocks;
	return pages;
}

/*
 * Directory pages of @zs, pool lock held: their blocks in use are the
 * tables' (@dirs of them), none is empty, none both in use and cooling
 * down, and those with a block not in use come first. Counts what is wrong
 * in *@bad. Return: their number.
 */
static unsigned long afm_zs_audit_dirs(struct afm_zs_pool *zs,
				       unsigned long dirs, unsigned int *bad)
{
	unsigned long pages = 0, blocks = 0, used, cool;
	bool full = false;
	struct page *page;

	list_for_each_entry(page, &zs->dpages, lru) {
		used = page_private(page) & AFM_ZT_DIRS_FULL;
		cool = page_private(page) >> AFM_ZT_DIRS_COOL_SHIFT;
		if (!used || (full && used != AFM_ZT_DIRS_FULL) ||
		    (used & cool) || (cool & ~AFM_ZT_DIRS_FULL))
			(*bad)++;
		full = used == AFM_ZT_DIRS_FULL;
		blocks += hweight_long(used);
		pages++;
	}
	if (blocks != dirs || pages != zs->dir_pages)
		(*bad)++;
	return pages;
}

/*
 * Zspage @z, pool lock held: its page chain has afm_zs_npages() pages, each
 * pointing back to it, and in a run each is the page afm_zs_page() finds
 * by PFN and, reached in place, at its place after afm_zs_lin(). Return: 0
 * if so, else 1.
 */
static unsigned int afm_zs_audit_chain(struct afm_zspage *z)
{
	struct page *page;
	unsigned int n = 0, bad = 0;
	u8 *lin;

	lockdep_assert_held(&afm_zs_desc_pool(z)->lock);
	lin = afm_zs_lin(z);
	for (page = READ_ONCE(z->first); page && n <= afm_zs_npages(z);
	     page = (struct page *)READ_ONCE(page->index)) {
		if (page_private(page) != (unsigned long)z)
			bad = 1;
		if (n < afm_zs_npages(z) && afm_zs_page(z, n) != page)
			bad = 1;
		if (lin && page_address(page) != lin + n * PAGE_SIZE)
			bad = 1;
		n++;
	}
	return bad || n != afm_zs_npages(z);
}

/* The footer of the hole of @len bytes at @off of @z. */
static u32 afm_zs_foot(struct afm_zs_pool *zs, struct afm_zspage *z,
		       unsigned int off, unsigned int len)
{
	struct afm_zs_cur c;

	afm_zs_cur_begin(&c, zs, z);
	return afm_zs_cfoot_read(&c, off + len);
}

/*
 * Live zspage @z, pool lock held: its extents tile [0, fill offset), those
 * a live entry points to (afm_zs_owner()) are its objects (with less slack
 * than a hole on the index would need), and @z->linked of the others are
 * on the hole index, each with its footer, and merged with an indexed hole
 * just before it unless the two are too long for one extent. Return: 0 if
 * so, else 1.
 */
static unsigned int afm_zs_audit_extents(struct afm_zs_pool *zs,
					 struct afm_zspage *z)
{
	unsigned int off = 0, len, objs = 0, linked = 0, plen = 0, pad = 0;
	struct afm_zs_hrec *rec;
	unsigned long idx;
	u32 r1 = 0;
	s64 e;

	/* One page, one object at 0 with no header, the rest its padding. */
	if (z->solo)
		return z->order || z->objs != 1 || z->linked ||
		       z->tail != afm_zs_end(z) || z->hlist_nr ||
		       z->bucket != AFM_ZS_NO_BUCKET ||
		       z->live + z->pad != z->tail;
	while (off < z->tail) {
		len = afm_zs_hdr_read(zs, z, off, &idx, &r1);
		if (len < AFM_ZS_HDR || off + len > z->tail)
			return 1;
		if (idx == AFM_ZS_LINKED) {
			/* Its record and its footer name it back. */
			rec = r1 ? afm_zs_rec(zs, r1) : NULL;
			if (len < AFM_ZS_HOLE_MIN || !rec || rec->id != z->id ||
			    rec->off != off || rec->len != len ||
			    afm_zs_foot(zs, z, off, len) != r1 ||
			    (plen && plen + len <= AFM_ZS_MAX_EXT))
				return 1;
			linked++;
			plen = len;
			off += len;
			continue;
		} else if (afm_zs_owner(zs, z, off, idx, &e, NULL)) {
			if (len < afm_zs_ext(zs, afm_ze_size(e)) ||
			    len >= afm_zs_ext(zs, afm_ze_size(e)) +
				   AFM_ZS_HOLE_MIN)
				return 1;
			objs++;
			pad += afm_zs_pad(zs, afm_ze_size(e));
		}
		plen = 0;
		off += len;
	}
	return objs != z->objs || linked != z->linked || pad != z->pad;
}

/*
 * The hole index, pool lock held: every record on it is an indexed hole of
 * a live zspage (a victim's too, see afm_zs_pool.hole_heads) in the class
 * of its length whose header names the record, the lists are consistent
 * both ways, and the counts add up (@linked: the zspages' indexed holes;
 * the hole table holds no other record). Return: inconsistencies found.
 */
static unsigned int afm_zs_audit_index(struct afm_zs_pool *zs,
				       unsigned long linked)
{
	unsigned long nr = 0, bytes = 0, idx;
	unsigned int c, bad = 0, len;
	u32 r1, back, hr1;

	for (c = 0; c < AFM_ZS_NR_HCLASSES; c++) {
		if (!zs->hole_heads[c] != !test_bit(c, zs->hole_map))
			bad++;
		back = 0;
		for (r1 = zs->hole_heads[c]; r1 && nr <= zs->hole_nr;
		     r1 = afm_zs_rec(zs, r1)->next) {
			struct afm_zs_hrec *rec = afm_zs_rec(zs, r1);
			struct afm_zspage *z = rec ? afm_zs_desc(zs, rec->id) : NULL;

			nr++;
			if (!z || (z->flags & ~AFM_ZS_VICTIM) != AFM_ZS_USED ||
			    rec->off + AFM_ZS_HOLE_MIN > z->tail) {
				bad++;
				break;
			}
			hr1 = 0;
			len = afm_zs_hdr_read(zs, z, rec->off, &idx, &hr1);
			if (idx != AFM_ZS_LINKED || hr1 != r1 || len != rec->len ||
			    afm_zs_hole_class(len) != c ||
			    rec->off + len > z->tail || rec->prev != back)
				bad++;
			bytes += len;
			back = r1;
		}
	}
	return bad + (nr != zs->hole_nr || nr != linked ||
		      nr != zs->rtab.used || bytes != zs->hole_rec_bytes);
}

static unsigned int afm_zs_shard_audit(struct afm_zs_pool *zs,
				       struct afm_zs_counters *c,
				       struct afm_zs_counters *rc);

/*
 * The queued extents of deferred frees, pool lock held: each in a live
 * zspage with objects (no victim), below its fill offset, queued once, no
 * indexed hole and no live object's extent (its stale header names a
 * handle no longer there). Return: inconsistencies found.
 */
static unsigned int afm_zs_audit_pend(struct afm_zs_pool *zs)
{
	unsigned int i, j, len, bad = 0;
	struct afm_zs_pend *p;
	unsigned long idx;
	s64 e;

	for (i = 0; i < zs->pend_nr; i++) {
		p = &zs->pend[i];
		if (p->z->flags != AFM_ZS_USED || !p->z->objs ||
		    p->off + AFM_ZS_HDR >= p->z->tail) {
			bad++;
			continue;
		}
		len = afm_zs_hdr_read(zs, p->z, p->off, &idx, NULL);
		if (len <= AFM_ZS_HDR || p->off + len > p->z->tail ||
		    idx == AFM_ZS_LINKED ||
		    afm_zs_owner(zs, p->z, p->off, idx, &e, NULL))
			bad++;
		for (j = 0; j < i; j++)
			bad += zs->pend[j].z == p->z && zs->pend[j].off == p->off;
	}
	return bad;
}

/*
 * The pool's count of pages (&afm_zs_set.pages) against the sum of its
 * shards', read again while they differ (a worker may be between the two
 * counts of a page it frees), up to 100 times. Return: 1 if they never
 * agreed, else 0.
 */
static unsigned int afm_zs_audit_set_pages(struct afm_zs_set *set)
{
	long pages, sum;
	unsigned int i, tries;

	for (tries = 0; tries < 100; tries++) {
		pages = atomic_long_read(&set->pages);
		for (sum = 0, i = 0; i < afm_zs_created(set); i++)
			sum += atomic_long_read(&set->shard[i]->total_pages);
		if (pages == sum)
			return 0;
		cond_resched();
	}
	return 1;
}

/**
 * afm_zs_test_audit() - counters against a recount (KUnit hook)
 * @pool: a zspage-store pool
 * @c: filled with the counters, as afm_zs_get_counters()
 * @rc: filled with what the tables say, in the same hold of the pool lock:
 *	objects and live bytes from the live handle entries; zspages, dead
 *	zspages, hole and tail bytes from the descriptors; data pages from
 *	the descriptors in use, dead or not; table, descriptor and hole
 *	table pages from the directories; directory pages from the shard's
 *	list of them; @rc->total_pages their sum. Event counters are 0.
 *
 * Also checks what no counter shows: the descriptors' live bytes and
 * objects add up to the entries', the table's count of used entries
 * matches, every live entry lies below the fill offset of a live zspage
 * and its header names its handle and extent length, every live zspage's
 * extents tile it up to its fill offset with one object extent per live
 * object (a solo zspage instead: one page, one object at offset 0 with no
 * header, no hole, no tail), it is on the hole list its holes call for
 * (and the shrinker's count, &afm_zs_pool.hlist_units, is the lists') and
 * has a chain of afm_zs_npages() pages pointing back to it, directories
 * count their table pages (afm_zs_audit_table()), directory pages their
 * blocks, the hole index is consistent (afm_zs_audit_index()), and the
 * pool's count of pages is its shards' (afm_zs_audit_set_pages()).
 * Deferred frees are checked (afm_zs_audit_pend()) and then merged, so
 * that @c and the rest describe the pool with none pending.
 *
 * Every shard is audited on its own, in one hold of its lock; @c and @rc
 * are the sums over the shards. No compaction pass runs in a shard while
 * it is audited (the audit holds its &afm_zs_pool.compact_lock): a move
 * copies without the pool lock, its object counted at its destination and
 * its entry not yet pointing there.
 *
 * Context: process context; takes the pool's compact_lock, and each
 * shard's compact_lock and pool lock for its walk.
 * Return: the number of inconsistencies found (0 when all is well).
 */
unsigned int afm_zs_test_audit(struct afm_pool *pool,
			       struct afm_zs_counters *c,
			       struct afm_zs_counters *rc)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_counters one, rone;
	unsigned int i, bad = 0;

	memset(c, 0, sizeof(*c));
	memset(rc, 0, sizeof(*rc));
	mutex_lock(&pool->compact_lock);
	for (i = 0; i < afm_zs_created(set); i++) {
		struct afm_zs_pool *zs = set->shard[i];

		mutex_lock(&zs->compact_lock);
		bad += afm_zs_shard_audit(zs, &one, &rone);
		mutex_unlock(&zs->compact_lock);
		afm_zs_add_counters(c, &one);
		afm_zs_add_counters(rc, &rone);
	}
	mutex_unlock(&pool->compact_lock);
	bad += afm_zs_audit_set_pages(set);
	return bad;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_audit);

/* afm_zs_test_audit() of shard @zs. */
static unsigned int afm_zs_shard_audit(struct afm_zs_pool *zs,
				       struct afm_zs_counters *c,
				       struct afm_zs_counters *rc)
{
	unsigned long pg, i, objs = 0, live = 0, linked = 0, idx, dirs = 0;
	unsigned long units = 0, listed = 0;
	unsigned int bad = 0, len;

	memset(rc, 0, sizeof(*rc));
	afm_zs_lock(zs);
	/* The index and the hole lists as if no free had been deferred. */
	bad += afm_zs_audit_pend(zs);
	afm_zs_pend_flush(zs);
	afm_zs_read_counters(zs, c);
	for (pg = 0; pg < zs->dtab.end; pg++) {
		struct afm_zspage *base = afm_zt_page(&zs->dtab, pg);

		for (i = 0; base && i < AFM_ZD_PER_PAGE; i++) {
			struct afm_zspage *z = &base[i];

			if (!(z->flags & AFM_ZS_USED))
				continue;
			if (z->order > AFM_ZS_ORDER)
				bad++;
			rc->data_pages += afm_zs_npages(z);
			if (z->flags & AFM_ZS_DEAD) {
				rc->dead_zspages++;
				continue;
			}
			rc->zspages++;
			if (z->id != pg * AFM_ZD_PER_PAGE + i ||
			    z->tail > afm_zs_end(z) ||
			    z->live + (z->objs - z->solo) * AFM_ZS_HDR +
			    z->pad > z->tail)
				bad++;
			if (z->hlist_nr != (z->flags == AFM_ZS_USED && z->objs ?
					    min(afm_zs_zholes(z) / AFM_ZS_MIN_HOLES,
						AFM_ZS_NR_HLISTS - 1) : 0))
				bad++;
			units += z->hlist_nr;
			bad += afm_zs_audit_extents(zs, z);
			linked += z->linked;
			rc->solo_objs += z->solo;
			rc->tail_bytes += afm_zs_end(z) - z->tail;
			rc->hole_bytes += afm_zs_zholes(z);
			live += z->live;
			objs += z->objs;
			bad += afm_zs_audit_chain(z);
		}
	}
	for (pg = 0; pg < zs->htab.end; pg++) {
		atomic64_t *base = afm_zt_page(&zs->htab, pg);

		for (i = 0; base && i < AFM_ZH_PER_PAGE; i++) {
			u64 e = atomic64_read(&base[i]);
			struct afm_zspage *z;

			if (!(e & AFM_ZE_LIVE))
				continue;
			rc->objects++;
			rc->live_bytes += afm_ze_size(e);
			z = afm_zs_desc(zs, afm_ze_id(e));
			if (z && z->solo && z->flags == AFM_ZS_USED) {
				/* No header: its data at 0, its size. */
				if (afm_ze_off(e) || afm_ze_size(e) != z->live)
					bad++;
				continue;
			}
			if (!z || (z->flags & ~AFM_ZS_VICTIM) != AFM_ZS_USED ||
			    afm_ze_off(e) < AFM_ZS_HDR ||
			    afm_ze_off(e) + afm_ze_size(e) > z->tail) {
				bad++;
				continue;
			}
			/* The header names the handle and the extent. */
			len = afm_zs_hdr_read(zs, z, afm_ze_off(e) - AFM_ZS_HDR,
					      &idx, NULL);
			if (len < afm_ze_size(e) + AFM_ZS_HDR ||
			    idx != ((pg * AFM_ZH_PER_PAGE + i + 1) &
				    (BIT_ULL(zs->idx_bits) - 1)))
				bad++;
		}
	}
	if (objs != rc->objects || live != rc->live_bytes ||
	    zs->htab.used != rc->objects ||
	    zs->dtab.used != rc->zspages + rc->dead_zspages)
		bad++;
	/* The shrinker's count is the hole lists'. */
	for (i = 1; i < AFM_ZS_NR_HLISTS; i++)
		listed += zs->hlist_count[i] * i;
	if (zs->hlist_units != units || listed != units)
		bad++;
	rc->table_pages = afm_zs_audit_table(&zs->htab, &dirs, &bad);
	rc->desc_pages = afm_zs_audit_table(&zs->dtab, &dirs, &bad);
	rc->hole_pages = afm_zs_audit_table(&zs->rtab, &dirs, &bad);
	rc->dir_pages = afm_zs_audit_dirs(zs, dirs, &bad);
	rc->total_pages = rc->data_pages + rc->table_pages + rc->desc_pages +
			  rc->hole_pages + rc->dir_pages;
	bad += afm_zs_audit_index(zs, linked);
	afm_zs_unlock(zs);
	return bad;
}

/**
 * afm_zs_test_quiet() - keep the kernel away from a pool (KUnit hook)
 * @pool: a zspage-store pool
 * @what: AFM_ZS_QUIET_SHRINKER: the pool's shrinker counts nothing and
 *	scans nothing when the kernel calls it (afm_zs_shrinker_count() and
 *	afm_zs_shrinker_scan() still work); AFM_ZS_QUIET_MIGRATION: the
 *	kernel cannot isolate its pages for migration
 *	(afm_zs_test_isolate_page() still can); AFM_ZS_QUIET_RUNS: zspages
 *	made from now on are chains even when their pages are a run (see
 *	struct afm_zspage), for the page-by-page paths; AFM_ZS_QUIET_RFREE:
 *	a free that finds the pool lock held (by one of the pool's workers
 *	on another CPU) waits for it instead of leaving its handle to the
 *	holder, and a free of another shard than its CPU's takes the lock
 *	(afm_zs_test_busy() still leaves it); AFM_ZS_QUIET_AUTO: an
 *	automatic run waits for its work to be flushed
 *	(afm_zs_test_run_auto(), afm_zs_flush_work()) or for the time
 *	afm_zs_test_auto_next() set, however far, and the rest run only
 *	for afm_zs_flush_work(); AFM_ZS_QUIET_RTAB: a free that finds the
 *	hole table's top level too small leaves its growth to the next
 *	malloc, not to the shard's worker; AFM_ZS_QUIET_RWORK: the frees
 *	left to the lock holder wait for the next one (a malloc, a free
 *	that takes the lock, a donor's lock holder, a compaction pass,
 *	afm_zs_test_flush() or the pool's destruction), not for the shard's
 *	worker (which looks again later, so that they are freed once the
 *	bit is cleared); 0: none (the default).
 *
 * For tests that assert exact counts of what compaction, migration or a
 * free did, which the debug guest's drop_caches and compact_memory loops
 * and the pool's own workers would otherwise race with, and for those
 * whose automatic runs must go where the test says, not where a slow host
 * lets the timers fire. Pages the kernel
 * had isolated before stay so.
 *
 * Shards created later take it too.
 *
 * Context: process context; may sleep.
 * Return: nothing.
 */
void afm_zs_test_quiet(struct afm_pool *pool, unsigned int what)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i;

	mutex_lock(&set->grow_lock);
	for (i = 0; i < set->created; i++)
		WRITE_ONCE(set->shard[i]->test_quiet, what);
	mutex_unlock(&set->grow_lock);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_quiet);

/**
 * afm_zs_test_isolate_page() - isolate_page of a zspage page (KUnit hook)
 * @page: a locked page of a zspage
 *
 * What the movable_operations' isolate_page does, also in a pool quiet for
 * migration (afm_zs_test_quiet()). The caller sets PG_isolated, as the
 * migration core does.
 *
 * Context: page lock held.
 * Return: true if isolated; false without CONFIG_COMPACTION or when the
 * page is not (or no longer) a page of a live zspage.
 */
bool afm_zs_test_isolate_page(struct page *page)
{
#ifdef CONFIG_COMPACTION
	return afm_zs_isolate(page, false);
#else
	return false;
#endif
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_isolate_page);

/**
 * afm_zs_obj_info() - location of an object (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 * @info: filled in
 *
 * Context: process context; takes the shard's pool lock.
 * Return: 0, or -ENOENT if @handle is not a live object.
 */
int afm_zs_obj_info(struct afm_pool *pool, unsigned long handle,
		    struct afm_zs_obj_info *info)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	struct afm_zspage *z;
	atomic64_t *ent;
	int ret = -ENOENT;
	u64 e;

	afm_zs_lock(zs);
	ent = afm_zs_entry(zs, handle);
	e = ent ? atomic64_read(ent) : 0;
	if (e & AFM_ZE_LIVE) {
		z = afm_zs_desc(zs, afm_ze_id(e));
		info->shard = zs->nr;
		info->zspage_id = (unsigned long)afm_ze_id(e) << set->shift | zs->nr;
		info->offset = afm_ze_off(e);
		info->size = afm_ze_size(e);
		info->pins = (e & AFM_ZE_PINS) >> AFM_ZE_PIN_SHIFT;
		/* The pool lock keeps the chain and the run stable. */
		info->page = afm_zs_page(z, info->offset >> PAGE_SHIFT);
		info->in_place = afm_zs_lin(z);
		ret = 0;
	}
	afm_zs_unlock(zs);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_obj_info);

static unsigned int afm_zs_shard_bad_holes(struct afm_zs_pool *zs,
					   unsigned int *nr);

/**
 * afm_zs_test_bad_holes() - check the hole index (KUnit hook)
 * @pool: a zspage-store pool
 * @nr: set to the number of holes on the index
 *
 * For use outside compaction passes (no zspage is a victim).
 *
 * Context: takes the pool lock.
 * Return: the number of holes on the index that are not free bytes of a
 * live zspage below its fill offset, with an indexed-hole header, in the
 * class of their length and linked back to the hole before them, plus 1
 * if the counts of the index are off, plus the number of victims (0 when
 * all is well).
 */
unsigned int afm_zs_test_bad_holes(struct afm_pool *pool, unsigned int *nr)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i, bad = 0, one;

	*nr = 0;
	for (i = 0; i < afm_zs_created(set); i++) {
		bad += afm_zs_shard_bad_holes(set->shard[i], &one);
		*nr += one;
	}
	return bad;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_bad_holes);

/* afm_zs_test_bad_holes() of shard @zs. */
static unsigned int afm_zs_shard_bad_holes(struct afm_zs_pool *zs,
					   unsigned int *nr)
{
	unsigned long pg, i, linked = 0;
	unsigned int bad = 0;

	afm_zs_lock(zs);
	afm_zs_pend_flush(zs);
	for (pg = 0; pg < zs->dtab.end; pg++) {
		struct afm_zspage *base = afm_zt_page(&zs->dtab, pg);

		for (i = 0; base && i < AFM_ZD_PER_PAGE; i++) {
			bad += !!(base[i].flags & AFM_ZS_VICTIM);
			if (base[i].flags == AFM_ZS_USED)
				linked += base[i].linked;
		}
	}
	bad += afm_zs_audit_index(zs, linked);
	*nr = zs->hole_nr;
	afm_zs_unlock(zs);
	return bad;
}

/**
 * afm_zs_test_flush() - merge the deferred frees now (KUnit hook)
 * @pool: a zspage-store pool
 *
 * For tests that look at the hole index right after a free: a free only
 * queues its extent (see "Deferred frees" in zspage_alloc.c). Frees left
 * to the lock holder are freed first.
 *
 * Context: takes each shard's pool lock.
 * Return: the number of extents merged.
 */
unsigned int afm_zs_test_flush(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i, n = 0;

	for (i = 0; i < afm_zs_created(set); i++) {
		afm_zs_lock(set->shard[i]);
		afm_zs_rfree_drain(set->shard[i]);
		n += set->shard[i]->pend_nr;
		afm_zs_pend_flush(set->shard[i]);
		afm_zs_unlock(set->shard[i]);
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_flush);

/**
 * afm_zs_test_pend_max() - deferred frees a shard queues (KUnit hook)
 *
 * Context: any.
 * Return: AFM_ZS_PEND: the free after that many merges the batch.
 */
unsigned int afm_zs_test_pend_max(void)
{
	return AFM_ZS_PEND;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_pend_max);

/**
 * afm_zs_test_auto_next() - move the next automatic run (KUnit hook)
 * @pool: a zspage-store pool
 * @delta: jiffies from now before which no automatic run of any shard
 *	starts (negative: none held back)
 *
 * Shards created later take the same time.
 *
 * Context: process context, may sleep; the next run of a shard sets its
 * own (AFM_ZS_AUTO_GAP).
 * Return: nothing.
 */
void afm_zs_test_auto_next(struct afm_pool *pool, long delta)
{
	struct afm_zs_set *set = pool->store;
	unsigned long at = jiffies + delta;
	unsigned int i;

	mutex_lock(&set->grow_lock);
	for (i = 0; i < set->created; i++)
		WRITE_ONCE(set->shard[i]->auto_next, at);
	mutex_unlock(&set->grow_lock);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_auto_next);

/**
 * afm_zs_test_rfree_max() - frees a shard leaves to its lock holder (KUnit
 * hook)
 *
 * Context: any.
 * Return: AFM_ZS_RFREE: with that many waiting, a free that finds the lock
 * held waits for it.
 */
unsigned int afm_zs_test_rfree_max(void)
{
	return AFM_ZS_RFREE;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_rfree_max);

/**
 * afm_zs_test_rfree_irqs_off() - of the frees left to the lock holder,
 * those a free with hardirqs off takes besides its own (KUnit hook)
 *
 * Context: any.
 * Return: AFM_ZS_RFREE_IRQS_OFF.
 */
unsigned int afm_zs_test_rfree_irqs_off(void)
{
	return AFM_ZS_RFREE_IRQS_OFF;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_rfree_irqs_off);

/**
 * afm_zs_test_rfree_remote_max() - frees of another CPU's shard left to its
 * lock holder without trying the lock (KUnit hook)
 *
 * Context: any.
 * Return: AFM_ZS_RFREE_REMOTE: with that many waiting, such a free takes
 * the lock (and frees them).
 */
unsigned int afm_zs_test_rfree_remote_max(void)
{
	return AFM_ZS_RFREE_REMOTE;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_rfree_remote_max);

/**
 * afm_zs_test_top_ahead() - the smallest top level of a slot table that
 * is grown ahead of need (KUnit hook)
 *
 * Context: any.
 * Return: AFM_ZT_AHEAD_DIRS: a top level of that many directories or more
 * is grown by the shard's worker once a quarter of it is left.
 */
unsigned int afm_zs_test_top_ahead(void)
{
	return AFM_ZT_AHEAD_DIRS;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_top_ahead);

/**
 * afm_zs_test_pin() - pin an object as a mapping would (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Takes the entry pin only (not the zspage gate), so the caller may sleep
 * while compaction runs.
 *
 * Context: task context; does not sleep.
 * Return: true if pinned.
 */
bool afm_zs_test_pin(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	atomic64_t *ent = afm_zs_entry(zs, handle);
	u64 e;

	return ent && afm_ze_pin(ent, &e);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_pin);

/**
 * afm_zs_test_unpin() - drop a pin of afm_zs_test_pin() (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Context: after afm_zs_test_pin() of the same object.
 * Return: nothing.
 */
void afm_zs_test_unpin(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);

	afm_ze_unpin(afm_zs_entry(zs, handle));
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_unpin);

/**
 * afm_zs_test_free_in_lookup() - free an object between a lockless lookup
 * of its entry and the read of it (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object: the last one whose entry lies in its table page
 * @size: size of an object to allocate after the free, without sleeping,
 *	or 0 for none
 * @seen: what the lookup reads after the free (and the allocation)
 *
 * Looks the entry up as a mapping does (afm_zs_get(): an RCU read-side
 * section), keeping the directory block it went through, frees the object,
 * which gives its table page back (and the directory block, if it was the
 * page's last), allocates one of @size, and reads the entry and the
 * directory block again in the same section: a map of a stale handle
 * racing with the free of the last live entry of its table page and with
 * an allocation that needs a directory block.
 *
 * Context: task context; takes the shard's lock.
 * Return: true if the lookup found the entry.
 */
bool afm_zs_test_free_in_lookup(struct afm_pool *pool, unsigned long handle,
				size_t size, struct afm_zs_test_stale *seen)
{
	unsigned long h = handle, pg;
	struct afm_zs_pool *zs = afm_zs_of(pool, &h);
	struct afm_zs_table *t = &zs->htab;
	unsigned long *dir;
	atomic64_t *ent;

	memset(seen, 0, sizeof(*seen));
	pg = (h - 1) / AFM_ZH_PER_PAGE;
	rcu_read_lock();
	dir = afm_zt_dir(t, afm_zt_d(t, pg));
	ent = afm_zs_entry(zs, h);
	if (dir && ent) {
		afm_zs_free(pool, handle);
		if (size)
			seen->handle = afm_malloc(pool, size,
						  GFP_NOWAIT | __GFP_NOWARN);
		seen->live = atomic64_read(ent) & AFM_ZE_LIVE;
		seen->page_held = page_ref_count(virt_to_page(ent)) > 0;
		seen->dir_set = READ_ONCE(dir[afm_zt_di(t, pg)]);
	}
	rcu_read_unlock();
	if (IS_ERR_VALUE(seen->handle))
		seen->handle = 0;
	return dir && ent;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_free_in_lookup);

/**
 * afm_zs_test_hold_zspage() - enter an object's zspage (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Pins the object and takes its zspage's gate shared, as a mapping does:
 * returns with preemption disabled.
 *
 * Context: task context; on success returns with preemption disabled until
 * afm_zs_test_release_zspage().
 * Return: true on success.
 */
bool afm_zs_test_hold_zspage(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	atomic64_t *ent;
	u64 e;

	return afm_zs_get(zs, handle, &ent, &e);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_hold_zspage);

/**
 * afm_zs_test_release_zspage() - undo afm_zs_test_hold_zspage() (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Context: after a successful afm_zs_test_hold_zspage() of the same object,
 * on the same CPU; re-enables preemption.
 * Return: nothing.
 */
void afm_zs_test_release_zspage(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	atomic64_t *ent = afm_zs_entry(zs, handle);

	afm_zs_put(afm_zs_desc(zs, afm_ze_id(atomic64_read(ent))), ent);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_release_zspage);

/**
 * afm_zs_test_lock_shard() - hold the pool lock of an object's shard (KUnit
 * hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * As a malloc or free in progress holds it.
 *
 * Context: process context; returns with the lock held: nothing that
 * sleeps until afm_zs_test_unlock_shard().
 * Return: nothing.
 */
void afm_zs_test_lock_shard(struct afm_pool *pool, unsigned long handle)
{
	afm_zs_lock(afm_zs_of(pool, &handle));
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_lock_shard);

/**
 * afm_zs_test_shard_free() - whether a shard's pool lock can be taken now
 * (KUnit hook)
 * @pool: a zspage-store pool
 * @shard: the shard number (struct afm_zs_obj_info's @shard)
 *
 * Takes the lock with a trylock and lets go of it at once. On a
 * uniprocessor kernel the trylock fails only with CONFIG_DEBUG_SPINLOCK.
 *
 * Context: any context but under that lock.
 * Return: true if the lock was free, false if someone holds it or there
 * is no such shard.
 */
bool afm_zs_test_shard_free(struct afm_pool *pool, unsigned int shard)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs;

	if (shard >= afm_zs_created(set))
		return false;
	zs = set->shard[shard];
	if (!spin_trylock(&zs->lock))
		return false;
	afm_zs_unlock(zs);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_shard_free);

/**
 * afm_zs_test_compact_hold() - hold a shard's compaction lock, as a pass
 * in progress does (KUnit hook)
 * @pool: a zspage-store pool
 * @shard: the shard number (struct afm_zs_obj_info's @shard)
 * @hold: true: take it (waiting for a pass that runs); false: let it go
 *
 * Context: process context; the same task takes and lets go.
 * Return: 0, or -EINVAL when there is no such shard.
 */
int afm_zs_test_compact_hold(struct afm_pool *pool, unsigned int shard,
			     bool hold)
{
	struct afm_zs_set *set = pool->store;

	if (shard >= afm_zs_created(set))
		return -EINVAL;
	if (hold)
		mutex_lock(&set->shard[shard]->compact_lock);
	else
		mutex_unlock(&set->shard[shard]->compact_lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_compact_hold);

/* Wait for the compaction passes running in @set's shards to end. */
static void afm_zs_compact_sync(struct afm_zs_set *set)
{
	unsigned int i;

	for (i = 0; i < afm_zs_created(set); i++) {
		mutex_lock(&set->shard[i]->compact_lock);
		mutex_unlock(&set->shard[i]->compact_lock);
	}
}

/**
 * afm_zs_test_move_hook() - call a function from every compaction move
 * whose copy runs without the pool lock (KUnit hook)
 * @pool: a zspage-store pool
 * @fn: called with @arg, the zspage and offset of the object being moved
 *	(as afm_zs_obj_info() gives them) and the zspage it is moving to
 *	(in the same encoding), just before its bytes are copied, with
 *	preemption disabled and the object's entry locked (a free or map of
 *	that object waits for the copy: @fn must not take the pool lock,
 *	which such a free holds while it waits); NULL: no more calls
 * @arg: passed to @fn
 *
 * Context: process context, no compaction running on @pool.
 * Return: nothing.
 */
void afm_zs_test_move_hook(struct afm_pool *pool,
			   void (*fn)(void *arg, unsigned long zspage_id,
				      unsigned int offset,
				      unsigned long dst_id),
			   void *arg)
{
	struct afm_zs_set *set = pool->store;

	/* No pass reads the old pair once this returns, nor half of two. */
	WRITE_ONCE(set->test_moving, NULL);
	afm_zs_compact_sync(set);
	WRITE_ONCE(set->test_moving_arg, arg);
	/* The argument before the function (afm_zs_test_moving()). */
	smp_store_release(&set->test_moving, fn);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_move_hook);

/**
 * afm_zs_test_locked_copies() - have compaction's moves copy under the
 * pool lock (KUnit hook)
 * @pool: a zspage-store pool
 * @on: true: every move copies as it does when a page migration holds one
 *	of its zspages' gates; false: as usual
 *
 * Context: process context, no compaction running on @pool.
 * Return: nothing.
 */
void afm_zs_test_locked_copies(struct afm_pool *pool, bool on)
{
	struct afm_zs_set *set = pool->store;

	WRITE_ONCE(set->test_locked_copies, on);
	afm_zs_compact_sync(set);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_locked_copies);

/*
 * The descriptor of zspage @zspage_id (as afm_zs_obj_info() gives it), or
 * NULL when it names no created shard or no descriptor.
 */
static struct afm_zspage *afm_zs_test_desc(struct afm_pool *pool,
					   unsigned long zspage_id)
{
	struct afm_zs_set *set = pool->store;
	unsigned long nr = zspage_id & ((1UL << set->shift) - 1);

	if (nr >= afm_zs_created(set))
		return NULL;
	return afm_zs_desc(set->shard[nr], zspage_id >> set->shift);
}

/**
 * afm_zs_test_gate_busy() - whether a zspage's gate keeps page migration
 * out now (KUnit hook)
 * @pool: a zspage-store pool
 * @zspage_id: the zspage, as afm_zs_obj_info() or afm_zs_test_move_hook()
 *	give it; it must stay live meanwhile
 *
 * Tries the gate exclusively once, as an asynchronous migration does, and
 * lets go of it at once when that succeeds.
 *
 * Context: any context that may spin; takes no lock but the gate.
 * Return: true if the gate could not be taken.
 */
bool afm_zs_test_gate_busy(struct afm_pool *pool, unsigned long zspage_id)
{
	struct afm_zspage *z = afm_zs_test_desc(pool, zspage_id);

	if (!z || !afm_zg_lock(z))
		return !!z;
	afm_zg_unlock(z);
	return false;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_gate_busy);

/**
 * afm_zs_test_gate_open() - whether a mapping could enter a zspage's gate
 * now without waiting (KUnit hook)
 * @pool: a zspage-store pool
 * @zspage_id: the zspage, as afm_zs_obj_info() gives it; it must stay live
 *	meanwhile
 *
 * Enters the gate shared with afm_zg_tryin() and leaves it at once when
 * that succeeds: a gate held exclusively, or one a migration waits for
 * (afm_zg_shut()), keeps it out, as it keeps out map, read and write.
 *
 * Context: any context that may spin; takes no lock but the gate.
 * Return: true if the gate let it in.
 */
bool afm_zs_test_gate_open(struct afm_pool *pool, unsigned long zspage_id)
{
	struct afm_zspage *z = afm_zs_test_desc(pool, zspage_id);

	if (!z || !afm_zg_tryin(z))
		return false;
	afm_zg_out(z);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_gate_open);

/**
 * afm_zs_test_gate_wait_hook() - call a function when a synchronous page
 * migration starts to wait for the sharers of a zspage's gate or for its
 * shard's pool lock (KUnit hook)
 * @pool: a zspage-store pool
 * @fn: called with @arg, the zspage (as afm_zs_obj_info() gives it) and
 *	what the migration waits for (@lock false: the gate's sharers, new
 *	ones kept out; true: the pool lock, the gate held exclusively) once
 *	per wait, from the migration, with preemption disabled (a map of
 *	that zspage would spin until the migration is done: @fn must not
 *	map it); NULL: no more calls
 * @arg: passed to @fn
 *
 * Context: process context, no page migration running on @pool.
 * Return: nothing.
 */
void afm_zs_test_gate_wait_hook(struct afm_pool *pool,
				void (*fn)(void *arg, unsigned long zspage_id,
					   bool lock),
				void *arg)
{
	struct afm_zs_set *set = pool->store;

	WRITE_ONCE(set->test_gate_wait, NULL);
	WRITE_ONCE(set->test_gate_wait_arg, arg);
	/* The argument before the function (afm_zs_test_migrate_waits()). */
	smp_store_release(&set->test_gate_wait, fn);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_gate_wait_hook);

atomic64_t *afm_zs_test_spun;

/**
 * afm_zs_test_pin_spun() - whether a map, read or write spun on an object's
 * entry while compaction moved it (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Pins note the last entry they found LOCK set in; this takes the note
 * back if it names @handle's entry.
 *
 * Context: any context.
 * Return: true if the last pin that spun on LOCK spun on @handle's entry
 * (the note is then cleared).
 */
bool afm_zs_test_pin_spun(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	atomic64_t *ent = afm_zs_entry(zs, handle);

	return ent && cmpxchg(&afm_zs_test_spun, ent, NULL) == ent;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_pin_spun);

/**
 * afm_zs_test_unlock_shard() - undo afm_zs_test_lock_shard() (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Context: after afm_zs_test_lock_shard() of the same handle's shard.
 * Return: nothing.
 */
void afm_zs_test_unlock_shard(struct afm_pool *pool, unsigned long handle)
{
	afm_zs_unlock(afm_zs_of(pool, &handle));
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_unlock_shard);

/**
 * afm_zs_test_get_page() - a referenced page of an object (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Context: process context; takes the shard's pool lock.
 * Return: the page holding the object's first byte with a reference taken
 * (put_page() it), or NULL if @handle is not a live object.
 */
struct page *afm_zs_test_get_page(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = afm_zs_of(pool, &handle);
	struct page *page = NULL;
	struct afm_zspage *z;
	atomic64_t *ent;
	u64 e;

	afm_zs_lock(zs);
	ent = afm_zs_entry(zs, handle);
	e = ent ? atomic64_read(ent) : 0;
	if (e & AFM_ZE_LIVE) {
		z = afm_zs_desc(zs, afm_ze_id(e));
		page = afm_zs_page(z, afm_ze_off(e) >> PAGE_SHIFT);
		get_page(page);
	}
	afm_zs_unlock(zs);
	return page;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_get_page);

static void afm_zs_shard_flush_work(struct afm_zs_pool *zs);

/**
 * afm_zs_flush_work() - wait for queued automatic compaction and deferred
 *	frees (KUnit hook)
 * @pool: a zspage-store pool
 *
 * A pending late run is run at once, as if the pool were at rest.
 *
 * Context: process context, may sleep.
 * Return: nothing.
 */
void afm_zs_flush_work(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i;

	for (i = 0; i < afm_zs_created(set); i++)
		afm_zs_shard_flush_work(set->shard[i]);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_flush_work);

/**
 * afm_zs_test_run_auto() - run the automatic compaction queued now, and
 *	hold the next one back (KUnit hook)
 * @pool: a zspage-store pool
 *
 * Runs each shard's queued automatic run (none if nothing queued one), not
 * the rest run, then the frees of zspages left to the free worker (a page
 * of theirs was locked by someone else, e.g. the kernel's compaction, when
 * they emptied), and then holds later runs back for a minute, so that only
 * the caller decides when the queued run goes: the state a run finds, and
 * the pages the pool holds after it, do not depend on the host's speed.
 *
 * Context: process context, may sleep.
 * Return: nothing.
 */
void afm_zs_test_run_auto(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i;

	for (i = 0; i < afm_zs_created(set); i++) {
		flush_delayed_work(&set->shard[i]->compact_work);
		flush_work(&set->shard[i]->free_work);
	}
	afm_zs_test_auto_next(pool, 60 * HZ);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_run_auto);

/* afm_zs_flush_work() of shard @zs. */
static void afm_zs_shard_flush_work(struct afm_zs_pool *zs)
{
	int i;

	WRITE_ONCE(zs->late_force, true);
	/*
	 * Each of these may queue the others (a free queues compaction, a
	 * compaction pass queues deferred frees): repeat until none is
	 * pending, a bounded number of times.
	 */
	for (i = 0; i < 8; i++) {
		/* Frees left waiting: now. */
		flush_delayed_work(&zs->rfree_work);
		flush_delayed_work(&zs->compact_work);
		/* A late run pending: run it now. */
		flush_delayed_work(&zs->late_work);
		flush_work(&zs->free_work);
		flush_work(&zs->top_work);
		if (!delayed_work_pending(&zs->compact_work) &&
		    !delayed_work_pending(&zs->late_work) &&
		    !work_pending(&zs->free_work))
			break;
	}
	WRITE_ONCE(zs->late_force, false);
}

/**
 * afm_zs_shrinker_count() - the shrinker's count_objects (KUnit hook)
 * @pool: a zspage-store pool
 *
 * Context: takes the pool lock.
 * Return: what count_objects returns, also in a pool quiet for the
 * shrinker (afm_zs_test_quiet()).
 */
unsigned long afm_zs_shrinker_count(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned long n = 0, one;
	unsigned int i;

	for (i = 0; i < afm_zs_created(set); i++) {
		one = afm_zs_count(set->shard[i]);
		if (one != SHRINK_EMPTY)
			n += one;
	}
	return n ? n : SHRINK_EMPTY;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_shrinker_count);

/**
 * afm_zs_shrinker_scan() - the shrinker's scan_objects (KUnit hook)
 * @pool: a zspage-store pool
 * @nr_pages: pages to free
 *
 * Context: process context, may sleep.
 * Return: what scan_objects returns, also in a pool quiet for the shrinker
 * (afm_zs_test_quiet()).
 */
unsigned long afm_zs_shrinker_scan(struct afm_pool *pool,
				   unsigned long nr_pages)
{
	struct afm_zs_set *set = pool->store;
	unsigned long freed = 0, one;
	unsigned int i;

	for (i = 0; i < afm_zs_created(set) && freed < nr_pages; i++) {
		one = afm_zs_scan(set->shard[i], nr_pages - freed);
		if (one != SHRINK_STOP)
			freed += one;
	}
	return freed ? freed : SHRINK_STOP;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_shrinker_scan);

/**
 * afm_zs_set_auto_permille() - set the automatic compaction trigger
 *	(KUnit hook)
 * @permille: new value of the zspage_auto_permille parameter
 *
 * Context: any context.
 * Return: nothing.
 */
void afm_zs_set_auto_permille(unsigned int permille)
{
	WRITE_ONCE(afm_zs_auto_permille, permille);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_set_auto_permille);

/**
 * afm_zs_test_set_solo_ext() - set the extent length above which an
 *	object that nothing fits gets a solo zspage (KUnit hook)
 * @ext: the new bound (afm_zs_solo_ext; half a zspage by default, which
 *	only objects of 16 KiB pages reach)
 *
 * Context: any; allocations meanwhile see either value.
 * Return: the old bound.
 */
unsigned int afm_zs_test_set_solo_ext(unsigned int ext)
{
	unsigned int old = READ_ONCE(afm_zs_solo_ext);

	WRITE_ONCE(afm_zs_solo_ext, ext);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_set_solo_ext);

/**
 * afm_zs_set_compact_holes() - let compaction move objects into holes, or
 *	only to tails (KUnit hook)
 * @on: the new zspage_compact_holes
 *
 * Context: any.
 * Return: the old value.
 */
bool afm_zs_set_compact_holes(bool on)
{
	bool old = READ_ONCE(afm_zs_compact_holes);

	WRITE_ONCE(afm_zs_compact_holes, on);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_set_compact_holes);

/**
 * afm_zs_get_auto_permille() - read the automatic compaction trigger
 *	(KUnit hook)
 *
 * Context: any context.
 * Return: the zspage_auto_permille parameter.
 */
unsigned int afm_zs_get_auto_permille(void)
{
	return READ_ONCE(afm_zs_auto_permille);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_get_auto_permille);

/**
 * afm_zs_entry_bytes() - bytes of metadata per object (KUnit hook)
 *
 * Context: any context.
 * Return: the size of a handle table entry.
 */
unsigned int afm_zs_entry_bytes(void)
{
	return sizeof(u64);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_entry_bytes);

/*
 * Apply @set to every shard of @pool, each under its pool lock: the KUnit
 * hooks that change an empty pool's geometry. Return: 0, or -EINVAL if
 * @set refused any shard.
 */
static int afm_zs_test_each(struct afm_pool *pool,
			    bool (*set)(struct afm_zs_pool *zs, unsigned int v),
			    unsigned int v)
{
	struct afm_zs_set *zset = pool->store;
	struct afm_zs_pool *zs;
	unsigned int i;
	int ret = 0;

	/* Shards created meanwhile copy the first's settings after. */
	mutex_lock(&zset->grow_lock);
	for (i = 0; i < zset->created; i++) {
		zs = zset->shard[i];
		afm_zs_lock(zs);
		if (!set(zs, v))
			ret = -EINVAL;
		afm_zs_unlock(zs);
	}
	mutex_unlock(&zset->grow_lock);
	return ret;
}

static bool afm_zs_idx_bits_set(struct afm_zs_pool *zs, unsigned int bits)
{
	lockdep_assert_held(&zs->lock);
	if (!bits || bits > AFM_ZH_IDX_BITS || zs->objects)
		return false;
	zs->idx_bits = bits;
	return true;
}

/**
 * afm_zs_test_set_idx_bits() - fewer handle bits in headers (KUnit hook)
 * @pool: an empty zspage-store pool
 * @bits: 1 to the default (26 with 4 KiB pages)
 *
 * Handles then share header bits every 2^@bits handles, as handles above
 * 2^26 do in a pool that large: compaction must tell them apart.
 *
 * Context: process context; takes each shard's pool lock.
 * Return: 0, or -EINVAL if @bits is out of range or the pool has objects.
 */
int afm_zs_test_set_idx_bits(struct afm_pool *pool, unsigned int bits)
{
	return afm_zs_test_each(pool, afm_zs_idx_bits_set, bits);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_set_idx_bits);

static bool afm_zs_handle_mag_apply(struct afm_zs_pool *zs, unsigned int nr)
{
	lockdep_assert_held(&zs->lock);
	if (nr > AFM_ZT_MAG || zs->htab.used || zs->htab.mag_nr)
		return false;
	zs->htab.mag_max = nr;
	return true;
}

/**
 * afm_zs_test_handle_mag() - freed handle slots kept at hand (KUnit hook)
 * @pool: an empty zspage-store pool
 * @nr: slots each shard's handle table keeps (0 to AFM_ZT_MAG), as the
 *	zspage_handle_mag parameter sets for a new pool
 *
 * Context: process context; takes each shard's pool lock.
 * Return: 0, or -EINVAL if @nr is out of range or the pool holds objects.
 */
int afm_zs_test_handle_mag(struct afm_pool *pool, unsigned int nr)
{
	return afm_zs_test_each(pool, afm_zs_handle_mag_apply, nr);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_handle_mag);

static bool afm_zs_handle_phases_apply(struct afm_zs_pool *zs, unsigned int on)
{
	lockdep_assert_held(&zs->lock);
	if (zs->htab.used || zs->htab.mag_nr)
		return false;
	zs->htab.phase_on = on ? AFM_ZT_WR_ON : AFM_ZT_PHASE_OFF;
	return true;
}

/**
 * afm_zs_test_handle_phases() - the handle table's phase rules (KUnit hook)
 * @pool: an empty zspage-store pool
 * @on: false turns the write-mostly and free-mostly rules of each shard's
 *	handle table off, as the zspage_handle_phases parameter does for a
 *	new pool
 *
 * Context: process context; takes each shard's pool lock.
 * Return: 0, or -EINVAL if the pool holds objects.
 */
int afm_zs_test_handle_phases(struct afm_pool *pool, bool on)
{
	return afm_zs_test_each(pool, afm_zs_handle_phases_apply, on);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_handle_phases);

static bool afm_zs_small_dirs_set(struct afm_zs_pool *zs, unsigned int shift)
{
	lockdep_assert_held(&zs->lock);
	if (shift > ilog2(AFM_ZT_PTRS) || zs->htab.dirs || zs->dtab.dirs ||
	    zs->rtab.dirs)
		return false;
	zs->htab.dshift = shift;
	zs->dtab.dshift = shift;
	zs->rtab.dshift = shift;
	return true;
}

/**
 * afm_zs_test_small_dirs() - directories with few entries (KUnit hook)
 * @pool: an empty zspage-store pool (no directories)
 * @shift: log2 of the table pages per directory, from 0 to the default
 *	(ilog2(AFM_ZT_PTRS): 6 with 4 KiB pages)
 *
 * The handle, descriptor and hole tables then need a directory every 2^@shift
 * table pages, so that a test reaches many directories, and the growth of
 * the top level, with few objects.
 *
 * Context: process context; takes each shard's pool lock.
 * Return: 0, or -EINVAL if @shift is out of range or the pool has
 * directories.
 */
int afm_zs_test_small_dirs(struct afm_pool *pool, unsigned int shift)
{
	return afm_zs_test_each(pool, afm_zs_small_dirs_set, shift);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_small_dirs);

/**
 * afm_zs_test_busy() - frees act as if they found the lock held (KUnit
 * hook)
 * @pool: a zspage-store pool
 * @busy: on or off
 *
 * Until it is turned off, the shard's worker leaves them waiting too. A
 * real lock held elsewhere on a uniprocessor kernel cannot be: a failed
 * spin_trylock() there is a bug report (CONFIG_DEBUG_SPINLOCK).
 *
 * Context: any context.
 * Return: nothing.
 */
void afm_zs_test_busy(struct afm_pool *pool, bool busy)
{
	struct afm_zs_set *set = pool->store;

	WRITE_ONCE(set->test_busy, busy);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_busy);

/**
 * afm_zs_test_migrate_wait() - count a page migration as waiting for every
 * shard's pool lock, or stop counting it (KUnit hook)
 * @pool: a zspage-store pool
 * @delta: 1 (one more waits) or -1 (one fewer)
 *
 * What afm_zs_migrate_lock() does while it waits for the lock, without
 * a migration: compaction passes then let go of the lock after every move.
 * Shards created later start with the hook's count.
 *
 * Context: process context; may sleep.
 * Return: nothing.
 */
void afm_zs_test_migrate_wait(struct afm_pool *pool, int delta)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i;

	mutex_lock(&set->grow_lock);
	set->test_migrate_wait += delta;
	for (i = 0; i < set->created; i++)
		atomic_add(delta, &set->shard[i]->migrate_wait);
	mutex_unlock(&set->grow_lock);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_migrate_wait);

/**
 * afm_zs_header_bytes() - bytes of an object's header (KUnit hook)
 *
 * Context: any context.
 * Return: the bytes each object's extent has before its data.
 */
unsigned int afm_zs_header_bytes(void)
{
	return AFM_ZS_HDR;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_header_bytes);

/**
 * afm_zs_max_extent() - the longest extent, object or hole (KUnit hook)
 *
 * Context: any context.
 * Return: AFM_ZS_MAX_EXT: 8191 bytes with 4 KiB pages, 32767 with 16 KiB.
 */
unsigned int afm_zs_max_extent(void)
{
	return AFM_ZS_MAX_EXT;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_max_extent);
#endif /* CONFIG_AFMALLOC_KUNIT_TEST */
