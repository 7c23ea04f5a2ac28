/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The vrdma provider: libibverbs' user-space half of virtio_rdma.ko, the
 * guest driver of vrdmad's virtio-rdma device (docs/virtio-rdma.md).
 *
 * Every verb is a uverbs command to the kernel driver, with no
 * driver-private data in either direction: the kernel owns the virtqueues,
 * so a process can reach only what the driver lets it (no mapped rings yet).
 */
#ifndef VRDMA_PROVIDER_H
#define VRDMA_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>

#include <infiniband/driver.h>

/*
 * The uverbs ABI version virtio_rdma.ko registers (ib_device's
 * uverbs_abi_ver, sysfs abi_version). It counts changes to the
 * driver-private command data, of which there is none yet; bump it in both
 * halves together when that changes.
 */
#define VRDMA_UVERBS_ABI_VERSION 1

struct vrdma_device {
	struct verbs_device ibv_dev;
};

struct vrdma_context {
	struct verbs_context ibv_ctx;
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
	uint64_t send_ops;	/* IBV_QP_EX_WITH_*, as asked at creation */

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

static inline struct vrdma_context *to_vrdma_ctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct vrdma_context, ibv_ctx.context);
}

static inline struct vrdma_device *to_vrdma_dev(struct verbs_device *dev)
{
	return container_of(dev, struct vrdma_device, ibv_dev);
}

int vrdma_wr_init(struct vrdma_qp *qp, enum ibv_qp_type type,
		  uint64_t send_ops, bool atomics);
void vrdma_wr_fini(struct vrdma_qp *qp);

#endif
