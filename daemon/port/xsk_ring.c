// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "xsk_ring.h"

int xsk_fill_init(struct xsk_queue *q)
{
	uint32_t idx, i;

	if (xsk_ring_prod__reserve(&q->fill, XSK_FILL_START, &idx) != XSK_FILL_START)
		return -ENOSPC;
	for (i = 0; i < XSK_FILL_START; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) = (uint64_t)i * XSK_FRAME_SIZE;
	xsk_ring_prod__submit(&q->fill, XSK_FILL_START);
	q->fill_target = XSK_FILL_START;
	q->n_rx_spare = 0;
	for (i = XSK_RX_FRAMES; i-- > XSK_FILL_START;)
		q->rx_spare[q->n_rx_spare++] = i;
	return 0;
}

/* The fill ring back to fill_target entries, from the chunks freed last
 * (see struct xsk_queue). */
static void fill_top_up(struct xsk_queue *q)
{
	uint32_t held = q->fill.size - xsk_prod_nb_free(&q->fill, q->fill.size), idx, i, n;

	/* The kernel took three quarters before the worker came back: bursts
	 * here need a deeper ring. */
	if (held < q->fill_target / 4 && q->fill_target < XSK_RX_FRAMES)
		q->fill_target *= 2;
	if (held >= q->fill_target)
		return;
	n = q->fill_target - held;
	if (n > q->n_rx_spare)
		n = q->n_rx_spare;
	if (!n || xsk_ring_prod__reserve(&q->fill, n, &idx) != n)
		return;
	for (i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&q->fill, idx + i) =
			(uint64_t)q->rx_spare[--q->n_rx_spare] * XSK_FRAME_SIZE;
	xsk_ring_prod__submit(&q->fill, n);
}

unsigned int xsk_rx_burst(struct xsk_queue *q, unsigned int max, xsk_frame_fn fn, void *ctx)
{
	struct roce_frag frags[XSK_MAX_FRAGS];
	uint32_t idx_rx, i, total = 0;
	unsigned int n, done, nfrags = 0;

	n = xsk_ring_cons__peek(&q->rx, max, &idx_rx);
	/* The kernel posts all buffers of a frame at once; take only whole
	 * frames, so none straddles two bursts. */
	for (done = n; done; done--)
		if (!(xsk_ring_cons__rx_desc(&q->rx, idx_rx + done - 1)->options & XDP_PKT_CONTD))
			break;
	if (!done) {
		xsk_ring_cons__cancel(&q->rx, n);
		if (xsk_ring_prod__needs_wakeup(&q->fill))
			recvfrom(xsk_socket__fd(q->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
		return 0;
	}
	if (done < n)
		xsk_ring_cons__cancel(&q->rx, n - done);
	for (i = 0; i < done; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx_rx + i);

		/* More pieces than the kernel can make (MAX_SKB_FRAGS + 1) is
		 * impossible; if it happens the frame is cut, and fails parsing. */
		if (nfrags < XSK_MAX_FRAGS) {
			frags[nfrags].data = xsk_umem__get_data(q->area, d->addr);
			frags[nfrags++].len = d->len;
		}
		total += d->len;
		if (!(d->options & XDP_PKT_CONTD)) {
			fn(ctx, frags, nfrags, total);
			total = 0;
			nfrags = 0;
		}
		/* read (fn ran) before the chunk can go back to the kernel */
		if (q->n_rx_spare < XSK_RX_FRAMES)
			q->rx_spare[q->n_rx_spare++] = (uint32_t)(d->addr / XSK_FRAME_SIZE);
	}
	xsk_ring_cons__release(&q->rx, done);
	fill_top_up(q);
	return done;
}

int xsk_tx_pool_init(struct xsk_tx_pool *p, struct xsk_queue *q)
{
	unsigned int k;

	p->q = q;
	p->n_free = 0;
	p->free = calloc(XSK_TX_FRAMES, sizeof(*p->free));
	if (!p->free)
		return -ENOMEM;
	/* the UMEM's upper half: the lower is the fill ring's */
	for (k = 0; k < XSK_TX_FRAMES; k++)
		p->free[p->n_free++] = (uint64_t)(XSK_RX_FRAMES + k) * XSK_FRAME_SIZE;
	return 0;
}

void xsk_tx_pool_fini(struct xsk_tx_pool *p)
{
	free(p->free);
	p->free = NULL;
	p->n_free = 0;
}

void xsk_tx_reclaim(struct xsk_tx_pool *p)
{
	struct xsk_queue *q = p->q;
	uint32_t idx, i, n;

	n = xsk_ring_cons__peek(&q->comp, XSK_TX_FRAMES, &idx);
	for (i = 0; i < n; i++)
		p->free[p->n_free++] = *xsk_ring_cons__comp_addr(&q->comp, idx + i);
	if (n)
		xsk_ring_cons__release(&q->comp, n);
}

/* Copy-mode AF_XDP transmits at most q->tx_batch descriptors per sendto
 * (the kernel's TX_BATCH_SIZE, or XDP_MAX_TX_SKB_BUDGET), and a zero-copy driver may ask for another
 * wakeup: so the caller kicks again while any are left. */
uint32_t xsk_tx_kick(struct xsk_tx_pool *p)
{
	struct xsk_ring_prod *tx = &p->q->tx;
	uint32_t left = tx->size - xsk_prod_nb_free(tx, tx->size);

	p->unkicked = 0;
	if (left && xsk_ring_prod__needs_wakeup(tx))
		sendto(xsk_socket__fd(p->q->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
	return left;
}

bool xsk_tx_take(struct xsk_tx_pool *p, unsigned int n, uint64_t *addr)
{
	unsigned int i;

	if (p->n_free < n)
		xsk_tx_reclaim(p);
	if (p->n_free < n) {
		xsk_tx_kick(p);
		xsk_tx_reclaim(p);
	}
	if (p->n_free < n || xsk_prod_nb_free(&p->q->tx, n) < n)
		return false;
	for (i = 0; i < n; i++)
		addr[i] = p->free[--p->n_free];
	return true;
}

void xsk_tx_give_back(struct xsk_tx_pool *p, const uint64_t *addr, unsigned int n)
{
	while (n--)
		p->free[p->n_free++] = addr[n];
}

bool xsk_tx_post(struct xsk_tx_pool *p, const uint64_t *addr, unsigned int n, uint32_t len)
{
	struct xsk_ring_prod *tx = &p->q->tx;
	uint32_t idx, i;

	/* xsk_tx_take saw room, and only this thread produces here */
	if (xsk_ring_prod__reserve(tx, n, &idx) != n) {
		xsk_tx_give_back(p, addr, n);
		return false;
	}
	for (i = 0; i < n; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(tx, idx + i);
		uint32_t c = len - i * XSK_FRAME_SIZE;

		d->addr = addr[i];
		d->len = c < XSK_FRAME_SIZE ? c : XSK_FRAME_SIZE;
		d->options = i + 1 < n ? XDP_PKT_CONTD : 0;
	}
	xsk_ring_prod__submit(tx, n);
	/* A sendto's worth at once, not all a poll built: the kernel copies
	 * frames still in this core's cache, and their buffers come back to
	 * the top of the free stack for the next ones. */
	p->unkicked += n;
	if (p->unkicked >= p->q->tx_batch || xsk_prod_nb_free(tx, 64) < 64) {
		xsk_tx_kick(p);
		xsk_tx_reclaim(p);
	}
	return true;
}
