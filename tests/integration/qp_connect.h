/* SPDX-License-Identifier: GPL-2.0-only */
/* The QP bring-up of the libvrdma test programs (vrdma_test, hostile). */
#ifndef TESTS_QP_CONNECT_H
#define TESTS_QP_CONNECT_H

#include <stdint.h>

#include "libvrdma.h"

/* RESET -> INIT -> RTR -> RTS with the attributes and masks of
 * ibv_rc_pingpong (and ibv_uc_pingpong, ibv_ud_pingpong): every access
 * right, port 1, GID index 0, hop limit 1; for RC, timeout 14, retry_cnt
 * and rnr_retry 7 and rd_atomic READs and atomics each way; for UD, qkey
 * (dgid unused); GSI (QP1) as Linux's MAD layer: no port, QP1's Q_Key. */
int qp_connect(struct vrdma_qp *qp, uint8_t type, uint32_t dest_qpn, const uint8_t dgid[16],
	       uint32_t sq_psn, uint32_t rq_psn, uint8_t path_mtu, uint8_t rd_atomic, uint32_t qkey);

#endif
