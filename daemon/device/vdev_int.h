/* SPDX-License-Identifier: GPL-2.0-only */
/* The device's internals, shared by its files: vdev.c (lifecycle, config
 * space, engine and vhost-user glue), vdev_wqe.c (WQE decoding), vdev_mr.c
 * (page lists and the VM's page budget), vdev_ctrl.c (control commands),
 * vdev_poll.c (the queues), vdev_ring.c (ABI v2's rings in guest memory).
 * Not for the rest of the daemon. */
#ifndef VRDMAD_VDEV_INT_H
#define VRDMAD_VDEV_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gring.h"
#include "vdev.h"
#include "vdev_test.h"

#define CQ_EVENTS 8		/* asynchronous events waiting for a CQ buffer */

struct vdev_cq {
	struct eng_cq *eng;		/* NULL: slot free */
	uint32_t armed;			/* VIRTIO_RDMA_NOTIFY_* or 0 */
	bool solicited;			/* a solicited completion arrived */
	bool have_held;			/* polled from the engine, no buffer yet */
	struct eng_wc held;
	struct virtio_rdma_cqe events[CQ_EVENTS];
	unsigned int n_events;
	bool in_error;			/* overran: nothing but its event */
	/* ABI v2: its ring in guest memory (ring.entries 0: a v1 CQ) */
	struct gring ring;
	uint32_t written;		/* CQEs written, as the ring's header says */
	uint32_t cons;			/* the last consumer index that checked out */
	uint32_t arm_seq;		/* the seq of the last arm request taken */
	uint16_t dbn, db_bit;
	bool arm_rung;			/* its doorbell bit: the arm word changed */
	/* `written` just after the last solicited or error CQE (with
	 * notable): an arm for SOLICITED fires at once while it waits */
	uint32_t notable_at;
	bool notable;
	/* events the event queue had no buffer for, bit 1 << kind
	 * (VIRTIO_RDMA_RING_EVENT_*): sent when the driver gives buffers */
	uint8_t ev_owed;
};

/* A completion with this status meets the CQ's arm request (IBA 11.4.2.2:
 * a solicited one or an error for SOLICITED). */
static inline bool vdev_cq_arm_met(const struct vdev_cq *cq, uint8_t status)
{
	return cq->armed == VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION ||
	       (cq->armed == VIRTIO_RDMA_NOTIFY_SOLICITED &&
		(cq->solicited || status != ENG_WC_SUCCESS));
}

/* A QP slot k: a QP, an SRQ (its RQ virtqueue feeds the SRQ, its SQ takes
 * nothing), or neither. */
struct vdev_qp {
	struct eng_qp *eng;		/* NULL: no QP here */
	struct eng_srq *srq;		/* with eng NULL: the slot is this SRQ's */
	struct vdev_wq_limits sq, rq;
	uint32_t send_cqn;		/* where its QP events go */
	uint32_t recv_cqn;		/* where its SRQ limit events go */
	/* ABI v2: its queues as rings (sq_ring.entries 0: v1's virtqueues;
	 * rq_ring.entries 0 too on an SRQ) */
	struct gring sq_ring, rq_ring;
	uint32_t sq_taken, rq_taken;	/* WQEs the device took, as the headers say */
	uint16_t dbn, sq_bit, rq_bit;
	bool sq_pend, rq_pend;		/* on the device's list of rings to look at */
	bool ring_dead;			/* a ring lied: none of its rings is read again */
};

/* The slot's queues are rings (ABI v2): a QP's send ring, an SRQ's ring. */
static inline bool vdev_slot_ring(const struct vdev_qp *qp)
{
	return qp->sq_ring.entries || qp->rq_ring.entries;
}

struct vdev_mr {
	struct vdev *v;
	struct eng_mr *eng;
	bool dma;			/* GET_DMA_MR: iova = guest-physical */
	bool fast;			/* CREATE_MR: mapped by MAP_MR_SG */
	uint32_t max_num_sg;
	uint64_t first_off;		/* of the iova in the first page */
	uint64_t *pages;		/* guest-physical, checked against the memory table */
	uint32_t npages;
	uint32_t charged;		/* pages charged to v->mr_pages */
};

/* A doorbell page (ABI v2): where it is, how many rings name it, and which
 * of its bits they hold. */
struct vdev_db {
	uint64_t gpa;
	uint32_t users;
	uint64_t used[GRING_DB_WORDS];	/* the bits rings hold */
	uint32_t words_hi;		/* one past the last word that held one */
	/* what each held bit names, VDEV_RING_* | slot: [64] per word that
	 * ever had one (a page of 32256 bits costs what it uses) */
	uint32_t *owner[GRING_DB_WORDS];
};
/* The pending list's room: every queue of n QP slots (an SQ and an RQ each)
 * twice, as a poll looks at them while re-pending some. */
#define VDEV_PEND_CAP(n)	(4 * (n))
/* Which queue a doorbell bit or a pending entry names: a kind and a slot. */
#define VDEV_RING_CQ		(1u << 28)
#define VDEV_RING_SQ		(2u << 28)
#define VDEV_RING_RQ		(3u << 28)
#define VDEV_RING_KIND(x)	((x) & (0xfu << 28))
#define VDEV_RING_SLOT(x)	((x) & ((1u << 28) - 1))

/* A ring CQ the next poll must look at (a completion, an event, an arm). */
static inline void vdev_cq_dirty(struct vdev *v, uint32_t n)
{
	v->cq_dirty[n / 64] |= 1ull << (n % 64);
}

/* The driver negotiated ABI v2 (rings in guest memory). */
static inline bool vdev_rings(const struct vdev *v)
{
	return v->vu.features & (1ull << VIRTIO_RDMA_F_RINGS);
}

/* vdev.c: a fresh engine and an empty device, as on a new connection. */
int vdev_device_reset(struct vdev *v);
/* vdev.c: mark the device broken (a virtqueue violation): once logged,
 * counted, its processing stops; the control thread then drops the
 * connection. */
void vdev_set_broken(struct vdev *v, const char *why);
/* The IB MTU (ENG_MTU_*) a NIC MTU in bytes carries. */
uint8_t vdev_mtu_enum(unsigned int mtu);

/* vdev_wqe.c: the wr_id of a WQE too malformed to parse, for its error
 * completion (0 if it is too short to hold one). */
uint64_t vdev_wqe_wr_id(const uint8_t *buf, int64_t len, bool recv);

/* vdev_mr.c: a list of npages le64 page addresses at list_gpa, read once
 * into *out (host order, the caller's to free); counted against the poll's
 * page budget. FAULT, NOMEM. */
uint8_t vdev_copy_page_list(struct vdev *v, uint64_t list_gpa, uint32_t npages, uint64_t **out);

/* vdev_mr.c: the engine's map callback of an MR (eng_mr_reg); its page list
 * read from the guest; pages charged to the VM's budget; an MR freed with
 * its registration and charge; the most pages one MR may have. Status
 * bytes are VIRTIO_RDMA_*. */
void *vdev_mr_map(void *mem, uint64_t off, uint64_t len, uint64_t *contig);
uint8_t vdev_mr_load_pages(struct vdev *v, struct vdev_mr *mr, uint64_t pages_gpa,
			   uint32_t npages);
uint8_t vdev_mr_charge(struct vdev *v, struct vdev_mr *mr, uint32_t n);
void vdev_mr_free(struct vdev *v, struct vdev_mr *mr);
uint32_t vdev_max_mr_pages(const struct vdev *v);

/* vdev_poll.c: give back, unexecuted, up to max chains on each queue of
 * QP slot k (CQ slot n), used with length 0, for a slot that holds no
 * object; the SQ's and RQ's call eventfds are signalled, a CQ's is not.
 * How many. */
unsigned int vdev_discard_wq(struct vdev *v, uint32_t k, unsigned int max);
unsigned int vdev_discard_sq(struct vdev *v, uint32_t k, unsigned int max);
unsigned int vdev_discard_cq(struct vdev *v, uint32_t n, unsigned int max);

/* vdev_ring.c: ADD_DB_PAGE, DEL_DB_PAGE, CREATE_CQ_RING; a ring CQ's ring
 * and doorbell bit let go (its engine CQ is the caller's); its completions
 * and events into its ring, how many; every doorbell page let go (a reset,
 * the device freed, after its ring CQs). */
uint8_t vdev_cmd_add_db_page(struct vdev *v, const void *req, void *rsp);
uint8_t vdev_cmd_del_db_page(struct vdev *v, const void *req, void *rsp);
uint8_t vdev_cmd_create_cq_ring(struct vdev *v, const void *req, void *rsp);
uint8_t vdev_cmd_create_qp_ring(struct vdev *v, const void *req, void *rsp);
uint8_t vdev_cmd_create_srq_ring(struct vdev *v, const void *req, void *rsp);
void vdev_ring_cq_release(struct vdev *v, struct vdev_cq *cq);
void vdev_ring_qp_release(struct vdev *v, struct vdev_qp *qp);
unsigned int vdev_poll_cq_ring(struct vdev *v, struct vdev_cq *cq, uint32_t cqn);
/* The ring CQs marked dirty (vdev_cq_dirty), each until it has nothing to
 * write and no arm to read; how much was done. */
unsigned int vdev_poll_ring_cqs(struct vdev *v);
/* The doorbells rung since the last look, then the rings they name (and
 * those left with work); how much was done. With wanted (the worker is
 * about to sleep), each doorbell page asks for a kick first; whether work
 * is already there. */
unsigned int vdev_poll_rings(struct vdev *v);
bool vdev_rings_want_kicks(struct vdev *v, bool wanted);
/* A ring QP's receive queue, now (a message for it arrived). */
unsigned int vdev_poll_rq_ring(struct vdev *v, uint32_t k);
void vdev_db_free_all(struct vdev *v);
/* A restart that keeps the device (vdev_save.c): doorbell page dbn at gpa,
 * checked as ADD_DB_PAGE; n bits of page dbn for one ring object (owns:
 * VDEV_RING_* | slot), each free, as CREATE_*_RING; 0 or -EBADMSG,
 * -ENOMEM. Once all is back, every ring queue and CQ is looked at. */
int vdev_db_restore(struct vdev *v, uint32_t dbn, uint64_t gpa);
int vdev_db_bind(struct vdev *v, uint32_t dbn, const uint32_t *bits, const uint32_t *owns,
		 unsigned int n);
void vdev_ring_restored(struct vdev *v);

/* vdev_poll.c: a completion as the guest's CQE; an interrupt on vq. */
void vdev_cqe_from_wc(const struct eng_wc *wc, struct virtio_rdma_cqe *c);
bool vdev_signal_call(struct vdev *v, struct virtq *vq, bool force);

/* vdev_ctrl.c: the status byte for an engine's 0 or negative errno; a QP
 * as CREATE_QP makes it (ring: its queues are rings, set up by the
 * caller), its slot in *k. */
uint8_t vdev_status_of(int err);
uint8_t vdev_qp_create(struct vdev *v, const struct virtio_rdma_cmd_create_qp *q,
		       struct virtio_rdma_rsp_create_qp *r, bool ring, uint32_t *k);
/* An SRQ as CREATE_SRQ makes it (ring: its queue is a ring, set up by the
 * caller), its slot in *k. */
uint8_t vdev_srq_create(struct vdev *v, const struct virtio_rdma_cmd_create_srq *q,
			struct virtio_rdma_rsp_create_srq *r, bool ring, uint32_t *k);
/* vdev_poll.c: one WQE of len bytes in v->wqe_buf (len < 0: too long) for
 * QP slot k's send or receive queue, into the engine; -ENOMEM if that
 * queue is full (the WQE stays where it is), else 0. */
int vdev_take_wqe(struct vdev *v, struct vdev_qp *qp, bool recv, int64_t len);
/* vdev.c: an asynchronous event for the CQ (VIRTIO_RDMA_EVENT_*), queued
 * for its queue or ring. */
void vdev_cq_event(struct vdev *v, struct vdev_cq *cq, uint32_t event, uint32_t qpn);

/* vdev_ctrl.c: a QP by its number, or NULL. */
struct vdev_qp *vdev_qp_get(struct vdev *v, uint32_t qpn);
/* The slot of an SRQ by its handle, or NULL. */
struct vdev_qp *vdev_srq_get(struct vdev *v, uint32_t srqn);

#endif
