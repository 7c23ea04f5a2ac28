/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The private data between virtio_rdma.ko and its rdma-core provider: the
 * driver part (ib_udata) of uverbs commands (docs/virtio-rdma.md section 9).
 * The kernel reads what the provider gave and writes what it asked for, so
 * a provider without it (inlen 0) gets a context on the kernel's rings.
 * Every struct is a multiple of 8 bytes; fields are added at the end.
 */
#ifndef VRDMA_UVERBS_H
#define VRDMA_UVERBS_H

#include <linux/types.h>

/* ALLOC_UCONTEXT: the provider posts and polls in rings of its own memory
 * (asked for; answered if the device negotiated VIRTIO_RDMA_F_RINGS and had
 * a doorbell page for the context)
 */
#define VRDMA_UCTX_RINGS	1u
/*
 * Answered with VRDMA_UCTX_RINGS: the doorbell page has the live word. A
 * program polling its own rings makes no system call, so it would never
 * hear that the device failed (its back end went away, a reset): the
 * driver keeps VRDMA_UDB_LIVE at VRDMA_UDB_LIVE_OFF of the page (bytes the
 * device neither reads nor writes, docs/virtio-rdma.md section 8) while the
 * device serves the context and writes 0 when it fails; the provider's
 * posts and empty polls then fail with EIO, as the kernel's commands do.
 */
#define VRDMA_UCTX_LIVE		2u
#define VRDMA_UDB_LIVE_OFF	8
#define VRDMA_UDB_LIVE		0x4556494cu	/* "LIVE" */

struct vrdma_alloc_ucontext_req {
	__u32 flags;		/* VRDMA_UCTX_RINGS */
	__u32 reserved;		/* 0 */
};

struct vrdma_alloc_ucontext_resp {
	__u32 flags;		/* VRDMA_UCTX_RINGS if granted, VRDMA_UCTX_LIVE */
	__u32 db_bits;		/* the doorbell page's bits (VIRTIO_RDMA_DB_BITS) */
	__aligned_u64 db_offset; /* mmap offset of that page: one page, shared */
};

/*
 * A ring in the provider's memory: page-aligned, zeroed, its header of
 * max(128, stride) bytes then entries slots of stride bytes, rounded up to
 * whole pages (docs/virtio-rdma.md section 8). The kernel pins it until the
 * device let go of it.
 */
struct vrdma_ring_req {
	__aligned_u64 buf;
	__u32 entries;		/* a power of two */
	__u32 stride;		/* a power of two, 64..4096; a CQ's is 64 */
};

/* CREATE_CQ: with a ring, the CQ is polled and armed in user space */
struct vrdma_create_cq_req {
	struct vrdma_ring_req ring;
};

struct vrdma_create_cq_resp {
	__u32 flags;		/* VRDMA_UCTX_RINGS: the ring given is the CQ's */
	__u32 db_bit;		/* its bit in the context's doorbell page */
};

/*
 * CREATE_QP: with rings, the QP's send ring (and, without an SRQ, receive
 * ring) are the program's: it writes WQEs (the device's layout, section 5)
 * there, and a POST_SEND (or POST_RECV) of no work request is only the kick
 * for a device that sleeps. A ring's entries cover max_*_wr, its stride the
 * largest WQE the caps allow.
 */
struct vrdma_create_qp_req {
	struct vrdma_ring_req sq;
	struct vrdma_ring_req rq;	/* not looked at on an SRQ */
};

struct vrdma_create_qp_resp {
	__u32 flags;		/* VRDMA_UCTX_RINGS: the rings given are the QP's */
	__u32 sq_bit;
	__u32 rq_bit;
	__u32 reserved;
};

/* CREATE_SRQ: as a QP's receive ring; POST_SRQ_RECV of none kicks */
struct vrdma_create_srq_req {
	struct vrdma_ring_req rq;
};

struct vrdma_create_srq_resp {
	__u32 flags;		/* VRDMA_UCTX_RINGS */
	__u32 bit;
};

/* CREATE_AH: the address vector a UD WQE carries (struct virtio_rdma_av) */
struct vrdma_create_ah_resp {
	__u8 av[48];
};

#endif
