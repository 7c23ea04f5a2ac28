// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"
#include "worker.h"
#include "xsk_ring.h"

#define RX_BATCH 64
#define TX_RETRY_NS 1000000ull	/* 1 ms: kick a stuck TX ring again */
#define RING_BYTES (4u << 20)		/* per pair of workers */
#define EV_STOP 1ull
#define EV_WAKE 2ull
#define EV_XSK 3ull
#define EV_KICK 4ull			/* | fd << 8 */

static const char *const port_drop_names[] = {
	[PORT_DROP_UNKNOWN_GID - ROCE_DROP_MAX] = "unknown_gid",
	[PORT_DROP_HANDOVER_FULL - ROCE_DROP_MAX] = "handover_full",
	[PORT_DROP_TX_FULL - ROCE_DROP_MAX] = "tx_full",
	[PORT_DROP_TX_TOO_BIG - ROCE_DROP_MAX] = "tx_too_big",
};

const char *port_drop_name(enum port_drop d)
{
	if (d < (enum port_drop)ROCE_DROP_MAX)
		return roce_drop_name((enum roce_drop)d);
	return d < PORT_DROP_MAX ? port_drop_names[d - ROCE_DROP_MAX] : "?";
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

/* ---- handing frames over ---- */

static void wake(struct worker *w)
{
	uint64_t one = 1;

	if (atomic_load(&w->sleeping) && write(w->wake_fd, &one, sizeof(one)) < 0)
		log_ratelimited(VRDMA_LOG_ERROR, "worker %u: cannot wake: %s", w->id,
				strerror(errno));
}

/* A copy for vrdmactl capture, while one runs: CLOCK_REALTIME (pcap's
 * clock), then the frame. A full ring loses the copy, never the frame. */
static void capture(struct worker *w, enum capture_dir dir, const struct roce_frag *frags,
		    unsigned int n, uint32_t len)
{
	struct frame_rec *rec;
	struct timespec ts;
	uint64_t next, off = 0, ns;
	unsigned int i;

	if (!atomic_load_explicit(&w->capture_on, memory_order_relaxed))
		return;
	rec = frame_ring_reserve(&w->capture, len + sizeof(ns), &next);
	if (!rec) {
		stat_add(&w->stats.capture_lost, 1);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	rec->len = len + sizeof(ns);
	rec->kind = (uint16_t)dir;
	rec->vm = 0;
	memcpy(rec->data, &ns, sizeof(ns));
	for (i = 0; i < n && off < len; i++) {
		uint32_t c = frags[i].len < len - off ? frags[i].len : (uint32_t)(len - off);

		memcpy(rec->data + sizeof(ns) + off, frags[i].data, c);
		off += c;
	}
	frame_ring_commit(&w->capture, next);
}

/* A frame src received and parsed, for a device dst runs: the parsed
 * headers and the frame (its pieces made one) into dst's ring, so dst
 * neither parses it nor checks its ICRC again. */
static void hand_over(struct worker *src, struct worker *dst, uint32_t vm,
		      const struct roce_pkt *pkt, uint32_t len)
{
	struct frame_ring *r = &dst->in[src->id];
	struct frame_rec *rec;
	uint64_t next, off = sizeof(*pkt);
	unsigned int i;

	rec = frame_ring_reserve(r, sizeof(*pkt) + len, &next);
	if (!rec) {
		stat_add(&src->stats.drops[PORT_DROP_HANDOVER_FULL], 1);
		return;
	}
	rec->len = sizeof(*pkt) + len;
	rec->kind = FRAME_RX_PARSED;
	rec->vm = (uint16_t)vm;
	memcpy(rec->data, pkt, sizeof(*pkt));
	for (i = 0; i < pkt->nfrags && off < rec->len; i++) {
		uint32_t c = pkt->frags[i].len < rec->len - off ? pkt->frags[i].len :
							       (uint32_t)(rec->len - off);

		memcpy(rec->data + off, pkt->frags[i].data, c);
		off += c;
	}
	frame_ring_commit(r, next);
	stat_add(&src->stats.handed_over, 1);
	/* Publish the record before reading dst->sleeping (no lost wakeup). */
	atomic_thread_fence(memory_order_seq_cst);
	wake(dst);
}

/* VM id's device, if it is published. */
static struct vdev *dev_of_vm(const struct worker *w, uint32_t id)
{
	return id < VM_TABLE_SLOTS && w->vms->vms[id].used ? w->vms->vms[id].dev : NULL;
}

/* A parsed frame for VM vm: run it here if this worker owns the device. */
static void deliver(struct worker *w, const struct vm *vm, const struct roce_pkt *pkt,
		    uint32_t len)
{
	struct worker *owner = worker_of_vm(w->all, w->n_workers, vm->id);

	if (owner == w)
		vdev_rx(vm->dev, pkt);
	else
		hand_over(w, owner, vm->id, pkt, len);
}

static void rx_frame(struct worker *w, const struct roce_frag *frags, unsigned int nfrags,
		     uint32_t total_len)
{
	struct roce_pkt pkt;
	enum roce_drop why;
	const struct vm *vm;

	stat_add(&w->stats.rx_frames, 1);
	stat_add(&w->stats.rx_bytes, total_len);
	capture(w, CAPTURE_RX, frags, nfrags, total_len);
	if (roce_parse(&pkt, frags, nfrags, &why)) {
		stat_add(&w->stats.drops[why], 1);
		return;
	}
	vm = vm_table_find_gid_cached(w->vms, &w->rx_gid, pkt.addr.dgid);
	if (!vm) {
		stat_add(&w->stats.drops[PORT_DROP_UNKNOWN_GID], 1);
		return;
	}
	stat_add(&w->vms->vms[vm->id].rx[w->id].frames, 1);
	stat_add(&w->vms->vms[vm->id].rx[w->id].bytes, total_len);
	if (vm->dev)
		deliver(w, vm, &pkt, total_len);
}

static void rx_one(void *ctx, const struct roce_frag *frags, unsigned int n, uint32_t len)
{
	rx_frame(ctx, frags, n, len);
}

static unsigned int rx_burst(struct worker *w, struct xsk_queue *q)
{
	unsigned int n = xsk_rx_burst(q, RX_BATCH, rx_one, w);

	stat_add(&w->stats.rx_buffers, n);
	return n;
}

/* ---- transmit ---- */

/* A frame another worker built for this one's queue: copied into UMEM. */
static void xsk_send(struct worker *w, const uint8_t *frame, uint32_t len)
{
	struct roce_frag f = { .data = (uint8_t *)frame, .len = len };
	unsigned int need = (len + XSK_FRAME_SIZE - 1) / XSK_FRAME_SIZE, i;
	uint64_t addr[XSK_MAX_FRAGS];

	if ((need > 1 && !w->port->multi_buffer) || need > XSK_MAX_FRAGS) {
		stat_add(&w->stats.drops[PORT_DROP_TX_TOO_BIG], 1);
		return;
	}
	if (!xsk_tx_take(&w->tx_pool, need, addr)) {
		stat_add(&w->stats.drops[PORT_DROP_TX_FULL], 1);
		return;
	}
	capture(w, CAPTURE_TX, &f, 1, len);	/* what goes on the wire, as it goes */
	for (i = 0; i < need; i++) {
		uint32_t c = len - i * XSK_FRAME_SIZE;

		memcpy(xsk_tx_data(&w->tx_pool, addr[i]), frame + i * XSK_FRAME_SIZE,
		       c < XSK_FRAME_SIZE ? c : XSK_FRAME_SIZE);
	}
	if (!xsk_tx_post(&w->tx_pool, addr, need, len)) {
		stat_add(&w->stats.drops[PORT_DROP_TX_FULL], 1);
		return;
	}
	stat_add(&w->stats.tx_frames, 1);
	stat_add(&w->stats.tx_bytes, len);
}

/* The engine asks for the time once per poll and once per ACK: within one
 * pass of the loop the loop's clock is close enough for timers of 4 us and
 * up. Outside it (the control thread, the worker quiesced) a fresh one. */
static uint64_t host_now(void *ctx)
{
	struct worker *w = ctx;

	return w->poll_ns ? w->poll_ns : mono_ns();
}

/* Give back what a tx_alloc took and no tx_send used. */
static void tx_cancel(struct worker *w)
{
	struct tx_pending *t = &w->tx;

	if (t->target == TX_NIC)
		xsk_tx_give_back(&w->tx_pool, t->addr, t->n);
	t->n = 0;
	t->target = TX_NONE;	/* a ring record is not published until committed */
}

/* Room for the frame in dst's ring from w, as a record of kind for vm. */
static unsigned int tx_alloc_ring(struct worker *w, struct worker *dst, enum frame_kind kind,
				  uint32_t vm, uint32_t len, struct roce_frag *frags)
{
	struct frame_ring *r = &dst->in[w->id];
	struct tx_pending *t = &w->tx;
	uint64_t next;

	t->rec = frame_ring_reserve(r, len, &next);
	if (!t->rec)
		return 0;	/* dst is behind: the engine tries again */
	t->target = TX_RING;
	t->ring = r;
	t->dst = dst;
	t->base = next - frame_rec_size(len);
	t->kind = (uint16_t)kind;
	t->vm = (uint16_t)vm;
	frags[0] = (struct roce_frag){ t->rec->data, len };
	return 1;
}

/* UMEM frames of the worker's NIC queue, and room in its TX ring. */
static unsigned int tx_alloc_nic(struct worker *w, uint32_t len, struct roce_frag *frags,
				 unsigned int max)
{
	unsigned int need = (len + XSK_FRAME_SIZE - 1) / XSK_FRAME_SIZE;
	struct tx_pending *t = &w->tx;

	if (need > 1 && !w->port->multi_buffer) {
		t->target = TX_DROP;
		t->drop = PORT_DROP_TX_TOO_BIG;
		frags[0] = (struct roce_frag){ w->tx_buf, sizeof(w->tx_buf) };
		return 1;
	}
	/* None free: the engine keeps the frame and tries again on its next poll. */
	if (need > max || need > XSK_MAX_FRAGS || !xsk_tx_take(&w->tx_pool, need, t->addr))
		return 0;
	t->target = TX_NIC;
	for (t->n = 0; t->n < need; t->n++)
		frags[t->n] = (struct roce_frag){ xsk_tx_data(&w->tx_pool, t->addr[t->n]),
						  XSK_FRAME_SIZE };
	return need;
}

/* The engine knows where a frame goes before it builds it: to another VM
 * of this daemon, straight into its worker's ring (as rxe loops back); to
 * anyone else, into this worker's UMEM frames (or worker 0's ring, when
 * this worker has no NIC queue). No bounce buffer, no parsing of what we
 * built. */
static unsigned int host_tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
				  struct roce_frag *frags, unsigned int max)
{
	struct worker *w = ctx;
	const struct vm *vm;

	tx_cancel(w);
	if (!max || len > WORKER_MAX_FRAME)
		return 0;
	vm = vm_table_find_gid_cached(w->vms, &w->tx_gid, dgid);
	if (vm && vm->dev)
		return tx_alloc_ring(w, worker_of_vm(w->all, w->n_workers, vm->id), FRAME_RX,
				     vm->id, len, frags);
	if (w->txq)
		return tx_alloc_nic(w, len, frags, max);
	return tx_alloc_ring(w, &w->all[0], FRAME_TX, 0, len, frags);
}

static void tx_send_ring(struct worker *w, struct roce_frag *frags, uint32_t len)
{
	struct tx_pending *t = &w->tx;

	t->rec->len = len;
	t->rec->kind = t->kind;
	t->rec->vm = t->vm;
	if (t->kind == FRAME_RX) {
		stat_add(&w->stats.loopback_frames, 1);
		capture(w, CAPTURE_LOOPBACK, frags, 1, len);
	}
	frame_ring_commit(t->ring, t->base + frame_rec_size(len));
	if (t->dst != w) {
		stat_add(&w->stats.handed_over, 1);
		/* Publish the record before reading dst->sleeping (no lost wakeup). */
		atomic_thread_fence(memory_order_seq_cst);
		wake(t->dst);
	}
}

static void tx_send_nic(struct worker *w, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct tx_pending *t = &w->tx;

	if (t->n > n)	/* the frame needed fewer than asked for */
		xsk_tx_give_back(&w->tx_pool, t->addr + n, t->n - n);
	t->n = 0;
	capture(w, CAPTURE_TX, frags, n, len);	/* what goes on the wire, as it goes */
	if (!xsk_tx_post(&w->tx_pool, t->addr, n, len)) {
		stat_add(&w->stats.drops[PORT_DROP_TX_FULL], 1);
		return;
	}
	stat_add(&w->stats.tx_frames, 1);
	stat_add(&w->stats.tx_bytes, len);
}

static void host_tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct worker *w = ctx;

	switch (w->tx.target) {
	case TX_RING:
		tx_send_ring(w, frags, len);
		break;
	case TX_NIC:
		tx_send_nic(w, frags, n, len);
		break;
	case TX_DROP:
		stat_add(&w->stats.drops[w->tx.drop], 1);
		break;
	case TX_NONE:
		break;
	}
	w->tx.target = TX_NONE;
}

static unsigned int drain_rings(struct worker *w)
{
	unsigned int i, n = 0;

	for (i = 0; i < w->n_workers; i++) {
		struct frame_ring *r = &w->in[i];
		struct frame_rec *rec;

		while (n < 4 * RX_BATCH && (rec = frame_ring_peek(r))) {
			struct roce_frag f = { .data = rec->data, .len = rec->len };
			struct roce_pkt pkt;
			enum roce_drop why;
			struct vdev *v;

			if (rec->kind == FRAME_TX) {
				if (w->txq)
					xsk_send(w, rec->data, rec->len);
			} else if (!(v = dev_of_vm(w, rec->vm))) {
				/* gone meanwhile */
			} else if (rec->kind == FRAME_RX_PARSED) {
				memcpy(&pkt, rec->data, sizeof(pkt));
				f.data += sizeof(pkt);
				f.len -= sizeof(pkt);
				pkt.frags = &f;	/* offsets hold: the pieces are one now */
				pkt.nfrags = 1;
				vdev_rx(v, &pkt);
			} else if (roce_parse_checked(&pkt, &f, 1, &why)) {
				/* built here: every check but the ICRC */
				stat_add(&w->stats.drops[why], 1);
			} else {
				vdev_rx(v, &pkt);
			}
			frame_ring_release(r, rec);
			n++;
		}
	}
	return n;
}

/* ---- quiescing ---- */

void worker_quiesce(struct worker *w)
{
	uint64_t one = 1;

	if (w->quiesce_depth++ || !w->started)
		return;
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->pause_req, 1);
	if (write(w->wake_fd, &one, sizeof(one)) < 0)
		log_err("worker %u: cannot wake: %s", w->id, strerror(errno));
	while (!w->paused)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void worker_resume(struct worker *w)
{
	if (!w->quiesce_depth || --w->quiesce_depth || !w->started)
		return;
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->pause_req, 0);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void park(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	w->paused = true;
	pthread_cond_broadcast(&w->cond);
	while (atomic_load(&w->pause_req))
		pthread_cond_wait(&w->cond, &w->lock);
	w->paused = false;
	pthread_mutex_unlock(&w->lock);
}

static void sync_quiesce(void *ctx)
{
	worker_quiesce(ctx);
}

static void sync_resume(void *ctx)
{
	worker_resume(ctx);
}

/* Called with the worker quiesced (or not started). */
static void sync_kick_changed(void *ctx, int old_fd, int new_fd)
{
	struct worker *w = ctx;
	struct epoll_event ev = { .events = EPOLLIN };

	if (old_fd >= 0)
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, old_fd, NULL);
	if (new_fd >= 0) {
		ev.data.u64 = EV_KICK | (uint64_t)new_fd << 8;
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, new_fd, &ev))
			log_ratelimited(VRDMA_LOG_ERROR, "worker %u: cannot watch a kick fd: %s",
					w->id, strerror(errno));
	}
}

static void sync_broken(void *ctx)
{
	struct worker *w = ctx;
	uint64_t one = 1;

	if (w->broken_fd >= 0 && write(w->broken_fd, &one, sizeof(one)) < 0)
		log_ratelimited(VRDMA_LOG_ERROR, "worker %u: cannot report a broken device: %s",
				w->id, strerror(errno));
}

void worker_vdev_hooks(struct worker *w, struct eng_tx *tx, struct vdev_sync *sync)
{
	*tx = (struct eng_tx){ host_now, host_tx_alloc, host_tx_send, w };
	*sync = (struct vdev_sync){ sync_quiesce, sync_resume, sync_kick_changed, sync_broken, w };
}

/* ---- the loop ---- */

static bool rings_empty(struct worker *w)
{
	unsigned int i;

	for (i = 0; i < w->n_workers; i++)
		if (!frame_ring_empty(&w->in[i]))
			return false;
	return true;
}

/* The XSK sockets are in the epoll set only while the worker sleeps: a
 * watched socket has a waiter, so every frame the kernel puts in its RX
 * ring, and every TX skb it frees, would take the wakeup path (a lock with
 * interrupts off and epoll's callback) — about a tenth of a core at 64 B
 * frames. Adding a socket polls it, so a frame that came before is seen. */
static int watch_queues(struct worker *w, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_XSK };
	unsigned int q;
	int fd, err;

	for (q = 0; q < w->n_queues; q++) {
		fd = xsk_socket__fd(w->queues[q]->xsk);
		if (on && epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev))
			goto unwatch;
		if (!on)
			epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
	}
	return 0;

unwatch:
	err = -errno;
	log_ratelimited(VRDMA_LOG_ERROR, "worker %u: cannot watch an XDP socket: %s", w->id,
			strerror(-err));
	while (q--)
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, xsk_socket__fd(w->queues[q]->xsk), NULL);
	return err;
}

static void sleep_until(struct worker *w, uint64_t next_timer)
{
	struct epoll_event ev[32];
	struct timespec ts;
	uint64_t now = mono_ns(), wait = WORKER_POLL_MS * 1000000ull;
	bool work = false;
	unsigned int i;
	int n;

	if (next_timer && next_timer > now && next_timer - now < wait)
		wait = next_timer - now;
	else if (next_timer && next_timer <= now)
		return;
	atomic_store(&w->sleeping, 1);
	for (i = 0; i < w->n_own; i++)
		work |= vdev_want_kicks(w->own[i], true);
	if (!work && rings_empty(w) && !watch_queues(w, true)) {
		ts.tv_sec = (time_t)(wait / 1000000000ull);
		ts.tv_nsec = (long)(wait % 1000000000ull);
		n = epoll_pwait2(w->epfd, ev, 32, &ts, NULL);
		if (n < 0 && errno != EINTR)
			log_ratelimited(VRDMA_LOG_ERROR, "worker %u: epoll: %s", w->id,
					strerror(errno));
		for (i = 0; n > 0 && i < (unsigned int)n; i++) {
			uint64_t v;

			if ((ev[i].data.u64 & 0xff) == EV_KICK) {
				/* the count of kicks since the last read (EAGAIN:
				 * drained already) */
				if (read((int)(ev[i].data.u64 >> 8), &v, sizeof(v)) == sizeof(v))
					stat_add(&w->stats.kicks, v);
			} else if (ev[i].data.u64 == EV_WAKE) {
				if (read(w->wake_fd, &v, sizeof(v)) < 0) {
					/* EAGAIN: another wake got it */
				}
			}
		}
		watch_queues(w, false);
		stat_add(&w->stats.wakeups, 1);
	}
	atomic_store(&w->sleeping, 0);
	for (i = 0; i < w->n_own; i++)
		vdev_want_kicks(w->own[i], false);
}

static bool stop_requested(struct worker *w)
{
	return atomic_load_explicit(&w->stop, memory_order_relaxed);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t idle_since = mono_ns(), next_timer, t, now;
	unsigned int i, n;

	for (;;) {
		now = mono_ns();
		atomic_store_explicit(&w->heartbeat_ns, now, memory_order_relaxed);
		if (atomic_load_explicit(&w->pause_req, memory_order_relaxed))
			park(w);
		if (stop_requested(w))
			break;
		n = 0;
		w->poll_ns = now;
		for (i = 0; i < w->n_queues; i++)
			n += rx_burst(w, w->queues[i]);
		n += drain_rings(w);
		next_timer = 0;
		for (i = 0; i < w->n_own; i++) {
			n += vdev_poll(w->own[i], &t);
			if (t && (!next_timer || t < next_timer))
				next_timer = t;
		}
		w->poll_ns = 0;
		if (w->txq) {
			uint32_t left = xsk_tx_kick(&w->tx_pool);

			xsk_tx_reclaim(&w->tx_pool);
			/* While the kernel takes frames, keep kicking; if it
			 * stops (a link down), retry on a short timer. */
			if (left && left != w->tx_left)
				n++;
			w->tx_left = left;
			if (left && (!next_timer || next_timer > now + TX_RETRY_NS))
				next_timer = now + TX_RETRY_NS;
		}
		if (n) {
			idle_since = now;
			continue;
		}
		/* Spin, but give the core to anyone else who wants it: the
		 * guests' vCPUs run on these cores too, and a worker that only
		 * spins delays the very post or poll it is waiting for. */
		if (now - idle_since < w->idle_spin_ns) {
			sched_yield();
			continue;
		}
		sleep_until(w, next_timer);
	}
	return NULL;
}

/* ---- the pool ---- */

static void worker_free(struct worker *w)
{
	unsigned int i;

	if (w->in)
		for (i = 0; i < w->n_workers; i++)
			frame_ring_free(&w->in[i]);
	free(w->in);
	frame_ring_free(&w->capture);
	free(w->queues);
	free(w->own);
	xsk_tx_pool_fini(&w->tx_pool);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	if (w->epfd >= 0)
		close(w->epfd);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
}

void workers_stop(struct worker *ws, unsigned int n)
{
	uint64_t one = 1;
	unsigned int i;

	if (!ws)
		return;
	for (i = 0; i < n; i++) {
		atomic_store(&ws[i].stop, 1);
		if (ws[i].started && write(ws[i].stop_fd, &one, sizeof(one)) < 0)
			log_err("worker %u: cannot signal stop: %s", i, strerror(errno));
	}
	for (i = 0; i < n; i++) {
		if (ws[i].started)
			pthread_join(ws[i].thread, NULL);
		ws[i].started = false;
	}
}

void workers_free(struct worker *ws, unsigned int n)
{
	unsigned int i;

	if (!ws)
		return;
	workers_stop(ws, n);
	for (i = 0; i < n; i++)
		worker_free(&ws[i]);
	free(ws);
}

static int watch(struct worker *w, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int worker_init(struct worker *ws, unsigned int i, unsigned int n, struct xdp_port *port,
		       struct vm_table *vms, unsigned int idle_spin_us, int broken_fd)
{
	unsigned int q, k, nvm = VM_TABLE_SLOTS;
	struct worker *w = &ws[i];
	int err;

	w->id = i;
	w->cpu = -1;
	w->all = ws;
	w->n_workers = n;
	w->port = port;
	w->vms = vms;
	w->idle_spin_ns = (uint64_t)idle_spin_us * 1000;
	w->broken_fd = broken_fd;
	w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->queues = calloc(port->n_queues ? port->n_queues : 1, sizeof(*w->queues));
	w->own = calloc(nvm, sizeof(*w->own));
	w->in = calloc(n, sizeof(*w->in));
	if (w->stop_fd < 0 || w->wake_fd < 0 || w->epfd < 0 || !w->queues || !w->own || !w->in)
		return -ENOMEM;
	for (k = 0; k < n; k++)
		if (frame_ring_init(&w->in[k], RING_BYTES))
			return -ENOMEM;
	if (frame_ring_init(&w->capture, CAPTURE_RING_BYTES))
		return -ENOMEM;
	if ((err = watch(w, w->stop_fd, EV_STOP)) || (err = watch(w, w->wake_fd, EV_WAKE)))
		return err;
	for (q = i; q < port->n_queues; q += n)
		w->queues[w->n_queues++] = &port->queues[q];
	if (w->n_queues) {
		w->txq = w->queues[0];
		err = xsk_tx_pool_init(&w->tx_pool, w->txq);
		if (err)
			return err;
	}
	atomic_store(&w->heartbeat_ns, mono_ns());
	return 0;
}

int workers_create(struct worker **out, unsigned int n, struct xdp_port *port,
		   struct vm_table *vms, unsigned int idle_spin_us, int broken_fd)
{
	struct worker *ws;
	unsigned int i;
	int err;

	ws = calloc(n, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ws[i].stop_fd = ws[i].wake_fd = ws[i].epfd = -1;
		pthread_mutex_init(&ws[i].lock, NULL);
		pthread_cond_init(&ws[i].cond, NULL);
	}
	for (i = 0; i < n; i++) {
		err = worker_init(ws, i, n, port, vms, idle_spin_us, broken_fd);
		if (err)
			goto free_workers;
	}
	*out = ws;
	return 0;

free_workers:
	workers_free(ws, n);
	return err;
}

void workers_quiesce(struct worker *ws, unsigned int n)
{
	unsigned int i;

	/* One at a time is safe: a worker never waits for another. */
	for (i = 0; i < n; i++)
		worker_quiesce(&ws[i]);
}

void workers_resume(struct worker *ws, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		worker_resume(&ws[i]);
}

void worker_own(struct worker *w, struct vdev *v)
{
	w->own[w->n_own++] = v;
}

void worker_disown(struct worker *w, struct vdev *v)
{
	unsigned int i;

	for (i = 0; i < w->n_own; i++)
		if (w->own[i] == v) {
			w->own[i] = w->own[--w->n_own];
			break;
		}
}

void workers_pin(struct worker *ws, unsigned int n, const uint16_t *cpus)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ws[i].cpu = cpus[i];
}

/* A pinned worker starts on its CPU: it never runs, nor touches its
 * rings, anywhere else. */
static int start_one(struct worker *w)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	if (w->cpu < 0)
		return -pthread_create(&w->thread, NULL, worker_main, w);
	err = -pthread_attr_init(&attr);
	if (err)
		return err;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	err = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!err)
		err = -pthread_create(&w->thread, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	return err;
}

int workers_run(struct worker *ws, unsigned int n)
{
	char name[16];
	unsigned int i;
	int err;

	for (i = 0; i < n; i++) {
		err = start_one(&ws[i]);
		if (!err) {	/* for top -H, perf and /proc: a name, not vrdmad */
			snprintf(name, sizeof(name), "vrdmad-w%u", i % 100);	/* at most 64 */
			pthread_setname_np(ws[i].thread, name);
		}
		if (err == -EINVAL && ws[i].cpu >= 0) {
			log_err("cannot start worker %u on CPU %d (worker_cpus): vrdmad may not run there; "
				"list CPUs that are online and in its affinity (taskset -pc %d)",
				i, ws[i].cpu, (int)getpid());
		} else if (err) {
			log_err("cannot start worker %u: %s", i, strerror(-err));
		}
		if (err) {
			workers_stop(ws, n);
			return err;
		}
		ws[i].started = true;
	}
	return 0;
}
