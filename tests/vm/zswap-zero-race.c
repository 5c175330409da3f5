// SPDX-License-Identifier: GPL-2.0
/*
 * zswap-zero-race - stress the swap-out of pages that were rewritten with
 * zeros while zswap still holds an older copy of them.
 *
 *   zswap-zero-race [--pages N] [--workers W] [--events E] [--seconds S]
 *                   [--seed N]
 *
 * Run it in a cgroup v2 whose memory.zswap.max is a few pages, with zswap
 * in front of a swap device (tests/vm/zswap-zero-race.sh does), so that
 * every zswap store writes back the oldest entries of the cgroup.
 *
 * N anonymous pages (no THP) are split among W worker threads; each worker
 * sweeps its pages again and again: it checks a page against what it last
 * wrote there and then, every other time, rewrites it, alternating between
 * an all-zero page and a stamped pattern page (page number, generation). A
 * pager thread meanwhile calls madvise(MADV_PAGEOUT) on the whole area in a
 * loop, so pages are swapped out while the workers fault them back in.
 *
 * The race this looks for (Linux 6.12, mm/page_io.c swap_writepage()): a
 * page faulted back from the swap cache while reclaim had just stored it in
 * zswap keeps its swap slot and its zswap entry; rewritten with zeros and
 * swapped out again, it goes to the swap device's zeromap, and the zswap
 * entry, now stale, is not invalidated (only zswap_store() does that, and
 * zero-filled pages never reach it). When zswap writes that entry back, the
 * old contents land in a new swap-cache folio, and the next fault on the
 * page maps them instead of zeros.
 *
 * How long it runs is set by what the kernel did, not by the clock: it
 * stops once /proc/vmstat shows E (default 200) zswap writebacks (zswpwb)
 * and E zero-filled swap-outs (swpout_zero) since it started, the two
 * things the race needs; S seconds (default 300) is only a backstop. With
 * --events 0 it runs for S seconds.
 *
 * On any mismatch the page, what was expected and what was found (zero or
 * the stamp's generation) are printed and the program exits with status 3.
 * If S seconds passed before E events of each kind, it exits with status 4
 * (inconclusive). Otherwise it prints its counts and exits 0. Status 2: bad
 * arguments or a system call failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

#define PG 4096UL
#define MAGIC 0x7a7a7261636521ULL	/* "!ecarzz" */

struct page_state {
	u32 gen;		/* last generation written */
	u8 zero;		/* last write was all zeros */
};

static unsigned char *area;
static struct page_state *state;
static unsigned long npages = 512, nworkers = 2, seconds = 300, seed = 1;
static unsigned long events = 200;
static atomic_int stop;
static unsigned long pageouts;

/*
 * Word k of page i at generation gen: the first half of the page from a
 * xorshift stream (about 2 KiB after compression, so that a few pages
 * fill the cgroup's zswap limit), the second half a repeated text word.
 */
static u64 word(unsigned long i, u32 gen, unsigned long k, u64 *x)
{
	if (k == 0)
		return MAGIC;
	if (k == 1) {
		*x = (((u64)i << 32) | gen) * 0x9e3779b97f4a7c15ULL | 1;
		return ((u64)i << 32) | gen;
	}
	if (k >= PG / 16)
		return 0x2065676170206f72ULL;
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void fill(unsigned long i, u32 gen)
{
	u64 *w = (u64 *)(area + i * PG);
	u64 x = 0;
	unsigned long k;

	for (k = 0; k < PG / 8; k++)
		w[k] = word(i, gen, k, &x);
}

/* Returns 0 if page i holds what state[i] says, else prints and returns 1. */
static int check(unsigned long i)
{
	const u64 *w = (const u64 *)(area + i * PG);
	const struct page_state *s = &state[i];
	unsigned long k, nz = 0;

	if (s->zero) {
		for (k = 0; k < PG / 8; k++)
			nz += w[k] != 0;
		if (!nz)
			return 0;
	} else {
		u64 x = 0;

		for (k = 0; k < PG / 8; k++)
			if (w[k] != word(i, s->gen, k, &x))
				break;
		if (k == PG / 8)
			return 0;
	}
	if (w[0] == MAGIC)
		fprintf(stderr,
			"zswap-zero-race: MISMATCH page %lu: expected %s (generation %u), found the pattern of page %llu generation %llu (%lu non-zero words)\n",
			i, s->zero ? "zeros" : "the pattern", s->gen,
			(unsigned long long)(w[1] >> 32),
			(unsigned long long)(w[1] & 0xffffffffULL), nz);
	else
		fprintf(stderr,
			"zswap-zero-race: MISMATCH page %lu: expected %s (generation %u), found neither zeros nor a stamp (first word %#llx)\n",
			i, s->zero ? "zeros" : "the pattern", s->gen,
			(unsigned long long)w[0]);
	return 1;
}

struct worker {
	pthread_t tid;
	unsigned long first, last;	/* pages [first, last) */
	unsigned long checks, zeros, patterns;
	unsigned int rnd;
	int failed;
};

static void *work(void *arg)
{
	struct worker *wk = arg;
	unsigned long i;

	while (!atomic_load(&stop) && !wk->failed) {
		for (i = wk->first; i < wk->last && !atomic_load(&stop); i++) {
			if (check(i)) {
				wk->failed = 1;
				break;
			}
			wk->checks++;
			if (rand_r(&wk->rnd) & 1)
				continue;
			state[i].gen++;
			if (state[i].zero) {
				fill(i, state[i].gen);
				state[i].zero = 0;
				wk->patterns++;
			} else {
				memset(area + i * PG, 0, PG);
				state[i].zero = 1;
				wk->zeros++;
			}
		}
	}
	if (wk->failed)
		atomic_store(&stop, 1);
	return NULL;
}

static void *pager(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		if (madvise(area, npages * PG, MADV_PAGEOUT)) {
			perror("zswap-zero-race: madvise(MADV_PAGEOUT)");
			exit(2);
		}
		pageouts++;
	}
	return NULL;
}

/* zswpwb and swpout_zero from /proc/vmstat (0 if the kernel lacks one). */
static void read_counters(unsigned long long *wb, unsigned long long *zero)
{
	char name[64];
	unsigned long long v;
	FILE *f = fopen("/proc/vmstat", "r");

	*wb = 0;
	*zero = 0;
	if (!f) {
		perror("zswap-zero-race: /proc/vmstat");
		exit(2);
	}
	while (fscanf(f, "%63s %llu", name, &v) == 2) {
		if (!strcmp(name, "zswpwb"))
			*wb = v;
		else if (!strcmp(name, "swpout_zero"))
			*zero = v;
	}
	fclose(f);
}

static unsigned long num(const char *opt, const char *s, int zero_ok)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s ? s : "", &end, 10);
	if (!s || errno || *end || (!v && !zero_ok)) {
		fprintf(stderr, "zswap-zero-race: %s needs a %s number\n", opt,
			zero_ok ? "whole" : "positive");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct worker *wk;
	pthread_t ptid;
	unsigned long i, w, checks = 0, zeros = 0, patterns = 0;
	unsigned long long wb0, zero0, wb, zero;
	struct timespec t0, t1;
	double elapsed;
	int a, failed = 0, capped = 0;

	for (a = 1; a < argc; a++) {
		const char *opt = argv[a], *val = argv[a + 1];

		if (!strcmp(opt, "--pages")) {
			npages = num(opt, val, 0);
		} else if (!strcmp(opt, "--workers")) {
			nworkers = num(opt, val, 0);
		} else if (!strcmp(opt, "--seconds")) {
			seconds = num(opt, val, 0);
		} else if (!strcmp(opt, "--events")) {
			events = num(opt, val, 1);
		} else if (!strcmp(opt, "--seed")) {
			seed = num(opt, val, 0);
		} else {
			fputs("usage: zswap-zero-race [--pages N] [--workers W]\n", stderr);
			fputs("       [--events E] [--seconds S] [--seed N]\n", stderr);
			return 2;
		}
		a++;
	}
	if (nworkers > npages) {
		fprintf(stderr, "zswap-zero-race: more workers than pages\n");
		return 2;
	}
	area = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	state = calloc(npages, sizeof(*state));
	wk = calloc(nworkers, sizeof(*wk));
	if (area == MAP_FAILED || !state || !wk) {
		perror("zswap-zero-race: allocation");
		return 2;
	}
	madvise(area, npages * PG, MADV_NOHUGEPAGE);
	for (i = 0; i < npages; i++)
		fill(i, 0);
	read_counters(&wb0, &zero0);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	for (w = 0; w < nworkers; w++) {
		wk[w].first = npages * w / nworkers;
		wk[w].last = npages * (w + 1) / nworkers;
		wk[w].rnd = (unsigned int)(seed * 7919 + w);
		if (pthread_create(&wk[w].tid, NULL, work, &wk[w])) {
			fprintf(stderr, "zswap-zero-race: cannot start a worker\n");
			return 2;
		}
	}
	if (pthread_create(&ptid, NULL, pager, NULL)) {
		fprintf(stderr, "zswap-zero-race: cannot start the pager\n");
		return 2;
	}
	while (!atomic_load(&stop)) {
		usleep(100000);
		read_counters(&wb, &zero);
		if (events && wb - wb0 >= events && zero - zero0 >= events)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 >= seconds) {
			capped = events != 0;
			break;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(ptid, NULL);
	for (w = 0; w < nworkers; w++) {
		pthread_join(wk[w].tid, NULL);
		failed |= wk[w].failed;
		checks += wk[w].checks;
		zeros += wk[w].zeros;
		patterns += wk[w].patterns;
	}
	/* A last pass after everything settled. */
	for (i = 0; i < npages && !failed; i++)
		failed |= check(i);
	read_counters(&wb, &zero);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	elapsed = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("zswap-zero-race: %lu pages, %lu checks, %lu rewrites to zeros, %lu to patterns,",
	       npages, checks, zeros, patterns);
	printf(" %lu pageout passes, %llu zswap writebacks,", pageouts, wb - wb0);
	printf(" %llu zero-filled swap-outs in %.1f s: %s\n", zero - zero0, elapsed,
	       failed ? "MISMATCH" : capped ?
	       "all pages as written, but too few events (inconclusive)" :
	       "all pages as written");
	return failed ? 3 : capped ? 4 : 0;
}
