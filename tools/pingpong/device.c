// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-pingpong's device: the PD, MR, CQ, QP (-T srq: the SRQ and its
 * QPs) as rdma-core's pp_init_ctx,
 * pp_connect_ctx and pp_close_ctx make and undo them, through libvrdma.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pingpong.h"

/* ---- the device ---- */

/* The QP pp_init makes (rdma-core's: one send, rx_depth receives, or
 * those of the SRQ). */
static struct vrdma_qp_init_attr qp_init_attr(const struct pp_opts *o, struct vrdma_cq *cq,
					      struct vrdma_srq *srq)
{
	return (struct vrdma_qp_init_attr){
		.qp_type = o->type,
		.send_cq = cq,
		.recv_cq = cq,
		.max_send_wr = 1,
		.max_recv_wr = o->srq ? 0 : o->rx_depth,
		.max_send_sge = 1,
		.max_recv_sge = o->srq ? 0 : 1,
		.srq = srq,
	};
}

/* ibv_srq_pingpong's CQ takes rx_depth + num_qp, the others' rx_depth + 1. */
static uint32_t cq_depth(const struct pp_opts *o)
{
	return o->rx_depth + (o->srq ? o->num_qp : 1);
}

/* The shared memory for what pp_init makes (vrdma_open's mem_size). */
static size_t mem_needed(const struct pp_opts *o, size_t buf_len)
{
	struct vrdma_qp_init_attr qp = qp_init_attr(o, NULL, NULL);	/* -T srq: RQ of 0 */

	return vrdma_mem_ctx() + vrdma_mem_buf(buf_len) + vrdma_mem_reg_mr(buf_len ? buf_len : 1) +
	       vrdma_mem_cq(cq_depth(o)) + o->num_qp * vrdma_mem_qp(&qp) +
	       (o->srq ? vrdma_mem_srq(o->rx_depth, 1) : 0);
}

int pp_post_recv(struct pp_ctx *c, unsigned int n)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)c->buf,
		.length = c->o->size + c->grh,
		.lkey = vrdma_mr_lkey(c->mr),
	};
	struct vrdma_recv_wr wr = { .wr_id = PINGPONG_RECV_WRID, .sg_list = &sge, .num_sge = 1 };
	unsigned int i;

	for (i = 0; i < n; i++)
		if (c->srq ? vrdma_post_srq_recv(c->srq, &wr) : vrdma_post_recv(c->qp, &wr))
			break;
	return (int)i;
}

int pp_post_send(struct pp_ctx *c, unsigned int qp)
{
	/* UD sends from past the GRH area, as ibv_ud_pingpong */
	struct vrdma_sge sge = {
		.addr = (uintptr_t)(c->buf + c->grh),
		.length = c->o->size,
		.lkey = vrdma_mr_lkey(c->mr),
	};
	struct vrdma_send_wr wr = {
		.wr_id = PINGPONG_SEND_WRID,
		.opcode = VIRTIO_IB_WR_SEND,
		.send_flags = c->send_flags,
		.sg_list = &sge,
		.num_sge = 1,
	};

	if (c->o->type == VIRTIO_IB_QPT_UD) {
		wr.remote_qpn = c->remote_qpn;
		wr.remote_qkey = UD_QKEY;
		wr.av = c->av;
	}
	return vrdma_post_send(c->qps[qp], &wr);
}

int pp_find_qp(const struct pp_ctx *c, uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < c->o->num_qp; i++)
		if (vrdma_qp_num(c->qps[i]) == qpn)
			return (int)i;
	return -1;
}

/* Frees whatever pp_init made; the daemon frees the device's side when the
 * connection closes, so a failure half-way needs nothing more. */
void pp_free(struct pp_ctx *c)
{
	vrdma_close(c->dev);
	c->dev = NULL;
}

/* Open the VM's device and make the PD, MR, CQ and a QP in INIT, as
 * pp_init_ctx does. Returns 0 or -1 (said why). */
int pp_init(struct pp_ctx *c, const struct pp_opts *o)
{
	struct vrdma_open_attr oattr = { 0 };
	struct vrdma_qp_init_attr init;
	struct virtio_rdma_qp_attr attr;
	uint32_t mask;
	unsigned int i;
	int ret;

	memset(c, 0, sizeof(*c));
	c->o = o;
	c->grh = o->type == VIRTIO_IB_QPT_UD ? GRH_LEN : 0;
	c->send_flags = VIRTIO_IB_SEND_SIGNALED;
	c->buf_len = (size_t)o->size + c->grh;
	oattr.mem_size = mem_needed(o, c->buf_len);

	ret = vrdma_open(o->socket, &oattr, &c->dev);
	if (ret) {
		fprintf(stderr, "Couldn't get context for %s: %s\n", o->socket, vrdma_err(ret));
		if (ret == -ENOENT || ret == -ECONNREFUSED)
			fprintf(stderr, "(is vrdmad running, and is %s a [vm] socket of its config?)\n",
				o->socket);
		else if (ret == -ECONNRESET)
			fprintf(stderr, "(the device takes one front-end at a time: is a VM or another tool on it?)\n");
		return -1;
	}
	ret = vrdma_query_port(c->dev, (uint8_t)o->ib_port, &c->port);
	if (ret) {
		fprintf(stderr, "Unable to query port info for port %u: %s\n", o->ib_port,
			vrdma_err(ret));
		goto close_dev;
	}
	if (o->type == VIRTIO_IB_QPT_UD && o->size > mtu_bytes(c->port.active_mtu)) {
		fprintf(stderr, "Requested size larger than port MTU (%u)\n",
			mtu_bytes(c->port.active_mtu));
		goto close_dev;
	}
	/* the device refuses a path MTU above the port's (as rxe does): say so now
	 * rather than as "Failed to modify QP to RTR" after the exchange */
	if (o->type != VIRTIO_IB_QPT_UD && o->mtu > c->port.max_mtu) {
		fprintf(stderr, "Path MTU %u is above the port's maximum MTU %u (-m)\n",
			mtu_bytes(o->mtu), mtu_bytes(c->port.max_mtu));
		goto close_dev;
	}

	/* the device registers only its shared memory: the buffer lives there */
	c->buf = vrdma_alloc_buf(c->dev, c->buf_len ? c->buf_len : 1);
	if (!c->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		goto close_dev;
	}
	memset(c->buf, 0x7b, c->buf_len);

	ret = vrdma_alloc_pd(c->dev, &c->pd);
	if (ret) {
		fprintf(stderr, "Couldn't allocate PD: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	ret = vrdma_reg_mr(c->pd, c->buf, c->buf_len ? c->buf_len : 1, VIRTIO_IB_ACCESS_LOCAL_WRITE, &c->mr);
	if (ret) {
		fprintf(stderr, "Couldn't register MR: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	ret = vrdma_create_cq(c->dev, cq_depth(o), &c->cq);
	if (ret) {
		fprintf(stderr, "Couldn't create CQ: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	if (o->srq) {
		ret = vrdma_create_srq(c->pd, o->rx_depth, 1, 0, &c->srq);
		if (ret) {
			fprintf(stderr, "Couldn't create SRQ: %s\n", vrdma_err(ret));
			goto close_dev;
		}
	}
	init = qp_init_attr(o, c->cq, c->srq);
	for (i = 0; i < o->num_qp; i++) {
		ret = vrdma_create_qp(c->pd, &init, &c->qps[i]);
		if (ret) {
			if (o->srq)
				fprintf(stderr, "Couldn't create QP[%u]: %s\n", i, vrdma_err(ret));
			else
				fprintf(stderr, "Couldn't create QP: %s\n", vrdma_err(ret));
			goto close_dev;
		}
		/* inline when the QP can carry the whole message, as rdma-core decides */
		ret = vrdma_query_qp(c->qps[i], VIRTIO_IB_QP_CAP, &attr);
		if (ret) {
			fprintf(stderr, "Couldn't query QP: %s\n", vrdma_err(ret));
			goto close_dev;
		}
		if (attr.cap.max_inline_data >= o->size)
			c->send_flags |= VIRTIO_IB_SEND_INLINE;
	}
	c->qp = c->qps[0];

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = VIRTIO_IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = (uint8_t)o->ib_port;
	mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT;
	if (o->type == VIRTIO_IB_QPT_UD) {
		attr.qkey = UD_QKEY;
		mask |= VIRTIO_IB_QP_QKEY;
	} else {
		attr.qp_access_flags = 0;
		mask |= VIRTIO_IB_QP_ACCESS_FLAGS;
	}
	for (i = 0; i < o->num_qp; i++) {
		ret = vrdma_modify_qp(c->qps[i], &attr, mask);
		if (ret) {
			if (o->srq)
				fprintf(stderr, "Failed to modify QP[%u] to INIT\n", i);
			else
				fprintf(stderr, "Failed to modify QP to INIT: %s\n", vrdma_err(ret));
			goto close_dev;
		}
	}
	return 0;

close_dev:
	pp_free(c);
	return -1;
}

/* A step of pp_close: true if it failed (and said so). */
static bool failed(int ret, const char *what)
{
	if (ret)
		fprintf(stderr, "Couldn't %s: %s\n", what, vrdma_err(ret));
	return ret != 0;
}

/* Tear down in rdma-core's order; each failure is reported. */
int pp_close(struct pp_ctx *c)
{
	bool bad = false;
	unsigned int i;

	for (i = 0; i < c->o->num_qp && !bad; i++)
		bad = failed(vrdma_destroy_qp(c->qps[i]), "destroy QP");
	bad = bad || (c->srq && failed(vrdma_destroy_srq(c->srq), "destroy SRQ")) ||
		   failed(vrdma_destroy_cq(c->cq), "destroy CQ") ||
		   failed(vrdma_dereg_mr(c->mr), "deregister MR") ||
		   failed(vrdma_dealloc_pd(c->pd), "deallocate PD");

	if (!bad)
		vrdma_free_buf(c->dev, c->buf);
	pp_free(c);
	return bad ? -1 : 0;
}

static bool gid_is_global(const uint8_t gid[16])
{
	static const uint8_t zero[8];

	/* rdma-core's test: a non-zero interface ID means a GID was sent */
	return memcmp(gid + 8, zero, sizeof(zero)) != 0;
}

static void fill_grh(const struct pp_ctx *c, const struct pp_dest *dest,
		     struct virtio_rdma_ah_attr *ah)
{
	memcpy(ah->grh.dgid, dest->gid, 16);
	ah->grh.sgid_index = (uint8_t)c->o->gidx;
	ah->grh.hop_limit = 1;
	ah->sl = (uint8_t)c->o->sl;
	ah->port_num = (uint8_t)c->o->ib_port;
	ah->ah_flags = VIRTIO_IB_AH_GRH;
	/* dmac left zero: libvrdma finds it in the neighbour table */
}

/* pp_connect_ctx for one QP: RTR then RTS towards dest (UD: and its "AH"). */
static int connect_qp(struct pp_ctx *c, struct vrdma_qp *qp, unsigned int my_psn,
		      const struct pp_dest *dest)
{
	const struct pp_opts *o = c->o;
	struct virtio_rdma_qp_attr attr;
	uint32_t mask;
	int ret;

	/* RoCE has no LIDs: every address needs the peer's GID (GRH) */
	if (!gid_is_global(dest->gid)) {
		fprintf(stderr, "The remote GID is zero: RoCE needs one (run the peer with -g)\n");
		fprintf(stderr, o->type == VIRTIO_IB_QPT_UD ? "Failed to create AH\n" :
			"Failed to modify QP to RTR\n");
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = VIRTIO_IB_QPS_RTR;
	mask = VIRTIO_IB_QP_STATE;
	if (o->type != VIRTIO_IB_QPT_UD) {
		attr.path_mtu = (uint8_t)o->mtu;
		attr.dest_qp_num = dest->qpn;
		attr.rq_psn = dest->psn;
		fill_grh(c, dest, &attr.ah_attr);
		mask |= VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN;
		if (o->type == VIRTIO_IB_QPT_RC) {
			attr.max_dest_rd_atomic = 1;
			attr.min_rnr_timer = 12;
			mask |= VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER;
		}
	}
	ret = vrdma_modify_qp(qp, &attr, mask);
	if (ret) {
		fprintf(stderr, "Failed to modify QP to RTR: %s\n", vrdma_err(ret));
		return -1;
	}

	attr.qp_state = VIRTIO_IB_QPS_RTS;
	attr.sq_psn = my_psn;
	mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN;
	if (o->type == VIRTIO_IB_QPT_RC) {
		attr.timeout = 14;
		attr.retry_cnt = 7;
		attr.rnr_retry = 7;
		attr.max_rd_atomic = 1;
		mask |= VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
	}
	ret = vrdma_modify_qp(qp, &attr, mask);
	if (ret) {
		fprintf(stderr, "Failed to modify QP to RTS: %s\n", vrdma_err(ret));
		return -1;
	}

	if (o->type == VIRTIO_IB_QPT_UD) {
		/* the AH is the AV every UD WR carries; its MAC is resolved at
		 * the first send (a peer VM of the same daemon needs none) */
		memset(&c->av, 0, sizeof(c->av));
		c->av.port = o->ib_port;
		c->av.sl_tclass_flowlabel = (uint32_t)o->sl << 28;
		memcpy(c->av.dgid, dest->gid, 16);
		c->av.gid_index = (uint8_t)o->gidx;
		c->av.hop_limit = 1;
		c->remote_qpn = dest->qpn;
	}
	return 0;
}

int pp_connect(struct pp_ctx *c, const struct pp_dest *my, const struct pp_dest *dest)
{
	unsigned int i;

	for (i = 0; i < c->o->num_qp; i++)
		if (connect_qp(c, c->qps[i], my[i].psn, &dest[i]))
			return -1;
	return 0;
}
