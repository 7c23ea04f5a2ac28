// SPDX-License-Identifier: GPL-2.0-only
/*
 * ABI v2 (docs/virtio-rdma.md section 8): rings in guest memory.
 *
 * Doorbell pages: one 4 KiB page of guest memory per context, whose bits
 * say which of its rings to look at. A page is taken once (one page, one
 * owner: two contexts never share one), let go only when no ring names it,
 * and every page goes with a reset.
 *
 * QP rings: the guest writes WQEs into slots, then `prod`, then sets the
 * queue's doorbell bit; the device takes the bits (a swap per word), puts
 * the queues they name on its pending list, and copies each WQE whole
 * before parsing it, then says how far it took in `taken`. A `prod` more
 * than a ring ahead is a lie: that QP alone goes to ERR (QP_FATAL).
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
#include "vdev_lie.h"

static void pend(struct vdev *v, struct vdev_qp *qp, bool recv);

static bool db_bit_used(const struct vdev_db *db, uint32_t bit)
{
	return db->used[bit / 64] & (1ull << (bit % 64));
}

/* Room to name what bit rings, before anything is created: claiming it
 * then cannot fail. */
static uint8_t db_prepare(struct vdev_db *db, uint32_t bit)
{
	uint32_t **o = &db->owner[bit / 64];

	if (!*o)
		*o = calloc(64, sizeof(**o));
	return *o ? VIRTIO_RDMA_OK : VIRTIO_RDMA_ERR_NOMEM;
}

static void db_claim(struct vdev_db *db, uint32_t bit, uint32_t own)
{
	db->used[bit / 64] |= 1ull << (bit % 64);
	db->owner[bit / 64][bit % 64] = own;
	if (bit / 64 >= db->words_hi)
		db->words_hi = bit / 64 + 1;
}

/* The bits of one object's rings, checked and prepared: it holds the page. */
static void db_claim_all(struct vdev_db *db, const uint32_t *bits, const uint32_t *owns,
			 unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		db_claim(db, bits[i], owns[i]);
	db->users++;
}

static void db_release(struct vdev_db *db, uint32_t bit)
{
	db->used[bit / 64] &= ~(1ull << (bit % 64));
	if (db->owner[bit / 64])
		db->owner[bit / 64][bit % 64] = 0;
}

static uint32_t db_owner(const struct vdev_db *db, uint32_t bit)
{
	return db->owner[bit / 64] ? db->owner[bit / 64][bit % 64] : 0;
}

static void db_free(struct vdev_db *db)
{
	unsigned int w;

	if (!db)
		return;
	for (w = 0; w < GRING_DB_WORDS; w++)
		free(db->owner[w]);
	free(db);
}

static struct vdev_db *db_get(const struct vdev *v, uint32_t dbn)
{
	return dbn < VDEV_MAX_DB_PAGES ? v->dbs[dbn] : NULL;
}

/* One page, one owner: a page added twice would let two contexts' bits mix. */
static bool db_gpa_added(const struct vdev *v, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < VDEV_MAX_DB_PAGES; i++)
		if (v->dbs[i] && v->dbs[i]->gpa == gpa)
			return true;
	return false;
}

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
	if (db_gpa_added(v, gpa))
		return VIRTIO_RDMA_ERR_INVAL;
	for (i = 0; i < VDEV_MAX_DB_PAGES && dbn == VDEV_MAX_DB_PAGES; i++)
		if (!v->dbs[i])
			dbn = i;
	if (dbn == VDEV_MAX_DB_PAGES) {
		v->stats.refused_db_pages++;
		return VIRTIO_RDMA_ERR_NOMEM;
	}
	db = calloc(1, sizeof(*db));
	if (!db)
		return VIRTIO_RDMA_ERR_NOMEM;
	db->gpa = gpa;
	/* the device's half starts known: no wake asked for yet */
	if (gring_db_need_wake(&v->vu.mem, gpa, 0)) {
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
	db_free(v->dbs[dbn]);
	v->dbs[dbn] = NULL;
	return VIRTIO_RDMA_OK;
}

int vdev_db_restore(struct vdev *v, uint32_t dbn, uint64_t gpa)
{
	/* not checked against the memory table: a page a later SET_MEM_TABLE
	 * left out was an error on its rings alone, and stays one */
	if (dbn >= VDEV_MAX_DB_PAGES || v->dbs[dbn] || gpa % GRING_PAGE || db_gpa_added(v, gpa))
		return -EBADMSG;
	v->dbs[dbn] = calloc(1, sizeof(*v->dbs[dbn]));
	if (!v->dbs[dbn])
		return -ENOMEM;
	v->dbs[dbn]->gpa = gpa;
	return 0;
}

int vdev_db_bind(struct vdev *v, uint32_t dbn, const uint32_t *bits, const uint32_t *owns,
		 unsigned int n)
{
	struct vdev_db *db = db_get(v, dbn);
	unsigned int i, j;

	if (!db)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		if (bits[i] >= GRING_DB_BITS || db_bit_used(db, bits[i]))
			return -EBADMSG;
		for (j = 0; j < i; j++)
			if (bits[j] == bits[i])
				return -EBADMSG;
		if (db_prepare(db, bits[i]))
			return -ENOMEM;
	}
	db_claim_all(db, bits, owns, n);
	return 0;
}

void vdev_ring_restored(struct vdev *v)
{
	uint32_t i;

	for (i = 0; i < v->qp_hi; i++) {
		if (v->qps[i].sq_ring.entries)
			pend(v, &v->qps[i], false);
		if (v->qps[i].rq_ring.entries)
			pend(v, &v->qps[i], true);
	}
	for (i = 0; i < v->cq_hi; i++)
		if (v->cqs[i].ring.entries)
			vdev_cq_dirty(v, i);
}

void vdev_db_free_all(struct vdev *v)
{
	unsigned int i;

	for (i = 0; i < VDEV_MAX_DB_PAGES; i++) {
		db_free(v->dbs[i]);
		v->dbs[i] = NULL;
	}
}

#define CQE_STRIDE	64u	/* a CQE (40 bytes) per 64-byte slot */
#define POLL_BUDGET	64	/* CQEs per CQ per poll, as a v1 CQ */

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
	db = db_get(v, dbn);
	if (!db)
		return VIRTIO_RDMA_ERR_NOENT;
	if (db_bit_used(db, bit))
		return VIRTIO_RDMA_ERR_BUSY;
	st = db_prepare(db, bit);
	if (st)
		return st;
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
	db_claim_all(db, &bit, &(uint32_t){ VDEV_RING_CQ | n }, 1);
	if (n >= v->cq_hi)
		v->cq_hi = n + 1;
	r->cqn = htole32(n);
	return VIRTIO_RDMA_OK;

free_ring:
	gring_free(&ring);
	return st;
}

static void ev_owed_drop(struct vdev *v, struct vdev_cq *cq, uint8_t kinds)
{
	if (cq->ev_owed && !(cq->ev_owed &= (uint8_t)~kinds))
		v->n_ev_owed--;
}

void vdev_ring_cq_release(struct vdev *v, struct vdev_cq *cq)
{
	struct vdev_db *db = v->dbs[cq->dbn];

	if (!cq->ring.entries)
		return;
	gring_free(&cq->ring);
	ev_owed_drop(v, cq, 0xff);
	if (db) {
		db_release(db, cq->db_bit);
		db->users--;
	}
}

/* Nothing for the device to write to the CQ and no arm to read. */
static bool ring_cq_idle(const struct vdev_cq *cq)
{
	return !cq->arm_rung && !cq->n_events && !cq->have_held && eng_cq_empty(cq->eng);
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
 * no buffer: the event is owed (one per kind and CQ) and goes out when a
 * buffer comes, or a sleeper on that CQ would sleep on. */
static bool ring_event(struct vdev *v, struct vdev_cq *cq, uint32_t cqn, uint32_t kind)
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
		if (!cq->ev_owed)
			v->n_ev_owed++;
		if (!(cq->ev_owed & (1u << kind)))
			v->stats.events_late++;
		cq->ev_owed |= (uint8_t)(1u << kind);
		return false;
	}
	vdev_lie_ring_event(&ev);
	virtq_write(&e, 0, &ev, sizeof(ev));
	virtq_push(vq, e.head, sizeof(ev));
	return vdev_signal_call(v, vq, true);
}

/* The events a CQ is owed, completion first, while buffers last. */
static void ring_events_owed(struct vdev *v, struct vdev_cq *cq, uint32_t cqn)
{
	struct virtq *vq = &v->vu.vqs[VIRTIO_RDMA_EVENT_VQ];
	uint32_t kind;

	for (kind = VIRTIO_RDMA_RING_EVENT_COMPLETION; kind <= VIRTIO_RDMA_RING_EVENT_ASYNC; kind++) {
		if (!(cq->ev_owed & (1u << kind)))
			continue;
		if (!virtq_ready(vq) || !virtq_has_work(vq))
			return;
		ev_owed_drop(v, cq, (uint8_t)(1u << kind));
		if (ring_event(v, cq, cqn, kind) && kind == VIRTIO_RDMA_RING_EVENT_COMPLETION)
			v->stats.cq_interrupts++;
	}
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
 * over SOLICITED, as REQ_NOTIFY_CQ's); taken, the device says so. Whether
 * a new one was taken. */
static bool ring_take_arm(struct vdev *v, struct vdev_cq *cq, uint32_t arm)
{
	uint32_t seq = VIRTIO_RDMA_RING_ARM_SEQ(arm) & ~VIRTIO_RDMA_RING_ARMED_FIRED;
	uint32_t flags = arm & (VIRTIO_RDMA_NOTIFY_SOLICITED | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);

	if (seq == cq->arm_seq)
		return false;
	cq->arm_seq = seq;
	if (flags & VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)
		cq->armed = VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;
	else if (flags && cq->armed != VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)
		cq->armed = VIRTIO_RDMA_NOTIFY_SOLICITED;
	if (flags == VIRTIO_RDMA_NOTIFY_SOLICITED)
		cq->solicited = false;
	if (gring_store(&cq->ring, &v->vu.mem, GRING_ARMED, seq))
		ring_cq_error(v, cq);
	return true;
}

unsigned int vdev_poll_cq_ring(struct vdev *v, struct vdev_cq *cq, uint32_t cqn)
{
	uint32_t cons, arm, entries = cq->ring.entries, written = cq->written;
	const struct guest_mem *gm = &v->vu.mem;
	bool notify = false, async = false;
	struct virtio_rdma_cqe c;
	unsigned int n = 0;

	if (cq->ev_owed)
		ring_events_owed(v, cq, cqn);
	/* an idle CQ costs no look at guest memory: only its doorbell bit (a
	 * new arm) or something to write makes the device read the ring */
	if (ring_cq_idle(cq))
		return 0;
	if (gring_load(&cq->ring, gm, GRING_CONS, &cons) ||
	    gring_load(&cq->ring, gm, GRING_ARM, &arm)) {
		ring_cq_error(v, cq);
		return 0;
	}
	if (!cq->in_error && !gring_cons_ok(cons, cq->cons, cq->written))
		ring_cq_error(v, cq);	/* a lying index: the last good one stays */
	else if (!cq->in_error)
		cq->cons = cons;
	/* armed while a CQE that meets the arm waits past the guest's
	 * consumer index (any for the next completion, a solicited or error
	 * one for SOLICITED): the event goes out now (as an RNIC's arm
	 * doorbell, which carries the consumer index), or a completion
	 * written just before the arm was seen would wake no one */
	if (!cq->in_error && ring_take_arm(v, cq, arm) && cq->written != cq->cons &&
	    (cq->armed == VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION ||
	     (cq->armed == VIRTIO_RDMA_NOTIFY_SOLICITED && cq->notable &&
	      cq->written - cq->notable_at < cq->written - cq->cons)))
		notify = true;
	cq->arm_rung = false;
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
		if ((cq->held.wc_flags & ENG_WC_SOLICITED) || c.status != ENG_WC_SUCCESS) {
			cq->notable_at = cq->written;
			cq->notable = true;
		}
		if (vdev_cq_arm_met(cq, c.status))
			notify = true;
		n++;
	}
	/* the slots before the index that names them */
	if (cq->written != written &&
	    gring_store(&cq->ring, gm, GRING_WRITTEN, vdev_lie_written(cqn, cq->written)))
		ring_cq_error(v, cq);
	if (notify) {
		cq->armed = 0;
		cq->solicited = false;
		if (ring_event(v, cq, cqn, VIRTIO_RDMA_RING_EVENT_COMPLETION))
			v->stats.cq_interrupts++;
		if (gring_store(&cq->ring, gm, GRING_ARMED,
				cq->arm_seq | VIRTIO_RDMA_RING_ARMED_FIRED))
			ring_cq_error(v, cq);
	} else if (async) {
		ring_event(v, cq, cqn, VIRTIO_RDMA_RING_EVENT_ASYNC);
	}
	return n;
}

unsigned int vdev_poll_ring_cqs(struct vdev *v)
{
	uint32_t w, i, words = (v->n_cqs + 63) / 64;
	unsigned int n = 0;
	uint64_t bits;

	for (w = 0; w < words && !v->broken; w++) {
		for (bits = v->cq_dirty[w]; bits && !v->broken; bits &= bits - 1) {
			struct vdev_cq *cq;

			i = w * 64 + (uint32_t)__builtin_ctzll(bits);
			cq = &v->cqs[i];
			if (cq->eng && cq->ring.entries)
				n += vdev_poll_cq_ring(v, cq, i);
			/* a full ring keeps it here: the guest's cons is read
			 * again; an owed event: a buffer is looked for again */
			if (!cq->eng || !cq->ring.entries || (ring_cq_idle(cq) && !cq->ev_owed))
				v->cq_dirty[w] &= ~(1ull << (i % 64));
		}
	}
	return n;
}

/* ---- QP rings ---- */

/* The largest receive WQE max_sge allows: what a slot must hold. */
static size_t recv_wqe_max(uint32_t max_sge)
{
	return sizeof(struct virtio_rdma_cmd_post_recv) +
	       max_sge * (size_t)sizeof(struct virtio_rdma_sge);
}

/* A work queue's ring from its descriptor: geometry, the WQE that must fit
 * (the QP's caps), the doorbell bit free on db. */
static uint8_t wq_ring_init(struct vdev *v, struct vdev_db *db, const struct virtio_rdma_ring_desc *d,
			    uint32_t max_wr, size_t max_wqe, struct gring *r)
{
	uint32_t entries = le32toh(d->entries), stride = le32toh(d->stride);
	uint32_t bit = le32toh(d->db_bit);

	if (entries < max_wr || stride < max_wqe || stride > sizeof(((struct vdev *)0)->wqe_buf) ||
	    bit >= GRING_DB_BITS)
		return VIRTIO_RDMA_ERR_INVAL;
	if (db_bit_used(db, bit))
		return VIRTIO_RDMA_ERR_BUSY;
	if (db_prepare(db, bit))
		return VIRTIO_RDMA_ERR_NOMEM;
	return ring_init(v, r, le64toh(d->pages), le32toh(d->npages), entries, stride);
}

uint8_t vdev_cmd_create_qp_ring(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_create_qp_ring *q = req;
	const struct virtio_rdma_cmd_create_qp *c = &q->qp;
	uint32_t dbn = le32toh(q->dbn), sbit = le32toh(q->sq.db_bit), rbit = le32toh(q->rq.db_bit);
	uint32_t send_sge = le32toh(c->max_send_sge), recv_sge = le32toh(c->max_recv_sge);
	bool srq = le32toh(c->flags) & VIRTIO_RDMA_CREATE_QP_SRQ;
	size_t send_wqe, recv_wqe;
	struct gring sq = { 0 }, rq = { 0 };
	struct vdev_db *db;
	struct vdev_qp *qp;
	uint32_t k;
	uint8_t st;

	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	db = db_get(v, dbn);
	if (!db)
		return VIRTIO_RDMA_ERR_NOENT;
	if (send_sge > ENG_MAX_SGE || recv_sge > ENG_MAX_SGE ||
	    le32toh(c->max_inline_data) > ENG_MAX_INLINE || (!srq && sbit == rbit))
		return VIRTIO_RDMA_ERR_INVAL;
	/* the largest WQE the caps allow fits a slot */
	send_wqe = sizeof(struct virtio_rdma_cmd_post_send) +
		   send_sge * sizeof(struct virtio_rdma_sge) + le32toh(c->max_inline_data);
	recv_wqe = recv_wqe_max(recv_sge);
	st = wq_ring_init(v, db, &q->sq, le32toh(c->max_send_wr), send_wqe, &sq);
	if (st)
		return st;
	/* with an SRQ its receives come from the SRQ's ring: no ring here */
	st = srq ? VIRTIO_RDMA_OK : wq_ring_init(v, db, &q->rq, le32toh(c->max_recv_wr), recv_wqe,
						 &rq);
	if (st)
		goto free_sq;
	if (gring_store(&sq, &v->vu.mem, GRING_TAKEN, 0) ||
	    (!srq && gring_store(&rq, &v->vu.mem, GRING_TAKEN, 0))) {
		st = VIRTIO_RDMA_ERR_FAULT;
		goto free_rq;
	}
	st = vdev_qp_create(v, c, rsp, true, &k);
	if (st)
		goto free_rq;
	qp = &v->qps[k];
	qp->sq_ring = sq;
	qp->rq_ring = rq;
	qp->dbn = (uint16_t)dbn;
	qp->sq_bit = (uint16_t)sbit;
	if (!srq)
		qp->rq_bit = (uint16_t)rbit;
	db_claim_all(db, (uint32_t[]){ sbit, rbit }, (uint32_t[]){ VDEV_RING_SQ | k, VDEV_RING_RQ | k },
		     srq ? 1 : 2);
	return VIRTIO_RDMA_OK;

free_rq:
	gring_free(&rq);
free_sq:
	gring_free(&sq);
	return st;
}

uint8_t vdev_cmd_create_srq_ring(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_create_srq_ring *q = req;
	uint32_t dbn = le32toh(q->dbn), bit = le32toh(q->ring.db_bit);
	size_t wqe = recv_wqe_max(le32toh(q->srq.max_sge));
	struct gring ring = { 0 };
	struct vdev_db *db;
	struct vdev_qp *s;
	uint32_t k;
	uint8_t st;

	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	db = db_get(v, dbn);
	if (!db)
		return VIRTIO_RDMA_ERR_NOENT;
	if (le32toh(q->srq.max_sge) > ENG_MAX_SGE || q->reserved)
		return VIRTIO_RDMA_ERR_INVAL;
	st = wq_ring_init(v, db, &q->ring, le32toh(q->srq.max_wr), wqe, &ring);
	if (st)
		return st;
	if (gring_store(&ring, &v->vu.mem, GRING_TAKEN, 0)) {
		st = VIRTIO_RDMA_ERR_FAULT;
		goto free_ring;
	}
	st = vdev_srq_create(v, &q->srq, rsp, true, &k);
	if (st)
		goto free_ring;
	s = &v->qps[k];
	s->rq_ring = ring;
	s->dbn = (uint16_t)dbn;
	s->rq_bit = (uint16_t)bit;
	db_claim_all(db, &bit, &(uint32_t){ VDEV_RING_RQ | k }, 1);
	return VIRTIO_RDMA_OK;

free_ring:
	gring_free(&ring);
	return st;
}

/* Off the pending list: what names the slot goes. */
static void unpend(struct vdev *v, uint32_t k)
{
	uint32_t i, j = 0;

	for (i = 0; i < v->n_ring_pend; i++)
		if (VDEV_RING_SLOT(v->ring_pend[i]) != k || VDEV_RING_KIND(v->ring_pend[i]) ==
		    VDEV_RING_CQ)
			v->ring_pend[j++] = v->ring_pend[i];
	v->n_ring_pend = j;
}

void vdev_ring_qp_release(struct vdev *v, struct vdev_qp *qp)
{
	struct vdev_db *db = v->dbs[qp->dbn];

	if (!vdev_slot_ring(qp))
		return;
	unpend(v, (uint32_t)(qp - v->qps));
	if (db) {
		if (qp->sq_ring.entries)
			db_release(db, qp->sq_bit);
		if (qp->rq_ring.entries)
			db_release(db, qp->rq_bit);
		db->users--;
	}
	gring_free(&qp->sq_ring);
	gring_free(&qp->rq_ring);
}

/* The queue on the pending list, once. */
static void pend(struct vdev *v, struct vdev_qp *qp, bool recv)
{
	bool *on = recv ? &qp->rq_pend : &qp->sq_pend;

	if (*on || v->n_ring_pend >= VDEV_PEND_CAP(v->n_qps))
		return;
	*on = true;
	v->ring_pend[v->n_ring_pend++] = (recv ? VDEV_RING_RQ : VDEV_RING_SQ) |
					 (uint32_t)(qp - v->qps);
}

/* A ring that misbehaved (a lying prod, a page gone from guest memory):
 * never read again, counted; its QP goes to ERR with QP_FATAL, and an
 * SRQ's every QP (their receives have nowhere left to come from). */
static void ring_qp_fatal(struct vdev *v, struct vdev_qp *qp)
{
	uint32_t i;

	if (qp->ring_dead)
		return;
	qp->ring_dead = true;
	v->stats.ring_errors++;
	if (qp->eng) {
		eng_qp_fatal(qp->eng);
		return;
	}
	for (i = 0; i < v->qp_hi; i++)
		if (v->qps[i].eng && eng_qp_srq(v->qps[i].eng) == qp->srq)
			eng_qp_fatal(v->qps[i].eng);
}

/* The WQEs between what the device took and the guest's prod; whether any
 * are left (the QP's queue was full, or the budget ran out). */
static bool poll_wq_ring(struct vdev *v, struct vdev_qp *qp, bool recv, unsigned int *n)
{
	struct gring *r = recv ? &qp->rq_ring : &qp->sq_ring;
	uint32_t *taken = recv ? &qp->rq_taken : &qp->sq_taken, prod, was = *taken;
	bool left = false;

	if (qp->ring_dead)
		return false;
	if (gring_load(r, &v->vu.mem, GRING_PROD, &prod)) {
		ring_qp_fatal(v, qp);
		return false;
	}
	if (!gring_prod_ok(prod, *taken, r->entries)) {
		ring_qp_fatal(v, qp);	/* its WQEs in the engine are flushed */
		return false;
	}
	while (*taken != prod) {
		if (*n >= POLL_BUDGET) {
			left = true;
			break;
		}
		/* the whole slot, once: the guest may rewrite it meanwhile */
		if (gring_read(r, &v->vu.mem, *taken, v->wqe_buf, r->stride)) {
			ring_qp_fatal(v, qp);
			break;
		}
		if (vdev_take_wqe(v, qp, recv, r->stride) == -ENOMEM) {
			left = true;
			break;
		}
		(*taken)++;
		(*n)++;
		v->stats.ring_wqes++;
	}
	if (*taken != was &&
	    gring_store(r, &v->vu.mem, GRING_TAKEN,
			vdev_lie_taken(qp->eng, *taken)))
		ring_qp_fatal(v, qp);
	return left;
}

unsigned int vdev_poll_rq_ring(struct vdev *v, uint32_t k)
{
	unsigned int n = 0;

	if (poll_wq_ring(v, &v->qps[k], true, &n))
		pend(v, &v->qps[k], true);
	return n;
}

/* The words of each doorbell page that hold a ring's bit, taken; the
 * queues named go pending. A bit there that names no ring costs this look,
 * counted; the words without a ring's bit are never looked at (the scan
 * costs what the page uses, not its size). */
static unsigned int take_doorbells(struct vdev *v)
{
	unsigned int i, w, found = 0;
	uint64_t *words, bits;

	for (i = 0; i < VDEV_MAX_DB_PAGES; i++) {
		struct vdev_db *db = v->dbs[i];

		if (!db)
			continue;
		words = gring_db_words(&v->vu.mem, db->gpa);
		if (!words) {		/* the page left guest memory */
			v->stats.ring_errors++;
			continue;
		}
		for (w = 0; w < db->words_hi; w++) {
			if (!db->used[w])
				continue;
			for (bits = gring_db_take_word(&words[w]); bits; bits &= bits - 1) {
				uint32_t own = db_owner(db, w * 64 + (unsigned int)__builtin_ctzll(bits));

				found++;
				if (VDEV_RING_KIND(own) == VDEV_RING_SQ)
					pend(v, &v->qps[VDEV_RING_SLOT(own)], false);
				else if (VDEV_RING_KIND(own) == VDEV_RING_RQ)
					pend(v, &v->qps[VDEV_RING_SLOT(own)], true);
				else if (VDEV_RING_KIND(own) == VDEV_RING_CQ) {
					v->cqs[VDEV_RING_SLOT(own)].arm_rung = true;
					vdev_cq_dirty(v, VDEV_RING_SLOT(own));
				}
				else
					v->stats.stray_doorbells++;
			}
		}
	}
	return found;
}

unsigned int vdev_poll_rings(struct vdev *v)
{
	unsigned int n = 0, i, m;

	take_doorbells(v);
	/* the pending list as it is now; what is left goes back on it, after
	 * it (each queue is on it once, so twice the queues always fit) */
	m = v->n_ring_pend;
	for (i = 0; i < m && !v->broken; i++) {
		uint32_t own = v->ring_pend[i];
		struct vdev_qp *qp = &v->qps[VDEV_RING_SLOT(own)];
		bool recv = VDEV_RING_KIND(own) == VDEV_RING_RQ;
		unsigned int got = 0;

		*(recv ? &qp->rq_pend : &qp->sq_pend) = false;
		if ((qp->eng || qp->srq) && poll_wq_ring(v, qp, recv, &got))
			pend(v, qp, recv);
		n += got;
	}
	/* what was looked at leaves the list, in one move */
	v->n_ring_pend -= i;
	memmove(v->ring_pend, v->ring_pend + i, v->n_ring_pend * sizeof(*v->ring_pend));
	return n;
}

bool vdev_rings_want_kicks(struct vdev *v, bool wanted)
{
	uint32_t n = 0;
	unsigned int i;

	/* a new number for each sleep (never 0): a guest kicks once for it */
	if (wanted) {
		n = ++v->wake_seq;
		if (!n)
			n = v->wake_seq = 1;
	}
	for (i = 0; i < VDEV_MAX_DB_PAGES; i++)
		if (v->dbs[i] && gring_db_need_wake(&v->vu.mem, v->dbs[i]->gpa, n))
			v->stats.ring_errors++;
	/* a bit set before need_wake was seen: taken now, so no kick is owed */
	return wanted && (take_doorbells(v) || v->n_ring_pend);
}
