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
 *   no_gsi        the config offers no QP1 (caps 0), as a vrdmad before it
 *                 (honest too: an older device)
 *   gsi_refused   the config offers QP1, and CREATE_QP of it is answered
 *                 NOMEM (the MAD layer cannot open the port)
 *   ring_taken    ABI v2: a work queue ring's `taken` runs 4096 past what
 *                 the device took (past the guest's `prod`)
 *   ring_written  ABI v2: a CQ ring's `written` runs 4096 past what was
 *                 written (more than a ring ahead of the guest's `cons`)
 *   ring_event    ABI v2: event-queue entries name CQ 0x7fff
 *
 * The lies about objects spare the guest kernel's own, which its MAD layer
 * creates at every probe (the first CQ since the device was reset, and
 * QP1): told at every probe, they would reset the device before any
 * program could meet them.
 * Only built with -DVDEV_LIES (the Makefile's vrdmad-liar).
 */
#ifdef VDEV_LIES
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
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

void vdev_lie_reset(void)
{
	first_qp_set = first_cq_set = false;
	last_qpn = 0;
}

bool vdev_lie_refuse(uint8_t cmd, const uint8_t *req, uint32_t len, uint8_t *status)
{
	struct virtio_rdma_cmd_create_qp cq;

	if (lying("gsi_refused") && cmd == VIRTIO_CMD_CREATE_QP && len >= sizeof(cq)) {
		memcpy(&cq, req, sizeof(cq));
		if (cq.qp_type == VIRTIO_IB_QPT_GSI) {
			*status = VIRTIO_RDMA_ERR_NOMEM;
			return true;
		}
	}
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
		if (lying("slot_range") && le32toh(qp.qpn) != VIRTIO_RDMA_GSI_QPN)
			qp.qp_index = htole32(0x7fff);
		memcpy(rsp, &qp, sizeof(qp));
	} else if (cmd == VIRTIO_CMD_CREATE_SRQ && rsp_len >= sizeof(srq)) {
		memcpy(&srq, rsp, sizeof(srq));
		if (lying("slot_used") && first_qp_set)
			srq.srq_index = htole32(first_qp_slot);
		if (lying("slot_range"))
			srq.srq_index = htole32(0x7fff);
		memcpy(rsp, &srq, sizeof(srq));
	} else if ((cmd == VIRTIO_CMD_CREATE_CQ || cmd == VIRTIO_CMD_CREATE_CQ_RING) &&
		   rsp_len >= sizeof(cq)) {
		memcpy(&cq, rsp, sizeof(cq));
		if (!first_cq_set) {
			first_cq_set = true;
			first_cq = le32toh(cq.cqn);
		} else if (lying("slot_used")) {
			cq.cqn = htole32(first_cq);
		} else if (lying("slot_range")) {
			cq.cqn = htole32(0x7fff);
		}
		memcpy(rsp, &cq, sizeof(cq));
	}
}

bool vdev_lie_mute(uint8_t cmd, const uint8_t *req)
{
	struct virtio_rdma_cmd_req_notify rn;

	if (lying("mute_reg_mr") && cmd == VIRTIO_CMD_REG_USER_MR)
		return true;
	if (!lying("mute_notify") || cmd != VIRTIO_CMD_REQ_NOTIFY_CQ)
		return false;
	memcpy(&rn, req, sizeof(rn));
	return !first_cq_set || le32toh(rn.cqn) != first_cq;
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

bool vdev_lie_empty_cqes(uint32_t cqn)
{
	return lying("cqe_empty") && (!first_cq_set || cqn != first_cq);
}

uint32_t vdev_lie_taken(const struct eng_qp *eng, uint32_t taken)
{
	uint32_t qpn = eng ? eng_qp_num(eng) : 0;

	return lying("ring_taken") && qpn != VIRTIO_RDMA_GSI_QPN ? taken + 4096 : taken;
}

uint32_t vdev_lie_written(uint32_t cqn, uint32_t written)
{
	return lying("ring_written") && first_cq_set && cqn != first_cq ? written + 4096 : written;
}

void vdev_lie_ring_event(struct virtio_rdma_ring_event *ev)
{
	if (lying("ring_event") && first_cq_set && le32toh(ev->cqn) != first_cq)
		ev->cqn = htole32(0x7fff);
}

void vdev_lie_config(struct virtio_rdma_config *c)
{
	if (lying("no_gsi"))
		c->caps = 0;
}
#endif
