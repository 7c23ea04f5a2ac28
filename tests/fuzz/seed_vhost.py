#!/usr/bin/python3
# Seeds for fuzz_vhost (make fuzz): well-formed inputs that reach deep states
# (rings with control requests, WQEs and CQ buffers; a full resource
# lifecycle), so the fuzzer mutates from there. Usage: seed_vhost.py DIR
import sys as _sys
OUT = _sys.argv[1]
import struct, sys
GPA = 0x100000000
STRIDE, AV, US = 224, 128, 152
mem = bytearray(4096)
def desc(q, i, addr, ln, flags, nxt=0):
    struct.pack_into('<QIHH', mem, q*STRIDE + i*16, GPA + addr, ln, flags, nxt)
def avail(q, ring):
    struct.pack_into('<HH' + 'H'*len(ring), mem, q*STRIDE + AV, 0, len(ring), *ring)
NEXT, WRITE = 1, 2
# control queue: CREATE_PD, CREATE_CQ(16), CREATE_CQ(16), CREATE_QP(RC)
mem[0xc00] = 4
desc(0, 0, 0xc00, 1, NEXT, 1); desc(0, 1, 0xc40, 5, WRITE)
struct.pack_into('<BI', mem, 0xc80, 2, 16)
desc(0, 2, 0xc80, 5, NEXT, 3); desc(0, 3, 0xcc0, 5, WRITE)
qp = struct.pack('<IBBHIIIIII I32x', 0, 2, 0, 0, 16, 2, 0, 16, 2, 0, 64)
assert len(qp) == 68
mem[0xd00] = 11; mem[0xd01:0xd01+68] = qp
desc(0, 4, 0xd00, 69, NEXT, 5); desc(0, 5, 0xd80, 5, WRITE)
avail(0, [0, 2, 4])
# CQ 0 (queue 1): 4 CQE buffers
for i in range(4):
    desc(1, i, 0xe00 + 64*i, 64, WRITE)
avail(1, [0, 1, 2, 3])
# SQ of slot 0 (queue 5): SEND, one SGE
wqe = struct.pack('<IIIIQII', 1, 2, 2, 0, 0x51, 0, 0) + bytes(56) + struct.pack('<QII', GPA + 0xa00, 64, 0)
assert len(wqe) == 104
mem[0xf40:0xf40+104] = wqe
desc(5, 0, 0xf40, 104, 0); avail(5, [0])
# RQ of slot 0 (queue 6): one SGE
rwqe = struct.pack('<IIQQII', 1, 0, 0x52, GPA + 0xa80, 64, 0)
mem[0xf00:0xf00+32] = rwqe
desc(6, 0, 0xf00, 32, 0); avail(6, [0])
recs = bytes([1, 0, 0]) * 4
open(OUT + '/all_queues', 'wb').write(bytes([0x0b]) + mem + recs)
open(OUT + '/ctrl_only', 'wb').write(bytes([0x07]) + mem + recs)
open(OUT + '/fixed', 'wb').write(bytes([0x1b]) + mem + recs)
open(OUT + '/handshake', 'wb').write(bytes([0x01]))
# A hostile front end's fds (hint bit 3): a blocking pipe as a call fd, an
# unsealed memfd as memory; then the rings of all queues as above.
odd = bytes([13, 8, 0x09]) + bytes(8) + bytes([5, 255, 0x09])
open(OUT + '/odd_fds', 'wb').write(bytes([0x0b]) + mem + odd + recs)
