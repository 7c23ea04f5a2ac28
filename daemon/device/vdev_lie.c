// SPDX-License-Identifier: GPL-2.0-only
/*
 * The lies of vrdmad-liar (vdev_lie.h): what a broken or hostile device
 * could tell the guest driver. VRDMAD_LIE names one:
 *
 *   destroy_busy  every DESTROY_*, DEREG_MR and DEALLOC_MW answered BUSY, not run
 *   slot_used     CREATE_QP and CREATE_CQ name the first slot ever given
 *                 (in use by then), CREATE_SRQ the first QP slot
 *   slot_range    CREATE_QP, CREATE_SRQ and CREATE_CQ name a slot past the last
 *   cqe_qp        every CQE names the QP created last (on another CQ)
 *   cqe_empty     CQ buffers go back with used length 0, endlessly
 *   mute_reg_mr   REG_USER_MR registers the MR and never answers
 *   mute_notify   REQ_NOTIFY_CQ arms the CQ and never answers (a kernel CQ's
 *                 driver spins for that answer)
 *   slow_ctrl     one control command answered per millisecond, so that a
 *                 guest's threads fill the control queue (honest, just slow)
 *
 * Only built with -DVDEV_LIES (the Makefile's vrdmad-liar).
 */
#ifdef VDEV_LIES
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vdev_lie.h"

static const char *lie(void)
{
	const char *l = getenv("VRDMAD_LIE");

	return l ? l : "";
}

static bool lying(const char *name)
{
	return !strcmp(lie(), name);
}

static bool first_qp_set, first_cq_set;
static uint32_t first_qp_slot, first_cq, last_qpn;

bool vdev_lie_refuse(uint8_t cmd, uint8_t *status)
{
	if (lying("destroy_busy") &&
	    (cmd == VIRTIO_CMD_DESTROY_QP || cmd == VIRTIO_CMD_DESTROY_CQ ||
	     cmd == VIRTIO_CMD_DESTROY_SRQ || cmd == VIRTIO_CMD_DESTROY_PD ||
	     cmd == VIRTIO_CMD_DEREG_MR || cmd == VIRTIO_CMD_DEALLOC_MW)) {
		*status = VIRTIO_RDMA_ERR_BUSY;
		return true;
	}
	return false;
}

void vdev_lie_answer(uint8_t cmd, uint8_t status, uint8_t *rsp, uint32_t rsp_len)
{
	struct virtio_rdma_rsp_create_qp qp;
	struct virtio_rdma_rsp_create_srq srq;
	struct virtio_rdma_rsp_create_cq cq;

	if (status)
		return;
	if (cmd == VIRTIO_CMD_CREATE_QP && rsp_len >= sizeof(qp)) {
		memcpy(&qp, rsp, sizeof(qp));
		last_qpn = le32toh(qp.qpn);
		if (!first_qp_set) {
			first_qp_set = true;
			first_qp_slot = le32toh(qp.qp_index);
		} else if (lying("slot_used")) {
			qp.qp_index = htole32(first_qp_slot);
		}
		if (lying("slot_range"))
			qp.qp_index = htole32(0x7fff);
		memcpy(rsp, &qp, sizeof(qp));
	} else if (cmd == VIRTIO_CMD_CREATE_SRQ && rsp_len >= sizeof(srq)) {
		memcpy(&srq, rsp, sizeof(srq));
		if (lying("slot_used") && first_qp_set)
			srq.srq_index = htole32(first_qp_slot);
		if (lying("slot_range"))
			srq.srq_index = htole32(0x7fff);
		memcpy(rsp, &srq, sizeof(srq));
	} else if (cmd == VIRTIO_CMD_CREATE_CQ && rsp_len >= sizeof(cq)) {
		memcpy(&cq, rsp, sizeof(cq));
		if (!first_cq_set) {
			first_cq_set = true;
			first_cq = le32toh(cq.cqn);
		} else if (lying("slot_used")) {
			cq.cqn = htole32(first_cq);
		}
		if (lying("slot_range"))
			cq.cqn = htole32(0x7fff);
		memcpy(rsp, &cq, sizeof(cq));
	}
}

bool vdev_lie_mute(uint8_t cmd)
{
	return (lying("mute_reg_mr") && cmd == VIRTIO_CMD_REG_USER_MR) ||
	       (lying("mute_notify") && cmd == VIRTIO_CMD_REQ_NOTIFY_CQ);
}

bool vdev_lie_slow_ctrl(void)
{
	struct timespec ms = { .tv_nsec = 1000000 };

	if (!lying("slow_ctrl"))
		return false;
	nanosleep(&ms, NULL);
	return true;
}

void vdev_lie_cqe(struct virtio_rdma_cqe *c)
{
	if (lying("cqe_qp") && last_qpn)
		c->qp_num = htole32(last_qpn);
}

bool vdev_lie_empty_cqes(void)
{
	return lying("cqe_empty");
}
#endif
