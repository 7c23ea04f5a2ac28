// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's verbs: PDs, MRs, CQs, QPs and posting work requests.
 */
#include <poll.h>
#include <sched.h>

#include "internal.h"

/* DESTROY_PD, DEREG_MR, DESTROY_CQ, DESTROY_QP: the request is the handle. */
_Static_assert(sizeof(struct virtio_rdma_cmd_destroy_pd) == 4 &&
	       sizeof(struct virtio_rdma_cmd_dereg_mr) == 4 &&
	       sizeof(struct virtio_rdma_cmd_dealloc_mw) == 4 &&
	       sizeof(struct virtio_rdma_cmd_destroy_cq) == 4 &&
	       sizeof(struct virtio_rdma_cmd_destroy_qp) == 4, "one le32 handle");
static int destroy_cmd(struct vrdma_ctx *ctx, uint8_t cmd, uint32_t handle)
{
	struct virtio_rdma_cmd_destroy_qp req = { .qpn = handle };

	return ctrl_cmd(ctx, cmd, &req, sizeof(req), NULL, 0);
}

/* ---- PDs and MRs ---- */

int vrdma_alloc_pd(struct vrdma_ctx *ctx, struct vrdma_pd **pdp)
{
	struct virtio_rdma_rsp_create_pd rsp;
	struct vrdma_pd *pd;
	int ret;

	if (!ctx || !pdp)
		return -EINVAL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_PD, NULL, 0, &rsp, sizeof(rsp));
	if (ret) {
		free(pd);
		return ret;
	}
	pd->ctx = ctx;
	pd->pdn = rsp.pdn;
	list_add(&ctx->pds, &pd->link);
	*pdp = pd;
	return 0;
}

int vrdma_dealloc_pd(struct vrdma_pd *pd)
{
	int ret;

	if (!pd)
		return -EINVAL;
	ret = destroy_cmd(pd->ctx, VIRTIO_CMD_DESTROY_PD, pd->pdn);
	if (ret)
		return ret;
	list_del(&pd->link);
	free(pd);
	return 0;
}

uint32_t vrdma_pd_handle(const struct vrdma_pd *pd)
{
	return pd->pdn;
}

/* Keep an MR the device made. */
static int mr_new(struct vrdma_ctx *ctx, const struct virtio_rdma_rsp_mr *rsp, struct vrdma_mr **mrp)
{
	struct vrdma_mr *mr = calloc(1, sizeof(*mr));

	if (!mr) {
		/* the device has it; without memory we cannot track it, so undo */
		destroy_cmd(ctx, VIRTIO_CMD_DEREG_MR, rsp->mrn);
		return -ENOMEM;
	}
	mr->ctx = ctx;
	mr->mrn = rsp->mrn;
	mr->lkey = rsp->lkey;
	mr->rkey = rsp->rkey;
	list_add(&ctx->mrs, &mr->link);
	*mrp = mr;
	return 0;
}

/* The flat page array of [addr, addr + len) in shared memory: its guest
 * address in *pages_gpa, its size in *npages; shm_free it after the command. */
static int page_array(struct vrdma_ctx *ctx, const void *addr, size_t len,
		      uint64_t **array, uint64_t *pages_gpa, uint32_t *npages)
{
	uint64_t first, gpa = vrdma_gpa(ctx, addr);
	size_t n, i;

	if (!gpa || !in_shm(ctx, addr, len))
		return -EFAULT;
	first = gpa & ~(uint64_t)(SHM_PAGE - 1);
	n = (gpa - first + len + SHM_PAGE - 1) / SHM_PAGE;
	if (n > UINT32_MAX)
		return -EINVAL;
	*array = shm_alloc(ctx, n * sizeof(uint64_t));
	if (!*array)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		(*array)[i] = first + i * SHM_PAGE;	/* le64, like the host */
	*pages_gpa = vrdma_gpa(ctx, *array);
	*npages = n;
	return 0;
}

int vrdma_reg_mr(struct vrdma_pd *pd, void *addr, size_t len, unsigned int access,
		 struct vrdma_mr **mrp)
{
	struct virtio_rdma_cmd_reg_user_mr req = { 0 };
	struct virtio_rdma_rsp_mr rsp;
	struct vrdma_ctx *ctx;
	uint64_t *pages;
	int ret;

	if (!pd || !addr || !mrp)
		return -EINVAL;
	ctx = pd->ctx;
	ret = page_array(ctx, addr, len, &pages, &req.pages, &req.npages);
	if (ret)
		return ret;
	req.pdn = pd->pdn;
	req.access_flags = access;
	req.start = req.virt_addr = (uint64_t)(uintptr_t)addr;
	req.length = len;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), &rsp, sizeof(rsp));
	/* the device copied the array when the command ran */
	shm_free(ctx, pages);
	if (ret)
		return ret;
	return mr_new(ctx, &rsp, mrp);
}

int vrdma_get_dma_mr(struct vrdma_pd *pd, unsigned int access, struct vrdma_mr **mrp)
{
	struct virtio_rdma_cmd_get_dma_mr req;
	struct virtio_rdma_rsp_mr rsp;
	int ret;

	if (!pd || !mrp)
		return -EINVAL;
	req.pdn = pd->pdn;
	req.access_flags = access;
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_GET_DMA_MR, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		return ret;
	return mr_new(pd->ctx, &rsp, mrp);
}

int vrdma_create_mr(struct vrdma_pd *pd, unsigned int access, uint32_t max_num_sg,
		    struct vrdma_mr **mrp)
{
	struct virtio_rdma_cmd_create_mr req;
	struct virtio_rdma_rsp_mr rsp;
	int ret;

	if (!pd || !mrp)
		return -EINVAL;
	req.pdn = pd->pdn;
	req.access_flags = access;
	req.max_num_sg = max_num_sg;
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_CREATE_MR, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		return ret;
	return mr_new(pd->ctx, &rsp, mrp);
}

int vrdma_map_mr_sg(struct vrdma_mr *mr, void *addr, size_t len)
{
	struct virtio_rdma_cmd_map_mr_sg req = { 0 };
	struct virtio_rdma_rsp_map_mr_sg rsp;
	struct vrdma_ctx *ctx;
	uint64_t *pages;
	int ret;

	if (!mr || !addr)
		return -EINVAL;
	ctx = mr->ctx;
	ret = page_array(ctx, addr, len, &pages, &req.pages, &req.npages);
	if (ret)
		return ret;
	req.mrn = mr->mrn;
	req.start = (uint64_t)(uintptr_t)addr;
	req.length = len;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_MAP_MR_SG, &req, sizeof(req), &rsp, sizeof(rsp));
	shm_free(ctx, pages);
	/* fewer pages mapped than given would leave part of the range unmapped */
	if (!ret && rsp.npages != req.npages)
		ret = -EIO;
	return ret;
}

int vrdma_dereg_mr(struct vrdma_mr *mr)
{
	int ret;

	if (!mr)
		return -EINVAL;
	ret = destroy_cmd(mr->ctx, VIRTIO_CMD_DEREG_MR, mr->mrn);
	if (ret)
		return ret;
	list_del(&mr->link);
	free(mr);
	return 0;
}

int vrdma_alloc_mw(struct vrdma_pd *pd, uint32_t type, struct vrdma_mw **mwp)
{
	struct virtio_rdma_cmd_alloc_mw req;
	struct virtio_rdma_rsp_alloc_mw rsp;
	struct vrdma_mw *mw;
	int ret;

	if (!pd || !mwp)
		return -EINVAL;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	req.pdn = pd->pdn;
	req.type = type;
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_ALLOC_MW, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret) {
		free(mw);
		return ret;
	}
	mw->ctx = pd->ctx;
	mw->mwn = rsp.mwn;
	mw->rkey = rsp.rkey;
	list_add(&pd->ctx->mws, &mw->link);
	*mwp = mw;
	return 0;
}

int vrdma_dealloc_mw(struct vrdma_mw *mw)
{
	int ret;

	if (!mw)
		return -EINVAL;
	ret = destroy_cmd(mw->ctx, VIRTIO_CMD_DEALLOC_MW, mw->mwn);
	if (ret)
		return ret;
	list_del(&mw->link);
	free(mw);
	return 0;
}

uint32_t vrdma_mw_rkey(const struct vrdma_mw *mw)
{
	return mw->rkey;
}

int vrdma_bind_mw(struct vrdma_qp *qp, struct vrdma_mw *mw, uint64_t wr_id,
		  const struct vrdma_mw_bind *b)
{
	struct vrdma_send_wr wr = { .wr_id = wr_id, .opcode = VIRTIO_IB_WR_BIND_MW,
				    .send_flags = VIRTIO_IB_SEND_SIGNALED };
	int ret;

	if (!qp || !mw || !b || !b->mr)
		return -EINVAL;
	/* ibv_inc_rkey: the low 8 bits move on, the rest is the window's */
	wr.bind.mw_rkey = mw->rkey;
	wr.bind.rkey = (mw->rkey & ~0xffu) | ((mw->rkey + 1) & 0xff);
	wr.bind.mr_lkey = b->mr->lkey;
	wr.bind.addr = b->addr;
	wr.bind.length = b->length;
	wr.bind.access = b->access;
	ret = vrdma_post_send(qp, &wr);
	if (!ret)	/* the key it has once the bind completes */
		mw->rkey = wr.bind.rkey;
	return ret;
}

uint32_t vrdma_mr_lkey(const struct vrdma_mr *mr)
{
	return mr->lkey;
}

uint32_t vrdma_mr_rkey(const struct vrdma_mr *mr)
{
	return mr->rkey;
}

void vrdma_update_fast_reg_key(struct vrdma_mr *mr, uint8_t key)
{
	mr->lkey = (mr->lkey & ~0xffu) | key;
	mr->rkey = (mr->rkey & ~0xffu) | key;
}

uint32_t vrdma_mr_handle(const struct vrdma_mr *mr)
{
	return mr->mrn;
}

/* ---- CQs ---- */

/* Reset the CQ's queue; its buffers are freed unless the device may still
 * write there. */
static void cq_reset(struct vrdma_ctx *ctx, struct vrdma_cq *cq)
{
	if (vring_teardown(ctx, &cq->vq))
		shm_free(ctx, cq->bufs);
	cq->bufs = NULL;
}

int vrdma_create_cq(struct vrdma_ctx *ctx, uint32_t cqe, struct vrdma_cq **cqp)
{
	struct virtio_rdma_cmd_create_cq req = { .cqe = cqe };
	struct virtio_rdma_rsp_create_cq rsp;
	struct vrdma_cq *cq;
	unsigned int i, num;
	int ret;

	if (!ctx || !cqp)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	vring_init(&cq->vq);
	cq->ctx = ctx;
	if (ctx->rings) {	/* ABI v2: its CQEs in a ring */
		ret = ring_create_cq(ctx, cq, cqe);
		if (ret)
			goto free_cq;
		list_add(&ctx->cqs, &cq->link);
		*cqp = cq;
		return 0;
	}
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_CQ, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		goto free_cq;
	cq->cqn = rsp.cqn;
	if (cq->cqn >= ctx->max_cq) {
		ret = -EPROTO;	/* no queue for it */
		goto destroy_cq;
	}
	num = ring_size_for(cqe);
	cq->bufs = shm_alloc(ctx, (size_t)num * sizeof(*cq->bufs));
	if (!cq->bufs) {
		ret = -ENOMEM;
		goto destroy_cq;
	}
	ret = vring_setup(ctx, &cq->vq, VIRTIO_RDMA_CQ_VQ(cq->cqn), num, 0);
	if (ret)
		goto reset_ring;
	for (i = 0; i < num; i++) {
		cq->vq.desc[i] = (struct vring_desc){
			.addr = vrdma_gpa(ctx, &cq->bufs[i]),
			.len = sizeof(cq->bufs[i]),
			.flags = VRING_DESC_F_WRITE,
		};
		vring_push(&cq->vq, i);
	}
	vring_publish(&cq->vq);
	list_add(&ctx->cqs, &cq->link);
	*cqp = cq;
	return 0;

reset_ring:
	cq_reset(ctx, cq);
destroy_cq:
	destroy_cmd(ctx, VIRTIO_CMD_DESTROY_CQ, cq->cqn);
free_cq:
	free(cq);
	return ret;
}

int vrdma_destroy_cq(struct vrdma_cq *cq)
{
	struct vrdma_ctx *ctx;
	int ret;

	if (!cq)
		return -EINVAL;
	ctx = cq->ctx;
	ret = destroy_cmd(ctx, VIRTIO_CMD_DESTROY_CQ, cq->cqn);
	if (ret)
		return ret;
	/* the driver must reset the queue of a destroyed CQ; a ring's
	 * memory is ours again once DESTROY answered */
	if (cq->ring.mem)
		uring_free(ctx, &cq->ring);
	else
		cq_reset(ctx, cq);
	list_del(&cq->link);
	free(cq);
	return 0;
}

uint32_t vrdma_cq_handle(const struct vrdma_cq *cq)
{
	return cq->cqn;
}

int vrdma_poll_cq(struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc)
{
	bool reposted = false;
	int got = 0, ret = 0;

	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	if (cq->ring.mem)
		return ring_poll_cq(cq, n, wc);
	while (got < n) {
		uint32_t id, len;
		int r = vring_peek_used(&cq->vq, &id, &len);

		if (r <= 0) {
			ret = r;
			break;
		}
		/* a bad entry ends the batch; it is reported (and consumed) on
		 * its own so that the completions before it are not lost */
		if (id >= cq->vq.num || len != sizeof(*wc)) {
			if (got)
				break;
			cq->vq.last_used++;
			ret = -EIO;
			if (id < cq->vq.num) {
				vring_push(&cq->vq, id);	/* the buffer is still good */
				reposted = true;
			}
			break;
		}
		memcpy(&wc[got++], &cq->bufs[id], sizeof(*wc));
		cq->vq.last_used++;
		vring_push(&cq->vq, id);
		reposted = true;
	}
	if (reposted)
		vring_publish(&cq->vq);
	/* Nothing yet: the daemon that will write it may be waiting for this
	 * very core. */
	if (!got && !ret && cq->ctx->poll_yield)
		sched_yield();
	return got ? got : ret;
}

int vrdma_req_notify_cq(struct vrdma_cq *cq, bool solicited_only)
{
	struct virtio_rdma_cmd_req_notify req;

	if (!cq)
		return -EINVAL;
	if (cq->ring.mem)	/* its arm word */
		return ring_req_notify_cq(cq, solicited_only);
	req.cqn = cq->cqn;
	req.flags = solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED : VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;
	return ctrl_cmd(cq->ctx, VIRTIO_CMD_REQ_NOTIFY_CQ, &req, sizeof(req), NULL, 0);
}

int vrdma_cq_fd(const struct vrdma_cq *cq)
{
	return !cq ? -EINVAL : cq->ring.mem ? cq->ctx->event.call_fd : cq->vq.call_fd;
}

int vrdma_cq_wait(struct vrdma_cq *cq, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ns() + (int64_t)timeout_ms * 1000000;

	if (!cq)
		return -EINVAL;
	if (cq->ring.mem)	/* the event queue */
		return ring_cq_wait(cq, deadline);
	return wait_eventfd(cq->ctx, cq->vq.call_fd, deadline);
}

int wait_eventfd(struct vrdma_ctx *ctx, int fd, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = ctx->sock, .events = POLLRDHUP },
		};
		uint64_t v;
		int r;

		r = poll(pfd, 2, ms_until(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return 0;
		if (pfd[0].revents & POLLIN) {
			if (read(fd, &v, sizeof(v)) == sizeof(v))
				return 1;
			continue;	/* raced with another reader: nothing left */
		}
		if (pfd[1].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL))
			return conn_lost(ctx, -ECONNRESET);
	}
}

/* The largest WQE each queue takes: the header, the SGEs, inline data. */
size_t sq_slot_size(const struct vrdma_qp_init_attr *init)
{
	return sizeof(struct virtio_rdma_cmd_post_send) +
	       (size_t)init->max_send_sge * sizeof(struct virtio_rdma_sge) + init->max_inline_data;
}

size_t srq_slot_size(uint32_t max_sge)
{
	return sizeof(struct virtio_rdma_cmd_post_recv) + (size_t)max_sge * sizeof(struct virtio_rdma_sge);
}

size_t rq_slot_size(const struct vrdma_qp_init_attr *init)
{
	return srq_slot_size(init->max_recv_sge);
}

int vrdma_create_qp(struct vrdma_pd *pd, const struct vrdma_qp_init_attr *init,
		    struct vrdma_qp **qpp)
{
	struct virtio_rdma_cmd_create_qp req = { 0 };
	struct virtio_rdma_rsp_create_qp rsp;
	struct vrdma_ctx *ctx;
	struct vrdma_qp *qp;
	uint32_t k;
	int ret;

	if (!pd || !init || !qpp || !init->send_cq || !init->recv_cq ||
	    init->send_cq->ctx != pd->ctx || init->recv_cq->ctx != pd->ctx ||
	    (init->srq && init->srq->ctx != pd->ctx))
		return -EINVAL;
	ctx = pd->ctx;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	vring_init(&qp->sq.vq);
	vring_init(&qp->rq.vq);
	req.pdn = pd->pdn;
	req.qp_type = init->qp_type;
	req.sq_sig_type = init->sq_sig_all ? VIRTIO_IB_SIGNAL_ALL_WR : VIRTIO_IB_SIGNAL_REQ_WR;
	req.max_send_wr = init->max_send_wr;
	req.max_send_sge = init->max_send_sge;
	req.send_cqn = init->send_cq->cqn;
	req.max_recv_wr = init->max_recv_wr;
	req.max_recv_sge = init->max_recv_sge;
	req.recv_cqn = init->recv_cq->cqn;
	req.max_inline_data = init->max_inline_data;
	if (init->srq) {
		req.flags = VIRTIO_RDMA_CREATE_QP_SRQ;
		req.srqn = init->srq->srqn;
	}
	qp->ctx = ctx;
	qp->qp_type = init->qp_type;
	qp->max_send_sge = init->max_send_sge;
	qp->max_recv_sge = init->max_recv_sge;
	qp->max_inline = init->max_inline_data;
	if (ctx->rings) {	/* ABI v2: its queues rings (on an SRQ, the SQ only) */
		ret = ring_create_qp(ctx, qp, &req, init->max_send_wr, init->max_recv_wr,
				     sq_slot_size(init), rq_slot_size(init), &k);
		if (ret)
			goto free_qp;
		list_add(&ctx->qps, &qp->link);
		*qpp = qp;
		return 0;
	}
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_QP, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		goto free_qp;
	qp->qpn = rsp.qpn;
	k = rsp.qp_index;
	if ((init->qp_type == VIRTIO_IB_QPT_GSI ? qp->qpn != VIRTIO_RDMA_GSI_QPN :
	     qp->qpn < VIRTIO_RDMA_FIRST_QPN || qp->qpn > VIRTIO_RDMA_LAST_QPN) || k >= ctx->max_qp) {
		ret = -EPROTO;	/* no queues for it */
		goto destroy_qp;
	}
	ret = wq_setup(ctx, &qp->sq, VIRTIO_RDMA_SQ_VQ(ctx->max_cq, k), init->max_send_wr,
		       sq_slot_size(init));
	if (ret)
		goto reset_queues;
	/* on an SRQ the slot's RQ takes nothing: left without buffers */
	if (!init->srq)
		ret = wq_setup(ctx, &qp->rq, VIRTIO_RDMA_RQ_VQ(ctx->max_cq, k), init->max_recv_wr,
			       rq_slot_size(init));
	if (ret)
		goto reset_queues;
	list_add(&ctx->qps, &qp->link);
	*qpp = qp;
	return 0;

reset_queues:
	wq_teardown(ctx, &qp->sq);
	wq_teardown(ctx, &qp->rq);
destroy_qp:
	destroy_cmd(ctx, VIRTIO_CMD_DESTROY_QP, qp->qpn);
free_qp:
	free(qp);
	return ret;
}

int vrdma_destroy_qp(struct vrdma_qp *qp)
{
	struct vrdma_ctx *ctx;
	int ret;

	if (!qp)
		return -EINVAL;
	ctx = qp->ctx;
	ret = destroy_cmd(ctx, VIRTIO_CMD_DESTROY_QP, qp->qpn);
	if (ret)
		return ret;
	/* the driver must reset the queues of a destroyed QP; rings are
	 * ours again once DESTROY answered */
	uring_free(ctx, &qp->sq.ring);
	uring_free(ctx, &qp->rq.ring);
	wq_teardown(ctx, &qp->sq);
	wq_teardown(ctx, &qp->rq);
	list_del(&qp->link);
	free(qp);
	return 0;
}

uint32_t vrdma_qp_num(const struct vrdma_qp *qp)
{
	return qp->qpn;
}

int vrdma_modify_qp(struct vrdma_qp *qp, const struct virtio_rdma_qp_attr *attr, uint32_t attr_mask)
{
	struct virtio_rdma_cmd_modify_qp req;

	if (!qp || !attr)
		return -EINVAL;
	req.qpn = qp->qpn;
	req.attr_mask = attr_mask;
	req.attrs = *attr;
	if ((attr_mask & VIRTIO_IB_QP_AV) && all_zero(req.attrs.ah_attr.dmac, 6))
		resolve_cached(req.attrs.ah_attr.grh.dgid, req.attrs.ah_attr.dmac);
	return ctrl_cmd(qp->ctx, VIRTIO_CMD_MODIFY_QP, &req, sizeof(req), NULL, 0);
}

int vrdma_query_qp(struct vrdma_qp *qp, uint32_t attr_mask, struct virtio_rdma_qp_attr *attr)
{
	struct virtio_rdma_cmd_query_qp req;
	struct virtio_rdma_rsp_query_qp rsp;
	int ret;

	if (!qp || !attr)
		return -EINVAL;
	req.qpn = qp->qpn;
	req.attr_mask = attr_mask;
	ret = ctrl_cmd(qp->ctx, VIRTIO_CMD_QUERY_QP, &req, sizeof(req), &rsp, sizeof(rsp));
	if (!ret)
		*attr = rsp.attr;
	return ret;
}

/* A WQE's scatter list in the ABI's form at p; returns the end. */
static uint8_t *put_sges(uint8_t *p, const struct vrdma_sge *sg_list, uint32_t num_sge)
{
	uint32_t i;

	for (i = 0; i < num_sge; i++) {
		struct virtio_rdma_sge sge = {
			.addr = sg_list[i].addr,
			.length = sg_list[i].length,
			.lkey = sg_list[i].lkey,
		};

		memcpy(p, &sge, sizeof(sge));
		p += sizeof(sge);
	}
	return p;
}

int vrdma_post_send(struct vrdma_qp *qp, const struct vrdma_send_wr *wr)
{
	struct virtio_rdma_cmd_post_send hdr = { 0 };
	bool inl;
	size_t inline_len = 0, len;
	uint8_t *buf, *p;
	uint32_t i;
	int id;

	if (!qp || !wr || (wr->num_sge && !wr->sg_list) || wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	inl = wr->send_flags & VIRTIO_IB_SEND_INLINE;
	for (i = 0; inl && i < wr->num_sge; i++) {
		if (wr->sg_list[i].length && !wr->sg_list[i].addr)
			return -EINVAL;
		inline_len += wr->sg_list[i].length;
	}
	if (inline_len > qp->max_inline)
		return -EINVAL;
	hdr.num_sge = wr->num_sge;
	hdr.send_flags = wr->send_flags;
	hdr.opcode = wr->opcode;
	hdr.wr_id = wr->wr_id;
	hdr.ex.imm_data = wr->imm_data;
	if (wr->opcode == VIRTIO_IB_WR_LOCAL_INV || wr->opcode == VIRTIO_IB_WR_SEND_WITH_INV)
		hdr.ex.invalidate_rkey = wr->invalidate_rkey;
	if (wr->opcode == VIRTIO_IB_WR_REG_MR) {
		hdr.wr.reg.mrn = wr->reg.mrn;
		hdr.wr.reg.key = wr->reg.key;
		hdr.wr.reg.access = wr->reg.access;
	} else if (wr->opcode == VIRTIO_IB_WR_BIND_MW) {
		hdr.wr.bind_mw.addr = wr->bind.addr;
		hdr.wr.bind_mw.length = wr->bind.length;
		hdr.wr.bind_mw.mw_rkey = wr->bind.mw_rkey;
		hdr.wr.bind_mw.rkey = wr->bind.rkey;
		hdr.wr.bind_mw.mr_lkey = wr->bind.mr_lkey;
		hdr.wr.bind_mw.access = wr->bind.access;
	} else if (qp->qp_type == VIRTIO_IB_QPT_UD || qp->qp_type == VIRTIO_IB_QPT_GSI) {
		hdr.wr.ud.remote_qpn = wr->remote_qpn;
		hdr.wr.ud.remote_qkey = wr->remote_qkey;
		hdr.wr.ud.av = wr->av;
		hdr.wr.ud.av.port = 1;
		if (all_zero(hdr.wr.ud.av.dmac, 6))
			resolve_cached(hdr.wr.ud.av.dgid, hdr.wr.ud.av.dmac);
	} else if (wr->opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD) {
		hdr.wr.atomic.remote_addr = wr->remote_addr;
		hdr.wr.atomic.compare_add = wr->compare_add;
		hdr.wr.atomic.swap = wr->swap;
		hdr.wr.atomic.rkey = wr->rkey;
	} else {
		hdr.wr.rdma.remote_addr = wr->remote_addr;
		hdr.wr.rdma.rkey = wr->rkey;
	}
	len = sizeof(hdr) + (size_t)wr->num_sge * sizeof(struct virtio_rdma_sge) + inline_len;
	id = wq_get(qp->ctx, &qp->sq, len, &buf);
	if (id < 0)
		return id;
	memcpy(buf, &hdr, sizeof(hdr));
	p = put_sges(buf + sizeof(hdr), wr->sg_list, wr->num_sge);
	for (i = 0; inl && i < wr->num_sge; i++) {
		if (wr->sg_list[i].length)
			memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		p += wr->sg_list[i].length;
	}
	wq_post(qp->ctx, &qp->sq, id, buf, len);
	return 0;
}

/* A receive WQE on a QP's or an SRQ's ring. */
static int post_recv(struct vrdma_ctx *ctx, struct wq *rq, uint32_t max_sge,
		     const struct vrdma_recv_wr *wr)
{
	struct virtio_rdma_cmd_post_recv hdr = { 0 };
	uint8_t *buf;
	size_t len;
	int id;

	if (!wr || (wr->num_sge && !wr->sg_list) || wr->num_sge > max_sge ||
	    (!rq->vq.num && !rq->ring.mem))
		return -EINVAL;
	hdr.num_sge = wr->num_sge;
	hdr.wr_id = wr->wr_id;
	len = sizeof(hdr) + (size_t)wr->num_sge * sizeof(struct virtio_rdma_sge);
	id = wq_get(ctx, rq, len, &buf);
	if (id < 0)
		return id;
	memcpy(buf, &hdr, sizeof(hdr));
	put_sges(buf + sizeof(hdr), wr->sg_list, wr->num_sge);
	wq_post(ctx, rq, id, buf, len);
	return 0;
}

int vrdma_post_recv(struct vrdma_qp *qp, const struct vrdma_recv_wr *wr)
{
	return qp ? post_recv(qp->ctx, &qp->rq, qp->max_recv_sge, wr) : -EINVAL;
}

int vrdma_post_srq_recv(struct vrdma_srq *srq, const struct vrdma_recv_wr *wr)
{
	return srq ? post_recv(srq->ctx, &srq->rq, srq->max_sge, wr) : -EINVAL;
}

int vrdma_create_srq(struct vrdma_pd *pd, uint32_t max_wr, uint32_t max_sge, uint32_t srq_limit,
		     struct vrdma_srq **srqp)
{
	struct virtio_rdma_cmd_create_srq req = { 0 };
	struct virtio_rdma_rsp_create_srq rsp;
	struct vrdma_srq *srq;
	int ret;

	if (!pd || !srqp)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	vring_init(&srq->rq.vq);
	req.pdn = pd->pdn;
	req.max_wr = max_wr;
	req.max_sge = max_sge;
	req.srq_limit = srq_limit;
	srq->ctx = pd->ctx;
	srq->max_sge = max_sge;
	if (pd->ctx->rings) {	/* ABI v2: its queue a ring */
		ret = ring_create_srq(pd->ctx, srq, &req, srq_slot_size(max_sge));
		if (ret)
			goto free_srq;
		list_add(&pd->ctx->srqs, &srq->link);
		*srqp = srq;
		return 0;
	}
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_CREATE_SRQ, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		goto free_srq;
	srq->srqn = rsp.srqn;
	if (rsp.srq_index >= pd->ctx->max_qp) {
		ret = -EPROTO;	/* no queue for it */
		goto destroy_srq;
	}
	ret = wq_setup(pd->ctx, &srq->rq, VIRTIO_RDMA_RQ_VQ(pd->ctx->max_cq, rsp.srq_index),
		       max_wr, srq_slot_size(max_sge));
	if (ret)
		goto reset_queue;
	list_add(&pd->ctx->srqs, &srq->link);
	*srqp = srq;
	return 0;

reset_queue:
	wq_teardown(pd->ctx, &srq->rq);
destroy_srq:
	destroy_cmd(pd->ctx, VIRTIO_CMD_DESTROY_SRQ, srq->srqn);
free_srq:
	free(srq);
	return ret;
}

int vrdma_destroy_srq(struct vrdma_srq *srq)
{
	int ret;

	if (!srq)
		return -EINVAL;
	ret = destroy_cmd(srq->ctx, VIRTIO_CMD_DESTROY_SRQ, srq->srqn);
	if (ret)
		return ret;
	uring_free(srq->ctx, &srq->rq.ring);	/* ours again once DESTROY answered */
	wq_teardown(srq->ctx, &srq->rq);
	list_del(&srq->link);
	free(srq);
	return 0;
}

uint32_t vrdma_srq_handle(const struct vrdma_srq *srq)
{
	return srq->srqn;
}

int vrdma_modify_srq(struct vrdma_srq *srq, uint32_t attr_mask, uint32_t max_wr,
		     uint32_t srq_limit)
{
	struct virtio_rdma_cmd_modify_srq req = { 0 };

	if (!srq)
		return -EINVAL;
	req.srqn = srq->srqn;
	req.attr_mask = attr_mask;
	req.max_wr = max_wr;
	req.srq_limit = srq_limit;
	return ctrl_cmd(srq->ctx, VIRTIO_CMD_MODIFY_SRQ, &req, sizeof(req), NULL, 0);
}

int vrdma_query_srq(struct vrdma_srq *srq, struct virtio_rdma_rsp_query_srq *attr)
{
	struct virtio_rdma_cmd_query_srq req = { 0 };

	if (!srq || !attr)
		return -EINVAL;
	req.srqn = srq->srqn;
	return ctrl_cmd(srq->ctx, VIRTIO_CMD_QUERY_SRQ, &req, sizeof(req), attr, sizeof(*attr));
}

int vrdma_post_raw(struct vrdma_qp *qp, bool recv, const void *wqe, size_t len)
{
	struct wq *wq;
	uint8_t *buf;
	int id;

	if (!qp || !wqe || !len || len > UINT32_MAX)
		return -EINVAL;
	wq = recv ? &qp->rq : &qp->sq;
	id = wq_get(qp->ctx, wq, len, &buf);
	if (id < 0)
		return id;
	memcpy(buf, wqe, len);
	wq_post(qp->ctx, wq, id, buf, len);
	return 0;
}
