/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The vrdma provider: libibverbs' user-space half of virtio_rdma.ko, the
 * guest driver of vrdmad's virtio-rdma device (docs/virtio-rdma.md).
 *
 * Every verb is a uverbs command to the kernel driver, except where the
 * context has rings of its own (ABI v2, docs/virtio-rdma.md section 9): a
 * CQ's ring is then this process's memory, polled and armed here with no
 * system call (ring.c), and so are its QPs' and SRQs' work queues: posted
 * here, a system call only to wake a device that sleeps. The kernel pins
 * the rings and gives the device their pages, and the device checks every
 * index and WQE the process writes.
 */
#ifndef VRDMA_PROVIDER_H
#define VRDMA_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>

#include <infiniband/driver.h>

#include "virtio_rdma.h"
#include "vrdma_uverbs.h"

/*
 * The uverbs ABI version virtio_rdma.ko registers (ib_device's
 * uverbs_abi_ver, sysfs abi_version). It counts incompatible changes to the
 * driver-private command data (vrdma_uverbs.h); bump it in both halves
 * together when one comes.
 */
#define VRDMA_UVERBS_ABI_VERSION 1

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
	/* VRDMA_UCTX_RINGS: the context's doorbell page, mapped */
	bool rings;
	uint8_t *db;
	uint32_t db_bits;
	uint32_t kicked;	/* need_wake's number last kicked for */
	bool live_word;		/* VRDMA_UCTX_LIVE: the page has one */
};

/*
 * A ring in this process's memory (docs/virtio-rdma.md section 8): its
 * header, then entries slots of stride bytes; idx is our prod (a work
 * queue) or cons (a CQ), seen the device's word as last read.
 */
struct vrdma_uring {
	uint8_t *mem;
	size_t len;
	uint32_t entries;
	uint32_t stride;
	uint32_t hdr;
	uint32_t idx;
	uint32_t seen;
	uint32_t bit;
};

/* An SRQ; on a ring (ring.mem) posted here. */
struct vrdma_srq {
	struct ibv_srq ibv_srq;
	struct vrdma_uring ring;
	pthread_spinlock_t lock;
	uint32_t max_sge;
	uint32_t max_wr;	/* as MODIFY_SRQ last set it */
};

/* An AH, with the address vector the kernel made of it (UD WQEs on rings) */
struct vrdma_ah {
	struct ibv_ah ibv_ah;
	bool has_av;
	struct virtio_rdma_av av;
};

/* A CQ; on a ring (ring.mem) polled and armed here. */
struct vrdma_cq {
	struct verbs_cq vcq;
	struct vrdma_uring ring;
	pthread_spinlock_t lock;	/* ring's idx, seen and arm_seq */
	uint32_t arm_seq;
	bool broken;		/* the device's written lied: EIO from now */
	/* ibv_create_cq_ex's polling (cq_ex.c): the completion being read,
	 * held under poll_lock from start_poll to end_poll */
	struct ibv_wc cur;
	pthread_mutex_t poll_lock;
	bool single_threaded;
};

/*
 * A QP. With IBV_QP_INIT_ATTR_SEND_OPS_FLAGS it is also an ibv_qp_ex: the
 * ibv_wr_* calls between wr_start and wr_complete build ordinary
 * ibv_send_wr in the batch below, which wr_complete posts with one
 * POST_SEND command (wr.c).
 */
struct vrdma_wr;

struct vrdma_qp {
	struct verbs_qp vqp;
	/* as the kernel granted them: a batch is checked against them */
	uint32_t max_send_wr;
	uint32_t max_send_sge;
	uint32_t max_inline_data;
	uint32_t max_recv_sge;
	uint64_t send_ops;	/* IBV_QP_EX_WITH_*, as asked at creation */

	/* On rings (sq.mem): posted here. state is what modify_qp last set:
	 * the device may move the QP to an error state, where posts are
	 * still taken (and flushed).
	 */
	struct vrdma_uring sq, rq;
	pthread_spinlock_t sq_lock, rq_lock;
	enum ibv_qp_state state;

	pthread_mutex_t wr_lock;	/* held from wr_start to complete/abort */
	bool in_batch;
	int err;		/* the batch's first error: nothing is posted */
	/* The batch; the arrays grow as needed and are kept for the next. */
	struct vrdma_wr *wr;
	size_t nwr, wr_cap;
	struct ibv_sge *sge;
	size_t nsge, sge_cap;
	uint8_t *inl;		/* inline bytes, copied when given */
	size_t ninl, inl_cap;
};

static inline struct vrdma_qp *to_vrdma_qp(struct ibv_qp *qp)
{
	return container_of(qp, struct vrdma_qp, vqp.qp);
}

static inline struct vrdma_srq *to_vrdma_srq(struct ibv_srq *srq)
{
	return container_of(srq, struct vrdma_srq, ibv_srq);
}

static inline struct vrdma_ah *to_vrdma_ah(struct ibv_ah *ah)
{
	return container_of(ah, struct vrdma_ah, ibv_ah);
}

static inline struct vrdma_cq *to_vrdma_cq(struct ibv_cq *cq)
{
	return container_of(cq, struct vrdma_cq, vcq.cq);
}

static inline struct vrdma_context *to_vrdma_ctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_device *to_vrdma_dev(struct verbs_device *dev)
{
	return container_of(dev, struct vrdma_device, ibv_dev);
}

/* ring.c */
int vrdma_uring_alloc(struct vrdma_uring *r, uint32_t entries,
		      uint32_t stride);
void vrdma_uring_free(struct vrdma_uring *r);
int vrdma_ring_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int vrdma_ring_req_notify_cq(struct ibv_cq *cq, int solicited_only);
uint32_t vrdma_ring_entries(uint32_t max_wr);
uint32_t vrdma_ring_stride(size_t wqe);
size_t vrdma_send_wqe_max(uint32_t max_sge, uint32_t max_inline);
size_t vrdma_recv_wqe_max(uint32_t max_sge);
int vrdma_ring_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
int vrdma_ring_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
int vrdma_ring_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);

/* vrdma.c */
struct vrdma_cq *vrdma_cq_create(struct ibv_context *context, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector);
int vrdma_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);

/* cq_ex.c */
struct ibv_cq_ex *vrdma_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);

/* wr.c */
int vrdma_wr_init(struct vrdma_qp *qp, enum ibv_qp_type type,
		  uint64_t send_ops, bool atomics, bool windows);
/* the builders that need the QP's send queue to be a ring */
#define VRDMA_RING_SEND_OPS (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | \
			     IBV_QP_EX_WITH_SEND_WITH_INV)
void vrdma_wr_fini(struct vrdma_qp *qp);

#endif
