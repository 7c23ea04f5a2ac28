// SPDX-License-Identifier: GPL-2.0-only
/*
 * impair: a two-port Ethernet relay that loses, duplicates, reorders and
 * corrupts frames, for kernels without sch_netem (this one has none).
 *
 * Usage: impair IF1 IF2 [-l LOSS%] [-d DUP%] [-r REORDER%] [-c CORRUPT%] [-s SEED]
 *
 * Every frame received on one interface goes out of the other, unless lost.
 * A reordered frame is held back and sent after the next frame in its
 * direction (or after 1 ms of quiet). A corrupted frame has one bit flipped
 * past its Ethernet header. On SIGINT/SIGTERM it prints its counters:
 * "impair: forwarded=N lost=N duplicated=N reordered=N corrupted=N overrun=N"
 * (overrun: frames the kernel dropped before the relay read them).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define FRAME_MAX 65536

struct port {
	const char *name;
	int fd;
	/* the frame held back for reordering, going out of this port */
	unsigned char held[FRAME_MAX];
	ssize_t held_len;
};

static volatile sig_atomic_t stop;
static double p_loss, p_dup, p_reorder, p_corrupt;
static unsigned long n_fwd, n_lost, n_dup, n_reorder, n_corrupt, n_overrun;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static bool chance(double percent)
{
	return percent > 0 && drand48() * 100.0 < percent;
}

static int open_port(struct port *p)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int one = 1, rcvbuf = 8 << 20;

	sll.sll_ifindex = (int)if_nametoindex(p->name);
	if (!sll.sll_ifindex) {
		fprintf(stderr, "impair: no interface %s\n", p->name);
		return -ENODEV;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (p->fd < 0)
		return -errno;
	/* A burst of an RC window (128 frames of 4 KiB at path MTU 4096, each
	 * taking 8 KiB or more of the buffer) must not overrun the default
	 * 208 KiB: those losses would be the relay's, not the ones asked for. */
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	/* only frames from the wire, not the ones we send */
	if (setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
	    bind(p->fd, (struct sockaddr *)&sll, sizeof(sll))) {
		int err = -errno;

		close(p->fd);
		return err;
	}
	return 0;
}

static void put(struct port *out, const unsigned char *f, ssize_t len)
{
	/* a frame too big for the link (a GSO one) is lost, as on a wire */
	if (send(out->fd, f, (size_t)len, 0) == len)
		n_fwd++;
}

static void release_held(struct port *out)
{
	if (out->held_len) {
		put(out, out->held, out->held_len);
		out->held_len = 0;
	}
}

static void relay(struct port *out, unsigned char *f, ssize_t len)
{
	if (chance(p_loss)) {
		n_lost++;
		return;
	}
	if (len > ETH_HLEN && chance(p_corrupt)) {
		size_t at = ETH_HLEN + (size_t)(drand48() * (double)(len - ETH_HLEN));

		f[at] ^= (unsigned char)(1u << (lrand48() % 8));
		n_corrupt++;
	}
	if (!out->held_len && chance(p_reorder)) {
		memcpy(out->held, f, (size_t)len);
		out->held_len = len;
		n_reorder++;
		return;
	}
	put(out, f, len);
	if (chance(p_dup)) {
		put(out, f, len);
		n_dup++;
	}
	release_held(out);
}

static int usage(void)
{
	fprintf(stderr, "usage: impair IF1 IF2 [-l LOSS%%] [-d DUP%%] [-r REORDER%%] "
		"[-c CORRUPT%%] [-s SEED]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct port ports[2];
	static unsigned char buf[FRAME_MAX];
	struct sigaction sa = { .sa_handler = on_signal };
	long seed = 1;
	int opt, i, err;

	while ((opt = getopt(argc, argv, "l:d:r:c:s:")) != -1) {
		switch (opt) {
		case 'l': p_loss = atof(optarg); break;
		case 'd': p_dup = atof(optarg); break;
		case 'r': p_reorder = atof(optarg); break;
		case 'c': p_corrupt = atof(optarg); break;
		case 's': seed = atol(optarg); break;
		default: return usage();
		}
	}
	if (argc - optind != 2)
		return usage();
	srand48(seed);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (i = 0; i < 2; i++) {
		ports[i].name = argv[optind + i];
		err = open_port(&ports[i]);
		if (err) {
			fprintf(stderr, "impair: %s: %s\n", ports[i].name, strerror(-err));
			goto close_ports;
		}
	}
	printf("impair: relaying %s <-> %s\n", ports[0].name, ports[1].name);
	fflush(stdout);
	while (!stop) {
		struct pollfd pfd[2] = { { ports[0].fd, POLLIN, 0 }, { ports[1].fd, POLLIN, 0 } };
		int n = poll(pfd, 2, 1);

		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0) {
			/* quiet for 1 ms: let held frames go */
			release_held(&ports[0]);
			release_held(&ports[1]);
			continue;
		}
		for (i = 0; i < 2; i++) {
			ssize_t len;

			/* the interface went away (its namespace was deleted) */
			if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				stop = 1;
			if (!(pfd[i].revents & POLLIN))
				continue;
			len = recv(ports[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (len > 0)
				relay(&ports[!i], buf, len);
		}
	}
	/* and what the kernel dropped because we did not read fast enough */
	for (i = 0; i < 2; i++) {
		struct tpacket_stats st;
		socklen_t len = sizeof(st);

		if (!getsockopt(ports[i].fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
			n_overrun += st.tp_drops;
	}
	printf("impair: forwarded=%lu lost=%lu duplicated=%lu reordered=%lu corrupted=%lu "
	       "overrun=%lu\n", n_fwd, n_lost, n_dup, n_reorder, n_corrupt, n_overrun);
	err = 0;
	i = 2;
close_ports:
	while (i-- > 0)
		close(ports[i].fd);
	return err ? 1 : 0;
}
