// SPDX-License-Identifier: GPL-2.0-only
/*
 * The extended CQ (ibv_create_cq_ex, libibverbs' ibv_create_cq_ex.3): the
 * same CQ as ibv_create_cq's, read one completion at a time through
 * start_poll, next_poll and end_poll. Each step polls one work completion
 * (from the CQ's ring, or through the kernel on ABI v1) into the CQ's cur,
 * and the read_* calls return its fields. From a start_poll that found a
 * completion to end_poll the CQ's poll_lock is held (not for a CQ created
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED), so two threads never read one cur.
 *
 * wc_flags may ask for the standard fields (IBV_WC_STANDARD_FLAGS); the
 * device has no completion clock, VLANs, flow tags or tag matching, and a
 * CQ that ignores overruns is not offered: EOPNOTSUPP.
 */
#include <errno.h>

#include "vrdma.h"

static struct vrdma_cq *ex_to_cq(struct ibv_cq_ex *ex)
{
	return container_of(ex, struct vrdma_cq, vcq.cq_ex);
}

/* One completion into cur: 0, ENOENT (none) or EIO (the device failed). */
static int poll_one(struct vrdma_cq *cq)
{
	int n = vrdma_poll_cq(&cq->vcq.cq, 1, &cq->cur);

	if (n < 0)
		return -n;
	if (!n)
		return ENOENT;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = cq->cur.status;
	return 0;
}

static int cq_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct vrdma_cq *cq = ex_to_cq(ex);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	if (!cq->single_threaded)
		pthread_mutex_lock(&cq->poll_lock);
	ret = poll_one(cq);
	/* no end_poll follows an error (ibv_create_cq_ex.3) */
	if (ret && !cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
	return ret;
}

static int cq_next_poll(struct ibv_cq_ex *ex)
{
	return poll_one(ex_to_cq(ex));
}

static void cq_end_poll(struct ibv_cq_ex *ex)
{
	struct vrdma_cq *cq = ex_to_cq(ex);

	if (!cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
}

/* The read_* calls: a field of the completion being read. The imm field
 * also holds a SEND_WITH_INV's invalidated rkey (the work completion's
 * union), which ibv_wc_read_invalidated_rkey takes as it is. */
#define CQ_READ(name, type, field)					\
	static type cq_read_##name(struct ibv_cq_ex *ex)		\
	{								\
		return ex_to_cq(ex)->cur.field;				\
	}

CQ_READ(opcode, enum ibv_wc_opcode, opcode)
CQ_READ(vendor_err, uint32_t, vendor_err)
CQ_READ(byte_len, uint32_t, byte_len)
CQ_READ(imm_data, __be32, imm_data)
CQ_READ(qp_num, uint32_t, qp_num)
CQ_READ(src_qp, uint32_t, src_qp)
CQ_READ(wc_flags, unsigned int, wc_flags)
CQ_READ(slid, uint32_t, slid)
CQ_READ(sl, uint8_t, sl)
CQ_READ(dlid_path_bits, uint8_t, dlid_path_bits)

struct ibv_cq_ex *vrdma_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	uint32_t flags = attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS ?
			 attr->flags : 0;
	struct ibv_cq_ex *ex;
	struct vrdma_cq *cq;

	if ((attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    (flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = vrdma_cq_create(context, attr->cqe, attr->channel,
			     attr->comp_vector);
	if (!cq)
		return NULL;
	cq->single_threaded = flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	ex = &cq->vcq.cq_ex;
	ex->start_poll = cq_start_poll;
	ex->next_poll = cq_next_poll;
	ex->end_poll = cq_end_poll;
	ex->read_opcode = cq_read_opcode;
	ex->read_vendor_err = cq_read_vendor_err;
	ex->read_wc_flags = cq_read_wc_flags;
	/* the fields wc_flags asked for, as other providers give them */
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = cq_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = cq_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = cq_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = cq_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = cq_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = cq_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = cq_read_dlid_path_bits;
	return ex;
}
