// SPDX-License-Identifier: GPL-2.0-only
/*
 * xsk_raw: the raw AF_XDP baseline for the benchmarks. It opens the port with
 * the daemon's own code (daemon/port/xdp_port.c: our XDP program, one XSK per RX
 * queue, the same UMEM layout and ring sizes) and serves one IPv4 address, so
 * UDP 4791 frames to it reach our sockets exactly as they reach vrdmad; on
 * top of that there is no RDMA at all, only frame counting or echoing.
 *
 *   xsk_raw sink  -i IF -a IP [-t SECS]                       count what arrives
 *   xsk_raw blast -i IF -a IP -A PEER -M MAC [-s SIZE] [-t SECS]   send flat out
 *   xsk_raw pong  -i IF -a IP [-t SECS]                       echo pings back
 *   xsk_raw ping  -i IF -a IP -A PEER -M MAC [-s SIZE] [-n N]  round trips
 *
 * Each prints one line "xsk_raw: MODE key=value ..." on stdout. Frames are
 * Ethernet + IPv4 (no options, checksummed, DF) + UDP (checksum 0) to port
 * 4791; the UDP payload starts with struct xr_hdr, so a receiver ignores any
 * other traffic the XDP program hands it. blast ends with a few END frames
 * carrying the number of frames it sent; ping ends pong the same way.
 * Where the MTU lets a frame outgrow one 4 KiB UMEM chunk the port binds with
 * XDP_USE_SG, as vrdmad's does: blast sends such frames as chains of chunks,
 * sink counts them whole. blast and sink print cpu_s, their own CPU time
 * (utime + stime of the process, as /proc/PID/stat counts them).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <net/ethernet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "xdp_port.h"
#include "xsk_ring.h"

#define XR_MAGIC	0x58534b52u	/* "XSKR" */
#define XR_SRC_PORT	49152		/* RoCE's entropy range starts here */
#define HDR_LEN		(sizeof(struct ether_header) + sizeof(struct iphdr) + \
			 sizeof(struct udphdr))
#define RX_BATCH	64
#define END_FRAMES	8		/* END markers: one lost must not hang the peer */
#define PING_WARMUP	100		/* untimed round trips first: caches, ARP-free path */
#define PING_TIMEOUT_NS	(1000ull * 1000 * 1000)
#define PING_MAX_LOST	10		/* in a row: the peer is not there */
#define POLL_MS		100		/* --sleep: wake this often to check the clock */
#define FRAME_MAX	(9216 + 18)	/* the largest frame built: a 9216 MTU + Ethernet */
#define END_PAYLOAD	64		/* END frames are small, whatever the data's size */

enum xr_kind { XR_DATA = 1, XR_END, XR_PING, XR_PONG };

/* Start of every UDP payload we send; big-endian on the wire. */
struct xr_hdr {
	uint32_t magic;
	uint32_t kind;
	uint64_t seq;		/* XR_END: the number of XR_DATA frames sent */
} __attribute__((packed));

enum mode { MODE_SINK, MODE_BLAST, MODE_PONG, MODE_PING };

struct opts {
	enum mode mode;
	const char *ifname, *local, *peer, *peer_mac, *obj;
	unsigned int size;		/* UDP payload bytes; 0 = the largest that fits */
	double seconds;			/* blast: duration; sink, pong: give up after (0: never) */
	unsigned long iters;
	int cpu;			/* -1: not pinned */
	unsigned int tx_budget;		/* 0: the kernel's default (vrdmad's is 256) */
	bool sleep, copy;
	enum vrdma_xdp_mode xdp_mode;
};

struct ctx {
	struct xdp_port port;
	struct xsk_queue *txq;		/* queue 0 sends */
	/* Free TX buffers: groups of `chunks` adjacent UMEM chunks, one frame
	 * each (1 but for blast's multi-buffer frames), named by their first. */
	uint64_t tx_free[XSK_TX_FRAMES];
	unsigned int n_tx_free, n_tx_groups, chunks;
	uint8_t peer_mac[6];
	struct in_addr local_ip, peer_ip;
	bool sleep;
	uint64_t other;			/* frames that were not ours */
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- frames ---- */

static uint16_t ip_csum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* Write a whole frame with `payload` bytes of UDP payload into f; returns its
 * length. The headers go through locals: f need not be aligned. */
static uint32_t frame_build(const struct ctx *c, uint8_t *f, unsigned int payload,
			    enum xr_kind kind, uint64_t seq)
{
	struct ether_header eth;
	struct iphdr ip = {
		.version = 4,
		.ihl = sizeof(struct iphdr) / 4,
		.tot_len = htons((uint16_t)(sizeof(struct iphdr) + sizeof(struct udphdr) + payload)),
		.frag_off = htons(IP_DF),	/* RoCE never fragments; XDP passes fragments */
		.ttl = 64,
		.protocol = IPPROTO_UDP,
		.saddr = c->local_ip.s_addr,
		.daddr = c->peer_ip.s_addr,
	};
	struct udphdr udp = {
		.source = htons(XR_SRC_PORT),
		.dest = htons(ROCE_UDP_PORT),
		.len = htons((uint16_t)(sizeof(struct udphdr) + payload)),
	};
	struct xr_hdr h = {
		.magic = htonl(XR_MAGIC),
		.kind = htonl(kind),
		.seq = htobe64(seq),
	};
	unsigned int i;

	memcpy(eth.ether_dhost, c->peer_mac, 6);
	memcpy(eth.ether_shost, c->port.mac, 6);
	eth.ether_type = htons(ETHERTYPE_IP);
	ip.check = ip_csum(&ip, sizeof(ip));
	memcpy(f, &eth, sizeof(eth));
	memcpy(f + sizeof(eth), &ip, sizeof(ip));
	memcpy(f + sizeof(eth) + sizeof(ip), &udp, sizeof(udp));
	memcpy(f + HDR_LEN, &h, sizeof(h));
	for (i = sizeof(h); i < payload; i++)
		f[HDR_LEN + i] = (uint8_t)i;
	return (uint32_t)(HDR_LEN + payload);
}

static void frame_set_seq(uint8_t *f, uint64_t seq)
{
	seq = htobe64(seq);
	memcpy(f + HDR_LEN + offsetof(struct xr_hdr, seq), &seq, sizeof(seq));
}

/* Is this a frame of ours, to our address? Fills *h (host order) and the UDP
 * payload length. The XDP program checked only the port and the address. */
static bool frame_parse(const struct ctx *c, const uint8_t *f, uint32_t len,
			struct xr_hdr *h, uint32_t *payload)
{
	struct ether_header eth;
	struct udphdr udp;
	struct iphdr ip;
	uint32_t ulen;

	if (len < HDR_LEN + sizeof(*h))
		return false;
	memcpy(&eth, f, sizeof(eth));
	memcpy(&ip, f + sizeof(eth), sizeof(ip));
	memcpy(&udp, f + sizeof(eth) + sizeof(ip), sizeof(udp));
	/* We never send IP options: a header of any other size is not ours. */
	if (eth.ether_type != htons(ETHERTYPE_IP) || ip.version != 4 ||
	    ip.ihl != sizeof(ip) / 4 || ip.protocol != IPPROTO_UDP ||
	    ip.daddr != c->local_ip.s_addr || ip_csum(&ip, sizeof(ip)) != 0 ||
	    ntohs(ip.tot_len) < sizeof(ip) + sizeof(udp) ||
	    ntohs(ip.tot_len) > len - sizeof(eth) || udp.dest != htons(ROCE_UDP_PORT))
		return false;
	ulen = ntohs(udp.len);
	if (ulen < sizeof(udp) + sizeof(*h) || ulen > ntohs(ip.tot_len) - sizeof(ip))
		return false;
	memcpy(h, f + HDR_LEN, sizeof(*h));
	if (ntohl(h->magic) != XR_MAGIC)
		return false;
	h->kind = ntohl(h->kind);
	h->seq = be64toh(h->seq);
	*payload = ulen - (uint32_t)sizeof(udp);
	return true;
}

/* ---- rings: receive with the daemon's own code (daemon/port/xsk_ring.c) ---- */

/* A whole frame of len bytes whose first buffer, f, holds flen of them (all
 * the headers: the first buffer is at least 3840 bytes or the whole frame). */
typedef void (*frame_fn)(struct ctx *c, uint8_t *f, uint32_t flen, uint32_t len, void *arg);

struct rx_call {
	struct ctx *c;
	frame_fn fn;
	void *arg;
};

static void rx_frame(void *ctx, const struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct rx_call *rc = ctx;

	(void)n;
	rc->fn(rc->c, frags[0].data, frags[0].len, len, rc->arg);
}

static unsigned int rx_all(struct ctx *c, frame_fn fn, void *arg)
{
	struct rx_call rc = { c, fn, arg };
	unsigned int qi, n = 0;

	for (qi = 0; qi < c->port.n_queues; qi++)
		n += xsk_rx_burst(&c->port.queues[qi], RX_BATCH, rx_frame, &rc);
	return n;
}

/* --sleep: wait in poll() until a socket has something to read (or timeout_ms). */
static int rx_wait(struct ctx *c, int timeout_ms)
{
	struct pollfd pfd[VRDMA_XDP_MAX_QUEUES];
	unsigned int qi;

	for (qi = 0; qi < c->port.n_queues; qi++) {
		pfd[qi].fd = xsk_socket__fd(c->port.queues[qi].xsk);
		pfd[qi].events = POLLIN;
	}
	if (poll(pfd, c->port.n_queues, timeout_ms) < 0 && errno != EINTR) {
		fprintf(stderr, "xsk_raw: poll: %s\n", strerror(errno));
		return -errno;
	}
	return 0;
}

static void tx_reap(struct ctx *c)
{
	struct xsk_queue *q = c->txq;
	uint32_t idx, i, n;

	n = xsk_ring_cons__peek(&q->comp, XSK_TX_FRAMES, &idx);
	for (i = 0; i < n; i++) {
		uint64_t addr = *xsk_ring_cons__comp_addr(&q->comp, idx + i);

		/* a group comes back with its first chunk's completion */
		if ((addr / XSK_FRAME_SIZE - XSK_RX_FRAMES) % c->chunks == 0)
			c->tx_free[c->n_tx_free++] = addr;
	}
	if (n)
		xsk_ring_cons__release(&q->comp, n);
}

/* Frames of `chunks` UMEM chunks each from now on: the TX half of queue 0's
 * UMEM (as a worker's, worker_init) in groups of adjacent chunks. Only
 * with every buffer back. */
static void tx_groups(struct ctx *c, unsigned int chunks)
{
	unsigned int k;

	c->chunks = chunks;
	c->n_tx_free = 0;
	for (k = 0; k + chunks <= XSK_TX_FRAMES; k += chunks)
		c->tx_free[c->n_tx_free++] = (uint64_t)(XSK_RX_FRAMES + k) * XSK_FRAME_SIZE;
	c->n_tx_groups = c->n_tx_free;
}

/* In copy mode the kernel sends only inside sendto(); a full device queue
 * (EAGAIN, EBUSY, ENOBUFS) just means "kick again later". */
static int tx_kick(struct ctx *c)
{
	if (!xsk_ring_prod__needs_wakeup(&c->txq->tx))
		return 0;
	if (sendto(xsk_socket__fd(c->txq->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 ||
	    errno == EAGAIN || errno == EBUSY || errno == ENOBUFS || errno == EINTR)
		return 0;
	fprintf(stderr, "xsk_raw: sendto on %s: %s\n", c->port.ifname, strerror(errno));
	return -errno;
}

/* Reserve one TX descriptor for a frame of len bytes: its chunk, to write
 * before xsk_ring_prod__submit(). NULL when no chunk or slot is free. */
static uint8_t *tx_slot(struct ctx *c, uint32_t len)
{
	struct xsk_queue *q = c->txq;
	struct xdp_desc *d;
	uint32_t idx;

	if (!c->n_tx_free)
		tx_reap(c);
	if (!c->n_tx_free || xsk_ring_prod__reserve(&q->tx, 1, &idx) != 1)
		return NULL;
	d = xsk_ring_prod__tx_desc(&q->tx, idx);
	d->addr = c->tx_free[--c->n_tx_free];
	d->len = len;
	d->options = 0;
	return xsk_umem__get_data(q->area, d->addr);
}

/* Queue one frame (copied) for sending; the caller kicks. */
static int tx_one(struct ctx *c, const uint8_t *frame, uint32_t len)
{
	uint8_t *f = tx_slot(c, len);

	if (!f)
		return -ENOBUFS;
	memcpy(f, frame, len);
	xsk_ring_prod__submit(&c->txq->tx, 1);
	return 0;
}

/* Wait (up to 1 s) until the kernel has completed everything we queued. */
static int tx_drain(struct ctx *c)
{
	uint64_t limit = now_ns() + 1000000000ull;
	int err;

	while (c->n_tx_free < c->n_tx_groups && now_ns() < limit) {
		err = tx_kick(c);
		if (err)
			return err;
		tx_reap(c);
	}
	if (c->n_tx_free < c->n_tx_groups)
		fprintf(stderr, "xsk_raw: %u frame(s) still not completed after 1 s\n",
			c->n_tx_groups - c->n_tx_free);
	return 0;
}

/* END_FRAMES end markers a millisecond apart, so the peer stops even if it
 * misses some; seq tells a sink how many data frames were sent. */
static int send_end(struct ctx *c, uint64_t seq)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	uint8_t f[HDR_LEN + END_PAYLOAD];
	uint32_t len = frame_build(c, f, END_PAYLOAD, XR_END, seq);
	unsigned int i;
	int err;

	for (i = 0; i < END_FRAMES; i++) {
		err = tx_one(c, f, len);
		if (!err)
			err = tx_kick(c);
		if (err && err != -ENOBUFS)
			return err;
		nanosleep(&ms, NULL);
	}
	return tx_drain(c);
}

/* utime + stime of the whole process so far */
static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- blast ---- */

static int run_blast(struct ctx *c, const struct opts *o)
{
	struct xsk_queue *q = c->txq;
	static uint8_t tmpl[FRAME_MAX];
	uint32_t len = frame_build(c, tmpl, o->size, XR_DATA, 0);
	unsigned int chunks = (len + XSK_FRAME_SIZE - 1) / XSK_FRAME_SIZE, i, j;
	unsigned int batch = q->tx_batch / chunks;
	uint64_t sent = 0, t0, t1, deadline;
	int err;

	/* A frame over one chunk goes out as a chain of adjacent chunks
	 * (XDP_PKT_CONTD on all but the last), as vrdmad's xsk_tx_post does. */
	tx_groups(c, chunks);
	/* Without --copy every TX group holds the frame already and only the
	 * sequence number changes: the cost of the rings alone. vrdmad copies
	 * each frame in (xsk_send), which --copy does too. */
	for (i = 0; i < c->n_tx_free; i++)
		memcpy(xsk_umem__get_data(q->area, c->tx_free[i]), tmpl, len);

	/* The best send policy we know, the port's (xsk_tx_post): queue what
	 * one sendto() sends (the TX budget), kick, take back what the kernel
	 * completed. The ring then holds one batch, not two thousand frames,
	 * and the chunks just freed, still in cache, carry the next frames. */
	if (!batch)
		batch = 1;
	t0 = now_ns();
	deadline = t0 + (uint64_t)(o->seconds * 1e9);
	while (!stop_flag && now_ns() < deadline) {
		uint32_t idx, n;

		tx_reap(c);
		n = c->n_tx_free < batch ? c->n_tx_free : batch;
		n = n && xsk_ring_prod__reserve(&q->tx, n * chunks, &idx) == n * chunks ? n : 0;
		for (i = 0; i < n; i++) {
			uint64_t addr = c->tx_free[--c->n_tx_free];
			uint8_t *f = xsk_umem__get_data(q->area, addr);

			for (j = 0; j < chunks; j++) {
				struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx + i * chunks + j);
				uint32_t left = len - j * XSK_FRAME_SIZE;

				d->addr = addr + (uint64_t)j * XSK_FRAME_SIZE;
				d->len = left < XSK_FRAME_SIZE ? left : XSK_FRAME_SIZE;
				d->options = j + 1 < chunks ? XDP_PKT_CONTD : 0;
			}
			if (o->copy)
				memcpy(f, tmpl, len);
			frame_set_seq(f, sent + i);
		}
		if (n) {
			xsk_ring_prod__submit(&q->tx, n * chunks);
			sent += n;
		}
		err = tx_kick(c);
		if (err)
			return err;
	}
	/* What is queued is sent; the time counts until the kernel took it all. */
	err = tx_drain(c);
	if (err)
		return err;
	t1 = now_ns();
	err = send_end(c, sent);
	if (err)
		return err;
	printf("xsk_raw: blast frames=%llu bytes=%llu size=%u chunks=%u seconds=%.3f mpps=%.3f "
	       "gbps=%.3f cpu_s=%.3f%s\n", (unsigned long long)sent,
	       (unsigned long long)sent * o->size, o->size, chunks, (t1 - t0) / 1e9,
	       sent / ((t1 - t0) / 1e3), sent * o->size * 8.0 / (t1 - t0), cpu_seconds(),
	       o->copy ? " copy=1" : "");
	return 0;
}

/* ---- sink ---- */

struct sink {
	uint64_t frames, bytes, first_ns, last_ns, now_ns, sent;
	bool ended;
};

static void sink_frame(struct ctx *c, uint8_t *f, uint32_t flen, uint32_t len, void *arg)
{
	struct sink *s = arg;
	struct xr_hdr h;
	uint32_t payload;

	(void)flen;
	if (!frame_parse(c, f, len, &h, &payload)) {
		c->other++;
		return;
	}
	if (h.kind == XR_END) {
		s->ended = true;
		s->sent = h.seq;
		return;
	}
	if (h.kind != XR_DATA) {
		c->other++;
		return;
	}
	if (!s->frames)
		s->first_ns = s->now_ns;
	s->last_ns = s->now_ns;
	s->frames++;
	s->bytes += payload;
}

static int run_sink(struct ctx *c, const struct opts *o)
{
	uint64_t deadline = o->seconds > 0 ? now_ns() + (uint64_t)(o->seconds * 1e9) : UINT64_MAX;
	struct xsk_kernel_stats ks = {};
	struct sink s = {};
	double secs;
	int err;

	while (!stop_flag && !s.ended) {
		/* One clock read per burst: the time of its first frame is close enough. */
		s.now_ns = now_ns();
		if (s.now_ns >= deadline)
			break;
		if (!rx_all(c, sink_frame, &s) && c->sleep) {
			err = rx_wait(c, POLL_MS);
			if (err)
				return err;
		}
	}
	if (!s.ended)
		fprintf(stderr, "xsk_raw: sink: %s before the end marker\n",
			stop_flag ? "stopped" : "timed out");
	/* Frames the kernel dropped on the way to us: the sink was too slow. */
	err = xdp_port_read_xsk_stats(&c->port, &ks);
	if (err)
		fprintf(stderr, "xsk_raw: cannot read the AF_XDP statistics: %s\n",
			strerror(-err));
	secs = (s.last_ns - s.first_ns) / 1e9;
	printf("xsk_raw: sink frames=%llu bytes=%llu seconds=%.3f mpps=%.3f gbps=%.3f cpu_s=%.3f",
	       (unsigned long long)s.frames, (unsigned long long)s.bytes, secs,
	       secs > 0 ? s.frames / secs / 1e6 : 0.0, secs > 0 ? s.bytes * 8 / secs / 1e9 : 0.0,
	       cpu_seconds());
	if (s.ended)
		printf(" sent=%llu lost=%lld", (unsigned long long)s.sent,
		       (long long)(s.sent - s.frames));
	printf(" other=%llu ring_full=%llu fill_empty=%llu dropped=%llu\n",
	       (unsigned long long)c->other, (unsigned long long)ks.rx_ring_full,
	       (unsigned long long)ks.rx_fill_ring_empty, (unsigned long long)ks.rx_dropped);
	if (!s.frames) {
		fprintf(stderr, "xsk_raw: sink: no frames received\n");
		return -ENODATA;
	}
	return 0;
}

/* ---- pong ---- */

struct pong {
	uint64_t frames, no_buf;
	bool ended;
};

/* Echo a ping with the addresses swapped; the ports stay (dst 4791). The IP
 * checksum does not change: the sum of the same words in another order. */
static void pong_frame(struct ctx *c, uint8_t *f, uint32_t flen, uint32_t len, void *arg)
{
	struct pong *p = arg;
	const uint32_t kind = htonl(XR_PONG);
	uint8_t *r, tmp[6];
	struct xr_hdr h;
	uint32_t payload;

	/* pings are single-buffer (check_size): echo only those */
	if (flen != len || !frame_parse(c, f, len, &h, &payload)) {
		c->other++;
		return;
	}
	if (h.kind == XR_END) {
		p->ended = true;
		return;
	}
	if (h.kind != XR_PING) {
		c->other++;
		return;
	}
	r = tx_slot(c, len);
	if (!r) {
		p->no_buf++;
		return;
	}
	memcpy(r, f, len);
	memcpy(tmp, r, 6);
	memcpy(r, r + 6, 6);
	memcpy(r + 6, tmp, 6);
	memcpy(tmp, r + 26, 4);			/* IPv4 saddr at 14 + 12, daddr at 14 + 16 */
	memcpy(r + 26, r + 30, 4);
	memcpy(r + 30, tmp, 4);
	memcpy(r + HDR_LEN + offsetof(struct xr_hdr, kind), &kind, sizeof(kind));
	xsk_ring_prod__submit(&c->txq->tx, 1);
	p->frames++;
}

static int run_pong(struct ctx *c, const struct opts *o)
{
	uint64_t deadline = o->seconds > 0 ? now_ns() + (uint64_t)(o->seconds * 1e9) : UINT64_MAX;
	struct pong p = {};
	int err;

	while (!stop_flag && !p.ended && now_ns() < deadline) {
		uint64_t before = p.frames;

		tx_reap(c);
		if (!rx_all(c, pong_frame, &p) && c->sleep) {
			err = rx_wait(c, POLL_MS);
			if (err)
				return err;
		}
		if (p.frames != before) {
			err = tx_kick(c);
			if (err)
				return err;
		}
	}
	tx_drain(c);
	printf("xsk_raw: pong frames=%llu no_buf=%llu other=%llu mode=%s\n",
	       (unsigned long long)p.frames, (unsigned long long)p.no_buf,
	       (unsigned long long)c->other, c->sleep ? "sleep" : "busy");
	return 0;
}

/* ---- ping ---- */

struct ping {
	uint64_t want;
	bool got;
	uint64_t stale;
};

static void ping_frame(struct ctx *c, uint8_t *f, uint32_t flen, uint32_t len, void *arg)
{
	struct ping *p = arg;
	struct xr_hdr h;
	uint32_t payload;

	(void)flen;
	if (!frame_parse(c, f, len, &h, &payload) || h.kind != XR_PONG)
		c->other++;
	else if (h.seq == p->want)
		p->got = true;
	else
		p->stale++;	/* a late reply to a round trip we gave up on */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least pct % at or below it. */
static double pct_us(const uint64_t *sorted, unsigned long n, unsigned int pct)
{
	unsigned long rank = (n * pct + 99) / 100;

	return sorted[rank ? rank - 1 : 0] / 1e3;
}

static int run_ping(struct ctx *c, const struct opts *o)
{
	uint64_t *lat, sum = 0, t0, t, i, total = PING_WARMUP + o->iters;
	unsigned long n = 0, lost = 0, lost_row = 0;
	uint8_t f[XSK_FRAME_SIZE];
	uint32_t len = frame_build(c, f, o->size, XR_PING, 0);
	struct ping p = {};
	int err = 0;

	lat = calloc(o->iters, sizeof(*lat));
	if (!lat)
		return -ENOMEM;
	for (i = 0; i < total && !stop_flag; i++) {
		frame_set_seq(f, i);
		p.want = i;
		p.got = false;
		tx_reap(c);
		t0 = now_ns();
		err = tx_one(c, f, len);
		if (!err)
			err = tx_kick(c);
		if (err)
			goto free_lat;
		/* Busy: spin on the rings (kicking the fill ring as the daemon
		 * does); --sleep: wait for the reply in poll(). */
		for (t = t0; !p.got && !stop_flag && t - t0 < PING_TIMEOUT_NS; t = now_ns()) {
			if (rx_all(c, ping_frame, &p) || !c->sleep)
				continue;
			err = rx_wait(c, POLL_MS);
			if (err)
				goto free_lat;
		}
		t = now_ns();
		if (!p.got) {
			if (stop_flag)
				break;
			lost++;
			if (++lost_row >= PING_MAX_LOST) {
				fprintf(stderr, "xsk_raw: ping: no reply from %s for %d round trips: "
					"is `xsk_raw pong` running there, and is -M its MAC?\n",
					o->peer, PING_MAX_LOST);
				err = -ETIMEDOUT;
				goto free_lat;
			}
			continue;
		}
		lost_row = 0;
		if (i >= PING_WARMUP) {
			lat[n++] = t - t0;
			sum += t - t0;
		}
	}
	err = send_end(c, n);
	if (err)
		goto free_lat;
	if (!n) {
		fprintf(stderr, "xsk_raw: ping: no round trip measured\n");
		err = -ENODATA;
		goto free_lat;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("xsk_raw: ping iters=%lu size=%u p50_us=%.2f p99_us=%.2f avg_us=%.2f "
	       "min_us=%.2f max_us=%.2f lost=%lu mode=%s\n", n, o->size, pct_us(lat, n, 50),
	       pct_us(lat, n, 99), sum / 1e3 / n, lat[0] / 1e3, lat[n - 1] / 1e3, lost,
	       c->sleep ? "sleep" : "busy");
free_lat:
	free(lat);
	return err;
}

/* ---- setup ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: xsk_raw sink  -i IFACE -a LOCAL_IP [-t SECONDS] [common]\n"
		"       xsk_raw blast -i IFACE -a LOCAL_IP -A PEER_IP -M PEER_MAC [-s SIZE]\n"
		"                     [-t SECONDS] [--copy] [common]\n"
		"       xsk_raw pong  -i IFACE -a LOCAL_IP [-t SECONDS] [common]\n"
		"       xsk_raw ping  -i IFACE -a LOCAL_IP -A PEER_IP -M PEER_MAC [-s SIZE]\n"
		"                     [-n ITERS] [common]\n"
		"common: [-o BPF_OBJ] [-m auto|native|skb] [-C CPU] [--sleep] [--tx-budget N] [-v]\n"
		"  -s SIZE     UDP payload bytes, %zu.. (default 64); 0 or max: the largest\n"
		"              the MTU lets through (ping: that fits one UMEM chunk); a blast\n"
		"              frame over one chunk is sent as a chain (multi-buffer)\n"
		"  -t SECONDS  blast: how long (default 3); sink, pong: give up after (default:\n"
		"              wait for the peer's end marker)\n"
		"  -n ITERS    ping: timed round trips (default 10000), after %d untimed\n"
		"  -o BPF_OBJ  vrdma_xdp.bpf.o (default %s)\n"
		"  -m MODE     XDP attach mode (default auto: native, else skb)\n"
		"  -C CPU      pin to this CPU\n"
		"  --sleep     wait in poll() when idle instead of busy polling\n"
		"  --copy      blast: copy each frame into its UMEM chunk, as vrdmad does\n"
		"  --tx-budget N  frames one copy-mode sendto() may send, 32..%d (kernel 6.17+;\n"
		"              default: the kernel's 32; vrdmad's tx_budget is 256)\n"
		"  -v          the port code's messages (twice: debug)\n",
		sizeof(struct xr_hdr), PING_WARMUP, VRDMA_XDP_OBJECT_DEFAULT, XSK_TX_FRAMES);
}

static int parse_num(const char *s, double min, double max, const char *what, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "xsk_raw: bad %s '%s'\n", what, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "sleep", no_argument, NULL, 'S' },
		{ "copy", no_argument, NULL, 'K' },
		{ "tx-budget", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const modes[] = { "sink", "blast", "pong", "ping" };
	int verbose = 0, ch;
	unsigned int i;
	double v;

	*o = (struct opts){ .size = 64, .iters = 10000, .cpu = -1,
			    .obj = VRDMA_XDP_OBJECT_DEFAULT };
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? -EINVAL : 1;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]) && strcmp(argv[1], modes[i]); i++)
		;
	if (i == sizeof(modes) / sizeof(modes[0])) {
		fprintf(stderr, "xsk_raw: unknown mode '%s' (sink, blast, pong or ping)\n", argv[1]);
		return -EINVAL;
	}
	o->mode = (enum mode)i;
	o->seconds = o->mode == MODE_BLAST ? 3 : 0;
	optind = 2;
	while ((ch = getopt_long(argc, argv, "i:a:A:M:s:t:n:o:m:C:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i': o->ifname = optarg; break;
		case 'a': o->local = optarg; break;
		case 'A': o->peer = optarg; break;
		case 'M': o->peer_mac = optarg; break;
		case 'o': o->obj = optarg; break;
		case 'S': o->sleep = true; break;
		case 'K': o->copy = true; break;
		case 'v': verbose++; break;
		case 's':
			if (!strcmp(optarg, "max"))
				v = 0;
			else if (parse_num(optarg, 0, FRAME_MAX - HDR_LEN, "payload size", &v))
				return -EINVAL;
			o->size = (unsigned int)v;
			break;
		case 't':
			if (parse_num(optarg, 0, 86400, "number of seconds", &o->seconds))
				return -EINVAL;
			break;
		case 'n':
			if (parse_num(optarg, 1, 1e9, "number of iterations", &v))
				return -EINVAL;
			o->iters = (unsigned long)v;
			break;
		case 'B':
			if (parse_num(optarg, 32, XSK_TX_FRAMES, "TX budget", &v))
				return -EINVAL;
			o->tx_budget = (unsigned int)v;
			break;
		case 'C':
			if (parse_num(optarg, 0, CPU_SETSIZE - 1, "CPU", &v))
				return -EINVAL;
			o->cpu = (int)v;
			break;
		case 'm':
			if (!strcmp(optarg, "auto"))
				o->xdp_mode = VRDMA_XDP_AUTO;
			else if (!strcmp(optarg, "native"))
				o->xdp_mode = VRDMA_XDP_NATIVE;
			else if (!strcmp(optarg, "skb"))
				o->xdp_mode = VRDMA_XDP_SKB;
			else {
				fprintf(stderr, "xsk_raw: -m takes auto, native or skb\n");
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	log_set_level(verbose > 1 ? VRDMA_LOG_DEBUG : verbose ? VRDMA_LOG_INFO : VRDMA_LOG_WARNING);
	if (optind < argc) {
		fprintf(stderr, "xsk_raw: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->ifname || !o->local) {
		fprintf(stderr, "xsk_raw: %s needs -i IFACE and -a LOCAL_IP\n", modes[o->mode]);
		return -EINVAL;
	}
	if ((o->mode == MODE_BLAST || o->mode == MODE_PING) && (!o->peer || !o->peer_mac)) {
		fprintf(stderr, "xsk_raw: %s needs -A PEER_IP and -M PEER_MAC\n", modes[o->mode]);
		return -EINVAL;
	}
	if (o->mode == MODE_BLAST && o->seconds <= 0) {
		fprintf(stderr, "xsk_raw: blast needs -t SECONDS > 0\n");
		return -EINVAL;
	}
	if (strlen(o->ifname) >= IF_NAMESIZE) {
		fprintf(stderr, "xsk_raw: interface name '%s' is too long\n", o->ifname);
		return -EINVAL;
	}
	if (strlen(o->obj) >= sizeof(((struct vrdma_config *)0)->xdp_object)) {
		fprintf(stderr, "xsk_raw: BPF object path is too long\n");
		return -EINVAL;
	}
	return 0;
}

/* Addresses from the command line, into c. */
static int parse_addrs(struct ctx *c, const struct opts *o, struct vrdma_gid *gid)
{
	if (inet_pton(AF_INET, o->local, &c->local_ip) != 1) {
		fprintf(stderr, "xsk_raw: -a %s is not an IPv4 address\n", o->local);
		return -EINVAL;
	}
	if (vrdma_gid_parse(gid, o->local))
		return -EINVAL;
	if (o->peer && inet_pton(AF_INET, o->peer, &c->peer_ip) != 1) {
		fprintf(stderr, "xsk_raw: -A %s is not an IPv4 address\n", o->peer);
		return -EINVAL;
	}
	if (o->peer_mac && vrdma_mac_parse(c->peer_mac, o->peer_mac)) {
		fprintf(stderr, "xsk_raw: -M %s is not a MAC address (aa:bb:cc:dd:ee:ff)\n",
			o->peer_mac);
		return -EINVAL;
	}
	return 0;
}

/* The payload must fit the MTU (no IP fragments) and, for a ping or a port
 * without multi-buffer, one UMEM chunk less the XDP headroom, as the
 * receiver sees it. */
static int check_size(const struct ctx *c, struct opts *o)
{
	bool chain = c->port.multi_buffer && o->mode == MODE_BLAST;
	unsigned int max = chain ? FRAME_MAX - HDR_LEN : XSK_MAX_SINGLE_FRAME - HDR_LEN;
	unsigned int mtu_max = c->port.mtu - sizeof(struct iphdr) - sizeof(struct udphdr);

	if (mtu_max < max)
		max = mtu_max;
	if (!o->size)
		o->size = max;
	if (o->size < sizeof(struct xr_hdr) || o->size > max) {
		fprintf(stderr, "xsk_raw: payload size %u: it must be %zu..%u (MTU %u on %s%s)\n",
			o->size, sizeof(struct xr_hdr), max, c->port.mtu, c->port.ifname,
			chain ? "" : ", one frame in a UMEM chunk");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct vrdma_config cfg;	/* 4 KiB of path: not on the stack */
	static struct ctx c;
	const struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART: poll returns */
	struct vrdma_gid gid;
	struct opts o;
	int err;

	err = parse_opts(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	err = parse_addrs(&c, &o, &gid);
	if (err)
		return 2;
	c.sleep = o.sleep;
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "xsk_raw: cannot pin to CPU %d: %s\n", o.cpu, strerror(errno));
			return 1;
		}
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* What vrdmad would read from [port] of its config. */
	snprintf(cfg.path, sizeof(cfg.path), "xsk_raw command line");
	snprintf(cfg.interface, sizeof(cfg.interface), "%s", o.ifname);
	snprintf(cfg.xdp_object, sizeof(cfg.xdp_object), "%s", o.obj);
	cfg.xdp_mode = o.xdp_mode;
	cfg.zerocopy = VRDMA_ZC_AUTO;
	cfg.queues = 0;			/* every RX queue, as vrdmad */
	cfg.workers = 1;
	cfg.log_level = log_get_level();
	cfg.tx_budget = o.tx_budget ? o.tx_budget : XSK_TX_BATCH;

	err = xdp_port_open(&c.port, &cfg);
	if (err) {
		fprintf(stderr, "xsk_raw: cannot open the AF_XDP port on %s: %s\n", o.ifname,
			strerror(-err));
		return 1;
	}
	err = xdp_port_serve_gid(&c.port, &gid, 0);
	if (err) {
		fprintf(stderr, "xsk_raw: cannot steer %s to our sockets: %s\n", o.local,
			strerror(-err));
		goto close_port;
	}
	c.txq = &c.port.queues[0];
	tx_groups(&c, 1);
	/* The port warns and sends 32 where the kernel refuses; a bench run
	 * asked for a budget must have it. */
	if (o.tx_budget && c.txq->tx_batch != o.tx_budget) {
		err = -EOPNOTSUPP;
		fprintf(stderr, "xsk_raw: cannot set the TX budget to %u: %s (-v says why)\n",
			o.tx_budget, xdp_port_zerocopy(&c.port) ? "copy mode only" :
			"the kernel refused it (6.17 or later needed)");
		goto close_port;
	}
	if (o.mode == MODE_BLAST || o.mode == MODE_PING) {
		err = check_size(&c, &o);
		if (err)
			goto close_port;
	}
	fprintf(stderr, "xsk_raw: %s on %s (%s): XDP %s, AF_XDP %s, %u queue(s), MTU %u%s, %s\n",
		argv[1], c.port.ifname, o.local, xdp_port_mode_name(&c.port),
		xdp_port_zerocopy(&c.port) ? "zero-copy" : "copy mode", c.port.n_queues,
		c.port.mtu, c.port.multi_buffer ? " (multi-buffer)" : "",
		o.sleep ? "sleeping in poll()" : "busy polling");

	switch (o.mode) {
	case MODE_SINK: err = run_sink(&c, &o); break;
	case MODE_BLAST: err = run_blast(&c, &o); break;
	case MODE_PONG: err = run_pong(&c, &o); break;
	case MODE_PING: err = run_ping(&c, &o); break;
	}
	fflush(stdout);
close_port:
	/* Detaches the program: nothing of ours stays on the interface. */
	xdp_port_close(&c.port);
	return err ? 1 : 0;
}
