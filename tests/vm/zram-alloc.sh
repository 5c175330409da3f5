#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM test of zram's per-device allocator selection (the patches/ series:
# /sys/block/zramX/allocator, zram.default_allocator), run as root inside
# the guest through scripts/vm-run.sh:
#   1. the interface: read format, every listed name, bad input (unknown
#      names, garbage, a lone newline -> EINVAL; any write once disksize is
#      set -> EBUSY), reset back to the default, the default_allocator
#      module parameter, an allocator that cannot create a pool (an afmalloc
#      store that cannot create a pool -> disksize fails, e.g. EOPNOTSUPP);
#   2. per usable allocator, zram features on a raw device with checksummed
#      data: mm_stat (all 9 fields), same and huge pages, debug_stat,
#      mem_used_max, idle, recompress, writeback to a loop device, discard +
#      compact, mem_limit; the data is verified after every step;
#   3. two devices at once on different allocators: ext4 on one (dataset +
#      generated files, part removed, compacted, page cache dropped, every
#      byte verified, remounted, verified again) while a process in a
#      memory.max-limited cgroup swaps to the other (checksummed pages,
#      half freed, device compacted, the rest verified);
#   4. both devices reset and re-initialised on the next allocators, and
#      step 3 again (A+B then B+A; with three, A+B, B+C, C+A).
# Any mismatch fails the test: "zram-alloc: FAIL: ..." and exit status 1.
# An allocator zram lists but that cannot create a pool (EOPNOTSUPP) is
# printed as "zram-alloc: SKIP: ..." and, if nothing failed, the exit
# status is 77 ("zram-alloc: SKIPPED"): its features were not tested.
# About 9 minutes under TCG with two usable allocators (quick dataset).
#
#   tests/vm/zram-alloc.sh --dataset TAR [--alloc A,B] [--swap-mb N]
#
# Steps 3-4 rotate through the usable allocators (ext4 on one, swap on the
# next, then move on by one), so each serves both roles; --alloc A,B runs
# just A+B then B+A. Fewer than two usable allocators fail the test unless
# --alloc names one twice (e.g. --alloc zsmalloc,zsmalloc).
set -euo pipefail

fail() { echo "zram-alloc: FAIL: $*" >&2; exit 1; }
say() { echo "zram-alloc: $*"; }

dataset= pair= swap_mb=160
while [ $# -gt 0 ]; do
	case "$1" in
	--dataset) dataset=${2:?}; shift ;;
	--alloc) pair=${2:?}; shift ;;
	--swap-mb) swap_mb=${2:?}; shift ;;
	*) fail "unknown option '$1'" ;;
	esac
	shift
done
[ -f "$dataset" ] || fail "dataset '$dataset' not found (--dataset TAR)"
[ "$(id -u)" -eq 0 ] || fail "must run as root (inside the guest)"
[[ "$swap_mb" =~ ^[1-9][0-9]*$ ]] || fail "--swap-mb wants a number of MiB"
for t in mkfs.ext4 mkswap swapon swapoff losetup blkdiscard sha256sum dd; do
	command -v $t >/dev/null || fail "$t not found"
done
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3) || fail "python3 not found"

ctl=/sys/class/zram-control
param=/sys/module/zram/parameters/default_allocator
sys0=/sys/block/zram0
[ -d $sys0 ] || fail "no zram0 (is zram built in?)"
[ -f $sys0/allocator ] || fail "zram has no allocator attribute: kernel without the patches/ series"
[ -f $param ] || fail "no $param"

work=$(mktemp -d /tmp/zram-alloc.XXXXXX)
added=() loops=() mnts=() swaps=()
zswap_param=/sys/module/zswap/parameters/enabled
zswap_was=
cleanup() {
	local d
	for d in "${swaps[@]}"; do swapoff "$d" 2>/dev/null || true; done
	for d in "${mnts[@]}"; do umount "$d" 2>/dev/null || true; done
	for d in "${loops[@]}"; do losetup -d "$d" 2>/dev/null || true; done
	echo 1 > $sys0/reset 2>/dev/null || true
	for d in "${added[@]}"; do
		echo 1 > "/sys/block/zram$d/reset" 2>/dev/null || true
		echo "$d" > $ctl/hot_remove 2>/dev/null || true
	done
	[ -z "$zswap_was" ] || echo "$zswap_was" > $zswap_param 2>/dev/null || true
	rmdir /sys/fs/cgroup/zram-alloc 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------- helpers

errtext() {  # errno name -> the text bash prints for it
	case "$1" in
	ok) echo ok ;;
	EINVAL) echo "Invalid argument" ;;
	EBUSY) echo "Device or resource busy" ;;
	EOPNOTSUPP) echo "Operation not supported" ;;
	ENOMEM) echo "Cannot allocate memory" ;;
	*) fail "errtext: unknown errno name $1" ;;
	esac
}

try_write() {  # FILE BYTES: one write(2) of exactly BYTES; prints ok or the error text
	local err
	if err=$( { printf '%s' "$2" > "$1"; } 2>&1 ); then
		echo ok
	else
		echo "${err##*: }"
	fi
}

expect_write() {  # FILE BYTES ok|EINVAL|EBUSY|...
	local got want
	got=$(try_write "$1" "$2")
	want=$(errtext "$3")
	[ "$got" = "$want" ] ||
		fail "writing $(printf '%q' "$2") to $1: got '$got', want $3 ('$want')"
}

cur_alloc() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$1/allocator"; }
list_allocs() { tr -d '[]' < "$1/allocator"; }

check_format() {  # SYSDIR: one line, names separated by single spaces, one in brackets
	local s n
	s=$(cat "$1/allocator")
	[ "$(wc -l < "$1/allocator")" -eq 1 ] || fail "$1/allocator is not one line: '$s'"
	local re='^(\[[a-z0-9/]+\]|[a-z0-9/]+)( (\[[a-z0-9/]+\]|[a-z0-9/]+))*$'
	[[ "$s" =~ $re ]] ||
		fail "$1/allocator has a bad format: '$s'"
	n=$(tr -cd '[' < "$1/allocator" | wc -c)
	[ "$n" -eq 1 ] || fail "$1/allocator brackets $n names, want 1: '$s'"
}

expect_cur() {  # SYSDIR NAME WHAT
	local c
	c=$(cur_alloc "$1")
	[ "$c" = "$2" ] || fail "$3: $1/allocator selects '$c', want '$2' ($(cat "$1/allocator"))"
}

mm() {  # SYSDIR FIELD(1-9) of mm_stat
	awk -v f="$2" '{ print $f }' "$1/mm_stat"
}

check_mm_stat() {  # SYSDIR: 9 non-negative integers
	local s
	s=$(cat "$1/mm_stat")
	local re='^ *[0-9]+( +[0-9]+){8}$'
	[[ "$s" =~ $re ]] || fail "$1/mm_stat is not 9 numbers: '$s'"
}

add_dev() {  # prints the id of a new zram device
	local id
	id=$(cat $ctl/hot_add) || fail "hot_add failed"
	[[ "$id" =~ ^[0-9]+$ ]] || fail "hot_add returned '$id'"
	added+=("$id")
	echo "$id"
}

remove_dev() {  # ID
	local i
	echo 1 > "/sys/block/zram$1/reset"
	echo "$1" > $ctl/hot_remove || fail "hot_remove $1 failed"
	for i in "${!added[@]}"; do
		[ "${added[$i]}" != "$1" ] || unset 'added[i]'
	done
}

setup_dev() {  # SYSDIR ALLOC DISKSIZE [BACKING]
	echo 1 > "$1/reset"
	expect_write "$1/allocator" "$2" ok
	expect_cur "$1" "$2" "after selecting $2"
	echo lz4 > "$1/comp_algorithm"
	[ -z "${4:-}" ] || echo "$4" > "$1/backing_dev"
	expect_write "$1/disksize" "$3" ok
	[ "$(cat "$1/initstate")" = 1 ] || fail "$1 not initialised after disksize"
	expect_cur "$1" "$2" "after disksize"
}

gen_files() {  # dir: 200 files of varied size and compressibility, deterministic
	$py "$(dirname "$(realpath "$0")")/lib/gen-files.py" "$1"
}

# ------------------------------------------------- 1. the interface itself

say "kernel $(uname -r); allocators: $(cat $sys0/allocator); default: $(cat $param)"
echo 1 > $sys0/reset
default=$(cat $param)
check_format $sys0
expect_cur $sys0 "$default" "fresh zram0"
read -r -a names <<< "$(list_allocs $sys0)"
[ ${#names[@]} -ge 1 ] || fail "no allocator listed"
printf '%s\n' "${names[@]}" | grep -qx zsmalloc || fail "zsmalloc not listed: ${names[*]}"
[ "$(printf '%s\n' "${names[@]}" | sort | uniq -d)" = "" ] || fail "a name is listed twice: ${names[*]}"

# tests/vm/zram-integrity.sh derives its default list this way.
int_list=$(tr -d '[]' < $sys0/allocator | tr ' ' ',')
[ "$int_list" = "$(IFS=,; echo "${names[*]}")" ] ||
	fail "zram-integrity.sh would read '$int_list'"

for n in "${names[@]}"; do
	expect_write $sys0/allocator "$n" ok
	expect_cur $sys0 "$n" "after writing '$n'"
	check_format $sys0
	expect_write $sys0/allocator "$n"$'\n' ok
	expect_cur $sys0 "$n" "after writing '$n\\n'"
done

# Bad input: each must fail with EINVAL and leave the selection alone.
first=${names[0]}
expect_write $sys0/allocator "$first" ok
long=$(printf 'z%.0s' $(seq 1 3000))
bad=($'\n' nosuch ZSMALLOC Zsmalloc "zsmalloc " " zsmalloc" "[zsmalloc]" zs zsmallocx
	"zsmalloc"$'\n\n' "zsmalloc"$'\t' "zsmalloc zsmalloc" "zsmalloc,afmalloc/slab"
	afmalloc afmalloc/ afmalloc/slab/ afmalloc/SLAB afmalloc//slab afmalloc/slabx
	/slab slab zspage afmalloc/zspag afmalloc-slab "afmalloc slab" "$long"
	$'\x01\x02\x7f\xff\xfe' $'zs\xc3\xa9malloc' "-1" "0" "1" "*" ".." "../zsmalloc")
for b in "${bad[@]}"; do
	expect_write $sys0/allocator "$b" EINVAL
	expect_cur $sys0 "$first" "after the bad write $(printf '%q' "$b")"
done
# An empty write(2) never reaches zram (sysfs drops it): nothing changes.
expect_write $sys0/allocator "" ok
expect_cur $sys0 "$first" "after an empty write"
say "bad input: ${#bad[@]} bad names refused with EINVAL, selection unchanged"

# Reset returns the device to the default allocator.
for n in "${names[@]}"; do
	expect_write $sys0/allocator "$n" ok
	echo 1 > $sys0/reset
	expect_cur $sys0 "$default" "reset after selecting $n"
done

# A usable allocator: EBUSY once initialised, for every name; bad names
# still EINVAL; reset makes it selectable again.
usable=() unsupported=()
for n in "${names[@]}"; do
	echo 1 > $sys0/reset
	expect_write $sys0/allocator "$n" ok
	got=$(try_write $sys0/disksize 16M)
	if [ "$got" = ok ]; then
		usable+=("$n")
		[ "$(cat $sys0/initstate)" = 1 ] || fail "$n: initstate not 1 after disksize"
		for m in "${names[@]}"; do
			expect_write $sys0/allocator "$m" EBUSY
			expect_write $sys0/allocator "$m"$'\n' EBUSY
		done
		expect_write $sys0/allocator nosuch EINVAL
		expect_write $sys0/allocator $'\n' EINVAL
		expect_write $sys0/disksize 32M EBUSY
		expect_cur $sys0 "$n" "after refused writes to an initialised device"
		check_mm_stat $sys0
	elif [ "$got" = "$(errtext EOPNOTSUPP)" ]; then
		unsupported+=("$n")
		say "SKIP: $n: cannot create a pool in this kernel (disksize: EOPNOTSUPP); its features are not tested"
		[ "$(cat $sys0/initstate)" = 0 ] || fail "$n: initialised although disksize failed"
		[ "$(cat $sys0/disksize)" = 0 ] || fail "$n: disksize set although it failed"
		dmesg > "$work/dmesg"
		grep -qF "Cannot create $n pool for zram0" "$work/dmesg" ||
			fail "$n: no 'Cannot create $n pool' message in dmesg"
		expect_cur $sys0 "$n" "after a failed disksize"
		# Still selectable: the device is not initialised.
		expect_write $sys0/allocator zsmalloc ok
		expect_write $sys0/allocator "$n" ok
	else
		fail "$n: disksize failed with '$got'"
	fi
	echo 1 > $sys0/reset
	expect_cur $sys0 "$default" "reset of an initialised $n device"
	[ "$(cat $sys0/initstate)" = 0 ] || fail "initstate not 0 after reset"
done
printf '%s\n' "${usable[@]}" | grep -qx zsmalloc || fail "zsmalloc cannot create a pool"
say "usable: ${usable[*]}; not implemented: ${unsupported[*]:-none}"

# The default_allocator module parameter.
expect_write $param nosuch EINVAL
expect_write $param $'\n' EINVAL
expect_write $param "afmalloc" EINVAL
[ "$(cat $param)" = "$default" ] || fail "default_allocator changed by a bad write"
for n in "${names[@]}"; do
	expect_write $param "$n" ok
	[ "$(cat $param)" = "$n" ] || fail "default_allocator reads '$(cat $param)' after writing $n"
	id=$(add_dev)
	expect_cur "/sys/block/zram$id" "$n" "new device with default_allocator=$n"
	check_format "/sys/block/zram$id"
	remove_dev "$id"
	echo 1 > $sys0/reset
	expect_cur $sys0 "$n" "reset with default_allocator=$n"
done
expect_write $param "$default" ok
echo 1 > $sys0/reset
expect_cur $sys0 "$default" "reset with the default restored"
say "interface: format, ${#names[@]} names, EINVAL/EBUSY/EOPNOTSUPP, reset, default_allocator: ok"

# ------------------------------------------------ 2. features, per allocator

# 32 MiB pattern, 8 kinds of page: 2 same-filled, 2 random (huge), 4 text.
pattern=$work/pattern
npages=8192
$py - "$pattern" $npages <<'PY'
import random, sys
r = random.Random(1234)
words = [b'afmalloc', b'zram', b'zsmalloc', b'page', b'slab', b'compact',
         b'kernel', b'memory', b'object', b'handle']
with open(sys.argv[1], 'wb') as out:
    for i in range(int(sys.argv[2])):
        k = i % 8
        if k == 0:
            p = bytes(4096)
        elif k == 1:
            p = b'\xab' * 4096
        elif k in (2, 3):
            p = r.randbytes(4096)
        else:
            s = b' '.join(r.choice(words) + b'%d' % r.randrange(10 ** k)
                          for _ in range(700))
            p = s[:4096].ljust(4096, b'.')
        out.write(p)
PY
half=$(( npages * 4096 / 2 ))
head -c $((16 << 20)) /dev/urandom > "$work/random"

verify_raw() {  # DEV OFFSET LEN WHAT: device bytes == pattern bytes
	local a b
	a=$(dd if="$1" bs=1M iflag=direct,skip_bytes,count_bytes skip="$2" count="$3" 2>/dev/null | sha256sum)
	b=$(dd if="$pattern" bs=1M iflag=skip_bytes,count_bytes skip="$2" count="$3" 2>/dev/null | sha256sum)
	[ "$a" = "$b" ] || fail "$4: data read back from $1 differs from what was written"
}

block_state_count() {  # DEVNAME FLAGCHAR
	# Through cat: block_state positions are slot indices, not bytes, and
	# mawk reading the file itself stops early.
	cat "/sys/kernel/debug/zram/$1/block_state" |
		awk -v c="$2" 'index($3, c) { n++ } END { print n + 0 }'
}

grep -qw debugfs /proc/mounts || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true

features() {  # ALLOC
	local a=$1 s=$sys0 dev=/dev/zram0 img loop="" v lim fw
	local -a f
	say "== features on $a"
	if [ -f $s/backing_dev ]; then
		img=$work/backing.img
		truncate -s 64M "$img"
		loop=$(losetup -f --show "$img")
		loops+=("$loop")
	fi
	echo 1 > $s/reset
	expect_write $s/allocator "$a" ok
	echo lz4 > $s/comp_algorithm
	if [ -f $s/recomp_algorithm ] && grep -qw zstd $s/comp_algorithm; then
		echo "algo=zstd priority=1" > $s/recomp_algorithm
	fi
	[ -z "$loop" ] || echo "$loop" > $s/backing_dev
	echo 64M > $s/disksize
	dd if="$pattern" of=$dev bs=1M oflag=direct status=none
	check_mm_stat $s
	read -r -a f < $s/mm_stat
	[ "${f[0]}" -eq $((npages * 4096)) ] || fail "$a: orig_data_size ${f[0]}, want $((npages * 4096))"
	[ "${f[1]}" -gt 0 ] && [ "${f[1]}" -lt "${f[0]}" ] || fail "$a: compr_data_size ${f[1]}"
	[ "${f[2]}" -ge "${f[1]}" ] || fail "$a: mem_used_total ${f[2]} < compr_data_size ${f[1]}"
	[ "${f[3]}" -eq 0 ] || fail "$a: mem_limit ${f[3]}, want 0"
	[ "${f[4]}" -ge "${f[2]}" ] || fail "$a: mem_used_max ${f[4]} < mem_used_total ${f[2]}"
	[ "${f[5]}" -eq $((npages / 4)) ] || fail "$a: same_pages ${f[5]}, want $((npages / 4))"
	[ "${f[7]}" -ge $((npages / 4)) ] && [ "${f[7]}" -le $((npages / 2)) ] ||
		fail "$a: huge_pages ${f[7]}, want $((npages / 4)) random pages or a few more"
	[ "${f[8]}" -ge "${f[7]}" ] || fail "$a: huge_pages_since ${f[8]} < huge_pages ${f[7]}"
	say "$a: mm_stat after 32 MiB: $(cat $s/mm_stat)"
	verify_raw $dev 0 $((npages * 4096)) "$a write"

	head -n1 $s/debug_stat | grep -qx "version: 1" || fail "$a: debug_stat: $(cat $s/debug_stat)"
	echo 0 > $s/mem_used_max
	[ "$(mm $s 5)" -eq "$(mm $s 3)" ] || fail "$a: mem_used_max $(mm $s 5) != mem_used_total $(mm $s 3) after reset"

	echo all > $s/idle
	if [ -f /sys/kernel/debug/zram/zram0/block_state ]; then
		v=$(block_state_count zram0 i)
		[ "$v" -eq $((npages * 3 / 4)) ] || fail "$a: $v idle slots, want $((npages * 3 / 4))"
	fi

	if [ -f $s/recompress ] && [ -n "$(cat $s/recomp_algorithm)" ]; then
		expect_write $s/recompress "threshold=4096" EINVAL
		expect_write $s/recompress "type=idle" ok
		if [ -f /sys/kernel/debug/zram/zram0/block_state ]; then
			v=$(block_state_count zram0 r)
			[ "$v" -gt 0 ] || fail "$a: recompression with zstd saved memory on no page"
			say "$a: recompress type=idle: $v pages recompressed; mm_stat: $(cat $s/mm_stat)"
		fi
		expect_write $s/recompress "type=huge threshold=100" ok
		verify_raw $dev 0 $((npages * 4096)) "$a recompress"
	fi

	if [ -n "$loop" ]; then
		expect_write $s/writeback huge ok
		v=$(awk '{ print $1 }' $s/bd_stat)
		[ "$v" -gt 0 ] || fail "$a: writeback huge wrote nothing (bd_stat: $(cat $s/bd_stat))"
		[ "$(mm $s 8)" -eq 0 ] || fail "$a: $(mm $s 8) huge pages left after writeback"
		verify_raw $dev 0 $((npages * 4096)) "$a writeback"
		say "$a: writeback huge: bd_stat $(cat $s/bd_stat)"
	fi

	# Free the first half, compact, check the second half.
	blkdiscard -o 0 -l $half $dev
	[ "$(mm $s 1)" -eq "$half" ] || fail "$a: orig_data_size $(mm $s 1) after discarding half, want $half"
	v=$(mm $s 3)
	expect_write $s/compact 1 ok
	check_mm_stat $s
	say "$a: discard half + compact: mem_used_total $v -> $(mm $s 3), pages_compacted $(mm $s 7)"
	[ "$(mm $s 3)" -le "$v" ] || fail "$a: compaction grew the pool"
	verify_raw $dev $half $half "$a compact"

	# mem_limit: a limit just above what is used refuses new random data.
	lim=$(( $(mm $s 3) + 256 * 1024 ))
	echo $lim > $s/mem_limit
	[ "$(mm $s 4)" -eq $(( (lim + 4095) / 4096 * 4096 )) ] || fail "$a: mem_limit reads $(mm $s 4)"
	fw=$(awk '{ print $2 }' $s/io_stat)
	if dd if="$work/random" of=$dev bs=64K oflag=direct status=none 2>/dev/null; then
		fail "$a: 16 MiB of random data fit under mem_limit $lim"
	fi
	[ "$(awk '{ print $2 }' $s/io_stat)" -gt "$fw" ] || fail "$a: io_stat failed_writes did not grow"
	[ "$(mm $s 3)" -le $(( lim + 64 * 4096 )) ] || fail "$a: mem_used_total $(mm $s 3) far above mem_limit $lim"
	echo 0 > $s/mem_limit
	verify_raw $dev $half $half "$a after mem_limit"
	say "$a: mem_limit $lim refused writes (failed_writes $(awk '{ print $2 }' $s/io_stat))"

	echo 1 > $s/reset
	if [ -n "$loop" ]; then
		losetup -d "$loop"
		unset 'loops[-1]'
		rm -f "$img"
	fi
}

for a in "${usable[@]}"; do
	features "$a"
done

# -------------------------------- 3./4. two devices, two allocators at once

# Rounds: ext4 on ring[i], swap on ring[i + 1], so that every allocator
# serves both roles and each device is re-initialised on another one.
if [ -n "$pair" ]; then
	IFS=, read -r -a ring <<< "$pair"
	[ ${#ring[@]} -eq 2 ] || fail "--alloc wants two names: A,B"
	for a in "${ring[@]}"; do
		printf '%s\n' "${usable[@]}" | grep -qxF -- "$a" || fail "--alloc: '$a' is not usable here (${usable[*]})"
	done
else
	ring=("${usable[@]}")
	[ ${#ring[@]} -ge 2 ] ||
		fail "only zsmalloc is usable: build with CONFIG_ZRAM_AFMALLOC=y (or pass --alloc zsmalloc,zsmalloc)"
fi

if [ -f $zswap_param ]; then
	zswap_was=$(cat $zswap_param)
	echo N > $zswap_param   # swapped pages must reach zram, not zswap
fi
cg=/sys/fs/cgroup
grep -q "^cgroup2 $cg " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2"
grep -qw memory $cg/cgroup.controllers || fail "no memory controller in cgroup v2"
echo +memory > $cg/cgroup.subtree_control
mkdir -p $cg/zram-alloc
echo 48M > $cg/zram-alloc/memory.max
echo max > $cg/zram-alloc/memory.swap.max 2>/dev/null || true

cat > "$work/hog.py" <<'PY'
# Write checksummed pages into anonymous memory larger than the cgroup's
# memory.max (so they are swapped out), unmap every other MiB (freeing
# their swap slots), compact the swap device, then verify every page left.
# One mapping per MiB: the guest kernel may lack madvise(2).
import hashlib, mmap, random, re, sys
mb, sysdir = int(sys.argv[1]), sys.argv[2]
P, per = 4096, 256
r = random.Random(7)
maps, sums = [], []
for c in range(mb):
    m = mmap.mmap(-1, per * P, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for j in range(per):
        i = c * per + j
        k = i % 4
        if k == 0:
            p = bytes(P)
        elif k == 1:
            p = r.randbytes(P)
        else:
            p = (b'swap page %d of %d; ' % (i, mb * per) * 200)[:P]
        m[j * P:(j + 1) * P] = p
        sums.append(hashlib.sha1(p).digest())
    maps.append(m)
def swapped_kb():
    return int(re.search(r'VmSwap:\s+(\d+)', open('/proc/self/status').read()).group(1))
def mm_stat():
    return [int(x) for x in open(sysdir + '/mm_stat').read().split()]
print('hog: %d MiB written, %d MiB swapped, swap device mm_stat %s'
      % (mb, swapped_kb() // 1024, ' '.join(map(str, mm_stat()))), flush=True)
if swapped_kb() < mb * 1024 // 2:
    sys.exit('hog: FAIL: only %d KiB swapped out of %d MiB' % (swapped_kb(), mb))
orig = mm_stat()[0]
for c in range(0, mb, 2):
    maps[c].close()
used = mm_stat()[2]
with open(sysdir + '/compact', 'w') as f:
    f.write('1')
print('hog: unmapped half: orig_data_size %d -> %d, mem_used_total %d -> %d after compact'
      % (orig, mm_stat()[0], used, mm_stat()[2]), flush=True)
if mm_stat()[0] >= orig:
    sys.exit('hog: FAIL: unmapping half of the memory freed nothing on the swap device')
bad = 0
for c in range(1, mb, 2):
    for j in range(per):
        if hashlib.sha1(maps[c][j * P:(j + 1) * P]).digest() != sums[c * per + j]:
            bad += 1
if bad:
    sys.exit('hog: FAIL: %d of %d pages differ after swap-in' % (bad, (mb // 2) * per))
print('hog: %d pages verified after swap-in' % ((mb // 2) * per), flush=True)
PY

fsid=0 swid=$(add_dev)
fs_sys=/sys/block/zram$fsid sw_sys=/sys/block/zram$swid
mnt=$work/mnt
mkdir -p "$mnt"
sums=$work/sums

two_devices() {  # FS_ALLOC SWAP_ALLOC
	local fa=$1 sa=$2 total kept before hog_pid rc
	say "== ext4 on zram$fsid ($fa) and swap on zram$swid ($sa) at once"
	setup_dev $fs_sys "$fa" 1G
	setup_dev $sw_sys "$sa" 512M
	[ "$(cur_alloc $fs_sys)" = "$fa" ] && [ "$(cur_alloc $sw_sys)" = "$sa" ] ||
		fail "the two devices do not keep their own allocators"
	mkswap -q /dev/zram$swid >/dev/null
	swapon /dev/zram$swid
	swaps+=("/dev/zram$swid")
	mkfs.ext4 -q -F /dev/zram$fsid
	mount -o discard /dev/zram$fsid "$mnt"
	mnts+=("$mnt")

	# The swapper runs while the file system is filled.
	( echo $BASHPID > $cg/zram-alloc/cgroup.procs && exec $py "$work/hog.py" "$swap_mb" $sw_sys ) &
	hog_pid=$!

	tar -xf "$dataset" -C "$mnt"
	gen_files "$mnt/gen"
	(cd "$mnt" && find . -type f ! -path './lost+found/*' -print0 | sort -z |
		xargs -0 sha256sum) > "$sums"
	total=$(wc -l < "$sums")
	[ "$total" -gt 1000 ] || fail "only $total files written"
	rm -rf "$mnt/linux/drivers" "$mnt/linux/arch" "$mnt/linux/sound"
	rm -f "$mnt"/gen/f*[13579]
	sync
	fstrim "$mnt" 2>/dev/null || true
	grep -v -e ' ./linux/drivers/' -e ' ./linux/arch/' -e ' ./linux/sound/' \
		-e ' ./gen/f[0-9]*[13579]$' "$sums" > "$sums.kept"
	kept=$(wc -l < "$sums.kept")
	before=$(mm $fs_sys 3)
	expect_write $fs_sys/compact 1 ok
	say "ext4 ($fa): wrote $total files, kept $kept; mem_used_total $before -> $(mm $fs_sys 3) after compact; mm_stat $(cat $fs_sys/mm_stat)"
	echo 3 > /proc/sys/vm/drop_caches
	(cd "$mnt" && sha256sum --quiet -c "$sums.kept") || fail "$fa: ext4 data changed after compact"
	[ ! -e "$mnt/linux/drivers" ] || fail "$fa: removed directory still there"
	umount "$mnt"
	mount -o discard /dev/zram$fsid "$mnt"
	(cd "$mnt" && sha256sum --quiet -c "$sums.kept") || fail "$fa: ext4 data changed after remount"
	umount "$mnt"
	unset 'mnts[-1]'
	say "ext4 ($fa): $kept files verified, every byte, after compaction and after remount"

	rc=0
	wait $hog_pid || rc=$?
	[ $rc -eq 0 ] || fail "$sa: the swapping process failed (status $rc)"
	check_mm_stat $sw_sys
	[ "$(mm $sw_sys 9)" -gt 0 ] || say "note: no huge page went to swap on $sa"
	swapoff /dev/zram$swid
	unset 'swaps[-1]'
	check_mm_stat $fs_sys
	echo 1 > $fs_sys/reset
	echo 1 > $sw_sys/reset
	expect_cur $fs_sys "$default" "reset of zram$fsid"
	expect_cur $sw_sys "$default" "reset of zram$swid"
}

rounds=()
for i in "${!ring[@]}"; do
	fa=${ring[$i]} sa=${ring[$(( (i + 1) % ${#ring[@]} ))]}
	two_devices "$fa" "$sa"
	rounds+=("ext4 $fa + swap $sa")
done

remove_dev "$swid"
echo 1 > $sys0/reset
if [ ${#unsupported[@]} -gt 0 ]; then
	say "SKIPPED: ${unsupported[*]} cannot create a pool, not tested (interface: ${names[*]}; features: ${usable[*]};" \
		"two devices at once: $(printf '%s; ' "${rounds[@]}" | sed 's/; $//')); nothing failed"
	exit 77
fi
say "PASS (interface: ${names[*]}; features: ${usable[*]}; two devices at once: $(printf '%s; ' "${rounds[@]}" | sed 's/; $//'))"
