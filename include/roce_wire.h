/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RoCEv2 wire format (IBA 1.4 vol 1 ch. 9 and Annex A17), in one place.
 * Headers are byte arrays in network order; only the accessors below read or
 * write them, so no other code swaps bytes or depends on alignment.
 *
 *   Ethernet [802.1Q] | IPv4 or IPv6 | UDP (dport 4791) | BTH | ext headers |
 *   payload | pad (to 4 bytes) | ICRC (4 bytes, little-endian)
 */
#ifndef ROCE_WIRE_H
#define ROCE_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "roce_defs.h"

#define ETH_TYPE_IPV4		0x0800
#define ETH_TYPE_IPV6		0x86dd
#define ETH_TYPE_VLAN		0x8100

struct eth_hdr { uint8_t b[14]; };	/* dst[6] src[6] type[2] */
struct vlan_tag { uint8_t b[4]; };	/* tci[2] type[2] */
struct ipv4_hdr { uint8_t b[20]; };	/* without options */
struct ipv6_hdr { uint8_t b[40]; };
struct udp_hdr { uint8_t b[8]; };
struct bth { uint8_t b[12]; };		/* Base Transport Header, 9.2 */
struct reth { uint8_t b[16]; };		/* RDMA ETH, 9.3.2 */
struct aeth { uint8_t b[4]; };		/* ACK ETH, 9.3.5 */
struct atomic_eth { uint8_t b[28]; };	/* Atomic ETH, 9.3.3 */
struct atomic_ack_eth { uint8_t b[8]; };	/* Atomic ACK ETH, 9.3.6 */
struct deth { uint8_t b[8]; };		/* Datagram ETH, 9.3.4 */
struct immdt { uint8_t b[4]; };		/* Immediate data, 9.3.7 */
struct ieth { uint8_t b[4]; };		/* Invalidate ETH, 9.3.8 */

_Static_assert(sizeof(struct eth_hdr) == 14, "eth");
_Static_assert(sizeof(struct vlan_tag) == 4, "vlan");
_Static_assert(sizeof(struct ipv4_hdr) == 20, "ipv4");
_Static_assert(sizeof(struct ipv6_hdr) == 40, "ipv6");
_Static_assert(sizeof(struct udp_hdr) == 8, "udp");
_Static_assert(sizeof(struct bth) == 12, "bth");
_Static_assert(sizeof(struct reth) == 16, "reth");
_Static_assert(sizeof(struct aeth) == 4, "aeth");
_Static_assert(sizeof(struct atomic_eth) == 28, "atomiceth");
_Static_assert(sizeof(struct atomic_ack_eth) == 8, "atomicacketh");
_Static_assert(sizeof(struct deth) == 8, "deth");
_Static_assert(sizeof(struct immdt) == 4, "immdt");
_Static_assert(sizeof(struct ieth) == 4, "ieth");

#define ROCE_ICRC_LEN		4
#define ROCE_CNP_RESERVED	16	/* zero bytes after a CNP's BTH (A17.9.3) */

/* Byte-order helpers on unaligned bytes. */
static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get24(const uint8_t *p) { return (uint32_t)p[0] << 16 | p[1] << 8 | p[2]; }
static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static inline void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static inline void put24(uint8_t *p, uint32_t v) { p[0] = v >> 16; p[1] = v >> 8; p[2] = v; }
static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}
static inline void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, v); }

/* BTH (9.2): opcode | SE M PadCnt(2) TVer(4) | P_Key(16) | FECN BECN resv6 |
 * DestQP(24) | AckReq resv7 | PSN(24) */
static inline uint8_t bth_opcode(const struct bth *h) { return h->b[0]; }
static inline int bth_se(const struct bth *h) { return h->b[1] >> 7; }
static inline int bth_mig(const struct bth *h) { return (h->b[1] >> 6) & 1; }
static inline unsigned int bth_pad(const struct bth *h) { return (h->b[1] >> 4) & 3; }
static inline unsigned int bth_tver(const struct bth *h) { return h->b[1] & 0xf; }
static inline uint16_t bth_pkey(const struct bth *h) { return get16(h->b + 2); }
static inline int bth_fecn(const struct bth *h) { return h->b[4] >> 7; }
static inline int bth_becn(const struct bth *h) { return (h->b[4] >> 6) & 1; }
static inline uint32_t bth_dqpn(const struct bth *h) { return get24(h->b + 5); }
static inline int bth_ackreq(const struct bth *h) { return h->b[8] >> 7; }
static inline uint32_t bth_psn(const struct bth *h) { return get24(h->b + 9); }
static inline void bth_set(struct bth *h, uint8_t opcode, int se, int mig, unsigned int pad,
			   uint16_t pkey, int fecn, int becn, uint32_t dqpn, int ackreq,
			   uint32_t psn)
{
	h->b[0] = opcode;
	h->b[1] = (uint8_t)((se ? 0x80 : 0) | (mig ? 0x40 : 0) | (pad & 3) << 4); /* TVer 0 */
	put16(h->b + 2, pkey);
	h->b[4] = (uint8_t)((fecn ? 0x80 : 0) | (becn ? 0x40 : 0));
	put24(h->b + 5, dqpn & ROCE_QPN_MASK);
	h->b[8] = ackreq ? 0x80 : 0;
	put24(h->b + 9, psn & ROCE_PSN_MASK);
}

/* RETH: VA(64) R_Key(32) DMALen(32) */
static inline uint64_t reth_va(const struct reth *h) { return get64(h->b); }
static inline uint32_t reth_rkey(const struct reth *h) { return get32(h->b + 8); }
static inline uint32_t reth_len(const struct reth *h) { return get32(h->b + 12); }
static inline void reth_set(struct reth *h, uint64_t va, uint32_t rkey, uint32_t len)
{
	put64(h->b, va); put32(h->b + 8, rkey); put32(h->b + 12, len);
}

/* AETH: Syndrome(8) MSN(24); syndrome = 0b0xx ACK, 0b01x RNR NAK, 0b11x NAK (9.7.5.1) */
static inline uint8_t aeth_syndrome(const struct aeth *h) { return h->b[0]; }
static inline uint32_t aeth_msn(const struct aeth *h) { return get24(h->b + 1); }
static inline void aeth_set(struct aeth *h, uint8_t syndrome, uint32_t msn)
{
	h->b[0] = syndrome; put24(h->b + 1, msn);
}

/* AtomicETH: VA(64) R_Key(32) SwapOrAdd(64) Compare(64) */
static inline uint64_t atomic_eth_va(const struct atomic_eth *h) { return get64(h->b); }
static inline uint32_t atomic_eth_rkey(const struct atomic_eth *h) { return get32(h->b + 8); }
static inline uint64_t atomic_eth_swap_add(const struct atomic_eth *h) { return get64(h->b + 12); }
static inline uint64_t atomic_eth_compare(const struct atomic_eth *h) { return get64(h->b + 20); }
static inline void atomic_eth_set(struct atomic_eth *h, uint64_t va, uint32_t rkey,
				  uint64_t swap_add, uint64_t compare)
{
	put64(h->b, va); put32(h->b + 8, rkey); put64(h->b + 12, swap_add); put64(h->b + 20, compare);
}

/* AtomicAckETH: OrigRemoteData(64) */
static inline uint64_t atomic_ack_eth_orig(const struct atomic_ack_eth *h) { return get64(h->b); }
static inline void atomic_ack_eth_set(struct atomic_ack_eth *h, uint64_t v) { put64(h->b, v); }

/* DETH: Q_Key(32) resv(8) SrcQP(24) */
static inline uint32_t deth_qkey(const struct deth *h) { return get32(h->b); }
static inline uint32_t deth_sqpn(const struct deth *h) { return get24(h->b + 5); }
static inline void deth_set(struct deth *h, uint32_t qkey, uint32_t sqpn)
{
	put32(h->b, qkey); h->b[4] = 0; put24(h->b + 5, sqpn & ROCE_QPN_MASK);
}

/* ImmDt and IETH: one 32-bit value each. Immediate data is opaque: kept in
 * network order, as ibv_wc.imm_data is. */
static inline uint32_t immdt_get(const struct immdt *h) { uint32_t v; memcpy(&v, h->b, 4); return v; }
static inline void immdt_set(struct immdt *h, uint32_t be_imm) { memcpy(h->b, &be_imm, 4); }
static inline uint32_t ieth_rkey(const struct ieth *h) { return get32(h->b); }
static inline void ieth_set(struct ieth *h, uint32_t rkey) { put32(h->b, rkey); }

/* GIDs: IPv4 as ::ffff:a.b.c.d (roce_defs.h). */
static inline bool roce_gid_is_v4(const uint8_t gid[16])
{
	static const uint8_t prefix[ROCE_GID_V4MAPPED_LEN] = ROCE_GID_V4MAPPED_PREFIX;

	return !memcmp(gid, prefix, sizeof(prefix));
}

/* The GID of an IPv4 address (4 bytes, network order). */
static inline void roce_gid_from_v4(uint8_t gid[16], const void *a4)
{
	static const uint8_t prefix[ROCE_GID_V4MAPPED_LEN] = ROCE_GID_V4MAPPED_PREFIX;

	memcpy(gid, prefix, sizeof(prefix));
	memcpy(gid + ROCE_GID_V4MAPPED_LEN, a4, 4);
}

#endif
