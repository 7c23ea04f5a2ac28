// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queue pairs: creation, the state machine of IBA 10.3.1 with the required
 * and optional attributes of each transition (the table the Linux kernel
 * checks ibv_modify_qp against, so rdma-core programs see the same EINVALs),
 * query, and the send and receive queues.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static const char *const state_names[ENG_QPS_MAX] = {
	[ENG_QPS_RESET] = "RESET", [ENG_QPS_INIT] = "INIT", [ENG_QPS_RTR] = "RTR",
	[ENG_QPS_RTS] = "RTS", [ENG_QPS_SQD] = "SQD", [ENG_QPS_SQE] = "SQE",
	[ENG_QPS_ERR] = "ERR",
};

const char *eng_qp_state_name(enum eng_qp_state s)
{
	return s < ENG_QPS_MAX ? state_names[s] : "?";
}

/* Index of a QP type in the transition table. */
enum { T_RC, T_UC, T_UD, T_MAX };

static int type_index(enum eng_qp_type t)
{
	return t == ENG_QPT_RC ? T_RC : t == ENG_QPT_UC ? T_UC : eng_qpt_ud(t) ? T_UD : -1;
}

#define A(x) ENG_QP_##x
/* Optional attributes when moving into RTS (from RTR, RTS or SQD). */
#define RTS_OPT_RC (A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) | \
		    A(PATH_MIG_STATE))
#define RTS_OPT_UC (A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE))
#define RTS_OPT_UD (A(CUR_STATE) | A(QKEY))

static const struct transition {
	bool valid;
	uint32_t req[T_MAX], opt[T_MAX];
} transitions[ENG_QPS_MAX][ENG_QPS_MAX] = {
	[ENG_QPS_RESET] = {
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_INIT] = { .valid = true, .req = {
			[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY) } },
	},
	[ENG_QPS_INIT] = {
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_ERR] = { .valid = true },
		[ENG_QPS_INIT] = { .valid = true, .opt = {
			[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY) } },
		[ENG_QPS_RTR] = { .valid = true, .req = {
			[T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
				 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
			[T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) }, .opt = {
			[T_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			[T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			[T_UD] = A(PKEY_INDEX) | A(QKEY) } },
	},
	[ENG_QPS_RTR] = {
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_ERR] = { .valid = true },
		[ENG_QPS_RTS] = { .valid = true, .req = {
			[T_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
				 A(MAX_QP_RD_ATOMIC),
			[T_UC] = A(SQ_PSN), [T_UD] = A(SQ_PSN) },
			.opt = { [T_RC] = RTS_OPT_RC, [T_UC] = RTS_OPT_UC, [T_UD] = RTS_OPT_UD } },
	},
	[ENG_QPS_RTS] = {
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_ERR] = { .valid = true },
		[ENG_QPS_RTS] = { .valid = true,
			.opt = { [T_RC] = RTS_OPT_RC, [T_UC] = RTS_OPT_UC, [T_UD] = RTS_OPT_UD } },
		[ENG_QPS_SQD] = { .valid = true, .opt = { [T_RC] = A(EN_SQD_ASYNC_NOTIFY),
			[T_UC] = A(EN_SQD_ASYNC_NOTIFY), [T_UD] = A(EN_SQD_ASYNC_NOTIFY) } },
	},
	[ENG_QPS_SQD] = {
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_ERR] = { .valid = true },
		[ENG_QPS_RTS] = { .valid = true,
			.opt = { [T_RC] = RTS_OPT_RC, [T_UC] = RTS_OPT_UC, [T_UD] = RTS_OPT_UD } },
		[ENG_QPS_SQD] = { .valid = true, .opt = {
			[T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
				 A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
				 A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
				 A(PATH_MIG_STATE),
			[T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
				 A(PATH_MIG_STATE),
			[T_UD] = A(PKEY_INDEX) | A(QKEY) } },
	},
	[ENG_QPS_SQE] = {	/* RC never enters SQE: its errors go to ERR */
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_ERR] = { .valid = true },
		[ENG_QPS_RTS] = { .valid = true, .opt = {
			[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS), [T_UD] = A(CUR_STATE) | A(QKEY) } },
	},
	[ENG_QPS_ERR] = {
		[ENG_QPS_RESET] = { .valid = true },
		[ENG_QPS_ERR] = { .valid = true },
	},
};

/* Values ibverbs accepts for each attribute present in mask. */
static int check_values(const struct eng_qp *qp, const struct eng_qp_attr *a, unsigned int mask)
{
	const struct eng_ops *ops = qp->dev->ops;
	uint8_t gid[16], mac[6];

	if ((mask & A(PORT)) && a->port_num != 1)
		return -EINVAL;
	if ((mask & A(PKEY_INDEX)) && a->pkey_index != 0)	/* one P_Key: 0xffff */
		return -EINVAL;
	/* QP1's Q_Key is the well-known one (IBA 13.4.7) */
	if ((mask & A(QKEY)) && qp->init.qp_type == ENG_QPT_GSI && a->qkey != ENG_GSI_QKEY)
		return -EINVAL;
	if ((mask & A(ACCESS_FLAGS)) && (a->qp_access_flags & ~ENG_ACCESS_ALL))
		return -EINVAL;
	/* A path MTU above the port's could never be sent (rxe refuses too). */
	if ((mask & A(PATH_MTU)) && (!eng_mtu_bytes(a->path_mtu) ||
				     (qp->dev->port_mtu && a->path_mtu > qp->dev->port_mtu)))
		return -EINVAL;
	if ((mask & A(TIMEOUT)) && a->timeout > 31)
		return -EINVAL;
	if ((mask & A(RETRY_CNT)) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & A(RNR_RETRY)) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & A(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & A(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > ENG_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & A(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > ENG_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & A(RQ_PSN)) && a->rq_psn > ROCE_PSN_MASK)
		return -EINVAL;
	if ((mask & A(SQ_PSN)) && a->sq_psn > ROCE_PSN_MASK)
		return -EINVAL;
	if ((mask & A(DEST_QPN)) && a->dest_qp_num > ROCE_QPN_MASK)
		return -EINVAL;
	if (mask & A(AV)) {
		if (a->ah_attr.port_num != 1 || a->ah_attr.sgid_index >= ENG_GID_TABLE_LEN)
			return -EINVAL;
		if (!ops->gid || ops->gid(qp->dev->ctx, a->ah_attr.sgid_index, gid, mac))
			return -EINVAL;
	}
	return 0;
}

static void wq_clear(struct eng_wq *wq)
{
	wq->head = wq->count = 0;
}

/* Every queued request completes with WR_FLUSH_ERR, in order (IBA 10.3.1). */
static void flush_sq(struct eng_qp *qp)
{
	struct eng_wc wc;

	while (qp->sq.count) {
		const struct eng_swqe *w = &qp->swqe[qp->sq.head];

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr.wr_id;
		wc.status = ENG_WC_WR_FLUSH_ERR;
		wc.opcode = eng_send_wc_opcode(w->wr.opcode);
		wc.qp_num = qp->qpn;
		if (eng_cq_post(qp->init.send_cq, &wc, false))
			eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
		qp->swqe[qp->sq.head].started = false;
		qp->sq.head = (qp->sq.head + 1) % qp->sq.size;
		qp->sq.count--;
	}
	qp->req.wqe = 0;
	qp->req.offset = 0;
}

static void flush_rq(struct eng_qp *qp)
{
	struct eng_wc wc;

	/* On an SRQ only the WQE this QP took is its own (IBA 10.2.9.5); the
	 * rest stay for the other QPs. */
	if (qp->srq_held) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->srq_wqe.wr_id;
		wc.status = ENG_WC_WR_FLUSH_ERR;
		wc.opcode = ENG_WC_RECV;
		wc.qp_num = qp->qpn;
		if (eng_cq_post(qp->init.recv_cq, &wc, false))
			eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
		qp->srq_held = false;
	}
	while (qp->rq.count) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->rwqe[qp->rq.head].wr_id;
		wc.status = ENG_WC_WR_FLUSH_ERR;
		wc.opcode = ENG_WC_RECV;
		wc.qp_num = qp->qpn;
		if (eng_cq_post(qp->init.recv_cq, &wc, false))
			eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
		qp->rq.head = (qp->rq.head + 1) % qp->rq.size;
		qp->rq.count--;
	}
}

static void flush_queues(struct eng_qp *qp)
{
	flush_sq(qp);
	flush_rq(qp);
}

/* IBA 10.3.1: a UC or UD send that fails stops only the send queue (SQE);
 * receives go on, and a modify to RTS resumes sending. */
void eng_qp_sq_error(struct eng_qp *qp)
{
	flush_sq(qp);
	qp->attr.qp_state = qp->attr.cur_qp_state = ENG_QPS_SQE;
}

int eng_qp_modify(struct eng_qp *qp, const struct eng_qp_attr *attr, unsigned int mask)
{
	enum eng_qp_state cur = qp->attr.qp_state;
	enum eng_qp_state next = (mask & A(STATE)) ? attr->qp_state : cur;
	const struct transition *t;
	int ti = type_index(qp->init.qp_type);
	struct eng_qp_attr *q = &qp->attr;
	unsigned int gsi;

	eng_qp_wake(qp);	/* RTS, SQD, ERR: each may give it work */
	if ((unsigned int)next >= ENG_QPS_MAX)
		return -EINVAL;
	if ((mask & A(CUR_STATE)) &&
	    ((cur != ENG_QPS_RTR && cur != ENG_QPS_RTS && cur != ENG_QPS_SQD &&
	      cur != ENG_QPS_SQE) || attr->cur_qp_state != cur))
		return -EINVAL;
	t = &transitions[cur][next];
	/* GSI: as UD without PORT (ib_modify_qp_is_ok: a special QP's port is
	 * fixed) */
	gsi = qp->init.qp_type == ENG_QPT_GSI ? A(PORT) : 0;
	if (!t->valid || (mask & (t->req[ti] & ~gsi)) != (t->req[ti] & ~gsi) ||
	    (mask & ~((t->req[ti] | t->opt[ti]) & ~gsi) & ~A(STATE)))
		return -EINVAL;
	/* No automatic path migration: an alternate path would never be used. */
	if (mask & (A(ALT_PATH) | A(PATH_MIG_STATE)))
		return -EINVAL;
	if (check_values(qp, attr, mask))
		return -EINVAL;

	if (mask & A(EN_SQD_ASYNC_NOTIFY))
		q->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & A(ACCESS_FLAGS))
		q->qp_access_flags = attr->qp_access_flags;
	if (mask & A(PKEY_INDEX))
		q->pkey_index = attr->pkey_index;
	if (mask & A(PORT))
		q->port_num = attr->port_num;
	if (mask & A(QKEY))
		q->qkey = attr->qkey;
	if (mask & A(AV))
		q->ah_attr = attr->ah_attr;
	if (mask & A(PATH_MTU))
		q->path_mtu = attr->path_mtu;
	if (mask & A(TIMEOUT))
		q->timeout = attr->timeout;
	if (mask & A(RETRY_CNT))
		q->retry_cnt = qp->comp.retry_left = attr->retry_cnt;
	if (mask & A(RNR_RETRY))
		q->rnr_retry = qp->comp.rnr_left = attr->rnr_retry;
	if (mask & A(RQ_PSN)) {
		q->rq_psn = attr->rq_psn;
		qp->resp.psn = attr->rq_psn;
	}
	if (mask & A(MAX_QP_RD_ATOMIC))
		q->max_rd_atomic = attr->max_rd_atomic;
	if (mask & A(MIN_RNR_TIMER))
		q->min_rnr_timer = attr->min_rnr_timer;
	if (mask & A(SQ_PSN)) {
		q->sq_psn = attr->sq_psn;
		qp->req.psn = qp->comp.psn = qp->req.max_psn = attr->sq_psn;
	}
	if (mask & A(MAX_DEST_RD_ATOMIC)) {	/* a new ring: forget old READs */
		memset(qp->rd_res, 0, ENG_MAX_RD_ATOMIC * sizeof(*qp->rd_res));
		qp->rd_res_next = 0;
	}
	if (mask & A(MAX_DEST_RD_ATOMIC))
		q->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & A(DEST_QPN))
		q->dest_qp_num = attr->dest_qp_num;

	if (next == ENG_QPS_RESET && cur != ENG_QPS_RESET) {
		/* IBA 10.3.1: RESET empties the queues and forgets the attributes. */
		wq_clear(&qp->sq);
		wq_clear(&qp->rq);
		qp->srq_held = false;
		memset(q, 0, sizeof(*q));
		memset(&qp->req, 0, sizeof(qp->req));
		memset(&qp->comp, 0, sizeof(qp->comp));
		memset(&qp->resp, 0, sizeof(qp->resp));
		memset(qp->rd_res, 0, ENG_MAX_RD_ATOMIC * sizeof(*qp->rd_res));
		qp->rd_res_next = 0;
	} else if (next == ENG_QPS_ERR) {
		flush_queues(qp);
		qp->comp.deadline = qp->comp.rnr_until = 0;	/* nothing left to time */
	}
	if (next == ENG_QPS_SQD && cur != ENG_QPS_SQD)
		qp->req.drained_sent = false;
	q->qp_state = next;
	q->cur_qp_state = next;
	/* IBA 10.3.1, 11.6.3.1 "Last WQE Reached": once in ERR this QP takes
	 * no more of its SRQ's WQEs, and the one it held was flushed above. */
	eng_cc_sync(qp);	/* joins or leaves its destination's path */
	if (next == ENG_QPS_ERR && cur != ENG_QPS_ERR && qp->init.srq && qp->dev->ops->async_error)
		qp->dev->ops->async_error(qp->dev->ctx, NULL, qp, ENG_EVENT_QP_LAST_WQE_REACHED);
	return 0;
}

int eng_qp_query(const struct eng_qp *qp, struct eng_qp_attr *attr, struct eng_qp_init_attr *init)
{
	*attr = qp->attr;
	attr->cap = qp->init.cap;
	attr->sq_draining = qp->attr.qp_state == ENG_QPS_SQD && eng_sq_draining(qp);
	if (init)
		*init = qp->init;
	return 0;
}

uint32_t eng_qp_num(const struct eng_qp *qp)
{
	return qp->qpn;
}

uint32_t eng_qp_handle(const struct eng_qp *qp)
{
	return qp->index;
}

struct eng_qp *eng_qp_from_num(const struct eng_dev *dev, uint32_t qpn)
{
	return eng_idmap_get(&dev->qpns, qpn);
}

struct eng_qp *eng_qp_get(const struct eng_dev *dev, uint32_t handle)
{
	struct eng_qp *qp = eng_table_get(&dev->qps, handle);

	return qp == ENG_SRQ_SLOT ? NULL : qp;
}

static bool qpn_reserved(uint32_t n)
{
	return n < ENG_FIRST_QPN || n == ROCE_QPN_MULTICAST;
}

enum eng_qp_state eng_qp_state(const struct eng_qp *qp)
{
	return qp->attr.qp_state;
}

static void qp_free(struct eng_qp *qp)
{
	free(qp->swqe);
	free(qp->rwqe);
	free(qp->sge_pool);
	free(qp->inline_pool);
	free(qp->rd_res);
	free(qp->srq_wqe.sge);
	free(qp);
}

int eng_qp_create_as(struct eng_pd *pd, const struct eng_qp_init_attr *init,
		     const struct eng_name *as, struct eng_qp **out)
{
	const struct eng_qp_cap *c;
	struct eng_qp *qp;
	struct eng_sge *sge;
	uint32_t i;
	int err;

	/* IBA 10.2.9: an SRQ serves the QPs of its own PD. */
	if (init->srq && init->srq->pd != pd)
		return -EINVAL;
	c = &init->cap;
	if (type_index(init->qp_type) < 0 || !init->send_cq || !init->recv_cq ||
	    !c->max_send_wr || c->max_send_wr > ENG_MAX_WR ||
	    c->max_send_sge > ENG_MAX_SGE ||
	    (!init->srq && (c->max_recv_wr > ENG_MAX_WR || c->max_recv_sge > ENG_MAX_SGE)) ||
	    c->max_inline_data > ENG_MAX_INLINE)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->dev = pd->dev;
	qp->pd = pd;
	qp->init = *init;
	c = &qp->init.cap;
	if (init->srq) {	/* ibv_create_qp ignores the receive caps then */
		qp->init.cap.max_recv_wr = qp->init.cap.max_recv_sge = 0;
		qp->srq_wqe.sge = calloc(init->srq->max_sge + 1, sizeof(*qp->srq_wqe.sge));
		if (!qp->srq_wqe.sge) {
			err = -ENOMEM;
			goto free_qp;
		}
	}
	qp->sq.size = c->max_send_wr;
	qp->rq.size = c->max_recv_wr ? c->max_recv_wr : 1;
	qp->swqe = calloc(qp->sq.size, sizeof(*qp->swqe));
	qp->rwqe = calloc(qp->rq.size, sizeof(*qp->rwqe));
	qp->sge_pool = calloc((size_t)qp->sq.size * c->max_send_sge +
			      (size_t)qp->rq.size * c->max_recv_sge + 1, sizeof(*qp->sge_pool));
	qp->inline_pool = calloc((size_t)qp->sq.size * c->max_inline_data + 1, 1);
	qp->rd_res = calloc(ENG_MAX_RD_ATOMIC, sizeof(*qp->rd_res));
	if (!qp->swqe || !qp->rwqe || !qp->sge_pool || !qp->inline_pool || !qp->rd_res) {
		err = -ENOMEM;
		goto free_qp;
	}
	sge = qp->sge_pool;
	for (i = 0; i < qp->sq.size; i++, sge += c->max_send_sge) {
		qp->swqe[i].sge = sge;
		qp->swqe[i].inline_data = qp->inline_pool + (size_t)i * c->max_inline_data;
	}
	for (i = 0; i < qp->rq.size; i++, sge += c->max_recv_sge)
		qp->rwqe[i].sge = sge;
	/* Random QPNs: a peer cannot aim at a QP it was not told of. QP1 is
	 * everyone's (IBA 13.4.7): one per device. */
	if (init->qp_type == ENG_QPT_GSI) {
		qp->qpn = ENG_GSI_QPN;
		qp->attr.port_num = 1;
		qp->attr.qkey = ENG_GSI_QKEY;
		err = eng_idmap_get(&pd->dev->qpns, ENG_GSI_QPN) ? -EBUSY :
		      as && as->key != ENG_GSI_QPN ? -EINVAL :
		      eng_idmap_add(&pd->dev->qpns, ENG_GSI_QPN, qp);
	} else if (as) {	/* restored: the QPN peers know it by */
		qp->qpn = as->key;
		err = as->key > ROCE_QPN_MASK || qpn_reserved(as->key) ? -EINVAL :
		      eng_idmap_get(&pd->dev->qpns, as->key) ? -EEXIST :
		      eng_idmap_add(&pd->dev->qpns, as->key, qp);
	} else {
		err = eng_idmap_add_random(&pd->dev->qpns, ROCE_QPN_MASK, qpn_reserved, qp,
					   &qp->qpn);
	}
	if (err)
		goto free_qp;
	err = eng_table_add_at(&pd->dev->qps, qp, as ? &as->index : NULL, &qp->index);
	if (err)
		goto del_qpn;
	eng_qp_wake(qp);	/* a restored one may have work at once */
	pd->users++;
	init->send_cq->users++;
	init->recv_cq->users++;
	if (init->srq)
		init->srq->users++;
	*out = qp;
	return 0;

del_qpn:
	eng_idmap_del(&pd->dev->qpns, qp->qpn);
free_qp:
	qp_free(qp);
	return err;
}

int eng_qp_create(struct eng_pd *pd, const struct eng_qp_init_attr *init, struct eng_qp **out)
{
	return eng_qp_create_as(pd, init, NULL, out);
}

int eng_qp_destroy(struct eng_qp *qp)
{
	eng_cc_detach(qp);
	eng_mw_qp_gone(qp);	/* its windows are reached through it alone */
	eng_idmap_del(&qp->dev->qpns, qp->qpn);
	eng_table_del(&qp->dev->qps, qp->index);
	qp->dev->active[qp->index / 64] &= ~(1ull << (qp->index % 64));
	qp->pd->users--;
	qp->init.send_cq->users--;
	qp->init.recv_cq->users--;
	if (qp->init.srq)
		qp->init.srq->users--;
	qp_free(qp);
	return 0;
}

int eng_qp_refuse_wr(struct eng_qp *qp, bool recv, uint64_t wr_id, enum eng_wc_status status)
{
	struct eng_qp_attr a = { .qp_state = ENG_QPS_ERR };
	struct eng_wc wc;
	int err = 0;

	/* Earlier work first: it is flushed by the move to ERR (IBA 10.3.1). */
	if (qp->attr.qp_state != ENG_QPS_ERR)
		err = eng_qp_modify(qp, &a, ENG_QP_STATE);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = status;
	wc.opcode = recv ? ENG_WC_RECV : ENG_WC_SEND;
	wc.qp_num = qp->qpn;
	if (eng_cq_post(recv ? qp->init.recv_cq : qp->init.send_cq, &wc, false))
		eng_count(qp, ENG_CNT_ERR_CQ_OVERRUN);
	return err;
}

bool eng_wr_allowed(enum eng_qp_type t, enum eng_wr_opcode op)
{
	switch (op) {
	case ENG_WR_SEND:
	case ENG_WR_SEND_WITH_IMM:
		return true;
	case ENG_WR_RDMA_WRITE:
	case ENG_WR_RDMA_WRITE_WITH_IMM:
		return !eng_qpt_ud(t);
	case ENG_WR_RDMA_READ:
	case ENG_WR_ATOMIC_CMP_AND_SWP:
	case ENG_WR_ATOMIC_FETCH_AND_ADD:
	case ENG_WR_SEND_WITH_INV:	/* IETH opcodes are RC only (9.2.1) */
	case ENG_WR_LOCAL_INV:		/* RC only, as rxe */
	case ENG_WR_REG_MR:
	case ENG_WR_BIND_MW:		/* type 2B windows serve RC QPs here */
		return t == ENG_QPT_RC;
	}
	return false;
}

uint64_t eng_sge_total(const struct eng_sge *sge, unsigned int n)
{
	uint64_t len = 0;

	while (n--)
		len += sge[n].length;
	return len;
}

int eng_post_send(struct eng_qp *qp, const struct eng_send_wr *wr)
{
	enum eng_qp_state s = qp->attr.qp_state;
	bool inl = wr->send_flags & ENG_SEND_INLINE;
	struct eng_swqe *w;
	uint64_t len;
	uint32_t i, off;

	eng_qp_wake(qp);
	if (s == ENG_QPS_RESET || s == ENG_QPS_INIT || s == ENG_QPS_RTR)
		return -EINVAL;
	if (!eng_wr_allowed(qp->init.qp_type, wr->opcode) ||
	    wr->num_sge > qp->init.cap.max_send_sge || (wr->num_sge && !wr->sg_list) ||
	    (eng_qpt_ud(qp->init.qp_type) && !wr->ud.ah))
		return -EINVAL;
	len = eng_sge_total(wr->sg_list, wr->num_sge);
	/* Local operations carry no data (IBA 10.6.3.6, 10.6.7.2, 10.7.2.1). */
	if (eng_wr_is_local(wr->opcode) && (wr->num_sge || inl))
		return -EINVAL;
	if (len > ENG_MAX_MSG ||
	    (inl && (eng_wr_is_rd_atomic(wr->opcode) || len > qp->init.cap.max_inline_data)))
		return -EINVAL;
	/* IBA 9.4.5: an atomic returns one 64-bit value into the local SGEs */
	if (eng_wr_is_atomic(wr->opcode) && len != 8)
		return -EINVAL;
	if (qp->sq.count == qp->sq.size)
		return -ENOMEM;

	w = &qp->swqe[(qp->sq.head + qp->sq.count) % qp->sq.size];
	w->wr = *wr;
	w->length = len;
	if (wr->ud.ah)
		w->ah = *wr->ud.ah;
	if (inl) {
		/* Copied now: the caller may reuse its buffer once this returns. */
		for (i = 0, off = 0; i < wr->num_sge; off += wr->sg_list[i].length, i++)
			memcpy(w->inline_data + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
		w->wr.num_sge = 0;
	} else {
		if (wr->num_sge)	/* sg_list may be NULL for none */
			memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
	}
	w->wr.sg_list = w->sge;
	w->wr.ud.ah = &w->ah;
	qp->sq.count++;
	if (s == ENG_QPS_ERR || s == ENG_QPS_SQE)	/* the send queue takes no more */
		flush_sq(qp);
	return 0;
}

void eng_rwqe_set(struct eng_rwqe *w, uint64_t wr_id, const struct eng_sge *sge, unsigned int n)
{
	w->wr_id = wr_id;
	w->num_sge = n;
	w->length = eng_sge_total(sge, n);
	if (n)	/* sge may be NULL for none */
		memcpy(w->sge, sge, n * sizeof(*w->sge));
}

int eng_post_recv(struct eng_qp *qp, const struct eng_recv_wr *wr)
{
	struct eng_rwqe *w;

	if (qp->init.srq)	/* ibv_post_recv on an SRQ's QP: post to the SRQ */
		return -EINVAL;
	if (qp->attr.qp_state == ENG_QPS_RESET || wr->num_sge > qp->init.cap.max_recv_sge ||
	    (wr->num_sge && !wr->sg_list) || !qp->init.cap.max_recv_wr)
		return -EINVAL;
	if (eng_sge_total(wr->sg_list, wr->num_sge) > ENG_MAX_MSG)
		return -EINVAL;
	if (qp->rq.count == qp->rq.size)
		return -ENOMEM;
	w = &qp->rwqe[(qp->rq.head + qp->rq.count) % qp->rq.size];
	eng_rwqe_set(w, wr->wr_id, wr->sg_list, wr->num_sge);
	qp->rq.count++;
	if (qp->attr.qp_state == ENG_QPS_ERR)
		flush_queues(qp);
	return 0;
}
