// SPDX-License-Identifier: GPL-2.0-only
/*
 * WQE decoding: a stable copy of the guest's bytes into the engine's work
 * requests, checked against the QP's limits (also the fuzz target).
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "vdev_int.h"

static void parse_sges(const uint8_t *p, uint32_t n, struct eng_sge *sge)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct virtio_rdma_sge s;

		memcpy(&s, p + i * sizeof(s), sizeof(s));
		sge[i].addr = le64toh(s.addr);
		sge[i].length = le32toh(s.length);
		sge[i].lkey = le32toh(s.lkey);
	}
}

int vdev_parse_send_wqe(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
			struct vdev_send_wqe *out)
{
	const size_t hdr = sizeof(struct virtio_rdma_cmd_post_send);
	struct virtio_rdma_cmd_post_send c;
	uint32_t n, flags, op, i;
	uint64_t inl = 0;
	size_t need;

	memset(out, 0, sizeof(*out));
	if (len < hdr)
		return -EINVAL;
	memcpy(&c, buf, hdr);
	n = le32toh(c.num_sge);
	flags = le32toh(c.send_flags);
	op = le32toh(c.opcode);
	out->wr.wr_id = le64toh(c.wr_id);
	if (n > lim->max_sge || n > ENG_MAX_SGE)
		return -EINVAL;
	if (flags & ~(VIRTIO_IB_SEND_FENCE | VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_SOLICITED |
		      VIRTIO_IB_SEND_INLINE))
		return -EOPNOTSUPP;
	if (op > VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD && op != VIRTIO_IB_WR_LOCAL_INV &&
	    op != VIRTIO_IB_WR_BIND_MW && op != VIRTIO_IB_WR_SEND_WITH_INV &&
	    op != VIRTIO_IB_WR_REG_MR)
		return -EOPNOTSUPP;
	need = hdr + n * sizeof(struct virtio_rdma_sge);
	if (len < need)
		return -EINVAL;
	parse_sges(buf + hdr, n, out->sge);
	if (flags & VIRTIO_IB_SEND_INLINE) {
		if (op >= VIRTIO_IB_WR_RDMA_READ)	/* READ and atomics: data comes back */
			return -EINVAL;
		for (i = 0; i < n; i++)
			inl += out->sge[i].length;
		if (inl > lim->max_inline)
			return -EINVAL;
		/* The inline bytes follow the SGEs; addr becomes a host pointer. */
		for (i = 0, inl = 0; i < n; i++) {
			out->sge[i].addr = (uint64_t)(uintptr_t)(buf + need + inl);
			out->sge[i].lkey = 0;
			inl += out->sge[i].length;
		}
		need += inl;
	}
	if (lim->slot ? len < need : len != need)
		return -EINVAL;
	out->wr.opcode = (enum eng_wr_opcode)op;
	out->wr.send_flags = flags;
	out->wr.imm_data = c.ex.imm_data;	/* network byte order both sides */
	out->wr.sg_list = out->sge;
	out->wr.num_sge = n;
	if (lim->qp_type == VIRTIO_IB_QPT_UD || lim->qp_type == VIRTIO_IB_QPT_GSI) {
		const struct virtio_rdma_av *av = &c.wr.ud.av;
		uint32_t stf = le32toh(av->sl_tclass_flowlabel);

		if (le32toh(av->port) != 1 || av->gid_index >= VIRTIO_RDMA_GID_TBL_LEN)
			return -EINVAL;
		memcpy(out->ah.dgid, av->dgid, 16);
		out->ah.flow_label = stf & 0xfffff;
		out->ah.traffic_class = (stf >> 20) & 0xff;
		out->ah.sl = stf >> 28;
		out->ah.sgid_index = av->gid_index;
		out->ah.hop_limit = av->hop_limit;
		out->ah.port_num = 1;
		memcpy(out->ah.dmac, av->dmac, 6);
		out->wr.ud.ah = &out->ah;
		out->wr.ud.remote_qpn = le32toh(c.wr.ud.remote_qpn);
		out->wr.ud.remote_qkey = le32toh(c.wr.ud.remote_qkey);
	} else if (op == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP || op == VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD) {
		/* the engine checks the rest: RC only, 8 bytes of SGE, no inline */
		out->wr.atomic.remote_addr = le64toh(c.wr.atomic.remote_addr);
		out->wr.atomic.compare_add = le64toh(c.wr.atomic.compare_add);
		out->wr.atomic.swap = le64toh(c.wr.atomic.swap);
		out->wr.atomic.rkey = le32toh(c.wr.atomic.rkey);
	} else if (op == VIRTIO_IB_WR_REG_MR) {	/* IBA 10.6.3.6 */
		out->wr.reg.mrn = le32toh(c.wr.reg.mrn);
		out->wr.reg.key = le32toh(c.wr.reg.key);
		out->wr.reg.access = le32toh(c.wr.reg.access);
	} else if (op == VIRTIO_IB_WR_BIND_MW) {	/* IBA 10.6.7.2 */
		out->wr.bind.addr = le64toh(c.wr.bind_mw.addr);
		out->wr.bind.length = le64toh(c.wr.bind_mw.length);
		out->wr.bind.mw_rkey = le32toh(c.wr.bind_mw.mw_rkey);
		out->wr.bind.rkey = le32toh(c.wr.bind_mw.rkey);
		out->wr.bind.mr_lkey = le32toh(c.wr.bind_mw.mr_lkey);
		out->wr.bind.access = le32toh(c.wr.bind_mw.access);
	} else {
		out->wr.rdma.remote_addr = le64toh(c.wr.rdma.remote_addr);
		out->wr.rdma.rkey = le32toh(c.wr.rdma.rkey);
	}
	if (op == VIRTIO_IB_WR_LOCAL_INV || op == VIRTIO_IB_WR_SEND_WITH_INV)
		out->wr.invalidate_rkey = le32toh(c.ex.invalidate_rkey);
	return 0;
}

int vdev_parse_recv_wqe(const uint8_t *buf, size_t len, const struct vdev_wq_limits *lim,
			struct vdev_recv_wqe *out)
{
	const size_t hdr = sizeof(struct virtio_rdma_cmd_post_recv);
	struct virtio_rdma_cmd_post_recv c;
	uint32_t n;

	memset(out, 0, sizeof(*out));
	if (len < hdr)
		return -EINVAL;
	memcpy(&c, buf, hdr);
	n = le32toh(c.num_sge);
	out->wr.wr_id = le64toh(c.wr_id);
	if (n > lim->max_sge || n > ENG_MAX_SGE || len < hdr + n * sizeof(struct virtio_rdma_sge) ||
	    (!lim->slot && len != hdr + n * sizeof(struct virtio_rdma_sge)))
		return -EINVAL;
	parse_sges(buf + hdr, n, out->sge);
	out->wr.sg_list = out->sge;
	out->wr.num_sge = n;
	return 0;
}

uint64_t vdev_wqe_wr_id(const uint8_t *buf, int64_t len, bool recv)
{
	uint64_t id = 0;
	size_t off = recv ? offsetof(struct virtio_rdma_cmd_post_recv, wr_id) :
			    offsetof(struct virtio_rdma_cmd_post_send, wr_id);

	if (len >= (int64_t)(off + 8))
		memcpy(&id, buf + off, 8);
	return le64toh(id);
}
