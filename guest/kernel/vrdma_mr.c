// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory regions. The device reads guest memory by guest-physical address
 * (no VIRTIO_F_ACCESS_PLATFORM), so a user MR is its pinned pages'
 * physical addresses: a flat le64 array the device copies while the
 * command runs (docs/virtio-rdma.md, "pages").
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "vrdma.h"

/* The access bits the device knows (MW_BIND: windows may be bound to the
 * MR, on rings); optional ones (relaxed ordering) are hints a device may
 * ignore (IB_ACCESS_OPTIONAL).
 */
#define VRDMA_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)

static int vrdma_access(int access, u32 *out)
{
	access &= ~IB_ACCESS_OPTIONAL;
	if (access & ~VRDMA_ACCESS)
		return -EOPNOTSUPP;
	*out = cpu_to_le32(access);
	return 0;
}

static void vrdma_mr_keys(struct vrdma_mr *mr,
			  const struct virtio_rdma_rsp_mr *rsp)
{
	mr->mrn = le32_to_cpu(rsp->mrn);
	mr->ibmr.lkey = le32_to_cpu(rsp->lkey);
	mr->ibmr.rkey = le32_to_cpu(rsp->rkey);
}

struct ib_mr *vrdma_get_dma_mr(struct ib_pd *pd, int access)
{
	struct virtio_rdma_cmd_get_dma_mr req = {
		.pdn = cpu_to_le32(to_vpd(pd)->pdn),
	};
	struct virtio_rdma_rsp_mr rsp;
	struct vrdma_mr *mr;
	int err;

	err = vrdma_access(access, &req.access_flags);
	if (err)
		return ERR_PTR(err);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = vrdma_cmd(to_vdev(pd->device), VIRTIO_CMD_GET_DMA_MR, &req,
			sizeof(req), &rsp, sizeof(rsp));
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	vrdma_mr_keys(mr, &rsp);
	return &mr->ibmr;
}

/* The page list must be physically contiguous: one allocation of at most
 * MAX_PAGE_ORDER pages (512 Ki entries, 2 GiB of MR with 4 KiB pages).
 */
static __le64 *vrdma_page_list(struct ib_umem *umem, size_t npages)
{
	struct sg_page_iter it;
	__le64 *pages;
	size_t i = 0;

	if (npages > (PAGE_SIZE << MAX_PAGE_ORDER) / sizeof(*pages))
		return ERR_PTR(-E2BIG);
	pages = alloc_pages_exact(npages * sizeof(*pages),
				  GFP_KERNEL | __GFP_NOWARN);
	if (!pages)
		return ERR_PTR(-ENOMEM);
	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (WARN_ON_ONCE(i >= npages))
			break;
		pages[i++] = cpu_to_le64(page_to_phys(sg_page_iter_page(&it)));
	}
	if (i != npages) {
		free_pages_exact(pages, npages * sizeof(*pages));
		return ERR_PTR(-EFAULT);
	}
	return pages;
}

struct ib_mr *vrdma_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(pd->device);
	struct virtio_rdma_cmd_reg_user_mr req = {
		.pdn = cpu_to_le32(to_vpd(pd)->pdn),
		.start = cpu_to_le64(start),
		.length = cpu_to_le64(length),
		.virt_addr = cpu_to_le64(virt_addr),
	};
	struct virtio_rdma_rsp_mr rsp;
	struct vrdma_mr *mr;
	size_t npages;
	__le64 *pages;
	int err;

	/* PAGE_SIZE pages are the device's 4 KiB pages (x86) */
	BUILD_BUG_ON(PAGE_SIZE != VIRTIO_RDMA_PAGE_SIZE);
	err = vrdma_access(access, &req.access_flags);
	if (err)
		return ERR_PTR(err);
	/* The device adds byte x of the MR at pages[(start % 4096 + x) / 4096]:
	 * user MRs are addressed by virt_addr, which must share start's
	 * offset in its page for that to hold.
	 */
	if ((start ^ virt_addr) & ~PAGE_MASK)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(pd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto free_mr;
	}
	npages = ib_umem_num_pages(mr->umem);
	if (!npages || npages > U32_MAX) {
		err = -EINVAL;
		goto release_umem;
	}
	pages = vrdma_page_list(mr->umem, npages);
	if (IS_ERR(pages)) {
		err = PTR_ERR(pages);
		goto release_umem;
	}
	req.pages = cpu_to_le64(virt_to_phys(pages));
	req.npages = cpu_to_le32(npages);
	err = vrdma_cmd(dev, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err && READ_ONCE(dev->broken)) {
		/* unanswered: the device may still register the pages (and
		 * let peers write them) until it is reset
		 */
		vrdma_dev_hold(dev, mr->umem, pages, npages * sizeof(*pages));
		goto free_mr;
	}
	/* the device copied the list while the command ran */
	free_pages_exact(pages, npages * sizeof(*pages));
	if (err)
		goto release_umem;
	vrdma_mr_keys(mr, &rsp);
	mr->ibmr.length = length;
	mr->ibmr.iova = virt_addr;
	return &mr->ibmr;

release_umem:
	ib_umem_release(mr->umem);
free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * Fast registration (IBA 10.6.3.6): CREATE_MR makes a FREE MR of up to
 * max_num_sg pages; map_mr_sg gives the device its pages (MAP_MR_SG) and a
 * REG_MR work request makes it VALID under the key the consumer chose.
 */
struct ib_mr *vrdma_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct vrdma_dev *dev = to_vdev(pd->device);
	struct virtio_rdma_cmd_create_mr req = {
		.pdn = cpu_to_le32(to_vpd(pd)->pdn),
		/* the REG_MR's flags apply; the device checks these only */
		.access_flags = cpu_to_le32(IB_ACCESS_LOCAL_WRITE),
		.max_num_sg = cpu_to_le32(max_num_sg),
	};
	struct virtio_rdma_rsp_mr rsp;
	struct vrdma_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	/* the list is handed over by physical address: one allocation */
	if (!max_num_sg || max_num_sg > dev->cfg.max_fast_reg_page_list_len ||
	    (size_t)max_num_sg * sizeof(*mr->pages) > KMALLOC_MAX_SIZE)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->pages = kcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto free_mr;
	}
	mr->max_pages = max_num_sg;
	err = vrdma_cmd(dev, VIRTIO_CMD_CREATE_MR, &req, sizeof(req),
			&rsp, sizeof(rsp));
	if (err)
		goto free_pages;
	vrdma_mr_keys(mr, &rsp);
	return &mr->ibmr;

free_pages:
	kfree(mr->pages);
free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

static int vrdma_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vrdma_mr *mr = to_vmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

/* May run where a ULP cannot sleep (a block driver's queue_rq): spins for
 * MAP_MR_SG's answer, as req_notify_cq does.
 */
int vrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	struct virtio_rdma_cmd_map_mr_sg req;
	struct virtio_rdma_rsp_map_mr_sg rsp;
	int n, err;

	if (!mr->pages)
		return -EINVAL;		/* not a fast-registration MR */
	if (ibmr->page_size != VIRTIO_RDMA_PAGE_SIZE)
		return -EINVAL;		/* the device's pages are 4 KiB */
	mr->npages = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, vrdma_set_page);
	if (n <= 0)
		return n;
	req.mrn = cpu_to_le32(mr->mrn);
	req.npages = cpu_to_le32(mr->npages);
	req.start = cpu_to_le64(ibmr->iova);
	req.length = cpu_to_le64(ibmr->length);
	req.pages = cpu_to_le64(virt_to_phys(mr->pages));
	err = vrdma_cmd_atomic(to_vdev(ibmr->device), VIRTIO_CMD_MAP_MR_SG, &req,
			       sizeof(req), &rsp, sizeof(rsp));
	return err ? err : n;
}

/*
 * Never fails (uverbs warns and leaks on a failed destroy at close). The
 * pages are unpinned only once the device let the MR go: a device that
 * refuses, or does not answer, may still let peers write them, so they
 * stay pinned until it is reset.
 */
int vrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vrdma_mr *mr = to_vmr(ibmr);
	struct vrdma_dev *dev = to_vdev(ibmr->device);

	if (vrdma_cmd_destroy(dev, VIRTIO_CMD_DEREG_MR, "DEREG_MR", mr->mrn)) {
		/* a fast-registration list may be read by an unanswered
		 * MAP_MR_SG too
		 */
		vrdma_dev_hold(dev, mr->umem, mr->pages, 0);
	} else {
		ib_umem_release(mr->umem);
		kfree(mr->pages);
	}
	kfree(mr);
	return 0;
}

/*
 * A type 2B memory window (IBA 10.6.7): FREE until a program binds it with
 * a BIND_MW WQE in its own send ring (ABI v2, docs/virtio-rdma.md section
 * 9); the device checks every bind. Type 1 (bound by a verb) the device
 * does not offer.
 */
int vrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct vrdma_dev *dev = to_vdev(ibmw->device);
	struct virtio_rdma_cmd_alloc_mw req = {
		.pdn = cpu_to_le32(to_vpd(ibmw->pd)->pdn),
		.type = cpu_to_le32(VIRTIO_IB_MW_TYPE_2),
	};
	struct virtio_rdma_rsp_alloc_mw rsp;
	int err;

	if (!dev->rings || ibmw->type != IB_MW_TYPE_2)
		return -EOPNOTSUPP;
	err = vrdma_cmd(dev, VIRTIO_CMD_ALLOC_MW, &req, sizeof(req), &rsp,
			sizeof(rsp));
	if (err)
		return err;
	to_vmw(ibmw)->mwn = le32_to_cpu(rsp.mwn);
	ibmw->rkey = le32_to_cpu(rsp.rkey);
	return 0;
}

/* Never fails, as every destroy: a refusal is a device error. */
int vrdma_dealloc_mw(struct ib_mw *ibmw)
{
	vrdma_cmd_destroy(to_vdev(ibmw->device), VIRTIO_CMD_DEALLOC_MW,
			  "DEALLOC_MW", to_vmw(ibmw)->mwn);
	return 0;
}

