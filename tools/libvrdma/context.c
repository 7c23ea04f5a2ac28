// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's context: open (memory, connection, handshake), close, and the
 * device and port queries.
 */
#include <sys/mman.h>

#include "internal.h"

int vrdma_open(const char *socket_path, const struct vrdma_open_attr *attr,
	       struct vrdma_ctx **ctxp)
{
	size_t mem_size = attr && attr->mem_size ? attr->mem_size : DEFAULT_MEM_SIZE;
	const char *yield_env = getenv("VRDMA_POLL_YIELD");
	struct vrdma_ctx *ctx;
	int ret;

	if (!socket_path || !ctxp)
		return -EINVAL;
	mem_size = (mem_size + SHM_PAGE - 1) & ~(size_t)(SHM_PAGE - 1);
	if (!mem_size || mem_size / SHM_PAGE > UINT32_MAX)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->sock = ctx->memfd = -1;
	ctx->mem = MAP_FAILED;
	ctx->mem_size = mem_size;
	ctx->timeout_ms = attr && attr->timeout_ms ? attr->timeout_ms : DEFAULT_TIMEOUT_MS;
	ctx->poll_yield = !yield_env || strcmp(yield_env, "0");
	ctx->rings = getenv("VRDMA_RINGS") && !strcmp(getenv("VRDMA_RINGS"), "1");
	vring_init(&ctx->ctrl);
	vring_init(&ctx->wake);
	vring_init(&ctx->event);
	list_init(&ctx->pds);
	list_init(&ctx->mrs);
	list_init(&ctx->mws);
	list_init(&ctx->cqs);
	list_init(&ctx->qps);
	list_init(&ctx->srqs);

	ctx->memfd = vhost_user_memfd("vrdma-guest", mem_size);
	if (ctx->memfd < 0) {
		ret = ctx->memfd;
		goto close_ctx;
	}
	ctx->mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->memfd, 0);
	if (ctx->mem == MAP_FAILED) {
		ret = -errno;
		goto close_ctx;
	}
	ctx->alloc_pages = calloc(mem_size / SHM_PAGE, sizeof(*ctx->alloc_pages));
	ctx->free_list = malloc(sizeof(*ctx->free_list));
	if (!ctx->alloc_pages || !ctx->free_list) {
		ret = -ENOMEM;
		goto close_ctx;
	}
	*ctx->free_list = (struct extent){ .off = 0, .len = mem_size };
	ctx->ctrl_buf = shm_alloc(ctx, (size_t)CTRL_SLOTS * 2 * CTRL_PART);
	if (!ctx->ctrl_buf) {
		ret = -ENOMEM;
		goto close_ctx;
	}

	ctx->sock = vrdma_connect(socket_path, ctx->timeout_ms);
	if (ctx->sock < 0) {
		ret = ctx->sock;
		goto close_ctx;
	}
	ret = handshake(ctx);
	if (!ret && ctx->rings)
		ret = rings_open(ctx);
	if (ret)
		goto close_ctx;
	*ctxp = ctx;
	return 0;

close_ctx:
	vrdma_close(ctx);
	return ret;
}

void vrdma_close(struct vrdma_ctx *ctx)
{
	struct extent *e, *next;

	if (!ctx)
		return;
	/* the daemon frees the device's resources when the connection goes:
	 * only our side is left to free */
	if (ctx->sock >= 0)
		close(ctx->sock);
	while (ctx->qps.next != &ctx->qps) {
		struct vrdma_qp *qp = container_of(ctx->qps.next, struct vrdma_qp, link);

		list_del(&qp->link);
		wq_free(&qp->sq);
		wq_free(&qp->rq);
		free(qp);
	}
	while (ctx->srqs.next != &ctx->srqs) {
		struct vrdma_srq *srq = container_of(ctx->srqs.next, struct vrdma_srq, link);

		list_del(&srq->link);
		wq_free(&srq->rq);
		free(srq);
	}
	while (ctx->cqs.next != &ctx->cqs) {
		struct vrdma_cq *cq = container_of(ctx->cqs.next, struct vrdma_cq, link);

		list_del(&cq->link);
		vring_close_fds(&cq->vq);
		free(cq);
	}
	while (ctx->mws.next != &ctx->mws) {
		struct vrdma_mw *mw = container_of(ctx->mws.next, struct vrdma_mw, link);

		list_del(&mw->link);
		free(mw);
	}
	while (ctx->mrs.next != &ctx->mrs) {
		struct vrdma_mr *mr = container_of(ctx->mrs.next, struct vrdma_mr, link);

		list_del(&mr->link);
		free(mr);
	}
	while (ctx->pds.next != &ctx->pds) {
		struct vrdma_pd *pd = container_of(ctx->pds.next, struct vrdma_pd, link);

		list_del(&pd->link);
		free(pd);
	}
	vring_close_fds(&ctx->ctrl);
	vring_close_fds(&ctx->wake);
	vring_close_fds(&ctx->event);
	for (e = ctx->free_list; e; e = next) {
		next = e->next;
		free(e);
	}
	free(ctx->alloc_pages);
	if (ctx->mem != MAP_FAILED)
		munmap(ctx->mem, ctx->mem_size);
	if (ctx->memfd >= 0)
		close(ctx->memfd);
	free(ctx);
}

int vrdma_socket_fd(const struct vrdma_ctx *ctx)
{
	return ctx ? ctx->sock : -EINVAL;
}

/* ---- device and port ---- */

int vrdma_query_device(struct vrdma_ctx *ctx, struct virtio_rdma_config *cfg)
{
	if (!ctx || !cfg)
		return -EINVAL;
	return get_config(ctx, 0, cfg, sizeof(*cfg));
}

int vrdma_query_port(struct vrdma_ctx *ctx, uint8_t port, struct virtio_rdma_rsp_query_port *attr)
{
	struct virtio_rdma_cmd_query_port req = { .port = port };

	if (!ctx || !attr)
		return -EINVAL;
	return ctrl_cmd(ctx, VIRTIO_CMD_QUERY_PORT, &req, sizeof(req), attr, sizeof(*attr));
}

int vrdma_query_gid(struct vrdma_ctx *ctx, unsigned int index, uint8_t gid[16])
{
	uint8_t entry[16];
	int ret;

	if (!ctx || !gid || index >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	ret = get_config(ctx, offsetof(struct virtio_rdma_config, gid_tbl) + 16 * index,
			 entry, sizeof(entry));
	if (ret)
		return ret;
	if (all_zero(entry, sizeof(entry)))
		return -ENOENT;
	memcpy(gid, entry, sizeof(entry));
	return 0;
}

int vrdma_query_pkey(struct vrdma_ctx *ctx, uint32_t port, uint16_t index, uint16_t *pkey)
{
	struct virtio_rdma_cmd_query_pkey req = { .port = port, .index = index };
	struct virtio_rdma_rsp_query_pkey rsp;
	int ret;

	if (!ctx || !pkey)
		return -EINVAL;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_QUERY_PKEY, &req, sizeof(req), &rsp, sizeof(rsp));
	if (!ret)
		*pkey = rsp.pkey;
	return ret;
}

int vrdma_add_gid(struct vrdma_ctx *ctx, uint16_t index, const uint8_t gid[16])
{
	struct virtio_rdma_cmd_add_gid req = { .gid_type = 2 /* RoCEv2 */, .index = index, .port_num = 1 };

	if (!ctx || !gid)
		return -EINVAL;
	memcpy(req.gid, gid, sizeof(req.gid));
	return ctrl_cmd(ctx, VIRTIO_CMD_ADD_GID, &req, sizeof(req), NULL, 0);
}

int vrdma_del_gid(struct vrdma_ctx *ctx, uint16_t index)
{
	struct virtio_rdma_cmd_del_gid req = { .index = index, .port = 1 };

	if (!ctx)
		return -EINVAL;
	return ctrl_cmd(ctx, VIRTIO_CMD_DEL_GID, &req, sizeof(req), NULL, 0);
}
