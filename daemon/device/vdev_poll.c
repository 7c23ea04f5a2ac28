// SPDX-License-Identifier: GPL-2.0-only
/*
 * The queues: control requests, WQEs from the send and receive queues into
 * the engine, completions and events into the CQ queues, kicks.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "vdev_int.h"
#include "vdev_lie.h"

#define CQE_SIZE sizeof(struct virtio_rdma_cqe)
#define POLL_BUDGET 64		/* WQEs or CQEs per queue per poll */

/* A call eventfd signalled: an interrupt in the guest (counted: ABI v2's
 * goal is next to none on a busy device, docs/virtio-rdma.md section 8).
 * Whether it was. */
bool vdev_signal_call(struct vdev *v, struct virtq *vq, bool force)
{
	if (!virtq_notify(vq, force))
		return false;
	v->stats.interrupts++;
	return true;
}

static unsigned int poll_ctrl(struct vdev *v)
{
	struct virtq *vq = &v->vu.vqs[VIRTIO_RDMA_CTRL_VQ];
	uint8_t req[1 + sizeof(struct virtio_rdma_cmd_modify_qp) + 1];
	uint8_t rsp[1 + sizeof(struct virtio_rdma_rsp_query_port)];
	struct virtq_elem e;
	unsigned int n = 0;
	uint32_t rsp_len;
	uint64_t got;
	int r;

	v->poll_pages = 0;
	while (n < POLL_BUDGET && v->poll_pages < VDEV_POLL_PAGES && !v->broken &&
	       (r = virtq_pop(vq, &v->vu.mem, &e)) != 0) {
		if (r < 0) {
			vdev_set_broken(v, "control queue: malformed descriptor chain");
			return n;
		}
		if (!e.in_len) {
			vdev_set_broken(v, "control queue: request without room for a status");
			return n;
		}
		got = virtq_read(&e, 0, req, sizeof(req));
		if (got < 1 || e.out_len > sizeof(req) - 1) {
			rsp[0] = VIRTIO_RDMA_ERR_INVAL;
			rsp_len = 0;
			v->stats.ctrl_cmds++;
			v->stats.ctrl_errors++;
		} else if (vdev_lie_refuse(req[0], req + 1, (uint32_t)(got - 1), &rsp[0])) {
			rsp_len = 0;
		} else {
			rsp[0] = vdev_ctrl_exec(v, req[0], req + 1, got - 1, rsp + 1,
						e.in_len - 1, &rsp_len);
			vdev_lie_answer(req[0], rsp[0], rsp + 1, rsp_len);
			if (vdev_lie_mute(req[0], req + 1)) {
				n++;
				continue;
			}
		}
		virtq_write(&e, 0, rsp, 1 + rsp_len);
		virtq_push(vq, e.head, 1 + rsp_len);
		n++;
		if (vdev_lie_slow_ctrl())
			break;
	}
	if (n)
		vdev_signal_call(v, vq, false);
	return n;
}

/* The WQE in e copied into v->wqe_buf; its length, or -1 if too long. */
static int64_t copy_wqe(struct vdev *v, const struct virtq_elem *e)
{
	if (e->n_in || e->out_len > sizeof(v->wqe_buf))
		return -1;
	return (int64_t)virtq_read(e, 0, v->wqe_buf, e->out_len);
}


int vdev_take_wqe(struct vdev *v, struct vdev_qp *qp, bool recv, int64_t len)
{
	union { struct vdev_send_wqe s; struct vdev_recv_wqe r; } w;
	int err;

	if (len < 0)
		err = -EINVAL;
	else if (recv)
		err = vdev_parse_recv_wqe(v->wqe_buf, (size_t)len, &qp->rq, &w.r);
	else
		err = vdev_parse_send_wqe(v->wqe_buf, (size_t)len, &qp->sq, &w.s);
	if (!err && !qp->eng)
		err = eng_srq_post_recv(qp->srq, &w.r.wr);
	else if (!err)
		err = recv ? eng_post_recv(qp->eng, &w.r.wr) : eng_post_send(qp->eng, &w.s.wr);
	if (err == -ENOMEM)		/* the QP's (SRQ's) queue is full: wait */
		return err;
	if (err && !qp->eng) {
		/* No QP to put in error: dropped and counted. A driver checks
		 * num_sge itself, as ibv_post_srq_recv does. */
		v->stats.refused_srq_wqes++;
	} else if (err) {
		v->stats.refused_wqes++;
		eng_qp_refuse_wr(qp->eng, recv, vdev_wqe_wr_id(v->wqe_buf, len, recv),
				 ENG_WC_LOC_QP_OP_ERR);
	} else if (!qp->eng) {
		v->stats.srq_wqes++;
	} else if (recv) {
		v->stats.recv_wqes++;
	} else {
		v->stats.send_wqes++;
	}
	return 0;
}

static unsigned int poll_wq(struct vdev *v, struct vdev_qp *qp, uint32_t k, bool recv)
{
	struct virtq_elem e;
	unsigned int n = 0;
	struct virtq *vq;
	int r;

	if (k >= v->max_qp)
		return 0;
	vq = &v->vu.vqs[recv ? VIRTIO_RDMA_RQ_VQ(v->max_cq, k) : VIRTIO_RDMA_SQ_VQ(v->max_cq, k)];
	if (!virtq_ready(vq))
		return 0;
	while (n < POLL_BUDGET && (r = virtq_pop(vq, &v->vu.mem, &e)) != 0) {
		if (r < 0) {
			vdev_set_broken(v, recv ? "receive queue: malformed descriptor chain" :
						  "send queue: malformed descriptor chain");
			return n;
		}
		if (vdev_take_wqe(v, qp, recv, copy_wqe(v, &e)) == -ENOMEM) {
			virtq_unpop(vq);
			break;
		}
		virtq_push(vq, e.head, 0);
		n++;
	}
	if (n)
		vdev_signal_call(v, vq, false);
	return n;
}

/* What the driver made available on a queue whose slot holds no object
 * goes back unread: nothing may run it later, in the slot's next object. */
static unsigned int discard(struct vdev *v, struct virtq *vq, unsigned int max, bool call,
			    const char *why)
{
	int n;

	if (!virtq_ready(vq))
		return 0;
	n = virtq_discard(vq, max);
	if (n < 0) {
		vdev_set_broken(v, why);
		return 0;
	}
	if (n && call)
		vdev_signal_call(v, vq, false);
	return (unsigned int)n;
}

/* v1's queues exist for slots below max_qp and max_cq only; a slot past
 * them (ABI v2's tables) has none. */
unsigned int vdev_discard_sq(struct vdev *v, uint32_t k, unsigned int max)
{
	if (k >= v->max_qp)
		return 0;
	return discard(v, &v->vu.vqs[VIRTIO_RDMA_SQ_VQ(v->max_cq, k)], max, true,
		       "send queue: malformed avail ring");
}

unsigned int vdev_discard_wq(struct vdev *v, uint32_t k, unsigned int max)
{
	if (k >= v->max_qp)
		return 0;
	return vdev_discard_sq(v, k, max) +
	       discard(v, &v->vu.vqs[VIRTIO_RDMA_RQ_VQ(v->max_cq, k)], max, true,
		       "receive queue: malformed avail ring");
}

unsigned int vdev_discard_cq(struct vdev *v, uint32_t n, unsigned int max)
{
	/* No call: a CQ's is for the completions REQ_NOTIFY_CQ asked for. */
	if (n >= v->max_cq)
		return 0;
	return discard(v, &v->vu.vqs[VIRTIO_RDMA_CQ_VQ(n)], max, false,
		       "completion queue: malformed avail ring");
}

void vdev_cqe_from_wc(const struct eng_wc *wc, struct virtio_rdma_cqe *c)
{
	memset(c, 0, sizeof(*c));
	c->wr_id = htole64(wc->wr_id);
	c->status = (uint8_t)wc->status;
	/* the CQE carries Linux's enum ib_wc_opcode (docs/virtio-rdma.md 5) */
	_Static_assert(ENG_WC_SEND == 0 && ENG_WC_RDMA_READ == 2 && ENG_WC_COMP_SWAP == 3 &&
		       ENG_WC_FETCH_ADD == 4 && ENG_WC_BIND_MW == 5 && ENG_WC_LOCAL_INV == 6 &&
		       ENG_WC_REG_MR == 10 &&
		       ENG_WC_RECV == 128 && ENG_WC_RECV_RDMA_WITH_IMM == 129,
		       "engine completion opcodes are not ib_wc_opcode's");
	c->opcode = (uint8_t)wc->opcode;
	c->vendor_err = htole32(wc->vendor_err);
	c->byte_len = htole32(wc->byte_len);
	c->ex.imm_data = wc->imm_data;
	if (wc->wc_flags & ENG_WC_WITH_INV)
		c->ex.invalidate_rkey = htole32(wc->invalidate_rkey);
	c->qp_num = htole32(wc->qp_num);
	c->src_qp = htole32(wc->src_qp);
	c->wc_flags = htole32(wc->wc_flags & ~(unsigned int)ENG_WC_SOLICITED);
	c->pkey_index = htole16(wc->pkey_index);
	c->sl = wc->sl;
	c->port_num = 1;
	_Static_assert(ENG_WC_WITH_NETWORK_HDR_TYPE == VIRTIO_RDMA_WC_WITH_NETWORK_HDR_TYPE &&
		       ENG_NETWORK_IPV4 == VIRTIO_RDMA_NETWORK_IPV4 &&
		       ENG_NETWORK_IPV6 == VIRTIO_RDMA_NETWORK_IPV6, "network header types");
	c->network_hdr_type = wc->network_hdr_type;
}

/* Next CQ buffer: 1 with *e, 0 if none, -1 if the device broke. */
static int cq_buffer(struct vdev *v, struct virtq *vq, struct virtq_elem *e)
{
	int r = virtq_pop(vq, &v->vu.mem, e);

	if (r < 0 || (r > 0 && (e->n_out || e->in_len < CQE_SIZE))) {
		vdev_set_broken(v, r < 0 ? "completion queue: malformed descriptor chain" :
					   "completion queue: buffer smaller than a CQE");
		return -1;
	}
	return r;
}

static unsigned int poll_cq(struct vdev *v, struct vdev_cq *cq, uint32_t cqn)
{
	struct virtq *vq = &v->vu.vqs[VIRTIO_RDMA_CQ_VQ(cqn)];
	struct virtio_rdma_cqe c;
	bool notify = false, force = false;
	struct virtq_elem e;
	unsigned int n = 0;
	int r;

	if (!virtq_ready(vq))
		return 0;
	if (vdev_lie_empty_cqes(cqn)) {
		while (n < POLL_BUDGET && cq_buffer(v, vq, &e) > 0) {
			virtq_push(vq, e.head, 0);
			n++;
		}
		if (n)
			vdev_signal_call(v, vq, true);
		return n;
	}
	while (cq->n_events && (r = cq_buffer(v, vq, &e)) != 0) {
		if (r < 0)
			return n;
		virtq_write(&e, 0, &cq->events[0], CQE_SIZE);
		virtq_push(vq, e.head, CQE_SIZE);
		memmove(cq->events, cq->events + 1, --cq->n_events * sizeof(cq->events[0]));
		force = true;
		n++;
	}
	while (!cq->in_error && n < POLL_BUDGET) {
		if (!cq->have_held) {
			if (eng_cq_poll(cq->eng, &cq->held, 1) != 1)
				break;
			cq->have_held = true;
		}
		r = cq_buffer(v, vq, &e);
		if (r <= 0)
			break;
		vdev_cqe_from_wc(&cq->held, &c);
		vdev_lie_cqe(&c);
		cq->have_held = false;
		virtq_write(&e, 0, &c, CQE_SIZE);
		virtq_push(vq, e.head, CQE_SIZE);
		v->stats.cqes++;
		if (vdev_cq_arm_met(cq, c.status))
			notify = true;
		n++;
	}
	if (notify || force) {
		cq->armed = 0;
		cq->solicited = false;
		if (vdev_signal_call(v, vq, true))
			v->stats.cq_interrupts++;
	}
	return n;
}

unsigned int vdev_poll(struct vdev *v, uint64_t *next_timer)
{
	unsigned int n = 0;
	uint32_t i;

	*next_timer = 0;
	if (!vdev_live(v))
		return 0;
	if (virtq_ready(&v->vu.vqs[VIRTIO_RDMA_CTRL_VQ]))
		n += poll_ctrl(v);
	for (i = 0; i < v->qp_hi && !v->broken && !vdev_rings(v); i++) {
		if (v->qps[i].srq) {	/* an SRQ's slot: its RQ only */
			n += vdev_discard_sq(v, i, POLL_BUDGET);
			n += poll_wq(v, &v->qps[i], i, true);
			continue;
		}
		if (!v->qps[i].eng) {
			n += vdev_discard_wq(v, i, POLL_BUDGET);
			continue;
		}
		n += poll_wq(v, &v->qps[i], i, true);
		n += poll_wq(v, &v->qps[i], i, false);
	}
	if (!v->broken && vdev_rings(v))
		n += vdev_poll_rings(v);
	if (v->broken)
		return n;
	n += eng_poll(v->eng, next_timer);
	if (vdev_rings(v))	/* the CQs with something to do alone */
		return n + vdev_poll_ring_cqs(v);
	for (i = 0; i < v->cq_hi && !v->broken; i++)
		if (v->cqs[i].eng)
			n += poll_cq(v, &v->cqs[i], i);
		else
			n += vdev_discard_cq(v, i, POLL_BUDGET);
	return n;
}

void vdev_rx(struct vdev *v, const struct roce_pkt *pkt)
{
	struct vdev_qp *qp;

	if (!vdev_live(v))
		return;
	/* A receive the driver posted before the peer sent must be there when
	 * the message arrives (UC and UD have no RNR to fall back on): take
	 * what the receive queue holds first. */
	qp = vdev_qp_get(v, pkt->h.dqpn);
	if (qp && eng_qp_srq(qp->eng))
		qp = &v->qps[eng_srq_slot(eng_qp_srq(qp->eng))];
	if (qp && qp->rq_ring.entries)
		vdev_poll_rq_ring(v, (uint32_t)(qp - v->qps));
	else if (qp && !vdev_rings(v))
		poll_wq(v, qp, (uint32_t)(qp - v->qps), true);
	if (!v->broken)
		eng_rx(v->eng, pkt);
}

/* The queues the device polls now. */
static void set_kicks(struct virtq *vq, bool wanted, bool *work)
{
	if (!virtq_ready(vq))
		return;
	virtq_set_kicks(vq, wanted);
	if (wanted && virtq_has_work(vq))
		*work = true;
}

bool vdev_want_kicks(struct vdev *v, bool wanted)
{
	bool work = false;
	uint32_t i;

	if (!vdev_live(v))
		return false;
	set_kicks(&v->vu.vqs[VIRTIO_RDMA_CTRL_VQ], wanted, &work);
	if (vdev_rings(v)) {
		/* the wake queue and the doorbell pages; event buffers are
		 * the device's to take when it has an event, not work, but
		 * for an event owed for want of one */
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_WAKE_VQ], wanted, &work);
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_EVENT_VQ], wanted && v->n_ev_owed, &work);
		return vdev_rings_want_kicks(v, wanted) || work;
	}
	/* Slots without an object too: what is posted there goes back. */
	for (i = 0; i < v->qp_hi; i++) {
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_SQ_VQ(v->max_cq, i)], wanted, &work);
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_RQ_VQ(v->max_cq, i)], wanted, &work);
	}
	for (i = 0; i < v->cq_hi; i++) {
		struct vdev_cq *cq = &v->cqs[i];
		bool buffers = false;

		/* Empty buffers are a CQ's normal state, not work; work is a
		 * completion or event that waited for one and now has it, or
		 * a buffer on a slot without a CQ (it goes back). */
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_CQ_VQ(i)], wanted, &buffers);
		if (buffers && (!cq->eng || cq->have_held || cq->n_events))
			work = true;
	}
	return work;
}
