// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_rdma: registers an RDMA device (RoCEv2, one port) for each virtio
 * device of ID 42, the virtio-rdma device of the "[RFC] Virtio RDMA" seed as
 * vrdmad serves it (docs/virtio-rdma.md). The port is tied to the VM's
 * Ethernet netdev, found by the MAC the device's sys_image_guid is made from,
 * so that the IB core fills the GID table from that netdev's addresses.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/virtio_config.h>
#include <rdma/ib_verbs.h>

#include "vrdma.h"

/* ABI v2: take VIRTIO_RDMA_F_RINGS where the device offers it */
static bool rings = true;
module_param(rings, bool, 0444);
MODULE_PARM_DESC(rings, "Use the device's rings in guest memory (ABI v2) where offered (default: on)");

static const struct ib_device_ops vrdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = VRDMA_UVERBS_ABI_VERSION,

	.add_gid = vrdma_add_gid,
	.alloc_mr = vrdma_alloc_mr,
	.alloc_mw = vrdma_alloc_mw,
	.alloc_pd = vrdma_alloc_pd,
	.alloc_ucontext = vrdma_alloc_ucontext,
	.create_ah = vrdma_create_ah,
	.create_cq = vrdma_create_cq,
	.create_qp = vrdma_create_qp,
	.create_srq = vrdma_create_srq,
	.create_user_ah = vrdma_create_ah,	/* uverbs CREATE_AH needs it */
	.dealloc_mw = vrdma_dealloc_mw,
	.dealloc_pd = vrdma_dealloc_pd,
	.dealloc_ucontext = vrdma_dealloc_ucontext,
	.del_gid = vrdma_del_gid,
	.dereg_mr = vrdma_dereg_mr,
	.destroy_ah = vrdma_destroy_ah,
	.destroy_cq = vrdma_destroy_cq,
	.destroy_qp = vrdma_destroy_qp,
	.destroy_srq = vrdma_destroy_srq,
	/* unregistering does not wait for programs to close the device */
	.disassociate_ucontext = vrdma_disassociate_ucontext,
	.get_dma_mr = vrdma_get_dma_mr,
	.get_link_layer = vrdma_get_link_layer,
	.get_port_immutable = vrdma_get_port_immutable,
	.map_mr_sg = vrdma_map_mr_sg,
	.mmap = vrdma_mmap,
	.mmap_free = vrdma_mmap_free,
	.modify_qp = vrdma_modify_qp,
	.modify_srq = vrdma_modify_srq,
	.poll_cq = vrdma_poll_cq,
	.post_recv = vrdma_post_recv,
	.post_send = vrdma_post_send,
	.post_srq_recv = vrdma_post_srq_recv,
	.query_ah = vrdma_query_ah,
	.query_device = vrdma_query_device,
	.query_pkey = vrdma_query_pkey,
	.query_port = vrdma_query_port,
	.query_qp = vrdma_query_qp,
	.query_srq = vrdma_query_srq,
	.reg_user_mr = vrdma_reg_user_mr,
	.req_notify_cq = vrdma_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, vrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, vrdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, vrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vrdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vrdma_ucontext, ibuc),
};

/*
 * The config space, little-endian, into CPU order (sys_image_guid stays in
 * network order, as ib_device_attr wants it). Only the part before the GID
 * table: the IB core keeps the GID table. Every value is checked before
 * use: the device's word sizes our allocations.
 */
static int vrdma_read_config(struct vrdma_dev *dev)
{
	struct virtio_rdma_config raw;
	struct virtio_rdma_config *c = &dev->cfg;
	u64 guid;

	memset(&raw, 0, sizeof(raw));
	virtio_cread_bytes(dev->vdev, 0, &raw,
			   offsetof(struct virtio_rdma_config, gid_tbl));
#define CFG32(f) (c->f = le32_to_cpu(raw.f))
	c->sys_image_guid = raw.sys_image_guid;
	c->max_mr_size = le64_to_cpu(raw.max_mr_size);
	c->page_size_cap = le64_to_cpu(raw.page_size_cap);
	c->device_cap_flags = le64_to_cpu(raw.device_cap_flags);
	CFG32(phys_port_cnt);
	CFG32(vendor_id);
	CFG32(vendor_part_id);
	CFG32(hw_ver);
	CFG32(max_qp);
	CFG32(max_qp_wr);
	CFG32(max_send_sge);
	CFG32(max_recv_sge);
	CFG32(max_sge_rd);
	CFG32(max_cq);
	CFG32(max_cqe);
	CFG32(max_mr);
	CFG32(max_mw);
	CFG32(max_pd);
	CFG32(max_qp_rd_atom);
	CFG32(max_res_rd_atom);
	CFG32(max_qp_init_rd_atom);
	CFG32(max_ah);
	CFG32(max_fast_reg_page_list_len);
	/* past the GID table: the SRQ limits */
	virtio_cread_bytes(dev->vdev, offsetof(struct virtio_rdma_config, max_srq),
			   &raw.max_srq, 4 * sizeof(raw.max_srq));
	CFG32(max_srq);
	CFG32(max_srq_wr);
	CFG32(max_srq_sge);
	CFG32(caps);	/* VIRTIO_RDMA_CAP_*: an older vrdmad's 0 */
	if (dev->rings) {
		virtio_cread_bytes(dev->vdev,
				   offsetof(struct virtio_rdma_config, ring_max_qp),
				   &raw.ring_max_qp, 4 * sizeof(raw.ring_max_qp));
		CFG32(ring_max_qp);
		CFG32(ring_max_cq);
		CFG32(ring_max_srq);
		CFG32(max_db_pages);
	}
#undef CFG32
	c->atomic_cap = raw.atomic_cap;
	c->max_pkeys = le16_to_cpu(raw.max_pkeys);
	c->local_ca_ack_delay = raw.local_ca_ack_delay;

	if (c->phys_port_cnt != 1) {
		dev_err(&dev->vdev->dev, "%u ports: only 1 is supported\n",
			c->phys_port_cnt);
		return -EINVAL;
	}
	/* vhost-user names a queue with 8 bits: at most 256 in all */
	if (!c->max_cq || !c->max_qp ||
	    VIRTIO_RDMA_NUM_VQS((u64)c->max_cq, (u64)c->max_qp) > 256) {
		dev_err(&dev->vdev->dev, "max_cq %u, max_qp %u: need 1 + max_cq + 2 * max_qp <= 256 queues\n",
			c->max_cq, c->max_qp);
		return -EINVAL;
	}
	dev->max_cq = c->max_cq;
	dev->max_qp = c->max_qp;
	if (dev->rings) {
		/* at most 64 doorbell pages per VM (docs/virtio-rdma.md) */
		if (!c->ring_max_qp || !c->ring_max_cq || !c->max_db_pages ||
		    c->max_db_pages > 64) {
			dev_err(&dev->vdev->dev, "rings: ring_max_qp %u, ring_max_cq %u, max_db_pages %u\n",
				c->ring_max_qp, c->ring_max_cq, c->max_db_pages);
			return -EINVAL;
		}
		/* objects need no virtqueue, so no v1 slots */
		dev->max_cq = 0;
		dev->max_qp = 0;
		c->max_qp = c->ring_max_qp;
		c->max_cq = c->ring_max_cq;
		c->max_srq = min(c->max_srq ? c->ring_max_srq : 0,
				 c->ring_max_qp - 1);
		/* a ring has at most 32768 entries */
		c->max_cqe = min(c->max_cqe, 32768u);
	}

	/* sys_image_guid is the EUI-64 of the VM's MAC (docs/virtio-rdma.md) */
	guid = be64_to_cpu((__force __be64)c->sys_image_guid);
	dev->mac[0] = (guid >> 56) ^ 0x02;
	dev->mac[1] = guid >> 48;
	dev->mac[2] = guid >> 40;
	dev->mac[3] = guid >> 16;
	dev->mac[4] = guid >> 8;
	dev->mac[5] = guid;
	if (((guid >> 24) & 0xffff) != 0xfffe || !is_valid_ether_addr(dev->mac)) {
		dev_err(&dev->vdev->dev, "sys_image_guid %016llx is not the EUI-64 of a MAC\n",
			guid);
		return -EINVAL;
	}
	return 0;
}

static int vrdma_find_vqs(struct vrdma_dev *dev)
{
	struct virtqueue_info *info;
	char (*names)[16];
	unsigned int i, k;
	int err;

	/* rings: the control, wake and event queues alone */
	dev->nvqs = dev->rings ? 3 : VIRTIO_RDMA_NUM_VQS(dev->max_cq, dev->max_qp);
	dev->vqs = kcalloc(dev->nvqs, sizeof(*dev->vqs), GFP_KERNEL);
	dev->vq_names = kcalloc(dev->nvqs, sizeof(*names), GFP_KERNEL);
	info = kcalloc(dev->nvqs, sizeof(*info), GFP_KERNEL);
	if (!dev->vqs || !dev->vq_names || !info) {
		err = -ENOMEM;
		goto free_info;
	}
	names = dev->vq_names;
	info[VIRTIO_RDMA_CTRL_VQ].name = "ctrl";
	info[VIRTIO_RDMA_CTRL_VQ].callback = vrdma_ctrl_done;
	if (dev->rings) {
		info[VIRTIO_RDMA_WAKE_VQ].name = "wake";
		info[VIRTIO_RDMA_EVENT_VQ].name = "event";
		info[VIRTIO_RDMA_EVENT_VQ].callback = vrdma_event_done;
	}
	for (i = 0; i < dev->max_cq; i++) {
		k = VIRTIO_RDMA_CQ_VQ(i);
		snprintf(names[k], sizeof(names[k]), "cq%u", i);
		info[k].name = names[k];
		info[k].callback = vrdma_cq_done;
	}
	/* no interrupts for work queues: buffers are reclaimed when posting */
	for (i = 0; i < dev->max_qp; i++) {
		k = VIRTIO_RDMA_SQ_VQ(dev->max_cq, i);
		snprintf(names[k], sizeof(names[k]), "sq%u", i);
		info[k].name = names[k];
		snprintf(names[k + 1], sizeof(names[k + 1]), "rq%u", i);
		info[k + 1].name = names[k + 1];
	}
	err = virtio_find_vqs(dev->vdev, dev->nvqs, dev->vqs, info, NULL);
	if (err)
		dev_err(&dev->vdev->dev, "cannot set up %u virtqueues: %d\n",
			dev->nvqs, err);
	else
		dev->ctrl_vq = dev->vqs[VIRTIO_RDMA_CTRL_VQ];
	if (!err && dev->rings) {
		dev->wake_vq = dev->vqs[VIRTIO_RDMA_WAKE_VQ];
		dev->event_vq = dev->vqs[VIRTIO_RDMA_EVENT_VQ];
	}
free_info:
	kfree(info);
	return err;
}

static struct net_device *vrdma_find_netdev(struct vrdma_dev *dev)
{
	struct net_device *nd, *found = NULL;

	rcu_read_lock();
	for_each_netdev_rcu(&init_net, nd) {
		if (nd->type == ARPHRD_ETHER &&
		    ether_addr_equal(nd->dev_addr, dev->mac)) {
			found = nd;
			dev_hold(found);
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/* Ties the port to the netdev with our MAC, if there is one and we have
 * none; then the IB core adds its addresses as GIDs.
 */
static void vrdma_bind(struct vrdma_dev *dev, bool rescan)
{
	struct net_device *nd;
	int err;

	nd = vrdma_find_netdev(dev);
	if (!nd)
		return;
	err = ib_device_set_netdev(&dev->ib, nd, VRDMA_PORT);
	if (err)
		dev_warn(&dev->vdev->dev, "cannot use %s: %d\n", nd->name, err);
	else
		dev_info(&dev->vdev->dev, "port 1 on %s\n", nd->name);
	dev_put(nd);
	if (!err && rescan)
		rdma_roce_rescan_device(&dev->ib);
}

static void vrdma_bind_work(struct work_struct *work)
{
	vrdma_bind(container_of(work, struct vrdma_dev, bind_work), true);
}

static void vrdma_port_event(struct vrdma_dev *dev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &dev->ib,
		.element.port_num = VRDMA_PORT,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

static int vrdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct vrdma_dev *dev = container_of(nb, struct vrdma_dev, nb);
	struct net_device *nd = netdev_notifier_info_to_dev(ptr);
	struct net_device *ours = ib_device_get_netdev(&dev->ib, VRDMA_PORT);

	switch (event) {
	case NETDEV_REGISTER:
		/* rtnl is held here; binding rescans, which takes it */
		if (!ours && ether_addr_equal(nd->dev_addr, dev->mac))
			schedule_work(&dev->bind_work);
		break;
	case NETDEV_UNREGISTER:
		if (nd == ours)
			ib_device_set_netdev(&dev->ib, NULL, VRDMA_PORT);
		break;
	case NETDEV_UP:
	case NETDEV_CHANGE:
		if (nd == ours)
			vrdma_port_event(dev, netif_running(nd) &&
					 netif_carrier_ok(nd) ?
					 IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
		break;
	case NETDEV_DOWN:
		if (nd == ours)
			vrdma_port_event(dev, IB_EVENT_PORT_ERR);
		break;
	}
	dev_put(ours);
	return NOTIFY_DONE;
}

/*
 * The device failed: it did not answer, it answered against the driver's
 * record, or its back end went away (QEMU's vhost-user-rdma sets
 * NEEDS_RESET: every RDMA object it held is gone). Commands and work fail
 * with -EIO from now on; vrdma_reset_work tells the programs and resets the
 * device, then frees what it might still have touched. A device error is
 * followed by a new probe (vrdma_recover.c); a back end that went away by
 * one once a back end is connected again, where the front end says when
 * (the config's backend field), and otherwise by nothing until the driver
 * is bound again (docs/guest.md). Any context.
 */
void vrdma_dev_fail(struct vrdma_dev *dev)
{
	vrdma_ctrl_fail(dev);
	if (!READ_ONCE(dev->ctrl_stopped))
		schedule_work(&dev->reset_work);
}

/* The device did something it must not: say what, and give up on it. */
void vrdma_dev_error(struct vrdma_dev *dev, const char *fmt, ...)
{
	bool first = !READ_ONCE(dev->broken);
	struct va_format vaf;
	va_list args;

	if (first) {
		va_start(args, fmt);
		vaf.fmt = fmt;
		vaf.va = &args;
		dev_err(&dev->vdev->dev, "%pV", &vaf);
		va_end(args);
		dev_err(&dev->vdev->dev, "device error: %s is reset, then probed again\n",
			dev_name(&dev->ib.dev));
	}
	WRITE_ONCE(dev->recover, true);
	vrdma_dev_fail(dev);
}

static void vrdma_held_free(struct vrdma_held *h)
{
	if (h->umem)
		ib_umem_release(h->umem);
	if (h->pages && h->pages_len)
		free_pages_exact(h->pages, h->pages_len);
	else
		kfree(h->pages);
	vfree(h->vmem);
	kfree(h);
}

/* Kept until the device is reset, or freed now if it was reset already. */
static void vrdma_hold(struct vrdma_dev *dev, struct vrdma_held *h)
{
	bool now;

	spin_lock_irq(&dev->held_lock);
	now = dev->reset_done;
	if (!now)
		list_add_tail(&h->node, &dev->held);
	spin_unlock_irq(&dev->held_lock);
	if (now)
		vrdma_held_free(h);
}

/*
 * Memory the device may still read or write (its command was never
 * answered, or it refused to let go): kept, pinned, until the device is
 * reset. GFP_KERNEL: from sleeping verbs only.
 */
void vrdma_dev_hold(struct vrdma_dev *dev, struct ib_umem *umem, void *pages,
		    size_t pages_len)
{
	struct vrdma_held *h;

	if (!umem && !pages)
		return;
	h = kzalloc(sizeof(*h), GFP_KERNEL | __GFP_NOFAIL);
	h->umem = umem;
	h->pages = pages;
	h->pages_len = pages_len;
	vrdma_hold(dev, h);
}

/* A ring the device may still read or write: vfree'd once it is reset. */
void vrdma_dev_hold_vmem(struct vrdma_dev *dev, void *vmem)
{
	struct vrdma_held *h;

	if (!vmem)
		return;
	h = kzalloc(sizeof(*h), GFP_KERNEL | __GFP_NOFAIL);
	h->vmem = vmem;
	vrdma_hold(dev, h);
}

static void vrdma_held_release(struct vrdma_dev *dev)
{
	struct vrdma_held *h, *tmp;
	LIST_HEAD(list);

	spin_lock_irq(&dev->held_lock);
	dev->reset_done = true;
	list_splice_init(&dev->held, &list);
	spin_unlock_irq(&dev->held_lock);
	list_for_each_entry_safe(h, tmp, &list, node)
		vrdma_held_free(h);
}

/* Stops the device for good: no callback runs and no buffer moves after
 * this; what it was given is ours again.
 */
static void vrdma_stop_device(struct vrdma_dev *dev)
{
	mutex_lock(&dev->reset_lock);
	if (!dev->ctrl_stopped) {
		virtio_break_device(dev->vdev);
		vrdma_slots_fence(dev);
		vrdma_rings_fence(dev);
		virtio_reset_device(dev->vdev);
		vrdma_ctrl_stop(dev);
		vrdma_held_release(dev);
	}
	mutex_unlock(&dev->reset_lock);
}

static void vrdma_reset_work(struct work_struct *work)
{
	struct vrdma_dev *dev = container_of(work, struct vrdma_dev, reset_work);
	struct virtio_device *vdev = dev->vdev;
	struct ib_event ev = {
		.device = &dev->ib,
		.element.port_num = VRDMA_PORT,
		.event = IB_EVENT_DEVICE_FATAL,
	};
	bool needs_reset;
	int secs = -1;

	if (READ_ONCE(dev->ctrl_stopped))
		return;
	/* before the reset clears it */
	needs_reset = vdev->config->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET;
	vrdma_udb_dead(dev);
	ib_dispatch_event(&ev);
	vrdma_stop_device(dev);
	/* Without a back end a probe would hang on commands: wait for one
	 * where the front end says when, else for the driver to be bound.
	 */
	if (READ_ONCE(dev->await_backend) || (needs_reset && dev->backend_known)) {
		if (!vrdma_recover_await(vdev)) {
			dev_info(&vdev->dev, "device reset: what it held is freed; probed again once a back end is connected\n");
			return;
		}
	} else if (READ_ONCE(dev->recover) && !needs_reset) {
		secs = vrdma_recover_schedule(vdev);
	}
	if (secs < 0)
		dev_info(&vdev->dev, "device reset: what it held is freed\n");
	else
		dev_info(&vdev->dev, "device reset: what it held is freed; probed again in %d s\n",
			 secs);
}

/*
 * The front end says the back end went away (NEEDS_RESET): every RDMA
 * object the device held is gone with it. Any context.
 */
void vrdma_backend_gone(struct vrdma_dev *dev)
{
	if (READ_ONCE(dev->broken))
		return;
	if (dev->backend_known) {
		dev_err(&dev->vdev->dev, "the device needs a reset (its back end went away): %s is reset, then probed again once a back end is connected\n",
			dev_name(&dev->ib.dev));
		WRITE_ONCE(dev->await_backend, true);
	} else {
		dev_err(&dev->vdev->dev, "the device needs a reset (its back end went away): %s is dead until the driver is bound again\n",
			dev_name(&dev->ib.dev));
	}
	vrdma_dev_fail(dev);
}

static void vrdma_config_changed(struct virtio_device *vdev)
{
	struct vrdma_dev *dev = vdev->priv;

	if (vdev->config->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET)
		vrdma_backend_gone(dev);
}

/*
 * The device reads and writes guest memory by guest-physical address
 * (docs/virtio-rdma.md: no VIRTIO_F_ACCESS_PLATFORM), and kernel consumers
 * hand it addresses the PCI device's DMA mapping gave: those must be the
 * physical ones. Not so behind a translating IOMMU or bounce buffers
 * (swiotlb, as in confidential guests): refuse rather than corrupt.
 */
static int vrdma_check_dma(struct vrdma_dev *dev)
{
	struct device *dma = dev->vdev->dev.parent;
	dma_addr_t addr;
	void *buf;
	int err = 0;

	if (virtio_has_feature(dev->vdev, VIRTIO_F_ACCESS_PLATFORM)) {
		dev_err(&dev->vdev->dev, "the device asks for VIRTIO_F_ACCESS_PLATFORM, which this driver does not support\n");
		return -EOPNOTSUPP;
	}
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	addr = dma_map_single(dma, buf, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dma, addr)) {
		err = -EIO;
		goto free_buf;
	}
	if (addr != virt_to_phys(buf)) {
		dev_err(&dev->vdev->dev, "DMA addresses of %s are not guest-physical (an IOMMU or bounce buffers): the device could not reach kernel buffers; boot with iommu=pt or without forced bounce buffers\n",
			dev_name(dma));
		err = -EOPNOTSUPP;
	}
	dma_unmap_single(dma, addr, PAGE_SIZE, DMA_BIDIRECTIONAL);
free_buf:
	kfree(buf);
	return err;
}

/* Whether port 1 has a netdev now. */
static bool vrdma_has_netdev(struct vrdma_dev *dev)
{
	struct net_device *nd = ib_device_get_netdev(&dev->ib, VRDMA_PORT);

	dev_put(nd);
	return nd;
}

static int vrdma_probe(struct virtio_device *vdev)
{
	struct vrdma_dev *dev;
	int err;

	dev = ib_alloc_device(vrdma_dev, ib);
	if (!dev)
		return -ENOMEM;
	dev->vdev = vdev;
	vdev->priv = dev;
	spin_lock_init(&dev->ctrl_lock);
	INIT_LIST_HEAD(&dev->ctrl_inflight);
	init_waitqueue_head(&dev->ctrl_wait);
	spin_lock_init(&dev->held_lock);
	INIT_LIST_HEAD(&dev->held);
	INIT_WORK(&dev->reset_work, vrdma_reset_work);
	INIT_DELAYED_WORK(&dev->backlog_work, vrdma_backlog_work);
	mutex_init(&dev->reset_lock);
	xa_init_flags(&dev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srqs, XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&dev->event_lock);
	mutex_init(&dev->db_lock);
	INIT_LIST_HEAD(&dev->udbs);
	xa_init_flags(&dev->ring_cqs, XA_FLAGS_LOCK_IRQ);
	INIT_WORK(&dev->bind_work, vrdma_bind_work);
	dev->nb.notifier_call = vrdma_netdev_event;

	dev->rings = virtio_has_feature(vdev, VIRTIO_RDMA_F_RINGS);
	err = vrdma_check_dma(dev);
	if (err)
		goto free_dev;
	err = vrdma_read_config(dev);
	if (err)
		goto free_dev;
	dev->backend_known = vrdma_backend(vdev) != 0;
	err = vrdma_find_vqs(dev);
	if (err)
		goto free_vqs;
	err = vrdma_ctrl_init(dev);
	if (err)
		goto del_vqs;
	err = vrdma_slots_init(dev);
	if (err)
		goto free_slots;
	if (dev->rings) {
		err = vrdma_rings_init(dev);
		if (err)
			goto free_slots;
	}
	virtio_device_ready(vdev);
	if (dev->rings)
		dev_info(&vdev->dev, "on rings in guest memory (ABI v2)\n");

	/* under the virtio device in sysfs: the provider matches its modalias */
	dev->ib.dev.parent = &vdev->dev;
	/* The uverbs commands the core leaves out unless a driver asks: the
	 * provider posts and polls through the kernel (docs/guest.md).
	 */
	dev->ib.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				   BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				   BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				   BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				   BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	dev->ib.node_type = RDMA_NODE_IB_CA;
	dev->ib.phys_port_cnt = 1;
	dev->ib.num_comp_vectors = 1;
	dev->ib.node_guid = dev->cfg.sys_image_guid;
	strscpy(dev->ib.node_desc, "vrdma virtio-rdma",
		sizeof(dev->ib.node_desc));
	ib_set_device_ops(&dev->ib, &vrdma_dev_ops);
	vrdma_bind(dev, false);
	err = ib_register_device(&dev->ib, "vrdma%d", vdev->dev.parent);
	if (err) {
		dev_err(&vdev->dev, "cannot register the RDMA device: %d\n", err);
		goto reset_device;
	}
	err = register_netdevice_notifier(&dev->nb);
	if (err)
		goto unregister_ib;
	if (!vrdma_has_netdev(dev))
		dev_info(&vdev->dev, "waiting for a netdev with MAC %pM (this VM's mac = in vrdmad.conf) to carry port 1\n",
			 dev->mac);
	/* a netdev that came between the bind and the notifier */
	schedule_work(&dev->bind_work);
	return 0;

unregister_ib:
	ib_unregister_device(&dev->ib);
reset_device:
	vrdma_stop_device(dev);
	cancel_work_sync(&dev->reset_work);
	vrdma_slots_stop(dev);
free_slots:
	vrdma_slots_free(dev);
	vrdma_rings_free(dev);
del_vqs:
	vdev->config->del_vqs(vdev);
free_vqs:
	kfree(dev->vqs);
	kfree(dev->vq_names);
free_dev:
	ib_dealloc_device(&dev->ib);
	return err;
}

static void vrdma_remove(struct virtio_device *vdev)
{
	struct vrdma_dev *dev = vdev->priv;

	unregister_netdevice_notifier(&dev->nb);
	cancel_work_sync(&dev->bind_work);
	/* programs are cut off (disassociate_ucontext); every object is
	 * destroyed, on a device that may be dead
	 */
	ib_unregister_device(&dev->ib);
	vrdma_stop_device(dev);
	cancel_work_sync(&dev->reset_work);
	/* A device that failed during probe was reset then, and the virtio
	 * core set DRIVER_OK again once probe returned: it goes out reset.
	 */
	virtio_reset_device(vdev);
	vrdma_slots_stop(dev);
	vrdma_slots_free(dev);
	vrdma_rings_free(dev);
	vdev->config->del_vqs(vdev);
	kfree(dev->vqs);
	kfree(dev->vq_names);
	ib_dealloc_device(&dev->ib);
}

/* Rings only when asked for, and where the device's pages are ours. */
static int vrdma_validate(struct virtio_device *vdev)
{
	if (!rings || PAGE_SIZE != VIRTIO_RDMA_PAGE_SIZE)
		__virtio_clear_bit(vdev, VIRTIO_RDMA_F_RINGS);
	return 0;
}

static unsigned int vrdma_features[] = {
	VIRTIO_RDMA_F_RINGS,
};

static const struct virtio_device_id vrdma_id_table[] = {
	{ VIRTIO_ID_RDMA, VIRTIO_DEV_ANY_ID },
	{ 0 },
};
MODULE_DEVICE_TABLE(virtio, vrdma_id_table);

static struct virtio_driver vrdma_driver = {
	.driver.name = KBUILD_MODNAME,
	.id_table = vrdma_id_table,
	.feature_table = vrdma_features,
	.feature_table_size = ARRAY_SIZE(vrdma_features),
	.validate = vrdma_validate,
	.probe = vrdma_probe,
	.remove = vrdma_remove,
	.config_changed = vrdma_config_changed,
};
static int __init vrdma_init(void)
{
	int err;

	err = vrdma_recover_init(&vrdma_driver.driver);
	if (err)
		return err;
	err = register_virtio_driver(&vrdma_driver);
	if (err)
		vrdma_recover_exit();
	return err;
}

static void __exit vrdma_exit(void)
{
	vrdma_recover_exit();	/* no re-probe races the unregistering */
	unregister_virtio_driver(&vrdma_driver);
}

module_init(vrdma_init);
module_exit(vrdma_exit);

MODULE_DESCRIPTION("RDMA (RoCEv2) on the virtio-rdma device of vrdmad");
MODULE_LICENSE("GPL");
