#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write 200 deterministic files of varied size and compressibility.

    gen-files.py DIR

File i has (i * 7919) % 65536 + 1 bytes and is, by i % 4: zeros (zram's
same-filled pages), repeated text (compressible), pseudo-random bytes
(incompressible: zram's huge pages), or half random, half one letter.
One process for all 200 files: forking per file costs minutes in a TCG
guest running the debug kernel.
"""
import os
import random
import sys

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
r = random.Random(99)
for i in range(200):
    size = (i * 7919) % 65536 + 1
    k = i % 4
    if k == 0:
        b = bytes(size)
    elif k == 1:
        b = (b"afmalloc line %d\n" % i * (size // 16 + 1))[:size]
    elif k == 2:
        b = r.randbytes(size)
    else:
        b = r.randbytes(size // 2) + b"x" * (size - size // 2)
    with open(os.path.join(d, "f%d" % i), "wb") as f:
        f.write(b)
