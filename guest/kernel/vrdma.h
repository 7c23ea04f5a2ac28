/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_rdma: an ib_device on the virtio-rdma device (virtio ID 42) that
 * vrdmad serves. The ABI is include/virtio_rdma.h and docs/virtio-rdma.md.
 */
#ifndef VRDMA_H
#define VRDMA_H

#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "virtio_rdma.h"
#include "vrdma_uverbs.h"

/* Bumped when the udata between this driver and the rdma-core provider
 * (include/vrdma_uverbs.h) changes incompatibly; the provider matches it.
 */
#define VRDMA_UVERBS_ABI_VERSION	1
#define VRDMA_PORT			1

/*
 * Slots (docs/guest.md, "What the driver promises"). The device names a CQ
 * slot in CREATE_CQ's answer and a QP slot (an SQ/RQ pair, or an SRQ's RQ)
 * in CREATE_QP's and CREATE_SRQ's. Slots, their virtqueues and the locks of
 * those virtqueues belong to struct vrdma_dev, never to the CQ, QP or SRQ
 * that borrows them: whoever touches a virtqueue holds its lock. A slot is
 * FREE, USED, or RELEASING from the DESTROY until its queues are taken back;
 * a CREATE answer that names a RELEASING slot waits for it, one that names a
 * USED slot is a device error.
 */
enum vrdma_slot_state {
	VRDMA_SLOT_FREE,
	VRDMA_SLOT_USED,
	VRDMA_SLOT_RELEASING,
};

/* One WQE as the device reads it (data, len bytes), with its place in a
 * backlog while the ring has no room for it.
 */
struct vrdma_wqe {
	struct list_head node;
	u32 len;
	u8 data[] __aligned(8);
};

/*
 * One SQ or RQ virtqueue: every add and reclaim on it holds lock. A kernel
 * consumer may post in atomic context, where nothing can wait for the ring
 * and the MAD layer cannot retry: up to its QP's depth of WQEs that find
 * the ring full wait in backlog, in order, and go to the ring as it drains
 * (vrdma_backlog_work).
 */
struct vrdma_wq {
	struct virtqueue *vq;
	spinlock_t lock;
	struct list_head backlog;	/* struct vrdma_wqe */
	u32 nbacklog;
};

struct vrdma_qp_slot {
	struct vrdma_wq sq, rq;
	u8 state;			/* enum vrdma_slot_state, slot_lock */
};

/* A CQ slot: its virtqueue and its buffers, one CQE each, kept for the
 * device's life, so a buffer the device still holds after DESTROY_CQ is
 * never freed under it.
 */
struct vrdma_cq_slot {
	struct virtqueue *vq;
	spinlock_t lock;		/* vq, cqes, posted */
	struct virtio_rdma_cqe *cqes;	/* virtqueue_get_vring_size() entries */
	unsigned int nr;
	unsigned long *posted;		/* bit i: cqes[i] is with the device */
	u8 state;			/* enum vrdma_slot_state, slot_lock */
};

/* What the device may still read or write after a command it never
 * answered: freed only once the device is reset (vrdma_dev_hold).
 */
struct vrdma_held {
	struct list_head node;
	struct ib_umem *umem;		/* pinned pages of a user MR */
	void *pages;			/* a page list given by address */
	size_t pages_len;		/* alloc_pages_exact's, or 0: kfree */
	void *vmem;			/* a ring's memory: vfree */
};

/*
 * ABI v2 (VIRTIO_RDMA_F_RINGS, docs/virtio-rdma.md section 8). A doorbell
 * page: one page the device was given with ADD_DB_PAGE, kept until the
 * device is reset; each ring owns one bit of it from CREATE until DESTROY
 * was answered. dev->db_lock guards used.
 */
struct vrdma_db {
	void *page;
	unsigned long *used;		/* VIRTIO_RDMA_DB_BITS bits */
	u32 dbn;
	u32 kicked;			/* need_wake's number last kicked for */
};

/*
 * A ring in vmalloc'd kernel memory: its header, then entries slots of
 * stride bytes, given to the device as a page list at CREATE and freed
 * only after DESTROY was answered or the device was reset. The CQ, QP or
 * SRQ that owns it takes its lock to post or poll: a spinlock, or for a
 * user QP's or SRQ's ring (process context, whose inline copy may fault)
 * the mutex. A ring in a program's memory (umem, pinned; mem its kernel
 * mapping, or NULL) is the program's to post and poll.
 */
struct vrdma_ring {
	void *mem;
	struct ib_umem *umem;
	size_t len;
	u32 entries;
	u32 stride;
	u32 hdr;
	u32 idx;			/* our prod (SQ, RQ, SRQ) or cons (CQ) */
	u32 prod;			/* the prod the device was given */
	u32 seen;			/* the device's taken or written, last read */
	struct vrdma_db *db;
	u32 bit;
	bool sleep;			/* lock with mutex */
	spinlock_t lock;
	struct mutex mutex;
};

struct vrdma_dev {
	struct ib_device ib;
	struct virtio_device *vdev;
	struct virtio_rdma_config cfg;	/* CPU byte order, read at probe */
	u32 max_cq;
	u32 max_qp;

	/* the control queue: commands may be in flight from several threads */
	struct virtqueue *ctrl_vq;
	spinlock_t ctrl_lock;
	struct list_head ctrl_inflight;
	wait_queue_head_t ctrl_wait;	/* room on the control queue */
	unsigned int ctrl_count;	/* requests on the ring */
	unsigned int ctrl_max;		/* requests the ring holds */
	unsigned int ctrl_sleep_max;	/* of which sleeping commands may use */
	bool ctrl_stopped;		/* reset: nothing is with the device */
	/* The device failed (no answer, a lie, or its back end went away):
	 * commands fail at once, work fails with -EIO, and reset_work resets
	 * it, then (recover: a device error, not a lost back end) has it
	 * probed again (vrdma_recover.c).
	 */
	bool broken;
	bool recover;
	/* The front end keeps the config's backend field (non-zero at probe):
	 * a device whose back end went away (await_backend) is reset, then
	 * probed again once a back end is connected.
	 */
	bool backend_known;
	bool await_backend;

	struct virtqueue **vqs;
	char (*vq_names)[16];
	unsigned int nvqs;
	spinlock_t slot_lock;		/* every slot's state */
	wait_queue_head_t slot_wait;	/* a RELEASING slot became FREE */
	struct vrdma_cq_slot *cq_slots;	/* max_cq */
	struct vrdma_qp_slot *qp_slots;	/* max_qp */
	struct vrdma_cq __rcu **cqs;	/* by slot, for the CQ interrupt */
	struct xarray qps;		/* qpn -> struct vrdma_qp */
	struct xarray srqs;		/* srqn -> struct vrdma_srq */

	/* ABI v2: no virtqueue per CQ or QP. The wake queue is only kicked
	 * (no buffers, so no lock); the event queue is kept filled with
	 * ev_bufs, all of it under event_lock.
	 */
	bool rings;
	struct virtqueue *wake_vq;
	struct virtqueue *event_vq;
	spinlock_t event_lock;
	struct virtio_rdma_ring_event *ev_bufs;
	unsigned int ev_nr;
	struct mutex db_lock;		/* dbs, ndbs and their bits */
	struct vrdma_db *dbs;		/* cfg.max_db_pages */
	u32 ndbs;
	u32 nudbs;			/* programs' pages, beside dbs */
	struct list_head udbs;		/* their contexts, told when it fails */
	/* cqn -> struct vrdma_cq; VRDMA_CQ_DYING from before DESTROY_CQ
	 * until the events the device wrote before its answer are taken
	 */
	struct xarray ring_cqs;

	struct delayed_work backlog_work;	/* a work queue has a backlog */
	struct work_struct reset_work;
	struct mutex reset_lock;	/* the reset and its ctrl_stopped */
	spinlock_t held_lock;
	struct list_head held;		/* struct vrdma_held */
	bool reset_done;		/* held_lock */

	u8 mac[ETH_ALEN];		/* from sys_image_guid: our netdev's */
	struct net_device *netdev;	/* bound, held by the IB core */
	struct notifier_block nb;
	struct work_struct bind_work;
};

/* A program's doorbell page, mapped into it at db_offset. */
struct vrdma_umap {
	struct rdma_user_mmap_entry entry;
	struct page *page;
};

/* With rings (VRDMA_UCTX_RINGS), a doorbell page of its own: its bits name
 * only its queues, so it can make the device look at nothing else.
 */
struct vrdma_ucontext {
	struct ib_ucontext ibuc;
	struct list_head node;		/* dev->udbs, under db_lock */
	bool rings;
	struct vrdma_db db;
	struct vrdma_umap *umap;
};

struct vrdma_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

struct vrdma_ah {
	struct ib_ah ibah;
	struct virtio_rdma_av av;
};

struct vrdma_mr {
	struct ib_mr ibmr;
	u32 mrn;
	struct ib_umem *umem;
	/* a fast-registration MR (alloc_mr): its page list for MAP_MR_SG */
	__le64 *pages;
	u32 max_pages;
	u32 npages;
};

struct vrdma_mw {
	struct ib_mw ibmw;
	u32 mwn;
};

struct vrdma_cq {
	struct ib_cq ibcq;
	struct vrdma_dev *dev;
	u32 cqn;
	struct vrdma_cq_slot *slot;	/* borrowed from dev->cq_slots */
	/* a user CQ: bit 0 set while armed and its event not delivered */
	unsigned long armed;
	struct work_struct event_work;	/* the event a poll made sure of */
	struct vrdma_ring ring;		/* ABI v2 */
	u32 arm_seq;			/* ring.lock */
	u32 ev_idx;			/* a program's ring: events seen to here */
	struct ib_ucontext *uctx;	/* its context */
};

struct vrdma_srq {
	struct ib_srq ibsrq;
	struct vrdma_dev *dev;
	u32 srqn;
	u32 slot;
	u32 max_wr;			/* the backlog's bound (MODIFY_SRQ may grow it) */
	u32 max_sge;
	struct vrdma_wq *rq;		/* borrowed from dev->qp_slots[slot] */
	struct vrdma_ring ring;		/* ABI v2 */
};

struct vrdma_qp {
	struct ib_qp ibqp;
	struct vrdma_dev *dev;
	u32 slot;
	struct vrdma_wq *sq, *rq;	/* borrowed from dev->qp_slots[slot] */
	enum ib_qp_state state;		/* as last set by modify_qp */
	u8 sq_sig_type;
	struct ib_qp_cap cap;
	struct vrdma_ring sqr, rqr;	/* ABI v2 (no rqr on an SRQ) */
};

static inline struct vrdma_ucontext *to_vuc(struct ib_ucontext *uc)
{
	return container_of(uc, struct vrdma_ucontext, ibuc);
}

static inline struct vrdma_dev *to_vdev(struct ib_device *ib)
{
	return container_of(ib, struct vrdma_dev, ib);
}

static inline struct vrdma_pd *to_vpd(struct ib_pd *pd)
{
	return container_of(pd, struct vrdma_pd, ibpd);
}

static inline struct vrdma_cq *to_vcq(struct ib_cq *cq)
{
	return container_of(cq, struct vrdma_cq, ibcq);
}

static inline struct vrdma_qp *to_vqp(struct ib_qp *qp)
{
	return container_of(qp, struct vrdma_qp, ibqp);
}

static inline struct vrdma_srq *to_vsrq(struct ib_srq *srq)
{
	return container_of(srq, struct vrdma_srq, ibsrq);
}

static inline struct vrdma_ah *to_vah(struct ib_ah *ah)
{
	return container_of(ah, struct vrdma_ah, ibah);
}

static inline struct vrdma_mr *to_vmr(struct ib_mr *mr)
{
	return container_of(mr, struct vrdma_mr, ibmr);
}

static inline struct vrdma_mw *to_vmw(struct ib_mw *mw)
{
	return container_of(mw, struct vrdma_mw, ibmw);
}

/* vrdma_ctrl.c */
int vrdma_cmd(struct vrdma_dev *dev, u8 cmd, const void *req, size_t req_len,
	      void *rsp, size_t rsp_len);
int vrdma_recover_init(struct device_driver *drv);
void vrdma_recover_exit(void);
int vrdma_recover_schedule(struct virtio_device *vdev);
int vrdma_recover_await(struct virtio_device *vdev);
u32 vrdma_backend(struct virtio_device *vdev);

int vrdma_cmd_destroy(struct vrdma_dev *dev, u8 cmd, const char *what,
		      u32 handle);
int vrdma_cmd_atomic(struct vrdma_dev *dev, u8 cmd, const void *req,
		     size_t req_len, void *rsp, size_t rsp_len);
void vrdma_ctrl_done(struct virtqueue *vq);
void vrdma_ctrl_stop(struct vrdma_dev *dev);
void vrdma_ctrl_fail(struct vrdma_dev *dev);
int vrdma_ctrl_init(struct vrdma_dev *dev);

/* vrdma_main.c: the device as a whole */
__printf(2, 3) void vrdma_dev_error(struct vrdma_dev *dev, const char *fmt, ...);
void vrdma_dev_fail(struct vrdma_dev *dev);
void vrdma_backend_gone(struct vrdma_dev *dev);
void vrdma_dev_hold(struct vrdma_dev *dev, struct ib_umem *umem, void *pages,
		    size_t pages_len);
void vrdma_dev_hold_vmem(struct vrdma_dev *dev, void *vmem);

/* vrdma_ring.c: ABI v2 */
#define VRDMA_CQ_DYING	xa_mk_value(0)
int vrdma_rings_init(struct vrdma_dev *dev);
void vrdma_rings_fence(struct vrdma_dev *dev);
void vrdma_rings_free(struct vrdma_dev *dev);
void vrdma_event_done(struct virtqueue *vq);
void vrdma_events_drain(struct vrdma_dev *dev);
int vrdma_ring_alloc(struct vrdma_ring *r, u32 entries, u32 stride,
		     bool user, bool sleep);
int vrdma_db_get(struct vrdma_dev *dev, struct vrdma_ring **rs,
		 unsigned int n);
int vrdma_udb_get(struct vrdma_dev *dev, struct vrdma_ucontext *uc,
		  struct vrdma_ring **rs, unsigned int n);
struct vrdma_ucontext *vrdma_uctx_rings(struct ib_udata *udata);
int vrdma_udb_add(struct vrdma_dev *dev, struct vrdma_ucontext *uc);
void vrdma_udb_del(struct vrdma_dev *dev, struct vrdma_ucontext *uc);
void vrdma_udb_live(struct vrdma_ucontext *uc, u32 v);
void vrdma_udb_dead(struct vrdma_dev *dev);
int vrdma_ring_user(struct vrdma_dev *dev, struct vrdma_ring *r,
		    const struct vrdma_ring_req *req, bool map);
void vrdma_ring_kick(struct vrdma_dev *dev);
__le64 *vrdma_ring_pages(struct vrdma_ring *r, u32 *npages);
void vrdma_ring_free(struct vrdma_dev *dev, struct vrdma_ring *r, bool keep);
void vrdma_ring_desc(struct vrdma_ring *r, struct virtio_rdma_ring_desc *d,
		     __le64 *pages, u32 npages);
void vrdma_ring_lock(struct vrdma_ring *r, unsigned long *flags);
void vrdma_ring_unlock(struct vrdma_ring *r, unsigned long flags);
void *vrdma_ring_next(struct vrdma_dev *dev, struct vrdma_ring *r, int *err);
void vrdma_ring_publish(struct vrdma_dev *dev, struct vrdma_ring *r);
void vrdma_ring_bell(struct vrdma_dev *dev, struct vrdma_ring *r);
u32 vrdma_ring_word(struct vrdma_ring *r, unsigned int off);
int vrdma_ring_cmd(struct vrdma_dev *dev, u8 cmd, void *req, size_t req_len,
		   void *rsp, size_t rsp_len, __le64 *list1, __le64 *list2);

/* vrdma_slot.c */
int vrdma_slots_init(struct vrdma_dev *dev);
void vrdma_slots_free(struct vrdma_dev *dev);
void vrdma_slots_fence(struct vrdma_dev *dev);
int vrdma_slot_claim(struct vrdma_dev *dev, u8 *state, const char *what,
		     u32 n);
void vrdma_slot_release_begin(struct vrdma_dev *dev, u8 *state);
void vrdma_slot_release_end(struct vrdma_dev *dev, u8 *state);
void vrdma_slots_stop(struct vrdma_dev *dev);
void vrdma_backlog_work(struct work_struct *work);
void vrdma_wq_reclaim(struct vrdma_wq *wq);
void vrdma_wq_drop(struct vrdma_wq *wq);
int vrdma_wq_add(struct vrdma_wq *wq, struct vrdma_wqe *w, bool *kick);
bool vrdma_wq_defer(struct vrdma_dev *dev, struct vrdma_wq *wq,
		    struct vrdma_wqe *w, u32 max);

/* vrdma_verbs.c */
int vrdma_query_device(struct ib_device *ib, struct ib_device_attr *attr,
		       struct ib_udata *udata);
int vrdma_query_port(struct ib_device *ib, u32 port,
		     struct ib_port_attr *attr);
int vrdma_get_port_immutable(struct ib_device *ib, u32 port,
			     struct ib_port_immutable *imm);
enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ib, u32 port);
int vrdma_query_pkey(struct ib_device *ib, u32 port, u16 index, u16 *pkey);
int vrdma_add_gid(const struct ib_gid_attr *attr, void **context);
int vrdma_del_gid(const struct ib_gid_attr *attr, void **context);
int vrdma_alloc_ucontext(struct ib_ucontext *uc, struct ib_udata *udata);
void vrdma_dealloc_ucontext(struct ib_ucontext *uc);
void vrdma_disassociate_ucontext(struct ib_ucontext *uc);
int vrdma_mmap(struct ib_ucontext *uc, struct vm_area_struct *vma);
void vrdma_mmap_free(struct rdma_user_mmap_entry *entry);
int vrdma_alloc_pd(struct ib_pd *pd, struct ib_udata *udata);
int vrdma_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata);
int vrdma_create_ah(struct ib_ah *ah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int vrdma_query_ah(struct ib_ah *ah, struct rdma_ah_attr *attr);
int vrdma_destroy_ah(struct ib_ah *ah, u32 flags);
void vrdma_fill_av(struct virtio_rdma_av *av, const struct rdma_ah_attr *attr);

/* vrdma_mr.c */
struct ib_mr *vrdma_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *vrdma_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata);
int vrdma_dereg_mr(struct ib_mr *mr, struct ib_udata *udata);
struct ib_mr *vrdma_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			     u32 max_num_sg);
int vrdma_alloc_mw(struct ib_mw *mw, struct ib_udata *udata);
int vrdma_dealloc_mw(struct ib_mw *mw);
int vrdma_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);

/* vrdma_cq.c */
int vrdma_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs);
int vrdma_destroy_cq(struct ib_cq *cq, struct ib_udata *udata);
int vrdma_poll_cq(struct ib_cq *cq, int num, struct ib_wc *wc);
int vrdma_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags);
void vrdma_cq_done(struct virtqueue *vq);
bool vrdma_cq_ready(struct vrdma_cq *cq);
void vrdma_cq_user_events(struct vrdma_cq *cq);

/* vrdma_qp.c */
int vrdma_create_qp(struct ib_qp *qp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int vrdma_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int vrdma_query_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int vrdma_destroy_qp(struct ib_qp *qp, struct ib_udata *udata);
int vrdma_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vrdma_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int vrdma_create_srq(struct ib_srq *srq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int vrdma_modify_srq(struct ib_srq *srq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int vrdma_query_srq(struct ib_srq *srq, struct ib_srq_attr *attr);
int vrdma_destroy_srq(struct ib_srq *srq, struct ib_udata *udata);
int vrdma_post_srq_recv(struct ib_srq *srq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

#endif
