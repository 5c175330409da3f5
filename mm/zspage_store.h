/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * afmalloc zspage store internals, shared by zspage_store.c and its KUnit
 * suite. See the comment at the top of zspage_store.c for the design.
 */
#ifndef _MM_AFMALLOC_ZSPAGE_STORE_H
#define _MM_AFMALLOC_ZSPAGE_STORE_H

#include <linux/bits.h>
#include <linux/mm.h>
#include <linux/types.h>

#include "afmalloc_internal.h"

/*
 * Pages per zspage, as a power of two, and the zspage size in bytes: 32 KiB
 * whatever the page size (8 pages of 4 KiB, 2 of 16 KiB), so that offsets
 * in a zspage fit 16 bits (afm_zs_off_t: descriptors of a cache line, hole
 * records of 16 bytes). See "Why 8 pages" in zspage_store.c.
 */
#define AFM_ZS_ORDER		(15 - PAGE_SHIFT)
#define AFM_ZS_PAGES		BIT(AFM_ZS_ORDER)
#define AFM_ZS_SIZE		(AFM_ZS_PAGES << PAGE_SHIFT)

/* Free slots a table keeps at hand (struct afm_zs_table, @mag). */
#define AFM_ZT_MAG		16
/*
 * Write-mostly (struct afm_zs_table, @wr): each slot taken adds 1 to @wr,
 * each put takes AFM_ZT_WR_PUT off it (not below 0), and it stays at most
 * AFM_ZT_WR_MAX; from AFM_ZT_WR_ON on, the table is taking more than
 * AFM_ZT_WR_PUT slots for every one it gets back (a fill, an untar), and
 * a freed slot of a page that is neither open nor current goes back to
 * its page instead of the magazine (afm_zt_put()). Free-mostly (@fr) is
 * the same count with puts and takes swapped: from AFM_ZT_WR_ON on, the
 * table is giving back more than AFM_ZT_WR_PUT slots for every one it
 * takes (files removed, zswap's writeback), and every freed slot goes
 * back to its page, the magazine's too. Under churn (as many puts as
 * takes) both fall to 0 within AFM_ZT_WR_MAX / (AFM_ZT_WR_PUT - 1) pairs,
 * and the magazine serves them.
 */
#define AFM_ZT_WR_PUT		2
#define AFM_ZT_WR_ON		64
#define AFM_ZT_WR_MAX		128
/* struct afm_zs_table @phase_on that the counts never reach: rules off. */
#define AFM_ZT_PHASE_OFF	U8_MAX

/**
 * struct afm_zs_counters - a snapshot of zspage store counters (KUnit hook)
 * @objects: live objects.
 * @live_bytes: sum of their sizes.
 * @pad_bytes: sum of their extents' alignment padding (zspage_align), and
 *	of what solo zspages hold beyond their objects.
 * @solo_objs: objects in solo zspages (a page each, no header).
 * @zspages: zspages holding data (not counting those waiting to be freed).
 * @dead_zspages: empty zspages whose pages wait for the deferred free.
 * @hole_bytes: free bytes inside zspages below their fill offsets, slack
 *	in extents included (reused by allocation while on the hole index,
 *	and by compaction).
 * @tail_bytes: free bytes at the ends of zspages, reused by allocation.
 * @data_pages: pages of zspages, dead ones included.
 * @table_pages: handle table pages.
 * @desc_pages: descriptor table pages.
 * @hole_pages: hole table pages (records of the hole index).
 * @dir_pages: directory pages (the three tables' directory blocks).
 * @total_pages: every page the store holds, afm_get_total_pages().
 * @migrated: zspage pages migrated: contents moved to a new page by the
 *	migrate_page callback (not a refusal, a putback or a page freed while
 *	isolated).
 * @migrate_busy: migrate_page calls refused with -EAGAIN (asynchronous,
 *	zspage or shard busy).
 * @isolated: pages isolated for migration.
 * @putback: isolated pages put back (migration refused or given up).
 * @isolated_freed: pages of zspages freed while isolated for migration
 *	(the migration core frees them without calling migrate_page).
 * @auto_runs: automatic compaction runs (worker).
 * @auto_freed: pages freed by those runs.
 * @auto_delayed: runs queued to start later than at once, AFM_ZS_AUTO_GAP
 *	not being over since the start of the shard's last run.
 * @passes: compaction passes, all callers.
 * @moved: objects moved by compaction.
 * @moved_bytes: their bytes (copied once each).
 * @moved_hole: of @moved, objects moved into holes (not to tails).
 * @moved_new: zspages compaction made for the objects it moved.
 * @deferred_frees: empty zspages whose pages could not all be locked at
 *	once, left to the free worker (afm_zs_release()).
 * @walked: extents (objects and holes) compaction looked at in its
 *	victims: its work besides the copying, whatever the pool's size.
 * @looked: handle entries compaction looked at to find the owners of
 *	those extents (one each while handles fit the header's bits).
 * @hole_reused: objects placed in holes of the hole index.
 * @rest_joined: of those, objects whose hole's rest was joined to the
 *	indexed hole after it (afm_zs_rest_join()).
 * @donated: of those, objects allocated on behalf of another shard (the
 *	shard was a donor, see struct afm_zs_set).
 * @hole_recorded: bytes of the holes on the hole index now.
 * @pending: extents of deferred frees not merged yet (counted in
 *	@hole_bytes, not in @hole_recorded; see afm_zs_test_flush()).
 * @runs: zspages made whose pages were a run of PFNs.
 * @chains: zspages made whose pages were not.
 * @blocks: sets of zspage pages allocated as one block (zspage_contig).
 * @rfreed: frees that found the pool lock held, or were of another
 *	shard than the freeing CPU's, and were left to its holder, who freed
 *	them (see "Frees that find the lock held" in zspage_alloc.c).
 * @rfree_waiting: such frees not freed yet (live in every other count).
 * @top_dirs: directories the largest top level of a shard's handle table
 *	holds now (the pool's, not a sum: a test's shard's).
 * @tops_later: top levels of the shard's tables its worker grew (for an
 *	allocation that could not sleep, or ahead of need: afm_zt_grow()).
 * @migrate_yields: times a compaction pass let go of the pool lock early
 *	for a page migration waiting for it.
 * @migrate_waiting: page migrations waiting for the pool lock now.
 * @shards_active: shards allocation takes now (struct afm_zs_set: the
 *	pool's, not a sum).
 * @shards_created: shards that exist now (the pool's, not a sum).
 */
struct afm_zs_counters {
	unsigned long objects;
	unsigned long live_bytes;
	unsigned long pad_bytes;
	unsigned long solo_objs;
	unsigned long zspages;
	unsigned long dead_zspages;
	unsigned long hole_bytes;
	unsigned long tail_bytes;
	unsigned long data_pages;
	unsigned long table_pages;
	unsigned long desc_pages;
	unsigned long hole_pages;
	unsigned long dir_pages;
	unsigned long total_pages;
	unsigned long migrated;
	unsigned long migrate_busy;
	unsigned long isolated;
	unsigned long putback;
	unsigned long isolated_freed;
	unsigned long auto_runs;
	unsigned long auto_freed;
	unsigned long auto_delayed;
	unsigned long passes;
	unsigned long moved;
	unsigned long moved_bytes;
	unsigned long moved_hole;
	unsigned long moved_new;
	unsigned long deferred_frees;
	unsigned long walked;
	unsigned long looked;
	unsigned long hole_reused;
	unsigned long rest_joined;
	unsigned long donated;
	unsigned long hole_recorded;
	unsigned long pending;
	unsigned long runs;
	unsigned long chains;
	unsigned long blocks;
	unsigned long rfreed;
	unsigned long rfree_waiting;
	unsigned long top_dirs;
	unsigned long tops_later;
	unsigned long migrate_yields;
	unsigned long migrate_waiting;
	unsigned long shards_active;
	unsigned long shards_created;
};

/**
 * struct afm_zs_obj_info - where an object lives (KUnit hook)
 * @shard: its shard.
 * @zspage_id: id of its zspage, unique in the pool (its id in the shard,
 *	with the shard number in the low bits).
 * @offset: offset of its first byte in the zspage (its header lies in
 *	the afm_zs_header_bytes() bytes before it; 0 in a solo zspage,
 *	which has none).
 * @size: its size.
 * @page: the page holding its first byte.
 * @pins: current pin count.
 * @in_place: its zspage's bytes lie back to back in the linear map
 *	(its pages are a run, no highmem): mapped in place even when it
 *	crosses a page boundary.
 */
struct afm_zs_obj_info {
	unsigned int shard;
	unsigned long zspage_id;
	unsigned int offset;
	unsigned int size;
	struct page *page;
	unsigned int pins;
	bool in_place;
};

/* What afm_zs_test_quiet() keeps the kernel from doing to a pool. */
#define AFM_ZS_QUIET_SHRINKER	BIT(0)	/* shrink_slab() */
#define AFM_ZS_QUIET_MIGRATION	BIT(1)	/* isolation for page migration */
#define AFM_ZS_QUIET_RUNS	BIT(2)	/* new zspages as runs (struct afm_zspage) */
#define AFM_ZS_QUIET_RFREE	BIT(3)	/* frees wait for a lock held elsewhere */
#define AFM_ZS_QUIET_AUTO	BIT(4)	/* automatic runs only when flushed */
#define AFM_ZS_QUIET_RTAB	BIT(5)	/* hole table grown by a malloc only */
#define AFM_ZS_QUIET_RWORK	BIT(6)	/* frees left to the holder: no worker */

/* KUnit hooks (EXPORT_SYMBOL_IF_KUNIT), CONFIG_AFMALLOC_KUNIT_TEST only. */
void afm_zs_get_counters(struct afm_pool *pool, struct afm_zs_counters *c);
unsigned int afm_zs_test_audit(struct afm_pool *pool,
			       struct afm_zs_counters *c,
			       struct afm_zs_counters *rc);
void afm_zs_test_quiet(struct afm_pool *pool, unsigned int what);
bool afm_zs_test_isolate_page(struct page *page);
int afm_zs_obj_info(struct afm_pool *pool, unsigned long handle,
		    struct afm_zs_obj_info *info);
unsigned int afm_zs_test_bad_holes(struct afm_pool *pool, unsigned int *nr);
unsigned int afm_zs_test_flush(struct afm_pool *pool);
unsigned int afm_zs_test_pend_max(void);
void afm_zs_test_auto_next(struct afm_pool *pool, long delta);
unsigned int afm_zs_test_rfree_max(void);
unsigned int afm_zs_test_rfree_irqs_off(void);
unsigned int afm_zs_test_rfree_remote_max(void);
unsigned int afm_zs_test_top_ahead(void);
bool afm_zs_test_pin(struct afm_pool *pool, unsigned long handle);
void afm_zs_test_unpin(struct afm_pool *pool, unsigned long handle);

/**
 * struct afm_zs_test_stale - what afm_zs_test_free_in_lookup() read
 * @live: the entry, read after the free, still says live.
 * @page_held: its table page was not yet back to the page allocator.
 * @dir_set: the directory block read before the free names a table page.
 * @handle: the object allocated after the free, or 0.
 */
struct afm_zs_test_stale {
	bool live;
	bool page_held;
	bool dir_set;
	unsigned long handle;
};

bool afm_zs_test_free_in_lookup(struct afm_pool *pool, unsigned long handle,
				size_t size, struct afm_zs_test_stale *seen);
void *afm_zs_test_dir_take(struct afm_pool *pool);
void afm_zs_test_dir_give(struct afm_pool *pool, void *dir);
bool afm_zs_test_dir_cool(struct afm_pool *pool);
bool afm_zs_test_hold_zspage(struct afm_pool *pool, unsigned long handle);
void afm_zs_test_release_zspage(struct afm_pool *pool, unsigned long handle);
void afm_zs_test_lock_shard(struct afm_pool *pool, unsigned long handle);
void afm_zs_test_unlock_shard(struct afm_pool *pool, unsigned long handle);
bool afm_zs_test_shard_free(struct afm_pool *pool, unsigned int shard);
int afm_zs_test_compact_hold(struct afm_pool *pool, unsigned int shard,
			     bool hold);
void afm_zs_test_move_hook(struct afm_pool *pool,
			   void (*fn)(void *arg, unsigned long zspage_id,
				      unsigned int offset,
				      unsigned long dst_id),
			   void *arg);
void afm_zs_test_locked_copies(struct afm_pool *pool, bool on);
bool afm_zs_test_gate_busy(struct afm_pool *pool, unsigned long zspage_id);
bool afm_zs_test_gate_open(struct afm_pool *pool, unsigned long zspage_id);
void afm_zs_test_gate_wait_hook(struct afm_pool *pool,
				void (*fn)(void *arg, unsigned long zspage_id,
					   bool lock),
				void *arg);
bool afm_zs_test_pin_spun(struct afm_pool *pool, unsigned long handle);
void afm_zs_flush_work(struct afm_pool *pool);
void afm_zs_test_run_auto(struct afm_pool *pool);
struct page *afm_zs_test_get_page(struct afm_pool *pool, unsigned long handle);
unsigned long afm_zs_shrinker_count(struct afm_pool *pool);
unsigned long afm_zs_shrinker_scan(struct afm_pool *pool,
				   unsigned long nr_pages);
void afm_zs_set_auto_permille(unsigned int permille);
unsigned int afm_zs_test_set_solo_ext(unsigned int ext);
bool afm_zs_set_compact_holes(bool on);
unsigned int afm_zs_get_auto_permille(void);
unsigned int afm_zs_entry_bytes(void);
unsigned int afm_zs_header_bytes(void);
unsigned int afm_zs_max_extent(void);
int afm_zs_test_set_idx_bits(struct afm_pool *pool, unsigned int bits);
int afm_zs_test_small_dirs(struct afm_pool *pool, unsigned int shift);
int afm_zs_test_handle_mag(struct afm_pool *pool, unsigned int nr);
int afm_zs_test_handle_phases(struct afm_pool *pool, bool on);
void afm_zs_set_shards(unsigned int nr);
unsigned int afm_zs_get_shards(void);
int afm_zs_set_align(unsigned int align);
unsigned int afm_zs_get_align(void);
int afm_zs_test_alloc_shard(struct afm_pool *pool, int shard);
void afm_zs_test_alloc_cpu(struct afm_pool *pool, int cpu);
unsigned int afm_zs_test_contended(struct afm_pool *pool, unsigned int n,
				   unsigned long now);
unsigned int afm_zs_test_grow_after(unsigned long *window);
void afm_zs_test_grow_hold(struct afm_pool *pool, bool hold);
void afm_zs_test_busy(struct afm_pool *pool, bool busy);
void afm_zs_test_migrate_wait(struct afm_pool *pool, int delta);
bool afm_zs_test_set_contig(bool on);
bool afm_zs_test_set_short(bool on);
bool afm_zs_test_set_shards_grow(bool on);

#endif /* _MM_AFMALLOC_ZSPAGE_STORE_H */
