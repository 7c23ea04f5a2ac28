// SPDX-License-Identifier: GPL-2.0-only
/*
 * Shared receive queues (IBA 10.2.9, 11.2.3): one ring of receive WQEs for
 * the QPs created on it. A QP takes the head WQE when a message that needs
 * one starts and holds it until the message ends; the limit event fires once
 * when the ring falls below srq_limit, then the limit is disarmed.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine_int.h"

char eng_srq_slot_mark;

static void srq_free(struct eng_srq *srq)
{
	free(srq->rwqe);
	free(srq->sge_pool);
	free(srq);
}

/* A ring of size WQEs holding the srq's posted ones, oldest first; the old
 * ring is freed. -ENOMEM leaves the srq as it was. */
static int srq_ring(struct eng_srq *srq, uint32_t size)
{
	struct eng_rwqe *rwqe = calloc(size, sizeof(*rwqe));
	struct eng_sge *pool = calloc((size_t)size * srq->max_sge + 1, sizeof(*pool));
	uint32_t i;

	if (!rwqe || !pool) {
		free(rwqe);
		free(pool);
		return -ENOMEM;
	}
	for (i = 0; i < size; i++)
		rwqe[i].sge = pool + (size_t)i * srq->max_sge;
	for (i = 0; i < srq->rq.count; i++) {
		const struct eng_rwqe *w = &srq->rwqe[(srq->rq.head + i) % srq->rq.size];

		eng_rwqe_set(&rwqe[i], w->wr_id, w->sge, w->num_sge);
	}
	free(srq->rwqe);
	free(srq->sge_pool);
	srq->rwqe = rwqe;
	srq->sge_pool = pool;
	srq->rq.size = size;
	srq->rq.head = 0;
	return 0;
}

int eng_srq_create_as(struct eng_pd *pd, const struct eng_srq_attr *attr,
		      const struct eng_name *as, struct eng_srq **out)
{
	struct eng_dev *dev = pd->dev;
	struct eng_srq *srq;
	int err;

	/* rxe arms a limit given at creation; beyond max_wr it never fires. */
	if (!attr->max_wr || attr->max_wr > ENG_MAX_WR || attr->max_sge > ENG_MAX_SGE ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	srq->dev = dev;
	srq->pd = pd;
	srq->max_sge = attr->max_sge;
	srq->limit = attr->srq_limit;
	err = srq_ring(srq, attr->max_wr);
	if (err)
		goto free_srq;
	/* A slot among the QPs': the device model gives the SRQ its queues. */
	err = eng_table_add_at(&dev->qps, ENG_SRQ_SLOT, as ? &as->key : NULL, &srq->slot);
	if (err)
		goto free_srq;
	err = eng_table_add_at(&dev->srqs, srq, as ? &as->index : NULL, &srq->index);
	if (err)
		goto del_slot;
	pd->users++;
	*out = srq;
	return 0;

del_slot:
	eng_table_del(&dev->qps, srq->slot);
free_srq:
	srq_free(srq);
	return err;
}

int eng_srq_create(struct eng_pd *pd, const struct eng_srq_attr *attr, struct eng_srq **out)
{
	return eng_srq_create_as(pd, attr, NULL, out);
}

int eng_srq_destroy(struct eng_srq *srq)
{
	if (srq->users)
		return -EBUSY;
	eng_table_del(&srq->dev->srqs, srq->index);
	eng_table_del(&srq->dev->qps, srq->slot);
	srq->pd->users--;
	srq_free(srq);
	return 0;
}

int eng_srq_modify(struct eng_srq *srq, const struct eng_srq_attr *attr, unsigned int mask)
{
	uint32_t size = (mask & ENG_SRQ_MAX_WR) ? attr->max_wr : srq->rq.size;
	uint32_t limit = (mask & ENG_SRQ_LIMIT) ? attr->srq_limit : srq->limit;
	int err;

	if (mask & ~(unsigned int)(ENG_SRQ_MAX_WR | ENG_SRQ_LIMIT))
		return -EINVAL;
	/* IBA 11.2.3.3 resize: the posted WQEs must fit (rxe refuses less);
	 * the WQEs QPs took are theirs, copied out, and not moved. An armed
	 * limit stays within max_wr either way. All checked before anything
	 * changes. */
	if (!size || size > ENG_MAX_WR || size < srq->rq.count || limit > size)
		return -EINVAL;
	if (size != srq->rq.size) {
		err = srq_ring(srq, size);
		if (err)
			return err;
	}
	srq->limit = limit;
	return 0;
}

int eng_srq_query(const struct eng_srq *srq, struct eng_srq_attr *attr)
{
	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int eng_srq_post_recv(struct eng_srq *srq, const struct eng_recv_wr *wr)
{
	struct eng_rwqe *w;

	if (wr->num_sge > srq->max_sge || (wr->num_sge && !wr->sg_list) ||
	    eng_sge_total(wr->sg_list, wr->num_sge) > ENG_MAX_MSG)
		return -EINVAL;
	if (srq->rq.count == srq->rq.size)
		return -ENOMEM;
	w = &srq->rwqe[(srq->rq.head + srq->rq.count) % srq->rq.size];
	eng_rwqe_set(w, wr->wr_id, wr->sg_list, wr->num_sge);
	srq->rq.count++;
	return 0;
}

uint32_t eng_srq_handle(const struct eng_srq *srq)
{
	return srq->index;
}

uint32_t eng_srq_slot(const struct eng_srq *srq)
{
	return srq->slot;
}

uint32_t eng_srq_count(const struct eng_srq *srq)
{
	return srq->rq.count;
}

struct eng_srq *eng_srq_get(const struct eng_dev *dev, uint32_t handle)
{
	return eng_table_get(&dev->srqs, handle);
}

struct eng_srq *eng_qp_srq(const struct eng_qp *qp)
{
	return qp->init.srq;
}

struct eng_rwqe *eng_rq_head(struct eng_qp *qp)
{
	struct eng_srq *srq = qp->init.srq;
	struct eng_rwqe *w;

	if (!srq)
		return qp->rq.count ? &qp->rwqe[qp->rq.head] : NULL;
	if (qp->srq_held)
		return &qp->srq_wqe;
	if (!srq->rq.count)
		return NULL;
	/* Copied out: the SRQ's ring slot is free for the next post at once. */
	w = &srq->rwqe[srq->rq.head];
	eng_rwqe_set(&qp->srq_wqe, w->wr_id, w->sge, w->num_sge);
	qp->srq_held = true;
	srq->rq.head = (srq->rq.head + 1) % srq->rq.size;
	srq->rq.count--;
	/* IBA 10.2.9.4 / 11.2.3.3: once, when fewer than the limit remain. */
	if (srq->limit && srq->rq.count < srq->limit) {
		srq->limit = 0;
		if (qp->dev->ops->srq_limit)
			qp->dev->ops->srq_limit(qp->dev->ctx, srq, qp);
	}
	return &qp->srq_wqe;
}

void eng_rq_retire(struct eng_qp *qp)
{
	if (qp->init.srq) {
		qp->srq_held = false;
		return;
	}
	qp->rq.head = (qp->rq.head + 1) % qp->rq.size;
	qp->rq.count--;
}
