/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RoCEv2 numbers and the GID type that the daemon, the tools, the tests
 * and the XDP program share, each defined here once. Only <linux/types.h>,
 * so BPF code can include it; roce_wire.h adds the C accessors.
 */
#ifndef ROCE_DEFS_H
#define ROCE_DEFS_H

#include <linux/types.h>

#define ROCE_UDP_PORT		4791	/* RoCEv2's destination port, IBA Annex A17 */
/* PSNs, QPNs and MSNs are 24 bits on the wire. */
#define ROCE_PSN_MASK		0xffffffu
#define ROCE_QPN_MASK		0xffffffu
#define ROCE_MSN_MASK		0xffffffu
#define ROCE_QPN_MULTICAST	0xffffffu	/* the multicast QP, never a QP's own */

/* A GID as RoCEv2 carries it: an IPv6 address, IPv4 as ::ffff:a.b.c.d
 * (RFC 4291 2.5.5.2), these 12 bytes and then the IPv4 address. */
#define ROCE_GID_V4MAPPED_PREFIX	{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff }
#define ROCE_GID_V4MAPPED_LEN		12

/* The daemon's GIDs, and the key of the XDP program's map of them. Wire
 * headers and the device ABI carry the same 16 bytes as uint8_t[16]. */
struct vrdma_gid {
	__u8 raw[16];
};

#endif
