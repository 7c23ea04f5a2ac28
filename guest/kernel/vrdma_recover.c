// SPDX-License-Identifier: GPL-2.0-only
/*
 * Recovery of a device that failed: once reset_work has reset it, the
 * virtio device is probed again, as an unbind and bind would, so that
 * programs that open it anew find it ACTIVE. The health recovery of mlx5
 * does the same: unregister, reset, register again.
 *
 * A device error (a command without an answer, an answer against the
 * driver's record) is probed again after a delay. A device whose back end
 * went away is probed again once the front end says one is connected (the
 * config's backend field, looked at every VRDMA_RECOVER_POLL): before that
 * the front end ignores the device's status and its commands would hang.
 * A re-probe that fails (the back end went again meanwhile) leaves the
 * device unbound; it is bound again the same way.
 *
 * One record per virtio device, holding a reference to it: the re-probe
 * runs from an ordered workqueue under the driver core's device lock, so it
 * is serialized with remove(); a device that fails again within
 * VRDMA_RECOVER_COOL of its last re-probe waits twice as long each time (1 s
 * up to 64 s), so a device that always fails costs little.
 */
#include <linux/device.h>
#include <linux/list.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>
#include <linux/workqueue.h>

#include "vrdma.h"

#define VRDMA_RECOVER_COOL	(60 * HZ)
#define VRDMA_RECOVER_POLL	(HZ / 4)
#define VRDMA_RECOVER_MAX_SHIFT	6

enum vrdma_recover_state {
	VRDMA_RECOVER_PENDING,	/* the re-probe is queued */
	VRDMA_RECOVER_AWAIT,	/* the re-probe waits for a back end */
	VRDMA_RECOVER_COOLING,	/* re-probed; a failure now backs off */
};

struct vrdma_recovery {
	struct list_head node;
	struct delayed_work work;
	struct virtio_device *vdev;	/* referenced */
	enum vrdma_recover_state state;
	unsigned int count;		/* failures soon after a re-probe */
	bool attach;			/* our re-probe left it unbound */
};

static DEFINE_MUTEX(vrdma_recover_lock);	/* the list, each state */
static LIST_HEAD(vrdma_recoveries);
static struct workqueue_struct *vrdma_recover_wq;
static struct device_driver *vrdma_recover_drv;
static bool vrdma_recover_off;			/* the module is leaving */

static void vrdma_recover_free(struct vrdma_recovery *r)
{
	put_device(&r->vdev->dev);
	kfree(r);
}

/* The config's backend field: 0 while the front end has no back end. */
u32 vrdma_backend(struct virtio_device *vdev)
{
	__le32 v;

	virtio_cread_bytes(vdev, offsetof(struct virtio_rdma_config, backend),
			   &v, sizeof(v));
	return le32_to_cpu(v);
}

static void vrdma_recover_forget(struct vrdma_recovery *r)
{
	list_del(&r->node);
	mutex_unlock(&vrdma_recover_lock);
	vrdma_recover_free(r);
}

/*
 * Under the device lock: the device is still ours to probe again (bound
 * to this driver, or left unbound by our own re-probe; not unbound by
 * hand, not removed), and with await, a back end is connected.
 */
static bool vrdma_recover_wanted(struct vrdma_recovery *r, bool await,
				 bool *ready)
{
	struct device *d = &r->vdev->dev;
	bool ours;

	device_lock(d);
	ours = device_is_registered(d) &&
	       (d->driver == vrdma_recover_drv || (r->attach && !d->driver));
	/* the transport is there while the device is registered */
	*ready = ours && (!await || vrdma_backend(r->vdev));
	device_unlock(d);
	return ours;
}

static void vrdma_recover_work(struct work_struct *work)
{
	struct vrdma_recovery *r = container_of(to_delayed_work(work),
						struct vrdma_recovery, work);
	struct device *d = &r->vdev->dev;
	bool await, wanted, ready, bound;
	int err;

	mutex_lock(&vrdma_recover_lock);
	if (vrdma_recover_off) {
		/* vrdma_recover_exit frees it */
		mutex_unlock(&vrdma_recover_lock);
		return;
	}
	if (r->state == VRDMA_RECOVER_COOLING) {
		/* no failure since the re-probe: forget this device */
		vrdma_recover_forget(r);
		return;
	}
	await = r->state == VRDMA_RECOVER_AWAIT;
	mutex_unlock(&vrdma_recover_lock);

	wanted = vrdma_recover_wanted(r, await, &ready);
	mutex_lock(&vrdma_recover_lock);
	if (vrdma_recover_off || delayed_work_pending(&r->work)) {
		/* leaving, or queued again meanwhile: that run decides */
		mutex_unlock(&vrdma_recover_lock);
		return;
	}
	if (!wanted) {
		/* unbound by hand, or removed, meanwhile: it stays so */
		vrdma_recover_forget(r);
		return;
	}
	if (!ready) {
		/* no back end yet: look again soon */
		queue_delayed_work(vrdma_recover_wq, &r->work, VRDMA_RECOVER_POLL);
		mutex_unlock(&vrdma_recover_lock);
		return;
	}
	r->state = VRDMA_RECOVER_COOLING;
	queue_delayed_work(vrdma_recover_wq, &r->work, VRDMA_RECOVER_COOL);
	mutex_unlock(&vrdma_recover_lock);

	dev_info(d, "probing the device again after its reset\n");
	err = device_reprobe(d);
	device_lock(d);
	bound = d->driver == vrdma_recover_drv;
	device_unlock(d);
	if (bound) {
		r->attach = false;
		return;
	}
	/* the probe failed (the back end went again?): wait, then again */
	dev_err(d, "probing the device again failed (%d): trying again once a back end is connected\n",
		err);
	mutex_lock(&vrdma_recover_lock);
	if (!vrdma_recover_off) {
		r->attach = true;
		r->count = min(r->count + 1, VRDMA_RECOVER_MAX_SHIFT);
		r->state = VRDMA_RECOVER_AWAIT;
		mod_delayed_work(vrdma_recover_wq, &r->work, (1 << r->count) * HZ);
	}
	mutex_unlock(&vrdma_recover_lock);
}

/* The record of vdev, made if there is none; under vrdma_recover_lock. */
static struct vrdma_recovery *vrdma_recover_get(struct virtio_device *vdev)
{
	struct vrdma_recovery *r;

	list_for_each_entry(r, &vrdma_recoveries, node)
		if (r->vdev == vdev)
			return r;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return NULL;
	get_device(&vdev->dev);
	r->vdev = vdev;
	r->state = VRDMA_RECOVER_COOLING;
	INIT_DELAYED_WORK(&r->work, vrdma_recover_work);
	list_add(&r->node, &vrdma_recoveries);
	return r;
}

/*
 * The record of vdev, made if there is none, with vrdma_recover_lock held;
 * NULL, not holding it, if the module is leaving or memory is short.
 */
static struct vrdma_recovery *vrdma_recover_lock_get(struct virtio_device *vdev)
{
	struct vrdma_recovery *r;

	mutex_lock(&vrdma_recover_lock);
	if (!vrdma_recover_off) {
		r = vrdma_recover_get(vdev);
		if (r)
			return r;
	}
	mutex_unlock(&vrdma_recover_lock);
	return NULL;
}

/*
 * reset_work, once the device is reset after a device error: probe it
 * again later. Returns the delay in seconds, or -1 if no re-probe comes
 * (the module is leaving, or memory is short).
 */
int vrdma_recover_schedule(struct virtio_device *vdev)
{
	struct vrdma_recovery *r = vrdma_recover_lock_get(vdev);
	int secs = 0;

	if (!r)
		return -1;
	if (r->state != VRDMA_RECOVER_PENDING) {
		/* a failure soon after the last re-probe backs off */
		if (r->state == VRDMA_RECOVER_COOLING && delayed_work_pending(&r->work))
			r->count = min(r->count + 1, VRDMA_RECOVER_MAX_SHIFT);
		r->state = VRDMA_RECOVER_PENDING;
		secs = 1 << r->count;
		mod_delayed_work(vrdma_recover_wq, &r->work, secs * HZ);
	}
	mutex_unlock(&vrdma_recover_lock);
	return secs;
}

/*
 * reset_work, once the device is reset after its back end went away:
 * probe it again once a back end is connected. 0, or -1 if no re-probe
 * comes (the module is leaving, or memory is short).
 */
int vrdma_recover_await(struct virtio_device *vdev)
{
	struct vrdma_recovery *r = vrdma_recover_lock_get(vdev);

	if (!r)
		return -1;
	r->state = VRDMA_RECOVER_AWAIT;
	mod_delayed_work(vrdma_recover_wq, &r->work, VRDMA_RECOVER_POLL);
	mutex_unlock(&vrdma_recover_lock);
	return 0;
}

int vrdma_recover_init(struct device_driver *drv)
{
	vrdma_recover_wq = alloc_ordered_workqueue("vrdma_recover", 0);
	if (!vrdma_recover_wq)
		return -ENOMEM;
	vrdma_recover_drv = drv;
	return 0;
}

/* Before the driver goes: no re-probe runs or comes after this. */
void vrdma_recover_exit(void)
{
	struct vrdma_recovery *r, *tmp;

	mutex_lock(&vrdma_recover_lock);
	vrdma_recover_off = true;
	mutex_unlock(&vrdma_recover_lock);
	/* from now on a work leaves the list and its queue alone */
	list_for_each_entry_safe(r, tmp, &vrdma_recoveries, node) {
		cancel_delayed_work_sync(&r->work);
		list_del(&r->node);
		vrdma_recover_free(r);
	}
	destroy_workqueue(vrdma_recover_wq);
}
