// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queue pairs. QP slot k has its SQ at virtqueue 1 + max_cq + 2k and its RQ
 * next to it; a WQE is one device-readable buffer (the command, its SGEs,
 * inline data) that the device copies and returns at once with used length
 * 0 (docs/virtio-rdma.md section 5). Buffers are reclaimed when posting.
 */
#include <linux/scatterlist.h>
#include <linux/delay.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vrdma.h"

#define VRDMA_MAX_INLINE	512	/* docs/virtio-rdma.md, CREATE_QP */

/* UD, or GSI (QP1): WQEs carry an address vector */
static bool vrdma_qp_datagram(const struct vrdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/* Takes back what the device gave back on a slot's queue, a previous
 * user's WQEs at CREATE, or this one's at DESTROY, and drops what never
 * left the backlog.
 */
static void vrdma_wq_take(struct vrdma_wq *wq)
{
	unsigned long flags;

	spin_lock_irqsave(&wq->lock, flags);
	vrdma_wq_reclaim(wq);
	vrdma_wq_drop(wq);
	spin_unlock_irqrestore(&wq->lock, flags);
}

/*
 * The device lets the QP go and its slot becomes free; the slot is being
 * released and nothing finds the QP by its number.
 */
static void vrdma_qp_release(struct vrdma_dev *dev, struct vrdma_qp *qp)
{
	vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_QP, "DESTROY_QP",
			  qp->ibqp.qp_num);
	/* the device gave back every WQE of the slot (DESTROY_QP) */
	vrdma_wq_take(qp->sq);
	vrdma_wq_take(qp->rq);
	vrdma_slot_release_end(dev, &dev->qp_slots[qp->slot].state);
}

/* A ring's stride: the largest WQE, a power of two of at least 64. */
static u32 vrdma_stride(size_t wqe)
{
	return roundup_pow_of_two(max_t(size_t, wqe, 64));
}

/* entries for max_wr WQEs: a full ring is a consumer past its depth */
static u32 vrdma_entries(u32 max_wr)
{
	return roundup_pow_of_two(max_t(u32, max_wr, 1));
}

/*
 * A program posts into its own rings; a post of no work request through
 * uverbs is its kick for a device that sleeps (as siw's doorbell).
 */
static int vrdma_user_kick(struct vrdma_dev *dev, const void *wr,
			   const void **bad_wr)
{
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	vrdma_ring_kick(dev);
	return 0;
}

static size_t vrdma_send_wqe_max(const struct ib_qp_cap *cap)
{
	return sizeof(struct virtio_rdma_cmd_post_send) +
	       cap->max_send_sge * sizeof(struct virtio_rdma_sge) +
	       cap->max_inline_data;
}

static size_t vrdma_recv_wqe_max(u32 max_sge)
{
	return sizeof(struct virtio_rdma_cmd_post_recv) +
	       max_sge * sizeof(struct virtio_rdma_sge);
}

/* A program's work queue ring: deep and wide enough for its caps. */
static int vrdma_wq_ring_user(struct vrdma_dev *dev, struct vrdma_ring *r,
			      const struct vrdma_ring_req *req, u32 max_wr,
			      size_t wqe)
{
	if (req->entries < max_wr || req->stride < wqe)
		return -EINVAL;
	return vrdma_ring_user(dev, r, req, false);
}

/* A program's QP rings (VRDMA_UCTX_RINGS), bits of its own page. */
static int vrdma_qp_rings_user(struct vrdma_dev *dev, struct vrdma_qp *qp,
			       bool srq, struct vrdma_ucontext *uc,
			       struct ib_udata *udata)
{
	struct vrdma_ring *rs[2] = { &qp->sqr, &qp->rqr };
	const struct ib_qp_cap *cap = &qp->cap;
	struct vrdma_create_qp_req ureq;
	int err;

	if (udata->outlen < sizeof(struct vrdma_create_qp_resp))
		return -EINVAL;
	if (ib_copy_from_udata(&ureq, udata, min(udata->inlen, sizeof(ureq))))
		return -EFAULT;
	err = vrdma_wq_ring_user(dev, &qp->sqr, &ureq.sq, cap->max_send_wr,
				 vrdma_send_wqe_max(cap));
	if (!err && !srq)
		err = vrdma_wq_ring_user(dev, &qp->rqr, &ureq.rq,
					 cap->max_recv_wr,
					 vrdma_recv_wqe_max(cap->max_recv_sge));
	if (!err)
		err = vrdma_udb_get(dev, uc, rs, srq ? 1 : 2);
	return err;
}

/*
 * ABI v2: the QP's send ring and (without an SRQ) receive ring, their bits
 * on one doorbell page, given with CREATE_QP_RING. A user's rings are
 * charged to it and locked with a mutex (its inline copy may fault), or
 * are its own memory (udata with rings).
 */
static int vrdma_create_qp_ring(struct vrdma_dev *dev, struct vrdma_qp *qp,
				const struct virtio_rdma_cmd_create_qp *qreq,
				struct ib_udata *udata,
				struct virtio_rdma_rsp_create_qp *rsp)
{
	struct vrdma_ring *rs[2] = { &qp->sqr, &qp->rqr };
	bool srq = qreq->flags & cpu_to_le32(VIRTIO_RDMA_CREATE_QP_SRQ);
	struct virtio_rdma_cmd_create_qp_ring *req;
	struct vrdma_ucontext *uc;
	const struct ib_qp_cap *cap = &qp->cap;
	__le64 *sl = NULL, *rl = NULL;
	bool user = udata;
	u32 sn = 0, rn = 0;
	int err;

	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	uc = vrdma_uctx_rings(udata);
	if (uc) {
		err = vrdma_qp_rings_user(dev, qp, srq, uc, udata);
		goto rings;
	}
	/* a kernel QP's one more: ib_drain_qp posts past the depth */
	err = vrdma_ring_alloc(&qp->sqr, vrdma_entries(cap->max_send_wr + !user),
			       vrdma_stride(vrdma_send_wqe_max(cap)), user, user);
	if (!err && !srq)
		err = vrdma_ring_alloc(&qp->rqr,
				       vrdma_entries(cap->max_recv_wr + !user),
				       vrdma_stride(vrdma_recv_wqe_max(cap->max_recv_sge)),
				       user, user);
	if (!err)
		err = vrdma_db_get(dev, rs, srq ? 1 : 2);
rings:
	if (!err) {
		sl = vrdma_ring_pages(&qp->sqr, &sn);
		rl = srq ? NULL : vrdma_ring_pages(&qp->rqr, &rn);
		if (!sl || (!srq && !rl))
			err = -ENOMEM;
	}
	if (err) {
		kfree(sl);
		kfree(rl);
		kfree(req);
		vrdma_ring_free(dev, &qp->sqr, false);
		vrdma_ring_free(dev, &qp->rqr, false);
		return err;
	}
	req->qp = *qreq;
	req->dbn = cpu_to_le32(qp->sqr.db->dbn);
	vrdma_ring_desc(&qp->sqr, &req->sq, sl, sn);
	if (!srq)
		vrdma_ring_desc(&qp->rqr, &req->rq, rl, rn);
	err = vrdma_ring_cmd(dev, VIRTIO_CMD_CREATE_QP_RING, req, sizeof(*req),
			     rsp, sizeof(*rsp), sl, rl);
	kfree(req);
	if (err) {
		vrdma_ring_free(dev, &qp->sqr, READ_ONCE(dev->broken));
		vrdma_ring_free(dev, &qp->rqr, READ_ONCE(dev->broken));
	}
	return err;
}

/* ABI v2: the QP the device made, found by its number from now on; a
 * program on its own rings is told their bits.
 */
static int vrdma_create_qp_ring_done(struct vrdma_dev *dev,
				     struct vrdma_qp *qp, u32 qpn,
				     struct ib_udata *udata)
{
	struct vrdma_create_qp_resp uresp = {
		.flags = VRDMA_UCTX_RINGS,
		.sq_bit = qp->sqr.bit,
		.rq_bit = qp->rqr.bit,
	};
	int err;

	qp->ibqp.qp_num = qpn;
	err = qp->sqr.umem ? ib_copy_to_udata(udata, &uresp, sizeof(uresp)) : 0;
	if (!err)
		err = xa_insert_irq(&dev->qps, qpn, qp, GFP_KERNEL);
	if (!err)
		return 0;
	if (err == -EBUSY)
		vrdma_dev_error(dev, "device gave QPN %u, which is in use\n", qpn);
	/* the device's error (-EBUSY) or ours: the QP goes */
	if (vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_QP, "DESTROY_QP", qpn) ||
	    err == -EBUSY) {
		vrdma_ring_free(dev, &qp->sqr, true);
		vrdma_ring_free(dev, &qp->rqr, true);
	} else {
		vrdma_ring_free(dev, &qp->sqr, false);
		vrdma_ring_free(dev, &qp->rqr, false);
	}
	return err;
}

int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibqp->device);
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct virtio_rdma_cmd_create_qp req = {};
	struct virtio_rdma_rsp_create_qp rsp;
	struct ib_qp_cap *cap = &init->cap;
	u32 qpn, k;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:	/* QP1, the MAD layer's: never a program's */
		if (udata || !(dev->cfg.caps & VIRTIO_RDMA_CAP_GSI))
			return -EOPNOTSUPP;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > dev->cfg.max_qp_wr ||
	    cap->max_recv_wr > dev->cfg.max_qp_wr ||
	    cap->max_send_sge > dev->cfg.max_send_sge ||
	    cap->max_recv_sge > dev->cfg.max_recv_sge ||
	    cap->max_inline_data > VRDMA_MAX_INLINE)
		return -EINVAL;

	req.pdn = cpu_to_le32(to_vpd(ibqp->pd)->pdn);
	req.qp_type = init->qp_type;	/* IB_QPT_* are the ABI's numbers */
	req.sq_sig_type = init->sq_sig_type == IB_SIGNAL_REQ_WR ?
			  VIRTIO_IB_SIGNAL_REQ_WR : VIRTIO_IB_SIGNAL_ALL_WR;
	req.max_send_wr = cpu_to_le32(cap->max_send_wr);
	req.max_send_sge = cpu_to_le32(cap->max_send_sge);
	req.send_cqn = cpu_to_le32(to_vcq(init->send_cq)->cqn);
	req.max_recv_wr = cpu_to_le32(cap->max_recv_wr);
	req.max_recv_sge = cpu_to_le32(cap->max_recv_sge);
	req.recv_cqn = cpu_to_le32(to_vcq(init->recv_cq)->cqn);
	req.max_inline_data = cpu_to_le32(cap->max_inline_data);
	if (init->srq) {
		req.flags = cpu_to_le32(VIRTIO_RDMA_CREATE_QP_SRQ);
		req.srqn = cpu_to_le32(to_vsrq(init->srq)->srqn);
		req.max_recv_wr = 0;
		req.max_recv_sge = 0;
	}
	qp->dev = dev;
	qp->cap = *cap;
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	if (dev->rings)
		err = vrdma_create_qp_ring(dev, qp, &req, udata, &rsp);
	else
		err = vrdma_cmd(dev, VIRTIO_CMD_CREATE_QP, &req, sizeof(req),
				&rsp, sizeof(rsp));
	if (err)
		return err;
	qpn = le32_to_cpu(rsp.qpn);
	k = le32_to_cpu(rsp.qp_index);
	/* on rings qp_index names no virtqueue */
	if (dev->rings)
		k = 0;
	if (k >= max(dev->max_qp, 1u) ||
	    (init->qp_type == IB_QPT_GSI ? qpn != VIRTIO_RDMA_GSI_QPN :
	     qpn < VIRTIO_RDMA_FIRST_QPN || qpn > VIRTIO_RDMA_LAST_QPN)) {
		vrdma_dev_error(dev, "device gave QP %u in slot %u of %u\n",
				qpn, k, dev->max_qp);
		vrdma_ring_free(dev, &qp->sqr, true);
		vrdma_ring_free(dev, &qp->rqr, true);
		return -EIO;
	}
	if (dev->rings)
		return vrdma_create_qp_ring_done(dev, qp, qpn, udata);
	err = vrdma_slot_claim(dev, &dev->qp_slots[k].state, "QP", k);
	if (err)
		return err;
	qp->slot = k;
	qp->sq = &dev->qp_slots[k].sq;
	qp->rq = &dev->qp_slots[k].rq;
	vrdma_wq_take(qp->sq);
	vrdma_wq_take(qp->rq);
	ibqp->qp_num = qpn;
	err = xa_insert_irq(&dev->qps, qpn, qp, GFP_KERNEL);
	if (err) {
		if (err == -EBUSY)
			vrdma_dev_error(dev, "device gave QPN %u, which is in use\n",
					qpn);
		goto destroy_qp;
	}
	return 0;

destroy_qp:
	vrdma_slot_release_begin(dev, &dev->qp_slots[k].state);
	vrdma_qp_release(dev, qp);
	return err;
}

#define VRDMA_QP_ATTR_MASK	((IB_QP_DEST_QPN << 1) - 1)

static void vrdma_ah_to_dev(struct virtio_rdma_ah_attr *d,
			    const struct rdma_ah_attr *a)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(a);

	memcpy(d->grh.dgid, grh->dgid.raw, sizeof(d->grh.dgid));
	d->grh.flow_label = cpu_to_le32(grh->flow_label);
	d->grh.sgid_index = grh->sgid_index;
	d->grh.hop_limit = grh->hop_limit;
	d->grh.traffic_class = grh->traffic_class;
	d->sl = rdma_ah_get_sl(a);
	d->static_rate = rdma_ah_get_static_rate(a);
	d->port_num = rdma_ah_get_port_num(a);
	d->ah_flags = rdma_ah_get_ah_flags(a) & IB_AH_GRH;
	memcpy(d->dmac, a->roce.dmac, ETH_ALEN);
}

static void vrdma_ah_from_dev(struct rdma_ah_attr *a,
			      const struct virtio_rdma_ah_attr *d)
{
	union ib_gid dgid;

	memset(a, 0, sizeof(*a));
	a->type = RDMA_AH_ATTR_TYPE_ROCE;
	memcpy(dgid.raw, d->grh.dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(a, &dgid, le32_to_cpu(d->grh.flow_label) & 0xfffff,
			d->grh.sgid_index, d->grh.hop_limit,
			d->grh.traffic_class);
	rdma_ah_set_sl(a, d->sl);
	rdma_ah_set_static_rate(a, d->static_rate);
	rdma_ah_set_port_num(a, VRDMA_PORT);
	memcpy(a->roce.dmac, d->dmac, ETH_ALEN);
}

int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct virtio_rdma_cmd_modify_qp *req;
	struct virtio_rdma_qp_attr *a;
	int err;

	if (mask & ~VRDMA_QP_ATTR_MASK)
		return -EOPNOTSUPP;
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	a = &req->attrs;
	req->qpn = cpu_to_le32(qp->ibqp.qp_num);
	req->attr_mask = cpu_to_le32(mask);	/* IB_QP_* are the ABI's bits */
	a->qp_state = attr->qp_state;
	a->cur_qp_state = attr->cur_qp_state;
	a->path_mtu = attr->path_mtu;
	a->path_mig_state = attr->path_mig_state;
	a->qkey = cpu_to_le32(attr->qkey);
	a->rq_psn = cpu_to_le32(attr->rq_psn);
	a->sq_psn = cpu_to_le32(attr->sq_psn);
	a->dest_qp_num = cpu_to_le32(attr->dest_qp_num);
	a->qp_access_flags = cpu_to_le32(attr->qp_access_flags);
	a->pkey_index = cpu_to_le16(attr->pkey_index);
	a->en_sqd_async_notify = attr->en_sqd_async_notify;
	a->max_rd_atomic = attr->max_rd_atomic;
	a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a->min_rnr_timer = attr->min_rnr_timer;
	a->port_num = attr->port_num;
	a->timeout = attr->timeout;
	a->retry_cnt = attr->retry_cnt;
	a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_AV)
		vrdma_ah_to_dev(&a->ah_attr, &attr->ah_attr);
	err = vrdma_cmd(qp->dev, VIRTIO_CMD_MODIFY_QP, req, sizeof(*req),
			NULL, 0);
	kfree(req);
	if (!err && (mask & IB_QP_STATE))
		WRITE_ONCE(qp->state, attr->qp_state);
	return err;
}

int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct virtio_rdma_cmd_query_qp req = {
		.qpn = cpu_to_le32(qp->ibqp.qp_num),
		.attr_mask = cpu_to_le32(mask),
	};
	struct virtio_rdma_rsp_query_qp *rsp;
	struct virtio_rdma_qp_attr *a;
	int err;

	rsp = kzalloc(sizeof(*rsp), GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	err = vrdma_cmd(qp->dev, VIRTIO_CMD_QUERY_QP, &req, sizeof(req),
			rsp, sizeof(*rsp));
	if (err)
		goto free_rsp;
	a = &rsp->attr;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = min_t(u8, a->qp_state, IB_QPS_ERR);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = clamp_t(u8, a->path_mtu, IB_MTU_256, IB_MTU_4096);
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(a->qkey);
	attr->rq_psn = le32_to_cpu(a->rq_psn) & 0xffffff;
	attr->sq_psn = le32_to_cpu(a->sq_psn) & 0xffffff;
	attr->dest_qp_num = le32_to_cpu(a->dest_qp_num) & 0xffffff;
	attr->qp_access_flags = le32_to_cpu(a->qp_access_flags);
	attr->pkey_index = le16_to_cpu(a->pkey_index);
	attr->en_sqd_async_notify = a->en_sqd_async_notify;
	attr->sq_draining = a->sq_draining;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = VRDMA_PORT;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	attr->cap = qp->cap;
	if (!vrdma_qp_datagram(qp))
		vrdma_ah_from_dev(&attr->ah_attr, &a->ah_attr);

	memset(init, 0, sizeof(*init));
	init->qp_type = qp->ibqp.qp_type;
	init->send_cq = qp->ibqp.send_cq;
	init->recv_cq = qp->ibqp.recv_cq;
	init->cap = qp->cap;
	init->sq_sig_type = qp->sq_sig_type;
free_rsp:
	kfree(rsp);
	return err;
}

/*
 * Never fails (uverbs warns and leaks on a failed destroy at close): a
 * device that refuses is a device error, and what it holds of the slot
 * stays with it until it is reset.
 */
int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_dev *dev = qp->dev;
	struct vrdma_cq *scq = to_vcq(ibqp->send_cq);
	struct vrdma_cq *rcq = to_vcq(ibqp->recv_cq);
	unsigned long flags;
	int err;

	if (dev->rings) {
		/* as below; the CQs' pollers hold their rings' locks */
		xa_erase_irq(&dev->qps, qp->ibqp.qp_num);
		spin_lock_irqsave(&scq->ring.lock, flags);
		spin_unlock_irqrestore(&scq->ring.lock, flags);
		spin_lock_irqsave(&rcq->ring.lock, flags);
		spin_unlock_irqrestore(&rcq->ring.lock, flags);
		err = vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_QP, "DESTROY_QP",
					qp->ibqp.qp_num);
		vrdma_ring_free(dev, &qp->sqr, err);
		vrdma_ring_free(dev, &qp->rqr, err);
		return 0;
	}
	vrdma_slot_release_begin(dev, &dev->qp_slots[qp->slot].state);
	/* completions and events find it no more; a poller that found it
	 * before holds its CQ's slot lock until done with it
	 */
	xa_erase_irq(&dev->qps, qp->ibqp.qp_num);
	spin_lock_irqsave(&scq->slot->lock, flags);
	spin_unlock_irqrestore(&scq->slot->lock, flags);
	spin_lock_irqsave(&rcq->slot->lock, flags);
	spin_unlock_irqrestore(&rcq->slot->lock, flags);
	vrdma_qp_release(dev, qp);
	return 0;
}

/*
 * Posts one WQE. The device takes WQEs off the ring as fast as it polls,
 * so a full ring is mostly a device that has not got round to it: a user
 * QP (process context) gives it a moment, kicked, before calling the queue
 * full; a kernel QP may be in atomic context, and its WQE waits in the
 * backlog (up to max, the queue's depth) instead.
 */
#define VRDMA_RING_WAIT_US	(2 * USEC_PER_SEC)

static int vrdma_wq_post(struct vrdma_dev *dev, bool user, struct vrdma_wq *wq,
			 struct vrdma_wqe *w, u32 max, bool *kick)
{
	unsigned int waited = 0;
	unsigned long flags;
	int err;

	for (;;) {
		spin_lock_irqsave(&wq->lock, flags);
		err = vrdma_wq_add(wq, w, kick);
		if (err == -ENOSPC && !user && vrdma_wq_defer(dev, wq, w, max))
			err = 0;
		spin_unlock_irqrestore(&wq->lock, flags);
		if (err != -ENOSPC || !user ||
		    waited >= VRDMA_RING_WAIT_US)
			break;
		if (*kick) {
			virtqueue_notify(wq->vq);
			*kick = false;
		}
		usleep_range(50, 100);
		waited += 100;
		if (fatal_signal_pending(current))
			break;
	}
	return err == -ENOSPC ? -ENOMEM : err;	/* full, as a HCA's would be */
}

static void vrdma_fill_sges(struct virtio_rdma_sge *d,
			    const struct ib_sge *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		d[i].addr = cpu_to_le64(s[i].addr);
		d[i].length = cpu_to_le32(s[i].length);
		d[i].lkey = cpu_to_le32(s[i].lkey);
	}
}

/* Copies the inline data after the SGEs: from the user's memory for a user
 * QP (uverbs posts in the caller's context), else from kernel addresses.
 */
static int vrdma_copy_inline(struct vrdma_qp *qp, u8 *dst,
			     const struct ib_send_wr *wr)
{
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *s = &wr->sg_list[i];

		if (qp->ibqp.uobject) {
			if (copy_from_user(dst, u64_to_user_ptr(s->addr),
					   s->length))
				return -EFAULT;
		} else {
			memcpy(dst, (void *)(uintptr_t)s->addr, s->length);
		}
		dst += s->length;
	}
	return 0;
}

/* A WQE of len bytes, zeroed. */
static struct vrdma_wqe *vrdma_wqe_alloc(size_t len, bool user)
{
	struct vrdma_wqe *w = kzalloc(struct_size(w, data, len),
				      user ? GFP_KERNEL : GFP_ATOMIC);

	if (w)
		w->len = len;
	return w;
}

/* Checks one send WR against the QP; its WQE's length in *len. */
static int vrdma_send_check(struct vrdma_qp *qp, const struct ib_send_wr *wr,
			    size_t *len)
{
	bool inl = wr->send_flags & IB_SEND_INLINE;
	size_t inl_len = 0;
	int i;

	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		break;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		if (vrdma_qp_datagram(qp))
			return -EINVAL;
		break;
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		/* the device checks an atomic's 8 bytes of SGE */
		if (qp->ibqp.qp_type != IB_QPT_RC || inl)
			return -EINVAL;
		break;
	case IB_WR_SEND_WITH_INV:	/* IETH: RC only (IBA 9.2.1) */
		if (qp->ibqp.qp_type != IB_QPT_RC)
			return -EINVAL;
		break;
	case IB_WR_LOCAL_INV:		/* IBA 10.7.2.1, 10.6.3.6 */
	case IB_WR_REG_MR:
		if (qp->ibqp.qp_type != IB_QPT_RC || inl || wr->num_sge)
			return -EINVAL;
		if (wr->opcode == IB_WR_REG_MR && !to_vmr(reg_wr(wr)->mr)->pages)
			return -EINVAL;	/* not an alloc_mr MR */
		break;
	default:
		return -EINVAL;	/* not offered by the device (yet) */
	}
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;
	if (vrdma_qp_datagram(qp) && !ud_wr(wr)->ah)
		return -EINVAL;
	if (inl) {
		for (i = 0; i < wr->num_sge; i++)
			inl_len += wr->sg_list[i].length;
		if (inl_len > qp->cap.max_inline_data)
			return -EINVAL;
	}
	*len = sizeof(struct virtio_rdma_cmd_post_send) +
	       wr->num_sge * sizeof(struct virtio_rdma_sge) + inl_len;
	return 0;
}

/* Writes a checked send WR's WQE into c, zeroed. */
static int vrdma_send_fill(struct vrdma_qp *qp, const struct ib_send_wr *wr,
			   struct virtio_rdma_cmd_post_send *c)
{
	c->num_sge = cpu_to_le32(wr->num_sge);
	c->send_flags = cpu_to_le32(wr->send_flags &
				    (IB_SEND_FENCE | IB_SEND_SIGNALED |
				     IB_SEND_SOLICITED | IB_SEND_INLINE));
	c->opcode = cpu_to_le32(wr->opcode);	/* IB_WR_* are the ABI's */
	c->wr_id = cpu_to_le64(wr->wr_id);
	c->ex.imm_data = (__force u32)wr->ex.imm_data;
	if (vrdma_qp_datagram(qp)) {
		const struct ib_ud_wr *ud = ud_wr(wr);

		c->wr.ud.remote_qpn = cpu_to_le32(ud->remote_qpn);
		c->wr.ud.remote_qkey = cpu_to_le32(ud->remote_qkey);
		c->wr.ud.av = to_vah(ud->ah)->av;
	} else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		const struct ib_atomic_wr *at = atomic_wr(wr);

		c->wr.atomic.remote_addr = cpu_to_le64(at->remote_addr);
		c->wr.atomic.compare_add = cpu_to_le64(at->compare_add);
		c->wr.atomic.swap = cpu_to_le64(at->swap);
		c->wr.atomic.rkey = cpu_to_le32(at->rkey);
	} else if (wr->opcode == IB_WR_REG_MR) {
		const struct ib_reg_wr *reg = reg_wr(wr);

		c->wr.reg.mrn = cpu_to_le32(to_vmr(reg->mr)->mrn);
		c->wr.reg.key = cpu_to_le32(reg->key);
		c->wr.reg.access = cpu_to_le32(reg->access & ~IB_ACCESS_OPTIONAL);
	} else if (wr->opcode == IB_WR_LOCAL_INV ||
		   wr->opcode == IB_WR_SEND_WITH_INV) {
		c->ex.invalidate_rkey = cpu_to_le32(wr->ex.invalidate_rkey);
	} else if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) {
		c->wr.rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		c->wr.rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
	}
	vrdma_fill_sges((struct virtio_rdma_sge *)(c + 1), wr->sg_list,
			wr->num_sge);
	if (!(wr->send_flags & IB_SEND_INLINE))
		return 0;
	return vrdma_copy_inline(qp, (u8 *)(c + 1) + wr->num_sge *
				 sizeof(struct virtio_rdma_sge), wr);
}

/* One send WR as the device's WQE, in *out. */
static int vrdma_build_send(struct vrdma_qp *qp, const struct ib_send_wr *wr,
			    struct vrdma_wqe **out)
{
	struct vrdma_wqe *w;
	size_t len;
	int err;

	err = vrdma_send_check(qp, wr, &len);
	if (err)
		return err;
	w = vrdma_wqe_alloc(len, qp->ibqp.uobject);
	if (!w)
		return -ENOMEM;
	err = vrdma_send_fill(qp, wr, (struct virtio_rdma_cmd_post_send *)w->data);
	if (err) {
		kfree(w);
		return err;
	}
	*out = w;
	return 0;
}

/*
 * ABI v2: each WQE straight into its slot, then prod and the bell once
 * for the list. The ring has at least max_send_wr entries, so a full one
 * means the consumer posted past its depth: -ENOMEM, as verbs says.
 */
static int vrdma_post_send_ring(struct vrdma_qp *qp,
				const struct ib_send_wr *wr,
				const struct ib_send_wr **bad_wr)
{
	struct vrdma_ring *r = &qp->sqr;
	unsigned long flags;
	int err = 0;
	size_t len;
	void *slot;
	u32 start;

	vrdma_ring_lock(r, &flags);
	start = r->idx;
	for (; wr; wr = wr->next) {
		err = vrdma_send_check(qp, wr, &len);
		if (!err && len > r->stride)
			err = -EINVAL;
		if (err)
			break;
		slot = vrdma_ring_next(qp->dev, r, &err);
		if (!slot)
			break;
		memset(slot, 0, len);
		err = vrdma_send_fill(qp, wr, slot);
		if (err)
			break;
		r->idx++;
	}
	if (r->idx != start)
		vrdma_ring_publish(qp->dev, r);
	vrdma_ring_unlock(r, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_wqe *w;
	bool kick = false;
	int err = 0;

	if (READ_ONCE(qp->dev->broken)) {
		*bad_wr = wr;
		return -EIO;
	}
	if (qp->sqr.umem)
		return vrdma_user_kick(qp->dev, wr, (const void **)bad_wr);
	/* as rxe: not before RTS; in SQD, SQE and ERR the device flushes what
	 * it cannot send (ib_drain_sq posts into ERR and waits for the flush)
	 */
	if (READ_ONCE(qp->state) < IB_QPS_RTS) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->dev->rings)
		return vrdma_post_send_ring(qp, wr, bad_wr);
	for (; wr; wr = wr->next) {
		err = vrdma_build_send(qp, wr, &w);
		if (err)
			break;
		err = vrdma_wq_post(qp->dev, qp->ibqp.uobject, qp->sq, w,
				    qp->cap.max_send_wr, &kick);
		if (err) {
			kfree(w);
			break;
		}
	}
	if (err)
		*bad_wr = wr;
	if (kick)
		virtqueue_notify(qp->sq->vq);
	return err;
}

/*
 * An SRQ whose max_wr MODIFY_SRQ raised past its ring's entries takes
 * WQEs off the ring as it has room (at the bell, and as messages arrive):
 * a full ring is then given a moment, what was written published first,
 * rather than failed. A user's post sleeps up to 2 s; a kernel one may be
 * in atomic context and spins up to 1 ms. The ring's lock held.
 */
static void *vrdma_ring_wait(struct vrdma_dev *dev, struct vrdma_ring *r,
			     int *err)
{
	unsigned int waited = 0, limit = r->sleep ? 2 * USEC_PER_SEC : 1000;
	void *slot;

	vrdma_ring_publish(dev, r);
	for (;;) {
		if (r->sleep) {
			usleep_range(50, 100);
			waited += 100;
		} else {
			udelay(10);
			waited += 10;
		}
		slot = vrdma_ring_next(dev, r, err);
		if (slot || *err != -ENOMEM || waited >= limit ||
		    (r->sleep && fatal_signal_pending(current)))
			return slot;
	}
}

/* ABI v2: receive WRs into a QP's RQ ring or an SRQ's, max_wr deep. */
static int vrdma_post_recv_ring(struct vrdma_dev *dev, struct vrdma_ring *r,
				u32 max_wr, u32 max_sge,
				const struct ib_recv_wr *wr,
				const struct ib_recv_wr **bad_wr)
{
	struct virtio_rdma_cmd_post_recv *c;
	unsigned long flags;
	int err = 0;
	u32 start;

	vrdma_ring_lock(r, &flags);
	start = r->idx;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > max_sge ||
		    sizeof(*c) + wr->num_sge * sizeof(struct virtio_rdma_sge) >
		    r->stride) {
			err = -EINVAL;
			break;
		}
		c = vrdma_ring_next(dev, r, &err);
		if (!c && err == -ENOMEM && r->entries < max_wr) {
			c = vrdma_ring_wait(dev, r, &err);
			start = r->idx;
		}
		if (!c)
			break;
		memset(c, 0, sizeof(*c) + wr->num_sge *
		       sizeof(struct virtio_rdma_sge));
		c->num_sge = cpu_to_le32(wr->num_sge);
		c->wr_id = cpu_to_le64(wr->wr_id);
		vrdma_fill_sges((struct virtio_rdma_sge *)(c + 1), wr->sg_list,
				wr->num_sge);
		r->idx++;
	}
	if (r->idx != start)
		vrdma_ring_publish(dev, r);
	vrdma_ring_unlock(r, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

/* Receive WRs onto a QP's RQ or an SRQ's queue, max_wr deep. */
static int vrdma_post_recv_wq(struct vrdma_dev *dev, struct vrdma_wq *wq,
			      u32 max_wr, u32 max_sge, bool user,
			      const struct ib_recv_wr *wr,
			      const struct ib_recv_wr **bad_wr)
{
	struct virtio_rdma_cmd_post_recv *c;
	struct vrdma_wqe *w;
	bool kick = false;
	int err = 0;

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > max_sge) {
			err = -EINVAL;
			break;
		}
		w = vrdma_wqe_alloc(sizeof(*c) + wr->num_sge *
				    sizeof(struct virtio_rdma_sge), user);
		if (!w) {
			err = -ENOMEM;
			break;
		}
		c = (struct virtio_rdma_cmd_post_recv *)w->data;
		c->num_sge = cpu_to_le32(wr->num_sge);
		c->wr_id = cpu_to_le64(wr->wr_id);
		vrdma_fill_sges((struct virtio_rdma_sge *)(c + 1), wr->sg_list,
				wr->num_sge);
		err = vrdma_wq_post(dev, user, wq, w, max_wr, &kick);
		if (err) {
			kfree(w);
			break;
		}
	}
	if (err)
		*bad_wr = wr;
	if (kick)
		virtqueue_notify(wq->vq);
	return err;
}

int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	int err = 0;

	if (READ_ONCE(qp->dev->broken))
		err = -EIO;
	else if (READ_ONCE(qp->state) == IB_QPS_RESET || ibqp->srq)
		err = -EINVAL;	/* a QP on an SRQ has no RQ of its own */
	if (!err && qp->rqr.umem)
		return vrdma_user_kick(qp->dev, wr, (const void **)bad_wr);
	if (err) {
		*bad_wr = wr;
		return err;
	}
	if (qp->dev->rings)
		return vrdma_post_recv_ring(qp->dev, &qp->rqr,
					    qp->cap.max_recv_wr,
					    qp->cap.max_recv_sge, wr, bad_wr);
	return vrdma_post_recv_wq(qp->dev, qp->rq, qp->cap.max_recv_wr,
				  qp->cap.max_recv_sge, ibqp->uobject, wr, bad_wr);
}

/* ---- shared receive queues: an SRQ holds a QP slot, whose RQ takes its
 * receive WQEs (docs/virtio-rdma.md, CREATE_SRQ) ----
 */

/* The device lets the SRQ go and its slot becomes free (as vrdma_qp_release). */
static void vrdma_srq_release(struct vrdma_dev *dev, struct vrdma_srq *srq)
{
	vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_SRQ, "DESTROY_SRQ", srq->srqn);
	vrdma_wq_take(srq->rq);	/* the device gave them all back */
	vrdma_slot_release_end(dev, &dev->qp_slots[srq->slot].state);
}

/* ABI v2: the SRQ's receive ring, given with CREATE_SRQ_RING. */
static int vrdma_create_srq_ring(struct vrdma_dev *dev, struct vrdma_srq *srq,
				 const struct virtio_rdma_cmd_create_srq *sreq,
				 struct ib_udata *udata,
				 struct virtio_rdma_rsp_create_srq *rsp)
{
	struct virtio_rdma_cmd_create_srq_ring req = { .srq = *sreq };
	struct vrdma_ring *r = &srq->ring;
	struct vrdma_ucontext *uc = vrdma_uctx_rings(udata);
	struct vrdma_create_srq_req ureq;
	__le64 *list = NULL;
	bool user = udata;
	u32 n;
	int err;

	if (uc) {
		/* the program's own ring and bit */
		err = udata->outlen < sizeof(struct vrdma_create_srq_resp) ?
		      -EINVAL : 0;
		if (!err && ib_copy_from_udata(&ureq, udata,
					       min(udata->inlen, sizeof(ureq))))
			err = -EFAULT;
		if (!err)
			err = vrdma_wq_ring_user(dev, r, &ureq.rq, srq->max_wr,
						 vrdma_recv_wqe_max(srq->max_sge));
		if (!err)
			err = vrdma_udb_get(dev, uc, &r, 1);
	} else {
		err = vrdma_ring_alloc(r, vrdma_entries(srq->max_wr),
				       vrdma_stride(vrdma_recv_wqe_max(srq->max_sge)),
				       user, user);
		if (!err)
			err = vrdma_db_get(dev, &r, 1);
	}
	if (!err) {
		list = vrdma_ring_pages(r, &n);
		if (!list)
			err = -ENOMEM;
	}
	if (err) {
		vrdma_ring_free(dev, r, false);
		return err;
	}
	req.dbn = cpu_to_le32(r->db->dbn);
	vrdma_ring_desc(r, &req.ring, list, n);
	err = vrdma_ring_cmd(dev, VIRTIO_CMD_CREATE_SRQ_RING, &req, sizeof(req),
			     rsp, sizeof(*rsp), list, NULL);
	if (err)
		vrdma_ring_free(dev, r, READ_ONCE(dev->broken));
	return err;
}

int vrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibsrq->device);
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct virtio_rdma_cmd_create_srq req = {
		.pdn = cpu_to_le32(to_vpd(ibsrq->pd)->pdn),
		.max_wr = cpu_to_le32(init->attr.max_wr),
		.max_sge = cpu_to_le32(init->attr.max_sge),
		.srq_limit = cpu_to_le32(init->attr.srq_limit),
	};
	struct virtio_rdma_rsp_create_srq rsp;
	u32 k;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (init->attr.max_wr > dev->cfg.max_srq_wr ||
	    init->attr.max_sge > dev->cfg.max_srq_sge)
		return -EINVAL;
	srq->dev = dev;
	srq->max_wr = init->attr.max_wr;
	srq->max_sge = init->attr.max_sge;
	if (dev->rings)
		err = vrdma_create_srq_ring(dev, srq, &req, udata, &rsp);
	else
		err = vrdma_cmd(dev, VIRTIO_CMD_CREATE_SRQ, &req, sizeof(req),
				&rsp, sizeof(rsp));
	if (err)
		return err;
	srq->srqn = le32_to_cpu(rsp.srqn);
	k = le32_to_cpu(rsp.srq_index);
	if (dev->rings) {
		struct vrdma_create_srq_resp uresp = {
			.flags = VRDMA_UCTX_RINGS,
			.bit = srq->ring.bit,
		};

		err = srq->ring.umem ?
		      ib_copy_to_udata(udata, &uresp, sizeof(uresp)) : 0;
		if (!err)
			err = xa_insert_irq(&dev->srqs, srq->srqn, srq,
					    GFP_KERNEL);
		if (!err)
			return 0;
		if (err == -EBUSY)
			vrdma_dev_error(dev, "device gave SRQ %u, which is in use\n",
					srq->srqn);
		vrdma_ring_free(dev, &srq->ring,
				vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_SRQ,
						  "DESTROY_SRQ", srq->srqn) ||
				err == -EBUSY);
		return err;
	}
	if (k >= dev->max_qp) {
		vrdma_dev_error(dev, "device gave SRQ slot %u of %u\n",
				k, dev->max_qp);
		return -EIO;
	}
	err = vrdma_slot_claim(dev, &dev->qp_slots[k].state, "SRQ", k);
	if (err)
		return err;
	srq->slot = k;
	srq->rq = &dev->qp_slots[k].rq;
	vrdma_wq_take(srq->rq);
	err = xa_insert_irq(&dev->srqs, srq->srqn, srq, GFP_KERNEL);
	if (err) {
		if (err == -EBUSY)
			vrdma_dev_error(dev, "device gave SRQ %u, which is in use\n",
					srq->srqn);
		goto destroy_srq;
	}
	return 0;

destroy_srq:
	vrdma_slot_release_begin(dev, &dev->qp_slots[k].state);
	vrdma_srq_release(dev, srq);
	return err;
}

int vrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct virtio_rdma_cmd_modify_srq req = {
		.srqn = cpu_to_le32(srq->srqn),
		.attr_mask = cpu_to_le32(mask),	/* IB_SRQ_* are the ABI's bits */
		.max_wr = cpu_to_le32(attr->max_wr),
		.srq_limit = cpu_to_le32(attr->srq_limit),
	};
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		/* IB_DEVICE_SRQ_RESIZE: an older device does not resize */
		if (!(srq->dev->cfg.device_cap_flags &
		      VIRTIO_RDMA_DEV_SRQ_RESIZE))
			return -EOPNOTSUPP;
		if (!attr->max_wr || attr->max_wr > srq->dev->cfg.max_srq_wr)
			return -EINVAL;
	}
	err = vrdma_cmd(srq->dev, VIRTIO_CMD_MODIFY_SRQ, &req, sizeof(req),
			NULL, 0);
	if (!err && (mask & IB_SRQ_MAX_WR))
		WRITE_ONCE(srq->max_wr, attr->max_wr);
	return err;
}

int vrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct virtio_rdma_cmd_query_srq req = { .srqn = cpu_to_le32(srq->srqn) };
	struct virtio_rdma_rsp_query_srq rsp;
	int err;

	err = vrdma_cmd(srq->dev, VIRTIO_CMD_QUERY_SRQ, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err)
		return err;
	attr->max_wr = le32_to_cpu(rsp.max_wr);
	attr->max_sge = le32_to_cpu(rsp.max_sge);
	attr->srq_limit = le32_to_cpu(rsp.srq_limit);
	return 0;
}

/* Never fails, as destroy_qp. */
int vrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);
	struct vrdma_dev *dev = srq->dev;

	if (dev->rings) {
		xa_erase_irq(&dev->srqs, srq->srqn);
		vrdma_ring_free(dev, &srq->ring,
				vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_SRQ,
						  "DESTROY_SRQ", srq->srqn));
		return 0;
	}
	vrdma_slot_release_begin(dev, &dev->qp_slots[srq->slot].state);
	/* the event path finds SRQs under the xarray's lock */
	xa_erase_irq(&dev->srqs, srq->srqn);
	vrdma_srq_release(dev, srq);
	return 0;
}

int vrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vsrq(ibsrq);

	if (READ_ONCE(srq->dev->broken)) {
		*bad_wr = wr;
		return -EIO;
	}
	if (srq->ring.umem)
		return vrdma_user_kick(srq->dev, wr, (const void **)bad_wr);
	if (srq->dev->rings)
		return vrdma_post_recv_ring(srq->dev, &srq->ring,
					    READ_ONCE(srq->max_wr),
					    srq->max_sge, wr, bad_wr);
	return vrdma_post_recv_wq(srq->dev, srq->rq, READ_ONCE(srq->max_wr),
				  srq->max_sge,
				  ibsrq->uobject, wr, bad_wr);
}
