// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's entry points: received frames to the responder or the
 * completer of their QP, the send loop, packet output, counters.
 */
#include <errno.h>
#include <string.h>

#include "engine_int.h"

static const char *const counter_names[ENG_CNT_MAX] = {
	[ENG_CNT_TX_PKTS] = "tx_packets",
	[ENG_CNT_RX_PKTS] = "rx_packets",
	[ENG_CNT_TX_ACKS] = "tx_acks",
	[ENG_CNT_RX_ACKS] = "rx_acks",
	[ENG_CNT_TX_NO_BUFFER] = "tx_no_buffer",
	[ENG_CNT_DROP_NO_QP] = "drop_no_qp",
	[ENG_CNT_DROP_ADDRESS] = "drop_address",
	[ENG_CNT_DROP_QP_STATE] = "drop_qp_state",
	[ENG_CNT_DROP_WRONG_TRANSPORT] = "drop_wrong_transport",
	[ENG_CNT_DROP_DUPLICATE] = "drop_duplicate",
	[ENG_CNT_DROP_OUT_OF_SEQUENCE] = "drop_out_of_sequence",
	[ENG_CNT_DROP_UC_GAP] = "drop_uc_gap",
	[ENG_CNT_DROP_QKEY] = "drop_qkey",
	[ENG_CNT_DROP_PKEY] = "drop_pkey",
	[ENG_CNT_DROP_UD_NO_RECV] = "drop_ud_no_recv",
	[ENG_CNT_DROP_BAD_LENGTH] = "drop_bad_length",
	[ENG_CNT_DROP_GHOST_ACK] = "drop_ghost_ack",
	[ENG_CNT_DROP_STALE_ACK] = "drop_stale_ack",
	[ENG_CNT_DROP_UNEXPECTED_RESPONSE] = "drop_unexpected_response",
	[ENG_CNT_NAK_SENT_PSN] = "nak_sent_psn_sequence",
	[ENG_CNT_NAK_SENT_RNR] = "nak_sent_rnr",
	[ENG_CNT_NAK_SENT_INVALID] = "nak_sent_invalid_request",
	[ENG_CNT_NAK_SENT_ACCESS] = "nak_sent_remote_access",
	[ENG_CNT_NAK_SENT_OPERATION] = "nak_sent_remote_operation",
	[ENG_CNT_NAK_RCVD_PSN] = "nak_rcvd_psn_sequence",
	[ENG_CNT_NAK_RCVD_RNR] = "nak_rcvd_rnr",
	[ENG_CNT_NAK_RCVD_INVALID] = "nak_rcvd_invalid_request",
	[ENG_CNT_NAK_RCVD_ACCESS] = "nak_rcvd_remote_access",
	[ENG_CNT_NAK_RCVD_OPERATION] = "nak_rcvd_remote_operation",
	[ENG_CNT_RETRY_TIMEOUT] = "retry_timeout",
	[ENG_CNT_RETRY_RNR] = "retry_rnr",
	[ENG_CNT_RETRANSMITTED_PKTS] = "retransmitted_packets",
	[ENG_CNT_IMPLIED_NAK] = "implied_nak",
	[ENG_CNT_DUPLICATE_READ] = "duplicate_read",
	[ENG_CNT_DROP_DUPLICATE_READ] = "drop_duplicate_read",
	[ENG_CNT_CC_HELD] = "cc_held",
	[ENG_CNT_CC_CUTS] = "cc_cuts",
	[ENG_CNT_CC_CNP_CUTS] = "cc_cnp_cuts",
	[ENG_CNT_CC_FORGIVEN] = "cc_timeouts_forgiven",
	[ENG_CNT_CC_PROBES] = "cc_probes",
	[ENG_CNT_CNP_RCVD] = "cnp_received",
	[ENG_CNT_CNP_SENT] = "cnp_sent",
	[ENG_CNT_ECN_CE] = "ecn_ce_received",
	[ENG_CNT_DUPLICATE_ATOMIC] = "duplicate_atomic",
	[ENG_CNT_ATOMIC_MISALIGNED] = "atomic_misaligned",
	[ENG_CNT_ERR_RETRY_EXCEEDED] = "err_retry_exceeded",
	[ENG_CNT_ERR_RNR_EXCEEDED] = "err_rnr_retry_exceeded",
	[ENG_CNT_ERR_LOCAL_PROTECTION] = "err_local_protection",
	[ENG_CNT_ERR_LOCAL_LENGTH] = "err_local_length",
	[ENG_CNT_ERR_REMOTE_ACCESS] = "err_remote_access",
	[ENG_CNT_ERR_REMOTE_INVALID] = "err_remote_invalid_request",
	[ENG_CNT_ERR_REMOTE_OPERATION] = "err_remote_operation",
	[ENG_CNT_ERR_CQ_OVERRUN] = "err_cq_overrun",
	[ENG_CNT_ERR_REG_MR] = "err_reg_mr",
	[ENG_CNT_ERR_LOCAL_INV] = "err_local_inv",
	[ENG_CNT_ERR_REMOTE_INV] = "err_remote_inv",
	[ENG_CNT_ERR_BIND_MW] = "err_bind_mw",
	[ENG_CNT_GSI_SENT] = "qp1_sent",
	[ENG_CNT_GSI_RECEIVED] = "qp1_received",
};

const char *eng_counter_name(enum eng_counter c)
{
	return c < ENG_CNT_MAX ? counter_names[c] : "?";
}

void eng_dev_set_port_mtu(struct eng_dev *dev, enum eng_mtu mtu)
{
	if (eng_mtu_bytes(mtu))
		dev->port_mtu = mtu;
}

const struct eng_counters *eng_dev_counters(const struct eng_dev *dev)
{
	return &dev->cnt;
}

const struct eng_counters *eng_qp_counters(const struct eng_qp *qp)
{
	return &qp->cnt;
}

enum eng_wc_opcode eng_send_wc_opcode(enum eng_wr_opcode op)
{
	switch (op) {
	case ENG_WR_RDMA_WRITE:
	case ENG_WR_RDMA_WRITE_WITH_IMM:
		return ENG_WC_RDMA_WRITE;
	case ENG_WR_RDMA_READ:
		return ENG_WC_RDMA_READ;
	case ENG_WR_ATOMIC_CMP_AND_SWP:
		return ENG_WC_COMP_SWAP;
	case ENG_WR_ATOMIC_FETCH_AND_ADD:
		return ENG_WC_FETCH_ADD;
	case ENG_WR_LOCAL_INV:
		return ENG_WC_LOCAL_INV;
	case ENG_WR_BIND_MW:
		return ENG_WC_BIND_MW;
	case ENG_WR_REG_MR:
		return ENG_WC_REG_MR;
	default:
		return ENG_WC_SEND;
	}
}

/* Count on the QP (and so the device), or on the device alone. */
static void count(struct eng_dev *dev, struct eng_qp *qp, enum eng_counter c)
{
	if (qp)
		eng_count(qp, c);
	else
		dev->cnt.c[c]++;
}

uint32_t eng_qp_mtu(const struct eng_qp *qp)
{
	enum eng_mtu m = qp->attr.path_mtu;

	/* UD has no path MTU; a port MTU lowered later caps the path's. */
	if (eng_qpt_ud(qp->init.qp_type) || !m || (qp->dev->port_mtu && m > qp->dev->port_mtu))
		m = qp->dev->port_mtu;
	return eng_mtu_bytes(m);
}

int eng_xmit(struct eng_qp *qp, const struct eng_ah_attr *ah, const struct roce_hdrs *h,
	     const struct roce_frag *payload, unsigned int npayload)
{
	const struct eng_ops *ops = qp->dev->ops;
	struct roce_frag frags[XMIT_MAX_FRAGS];
	struct roce_addr a = { .vlan = -1 };
	uint32_t len = 0, i;
	unsigned int n, nused;
	int r;

	if (ops->gid(qp->dev->ctx, ah->sgid_index, a.sgid, a.smac))
		return -EINVAL;
	memcpy(a.dmac, ah->dmac, 6);
	memcpy(a.dgid, ah->dgid, 16);
	/* A17.4.2: the source port is flow entropy; one flow per QP. */
	a.sport = 0xc000 | ((qp->qpn ^ (qp->qpn >> 14)) & 0x3fff);
	a.tclass = eng_cc_tclass(qp->dev, ah->traffic_class);
	a.hop_limit = ah->hop_limit ? ah->hop_limit : 64;
	a.flow_label = ah->flow_label;
	a.ip_id = (uint16_t)qp->cnt.c[ENG_CNT_TX_PKTS];
	for (i = 0; i < npayload; i++)
		len += payload[i].len;
	len = roce_header_len(&a, h->opcode) + len + (4 - len % 4) % 4 + ROCE_ICRC_LEN;
	n = qp->dev->tx.tx_alloc(qp->dev->tx.ctx, a.dgid, len, frags, XMIT_MAX_FRAGS);
	if (!n) {
		count(qp->dev, qp, ENG_CNT_TX_NO_BUFFER);
		return -EAGAIN;
	}
	r = roce_build(frags, n, &nused, &a, h, payload, npayload);
	if (r < 0)
		return r;	/* a bug of ours: the host keeps its buffers */
	qp->dev->tx.tx_send(qp->dev->tx.ctx, frags, nused, (uint32_t)r);
	count(qp->dev, qp, ENG_CNT_TX_PKTS);
	return 0;
}

int eng_send_ack(struct eng_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct roce_hdrs h = {
		.opcode = ROCE_RC_ACK,
		.pkey = ENG_PKEY_DEFAULT,
		.dqpn = qp->attr.dest_qp_num,
		.psn = psn,
		.aeth = { .syndrome = syndrome, .msn = qp->resp.msn },
	};
	int r = eng_xmit(qp, &qp->attr.ah_attr, &h, NULL, 0);

	if (!r)
		count(qp->dev, qp, ENG_CNT_TX_ACKS);
	return r;
}

void eng_qp_error(struct eng_qp *qp, enum eng_async_event event)
{
	struct eng_qp_attr a = { .qp_state = ENG_QPS_ERR };

	eng_qp_modify(qp, &a, ENG_QP_STATE);
	if (event != ENG_EVENT_NONE && qp->dev->ops->async_error)
		qp->dev->ops->async_error(qp->dev->ctx, NULL, qp, event);
}

void eng_qp_fatal(struct eng_qp *qp)
{
	eng_qp_wake(qp);
	eng_qp_error(qp, ENG_EVENT_QP_FATAL);
}

uint64_t eng_timeout_ns(uint8_t timeout)
{
	/* IBA 9.7.6.1.3: 4.096 us * 2^timeout; 0 means never. */
	return timeout ? 4096ull << timeout : 0;
}

uint64_t eng_rnr_ns(uint8_t code)
{
	/* IBA 9.7.5.2.8 table 45, in microseconds; code 0 is the longest. */
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
		1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
		40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return us[code & 31] * 1000ull;
}

enum eng_mem_err eng_mr_copy_from_pkt(const struct eng_mr *mr, uint64_t addr,
				      const struct roce_pkt *pkt, uint32_t pkt_off, uint32_t len)
{
	uint64_t contig;

	/* Straight from the frame into the mapped memory: no bounce buffer. */
	while (len) {
		uint8_t *p = mr->map(mr->mem, addr - mr->iova, len, &contig);

		if (!p || !contig)
			return ENG_MEM_UNMAPPED;
		if (contig > len)
			contig = len;
		if (roce_pkt_copy_payload(pkt, pkt_off, p, (uint32_t)contig))
			return ENG_MEM_BAD_RANGE;
		addr += contig;
		pkt_off += (uint32_t)contig;
		len -= (uint32_t)contig;
	}
	return ENG_MEM_OK;
}

enum eng_wc_status eng_scatter(struct eng_qp *qp, const struct eng_sge *sge, unsigned int nsge,
			       uint64_t off, const struct roce_pkt *pkt, uint32_t pkt_off,
			       uint32_t len)
{
	unsigned int i;

	for (i = 0; i < nsge && len; i++) {
		const struct eng_sge *s = &sge[i];
		struct eng_mr *mr;
		uint32_t take;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		take = s->length - off < len ? (uint32_t)(s->length - off) : len;
		if (eng_mr_check(qp->dev, qp->pd, s->lkey, false, s->addr + off, take,
				 ENG_ACCESS_LOCAL_WRITE, &mr) ||
		    eng_mr_copy_from_pkt(mr, s->addr + off, pkt, pkt_off, take))
			return ENG_WC_LOC_PROT_ERR;
		pkt_off += take;
		len -= take;
		off = 0;
	}
	return len ? ENG_WC_LOC_LEN_ERR : ENG_WC_SUCCESS;
}

int eng_mr_frags(const struct eng_mr *mr, uint64_t va, uint32_t len, struct roce_frag *frags,
		 unsigned int max)
{
	unsigned int n = 0;
	uint64_t contig;

	while (len) {
		uint8_t *p = mr->map(mr->mem, va - mr->iova, len, &contig);

		if (!p || !contig || n == max)
			return -EFAULT;
		if (contig > len)
			contig = len;
		frags[n].data = p;
		frags[n++].len = (uint32_t)contig;
		va += contig;
		len -= (uint32_t)contig;
	}
	return (int)n;
}

/* A connected QP takes packets only from its peer's GID to its own (rxe's
 * check_addr; IBA 9.6.1.5 for the GRH): anyone else who learned the QPN
 * could otherwise inject requests or fake ACKs. Before RTR it has no peer;
 * the state checks drop those packets. */
static bool addr_ok(const struct eng_qp *qp, const struct roce_pkt *pkt)
{
	const struct eng_ah_attr *ah = &qp->attr.ah_attr;
	enum eng_qp_state s = qp->attr.qp_state;
	uint8_t gid[16], mac[6];

	if (eng_qpt_ud(qp->init.qp_type) || s < ENG_QPS_RTR || s == ENG_QPS_ERR)
		return true;
	if (memcmp(pkt->addr.sgid, ah->dgid, 16))
		return false;
	return !qp->dev->ops->gid(qp->dev->ctx, ah->sgid_index, gid, mac) &&
	       !memcmp(pkt->addr.dgid, gid, 16);
}

void eng_rx(struct eng_dev *dev, const struct roce_pkt *pkt)
{
	struct eng_qp *qp = NULL;

	qp = eng_qp_from_num(dev, pkt->h.dqpn);
	if (!qp) {
		count(dev, NULL, ENG_CNT_DROP_NO_QP);
		return;
	}
	count(dev, qp, ENG_CNT_RX_PKTS);
	eng_qp_wake(qp);	/* an ACK, a request: either may leave it work */
	if (!addr_ok(qp, pkt)) {
		eng_count(qp, ENG_CNT_DROP_ADDRESS);
		return;
	}
	/* A CNP names the QP whose packets met congestion (annex A17.9) */
	if (pkt->op->qpt == ROCE_QPT_CNP) {
		eng_cc_rx(qp, pkt);
		return;
	}
	/* IBA 9.6.1.1.4, as rxe: the one P_Key of the table, 0xffff, matches
	 * 0xffff and 0x7fff (a limited member); QP1 too (IBA 13.4.7: its
	 * packets carry a P_Key of the table) */
	if ((pkt->h.pkey & 0x7fff) != (ENG_PKEY_DEFAULT & 0x7fff)) {
		eng_count(qp, ENG_CNT_DROP_PKEY);
		return;
	}
	if ((pkt->addr.tclass & 3) == 3)
		eng_cc_rx(qp, pkt);	/* CE: tell the sender */
	if (pkt->op->mask & ROCE_F_RESP)
		eng_comp_rx(qp, pkt);
	else
		eng_resp_rx(qp, pkt);
}

/* True while an SQD QP still has a message going out or unacknowledged. */
bool eng_sq_draining(const struct eng_qp *qp)
{
	return qp->req.offset || qp->req.psn != qp->comp.psn;
}

/* IBA 11.6.3: in SQD with en_sqd_async_notify, say once when drained. */
static void sqd_check(struct eng_qp *qp)
{
	if (qp->req.drained_sent || eng_sq_draining(qp) || !qp->attr.en_sqd_async_notify)
		return;
	qp->req.drained_sent = true;
	if (qp->dev->ops->async_error)
		qp->dev->ops->async_error(qp->dev->ctx, NULL, qp, ENG_EVENT_SQ_DRAINED);
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* The first QP handle in [i, end) that eng_poll should visit, or end. */
static uint32_t next_active(const struct eng_dev *dev, uint32_t i, uint32_t end)
{
	while (i < end) {
		uint64_t w = dev->active[i / 64] >> (i % 64);

		if (w)
			return i + (uint32_t)__builtin_ctzll(w) < end ? i + (uint32_t)__builtin_ctzll(w) :
									  end;
		i = (i / 64 + 1) * 64;
	}
	return end;
}

/* Nothing for eng_poll to do for the QP until something wakes it: nothing
 * left to send, no ACK or READ response owed, no timer running, no drain
 * to report. */
static bool qp_idle(const struct eng_qp *qp, bool reads_left)
{
	return qp->req.wqe >= qp->sq.count && !reads_left && !qp->resp.ack_pending &&
	       !qp->comp.deadline && !qp->comp.rnr_until && !qp->comp.probe_at &&
	       qp->attr.qp_state != ENG_QPS_SQD;
}

/* One QP's turn: READ responses, its ACK, timers, what it has to send. */
static void poll_qp(struct eng_qp *qp, uint64_t now, uint64_t *next, unsigned int *work)
{
	unsigned int budget = ENG_POLL_QP_BUDGET;
	bool reads_left;

	/* READ responses first: an ACK for later PSNs must not overtake them
	 * (9.7.5.1.5). Then one coalesced ACK for what came in. */
	reads_left = eng_resp_send_reads(qp, &budget);
	if (!reads_left && qp->resp.ack_pending &&
	    !eng_send_ack(qp, AETH_ACK, (qp->resp.psn - 1) & ROCE_PSN_MASK))
		qp->resp.ack_pending = false;
	eng_comp_timers(qp, now);
	if (!qp->comp.rnr_until)
		while (budget && eng_req_step(qp) > 0)
			budget--;
	/* its budget spent: it has more to send at once (a QP that sent less
	 * is waiting for ACKs or buffers, which wake us) */
	if (!budget)
		(*work)++;
	if (qp->attr.qp_state == ENG_QPS_SQD)
		sqd_check(qp);
	/* Anything in flight runs the retransmit timer (9.7.6.1.3). */
	if (qp->init.qp_type == ENG_QPT_RC &&
	    (qp->attr.qp_state == ENG_QPS_RTS || qp->attr.qp_state == ENG_QPS_SQD) &&
	    qp->req.psn != qp->comp.psn && !qp->comp.deadline && !qp->comp.rnr_until &&
	    qp->attr.timeout)
		qp->comp.deadline = now + eng_timeout_ns(qp->attr.timeout);
	if (qp->attr.qp_state == ENG_QPS_RTS || qp->attr.qp_state == ENG_QPS_SQD)
		*next = earliest(*next, earliest(earliest(qp->comp.deadline, qp->comp.rnr_until),
						 qp->comp.probe_at));
	if (qp_idle(qp, reads_left))
		qp->dev->active[qp->index / 64] &= ~(1ull << (qp->index % 64));
}

uint32_t eng_dev_active_qps(const struct eng_dev *dev)
{
	uint32_t i, n = 0;

	for (i = 0; i < ENG_MAX_QP / 64; i++)
		n += (uint32_t)__builtin_popcountll(dev->active[i]);
	return n;
}

unsigned int eng_poll(struct eng_dev *dev, uint64_t *next_timer)
{
	uint64_t now = eng_now(dev), next = 0;
	uint32_t i, cap = dev->qps.cap, first;
	unsigned int work = 0;

	/* each poll starts one QP further: no QP always comes first to the
	 * transmit buffers and to room in a shared window; only the QPs that
	 * may have work are visited */
	if (cap)
		dev->poll_first = (dev->poll_first + 1) % cap;
	first = dev->poll_first;
	for (i = next_active(dev, first, cap); i < cap; i = next_active(dev, i + 1, cap))
		poll_qp(dev->qps.slot[i], now, &next, &work);
	for (i = next_active(dev, 0, first); i < first; i = next_active(dev, i + 1, first))
		poll_qp(dev->qps.slot[i], now, &next, &work);
	eng_cc_publish(dev, now);
	*next_timer = next;
	return work;
}
