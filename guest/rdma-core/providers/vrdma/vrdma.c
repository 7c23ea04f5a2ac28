// SPDX-License-Identifier: GPL-2.0-only
/*
 * The vrdma provider for libibverbs (rdma-core 56): binds to the ib_device
 * that virtio_rdma.ko registers on a virtio-rdma device and passes verbs
 * to the kernel as uverbs commands; on a device with rings (ABI v2) CQs
 * are polled and armed, and QPs and SRQs posted, in this process's memory
 * (ring.c), where it can reach only its own rings.
 *
 * A verb that returns a pointer sets errno on failure; one that returns an
 * int returns the errno value, as libibverbs' own ibv_cmd_* do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/*
 * Memory windows, type 2B, where the device has them (on rings): a program
 * binds one with IBV_WR_BIND_MW in its own send ring (ring.c).
 */
static struct ibv_mw *vrdma_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret)
		return vrdma_fail(mw, ret);
	return mw;
}

static int vrdma_dealloc_mw(struct ibv_mw *mw)
{
	return vrdma_done(mw, ibv_cmd_dealloc_mw(mw));
}

struct vrdma_create_cq_cmd {
	struct ibv_create_cq ibv_cmd;
	struct vrdma_create_cq_req drv;
};

struct vrdma_create_cq_cmd_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct vrdma_create_cq_resp drv;
};

/*
 * A CQ is a vrdma_cq around libibverbs' verbs_cq, which it may look into.
 * On a context with rings its CQEs come in a ring of ours, at least cqe
 * entries of 64 bytes (the kernel may decline it: then it is the
 * kernel's, polled through uverbs). Both ibv_create_cq and
 * ibv_create_cq_ex (cq_ex.c) make one here.
 */
struct vrdma_cq *vrdma_cq_create(struct ibv_context *context, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector)
{
	struct vrdma_context *ctx = to_vrdma_ctx(context);
	struct vrdma_create_cq_cmd_resp resp = {};
	struct vrdma_create_cq_cmd cmd = {};
	struct vrdma_cq *cq;
	uint32_t entries = 1;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ctx->rings && cqe > 0) {
		while (entries < (uint32_t)cqe && entries < VIRTIO_RDMA_RING_MAX_ENTRIES)
			entries <<= 1;
		ret = vrdma_uring_alloc(&cq->ring, entries, 64);
		if (ret)
			return vrdma_fail(cq, ret);
		cmd.drv.ring.buf = (uintptr_t)cq->ring.mem;
		cmd.drv.ring.entries = entries;
		cmd.drv.ring.stride = 64;
	}
	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, ctx->rings ? sizeof(cmd) :
				sizeof(cmd.ibv_cmd), &resp.ibv_resp,
				ctx->rings ? sizeof(resp) : sizeof(resp.ibv_resp));
	if (ret) {
		vrdma_uring_free(&cq->ring);
		return vrdma_fail(cq, ret);
	}
	if (cq->ring.mem && !(resp.drv.flags & VRDMA_UCTX_RINGS))
		vrdma_uring_free(&cq->ring);	/* the kernel's after all */
	if (cq->ring.mem && resp.drv.db_bit >= ctx->db_bits) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		vrdma_uring_free(&cq->ring);
		return vrdma_fail(cq, EIO);
	}
	cq->ring.bit = resp.drv.db_bit;
	pthread_mutex_init(&cq->poll_lock, NULL);
	return cq;
}

static struct ibv_cq *vrdma_create_cq(struct ibv_context *context, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct vrdma_cq *cq = vrdma_cq_create(context, cqe, channel, comp_vector);

	return cq ? &cq->vcq.cq : NULL;
}

static int vrdma_destroy_cq(struct ibv_cq *ibcq)
{
	struct vrdma_cq *cq = to_vrdma_cq(ibcq);
	int ret = ibv_cmd_destroy_cq(ibcq);

	if (ret)
		return ret;
	vrdma_uring_free(&cq->ring);
	pthread_mutex_destroy(&cq->poll_lock);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

int vrdma_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	if (to_vrdma_cq(cq)->ring.mem)
		return vrdma_ring_poll_cq(cq, ne, wc);
	return ibv_cmd_poll_cq(cq, ne, wc);
}

static int vrdma_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	if (to_vrdma_cq(cq)->ring.mem)
		return vrdma_ring_req_notify_cq(cq, solicited_only);
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

struct vrdma_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct vrdma_create_qp_req drv;
};

struct vrdma_create_qp_cmd_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct vrdma_create_qp_resp drv;
};

/* The QP's rings, sized as the kernel checks them, for its caps. */
static int vrdma_qp_rings(struct vrdma_qp *qp,
			  const struct ibv_qp_init_attr_ex *attr,
			  struct vrdma_create_qp_req *req)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	int ret;

	ret = vrdma_uring_alloc(&qp->sq, vrdma_ring_entries(cap->max_send_wr),
				vrdma_ring_stride(vrdma_send_wqe_max(cap->max_send_sge,
								     cap->max_inline_data)));
	if (!ret && !attr->srq)
		ret = vrdma_uring_alloc(&qp->rq,
					vrdma_ring_entries(cap->max_recv_wr),
					vrdma_ring_stride(vrdma_recv_wqe_max(cap->max_recv_sge)));
	if (ret) {
		vrdma_uring_free(&qp->sq);
		return ret;
	}
	req->sq.buf = (uintptr_t)qp->sq.mem;
	req->sq.entries = qp->sq.entries;
	req->sq.stride = qp->sq.stride;
	req->rq.buf = (uintptr_t)qp->rq.mem;
	req->rq.entries = qp->rq.entries;
	req->rq.stride = qp->rq.stride;
	return 0;
}

static void vrdma_qp_free(struct vrdma_qp *qp)
{
	vrdma_uring_free(&qp->sq);
	vrdma_uring_free(&qp->rq);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	vrdma_wr_fini(qp);
	free(qp);
}

/*
 * Every QP is a vrdma_qp; one created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * is also an ibv_qp_ex with the ibv_wr_* API (wr.c). On a context with
 * rings its work queues are rings of ours.
 */
static struct ibv_qp *vrdma_create_qp_ex(struct ibv_context *context,
					 struct ibv_qp_init_attr_ex *attr)
{
	bool qpx = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct vrdma_context *ctx = to_vrdma_ctx(context);
	struct vrdma_create_qp_cmd_resp resp = {};
	struct vrdma_create_qp_cmd cmd = {};
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
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&qp->wr_lock, NULL);
	if (qpx) {
		struct ibv_device_attr da = vrdma_device_attr(context);

		ret = vrdma_wr_init(qp, attr->qp_type, attr->send_ops_flags,
				    da.atomic_cap != IBV_ATOMIC_NONE,
				    ctx->rings && (da.device_cap_flags &
						   IBV_DEVICE_MEM_WINDOW_TYPE_2B));
		if (ret)
			goto free;
	}
	if (ctx->rings) {
		ret = vrdma_qp_rings(qp, attr, &cmd.drv);
		if (ret)
			goto free;
	}
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, attr, &cmd.ibv_cmd,
				   ctx->rings ? sizeof(cmd) : sizeof(cmd.ibv_cmd),
				   &resp.ibv_resp, ctx->rings ? sizeof(resp) :
				   sizeof(resp.ibv_resp));
	if (ret)
		goto free;
	if (qp->sq.mem && !(resp.drv.flags & VRDMA_UCTX_RINGS)) {
		/* the kernel's after all */
		vrdma_uring_free(&qp->sq);
		vrdma_uring_free(&qp->rq);
	}
	if (qp->sq.mem && (resp.drv.sq_bit >= ctx->db_bits ||
			   (qp->rq.mem && resp.drv.rq_bit >= ctx->db_bits))) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		ret = EIO;
		goto free;
	}
	if (qpx && (attr->send_ops_flags & VRDMA_RING_SEND_OPS) && !qp->sq.mem) {
		/* the kernel kept the send queue: its POST_SEND has no binds */
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		ret = EOPNOTSUPP;
		goto free;
	}
	qp->sq.bit = resp.drv.sq_bit;
	qp->rq.bit = resp.drv.rq_bit;
	qp->state = IBV_QPS_RESET;
	qp->max_send_wr = attr->cap.max_send_wr;
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_inline_data = attr->cap.max_inline_data;
	qp->max_recv_sge = attr->cap.max_recv_sge;
	if (qpx)
		qp->vqp.comp_mask |= VERBS_QP_EX;
	return &qp->vqp.qp;
free:
	vrdma_qp_free(qp);
	errno = ret;
	return NULL;
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
	int ret;

	if ((attr_mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic) {
		/* the device's max_qp_init_rd_atom; 0: unknown */
		max = vrdma_device_attr(qp->context).max_qp_init_rd_atom;
		if (max && attr->max_rd_atomic > max) {
			lowered = *attr;
			lowered.max_rd_atomic = max;
			attr = &lowered;
		}
	}
	ret = ibv_cmd_modify_qp(qp, attr, attr_mask, &cmd, sizeof(cmd));
	/* the state ring posts are checked against */
	if (!ret && (attr_mask & IBV_QP_STATE))
		__atomic_store_n(&to_vrdma_qp(qp)->state, attr->qp_state,
				 __ATOMIC_RELAXED);
	return ret;
}

static int vrdma_destroy_qp(struct ibv_qp *ibqp)
{
	int ret = ibv_cmd_destroy_qp(ibqp);

	if (!ret)
		vrdma_qp_free(to_vrdma_qp(ibqp));
	return ret;
}

/*
 * Through the kernel, the work requests and their SGEs are copied; with
 * IBV_SEND_INLINE the SGEs still point into this process, where the
 * kernel driver reads the inline bytes. On rings, posted here.
 */
static int vrdma_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	if (to_vrdma_qp(qp)->sq.mem)
		return vrdma_ring_post_send(qp, wr, bad_wr);
	return ibv_cmd_post_send(qp, wr, bad_wr);
}

static int vrdma_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	if (to_vrdma_qp(qp)->sq.mem)
		return vrdma_ring_post_recv(qp, wr, bad_wr);
	return ibv_cmd_post_recv(qp, wr, bad_wr);
}

struct vrdma_create_srq_cmd {
	struct ibv_create_srq ibv_cmd;
	struct vrdma_create_srq_req drv;
};

struct vrdma_create_srq_cmd_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct vrdma_create_srq_resp drv;
};

/* Shared receive queues: on rings, a ring of ours; else the kernel's. */
static struct ibv_srq *vrdma_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct vrdma_context *ctx = to_vrdma_ctx(pd->context);
	struct vrdma_create_srq_cmd_resp resp = {};
	struct vrdma_create_srq_cmd cmd = {};
	struct vrdma_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	if (ctx->rings) {
		ret = vrdma_uring_alloc(&srq->ring,
					vrdma_ring_entries(attr->attr.max_wr),
					vrdma_ring_stride(vrdma_recv_wqe_max(attr->attr.max_sge)));
		if (ret)
			goto free;
		cmd.drv.rq.buf = (uintptr_t)srq->ring.mem;
		cmd.drv.rq.entries = srq->ring.entries;
		cmd.drv.rq.stride = srq->ring.stride;
	}
	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 ctx->rings ? sizeof(cmd) : sizeof(cmd.ibv_cmd),
				 &resp.ibv_resp, ctx->rings ? sizeof(resp) :
				 sizeof(resp.ibv_resp));
	if (ret)
		goto free;
	if (srq->ring.mem && !(resp.drv.flags & VRDMA_UCTX_RINGS))
		vrdma_uring_free(&srq->ring);	/* the kernel's after all */
	if (srq->ring.mem && resp.drv.bit >= ctx->db_bits) {
		ibv_cmd_destroy_srq(&srq->ibv_srq);
		ret = EIO;
		goto free;
	}
	srq->ring.bit = resp.drv.bit;
	srq->max_sge = attr->attr.max_sge;
	srq->max_wr = attr->attr.max_wr;
	return &srq->ibv_srq;
free:
	vrdma_uring_free(&srq->ring);
	pthread_spin_destroy(&srq->lock);
	return vrdma_fail(srq, ret);
}

static int vrdma_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int mask)
{
	struct ibv_modify_srq cmd = {};

	int ret = ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));

	/* a ring's posts wait for room past its entries (ring.c) */
	if (!ret && (mask & IBV_SRQ_MAX_WR))
		__atomic_store_n(&to_vrdma_srq(srq)->max_wr, attr->max_wr,
				 __ATOMIC_RELAXED);
	return ret;
}

static int vrdma_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int vrdma_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vrdma_srq *srq = to_vrdma_srq(ibsrq);
	int ret = ibv_cmd_destroy_srq(ibsrq);

	if (ret)
		return ret;
	vrdma_uring_free(&srq->ring);
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

static int vrdma_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	if (to_vrdma_srq(srq)->ring.mem)
		return vrdma_ring_post_srq_recv(srq, wr, bad_wr);
	return ibv_cmd_post_srq_recv(srq, wr, bad_wr);
}

struct vrdma_create_ah_cmd_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct vrdma_create_ah_resp drv;
};

/*
 * The kernel resolves the RoCE destination MAC (rdma_create_user_ah) and
 * answers the address vector UD WQEs on rings carry.
 */
static struct ibv_ah *vrdma_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct vrdma_create_ah_cmd_resp resp = {};
	struct vrdma_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		return vrdma_fail(ah, ret);
	memcpy(&ah->av, resp.drv.av, sizeof(ah->av));
	ah->has_av = to_vrdma_ctx(pd->context)->rings;
	return &ah->ibv_ah;
}

static int vrdma_destroy_ah(struct ibv_ah *ah)
{
	return vrdma_done(to_vrdma_ah(ah), ibv_cmd_destroy_ah(ah));
}

struct vrdma_get_context_cmd {
	struct ibv_get_context ibv_cmd;
	struct vrdma_alloc_ucontext_req drv;
};

struct vrdma_get_context_cmd_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct vrdma_alloc_ucontext_resp drv;
};

/*
 * Asks for rings of its own unless VRDMA_USER_RINGS=0 (the kernel's rings
 * then, through uverbs: a comparison, or a way round a bug); with them
 * comes the context's doorbell page, mapped here.
 */
static struct verbs_context *vrdma_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	const char *env = getenv("VRDMA_USER_RINGS");
	struct vrdma_get_context_cmd_resp resp = {};
	struct vrdma_get_context_cmd cmd = {};
	struct vrdma_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (!env || strcmp(env, "0"))
		cmd.drv.flags = VRDMA_UCTX_RINGS;
	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto uninit;
	if (resp.drv.flags & VRDMA_UCTX_RINGS) {
		ctx->db = mmap(NULL, VIRTIO_RDMA_PAGE_SIZE, PROT_READ | PROT_WRITE,
			       MAP_SHARED, cmd_fd, resp.drv.db_offset);
		if (ctx->db == MAP_FAILED) {
			ctx->db = NULL;
			ret = errno;
			goto uninit;
		}
		ctx->db_bits = resp.drv.db_bits;
		if (ctx->db_bits > VIRTIO_RDMA_DB_BITS)
			ctx->db_bits = VIRTIO_RDMA_DB_BITS;
		ctx->rings = true;
		ctx->live_word = resp.drv.flags & VRDMA_UCTX_LIVE;
	}
	verbs_set_ops(&ctx->ibv_ctx, &vrdma_ctx_ops);
	return &ctx->ibv_ctx;
uninit:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

static void vrdma_free_context(struct ibv_context *ibctx)
{
	struct vrdma_context *ctx = to_vrdma_ctx(ibctx);

	if (ctx->db)
		munmap(ctx->db, VIRTIO_RDMA_PAGE_SIZE);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static const struct verbs_context_ops vrdma_ctx_ops = {
	.alloc_mw = vrdma_alloc_mw,
	.alloc_pd = vrdma_alloc_pd,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_cq_ex = vrdma_create_cq_ex,
	.create_qp = vrdma_create_qp,
	.create_qp_ex = vrdma_create_qp_ex,
	.create_srq = vrdma_create_srq,
	.dealloc_mw = vrdma_dealloc_mw,
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
