// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completer (IBA 9.7.5.3, 9.7.6 and 9.9): ACKs, NAKs and READ responses to
 * completions of the requester's WQEs, in posting order, and the retransmit
 * and RNR timers.
 *
 * - An ACK covers every PSN up to its own, except a READ's or an atomic's:
 *   they complete only with their data, so an ACK beyond one whose responses
 *   are missing is an implied NAK (9.7.5.1.5), as is a gap in READ
 *   responses. A READ is asked for again from the gap, a part at a time
 *   (ENG_READ_RESEND_MAX); an atomic is sent again whole, and the responder
 *   answers it from its saved result (9.4.5).
 * - A PSN-sequence NAK goes back to the PSN it names (go-back-N); an RNR NAK
 *   waits the responder's RNR time first (rnr_retry 7: for ever, 9.7.5.2.8);
 *   an error NAK completes the WQE with its status and the QP goes to ERR.
 * - The timer fires when nothing is acknowledged for 4.096 us * 2^timeout;
 *   after retry_cnt resends in a row, RETRY_EXC_ERR (timeouts of a QP the
 *   path's window held back are forgiven a few times: cc.c).
 * - Losses, timeouts and CNPs cut the path's window; progress opens it (cc.c).
 */
#include <endian.h>
#include <string.h>

#include "engine_int.h"
#include "psn.h"

static struct eng_swqe *head_wqe(struct eng_qp *qp)
{
	return qp->sq.count ? &qp->swqe[qp->sq.head] : NULL;
}

static bool is_read(const struct eng_swqe *w)
{
	return w && w->wr.opcode == ENG_WR_RDMA_READ;
}

static bool is_rd_atomic(const struct eng_swqe *w)
{
	return w && eng_wr_is_rd_atomic(w->wr.opcode);
}

/* Complete every WQE, READs and atomics excepted, whose last PSN is before
 * psn_end. */
static void retire_before(struct eng_qp *qp, uint32_t psn_end)
{
	struct eng_swqe *w;

	while ((w = head_wqe(qp)) && w->started && !is_rd_atomic(w) &&
	       psn_before(w->last_psn, psn_end))
		eng_req_retire(qp, ENG_WC_SUCCESS);
}

void eng_comp_progress(struct eng_qp *qp, uint32_t psn)
{
	uint64_t now;

	if (!psn_after(psn, qp->comp.psn))
		return;
	eng_cc_acked(qp, (uint32_t)psn_diff(psn, qp->comp.psn));
	qp->comp.psn = psn;
	/* the responder had more than the requester went back for (a probe,
	 * a lost ACK): go on from there, not with packets it has */
	if (psn_before(qp->req.psn, psn))
		eng_req_rewind(qp, psn);
	eng_cc_sync(qp);
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.gap_handled = false;
	now = eng_now(qp->dev);
	qp->comp.deadline = qp->req.psn != qp->comp.psn && qp->attr.timeout ?
			    now + eng_timeout_ns(qp->attr.timeout) : 0;
}

/* Fail the oldest WQE with status (counted as c) and stop the QP. */
static void comp_fail(struct eng_qp *qp, enum eng_wc_status status, enum eng_counter c)
{
	eng_count(qp, c);
	if (qp->sq.count)
		eng_req_retire(qp, status);
	eng_qp_error(qp, ENG_EVENT_NONE);
}

/* Responses stopped coming for the READ at the head: ask again, once per gap. */
static void implied_nak(struct eng_qp *qp, uint32_t psn)
{
	if (qp->comp.gap_handled)
		return;
	qp->comp.gap_handled = true;
	eng_count(qp, ENG_CNT_IMPLIED_NAK);
	eng_cc_cut(qp, ENG_CC_LOSS);
	eng_req_rewind(qp, psn);
}

/* Acknowledged up to (not including) psn. Progress stops at an unfinished
 * READ or atomic at the head: an ACK or NAK beyond it means its responses
 * were lost (an implied NAK, 9.7.5.1.5), and they must be asked for again.
 * Returns where the requester must resume. */
static uint32_t comp_acked(struct eng_qp *qp, uint32_t psn)
{
	struct eng_swqe *w;

	retire_before(qp, psn);
	w = head_wqe(qp);
	if (is_rd_atomic(w) && w->started && psn_after(psn, w->rd_next)) {
		eng_comp_progress(qp, w->rd_next);
		implied_nak(qp, w->rd_next);
		return w->rd_next;
	}
	eng_comp_progress(qp, psn);
	return psn;
}

/* The responder is still answering our READs, in or out of sequence (the
 * rest of a stream past a gap, a replay of an older request): a running
 * retransmit timer starts over, as rxe's does on every response. Without
 * this a slow responder's stream outlasts the timeout, each expiry asks
 * again, and it queues one more full replay per request (9.7.6.1.3). The
 * retry count is not restored: only in-sequence data is progress. */
static void comp_alive(struct eng_qp *qp)
{
	if (qp->comp.deadline)
		qp->comp.deadline = eng_now(qp->dev) +
				    eng_timeout_ns(qp->attr.timeout);
	eng_cc_alive(qp);	/* and the probe timer too */
}

static void read_response(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	struct eng_swqe *w;
	uint32_t mtu = eng_qp_mtu(qp), psn = pkt->h.psn, want;
	uint64_t off;
	enum eng_wc_status st;

	/* Its AETH (FIRST, LAST, ONLY) acknowledges what came before the READ. */
	retire_before(qp, psn);
	w = head_wqe(qp);
	if (is_read(w) && w->started && psn_after(psn, w->last_psn)) {
		/* A later READ answers: the rest of ours was lost. */
		eng_count(qp, ENG_CNT_DROP_OUT_OF_SEQUENCE);
		implied_nak(qp, w->rd_next);
		goto alive;
	}
	if (!is_read(w) || !w->started || psn_before(psn, w->first_psn)) {
		eng_count(qp, ENG_CNT_DROP_UNEXPECTED_RESPONSE);
		goto alive;
	}
	if (psn_before(psn, w->rd_next)) {
		eng_count(qp, ENG_CNT_DROP_DUPLICATE);
		goto alive;
	}
	if (psn_after(psn, w->rd_next)) {
		eng_count(qp, ENG_CNT_DROP_OUT_OF_SEQUENCE);
		implied_nak(qp, w->rd_next);
		goto alive;
	}
	off = (uint64_t)psn_diff(psn, w->first_psn) * mtu;
	want = w->length - off < mtu ? (uint32_t)(w->length - off) : mtu;
	if (pkt->payload_len != want) {
		eng_count(qp, ENG_CNT_DROP_BAD_LENGTH);
		goto alive;
	}
	st = eng_scatter(qp, w->sge, w->wr.num_sge, off, pkt, 0, pkt->payload_len);
	if (st != ENG_WC_SUCCESS) {
		comp_fail(qp, st, st == ENG_WC_LOC_LEN_ERR ? ENG_CNT_ERR_LOCAL_LENGTH :
			  ENG_CNT_ERR_LOCAL_PROTECTION);
		return;
	}
	w->rd_next = psn_add(psn, 1);
	eng_comp_progress(qp, w->rd_next);
	if (psn == w->last_psn)
		eng_req_retire(qp, ENG_WC_SUCCESS);
	else if (w->rd_next == w->rd_end)
		eng_req_rewind(qp, w->rd_next);	/* a shortened resend is in: the next part */
	return;	/* progress re-armed the timer */

alive:
	comp_alive(qp);
}

/* An ATOMIC ACKNOWLEDGE (9.4.5): its AETH acknowledges what came before
 * it, and the atomic at the head completes with the original value, which
 * goes into the local SGEs in host (little-endian) order, as ibverbs gives
 * it; on the wire it is big-endian (roce_wire.h decoded it). */
static void atomic_ack(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint32_t psn = pkt->h.psn;
	uint64_t v = htole64(pkt->h.atomic_orig);
	struct roce_frag f = { (uint8_t *)&v, sizeof(v) };
	struct roce_pkt g = { .frags = &f, .nfrags = 1, .payload_len = sizeof(v), .op = pkt->op };
	enum eng_wc_status st;
	struct eng_swqe *w;

	if (AETH_TYPE(pkt->h.aeth.syndrome) != 0) {	/* only ever positive */
		eng_count(qp, ENG_CNT_DROP_UNEXPECTED_RESPONSE);
		return;
	}
	if (comp_acked(qp, psn) != psn)
		return;		/* a READ before it lost data: that first */
	w = head_wqe(qp);
	if (!w || !eng_wr_is_atomic(w->wr.opcode) || !w->started || w->first_psn != psn) {
		eng_count(qp, ENG_CNT_DROP_UNEXPECTED_RESPONSE);
		return;
	}
	st = eng_scatter(qp, w->sge, w->wr.num_sge, 0, &g, 0, sizeof(v));
	if (st != ENG_WC_SUCCESS) {
		comp_fail(qp, st, st == ENG_WC_LOC_LEN_ERR ? ENG_CNT_ERR_LOCAL_LENGTH :
			  ENG_CNT_ERR_LOCAL_PROTECTION);
		return;
	}
	eng_comp_progress(qp, psn_add(psn, 1));
	eng_req_retire(qp, ENG_WC_SUCCESS);
}

static void rnr_nak(struct eng_qp *qp, uint32_t psn, uint8_t code)
{
	uint32_t resume = comp_acked(qp, psn);

	if (resume != psn)
		return;		/* a READ before it lost data: that first */
	if (qp->attr.rnr_retry != 7) {	/* 7 means try for ever */
		if (!qp->comp.rnr_left) {
			comp_fail(qp, ENG_WC_RNR_RETRY_EXC_ERR, ENG_CNT_ERR_RNR_EXCEEDED);
			return;
		}
		qp->comp.rnr_left--;
	}
	eng_count(qp, ENG_CNT_RETRY_RNR);
	qp->comp.deadline = 0;
	qp->comp.rnr_until = eng_now(qp->dev) + eng_rnr_ns(code);
	eng_req_rewind(qp, psn);
}

void eng_comp_rx(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint8_t syn = pkt->h.aeth.syndrome;
	uint32_t psn = pkt->h.psn;
	enum eng_qp_state s = qp->attr.qp_state;

	if (s != ENG_QPS_RTS && s != ENG_QPS_SQD) {
		eng_count(qp, ENG_CNT_DROP_QP_STATE);
		return;
	}
	if (qp->init.qp_type != ENG_QPT_RC || pkt->op->qpt != ROCE_QPT_RC) {
		eng_count(qp, ENG_CNT_DROP_WRONG_TRANSPORT);
		return;
	}
	/* 9.7.5.3: for a PSN not yet sent, a ghost; before the oldest
	 * outstanding, stale. Neither changes anything. */
	if (!psn_before(psn, qp->req.max_psn)) {
		eng_count(qp, ENG_CNT_DROP_GHOST_ACK);
		return;
	}
	if (pkt->op->mask & ROCE_F_READ) {
		read_response(qp, pkt);
		return;
	}
	eng_count(qp, ENG_CNT_RX_ACKS);
	if (psn_before(psn, qp->comp.psn) && AETH_TYPE(syn) == 0) {
		eng_count(qp, ENG_CNT_DROP_STALE_ACK);
		return;
	}
	if (pkt->op->mask & ROCE_F_ATOMIC) {
		atomic_ack(qp, pkt);
		return;
	}

	switch (AETH_TYPE(syn)) {
	case 0:
		comp_acked(qp, psn_add(psn, 1));
		return;
	case 1:
		eng_count(qp, ENG_CNT_NAK_RCVD_RNR);
		rnr_nak(qp, psn, syn & 31);
		return;
	case 3:
		break;
	default:	/* reserved */
		eng_count(qp, ENG_CNT_DROP_UNEXPECTED_RESPONSE);
		return;
	}
	/* A NAK acknowledges everything before its PSN. */
	if (comp_acked(qp, psn) != psn)
		return;		/* a READ before it lost data: that first */
	switch (syn) {
	case AETH_NAK_PSN:
		eng_count(qp, ENG_CNT_NAK_RCVD_PSN);
		eng_cc_cut(qp, ENG_CC_LOSS);
		eng_req_rewind(qp, psn);
		break;
	case AETH_NAK_ACCESS:
		eng_count(qp, ENG_CNT_NAK_RCVD_ACCESS);
		comp_fail(qp, ENG_WC_REM_ACCESS_ERR, ENG_CNT_ERR_REMOTE_ACCESS);
		break;
	case AETH_NAK_OPERATION:
		eng_count(qp, ENG_CNT_NAK_RCVD_OPERATION);
		comp_fail(qp, ENG_WC_REM_OP_ERR, ENG_CNT_ERR_REMOTE_OPERATION);
		break;
	default:	/* invalid request; reserved codes are treated alike */
		eng_count(qp, ENG_CNT_NAK_RCVD_INVALID);
		comp_fail(qp, ENG_WC_REM_INV_REQ_ERR, ENG_CNT_ERR_REMOTE_INVALID);
		break;
	}
}

void eng_comp_timers(struct eng_qp *qp, uint64_t now)
{
	if (qp->init.qp_type != ENG_QPT_RC ||
	    (qp->attr.qp_state != ENG_QPS_RTS && qp->attr.qp_state != ENG_QPS_SQD))
		return;
	if (qp->comp.rnr_until && now >= qp->comp.rnr_until)
		qp->comp.rnr_until = 0;		/* the requester resumes */
	eng_cc_timers(qp, now);
	if (!qp->comp.deadline || now < qp->comp.deadline)
		return;
	qp->comp.deadline = 0;
	if (qp->req.psn == qp->comp.psn && qp->req.max_psn == qp->comp.psn)
		return;				/* nothing outstanding after all */
	if (eng_cc_timeout(qp)) {
		if (!qp->comp.retry_left) {
			comp_fail(qp, ENG_WC_RETRY_EXC_ERR, ENG_CNT_ERR_RETRY_EXCEEDED);
			return;
		}
		qp->comp.retry_left--;
	}
	/* This resend asks for a READ's missing responses too: what arrives
	 * out of sequence before it is answered is no new gap. */
	qp->comp.gap_handled = true;
	eng_count(qp, ENG_CNT_RETRY_TIMEOUT);
	eng_req_rewind(qp, qp->comp.psn);
}
