#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM test of the afmalloc zspage store under kernel page migration (run as
# root in the guest through scripts/vm-run.sh):
#
#   tests/vm/zspage-migrate.sh [--dataset TAR] [--size MB] [--rounds N]
#                              [--via auto|zram|zswap] [--insmod AFMALLOC.KO]
#
# Puts ext4 (mounted -o discard) on zram with the afmalloc/zspage allocator,
# writes checksummed files (the dataset if given, e.g. the quick benchmark
# tar, plus generated files of every compressibility up to --size MB of
# file data, default 160), then for N rounds (default 3)
# removes some, writes new ones and re-reads everything from zram while a
# background loop runs `echo 1 > /proc/sys/vm/compact_memory` (kernel
# compaction migrating the zspage pages) and page cache churn keeps memory
# fragmented. Every byte is verified after every round and at the end (after
# a remount). Only automatic compaction runs inside afmalloc.
#
# When zram has no allocator selection (the zram patches are not applied) or
# does not offer afmalloc/zspage, the same load goes through zswap instead:
# afmalloc as zswap's zpool with zswap_store=zspage, swap on a zsmalloc zram
# device, and a memory cgroup small enough to make a pattern-writing process
# swap; the process verifies its memory after every round. With --insmod
# (a kernel without afmalloc built in, e.g. the stock Debian one), the
# module is loaded first.
#
# Reports the migrations seen: afmalloc's debugfs counters
# (/sys/kernel/debug/afmalloc/<pool>/classes, row "migrate": pages migrated,
# refused, isolated) and /proc/vmstat compact_* / pgmigrate_*. Fails on any
# data mismatch, any kernel warning, or when afmalloc's own "migrate"
# counter did not rise: the test is about migration, so it must happen.
# It is driven, not waited for: if the rounds' background compaction has
# not migrated any zspage page yet (zram mode), up to 8 more rounds of
# page cache churn, drop_caches and compact_memory run while the data is
# still on the device, and the remount check follows them.
set -euo pipefail

size_mb=160 rounds=3 dataset= via=auto insmod_ko=
while [ $# -gt 0 ]; do
	case "$1" in
	--via) via=${2:?}; shift ;;
	--insmod) insmod_ko=${2:?}; shift ;;
	--dataset) dataset=${2:?}; shift ;;
	--size) size_mb=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	-h|--help) sed -n '3,31p' "$0"; exit 0 ;;
	*) echo "zspage-migrate: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done

fail() { echo "zspage-migrate: FAIL: $*" >&2; exit 1; }
log() { echo "[zspage-migrate] $*"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root"
if [ -n "$insmod_ko" ] && [ ! -d /sys/module/afmalloc ]; then
	insmod "$insmod_ko" || fail "cannot load $insmod_ko"
	log "loaded $insmod_ko"
fi
dbg=/sys/kernel/debug
mountpoint -q $dbg || mount -t debugfs none $dbg 2>/dev/null || true
dmesg -c >/dev/null 2>&1 || true

work=$(mktemp -d /tmp/afm-zsm.XXXXXX)
compactor_pid= churn_pid= mode= pool=
cleanup() {
	set +e
	[ -n "$compactor_pid" ] && kill "$compactor_pid" 2>/dev/null && wait "$compactor_pid" 2>/dev/null
	[ -n "$churn_pid" ] && kill "$churn_pid" 2>/dev/null && wait "$churn_pid" 2>/dev/null
	mountpoint -q "$work/mnt" 2>/dev/null && umount "$work/mnt"
	if [ "$mode" = zswap ]; then
		swapoff /dev/zram1 2>/dev/null
		[ -d /sys/block/zram1 ] && echo 1 > /sys/block/zram1/reset
	fi
	[ -d /sys/block/zram0 ] && echo 1 > /sys/block/zram0/reset 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
vm_counters=(compact_migrate_scanned compact_free_scanned compact_isolated
	     compact_stall compact_success pgmigrate_success pgmigrate_fail)
declare -A vm0
for k in "${vm_counters[@]}"; do vm0[$k]=$(vmstat "$k"); vm0[$k]=${vm0[$k]:-0}; done

# The "migrate" and other rows of the pool's debugfs classes table.
afm_row() {	# row name -> "objs direct slabs pages"
	[ -n "$pool" ] && [ -r "$dbg/afmalloc/$pool/classes" ] || { echo "0 0 0 0"; return; }
	awk -v r="$1" '$1 == r { print $2, $3, $4, $5 }' "$dbg/afmalloc/$pool/classes"
}
afm_report() {
	local m c a f
	read -r -a m <<< "$(afm_row migrate)"
	read -r -a c <<< "$(afm_row compact)"
	read -r -a a <<< "$(afm_row auto)"
	read -r -a f <<< "$(afm_row free)"
	echo "afmalloc/$pool: migrated ${m[0]:-?} refused ${m[1]:-?} isolated ${m[2]:-?};" \
		"compaction: moved ${c[0]:-?} emptied ${c[1]:-?} passes ${c[2]:-?} freed ${c[3]:-?} pages;" \
		"automatic runs ${a[0]:-?} (freed ${a[2]:-?}), shrinker scans ${a[1]:-?} (freed ${a[3]:-?});" \
		"holes ${f[0]:-?} B, tails ${f[1]:-?} B"
	if [ -r "$dbg/afmalloc/$pool/pool" ]; then
		echo "afmalloc/$pool/pool: $(tr -s ' \n' ' ' < "$dbg/afmalloc/$pool/pool")"
	fi
}
migrated() { local m; read -r -a m <<< "$(afm_row migrate)"; echo "${m[0]:-0}"; }

check_dmesg() {
	if dmesg | grep -E "WARNING:|BUG:|Oops|bad page|afmalloc: pool .*(invalid|mapped)" >&2; then
		fail "kernel warnings (above)"
	fi
}

# Background load: kernel compaction over and over, and page cache churn
# that leaves free memory scattered so compaction has pages to move.
start_load() {
	( set +e; while :; do echo 1 > /proc/sys/vm/compact_memory; sleep 0.3; done ) &
	compactor_pid=$!
	( set +e; i=0; while :; do
		head -c $((24 << 20)) /dev/urandom > "$work/churn.$((i % 4))" 2>/dev/null
		i=$((i + 1)); sleep 0.5
		if [ $((i % 4)) -eq 0 ]; then echo 1 > /proc/sys/vm/drop_caches; fi
	  done ) &
	churn_pid=$!
}

gen_files() (	# dir count seed: files of varied size and compressibility
	# Producers die of SIGPIPE when head has enough: not an error here.
	set +e +o pipefail
	d=$1 n=$2 s=$3
	mkdir -p "$d"
	for i in $(seq 1 "$n"); do
		size=$(( ((i + s) * 7919) % 262144 + 1 ))
		case $(( (i + s) % 5 )) in
		0) head -c "$size" /dev/zero ;;
		1) yes "afmalloc zspage $s line $i" | head -c "$size" ;;
		2) openssl enc -aes-128-ctr -nosalt -pass "pass:$s.$i" -pbkdf2 \
			-in /dev/zero 2>/dev/null | head -c "$size" ;;
		3) { openssl enc -aes-128-ctr -nosalt -pass "pass:$s.$i" -pbkdf2 \
			-in /dev/zero 2>/dev/null | head -c $((size / 3));
		     seq "$i" $((i + size)) | head -c $((size - size / 3)); } ;;
		4) od -An -tx1 -v -N $((size / 3 + 1)) /dev/urandom | head -c "$size" ;;
		esac > "$d/f$i"
	done
	[ "$(ls "$d" | wc -l)" -eq "$n" ]
)

zram_mode() {
	local sys=/sys/block/zram0 mnt=$work/mnt sums=$work/sums r
	echo 1 > $sys/reset
	echo afmalloc/zspage > $sys/allocator
	echo lz4 > $sys/comp_algorithm
	echo 1G > $sys/disksize
	pool=zram0
	mkfs.ext4 -q -F /dev/zram0
	mkdir -p "$mnt"
	mount -o discard /dev/zram0 "$mnt"

	# Real data (the dataset) plus generated files.
	if [ -n "$dataset" ]; then
		log "untarring $dataset"
		tar -xf "$dataset" -C "$mnt"
	fi
	log "generating files up to ${size_mb} MB"
	gen_files "$mnt/gen0" 100 0
	r=1
	while [ "$(du -sm "$mnt" | cut -f1)" -lt "$size_mb" ]; do
		gen_files "$mnt/gen$r" 100 "$r"
		r=$((r + 1))
	done
	sync
	start_load
	for r in $(seq 1 "$rounds"); do
		(cd "$mnt" && find . -type f ! -path './lost+found/*' -print0 |
			sort -z | xargs -0 sha256sum) > "$sums"
		# Remove a third, add new files: holes for automatic compaction.
		find "$mnt" -type f -name 'f*[147]' -delete
		gen_files "$mnt/new$r" 60 $((1000 + r))
		sync
		fstrim "$mnt" 2>/dev/null || true
		sleep 2
		echo 3 > /proc/sys/vm/drop_caches
		(cd "$mnt" && grep -v -E '/f[0-9]*[147]$' "$sums" |
			sha256sum --quiet -c -) || fail "round $r: data changed"
		log "round $r: verified $(grep -c -v -E '/f[0-9]*[147]$' "$sums" || true) files;" \
			"mm_stat: $(cat $sys/mm_stat)"
		afm_report
		check_dmesg
	done
	kill "$compactor_pid" "$churn_pid" 2>/dev/null || true
	wait "$compactor_pid" "$churn_pid" 2>/dev/null || true
	compactor_pid= churn_pid=
	# No migration yet: drive it. Page cache churn, then dropping it,
	# leaves free pages among the zspage pages; compact_memory then
	# moves what lies below its free scanner (a fresh zspage page is
	# allocated low, where compaction has just freed pages).
	r=0
	while [ "$(migrated)" -eq 0 ] && [ $r -lt 8 ]; do
		r=$((r + 1))
		head -c $((48 << 20)) /dev/urandom > "$work/churn.x"
		gen_files "$mnt/drive$r" 20 $((2000 + r))
		sync
		rm -f "$work/churn.x"
		echo 3 > /proc/sys/vm/drop_caches
		echo 1 > /proc/sys/vm/compact_memory
		log "drive $r: migrated $(migrated)"
	done
	(cd "$mnt" && find . -type f ! -path './lost+found/*' -print0 |
		sort -z | xargs -0 sha256sum) > "$sums"
	umount "$mnt"
	echo 3 > /proc/sys/vm/drop_caches
	echo 1 > /proc/sys/vm/compact_memory
	mount -o discard /dev/zram0 "$mnt"
	(cd "$mnt" && sha256sum --quiet -c "$sums") || fail "data changed after remount"
	log "verified $(wc -l < "$sums") files after remount"
	afm_report
	umount "$mnt"
}

# A process fills anonymous memory with per-page patterns, then verifies
# them round after round while its memory cgroup forces it to swap.
hog_py='
import hashlib, sys, time
mb, rounds = int(sys.argv[1]), int(sys.argv[2])
page = 4096
n = mb * 256
mem = bytearray(n * page)
def pat(i, r):
    seed = hashlib.sha256(b"%d.%d" % (i, r)).digest()
    k = i % 4
    if k == 0:
        return seed * (page // 32)
    if k == 1:
        return (seed[:8] + bytes(56)) * (page // 64)
    if k == 2:
        return (b"afmalloc zspage page %08d round %d " % (i, r)) * 110 + bytes(page - 110 * 36)
    return hashlib.shake_256(seed).digest(page // 2) + bytes(page // 2)
for i in range(n):
    mem[i * page:(i + 1) * page] = pat(i, 0)[:page]
for r in range(rounds):
    time.sleep(2)
    bad = sum(1 for i in range(n) if mem[i * page:(i + 1) * page] != pat(i, r)[:page])
    if bad:
        print("hog: round %d: %d pages differ" % (r, bad)); sys.exit(1)
    for i in range(0, n, 3):
        mem[i * page:(i + 1) * page] = pat(i, r + 1)[:page]
    for i in range(n):
        if i % 3:
            mem[i * page:(i + 1) * page] = pat(i, r + 1)[:page]
    print("hog: round %d verified %d pages" % (r, n), flush=True)
'

zswap_mode() {
	local z=/sys/module/zswap/parameters cg=/sys/fs/cgroup/afm-zsm r
	[ -d $z ] || fail "no zswap and no zram allocator selection: cannot reach the zspage store"
	[ -w /sys/module/afmalloc/parameters/zswap_store ] ||
		fail "zram has no allocator selection and afmalloc has no zswap_store parameter"
	command -v python3 >/dev/null || fail "python3 needed for the zswap load"
	echo zspage > /sys/module/afmalloc/parameters/zswap_store
	echo afmalloc > $z/zpool
	echo lz4 > $z/compressor 2>/dev/null || true
	echo Y > $z/enabled
	# zswap names its pools after the zpool type and a counter: find it.
	echo 1 > /sys/block/zram1/reset 2>/dev/null || true
	echo 1G > /sys/block/zram1/disksize
	mkswap -q /dev/zram1 >/dev/null
	swapon -p 10 /dev/zram1
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
	mkdir -p $cg
	echo $(( size_mb / 3 ))M > $cg/memory.max
	start_load
	# Charged to the cgroup from its first page: enter it, then exec.
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec python3 -c "$@"' \
		sh "$cg" "$hog_py" "$size_mb" "$rounds" &
	local hog=$!
	sleep 5
	pool=$(ls $dbg/afmalloc 2>/dev/null | grep -v '^zram' | head -n1 || true)
	wait $hog || fail "the pattern process saw changed memory"
	pool=$(ls $dbg/afmalloc 2>/dev/null | grep -v '^zram' | head -n1 || true)
	log "zswap: $(grep -H . $dbg/zswap/stored_pages $dbg/zswap/pool_total_size 2>/dev/null | tr '\n' ' ')"
	afm_report
	rmdir $cg 2>/dev/null || true
}

if [ "$via" != zswap ] && [ -f /sys/block/zram0/allocator ] &&
   grep -qw 'afmalloc/zspage' /sys/block/zram0/allocator; then
	mode=zram
	log "zram offers: $(cat /sys/block/zram0/allocator)"
	zram_mode
else
	[ "$via" != zram ] || fail "zram offers no afmalloc/zspage allocator (needs the zram patches)"
	mode=zswap
	[ "$via" = zswap ] || log "zram has no afmalloc/zspage allocator selection" \
		"(needs the zram patches): testing through zswap instead"
	[ -d /sys/block/zram1 ] || { modprobe zram num_devices=2 2>/dev/null ||
		echo 1 > /sys/class/zram-control/hot_add; } 2>/dev/null || true
	[ -d /sys/block/zram1 ] || cat /sys/class/zram-control/hot_add >/dev/null
	zswap_mode
fi

check_dmesg
if grep -q '^pgmigrate_success ' /proc/vmstat; then
	line=
	for k in "${vm_counters[@]}"; do
		v=$(vmstat "$k"); line+=" $k +$(( ${v:-0} - ${vm0[$k]} ))"
	done
	log "/proc/vmstat:$line"
else
	log "/proc/vmstat: no compact_*/pgmigrate_* counters (CONFIG_VM_EVENT_COUNTERS is off)"
fi
n=$(migrated)
[ "${n:-0}" -gt 0 ] ||
	fail "afmalloc's migrate counter of pool '$pool' is ${n:-unreadable}: no zspage page was migrated"
log "afmalloc zspage pages migrated by the kernel: $n"
echo "zspage-migrate: PASS ($mode)"
