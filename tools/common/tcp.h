/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The perf tools' out-of-band TCP connection: rdma-core's and perftest's
 * exchanges both start with these loops, and say the same when they fail.
 */
#ifndef TOOLS_TCP_H
#define TOOLS_TCP_H

/* The first of host's addresses (family: AF_INET as perftest, AF_UNSPEC as
 * rdma-core) that takes a connection on port. timeout_s (0: none) bounds
 * connect() and every later send and receive. The fd, or -EHOSTUNREACH
 * (the name did not resolve) or -ECONNREFUSED, said why on stderr. */
int tcp_connect(const char *host, int port, int family, unsigned int timeout_s);
/* A socket listening on port on every address, or -EINVAL (the port did
 * not resolve) or -EADDRINUSE, said why on stderr. */
int tcp_listen(int port, int family);
/* SO_RCVTIMEO and SO_SNDTIMEO: a silent peer must not keep us waiting. */
void tcp_timeouts(int fd, unsigned int seconds);

#endif
