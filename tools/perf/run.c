// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's data path (perftest_resources.c's run_iter_*): posting,
 * polling and the clock, and the duration mode's state machine.
 */
#include "perf.h"

/* ---- duration mode: perftest's SIGALRM state machine, on the clock ---- */

/* catch_alarm: START -> SAMPLE -> STOP_SAMPLE -> END, margin seconds at
 * each edge. */
static void dur_advance(struct perf *p, uint64_t now)
{
	switch (p->state) {
	case START_STATE:
		p->state = SAMPLE_STATE;
		p->tposted[0] = now;
		p->t_next = now + (uint64_t)(p->duration - 2 * p->margin) * 1000000000u;
		break;
	case SAMPLE_STATE:
		p->state = STOP_SAMPLE_STATE;
		p->tcompleted[0] = now;
		if (p->margin > 0)
			p->t_next = now + (uint64_t)p->margin * 1000000000u;
		else
			p->state = END_STATE;
		break;
	case STOP_SAMPLE_STATE:
		p->state = END_STATE;
		break;
	case END_STATE:
		break;
	}
}

static void dur_start(struct perf *p)
{
	uint64_t now = now_ns();

	p->iters = 0;
	p->state = START_STATE;
	if (p->margin > 0)
		p->t_next = now + (uint64_t)p->margin * 1000000000u;
	else
		dur_advance(p, now);
}

static void dur_tick(struct perf *p)
{
	uint64_t now;

	if (!is_dur(p) || p->state == END_STATE)
		return;
	now = now_ns();
	while (p->state != END_STATE && now >= p->t_next)
		dur_advance(p, now);
}


/* ---- the data path (perftest_resources.c) ---- */

/* increase_loc_addr / increase_rem_addr: walk a cycle buffer in cache
 * line steps, back to the start every cycle_buffer bytes. */
static void cycle_addr(const struct perf *p, uint64_t *addr, uint64_t cnt, uint64_t prim)
{
	uint64_t inc = inc_of(p->size, p->cache_line);

	*addr += inc;
	if ((cnt + 1) % ((uint64_t)p->cycle_buffer / inc) == 0)
		*addr = prim;
}

bool cycles(const struct perf *p, uint64_t len)
{
	return p->tst == BW && len <= (uint64_t)p->cycle_buffer / 2 && !p->check;
}

/* --check: byte k of QP i's messages. It changes within every 256 bytes
 * and between MTU-sized segments and QPs: a segment in the wrong place or
 * of the wrong QP shows. */
static uint8_t check_byte(int i, uint64_t k)
{
	return (uint8_t)(k ^ (k >> 8) * 37 ^ (k >> 16) * 11 ^ (uint64_t)i * 101 ^ 0x5a);
}

/* --check: what each QP sends (from my_addr: buffers do not cycle). */
void check_fill(struct perf *p)
{
	uint64_t k;
	int i;

	for (i = 0; p->check && i < p->num_qps; i++)
		for (k = 0; k < p->size; k++)
			((uint8_t *)(uintptr_t)p->q[i].my_addr)[k] = check_byte(i, k);
}

/* --check: a receive of QP i in rx_base, as check_fill sent it? */
static int check_recv(struct perf *p, int i, const struct virtio_rdma_cqe *wc)
{
	const uint8_t *b = (const uint8_t *)(uintptr_t)p->q[i].rx_base;
	uint64_t k;

	if (wc->byte_len != p->size) {
		fprintf(stderr, " Check failed: QP %d message %" PRIu64 " has %u bytes, not %" PRIu64
			"\n", i, p->q[i].rcnt, wc->byte_len, p->size);
		return -EIO;
	}
	for (k = 0; k < p->size; k++)
		if (b[k] != check_byte(i, k)) {
			fprintf(stderr, " Check failed: QP %d message %" PRIu64 " byte %" PRIu64
				" is 0x%02x, not 0x%02x\n", i, p->q[i].rcnt, k, b[k],
				check_byte(i, k));
			return -EIO;
		}
	p->checked++;
	return 0;
}

/* ctx_set_send_reg_wqes */
void set_send_wqes(struct perf *p)
{
	uint64_t stride = buff_size_of(p->alloc_size, p->cycle_buffer);
	int i, j;

	for (i = 0; i < p->num_qps; i++) {
		struct qpc *q = &p->q[i];

		q->scnt = q->ccnt = 0;
		q->my_addr = (uintptr_t)p->buf + (uint64_t)i * stride;
		q->rem_addr = p->rem[i].vaddr;
		for (j = 0; j < p->post_list; j++) {
			q->sge[j].length = (uint32_t)p->size;
			q->sge[j].lkey = vrdma_mr_lkey(p->mr);
			q->sge[j].addr = j ? q->sge[j - 1].addr : q->my_addr;
			q->raddr[j] = j ? q->raddr[j - 1] : q->rem_addr;
			if (j && cycles(p, p->size)) {
				cycle_addr(p, &q->sge[j].addr, (uint64_t)j - 1, q->my_addr);
				if (p->verb != SEND)
					cycle_addr(p, &q->raddr[j], (uint64_t)j - 1, q->rem_addr);
			}
			q->flags[j] = (j + 1) % p->cq_mod == 0 ? VIRTIO_IB_SEND_SIGNALED : 0;
			if (!rd_atomic(p) && p->size <= (uint64_t)p->inline_size)
				q->flags[j] |= VIRTIO_IB_SEND_INLINE;
		}
	}
}

/* ctx_set_recv_wqes: rx_depth receives per QP into its half of the buffer
 * (UD: room for the GRH in front, still inside the buffer). */
int set_recv_wqes(struct perf *p)
{
	uint64_t len = p->size + (p->conn == UD ? UD_ADDITION : 0);
	int i, j, ret;

	for (i = 0; i < p->num_qps; i++) {
		struct qpc *q = &p->q[i];

		q->rx_base = (uintptr_t)p->buf + ((uint64_t)p->num_qps + (uint64_t)i) * p->qp_buff;
		if (p->conn == UD)
			q->rx_base += (uint64_t)(p->cache_line - UD_ADDITION);
		q->rsge = (struct vrdma_sge){ .addr = q->rx_base, .length = (uint32_t)len,
					      .lkey = vrdma_mr_lkey(p->mr) };
		for (j = 0; j < p->rx_depth; j++) {
			struct vrdma_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &q->rsge, .num_sge = 1 };

			ret = vrdma_post_recv(q->qp, &wr);
			if (ret) {
				fprintf(stderr, "Couldn't post recv Qp = %d: counter=%d\n", i, j);
				return ret;
			}
			if (cycles(p, p->size))
				cycle_addr(p, &q->rsge.addr, (uint64_t)j, q->rx_base);
		}
		q->rsge.addr = q->rx_base;
		q->posted = (uint64_t)p->rx_depth;
		q->unused = 0;
		q->rcnt = 0;
	}
	return 0;
}

static int repost_recv(struct perf *p, int i)
{
	struct qpc *q = &p->q[i];
	struct vrdma_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &q->rsge, .num_sge = 1 };
	uint64_t len = p->size + (p->conn == UD && p->machine == SERVER ? UD_ADDITION : 0);
	int ret;

	ret = vrdma_post_recv(q->qp, &wr);
	if (ret) {
		fprintf(stderr, "Couldn't post recv Qp=%d rcnt=%lu\n", i, (unsigned long)q->rcnt);
		return ret;
	}
	q->unused--;
	q->posted++;
	if (cycles(p, len))
		cycle_addr(p, &q->rsge.addr, q->posted, q->rx_base);
	return 0;
}

/* How long nothing may complete: STALL_MS, plus the time the data that may
 * be in flight takes at 1 MB/s. With CQ moderation a run of long messages
 * completes once, at its end (20 READs of 8 MiB from Soft-RoCE in a TCG
 * guest take ~7 s), which is not a stall. */
static uint64_t stall_ns(const struct perf *p)
{
	uint64_t depth = p->tx_depth > 0 ? (uint64_t)p->tx_depth : 1;

	if (depth > p->iters)
		depth = p->iters;
	return (uint64_t)STALL_MS * 1000000u + p->size * depth * 1000u;
}

static bool stalled(const struct perf *p, uint64_t since)
{
	return now_ns() - since > stall_ns(p);
}

/* post_send_method: QP index's post_list WRs. A momentarily full ring
 * (the device has not taken earlier WQEs yet) is waited out. */
static int post_send(struct perf *p, int index)
{
	static const uint32_t opcode[] = { VIRTIO_IB_WR_SEND, VIRTIO_IB_WR_RDMA_WRITE,
					   VIRTIO_IB_WR_RDMA_READ, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP };
	struct qpc *q = &p->q[index];
	uint64_t t0 = 0;
	int j, ret;

	for (j = 0; j < p->post_list; j++) {
		struct vrdma_send_wr wr = {
			.wr_id = (uint64_t)index, .opcode = opcode[p->verb], .send_flags = q->flags[j],
			.sg_list = &q->sge[j], .num_sge = 1,
			.remote_addr = q->raddr[j], .rkey = p->rem[index].rkey,
		};

		/* ctx_set_send_reg_wqes: add 1, or swap in 0 (compare 0) */
		if (p->verb == ATOMIC && p->atomic_type == FETCH_AND_ADD) {
			wr.opcode = VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD;
			wr.compare_add = ATOMIC_ADD_VALUE;
		} else if (p->verb == ATOMIC) {
			wr.swap = ATOMIC_SWAP_VALUE;
		}

		if (p->conn == UD) {
			wr.remote_qpn = (uint32_t)p->rem[index].qpn;
			wr.remote_qkey = DEF_QKEY;
			memcpy(wr.av.dgid, p->rem[index].gid, 16);
			wr.av.gid_index = (uint8_t)p->gid_index;
			wr.av.hop_limit = 0xff;
			wr.av.sl_tclass_flowlabel = (uint32_t)p->sl << 28;
		}
		while ((ret = vrdma_post_send(q->qp, &wr)) == -ENOMEM) {
			if (!t0)
				t0 = now_ns();
			else if (stalled(p, t0))
				break;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Duration mode: once the sampling window is over the result is in, so a
 * peer that stopped a moment earlier and took its QPs away (errors on the
 * last in-flight message) ends the run instead of failing it. perftest
 * would fail here; nothing of this reaches the peer. */
static bool dur_finished(struct perf *p)
{
	dur_tick(p);
	if (!is_dur(p) || p->state < STOP_SAMPLE_STATE)
		return false;
	p->state = END_STATE;
	return true;
}

/* Polls; an asynchronous event (QP fatal, CQ overrun) ends the test. */
static int poll_cq(struct perf *p, struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc)
{
	int ne = vrdma_poll_cq(cq, n, wc), i;

	for (i = 0; i < ne; i++) {
		uint32_t ev = wc[i].vendor_err;

		if (wc[i].opcode != VIRTIO_RDMA_WC_ASYNC_EVENT)
			continue;
		if (i)
			return i;	/* the completions before it first */
		if (dur_finished(p))
			return 0;
		fprintf(stderr, " Asynchronous event %u (%s) on QP %u\n", ev,
			ev == VIRTIO_RDMA_EVENT_QP_FATAL ? "QP fatal" :
			ev == VIRTIO_RDMA_EVENT_QP_REQ_ERR ? "QP request error" :
			ev == VIRTIO_RDMA_EVENT_QP_ACCESS_ERR ? "QP access error" :
			ev == VIRTIO_RDMA_EVENT_CQ_ERR ? "CQ error" : "unexpected", wc[i].qp_num);
		return -EIO;
	}
	if (ne < 0)
		fprintf(stderr, "poll CQ failed %d\n", ne);
	return ne;
}

/* NOTIFY_COMP_ERROR_SEND / _RECV; 0 where dur_finished lets it pass. */
static int comp_error_send(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t scnt,
			   uint64_t ccnt)
{
	if (dur_finished(p))
		return 0;
	fprintf(stderr, " Completion with error at client\n");
	fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", wc->status, (int)wc->wr_id,
		wc->vendor_err);
	fprintf(stderr, "scnt=%lu, ccnt=%lu\n", (unsigned long)scnt, (unsigned long)ccnt);
	fprintf(stderr, " (%s)\n", wc_status_str(wc->status));
	return -EIO;
}

static int comp_error_recv(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t rcnt)
{
	if (dur_finished(p))
		return 0;
	fprintf(stderr, " Completion with error at server\n");
	fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", wc->status, (int)wc->wr_id,
		wc->vendor_err);
	fprintf(stderr, " rcnt=%lu\n", (unsigned long)rcnt);
	fprintf(stderr, " (%s)\n", wc_status_str(wc->status));
	return -EIO;
}

static int stall_error(struct perf *p, const char *what, uint64_t a, uint64_t b)
{
	if (dur_finished(p))
		return 0;
	fprintf(stderr, " No completion for %lu seconds (%s %lu/%lu), giving up\n",
		(unsigned long)(stall_ns(p) / 1000000000u), what, (unsigned long)a, (unsigned long)b);
	return -ETIMEDOUT;
}

/* The send loop's window and CQ moderation of run_iter_bw / run_iter_bi:
 * post QP index while fewer than tx_depth are outstanding, asking for a
 * completion every cq_mod-th WR (and on the last). */
static int post_window(struct perf *p, int index, uint64_t *totscnt, uint64_t iters)
{
	struct qpc *q = &p->q[index];
	int ret;

	while ((q->scnt < iters || is_dur(p)) &&
	       q->scnt - q->ccnt + (uint64_t)p->post_list <= (uint64_t)p->tx_depth) {
		if (p->post_list == 1 && q->scnt % (uint64_t)p->cq_mod == 0 && p->cq_mod > 1 &&
		    !(q->scnt == iters - 1 && !is_dur(p)))
			q->flags[0] &= ~VIRTIO_IB_SEND_SIGNALED;
		if (!p->no_peak)
			p->tposted[*totscnt] = now_ns();
		if (is_dur(p) && p->state == END_STATE)
			break;
		ret = post_send(p, index);
		if (ret) {
			fprintf(stderr, "Couldn't post send: qp %d scnt=%lu \n", index, (unsigned long)q->scnt);
			return ret;
		}
		if (p->post_list == 1 && p->size <= (uint64_t)p->cycle_buffer / 2) {
			cycle_addr(p, &q->sge[0].addr, q->scnt, q->my_addr);
			if (p->verb != SEND)
				cycle_addr(p, &q->raddr[0], q->scnt, q->rem_addr);
		}
		q->scnt += (uint64_t)p->post_list;
		*totscnt += (uint64_t)p->post_list;
		if (p->post_list == 1 &&
		    (q->scnt % (uint64_t)p->cq_mod == (uint64_t)p->cq_mod - 1 ||
		     (!is_dur(p) && q->scnt == iters - 1)))
			q->flags[0] |= VIRTIO_IB_SEND_SIGNALED;
	}
	return 0;
}

/* A send completion: it stands for cq_mod WRs. */
static void send_completed(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t *totccnt,
			   uint64_t tot_iters)
{
	p->q[wc->wr_id].ccnt += (uint64_t)p->cq_mod;
	*totccnt += (uint64_t)p->cq_mod;
	if (!p->no_peak) {
		if (*totccnt > tot_iters)
			p->tcompleted[tot_iters - 1] = now_ns();
		else
			p->tcompleted[*totccnt - 1] = now_ns();
	}
	if (is_dur(p) && p->state == SAMPLE_STATE)
		p->iters += (uint64_t)p->cq_mod;
}

/* run_iter_bw: the sender of write/read/send BW (and both sides of
 * bidirectional write/read). */
int run_iter_bw(struct perf *p)
{
	struct virtio_rdma_cqe wc[CTX_POLL_BATCH];
	uint64_t totscnt = 0, totccnt = 0, tot_iters, last = now_ns();
	int index, i, ne, ret;

	if (is_dur(p))
		dur_start(p);
	tot_iters = p->iters * (uint64_t)p->num_qps;
	if (!is_dur(p) && p->no_peak)
		p->tposted[0] = now_ns();
	while (totscnt < tot_iters || totccnt < tot_iters || (is_dur(p) && p->state != END_STATE)) {
		dur_tick(p);
		for (index = 0; index < p->num_qps; index++) {
			ret = post_window(p, index, &totscnt, p->iters);
			if (ret)
				return ret;
		}
		if (!(totccnt < tot_iters || (is_dur(p) && totccnt < totscnt)))
			continue;
		ne = poll_cq(p, p->send_cq, CTX_POLL_BATCH, wc);
		if (ne < 0)
			return ne;
		if (ne == 0) {
			if (totscnt == totccnt)
				last = now_ns();
			else if (stalled(p, last))
				return stall_error(p, "completed/posted", totccnt, totscnt);
			continue;
		}
		last = now_ns();
		for (i = 0; i < ne; i++) {
			if (wc[i].status != IB_WC_SUCCESS || wc[i].wr_id >= (uint64_t)p->num_qps)
				return comp_error_send(p, &wc[i], totscnt, totccnt);
			send_completed(p, &wc[i], &totccnt, tot_iters);
		}
	}
	if (p->no_peak && !is_dur(p))
		p->tcompleted[0] = now_ns();
	return 0;
}

/* A receive completion in run_iter_bw_server / run_iter_bi: count it and
 * give the QP its receive back while more are to come. */
static int recv_completed(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t *rcnt)
{
	struct qpc *q;

	if (wc->status != IB_WC_SUCCESS || wc->wr_id >= (uint64_t)p->num_qps)
		return comp_error_recv(p, wc, *rcnt);
	q = &p->q[wc->wr_id];
	if (p->check) {
		int ret = check_recv(p, (int)wc->wr_id, wc);

		if (ret)
			return ret;
	}
	q->rcnt++;
	(*rcnt)++;
	q->unused++;
	if (is_dur(p) && p->state == SAMPLE_STATE)
		p->iters++;
	if ((is_dur(p) || q->posted + 1 <= p->iters) && q->unused >= 1)
		return repost_recv(p, (int)wc->wr_id);
	return 0;
}

/* run_iter_bw_server: the receiver of send BW. */
int run_iter_bw_server(struct perf *p)
{
	struct virtio_rdma_cqe wc[CTX_POLL_BATCH];
	uint64_t rcnt = 0, tot_iters = p->iters * (uint64_t)p->num_qps, last = now_ns();
	bool first_rx = true;
	int ne = 0, i, ret;

	while (rcnt < tot_iters || (is_dur(p) && p->state != END_STATE)) {
		do {
			dur_tick(p);
			if (is_dur(p) && p->state == END_STATE)
				break;
			ne = poll_cq(p, p->recv_cq, CTX_POLL_BATCH, wc);
			if (ne <= 0)
				break;
			last = now_ns();
			if (first_rx) {
				/* set_on_first_rx_packet */
				if (is_dur(p))
					dur_start(p);
				else
					p->tposted[0] = now_ns();
				first_rx = false;
			}
			for (i = 0; i < ne; i++) {
				ret = recv_completed(p, &wc[i], &rcnt);
				if (ret)
					return ret;
			}
		} while (ne > 0);
		if (ne < 0)
			return ne;
		if (stalled(p, last))
			return stall_error(p, "received", rcnt, tot_iters);
	}
	if (!is_dur(p))
		p->tcompleted[0] = now_ns();
	return 0;
}

/* run_iter_bi: both directions of send BW. The server sends only once the
 * client's first message is in, so that the client is receiving. */
int run_iter_bi(struct perf *p)
{
	struct virtio_rdma_cqe wc[CTX_POLL_BATCH];
	uint64_t totscnt = 0, totccnt = 0, totrcnt = 0, tot_iters, iters, last = now_ns();
	bool before_first_rx = p->machine == SERVER;
	int index, i, ne, ret;

	if (p->no_peak)
		p->tposted[0] = now_ns();
	if (p->machine == CLIENT && is_dur(p))
		dur_start(p);
	tot_iters = p->iters * (uint64_t)p->num_qps;
	iters = p->iters;
	while ((is_dur(p) && p->state != END_STATE) || totccnt < tot_iters || totrcnt < tot_iters) {
		bool progress = false;

		dur_tick(p);
		for (index = 0; index < p->num_qps && !before_first_rx; index++) {
			ret = post_window(p, index, &totscnt, iters);
			if (ret)
				return ret;
		}
		ne = poll_cq(p, p->recv_cq, CTX_POLL_BATCH, wc);
		if (ne < 0)
			return ne;
		if (ne > 0) {
			progress = true;
			if (before_first_rx) {
				before_first_rx = false;
				if (is_dur(p))
					dur_start(p);
			}
			for (i = 0; i < ne; i++) {
				ret = recv_completed(p, &wc[i], &totrcnt);
				if (ret)
					return ret;
			}
		}
		ne = poll_cq(p, p->send_cq, CTX_POLL_BATCH, wc);
		if (ne < 0)
			return ne;
		for (i = 0; i < ne; i++) {
			progress = true;
			if (wc[i].status != IB_WC_SUCCESS || wc[i].wr_id >= (uint64_t)p->num_qps)
				return comp_error_send(p, &wc[i], totscnt, totccnt);
			send_completed(p, &wc[i], &totccnt, tot_iters);
		}
		if (progress)
			last = now_ns();
		else if (stalled(p, last))
			return stall_error(p, "sent/received", totccnt, totrcnt);
	}
	if (p->no_peak && !is_dur(p))
		p->tcompleted[0] = now_ns();
	return 0;
}

/* Wait for one completion on cq: 1 when there is one, 0 when the duration
 * ended first (the peer may be gone by then), or an error. */
static int wait_one(struct perf *p, struct vrdma_cq *cq, struct virtio_rdma_cqe *wc)
{
	uint64_t t0 = now_ns();
	int ne;

	while (!(ne = poll_cq(p, cq, 1, wc))) {
		dur_tick(p);
		if (is_dur(p) && p->state == END_STATE)
			return 0;
		if (stalled(p, t0))
			return stall_error(p, "completions", 0, 1);
	}
	return ne;
}

/* run_iter_lat_write: ping-pong of RDMA WRITEs, each side polling the last
 * byte of its receive half for the other's counter. The server writes
 * first. */
int run_iter_lat_write(struct perf *p)
{
	uint64_t stride = buff_size_of(p->alloc_size, p->cycle_buffer);
	volatile uint8_t *poll_buf = p->buf + (uint64_t)p->num_qps * stride + p->size - 1;
	uint8_t *post_buf = p->buf + p->size - 1;
	uint64_t scnt = 0, ccnt = 0, rcnt = 0;
	struct virtio_rdma_cqe wc;
	struct qpc *q = &p->q[0];
	int ret;

	q->sge[0].length = (uint32_t)p->size;
	q->flags[0] = VIRTIO_IB_SEND_SIGNALED;
	if (p->size <= (uint64_t)p->inline_size)
		q->flags[0] |= VIRTIO_IB_SEND_INLINE;
	if (is_dur(p))
		dur_start(p);
	while (scnt < p->iters || ccnt < p->iters || rcnt < p->iters ||
	       (is_dur(p) && p->state != END_STATE)) {
		if ((rcnt < p->iters || is_dur(p)) && !(scnt < 1 && p->machine == SERVER)) {
			uint64_t t0 = now_ns();
			unsigned int spins = 0;

			rcnt++;
			/* the peer's WRITE lands in shared memory behind our back */
			while (*poll_buf != (uint8_t)rcnt && p->state != END_STATE) {
				if (++spins % 1024)
					continue;
				dur_tick(p);
				if (stalled(p, t0))
					return stall_error(p, "received", rcnt - 1, p->iters);
			}
		}
		if (scnt < p->iters || is_dur(p)) {
			if (!is_dur(p))
				p->tposted[scnt] = now_ns();
			*post_buf = (uint8_t)++scnt;
			ret = post_send(p, 0);
			if (ret) {
				fprintf(stderr, "Couldn't post send: scnt=%lu\n", (unsigned long)scnt);
				return ret;
			}
		}
		if (is_dur(p) && p->state == END_STATE)
			break;
		if (ccnt < p->iters || is_dur(p)) {
			ret = wait_one(p, p->send_cq, &wc);
			if (ret <= 0)	/* an error, or the duration ended */
				return ret;
			if (wc.status != IB_WC_SUCCESS)
				return comp_error_send(p, &wc, scnt, ccnt);
			ccnt++;
			if (is_dur(p) && p->state == SAMPLE_STATE)
				p->iters++;
		}
	}
	return 0;
}

/* run_iter_lat: RDMA READ latency, one read at a time (client only). */
int run_iter_lat(struct perf *p)
{
	struct virtio_rdma_cqe wc;
	struct qpc *q = &p->q[0];
	uint64_t scnt = 0;
	int ret;

	q->sge[0].length = (uint32_t)p->size;
	q->flags[0] = VIRTIO_IB_SEND_SIGNALED;
	if (is_dur(p))
		dur_start(p);
	while (scnt < p->iters || (is_dur(p) && p->state != END_STATE)) {
		if (!is_dur(p))
			p->tposted[scnt++] = now_ns();
		ret = post_send(p, 0);
		if (ret) {
			fprintf(stderr, "Couldn't post send: scnt=%lu\n", (unsigned long)scnt);
			return ret;
		}
		dur_tick(p);
		if (is_dur(p) && p->state == END_STATE)
			break;
		ret = wait_one(p, p->send_cq, &wc);
		if (ret <= 0)	/* an error, or the duration ended */
			return ret;
		if (wc.status != IB_WC_SUCCESS)
			return comp_error_send(p, &wc, scnt, scnt);
		if (is_dur(p) && p->state == SAMPLE_STATE)
			p->iters++;
	}
	return 0;
}

/* run_iter_lat_send: SEND ping-pong; the client sends first. */
int run_iter_lat_send(struct perf *p)
{
	uint64_t scnt = 0, rcnt = 0, size_per_qp = (uint64_t)p->rx_depth;
	struct virtio_rdma_cqe wc;
	struct qpc *q = &p->q[0];
	bool first_rx = true, poll = false;
	int ne, ret;

	q->sge[0].length = (uint32_t)p->size;
	q->flags[0] = 0;
	if (p->size <= (uint64_t)p->inline_size)
		q->flags[0] |= VIRTIO_IB_SEND_INLINE;
	while (scnt < p->iters || rcnt < p->iters || (is_dur(p) && p->state != END_STATE)) {
		if ((rcnt < p->iters || is_dur(p)) && !(scnt < 1 && p->machine == CLIENT)) {
			uint64_t t0 = now_ns();

			do {
				ne = poll_cq(p, p->recv_cq, 1, &wc);
				dur_tick(p);
				if (is_dur(p) && p->state == END_STATE)
					break;
				if (ne < 0)
					return ne;
				if (ne == 0) {
					if (stalled(p, t0))
						return stall_error(p, "received", rcnt, p->iters);
					continue;
				}
				if (first_rx) {
					if (is_dur(p))
						dur_start(p);
					first_rx = false;
				}
				if (wc.status != IB_WC_SUCCESS)
					return comp_error_recv(p, &wc, rcnt);
				rcnt++;
				if (is_dur(p) && p->state == SAMPLE_STATE)
					p->iters++;
				if (is_dur(p) || rcnt + size_per_qp <= p->iters) {
					struct vrdma_recv_wr wr = { .wr_id = 0, .sg_list = &q->rsge, .num_sge = 1 };

					ret = vrdma_post_recv(q->qp, &wr);
					if (ret) {
						fprintf(stderr, "Couldn't post recv: rcnt=%lu\n", (unsigned long)rcnt);
						return ret;
					}
				}
			} while (ne == 0);
		}
		if (scnt < p->iters || (is_dur(p) && p->state != END_STATE)) {
			if (!is_dur(p))
				p->tposted[scnt] = now_ns();
			scnt++;
			if (scnt % (uint64_t)p->cq_mod == 0 || (!is_dur(p) && scnt == p->iters)) {
				poll = true;
				q->flags[0] |= VIRTIO_IB_SEND_SIGNALED;
			}
			if (is_dur(p) && p->state == END_STATE)
				break;
			ret = post_send(p, 0);
			if (ret) {
				fprintf(stderr, "Couldn't post send: scnt=%lu \n", (unsigned long)scnt);
				return ret;
			}
			if (poll) {
				ret = wait_one(p, p->send_cq, &wc);
				if (ret <= 0)	/* an error, or the duration ended */
					return ret;
				if (wc.status != IB_WC_SUCCESS)
					return comp_error_send(p, &wc, scnt, scnt);
				poll = false;
				q->flags[0] &= ~VIRTIO_IB_SEND_SIGNALED;
			}
		}
	}
	return 0;
}
