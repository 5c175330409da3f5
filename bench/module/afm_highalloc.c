// SPDX-License-Identifier: GPL-2.0
/*
 * afm_highalloc: the allocating half of seed 000's Highalloc-Stress test.
 *
 * User space (bench/highalloc.sh) drives it one attempt at a time through
 * debugfs, so that it can read the kernel's own indices between attempts
 * (extfrag/unusable_index before each attempt, extfrag/extfrag_index after
 * each failure):
 *
 *   /sys/kernel/debug/afm_highalloc/attempt  write "1": one alloc_pages(order);
 *                                            the write returns -ENOMEM if it
 *                                            failed, the page is kept if not
 *   /sys/kernel/debug/afm_highalloc/last     "<1|0> <zone|-> <ns>" of the
 *                                            last attempt
 *   /sys/kernel/debug/afm_highalloc/stats    attempts, successes, held pages
 *                                            and successes per zone
 *   /sys/kernel/debug/afm_highalloc/release  write N: free the last N held
 *                                            blocks; 0 (or any non-number
 *                                            such as "all"): all of them
 *
 * Unloading the module frees everything it holds.
 *
 * The gfp mask is GFP_HIGHUSER_MOVABLE | __GFP_NOWARN. The seed's module
 * asks "aggressively" for HugeTLB-sized pages for user space, so that the
 * attempts wake kswapd and enter direct reclaim and direct compaction,
 * unlike the pool resizing of its HugeTLB-capability test:
 * - GFP_HIGHUSER_MOVABLE is what a HugeTLB page for user space is allocated
 *   with (htlb_alloc_mask() with movable huge pages); it allows direct
 *   reclaim (__GFP_DIRECT_RECLAIM), wakes kswapd (__GFP_KSWAPD_RECLAIM),
 *   allows direct compaction (__GFP_IO | __GFP_FS) and asks for a movable
 *   pageblock, the one type anti-fragmentation keeps free of the unmovable
 *   and reclaimable kernel data (and of what zram's allocator places there);
 * - no __GFP_RETRY_MAYFAIL and no __GFP_NORETRY: an order above
 *   PAGE_ALLOC_COSTLY_ORDER then gets exactly one pass of the slow path
 *   (async compaction, direct reclaim, direct compaction) and fails without
 *   looping and without the OOM killer, so every attempt costs the same
 *   bounded effort and a failure means "not obtainable by the kernel's own
 *   means now", which is what the fragmentation index at failure explains;
 * - __GFP_NOWARN: failures are expected and counted here, not splats;
 * - no __GFP_COMP: the pages are only held, never mapped.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#define AFM_HIGHALLOC_GFP	(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN)

static unsigned int order = 9;
module_param(order, uint, 0444);
MODULE_PARM_DESC(order, "order of every attempt (default 9: 2 MiB, the x86-64 HugeTLB page)");

static DEFINE_MUTEX(ha_lock);
static LIST_HEAD(ha_pages);		/* held pages, linked through page->lru */
static unsigned long ha_attempts;
static unsigned long ha_successes;
static unsigned long ha_held;
static unsigned long ha_zone_allocs[MAX_NR_ZONES];
static const char *ha_zone_names[MAX_NR_ZONES];
static bool ha_last_ok;
static const char *ha_last_zone;
static u64 ha_last_ns;
static struct dentry *ha_dir;

/*
 * Free the @max most recently obtained blocks (all with @max == 0). Caller
 * holds ha_lock. Returns the number of blocks freed.
 */
static unsigned long ha_release(unsigned long max)
{
	struct page *page, *prev;
	unsigned long n = 0;

	list_for_each_entry_safe_reverse(page, prev, &ha_pages, lru) {
		if (max && n == max)
			break;
		list_del(&page->lru);
		__free_pages(page, order);
		n++;
		cond_resched();
	}
	ha_held -= n;
	return n;
}

static ssize_t attempt_write(struct file *file, const char __user *buf,
			     size_t count, loff_t *ppos)
{
	struct page *page;
	bool one;
	u64 t0;
	int ret;

	ret = kstrtobool_from_user(buf, count, &one);
	if (ret)
		return ret;
	if (!one)
		return count;

	mutex_lock(&ha_lock);
	t0 = ktime_get_ns();
	page = alloc_pages(AFM_HIGHALLOC_GFP, order);
	ha_last_ns = ktime_get_ns() - t0;
	ha_attempts++;
	ha_last_ok = !!page;
	ha_last_zone = NULL;
	if (page) {
		ha_last_zone = page_zone(page)->name;
		ha_zone_names[page_zonenum(page)] = ha_last_zone;
		ha_zone_allocs[page_zonenum(page)]++;
		ha_successes++;
		ha_held++;
		list_add_tail(&page->lru, &ha_pages);
	}
	mutex_unlock(&ha_lock);
	return page ? count : -ENOMEM;
}

static const struct file_operations attempt_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = attempt_write,
	.llseek = noop_llseek,
};

static ssize_t release_write(struct file *file, const char __user *buf,
			     size_t count, loff_t *ppos)
{
	unsigned long n, max;

	if (kstrtoul_from_user(buf, count, 10, &max))
		max = 0;
	mutex_lock(&ha_lock);
	n = ha_release(max);
	mutex_unlock(&ha_lock);
	pr_debug("released %lu order-%u blocks\n", n, order);
	return count;
}

static const struct file_operations release_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = release_write,
	.llseek = noop_llseek,
};

static int last_show(struct seq_file *m, void *v)
{
	mutex_lock(&ha_lock);
	seq_printf(m, "%d %s %llu\n", ha_last_ok,
		   ha_last_zone ?: "-",
		   ha_last_ns);
	mutex_unlock(&ha_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(last);

static int stats_show(struct seq_file *m, void *v)
{
	int zid;

	mutex_lock(&ha_lock);
	seq_printf(m, "order %u\nattempts %lu\nsuccesses %lu\nfailures %lu\nheld %lu\n",
		   order, ha_attempts, ha_successes, ha_attempts - ha_successes,
		   ha_held);
	for (zid = 0; zid < MAX_NR_ZONES; zid++)
		if (ha_zone_allocs[zid])
			seq_printf(m, "zone %s %lu\n", ha_zone_names[zid],
				   ha_zone_allocs[zid]);
	mutex_unlock(&ha_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stats);

static int __init afm_highalloc_init(void)
{
	if (order > MAX_PAGE_ORDER) {
		pr_err("order %u above MAX_PAGE_ORDER %d\n", order, MAX_PAGE_ORDER);
		return -EINVAL;
	}
	ha_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(ha_dir))
		return PTR_ERR(ha_dir);
	debugfs_create_file("attempt", 0200, ha_dir, NULL, &attempt_fops);
	debugfs_create_file("release", 0200, ha_dir, NULL, &release_fops);
	debugfs_create_file("last", 0444, ha_dir, NULL, &last_fops);
	debugfs_create_file("stats", 0444, ha_dir, NULL, &stats_fops);
	return 0;
}
module_init(afm_highalloc_init);

static void __exit afm_highalloc_exit(void)
{
	/* No file can be open past this point: nothing races the release. */
	debugfs_remove_recursive(ha_dir);
	mutex_lock(&ha_lock);
	ha_release(0);
	mutex_unlock(&ha_lock);
}
module_exit(afm_highalloc_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Highalloc-Stress test (seed 000): hold order-9 pages on request");
