// SPDX-License-Identifier: GPL-2.0-only
/* Device and port queries, GIDs, user contexts, PDs and address handles. */
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "vrdma.h"

int vrdma_query_device(struct ib_device *ib, struct ib_device_attr *attr,
		       struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ib);
	const struct virtio_rdma_config *c = &dev->cfg;

	if (udata->inlen || udata->outlen)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->sys_image_guid = c->sys_image_guid;	/* network order as is */
	attr->max_mr_size = c->max_mr_size;
	attr->page_size_cap = c->page_size_cap;
	attr->vendor_id = c->vendor_id;
	attr->vendor_part_id = c->vendor_part_id;
	attr->hw_ver = c->hw_ver;
	attr->max_qp = c->max_qp;
	attr->max_qp_wr = c->max_qp_wr;
	/* Flags the guest can use. Memory windows only on rings, where a
	 * program binds one with a WQE in its own send ring: uverbs'
	 * post_send refuses BIND_MW before a driver sees it (docs/guest.md).
	 */
	attr->device_cap_flags = c->device_cap_flags &
				 (VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN |
				  VIRTIO_RDMA_DEV_SRQ_RESIZE |
				  VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS |
				  (dev->rings ? VIRTIO_RDMA_DEV_MEM_WINDOW |
				   VIRTIO_RDMA_DEV_MEM_WINDOW_TYPE_2B : 0));
	attr->max_fast_reg_page_list_len = c->max_fast_reg_page_list_len;
	attr->max_send_sge = c->max_send_sge;
	attr->max_recv_sge = c->max_recv_sge;
	attr->max_sge_rd = c->max_sge_rd;
	attr->max_cq = c->max_cq;
	attr->max_cqe = c->max_cqe;
	attr->max_mr = c->max_mr;
	attr->max_mw = dev->rings ? c->max_mw : 0;
	attr->max_pd = c->max_pd;
	attr->max_qp_rd_atom = c->max_qp_rd_atom;
	attr->max_res_rd_atom = c->max_res_rd_atom;
	attr->max_qp_init_rd_atom = c->max_qp_init_rd_atom;
	attr->atomic_cap = c->atomic_cap <= VIRTIO_IB_ATOMIC_GLOB ?
			   c->atomic_cap : IB_ATOMIC_NONE;
	attr->max_ah = c->max_ah;
	attr->max_srq = c->max_srq;
	attr->max_srq_wr = c->max_srq_wr;
	attr->max_srq_sge = c->max_srq_sge;
	attr->max_pkeys = c->max_pkeys;
	attr->local_ca_ack_delay = c->local_ca_ack_delay;
	return 0;
}

int vrdma_query_port(struct ib_device *ib, u32 port, struct ib_port_attr *attr)
{
	struct virtio_rdma_cmd_query_port req = { .port = port };
	struct virtio_rdma_rsp_query_port rsp;
	int err;

	err = vrdma_cmd(to_vdev(ib), VIRTIO_CMD_QUERY_PORT, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err)
		return err;
	/* The IB core takes state and MTUs from our netdev (RoCE); the rest
	 * is the device's, checked to be in range.
	 */
	attr->state = rsp.state <= IB_PORT_ACTIVE_DEFER ? rsp.state : IB_PORT_DOWN;
	attr->max_mtu = clamp_t(u8, rsp.max_mtu, IB_MTU_256, IB_MTU_4096);
	attr->active_mtu = clamp_t(u8, rsp.active_mtu, IB_MTU_256, attr->max_mtu);
	attr->phys_mtu = le32_to_cpu(rsp.phys_mtu);
	attr->gid_tbl_len = VIRTIO_RDMA_GID_TBL_LEN;
	attr->port_cap_flags = le32_to_cpu(rsp.port_cap_flags) & IB_PORT_CM_SUP;
	attr->max_msg_sz = le32_to_cpu(rsp.max_msg_sz);
	attr->bad_pkey_cntr = le32_to_cpu(rsp.bad_pkey_cntr);
	attr->qkey_viol_cntr = le32_to_cpu(rsp.qkey_viol_cntr);
	attr->pkey_tbl_len = 1;
	attr->active_width = rsp.active_width;
	attr->active_speed = le16_to_cpu(rsp.active_speed);
	attr->phys_state = rsp.phys_state;
	return 0;
}

int vrdma_get_port_immutable(struct ib_device *ib, u32 port,
			     struct ib_port_immutable *imm)
{
	struct vrdma_dev *dev = to_vdev(ib);

	imm->pkey_tbl_len = 1;
	imm->gid_tbl_len = VIRTIO_RDMA_GID_TBL_LEN;
	/* RoCEv2; with QP1 a MAD port too, for the CM (as rxe's) */
	if (dev->cfg.caps & VIRTIO_RDMA_CAP_GSI) {
		imm->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
		imm->max_mad_size = IB_MGMT_MAD_SIZE;
	} else {
		imm->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP;
		imm->max_mad_size = 0;
	}
	return 0;
}

enum rdma_link_layer vrdma_get_link_layer(struct ib_device *ib, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

int vrdma_query_pkey(struct ib_device *ib, u32 port, u16 index, u16 *pkey)
{
	struct virtio_rdma_cmd_query_pkey req = {
		.port = cpu_to_le32(port),
		.index = cpu_to_le16(index),
	};
	struct virtio_rdma_rsp_query_pkey rsp;
	int err;

	err = vrdma_cmd(to_vdev(ib), VIRTIO_CMD_QUERY_PKEY, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (!err)
		*pkey = le16_to_cpu(rsp.pkey);
	return err;
}

/*
 * The IB core fills the GID table from our netdev's addresses and tells the
 * device each entry. The device takes only GIDs the host assigned to the VM
 * (and the link-local GID of its MAC): others fail with -EPERM, so the core
 * keeps them out of the table and no QP can use them (docs/virtio-rdma.md).
 * A device that failed refuses nothing: its table is gone with it, and a
 * refusal would fail a registration half-way through the GID table.
 */
int vrdma_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrdma_dev *dev = to_vdev(attr->device);
	struct virtio_rdma_cmd_add_gid req = {
		.gid_type = cpu_to_le32(attr->gid_type),
		.index = cpu_to_le16(attr->index),
		.port_num = cpu_to_le32(attr->port_num),
	};
	int err;

	memcpy(req.gid, attr->gid.raw, sizeof(req.gid));
	err = vrdma_cmd(dev, VIRTIO_CMD_ADD_GID, &req, sizeof(req), NULL, 0);
	return READ_ONCE(dev->broken) ? 0 : err;
}

int vrdma_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct vrdma_dev *dev = to_vdev(attr->device);
	struct virtio_rdma_cmd_del_gid req = {
		.index = cpu_to_le16(attr->index),
		.port = cpu_to_le32(attr->port_num),
	};
	int err;

	err = vrdma_cmd(dev, VIRTIO_CMD_DEL_GID, &req, sizeof(req), NULL, 0);
	return READ_ONCE(dev->broken) ? 0 : err;
}

/* User contexts carry nothing: the provider posts and polls through the
 * kernel (uverbs commands), so there is nothing to map.
 */
/*
 * A provider that asks (include/vrdma_uverbs.h) gets rings in its own
 * memory when the device is on ABI v2 and has a doorbell page for it;
 * otherwise its queues are the kernel's, posted and polled through uverbs.
 */
int vrdma_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibuc->device);
	struct vrdma_ucontext *uc = to_vuc(ibuc);
	struct vrdma_alloc_ucontext_resp resp = {};
	struct vrdma_alloc_ucontext_req req = {};
	int err;

	if (udata->inlen &&
	    ib_copy_from_udata(&req, udata, min(udata->inlen, sizeof(req))))
		return -EFAULT;
	/* flags this driver does not know are not granted (the answer says) */
	if (dev->rings && (req.flags & VRDMA_UCTX_RINGS) &&
	    udata->outlen >= sizeof(resp)) {
		err = vrdma_udb_add(dev, uc);
		if (err && err != -ENOSPC)
			return err;
		uc->rings = !err;
	}
	if (uc->rings) {
		resp.flags = VRDMA_UCTX_RINGS | VRDMA_UCTX_LIVE;
		resp.db_bits = VIRTIO_RDMA_DB_BITS;
		resp.db_offset = rdma_user_mmap_get_offset(&uc->umap->entry);
	}
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err && uc->rings)
		vrdma_dealloc_ucontext(ibuc);
	return err;
}

/* After every object of the context was destroyed. */
void vrdma_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct vrdma_ucontext *uc = to_vuc(ibuc);

	if (!uc->rings)
		return;
	vrdma_udb_del(to_vdev(ibuc->device), uc);
	/* the page goes when the last mapping of it does */
	rdma_user_mmap_entry_remove(&uc->umap->entry);
	uc->umap = NULL;
	uc->rings = false;
}

/* Unregistering cuts programs off instead of waiting for them to close
 * the device; the core unmaps their doorbell pages.
 */
void vrdma_disassociate_ucontext(struct ib_ucontext *uc)
{
}

/* The context's doorbell page: one page, read and write, at db_offset. */
int vrdma_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct vrdma_umap *um;
	int err;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!entry)
		return -EINVAL;
	um = container_of(entry, struct vrdma_umap, entry);
	err = rdma_user_mmap_io(ibuc, vma, page_to_pfn(um->page), PAGE_SIZE,
				vma->vm_page_prot, entry);
	rdma_user_mmap_entry_put(entry);
	return err;
}

void vrdma_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct vrdma_umap *um = container_of(entry, struct vrdma_umap, entry);

	__free_page(um->page);
	kfree(um);
}

int vrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct virtio_rdma_rsp_create_pd rsp;
	int err;

	err = vrdma_cmd(to_vdev(ibpd->device), VIRTIO_CMD_CREATE_PD, NULL, 0,
			&rsp, sizeof(rsp));
	if (err)
		return err;
	to_vpd(ibpd)->pdn = le32_to_cpu(rsp.pdn);
	return 0;
}

/* Never fails, as every destroy: a refusal is a device error. */
int vrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	vrdma_cmd_destroy(to_vdev(ibpd->device), VIRTIO_CMD_DESTROY_PD,
			  "DESTROY_PD", to_vpd(ibpd)->pdn);
	return 0;
}

/* An address vector as UD WQEs carry it (docs/virtio-rdma.md section 5). */
void vrdma_fill_av(struct virtio_rdma_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(attr);
	u32 stf;

	memset(av, 0, sizeof(*av));
	av->port = cpu_to_le32(rdma_ah_get_port_num(attr));
	stf = (grh->flow_label & 0xfffff) | (u32)grh->traffic_class << 20 |
	      (u32)(rdma_ah_get_sl(attr) & 0xf) << 28;
	av->sl_tclass_flowlabel = cpu_to_le32(stf);
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	av->gid_index = grh->sgid_index;
	av->static_rate = rdma_ah_get_static_rate(attr);
	av->hop_limit = grh->hop_limit;
	memcpy(av->dmac, attr->roce.dmac, ETH_ALEN);
}

int vrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct rdma_ah_attr *attr = init->ah_attr;

	/* RoCE: every address carries a GRH */
	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	if (rdma_ah_get_port_num(attr) != VRDMA_PORT)
		return -EINVAL;
	vrdma_fill_av(&to_vah(ibah)->av, attr);
	to_vah(ibah)->av.pdn = cpu_to_le32(to_vpd(ibah->pd)->pdn);
	/* a program on its own rings writes the AV into its UD WQEs */
	if (udata && udata->outlen >= sizeof(struct vrdma_create_ah_resp)) {
		struct vrdma_create_ah_resp resp = {};

		BUILD_BUG_ON(sizeof(resp.av) < sizeof(struct virtio_rdma_av));
		memcpy(resp.av, &to_vah(ibah)->av, sizeof(struct virtio_rdma_av));
		return ib_copy_to_udata(udata, &resp, sizeof(resp));
	}
	return 0;
}

int vrdma_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	const struct virtio_rdma_av *av = &to_vah(ibah)->av;
	u32 stf = le32_to_cpu(av->sl_tclass_flowlabel);
	union ib_gid dgid;

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(attr, &dgid, stf & 0xfffff, av->gid_index,
			av->hop_limit, (stf >> 20) & 0xff);
	rdma_ah_set_sl(attr, stf >> 28);
	rdma_ah_set_port_num(attr, VRDMA_PORT);
	rdma_ah_set_static_rate(attr, av->static_rate);
	memcpy(attr->roce.dmac, av->dmac, ETH_ALEN);
	return 0;
}

int vrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}
