// SPDX-License-Identifier: GPL-2.0-only
/*
 * Rings in this process's memory (ABI v2, docs/virtio-rdma.md sections 8
 * and 9): a CQ is polled by reading the CQEs the device wrote up to its
 * written word and publishing cons, and armed by writing its arm word and
 * setting its doorbell bit; no system call, except the kick that wakes a
 * device that said it sleeps. The device's words are checked where read:
 * a written that lies makes the CQ fail with EIO (the device is the
 * kernel's to reset), never a read outside the ring.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vrdma.h"

#define VRDMA_PAGE	VIRTIO_RDMA_PAGE_SIZE

static uint32_t *ring_word(const struct vrdma_uring *r, unsigned int off)
{
	return (uint32_t *)(r->mem + off);
}

/* The device's word: acquire, the slots it counts were written before. */
static uint32_t ring_load(const struct vrdma_uring *r, unsigned int off)
{
	return le32toh(__atomic_load_n(ring_word(r, off), __ATOMIC_ACQUIRE));
}

/* Ours: release, the slots it counts are written. */
static void ring_store(struct vrdma_uring *r, unsigned int off, uint32_t v)
{
	__atomic_store_n(ring_word(r, off), htole32(v), __ATOMIC_RELEASE);
}

static void *ring_slot(const struct vrdma_uring *r, uint32_t i)
{
	return r->mem + r->hdr + (size_t)(i & (r->entries - 1)) * r->stride;
}

/* Zeroed, page-aligned memory for a ring; kept out of a fork's child, as
 * the kernel pins it for the device.
 */
int vrdma_uring_alloc(struct vrdma_uring *r, uint32_t entries, uint32_t stride)
{
	memset(r, 0, sizeof(*r));
	r->entries = entries;
	r->stride = stride;
	r->hdr = stride > VIRTIO_RDMA_RING_HDR_MIN ? stride :
		 VIRTIO_RDMA_RING_HDR_MIN;
	r->len = (r->hdr + (size_t)entries * stride + VRDMA_PAGE - 1) &
		 ~(size_t)(VRDMA_PAGE - 1);
	r->mem = mmap(NULL, r->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->mem == MAP_FAILED) {
		r->mem = NULL;
		return errno;
	}
	if (ibv_dontfork_range(r->mem, r->len)) {
		munmap(r->mem, r->len);
		r->mem = NULL;
		return ENOMEM;
	}
	return 0;
}

/* Once the kernel let it go (the object's DESTROY answered). */
void vrdma_uring_free(struct vrdma_uring *r)
{
	if (!r->mem)
		return;
	ibv_dofork_range(r->mem, r->len);
	munmap(r->mem, r->len);
	r->mem = NULL;
}

/*
 * The ring's doorbell bit, then a kick only if the device sleeps and was
 * not kicked for this sleep's number already (docs/virtio-rdma.md,
 * "Waking a sleeping worker"); kick is the system call that asks the
 * kernel for it.
 */
static int ring_bell(struct vrdma_context *ctx, const struct vrdma_uring *r,
		     int (*kick)(void *), void *obj)
{
	uint64_t *w = (uint64_t *)(ctx->db + VIRTIO_RDMA_DB_BITS_OFF) +
		      r->bit / 64;
	uint32_t n;

	__atomic_fetch_or(w, htole64(1ull << (r->bit % 64)), __ATOMIC_SEQ_CST);
	/* the bit before need_wake, as the device's need_wake before its
	 * last look at the bits
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	n = le32toh(__atomic_load_n((uint32_t *)(ctx->db +
						 VIRTIO_RDMA_DB_NEED_WAKE),
				    __ATOMIC_SEQ_CST));
	if (!n || n == __atomic_load_n(&ctx->kicked, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&ctx->kicked, n, __ATOMIC_RELAXED);
	return kick(obj);
}

/*
 * The device failed (the kernel cleared the page's live word,
 * vrdma_uverbs.h): what this program posts or polls in its rings is
 * EIO from now on, as its system calls are.
 */
static bool ctx_dead(const struct vrdma_context *ctx)
{
	return ctx->live_word &&
	       __atomic_load_n((uint32_t *)(ctx->db + VRDMA_UDB_LIVE_OFF),
			       __ATOMIC_RELAXED) != htole32(VRDMA_UDB_LIVE);
}

/* One CQE as a work completion. The numbers of status and opcode are
 * ibverbs' (the ABI took the kernel's, which are the same); wc_flags are
 * the kernel's bits and are translated.
 */
static void cqe_to_wc(const struct virtio_rdma_cqe *c, struct ibv_wc *wc)
{
	uint32_t flags = le32toh(c->wc_flags);

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64toh(c->wr_id);
	wc->status = c->status <= IBV_WC_GENERAL_ERR ? c->status :
		     IBV_WC_GENERAL_ERR;
	switch (c->opcode) {
	case IBV_WC_SEND:
	case IBV_WC_RDMA_WRITE:
	case IBV_WC_RDMA_READ:
	case IBV_WC_COMP_SWAP:
	case IBV_WC_FETCH_ADD:
	case IBV_WC_BIND_MW:
	case IBV_WC_LOCAL_INV:
	case IBV_WC_RECV:
	case IBV_WC_RECV_RDMA_WITH_IMM:
		wc->opcode = c->opcode;
		break;
	default:
		wc->opcode = IBV_WC_SEND;
		wc->status = IBV_WC_GENERAL_ERR;
		break;
	}
	wc->vendor_err = le32toh(c->vendor_err);
	wc->byte_len = le32toh(c->byte_len);
	if (flags & 1)				/* IB_WC_GRH */
		wc->wc_flags |= IBV_WC_GRH;
	if (flags & 2) {			/* IB_WC_WITH_IMM */
		wc->wc_flags |= IBV_WC_WITH_IMM;
		wc->imm_data = c->ex.imm_data;	/* network order, as given */
	} else if (flags & 4) {			/* IB_WC_WITH_INVALIDATE */
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = le32toh(c->ex.invalidate_rkey);
	}
	wc->qp_num = le32toh(c->qp_num);
	wc->src_qp = le32toh(c->src_qp) & 0xffffff;
	wc->pkey_index = le16toh(c->pkey_index);
	wc->sl = c->sl & 0xf;
}

/*
 * The CQEs the device wrote, up to ne, then cons. An event CQE is the
 * kernel's to deliver (it reads it from the ring when the device says
 * so): skipped here. A written more than entries ahead of cons, or going
 * back, is a device that lies: EIO for good.
 */
int vrdma_ring_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct vrdma_cq *cq = to_vrdma_cq(ibcq);
	struct vrdma_uring *r = &cq->ring;
	struct virtio_rdma_cqe cqe;
	uint32_t written;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	written = ring_load(r, VIRTIO_RDMA_RING_WRITTEN);
	if (cq->broken || written - r->idx > r->entries ||
	    (int32_t)(written - r->seen) < 0) {
		cq->broken = true;
		pthread_spin_unlock(&cq->lock);
		return -EIO;
	}
	r->seen = written;
	while (n < ne && r->idx != written) {
		/* one copy, looked at from then on */
		memcpy(&cqe, ring_slot(r, r->idx), sizeof(cqe));
		r->idx++;
		if (cqe.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT && !cqe.status)
			continue;
		cqe_to_wc(&cqe, &wc[n++]);
	}
	/* the slots are the device's again */
	ring_store(r, VIRTIO_RDMA_RING_CONS, r->idx);
	pthread_spin_unlock(&cq->lock);
	/* nothing more will come from a device that failed */
	if (!n && ctx_dead(to_vrdma_ctx(ibcq->context)))
		return -EIO;
	return n;
}

static int cq_kick(void *obj)
{
	/* the kernel only kicks for a CQ on a ring: the arm is ours */
	return ibv_cmd_req_notify_cq(obj, 0);
}

/*
 * The arm word with a new seq (from 1, below the armed word's fired bit),
 * then the CQ's bell. The device fires at once for CQEs waiting past cons
 * when it takes the arm.
 */
int vrdma_ring_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vrdma_cq *cq = to_vrdma_cq(ibcq);
	struct vrdma_context *ctx = to_vrdma_ctx(ibcq->context);
	uint32_t seq;

	pthread_spin_lock(&cq->lock);
	seq = (cq->arm_seq + 1) & ((VIRTIO_RDMA_RING_ARMED_FIRED - 1) >> 2);
	cq->arm_seq = seq ? seq : 1;
	ring_store(&cq->ring, VIRTIO_RDMA_RING_ARM,
		   cq->arm_seq << 2 | (solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED :
				       VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION));
	pthread_spin_unlock(&cq->lock);
	return ring_bell(ctx, &cq->ring, cq_kick, ibcq);
}

/* The kernel's sizing (guest/kernel/vrdma_qp.c): entries for max_wr WQEs,
 * a stride for the largest WQE.
 */
uint32_t vrdma_ring_entries(uint32_t max_wr)
{
	uint32_t n = 1;

	while (n < max_wr && n < VIRTIO_RDMA_RING_MAX_ENTRIES)
		n <<= 1;
	return n;
}

uint32_t vrdma_ring_stride(size_t wqe)
{
	uint32_t n = 64;

	while (n < wqe && n < VRDMA_PAGE)
		n <<= 1;
	return n;
}

size_t vrdma_send_wqe_max(uint32_t max_sge, uint32_t max_inline)
{
	return sizeof(struct virtio_rdma_cmd_post_send) +
	       (size_t)max_sge * sizeof(struct virtio_rdma_sge) + max_inline;
}

size_t vrdma_recv_wqe_max(uint32_t max_sge)
{
	return sizeof(struct virtio_rdma_cmd_post_recv) +
	       (size_t)max_sge * sizeof(struct virtio_rdma_sge);
}

/*
 * The slot for the next WQE, or NULL: ENOMEM while the device has not
 * taken entries WQEs back (the ring has at least max_wr entries: a full
 * one is a consumer past its depth), EIO if its taken lies (went back, or
 * passed what we published). The ring's lock held.
 */
static void *ring_next(struct vrdma_uring *r, uint32_t prod, int *err)
{
	uint32_t taken = ring_load(r, VIRTIO_RDMA_RING_TAKEN);

	if (taken - r->seen > prod - r->seen) {
		*err = EIO;
		return NULL;
	}
	r->seen = taken;
	if (r->idx - taken >= r->entries) {
		*err = ENOMEM;
		return NULL;
	}
	return ring_slot(r, r->idx);
}

static bool qp_datagram(const struct ibv_qp *qp)
{
	return qp->qp_type == IBV_QPT_UD;
}

/* One send WR checked against the QP (as the kernel's vrdma_send_check);
 * its WQE's length in *len.
 */
static int send_check(const struct vrdma_qp *qp, const struct ibv_send_wr *wr,
		      size_t *len)
{
	const struct ibv_qp *ibqp = &qp->vqp.qp;
	bool inl = wr->send_flags & IBV_SEND_INLINE;
	size_t inl_len = 0;
	int i;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (qp_datagram(ibqp))
			return EINVAL;
		break;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (ibqp->qp_type != IBV_QPT_RC || inl)
			return EINVAL;
		break;
	case IBV_WR_SEND_WITH_INV:	/* IETH: RC only (IBA 9.2.1) */
		if (ibqp->qp_type != IBV_QPT_RC)
			return EINVAL;
		break;
	case IBV_WR_LOCAL_INV:		/* IBA 10.7.2.1 */
		if (ibqp->qp_type != IBV_QPT_RC || inl || wr->num_sge)
			return EINVAL;
		break;
	case IBV_WR_BIND_MW:		/* type 2B (IBA 10.6.7.2.2) */
		if (qp_datagram(ibqp) || inl || wr->num_sge ||
		    !wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2 ||
		    !wr->bind_mw.bind_info.mr ||
		    (wr->bind_mw.bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED))
			return EINVAL;
		break;
	default:
		return EINVAL;	/* not offered by the device (yet) */
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	if (qp_datagram(ibqp) &&
	    (!wr->wr.ud.ah || !to_vrdma_ah(wr->wr.ud.ah)->has_av))
		return EINVAL;
	if (inl) {
		for (i = 0; i < wr->num_sge; i++)
			inl_len += wr->sg_list[i].length;
		if (inl_len > qp->max_inline_data)
			return EINVAL;
	}
	*len = sizeof(struct virtio_rdma_cmd_post_send) +
	       (size_t)wr->num_sge * sizeof(struct virtio_rdma_sge) + inl_len;
	return 0;
}

/* A WR's SGEs as the device's (section 5). */
static void fill_sges(struct virtio_rdma_sge *d, const struct ibv_sge *s,
		      int n)
{
	int i;

	for (i = 0; i < n; i++) {
		d[i].addr = htole64(s[i].addr);
		d[i].length = htole32(s[i].length);
		d[i].lkey = htole32(s[i].lkey);
	}
}

/* A checked send WR as the device's WQE, into slot c (len bytes). The
 * numbers of opcode and send_flags are ibverbs' and the ABI's alike.
 */
static void send_fill(const struct vrdma_qp *qp, const struct ibv_send_wr *wr,
		      struct virtio_rdma_cmd_post_send *c, size_t len)
{
	struct virtio_rdma_sge *sge = (struct virtio_rdma_sge *)(c + 1);
	uint8_t *inl = (uint8_t *)(sge + wr->num_sge);
	int i;

	memset(c, 0, len);
	c->num_sge = htole32(wr->num_sge);
	c->send_flags = htole32(wr->send_flags & (IBV_SEND_FENCE |
						  IBV_SEND_SIGNALED |
						  IBV_SEND_SOLICITED |
						  IBV_SEND_INLINE));
	c->opcode = htole32(wr->opcode);
	c->wr_id = htole64(wr->wr_id);
	c->ex.imm_data = wr->imm_data;	/* network order, as given */
	if (qp_datagram(&qp->vqp.qp)) {
		c->wr.ud.remote_qpn = htole32(wr->wr.ud.remote_qpn);
		c->wr.ud.remote_qkey = htole32(wr->wr.ud.remote_qkey);
		c->wr.ud.av = to_vrdma_ah(wr->wr.ud.ah)->av;
	} else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		c->wr.atomic.remote_addr = htole64(wr->wr.atomic.remote_addr);
		c->wr.atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		c->wr.atomic.swap = htole64(wr->wr.atomic.swap);
		c->wr.atomic.rkey = htole32(wr->wr.atomic.rkey);
	} else if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

		c->wr.bind_mw.addr = htole64(b->addr);
		c->wr.bind_mw.length = htole64(b->length);
		c->wr.bind_mw.mw_rkey = htole32(wr->bind_mw.mw->rkey);
		c->wr.bind_mw.rkey = htole32(wr->bind_mw.rkey);
		c->wr.bind_mw.mr_lkey = htole32(b->mr->lkey);
		c->wr.bind_mw.access = htole32(b->mw_access_flags &
					       (IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ |
						IBV_ACCESS_REMOTE_ATOMIC));
	} else if (wr->opcode == IBV_WR_LOCAL_INV ||
		   wr->opcode == IBV_WR_SEND_WITH_INV) {
		c->ex.invalidate_rkey = htole32(wr->invalidate_rkey);
	} else if (wr->opcode != IBV_WR_SEND &&
		   wr->opcode != IBV_WR_SEND_WITH_IMM) {
		c->wr.rdma.remote_addr = htole64(wr->wr.rdma.remote_addr);
		c->wr.rdma.rkey = htole32(wr->wr.rdma.rkey);
	}
	fill_sges(sge, wr->sg_list, wr->num_sge);
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(inl, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		inl += wr->sg_list[i].length;
	}
}

static int qp_kick(void *obj)
{
	struct ibv_send_wr *bad;

	/* a POST_SEND of nothing: the kernel's kick */
	return ibv_cmd_post_send(obj, NULL, &bad);
}

/*
 * Each WQE straight into its slot, then prod and the bell once for the
 * list; the first WR that fails is *bad_wr, those before it are posted.
 * As rxe: not before RTS (the state modify_qp set).
 */
int vrdma_ring_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vrdma_qp(ibqp);
	struct vrdma_uring *r = &qp->sq;
	uint32_t start;
	int err = 0, kerr;
	size_t len;
	void *slot;

	if (__atomic_load_n(&qp->state, __ATOMIC_RELAXED) < IBV_QPS_RTS) {
		*bad_wr = wr;
		return EINVAL;
	}
	if (ctx_dead(to_vrdma_ctx(ibqp->context))) {
		*bad_wr = wr;
		return EIO;
	}
	pthread_spin_lock(&qp->sq_lock);
	start = r->idx;
	for (; wr; wr = wr->next) {
		err = send_check(qp, wr, &len);
		if (!err && len > r->stride)
			err = EINVAL;
		if (err)
			break;
		slot = ring_next(r, start, &err);
		if (!slot)
			break;
		send_fill(qp, wr, slot, len);
		r->idx++;
	}
	if (r->idx != start) {
		ring_store(r, VIRTIO_RDMA_RING_PROD, r->idx);
		kerr = ring_bell(to_vrdma_ctx(ibqp->context), r, qp_kick, ibqp);
		if (!err)
			err = kerr;	/* all posted; the kick failed */
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * An SRQ whose max_wr MODIFY_SRQ raised past its ring's entries: the
 * device takes WQEs off the ring as the SRQ has room (at the bell, and as
 * messages arrive), so a full ring is given a moment, up to 2 s, what was
 * written published and the bell rung first (as the kernel's SRQ rings).
 */
#define VRDMA_RING_WAIT_US	2000000

static void *ring_wait(struct vrdma_context *ctx, struct vrdma_uring *r,
		       uint32_t *start, int *err, int (*kick)(void *), void *obj)
{
	unsigned int waited = 0;
	void *slot = NULL;

	if (r->idx != *start) {
		ring_store(r, VIRTIO_RDMA_RING_PROD, r->idx);
		*start = r->idx;
	}
	ring_bell(ctx, r, kick, obj);
	while (!slot && *err == ENOMEM && waited < VRDMA_RING_WAIT_US) {
		usleep(50);
		waited += 50;
		*err = 0;
		slot = ring_next(r, *start, err);
	}
	return slot;
}

/* Receive WRs into a QP's or an SRQ's ring: max_sge each; wait: see
 * ring_wait.
 */
static int post_recv_ring(struct vrdma_context *ctx, struct vrdma_uring *r,
			  uint32_t max_sge, bool wait, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr, int (*kick)(void *),
			  void *obj)
{
	struct virtio_rdma_cmd_post_recv *c;
	uint32_t start = r->idx;
	size_t len;
	int i, err = 0;

	if (ctx_dead(ctx)) {
		*bad_wr = wr;
		return EIO;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			err = EINVAL;
			break;
		}
		len = vrdma_recv_wqe_max(wr->num_sge);
		if (len > r->stride) {
			err = EINVAL;
			break;
		}
		c = ring_next(r, start, &err);
		if (!c && wait && err == ENOMEM)
			c = ring_wait(ctx, r, &start, &err, kick, obj);
		if (!c)
			break;
		memset(c, 0, len);
		c->num_sge = htole32(wr->num_sge);
		c->wr_id = htole64(wr->wr_id);
		fill_sges((struct virtio_rdma_sge *)(c + 1), wr->sg_list,
			  wr->num_sge);
		r->idx++;
	}
	if (r->idx != start) {
		ring_store(r, VIRTIO_RDMA_RING_PROD, r->idx);
		i = ring_bell(ctx, r, kick, obj);
		if (!err)
			err = i;	/* all posted; the kick failed */
	}
	if (err)
		*bad_wr = wr;
	return err;
}

static int rq_kick(void *obj)
{
	struct ibv_recv_wr *bad;

	return ibv_cmd_post_recv(obj, NULL, &bad);
}

/* As the kernel: not in RESET (the state modify_qp set). */
int vrdma_ring_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vrdma_qp(ibqp);
	int err;

	if (__atomic_load_n(&qp->state, __ATOMIC_RELAXED) == IBV_QPS_RESET ||
	    !qp->rq.mem) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	err = post_recv_ring(to_vrdma_ctx(ibqp->context), &qp->rq,
			     qp->max_recv_sge, false, wr, bad_wr, rq_kick, ibqp);
	pthread_spin_unlock(&qp->rq_lock);
	return err;
}

static int srq_kick(void *obj)
{
	struct ibv_recv_wr *bad;

	return ibv_cmd_post_srq_recv(obj, NULL, &bad);
}

int vrdma_ring_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	struct vrdma_srq *srq = to_vrdma_srq(ibsrq);
	int err;

	pthread_spin_lock(&srq->lock);
	err = post_recv_ring(to_vrdma_ctx(ibsrq->context), &srq->ring,
			     srq->max_sge,
			     __atomic_load_n(&srq->max_wr, __ATOMIC_RELAXED) >
			     srq->ring.entries, wr, bad_wr, srq_kick, ibsrq);
	pthread_spin_unlock(&srq->lock);
	return err;
}
