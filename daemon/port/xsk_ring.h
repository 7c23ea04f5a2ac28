/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The rings of one AF_XDP socket, as the worker that owns its queue drives
 * them: whole frames from the RX ring, their buffers back to the fill ring
 * as it needs them; UMEM frames for transmission, the TX ring, the
 * completion ring.
 * No locks: one thread per queue.
 */
#ifndef VRDMAD_XSK_RING_H
#define VRDMAD_XSK_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "codec.h"
#include "xdp_port.h"

/* Handle one received frame (its buffers, in order, and its length). */
typedef void (*xsk_frame_fn)(void *ctx, const struct roce_frag *frags, unsigned int n,
			     uint32_t len);

/* The receive chunks of a new socket: XSK_FILL_START into the fill ring,
 * the rest spare. 0 or -ENOSPC. */
int xsk_fill_init(struct xsk_queue *q);
/* Whole frames from q's RX ring, at most max buffers: fn for each, then
 * the fill ring is topped up to its target from the chunks freed last.
 * Returns the buffers taken. */
unsigned int xsk_rx_burst(struct xsk_queue *q, unsigned int max, xsk_frame_fn fn, void *ctx);

/* Descriptors a copy-mode sendto sends at most by default (the kernel's
 * TX_BATCH_SIZE); xdp_port raises it to [port] tx_budget where it can. */
#define XSK_TX_BATCH	32

/* The transmit half of a queue's UMEM, kept by its one sender. */
struct xsk_tx_pool {
	struct xsk_queue *q;
	uint64_t *free;			/* frames in neither the TX nor the completion ring */
	unsigned int n_free;
	unsigned int unkicked;		/* descriptors posted since the last kick */
};

int xsk_tx_pool_init(struct xsk_tx_pool *p, struct xsk_queue *q);
void xsk_tx_pool_fini(struct xsk_tx_pool *p);
/* Frames the kernel has sent, back to the pool. */
void xsk_tx_reclaim(struct xsk_tx_pool *p);
/* Tell the kernel about frames in the TX ring; returns how many it has not
 * taken yet (the caller kicks again while any are left). */
uint32_t xsk_tx_kick(struct xsk_tx_pool *p);
/* n UMEM frames, with room for them in the TX ring, into addr; false when
 * there are not that many now. */
bool xsk_tx_take(struct xsk_tx_pool *p, unsigned int n, uint64_t *addr);
void xsk_tx_give_back(struct xsk_tx_pool *p, const uint64_t *addr, unsigned int n);
/* The frame of len bytes in the n frames at addr (from xsk_tx_take) onto
 * the TX ring; false (the frames given back) if it had no room after all. */
bool xsk_tx_post(struct xsk_tx_pool *p, const uint64_t *addr, unsigned int n, uint32_t len);

static inline uint8_t *xsk_tx_data(const struct xsk_tx_pool *p, uint64_t addr)
{
	return xsk_umem__get_data(p->q->area, addr);
}

#endif
