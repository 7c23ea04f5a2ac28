// SPDX-License-Identifier: GPL-2.0-only
/*
 * MRs' pages: the page lists of REG_USER_MR and MAP_MR_SG, read once from
 * the guest and checked against the memory table, the engine's view of an
 * MR as runs of contiguous guest memory, and the VM's page budget
 * (max_mr_pages).
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "vdev_int.h"

void *vdev_mr_map(void *mem, uint64_t off, uint64_t len, uint64_t *contig)
{
	struct vdev_mr *mr = mem;
	const struct guest_mem *gm = &mr->v->vu.mem;
	uint64_t x, span, run;
	uint32_t i;
	void *p;

	if (mr->dma) {
		p = guest_gpa_span(gm, off, &span);
		*contig = span;
		return p;
	}
	x = mr->first_off + off;
	if (x / VIRTIO_RDMA_PAGE_SIZE >= mr->npages)
		return NULL;
	i = x / VIRTIO_RDMA_PAGE_SIZE;
	p = guest_gpa_span(gm, mr->pages[i] + x % VIRTIO_RDMA_PAGE_SIZE, &span);
	if (!p)
		return NULL;
	/* Following pages that are contiguous in guest memory, as far as asked. */
	run = VIRTIO_RDMA_PAGE_SIZE - x % VIRTIO_RDMA_PAGE_SIZE;
	for (; run < len && i + 1 < mr->npages &&
	       mr->pages[i + 1] == mr->pages[i] + VIRTIO_RDMA_PAGE_SIZE; i++)
		run += VIRTIO_RDMA_PAGE_SIZE;
	*contig = span < run ? span : run;
	return p;
}

uint8_t vdev_copy_page_list(struct vdev *v, uint64_t list_gpa, uint32_t npages, uint64_t **out)
{
	const void *src;
	uint64_t *pages;
	uint32_t i;

	v->poll_pages += npages;
	src = guest_gpa(&v->vu.mem, list_gpa, (uint64_t)npages * 8);
	if (!src)
		return VIRTIO_RDMA_ERR_FAULT;
	pages = malloc((size_t)npages * sizeof(*pages));
	if (!pages)
		return VIRTIO_RDMA_ERR_NOMEM;
	memcpy(pages, src, (size_t)npages * sizeof(*pages));
	for (i = 0; i < npages; i++)
		pages[i] = le64toh(pages[i]);
	*out = pages;
	return VIRTIO_RDMA_OK;
}

/* Copy a page list from guest memory (read once) and check every page;
 * it replaces the MR's pages only when all are good. */
uint8_t vdev_mr_load_pages(struct vdev *v, struct vdev_mr *mr, uint64_t pages_gpa, uint32_t npages)
{
	uint64_t *pages;
	uint32_t i;
	uint8_t st;

	st = vdev_copy_page_list(v, pages_gpa, npages, &pages);
	if (st)
		return st;
	for (i = 0; i < npages; i++) {
		if (pages[i] % VIRTIO_RDMA_PAGE_SIZE) {
			free(pages);
			return VIRTIO_RDMA_ERR_INVAL;
		}
		if (!guest_gpa(&v->vu.mem, pages[i], VIRTIO_RDMA_PAGE_SIZE)) {
			free(pages);
			return VIRTIO_RDMA_ERR_FAULT;
		}
	}
	free(mr->pages);
	mr->pages = pages;
	mr->npages = npages;
	return VIRTIO_RDMA_OK;
}

/* Charge n pages to the VM's budget (max_mr_pages); NOMEM, counted, past it. */
uint8_t vdev_mr_charge(struct vdev *v, struct vdev_mr *mr, uint32_t n)
{
	if (n > v->max_mr_pages - v->mr_pages) {
		v->stats.refused_mrs++;
		return VIRTIO_RDMA_ERR_NOMEM;
	}
	v->mr_pages += n;
	mr->charged = n;
	return VIRTIO_RDMA_OK;
}

void vdev_mr_free(struct vdev *v, struct vdev_mr *mr)
{
	if (mr->eng)
		eng_mr_dereg(mr->eng);
	v->mr_pages -= mr->charged;
	v->poll_pages += mr->npages;
	free(mr->pages);
	free(mr);
}

/* The most pages one MR may have: the ABI's, or the VM's whole budget. */
uint32_t vdev_max_mr_pages(const struct vdev *v)
{
	return v->max_mr_pages < VDEV_MAX_PAGES ? v->max_mr_pages : VDEV_MAX_PAGES;
}
