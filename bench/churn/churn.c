// SPDX-License-Identifier: GPL-2.0
/*
 * churn - steady swap-churn workload for the afmalloc benchmark (issue 15).
 *
 *   churn --mb N [--procs P] [--threads T] [--rewrite F] [--zipf S]
 *         [--churn S] [--exit S] [--switch S] [--switch-slot S] [--rest S]
 *         [--no-verify] [--mix text=30,code=25,...] [--pool-mb N]
 *         [--pool FILE] [--fault-us U] [--seed N] [--out CSV]
 *   churn --save-pool FILE [--pool-mb N]
 *
 * Run it inside a cgroup v2 whose memory.max is about a third of --mb
 * (bench/churn/churn-guest.sh does), so its pages are swapped out and in
 * all the time. It forks --procs processes, each owning an equal share of
 * the --mb MiB working set (anonymous memory, no THP), each running
 * --threads threads over disjoint page ranges of its share.
 *
 * Page contents: pages (the system's size, 4 KiB or 16 KiB) from a pool
 * of real data read at start,
 * bounded by --pool-mb (default 6 MiB) in three equal parts:
 *   text     text files under /usr/share (no NUL byte, mostly printable)
 *   code     ELF files under /usr/lib/x86_64-linux-gnu, /usr/lib, /usr/bin
 *   comp     already compressed files under /usr/share (.gz .xz .bz2 .zst
 *            .jpg .png), topped up from /dev/urandom if too few
 * Reading them takes long in a TCG guest over 9p: --save-pool FILE reads
 * them once (on the host) into FILE, and --pool FILE takes the pool from
 * there (each part cut to --pool-mb / 3), the same data in every run.
 * and generated classes:
 *   zero     all zero (zram's same-filled path)
 *   same     one non-zero 8-byte word repeated (same-filled, not zero)
 *   partial  a text or code head of 64 B .. a page less 512 B, the rest zero
 * A page of text/code/comp is a page-sized window at a pseudo-random offset of
 * its pool; text, code, comp and partial pages begin with a 16-byte stamp
 * (page id, generation, "chrn") so that no two pages are equal. The class
 * of each page is drawn by the --mix weights (default text=30, code=25,
 * comp=10, zero=10, same=5, partial=20: a plausible spread, not measured
 * from a device).
 *
 * Checking: a table outside the churned memory keeps, per page, a 32-bit
 * checksum of what was written, its generation and its class. Every page
 * read back is checked against it; on ANY mismatch the page, its expected
 * and actual checksum, the first differing byte and the stamp found are
 * printed and the process exits with status 3, and churn with status 1.
 *
 * Phases (a phase of 0 seconds is skipped; fill and verify are not timed
 * by a flag):
 *   fill    every process writes its share once (classes drawn by --mix).
 *   churn   --churn s: each thread accesses pages of its range drawn from
 *           a Zipf(--zipf, default 0.99) distribution over a fixed random
 *           permutation of the range (a scattered hot set); a fraction
 *           --rewrite (default 0.1) of the accessed pages is rewritten
 *           with new contents of a different class, so their compressed
 *           size changes at the next swap-out.
 *   exit    --exit s: the processes in turn exit (freeing their swap in
 *           bulk) and a new one starts and fills its share, while the
 *           others keep churning; at least one exit, then again until the
 *           time is up (the phase ends when the last new one has filled).
 *   switch  --switch s: app switching: one process at a time sweeps its
 *           whole share (reads, checks, rewrites the --rewrite fraction)
 *           for --switch-slot s while the others sleep, so one working
 *           set comes back while another is swapped out wholesale.
 *   rest    --rest s (default 60): every process sleeps.
 *   verify  every page of every process is read back and checked once
 *           (off with --no-verify).
 *
 * Latency: each access times its first touch of the page (one byte read,
 * or for the fill the first byte written) with clock_gettime(MONOTONIC)
 * into a log-scale histogram (8 buckets per power of two, so a percentile
 * is the upper edge of its bucket, at most 12.5% above the true value, or
 * the maximum if that is lower).
 * "faults" are the accesses of at least --fault-us (default 2, rounded up
 * to a bucket edge: 2.048 us), which on a resident page take well below a
 * microsecond; "all" is every access. "swap-ins" are the faults (outside
 * the fill) after which the thread's major-fault count (getrusage
 * RUSAGE_THREAD, read after each fault only, so a major fault taken
 * elsewhere since the thread's previous fault, on its own metadata, say,
 * is counted with the next one) had grown: the page came back from swap,
 * not from the swap cache or a first touch. The timer's own cost (two
 * calls) is measured at start and printed.
 *
 * Output: stdout has a header, one summary line per phase and the result.
 * --out CSV (line-buffered, so a sampler can follow it) has one row per
 * phase start (kind "begin"), one per second (kind "second"), one per
 * process exit in the exit phase, when the process is told to exit (kind
 * "exit", no interval: samples of separate runs can then be paired by exit
 * and time since it), one per phase end with the whole phase (kind
 * "phase") and a last "done" row:
 *   kind,wall_s,t_s,phase,phase_t_s,interval_s,pages,pages_per_s,rewrites,
 *   faults,fault_p50_us,fault_p99_us,fault_max_us,all_p50_us,all_p99_us,
 *   all_max_us,swapins,swapin_p50_us,swapin_p99_us
 * wall_s is CLOCK_REALTIME (to merge with samples taken by others), t_s
 * and phase_t_s CLOCK_MONOTONIC since the start and since the phase start,
 * pages are accesses (page touches) in the interval, max values exact.
 *
 * Emulator check (x86-64): every thread reads its RFLAGS (pushf) every
 * CPU_CHECK_EVERY accesses. Bits 3, 5, 15 and 22-63 are reserved and read
 * as 0 on every x86 CPU, bit 1 reads as 1; QEMU's TCG keeps the flags in
 * its own state and masks those bits on every architected write (popf,
 * iret, sysret), so no guest code can set them. Flags that break this mean
 * the CPU emulator's state is corrupted (seen in TCG runs, each time next
 * to a data failure): each process reports the first such value once, as
 * "churn: EMULATOR FAULT: ..." on stderr, with the time and the CPU, and
 * goes on (its data checks decide the run).
 *
 * Exit status: 0 all pages verified; 1 a checksum mismatch or a process
 * died (OOM kill, signal); 2 bad usage or setup failure.
 *
 * Build: gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread churn.c -lm
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * The page: the system's (4 KiB; 16 KiB on arm64 kernels built so, as
 * Android's), read once at start. The pool file's parts are cut to it.
 */
static size_t page_size = 4096;
#define PG		page_size
#define NB		512		/* histogram buckets: 8 per power of two */
#define MAX_PROCS	64
#define MAX_THREADS	64
#define SCAN_MAX	200000		/* directory entries looked at per walk */

enum cls { C_TEXT, C_CODE, C_COMP, C_ZERO, C_SAME, C_PARTIAL, NR_CLS };
static const char *const cls_name[NR_CLS] = {
	"text", "code", "comp", "zero", "same", "partial",
};

enum cmd { CMD_IDLE, CMD_CHURN, CMD_SWEEP, CMD_VERIFY, CMD_EXIT };

static struct {
	unsigned long mb;
	unsigned int procs, threads;
	double rewrite, zipf, fault_us;
	double churn_s, exit_s, switch_s, slot_s, rest_s;
	bool verify;
	unsigned int mix[NR_CLS];
	unsigned long pool_mb;
	u64 seed;
	const char *out, *pool, *save_pool;
} opt = {
	.procs = 4, .threads = 2, .rewrite = 0.1, .zipf = 0.99, .fault_us = 2,
	.churn_s = 60, .exit_s = 30, .switch_s = 30, .slot_s = 3, .rest_s = 60,
	.verify = true, .mix = { 30, 25, 10, 10, 5, 20 }, .pool_mb = 6,
	.seed = 1,
};

/* ---- hashing, random numbers ------------------------------------------ */

static inline u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct rng { u64 s; };

static inline u64 rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return mix64(r->s);
}

static inline double rnd01(struct rng *r)
{
	return ldexp((double)(rnd(r) >> 11), -53);
}

/*
 * 32-bit page checksum. Each step is a bijection of the running state for
 * a given word, so a change confined to one 16-byte stripe always changes
 * the 64-bit states; only the final fold to 32 bits can collide.
 */
static u32 csum_page(const unsigned char *p)
{
	u64 a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull, v;
	size_t i;

	for (i = 0; i < PG; i += 16) {
		memcpy(&v, p + i, 8);
		a = (a ^ v) * 0x9fb21c651e98df25ull;
		a ^= a >> 29;
		memcpy(&v, p + i + 8, 8);
		b = (b ^ v) * 0xc2b2ae3d27d4eb4full;
		b ^= b >> 31;
	}
	a = mix64(a ^ ((b << 17) | (b >> 47)));
	return (u32)(a ^ (a >> 32));
}

static inline u64 now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* ---- the data pool ------------------------------------------------------ */

struct pool {
	unsigned char *buf;
	size_t len, cap;
	unsigned long files;
	unsigned long urandom;	/* bytes topped up from /dev/urandom */
};

static struct pool pools[3];	/* C_TEXT, C_CODE, C_COMP */
static unsigned long scan_seen;
static int scan_mode;		/* 0: /usr/share (text, comp), 1: code */

static bool pool_full(const struct pool *p)
{
	return p->len + PG > p->cap;
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

static bool comp_name(const char *path)
{
	static const char *const suf[] = {
		".gz", ".xz", ".bz2", ".zst", ".lz4", ".jpg", ".png", ".zip",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(suf); i++)
		if (has_suffix(path, suf[i]))
			return true;
	return false;
}

/* Text: no NUL and at least 95% printable ASCII, whitespace or UTF-8. */
static bool looks_text(const unsigned char *b, size_t n)
{
	size_t i, good = 0;

	for (i = 0; i < n; i++) {
		if (!b[i])
			return false;
		if (b[i] >= 0x20 || b[i] == '\n' || b[i] == '\t' || b[i] == '\r')
			good++;
	}
	return n >= 256 && good * 100 >= n * 95;
}

/*
 * take() - append up to @max bytes of @path, from offset @off, to @p.
 * @kind: 0 text (content checked), 1 ELF (magic checked), 2 as is.
 */
static void take(struct pool *p, const char *path, off_t size, size_t max,
		 int kind)
{
	unsigned char head[1024];
	size_t want, got = 0;
	off_t off = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	n = pread(fd, head, sizeof(head), 0);
	if (n <= 0 || (kind == 0 && !looks_text(head, (size_t)n)) ||
	    (kind == 1 && (n < 4 || memcmp(head, "\177ELF", 4)))) {
		close(fd);
		return;
	}
	/* Code: start a quarter in, past the headers, on a page boundary. */
	if (kind == 1 && (size_t)size > 2 * max)
		off = (size / 4) & ~(off_t)(PG - 1);
	want = p->cap - p->len;
	if (want > max)
		want = max;
	while (got < want) {
		n = pread(fd, p->buf + p->len + got, want - got, off + (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got) {
		p->len += got;
		p->files++;
	}
}

static int scan_cb(const char *path, const struct stat *st, int type,
		   struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size < 256)
		return FTW_CONTINUE;
	if (++scan_seen > SCAN_MAX)
		return FTW_STOP;
	if (scan_mode == 0) {
		if (comp_name(path)) {
			if (!pool_full(&pools[C_COMP]))
				take(&pools[C_COMP], path, st->st_size, 64 << 10, 2);
		} else if (!pool_full(&pools[C_TEXT])) {
			take(&pools[C_TEXT], path, st->st_size, 32 << 10, 0);
		}
		if (pool_full(&pools[C_TEXT]) && pool_full(&pools[C_COMP]))
			return FTW_STOP;
	} else {
		take(&pools[C_CODE], path, st->st_size, 64 << 10, 1);
		if (pool_full(&pools[C_CODE]))
			return FTW_STOP;
	}
	return FTW_CONTINUE;
}

/* die(fmt, ...) - print an error, exit with status 2 (bad usage or setup). */
#define die(...)						\
	do {							\
		fflush(stdout);					\
		fprintf(stderr, "churn: error: ");		\
		fprintf(stderr, __VA_ARGS__);			\
		fputc('\n', stderr);				\
		exit(2);					\
	} while (0)

/*
 * A pool file (--save-pool, --pool): struct pool_hdr (host byte order),
 * then the bytes of the text, code and comp parts.
 */
#define POOL_MAGIC	0x6c6f6f706e726863ull	/* "chrnpool" */

struct pool_hdr {
	u64 magic, version;
	u64 len[3], files[3], urandom[3];
};

static bool read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* load_pool_file() - fill each part with up to its cap bytes of @path. */
static void load_pool_file(const char *path)
{
	struct pool_hdr h;
	unsigned int i;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("cannot open the pool file %s: %s", path, strerror(errno));
	if (!read_all(fd, &h, sizeof(h)) || h.magic != POOL_MAGIC || h.version != 1)
		die("%s is not a churn pool file (make one with --save-pool)", path);
	for (i = 0; i < 3; i++) {
		struct pool *p = &pools[i];
		size_t want = h.len[i] < p->cap ? h.len[i] : p->cap;

		if (!read_all(fd, p->buf, want) ||
		    lseek(fd, (off_t)(h.len[i] - want), SEEK_CUR) < 0)
			die("%s is truncated", path);
		p->len = want;
		p->files = h.files[i];
		p->urandom = h.urandom[i] < want ? h.urandom[i] : want;
	}
	close(fd);
}

static void save_pool_file(const char *path)
{
	struct pool_hdr h = { .magic = POOL_MAGIC, .version = 1 };
	char tmp[4096];
	unsigned int i;
	FILE *f;

	for (i = 0; i < 3; i++) {
		h.len[i] = pools[i].len;
		h.files[i] = pools[i].files;
		h.urandom[i] = pools[i].urandom;
	}
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	f = fopen(tmp, "wb");
	if (!f)
		die("cannot write %s: %s", tmp, strerror(errno));
	fwrite(&h, sizeof(h), 1, f);
	for (i = 0; i < 3; i++)
		fwrite(pools[i].buf, 1, pools[i].len, f);
	if (fclose(f) || rename(tmp, path))
		die("cannot write %s: %s", path, strerror(errno));
}

static void scan_pools(void)
{
	static const char *const code_dirs[] = {
		"/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/bin",
	};
	unsigned int i;
	int fd;

	scan_mode = 0;
	scan_seen = 0;
	nftw("/usr/share", scan_cb, 32, FTW_PHYS | FTW_ACTIONRETVAL);
	scan_mode = 1;
	for (i = 0; i < 3 && !pool_full(&pools[C_CODE]); i++) {
		scan_seen = 0;
		nftw(code_dirs[i], scan_cb, 32, FTW_PHYS | FTW_ACTIONRETVAL);
	}
	if (pools[C_TEXT].len < 16 * PG || pools[C_CODE].len < 16 * PG)
		die("too little data: %zu bytes of text, %zu of code (need 16 pages each)",
		    pools[C_TEXT].len, pools[C_CODE].len);
	if (pool_full(&pools[C_COMP]))
		return;
	fd = open("/dev/urandom", O_RDONLY);
	if (fd < 0)
		die("cannot open /dev/urandom: %s", strerror(errno));
	while (pools[C_COMP].len < pools[C_COMP].cap) {
		ssize_t n = read(fd, pools[C_COMP].buf + pools[C_COMP].len,
				 pools[C_COMP].cap - pools[C_COMP].len);

		if (n <= 0)
			die("cannot read /dev/urandom");
		pools[C_COMP].len += (size_t)n;
		pools[C_COMP].urandom += (unsigned long)n;
	}
	close(fd);
}

/* load_pools() - the pool from --pool FILE, or read from /usr. */
static void load_pools(void)
{
	size_t part = (opt.pool_mb << 20) / 3 / PG * PG;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		pools[i].cap = part;
		pools[i].buf = malloc(part);
		if (!pools[i].buf)
			die("cannot allocate the %zu-byte data pool", part);
	}
	if (opt.pool)
		load_pool_file(opt.pool);
	else
		scan_pools();
	for (i = 0; i < 3; i++)
		if (pools[i].len < 16 * PG)
			die("too little %s data in the pool: %zu bytes (need 16 pages)",
			    cls_name[i], pools[i].len);
}

/* ---- page contents ------------------------------------------------------- */

static void stamp(unsigned char *p, u64 id, u32 gen)
{
	memcpy(p, &id, 8);
	memcpy(p + 8, &gen, 4);
	memcpy(p + 12, "chrn", 4);
}

static void window(unsigned char *dst, const struct pool *p, u64 h,
		   size_t len)
{
	size_t off = (size_t)(h % (p->len - PG + 1)) & ~(size_t)63;

	memcpy(dst, p->buf + off, len);
}

/* make_page() - contents of page @id at generation @gen, class @cls. */
static void make_page(unsigned char *p, u64 id, u32 gen,
		      unsigned int cls)
{
	u64 h = mix64(opt.seed ^ mix64(id) ^ ((u64)gen << 40));
	size_t i, len;

	switch (cls) {
	case C_ZERO:
		memset(p, 0, PG);
		return;
	case C_SAME:
		h |= 1;
		for (i = 0; i < PG; i += 8)
			memcpy(p + i, &h, 8);
		return;
	case C_PARTIAL:
		len = 64 + (size_t)((h >> 24) % (PG - 512)) / 64 * 64;
		window(p, &pools[(h >> 1) & 1 ? C_CODE : C_TEXT], h >> 8, len);
		memset(p + len, 0, PG - len);
		break;
	default:
		window(p, &pools[cls], h >> 8, PG);
		break;
	}
	stamp(p, id, gen);
}

/* Weighted class draw, never @not (NR_CLS: any) unless it is the only one. */
static unsigned int pick_class(struct rng *r, unsigned int not)
{
	unsigned int i, sum = 0, x;

	for (i = 0; i < NR_CLS; i++)
		if (i != not)
			sum += opt.mix[i];
	if (!sum)
		return not;
	x = (unsigned int)(rnd(r) % sum);
	for (i = 0; i < NR_CLS; i++) {
		if (i == not)
			continue;
		if (x < opt.mix[i])
			return i;
		x -= opt.mix[i];
	}
	return not;
}

/* ---- Zipf sampler (rejection-inversion, Hoermann and Derflinger 1996) ---- */

#define ZIPF_EPS	0.00000001

struct zipf {
	double s, n, hx1, hn, sq;
};

static double zipf_h1(double x)	/* log1p(x) / x */
{
	return fabs(x) > ZIPF_EPS ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

static double zipf_h2(double x)	/* expm1(x) / x */
{
	return fabs(x) > ZIPF_EPS ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

static double zipf_hint(const struct zipf *z, double x)
{
	double l = log(x);

	return zipf_h2((1 - z->s) * l) * l;
}

static double zipf_h(const struct zipf *z, double x)
{
	return exp(-z->s * log(x));
}

static double zipf_hint_inv(const struct zipf *z, double x)
{
	double t = x * (1 - z->s);

	if (t < -1)
		t = -1;
	return exp(zipf_h1(t) * x);
}

static void zipf_init(struct zipf *z, double s, size_t n)
{
	z->s = s;
	z->n = (double)n;
	z->hx1 = zipf_hint(z, 1.5) - 1;
	z->hn = zipf_hint(z, z->n + 0.5);
	z->sq = 2 - zipf_hint_inv(z, zipf_hint(z, 2.5) - zipf_h(z, 2));
}

/* A rank in [0, n): rank 0 the most frequent. */
static size_t zipf_next(const struct zipf *z, struct rng *r)
{
	for (;;) {
		double u = z->hn + rnd01(r) * (z->hx1 - z->hn);
		double x = zipf_hint_inv(z, u), k = floor(x + 0.5);

		if (k < 1)
			k = 1;
		else if (k > z->n)
			k = z->n;
		if (k - x <= z->sq || u >= zipf_hint(z, k + 0.5) - zipf_h(z, k))
			return (size_t)k - 1;
	}
}

/* ---- shared state (parent and workers) ------------------------------------ */

static unsigned int bucket(u64 ns)
{
	unsigned int msb;

	if (ns < 8)
		return (unsigned int)ns;
	msb = 63 - (unsigned int)__builtin_clzll(ns);
	return msb * 8 + (unsigned int)((ns >> (msb - 3)) & 7);
}

static double bucket_lo_ns(unsigned int b)
{
	return b < 8 ? b : ldexp(8 + b % 8, (int)(b / 8) - 3);
}

static double bucket_hi_ns(unsigned int b)
{
	return b < 8 ? b + 1 : ldexp(9 + b % 8, (int)(b / 8) - 3);
}

/* Per worker thread; written by that thread only, read by the parent. */
struct tstat {
	atomic_int seen;	/* the command the thread last acted on */
	atomic_ullong touched, rewrites, max_ns;
	atomic_ullong written[NR_CLS];
	atomic_ullong hist[NB];
	atomic_ullong shist[NB];	/* swap-ins only */
};

struct slotctl {
	atomic_int cmd;
	atomic_uint filled, verified, epoch;
	/* parent only */
	pid_t pid;
	unsigned int incarnation;
	bool expect_exit;
};

struct shared {
	struct slotctl slot[MAX_PROCS];
	struct tstat st[];
};

static struct shared *sh;
static unsigned int fault_b;	/* the first bucket that counts as a fault */

static inline void bump(atomic_ullong *c, u64 by)
{
	/* One writer: a plain read and write, no locked instruction. */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
			      memory_order_relaxed);
}

static inline void record(struct tstat *st, u64 ns)
{
	bump(&st->hist[bucket(ns)], 1);
	bump(&st->touched, 1);
	if (ns > atomic_load_explicit(&st->max_ns, memory_order_relaxed))
		atomic_store_explicit(&st->max_ns, ns, memory_order_relaxed);
}

/* ---- worker processes ------------------------------------------------------ */

struct pmeta {
	u32 csum, gen;
	u8 cls;
};

struct proc {
	unsigned int slot, incarnation;
	unsigned char *mem;
	size_t npages;
	struct pmeta *meta;
};

struct worker {
	struct proc *pr;
	struct slotctl *sc;
	struct tstat *st;
	size_t lo, n, stride, offset, sweep;
	struct rng rng;
	struct zipf z;
	unsigned char *buf;
	unsigned char sink;	/* the bytes read by first touches */
	long majflt;		/* the thread's major faults after its last fault */
	pthread_t tid;
};

static u64 page_id(const struct proc *pr, size_t i)
{
	return (u64)pr->slot << 56 | (u64)pr->incarnation << 40 | i;
}

static noreturn void mismatch(struct worker *w, size_t i, u32 got)
{
	const struct pmeta *m = &w->pr->meta[i];
	const unsigned char *p = w->pr->mem + i * PG;
	char msg[2048];		/* at most ~700 bytes are written */
	size_t k, n;
	u64 sid = 0;
	u32 sgen = 0;

	make_page(w->buf, page_id(w->pr, i), m->gen, m->cls);
	for (k = 0; k < PG && p[k] == w->buf[k]; k++)
		;
	memcpy(&sid, p, 8);
	memcpy(&sgen, p + 8, 4);
	/* One write(), so that reports of several processes do not mix. */
	n = (size_t)snprintf(msg, sizeof(msg),
			     "churn: MISMATCH: process %u (pid %d) page %zu at %p, class %s gen %u: checksum %08x, expected %08x",
			     w->pr->slot, (int)getpid(), i, (const void *)p,
			     cls_name[m->cls], m->gen, got, m->csum);
	if (k < PG)
		n += (size_t)snprintf(msg + n, sizeof(msg) - n,
				      "; first difference at byte %zu: %02x, expected %02x",
				      k, p[k], w->buf[k]);
	else
		n += (size_t)snprintf(msg + n, sizeof(msg) - n,
				      "; the bytes now equal the expected ones (changed while checked?)");
	n += (size_t)snprintf(msg + n, sizeof(msg) - n,
			      "; stamp found: id %#llx gen %u (expected id %#llx)\nchurn: page %zu bytes 0..63:",
			      sid, sgen, page_id(w->pr, i), i);
	for (k = 0; k < 64; k++)
		n += (size_t)snprintf(msg + n, sizeof(msg) - n, "%s%02x",
				      k % 16 ? " " : "\n  ", p[k]);
	n += (size_t)snprintf(msg + n, sizeof(msg) - n, "\n");
	(void)!write(STDERR_FILENO, msg, n);	/* nowhere to report a failure */
	_exit(3);
}

/* ---- emulator check (see the head comment) --------------------------------- */

#define CPU_CHECK_EVERY 4096

#if defined(__x86_64__)
#define RFLAGS_RESERVED_0 0xffffffffffc08028ULL	/* bits 3, 5, 15, 22-63 */
#define RFLAGS_RESERVED_1 0x2ULL			/* bit 1 */

static atomic_bool cpu_fault_seen;	/* per process: report once */

static void cpu_check(void)
{
	u64 f;
	char msg[256];
	int n;

	__asm__ volatile("pushfq; popq %0" : "=r"(f) : : "memory");
	if (!(f & RFLAGS_RESERVED_0) && (f & RFLAGS_RESERVED_1))
		return;
	if (atomic_exchange(&cpu_fault_seen, true))
		return;
	n = snprintf(msg, sizeof(msg),
		     "churn: EMULATOR FAULT: pid %d on CPU %d read RFLAGS %#llx at t %.3f s: reserved bits set (no x86 CPU does this; the CPU emulator's state is corrupted)\n",
		     (int)getpid(), sched_getcpu(), (unsigned long long)f,
		     now_ns(CLOCK_MONOTONIC) / 1e9);
	(void)!write(STDERR_FILENO, msg, (size_t)n);
}
#else
static void cpu_check(void)
{
}
#endif

/* write_page() - give page @i a new generation of class @cls. */
static void write_page(struct worker *w, size_t i, unsigned int cls, bool first)
{
	struct pmeta *m = &w->pr->meta[i];
	unsigned char *p = w->pr->mem + i * PG;
	u32 gen = first ? 0 : m->gen + 1;
	u64 t0;

	make_page(w->buf, page_id(w->pr, i), gen, cls);
	m->csum = csum_page(w->buf);
	m->gen = gen;
	m->cls = (u8)cls;
	if (first) {
		/* The fill times its first touch: the first byte written. */
		t0 = now_ns(CLOCK_MONOTONIC);
		__atomic_store_n(p, w->buf[0], __ATOMIC_RELAXED);
		record(w->st, now_ns(CLOCK_MONOTONIC) - t0);
	}
	memcpy(p, w->buf, PG);
	bump(&w->st->written[cls], 1);
}

static void access_page(struct worker *w, size_t i, bool may_rewrite)
{
	unsigned char *p = w->pr->mem + i * PG;
	u64 t0;
	u32 got;

	t0 = now_ns(CLOCK_MONOTONIC);
	w->sink += __atomic_load_n(p, __ATOMIC_RELAXED);
	t0 = now_ns(CLOCK_MONOTONIC) - t0;
	record(w->st, t0);
	if (bucket(t0) >= fault_b) {
		struct rusage ru;

		if (!getrusage(RUSAGE_THREAD, &ru)) {
			if (ru.ru_majflt > w->majflt)
				bump(&w->st->shist[bucket(t0)], 1);
			w->majflt = ru.ru_majflt;
		}
	}
	got = csum_page(p);
	if (got != w->pr->meta[i].csum)
		mismatch(w, i, got);
	if (may_rewrite && opt.rewrite > 0 && rnd01(&w->rng) < opt.rewrite) {
		write_page(w, i, pick_class(&w->rng, w->pr->meta[i].cls), false);
		bump(&w->st->rewrites, 1);
	}
}

static void nap_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned int done_epoch = 0;
	struct rusage ru;
	size_t i;

	if (!getrusage(RUSAGE_THREAD, &ru))
		w->majflt = ru.ru_majflt;
	for (i = 0; i < w->n; i++)
		write_page(w, w->lo + i, pick_class(&w->rng, NR_CLS), true);
	atomic_fetch_add(&w->sc->filled, 1);

	for (unsigned int it = 0;; it++) {
		int cmd = atomic_load_explicit(&w->sc->cmd, memory_order_acquire);
		unsigned int e;

		if (!(it % CPU_CHECK_EVERY))
			cpu_check();

		atomic_store_explicit(&w->st->seen, cmd, memory_order_release);
		switch (cmd) {
		case CMD_CHURN:
			i = (zipf_next(&w->z, &w->rng) * w->stride + w->offset) % w->n;
			access_page(w, w->lo + i, true);
			break;
		case CMD_SWEEP:
			access_page(w, w->lo + w->sweep, true);
			if (++w->sweep == w->n)
				w->sweep = 0;
			break;
		case CMD_VERIFY:
			e = atomic_load_explicit(&w->sc->epoch, memory_order_acquire);
			if (e == done_epoch) {
				nap_ms(10);
				break;
			}
			for (i = 0; i < w->n; i++)
				access_page(w, w->lo + i, false);
			done_epoch = e;
			atomic_fetch_add(&w->sc->verified, 1);
			break;
		case CMD_EXIT:
			return NULL;
		default:
			nap_ms(10);
			break;
		}
	}
}

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static noreturn void child_main(unsigned int slot)
{
	struct worker w[MAX_THREADS];
	struct proc pr = {
		.slot = slot,
		.incarnation = sh->slot[slot].incarnation,
		.npages = ((size_t)opt.mb << 20) / PG / opt.procs,
	};
	unsigned int t;

	pr.mem = mmap(NULL, pr.npages * PG, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pr.meta = calloc(pr.npages, sizeof(*pr.meta));
	if (pr.mem == MAP_FAILED || !pr.meta) {
		fprintf(stderr, "churn: process %u: cannot map %zu pages\n", slot, pr.npages);
		_exit(2);
	}
	madvise(pr.mem, pr.npages * PG, MADV_NOHUGEPAGE);
	for (t = 0; t < opt.threads; t++) {
		struct worker *x = &w[t];
		u64 s = mix64(opt.seed ^ page_id(&pr, 0) ^ ((u64)t << 32));

		memset(x, 0, sizeof(*x));
		x->pr = &pr;
		x->sc = &sh->slot[slot];
		x->st = &sh->st[slot * opt.threads + t];
		x->lo = pr.npages * t / opt.threads;
		x->n = pr.npages * (t + 1) / opt.threads - x->lo;
		x->rng.s = s;
		zipf_init(&x->z, opt.zipf, x->n);
		/* The hot set: ranks scattered by an odd stride coprime with n. */
		x->stride = (size_t)((double)x->n * 0.6180339887) | 1;
		while (gcd(x->stride, x->n) != 1)
			x->stride += 2;
		x->offset = (size_t)(rnd(&x->rng) % x->n);
		x->buf = aligned_alloc(PG, PG);
		if (!x->buf || pthread_create(&x->tid, NULL, worker_main, x)) {
			fprintf(stderr, "churn: process %u: cannot start thread %u\n", slot, t);
			_exit(2);
		}
	}
	for (t = 0; t < opt.threads; t++)
		pthread_join(w[t].tid, NULL);
	fflush(stdout);
	_exit(0);
}

/* ---- the parent: phases, statistics, output --------------------------------- */

struct snap {
	u64 touched, rewrites;
	u64 hist[NB], shist[NB];
};

static FILE *csv;
static u64 t_start, phase_start, next_tick, last_tick;
static const char *phase = "start";
static struct snap snap_phase, snap_last;
static u64 phase_max;
static atomic_int got_signal;
static unsigned int n_slots_alive;

static void kill_all(void)
{
	unsigned int s;

	for (s = 0; s < opt.procs; s++)
		if (sh && sh->slot[s].pid > 0)
			kill(sh->slot[s].pid, SIGKILL);
}

static void fail_begin(void)
{
	kill_all();
	fflush(stdout);
	fprintf(stderr, "churn: FAIL in phase %s: ", phase);
}

static noreturn void fail_end(void)
{
	fputc('\n', stderr);
	if (csv)
		fflush(csv);
	exit(1);
}

/* fail(fmt, ...) - stop every process, print why, exit with status 1. */
#define fail(...)						\
	do {							\
		fail_begin();					\
		fprintf(stderr, __VA_ARGS__);			\
		fail_end();					\
	} while (0)

static void take_snap(struct snap *s)
{
	unsigned int i, b, n = opt.procs * opt.threads;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < n; i++) {
		struct tstat *st = &sh->st[i];

		s->touched += atomic_load_explicit(&st->touched, memory_order_relaxed);
		s->rewrites += atomic_load_explicit(&st->rewrites, memory_order_relaxed);
		for (b = 0; b < NB; b++) {
			s->hist[b] += atomic_load_explicit(&st->hist[b], memory_order_relaxed);
			s->shist[b] += atomic_load_explicit(&st->shist[b], memory_order_relaxed);
		}
	}
}

static u64 take_max(void)
{
	unsigned int i, n = opt.procs * opt.threads;
	u64 m = 0, v;

	for (i = 0; i < n; i++) {
		v = atomic_exchange_explicit(&sh->st[i].max_ns, 0, memory_order_relaxed);
		if (v > m)
			m = v;
	}
	return m;
}

/*
 * Percentile @q of buckets >= @from of @h (a difference of snaps), in us:
 * the upper edge of its bucket, or @max_ns if lower.
 */
static void pct(char *out, size_t len, const u64 *h, unsigned int from,
		double q, double max_ns)
{
	u64 total = 0, acc = 0, want;
	unsigned int b;

	for (b = from; b < NB; b++)
		total += h[b];
	if (!total) {
		out[0] = 0;
		return;
	}
	want = (u64)ceil(q * (double)total);
	if (!want)
		want = 1;
	for (b = from; b < NB; b++) {
		acc += h[b];
		if (acc >= want)
			break;
	}
	snprintf(out, len, "%.3f", fmin(bucket_hi_ns(b), max_ns) / 1000);
}

struct interval {
	double secs;
	u64 pages, rewrites, faults, swapins, max_ns;
	char fp50[24], fp99[24], fmax[24], ap50[24], ap99[24], amax[24];
	char sp50[24], sp99[24];
};

static void diff(struct interval *iv, const struct snap *a, const struct snap *b,
		 u64 max_ns, double secs)
{
	u64 h[NB], sh_[NB];
	unsigned int i;

	memset(iv, 0, sizeof(*iv));
	iv->secs = secs;
	iv->pages = b->touched - a->touched;
	iv->rewrites = b->rewrites - a->rewrites;
	for (i = 0; i < NB; i++) {
		h[i] = b->hist[i] - a->hist[i];
		sh_[i] = b->shist[i] - a->shist[i];
		if (i >= fault_b)
			iv->faults += h[i];
		iv->swapins += sh_[i];
	}
	iv->max_ns = max_ns;
	pct(iv->fp50, sizeof(iv->fp50), h, fault_b, 0.50, (double)max_ns);
	pct(iv->fp99, sizeof(iv->fp99), h, fault_b, 0.99, (double)max_ns);
	pct(iv->ap50, sizeof(iv->ap50), h, 0, 0.50, (double)max_ns);
	pct(iv->ap99, sizeof(iv->ap99), h, 0, 0.99, (double)max_ns);
	/* max_ns is every access's: only an upper bound here. */
	pct(iv->sp50, sizeof(iv->sp50), sh_, fault_b, 0.50, (double)max_ns);
	pct(iv->sp99, sizeof(iv->sp99), sh_, fault_b, 0.99, (double)max_ns);
	if (iv->pages)
		snprintf(iv->amax, sizeof(iv->amax), "%.3f", (double)max_ns / 1000);
	if (iv->faults)
		snprintf(iv->fmax, sizeof(iv->fmax), "%.3f", (double)max_ns / 1000);
}

static void csv_row(const char *kind, const struct interval *iv)
{
	u64 now = now_ns(CLOCK_MONOTONIC);

	if (!csv)
		return;
	fprintf(csv, "%s,%.3f,%.3f,%s,%.3f,", kind, (double)now_ns(CLOCK_REALTIME) / 1e9,
		(double)(now - t_start) / 1e9, phase, (double)(now - phase_start) / 1e9);
	if (!iv) {
		fprintf(csv, ",,,,,,,,,,,,,\n");
		return;
	}
	fprintf(csv, "%.3f,%llu,%.1f,%llu,%llu,%s,%s,%s,%s,%s,%s,%llu,%s,%s\n",
		iv->secs, iv->pages, iv->secs > 0 ? (double)iv->pages / iv->secs : 0,
		iv->rewrites, iv->faults, iv->fp50, iv->fp99, iv->fmax,
		iv->ap50, iv->ap99, iv->amax, iv->swapins, iv->sp50, iv->sp99);
}

/* tick() - close the current second (or part of one) of the phase. */
static void tick(void)
{
	struct interval iv;
	struct snap cur;
	u64 now = now_ns(CLOCK_MONOTONIC), m;

	take_snap(&cur);
	m = take_max();
	if (m > phase_max)
		phase_max = m;
	diff(&iv, &snap_last, &cur, m, (double)(now - last_tick) / 1e9);
	csv_row("second", &iv);
	snap_last = cur;
	last_tick = now;
}

static void phase_begin(const char *name)
{
	phase = name;
	phase_start = now_ns(CLOCK_MONOTONIC);
	last_tick = phase_start;
	next_tick = phase_start + 1000000000ull;
	take_snap(&snap_phase);
	snap_last = snap_phase;
	take_max();
	phase_max = 0;
	csv_row("begin", NULL);
}

static void phase_end(void)
{
	struct interval iv;
	struct snap cur;
	double secs;

	tick();
	take_snap(&cur);
	secs = (double)(last_tick - phase_start) / 1e9;
	diff(&iv, &snap_phase, &cur, phase_max, secs);
	csv_row("phase", &iv);
	printf("churn: phase %-6s %7.1f s: %9llu pages (%8.1f/s), %7llu rewrites;",
	       phase, secs, iv.pages, secs > 0 ? (double)iv.pages / secs : 0, iv.rewrites);
	printf(" faults %8llu (p50 %s us, p99 %s us, max %s us);", iv.faults,
	       iv.fp50[0] ? iv.fp50 : "-", iv.fp99[0] ? iv.fp99 : "-", iv.fmax[0] ? iv.fmax : "-");
	printf(" all accesses p50 %s us, p99 %s us, max %s us;", iv.ap50[0] ? iv.ap50 : "-",
	       iv.ap99[0] ? iv.ap99 : "-", iv.amax[0] ? iv.amax : "-");
	printf(" swap-ins %llu (p50 %s us, p99 %s us)\n", iv.swapins,
	       iv.sp50[0] ? iv.sp50 : "-", iv.sp99[0] ? iv.sp99 : "-");
	fflush(stdout);
}

static void spawn(unsigned int s)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid)
		child_main(s);
	sh->slot[s].pid = pid;
	sh->slot[s].expect_exit = false;
	n_slots_alive++;
}

static void reap(void)
{
	unsigned int s;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (s = 0; s < opt.procs && sh->slot[s].pid != pid; s++)
			;
		if (s == opt.procs)
			continue;
		sh->slot[s].pid = 0;
		n_slots_alive--;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && sh->slot[s].expect_exit)
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			fail("process %u (pid %d): checksum mismatch (see above)", s, (int)pid);
		if (WIFSIGNALED(st))
			fail("process %u (pid %d) killed by signal %d%s", s, (int)pid,
			     WTERMSIG(st), WTERMSIG(st) == SIGKILL ? " (OOM kill? see dmesg)" : "");
		fail("process %u (pid %d) exited with status %d", s, (int)pid,
		     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

/* pump() - wait a little (at most 20 ms), reap, emit the per-second row. */
static void pump(void)
{
	u64 now = now_ns(CLOCK_MONOTONIC), wait = 20000000;

	if (atomic_load(&got_signal))
		fail("stopped by signal %d", atomic_load(&got_signal));
	reap();
	if (now >= next_tick) {
		tick();
		next_tick += 1000000000ull;
		if (next_tick <= now)
			next_tick = now + 1000000000ull;
	} else if (next_tick - now < wait) {
		wait = next_tick - now;
	}
	nap_ms((long)((wait + 999999) / 1000000));
}

static void run_for(double secs)
{
	u64 end = now_ns(CLOCK_MONOTONIC) + (u64)(secs * 1e9);

	while (now_ns(CLOCK_MONOTONIC) < end)
		pump();
}

static void set_cmd(unsigned int s, int cmd)
{
	atomic_store_explicit(&sh->slot[s].cmd, cmd, memory_order_release);
}

static void set_all(int cmd)
{
	unsigned int s;

	for (s = 0; s < opt.procs; s++)
		set_cmd(s, cmd);
}

static bool all_filled(void)
{
	unsigned int s;

	for (s = 0; s < opt.procs; s++)
		if (atomic_load(&sh->slot[s].filled) < opt.threads)
			return false;
	return true;
}

/* Every thread of every running process acts on its process' command. */
static bool settled(void)
{
	unsigned int s, t;

	for (s = 0; s < opt.procs; s++) {
		int cmd = atomic_load(&sh->slot[s].cmd);

		if (!sh->slot[s].pid || atomic_load(&sh->slot[s].filled) < opt.threads)
			continue;
		for (t = 0; t < opt.threads; t++)
			if (atomic_load(&sh->st[s * opt.threads + t].seen) != cmd)
				return false;
	}
	return true;
}

/*
 * end_phase() - idle every process, wait until their accesses in flight
 * are done (so that they count in this phase), close the phase.
 */
static void end_phase(void)
{
	set_all(CMD_IDLE);
	while (!settled())
		pump();
	phase_end();
}

static void phase_exit(void)
{
	u64 end = now_ns(CLOCK_MONOTONIC) + (u64)(opt.exit_s * 1e9);
	unsigned int v = 0, exits = 0;

	phase_begin("exit");
	do {
		struct slotctl *sc = &sh->slot[v];
		pid_t old = sc->pid;

		csv_row("exit", NULL);
		sc->expect_exit = true;
		set_cmd(v, CMD_EXIT);
		while (sc->pid)
			pump();
		atomic_store(&sc->filled, 0);
		sc->incarnation++;
		set_cmd(v, CMD_CHURN);
		spawn(v);
		if (++exits <= 4)
			printf("churn: exit: process %u (pid %d) exited, new pid %d refills\n",
			       v, (int)old, (int)sc->pid);
		while (atomic_load(&sc->filled) < opt.threads)
			pump();
		v = (v + 1) % opt.procs;
	} while (now_ns(CLOCK_MONOTONIC) < end);
	printf("churn: exit: %u process exits and refills in the phase\n", exits);
	end_phase();
}

static void phase_switch(void)
{
	u64 end = now_ns(CLOCK_MONOTONIC) + (u64)(opt.switch_s * 1e9), now;
	unsigned int fg = 0, s;

	phase_begin("switch");
	while ((now = now_ns(CLOCK_MONOTONIC)) < end) {
		double left = (double)(end - now) / 1e9;

		for (s = 0; s < opt.procs; s++)
			set_cmd(s, s == fg ? CMD_SWEEP : CMD_IDLE);
		run_for(left < opt.slot_s ? left : opt.slot_s);
		fg = (fg + 1) % opt.procs;
	}
	end_phase();
}

static void phase_verify(void)
{
	unsigned int s, done;

	phase_begin("verify");
	for (s = 0; s < opt.procs; s++) {
		atomic_store(&sh->slot[s].verified, 0);
		atomic_fetch_add(&sh->slot[s].epoch, 1);
	}
	set_all(CMD_VERIFY);
	do {
		pump();
		for (s = 0, done = 0; s < opt.procs; s++)
			done += atomic_load(&sh->slot[s].verified);
	} while (done < opt.procs * opt.threads);
	end_phase();
}

static void on_signal(int sig)
{
	atomic_store(&got_signal, sig);
}

/* ---- options ------------------------------------------------------------------ */

static void help(FILE *f)
{
	fprintf(f,
		"usage: churn --mb N [--procs P] [--threads T] [--rewrite F] [--zipf S]\n"
		"             [--churn S] [--exit S] [--switch S] [--switch-slot S] [--rest S]\n"
		"             [--no-verify] [--mix text=30,code=25,comp=10,zero=10,same=5,partial=20]\n"
		"             [--pool-mb N] [--pool FILE] [--fault-us U] [--seed N] [--out CSV]\n"
		"       churn --save-pool FILE [--pool-mb N]\n");
}

static double num(const char *name, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		die("--%s wants a number in [%g, %g], not '%s'", name, lo, hi, s);
	return v;
}

static void parse_mix(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	unsigned int i, sum = 0;

	if (!copy)
		die("out of memory");
	memset(opt.mix, 0, sizeof(opt.mix));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq)
			die("--mix: '%s' is not class=weight", tok);
		*eq = 0;
		for (i = 0; i < NR_CLS && strcmp(tok, cls_name[i]); i++)
			;
		if (i == NR_CLS)
			die("--mix: unknown class '%s' (%s)", tok,
			    "text, code, comp, zero, same, partial");
		opt.mix[i] = (unsigned int)num("mix", eq + 1, 0, 1000);
	}
	free(copy);
	for (i = 0; i < NR_CLS; i++)
		sum += opt.mix[i];
	if (!sum)
		die("--mix: all weights are zero");
}

static void parse(int argc, char **argv)
{
	enum { O_MB = 256, O_PROCS, O_THREADS, O_REWRITE, O_ZIPF, O_CHURN, O_EXIT,
	       O_SWITCH, O_SLOT, O_REST, O_NOVERIFY, O_MIX, O_POOL, O_FAULT,
	       O_SEED, O_OUT, O_POOLFILE, O_SAVEPOOL, O_HELP };
	static const struct option lo[] = {
		{ "mb", 1, NULL, O_MB }, { "procs", 1, NULL, O_PROCS },
		{ "threads", 1, NULL, O_THREADS }, { "rewrite", 1, NULL, O_REWRITE },
		{ "zipf", 1, NULL, O_ZIPF }, { "churn", 1, NULL, O_CHURN },
		{ "exit", 1, NULL, O_EXIT }, { "switch", 1, NULL, O_SWITCH },
		{ "switch-slot", 1, NULL, O_SLOT }, { "rest", 1, NULL, O_REST },
		{ "no-verify", 0, NULL, O_NOVERIFY }, { "mix", 1, NULL, O_MIX },
		{ "pool-mb", 1, NULL, O_POOL }, { "fault-us", 1, NULL, O_FAULT },
		{ "seed", 1, NULL, O_SEED }, { "out", 1, NULL, O_OUT },
		{ "pool", 1, NULL, O_POOLFILE }, { "save-pool", 1, NULL, O_SAVEPOOL },
		{ "help", 0, NULL, O_HELP }, { NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_MB:
			opt.mb = (unsigned long)num("mb", optarg, 1, 1 << 20);
			break;
		case O_PROCS:
			opt.procs = (unsigned int)num("procs", optarg, 1, MAX_PROCS);
			break;
		case O_THREADS:
			opt.threads = (unsigned int)num("threads", optarg, 1, MAX_THREADS);
			break;
		case O_REWRITE:
			opt.rewrite = num("rewrite", optarg, 0, 1);
			break;
		case O_ZIPF:
			opt.zipf = num("zipf", optarg, 0.01, 10);
			break;
		case O_CHURN:
			opt.churn_s = num("churn", optarg, 0, 1e6);
			break;
		case O_EXIT:
			opt.exit_s = num("exit", optarg, 0, 1e6);
			break;
		case O_SWITCH:
			opt.switch_s = num("switch", optarg, 0, 1e6);
			break;
		case O_SLOT:
			opt.slot_s = num("switch-slot", optarg, 0.1, 1e6);
			break;
		case O_REST:
			opt.rest_s = num("rest", optarg, 0, 1e6);
			break;
		case O_NOVERIFY:
			opt.verify = false;
			break;
		case O_MIX:
			parse_mix(optarg);
			break;
		case O_POOL:
			opt.pool_mb = (unsigned long)num("pool-mb", optarg, 1, 4096);
			break;
		case O_FAULT:
			opt.fault_us = num("fault-us", optarg, 0.01, 1e6);
			break;
		case O_SEED:
			opt.seed = (u64)num("seed", optarg, 0, 1e15);
			break;
		case O_OUT:
			opt.out = optarg;
			break;
		case O_POOLFILE:
			opt.pool = optarg;
			break;
		case O_SAVEPOOL:
			opt.save_pool = optarg;
			break;
		case O_HELP:
			help(stdout);
			exit(0);
		default:
			help(stderr);
			exit(2);
		}
	}
	if (optind != argc || (!opt.mb && !opt.save_pool)) {
		help(stderr);
		exit(2);
	}
	if (opt.mb && ((size_t)opt.mb << 20) / PG / opt.procs < 16 * opt.threads)
		die("--mb %lu is too small for %u process(es) of %u thread(s)",
		    opt.mb, opt.procs, opt.threads);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	u64 t0, tmin = ULLONG_MAX, fault_ns;
	u64 written[NR_CLS] = { 0 }, total_written = 0;
	unsigned int s, i, c;
	size_t shsize;

	long ps = sysconf(_SC_PAGESIZE);

	if (ps >= 4096 && !(ps & (ps - 1)))
		page_size = (size_t)ps;
	parse(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (opt.save_pool) {
		load_pools();
		save_pool_file(opt.save_pool);
		printf("churn: pool saved in %s: text %zu KiB, code %zu KiB, comp %zu KiB\n",
		       opt.save_pool, pools[C_TEXT].len >> 10, pools[C_CODE].len >> 10,
		       pools[C_COMP].len >> 10);
		return 0;
	}
	if (opt.out) {
		csv = fopen(opt.out, "w");
		if (!csv)
			die("cannot write %s: %s", opt.out, strerror(errno));
		setvbuf(csv, NULL, _IOLBF, 0);
		fputs("kind,wall_s,t_s,phase,phase_t_s,interval_s,", csv);
		fputs("pages,pages_per_s,rewrites,faults,", csv);
		fputs("fault_p50_us,fault_p99_us,fault_max_us,", csv);
		fputs("all_p50_us,all_p99_us,all_max_us,", csv);
		fputs("swapins,swapin_p50_us,swapin_p99_us\n", csv);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	fault_ns = (u64)ceil(opt.fault_us * 1000);
	fault_b = bucket(fault_ns);
	if (bucket_lo_ns(fault_b) < (double)fault_ns)
		fault_b++;
	for (i = 0; i < 1000; i++) {
		t0 = now_ns(CLOCK_MONOTONIC);
		t0 = now_ns(CLOCK_MONOTONIC) - t0;
		if (t0 < tmin)
			tmin = t0;
	}
	t_start = now_ns(CLOCK_MONOTONIC);
	load_pools();
	printf("churn: %lu MiB in %u process(es) x %u thread(s), %zu pages each;",
	       opt.mb, opt.procs, opt.threads, (size_t)(((size_t)opt.mb << 20) / PG / opt.procs));
	printf(" rewrite %.3f, zipf %.2f; phases churn %.0f s, exit %.0f s,",
	       opt.rewrite, opt.zipf, opt.churn_s, opt.exit_s);
	printf(" switch %.0f s (slots of %.1f s), rest %.0f s%s\n",
	       opt.switch_s, opt.slot_s, opt.rest_s, opt.verify ? ", verify" : "");
	printf("churn: mix");
	for (c = 0; c < NR_CLS; c++)
		printf(" %s=%u", cls_name[c], opt.mix[c]);
	printf("; pool: text %zu KiB from %lu files, code %zu KiB from %lu files,",
	       pools[C_TEXT].len >> 10, pools[C_TEXT].files, pools[C_CODE].len >> 10,
	       pools[C_CODE].files);
	printf(" comp %zu KiB from %lu files + %lu KiB /dev/urandom (read in %.1f s)\n",
	       (pools[C_COMP].len - pools[C_COMP].urandom) >> 10, pools[C_COMP].files,
	       pools[C_COMP].urandom >> 10, (double)(now_ns(CLOCK_MONOTONIC) - t_start) / 1e9);
	printf("churn: timer cost %llu ns (min of 1000); faults: accesses >= %.3f us\n",
	       tmin, bucket_lo_ns(fault_b) / 1000);
	if ((double)tmin >= bucket_lo_ns(fault_b) / 2)
		printf("churn: warning: the timer costs %s: every access may count as a fault\n",
		       "at least half the fault threshold");

	shsize = sizeof(*sh) + (size_t)opt.procs * opt.threads * sizeof(struct tstat);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("cannot map %zu bytes of shared state", shsize);

	t_start = now_ns(CLOCK_MONOTONIC);
	phase_begin("fill");
	for (s = 0; s < opt.procs; s++)
		spawn(s);
	while (!all_filled())
		pump();
	end_phase();
	if (opt.churn_s > 0) {
		phase_begin("churn");
		set_all(CMD_CHURN);
		run_for(opt.churn_s);
		end_phase();
	}
	if (opt.exit_s > 0) {
		set_all(CMD_CHURN);
		phase_exit();
	}
	if (opt.switch_s > 0)
		phase_switch();
	if (opt.rest_s > 0) {
		phase_begin("rest");
		run_for(opt.rest_s);
		end_phase();
	}
	if (opt.verify)
		phase_verify();

	phase_begin("done");
	for (s = 0; s < opt.procs; s++)
		sh->slot[s].expect_exit = true;
	set_all(CMD_EXIT);
	while (n_slots_alive)
		pump();
	csv_row("done", NULL);
	for (i = 0; i < opt.procs * opt.threads; i++)
		for (c = 0; c < NR_CLS; c++)
			written[c] += atomic_load(&sh->st[i].written[c]);
	for (c = 0; c < NR_CLS; c++)
		total_written += written[c];
	printf("churn: pages written by class:");
	for (c = 0; c < NR_CLS; c++)
		printf(" %s %llu (%.1f%%)", cls_name[c], written[c],
		       total_written ? 100.0 * (double)written[c] / (double)total_written : 0);
	printf("\nchurn: PASS: every page read back matched its checksum (%.1f s)\n",
	       (double)(now_ns(CLOCK_MONOTONIC) - t_start) / 1e9);
	if (csv && fclose(csv))
		die("writing %s: %s", opt.out, strerror(errno));
	return 0;
}
