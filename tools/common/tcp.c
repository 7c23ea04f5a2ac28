// SPDX-License-Identifier: GPL-2.0-only
/*
 * The perf tools' out-of-band TCP connection (tcp.h).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tcp.h"

void tcp_timeouts(int fd, unsigned int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	/* SO_SNDTIMEO bounds connect() too */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int tcp_connect(const char *host, int port, int family, unsigned int timeout_s)
{
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	char service[16];
	int fd = -1, r;

	snprintf(service, sizeof(service), "%d", port);
	r = getaddrinfo(host, service, &hints, &res);
	if (r) {
		fprintf(stderr, "%s for %s:%d\n", gai_strerror(r), host, port);
		return -EHOSTUNREACH;
	}
	for (t = res; t; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);
		if (fd < 0)
			continue;
		if (timeout_s)
			tcp_timeouts(fd, timeout_s);
		if (!connect(fd, t->ai_addr, t->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "Couldn't connect to %s:%d\n", host, port);
		return -ECONNREFUSED;
	}
	return fd;
}

int tcp_listen(int port, int family)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_family = family,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *t;
	char service[16];
	int fd = -1, on = 1, r;

	snprintf(service, sizeof(service), "%d", port);
	r = getaddrinfo(NULL, service, &hints, &res);
	if (r) {
		fprintf(stderr, "%s for port %d\n", gai_strerror(r), port);
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
	if (fd < 0 || listen(fd, 1)) {
		fprintf(stderr, "Couldn't listen to port %d\n", port);
		if (fd >= 0)
			close(fd);
		return -EADDRINUSE;
	}
	return fd;
}
