/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A ring in guest memory (ABI v2, docs/virtio-rdma.md section 8): slots of
 * a fixed stride after a header, in 4 KiB guest pages listed at CREATE, and
 * the doorbell pages whose bits say which rings to look at. Every page is
 * checked at init and translated again at every access; every index the
 * guest writes is read once and checked (gring_*_ok) before it is used.
 */
#ifndef VRDMAD_GRING_H
#define VRDMAD_GRING_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "virtio_rdma.h"

#define GRING_PAGE		4096u
#define GRING_MAX_ENTRIES	VIRTIO_RDMA_RING_MAX_ENTRIES
#define GRING_MIN_STRIDE	64u
#define GRING_HDR_MIN		VIRTIO_RDMA_RING_HDR_MIN
/* Header words (the ABI's): 0..63 the guest writes, 64..127 the device. */
#define GRING_PROD		VIRTIO_RDMA_RING_PROD
#define GRING_CONS		VIRTIO_RDMA_RING_CONS
#define GRING_ARM		VIRTIO_RDMA_RING_ARM
#define GRING_TAKEN		VIRTIO_RDMA_RING_TAKEN
#define GRING_WRITTEN		VIRTIO_RDMA_RING_WRITTEN
#define GRING_ARMED		VIRTIO_RDMA_RING_ARMED
#define GRING_DEVICE_HALF	64u

struct gring {
	uint64_t *pages;		/* guest-physical, one per 4 KiB */
	uint32_t npages;
	uint32_t entries;		/* a power of two */
	uint32_t stride;		/* a power of two, 64..4096 */
	uint32_t hdr;			/* max(128, stride) */
};

/* The pages a ring of entries slots of stride bytes needs, or 0 if either
 * is out of range. */
uint32_t gring_pages_needed(uint32_t entries, uint32_t stride);
/* Check a ring's geometry and page list (exactly gring_pages_needed pages,
 * each 4 KiB aligned and inside guest memory gm; with gm NULL, a restore,
 * not the last: every access translates anyway) and keep a copy of the
 * list. 0, or -EINVAL (geometry, count, alignment) / -EFAULT (a page
 * outside guest memory) with why. */
int gring_init(struct gring *r, const struct guest_mem *gm, const uint64_t *pages,
	       uint32_t npages, uint32_t entries, uint32_t stride, char *why, size_t whylen);
void gring_free(struct gring *r);

/* A header word, read once (acquire) / written (release); the guest's half
 * for loads, the device's for stores. -EFAULT if its page is no longer in
 * guest memory. */
int gring_load(const struct gring *r, const struct guest_mem *gm, uint32_t off, uint32_t *v);
int gring_store(const struct gring *r, const struct guest_mem *gm, uint32_t off, uint32_t v);
/* Slot idx (taken modulo entries): its first len <= stride bytes copied
 * out (once: the guest may change it after) or in. 0 or -EFAULT. */
int gring_read(const struct gring *r, const struct guest_mem *gm, uint32_t idx, void *buf,
	       uint32_t len);
int gring_write(const struct gring *r, const struct guest_mem *gm, uint32_t idx, const void *buf,
		uint32_t len);

/* A producer index the guest wrote may be ahead of what the device took by
 * at most the ring's size. */
static inline bool gring_prod_ok(uint32_t prod, uint32_t taken, uint32_t entries)
{
	return prod - taken <= entries;
}

/* A consumer index the guest wrote may neither go back from the last one
 * the device saw nor pass what the device wrote. */
static inline bool gring_cons_ok(uint32_t cons, uint32_t last_cons, uint32_t written)
{
	return cons - last_cons <= written - last_cons;
}

/* Doorbell pages: bytes 0..63 the device's (need_wake at 0), then one bit
 * per queue from byte 64: GRING_DB_BITS bits in 64-bit words. */
#define GRING_DB_NEED_WAKE	VIRTIO_RDMA_DB_NEED_WAKE
#define GRING_DB_BITS_OFF	VIRTIO_RDMA_DB_BITS_OFF
#define GRING_DB_BITS		VIRTIO_RDMA_DB_BITS
#define GRING_DB_WORDS		(GRING_DB_BITS / 64u)

/* The page at gpa can be a doorbell page: 4 KiB aligned, in guest memory. */
bool gring_db_ok(const struct guest_mem *gm, uint64_t gpa);
/* Word w of the page's bits, taken: what it held, 0 left in its place.
 * -EFAULT if the page is no longer in guest memory. */
int gring_db_take(const struct guest_mem *gm, uint64_t gpa, uint32_t w, uint64_t *bits);
/* The page's GRING_DB_WORDS words of bits, translated once for a scan
 * (valid while the memory table stays: the worker's poll), or NULL if the
 * page is no longer in guest memory; each taken with gring_db_take_word. */
uint64_t *gring_db_words(const struct guest_mem *gm, uint64_t gpa);

static inline uint64_t gring_db_take_word(uint64_t *p)
{
	/* a plain load first: most words are 0, and a swap would dirty the line */
	uint64_t bits = __atomic_load_n(p, __ATOMIC_RELAXED);

	return bits ? le64toh(__atomic_exchange_n(p, 0, __ATOMIC_ACQ_REL)) : 0;
}
/* need_wake: the sleep's number (before the worker sleeps), or 0 (it polls). */
int gring_db_need_wake(const struct guest_mem *gm, uint64_t gpa, uint32_t n);

#endif
