// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues: CQ n is virtqueue 1 + n; the driver keeps it filled with
 * 40-byte buffers and the device writes one virtio_rdma_cqe into each. A CQE
 * with opcode VIRTIO_RDMA_WC_ASYNC_EVENT is an asynchronous event instead
 * (docs/virtio-rdma.md section 5). The call eventfd fires only as
 * REQ_NOTIFY_CQ armed it.
 */
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "vrdma.h"

int vrdma_cq_slots_init(struct vrdma_dev *dev)
{
	u32 n;

	dev->cq_slots = kcalloc(dev->max_cq, sizeof(*dev->cq_slots), GFP_KERNEL);
	dev->cqs = kcalloc(dev->max_cq, sizeof(*dev->cqs), GFP_KERNEL);
	if (!dev->cq_slots || !dev->cqs)
		return -ENOMEM;
	for (n = 0; n < dev->max_cq; n++)
		dev->cq_slots[n].vq = dev->vqs[VIRTIO_RDMA_CQ_VQ(n)];
	return 0;
}

/* After the device is reset: nothing is with it any more. */
void vrdma_cq_slots_free(struct vrdma_dev *dev)
{
	u32 n;

	for (n = 0; dev->cq_slots && n < dev->max_cq; n++) {
		kfree(dev->cq_slots[n].cqes);
		bitmap_free(dev->cq_slots[n].posted);
	}
	kfree(dev->cq_slots);
	kfree(dev->cqs);
}

/* The slot's buffers, allocated on first use and kept: after DESTROY_CQ a
 * device may hold some still, and they serve the next CQ of the slot.
 */
static int vrdma_cq_slot_alloc(struct vrdma_cq_slot *slot)
{
	if (slot->cqes)
		return 0;
	slot->nr = virtqueue_get_vring_size(slot->vq);
	slot->cqes = kcalloc(slot->nr, sizeof(*slot->cqes), GFP_KERNEL);
	slot->posted = bitmap_zalloc(slot->nr, GFP_KERNEL);
	if (!slot->cqes || !slot->posted) {
		kfree(slot->cqes);
		bitmap_free(slot->posted);
		slot->cqes = NULL;
		slot->posted = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Give buffer i to the device; cq->lock held. */
static int vrdma_cq_post(struct vrdma_cq_slot *slot, unsigned int i)
{
	struct scatterlist sg;
	int err;

	sg_init_one(&sg, &slot->cqes[i], sizeof(slot->cqes[i]));
	err = virtqueue_add_inbuf(slot->vq, &sg, 1, &slot->cqes[i], GFP_ATOMIC);
	if (!err)
		set_bit(i, slot->posted);
	return err;
}

/* Take back every used buffer, without reading it; cq->lock held. */
static void vrdma_cq_drain(struct vrdma_cq_slot *slot)
{
	struct virtio_rdma_cqe *c;
	unsigned int len;

	while ((c = virtqueue_get_buf(slot->vq, &len)))
		clear_bit(c - slot->cqes, slot->posted);
}

int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs)
{
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct virtio_rdma_cmd_create_cq req;
	struct virtio_rdma_cmd_destroy_cq dreq;
	struct virtio_rdma_rsp_create_cq rsp;
	unsigned long flags;
	unsigned int i;
	bool kick;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > dev->cfg.max_cqe)
		return -EINVAL;
	req.cqe = cpu_to_le32(attr->cqe);
	err = vrdma_cmd(dev, VIRTIO_CMD_CREATE_CQ, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err)
		return err;
	cq->cqn = le32_to_cpu(rsp.cqn);
	if (cq->cqn >= dev->max_cq) {
		dev_err(&dev->vdev->dev, "device gave CQ %u of %u\n", cq->cqn,
			dev->max_cq);
		err = -EIO;
		goto destroy_cq;
	}
	cq->dev = dev;
	cq->slot = &dev->cq_slots[cq->cqn];
	spin_lock_init(&cq->lock);
	err = vrdma_cq_slot_alloc(cq->slot);
	if (err)
		goto destroy_cq;

	spin_lock_irqsave(&cq->lock, flags);
	vrdma_cq_drain(cq->slot);	/* a previous CQ's leftovers */
	for (i = 0; i < cq->slot->nr && !err; i++)
		if (!test_bit(i, cq->slot->posted))
			err = vrdma_cq_post(cq->slot, i);
	kick = virtqueue_kick_prepare(cq->slot->vq);
	spin_unlock_irqrestore(&cq->lock, flags);
	if (kick)
		virtqueue_notify(cq->slot->vq);
	if (err)
		goto destroy_cq;
	ibcq->cqe = attr->cqe;
	rcu_assign_pointer(dev->cqs[cq->cqn], cq);
	return 0;

destroy_cq:
	dreq.cqn = rsp.cqn;
	vrdma_cmd(dev, VIRTIO_CMD_DESTROY_CQ, &dreq, sizeof(dreq), NULL, 0);
	return err;
}

int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_dev *dev = cq->dev;
	struct virtio_rdma_cmd_destroy_cq req = { .cqn = cpu_to_le32(cq->cqn) };
	unsigned long flags;
	int err;

	err = vrdma_cmd(dev, VIRTIO_CMD_DESTROY_CQ, &req, sizeof(req), NULL, 0);
	if (err && err != -EIO && err != -ETIMEDOUT)
		return err;
	/* no interrupt may find it once the core frees it */
	RCU_INIT_POINTER(dev->cqs[cq->cqn], NULL);
	synchronize_rcu();
	spin_lock_irqsave(&cq->lock, flags);
	vrdma_cq_drain(cq->slot);
	spin_unlock_irqrestore(&cq->lock, flags);
	return 0;
}

/* The CQ's interrupt: the device signals only when REQ_NOTIFY_CQ armed it. */
void vrdma_cq_done(struct virtqueue *vq)
{
	struct vrdma_dev *dev = vq->vdev->priv;
	struct vrdma_cq *cq;
	u32 n = vq->index - VIRTIO_RDMA_CQ_VQ(0);

	if (n >= dev->max_cq)
		return;
	rcu_read_lock();
	cq = rcu_dereference(dev->cqs[n]);
	if (cq && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	rcu_read_unlock();
}

/* SRQ_LIMIT_REACHED names the SRQ in src_qp; found and used under the
 * xarray's lock, which destroy_srq takes to remove it.
 */
static void vrdma_srq_event(struct vrdma_dev *dev, u32 srqn)
{
	struct ib_event ev = {
		.device = &dev->ib,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};
	struct vrdma_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&dev->srqs, flags);
	srq = xa_load(&dev->srqs, srqn);
	if (srq && srq->ibsrq.event_handler) {
		ev.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	xa_unlock_irqrestore(&dev->srqs, flags);
}

/* An asynchronous event CQE; cq->lock held. */
static void vrdma_cq_event(struct vrdma_cq *cq, const struct virtio_rdma_cqe *c)
{
	struct ib_event ev = { .device = cq->ibcq.device };
	u32 type = le32_to_cpu(c->vendor_err);
	struct vrdma_qp *qp;

	switch (type) {
	case VIRTIO_RDMA_EVENT_CQ_ERR:
		ev.event = IB_EVENT_CQ_ERR;
		ev.element.cq = &cq->ibcq;
		if (cq->ibcq.event_handler)
			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		return;
	case VIRTIO_RDMA_EVENT_SRQ_LIMIT_REACHED:
		vrdma_srq_event(cq->dev, le32_to_cpu(c->src_qp));
		return;
	case VIRTIO_RDMA_EVENT_QP_FATAL:
	case VIRTIO_RDMA_EVENT_QP_REQ_ERR:
	case VIRTIO_RDMA_EVENT_QP_ACCESS_ERR:
	case VIRTIO_RDMA_EVENT_SQ_DRAINED:
	case VIRTIO_RDMA_EVENT_QP_LAST_WQE_REACHED:
		/* the ABI's numbers are enum ib_event_type's */
		ev.event = type;
		break;
	default:
		dev_warn_ratelimited(&cq->dev->vdev->dev,
				     "unknown event %u on CQ %u\n", type,
				     cq->cqn);
		return;
	}
	qp = xa_load(&cq->dev->qps, le32_to_cpu(c->qp_num));
	if (!qp)
		return;
	ev.element.qp = &qp->ibqp;
	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* One CQE into a work completion; false if it names no QP of ours (one
 * destroyed since: its completions go with it). cq->lock held.
 */
static bool vrdma_cq_wc(struct vrdma_cq *cq, const struct virtio_rdma_cqe *c,
			struct ib_wc *wc)
{
	struct vrdma_qp *qp = xa_load(&cq->dev->qps, le32_to_cpu(c->qp_num));

	if (!qp)
		return false;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(c->wr_id);
	wc->status = c->status <= IB_WC_GENERAL_ERR ? c->status :
		     IB_WC_GENERAL_ERR;
	switch (c->opcode) {
	case IB_WC_SEND:
	case IB_WC_RDMA_WRITE:
	case IB_WC_RDMA_READ:
	case IB_WC_COMP_SWAP:
	case IB_WC_FETCH_ADD:
	case IB_WC_LOCAL_INV:
	case IB_WC_REG_MR:
	case IB_WC_RECV:
	case IB_WC_RECV_RDMA_WITH_IMM:
		wc->opcode = c->opcode;
		break;
	default:
		wc->opcode = IB_WC_SEND;
		wc->status = IB_WC_GENERAL_ERR;
		break;
	}
	wc->vendor_err = le32_to_cpu(c->vendor_err);
	wc->byte_len = le32_to_cpu(c->byte_len);
	wc->wc_flags = le32_to_cpu(c->wc_flags) &
		       (IB_WC_GRH | IB_WC_WITH_IMM | IB_WC_WITH_INVALIDATE);
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)	/* little-endian, the ABI's */
		wc->ex.invalidate_rkey = le32_to_cpu(c->ex.invalidate_rkey);
	else
		wc->ex.imm_data = (__force __be32)c->ex.imm_data;
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(c->src_qp) & 0xffffff;
	wc->pkey_index = le16_to_cpu(c->pkey_index);
	wc->sl = c->sl & 0xf;
	wc->port_num = VRDMA_PORT;
	return true;
}

int vrdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_cq_slot *slot = cq->slot;
	struct virtio_rdma_cqe *c, cqe;
	unsigned long flags;
	unsigned int len;
	bool kick = false;
	int n = 0;

	/* the device lost its state: an error, so a polling program stops */
	if (READ_ONCE(cq->dev->fatal))
		return -EIO;
	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && (c = virtqueue_get_buf(slot->vq, &len))) {
		unsigned int i = c - slot->cqes;

		clear_bit(i, slot->posted);
		cqe = *c;
		/* the buffer goes straight back: the copy is ours */
		if (!vrdma_cq_post(slot, i))
			kick = true;
		if (len < sizeof(cqe))
			continue;	/* returned unused (a drained slot) */
		if (cqe.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT && !cqe.status)
			vrdma_cq_event(cq, &cqe);
		else if (vrdma_cq_wc(cq, &cqe, &wc[n]))
			n++;
	}
	if (kick)
		kick = virtqueue_kick_prepare(slot->vq);
	spin_unlock_irqrestore(&cq->lock, flags);
	if (kick)
		virtqueue_notify(slot->vq);
	return n;
}

int vrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct virtio_rdma_cmd_req_notify req = {
		.cqn = cpu_to_le32(cq->cqn),
		/* IB_CQ_SOLICITED and IB_CQ_NEXT_COMP are the ABI's bits */
		.flags = cpu_to_le32(flags & IB_CQ_SOLICITED_MASK),
	};
	unsigned long irqflags;
	bool empty;
	int err;

	/* may be called in interrupt context: spin for the answer, which
	 * says the device armed the CQ before we look for missed CQEs
	 */
	err = vrdma_cmd_atomic(cq->dev, VIRTIO_CMD_REQ_NOTIFY_CQ, &req,
			       sizeof(req), NULL, 0);
	if (err || !(flags & IB_CQ_REPORT_MISSED_EVENTS))
		return err;
	spin_lock_irqsave(&cq->lock, irqflags);
	empty = virtqueue_enable_cb(cq->slot->vq);
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return empty ? 0 : 1;
}
