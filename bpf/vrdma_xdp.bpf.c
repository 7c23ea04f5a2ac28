// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma_xdp: steer RoCEv2 (UDP 4791) frames addressed to a GID that vrdmad
 * serves into the AF_XDP socket of the receive queue; pass everything else
 * (ARP, the host's own traffic, RoCE for other addresses) to the kernel.
 *
 * Only the first buffer of a multi-buffer frame is parsed: the headers are
 * always there, so the program is marked for frags (attaches with MTU 9000).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "vrdma_xdp.h"

struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VRDMA_XDP_MAX_GIDS);
	__type(key, struct vrdma_gid);
	__type(value, struct vrdma_gid_val);
} vrdma_gids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, VRDMA_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} vrdma_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VRDMA_XDP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} vrdma_xdp_stats SEC(".maps");

static __always_inline int count(__u32 idx, int action)
{
	__u64 *v = bpf_map_lookup_elem(&vrdma_xdp_stats, &idx);

	if (v)
		*v += 1;
	return action;
}

SEC("xdp.frags")
int vrdma_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct vrdma_gid key = {};
	struct udphdr *udp;
	__u16 proto;
	void *l3;

	if ((void *)(eth + 1) > end)
		return count(VRDMA_XDP_PASSED, XDP_PASS);
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q)) {	/* one 802.1Q tag */
		struct vlan_hdr *vlan = l3;

		if ((void *)(vlan + 1) > end)
			return count(VRDMA_XDP_MALFORMED, XDP_PASS);
		proto = vlan->encap_proto;
		l3 = vlan + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u32 ihl;

		if ((void *)(ip + 1) > end)
			return count(VRDMA_XDP_MALFORMED, XDP_PASS);
		if (ip->protocol != IPPROTO_UDP)
			return count(VRDMA_XDP_PASSED, XDP_PASS);
		ihl = ip->ihl * 4;
		if (ip->version != 4 || ihl < sizeof(*ip))
			return count(VRDMA_XDP_MALFORMED, XDP_PASS);
		if (ip->frag_off & bpf_htons(0x3fff))	/* MF or an offset */
			return count(VRDMA_XDP_IP_FRAGMENT, XDP_PASS);
		udp = l3 + ihl;
		key = (struct vrdma_gid){ .raw = ROCE_GID_V4MAPPED_PREFIX };
		__builtin_memcpy(&key.raw[ROCE_GID_V4MAPPED_LEN], &ip->daddr, 4);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end)
			return count(VRDMA_XDP_MALFORMED, XDP_PASS);
		/* RoCEv2 puts UDP right after the fixed header. */
		if (ip6->nexthdr != IPPROTO_UDP)
			return count(VRDMA_XDP_PASSED, XDP_PASS);
		udp = (void *)(ip6 + 1);
		__builtin_memcpy(key.raw, &ip6->daddr, 16);
	} else {
		return count(VRDMA_XDP_PASSED, XDP_PASS);
	}

	if ((void *)(udp + 1) > end)
		return count(VRDMA_XDP_MALFORMED, XDP_PASS);
	if (udp->dest != bpf_htons(ROCE_UDP_PORT))
		return count(VRDMA_XDP_PASSED, XDP_PASS);
	if (!bpf_map_lookup_elem(&vrdma_gids, &key))
		return count(VRDMA_XDP_PASSED, XDP_PASS);

	if (bpf_redirect_map(&vrdma_xsks, ctx->rx_queue_index, XDP_PASS) ==
	    XDP_REDIRECT)
		return count(VRDMA_XDP_REDIRECTED, XDP_REDIRECT);
	return count(VRDMA_XDP_NO_XSK, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
