/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The 256-entry RoCEv2 opcode table (IBA 1.4 vol 1, 9.2.1 table 38, and
 * Annex A17 for the CNP). Code tests the flags, never opcode numbers.
 */
#ifndef VRDMAD_OPCODE_H
#define VRDMAD_OPCODE_H

#include <stdint.h>

enum roce_qpt { ROCE_QPT_NONE, ROCE_QPT_RC, ROCE_QPT_UC, ROCE_QPT_UD, ROCE_QPT_CNP };

enum roce_op_flag {
	/* extension headers present, in wire order (9.2.1) */
	ROCE_F_DETH	= 1u << 0,
	ROCE_F_RETH	= 1u << 1,
	ROCE_F_ATMETH	= 1u << 2,
	ROCE_F_AETH	= 1u << 3,
	ROCE_F_ATMACK	= 1u << 4,
	ROCE_F_IMMDT	= 1u << 5,
	ROCE_F_IETH	= 1u << 6,
	ROCE_F_CNPRSV	= 1u << 7,	/* the CNP's 16 reserved bytes */
	/* meaning */
	ROCE_F_REQ	= 1u << 8,	/* sent by a requester */
	ROCE_F_RESP	= 1u << 9,	/* sent by a responder: ACK, READ response */
	ROCE_F_START	= 1u << 10,	/* FIRST or ONLY */
	ROCE_F_MIDDLE	= 1u << 11,
	ROCE_F_END	= 1u << 12,	/* LAST or ONLY */
	ROCE_F_PAYLOAD	= 1u << 13,	/* may carry data */
	ROCE_F_SEND	= 1u << 14,	/* consumes a receive WQE */
	ROCE_F_WRITE	= 1u << 15,
	ROCE_F_READ	= 1u << 16,	/* READ request or response */
	ROCE_F_ATOMIC	= 1u << 17,	/* atomic request or atomic ACK */
	ROCE_F_ACK	= 1u << 18,	/* ACKNOWLEDGE / ATOMIC ACKNOWLEDGE */
	ROCE_F_IMM	= ROCE_F_IMMDT,	/* carries immediate data */
	ROCE_F_INV	= ROCE_F_IETH,	/* invalidates an rkey */
	ROCE_F_CNP	= 1u << 19,	/* congestion notification */
};

enum roce_ext {	/* index into roce_opcode_info.off[] */
	ROCE_EXT_DETH, ROCE_EXT_RETH, ROCE_EXT_ATMETH, ROCE_EXT_AETH,
	ROCE_EXT_ATMACK, ROCE_EXT_IMMDT, ROCE_EXT_IETH, ROCE_EXT_MAX,
};

struct roce_opcode_info {
	const char *name;	/* NULL: not an opcode we know */
	uint32_t mask;		/* enum roce_op_flag */
	uint8_t qpt;		/* enum roce_qpt */
	uint8_t hdr_len;	/* BTH + extension headers (+ CNP reserved) */
	uint8_t off[ROCE_EXT_MAX]; /* each extension header's offset from the BTH */
};

extern const struct roce_opcode_info roce_opcodes[256];

static inline const struct roce_opcode_info *roce_opcode(uint8_t op)
{
	return roce_opcodes[op].name ? &roce_opcodes[op] : 0;
}

/* Opcode numbers, for building packets and for tests. */
enum {
	ROCE_RC_SEND_FIRST = 0x00, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST,
	ROCE_RC_SEND_LAST_IMM, ROCE_RC_SEND_ONLY, ROCE_RC_SEND_ONLY_IMM,
	ROCE_RC_WRITE_FIRST, ROCE_RC_WRITE_MIDDLE, ROCE_RC_WRITE_LAST,
	ROCE_RC_WRITE_LAST_IMM, ROCE_RC_WRITE_ONLY, ROCE_RC_WRITE_ONLY_IMM,
	ROCE_RC_READ_REQUEST, ROCE_RC_READ_RESPONSE_FIRST, ROCE_RC_READ_RESPONSE_MIDDLE,
	ROCE_RC_READ_RESPONSE_LAST, ROCE_RC_READ_RESPONSE_ONLY, ROCE_RC_ACK,
	ROCE_RC_ATOMIC_ACK, ROCE_RC_COMPARE_SWAP, ROCE_RC_FETCH_ADD,
	ROCE_RC_SEND_LAST_INV = 0x16, ROCE_RC_SEND_ONLY_INV = 0x17,
	ROCE_UC_SEND_FIRST = 0x20, ROCE_UC_SEND_MIDDLE, ROCE_UC_SEND_LAST,
	ROCE_UC_SEND_LAST_IMM, ROCE_UC_SEND_ONLY, ROCE_UC_SEND_ONLY_IMM,
	ROCE_UC_WRITE_FIRST, ROCE_UC_WRITE_MIDDLE, ROCE_UC_WRITE_LAST,
	ROCE_UC_WRITE_LAST_IMM, ROCE_UC_WRITE_ONLY, ROCE_UC_WRITE_ONLY_IMM,
	ROCE_UD_SEND_ONLY = 0x64, ROCE_UD_SEND_ONLY_IMM = 0x65,
	ROCE_CNP = 0x81,
};

#endif
