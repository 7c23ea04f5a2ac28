// SPDX-License-Identifier: GPL-2.0-only
/*
 * The device's slots and the virtqueues behind them (vrdma.h, "Slots").
 * The device picks a slot at CREATE; the driver keeps its own record of
 * which slots are in use, so that a slot is handed to a new CQ, QP or SRQ
 * only after the teardown of the previous one has taken its queues back,
 * and so that a device answer contradicting that record is caught.
 */
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "vrdma.h"

/* Long enough for a DESTROY that was answered to take its queues back. */
#define VRDMA_SLOT_WAIT_MS	30000

static const char * const vrdma_slot_state_name[] = {
	[VRDMA_SLOT_FREE] = "free",
	[VRDMA_SLOT_USED] = "in use",
	[VRDMA_SLOT_RELEASING] = "being released",
};

int vrdma_slots_init(struct vrdma_dev *dev)
{
	u32 n;

	spin_lock_init(&dev->slot_lock);
	init_waitqueue_head(&dev->slot_wait);
	dev->cq_slots = kcalloc(dev->max_cq, sizeof(*dev->cq_slots), GFP_KERNEL);
	dev->qp_slots = kcalloc(dev->max_qp, sizeof(*dev->qp_slots), GFP_KERNEL);
	dev->cqs = kcalloc(dev->max_cq, sizeof(*dev->cqs), GFP_KERNEL);
	if (!dev->cq_slots || !dev->qp_slots || !dev->cqs)
		return -ENOMEM;
	for (n = 0; n < dev->max_cq; n++) {
		dev->cq_slots[n].vq = dev->vqs[VIRTIO_RDMA_CQ_VQ(n)];
		spin_lock_init(&dev->cq_slots[n].lock);
	}
	for (n = 0; n < dev->max_qp; n++) {
		struct vrdma_qp_slot *s = &dev->qp_slots[n];

		s->sq.vq = dev->vqs[VIRTIO_RDMA_SQ_VQ(dev->max_cq, n)];
		s->rq.vq = dev->vqs[VIRTIO_RDMA_RQ_VQ(dev->max_cq, n)];
		spin_lock_init(&s->sq.lock);
		spin_lock_init(&s->rq.lock);
		INIT_LIST_HEAD(&s->sq.backlog);
		INIT_LIST_HEAD(&s->rq.backlog);
	}
	return 0;
}

/* The backlog work stops for good: before the slots are freed. */
void vrdma_slots_stop(struct vrdma_dev *dev)
{
	cancel_delayed_work_sync(&dev->backlog_work);
}

/* After the device is reset: nothing is with it any more. */
void vrdma_slots_free(struct vrdma_dev *dev)
{
	unsigned int i, len;
	void *buf;
	u32 n;

	/* the WQE buffers the device never gave back, and never had (on
	 * rings, virtqueues 1 and 2 are the wake and event queues)
	 */
	for (i = VIRTIO_RDMA_SQ_VQ(dev->max_cq, 0);
	     !dev->rings && dev->vqs && i < dev->nvqs; i++) {
		while ((buf = virtqueue_get_buf(dev->vqs[i], &len)))
			kfree(buf);
		while ((buf = virtqueue_detach_unused_buf(dev->vqs[i])))
			kfree(buf);
	}
	for (n = 0; dev->qp_slots && n < dev->max_qp; n++) {
		vrdma_wq_drop(&dev->qp_slots[n].sq);
		vrdma_wq_drop(&dev->qp_slots[n].rq);
	}
	for (n = 0; dev->cq_slots && n < dev->max_cq; n++) {
		kfree(dev->cq_slots[n].cqes);
		bitmap_free(dev->cq_slots[n].posted);
	}
	kfree(dev->cq_slots);
	kfree(dev->qp_slots);
	kfree(dev->cqs);
	dev->cq_slots = NULL;
	dev->qp_slots = NULL;
	dev->cqs = NULL;
}

/* Waits out whoever is inside a virtqueue: the device is broken, so no
 * one adds or takes buffers after this (virtqueue_* fail on a broken vq).
 */
void vrdma_slots_fence(struct vrdma_dev *dev)
{
	unsigned long flags;
	u32 n;

	for (n = 0; n < dev->max_cq; n++) {
		spin_lock_irqsave(&dev->cq_slots[n].lock, flags);
		spin_unlock_irqrestore(&dev->cq_slots[n].lock, flags);
	}
	for (n = 0; n < dev->max_qp; n++) {
		struct vrdma_qp_slot *s = &dev->qp_slots[n];

		spin_lock_irqsave(&s->sq.lock, flags);
		spin_unlock_irqrestore(&s->sq.lock, flags);
		spin_lock_irqsave(&s->rq.lock, flags);
		spin_unlock_irqrestore(&s->rq.lock, flags);
	}
}

/* Frees the WQE buffers the device has given back; wq->lock held. */
void vrdma_wq_reclaim(struct vrdma_wq *wq)
{
	unsigned int len;
	void *buf;

	while ((buf = virtqueue_get_buf(wq->vq, &len)))
		kfree(buf);
}

/* Frees the backlog: WQEs the device never saw (their QP is gone);
 * wq->lock held, or the device stopped.
 */
void vrdma_wq_drop(struct vrdma_wq *wq)
{
	struct vrdma_wqe *w, *tmp;

	if (!wq->nbacklog)
		return;
	list_for_each_entry_safe(w, tmp, &wq->backlog, node)
		kfree(w);
	INIT_LIST_HEAD(&wq->backlog);
	wq->nbacklog = 0;
}

static int vrdma_wq_add_one(struct vrdma_wq *wq, struct vrdma_wqe *w,
			    bool *kick)
{
	struct scatterlist sg;
	int err;

	sg_init_one(&sg, w->data, w->len);
	err = virtqueue_add_outbuf(wq->vq, &sg, 1, w, GFP_ATOMIC);
	if (!err && virtqueue_kick_prepare(wq->vq))
		*kick = true;
	return err;
}

/* Moves what the ring has room for from the backlog; wq->lock held. */
static void vrdma_wq_flush(struct vrdma_wq *wq, bool *kick)
{
	struct vrdma_wqe *w;

	vrdma_wq_reclaim(wq);
	while ((w = list_first_entry_or_null(&wq->backlog, struct vrdma_wqe,
					     node))) {
		if (vrdma_wq_add_one(wq, w, kick))
			break;
		list_del(&w->node);
		wq->nbacklog--;
	}
}

/*
 * Adds one WQE to a work queue (taking it over), behind its backlog, and
 * says whether the device needs a kick; -ENOSPC if it has to wait (the
 * ring full, or WQEs before it still waiting). wq->lock held.
 */
int vrdma_wq_add(struct vrdma_wq *wq, struct vrdma_wqe *w, bool *kick)
{
	vrdma_wq_flush(wq, kick);
	if (wq->nbacklog)
		return -ENOSPC;
	return vrdma_wq_add_one(wq, w, kick);
}

/* A WQE that found the ring full waits in the backlog, if fewer than max
 * (the queue's depth) do; wq->lock held.
 */
bool vrdma_wq_defer(struct vrdma_dev *dev, struct vrdma_wq *wq,
		    struct vrdma_wqe *w, u32 max)
{
	if (wq->nbacklog >= max || READ_ONCE(dev->broken))
		return false;
	list_add_tail(&w->node, &wq->backlog);
	wq->nbacklog++;
	mod_delayed_work(system_wq, &dev->backlog_work, 1);
	return true;
}

static void vrdma_backlog_flush(struct vrdma_wq *wq, bool *more)
{
	unsigned long flags;
	bool kick = false;

	spin_lock_irqsave(&wq->lock, flags);
	if (wq->nbacklog) {
		vrdma_wq_flush(wq, &kick);
		*more |= wq->nbacklog != 0;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	if (kick)
		virtqueue_notify(wq->vq);
}

/* The device takes WQEs off the rings as it polls; backlogs follow, a
 * tick at a time, until they are empty or the device failed.
 */
void vrdma_backlog_work(struct work_struct *work)
{
	struct vrdma_dev *dev = container_of(to_delayed_work(work),
					     struct vrdma_dev, backlog_work);
	bool more = false;
	u32 n;

	for (n = 0; n < dev->max_qp; n++) {
		vrdma_backlog_flush(&dev->qp_slots[n].sq, &more);
		vrdma_backlog_flush(&dev->qp_slots[n].rq, &more);
	}
	if (more && !READ_ONCE(dev->broken))
		schedule_delayed_work(&dev->backlog_work, 1);
}

static bool vrdma_slot_settled(struct vrdma_dev *dev, u8 *state)
{
	bool settled;

	spin_lock_irq(&dev->slot_lock);
	settled = *state != VRDMA_SLOT_RELEASING;
	spin_unlock_irq(&dev->slot_lock);
	return settled || READ_ONCE(dev->broken);
}

/*
 * The device gave slot n (state *state) to a new WHAT: take it. A slot
 * whose previous user is still taking its queues back (its DESTROY was
 * answered, and the device may reuse it from then on) is waited for; a
 * slot in use is a device error. 0 or -EIO.
 */
int vrdma_slot_claim(struct vrdma_dev *dev, u8 *state, const char *what,
		     u32 n)
{
	long left;
	u8 st;

	left = wait_event_timeout(dev->slot_wait,
				  vrdma_slot_settled(dev, state),
				  msecs_to_jiffies(VRDMA_SLOT_WAIT_MS));
	if (READ_ONCE(dev->broken))
		return -EIO;
	spin_lock_irq(&dev->slot_lock);
	st = *state;
	if (st == VRDMA_SLOT_FREE)
		*state = VRDMA_SLOT_USED;
	spin_unlock_irq(&dev->slot_lock);
	if (st == VRDMA_SLOT_FREE)
		return 0;
	if (!left)
		vrdma_dev_error(dev, "%s slot %u stayed %s for %u ms\n", what,
				n, vrdma_slot_state_name[st], VRDMA_SLOT_WAIT_MS);
	else
		vrdma_dev_error(dev, "device gave a new %s slot %u, which is %s\n",
				what, n, vrdma_slot_state_name[st]);
	return -EIO;
}

void vrdma_slot_release_begin(struct vrdma_dev *dev, u8 *state)
{
	spin_lock_irq(&dev->slot_lock);
	*state = VRDMA_SLOT_RELEASING;
	spin_unlock_irq(&dev->slot_lock);
}

void vrdma_slot_release_end(struct vrdma_dev *dev, u8 *state)
{
	spin_lock_irq(&dev->slot_lock);
	*state = VRDMA_SLOT_FREE;
	spin_unlock_irq(&dev->slot_lock);
	wake_up_all(&dev->slot_wait);
}
