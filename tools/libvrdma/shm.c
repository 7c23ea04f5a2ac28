// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's shared memory: a first-fit allocator of 4 KiB pages over
 * the memfd the daemon maps, and what a caller needs to size it.
 */
#include "internal.h"

/* ---- shared memory: first fit over the memfd, in pages ---- */

size_t vrdma_mem_buf(size_t len)
{
	return (len ? (len + SHM_PAGE - 1) / SHM_PAGE : 1) * SHM_PAGE;
}

void *shm_alloc(struct vrdma_ctx *ctx, size_t len)
{
	size_t need = vrdma_mem_buf(len);
	struct extent **pp, *e;
	size_t off;

	if (len > ctx->mem_size)
		return NULL;
	for (pp = &ctx->free_list; (e = *pp); pp = &e->next)
		if (e->len >= need)
			break;
	if (!e)
		return NULL;
	off = e->off;
	e->off += need;
	e->len -= need;
	if (!e->len) {
		*pp = e->next;
		free(e);
	}
	ctx->alloc_pages[off / SHM_PAGE] = need / SHM_PAGE;
	memset(ctx->mem + off, 0, need);
	return ctx->mem + off;
}

void shm_free(struct vrdma_ctx *ctx, void *p)
{
	struct extent **pp, *prev = NULL, *e;
	size_t off, len;

	if (!p || (uint8_t *)p < ctx->mem || (uint8_t *)p >= ctx->mem + ctx->mem_size)
		return;
	off = (uint8_t *)p - ctx->mem;
	if (off % SHM_PAGE || !ctx->alloc_pages[off / SHM_PAGE])
		return;		/* not an allocation: ignore, as free() cannot */
	len = (size_t)ctx->alloc_pages[off / SHM_PAGE] * SHM_PAGE;
	ctx->alloc_pages[off / SHM_PAGE] = 0;
	for (pp = &ctx->free_list; (e = *pp) && e->off < off; pp = &e->next)
		prev = e;
	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (e && off + len == e->off) {
			prev->len += e->len;
			prev->next = e->next;
			free(e);
		}
		return;
	}
	if (e && off + len == e->off) {
		e->off = off;
		e->len += len;
		return;
	}
	e = malloc(sizeof(*e));
	if (!e)
		return;		/* the pages stay unusable until close; nothing breaks */
	e->off = off;
	e->len = len;
	e->next = *pp;
	*pp = e;
}

uint64_t vrdma_gpa(struct vrdma_ctx *ctx, const void *p)
{
	if (!ctx || (const uint8_t *)p < ctx->mem || (const uint8_t *)p >= ctx->mem + ctx->mem_size)
		return 0;
	return GPA_BASE + (uint64_t)((const uint8_t *)p - ctx->mem);
}

/* Is [p, p + len) inside the shared memory? */
bool in_shm(const struct vrdma_ctx *ctx, const void *p, size_t len)
{
	const uint8_t *b = p;

	return b >= ctx->mem && b <= ctx->mem + ctx->mem_size &&
	       len <= (size_t)(ctx->mem + ctx->mem_size - b);
}

void *vrdma_alloc_buf(struct vrdma_ctx *ctx, size_t len)
{
	if (!ctx || !len)
		return NULL;
	return shm_alloc(ctx, len);
}

void vrdma_free_buf(struct vrdma_ctx *ctx, void *buf)
{
	if (ctx)
		shm_free(ctx, buf);
}

/* ---- what a caller needs to size the memory ---- */

/* First fit never reaches past the sum of every allocation made, freed
 * ones included: summing them is always enough. */
/* Enough for either ABI: virtqueues (v1) or rings (v2, VRDMA_RINGS=1). */
static size_t max_of(size_t a, size_t b)
{
	return a > b ? a : b;
}

size_t vrdma_mem_ctx(void)
{
	return vrdma_mem_buf((size_t)CTRL_SLOTS * 2 * CTRL_PART) +
	       vrdma_mem_buf(vring_bytes(CTRL_RING_SIZE)) + ring_mem_ctx();
}

size_t vrdma_mem_reg_mr(size_t len)
{
	/* page_array: one entry per page touched, at any alignment */
	return vrdma_mem_buf((len / SHM_PAGE + 2) * sizeof(uint64_t));
}

size_t vrdma_mem_cq(uint32_t cqe)
{
	unsigned int num = ring_size_for(cqe);

	return max_of(vrdma_mem_buf((size_t)num * sizeof(struct virtio_rdma_cqe)) +
		      vrdma_mem_buf(vring_bytes(num)), ring_mem_cq(cqe));
}

size_t vrdma_mem_qp(const struct vrdma_qp_init_attr *init)
{
	return max_of(wq_bytes(init->max_send_wr, sq_slot_size(init)) +
		      (init->srq ? 0 : wq_bytes(init->max_recv_wr, rq_slot_size(init))),
		      ring_mem_qp(init->max_send_wr, init->max_recv_wr, sq_slot_size(init),
				  rq_slot_size(init)));
}

size_t vrdma_mem_srq(uint32_t max_wr, uint32_t max_sge)
{
	return max_of(wq_bytes(max_wr, srq_slot_size(max_sge)),
		      ring_mem_qp(0, max_wr, 0, srq_slot_size(max_sge)));
}
