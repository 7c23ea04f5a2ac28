#!/usr/bin/python3
# Seeds for fuzz_gring (make fuzz): rings that init (one page; a header
# page and scattered slot pages across both regions), each followed by
# operations of every kind, so the fuzzer mutates from accepted rings.
# The input format is fuzz_gring.c's. Usage: seed_gring.py DIR
import os
import struct
import sys

OUT = sys.argv[1]


def seed(name, entries, stride, pages, ops):
    b = struct.pack('<IIB', entries, stride, len(pages))
    b += b''.join(struct.pack('<Q', p) for p in pages)
    for op, a, val in ops:
        b += struct.pack('<BBHI', op, 0x3c, a, val)
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(b)


EVERY = [(0, 0, 0), (0, 8, 0), (1, 64, 5), (1, 72, 9), (2, 64, 3), (3, 64, 17),
         (4, 3, 0x10000), (5, 0, 0x41000), (6, 1, 0), (2, 64, 3), (7, 0, 0), (3, 64, 3)]
seed('one-page', 16, 64, [0x10000], EVERY)
seed('scattered', 8, 1024, [0x12000, 0x40000, 0x47000],
     [(2, 1024, 7), (3, 1024, 7), (6, 1, 0), (2, 1024, 7), (7, 0, 0), (3, 1000, 15)])
seed('big-slots', 4, 4096, [0x11000, 0x44000, 0x13000, 0x45000, 0x17000], EVERY)
