/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the afmalloc KUnit suites.
 */
#ifndef _AFM_KUNIT_TEST_H
#define _AFM_KUNIT_TEST_H

/* First: it sets up <linux/afmalloc.h> for afmalloc's own files. */
#include "../mm/slab_store.h"

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

/**
 * struct afm_test_set - a pool and the handles a test owns in it
 * @pool: the pool, destroyed when the test ends.
 * @h: handles, freed when the test ends (0 and error values are skipped),
 *	so a failed assertion leaks nothing.
 * @n: number of slots in @h.
 */
struct afm_test_set {
	struct afm_pool *pool;
	unsigned long *h;
	unsigned int n;
};

/*
 * Module parameters of afmalloc_kunit (defined in core_test.c), to make
 * the stress cases longer in the debug guest (tests/vm/kunit-guest.sh):
 * afm_test_stress_seconds: duration of each stress case, 0 for their own
 *	defaults (what make kunit runs).
 * afm_test_destroy_seconds: duration of the destroy-vs-shrinker case.
 */
extern unsigned int afm_test_stress_seconds;
extern unsigned int afm_test_destroy_seconds;

/* KUnit kills a test after 300 s: stress durations stay below that. */
#define AFM_TEST_MAX_SECONDS	240

/* @def, or the stress_seconds parameter when set, capped. */
static inline unsigned int afm_test_stress_secs(unsigned int def)
{
	unsigned int s = READ_ONCE(afm_test_stress_seconds);

	return min_t(unsigned int, s ? s : def, AFM_TEST_MAX_SECONDS);
}

/*
 * Memory the test itself needs (a buffer, a list), not the code under
 * test's: without it the test cannot run, so it is skipped, not failed.
 */
#define afm_test_need(test, ptr)					\
	do {								\
		if (!(ptr))						\
			kunit_skip(test, "no memory for %s", #ptr);	\
	} while (0)

/*
 * Tests of API misuse make afmalloc WARN on purpose. They call this first:
 * the kernel log then brackets their warnings with markers, and
 * scripts/kunit.sh (and tests/vm/kunit-guest.sh) fail the run on any
 * warning outside such brackets.
 */
static inline void afm_test_warnings_end(void *data)
{
	pr_info("afmalloc-kunit: expected warnings end\n");
}

/* Opens brackets that the caller closes with afm_test_warnings_end(). */
static inline void afm_test_warnings_begin(struct kunit *test)
{
	pr_info("afmalloc-kunit: expected warnings begin (%s)\n", test->name);
}

/* Opens brackets closed when the test ends. */
static inline void afm_test_expect_warnings(struct kunit *test)
{
	afm_test_warnings_begin(test);
	if (kunit_add_action(test, afm_test_warnings_end, NULL))
		afm_test_warnings_end(NULL);
}

static inline bool afm_test_handle_ok(unsigned long h)
{
	return h && !IS_ERR_VALUE(h);
}

static inline void afm_test_set_release(void *data)
{
	struct afm_test_set *ts = data;
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		if (afm_test_handle_ok(ts->h[i]))
			afm_free(ts->pool, ts->h[i]);
	}
	afm_destroy_pool(ts->pool);
}

static inline void afm_test_kvfree(void *p)
{
	kvfree(p);
}

/*
 * A new pool of store @type named after the test, with @n handle slots
 * (kvcalloc: stress tests want many). Skips the test if the pool cannot be
 * allocated; everything is released when the test ends.
 */
static inline struct afm_test_set *afm_test_set_store(struct kunit *test,
						      unsigned int n,
						      enum afm_store_type type)
{
	static atomic_t seq = ATOMIC_INIT(0);
	struct afm_test_set *ts;
	char name[64];

	ts = kunit_kzalloc(test, sizeof(*ts), GFP_KERNEL);
	if (!ts)
		kunit_skip(test, "no memory for the test set");
	if (n) {
		ts->h = kvcalloc(n, sizeof(*ts->h), GFP_KERNEL);
		if (!ts->h)
			kunit_skip(test, "no memory for %u handles", n);
		if (kunit_add_action_or_reset(test, afm_test_kvfree, ts->h))
			kunit_skip(test, "no memory for an action");
	}
	ts->n = n;
	snprintf(name, sizeof(name), "kunit-%s%s-%d",
		 type == AFM_STORE_ZSPAGE ? "zs-" : "", test->name,
		 atomic_inc_return(&seq));
	ts->pool = afm_create_pool(name, type);
	if (PTR_ERR_OR_ZERO(ts->pool) == -ENOMEM)
		kunit_skip(test, "no memory for a pool");
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(ts->pool), "create: %ld",
			       PTR_ERR(ts->pool));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, afm_test_set_release,
						  ts));
	return ts;
}

/* A new slab-store pool named after the test, with @n handle slots. */
static inline struct afm_test_set *afm_test_set(struct kunit *test,
						unsigned int n)
{
	return afm_test_set_store(test, n, AFM_STORE_SLAB);
}

/* Allocate, skipping the test (not failing it) when memory runs out. */
static inline unsigned long afm_test_malloc(struct kunit *test,
					    struct afm_pool *pool, size_t size)
{
	unsigned long h = afm_malloc(pool, size, GFP_KERNEL);

	if (h == (unsigned long)ERR_PTR(-ENOMEM))
		kunit_skip(test, "no memory for a %zu byte object", size);
	KUNIT_ASSERT_TRUE_MSG(test, afm_test_handle_ok(h),
			      "afm_malloc(%zu) = %ld", size, (long)h);
	return h;
}

/* Byte @j of the test pattern of object @seed: differs between objects. */
static inline u8 afm_test_byte(unsigned int seed, size_t j)
{
	u32 x = seed * 2654435761U + (u32)(j >> 8) * 40503U;

	return (u8)((x >> 24) ^ j);
}

static inline void afm_test_fill(void *buf, unsigned int seed, size_t len)
{
	u8 *p = buf;
	size_t j;

	for (j = 0; j < len; j++)
		p[j] = afm_test_byte(seed, j);
}

/* Index of the first byte of @buf that differs from the pattern, or -1. */
static inline long afm_test_check(const void *buf, unsigned int seed,
				  size_t len)
{
	const u8 *p = buf;
	size_t j;

	for (j = 0; j < len; j++) {
		if (p[j] != afm_test_byte(seed, j))
			return j;
	}
	return -1;
}

#endif /* _AFM_KUNIT_TEST_H */
