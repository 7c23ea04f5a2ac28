// SPDX-License-Identifier: GPL-2.0-only
/*
 * Congestion control of the requester: one window per destination (a
 * "path": the QPs of this device that send to one GID), in packets, shared
 * by every RC QP sending there, as TCP keeps one per path. Without it N QPs
 * into one receiver put N windows of ENG_SEND_WINDOW packets into it at
 * once; a receiver that drains more slowly (a TCG guest's 256-entry
 * virtio-net ring) drops, every QP goes back N into the same full queue,
 * and after retry_cnt timeouts without progress RETRY_EXC (issue 26).
 *
 * - The window starts at ENG_CC_INIT (one QP's window: a lone QP sends as
 *   before) with ssthresh there too: new paths start alike, none grabs a
 *   queue by slow start. It grows by ENG_CC_AI packets per window
 *   acknowledged (more than TCP's one: more cuts in a run, so paths that
 *   share a bottleneck converge to equal shares sooner), up to ENG_CC_MAX;
 *   after a timeout, by one per packet acknowledged up to ssthresh.
 * - A loss (a PSN-sequence NAK, an implied NAK) halves it, once per window
 *   of packets (those in flight at the cut must be acknowledged before the
 *   next cut); a timeout takes it to ENG_CC_MIN if nothing on the path was
 *   acknowledged since the QP's last ACK (else it is a loss). A CNP
 *   (annex A17) cuts it by an eighth, at most once per window.
 * - A QP sends while the path has room, or when it has nothing in flight
 *   (so that none starves behind the others) and the path has fewer than
 *   ENG_CC_MAX packets in flight: thousands of QPs starting at once (issue
 *   30: 4096 of them, a message each) would otherwise put thousands of
 *   packets into one receiver, which drops half, and their synchronized
 *   timeouts resend into the same full queue until RETRY_EXC. A resend
 *   after a loss goes through the same gate, so retransmissions are paced
 *   by the window too.
 * - A QP waiting for ACKs for longer than the path's probe timeout (from its
 *   RTT, at least ENG_CC_PTO_MIN_NS) sends its oldest unacknowledged packet
 *   again, once, asking for an ACK, and goes on where it was (a tail-loss
 *   probe, RFC 8985): the ACK says how far the responder got, or the gap
 *   draws a NAK. A probe cuts nothing and resends nothing else (a slow ACK
 *   is no loss); READs and atomics at the head are left to their implied
 *   NAKs and the IB retransmit timer, which stays as it was, for dead peers.
 *   The QPs of a path send at most a window (cwnd) of probes per probe
 *   timeout between them; a QP that finds none left waits for the next
 *   period, its backoff unchanged.
 * - ECN (annex A17.9, the DCQCN model ConnectX implements): every frame
 *   goes out ECN-capable (ECT(0)) unless its traffic class says otherwise;
 *   a packet that arrives marked CE (a switch's queue was filling) is
 *   answered with a CNP to the QP that sent it (for UD, the one its DETH
 *   and addresses name), at most one per receiving QP per
 *   cnp_interval_ns; a CNP received for one of our QPs cuts its path's
 *   window by an eighth, once per window of packets. Where nobody marks,
 *   none of this costs anything. eng_dev_set_cc turns it off.
 * - ACKs clock the window: a packet asks for one (AckReq) when the window
 *   will be full after it, and at least every half of the QP's share of
 *   it; otherwise a QP held mid-message would wait for an ACK that the
 *   responder owes only at the message's end (or every ENG_ACKREQ_EVERY).
 * - A retransmit timeout of a QP that the window held back since its last
 *   progress, while other QPs of its path made progress, is not counted
 *   against retry_cnt (the destination answers; the shared window, not the
 *   peer, kept this QP waiting), up to ENG_CC_FORGIVE times in a row. A
 *   destination that answers nobody counts every timeout: a dead peer ends
 *   in RETRY_EXC as before; PSNs, retry_cnt and rnr_retry mean for peers
 *   what they always did.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "psn.h"

static void probe_arm(struct eng_qp *qp, uint64_t now);

/* The path a QP sends on, or NULL: connected RC QPs that may send. */
static bool wants_path(const struct eng_qp *qp)
{
	return qp->init.qp_type == ENG_QPT_RC &&
	       (qp->attr.qp_state == ENG_QPS_RTS || qp->attr.qp_state == ENG_QPS_SQD);
}

static struct eng_path *path_get(struct eng_dev *dev, const uint8_t dgid[16])
{
	struct eng_path *p;

	for (p = dev->paths; p; p = p->next)
		if (!memcmp(p->dgid, dgid, 16))
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->dgid, dgid, 16);
	p->cwnd = ENG_CC_INIT;
	p->ssthresh = ENG_CC_INIT;
	p->next = dev->paths;
	dev->paths = p;
	return p;
}

static void path_put(struct eng_dev *dev, struct eng_path *p)
{
	struct eng_path **pp;

	if (--p->users)
		return;
	for (pp = &dev->paths; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p);
}

static uint32_t qp_inflight(const struct eng_qp *qp)
{
	int32_t d = psn_diff(qp->req.psn, qp->comp.psn);

	return d > 0 ? (uint32_t)d : 0;
}

void eng_cc_sync(struct eng_qp *qp)
{
	struct eng_path *p = qp->path;
	uint32_t now;

	if (p && (!wants_path(qp) || memcmp(p->dgid, qp->attr.ah_attr.dgid, 16))) {
		p->inflight -= qp->cc_inflight;
		qp->cc_inflight = 0;
		qp->path = NULL;
		path_put(qp->dev, p);
		p = NULL;
	}
	if (!p && wants_path(qp)) {
		p = path_get(qp->dev, qp->attr.ah_attr.dgid);
		if (!p)
			return;	/* no memory: the QP sends without the path's window */
		p->users++;
		qp->path = p;
		qp->cc_progress = p->progress;
	}
	if (!p)
		return;
	now = qp_inflight(qp);
	p->inflight = p->inflight - qp->cc_inflight + now;
	qp->cc_inflight = now;
	if (!now)
		qp->comp.probe_at = 0;
	else if (!qp->comp.probe_at)
		probe_arm(qp, eng_now(qp->dev));
}

void eng_cc_detach(struct eng_qp *qp)
{
	struct eng_path *p = qp->path;

	if (!p)
		return;
	p->inflight -= qp->cc_inflight;
	qp->cc_inflight = 0;
	qp->path = NULL;
	path_put(qp->dev, p);
}

bool eng_cc_may_send(struct eng_qp *qp)
{
	const struct eng_path *p = qp->path;

	if (!p || p->inflight < p->cwnd || (!qp->cc_inflight && p->inflight < ENG_CC_MAX) ||
	    qp->comp.probing)
		return true;
	if (!qp->comp.cc_held) {
		qp->comp.cc_held = true;
		eng_count(qp, ENG_CNT_CC_HELD);
	}
	return false;
}

bool eng_cc_ack_wanted(const struct eng_qp *qp)
{
	const struct eng_path *p = qp->path;
	uint32_t every;

	if (!p)
		return false;
	if (qp->comp.probing)
		return true;
	every = p->cwnd / (2 * (p->users ? p->users : 1));
	return p->inflight + 1 >= p->cwnd || qp->req.noack + 1 >= (every ? every : 1);
}

static uint64_t pto(const struct eng_path *p)
{
	uint64_t t = p->srtt + 4 * p->rttvar;

	if (t < 2 * p->srtt)
		t = 2 * p->srtt;
	return t > ENG_CC_PTO_MIN_NS ? t : ENG_CC_PTO_MIN_NS;
}

static void rtt_sample(struct eng_path *p, uint64_t r)
{
	uint64_t d;

	if (!p->srtt) {
		p->srtt = r;
		p->rttvar = r / 2;
		return;
	}
	d = r > p->srtt ? r - p->srtt : p->srtt - r;
	p->rttvar = p->rttvar - p->rttvar / 4 + d / 4;
	p->srtt = p->srtt - p->srtt / 8 + r / 8;
}

/* The probe timer runs while packets are in flight. */
static void probe_arm(struct eng_qp *qp, uint64_t now)
{
	const struct eng_path *p = qp->path;

	qp->comp.probe_at = p && qp->req.psn != qp->comp.psn ?
		now + (pto(p) << qp->comp.probes) : 0;
}

void eng_cc_sent(struct eng_qp *qp, uint32_t psn, bool resend)
{
	if (!qp->path || qp->comp.rtt_at || resend)
		return;
	qp->comp.rtt_psn = psn;
	qp->comp.rtt_at = eng_now(qp->dev);
}

void eng_cc_alive(struct eng_qp *qp)
{
	if (qp->path && qp->comp.probe_at)
		probe_arm(qp, eng_now(qp->dev));
}

void eng_cc_rewound(struct eng_qp *qp)
{
	qp->comp.rtt_at = 0;	/* Karn: a resent packet's ACK times nothing */
}

/* A path's QPs share a window of probes per probe timeout: when thousands
 * of QPs lost their packets in one full receiver, one probe each per
 * timeout would fill it again (issue 30). */
static bool probe_take(struct eng_path *p, uint64_t now)
{
	if (now >= p->probe_until) {
		p->probe_until = now + pto(p);
		p->probes_left = p->cwnd;
	}
	if (!p->probes_left)
		return false;
	p->probes_left--;
	return true;
}

void eng_cc_timers(struct eng_qp *qp, uint64_t now)
{
	struct eng_swqe *w;
	__typeof__(qp->req) saved;
	uint64_t rtt_at;
	uint32_t rtt_psn;
	bool resend;

	if (!qp->comp.probe_at || now < qp->comp.probe_at)
		return;
	if (!qp->path || qp->req.psn == qp->comp.psn) {
		qp->comp.probe_at = 0;
		return;
	}
	if (qp->comp.rnr_until) {	/* the responder said when: not before */
		qp->comp.probe_at = qp->comp.rnr_until + pto(qp->path);
		return;
	}
	w = &qp->swqe[qp->sq.head];
	resend = qp->sq.count && w->started && !eng_wr_is_rd_atomic(w->wr.opcode);
	if (resend && !probe_take(qp->path, now)) {
		qp->comp.probe_at = qp->path->probe_until;	/* its turn may come then */
		return;
	}
	if (qp->comp.probes < ENG_CC_PTO_MAX_SHIFT)
		qp->comp.probes++;
	probe_arm(qp, now);
	if (!resend)
		return;
	/* the oldest packet once more, then on from where the requester was */
	saved = qp->req;
	rtt_psn = qp->comp.rtt_psn;
	rtt_at = qp->comp.rtt_at;
	eng_req_rewind(qp, qp->comp.psn);
	qp->comp.probing = true;
	if (eng_req_step(qp) > 0)
		eng_count(qp, ENG_CNT_CC_PROBES);
	qp->comp.probing = false;
	/* A probe whose WQE could not be sent (its MR gone) failed the QP and
	 * flushed the send queue: that requester state stands, not the one
	 * from before, whose WQEs are no longer there. */
	if (qp->attr.qp_state != ENG_QPS_ERR)
		qp->req = saved;
	/* the packet being timed was not resent: its sample, however late
	 * (a slow responder: that is what the probe timeout must learn), holds */
	qp->comp.rtt_psn = rtt_psn;
	qp->comp.rtt_at = rtt_at;
	eng_cc_sync(qp);
}

void eng_cc_acked(struct eng_qp *qp, uint32_t n)
{
	struct eng_path *p = qp->path;
	uint64_t now;

	qp->comp.cc_held = false;
	qp->comp.cc_forgiven = 0;
	if (!p || !n)
		return;
	p->progress++;
	qp->cc_progress = p->progress;
	now = eng_now(qp->dev);
	/* comp.psn moves past the timed packet with this ACK */
	if (qp->comp.rtt_at && psn_diff(qp->comp.rtt_psn, qp->comp.psn) < (int32_t)n) {
		rtt_sample(p, now - qp->comp.rtt_at);
		qp->comp.rtt_at = 0;
	}
	qp->comp.probes = 0;
	qp->comp.probe_at = 0;	/* re-armed below, once comp.psn moved */
	p->recover = p->recover > n ? p->recover - n : 0;
	if (p->cwnd < p->ssthresh) {
		p->cwnd += n;
	} else {
		p->acked += n * ENG_CC_AI;
		while (p->acked >= p->cwnd) {
			p->acked -= p->cwnd;
			p->cwnd++;
		}
	}
	if (p->cwnd > ENG_CC_MAX)
		p->cwnd = ENG_CC_MAX;
}

void eng_cc_cut(struct eng_qp *qp, enum eng_cc_signal why)
{
	struct eng_path *p = qp->path;
	uint32_t half;

	if (!p)
		return;
	/* a timeout is news even inside a loss episode: nothing came back */
	if (p->recover && why != ENG_CC_TIMEOUT)
		return;
	half = p->cwnd / 2 > ENG_CC_MIN ? p->cwnd / 2 : ENG_CC_MIN;
	switch (why) {
	case ENG_CC_LOSS:
		p->ssthresh = p->cwnd = half;
		break;
	case ENG_CC_TIMEOUT:
		p->ssthresh = half;
		p->cwnd = ENG_CC_MIN;
		break;
	case ENG_CC_CNP:
		p->cwnd -= p->cwnd / 8;
		if (p->cwnd < ENG_CC_MIN)
			p->cwnd = ENG_CC_MIN;
		p->ssthresh = p->cwnd;
		break;
	}
	p->acked = 0;
	p->recover = p->inflight > 1 ? p->inflight : 1;
	eng_count(qp, why == ENG_CC_CNP ? ENG_CNT_CC_CNP_CUTS : ENG_CNT_CC_CUTS);
}

bool eng_cc_timeout(struct eng_qp *qp)
{
	bool held = qp->comp.cc_held;

	/* Other QPs of the path were acknowledged since this one was: the
	 * destination answers, this QP lost packets (a loss); only a path
	 * gone silent takes the window to its minimum. */
	eng_cc_cut(qp, qp->path && qp->path->progress != qp->cc_progress ?
		   ENG_CC_LOSS : ENG_CC_TIMEOUT);
	qp->comp.cc_held = false;
	if (!held || !qp->path || qp->path->progress == qp->cc_progress ||
	    qp->comp.cc_forgiven >= ENG_CC_FORGIVE)
		return true;
	qp->comp.cc_forgiven++;
	eng_count(qp, ENG_CNT_CC_FORGIVEN);
	return false;
}

uint8_t eng_cc_tclass(const struct eng_dev *dev, uint8_t tclass)
{
	return dev->cc.ecn && !(tclass & 3) ? tclass | 2 : tclass;
}

/* The way back to a UD packet's sender, from our GID it was sent to. */
static bool ud_reply_ah(const struct eng_qp *qp, const struct roce_pkt *pkt,
			struct eng_ah_attr *ah)
{
	uint8_t gid[16], mac[6];
	uint8_t i;

	for (i = 0; i < ENG_GID_TABLE_LEN; i++)
		if (!qp->dev->ops->gid(qp->dev->ctx, i, gid, mac) &&
		    !memcmp(gid, pkt->addr.dgid, 16)) {
			*ah = (struct eng_ah_attr){ .sgid_index = i, .port_num = 1 };
			memcpy(ah->dgid, pkt->addr.sgid, 16);
			memcpy(ah->dmac, pkt->addr.smac, 6);
			return true;
		}
	return false;
}

/* DSCP 48, as ConnectX sends CNPs (and as switches prioritize them) */
#define CNP_TCLASS	(48 << 2)

void eng_cc_rx(struct eng_qp *qp, const struct roce_pkt *pkt)
{
	struct roce_hdrs h = { .opcode = ROCE_CNP, .pkey = ENG_PKEY_DEFAULT, .becn = true };
	struct eng_ah_attr ah;
	uint64_t now;

	if (pkt->op->qpt == ROCE_QPT_CNP) {
		eng_count(qp, ENG_CNT_CNP_RCVD);
		eng_cc_cut(qp, ENG_CC_CNP);
		return;
	}
	eng_count(qp, ENG_CNT_ECN_CE);
	if (!qp->dev->cc.ecn || qp->attr.qp_state < ENG_QPS_RTR || qp->attr.qp_state == ENG_QPS_ERR)
		return;
	now = eng_now(qp->dev);
	if (qp->resp.cnp_sent && now - qp->resp.cnp_at < qp->dev->cc.cnp_interval_ns)
		return;
	if (eng_qpt_ud(qp->init.qp_type)) {
		/* the sender is named by each packet: its GID, MAC and QP */
		if (!ud_reply_ah(qp, pkt, &ah))
			return;
		h.dqpn = pkt->h.deth.sqpn;
	} else {
		ah = qp->attr.ah_attr;
		h.dqpn = qp->attr.dest_qp_num;
	}
	ah.traffic_class = CNP_TCLASS;
	if (!eng_xmit(qp, &ah, &h, NULL, 0)) {
		qp->resp.cnp_sent = true;
		qp->resp.cnp_at = now;
		eng_count(qp, ENG_CNT_CNP_SENT);
	}
}

void eng_dev_set_cc(struct eng_dev *dev, const struct eng_cc_config *cc)
{
	dev->cc = *cc;
}

/* A seqlock, as the kernel's seqcount: the reader retries while the
 * owner was writing. */
void eng_cc_publish(struct eng_dev *dev, uint64_t now)
{
	const struct eng_path *p;
	uint32_t n = 0;

	if (dev->pub.at && now - dev->pub.at < ENG_PATH_PUBLISH_NS)
		return;
	dev->pub.at = now;
	__atomic_store_n(&dev->pub.seq, dev->pub.seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (p = dev->paths; p && n < ENG_PATH_INFO_MAX; p = p->next, n++) {
		struct eng_path_info *i = &dev->pub.p[n];

		memcpy(i->dgid, p->dgid, 16);
		i->qps = p->users;
		i->cwnd = p->cwnd;
		i->ssthresh = p->ssthresh;
		i->inflight = p->inflight;
		i->srtt_ns = p->srtt;
	}
	dev->pub.n = n;
	__atomic_store_n(&dev->pub.seq, dev->pub.seq + 1, __ATOMIC_RELEASE);
}

unsigned int eng_dev_paths(const struct eng_dev *dev, struct eng_path_info *out,
			   unsigned int max)
{
	uint32_t seq, n;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		seq = __atomic_load_n(&dev->pub.seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue;
		n = dev->pub.n < max ? dev->pub.n : max;
		memcpy(out, dev->pub.p, n * sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&dev->pub.seq, __ATOMIC_RELAXED) == seq)
			return n;
	}
	return 0;	/* the owner keeps writing: nothing rather than a torn copy */
}

uint32_t eng_qp_cwnd(const struct eng_qp *qp)
{
	return qp->path ? qp->path->cwnd : 0;
}

void eng_cc_free(struct eng_dev *dev)
{
	struct eng_path *p;

	while ((p = dev->paths)) {
		dev->paths = p->next;
		free(p);
	}
}
