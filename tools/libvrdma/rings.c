// SPDX-License-Identifier: GPL-2.0-only
/*
 * ABI v2 in libvrdma (docs/virtio-rdma.md section 8), the host's stand-in
 * for the guest's provider: with VRDMA_RINGS=1 the CQs, QPs and SRQs are rings
 * in our memory. A post writes the WQE into its slot, then prod, then sets
 * the queue's bit on our doorbell page, and kicks the wake queue only if
 * the device said it sleeps (need_wake); a poll reads CQEs up to what the
 * device wrote and says how far it consumed. No control message, no
 * virtqueue and no system call on the way, unless the worker sleeps. An
 * arm is a word and a bit; the device's events come on the event queue,
 * whose one eventfd serves every CQ of the context.
 */
#include <endian.h>
#include <sched.h>

#include "internal.h"

#define RING_EVENTS	64u	/* event queue buffers */

int rings_open(struct vrdma_ctx *ctx)
{
	struct virtio_rdma_cmd_add_db_page req;
	struct virtio_rdma_rsp_add_db_page rsp;
	unsigned int i;
	int ret;

	ctx->db = shm_alloc(ctx, SHM_PAGE);
	if (!ctx->db)
		return -ENOMEM;
	memset(ctx->db, 0, SHM_PAGE);
	req.gpa = htole64(vrdma_gpa(ctx, ctx->db));
	ret = ctrl_cmd(ctx, VIRTIO_CMD_ADD_DB_PAGE, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		return ret;
	ctx->dbn = le32toh(rsp.dbn);
	/* no buffers: only its kick matters */
	ret = vring_setup(ctx, &ctx->wake, VIRTIO_RDMA_WAKE_VQ, 1, VRING_AVAIL_F_NO_INTERRUPT);
	if (ret)
		return ret;
	/* the event queue, kept full of buffers */
	ctx->ev_bufs = shm_alloc(ctx, RING_EVENTS * sizeof(*ctx->ev_bufs));
	if (!ctx->ev_bufs)
		return -ENOMEM;
	ret = vring_setup(ctx, &ctx->event, VIRTIO_RDMA_EVENT_VQ, RING_EVENTS, 0);
	for (i = 0; !ret && i < RING_EVENTS; i++) {
		ctx->event.desc[i] = (struct vring_desc){
			.addr = vrdma_gpa(ctx, &ctx->ev_bufs[i]),
			.len = sizeof(ctx->ev_bufs[i]),
			.flags = VRING_DESC_F_WRITE,
		};
		vring_push(&ctx->event, i);
	}
	if (!ret)
		vring_publish(&ctx->event);
	return ret;
}

static uint32_t pow2_at_least(uint32_t n, uint32_t min)
{
	uint32_t p = min;

	while (p < n)
		p <<= 1;
	return p;
}

/* The shared memory a ring of entries slots of stride bytes takes, and
 * its page list while the command that names it runs. */
static size_t uring_bytes(uint32_t entries, uint32_t stride)
{
	size_t len = (stride > VIRTIO_RDMA_RING_HDR_MIN ? stride : VIRTIO_RDMA_RING_HDR_MIN) +
		     (size_t)entries * stride;

	return vrdma_mem_buf(len) + vrdma_mem_buf((len + SHM_PAGE - 1) / SHM_PAGE * 8);
}

size_t ring_mem_ctx(void)
{
	return vrdma_mem_buf(SHM_PAGE) + vrdma_mem_buf(vring_bytes(1)) +
	       vrdma_mem_buf(RING_EVENTS * sizeof(struct virtio_rdma_ring_event)) +
	       vrdma_mem_buf(vring_bytes(RING_EVENTS));
}

size_t ring_mem_cq(uint32_t cqe)
{
	return uring_bytes(pow2_at_least(cqe, 1), 64);
}

size_t ring_mem_qp(uint32_t max_send_wr, uint32_t max_recv_wr, size_t send_slot,
		   size_t recv_slot)
{
	return uring_bytes(pow2_at_least(max_send_wr, 1), pow2_at_least((uint32_t)send_slot, 64)) +
	       uring_bytes(pow2_at_least(max_recv_wr, 1), pow2_at_least((uint32_t)recv_slot, 64));
}

/* A free bit of our doorbell page (a destroyed queue's comes back), or
 * -ENOSPC. */
static int bit_alloc(struct vrdma_ctx *ctx)
{
	uint32_t n, b;

	for (n = 0; n < VIRTIO_RDMA_DB_BITS; n++) {
		b = (ctx->next_bit + n) % VIRTIO_RDMA_DB_BITS;
		if (!(ctx->bits_used[b / 64] & (1ull << (b % 64)))) {
			ctx->bits_used[b / 64] |= 1ull << (b % 64);
			ctx->next_bit = b + 1;
			return (int)b;
		}
	}
	return -ENOSPC;
}

/* A ring of entries slots of stride bytes, zeroed, with a doorbell bit. */
static int uring_alloc(struct vrdma_ctx *ctx, struct uring *r, uint32_t entries, uint32_t stride)
{
	int bit = bit_alloc(ctx);
	size_t len;

	if (bit < 0)
		return bit;
	r->entries = entries;
	r->stride = stride;
	r->hdr = stride > VIRTIO_RDMA_RING_HDR_MIN ? stride : VIRTIO_RDMA_RING_HDR_MIN;
	len = r->hdr + (size_t)entries * stride;
	r->mem = shm_alloc(ctx, len);
	if (!r->mem) {
		ctx->bits_used[bit / 64] &= ~(1ull << (bit % 64));
		return -ENOMEM;
	}
	memset(r->mem, 0, len);
	r->bit = (uint32_t)bit;
	r->idx = 0;
	return 0;
}

void uring_free(struct vrdma_ctx *ctx, struct uring *r)
{
	if (r->mem)	/* its bit is free again: the device let go of it */
		ctx->bits_used[r->bit / 64] &= ~(1ull << (r->bit % 64));
	shm_free(ctx, r->mem);
	r->mem = NULL;
}

/* The ring's page list, in our memory for the command to name; the
 * caller frees it after. */
static uint64_t *uring_pages(struct vrdma_ctx *ctx, const struct uring *r, uint32_t *npages)
{
	size_t len = r->hdr + (size_t)r->entries * r->stride;
	uint64_t *list;
	uint32_t i;

	*npages = (uint32_t)((len + SHM_PAGE - 1) / SHM_PAGE);
	list = shm_alloc(ctx, *npages * sizeof(*list));
	for (i = 0; list && i < *npages; i++)
		list[i] = htole64(vrdma_gpa(ctx, r->mem + (size_t)i * SHM_PAGE));
	return list;
}

static uint32_t *word(const struct uring *r, uint32_t off)
{
	return (uint32_t *)(r->mem + off);
}

int ring_create_cq(struct vrdma_ctx *ctx, struct vrdma_cq *cq, uint32_t cqe)
{
	struct virtio_rdma_cmd_create_cq_ring req = { 0 };
	struct virtio_rdma_rsp_create_cq rsp;
	uint32_t npages;
	uint64_t *list;
	int ret;

	if (!cqe || cqe > 32768)
		return -EINVAL;
	ret = uring_alloc(ctx, &cq->ring, pow2_at_least(cqe, 1), 64);
	if (ret)
		return ret;
	list = uring_pages(ctx, &cq->ring, &npages);
	if (!list) {
		uring_free(ctx, &cq->ring);
		return -ENOMEM;
	}
	req.entries = htole32(cq->ring.entries);
	req.dbn = htole32(ctx->dbn);
	req.db_bit = htole32(cq->ring.bit);
	req.npages = htole32(npages);
	req.pages = htole64(vrdma_gpa(ctx, list));
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_CQ_RING, &req, sizeof(req), &rsp, sizeof(rsp));
	shm_free(ctx, list);	/* the device copied it */
	if (ret) {
		uring_free(ctx, &cq->ring);
		return ret;
	}
	cq->cqn = le32toh(rsp.cqn);
	return 0;
}

static int wq_ring_desc(struct vrdma_ctx *ctx, struct uring *r, uint32_t max_wr, size_t slot,
			struct virtio_rdma_ring_desc *d, uint64_t **list)
{
	uint32_t npages;
	int ret;

	if (slot > 4096)
		return -EINVAL;
	ret = uring_alloc(ctx, r, pow2_at_least(max_wr, 1), pow2_at_least((uint32_t)slot, 64));
	if (ret)
		return ret;
	*list = uring_pages(ctx, r, &npages);
	if (!*list)
		return -ENOMEM;
	*d = (struct virtio_rdma_ring_desc){
		htole32(r->entries), htole32(r->stride), htole32(r->bit), htole32(npages),
		htole64(vrdma_gpa(ctx, *list)),
	};
	return 0;
}

int ring_create_qp(struct vrdma_ctx *ctx, struct vrdma_qp *qp,
		   const struct virtio_rdma_cmd_create_qp *qreq, uint32_t max_send_wr,
		   uint32_t max_recv_wr, size_t send_slot, size_t recv_slot, uint32_t *k)
{
	struct virtio_rdma_cmd_create_qp_ring req = { .qp = *qreq };
	struct virtio_rdma_rsp_create_qp rsp;
	uint64_t *sl = NULL, *rl = NULL;
	int ret;

	req.dbn = htole32(ctx->dbn);
	ret = wq_ring_desc(ctx, &qp->sq.ring, max_send_wr, send_slot, &req.sq, &sl);
	/* on an SRQ its receives come from the SRQ's ring: none of its own */
	if (!ret && !(qreq->flags & VIRTIO_RDMA_CREATE_QP_SRQ))
		ret = wq_ring_desc(ctx, &qp->rq.ring, max_recv_wr, recv_slot, &req.rq, &rl);
	if (!ret)
		ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_QP_RING, &req, sizeof(req), &rsp,
			       sizeof(rsp));
	shm_free(ctx, sl);
	shm_free(ctx, rl);
	if (ret) {
		uring_free(ctx, &qp->sq.ring);
		uring_free(ctx, &qp->rq.ring);
		return ret;
	}
	qp->qpn = rsp.qpn;
	*k = rsp.qp_index;
	return 0;
}

int ring_create_srq(struct vrdma_ctx *ctx, struct vrdma_srq *srq,
		    const struct virtio_rdma_cmd_create_srq *sreq, size_t slot)
{
	struct virtio_rdma_cmd_create_srq_ring req = { .srq = *sreq };
	struct virtio_rdma_rsp_create_srq rsp;
	uint64_t *list = NULL;
	int ret;

	req.dbn = htole32(ctx->dbn);
	ret = wq_ring_desc(ctx, &srq->rq.ring, sreq->max_wr, slot, &req.ring, &list);
	if (!ret)
		ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_SRQ_RING, &req, sizeof(req), &rsp,
			       sizeof(rsp));
	shm_free(ctx, list);
	if (ret) {
		uring_free(ctx, &srq->rq.ring);
		return ret;
	}
	srq->srqn = rsp.srqn;
	return 0;
}

int ring_poll_cq(struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc)
{
	struct uring *r = &cq->ring;
	uint32_t written = le32toh(__atomic_load_n(word(r, VIRTIO_RDMA_RING_WRITTEN),
						   __ATOMIC_ACQUIRE));
	int got = 0;

	while (got < n && r->idx != written) {
		memcpy(&wc[got++], r->mem + r->hdr + (size_t)(r->idx % r->entries) * r->stride,
		       sizeof(*wc));
		r->idx++;
	}
	if (got)	/* the slots are free again */
		__atomic_store_n(word(r, VIRTIO_RDMA_RING_CONS), htole32(r->idx), __ATOMIC_RELEASE);
	else if (cq->ctx->poll_yield)
		sched_yield();	/* the daemon that will write it may want this core */
	return got;
}

int uring_get(struct wq *wq, size_t len, uint8_t **buf)
{
	struct uring *r = &wq->ring;
	uint32_t taken = le32toh(__atomic_load_n(word(r, VIRTIO_RDMA_RING_TAKEN),
						 __ATOMIC_ACQUIRE));

	if (len > r->stride)
		return -EINVAL;
	if (r->idx - taken >= r->entries)
		return -ENOMEM;		/* the device has not taken them yet */
	*buf = r->mem + r->hdr + (size_t)(r->idx % r->entries) * r->stride;
	return 0;
}

/* A ring's doorbell bit, then a kick if the device sleeps: once per
 * need_wake number (the device clears it before it looks at the bits again
 * on waking, so a post that finds the number kicked for already is seen). */
static void ring_bell(struct vrdma_ctx *ctx, uint32_t bit)
{
	uint64_t *bits = (uint64_t *)(ctx->db + VIRTIO_RDMA_DB_BITS_OFF) + bit / 64;
	uint64_t one = 1;
	uint32_t n;

	/* the bit, then need_wake (the device: need_wake, then the bits) */
	__atomic_fetch_or(bits, htole64(1ull << (bit % 64)), __ATOMIC_SEQ_CST);
	n = le32toh(__atomic_load_n((uint32_t *)(ctx->db + VIRTIO_RDMA_DB_NEED_WAKE),
				    __ATOMIC_SEQ_CST));
	if (!n || n == __atomic_load_n(&ctx->kicked, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&ctx->kicked, n, __ATOMIC_RELAXED);
	if (write(ctx->wake.kick_fd, &one, sizeof(one)) < 0)
		conn_lost(ctx, -errno);
}

void uring_post(struct vrdma_ctx *ctx, struct wq *wq)
{
	struct uring *r = &wq->ring;

	r->idx++;
	__atomic_store_n(word(r, VIRTIO_RDMA_RING_PROD), htole32(r->idx), __ATOMIC_RELEASE);
	ring_bell(ctx, r->bit);
}

int ring_req_notify_cq(struct vrdma_cq *cq, bool solicited_only)
{
	uint32_t flags = solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED :
					  VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;

	/* a new seq is a new request; 0 means never armed */
	cq->arm_seq = (cq->arm_seq + 1) & (VIRTIO_RDMA_RING_ARMED_FIRED - 1) >> 2;
	if (!cq->arm_seq)
		cq->arm_seq = 1;
	__atomic_store_n(word(&cq->ring, VIRTIO_RDMA_RING_ARM), htole32(cq->arm_seq << 2 | flags),
			 __ATOMIC_RELEASE);
	ring_bell(cq->ctx, cq->ring.bit);
	return 0;
}

/* The events the device wrote: each marks its CQ; buffers go back. */
static int take_events(struct vrdma_ctx *ctx)
{
	struct vring *vq = &ctx->event;
	bool reposted = false;
	uint32_t id, len;
	struct link *l;
	int r;

	while ((r = vring_peek_used(vq, &id, &len)) > 0) {
		vq->last_used++;
		if (id >= vq->num || len != sizeof(ctx->ev_bufs[0]))
			return conn_lost(ctx, -EIO);
		for (l = ctx->cqs.next; l != &ctx->cqs; l = l->next) {
			struct vrdma_cq *cq = container_of(l, struct vrdma_cq, link);

			if (cq->cqn == le32toh(ctx->ev_bufs[id].cqn))
				cq->event_seen = true;
		}
		vring_push(vq, id);
		reposted = true;
	}
	if (reposted)
		vring_publish(vq);
	return r;
}

int ring_cq_wait(struct vrdma_cq *cq, int64_t deadline)
{
	for (;;) {
		int r = take_events(cq->ctx);

		if (r < 0)
			return r;
		if (cq->event_seen) {
			cq->event_seen = false;
			return 1;
		}
		r = wait_eventfd(cq->ctx, cq->ctx->event.call_fd, deadline);
		if (r <= 0)
			return r;
	}
}
