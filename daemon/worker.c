// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"
#include "worker.h"

#define RX_BATCH 64

const char *port_drop_name(enum port_drop d)
{
	if (d < (enum port_drop)ROCE_DROP_MAX)
		return roce_drop_name((enum roce_drop)d);
	return d == PORT_DROP_UNKNOWN_GID ? "unknown_gid" : "?";
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Single writer: a relaxed store is enough for the readers. */
static inline void stat_add(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, *p + v, __ATOMIC_RELAXED);
}

/* Until the transport exists, a valid frame is counted for its VM and
 * released; an invalid one is counted under its drop reason. */
static void rx_frame(struct worker *w, const struct roce_frag *frags, unsigned int nfrags,
		     uint32_t total_len)
{
	struct vrdma_gid gid;
	struct roce_pkt pkt;
	enum roce_drop why;
	const struct vm *vm;

	stat_add(&w->stats.rx_frames, 1);
	stat_add(&w->stats.rx_bytes, total_len);
	if (roce_parse(&pkt, frags, nfrags, &why)) {
		stat_add(&w->stats.drops[why], 1);
		return;
	}
	memcpy(gid.raw, pkt.addr.dgid, sizeof(gid.raw));
	vm = vm_table_find_gid(w->vms, &gid);
	if (!vm) {
		stat_add(&w->stats.drops[PORT_DROP_UNKNOWN_GID], 1);
		return;
	}
	stat_add(&w->stats.vm_rx_frames[vm->id], 1);
	stat_add(&w->stats.vm_rx_bytes[vm->id], total_len);
}

static unsigned int rx_burst(struct worker *w, struct xsk_queue *q)
{
	struct roce_frag frags[XSK_MAX_FRAGS];
	uint32_t idx_rx, idx_fill, i, total = 0;
	unsigned int n, done, nfrags = 0;

	n = xsk_ring_cons__peek(&q->rx, RX_BATCH, &idx_rx);
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
	/* Every buffer came from the fill ring, so there is room to give it back;
	 * the data is read before the fill entries are published. */
	while (xsk_ring_prod__reserve(&q->fill, done, &idx_fill) != done)
		;
	for (i = 0; i < done; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx_rx + i);

		stat_add(&w->stats.rx_buffers, 1);
		/* More pieces than the kernel can make (MAX_SKB_FRAGS + 1) is
		 * impossible; if it happens the frame is cut, and fails parsing. */
		if (nfrags < XSK_MAX_FRAGS) {
			frags[nfrags].data = xsk_umem__get_data(q->area, d->addr);
			frags[nfrags++].len = d->len;
		}
		total += d->len;
		if (!(d->options & XDP_PKT_CONTD)) {
			rx_frame(w, frags, nfrags, total);
			total = 0;
			nfrags = 0;
		}
		*xsk_ring_prod__fill_addr(&q->fill, idx_fill + i) =
			d->addr - d->addr % XSK_FRAME_SIZE;
	}
	xsk_ring_cons__release(&q->rx, done);
	xsk_ring_prod__submit(&q->fill, done);
	return done;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pollfd pfd[1 + VRDMA_XDP_MAX_QUEUES];
	unsigned int i, n;

	pfd[0].fd = w->stop_fd;
	pfd[0].events = POLLIN;
	for (i = 0; i < w->n_queues; i++) {
		pfd[1 + i].fd = xsk_socket__fd(w->queues[i]->xsk);
		pfd[1 + i].events = POLLIN;
	}
	for (;;) {
		atomic_store_explicit(&w->heartbeat_ns, mono_ns(), memory_order_relaxed);
		n = 0;
		for (i = 0; i < w->n_queues; i++)
			n += rx_burst(w, w->queues[i]);
		if (n)
			continue;
		if (poll(pfd, 1 + w->n_queues, WORKER_POLL_MS) < 0 && errno != EINTR) {
			log_ratelimited(VRDMA_LOG_ERROR, "worker %u: poll: %s", w->id,
					strerror(errno));
			continue;
		}
		if (pfd[0].revents & POLLIN)
			break;
	}
	return NULL;
}

static void worker_free(struct worker *w)
{
	free(w->queues);
	free(w->stats.vm_rx_frames);
	free(w->stats.vm_rx_bytes);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
}

void workers_stop(struct worker *ws, unsigned int n)
{
	uint64_t one = 1;
	unsigned int i;

	if (!ws)
		return;
	for (i = 0; i < n; i++)
		if (ws[i].started && write(ws[i].stop_fd, &one, sizeof(one)) < 0)
			log_err("worker %u: cannot signal stop: %s", i, strerror(errno));
	for (i = 0; i < n; i++) {
		if (ws[i].started)
			pthread_join(ws[i].thread, NULL);
		worker_free(&ws[i]);
	}
	free(ws);
}

int workers_start(struct worker **out, unsigned int n, struct xdp_port *port,
		  const struct vm_table *vms)
{
	unsigned int i, q, nvm = vms->n_vms ? vms->n_vms : 1;
	struct worker *ws;
	int err;

	ws = calloc(n, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		ws[i].stop_fd = -1;
	for (i = 0; i < n; i++) {
		struct worker *w = &ws[i];

		w->id = i;
		w->port = port;
		w->vms = vms;
		w->stop_fd = eventfd(0, EFD_CLOEXEC);
		w->queues = calloc(port->n_queues ? port->n_queues : 1, sizeof(*w->queues));
		w->stats.vm_rx_frames = calloc(nvm, sizeof(uint64_t));
		w->stats.vm_rx_bytes = calloc(nvm, sizeof(uint64_t));
		if (w->stop_fd < 0 || !w->queues || !w->stats.vm_rx_frames ||
		    !w->stats.vm_rx_bytes) {
			err = -ENOMEM;
			goto stop_workers;
		}
		for (q = i; q < port->n_queues; q += n)
			w->queues[w->n_queues++] = &port->queues[q];
		atomic_store(&w->heartbeat_ns, mono_ns());
	}
	for (i = 0; i < n; i++) {
		err = -pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
		if (err) {
			log_err("cannot start worker %u: %s", i, strerror(-err));
			goto stop_workers;
		}
		ws[i].started = true;
	}
	*out = ws;
	return 0;

stop_workers:
	workers_stop(ws, n);
	return err;
}
