// SPDX-License-Identifier: GPL-2.0-only
/* RoCEv2 opcode table: header layout computed from the flags at compile time,
 * so a row cannot disagree with itself. */
#include "opcode.h"

#define F(x) ROCE_F_##x
#define HAS(m, x) (((m) & ROCE_F_##x) ? 1 : 0)
/* Offsets follow the wire order DETH, RETH, AtomicETH, AETH, AtomicAckETH,
 * ImmDt, IETH (9.2.1). */
#define O_DETH(m)	12
#define O_RETH(m)	(O_DETH(m) + 8 * HAS(m, DETH))
#define O_ATMETH(m)	(O_RETH(m) + 16 * HAS(m, RETH))
#define O_AETH(m)	(O_ATMETH(m) + 28 * HAS(m, ATMETH))
#define O_ATMACK(m)	(O_AETH(m) + 4 * HAS(m, AETH))
#define O_IMMDT(m)	(O_ATMACK(m) + 8 * HAS(m, ATMACK))
#define O_IETH(m)	(O_IMMDT(m) + 4 * HAS(m, IMMDT))
#define HLEN(m)		(O_IETH(m) + 4 * HAS(m, IETH) + 16 * HAS(m, CNPRSV))

#define OP(code, nm, type, m) [code] = {					\
	.name = nm, .mask = (m), .qpt = ROCE_QPT_##type, .hdr_len = HLEN(m),	\
	.off = { O_DETH(m), O_RETH(m), O_ATMETH(m), O_AETH(m), O_ATMACK(m),	\
		 O_IMMDT(m), O_IETH(m) } }

/* The SEND and WRITE families are the same for RC and UC. */
#define SEND_WRITE(base, T)							\
	OP(base + 0x00, #T "_SEND_FIRST", T, F(REQ) | F(SEND) | F(START) | F(PAYLOAD)), \
	OP(base + 0x01, #T "_SEND_MIDDLE", T, F(REQ) | F(SEND) | F(MIDDLE) | F(PAYLOAD)), \
	OP(base + 0x02, #T "_SEND_LAST", T, F(REQ) | F(SEND) | F(END) | F(PAYLOAD)), \
	OP(base + 0x03, #T "_SEND_LAST_WITH_IMMEDIATE", T,			\
	   F(REQ) | F(SEND) | F(END) | F(PAYLOAD) | F(IMMDT)),			\
	OP(base + 0x04, #T "_SEND_ONLY", T,					\
	   F(REQ) | F(SEND) | F(START) | F(END) | F(PAYLOAD)),			\
	OP(base + 0x05, #T "_SEND_ONLY_WITH_IMMEDIATE", T,			\
	   F(REQ) | F(SEND) | F(START) | F(END) | F(PAYLOAD) | F(IMMDT)),	\
	OP(base + 0x06, #T "_RDMA_WRITE_FIRST", T,				\
	   F(REQ) | F(WRITE) | F(START) | F(PAYLOAD) | F(RETH)),		\
	OP(base + 0x07, #T "_RDMA_WRITE_MIDDLE", T, F(REQ) | F(WRITE) | F(MIDDLE) | F(PAYLOAD)), \
	OP(base + 0x08, #T "_RDMA_WRITE_LAST", T, F(REQ) | F(WRITE) | F(END) | F(PAYLOAD)), \
	OP(base + 0x09, #T "_RDMA_WRITE_LAST_WITH_IMMEDIATE", T,		\
	   F(REQ) | F(WRITE) | F(END) | F(PAYLOAD) | F(IMMDT)),			\
	OP(base + 0x0a, #T "_RDMA_WRITE_ONLY", T,				\
	   F(REQ) | F(WRITE) | F(START) | F(END) | F(PAYLOAD) | F(RETH)),	\
	OP(base + 0x0b, #T "_RDMA_WRITE_ONLY_WITH_IMMEDIATE", T,		\
	   F(REQ) | F(WRITE) | F(START) | F(END) | F(PAYLOAD) | F(RETH) | F(IMMDT))

const struct roce_opcode_info roce_opcodes[256] = {
	SEND_WRITE(0x00, RC),
	OP(0x0c, "RC_RDMA_READ_REQUEST", RC, F(REQ) | F(READ) | F(START) | F(END) | F(RETH)),
	OP(0x0d, "RC_RDMA_READ_RESPONSE_FIRST", RC,
	   F(RESP) | F(READ) | F(START) | F(PAYLOAD) | F(AETH)),
	OP(0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", RC, F(RESP) | F(READ) | F(MIDDLE) | F(PAYLOAD)),
	OP(0x0f, "RC_RDMA_READ_RESPONSE_LAST", RC,
	   F(RESP) | F(READ) | F(END) | F(PAYLOAD) | F(AETH)),
	OP(0x10, "RC_RDMA_READ_RESPONSE_ONLY", RC,
	   F(RESP) | F(READ) | F(START) | F(END) | F(PAYLOAD) | F(AETH)),
	OP(0x11, "RC_ACKNOWLEDGE", RC, F(RESP) | F(ACK) | F(START) | F(END) | F(AETH)),
	OP(0x12, "RC_ATOMIC_ACKNOWLEDGE", RC,
	   F(RESP) | F(ACK) | F(ATOMIC) | F(START) | F(END) | F(AETH) | F(ATMACK)),
	OP(0x13, "RC_COMPARE_SWAP", RC, F(REQ) | F(ATOMIC) | F(START) | F(END) | F(ATMETH)),
	OP(0x14, "RC_FETCH_ADD", RC, F(REQ) | F(ATOMIC) | F(START) | F(END) | F(ATMETH)),
	OP(0x16, "RC_SEND_LAST_WITH_INVALIDATE", RC,
	   F(REQ) | F(SEND) | F(END) | F(PAYLOAD) | F(IETH)),
	OP(0x17, "RC_SEND_ONLY_WITH_INVALIDATE", RC,
	   F(REQ) | F(SEND) | F(START) | F(END) | F(PAYLOAD) | F(IETH)),
	SEND_WRITE(0x20, UC),
	OP(0x64, "UD_SEND_ONLY", UD, F(REQ) | F(SEND) | F(START) | F(END) | F(PAYLOAD) | F(DETH)),
	OP(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", UD,
	   F(REQ) | F(SEND) | F(START) | F(END) | F(PAYLOAD) | F(DETH) | F(IMMDT)),
	OP(0x81, "CNP", CNP, F(CNP) | F(CNPRSV)),
};
