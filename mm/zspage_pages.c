// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: zspages. The exclusive side of the zspage gate,
 * copies between zspages and buffers, object and hole headers (the reverse
 * map) through cursors, hole lists and tail buckets, making zspages and
 * freeing them (at once or through the dead list and its worker).
 *
 * Locking: hole lists, tail buckets and zspage state under the pool lock;
 * copies under the gate (shared) or the pool lock, which callers of the
 * copy helpers hold; header accesses (cursors, afm_zs_hdr_read(),
 * afm_zs_hdr_write()) under the pool lock; the exclusive gate and page
 * locks around freeing (see "Locking" in zspage_store.c).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/sort.h>

#include "zspage_internal.h"

#ifdef CONFIG_DEBUG_LOCK_ALLOC
static struct lock_class_key afm_zg_key, afm_ze_key;
struct lockdep_map afm_zg_map =
	STATIC_LOCKDEP_MAP_INIT("afm_zspage_gate", &afm_zg_key);
struct lockdep_map afm_ze_map =
	STATIC_LOCKDEP_MAP_INIT("afm_zspage_entry", &afm_ze_key);
#endif

/*
 * Take the gate exclusively if no sharer holds it, without waiting (an
 * exclusive taker's AFM_ZG_WAIT does not stop it: that one takes the gate
 * after it). On success, returns with preemption disabled (sharers spin:
 * none may wait on a holder that was preempted).
 */
bool afm_zg_lock(struct afm_zspage *z)
{
	int old;

	preempt_disable();
	old = atomic_read(&z->gate);
	while (!(old & (AFM_ZG_COUNT | AFM_ZG_EXCL))) {
		if (atomic_try_cmpxchg_acquire(&z->gate, &old, AFM_ZG_EXCL)) {
			lock_map_acquire_try(&afm_zg_map);
			return true;
		}
	}
	preempt_enable();
	return false;
}

/*
 * Take the gate exclusively, waiting for the sharers inside to leave while
 * new ones are kept out (AFM_ZG_WAIT, afm_zg_shut()), as a queued rwlock's
 * writer does (zsmalloc's migrate_write_lock()): CPUs reading the zspage
 * back to back, never all out at once, cannot keep it busy for as long as
 * they read. The wait lasts as long as the longest access inside: a sharer
 * holds the gate for one access, with preemption disabled, and waits for
 * nothing that waits for the gate meanwhile (no other gate: a CPU with an
 * object mapped maps, reads and writes no other, see afm_map_object(); no
 * lock a taker of the gate holds). Several takers may wait on one gate:
 * the one that takes it clears the bit, the others set it again. Returns
 * with preemption disabled, as afm_zg_lock().
 */
void afm_zg_lock_wait(struct afm_zspage *z)
{
	bool told = false;
	int old;

	preempt_disable();
	old = atomic_read(&z->gate);
	for (;;) {
		if (!(old & (AFM_ZG_COUNT | AFM_ZG_EXCL))) {
			if (atomic_try_cmpxchg_acquire(&z->gate, &old,
						       AFM_ZG_EXCL))
				break;
			continue;
		}
		if (!(old & AFM_ZG_WAIT)) {
			atomic_or(AFM_ZG_WAIT, &z->gate);
			if (!told)
				afm_zs_test_migrate_waits(z, false);
			told = true;
		}
		cpu_relax();
		old = atomic_read(&z->gate);
	}
	lock_map_acquire_try(&afm_zg_map);
}

void afm_zg_unlock(struct afm_zspage *z)
{
	lock_map_release(&afm_zg_map);
	atomic_fetch_andnot_release(AFM_ZG_EXCL, &z->gate);
	preempt_enable();
}

/* Copies between zspages and linear buffers */

void afm_zs_copy_out(struct afm_zspage *z, unsigned int off, void *dst,
		     unsigned int len)
{
	u8 *lin = afm_zs_lin(z);

	if (lin) {
		memcpy(dst, lin + off, len);
		return;
	}
	while (len) {
		unsigned int po = offset_in_page(off);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - po);

		memcpy_from_page(dst, afm_zs_page(z, off >> PAGE_SHIFT), po, n);
		dst += n;
		off += n;
		len -= n;
	}
}

void afm_zs_copy_in(struct afm_zspage *z, unsigned int off,
		    const void *src, unsigned int len)
{
	u8 *lin = afm_zs_lin(z);

	if (lin) {
		memcpy(lin + off, src, len);
		return;
	}
	while (len) {
		unsigned int po = offset_in_page(off);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - po);

		memcpy_to_page(afm_zs_page(z, off >> PAGE_SHIFT), po, src, n);
		src += n;
		off += n;
		len -= n;
	}
}

void afm_zs_copy_zz(struct afm_zspage *d, unsigned int doff,
		    struct afm_zspage *s, unsigned int soff,
		    unsigned int len)
{
	u8 *sl = afm_zs_lin(s), *dl = afm_zs_lin(d);

	if (sl && dl) {
		memcpy(dl + doff, sl + soff, len);
		return;
	}
	while (len) {
		unsigned int sp = offset_in_page(soff), dp = offset_in_page(doff);
		unsigned int n = min3(len, (unsigned int)PAGE_SIZE - sp,
				      (unsigned int)PAGE_SIZE - dp);
		void *src = kmap_local_page(afm_zs_page(s, soff >> PAGE_SHIFT));
		void *dst = kmap_local_page(afm_zs_page(d, doff >> PAGE_SHIFT));

		memcpy(dst + dp, src + sp, n);
		kunmap_local(dst);
		kunmap_local(src);
		soff += n;
		doff += n;
		len -= n;
	}
}

/* Header accesses (zspage_internal.h) of a zspage not reached in place */

static struct page *afm_zs_cur_page(struct afm_zs_cur *c, unsigned int nr)
{
	struct page *page = c->page;
	unsigned int i = c->nr;

	/* A run: no walk to remember (the pool lock keeps it a run). */
	if (likely(READ_ONCE(c->z->run)))
		return afm_zs_page(c->z, nr);
	if (!page || nr < i) {
		page = READ_ONCE(c->z->first);
		i = 0;
	}
	for (; i < nr; i++)
		page = (struct page *)READ_ONCE(page->index);
	c->page = page;
	c->nr = nr;
	return page;
}

/*
 * Copy @n header bytes at @off of the cursor's zspage to or from @buf, page
 * by page: a zspage not reached in place (afm_zs_cur_rd(), afm_zs_cur_wr()).
 */
void afm_zs_cur_io_pages(struct afm_zs_cur *c, unsigned int off, u8 *buf,
			 unsigned int n, bool write)
{
	while (n) {
		unsigned int po = offset_in_page(off);
		unsigned int k = min_t(unsigned int, n, PAGE_SIZE - po);
		u8 *p = kmap_local_page(afm_zs_cur_page(c, off >> PAGE_SHIFT));

		if (write)
			memcpy(p + po, buf, k);
		else
			memcpy(buf, p + po, k);
		kunmap_local(p);
		buf += k;
		off += k;
		n -= k;
	}
}

/* afm_zs_chdr_write() through a cursor of its own. Pool lock held. */
void afm_zs_hdr_write(struct afm_zs_pool *zs, struct afm_zspage *z,
		      unsigned int off, unsigned int len, unsigned long handle)
{
	struct afm_zs_cur c;

	afm_zs_cur_begin(&c, zs, z);
	afm_zs_chdr_write(&c, off, len, handle);
}

/* afm_zs_chdr_read() through a cursor of its own. Pool lock held. */
unsigned int afm_zs_hdr_read(struct afm_zs_pool *zs, struct afm_zspage *z,
			     unsigned int off, unsigned long *idx, u32 *r1)
{
	struct afm_zs_cur c;

	afm_zs_cur_begin(&c, zs, z);
	return afm_zs_chdr_read(&c, off, idx, r1);
}

/* afm_zs_hlist_update() of a zspage that moves to hole list @n. */
void afm_zs_hlist_move(struct afm_zs_pool *zs, struct afm_zspage *z,
		       unsigned int n)
{
	/* Read without the lock by the shrinker (afm_zs_count()). */
	WRITE_ONCE(zs->hlist_units, zs->hlist_units + n - z->hlist_nr);
	if (z->hlist_nr) {
		list_del_init(&z->hlist);
		if (!--zs->hlist_count[z->hlist_nr])
			zs->hlist_map &= ~BIT_ULL(z->hlist_nr);
	}
	z->hlist_nr = n;
	if (!n)
		return;
	list_add_tail(&z->hlist, &zs->hlists[n]);
	zs->hlist_count[n]++;
	zs->hlist_map |= BIT_ULL(n);
}

/* Tail buckets and placement */

static unsigned int afm_zs_bucket(unsigned int tail)
{
	if (tail < PAGE_SIZE)
		return tail / AFM_ZS_GRAIN;
	return AFM_ZS_SMALL_BUCKETS + (tail - PAGE_SIZE) / AFM_ZS_BIG_STEP;
}

void afm_zs_unbucket(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	lockdep_assert_held(&zs->lock);
	if (z->bucket == AFM_ZS_NO_BUCKET)
		return;
	list_del_init(&z->list);
	if (list_empty(&zs->tails[z->bucket]))
		__clear_bit(z->bucket, zs->tail_map);
	z->bucket = AFM_ZS_NO_BUCKET;
}

/* Put @z on the tail list matching its tail (none when full). */
void afm_zs_rebucket(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int tail = afm_zs_end(z) - z->tail;
	unsigned int b = tail ? afm_zs_bucket(tail) : AFM_ZS_NO_BUCKET;

	lockdep_assert_held(&zs->lock);
	if (b == z->bucket)
		return;
	afm_zs_unbucket(zs, z);
	if (b == AFM_ZS_NO_BUCKET)
		return;
	list_add(&z->list, &zs->tails[b]);
	__set_bit(b, zs->tail_map);
	z->bucket = b;
}

/* The zspage with the smallest tail that fits @size, or NULL. */
struct afm_zspage *afm_zs_fit(struct afm_zs_pool *zs, unsigned int size)
{
	unsigned int b = afm_zs_bucket(size), n = 0;
	struct afm_zspage *z;

	lockdep_assert_held(&zs->lock);

	list_for_each_entry(z, &zs->tails[b], list) {
		if (afm_zs_end(z) - z->tail >= size)
			return z;
		if (++n >= AFM_ZS_FIT_TRIES)
			break;
	}
	b = find_next_bit(zs->tail_map, AFM_ZS_NR_BUCKETS, b + 1);
	if (b >= AFM_ZS_NR_BUCKETS)
		return NULL;
	return list_first_entry(&zs->tails[b], struct afm_zspage, list);
}

/* Zspages */

/*
 * Short zspages
 * -------------
 * A zspage has AFM_ZS_PAGES pages, but for the first ones of a shard that
 * holds few: one whose live zspages hold P pages makes its next zspage of
 * the largest power of two of pages not above P + 1 (with 4 KiB pages
 * 1, 2, 4, then AFM_ZS_PAGES: its first 15 pages come in four zspages;
 * with 16 KiB pages 1, then AFM_ZS_PAGES of 2), or of as many
 * as the object needs (a page and a header: 2). So an empty pool's first
 * object costs one data page, not eight, and a shard's open tail is at
 * most what the shard already holds (a pool of many shards, one per CPU,
 * on a large machine: each shard that stores a little holds a page, not
 * 32 KiB). The price is a descriptor per page instead of per eight while
 * the shard is that small (the short zspages live and die as any other;
 * compaction's victims take their holes as any other's). A zspage that
 * compaction makes for the objects of its victims is short too while the
 * shard, its victims left out, holds that little, and no longer than the
 * victims' live bytes need (afm_zs_dest_order()): a full one would
 * make a pass over a small shard grow it (a victim of 1 page traded for a
 * zspage of 8). Module parameter zspage_short: off, every zspage has
 * AFM_ZS_PAGES pages.
 */
bool afm_zs_short = true;
module_param_named(zspage_short, afm_zs_short, bool, 0644);
MODULE_PARM_DESC(zspage_short,
		 "zspage store: a shard that holds fewer data pages than a zspage has makes its new zspages shorter (powers of two of pages) so that a nearly empty pool holds few pages (default Y)");

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_zs_test_set_short() - set the zspage_short parameter (KUnit hook)
 * @on: its new value
 *
 * Context: any; pools making a zspage meanwhile see either value.
 * Return: its old value.
 */
bool afm_zs_test_set_short(bool on)
{
	bool old = READ_ONCE(afm_zs_short);

	WRITE_ONCE(afm_zs_short, on);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_set_short);
#endif

/*
 * Order of the zspage a shard holding @held data pages makes for an
 * extent of @ext bytes (see "Short zspages").
 */
static unsigned int afm_zs_held_order(unsigned long held, unsigned int ext)
{
	unsigned int order;

	if (!READ_ONCE(afm_zs_short) || held >= AFM_ZS_PAGES - 1)
		return AFM_ZS_ORDER;
	order = ilog2(held + 1);
	return max_t(unsigned int, order,
		     order_base_2(DIV_ROUND_UP(ext, PAGE_SIZE)));
}

/*
 * Order of the zspage @zs would make for an extent of @ext bytes (see
 * "Short zspages"). Pool lock held.
 */
unsigned int afm_zs_new_order(const struct afm_zs_pool *zs, unsigned int ext)
{
	lockdep_assert_held(&zs->lock);
	return afm_zs_held_order(zs->data_pages, ext);
}

/*
 * Order of the zspage compaction makes for a victim's object of @size
 * bytes that fits no hole or tail: that of afm_zs_new_order() for the
 * pages the shard keeps without the running pass's victims, and, when
 * that is a short zspage, no longer than the object's extent and the
 * victims' other live bytes need (their headers aside: a zspage too
 * short for the last of them makes the pass open another). Pool lock
 * held; the object still counted in its victim (@victim_live).
 */
unsigned int afm_zs_dest_order(const struct afm_zs_pool *zs, unsigned int size)
{
	unsigned int ext = afm_zs_ext(zs, size), order;
	unsigned long bytes;

	lockdep_assert_held(&zs->lock);
	order = afm_zs_held_order(zs->data_pages - zs->victim_pages, ext);
	if (order == AFM_ZS_ORDER)
		return order;
	bytes = zs->victim_live - min_t(unsigned long, zs->victim_live, size) +
		ext;
	return min_t(unsigned int, order,
		     order_base_2(DIV_ROUND_UP(bytes, PAGE_SIZE)));
}

static int afm_zs_pfn_cmp(const void *a, const void *b)
{
	unsigned long pa = page_to_pfn(*(struct page * const *)a);
	unsigned long pb = page_to_pfn(*(struct page * const *)b);

	return pa < pb ? -1 : pa > pb;
}

/*
 * Order @pages, @n of them, by PFN. Return: whether they are a run (see
 * struct afm_zspage).
 */
static bool afm_zs_run(struct page **pages, unsigned int n)
{
	unsigned long pfn;
	unsigned int i;

	sort(pages, n, sizeof(*pages), afm_zs_pfn_cmp, NULL);
	pfn = page_to_pfn(pages[0]);
	for (i = 1; i < n; i++)
		if (page_to_pfn(pages[i]) != pfn + i)
			return false;
	return true;
}

/*
 * Make a zspage of 2^@order data pages of @sp (which holds them), with a
 * descriptor in table page @dpg (afm_zt_find() of the descriptor table).
 * Pool lock held.
 */
struct afm_zspage *afm_zs_new(struct afm_zs_pool *zs, unsigned long dpg,
			      struct afm_zs_spare *sp, unsigned int order)
{
	unsigned long id = afm_zt_take(zs, &zs->dtab, dpg, sp);
	struct afm_zspage *z = afm_zs_desc(zs, id);
	struct page *next = NULL, *page, *pages[AFM_ZS_PAGES];
	unsigned int i, n = 1U << order;

	memset(z, 0, sizeof(*z));
	z->id = id;
	z->order = order;
	z->bucket = AFM_ZS_NO_BUCKET;
	INIT_LIST_HEAD(&z->list);
	INIT_LIST_HEAD(&z->hlist);
	for (i = 0; i < n; i++)
		pages[i] = sp->data[--sp->nr_data];
	z->run = afm_zs_run(pages, n) && !afm_zs_quiet(zs, AFM_ZS_QUIET_RUNS);
	if (z->run)
		zs->st.runs++;
	else
		zs->st.chains++;
	/* Chain the pages from the last one back to the first. */
	for (i = n; i--; ) {
		page = pages[i];
		set_page_private(page, (unsigned long)z);
		page->index = (unsigned long)next;
		next = page;
	}
	z->first = next;
	z->flags = AFM_ZS_USED;
	/*
	 * Movable only once the descriptor is complete. Once a page is
	 * movable and unlocked, migration may replace it: its ->index is not
	 * followed any more, the pages come from the local array.
	 */
#ifdef CONFIG_COMPACTION
	for (i = 0; i < n; i++) {
		/* A fresh page: nobody else can hold its lock. */
		if (WARN_ON_ONCE(!trylock_page(pages[i])))
			continue;
		__SetPageMovable(pages[i], &afm_zspage_mops);
		unlock_page(pages[i]);
	}
#endif
	zs->zspages++;
	zs->data_pages += n;
	zs->tail_bytes += afm_zs_end(z);
	afm_zs_donor_update(zs);
	afm_zs_pages_add(zs, n);
	afm_zs_rebucket(zs, z);
	return z;
}

/* Undo the page setup of afm_zs_new(); page lock held if it was movable. */
void afm_zs_reset_page(struct page *page)
{
#ifdef CONFIG_COMPACTION
	if (READ_ONCE(page->mapping))
		__ClearPageMovable(page);
#endif
	set_page_private(page, 0);
	page->index = 0;
}

/*
 * Page @page of a zspage being freed, page lock held: if the migration core
 * has it isolated, it will find it released and free it (see "Locking").
 */
static void afm_zs_count_isolated_freed(struct afm_zs_pool *zs,
					struct page *page)
{
#ifdef CONFIG_COMPACTION
	if (PageIsolated(page))
		atomic_long_inc(&zs->st.isolated_freed);
#endif
}

/*
 * Free the pages of dead zspage @z if the gate and all page locks can be
 * had without waiting. Any context. Return: true if freed.
 */
static bool afm_zs_try_free_pages(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	struct page *pages[AFM_ZS_PAGES];
	unsigned int i, locked, n = afm_zs_npages(z);

	if (!afm_zg_lock(z))
		return false;
	for (locked = 0; locked < n; locked++) {
		pages[locked] = locked ? (struct page *)pages[locked - 1]->index :
					 z->first;
		if (!trylock_page(pages[locked]))
			break;
	}
	if (locked < n) {
		while (locked--)
			unlock_page(pages[locked]);
		afm_zg_unlock(z);
		return false;
	}
	for (i = 0; i < n; i++) {
		struct page *page = pages[i];

		afm_zs_count_isolated_freed(zs, page);
		afm_zs_reset_page(page);
		unlock_page(page);
		put_page(page);
	}
	afm_zg_unlock(z);
	afm_zs_pages_add(zs, -(long)n);
	return true;
}

/*
 * Give back empty zspage @z (not a victim): free it now, or queue it for
 * afm_zs_free_work(). Pool lock held.
 */
void afm_zs_release(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	lockdep_assert_held(&zs->lock);
	WARN_ON_ONCE(z->live || z->objs || (z->flags & AFM_ZS_VICTIM));

	afm_zs_pend_drop(zs, z);
	afm_zs_holes_unlink_all(zs, z);
	afm_zs_unbucket(zs, z);
	zs->tail_bytes -= afm_zs_end(z) - z->tail;
	afm_zs_donor_update(zs);
	zs->zspages--;
	zs->data_pages -= afm_zs_npages(z);
	z->flags |= AFM_ZS_DEAD;
	afm_zs_hlist_update(zs, z);
	if (afm_zs_try_free_pages(zs, z)) {
		afm_zt_put(zs, &zs->dtab, z->id);
		return;
	}
	zs->dead_zspages++;
	zs->dead_pages += afm_zs_npages(z);
	zs->st.deferred_frees++;
	list_add_tail(&z->list, &zs->dead);
	queue_work(afm_wq, &zs->free_work);
}

/* Free the pages and descriptors of the zspages on the dead list. */
void afm_zs_free_dead(struct afm_zs_pool *zs)
{
	struct afm_zspage *z, *tmp;
	struct page *pages[AFM_ZS_PAGES];
	LIST_HEAD(list);
	unsigned int i, n;

	afm_zs_lock(zs);
	list_splice_init(&zs->dead, &list);
	afm_zs_unlock(zs);

	list_for_each_entry_safe(z, tmp, &list, list) {
		list_del_init(&z->list);
		/*
		 * Its page chain no longer changes: it died under the pool
		 * lock, under which migration refuses a dead zspage. Read
		 * under the lock as afm_zs_page() asks; no gate, as no object
		 * is left to map and compaction takes no dead zspage.
		 */
		n = afm_zs_npages(z);
		afm_zs_lock(zs);
		for (i = 0; i < n; i++)
			pages[i] = afm_zs_page(z, i);
		afm_zs_unlock(zs);
		/*
		 * A page the migration core holds (isolated before the zspage
		 * died): lock_page() queues for it, and once the core has
		 * taken it back from under the worker page_lock_unfairness
		 * times (5 by default), the core's unlock hands the lock
		 * over. Polling it (waiting for the unlock, then
		 * trylock_page(), as zsmalloc's lock_zspage() does) could lose
		 * to the core's next try every time: its passes retry a busy
		 * page at once, CMA its whole range. Pages are locked in chain
		 * order; the core holds one of them at a time where it may
		 * sleep for one.
		 */
		for (i = 0; i < n; i++)
			lock_page(pages[i]);
		for (i = 0; i < n; i++) {
			afm_zs_count_isolated_freed(zs, pages[i]);
			afm_zs_reset_page(pages[i]);
			unlock_page(pages[i]);
			put_page(pages[i]);
		}
		/* With the pool lock: the page counts add up under it. */
		afm_zs_lock(zs);
		afm_zs_pages_add(zs, -(long)n);
		zs->dead_zspages--;
		zs->dead_pages -= n;
		afm_zt_put(zs, &zs->dtab, z->id);
		afm_zs_unlock(zs);
		cond_resched();
	}
}

void afm_zs_free_work(struct work_struct *work)
{
	afm_zs_free_dead(container_of(work, struct afm_zs_pool, free_work));
}
