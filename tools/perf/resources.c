// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's device and resources (perftest_resources.c: alloc_ctx,
 * ctx_init, ctx_connect, destroy_ctx).
 */
#include "perf.h"

/* ---- the device ---- */

/* BUFF_SIZE and INC of perftest_resources.h */
uint64_t buff_size_of(uint64_t size, int cycle_buffer)
{
	return size < (uint64_t)cycle_buffer ? (uint64_t)cycle_buffer : size;
}

uint64_t inc_of(uint64_t size, int cache_line)
{
	uint64_t cl = (uint64_t)cache_line;

	return size > cl ? (size + cl - 1) / cl * cl : cl;
}

/* alloc_ctx's buffer: a send half and a receive half per QP. */
static size_t data_buffer_size(const struct perf *p, int cycle_buffer)
{
	size_t n = inc_of(buff_size_of(p->size, cycle_buffer), p->cache_line) * 2 * (size_t)p->num_qps;

	if (p->conn == UD)
		n += (size_t)p->cache_line;
	return n;
}

/* What ctx_init asks of each QP. */
static struct vrdma_qp_init_attr qp_init_attr(const struct perf *p)
{
	return (struct vrdma_qp_init_attr){
		.qp_type = p->conn == RC ? VIRTIO_IB_QPT_RC :
			   p->conn == UC ? VIRTIO_IB_QPT_UC : VIRTIO_IB_QPT_UD,
		.send_cq = p->send_cq, .recv_cq = p->recv_cq,
		.max_send_wr = (uint32_t)p->tx_depth, .max_recv_wr = (uint32_t)p->rx_depth,
		.max_send_sge = 1, .max_recv_sge = 1,
		.max_inline_data = (uint32_t)p->inline_size,
	};
}

/* The shared memory for what ctx_init makes, before the device is asked
 * for its inline limit and the peer for its page size: the largest of
 * both. */
static size_t mem_size_for(const struct perf *p)
{
	struct vrdma_qp_init_attr qp = qp_init_attr(p);
	size_t data = data_buffer_size(p, MAX_CYCLE_BUFFER);

	if (p->inline_size <= 0)
		qp.max_inline_data = VRDMA_MAX_INLINE;
	return vrdma_mem_ctx() + vrdma_mem_buf(data) + vrdma_mem_reg_mr(data) +
	       vrdma_mem_cq((uint32_t)(p->tx_depth * p->num_qps)) +
	       vrdma_mem_cq((uint32_t)(p->rx_depth * p->num_qps)) +
	       (size_t)p->num_qps * vrdma_mem_qp(&qp);
}

/* ctx_set_out_reads */
static int out_reads_for(const struct perf *p)
{
	int max_reads = (int)p->cfg.max_qp_rd_atom;

	if (p->out_reads > max_reads) {
		printf(RESULT_LINE);
		fprintf(stderr, " Number of outstanding reads is above max = %d\n", max_reads);
		fprintf(stderr, " Changing to that max value\n");
		return max_reads;
	}
	return p->out_reads <= 0 ? max_reads : p->out_reads;
}

/* check_link (set_link_layer, ctx_set_max_inline, ctx_set_out_reads): a
 * virtio-rdma port is RoCE, so its link layer is Ethernet and a GID index
 * is always used. */
static int check_link(struct perf *p)
{
	int ret;

	ret = vrdma_query_port(p->ctx, (uint8_t)p->ib_port, &p->port_attr);
	if (ret) {
		fprintf(stderr, " Unable to query port %d attributes\n", p->ib_port);
		fprintf(stderr, " Couldn't set the link layer\n");
		return ret;
	}
	if (p->port_attr.state != IB_PORT_ACTIVE) {
		fprintf(stderr, " Port number %d state is %s\n", p->ib_port,
			p->port_attr.state == 1 ? "Down" : p->port_attr.state == 2 ? "Init" :
			p->port_attr.state == 3 ? "Armed" : "Nop");
		fprintf(stderr, " Couldn't set the link layer\n");
		return -ENETDOWN;
	}
	if (p->gid_index == -1)
		p->gid_index = 0;
	/* perftest's inline defaults for a device it knows: latency tests only */
	if (p->inline_size == -1) {
		if (p->tst == LAT && p->verb == WRITE)
			p->inline_size = DEF_INLINE_WRITE;
		else if (p->tst == LAT && p->verb == SEND)
			p->inline_size = p->conn == UD ? DEF_INLINE_SEND_UD : DEF_INLINE_SEND_RC_UC;
		else
			p->inline_size = 0;
	}
	if (p->inline_size > VRDMA_MAX_INLINE) {
		printf("  Actual inline-size(%d) > requested inline-size(%d)\n", VRDMA_MAX_INLINE,
		       p->inline_size);
		p->inline_size = VRDMA_MAX_INLINE;
	}
	p->out_reads = rd_atomic(p) ? out_reads_for(p) : 1;
	return 0;
}

/* set_mtu: the port's active MTU unless asked for a smaller one. */
int set_mtu(const struct perf *p)
{
	int active = p->port_attr.active_mtu, m;

	if (!p->mtu)
		return active;
	switch (p->mtu) {
	case 256: m = 1; break;
	case 512: m = 2; break;
	case 1024: m = 3; break;
	case 2048: m = 4; break;
	case 4096: m = 5; break;
	default:
		fprintf(stderr, " Invalid MTU - %d \n", p->mtu);
		fprintf(stderr, " Please choose mtu from {256,512,1024,2048,4096}\n");
		fprintf(stderr, " Will run with the port active mtu - %d\n", active);
		m = active;
	}
	if (m > active) {
		fprintf(stdout, "Requested mtu is higher than active mtu \n");
		fprintf(stdout, "Changing to active mtu - %d\n", active);
		m = active;
	}
	return m;
}

/* ctx_init: PD, one MR over the whole buffer, CQs, QPs moved to INIT. */
int ctx_init(struct perf *p)
{
	unsigned int access = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	struct vrdma_qp_init_attr init;
	struct virtio_rdma_qp_attr a;
	uint32_t mask;
	size_t i;
	int ret;

	ret = vrdma_alloc_pd(p->ctx, &p->pd);
	if (ret) {
		fprintf(stderr, "Couldn't allocate PD\n");
		return ret;
	}
	p->alloc_size = p->size;
	p->qp_buff = inc_of(buff_size_of(p->size, p->cycle_buffer), p->cache_line);
	p->buff_size = data_buffer_size(p, p->cycle_buffer);
	p->buf = vrdma_alloc_buf(p->ctx, p->buff_size);
	if (!p->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		return -ENOMEM;
	}
	/* random contents, except write_lat's polled buffer (as perftest) */
	if (!(p->verb == WRITE && p->tst == LAT)) {
		srand((unsigned int)time(NULL));
		for (i = 0; i < p->buff_size; i++)
			p->buf[i] = (uint8_t)rand();
	}
	if (p->verb == WRITE)
		access |= VIRTIO_IB_ACCESS_REMOTE_WRITE;
	else if (p->verb == READ)
		access |= VIRTIO_IB_ACCESS_REMOTE_READ;
	else if (p->verb == ATOMIC)
		access |= VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
	ret = vrdma_reg_mr(p->pd, p->buf, p->buff_size, access, &p->mr);
	if (ret) {
		fprintf(stderr, "Couldn't allocate MR\n");
		return ret;
	}
	ret = vrdma_create_cq(p->ctx, (uint32_t)(p->tx_depth * p->num_qps), &p->send_cq);
	if (ret) {
		fprintf(stderr, "Couldn't create CQ\n");
		return ret;
	}
	p->recv_cq = p->send_cq;
	if (p->verb == SEND) {
		ret = vrdma_create_cq(p->ctx, (uint32_t)(p->rx_depth * p->num_qps), &p->recv_cq);
		if (ret) {
			fprintf(stderr, "Couldn't create a receiver CQ\n");
			return ret;
		}
	}
	for (p->nq = 0; p->nq < p->num_qps; p->nq++) {
		struct qpc *q = &p->q[p->nq];

		init = qp_init_attr(p);
		ret = vrdma_create_qp(p->pd, &init, &q->qp);
		if (ret) {
			/* the device says INVAL for a size beyond its limits
			 * (perftest's hint is for ENOMEM from a verbs driver) */
			if (ret == -EINVAL) {
				fprintf(stderr, "Requested QP size might be too big. Try reducing TX depth and/or inline size.\n");
				fprintf(stderr, "Current TX depth is %d and inline size is %d .\n",
					p->tx_depth, p->inline_size);
			}
			fprintf(stderr, "Failed to create QP %d of %d: %s (TX depth %d, RX depth %d; device max_qp %u, max_qp_wr %u)\n",
				p->nq + 1, p->num_qps, strerror(-ret), p->tx_depth, p->rx_depth,
				p->cfg.max_qp, p->cfg.max_qp_wr);
			return ret;
		}
		/* ctx_modify_qp_to_init */
		memset(&a, 0, sizeof(a));
		a.qp_state = VIRTIO_IB_QPS_INIT;
		a.port_num = (uint8_t)p->ib_port;
		mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT;
		if (p->conn == UD) {
			a.qkey = DEF_QKEY;
			mask |= VIRTIO_IB_QP_QKEY;
		} else {
			a.qp_access_flags = p->verb == ATOMIC ? VIRTIO_IB_ACCESS_REMOTE_ATOMIC :
					    p->verb == READ ? VIRTIO_IB_ACCESS_REMOTE_READ :
					    p->verb == WRITE ? VIRTIO_IB_ACCESS_REMOTE_WRITE :
					    VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_LOCAL_WRITE;
			mask |= VIRTIO_IB_QP_ACCESS_FLAGS;
		}
		ret = vrdma_modify_qp(q->qp, &a, mask);
		if (ret) {
			fprintf(stderr, "Failed to modify QP to INIT, ret=%d\n", ret);
			vrdma_destroy_qp(q->qp);
			q->qp = NULL;
			return ret;
		}
	}
	return 0;
}

/* get_best_gid_index: an IPv4-mapped GID over one that is not (every GID of
 * this device is RoCEv2, so the RoCE version never decides). */
static int best_gid_index(struct perf *p)
{
	uint8_t cur[16], rival[16];
	int best = 0, i;

	for (i = 1; i < (int)p->port_attr.gid_tbl_len && i < VIRTIO_RDMA_GID_TBL_LEN; i++) {
		if (vrdma_query_gid(p->ctx, (unsigned int)best, cur))
			memset(cur, 0, sizeof(cur));
		if (vrdma_query_gid(p->ctx, (unsigned int)i, rival))
			continue;
		if (roce_gid_is_v4(rival) && !roce_gid_is_v4(cur))
			best = i;
	}
	return best;
}


/* set_up_connection: this side's address for every QP. The receive (and
 * RDMA target) half of the buffer is what vaddr names, as in perftest. */
int set_up_connection(struct perf *p)
{
	uint64_t stride = buff_size_of(p->size, p->cycle_buffer);
	uint8_t gid[16];
	int i, ret;

	srand48((long)getpid() * time(NULL));
	if (!p->use_gid_user)
		p->gid_index = best_gid_index(p);
	ret = vrdma_query_gid(p->ctx, (unsigned int)p->gid_index, gid);
	if (ret) {
		fprintf(stderr, " Couldn't read GID index %d of port %d\n", p->gid_index, p->ib_port);
		return ret;
	}
	for (i = 0; i < p->num_qps; i++) {
		struct oob_dest *d = &p->my[i];

		d->lid = 0;	/* RoCE has no LID */
		d->qpn = (int)vrdma_qp_num(p->q[i].qp);
		d->psn = (int)(lrand48() & ROCE_PSN_MASK);
		d->rkey = vrdma_mr_rkey(p->mr);
		d->out_reads = p->out_reads;
		d->vaddr = (uintptr_t)p->buf + ((uint64_t)p->num_qps + (uint64_t)i) * stride;
		memcpy(d->gid, gid, sizeof(gid));
		d->srqn = 0;
	}
	return 0;
}

static uint8_t clamp_rd_atom(const struct perf *p, int want)
{
	int max = (int)p->cfg.max_qp_init_rd_atom;

	if (max <= 0 || max > 255)
		max = 255;
	return (uint8_t)(want < 1 ? 1 : want > max ? max : want);
}

/* The address vector perftest builds in ctx_modify_qp_to_rtr (GRH: RoCE). */
static void fill_ah(const struct perf *p, const struct oob_dest *rem, struct virtio_rdma_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid, rem->gid, 16);
	ah->grh.sgid_index = (uint8_t)p->gid_index;
	ah->grh.hop_limit = 0xff;
	ah->grh.traffic_class = 0;
	ah->sl = (uint8_t)p->sl;
	ah->port_num = (uint8_t)p->ib_port;
	ah->ah_flags = VIRTIO_IB_AH_GRH;
}

/* ctx_connect: every QP to RTR, and to RTS where it sends (a BW server
 * that only receives stays in RTR, as perftest's). */
int ctx_connect(struct perf *p)
{
	struct virtio_rdma_qp_attr a;
	uint32_t mask;
	int i, ret;

	for (i = 0; i < p->num_qps; i++) {
		const struct oob_dest *rem = &p->rem[i], *my = &p->my[i];

		memset(&a, 0, sizeof(a));
		a.qp_state = VIRTIO_IB_QPS_RTR;
		fill_ah(p, rem, &a.ah_attr);
		mask = VIRTIO_IB_QP_STATE;
		if (p->conn != UD) {
			a.path_mtu = (uint8_t)p->curr_mtu;
			a.dest_qp_num = (uint32_t)rem->qpn;
			a.rq_psn = (uint32_t)rem->psn;
			mask |= VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN;
			if (p->conn == RC) {
				a.max_dest_rd_atomic = clamp_rd_atom(p, my->out_reads);
				a.min_rnr_timer = MIN_RNR_TIMER;
				mask |= VIRTIO_IB_QP_MIN_RNR_TIMER | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC;
			}
		}
		ret = vrdma_modify_qp(p->q[i].qp, &a, mask);
		if (ret) {
			fprintf(stderr, "Failed to modify QP %d to RTR\n", my->qpn);
			return ret;
		}
		if (!(p->tst == LAT || p->machine == CLIENT || p->duplex))
			continue;
		a.qp_state = VIRTIO_IB_QPS_RTS;
		a.sq_psn = (uint32_t)my->psn;
		mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN;
		if (p->conn == RC) {
			a.timeout = (uint8_t)p->qp_timeout;
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			/* perftest takes the peer's out_reads as is; a peer with
			 * more than this device allows is clamped */
			a.max_rd_atomic = clamp_rd_atom(p, rem->out_reads);
			mask |= VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
		}
		ret = vrdma_modify_qp(p->q[i].qp, &a, mask);
		if (ret) {
			fprintf(stderr, "Failed to modify QP to RTS\n");
			return ret;
		}
	}
	return 0;
}

/* ---- setting up ---- */

int open_device(struct perf *p)
{
	struct vrdma_open_attr oa = { .mem_size = mem_size_for(p) };
	int ret;

	if (!p->dev) {
		fprintf(stderr, " No device: give the VM's vhost-user socket with -d SOCKET\n");
		fprintf(stderr, " Unable to find the Infiniband/RoCE device\n");
		return -ENODEV;
	}
	ret = vrdma_open(p->dev, &oa, &p->ctx);
	if (ret) {
		fprintf(stderr, " Couldn't open the virtio-rdma device at %s: %s\n", p->dev,
			strerror(-ret));
		fprintf(stderr, " Couldn't get context for the device\n");
		return ret;
	}
	ret = vrdma_query_device(p->ctx, &p->cfg);
	if (!ret)
		ret = check_link(p);
	if (ret) {
		fprintf(stderr, " Couldn't get context for the device\n");
		vrdma_close(p->ctx);
		p->ctx = NULL;
	}
	return ret;
}

/* establish_connection, exchange_versions, check_version_compatibility,
 * check_sys_data, check_mtu. */
int alloc_arrays(struct perf *p)
{
	uint64_t tarr = p->no_peak ? 1 : p->iters * (uint64_t)p->num_qps;
	int i;

	p->q = calloc((size_t)p->num_qps, sizeof(*p->q));
	p->my = calloc((size_t)p->num_qps, sizeof(*p->my));
	p->rem = calloc((size_t)p->num_qps, sizeof(*p->rem));
	p->tposted = calloc(tarr ? tarr : 1, sizeof(uint64_t));
	p->tcompleted = calloc(tarr ? tarr : 1, sizeof(uint64_t));
	if (!p->q || !p->my || !p->rem || !p->tposted || !p->tcompleted)
		goto no_memory;
	for (i = 0; i < p->num_qps; i++) {
		p->q[i].sge = calloc((size_t)p->post_list, sizeof(*p->q[i].sge));
		p->q[i].raddr = calloc((size_t)p->post_list, sizeof(*p->q[i].raddr));
		p->q[i].flags = calloc((size_t)p->post_list, sizeof(*p->q[i].flags));
		if (!p->q[i].sge || !p->q[i].raddr || !p->q[i].flags)
			goto no_memory;
	}
	return 0;

no_memory:
	fprintf(stderr, " Cannot Allocate\n");
	return -ENOMEM;
}

void free_arrays(struct perf *p)
{
	int i;

	for (i = 0; p->q && i < p->num_qps; i++) {
		free(p->q[i].sge);
		free(p->q[i].raddr);
		free(p->q[i].flags);
	}
	free(p->q);
	free(p->my);
	free(p->rem);
	free(p->tposted);
	free(p->tcompleted);
}

/* destroy_ctx: whatever ctx_init got to. */
int destroy_resources(struct perf *p)
{
	int i, ret = 0;

	for (i = 0; i < p->nq; i++)
		if (p->q[i].qp && vrdma_destroy_qp(p->q[i].qp))
			ret = -EIO;
	if (p->recv_cq && p->recv_cq != p->send_cq && vrdma_destroy_cq(p->recv_cq))
		ret = -EIO;
	if (p->send_cq && vrdma_destroy_cq(p->send_cq))
		ret = -EIO;
	if (p->mr && vrdma_dereg_mr(p->mr))
		ret = -EIO;
	if (p->buf)
		vrdma_free_buf(p->ctx, p->buf);
	if (p->pd && vrdma_dealloc_pd(p->pd))
		ret = -EIO;
	if (ret)
		fprintf(stderr, "Failed to destroy resources\n");
	return ret;
}
