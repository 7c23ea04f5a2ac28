// SPDX-License-Identifier: GPL-2.0-only
/*
 * The work request API of an extended QP (ibv_wr_*, libibverbs'
 * ibv_wr_post.3) for a provider whose every verb is a kernel command: the
 * calls between wr_start and wr_complete build ordinary ibv_send_wr, with
 * their SGEs and inline bytes copied into the QP's own arrays, and
 * wr_complete posts them all at once (ibv_post_send: into the QP's ring,
 * or one POST_SEND through the kernel).
 *
 * The builders and setters return nothing: the first error of a batch is
 * kept, the rest of the batch is ignored, and wr_complete returns it
 * without posting anything. Errors the kernel finds (a QP not in RTS, a
 * full ring) leave the WRs before the failing one posted, as
 * ibv_post_send does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vrdma.h"

/* One WR of the batch. The arrays may move while the batch grows, so it
 * keeps indexes; wr_complete sets its pointers. */
struct vrdma_wr {
	struct ibv_send_wr wr;
	size_t sge;		/* its first SGE in qp->sge */
	size_t inl;		/* its inline bytes in qp->inl */
};

/* The opcodes the device offers (docs/virtio-rdma.md, POST_SEND), by QP
 * type: the atomics on RC when the device has them (atomic_cap); binding a
 * memory window and invalidation only where the QP's send queue is a ring
 * of this program's (ABI v2: the kernel's POST_SEND refuses them). */
static uint64_t vrdma_ops(enum ibv_qp_type type, bool atomics, bool windows)
{
	const uint64_t atomic_ops = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	const uint64_t sends = IBV_QP_EX_WITH_SEND |
			       IBV_QP_EX_WITH_SEND_WITH_IMM;
	const uint64_t writes = IBV_QP_EX_WITH_RDMA_WRITE |
				IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	/* all of them on RC; on UC the bind alone (IETH and LOCAL_INV: RC
	 * only, IBA 9.2.1, 10.7.2.1) */
	const uint64_t ring_ops = windows ? VRDMA_RING_SEND_OPS : 0;

	switch (type) {
	case IBV_QPT_RC:
		return sends | writes | IBV_QP_EX_WITH_RDMA_READ |
		       (atomics ? atomic_ops : 0) | ring_ops;
	case IBV_QPT_UC:
		return sends | writes | (ring_ops & IBV_QP_EX_WITH_BIND_MW);
	case IBV_QPT_UD:
		return sends;
	default:
		return 0;
	}
}

static struct vrdma_qp *qp_of(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct vrdma_qp, vqp.qp_ex);
}

/* arr, an array of *cap items of size bytes, with room for n items: arr
 * itself, or a larger copy (*cap updated), or NULL (arr unchanged). Never
 * NULL on success, even for n = 0. */
static void *vrdma_room(void *arr, size_t *cap, size_t size, size_t n)
{
	size_t c = *cap ? *cap : 16;
	void *p;

	if (arr && n <= *cap)
		return arr;
	while (c < n)
		c *= 2;
	p = realloc(arr, c * size);
	if (p)
		*cap = c;
	return p;
}

/* The builders' common part: the next WR of the batch, or NULL when the
 * batch has failed already (or was not started: nothing to record it in). */
static struct ibv_send_wr *vrdma_wr_new(struct ibv_qp_ex *ibqp,
					enum ibv_wr_opcode opcode,
					uint64_t op)
{
	struct vrdma_qp *qp = qp_of(ibqp);
	struct vrdma_wr *w;

	if (!qp->in_batch || qp->err)
		return NULL;
	/* the opcodes asked for at creation are the contract */
	if (!(qp->send_ops & op)) {
		qp->err = EINVAL;
		return NULL;
	}
	/* more than the send queue holds can never be posted at once */
	if (qp->nwr == qp->max_send_wr) {
		qp->err = ENOMEM;
		return NULL;
	}
	w = vrdma_room(qp->wr, &qp->wr_cap, sizeof(*w), qp->nwr + 1);
	if (!w) {
		qp->err = ENOMEM;
		return NULL;
	}
	qp->wr = w;
	w = &qp->wr[qp->nwr++];
	memset(w, 0, sizeof(*w));
	w->wr.wr_id = ibqp->wr_id;
	w->wr.opcode = opcode;
	/* the data setter says whether the data is inline */
	w->wr.send_flags = ibqp->wr_flags & ~IBV_SEND_INLINE;
	w->sge = qp->nsge;
	w->inl = qp->ninl;
	return &w->wr;
}

/* The RDMA builders' common part. */
static struct ibv_send_wr *vrdma_wr_rdma(struct ibv_qp_ex *ibqp,
					 enum ibv_wr_opcode opcode, uint64_t op,
					 uint32_t rkey, uint64_t remote_addr)
{
	struct ibv_send_wr *wr = vrdma_wr_new(ibqp, opcode, op);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
	}
	return wr;
}

static void vrdma_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t remote_addr)
{
	vrdma_wr_rdma(ibqp, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE, rkey,
		      remote_addr);
}

static void vrdma_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr =
		vrdma_wr_rdma(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM,
			      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, rkey,
			      remote_addr);

	if (wr)
		wr->imm_data = imm_data;
}

static void vrdma_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	vrdma_wr_rdma(ibqp, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ, rkey,
		      remote_addr);
}

/* IBA 9.4.5: 64 bits at remote_addr, the original value into the SGE. */
static void vrdma_wr_atomic(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode,
			    uint64_t op, uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = vrdma_wr_new(ibqp, opcode, op);

	if (wr) {
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.compare_add = compare_add;
		wr->wr.atomic.swap = swap;
		wr->wr.atomic.rkey = rkey;
	}
}

static void vrdma_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	vrdma_wr_atomic(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP,
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			compare, swap);
}

static void vrdma_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	vrdma_wr_atomic(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD,
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
			add, 0);
}

static void vrdma_wr_send(struct ibv_qp_ex *ibqp)
{
	vrdma_wr_new(ibqp, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void vrdma_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct ibv_send_wr *wr = vrdma_wr_new(ibqp, IBV_WR_SEND_WITH_IMM,
					      IBV_QP_EX_WITH_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void vrdma_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = vrdma_wr_new(ibqp, IBV_WR_SEND_WITH_INV,
					      IBV_QP_EX_WITH_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void vrdma_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = vrdma_wr_new(ibqp, IBV_WR_LOCAL_INV,
					      IBV_QP_EX_WITH_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

/* Type 2 windows (IBA 10.6.7.2.2): the bind is a WQE of this send queue;
 * the ring's post checks it as ibv_post_send's IBV_WR_BIND_MW. */
static void vrdma_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = vrdma_wr_new(ibqp, IBV_WR_BIND_MW,
					      IBV_QP_EX_WITH_BIND_MW);

	if (wr) {
		wr->bind_mw.mw = mw;
		wr->bind_mw.rkey = rkey;
		wr->bind_mw.bind_info = *bind_info;
	}
}

/* The setters' WR: the batch's last, or NULL (an error if there is none). */
static struct vrdma_wr *vrdma_wr_last(struct vrdma_qp *qp)
{
	if (!qp->in_batch || qp->err)
		return NULL;
	if (!qp->nwr) {
		qp->err = EINVAL;
		return NULL;
	}
	return &qp->wr[qp->nwr - 1];
}

/* The WR a data setter gives data to. A second setter for the same WR
 * replaces the first: the last WR's data is at the end of the arrays. */
static struct vrdma_wr *vrdma_wr_data(struct vrdma_qp *qp)
{
	struct vrdma_wr *w = vrdma_wr_last(qp);

	if (w && (w->wr.opcode == IBV_WR_BIND_MW ||
		  w->wr.opcode == IBV_WR_LOCAL_INV)) {
		qp->err = EINVAL;	/* they carry no data */
		return NULL;
	}
	if (w) {
		qp->nsge = w->sge;
		qp->ninl = w->inl;
		w->wr.num_sge = 0;
		w->wr.send_flags &= ~IBV_SEND_INLINE;
	}
	return w;
}

/* Room for n more SGEs, or the batch fails. */
static bool vrdma_sge_room(struct vrdma_qp *qp, size_t n)
{
	struct ibv_sge *s = vrdma_room(qp->sge, &qp->sge_cap, sizeof(*s),
				       qp->nsge + n);

	if (!s) {
		qp->err = ENOMEM;
		return false;
	}
	qp->sge = s;
	return true;
}

static void vrdma_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct vrdma_qp *qp = qp_of(ibqp);
	struct vrdma_wr *w = vrdma_wr_data(qp);

	if (!w)
		return;
	if (num_sge > qp->max_send_sge) {
		qp->err = EINVAL;
		return;
	}
	if (!vrdma_sge_room(qp, num_sge))
		return;
	if (num_sge)
		memcpy(&qp->sge[qp->nsge], sg_list, num_sge * sizeof(*sg_list));
	qp->nsge += num_sge;
	w->wr.num_sge = num_sge;
}

static void vrdma_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	vrdma_wr_set_sge_list(ibqp, 1, &sge);
}

/*
 * The bytes are copied now, so the caller may reuse its buffers at once.
 * They go to the kernel as one SGE over the copy: the driver reads a user
 * QP's inline bytes from the SGEs' addresses in this process.
 */
static void vrdma_wr_set_inline_data_list(struct ibv_qp_ex *ibqp,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct vrdma_qp *qp = qp_of(ibqp);
	struct vrdma_wr *w = vrdma_wr_data(qp);
	size_t i, len = 0;
	uint8_t *p;

	if (!w)
		return;
	if (w->wr.opcode == IBV_WR_RDMA_READ ||
	    w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    w->wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		qp->err = EINVAL;	/* inline is for SEND and WRITE */
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline_data - len) {
			qp->err = EINVAL;
			return;
		}
		len += buf_list[i].length;
	}
	if (len && !qp->max_send_sge) {
		qp->err = EINVAL;
		return;
	}
	p = vrdma_room(qp->inl, &qp->inl_cap, 1, qp->ninl + len);
	if (!p) {
		qp->err = ENOMEM;
		return;
	}
	qp->inl = p;
	if (len && !vrdma_sge_room(qp, 1))
		return;
	p += qp->ninl;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length)
			memcpy(p, buf_list[i].addr, buf_list[i].length);
		p += buf_list[i].length;
	}
	if (len) {
		/* addr is set at wr_complete: qp->inl may still move */
		qp->sge[qp->nsge++] = (struct ibv_sge){ .length = len };
		w->wr.num_sge = 1;
	}
	qp->ninl += len;
	w->wr.send_flags |= IBV_SEND_INLINE;
}

static void vrdma_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	vrdma_wr_set_inline_data_list(ibqp, 1, &buf);
}

static void vrdma_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct vrdma_qp *qp = qp_of(ibqp);
	struct vrdma_wr *w = vrdma_wr_last(qp);

	if (!w)
		return;
	if (qp->vqp.qp.qp_type != IBV_QPT_UD || !ah) {
		qp->err = EINVAL;
		return;
	}
	w->wr.wr.ud.ah = ah;
	w->wr.wr.ud.remote_qpn = remote_qpn;
	w->wr.wr.ud.remote_qkey = remote_qkey;
}

static void vrdma_wr_start(struct ibv_qp_ex *ibqp)
{
	struct vrdma_qp *qp = qp_of(ibqp);

	pthread_mutex_lock(&qp->wr_lock);
	qp->in_batch = true;
	qp->err = 0;
	qp->nwr = 0;
	qp->nsge = 0;
	qp->ninl = 0;
}

static void vrdma_wr_end(struct vrdma_qp *qp)
{
	qp->in_batch = false;
	pthread_mutex_unlock(&qp->wr_lock);
}

/* The batch as an ibv_send_wr list, its pointers into the arrays as they
 * are now; 0, or EINVAL for a UD WR without an address. */
static int vrdma_wr_link(struct vrdma_qp *qp)
{
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	size_t i;

	for (i = 0; i < qp->nwr; i++) {
		struct vrdma_wr *w = &qp->wr[i];

		if (ud && !w->wr.wr.ud.ah)
			return EINVAL;
		w->wr.next = i + 1 < qp->nwr ? &qp->wr[i + 1].wr : NULL;
		w->wr.sg_list = w->wr.num_sge ? &qp->sge[w->sge] : NULL;
		if ((w->wr.send_flags & IBV_SEND_INLINE) && w->wr.num_sge)
			w->wr.sg_list->addr = (uintptr_t)(qp->inl + w->inl);
	}
	return 0;
}

static int vrdma_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct vrdma_qp *qp = qp_of(ibqp);
	struct ibv_send_wr *bad;
	int ret;

	if (!qp->in_batch)
		return EINVAL;	/* no wr_start: no lock to give back */
	ret = qp->err;
	if (!ret && qp->nwr) {
		ret = vrdma_wr_link(qp);
		if (!ret)
			ret = ibv_post_send(&qp->vqp.qp, &qp->wr[0].wr, &bad);
	}
	vrdma_wr_end(qp);
	return ret;
}

static void vrdma_wr_abort(struct ibv_qp_ex *ibqp)
{
	struct vrdma_qp *qp = qp_of(ibqp);

	if (qp->in_batch)
		vrdma_wr_end(qp);
}

/*
 * Checks the opcodes asked for (EOPNOTSUPP for one the device does not
 * offer on this QP type) and sets the ops of the ibv_qp_ex. Every builder
 * of the QP type is set, so one not asked for fails its batch (EINVAL)
 * instead of calling through NULL.
 */
int vrdma_wr_init(struct vrdma_qp *qp, enum ibv_qp_type type,
		  uint64_t send_ops, bool atomics, bool windows)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;
	uint64_t ops = vrdma_ops(type, atomics, windows);

	if (!ops || (send_ops & ~ops))
		return EOPNOTSUPP;
	qp->send_ops = send_ops;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE) {
		x->wr_rdma_write = vrdma_wr_rdma_write;
		x->wr_rdma_write_imm = vrdma_wr_rdma_write_imm;
	}
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = vrdma_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) {
		x->wr_atomic_cmp_swp = vrdma_wr_atomic_cmp_swp;
		x->wr_atomic_fetch_add = vrdma_wr_atomic_fetch_add;
	}
	x->wr_send = vrdma_wr_send;
	x->wr_send_imm = vrdma_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = vrdma_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV) {
		x->wr_local_inv = vrdma_wr_local_inv;
		x->wr_send_inv = vrdma_wr_send_inv;
	}
	x->wr_set_ud_addr = vrdma_wr_set_ud_addr;
	x->wr_set_sge = vrdma_wr_set_sge;
	x->wr_set_sge_list = vrdma_wr_set_sge_list;
	x->wr_set_inline_data = vrdma_wr_set_inline_data;
	x->wr_set_inline_data_list = vrdma_wr_set_inline_data_list;
	x->wr_start = vrdma_wr_start;
	x->wr_complete = vrdma_wr_complete;
	x->wr_abort = vrdma_wr_abort;
	return 0;
}

/* What every QP has for the API, extended or not, goes with it. */
void vrdma_wr_fini(struct vrdma_qp *qp)
{
	pthread_mutex_destroy(&qp->wr_lock);
	free(qp->wr);
	free(qp->sge);
	free(qp->inl);
}
