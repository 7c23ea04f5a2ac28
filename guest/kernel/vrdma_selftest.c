// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma_selftest: the kernel verbs of a vrdma device as a kernel consumer
 * (NFS/RDMA, iSER, SMB Direct) uses them: a PD with its DMA MR (and an
 * unsafe global rkey), a CQ polled from softirq after req_notify_cq, two RC
 * QPs and two UD QPs on the device's own GID (vrdmad loops the frames back),
 * DMA-mapped buffers, fast registration and invalidation, a QP's
 * asynchronous event. Loading it runs the checks: it stays loaded if all
 * pass and fails to load (-EINVAL) otherwise; dmesg says which.
 *
 *	modprobe vrdma_selftest [dev=vrdma0] [gid_index=1] && rmmod vrdma_selftest
 */
#include <linux/completion.h>
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev_name_param = "vrdma0";
module_param_named(dev, dev_name_param, charp, 0444);
MODULE_PARM_DESC(dev, "the RDMA device to test");
static int gid_index = 1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "the source GID index (1: the IPv4 address)");

#define BUF_LEN		8192
#define SEND_LEN	5000	/* past a 1024 path MTU: several packets */
#define INLINE_LEN	48
#define UD_LEN		512
#define GRH_LEN		40
#define TIMEOUT		(10 * HZ)

struct st {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	union ib_gid gid;
	u8 mac[ETH_ALEN];
	u8 *buf[2];
	u64 dma[2];
	struct ib_cqe cqe;
	struct completion done;
	spinlock_t lock;		/* the completions below */
	struct ib_wc wcs[8];
	int nwc;
	enum ib_event_type event;	/* the last QP event, QP in event_qp */
	struct ib_qp *event_qp;
	struct completion got_event;
	int passed, failed;
};

#define CHECK(st, cond, ...)						\
	do {								\
		if (cond) {						\
			(st)->passed++;					\
		} else {						\
			(st)->failed++;					\
			pr_err("vrdma_selftest: FAIL: " __VA_ARGS__);	\
		}							\
	} while (0)

/* softirq: ib_alloc_cq's IB_POLL_SOFTIRQ polls and calls this per WC */
static void st_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct st *st = cq->cq_context;
	unsigned long flags;

	spin_lock_irqsave(&st->lock, flags);
	if (st->nwc < ARRAY_SIZE(st->wcs))
		st->wcs[st->nwc++] = *wc;
	spin_unlock_irqrestore(&st->lock, flags);
	complete(&st->done);
}

/* Waits for n completions; 0 or -ETIMEDOUT. */
static int st_wait(struct st *st, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!wait_for_completion_timeout(&st->done, TIMEOUT))
			return -ETIMEDOUT;
	return 0;
}

static void st_reset(struct st *st)
{
	reinit_completion(&st->done);
	st->nwc = 0;
	memset(st->wcs, 0, sizeof(st->wcs));
}

static const struct ib_wc *st_find(struct st *st, enum ib_wc_opcode op)
{
	int i;

	for (i = 0; i < st->nwc; i++)
		if (st->wcs[i].opcode == op)
			return &st->wcs[i];
	return NULL;
}

/* a QP's asynchronous event (an async-event CQE of the device) */
static void st_qp_event(struct ib_event *ev, void *context)
{
	struct st *st = context;

	st->event = ev->event;
	st->event_qp = ev->element.qp;
	complete(&st->got_event);
}

static struct ib_qp *st_qp(struct st *st, enum ib_qp_type type)
{
	struct ib_qp_init_attr init = {
		.event_handler = st_qp_event,
		.qp_context = st,
		.send_cq = st->cq,
		.recv_cq = st->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = INLINE_LEN },
		.qp_type = type,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
	};

	return ib_create_qp(st->pd, &init);
}

/* RESET -> INIT -> RTR -> RTS, aimed at dest_qpn on our own GID. */
static int st_connect(struct st *st, struct ib_qp *qp, u32 dest_qpn)
{
	bool ud = qp->qp_type == IB_QPT_UD;
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	if (ud) {
		a.qkey = 0x11111111;
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
				   IB_QP_PORT | IB_QP_QKEY);
	} else {
		a.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				    IB_ACCESS_REMOTE_READ;
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
				   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	}
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	if (ud) {
		err = ib_modify_qp(qp, &a, IB_QP_STATE);
	} else {
		a.path_mtu = IB_MTU_1024;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_grh(&a.ah_attr, &st->gid, 0, gid_index, 64, 0);
		rdma_ah_set_port_num(&a.ah_attr, 1);
		memcpy(a.ah_attr.roce.dmac, st->mac, ETH_ALEN);
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV |
				   IB_QP_PATH_MTU | IB_QP_DEST_QPN |
				   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
				   IB_QP_MIN_RNR_TIMER);
	}
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 100;
	if (ud)
		return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

static int st_post_recv(struct st *st, struct ib_qp *qp, u32 len)
{
	struct ib_sge sge = {
		.addr = st->dma[1], .length = len, .lkey = st->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &st->cqe, .sg_list = &sge,
				 .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

static void st_fill(struct st *st, u8 seed)
{
	int i;

	for (i = 0; i < BUF_LEN; i++)
		st->buf[0][i] = (u8)(i * 7 + seed);
	memset(st->buf[1], 0, BUF_LEN);
}

/*
 * Fast registration (IBA 10.6.3.6) as storage ULPs do it: b registers its
 * buffer with an alloc_mr MR under a key of its own (REG_MR), a WRITEs
 * through that key, then a SEND_WITH_INV invalidates it at b (10.7.2.2).
 */
static void st_fastreg(struct st *st, struct ib_qp *a, struct ib_qp *b)
{
	struct ib_sge sge = { .addr = st->dma[0], .length = BUF_LEN,
			      .lkey = st->pd->local_dma_lkey };
	struct ib_reg_wr reg = {};
	struct ib_rdma_wr rw = {};
	struct ib_send_wr wr = {};
	struct scatterlist sg;
	const struct ib_wc *wc;
	struct ib_mr *mr;
	int n, err;

	mr = ib_alloc_mr(st->pd, IB_MR_TYPE_MEM_REG, BUF_LEN / PAGE_SIZE + 1);
	CHECK(st, !IS_ERR(mr), "fast reg: alloc_mr: %ld\n", PTR_ERR(mr));
	if (IS_ERR(mr))
		return;
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = st->dma[1];
	sg_dma_len(&sg) = BUF_LEN;
	n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	CHECK(st, n == 1, "fast reg: map_mr_sg: %d\n", n);
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));

	st_reset(st);
	reg.wr.wr_cqe = &st->cqe;
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	err = ib_post_send(b, &reg.wr, NULL);
	CHECK(st, !err && !st_wait(st, 1) && st->wcs[0].status == IB_WC_SUCCESS &&
	      st->wcs[0].opcode == IB_WC_REG_MR, "fast reg: REG_MR: post %d, status %d\n",
	      err, st->wcs[0].status);

	st_fill(st, 5);
	st_reset(st);
	rw.wr.wr_cqe = &st->cqe;
	rw.wr.sg_list = &sge;
	rw.wr.num_sge = 1;
	rw.wr.opcode = IB_WR_RDMA_WRITE;
	rw.wr.send_flags = IB_SEND_SIGNALED;
	rw.remote_addr = mr->iova;
	rw.rkey = mr->rkey;
	err = ib_post_send(a, &rw.wr, NULL);
	CHECK(st, !err && !st_wait(st, 1) && st->wcs[0].status == IB_WC_SUCCESS &&
	      !memcmp(st->buf[0], st->buf[1], BUF_LEN),
	      "fast reg: WRITE through the new key: status %d or data\n", st->wcs[0].status);

	st_reset(st);
	err = st_post_recv(st, b, BUF_LEN);
	sge.length = 64;
	wr.wr_cqe = &st->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND_WITH_INV;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.ex.invalidate_rkey = mr->rkey;
	if (!err)
		err = ib_post_send(a, &wr, NULL);
	CHECK(st, !err && !st_wait(st, 2), "SEND_WITH_INV: post %d or no completions\n", err);
	wc = st_find(st, IB_WC_RECV);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS && (wc->wc_flags & IB_WC_WITH_INVALIDATE) &&
	      wc->ex.invalidate_rkey == mr->rkey,
	      "SEND_WITH_INV: the receive does not report the key invalidated\n");
	CHECK(st, !ib_dereg_mr(mr), "fast reg: dereg_mr\n");
}

static void st_rc(struct st *st, struct ib_qp *a, struct ib_qp *b)
{
	struct ib_sge sge = { .addr = st->dma[0], .lkey = st->pd->local_dma_lkey };
	struct ib_rdma_wr rw = {};
	struct ib_send_wr wr = {};
	const struct ib_wc *wc;
	int err;

	/* SEND of several packets into a posted receive */
	st_fill(st, 1);
	st_reset(st);
	err = st_post_recv(st, b, BUF_LEN);
	sge.length = SEND_LEN;
	wr.wr_cqe = &st->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	if (!err)
		err = ib_post_send(a, &wr, NULL);
	CHECK(st, !err && !st_wait(st, 2), "RC SEND: post %d or no completions\n", err);
	wc = st_find(st, IB_WC_RECV);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS && wc->byte_len == SEND_LEN &&
	      wc->qp == b, "RC SEND: the receive completion\n");
	wc = st_find(st, IB_WC_SEND);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS && wc->qp == a,
	      "RC SEND: the send completion\n");
	CHECK(st, !memcmp(st->buf[0], st->buf[1], SEND_LEN), "RC SEND: data\n");

	/* inline SEND: the driver copies from the kernel address */
	st_fill(st, 2);
	st_reset(st);
	err = st_post_recv(st, b, BUF_LEN);
	sge.addr = (uintptr_t)st->buf[0];
	sge.length = INLINE_LEN;
	wr.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE;
	if (!err)
		err = ib_post_send(a, &wr, NULL);
	CHECK(st, !err && !st_wait(st, 2), "inline SEND: post %d or no completions\n", err);
	wc = st_find(st, IB_WC_RECV);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS && wc->byte_len == INLINE_LEN &&
	      !memcmp(st->buf[0], st->buf[1], INLINE_LEN), "inline SEND: data\n");

	/* RDMA WRITE into the other buffer through the DMA MR's rkey */
	st_fill(st, 3);
	st_reset(st);
	sge.addr = st->dma[0];
	sge.length = BUF_LEN;
	rw.wr.wr_cqe = &st->cqe;
	rw.wr.sg_list = &sge;
	rw.wr.num_sge = 1;
	rw.wr.opcode = IB_WR_RDMA_WRITE;
	rw.wr.send_flags = IB_SEND_SIGNALED;
	rw.remote_addr = st->dma[1];
	rw.rkey = st->pd->unsafe_global_rkey;
	err = ib_post_send(a, &rw.wr, NULL);
	CHECK(st, !err && !st_wait(st, 1), "RDMA WRITE: post %d or no completion\n", err);
	wc = st_find(st, IB_WC_RDMA_WRITE);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS &&
	      !memcmp(st->buf[0], st->buf[1], BUF_LEN), "RDMA WRITE: status or data\n");

	/* RDMA READ of it back into the first buffer */
	memset(st->buf[0], 0, BUF_LEN);
	st_reset(st);
	rw.wr.opcode = IB_WR_RDMA_READ;
	err = ib_post_send(a, &rw.wr, NULL);
	CHECK(st, !err && !st_wait(st, 1), "RDMA READ: post %d or no completion\n", err);
	wc = st_find(st, IB_WC_RDMA_READ);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS && wc->byte_len == BUF_LEN &&
	      !memcmp(st->buf[0], st->buf[1], BUF_LEN), "RDMA READ: status or data\n");

	st_fastreg(st, a, b);

	/* a WRITE with a wrong rkey: REM_ACCESS_ERR for the requester, and
	 * QP_ACCESS_ERR as an event of the responder's QP (IBA 11.6.3.1)
	 */
	st_reset(st);
	reinit_completion(&st->got_event);
	rw.wr.opcode = IB_WR_RDMA_WRITE;
	rw.rkey = st->pd->unsafe_global_rkey ^ 0x5a5a;
	err = ib_post_send(a, &rw.wr, NULL);
	CHECK(st, !err && !st_wait(st, 1), "bad rkey: post %d or no completion\n", err);
	CHECK(st, st->nwc && st->wcs[0].status == IB_WC_REM_ACCESS_ERR && st->wcs[0].qp == a,
	      "bad rkey: the requester's completion (status %d)\n", st->wcs[0].status);
	CHECK(st, wait_for_completion_timeout(&st->got_event, TIMEOUT) &&
	      st->event == IB_EVENT_QP_ACCESS_ERR && st->event_qp == b,
	      "bad rkey: no QP_ACCESS_ERR event on the responder's QP (event %d)\n",
	      st->event);
}

/* UD_LEN bytes of buf[0] from a to UD QP b over our own GID: 0, or why not. */
static int st_ud_send(struct st *st, struct ib_qp *a, struct ib_qp *b)
{
	struct rdma_ah_attr ah_attr = { .type = RDMA_AH_ATTR_TYPE_ROCE };
	struct ib_sge sge = { .addr = st->dma[0], .length = UD_LEN,
			      .lkey = st->pd->local_dma_lkey };
	struct ib_ud_wr wr = {};
	struct ib_ah *ah;
	int err;

	rdma_ah_set_grh(&ah_attr, &st->gid, 0, gid_index, 64, 0);
	rdma_ah_set_port_num(&ah_attr, 1);
	memcpy(ah_attr.roce.dmac, st->mac, ETH_ALEN);
	ah = rdma_create_ah(st->pd, &ah_attr, 0);	/* may be atomic: no SLEEPABLE */
	CHECK(st, !IS_ERR(ah), "UD: create AH: %ld\n", PTR_ERR(ah));
	if (IS_ERR(ah))
		return PTR_ERR(ah);
	wr.wr.wr_cqe = &st->cqe;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_SEND;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.ah = ah;
	wr.remote_qpn = b->qp_num;
	wr.remote_qkey = 0x11111111;
	err = ib_post_send(a, &wr.wr, NULL);
	if (!err)
		err = st_wait(st, 2);
	rdma_destroy_ah(ah, 0);
	return err;
}

static void st_ud(struct st *st, struct ib_qp *a, struct ib_qp *b)
{
	const struct ib_wc *wc;
	int err;

	st_fill(st, 4);
	st_reset(st);
	err = st_post_recv(st, b, GRH_LEN + UD_LEN);
	if (!err)
		err = st_ud_send(st, a, b);
	CHECK(st, !err, "UD SEND: post %d or no completions\n", err);
	wc = st_find(st, IB_WC_RECV);
	CHECK(st, wc && wc->status == IB_WC_SUCCESS && wc->byte_len == GRH_LEN + UD_LEN &&
	      (wc->wc_flags & IB_WC_GRH) && wc->src_qp == a->qp_num &&
	      !memcmp(st->buf[0], st->buf[1] + GRH_LEN, UD_LEN),
	      "UD SEND: the receive (length, GRH, source QP, data)\n");
}

/*
 * A kernel consumer posts more than a work queue's ring holds, in atomic
 * context (the MAD layer posts 512 receives on a 256-entry ring under a
 * spinlock): every post succeeds, the WQEs reach the device in order as it
 * drains the ring, and a datagram then lands in the first receive.
 */
#define BACKLOG_RECVS	600
static DEFINE_SPINLOCK(st_atomic_lock);	/* atomic context, as the MAD layer's */

static void st_backlog(struct st *st, struct ib_qp *a)
{
	struct ib_qp_init_attr init = {
		.send_cq = st->cq, .recv_cq = st->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1024, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IB_QPT_UD, .sq_sig_type = IB_SIGNAL_ALL_WR,
	};
	const struct ib_recv_wr *bad = NULL;
	struct ib_recv_wr *rwr;
	struct ib_sge rsge;
	unsigned long flags;
	struct ib_qp *b;
	int i, err = 0;

	b = ib_create_qp(st->pd, &init);
	CHECK(st, !IS_ERR(b), "backlog: create a QP of 1024 receives: %ld\n",
	      PTR_ERR(b));
	if (IS_ERR(b))
		return;
	CHECK(st, !st_connect(st, b, 0), "backlog: bring the QP to RTS\n");
	st_fill(st, 5);
	st_reset(st);
	/* one chain: the device is kicked once, at its end */
	rwr = kcalloc(BACKLOG_RECVS, sizeof(*rwr), GFP_KERNEL);
	CHECK(st, rwr, "backlog: no memory\n");
	if (!rwr)
		goto destroy_qp;
	rsge.addr = st->dma[1];
	rsge.length = GRH_LEN + UD_LEN;
	rsge.lkey = st->pd->local_dma_lkey;
	for (i = 0; i < BACKLOG_RECVS; i++) {
		rwr[i].wr_cqe = &st->cqe;
		rwr[i].sg_list = &rsge;
		rwr[i].num_sge = 1;
		rwr[i].next = i + 1 < BACKLOG_RECVS ? &rwr[i + 1] : NULL;
	}
	spin_lock_irqsave(&st_atomic_lock, flags);
	err = ib_post_recv(b, rwr, &bad);
	spin_unlock_irqrestore(&st_atomic_lock, flags);
	CHECK(st, !err, "backlog: %d receives posted in atomic context, one chain: %d at the %ld-th\n",
	      BACKLOG_RECVS, err, err ? (long)(bad - rwr) : 0L);
	kfree(rwr);
	err = st_ud_send(st, a, b);
	CHECK(st, !err && st_find(st, IB_WC_RECV) &&
	      st_find(st, IB_WC_RECV)->status == IB_WC_SUCCESS &&
	      !memcmp(st->buf[0], st->buf[1] + GRH_LEN, UD_LEN),
	      "backlog: a datagram into the first of them (%d)\n", err);
	/* what the device and the backlog still hold goes with the QP */
destroy_qp:
	CHECK(st, !ib_destroy_qp(b), "backlog: destroy the QP\n");
}

static int st_setup(struct st *st)
{
	struct net_device *nd;
	int i, err;

	st->dev = ib_device_get_by_name(dev_name_param, RDMA_DRIVER_UNKNOWN);
	if (!st->dev) {
		pr_err("vrdma_selftest: no RDMA device %s\n", dev_name_param);
		return -ENODEV;
	}
	err = rdma_query_gid(st->dev, 1, gid_index, &st->gid);
	nd = ib_device_get_netdev(st->dev, 1);
	if (err || !nd) {
		pr_err("vrdma_selftest: %s has no GID %d or no netdev\n",
		       dev_name_param, gid_index);
		dev_put(nd);
		return err ?: -ENODEV;
	}
	ether_addr_copy(st->mac, nd->dev_addr);
	dev_put(nd);
	/* the DMA MR behind local_dma_lkey, with remote access for RDMA */
	st->pd = ib_alloc_pd(st->dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(st->pd))
		return PTR_ERR(st->pd);
	st->cq = ib_alloc_cq(st->dev, st, 16, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(st->cq))
		return PTR_ERR(st->cq);
	for (i = 0; i < 2; i++) {
		st->buf[i] = kzalloc(BUF_LEN, GFP_KERNEL);
		if (!st->buf[i])
			return -ENOMEM;
		st->dma[i] = ib_dma_map_single(st->dev, st->buf[i], BUF_LEN,
					       DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(st->dev, st->dma[i])) {
			st->dma[i] = 0;
			return -ENOMEM;
		}
	}
	return 0;
}

static void st_teardown(struct st *st)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (st->dma[i])
			ib_dma_unmap_single(st->dev, st->dma[i], BUF_LEN,
					    DMA_BIDIRECTIONAL);
		kfree(st->buf[i]);
	}
	if (!IS_ERR_OR_NULL(st->cq))
		ib_free_cq(st->cq);
	if (!IS_ERR_OR_NULL(st->pd))
		ib_dealloc_pd(st->pd);
	if (st->dev)
		ib_device_put(st->dev);
}

static void st_pair(struct st *st, enum ib_qp_type type)
{
	const char *name = type == IB_QPT_UD ? "UD" : "RC";
	struct ib_qp *a, *b;

	a = st_qp(st, type);
	b = st_qp(st, type);
	CHECK(st, !IS_ERR(a) && !IS_ERR(b), "%s: create QPs\n", name);
	if (IS_ERR(a) || IS_ERR(b))
		goto destroy;
	CHECK(st, !st_connect(st, a, b->qp_num) && !st_connect(st, b, a->qp_num),
	      "%s: bring the QPs to RTS\n", name);
	if (type == IB_QPT_UD) {
		st_ud(st, a, b);
		st_backlog(st, a);
	} else
		st_rc(st, a, b);
destroy:
	if (!IS_ERR(a))
		CHECK(st, !ib_destroy_qp(a), "%s: destroy a QP\n", name);
	if (!IS_ERR(b))
		CHECK(st, !ib_destroy_qp(b), "%s: destroy a QP\n", name);
}

static int __init vrdma_selftest_init(void)
{
	struct st *st;
	int err;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	init_completion(&st->done);
	init_completion(&st->got_event);
	spin_lock_init(&st->lock);
	st->cqe.done = st_done;
	err = st_setup(st);
	if (err) {
		pr_err("vrdma_selftest: set-up failed: %d\n", err);
		st->failed++;
	} else {
		st_pair(st, IB_QPT_RC);
		st_pair(st, IB_QPT_UD);
	}
	st_teardown(st);
	pr_info("vrdma_selftest: %s: %d passed, %d failed\n", dev_name_param,
		st->passed, st->failed);
	err = st->failed ? -EINVAL : 0;
	kfree(st);
	return err;
}

static void __exit vrdma_selftest_exit(void)
{
}

module_init(vrdma_selftest_init);
module_exit(vrdma_selftest_exit);
MODULE_DESCRIPTION("Kernel verbs on a vrdma device, as a kernel consumer uses them");
MODULE_LICENSE("GPL");
