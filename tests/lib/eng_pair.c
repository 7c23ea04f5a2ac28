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

int side_open(struct side *s, uint8_t id, const struct eng_ops *ops,
	      struct eng_qp_init_attr *init, uint32_t cq_depth, uint64_t mem_size,
	      const char **what)
{
	int r;

	memset(s, 0, sizeof(*s));
	roce_gid_from_v4(s->gid, (const uint8_t[4]){ 10, 0, 0, id });
	s->mac[0] = 0x52;
	s->mac[5] = id;
	*what = "eng_dev_new";
	s->dev = eng_dev_new(ops, s);
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
