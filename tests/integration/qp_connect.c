// SPDX-License-Identifier: GPL-2.0-only
/* qp_connect.h: the QP bring-up vrdma_test and hostile share. */
#include <string.h>

#include "qp_connect.h"

int qp_connect(struct vrdma_qp *qp, uint8_t type, uint32_t dest_qpn, const uint8_t dgid[16],
	       uint32_t sq_psn, uint32_t rq_psn, uint8_t path_mtu, uint8_t rd_atomic, uint32_t qkey)
{
	struct virtio_rdma_qp_attr a;
	uint32_t mask;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT;
	if (type == VIRTIO_IB_QPT_GSI) {	/* as Linux's MAD layer: no port */
		a.qkey = VIRTIO_RDMA_GSI_QKEY;
		mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_QKEY;
	} else if (type == VIRTIO_IB_QPT_UD) {
		a.qkey = qkey;
		mask |= VIRTIO_IB_QP_QKEY;
	} else {
		a.qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE |
				    VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_ATOMIC;
		mask |= VIRTIO_IB_QP_ACCESS_FLAGS;
	}
	ret = vrdma_modify_qp(qp, &a, mask);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTR;
	mask = VIRTIO_IB_QP_STATE;
	if (type != VIRTIO_IB_QPT_UD && type != VIRTIO_IB_QPT_GSI) {
		a.path_mtu = path_mtu;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = rq_psn;
		memcpy(a.ah_attr.grh.dgid, dgid, 16);
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.ah_flags = VIRTIO_IB_AH_GRH;
		mask |= VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN;
		if (type == VIRTIO_IB_QPT_RC) {
			a.max_dest_rd_atomic = rd_atomic;
			a.min_rnr_timer = 12;
			mask |= VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER;
		}
	}
	ret = vrdma_modify_qp(qp, &a, mask);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN;
	if (type == VIRTIO_IB_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = rd_atomic;
		mask |= VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
	}
	return vrdma_modify_qp(qp, &a, mask);
}
