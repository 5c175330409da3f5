// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of afmalloc compaction (mm/compact.c): pages freed on a
 * fragmented pool with every byte preserved, pinned objects left in place
 * (also when pinned mid-move, without waiting for them), nothing moved in
 * an unfragmented pool, a clean stop on an allocation failure, and a
 * multi-threaded stress run with compaction in parallel.
 */

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/preempt.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "afm_test.h"

#define AFM_FRAG_OBJS	3000

/* A zram-like spread of sizes, deterministic. */
static size_t afm_frag_size(unsigned int i)
{
	return 20 + (i * 2654435761U >> 8) % 3000;
}

/*
 * Fill a pool with AFM_FRAG_OBJS objects of mixed sizes, each with its own
 * pattern, then free three of every four.
 */
static void afm_frag_fill(struct kunit *test, struct afm_test_set *ts)
{
	unsigned int i;
	void *p;

	for (i = 0; i < ts->n; i++) {
		size_t size = afm_frag_size(i);

		ts->h[i] = afm_test_malloc(test, ts->pool, size);
		p = afm_map_object(ts->pool, ts->h[i], AFM_MM_WO);
		KUNIT_ASSERT_NOT_NULL(test, p);
		afm_test_fill(p, i, size);
		afm_unmap_object(ts->pool, ts->h[i]);
	}
	for (i = 0; i < ts->n; i++) {
		if (i % 4) {
			afm_free(ts->pool, ts->h[i]);
			ts->h[i] = 0;
		}
	}
}

static unsigned int afm_frag_verify(struct kunit *test,
				    struct afm_test_set *ts, void *buf)
{
	unsigned int i, errors = 0;
	long bad;

	for (i = 0; i < ts->n; i++) {
		if (!ts->h[i])
			continue;
		KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[i], buf),
				afm_frag_size(i));
		bad = afm_test_check(buf, i, afm_frag_size(i));
		if (bad >= 0 && errors++ < 5)
			KUNIT_FAIL(test, "object %u: byte %ld differs", i, bad);
	}
	return errors;
}

/* Chunk addresses of every live object, AFM_MAX_CHUNKS per object. */
static void **afm_frag_chunks(struct kunit *test, struct afm_test_set *ts)
{
	void **chunks;
	unsigned int i;

	chunks = kunit_kcalloc(test, ts->n * AFM_MAX_CHUNKS, sizeof(void *),
			       GFP_KERNEL);
	afm_test_need(test, chunks);
	for (i = 0; i < ts->n; i++) {
		if (ts->h[i])
			afm_slab_obj_chunks(ts->pool, ts->h[i],
					    &chunks[i * AFM_MAX_CHUNKS]);
	}
	return chunks;
}

static bool afm_frag_moved(struct afm_test_set *ts, void **before,
			   unsigned int i)
{
	void *now[AFM_MAX_CHUNKS] = { };

	afm_slab_obj_chunks(ts->pool, ts->h[i], now);
	return memcmp(now, &before[i * AFM_MAX_CHUNKS], sizeof(now));
}

static void afm_test_compact_fragmented(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, AFM_FRAG_OBJS);
	unsigned long before, after, freed;
	unsigned int i, moved = 0;
	struct afm_pool_stats st;
	void **chunks;
	void *buf;

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	afm_test_need(test, buf);
	afm_frag_fill(test, ts);
	chunks = afm_frag_chunks(test, ts);

	before = afm_get_total_pages(ts->pool);
	freed = afm_compact(ts->pool);
	after = afm_get_total_pages(ts->pool);
	kunit_info(test, "pages %lu -> %lu, freed %lu\n", before, after, freed);

	KUNIT_EXPECT_GT(test, freed, 0);
	KUNIT_EXPECT_LT(test, after, before);
	KUNIT_EXPECT_EQ(test, freed, before - after);
	/* A quarter of the data is left: at least a third must go. */
	KUNIT_EXPECT_LT(test, after, before * 2 / 3);
	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.compactions, 1);
	KUNIT_EXPECT_EQ(test, st.pages_compacted, freed);

	for (i = 0; i < ts->n; i++)
		moved += ts->h[i] && afm_frag_moved(ts, chunks, i);
	KUNIT_EXPECT_GT(test, moved, 0);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);

	/* A second run finds little or nothing left to do. */
	freed = afm_compact(ts->pool);
	KUNIT_EXPECT_LE(test, freed, after / 10);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);
}

/*
 * Pinned objects (what afm_map_object() does to them, without disabling
 * preemption, which compaction could not run under in the same thread)
 * keep their chunks; others move; nothing is corrupted.
 */
static void afm_test_compact_pinned(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, AFM_FRAG_OBJS);
	unsigned int i, pinned = 0, moved = 0, pinned_moved = 0;
	void **chunks;
	void *buf;

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	afm_test_need(test, buf);
	afm_frag_fill(test, ts);

	for (i = 0; i < ts->n; i += 8) {
		if (afm_test_handle_ok(ts->h[i]) &&
		    !afm_handle_is_direct(ts->h[i])) {
			afm_desc_pin((struct afm_desc *)ts->h[i]);
			pinned++;
		}
	}
	KUNIT_ASSERT_GT(test, pinned, 0);
	chunks = afm_frag_chunks(test, ts);

	afm_compact(ts->pool);

	for (i = 0; i < ts->n; i += 4) {
		if (!ts->h[i] || afm_handle_is_direct(ts->h[i]))
			continue;
		if (i % 8 == 0) {
			pinned_moved += afm_frag_moved(ts, chunks, i);
			afm_desc_unpin((struct afm_desc *)ts->h[i]);
		} else {
			moved += afm_frag_moved(ts, chunks, i);
		}
	}
	KUNIT_EXPECT_EQ(test, pinned_moved, 0);
	KUNIT_EXPECT_GT(test, moved, 0);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);

	/* Unpinned, they can move now. */
	afm_compact(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);
}

/*
 * Nothing to gain, nothing moved: densely filled slabs stay as they are.
 * Dense by construction: every chunk comes from one CPU's slabs, each
 * filled before the next is started (whatever order its free list has);
 * a fill that moved to another CPU half-way would leave a partial slab on
 * each, which compaction may rightly merge.
 */
static void afm_test_compact_dense(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 1024);
	unsigned int i, moved = 0;
	unsigned long before;
	void **chunks;

	KUNIT_EXPECT_EQ(test, afm_compact(ts->pool), 0);
	migrate_disable();
	for (i = 0; i < ts->n; i++)
		ts->h[i] = afm_malloc(ts->pool, 400, GFP_KERNEL);
	migrate_enable();
	for (i = 0; i < ts->n; i++) {
		if (ts->h[i] == (unsigned long)ERR_PTR(-ENOMEM))
			kunit_skip(test, "no memory for 1024 objects");
		KUNIT_ASSERT_TRUE(test, afm_test_handle_ok(ts->h[i]));
	}
	chunks = afm_frag_chunks(test, ts);
	before = afm_get_total_pages(ts->pool);
	KUNIT_EXPECT_EQ(test, afm_compact(ts->pool), 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), before);
	for (i = 0; i < ts->n; i++)
		moved += afm_frag_moved(ts, chunks, i);
	KUNIT_EXPECT_EQ(test, moved, 0);
}

/*
 * Free every object of @ts and destroy its pool, counting the objects the
 * pool's caches still hold (a chunk compaction allocated and never freed
 * or used): SLUB reports them to the current test's "slab_errors"
 * resource instead of warning (needs CONFIG_SLUB_DEBUG, else skips).
 * Return: the objects SLUB found left over.
 */
static int afm_test_destroy_counting_leaks(struct kunit *test,
					   struct afm_test_set *ts)
{
	struct kunit_resource *res;
	unsigned int i;
	int *errors;

	if (!IS_ENABLED(CONFIG_SLUB_DEBUG))
		kunit_skip(test, "the leak check needs CONFIG_SLUB_DEBUG");
	res = kunit_kzalloc(test, sizeof(*res), GFP_KERNEL);
	errors = kunit_kzalloc(test, sizeof(*errors), GFP_KERNEL);
	afm_test_need(test, res);
	afm_test_need(test, errors);
	for (i = 0; i < ts->n; i++) {
		if (afm_test_handle_ok(ts->h[i]))
			afm_free(ts->pool, ts->h[i]);
		ts->h[i] = 0;
	}
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_named_resource(test, NULL, NULL, res,
							  "slab_errors", errors));
	afm_destroy_pool(ts->pool);
	ts->pool = NULL;
	kunit_remove_resource(test, res);
	return *errors;
}

/* Which object of @ts has handle @h, or -1. */
static int afm_test_index(struct afm_test_set *ts, unsigned long h)
{
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		if (ts->h[i] == h)
			return i;
	}
	return -1;
}

/**
 * struct afm_limbo - what the compaction hook did to objects about to move
 * @ts: the test set.
 * @moves: destinations the hook saw allocated.
 * @freed: object freed in flight, or -1.
 * @read: object read and mapped in flight, or -1.
 * @written: object rewritten in flight, or -1.
 * @pinned: object pinned in flight, until compaction returns, or -1.
 * @read_bad: the in-flight read saw wrong data.
 * @chunks: chunks of each of those objects when the hook ran.
 */
struct afm_limbo {
	struct afm_test_set *ts;
	unsigned int moves;
	int freed, read, written, pinned;
	bool read_bad;
	void *chunks[4][AFM_MAX_CHUNKS];
};

#define AFM_LIMBO_SEED	100000

/*
 * Runs inside afm_compact(), the first batch's destinations allocated and
 * its chunks not moved yet.
 */
static void afm_limbo_hook(struct afm_pool *pool, void *data)
{
	struct afm_slab_pool *sp = pool->store;
	struct afm_limbo *l = data;
	struct afm_test_set *ts = l->ts;
	unsigned int k, found = 0;
	const void *p;
	void *buf;
	int i;

	pool->compact_hook = NULL;
	l->moves = sp->nr_cmoves;
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return;
	for (k = 0; k < sp->nr_cmoves && found < 4; k++) {
		size_t size;

		i = afm_test_index(ts, (unsigned long)sp->cmoves[k].desc);
		if (i < 0)
			continue;
		size = afm_frag_size(i);
		afm_slab_obj_chunks(pool, ts->h[i], l->chunks[found]);
		switch (found++) {
		case 0:
			afm_free(pool, ts->h[i]);
			ts->h[i] = 0;
			l->freed = i;
			break;
		case 1:
			if (afm_read(pool, ts->h[i], buf) != size ||
			    afm_test_check(buf, i, size) >= 0)
				l->read_bad = true;
			p = afm_map_object(pool, ts->h[i], AFM_MM_RO);
			if (!p || afm_test_check(p, i, size) >= 0)
				l->read_bad = true;
			if (p)
				afm_unmap_object(pool, ts->h[i]);
			l->read = i;
			break;
		case 2:
			afm_test_fill(buf, i + AFM_LIMBO_SEED, size);
			if (!afm_write(pool, ts->h[i], buf, size))
				l->written = i;
			break;
		case 3:
			afm_desc_pin((struct afm_desc *)ts->h[i]);
			l->pinned = i;
			break;
		}
	}
	kfree(buf);
}

static bool afm_limbo_moved(struct afm_limbo *l, unsigned int slot, int i)
{
	void *now[AFM_MAX_CHUNKS] = { };

	afm_slab_obj_chunks(l->ts->pool, l->ts->h[i], now);
	return memcmp(now, l->chunks[slot], sizeof(now));
}

/*
 * Objects whose chunks compaction is about to move stay usable: they can
 * be freed (the destination is freed, not leaked), read, mapped and
 * written (the write survives the move), and one pinned then stays where
 * it is. Breaks: data lost in the move, a destination leaked, a pinned
 * object moved.
 */
static void afm_test_compact_in_flight(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, AFM_FRAG_OBJS);
	struct afm_pool_stats before, after;
	struct afm_limbo *l;
	size_t size;
	void *buf;
	int i;

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	afm_test_need(test, buf);
	afm_test_need(test, l);
	l->ts = ts;
	l->freed = -1;
	l->read = -1;
	l->written = -1;
	l->pinned = -1;

	afm_frag_fill(test, ts);
	afm_get_pool_stats(ts->pool, &before);
	ts->pool->compact_hook_data = l;
	ts->pool->compact_hook = afm_limbo_hook;
	afm_compact(ts->pool);
	ts->pool->compact_hook = NULL;

	KUNIT_ASSERT_GT(test, l->moves, 0);
	KUNIT_EXPECT_GE(test, l->freed, 0);
	KUNIT_EXPECT_GE(test, l->read, 0);
	KUNIT_EXPECT_GE(test, l->written, 0);
	KUNIT_ASSERT_GE(test, l->pinned, 0);
	KUNIT_EXPECT_FALSE(test, l->read_bad);

	/* The pinned object stayed where it was. */
	KUNIT_EXPECT_FALSE(test, afm_limbo_moved(l, 3, l->pinned));
	afm_desc_unpin((struct afm_desc *)ts->h[l->pinned]);

	afm_get_pool_stats(ts->pool, &after);
	KUNIT_EXPECT_EQ(test, after.objects, before.objects - 1);

	if (l->written >= 0) {
		i = l->written;
		size = afm_frag_size(i);
		KUNIT_EXPECT_EQ(test, afm_read(ts->pool, ts->h[i], buf), size);
		KUNIT_EXPECT_EQ(test, afm_test_check(buf, i + AFM_LIMBO_SEED,
						     size), -1);
		afm_test_fill(buf, i, size);
		KUNIT_EXPECT_EQ(test, afm_write(ts->pool, ts->h[i], buf, size), 0);
	}
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);
	KUNIT_EXPECT_EQ(test, afm_test_destroy_counting_leaks(test, ts), 0);
}

/* Long enough for any compaction of the set; a passing run never waits. */
#define AFM_RESCUE_SECONDS	60

/**
 * struct afm_pin_all - every object pinned while compaction runs
 * @ts: the test set.
 * @pinned: objects pinned by the hook.
 * @returned: afm_compact() has returned.
 * @rescued: the rescue had to drop the pins for afm_compact() to return.
 * @chunks: chunks of every object when the hook pinned them.
 * @rescue: drops the pins if afm_compact() waits for them.
 */
struct afm_pin_all {
	struct afm_test_set *ts;
	unsigned int pinned;
	bool returned;
	bool rescued;
	void **chunks;
	struct delayed_work rescue;
};

static bool afm_pin_all_pinnable(struct afm_test_set *ts, unsigned int i)
{
	return afm_test_handle_ok(ts->h[i]) && !afm_handle_is_direct(ts->h[i]);
}

static void afm_pin_all_drop(struct afm_pin_all *pa)
{
	unsigned int i;

	for (i = 0; i < pa->ts->n; i++) {
		if (afm_pin_all_pinnable(pa->ts, i))
			afm_desc_unpin((struct afm_desc *)pa->ts->h[i]);
	}
}

static void afm_pin_all_rescue(struct work_struct *work)
{
	struct afm_pin_all *pa = container_of(to_delayed_work(work),
					      struct afm_pin_all, rescue);

	if (READ_ONCE(pa->returned))
		return;
	pa->rescued = true;
	afm_pin_all_drop(pa);
}

/* Runs inside afm_compact() with a batch in flight: pin everything. */
static void afm_pin_all_hook(struct afm_pool *pool, void *data)
{
	struct afm_pin_all *pa = data;
	struct afm_test_set *ts = pa->ts;
	unsigned int i;

	pool->compact_hook = NULL;
	for (i = 0; i < ts->n; i++) {
		if (!afm_pin_all_pinnable(ts, i))
			continue;
		afm_desc_pin((struct afm_desc *)ts->h[i]);
		afm_slab_obj_chunks(pool, ts->h[i],
				    &pa->chunks[i * AFM_MAX_CHUNKS]);
		pa->pinned++;
	}
	schedule_delayed_work(&pa->rescue, AFM_RESCUE_SECONDS * HZ);
}

/*
 * Objects pinned while their chunks are being moved, and kept pinned:
 * compaction leaves them where they are and returns without waiting for
 * the pins (it used to wait, uninterruptibly and without bound). The
 * rescue only turns such a wait into a failure instead of a hung suite.
 * Every byte survives, and once unpinned the objects can be compacted.
 */
static void afm_test_compact_pinned_in_flight(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, AFM_FRAG_OBJS);
	unsigned int i, moved = 0;
	struct afm_pin_all *pa;
	void *buf;

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	pa = kunit_kzalloc(test, sizeof(*pa), GFP_KERNEL);
	afm_test_need(test, buf);
	afm_test_need(test, pa);
	pa->ts = ts;
	INIT_DELAYED_WORK(&pa->rescue, afm_pin_all_rescue);
	afm_frag_fill(test, ts);
	pa->chunks = afm_frag_chunks(test, ts);

	ts->pool->compact_hook_data = pa;
	ts->pool->compact_hook = afm_pin_all_hook;
	afm_compact(ts->pool);
	WRITE_ONCE(pa->returned, true);
	ts->pool->compact_hook = NULL;
	cancel_delayed_work_sync(&pa->rescue);

	KUNIT_ASSERT_GT(test, pa->pinned, 0);
	KUNIT_EXPECT_FALSE_MSG(test, pa->rescued,
			       "compaction waited for pinned objects");
	if (!pa->rescued) {
		for (i = 0; i < ts->n; i++)
			moved += afm_pin_all_pinnable(ts, i) &&
				 afm_frag_moved(ts, pa->chunks, i);
		KUNIT_EXPECT_EQ(test, moved, 0);
		afm_pin_all_drop(pa);
	}
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);

	/* Unpinned, they move. */
	KUNIT_EXPECT_GT(test, afm_compact(ts->pool), 0);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);
}

/* Compaction's allocation that fails, counted from the pass's start. */
#define AFM_NOMEM_NTH	8

/*
 * An allocation failure ends the pass cleanly: it moves at most the
 * chunks it had a destination for, loses no byte, leaks nothing, and
 * afm_compact() reports exactly the pages it freed. With memory back,
 * the next pass does the work. Breaks: compaction insisting on memory
 * (__GFP_NOFAIL, retries), a source freed before its destination exists,
 * a destination leaked.
 */
static void afm_test_compact_nomem(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, AFM_FRAG_OBJS);
	unsigned long pages, freed;
	struct afm_pool_stats before, st;
	unsigned int i, k, moved = 0;
	void **chunks;
	void *buf;
	int left;

	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	afm_test_need(test, buf);
	afm_frag_fill(test, ts);
	chunks = afm_frag_chunks(test, ts);
	afm_get_pool_stats(ts->pool, &before);
	pages = afm_get_total_pages(ts->pool);

	afm_set_fail_nth(ts->pool, AFM_NOMEM_NTH);
	freed = afm_compact(ts->pool);
	left = atomic_read(&ts->pool->fail_nth);
	afm_set_fail_nth(ts->pool, 0);

	/* The failure reached compaction, which stopped there. */
	KUNIT_EXPECT_EQ(test, left, 0);
	for (i = 0; i < ts->n; i++) {
		void *now[AFM_MAX_CHUNKS] = { };

		if (!ts->h[i])
			continue;
		afm_slab_obj_chunks(ts->pool, ts->h[i], now);
		for (k = 0; k < AFM_MAX_CHUNKS; k++)
			moved += now[k] != chunks[i * AFM_MAX_CHUNKS + k];
	}
	kunit_info(test, "%u chunks moved before the failure, %lu pages freed\n",
		   moved, freed);
	KUNIT_EXPECT_LT(test, moved, AFM_NOMEM_NTH);
	KUNIT_EXPECT_EQ(test, freed, pages - afm_get_total_pages(ts->pool));
	afm_get_pool_stats(ts->pool, &st);
	KUNIT_EXPECT_EQ(test, st.objects, before.objects);
	KUNIT_EXPECT_EQ(test, st.stored_bytes, before.stored_bytes);
	KUNIT_EXPECT_EQ(test, st.compactions, 1);
	KUNIT_EXPECT_EQ(test, st.pages_compacted, freed);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);

	KUNIT_EXPECT_GT(test, afm_compact(ts->pool), 0);
	KUNIT_EXPECT_EQ(test, afm_frag_verify(test, ts, buf), 0);
	KUNIT_EXPECT_EQ(test, afm_test_destroy_counting_leaks(test, ts), 0);
}

#define AFM_STRESS_WORKERS	3
#define AFM_STRESS_SLOTS	64
#define AFM_STRESS_SECONDS	4

/**
 * struct afm_stress - state shared by the stress threads
 * @pool: the pool under test.
 * @deadline: jiffies at which the threads stop.
 * @errors: failed operations and data mismatches.
 * @lost: objects whose data could not be read back intact.
 * @ops: allocations and frees.
 * @compactions: afm_compact() runs.
 * @stored: objects allocated and written.
 * @verified: objects read back and checked before their free.
 * @verified_bytes: their bytes.
 * @running: threads still running, plus one for the starter.
 * @done: completed by the last thread to stop.
 */
struct afm_stress {
	struct afm_pool *pool;
	unsigned long deadline;
	atomic_t errors;
	atomic_t lost;
	atomic_t ops;
	atomic_t compactions;
	atomic_t stored;
	atomic_t verified;
	atomic64_t verified_bytes;
	atomic_t running;
	struct completion done;
};

struct afm_stress_slot {
	unsigned long h;
	unsigned int seed;
	size_t size;
};

static void afm_stress_error(struct afm_stress *st, const char *what,
			     unsigned int seed)
{
	if (atomic_inc_return(&st->errors) <= 5)
		pr_err("afmalloc stress: %s (object %u)\n", what, seed);
}

/* Check every byte of @s, through afm_read() or a read-only mapping. */
static void afm_stress_verify(struct afm_stress *st,
			      struct afm_stress_slot *s, void *buf, bool map)
{
	const void *p;
	bool ok;

	if (!map) {
		ok = afm_read(st->pool, s->h, buf) == s->size &&
		     afm_test_check(buf, s->seed, s->size) < 0;
		if (!ok)
			afm_stress_error(st, "afm_read mismatch", s->seed);
	} else {
		p = afm_map_object(st->pool, s->h, AFM_MM_RO);
		if (!p) {
			afm_stress_error(st, "map failed", s->seed);
			ok = false;
		} else {
			ok = afm_test_check(p, s->seed, s->size) < 0;
			afm_unmap_object(st->pool, s->h);
			if (!ok)
				afm_stress_error(st, "mapped data mismatch",
						 s->seed);
		}
	}
	if (!ok) {
		atomic_inc(&st->lost);
		return;
	}
	atomic_inc(&st->verified);
	atomic64_add(s->size, &st->verified_bytes);
}

static int afm_stress_worker(void *data)
{
	struct afm_stress *st = data;
	struct afm_stress_slot *slot;
	unsigned int i, seq = 0;
	void *buf, *p;

	slot = kcalloc(AFM_STRESS_SLOTS, sizeof(*slot), GFP_KERNEL);
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!slot || !buf) {
		afm_stress_error(st, "no memory for the worker", 0);
		goto out;
	}

	/* At least one operation, however late the thread starts. */
	do {
		struct afm_stress_slot *s;
		u32 r = get_random_u32();

		s = &slot[r % AFM_STRESS_SLOTS];
		r /= AFM_STRESS_SLOTS;
		if (s->h) {
			afm_stress_verify(st, s, buf, r & 1);
			afm_free(st->pool, s->h);
			s->h = 0;
		} else {
			s->size = 1 + get_random_u32_below(PAGE_SIZE);
			s->seed = (u32)(unsigned long)current->pid << 20 | seq++;
			s->h = afm_malloc(st->pool, s->size, GFP_KERNEL);
			if (IS_ERR_VALUE(s->h)) {
				if (s->h != (unsigned long)ERR_PTR(-ENOMEM))
					afm_stress_error(st, "malloc failed", s->seed);
				s->h = 0;
				continue;
			}
			atomic_inc(&st->stored);
			if (r & 1) {
				afm_test_fill(buf, s->seed, s->size);
				if (afm_write(st->pool, s->h, buf, s->size))
					afm_stress_error(st, "write failed", s->seed);
			} else {
				p = afm_map_object(st->pool, s->h, AFM_MM_WO);
				if (p) {
					afm_test_fill(p, s->seed, s->size);
					afm_unmap_object(st->pool, s->h);
				} else {
					afm_stress_error(st, "map failed", s->seed);
				}
			}
		}
		atomic_inc(&st->ops);
		cond_resched();
	} while (time_before(jiffies, st->deadline));

	for (i = 0; i < AFM_STRESS_SLOTS; i++) {
		if (slot[i].h) {
			afm_stress_verify(st, &slot[i], buf, i & 1);
			afm_free(st->pool, slot[i].h);
		}
	}
out:
	kfree(buf);
	kfree(slot);
	if (atomic_dec_and_test(&st->running))
		complete(&st->done);
	return 0;
}

static int afm_stress_compactor(void *data)
{
	struct afm_stress *st = data;

	/* At least one afm_compact() call, however late the thread starts. */
	do {
		afm_compact(st->pool);
		atomic_inc(&st->compactions);
		msleep(20);
	} while (time_before(jiffies, st->deadline));
	if (atomic_dec_and_test(&st->running))
		complete(&st->done);
	return 0;
}

/*
 * Several threads allocate, write, map, verify and free random objects
 * while another compacts the pool in a loop (the slab store compacts only
 * on request; the zspage store's stress, with automatic compaction, its
 * shrinker and page migration, is afm_zs_test_stress). Every object is
 * checked byte for byte before its free. Runs for the stress_seconds
 * module parameter, default AFM_STRESS_SECONDS. What the threads achieve
 * in that time depends on the host: only what each thread is built to do
 * at least once (an operation, a compaction) is asserted.
 */
static void afm_test_compact_stress(struct kunit *test)
{
	struct afm_test_set *ts = afm_test_set(test, 0);
	unsigned int secs = afm_test_stress_secs(AFM_STRESS_SECONDS);
	struct afm_pool_stats pst;
	struct task_struct *t;
	struct afm_stress *st;
	unsigned int i, started = 0;
	unsigned long misuses = afm_test_misuse_count();

	st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);
	afm_test_need(test, st);
	st->pool = ts->pool;
	st->deadline = jiffies + secs * HZ;
	init_completion(&st->done);
	atomic_set(&st->running, AFM_STRESS_WORKERS + 2);

	for (i = 0; i <= AFM_STRESS_WORKERS; i++) {
		t = kthread_run(i ? afm_stress_worker : afm_stress_compactor,
				st, "afm-stress/%u", i);
		if (IS_ERR(t))
			break;
		started++;
	}
	/* Drop the threads not started, and the extra count. */
	if (atomic_sub_and_test(AFM_STRESS_WORKERS + 2 - started, &st->running))
		complete(&st->done);
	wait_for_completion(&st->done);

	if (started < AFM_STRESS_WORKERS + 1)
		kunit_skip(test, "could only start %u threads", started);
	afm_get_pool_stats(ts->pool, &pst);
	kunit_info(test, "%d operations, %d compactions, %lu pages compacted\n",
		   atomic_read(&st->ops), atomic_read(&st->compactions),
		   pst.pages_compacted);
	/* One line for tests/vm/kunit-guest.sh: key=value, parsed. */
	kunit_info(test, "afmalloc-stress: case=%s store=slab threads=%u seconds=%u ops=%d stored=%d verified=%d bytes_verified=%lld errors=%d lost=%d compactions=%d\n",
		   test->name, started, secs, atomic_read(&st->ops),
		   atomic_read(&st->stored), atomic_read(&st->verified),
		   (long long)atomic64_read(&st->verified_bytes),
		   atomic_read(&st->errors), atomic_read(&st->lost),
		   atomic_read(&st->compactions));
	KUNIT_EXPECT_EQ(test, atomic_read(&st->errors), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&st->lost), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&st->verified),
			atomic_read(&st->stored));
	/* Not vacuous: objects were stored (and so verified). */
	KUNIT_EXPECT_GT(test, atomic_read(&st->stored), 0);
	afm_get_pool_stats(ts->pool, &pst);
	KUNIT_EXPECT_EQ(test, pst.objects, 0);
	KUNIT_EXPECT_EQ(test, afm_get_total_pages(ts->pool), 0);
	/* No API misuse went unnoticed: the stress makes none. */
	KUNIT_EXPECT_EQ(test, afm_test_misuse_count(), misuses);
}

static struct kunit_case afm_compact_test_cases[] = {
	KUNIT_CASE(afm_test_compact_fragmented),
	KUNIT_CASE(afm_test_compact_pinned),
	KUNIT_CASE(afm_test_compact_dense),
	KUNIT_CASE(afm_test_compact_in_flight),
	KUNIT_CASE(afm_test_compact_pinned_in_flight),
	KUNIT_CASE(afm_test_compact_nomem),
	KUNIT_CASE_SLOW(afm_test_compact_stress),
	{}
};

static struct kunit_suite afm_compact_test_suite = {
	.name = "afmalloc_compact",
	.test_cases = afm_compact_test_cases,
};

kunit_test_suite(afm_compact_test_suite);
