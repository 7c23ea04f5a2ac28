// SPDX-License-Identifier: GPL-2.0-only
/*
 * ABI v2 (VIRTIO_RDMA_F_RINGS, docs/virtio-rdma.md section 8): the send,
 * receive and completion queues are rings in kernel memory that the device
 * reads and writes by guest-physical address. A post writes the WQE into its
 * slot, then prod, then sets the ring's doorbell bit, and kicks the wake
 * queue only if the device said it sleeps; the event queue says which CQ an
 * arm fired for. Every index the device writes is checked where it is read:
 * one that lies is a device error, handled as v1's (vrdma_dev_error).
 */
#include <linux/bitops.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"

/* the device's word at byte off of the ring's header */
u32 vrdma_ring_word(struct vrdma_ring *r, unsigned int off)
{
	/* acquire: the slots it counts were written before it */
	return le32_to_cpu(smp_load_acquire((__le32 *)(r->mem + off)));
}

/* Gives event buffer i to the device; event_lock held. */
static int vrdma_event_post(struct vrdma_dev *dev, unsigned int i)
{
	struct scatterlist sg;

	sg_init_one(&sg, &dev->ev_bufs[i], sizeof(dev->ev_bufs[i]));
	return virtqueue_add_inbuf(dev->event_vq, &sg, 1, &dev->ev_bufs[i],
				   GFP_ATOMIC);
}

int vrdma_rings_init(struct vrdma_dev *dev)
{
	unsigned long flags;
	unsigned int i;
	int err = 0;

	dev->dbs = kcalloc(dev->cfg.max_db_pages, sizeof(*dev->dbs),
			   GFP_KERNEL);
	dev->ev_nr = virtqueue_get_vring_size(dev->event_vq);
	dev->ev_bufs = kcalloc(dev->ev_nr, sizeof(*dev->ev_bufs), GFP_KERNEL);
	if (!dev->dbs || !dev->ev_bufs)
		return -ENOMEM;
	spin_lock_irqsave(&dev->event_lock, flags);
	for (i = 0; i < dev->ev_nr && !err; i++)
		err = vrdma_event_post(dev, i);
	spin_unlock_irqrestore(&dev->event_lock, flags);
	return err;
}

/* Waits out whoever is inside the event queue (the device is broken). */
void vrdma_rings_fence(struct vrdma_dev *dev)
{
	unsigned long flags;

	if (!dev->rings)
		return;
	spin_lock_irqsave(&dev->event_lock, flags);
	spin_unlock_irqrestore(&dev->event_lock, flags);
}

/* After the device is reset: its pages and buffers are ours again. */
void vrdma_rings_free(struct vrdma_dev *dev)
{
	u32 i;

	if (!dev->rings)
		return;
	if (dev->event_vq)
		while (virtqueue_detach_unused_buf(dev->event_vq))
			;
	kfree(dev->ev_bufs);
	dev->ev_bufs = NULL;
	for (i = 0; dev->dbs && i < dev->ndbs; i++) {
		free_pages_exact(dev->dbs[i].page, PAGE_SIZE);
		bitmap_free(dev->dbs[i].used);
	}
	kfree(dev->dbs);
	dev->dbs = NULL;
	dev->ndbs = 0;
	xa_destroy(&dev->ring_cqs);
}

/* One event: the CQ it names must be live (or being destroyed). */
static void vrdma_event(struct vrdma_dev *dev, u32 cqn, u32 kind)
{
	struct vrdma_cq *cq;
	void *entry;
	bool armed;

	if (kind > VIRTIO_RDMA_RING_EVENT_ASYNC) {
		vrdma_dev_error(dev, "an event of kind %u\n", kind);
		return;
	}
	rcu_read_lock();
	entry = xa_load(&dev->ring_cqs, cqn);
	if (!entry) {
		vrdma_dev_error(dev, "an event for CQ %u, which does not exist\n",
				cqn);
	} else if (!xa_is_value(entry)) {
		cq = entry;
		if (cq->ring.umem && kind == VIRTIO_RDMA_RING_EVENT_ASYNC)
			vrdma_cq_user_events(cq);
		armed = test_and_clear_bit(0, &cq->armed);
		/* an event CQE wakes the consumer only if it armed the CQ */
		if ((armed || kind == VIRTIO_RDMA_RING_EVENT_COMPLETION) &&
		    cq->ibcq.comp_handler && vrdma_cq_ready(cq))
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
	rcu_read_unlock();
}

/* Takes the events the device wrote, at most one pass; event_lock held. */
static void vrdma_events_take(struct vrdma_dev *dev)
{
	struct virtio_rdma_ring_event *e, ev;
	unsigned int len, seen = 0;
	bool kick = false;

	while (seen++ < dev->ev_nr &&
	       (e = virtqueue_get_buf(dev->event_vq, &len))) {
		ev = *e;
		if (!vrdma_event_post(dev, e - dev->ev_bufs))
			kick = true;
		if (len != sizeof(ev)) {
			vrdma_dev_error(dev, "an event of %u bytes\n", len);
			break;
		}
		vrdma_event(dev, le32_to_cpu(ev.cqn), le32_to_cpu(ev.kind));
		if (READ_ONCE(dev->broken))
			break;
	}
	if (kick && virtqueue_kick_prepare(dev->event_vq))
		virtqueue_notify(dev->event_vq);
}

void vrdma_event_done(struct virtqueue *vq)
{
	struct vrdma_dev *dev = vq->vdev->priv;
	unsigned long flags;

	spin_lock_irqsave(&dev->event_lock, flags);
	vrdma_events_take(dev);
	spin_unlock_irqrestore(&dev->event_lock, flags);
}

/* The events written before a DESTROY_CQ's answer, taken while the CQ is
 * still known as dying: after this an event for it is a lie.
 */
void vrdma_events_drain(struct vrdma_dev *dev)
{
	vrdma_event_done(dev->event_vq);
}

/* A ring of entries slots (a power of two) of stride bytes, zeroed; a
 * user's is charged to its memory cgroup.
 */
int vrdma_ring_alloc(struct vrdma_ring *r, u32 entries, u32 stride,
		     bool user, bool sleep)
{
	r->entries = entries;
	r->stride = stride;
	r->hdr = max_t(u32, stride, VIRTIO_RDMA_RING_HDR_MIN);
	r->len = PAGE_ALIGN(r->hdr + (size_t)entries * stride);
	r->idx = 0;
	r->prod = 0;
	r->seen = 0;
	r->db = NULL;
	r->umem = NULL;
	r->sleep = sleep;
	spin_lock_init(&r->lock);
	mutex_init(&r->mutex);
	r->mem = __vmalloc(r->len, (user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL) |
			   __GFP_ZERO);
	return r->mem ? 0 : -ENOMEM;
}

/* A new doorbell page, given to the device; db_lock held. */
static int vrdma_db_add(struct vrdma_dev *dev)
{
	struct vrdma_db *db = &dev->dbs[dev->ndbs];
	struct virtio_rdma_cmd_add_db_page req;
	struct virtio_rdma_rsp_add_db_page rsp;
	int err;

	db->page = alloc_pages_exact(PAGE_SIZE, GFP_KERNEL | __GFP_ZERO);
	db->used = bitmap_zalloc(VIRTIO_RDMA_DB_BITS, GFP_KERNEL);
	if (!db->page || !db->used) {
		err = -ENOMEM;
		goto free;
	}
	req.gpa = cpu_to_le64(virt_to_phys(db->page));
	err = vrdma_cmd(dev, VIRTIO_CMD_ADD_DB_PAGE, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err && READ_ONCE(dev->broken)) {
		/* unanswered: the device may write it until it is reset */
		vrdma_dev_hold(dev, NULL, db->page, PAGE_SIZE);
		db->page = NULL;
	}
	if (err)
		goto free;
	db->dbn = le32_to_cpu(rsp.dbn);
	dev->ndbs++;
	return 0;
free:
	if (db->page)
		free_pages_exact(db->page, PAGE_SIZE);
	bitmap_free(db->used);
	db->page = NULL;
	db->used = NULL;
	return err;
}

/* n free bits of db for the rings rs, which has room; db_lock held. */
static void vrdma_db_bits(struct vrdma_db *db, struct vrdma_ring **rs,
			  unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		rs[i]->bit = find_first_zero_bit(db->used, VIRTIO_RDMA_DB_BITS);
		__set_bit(rs[i]->bit, db->used);
		rs[i]->db = db;
	}
}

/*
 * n doorbell bits on one page for the rings rs (a QP's rings share their
 * page): a page is added when none has room, up to the device's
 * max_db_pages (then -ENOMEM).
 */
int vrdma_db_get(struct vrdma_dev *dev, struct vrdma_ring **rs,
		 unsigned int n)
{
	struct vrdma_db *db = NULL;
	u32 p;
	int err = 0;

	mutex_lock(&dev->db_lock);
	for (p = 0; p < dev->ndbs && !db; p++)
		if (bitmap_weight(dev->dbs[p].used, VIRTIO_RDMA_DB_BITS) +
		    n <= VIRTIO_RDMA_DB_BITS)
			db = &dev->dbs[p];
	if (!db) {
		if (dev->ndbs >= dev->cfg.max_db_pages)
			err = -ENOMEM;
		else
			err = vrdma_db_add(dev);
		if (!err)
			db = &dev->dbs[dev->ndbs - 1];
	}
	if (db)
		vrdma_db_bits(db, rs, n);
	mutex_unlock(&dev->db_lock);
	return err;
}

/* n bits of a program's own doorbell page for its rings rs, or -ENOMEM. */
int vrdma_udb_get(struct vrdma_dev *dev, struct vrdma_ucontext *uc,
		  struct vrdma_ring **rs, unsigned int n)
{
	int err = 0;

	mutex_lock(&dev->db_lock);
	if (bitmap_weight(uc->db.used, VIRTIO_RDMA_DB_BITS) + n >
	    VIRTIO_RDMA_DB_BITS)
		err = -ENOMEM;
	else
		vrdma_db_bits(&uc->db, rs, n);
	mutex_unlock(&dev->db_lock);
	return err;
}

/* The context of a program on rings of its own (its create carried them),
 * or NULL: the kernel's rings then.
 */
struct vrdma_ucontext *vrdma_uctx_rings(struct ib_udata *udata)
{
	struct vrdma_ucontext *uc;

	if (!udata || !udata->inlen)
		return NULL;
	uc = rdma_udata_to_drv_context(udata, struct vrdma_ucontext, ibuc);
	return uc->rings ? uc : NULL;
}

/*
 * A doorbell page for a program's context, mapped into it (vrdma_mmap).
 * Programs may take all of the device's max_db_pages but one, which stays
 * for the kernel's own rings: -ENOSPC when none is left.
 */
int vrdma_udb_add(struct vrdma_dev *dev, struct vrdma_ucontext *uc)
{
	struct virtio_rdma_cmd_add_db_page req;
	struct virtio_rdma_rsp_add_db_page rsp;
	struct vrdma_umap *um;
	int err;

	mutex_lock(&dev->db_lock);
	err = dev->ndbs + dev->nudbs + 1 < dev->cfg.max_db_pages ? 0 : -ENOSPC;
	if (!err)
		dev->nudbs++;
	mutex_unlock(&dev->db_lock);
	if (err)
		return err;
	um = kzalloc(sizeof(*um), GFP_KERNEL);
	uc->db.used = bitmap_zalloc(VIRTIO_RDMA_DB_BITS, GFP_KERNEL);
	if (um)
		um->page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!um || !um->page || !uc->db.used) {
		err = -ENOMEM;
		goto free;
	}
	req.gpa = cpu_to_le64(page_to_phys(um->page));
	err = vrdma_cmd(dev, VIRTIO_CMD_ADD_DB_PAGE, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err && READ_ONCE(dev->broken)) {
		/* unanswered: the device may write it until it is reset */
		get_page(um->page);
		vrdma_dev_hold(dev, NULL, page_address(um->page), PAGE_SIZE);
	}
	if (err)
		goto free;
	uc->db.dbn = le32_to_cpu(rsp.dbn);
	uc->db.page = page_address(um->page);
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &um->entry, PAGE_SIZE);
	if (err) {
		vrdma_udb_del(dev, uc);
		/* vrdma_udb_del let the device go of it */
		__free_page(um->page);
		kfree(um);
		return err;
	}
	uc->umap = um;
	/* live unless the device failed already (vrdma_udb_dead ran) */
	mutex_lock(&dev->db_lock);
	if (!READ_ONCE(dev->broken))
		vrdma_udb_live(uc, VRDMA_UDB_LIVE);
	list_add(&uc->node, &dev->udbs);
	mutex_unlock(&dev->db_lock);
	return 0;
free:
	if (um && um->page)
		__free_page(um->page);
	kfree(um);
	bitmap_free(uc->db.used);
	uc->db.used = NULL;
	mutex_lock(&dev->db_lock);
	dev->nudbs--;
	mutex_unlock(&dev->db_lock);
	return err;
}

void vrdma_udb_live(struct vrdma_ucontext *uc, u32 v)
{
	WRITE_ONCE(*(__le32 *)(uc->db.page + VRDMA_UDB_LIVE_OFF), cpu_to_le32(v));
}

/*
 * The device failed (dev->broken is set): every program with a doorbell
 * page reads 0 in its live word from now on, so its posts and polls in
 * its own rings fail as its system calls do (vrdma_uverbs.h).
 */
void vrdma_udb_dead(struct vrdma_dev *dev)
{
	struct vrdma_ucontext *uc;

	mutex_lock(&dev->db_lock);
	list_for_each_entry(uc, &dev->udbs, node)
		vrdma_udb_live(uc, 0);
	mutex_unlock(&dev->db_lock);
}

/*
 * The context's page goes back from the device (its rings are gone); the
 * page itself is freed once no mapping and no device holds it
 * (vrdma_mmap_free, and a reference per hold).
 */
void vrdma_udb_del(struct vrdma_dev *dev, struct vrdma_ucontext *uc)
{
	struct page *page = virt_to_page(uc->db.page);

	mutex_lock(&dev->db_lock);
	if (uc->umap)	/* on dev->udbs once vrdma_udb_add finished */
		list_del(&uc->node);
	mutex_unlock(&dev->db_lock);

	if (vrdma_cmd_destroy(dev, VIRTIO_CMD_DEL_DB_PAGE, "DEL_DB_PAGE",
			      uc->db.dbn)) {
		get_page(page);
		vrdma_dev_hold(dev, NULL, uc->db.page, PAGE_SIZE);
	}
	uc->db.page = NULL;
	bitmap_free(uc->db.used);
	uc->db.used = NULL;
	mutex_lock(&dev->db_lock);
	dev->nudbs--;
	mutex_unlock(&dev->db_lock);
}

/* A program's kick: its doorbell page said the device sleeps. */
void vrdma_ring_kick(struct vrdma_dev *dev)
{
	virtqueue_notify(dev->wake_vq);
}

/* The ring's pages as the device takes them, or NULL. */
__le64 *vrdma_ring_pages(struct vrdma_ring *r, u32 *npages)
{
	u32 i = 0, n = r->len >> PAGE_SHIFT;
	struct sg_page_iter it;
	__le64 *list;

	list = kmalloc_array(n, sizeof(*list), GFP_KERNEL);
	if (list && r->umem) {
		for_each_sgtable_page(&r->umem->sgt_append.sgt, &it, 0) {
			if (i == n)
				break;
			list[i++] = cpu_to_le64(page_to_phys(sg_page_iter_page(&it)));
		}
		if (i != n) {
			kfree(list);
			list = NULL;
		}
	}
	for (i = 0; list && !r->umem && i < n; i++)
		list[i] = cpu_to_le64(page_to_phys(vmalloc_to_page(r->mem +
						   (size_t)i * PAGE_SIZE)));
	*npages = n;
	return list;
}

/*
 * A ring in a program's memory (include/vrdma_uverbs.h), pinned: entries a
 * power of two, stride a power of two of 64..4096, buf page-aligned; with
 * map, the kernel maps it too (a CQ's, whose event CQEs it reads). What
 * the program writes there later is checked by the device, as any guest's.
 */
int vrdma_ring_user(struct vrdma_dev *dev, struct vrdma_ring *r,
		    const struct vrdma_ring_req *req, bool map)
{
	struct sg_page_iter it;
	struct page **pages;
	u32 i = 0, n;
	int err = 0;

	memset(r, 0, sizeof(*r));
	spin_lock_init(&r->lock);
	mutex_init(&r->mutex);
	if (!req->entries || !is_power_of_2(req->entries) ||
	    req->entries > VIRTIO_RDMA_RING_MAX_ENTRIES ||
	    req->stride < 64 || req->stride > PAGE_SIZE ||
	    !is_power_of_2(req->stride) || !PAGE_ALIGNED(req->buf))
		return -EINVAL;
	r->entries = req->entries;
	r->stride = req->stride;
	r->hdr = max_t(u32, r->stride, VIRTIO_RDMA_RING_HDR_MIN);
	r->len = PAGE_ALIGN(r->hdr + (size_t)r->entries * r->stride);
	r->umem = ib_umem_get(&dev->ib, req->buf, r->len, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(r->umem)) {
		err = PTR_ERR(r->umem);
		r->umem = NULL;
		return err;
	}
	n = r->len >> PAGE_SHIFT;
	if (ib_umem_num_pages(r->umem) != n) {
		err = -EINVAL;
		goto release_umem;
	}
	if (!map)
		return 0;
	pages = kmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		err = -ENOMEM;
		goto release_umem;
	}
	for_each_sgtable_page(&r->umem->sgt_append.sgt, &it, 0)
		if (i < n)
			pages[i++] = sg_page_iter_page(&it);
	r->mem = i == n ? vmap(pages, n, VM_MAP, PAGE_KERNEL) : NULL;
	kfree(pages);
	if (r->mem)
		return 0;
	err = -ENOMEM;
release_umem:
	ib_umem_release(r->umem);
	r->umem = NULL;
	return err;
}

void vrdma_ring_desc(struct vrdma_ring *r, struct virtio_rdma_ring_desc *d,
		     __le64 *pages, u32 npages)
{
	d->entries = cpu_to_le32(r->entries);
	d->stride = cpu_to_le32(r->stride);
	d->db_bit = cpu_to_le32(r->bit);
	d->npages = cpu_to_le32(npages);
	d->pages = cpu_to_le64(virt_to_phys(pages));
}

/*
 * A CREATE_*_RING command naming the page lists list1 and list2 (either
 * may be NULL), which are freed after, or held if it went unanswered.
 */
int vrdma_ring_cmd(struct vrdma_dev *dev, u8 cmd, void *req, size_t req_len,
		   void *rsp, size_t rsp_len, __le64 *list1, __le64 *list2)
{
	int err = vrdma_cmd(dev, cmd, req, req_len, rsp, rsp_len);

	if (err && READ_ONCE(dev->broken)) {
		vrdma_dev_hold(dev, NULL, list1, 0);
		vrdma_dev_hold(dev, NULL, list2, 0);
	} else {
		kfree(list1);
		kfree(list2);
	}
	return err;
}

/*
 * The ring's memory and bit go back, unless the device may still use them
 * (keep: its CREATE or DESTROY went unanswered or was refused): then the
 * memory is held until it is reset, and the bit is never given again.
 */
void vrdma_ring_free(struct vrdma_dev *dev, struct vrdma_ring *r, bool keep)
{
	if (r->umem) {
		/* the kernel's mapping is never the device's */
		if (r->mem)
			vunmap(r->mem);
		r->mem = NULL;
		if (keep)
			vrdma_dev_hold(dev, r->umem, NULL, 0);
		else
			ib_umem_release(r->umem);
		r->umem = NULL;
	}
	if (!r->mem) {
		if (r->db && !keep) {
			mutex_lock(&dev->db_lock);
			__clear_bit(r->bit, r->db->used);
			mutex_unlock(&dev->db_lock);
		}
		r->db = NULL;
		return;
	}
	if (keep) {
		vrdma_dev_hold_vmem(dev, r->mem);
	} else {
		if (r->db) {
			mutex_lock(&dev->db_lock);
			__clear_bit(r->bit, r->db->used);
			mutex_unlock(&dev->db_lock);
		}
		vfree(r->mem);
	}
	r->mem = NULL;
	r->db = NULL;
}

void vrdma_ring_lock(struct vrdma_ring *r, unsigned long *flags)
{
	if (r->sleep)
		mutex_lock(&r->mutex);
	else
		spin_lock_irqsave(&r->lock, *flags);
}

void vrdma_ring_unlock(struct vrdma_ring *r, unsigned long flags)
{
	if (r->sleep)
		mutex_unlock(&r->mutex);
	else
		spin_unlock_irqrestore(&r->lock, flags);
}

/*
 * The slot the next WQE goes into, or NULL: -ENOMEM while the device has
 * not taken entries WQEs back, -EIO if its taken lies (went back, or
 * passed prod). The ring's lock held.
 */
void *vrdma_ring_next(struct vrdma_dev *dev, struct vrdma_ring *r, int *err)
{
	u32 taken = vrdma_ring_word(r, VIRTIO_RDMA_RING_TAKEN);

	if (taken - r->seen > r->prod - r->seen) {
		vrdma_dev_error(dev, "a ring's taken went from %u to %u, prod %u\n",
				r->seen, taken, r->prod);
		*err = -EIO;
		return NULL;
	}
	r->seen = taken;
	if (r->idx - taken >= r->entries) {
		*err = -ENOMEM;
		return NULL;
	}
	return r->mem + r->hdr + (size_t)(r->idx & (r->entries - 1)) * r->stride;
}

/* The ring's doorbell bit, then a kick only if the device sleeps: it sets
 * need_wake to a new number, then looks at the bits once more, before it
 * sleeps, and clears need_wake before it looks again when it wakes. One
 * kick per number: a post that finds the number already kicked for is seen
 * by the worker that kick wakes.
 */
void vrdma_ring_bell(struct vrdma_dev *dev, struct vrdma_ring *r)
{
	struct vrdma_db *db = r->db;
	u32 n;

	set_bit_le(r->bit, db->page + VIRTIO_RDMA_DB_BITS_OFF);
	/* the bit before need_wake is read, as the device's need_wake
	 * before its last look at the bits
	 */
	smp_mb();
	n = le32_to_cpu(READ_ONCE(*(__le32 *)(db->page + VIRTIO_RDMA_DB_NEED_WAKE)));
	if (n && n != READ_ONCE(db->kicked)) {
		WRITE_ONCE(db->kicked, n);
		virtqueue_notify(dev->wake_vq);
	}
}

/* The WQEs written up to idx are the device's: prod, then the bell. */
void vrdma_ring_publish(struct vrdma_dev *dev, struct vrdma_ring *r)
{
	r->prod = r->idx;
	/* release: the slots before prod */
	smp_store_release((__le32 *)(r->mem + VIRTIO_RDMA_RING_PROD),
			  cpu_to_le32(r->prod));
	vrdma_ring_bell(dev, r);
}
