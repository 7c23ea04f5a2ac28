// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control queue (docs/virtio-rdma.md section 4): a device-readable part
 * (command byte + request), a device-writable part (status byte + response),
 * executed by the device in ring order. Commands come from sleeping verbs and
 * from req_notify_cq, which may run in interrupt context and so spins.
 */
#include <linux/ktime.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "vrdma.h"

#define VRDMA_CMD_TIMEOUT_MS	30000
#define VRDMA_CMD_SPIN_NS	(10 * NSEC_PER_SEC)

struct vrdma_ctrl_req {
	struct list_head node;	/* on ctrl_inflight until the device answers */
	struct completion comp;
	bool done;
	bool failed;		/* no answer will come: the device needs a reset */
	bool abandoned;		/* the waiter gave up: the reaper frees it */
	u32 len;		/* used length the device reported */
	u8 *in;			/* status byte, then the response */
	u8 buf[];		/* command byte, request, then *in */
};

/* Takes every answered request off the used ring; ctrl_lock held. */
static void vrdma_ctrl_reap(struct vrdma_dev *dev)
{
	struct vrdma_ctrl_req *r;
	unsigned int len;

	while ((r = virtqueue_get_buf(dev->ctrl_vq, &len))) {
		list_del(&r->node);
		r->len = len;
		r->done = true;
		if (r->abandoned)
			kfree(r);
		else
			complete(&r->comp);
	}
}

void vrdma_ctrl_done(struct virtqueue *vq)
{
	struct vrdma_dev *dev = vq->vdev->priv;
	unsigned long flags;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	vrdma_ctrl_reap(dev);
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
}

static struct vrdma_ctrl_req *vrdma_ctrl_send(struct vrdma_dev *dev, u8 cmd,
					     const void *req, size_t req_len,
					     size_t rsp_len, gfp_t gfp)
{
	struct scatterlist out, in, *sgs[2] = { &out, &in };
	struct vrdma_ctrl_req *r;
	unsigned long flags;
	bool kick;
	int err;

	r = kzalloc(sizeof(*r) + 2 + req_len + rsp_len, gfp);
	if (!r)
		return ERR_PTR(-ENOMEM);
	init_completion(&r->comp);
	r->buf[0] = cmd;
	memcpy(r->buf + 1, req, req_len);
	r->in = r->buf + 1 + req_len;
	r->in[0] = 0xff;
	sg_init_one(&out, r->buf, 1 + req_len);
	sg_init_one(&in, r->in, 1 + rsp_len);

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	if (dev->broken) {
		err = -EIO;
		goto unlock;
	}
	err = virtqueue_add_sgs(dev->ctrl_vq, sgs, 1, 1, r, GFP_ATOMIC);
	if (err)
		goto unlock;
	list_add_tail(&r->node, &dev->ctrl_inflight);
	kick = virtqueue_kick_prepare(dev->ctrl_vq);
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	if (kick)
		virtqueue_notify(dev->ctrl_vq);
	return r;

unlock:
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	kfree(r);
	return ERR_PTR(err);
}

/* The waiter gives up on r (timed out, or the device failed): the device
 * may still write it, so it is left for the reaper (or device removal) to
 * free, and the device is given up on too: its later answers would be out
 * of step. 0 if the answer came after all.
 */
static int vrdma_ctrl_abandon(struct vrdma_dev *dev, struct vrdma_ctrl_req *r,
			      u8 cmd)
{
	unsigned long flags;
	bool failed;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	if (r->done) {
		spin_unlock_irqrestore(&dev->ctrl_lock, flags);
		return 0;
	}
	r->abandoned = true;
	failed = r->failed;
	dev->broken = true;
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	if (failed)
		return -EIO;
	dev_err(&dev->vdev->dev, "command %u got no answer: device unusable\n",
		cmd);
	return -ETIMEDOUT;
}

/* The device needs a reset: every waiter gets -EIO now, not at its
 * timeout; the requests stay with the device until it is reset.
 */
void vrdma_ctrl_fail(struct vrdma_dev *dev)
{
	struct vrdma_ctrl_req *r;
	unsigned long flags;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	dev->broken = true;
	list_for_each_entry(r, &dev->ctrl_inflight, node) {
		r->failed = true;
		complete(&r->comp);
	}
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
}

static int vrdma_ctrl_finish(struct vrdma_dev *dev, struct vrdma_ctrl_req *r,
			     u8 cmd, void *rsp, size_t rsp_len)
{
	int err = virtio_rdma_status_errno(r->in[0]);

	if (!err && r->len < 1 + rsp_len) {
		dev_err_ratelimited(&dev->vdev->dev,
				    "command %u: short answer (%u bytes)\n",
				    cmd, r->len);
		err = -EIO;
	}
	if (!err && rsp_len)
		memcpy(rsp, r->in + 1, rsp_len);
	kfree(r);
	return err;
}

/* vrdma_cmd: run one command and wait for its answer (may sleep). */
int vrdma_cmd(struct vrdma_dev *dev, u8 cmd, const void *req, size_t req_len,
	      void *rsp, size_t rsp_len)
{
	struct vrdma_ctrl_req *r;
	int err;

	might_sleep();
	r = vrdma_ctrl_send(dev, cmd, req, req_len, rsp_len, GFP_KERNEL);
	if (IS_ERR(r))
		return PTR_ERR(r);
	if (!wait_for_completion_timeout(&r->comp,
					 msecs_to_jiffies(VRDMA_CMD_TIMEOUT_MS)) ||
	    READ_ONCE(r->failed)) {
		err = vrdma_ctrl_abandon(dev, r, cmd);
		if (err)
			return err;
	}
	return vrdma_ctrl_finish(dev, r, cmd, rsp, rsp_len);
}

/* vrdma_cmd_atomic: the same in any context: spins on the used ring
 * instead of sleeping.
 */
int vrdma_cmd_atomic(struct vrdma_dev *dev, u8 cmd, const void *req,
		     size_t req_len, void *rsp, size_t rsp_len)
{
	u64 deadline = ktime_get_ns() + VRDMA_CMD_SPIN_NS;
	struct vrdma_ctrl_req *r;
	unsigned long flags;
	bool done;
	int err;

	r = vrdma_ctrl_send(dev, cmd, req, req_len, rsp_len, GFP_ATOMIC);
	if (IS_ERR(r))
		return PTR_ERR(r);
	for (;;) {
		spin_lock_irqsave(&dev->ctrl_lock, flags);
		vrdma_ctrl_reap(dev);
		done = r->done;
		spin_unlock_irqrestore(&dev->ctrl_lock, flags);
		if (done)
			break;
		if (READ_ONCE(r->failed) || ktime_get_ns() > deadline) {
			err = vrdma_ctrl_abandon(dev, r, cmd);
			if (err)
				return err;
			break;
		}
		cpu_relax();
	}
	return vrdma_ctrl_finish(dev, r, cmd, rsp, rsp_len);
}

/* After the device is reset: free what it never answered. */
void vrdma_ctrl_stop(struct vrdma_dev *dev)
{
	struct vrdma_ctrl_req *r;

	dev->broken = true;
	vrdma_ctrl_reap(dev);
	while ((r = virtqueue_detach_unused_buf(dev->ctrl_vq))) {
		list_del(&r->node);
		kfree(r);
	}
}
