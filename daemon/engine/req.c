// SPDX-License-Identifier: GPL-2.0-only
/*
 * Requester (IBA 9.7.7 and 9.8): turns send WQEs into packets. A message is
 * cut into path-MTU packets FIRST, MIDDLE..., LAST (or ONLY); the payload
 * goes straight from the MRs into the frame (roce_build gathers it). RC
 * keeps at most ENG_SEND_WINDOW PSNs unacknowledged; UC and UD complete a
 * message once it is sent.
 */
#include <errno.h>
#include <string.h>

#include "engine_int.h"
#include "psn.h"

static uint8_t req_opcode(const struct eng_qp *qp, const struct eng_swqe *w, bool first, bool last)
{
	uint8_t base = qp->init.qp_type == ENG_QPT_UC ? ROCE_UC_SEND_FIRST : ROCE_RC_SEND_FIRST;
	bool imm = w->wr.opcode == ENG_WR_SEND_WITH_IMM ||
		   w->wr.opcode == ENG_WR_RDMA_WRITE_WITH_IMM;
	bool inv = w->wr.opcode == ENG_WR_SEND_WITH_INV;	/* RC only */

	if (eng_qpt_ud(qp->init.qp_type))
		return imm ? ROCE_UD_SEND_ONLY_IMM : ROCE_UD_SEND_ONLY;
	switch (w->wr.opcode) {
	case ENG_WR_RDMA_READ:
		return ROCE_RC_READ_REQUEST;
	case ENG_WR_ATOMIC_CMP_AND_SWP:
		return ROCE_RC_COMPARE_SWAP;
	case ENG_WR_ATOMIC_FETCH_AND_ADD:
		return ROCE_RC_FETCH_ADD;
	case ENG_WR_SEND:
	case ENG_WR_SEND_WITH_IMM:
	case ENG_WR_SEND_WITH_INV:
		if (first && last)
			return inv ? ROCE_RC_SEND_ONLY_INV :
			       base + (imm ? ROCE_RC_SEND_ONLY_IMM : ROCE_RC_SEND_ONLY);
		if (first)
			return base + ROCE_RC_SEND_FIRST;
		if (last)
			return inv ? ROCE_RC_SEND_LAST_INV :
			       base + (imm ? ROCE_RC_SEND_LAST_IMM : ROCE_RC_SEND_LAST);
		return base + ROCE_RC_SEND_MIDDLE;
	default:	/* RDMA WRITE, with or without immediate */
		if (first && last)
			return base + (imm ? ROCE_RC_WRITE_ONLY_IMM : ROCE_RC_WRITE_ONLY);
		if (first)
			return base + ROCE_RC_WRITE_FIRST;
		if (last)
			return base + (imm ? ROCE_RC_WRITE_LAST_IMM : ROCE_RC_WRITE_LAST);
		return base + ROCE_RC_WRITE_MIDDLE;
	}
}

/* Point frags at bytes [off, off + len) of the WQE's payload, checking each
 * SGE's lkey against the QP's PD. Returns the number of pieces or -EFAULT. */
static int gather(struct eng_qp *qp, struct eng_swqe *w, uint64_t off, uint32_t len,
		  struct roce_frag *frags)
{
	unsigned int i, n = 0;

	if (w->wr.send_flags & ENG_SEND_INLINE) {
		frags[0].data = w->inline_data + off;
		frags[0].len = len;
		return len ? 1 : 0;
	}
	for (i = 0; i < w->wr.num_sge && len; i++) {
		const struct eng_sge *s = &w->sge[i];
		struct eng_mr *mr;
		uint32_t take;
		int got;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		take = s->length - off < len ? (uint32_t)(s->length - off) : len;
		if (eng_mr_check(qp->dev, qp->pd, s->lkey, false, s->addr + off, take, 0, &mr))
			return -EFAULT;
		got = eng_mr_frags(mr, s->addr + off, take, frags + n, ENG_GATHER_MAX - n);
		if (got < 0)
			return -EFAULT;
		n += (unsigned int)got;
		len -= take;
		off = 0;
	}
	return len ? -EFAULT : (int)n;
}

void eng_req_retire(struct eng_qp *qp, enum eng_wc_status status)
{
	struct eng_swqe *w = &qp->swqe[qp->sq.head];

	if (status != ENG_WC_SUCCESS || qp->init.sq_sig_all ||
	    (w->wr.send_flags & ENG_SEND_SIGNALED)) {
		struct eng_wc wc = {
			.wr_id = w->wr.wr_id, .status = status, .qp_num = qp->qpn,
			.opcode = eng_send_wc_opcode(w->wr.opcode),
			/* READs and atomics: what landed in the SGEs (8 for an atomic) */
			.byte_len = eng_wr_is_rd_atomic(w->wr.opcode) ? (uint32_t)w->length : 0,
		};

		if (eng_cq_post(qp->init.send_cq, &wc, false))
			eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
	}
	qp->sq.head = (qp->sq.head + 1) % qp->sq.size;
	qp->sq.count--;
	if (qp->req.wqe) {
		qp->req.wqe--;
	} else {
		/* The requester was (re)sending this one: an ACK overtook it. Go on
		 * with the next WQE from its start, never below the retired PSNs. */
		qp->req.offset = 0;
		if (w->started && psn_before(qp->req.psn, psn_add(w->last_psn, 1)))
			qp->req.psn = psn_add(w->last_psn, 1);
	}
	w->started = false;
}

/* A WQE that cannot be sent: complete it with status and stop the QP. */
static void req_fail(struct eng_qp *qp, enum eng_wc_status status, enum eng_counter c)
{
	eng_count(qp, c);
	/* Complete it at the head, in order: everything before it is done
	 * for UC/UD; for RC it waits for them (IBA completes in order). */
	if (qp->req.wqe == 0) {
		eng_req_retire(qp, status);
		if (qp->init.qp_type == ENG_QPT_RC)
			eng_qp_error(qp, ENG_EVENT_NONE);
		else
			eng_qp_sq_error(qp);
	}
}

void eng_req_rewind(struct eng_qp *qp, uint32_t psn)
{
	uint32_t i, mtu = eng_qp_mtu(qp);

	for (i = 0; i < qp->sq.count; i++) {
		struct eng_swqe *w = &qp->swqe[(qp->sq.head + i) % qp->sq.size];

		if (!w->started)
			break;
		if (!psn_before(psn, w->first_psn) && !psn_after(psn, w->last_psn)) {
			qp->req.wqe = i;
			qp->req.offset = (uint64_t)psn_diff(psn, w->first_psn) * mtu;
			qp->req.psn = psn;
			eng_cc_rewound(qp);
			eng_cc_sync(qp);
			return;
		}
	}
}

/* READs and atomics started and not yet complete, before the WQE at index
 * upto: both hold a responder resource at the peer (max_rd_atomic). */
static uint32_t reads_outstanding(const struct eng_qp *qp, uint32_t upto)
{
	uint32_t i, n = 0;

	for (i = 0; i < upto; i++) {
		const struct eng_swqe *w = &qp->swqe[(qp->sq.head + i) % qp->sq.size];

		n += eng_wr_is_rd_atomic(w->wr.opcode);
	}
	return n;
}

/* REG_MR, LOCAL_INV and BIND_MW run when they reach the head of the send
 * queue: every WQE before them is complete, so none that uses the MR or
 * window is overtaken (IBA 10.8.3.3 asks that only of a fenced one; in
 * order is simplest). A refused one completes with LOC_QP_OP_ERR
 * (BIND_MW: MW_BIND_ERR) and the QP goes to ERR, as in rxe. */
static int local_op(struct eng_qp *qp, struct eng_swqe *w)
{
	enum eng_wc_status st;

	if (qp->req.wqe)
		return 0;	/* earlier WQEs are still outstanding */
	if (w->wr.opcode == ENG_WR_REG_MR) {
		st = eng_mr_reg_fast(qp, &w->wr);
	} else if (w->wr.opcode == ENG_WR_BIND_MW) {
		st = eng_mw_bind(qp, &w->wr);
	} else {
		st = eng_mr_invalidate(qp, w->wr.invalidate_rkey, false);
		if (st != ENG_WC_SUCCESS)
			eng_count(qp, ENG_CNT_ERR_LOCAL_INV);
	}
	eng_req_retire(qp, st);
	if (st != ENG_WC_SUCCESS)
		eng_qp_error(qp, ENG_EVENT_NONE);
	return 1;
}

/* Whether the requester will go straight on after the last packet of w, so
 * that packet need not ask for an ACK (IBA 9.7.5.1: an ACK acknowledges
 * every packet before it; the requester chooses where to ask): a burst of
 * short unsignaled messages then gets an ACK per ENG_ACKREQ_EVERY packets,
 * at each signaled one (its completion is what the application waits for,
 * and what frees its send queue) and at its end, not one per message.
 * Asked for anyway where the requester may stop and wait — a resend, SQD, a
 * READ or atomic (its response is the answer) and a WQE next that waits for
 * this one's completion (a local operation). */
static bool more_follows(const struct eng_qp *qp, const struct eng_swqe *w)
{
	const struct eng_swqe *next;

	if (qp->req.wqe + 1 >= qp->sq.count || qp->attr.qp_state != ENG_QPS_RTS ||
	    eng_wr_is_rd_atomic(w->wr.opcode) || psn_before(qp->req.psn, qp->req.max_psn))
		return false;
	next = &qp->swqe[(qp->sq.head + qp->req.wqe + 1) % qp->sq.size];
	return !eng_wr_is_local(next->wr.opcode);
}

static bool signaled(const struct eng_qp *qp, const struct eng_swqe *w)
{
	return qp->init.sq_sig_all || (w->wr.send_flags & ENG_SEND_SIGNALED);
}

int eng_req_step(struct eng_qp *qp)
{
	struct roce_frag payload[ENG_GATHER_MAX];
	struct roce_hdrs h = { .pkey = ENG_PKEY_DEFAULT };
	uint32_t mtu = eng_qp_mtu(qp), plen = 0;
	bool rc = qp->init.qp_type == ENG_QPT_RC, first, last, rd_atomic;
	struct eng_swqe *w;
	int np = 0, r;

	/* SQD (IBA 10.3.1): the message in progress is finished, no new one
	 * starts. */
	if ((qp->attr.qp_state != ENG_QPS_RTS &&
	     (qp->attr.qp_state != ENG_QPS_SQD || !qp->req.offset)) ||
	    qp->req.wqe >= qp->sq.count || !mtu)
		return 0;
	w = &qp->swqe[(qp->sq.head + qp->req.wqe) % qp->sq.size];
	if (eng_wr_is_local(w->wr.opcode))
		return local_op(qp, w);
	rd_atomic = eng_wr_is_rd_atomic(w->wr.opcode);
	if (rc && (psn_diff(qp->req.psn, qp->comp.psn) >= ENG_SEND_WINDOW ||
		   !eng_cc_may_send(qp)))
		return 0;
	if (!w->started) {
		if (eng_qpt_ud(qp->init.qp_type) && w->length > mtu) {
			req_fail(qp, ENG_WC_LOC_LEN_ERR, ENG_CNT_ERR_LOCAL_LENGTH);
			return 0;
		}
		/* 10.8.3.3: at most max_rd_atomic READs and atomics in flight; a
		 * fenced WQE waits for every one before it. */
		if ((rd_atomic &&
		     reads_outstanding(qp, qp->req.wqe) >= qp->attr.max_rd_atomic) ||
		    ((w->wr.send_flags & ENG_SEND_FENCE) && reads_outstanding(qp, qp->req.wqe)))
			return 0;
		w->rd_next = qp->req.psn;
		w->rd_end = psn_add(w->last_psn, 1);
		w->first_psn = qp->req.psn;
		w->last_psn = psn_add(qp->req.psn, eng_npkts(w->length, mtu) - 1);
		w->started = true;
	}

	if (!rd_atomic) {	/* READs and atomics carry no payload */
		plen = w->length - qp->req.offset < mtu ? (uint32_t)(w->length - qp->req.offset) : mtu;
		np = gather(qp, w, qp->req.offset, plen, payload);
		if (np < 0) {
			req_fail(qp, ENG_WC_LOC_PROT_ERR, ENG_CNT_ERR_LOCAL_PROTECTION);
			return 0;
		}
	}
	first = qp->req.offset == 0;
	last = rd_atomic || qp->req.offset + plen == w->length;
	h.opcode = req_opcode(qp, w, first, last);
	h.psn = qp->req.psn;
	h.se = last && (w->wr.send_flags & ENG_SEND_SOLICITED);
	h.ackreq = rc && ((last && (signaled(qp, w) || !more_follows(qp, w))) ||
			  qp->req.noack + 1 >= ENG_ACKREQ_EVERY || eng_cc_ack_wanted(qp));
	if (eng_qpt_ud(qp->init.qp_type)) {
		h.dqpn = w->wr.ud.remote_qpn;
		/* IBA 10.2.5: a Q_Key with the high bit set means the QP's own;
		 * QP1 sends only the well-known one (13.4.7). */
		h.deth.qkey = (w->wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey :
			      w->wr.ud.remote_qkey;
		if (qp->init.qp_type == ENG_QPT_GSI)
			h.deth.qkey = ENG_GSI_QKEY;
		h.deth.sqpn = qp->qpn;
	} else {
		h.dqpn = qp->attr.dest_qp_num;
	}
	if (first && (w->wr.opcode == ENG_WR_RDMA_WRITE ||
		      w->wr.opcode == ENG_WR_RDMA_WRITE_WITH_IMM ||
		      w->wr.opcode == ENG_WR_RDMA_READ)) {
		h.reth.va = w->wr.rdma.remote_addr;
		h.reth.rkey = w->wr.rdma.rkey;
		h.reth.len = (uint32_t)w->length;
	}
	if (w->wr.opcode == ENG_WR_RDMA_READ) {
		/* A resent READ asks only for what is still missing (9.7.5.1.5),
		 * ENG_READ_RESEND_MAX responses at a time. */
		uint64_t rest = w->length - qp->req.offset;

		if (psn_before(qp->req.psn, qp->req.max_psn) &&
		    rest > (uint64_t)ENG_READ_RESEND_MAX * mtu)
			rest = (uint64_t)ENG_READ_RESEND_MAX * mtu;
		h.reth.va = w->wr.rdma.remote_addr + qp->req.offset;
		h.reth.rkey = w->wr.rdma.rkey;
		h.reth.len = (uint32_t)rest;
	}
	if (eng_wr_is_atomic(w->wr.opcode)) {	/* AtomicETH (9.4.5) */
		h.atomic.va = w->wr.atomic.remote_addr;
		h.atomic.rkey = w->wr.atomic.rkey;
		if (w->wr.opcode == ENG_WR_ATOMIC_CMP_AND_SWP) {
			h.atomic.swap_add = w->wr.atomic.swap;
			h.atomic.compare = w->wr.atomic.compare_add;
		} else {
			h.atomic.swap_add = w->wr.atomic.compare_add;
		}
	}
	h.imm = w->wr.imm_data;
	h.ieth_rkey = w->wr.invalidate_rkey;	/* IETH, 9.4.x: SEND_WITH_INV only */

	r = eng_xmit(qp, eng_qpt_ud(qp->init.qp_type) ? &w->ah : &qp->attr.ah_attr, &h,
		     payload, (unsigned int)np);
	if (r)
		return r;
	qp->req.noack = h.ackreq ? 0 : qp->req.noack + 1;
	if (qp->init.qp_type == ENG_QPT_GSI)
		eng_count(qp, ENG_CNT_GSI_SENT);
	if (rc)
		eng_cc_sent(qp, h.psn, psn_before(qp->req.psn, qp->req.max_psn));
	if (psn_before(qp->req.psn, qp->req.max_psn))
		eng_count(qp, ENG_CNT_RETRANSMITTED_PKTS);
	if (rd_atomic) {
		w->rd_end = psn_add(qp->req.psn, w->wr.opcode == ENG_WR_RDMA_READ ?
					  eng_npkts(h.reth.len, mtu) : 1);
		qp->req.psn = psn_add(w->last_psn, 1);
		qp->req.offset = w->length;
	} else {
		qp->req.psn = psn_add(qp->req.psn, 1);
		qp->req.offset += plen;
	}
	if (psn_after(qp->req.psn, qp->req.max_psn))
		qp->req.max_psn = qp->req.psn;
	eng_cc_sync(qp);
	if (qp->req.offset == w->length) {	/* the whole message is out */
		qp->req.wqe++;
		qp->req.offset = 0;
		if (!rc)	/* no ACK will come: done once sent */
			eng_req_retire(qp, ENG_WC_SUCCESS);
	}
	return 1;
}
