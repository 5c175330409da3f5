#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# In-VM bad-input matrix for zram with the allocator selection patches and
# afmalloc's run-time parameters (issue #8). Run as root inside the guest
# through scripts/vm-run.sh (normal or debug kernel: zram built in with
# patches/000[1-4], afmalloc built in):
#
#   scripts/vm-run.sh --memory 1G --timeout 600 --append slab_nomerge \
#       tests/vm/bad-input.sh [--alloc LIST]
#
# Every input is tried once and reported as one line, the source of the
# README's reliability table:
#   reliability: kind=bad-input test=NAME tried="..." expected="..." observed="..." lost=N result=pass|FAIL
# An attempt is one write(2) from the shell's printf (a value over 4 KiB is
# split, and refused at its first part), so the errno seen is the one the
# kernel returned; values that can be read back are compared before and
# after. What is tried (and what the interfaces promise, from
# patches/0002 and 0003, zram_drv.c of 6.12 and mm/zpool.c, mm/zspage_store.c):
#   - allocator names zram does not know, on an uninitialised device:
#     EINVAL and the allocator unchanged ("", a lone newline, prefixes,
#     suffixes, case, spaces, 300 and 5000 characters); a valid name with
#     one trailing newline is accepted; zram.default_allocator the same;
#   - disksize garbage, "1garbage", zero, negative, 1P (no table that
#     large), 16E and 17179869185G (beyond 64 bits): refused, the device
#     stays uninitialised; mem_limit 16E, 2^64 and such: ERANGE, the limit
#     kept; mem_limit "-1", "x",
#     newline, "garbage", "k", "1kgarbage": EINVAL (patches/0005: upstream
#     6.12 took "garbage" as limit 0 and "1garbage" as 1 GiB), while "64M"
#     and "0" with a newline are still accepted, and so are the unit's B
#     or iB after a suffix and a B after bytes ("64MB", "64MiB",
#     "67108864B": 64 MiB, as memparse() took them), but not "1Gi",
#     "1GiBx", "1 G" or "1BB" (EINVAL);
#   - per allocator (default: every one zram lists), a live device holding
#     a checksummed 2 MiB pattern: switching to any allocator -> EBUSY,
#     disksize/comp_algorithm -> EBUSY, reset garbage -> EINVAL, reset and
#     hot_remove while the device is open -> EBUSY, a new default_allocator
#     does not touch it; mem_limit just above what it holds, then O_DIRECT
#     4 KiB writes of incompressible data: every write either succeeds or
#     returns EIO to the writer (failed_writes counts them, a failed
#     overwrite keeps the old block); a buffered write with fsync must fail
#     too and leave every block old or new; past the end: ENOSPC; after
#     mem_limit 0 every failed block can be written. The whole device is
#     compared with the expected image after every attempt (lost = blocks
#     that differ). Reset of the idle device is accepted and puts it back
#     on the default allocator;
#   - a mounted ext4 on afmalloc/zspage: reset, hot_remove, allocator and
#     disksize refused with EBUSY, the file intact;
#   - hot_remove garbage, negative, unknown id: refused;
#   - every writable /sys/module/afmalloc/parameters/* (zswap_store,
#     zspage_auto_permille, zspage_align, zspage_handle_mag, zspage_shards,
#     and the bools zspage_contig, zspage_compact_holes, zspage_short,
#     zspage_shards_grow, zspage_handle_phases):
#     garbage refused, old value kept
#     (zspage_align: 0, 3, 24, 128 too; zspage_handle_mag: 17, and 0
#     taken and put back; zspage_auto_permille: 1001; zspage_shards: 65
#     and 1000, and 64 taken and put back); zswap_store
#     accepts "slab\n" and is put back; a parameter this script does not
#     know must refuse "garbage" (review the test when one is added).
# Where the kernel documents a refusal with a message, the message must
# be in the kernel log too (counted before and after the attempts):
# zram's "Can't change allocator/algorithm for initialized device" and
# "Cannot change disksize for initialized device" for each EBUSY of a
# live or mounted device, afmalloc's "zswap_store: unknown store" for
# each unknown store name that reaches the parameter.
# Ends with "bad-input: PASS" or "bad-input: FAIL: N of M rows" (status 1).
# 30 s (idle host) to 2 min (busy host) under TCG with 1G, plus the boot;
# O_DIRECT block writes go through one python3 process per batch and the
# helpers avoid forks, which cost 50-100 ms each under TCG.
set -eEuo pipefail
trap 'echo "bad-input: FAIL: line $LINENO: \"$BASH_COMMAND\" returned $?"' ERR

rows=0 nfail=0
say() { echo "bad-input: $*"; }
# On stdout, with the rows: vm-run.sh's log is what make check keeps.
die() {
	echo "bad-input: FAIL: $*"
	exit 1
}

allocs=
while [ $# -gt 0 ]; do
	case "$1" in
	--alloc) allocs=${2:?--alloc needs a list}; shift ;;
	*) die "unknown option '$1'" ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || die "must run as root (inside the guest)"
[ "${AFMALLOC_IN_VM:-}" = 1 ] || die "runs inside a throw-away VM (scripts/vm-run.sh) only"
for t in dd cmp python3 mkfs.ext4 mount umount; do
	command -v $t >/dev/null || die "$t not found"
done
ctl=/sys/class/zram-control
[ -d /sys/block/zram0 ] && [ -d $ctl ] || die "no zram0 or $ctl (is zram built in?)"
[ -f /sys/block/zram0/allocator ] ||
	die "zram has no allocator attribute: kernel without patches/0002-zram-add-per-device-allocator-selection.patch"
zparam=/sys/module/zram/parameters/default_allocator
[ -f $zparam ] || die "no $zparam"
[ -n "$allocs" ] || allocs=$(tr -d '[]\n' < /sys/block/zram0/allocator | tr ' ' ',')
grep -q afmalloc <<< "$allocs" || die "zram offers no afmalloc allocator ($allocs): kernel without CONFIG_ZRAM_AFMALLOC"
say "kernel $(uname -r), $(nproc) CPUs, allocators: $allocs"

work=$(mktemp -d /tmp/bad-input.XXXXXX)
devs=() holder= mnt= default0=$(cat $zparam)
cleanup() {
	set +e
	[ -z "$holder" ] || exec 3<&-
	[ -z "$mnt" ] || umount "$mnt" 2>/dev/null
	for d in "${devs[@]}"; do
		echo 1 > /sys/block/zram$d/reset 2>/dev/null
		echo "$d" > $ctl/hot_remove 2>/dev/null
	done
	echo "$default0" > $zparam 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# ------------------------------------------------------------ helpers

# clean VAR TEXT: TEXT made printable in a double-quoted shlex token ('"'
# becomes "'", a backslash is doubled, a newline is written as \n).
# Helpers set variables instead of printing: under TCG every fork counts.
clean() {
	local s=${2//\"/\'}
	s=${s//\\/\\\\}
	printf -v "$1" '%s' "${s//$'\n'/\\n}"
}

# row TEST TRIED EXPECTED OBSERVED LOST RESULT [KEY=VALUE...]
row() {
	local t=$1 tried exp obs lost=$5 res=$6
	clean tried "$2"
	clean exp "$3"
	clean obs "$4"
	shift 6
	rows=$((rows + 1))
	[ "$res" = pass ] || nfail=$((nfail + 1))
	printf 'reliability: kind=bad-input test=%s tried="%s" expected="%s" observed="%s" lost=%s result=%s%s\n' \
		"$t" "$tried" "$exp" "$obs" "$lost" "$res" "${*:+ $*}"
}

# errname MESSAGE: $errno = the name of the error in MESSAGE (strerror).
errname() {
	case "$1" in
	*"Invalid argument"*) errno=EINVAL ;;
	*"Device or resource busy"*) errno=EBUSY ;;
	*"Argument list too long"*) errno=E2BIG ;;
	*"No such device or address"*) errno=ENXIO ;;
	*"No such device"*) errno=ENODEV ;;
	*"Numerical result out of range"*) errno=ERANGE ;;
	*"Cannot allocate memory"*) errno=ENOMEM ;;
	*"No space left on device"*) errno=ENOSPC ;;
	*"Input/output error"*) errno=EIO ;;
	*"Permission denied"*) errno=EACCES ;;
	*) errno="other(${1//$'\n'/ })" ;;
	esac
}

# try FILE VALUE: write VALUE to FILE with the shell's printf: one write(2)
# for less than 4 KiB (none if VALUE is empty), a longer value is split at
# 4 KiB and the first part already fails. $got is OK or the errno's name.
try() {
	local msg=
	if { printf '%s' "$2" > "$1"; } 2>"$work/err"; then
		got=OK
	else
		IFS= read -r msg < "$work/err" || true
		errname "$msg"
		got=$errno
	fi
}

# klog TEXT: $klog = how many kernel log lines contain TEXT.
klog() {
	klog=$(dmesg | grep -cF -- "$1" || true)
}
msg_alloc="Can't change allocator for initialized device"
msg_comp="Can't change algorithm for initialized device"
msg_disksize="Cannot change disksize for initialized device"
msg_store="afmalloc: zswap_store: unknown store"

# readval FILE: $val = its first line, or "unreadable".
readval() {
	{ IFS= read -r val < "$1"; } 2>/dev/null || val=unreadable
}

# show VALUE: $shown = how a tried value is written in the table.
show() {
	local v=$1
	if [ ${#v} -gt 40 ]; then
		printf -v shown "'%s...' (%d bytes)" "${v:0:12}" ${#v}
	elif [ -z "$v" ]; then
		shown='nothing (a 0-byte write)'
	else
		shown="'${v//$'\n'/\\n}'"
	fi
}

# refuse TEST FILE VALUE WANT [WHAT]: VALUE must be refused with an errno
# matching the pattern WANT ("EINVAL|E2BIG") or, with WANT=OK, accepted;
# a refused value must leave the file's content unchanged.
refuse() {
	local t=$1 f=$2 v=$3 want=$4 what=${5:-} before after obs res=pass exp
	readval "$f"
	before=$val
	try "$f" "$v"
	readval "$f"
	after=$val
	obs=$got
	if [ "$want" = OK ]; then
		exp="accepted"
		[ "$got" = OK ] || res=FAIL
	else
		exp="refused (${want//|/ or }), value unchanged"
		[[ "$got" =~ ^($want)$ ]] || res=FAIL
		if [ "$after" = "$before" ]; then
			obs+=", value unchanged"
		else
			obs+=", value changed from '$before' to '$after'"
			res=FAIL
		fi
	fi
	[ -z "$what" ] || exp+=", $what"
	show "$v"
	row "$t" "write $shown to ${f#/sys/}" "$exp" "$obs" 0 $res
}

# takes FILE VALUE READBACK: VALUE written to module parameter FILE is taken
# and reads back as READBACK; the old value is put back.
takes() {
	local f=$1 v=$2 want=$3 old
	readval "$f"
	old=$val
	refuse module-param "$f" "$v" OK "reads back $want"
	readval "$f"
	[ "$val" = "$want" ] ||
		row module-param "read ${f#/sys/} after writing $v" "$want" "$val" 0 FAIL
	echo "$old" > "$f"
}

# shows ALLOCFILE NAME: whether NAME is the selected (bracketed) allocator.
shows() {
	readval "$1"
	[[ "$val" == *"[$2]"* ]]
}

# hot_add: a new device, its id in $id (not in a subshell: devs[] is
# what cleanup removes).
hot_add() {
	id=$(cat $ctl/hot_add) && [[ "$id" =~ ^[0-9]+$ ]] || die "hot_add failed: $id"
	devs+=("$id")
}

forget() {
	local i
	for i in "${!devs[@]}"; do
		[ "${devs[$i]}" != "$1" ] || unset 'devs[i]'
	done
}

# idle_try FILE VALUE: try() of a reset or a hot_remove that must succeed
# on a device this script does not hold open. udev's probe (blkid, run for
# a new device and, through its inotify watch on block devices, for one
# closed after a write) holds the device open for a moment, and either
# then fails with EBUSY (seen once in twelve runs of the debug suite: a
# hot_remove 3 s after the hot_add). So wait for udev's queue (udevadm
# settle) first and after each EBUSY, up to 10 times; $busy_retries says
# how many were needed. A device that stays busy still fails.
udevadm=$(command -v udevadm || true)
settle() {
	[ -z "$udevadm" ] || "$udevadm" settle --timeout=30 2>/dev/null || true
}
idle_try() {
	busy_retries=0
	settle
	try "$1" "$2"
	while [ "$got" = EBUSY ] && [ $busy_retries -lt 10 ]; do
		busy_retries=$((busy_retries + 1))
		settle
		sleep 0.2
		try "$1" "$2"
	done
	if [ $busy_retries -gt 0 ] && [ "$got" = OK ]; then
		say "$1: EBUSY $busy_retries time(s), then accepted (most likely udev's probe had the device open)"
	elif [ $busy_retries -gt 0 ]; then
		say "$1: still $got after $busy_retries retries"
	fi
}

hot_remove() {
	idle_try $ctl/hot_remove "$1"
	[ "$got" = OK ] || die "hot_remove of idle zram$1 failed ($got)"
	forget "$1"
}

# blocks A B: the 4 KiB blocks in which files A and B differ, one a line.
blocks() {
	{ cmp -l "$1" "$2" 2>/dev/null || true; } | awk '{ print int(($1 - 1) / 4096) }' | sort -u
}

# verify DEV IMG: $lost = 4 KiB blocks of /dev/DEV that differ from IMG.
verify() {
	dd if=/dev/$1 of="$work/read" bs=1M iflag=direct status=none ||
		die "reading /dev/$1 failed"
	if cmp -s "$work/read" "$2"; then
		lost=0
	else
		lost=$(blocks "$work/read" "$2" | wc -l)
	fi
}

# wblocks DEV IMG BLOCK:SRCBLOCK...: 4 KiB O_DIRECT writes of blocks of
# $work/rand, one process for all; "BLOCK OK|ERRNO" lines in $work/wout,
# and each block written also into the expected image IMG.
cat > "$work/wblocks.py" <<'PYEOF'
import errno, mmap, os, sys
dev, img = sys.argv[1:3]
src = open(os.path.join(os.path.dirname(sys.argv[0]), "rand"), "rb").read()
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
im = os.open(img, os.O_WRONLY)
buf = mmap.mmap(-1, 4096)	# page aligned, as O_DIRECT wants
for arg in sys.argv[3:]:
    b, s = (int(x) for x in arg.split(":"))
    blk = src[s * 4096:(s + 1) * 4096]
    buf[:] = blk
    try:
        n = os.pwrite(fd, buf, b * 4096)
        r = "OK" if n == 4096 else "short(%d)" % n
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    if r == "OK":
        os.pwrite(im, blk, b * 4096)
    print(b, r)
PYEOF
wblocks() {
	python3 -S "$work/wblocks.py" "$@" > "$work/wout" || die "writing blocks to /dev/$1 failed"
}

# field FILE N: $val = the Nth number of FILE's first line.
field() {
	local f
	read -r -a f < "$1"
	val=${f[$(($2 - 1))]}
}

# ------------------------------------------------ allocator name matrix

t0=$SECONDS
hot_add
z=/sys/block/zram$id
printf -v long300 'afmalloc/zspage%0285d' 0
printf -v long5000 '%5000s' x
long5000=${long5000// /x}
for v in foo $'\n' afmalloc/ afmalloc/zspagex afmalloc afmalloc/slab/ AFMALLOC/SLAB \
	 ' zsmalloc' 'zsmalloc ' $'zsmalloc\n\n' "$long300" "$long5000"; do
	refuse allocator-name $z/allocator "$v" 'EINVAL|E2BIG'
done
# A 0-byte write never reaches the store (sysfs returns 0): nothing changes.
readval $z/allocator
before=$val
try $z/allocator ''
readval $z/allocator
res=pass obs="$got, value unchanged"
[ "$val" = "$before" ] || { res=FAIL; obs="$got, value changed to '$val'"; }
[ "$got" = OK ] || res=FAIL
row allocator-name "write nothing (a 0-byte write) to ${z#/sys/}/allocator" \
	"no effect (sysfs does not call the store)" "$obs" 0 $res
refuse allocator-name $z/allocator $'afmalloc/slab\n' OK "one trailing newline ignored"
res=pass
shows $z/allocator afmalloc/slab || res=FAIL
row allocator-name "read ${z#/sys/}/allocator after selecting afmalloc/slab" "afmalloc/slab in brackets" \
	"$val" 0 $res

for v in foo $'\n' afmalloc/ "$long300"; do
	refuse default-allocator $zparam "$v" 'EINVAL|E2BIG'
done

# ------------------------------------------- disksize and mem_limit garbage

for v in garbage 1garbage 0 -1 $'\n' 1P; do
	want=EINVAL
	[ "$v" != 1P ] || want=ENOMEM
	try $z/disksize "$v"
	readval $z/disksize
	res=pass
	[ "$got" = "$want" ] && [ "$val" = 0 ] || res=FAIL
	show "$v"
	row disksize "write $shown to ${z#/sys/}/disksize" "refused ($want), device stays uninitialised" \
		"$got, disksize $val" 0 $res
done
obs=() res=pass
for v in -1 $'\n' x garbage k 1kgarbage; do
	try $z/mem_limit "$v"
	show "$v"
	obs+=("$shown: $got")
	[ "$got" = EINVAL ] || res=FAIL
done
row mem-limit "write '-1', a newline, 'x', 'garbage', 'k', '1kgarbage' to ${z#/sys/}/mem_limit" \
	"each refused (EINVAL; upstream 6.12 took 'garbage' and 'k' as 0, no limit: patches/0005)" \
	"${obs[*]}" 0 $res
obs=() res=pass
for v in $'64M\n' $'0\n'; do
	try $z/mem_limit "$v"
	show "$v"
	obs+=("$shown: $got")
	[ "$got" = OK ] || res=FAIL
done
row mem-limit "write 64M, then 0, each with a newline, to ${z#/sys/}/mem_limit" "each accepted" \
	"${obs[*]}" 0 $res
# The unit's B or iB after a suffix, and a B after a number of bytes, as
# memparse() took them (binary units); nothing else after them.
# Each accepted form is written over a limit of 0; each refused one must
# leave the 64 MiB the last accepted form set.
obs=() res=pass
for t in 64MB:OK 64MiB:OK 65536kb:OK 67108864B:OK $'64mib\n:OK' \
	 1Gi:EINVAL 1GiBx:EINVAL '1 G:EINVAL' 1BB:EINVAL; do
	v=${t%:*} want=${t##*:}
	[ "$want" != OK ] || echo 0 > "$z/mem_limit"
	try "$z/mem_limit" "$v"
	read -r _ _ _ lim _ < "$z/mm_stat"
	show "$v"
	obs+=("$shown: $got, limit $lim;")
	[ "$got" = "$want" ] && [ "$lim" = $((64 << 20)) ] || res=FAIL
done
row mem-limit-units "write 64MB, 64MiB, 65536kb, 67108864B, 64mib with a newline to ${z#/sys/}/mem_limit, then 1Gi, 1GiBx, '1 G', 1BB" \
	"the first five accepted as 64 MiB (as upstream's memparse() took them), the last four refused (EINVAL), the limit kept (patches/0005)" \
	"${obs[*]}" 0 "$res"
echo 0 > "$z/mem_limit"
# Sizes beyond 64 bits (memparse() wraps the number and the suffix's
# shift: 16E was 0, no limit; 17179869185G a 1 GiB device): ERANGE, the
# limit (mm_stat's fourth field) and the disk size unchanged (patches/0005).
echo 64M > $z/mem_limit || die "mem_limit 64M on zram$id failed"
obs=() res=pass
for v in 16E 17179869184G 18446744073709551616 18446744073709551615; do
	try $z/mem_limit "$v"
	show "$v"
	read -r _ _ _ lim _ < $z/mm_stat
	obs+=("$shown: $got, limit $lim;")
	[ "$got" = ERANGE ] && [ "$lim" = $((64 << 20)) ] || res=FAIL
done
for v in 16E 17179869185G; do
	try $z/disksize "$v"
	readval $z/disksize
	show "$v"
	obs+=("disksize $shown: $got, disksize $val;")
	[ "$got" = ERANGE ] && [ "$val" = 0 ] || res=FAIL
done
row size-overflow "write 16E, 17179869184G, 2^64, 2^64-1 to ${z#/sys/}/mem_limit (set to 64M), 16E and 17179869185G to its disksize" \
	"each refused (ERANGE), limit 64 MiB and disksize 0 kept (upstream 6.12 wrapped them: 16E no limit, 17179869185G a 1 GiB device)" \
	"${obs[*]}" 0 $res
echo 0 > $z/mem_limit
hot_remove "$id"

# ------------------------------------------------- hot_remove garbage

obs=() res=pass
for v in garbage -1 2147483647 $'\n'; do
	try $ctl/hot_remove "$v"
	show "$v"
	obs+=("$shown: $got")
	[[ "$got" =~ ^(EINVAL|ENODEV|ERANGE)$ ]] || res=FAIL
done
row hot-remove "write 'garbage', '-1', '2147483647' (no such device), a newline to class/zram-control/hot_remove" \
	"each refused (EINVAL, ENODEV or ERANGE)" "${obs[*]}" 0 $res

# ------------------------------------------------- per allocator, live

# The pattern: incompressible, text, base64 (partly compressible), zero and
# same-filled pages (512 KiB each, then 256 KiB each); the expected image
# of the 4 MiB device (blocks 0..1023) starts as it, zeros after 2 MiB.
{
	head -c 512K /dev/urandom
	(yes "afmalloc bad-input pattern line" || true) | head -c 512K
	head -c 384K /dev/urandom | base64 -w 0 | head -c 512K
	head -c 256K /dev/zero
	head -c 256K /dev/zero | tr '\0' '\253'
} > "$work/pattern"
head -c 512K /dev/urandom > "$work/rand"
[ "$(stat -c %s "$work/pattern")" = 2097152 ] || die "pattern is not 2 MiB"

live() {
	local a=$1 t=${1//\//-} z dev img b ok eio other fw0 fw1 limit obs res n msg pe
	hot_add
	z=/sys/block/zram$id dev=zram$id img=$work/img.$id
	try $z/allocator "$a"
	[ "$got" = OK ] || die "selecting $a on idle zram$id: $got"
	echo 4M > $z/disksize || die "disksize 4M on zram$id ($a) failed"
	shows $z/allocator "$a" || die "zram$id does not show [$a] after disksize: $val"
	rm -f "$img"
	truncate -s 4M "$img"
	dd if="$work/pattern" of="$img" conv=notrunc status=none
	dd if="$work/pattern" of=/dev/$dev bs=1M oflag=direct conv=fsync status=none ||
		die "writing the pattern to zram$id ($a) failed"
	verify $dev "$img"
	[ "$lost" = 0 ] || die "pattern does not read back from zram$id ($a): $lost blocks differ"

	# Switch allocator: every name, the current one included.
	obs=() res=pass
	klog "$msg_alloc"
	n=$klog
	for v in zsmalloc afmalloc/slab afmalloc/zspage foo; do
		try $z/allocator "$v"
		verify $dev "$img"
		obs+=("$v: $got, lost $lost;")
		if [ "$v" = foo ]; then
			[ "$got" = EINVAL ] || res=FAIL
		else
			[ "$got" = EBUSY ] || res=FAIL
		fi
		[ "$lost" = 0 ] || res=FAIL
	done
	shows $z/allocator "$a" || { res=FAIL; obs+=("allocator now $val"); }
	klog "$msg_alloc"
	obs+=("kernel log: $((klog - n)) \"$msg_alloc\"")
	[ $((klog - n)) -eq 3 ] || res=FAIL
	row "live-switch:$t" "write zsmalloc, afmalloc/slab, afmalloc/zspage, foo to allocator of the live $a device (2 MiB checksummed)" \
		"EBUSY (EINVAL for foo), still $a, data intact after each, one \"$msg_alloc\" per EBUSY" "${obs[*]}" "$lost" $res

	# Other reconfiguration of the live device.
	obs=() res=pass
	for f in "disksize:16M:$msg_disksize" "comp_algorithm:zstd:$msg_comp"; do
		klog "${f#*:*:}"
		n=$klog
		v=${f#*:}
		try $z/${f%%:*} "${v%%:*}"
		verify $dev "$img"
		klog "${f#*:*:}"
		obs+=("${f%%:*}: $got, lost $lost, kernel log +$((klog - n));")
		[ "$got" = EBUSY ] && [ "$lost" = 0 ] && [ $((klog - n)) -eq 1 ] || res=FAIL
	done
	row "live-reconfig:$t" "write 16M to disksize, zstd to comp_algorithm of the live $a device" \
		"EBUSY, data intact, each refusal logged (\"$msg_disksize\", \"$msg_comp\")" "${obs[*]}" "$lost" $res

	# A new default allocator only applies to new or reset devices.
	n=afmalloc/zspage
	[ "$a" != $n ] || n=zsmalloc
	try $zparam "$n"
	verify $dev "$img"
	res=pass
	[ "$got" = OK ] && shows $z/allocator "$a" && [ "$lost" = 0 ] || res=FAIL
	row "live-default:$t" "write $n to zram.default_allocator while the $a device is live" \
		"accepted, the live device stays on $a, data intact" \
		"$got, device shows $val, lost $lost" "$lost" $res

	# Reset garbage, then reset and hot_remove while open.
	obs=() res=pass
	for v in garbage 0 -1 65536; do
		try $z/reset "$v"
		obs+=("'$v': $got;")
		[[ "$got" =~ ^(EINVAL|ERANGE)$ ]] || res=FAIL
	done
	verify $dev "$img"
	readval $z/disksize
	[ "$lost" = 0 ] && [ "$val" = 4194304 ] || res=FAIL
	row "reset-garbage:$t" "write 'garbage', '0', '-1', '65536' to reset of the live $a device" \
		"EINVAL or ERANGE, device and data untouched" "${obs[*]} disksize $val, lost $lost" "$lost" $res
	exec 3<"/dev/$dev"
	holder=1
	obs=() res=pass
	try $z/reset 1
	obs+=("reset: $got;")
	[ "$got" = EBUSY ] || res=FAIL
	try $ctl/hot_remove "$id"
	obs+=("hot_remove: $got;")
	[ "$got" = EBUSY ] || res=FAIL
	verify $dev "$img"
	[ "$lost" = 0 ] && [ -b /dev/$dev ] || res=FAIL
	exec 3<&-
	holder=
	row "busy-open:$t" "reset and hot_remove of the live $a device while a process holds it open" \
		"EBUSY, device and data untouched" "${obs[*]} lost $lost" "$lost" $res

	# mem_limit just above what the pool holds; O_DIRECT 4 KiB writes of
	# incompressible data: 40 fresh blocks (600..639), then overwrites of
	# 8 pattern blocks (0..7).
	field $z/mm_stat 3
	limit=$((val + 65536))
	echo $limit > $z/mem_limit || die "mem_limit $limit on zram$id failed"
	field $z/io_stat 2
	fw0=$val
	b=()
	for n in $(seq 600 639) $(seq 0 7); do
		b+=("$n:$((n % 128))")
	done
	wblocks /dev/$dev "$img" "${b[@]}"
	ok=0 eio=0 other=()
	while read -r n got; do
		case $got in
		OK) ok=$((ok + 1)) ;;
		EIO) eio=$((eio + 1)) ;;
		*) other+=("block $n: $got") ;;
		esac
	done < "$work/wout"
	field $z/io_stat 2
	fw1=$val
	verify $dev "$img"
	res=pass
	[ $eio -gt 0 ] && [ ${#other[@]} -eq 0 ] && [ $((fw1 - fw0)) = $eio ] && [ "$lost" = 0 ] || res=FAIL
	row "mem-limit:$t" "mem_limit = mem_used_total + 64 KiB on the live $a device, 48 incompressible 4 KiB O_DIRECT writes (40 new, 8 overwrites)" \
		"each write succeeds or returns EIO, some fail, failed_writes counts them, a failed overwrite keeps the old block" \
		"ok $ok, EIO $eio${other:+, ${other[*]}}; failed_writes +$((fw1 - fw0)); device = expected image: $lost blocks differ" \
		"$lost" $res ops=48

	# The same through the page cache: the error must reach fsync.
	# Blocks 700..715 get rand blocks 64..79; each must end up old or new.
	res=pass
	if dd if="$work/rand" of=/dev/$dev bs=4096 skip=64 seek=700 count=16 \
	      conv=notrunc,fsync status=none 2>"$work/err"; then
		got=OK
		res=FAIL
	else
		IFS= read -r msg < "$work/err" || true
		errname "$msg"
		got=$errno
		[ "$got" = EIO ] || res=FAIL
	fi
	cp "$img" "$work/new"
	dd if="$work/rand" of="$work/new" bs=4096 skip=64 seek=700 count=16 conv=notrunc status=none
	verify $dev "$img"
	blocks "$work/read" "$img" > "$work/not-old"
	blocks "$work/read" "$work/new" > "$work/not-new"
	lost=$(comm -12 "$work/not-old" "$work/not-new" | wc -l)
	n=$(wc -l < "$work/not-old")
	cp "$work/read" "$img"	# now the expected image, if lost is 0
	[ "$lost" = 0 ] || res=FAIL
	row "mem-limit-buffered:$t" "same limit, 16 incompressible 4 KiB buffered writes with fsync (dd conv=fsync)" \
		"dd fails with EIO, every block holds its old or its new content" \
		"dd: $got; $n of 16 blocks new, the rest old; blocks neither old nor new: $lost" \
		"$lost" $res ops=16

	# Past the end of the device, then lift the limit: every block can be
	# written again.
	echo 0 > $z/mem_limit
	b=(1024:0)
	for n in $(seq 600 639) $(seq 0 7); do
		b+=("$n:$(((n + 1) % 128))")
	done
	wblocks /dev/$dev "$img" "${b[@]}"
	ok=0 other=() pe=missing
	while read -r n got; do
		if [ "$n" = 1024 ]; then
			pe=$got
		elif [ "$got" = OK ]; then
			ok=$((ok + 1))
		else
			other+=("block $n: $got")
		fi
	done < "$work/wout"
	got=$pe
	verify $dev "$img"
	res=pass
	[ "$got" = ENOSPC ] && [ "$lost" = 0 ] || res=FAIL
	row "write-past-end:$t" "4 KiB O_DIRECT write at offset 4 MiB of the 4 MiB $a device" \
		"ENOSPC, data intact" "$got, lost $lost" "$lost" $res
	res=pass
	[ $ok = 48 ] && [ "$lost" = 0 ] || res=FAIL
	row "mem-limit-lifted:$t" "mem_limit 0 on the $a device, the 48 blocks written again" \
		"all 48 writes succeed, device = expected image" \
		"ok $ok${other:+, ${other[*]}}; $lost blocks differ" "$lost" $res ops=48

	# Reset of the idle device: accepted, back on the default allocator.
	readval $zparam
	n=$val
	idle_try $z/reset 1
	res=pass
	readval $z/disksize
	obs="$got, disksize $val"
	[ "$got" = OK ] && [ "$val" = 0 ] || res=FAIL
	shows $z/allocator "$n" || res=FAIL
	row "reset-idle:$t" "reset of the idle $a device (default_allocator $n)" \
		"accepted, disksize 0, allocator back to $n" "$obs, allocator $val" 0 $res
	echo "$default0" > $zparam
	hot_remove "$id"
}

IFS=, read -r -a alist <<< "$allocs"
for a in "${alist[@]}"; do
	live "$a"
done

# --------------------------------------------------- mounted file system

hot_add
z=/sys/block/zram$id
try $z/allocator afmalloc/zspage
[ "$got" = OK ] || die "selecting afmalloc/zspage on zram$id: $got"
echo 32M > $z/disksize || die "disksize 32M on zram$id failed"
mkfs.ext4 -q -F /dev/zram$id || die "mkfs.ext4 on zram$id failed"
mnt=$work/mnt
mkdir -p "$mnt"
mount /dev/zram$id "$mnt" || die "mounting zram$id failed"
cp "$work/pattern" "$mnt/pattern"
sync
obs=() res=pass
klog "$msg_alloc"
n=$klog
klog "$msg_disksize"
n2=$klog
for f in reset:1 allocator:zsmalloc allocator:afmalloc/zspage disksize:64M; do
	try $z/${f%%:*} "${f#*:}"
	obs+=("${f%%:*} ${f#*:}: $got;")
	[ "$got" = EBUSY ] || res=FAIL
done
klog "$msg_alloc"
n=$((klog - n))
klog "$msg_disksize"
n2=$((klog - n2))
obs+=("kernel log: $n \"$msg_alloc\", $n2 \"$msg_disksize\";")
[ $n -eq 2 ] && [ $n2 -eq 1 ] || res=FAIL
try $ctl/hot_remove "$id"
obs+=("hot_remove: $got;")
[ "$got" = EBUSY ] || res=FAIL
echo 3 > /proc/sys/vm/drop_caches
lost=$(blocks "$mnt/pattern" "$work/pattern" | wc -l)
[ "$lost" = 0 ] || res=FAIL
row mounted "reset, allocator zsmalloc and afmalloc/zspage, disksize, hot_remove of an afmalloc/zspage device with ext4 mounted (2 MiB file)" \
	"each EBUSY, allocator and disksize refusals logged, the file reads back after dropping caches" "${obs[*]} file: $lost blocks differ" "$lost" $res
umount "$mnt"
mnt=
idle_try $ctl/hot_remove "$id"
res=pass obs="$got, gone"
[ -e $z ] && { res=FAIL; obs="$got, still there"; }
[ "$got" = OK ] || res=FAIL
row mounted "hot_remove of the same device after umount (initialised, idle)" "accepted, device gone" \
	"$obs" 0 $res
[ "$got" != OK ] || forget "$id"

# ---------------------------------------------- afmalloc module parameters

pdir=/sys/module/afmalloc/parameters
if [ -d $pdir ]; then
	for p in $pdir/*; do
		[ -w "$p" ] || continue
		case ${p##*/} in
		zswap_store)
			# Names that reach the parameter (at most 4 KiB) must
			# each say why they are refused in the kernel log.
			obs=() res=pass
			for v in garbage $'\n' zspagex SLAB ' slab' $'slab\n\n'; do
				klog "$msg_store"
				n=$klog
				refuse module-param "$p" "$v" 'EINVAL|E2BIG'
				klog "$msg_store"
				show "$v"
				obs+=("$shown: +$((klog - n));")
				[ $((klog - n)) -ge 1 ] || res=FAIL
			done
			row module-param "write 6 unknown store names to ${p#/sys/}" \
				"each refusal logged: \"$msg_store '...'\"" "kernel log lines per name: ${obs[*]}" 0 $res
			refuse module-param "$p" "$long5000" 'EINVAL|E2BIG'
			readval "$p"
			old=$val
			refuse module-param "$p" $'slab\n' OK "reads back slab"
			readval "$p"
			[ "$val" = slab ] || row module-param "read ${p#/sys/} after writing slab" slab "$val" 0 FAIL
			echo "$old" > "$p" ;;
		zspage_auto_permille)
			# 0 to 1000 (param_set_uint_minmax()).
			for v in garbage -1 1.5 1001 4294967296 $'\n' 0x; do
				refuse module-param "$p" "$v" 'EINVAL|ERANGE'
			done ;;
		zspage_shards)
			# 0 to 64, AFM_ZS_MAX_SHARDS (param_set_uint_minmax()):
			# more is refused, not cut down to 64 unseen.
			for v in garbage -1 65 1000 4294967296 $'\n' 1.5; do
				refuse module-param "$p" "$v" 'EINVAL|ERANGE'
			done
			takes "$p" 64 64 ;;
		zspage_align)
			for v in garbage 0 3 24 128 -1 $'\n'; do
				refuse module-param "$p" "$v" 'EINVAL|ERANGE'
			done ;;
		zspage_handle_mag)
			# 0 to 16 (param_set_uint_minmax()).
			for v in garbage 17 -1 4294967296 $'\n' 1.5; do
				refuse module-param "$p" "$v" 'EINVAL|ERANGE'
			done
			takes "$p" 0 0 ;;
		zspage_contig|zspage_compact_holes|zspage_short|zspage_shards_grow|\
		zspage_handle_phases)
			# bool: only y/n/1/0/on/off (kstrtobool()) are taken.
			for v in garbage 2 -1 x $'\n'; do
				refuse module-param "$p" "$v" EINVAL
			done
			takes "$p" n N ;;
		*)
			refuse module-param "$p" garbage 'EINVAL|ERANGE' "parameter not known to this test" ;;
		esac
	done
else
	row module-param "list $pdir" "afmalloc's run-time parameters present" "no such folder" 0 FAIL
fi

say "$rows rows in $((SECONDS - t0)) s"
[ "$nfail" -eq 0 ] || die "$nfail of $rows rows"
say PASS
