// SPDX-License-Identifier: GPL-2.0-only
/* Rings and doorbell pages in guest memory (ABI v2): gring.h. */
#include "gring.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

/* The header: whole slots, so that no slot crosses a page. */
static uint32_t hdr_size(uint32_t stride)
{
	return stride > GRING_HDR_MIN ? stride : GRING_HDR_MIN;
}

uint32_t gring_pages_needed(uint32_t entries, uint32_t stride)
{
	uint64_t bytes;

	if (!pow2(entries) || entries > GRING_MAX_ENTRIES || !pow2(stride) ||
	    stride < GRING_MIN_STRIDE || stride > GRING_PAGE)
		return 0;
	bytes = hdr_size(stride) + (uint64_t)entries * stride;
	return (uint32_t)((bytes + GRING_PAGE - 1) / GRING_PAGE);
}

int gring_init(struct gring *r, const struct guest_mem *gm, const uint64_t *pages,
	       uint32_t npages, uint32_t entries, uint32_t stride, char *why, size_t whylen)
{
	uint32_t need = gring_pages_needed(entries, stride), i;

	if (!need) {
		snprintf(why, whylen, "%u entries of %u bytes: entries must be a power of two up "
			 "to %u, the stride a power of two from %u to %u", entries, stride,
			 GRING_MAX_ENTRIES, GRING_MIN_STRIDE, GRING_PAGE);
		return -EINVAL;
	}
	if (npages != need) {
		snprintf(why, whylen, "%u pages for %u entries of %u bytes, which take %u", npages,
			 entries, stride, need);
		return -EINVAL;
	}
	for (i = 0; i < npages; i++) {
		if (pages[i] % GRING_PAGE) {
			snprintf(why, whylen, "page %u (0x%llx) is not 4 KiB aligned", i,
				 (unsigned long long)pages[i]);
			return -EINVAL;
		}
		if (gm && !guest_gpa(gm, pages[i], GRING_PAGE)) {
			snprintf(why, whylen, "page %u (0x%llx) is not in guest memory", i,
				 (unsigned long long)pages[i]);
			return -EFAULT;
		}
	}
	r->pages = malloc((size_t)npages * sizeof(*r->pages));
	if (!r->pages) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	memcpy(r->pages, pages, (size_t)npages * sizeof(*r->pages));
	r->npages = npages;
	r->entries = entries;
	r->stride = stride;
	r->hdr = hdr_size(stride);
	return 0;
}

void gring_free(struct gring *r)
{
	free(r->pages);
	memset(r, 0, sizeof(*r));
}

/* Byte off of the ring, len bytes that stay in its page, as a host pointer. */
static void *at(const struct gring *r, const struct guest_mem *gm, uint64_t off, uint32_t len)
{
	uint64_t p = off / GRING_PAGE;

	if (p >= r->npages || off % GRING_PAGE + len > GRING_PAGE)
		return NULL;
	return guest_gpa(gm, r->pages[p] + off % GRING_PAGE, len);
}

int gring_load(const struct gring *r, const struct guest_mem *gm, uint32_t off, uint32_t *v)
{
	uint32_t *p = off % 4 || off >= GRING_DEVICE_HALF ? NULL : at(r, gm, off, 4);

	if (!p)
		return -EFAULT;
	*v = le32toh(__atomic_load_n(p, __ATOMIC_ACQUIRE));
	return 0;
}

int gring_store(const struct gring *r, const struct guest_mem *gm, uint32_t off, uint32_t v)
{
	uint32_t *p = off % 4 || off < GRING_DEVICE_HALF || off >= GRING_HDR_MIN ? NULL :
		      at(r, gm, off, 4);

	if (!p)
		return -EFAULT;
	__atomic_store_n(p, htole32(v), __ATOMIC_RELEASE);
	return 0;
}

static void *slot(const struct gring *r, const struct guest_mem *gm, uint32_t idx, uint32_t len)
{
	if (len > r->stride)
		return NULL;
	return at(r, gm, r->hdr + (uint64_t)(idx & (r->entries - 1)) * r->stride, len);
}

int gring_read(const struct gring *r, const struct guest_mem *gm, uint32_t idx, void *buf,
	       uint32_t len)
{
	const void *p = slot(r, gm, idx, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int gring_write(const struct gring *r, const struct guest_mem *gm, uint32_t idx, const void *buf,
		uint32_t len)
{
	void *p = slot(r, gm, idx, len);

	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

bool gring_db_ok(const struct guest_mem *gm, uint64_t gpa)
{
	return !(gpa % GRING_PAGE) && guest_gpa(gm, gpa, GRING_PAGE);
}

uint64_t *gring_db_words(const struct guest_mem *gm, uint64_t gpa)
{
	return gpa % GRING_PAGE ? NULL :
	       guest_gpa(gm, gpa + GRING_DB_BITS_OFF, GRING_PAGE - GRING_DB_BITS_OFF);
}

int gring_db_take(const struct guest_mem *gm, uint64_t gpa, uint32_t w, uint64_t *bits)
{
	uint64_t *p = w < GRING_DB_WORDS ? gring_db_words(gm, gpa) : NULL;

	if (!p)
		return -EFAULT;
	*bits = gring_db_take_word(p + w);
	return 0;
}

int gring_db_need_wake(const struct guest_mem *gm, uint64_t gpa, uint32_t n)
{
	uint32_t *p = gpa % GRING_PAGE ? NULL : guest_gpa(gm, gpa + GRING_DB_NEED_WAKE, 4);

	if (!p)
		return -EFAULT;
	/* seq_cst: the worker looks at the bits again after this, and a guest
	 * sets its bit before it reads need_wake (both sides' store-then-load) */
	__atomic_store_n(p, htole32(n), __ATOMIC_SEQ_CST);
	return 0;
}
