// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-pingpong's out-of-band exchange: rdma-core's text format over TCP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/tcp.h"
#include "pingpong.h"

/* ---- the out-of-band exchange (rdma-core's text format over TCP) ---- */

static int write_all(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		done += n;
	}
	return 0;
}

/* Exactly len bytes: the count read, or a negative errno (-EAGAIN: the
 * socket's timeout). A short count means the peer closed. */
static ssize_t read_all(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(fd, (char *)buf + done, len - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += n;
	}
	return (ssize_t)done;
}

static void say_read_error(const char *who, ssize_t n, size_t want)
{
	if (n < 0)
		fprintf(stderr, "%s: %s\n", who,
			n == -EAGAIN ? "timed out" : strerror((int)-n));
	else if ((size_t)n < want)
		fprintf(stderr, "%s: the peer closed the connection\n", who);
}

static void dest_to_wire(const struct pp_dest *d, char msg[WIRE_LEN])
{
	char gid[33];
	int i;

	/* the GID's bytes in order, as gid_to_wire_gid writes them */
	for (i = 0; i < 16; i++)
		sprintf(gid + 2 * i, "%02x", d->gid[i]);
	snprintf(msg, WIRE_LEN, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn, gid);
}

static int wire_to_dest(const char msg[WIRE_LEN], struct pp_dest *d)
{
	char text[WIRE_LEN + 1], gid[33];
	int i;

	/* rdma-core sends the NUL, but a peer's bytes are not to be trusted */
	memcpy(text, msg, WIRE_LEN);
	text[WIRE_LEN] = '\0';
	if (sscanf(text, "%x:%x:%x:%32[0-9a-fA-F]", &d->lid, &d->qpn, &d->psn, gid) != 4 ||
	    strlen(gid) != 32) {
		fprintf(stderr, "Couldn't parse the remote address \"%.*s\"\n", (int)WIRE_LEN - 1, text);
		return -EPROTO;
	}
	for (i = 0; i < 16; i++) {
		char byte[3] = { gid[2 * i], gid[2 * i + 1], '\0' };

		d->gid[i] = (uint8_t)strtoul(byte, NULL, 16);
	}
	return 0;
}

/* Addresses on the wire: ibv_srq_pingpong always sends PP_MAX_QP. */
static unsigned int n_dests(const struct pp_opts *o)
{
	return o->srq ? PP_MAX_QP : 1;
}

static int write_dests(int fd, const struct pp_opts *o, const struct pp_dest *my)
{
	char msg[WIRE_LEN];
	unsigned int i;

	for (i = 0; i < n_dests(o); i++) {
		dest_to_wire(&my[i], msg);
		if (write_all(fd, msg, WIRE_LEN))
			return -1;
	}
	return 0;
}

/* 0, or -1 (said why, in the words of the rdma-core tool played). The
 * ones past num_qp are read and ignored. */
static int read_dests(int fd, const struct pp_opts *o, struct pp_dest *rem, bool client)
{
	const char *who = client ? (o->srq ? "client read" : "client read/write") : "server read";
	char msg[WIRE_LEN];
	unsigned int i;
	ssize_t got;

	for (i = 0; i < n_dests(o); i++) {
		got = read_all(fd, msg, WIRE_LEN);
		if (got != (ssize_t)WIRE_LEN) {
			say_read_error(who, got, WIRE_LEN);
			if (o->srq)
				fprintf(stderr, "%zd/%zu: Couldn't read remote address [%u]\n",
					got < 0 ? 0 : got, WIRE_LEN, i);
			else if (client)
				fprintf(stderr, "Couldn't read/write remote address\n");
			else
				fprintf(stderr, "%zd/%zu: Couldn't read remote address\n",
					got < 0 ? 0 : got, WIRE_LEN);
			return -1;
		}
		if (i < o->num_qp && wire_to_dest(msg, &rem[i]))
			return -1;
	}
	return 0;
}

int client_exch_dest(const struct pp_opts *o, const struct pp_dest *my,
		     struct pp_dest *rem)
{
	int fd, ret = -1;

	fd = tcp_connect(o->servername, (int)o->tcp_port, AF_UNSPEC, o->timeout_s);
	if (fd < 0)
		return -1;

	if (write_dests(fd, o, my)) {
		fprintf(stderr, "Couldn't send local address\n");
		goto close_fd;
	}
	if (read_dests(fd, o, rem, true))
		goto close_fd;
	if (write_all(fd, "done", DONE_LEN)) {
		fprintf(stderr, o->srq ? "client write: the peer closed the connection\n" :
			"Couldn't read/write remote address\n");
		goto close_fd;
	}
	ret = 0;
close_fd:
	close(fd);
	return ret;
}

/* The server connects its QP between reading the client's address and
 * sending its own, as rdma-core's does. */
int server_exch_dest(struct pp_ctx *c, const struct pp_dest *my, struct pp_dest *rem)
{
	const struct pp_opts *o = c->o;
	char msg[WIRE_LEN];
	int lfd, fd, ret = -1;
	ssize_t got;

	lfd = tcp_listen((int)o->tcp_port, AF_UNSPEC);
	if (lfd < 0)
		return -1;
	/* a server waits for its client as long as it takes */
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	close(lfd);
	if (fd < 0) {
		fprintf(stderr, "accept() failed: %s\n", strerror(errno));
		return -1;
	}
	tcp_timeouts(fd, o->timeout_s);

	if (read_dests(fd, o, rem, false))
		goto close_fd;
	if (pp_connect(c, my, rem)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto close_fd;
	}
	if (write_dests(fd, o, my)) {
		fprintf(stderr, "Couldn't send/recv local address\n");
		goto close_fd;
	}
	got = read_all(fd, msg, DONE_LEN);
	if (got != (ssize_t)DONE_LEN || memcmp(msg, "done", DONE_LEN)) {
		say_read_error("server read", got, DONE_LEN);
		fprintf(stderr, "Couldn't send/recv local address\n");
		goto close_fd;
	}
	ret = 0;
close_fd:
	close(fd);
	return ret;
}
