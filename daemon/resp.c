// SPDX-License-Identifier: GPL-2.0-only
/*
 * Responder (IBA 9.7.5 and 9.8): request packets to memory and receive
 * completions, checked in a fixed order, each refusal counted: QP state,
 * transport, PSN (9.7.5.1), opcode sequence (9.8.3), lengths, then keys and
 * bounds. RC answers with ACKs (coalesced: one per poll) and NAKs.
 */
#include <errno.h>
#include <string.h>

#include "engine_int.h"
#include "psn.h"

/* Scatter len bytes into the head receive WQE's SGEs at offset off. */
static enum eng_wc_status scatter(struct eng_qp *qp, struct eng_rwqe *w, uint64_t off,
				  const struct roce_pkt *pkt, uint32_t pkt_off, uint32_t len)
{
	uint8_t buf[4096];
	unsigned int i;

	if (off > w->length || len > w->length - off)
		return ENG_WC_LOC_LEN_ERR;
	for (i = 0; i < w->num_sge && len; i++) {
		const struct eng_sge *s = &w->sge[i];
		struct eng_mr *mr;
		uint32_t take;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		take = s->length - off < len ? (uint32_t)(s->length - off) : len;
		if (eng_mr_check(qp->dev, qp->pd, s->lkey, false, s->addr + off, take,
				 ENG_ACCESS_LOCAL_WRITE, &mr))
			return ENG_WC_LOC_PROT_ERR;
		while (take) {
			uint32_t n = take < sizeof(buf) ? take : sizeof(buf);

			if (roce_pkt_copy_payload(pkt, pkt_off, buf, n) ||
			    eng_mr_copy_in(mr, s->addr + off, buf, n))
				return ENG_WC_LOC_PROT_ERR;
			pkt_off += n;
			off += n;
			take -= n;
			len -= n;
		}
		off = 0;
	}
	return len ? ENG_WC_LOC_LEN_ERR : ENG_WC_SUCCESS;
}

static void recv_complete(struct eng_qp *qp, enum eng_wc_status st, enum eng_wc_opcode op,
			  uint32_t byte_len, const struct roce_pkt *pkt)
{
	struct eng_rwqe *w = &qp->rwqe[qp->rq.head];
	struct eng_wc wc = {
		.wr_id = w->wr_id, .status = st, .opcode = op, .byte_len = byte_len,
		.qp_num = qp->qpn,
	};

	if (pkt->op->mask & ROCE_F_IMM) {
		wc.imm_data = pkt->h.imm;
		wc.wc_flags |= ENG_WC_WITH_IMM;
	}
	if (qp->init.qp_type == ENG_QPT_UD) {
		wc.src_qp = pkt->h.deth.sqpn;
		wc.wc_flags |= ENG_WC_GRH;
	}
	if (eng_cq_post(qp->init.recv_cq, &wc, pkt->h.se))
		eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
	qp->rq.head = (qp->rq.head + 1) % qp->rq.size;
	qp->rq.count--;
}

/* IBA 11.4.1.1 / rxe: the 40-byte GRH area at the head of a UD receive
 * buffer holds the IPv6 header, or for IPv4 the IPv4 header in its last 20
 * bytes. */
static void build_grh(const struct roce_pkt *pkt, uint8_t grh[40])
{
	memset(grh, 0, 40);
	memcpy(pkt->ipv6 ? grh : grh + 20, pkt->frags[0].data + pkt->l3_off, pkt->ipv6 ? 40 : 20);
}

static void ud_rx(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint8_t grh[40];
	struct roce_frag f = { grh, sizeof(grh) };
	struct roce_pkt g = { .frags = &f, .nfrags = 1, .payload_len = sizeof(grh), .op = pkt->op };
	enum eng_wc_status st;

	if (pkt->h.deth.qkey != qp->attr.qkey) {
		eng_count(qp, ENG_CNT_DROP_QKEY);
		return;
	}
	if (!qp->rq.count) {
		eng_count(qp, ENG_CNT_DROP_UD_NO_RECV);
		return;
	}
	build_grh(pkt, grh);
	st = scatter(qp, &qp->rwqe[qp->rq.head], 0, &g, 0, sizeof(grh));
	if (st == ENG_WC_SUCCESS)
		st = scatter(qp, &qp->rwqe[qp->rq.head], sizeof(grh), pkt, 0, pkt->payload_len);
	recv_complete(qp, st, ENG_WC_RECV, sizeof(grh) + pkt->payload_len, pkt);
	if (st != ENG_WC_SUCCESS) {
		eng_count(qp, st == ENG_WC_LOC_LEN_ERR ? ENG_CNT_ERR_LOCAL_LENGTH :
			  ENG_CNT_ERR_LOCAL_PROTECTION);
		eng_qp_error(qp);
	}
}

/* An RC request error the requester must hear about (IBA 9.7.5.2.2-4): NAK,
 * then the responder's QP is in error. UC just drops the message. */
static void resp_error(struct eng_qp *qp, uint8_t syndrome, enum eng_counter c)
{
	eng_count(qp, c);
	if (qp->init.qp_type != ENG_QPT_RC) {
		qp->resp.in_msg = 0;
		return;
	}
	eng_send_ack(qp, syndrome, qp->resp.psn);
	eng_qp_error(qp);
}

void eng_resp_rx(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_opcode_info *op = pkt->op;
	enum eng_qp_state s = qp->attr.qp_state;
	bool rc = qp->init.qp_type == ENG_QPT_RC;
	uint32_t mtu = eng_qp_mtu(qp), kind;
	enum eng_wc_status st;
	int32_t d;

	if (s != ENG_QPS_RTR && s != ENG_QPS_RTS && s != ENG_QPS_SQD && s != ENG_QPS_SQE) {
		eng_count(qp, ENG_CNT_DROP_QP_STATE);
		return;
	}
	if ((qp->init.qp_type == ENG_QPT_RC && op->qpt != ROCE_QPT_RC) ||
	    (qp->init.qp_type == ENG_QPT_UC && op->qpt != ROCE_QPT_UC) ||
	    (qp->init.qp_type == ENG_QPT_UD && op->qpt != ROCE_QPT_UD)) {
		eng_count(qp, ENG_CNT_DROP_WRONG_TRANSPORT);
		return;
	}
	if (qp->init.qp_type == ENG_QPT_UD) {
		ud_rx(qp, pkt);
		return;
	}

	d = psn_diff(pkt->h.psn, qp->resp.psn);
	if (rc && d < 0) {
		/* 9.7.5.1.2: a duplicate is answered, not executed again. */
		eng_count(qp, ENG_CNT_DROP_DUPLICATE);
		qp->resp.ack_pending = true;
		return;
	}
	if (rc && d > 0) {
		/* 9.7.5.1.3: one NAK per gap, then silence until the PSN comes. */
		eng_count(qp, ENG_CNT_DROP_OUT_OF_SEQUENCE);
		if (!qp->resp.nak_sent && !eng_send_ack(qp, AETH_NAK_PSN, qp->resp.psn)) {
			qp->resp.nak_sent = true;
			eng_count(qp, ENG_CNT_NAK_SENT_PSN);
		}
		return;
	}
	if (!rc && d) {
		/* UC: a lost packet loses its message; resume at the next one. */
		qp->resp.in_msg = 0;
		qp->resp.psn = pkt->h.psn;
		if (!(op->mask & ROCE_F_START)) {
			qp->resp.psn = psn_add(pkt->h.psn, 1);
			eng_count(qp, ENG_CNT_DROP_UC_GAP);
			return;
		}
	}
	qp->resp.nak_sent = false;

	/* 9.8.3: FIRST/ONLY open a message, MIDDLE/LAST continue one. */
	kind = op->mask & (ROCE_F_SEND | ROCE_F_WRITE);
	if (!kind || ((op->mask & ROCE_F_START) ? qp->resp.in_msg != 0 : qp->resp.in_msg != kind)) {
		if (!rc && qp->resp.in_msg && (op->mask & ROCE_F_START)) {
			qp->resp.in_msg = 0;	/* UC: the open message was cut short */
		} else {
			resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
			return;
		}
	}
	/* 9.7.5.1.? lengths: FIRST and MIDDLE carry exactly one MTU. */
	if (pkt->payload_len > mtu || (!(op->mask & ROCE_F_END) && pkt->payload_len != mtu)) {
		eng_count(qp, ENG_CNT_DROP_BAD_LENGTH);
		resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
		return;
	}

	if (op->mask & ROCE_F_START) {
		qp->resp.offset = 0;
		if (op->mask & ROCE_F_RETH) {
			const struct roce_hdrs *h = &pkt->h;

			qp->resp.wva = h->reth.va;
			qp->resp.wresid = h->reth.len;
			qp->resp.wmr = NULL;
			if (h->reth.len && (!(qp->attr.qp_access_flags & ENG_ACCESS_REMOTE_WRITE) ||
			    eng_mr_check(qp->dev, qp->pd, h->reth.rkey, true, h->reth.va,
					 h->reth.len, ENG_ACCESS_REMOTE_WRITE, &qp->resp.wmr))) {
				resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
				return;
			}
		}
	}
	/* A receive WQE is needed for SENDs and for WRITE with immediate; with
	 * none posted, RC says RNR and the requester tries again (9.7.5.2.8). */
	if (((kind == ROCE_F_SEND && (op->mask & ROCE_F_START)) ||
	     (kind == ROCE_F_WRITE && (op->mask & ROCE_F_IMM))) && !qp->rq.count) {
		if (rc) {
			eng_count(qp, ENG_CNT_NAK_SENT_RNR);
			eng_send_ack(qp, AETH_RNR_NAK | qp->attr.min_rnr_timer, pkt->h.psn);
		} else {
			eng_count(qp, ENG_CNT_DROP_UC_GAP);
			qp->resp.in_msg = 0;
			qp->resp.psn = psn_add(pkt->h.psn, 1);
		}
		return;
	}

	if (kind == ROCE_F_SEND) {
		st = scatter(qp, &qp->rwqe[qp->rq.head], qp->resp.offset, pkt, 0, pkt->payload_len);
		if (st != ENG_WC_SUCCESS) {
			recv_complete(qp, st, ENG_WC_RECV, 0, pkt);
			resp_error(qp, AETH_NAK_INVALID, st == ENG_WC_LOC_LEN_ERR ?
				   ENG_CNT_ERR_LOCAL_LENGTH : ENG_CNT_ERR_LOCAL_PROTECTION);
			return;
		}
	} else {
		uint8_t buf[4096];
		uint32_t done = 0, n;

		if (pkt->payload_len > qp->resp.wresid) {
			resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
			return;
		}
		while (done < pkt->payload_len) {
			n = pkt->payload_len - done < sizeof(buf) ? pkt->payload_len - done :
			    sizeof(buf);
			if (roce_pkt_copy_payload(pkt, done, buf, n) ||
			    eng_mr_copy_in(qp->resp.wmr, qp->resp.wva, buf, n)) {
				resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
				return;
			}
			qp->resp.wva += n;
			qp->resp.wresid -= n;
			done += n;
		}
		if ((op->mask & ROCE_F_END) && qp->resp.wresid) {
			resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
			return;
		}
	}
	qp->resp.offset += pkt->payload_len;
	qp->resp.in_msg = (op->mask & ROCE_F_END) ? 0 : kind;
	if (op->mask & ROCE_F_END) {
		if (kind == ROCE_F_SEND)
			recv_complete(qp, ENG_WC_SUCCESS, ENG_WC_RECV, (uint32_t)qp->resp.offset, pkt);
		else if (op->mask & ROCE_F_IMM)
			recv_complete(qp, ENG_WC_SUCCESS, ENG_WC_RECV_RDMA_WITH_IMM,
				      (uint32_t)qp->resp.offset, pkt);
		qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
	}
	qp->resp.psn = psn_add(pkt->h.psn, 1);
	if (rc && pkt->h.ackreq)
		qp->resp.ack_pending = true;
}
