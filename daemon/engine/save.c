// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's objects to records and back (save.h; the format is in
 * docs/restart.md). Saved between polls, so no frame is half-built: what
 * was sent and not acknowledged is sent again after the restore, as after
 * a loss. Every field read back is checked against what the engine's own
 * calls would have allowed (the ranges ibv_modify_qp and the post calls
 * check), and every reference must name an object restored before it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "psn.h"
#include "save.h"

#define NONE	UINT32_MAX	/* a reference to no object */

/* A timer as the time it had left (0: off; due already: 1 ns), and back. */
static uint64_t time_left(uint64_t t, uint64_t now)
{
	return !t ? 0 : t > now ? t - now : 1;
}

static uint64_t time_at(uint64_t left, uint64_t now)
{
	return left ? now + left : 0;
}

static void save_counters(const struct eng_counters *c, struct sbuf *b)
{
	unsigned int i;

	sb_u16(b, ENG_CNT_MAX);
	for (i = 0; i < ENG_CNT_MAX; i++)
		sb_u64(b, c->c[i]);
}

/* Counters are only ever added at the end of enum eng_counter: an older
 * state has fewer (the rest start at 0), a newer more (dropped). */
static void load_counters(struct eng_counters *c, struct srd *r)
{
	unsigned int i, n = sr_u16(r);

	for (i = 0; i < n && !r->err; i++) {
		uint64_t v = sr_u64(r);

		if (i < ENG_CNT_MAX)
			c->c[i] = v;
	}
}

static void save_sge(const struct eng_sge *s, unsigned int n, struct sbuf *b)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		sb_u64(b, s[i].addr);
		sb_u32(b, s[i].length);
		sb_u32(b, s[i].lkey);
	}
}

static void load_sge(struct eng_sge *s, unsigned int n, struct srd *r)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		s[i].addr = sr_u64(r);
		s[i].length = sr_u32(r);
		s[i].lkey = sr_u32(r);
	}
}

static void save_ah(const struct eng_ah_attr *ah, struct sbuf *b)
{
	sb_bytes(b, ah->dgid, 16);
	sb_u32(b, ah->flow_label);
	sb_u8(b, ah->sgid_index);
	sb_u8(b, ah->hop_limit);
	sb_u8(b, ah->traffic_class);
	sb_u8(b, ah->sl);
	sb_u8(b, ah->port_num);
	sb_bytes(b, ah->dmac, 6);
}

static void load_ah(struct eng_ah_attr *ah, struct srd *r)
{
	sr_bytes(r, ah->dgid, 16);
	ah->flow_label = sr_u32(r);
	ah->sgid_index = sr_u8(r);
	ah->hop_limit = sr_u8(r);
	ah->traffic_class = sr_u8(r);
	ah->sl = sr_u8(r);
	ah->port_num = sr_u8(r);
	sr_bytes(r, ah->dmac, 6);
	/* nothing to check: a UD work request's vector is the guest's as it
	 * gave it (eng_xmit refuses a GID index the table lacks) */
}

static void save_rwqe(const struct eng_rwqe *w, struct sbuf *b)
{
	sb_u64(b, w->wr_id);
	sb_u32(b, w->num_sge);
	save_sge(w->sge, w->num_sge, b);
}

/* Into w, whose sge[] has room for max. */
static void load_rwqe(struct eng_rwqe *w, unsigned int max, struct srd *r)
{
	struct eng_sge sge[ENG_MAX_SGE + 1];
	uint64_t wr_id = sr_u64(r);
	uint32_t n = sr_u32(r);

	if (n > max || n > ENG_MAX_SGE + 1) {
		r->err = -EBADMSG;
		return;
	}
	load_sge(sge, n, r);
	if (eng_sge_total(sge, n) > ENG_MAX_MSG)
		r->err = -EBADMSG;
	if (!r->err)
		eng_rwqe_set(w, wr_id, sge, n);
}

void eng_wc_save(const struct eng_wc *wc, struct sbuf *b)
{
	sb_u64(b, wc->wr_id);
	sb_u8(b, (uint8_t)wc->status);
	sb_u8(b, (uint8_t)wc->opcode);
	sb_u32(b, wc->vendor_err);
	sb_u32(b, wc->byte_len);
	sb_u32(b, wc->imm_data);
	sb_u32(b, wc->invalidate_rkey);
	sb_u32(b, wc->qp_num);
	sb_u32(b, wc->src_qp);
	sb_u32(b, wc->wc_flags);
	sb_u16(b, wc->pkey_index);
	sb_u8(b, wc->sl);
	sb_u8(b, wc->network_hdr_type);
}

static bool wc_opcode_ok(unsigned int op)
{
	return op <= ENG_WC_LOCAL_INV || op == ENG_WC_REG_MR || op == ENG_WC_RECV ||
	       op == ENG_WC_RECV_RDMA_WITH_IMM;
}

void eng_wc_load(struct eng_wc *wc, struct srd *r)
{
	wc->wr_id = sr_u64(r);
	wc->status = sr_u8(r);
	wc->opcode = sr_u8(r);
	wc->vendor_err = sr_u32(r);
	wc->byte_len = sr_u32(r);
	wc->imm_data = sr_u32(r);
	wc->invalidate_rkey = sr_u32(r);
	wc->qp_num = sr_u32(r);
	wc->src_qp = sr_u32(r);
	wc->wc_flags = sr_u32(r);
	wc->pkey_index = sr_u16(r);
	wc->sl = sr_u8(r);
	wc->network_hdr_type = sr_u8(r);
	if (wc->status > ENG_WC_GENERAL_ERR || !wc_opcode_ok(wc->opcode) ||
	    wc->wc_flags & ~(unsigned int)(ENG_WC_GRH | ENG_WC_WITH_IMM | ENG_WC_WITH_INV |
					   ENG_WC_WITH_NETWORK_HDR_TYPE | ENG_WC_SOLICITED))
		r->err = -EBADMSG;
}

static void save_dev_rec(const struct eng_dev *dev, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, ENG_REC_DEV);

	sb_u8(b, (uint8_t)dev->port_mtu);
	sb_u32(b, dev->pds.max);
	sb_u32(b, dev->mrs.max);
	sb_u32(b, dev->cqs.max);
	sb_u32(b, dev->qps.max);
	save_counters(&dev->cnt, b);
	sb_rec_end(b, at);
}

static int load_dev_rec(struct eng_dev *dev, struct srd *r)
{
	uint8_t mtu = sr_u8(r);
	uint32_t pds = sr_u32(r), mrs = sr_u32(r), cqs = sr_u32(r), qps = sr_u32(r);

	load_counters(&dev->cnt, r);
	if (r->err)
		return r->err;
	/* a VM's limits changed: its handles may not fit */
	if (mtu != dev->port_mtu || !eng_mtu_bytes(dev->port_mtu) || pds != dev->pds.max ||
	    mrs != dev->mrs.max || cqs != dev->cqs.max || qps != dev->qps.max)
		return -ERANGE;
	return 0;
}

static void save_mr(const struct eng_mr *mr, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, ENG_REC_MR);

	sb_u32(b, mr->index);
	sb_u32(b, mr->key);
	sb_u32(b, mr->pd->index);
	sb_u8(b, mr->fast);
	sb_u8(b, mr->valid);
	sb_u64(b, mr->iova);
	sb_u64(b, mr->length);
	sb_u32(b, mr->access);
	sb_rec_end(b, at);
}

static int load_mr(struct eng_dev *dev, struct srd *r, eng_restore_mr_fn fn, void *ctx)
{
	struct eng_name as = { .index = sr_u32(r), .key = sr_u32(r) };
	struct eng_pd *pd = eng_table_get(&dev->pds, sr_u32(r));
	bool fast = sr_bool(r), valid = sr_bool(r);
	uint64_t iova = sr_u64(r), length = sr_u64(r);
	uint32_t access = sr_u32(r);
	eng_mem_map_fn map = NULL;
	struct eng_mr *mr;
	void *mem = NULL;
	int err;

	if (r->err)
		return r->err;
	if (!pd || (!fast && !valid))
		return -EBADMSG;
	err = fn(ctx, as.index, &map, &mem);
	if (err)
		return err;
	err = eng_mr_new_as(pd, iova, length, access, map, mem, fast, &as, &mr);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	mr->valid = valid;
	return 0;
}

static void save_cq(const struct eng_cq *cq, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, ENG_REC_CQ);
	uint32_t i;

	sb_u32(b, cq->index);
	sb_u32(b, cq->size);
	sb_u32(b, cq->head);
	sb_u32(b, cq->count);
	sb_u8(b, cq->overrun);
	for (i = 0; i < cq->count; i++)
		eng_wc_save(&cq->ring[(cq->head + i) % cq->size], b);
	sb_rec_end(b, at);
}

static int load_cq(struct eng_dev *dev, struct srd *r)
{
	struct eng_name as = { .index = sr_u32(r) };
	uint32_t size = sr_u32(r), head = sr_u32(r), count = sr_u32(r), i;
	bool overrun = sr_bool(r);
	struct eng_cq *cq;
	int err;

	if (r->err)
		return r->err;
	if (!size || size > ENG_MAX_CQE || head >= size || count > size)
		return -EBADMSG;
	err = eng_cq_create_as(dev, size, &as, &cq);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	cq->head = head;
	cq->count = count;
	cq->overrun = overrun;
	for (i = 0; i < count; i++)
		eng_wc_load(&cq->ring[(head + i) % size], r);
	return r->err;
}

static void save_srq(const struct eng_srq *srq, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, ENG_REC_SRQ);
	uint32_t i;

	sb_u32(b, srq->index);
	sb_u32(b, srq->slot);
	sb_u32(b, srq->pd->index);
	sb_u32(b, srq->rq.size);
	sb_u32(b, srq->max_sge);
	sb_u32(b, srq->limit);
	sb_u32(b, srq->rq.head);
	sb_u32(b, srq->rq.count);
	for (i = 0; i < srq->rq.count; i++)
		save_rwqe(&srq->rwqe[(srq->rq.head + i) % srq->rq.size], b);
	sb_rec_end(b, at);
}

static int load_srq(struct eng_dev *dev, struct srd *r)
{
	struct eng_name as = { .index = sr_u32(r), .key = sr_u32(r) };
	struct eng_pd *pd = eng_table_get(&dev->pds, sr_u32(r));
	struct eng_srq_attr a = { .max_wr = sr_u32(r), .max_sge = sr_u32(r),
				  .srq_limit = sr_u32(r) };
	uint32_t head = sr_u32(r), count = sr_u32(r), i;
	struct eng_srq *srq;
	int err;

	if (r->err)
		return r->err;
	if (!pd || head >= a.max_wr || count > a.max_wr)
		return -EBADMSG;
	err = eng_srq_create_as(pd, &a, &as, &srq);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	srq->rq.head = head;
	srq->rq.count = count;
	for (i = 0; i < count; i++)
		load_rwqe(&srq->rwqe[(head + i) % a.max_wr], srq->max_sge, r);
	return r->err;
}

static void save_swqe(const struct eng_swqe *w, struct sbuf *b)
{
	const struct eng_send_wr *wr = &w->wr;

	sb_u64(b, wr->wr_id);
	sb_u8(b, (uint8_t)wr->opcode);
	sb_u32(b, wr->send_flags);
	sb_u32(b, wr->imm_data);
	sb_u32(b, wr->num_sge);
	sb_u32(b, wr->ud.remote_qpn);
	sb_u32(b, wr->ud.remote_qkey);
	sb_u32(b, wr->invalidate_rkey);
	switch (wr->opcode) {
	case ENG_WR_RDMA_WRITE:
	case ENG_WR_RDMA_WRITE_WITH_IMM:
	case ENG_WR_RDMA_READ:
		sb_u64(b, wr->rdma.remote_addr);
		sb_u32(b, wr->rdma.rkey);
		break;
	case ENG_WR_ATOMIC_CMP_AND_SWP:
	case ENG_WR_ATOMIC_FETCH_AND_ADD:
		sb_u64(b, wr->atomic.remote_addr);
		sb_u64(b, wr->atomic.compare_add);
		sb_u64(b, wr->atomic.swap);
		sb_u32(b, wr->atomic.rkey);
		break;
	case ENG_WR_REG_MR:
		sb_u32(b, wr->reg.mrn);
		sb_u32(b, wr->reg.key);
		sb_u32(b, wr->reg.access);
		break;
	case ENG_WR_BIND_MW:
		sb_u64(b, wr->bind.addr);
		sb_u64(b, wr->bind.length);
		sb_u32(b, wr->bind.mw_rkey);
		sb_u32(b, wr->bind.rkey);
		sb_u32(b, wr->bind.mr_lkey);
		sb_u32(b, wr->bind.access);
		break;
	default:
		break;
	}
	save_ah(&w->ah, b);
	sb_u64(b, w->length);
	sb_u8(b, w->started);
	sb_u32(b, w->first_psn);
	sb_u32(b, w->last_psn);
	sb_u32(b, w->rd_next);
	sb_u32(b, w->rd_end);
	save_sge(w->sge, wr->num_sge, b);
	if (wr->send_flags & ENG_SEND_INLINE)
		sb_bytes(b, w->inline_data, w->length);
}

/* Into qp's send queue entry w: the checks eng_post_send makes, and the
 * requester's own fields in range. */
static void load_swqe(struct eng_qp *qp, struct eng_swqe *w, struct srd *r)
{
	struct eng_send_wr *wr = &w->wr;
	bool inl;

	memset(wr, 0, sizeof(*wr));
	wr->wr_id = sr_u64(r);
	wr->opcode = sr_u8(r);
	wr->send_flags = sr_u32(r);
	wr->imm_data = sr_u32(r);
	wr->num_sge = sr_u32(r);
	wr->ud.remote_qpn = sr_u32(r);
	wr->ud.remote_qkey = sr_u32(r);
	wr->invalidate_rkey = sr_u32(r);
	switch (wr->opcode) {
	case ENG_WR_RDMA_WRITE:
	case ENG_WR_RDMA_WRITE_WITH_IMM:
	case ENG_WR_RDMA_READ:
		wr->rdma.remote_addr = sr_u64(r);
		wr->rdma.rkey = sr_u32(r);
		break;
	case ENG_WR_ATOMIC_CMP_AND_SWP:
	case ENG_WR_ATOMIC_FETCH_AND_ADD:
		wr->atomic.remote_addr = sr_u64(r);
		wr->atomic.compare_add = sr_u64(r);
		wr->atomic.swap = sr_u64(r);
		wr->atomic.rkey = sr_u32(r);
		break;
	case ENG_WR_REG_MR:
		wr->reg.mrn = sr_u32(r);
		wr->reg.key = sr_u32(r);
		wr->reg.access = sr_u32(r);
		break;
	case ENG_WR_BIND_MW:
		wr->bind.addr = sr_u64(r);
		wr->bind.length = sr_u64(r);
		wr->bind.mw_rkey = sr_u32(r);
		wr->bind.rkey = sr_u32(r);
		wr->bind.mr_lkey = sr_u32(r);
		wr->bind.access = sr_u32(r);
		break;
	default:
		break;
	}
	load_ah(&w->ah, r);
	w->length = sr_u64(r);
	w->started = sr_bool(r);
	w->first_psn = sr_u32(r);
	w->last_psn = sr_u32(r);
	w->rd_next = sr_u32(r);
	w->rd_end = sr_u32(r);
	inl = wr->send_flags & ENG_SEND_INLINE;
	if (r->err || !eng_wr_allowed(qp->init.qp_type, wr->opcode) ||
	    wr->send_flags & ~(unsigned int)(ENG_SEND_FENCE | ENG_SEND_SIGNALED |
					     ENG_SEND_SOLICITED | ENG_SEND_INLINE) ||
	    wr->num_sge > qp->init.cap.max_send_sge || (inl && wr->num_sge) ||
	    w->length > ENG_MAX_MSG || (inl && w->length > qp->init.cap.max_inline_data) ||
	    (inl && eng_wr_is_rd_atomic(wr->opcode)) ||
	    (eng_wr_is_atomic(wr->opcode) && w->length != 8) ||
	    (eng_wr_is_local(wr->opcode) && (wr->num_sge || inl)) ||
	    (w->first_psn | w->last_psn | w->rd_next | w->rd_end) > ROCE_PSN_MASK) {
		r->err = -EBADMSG;
		return;
	}
	load_sge(w->sge, wr->num_sge, r);
	if (!inl && eng_sge_total(w->sge, wr->num_sge) != w->length)
		r->err = -EBADMSG;
	if (inl)
		sr_bytes(r, w->inline_data, w->length);
	wr->sg_list = w->sge;
	wr->ud.ah = &w->ah;
}

static void save_rd_res(const struct eng_rd_res *x, struct sbuf *b)
{
	sb_u8(b, x->valid);
	if (!x->valid)
		return;
	sb_u8(b, x->atomic);
	sb_u64(b, x->orig);
	sb_u32(b, x->first_psn);
	sb_u32(b, x->npkts);
	sb_u32(b, x->lo);
	sb_u32(b, x->end);
	sb_u32(b, x->next);
	sb_u64(b, x->va);
	sb_u32(b, x->len);
	sb_u32(b, x->rkey);
	sb_u64(b, x->va0);
	sb_u32(b, x->len0);
}

static void load_rd_res(const struct eng_qp *qp, struct eng_rd_res *x, struct srd *r)
{
	memset(x, 0, sizeof(*x));
	x->valid = sr_bool(r);
	if (!x->valid)
		return;
	x->atomic = sr_bool(r);
	x->orig = sr_u64(r);
	x->first_psn = sr_u32(r);
	x->npkts = sr_u32(r);
	x->lo = sr_u32(r);
	x->end = sr_u32(r);
	x->next = sr_u32(r);
	x->va = sr_u64(r);
	x->len = sr_u32(r);
	x->rkey = sr_u32(r);
	x->va0 = sr_u64(r);
	x->len0 = sr_u32(r);
	/* the responses' count follows from the length, as resp.c made it */
	if ((x->first_psn | x->lo | x->end) > ROCE_PSN_MASK || x->len > ENG_MAX_MSG ||
	    x->len0 > ENG_MAX_MSG || x->next > x->npkts ||
	    x->npkts != (x->atomic ? 1 : eng_npkts(x->len, eng_qp_mtu(qp))))
		r->err = -EBADMSG;
}

static void save_qp(const struct eng_qp *qp, uint64_t now, struct sbuf *b)
{
	const struct eng_qp_attr *a = &qp->attr;
	size_t at = sb_rec_begin(b, ENG_REC_QP);
	uint32_t i;

	sb_u32(b, qp->index);
	sb_u32(b, qp->qpn);
	sb_u32(b, qp->pd->index);
	sb_u8(b, (uint8_t)qp->init.qp_type);
	sb_u32(b, qp->init.send_cq->index);
	sb_u32(b, qp->init.recv_cq->index);
	sb_u32(b, qp->init.srq ? qp->init.srq->index : NONE);
	sb_u32(b, qp->init.cap.max_send_wr);
	sb_u32(b, qp->init.cap.max_recv_wr);
	sb_u32(b, qp->init.cap.max_send_sge);
	sb_u32(b, qp->init.cap.max_recv_sge);
	sb_u32(b, qp->init.cap.max_inline_data);
	sb_u8(b, qp->init.sq_sig_all);

	sb_u8(b, (uint8_t)a->qp_state);
	sb_u8(b, (uint8_t)a->path_mtu);
	sb_u32(b, a->qkey);
	sb_u32(b, a->rq_psn);
	sb_u32(b, a->sq_psn);
	sb_u32(b, a->dest_qp_num);
	sb_u32(b, a->qp_access_flags);
	save_ah(&a->ah_attr, b);
	sb_u16(b, a->pkey_index);
	sb_u8(b, a->en_sqd_async_notify);
	sb_u8(b, a->max_rd_atomic);
	sb_u8(b, a->max_dest_rd_atomic);
	sb_u8(b, a->min_rnr_timer);
	sb_u8(b, a->port_num);
	sb_u8(b, a->timeout);
	sb_u8(b, a->retry_cnt);
	sb_u8(b, a->rnr_retry);

	sb_u32(b, qp->sq.head);
	sb_u32(b, qp->sq.count);
	for (i = 0; i < qp->sq.count; i++)
		save_swqe(&qp->swqe[(qp->sq.head + i) % qp->sq.size], b);
	sb_u32(b, qp->rq.head);
	sb_u32(b, qp->rq.count);
	for (i = 0; i < qp->rq.count; i++)
		save_rwqe(&qp->rwqe[(qp->rq.head + i) % qp->rq.size], b);
	sb_u8(b, qp->srq_held);
	if (qp->srq_held)
		save_rwqe(&qp->srq_wqe, b);

	sb_u32(b, qp->req.psn);
	sb_u32(b, qp->req.wqe);
	sb_u64(b, qp->req.offset);
	sb_u32(b, qp->req.noack);
	sb_u32(b, qp->req.max_psn);
	sb_u8(b, qp->req.drained_sent);

	sb_u32(b, qp->comp.psn);
	sb_u64(b, time_left(qp->comp.deadline, now));
	sb_u8(b, qp->comp.retry_left);
	sb_u8(b, qp->comp.rnr_left);
	sb_u64(b, time_left(qp->comp.rnr_until, now));
	sb_u8(b, qp->comp.gap_handled);
	sb_u8(b, qp->comp.cc_held);
	sb_u8(b, qp->comp.cc_forgiven);
	sb_u64(b, time_left(qp->comp.probe_at, now));
	sb_u8(b, qp->comp.probes);

	sb_u8(b, (uint8_t)qp->rd_res_next);
	for (i = 0; i < ENG_MAX_RD_ATOMIC; i++)
		save_rd_res(&qp->rd_res[i], b);

	sb_u32(b, qp->resp.psn);
	sb_u32(b, qp->resp.msn);
	sb_u32(b, qp->resp.in_msg);
	sb_u8(b, qp->resp.ack_pending);
	sb_u8(b, qp->resp.nak_sent);
	sb_u64(b, qp->resp.offset);
	sb_u32(b, qp->resp.wrkey);
	sb_u64(b, qp->resp.wva);
	sb_u32(b, qp->resp.wresid);
	save_counters(&qp->cnt, b);
	sb_rec_end(b, at);
}

/* The attributes ibv_modify_qp could have set (check_values in qp.c). */
static int load_attr(struct eng_qp *qp, struct srd *r)
{
	struct eng_qp_attr *a = &qp->attr;

	a->qp_state = a->cur_qp_state = sr_u8(r);
	a->path_mtu = sr_u8(r);
	a->qkey = sr_u32(r);
	a->rq_psn = sr_u32(r);
	a->sq_psn = sr_u32(r);
	a->dest_qp_num = sr_u32(r);
	a->qp_access_flags = sr_u32(r);
	load_ah(&a->ah_attr, r);
	a->pkey_index = sr_u16(r);
	a->en_sqd_async_notify = sr_u8(r);
	a->max_rd_atomic = sr_u8(r);
	a->max_dest_rd_atomic = sr_u8(r);
	a->min_rnr_timer = sr_u8(r);
	a->port_num = sr_u8(r);
	a->timeout = sr_u8(r);
	a->retry_cnt = sr_u8(r);
	a->rnr_retry = sr_u8(r);
	if (r->err)
		return r->err;
	/* (not the path MTU against the port's: eng_qp_mtu caps it) */
	if (a->qp_state >= ENG_QPS_MAX || (a->path_mtu && !eng_mtu_bytes(a->path_mtu)) ||
	    (a->rq_psn | a->sq_psn) > ROCE_PSN_MASK || a->dest_qp_num > ROCE_QPN_MASK ||
	    a->qp_access_flags & ~ENG_ACCESS_ALL || a->pkey_index ||
	    a->ah_attr.sgid_index >= ENG_GID_TABLE_LEN ||
	    a->max_rd_atomic > ENG_MAX_RD_ATOMIC || a->max_dest_rd_atomic > ENG_MAX_RD_ATOMIC ||
	    a->min_rnr_timer > 31 || a->port_num > 1 || a->timeout > 31 || a->retry_cnt > 7 ||
	    a->rnr_retry > 7 || a->ah_attr.port_num > 1)
		return -EBADMSG;
	return 0;
}

static int load_qp_queues(struct eng_qp *qp, struct srd *r)
{
	uint32_t i;

	qp->sq.head = sr_u32(r);
	qp->sq.count = sr_u32(r);
	if (r->err || qp->sq.head >= qp->sq.size || qp->sq.count > qp->sq.size)
		return -EBADMSG;
	for (i = 0; i < qp->sq.count && !r->err; i++)
		load_swqe(qp, &qp->swqe[(qp->sq.head + i) % qp->sq.size], r);
	qp->rq.head = sr_u32(r);
	qp->rq.count = sr_u32(r);
	if (r->err || qp->rq.head >= qp->rq.size || qp->rq.count > qp->rq.size ||
	    (qp->rq.count && !qp->init.cap.max_recv_wr))
		return -EBADMSG;
	for (i = 0; i < qp->rq.count; i++)
		load_rwqe(&qp->rwqe[(qp->rq.head + i) % qp->rq.size], qp->init.cap.max_recv_sge, r);
	qp->srq_held = sr_bool(r);
	if (qp->srq_held && !qp->init.srq)
		return -EBADMSG;
	if (qp->srq_held)
		load_rwqe(&qp->srq_wqe, qp->init.srq->max_sge, r);
	return r->err;
}

static int load_qp_transport(struct eng_qp *qp, uint64_t now, struct srd *r)
{
	const struct eng_swqe *w;
	uint32_t i;

	qp->req.psn = sr_u32(r);
	qp->req.wqe = sr_u32(r);
	qp->req.offset = sr_u64(r);
	qp->req.noack = sr_u32(r);
	qp->req.max_psn = sr_u32(r);
	qp->req.drained_sent = sr_bool(r);
	qp->comp.psn = sr_u32(r);
	qp->comp.deadline = time_at(sr_u64(r), now);
	qp->comp.retry_left = sr_u8(r);
	qp->comp.rnr_left = sr_u8(r);
	qp->comp.rnr_until = time_at(sr_u64(r), now);
	qp->comp.gap_handled = sr_bool(r);
	qp->comp.cc_held = sr_bool(r);
	qp->comp.cc_forgiven = sr_u8(r);
	qp->comp.probe_at = time_at(sr_u64(r), now);
	qp->comp.probes = sr_u8(r);
	qp->rd_res_next = sr_u8(r);
	if (r->err)
		return r->err;
	if ((qp->req.psn | qp->req.max_psn | qp->comp.psn) > ROCE_PSN_MASK ||
	    qp->req.wqe > qp->sq.count || qp->comp.retry_left > 7 || qp->comp.rnr_left > 7 ||
	    qp->comp.cc_forgiven > ENG_CC_FORGIVE || qp->comp.probes > ENG_CC_PTO_MAX_SHIFT ||
	    qp->rd_res_next >= (qp->attr.max_dest_rd_atomic ? qp->attr.max_dest_rd_atomic : 1))
		return -EBADMSG;
	/* the WQE being sent holds the offset; none is being sent at count */
	w = &qp->swqe[(qp->sq.head + qp->req.wqe) % qp->sq.size];
	if (qp->req.wqe == qp->sq.count ? qp->req.offset != 0 : qp->req.offset > w->length)
		return -EBADMSG;
	for (i = 0; i < ENG_MAX_RD_ATOMIC; i++)
		load_rd_res(qp, &qp->rd_res[i], r);
	qp->resp.psn = sr_u32(r);
	qp->resp.msn = sr_u32(r);
	qp->resp.in_msg = sr_u32(r);
	qp->resp.ack_pending = sr_bool(r);
	qp->resp.nak_sent = sr_bool(r);
	qp->resp.offset = sr_u64(r);
	qp->resp.wrkey = sr_u32(r);
	qp->resp.wva = sr_u64(r);
	qp->resp.wresid = sr_u32(r);
	load_counters(&qp->cnt, r);
	if (r->err)
		return r->err;
	if ((qp->resp.psn | qp->resp.msn) > ROCE_PSN_MASK ||
	    (qp->resp.in_msg && qp->resp.in_msg != ROCE_F_SEND &&
	     qp->resp.in_msg != ROCE_F_WRITE) ||
	    qp->resp.offset > ENG_MAX_MSG || qp->resp.wresid > ENG_MAX_MSG)
		return -EBADMSG;
	return 0;
}

static int load_qp(struct eng_dev *dev, struct srd *r)
{
	struct eng_name as = { .index = sr_u32(r), .key = sr_u32(r) };
	struct eng_pd *pd = eng_table_get(&dev->pds, sr_u32(r));
	struct eng_qp_init_attr init = { .qp_type = sr_u8(r) };
	uint32_t scq = sr_u32(r), rcq = sr_u32(r), srq = sr_u32(r);
	struct eng_qp *qp;
	int err;

	init.cap.max_send_wr = sr_u32(r);
	init.cap.max_recv_wr = sr_u32(r);
	init.cap.max_send_sge = sr_u32(r);
	init.cap.max_recv_sge = sr_u32(r);
	init.cap.max_inline_data = sr_u32(r);
	init.sq_sig_all = sr_bool(r);
	init.send_cq = eng_table_get(&dev->cqs, scq);
	init.recv_cq = eng_table_get(&dev->cqs, rcq);
	init.srq = srq == NONE ? NULL : eng_srq_get(dev, srq);
	if (r->err)
		return r->err;
	if (!pd || (srq != NONE && !init.srq))
		return -EBADMSG;
	err = eng_qp_create_as(pd, &init, &as, &qp);	/* checks type, caps, the CQs */
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	/* an SRQ's QP had its receive caps zeroed at creation */
	if (qp->init.cap.max_recv_wr != init.cap.max_recv_wr ||
	    qp->init.cap.max_recv_sge != init.cap.max_recv_sge)
		return -EBADMSG;
	err = load_attr(qp, r);
	if (!err)
		err = load_qp_queues(qp, r);
	if (!err)
		err = load_qp_transport(qp, eng_now(dev), r);
	if (err)
		return err;
	eng_cc_sync(qp);	/* its path, its packets in flight counted there */
	return 0;
}

static void save_mw(const struct eng_mw *mw, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, ENG_REC_MW);

	sb_u32(b, mw->k.index);
	sb_u32(b, mw->k.key);
	sb_u32(b, mw->k.pd->index);
	sb_u8(b, mw->k.valid);
	if (mw->k.valid) {
		sb_u64(b, mw->k.iova);
		sb_u64(b, mw->k.length);
		sb_u32(b, mw->k.access);
		sb_u32(b, mw->mr->index);
		sb_u32(b, mw->qp->index);
	}
	sb_rec_end(b, at);
}

static int load_mw(struct eng_dev *dev, struct srd *r)
{
	struct eng_name as = { .index = sr_u32(r), .key = sr_u32(r) };
	struct eng_pd *pd = eng_table_get(&dev->pds, sr_u32(r));
	bool valid = sr_bool(r);
	uint64_t iova = 0, length = 0;
	uint32_t access = 0;
	struct eng_mr *mr = NULL;
	struct eng_qp *qp = NULL;
	struct eng_mw *mw;
	int err;

	if (valid) {
		iova = sr_u64(r);
		length = sr_u64(r);
		access = sr_u32(r);
		mr = eng_table_get(&dev->mrs, sr_u32(r));
		qp = eng_table_get(&dev->qps, sr_u32(r));
	}
	if (r->err)
		return r->err;
	if (!pd)
		return -EBADMSG;
	/* a binding eng_mw_bind would have made: a range inside an MR of the
	 * window's PD that allows binding, remote rights, an RC QP of it */
	if (valid && (!mr || !qp || qp == ENG_SRQ_SLOT || mr->pd != pd || qp->pd != pd ||
		      !mr->valid || !(mr->access & ENG_ACCESS_MW_BIND) ||
		      qp->init.qp_type != ENG_QPT_RC || !length || access & ~ENG_ACCESS_ALL ||
		      access & ENG_ACCESS_LOCAL_WRITE || iova < mr->iova ||
		      iova - mr->iova > mr->length || length > mr->length - (iova - mr->iova)))
		return -EBADMSG;
	err = eng_mw_alloc_as(pd, &as, &mw);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	if (valid) {
		mw->k.valid = true;
		mw->k.iova = iova;
		mw->k.length = length;
		mw->k.access = access;
		mw->mr = mr;
		mw->qp = qp;
		mr->windows++;
	}
	return 0;
}

void eng_dev_save(const struct eng_dev *dev, struct sbuf *b)
{
	uint64_t now = eng_now(dev);
	size_t at;
	uint32_t i;

	save_dev_rec(dev, b);
	for (i = 0; i < dev->pds.cap; i++) {
		const struct eng_pd *pd = dev->pds.slot[i];

		if (pd) {
			at = sb_rec_begin(b, ENG_REC_PD);
			sb_u32(b, pd->index);
			sb_rec_end(b, at);
		}
	}
	for (i = 0; i < dev->mrs.cap; i++)
		if (dev->mrs.slot[i])
			save_mr(dev->mrs.slot[i], b);
	for (i = 0; i < dev->cqs.cap; i++)
		if (dev->cqs.slot[i])
			save_cq(dev->cqs.slot[i], b);
	for (i = 0; i < dev->srqs.cap; i++)
		if (dev->srqs.slot[i])
			save_srq(dev->srqs.slot[i], b);
	for (i = 0; i < dev->qps.cap; i++)
		if (dev->qps.slot[i] && dev->qps.slot[i] != ENG_SRQ_SLOT)
			save_qp(dev->qps.slot[i], now, b);
	for (i = 0; i < dev->mws.cap; i++)
		if (dev->mws.slot[i])
			save_mw(dev->mws.slot[i], b);
	sb_rec_end(b, sb_rec_begin(b, ENG_REC_END));
}

static const char *rec_name(uint16_t type)
{
	switch (type) {
	case ENG_REC_DEV: return "device";
	case ENG_REC_PD: return "PD";
	case ENG_REC_MR: return "MR";
	case ENG_REC_CQ: return "CQ";
	case ENG_REC_SRQ: return "SRQ";
	case ENG_REC_QP: return "QP";
	case ENG_REC_MW: return "window";
	case ENG_REC_END: return "end";
	default: return "unknown";
	}
}

int eng_dev_restore(struct eng_dev *dev, struct srd *r, eng_restore_mr_fn mr_fn, void *ctx,
		    char *why, size_t whylen)
{
	struct eng_name as;
	struct srd body;
	bool started = false;
	uint16_t type;
	struct eng_pd *pd;
	int err, k;

	if (dev->pds.used || dev->cqs.used || dev->qps.used) {
		snprintf(why, whylen, "the engine has objects already");
		return -EBUSY;
	}
	for (;;) {
		k = sr_rec(r, &type, &body);
		if (k <= 0) {
			err = k ? k : -EBADMSG;		/* no end record */
			snprintf(why, whylen, "%s at byte %zu", k ? "a record cut short" : "no end",
				 r->off);
			break;
		}
		if (!started && type != ENG_REC_DEV) {
			err = -EBADMSG;
			break;
		}
		switch (type) {
		case ENG_REC_DEV:
			err = started ? -EBADMSG : load_dev_rec(dev, &body);
			started = true;
			break;
		case ENG_REC_PD:
			as.index = sr_u32(&body);
			err = body.err ? body.err : eng_pd_alloc_as(dev, &as, &pd);
			if (err && err != -ENOMEM)
				err = -EBADMSG;
			break;
		case ENG_REC_MR:
			err = load_mr(dev, &body, mr_fn, ctx);
			break;
		case ENG_REC_CQ:
			err = load_cq(dev, &body);
			break;
		case ENG_REC_SRQ:
			err = load_srq(dev, &body);
			break;
		case ENG_REC_QP:
			err = load_qp(dev, &body);
			break;
		case ENG_REC_MW:
			err = load_mw(dev, &body);
			break;
		case ENG_REC_END:
			err = sr_done(&body);
			if (!err)
				return 0;
			break;
		default:
			err = -EBADMSG;
			break;
		}
		if (!err)
			err = sr_done(&body);
		if (err) {
			/* where a field read was refused (or the record's end) */
			snprintf(why, whylen, "%s record (%#x) at byte %zu of %zu: %s",
				 rec_name(type), type, body.off, body.len, strerror(-err));
			break;
		}
	}
	eng_dev_clear(dev);
	return err;
}

void eng_dev_clear(struct eng_dev *dev)
{
	uint32_t i;

	for (i = 0; i < dev->mws.cap; i++)
		if (dev->mws.slot[i])
			eng_mw_dealloc(dev->mws.slot[i]);
	for (i = 0; i < dev->qps.cap; i++)
		if (dev->qps.slot[i] && dev->qps.slot[i] != ENG_SRQ_SLOT)
			eng_qp_destroy(dev->qps.slot[i]);
	for (i = 0; i < dev->srqs.cap; i++)
		if (dev->srqs.slot[i])
			eng_srq_destroy(dev->srqs.slot[i]);
	for (i = 0; i < dev->mrs.cap; i++)
		if (dev->mrs.slot[i])
			eng_mr_dereg(dev->mrs.slot[i]);
	for (i = 0; i < dev->cqs.cap; i++)
		if (dev->cqs.slot[i])
			eng_cq_destroy(dev->cqs.slot[i]);
	for (i = 0; i < dev->pds.cap; i++)
		if (dev->pds.slot[i])
			eng_pd_free(dev->pds.slot[i]);
}
