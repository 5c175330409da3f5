// SPDX-License-Identifier: GPL-2.0
/*
 * cx16-flags - does the CPU, or the emulator standing in for it, keep the
 * flags register right across cmpxchg16b?
 *
 *   cx16-flags [--threads N] [--seconds S] [--report N]
 *
 * SLUB's allocation and free fast paths (Linux 6.12) end in
 * "cmpxchg16b %gs:(%rsi)" without a lock prefix (this_cpu_cmpxchg128()),
 * and its slow paths use "lock cmpxchg16b" on a struct slab. Two guest
 * double faults of the churn benchmark under QEMU TCG stopped at the
 * instruction right after the per-CPU one, with reserved bits set in the
 * saved flags (docs/log.md, "Data integrity: the emulator").
 *
 * This runs the same instruction forms in user space, in N threads
 * (default: twice the CPUs, so that they are preempted too), each in a
 * loop:
 *   - unlocked, through %fs on a thread-local slot (as the kernel does
 *     through %gs on a per-CPU one): once a compare that must succeed,
 *     once one that must fail;
 *   - locked, on one slot all threads share (contended: the compare fails
 *     whenever another thread got there first);
 *   - both forms again right after a flag-setting add whose source has
 *     every reserved bit set, in the same straight-line code, with the
 *     flags reloaded just before (popfq): the arithmetic flags the add
 *     left (CF, PF, AF, SF, OF), which cmpxchg16b must not change, are
 *     checked against the same add's flags read on their own.
 * After each it reads the flags (pushfq) and checks them: ZF set exactly
 * when rdx:rax still holds what it was given (the architecture: equal ->
 * ZF=1 and rdx:rax unchanged; not equal -> ZF=0 and rdx:rax loaded from
 * memory), the reserved bits as the architecture fixes them (bit 1 set;
 * 3, 5, 15 and 22-63 clear), IF set (user mode), and for the unlocked
 * forms the outcome itself (success or failure as planned, the slot's
 * new value, the value loaded on failure). It reports the first
 * --report (default 5) anomalies and one summary line:
 *
 *   cx16-flags: threads=N seconds=S ops=N bad_flags=N bad_zf=N bad_value=N result=pass|FAIL
 *
 * The last forms are what the kernel runs: an instruction setting the
 * flags, then this_cpu_cmpxchg128() in the same basic block. QEMU 7.2's
 * TCG (Debian 12's qemu-system-x86) calls its cmpxchg16b helper without
 * first storing the pending condition-code operation (translate.c has no
 * gen_update_cc_op() before gen_helper_cmpxchg16b{,_unlocked}(); every
 * other helper that reads the flags has one), so the helper computes the
 * flags from a stale operation: after a flags reload (popf, iret, an
 * exit to the emulator's main loop) it takes the add's source operand,
 * and every flags image computed before the next flag-setting instruction
 * (pushf here; an interrupt's frame, an exit to the main loop in the
 * kernel) has its low half ORed in, reserved bits, TF, NT, AC, IF, DF and
 * IOPL included (docs/log.md, "Data integrity: the emulator"). QEMU 10.0
 * (bookworm-backports; scripts/setup.sh installs it) computes them right.
 *
 * Exit status: 0 when nothing was wrong, 1 otherwise, 2 on bad usage.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long u64;

#define RESERVED_CLEAR	0xffffffffffc08028ULL
#define FLAG_FIXED1	0x2ULL
#define FLAG_ZF		0x40ULL
#define FLAG_IF		0x200ULL

struct pair {
	u64 lo, hi;
};

/* cmpxchg16b needs its operand 16-byte aligned. */
static __thread alignas(16) struct pair slot;
static alignas(16) struct pair shared;
static atomic_ulong ops, bad_flags, bad_zf, bad_value;
static atomic_int reported, stop;
static int report_max = 5;

static void report(const char *what, int t, unsigned long n, u64 fl,
		   u64 a, u64 b)
{
	if (atomic_fetch_add(&reported, 1) < report_max)
		fprintf(stderr,
			"cx16-flags: thread %d op %lu: %s (flags %#llx, %#llx / %#llx)\n",
			t, n, what, (unsigned long long)fl,
			(unsigned long long)a, (unsigned long long)b);
}

/* Unlocked cmpxchg16b on this thread's slot, through %fs. */
static u64 cx_fs(u64 *lo, u64 *hi, u64 nlo, u64 nhi)
{
	u64 fl;

	asm volatile("movq $slot@tpoff, %%rsi\n\t"
		     "cmpxchg16b %%fs:(%%rsi)\n\t"
		     "pushfq\n\t"
		     "popq %[fl]"
		     : [fl] "=r" (fl), "+a" (*lo), "+d" (*hi)
		     : "b" (nlo), "c" (nhi)
		     : "rsi", "memory", "cc");
	return fl;
}

/* Locked cmpxchg16b on the shared slot. */
static u64 cx_lock(struct pair *p, u64 *lo, u64 *hi, u64 nlo, u64 nhi)
{
	u64 fl;

	asm volatile("lock cmpxchg16b %[m]\n\t"
		     "pushfq\n\t"
		     "popq %[fl]"
		     : [fl] "=r" (fl), [m] "+m" (*p), "+a" (*lo), "+d" (*hi)
		     : "b" (nlo), "c" (nhi)
		     : "memory", "cc");
	return fl;
}

/*
 * The source of the add before the stale forms: every reserved bit of the
 * flags' low half set (3, 5, 15, 22-31), so that flags taken from it show.
 */
#define STALE_SRC	0xdeadbeefffc08028ULL
#define FLAGS_ARITH	0x895ULL	/* CF PF AF SF OF */

/* The flags an add of STALE_SRC to @acc leaves, read at once. */
static u64 add_flags(u64 acc)
{
	u64 fl;

	asm volatile("addq %[src], %[acc]\n\t"
		     "pushfq\n\t"
		     "popq %[fl]"
		     : [fl] "=r" (fl), [acc] "+r" (acc)
		     : [src] "r" (STALE_SRC)
		     : "cc");
	return fl;
}

/*
 * Flags reloaded (popfq), an add of STALE_SRC to @acc, then the unlocked
 * cmpxchg16b on this thread's slot, as the kernel's per-CPU form follows
 * arithmetic on its operands.
 */
static u64 cx_fs_stale(u64 *lo, u64 *hi, u64 nlo, u64 nhi, u64 acc)
{
	u64 fl;

	asm volatile("pushfq\n\t"
		     "popfq\n\t"
		     "addq %[src], %[acc]\n\t"
		     "movq $slot@tpoff, %%rsi\n\t"
		     "cmpxchg16b %%fs:(%%rsi)\n\t"
		     "pushfq\n\t"
		     "popq %[fl]"
		     : [fl] "=r" (fl), "+a" (*lo), "+d" (*hi), [acc] "+r" (acc)
		     : "b" (nlo), "c" (nhi), [src] "r" (STALE_SRC)
		     : "rsi", "memory", "cc");
	return fl;
}

/* The same with the locked form on @p. */
static u64 cx_lock_stale(struct pair *p, u64 *lo, u64 *hi, u64 nlo, u64 nhi,
			 u64 acc)
{
	u64 fl;

	asm volatile("pushfq\n\t"
		     "popfq\n\t"
		     "addq %[src], %[acc]\n\t"
		     "lock cmpxchg16b %[m]\n\t"
		     "pushfq\n\t"
		     "popq %[fl]"
		     : [fl] "=r" (fl), [m] "+m" (*p), "+a" (*lo), "+d" (*hi),
		       [acc] "+r" (acc)
		     : "b" (nlo), "c" (nhi), [src] "r" (STALE_SRC)
		     : "memory", "cc");
	return fl;
}

/* The checks every form shares; @same: rdx:rax came back as given. */
static void check_flags(int t, unsigned long n, u64 fl, int same)
{
	if ((fl & RESERVED_CLEAR) || !(fl & FLAG_FIXED1) || !(fl & FLAG_IF)) {
		atomic_fetch_add(&bad_flags, 1);
		report("reserved bits or IF wrong", t, n, fl, 0, 0);
	}
	if (!!(fl & FLAG_ZF) != same) {
		atomic_fetch_add(&bad_zf, 1);
		report("ZF does not match rdx:rax", t, n, fl, same, 0);
	}
}

/*
 * cmpxchg16b changes ZF only: the arithmetic flags after it are those of
 * the add before it (@want).
 */
static void check_arith(int t, unsigned long n, u64 fl, u64 want)
{
	if ((fl & FLAGS_ARITH) != (want & FLAGS_ARITH)) {
		atomic_fetch_add(&bad_flags, 1);
		report("arithmetic flags changed by cmpxchg16b", t, n, fl,
		       want, 0);
	}
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;
	u64 v = (u64)t << 48, lo, hi, fl;
	unsigned long n = 0;

	slot.lo = v;
	slot.hi = ~v;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* Must succeed: the slot holds v, ~v. */
		lo = v;
		hi = ~v;
		fl = cx_fs(&lo, &hi, v + 1, ~(v + 1));
		check_flags(t, n, fl, lo == v && hi == ~v);
		if (!(fl & FLAG_ZF) || slot.lo != v + 1 || slot.hi != ~(v + 1)) {
			atomic_fetch_add(&bad_value, 1);
			report("planned success failed", t, n, fl, slot.lo, slot.hi);
			slot.lo = v + 1;
			slot.hi = ~(v + 1);
		}
		v++;
		/* Must fail: compare with a value the slot does not hold. */
		lo = v + 7;
		hi = ~v;
		fl = cx_fs(&lo, &hi, 0, 0);
		check_flags(t, n, fl, lo == v + 7 && hi == ~v);
		if ((fl & FLAG_ZF) || lo != v || hi != ~v ||
		    slot.lo != v || slot.hi != ~v) {
			atomic_fetch_add(&bad_value, 1);
			report("planned failure did not fail cleanly", t, n, fl,
			       lo, hi);
			slot.lo = v;
			slot.hi = ~v;
		}
		/* Contended, locked: retry until this thread's update lands. */
		lo = __atomic_load_n(&shared.lo, __ATOMIC_RELAXED);
		hi = __atomic_load_n(&shared.hi, __ATOMIC_RELAXED);
		for (;;) {
			u64 olo = lo, ohi = hi;

			fl = cx_lock(&shared, &lo, &hi, olo + 1, ohi - 1);
			check_flags(t, n, fl, lo == olo && hi == ohi);
			if (fl & FLAG_ZF)
				break;
		}
		/*
		 * The stale forms: a success on this thread's slot, then the
		 * locked one, that must fail, on a thread-local slot, each after an
		 * add whose flags it must leave as they were.
		 */
		{
			static __thread alignas(16) struct pair mine;
			u64 acc = v ^ n, want = add_flags(acc);

			lo = slot.lo;
			hi = slot.hi;
			fl = cx_fs_stale(&lo, &hi, lo + 1, hi - 1, acc);
			check_flags(t, n, fl, 1);
			check_arith(t, n, fl, want);
			if (!(fl & FLAG_ZF)) {
				atomic_fetch_add(&bad_value, 1);
				report("stale-flags success failed", t, n, fl,
				       slot.lo, slot.hi);
			}
			slot.lo = v;
			slot.hi = ~v;
			lo = mine.lo + 1;
			hi = mine.hi;
			fl = cx_lock_stale(&mine, &lo, &hi, 0, 0, acc);
			check_flags(t, n, fl, 0);
			check_arith(t, n, fl, want);
		}
		n++;
		if (!(n & 1023))
			atomic_fetch_add(&ops, 1024);
	}
	atomic_fetch_add(&ops, n & 1023);
	return NULL;
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cpus > 0 ? 2 * cpus : 2, seconds = 60, i;
	unsigned long bad;
	pthread_t *tid;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			threads = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--report") && i + 1 < argc) {
			report_max = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--threads N] [--seconds S] [--report N]\n",
				argv[0]);
			return 2;
		}
	}
	if (threads < 1 || seconds < 1) {
		fprintf(stderr, "cx16-flags: --threads and --seconds must be positive\n");
		return 2;
	}
	tid = calloc(threads, sizeof(*tid));
	if (!tid)
		return 2;
	for (i = 0; i < threads; i++) {
		if (pthread_create(&tid[i], NULL, worker, (void *)(long)i)) {
			fprintf(stderr, "cx16-flags: cannot start thread %d\n", i);
			return 2;
		}
	}
	sleep(seconds);
	atomic_store(&stop, 1);
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	bad = bad_flags + bad_zf + bad_value;
	printf("cx16-flags: threads=%d seconds=%d ops=%lu bad_flags=%lu",
	       threads, seconds, (unsigned long)ops, (unsigned long)bad_flags);
	printf(" bad_zf=%lu bad_value=%lu result=%s\n",
	       (unsigned long)bad_zf, (unsigned long)bad_value,
	       bad ? "FAIL" : "pass");
	free(tid);
	return bad ? 1 : 0;
}
