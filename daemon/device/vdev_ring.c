// SPDX-License-Identifier: GPL-2.0-only
/*
 * ABI v2 (docs/virtio-rdma.md section 8): rings in guest memory. So far the
 * doorbell pages: one 4 KiB page of guest memory per context, whose bits
 * say which of its rings to look at. A page is taken once (one page, one
 * owner: two contexts never share one), let go only when no ring names it,
 * and every page goes with a reset.
 */
#include <endian.h>
#include <stdlib.h>

#include "vdev_int.h"

uint8_t vdev_cmd_add_db_page(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_add_db_page *q = req;
	struct virtio_rdma_rsp_add_db_page *r = rsp;
	uint64_t gpa = le64toh(q->gpa);
	uint32_t i, dbn = VDEV_MAX_DB_PAGES;
	struct vdev_db *db;

	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (gpa % GRING_PAGE)
		return VIRTIO_RDMA_ERR_INVAL;
	if (!gring_db_ok(&v->vu.mem, gpa))
		return VIRTIO_RDMA_ERR_FAULT;
	for (i = 0; i < VDEV_MAX_DB_PAGES; i++) {
		if (!v->dbs[i]) {
			if (dbn == VDEV_MAX_DB_PAGES)
				dbn = i;
		} else if (v->dbs[i]->gpa == gpa) {
			return VIRTIO_RDMA_ERR_INVAL;
		}
	}
	if (dbn == VDEV_MAX_DB_PAGES) {
		v->stats.refused_db_pages++;
		return VIRTIO_RDMA_ERR_NOMEM;
	}
	db = calloc(1, sizeof(*db));
	if (!db)
		return VIRTIO_RDMA_ERR_NOMEM;
	db->gpa = gpa;
	/* the device's half starts known: no wake asked for yet */
	if (gring_db_need_wake(&v->vu.mem, gpa, false)) {
		free(db);
		return VIRTIO_RDMA_ERR_FAULT;
	}
	v->dbs[dbn] = db;
	r->dbn = htole32(dbn);
	return VIRTIO_RDMA_OK;
}

uint8_t vdev_cmd_del_db_page(struct vdev *v, const void *req, void *rsp)
{
	const struct virtio_rdma_cmd_del_db_page *q = req;
	uint32_t dbn = le32toh(q->dbn);

	(void)rsp;
	if (!vdev_rings(v))
		return VIRTIO_RDMA_ERR_UNSUPP;
	if (dbn >= VDEV_MAX_DB_PAGES || !v->dbs[dbn])
		return VIRTIO_RDMA_ERR_NOENT;
	if (v->dbs[dbn]->users)
		return VIRTIO_RDMA_ERR_BUSY;
	free(v->dbs[dbn]);
	v->dbs[dbn] = NULL;
	return VIRTIO_RDMA_OK;
}

void vdev_db_free_all(struct vdev *v)
{
	unsigned int i;

	for (i = 0; i < VDEV_MAX_DB_PAGES; i++) {
		free(v->dbs[i]);
		v->dbs[i] = NULL;
	}
}
