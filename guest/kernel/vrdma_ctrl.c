// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control queue (docs/virtio-rdma.md section 4): a device-readable part
 * (command byte + request), a device-writable part (status byte + response),
 * executed by the device in ring order. Commands come from sleeping verbs and
 * from req_notify_cq, which may run in interrupt context and so spins.
 */
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>

#include "vrdma.h"

/* How long a command may go unanswered before the device is given up on
 * (and reset); tests set it short to try a device that never answers.
 */
static unsigned int cmd_timeout_ms = 30000;
module_param(cmd_timeout_ms, uint, 0644);
MODULE_PARM_DESC(cmd_timeout_ms,
		 "ms a device may take to answer a command before it is reset (30000)");

static unsigned int vrdma_timeout_ms(void)
{
	return max(READ_ONCE(cmd_timeout_ms), 100U);
}

/* How long a command in atomic context spins before the device is given
 * up on: bounded well below the soft-lockup watchdog.
 */
#define VRDMA_CMD_SPIN_NS	(2 * NSEC_PER_SEC)

struct vrdma_ctrl_req {
	struct list_head node;	/* on ctrl_inflight until the device answers */
	struct completion comp;
	bool done;		/* answered: the waiter owns it again */
	bool failed;		/* no answer will come: the device failed */
	bool abandoned;		/* the waiter gave up: the reaper frees it */
	bool detached;		/* off the ring after a reset */
	u32 len;		/* used length the device reported */
	u8 *in;			/* status byte, then the response */
	u8 buf[];		/* command byte, request, then *in */
};

int vrdma_ctrl_init(struct vrdma_dev *dev)
{
	unsigned int size = virtqueue_get_vring_size(dev->ctrl_vq);

	/* a request takes two descriptors (without indirect ones); a quarter
	 * of the ring is kept for commands that cannot sleep (req_notify_cq
	 * of a kernel CQ), so user threads flooding commands never starve
	 * a kernel consumer's CQ arming
	 */
	dev->ctrl_max = size / 2;
	if (dev->ctrl_max < 4) {
		dev_err(&dev->vdev->dev, "control queue of %u entries: need 8 or more\n",
			size);
		return -EINVAL;
	}
	dev->ctrl_sleep_max = dev->ctrl_max - dev->ctrl_max / 4;
	return 0;
}

/* Takes every answered request off the used ring; ctrl_lock held. */
static void vrdma_ctrl_reap(struct vrdma_dev *dev)
{
	struct vrdma_ctrl_req *r;
	unsigned int len;
	bool freed = false;

	while ((r = virtqueue_get_buf(dev->ctrl_vq, &len))) {
		list_del(&r->node);
		dev->ctrl_count--;
		freed = true;
		r->len = len;
		r->done = true;
		if (r->abandoned)
			kfree(r);
		else
			complete(&r->comp);
	}
	if (freed)
		wake_up(&dev->ctrl_wait);
}

void vrdma_ctrl_done(struct virtqueue *vq)
{
	struct vrdma_dev *dev = vq->vdev->priv;
	unsigned long flags;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	vrdma_ctrl_reap(dev);
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
}

/* Whether a sleeping command may try the ring again. */
static bool vrdma_ctrl_room(struct vrdma_dev *dev)
{
	return READ_ONCE(dev->ctrl_count) < dev->ctrl_sleep_max ||
	       READ_ONCE(dev->broken);
}

/*
 * Puts a request on the control queue. A sleeping caller waits for room
 * (a full ring is a busy device, not an error: a destroy must not fail
 * because other threads flood commands); an atomic caller gets -EBUSY.
 */
static struct vrdma_ctrl_req *vrdma_ctrl_send(struct vrdma_dev *dev, u8 cmd,
					     const void *req, size_t req_len,
					     size_t rsp_len, bool can_sleep)
{
	struct scatterlist out, in, *sgs[2] = { &out, &in };
	unsigned long deadline = jiffies + msecs_to_jiffies(vrdma_timeout_ms());
	unsigned int limit = can_sleep ? dev->ctrl_sleep_max : dev->ctrl_max;
	struct vrdma_ctrl_req *r;
	unsigned long flags;
	bool kick;
	int err;

	r = kzalloc(sizeof(*r) + 2 + req_len + rsp_len,
		    can_sleep ? GFP_KERNEL : GFP_ATOMIC);
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
	for (;;) {
		err = -EIO;
		if (dev->broken)
			break;
		err = -ENOSPC;
		if (dev->ctrl_count < limit)
			err = virtqueue_add_sgs(dev->ctrl_vq, sgs, 1, 1, r,
						GFP_ATOMIC);
		if (err != -ENOSPC || !can_sleep)
			break;
		spin_unlock_irqrestore(&dev->ctrl_lock, flags);
		if (time_after(jiffies, deadline)) {
			vrdma_dev_error(dev, "command %u: the control queue stayed full for %u ms\n",
					cmd, vrdma_timeout_ms());
			kfree(r);
			return ERR_PTR(-ETIMEDOUT);
		}
		wait_event_timeout(dev->ctrl_wait, vrdma_ctrl_room(dev),
				   msecs_to_jiffies(100));
		spin_lock_irqsave(&dev->ctrl_lock, flags);
	}
	if (err)
		goto unlock;
	dev->ctrl_count++;
	list_add_tail(&r->node, &dev->ctrl_inflight);
	kick = virtqueue_kick_prepare(dev->ctrl_vq);
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	if (kick)
		virtqueue_notify(dev->ctrl_vq);
	return r;

unlock:
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	kfree(r);
	return ERR_PTR(err == -ENOSPC ? -EBUSY : err);
}

/*
 * The waiter gives up on r (timed out, or the device failed). While the
 * device may still write r, it is left for the reaper or the reset to
 * free; a device that did not answer in time is given up on and reset.
 * 0 if the answer came after all.
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
	failed = r->failed;
	if (r->detached) {		/* the device was reset: it is ours */
		spin_unlock_irqrestore(&dev->ctrl_lock, flags);
		kfree(r);
		return -EIO;
	}
	r->abandoned = true;
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	if (failed)
		return -EIO;
	vrdma_dev_error(dev, "command %u got no answer in time\n", cmd);
	return -ETIMEDOUT;
}

/* The device failed: every waiter gets -EIO now, not at its timeout; the
 * requests stay with the device until it is reset.
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
	wake_up_all(&dev->ctrl_wait);
}

static int vrdma_ctrl_finish(struct vrdma_dev *dev, struct vrdma_ctrl_req *r,
			     u8 cmd, void *rsp, size_t rsp_len)
{
	int err = virtio_rdma_status_errno(r->in[0]);

	if (!err && r->len < 1 + rsp_len) {
		vrdma_dev_error(dev, "command %u: short answer (%u bytes)\n",
				cmd, r->len);
		err = -EIO;
	}
	if (!err && rsp_len)
		memcpy(rsp, r->in + 1, rsp_len);
	kfree(r);
	return err;
}

/*
 * Wait for r's answer, at most the command timeout; false if none came.
 * Each second the device is looked at too: a front end whose back end went
 * away says so (NEEDS_RESET) with a config interrupt that the virtio core
 * holds back while a probe runs, or, before DRIVER_OK, only in the config's
 * backend field; a probe must not wait for its timeout on a device nobody
 * serves.
 */
static bool vrdma_ctrl_wait(struct vrdma_dev *dev, struct vrdma_ctrl_req *r)
{
	unsigned long end = jiffies + msecs_to_jiffies(vrdma_timeout_ms());
	struct virtio_device *vdev = dev->vdev;
	long left;

	while ((left = (long)(end - jiffies)) > 0) {
		if (wait_for_completion_timeout(&r->comp, min_t(long, left, HZ)))
			return true;
		if ((vdev->config->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET) ||
		    (dev->backend_known && !vrdma_backend(vdev)))
			vrdma_backend_gone(dev);	/* completes r, failed */
	}
	return completion_done(&r->comp);
}

/* vrdma_cmd: run one command and wait for its answer (may sleep). */
int vrdma_cmd(struct vrdma_dev *dev, u8 cmd, const void *req, size_t req_len,
	      void *rsp, size_t rsp_len)
{
	struct vrdma_ctrl_req *r;
	int err;

	might_sleep();
	r = vrdma_ctrl_send(dev, cmd, req, req_len, rsp_len, true);
	if (IS_ERR(r))
		return PTR_ERR(r);
	if (!vrdma_ctrl_wait(dev, r) || READ_ONCE(r->failed)) {
		err = vrdma_ctrl_abandon(dev, r, cmd);
		if (err)
			return err;
	}
	return vrdma_ctrl_finish(dev, r, cmd, rsp, rsp_len);
}

/*
 * vrdma_cmd_destroy: a DESTROY_* or DEREG_MR of the object the device knows
 * by handle (each such request is that one le32). A live device that
 * refuses is in error: what the object held stays the device's until it is
 * reset. Returns the command's result; a caller holding memory the device
 * may still use keeps it on failure.
 */
int vrdma_cmd_destroy(struct vrdma_dev *dev, u8 cmd, const char *what,
		      u32 handle)
{
	__le32 req = cpu_to_le32(handle);
	int err;

	err = vrdma_cmd(dev, cmd, &req, sizeof(req), NULL, 0);
	if (err && !READ_ONCE(dev->broken))
		vrdma_dev_error(dev, "%s %u refused: %d\n", what, handle, err);
	return err;
}

/* vrdma_cmd_atomic: the same in any context: spins on the used ring
 * instead of sleeping, for at most VRDMA_CMD_SPIN_NS.
 */
int vrdma_cmd_atomic(struct vrdma_dev *dev, u8 cmd, const void *req,
		     size_t req_len, void *rsp, size_t rsp_len)
{
	u64 deadline = ktime_get_ns() + min_t(u64, VRDMA_CMD_SPIN_NS,
					     (u64)vrdma_timeout_ms() * NSEC_PER_MSEC);
	struct vrdma_ctrl_req *r;
	unsigned long flags;
	bool done;
	int err;

	r = vrdma_ctrl_send(dev, cmd, req, req_len, rsp_len, false);
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

/* After the device is reset: nothing is with it any more. An abandoned
 * request is freed here; one whose waiter has yet to look is left to it.
 */
void vrdma_ctrl_stop(struct vrdma_dev *dev)
{
	struct vrdma_ctrl_req *r, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&dev->ctrl_lock, flags);
	dev->broken = true;
	dev->ctrl_stopped = true;
	while (virtqueue_detach_unused_buf(dev->ctrl_vq))
		continue;	/* each is on ctrl_inflight too */
	list_for_each_entry_safe(r, tmp, &dev->ctrl_inflight, node) {
		list_del(&r->node);
		dev->ctrl_count--;
		if (r->abandoned) {
			kfree(r);
			continue;
		}
		r->detached = true;
		r->failed = true;
		complete(&r->comp);
	}
	spin_unlock_irqrestore(&dev->ctrl_lock, flags);
	wake_up_all(&dev->ctrl_wait);
}
