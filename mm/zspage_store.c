// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc zspage store: objects packed back to back, without size classes,
 * into zspages of AFM_ZS_PAGES order-0 pages, behind a pool handle table.
 * Compaction evacuates sparse zspages; zspage pages are movable.
 *
 * Object model
 * ------------
 * A zspage is AFM_ZS_PAGES (8) order-0 pages allocated with the caller's gfp
 * flags (zram's __GFP_HIGHMEM | __GFP_MOVABLE are honoured: with highmem,
 * data is only reached through kmap_local_page()), never a high-order
 * allocation that has to succeed: they are asked for as one order-3 block
 * split into order-0 pages only when the page allocator has one at hand
 * (no reclaim, no compaction; module parameter zspage_contig), else one
 * by one. Each page stays movable on its own. A shard that holds fewer
 * than 8 data pages makes shorter ones, of 1, 2 or 4 pages (a block of
 * that order when one is at hand), so that a nearly empty pool holds few
 * pages ("Short zspages" in zspage_pages.c; module parameter
 * zspage_short); everything below holds for them with their own length.
 * Its bytes form one AFM_ZS_SIZE (32 KiB) address space in which extents
 * lie back to back, byte aligned (compressed data needs no alignment), and
 * may cross page boundaries. An object's extent is a header of AFM_ZS_HDR
 * (5) bytes followed by its data (see "Reverse map"), padded up to a
 * multiple of the pool's alignment (module parameter zspage_align, 1 by
 * default: no padding; see "Alignment" below). A zspage is filled
 * from offset 0 upwards: the bytes from its fill offset to its end are its
 * "tail"; bytes below the fill offset not in live objects' extents are
 * "holes".
 *
 * Why 8 pages: the tail of a zspage is reused (below), so the length does
 * not cost tail waste as in zsmalloc; it sets the descriptor cost (64 bytes
 * per zspage: 0.20% of 32 KiB; 0.39% with 4 pages, 0.10% with 16), the unit
 * compaction frees (32 KiB), and the burst of order-0 allocations needed
 * when a new zspage opens (8 pages, like zsmalloc's longest chain). The
 * fraction of objects crossing a page boundary does not depend on it.
 * With 16 KiB pages (arm64, as on Android) a zspage is 2 pages: the same
 * 32 KiB, so that every offset fits 16 bits; an object of a whole page
 * (and its header) still fits one, but two do not: such an object (a page
 * that does not compress) goes into a hole or tail that fits it, else
 * into a solo zspage, one page holding its data with no header ("Solo
 * zspages" in zspage_alloc.c; the only zspages whose objects have no
 * header, never on a hole or tail list, never a victim). The shorter
 * zspages below are of 1 page.
 *
 * Placement (reuse policy)
 * ------------------------
 * Every free hole of at least AFM_ZS_HOLE_MIN (17) bytes is on the hole
 * index: lists by length (AFM_ZS_HCLASS_W = 16 bytes per class) of
 * 16-byte records (zspage id, offset, length, links) in the pool's hole
 * table, a slot table like the handle table (below), so that the index has
 * no bound and taking a hole off it touches no data page; the hole's
 * header says it is indexed and is followed by its record number, so that
 * a free finds the record of the hole after it, and its last 4 bytes (its
 * footer) hold the record number + 1, so that a free finds the record of
 * the hole before it (the bytes before an object's header are another
 * object's data: a footer counts only if the record it names is in use
 * and says its hole ends there). Allocation takes the first fitting one
 * of the first AFM_ZS_HOLE_TRIES holes of the extent's class (what it
 * leaves is slack: no tail is looked at then), else the tighter of two
 * fits: the first hole of the next class with any (all of them fit) and
 * the smallest tail that fits (tails bucketed by size in AFM_ZS_GRAIN
 * steps below PAGE_SIZE and in pages above); only when neither fits is a
 * hole of a donor shard taken (see "Shards") or else a new zspage opened.
 * A brand-new zspage has the largest tail, so
 * consecutive allocations fill it in order (objects written together lie
 * together and tend to die together, which frees whole zspages without
 * copying), while the tails of older zspages are topped up by objects that
 * fit them. What an object leaves of a hole becomes a hole on the index
 * if it is at least AFM_ZS_HOLE_MIN bytes (joined with the indexed hole
 * right after it when the two fit one extent: a free keeps two holes apart
 * only when they do not); a smaller rest stays in the
 * object's extent as slack (its header says the extent's length), so that
 * no sliver too small for any object is made, and the whole hole comes
 * back when the object goes.
 *
 * Freeing the object just below the fill offset gives its extent back to
 * the tail, with the indexed holes just below it (two lie side by side
 * when together they would pass AFM_ZS_MAX_EXT); any other free makes its
 * extent a hole on the index, merged with the indexed holes before and
 * after it (up to AFM_ZS_MAX_EXT bytes), so that the rests allocation
 * leaves after objects do not stay slivers, except
 * in a victim of compaction (its holes go with it) or a zspage left empty
 * (released). Under random overwrites (zram as swap, fio) most writes thus
 * go where an object was freed, as in zsmalloc's size classes, but without
 * class rounding and across sizes; holes smaller than every request, and
 * those beyond a reserve of 1/64 of the live bytes (AFM_ZS_RESERVE_SHIFT),
 * are left to compaction (below), as are holes a free could not get a
 * record for without sleeping. Indexed holes of a victim stay linked
 * until allocation meets one (it takes it off the index and goes on), or
 * the victim is released (afm_zs_holes_unlink_all() walks its extents), so
 * picking victims costs no walk. A free touches no data page: it queues
 * its extent, and the extents of AFM_ZS_PEND frees are merged together
 * (see "Deferred frees" in zspage_alloc.c; until then an extent is a hole
 * off the index). A merge reads the extent's header and, only if its
 * zspage has indexed holes, the footer before it and then the next header
 * (unless the hole before it is the only one), and writes the hole's
 * header and footer; an allocation writes the object's header
 * and the rest's (reading first, when its zspage has another indexed hole
 * that could lie after the hole and fit one extent with the rest, the
 * header after the hole, through a cursor of its own); each through a
 * cursor (struct afm_zs_cur) under the pool lock, with no atomic
 * operation.

 * Alignment
 * ---------
 * With exact extents a hole fits only objects no longer than the one that
 * left it: under random overwrites of similar sizes (zram's rewrites) the
 * longer half of the requests of a hole class finds no hole of that class
 * that fits, goes to tails and new zspages, and the shorter holes wait
 * for compaction (fio randwrite: +12% memory during the writes where
 * zsmalloc, whose size classes take any object of the class, holds
 * steady). A pool made with zspage_align = 16 (AFM_ZS_HCLASS_W, zsmalloc's
 * class spacing) pads every extent to a multiple of 16: every hole is then
 * a multiple of 16 long and fits every object of its class, as a
 * zsmalloc slot does, for 7.5 bytes of padding per object on average
 * (about 0.5% at 1.5 KB; counted in pad_bytes, not as holes, so that
 * compaction does not chase it). The default stays 1 until the churn
 * benchmarks show the padding pays for itself (see README).
 *
 * Shards
 * ------
 * A pool is AFM_ZS_MAX_SHARDS or fewer independent shards (struct
 * afm_zs_pool; struct afm_zs_set holds them), by default one per possible
 * CPU rounded up to a power of two (module parameter zspage_shards). Each
 * has its own lock, tables, zspages, hole index, tails, compaction state,
 * workers and shrinker; everything below describes one shard. Allocation
 * takes the shard of the CPU it runs on among the active ones (a new pool
 * allocates in one; allocations that find their shard's lock held double
 * them, up to all, each created when it first becomes active: "Active
 * shards" in zspage_alloc.c), so that a pool few CPUs use at a time pays
 * for few shards; free, map, read and write
 * the shard the handle names; so CPUs that allocate and free their own
 * objects (once their shards are active) never share a lock or a cache
 * line, and a free from another CPU only
 * meets that shard's allocations: it leaves the handle to the lock holder
 * instead of taking the lock, at once while few wait, else when it finds
 * the lock held (afm_zs_pool.rfree, "Frees that find the lock held" in
 * zspage_alloc.c). Objects never move between
 * shards.
 * Pool-wide queries (afm_compact(); the statistics, which read the
 * shards' counters without their locks: afm_zs_stats()) visit every shard
 * created; the pool's page count, which zram reads on every write and
 * zswap on every store, is one counter kept beside the shards' own
 * (&afm_zs_set.pages).
 * The price: each active shard's own open zspage tail and table pages (a
 * few pages a shard). Free space is not stranded in a shard whose CPUs
 * stopped allocating (a task that moved to another CPU, frees from
 * elsewhere): a shard with at least AFM_ZS_DONOR_ON bytes of indexed holes
 * and tails together is a donor (a bit in struct afm_zs_set), and an
 * allocation whose own shard would have to open a zspage takes an indexed
 * hole, else a tail, of the next donor instead: with spin_trylock() (a
 * busy donor is skipped), and only if the donor's handle table needs no
 * page; the object then belongs to the donor (its handle names it). Tails
 * count as much as holes: frees from the top of a zspage give their bytes
 * back to its tail, so under random overwrites by a writer that moves
 * between CPUs the space a shard is left with is mostly tails (fio
 * randwrite grew by 65% when only holes were given). No CPU ever holds
 * two shard locks.
 *
 * Handle encoding
 * ---------------
 * A handle is (shard handle << log2(shards)) | shard number, the shard
 * handle 1 + the index of an 8-byte entry in the shard's handle table.
 * The table is a top array of directories, each a block of AFM_ZT_PTRS
 * pointers to table pages of PAGE_SIZE / 8 entries (64 pointers, 32768
 * entries per directory with 4 KiB pages). A directory block is an eighth
 * of a directory page, and the blocks of a shard's three tables (handles,
 * descriptors, hole records) share its directory pages, so that a shard
 * holding little pays one directory page, not three. Every directory and
 * table page is an order-0 page owned by the pool and counted in
 * afm_get_total_pages(). The top array (kvzalloc: vmalloc'd only when
 * large and the caller may sleep; shown in aux_bytes: 16 bytes a
 * directory, 64 KiB for 100 million handles in one shard) starts
 * with AFM_ZT_TOP_MIN directories and is replaced by one twice as large
 * when allocation needs a directory beyond it (afm_zt_grow(), outside the
 * pool lock; lockless lookups read it under RCU), so the table has no
 * fixed capacity; a large one (AFM_ZT_AHEAD_DIRS) is grown by the shard's
 * worker with GFP_KERNEL a quarter before it is full, and whenever a
 * caller that may not sleep (zswap) failed to grow it, so that such
 * callers do not depend on kmalloc finding several pages at once (and
 * the hole table's whenever a free, which never grows a top level, found
 * it too small for a record: the next malloc grows it too); empty
 * table pages, directory blocks and directory pages go back (pages after
 * an RCU grace period, and blocks serve another directory only after one:
 * a map looks its entry up and pins it in an RCU read-side section). Free
 * entries
 * of a table page are chained through the entries; up to AFM_ZT_MAG (16) freed
 * entries are kept at hand instead, cleared, for the next allocations (the
 * table's magazine; the hole table has one too), so that churn does not
 * touch a table page's free chain and counts; they go back to their pages
 * at every compaction run, when the table's last entry is freed and when
 * frees outrun allocations (below). The
 * price: last freed, first reused, a new object takes the entry an old one
 * left anywhere in the table (zram frees a rewritten block's old copy just
 * after allocating the new one), so that handles lose the order of the
 * writes and a table page stays while any of its entries lives. So while
 * allocations outrun frees (an untar, a fill: "write-mostly", AFM_ZT_WR_ON)
 * a freed entry of a table page that is neither open nor current goes back
 * to its page, not to the magazine, and new objects take the current
 * page's entries in order (KUnit afm_zs_test_table_locality); while
 * frees outrun allocations (files removed, zswap's writeback:
 * "free-mostly") the magazine is emptied and all but unused, so that the
 * objects written meanwhile (a directory's metadata rewritten) take the
 * current page's entries, not those of the pages the frees are emptying
 * (afm_zs_test_table_remove); under churn the magazine serves every free
 * (afm_zs_test_table_churn_mag). What the magazine still costs: a slot
 * freed while frees and allocations keep pace goes to the next object,
 * also in a page that is emptying (README "Handle slot reuse"). Module
 * parameter zspage_handle_mag = 0 turns the handle table's magazine off;
 * zspage_handle_phases = N keeps it but turns both phase rules off (every
 * freed entry into the magazine while it has room, as until 9ca3a27), so
 * that what the rules cost can be measured in the boot that runs them.
 * Otherwise entries are taken from one
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
 * this is built for; 27 bits, 4 TiB, with 16 KiB pages; the descriptor
 * table refuses more, so that is the only bound on a pool). A free entry
 * has LIVE clear and holds the index of the next free entry of its page.
 * Zspage ids index a descriptor table built the same way (64-byte slots,
 * a page of them: a descriptor is a cache line; struct afm_zspage). A
 * descriptor holds no page array: its first page and, in each data
 * page's ->index, the next one chain the pages (as zsmalloc does);
 * migration relinks.
 * A new zspage's pages are put in PFN order; when they are then a run of
 * PFNs (order-0 pages allocated together often are, up or down), a byte
 * of the descriptor says so and page k is found by PFN, reading no struct
 * page, and, without highmem, the zspage is 32 KiB of the linear map:
 * headers, copies and mappings reach any extent in place, one crossing
 * pages too (no bounce buffer); migration ends the run (a zspage of one
 * page stays one).
 * Error values are never valid handles: handles stay below 2^63.
 *
 * Reverse map
 * -----------
 * Each object's extent (but a solo zspage's, see "Object model") starts
 * with a header: its length (header included,
 * AFM_ZH_LEN_BITS bits), AFM_ZH_HOLE (set for a hole on the hole index)
 * and its handle modulo 2^AFM_ZH_IDX_BITS (26 bits with 4 KiB pages),
 * little endian. Its entry holds the offset of the data, just after the
 * header; the extent may be longer than header and data (slack, see
 * "Placement"). A free leaves the header in place, so a hole made by a
 * free still says how long it is (it becomes an indexed hole's header, or
 * stays as it was when the hole is not indexed); when allocation takes
 * part of a hole, the rest gets a header of its own. So the extents of a
 * zspage tile it from 0 to its fill offset, and compaction finds a
 * victim's objects by walking them (afm_zs_evacuate()): an extent is an
 * indexed hole when AFM_ZH_HOLE is set, else an object when the entry of a
 * handle with its header's bits is live and points to it (afm_zs_owner():
 * one table lookup per 2^26 handles in the table), else a hole. Headers
 * and hole links are written under the pool lock; a moved object gets a
 * new header (with slack only when it went into a hole and what it left
 * is too short for the index); the walk runs under the pool lock, and a
 * victim's extents do not change while it is one (no allocation goes to
 * it; a free leaves its header).
 *
 * Per-object cost (64-bit, 4 KiB pages)
 * -------------------------------------
 * footprint = size + 5 (header) + 8 (entry) + (size + 5) * 65 / 32768
 * (descriptor share), plus holes until reused or compacted, slack (under
 * 17 bytes, only in an object placed in a hole) and unfilled tails, and,
 * with zspage_align above 1, the padding (header and data rounded up to
 * it). No size-class rounding otherwise. Each indexed hole costs a 16-byte
 * record in the hole table. At the untar benchmark's mean
 * object size (1300 bytes) that is 0.38% for headers + 0.62% for entries +
 * 0.20% for descriptors; zsmalloc spends 16 bytes per object (handle slot
 * and object header, 1.2%) plus class rounding (~8 bytes, 0.6%) plus tail
 * waste. The table and directory pages themselves, and up to a few bytes
 * per zspage of tails too small for any object, come on top.
 * afm_huge_class_size() is the smallest size whose footprint reaches
 * PAGE_SIZE (4075 with zspage_align 1; a page stored uncompressed, as
 * zram does from there, has a footprint of 4118).
 *
 * Compaction
 * ----------
 * Live zspages with at least AFM_ZS_MIN_HOLES bytes of holes are on hole
 * lists by hole bytes (AFM_ZS_MIN_HOLES wide), updated as their holes
 * change. A pass (afm_zs_pass()) takes victims from the top list down,
 * most holes first, up to AFM_ZS_MAX_VICTIMS, as many as its goal needs;
 * marks them victims (no allocation goes to them); walks each victim's
 * extents, moving every unpinned object into an indexed hole of a dense
 * zspage (fewer than AFM_ZS_DEST_HOLES bytes of holes, and fewer than the
 * run's victims have) when one of the first AFM_ZS_DEST_TRIES it looks at
 * fits (afm_zs_hole_find_dense(): the hole it fills is given back too, so
 * it copies less per byte it gives back, and the object goes where the
 * run will not move it again; module parameter zspage_compact_holes),
 * else to the best-fitting tail
 * of a non-victim zspage (the densest that fits, so survivors fill the
 * tails of full zspages first) or to a new zspage; and frees each victim
 * as it empties. Its cost is the victims' extents, the bytes it copies and
 * at most AFM_ZS_DEST_TRIES hole records (and their zspages' descriptors)
 * per object, whatever the size of the pool: no pass looks at an entry
 * that is not a victim's, nor at more zspages than that. The pool lock is
 * dropped every 256 extents (or 16 moves), and for each move's copy: the
 * object's entry is locked, its destination placed and headed and its
 * source counted out under the lock, its bytes copied without it under
 * both zspages' gates (shared), so that the shard's allocations and frees
 * do not wait for copies (afm_zs_move()).
 * Callers: afm_compact() (every zspage with AFM_ZS_MIN_HOLES of holes),
 * the pool's shrinker (count: the hole bytes of the listed zspages, in
 * pages, what scan can take; scan: that many pages), and two automatic
 * runs queued by free. When holes exceed the trigger (zspage_auto_permille
 * thousandths of the live bytes, default 1, and AFM_ZS_AUTO_MIN zspages),
 * the holes allocation will not reuse soon are above it too (those off the
 * index, and the indexed ones beyond the reserve) and some zspage has a
 * quarter of its bytes in holes (AFM_ZS_AUTO_MIN_HOLES), the worker runs
 * at once, or AFM_ZS_AUTO_GAP after the start of its last run if that is
 * later (runs under churn are batched): down to half the trigger, taking
 * zspages with a quarter of their bytes in holes (at most 3 bytes copied
 * per byte given back). Otherwise, above the rest trigger (the same
 * share of the live bytes, with a floor of AFM_ZS_REST_FLOOR instead of
 * AFM_ZS_AUTO_MIN zspages, so that a small pool is compacted at rest too),
 * the rest run comes
 * AFM_ZS_LATE after the last allocation: it counts every hole and takes
 * every zspage with AFM_ZS_MIN_HOLES of holes (AFM_ZS_REST_MIN_HOLES), so
 * that once writes stop, thin holes come down too. Under continuous
 * overwrites the holes thus stay where reuse holds them (a few per cent of
 * the live bytes), not where copying would.
 * What compaction costs is counted per shard (debugfs "cost" row): the
 * wall-clock time of its runs, the bytes it copied, the extents it walked
 * and the handle entries it looked at.
 *
 * Files
 * -----
 * zspage_internal.h holds the structures and the hot-path helpers (entries,
 * table lookups, the magazine side of taking and freeing slots, pins, the
 * shared gate, header accesses through cursors); zspage_table.c the slot
 * tables; zspage_pages.c zspages (exclusive gate, copies, header accesses
 * page by page, hole lists, tail buckets, creation and freeing);
 * zspage_alloc.c the hole index, malloc, free and the accessors;
 * zspage_compact.c compaction, the automatic runs and the shrinker;
 * zspage_migrate.c page migration; zspage_hooks.c the KUnit hooks (built
 * only with CONFIG_AFMALLOC_KUNIT_TEST); this file pool setup (and the
 * creation of shards as they become active), the module parameters and
 * statistics. Each opens with its part of the lock rules below.
 *
 * Page accounting
 * ---------------
 * afm_get_total_pages() counts, exactly: zspage pages (including those of
 * empty zspages waiting for the deferred free), handle table pages,
 * descriptor table pages, hole table pages and the directory pages of the
 * three tables. What else the store allocates is small and counted in
 * aux_bytes, not in pages: the shard and set structures, each
 * table's top array and the compaction candidate array.
 *
 * Locking, in nesting order
 * -------------------------
 *   afm_zs_set.grow_lock (mutex)    creating shards and raising the
 *                                   active ones (the grow work, pool
 *                                   creation, a KUnit hook); takes the
 *                                   first shard's pool lock to copy its
 *                                   settings. Nothing that allocates or
 *                                   frees takes it.
 *   afm_pool.compact_lock (mutex)   one afm_compact() at a time; it takes
 *                                   the shards' compact_lock one by one.
 *   afm_zs_pool.compact_lock        one compaction pass at a time in a
 *     (mutex)                       shard (manual, automatic worker, rest
 *                                   run, shrinker: trylock); one a shard,
 *                                   never two at once.
 *   page lock (PG_locked)           taken by the migration core around
 *                                   isolate/migrate/putback; by a free
 *                                   with trylock_page() under the
 *                                   exclusive gate; by the deferred free
 *                                   with lock_page(), each page of a dead
 *                                   zspage in chain order, no gate held.
 *   afm_zs_pool.lock (spinlock)     one a shard, never two at once:
 *                                   tables, tail buckets, the hole index
 *                                   (heads, records, hole headers),
 *                                   zspage counters and flags, every entry
 *                                   change except pins and a move's last
 *                                   (below); with it, header accesses need
 *                                   no zspage gate. Not taken by map,
 *                                   read or write; migration takes it
 *                                   after the exclusive gate (a trylock
 *                                   when asynchronous), and a compaction
 *                                   pass lets go of it after its current
 *                                   move when one waits
 *                                   (afm_zs_pool.migrate_wait).
 *                                   Never taken in interrupt context (no
 *                                   caller allocates or frees there), so
 *                                   taken with spin_lock(); free may also
 *                                   run with hardirqs off (zram as swap).
 *                                   Free takes it with spin_trylock()
 *                                   first (a free of another CPU's shard
 *                                   only when many wait, below); failing,
 *                                   it puts the handle in
 *                                   afm_zs_pool.rfree (atomics, no lock),
 *                                   which only a holder empties.
 *   entry LOCK bit                  compaction moving one object: only set
 *                                   under the pool lock, with preemption
 *                                   disabled, for one copy, which runs
 *                                   without the pool lock (the gates of
 *                                   both zspages held shared instead) when
 *                                   neither gate is held exclusively; the
 *                                   entry's new value clears it, with no
 *                                   lock taken before. A free that finds
 *                                   it, under the pool lock, waits for it
 *                                   as pinners do (afm_zs_move()).
 *   zspage gate (afm_zspage.gate)   shared: accessors (map, read, write)
 *                                   and compaction's unlocked copies
 *                                   (trylock) keep the zspage's page
 *                                   chain stable;
 *                                   exclusive: migration replacing a page
 *                                   (then also the pool lock, taken after
 *                                   it: the chain is stable under
 *                                   either), and freeing a zspage
 *                                   (trylock). A synchronous migration
 *                                   waits for the sharers inside with
 *                                   AFM_ZG_WAIT set, which keeps new
 *                                   ones out, until they have left.
 *                                   Held, and waited for, with preemption
 *                                   disabled, never across a sleep; not
 *                                   recursive: no sharer enters a gate
 *                                   while it holds one.
 * The entry LOCK bit and pins, and the gate, are lockdep maps
 * (afm_ze_map, afm_zg_map): pins as recursive read locks, the gate's
 * sharers as read locks (not recursive: lockdep reports a sharer entering
 * a gate while it holds one, which a waiting migration would keep out for
 * ever), compaction's shared tries, LOCK and the exclusive gate as the
 * trylocks they are (a waiting migration tells lockdep once it has the
 * gate).
 * Accessors pin the entry (a cmpxchg on the pin count, spinning while LOCK
 * is set), which fixes the object's location and keeps its zspage alive,
 * then take the gate shared. A pinned object is never moved: compaction
 * sets LOCK only with a cmpxchg from an unpinned entry and skips pinned
 * ones. Migration takes the gate exclusively and then the pool lock, each
 * with a trylock (MIGRATE_ASYNC: -EAGAIN when either is busy), or the gate
 * as a queued rwlock's writer does (zsmalloc's migrate_write_lock()), with
 * preemption disabled and new sharers kept out (AFM_ZG_WAIT) until those
 * inside have finished their access (else CPUs reading one zspage back to
 * back, never all out at once, would keep it from migrating for as long
 * as they read), and then the pool lock, waiting for it (nothing that
 * holds the pool lock waits for a gate: it only tries them). Sharers wait
 * for a migrator while it waits for them and while it waits for the pool
 * lock and migrates, with preemption disabled. The gate's wait has no
 * bound, as a lock's has none:
 * every sharer holds the gate for one access, with preemption disabled,
 * and waits for no gate meanwhile (afm_map_object() refuses a second map
 * on a CPU with one, afm_read() and afm_write() refuse then too; a sharer
 * that entered a second gate could wait for a migration that waits for
 * it, on one zspage or, with two migrations, across two). A migration
 * waiting for the pool lock, the gate held, counts itself in the shard's
 * migrate_wait, and a compaction pass seeing it lets go of the lock after
 * its current move and leaves it free until none waits (the zspage's
 * readers wait for the migration meanwhile: not for a whole pass).
 * Malloc and free never meet the gate. Freeing a
 * zspage trylocks the gate and then every page lock (as zsmalloc's
 * trylock_zspage()), clears __PageMovable under the page lock and drops its
 * page reference; if any trylock fails the zspage goes to a worker that
 * takes each page lock with lock_page(), without the gate, so that the
 * migration core, after taking a page back from under it a few times
 * (page_lock_unfairness), hands it the page when it lets go (its retries,
 * and CMA's, could win every time against a worker that polls the lock;
 * afm_zs_free_dead()). A page isolated for migration when its zspage is
 * freed is then owned by the migration core, which frees it without
 * calling migrate_page (counted apart: a page migrated is one whose bytes
 * migrate_page moved to a new page).
 */

#define pr_fmt(fmt) "afmalloc: " fmt

#include "zspage_internal.h"

/* Pool setup and queries */

/*
 * Shards of a new pool: afm_zs_shards rounded up to a power of two, or
 * with 0 one per possible CPU, at most AFM_ZS_MAX_SHARDS; a larger value
 * is refused (-EINVAL), not cut down behind the writer's back.
 */
unsigned int afm_zs_shards;

static int afm_zs_shards_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, AFM_ZS_MAX_SHARDS);
}

static const struct kernel_param_ops afm_zs_shards_ops = {
	.set	= afm_zs_shards_set,
	.get	= param_get_uint,
};
module_param_cb(zspage_shards, &afm_zs_shards_ops, &afm_zs_shards, 0644);
MODULE_PARM_DESC(zspage_shards,
		 "zspage store: shards of a new pool, 0 to 64 (rounded up to a power of two), 0 = one per possible CPU");

/*
 * A new pool allocates in one shard and takes more as its allocations
 * wait for a shard's lock ("Active shards" in zspage_alloc.c); N makes
 * every shard of a new pool active from the start (as before the active
 * shards), to compare the two.
 */
static bool afm_zs_shards_grow = true;
module_param_named(zspage_shards_grow, afm_zs_shards_grow, bool, 0644);
MODULE_PARM_DESC(zspage_shards_grow,
		 "zspage store: a new pool allocates in one shard and doubles them when allocations wait for a shard's lock (default Y); N: in every shard from the start");

/*
 * Freed handle slots each shard of a new pool keeps at hand (the handle
 * table's magazine, see "Handle encoding"; at most AFM_ZT_MAG). 0 gives
 * every freed slot back to its table page, so that handles are taken in
 * address order and keep the locality of the writes that made them: after
 * bulk frees the handle table empties page by page (the quick tree's
 * remove steps: about a third fewer table pages, two thirds fewer after
 * the last one), for slower allocation and free while the pool fits the
 * caches (README, "Handle slot reuse").
 */
static unsigned int afm_zs_handle_mag = AFM_ZT_MAG;

static int afm_zs_handle_mag_set(const char *val,
				 const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, AFM_ZT_MAG);
}

static const struct kernel_param_ops afm_zs_handle_mag_ops = {
	.set	= afm_zs_handle_mag_set,
	.get	= param_get_uint,
};
module_param_cb(zspage_handle_mag, &afm_zs_handle_mag_ops, &afm_zs_handle_mag,
		0644);
MODULE_PARM_DESC(zspage_handle_mag,
		 "zspage store: freed handle slots each shard of a new pool keeps at hand for the next allocations, 0 to 16 (default 16; 0: handles in address order, denser table after bulk frees, slower under churn)");

/*
 * Whether the handle table of a new pool tells write-mostly and
 * free-mostly phases apart (see "Handle encoding"): N turns both rules
 * off, so that every freed slot goes into the magazine while it has room.
 * For measuring what the rules cost beside the default in one boot.
 */
static bool afm_zs_handle_phases = true;
module_param_named(zspage_handle_phases, afm_zs_handle_phases, bool, 0644);
MODULE_PARM_DESC(zspage_handle_phases,
		 "zspage store: the handle table of a new pool keeps freed slots out of its magazine while allocations or frees outrun the other (default Y; N: every freed slot into the magazine, for measurement)");

/*
 * Extent alignment of a new pool (see "Placement"): a power of two, at
 * most AFM_ZS_MAX_ALIGN; anything else is refused with -EINVAL.
 */
static unsigned int afm_zs_align = 1;

static bool afm_zs_align_ok(unsigned int n)
{
	return is_power_of_2(n) && n <= AFM_ZS_MAX_ALIGN;
}

static int afm_zs_align_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int err = kstrtouint(val, 0, &n);

	if (err)
		return err;
	if (!afm_zs_align_ok(n)) {
		pr_warn("zspage_align: %u is not a power of two from 1 to %u\n",
			n, AFM_ZS_MAX_ALIGN);
		return -EINVAL;
	}
	WRITE_ONCE(afm_zs_align, n);
	return 0;
}

static const struct kernel_param_ops afm_zs_align_ops = {
	.set	= afm_zs_align_set,
	.get	= param_get_uint,
};
module_param_cb(zspage_align, &afm_zs_align_ops, &afm_zs_align, 0644);
MODULE_PARM_DESC(zspage_align,
		 "zspage store: extent alignment of a new pool in bytes (a power of two, 1 to 64); 16 makes every hole fit every object of its length class");

static void afm_zs_shard_destroy(struct afm_zs_pool *zs);

/*
 * Shard @nr of @pool, or NULL; a shard created after the first (@first)
 * takes the settings the first was given (its handle magazine, and what
 * KUnit hooks set on an empty pool).
 */
static struct afm_zs_pool *afm_zs_shard_create(struct afm_pool *pool,
					       unsigned int nr,
					       unsigned int shift,
					       unsigned int align,
					       struct afm_zs_pool *first)
{
	struct afm_zs_pool *zs;
	unsigned int b;

	BUILD_BUG_ON(AFM_ZE_ID_BITS < 1);
	BUILD_BUG_ON(AFM_ZS_NR_BUCKETS >= AFM_ZS_NO_BUCKET);
	BUILD_BUG_ON(AFM_ZS_NR_HLISTS > 64);
	BUILD_BUG_ON(!is_power_of_2(AFM_ZH_PER_PAGE) || !is_power_of_2(AFM_ZD_PER_PAGE) ||
		     !is_power_of_2(AFM_ZR_PER_PAGE));
	/* An indexed hole holds its header and its record number. */
	BUILD_BUG_ON(AFM_ZS_HOLE_MIN < AFM_ZS_HOLE_HDR);
	/* The phase counts reach AFM_ZT_WR_ON, not AFM_ZT_PHASE_OFF. */
	BUILD_BUG_ON(AFM_ZT_WR_ON > AFM_ZT_WR_MAX);
	BUILD_BUG_ON(AFM_ZT_PHASE_OFF <= AFM_ZT_WR_MAX);
	BUILD_BUG_ON(PAGE_SIZE + AFM_ZS_HDR >= BIT(AFM_ZH_LEN_BITS));
	BUILD_BUG_ON(ALIGN(PAGE_SIZE + AFM_ZS_HDR, AFM_ZS_MAX_ALIGN) >
		     AFM_ZS_MAX_EXT);
	/* Offsets and lengths in a zspage (descriptors, hole records). */
	BUILD_BUG_ON(sizeof(afm_zs_off_t) != sizeof(u16));
	BUILD_BUG_ON(sizeof(struct afm_zspage) % sizeof(u64));
	/* A descriptor is a cache line (struct afm_zspage). */
	BUILD_BUG_ON(IS_ENABLED(CONFIG_64BIT) &&
		     sizeof(struct afm_zspage) != 64);
	/* An object of a whole page, and its header, fits a zspage. */
	BUILD_BUG_ON(AFM_ZS_ORDER < 1);
	/* Tables with a magazine (afm_zt_put()). */
	BUILD_BUG_ON(!is_power_of_2(AFM_ZH_PER_PAGE) ||
		     !is_power_of_2(AFM_ZR_PER_PAGE) ||
		     sizeof(struct afm_zs_hrec) != 2 * sizeof(u64));

	zs = kvzalloc(sizeof(*zs), GFP_KERNEL);
	if (!zs)
		return NULL;
	mutex_init(&zs->compact_lock);
	zs->cand = kvmalloc_array(AFM_ZS_MAX_VICTIMS, sizeof(*zs->cand),
				  GFP_KERNEL);
	if (!zs->cand)
		goto fail;
	zs->pool = pool;
	zs->nr = nr;
	zs->align = align;
	zs->idx_bits = AFM_ZH_IDX_BITS;
	spin_lock_init(&zs->lock);
	INIT_LIST_HEAD(&zs->dpages);
	zs->htab.slot_size = sizeof(u64);
	zs->htab.per_page = AFM_ZH_PER_PAGE;
	zs->htab.open_free = AFM_ZH_PER_PAGE / 4;
	zs->htab.cur = ULONG_MAX;
	/* Handles (with the shard bits) stay far below the error values. */
	zs->htab.max_pages = (ULONG_MAX >> (1 + shift)) / AFM_ZH_PER_PAGE;
	zs->htab.lock = &zs->lock;
	zs->htab.dshift = ilog2(AFM_ZT_PTRS);
	zs->htab.mag_max = READ_ONCE(afm_zs_handle_mag);
	zs->htab.phase_on = READ_ONCE(afm_zs_handle_phases) ? AFM_ZT_WR_ON :
							       AFM_ZT_PHASE_OFF;
	zs->htab.pshift = ilog2(AFM_ZH_PER_PAGE);
	zs->dtab.slot_size = sizeof(struct afm_zspage);
	zs->dtab.per_page = AFM_ZD_PER_PAGE;
	zs->dtab.open_free = AFM_ZD_PER_PAGE / 4;
	zs->dtab.cur = ULONG_MAX;
	/* Zspage ids fit an entry and a u32. */
	zs->dtab.max_pages = min_t(u64, BIT_ULL(AFM_ZE_ID_BITS), U32_MAX) /
			     AFM_ZD_PER_PAGE;
	zs->dtab.lock = &zs->lock;
	zs->dtab.dshift = ilog2(AFM_ZT_PTRS);
	zs->dtab.pshift = ilog2(AFM_ZD_PER_PAGE);
	zs->dtab.phase_on = AFM_ZT_WR_ON;
	zs->rtab.slot_size = sizeof(struct afm_zs_hrec);
	zs->rtab.per_page = AFM_ZR_PER_PAGE;
	zs->rtab.open_free = AFM_ZR_PER_PAGE / 4;
	zs->rtab.cur = ULONG_MAX;
	/* Record numbers + 1 fit a u32 (list links). */
	zs->rtab.max_pages = U32_MAX / AFM_ZR_PER_PAGE;
	zs->rtab.lock = &zs->lock;
	zs->rtab.dshift = ilog2(AFM_ZT_PTRS);
	zs->rtab.mag_max = AFM_ZT_MAG;
	zs->rtab.pshift = ilog2(AFM_ZR_PER_PAGE);
	zs->rtab.phase_on = AFM_ZT_WR_ON;
	zs->auto_next = jiffies;
	if (first) {
		afm_zs_lock(first);
		zs->idx_bits = first->idx_bits;
		zs->htab.mag_max = first->htab.mag_max;
		zs->htab.phase_on = first->htab.phase_on;
		zs->htab.dshift = first->htab.dshift;
		zs->dtab.dshift = first->dtab.dshift;
		zs->rtab.dshift = first->rtab.dshift;
#if IS_ENABLED(CONFIG_AFMALLOC_KUNIT_TEST)
		/* Set by hooks under the grow lock, as this runs. */
		zs->test_quiet = READ_ONCE(first->test_quiet);
		zs->auto_next = READ_ONCE(first->auto_next);
		atomic_set(&zs->migrate_wait, ((struct afm_zs_set *)
					      pool->store)->test_migrate_wait);
#endif
		afm_zs_unlock(first);
	}
	if (afm_zt_init(&zs->htab) || afm_zt_init(&zs->dtab) ||
	    afm_zt_init(&zs->rtab))
		goto fail;
	for (b = 0; b < AFM_ZS_NR_BUCKETS; b++)
		INIT_LIST_HEAD(&zs->tails[b]);
	for (b = 0; b < AFM_ZS_NR_HLISTS; b++)
		INIT_LIST_HEAD(&zs->hlists[b]);
	INIT_LIST_HEAD(&zs->dead);
	INIT_WORK(&zs->free_work, afm_zs_free_work);
	INIT_WORK(&zs->top_work, afm_zs_top_work);
	INIT_DELAYED_WORK(&zs->rfree_work, afm_zs_rfree_work);
	INIT_DELAYED_WORK(&zs->compact_work, afm_zs_compact_work);
	INIT_DELAYED_WORK(&zs->late_work, afm_zs_late_work);

	zs->shrinker = shrinker_alloc(0, "afm-zspage-%s-%u", pool->name, nr);
	if (!zs->shrinker)
		goto fail;
	zs->shrinker->count_objects = afm_zs_count_objects;
	zs->shrinker->scan_objects = afm_zs_scan_objects;
	zs->shrinker->private_data = zs;
	zs->shrinker->seeks = DEFAULT_SEEKS;
	zs->shrinker->batch = AFM_ZS_MAX_VICTIMS * AFM_ZS_PAGES / 4;
	shrinker_register(zs->shrinker);
	return zs;

fail:
	kvfree(rcu_dereference_protected(zs->htab.top, true));
	kvfree(rcu_dereference_protected(zs->dtab.top, true));
	kvfree(rcu_dereference_protected(zs->rtab.top, true));
	mutex_destroy(&zs->compact_lock);
	kvfree(zs->cand);
	kvfree(zs);
	return NULL;
}

/*
 * Create the shards of @set up to @n (see "Active shards" in
 * zspage_alloc.c). Process context, &afm_zs_set.grow_lock held.
 * Return: the shards that exist after, @n unless memory ran out.
 */
static unsigned int afm_zs_grow(struct afm_zs_set *set, unsigned int n)
{
	struct afm_zs_pool *zs;
	unsigned int i;

	lockdep_assert_held(&set->grow_lock);
	for (i = set->created; i < min(n, set->nr); i++) {
		zs = afm_zs_shard_create(set->pool, i, set->shift, set->align,
					 i ? set->shard[0] : NULL);
		if (!zs)
			break;
		/* Its fields before the pointer (afm_zs_of(), afm_zs_donor()). */
		smp_store_release(&set->shard[i], zs);
		/* The shard before the count that makes it visible. */
		smp_store_release(&set->created, i + 1);
	}
	return set->created;
}

/*
 * Double the active shards (queued by afm_zs_contended()), creating the
 * new ones first; a shard that cannot be had for memory leaves the active
 * shards as they were (the next AFM_ZS_GROW_AFTER waits try again).
 */
static void afm_zs_grow_work(struct work_struct *work)
{
	struct afm_zs_set *set = container_of(work, struct afm_zs_set,
					      grow_work);
	unsigned int want;

	mutex_lock(&set->grow_lock);
	want = min(2 * set->active, set->nr);
	if (set->active == READ_ONCE(set->grow_from) &&
	    afm_zs_grow(set, want) >= want)
		/* The shards before the count that lets allocation take them. */
		smp_store_release(&set->active, want);
	/* Waits count again, toward the next doubling. */
	WRITE_ONCE(set->grow_from, 0);
	mutex_unlock(&set->grow_lock);
}

static int afm_zs_create(struct afm_pool *pool)
{
	unsigned int want = READ_ONCE(afm_zs_shards), n, i;
	struct afm_zs_set *set;

	if (!want)
		want = num_possible_cpus();
	n = roundup_pow_of_two(clamp(want, 1U, AFM_ZS_MAX_SHARDS));
	set = kzalloc(struct_size(set, shard, n), GFP_KERNEL);
	if (!set)
		return -ENOMEM;
	set->nr = n;
	set->shift = ilog2(n);
	set->active = READ_ONCE(afm_zs_shards_grow) ? 1 : n;
	set->contended_since = jiffies;
	set->pool = pool;
	set->align = READ_ONCE(afm_zs_align);
	mutex_init(&set->grow_lock);
	INIT_WORK(&set->grow_work, afm_zs_grow_work);
	set->test_shard = -1;
	set->test_cpu = -1;
	pool->store = set;
	mutex_lock(&set->grow_lock);
	i = afm_zs_grow(set, set->active);
	mutex_unlock(&set->grow_lock);
	if (i < set->active)
		goto fail;
	return 0;

fail:
	while (i--)
		afm_zs_shard_destroy(set->shard[i]);
	pool->store = NULL;
	mutex_destroy(&set->grow_lock);
	kfree(set);
	return -ENOMEM;
}

static void afm_zs_destroy(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned int i;

	/* No shard is created after this. */
	cancel_work_sync(&set->grow_work);
	for (i = 0; i < set->created; i++)
		afm_zs_shard_destroy(set->shard[i]);
	WARN_ON_ONCE(atomic_long_read(&set->pages));
	mutex_destroy(&set->grow_lock);
	kfree(set);
}

static void afm_zs_shard_destroy(struct afm_zs_pool *zs)
{
	struct afm_pool *pool = zs->pool;
	unsigned long pg, end;
	unsigned int i;

	shrinker_free(zs->shrinker);
	/* Frees are over (a caller bug otherwise): none is left waiting. */
	afm_zs_lock(zs);
	afm_zs_rfree_drain(zs);
	zs->dying = true;
	afm_zs_unlock(zs);
	cancel_delayed_work_sync(&zs->rfree_work);
	cancel_delayed_work_sync(&zs->compact_work);
	cancel_delayed_work_sync(&zs->late_work);
	cancel_work_sync(&zs->top_work);

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
			zs->tail_bytes -= afm_zs_end(z) - z->tail;
			zs->zspages--;
			zs->data_pages -= afm_zs_npages(z);
			zs->dead_zspages++;
			zs->dead_pages += afm_zs_npages(z);
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
	afm_zt_destroy(zs, &zs->rtab);
	WARN_ON_ONCE(zs->dir_pages || !list_empty(&zs->dpages));
	WARN_ON_ONCE(atomic_long_read(&zs->total_pages));
	mutex_destroy(&zs->compact_lock);
	kvfree(zs->cand);
	kvfree(zs);
}

static unsigned long afm_zs_total_pages(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;

	return atomic_long_read(&set->pages);
}

static unsigned long afm_zs_peek(const unsigned long *counter)
{
	/* Written under the shard's lock, read without it: a moment's value. */
	return data_race(READ_ONCE(*counter));
}

/*
 * Read without the shards' locks: zram's mm_stat asks for the pages
 * compaction gave back whenever it is read (a monitoring daemon's poll),
 * and that must not take every shard's lock from its allocations and
 * frees, up to AFM_ZS_MAX_SHARDS of them (zsmalloc's zs_pool_stats() reads
 * atomics). Each counter is written under its shard's lock and read
 * once, whole: a value it had while the stats were read; the sums over
 * shards, and the figures together, are not a snapshot of one moment. In a
 * pool nobody uses meanwhile (the tests) they are exact.
 */
static void afm_zs_stats(struct afm_pool *pool, struct afm_store_stats *st)
{
	struct afm_zs_set *set = pool->store;
	struct afm_zs_pool *zs;
	unsigned int i;

	st->objects = 0;
	st->stored_bytes = 0;
	st->meta_bytes = 0;
	st->self_compacted = 0;
	for (i = 0; i < afm_zs_created(set); i++) {
		zs = set->shard[i];
		st->objects += afm_zs_peek(&zs->objects);
		st->stored_bytes += afm_zs_peek(&zs->live_bytes);
		st->meta_bytes += (afm_zs_peek(&zs->htab.pages) +
				   afm_zs_peek(&zs->dtab.pages) +
				   afm_zs_peek(&zs->rtab.pages) +
				   afm_zs_peek(&zs->dir_pages)) << PAGE_SHIFT;
		st->self_compacted += afm_zs_peek(&zs->st.auto_freed) +
				      afm_zs_peek(&zs->st.shrink_freed);
	}
}

/*
 * Rows of the debugfs "classes" table. The first AFM_ZS_GROUPS rows are
 * zspages by fill (live bytes / its bytes, in eighths: "fill0-12" has
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
	AFM_ZS_ROW_RUNS,
	AFM_ZS_ROW_COST,
	AFM_ZS_ROW_SHARDS,
	AFM_ZS_ROW_DEST,
	AFM_ZS_NR_ROWS,
};

static unsigned int afm_zs_nr_classes(struct afm_pool *pool)
{
	return AFM_ZS_NR_ROWS;
}

/*
 * Counter rows (columns objs / direct / slabs / pages):
 *   handles  live handles / free entries in table pages / table pages /
 *            table pages + the directory pages of the three tables
 *   descs    descriptors in use / free descriptor slots / descriptor
 *            pages / descriptor + hole table pages
 *   free     hole bytes / tail bytes / dead zspages waiting for the
 *            deferred free / hole bytes in pages (all holes; the
 *            shrinker counts only those of the hole lists' zspages)
 *   migrate  pages migrated (contents moved to a new page) / migrations
 *            refused (-EAGAIN: asynchronous, zspage or shard busy) /
 *            pages isolated / isolated pages put back
 *   compact  objects moved / victims emptied / passes / pages freed by
 *            compaction (manual, automatic and shrinker)
 *   auto     automatic runs / shrinker scans / pages freed by automatic
 *            runs / pages freed by shrinker scans
 *   reuse    objects placed in indexed holes / their bytes / holes on
 *            the hole index now / their bytes
 *   runs     zspages made whose pages are a run of PFNs (struct
 *            afm_zspage) / made otherwise / runs broken by migration /
 *            zspages' pages allocated as one block (zspage_contig)
 *   cost     microseconds in compaction runs (wall clock, from the first
 *            pass's start to the last one's end) / bytes copied by them /
 *            extents of victims walked / handle entries looked at to
 *            find their owners: what compaction spends per page it gives
 *            back (the compact row)
 *   shards   frees that found the pool lock held and were left to its
 *            holder / such frees waiting now / objects allocated by a
 *            donor shard for another / shards allocation takes now
 *            ("Active shards" in zspage_alloc.c)
 *   dest     where compaction put the objects it moved: into holes of
 *            dense zspages / to tails / zspages it made for them / 0
 */
/* Add row @class of shard @zs to @v. */
static void afm_zs_shard_class_stats(struct afm_zs_pool *zs,
				     unsigned int class, unsigned long *v)
{
	if (class < AFM_ZS_GROUPS) {
		unsigned long pg;
		unsigned int i;

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
					  afm_zs_end(z), AFM_ZS_GROUPS - 1) != class)
					continue;
				v[AFM_CLASS_OBJS] += z->objs;
				v[AFM_CLASS_DIRECT] += afm_zs_zholes(z);
				v[AFM_CLASS_SLABS]++;
				v[AFM_CLASS_PAGES] += afm_zs_npages(z);
			}
			afm_zs_unlock(zs);
			cond_resched();
		}
		return;
	}
	if (class >= AFM_ZS_NR_ROWS)
		return;
	afm_zs_lock(zs);
	switch (class) {
	case AFM_ZS_ROW_HANDLES:
		v[0] += zs->htab.used;
		v[1] += zs->htab.pages * AFM_ZH_PER_PAGE - zs->htab.used;
		v[2] += zs->htab.pages;
		v[3] += zs->htab.pages + zs->dir_pages;
		break;
	case AFM_ZS_ROW_DESCS:
		v[0] += zs->dtab.used;
		v[1] += zs->dtab.pages * AFM_ZD_PER_PAGE - zs->dtab.used;
		v[2] += zs->dtab.pages;
		v[3] += zs->dtab.pages + zs->rtab.pages;
		break;
	case AFM_ZS_ROW_FREE:
		v[0] += afm_zs_holes(zs);
		v[1] += zs->tail_bytes;
		v[2] += zs->dead_zspages;
		v[3] += afm_zs_holes(zs) >> PAGE_SHIFT;
		break;
	case AFM_ZS_ROW_MIGRATE:
		v[0] += atomic_long_read(&zs->st.migrated);
		v[1] += atomic_long_read(&zs->st.migrate_busy);
		v[2] += atomic_long_read(&zs->st.isolated);
		v[3] += atomic_long_read(&zs->st.putback);
		break;
	case AFM_ZS_ROW_COMPACT:
		v[0] += zs->st.moved;
		v[1] += zs->st.evacuated;
		v[2] += zs->st.passes;
		v[3] += zs->st.freed;
		break;
	case AFM_ZS_ROW_AUTO:
		v[0] += zs->st.auto_runs;
		v[1] += zs->st.shrink_scans;
		v[2] += zs->st.auto_freed;
		v[3] += zs->st.shrink_freed;
		break;
	case AFM_ZS_ROW_REUSE:
		v[0] += zs->st.hole_reused;
		v[1] += zs->st.hole_bytes;
		v[2] += zs->hole_nr;
		v[3] += zs->hole_rec_bytes;
		break;
	case AFM_ZS_ROW_RUNS:
		v[0] += zs->st.runs;
		v[1] += zs->st.chains;
		v[2] += atomic_long_read(&zs->st.runs_broken);
		v[3] += atomic_long_read(&zs->st.blocks);
		break;
	case AFM_ZS_ROW_COST:
		v[0] += div_u64(zs->st.compact_ns, NSEC_PER_USEC);
		v[1] += zs->st.moved_bytes;
		v[2] += zs->st.walked;
		v[3] += zs->st.looked;
		break;
	case AFM_ZS_ROW_SHARDS:
		v[0] += zs->st.rfrees;
		v[1] += max(atomic_read(&zs->rfree_nr), 0);
		v[2] += zs->st.donated;
		break;
	case AFM_ZS_ROW_DEST:
		v[0] += zs->st.moved_hole;
		v[1] += zs->st.moved - zs->st.moved_hole;
		v[2] += zs->st.moved_new;
		break;
	}
	afm_zs_unlock(zs);
}

static void afm_zs_class_stats(struct afm_pool *pool, unsigned int class,
			       char name[16],
			       unsigned long val[NR_AFM_CLASS_STATS])
{
	static const char *const names[] = {
		"handles", "descs", "free", "migrate", "compact", "auto",
		"reuse", "runs", "cost", "shards", "dest",
	};
	struct afm_zs_set *set = pool->store;
	unsigned int i;

	memset(val, 0, sizeof(unsigned long) * NR_AFM_CLASS_STATS);
	if (class < AFM_ZS_GROUPS)
		snprintf(name, 16, "fill%u-%u", class * 100 / AFM_ZS_GROUPS,
			 (class + 1) * 100 / AFM_ZS_GROUPS);
	else if (class < AFM_ZS_NR_ROWS)
		strscpy(name, names[class - AFM_ZS_GROUPS], 16);
	for (i = 0; i < afm_zs_created(set); i++)
		afm_zs_shard_class_stats(set->shard[i], class, val);
	if (class == AFM_ZS_ROW_SHARDS)
		val[3] = READ_ONCE(set->active);
}

static unsigned long afm_zs_aux_bytes(struct afm_pool *pool)
{
	struct afm_zs_set *set = pool->store;
	unsigned long bytes = struct_size(set, shard, set->nr);
	struct afm_zs_pool *zs;
	unsigned int i;

	rcu_read_lock();
	for (i = 0; i < afm_zs_created(set); i++) {
		zs = set->shard[i];
		bytes += struct_size_t(struct afm_zt_top, dir,
				       rcu_dereference(zs->htab.top)->size) +
			 struct_size_t(struct afm_zt_top, dir,
				       rcu_dereference(zs->dtab.top)->size) +
			 struct_size_t(struct afm_zt_top, dir,
				       rcu_dereference(zs->rtab.top)->size) +
			 sizeof(struct afm_zs_pool) +
			 AFM_ZS_MAX_VICTIMS * sizeof(u32);
	}
	rcu_read_unlock();
	return bytes;
}

/*
 * Footprint of an object of @size bytes, in bytes: the object, its header,
 * its entry and its share of a descriptor (rounded up).
 */
static unsigned int afm_zs_footprint(struct afm_pool *pool,
				     unsigned int size)
{
	struct afm_zs_set *set = pool->store;
	unsigned int ext = afm_zs_ext(set->shard[0], size);

	return ext + sizeof(u64) +
	       DIV_ROUND_UP(ext * (PAGE_SIZE / AFM_ZD_PER_PAGE), AFM_ZS_SIZE);
}

static size_t afm_zs_huge_class_size(struct afm_pool *pool)
{
	unsigned int size = PAGE_SIZE;

	while (size > 1 && afm_zs_footprint(pool, size - 1) >= PAGE_SIZE)
		size--;
	return size;
}

static unsigned int afm_zs_class_index(struct afm_pool *pool,
				       unsigned int size)
{
	return afm_zs_footprint(pool, size);
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
/**
 * afm_zs_test_set_shards_grow() - set the zspage_shards_grow parameter
 *	(KUnit hook)
 * @on: its new value
 *
 * Context: any; a pool created meanwhile sees either value.
 * Return: its old value.
 */
bool afm_zs_test_set_shards_grow(bool on)
{
	bool old = READ_ONCE(afm_zs_shards_grow);

	WRITE_ONCE(afm_zs_shards_grow, on);
	return old;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_set_shards_grow);

/**
 * afm_zs_set_shards() - set the shards of new pools (KUnit hook)
 * @nr: new value of the zspage_shards parameter
 *
 * Context: any context.
 * Return: nothing.
 */
void afm_zs_set_shards(unsigned int nr)
{
	WRITE_ONCE(afm_zs_shards, nr);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_set_shards);

/**
 * afm_zs_get_shards() - read the shards of new pools (KUnit hook)
 *
 * Context: any context.
 * Return: the zspage_shards parameter.
 */
unsigned int afm_zs_get_shards(void)
{
	return READ_ONCE(afm_zs_shards);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_get_shards);

/**
 * afm_zs_set_align() - set the extent alignment of new pools (KUnit hook)
 * @align: new value of the zspage_align parameter
 *
 * Context: any context.
 * Return: 0, or -EINVAL (value kept) if @align is not a power of two from
 * 1 to AFM_ZS_MAX_ALIGN.
 */
int afm_zs_set_align(unsigned int align)
{
	if (!afm_zs_align_ok(align))
		return -EINVAL;
	WRITE_ONCE(afm_zs_align, align);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_set_align);

/**
 * afm_zs_get_align() - read the extent alignment of new pools (KUnit hook)
 *
 * Context: any context.
 * Return: the zspage_align parameter.
 */
unsigned int afm_zs_get_align(void)
{
	return READ_ONCE(afm_zs_align);
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_get_align);

/**
 * afm_zs_test_alloc_shard() - the shard allocations use (KUnit hook)
 * @pool: a zspage-store pool
 * @shard: a shard of it, or -1 for the current CPU's (the default)
 *
 * Lets a test on one CPU place objects in every shard; creates the
 * shards up to @shard (not active: allocation without the hook still
 * takes the active shards only).
 *
 * Context: process context; may sleep.
 * Return: the number of shards of @pool, -EINVAL if @shard is not one,
 * -ENOMEM if it cannot be created.
 */
int afm_zs_test_alloc_shard(struct afm_pool *pool, int shard)
{
	struct afm_zs_set *set = pool->store;
	unsigned int have;

	if (shard < -1 || shard >= (int)set->nr)
		return -EINVAL;
	mutex_lock(&set->grow_lock);
	have = afm_zs_grow(set, shard + 1);
	mutex_unlock(&set->grow_lock);
	if ((int)have <= shard)
		return -ENOMEM;
	WRITE_ONCE(set->test_shard, shard);
	return set->nr;
}
EXPORT_SYMBOL_IF_KUNIT(afm_zs_test_alloc_shard);
#endif /* CONFIG_AFMALLOC_KUNIT_TEST */
