// SPDX-License-Identifier: GPL-2.0-only
/*
 * The vrdma provider for libibverbs (rdma-core 56): binds to the ib_device
 * that virtio_rdma.ko registers on a virtio-rdma device and passes every
 * verb to the kernel as a uverbs command, with no driver-private data.
 * Posting and polling cost a system call each: correct first; a mapped
 * fast path may come later only if a process can reach only its own rings.
 *
 * A verb that returns a pointer sets errno on failure; one that returns an
 * int returns the errno value, as libibverbs' own ibv_cmd_* do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vrdma.h"

static const struct verbs_context_ops vrdma_ctx_ops;

/* A create verb's failure: free the object, NULL with errno = ret. */
static void *vrdma_fail(void *obj, int ret)
{
	free(obj);
	errno = ret;
	return NULL;
}

/* A destroy verb's end: the object goes once the kernel let it go. */
static int vrdma_done(void *obj, int ret)
{
	if (!ret)
		free(obj);
	return ret;
}

/* The fw_ver the kernel reports as a u64, shown major.minor.sub. */
static int vrdma_query_device(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int vrdma_query_port(struct ibv_context *context, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *vrdma_alloc_pd(struct ibv_context *context)
{
	struct ibv_alloc_pd cmd = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret)
		return vrdma_fail(pd, ret);
	return pd;
}

static int vrdma_dealloc_pd(struct ibv_pd *pd)
{
	return vrdma_done(pd, ibv_cmd_dealloc_pd(pd));
}

static struct ibv_mr *vrdma_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ibv_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret)
		return vrdma_fail(vmr, ret);
	return &vmr->ibv_mr;
}

static int vrdma_dereg_mr(struct verbs_mr *vmr)
{
	return vrdma_done(vmr, ibv_cmd_dereg_mr(vmr));
}

/* CQs are allocated as libibverbs' verbs_cq, which it may look into. */
static struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct ibv_create_cq cmd = {};
	struct ib_uverbs_create_cq_resp resp = {};
	struct verbs_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->cq,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret)
		return vrdma_fail(cq, ret);
	return &cq->cq;
}

static int vrdma_destroy_cq(struct ibv_cq *ibcq)
{
	return vrdma_done(container_of(ibcq, struct verbs_cq, cq),
			  ibv_cmd_destroy_cq(ibcq));
}

static int vrdma_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	return ibv_cmd_poll_cq(cq, ne, wc);
}

static int vrdma_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(cq, solicited_only);
}

/* The device's attributes, all 0 if the kernel does not say. */
static struct ibv_device_attr vrdma_device_attr(struct ibv_context *context)
{
	struct ibv_device_attr_ex attr = {};
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);

	if (ibv_cmd_query_device_any(context, NULL, &attr, sizeof(attr), &resp,
				     &resp_size))
		memset(&attr, 0, sizeof(attr));
	return attr.orig_attr;
}

/*
 * Every QP is a vrdma_qp; one created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * is also an ibv_qp_ex with the ibv_wr_* API (wr.c).
 */
static struct ibv_qp *vrdma_create_qp_ex(struct ibv_context *context,
					 struct ibv_qp_init_attr_ex *attr)
{
	bool qpx = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_create_qp cmd = {};
	struct ib_uverbs_create_qp_resp resp = {};
	struct vrdma_qp *qp;
	int ret;

	/* no XRC, create flags, TSO, RSS */
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	if (qpx) {
		ret = vrdma_wr_init(qp, attr->qp_type, attr->send_ops_flags,
				    vrdma_device_attr(context).atomic_cap !=
				    IBV_ATOMIC_NONE);
		if (ret)
			return vrdma_fail(qp, ret);
	}
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd, sizeof(cmd),
				   &resp, sizeof(resp));
	if (ret)
		return vrdma_fail(qp, ret);
	pthread_mutex_init(&qp->wr_lock, NULL);
	qp->max_send_wr = attr->cap.max_send_wr;
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_inline_data = attr->cap.max_inline_data;
	if (qpx)
		qp->vqp.comp_mask |= VERBS_QP_EX;
	return &qp->vqp.qp;
}

static struct ibv_qp *vrdma_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = vrdma_create_qp_ex(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

static int vrdma_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}


/*
 * perftest's READ tests give the peer's responder depth as max_rd_atomic
 * (Soft-RoCE's is 128), more than the device takes (16). It only bounds
 * the READs this QP keeps in flight, so less is always safe: it is
 * lowered to the device's limit instead of failing the transition.
 */
static int vrdma_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			   int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	struct ibv_qp_attr lowered;
	unsigned int max;

	if ((attr_mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic) {
		/* the device's max_qp_init_rd_atom; 0: unknown */
		max = vrdma_device_attr(qp->context).max_qp_init_rd_atom;
		if (max && attr->max_rd_atomic > max) {
			lowered = *attr;
			lowered.max_rd_atomic = max;
			attr = &lowered;
		}
	}
	return ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int vrdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct vrdma_qp *qp = to_vrdma_qp(ibqp);
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (!ret) {
		vrdma_wr_fini(qp);
		free(qp);
	}
	return ret;
}

/*
 * The kernel copies the work requests and their SGEs. With IBV_SEND_INLINE
 * the SGEs still point into this process: the kernel driver reads the
 * inline bytes from there.
 */
static int vrdma_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	return ibv_cmd_post_send(qp, wr, bad_wr);
}

static int vrdma_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	return ibv_cmd_post_recv(qp, wr, bad_wr);
}

/* Shared receive queues: the kernel driver holds the SRQ's queue. */
static struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct ib_uverbs_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct ibv_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = ibv_cmd_create_srq(pd, srq, attr, &cmd, sizeof(cmd), &resp,
				 sizeof(resp));
	if (ret)
		return vrdma_fail(srq, ret);
	return srq;
}

static int vrdma_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

static int vrdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int vrdma_destroy_srq(struct ibv_srq *srq)
{
	return vrdma_done(srq, ibv_cmd_destroy_srq(srq));
}

static int vrdma_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	return ibv_cmd_post_srq_recv(srq, wr, bad_wr);
}

/* The kernel resolves the RoCE destination MAC (rdma_create_user_ah). */
static struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp = {};
	struct ibv_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (ret)
		return vrdma_fail(ah, ret);
	return ah;
}

static int vrdma_destroy_ah(struct ibv_ah *ah)
{
	return vrdma_done(ah, ibv_cmd_destroy_ah(ah));
}

static struct verbs_context *vrdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct ibv_get_context cmd = {};
	struct ib_uverbs_get_context_resp resp = {};
	struct vrdma_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), &resp,
				  sizeof(resp));
	if (ret) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		errno = ret;
		return NULL;
	}
	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	return &ctx->ibv_ctx;
}

static void vrdma_free_context(struct ibv_context *ibctx)
{
	struct vrdma_context *ctx = to_vrdma_ctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static const struct verbs_context_ops vrdma_ctx_ops = {
	.alloc_pd = vrdma_alloc_pd,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_qp = vrdma_create_qp,
	.create_qp_ex = vrdma_create_qp_ex,
	.create_srq = vrdma_create_srq,
	.dealloc_pd = vrdma_dealloc_pd,
	.dereg_mr = vrdma_dereg_mr,
	.destroy_ah = vrdma_destroy_ah,
	.destroy_cq = vrdma_destroy_cq,
	.destroy_qp = vrdma_destroy_qp,
	.destroy_srq = vrdma_destroy_srq,
	.free_context = vrdma_free_context,
	.modify_qp = vrdma_modify_qp,
	.modify_srq = vrdma_modify_srq,
	.poll_cq = vrdma_poll_cq,
	.post_recv = vrdma_post_recv,
	.post_send = vrdma_post_send,
	.post_srq_recv = vrdma_post_srq_recv,
	.query_device_ex = vrdma_query_device,
	.query_port = vrdma_query_port,
	.query_qp = vrdma_query_qp,
	.query_srq = vrdma_query_srq,
	.reg_mr = vrdma_reg_mr,
	.req_notify_cq = vrdma_req_notify_cq,
};

static struct verbs_device *vrdma_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct vrdma_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->ibv_dev : NULL;
}

static void vrdma_uninit_device(struct verbs_device *vdev)
{
	free(to_vrdma_dev(vdev));
}

/*
 * The ib_device's parent is the virtio device (ID 42 = 0x2a), so uverbsN's
 * device/modalias reads "virtio:d0000002Av00001AF4". The kernel driver's
 * driver_id is RDMA_DRIVER_UNKNOWN, which cannot be matched on.
 */
static const struct verbs_match_ent vrdma_match_table[] = {
	VERBS_MODALIAS_MATCH("virtio:d0000002Av*", NULL),
	{},
};

static const struct verbs_device_ops vrdma_dev_ops = {
	.name = "vrdma",
	.match_min_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = VRDMA_UVERBS_ABI_VERSION,
	.match_table = vrdma_match_table,
	.alloc_device = vrdma_alloc_device,
	.uninit_device = vrdma_uninit_device,
	.alloc_context = vrdma_alloc_context,
};
PROVIDER_DRIVER(vrdma, vrdma_dev_ops);
