#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Sample an emulated guest's program counters through QEMU's monitor.

usage: bench/speed/pcsample.py --monitor SOCK --console LOG --start TEXT
                               --vmlinux VMLINUX --out TXT
                               [--delay S] [--seconds S] [--nm NM]
                               [--lines REGEX] [--addr2line A2L]

Where a guest kernel without user space spends its time (no perf there):
waits until TEXT appears in the guest's console LOG, waits --delay seconds
(default 3), then for --seconds (default 10) asks QEMU's monitor (the unix
socket SOCK, -monitor unix:SOCK,server,nowait) for every vCPU's registers
("info registers -a") as often as it answers, and writes TXT: the share of
the samples per kernel function (VMLINUX's symbols by address, read with
NM, default aarch64-linux-gnu-nm; the guest booted with nokaslr), idle
included. A sample costs the guest nothing but the monitor's pause.
With --lines, TXT also gets the samples of the functions whose names match
REGEX by source line (A2L, default aarch64-linux-gnu-addr2line, with the
chain of inlined calls): the monitor sees a vCPU's PC as of the start of
its last translation block, so a line stands for the block it starts.
"""
import argparse
import bisect
import collections
import re
import socket
import subprocess
import sys
import time


def monitor(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(10)

    def cmd(c):
        s.sendall((c + "\n").encode())
        buf = b""
        while not buf.rstrip().endswith(b"(qemu)"):
            chunk = s.recv(65536)
            if not chunk:
                sys.exit("pcsample: error: the monitor closed (the guest ended?)")
            buf += chunk
        return buf.decode(errors="replace")
    cmd("")
    return cmd


def symbols(nm, vmlinux):
    out = subprocess.run([nm, "-n", vmlinux], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tTwW":
            syms.append((int(p[0], 16), p[2]))
    if not syms:
        sys.exit(f"pcsample: error: no text symbols in {vmlinux}")
    return syms


def write_lines(f, args, at, total):
    """The samples of @at (PC -> count) by source line, inlined calls shown."""
    f.write(f"\n# by source line, functions matching '{args.lines}' "
            f"({sum(at.values())} samples): share, samples, line <- the lines it is inlined into\n")
    if not at:
        return
    pcs = sorted(at)
    # -i prints one or more lines per address; -a heads each with it.
    out = subprocess.run([args.addr2line, "-a", "-i", "-e", args.vmlinux] +
                         [hex(pc) for pc in pcs],
                         capture_output=True, text=True, check=True).stdout
    by = collections.Counter()
    chain = None
    chains = {}
    for line in out.splitlines():
        if line.startswith("0x"):
            chain = []
            chains[int(line, 16)] = chain
        elif chain is not None:
            chain.append(re.sub(r".*/(?=[^/]+/[^/]+:)", "", line.split(" (discriminator")[0]))
    for pc in pcs:
        key = " <- ".join(chains.get(pc, ["?"]))
        by[key] += at[pc]
    for key, n in by.most_common():
        if n * 1000 < total:
            break
        f.write(f"{100 * n / total:6.2f}% {n:7d} {key}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--monitor", required=True)
    ap.add_argument("--console", required=True)
    ap.add_argument("--start", required=True)
    ap.add_argument("--vmlinux", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--delay", type=float, default=3)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--nm", default="aarch64-linux-gnu-nm")
    ap.add_argument("--lines", help="also by source line, in functions matching this regex")
    ap.add_argument("--addr2line", default="aarch64-linux-gnu-addr2line")
    ap.add_argument("--wait", type=float, default=1800,
                    help="give up when TEXT has not come after this many seconds")
    args = ap.parse_args()
    syms = symbols(args.nm, args.vmlinux)
    t0 = time.time()
    while True:
        try:
            with open(args.console, errors="replace") as f:
                if args.start in f.read():
                    break
        except FileNotFoundError:
            pass
        if time.time() - t0 > args.wait:
            sys.exit(f"pcsample: error: '{args.start}' not in {args.console} "
                     f"after {args.wait:.0f} s")
        time.sleep(0.2)
    time.sleep(args.delay)
    cmd = monitor(args.monitor)
    pcs = []
    t0 = time.time()
    while time.time() - t0 < args.seconds:
        pcs += [int(x, 16) for x in re.findall(r"PC=([0-9a-f]{16})", cmd("info registers -a"))]
    if not pcs:
        sys.exit("pcsample: error: no PC in the monitor's answers")
    addrs = [a for a, _ in syms]
    c = collections.Counter()
    at = collections.Counter()
    want = re.compile(args.lines) if args.lines else None
    for pc in pcs:
        i = bisect.bisect_right(addrs, pc) - 1
        name = syms[i][1] if i >= 0 else "?"
        c[name] += 1
        if want and want.search(name):
            at[pc] += 1
    with open(args.out, "w") as f:
        f.write(f"# bench/speed/pcsample.py: {len(pcs)} samples of every vCPU's PC over "
                f"{args.seconds:g} s, from {args.delay:g} s after '{args.start}'\n")
        f.write("# share, samples, function (cpu_do_idle: an idle vCPU)\n")
        for name, n in c.most_common():
            if n * 1000 < len(pcs):
                break
            f.write(f"{100 * n / len(pcs):6.2f}% {n:7d} {name}\n")
        if want:
            write_lines(f, args, at, len(pcs))
    print(f"pcsample: {len(pcs)} samples -> {args.out}")


if __name__ == "__main__":
    main()
