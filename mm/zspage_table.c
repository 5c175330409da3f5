// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: slot tables. The handle table (8-byte entries),
 * the descriptor table (struct afm_zspage) and the hole table (struct
 * afm_zs_hrec) are pages of slots behind directories behind a top array
 * that grows (see "Handle encoding" in zspage_store.c); a directory is a
 * block of an eighth of a page, and the blocks of a shard's three tables
 * share its directory pages. Pages for them are allocated ahead, outside
 * the pool lock, into a struct afm_zs_spare (hole table pages for a free
 * also under it, without sleeping: afm_zs_rec_new_page()).
 *
 * Locking: everything here is written under the pool lock (asserted where
 * it is taken for a slot); afm_zt_grow() and @top_work allocate without
 * it and swap the top array under it; a table's @want is raised and taken
 * without it (cmpxchg(), xchg()); lookups (zspage_internal.h) are
 * lockless, RCU for the top array and for table and directory pages, which
 * go back after a grace period (afm_zs_meta_page_free()), and for
 * directory blocks, which cool down for one before a directory takes them
 * again (afm_zt_dir_free()).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

static bool afm_zs_contig = true;
module_param_named(zspage_contig, afm_zs_contig, bool, 0644);
MODULE_PARM_DESC(zspage_contig,
		 "zspage store: take a new zspage's pages as one block when the page allocator has one free, without reclaim or compaction (such a zspage is reached in place and goes back whole), else page by page (default Y)");

/*
 * The 2^@order data pages of a new zspage as one block, split into
 * order-0 pages (afm_zs_new() finds them a run): only if the page
 * allocator has one at hand, as SLUB asks for its preferred slab order
 * (no reclaim, no compaction, no reserves, no warning); not with
 * zspage_contig off, nor while a KUnit test injects allocation failures
 * (it counts the page-by-page allocations). Return: whether @sp got them.
 */
static bool afm_zs_spare_block(struct afm_zs_pool *zs, struct afm_zs_spare *sp,
			       unsigned int order, gfp_t gfp)
{
	struct page *page;
	unsigned int i;

	if (!READ_ONCE(afm_zs_contig) || sp->nr_data ||
	    afm_fail_armed(zs->pool))
		return false;
	gfp = (gfp | __GFP_NOWARN | __GFP_NORETRY | __GFP_NOMEMALLOC) &
	      ~(__GFP_RECLAIM | __GFP_NOFAIL | __GFP_COMP);
	page = alloc_pages(gfp, order);
	if (!page)
		return false;
	split_page(page, order);
	for (i = 0; i < 1U << order; i++)
		sp->data[sp->nr_data++] = page + i;
	atomic_long_inc(&zs->st.blocks);
	return true;
}

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/**
 * afm_zs_test_set_contig() - set the zspage_contig parameter (KUnit hook)
 * @on: its new value
 *
 * Context: any; pools allocating meanwhile see either value.
 * Return: its old value.
 */
bool afm_zs_test_set_contig(bool on)
{
	bool old = READ_ONCE(afm_zs_contig);

	WRITE_ONCE(afm_zs_contig, on);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_set_contig);
#endif

int afm_zs_spare_fill(struct afm_zs_pool *zs, struct afm_zs_spare *sp,
		      unsigned int meta, unsigned int data, gfp_t gfp)
{
	gfp_t mgfp = gfp & ~(__GFP_HIGHMEM | __GFP_MOVABLE);
	struct page *page;

	while (sp->nr_meta < meta) {
		if (afm_should_fail(zs->pool))
			return -ENOMEM;
		page = alloc_page(mgfp);
		if (!page)
			return -ENOMEM;
		sp->meta[sp->nr_meta++] = page;
	}
	/* A new zspage's pages (see afm_zs_new_order()). */
	if (data > 1 && is_power_of_2(data))
		afm_zs_spare_block(zs, sp, ilog2(data), gfp);
	while (sp->nr_data < data) {
		if (afm_should_fail(zs->pool))
			return -ENOMEM;
		page = alloc_page(gfp);
		if (!page)
			return -ENOMEM;
		sp->data[sp->nr_data++] = page;
	}
	return 0;
}

/* afm_zs_spare_drain() of a spare that holds pages. */
void afm_zs_spare_free(struct afm_zs_spare *sp)
{
	while (sp->nr_meta)
		__free_page(sp->meta[--sp->nr_meta]);
	while (sp->nr_data)
		__free_page(sp->data[--sp->nr_data]);
}

static void *afm_zs_meta_page(struct afm_zs_pool *zs, struct afm_zs_spare *sp)
{
	struct page *page = sp->meta[--sp->nr_meta];

	page->index = 0;
	set_page_private(page, 0);
	afm_zs_meta_page_owner(page, zs);
	afm_zs_pages_add(zs, 1);
	return page_address(page);
}

static void afm_zs_meta_page_rcu(struct rcu_head *head)
{
	__free_page(container_of(head, struct page, rcu_head));
}

/*
 * Give table or directory page @addr back, after an RCU grace period: a
 * lockless lookup (afm_zs_get(), under rcu_read_lock()) may have read its
 * address just before its directory entry was cleared, as one of a stale
 * handle (a caller's bug) can; it then reads cleared slots, not a page
 * the page allocator gave to someone else. The pool stops counting it at
 * once (afm_exit() waits for the callbacks: rcu_barrier()).
 */
static void afm_zs_meta_page_free(struct afm_zs_pool *zs, void *addr)
{
	struct page *page = virt_to_page(addr);

	page->index = 0;
	set_page_private(page, 0);
	call_rcu(&page->rcu_head, afm_zs_meta_page_rcu);
	afm_zs_pages_add(zs, -1);
}

/*
 * The blocks of directory page @page free for afm_zt_dir_new(): neither in
 * use nor cooling down, after those that have cooled down (their grace
 * period is over) are free again. Pool lock held.
 */
static unsigned long afm_zt_dir_avail(struct page *page)
{
	unsigned long priv = page_private(page);

	if ((priv >> AFM_ZT_DIRS_COOL_SHIFT) &&
	    poll_state_synchronize_rcu(page->index)) {
		priv &= AFM_ZT_DIRS_FULL;
		set_page_private(page, priv);
	}
	return ~(priv | priv >> AFM_ZT_DIRS_COOL_SHIFT) & AFM_ZT_DIRS_FULL;
}

/*
 * A cleared directory block: from the first directory page on @zs->dpages
 * when it has a free one (afm_zt_dir_avail(); those with a block not in
 * use come first), else from a new directory page taken from @sp. Pool
 * lock held.
 */
static unsigned long *afm_zt_dir_new(struct afm_zs_pool *zs,
				     struct afm_zs_spare *sp)
{
	struct page *page;
	unsigned long avail;
	unsigned long *dir;
	unsigned int b;

	lockdep_assert_held(&zs->lock);
	page = list_first_entry_or_null(&zs->dpages, struct page, lru);
	avail = page ? afm_zt_dir_avail(page) : 0;
	if (!avail) {
		page = virt_to_page(afm_zs_meta_page(zs, sp));
		list_add(&page->lru, &zs->dpages);
		zs->dir_pages++;
		avail = AFM_ZT_DIRS_FULL;
	}
	b = __ffs(avail);
	set_page_private(page, page_private(page) | BIT(b));
	if ((page_private(page) & AFM_ZT_DIRS_FULL) == AFM_ZT_DIRS_FULL)
		list_move_tail(&page->lru, &zs->dpages);
	dir = page_address(page) + b * AFM_ZT_DIR_BYTES;
	memset(dir, 0, AFM_ZT_DIR_BYTES);
	return dir;
}

/*
 * Give directory block @dir back to its page, and the page back when it
 * was its last block in use. Its entries are all clear, but a lockless
 * lookup (afm_zs_get(), under rcu_read_lock()) may have read its address
 * just before the table's directory entry was cleared, as one of a stale
 * handle (a caller's bug) can: the block cools down for an RCU grace
 * period before afm_zt_dir_new() gives it to a directory again, of this
 * table or another, so that the lookup reads clear entries and not the
 * addresses of pages it would take for its own table's. One cookie a page
 * covers its blocks: the latest free's, whose grace period ends after the
 * earlier ones' (those whose grace period is over already are free first,
 * not made to wait for the new one). The polled cookie may miss an
 * expedited grace period that runs beside a normal one (see
 * poll_state_synchronize_rcu()): the block then cools down until that
 * normal one ends, longer, never shorter. The page goes first on @zs->dpages
 * unless the first one has more free blocks (it then goes second): a block
 * not in use comes before full pages, and an allocation that counted on
 * the first page's free blocks (afm_zs_dir_need()) finds at least as many.
 * Pool lock held.
 */
static void afm_zt_dir_free(struct afm_zs_pool *zs, unsigned long *dir)
{
	unsigned long mask = BIT(offset_in_page(dir) / AFM_ZT_DIR_BYTES);
	struct page *page = virt_to_page(dir), *first;
	unsigned long priv;

	lockdep_assert_held(&zs->lock);
	afm_zt_dir_avail(page);
	priv = page_private(page);
	priv = (priv & ~mask) | mask << AFM_ZT_DIRS_COOL_SHIFT;
	set_page_private(page, priv);
	if (priv & AFM_ZT_DIRS_FULL) {
		page->index = get_state_synchronize_rcu();
		first = list_first_entry(&zs->dpages, struct page, lru);
		if (first != page &&
		    hweight_long(afm_zt_dir_avail(first)) >
		    hweight_long(afm_zt_dir_avail(page)))
			list_move(&page->lru, &first->lru);
		else
			list_move(&page->lru, &zs->dpages);
		return;
	}
	list_del(&page->lru);
	zs->dir_pages--;
	afm_zs_meta_page_free(zs, page_address(page));
}

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/* Grace periods afm_zs_test_dir_cool() waits for at most. */
#define AFM_ZT_COOL_TRIES	1000

/**
 * afm_zs_test_dir_take() - take a directory block of a pool's first shard,
 * as a table's new directory does (KUnit hook)
 * @pool: a zspage-store pool
 *
 * The block belongs to no table: give it back with afm_zs_test_dir_give()
 * before the pool is checked or destroyed.
 *
 * Context: process context; may sleep; takes the shard's lock.
 * Return: the block, or NULL without memory.
 */
void *afm_zs_test_dir_take(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs = set->shard[0];
	struct afm_zs_spare sp;
	void *dir = NULL;

	afm_zs_spare_init(&sp);
	if (!afm_zs_spare_fill(zs, &sp, 1, 0, GFP_KERNEL)) {
		afm_zs_lock(zs);
		dir = afm_zt_dir_new(zs, &sp);
		afm_zs_unlock(zs);
	}
	afm_zs_spare_drain(&sp);
	return dir;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_dir_take);

/**
 * afm_zs_test_dir_give() - give back a block of afm_zs_test_dir_take()
 * (KUnit hook)
 * @pool: the pool it came from
 * @dir: the block
 *
 * Context: process context; takes the shard's lock.
 * Return: nothing.
 */
void afm_zs_test_dir_give(struct afm_pool *pool, void *dir)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs = set->shard[0];

	afm_zs_lock(zs);
	afm_zt_dir_free(zs, dir);
	afm_zs_unlock(zs);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_dir_give);

/**
 * afm_zs_test_dir_cool() - wait until the directory blocks of a pool that
 * are cooling down now have cooled down (KUnit hook)
 * @pool: a zspage-store pool
 *
 * One synchronize_rcu() is not enough: the polled cookie a block cools
 * down with may miss an expedited grace period that runs beside a normal
 * one (see poll_state_synchronize_rcu()), as synchronize_rcu() is
 * expedited while the kernel boots, when built-in KUnit suites run. It
 * then counts once the normal one ends: wait for grace periods until the
 * cookies say so, at most AFM_ZT_COOL_TRIES of them (a block that never
 * cools down is a bug the caller's expectations then report).
 *
 * Context: process context; sleeps; takes the shards' locks.
 * Return: true once no block is cooling down, false after the last try.
 */
bool afm_zs_test_dir_cool(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i, tries = 0;
	struct afm_zs_pool *zs;
	struct page *page;
	bool cooling;

	do {
		synchronize_rcu();
		cooling = false;
		for (i = 0; i < afm_zs_created(set); i++) {
			zs = set->shard[i];
			afm_zs_lock(zs);
			list_for_each_entry(page, &zs->dpages, lru) {
				afm_zt_dir_avail(page);
				if (page_private(page) >> AFM_ZT_DIRS_COOL_SHIFT)
					cooling = true;
			}
			afm_zs_unlock(zs);
		}
	} while (cooling && ++tries < AFM_ZT_COOL_TRIES);
	return !cooling;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_dir_cool);
#endif

/* Directory @d holds every table page it can, none of them open. */
static bool afm_zt_dir_full(const struct afm_zs_table *t,
			    const struct afm_zt_dent *de)
{
	return de->pages == 1U << t->dshift && !de->open;
}

/*
 * afm_zt_find() with an empty magazine: the current page while it has a
 * free slot, else the lowest open or missing page, which becomes current
 * (it may lie beyond the top level: see afm_zt_short()). Pool lock held.
 * Return: 0 and *@pgp, or -ENOSPC when slot numbers would not fit.
 */
int afm_zt_find_page(struct afm_zs_table *t, unsigned long *pgp)
{
	struct afm_zt_top *top = afm_zt_top(t);
	unsigned long pg;
	void *base;

	lockdep_assert_held(t->lock);
	if (t->cur != ULONG_MAX) {
		base = afm_zt_page(t, t->cur);
		if (base && virt_to_page(base)->index) {
			*pgp = t->cur;
			return 0;
		}
	}
	for (pg = t->hint; pg < t->max_pages; pg++) {
		unsigned long *dir, ent;

		if (afm_zt_d(t, pg) >= top->size)
			break;
		dir = top->dir[afm_zt_d(t, pg)].dir;
		if (!dir)
			break;
		if (afm_zt_dir_full(t, &top->dir[afm_zt_d(t, pg)])) {
			pg = round_up(pg + 1, 1UL << t->dshift) - 1;
			continue;
		}
		ent = dir[afm_zt_di(t, pg)];
		if (!ent || (ent & AFM_ZT_OPEN))
			break;
	}
	if (pg >= t->max_pages)
		return -ENOSPC;
	t->hint = pg;
	t->cur = pg;
	*pgp = pg;
	return 0;
}

/*
 * Directories of a top level of at least @n that fills its allocation
 * (kmalloc's sizes are powers of two): the next growth comes as late as
 * the memory allows.
 */
static unsigned long afm_zt_top_fit(unsigned long n)
{
	size_t bytes = roundup_pow_of_two(struct_size_t(struct afm_zt_top,
							dir, n));

	return (bytes - offsetof(struct afm_zt_top, dir)) /
	       sizeof(struct afm_zt_dent);
}

/*
 * afm_zt_grow() without the KUnit failure injection (afm_zs_top_work()).
 * Return: 1 if it grew the top level, 0 if it reached @pg already, or
 * -ENOMEM.
 */
static int afm_zt_grow_to(struct afm_zs_pool *zs, struct afm_zs_table *t,
			  unsigned long pg, gfp_t gfp)
{
	struct afm_zt_top *top, *old;
	unsigned long size;

	rcu_read_lock();
	size = rcu_dereference(t->top)->size;
	rcu_read_unlock();
	if (afm_zt_d(t, pg) < size)
		return 0;
	size = afm_zt_top_fit(max(2 * size, afm_zt_d(t, pg) + 1));
	gfp &= ~(__GFP_HIGHMEM | __GFP_MOVABLE);
	if (gfpflags_allow_blocking(gfp))
		top = kvzalloc(struct_size(top, dir, size), gfp);
	else
		top = kzalloc(struct_size(top, dir, size), gfp);
	if (!top)
		return -ENOMEM;
	top->size = size;

	afm_zs_lock(zs);
	old = afm_zt_top(t);
	if (old->size >= size) {
		afm_zs_unlock(zs);
		kvfree(top);
		return 0;
	}
	memcpy(top->dir, old->dir, old->size * sizeof(*old->dir));
	rcu_assign_pointer(t->top, top);
	afm_zs_unlock(zs);
	kvfree_rcu(old, rcu);
	return 1;
}

/*
 * Replace the top level of @t by one that reaches table page @pg, twice
 * as large at least, allocated with @gfp outside the pool lock (held on
 * neither entry nor return); a large one may be virtually contiguous
 * where @gfp may sleep (16 bytes a directory: a table of 2^30 handles in
 * one shard needs 512 KiB). The old one is freed after an RCU grace
 * period. A caller that may not sleep (zswap's stores) gets a large one
 * only from kmalloc, several pages at once: when that fails, @top_work
 * grows it, so that the next allocations find it grown (and from 3/4 of a
 * top level whose successor takes more than a page, the table asks for
 * that ahead: afm_zt_take_page()). Return: 0 (also when someone else grew
 * it meanwhile), or -ENOMEM.
 */
int afm_zt_grow(struct afm_zs_pool *zs, struct afm_zs_table *t,
		unsigned long pg, gfp_t gfp)
{
	int err = afm_should_fail(zs->pool) ? -ENOMEM :
		  afm_zt_grow_to(zs, t, pg, gfp);

	if (err >= 0)
		return 0;
	if (!gfpflags_allow_blocking(gfp))
		afm_zt_grow_later(zs, t, pg);
	return err;
}

/*
 * Have @top_work grow the top level of @t to reach table page @pg, with
 * GFP_KERNEL: a large top level is then not asked of kmalloc by a caller
 * that may not sleep. Any context.
 */
void afm_zt_grow_later(struct afm_zs_pool *zs, struct afm_zs_table *t,
		       unsigned long pg)
{
	unsigned long want = READ_ONCE(t->want);

	/*
	 * The largest asked for wins; a successful cmpxchg() orders it
	 * before queue_work()'s look at the work's pending bit, so that a
	 * work already pending takes it (its xchg() is ordered too).
	 */
	while (want < pg && !try_cmpxchg(&t->want, &want, pg))
		;
	queue_work(system_unbound_wq, &zs->top_work);
}

/* @top_work: the top levels afm_zt_grow_later() asked for. */
void afm_zs_top_work(struct work_struct *work)
{
	struct afm_zs_pool *zs = container_of(work, struct afm_zs_pool,
					      top_work);
	struct afm_zs_table *tabs[] = { &zs->htab, &zs->dtab, &zs->rtab };
	unsigned long pg;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tabs); i++) {
		pg = xchg(&tabs[i]->want, 0);
		if (pg && afm_zt_grow_to(zs, tabs[i], pg, GFP_KERNEL) > 0) {
			afm_zs_lock(zs);
			zs->st.tops_later++;
			afm_zs_unlock(zs);
		}
	}
}

/* afm_zt_need() of a table page. */
unsigned int afm_zt_need_page(const struct afm_zs_table *t, unsigned long pg,
			      unsigned int *blocks)
{
	unsigned long *dir = afm_zt_top(t)->dir[afm_zt_d(t, pg)].dir;

	lockdep_assert_held(t->lock);
	if (!dir) {
		(*blocks)++;
		return 1;
	}
	return dir[afm_zt_di(t, pg)] ? 0 : 1;
}

/*
 * Directory pages needed for @blocks new directory blocks (afm_zt_need();
 * fewer than AFM_ZT_DIRS_PER_PAGE): none if the first directory page has
 * that many free (afm_zt_dir_new() takes them from it; a block cooling
 * down now may be free by then, none free now may be in use), else one.
 * Pool lock held.
 */
unsigned int afm_zs_dir_need(struct afm_zs_pool *zs,
			     unsigned int blocks)
{
	struct page *page;

	lockdep_assert_held(&zs->lock);
	if (!blocks)
		return 0;
	page = list_first_entry_or_null(&zs->dpages, struct page, lru);
	return !page || hweight_long(afm_zt_dir_avail(page)) < blocks;
}

/* afm_zt_take() from table page @pg (not the magazine). */
unsigned long afm_zt_take_page(struct afm_zs_pool *zs, struct afm_zs_table *t,
			       unsigned long pg, struct afm_zs_spare *sp)
{
	struct afm_zt_top *top = afm_zt_top(t);
	struct afm_zt_dent *de = &top->dir[afm_zt_d(t, pg)];
	unsigned long *dir, ent, slot, i;
	struct page *tp;
	void *base;

	lockdep_assert_held(&zs->lock);
	dir = de->dir;
	if (!dir) {
		dir = afm_zt_dir_new(zs, sp);
		/*
		 * Published after its clearing: a lockless lookup of a stale
		 * handle (afm_zt_dir()) reads zeroes, not the page's old
		 * bytes.
		 */
		smp_store_release(&de->dir, dir);
		t->dirs++;
		/*
		 * A quarter of a large top level left: @top_work grows it
		 * now, where an allocation may sleep (afm_zt_grow()).
		 */
		if (top->size >= AFM_ZT_AHEAD_DIRS &&
		    afm_zt_d(t, pg) >= top->size - top->size / 4)
			afm_zt_grow_later(zs, t, top->size << t->dshift);
	}
	ent = dir[afm_zt_di(t, pg)];
	if (!ent) {
		base = afm_zs_meta_page(zs, sp);
		for (i = 0; i < t->per_page; i++) {
			memset(base + i * t->slot_size, 0, t->slot_size);
			afm_zt_link_set(base + i * t->slot_size,
					i + 1 < t->per_page ? i + 2 : 0);
		}
		tp = virt_to_page(base);
		tp->index = 1;
		ent = (unsigned long)base | AFM_ZT_OPEN;
		/* After its slots' clearing, as the directory above. */
		smp_store_release(&dir[afm_zt_di(t, pg)], ent);
		de->pages++;
		de->open++;
		t->pages++;
		t->end = max(t->end, pg + 1);
	}
	base = (void *)(ent & ~AFM_ZT_OPEN);
	tp = virt_to_page(base);
	slot = tp->index - 1;
	tp->index = afm_zt_link_get(base + slot * t->slot_size);
	set_page_private(tp, page_private(tp) + 1);
	if ((ent & AFM_ZT_OPEN) &&
	    t->per_page - page_private(tp) < t->open_free) {
		WRITE_ONCE(dir[afm_zt_di(t, pg)], ent & ~AFM_ZT_OPEN);
		de->open--;
	}
	t->used++;
	return (pg << t->pshift) + slot;
}

/*
 * Give slot @idx back to its table page, and the page back when it was its
 * last used slot, and the directory block with it. Pool lock held.
 */
static void afm_zt_release(struct afm_zs_pool *zs, struct afm_zs_table *t,
			   unsigned long idx)
{
	unsigned long pg = idx >> t->pshift, slot = idx & (t->per_page - 1);
	struct afm_zt_top *top = afm_zt_top(t);
	struct afm_zt_dent *de = &top->dir[afm_zt_d(t, pg)];
	unsigned long *dir = de->dir;
	unsigned long ent = dir[afm_zt_di(t, pg)];
	void *base = (void *)(ent & ~AFM_ZT_OPEN);
	struct page *tp = virt_to_page(base);

	lockdep_assert_held(t->lock);
	memset(base + slot * t->slot_size, 0, t->slot_size);
	afm_zt_link_set(base + slot * t->slot_size, tp->index);
	tp->index = slot + 1;
	set_page_private(tp, page_private(tp) - 1);
	if (!(ent & AFM_ZT_OPEN) &&
	    t->per_page - page_private(tp) >= t->open_free) {
		ent |= AFM_ZT_OPEN;
		de->open++;
		t->hint = min(t->hint, pg);
	}
	if (page_private(tp)) {
		WRITE_ONCE(dir[afm_zt_di(t, pg)], ent);
		return;
	}
	WRITE_ONCE(dir[afm_zt_di(t, pg)], 0);
	de->pages--;
	de->open--;
	t->pages--;
	afm_zs_meta_page_free(zs, base);
	if (de->pages)
		return;
	WRITE_ONCE(de->dir, NULL);
	t->dirs--;
	afm_zt_dir_free(zs, dir);
}

/*
 * Give every slot of the magazine of @t back to its table page (pages that
 * empty go back to the page allocator). Pool lock held.
 */
void afm_zt_mag_drain(struct afm_zs_pool *zs, struct afm_zs_table *t)
{
	lockdep_assert_held(&zs->lock);
	while (t->mag_nr)
		afm_zt_release(zs, t, t->mag[--t->mag_nr]);
}

/*
 * afm_zt_put() when the slot does not go into the magazine (@t->used
 * already counts @idx out): back to its table page, and the magazine too
 * if the table is empty or free-mostly. Pool lock held.
 */
void afm_zt_put_page(struct afm_zs_pool *zs, struct afm_zs_table *t,
		     unsigned long idx)
{
	lockdep_assert_held(&zs->lock);
	afm_zt_release(zs, t, idx);
	if (!t->used || t->fr >= t->phase_on)
		afm_zt_mag_drain(zs, t);
}

/*
 * Free every page of a table, whatever its slots hold, and its top level
 * (pool teardown: nobody else looks at it any more; the pool lock is taken
 * for the directory pages, which the shard's tables share).
 */
void afm_zt_destroy(struct afm_zs_pool *zs, struct afm_zs_table *t)
{
	struct afm_zt_top *top;
	unsigned long i, d;

	afm_zs_lock(zs);
	top = afm_zt_top(t);
	for (i = 0; top && i < top->size; i++) {
		unsigned long *dir = top->dir[i].dir;

		if (!dir)
			continue;
		for (d = 0; d < 1UL << t->dshift; d++) {
			if (dir[d])
				afm_zs_meta_page_free(zs, (void *)(dir[d] &
							~AFM_ZT_OPEN));
		}
		afm_zt_dir_free(zs, dir);
	}
	RCU_INIT_POINTER(t->top, NULL);
	t->pages = 0;
	t->dirs = 0;
	t->used = 0;
	t->hint = 0;
	t->cur = ULONG_MAX;
	t->mag_nr = 0;
	t->wr = 0;
	t->fr = 0;
	afm_zs_unlock(zs);
	kvfree(top);
}

/* The first top level of table @t. Return: 0 or -ENOMEM. */
int afm_zt_init(struct afm_zs_table *t)
{
	struct afm_zt_top *top;

	top = kzalloc(struct_size(top, dir, AFM_ZT_TOP_MIN), GFP_KERNEL);
	if (!top)
		return -ENOMEM;
	top->size = AFM_ZT_TOP_MIN;
	RCU_INIT_POINTER(t->top, top);
	return 0;
}
