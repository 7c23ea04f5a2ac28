// SPDX-License-Identifier: GPL-2.0-only
/*
 * The virtio-rdma device model: its lifecycle (init, reset, free), the
 * config space, and the glue to the engine (clock, transmission, GIDs,
 * events) and to vhost-user. Everything the guest names is checked before
 * the engine sees it: handles against the config-space limits (vdev_ctrl.c),
 * page lists against the memory table (vdev_mr.c), WQEs against their QP's
 * limits (vdev_wqe.c). The guest's bytes are copied once and parsed from the
 * copy.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vdev_int.h"
#include "vdev_lie.h"
#include "vm.h"

#define ROCE_OVERHEAD 80	/* IPv6 + UDP + BTH + RETH + ICRC: rxe's margin */

/* ---- engine glue ---- */

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

	return n < v->n_cqs && v->cqs[n].eng == ecq ? &v->cqs[n] : NULL;
}

static void op_cq_event(void *ctx, struct eng_cq *ecq, bool solicited)
{
	struct vdev *v = ctx;
	struct vdev_cq *cq = cq_of(v, ecq);

	if (!cq)
		return;
	if (solicited)
		cq->solicited = true;
	vdev_cq_dirty(v, (uint32_t)(cq - v->cqs));
}

static struct virtio_rdma_cqe *queue_event(struct vdev *v, struct vdev_cq *cq, uint32_t event,
					   uint32_t qpn)
{
	struct virtio_rdma_cqe *e;

	if (cq->n_events == CQ_EVENTS) {
		v->stats.events_lost++;
		return NULL;
	}
	e = &cq->events[cq->n_events++];
	vdev_cq_dirty(v, (uint32_t)(cq - v->cqs));
	memset(e, 0, sizeof(*e));
	e->opcode = VIRTIO_RDMA_WC_ASYNC_EVENT;
	e->vendor_err = htole32(event);
	e->qp_num = htole32(qpn);
	e->port_num = 1;
	v->stats.events++;
	return e;
}

void vdev_cq_event(struct vdev *v, struct vdev_cq *cq, uint32_t event, uint32_t qpn)
{
	queue_event(v, cq, event, qpn);
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
		/* Last WQE Reached is about receives: the recv CQ, where the
		 * completions of the SRQ's WQEs went, as SRQ_LIMIT_REACHED */
		if (k < v->n_qps && v->qps[k].eng == eqp)
			cq = &v->cqs[event == ENG_EVENT_QP_LAST_WQE_REACHED ? v->qps[k].recv_cqn :
									       v->qps[k].send_cqn];
	}
	if (!cq)
		return;
	queue_event(v, cq, event == ENG_EVENT_CQ_ERR ? VIRTIO_RDMA_EVENT_CQ_ERR :
			   event == ENG_EVENT_SQ_DRAINED ? VIRTIO_RDMA_EVENT_SQ_DRAINED :
			   event == ENG_EVENT_QP_REQ_ERR ? VIRTIO_RDMA_EVENT_QP_REQ_ERR :
			   event == ENG_EVENT_QP_ACCESS_ERR ? VIRTIO_RDMA_EVENT_QP_ACCESS_ERR :
			   event == ENG_EVENT_QP_LAST_WQE_REACHED ?
			   VIRTIO_RDMA_EVENT_QP_LAST_WQE_REACHED : VIRTIO_RDMA_EVENT_QP_FATAL, qpn);
}

/* The SRQ has no CQ of its own: the event goes to the recv CQ of the QP
 * whose take crossed the limit, naming that QP and (src_qp) the SRQ. */
static void op_srq_limit(void *ctx, struct eng_srq *srq, struct eng_qp *eqp)
{
	struct vdev *v = ctx;
	uint32_t k = eng_qp_handle(eqp);
	struct virtio_rdma_cqe *e;

	if (k >= v->n_qps || v->qps[k].eng != eqp || !v->cqs[v->qps[k].recv_cqn].eng)
		return;
	e = queue_event(v, &v->cqs[v->qps[k].recv_cqn], VIRTIO_RDMA_EVENT_SRQ_LIMIT_REACHED,
			eng_qp_num(eqp));
	if (e)
		e->src_qp = htole32(eng_srq_handle(srq));
}

/* ---- resources ---- */

static void free_resources(struct vdev *v)
{
	uint32_t i;

	for (i = 0; v->eng && i < v->max_mr; i++) {	/* unbound, their MRs can go */
		struct eng_mw *mw = eng_mw_get(v->eng, i);

		if (mw)
			eng_mw_dealloc(mw);
	}
	for (i = 0; i < v->n_qps; i++)
		if (v->qps[i].eng) {
			eng_qp_destroy(v->qps[i].eng);
			vdev_ring_qp_release(v, &v->qps[i]);
		}
	v->n_ring_pend = 0;
	for (i = 0; i < v->n_qps; i++)	/* no QP holds them now */
		if (v->qps[i].srq) {
			eng_srq_destroy(v->qps[i].srq);
			vdev_ring_qp_release(v, &v->qps[i]);
		}
	if (v->qps)
		memset(v->qps, 0, v->qps_cap * sizeof(*v->qps));
	for (i = 0; i < v->max_mr; i++)
		if (v->mrs[i]) {
			vdev_mr_free(v, v->mrs[i]);
			v->mrs[i] = NULL;
		}
	for (i = 0; i < v->n_cqs; i++)
		if (v->cqs[i].eng) {
			eng_cq_destroy(v->cqs[i].eng);
			vdev_ring_cq_release(v, &v->cqs[i]);
		}
	if (v->cqs)
		memset(v->cqs, 0, v->cqs_cap * sizeof(*v->cqs));
	if (v->cq_dirty)
		memset(v->cq_dirty, 0, (v->cqs_cap + 63) / 64 * sizeof(*v->cq_dirty));
	v->cq_hi = v->qp_hi = v->n_ev_owed = 0;
	for (i = 0; i < VDEV_MAX_PD; i++)
		if (v->pds[i]) {
			eng_pd_free(v->pds[i]);
			v->pds[i] = NULL;
		}
	vdev_db_free_all(v);
}

uint8_t vdev_mtu_enum(unsigned int mtu)
{
	unsigned int payload = mtu > ROCE_OVERHEAD ? mtu - ROCE_OVERHEAD : 0;
	uint8_t e = ENG_MTU_4096;

	while (e > ENG_MTU_256 && eng_mtu_bytes(e) > payload)
		e--;
	return e;
}

unsigned int vdev_roce_mtu(unsigned int nic_mtu)
{
	return eng_mtu_bytes(vdev_mtu_enum(nic_mtu));
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

/* Tables of n slots of size bytes at *tab, grown to at least n (cap); the
 * new slots zero. */
static int grow_table(void **tab, uint32_t *cap, uint32_t n, size_t size)
{
	void *t;

	if (n <= *cap)
		return 0;
	t = calloc(n, size);
	if (!t)
		return -ENOMEM;
	if (*cap)
		memcpy(t, *tab, (size_t)*cap * size);
	free(*tab);
	*tab = t;
	*cap = n;
	return 0;
}

/* The tables for v1 (virtqueues) or v2 (rings): the slots the engine may
 * hand out. Empty tables only (a reset comes first). */
static int size_tables(struct vdev *v, bool rings)
{
	uint32_t cqs = rings ? v->cfg->ring_max_cq : v->max_cq;
	uint32_t qps = rings ? v->cfg->ring_max_qp : v->max_qp;
	uint32_t pend_cap = VDEV_PEND_CAP(v->qps_cap), dirty_cap = (v->cqs_cap + 63) / 64;

	if (grow_table((void **)&v->cqs, &v->cqs_cap, cqs, sizeof(*v->cqs)) ||
	    grow_table((void **)&v->qps, &v->qps_cap, qps, sizeof(*v->qps)) ||
	    grow_table((void **)&v->ring_pend, &pend_cap, VDEV_PEND_CAP(qps), sizeof(*v->ring_pend)) ||
	    grow_table((void **)&v->cq_dirty, &dirty_cap, (cqs + 63) / 64, sizeof(*v->cq_dirty)))
		return -ENOMEM;
	v->n_cqs = cqs;
	v->n_qps = qps;
	v->ring_mode = rings;
	return 0;
}

/* A fresh engine and an empty device, as on a new connection. */
int vdev_device_reset(struct vdev *v)
{
	vdev_lie_reset();
	free_resources(v);
	eng_dev_free(v->eng);
	v->eng = NULL;
	/* what the driver negotiated sizes what it may create */
	if (size_tables(v, vdev_rings(v)))
		return -ENOMEM;
	v->eng = eng_dev_new(&v->eng_ops, v, &v->tx);
	if (!v->eng)
		return -ENOMEM;
	eng_dev_set_limits(v->eng, VDEV_MAX_PD, v->max_mr, v->n_cqs, v->n_qps);
	eng_dev_set_port_mtu(v->eng, vdev_mtu_enum(v->port.mtu));
	eng_dev_set_cc(v->eng, &v->port.cc);
	gids_from_config(v);
	v->broken = false;
	return 0;
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
	c->max_srq = htole32(v->max_qp ? v->max_qp - 1 : 0);	/* as the engine's limit */
	c->max_srq_wr = htole32(VDEV_MAX_QP_WR);
	c->max_srq_sge = htole32(ENG_MAX_SGE);
	c->device_cap_flags = htole64(VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN |
				      VIRTIO_RDMA_DEV_SRQ_RESIZE |
				      VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS |
				      VIRTIO_RDMA_DEV_MEM_WINDOW |
				      VIRTIO_RDMA_DEV_MEM_WINDOW_TYPE_2B);
	c->max_send_sge = c->max_recv_sge = c->max_sge_rd = htole32(ENG_MAX_SGE);
	c->max_cq = htole32(v->max_cq);
	c->max_cqe = htole32(ENG_MAX_CQE);
	c->max_mr = htole32(v->max_mr);
	c->max_mw = htole32(v->max_mr);	/* as the engine's: as many as MRs */
	c->max_pd = htole32(VDEV_MAX_PD);
	c->max_qp_rd_atom = c->max_qp_init_rd_atom = htole32(ENG_MAX_RD_ATOMIC);
	c->max_res_rd_atom = htole32(ENG_MAX_RD_ATOMIC * v->max_qp);
	/* ABI v2 (offered by vrdmad): its queues need no virtqueue */
	c->ring_max_qp = htole32(v->cfg->ring_max_qp);
	c->ring_max_cq = htole32(v->cfg->ring_max_cq);
	c->ring_max_srq = htole32(v->cfg->ring_max_qp - 1);	/* each holds a QP slot */
	c->max_db_pages = htole32(VDEV_MAX_DB_PAGES);
	/* atomic among this device's own atomics, not against guest CPU
	 * accesses (docs/virtio-rdma.md section 3) */
	c->atomic_cap = VIRTIO_IB_ATOMIC_HCA;
	c->max_ah = htole32(65536);
	c->max_fast_reg_page_list_len = htole32(vdev_max_mr_pages(v));
	c->max_pkeys = htole16(1);
	c->local_ca_ack_delay = 15;
	c->caps = htole32(VIRTIO_RDMA_CAP_GSI);
	vdev_lie_config(c);
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

	if (vdev_device_reset(v))
		log_err("vm %s: out of memory resetting the device", v->cfg->name);
}

/* A driver that takes or drops ABI v2 starts from an empty device sized
 * for it (virtio negotiates features before anything is created). */
static int vu_features_set(void *ctx, uint64_t features)
{
	struct vdev *v = ctx;

	if (!(features & (1ull << VIRTIO_RDMA_F_RINGS)) == !v->ring_mode)
		return 0;
	if (vdev_device_reset(v)) {
		log_err("vm %s: out of memory for the tables of ABI v2", v->cfg->name);
		return -ENOMEM;
	}
	return 0;
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
	.features_set = vu_features_set,
};

int vdev_init(struct vdev *v, const struct vrdma_vm_config *cfg, uint32_t vm_id,
	      const struct vdev_port *port, const struct eng_tx *tx,
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
	v->wake_seq = arc4random();
	v->port = *port;
	v->tx = *tx;
	if (sync)
		v->sync = *sync;
	v->eng_ops = (struct eng_ops){
		.gid = op_gid, .cq_event = op_cq_event, .async_error = op_async,
		.srq_limit = op_srq_limit,
	};
	v->pds = calloc(VDEV_MAX_PD, sizeof(*v->pds));
	v->mrs = calloc(v->max_mr, sizeof(*v->mrs));
	if (!v->pds || !v->mrs) {
		err = -ENOMEM;
		goto free_tables;
	}
	fill_config(v);
	err = vdev_device_reset(v);
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
	free(v->ring_pend);
	free(v->cq_dirty);
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
	free(v->ring_pend);
	free(v->cq_dirty);
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
