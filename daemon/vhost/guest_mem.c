// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_mem.h"

/* [a, a + alen) and [b, b + blen) overlap. Differences, not sums: a
 * region may end exactly at 2^64. */
static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a <= b ? b - a < alen : a - b < blen;
}

int guest_mem_map(struct guest_mem *gm, const struct vhost_user_memory *m,
		  const int *fds, unsigned int nfds, char *err, size_t errlen)
{
	struct guest_mem nm = { .n = 0 };
	long page = sysconf(_SC_PAGESIZE);
	unsigned int i, j;
	int ret;

	if (m->nregions == 0 || m->nregions > VHOST_USER_MEM_REGIONS || nfds != m->nregions) {
		snprintf(err, errlen, "memory table with %u regions and %u fds", m->nregions, nfds);
		return -EINVAL;
	}
	for (i = 0; i < m->nregions; i++) {
		const struct vhost_user_mem_region *r = &m->regions[i];

		if (!r->memory_size || r->guest_phys_addr + r->memory_size - 1 < r->guest_phys_addr ||
		    r->userspace_addr + r->memory_size - 1 < r->userspace_addr ||
		    r->mmap_offset + r->memory_size - 1 < r->mmap_offset ||
		    r->memory_size > SIZE_MAX / 2) {
			snprintf(err, errlen, "region %u is empty or wraps", i);
			return -EINVAL;
		}
		/* A region's host address keeps its guest addresses' alignment only
		 * if all three start on a page: a vring or ring word the guest
		 * aligned would otherwise be misaligned in our mapping (QEMU's
		 * regions are page-aligned; fuzz_state found a restored offset
		 * that was not). */
		if ((r->guest_phys_addr | r->userspace_addr | r->mmap_offset) % GUEST_PAGE) {
			snprintf(err, errlen, "region %u: address or offset not %u-byte aligned "
				 "(gpa 0x%" PRIx64 ", uva 0x%" PRIx64 ", offset 0x%" PRIx64 ")", i,
				 GUEST_PAGE, r->guest_phys_addr, r->userspace_addr, r->mmap_offset);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			const struct vhost_user_mem_region *o = &m->regions[j];

			if (overlaps(r->guest_phys_addr, r->memory_size, o->guest_phys_addr,
				     o->memory_size) ||
			    overlaps(r->userspace_addr, r->memory_size, o->userspace_addr,
				     o->memory_size)) {
				snprintf(err, errlen, "regions %u and %u overlap", j, i);
				return -EINVAL;
			}
		}
	}
	for (i = 0; i < m->nregions; i++) {
		const struct vhost_user_mem_region *r = &m->regions[i];
		struct guest_region *g = &nm.r[i];
		uint64_t align = r->mmap_offset % (uint64_t)page;
		struct stat st;
		int seals;

		/* An access past the end of the file is a SIGBUS for the whole
		 * daemon: the file must cover the region now (mapping past its
		 * end succeeds) and be sealed so that it cannot shrink later. */
		seals = fcntl(fds[i], F_GET_SEALS);
		if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
			ret = -EPERM;
			snprintf(err, errlen, "region %u: its fd is not sealed with F_SEAL_SHRINK; "
				 "give a sealed memfd (QEMU: memory-backend-memfd, seal=on)", i);
			goto unmap_regions;
		}
		if (fstat(fds[i], &st) < 0) {
			ret = -errno;
			snprintf(err, errlen, "region %u: fstat: %s", i, strerror(errno));
			goto unmap_regions;
		}
		if (r->memory_size > (uint64_t)st.st_size ||
		    r->mmap_offset > (uint64_t)st.st_size - r->memory_size) {
			ret = -EINVAL;
			snprintf(err, errlen, "region %u (%" PRIu64 " bytes at offset %" PRIu64
				 ") goes past the end of its file (%" PRIu64 " bytes)", i,
				 r->memory_size, r->mmap_offset, (uint64_t)st.st_size);
			goto unmap_regions;
		}
		g->map_len = r->memory_size + align;
		g->map_base = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_NORESERVE, fds[i], (off_t)(r->mmap_offset - align));
		if (g->map_base == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "cannot map region %u (%" PRIu64 " bytes at offset %"
				 PRIu64 "): %s", i, r->memory_size, r->mmap_offset, strerror(errno));
			goto unmap_regions;
		}
		g->host = (uint8_t *)g->map_base + align;
		g->gpa = r->guest_phys_addr;
		g->size = r->memory_size;
		g->uva = r->userspace_addr;
		g->mmap_offset = r->mmap_offset;
		g->fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		nm.n++;
		if (g->fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "region %u: cannot keep its fd: %s", i,
				 strerror(errno));
			goto unmap_regions;
		}
	}
	*gm = nm;
	return 0;

unmap_regions:
	guest_mem_unmap(&nm);
	return ret;
}

void guest_mem_unmap(struct guest_mem *gm)
{
	unsigned int i;

	for (i = 0; i < gm->n; i++) {
		munmap(gm->r[i].map_base, gm->r[i].map_len);
		if (gm->r[i].fd >= 0)
			close(gm->r[i].fd);
	}
	gm->n = 0;
}

static const struct guest_region *find(const struct guest_mem *gm, uint64_t addr, bool uva)
{
	unsigned int i;

	for (i = 0; i < gm->n; i++) {
		uint64_t base = uva ? gm->r[i].uva : gm->r[i].gpa;

		if (addr >= base && addr - base < gm->r[i].size)
			return &gm->r[i];
	}
	return NULL;
}

static void *translate(const struct guest_mem *gm, uint64_t addr, uint64_t len, bool uva)
{
	const struct guest_region *r = find(gm, addr, uva);
	uint64_t off;

	if (!r)
		return NULL;
	off = addr - (uva ? r->uva : r->gpa);
	if (len > r->size - off)
		return NULL;
	return r->host + off;
}

void *guest_gpa(const struct guest_mem *gm, uint64_t gpa, uint64_t len)
{
	return translate(gm, gpa, len, false);
}

void *guest_uva(const struct guest_mem *gm, uint64_t uva, uint64_t len)
{
	return translate(gm, uva, len, true);
}

void *guest_gpa_span(const struct guest_mem *gm, uint64_t gpa, uint64_t *span)
{
	const struct guest_region *r = find(gm, gpa, false);

	if (!r)
		return NULL;
	*span = r->size - (gpa - r->gpa);
	return r->host + (gpa - r->gpa);
}
