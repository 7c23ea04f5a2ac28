// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues: CQ n is virtqueue 1 + n; the driver keeps it filled with
 * 40-byte buffers and the device writes one virtio_rdma_cqe into each. A CQE
 * with opcode VIRTIO_RDMA_WC_ASYNC_EVENT is an asynchronous event instead
 * (docs/virtio-rdma.md section 5). The call eventfd fires only as
 * REQ_NOTIFY_CQ armed it.
 */
#include <linux/delay.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"

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

/* Give buffer i to the device; slot->lock held. */
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

/* Take back every used buffer, without reading it; slot->lock held. */
static void vrdma_cq_drain(struct vrdma_cq_slot *slot)
{
	struct virtio_rdma_cqe *c;
	unsigned int len;

	while ((c = virtqueue_get_buf(slot->vq, &len)))
		clear_bit(c - slot->cqes, slot->posted);
}

/*
 * The device lets the CQ go and its slot becomes free; the slot is being
 * released (vrdma_slot_release_begin) and no interrupt finds the CQ.
 */
static void vrdma_cq_release(struct vrdma_dev *dev, struct vrdma_cq *cq)
{
	struct vrdma_cq_slot *slot = cq->slot;
	unsigned long flags;

	vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_CQ, "DESTROY_CQ", cq->cqn);
	/* a poller of this CQ holds the slot's lock until done */
	spin_lock_irqsave(&slot->lock, flags);
	if (slot->cqes)
		vrdma_cq_drain(slot);
	spin_unlock_irqrestore(&slot->lock, flags);
	vrdma_slot_release_end(dev, &slot->state);
}

static void vrdma_cq_event_work(struct work_struct *work);

/* How long a CQ number the device gave again may stay dying: its
 * DESTROY_CQ was answered, and the destroyer is taking its last events.
 */
#define VRDMA_CQ_DYING_WAIT_MS	30000

/* The CQ, found by the event queue from now on. */
static int vrdma_cq_ring_publish(struct vrdma_dev *dev, struct vrdma_cq *cq)
{
	unsigned int waited = 0;
	int err;

	for (;;) {
		err = xa_insert_irq(&dev->ring_cqs, cq->cqn, cq, GFP_KERNEL);
		if (err != -EBUSY || READ_ONCE(dev->broken) ||
		    !xa_is_value(xa_load(&dev->ring_cqs, cq->cqn)) ||
		    waited++ >= VRDMA_CQ_DYING_WAIT_MS)
			break;
		usleep_range(1000, 2000);
	}
	if (err == -EBUSY)
		vrdma_dev_error(dev, "device gave CQ %u, which is in use\n",
				cq->cqn);
	return err;
}

static void vrdma_destroy_cq_ring(struct vrdma_dev *dev, struct vrdma_cq *cq);

/*
 * A program's CQ ring (VRDMA_UCTX_RINGS): the provider's memory, at least
 * cqe entries of 64 bytes, a bit of its context's doorbell page.
 */
static int vrdma_cq_ring_user(struct vrdma_dev *dev, struct vrdma_cq *cq,
			      u32 cqe, struct vrdma_ucontext *uc,
			      struct ib_udata *udata)
{
	struct vrdma_create_cq_req ureq;
	struct vrdma_ring *r = &cq->ring;
	int err;

	if (udata->outlen < sizeof(struct vrdma_create_cq_resp))
		return -EINVAL;
	if (ib_copy_from_udata(&ureq, udata, sizeof(ureq)))
		return -EFAULT;
	if (ureq.ring.stride != 64 || ureq.ring.entries < cqe)
		return -EINVAL;
	err = vrdma_ring_user(dev, r, &ureq.ring, true);
	if (err)
		return err;
	err = vrdma_udb_get(dev, uc, &r, 1);
	if (err)
		vrdma_ring_free(dev, r, false);
	cq->uctx = &uc->ibuc;
	return err;
}

/* ABI v2: the CQ's CQEs in a ring of ours, entries >= cqe, or of the
 * program's (udata with a ring).
 */
static int vrdma_create_cq_ring(struct vrdma_dev *dev, struct vrdma_cq *cq,
				u32 cqe, struct ib_udata *udata)
{
	struct virtio_rdma_cmd_create_cq_ring req = {};
	struct vrdma_create_cq_resp uresp = {};
	struct virtio_rdma_rsp_create_cq rsp;
	struct vrdma_ucontext *uc = vrdma_uctx_rings(udata);
	struct vrdma_ring *r = &cq->ring;
	__le64 *list;
	u32 npages;
	int err;

	cq->dev = dev;
	INIT_WORK(&cq->event_work, vrdma_cq_event_work);
	if (uc) {
		err = vrdma_cq_ring_user(dev, cq, cqe, uc, udata);
	} else {
		err = vrdma_ring_alloc(r, roundup_pow_of_two(cqe), 64,
				       cq->ibcq.uobject, false);
		if (!err)
			err = vrdma_db_get(dev, &r, 1);
	}
	list = err ? NULL : vrdma_ring_pages(r, &npages);
	if (!list) {
		vrdma_ring_free(dev, r, false);
		return err ?: -ENOMEM;
	}
	req.entries = cpu_to_le32(r->entries);
	req.dbn = cpu_to_le32(r->db->dbn);
	req.db_bit = cpu_to_le32(r->bit);
	req.npages = cpu_to_le32(npages);
	req.pages = cpu_to_le64(virt_to_phys(list));
	err = vrdma_ring_cmd(dev, VIRTIO_CMD_CREATE_CQ_RING, &req, sizeof(req),
			     &rsp, sizeof(rsp), list, NULL);
	if (err) {
		vrdma_ring_free(dev, r, READ_ONCE(dev->broken));
		return err;
	}
	cq->cqn = le32_to_cpu(rsp.cqn);
	if (cq->cqn >= dev->cfg.ring_max_cq) {
		vrdma_dev_error(dev, "device gave CQ %u of %u\n", cq->cqn,
				dev->cfg.ring_max_cq);
		vrdma_ring_free(dev, r, true);
		return -EIO;
	}
	err = vrdma_cq_ring_publish(dev, cq);
	if (err) {
		/* the device's error (-EBUSY) or ours: the CQ goes */
		vrdma_ring_free(dev, r, vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_CQ,
							  "DESTROY_CQ", cq->cqn) ||
				err == -EBUSY);
		return err;
	}
	cq->ibcq.cqe = r->entries;
	if (!r->umem)
		return 0;
	uresp.flags = VRDMA_UCTX_RINGS;
	uresp.db_bit = r->bit;
	err = ib_copy_to_udata(udata, &uresp, sizeof(uresp));
	if (err)
		vrdma_destroy_cq_ring(dev, cq);
	return err;
}

/* Never fails, as v1's: the event queue finds the CQ dying until the
 * events written before DESTROY_CQ's answer are taken.
 */
static void vrdma_destroy_cq_ring(struct vrdma_dev *dev, struct vrdma_cq *cq)
{
	int err;

	xa_store_irq(&dev->ring_cqs, cq->cqn, VRDMA_CQ_DYING, GFP_KERNEL);
	synchronize_rcu();
	err = vrdma_cmd_destroy(dev, VIRTIO_CMD_DESTROY_CQ, "DESTROY_CQ",
				cq->cqn);
	vrdma_events_drain(dev);
	xa_erase_irq(&dev->ring_cqs, cq->cqn);
	vrdma_ring_free(dev, &cq->ring, err);
}

int vrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs)
{
	struct vrdma_dev *dev = to_vdev(ibcq->device);
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct virtio_rdma_cmd_create_cq req;
	struct virtio_rdma_rsp_create_cq rsp;
	struct vrdma_cq_slot *slot;
	unsigned long flags;
	unsigned int i;
	bool kick;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > dev->cfg.max_cqe)
		return -EINVAL;
	if (dev->rings)
		return vrdma_create_cq_ring(dev, cq, attr->cqe,
					    attrs ? &attrs->driver_udata : NULL);
	req.cqe = cpu_to_le32(attr->cqe);
	err = vrdma_cmd(dev, VIRTIO_CMD_CREATE_CQ, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err)
		return err;
	cq->cqn = le32_to_cpu(rsp.cqn);
	if (cq->cqn >= dev->max_cq) {
		vrdma_dev_error(dev, "device gave CQ slot %u of %u\n", cq->cqn,
				dev->max_cq);
		return -EIO;
	}
	slot = &dev->cq_slots[cq->cqn];
	err = vrdma_slot_claim(dev, &slot->state, "CQ", cq->cqn);
	if (err)
		return err;
	cq->dev = dev;
	INIT_WORK(&cq->event_work, vrdma_cq_event_work);
	cq->slot = slot;
	err = vrdma_cq_slot_alloc(slot);
	if (err)
		goto destroy_cq;

	spin_lock_irqsave(&slot->lock, flags);
	vrdma_cq_drain(slot);	/* a previous CQ's leftovers */
	for (i = 0; i < slot->nr && !err; i++)
		if (!test_bit(i, slot->posted))
			err = vrdma_cq_post(slot, i);
	kick = virtqueue_kick_prepare(slot->vq);
	spin_unlock_irqrestore(&slot->lock, flags);
	if (kick)
		virtqueue_notify(slot->vq);
	if (err)
		goto destroy_cq;
	ibcq->cqe = attr->cqe;
	rcu_assign_pointer(dev->cqs[cq->cqn], cq);
	return 0;

destroy_cq:
	vrdma_slot_release_begin(dev, &slot->state);
	vrdma_cq_release(dev, cq);
	return err;
}

/*
 * Never fails: the IB core frees the CQ whatever the driver says
 * (ib_free_cq). The CQ is unpublished first, so no interrupt finds it;
 * a device that refuses to destroy it is a device error, and its buffers,
 * the slot's, stay with the device until it is reset.
 */
int vrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_dev *dev = cq->dev;

	if (dev->rings) {
		vrdma_destroy_cq_ring(dev, cq);
		return 0;
	}
	vrdma_slot_release_begin(dev, &cq->slot->state);
	RCU_INIT_POINTER(dev->cqs[cq->cqn], NULL);
	synchronize_rcu();
	cancel_work_sync(&cq->event_work);
	vrdma_cq_release(dev, cq);
	return 0;
}

/*
 * Whether the CQ's consumer can take a completion event. ib_alloc_cq arms a
 * workqueue-polled CQ before it sets the workqueue that the handler queues
 * on: an honest device has nothing to signal so early (no QP uses the CQ
 * yet), but a lying one may, and the handler must not run then.
 */
bool vrdma_cq_ready(struct vrdma_cq *cq)
{
	enum ib_poll_context ctx = cq->ibcq.poll_ctx;

	return cq->ibcq.uobject ||
	       (ctx != IB_POLL_WORKQUEUE && ctx != IB_POLL_UNBOUND_WORKQUEUE) ||
	       READ_ONCE(cq->ibcq.comp_wq);
}

static void vrdma_cq_event_work(struct work_struct *work)
{
	struct vrdma_cq *cq = container_of(work, struct vrdma_cq, event_work);

	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
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
	if (cq)
		clear_bit(0, &cq->armed);
	if (cq && cq->ibcq.comp_handler && vrdma_cq_ready(cq))
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	rcu_read_unlock();
}

/* SRQ_LIMIT_REACHED names the SRQ in src_qp; found and used under the
 * xarray's lock, which destroy_srq takes to remove it.
 */
static void vrdma_srq_event(struct vrdma_cq *cq, u32 srqn)
{
	struct vrdma_dev *dev = cq->dev;
	struct ib_event ev = {
		.device = &dev->ib,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};
	struct vrdma_srq *srq;
	unsigned long flags;

	xa_lock_irqsave(&dev->srqs, flags);
	srq = xa_load(&dev->srqs, srqn);
	/* from a program's ring: only an SRQ of its own */
	if (srq && cq->ring.umem &&
	    (!srq->ibsrq.pd->uobject ||
	     srq->ibsrq.pd->uobject->context != cq->uctx))
		srq = NULL;
	if (srq && srq->ibsrq.event_handler) {
		ev.element.srq = &srq->ibsrq;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	xa_unlock_irqrestore(&dev->srqs, flags);
}

/*
 * The QP a CQE names, if it is one of this CQ's: the device may only name
 * a QP whose send or receive CQ this is (a QP on an SRQ: its receive
 * CQ). A QP destroyed since is gone from the xarray, and a QP found here
 * cannot be freed before we are done: destroy_qp takes its CQs' slot
 * locks after unpublishing it. One of another CQ is looked at under the
 * xarray's lock, which destroy_qp takes to unpublish it before it is
 * freed. NULL for a QP destroyed since; a QP of another CQ is a device
 * error. slot->lock (ring.lock) held.
 */
static struct vrdma_qp *vrdma_cq_qp(struct vrdma_cq *cq,
				    const struct virtio_rdma_cqe *c)
{
	u32 qpn = le32_to_cpu(c->qp_num);
	unsigned long flags;
	struct vrdma_qp *qp;
	bool on;

	xa_lock_irqsave(&cq->dev->qps, flags);
	qp = xa_load(&cq->dev->qps, qpn);
	on = qp && (qp->ibqp.send_cq == &cq->ibcq ||
		    qp->ibqp.recv_cq == &cq->ibcq);
	xa_unlock_irqrestore(&cq->dev->qps, flags);
	if (!qp || on)
		return qp;
	/* a program's ring is its own to write: no word of the device's */
	if (!cq->ring.umem)
		vrdma_dev_error(cq->dev, "CQ %u: a completion or event of QP %u, which is not on it\n",
				cq->cqn, qpn);
	return NULL;
}

/* An asynchronous event CQE; slot->lock held. */
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
		vrdma_srq_event(cq, le32_to_cpu(c->src_qp));
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
	qp = vrdma_cq_qp(cq, c);
	if (!qp)
		return;
	ev.element.qp = &qp->ibqp;
	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* One CQE into a work completion; false if it names no QP of this CQ (one
 * destroyed since: its completions go with it). slot->lock held.
 */
static bool vrdma_cq_wc(struct vrdma_cq *cq, const struct virtio_rdma_cqe *c,
			struct ib_wc *wc)
{
	struct vrdma_qp *qp = vrdma_cq_qp(cq, c);

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
		       (IB_WC_GRH | IB_WC_WITH_IMM | IB_WC_WITH_INVALIDATE |
			IB_WC_WITH_NETWORK_HDR_TYPE);
	/* what the GRH area holds: the MAD layer's replies are built on it */
	if (wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) {
		if (c->network_hdr_type == RDMA_NETWORK_IPV4 ||
		    c->network_hdr_type == RDMA_NETWORK_IPV6)
			wc->network_hdr_type = c->network_hdr_type;
		else
			wc->wc_flags &= ~IB_WC_WITH_NETWORK_HDR_TYPE;
	}
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

/*
 * A program's CQ ring holds an event CQE (the event queue said so): the
 * kernel delivers it, reading the slots since it last looked up to
 * written, at most a ring's worth. The program skips event CQEs, and may
 * have rewritten any of it: what it forged names only its own QPs and
 * SRQs on this CQ (vrdma_cq_qp, vrdma_srq_event), so it fools only itself;
 * an event it let the device overwrite before the kernel looked is lost
 * to it alone. From the event queue's callback.
 */
void vrdma_cq_user_events(struct vrdma_cq *cq)
{
	struct vrdma_ring *r = &cq->ring;
	struct virtio_rdma_cqe cqe;
	unsigned long flags;
	u32 written, n;

	spin_lock_irqsave(&r->lock, flags);
	written = vrdma_ring_word(r, VIRTIO_RDMA_RING_WRITTEN);
	n = min(written - cq->ev_idx, r->entries);
	for (; n; n--) {
		memcpy(&cqe, r->mem + r->hdr +
		       (size_t)((written - n) & (r->entries - 1)) * r->stride,
		       sizeof(cqe));
		if (cqe.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT && !cqe.status)
			vrdma_cq_event(cq, &cqe);
	}
	cq->ev_idx = written;
	spin_unlock_irqrestore(&r->lock, flags);
}

/*
 * ABI v2: the CQEs the device wrote, up to num, then cons. A written that
 * runs more than entries ahead of cons, or goes back, is a device error.
 */
static int vrdma_poll_cq_ring(struct vrdma_cq *cq, int num, struct ib_wc *wc)
{
	struct vrdma_ring *r = &cq->ring;
	struct virtio_rdma_cqe cqe;
	unsigned long flags;
	u32 written;
	int n = 0;

	spin_lock_irqsave(&r->lock, flags);
	written = vrdma_ring_word(r, VIRTIO_RDMA_RING_WRITTEN);
	if (written - r->idx > r->entries || (s32)(written - r->seen) < 0) {
		spin_unlock_irqrestore(&r->lock, flags);
		vrdma_dev_error(cq->dev, "CQ %u: written went from %u to %u, cons %u\n",
				cq->cqn, r->seen, written, r->idx);
		return -EIO;
	}
	r->seen = written;
	while (n < num && r->idx != written && !READ_ONCE(cq->dev->broken)) {
		/* one copy, looked at from then on */
		memcpy(&cqe, r->mem + r->hdr +
		       (size_t)(r->idx & (r->entries - 1)) * r->stride,
		       sizeof(cqe));
		r->idx++;
		if (cqe.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT && !cqe.status)
			vrdma_cq_event(cq, &cqe);
		else if (vrdma_cq_wc(cq, &cqe, &wc[n]))
			n++;
	}
	/* the slots are the device's again */
	smp_store_release((__le32 *)(r->mem + VIRTIO_RDMA_RING_CONS),
			  cpu_to_le32(r->idx));
	spin_unlock_irqrestore(&r->lock, flags);
	return READ_ONCE(cq->dev->broken) && !n ? -EIO : n;
}

/*
 * Takes at most one pass over the ring per call, whatever the device
 * returns: every buffer is looked at once, so a device that keeps
 * returning buffers cannot hold the CPU here (interrupts are off).
 */
int vrdma_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct vrdma_cq *cq = to_vcq(ibcq);
	struct vrdma_cq_slot *slot = cq->slot;
	struct virtio_rdma_cqe *c, cqe;
	unsigned int len, seen = 0;
	unsigned long flags;
	bool kick = false;
	int n = 0;

	/* the device failed: an error, so a polling program stops */
	if (READ_ONCE(cq->dev->broken))
		return -EIO;
	/* a program polls its own ring */
	if (cq->ring.umem)
		return -EINVAL;
	if (cq->dev->rings)
		return vrdma_poll_cq_ring(cq, num, wc);
	spin_lock_irqsave(&slot->lock, flags);
	while (n < num && seen++ < slot->nr &&
	       (c = virtqueue_get_buf(slot->vq, &len))) {
		unsigned int i = c - slot->cqes;

		if (c < slot->cqes || i >= slot->nr) {
			/* virtio_ring gives back only our tokens */
			WARN_ON_ONCE(1);
			break;
		}
		clear_bit(i, slot->posted);
		cqe = *c;
		/* the buffer goes straight back: the copy is ours */
		if (!vrdma_cq_post(slot, i))
			kick = true;
		/* A live CQ's buffers come back written: an empty one is
		 * returned only after DESTROY_CQ (docs/virtio-rdma.md).
		 */
		if (len != sizeof(cqe)) {
			vrdma_dev_error(cq->dev, "CQ %u: a used buffer of %u bytes\n",
					cq->cqn, len);
			break;
		}
		if (cqe.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT && !cqe.status)
			vrdma_cq_event(cq, &cqe);
		else if (vrdma_cq_wc(cq, &cqe, &wc[n]))
			n++;
	}
	if (kick)
		kick = virtqueue_kick_prepare(slot->vq);
	spin_unlock_irqrestore(&slot->lock, flags);
	if (kick)
		virtqueue_notify(slot->vq);
	/*
	 * A program polls after arming (it cannot ask for missed events): a
	 * completion it takes may be the one the device signalled for, and
	 * the interrupt, finding the ring empty by then, calls nobody
	 * (vring_interrupt). The event is delivered from here instead: one per
	 * arming, a spurious one costs the program an empty poll.
	 */
	if (n && ibcq->uobject && test_and_clear_bit(0, &cq->armed))
		queue_work(system_wq, &cq->event_work);
	return READ_ONCE(cq->dev->broken) && !n ? -EIO : n;
}

/*
 * ABI v2: the arm word with a new seq, then the CQ's bell; no command. The
 * device fires at once for CQEs waiting past cons when it takes the arm;
 * the caller who asks is told of them too.
 */
static int vrdma_req_notify_ring(struct vrdma_cq *cq,
				 enum ib_cq_notify_flags flags)
{
	struct vrdma_ring *r = &cq->ring;
	unsigned long irqflags;
	bool missed;

	if (READ_ONCE(cq->dev->broken))
		return -EIO;
	spin_lock_irqsave(&r->lock, irqflags);
	/* seq from 1, below the armed word's fired bit */
	cq->arm_seq = (cq->arm_seq + 1) &
		      ((VIRTIO_RDMA_RING_ARMED_FIRED - 1) >> 2);
	if (!cq->arm_seq)
		cq->arm_seq = 1;
	set_bit(0, &cq->armed);
	/* IB_CQ_SOLICITED and IB_CQ_NEXT_COMP are the ABI's bits */
	smp_store_release((__le32 *)(r->mem + VIRTIO_RDMA_RING_ARM),
			  cpu_to_le32(cq->arm_seq << 2 |
				      (flags & IB_CQ_SOLICITED_MASK)));
	vrdma_ring_bell(cq->dev, r);
	missed = vrdma_ring_word(r, VIRTIO_RDMA_RING_WRITTEN) != r->idx;
	spin_unlock_irqrestore(&r->lock, irqflags);
	return (flags & IB_CQ_REPORT_MISSED_EVENTS) && missed ? 1 : 0;
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

	/* a program arms its ring itself and asks only for the kick */
	if (cq->ring.umem) {
		if (READ_ONCE(cq->dev->broken))
			return -EIO;
		vrdma_ring_kick(cq->dev);
		return 0;
	}
	if (cq->dev->rings)
		return vrdma_req_notify_ring(cq, flags);
	/* The answer says the device armed the CQ before we look for missed
	 * CQEs. uverbs calls this in process context; a kernel consumer may
	 * call it in interrupt context, where the answer is spun for.
	 */
	if (ibcq->uobject) {
		set_bit(0, &cq->armed);
		err = vrdma_cmd(cq->dev, VIRTIO_CMD_REQ_NOTIFY_CQ, &req,
				sizeof(req), NULL, 0);
		if (err)
			clear_bit(0, &cq->armed);
	} else {
		err = vrdma_cmd_atomic(cq->dev, VIRTIO_CMD_REQ_NOTIFY_CQ, &req,
				       sizeof(req), NULL, 0);
	}
	if (err || !(flags & IB_CQ_REPORT_MISSED_EVENTS))
		return err;
	spin_lock_irqsave(&cq->slot->lock, irqflags);
	empty = virtqueue_enable_cb(cq->slot->vq);
	spin_unlock_irqrestore(&cq->slot->lock, irqflags);
	return empty ? 0 : 1;
}
