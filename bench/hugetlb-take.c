// SPDX-License-Identifier: GPL-2.0
/*
 * hugetlb-take: the HugeTLB-capability test's one dangerous moment, done by
 * a process whose every page is locked in memory.
 *
 * Usage: hugetlb-take NR_HUGEPAGES_FILE WANT HEADROOM
 *
 * Writes WANT to NR_HUGEPAGES_FILE (/proc/sys/vm/nr_hugepages), reads back
 * how many huge pages the kernel obtained, writes that number less HEADROOM
 * (at least 0) and prints the number obtained on stdout.
 *
 * Why a program: asking for as many huge pages as there is memory makes
 * the kernel reclaim every file page it can, the shell's and the C
 * library's text included, and leaves only the min watermark free. A shell
 * that ran the three steps itself faulted its text back in right after the
 * first write and woke the OOM killer, which took the benchmark script
 * (bench/untar-remove.sh, console of a quick-tree boot). Here mlockall()
 * keeps this program's pages resident and no allocation happens until
 * HEADROOM huge pages are free again; the calling shell only runs on after
 * that.
 *
 * Return: 0 with the number obtained printed; 1 on a usage or system-call
 * error (message on stderr; nr_hugepages is set to 0 if it was written).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int parse(const char *s, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return errno || end == s || (*end && *end != '\n') || *v < 0;
}

static int put(int fd, long v)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%ld\n", v);

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	return write(fd, buf, len) == len ? 0 : -1;
}

int main(int argc, char **argv)
{
	char buf[32];
	long want, headroom, got;
	ssize_t n;
	int fd;

	if (argc != 4 || parse(argv[2], &want) || parse(argv[3], &headroom)) {
		fprintf(stderr, "usage: %s NR_HUGEPAGES_FILE WANT HEADROOM\n", argv[0]);
		return 1;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("mlockall");
		return 1;
	}
	/* From here to the second put(): no allocation, no new page. */
	put(fd, want);	/* fewer than WANT is not an error here */
	if (lseek(fd, 0, SEEK_SET) < 0)
		goto fail;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		goto fail;
	buf[n] = '\0';
	if (parse(buf, &got))
		goto fail;
	if (put(fd, got > headroom ? got - headroom : 0))
		goto fail;
	/* HEADROOM huge pages are free again. */
	close(fd);
	n = snprintf(buf, sizeof(buf), "%ld\n", got);
	return write(STDOUT_FILENO, buf, n) == n ? 0 : 1;
fail:
	perror(argv[1]);
	put(fd, 0);
	return 1;
}
