// SPDX-License-Identifier: GPL-2.0
/*
 * afm_speed: operations per second of zsmalloc, afmalloc/slab and
 * afmalloc/zspage in the same boot, on the same object sizes.
 *
 * User space (bench/speed/guest.sh) drives it through debugfs:
 *
 *   /sys/kernel/debug/afm_speed/sizes    write lines "<lo> <hi> <count>":
 *                                        the histogram of object sizes
 *                                        (bench/data/sizes-lz4.csv); lines
 *                                        of several writes add up
 *   /sys/kernel/debug/afm_speed/run      write "1": run every case; the
 *                                        write returns when all are done,
 *                                        -EIO if any data check failed
 *   /sys/kernel/debug/afm_speed/results  one line per case:
 *                                        "<alloc> <op> <threads> <ops> <ns>
 *                                        <ops_per_s> <ns_per_op>"
 *
 * Each result line is also printed to the kernel log, and so is, after the
 * fill and after each allocating operation, the memory the pool then holds
 * against the bytes it stores ("<alloc> <op> threads=N held_pages=P
 * stored_bytes=B objects=K"): for afmalloc afm_get_total_pages() (every
 * page, its tables included); for zsmalloc zs_get_total_pages() plus its
 * handles (one unsigned long each, in its handle cache, rounded up to whole
 * pages), its zspage descriptors not counted (a slight advantage to it;
 * with zs_skew, an experiment, its objects' extra bytes count as held).
 * The threads have stopped; afmalloc/zspage's automatic compaction may
 * still have work queued; zsmalloc is never compacted (nothing here calls
 * zs_compact(), as zram does not by itself). The few KiB afmalloc
 * allocates beside its pages (per-shard structures, the tables' top
 * arrays: debugfs aux_bytes) are not counted. Built into the kernel
 * (CONFIG_AFMALLOC_SPEED_BOOT) it can also run at boot, without user space:
 * see afm_speed_boot() at the end of this file.
 *
 * For each allocator and each thread count (1, then num_online_cpus()),
 * one pool is created and every thread (a kthread bound to its own CPU)
 * fills its own working set of @working_set objects in it. The timed
 * operations then run one after another on that pool, each for
 * @duration_ms (or @max_ops operations per thread, whichever comes first):
 *
 *   alloc-map   replace a random object of the working set: free it,
 *               allocate a new one, map it write-only, memcpy its content
 *               in, unmap (zram's write path; all three allocators)
 *   alloc-copy  the same with afm_write() instead of the mapping (afmalloc)
 *   read-map    map a random object read-only, memcpy it out, unmap,
 *               compare with the expected bytes (zram's read path)
 *   read-copy   afm_read() of a random object, compare (afmalloc)
 *
 * With @sequential the operations take the objects in order instead, the
 * oldest first (fio's write and read shapes on a full zram device).
 *
 * With @shared the threads' working sets form one set that every thread
 * takes its random objects from (each fills its own part first, on its
 * own CPU): with N threads, N - 1 of N replaced objects were allocated on
 * another CPU, so frees and maps meet another CPU's allocations, as in
 * zram and zswap (a page swapped out on one CPU is swapped in, or its
 * slot rewritten, on another; fio's mixwrite). A thread takes an object
 * with a bit lock of its own (test_and_set_bit_lock(); a busy one is
 * skipped for the next draw), the same for every allocator.
 *
 * Sizes are drawn from the histogram (a bucket by its count, then a size
 * uniformly within it) and objects, sizes and contents from a per-thread
 * xorshift generator seeded with @seed and the thread number, restarted
 * for every allocator: all allocators see the same sequence. An object's
 * content is @size bytes of a pseudo-random source buffer (also from
 * @seed) at a random offset, so a read that returns another object's bytes,
 * stale bytes or a partial copy differs from the expected bytes.
 *
 * Data is checked in every case: the read operations compare every object
 * they read; after the fill and after each operation every live object is
 * read back (outside the timing) through the mapping and compared. The
 * corrupt parameter proves that a mismatch is caught. A mismatch or an
 * allocation failure stops the run, is logged with pr_err() and makes the
 * write to "run" fail with -EIO (or -ENOMEM).
 *
 * The gfp mask is zram's first attempt plus GFP_NOIO's reclaim: __GFP_HIGHMEM
 * and __GFP_MOVABLE are passed to every allocator (the slab store drops
 * them).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/afmalloc.h>
#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/zsmalloc.h>

#define SP_GFP		(GFP_NOIO | __GFP_NOWARN | __GFP_HIGHMEM | __GFP_MOVABLE)
#define SP_MAX_BUCKETS	4096
#define SP_MAX_RESULTS	64
#define SP_CHECK_EVERY	64	/* ops between clock reads and cond_resched() */

static unsigned int duration_ms = 2000;
module_param(duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "time per timed operation and thread count (default 2000)");

static unsigned long max_ops = 10000000;
module_param(max_ops, ulong, 0444);
MODULE_PARM_DESC(max_ops, "operation limit per thread and case (default 10000000)");

static unsigned int working_set = 4096;
module_param(working_set, uint, 0444);
MODULE_PARM_DESC(working_set, "live objects per thread (default 4096)");

static unsigned int seed = 1;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "seed of the per-thread generators (default 1)");

static bool corrupt;
module_param(corrupt, bool, 0444);
MODULE_PARM_DESC(corrupt, "test the data checks: corrupt one byte after the fill, the run must fail");

static bool sequential;
module_param(sequential, bool, 0444);
MODULE_PARM_DESC(sequential, "timed operations take the working set's objects in order, oldest first (fio's sequential write shape on a full zram device), not at random");

static bool shared;
module_param(shared, bool, 0444);
MODULE_PARM_DESC(shared, "the threads take their random objects from one working set (each fills its part): frees and maps of objects another CPU allocated (not with sequential)");

static unsigned int zs_skew;
module_param(zs_skew, uint, 0444);
MODULE_PARM_DESC(zs_skew, "an experiment: zsmalloc's objects get zs_skew - 1 bytes more and each one's data starts a pseudo-random 0 to zs_skew - 1 bytes in (0 or 1: off; 8: spread over every byte offset modulo 8, as afmalloc's zspage store places data after its 5-byte headers; at most 64), default 0");

static unsigned int rotate;
module_param(rotate, uint, 0444);
MODULE_PARM_DESC(rotate, "start with allocator number rotate % 3 (runs vary the order)");

enum sp_alloc { SP_ZSMALLOC, SP_AFM_SLAB, SP_AFM_ZSPAGE, SP_NR_ALLOCS };

static unsigned int allocs = BIT(SP_NR_ALLOCS) - 1;
module_param(allocs, uint, 0644);
MODULE_PARM_DESC(allocs, "allocators to measure, a bit each: 1 zsmalloc, 2 afmalloc/slab, 4 afmalloc/zspage (default 7: all)");

static unsigned int ops = 15;
module_param(ops, uint, 0644);
MODULE_PARM_DESC(ops, "timed operations, a bit each: 1 alloc-map, 2 alloc-copy, 4 read-map, 8 read-copy (default 15: all; an allocator without one skips it)");

static const char * const sp_alloc_names[SP_NR_ALLOCS] = {
	"zsmalloc", "afmalloc/slab", "afmalloc/zspage",
};

enum sp_op { SP_FILL, SP_ALLOC_MAP, SP_ALLOC_COPY, SP_READ_MAP, SP_READ_COPY,
	     SP_VERIFY, SP_EMPTY };

static const char * const sp_op_names[] = {
	[SP_FILL] = "fill", [SP_VERIFY] = "verify", [SP_EMPTY] = "empty",
	[SP_ALLOC_MAP] = "alloc-map", [SP_ALLOC_COPY] = "alloc-copy",
	[SP_READ_MAP] = "read-map", [SP_READ_COPY] = "read-copy",
};

struct sp_bucket {
	u16 lo, hi;
	u64 cum;		/* counts of this bucket and the ones before */
};

struct sp_obj {
	unsigned long handle;
	u16 size;
	u16 off;
};

struct sp_case;

struct sp_thread {
	struct sp_case *c;
	struct task_struct *task;
	unsigned int id;
	u64 rng;
	unsigned int cursor;	/* next object in order (@sequential) */
	struct sp_obj *objs;
	void *buf;		/* PAGE_SIZE bytes: read destination */
	u64 ops, ns;
	int err;
};

struct sp_case {
	enum sp_alloc alloc;
	struct zs_pool *zs;
	struct afm_pool *afm;
	unsigned int nr_threads;
	struct sp_thread *threads;
	struct sp_obj *objs;	/* @shared: every thread's, one after another */
	unsigned long *busy;	/* @shared: a bit lock per object of @objs */
	enum sp_op op;
	atomic_t ready;
	bool go;
	wait_queue_head_t wq;
};

struct sp_result {
	enum sp_alloc alloc;
	enum sp_op op;
	unsigned int threads;
	u64 ops, ns, ops_per_s, ns_per_op;
};

static DEFINE_MUTEX(sp_lock);
static struct sp_bucket sp_buckets[SP_MAX_BUCKETS];
static unsigned int sp_nr_buckets;
static struct sp_result sp_results[SP_MAX_RESULTS];
static unsigned int sp_nr_results;
static u8 *sp_src;		/* 2 * PAGE_SIZE random bytes, read-only */
static struct dentry *sp_dir;

static u64 sp_next(struct sp_thread *t)
{
	/* xorshift64* */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1DULL;
}

static void sp_seed(struct sp_thread *t)
{
	t->rng = ((u64)seed << 32 | (t->id + 1)) * 0x9E3779B97F4A7C15ULL;
	if (!t->rng)
		t->rng = 1;
}

/* Draw the next object: its size and the offset of its content in sp_src. */
static void sp_draw(struct sp_thread *t, struct sp_obj *o)
{
	u64 r = sp_next(t) % sp_buckets[sp_nr_buckets - 1].cum;
	unsigned int lo = 0, hi = sp_nr_buckets - 1;
	const struct sp_bucket *b;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (r < sp_buckets[mid].cum)
			hi = mid;
		else
			lo = mid + 1;
	}
	b = &sp_buckets[lo];
	o->size = b->lo + sp_next(t) % (b->hi - b->lo + 1);
	o->off = sp_next(t) % PAGE_SIZE;
}

/* zs_skew: the bytes a zsmalloc object has beyond its data. */
static unsigned int sp_zs_extra(void)
{
	return zs_skew > 1 ? zs_skew - 1 : 0;
}

/*
 * zs_skew: where @o's data starts in its zsmalloc object. From bits of its
 * content offset above the low three, so that the copy's two ends are
 * aligned independently, as afmalloc's data and the content are (from the
 * low bits, a write's source and destination would be aligned alike).
 */
static unsigned int sp_zs_skew(const struct sp_obj *o)
{
	return zs_skew > 1 ? (o->off >> 3) % zs_skew : 0;
}

static int sp_alloc_obj(struct sp_thread *t, struct sp_obj *o, bool copy)
{
	struct sp_case *c = t->c;
	const void *src = sp_src + o->off;
	unsigned long h;
	void *dst;

	if (c->alloc == SP_ZSMALLOC) {
		h = zs_malloc(c->zs, o->size + sp_zs_extra(), SP_GFP);
		if (IS_ERR_VALUE(h))
			return (long)h;
		dst = zs_map_object(c->zs, h, ZS_MM_WO);
		memcpy(dst + sp_zs_skew(o), src, o->size);
		zs_unmap_object(c->zs, h);
		o->handle = h;
		return 0;
	}
	h = afm_malloc(c->afm, o->size, SP_GFP);
	if (IS_ERR_VALUE(h))
		return (long)h;
	o->handle = h;
	if (copy)
		return afm_write(c->afm, h, src, o->size);
	dst = afm_map_object(c->afm, h, AFM_MM_WO);
	if (!dst)
		return -EINVAL;
	memcpy(dst, src, o->size);
	afm_unmap_object(c->afm, h);
	return 0;
}

static void sp_free_obj(struct sp_thread *t, struct sp_obj *o)
{
	if (t->c->alloc == SP_ZSMALLOC)
		zs_free(t->c->zs, o->handle);
	else
		afm_free(t->c->afm, o->handle);
	o->handle = 0;
}

/* Read @o into t->buf and compare it with its expected bytes. */
static int sp_read_obj(struct sp_thread *t, struct sp_obj *o, bool copy)
{
	struct sp_case *c = t->c;
	const void *p;

	if (c->alloc == SP_ZSMALLOC) {
		p = zs_map_object(c->zs, o->handle, ZS_MM_RO);
		memcpy(t->buf, p + sp_zs_skew(o), o->size);
		zs_unmap_object(c->zs, o->handle);
	} else if (copy) {
		size_t n = afm_read(c->afm, o->handle, t->buf);

		if (n != o->size) {
			pr_err("%s: afm_read() of handle %#lx returned %zu bytes, object has %u\n",
			       sp_alloc_names[c->alloc], o->handle, n, o->size);
			return -EIO;
		}
	} else {
		p = afm_map_object(c->afm, o->handle, AFM_MM_RO);
		if (!p)
			return -EIO;
		memcpy(t->buf, p, o->size);
		afm_unmap_object(c->afm, o->handle);
	}
	if (memcmp(t->buf, sp_src + o->off, o->size)) {
		pr_err("%s: data mismatch: thread %u handle %#lx size %u (%s)\n",
		       sp_alloc_names[c->alloc], t->id, o->handle, o->size,
		       copy ? "copy" : "map");
		return -EIO;
	}
	return 0;
}

/* One timed operation in a loop until the time or op budget is spent. */
static int sp_timed(struct sp_thread *t, enum sp_op op)
{
	bool copy = op == SP_ALLOC_COPY || op == SP_READ_COPY;
	u64 budget = (u64)duration_ms * NSEC_PER_MSEC;
	u64 t0 = ktime_get_ns(), now = t0, n = 0;
	int err = 0;

	while (n < max_ops) {
		u64 r = sp_next(t);
		struct sp_obj *o;
		unsigned long i = 0;

		if (sequential) {
			o = &t->objs[t->cursor];
			t->cursor = (t->cursor + 1) % working_set;
		} else if (shared) {
			i = r % ((unsigned long)working_set * t->c->nr_threads);
			if (test_and_set_bit_lock(i, t->c->busy))
				continue;
			o = &t->c->objs[i];
		} else {
			o = &t->objs[r % working_set];
		}

		if (op == SP_ALLOC_MAP || op == SP_ALLOC_COPY) {
			sp_free_obj(t, o);
			sp_draw(t, o);
			err = sp_alloc_obj(t, o, copy);
		} else {
			err = sp_read_obj(t, o, copy);
		}
		if (shared)
			clear_bit_unlock(i, t->c->busy);
		if (err)
			break;
		if (++n % SP_CHECK_EVERY == 0) {
			now = ktime_get_ns();
			if (now - t0 >= budget)
				break;
			cond_resched();
		}
	}
	if (n % SP_CHECK_EVERY)
		now = ktime_get_ns();
	t->ops = n;
	t->ns = now - t0;
	return err;
}

static int sp_phase(struct sp_thread *t)
{
	unsigned int i;
	int err = 0;

	switch (t->c->op) {
	case SP_FILL:
		for (i = 0; i < working_set && !err; i++) {
			sp_draw(t, &t->objs[i]);
			err = sp_alloc_obj(t, &t->objs[i], false);
			if (i % SP_CHECK_EVERY == 0)
				cond_resched();
		}
		return err;
	case SP_VERIFY:
		for (i = 0; i < working_set && !err; i++) {
			err = sp_read_obj(t, &t->objs[i], false);
			if (i % SP_CHECK_EVERY == 0)
				cond_resched();
		}
		return err;
	case SP_EMPTY:
		for (i = 0; i < working_set; i++)
			if (t->objs[i].handle)
				sp_free_obj(t, &t->objs[i]);
		return 0;
	default:
		return sp_timed(t, t->c->op);
	}
}

static int sp_threadfn(void *data)
{
	struct sp_thread *t = data;
	struct sp_case *c = t->c;

	atomic_inc(&c->ready);
	wake_up_all(&c->wq);
	wait_event(c->wq, READ_ONCE(c->go));
	t->err = sp_phase(t);
	if (t->err && t->err != -EIO)
		pr_err("%s: thread %u: %s failed: %d\n", sp_alloc_names[c->alloc],
		       t->id, sp_op_names[c->op], t->err);
	return 0;
}

/*
 * Run phase @op on every thread of @c at once; the first error, or 0.
 * The threads hold a task reference until kthread_stop() has seen them
 * exit, so no thread still runs this module's code when the run returns.
 */
static int sp_run_phase(struct sp_case *c, enum sp_op op)
{
	unsigned int i, started = 0;
	int cpu = -1, err = 0;

	c->op = op;
	c->go = false;
	atomic_set(&c->ready, 0);
	for (i = 0; i < c->nr_threads; i++) {
		struct sp_thread *t = &c->threads[i];

		cpu = cpumask_next(cpu, cpu_online_mask);
		if (cpu >= nr_cpu_ids)
			cpu = cpumask_first(cpu_online_mask);
		t->err = 0;
		t->task = kthread_create(sp_threadfn, t, "afm_speed/%u", i);
		if (IS_ERR(t->task)) {
			err = PTR_ERR(t->task);
			break;
		}
		get_task_struct(t->task);
		kthread_bind(t->task, cpu);
		started++;
	}
	if (err) {
		/* Never woken: kthread_stop() ends them before sp_threadfn(). */
		for (i = 0; i < started; i++) {
			kthread_stop(c->threads[i].task);
			put_task_struct(c->threads[i].task);
		}
		return err;
	}
	for (i = 0; i < c->nr_threads; i++)
		wake_up_process(c->threads[i].task);
	wait_event(c->wq, atomic_read(&c->ready) == c->nr_threads);
	WRITE_ONCE(c->go, true);
	wake_up_all(&c->wq);
	for (i = 0; i < c->nr_threads; i++) {
		struct sp_thread *t = &c->threads[i];

		/* Every thread is in sp_threadfn(): this waits for its return. */
		kthread_stop(t->task);
		put_task_struct(t->task);
		if (t->err && !err)
			err = t->err;
	}
	return err;
}

static void sp_record(struct sp_case *c, enum sp_op op)
{
	struct sp_result *r;
	u64 rate = 0, ops = 0, ns = 0;
	unsigned int i;

	for (i = 0; i < c->nr_threads; i++) {
		struct sp_thread *t = &c->threads[i];

		ops += t->ops;
		ns += t->ns;
		if (t->ns)
			rate += div64_u64(t->ops * NSEC_PER_SEC, t->ns);
	}
	if (sp_nr_results >= SP_MAX_RESULTS)
		return;
	r = &sp_results[sp_nr_results++];
	*r = (struct sp_result){
		.alloc = c->alloc, .op = op, .threads = c->nr_threads,
		.ops = ops, .ns = ns, .ops_per_s = rate,
		.ns_per_op = ops ? div64_u64(ns, ops) : 0,
	};
	pr_info("%s %s threads=%u ops=%llu ops_per_s=%llu ns_per_op=%llu\n",
		sp_alloc_names[r->alloc], sp_op_names[op], r->threads, r->ops,
		r->ops_per_s, r->ns_per_op);
}

/*
 * After phase @op: the pages the pool holds against the bytes of its live
 * objects (see the top of this file for what is counted).
 */
static void sp_held(struct sp_case *c, enum sp_op op)
{
	unsigned long held, objects = 0, i, n;
	u64 stored = 0;
	struct sp_obj *o;

	n = (unsigned long)working_set * c->nr_threads;
	for (i = 0; i < n; i++) {
		/* With @shared, each thread's objs is its part of c->objs. */
		o = &c->threads[i / working_set].objs[i % working_set];
		if (!o->handle)
			continue;
		objects++;
		stored += o->size;
	}
	if (c->zs)
		held = zs_get_total_pages(c->zs) +
		       DIV_ROUND_UP(objects * sizeof(unsigned long), PAGE_SIZE);
	else
		held = afm_get_total_pages(c->afm);
	pr_info("%s %s threads=%u held_pages=%lu stored_bytes=%llu objects=%lu\n",
		sp_alloc_names[c->alloc], sp_op_names[op], c->nr_threads, held,
		stored, objects);
}

static const char sp_pool_name[] = "afm_speed";

/* The content source, from @seed like everything else. */
static void sp_fill_src(void)
{
	struct sp_thread t = { .id = U32_MAX };
	unsigned int i;

	sp_seed(&t);
	for (i = 0; i < 2 * PAGE_SIZE; i += sizeof(u64)) {
		u64 r = sp_next(&t);

		memcpy(sp_src + i, &r, sizeof(r));
	}
}

/* The corrupt parameter: flip the last byte of thread 0's first object. */
static void sp_corrupt(struct sp_case *c)
{
	struct sp_obj *o = &c->threads[0].objs[0];
	u8 *p;

	pr_info("%s: corrupting handle %#lx on request\n",
		sp_alloc_names[c->alloc], o->handle);
	if (c->alloc == SP_ZSMALLOC) {
		p = zs_map_object(c->zs, o->handle, ZS_MM_RW);
		p[sp_zs_skew(o) + o->size - 1] ^= 0xff;
		zs_unmap_object(c->zs, o->handle);
	} else {
		p = afm_map_object(c->afm, o->handle, AFM_MM_RW);
		if (p)
			p[o->size - 1] ^= 0xff;
		afm_unmap_object(c->afm, o->handle);
	}
}

/* One pool, @nr_threads threads, every operation of @alloc. */
static int sp_run_case(enum sp_alloc alloc, unsigned int nr_threads)
{
	static const enum sp_op zs_ops[] = { SP_ALLOC_MAP, SP_READ_MAP };
	static const enum sp_op afm_ops[] = { SP_ALLOC_MAP, SP_ALLOC_COPY,
					      SP_READ_MAP, SP_READ_COPY };
	const enum sp_op *list = alloc == SP_ZSMALLOC ? zs_ops : afm_ops;
	unsigned int nr_ops = alloc == SP_ZSMALLOC ? ARRAY_SIZE(zs_ops) : ARRAY_SIZE(afm_ops);
	unsigned int mask = READ_ONCE(ops);
	struct sp_case *c;
	unsigned int i;
	int err = 0, err2;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->alloc = alloc;
	c->nr_threads = nr_threads;
	init_waitqueue_head(&c->wq);
	c->threads = kcalloc(nr_threads, sizeof(*c->threads), GFP_KERNEL);
	if (!c->threads) {
		err = -ENOMEM;
		goto out;
	}
	if (shared) {
		c->objs = kvcalloc((size_t)working_set * nr_threads,
				   sizeof(*c->objs), GFP_KERNEL);
		c->busy = bitmap_zalloc((size_t)working_set * nr_threads,
					GFP_KERNEL);
		if (!c->objs || !c->busy) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < nr_threads; i++) {
		struct sp_thread *t = &c->threads[i];

		t->c = c;
		t->id = i;
		t->objs = shared ? c->objs + (size_t)i * working_set :
			  kvcalloc(working_set, sizeof(*t->objs), GFP_KERNEL);
		t->buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
		if (!t->objs || !t->buf) {
			err = -ENOMEM;
			goto out;
		}
		sp_seed(t);
	}
	if (alloc == SP_ZSMALLOC) {
		c->zs = zs_create_pool(sp_pool_name);
		if (!c->zs)
			err = -ENOMEM;
	} else {
		c->afm = afm_create_pool(sp_pool_name, alloc == SP_AFM_SLAB ?
					 AFM_STORE_SLAB : AFM_STORE_ZSPAGE);
		if (IS_ERR(c->afm)) {
			err = PTR_ERR(c->afm);
			c->afm = NULL;
		}
	}
	if (err)
		goto out;

	err = sp_run_phase(c, SP_FILL);
	if (!err)
		sp_held(c, SP_FILL);
	if (!err && corrupt)
		sp_corrupt(c);
	if (!err)
		err = sp_run_phase(c, SP_VERIFY);
	for (i = 0; i < nr_ops && !err; i++) {
		if (!(mask & BIT(list[i] - SP_ALLOC_MAP)))
			continue;
		err = sp_run_phase(c, list[i]);
		if (err)
			break;
		sp_record(c, list[i]);
		if (list[i] == SP_ALLOC_MAP || list[i] == SP_ALLOC_COPY)
			sp_held(c, list[i]);
		/* Every live object must still hold its bytes. */
		err = sp_run_phase(c, SP_VERIFY);
	}
	err2 = sp_run_phase(c, SP_EMPTY);
	err = err ?: err2;
	if (c->zs)
		zs_destroy_pool(c->zs);
	if (c->afm)
		afm_destroy_pool(c->afm);
out:
	if (c->threads) {
		for (i = 0; i < nr_threads; i++) {
			if (!shared)
				kvfree(c->threads[i].objs);
			kfree(c->threads[i].buf);
		}
	}
	kvfree(c->objs);
	bitmap_free(c->busy);
	kfree(c->threads);
	kfree(c);
	return err;
}

static int sp_run_all(void)
{
	unsigned int counts[2] = { 1, num_online_cpus() };
	unsigned int a, k;
	int err;

	sp_nr_results = 0;
	if (zs_skew > 64 ||
	    (sp_nr_buckets &&
	     sp_buckets[sp_nr_buckets - 1].hi + sp_zs_extra() > PAGE_SIZE)) {
		pr_err("zs_skew=%u: at most 64, and the largest size plus %u at most PAGE_SIZE\n",
		       zs_skew, sp_zs_extra());
		return -EINVAL;
	}
	if (!(READ_ONCE(allocs) & (BIT(SP_NR_ALLOCS) - 1))) {
		pr_err("allocs=%#x selects no allocator (1 zsmalloc, 2 afmalloc/slab, 4 afmalloc/zspage)\n",
		       allocs);
		return -EINVAL;
	}
	if (!(READ_ONCE(ops) & 15)) {
		pr_err("ops=%#x selects no operation (1 alloc-map, 2 alloc-copy, 4 read-map, 8 read-copy)\n",
		       ops);
		return -EINVAL;
	}
	for (k = 0; k < ARRAY_SIZE(counts); k++) {
		if (k && counts[k] == counts[0])
			break;
		for (a = 0; a < SP_NR_ALLOCS; a++) {
			enum sp_alloc alloc = (a + rotate) % SP_NR_ALLOCS;

			if (!(READ_ONCE(allocs) & BIT(alloc)))
				continue;
			err = sp_run_case(alloc, counts[k]);
			if (err) {
				pr_err("%s threads=%u: FAILED (%d)\n",
				       sp_alloc_names[alloc], counts[k], err);
				return err;
			}
		}
	}
	return 0;
}

static ssize_t run_write(struct file *file, const char __user *buf,
			 size_t count, loff_t *ppos)
{
	bool one;
	int ret;

	ret = kstrtobool_from_user(buf, count, &one);
	if (ret)
		return ret;
	if (!one)
		return count;
	mutex_lock(&sp_lock);
	if (!sp_nr_buckets)
		ret = -ENODATA;
	else
		ret = sp_run_all();
	mutex_unlock(&sp_lock);
	if (ret == -ENODATA)
		pr_err("no size histogram: write it to sizes first\n");
	return ret ?: count;
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = run_write,
	.llseek = noop_llseek,
};

/* Lines "<lo> <hi> <count>", 1 <= lo <= hi <= PAGE_SIZE; complete lines only. */
static ssize_t sizes_write(struct file *file, const char __user *ubuf,
			   size_t count, loff_t *ppos)
{
	char *buf, *line, *p;
	ssize_t ret = count;

	if (!count || count > 256 * 1024)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (buf[count - 1] != '\n') {
		ret = -EINVAL;
		goto out;
	}
	mutex_lock(&sp_lock);
	p = buf;
	while ((line = strsep(&p, "\n"))) {
		unsigned int lo, hi;
		unsigned long long n;
		char extra;

		line = strim(line);
		if (!*line)
			continue;
		if (sscanf(line, "%u %u %llu %c", &lo, &hi, &n, &extra) != 3 ||
		    !lo || lo > hi || hi > PAGE_SIZE ||
		    (sp_nr_buckets && lo <= sp_buckets[sp_nr_buckets - 1].hi)) {
			pr_err("sizes: bad line '%s' (want '<lo> <hi> <count>', ascending)\n",
			       line);
			ret = -EINVAL;
			break;
		}
		if (!n)
			continue;
		if (sp_nr_buckets == SP_MAX_BUCKETS) {
			ret = -ENOSPC;
			break;
		}
		sp_buckets[sp_nr_buckets] = (struct sp_bucket){
			.lo = lo, .hi = hi,
			.cum = n + (sp_nr_buckets ? sp_buckets[sp_nr_buckets - 1].cum : 0),
		};
		sp_nr_buckets++;
	}
	mutex_unlock(&sp_lock);
out:
	kfree(buf);
	return ret;
}

static const struct file_operations sizes_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = sizes_write,
	.llseek = noop_llseek,
};

static int results_show(struct seq_file *m, void *v)
{
	unsigned int i;

	mutex_lock(&sp_lock);
	for (i = 0; i < sp_nr_results; i++) {
		struct sp_result *r = &sp_results[i];

		seq_printf(m, "%s %s %u %llu %llu %llu %llu\n",
			   sp_alloc_names[r->alloc], sp_op_names[r->op], r->threads,
			   r->ops, r->ns, r->ops_per_s, r->ns_per_op);
	}
	mutex_unlock(&sp_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(results);

static int __init afm_speed_init(void)
{
	if (!working_set || !duration_ms || !max_ops)
		return -EINVAL;
	if (shared && sequential) {
		pr_err("shared and sequential together: shared draws its objects at random\n");
		return -EINVAL;
	}
	sp_src = kmalloc(2 * PAGE_SIZE, GFP_KERNEL);
	if (!sp_src)
		return -ENOMEM;
	sp_fill_src();
	sp_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(sp_dir)) {
		kfree(sp_src);
		return PTR_ERR(sp_dir);
	}
	debugfs_create_file("sizes", 0200, sp_dir, NULL, &sizes_fops);
	debugfs_create_file("run", 0200, sp_dir, NULL, &run_fops);
	debugfs_create_file("results", 0444, sp_dir, NULL, &results_fops);
	return 0;
}
module_init(afm_speed_init);

static void __exit afm_speed_exit(void)
{
	debugfs_remove_recursive(sp_dir);
	kfree(sp_src);
}
module_exit(afm_speed_exit);

#ifndef MODULE
/*
 * Built in (CONFIG_AFMALLOC_SPEED_BOOT, for make bench-speed-uml and
 * bench-speed-arm64): there is no user space to drive debugfs, so the
 * histogram is compiled in (afm_speed_sizes.h, generated by kbuild from
 * bench/data/sizes-lz4.csv; with 16 KiB pages afm_speed_sizes_16k.h, from
 * sizes-lz4-16k.csv: the LZ4 sizes of the same data cut into 16 KiB pages)
 * and boot_runs runs of every case follow the boot, the allocator order
 * rotated per run. Results go to the kernel log only.
 */
#if PAGE_SHIFT == 14
#include "afm_speed_sizes_16k.h"
#define afm_speed_boot_sizes afm_speed_sizes_16k
#elif PAGE_SHIFT != 12
#error "afm_speed built in: size histograms for 4 KiB and 16 KiB pages only"
#else
#include "afm_speed_sizes.h"
#define afm_speed_boot_sizes afm_speed_sizes
#endif

static unsigned int boot_runs;
module_param(boot_runs, uint, 0444);
MODULE_PARM_DESC(boot_runs, "built in: runs of every case at boot (default 0: none)");

static int __init afm_speed_boot(void)
{
	unsigned int i, r;
	int err = 0;

	if (!boot_runs)
		return 0;
	if (!sp_src) {
		pr_err("boot runs: not initialised\n");
		return -ENODEV;
	}
	BUILD_BUG_ON(ARRAY_SIZE(afm_speed_boot_sizes) > SP_MAX_BUCKETS);
	mutex_lock(&sp_lock);
	for (i = 0; i < ARRAY_SIZE(afm_speed_boot_sizes); i++)
		sp_buckets[i] = (struct sp_bucket){
			.lo = afm_speed_boot_sizes[i][0],
			.hi = afm_speed_boot_sizes[i][1],
			.cum = afm_speed_boot_sizes[i][2] +
			       (i ? sp_buckets[i - 1].cum : 0),
		};
	sp_nr_buckets = i;
	for (r = 0; r < boot_runs && !err; r++) {
		rotate = r;
		pr_info("boot run %u of %u\n", r + 1, boot_runs);
		err = sp_run_all();
	}
	mutex_unlock(&sp_lock);
	pr_info("boot runs %s (%d)\n", err ? "FAILED" : "done", err);
	return 0;
}
late_initcall(afm_speed_boot);
#endif

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Operations per second of zsmalloc and afmalloc's two stores");
