#!/usr/bin/python3
# Seeds for fuzz_ctrl (make fuzz): well-formed inputs that reach deep states
# (rings with control requests, WQEs and CQ buffers; a full resource
# lifecycle), so the fuzzer mutates from there. Usage: seed_ctrl.py DIR
import sys as _sys
OUT = _sys.argv[1]
import struct
GPA = 0x100000000
def rec(cmd, payload, fix=False):
    n = len(payload)
    if n < 128:
        return bytes([cmd | (0x80 if fix else 0), n]) + payload
    return bytes([cmd | (0x80 if fix else 0), 0x80]) + payload
def qp_attr(state, **kw):
    a = bytearray(136)
    a[0] = state
    for k, (off, fmt, val) in kw.items():
        struct.pack_into(fmt, a, off, val)
    return bytes(a)
def ah(dgid, sgid_index=0, hop=64, flags=1, port=1, dmac=b'\x02\0\0\0\0\x02'):
    a = bytearray(36)
    a[0:16] = dgid
    struct.pack_into('<IBBB', a, 16, 0, sgid_index, hop, 0)
    a[24] = 0; a[25] = 0; a[26] = port; a[27] = flags; a[28:34] = dmac
    return bytes(a)
dgid = bytes(10) + b'\xff\xff' + bytes([10, 0, 0, 2])
# page array at guest offset 0: 4 pages at 0x1000..0x4000
chunk = b''.join(struct.pack('<Q', GPA + 0x1000 * (i + 1)) for i in range(8))
chunk += bytes(64 - len(chunk) % 64) if len(chunk) % 64 else b''
hdr = bytes([len(chunk) // 64])
r = b''
r += rec(1, b'\x01')                                    # QUERY_PORT
r += rec(4, b'')                                        # CREATE_PD -> 0
r += rec(2, struct.pack('<I', 64))                      # CREATE_CQ -> 0
r += rec(2, struct.pack('<I', 64))                      # CREATE_CQ -> 1
qp = struct.pack('<IBBHIIIIII I32x', 0, 2, 0, 0, 16, 2, 0, 16, 2, 1, 64)
r += rec(11, qp)                                        # CREATE_QP RC -> 16
r += rec(11, struct.pack('<IBBHIIIIII I32x', 0, 4, 0, 0, 16, 2, 0, 16, 2, 1, 64))  # UD -> 17
# INIT
init = qp_attr(1, pkey=(24, '<H', 0), port=(33, '<B', 1), acc=(20, '<I', 7))
r += rec(12, struct.pack('<II', 16, 1 | 8 | 16 | 32) + init, fix=True)
# RTR
a = bytearray(qp_attr(2, mtu=(2, '<B', 3), rq=(8, '<I', 100), dq=(16, '<I', 17),
                      mdra=(31, '<B', 1), rnr=(32, '<B', 12)))
a[64:100] = ah(dgid)
r += rec(12, struct.pack('<II', 16, 1 | 128 | 256 | (1 << 20) | (1 << 12) | (1 << 17) | (1 << 15)) + bytes(a), fix=True)
# RTS
rts = qp_attr(3, sq=(12, '<I', 200), to=(34, '<B', 14), rc=(35, '<B', 7), rr=(36, '<B', 7), mra=(30, '<B', 1))
r += rec(12, struct.pack('<II', 16, 1 | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 16) | (1 << 13)) + rts, fix=True)
r += rec(13, struct.pack('<II', 16, 0xffffffff), fix=True)       # QUERY_QP
r += rec(6, struct.pack('<II', 0, 7))                   # GET_DMA_MR
r += rec(7, struct.pack('<III', 0, 7, 16))              # CREATE_MR
r += rec(8, struct.pack('<IIQQQ', 2, 4, 0x10000, 0x4000, GPA))  # MAP_MR_SG mrn 2? 
r += rec(8, struct.pack('<IIQQQ', 1, 4, 0x10000, 0x4000, GPA))  # MAP_MR_SG mrn 1
r += rec(9, struct.pack('<IIQQQQII', 0, 7, 0x7f0000001000, 0x4000, 0x7f0000001000, GPA, 4, 0))  # REG_USER_MR
r += rec(15, struct.pack('<IHH', 1, 0, 0))              # QUERY_PKEY
r += rec(16, dgid + struct.pack('<IHHI', 1, 1, 0, 1))   # ADD_GID
r += rec(17, struct.pack('<HHI', 1, 0, 1))              # DEL_GID
r += rec(18, struct.pack('<II', 0, 2))                  # REQ_NOTIFY_CQ
r += rec(14, struct.pack('<I', 16), fix=True)                     # DESTROY_QP
r += rec(14, struct.pack('<I', 17), fix=True)
r += rec(19, struct.pack('<IIII', 0, 16, 1, 4))         # CREATE_SRQ -> 0, limit 4
r += rec(11, struct.pack('<IBBHIIIIIIIII24x', 0, 2, 0, 0, 16, 2, 0, 0, 0, 1, 0, 1, 0))  # RC on SRQ 0
r += rec(20, struct.pack('<IIII', 0, 2, 0, 2))          # MODIFY_SRQ limit 2
r += rec(21, struct.pack('<I', 0))                      # QUERY_SRQ
r += rec(22, struct.pack('<I', 0))                      # DESTROY_SRQ: BUSY
r += rec(23, struct.pack('<II', 0, 2))                  # ALLOC_MW type 2 -> 0
r += rec(23, struct.pack('<II', 0, 1))                  # ALLOC_MW type 1: UNSUPP
r += rec(24, struct.pack('<I', 0))                      # DEALLOC_MW
r += rec(9, struct.pack('<IIQQQQII', 0, 17, 0x7f0000001000, 0x4000, 0x7f0000001000, GPA, 4, 0))  # REG_USER_MR, MW_BIND
for m in range(4):
    r += rec(10, struct.pack('<I', m))                  # DEREG_MR
r += rec(3, struct.pack('<I', 0)) + rec(3, struct.pack('<I', 1))
r += rec(5, struct.pack('<I', 0))
open(OUT + '/lifecycle', 'wb').write(hdr + chunk + r)
# ABI v2's doorbell pages (bit 6: the driver negotiated VIRTIO_RDMA_F_RINGS)
def rec2(cmd, payload, fix=False):
    return bytes([cmd | 0x40 | (0x80 if fix else 0), len(payload)]) + payload
d = rec(25, struct.pack('<Q', GPA + 0x8000))            # ADD_DB_PAGE: UNSUPP (v1)
d += rec2(25, struct.pack('<Q', GPA + 0x8000))          # -> 0
d += rec2(25, struct.pack('<Q', GPA + 0x8000))          # the same page: INVAL
d += rec2(25, struct.pack('<Q', GPA + 0x9008))          # unaligned: INVAL
d += rec2(25, struct.pack('<Q', 0x12345), fix=True)      # -> 1
d += rec2(26, struct.pack('<I', 0))                     # DEL_DB_PAGE
d += rec2(26, struct.pack('<I', 0))                     # NOENT
d += rec2(25, struct.pack('<Q', GPA + 0x8000))          # -> 0 again
open(OUT + '/db_pages', 'wb').write(bytes([0]) + d)
# a CQ ring: its page list at guest offset 0 (the chunk), the ring at
# 0x2000, the doorbell page at 0x1000; a QP on it flushed to ERR
lst = struct.pack('<Q', GPA + 0x2000) + bytes(56)
c = rec2(25, struct.pack('<Q', GPA + 0x1000))            # ADD_DB_PAGE -> 0
c += rec2(27, struct.pack('<IIIIQ', 8, 0, 3, 1, GPA))     # CREATE_CQ_RING -> 0
c += rec2(27, struct.pack('<IIIIQ', 8, 0, 3, 1, GPA))     # bit taken: BUSY
c += rec2(4, b'')                                        # CREATE_PD -> 0
c += rec2(11, struct.pack('<IBBHIIIIII I32x', 0, 2, 0, 0, 16, 2, 0, 16, 2, 0, 64))  # RC on CQ 0
c += rec2(12, struct.pack('<II', 16, 1) + qp_attr(6), fix=True)   # to ERR
c += rec2(2, struct.pack('<I', 8))                       # CREATE_CQ: UNSUPP
c += rec2(18, struct.pack('<II', 0, 2))                  # REQ_NOTIFY_CQ: UNSUPP
c += rec2(14, struct.pack('<I', 16), fix=True)           # DESTROY_QP
c += rec2(3, struct.pack('<I', 0))                       # DESTROY_CQ
c += rec2(26, struct.pack('<I', 0))                      # DEL_DB_PAGE
open(OUT + '/cq_ring', 'wb').write(bytes([1]) + lst + c)
# a QP on rings: SQ ring at 0x3000 (4 x 256), RQ ring at 0x4000 (4 x 64);
# lists at offsets 0 (CQ ring), 8 (SQ), 16 (RQ)
lst = struct.pack('<QQQ', GPA + 0x2000, GPA + 0x3000, GPA + 0x4000) + bytes(40)
qpr = struct.pack('<IBBHIIIIII I32x', 0, 2, 0, 0, 2, 1, 0, 2, 1, 0, 0)   # RC, 2 WRs of 1 SGE
qpr += struct.pack('<I', 0)                                             # dbn
qpr += struct.pack('<IIIIQ', 4, 256, 20, 1, GPA + 8)                    # SQ
qpr += struct.pack('<IIIIQ', 4, 64, 21, 1, GPA + 16)                    # RQ
def rec2x(cmd, payload, fix=False):
    return bytes([cmd | 0x40 | (0x80 if fix else 0), 0x80]) + payload
q = rec2(25, struct.pack('<Q', GPA + 0x1000))            # ADD_DB_PAGE -> 0
q += rec2(27, struct.pack('<IIIIQ', 8, 0, 3, 1, GPA))     # CREATE_CQ_RING -> 0
q += rec2(4, b'')                                        # CREATE_PD -> 0
q += rec2x(28, qpr)                                      # CREATE_QP_RING -> 16
q += rec2x(28, qpr)                                      # its bits taken: BUSY
q += rec2(12, struct.pack('<II', 16, 1 | 8 | 16 | 32) + qp_attr(1, pkey=(24, '<H', 0), port=(33, '<B', 1), acc=(20, '<I', 7)), fix=True)
q += rec2(14, struct.pack('<I', 16), fix=True)           # DESTROY_QP
q += rec2(3, struct.pack('<I', 0))                       # DESTROY_CQ
q += rec2(26, struct.pack('<I', 0))                      # DEL_DB_PAGE
open(OUT + '/qp_ring', 'wb').write(bytes([1]) + lst + q)
# an SRQ ring at 0x4000 (4 x 64, bit 21) and an RC QP ring on it (its SQ
# ring at 0x3000, no RQ ring); the same lists
srq = struct.pack('<IIII', 0, 2, 1, 0) + struct.pack('<II', 0, 0)         # 2 WRs of 1 SGE, dbn 0
srq += struct.pack('<IIIIQ', 4, 64, 21, 1, GPA + 16)
qps = struct.pack('<IBBHIIIIIIIII24x', 0, 2, 0, 0, 2, 1, 0, 0, 0, 0, 0, 1, 0)  # RC on SRQ 0
qps += struct.pack('<I', 0) + struct.pack('<IIIIQ', 4, 256, 20, 1, GPA + 8) + bytes(24)
s = rec2(25, struct.pack('<Q', GPA + 0x1000))            # ADD_DB_PAGE -> 0
s += rec2(27, struct.pack('<IIIIQ', 8, 0, 3, 1, GPA))     # CREATE_CQ_RING -> 0
s += rec2(4, b'')                                        # CREATE_PD -> 0
s += rec2(19, struct.pack('<IIII', 0, 2, 1, 0))          # CREATE_SRQ: UNSUPP
s += rec2(29, srq)                                       # CREATE_SRQ_RING -> 0
s += rec2(29, srq)                                       # its bit taken: BUSY
s += rec2x(28, qps)                                      # CREATE_QP_RING on it -> 16
s += rec2(12, struct.pack('<II', 16, 1 | 8 | 16 | 32) + qp_attr(1, pkey=(24, '<H', 0), port=(33, '<B', 1), acc=(20, '<I', 7)), fix=True)
s += rec2(22, struct.pack('<I', 0))                      # DESTROY_SRQ: BUSY
s += rec2(14, struct.pack('<I', 16), fix=True)           # DESTROY_QP
s += rec2(22, struct.pack('<I', 0))                      # DESTROY_SRQ
s += rec2(3, struct.pack('<I', 0))                       # DESTROY_CQ
s += rec2(26, struct.pack('<I', 0))                      # DEL_DB_PAGE
open(OUT + '/srq_ring', 'wb').write(bytes([1]) + lst + s)
