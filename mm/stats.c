// SPDX-License-Identifier: GPL-2.0-only
/*
 * afmalloc statistics in debugfs (CONFIG_AFMALLOC_STAT):
 *
 *   /sys/kernel/debug/afmalloc/<pool>/pool     one "name value" per line
 *   /sys/kernel/debug/afmalloc/<pool>/classes  one row per class
 *
 * Values are read without stopping the pool: each line is consistent on
 * its own, lines may disagree by concurrent activity.
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "afmalloc_internal.h"

#ifdef CONFIG_AFMALLOC_STAT

/**
 * enum afm_pool_stat - rows of afmalloc/<pool>/pool
 * @AFM_POOL_OBJECTS: live objects.
 * @AFM_POOL_STORED_BYTES: sum of the sizes of live objects, as passed to
 *	afm_malloc() (what zram calls compr_data_size).
 * @AFM_POOL_PAGES: pages held, afm_get_total_pages(). Slab store: every
 *	page of every slab (data and descriptors) holding a live object,
 *	plus PAGE_SIZE chunks. Zspage store: zspage pages and the pages of
 *	its tables (handles, descriptors, hole records) and their
 *	directories.
 * @AFM_POOL_META_BYTES: bytes of metadata. Slab store: those pages held
 *	by descriptor slabs, plus the descriptor-slab bitmaps (kmalloc'ed,
 *	not in @AFM_POOL_PAGES). Zspage store: its table and directory pages
 *	(in @AFM_POOL_PAGES).
 * @AFM_POOL_AUX_BYTES: bytes outside @AFM_POOL_PAGES. Slab store: the
 *	slab tracker's xarray nodes (from the shared radix_tree_node cache),
 *	counted where slabs enter and leave the tracker. Zspage store:
 *	the shard structures, the tables' top arrays and the compaction
 *	candidate arrays.
 * @AFM_POOL_COMPACTIONS: afm_compact() runs.
 * @AFM_POOL_PAGES_COMPACTED: pages compaction gave back: those runs' and,
 *	zspage store, its automatic runs' and shrinker scans' (see
 *	&afm_pool_stats.pages_compacted).
 * @NR_AFM_POOL_STATS: number of rows.
 *
 * Overhead in the sense of the 2014 afmalloc RFC is
 * @AFM_POOL_PAGES * PAGE_SIZE - @AFM_POOL_STORED_BYTES.
 */
enum afm_pool_stat {
	AFM_POOL_OBJECTS,
	AFM_POOL_STORED_BYTES,
	AFM_POOL_PAGES,
	AFM_POOL_META_BYTES,
	AFM_POOL_AUX_BYTES,
	AFM_POOL_COMPACTIONS,
	AFM_POOL_PAGES_COMPACTED,
	NR_AFM_POOL_STATS,
};

static const char *const afm_pool_stat_names[NR_AFM_POOL_STATS] = {
	[AFM_POOL_OBJECTS]		= "objects",
	[AFM_POOL_STORED_BYTES]		= "stored_bytes",
	[AFM_POOL_PAGES]		= "pages",
	[AFM_POOL_META_BYTES]		= "meta_bytes",
	[AFM_POOL_AUX_BYTES]		= "aux_bytes",
	[AFM_POOL_COMPACTIONS]		= "compactions",
	[AFM_POOL_PAGES_COMPACTED]	= "pages_compacted",
};

/*
 * Columns of afmalloc/<pool>/classes, after the class name. Slab store
 * (the chunk size in bytes for chunk classes, "desc<n>" for descriptors of
 * n chunks); see &enum afm_class_stat:
 *   objs    live chunks (or descriptors) of the class
 *   direct  of which whole objects behind direct handles (never moved)
 *   slabs   slabs holding at least one of them (PAGE_SIZE class: pages)
 *   pages   pages of those slabs
 * The zspage store fills the same four columns with its own rows: zspages
 * by fill, then its tables and counters ("Counter rows" in
 * zspage_store.c says what each column means in each row).
 */
static const char *const afm_class_stat_names[NR_AFM_CLASS_STATS] = {
	[AFM_CLASS_OBJS]	= "objs",
	[AFM_CLASS_DIRECT]	= "direct",
	[AFM_CLASS_SLABS]	= "slabs",
	[AFM_CLASS_PAGES]	= "pages",
};

static struct dentry *afm_debugfs_root;

static int afm_pool_show(struct seq_file *s, void *v)
{
	struct afm_pool *pool = s->private;
	unsigned long val[NR_AFM_POOL_STATS];
	struct afm_pool_stats st;
	unsigned int i;

	afm_get_pool_stats(pool, &st);
	val[AFM_POOL_OBJECTS] = st.objects;
	val[AFM_POOL_STORED_BYTES] = st.stored_bytes;
	val[AFM_POOL_PAGES] = afm_get_total_pages(pool);
	val[AFM_POOL_META_BYTES] = st.meta_bytes;
	val[AFM_POOL_AUX_BYTES] = pool->ops->aux_bytes(pool);
	val[AFM_POOL_COMPACTIONS] = st.compactions;
	val[AFM_POOL_PAGES_COMPACTED] = st.pages_compacted;

	for (i = 0; i < NR_AFM_POOL_STATS; i++)
		seq_printf(s, "%-16s %lu\n", afm_pool_stat_names[i], val[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(afm_pool);

static int afm_classes_show(struct seq_file *s, void *v)
{
	struct afm_pool *pool = s->private;
	unsigned long val[NR_AFM_CLASS_STATS];
	unsigned int class, i, nr = pool->ops->nr_classes(pool);
	char name[16];

	seq_printf(s, "%-8s", "class");
	for (i = 0; i < NR_AFM_CLASS_STATS; i++)
		seq_printf(s, " %12s", afm_class_stat_names[i]);
	seq_putc(s, '\n');

	for (class = 0; class < nr; class++) {
		pool->ops->class_stats(pool, class, name, val);
		seq_printf(s, "%-8s", name);
		for (i = 0; i < NR_AFM_CLASS_STATS; i++)
			seq_printf(s, " %12lu", val[i]);
		seq_putc(s, '\n');
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(afm_classes);

/**
 * afm_stat_pool_add() - create afmalloc/<pool>/
 * @pool: the pool
 *
 * Failures are not fatal: the pool works without its statistics.
 */
void afm_stat_pool_add(struct afm_pool *pool)
{
	pool->debugfs_dir = debugfs_create_dir(pool->name, afm_debugfs_root);
	debugfs_create_file("pool", 0444, pool->debugfs_dir, pool,
			    &afm_pool_fops);
	debugfs_create_file("classes", 0444, pool->debugfs_dir, pool,
			    &afm_classes_fops);
}

/**
 * afm_stat_pool_del() - remove afmalloc/<pool>/
 * @pool: the pool
 *
 * Waits for readers of the files to finish.
 */
void afm_stat_pool_del(struct afm_pool *pool)
{
	debugfs_remove_recursive(pool->debugfs_dir);
	pool->debugfs_dir = NULL;
}

/**
 * afm_stat_init() - create the debugfs root afmalloc/
 */
void afm_stat_init(void)
{
	afm_debugfs_root = debugfs_create_dir("afmalloc", NULL);
}

/**
 * afm_stat_exit() - remove the debugfs root
 */
void afm_stat_exit(void)
{
	debugfs_remove_recursive(afm_debugfs_root);
}

#endif /* CONFIG_AFMALLOC_STAT */
