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

/* Scatter into the head receive WQE, bounded by its length. */
static enum eng_wc_status scatter(struct eng_qp *qp, struct eng_rwqe *w, uint64_t off,
				  const struct roce_pkt *pkt, uint32_t pkt_off, uint32_t len)
{
	if (off > w->length || len > w->length - off)
		return ENG_WC_LOC_LEN_ERR;
	return eng_scatter(qp, w->sge, w->num_sge, off, pkt, pkt_off, len);
}

static void recv_complete(struct eng_qp *qp, enum eng_wc_status st, enum eng_wc_opcode op,
			  uint32_t byte_len, const struct roce_pkt *pkt)
{
	struct eng_rwqe *w = eng_rq_head(qp);
	struct eng_wc wc = {
		.wr_id = w->wr_id, .status = st, .opcode = op, .byte_len = byte_len,
		.qp_num = qp->qpn,
	};

	if (pkt->op->mask & ROCE_F_IMM) {
		wc.imm_data = pkt->h.imm;
		wc.wc_flags |= ENG_WC_WITH_IMM;
	}
	if (pkt->op->mask & ROCE_F_INV) {	/* IETH, 9.4.x: the rkey it invalidated */
		wc.invalidate_rkey = pkt->h.ieth_rkey;
		wc.wc_flags |= ENG_WC_WITH_INV;
	}
	if (eng_qpt_ud(qp->init.qp_type)) {
		wc.src_qp = pkt->h.deth.sqpn;
		wc.wc_flags |= ENG_WC_GRH | ENG_WC_WITH_NETWORK_HDR_TYPE;
		wc.network_hdr_type = pkt->ipv6 ? ENG_NETWORK_IPV6 : ENG_NETWORK_IPV4;
	}
	if (eng_cq_post(qp->init.recv_cq, &wc, pkt->h.se))
		eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
	eng_rq_retire(qp);
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
	struct eng_rwqe *w;

	if (pkt->h.deth.qkey != qp->attr.qkey) {	/* QP1's: ENG_GSI_QKEY */
		eng_count(qp, ENG_CNT_DROP_QKEY);
		return;
	}
	if (qp->init.qp_type == ENG_QPT_GSI)
		eng_count(qp, ENG_CNT_GSI_RECEIVED);
	w = eng_rq_head(qp);	/* on an SRQ: taken from it now */
	if (!w) {
		eng_count(qp, ENG_CNT_DROP_UD_NO_RECV);
		return;
	}
	build_grh(pkt, grh);
	st = scatter(qp, w, 0, &g, 0, sizeof(grh));
	if (st == ENG_WC_SUCCESS)
		st = scatter(qp, w, sizeof(grh), pkt, 0, pkt->payload_len);
	recv_complete(qp, st, ENG_WC_RECV, sizeof(grh) + pkt->payload_len, pkt);
	if (st != ENG_WC_SUCCESS) {
		eng_count(qp, st == ENG_WC_LOC_LEN_ERR ? ENG_CNT_ERR_LOCAL_LENGTH :
			  ENG_CNT_ERR_LOCAL_PROTECTION);
		eng_qp_error(qp, ENG_EVENT_NONE);
	}
}

/* An RC request error the requester must hear about (IBA 9.7.5.2.2-4): NAK
 * with the PSN that failed, then the responder's QP is in error. UC just
 * drops the message. */
static void resp_error_at(struct eng_qp *qp, uint8_t syndrome, enum eng_counter c, uint32_t psn)
{
	eng_count(qp, c);
	if (qp->init.qp_type != ENG_QPT_RC) {
		qp->resp.in_msg = 0;
		return;
	}
	eng_send_ack(qp, syndrome, psn);
	/* IBA 11.6.3.1: the responder's own QP hears of it asynchronously */
	eng_qp_error(qp, syndrome == AETH_NAK_ACCESS ? ENG_EVENT_QP_ACCESS_ERR :
			 ENG_EVENT_QP_REQ_ERR);
}

/* ... at the request PSN expected next. */
static void resp_error(struct eng_qp *qp, uint8_t syndrome, enum eng_counter c)
{
	resp_error_at(qp, syndrome, c, qp->resp.psn);
}

/* Check a READ's rkey and range (nothing for a zero-length READ). */
static int read_check(struct eng_qp *qp, const struct roce_hdrs *h)
{
	struct eng_mr *mr;

	if (!h->reth.len)
		return 0;
	if (!(qp->attr.qp_access_flags & ENG_ACCESS_REMOTE_READ) ||
	    eng_rkey_check(qp, h->reth.rkey, h->reth.va, h->reth.len, ENG_ACCESS_REMOTE_READ, &mr))
		return -EACCES;
	return 0;
}

/* A new READ (9.7.5.1.5): saved in the oldest resource slot, its responses
 * sent from eng_poll as transmit buffers allow. */
static void read_new(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint32_t mtu = eng_qp_mtu(qp), n = eng_npkts(pkt->h.reth.len, mtu);
	struct eng_rd_res *r;

	/* a message is at most 2^31 bytes (IBA 9.4.1.1, as rxe): longer, at
	 * MTU 256, its responses would wrap the PSN space */
	if (qp->resp.in_msg || !qp->attr.max_dest_rd_atomic || pkt->h.reth.len > ENG_MAX_MSG) {
		resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
		return;
	}
	if (read_check(qp, &pkt->h)) {
		resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
		return;
	}
	r = &qp->rd_res[qp->rd_res_next];
	qp->rd_res_next = (qp->rd_res_next + 1) % qp->attr.max_dest_rd_atomic;
	*r = (struct eng_rd_res){ .valid = true, .first_psn = pkt->h.psn, .npkts = n,
				  .lo = pkt->h.psn, .end = psn_add(pkt->h.psn, n),
				  .va = pkt->h.reth.va, .len = pkt->h.reth.len,
				  .rkey = pkt->h.reth.rkey, .va0 = pkt->h.reth.va,
				  .len0 = pkt->h.reth.len };
	qp->resp.psn = psn_add(pkt->h.psn, n);
	qp->resp.msn = (qp->resp.msn + 1) & ROCE_MSN_MASK;
}

/* A READ already seen: if its resource is still here, answer again from the
 * PSN asked for (9.7.5.1.5). The requester asks again for the rest of its
 * READ from the first response it lacks (all of it, or a part: comp.c asks
 * for ENG_READ_RESEND_MAX at a time): a duplicate must start exactly there
 * in the original, with its key, and end within it, or it is dropped, so
 * that no request restarts responses the original never asked for. */
static void read_duplicate(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint32_t i, mtu = eng_qp_mtu(qp);

	for (i = 0; i < qp->attr.max_dest_rd_atomic; i++) {
		struct eng_rd_res *r = &qp->rd_res[i];
		uint64_t skip;

		/* the whole READ, not just what the last duplicate asked for */
		if (!r->valid || r->atomic || psn_before(pkt->h.psn, r->lo) || !psn_before(pkt->h.psn, r->end))
			continue;
		skip = (uint64_t)psn_diff(pkt->h.psn, r->lo) * mtu;
		if (pkt->h.reth.rkey != r->rkey || skip > r->len0 ||
		    pkt->h.reth.va != r->va0 + skip || pkt->h.reth.len > r->len0 - skip) {
			eng_count(qp, ENG_CNT_DROP_DUPLICATE_READ);
			return;
		}
		if (read_check(qp, &pkt->h)) {
			resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
			return;
		}
		eng_count(qp, ENG_CNT_DUPLICATE_READ);
		r->first_psn = pkt->h.psn;
		r->npkts = eng_npkts(pkt->h.reth.len, mtu);
		r->next = 0;
		r->va = pkt->h.reth.va;
		r->len = pkt->h.reth.len;
		r->rkey = pkt->h.reth.rkey;
		return;
	}
	eng_count(qp, ENG_CNT_DROP_DUPLICATE);	/* too old: its resource was reused */
}

/* A new atomic (IBA 9.4.5): the QP's and the MR's REMOTE_ATOMIC (an
 * access NAK, as for READs and WRITEs here; rxe NAKs a QP without it as an
 * invalid request), then 8-byte alignment (an invalid request NAK, rxe's
 * class C error). Executed once; the original value is kept in a responder
 * resource like a READ's, so a duplicate is answered from it and never
 * executed again. */
static void atomic_new(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_hdrs *h = &pkt->h;
	struct eng_rd_res *r;
	struct eng_mr *mr;
	uint64_t orig;

	if (qp->resp.in_msg || !qp->attr.max_dest_rd_atomic) {
		resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
		return;
	}
	if (!(qp->attr.qp_access_flags & ENG_ACCESS_REMOTE_ATOMIC) ||
	    eng_rkey_check(qp, h->atomic.rkey, h->atomic.va, 8, ENG_ACCESS_REMOTE_ATOMIC, &mr)) {
		resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
		return;
	}
	if (h->atomic.va & 7) {
		eng_count(qp, ENG_CNT_ATOMIC_MISALIGNED);
		resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
		return;
	}
	/* The opcode number is the only thing that tells the two apart. */
	if (eng_mr_atomic(mr, h->atomic.va, h->opcode == ROCE_RC_COMPARE_SWAP, h->atomic.swap_add,
			  h->atomic.compare, &orig)) {
		resp_error(qp, AETH_NAK_OPERATION, ENG_CNT_NAK_SENT_OPERATION);
		return;
	}
	r = &qp->rd_res[qp->rd_res_next];
	qp->rd_res_next = (qp->rd_res_next + 1) % qp->attr.max_dest_rd_atomic;
	*r = (struct eng_rd_res){ .valid = true, .atomic = true, .orig = orig,
				  .first_psn = h->psn, .npkts = 1, .lo = h->psn,
				  .end = psn_add(h->psn, 1) };
	qp->resp.psn = psn_add(h->psn, 1);
	qp->resp.msn = (qp->resp.msn + 1) & ROCE_MSN_MASK;
}

/* An atomic already executed: send its saved result again if its resource
 * is still here; otherwise it is too old to answer. */
static void atomic_duplicate(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	uint32_t i;

	for (i = 0; i < qp->attr.max_dest_rd_atomic; i++) {
		struct eng_rd_res *r = &qp->rd_res[i];

		if (!r->valid || !r->atomic || r->lo != pkt->h.psn)
			continue;
		eng_count(qp, ENG_CNT_DUPLICATE_ATOMIC);
		r->next = 0;
		return;
	}
	eng_count(qp, ENG_CNT_DROP_DUPLICATE);
}

static int atomic_respond(struct eng_qp *qp, struct eng_rd_res *r)
{
	struct roce_hdrs h = {
		.opcode = ROCE_RC_ATOMIC_ACK, .pkey = ENG_PKEY_DEFAULT,
		.dqpn = qp->attr.dest_qp_num, .psn = r->first_psn,
		.aeth = { .syndrome = AETH_ACK, .msn = qp->resp.msn },
		.atomic_orig = r->orig,
	};
	int err = eng_xmit(qp, &qp->attr.ah_attr, &h, NULL, 0);

	if (!err) {
		r->next++;
		eng_count(qp, ENG_CNT_TX_ACKS);
	}
	return err;
}

static int read_respond(struct eng_qp *qp, struct eng_rd_res *r)
{
	struct roce_frag payload[ENG_GATHER_MAX];
	uint32_t mtu = eng_qp_mtu(qp), off = r->next * mtu;
	uint32_t plen = r->len - off < mtu ? r->len - off : mtu;
	struct roce_hdrs h = {
		.pkey = ENG_PKEY_DEFAULT, .dqpn = qp->attr.dest_qp_num,
		.psn = psn_add(r->first_psn, r->next),
		.aeth = { .syndrome = AETH_ACK, .msn = qp->resp.msn },
	};
	struct eng_mr *mr;
	int n = 0, err;

	if (r->atomic)
		return atomic_respond(qp, r);
	if (r->npkts == 1)
		h.opcode = ROCE_RC_READ_RESPONSE_ONLY;
	else if (r->next == 0)
		h.opcode = ROCE_RC_READ_RESPONSE_FIRST;
	else if (r->next + 1 == r->npkts)
		h.opcode = ROCE_RC_READ_RESPONSE_LAST;
	else
		h.opcode = ROCE_RC_READ_RESPONSE_MIDDLE;
	if (plen) {
		/* The MR may have been deregistered since the request came: then
		 * the READ ends in a remote access error at this response's PSN,
		 * which the requester is waiting for. */
		if (eng_rkey_check(qp, r->rkey, r->va + off, plen, ENG_ACCESS_REMOTE_READ, &mr)) {
			r->valid = false;
			resp_error_at(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS, h.psn);
			return -EFAULT;
		}
		n = eng_mr_frags(mr, r->va + off, plen, payload, ENG_GATHER_MAX);
		if (n < 0) {	/* the memory went away under the READ */
			r->valid = false;
			resp_error_at(qp, AETH_NAK_OPERATION, ENG_CNT_NAK_SENT_OPERATION, h.psn);
			return -EFAULT;
		}
	}
	err = eng_xmit(qp, &qp->attr.ah_attr, &h, payload, (unsigned int)n);
	if (!err)
		r->next++;
	return err;
}

int eng_resp_send_reads(struct eng_qp *qp, unsigned int *budget)
{
	uint32_t k, size = qp->attr.max_dest_rd_atomic;

	if (qp->init.qp_type != ENG_QPT_RC || qp->attr.qp_state == ENG_QPS_ERR ||
	    qp->attr.qp_state < ENG_QPS_RTR)
		return 0;
	/* Oldest first: the ring slot after the newest. */
	for (k = 0; k < size; k++) {
		struct eng_rd_res *r = &qp->rd_res[(qp->rd_res_next + k) % size];

		while (r->valid && r->next < r->npkts) {
			if (!*budget || read_respond(qp, r))
				return -EAGAIN;
			--*budget;
		}
	}
	return 0;
}

void eng_resp_rx(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_opcode_info *op = pkt->op;
	enum eng_qp_state s = qp->attr.qp_state;
	bool rc = qp->init.qp_type == ENG_QPT_RC;
	uint32_t mtu = eng_qp_mtu(qp), kind;
	enum eng_wc_status st;
	struct eng_mr *wmr;
	int32_t d;

	if (s != ENG_QPS_RTR && s != ENG_QPS_RTS && s != ENG_QPS_SQD && s != ENG_QPS_SQE) {
		eng_count(qp, ENG_CNT_DROP_QP_STATE);
		return;
	}
	if ((qp->init.qp_type == ENG_QPT_RC && op->qpt != ROCE_QPT_RC) ||
	    (qp->init.qp_type == ENG_QPT_UC && op->qpt != ROCE_QPT_UC) ||
	    (eng_qpt_ud(qp->init.qp_type) && op->qpt != ROCE_QPT_UD)) {
		eng_count(qp, ENG_CNT_DROP_WRONG_TRANSPORT);
		return;
	}
	if (eng_qpt_ud(qp->init.qp_type)) {
		ud_rx(qp, pkt);
		return;
	}

	d = psn_diff(pkt->h.psn, qp->resp.psn);
	if (rc && d < 0) {
		/* 9.7.5.1.2: a duplicate is answered, not executed again; a READ
		 * is answered with its data again. */
		if (op->mask & ROCE_F_READ) {
			read_duplicate(qp, pkt);
			return;
		}
		if (op->mask & ROCE_F_ATOMIC) {
			atomic_duplicate(qp, pkt);
			return;
		}
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
	if (op->mask & ROCE_F_READ) {
		read_new(qp, pkt);
		return;
	}
	if (op->mask & ROCE_F_ATOMIC) {
		atomic_new(qp, pkt);
		return;
	}

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
			struct eng_mr *mr;

			if (h->reth.len > ENG_MAX_MSG) {	/* as for READs */
				resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
				return;
			}
			qp->resp.wva = h->reth.va;
			qp->resp.wresid = h->reth.len;
			qp->resp.wrkey = h->reth.rkey;
			if (h->reth.len && (!(qp->attr.qp_access_flags & ENG_ACCESS_REMOTE_WRITE) ||
			    eng_rkey_check(qp, h->reth.rkey, h->reth.va, h->reth.len,
					   ENG_ACCESS_REMOTE_WRITE, &mr))) {
				resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
				return;
			}
		}
	}
	/* A receive WQE is needed for SENDs and for WRITE with immediate; with
	 * none posted (on the QP's RQ or its SRQ: one is taken from the SRQ
	 * here and held to the message's end), RC says RNR and the requester
	 * tries again (9.7.5.2.8, 10.2.9.5). */
	if (((kind == ROCE_F_SEND && (op->mask & ROCE_F_START)) ||
	     (kind == ROCE_F_WRITE && (op->mask & ROCE_F_IMM))) && !eng_rq_head(qp)) {
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
		st = scatter(qp, eng_rq_head(qp), qp->resp.offset, pkt, 0, pkt->payload_len);
		if (st != ENG_WC_SUCCESS) {
			recv_complete(qp, st, ENG_WC_RECV, 0, pkt);
			resp_error(qp, AETH_NAK_INVALID, st == ENG_WC_LOC_LEN_ERR ?
				   ENG_CNT_ERR_LOCAL_LENGTH : ENG_CNT_ERR_LOCAL_PROTECTION);
			return;
		}
	} else {
		if (pkt->payload_len > qp->resp.wresid) {
			resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
			return;
		}
		/* The key again for each packet: the MR may be gone since the
		 * first one (then: remote access error, IBA 9.7.5.2.4). */
		if (pkt->payload_len &&
		    (eng_rkey_check(qp, qp->resp.wrkey, qp->resp.wva, pkt->payload_len,
				    ENG_ACCESS_REMOTE_WRITE, &wmr) ||
		     eng_mr_copy_from_pkt(wmr, qp->resp.wva, pkt, 0, pkt->payload_len))) {
			resp_error(qp, AETH_NAK_ACCESS, ENG_CNT_NAK_SENT_ACCESS);
			return;
		}
		qp->resp.wva += pkt->payload_len;
		qp->resp.wresid -= pkt->payload_len;
		if ((op->mask & ROCE_F_END) && qp->resp.wresid) {
			resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
			return;
		}
	}
	qp->resp.offset += pkt->payload_len;
	qp->resp.in_msg = (op->mask & ROCE_F_END) ? 0 : kind;
	/* SEND with Invalidate (IBA 10.7.2.2): the named rkey, a VALID
	 * fast-reg MR of this QP's PD or a window bound to this QP, is FREE
	 * before the receive completes;
	 * any other key fails the receive and is NAKed invalid request (rxe:
	 * class J, REM_INV_REQ_ERR). */
	if ((op->mask & ROCE_F_INV) && (op->mask & ROCE_F_END) &&
	    eng_mr_invalidate(qp, pkt->h.ieth_rkey, true) != ENG_WC_SUCCESS) {
		eng_count(qp, ENG_CNT_ERR_REMOTE_INV);
		recv_complete(qp, ENG_WC_REM_INV_REQ_ERR, ENG_WC_RECV, 0, pkt);
		resp_error(qp, AETH_NAK_INVALID, ENG_CNT_NAK_SENT_INVALID);
		return;
	}
	if (op->mask & ROCE_F_END) {
		if (kind == ROCE_F_SEND)
			recv_complete(qp, ENG_WC_SUCCESS, ENG_WC_RECV, (uint32_t)qp->resp.offset, pkt);
		else if (op->mask & ROCE_F_IMM)
			recv_complete(qp, ENG_WC_SUCCESS, ENG_WC_RECV_RDMA_WITH_IMM,
				      (uint32_t)qp->resp.offset, pkt);
		qp->resp.msn = (qp->resp.msn + 1) & ROCE_MSN_MASK;
	}
	qp->resp.psn = psn_add(pkt->h.psn, 1);
	if (rc && pkt->h.ackreq)
		qp->resp.ack_pending = true;
}
