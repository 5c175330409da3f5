// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: objects packed back to back, without size classes,
 * into zspages of AFM_ZS_PAGES order-0 pages, behind a pool handle table.
 * Compaction evacuates sparse zspages; zspage pages are movable.
 *
 * Object model
 * ------------
 * A zspage is AFM_ZS_PAGES (8) order-0 pages allocated with the caller's gfp
 * flags (zram's __GFP_HIGHMEM | __GFP_MOVABLE are honoured: data is only
 * ever reached through kmap_local_page()), never a high-order allocation.
 * Its bytes form one AFM_ZS_SIZE (32 KiB) address space in which extents
 * lie back to back, byte aligned (compressed data needs no alignment), and
 * may cross page boundaries. An object's extent is a header of AFM_ZS_HDR
 * (5) bytes followed by its data (see "Reverse map"). A zspage is filled
 * from offset 0 upwards: the bytes from its fill offset to its end are its
 * "tail"; bytes below the fill offset not in live objects' extents are
 * "holes".
 *
 * Why 8 pages: the tail of a zspage is reused (below), so the length does
 * not cost tail waste as in zsmalloc; it sets the descriptor cost (72 bytes
 * per zspage: 0.22% of 32 KiB; 0.44% with 4 pages, 0.11% with 16), the unit
 * compaction frees (32 KiB), and the burst of order-0 allocations needed
 * when a new zspage opens (8 pages, like zsmalloc's longest chain). The
 * fraction of objects crossing a page boundary does not depend on it.
 *
 * Placement (reuse policy)
 * ------------------------
 * Allocation appends the object at the fill offset of the zspage with the
 * smallest tail that fits it (best fit over tails, bucketed by tail size in
 * AFM_ZS_GRAIN steps below PAGE_SIZE and in pages above); only when no tail
 * fits is a new zspage opened. A brand-new zspage has the largest tail, so
 * consecutive allocations fill it in order (objects written together lie
 * together and tend to die together, which frees whole zspages without
 * copying), while the tails left at the end of older zspages are topped up
 * by objects that fit them, so tails do not accumulate as waste. Freeing
 * the object just below the fill offset gives its bytes back to the tail;
 * any other free leaves a hole. There is no free-extent list: compaction
 * reclaims holes by evacuating the zspages with the most holes,
 * re-appending their live objects elsewhere, and freeing the emptied
 * zspages. This is a log-structured store whose cleaner is compaction;
 * only a bounded cache of recent holes (below) is reused directly.
 *
 * Before looking at tails, allocation tries the hole cache: a few recent
 * holes per size range (AFM_ZS_HOLE_*, in the pool, under the pool lock),
 * recorded by frees. Allocation takes the best fit among them (the
 * smallest that holds the object in its size row, else in the next row
 * with any); the rest of the hole is recorded again unless it is smaller
 * than AFM_ZS_HOLE_MIN, then it stays a hole (with a header of its own;
 * a hole is only taken when it fits the extent exactly or leaves room for
 * that header). Without it, an overwrite
 * workload (random frees and allocations of similar sizes, as zram under
 * swap or fio) turns every freed byte into a hole that only compaction can
 * give back, copying up to 3 live bytes per byte; with it, most writes go
 * where an object was just freed, as in zsmalloc's size classes, and
 * compaction is left with the slack. A zspage's records are dropped when
 * it is released or picked as a victim, so a record never outlives the
 * bytes it describes (a released zspage's id is reused; a victim's holes
 * go with it); bulk frees (file removal) still leave whole zspages to
 * compaction, as before.
 *
 * Handle encoding
 * ---------------
 * A handle is 1 + the index of an 8-byte entry in the pool's handle table.
 * The table is a top array of directory pages, each holding AFM_ZT_PTRS
 * pointers to table pages of PAGE_SIZE / 8 entries (262144 entries per
 * directory with 4 KiB pages); every directory and table page is an
 * order-0 page owned by the pool and counted in afm_get_total_pages(). The
 * top array (kmalloc, shown in aux_bytes) starts with AFM_ZT_TOP_MIN
 * directories and is replaced by one twice as large when allocation needs
 * a directory beyond it (afm_zt_grow(), outside the pool lock; lockless
 * lookups read it under RCU), so the table has no fixed capacity; empty
 * table and directory pages go back to the page allocator. Free entries of a
 * table page are chained through the entries. Entries are taken from one
 * current table page until it is full; then the lowest-indexed table page
 * with at least a quarter of its entries free (or a missing one) becomes
 * current. Handles allocated together thus share table pages and, as the
 * objects written together tend to be freed together (a file, a directory),
 * whole table pages empty out and go back to the page allocator; pages
 * more than three quarters full are not reopened for a few entries.
 * A live entry packs, from bit 0: LIVE, LOCK (compaction is moving the
 * object), 6 bits of pin count, size - 1 (PAGE_SHIFT bits), the offset in
 * the zspage (PAGE_SHIFT + AFM_ZS_ORDER bits) and the zspage id (the rest:
 * 29 bits with 4 KiB pages: 2^29 zspages are 16 TiB, beyond any pool
 * this is built for, and the descriptor table refuses more, so that is the
 * only bound on a pool). A free entry has LIVE clear and holds the
 * index of the next free entry of its page. Zspage ids index a descriptor
 * table built the same way (72-byte slots, 56 per page). A descriptor
 * holds no page array: its first page and, in each data page's ->index,
 * the next one chain the pages (as zsmalloc does); migration relinks.
 * Error values are never valid handles: handles stay below 2^63.
 *
 * Reverse map
 * -----------
 * Each object's extent starts with a header: its length (header included,
 * AFM_ZH_LEN_BITS bits) and its handle modulo 2^AFM_ZH_IDX_BITS (27 bits
 * with 4 KiB pages), little endian. Its entry holds the offset of the data,
 * just after the header. A free leaves the header in place, so a hole made
 * by a free still says how long it is; when allocation takes part of a
 * recorded hole, the rest gets a header with handle bits 0. So the extents
 * of a zspage tile it from 0 to its fill offset, and compaction finds a
 * victim's objects by walking them (afm_zs_evacuate()): an extent is an
 * object when the entry of a handle with its header's bits is live and
 * points to it (afm_zs_owner(): one table lookup per 2^27 handles in the
 * table), else a hole. Headers are written under the pool lock at
 * allocation and travel with the object when compaction moves it; the
 * walk runs under the pool lock, and a victim's extents do not change
 * while it is one (no allocation goes to it; a free leaves its header).
 *
 * Per-object cost (64-bit, 4 KiB pages)
 * -------------------------------------
 * footprint = size + 5 (header) + 8 (entry) + (size + 5) * 73 / 32768
 * (descriptor share), plus holes until compaction and unfilled tails. No
 * size-class rounding, no alignment padding. At the untar benchmark's mean
 * object size (1300 bytes) that is 0.38% for headers + 0.62% for entries +
 * 0.22% for descriptors; zsmalloc spends 16 bytes per object (handle slot
 * and object header, 1.2%) plus class rounding (~8 bytes, 0.6%) plus tail
 * waste. The table and directory pages themselves, and up to a few bytes
 * per zspage of tails too small for any object, come on top.
 * afm_huge_class_size() is the smallest size whose footprint reaches
 * PAGE_SIZE (4073).
 *
 * Compaction
 * ----------
 * Live zspages with at least AFM_ZS_MIN_HOLES bytes of holes are on hole
 * lists by hole bytes (AFM_ZS_MIN_HOLES wide), updated as their holes
 * change. A pass (afm_zs_pass()) takes victims from the top list down,
 * most holes first, up to AFM_ZS_MAX_VICTIMS, as many as its goal needs;
 * marks them victims (no allocation goes to them); walks each victim's
 * extents, moving every unpinned object to the best-fitting tail of a
 * non-victim zspage (the densest that fits, so survivors fill the tails of
 * full zspages first) or to a new zspage; and frees each victim as it
 * empties. Its cost is the victims' extents and the bytes it copies,
 * whatever the size of the pool: no pass looks at a zspage or an entry
 * that is not a victim's. The pool lock is dropped every 256 extents (or
 * 16 moves), never with an object half moved.
 * Callers: afm_compact() (every zspage with AFM_ZS_MIN_HOLES of holes),
 * the pool's shrinker (count: the hole bytes of the listed zspages, in
 * pages, what scan can take; scan: that many pages), and two automatic
 * runs queued by free. When holes exceed the trigger (zspage_auto_permille
 * thousandths of the live bytes, default 1, and AFM_ZS_AUTO_MIN zspages),
 * the holes outside the hole cache are above it too (the recorded ones are
 * about to be reused) and some zspage has a quarter of its bytes in holes,
 * the worker runs at once: down to half the trigger, taking zspages with a
 * quarter of their bytes in holes (at most 3 bytes copied per byte given
 * back). Otherwise, above the trigger, the rest run comes AFM_ZS_LATE
 * after the last allocation: it counts every hole and also takes zspages
 * with an eighth of their bytes in holes (AFM_ZS_REST_MIN_HOLES), so that
 * once writes stop, thin holes come down too.
 *
 * Page accounting
 * ---------------
 * afm_get_total_pages() counts, exactly: zspage pages (including those of
 * empty zspages waiting for the deferred free), handle table pages,
 * descriptor table pages and the directory pages of both tables. Nothing is
 * allocated from a slab cache except the pool structure itself and the
 * compaction candidate array (aux_bytes).
 *
 * Locking, in nesting order
 * -------------------------
 *   afm_pool.compact_lock (mutex)   one compaction pass at a time (manual,
 *                                   automatic worker, shrinker: trylock).
 *   page lock (PG_locked)           taken by the migration core around
 *                                   isolate/migrate/putback; by the
 *                                   deferred free with lock_page().
 *   afm_zs_pool.lock (spinlock_bh)  tables, tail buckets, the hole cache,
 *                                   zspage counters and flags, every entry
 *                                   change except pins. Not taken by
 *                                   map, read, write or migration.
 *                                   Bottom halves are disabled while it
 *                                   is held (afm_zs_lock()), so free may
 *                                   run in softirq context; free may also
 *                                   run with hardirqs off (zram as swap),
 *                                   then bottom halves are left alone.
 *   entry LOCK bit                  compaction moving one object: only set
 *                                   under the pool lock, with preemption and
 *                                   bottom halves disabled, for one copy.
 *   zspage gate (afm_zspage.gate)   shared: accessors (map, read, write,
 *                                   header reads and writes,
 *                                   compaction copying) keep the zspage's
 *                                   page array stable; exclusive: migration
 *                                   replacing a page, and freeing a zspage.
 *                                   Held with preemption (exclusive: and
 *                                   bottom halves) disabled, never across a
 *                                   sleep.
 * The entry LOCK bit and pins, and the gate, are lockdep maps
 * (afm_ze_map, afm_zg_map): shared sides as recursive read locks, LOCK and
 * the exclusive gate as the trylocks they are.
 * Accessors pin the entry (a cmpxchg on the pin count, spinning while LOCK
 * is set), which fixes the object's location and keeps its zspage alive,
 * then take the gate shared. A pinned object is never moved: compaction
 * sets LOCK only with a cmpxchg from an unpinned entry and skips pinned
 * ones. Migration never waits for the pool lock; it takes the gate
 * exclusively with a trylock (MIGRATE_ASYNC) or up to AFM_ZG_TRIES of them,
 * preemptible between them, and returns -EAGAIN when the zspage stays
 * busy; accessors never wait for a migrator that has not got it. Freeing a
 * zspage trylocks the gate and then every page lock (as zsmalloc's
 * trylock_zspage()), clears __PageMovable under the page lock and drops its
 * page reference; if any trylock fails the zspage goes to a worker that
 * sleeps in lock_page(). A page isolated for migration when its zspage is
 * freed is then owned by the migration core, which frees it without
 * calling migrate_page (counted apart: a page migrated is one whose bytes
 * migrate_page moved to a new page).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/bottom_half.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/list.h>
#include <linux/migrate.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pagemap.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <kunit/visibility.h>

#include "zspage_store.h"

/* Entries: see "Handle encoding" above. */
#define AFM_ZE_LIVE		BIT_ULL(0)
#define AFM_ZE_LOCK		BIT_ULL(1)
#define AFM_ZE_PIN_SHIFT	2
#define AFM_ZE_PIN_BITS		6
#define AFM_ZE_PIN_ONE		BIT_ULL(AFM_ZE_PIN_SHIFT)
#define AFM_ZE_PINS		GENMASK_ULL(AFM_ZE_PIN_SHIFT + AFM_ZE_PIN_BITS - 1, \
					    AFM_ZE_PIN_SHIFT)
#define AFM_ZE_SIZE_SHIFT	(AFM_ZE_PIN_SHIFT + AFM_ZE_PIN_BITS)
#define AFM_ZE_OFF_SHIFT	(AFM_ZE_SIZE_SHIFT + PAGE_SHIFT)
#define AFM_ZE_ID_SHIFT		(AFM_ZE_OFF_SHIFT + PAGE_SHIFT + AFM_ZS_ORDER)
#define AFM_ZE_ID_BITS		(64 - AFM_ZE_ID_SHIFT)

/* Slot tables (handles and descriptors). */
#define AFM_ZT_TOP_MIN		1	/* directories of a new top level */
#define AFM_ZT_PTRS		(PAGE_SIZE / sizeof(unsigned long))
#define AFM_ZT_OPEN		1UL	/* directory entry: page open for allocation */
#define AFM_ZH_PER_PAGE		(PAGE_SIZE / sizeof(u64))
#define AFM_ZD_PER_PAGE		(PAGE_SIZE / sizeof(struct afm_zspage))

/* Tail buckets: AFM_ZS_GRAIN wide below PAGE_SIZE, one per page above. */
#define AFM_ZS_SMALL_BUCKETS	128
#define AFM_ZS_GRAIN		(PAGE_SIZE / AFM_ZS_SMALL_BUCKETS)
#define AFM_ZS_NR_BUCKETS	(AFM_ZS_SMALL_BUCKETS + AFM_ZS_PAGES)
#define AFM_ZS_NO_BUCKET	U8_MAX
/* Entries of the best-fitting bucket tried before taking a larger one. */
#define AFM_ZS_FIT_TRIES	4

/*
 * Hole cache (see "Placement"): up to AFM_ZS_HOLE_SLOTS recent holes per
 * AFM_ZS_HOLE_WIDTH bytes of hole size (8 KiB per pool with 4 KiB pages).
 * Holes smaller than AFM_ZS_HOLE_MIN are not recorded. The sizes were
 * chosen by simulating random replacement with the untar benchmark's LZ4
 * size distribution: 4 slots of 64 rows left 17% of the bytes written to
 * go to tails (so to compaction), 32 of 32 rows 3%.
 */
#define AFM_ZS_HOLE_BUCKETS	32
#define AFM_ZS_HOLE_WIDTH	(PAGE_SIZE / AFM_ZS_HOLE_BUCKETS)
#define AFM_ZS_HOLE_SLOTS	32
#define AFM_ZS_HOLE_MIN		16

/* Zspage flags, under the pool lock. */
#define AFM_ZS_USED		BIT(0)	/* descriptor slot in use */
#define AFM_ZS_VICTIM		BIT(1)	/* being evacuated by compaction */
#define AFM_ZS_DEAD		BIT(2)	/* empty, pages being freed */

/* Zspage gate: shared count, EXCL. */
#define AFM_ZG_EXCL		BIT(29)
#define AFM_ZG_COUNT		(AFM_ZG_EXCL - 1)
/* Attempts of a waiting exclusive gate, preemptible between attempts. */
#define AFM_ZG_TRIES		1024

/*
 * Object headers (see "Reverse map"): AFM_ZS_HDR bytes, little endian,
 * holding the extent length in the low AFM_ZH_LEN_BITS bits and the
 * handle, modulo 2^AFM_ZH_IDX_BITS, above them.
 */
#define AFM_ZS_HDR		5
#define AFM_ZH_LEN_BITS		(PAGE_SHIFT + 1)
#define AFM_ZH_IDX_BITS		(AFM_ZS_HDR * BITS_PER_BYTE - AFM_ZH_LEN_BITS)

/* Compaction. */
#define AFM_ZS_MAX_VICTIMS	512
/*
 * Smallest hole total of a victim: on request (afm_compact(), shrinker)
 * any zspage with an eighth of a page of holes; automatic runs only take
 * zspages with a quarter of their bytes in holes, so that they never copy
 * more than 3 bytes per byte they give back (thin, evenly spread holes are
 * left to the shrinker, to afm_compact() and to the frees that follow).
 */
#define AFM_ZS_MIN_HOLES	(PAGE_SIZE / 8)
#define AFM_ZS_AUTO_MIN_HOLES	(AFM_ZS_SIZE / 4)
/* Holes before an automatic run, in zspages (a batch worth a pass). */
#define AFM_ZS_AUTO_MIN		4
/*
 * The rest run (see "Compaction") comes this long after the last
 * allocation and also takes zspages with an eighth of their bytes in holes
 * (at most 7 bytes copied per byte freed, once, instead of leaving the
 * thin holes for good).
 */
#define AFM_ZS_LATE		HZ
#define AFM_ZS_REST_MIN_HOLES	(AFM_ZS_SIZE / 8)
#define AFM_ZS_MAX_PASSES	64
#define AFM_ZS_DONE		U32_MAX		/* candidate slot already handled */
/*
 * Hole lists: zspages by hole bytes, AFM_ZS_MIN_HOLES wide; list 0 (fewer
 * holes than that) is not kept, so compaction never looks at such zspages.
 */
#define AFM_ZS_NR_HLISTS	(AFM_ZS_SIZE / AFM_ZS_MIN_HOLES)

#if PAGE_SHIFT + AFM_ZS_ORDER <= 15
typedef u16 afm_zs_off_t;
#else
typedef u32 afm_zs_off_t;
#endif

/**
 * struct afm_zspage - zspage descriptor, a slot of the descriptor table
 * @first: its first page; each data page's ->index points to the next one
 *	(0 after the last), as in zsmalloc, so that the descriptor does not
 *	carry a page array. The chain (this pointer and the ->index links) is
 *	changed by migration under the exclusive gate and read by holders of
 *	the gate (shared or exclusive).
 * @zs: the zspage store pool it belongs to (for the migration callbacks).
 * @list: entry in the tail bucket @bucket, or in the pool's dead list.
 *	Under the pool lock.
 * @hlist: entry in hole list @hlist_nr. Under the pool lock.
 * @gate: accessors and exclusive owner, see AFM_ZG_* and the file comment.
 * @id: index of this descriptor in the descriptor table.
 * @live: bytes of live objects. Under the pool lock (as are the next four).
 * @tail: fill offset: objects lie below it, bytes from it to AFM_ZS_SIZE
 *	are free and reusable.
 * @objs: live objects.
 * @flags: AFM_ZS_USED, AFM_ZS_VICTIM, AFM_ZS_DEAD.
 * @bucket: tail bucket, AFM_ZS_NO_BUCKET when on no tail list.
 * @hlist_nr: hole list (hole bytes / AFM_ZS_MIN_HOLES), 0 when on none:
 *	fewer holes than that, or not a live zspage (victim, dead).
 */
struct afm_zspage {
	struct page *first;
	struct afm_zs_pool *zs;
	struct list_head list;
	struct list_head hlist;
	atomic_t gate;
	u32 id;
	afm_zs_off_t live;
	afm_zs_off_t tail;
	afm_zs_off_t objs;
	u8 flags;
	u8 bucket;
	u8 hlist_nr;
};

/**
 * struct afm_zt_top - the top level of a slot table
 * @rcu: frees it after a larger one replaced it (lockless lookups may still
 *	be reading it).
 * @size: entries in @dir.
 * @dir: directory page addresses, NULL where there is none.
 */
struct afm_zt_top {
	struct rcu_head rcu;
	unsigned long size;
	unsigned long *dir[];
};

/**
 * struct afm_zs_table - a table of fixed-size slots in pool-owned pages
 * @top: the top level: directory pages, replaced by one twice as large
 *	when the table needs a directory beyond it (afm_zt_grow(); RCU for
 *	lockless lookups, written under @lock). A directory entry is a table
 *	page address, with
 *	AFM_ZT_OPEN set while at least @open_free of its slots are free. A
 *	directory page's struct page counts present table pages in ->private
 *	and open ones in ->index; a table page's counts its used slots in
 *	->private and holds 1 + its first free slot (0: none) in ->index.
 * @slot_size: bytes per slot (8 or sizeof(struct afm_zspage)).
 * @per_page: slots per table page.
 * @open_free: free slots that make a table page open (a quarter).
 * @cur: table page slots are taken from while it has any free, else
 *	ULONG_MAX. When it fills up, the lowest open or missing page becomes
 *	current: slots allocated together share pages (and tend to be freed
 *	together, giving pages back), while nearly full pages are left alone.
 * @hint: no table page below this one is open or missing.
 * @end: one past the highest table page number ever present.
 * @used: slots in use.
 * @pages: table pages.
 * @dirs: directory pages.
 * @max_pages: table pages its slot numbers can address (the descriptor
 *	table's: zspage ids must fit an entry); no limit for handles.
 * @lock: the pool lock.
 * @dshift: log2 of the table pages a directory page points to (AFM_ZT_PTRS;
 *	fewer only in KUnit, afm_zs_test_small_dirs()).
 *
 * Everything is written under the pool lock; lookups of live slots are
 * lockless (the pages of live slots are not freed).
 */
struct afm_zs_table {
	struct afm_zt_top __rcu *top;
	unsigned int slot_size;
	unsigned int per_page;
	unsigned int open_free;
	unsigned long cur;
	unsigned long hint;
	unsigned long end;
	unsigned long used;
	unsigned long pages;
	unsigned long dirs;
	unsigned long max_pages;
	spinlock_t *lock;	/* the pool lock, for lockdep */
	unsigned int dshift;
};

/**
 * struct afm_zs_hole - a recorded hole, see "Placement"
 * @id: its zspage.
 * @off: its first byte.
 * @size: its length.
 */
struct afm_zs_hole {
	u32 id;
	afm_zs_off_t off;
	afm_zs_off_t size;
};

/**
 * struct afm_zs_pool - zspage store state of a pool
 * @pool: the generic pool.
 * @lock: the pool lock, see the file comment.
 * @htab: handle table.
 * @dtab: descriptor table.
 * @tails: tail buckets: zspages by the size of their tail.
 * @tail_map: non-empty tail buckets.
 * @dead: empty zspages whose pages wait for afm_zs_free_work().
 * @total_pages: every page held; written under @lock, read locklessly.
 * @objects: live objects.
 * @live_bytes: sum of their sizes.
 * @tail_bytes: sum of the tails of the zspages in @zspages.
 * @zspages: zspages not dead.
 * @dead_zspages: zspages on @dead or being freed from it.
 * @victim_live: live bytes left in the victims of the running pass.
 * @victim_holes: hole bytes of its victims when they were picked.
 * @hlists: hole lists: live, non-victim zspages with at least
 *	AFM_ZS_MIN_HOLES bytes of holes, by hole bytes (list n: n to n + 1
 *	times AFM_ZS_MIN_HOLES); compaction takes its victims from the top.
 * @hlist_map: non-empty hole lists.
 * @hlist_count: zspages on each hole list.
 * @holes: the hole cache: recent holes by size, AFM_ZS_HOLE_WIDTH bytes of
 *	size per row. A zspage's records are dropped when it is released or
 *	picked as a victim, so that a record always describes free bytes of
 *	a live, non-victim zspage below its fill offset.
 * @nr_holes: records in each row of @holes.
 * @hole_map: rows of @holes with any record.
 * @hole_rec_bytes: the sum of the recorded holes' sizes.
 * @last_alloc: jiffies of the last allocation (the rest run waits until
 *	AFM_ZS_LATE after it).
 * @late_force: the rest run may not wait (afm_zs_flush_work()).
 * @dying: the pool is being destroyed: no more automatic compaction.
 * @free_work: frees the zspages of @dead.
 * @compact_work: automatic compaction.
 * @late_work: the rest run: automatic compaction counting the recorded
 *	holes and taking thinner ones, AFM_ZS_LATE after the last
 *	allocation, queued by a free that leaves holes above the trigger.
 * @shrinker: the pool's shrinker, NULL if it could not be allocated.
 * @cand: ids of the victims of the running pass (AFM_ZS_DONE once
 *	released), under &afm_pool.compact_lock.
 * @nr_cand: number of them.
 * @idx_bits: handle bits in an object header: AFM_ZH_IDX_BITS, fewer
 *	only in KUnit (afm_zs_test_set_idx_bits()), so that handles that
 *	share header bits are tested without 2^27 objects.
 * @st: statistics, see afm_zs_class_stats(); counters written under @lock
 *	or &afm_pool.compact_lock, migration counters atomic. @st.migrated
 *	counts only pages whose contents moved to a new page; an isolated
 *	page put back counts in @st.putback, one whose zspage was freed
 *	while it was isolated (the migration core then frees it without
 *	calling afm_zs_migrate_page()) in @st.isolated_freed.
 * @test_quiet: KUnit hook, afm_zs_test_quiet(): AFM_ZS_QUIET_SHRINKER
 *	keeps the kernel's shrink_slab() away from the pool (count and scan
 *	report nothing), AFM_ZS_QUIET_MIGRATION the kernel's page migration
 *	(isolation refused); the KUnit hooks still reach both.
 */
struct afm_zs_pool {
	struct afm_pool *pool;
	spinlock_t lock;	/* pool lock, see "Locking" above */
	struct afm_zs_table htab;
	struct afm_zs_table dtab;
	struct list_head tails[AFM_ZS_NR_BUCKETS];
	DECLARE_BITMAP(tail_map, AFM_ZS_NR_BUCKETS);
	struct list_head dead;
	atomic_long_t total_pages;
	unsigned long objects;
	unsigned long live_bytes;
	unsigned long tail_bytes;
	unsigned long zspages;
	unsigned long dead_zspages;
	unsigned long victim_live;
	unsigned long victim_holes;
	struct list_head hlists[AFM_ZS_NR_HLISTS];
	u64 hlist_map;
	unsigned long hlist_count[AFM_ZS_NR_HLISTS];
	struct afm_zs_hole holes[AFM_ZS_HOLE_BUCKETS][AFM_ZS_HOLE_SLOTS];
	u8 nr_holes[AFM_ZS_HOLE_BUCKETS];
	u64 hole_map;
	unsigned long hole_rec_bytes;
	unsigned long last_alloc;
	bool late_force;
	bool dying;
	struct work_struct free_work;
	struct work_struct compact_work;
	struct delayed_work late_work;
	struct shrinker *shrinker;
	u32 *cand;
	unsigned int nr_cand;
	unsigned int idx_bits;
	struct {
		atomic_long_t migrated;
		atomic_long_t migrate_busy;
		atomic_long_t isolated;
		atomic_long_t putback;
		atomic_long_t isolated_freed;
		unsigned long deferred_frees;
		unsigned long hole_reused;
		unsigned long hole_bytes;
		unsigned long moved;
		unsigned long walked;
		unsigned long evacuated;
		unsigned long passes;
		unsigned long freed;
		unsigned long auto_runs;
		unsigned long auto_freed;
		unsigned long shrink_scans;
		unsigned long shrink_freed;
	} st;
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	unsigned int test_quiet;
#endif
};

/*
 * Bottom halves and the pool lock. The pool lock and the exclusive gate
 * are held with bottom halves off, so that free may run in softirq context.
 * Free is also called with hardirqs off: zram's slot_free_notify runs under
 * the swap slots cache's spin_lock_irq() (free_swap_slot() ->
 * swapcache_free_entries() -> zram_slot_free_notify() -> afm_free()). No
 * softirq can run on this CPU then, and local_bh_enable() must not be
 * called with hardirqs off (it warns), so these leave bottom halves alone
 * when hardirqs are off. Nothing in this file changes the hardirq state
 * between taking and dropping, so the check agrees at both ends.
 */
static __always_inline void afm_bh_off(void)
{
	if (!irqs_disabled())
		local_bh_disable();
}

static __always_inline void afm_bh_on(void)
{
	if (!irqs_disabled())
		local_bh_enable();
}

static __always_inline void afm_zs_lock(struct afm_zs_pool *zs)
	__acquires(&zs->lock)
{
	afm_bh_off();
	spin_lock(&zs->lock);
}

static __always_inline void afm_zs_unlock(struct afm_zs_pool *zs)
	__releases(&zs->lock)
{
	spin_unlock(&zs->lock);
	afm_bh_on();
}

/*
 * Automatic compaction starts when holes exceed this many thousandths of
 * the live bytes (and AFM_ZS_AUTO_MIN zspages), and stops at half of it.
 * 0 disables it (the shrinker and afm_compact() still work). 1 (0.1%) keeps
 * the holes of a churned pool at 0.05-0.1% of its data: each run copies at
 * most 3 bytes per byte it frees, so a lower trigger costs more (cheap)
 * runs, not more copying; 5 left the untar benchmark at 0.3% holes.
 */
static unsigned int afm_zs_auto_permille = 1;
module_param_named(zspage_auto_permille, afm_zs_auto_permille, uint, 0644);
MODULE_PARM_DESC(zspage_auto_permille,
		 "zspage store: holes (per mille of live bytes) that start automatic compaction, 0 = off");

/* KUnit: what the kernel may not do to a pool, see afm_zs_test_quiet(). */
static bool afm_zs_quiet(const struct afm_zs_pool *zs, unsigned int what)
{
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	return READ_ONCE(zs->test_quiet) & what;
#else
	return false;
#endif
}

/* Address of the in-place mapping of this CPU's mapped object. */
static DEFINE_PER_CPU(void *, afm_zs_kaddr);

#ifdef CONFIG_COMPACTION
static const struct movable_operations afm_zspage_mops;
#endif

/* Entries */

static inline u64 afm_ze_make(u32 id, unsigned int off, unsigned int size)
{
	return AFM_ZE_LIVE | (u64)(size - 1) << AFM_ZE_SIZE_SHIFT |
	       (u64)off << AFM_ZE_OFF_SHIFT | (u64)id << AFM_ZE_ID_SHIFT;
}

static inline unsigned int afm_ze_size(u64 e)
{
	return ((e >> AFM_ZE_SIZE_SHIFT) & (PAGE_SIZE - 1)) + 1;
}

static inline unsigned int afm_ze_off(u64 e)
{
	return (e >> AFM_ZE_OFF_SHIFT) & (AFM_ZS_SIZE - 1);
}

static inline u32 afm_ze_id(u64 e)
{
	return e >> AFM_ZE_ID_SHIFT;
}

/* Free-slot link, in the first 8 bytes of a free slot: LIVE stays clear. */
static inline void afm_zt_link_set(void *slot, unsigned long next1)
{
	WRITE_ONCE(*(u64 *)slot, (u64)next1 << 1);
}

static inline unsigned long afm_zt_link_get(const void *slot)
{
	return READ_ONCE(*(const u64 *)slot) >> 1;
}

/* Slot tables */

/* Directory of table page @pg of @t, and its entry in that directory. */
static __always_inline unsigned long afm_zt_d(const struct afm_zs_table *t,
					      unsigned long pg)
{
	return pg >> t->dshift;
}

static __always_inline unsigned long afm_zt_di(const struct afm_zs_table *t,
					       unsigned long pg)
{
	return pg & ((1UL << t->dshift) - 1);
}

/* The top level of @t; pool lock held. */
static struct afm_zt_top *afm_zt_top(const struct afm_zs_table *t)
{
	return rcu_dereference_protected(t->top, lockdep_is_held(t->lock));
}

/* Directory page @d of @t, or NULL. Any context, no lock needed. */
static __always_inline unsigned long *afm_zt_dir(const struct afm_zs_table *t,
						 unsigned long d)
{
	const struct afm_zt_top *top;
	unsigned long *dir = NULL;

	rcu_read_lock();
	top = rcu_dereference(t->top);
	if (likely(d < top->size))
		dir = READ_ONCE(top->dir[d]);
	rcu_read_unlock();
	return dir;
}

static __always_inline void *afm_zt_lookup(const struct afm_zs_table *t,
					   unsigned long idx,
					   unsigned int size,
					   unsigned int per_page)
{
	unsigned long pg = idx / per_page;
	unsigned long *dir;
	unsigned long ent;

	dir = afm_zt_dir(t, afm_zt_d(t, pg));
	if (unlikely(!dir))
		return NULL;
	ent = READ_ONCE(dir[afm_zt_di(t, pg)]) & ~AFM_ZT_OPEN;
	if (unlikely(!ent))
		return NULL;
	return (void *)ent + (idx % per_page) * size;
}

/* Base address of table page @pg, or NULL. */
static void *afm_zt_page(const struct afm_zs_table *t, unsigned long pg)
{
	unsigned long *dir = afm_zt_dir(t, afm_zt_d(t, pg));

	if (!dir)
		return NULL;
	return (void *)(READ_ONCE(dir[afm_zt_di(t, pg)]) & ~AFM_ZT_OPEN);
}

static inline atomic64_t *afm_zs_entry(struct afm_zs_pool *zs,
				       unsigned long handle)
{
	return afm_zt_lookup(&zs->htab, handle - 1, sizeof(u64),
			     AFM_ZH_PER_PAGE);
}

static inline struct afm_zspage *afm_zs_desc(struct afm_zs_pool *zs, u32 id)
{
	return afm_zt_lookup(&zs->dtab, id, sizeof(struct afm_zspage),
			     AFM_ZD_PER_PAGE);
}

/**
 * struct afm_zs_spare - pages allocated ahead, outside the pool lock
 * @meta: table and directory pages (never highmem, never movable).
 * @nr_meta: number of them.
 * @data: zspage pages (the caller's gfp).
 * @nr_data: number of them.
 */
struct afm_zs_spare {
	struct page *meta[4];
	unsigned int nr_meta;
	struct page *data[AFM_ZS_PAGES];
	unsigned int nr_data;
};

static int afm_zs_spare_fill(struct afm_zs_pool *zs, struct afm_zs_spare *sp,
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

static void afm_zs_spare_drain(struct afm_zs_spare *sp)
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
	atomic_long_inc(&zs->total_pages);
	return page_address(page);
}

static void afm_zs_meta_page_free(struct afm_zs_pool *zs, void *addr)
{
	struct page *page = virt_to_page(addr);

	page->index = 0;
	set_page_private(page, 0);
	__free_page(page);
	atomic_long_dec(&zs->total_pages);
}

static bool afm_zt_dir_full(const struct afm_zs_table *t,
			    const unsigned long *dir)
{
	const struct page *dp = virt_to_page(dir);

	return page_private(dp) == 1UL << t->dshift && !dp->index;
}

/*
 * Table page to take the next slot from: the current page while it has a
 * free slot, else the lowest open or missing page, which becomes current
 * (it may lie beyond the top level: see afm_zt_short()). Pool lock held.
 * Return: 0 and *@pgp, or -ENOSPC when slot numbers would not fit.
 */
static int afm_zt_find(struct afm_zs_table *t, unsigned long *pgp)
{
	struct afm_zt_top *top = afm_zt_top(t);
	unsigned long pg;
	void *base;

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
		dir = top->dir[afm_zt_d(t, pg)];
		if (!dir)
			break;
		if (afm_zt_dir_full(t, dir)) {
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
 * Table page @pg lies beyond the top level: afm_zt_grow() first. Pool lock
 * held.
 */
static bool afm_zt_short(const struct afm_zs_table *t, unsigned long pg)
{
	return afm_zt_d(t, pg) >= afm_zt_top(t)->size;
}

/*
 * Replace the top level of @t by one that reaches table page @pg, twice
 * as large at least, allocated with @gfp outside the pool lock (held on
 * neither entry nor return). The old one is freed after an RCU grace
 * period. Return: 0 (also when someone else grew it meanwhile), or
 * -ENOMEM.
 */
static int afm_zt_grow(struct afm_zs_pool *zs, struct afm_zs_table *t,
		       unsigned long pg, gfp_t gfp)
{
	struct afm_zt_top *top, *old;
	unsigned long size;

	rcu_read_lock();
	size = rcu_dereference(t->top)->size;
	rcu_read_unlock();
	size = max(2 * size, afm_zt_d(t, pg) + 1);
	if (afm_should_fail(zs->pool))
		return -ENOMEM;
	top = kzalloc(struct_size(top, dir, size),
		      gfp & ~(__GFP_HIGHMEM | __GFP_MOVABLE));
	if (!top)
		return -ENOMEM;
	top->size = size;

	afm_zs_lock(zs);
	old = afm_zt_top(t);
	if (old->size >= size) {
		afm_zs_unlock(zs);
		kfree(top);
		return 0;
	}
	memcpy(top->dir, old->dir, old->size * sizeof(*old->dir));
	rcu_assign_pointer(t->top, top);
	afm_zs_unlock(zs);
	kfree_rcu(old, rcu);
	return 0;
}

/* Pages (directory, table) needed to take a slot in table page @pg. */
static unsigned int afm_zt_need(const struct afm_zs_table *t, unsigned long pg)
{
	unsigned long *dir = afm_zt_top(t)->dir[afm_zt_d(t, pg)];

	if (!dir)
		return 2;
	return dir[afm_zt_di(t, pg)] ? 0 : 1;
}

/*
 * Take a free slot of table page @pg (from afm_zt_find()), adding the
 * directory and table pages from @sp as needed (afm_zt_need() of them).
 * Pool lock held. Return: the slot index.
 */
static unsigned long afm_zt_take(struct afm_zs_pool *zs, struct afm_zs_table *t,
				 unsigned long pg, struct afm_zs_spare *sp)
{
	struct afm_zt_top *top = afm_zt_top(t);
	unsigned long *dir = top->dir[afm_zt_d(t, pg)];
	unsigned long ent, slot, i;
	struct page *dp, *tp;
	void *base;

	if (!dir) {
		dir = afm_zs_meta_page(zs, sp);
		clear_page(dir);
		WRITE_ONCE(top->dir[afm_zt_d(t, pg)], dir);
		t->dirs++;
	}
	dp = virt_to_page(dir);
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
		WRITE_ONCE(dir[afm_zt_di(t, pg)], ent);
		set_page_private(dp, page_private(dp) + 1);
		dp->index++;
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
		dp->index--;
	}
	t->used++;
	return pg * t->per_page + slot;
}

/*
 * Free slot @idx (its content is cleared), giving back its table page when
 * it was the page's last used slot, and the directory page with it. Pool
 * lock held.
 */
static void afm_zt_put(struct afm_zs_pool *zs, struct afm_zs_table *t,
		       unsigned long idx)
{
	unsigned long pg = idx / t->per_page, slot = idx % t->per_page;
	struct afm_zt_top *top = afm_zt_top(t);
	unsigned long *dir = top->dir[afm_zt_d(t, pg)];
	struct page *dp = virt_to_page(dir);
	unsigned long ent = dir[afm_zt_di(t, pg)];
	void *base = (void *)(ent & ~AFM_ZT_OPEN);
	struct page *tp = virt_to_page(base);

	lockdep_assert_held(&zs->lock);

	memset(base + slot * t->slot_size, 0, t->slot_size);
	afm_zt_link_set(base + slot * t->slot_size, tp->index);
	tp->index = slot + 1;
	set_page_private(tp, page_private(tp) - 1);
	t->used--;
	if (!(ent & AFM_ZT_OPEN) &&
	    t->per_page - page_private(tp) >= t->open_free) {
		ent |= AFM_ZT_OPEN;
		dp->index++;
		t->hint = min(t->hint, pg);
	}
	if (page_private(tp)) {
		WRITE_ONCE(dir[afm_zt_di(t, pg)], ent);
		return;
	}
	WRITE_ONCE(dir[afm_zt_di(t, pg)], 0);
	set_page_private(dp, page_private(dp) - 1);
	dp->index--;
	t->pages--;
	afm_zs_meta_page_free(zs, base);
	if (page_private(dp))
		return;
	WRITE_ONCE(top->dir[afm_zt_d(t, pg)], NULL);
	t->dirs--;
	afm_zs_meta_page_free(zs, dir);
}

/*
 * Free every page of a table, whatever its slots hold, and its top level
 * (pool teardown: nobody else looks at it any more).
 */
static void afm_zt_destroy(struct afm_zs_pool *zs, struct afm_zs_table *t)
{
	struct afm_zt_top *top = rcu_dereference_protected(t->top, true);
	unsigned long i, d;

	for (i = 0; top && i < top->size; i++) {
		unsigned long *dir = top->dir[i];

		if (!dir)
			continue;
		for (d = 0; d < 1UL << t->dshift; d++) {
			if (dir[d])
				afm_zs_meta_page_free(zs, (void *)(dir[d] &
							~AFM_ZT_OPEN));
		}
		afm_zs_meta_page_free(zs, dir);
	}
	RCU_INIT_POINTER(t->top, NULL);
	kfree(top);
	t->pages = 0;
	t->dirs = 0;
	t->used = 0;
	t->hint = 0;
	t->cur = ULONG_MAX;
}

/* Zspage gate */

/*
 * The gate and the entry LOCK bit are spinning locks of their own; these
 * maps let lockdep check their order against the pool lock and each other
 * (the shared side as a recursive read lock, the exclusive side as the
 * trylock it is).
 */
#ifdef CONFIG_DEBUG_LOCK_ALLOC
static struct lock_class_key afm_zg_key, afm_ze_key;
static struct lockdep_map afm_zg_map =
	STATIC_LOCKDEP_MAP_INIT("afm_zspage_gate", &afm_zg_key);
static struct lockdep_map afm_ze_map =
	STATIC_LOCKDEP_MAP_INIT("afm_zspage_entry", &afm_ze_key);
#endif

static void afm_zg_in(struct afm_zspage *z)
{
	int old;

	preempt_disable();
	lock_map_acquire_read(&afm_zg_map);
	old = atomic_read(&z->gate);
	do {
		while (unlikely(old & AFM_ZG_EXCL)) {
			cpu_relax();
			old = atomic_read(&z->gate);
		}
	} while (!atomic_try_cmpxchg_acquire(&z->gate, &old, old + 1));
}

static void afm_zg_out(struct afm_zspage *z)
{
	int old = atomic_fetch_sub_release(1, &z->gate);

	WARN_ON_ONCE(!(old & AFM_ZG_COUNT));
	lock_map_release(&afm_zg_map);
	preempt_enable();
}

/*
 * Take the gate exclusively: once, or with @wait up to AFM_ZG_TRIES times,
 * preemptible and with bottom halves on between attempts (sharers are not
 * held back meanwhile; they hold the gate for one access). On success,
 * returns with bottom halves and preemption disabled (so a sharer running
 * in softirq on this CPU cannot spin on us).
 */
static bool afm_zg_lock(struct afm_zspage *z, bool wait)
{
	unsigned int tries = wait ? AFM_ZG_TRIES : 1;
	int old;

	while (tries--) {
		afm_bh_off();
		preempt_disable();
		old = 0;
		if (atomic_try_cmpxchg_acquire(&z->gate, &old, AFM_ZG_EXCL)) {
			lock_map_acquire_try(&afm_zg_map);
			return true;
		}
		preempt_enable();
		afm_bh_on();
		cpu_relax();
	}
	return false;
}

static void afm_zg_unlock(struct afm_zspage *z)
{
	lock_map_release(&afm_zg_map);
	atomic_fetch_andnot_release(AFM_ZG_EXCL, &z->gate);
	preempt_enable();
	afm_bh_on();
}

/* Entry pins */

/*
 * Pin the live object of @ent: its location cannot change and its zspage
 * cannot go away until afm_ze_unpin(). Spins while compaction moves it.
 * Return: false if the entry is not live (invalid handle).
 */
static bool afm_ze_pin(atomic64_t *ent, u64 *ep)
{
	s64 e = atomic64_read(ent);

	lock_map_acquire_read(&afm_ze_map);
	do {
		if (unlikely(!(e & AFM_ZE_LIVE)))
			goto dead;
		while (unlikely((e & AFM_ZE_LOCK) ||
				(e & AFM_ZE_PINS) == AFM_ZE_PINS)) {
			cpu_relax();
			e = atomic64_read(ent);
			if (unlikely(!(e & AFM_ZE_LIVE)))
				goto dead;
		}
	} while (!atomic64_try_cmpxchg_acquire(ent, &e, e + AFM_ZE_PIN_ONE));
	*ep = e;
	return true;

dead:
	lock_map_release(&afm_ze_map);
	return false;
}

static void afm_ze_unpin(atomic64_t *ent)
{
	s64 old = atomic64_fetch_sub_release(AFM_ZE_PIN_ONE, ent);

	WARN_ON_ONCE(!(old & AFM_ZE_PINS));
	lock_map_release(&afm_ze_map);
}

/*
 * Page @nr of zspage @z, following the chain from its first page. Caller
 * holds the zspage gate (shared or exclusive), which keeps the chain stable.
 */
static struct page *afm_zs_page(const struct afm_zspage *z, unsigned int nr)
{
	struct page *page = READ_ONCE(z->first);

	while (nr--)
		page = (struct page *)READ_ONCE(page->index);
	return page;
}

/* Copies between zspages and linear buffers */

static void afm_zs_copy_out(struct afm_zspage *z, unsigned int off, void *dst,
			    unsigned int len)
{
	while (len) {
		unsigned int po = offset_in_page(off);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - po);

		memcpy_from_page(dst, afm_zs_page(z, off >> PAGE_SHIFT), po, n);
		dst += n;
		off += n;
		len -= n;
	}
}

static void afm_zs_copy_in(struct afm_zspage *z, unsigned int off,
			   const void *src, unsigned int len)
{
	while (len) {
		unsigned int po = offset_in_page(off);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - po);

		memcpy_to_page(afm_zs_page(z, off >> PAGE_SHIFT), po, src, n);
		src += n;
		off += n;
		len -= n;
	}
}

static void afm_zs_copy_zz(struct afm_zspage *d, unsigned int doff,
			   struct afm_zspage *s, unsigned int soff,
			   unsigned int len)
{
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

/* Object headers (see "Reverse map") */

/*
 * Write the header of the extent of @len bytes at @off of @z: an object's
 * (@handle) or a hole's (@handle 0). Pool lock held; takes the gate.
 */
static void afm_zs_hdr_write(struct afm_zspage *z, unsigned int off,
			     unsigned int len, unsigned long handle)
{
	u64 v = len | (u64)(handle & (BIT_ULL(z->zs->idx_bits) - 1)) <<
		      AFM_ZH_LEN_BITS;
	u8 buf[AFM_ZS_HDR];
	unsigned int i;

	for (i = 0; i < AFM_ZS_HDR; i++, v >>= BITS_PER_BYTE)
		buf[i] = v;
	afm_zg_in(z);
	afm_zs_copy_in(z, off, buf, AFM_ZS_HDR);
	afm_zg_out(z);
}

/*
 * Read the header at @off of @z. Pool lock held; takes the gate. Return:
 * the extent length; *@idx: the handle bits (see afm_zs_hdr_write()).
 */
static unsigned int afm_zs_hdr_read(struct afm_zspage *z, unsigned int off,
				    unsigned long *idx)
{
	u8 buf[AFM_ZS_HDR];
	unsigned int i;
	u64 v = 0;

	afm_zg_in(z);
	afm_zs_copy_out(z, off, buf, AFM_ZS_HDR);
	afm_zg_out(z);
	for (i = AFM_ZS_HDR; i--; )
		v = v << BITS_PER_BYTE | buf[i];
	*idx = v >> AFM_ZH_LEN_BITS;
	return v & (BIT(AFM_ZH_LEN_BITS) - 1);
}

/* Bytes of @z below its fill offset not held by live objects' extents. */
static unsigned int afm_zs_zholes(const struct afm_zspage *z)
{
	return z->tail - z->live - z->objs * AFM_ZS_HDR;
}

/*
 * Put @z on the hole list matching its holes, or on none when it has
 * fewer than AFM_ZS_MIN_HOLES or is not a live non-victim zspage. Called
 * after every change of its holes or flags. Pool lock held.
 */
static void afm_zs_hlist_update(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int n = 0;

	lockdep_assert_held(&zs->lock);
	if (z->flags == AFM_ZS_USED)
		n = afm_zs_zholes(z) / AFM_ZS_MIN_HOLES;
	if (n == z->hlist_nr)
		return;
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
	return AFM_ZS_SMALL_BUCKETS + (tail >> PAGE_SHIFT) - 1;
}

static void afm_zs_unbucket(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	if (z->bucket == AFM_ZS_NO_BUCKET)
		return;
	list_del_init(&z->list);
	if (list_empty(&zs->tails[z->bucket]))
		__clear_bit(z->bucket, zs->tail_map);
	z->bucket = AFM_ZS_NO_BUCKET;
}

/* Put @z on the tail list matching its tail (none when full). */
static void afm_zs_rebucket(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int tail = AFM_ZS_SIZE - z->tail;
	unsigned int b = tail ? afm_zs_bucket(tail) : AFM_ZS_NO_BUCKET;

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
static struct afm_zspage *afm_zs_fit(struct afm_zs_pool *zs, unsigned int size)
{
	unsigned int b = afm_zs_bucket(size), n = 0;
	struct afm_zspage *z;

	lockdep_assert_held(&zs->lock);

	list_for_each_entry(z, &zs->tails[b], list) {
		if (AFM_ZS_SIZE - z->tail >= size)
			return z;
		if (++n >= AFM_ZS_FIT_TRIES)
			break;
	}
	b = find_next_bit(zs->tail_map, AFM_ZS_NR_BUCKETS, b + 1);
	if (b >= AFM_ZS_NR_BUCKETS)
		return NULL;
	return list_first_entry(&zs->tails[b], struct afm_zspage, list);
}

/* Hole cache */

static unsigned int afm_zs_hole_bucket(unsigned int size)
{
	return min((size - 1) / AFM_ZS_HOLE_WIDTH, AFM_ZS_HOLE_BUCKETS - 1);
}

/*
 * Forget the recorded holes of zspage @z, which is being released (its id
 * will be reused), or with @z NULL those of the victims just picked.
 */
static void afm_zs_holes_forget(struct afm_zs_pool *zs, struct afm_zspage *z)
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
static unsigned int afm_zs_place(struct afm_zs_pool *zs, struct afm_zspage *z,
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
static void afm_zs_unplace(struct afm_zs_pool *zs, struct afm_zspage *z,
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

static unsigned long afm_zs_holes(const struct afm_zs_pool *zs)
{
	return zs->zspages * AFM_ZS_SIZE - zs->live_bytes -
	       zs->objects * AFM_ZS_HDR - zs->tail_bytes;
}

/* Holes not in the hole cache: what allocation will not reuse soon. */
static unsigned long afm_zs_holes_unrecorded(const struct afm_zs_pool *zs)
{
	unsigned long holes = afm_zs_holes(zs);

	return holes - min(holes, zs->hole_rec_bytes);
}

/* Zspages */

/*
 * Make a zspage of the data pages of @sp, with a descriptor in table page
 * @dpg (afm_zt_find() of the descriptor table). Pool lock held.
 */
static struct afm_zspage *afm_zs_new(struct afm_zs_pool *zs,
				     unsigned long dpg, struct afm_zs_spare *sp)
{
	unsigned long id = afm_zt_take(zs, &zs->dtab, dpg, sp);
	struct afm_zspage *z = afm_zs_desc(zs, id);
	struct page *next = NULL, *page, *pages[AFM_ZS_PAGES];
	unsigned int i;

	memset(z, 0, sizeof(*z));
	z->id = id;
	z->zs = zs;
	z->bucket = AFM_ZS_NO_BUCKET;
	INIT_LIST_HEAD(&z->list);
	INIT_LIST_HEAD(&z->hlist);
	/* Chain the pages from the last one back to the first. */
	for (i = AFM_ZS_PAGES; i--; ) {
		page = sp->data[--sp->nr_data];
		set_page_private(page, (unsigned long)z);
		page->index = (unsigned long)next;
		pages[i] = page;
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
	for (i = 0; i < AFM_ZS_PAGES; i++) {
		/* A fresh page: nobody else can hold its lock. */
		if (WARN_ON_ONCE(!trylock_page(pages[i])))
			continue;
		__SetPageMovable(pages[i], &afm_zspage_mops);
		unlock_page(pages[i]);
	}
#endif
	zs->zspages++;
	zs->tail_bytes += AFM_ZS_SIZE;
	atomic_long_add(AFM_ZS_PAGES, &zs->total_pages);
	afm_zs_rebucket(zs, z);
	return z;
}

/* Undo the page setup of afm_zs_new(); page lock held if it was movable. */
static void afm_zs_reset_page(struct page *page)
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
	unsigned int i, locked;

	if (!afm_zg_lock(z, false))
		return false;
	for (locked = 0; locked < AFM_ZS_PAGES; locked++) {
		pages[locked] = locked ? (struct page *)pages[locked - 1]->index :
					 z->first;
		if (!trylock_page(pages[locked]))
			break;
	}
	if (locked < AFM_ZS_PAGES) {
		while (locked--)
			unlock_page(pages[locked]);
		afm_zg_unlock(z);
		return false;
	}
	for (i = 0; i < AFM_ZS_PAGES; i++) {
		struct page *page = pages[i];

		afm_zs_count_isolated_freed(zs, page);
		afm_zs_reset_page(page);
		unlock_page(page);
		put_page(page);
	}
	afm_zg_unlock(z);
	atomic_long_sub(AFM_ZS_PAGES, &zs->total_pages);
	return true;
}

/*
 * Give back empty zspage @z (not a victim): free it now, or queue it for
 * afm_zs_free_work(). Pool lock held.
 */
static void afm_zs_release(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	lockdep_assert_held(&zs->lock);
	WARN_ON_ONCE(z->live || z->objs || (z->flags & AFM_ZS_VICTIM));

	afm_zs_holes_forget(zs, z);
	afm_zs_unbucket(zs, z);
	zs->tail_bytes -= AFM_ZS_SIZE - z->tail;
	zs->zspages--;
	z->flags |= AFM_ZS_DEAD;
	afm_zs_hlist_update(zs, z);
	if (afm_zs_try_free_pages(zs, z)) {
		afm_zt_put(zs, &zs->dtab, z->id);
		return;
	}
	zs->dead_zspages++;
	zs->st.deferred_frees++;
	list_add_tail(&z->list, &zs->dead);
	queue_work(system_wq, &zs->free_work);
}

/* Lock page @i of dead zspage @z, sleeping if needed. */
static struct page *afm_zs_lock_page(struct afm_zspage *z, unsigned int i)
{
	struct page *page;

	for (;;) {
		if (!afm_zg_lock(z, true)) {
			cond_resched();
			continue;
		}
		page = afm_zs_page(z, i);
		if (trylock_page(page)) {
			afm_zg_unlock(z);
			return page;
		}
		/* Migration may hold it; wait without the gate. */
		get_page(page);
		afm_zg_unlock(z);
		wait_on_page_locked(page);
		put_page(page);
	}
}

/* Free the pages and descriptors of the zspages on the dead list. */
static void afm_zs_free_dead(struct afm_zs_pool *zs)
{
	struct afm_zspage *z, *tmp;
	struct page *pages[AFM_ZS_PAGES];
	LIST_HEAD(list);
	unsigned int i;

	afm_zs_lock(zs);
	list_splice_init(&zs->dead, &list);
	afm_zs_unlock(zs);

	list_for_each_entry_safe(z, tmp, &list, list) {
		list_del_init(&z->list);
		/* Once a page is locked, migration cannot replace it. */
		for (i = 0; i < AFM_ZS_PAGES; i++)
			pages[i] = afm_zs_lock_page(z, i);
		for (i = 0; i < AFM_ZS_PAGES; i++) {
			afm_zs_count_isolated_freed(zs, pages[i]);
			afm_zs_reset_page(pages[i]);
			unlock_page(pages[i]);
			put_page(pages[i]);
		}
		/* With the pool lock: the page counts add up under it. */
		afm_zs_lock(zs);
		atomic_long_sub(AFM_ZS_PAGES, &zs->total_pages);
		zs->dead_zspages--;
		afm_zt_put(zs, &zs->dtab, z->id);
		afm_zs_unlock(zs);
		cond_resched();
	}
}

static void afm_zs_free_work(struct work_struct *work)
{
	afm_zs_free_dead(container_of(work, struct afm_zs_pool, free_work));
}

/* Allocation and free */

/* Automatic compaction wanted: now, later (held back by the floor), no. */
enum { AFM_ZS_AUTO_NO, AFM_ZS_AUTO_NOW, AFM_ZS_AUTO_LATER };

/* Hole bytes above which automatic compaction runs. Pool lock held. */
static unsigned long afm_zs_trigger(const struct afm_zs_pool *zs)
{
	return max(zs->live_bytes / 1000 * READ_ONCE(afm_zs_auto_permille),
		   (unsigned long)AFM_ZS_AUTO_MIN * AFM_ZS_SIZE);
}

/*
 * Above the trigger, compaction runs now if the holes outside the hole
 * cache are above it too (recorded holes are left to allocation until it
 * stops) and a zspage has enough holes for an automatic pass, else at
 * rest (afm_zs_late_work()). Pool lock held.
 */
static int afm_zs_want_auto(struct afm_zs_pool *zs)
{
	unsigned long holes = afm_zs_holes(zs), trigger = afm_zs_trigger(zs);

	lockdep_assert_held(&zs->lock);
	if (!READ_ONCE(afm_zs_auto_permille) || zs->dying || holes <= trigger)
		return AFM_ZS_AUTO_NO;
	if (afm_zs_holes_unrecorded(zs) > trigger &&
	    zs->hlist_map >> (AFM_ZS_AUTO_MIN_HOLES / AFM_ZS_MIN_HOLES))
		return AFM_ZS_AUTO_NOW;
	return AFM_ZS_AUTO_LATER;
}

static unsigned long afm_zs_malloc(struct afm_pool *pool, size_t size,
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

static void afm_zs_free(struct afm_pool *pool, unsigned long handle)
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
static struct afm_zspage *afm_zs_get(struct afm_zs_pool *zs,
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

static void afm_zs_put(struct afm_zspage *z, atomic64_t *ent)
{
	afm_zg_out(z);
	afm_ze_unpin(ent);
}

static void *afm_zs_map(struct afm_pool *pool, unsigned long handle,
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

static void afm_zs_unmap(struct afm_pool *pool, unsigned long handle,
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

static size_t afm_zs_read(struct afm_pool *pool, unsigned long handle,
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

static int afm_zs_write(struct afm_pool *pool, unsigned long handle,
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

static size_t afm_zs_obj_size(struct afm_pool *pool, unsigned long handle)
{
	atomic64_t *ent = afm_zs_entry(pool->store, handle);
	u64 e;

	if (!ent)
		return 0;
	e = atomic64_read(ent);
	return e & AFM_ZE_LIVE ? afm_ze_size(e) : 0;
}

/* Compaction */

/*
 * Drop the pool lock during a walk: every 256 entries looked at (a move
 * counts 16), or sooner when someone waits for the lock or the CPU. Bounds
 * the time spent with the lock held and bottom halves off, and lets RCU see
 * a quiescent state on non-preemptible kernels.
 */
static bool afm_zs_breathe(struct afm_zs_pool *zs, unsigned int *budget)
{
	if (*budget < 256 &&
	    (*budget < 16 || (!need_resched() && !spin_is_contended(&zs->lock))))
		return false;
	*budget = 0;
	afm_zs_unlock(zs);
	cond_resched();
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
	zs->victim_holes = 0;
	for (n = AFM_ZS_NR_HLISTS - 1; n >= low; n--) {
		while (sum < goal && nv < AFM_ZS_MAX_VICTIMS &&
		       !list_empty(&zs->hlists[n])) {
			struct afm_zspage *z = list_first_entry(&zs->hlists[n],
						struct afm_zspage, hlist);

			z->flags |= AFM_ZS_VICTIM;
			afm_zs_hlist_update(zs, z);
			afm_zs_unbucket(zs, z);
			zs->victim_live += z->live;
			zs->victim_holes += afm_zs_zholes(z);
			sum += AFM_ZS_SIZE - z->live - z->objs * AFM_ZS_HDR;
			zs->cand[nv++] = z->id;
		}
	}
	zs->nr_cand = nv;
	if (nv)
		afm_zs_holes_forget(zs, NULL);
	afm_zs_unlock(zs);
	return nv;
}

/* Victim @z is empty: release it. Pool lock held. */
static void afm_zs_victim_done(struct afm_zs_pool *zs, struct afm_zspage *z)
{
	unsigned int i;

	for (i = 0; i < zs->nr_cand; i++) {
		if (zs->cand[i] == z->id) {
			zs->cand[i] = AFM_ZS_DONE;
			break;
		}
	}
	z->flags &= ~AFM_ZS_VICTIM;
	zs->st.evacuated++;
	afm_zs_release(zs, z);
}

/*
 * Move the object of entry @ent (value @e, in victim @v) with its header
 * to the end of zspage @d. Pool lock held. Return: false if it is pinned.
 */
static bool afm_zs_move(struct afm_zs_pool *zs, atomic64_t *ent, s64 e,
			struct afm_zspage *v, struct afm_zspage *d)
{
	unsigned int size = afm_ze_size(e), off = afm_ze_off(e), doff;

	lockdep_assert_held(&zs->lock);

	/*
	 * Pinners spin while LOCK is set: hold it with preemption off (also
	 * on PREEMPT_RT) and, as the pool lock keeps bottom halves off, no
	 * reader in softirq on this CPU can spin on it.
	 */
	preempt_disable();
	if (!atomic64_try_cmpxchg_acquire(ent, &e, e | AFM_ZE_LOCK)) {
		preempt_enable();
		return false;
	}
	lock_map_acquire_try(&afm_ze_map);
	doff = afm_zs_place(zs, d, size);
	afm_zg_in(v);
	afm_zg_in(d);
	afm_zs_copy_zz(d, doff, v, off - AFM_ZS_HDR, size + AFM_ZS_HDR);
	afm_zg_out(d);
	afm_zg_out(v);
	lock_map_release(&afm_ze_map);
	atomic64_set_release(ent, afm_ze_make(d->id, doff + AFM_ZS_HDR, size));
	preempt_enable();

	afm_zs_unplace(zs, v, off, size);
	zs->st.moved++;
	return true;
}

/*
 * The entry of the live object whose extent starts at @off of victim @v,
 * given the handle bits of its header (@idx), or NULL when the extent is
 * a hole (no live entry points there). Handles above 2^@zs->idx_bits
 * share header bits with lower ones: each is looked at, one table lookup
 * per 2^@zs->idx_bits handles in the table. Pool lock held.
 */
static atomic64_t *afm_zs_owner(struct afm_zs_pool *zs, struct afm_zspage *v,
				unsigned int off, unsigned long idx, s64 *ep)
{
	unsigned long end = zs->htab.end * AFM_ZH_PER_PAGE, h;

	for (h = idx; h <= end; h += BIT_ULL(zs->idx_bits)) {
		atomic64_t *ent = h ? afm_zs_entry(zs, h) : NULL;
		s64 e = ent ? atomic64_read(ent) : 0;

		if ((e & AFM_ZE_LIVE) && afm_ze_id(e) == v->id &&
		    afm_ze_off(e) == off + AFM_ZS_HDR) {
			*ep = e;
			return ent;
		}
	}
	return NULL;
}

/*
 * Move every unpinned object of victim @v elsewhere, walking its extents
 * from *@off (updated) to its fill offset. Pool lock held; may drop it.
 * Return: 0, or -ENOMEM when no destination could be had (the walk stops).
 */
static int afm_zs_evacuate(struct afm_zs_pool *zs, struct afm_zspage *v,
			   unsigned int *off, unsigned int *budget,
			   struct afm_zs_spare *sp, gfp_t gfp)
{
	unsigned long dpg, idx;
	struct afm_zspage *d;
	unsigned int len;
	atomic64_t *ent;
	s64 e;

	/* A victim's extents do not change: only frees reach it. */
	while (v->objs && *off < v->tail) {
		len = afm_zs_hdr_read(v, *off, &idx);
		zs->st.walked++;
		if (WARN_ONCE(len < AFM_ZS_HDR || *off + len > v->tail,
			      "afmalloc: pool %s: bad extent at %u of zspage %u\n",
			      zs->pool->name, *off, v->id))
			return 0;	/* leave the rest of @v where it is */
		ent = afm_zs_owner(zs, v, *off, idx, &e);
		if (!ent || (e & (AFM_ZE_PINS | AFM_ZE_LOCK))) {
			*off += len;
			(*budget)++;
			afm_zs_breathe(zs, budget);
			continue;
		}
		d = afm_zs_fit(zs, len);
		if (!d) {
			unsigned int meta;

			if (afm_zt_find(&zs->dtab, &dpg))
				return -ENOMEM;
			if (afm_zt_short(&zs->dtab, dpg)) {
				int err;

				afm_zs_unlock(zs);
				err = afm_zt_grow(zs, &zs->dtab, dpg, gfp);
				afm_zs_lock(zs);
				if (err)
					return -ENOMEM;
				continue;
			}
			meta = afm_zt_need(&zs->dtab, dpg);
			if (sp->nr_meta < meta || sp->nr_data < AFM_ZS_PAGES) {
				int err;

				afm_zs_unlock(zs);
				err = fatal_signal_pending(current) ? -EINTR :
				      afm_zs_spare_fill(zs, sp, meta,
							AFM_ZS_PAGES, gfp);
				afm_zs_lock(zs);
				if (err)
					return -ENOMEM;
				continue;	/* read the extent again */
			}
			d = afm_zs_new(zs, dpg, sp);
		}
		if (!afm_zs_move(zs, ent, e, v, d) && !d->objs)
			afm_zs_release(zs, d);
		*off += len;
		*budget += 16;
		afm_zs_breathe(zs, budget);
	}
	return 0;
}

/*
 * One compaction pass: pick victims, walk each victim's extents moving its
 * unpinned objects, release the emptied victims. Its cost is the objects
 * it moves and the extents of its victims, whatever the size of the pool.
 * Caller holds &afm_pool.compact_lock. Return: the number of victims.
 */
static unsigned int afm_zs_pass(struct afm_zs_pool *zs, unsigned long goal,
				unsigned int min_holes, gfp_t gfp)
{
	struct afm_zs_spare sp = { };
	unsigned int budget = 0, i, nv, off;
	int err = 0;

	lockdep_assert_held(&zs->pool->compact_lock);

	nv = afm_zs_pick(zs, goal, min_holes);
	if (!nv)
		return 0;
	zs->st.passes++;

	afm_zs_lock(zs);
	for (i = 0; i < zs->nr_cand && !err; i++) {
		struct afm_zspage *v = afm_zs_desc(zs, zs->cand[i]);

		off = 0;
		err = afm_zs_evacuate(zs, v, &off, &budget, &sp, gfp);
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
		if (!z->objs) {
			zs->st.evacuated++;
			afm_zs_release(zs, z);
		} else {
			afm_zs_rebucket(zs, z);
			afm_zs_hlist_update(zs, z);
		}
	}
	WARN_ON_ONCE(zs->victim_live);
	zs->victim_live = 0;
	afm_zs_unlock(zs);

	afm_zs_spare_drain(&sp);
	return nv;
}

/*
 * Compact zspages with at least @min_holes bytes of holes until holes drop
 * by @goal bytes (ULONG_MAX: as far as it goes) or a pass frees nothing.
 * Caller holds &afm_pool.compact_lock. Return: pages freed.
 */
static unsigned long afm_zs_compact_goal(struct afm_zs_pool *zs,
					 unsigned long goal,
					 unsigned int min_holes, gfp_t gfp)
{
	long before = atomic_long_read(&zs->total_pages), prev = before, now;
	unsigned long holes, done = 0;
	unsigned int pass;

	for (pass = 0; pass < AFM_ZS_MAX_PASSES && done < goal; pass++) {
		afm_zs_lock(zs);
		holes = afm_zs_holes(zs);
		afm_zs_unlock(zs);
		if (!afm_zs_pass(zs, goal - done, min_holes, gfp))
			break;
		now = atomic_long_read(&zs->total_pages);
		if (now >= prev)
			break;
		prev = now;
		afm_zs_lock(zs);
		if (holes > afm_zs_holes(zs))
			done += holes - afm_zs_holes(zs);
		afm_zs_unlock(zs);
		if (fatal_signal_pending(current))
			break;
	}
	now = atomic_long_read(&zs->total_pages);
	zs->st.freed += before > now ? before - now : 0;
	return before > now ? before - now : 0;
}

/* Compaction allocates destination zspages only without reclaim. */
#define AFM_ZS_COMPACT_GFP	(GFP_NOWAIT | __GFP_NOWARN | __GFP_HIGHMEM | \
				 __GFP_MOVABLE)

static void afm_zs_compact(struct afm_pool *pool)
{
	afm_zs_compact_goal(pool->store, ULONG_MAX, AFM_ZS_MIN_HOLES,
			    AFM_ZS_COMPACT_GFP | __GFP_DIRECT_RECLAIM);
}

/*
 * An automatic run: bring the holes (@rest: all of them, else those not in
 * the hole cache) down to half the trigger, taking zspages with at least
 * @min_holes bytes of holes.
 */
static void afm_zs_auto(struct afm_zs_pool *zs, bool rest,
			unsigned int min_holes)
{
	unsigned long holes, trigger, freed;

	mutex_lock(&zs->pool->compact_lock);
	afm_zs_lock(zs);
	trigger = afm_zs_trigger(zs);
	holes = rest ? afm_zs_holes(zs) : afm_zs_holes_unrecorded(zs);
	afm_zs_unlock(zs);
	if (holes > trigger / 2 && !zs->dying) {
		freed = afm_zs_compact_goal(zs, holes - trigger / 2, min_holes,
					    AFM_ZS_COMPACT_GFP);
		zs->st.auto_runs++;
		zs->st.auto_freed += freed;
	}
	mutex_unlock(&zs->pool->compact_lock);
}

static void afm_zs_compact_work(struct work_struct *work)
{
	afm_zs_auto(container_of(work, struct afm_zs_pool, compact_work),
		    false, AFM_ZS_AUTO_MIN_HOLES);
}

/*
 * The rest run: AFM_ZS_LATE after the last allocation, count the recorded
 * holes too (nothing is about to reuse them) and take zspages with an
 * eighth of their bytes in holes.
 */
static void afm_zs_late_work(struct work_struct *work)
{
	struct afm_zs_pool *zs = container_of(to_delayed_work(work),
					      struct afm_zs_pool, late_work);
	unsigned long now = jiffies, due = READ_ONCE(zs->last_alloc) +
					   AFM_ZS_LATE;

	if (!READ_ONCE(zs->late_force) && time_before(now, due)) {
		queue_delayed_work(system_unbound_wq, &zs->late_work,
				   due - now);
		return;
	}
	afm_zs_auto(zs, true, AFM_ZS_REST_MIN_HOLES);
}

/*
 * Pages compaction could give back: the hole bytes of the zspages on the
 * hole lists (at least AFM_ZS_MIN_HOLES each, what afm_zs_scan() takes),
 * counted by list, rounded down.
 */
static unsigned long afm_zs_count(struct afm_zs_pool *zs)
{
	unsigned long holes = 0;
	unsigned int n;

	afm_zs_lock(zs);
	for (n = 1; n < AFM_ZS_NR_HLISTS; n++)
		holes += zs->hlist_count[n] * n * AFM_ZS_MIN_HOLES;
	afm_zs_unlock(zs);
	return holes >= AFM_ZS_SIZE ? holes >> PAGE_SHIFT : SHRINK_EMPTY;
}

static unsigned long afm_zs_scan(struct afm_zs_pool *zs,
				 unsigned long nr_pages)
{
	unsigned long freed;

	if (!mutex_trylock(&zs->pool->compact_lock))
		return SHRINK_STOP;
	freed = afm_zs_compact_goal(zs, nr_pages << PAGE_SHIFT,
				    AFM_ZS_MIN_HOLES, AFM_ZS_COMPACT_GFP);
	zs->st.shrink_scans++;
	zs->st.shrink_freed += freed;
	mutex_unlock(&zs->pool->compact_lock);
	return freed ? freed : SHRINK_STOP;
}

static unsigned long afm_zs_count_objects(struct shrinker *shrinker,
					  struct shrink_control *sc)
{
	struct afm_zs_pool *zs = shrinker->private_data;

	if (afm_zs_quiet(zs, AFM_ZS_QUIET_SHRINKER))
		return SHRINK_EMPTY;
	return afm_zs_count(zs);
}

static unsigned long afm_zs_scan_objects(struct shrinker *shrinker,
					 struct shrink_control *sc)
{
	struct afm_zs_pool *zs = shrinker->private_data;

	if (afm_zs_quiet(zs, AFM_ZS_QUIET_SHRINKER))
		return SHRINK_STOP;
	return afm_zs_scan(zs, sc->nr_to_scan);
}

/* Page migration */

#ifdef CONFIG_COMPACTION
static bool afm_zs_isolate(struct page *page, bool kernel)
{
	/* Page locked and movable: its zspage is not freed under us. */
	struct afm_zspage *z = (struct afm_zspage *)page_private(page);
	struct afm_zs_pool *zs;

	if (!z || (READ_ONCE(z->flags) & AFM_ZS_DEAD))
		return false;
	zs = z->zs;
	if (kernel && afm_zs_quiet(zs, AFM_ZS_QUIET_MIGRATION))
		return false;
	atomic_long_inc(&zs->st.isolated);
	return true;
}

static bool afm_zs_isolate_page(struct page *page, isolate_mode_t mode)
{
	return afm_zs_isolate(page, true);
}

static int afm_zs_migrate_page(struct page *dst, struct page *src,
			       enum migrate_mode mode)
{
	struct afm_zspage *z = (struct afm_zspage *)page_private(src);
	struct afm_zs_pool *zs;
	struct page *prev = NULL, *p;

	if (WARN_ON_ONCE(!z))
		return -EINVAL;
	zs = z->zs;
	if (!afm_zg_lock(z, mode != MIGRATE_ASYNC)) {
		atomic_long_inc(&zs->st.migrate_busy);
		return -EAGAIN;
	}
	/* Find the link to @src: the descriptor's or its predecessor's. */
	for (p = z->first; p && p != src; p = (struct page *)p->index)
		prev = p;
	if (WARN_ON_ONCE(!p)) {
		afm_zg_unlock(z);
		return -EINVAL;
	}
	copy_highpage(dst, src);
	set_page_private(dst, (unsigned long)z);
	dst->index = src->index;
	__SetPageMovable(dst, &afm_zspage_mops);
	if (prev)
		WRITE_ONCE(prev->index, (unsigned long)dst);
	else
		WRITE_ONCE(z->first, dst);
	afm_zg_unlock(z);

	/* The zspage's reference moves to @dst; the core frees @src. */
	get_page(dst);
	afm_zs_reset_page(src);
	put_page(src);
	atomic_long_inc(&zs->st.migrated);
	return MIGRATEPAGE_SUCCESS;
}

/* Page locked, still movable: its zspage is alive. */
static void afm_zs_putback_page(struct page *page)
{
	struct afm_zspage *z = (struct afm_zspage *)page_private(page);

	if (!WARN_ON_ONCE(!z))
		atomic_long_inc(&z->zs->st.putback);
}

static const struct movable_operations afm_zspage_mops = {
	.isolate_page	= afm_zs_isolate_page,
	.migrate_page	= afm_zs_migrate_page,
	.putback_page	= afm_zs_putback_page,
};
#endif /* CONFIG_COMPACTION */

/* Pool setup and queries */

/* The first top level of table @t. Return: 0 or -ENOMEM. */
static int afm_zt_init(struct afm_zs_table *t)
{
	struct afm_zt_top *top;

	top = kzalloc(struct_size(top, dir, AFM_ZT_TOP_MIN), GFP_KERNEL);
	if (!top)
		return -ENOMEM;
	top->size = AFM_ZT_TOP_MIN;
	RCU_INIT_POINTER(t->top, top);
	return 0;
}

static int afm_zs_create(struct afm_pool *pool)
{
	struct afm_zs_pool *zs;
	unsigned int b;

	BUILD_BUG_ON(AFM_ZE_ID_BITS < 1);
	BUILD_BUG_ON(AFM_ZS_NR_BUCKETS >= AFM_ZS_NO_BUCKET);
	BUILD_BUG_ON(AFM_ZS_HOLE_BUCKETS > 64 || AFM_ZS_HOLE_SLOTS > U8_MAX);
	BUILD_BUG_ON(AFM_ZS_NR_HLISTS > 64 || AFM_ZS_HOLE_MIN < AFM_ZS_HDR);
	BUILD_BUG_ON(PAGE_SIZE + AFM_ZS_HDR >= BIT(AFM_ZH_LEN_BITS));
	BUILD_BUG_ON(sizeof(struct afm_zspage) % sizeof(u64));

	zs = kvzalloc(sizeof(*zs), GFP_KERNEL);
	if (!zs)
		return -ENOMEM;
	zs->cand = kvmalloc_array(AFM_ZS_MAX_VICTIMS, sizeof(*zs->cand),
				  GFP_KERNEL);
	if (!zs->cand)
		goto fail;
	zs->pool = pool;
	zs->idx_bits = AFM_ZH_IDX_BITS;
	spin_lock_init(&zs->lock);
	zs->htab.slot_size = sizeof(u64);
	zs->htab.per_page = AFM_ZH_PER_PAGE;
	zs->htab.open_free = AFM_ZH_PER_PAGE / 4;
	zs->htab.cur = ULONG_MAX;
	/* Handles stay far below the error values. */
	zs->htab.max_pages = (ULONG_MAX >> 1) / AFM_ZH_PER_PAGE;
	zs->htab.lock = &zs->lock;
	zs->htab.dshift = ilog2(AFM_ZT_PTRS);
	zs->dtab.slot_size = sizeof(struct afm_zspage);
	zs->dtab.per_page = AFM_ZD_PER_PAGE;
	zs->dtab.open_free = AFM_ZD_PER_PAGE / 4;
	zs->dtab.cur = ULONG_MAX;
	/* Zspage ids fit an entry and a u32. */
	zs->dtab.max_pages = min_t(u64, BIT_ULL(AFM_ZE_ID_BITS), U32_MAX) /
			     AFM_ZD_PER_PAGE;
	zs->dtab.lock = &zs->lock;
	zs->dtab.dshift = ilog2(AFM_ZT_PTRS);
	if (afm_zt_init(&zs->htab) || afm_zt_init(&zs->dtab))
		goto fail;
	for (b = 0; b < AFM_ZS_NR_BUCKETS; b++)
		INIT_LIST_HEAD(&zs->tails[b]);
	for (b = 0; b < AFM_ZS_NR_HLISTS; b++)
		INIT_LIST_HEAD(&zs->hlists[b]);
	INIT_LIST_HEAD(&zs->dead);
	INIT_WORK(&zs->free_work, afm_zs_free_work);
	INIT_WORK(&zs->compact_work, afm_zs_compact_work);
	INIT_DELAYED_WORK(&zs->late_work, afm_zs_late_work);

	zs->shrinker = shrinker_alloc(0, "afm-zspage-%s", pool->name);
	if (!zs->shrinker)
		goto fail;
	zs->shrinker->count_objects = afm_zs_count_objects;
	zs->shrinker->scan_objects = afm_zs_scan_objects;
	zs->shrinker->private_data = zs;
	zs->shrinker->seeks = DEFAULT_SEEKS;
	zs->shrinker->batch = AFM_ZS_MAX_VICTIMS * AFM_ZS_PAGES / 4;
	shrinker_register(zs->shrinker);

	pool->store = zs;
	return 0;

fail:
	kfree(rcu_dereference_protected(zs->htab.top, true));
	kfree(rcu_dereference_protected(zs->dtab.top, true));
	kvfree(zs->cand);
	kvfree(zs);
	return -ENOMEM;
}

static void afm_zs_destroy(struct afm_pool *pool)
{
	struct afm_zs_pool *zs = pool->store;
	unsigned long pg, end;
	unsigned int i;

	shrinker_free(zs->shrinker);
	afm_zs_lock(zs);
	zs->dying = true;
	afm_zs_unlock(zs);
	cancel_work_sync(&zs->compact_work);
	cancel_delayed_work_sync(&zs->late_work);

	/*
	 * Live objects are a caller bug; free their zspages anyway: pages
	 * must not stay movable with operations in a module that may go.
	 */
	WARN(afm_misused(zs->objects), "afmalloc: pool %s destroyed with %lu live objects\n",
	     pool->name, zs->objects);
	afm_zs_lock(zs);
	end = zs->dtab.end;
	for (pg = 0; pg < end; pg++) {
		struct afm_zspage *base = afm_zt_page(&zs->dtab, pg);

		for (i = 0; base && i < AFM_ZD_PER_PAGE; i++) {
			struct afm_zspage *z = &base[i];

			if (z->flags != AFM_ZS_USED)
				continue;
			afm_zs_unbucket(zs, z);
			zs->tail_bytes -= AFM_ZS_SIZE - z->tail;
			zs->zspages--;
			zs->dead_zspages++;
			z->flags |= AFM_ZS_DEAD;
			afm_zs_hlist_update(zs, z);
			list_add_tail(&z->list, &zs->dead);
		}
	}
	afm_zs_unlock(zs);
	afm_zs_free_dead(zs);
	flush_work(&zs->free_work);

	afm_zt_destroy(zs, &zs->htab);
	afm_zt_destroy(zs, &zs->dtab);
	WARN_ON_ONCE(atomic_long_read(&zs->total_pages));
	kvfree(zs->cand);
	kvfree(zs);
}

static unsigned long afm_zs_total_pages(struct afm_pool *pool)
{
	struct afm_zs_pool *zs = pool->store;

	return atomic_long_read(&zs->total_pages);
}

static void afm_zs_stats(struct afm_pool *pool, struct afm_store_stats *st)
{
	struct afm_zs_pool *zs = pool->store;

	afm_zs_lock(zs);
	st->objects = zs->objects;
	st->stored_bytes = zs->live_bytes;
	st->meta_bytes = (zs->htab.pages + zs->htab.dirs + zs->dtab.pages +
			  zs->dtab.dirs) << PAGE_SHIFT;
	afm_zs_unlock(zs);
}

/*
 * Rows of the debugfs "classes" table. The first AFM_ZS_GROUPS rows are
 * zspages by fill (live bytes / AFM_ZS_SIZE, in eighths: "fill0-12" has
 * less than 1/8 live): objs = live objects, direct = hole bytes, slabs =
 * zspages, pages = their pages. The others are counters, documented in
 * afm_zs_class_stats().
 */
#define AFM_ZS_GROUPS		8
enum {
	AFM_ZS_ROW_HANDLES = AFM_ZS_GROUPS,
	AFM_ZS_ROW_DESCS,
	AFM_ZS_ROW_FREE,
	AFM_ZS_ROW_MIGRATE,
	AFM_ZS_ROW_COMPACT,
	AFM_ZS_ROW_AUTO,
	AFM_ZS_ROW_REUSE,
	AFM_ZS_NR_ROWS,
};

static unsigned int afm_zs_nr_classes(struct afm_pool *pool)
{
	return AFM_ZS_NR_ROWS;
}

/*
 * Counter rows (columns objs / direct / slabs / pages):
 *   handles  live handles / free entries in table pages / table pages /
 *            table + directory pages
 *   descs    descriptors in use / free descriptor slots / descriptor
 *            pages / descriptor + directory pages
 *   free     hole bytes / tail bytes / dead zspages waiting for the
 *            deferred free / hole bytes in pages (the shrinker's count)
 *   migrate  pages migrated (contents moved to a new page) / migrations
 *            refused (-EAGAIN, zspage busy) / pages isolated / isolated
 *            pages put back
 *   compact  objects moved / victims emptied / passes / pages freed by
 *            compaction (manual, automatic and shrinker)
 *   auto     automatic runs / shrinker scans / pages freed by automatic
 *            runs / pages freed by shrinker scans
 *   reuse    objects placed in recorded holes / their bytes / holes
 *            recorded now / their bytes
 */
static void afm_zs_class_stats(struct afm_pool *pool, unsigned int class,
			       char name[16],
			       unsigned long val[NR_AFM_CLASS_STATS])
{
	static const char *const names[] = {
		"handles", "descs", "free", "migrate", "compact", "auto",
		"reuse",
	};
	struct afm_zs_pool *zs = pool->store;
	unsigned long *v = val;

	memset(val, 0, sizeof(unsigned long) * NR_AFM_CLASS_STATS);
	if (class < AFM_ZS_GROUPS) {
		unsigned long pg;
		unsigned int i;

		snprintf(name, 16, "fill%u-%u", class * 100 / AFM_ZS_GROUPS,
			 (class + 1) * 100 / AFM_ZS_GROUPS);
		for (pg = 0; ; pg++) {
			struct afm_zspage *base;

			/* One descriptor page per hold of the lock. */
			afm_zs_lock(zs);
			if (pg >= zs->dtab.end) {
				afm_zs_unlock(zs);
				break;
			}
			base = afm_zt_page(&zs->dtab, pg);
			for (i = 0; base && i < AFM_ZD_PER_PAGE; i++) {
				struct afm_zspage *z = &base[i];

				if (!(z->flags & AFM_ZS_USED) ||
				    (z->flags & AFM_ZS_DEAD) ||
				    min_t(unsigned int, z->live * AFM_ZS_GROUPS /
					  AFM_ZS_SIZE, AFM_ZS_GROUPS - 1) != class)
					continue;
				v[AFM_CLASS_OBJS] += z->objs;
				v[AFM_CLASS_DIRECT] += afm_zs_zholes(z);
				v[AFM_CLASS_SLABS]++;
				v[AFM_CLASS_PAGES] += AFM_ZS_PAGES;
			}
			afm_zs_unlock(zs);
			cond_resched();
		}
		return;
	}
	if (class >= AFM_ZS_NR_ROWS)
		return;
	strscpy(name, names[class - AFM_ZS_GROUPS], 16);
	afm_zs_lock(zs);
	switch (class) {
	case AFM_ZS_ROW_HANDLES:
		v[0] = zs->htab.used;
		v[1] = zs->htab.pages * AFM_ZH_PER_PAGE - zs->htab.used;
		v[2] = zs->htab.pages;
		v[3] = zs->htab.pages + zs->htab.dirs;
		break;
	case AFM_ZS_ROW_DESCS:
		v[0] = zs->dtab.used;
		v[1] = zs->dtab.pages * AFM_ZD_PER_PAGE - zs->dtab.used;
		v[2] = zs->dtab.pages;
		v[3] = zs->dtab.pages + zs->dtab.dirs;
		break;
	case AFM_ZS_ROW_FREE:
		v[0] = afm_zs_holes(zs);
		v[1] = zs->tail_bytes;
		v[2] = zs->dead_zspages;
		v[3] = afm_zs_holes(zs) >> PAGE_SHIFT;
		break;
	case AFM_ZS_ROW_MIGRATE:
		v[0] = atomic_long_read(&zs->st.migrated);
		v[1] = atomic_long_read(&zs->st.migrate_busy);
		v[2] = atomic_long_read(&zs->st.isolated);
		v[3] = atomic_long_read(&zs->st.putback);
		break;
	case AFM_ZS_ROW_COMPACT:
		v[0] = zs->st.moved;
		v[1] = zs->st.evacuated;
		v[2] = zs->st.passes;
		v[3] = zs->st.freed;
		break;
	case AFM_ZS_ROW_AUTO:
		v[0] = zs->st.auto_runs;
		v[1] = zs->st.shrink_scans;
		v[2] = zs->st.auto_freed;
		v[3] = zs->st.shrink_freed;
		break;
	case AFM_ZS_ROW_REUSE: {
		unsigned int b;

		v[0] = zs->st.hole_reused;
		v[1] = zs->st.hole_bytes;
		for (b = 0; b < AFM_ZS_HOLE_BUCKETS; b++)
			v[2] += zs->nr_holes[b];
		v[3] = zs->hole_rec_bytes;
		break;
	}
	}
	afm_zs_unlock(zs);
}

static unsigned long afm_zs_aux_bytes(struct afm_pool *pool)
{
	struct afm_zs_pool *zs = pool->store;
	unsigned long bytes;

	rcu_read_lock();
	bytes = struct_size_t(struct afm_zt_top, dir,
			      rcu_dereference(zs->htab.top)->size) +
		struct_size_t(struct afm_zt_top, dir,
			      rcu_dereference(zs->dtab.top)->size);
	rcu_read_unlock();
	return bytes + sizeof(struct afm_zs_pool) +
	       AFM_ZS_MAX_VICTIMS * sizeof(u32);
}

/*
 * Footprint of an object of @size bytes, in bytes: the object, its header,
 * its entry and its share of a descriptor (rounded up).
 */
static unsigned int afm_zs_footprint(unsigned int size)
{
	return size + AFM_ZS_HDR + sizeof(u64) +
	       DIV_ROUND_UP((size + AFM_ZS_HDR) *
			    (PAGE_SIZE / AFM_ZD_PER_PAGE), AFM_ZS_SIZE);
}

static size_t afm_zs_huge_class_size(struct afm_pool *pool)
{
	unsigned int size = PAGE_SIZE;

	while (size > 1 && afm_zs_footprint(size - 1) >= PAGE_SIZE)
		size--;
	return size;
}

static unsigned int afm_zs_class_index(struct afm_pool *pool,
				       unsigned int size)
{
	return afm_zs_footprint(size);
}

const struct afm_store_ops afm_zspage_store_ops = {
	.name			= "zspage",
	.create			= afm_zs_create,
	.destroy		= afm_zs_destroy,
	.malloc			= afm_zs_malloc,
	.free			= afm_zs_free,
	.map			= afm_zs_map,
	.unmap			= afm_zs_unmap,
	.read			= afm_zs_read,
	.write			= afm_zs_write,
	.obj_size		= afm_zs_obj_size,
	.total_pages		= afm_zs_total_pages,
	.compact		= afm_zs_compact,
	.stats			= afm_zs_stats,
	.nr_classes		= afm_zs_nr_classes,
	.class_stats		= afm_zs_class_stats,
	.aux_bytes		= afm_zs_aux_bytes,
	.huge_class_size	= afm_zs_huge_class_size,
	.class_index		= afm_zs_class_index,
};

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/* The counters of @zs as they stand. Pool lock held. */
static void afm_zs_read_counters(struct afm_zs_pool *zs,
				 struct afm_zs_counters *c)
{
	lockdep_assert_held(&zs->lock);
	c->objects = zs->objects;
	c->live_bytes = zs->live_bytes;
	c->zspages = zs->zspages;
	c->dead_zspages = zs->dead_zspages;
	c->hole_bytes = afm_zs_holes(zs);
	c->tail_bytes = zs->tail_bytes;
	c->data_pages = (zs->zspages + zs->dead_zspages) * AFM_ZS_PAGES;
	c->table_pages = zs->htab.pages + zs->htab.dirs;
	c->desc_pages = zs->dtab.pages + zs->dtab.dirs;
	c->total_pages = atomic_long_read(&zs->total_pages);
	c->migrated = atomic_long_read(&zs->st.migrated);
	c->migrate_busy = atomic_long_read(&zs->st.migrate_busy);
	c->isolated = atomic_long_read(&zs->st.isolated);
	c->putback = atomic_long_read(&zs->st.putback);
	c->isolated_freed = atomic_long_read(&zs->st.isolated_freed);
	c->auto_runs = zs->st.auto_runs;
	c->auto_freed = zs->st.auto_freed;
	c->passes = zs->st.passes;
	c->moved = zs->st.moved;
	c->walked = zs->st.walked;
	c->hole_reused = zs->st.hole_reused;
	c->hole_recorded = zs->hole_rec_bytes;
}

/**
 * afm_zs_get_counters() - snapshot of the store's counters (KUnit hook)
 * @pool: a zspage-store pool
 * @c: filled in
 *
 * Context: process or softirq context; takes the pool lock.
 */
void afm_zs_get_counters(struct afm_pool *pool, struct afm_zs_counters *c)
{
	struct afm_zs_pool *zs = pool->store;

	afm_zs_lock(zs);
	afm_zs_read_counters(zs, c);
	afm_zs_unlock(zs);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_get_counters);

/*
 * Pages of table @t, counted from its directories: table pages plus
 * directory pages. Counts a directory whose own count of table pages is
 * wrong in *@bad. Pool lock held.
 */
static unsigned long afm_zs_audit_table(const struct afm_zs_table *t,
					unsigned int *bad)
{
	const struct afm_zt_top *top = afm_zt_top(t);
	unsigned long i, d, pages = 0, n;

	for (i = 0; i < top->size; i++) {
		const unsigned long *dir = top->dir[i];

		if (!dir)
			continue;
		for (n = 0, d = 0; d < 1UL << t->dshift; d++)
			n += !!dir[d];
		if (n != page_private(virt_to_page(dir)) || !n)
			(*bad)++;
		pages += n + 1;
	}
	return pages;
}

/*
 * Zspage @z, pool lock held: its page chain has AFM_ZS_PAGES pages, each
 * pointing back to it. Return: 0 if so, else 1.
 */
static unsigned int afm_zs_audit_chain(struct afm_zspage *z)
{
	struct page *page;
	unsigned int n = 0, bad = 0;

	afm_zg_in(z);
	for (page = READ_ONCE(z->first); page && n <= AFM_ZS_PAGES;
	     page = (struct page *)READ_ONCE(page->index)) {
		if (page_private(page) != (unsigned long)z)
			bad = 1;
		n++;
	}
	afm_zg_out(z);
	return bad || n != AFM_ZS_PAGES;
}

/*
 * Live zspage @z, pool lock held: its extents tile [0, fill offset) and
 * those a live entry points to (afm_zs_owner()) are its objects. Return:
 * 0 if so, else 1.
 */
static unsigned int afm_zs_audit_extents(struct afm_zs_pool *zs,
					 struct afm_zspage *z)
{
	unsigned int off = 0, len, objs = 0;
	unsigned long idx;
	s64 e;

	while (off < z->tail) {
		len = afm_zs_hdr_read(z, off, &idx);
		if (len < AFM_ZS_HDR || off + len > z->tail)
			return 1;
		if (afm_zs_owner(zs, z, off, idx, &e)) {
			if (len != afm_ze_size(e) + AFM_ZS_HDR)
				return 1;
			objs++;
		}
		off += len;
	}
	return objs != z->objs;
}

/**
 * afm_zs_test_audit() - counters against a recount (KUnit hook)
 * @pool: a zspage-store pool
 * @c: filled with the counters, as afm_zs_get_counters()
 * @rc: filled with what the tables say, in the same hold of the pool lock:
 *	objects and live bytes from the live handle entries; zspages, dead
 *	zspages, hole and tail bytes from the descriptors; data pages from
 *	the descriptors in use, dead or not; table and descriptor pages from
 *	the directories; @rc->total_pages their sum. Event counters are 0.
 *
 * Also checks what no counter shows: the descriptors' live bytes and
 * objects add up to the entries', the table's count of used entries
 * matches, every live entry lies below the fill offset of a live zspage
 * and its header names its handle and extent length, every live zspage's
 * extents tile it up to its fill offset with one object extent per live
 * object, it is on the hole list its holes call for and has a chain of
 * AFM_ZS_PAGES pages pointing back to it, directory pages count their
 * table pages, and the hole cache's byte count is the sum of its records.
 *
 * Context: process context; takes the pool lock for the whole walk.
 * Return: the number of inconsistencies found (0 when all is well).
 */
unsigned int afm_zs_test_audit(struct afm_pool *pool,
			       struct afm_zs_counters *c,
			       struct afm_zs_counters *rc)
{
	struct afm_zs_pool *zs = pool->store;
	unsigned long pg, i, objs = 0, live = 0, rec = 0, idx;
	unsigned int bad = 0, b, len;

	memset(rc, 0, sizeof(*rc));
	afm_zs_lock(zs);
	afm_zs_read_counters(zs, c);
	for (pg = 0; pg < zs->dtab.end; pg++) {
		struct afm_zspage *base = afm_zt_page(&zs->dtab, pg);

		for (i = 0; base && i < AFM_ZD_PER_PAGE; i++) {
			struct afm_zspage *z = &base[i];

			if (!(z->flags & AFM_ZS_USED))
				continue;
			rc->data_pages += AFM_ZS_PAGES;
			if (z->flags & AFM_ZS_DEAD) {
				rc->dead_zspages++;
				continue;
			}
			rc->zspages++;
			if (z->id != pg * AFM_ZD_PER_PAGE + i ||
			    z->tail > AFM_ZS_SIZE ||
			    z->live + z->objs * AFM_ZS_HDR > z->tail)
				bad++;
			if (z->hlist_nr != (z->flags == AFM_ZS_USED ?
					    afm_zs_zholes(z) / AFM_ZS_MIN_HOLES : 0))
				bad++;
			bad += afm_zs_audit_extents(zs, z);
			rc->tail_bytes += AFM_ZS_SIZE - z->tail;
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
			if (!z || (z->flags & ~AFM_ZS_VICTIM) != AFM_ZS_USED ||
			    afm_ze_off(e) < AFM_ZS_HDR ||
			    afm_ze_off(e) + afm_ze_size(e) > z->tail) {
				bad++;
				continue;
			}
			/* The header names the handle and the extent. */
			len = afm_zs_hdr_read(z, afm_ze_off(e) - AFM_ZS_HDR,
					      &idx);
			if (len != afm_ze_size(e) + AFM_ZS_HDR ||
			    idx != ((pg * AFM_ZH_PER_PAGE + i + 1) &
				    (BIT_ULL(zs->idx_bits) - 1)))
				bad++;
		}
	}
	if (objs != rc->objects || live != rc->live_bytes ||
	    zs->htab.used != rc->objects)
		bad++;
	rc->table_pages = afm_zs_audit_table(&zs->htab, &bad);
	rc->desc_pages = afm_zs_audit_table(&zs->dtab, &bad);
	rc->total_pages = rc->data_pages + rc->table_pages + rc->desc_pages;
	for (b = 0; b < AFM_ZS_HOLE_BUCKETS; b++) {
		for (i = 0; i < zs->nr_holes[b]; i++)
			rec += zs->holes[b][i].size;
	}
	if (rec != zs->hole_rec_bytes)
		bad++;
	afm_zs_unlock(zs);
	return bad;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_audit);

/**
 * afm_zs_test_quiet() - keep the kernel away from a pool (KUnit hook)
 * @pool: a zspage-store pool
 * @what: AFM_ZS_QUIET_SHRINKER: the pool's shrinker counts nothing and
 *	scans nothing when the kernel calls it (afm_zs_shrinker_count() and
 *	afm_zs_shrinker_scan() still work); AFM_ZS_QUIET_MIGRATION: the
 *	kernel cannot isolate its pages for migration
 *	(afm_zs_test_isolate_page() still can); 0: neither (the default).
 *
 * For tests that assert exact counts of what compaction or migration did,
 * which the debug guest's drop_caches and compact_memory loops would
 * otherwise race with. Pages the kernel had isolated before stay so.
 *
 * Context: any context.
 */
void afm_zs_test_quiet(struct afm_pool *pool, unsigned int what)
{
	struct afm_zs_pool *zs = pool->store;

	WRITE_ONCE(zs->test_quiet, what);
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
 * Return: 0, or -ENOENT if @handle is not a live object.
 */
int afm_zs_obj_info(struct afm_pool *pool, unsigned long handle,
		    struct afm_zs_obj_info *info)
{
	struct afm_zs_pool *zs = pool->store;
	struct afm_zspage *z;
	atomic64_t *ent;
	int ret = -ENOENT;
	u64 e;

	afm_zs_lock(zs);
	ent = afm_zs_entry(zs, handle);
	e = ent ? atomic64_read(ent) : 0;
	if (e & AFM_ZE_LIVE) {
		z = afm_zs_desc(zs, afm_ze_id(e));
		info->zspage_id = afm_ze_id(e);
		info->offset = afm_ze_off(e);
		info->size = afm_ze_size(e);
		info->pins = (e & AFM_ZE_PINS) >> AFM_ZE_PIN_SHIFT;
		afm_zg_in(z);
		info->page = afm_zs_page(z, info->offset >> PAGE_SHIFT);
		afm_zg_out(z);
		ret = 0;
	}
	afm_zs_unlock(zs);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_obj_info);

/**
 * afm_zs_test_bad_holes() - check the hole cache (KUnit hook)
 * @pool: a zspage-store pool
 * @nr: set to the number of recorded holes
 *
 * Context: takes the pool lock.
 * Return: the number of records that do not describe free bytes of a
 * live, non-victim zspage below its fill offset (0 when all is well).
 */
unsigned int afm_zs_test_bad_holes(struct afm_pool *pool, unsigned int *nr)
{
	struct afm_zs_pool *zs = pool->store;
	unsigned int b, i, bad = 0;

	*nr = 0;
	afm_zs_lock(zs);
	for (b = 0; b < AFM_ZS_HOLE_BUCKETS; b++) {
		for (i = 0; i < zs->nr_holes[b]; i++) {
			struct afm_zs_hole *h = &zs->holes[b][i];
			struct afm_zspage *z = afm_zs_desc(zs, h->id);

			(*nr)++;
			if (!z || z->flags != AFM_ZS_USED || z->id != h->id ||
			    h->off + h->size > z->tail ||
			    afm_zs_hole_bucket(h->size) != b)
				bad++;
		}
	}
	afm_zs_unlock(zs);
	return bad;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_bad_holes);

/**
 * afm_zs_test_pin() - pin an object as a mapping would (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Takes the entry pin only (not the zspage gate), so the caller may sleep
 * while compaction runs.
 *
 * Return: true if pinned.
 */
bool afm_zs_test_pin(struct afm_pool *pool, unsigned long handle)
{
	atomic64_t *ent = afm_zs_entry(pool->store, handle);
	u64 e;

	return ent && afm_ze_pin(ent, &e);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_pin);

/**
 * afm_zs_test_unpin() - drop a pin of afm_zs_test_pin() (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 */
void afm_zs_test_unpin(struct afm_pool *pool, unsigned long handle)
{
	afm_ze_unpin(afm_zs_entry(pool->store, handle));
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_unpin);

/**
 * afm_zs_test_hold_zspage() - enter an object's zspage (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Pins the object and takes its zspage's gate shared, as a mapping does:
 * returns with preemption disabled.
 *
 * Return: true on success.
 */
bool afm_zs_test_hold_zspage(struct afm_pool *pool, unsigned long handle)
{
	atomic64_t *ent;
	u64 e;

	return afm_zs_get(pool->store, handle, &ent, &e);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_hold_zspage);

/**
 * afm_zs_test_release_zspage() - undo afm_zs_test_hold_zspage() (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 */
void afm_zs_test_release_zspage(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = pool->store;
	atomic64_t *ent = afm_zs_entry(zs, handle);

	afm_zs_put(afm_zs_desc(zs, afm_ze_id(atomic64_read(ent))), ent);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_release_zspage);

/**
 * afm_zs_test_get_page() - a referenced page of an object (KUnit hook)
 * @pool: a zspage-store pool
 * @handle: the object
 *
 * Return: the page holding the object's first byte with a reference taken
 * (put_page() it), or NULL if @handle is not a live object.
 */
struct page *afm_zs_test_get_page(struct afm_pool *pool, unsigned long handle)
{
	struct afm_zs_pool *zs = pool->store;
	struct page *page = NULL;
	struct afm_zspage *z;
	atomic64_t *ent;
	u64 e;

	afm_zs_lock(zs);
	ent = afm_zs_entry(zs, handle);
	e = ent ? atomic64_read(ent) : 0;
	if (e & AFM_ZE_LIVE) {
		z = afm_zs_desc(zs, afm_ze_id(e));
		afm_zg_in(z);
		page = afm_zs_page(z, afm_ze_off(e) >> PAGE_SHIFT);
		get_page(page);
		afm_zg_out(z);
	}
	afm_zs_unlock(zs);
	return page;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_get_page);

/**
 * afm_zs_flush_work() - wait for queued automatic compaction and deferred
 *	frees (KUnit hook)
 * @pool: a zspage-store pool
 *
 * A pending late run is run at once, as if the pool were at rest.
 *
 * Context: process context, may sleep.
 */
void afm_zs_flush_work(struct afm_pool *pool)
{
	struct afm_zs_pool *zs = pool->store;

	int i;

	WRITE_ONCE(zs->late_force, true);
	/*
	 * Each of these may queue the others (a free queues compaction, a
	 * compaction pass queues deferred frees): repeat until none is
	 * pending, a bounded number of times.
	 */
	for (i = 0; i < 8; i++) {
		flush_work(&zs->compact_work);
		/* A late run pending: run it now. */
		flush_delayed_work(&zs->late_work);
		flush_work(&zs->free_work);
		if (!work_pending(&zs->compact_work) &&
		    !delayed_work_pending(&zs->late_work) &&
		    !work_pending(&zs->free_work))
			break;
	}
	WRITE_ONCE(zs->late_force, false);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_flush_work);

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
	return afm_zs_count(pool->store);
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
	return afm_zs_scan(pool->store, nr_pages);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_shrinker_scan);

/**
 * afm_zs_set_auto_permille() - set the automatic compaction trigger
 *	(KUnit hook)
 * @permille: new value of the zspage_auto_permille parameter
 */
void afm_zs_set_auto_permille(unsigned int permille)
{
	WRITE_ONCE(afm_zs_auto_permille, permille);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_set_auto_permille);

/**
 * afm_zs_get_auto_permille() - read the automatic compaction trigger
 *	(KUnit hook)
 *
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
 * Return: the size of a handle table entry.
 */
unsigned int afm_zs_entry_bytes(void)
{
	return sizeof(u64);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_entry_bytes);

/**
 * afm_zs_test_set_idx_bits() - fewer handle bits in headers (KUnit hook)
 * @pool: an empty zspage-store pool
 * @bits: 1 to the default (27 with 4 KiB pages)
 *
 * Handles then share header bits every 2^@bits handles, as handles above
 * 2^27 do in a pool that large: compaction must tell them apart.
 *
 * Context: process context; takes the pool lock.
 * Return: 0, or -EINVAL if @bits is out of range or the pool has objects.
 */
int afm_zs_test_set_idx_bits(struct afm_pool *pool, unsigned int bits)
{
	struct afm_zs_pool *zs = pool->store;
	int ret = -EINVAL;

	afm_zs_lock(zs);
	if (bits && bits <= AFM_ZH_IDX_BITS && !zs->objects) {
		zs->idx_bits = bits;
		ret = 0;
	}
	afm_zs_unlock(zs);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_set_idx_bits);

/**
 * afm_zs_test_small_dirs() - directory pages with few entries (KUnit hook)
 * @pool: an empty zspage-store pool (no directory pages)
 * @shift: log2 of the table pages per directory, from 0 to the default
 *	(9 with 4 KiB pages)
 *
 * The handle and descriptor tables then need a directory every 2^@shift
 * table pages, so that a test reaches many directories, and the growth of
 * the top level, with few objects.
 *
 * Context: process context; takes the pool lock.
 * Return: 0, or -EINVAL if @shift is out of range or the pool has
 * directory pages.
 */
int afm_zs_test_small_dirs(struct afm_pool *pool, unsigned int shift)
{
	struct afm_zs_pool *zs = pool->store;
	int ret = -EINVAL;

	afm_zs_lock(zs);
	if (shift <= ilog2(AFM_ZT_PTRS) && !zs->htab.dirs && !zs->dtab.dirs) {
		zs->htab.dshift = shift;
		zs->dtab.dshift = shift;
		ret = 0;
	}
	afm_zs_unlock(zs);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_small_dirs);

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
#endif /* CONFIG_AFMALLOC_KUNIT_TEST */
