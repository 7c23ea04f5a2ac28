// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completer (IBA 9.7.5.3 and 9.9): ACKs and NAKs from the responder to
 * completions of the requester's WQEs, in posting order. An ACK covers every
 * PSN up to its own; a PSN-sequence NAK sends again from the PSN it names
 * (go-back-N, 9.7.5.2.1); an error NAK completes the WQE with the matching
 * status and puts the QP in error.
 */
#include <string.h>

#include "engine_int.h"
#include "psn.h"

/* Complete every WQE whose last PSN is before psn_end (exclusive). */
static void retire_before(struct eng_qp *qp, uint32_t psn_end)
{
	while (qp->sq.count) {
		struct eng_swqe *w = &qp->swqe[qp->sq.head];

		if (!w->started || !psn_before(w->last_psn, psn_end))
			break;
		eng_req_retire(qp, ENG_WC_SUCCESS);
	}
}

/* Go back to psn: the WQE holding it and the offset of that packet. */
static void rewind_to(struct eng_qp *qp, uint32_t psn)
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
			eng_count(qp, ENG_CNT_RETRANSMITTED_PKTS);
			return;
		}
	}
}

void eng_comp_rx(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint8_t syn = pkt->h.aeth.syndrome;
	uint32_t psn = pkt->h.psn;
	enum eng_qp_state s = qp->attr.qp_state;

	if (qp->init.qp_type != ENG_QPT_RC || pkt->op->qpt != ROCE_QPT_RC ||
	    (s != ENG_QPS_RTS && s != ENG_QPS_SQD)) {
		eng_count(qp, s == ENG_QPS_RTS || s == ENG_QPS_SQD ?
			  ENG_CNT_DROP_WRONG_TRANSPORT : ENG_CNT_DROP_QP_STATE);
		return;
	}
	if (!(pkt->op->mask & ROCE_F_ACK)) {
		eng_count(qp, ENG_CNT_DROP_UNEXPECTED_RESPONSE);	/* READ responses: later */
		return;
	}
	eng_count(qp, ENG_CNT_RX_ACKS);
	/* 9.7.5.3: an ACK for a PSN not yet sent is a ghost, one before the
	 * oldest outstanding is stale; neither changes anything. */
	if (!psn_before(psn, qp->req.psn)) {
		eng_count(qp, ENG_CNT_DROP_GHOST_ACK);
		return;
	}
	if (psn_before(psn, psn_add(qp->comp.psn, PSN_MASK)) && AETH_TYPE(syn) == 0) {
		eng_count(qp, ENG_CNT_DROP_STALE_ACK);
		return;
	}

	switch (AETH_TYPE(syn)) {
	case 0:		/* ACK */
		retire_before(qp, psn_add(psn, 1));
		if (psn_after(psn_add(psn, 1), qp->comp.psn))
			qp->comp.psn = psn_add(psn, 1);
		break;
	case 3:		/* NAK */
		retire_before(qp, psn);
		if (psn_after(psn, qp->comp.psn))
			qp->comp.psn = psn;
		switch (syn) {
		case AETH_NAK_PSN:
			eng_count(qp, ENG_CNT_NAK_RCVD_PSN);
			rewind_to(qp, psn);
			break;
		case AETH_NAK_ACCESS:
			eng_count(qp, ENG_CNT_NAK_RCVD_ACCESS);
			eng_count(qp, ENG_CNT_ERR_REMOTE_ACCESS);
			if (qp->sq.count)
				eng_req_retire(qp, ENG_WC_REM_ACCESS_ERR);
			eng_qp_error(qp);
			break;
		case AETH_NAK_OPERATION:
			eng_count(qp, ENG_CNT_NAK_RCVD_OPERATION);
			eng_count(qp, ENG_CNT_ERR_REMOTE_OPERATION);
			if (qp->sq.count)
				eng_req_retire(qp, ENG_WC_REM_OP_ERR);
			eng_qp_error(qp);
			break;
		default:	/* invalid request, and reserved codes */
			eng_count(qp, ENG_CNT_NAK_RCVD_INVALID);
			eng_count(qp, ENG_CNT_ERR_REMOTE_INVALID);
			if (qp->sq.count)
				eng_req_retire(qp, ENG_WC_REM_INV_REQ_ERR);
			eng_qp_error(qp);
			break;
		}
		break;
	default:	/* RNR NAK: resent from that PSN (the RNR timer comes with the retry timers) */
		eng_count(qp, ENG_CNT_NAK_RCVD_RNR);
		retire_before(qp, psn);
		rewind_to(qp, psn);
		eng_count(qp, ENG_CNT_RETRY_RNR);
		break;
	}
}
