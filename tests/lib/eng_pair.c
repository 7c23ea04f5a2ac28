// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eng_pair.h"

#define PAGE 4096u

void *flat_mem_map(void *ctx, uint64_t off, uint64_t len, uint64_t *contig)
{
	struct flat_mem *m = ctx;
	uint64_t room;

	if (off >= m->size)
		return NULL;
	room = PAGE - off % PAGE;
	*contig = len < room ? len : room;
	return m->base + off;
}

int side_gid(void *ctx, uint8_t index, uint8_t g[16], uint8_t m[6])
{
	struct side *s = ctx;

	if (index)
		return -ENOENT;
	memcpy(g, s->gid, 16);
	memcpy(m, s->mac, 6);
	return 0;
}

int side_open(struct side *s, uint8_t id, const struct eng_ops *ops, const struct eng_tx *tx,
	      struct eng_qp_init_attr *init, uint32_t cq_depth, uint64_t mem_size,
	      const char **what)
{
	int r;

	memset(s, 0, sizeof(*s));
	roce_gid_from_v4(s->gid, (const uint8_t[4]){ 10, 0, 0, id });
	s->mac[0] = 0x52;
	s->mac[5] = id;
	*what = "eng_dev_new";
	s->ops = ops;
	s->tx = (struct eng_tx){ tx->now_ns, tx->tx_alloc, tx->tx_send, s };
	s->dev = eng_dev_new(ops, s, &s->tx);
	if (!s->dev)
		return -ENOMEM;
	eng_dev_set_port_mtu(s->dev, ENG_MTU_4096);
	*what = "eng_pd_alloc";
	if ((r = eng_pd_alloc(s->dev, &s->pd)))
		return r;
	*what = "eng_cq_create";
	if ((r = eng_cq_create(s->dev, cq_depth, &s->cq)))
		return r;
	init->send_cq = init->recv_cq = s->cq;
	*what = "eng_qp_create";
	if ((r = eng_qp_create(s->pd, init, &s->qp)))
		return r;
	*what = "calloc";
	s->mem = calloc(1, mem_size);
	if (!s->mem)
		return -ENOMEM;
	s->flat = (struct flat_mem){ s->mem, mem_size };
	*what = "eng_mr_reg";
	return eng_mr_reg(s->pd, SIDE_IOVA, mem_size, ENG_ACCESS_ALL, flat_mem_map, &s->flat,
			  &s->mr);
}

int side_connect(struct side *s, enum eng_qp_type type, enum eng_mtu mtu, uint32_t sq_psn,
		 uint32_t rq_psn, uint8_t retry_cnt, uint8_t rnr_retry, const char **what)
{
	struct eng_qp_attr a = { .qp_state = ENG_QPS_INIT, .port_num = 1,
				 .qp_access_flags = ENG_ACCESS_ALL, .qkey = 0x11111111 };
	unsigned int m = ENG_QP_STATE | ENG_QP_PKEY_INDEX | ENG_QP_PORT;
	int r;

	m |= eng_qpt_ud(type) ? ENG_QP_QKEY : ENG_QP_ACCESS_FLAGS;
	if (type == ENG_QPT_GSI) {	/* as the MAD layer: no port, QP1's Q_Key */
		m &= ~ENG_QP_PORT;
		a.qkey = ENG_GSI_QKEY;
	}
	*what = "modify to INIT";
	if ((r = eng_qp_modify(s->qp, &a, m)))
		return r;
	a.qp_state = ENG_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = eng_qp_num(s->peer->qp);
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	memcpy(a.ah_attr.dgid, s->peer->gid, 16);
	memcpy(a.ah_attr.dmac, s->peer->mac, 6);
	a.ah_attr.port_num = 1;
	m = ENG_QP_STATE;
	if (type == ENG_QPT_RC)
		m |= ENG_QP_AV | ENG_QP_PATH_MTU | ENG_QP_DEST_QPN | ENG_QP_RQ_PSN |
		     ENG_QP_MAX_DEST_RD_ATOMIC | ENG_QP_MIN_RNR_TIMER;
	else if (type == ENG_QPT_UC)
		m |= ENG_QP_AV | ENG_QP_PATH_MTU | ENG_QP_DEST_QPN | ENG_QP_RQ_PSN;
	*what = "modify to RTR";
	if ((r = eng_qp_modify(s->qp, &a, m)))
		return r;
	a.qp_state = ENG_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;		/* 67 ms */
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 4;
	m = ENG_QP_STATE | ENG_QP_SQ_PSN;
	if (type == ENG_QPT_RC)
		m |= ENG_QP_TIMEOUT | ENG_QP_RETRY_CNT | ENG_QP_RNR_RETRY | ENG_QP_MAX_QP_RD_ATOMIC;
	*what = "modify to RTS";
	return eng_qp_modify(s->qp, &a, m);
}

static int side_mr(void *ctx, uint32_t handle, eng_mem_map_fn *map, void **mem)
{
	struct side *s = ctx;

	(void)handle;
	*map = flat_mem_map;
	*mem = &s->flat;
	return 0;
}

int side_restore(struct side *s, struct sbuf *first, struct sbuf *again, eng_restore_mr_fn mr,
		 void *ctx)
{
	uint32_t pd = eng_pd_handle(s->pd), cq = eng_cq_handle(s->cq);
	uint32_t qp = eng_qp_handle(s->qp), m = s->mr ? eng_mr_handle(s->mr) : UINT32_MAX;
	struct eng_dev *dev;
	char ewhy[160];
	struct srd r;
	int err;

	eng_dev_save(s->dev, first);
	if (first->err)
		return first->err;
	dev = eng_dev_new(s->ops, s, &s->tx);
	if (!dev)
		return -ENOMEM;
	eng_dev_set_port_mtu(dev, ENG_MTU_4096);
	r = (struct srd){ .p = first->p, .len = first->len };
	err = eng_dev_restore(dev, &r, mr ? mr : side_mr, mr ? ctx : s, ewhy, sizeof(ewhy));
	if (!err && r.off != r.len)
		err = -EBADMSG;
	if (err) {
		eng_dev_clear(dev);
		eng_dev_free(dev);
		return err;
	}
	eng_dev_save(dev, again);
	eng_dev_clear(s->dev);
	eng_dev_free(s->dev);
	s->dev = dev;
	s->pd = eng_pd_get(dev, pd);
	s->cq = eng_cq_get(dev, cq);
	s->qp = eng_qp_get(dev, qp);
	s->mr = eng_mr_get(dev, m);
	return again->err;
}

int side_close(struct side *s)
{
	int r = eng_qp_destroy(s->qp);

	r = r ? r : eng_mr_dereg(s->mr);
	r = r ? r : eng_cq_destroy(s->cq);
	r = r ? r : eng_pd_free(s->pd);
	eng_dev_free(s->dev);
	free(s->mem);
	return r;
}

int side_rx(struct side *s, uint8_t *frame, uint32_t len, enum roce_drop *why)
{
	struct roce_frag f = { frame, len };
	struct roce_pkt pkt;
	int r;

	r = roce_parse(&pkt, &f, 1, why);
	if (!r)
		eng_rx(s->dev, &pkt);
	return r;
}
