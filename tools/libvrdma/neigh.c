// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's destination MACs: a GID's MAC from this host's interfaces or
 * the kernel neighbour table, as a guest's RoCE driver finds it.
 */
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "internal.h"
#include "roce_wire.h"

/* ---- MAC resolution ---- */

/* The neighbour table's MAC for addr (4 or 16 bytes): 1 found, 0 not
 * (or not usable yet), or a negative errno. */
static int neigh_lookup(int family, const uint8_t *addr, size_t alen, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
	} req = {
		.nh = {
			.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg)),
			.nlmsg_type = RTM_GETNEIGH,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1,
		},
		.nd = { .ndm_family = family },
	};
	const uint16_t usable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
				NUD_PERMANENT | NUD_NOARP;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 1 };
	int fd, ret = 0;
	bool done = false;
	char *buf;

	buf = malloc(32768);
	if (!buf)
		return -ENOMEM;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		ret = -errno;
		goto free_buf;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto close_fd;
	}
	while (!done && ret == 0) {
		ssize_t n = recv(fd, buf, 32768, 0);
		struct nlmsghdr *nh;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			const struct ndmsg *nd = NLMSG_DATA(nh);
			const uint8_t *dst = NULL, *lladdr = NULL;
			size_t dst_len = 0, ll_len = 0;
			struct rtattr *rta;
			int rlen;

			if (nh->nlmsg_seq != req.nh.nlmsg_seq)
				continue;
			if (nh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *err = NLMSG_DATA(nh);

				ret = nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*err)) && err->error ? err->error : -EIO;
				break;
			}
			if (nh->nlmsg_type != RTM_NEWNEIGH || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)) ||
			    nd->ndm_family != family || !(nd->ndm_state & usable))
				continue;
			rlen = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
			for (rta = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
			     RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
				if (rta->rta_type == NDA_DST) {
					dst = RTA_DATA(rta);
					dst_len = RTA_PAYLOAD(rta);
				} else if (rta->rta_type == NDA_LLADDR) {
					lladdr = RTA_DATA(rta);
					ll_len = RTA_PAYLOAD(rta);
				}
			}
			if (dst && dst_len == alen && !memcmp(dst, addr, alen) &&
			    lladdr && ll_len == 6 && !all_zero(lladdr, 6)) {
				memcpy(mac, lladdr, 6);
				ret = 1;
				break;
			}
		}
	}
close_fd:
	close(fd);
free_buf:
	free(buf);
	return ret;
}

/* One datagram to the discard port: the kernel resolves the neighbour to
 * send it, as a guest's stack does before a RoCE driver looks. */
static void neigh_probe(int family, const uint8_t *addr)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9) };
	const struct sockaddr *sa = (struct sockaddr *)&sin;
	socklen_t salen = sizeof(sin);
	const char byte = 0;
	int fd;

	if (family == AF_INET) {
		memcpy(&sin.sin_addr, addr, 4);
	} else {
		memcpy(&sin6.sin6_addr, addr, 16);
		sa = (struct sockaddr *)&sin6;
		salen = sizeof(sin6);
	}
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	/* failure only means no route: the lookups then find nothing */
	(void)sendto(fd, &byte, 1, MSG_DONTWAIT, sa, salen);
	close(fd);
}

/* An address of this host (a VM's GID is one where the host answers ARP
 * for its VMs): the MAC of the interface that holds it. 1 if found. */
static int local_addr_mac(int family, const uint8_t *addr, size_t alen, uint8_t mac[6])
{
	struct ifaddrs *ifs, *a, *b;
	int found = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (a = ifs; a && !found; a = a->ifa_next) {
		const void *x;

		if (!a->ifa_addr || a->ifa_addr->sa_family != family)
			continue;
		x = family == AF_INET ? (const void *)&((struct sockaddr_in *)a->ifa_addr)->sin_addr :
					(const void *)&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
		if (memcmp(x, addr, alen))
			continue;
		for (b = ifs; b; b = b->ifa_next) {
			const struct sockaddr_ll *ll = (const struct sockaddr_ll *)b->ifa_addr;

			if (ll && ll->sll_family == AF_PACKET && ll->sll_halen == 6 &&
			    !strcmp(a->ifa_name, b->ifa_name) && !all_zero(ll->sll_addr, 6)) {
				memcpy(mac, ll->sll_addr, 6);
				found = 1;
				break;
			}
		}
	}
	freeifaddrs(ifs);
	return found;
}

int vrdma_resolve_mac(const uint8_t gid[16], uint8_t mac[6])
{
	int64_t deadline = now_ns() + RESOLVE_WAIT_NS;
	bool v4, probed = false;
	const uint8_t *addr;
	int family, ret;
	size_t alen;

	if (!gid || !mac || all_zero(gid, 16))
		return -EINVAL;
	v4 = roce_gid_is_v4(gid);
	family = v4 ? AF_INET : AF_INET6;
	addr = v4 ? gid + 12 : gid;
	alen = v4 ? 4 : 16;
	/* no neighbour entry exists for a local address: do not wait for one */
	if (local_addr_mac(family, addr, alen, mac))
		return 0;
	for (;;) {
		struct timespec step = { .tv_nsec = RESOLVE_STEP_NS };

		ret = neigh_lookup(family, addr, alen, mac);
		if (ret)
			return ret < 0 ? ret : 0;
		if (!probed) {
			neigh_probe(family, addr);
			probed = true;
		}
		if (now_ns() >= deadline)
			return -EHOSTUNREACH;
		nanosleep(&step, NULL);
	}
}

/* The driver resolves a destination once per AV, as a RoCE driver does when
 * it creates an AH: results (failures too) are kept RESOLVE_CACHE_NS so that
 * a burst of UD sends to a GID of the same daemon, which has no neighbour
 * entry, does not wait a second each. */
void resolve_cached(const uint8_t gid[16], uint8_t mac[6])
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		uint8_t gid[16], mac[6];
		int64_t expires;
	} cache[RESOLVE_CACHE_LEN];
	static unsigned int next;
	int64_t now = now_ns();
	unsigned int i;
	uint8_t found[6] = { 0 };

	pthread_mutex_lock(&lock);
	for (i = 0; i < RESOLVE_CACHE_LEN; i++) {
		if (cache[i].expires > now && !memcmp(cache[i].gid, gid, 16)) {
			memcpy(mac, cache[i].mac, 6);
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	pthread_mutex_unlock(&lock);
	/* unlocked: a second can pass here */
	if (vrdma_resolve_mac(gid, found))
		memset(found, 0, sizeof(found));
	pthread_mutex_lock(&lock);
	i = next++ % RESOLVE_CACHE_LEN;
	memcpy(cache[i].gid, gid, 16);
	memcpy(cache[i].mac, found, 6);
	cache[i].expires = now_ns() + RESOLVE_CACHE_NS;
	pthread_mutex_unlock(&lock);
	memcpy(mac, found, 6);
}
