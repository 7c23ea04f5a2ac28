/* SPDX-License-Identifier: GPL-2.0-only */
/* The AF_XDP port: our XDP program on the NIC (through libxdp) and one
 * AF_XDP socket, with its own UMEM, per receive queue in use. */
#ifndef VRDMAD_XDP_PORT_H
#define VRDMAD_XDP_PORT_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "config.h"
#include "vrdma_xdp.h"

/* Kernel 6.6+ flags that Debian 12's 6.1 uapi headers lack. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
/* Kernel 6.17+: the frames one copy-mode sendto() sends (default 32). */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

#define XSK_FRAME_SIZE		4096	/* one UMEM chunk = one page */
#define XSK_RX_FRAMES		2048	/* owned by fill + rx rings, or spare */
#define XSK_FILL_START		512	/* fill ring level to begin with */
#define XSK_TX_FRAMES		2048	/* owned by the sender: tx + completion */
#define XSK_FRAMES		(XSK_RX_FRAMES + XSK_TX_FRAMES)
/* Most buffers one frame can arrive in (the kernel's MAX_SKB_FRAGS + 1). */
#define XSK_MAX_FRAGS		18
/* A single-buffer frame must fit a chunk less the XDP headroom (DESIGN.md). */
#define XSK_MAX_SINGLE_FRAME	(XSK_FRAME_SIZE - 256)
/* ... and the largest MTU whose frames do: Ethernet and a VLAN tag less. */
#define XSK_MAX_SINGLE_MTU	(XSK_MAX_SINGLE_FRAME - 18)

struct xsk_queue {
	uint32_t queue_id;
	struct xsk_socket *xsk;
	struct xsk_umem *umem;
	void *area;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	bool zerocopy;
	/* Frames the kernel takes per sendto() in copy mode: the configured
	 * tx_budget, or XSK_TX_BATCH where it cannot be set. */
	unsigned int tx_batch;
	/* Receive chunks the kernel does not hold, the most recently freed
	 * last. The fill ring is topped up from here to fill_target, not with
	 * every chunk: the kernel takes fill entries in order, so all that are
	 * given cycle through its copies, and 2048 of them (8 MiB) cost the
	 * copy into them a miss per line where 512 stay in cache (WRITE 1 MiB
	 * at path MTU 4096: 20.6 against 22.9 Gb/s). fill_target doubles when
	 * the kernel nearly ran the ring dry, up to XSK_RX_FRAMES. */
	uint32_t rx_spare[XSK_RX_FRAMES];	/* chunk numbers */
	unsigned int n_rx_spare, fill_target;
};

struct xdp_port {
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint8_t mac[6];
	unsigned int mtu;
	/* The largest MTU whose frames the sockets take whole: mtu, or what
	 * one UMEM chunk holds without multi-buffer. The VMs' port MTU. */
	unsigned int frame_mtu;
	unsigned int hw_rx_queues;	/* what the interface has */
	struct xdp_program *prog;
	enum xdp_attach_mode mode;	/* XDP_MODE_NATIVE or XDP_MODE_SKB */
	bool dispatcher;		/* libxdp multi-program dispatcher in use */
	bool multi_buffer;		/* XDP_USE_SG: MTU needs frames > 1 chunk,
					 * and neither config nor kernel refused */
	uint32_t prog_id;		/* ours: the component under a dispatcher */
	/* What we attached, recorded so that a vrdmad started after this one
	 * was killed can remove it: xdp-IFNAME.state beside the control socket. */
	char state_path[VRDMA_CONF_PATH_MAX + IF_NAMESIZE + 16];
	int gids_fd, xsks_fd, stats_fd;
	struct xsk_queue *queues;
	unsigned int n_queues;
};

/* Attach the program, create the sockets. On failure everything done is undone
 * and a message saying what to do has been logged. A program that the state
 * file records as attached by a vrdmad with this control socket, which died
 * without detaching it, is removed first (the caller holds the control socket,
 * so that vrdmad is not running). */
int xdp_port_open(struct xdp_port *port, const struct vrdma_config *cfg);
void xdp_port_close(struct xdp_port *port);

int xdp_port_serve_gid(struct xdp_port *port, const struct vrdma_gid *gid, uint32_t vm_id);
int xdp_port_unserve_gid(struct xdp_port *port, const struct vrdma_gid *gid);
/* Sum of the program's per-CPU counters. */
int xdp_port_read_stats(const struct xdp_port *port, uint64_t out[VRDMA_XDP_STAT_MAX]);

/* The kernel's AF_XDP counters (XDP_STATISTICS), summed over the queues:
 * frames lost between XDP and us, which no counter of ours can see. */
struct xsk_kernel_stats {
	uint64_t rx_dropped;		/* dropped by the kernel for other reasons */
	uint64_t rx_ring_full;		/* our RX ring was full */
	uint64_t rx_fill_ring_empty;	/* no free buffer in the fill ring */
	uint64_t rx_invalid_descs;
	uint64_t tx_invalid_descs;
	uint64_t tx_ring_empty;
};
int xdp_port_read_xsk_stats(const struct xdp_port *port, struct xsk_kernel_stats *out);

const char *xdp_port_mode_name(const struct xdp_port *port);
bool xdp_port_zerocopy(const struct xdp_port *port);
const char *vrdma_xdp_stat_name(enum vrdma_xdp_stat s);

#endif
