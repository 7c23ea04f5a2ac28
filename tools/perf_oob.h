/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * perftest's out-of-band exchange (perftest_communication.c of perftest
 * 4.5-0.17, VERSION "6.06"), the variant without -R/rdma_cm: one TCP
 * connection, fixed-size messages, the client (the side given a server name)
 * always writes first and the server reads first. perftest reads each message
 * with a single read() of the whole size, so every message here goes out in
 * one send() of exactly that size.
 *
 * Included by vrdma-perf.c only (the Makefile rule compiles one .c).
 */
#ifndef PERF_OOB_H
#define PERF_OOB_H

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OOB_VERSION		"6.06"	/* perftest 4.5-0.17's configure.ac */
#define OOB_MAX_VERSION		16	/* MAX_VERSION: the version message */
#define OOB_KEY_MSG_SIZE_GID	108	/* KEY_MSG_SIZE_GID: one QP's address */
#define OOB_KEY_PRINT_FMT_GID	"%04x:%04x:%06x:%06x:%08x:%016llx:" \
	"%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:" \
	"%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:"

/* perftest's struct pingpong_dest: what one QP tells the other side. */
struct oob_dest {
	int lid;
	int out_reads;
	int qpn;
	int psn;
	unsigned int rkey;
	unsigned long long vaddr;
	uint8_t gid[16];
	unsigned int srqn;
};

/* perftest's struct bw_report_data, the part that crosses the wire. */
struct oob_bw_rep {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};

struct oob {
	int fd;
	bool client;		/* writes first */
};

static int64_t oob_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The whole message, or -ETIMEDOUT / -ECONNRESET (the peer went away): a
 * perftest that dies mid-test must not leave us blocked. */
static int oob_read(struct oob *o, void *buf, size_t len, int timeout_ms)
{
	int64_t deadline = oob_now_ms() + timeout_ms;
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = o->fd, .events = POLLIN };
		int64_t left = deadline - oob_now_ms();
		ssize_t n;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = recv(o->fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int oob_write(struct oob *o, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		/* MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE */
		ssize_t n = send(o->fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ctx_xchg_data_ethernet: client writes then reads, server the reverse. */
static int oob_xchg(struct oob *o, const void *mine, void *theirs, size_t len, int timeout_ms)
{
	int ret;

	if (o->client) {
		ret = oob_write(o, mine, len);
		if (!ret)
			ret = oob_read(o, theirs, len, timeout_ms);
	} else {
		ret = oob_read(o, theirs, len, timeout_ms);
		if (!ret)
			ret = oob_write(o, mine, len);
	}
	return ret;
}

/* ethernet_write_keys, the GID form (a RoCE port always has a GID index). */
static void oob_format_dest(const struct oob_dest *d, char msg[OOB_KEY_MSG_SIZE_GID])
{
	const uint8_t *g = d->gid;

	memset(msg, 0, OOB_KEY_MSG_SIZE_GID);
	snprintf(msg, OOB_KEY_MSG_SIZE_GID, OOB_KEY_PRINT_FMT_GID,
		 (unsigned int)d->lid, (unsigned int)d->out_reads, (unsigned int)d->qpn,
		 (unsigned int)d->psn, d->rkey, d->vaddr,
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], d->srqn);
}

/* ethernet_read_keys: colon-separated hex fields. */
static int oob_parse_dest(const char msg[OOB_KEY_MSG_SIZE_GID], struct oob_dest *d)
{
	char copy[OOB_KEY_MSG_SIZE_GID + 1];
	unsigned long long v[23];
	char *s = copy, *end;
	int i;

	memcpy(copy, msg, OOB_KEY_MSG_SIZE_GID);
	copy[OOB_KEY_MSG_SIZE_GID] = '\0';
	for (i = 0; i < 23; i++) {
		errno = 0;
		v[i] = strtoull(s, &end, 16);
		if (end == s || *end != ':' || errno)
			return -EPROTO;
		s = end + 1;
	}
	d->lid = (int)v[0];
	d->out_reads = (int)v[1];
	d->qpn = (int)v[2];
	d->psn = (int)v[3];
	d->rkey = (unsigned int)v[4];
	d->vaddr = v[5];
	for (i = 0; i < 16; i++)
		d->gid[i] = (uint8_t)v[6 + i];
	d->srqn = (unsigned int)v[22];
	return 0;
}

/* ctx_hand_shake: one address each way. Also the plain "sync" perftest
 * does between phases (then the content does not matter, but perftest
 * still sends its QP 0 address, and so do we). */
static int oob_hand_shake(struct oob *o, const struct oob_dest *mine, struct oob_dest *theirs,
			  int timeout_ms)
{
	char out[OOB_KEY_MSG_SIZE_GID], in[OOB_KEY_MSG_SIZE_GID];
	int ret;

	oob_format_dest(mine, out);
	ret = oob_xchg(o, out, in, sizeof(in), timeout_ms);
	if (ret)
		return ret;
	return oob_parse_dest(in, theirs);
}

/* ctx_close_connection: a last handshake, then "done" with its NUL; perftest
 * never reads the peer's "done". */
static int oob_close_connection(struct oob *o, const struct oob_dest *mine, int timeout_ms)
{
	struct oob_dest theirs;
	int ret;

	ret = oob_hand_shake(o, mine, &theirs, timeout_ms);
	if (ret)
		return ret;
	return oob_write(o, "done", sizeof("done"));
}

static uint64_t oob_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static double oob_double(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* xchg_bw_reports: five exchanges (eight bytes each with a peer >= 5.33;
 * doubles in big-endian byte order, as perftest's hton_double). Without
 * --report-per-port, nothing more. */
static int oob_xchg_bw_reports(struct oob *o, const struct oob_bw_rep *mine,
			       struct oob_bw_rep *theirs, double remote_version, int timeout_ms)
{
	uint64_t out[5], in[5] = { 0 };
	size_t iters_len = remote_version >= 5.33 ? 8 : 4;
	uint32_t iters32_out, iters32_in = 0;
	int ret, i;

	out[0] = htobe64(mine->size);
	out[1] = htobe64(mine->iters);
	out[2] = htobe64(oob_bits(mine->bw_peak));
	out[3] = htobe64(oob_bits(mine->bw_avg));
	out[4] = htobe64(oob_bits(mine->msg_rate));
	iters32_out = htonl((uint32_t)mine->iters);
	for (i = 0; i < 5; i++) {
		if (i == 1 && iters_len == 4)
			ret = oob_xchg(o, &iters32_out, &iters32_in, 4, timeout_ms);
		else
			ret = oob_xchg(o, &out[i], &in[i], 8, timeout_ms);
		if (ret)
			return ret;
	}
	theirs->size = be64toh(in[0]);
	theirs->iters = iters_len == 4 ? ntohl(iters32_in) : be64toh(in[1]);
	theirs->bw_peak = oob_double(be64toh(in[2]));
	theirs->bw_avg = oob_double(be64toh(in[3]));
	theirs->msg_rate = oob_double(be64toh(in[4]));
	return 0;
}

/* The dead-peer net under every blocking step: keepalive probes. */
static void oob_keepalive(int fd)
{
	int on = 1, idle = 10, intvl = 5, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* ethernet_client_connect: IPv4 only, as perftest (AF_INET hints). */
static int oob_client_connect(struct oob *o, const char *server, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	char service[16];
	int fd = -1, r;

	snprintf(service, sizeof(service), "%d", port);
	r = getaddrinfo(server, service, &hints, &res);
	if (r) {
		fprintf(stderr, "%s for %s:%d\n", gai_strerror(r), server, port);
		fprintf(stderr, "Problem in resolving basic address and port\n");
		return -EHOSTUNREACH;
	}
	for (t = res; t; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, t->ai_addr, t->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "Couldn't connect to %s:%d\n", server, port);
		return -ECONNREFUSED;
	}
	oob_keepalive(fd);
	o->fd = fd;
	o->client = true;
	return 0;
}

/* ethernet_server_connect: listen on every address, take one client. */
static int oob_server_accept(struct oob *o, int port)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	char service[16];
	int fd = -1, conn, on = 1, r;

	snprintf(service, sizeof(service), "%d", port);
	r = getaddrinfo(NULL, service, &hints, &res);
	if (r) {
		fprintf(stderr, "%s for port %d\n", gai_strerror(r), port);
		fprintf(stderr, "Problem in resolving basic address and port\n");
		return -EINVAL;
	}
	for (t = res; t; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (!bind(fd, t->ai_addr, t->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "Couldn't listen to port %d\n", port);
		return -EADDRINUSE;
	}
	if (listen(fd, 1) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	r = -errno;
	close(fd);
	if (conn < 0) {
		perror("server accept");
		fprintf(stderr, "accept() failed\n");
		return r;
	}
	oob_keepalive(conn);
	o->fd = conn;
	o->client = false;
	return 0;
}

#endif
