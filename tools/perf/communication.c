// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's out-of-band exchange (perftest_communication.c of perftest
 * 4.5-0.17, VERSION "6.06"), the variant without -R/rdma_cm: one TCP
 * connection, fixed-size messages, the client (the side given a server name)
 * always writes first and the server reads first. perftest reads each message
 * with a single read() of the whole size, so every message here goes out in
 * one send() of exactly that size.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "common/tcp.h"
#include "perf.h"

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
	int fd = tcp_connect(server, port, AF_INET, 0);

	if (fd == -EHOSTUNREACH)
		fprintf(stderr, "Problem in resolving basic address and port\n");
	if (fd < 0)
		return fd;
	oob_keepalive(fd);
	o->fd = fd;
	o->client = true;
	return 0;
}

/* ethernet_server_connect: listen on every address, take one client. */
static int oob_server_accept(struct oob *o, int port)
{
	int fd, conn, r;

	fd = tcp_listen(port, AF_INET);
	if (fd == -EINVAL)
		fprintf(stderr, "Problem in resolving basic address and port\n");
	if (fd < 0)
		return fd;
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

/* ---- the exchange, test by test (the main() of each perftest program) ---- */

int hs(struct perf *p, int i, int timeout_ms)
{
	int ret = oob_hand_shake(&p->oob, &p->my[i], &p->rem[i], timeout_ms);

	if (ret)
		fprintf(stderr, " Failed to exchange data between server and clients (%s)\n",
			strerror(-ret));
	return ret;
}

/* One handshake per QP: this is how the addresses travel. */
int hs_all(struct perf *p)
{
	int i, ret;

	for (i = 0; i < p->num_qps; i++) {
		ret = hs(p, i, SETUP_TIMEOUT_MS);
		if (ret)
			return ret;
	}
	return 0;
}

/* Print this side's QPs, then shake hands again per QP and print the
 * peer's. */
int hs_print(struct perf *p)
{
	int i, ret;

	for (i = 0; i < p->num_qps; i++)
		print_dest(p, &p->my[i], false);
	for (i = 0; i < p->num_qps; i++) {
		ret = hs(p, i, SETUP_TIMEOUT_MS);
		if (ret)
			return ret;
		print_dest(p, &p->rem[i], true);
	}
	return 0;
}

/* ctx_check_gid_compatibility: both IPv4-mapped or neither. */
int gid_check(const struct perf *p)
{
	if (roce_gid_is_v4(p->my[0].gid) != roce_gid_is_v4(p->rem[0].gid)) {
		fprintf(stderr, "\n Found Incompatibility issue with GID types.\n");
		fprintf(stderr, " Please Try to use a different IP version.\n\n");
		return -EPROTO;
	}
	return 0;
}

int connect_qps(struct perf *p)
{
	int ret = ctx_connect(p);

	if (ret)
		fprintf(stderr, " Unable to Connect the HCA's through the link\n");
	return ret;
}

int xchg_reports(struct perf *p, const struct oob_bw_rep *my, struct oob_bw_rep *rem)
{
	int ret = oob_xchg_bw_reports(&p->oob, my, rem, atof(p->rem_version), p->run_timeout_ms);

	if (ret)
		fprintf(stderr, " Failed to exchange data between server and clients\n");
	return ret;
}

int close_connection(struct perf *p)
{
	int ret = oob_close_connection(&p->oob, &p->my[0], p->run_timeout_ms);

	if (ret)
		fprintf(stderr, "Failed to close connection between server and client\n");
	return ret;
}

int connect_peer(struct perf *p)
{
	int rem_cycle = 0, rem_line = 0, my_cycle, my_line, rem_mtu, ret;
	char cur[4] = { 0 }, rem[4] = { 0 };
	double rem_vers;

	if (p->machine == SERVER) {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		ret = oob_server_accept(&p->oob, p->port);
	} else {
		ret = oob_client_connect(&p->oob, p->servername, p->port);
	}
	if (ret) {
		fprintf(stderr, "Unable to open file descriptor for socket connection");
		fprintf(stderr, " Unable to init the socket connection\n");
		return ret;
	}
	strncpy(p->version, OOB_VERSION, sizeof(p->version) - 1);
	ret = oob_xchg(&p->oob, p->version, p->rem_version, sizeof(p->rem_version), SETUP_TIMEOUT_MS);
	if (ret)
		goto exchange_failed;
	p->rem_version[sizeof(p->rem_version) - 1] = '\0';
	rem_vers = atof(p->rem_version);
	if (rem_vers < 5.70) {
		fprintf(stderr, "Current implementation is not compatible with versions older than 5.70\n");
		return -EPROTO;
	}
	/* the larger page size and cache line of the two lay out buffers */
	my_cycle = (int)htonl((uint32_t)p->cycle_buffer);
	my_line = (int)htonl((uint32_t)p->cache_line);
	if ((ret = oob_xchg(&p->oob, &my_cycle, &rem_cycle, 4, SETUP_TIMEOUT_MS)) ||
	    (ret = oob_xchg(&p->oob, &my_line, &rem_line, 4, SETUP_TIMEOUT_MS)))
		goto exchange_failed;
	rem_cycle = (int)ntohl((uint32_t)rem_cycle);
	rem_line = (int)ntohl((uint32_t)rem_line);
	if (rem_cycle > p->cycle_buffer)
		p->cycle_buffer = rem_cycle;
	if (rem_line > p->cache_line)
		p->cache_line = rem_line;
	if (p->cycle_buffer > MAX_CYCLE_BUFFER || p->cache_line > 4096 || p->cache_line <= 0 ||
	    p->cycle_buffer % p->cache_line) {
		fprintf(stderr, " The peer's page size %d / cache line %d are not supported\n",
			rem_cycle, rem_line);
		return -EPROTO;
	}
	/* check_mtu: the smaller of the two, as "%d" of enum ibv_mtu in 2 bytes */
	p->curr_mtu = set_mtu(p);
	snprintf(cur, sizeof(cur), "%d", p->curr_mtu);
	ret = oob_xchg(&p->oob, cur, rem, rem_vers >= 5.31 ? 2 : sizeof(int), SETUP_TIMEOUT_MS);
	if (ret)
		goto exchange_failed;
	rem[sizeof(rem) - 1] = '\0';
	rem_mtu = (int)strtol(rem, NULL, 10);
	if (rem_mtu >= VIRTIO_IB_MTU_256 && rem_mtu <= VIRTIO_IB_MTU_4096 && p->curr_mtu > rem_mtu)
		p->curr_mtu = rem_mtu;
	if (p->conn == UD && p->size > MTU_SIZE(p->curr_mtu)) {
		if (p->run_all || !p->req_size) {
			fprintf(stderr, " Max msg size in UD is MTU %lu\n", (unsigned long)MTU_SIZE(p->curr_mtu));
			fprintf(stderr, " Changing to this MTU\n");
			p->size = MTU_SIZE(p->curr_mtu);
		} else {
			fprintf(stderr, " Max message size in UD cannot be greater than MTU \n");
			fprintf(stderr, " Couldn't get context for the device\n");
			return -EINVAL;
		}
	}
	return 0;

exchange_failed:
	fprintf(stderr, " Failed to exchange data between server and clients (%s)\n", strerror(-ret));
	return ret;
}
