// SPDX-License-Identifier: GPL-2.0-only
/*
 * ABI v2 (docs/virtio-rdma.md section 8): rings in guest memory.
 *
 * Doorbell pages: one 4 KiB page of guest memory per context, whose bits
 * say which of its rings to look at. A page is taken once (one page, one
 * owner: two contexts never share one), let go only when no ring names it,
 * and every page goes with a reset.
 *
 * CQ rings: the device writes each CQE into the slot `written` names and
 * then `written`; the guest's `cons` and `arm` words are read once per poll
 * and checked before use: a consumer index that goes back or passes what
 * was written is a lie, and that CQ alone goes to error. An armed CQ's
 * event goes out on the event queue, the one interrupt it costs.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "vdev_int.h"

uint8_t vdev_cmd_add_db_page(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_add_db_page *q = req;
	struct virtio_rdma_rsp_add_db_page *r = rsp;
	uint64_t gpa = le64toh(q->gpa);
	uint32_t i, dbn = VDEV_MAX_DB_PAGES;
	struct vdev_db *db;

	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (gpa % GRING_PAGE)
		return VIRTIO_RDMA_ERR_INVAL;
	if (!gring_db_ok(&v->vu.mem, gpa))
		return VIRTIO_RDMA_ERR_FAULT;
	for (i = 0; i < VDEV_MAX_DB_PAGES; i++) {
		if (!v->dbs[i]) {
			if (dbn == VDEV_MAX_DB_PAGES)
				dbn = i;
		} else if (v->dbs[i]->gpa == gpa) {
			return VIRTIO_RDMA_ERR_INVAL;
		}
	}
	if (dbn == VDEV_MAX_DB_PAGES) {
		v->stats.refused_db_pages++;
		return VIRTIO_RDMA_ERR_NOMEM;
	}
	db = calloc(1, sizeof(*db));
	if (!db)
		return VIRTIO_RDMA_ERR_NOMEM;
	db->gpa = gpa;
	/* the device's half starts known: no wake asked for yet */
	if (gring_db_need_wake(&v->vu.mem, gpa, false)) {
		free(db);
		return VIRTIO_RDMA_ERR_FAULT;
	}
	v->dbs[dbn] = db;
	r->dbn = htole32(dbn);
	return VIRTIO_RDMA_OK;
}

uint8_t vdev_cmd_del_db_page(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_del_db_page *q = req;
	uint32_t dbn = le32toh(q->dbn);

	(void)rsp;
	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (dbn >= VDEV_MAX_DB_PAGES || !v->dbs[dbn])
		return VIRTIO_RDMA_ERR_NOENT;
	if (v->dbs[dbn]->users)
		return VIRTIO_RDMA_ERR_BUSY;
	free(v->dbs[dbn]);
	v->dbs[dbn] = NULL;
	return VIRTIO_RDMA_OK;
}

void vdev_db_free_all(struct vdev *v)
{
	unsigned int i;

	for (i = 0; i < VDEV_MAX_DB_PAGES; i++) {
		free(v->dbs[i]);
		v->dbs[i] = NULL;
	}
}

#define CQE_STRIDE	64u	/* a CQE (40 bytes) per 64-byte slot */
#define POLL_BUDGET	64	/* CQEs per CQ per poll, as a v1 CQ */

static void db_bit_set(struct vdev_db *db, uint32_t bit, bool on)
{
	if (on)
		db->bits[bit / 64] |= 1ull << (bit % 64);
	else
		db->bits[bit / 64] &= ~(1ull << (bit % 64));
}

static bool db_bit_used(const struct vdev_db *db, uint32_t bit)
{
	return db->bits[bit / 64] & (1ull << (bit % 64));
}

/* The ring's pages from the guest's list, read once; the gring checks each. */
static uint8_t ring_init(struct vdev *v, struct gring *r, uint64_t list_gpa, uint32_t npages,
			 uint32_t entries, uint32_t stride)
{
	char why[160];
	uint64_t *pages;
	uint8_t st;
	int err;

	if (npages != gring_pages_needed(entries, stride))
		return VIRTIO_RDMA_ERR_INVAL;
	st = vdev_copy_page_list(v, list_gpa, npages, &pages);
	if (st)
		return st;
	err = gring_init(r, &v->vu.mem, pages, npages, entries, stride, why, sizeof(why));
	free(pages);
	return err == -EFAULT ? VIRTIO_RDMA_ERR_FAULT : err == -ENOMEM ? VIRTIO_RDMA_ERR_NOMEM :
	       err ? VIRTIO_RDMA_ERR_INVAL : VIRTIO_RDMA_OK;
}

uint8_t vdev_cmd_create_cq_ring(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_create_cq_ring *q = req;
	struct virtio_rdma_rsp_create_cq *r = rsp;
	uint32_t entries = le32toh(q->entries), dbn = le32toh(q->dbn), bit = le32toh(q->db_bit);
	struct gring ring = { 0 };
	struct vdev_db *db;
	struct vdev_cq *cq;
	struct eng_cq *ecq;
	uint32_t n;
	uint8_t st;
	int err;

	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (!entries || entries > ENG_MAX_CQE || bit >= GRING_DB_BITS)
		return VIRTIO_RDMA_ERR_INVAL;
	db = dbn < VDEV_MAX_DB_PAGES ? v->dbs[dbn] : NULL;
	if (!db)
		return VIRTIO_RDMA_ERR_NOENT;
	if (db_bit_used(db, bit))
		return VIRTIO_RDMA_ERR_BUSY;
	st = ring_init(v, &ring, le64toh(q->pages), le32toh(q->npages), entries, CQE_STRIDE);
	if (st)
		return st;
	/* the device's half starts at 0 whatever the page held */
	if (gring_store(&ring, &v->vu.mem, GRING_WRITTEN, 0) ||
	    gring_store(&ring, &v->vu.mem, GRING_ARMED, 0)) {
		st = VIRTIO_RDMA_ERR_FAULT;
		goto free_ring;
	}
	err = eng_cq_create(v->eng, entries, &ecq);
	if (err) {
		st = vdev_status_of(err);
		goto free_ring;
	}
	n = eng_cq_handle(ecq);
	cq = &v->cqs[n];
	memset(cq, 0, sizeof(*cq));
	cq->eng = ecq;
	cq->ring = ring;
	cq->dbn = (uint16_t)dbn;
	cq->db_bit = (uint16_t)bit;
	db_bit_set(db, bit, true);
	db->users++;
	if (n >= v->cq_hi)
		v->cq_hi = n + 1;
	r->cqn = htole32(n);
	return VIRTIO_RDMA_OK;

free_ring:
	gring_free(&ring);
	return st;
}

void vdev_ring_cq_release(struct vdev *v, struct vdev_cq *cq)
{
	struct vdev_db *db = v->dbs[cq->dbn];

	if (!cq->ring.entries)
		return;
	gring_free(&cq->ring);
	if (db) {
		db_bit_set(db, cq->db_bit, false);
		db->users--;
	}
}

/* A ring that misbehaves (a lying index, a page gone from guest memory)
 * costs its CQ, never the device: CQ_ERR, counted. */
static void ring_cq_error(struct vdev *v, struct vdev_cq *cq)
{
	if (cq->in_error)
		return;
	cq->in_error = true;
	v->stats.ring_errors++;
	vdev_cq_event(v, cq, VIRTIO_RDMA_EVENT_CQ_ERR, 0);
}

/* An entry on the event queue and its interrupt; false if the driver left
 * no buffer (the event is lost, counted). */
static bool ring_event(struct vdev *v, uint32_t cqn, uint32_t kind)
{
	struct virtq *vq = &v->vu.vqs[VIRTIO_RDMA_EVENT_VQ];
	struct virtio_rdma_ring_event ev = { htole32(cqn), htole32(kind) };
	struct virtq_elem e;
	int r;

	r = virtq_ready(vq) ? virtq_pop(vq, &v->vu.mem, &e) : 0;
	if (r < 0 || (r > 0 && (e.n_out || e.in_len < sizeof(ev)))) {
		vdev_set_broken(v, r < 0 ? "event queue: malformed descriptor chain" :
					   "event queue: buffer smaller than an event");
		return false;
	}
	if (!r) {
		v->stats.events_lost++;
		return false;
	}
	virtq_write(&e, 0, &ev, sizeof(ev));
	virtq_push(vq, e.head, sizeof(ev));
	return vdev_signal_call(v, vq, true);
}

/* One CQE into slot cq->written. */
static bool ring_put(struct vdev *v, struct vdev_cq *cq, const struct virtio_rdma_cqe *c)
{
	uint8_t slot[CQE_STRIDE] = { 0 };

	memcpy(slot, c, sizeof(*c));
	if (gring_write(&cq->ring, &v->vu.mem, cq->written, slot, sizeof(slot))) {
		ring_cq_error(v, cq);
		return false;
	}
	cq->written++;
	return true;
}

/* The guest's arm word: a new seq is a new request (NEXT_COMPLETION wins
 * over SOLICITED, as REQ_NOTIFY_CQ's); taken, the device says so. */
static void ring_take_arm(struct vdev *v, struct vdev_cq *cq, uint32_t arm)
{
	uint32_t seq = VIRTIO_RDMA_RING_ARM_SEQ(arm) & ~VIRTIO_RDMA_RING_ARMED_FIRED;
	uint32_t flags = arm & (VIRTIO_RDMA_NOTIFY_SOLICITED | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);

	if (seq == cq->arm_seq)
		return;
	cq->arm_seq = seq;
	if (flags & VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)
		cq->armed = VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;
	else if (flags && cq->armed != VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)
		cq->armed = VIRTIO_RDMA_NOTIFY_SOLICITED;
	if (flags == VIRTIO_RDMA_NOTIFY_SOLICITED)
		cq->solicited = false;
	if (gring_store(&cq->ring, &v->vu.mem, GRING_ARMED, seq))
		ring_cq_error(v, cq);
}

unsigned int vdev_poll_cq_ring(struct vdev *v, struct vdev_cq *cq, uint32_t cqn)
{
	uint32_t cons, arm, entries = cq->ring.entries, written = cq->written;
	const struct guest_mem *gm = &v->vu.mem;
	bool notify = false, async = false;
	struct virtio_rdma_cqe c;
	unsigned int n = 0;

	if (gring_load(&cq->ring, gm, GRING_CONS, &cons) ||
	    gring_load(&cq->ring, gm, GRING_ARM, &arm)) {
		ring_cq_error(v, cq);
		return 0;
	}
	if (!cq->in_error && !gring_cons_ok(cons, cq->cons, cq->written))
		ring_cq_error(v, cq);	/* a lying index: the last good one stays */
	else if (!cq->in_error)
		cq->cons = cons;
	if (!cq->in_error)
		ring_take_arm(v, cq, arm);
	/* events first, as on a v1 CQ; an errored CQ still says so */
	while (cq->n_events && cq->written - cq->cons < entries) {
		if (!ring_put(v, cq, &cq->events[0]))
			break;
		memmove(cq->events, cq->events + 1, --cq->n_events * sizeof(cq->events[0]));
		async = true;
		n++;
	}
	while (!cq->in_error && n < POLL_BUDGET && cq->written - cq->cons < entries) {
		if (!cq->have_held) {
			if (eng_cq_poll(cq->eng, &cq->held, 1) != 1)
				break;
			cq->have_held = true;
		}
		vdev_cqe_from_wc(&cq->held, &c);
		if (!ring_put(v, cq, &c))
			break;
		cq->have_held = false;
		v->stats.cqes++;
		if (vdev_cq_arm_met(cq, c.status))
			notify = true;
		n++;
	}
	/* the slots before the index that names them */
	if (cq->written != written && gring_store(&cq->ring, gm, GRING_WRITTEN, cq->written))
		ring_cq_error(v, cq);
	if (notify) {
		cq->armed = 0;
		cq->solicited = false;
		if (ring_event(v, cqn, VIRTIO_RDMA_RING_EVENT_COMPLETION))
			v->stats.cq_interrupts++;
		if (gring_store(&cq->ring, gm, GRING_ARMED,
				cq->arm_seq | VIRTIO_RDMA_RING_ARMED_FIRED))
			ring_cq_error(v, cq);
	} else if (async) {
		ring_event(v, cqn, VIRTIO_RDMA_RING_EVENT_ASYNC);
	}
	return n;
}
