// SPDX-License-Identifier: GPL-2.0-only
/*
 * Completion queues. An overrun is not silent (the RFC demo lost send
 * completions that way): IBA 11.4.2.1 puts the CQ in error, the host gets an
 * asynchronous CQ error, and polling it fails from then on.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine_int.h"

int eng_cq_create_as(struct eng_dev *dev, uint32_t cqe, const struct eng_name *as,
		     struct eng_cq **out)
{
	struct eng_cq *cq;
	int err;

	if (!cqe || cqe > ENG_MAX_CQE)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ring = calloc(cqe, sizeof(*cq->ring));
	if (!cq->ring) {
		err = -ENOMEM;
		goto free_cq;
	}
	cq->dev = dev;
	cq->size = cqe;
	err = eng_table_add_at(&dev->cqs, cq, as ? &as->index : NULL, &cq->index);
	if (err)
		goto free_ring;
	*out = cq;
	return 0;

free_ring:
	free(cq->ring);
free_cq:
	free(cq);
	return err;
}

int eng_cq_create(struct eng_dev *dev, uint32_t cqe, struct eng_cq **out)
{
	return eng_cq_create_as(dev, cqe, NULL, out);
}

int eng_cq_destroy(struct eng_cq *cq)
{
	if (cq->users)
		return -EBUSY;
	eng_table_del(&cq->dev->cqs, cq->index);
	free(cq->ring);
	free(cq);
	return 0;
}

struct eng_cq *eng_cq_get(const struct eng_dev *dev, uint32_t handle)
{
	return eng_table_get(&dev->cqs, handle);
}

uint32_t eng_cq_handle(const struct eng_cq *cq)
{
	return cq->index;
}

int eng_cq_post(struct eng_cq *cq, const struct eng_wc *wc, bool solicited)
{
	const struct eng_ops *ops = cq->dev->ops;

	if (cq->overrun)
		return -ENOSPC;
	if (cq->count == cq->size) {
		cq->overrun = true;
		if (ops->async_error)
			ops->async_error(cq->dev->ctx, cq, NULL, ENG_EVENT_CQ_ERR);
		return -ENOSPC;
	}
	cq->ring[(cq->head + cq->count) % cq->size] = *wc;
	if (solicited)
		cq->ring[(cq->head + cq->count) % cq->size].wc_flags |= ENG_WC_SOLICITED;
	cq->count++;
	if (ops->cq_event)
		ops->cq_event(cq->dev->ctx, cq, solicited);
	return 0;
}

bool eng_cq_empty(const struct eng_cq *cq)
{
	return !cq->count && !cq->overrun;
}

int eng_cq_poll(struct eng_cq *cq, struct eng_wc *wc, int n)
{
	int i;

	if (cq->overrun)
		return -EIO;
	for (i = 0; i < n && cq->count; i++) {
		wc[i] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	return i;
}
