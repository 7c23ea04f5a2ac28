// SPDX-License-Identifier: GPL-2.0-only
/*
 * udp_blast DST_IP PORT SIZE SECONDS: send UDP datagrams of SIZE payload
 * bytes to DST_IP:PORT as fast as one thread can, for SECONDS, then print
 *   sent=N seconds=S pps=P enobufs=E
 * A benchmark load generator for tests/bench/run.sh, not a test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH		64	/* datagrams per sendmmsg */
#define MAX_PAYLOAD	65507	/* largest IPv4 UDP payload */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A UDP socket connected to ip:port (v4 or v6 by the address); fd or -errno. */
static int connect_udp(const char *ip, unsigned int port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, err;

	if (inet_pton(AF_INET, ip, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		len = sizeof(*sin6);
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	/* Connected: the kernel skips the route lookup per datagram. */
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Blast for `seconds`; *sent and *enobufs are the counts. 0 or -errno. */
static int blast(int fd, size_t size, double seconds, unsigned long long *sent,
		 unsigned long long *enobufs, double *elapsed)
{
	static char payload[MAX_PAYLOAD];
	struct mmsghdr msgs[BATCH];
	struct iovec iov = { .iov_base = payload, .iov_len = size };
	double t0, t;
	unsigned int i;
	int n;

	memset(payload, 0xab, size);
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	*sent = *enobufs = 0;
	t0 = t = now_s();
	while (t - t0 < seconds) {
		n = sendmmsg(fd, msgs, BATCH, 0);
		if (n > 0) {
			*sent += n;
		} else if (errno == ENOBUFS || errno == EAGAIN) {
			/* The veth queue is full: the load is the point. */
			(*enobufs)++;
		} else if (errno == ECONNREFUSED) {
			/* An ICMP port unreachable came back; keep going. */
		} else if (errno != EINTR) {
			return -errno;
		}
		t = now_s();
	}
	*elapsed = t - t0;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long sent, enobufs;
	double seconds, elapsed = 0;
	long size, port;
	int fd, err;

	if (argc != 5) {
		fprintf(stderr, "Usage: udp_blast DST_IP PORT SIZE SECONDS\n");
		return 2;
	}
	port = strtol(argv[2], NULL, 10);
	size = strtol(argv[3], NULL, 10);
	seconds = strtod(argv[4], NULL);
	if (port < 1 || port > 65535 || size < 0 || size > MAX_PAYLOAD || seconds <= 0) {
		fprintf(stderr, "udp_blast: bad PORT, SIZE (0-%d) or SECONDS\n", MAX_PAYLOAD);
		return 2;
	}
	fd = connect_udp(argv[1], port);
	if (fd < 0) {
		fprintf(stderr, "udp_blast: %s: %s\n", argv[1], strerror(-fd));
		return 1;
	}
	err = blast(fd, size, seconds, &sent, &enobufs, &elapsed);
	close(fd);
	if (err < 0) {
		fprintf(stderr, "udp_blast: sendmmsg: %s\n", strerror(-err));
		return 1;
	}
	printf("sent=%llu seconds=%.3f pps=%.0f enobufs=%llu\n", sent, elapsed,
	       sent / elapsed, enobufs);
	return 0;
}
