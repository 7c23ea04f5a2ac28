/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the XDP steering program (bpf/vrdma_xdp.bpf.c) and the daemon share:
 * map names and layouts, counter indexes, limits. Included by BPF and C code
 * alike, so it uses only fixed-size types from <linux/types.h>.
 */
#ifndef VRDMA_XDP_H
#define VRDMA_XDP_H

#include <linux/types.h>

#include "roce_defs.h"	/* ROCE_UDP_PORT, struct vrdma_gid: the map's key */

#define VRDMA_XDP_PROG_NAME	"vrdma_xdp"	/* the program's function name */
#define VRDMA_XDP_MAP_GIDS	"vrdma_gids"
#define VRDMA_XDP_MAP_XSKS	"vrdma_xsks"
#define VRDMA_XDP_MAP_STATS	"vrdma_xdp_stats"

#define VRDMA_XDP_MAX_GIDS	4096	/* served GIDs over all VMs */
#define VRDMA_XDP_MAX_QUEUES	64	/* XSKMAP slots = RX queue index */

/* vrdma_gids key: the destination IP as a struct vrdma_gid (roce_defs.h). */

/* vrdma_gids value: which VM serves the GID (the daemon's VM id). */
struct vrdma_gid_val {
	__u32 vm_id;
};

/* vrdma_xdp_stats: per-CPU array, one __u64 per index. */
enum vrdma_xdp_stat {
	VRDMA_XDP_PASSED,	/* not for us: left to the kernel stack */
	VRDMA_XDP_REDIRECTED,	/* UDP 4791 to a served GID, into an XSK */
	VRDMA_XDP_NO_XSK,	/* served GID but no XSK on this RX queue: passed */
	VRDMA_XDP_MALFORMED,	/* truncated/bad IP or UDP header: passed */
	VRDMA_XDP_IP_FRAGMENT,	/* IPv4 fragment (RoCE never fragments): passed */
	VRDMA_XDP_STAT_MAX,
};

#endif
