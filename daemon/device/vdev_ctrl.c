// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control queue's commands (docs/virtio-rdma.md section 4): every
 * handle the guest names is checked against the config-space limits before
 * the engine sees it.
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "vdev_int.h"
#include "vm.h"

uint8_t vdev_status_of(int err)
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
	return cqn < v->n_cqs && v->cqs[cqn].eng ? &v->cqs[cqn] : NULL;
}

struct vdev_qp *vdev_qp_get(struct vdev *v, uint32_t qpn)
{
	struct eng_qp *eqp = eng_qp_from_num(v->eng, qpn);
	uint32_t k = eqp ? eng_qp_handle(eqp) : v->n_qps;

	return k < v->n_qps && v->qps[k].eng == eqp ? &v->qps[k] : NULL;
}

struct vdev_qp *vdev_srq_get(struct vdev *v, uint32_t srqn)
{
	struct eng_srq *srq = eng_srq_get(v->eng, srqn);
	uint32_t k = srq ? eng_srq_slot(srq) : v->n_qps;

	return k < v->n_qps && v->qps[k].srq == srq ? &v->qps[k] : NULL;
}

/* A slot's queues start and end empty: the chains left there go back
 * unread (docs/virtio-rdma.md section 5). At most num a queue, each as
 * cheap as a page entry: counted as one against the poll's page budget. */
static void empty_qp_slot(struct vdev *v, uint32_t k)
{
	v->poll_pages += vdev_discard_wq(v, k, UINT_MAX);
}

static void empty_cq_slot(struct vdev *v, uint32_t n)
{
	v->poll_pages += vdev_discard_cq(v, n, UINT_MAX);
}

static bool access_valid(uint32_t a)
{
	/* LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC */
	return !(a & ~(VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
		       VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_ATOMIC));
}

/* An MR's flags may also allow binding windows (IBA 10.6.7). */
static bool mr_access_valid(uint32_t a)
{
	return access_valid(a & ~VIRTIO_IB_ACCESS_MW_BIND);
}

static uint8_t cmd_query_port(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_query_port *q = req;
	struct virtio_rdma_rsp_query_port *r = rsp;

	if (q->port != 1)
		return VIRTIO_RDMA_ERR_INVAL;
	r->state = 4;			/* IB_PORT_ACTIVE */
	r->max_mtu = r->active_mtu = vdev_mtu_enum(v->port.mtu);
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

	if (vdev_rings(v))	/* CQs are rings then: CREATE_CQ_RING */
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (!cqe || cqe > ENG_MAX_CQE)
		return VIRTIO_RDMA_ERR_INVAL;
	err = eng_cq_create(v->eng, cqe, &ecq);
	if (err)
		return vdev_status_of(err);
	n = eng_cq_handle(ecq);
	empty_cq_slot(v, n);	/* posted before the CQ existed: not for it */
	memset(&v->cqs[n], 0, sizeof(v->cqs[n]));
	v->cqs[n].eng = ecq;
	if (n >= v->cq_hi)
		v->cq_hi = n + 1;
	r->cqn = htole32(n);
	return VIRTIO_RDMA_OK;
}

/* The DESTROY commands: err is the engine's answer; the slot is emptied
 * only once the engine let the object go. */
static uint8_t slot_freed(int err, void *slot, size_t size)
{
	if (err)
		return vdev_status_of(err);
	memset(slot, 0, size);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_destroy_cq(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_destroy_cq *q = req;
	struct vdev_cq *cq = cq_get(v, le32toh(q->cqn));
	uint8_t st;
	int err;

	(void)rsp;
	if (!cq)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_cq_destroy(cq->eng);
	if (!err)
		vdev_ring_cq_release(v, cq);
	st = slot_freed(err, cq, sizeof(*cq));
	if (!st && !vdev_rings(v))
		empty_cq_slot(v, (uint32_t)(cq - v->cqs));
	return st;
}

static uint8_t cmd_create_pd(struct vdev *v, const void *req, void *rsp)
{
	struct virtio_rdma_rsp_create_pd *r = rsp;
	struct eng_pd *pd;
	int err;

	(void)req;
	err = eng_pd_alloc(v->eng, &pd);
	if (err)
		return vdev_status_of(err);
	v->pds[eng_pd_handle(pd)] = pd;
	r->pdn = htole32(eng_pd_handle(pd));
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_destroy_pd(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_destroy_pd *q = req;
	uint32_t pdn = le32toh(q->pdn);
	struct eng_pd *pd = pd_get(v, pdn);

	(void)rsp;
	if (!pd)
		return VIRTIO_RDMA_ERR_NOENT;
	return slot_freed(eng_pd_free(pd), &v->pds[pdn], sizeof(v->pds[pdn]));
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
	if (!mr_access_valid(access))
		return VIRTIO_RDMA_ERR_INVAL;
	mr->v = v;
	/* CREATE_MR: FREE until a REG_MR work request (IBA 10.6.3.6), whose
	 * access flags apply; the command's are checked, not used. */
	err = mr->fast ? eng_mr_alloc_fast(pd, vdev_mr_map, mr, &mr->eng) :
			 eng_mr_reg(pd, iova, length, access, vdev_mr_map, mr, &mr->eng);
	if (err == -ENOSPC)		/* max_mr */
		v->stats.refused_mrs++;
	if (err)
		return vdev_status_of(err);
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

	if (!max || max > vdev_max_mr_pages(v))
		return VIRTIO_RDMA_ERR_INVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return VIRTIO_RDMA_ERR_NOMEM;
	mr->fast = true;
	mr->max_num_sg = max;
	/* MAP_MR_SG may map max_num_sg pages at any time: reserve them now. */
	st = vdev_mr_charge(v, mr, max);
	if (!st)
		st = mr_new(v, le32toh(q->pdn), le32toh(q->access_flags), 0, 0, mr, rsp);
	if (st)
		vdev_mr_free(v, mr);
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
	st = vdev_mr_load_pages(v, mr, le64toh(q->pages), npages);
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
	st = vdev_mr_charge(v, mr, npages);
	if (!st)
		st = vdev_mr_load_pages(v, mr, le64toh(q->pages), npages);
	if (!st)
		st = mr_new(v, le32toh(q->pdn), le32toh(q->access_flags), le64toh(q->virt_addr),
			    length, mr, rsp);
	if (st)
		vdev_mr_free(v, mr);
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
	/* IBA 10.6.7.2.6: not while windows are bound to it (BUSY, as rxe) */
	if (eng_mr_dereg(mr->eng))
		return VIRTIO_RDMA_ERR_BUSY;
	mr->eng = NULL;
	v->mrs[mrn] = NULL;
	vdev_mr_free(v, mr);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_alloc_mw(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_alloc_mw *q = req;
	struct virtio_rdma_rsp_alloc_mw *r = rsp;
	struct eng_pd *pd = pd_get(v, le32toh(q->pdn));
	uint32_t type = le32toh(q->type);
	struct eng_mw *mw;
	int err;

	if (type == VIRTIO_IB_MW_TYPE_1)	/* bound by ibv_bind_mw: not offered */
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (type != VIRTIO_IB_MW_TYPE_2)
		return VIRTIO_RDMA_ERR_INVAL;
	if (!pd)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_mw_alloc(pd, &mw);
	if (err == -ENOSPC)		/* as many as max_mr */
		v->stats.refused_mws++;
	if (err)
		return vdev_status_of(err);
	r->mwn = htole32(eng_mw_handle(mw));
	r->rkey = htole32(eng_mw_rkey(mw));
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_dealloc_mw(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_dealloc_mw *q = req;
	struct eng_mw *mw = eng_mw_get(v->eng, le32toh(q->mwn));

	(void)rsp;
	if (!mw)
		return VIRTIO_RDMA_ERR_NOENT;
	return vdev_status_of(eng_mw_dealloc(mw));	/* a bound one is invalidated */
}

uint8_t vdev_qp_create(struct vdev *v, const struct virtio_rdma_cmd_create_qp *q,
		       struct virtio_rdma_rsp_create_qp *r, bool ring, uint32_t *slot)
{
	struct eng_qp_init_attr init = { 0 };
	struct eng_pd *pd = pd_get(v, le32toh(q->pdn));
	struct vdev_cq *scq = cq_get(v, le32toh(q->send_cqn));
	struct vdev_cq *rcq = cq_get(v, le32toh(q->recv_cqn));
	uint32_t flags = le32toh(q->flags);
	struct vdev_qp *srq = NULL;
	struct eng_qp *eqp;
	struct vdev_qp *qp;
	uint32_t k;
	int err;

	if (q->qp_type == VIRTIO_IB_QPT_SMI)	/* QP0: no subnet management on RoCE */
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (q->qp_type > VIRTIO_IB_QPT_UD || q->sq_sig_type > VIRTIO_IB_SIGNAL_REQ_WR)
		return VIRTIO_RDMA_ERR_INVAL;
	if (flags & ~VIRTIO_RDMA_CREATE_QP_SRQ)
		return VIRTIO_RDMA_ERR_INVAL;
	if (flags & VIRTIO_RDMA_CREATE_QP_SRQ) {
		srq = vdev_srq_get(v, le32toh(q->srqn));
		if (!srq)
			return VIRTIO_RDMA_ERR_NOENT;
		init.srq = srq->srq;
	}
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
	if (init.cap.max_send_wr > VDEV_MAX_QP_WR ||
	    (!srq && init.cap.max_recv_wr > VDEV_MAX_QP_WR))
		return VIRTIO_RDMA_ERR_INVAL;
	err = eng_qp_create(pd, &init, &eqp);
	if (err)
		return vdev_status_of(err);
	k = eng_qp_handle(eqp);	/* < n_qps: the engine's limit is ours */
	if (!ring)
		empty_qp_slot(v, k);	/* posted before the QP existed: not for it */
	qp = &v->qps[k];
	memset(qp, 0, sizeof(*qp));
	qp->eng = eqp;
	if (k >= v->qp_hi)
		v->qp_hi = k + 1;
	qp->send_cqn = le32toh(q->send_cqn);
	qp->recv_cqn = le32toh(q->recv_cqn);
	qp->sq = (struct vdev_wq_limits){ q->qp_type, init.cap.max_send_sge,
					  init.cap.max_inline_data, ring };
	qp->rq = (struct vdev_wq_limits){ q->qp_type, init.cap.max_recv_sge, 0, ring };
	r->qpn = htole32(eng_qp_num(eqp));
	r->qp_index = htole32(k);
	*slot = k;
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_create_qp(struct vdev *v, const void *req, void *rsp)
{
	uint32_t k;

	if (vdev_rings(v))	/* QPs are rings then: CREATE_QP_RING */
		return VIRTIO_RDMA_ERR_UNSUPP;
	return vdev_qp_create(v, req, rsp, false, &k);
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
	struct vdev_qp *qp = vdev_qp_get(v, le32toh(q->qpn));
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
	/* attributes outside the mask are ignored, whatever they hold (the
	 * MAD layer's come from kmalloc) */
	if (((mask & ENG_QP_STATE) && a->qp_state >= ENG_QPS_MAX) ||
	    ((mask & ENG_QP_CUR_STATE) && a->cur_qp_state >= ENG_QPS_MAX))
		return VIRTIO_RDMA_ERR_INVAL;
	if (mask & ENG_QP_STATE)
		e.qp_state = (enum eng_qp_state)a->qp_state;
	if (mask & ENG_QP_CUR_STATE)
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
	return vdev_status_of(eng_qp_modify(qp->eng, &e, mask));
}

static uint8_t cmd_query_qp(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_query_qp *q = req;
	struct virtio_rdma_rsp_query_qp *r = rsp;
	struct virtio_rdma_qp_attr *a = &r->attr;
	struct vdev_qp *qp = vdev_qp_get(v, le32toh(q->qpn));
	struct eng_qp_init_attr init;
	struct eng_qp_attr e;
	int err;

	if (!qp)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_qp_query(qp->eng, &e, &init);
	if (err)
		return vdev_status_of(err);
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
	struct vdev_qp *qp = vdev_qp_get(v, le32toh(q->qpn));
	uint8_t st;

	bool ring;
	int err;

	(void)rsp;
	if (!qp)
		return VIRTIO_RDMA_ERR_NOENT;
	ring = vdev_slot_ring(qp);
	err = eng_qp_destroy(qp->eng);
	if (!err)
		vdev_ring_qp_release(v, qp);
	st = slot_freed(err, qp, sizeof(*qp));
	if (!st && !ring)
		empty_qp_slot(v, (uint32_t)(qp - v->qps));
	return st;
}

uint8_t vdev_srq_create(struct vdev *v, const struct virtio_rdma_cmd_create_srq *q,
			struct virtio_rdma_rsp_create_srq *r, bool ring, uint32_t *slot)
{
	struct eng_pd *pd = pd_get(v, le32toh(q->pdn));
	struct eng_srq_attr a = { le32toh(q->max_wr), le32toh(q->max_sge), le32toh(q->srq_limit) };
	struct eng_srq *srq;
	uint32_t k;
	int err;

	if (!pd)
		return VIRTIO_RDMA_ERR_NOENT;
	if (a.max_wr > VDEV_MAX_QP_WR)
		return VIRTIO_RDMA_ERR_INVAL;
	err = eng_srq_create(pd, &a, &srq);
	if (err)
		return vdev_status_of(err);
	k = eng_srq_slot(srq);	/* a QP slot, below the engine's limit: ours */
	if (!ring)
		empty_qp_slot(v, k);	/* posted before the SRQ existed: not for it */
	memset(&v->qps[k], 0, sizeof(v->qps[k]));
	v->qps[k].srq = srq;
	v->qps[k].rq = (struct vdev_wq_limits){ 0, a.max_sge, 0, ring };
	if (k >= v->qp_hi)
		v->qp_hi = k + 1;
	r->srqn = htole32(eng_srq_handle(srq));
	r->srq_index = htole32(k);
	*slot = k;
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_create_srq(struct vdev *v, const void *req, void *rsp)
{
	uint32_t k;

	if (vdev_rings(v))	/* SRQs are rings then: CREATE_SRQ_RING */
		return VIRTIO_RDMA_ERR_UNSUPP;
	return vdev_srq_create(v, req, rsp, false, &k);
}

static uint8_t cmd_modify_srq(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_modify_srq *q = req;
	struct vdev_qp *s = vdev_srq_get(v, le32toh(q->srqn));
	struct eng_srq_attr a = { .max_wr = le32toh(q->max_wr), .srq_limit = le32toh(q->srq_limit) };

	(void)rsp;
	if (!s)
		return VIRTIO_RDMA_ERR_NOENT;
	/* max_srq_wr, as at creation; the slot's RQ need not hold them all:
	 * WQEs are copied out of it as the SRQ has room */
	if ((le32toh(q->attr_mask) & VIRTIO_IB_SRQ_MAX_WR) && a.max_wr > VDEV_MAX_QP_WR)
		return VIRTIO_RDMA_ERR_INVAL;
	/* the IB bits are the engine's */
	return vdev_status_of(eng_srq_modify(s->srq, &a, le32toh(q->attr_mask)));
}

static uint8_t cmd_query_srq(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_query_srq *q = req;
	struct virtio_rdma_rsp_query_srq *r = rsp;
	struct vdev_qp *s = vdev_srq_get(v, le32toh(q->srqn));
	struct eng_srq_attr a;
	int err;

	if (!s)
		return VIRTIO_RDMA_ERR_NOENT;
	err = eng_srq_query(s->srq, &a);
	if (err)
		return vdev_status_of(err);
	r->max_wr = htole32(a.max_wr);
	r->max_sge = htole32(a.max_sge);
	r->srq_limit = htole32(a.srq_limit);
	return VIRTIO_RDMA_OK;
}

static uint8_t cmd_destroy_srq(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_destroy_srq *q = req;
	struct vdev_qp *s = vdev_srq_get(v, le32toh(q->srqn));
	uint8_t st;
	bool ring;
	int err;

	(void)rsp;
	if (!s)
		return VIRTIO_RDMA_ERR_NOENT;
	ring = vdev_slot_ring(s);
	err = eng_srq_destroy(s->srq);
	if (!err)
		vdev_ring_qp_release(v, s);
	st = slot_freed(err, s, sizeof(*s));
	if (!st && !ring)	/* the WQEs it still held go with it, as DESTROY_QP's */
		empty_qp_slot(v, (uint32_t)(s - v->qps));
	return st;
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
	if (cq->ring.entries)	/* its arm word does it */
		return VIRTIO_RDMA_ERR_UNSUPP;
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
	CMD(CREATE_SRQ, cmd_create_srq, sizeof(struct virtio_rdma_cmd_create_srq),
	    sizeof(struct virtio_rdma_rsp_create_srq)),
	CMD(MODIFY_SRQ, cmd_modify_srq, sizeof(struct virtio_rdma_cmd_modify_srq), 0),
	CMD(QUERY_SRQ, cmd_query_srq, sizeof(struct virtio_rdma_cmd_query_srq),
	    sizeof(struct virtio_rdma_rsp_query_srq)),
	CMD(DESTROY_SRQ, cmd_destroy_srq, sizeof(struct virtio_rdma_cmd_destroy_srq), 0),
	CMD(ALLOC_MW, cmd_alloc_mw, sizeof(struct virtio_rdma_cmd_alloc_mw),
	    sizeof(struct virtio_rdma_rsp_alloc_mw)),
	CMD(DEALLOC_MW, cmd_dealloc_mw, sizeof(struct virtio_rdma_cmd_dealloc_mw), 0),
	CMD(ADD_DB_PAGE, vdev_cmd_add_db_page, sizeof(struct virtio_rdma_cmd_add_db_page),
	    sizeof(struct virtio_rdma_rsp_add_db_page)),
	CMD(DEL_DB_PAGE, vdev_cmd_del_db_page, sizeof(struct virtio_rdma_cmd_del_db_page), 0),
	CMD(CREATE_CQ_RING, vdev_cmd_create_cq_ring, sizeof(struct virtio_rdma_cmd_create_cq_ring),
	    sizeof(struct virtio_rdma_rsp_create_cq)),
	CMD(CREATE_QP_RING, vdev_cmd_create_qp_ring, sizeof(struct virtio_rdma_cmd_create_qp_ring),
	    sizeof(struct virtio_rdma_rsp_create_qp)),
	CMD(CREATE_SRQ_RING, vdev_cmd_create_srq_ring,
	    sizeof(struct virtio_rdma_cmd_create_srq_ring), sizeof(struct virtio_rdma_rsp_create_srq)),
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
