// SPDX-License-Identifier: GPL-2.0-only
/*
 * Recovery of a device that failed while its back end is still there (a
 * command without an answer, an answer against the driver's record): once
 * reset_work has reset it, the virtio device is probed again, as an unbind
 * and bind would, so that programs that open it anew find it ACTIVE. The
 * health recovery of mlx5 does the same: unregister, reset, register again.
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
#include <linux/workqueue.h>

#include "vrdma.h"

#define VRDMA_RECOVER_COOL	(60 * HZ)
#define VRDMA_RECOVER_MAX_SHIFT	6

enum vrdma_recover_state {
	VRDMA_RECOVER_PENDING,	/* the re-probe is queued */
	VRDMA_RECOVER_COOLING,	/* re-probed; a failure now backs off */
};

struct vrdma_recovery {
	struct list_head node;
	struct delayed_work work;
	struct virtio_device *vdev;	/* referenced */
	enum vrdma_recover_state state;
	unsigned int count;		/* failures soon after a re-probe */
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

static void vrdma_recover_work(struct work_struct *work)
{
	struct vrdma_recovery *r = container_of(to_delayed_work(work),
						struct vrdma_recovery, work);
	struct device *d = &r->vdev->dev;
	bool ours;
	int err;

	mutex_lock(&vrdma_recover_lock);
	if (vrdma_recover_off) {
		/* vrdma_recover_exit frees it */
		mutex_unlock(&vrdma_recover_lock);
		return;
	}
	if (r->state == VRDMA_RECOVER_COOLING) {
		/* no failure since the re-probe: forget this device */
		list_del(&r->node);
		mutex_unlock(&vrdma_recover_lock);
		vrdma_recover_free(r);
		return;
	}
	r->state = VRDMA_RECOVER_COOLING;
	queue_delayed_work(vrdma_recover_wq, &r->work, VRDMA_RECOVER_COOL);
	mutex_unlock(&vrdma_recover_lock);

	/* unbound meanwhile (by hand): it stays so */
	device_lock(d);
	ours = d->driver == vrdma_recover_drv;
	device_unlock(d);
	if (!ours)
		return;
	dev_info(d, "probing the device again after its reset\n");
	err = device_reprobe(d);
	if (err)
		dev_err(d, "probing the device again failed: %d\n", err);
}

/*
 * reset_work, once the device is reset: probe it again later. Returns the
 * delay in seconds, or -1 if no re-probe comes (the module is leaving, or
 * memory is short).
 */
int vrdma_recover_schedule(struct virtio_device *vdev)
{
	struct vrdma_recovery *r;
	int secs = -1;

	mutex_lock(&vrdma_recover_lock);
	if (vrdma_recover_off)
		goto unlock;
	list_for_each_entry(r, &vrdma_recoveries, node)
		if (r->vdev == vdev)
			goto found;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		goto unlock;
	get_device(&vdev->dev);
	r->vdev = vdev;
	INIT_DELAYED_WORK(&r->work, vrdma_recover_work);
	list_add(&r->node, &vrdma_recoveries);
	goto queue;
found:
	if (r->state == VRDMA_RECOVER_PENDING) {
		secs = 0;
		goto unlock;
	}
	r->count = min(r->count + 1, VRDMA_RECOVER_MAX_SHIFT);
queue:
	r->state = VRDMA_RECOVER_PENDING;
	secs = 1 << r->count;
	mod_delayed_work(vrdma_recover_wq, &r->work, secs * HZ);
unlock:
	mutex_unlock(&vrdma_recover_lock);
	return secs;
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
