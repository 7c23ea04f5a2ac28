/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The device side of a split virtqueue (virtio 1.1 section 2.6). Everything
 * the driver wrote is read once into local copies and checked: descriptor
 * indices, chain length (loops), indirect tables, the readable-then-writable
 * order, and every buffer's guest address through the memory table. A
 * violation is reported as a negative errno; the caller marks the device
 * broken.
 */
#ifndef VRDMAD_VIRTQ_H
#define VRDMAD_VIRTQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "guest_mem.h"
#include "vhost_user.h"

#define VIRTQ_MAX_IOV 64	/* buffers in one chain; more is a violation */

struct virtq {
	uint16_t num;			/* 0: not set */
	bool have_addr;
	bool enabled;			/* SET_VRING_ENABLE */
	bool kicked;			/* SET_VRING_KICK seen: started */
	uint64_t desc_uva, avail_uva, used_uva;
	struct vring_desc *desc;	/* host pointers, valid with the memory table */
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t last_avail;		/* next avail entry to take */
	uint16_t used_idx;		/* next used entry to fill */
	int kick_fd, call_fd, err_fd;	/* -1: none */
};

struct virtq_elem {
	uint16_t head;
	unsigned int n_out, n_in;	/* device-readable, then device-writable */
	struct iovec out[VIRTQ_MAX_IOV];
	struct iovec in[VIRTQ_MAX_IOV];
	uint64_t out_len, in_len;
};

void virtq_init(struct virtq *vq);
/* Close the eventfds and forget everything. */
void virtq_reset(struct virtq *vq);
/* Resolve the ring addresses through gm: -EFAULT if a ring is not inside one
 * region, -EINVAL if misaligned. Called on SET_VRING_ADDR and whenever the
 * memory table changes. */
int virtq_map(struct virtq *vq, const struct guest_mem *gm);
/* Started and enabled, with rings mapped. */
static inline bool virtq_ready(const struct virtq *vq)
{
	return vq->num && vq->desc && vq->enabled && vq->kicked;
}

/* Take the next chain: 1 with *e filled, 0 when none is available, or a
 * negative errno for a violation. */
int virtq_pop(struct virtq *vq, const struct guest_mem *gm, struct virtq_elem *e);
/* Give back the chain just taken, untouched (a full queue downstream). */
void virtq_unpop(struct virtq *vq);
/* Return a chain to the driver with len bytes written. */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t len);
/* Return up to max of the chains available now to the driver unread, each
 * used with length 0 (their object is gone): how many, or a negative errno
 * for a violation (a head out of range, more available than num). Only the
 * avail ring is read, so each chain costs the same however long it is. */
int virtq_discard(struct virtq *vq, unsigned int max);
/* Signal the call eventfd unless the driver asked for no interrupt;
 * force ignores that flag (REQ_NOTIFY_CQ asked for it). Whether it did. */
bool virtq_notify(struct virtq *vq, bool force);
/* Entries the driver made available and we did not take yet. */
bool virtq_has_work(const struct virtq *vq);
/* Ask the driver for kicks (before sleeping) or not (while polling). */
void virtq_set_kicks(struct virtq *vq, bool wanted);

/* Copy from / to the chain's buffers at a byte offset; returns bytes copied. */
uint64_t virtq_read(const struct virtq_elem *e, uint64_t off, void *buf, uint64_t len);
uint64_t virtq_write(const struct virtq_elem *e, uint64_t off, const void *buf, uint64_t len);

#endif
