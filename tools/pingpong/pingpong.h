/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vrdma-pingpong: rdma-core's ibv_rc_pingpong, ibv_uc_pingpong,
 * ibv_ud_pingpong and ibv_srq_pingpong (v44; -T srq: -q RC QPs sharing one
 * SRQ) on a VM socket of vrdmad, through libvrdma. Same
 * flags (-d names the VM's vhost-user socket instead of an IB device, -T
 * picks the transport), same out-of-band TCP exchange, same posted work and
 * completion accounting, same output: it interoperates with the real tools
 * in either role.
 *
 * Where it differs on purpose: the GID index defaults to 0 (RoCE cannot work
 * without one); numbers are checked, and -m with -T ud is refused (as
 * ibv_ud_pingpong, which has no -m); a run that gets no completion for
 * --timeout seconds, a silent TCP peer, or a daemon that goes away ends
 * with an error instead of waiting forever; -c checks every byte of the
 * buffer, and invalid data makes the exit code 1.
 *
 * The files: options.c (the command line), device.c (the PD, MR, CQ and QP
 * through libvrdma), exchange.c (rdma-core's out-of-band exchange),
 * main.c (the ping-pong).
 */
#ifndef VRDMA_PINGPONG_H
#define VRDMA_PINGPONG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libvrdma.h"
#include "roce_defs.h"

enum { PINGPONG_RECV_WRID = 1, PINGPONG_SEND_WRID = 2 };

#define GRH_LEN			40u		/* before every UD receive's payload */
#define UD_QKEY			0x11111111u
#define DEFAULT_TCP_PORT	18515
#define DEFAULT_TIMEOUT_S	10
#define WIRE_MSG		"0000:000000:000000:00000000000000000000000000000000"
#define WIRE_LEN		sizeof(WIRE_MSG)	/* with the NUL, as rdma-core sends it */
#define DONE_LEN		sizeof("done")
/* ibv_srq_pingpong's MAX_QP: its exchange always carries this many
 * addresses, the unused ones zero. */
#define PP_MAX_QP		256u
#define SRQ_DEFAULT_QPS		16u
/* Empty CQ polls between looks at the clock and at the daemon's socket. */
#define POLLS_PER_CHECK		16384u

struct pp_opts {
	uint8_t type;			/* VIRTIO_IB_QPT_RC / UC / UD */
	bool srq;			/* -T srq: RC QPs on one SRQ */
	unsigned int num_qp;		/* 1, or -q with -T srq */
	const char *socket;
	const char *servername;
	unsigned int tcp_port;
	unsigned int ib_port;
	unsigned int size;
	int mtu;			/* enum ib_mtu */
	unsigned int rx_depth;
	unsigned int iters;
	unsigned int sl;
	int gidx;
	bool events, chk;
	unsigned int timeout_s;
	bool size_set, mtu_set, num_qp_set;
};

struct pp_dest {
	unsigned int lid, qpn, psn;
	uint8_t gid[16];
};

struct pp_ctx {
	const struct pp_opts *o;
	struct vrdma_ctx *dev;
	struct vrdma_pd *pd;
	struct vrdma_mr *mr;
	struct vrdma_cq *cq;
	struct vrdma_qp *qp;		/* qps[0] */
	struct vrdma_qp *qps[PP_MAX_QP];
	struct vrdma_srq *srq;		/* -T srq */
	uint8_t *buf;
	size_t buf_len;
	unsigned int grh;		/* GRH_LEN for UD, else 0 */
	uint32_t send_flags;
	struct virtio_rdma_rsp_query_port port;
	int pending[PP_MAX_QP];		/* per QP: PINGPONG_*_WRID still to complete */
	int routs;
	unsigned int rcnt, scnt;
	/* UD: what ibv_create_ah would hold, sent with every WR */
	struct virtio_rdma_av av;
	uint32_t remote_qpn;
};

/* options.c */
unsigned int mtu_bytes(int mtu);
int parse_args(int argc, char **argv, struct pp_opts *o);

/* device.c */
int pp_post_recv(struct pp_ctx *c, unsigned int n);
int pp_post_send(struct pp_ctx *c, unsigned int qp);
void pp_free(struct pp_ctx *c);
int pp_init(struct pp_ctx *c, const struct pp_opts *o);
int pp_close(struct pp_ctx *c);
/* Each QP i to dest[i] (o->num_qp of them). */
int pp_connect(struct pp_ctx *c, const struct pp_dest *my, const struct pp_dest *dest);
/* The index of the QP with number qpn, or -1. */
int pp_find_qp(const struct pp_ctx *c, uint32_t qpn);

/* exchange.c: one address each way, or PP_MAX_QP with -T srq */
int client_exch_dest(const struct pp_opts *o, const struct pp_dest *my,
		     struct pp_dest *rem);
int server_exch_dest(struct pp_ctx *c, const struct pp_dest *my, struct pp_dest *rem);

/* main.c */
const char *vrdma_err(int ret);

#endif
