// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-many-qps [-d DEVICE] [-g GID_INDEX] [-q NQP] [-p PORT] [-w WINDOW] [SERVER]
 * NQP RC QPs of one process (4096 by default) connected one to one to as
 * many of a peer's: the same program on another device, the server without
 * SERVER, the client with its address. GIDs and QP numbers go over TCP.
 * Every QP pair then carries one 64 B SEND each way whose data names the
 * pair (its index and both QP numbers), checked where it lands: the client
 * sends on every QP, the server checks each message and answers on the QP
 * it came in on with the bytes inverted, the client checks each answer;
 * WINDOW (256) round trips are under way at a time, each answer letting
 * the client send on the next pair (all 4096 at once overflowed the
 * receive frames of a vrdmad starved of CPU by two TCG guests, and the
 * resends with them: issue 30's note).
 * On ABI v2 (docs/virtio-rdma.md section 9) every QP is a pair of rings in
 * this process's memory with a doorbell bit, so NQP is bounded by the VM's
 * ring_max_qp, not by virtqueues.
 *
 * Prints what it did and "vrdma-many-qps: N QPs, N messages each way, data
 * checked"; exits 1 on any error, naming it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "self_rts.h"

#define MSG 64

static int fail(const char *what)
{
	fprintf(stderr, "vrdma-many-qps: %s\n", what);
	return 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int full_io(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int fd = -1, i;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	/* the server may still be creating its QPs */
	for (i = 0; i < 600 && fd < 0; i++) {
		fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			close(fd);
			fd = -1;
			usleep(100000);
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* The server listens before it creates its QPs, so a client that comes
 * early waits in connect's backlog, not in a retry loop. */
static int tcp_listen(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	int one = 1, lfd;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1)) {
		close(lfd);
		return -1;
	}
	return lfd;
}

/* The 64 bytes pair i carries: its index and both QP numbers (the client's
 * first), then bytes that depend on all three; answers are inverted. */
static void fill(uint8_t *m, uint32_t i, uint32_t cqpn, uint32_t sqpn, bool answer)
{
	uint32_t w[3] = { htonl(i), htonl(cqpn), htonl(sqpn) };
	unsigned int k;

	memcpy(m, w, sizeof(w));
	for (k = sizeof(w); k < MSG; k++)
		m[k] = (uint8_t)(i * 131 + cqpn * 7 + sqpn + k);
	if (answer)
		for (k = 0; k < MSG; k++)
			m[k] = (uint8_t)~m[k];
}

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;		/* nqp receive slots, then nqp send slots */
	struct ibv_qp **qp;
	uint32_t *peer_qpn;
	uint32_t nqp;
};

static int post_recv(struct side *s, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->buf + (size_t)i * MSG),
		.length = MSG, .lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp[i], &wr, &bad);
}

static int post_send(struct side *s, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->buf + ((size_t)s->nqp + i) * MSG),
		.length = MSG, .lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (1ULL << 32) | i, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(s->qp[i], &wr, &bad);
}

/* The client's message on pair i. */
static int client_send(struct side *s, uint32_t i)
{
	fill(s->buf + ((size_t)s->nqp + i) * MSG, i, s->qp[i]->qp_num, s->peer_qpn[i], false);
	return post_send(s, i);
}

/* Poll until `want` receives have been handled (and every send completed),
 * 60 s at most. A receive on pair i: its data checked, and on the server
 * the answer posted on the same QP; on the client, the next pair's message
 * posted, so that `window` round trips are under way at a time. */
static int run(struct side *s, bool server, uint32_t want, uint32_t window)
{
	uint32_t recvs = 0, sends_done = 0, sends_posted = 0, i;
	double deadline = now_s() + 60;
	struct ibv_wc wc[64];
	uint8_t expect[MSG];

	if (!server) {
		for (i = 0; i < s->nqp && i < window; i++)
			if (client_send(s, i))
				return fail("ibv_post_send failed");
		sends_posted = i;
	}
	while (recvs < want || sends_done < sends_posted) {
		int n = ibv_poll_cq(s->cq, 64, wc), k;

		if (n < 0)
			return fail("ibv_poll_cq failed");
		if (!n && now_s() > deadline) {
			fprintf(stderr, "vrdma-many-qps: 60 s and %u of %u messages, %u of %u sends\n",
				recvs, want, sends_done, sends_posted);
			return 1;
		}
		for (k = 0; k < n; k++) {
			i = (uint32_t)wc[k].wr_id;
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "vrdma-many-qps: QP %u: %s\n", i,
					ibv_wc_status_str(wc[k].status));
				return 1;
			}
			if (wc[k].wr_id >> 32) {
				sends_done++;
				continue;
			}
			if (i >= s->nqp || wc[k].qp_num != s->qp[i]->qp_num || wc[k].byte_len != MSG)
				return fail("a receive on the wrong QP or of the wrong length");
			if (server)
				fill(expect, i, s->peer_qpn[i], s->qp[i]->qp_num, false);
			else
				fill(expect, i, s->qp[i]->qp_num, s->peer_qpn[i], true);
			if (memcmp(expect, s->buf + (size_t)i * MSG, MSG)) {
				fprintf(stderr, "vrdma-many-qps: QP %u (pair %u): data differs\n",
					s->qp[i]->qp_num, i);
				return 1;
			}
			recvs++;
			if (server) {
				fill(s->buf + ((size_t)s->nqp + i) * MSG, i, s->peer_qpn[i],
				     s->qp[i]->qp_num, true);
				if (post_send(s, i))
					return fail("ibv_post_send failed");
				sends_posted++;
			} else if (sends_posted < s->nqp) {
				if (client_send(s, sends_posted))
					return fail("ibv_post_send failed");
				sends_posted++;
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "vrdma0", *port = "18600";
	struct ibv_device **list;
	union ibv_gid gid, peer_gid;
	struct side s = { .nqp = 4096 };
	uint32_t window = 256;
	int gid_index = 1, fd = -1, lfd = -1, c, rc = 1, nd;
	char sync = 1;
	uint32_t i, made = 0, n_net;
	uint32_t *wire;
	double t0;

	while ((c = getopt(argc, argv, "d:g:q:p:w:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'q': s.nqp = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': port = optarg; break;
		case 'w': window = (uint32_t)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: vrdma-many-qps [-d DEVICE] [-g GID_INDEX] [-q NQP] [-p PORT] [-w WINDOW] [SERVER]\n");
			return 2;
		}
	}
	if (!s.nqp || s.nqp > 65536)
		return fail("-q: 1 to 65536 QPs");
	if (!window)
		return fail("-w: at least 1 round trip at a time");
	if (optind >= argc) {
		lfd = tcp_listen(port);
		if (lfd < 0)
			return fail("cannot listen on the TCP port");
	}
	list = ibv_get_device_list(&nd);
	for (c = 0; list && c < nd; c++)
		if (!strcmp(ibv_get_device_name(list[c]), dev))
			s.ctx = ibv_open_device(list[c]);
	if (list)
		ibv_free_device_list(list);
	if (!s.ctx)
		return fail("cannot open the device");
	if (ibv_query_gid(s.ctx, 1, gid_index, &gid))
		return fail("cannot read the GID");
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = s.pd ? ibv_create_cq(s.ctx, (int)(2 * s.nqp + 64), NULL, NULL, 0) : NULL;
	s.buf = calloc((size_t)s.nqp * 2, MSG);
	s.qp = calloc(s.nqp, sizeof(*s.qp));
	s.peer_qpn = calloc(s.nqp, sizeof(*s.peer_qpn));
	wire = calloc(s.nqp, sizeof(*wire));
	if (!s.cq || !s.buf || !s.qp || !s.peer_qpn || !wire)
		return fail("cannot allocate the PD, the CQ or memory");
	s.mr = ibv_reg_mr(s.pd, s.buf, (size_t)s.nqp * 2 * MSG, IBV_ACCESS_LOCAL_WRITE);
	if (!s.mr)
		return fail("cannot register the buffer");

	t0 = now_s();
	for (made = 0; made < s.nqp; made++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = s.cq, .recv_cq = s.cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		s.qp[made] = ibv_create_qp(s.pd, &ia);
		if (!s.qp[made]) {
			fprintf(stderr, "vrdma-many-qps: QP %u of %u: ibv_create_qp: %s\n",
				made + 1, s.nqp, strerror(errno));
			goto out_destroy;
		}
		wire[made] = htonl(s.qp[made]->qp_num);
	}
	printf("%u RC QPs created in %.1f s\n", s.nqp, now_s() - t0);
	fflush(stdout);

	fd = lfd < 0 ? tcp_connect(argv[optind], port) : accept(lfd, NULL, NULL);
	if (fd < 0) {
		fail("cannot reach the peer over TCP");
		goto out_destroy;
	}
	n_net = htonl(s.nqp);
	if (full_io(fd, &n_net, 4, true) || full_io(fd, &gid, sizeof(gid), true) ||
	    full_io(fd, wire, (size_t)s.nqp * 4, true) || full_io(fd, &n_net, 4, false) ||
	    full_io(fd, &peer_gid, sizeof(peer_gid), false) || ntohl(n_net) != s.nqp ||
	    full_io(fd, s.peer_qpn, (size_t)s.nqp * 4, false)) {
		fail("the exchange with the peer failed (or its -q differs)");
		goto out_close;
	}
	t0 = now_s();
	for (i = 0; i < s.nqp; i++) {
		s.peer_qpn[i] = ntohl(s.peer_qpn[i]);
		/* a receiving vrdmad short of CPU may drop some of the
		 * messages under way: the transport's usual retries */
		if (qp_rts(s.qp[i], s.peer_qpn[i], &peer_gid, gid_index, RTS_PATIENT) ||
		    post_recv(&s, i)) {
			fprintf(stderr, "vrdma-many-qps: QP %u: to RTS or ibv_post_recv: %s\n",
				s.qp[i]->qp_num, strerror(errno));
			goto out_close;
		}
	}
	printf("%u QPs connected (RTR, RTS, a receive posted) in %.1f s\n", s.nqp, now_s() - t0);
	fflush(stdout);
	/* both sides ready before the first SEND (no RNR on a QP not yet in RTR) */
	if (full_io(fd, &sync, 1, true) || full_io(fd, &sync, 1, false)) {
		fail("the peer went away");
		goto out_close;
	}
	t0 = now_s();
	if (run(&s, lfd >= 0, s.nqp, window))
		goto out_close;
	/* the server's last answers are sent before either side tears down */
	if (full_io(fd, &sync, 1, true) || full_io(fd, &sync, 1, false)) {
		fail("the peer went away at the end");
		goto out_close;
	}
	printf("vrdma-many-qps: %u QPs, %u messages each way, data checked (%.1f s)\n",
	       s.nqp, s.nqp, now_s() - t0);
	rc = 0;
out_close:
	close(fd);
out_destroy:
	if (lfd >= 0)
		close(lfd);
	for (i = 0; i < made; i++)
		if (ibv_destroy_qp(s.qp[i]) && !rc)
			rc = fail("ibv_destroy_qp failed");
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(wire);
	free(s.peer_qpn);
	free(s.qp);
	free(s.buf);
	return rc;
}
