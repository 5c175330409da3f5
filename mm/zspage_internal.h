/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * afmalloc zspage store internals, shared by its files (the design, the
 * handle encoding and the lock order are in the map at the top of
 * zspage_store.c): constants, the pool, zspage and table structures, the
 * inline helpers of the hot paths (entries, table lookups, taking and
 * freeing slots through the magazine, pins, the shared gate, object and
 * hole headers through cursors) and what each file offers the others.
 *
 *   zspage_table.c    handle and descriptor tables (slot tables), spares
 *   zspage_pages.c    zspages: exclusive gate, copies, object headers, hole
 *                     lists, tail buckets, creation and freeing
 *   zspage_alloc.c    hole index, placement, malloc, free, map, read, write
 *   zspage_compact.c  compaction passes, automatic runs, the shrinker
 *   zspage_migrate.c  page migration callbacks
 *   zspage_store.c    pool setup and teardown, module parameters, statistics
 *   zspage_hooks.c    KUnit hooks (CONFIG_AFMALLOC_KUNIT_TEST only)
 */
#ifndef _MM_AFMALLOC_ZSPAGE_INTERNAL_H
#define _MM_AFMALLOC_ZSPAGE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/migrate.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pagemap.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/prefetch.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/unaligned.h>
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
/*
 * A directory is a block of AFM_ZT_PTRS table page addresses, an eighth of
 * a page (64 with 4 KiB pages): the directory blocks of a shard's three
 * tables share its directory pages (struct afm_zs_pool, @dpages), so that
 * a shard that holds little pays one page for them, not three.
 */
#define AFM_ZT_DIRS_PER_PAGE	8
#define AFM_ZT_DIR_BYTES	(PAGE_SIZE / AFM_ZT_DIRS_PER_PAGE)
#define AFM_ZT_PTRS		(AFM_ZT_DIR_BYTES / sizeof(unsigned long))
#define AFM_ZT_DIRS_FULL	GENMASK(AFM_ZT_DIRS_PER_PAGE - 1, 0)
/*
 * A directory page's ->private: the blocks in use (AFM_ZT_DIRS_FULL),
 * and above them the blocks cooling down: freed at or before the RCU
 * cookie in its ->index was taken, they wait for the grace period it
 * names (afm_zt_dir_free()).
 */
#define AFM_ZT_DIRS_COOL_SHIFT	AFM_ZT_DIRS_PER_PAGE
#define AFM_ZT_OPEN		1UL	/* directory entry: page open for allocation */
/* afm_zt_find()'s table page when the slot comes from the magazine. */
#define AFM_ZT_FROM_MAG		ULONG_MAX
#define AFM_ZH_PER_PAGE		(PAGE_SIZE / sizeof(u64))
#define AFM_ZD_PER_PAGE		(PAGE_SIZE / sizeof(struct afm_zspage))
#define AFM_ZR_PER_PAGE		(PAGE_SIZE / sizeof(struct afm_zs_hrec))

/*
 * Tail buckets: AFM_ZS_GRAIN wide below PAGE_SIZE, AFM_ZS_BIG_STEP (an
 * eighth of a zspage: a page with 4 KiB pages) above, so that a 16 KiB
 * page's zspage has as fine a choice of large tails as a 4 KiB one's.
 */
#define AFM_ZS_SMALL_BUCKETS	128
#define AFM_ZS_GRAIN		(PAGE_SIZE / AFM_ZS_SMALL_BUCKETS)
#define AFM_ZS_BIG_STEP		(AFM_ZS_SIZE / 8)
#define AFM_ZS_NR_BUCKETS	(AFM_ZS_SMALL_BUCKETS + 1 + \
				 (AFM_ZS_SIZE - PAGE_SIZE) / AFM_ZS_BIG_STEP)
#define AFM_ZS_NO_BUCKET	U8_MAX
/* Entries of the best-fitting bucket tried before taking a larger one. */
#define AFM_ZS_FIT_TRIES	4

/*
 * Hole index (see "Placement"): every hole of at least AFM_ZS_HOLE_MIN
 * bytes of a live zspage that allocation may use has a record (struct
 * afm_zs_hrec) in the pool's hole table, on one of AFM_ZS_NR_HCLASSES
 * lists by length (AFM_ZS_HCLASS_W bytes wide); the hole's header has
 * AFM_ZH_HOLE set and is followed by its record number (AFM_ZS_RECNO
 * bytes), so that a free finds the record of the hole after it, and its
 * last AFM_ZS_RECNO bytes hold the record number + 1 (its footer), so that
 * a free finds the record of the hole before it. The lists
 * live in pool-owned table pages, never in the zspages: taking a hole off
 * a list touches no data page. Allocation looks at up to
 * AFM_ZS_HOLE_TRIES holes of the class of the extent for the first fit,
 * then takes the first hole of the next class that has any. A rest smaller
 * than AFM_ZS_HOLE_MIN (which could only hold objects of at most 11
 * bytes) stays in the object's extent as slack rather than becoming a
 * hole. A freed extent merges with the holes before and after it up to
 * AFM_ZS_MAX_EXT bytes (a hole of AFM_ZS_HOLE_MIN bytes has room for its
 * header, record number and footer).
 */
#define AFM_ZS_RECNO		4
#define AFM_ZS_HOLE_HDR		(AFM_ZS_HDR + AFM_ZS_RECNO)
#define AFM_ZS_HOLE_MIN		17
#define AFM_ZS_MAX_EXT		(BIT(AFM_ZH_LEN_BITS) - 1)
#define AFM_ZS_HCLASS_W		16
#define AFM_ZS_NR_HCLASSES	(BIT(AFM_ZH_LEN_BITS) / AFM_ZS_HCLASS_W)
#define AFM_ZS_HOLE_TRIES	8
/* Indexed hole bytes left to allocation: 1/64 of the live bytes. */
#define AFM_ZS_RESERVE_SHIFT	6
/* afm_zs_hdr_read()'s handle bits for a hole on the hole index. */
#define AFM_ZS_LINKED		ULONG_MAX

/* Zspage flags, under the pool lock. */
#define AFM_ZS_USED		BIT(0)	/* descriptor slot in use */
#define AFM_ZS_VICTIM		BIT(1)	/* being evacuated by compaction */
#define AFM_ZS_DEAD		BIT(2)	/* empty, pages being freed */

/*
 * Zspage gate: shared count, EXCL, WAIT (an exclusive taker waits for the
 * sharers inside to leave: no new sharer enters meanwhile).
 */
#define AFM_ZG_EXCL		BIT(29)
#define AFM_ZG_WAIT		BIT(30)
#define AFM_ZG_COUNT		(AFM_ZG_EXCL - 1)
/* Spins of a compaction pass leaving the pool lock to waiting migrations. */
#define AFM_ZS_YIELD_SPINS	1024

/*
 * Object headers (see "Reverse map"): AFM_ZS_HDR bytes, little endian,
 * holding the extent length in the low AFM_ZH_LEN_BITS bits, AFM_ZH_HOLE
 * (the extent is a hole on a hole list) and the handle, modulo
 * 2^AFM_ZH_IDX_BITS, above them.
 */
#define AFM_ZS_HDR		5
#define AFM_ZH_LEN_BITS		(PAGE_SHIFT + 1)
#define AFM_ZH_HOLE		BIT_ULL(AFM_ZH_LEN_BITS)
#define AFM_ZH_IDX_SHIFT	(AFM_ZH_LEN_BITS + 1)
#define AFM_ZH_IDX_BITS		(AFM_ZS_HDR * BITS_PER_BYTE - AFM_ZH_IDX_SHIFT)
/* Largest extent alignment (module parameter zspage_align). */
#define AFM_ZS_MAX_ALIGN	64

/* Compaction. */
#define AFM_ZS_MAX_VICTIMS	512
/*
 * Smallest hole total of a victim: on request (afm_compact(), shrinker)
 * and at rest any zspage with 1/64 of its bytes in holes (512 bytes,
 * whatever the page size: an eighth of a 4 KiB page); automatic runs
 * while writes go on only take zspages with a quarter of their bytes in
 * holes, so that they never copy more than 3 bytes per byte they give
 * back: holes spread thin by overwrites (5-10% in every zspage) are left
 * to the writes that reuse them, to the rest run and to the shrinker,
 * while those a bulk free leaves (a process exiting) are taken. Taking
 * zspages with an eighth in holes copied more than an object per write in
 * the speed benchmark and cut its allocation rate by more than half.
 */
#define AFM_ZS_MIN_HOLES	(AFM_ZS_SIZE / 64)
#define AFM_ZS_AUTO_MIN_HOLES	(AFM_ZS_SIZE / 4)
/*
 * Compaction moves an object into an indexed hole (of at most
 * AFM_ZS_DEST_TRIES looked at, from the class of its extent up) of a
 * zspage with fewer than AFM_ZS_DEST_HOLES bytes of holes (and fewer
 * than the run's victims have: the rest run and afm_compact() take
 * zspages with AFM_ZS_MIN_HOLES) when one fits, else to the end of a
 * tail: a hole it fills is given back as well as the victim's, so it
 * copies about half as much per byte it gives back, and dense zspages
 * stay dense (KUnit afm_zs_test_overwrite_auto, "fio
 * mixwrite": 0.9 bytes a byte instead of 2.2, mean overhead 83 per mille
 * instead of 103). Only dense ones: with every zspage that is not a
 * victim (a quarter in holes), objects went into zspages about to become
 * victims, to be moved again, and kept them from emptying ("pages
 * shrink", with 8 rounds: mean overhead 157 per mille against 120 to
 * tails only; 102 with an eighth; 119 with a sixteenth, where too few
 * holes qualify).
 */
#define AFM_ZS_DEST_TRIES	16
#define AFM_ZS_DEST_HOLES	(AFM_ZS_AUTO_MIN_HOLES / 2)
/* Holes before an automatic run, in zspages (a batch worth a pass). */
#define AFM_ZS_AUTO_MIN		4
/*
 * At most one automatic run per shard in this time: the runs of a shard
 * under churn are batched, so that the worker wakes up (and switches
 * context) a bounded number of times a second whatever the free rate,
 * and zspages that frees are emptying anyway (zswap writes back in LRU
 * order, so the oldest zspages drain by themselves) empty before a run
 * copies their last objects out. Unbatched, zswap's churn woke the worker
 * about 130 times a second and it copied objects that were written back
 * moments later (bench/churn/run.sh --target zswap: objects moved 44% of
 * the stores).
 */
#define AFM_ZS_AUTO_GAP		msecs_to_jiffies(50)
/*
 * The rest run (see "Compaction") comes this long after the last
 * allocation and takes every zspage with AFM_ZS_MIN_HOLES of holes, as
 * afm_compact() does: thin holes cost copying once, when nothing else
 * runs, instead of staying for good (issue 16: within 60 s of rest the
 * overhead must be down to 2%).
 */
#define AFM_ZS_LATE		HZ
#define AFM_ZS_REST_MIN_HOLES	AFM_ZS_MIN_HOLES
/*
 * Floor of the rest run's trigger (afm_zs_rest_trigger()): after the rest
 * run a shard keeps about half of it in holes, however small the shard.
 * Half a zspage: 4 pages of 4 KiB, one of 16 KiB.
 */
#define AFM_ZS_REST_FLOOR	(AFM_ZS_SIZE / 2)
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
 *	changed by migration under the exclusive gate and the pool lock, and
 *	read by holders of either (the gate shared or exclusive).
 * @list: entry in the tail bucket @bucket, or in the pool's dead list.
 *	Under the pool lock.
 * @hlist: entry in hole list @hlist_nr. Under the pool lock.
 * @gate: accessors and exclusive owner, see AFM_ZG_* and the file comment.
 * @id: index of this descriptor in the descriptor table.
 * @live: bytes of live objects. Under the pool lock (as are the next four).
 * @tail: fill offset: objects lie below it, bytes from it to the zspage's
 *	end (afm_zs_end(): AFM_ZS_SIZE but for a short zspage) are free and
 *	reusable.
 * @objs: live objects.
 * @flags: AFM_ZS_USED, AFM_ZS_VICTIM, AFM_ZS_DEAD.
 * @bucket: tail bucket, AFM_ZS_NO_BUCKET when on no tail list.
 * @hlist_nr: hole list (hole bytes / AFM_ZS_MIN_HOLES), 0 when on none:
 *	fewer holes than that, or not a live zspage (victim, dead).
 * @run: 1 when page k is the page of PFN @first's + k (afm_zs_new() sorts
 *	the pages by PFN, so pages allocated in a run, up or down, as
 *	order-0 pages allocated together mostly are, make one), 0 otherwise:
 *	page k is then found by following the chain. With a run, reaching a
 *	page reads no struct page (afm_zs_page()) and, without highmem, the
 *	zspage's bytes lie back to back in the kernel's linear map
 *	(afm_zs_lin()), so that an object crossing pages is reached in place.
 *	It fills padding: the descriptor costs no byte more. Set when the
 *	zspage is made; cleared by migration, whose new page breaks the run
 *	(but for a zspage of one page, which stays one), under the exclusive
 *	gate and the pool lock; read by holders of either.
 * @linked: its holes on the hole index (AFM_ZH_HOLE set in their headers).
 *	Under the pool lock.
 * @pad: bytes its live objects' extents are longer than header and data
 *	by alignment (afm_zs_pad(): not holes, no compaction gets them
 *	back); in a solo zspage, the bytes after its object. Under the pool
 *	lock.
 * @order: it has 2^@order pages (afm_zs_npages()), AFM_ZS_ORDER but for
 *	the first zspages of a shard that holds few pages (see "Short
 *	zspages" in zspage_pages.c): its bytes end at afm_zs_end(), not at
 *	AFM_ZS_SIZE. Set when it is made, never changed.
 * @solo: 1 while it is a solo zspage: the fewest pages that hold one
 *	object too long to share a zspage with another of its length
 *	(afm_zs_solo()), its data at offset 0 with no header, its @tail at
 *	its end and the rest of its bytes counted in @pad; no hole, no tail,
 *	never a victim (see "Solo zspages" in zspage_alloc.c). Set when it
 *	is made, cleared when that object goes. Under the pool lock.
 *
 * With 4 KiB pages on 64-bit it is 64 bytes, and the descriptor table's
 * pages are page aligned: every descriptor is one cache line of its own,
 * which malloc, free and the merge of frees each read and write. What it
 * does not carry: its shard (afm_zs_desc_pool()).
 */
struct afm_zspage {
	struct page *first;
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
	u8 run;
	afm_zs_off_t linked;
	afm_zs_off_t pad;
	u8 order;
	u8 solo;
};

/* Pages of zspage @z. */
static inline unsigned int afm_zs_npages(const struct afm_zspage *z)
{
	return 1U << z->order;
}

/* Bytes of zspage @z: the end of its address space (its tail ends there). */
static inline unsigned int afm_zs_end(const struct afm_zspage *z)
{
	return PAGE_SIZE << z->order;
}

/**
 * struct afm_zs_hrec - a hole on the hole index, a slot of the hole table
 * @id: the zspage of the hole.
 * @prev: record number + 1 of the previous hole of its class (0: none).
 * @next: record number + 1 of the next one (0: none).
 * @off: offset of the hole (its header) in the zspage.
 * @len: its length.
 *
 * Under the pool lock.
 */
struct afm_zs_hrec {
	u32 id;
	u32 prev;
	u32 next;
	afm_zs_off_t off;
	afm_zs_off_t len;
};

/**
 * struct afm_zt_dent - an entry of the top level of a slot table
 * @dir: the directory block (AFM_ZT_PTRS entries in a directory page of
 *	the shard), NULL where there is none. Read locklessly.
 * @pages: table pages present in it. Under the pool lock.
 * @open: of them, open ones (AFM_ZT_OPEN set). Under the pool lock.
 */
struct afm_zt_dent {
	unsigned long *dir;
	unsigned int pages;
	unsigned int open;
};

/*
 * Top levels of at least this many directories, whose next one takes more
 * than a page, are grown ahead by @top_work from a quarter before they
 * are full (afm_zt_take_page()).
 */
#define AFM_ZT_AHEAD_DIRS	(PAGE_SIZE / (2 * sizeof(struct afm_zt_dent)))

/**
 * struct afm_zt_top - the top level of a slot table
 * @rcu: frees it after a larger one replaced it (lockless lookups may still
 *	be reading it).
 * @size: entries in @dir.
 * @dir: directories.
 */
struct afm_zt_top {
	struct rcu_head rcu;
	unsigned long size;
	struct afm_zt_dent dir[];
};

/**
 * struct afm_zs_table - a table of fixed-size slots in pool-owned pages
 * @top: the top level: directories, replaced by one twice as large
 *	when the table needs a directory beyond it (afm_zt_grow(); RCU for
 *	lockless lookups, written under @lock). A directory entry is a table
 *	page address, with
 *	AFM_ZT_OPEN set while at least @open_free of its slots are free. The
 *	top level's entry of a directory counts its present and open table
 *	pages (struct afm_zt_dent); a table page's struct page counts its
 *	used slots in ->private and holds 1 + its first free slot (0: none)
 *	in ->index.
 * @slot_size: bytes per slot (8, sizeof(struct afm_zspage) or
 *	sizeof(struct afm_zs_hrec)).
 * @per_page: slots per table page.
 * @open_free: free slots that make a table page open (a quarter).
 * @cur: table page slots are taken from while it has any free, else
 *	ULONG_MAX. When it fills up, the lowest open or missing page becomes
 *	current: slots allocated together share pages (and tend to be freed
 *	together, giving pages back), while nearly full pages are left alone.
 * @hint: no table page below this one is open or missing.
 * @end: one past the highest table page number ever present.
 * @want: a table page the top level must reach, for @top_work of the
 *	shard (afm_zt_grow_later()); 0: none. Raised with cmpxchg() and
 *	taken with xchg(), no lock.
 * @used: slots in use.
 * @pages: table pages.
 * @dirs: directory blocks (in the shard's directory pages).
 * @max_pages: table pages its slot numbers can address (the descriptor
 *	table's: zspage ids must fit an entry; the hole table's: record
 *	numbers + 1 fit a u32); no limit for handles.
 * @lock: the pool lock.
 * @dshift: log2 of the table pages a directory points to (AFM_ZT_PTRS;
 *	fewer only in KUnit, afm_zs_test_small_dirs()).
 * @mag_max: capacity of @mag in use: AFM_ZT_MAG, or 0 (no magazine).
 * @pshift: log2 of @per_page, a power of two in every table (slots of 8,
 *	16 or 64 bytes in a page).
 * @mag_nr: slots in @mag.
 * @wr: how far takes have outrun puts lately (AFM_ZT_WR_ON: write-mostly,
 *	see there).
 * @fr: how far puts have outrun takes lately (free-mostly, the same).
 * @phase_on: the count of @wr or @fr from which its rule applies:
 *	AFM_ZT_WR_ON, or AFM_ZT_PHASE_OFF (module parameter
 *	zspage_handle_phases=N; the counts never reach it).
 * @mag: free slots kept at hand, last freed first: afm_zt_put() pushes a
 *	freed slot (cleared) here while there is room and afm_zt_take() pops
 *	one, so that under churn neither touches the free list and counts of
 *	a table page (its struct page, its directory). While the table is
 *	write-mostly (@wr), only slots of open or current pages go in: a
 *	slot a rewrite freed in a page of older objects would otherwise go
 *	to the next new object, which would keep that page when the older
 *	objects go (an untar's files removed). While it is free-mostly
 *	(@fr), nothing goes in and what is in goes back to its pages: a
 *	slot the removal of a file freed would go to the next object
 *	written meanwhile (a directory's metadata rewritten), which would
 *	keep the page the removed files are leaving. Their table pages go
 *	on counting them as used (not in @used) until afm_zt_mag_drain():
 *	when @used drops to 0, while free-mostly and at every compaction
 *	run (teardown frees the pages whatever their slots hold,
 *	afm_zt_destroy()).
 *
 * Everything is written under the pool lock; lookups of live slots are
 * lockless (the pages of live slots are not freed; emptied pages go back
 * after an RCU grace period, so that a lookup in an RCU read-side section
 * that raced with it, as one of a stale handle can, reads a free slot).
 * What they read (@top, @dshift) starts a cache line that takes and puts
 * do not write: a map from another CPU (zram's reads, zswap's loads) does
 * not take the line the shard's allocations and frees keep writing.
 */
struct afm_zs_table {
	/* Read by lockless lookups from any CPU; written only at growth. */
	struct afm_zt_top __rcu *top;
	unsigned int dshift;
	unsigned int pshift;
	unsigned int slot_size;
	unsigned int per_page;
	unsigned int open_free;
	unsigned int mag_max;
	unsigned long max_pages;
	spinlock_t *lock;	/* the pool lock, for lockdep */
	u8 phase_on;
	/* Written by takes and puts: lines of their own. */
	unsigned long cur ____cacheline_aligned_in_smp;
	unsigned long hint;
	unsigned long end;
	unsigned long want;
	unsigned long used;
	unsigned long pages;
	unsigned long dirs;
	unsigned int mag_nr;
	u8 wr;
	u8 fr;
	unsigned long mag[AFM_ZT_MAG];
};

/*
 * Frees whose extents wait to be merged into the hole index, a shard at
 * most (see "Deferred frees" in zspage_alloc.c): enough for the cache
 * misses of one batch to overlap, few enough that the holes they hold
 * back do not matter (16 extents, about 24 KiB a shard at 1.5 KiB each).
 */
#define AFM_ZS_PEND		16

/*
 * Frees left to the lock holder, a shard at most (see "Frees that find the
 * lock held" in zspage_alloc.c): a handful per CPU that may free into the
 * shard at once; when all are taken the free waits for the lock.
 */
#define AFM_ZS_RFREE		32
/* Frees of another CPU's shard left to its holder while fewer wait. */
#define AFM_ZS_RFREE_REMOTE	(AFM_ZS_RFREE / 2)
/*
 * Of them, what a free with hardirqs off frees besides its own: each may
 * release a zspage, and such frees come in batches (zram's, from the swap
 * slots cache), so that its time with hardirqs off stays near one free's.
 */
#define AFM_ZS_RFREE_IRQS_OFF	2
/* How long a free left for the lock holder may wait when none comes. */
#define AFM_ZS_RFREE_DELAY	(HZ / 10)

/**
 * struct afm_zs_pend - a free whose extent has not been merged yet
 * @z: its zspage: live, not a victim (afm_zs_pick() and afm_zs_release()
 *	take a zspage's entries off first).
 * @off: the extent's offset: its object header, as the object left it,
 *	still says its length.
 */
struct afm_zs_pend {
	struct afm_zspage *z;
	unsigned int off;
};

/**
 * struct afm_zs_pool - a shard of the zspage store of a pool
 * @pool: the generic pool.
 * @nr: its number among the pool's shards.
 * @lock: the pool lock, see the file comment.
 * @compact_lock: one compaction pass at a time in this shard (the
 *	automatic and rest runs, the shrinker's scan with a trylock,
 *	afm_compact() shard by shard, the KUnit audit); a mutex a shard, so
 *	that the shards of a pool on many CPUs compact side by side and no
 *	compaction writes a line every CPU's allocations read.
 * @htab: handle table.
 * @dtab: descriptor table.
 * @rtab: hole table: the records of the hole index.
 * @dpages: the directory pages of the three tables, those with a block
 *	not in use first (linked through ->lru; ->private: bitmaps of the
 *	blocks in use and of those cooling down, see afm_zt_dir_free();
 *	->index: an RCU cookie). Under @lock.
 * @dir_pages: number of them. Under @lock; read without it by
 *	afm_zs_stats().
 * @tails: tail buckets: zspages by the size of their tail.
 * @tail_map: non-empty tail buckets.
 * @dead: empty zspages whose pages wait for afm_zs_free_work().
 * @total_pages: every page held; written under @lock, read locklessly.
 * @objects: live objects. Under @lock; read without it by afm_zs_stats(),
 *	as are @live_bytes, the tables' page counts and @st.auto_freed and
 *	@st.shrink_freed.
 * @solo_objs: of them, those in solo zspages (no header).
 * @live_bytes: sum of their sizes.
 * @pad_bytes: sum of the zspages' @pad (alignment padding, and what solo
 *	zspages hold beyond their objects).
 * @tail_bytes: sum of the tails of the zspages in @zspages.
 * @align: extent alignment (zspage_align when the pool was made; a power
 *	of two, at most AFM_ZS_MAX_ALIGN). Set at creation, never changed.
 * @zspages: zspages not dead.
 * @dead_zspages: zspages on @dead or being freed from it.
 * @data_pages: pages of the zspages in @zspages.
 * @dead_pages: pages of those in @dead_zspages.
 * @victim_live: live bytes left in the victims of the running pass.
 * @victim_pages: pages of the victims of the running pass not yet released
 *	(afm_zs_dest_order()).
 * @pass_pages: pages the running pass gave back so far: those of the
 *	zspages it released less those of the zspages it made, with the
 *	table pages that went or came with them and with its moves (what it
 *	did itself, not what frees and allocations did meanwhile).
 * @hlists: hole lists: live, non-victim zspages with at least
 *	AFM_ZS_MIN_HOLES bytes of holes, by hole bytes (list n: n to n + 1
 *	times AFM_ZS_MIN_HOLES); compaction takes its victims from the top.
 * @hlist_map: non-empty hole lists.
 * @hlist_count: zspages on each hole list.
 * @hlist_units: the sum over the hole lists of their zspages times their
 *	number (hole bytes in AFM_ZS_MIN_HOLES, rounded down): what the
 *	shrinker counts, read without the lock (afm_zs_count()).
 * @hole_heads: the hole index: record number + 1 of the first hole of
 *	each class (0: none). A hole on it is free bytes below the fill
 *	offset of a live zspage; holes of victims stay on it until
 *	allocation meets them (it takes them off and goes on) or the release
 *	of their zspage.
 * @hole_map: classes with any hole.
 * @rtab_short: a free found the hole table's top level too small for a
 *	record; the next malloc grows it (frees cannot sleep), unless the
 *	shard's worker (@top_work, queued by that free) did first.
 * @hole_rec_bytes: bytes of the holes on the index.
 * @hole_nr: holes on the index.
 * @pend: frees whose extents have yet to become holes on the index or
 *	join their tail (see "Deferred frees" in zspage_alloc.c): zspage and
 *	extent offset, in the order of the frees.
 * @pend_nr: entries of @pend in use.
 * @last_alloc: jiffies of the last allocation (the rest run waits until
 *	AFM_ZS_LATE after it).
 * @late_force: the rest run may not wait (afm_zs_flush_work()).
 * @dying: the pool is being destroyed: no more automatic compaction.
 * @rfree_nr: handles in @rfree, counted after they are put there and
 *	before they are taken (so it may lag them for an instant, and go
 *	below zero for one). Atomic, no lock.
 * @rfree: frees left to the lock holder (the callers' handles; 0: a free
 *	slot): a free that finds the pool lock held, or of another shard
 *	than its CPU's, puts its handle in a free slot (cmpxchg from 0) and
 *	returns; slots are taken (xchg to 0)
 *	only under the pool lock, by afm_zs_rfree_drain(). Atomic, see
 *	"Frees that find the lock held" in zspage_alloc.c.
 * @migrate_wait: page migrations waiting for @lock, holding their
 *	zspage's gate (afm_zs_migrate_lock() in a synchronous mode): a
 *	compaction pass that sees one lets go of the lock at its next step,
 *	after at most one move, and leaves it free until none waits (at most
 *	AFM_ZS_YIELD_SPINS spins; afm_zs_breathe()), so that the readers of
 *	that zspage, kept out meanwhile, do not wait for a long pass.
 *	Atomic, no lock.
 * @rfree_work: drains @rfree when no allocation or free comes to do it,
 *	AFM_ZS_RFREE_DELAY after a free put the first handle there.
 * @free_work: frees the zspages of @dead.
 * @top_work: grows the top levels of the tables whose @want is set, with
 *	GFP_KERNEL (afm_zt_grow_later()).
 * @compact_work: automatic compaction, queued by a free past the trigger
 *	no sooner than @auto_next.
 * @auto_next: jiffies before which no automatic run starts: a run sets it
 *	AFM_ZS_AUTO_GAP ahead when it starts. No lock (a stale read only
 *	moves a run by a tick).
 * @late_work: the rest run: automatic compaction counting the indexed
 *	holes and taking thinner ones, AFM_ZS_LATE after the last
 *	allocation, queued by a free that leaves holes above the trigger.
 * @shrinker: the shard's shrinker (a shard is not created without one).
 * @cand: ids of the victims of the running pass (AFM_ZS_DONE once
 *	released), under @compact_lock.
 * @nr_cand: number of them.
 * @idx_bits: handle bits in an object header: AFM_ZH_IDX_BITS, fewer
 *	only in KUnit (afm_zs_test_set_idx_bits()), so that handles that
 *	share header bits are tested without 2^26 objects.
 * @st: statistics, see afm_zs_class_stats(); counters written under @lock
 *	(compaction's also under @compact_lock; @st.auto_freed and
 *	@st.shrink_freed read without it, see @objects), migration counters
 *	and @st.blocks
 *	(counted where pages are allocated, without it) atomic. @st.migrated
 *	counts only pages whose contents moved to a new page; an isolated
 *	page put back counts in @st.putback, one whose zspage was freed
 *	while it was isolated (the migration core then frees it without
 *	calling afm_zs_migrate_page()) in @st.isolated_freed. @st.auto_delayed
 *	(atomic) is counted where a run is queued, after the lock is dropped.
 * @test_quiet: KUnit hook, afm_zs_test_quiet(): AFM_ZS_QUIET_SHRINKER
 *	keeps the kernel's shrink_slab() away from the pool (count and scan
 *	report nothing), AFM_ZS_QUIET_MIGRATION the kernel's page migration
 *	(isolation refused); the KUnit hooks still reach both.
 *	AFM_ZS_QUIET_RUNS makes every new zspage a chain, so that the tests
 *	reach the page-by-page paths whatever pages they get;
 *	AFM_ZS_QUIET_RFREE makes a free wait for a lock held elsewhere, and
 *	one of another shard than its CPU's take the lock;
 *	AFM_ZS_QUIET_AUTO runs automatic compaction only when a test says;
 *	AFM_ZS_QUIET_RTAB leaves the hole table's growth to the next malloc
 *	when a free finds it too small (not to @top_work, whose timing a
 *	test could not tell); AFM_ZS_QUIET_RWORK leaves the frees left to
 *	the lock holder to the next one, not to @rfree_work (same reason).
 */
struct afm_zs_pool {
	struct afm_pool *pool;
	unsigned int nr;
	spinlock_t lock;	/* pool lock, see "Locking" above */
	struct mutex compact_lock;	/* outside @lock, may sleep */
	struct afm_zs_table htab;
	struct afm_zs_table dtab;
	struct afm_zs_table rtab;
	struct list_head dpages;
	unsigned long dir_pages;
	struct list_head tails[AFM_ZS_NR_BUCKETS];
	DECLARE_BITMAP(tail_map, AFM_ZS_NR_BUCKETS);
	struct list_head dead;
	atomic_long_t total_pages;
	unsigned long objects;
	unsigned long solo_objs;
	unsigned long live_bytes;
	unsigned long pad_bytes;
	unsigned long tail_bytes;
	unsigned int align;
	unsigned long zspages;
	unsigned long dead_zspages;
	unsigned long data_pages;
	unsigned long dead_pages;
	unsigned long victim_live;
	unsigned long victim_pages;
	long pass_pages;
	struct list_head hlists[AFM_ZS_NR_HLISTS];
	u64 hlist_map;
	unsigned long hlist_count[AFM_ZS_NR_HLISTS];
	unsigned long hlist_units;
	u32 hole_heads[AFM_ZS_NR_HCLASSES];
	DECLARE_BITMAP(hole_map, AFM_ZS_NR_HCLASSES);
	bool rtab_short;
	unsigned long hole_rec_bytes;
	unsigned long hole_nr;
	unsigned int pend_nr;
	struct afm_zs_pend pend[AFM_ZS_PEND];
	/* Written by every CPU that frees into the shard: lines of their own. */
	atomic_t rfree_nr ____cacheline_aligned_in_smp;
	atomic_long_t rfree[AFM_ZS_RFREE];
	atomic_t migrate_wait;
	unsigned long last_alloc ____cacheline_aligned_in_smp;
	bool late_force;
	bool dying;
	struct delayed_work rfree_work;
	struct work_struct free_work;
	struct work_struct top_work;
	struct delayed_work compact_work;
	unsigned long auto_next;
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
		atomic_long_t auto_delayed;
		unsigned long deferred_frees;
		unsigned long rfrees;
		unsigned long tops_later;
		unsigned long runs;
		unsigned long chains;
		atomic_long_t runs_broken;
		atomic_long_t blocks;
		unsigned long hole_reused;
		unsigned long rest_joined;
		unsigned long moved_hole;
		unsigned long moved_new;
		unsigned long hole_bytes;
		unsigned long donated;
		unsigned long moved;
		unsigned long moved_bytes;
		unsigned long walked;
		unsigned long looked;
		u64 compact_ns;
		unsigned long evacuated;
		unsigned long passes;
		unsigned long freed;
		unsigned long auto_runs;
		unsigned long auto_freed;
		unsigned long shrink_scans;
		unsigned long shrink_freed;
		unsigned long migrate_yields;
	} st;
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	unsigned int test_quiet;
#endif
};

/*
 * Shards (see "Shards" in zspage_store.c): at most AFM_ZS_MAX_SHARDS, two
 * CPUs a shard on 128 CPUs, enough to make contention rare; each shard
 * allocated from costs its table pages and the tail of its open zspage,
 * and each created (a shard is created when it first becomes active) its
 * struct afm_zs_pool, candidate array and shrinker.
 */
#define AFM_ZS_MAX_SHARDS	64U
/*
 * Allocation takes more shards (&afm_zs_set.active doubles) once
 * AFM_ZS_GROW_AFTER allocations within one AFM_ZS_GROW_WINDOW found their
 * shard's lock held: a few waits a second cost less than a shard's pages,
 * so a pool used by few CPUs at a time stays in few shards, and steady
 * contention opens more soon (the churn benchmark's pools open both of
 * the guest's shards within the first seconds of the fill).
 */
#define AFM_ZS_GROW_AFTER	64
#define AFM_ZS_GROW_WINDOW	HZ

/**
 * struct afm_zs_set - the zspage store of a pool: independent shards
 * @nr: number of shards, a power of two.
 * @shift: log2 of @nr: a handle is (shard handle << @shift) | shard.
 * @active: shards allocation takes, a power of two, 1 to @nr: CPU c
 *	allocates in shard c & (@active - 1) (frees, maps and compaction
 *	go to the shard a handle names, any of the @created). Only grows,
 *	under @grow_lock (afm_zs_grow_work(), with release once the shards
 *	are created); read without a lock, with smp_load_acquire() where
 *	it picks a shard.
 * @contended: allocations that found their shard's lock held since
 *	@contended_since (atomic; reset when the window moves on or a
 *	doubling is queued; not counted while one is, see @grow_from).
 * @contended_since: jiffies the current window of @contended began; read
 *	and written without a lock (a lost reset only shifts a window).
 * @created: shards that exist, 1 to @nr: &afm_zs_set.shard[0] to
 *	[@created - 1] (see "Active shards" in zspage_alloc.c); at least
 *	@active. Only grows, under @grow_lock: the shards are written before
 *	it (smp_store_release()); read with afm_zs_created().
 * @pool: the pool, for shards created later.
 * @align: zspage_align of the pool's creation, for shards created later.
 * @grow_lock: serialises the creation of shards (afm_zs_grow()).
 * @grow_work: creates the next shards and activates them, queued by an
 *	allocation (afm_zs_contended()) that may not sleep.
 * @grow_from: the @active a queued doubling grows from, 0 when none is
 *	queued: set by the allocation that queues it (cmpxchg() from 0),
 *	cleared by afm_zs_grow_work() when done, so that one burst of waits
 *	doubles the shards once.
 * @test_migrate_wait: KUnit hook (afm_zs_test_migrate_wait()): what it
 *	added to every shard's migrate_wait, for shards created later.
 * @test_grow_held: KUnit hook (afm_zs_test_grow_hold()): the test holds
 *	@grow_lock, so that a doubling that starts waits for it.
 * @test_shard: KUnit hook (afm_zs_test_alloc_shard()): the shard new
 *	objects go to, -1 for the current CPU's.
 * @test_cpu: KUnit hook (afm_zs_test_alloc_cpu()): the CPU number the
 *	shard of a new object is chosen for, -1 for the current CPU.
 * @test_busy: KUnit hook (afm_zs_test_busy()): frees act as if they
 *	found the pool lock held.
 * @test_moving: KUnit hook (afm_zs_test_move_hook()): called with
 *	@test_moving_arg by every move whose copy runs without the pool lock,
 *	just before the copy (preemption disabled, the entry LOCK bit held),
 *	with the object's location as afm_zs_obj_info() gives it and its
 *	destination zspage.
 * @test_locked_copies: KUnit hook (afm_zs_test_locked_copies()): every
 *	move copies under the pool lock, as when a migration holds a gate.
 * @test_gate_wait: KUnit hook (afm_zs_test_gate_wait_hook()): called with
 *	@test_gate_wait_arg by a synchronous migration that starts waiting
 *	for the sharers of a zspage's gate (preemption disabled, AFM_ZG_WAIT
 *	set; lock false) or, holding the gate, for the pool lock (lock
 *	true), with the zspage as afm_zs_obj_info() gives it.
 * @donors: shards whose indexed holes other shards' allocations may
 *	take (AFM_ZS_DONOR_ON); a shard sets and clears its own bit, under
 *	its lock, with atomic bit operations; read without any lock.
 * @pages: every page the shards hold, the sum of their
 *	&afm_zs_pool.total_pages, changed with them (afm_zs_pages_add()),
 *	atomic: afm_get_total_pages(), which zram calls on every write and
 *	zswap on every store, reads one counter on a line of its own, not
 *	one line per shard that its CPU writes on every allocation and free.
 * @shard: the shards, @created of them; NULL beyond. A shard, once
 *	created, stays until the pool is destroyed.
 */
struct afm_zs_set {
	unsigned int nr;
	unsigned int shift;
	unsigned int active;
	atomic_t contended;
	unsigned long contended_since;
	unsigned int created;
	struct afm_pool *pool;
	unsigned int align;
	struct mutex grow_lock;		/* creating shards, raising @active */
	struct work_struct grow_work;
	unsigned int grow_from;
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	int test_migrate_wait;		/* under @grow_lock */
	bool test_grow_held;		/* afm_zs_test_grow_hold() */
	void (*test_moving)(void *arg, unsigned long zspage_id,
			    unsigned int offset, unsigned long dst_id);
	void *test_moving_arg;
	bool test_locked_copies;
	void (*test_gate_wait)(void *arg, unsigned long zspage_id, bool lock);
	void *test_gate_wait_arg;
#endif
	int test_shard;
	int test_cpu;
	bool test_busy;
	DECLARE_BITMAP(donors, AFM_ZS_MAX_SHARDS);
	atomic_long_t pages ____cacheline_aligned_in_smp;
	struct afm_zs_pool *shard[] ____cacheline_aligned_in_smp;
};

/*
 * Count @n more pages (fewer when negative) held by shard @zs, in the
 * shard and in its pool (&afm_zs_set.pages).
 */
static inline void afm_zs_pages_add(struct afm_zs_pool *zs, long n)
{
	struct afm_zs_set *set = zs->pool->store;

	atomic_long_add(n, &zs->total_pages);
	atomic_long_add(n, &set->pages);
}

/*
 * Shards that exist: &afm_zs_set.shard[0] to [afm_zs_created() - 1] are
 * set and stay (acquire: pairs with afm_zs_grow()'s release).
 */
static inline unsigned int afm_zs_created(struct afm_zs_set *set)
{
	/* Pairs with afm_zs_grow()'s smp_store_release(). */
	return smp_load_acquire(&set->created);
}

/*
 * A shard with at least AFM_ZS_DONOR_ON bytes of indexed holes and tails
 * is a donor (its bit in &afm_zs_set.donors) until they drop below
 * AFM_ZS_DONOR_OFF: an allocation whose own shard would open a zspage
 * takes a hole or a tail of a donor instead (see "Shards" in
 * zspage_store.c).
 */
#define AFM_ZS_DONOR_ON		(2 * AFM_ZS_SIZE)
#define AFM_ZS_DONOR_OFF	AFM_ZS_SIZE

/*
 * Make @zs a donor or not (struct afm_zs_set). The bit is tested first:
 * the word is shared by every shard, and only a change writes it.
 */
static inline void afm_zs_donor_mark(struct afm_zs_pool *zs, bool on)
{
	struct afm_zs_set *set = zs->pool->store;

	lockdep_assert_held(&zs->lock);
	if (set->nr > 1 && test_bit(zs->nr, set->donors) != on)
		assign_bit(zs->nr, set->donors, on);
}

/*
 * Update @zs's donor bit after its indexed holes or tails changed: a
 * compare and, outside the band between the thresholds, a read of the
 * shared bit (afm_zs_donor_mark() writes only a change). Pool lock held.
 */
static __always_inline void afm_zs_donor_update(struct afm_zs_pool *zs)
{
	unsigned long spare = zs->hole_rec_bytes + zs->tail_bytes;

	if (spare >= AFM_ZS_DONOR_ON)
		afm_zs_donor_mark(zs, true);
	else if (spare < AFM_ZS_DONOR_OFF)
		afm_zs_donor_mark(zs, false);
}

/*
 * The shard of the object of @handle (a handle from afm_zs_malloc(), or
 * any value: the shard handle of a bad one is no live entry); *@handle is
 * turned into the handle within that shard. The shard pointer is loaded
 * from an address computed from the handle, so every lookup through it
 * (the top levels of its tables included) carries an address dependency
 * on the caller's load of the handle: on a weakly ordered CPU too it sees
 * the tables as they were when the handle was published (zswap finds its
 * handles with xa_load(), a dependency as well), with no barrier here.
 */
static __always_inline struct afm_zs_pool *afm_zs_of(struct afm_pool *pool,
						     unsigned long *handle)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs = READ_ONCE(set->shard[*handle & (set->nr - 1)]);

	*handle >>= set->shift;
	if (unlikely(!zs)) {
		/* A bad handle: none beyond afm_zs_created(). */
		*handle = ULONG_MAX >> set->shift;
		zs = set->shard[0];
	}
	return zs;
}

/*
 * The pool lock is a plain spinlock, as zsmalloc's class lock: nothing
 * takes it, nor spins on an entry or a gate, in interrupt context (no
 * caller frees or reads in softirq or hardirq context, see afm_free()), so
 * neither bottom halves nor interrupts need to be off. Free is also called
 * with hardirqs off: zram's slot_free_notify runs under the swap slots
 * cache's spin_lock_irq() (free_swap_slot() -> swapcache_free_entries() ->
 * zram_slot_free_notify() -> afm_free()); that is not interrupt context.
 * Lockdep reports a caller in softirq context (a lock taken in softirq and
 * elsewhere with softirqs on).
 */
static __always_inline void afm_zs_lock(struct afm_zs_pool *zs)
	__acquires(&zs->lock)
{
	spin_lock(&zs->lock);
}

static __always_inline void afm_zs_unlock(struct afm_zs_pool *zs)
	__releases(&zs->lock)
{
	spin_unlock(&zs->lock);
}

/* KUnit: what the kernel may not do to a pool, see afm_zs_test_quiet(). */
static inline bool afm_zs_quiet(const struct afm_zs_pool *zs, unsigned int what)
{
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	return READ_ONCE(zs->test_quiet) & what;
#else
	return false;
#endif
}

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
static inline struct afm_zt_top *afm_zt_top(const struct afm_zs_table *t)
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
	/*
	 * The address dependency of what is read through @dir (and through
	 * the table page read from it) pairs with the release stores that
	 * publish them (afm_zt_take_page()).
	 */
	if (likely(d < top->size))
		dir = READ_ONCE(top->dir[d].dir);
	rcu_read_unlock();
	return dir;
}

/*
 * Directory page @d of @t, or NULL, pool lock held: the top level cannot
 * be replaced meanwhile (afm_zt_grow() swaps it under the lock), so no RCU
 * read-side section is needed (on PREEMPT_RCU kernels, such as
 * distributions' PREEMPT_DYNAMIC ones, each costs a call).
 */
static __always_inline unsigned long *afm_zt_dir_locked(const struct afm_zs_table *t,
							unsigned long d)
{
	const struct afm_zt_top *top = afm_zt_top(t);

	return likely(d < top->size) ? top->dir[d].dir : NULL;
}

/*
 * Slot @idx of a table of @per_page slots of @size bytes, or NULL where
 * it has no page. @locked: the pool lock is held (afm_zt_dir_locked()),
 * else any context (afm_zt_dir()).
 */
static __always_inline void *afm_zt_slot(const struct afm_zs_table *t,
					 unsigned long idx, unsigned int size,
					 unsigned int per_page, bool locked)
{
	unsigned long pg = idx / per_page;
	unsigned long *dir;
	unsigned long ent;

	dir = locked ? afm_zt_dir_locked(t, afm_zt_d(t, pg)) :
		       afm_zt_dir(t, afm_zt_d(t, pg));
	if (unlikely(!dir))
		return NULL;
	ent = READ_ONCE(dir[afm_zt_di(t, pg)]) & ~AFM_ZT_OPEN;
	if (unlikely(!ent))
		return NULL;
	return (void *)ent + (idx % per_page) * size;
}

static __always_inline void *afm_zt_lookup(const struct afm_zs_table *t,
					   unsigned long idx,
					   unsigned int size,
					   unsigned int per_page)
{
	return afm_zt_slot(t, idx, size, per_page, false);
}

/* Base address of table page @pg, or NULL. */
static inline void *afm_zt_page(const struct afm_zs_table *t, unsigned long pg)
{
	unsigned long *dir = afm_zt_dir(t, afm_zt_d(t, pg));

	if (!dir)
		return NULL;
	return (void *)(READ_ONCE(dir[afm_zt_di(t, pg)]) & ~AFM_ZT_OPEN);
}

/* The entry of shard handle @handle, or NULL. Any context. */
static inline atomic64_t *afm_zs_entry(struct afm_zs_pool *zs,
				       unsigned long handle)
{
	return afm_zt_lookup(&zs->htab, handle - 1, sizeof(u64),
			     AFM_ZH_PER_PAGE);
}

/* afm_zs_entry() with the pool lock held. */
static inline atomic64_t *afm_zs_entry_locked(struct afm_zs_pool *zs,
					      unsigned long handle)
{
	return afm_zt_slot(&zs->htab, handle - 1, sizeof(u64), AFM_ZH_PER_PAGE,
			   true);
}

/*
 * Table pages (and descriptor table pages among them) are the shard's own:
 * never on an LRU list, never movable, never slab, so their ->lru is free
 * for it; afm_zs_meta_page() points it at the shard. Set and read with
 * these only. (Directory pages link ->lru into the shard's @dpages
 * instead: only descriptor table pages need the owner.)
 */
static inline void afm_zs_meta_page_owner(struct page *page,
					  struct afm_zs_pool *zs)
{
	page->lru.next = (struct list_head *)zs;
	page->lru.prev = NULL;
}

/*
 * The shard whose descriptor table holds @z (a slot of a table page, in
 * the linear map). Only migration needs it: given a zspage page, it has the
 * descriptor (the page's private) and not the pool.
 */
static inline struct afm_zs_pool *afm_zs_desc_pool(const struct afm_zspage *z)
{
	return (struct afm_zs_pool *)virt_to_page(z)->lru.next;
}

/* The descriptor of zspage @id. Any context. */
static inline struct afm_zspage *afm_zs_desc(struct afm_zs_pool *zs, u32 id)
{
	return afm_zt_lookup(&zs->dtab, id, sizeof(struct afm_zspage),
			     AFM_ZD_PER_PAGE);
}

/* afm_zs_desc() with the pool lock held. */
static inline struct afm_zspage *afm_zs_desc_locked(struct afm_zs_pool *zs,
						    u32 id)
{
	return afm_zt_slot(&zs->dtab, id, sizeof(struct afm_zspage),
			   AFM_ZD_PER_PAGE, true);
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

/*
 * An empty spare: the counts only (only slots below them are read). On
 * malloc's fast path the spare is declared __uninitialized, so that
 * CONFIG_INIT_STACK_ALL_ZERO (Debian's default) does not clear its 112
 * bytes on every call either.
 */
static __always_inline void afm_zs_spare_init(struct afm_zs_spare *sp)
{
	sp->nr_meta = 0;
	sp->nr_data = 0;
}

/*
 * Taking and freeing slots (zspage_table.c), pool lock held: inline for
 * the magazine (struct afm_zs_table), which serves malloc and free under
 * churn, out of line for table pages.
 */
int afm_zt_find_page(struct afm_zs_table *t, unsigned long *pgp);
unsigned int afm_zt_need_page(const struct afm_zs_table *t, unsigned long pg,
			      unsigned int *blocks);
unsigned int afm_zs_dir_need(struct afm_zs_pool *zs,
			     unsigned int blocks);
unsigned long afm_zt_take_page(struct afm_zs_pool *zs, struct afm_zs_table *t,
			       unsigned long pg, struct afm_zs_spare *sp);
void afm_zt_put_page(struct afm_zs_pool *zs, struct afm_zs_table *t,
		     unsigned long idx);

/*
 * Where the next slot of @t comes from: AFM_ZT_FROM_MAG while the
 * magazine has one, else a table page (afm_zt_find_page()). Return: 0 and
 * *@pgp, or -ENOSPC when slot numbers would not fit.
 */
static inline int afm_zt_find(struct afm_zs_table *t, unsigned long *pgp)
{
	if (t->mag_nr) {
		*pgp = AFM_ZT_FROM_MAG;
		return 0;
	}
	return afm_zt_find_page(t, pgp);
}

void afm_zs_spare_free(struct afm_zs_spare *sp);

/* Give back what is left in @sp (usually nothing). */
static inline void afm_zs_spare_drain(struct afm_zs_spare *sp)
{
	if (unlikely(sp->nr_meta || sp->nr_data))
		afm_zs_spare_free(sp);
}

/* Table page @pg lies beyond the top level: afm_zt_grow() first. */
static inline bool afm_zt_short(const struct afm_zs_table *t, unsigned long pg)
{
	return pg != AFM_ZT_FROM_MAG && afm_zt_d(t, pg) >= afm_zt_top(t)->size;
}

/*
 * Table pages needed to take a slot from @pg (0 or 1); a directory block
 * it needs is counted in *@blocks, whose pages afm_zs_dir_need() tells
 * once every table's needs are in.
 */
static inline unsigned int afm_zt_need(const struct afm_zs_table *t,
				       unsigned long pg, unsigned int *blocks)
{
	return pg == AFM_ZT_FROM_MAG ? 0 : afm_zt_need_page(t, pg, blocks);
}

/*
 * Take a slot from @pg (afm_zt_find(), under the same hold of the pool
 * lock): the magazine's last, or a free slot of a table page, adding the
 * directory and table pages from @sp as needed (afm_zt_need() and
 * afm_zs_dir_need() of them).
 * Return: the slot index.
 */
static inline unsigned long afm_zt_take(struct afm_zs_pool *zs,
					struct afm_zs_table *t,
					unsigned long pg,
					struct afm_zs_spare *sp)
{
	if (t->wr < AFM_ZT_WR_MAX)
		t->wr++;
	t->fr -= min_t(unsigned int, t->fr, AFM_ZT_WR_PUT);
	if (pg != AFM_ZT_FROM_MAG)
		return afm_zt_take_page(zs, t, pg, sp);
	lockdep_assert_held(&zs->lock);
	t->used++;
	return t->mag[--t->mag_nr];
}

/*
 * Free slot @idx, its content cleared: into the magazine while it has room
 * and the table other used slots, unless the table is free-mostly, or
 * write-mostly and the slot's page neither open nor current (see
 * AFM_ZT_WR_ON); else afm_zt_put_page().
 */
static inline void afm_zt_put(struct afm_zs_pool *zs, struct afm_zs_table *t,
			      unsigned long idx)
{
	unsigned long pg = idx >> t->pshift, *dir, ent;
	u64 *slot;

	lockdep_assert_held(&zs->lock);
	t->used--;
	t->wr -= min_t(unsigned int, t->wr, AFM_ZT_WR_PUT);
	if (t->fr < AFM_ZT_WR_MAX)
		t->fr++;
	if (t->mag_nr >= t->mag_max || !t->used || t->fr >= t->phase_on) {
		afm_zt_put_page(zs, t, idx);
		return;
	}
	/* Slots of tables with a magazine: 8 or 16 bytes, 2^pshift a page. */
	dir = afm_zt_dir_locked(t, afm_zt_d(t, pg));
	ent = dir[afm_zt_di(t, pg)];
	if (t->wr >= t->phase_on && !(ent & AFM_ZT_OPEN) &&
	    pg != t->cur) {
		afm_zt_put_page(zs, t, idx);
		return;
	}
	slot = (void *)(ent & ~AFM_ZT_OPEN) +
	       (idx & (t->per_page - 1)) * t->slot_size;
	WRITE_ONCE(slot[0], 0);
	if (t->slot_size > sizeof(u64))
		slot[1] = 0;
	t->mag[t->mag_nr++] = idx;
}

/* Zspage gate */

/*
 * The gate and the entry LOCK bit are spinning locks of their own; these
 * maps let lockdep check their order against the pool lock and each other
 * (pins as recursive read locks; the gate's sharers as read locks, not
 * recursive: while a migration waits for a gate no sharer enters it, so
 * one entering a gate while it holds one could wait for ever; LOCK, the
 * exclusive gate and compaction's shared tries as the trylocks they are).
 */
#ifdef CONFIG_DEBUG_LOCK_ALLOC
extern struct lockdep_map afm_zg_map, afm_ze_map;
#endif

/*
 * Whether gate value @old keeps new sharers out: held exclusively, or an
 * exclusive taker waits for the sharers inside (afm_zg_lock_wait()), who
 * would otherwise never all be out at once on a zspage that CPUs keep
 * reading. That taker waits with preemption disabled for accesses that
 * wait for nothing, so the sharers kept out wait no longer than those.
 */
static inline bool afm_zg_shut(int old)
{
	return old & (AFM_ZG_EXCL | AFM_ZG_WAIT);
}

static inline void afm_zg_in(struct afm_zspage *z)
{
	int old;

	preempt_disable();
	lock_acquire_shared(&afm_zg_map, 0, 0, NULL, _THIS_IP_);
	old = atomic_read(&z->gate);
	do {
		while (unlikely(afm_zg_shut(old))) {
			cpu_relax();
			old = atomic_read(&z->gate);
		}
	} while (!atomic_try_cmpxchg_acquire(&z->gate, &old, old + 1));
}

/*
 * afm_zg_in() without waiting: false, with nothing taken, while the gate
 * is shut (a page migration holds it or waits for it, the zspage is being
 * freed). For compaction, which holds the pool lock when it asks (see
 * afm_zs_move()).
 */
static inline bool afm_zg_tryin(struct afm_zspage *z)
{
	int old;

	preempt_disable();
	old = atomic_read(&z->gate);
	do {
		if (afm_zg_shut(old)) {
			preempt_enable();
			return false;
		}
	} while (!atomic_try_cmpxchg_acquire(&z->gate, &old, old + 1));
	lock_acquire_shared_recursive(&afm_zg_map, 0, 1, NULL, _THIS_IP_);
	return true;
}

static inline void afm_zg_out(struct afm_zspage *z)
{
	int old = atomic_fetch_sub_release(1, &z->gate);

	WARN_ON_ONCE(!(old & AFM_ZG_COUNT));
	lock_map_release(&afm_zg_map);
	preempt_enable();
}

/* Entry pins */

#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
/* KUnit (afm_zs_test_pin_spun()): the entry a pin last spun on LOCK of. */
extern atomic64_t *afm_zs_test_spun;
#endif

static inline void afm_ze_note_spin(atomic64_t *ent)
{
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	WRITE_ONCE(afm_zs_test_spun, ent);
#endif
}

/*
 * Pin the live object of @ent: its location cannot change and its zspage
 * cannot go away until afm_ze_unpin(). Spins while compaction moves it.
 * Return: false if the entry is not live (invalid handle).
 */
static inline bool afm_ze_pin(atomic64_t *ent, u64 *ep)
{
	s64 e = atomic64_read(ent);

	lock_map_acquire_read(&afm_ze_map);
	do {
		if (unlikely(!(e & AFM_ZE_LIVE)))
			goto dead;
		while (unlikely((e & AFM_ZE_LOCK) ||
				(e & AFM_ZE_PINS) == AFM_ZE_PINS)) {
			if (e & AFM_ZE_LOCK)
				afm_ze_note_spin(ent);
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

static inline void afm_ze_unpin(atomic64_t *ent)
{
	s64 old = atomic64_fetch_sub_release(AFM_ZE_PIN_ONE, ent);

	WARN_ON_ONCE(!(old & AFM_ZE_PINS));
	lock_map_release(&afm_ze_map);
}

/*
 * Pin the object of @handle and enter its zspage. Return: its zspage, or
 * NULL (with a warning) for an invalid handle.
 */
static __always_inline struct afm_zspage *afm_zs_get(struct afm_zs_pool *zs,
						     unsigned long handle,
						     atomic64_t **entp, u64 *ep)
{
	struct afm_zspage *z;
	atomic64_t *ent;

	/*
	 * Table pages are freed after a grace period (afm_zs_meta_page_free()),
	 * and directory blocks serve another directory only after one
	 * (afm_zt_dir_free()): the entry and descriptor looked up here stay
	 * readable, and of their own tables, until the pin makes them stay (a
	 * live pinned object keeps both), even for a stale handle whose table
	 * page is being freed.
	 */
	rcu_read_lock();
	ent = afm_zs_entry(zs, handle);
	if (!ent || !afm_ze_pin(ent, ep)) {
		rcu_read_unlock();
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: invalid handle %#lx\n",
			  zs->pool->name, handle);
		return NULL;
	}
	/*
	 * A live entry's zspage has a descriptor; none means a stale handle
	 * read a reused table page (a caller's bug): recover.
	 */
	z = afm_zs_desc(zs, afm_ze_id(*ep));
	rcu_read_unlock();
	if (unlikely(!z)) {
		WARN_ONCE(afm_misused(true), "afmalloc: pool %s: handle %#lx names no zspage\n",
			  zs->pool->name, handle);
		afm_ze_unpin(ent);
		return NULL;
	}
	afm_zg_in(z);
	*entp = ent;
	return z;
}

static inline void afm_zs_put(struct afm_zspage *z, atomic64_t *ent)
{
	afm_zg_out(z);
	afm_ze_unpin(ent);
}

/*
 * Page @nr of zspage @z: by PFN when its pages are a run (@z->run), else
 * following the chain from its first page. Caller holds the zspage gate
 * (shared or exclusive) or the pool lock, either of which keeps the chain
 * and the run stable (migration changes them holding both).
 */
static inline struct page *afm_zs_page(const struct afm_zspage *z, unsigned int nr)
{
	struct page *page = READ_ONCE(z->first);

	if (likely(READ_ONCE(z->run)))
		return pfn_to_page(page_to_pfn(page) + nr);
	while (nr--)
		page = (struct page *)READ_ONCE(page->index);
	return page;
}

/*
 * Byte 0 of zspage @z in the kernel's linear map when all its bytes lie
 * there back to back: its pages are a run and none can be highmem (no
 * CONFIG_HIGHMEM); else NULL, and its bytes are reached page by page
 * (kmap_local_page()). Not with tag-based KASAN either: each page has its
 * own tag, so one pointer cannot reach them all; nor with KMSAN: pages
 * allocated one by one have their own metadata pages, which an access
 * across them would read as one. Caller holds the zspage gate or the pool
 * lock, which keeps the answer true until it lets go.
 */
static inline u8 *afm_zs_lin(const struct afm_zspage *z)
{
	if (IS_ENABLED(CONFIG_HIGHMEM) || IS_ENABLED(CONFIG_KASAN_SW_TAGS) ||
	    IS_ENABLED(CONFIG_KASAN_HW_TAGS) || IS_ENABLED(CONFIG_KMSAN) ||
	    !READ_ONCE(z->run))
		return NULL;
	return page_address(READ_ONCE(z->first));
}

/**
 * struct afm_zs_cur - a cursor for header accesses to one zspage
 * @z: the zspage, whose pool lock is held while the cursor is used.
 * @idx_mask: the handle bits a header holds (the pool's idx_bits).
 * @lin: afm_zs_lin() of @z: its bytes in place, or NULL.
 * @page: page @nr of @z, or NULL before the first access.
 * @nr: its number in the zspage.
 */
struct afm_zs_cur {
	struct afm_zspage *z;
	u64 idx_mask;
	u8 *lin;
	struct page *page;
	unsigned int nr;
};

/*
 * Header accesses through a cursor: the caller holds the pool lock for as
 * long as it uses the cursor, which keeps migration away (it replaces a
 * page only with the pool lock as well as the exclusive gate), so that the
 * page found for one access is still the page for the next: a free reads
 * its header and the next one and writes a hole's, an allocation writes an
 * object's header and the rest's, with one walk of the page chain (forward
 * only; none in place) and no atomic operation.
 */
static inline void afm_zs_cur_begin(struct afm_zs_cur *c,
				    struct afm_zs_pool *zs, struct afm_zspage *z)
{
	lockdep_assert_held(&zs->lock);
	c->idx_mask = BIT_ULL(zs->idx_bits) - 1;
	c->z = z;
	c->page = NULL;
	c->nr = 0;
	c->lin = afm_zs_lin(z);
}

/*
 * Object headers (see "Reverse map" in zspage_store.c) and hole headers
 * (see "Placement"), through a cursor: inline, as malloc and free make
 * several such accesses each.
 */

void afm_zs_cur_io_pages(struct afm_zs_cur *c, unsigned int off, u8 *buf,
			 unsigned int n, bool write);

/*
 * A header's AFM_ZS_HDR bytes and a record number's AFM_ZS_RECNO at @p,
 * little endian, with unaligned word accesses (not byte by byte: a word
 * load of bytes just stored one by one stalls store forwarding).
 */
static __always_inline u64 afm_zs_hdr_get(const u8 *p)
{
	BUILD_BUG_ON(AFM_ZS_HDR != 5 || AFM_ZS_RECNO != sizeof(u32));
	return get_unaligned_le32(p) | (u64)p[4] << 32;
}

static __always_inline void afm_zs_hdr_put(u8 *p, u64 v)
{
	put_unaligned_le32(v, p);
	p[4] = v >> 32;
}

/*
 * The @n header bytes at @off of the cursor's zspage, to read: in place
 * when the zspage is reached in place, else copied to @buf.
 */
static __always_inline const u8 *afm_zs_cur_rd(struct afm_zs_cur *c,
					       unsigned int off, u8 *buf,
					       unsigned int n)
{
	if (likely(c->lin))
		return c->lin + off;
	afm_zs_cur_io_pages(c, off, buf, n, false);
	return buf;
}

/*
 * Where to write the header bytes at @off of the cursor's zspage: in
 * place, or in @buf, which afm_zs_cur_wr_done() then copies to the pages.
 */
static __always_inline u8 *afm_zs_cur_wr(struct afm_zs_cur *c,
					 unsigned int off, u8 *buf)
{
	return likely(c->lin) ? c->lin + off : buf;
}

static __always_inline void afm_zs_cur_wr_done(struct afm_zs_cur *c,
					       unsigned int off, u8 *buf,
					       unsigned int n)
{
	if (unlikely(!c->lin))
		afm_zs_cur_io_pages(c, off, buf, n, true);
}

/*
 * Write the header of the extent of @len bytes at @off of the cursor's
 * zspage: an object's (@handle) or a hole's off the hole index (@handle
 * 0). Pool lock held.
 */
static __always_inline void afm_zs_chdr_write(struct afm_zs_cur *c,
					      unsigned int off,
					      unsigned int len,
					      unsigned long handle)
{
	u8 buf[AFM_ZS_HDR];

	afm_zs_hdr_put(afm_zs_cur_wr(c, off, buf),
		       len | (u64)(handle & c->idx_mask) <<
		       AFM_ZH_IDX_SHIFT);
	afm_zs_cur_wr_done(c, off, buf, AFM_ZS_HDR);
}

/*
 * Read the header at @off of the cursor's zspage. Pool lock held. Return:
 * the extent length; *@idx: the handle bits (see afm_zs_chdr_write()), or
 * AFM_ZS_LINKED for a hole on the hole index; then, if @r1 is not NULL,
 * *@r1 is its record number + 1 (the same read covers both: an indexed
 * hole is longer than its header and record number).
 */
static __always_inline unsigned int afm_zs_chdr_read(struct afm_zs_cur *c,
						     unsigned int off,
						     unsigned long *idx,
						     u32 *r1)
{
	u8 buf[AFM_ZS_HOLE_HDR];
	unsigned int len;
	const u8 *p;
	u64 v;

	p = afm_zs_cur_rd(c, off, buf, r1 ? min(AFM_ZS_HOLE_HDR,
						afm_zs_end(c->z) - off) :
					    AFM_ZS_HDR);
	v = afm_zs_hdr_get(p);
	len = v & (BIT(AFM_ZH_LEN_BITS) - 1);
	*idx = v & AFM_ZH_HOLE ? AFM_ZS_LINKED : v >> AFM_ZH_IDX_SHIFT;
	if (*idx == AFM_ZS_LINKED && r1 && len >= AFM_ZS_HOLE_HDR &&
	    off + AFM_ZS_HOLE_HDR <= afm_zs_end(c->z))
		*r1 = get_unaligned_le32(p + AFM_ZS_HDR) + 1;
	return len;
}

/*
 * Make the @len bytes at @off of the cursor's zspage a hole on the hole
 * index, with record @r1 - 1: its header with AFM_ZH_HOLE, then the
 * record number. Pool lock held.
 */
static __always_inline void afm_zs_chole_write(struct afm_zs_cur *c,
					       unsigned int off,
					       unsigned int len, u32 r1)
{
	u8 buf[AFM_ZS_HOLE_HDR];
	u8 *p = afm_zs_cur_wr(c, off, buf);

	afm_zs_hdr_put(p, len | AFM_ZH_HOLE);
	put_unaligned_le32(r1 - 1, p + AFM_ZS_HDR);
	afm_zs_cur_wr_done(c, off, buf, AFM_ZS_HOLE_HDR);
}

/*
 * The footer of an indexed hole: the last AFM_ZS_RECNO bytes of the hole
 * of @len bytes at @off hold its record number + 1, so that a free of the
 * extent after it finds it (afm_zs_hole_before()). Pool lock held.
 */
static __always_inline void afm_zs_cfoot_write(struct afm_zs_cur *c,
					       unsigned int off,
					       unsigned int len, u32 r1)
{
	unsigned int at = off + len - AFM_ZS_RECNO;
	u8 buf[AFM_ZS_RECNO];

	put_unaligned_le32(r1, afm_zs_cur_wr(c, at, buf));
	afm_zs_cur_wr_done(c, at, buf, AFM_ZS_RECNO);
}

/*
 * The AFM_ZS_RECNO bytes before @off (at least that) of the cursor's
 * zspage, as a footer: the record number + 1 of the hole ending at @off if
 * the extent before @off is an indexed hole, else any value (an object's
 * data, or a stale footer). Pool lock held.
 */
static __always_inline u32 afm_zs_cfoot_read(struct afm_zs_cur *c,
					     unsigned int off)
{
	u8 buf[AFM_ZS_RECNO];

	/*
	 * The 4 bytes before @off may be the data of a live object that its
	 * owner is writing through afm_zs_map() meanwhile (no pool lock):
	 * then they are checked against the record they name and found not
	 * to be a footer (afm_zs_hole_before()), whatever they hold.
	 */
	return data_race(get_unaligned_le32(afm_zs_cur_rd(c,
							  off - AFM_ZS_RECNO,
							  buf, AFM_ZS_RECNO)));
}

/*
 * Record @r1 - 1 of the hole table (@r1: a list link, not 0). Pool lock
 * held.
 */
static inline struct afm_zs_hrec *afm_zs_rec(struct afm_zs_pool *zs, u32 r1)
{
	return afm_zt_slot(&zs->rtab, r1 - 1, sizeof(struct afm_zs_hrec),
			   AFM_ZR_PER_PAGE, true);
}

/*
 * The extent of an object of @size bytes in @zs: header and data, rounded
 * up to @zs's alignment (see "Placement").
 */
static __always_inline unsigned int afm_zs_ext(const struct afm_zs_pool *zs,
					       unsigned int size)
{
	return ALIGN(size + AFM_ZS_HDR, zs->align);
}

/* Alignment padding of an object of @size bytes in @zs. */
static __always_inline unsigned int afm_zs_pad(const struct afm_zs_pool *zs,
					       unsigned int size)
{
	return afm_zs_ext(zs, size) - size - AFM_ZS_HDR;
}

/*
 * Bytes of @z below its fill offset not held by live objects' extents
 * (header, data, padding): its holes and the slack of objects that took a
 * hole a little larger than their extent. A solo zspage has none: its
 * object has no header, the rest of its bytes are in @pad.
 */
static inline unsigned int afm_zs_zholes(const struct afm_zspage *z)
{
	return z->tail - z->live - (z->objs - z->solo) * AFM_ZS_HDR - z->pad;
}

void afm_zs_hlist_move(struct afm_zs_pool *zs, struct afm_zspage *z,
		       unsigned int n);

/*
 * Put @z on the hole list matching its holes, or on none when it has
 * fewer than AFM_ZS_MIN_HOLES or is not a live non-victim zspage. Called
 * after every change of its holes or flags; mostly it stays where it is.
 * Pool lock held.
 */
static inline void afm_zs_hlist_update(struct afm_zs_pool *zs,
				       struct afm_zspage *z)
{
	unsigned int n = 0;

	lockdep_assert_held(&zs->lock);
	/*
	 * A zspage whose last object goes is released next, not listed: its
	 * holes can then be the whole zspage (its tail object went while it
	 * was a victim), one past the last list.
	 */
	if (z->flags == AFM_ZS_USED && z->objs)
		n = min(afm_zs_zholes(z) / AFM_ZS_MIN_HOLES,
			AFM_ZS_NR_HLISTS - 1);
	if (n != z->hlist_nr)
		afm_zs_hlist_move(zs, z, n);
}

static inline unsigned long afm_zs_holes(const struct afm_zs_pool *zs)
{
	return (zs->data_pages << PAGE_SHIFT) - zs->live_bytes -
	       (zs->objects - zs->solo_objs) * AFM_ZS_HDR - zs->pad_bytes -
	       zs->tail_bytes;
}

/*
 * Holes allocation will not reuse soon: those off the hole index (too
 * small, or left by frees while their zspage was a victim), and the
 * indexed ones beyond a reserve of 1/2^AFM_ZS_RESERVE_SHIFT of the live
 * bytes (what writes to come can fill).
 */
static inline unsigned long afm_zs_holes_unrecorded(const struct afm_zs_pool *zs)
{
	unsigned long holes = afm_zs_holes(zs), rec = zs->hole_rec_bytes,
		      reserve = zs->live_bytes >> AFM_ZS_RESERVE_SHIFT;

	return holes - min(holes, rec) + (rec > reserve ? rec - reserve : 0);
}

#ifdef CONFIG_COMPACTION
extern const struct movable_operations afm_zspage_mops;
#endif

/* Automatic compaction wanted: now, at rest (the rest run), no. */
enum { AFM_ZS_AUTO_NO, AFM_ZS_AUTO_NOW, AFM_ZS_AUTO_LATER };

/* Extents longer than this get a solo zspage (zspage_alloc.c). */
extern unsigned int afm_zs_solo_ext;

/* Compaction into holes, module parameter (zspage_compact.c). */
extern bool afm_zs_compact_holes;

/* Automatic compaction trigger, module parameter (zspage_compact.c). */
extern unsigned int afm_zs_auto_permille;
/* Short first zspages, module parameter (zspage_pages.c). */
extern bool afm_zs_short;
/* Shards of a new pool, module parameter (zspage_store.c). */
extern unsigned int afm_zs_shards;

/* zspage_table.c */
int afm_zs_spare_fill(struct afm_zs_pool *zs, struct afm_zs_spare *sp,
		      unsigned int meta, unsigned int data, gfp_t gfp);
int afm_zt_grow(struct afm_zs_pool *zs, struct afm_zs_table *t,
		unsigned long pg, gfp_t gfp);
void afm_zt_mag_drain(struct afm_zs_pool *zs, struct afm_zs_table *t);
void afm_zt_destroy(struct afm_zs_pool *zs, struct afm_zs_table *t);
int afm_zt_init(struct afm_zs_table *t);

/* zspage_pages.c */
/*
 * KUnit: the hook of a synchronous migration that starts waiting for the
 * sharers of @z's gate, or (@lock), holding the gate, for the pool lock.
 */
static inline void afm_zs_test_migrate_waits(struct afm_zspage *z, bool lock)
{
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
	struct afm_zs_pool *zs = afm_zs_desc_pool(z);
	struct afm_zs_set *set = zs->pool->store;
	void (*fn)(void *arg, unsigned long zspage_id, bool lock);

	/* Pairs with afm_zs_test_gate_wait_hook()'s release. */
	fn = smp_load_acquire(&set->test_gate_wait);
	if (fn)
		fn(READ_ONCE(set->test_gate_wait_arg),
		   (unsigned long)z->id << set->shift | zs->nr, lock);
#endif
}

bool afm_zg_lock(struct afm_zspage *z);
void afm_zg_lock_wait(struct afm_zspage *z);
void afm_zg_unlock(struct afm_zspage *z);
void afm_zs_copy_out(struct afm_zspage *z, unsigned int off, void *dst,
		     unsigned int len);
void afm_zs_copy_in(struct afm_zspage *z, unsigned int off,
		    const void *src, unsigned int len);
void afm_zs_copy_zz(struct afm_zspage *d, unsigned int doff,
		    struct afm_zspage *s, unsigned int soff,
		    unsigned int len);
void afm_zs_hdr_write(struct afm_zs_pool *zs, struct afm_zspage *z,
		      unsigned int off, unsigned int len, unsigned long handle);
unsigned int afm_zs_hdr_read(struct afm_zs_pool *zs, struct afm_zspage *z,
			     unsigned int off, unsigned long *idx, u32 *r1);
void afm_zs_unbucket(struct afm_zs_pool *zs, struct afm_zspage *z);
void afm_zs_rebucket(struct afm_zs_pool *zs, struct afm_zspage *z);
/**
 * struct afm_zs_hole - a hole on the hole index, as afm_zs_hole_find() or
 *	afm_zs_hole_find_dense() found it
 * @z: its zspage.
 * @rec: its record.
 * @r1: its record number + 1.
 * @off: its offset.
 * @len: its length.
 */
struct afm_zs_hole {
	struct afm_zspage *z;
	struct afm_zs_hrec *rec;
	u32 r1;
	unsigned int off;
	unsigned int len;
};

struct afm_zspage *afm_zs_fit(struct afm_zs_pool *zs, unsigned int size);
bool afm_zs_hole_find_dense(struct afm_zs_pool *zs, unsigned int need,
			    unsigned int max_holes, struct afm_zs_hole *h);
unsigned int afm_zs_hole_put(struct afm_zs_pool *zs, struct afm_zs_hole *h,
			     unsigned int size, unsigned long idx);
unsigned int afm_zs_new_order(const struct afm_zs_pool *zs, unsigned int ext);
unsigned int afm_zs_dest_order(const struct afm_zs_pool *zs, unsigned int size);
struct afm_zspage *afm_zs_new(struct afm_zs_pool *zs, unsigned long dpg,
			      struct afm_zs_spare *sp, unsigned int order);
void afm_zs_reset_page(struct page *page);
void afm_zs_release(struct afm_zs_pool *zs, struct afm_zspage *z);
void afm_zs_free_dead(struct afm_zs_pool *zs);
void afm_zs_free_work(struct work_struct *work);

/* zspage_alloc.c */
unsigned int afm_zs_hole_class(unsigned int len);
void afm_zs_holes_unlink_all(struct afm_zs_pool *zs, struct afm_zspage *z);
void afm_zs_pend_flush(struct afm_zs_pool *zs);
void afm_zs_rfree_drain(struct afm_zs_pool *zs);
void afm_zs_rfree_work(struct work_struct *work);
void afm_zs_top_work(struct work_struct *work);
void afm_zt_grow_later(struct afm_zs_pool *zs, struct afm_zs_table *t,
		       unsigned long pg);
void afm_zs_pend_drop(struct afm_zs_pool *zs, struct afm_zspage *z);
unsigned int afm_zs_place(struct afm_zs_pool *zs, struct afm_zspage *z,
			  unsigned int size);
void afm_zs_unplace_victim(struct afm_zs_pool *zs, struct afm_zspage *z,
			   unsigned int size);
unsigned long afm_zs_malloc(struct afm_pool *pool, size_t size,
			    gfp_t gfp);
void afm_zs_free(struct afm_pool *pool, unsigned long handle);
void *afm_zs_map(struct afm_pool *pool, unsigned long handle,
		 enum afm_mapmode mm, void *bounce);
void afm_zs_unmap(struct afm_pool *pool, unsigned long handle,
		  enum afm_mapmode mm, void *bounce);
size_t afm_zs_read(struct afm_pool *pool, unsigned long handle,
		   void *dst);
int afm_zs_write(struct afm_pool *pool, unsigned long handle,
		 const void *src, size_t len);
size_t afm_zs_obj_size(struct afm_pool *pool, unsigned long handle);

/* zspage_compact.c */
int afm_zs_want_auto(struct afm_zs_pool *zs);
atomic64_t *afm_zs_owner(struct afm_zs_pool *zs, struct afm_zspage *v,
			 unsigned int off, unsigned long idx, s64 *ep,
			 unsigned long *looked);
unsigned long afm_zs_compact(struct afm_pool *pool);
void afm_zs_compact_work(struct work_struct *work);
void afm_zs_late_work(struct work_struct *work);
unsigned long afm_zs_count(struct afm_zs_pool *zs);
unsigned long afm_zs_scan(struct afm_zs_pool *zs,
			  unsigned long nr_pages);
unsigned long afm_zs_count_objects(struct shrinker *shrinker,
				   struct shrink_control *sc);
unsigned long afm_zs_scan_objects(struct shrinker *shrinker,
				  struct shrink_control *sc);

/* zspage_migrate.c */
bool afm_zs_isolate(struct page *page, bool kernel);

#endif /* _MM_AFMALLOC_ZSPAGE_INTERNAL_H */
