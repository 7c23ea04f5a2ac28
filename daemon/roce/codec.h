/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RoCEv2 packet codec: pure functions, no I/O. A frame is a chain of buffers
 * (one for frames that fit a UMEM chunk; more for multi-buffer frames); all
 * headers must be in the first buffer.
 */
#ifndef VRDMAD_CODEC_H
#define VRDMAD_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "opcode.h"
#include "roce_wire.h"

struct roce_frag {
	uint8_t *data;
	uint32_t len;		/* bytes in it (parse) or room in it (build) */
};

/* Where a packet goes: a QP's path (the address vector). */
struct roce_addr {
	uint8_t dmac[6], smac[6];
	int32_t vlan;		/* -1: untagged; else the 802.1Q TCI (PCP << 13 | VID) */
	uint8_t sgid[16], dgid[16]; /* ::ffff:a.b.c.d means IPv4 */
	uint16_t sport;		/* UDP source port: per-flow entropy (A17.4.2) */
	uint8_t tclass;		/* IPv4 TOS / IPv6 traffic class (DSCP << 2 | ECN) */
	uint8_t hop_limit;	/* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label;	/* IPv6 only (20 bits) */
	uint16_t ip_id;		/* IPv4 only */
};

/* The BTH and the extension headers the opcode has; fields of headers the
 * opcode lacks are ignored when building and zero after parsing. */
struct roce_hdrs {
	uint8_t opcode;
	bool se, mig, fecn, becn, ackreq;
	uint8_t pad;		/* parse only: build derives it from the payload */
	uint16_t pkey;
	uint32_t dqpn, psn;
	struct { uint64_t va; uint32_t rkey, len; } reth;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add, compare; } atomic;
	uint64_t atomic_orig;	/* AtomicAckETH */
	struct { uint32_t qkey, sqpn; } deth;
	uint32_t imm;		/* ImmDt, network byte order */
	uint32_t ieth_rkey;
};

/* A parsed, validated frame. Offsets count from the start of the frame. */
struct roce_pkt {
	struct roce_addr addr;	/* dmac: ours; smac, sgid: the sender's */
	bool ipv6;
	struct roce_hdrs h;
	const struct roce_opcode_info *op;
	uint32_t l3_off, l4_off, bth_off;
	uint32_t payload_off, payload_len; /* payload without pad */
	uint32_t len;		/* Ethernet through ICRC (Ethernet padding excluded) */
	uint32_t icrc;
	const struct roce_frag *frags;
	unsigned int nfrags;
};

/* Why a received frame was dropped, in the order the checks run. */
enum roce_drop {
	ROCE_DROP_SHORT,	/* shorter than Ethernet (+ VLAN) + IP header */
	ROCE_DROP_ETHERTYPE,	/* neither IPv4 nor IPv6 */
	ROCE_DROP_IP_HEADER,	/* bad version or IHL; IPv6 with an IPv4-mapped address */
	ROCE_DROP_IP_LENGTH,	/* IP length beyond the frame, or too small */
	ROCE_DROP_IP_FRAGMENT,	/* RoCEv2 is never fragmented */
	ROCE_DROP_IP_CHECKSUM,
	ROCE_DROP_NOT_UDP,
	ROCE_DROP_UDP_PORT,	/* destination port is not 4791 */
	ROCE_DROP_UDP_LENGTH,	/* disagrees with the IP length */
	ROCE_DROP_BTH_VERSION,	/* TVer != 0 */
	ROCE_DROP_OPCODE,	/* not in the table */
	ROCE_DROP_HEADER_LENGTH, /* too short for the opcode's headers + ICRC */
	ROCE_DROP_PAD,		/* pad without payload room, or payload where none may be */
	ROCE_DROP_ICRC,
	ROCE_DROP_MAX,
};

const char *roce_drop_name(enum roce_drop d);

/* Headers must be within frags[0]. Returns 0 and fills *pkt, or -EBADMSG
 * and sets *why. pkt keeps pointers to frags. */
int roce_parse(struct roce_pkt *pkt, const struct roce_frag *frags, unsigned int nfrags,
	       enum roce_drop *why);

/* The same for a frame whose ICRC is known to be right (one this process
 * built, or one it parsed before): every check but the CRC, which is most
 * of the cost. */
int roce_parse_checked(struct roce_pkt *pkt, const struct roce_frag *frags, unsigned int nfrags,
		       enum roce_drop *why);

/* Copy len bytes of the payload, from byte off of it, into dst. */
int roce_pkt_copy_payload(const struct roce_pkt *pkt, uint32_t off, void *dst, uint32_t len);

/* Build one frame into out[] (room in each .len; headers go in out[0]) from
 * the path, the headers and a payload scatter list (opcodes without payload
 * take none). Pad, IPv4 checksum and ICRC are filled in. Returns the frame
 * length and sets *nused to the buffers used (their .len is not changed), or
 * -EINVAL (unknown opcode, payload where none may be), -EMSGSIZE (no room). */
int roce_build(struct roce_frag *out, unsigned int nout, unsigned int *nused,
	       const struct roce_addr *a, const struct roce_hdrs *h,
	       const struct roce_frag *payload, unsigned int npayload);

/* Bytes of headers (Ethernet to extension headers) and of overhead
 * (headers + ICRC) for an opcode on a path: for MTU arithmetic. */
uint32_t roce_header_len(const struct roce_addr *a, uint8_t opcode);

/* The IPv4 header checksum of h (len bytes, even): 0 over a correct header. */
uint16_t roce_ipv4_checksum(const uint8_t *h, unsigned int len);

#endif
