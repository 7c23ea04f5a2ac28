// SPDX-License-Identifier: GPL-2.0-only
/*
 * The virtio-rdma device model. Everything the guest names is checked here
 * before the engine sees it: handles against the config-space limits, page
 * lists against the memory table, WQEs against their QP's limits. The
 * guest's bytes are copied once and parsed from the copy.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vdev.h"
#include "vm.h"

#define CQE_SIZE sizeof(struct virtio_rdma_cqe)
#define CQ_EVENTS 8		/* asynchronous events waiting for a CQ buffer */
#define POLL_BUDGET 64		/* WQEs or CQEs per queue per poll */
#define ROCE_OVERHEAD 80	/* IPv6 + UDP + BTH + RETH + ICRC: rxe's margin */

struct vdev_cq {
	struct eng_cq *eng;		/* NULL: slot free */
	uint32_t armed;			/* VIRTIO_RDMA_NOTIFY_* or 0 */
	bool solicited;			/* a solicited completion arrived */
	bool have_held;			/* polled from the engine, no buffer yet */
	struct eng_wc held;
	struct virtio_rdma_cqe events[CQ_EVENTS];
	unsigned int n_events;
	bool in_error;			/* overran: nothing but its event */
};

struct vdev_qp {
	struct eng_qp *eng;		/* NULL: slot free */
	struct vdev_wq_limits sq, rq;
	uint32_t send_cqn, recv_cqn;
};

struct vdev_mr {
	struct vdev *v;
	struct eng_mr *eng;
	uint32_t pdn;
	bool dma;			/* GET_DMA_MR: iova = guest-physical */
	bool fast;			/* CREATE_MR: mapped by MAP_MR_SG */
	uint32_t max_num_sg;
	uint64_t first_off;		/* of the iova in the first page */
	uint64_t *pages;		/* guest-physical, checked against the memory table */
	uint32_t npages;
	uint32_t charged;		/* pages charged to v->mr_pages */
};

/* ---- WQE decoding (also the fuzz target) ---- */

static int parse_sges(const uint8_t *p, uint32_t n, struct eng_sge *sge)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct virtio_rdma_sge s;

		memcpy(&s, p + i * sizeof(s), sizeof(s));
		sge[i].addr = le64toh(s.addr);
		sge[i].length = le32toh(s.length);
		sge[i].lkey = le32toh(s.lkey);
	}
	return 0;
}

int vdev_parse_send_wqe(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
			struct vdev_send_wqe *out)
{
	const size_t hdr = sizeof(struct virtio_rdma_cmd_post_send);
	struct virtio_rdma_cmd_post_send c;
	uint32_t n, flags, op, i;
	uint64_t inl = 0;
	size_t need;

	memset(out, 0, sizeof(*out));
	if (len < hdr)
		return -EINVAL;
	memcpy(&c, buf, hdr);
	n = le32toh(c.num_sge);
	flags = le32toh(c.send_flags);
	op = le32toh(c.opcode);
	out->wr.wr_id = le64toh(c.wr_id);
	if (n > lim->max_sge || n > ENG_MAX_SGE)
		return -EINVAL;
	if (flags & ~(VIRTIO_IB_SEND_FENCE | VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_SOLICITED |
		      VIRTIO_IB_SEND_INLINE))
		return -EOPNOTSUPP;
	if (op > VIRTIO_IB_WR_RDMA_READ)
		return -EOPNOTSUPP;
	need = hdr + n * sizeof(struct virtio_rdma_sge);
	if (len < need)
		return -EINVAL;
	parse_sges(buf + hdr, n, out->sge);
	if (flags & VIRTIO_IB_SEND_INLINE) {
		if (op == VIRTIO_IB_WR_RDMA_READ)
			return -EINVAL;
		for (i = 0; i < n; i++)
			inl += out->sge[i].length;
		if (inl > lim->max_inline)
			return -EINVAL;
		/* The inline bytes follow the SGEs; addr becomes a host pointer. */
		for (i = 0, inl = 0; i < n; i++) {
			out->sge[i].addr = (uint64_t)(uintptr_t)(buf + need + inl);
			out->sge[i].lkey = 0;
			inl += out->sge[i].length;
		}
		need += inl;
	}
	if (len != need)
		return -EINVAL;
	out->wr.opcode = (enum eng_wr_opcode)op;
	out->wr.send_flags = flags;
	out->wr.imm_data = c.ex.imm_data;	/* network byte order both sides */
	out->wr.sg_list = out->sge;
	out->wr.num_sge = n;
	if (lim->qp_type == VIRTIO_IB_QPT_UD) {
		const struct virtio_rdma_av *av = &c.wr.ud.av;
		uint32_t stf = le32toh(av->sl_tclass_flowlabel);

		if (le32toh(av->port) != 1 || av->gid_index >= VIRTIO_RDMA_GID_TBL_LEN)
			return -EINVAL;
		memcpy(out->ah.dgid, av->dgid, 16);
		out->ah.flow_label = stf & 0xfffff;
		out->ah.traffic_class = (stf >> 20) & 0xff;
		out->ah.sl = stf >> 28;
		out->ah.sgid_index = av->gid_index;
		out->ah.hop_limit = av->hop_limit;
		out->ah.port_num = 1;
		memcpy(out->ah.dmac, av->dmac, 6);
		out->wr.ud.ah = &out->ah;
		out->wr.ud.remote_qpn = le32toh(c.wr.ud.remote_qpn);
		out->wr.ud.remote_qkey = le32toh(c.wr.ud.remote_qkey);
	} else {
		out->wr.rdma.remote_addr = le64toh(c.wr.rdma.remote_addr);
		out->wr.rdma.rkey = le32toh(c.wr.rdma.rkey);
	}
	return 0;
}

int vdev_parse_recv_wqe(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
			struct vdev_recv_wqe *out)
{
	const size_t hdr = sizeof(struct virtio_rdma_cmd_post_recv);
	struct virtio_rdma_cmd_post_recv c;
	uint32_t n;

	memset(out, 0, sizeof(*out));
	if (len < hdr)
		return -EINVAL;
	memcpy(&c, buf, hdr);
	n = le32toh(c.num_sge);
	out->wr.wr_id = le64toh(c.wr_id);
	if (n > lim->max_sge || n > ENG_MAX_SGE || len != hdr + n * sizeof(struct virtio_rdma_sge))
		return -EINVAL;
	parse_sges(buf + hdr, n, out->sge);
	out->wr.sg_list = out->sge;
	out->wr.num_sge = n;
	return 0;
}

/* ---- memory ---- */

static void *mr_map(void *mem, uint64_t off, uint64_t len, uint64_t *contig)
{
	struct vdev_mr *mr = mem;
	const struct guest_mem *gm = &mr->v->vu.mem;
	uint64_t x, span, run;
	uint32_t i;
	void *p;

	if (mr->dma) {
		p = guest_gpa_span(gm, off, &span);
		*contig = span;
		return p;
	}
	x = mr->first_off + off;
	if (x / VIRTIO_RDMA_PAGE_SIZE >= mr->npages)
		return NULL;
	i = x / VIRTIO_RDMA_PAGE_SIZE;
	p = guest_gpa_span(gm, mr->pages[i] + x % VIRTIO_RDMA_PAGE_SIZE, &span);
	if (!p)
		return NULL;
	/* Following pages that are contiguous in guest memory, as far as asked. */
	run = VIRTIO_RDMA_PAGE_SIZE - x % VIRTIO_RDMA_PAGE_SIZE;
	for (; run < len && i + 1 < mr->npages &&
	       mr->pages[i + 1] == mr->pages[i] + VIRTIO_RDMA_PAGE_SIZE; i++)
		run += VIRTIO_RDMA_PAGE_SIZE;
	*contig = span < run ? span : run;
	return p;
}

/* Copy a page list from guest memory (read once) and check every page;
 * it replaces the MR's pages only when all are good. */
static uint8_t load_pages(struct vdev *v, struct vdev_mr *mr, uint64_t pages_gpa, uint32_t npages)
{
	const void *src;
	uint64_t *pages;
	uint32_t i;

	v->poll_pages += npages;
	src = guest_gpa(&v->vu.mem, pages_gpa, (uint64_t)npages * 8);
	if (!src)
		return VIRTIO_RDMA_ERR_FAULT;
	pages = malloc((size_t)npages * sizeof(*pages));
	if (!pages)
		return VIRTIO_RDMA_ERR_NOMEM;
	memcpy(pages, src, (size_t)npages * sizeof(*pages));
	for (i = 0; i < npages; i++) {
		pages[i] = le64toh(pages[i]);
		if (pages[i] % VIRTIO_RDMA_PAGE_SIZE) {
			free(pages);
			return VIRTIO_RDMA_ERR_INVAL;
		}
		if (!guest_gpa(&v->vu.mem, pages[i], VIRTIO_RDMA_PAGE_SIZE)) {
			free(pages);
			return VIRTIO_RDMA_ERR_FAULT;
		}
	}
	free(mr->pages);
	mr->pages = pages;
	mr->npages = npages;
	return VIRTIO_RDMA_OK;
}

/* Charge n pages to the VM's budget (max_mr_pages); NOMEM, counted, past it. */
static uint8_t charge_pages(struct vdev *v, struct vdev_mr *mr, uint32_t n)
{
	if (n > v->max_mr_pages - v->mr_pages) {
		v->stats.refused_mrs++;
		return VIRTIO_RDMA_ERR_NOMEM;
	}
	v->mr_pages += n;
	mr->charged = n;
	return VIRTIO_RDMA_OK;
}

static void mr_free(struct vdev *v, struct vdev_mr *mr)
{
	if (mr->eng)
		eng_mr_dereg(mr->eng);
	v->mr_pages -= mr->charged;
	v->poll_pages += mr->npages;
	free(mr->pages);
	free(mr);
}

/* ---- engine glue ---- */

static uint64_t op_now(void *ctx)
{
	struct vdev *v = ctx;

	return v->host.now_ns(v->host.ctx);
}

static unsigned int op_tx_alloc(void *ctx, uint32_t len, struct roce_frag *frags, unsigned int max)
{
	struct vdev *v = ctx;

	return v->host.tx_alloc(v->host.ctx, len, frags, max);
}

static void op_tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct vdev *v = ctx;

	v->host.tx_send(v->host.ctx, frags, n, len);
}

static const uint8_t *vm_mac(const struct vdev *v)
{
	return v->cfg->has_mac ? v->cfg->mac : v->port.mac;
}

static int op_gid(void *ctx, uint8_t index, uint8_t gid[16], uint8_t mac[6])
{
	struct vdev *v = ctx;

	if (index >= VIRTIO_RDMA_GID_TBL_LEN || !v->gid_valid[index])
		return -ENOENT;
	memcpy(gid, v->config.gid_tbl[index], 16);
	memcpy(mac, vm_mac(v), 6);
	return 0;
}

static struct vdev_cq *cq_of(struct vdev *v, struct eng_cq *ecq)
{
	uint32_t n = eng_cq_handle(ecq);

	return n < v->max_cq && v->cqs[n].eng == ecq ? &v->cqs[n] : NULL;
}

static void op_cq_event(void *ctx, struct eng_cq *ecq, bool solicited)
{
	struct vdev_cq *cq = cq_of(ctx, ecq);

	if (cq && solicited)
		cq->solicited = true;
}

static void queue_event(struct vdev *v, struct vdev_cq *cq, uint32_t event, uint32_t qpn)
{
	struct virtio_rdma_cqe *e;

	if (cq->n_events == CQ_EVENTS) {
		v->stats.events_lost++;
		return;
	}
	e = &cq->events[cq->n_events++];
	memset(e, 0, sizeof(*e));
	e->opcode = VIRTIO_RDMA_WC_ASYNC_EVENT;
	e->vendor_err = htole32(event);
	e->qp_num = htole32(qpn);
	e->port_num = 1;
	v->stats.events++;
}

static void op_async(void *ctx, struct eng_cq *ecq, struct eng_qp *eqp, int event)
{
	struct vdev *v = ctx;
	struct vdev_cq *cq = NULL;
	uint32_t qpn = 0;

	if (ecq) {
		cq = cq_of(v, ecq);
		if (cq && event == ENG_EVENT_CQ_ERR)
			cq->in_error = true;
	} else if (eqp) {
		uint32_t k = eng_qp_handle(eqp);

		qpn = eng_qp_num(eqp);
		if (k < v->max_qp && v->qps[k].eng == eqp)
			cq = &v->cqs[v->qps[k].send_cqn];
	}
	if (!cq)
		return;
	queue_event(v, cq, event == ENG_EVENT_CQ_ERR ? VIRTIO_RDMA_EVENT_CQ_ERR :
			   event == ENG_EVENT_SQ_DRAINED ? VIRTIO_RDMA_EVENT_SQ_DRAINED :
			   event == ENG_EVENT_QP_REQ_ERR ? VIRTIO_RDMA_EVENT_QP_REQ_ERR :
			   event == ENG_EVENT_QP_ACCESS_ERR ? VIRTIO_RDMA_EVENT_QP_ACCESS_ERR :
			   VIRTIO_RDMA_EVENT_QP_FATAL, qpn);
}

/* ---- resources ---- */

static void free_resources(struct vdev *v)
{
	uint32_t i;

	for (i = 0; i < v->max_qp; i++)
		if (v->qps[i].eng)
			eng_qp_destroy(v->qps[i].eng);
	memset(v->qps, 0, v->max_qp * sizeof(*v->qps));
	for (i = 0; i < v->max_mr; i++)
		if (v->mrs[i]) {
			mr_free(v, v->mrs[i]);
			v->mrs[i] = NULL;
		}
	for (i = 0; i < v->max_cq; i++)
		if (v->cqs[i].eng)
			eng_cq_destroy(v->cqs[i].eng);
	memset(v->cqs, 0, v->max_cq * sizeof(*v->cqs));
	v->cq_hi = v->qp_hi = 0;
	for (i = 0; i < VDEV_MAX_PD; i++)
		if (v->pds[i]) {
			eng_pd_free(v->pds[i]);
			v->pds[i] = NULL;
		}
}

static uint8_t mtu_enum(unsigned int mtu)
{
	unsigned int payload = mtu > ROCE_OVERHEAD ? mtu - ROCE_OVERHEAD : 0;
	uint8_t e = ENG_MTU_4096;

	while (e > ENG_MTU_256 && eng_mtu_bytes(e) > payload)
		e--;
	return e;
}

static void gids_from_config(struct vdev *v)
{
	unsigned int i;

	memset(v->config.gid_tbl, 0, sizeof(v->config.gid_tbl));
	memset(v->gid_valid, 0, sizeof(v->gid_valid));
	for (i = 0; i < v->cfg->n_gids && i < VIRTIO_RDMA_GID_TBL_LEN; i++) {
		memcpy(v->config.gid_tbl[i], v->cfg->gids[i].raw, 16);
		v->gid_valid[i] = true;
	}
}

/* A fresh engine and an empty device, as on a new connection. */
static int device_reset(struct vdev *v)
{
	free_resources(v);
	eng_dev_free(v->eng);
	v->eng = eng_dev_new(&v->eng_ops, v);
	if (!v->eng)
		return -ENOMEM;
	eng_dev_set_limits(v->eng, VDEV_MAX_PD, v->max_mr, v->max_cq, v->max_qp);
	eng_dev_set_port_mtu(v->eng, mtu_enum(v->port.mtu));
	gids_from_config(v);
	v->broken = false;
	return 0;
}

/* The most pages one MR may have: the ABI's, or the VM's whole budget. */
static uint32_t max_pages(const struct vdev *v)
{
	return v->max_mr_pages < VDEV_MAX_PAGES ? v->max_mr_pages : VDEV_MAX_PAGES;
}

static void fill_config(struct vdev *v)
{
	struct virtio_rdma_config *c = &v->config;
	struct vrdma_gid ll;

	memset(c, 0, sizeof(*c));
	c->phys_port_cnt = htole32(1);
	/* The MAC's EUI-64, as the interface ID of its link-local GID. */
	vm_link_local_gid(vm_mac(v), &ll);
	memcpy(&c->sys_image_guid, ll.raw + 8, 8);	/* network byte order */
	c->hw_ver = htole32(1);
	c->max_mr_size = htole64(1ull << 32);
	c->page_size_cap = htole64(VIRTIO_RDMA_PAGE_SIZE);
	c->max_qp = htole32(v->max_qp);
	c->max_qp_wr = htole32(VDEV_MAX_QP_WR);
	c->device_cap_flags = htole64(VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN);
	c->max_send_sge = c->max_recv_sge = c->max_sge_rd = htole32(ENG_MAX_SGE);
	c->max_cq = htole32(v->max_cq);
	c->max_cqe = htole32(ENG_MAX_CQE);
	c->max_mr = htole32(v->max_mr);
	c->max_pd = htole32(VDEV_MAX_PD);
	c->max_qp_rd_atom = c->max_qp_init_rd_atom = htole32(ENG_MAX_RD_ATOMIC);
	c->max_res_rd_atom = htole32(ENG_MAX_RD_ATOMIC * v->max_qp);
	c->atomic_cap = VIRTIO_IB_ATOMIC_NONE;
	c->max_ah = htole32(65536);
	c->max_fast_reg_page_list_len = htole32(max_pages(v));
	c->max_pkeys = htole16(1);
	c->local_ca_ack_delay = 15;
}

/* ---- vhost-user glue ---- */

static void vu_quiesce(void *ctx)
{
	struct vdev *v = ctx;

	if (v->sync.quiesce)
		v->sync.quiesce(v->sync.ctx);
}

static void vu_resume(void *ctx)
{
	struct vdev *v = ctx;

	if (v->sync.resume)
		v->sync.resume(v->sync.ctx);
}

static int vu_get_config(void *ctx, uint32_t off, uint32_t len, uint8_t *out)
{
	struct vdev *v = ctx;

	if (off > sizeof(v->config) || len > sizeof(v->config) - off)
		return -EINVAL;
	memcpy(out, (uint8_t *)&v->config + off, len);
	return 0;
}

static void vu_reset(void *ctx)
{
	struct vdev *v = ctx;

	if (device_reset(v))
		log_err("vm %s: out of memory resetting the device", v->cfg->name);
}

static void vu_kick_changed(void *ctx, unsigned int idx, int old_fd, int new_fd)
{
	struct vdev *v = ctx;

	(void)idx;
	if (v->sync.kick_changed)
		v->sync.kick_changed(v->sync.ctx, old_fd, new_fd);
}

static const struct vu_ops vdev_vu_ops = {
	.quiesce = vu_quiesce,
	.resume = vu_resume,
	.get_config = vu_get_config,
	.reset = vu_reset,
	.kick_changed = vu_kick_changed,
};

int vdev_init(struct vdev *v, const struct vrdma_vm_config *cfg, uint32_t vm_id,
	      const struct vdev_port *port, const struct vdev_host *host,
	      const struct vdev_sync *sync)
{
	int err;

	memset(v, 0, sizeof(*v));
	v->cfg = cfg;
	v->vm_id = vm_id;
	v->max_cq = cfg->max_cq;
	v->max_qp = cfg->max_qp;
	v->max_mr = cfg->max_mr;
	v->max_mr_pages = cfg->max_mr_pages;
	v->port = *port;
	v->host = *host;
	if (sync)
		v->sync = *sync;
	v->eng_ops = (struct eng_ops){
		.now_ns = op_now, .tx_alloc = op_tx_alloc, .tx_send = op_tx_send,
		.gid = op_gid, .cq_event = op_cq_event, .async_error = op_async,
	};
	v->cqs = calloc(v->max_cq, sizeof(*v->cqs));
	v->qps = calloc(v->max_qp, sizeof(*v->qps));
	v->pds = calloc(VDEV_MAX_PD, sizeof(*v->pds));
	v->mrs = calloc(v->max_mr, sizeof(*v->mrs));
	if (!v->cqs || !v->qps || !v->pds || !v->mrs) {
		err = -ENOMEM;
		goto free_tables;
	}
	fill_config(v);
	err = device_reset(v);
	if (err)
		goto free_tables;
	err = vu_dev_init(&v->vu, cfg->name, VIRTIO_RDMA_NUM_VQS(v->max_cq, v->max_qp),
			  &vdev_vu_ops, v);
	if (err)
		goto free_engine;
	return 0;

free_engine:
	eng_dev_free(v->eng);
free_tables:
	free(v->cqs);
	free(v->qps);
	free(v->pds);
	free(v->mrs);
	return err;
}

void vdev_free(struct vdev *v)
{
	vu_dev_free(&v->vu);
	free_resources(v);
	eng_dev_free(v->eng);
	free(v->cqs);
	free(v->qps);
	free(v->pds);
	free(v->mrs);
	memset(v, 0, sizeof(*v));
}

void vdev_set_broken(struct vdev *v, const char *why)
{
	if (v->broken)
		return;
	v->broken = true;
	v->stats.broken++;
	log_warn("vm %s: device broken: %s; dropping its connection", v->cfg->name, why);
	if (v->sync.broken)
		v->sync.broken(v->sync.ctx);
}

/* ---- control commands ---- */

static uint8_t status_of(int err)
{
	switch (err) {
	case 0: return VIRTIO_RDMA_OK;
	case -ENOENT: return VIRTIO_RDMA_ERR_NOENT;
	case -ENOMEM: case -ENOSPC: return VIRTIO_RDMA_ERR_NOMEM;
	case -EBUSY: return VIRTIO_RDMA_ERR_BUSY;
	case -EPERM: return VIRTIO_RDMA_ERR_PERM;
	case -EFAULT: return VIRTIO_RDMA_ERR_FAULT;
	case -EOPNOTSUPP: return VIRTIO_RDMA_ERR_UNSUPP;
	default: return VIRTIO_RDMA_ERR_INVAL;
	}
}

static struct eng_pd *pd_get(struct vdev *v, uint32_t pdn)
{
	return pdn < VDEV_MAX_PD ? v->pds[pdn] : NULL;
}

static struct vdev_cq *cq_get(struct vdev *v, uint32_t cqn)
{
	return cqn < v->max_cq && v->cqs[cqn].eng ? &v->cqs[cqn] : NULL;
}

static struct vdev_qp *qp_get(struct vdev *v, uint32_t qpn)
{
	struct eng_qp *eqp = eng_qp_from_num(v->eng, qpn);
	uint32_t k = eqp ? eng_qp_handle(eqp) : v->max_qp;

	return k < v->max_qp && v->qps[k].eng == eqp ? &v->qps[k] : NULL;
}

static bool access_valid(uint32_t a)
{
	/* LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ; atomics are not offered. */
	return !(a & ~7u);
}

static uint8_t cmd_query_port(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_query_port *q = req;
	struct virtio_rdma_rsp_query_port *r = rsp;

	if (q->port != 1)
		return VIRTIO_RDMA_ERR_INVAL;
	r->state = 4;			/* IB_PORT_ACTIVE */
	r->max_mtu = r->active_mtu = mtu_enum(v->port.mtu);
	r->phys_mtu = htole32(v->port.mtu);
	r->gid_tbl_len = htole32(VIRTIO_RDMA_GID_TBL_LEN);
	r->port_cap_flags = htole32(1u << 16);	/* IB_PORT_CM_SUP */
	r->max_msg_sz = htole32(ENG_MAX_MSG);
	r->pkey_tbl_len = htole16(1);
	r->active_width = 2;		/* 4X */
	r->active_speed = htole16(32);	/* EDR */
	r->phys_state = 5;		/* LINK_UP */
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_create_cq(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_create_cq *q = req;
	struct virtio_rdma_rsp_create_cq *r = rsp;
	uint32_t cqe = le32toh(q->cqe);
	struct eng_cq *ecq;
	uint32_t n;
	int err;

	if (!cqe || cqe > ENG_MAX_CQE)
		return VIRTIO_RDMA_ERR_INVAL;
	err = eng_cq_create(v->eng, cqe, &ecq);
	if (err)
		return status_of(err);
	n = eng_cq_handle(ecq);
	memset(&v->cqs[n], 0, sizeof(v->cqs[n]));
	v->cqs[n].eng = ecq;
	if (n >= v->cq_hi)
		v->cq_hi = n + 1;
	r->cqn = htole32(n);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_destroy_cq(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_destroy_cq *q = req;
	struct vdev_cq *cq = cq_get(v, le32toh(q->cqn));
	int err;

	(void)rsp;
	if (!cq)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_cq_destroy(cq->eng);
	if (err)
		return status_of(err);
	memset(cq, 0, sizeof(*cq));
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_create_pd(struct vdev *v, const void *req, void *rsp)
{
	struct virtio_rdma_rsp_create_pd *r = rsp;
	struct eng_pd *pd;
	int err;

	(void)req;
	err = eng_pd_alloc(v->eng, &pd);
	if (err)
		return status_of(err);
	v->pds[eng_pd_handle(pd)] = pd;
	r->pdn = htole32(eng_pd_handle(pd));
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_destroy_pd(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_destroy_pd *q = req;
	uint32_t pdn = le32toh(q->pdn);
	struct eng_pd *pd = pd_get(v, pdn);
	int err;

	(void)rsp;
	if (!pd)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_pd_free(pd);
	if (err)
		return status_of(err);
	v->pds[pdn] = NULL;
	return VIRTIO_RDMA_OK;
}

/* A new MR object with its engine registration and an mrn. */
static uint8_t mr_new(struct vdev *v, uint32_t pdn, uint32_t access, uint64_t iova, uint64_t length,
		      struct vdev_mr *mr, struct virtio_rdma_rsp_mr *r)
{
	struct eng_pd *pd = pd_get(v, pdn);
	uint32_t mrn;
	int err;

	if (!pd)
		return VIRTIO_RDMA_ERR_NOENT;
	if (!access_valid(access))
		return VIRTIO_RDMA_ERR_INVAL;
	mr->v = v;
	mr->pdn = pdn;
	err = eng_mr_reg(pd, iova, length, access, mr_map, mr, &mr->eng);
	if (err == -ENOSPC)		/* max_mr */
		v->stats.refused_mrs++;
	if (err)
		return status_of(err);
	mrn = eng_mr_handle(mr->eng);	/* the engine's slot: unique, < max_mr */
	v->mrs[mrn] = mr;
	r->mrn = htole32(mrn);
	r->lkey = htole32(eng_mr_lkey(mr->eng));
	r->rkey = htole32(eng_mr_rkey(mr->eng));
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_get_dma_mr(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_get_dma_mr *q = req;
	struct vdev_mr *mr = calloc(1, sizeof(*mr));
	uint8_t st;

	if (!mr)
		return VIRTIO_RDMA_ERR_NOMEM;
	mr->dma = true;
	st = mr_new(v, le32toh(q->pdn), le32toh(q->access_flags), 0, UINT64_MAX, mr, rsp);
	if (st)
		free(mr);
	return st;
}

static uint8_t cmd_create_mr(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_create_mr *q = req;
	uint32_t max = le32toh(q->max_num_sg);
	struct vdev_mr *mr;
	uint8_t st;

	if (!max || max > max_pages(v))
		return VIRTIO_RDMA_ERR_INVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return VIRTIO_RDMA_ERR_NOMEM;
	mr->fast = true;
	mr->max_num_sg = max;
	/* MAP_MR_SG may map max_num_sg pages at any time: reserve them now. */
	st = charge_pages(v, mr, max);
	if (!st)
		st = mr_new(v, le32toh(q->pdn), le32toh(q->access_flags), 0, 0, mr, rsp);
	if (st)
		mr_free(v, mr);
	return st;
}

static struct vdev_mr *mr_get(struct vdev *v, uint32_t mrn)
{
	return mrn < v->max_mr ? v->mrs[mrn] : NULL;
}

/* The pages must cover off + length. */
static bool pages_cover(uint32_t npages, uint64_t off, uint64_t length)
{
	return npages && length <= (uint64_t)npages * VIRTIO_RDMA_PAGE_SIZE - off;
}

static uint8_t cmd_map_mr_sg(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_map_mr_sg *q = req;
	struct virtio_rdma_rsp_map_mr_sg *r = rsp;
	struct vdev_mr *mr = mr_get(v, le32toh(q->mrn));
	uint32_t npages = le32toh(q->npages);
	uint64_t start = le64toh(q->start), length = le64toh(q->length);
	uint64_t off = start % VIRTIO_RDMA_PAGE_SIZE;
	uint8_t st;

	if (!mr)
		return VIRTIO_RDMA_ERR_NOENT;
	if (!mr->fast || npages > mr->max_num_sg || !pages_cover(npages, off, length) ||
	    (length && length - 1 > UINT64_MAX - start))
		return VIRTIO_RDMA_ERR_INVAL;
	st = load_pages(v, mr, le64toh(q->pages), npages);
	if (st)
		return st;
	mr->first_off = off;
	if (eng_mr_rerange(mr->eng, start, length))
		return VIRTIO_RDMA_ERR_INVAL;
	r->npages = htole32(npages);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_reg_user_mr(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_reg_user_mr *q = req;
	uint32_t npages = le32toh(q->npages);
	uint64_t length = le64toh(q->length), off = le64toh(q->start) % VIRTIO_RDMA_PAGE_SIZE;
	struct vdev_mr *mr;
	uint8_t st;

	if (!length || length > (1ull << 32) || npages > VDEV_MAX_PAGES ||
	    !pages_cover(npages, off, length))
		return VIRTIO_RDMA_ERR_INVAL;
	if (!pd_get(v, le32toh(q->pdn)))
		return VIRTIO_RDMA_ERR_NOENT;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return VIRTIO_RDMA_ERR_NOMEM;
	mr->v = v;
	mr->first_off = off;
	st = charge_pages(v, mr, npages);
	if (!st)
		st = load_pages(v, mr, le64toh(q->pages), npages);
	if (!st)
		st = mr_new(v, le32toh(q->pdn), le32toh(q->access_flags), le64toh(q->virt_addr),
			    length, mr, rsp);
	if (st)
		mr_free(v, mr);
	return st;
}

static uint8_t cmd_dereg_mr(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_dereg_mr *q = req;
	uint32_t mrn = le32toh(q->mrn);
	struct vdev_mr *mr = mr_get(v, mrn);

	(void)rsp;
	if (!mr)
		return VIRTIO_RDMA_ERR_NOENT;
	v->mrs[mrn] = NULL;
	mr_free(v, mr);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_create_qp(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_create_qp *q = req;
	struct virtio_rdma_rsp_create_qp *r = rsp;
	struct eng_qp_init_attr init = { 0 };
	struct eng_pd *pd = pd_get(v, le32toh(q->pdn));
	struct vdev_cq *scq = cq_get(v, le32toh(q->send_cqn));
	struct vdev_cq *rcq = cq_get(v, le32toh(q->recv_cqn));
	struct eng_qp *eqp;
	struct vdev_qp *qp;
	uint32_t k;
	int err;

	if (q->qp_type == VIRTIO_IB_QPT_SMI || q->qp_type == VIRTIO_IB_QPT_GSI)
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (q->qp_type > VIRTIO_IB_QPT_UD || q->sq_sig_type > VIRTIO_IB_SIGNAL_REQ_WR)
		return VIRTIO_RDMA_ERR_INVAL;
	if (!pd || !scq || !rcq)
		return VIRTIO_RDMA_ERR_NOENT;
	init.qp_type = (enum eng_qp_type)q->qp_type;
	init.send_cq = scq->eng;
	init.recv_cq = rcq->eng;
	init.sq_sig_all = q->sq_sig_type == VIRTIO_IB_SIGNAL_ALL_WR;
	init.cap.max_send_wr = le32toh(q->max_send_wr);
	init.cap.max_recv_wr = le32toh(q->max_recv_wr);
	init.cap.max_send_sge = le32toh(q->max_send_sge);
	init.cap.max_recv_sge = le32toh(q->max_recv_sge);
	init.cap.max_inline_data = le32toh(q->max_inline_data);
	if (init.cap.max_send_wr > VDEV_MAX_QP_WR || init.cap.max_recv_wr > VDEV_MAX_QP_WR)
		return VIRTIO_RDMA_ERR_INVAL;
	err = eng_qp_create(pd, &init, &eqp);
	if (err)
		return status_of(err);
	k = eng_qp_handle(eqp);	/* < max_qp: the engine's limit is ours */
	qp = &v->qps[k];
	memset(qp, 0, sizeof(*qp));
	qp->eng = eqp;
	if (k >= v->qp_hi)
		v->qp_hi = k + 1;
	qp->send_cqn = le32toh(q->send_cqn);
	qp->recv_cqn = le32toh(q->recv_cqn);
	qp->sq = (struct vdev_wq_limits){ q->qp_type, init.cap.max_send_sge, init.cap.max_inline_data };
	qp->rq = (struct vdev_wq_limits){ q->qp_type, init.cap.max_recv_sge, 0 };
	r->qpn = htole32(eng_qp_num(eqp));
	r->qp_index = htole32(k);
	return VIRTIO_RDMA_OK;
}

static void ah_to_eng(const struct virtio_rdma_ah_attr *a, struct eng_ah_attr *e)
{
	memcpy(e->dgid, a->grh.dgid, 16);
	e->flow_label = le32toh(a->grh.flow_label);
	e->sgid_index = a->grh.sgid_index;
	e->hop_limit = a->grh.hop_limit;
	e->traffic_class = a->grh.traffic_class;
	e->sl = a->sl;
	e->port_num = a->port_num;
	memcpy(e->dmac, a->dmac, 6);
}

static void ah_from_eng(const struct eng_ah_attr *e, struct virtio_rdma_ah_attr *a)
{
	memcpy(a->grh.dgid, e->dgid, 16);
	a->grh.flow_label = htole32(e->flow_label);
	a->grh.sgid_index = e->sgid_index;
	a->grh.hop_limit = e->hop_limit;
	a->grh.traffic_class = e->traffic_class;
	a->sl = e->sl;
	a->port_num = e->port_num;
	a->ah_flags = 1;	/* IB_AH_GRH: always, this is RoCE */
	memcpy(a->dmac, e->dmac, 6);
}

#define MODIFY_MASK_OK (ENG_QP_STATE | ENG_QP_CUR_STATE | ENG_QP_EN_SQD_ASYNC_NOTIFY |	\
			ENG_QP_ACCESS_FLAGS | ENG_QP_PKEY_INDEX | ENG_QP_PORT | ENG_QP_QKEY |	\
			ENG_QP_AV | ENG_QP_PATH_MTU | ENG_QP_TIMEOUT | ENG_QP_RETRY_CNT |	\
			ENG_QP_RNR_RETRY | ENG_QP_RQ_PSN | ENG_QP_MAX_QP_RD_ATOMIC |		\
			ENG_QP_ALT_PATH | ENG_QP_MIN_RNR_TIMER | ENG_QP_SQ_PSN |		\
			ENG_QP_MAX_DEST_RD_ATOMIC | ENG_QP_PATH_MIG_STATE | ENG_QP_CAP |	\
			ENG_QP_DEST_QPN)

static uint8_t cmd_modify_qp(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_modify_qp *q = req;
	const struct virtio_rdma_qp_attr *a = &q->attrs;
	struct vdev_qp *qp = qp_get(v, le32toh(q->qpn));
	uint32_t mask = le32toh(q->attr_mask);
	struct eng_qp_attr e = { 0 };

	(void)rsp;
	if (!qp)
		return VIRTIO_RDMA_ERR_NOENT;
	if (mask & ~(uint32_t)MODIFY_MASK_OK)
		return VIRTIO_RDMA_ERR_INVAL;
	/* RoCE needs the GRH (the kernel's rdma_check_ah_attr). */
	if ((mask & ENG_QP_AV) && !(a->ah_attr.ah_flags & 1))
		return VIRTIO_RDMA_ERR_INVAL;
	if (a->qp_state >= ENG_QPS_MAX || a->cur_qp_state >= ENG_QPS_MAX)
		return VIRTIO_RDMA_ERR_INVAL;
	e.qp_state = (enum eng_qp_state)a->qp_state;
	e.cur_qp_state = (enum eng_qp_state)a->cur_qp_state;
	e.path_mtu = (enum eng_mtu)a->path_mtu;
	e.qkey = le32toh(a->qkey);
	e.rq_psn = le32toh(a->rq_psn);
	e.sq_psn = le32toh(a->sq_psn);
	e.dest_qp_num = le32toh(a->dest_qp_num);
	e.qp_access_flags = le32toh(a->qp_access_flags);
	e.pkey_index = le16toh(a->pkey_index);
	e.en_sqd_async_notify = a->en_sqd_async_notify;
	e.max_rd_atomic = a->max_rd_atomic;
	e.max_dest_rd_atomic = a->max_dest_rd_atomic;
	e.min_rnr_timer = a->min_rnr_timer;
	e.port_num = a->port_num;
	e.timeout = a->timeout;
	e.retry_cnt = a->retry_cnt;
	e.rnr_retry = a->rnr_retry;
	e.cap.max_send_wr = le32toh(a->cap.max_send_wr);
	e.cap.max_recv_wr = le32toh(a->cap.max_recv_wr);
	e.cap.max_send_sge = le32toh(a->cap.max_send_sge);
	e.cap.max_recv_sge = le32toh(a->cap.max_recv_sge);
	e.cap.max_inline_data = le32toh(a->cap.max_inline_data);
	ah_to_eng(&a->ah_attr, &e.ah_attr);
	if ((mask & ENG_QP_ACCESS_FLAGS) && !access_valid(e.qp_access_flags))
		return VIRTIO_RDMA_ERR_INVAL;
	return status_of(eng_qp_modify(qp->eng, &e, mask));
}

static uint8_t cmd_query_qp(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_query_qp *q = req;
	struct virtio_rdma_rsp_query_qp *r = rsp;
	struct virtio_rdma_qp_attr *a = &r->attr;
	struct vdev_qp *qp = qp_get(v, le32toh(q->qpn));
	struct eng_qp_init_attr init;
	struct eng_qp_attr e;
	int err;

	if (!qp)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_qp_query(qp->eng, &e, &init);
	if (err)
		return status_of(err);
	a->qp_state = e.qp_state;
	a->cur_qp_state = e.qp_state;
	a->path_mtu = e.path_mtu;
	a->qkey = htole32(e.qkey);
	a->rq_psn = htole32(e.rq_psn);
	a->sq_psn = htole32(e.sq_psn);
	a->dest_qp_num = htole32(e.dest_qp_num);
	a->qp_access_flags = htole32(e.qp_access_flags);
	a->pkey_index = htole16(e.pkey_index);
	a->en_sqd_async_notify = e.en_sqd_async_notify;
	a->sq_draining = e.sq_draining;
	a->max_rd_atomic = e.max_rd_atomic;
	a->max_dest_rd_atomic = e.max_dest_rd_atomic;
	a->min_rnr_timer = e.min_rnr_timer;
	a->port_num = e.port_num;
	a->timeout = e.timeout;
	a->retry_cnt = e.retry_cnt;
	a->rnr_retry = e.rnr_retry;
	a->cap.max_send_wr = htole32(init.cap.max_send_wr);
	a->cap.max_recv_wr = htole32(init.cap.max_recv_wr);
	a->cap.max_send_sge = htole32(init.cap.max_send_sge);
	a->cap.max_recv_sge = htole32(init.cap.max_recv_sge);
	a->cap.max_inline_data = htole32(init.cap.max_inline_data);
	ah_from_eng(&e.ah_attr, &a->ah_attr);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_destroy_qp(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_destroy_qp *q = req;
	struct vdev_qp *qp = qp_get(v, le32toh(q->qpn));
	int err;

	(void)rsp;
	if (!qp)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_qp_destroy(qp->eng);
	if (err)
		return status_of(err);
	memset(qp, 0, sizeof(*qp));
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_query_pkey(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_query_pkey *q = req;
	struct virtio_rdma_rsp_query_pkey *r = rsp;

	(void)v;
	if (le32toh(q->port) != 1 || le16toh(q->index) != 0)
		return VIRTIO_RDMA_ERR_INVAL;
	r->pkey = htole16(ENG_PKEY_DEFAULT);
	return VIRTIO_RDMA_OK;
}

/* A GID the host gave this VM, or the link-local address of its MAC. */
static bool gid_assigned(const struct vdev *v, const uint8_t gid[16])
{
	struct vrdma_gid ll;
	unsigned int i;

	for (i = 0; i < v->cfg->n_gids; i++)
		if (!memcmp(v->cfg->gids[i].raw, gid, 16))
			return true;
	if (!v->cfg->has_mac)	/* the port's MAC: that link-local is the host's */
		return false;
	vm_link_local_gid(v->cfg->mac, &ll);
	return !memcmp(ll.raw, gid, 16);
}

static uint8_t cmd_add_gid(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_add_gid *q = req;
	uint16_t index = le16toh(q->index);

	(void)rsp;
	if (index >= VIRTIO_RDMA_GID_TBL_LEN || le32toh(q->port_num) != 1)
		return VIRTIO_RDMA_ERR_INVAL;
	if (le32toh(q->gid_type) != 2)	/* IB_GID_TYPE_ROCE_UDP_ENCAP: RoCEv2 only */
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (!gid_assigned(v, q->gid))
		return VIRTIO_RDMA_ERR_PERM;
	memcpy(v->config.gid_tbl[index], q->gid, 16);
	v->gid_valid[index] = true;
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_del_gid(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_del_gid *q = req;
	uint16_t index = le16toh(q->index);

	(void)rsp;
	if (index >= VIRTIO_RDMA_GID_TBL_LEN || le32toh(q->port) != 1)
		return VIRTIO_RDMA_ERR_INVAL;
	if (!v->gid_valid[index])
		return VIRTIO_RDMA_ERR_NOENT;
	memset(v->config.gid_tbl[index], 0, 16);
	v->gid_valid[index] = false;
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_req_notify(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_req_notify *q = req;
	struct vdev_cq *cq = cq_get(v, le32toh(q->cqn));
	uint32_t flags = le32toh(q->flags);

	(void)rsp;
	if (!cq)
		return VIRTIO_RDMA_ERR_NOENT;
	if (flags != VIRTIO_RDMA_NOTIFY_SOLICITED && flags != VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)
		return VIRTIO_RDMA_ERR_INVAL;
	/* Arming for any completion wins over solicited-only (ibverbs). */
	if (cq->armed != VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)
		cq->armed = flags;
	if (flags == VIRTIO_RDMA_NOTIFY_SOLICITED)
		cq->solicited = false;
	return VIRTIO_RDMA_OK;
}

static const struct {
	uint8_t (*fn)(struct vdev *v, const void *req, void *rsp);
	uint16_t req_len, rsp_len;
} commands[VIRTIO_CMD_MAX] = {
#define CMD(c, f, q, r) [VIRTIO_CMD_##c] = { f, q, r }
	CMD(QUERY_PORT, cmd_query_port, sizeof(struct virtio_rdma_cmd_query_port),
	    sizeof(struct virtio_rdma_rsp_query_port)),
	CMD(CREATE_CQ, cmd_create_cq, sizeof(struct virtio_rdma_cmd_create_cq),
	    sizeof(struct virtio_rdma_rsp_create_cq)),
	CMD(DESTROY_CQ, cmd_destroy_cq, sizeof(struct virtio_rdma_cmd_destroy_cq), 0),
	CMD(CREATE_PD, cmd_create_pd, 0, sizeof(struct virtio_rdma_rsp_create_pd)),
	CMD(DESTROY_PD, cmd_destroy_pd, sizeof(struct virtio_rdma_cmd_destroy_pd), 0),
	CMD(GET_DMA_MR, cmd_get_dma_mr, sizeof(struct virtio_rdma_cmd_get_dma_mr),
	    sizeof(struct virtio_rdma_rsp_mr)),
	CMD(CREATE_MR, cmd_create_mr, sizeof(struct virtio_rdma_cmd_create_mr),
	    sizeof(struct virtio_rdma_rsp_mr)),
	CMD(MAP_MR_SG, cmd_map_mr_sg, sizeof(struct virtio_rdma_cmd_map_mr_sg),
	    sizeof(struct virtio_rdma_rsp_map_mr_sg)),
	CMD(REG_USER_MR, cmd_reg_user_mr, sizeof(struct virtio_rdma_cmd_reg_user_mr),
	    sizeof(struct virtio_rdma_rsp_mr)),
	CMD(DEREG_MR, cmd_dereg_mr, sizeof(struct virtio_rdma_cmd_dereg_mr), 0),
	CMD(CREATE_QP, cmd_create_qp, sizeof(struct virtio_rdma_cmd_create_qp),
	    sizeof(struct virtio_rdma_rsp_create_qp)),
	CMD(MODIFY_QP, cmd_modify_qp, sizeof(struct virtio_rdma_cmd_modify_qp), 0),
	CMD(QUERY_QP, cmd_query_qp, sizeof(struct virtio_rdma_cmd_query_qp),
	    sizeof(struct virtio_rdma_rsp_query_qp)),
	CMD(DESTROY_QP, cmd_destroy_qp, sizeof(struct virtio_rdma_cmd_destroy_qp), 0),
	CMD(QUERY_PKEY, cmd_query_pkey, sizeof(struct virtio_rdma_cmd_query_pkey),
	    sizeof(struct virtio_rdma_rsp_query_pkey)),
	CMD(ADD_GID, cmd_add_gid, sizeof(struct virtio_rdma_cmd_add_gid), 0),
	CMD(DEL_GID, cmd_del_gid, sizeof(struct virtio_rdma_cmd_del_gid), 0),
	CMD(REQ_NOTIFY_CQ, cmd_req_notify, sizeof(struct virtio_rdma_cmd_req_notify), 0),
#undef CMD
};

uint8_t vdev_ctrl_exec(struct vdev *v, uint8_t cmd, const uint8_t *req, size_t req_len,
		       uint8_t *rsp, size_t rsp_cap, uint32_t *rsp_len)
{
	/* Aligned copies: the handlers read and write the structures directly. */
	uint64_t qbuf[sizeof(struct virtio_rdma_cmd_modify_qp) / 8 + 1] = { 0 };
	uint64_t rbuf[sizeof(struct virtio_rdma_rsp_query_port) / 8 + 1] = { 0 };
	uint8_t st;

	*rsp_len = 0;
	v->stats.ctrl_cmds++;
	if (cmd >= VIRTIO_CMD_MAX || !commands[cmd].fn) {
		st = VIRTIO_RDMA_ERR_UNSUPP;
		goto count_error;
	}
	if (req_len != commands[cmd].req_len || rsp_cap < commands[cmd].rsp_len) {
		st = VIRTIO_RDMA_ERR_INVAL;
		goto count_error;
	}
	memcpy(qbuf, req, req_len);
	st = commands[cmd].fn(v, qbuf, rbuf);
	if (st)
		goto count_error;
	memcpy(rsp, rbuf, commands[cmd].rsp_len);
	*rsp_len = commands[cmd].rsp_len;
	return VIRTIO_RDMA_OK;

count_error:
	v->stats.ctrl_errors++;
	return st;
}

/* ---- queues ---- */

static unsigned int poll_ctrl(struct vdev *v)
{
	struct virtq *vq = &v->vu.vqs[VIRTIO_RDMA_CTRL_VQ];
	uint8_t req[1 + sizeof(struct virtio_rdma_cmd_modify_qp) + 1];
	uint8_t rsp[1 + sizeof(struct virtio_rdma_rsp_query_port)];
	struct virtq_elem e;
	unsigned int n = 0;
	uint32_t rsp_len;
	uint64_t got;
	int r;

	v->poll_pages = 0;
	while (n < POLL_BUDGET && v->poll_pages < VDEV_POLL_PAGES &&
	       (r = virtq_pop(vq, &v->vu.mem, &e)) != 0) {
		if (r < 0) {
			vdev_set_broken(v, "control queue: malformed descriptor chain");
			return n;
		}
		if (!e.in_len) {
			vdev_set_broken(v, "control queue: request without room for a status");
			return n;
		}
		got = virtq_read(&e, 0, req, sizeof(req));
		if (got < 1 || e.out_len > sizeof(req) - 1) {
			rsp[0] = VIRTIO_RDMA_ERR_INVAL;
			rsp_len = 0;
			v->stats.ctrl_cmds++;
			v->stats.ctrl_errors++;
		} else {
			rsp[0] = vdev_ctrl_exec(v, req[0], req + 1, got - 1, rsp + 1,
						e.in_len - 1, &rsp_len);
		}
		virtq_write(&e, 0, rsp, 1 + rsp_len);
		virtq_push(vq, e.head, 1 + rsp_len);
		n++;
	}
	if (n)
		virtq_notify(vq, false);
	return n;
}

/* The WQE in e copied into v->wqe_buf; its length, or -1 if too long. */
static int64_t copy_wqe(struct vdev *v, const struct virtq_elem *e)
{
	if (e->n_in || e->out_len > sizeof(v->wqe_buf))
		return -1;
	return (int64_t)virtq_read(e, 0, v->wqe_buf, e->out_len);
}

static uint64_t wqe_wr_id(const uint8_t *buf, int64_t len, bool recv)
{
	uint64_t id = 0;
	size_t off = recv ? offsetof(struct virtio_rdma_cmd_post_recv, wr_id) :
			    offsetof(struct virtio_rdma_cmd_post_send, wr_id);

	if (len >= (int64_t)(off + 8))
		memcpy(&id, buf + off, 8);
	return le64toh(id);
}

static unsigned int poll_wq(struct vdev *v, struct vdev_qp *qp, uint32_t k, bool recv)
{
	struct virtq *vq = &v->vu.vqs[recv ? VIRTIO_RDMA_RQ_VQ(v->max_cq, k) :
					     VIRTIO_RDMA_SQ_VQ(v->max_cq, k)];
	union { struct vdev_send_wqe s; struct vdev_recv_wqe r; } w;
	struct virtq_elem e;
	unsigned int n = 0;
	int64_t len;
	int r, err;

	if (!virtq_ready(vq))
		return 0;
	while (n < POLL_BUDGET && (r = virtq_pop(vq, &v->vu.mem, &e)) != 0) {
		if (r < 0) {
			vdev_set_broken(v, recv ? "receive queue: malformed descriptor chain" :
						  "send queue: malformed descriptor chain");
			return n;
		}
		len = copy_wqe(v, &e);
		if (len < 0)
			err = -EINVAL;
		else if (recv)
			err = vdev_parse_recv_wqe(v->wqe_buf, (size_t)len, &qp->rq, &w.r);
		else
			err = vdev_parse_send_wqe(v->wqe_buf, (size_t)len, &qp->sq, &w.s);
		if (!err)
			err = recv ? eng_post_recv(qp->eng, &w.r.wr) : eng_post_send(qp->eng, &w.s.wr);
		if (err == -ENOMEM) {		/* the QP's queue is full: wait */
			virtq_unpop(vq);
			break;
		}
		if (err) {
			v->stats.refused_wqes++;
			eng_qp_refuse_wr(qp->eng, recv, wqe_wr_id(v->wqe_buf, len, recv),
					 ENG_WC_LOC_QP_OP_ERR);
		} else if (recv) {
			v->stats.recv_wqes++;
		} else {
			v->stats.send_wqes++;
		}
		virtq_push(vq, e.head, 0);
		n++;
	}
	if (n)
		virtq_notify(vq, false);
	return n;
}

static void cqe_from_wc(const struct eng_wc *wc, struct virtio_rdma_cqe *c)
{
	memset(c, 0, sizeof(*c));
	c->wr_id = htole64(wc->wr_id);
	c->status = (uint8_t)wc->status;
	c->opcode = (uint8_t)wc->opcode;
	c->vendor_err = htole32(wc->vendor_err);
	c->byte_len = htole32(wc->byte_len);
	c->ex.imm_data = wc->imm_data;
	c->qp_num = htole32(wc->qp_num);
	c->src_qp = htole32(wc->src_qp);
	c->wc_flags = htole32(wc->wc_flags);
	c->pkey_index = htole16(wc->pkey_index);
	c->sl = wc->sl;
	c->port_num = 1;
}

/* Next CQ buffer: 1 with *e, 0 if none, -1 if the device broke. */
static int cq_buffer(struct vdev *v, struct virtq *vq, struct virtq_elem *e)
{
	int r = virtq_pop(vq, &v->vu.mem, e);

	if (r < 0 || (r > 0 && (e->n_out || e->in_len < CQE_SIZE))) {
		vdev_set_broken(v, r < 0 ? "completion queue: malformed descriptor chain" :
					   "completion queue: buffer smaller than a CQE");
		return -1;
	}
	return r;
}

static unsigned int poll_cq(struct vdev *v, struct vdev_cq *cq, uint32_t cqn)
{
	struct virtq *vq = &v->vu.vqs[VIRTIO_RDMA_CQ_VQ(cqn)];
	struct virtio_rdma_cqe c;
	bool notify = false, force = false;
	struct virtq_elem e;
	unsigned int n = 0;
	int r;

	if (!virtq_ready(vq))
		return 0;
	while (cq->n_events && (r = cq_buffer(v, vq, &e)) != 0) {
		if (r < 0)
			return n;
		virtq_write(&e, 0, &cq->events[0], CQE_SIZE);
		virtq_push(vq, e.head, CQE_SIZE);
		memmove(cq->events, cq->events + 1, --cq->n_events * sizeof(cq->events[0]));
		force = true;
		n++;
	}
	while (!cq->in_error && n < POLL_BUDGET) {
		if (!cq->have_held) {
			if (eng_cq_poll(cq->eng, &cq->held, 1) != 1)
				break;
			cq->have_held = true;
		}
		r = cq_buffer(v, vq, &e);
		if (r <= 0)
			break;
		cqe_from_wc(&cq->held, &c);
		cq->have_held = false;
		virtq_write(&e, 0, &c, CQE_SIZE);
		virtq_push(vq, e.head, CQE_SIZE);
		v->stats.cqes++;
		if (cq->armed == VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION ||
		    (cq->armed == VIRTIO_RDMA_NOTIFY_SOLICITED &&
		     (cq->solicited || c.status != ENG_WC_SUCCESS)))
			notify = true;
		n++;
	}
	if (notify || force) {
		cq->armed = 0;
		cq->solicited = false;
		virtq_notify(vq, true);
	}
	return n;
}

unsigned int vdev_poll(struct vdev *v, uint64_t *next_timer)
{
	unsigned int n = 0;
	uint32_t i;

	*next_timer = 0;
	if (!vdev_live(v))
		return 0;
	if (virtq_ready(&v->vu.vqs[VIRTIO_RDMA_CTRL_VQ]))
		n += poll_ctrl(v);
	for (i = 0; i < v->qp_hi && !v->broken; i++) {
		if (!v->qps[i].eng)
			continue;
		n += poll_wq(v, &v->qps[i], i, true);
		n += poll_wq(v, &v->qps[i], i, false);
	}
	if (v->broken)
		return n;
	*next_timer = eng_poll(v->eng);
	for (i = 0; i < v->cq_hi && !v->broken; i++)
		if (v->cqs[i].eng)
			n += poll_cq(v, &v->cqs[i], i);
	return n;
}

void vdev_rx(struct vdev *v, const struct roce_pkt *pkt)
{
	struct vdev_qp *qp;

	if (!vdev_live(v))
		return;
	/* A receive the driver posted before the peer sent must be there when
	 * the message arrives (UC and UD have no RNR to fall back on): take
	 * what the receive queue holds first. */
	qp = qp_get(v, pkt->h.dqpn);
	if (qp)
		poll_wq(v, qp, (uint32_t)(qp - v->qps), true);
	if (!v->broken)
		eng_rx(v->eng, pkt);
}

/* The queues the device polls now. */
static void set_kicks(struct virtq *vq, bool wanted, bool *work)
{
	if (!virtq_ready(vq))
		return;
	virtq_set_kicks(vq, wanted);
	if (wanted && virtq_has_work(vq))
		*work = true;
}

bool vdev_want_kicks(struct vdev *v, bool wanted)
{
	bool work = false;
	uint32_t i;

	if (!vdev_live(v))
		return false;
	set_kicks(&v->vu.vqs[VIRTIO_RDMA_CTRL_VQ], wanted, &work);
	for (i = 0; i < v->qp_hi; i++) {
		if (!v->qps[i].eng)
			continue;
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_SQ_VQ(v->max_cq, i)], wanted, &work);
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_RQ_VQ(v->max_cq, i)], wanted, &work);
	}
	for (i = 0; i < v->cq_hi; i++) {
		struct vdev_cq *cq = &v->cqs[i];
		bool buffers = false;

		if (!cq->eng)
			continue;
		/* Empty buffers are the CQ's normal state, not work; work is a
		 * completion or event that waited for one and now has it. */
		set_kicks(&v->vu.vqs[VIRTIO_RDMA_CQ_VQ(i)], wanted, &buffers);
		if (buffers && (cq->have_held || cq->n_events))
			work = true;
	}
	return work;
}
