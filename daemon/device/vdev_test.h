/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The device's entry points below vdev.h that the fuzzers drive directly
 * (fuzz_wqe, fuzz_ctrl, fuzz_state); the daemon reaches them only through
 * vdev_poll(). The device's own files use them through vdev_int.h.
 */
#ifndef VRDMAD_VDEV_TEST_H
#define VRDMAD_VDEV_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "vdev.h"

/* A WQE's limits, from its QP. */
struct vdev_wq_limits {
	uint8_t qp_type;		/* VIRTIO_IB_QPT_* */
	uint32_t max_sge, max_inline;
	bool slot;			/* a ring's slot: bytes may follow the WQE */
};

/* A send WQE decoded (sg_list/ud.ah point inside it, inline data into the
 * buffer it came from). */
struct vdev_send_wqe {
	struct eng_send_wr wr;
	struct eng_sge sge[ENG_MAX_SGE];
	struct eng_ah_attr ah;
};

struct vdev_recv_wqe {
	struct eng_recv_wr wr;
	struct eng_sge sge[ENG_MAX_SGE];
};

/* Decode one WQE (a stable copy of the guest's bytes). 0, or -EINVAL for a
 * malformed one, -EOPNOTSUPP for an opcode or flag not offered. */
int vdev_parse_send_wqe(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
			struct vdev_send_wqe *out);
int vdev_parse_recv_wqe(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
			struct vdev_recv_wqe *out);

/* Execute one control command (the bytes after the command byte) into rsp;
 * returns the status byte, *rsp_len the response length when OK. */
uint8_t vdev_ctrl_exec(struct vdev *v, uint8_t cmd, const uint8_t *req, size_t req_len,
		       uint8_t *rsp, size_t rsp_cap, uint32_t *rsp_len);

#endif
