// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the WQE decoders (vdev_parse_send_wqe,
 * vdev_parse_recv_wqe in daemon/device/vdev_wqe.c), `make fuzz`.
 *
 * Input: three control bytes, then the WQE.
 *   byte 0: bits 0-1  QP type: 2 + (bits % 3), so RC, UC or UD
 *           bit 6     a ring's slot (ABI v2): bytes may follow the WQE
 *           bit 7     decode a receive WQE (else a send WQE)
 *   byte 1: max_sge = byte % 33 (0..32, ENG_MAX_SGE)
 *   byte 2: max_inline = byte * 512 / 255 (0..512, ENG_MAX_INLINE)
 *   the rest: the WQE, copied into a malloc'ed buffer of exactly its size,
 *   so ASan sees any overread.
 *
 * For an accepted WQE: num_sge <= max_sge; sg_list is the decoded array;
 * the length is exactly (in a slot: at least) the header, the SGEs and
 * (inline) the inline bytes:
 * send: len == 88 + 16 * num_sge (+ the sum of the SGE lengths, inline),
 * recv: len == 16 + 16 * num_sge. With VIRTIO_IB_SEND_INLINE every SGE is
 * a host pointer inside the buffer, the inline bytes laid out back to back
 * right after the SGEs, their total at most max_inline; RDMA READ and the
 * atomics are never inline; an atomic's wr.atomic is the WQE's, in host order. UD sends carry an address vector for port 1 and a GID index
 * inside the table; other QPs none.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vdev.h"
#include "vdev_test.h"
#include "virtio_rdma.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

_Static_assert(sizeof(struct virtio_rdma_cmd_post_send) == 88, "post_send header");
_Static_assert(sizeof(struct virtio_rdma_cmd_post_recv) == 16, "post_recv header");
_Static_assert(sizeof(struct virtio_rdma_sge) == 16, "sge");

static void check_send(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
		       const struct vdev_send_wqe *w)
{
	const size_t hdr = sizeof(struct virtio_rdma_cmd_post_send);
	const struct eng_send_wr *wr = &w->wr;
	uint64_t inl = 0;
	size_t need;
	unsigned int i;

	CHECK(wr->num_sge <= lim->max_sge && wr->num_sge <= ENG_MAX_SGE);
	CHECK(wr->sg_list == w->sge);
	CHECK((wr->send_flags & ~(unsigned int)(ENG_SEND_FENCE | ENG_SEND_SIGNALED |
						 ENG_SEND_SOLICITED | ENG_SEND_INLINE)) == 0);
	CHECK((uint32_t)wr->opcode <= VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD ||
	      (uint32_t)wr->opcode == VIRTIO_IB_WR_LOCAL_INV ||
	      (uint32_t)wr->opcode == VIRTIO_IB_WR_BIND_MW ||
	      (uint32_t)wr->opcode == VIRTIO_IB_WR_SEND_WITH_INV ||
	      (uint32_t)wr->opcode == VIRTIO_IB_WR_REG_MR);
	need = hdr + 16u * wr->num_sge;
	CHECK(len >= need);
	if (wr->send_flags & ENG_SEND_INLINE) {
		CHECK((uint32_t)wr->opcode < VIRTIO_IB_WR_RDMA_READ);
		for (i = 0; i < wr->num_sge; i++) {
			const uint8_t *p = (const uint8_t *)(uintptr_t)w->sge[i].addr;

			/* Inside the buffer, right after the previous one. */
			CHECK(p == buf + need + inl);
			CHECK(p >= buf && p <= buf + len);
			CHECK(w->sge[i].length <= (size_t)(buf + len - p));
			CHECK(w->sge[i].lkey == 0);
			inl += w->sge[i].length;
		}
		CHECK(inl <= lim->max_inline);
	} else {
		/* The SGEs as the guest wrote them. */
		for (i = 0; i < wr->num_sge; i++) {
			struct virtio_rdma_sge s;

			memcpy(&s, buf + hdr + 16u * i, sizeof(s));
			CHECK(w->sge[i].addr == s.addr);
			CHECK(w->sge[i].length == s.length);
			CHECK(w->sge[i].lkey == s.lkey);
		}
	}
	CHECK(lim->slot ? len >= need + inl : len == need + inl);
	if (lim->qp_type == VIRTIO_IB_QPT_UD) {
		CHECK(wr->ud.ah == &w->ah);
		CHECK(w->ah.port_num == 1);
		CHECK(w->ah.sgid_index < VIRTIO_RDMA_GID_TBL_LEN);
		CHECK(w->ah.flow_label <= 0xfffff && w->ah.sl <= 15);
	} else {
		CHECK(wr->ud.ah == NULL);
	}
	if (lim->qp_type != VIRTIO_IB_QPT_UD &&
	    ((uint32_t)wr->opcode == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ||
	     (uint32_t)wr->opcode == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD)) {
		struct virtio_rdma_cmd_post_send c;

		memcpy(&c, buf, hdr);
		CHECK(wr->atomic.remote_addr == c.wr.atomic.remote_addr);
		CHECK(wr->atomic.compare_add == c.wr.atomic.compare_add);
		CHECK(wr->atomic.swap == c.wr.atomic.swap);
		CHECK(wr->atomic.rkey == c.wr.atomic.rkey);
	}
	if (lim->qp_type != VIRTIO_IB_QPT_UD && (uint32_t)wr->opcode == VIRTIO_IB_WR_REG_MR) {
		struct virtio_rdma_cmd_post_send c;

		memcpy(&c, buf, hdr);
		CHECK(wr->reg.mrn == c.wr.reg.mrn && wr->reg.key == c.wr.reg.key &&
		      wr->reg.access == c.wr.reg.access);
	}
	if (lim->qp_type != VIRTIO_IB_QPT_UD && (uint32_t)wr->opcode == VIRTIO_IB_WR_BIND_MW) {
		struct virtio_rdma_cmd_post_send c;

		memcpy(&c, buf, hdr);
		CHECK(wr->bind.addr == c.wr.bind_mw.addr && wr->bind.length == c.wr.bind_mw.length);
		CHECK(wr->bind.mw_rkey == c.wr.bind_mw.mw_rkey && wr->bind.rkey == c.wr.bind_mw.rkey);
		CHECK(wr->bind.mr_lkey == c.wr.bind_mw.mr_lkey &&
		      wr->bind.access == c.wr.bind_mw.access);
	}
	if ((uint32_t)wr->opcode == VIRTIO_IB_WR_LOCAL_INV ||
	    (uint32_t)wr->opcode == VIRTIO_IB_WR_SEND_WITH_INV) {
		struct virtio_rdma_cmd_post_send c;

		memcpy(&c, buf, hdr);
		CHECK(wr->invalidate_rkey == c.ex.invalidate_rkey);
	}
}

static void check_recv(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
		       const struct vdev_recv_wqe *w)
{
	unsigned int i;

	CHECK(w->wr.num_sge <= lim->max_sge && w->wr.num_sge <= ENG_MAX_SGE);
	CHECK(w->wr.num_sge == 0 || w->wr.sg_list == w->sge);
	CHECK(lim->slot ? len >= 16u + 16u * w->wr.num_sge : len == 16u + 16u * w->wr.num_sge);
	for (i = 0; i < w->wr.num_sge; i++) {
		struct virtio_rdma_sge s;

		memcpy(&s, buf + 16u + 16u * i, sizeof(s));
		CHECK(w->sge[i].addr == s.addr);
		CHECK(w->sge[i].length == s.length);
		CHECK(w->sge[i].lkey == s.lkey);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vdev_send_wqe sw;
	static struct vdev_recv_wqe rw;
	struct vdev_wq_limits lim;
	bool recv;
	uint8_t *buf;
	size_t len;
	int rc;

	if (size < 3)
		return 0;
	lim.qp_type = (uint8_t)(VIRTIO_IB_QPT_RC + (data[0] & 3) % 3);
	recv = data[0] & 0x80;
	lim.slot = data[0] & 0x40;
	lim.max_sge = data[1] % 33;
	lim.max_inline = data[2] * 512u / 255u;
	len = size - 3;
	buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 3, len);

	if (recv) {
		rc = vdev_parse_recv_wqe(buf, len, &lim, &rw);
		CHECK(rc == 0 || rc == -EINVAL || rc == -EOPNOTSUPP);
		if (rc == 0)
			check_recv(buf, len, &lim, &rw);
	} else {
		rc = vdev_parse_send_wqe(buf, len, &lim, &sw);
		CHECK(rc == 0 || rc == -EINVAL || rc == -EOPNOTSUPP);
		if (rc == 0)
			check_send(buf, len, &lim, &sw);
	}
	free(buf);
	return 0;
}
