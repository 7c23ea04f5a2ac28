// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-pingpong: rdma-core's ibv_rc_pingpong, ibv_uc_pingpong and
 * ibv_ud_pingpong (v44) on a VM socket of vrdmad, through libvrdma. Same
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
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/opts.h"
#include "common/status.h"
#include "common/tcp.h"
#include "libvrdma.h"

enum { PINGPONG_RECV_WRID = 1, PINGPONG_SEND_WRID = 2 };

#define GRH_LEN			40u		/* before every UD receive's payload */
#define UD_QKEY			0x11111111u
#define DEFAULT_TCP_PORT	18515
#define DEFAULT_TIMEOUT_S	10
#define WIRE_MSG		"0000:000000:000000:00000000000000000000000000000000"
#define WIRE_LEN		sizeof(WIRE_MSG)	/* with the NUL, as rdma-core sends it */
#define DONE_LEN		sizeof("done")
/* Empty CQ polls between looks at the clock and at the daemon's socket. */
#define POLLS_PER_CHECK		16384u

struct pp_opts {
	uint8_t type;			/* VIRTIO_IB_QPT_RC / UC / UD */
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
	bool size_set, mtu_set;
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
	struct vrdma_qp *qp;
	uint8_t *buf;
	size_t buf_len;
	unsigned int grh;		/* GRH_LEN for UD, else 0 */
	uint32_t send_flags;
	struct virtio_rdma_rsp_query_port port;
	int pending;
	int routs;
	unsigned int rcnt, scnt;
	/* UD: what ibv_create_ah would hold, sent with every WR */
	struct virtio_rdma_av av;
	uint32_t remote_qpn;
};

static const char *event_name(unsigned int ev)
{
	switch (ev) {
	case VIRTIO_RDMA_EVENT_CQ_ERR:
		return "CQ error";
	case VIRTIO_RDMA_EVENT_QP_FATAL:
		return "local work queue catastrophic error";
	case VIRTIO_RDMA_EVENT_QP_REQ_ERR:
		return "invalid request local work queue error";
	case VIRTIO_RDMA_EVENT_QP_ACCESS_ERR:
		return "local access violation work queue error";
	case VIRTIO_RDMA_EVENT_SQ_DRAINED:
		return "send queue drained";
	default:
		return "unknown";
	}
}

/* libvrdma's errors; -ECONNRESET means the daemon dropped us. */
static const char *vrdma_err(int ret)
{
	return ret == -ECONNRESET ? "vrdmad closed the connection" : strerror(-ret);
}

/* ---- arguments ---- */

static int set_type(void *dest, const struct opt *opt, const char *arg);
static int set_size(void *dest, const struct opt *opt, const char *arg);
static int set_mtu(void *dest, const struct opt *opt, const char *arg);
static int set_gidx(void *dest, const struct opt *opt, const char *arg);
static int help(void *dest, const struct opt *opt, const char *arg);

#define OFF(field)	offsetof(struct pp_opts, field)
static const struct opt options[] = {
	{ 'T', "type", OPT_CALL, true, .call = set_type, .metavar = "rc|uc|ud",
	  .help = "transport: as ibv_rc/uc/ud_pingpong (default rc)" },
	{ 'p', "port", OPT_UINT, .off = OFF(tcp_port), .max = 65535, .metavar = "port",
	  .help = "listen on/connect to port <port> (default " OPT_STR(DEFAULT_TCP_PORT) ")" },
	{ 'd', "ib-dev", OPT_STRING, .off = OFF(socket), .metavar = "socket",
	  .help = "the VM's vhost-user socket (vrdmad's [vm] socket =)" },
	{ 'i', "ib-port", OPT_UINT, .off = OFF(ib_port), .min = 1, .max = 255, .metavar = "port",
	  .help = "use port <port> of the device (default 1)" },
	{ 's', "size", OPT_CALL, true, .max = INT_MAX, .call = set_size, .metavar = "size",
	  .help = "size of message to exchange (default 4096, ud 1024)" },
	{ 'm', "mtu", OPT_CALL, true, .max = UINT_MAX, .call = set_mtu, .metavar = "size",
	  .help = "path MTU (default 1024; not for ud)" },
	/* the device takes at most max_qp_wr (4096) receives */
	{ 'r', "rx-depth", OPT_UINT, .off = OFF(rx_depth), .min = 1, .max = 32768, .metavar = "dep",
	  .help = "number of receives to post at a time (default 500)" },
	{ 'n', "iters", OPT_UINT, .off = OFF(iters), .min = 1, .max = INT_MAX, .metavar = "iters",
	  .help = "number of exchanges (default 1000)" },
	{ 'l', "sl", OPT_UINT, .off = OFF(sl), .max = 15, .metavar = "sl",
	  .help = "service level value" },
	{ 'e', "events", OPT_SET, .off = OFF(events), .help = "sleep on CQ events (default poll)" },
	{ 'g', "gid-idx", OPT_CALL, true, .max = VIRTIO_RDMA_GID_TBL_LEN - 1, .call = set_gidx,
	  .metavar = "gid index", .help = "local port gid index (default 0)" },
	{ 'c', "chk", OPT_SET, .off = OFF(chk), .help = "validate received buffer" },
	{ 256 + 't', "timeout", OPT_UINT, .off = OFF(timeout_s), .min = 1, .max = 86400,
	  .metavar = "sec", .help = "give up after <sec> seconds without progress (default "
	  OPT_STR(DEFAULT_TIMEOUT_S) ")" },
	{ 'h', "help", OPT_CALL, .call = help, .help = "this text" },
};

static struct opt_table table = {
	.prog = "vrdma-pingpong", .opts = options, .n = sizeof(options) / sizeof(options[0]),
	.help_col = 25, .help_gap = 1,
};

static void usage(FILE *f)
{
	fprintf(f, "Usage:\n");
	fprintf(f, "  %s            start a server and wait for connection\n", table.prog);
	fprintf(f, "  %s <host>     connect to server at <host>\n", table.prog);
	fprintf(f, "\n");
	fprintf(f, "Options:\n");
	opt_usage(&table, f);
}

static int set_type(void *dest, const struct opt *opt, const char *arg)
{
	struct pp_opts *o = dest;

	(void)opt;
	if (!strcasecmp(arg, "rc")) {
		o->type = VIRTIO_IB_QPT_RC;
	} else if (!strcasecmp(arg, "uc")) {
		o->type = VIRTIO_IB_QPT_UC;
	} else if (!strcasecmp(arg, "ud")) {
		o->type = VIRTIO_IB_QPT_UD;
	} else {
		fprintf(stderr, "%s: invalid transport '%s' for -T (rc, uc or ud)\n", table.prog, arg);
		return -EINVAL;
	}
	return 0;
}

static int set_size(void *dest, const struct opt *opt, const char *arg)
{
	struct pp_opts *o = dest;

	o->size_set = true;
	return opt_uint(&table, opt, arg, &o->size);
}

static int mtu_to_enum(unsigned int mtu)
{
	switch (mtu) {
	case 256: return 1;
	case 512: return 2;
	case 1024: return 3;
	case 2048: return 4;
	case 4096: return 5;
	default: return 0;
	}
}

static unsigned int mtu_bytes(int mtu)
{
	return mtu >= VIRTIO_IB_MTU_256 && mtu <= VIRTIO_IB_MTU_4096 ? 128u << mtu : 0;
}

static int set_mtu(void *dest, const struct opt *opt, const char *arg)
{
	struct pp_opts *o = dest;
	unsigned int v;
	int ret;

	o->mtu_set = true;
	ret = opt_uint(&table, opt, arg, &v);
	if (!ret && !(o->mtu = mtu_to_enum(v))) {
		fprintf(stderr, "%s: invalid MTU '%s' for -m (256, 512, 1024, 2048 or 4096)\n",
			table.prog, arg);
		ret = -EINVAL;
	}
	return ret;
}

static int set_gidx(void *dest, const struct opt *opt, const char *arg)
{
	struct pp_opts *o = dest;
	unsigned int v;
	int ret;

	ret = opt_uint(&table, opt, arg, &v);
	o->gidx = (int)v;
	return ret;
}

static int help(void *dest, const struct opt *opt, const char *arg)
{
	(void)dest;
	(void)opt;
	(void)arg;
	usage(stdout);
	return 1;
}

/* 0 to run, 1 for -h (exit 0), a negative errno for bad arguments. */
static int parse_args(int argc, char **argv, struct pp_opts *o)
{
	int ret, first;

	*o = (struct pp_opts){
		.type = VIRTIO_IB_QPT_RC, .tcp_port = DEFAULT_TCP_PORT, .ib_port = 1,
		.size = 4096, .mtu = 3, .rx_depth = 500, .iters = 1000, .gidx = 0,
		.timeout_s = DEFAULT_TIMEOUT_S,
	};
	ret = opt_parse(&table, o, argc, argv, &first);
	if (ret == 1)
		return 1;
	if (ret) {
		usage(stderr);
		return ret == OPT_UNKNOWN ? -EINVAL : ret;
	}
	if (first == argc - 1) {
		o->servername = argv[first];
	} else if (first < argc) {
		fprintf(stderr, "%s: one server host name at most\n", table.prog);
		usage(stderr);
		return -EINVAL;
	}
	if (o->type == VIRTIO_IB_QPT_UD) {
		/* ibv_ud_pingpong has no -m: a UD message is one packet of the port's MTU */
		if (o->mtu_set) {
			fprintf(stderr, "%s: -m is not an option of -T ud (the port's MTU applies)\n",
				table.prog);
			usage(stderr);
			return -EINVAL;
		}
		if (!o->size_set)
			o->size = 1024;
	}
	if (!o->socket) {
		fprintf(stderr, "No IB devices found: give the VM's vhost-user socket with -d SOCKET\n");
		return -EINVAL;
	}
	return 0;
}

/* ---- the device ---- */

/* The QP pp_init makes (rdma-core's: one send, rx_depth receives). */
static struct vrdma_qp_init_attr qp_init_attr(const struct pp_opts *o, struct vrdma_cq *cq)
{
	return (struct vrdma_qp_init_attr){
		.qp_type = o->type,
		.send_cq = cq,
		.recv_cq = cq,
		.max_send_wr = 1,
		.max_recv_wr = o->rx_depth,
		.max_send_sge = 1,
		.max_recv_sge = 1,
	};
}

/* The shared memory for what pp_init makes (vrdma_open's mem_size). */
static size_t mem_needed(const struct pp_opts *o, size_t buf_len)
{
	struct vrdma_qp_init_attr qp = qp_init_attr(o, NULL);

	return vrdma_mem_ctx() + vrdma_mem_buf(buf_len) + vrdma_mem_reg_mr(buf_len ? buf_len : 1) +
	       vrdma_mem_cq(o->rx_depth + 1) + vrdma_mem_qp(&qp);
}

static int pp_post_recv(struct pp_ctx *c, unsigned int n)
{
	struct vrdma_sge sge = {
		.addr = (uintptr_t)c->buf,
		.length = c->o->size + c->grh,
		.lkey = vrdma_mr_lkey(c->mr),
	};
	struct vrdma_recv_wr wr = { .wr_id = PINGPONG_RECV_WRID, .sg_list = &sge, .num_sge = 1 };
	unsigned int i;

	for (i = 0; i < n; i++)
		if (vrdma_post_recv(c->qp, &wr))
			break;
	return (int)i;
}

static int pp_post_send(struct pp_ctx *c)
{
	/* UD sends from past the GRH area, as ibv_ud_pingpong */
	struct vrdma_sge sge = {
		.addr = (uintptr_t)(c->buf + c->grh),
		.length = c->o->size,
		.lkey = vrdma_mr_lkey(c->mr),
	};
	struct vrdma_send_wr wr = {
		.wr_id = PINGPONG_SEND_WRID,
		.opcode = VIRTIO_IB_WR_SEND,
		.send_flags = c->send_flags,
		.sg_list = &sge,
		.num_sge = 1,
	};

	if (c->o->type == VIRTIO_IB_QPT_UD) {
		wr.remote_qpn = c->remote_qpn;
		wr.remote_qkey = UD_QKEY;
		wr.av = c->av;
	}
	return vrdma_post_send(c->qp, &wr);
}

/* Frees whatever pp_init made; the daemon frees the device's side when the
 * connection closes, so a failure half-way needs nothing more. */
static void pp_free(struct pp_ctx *c)
{
	vrdma_close(c->dev);
	c->dev = NULL;
}

/* Open the VM's device and make the PD, MR, CQ and a QP in INIT, as
 * pp_init_ctx does. Returns 0 or -1 (said why). */
static int pp_init(struct pp_ctx *c, const struct pp_opts *o)
{
	struct vrdma_open_attr oattr = { 0 };
	struct vrdma_qp_init_attr init;
	struct virtio_rdma_qp_attr attr;
	uint32_t mask;
	int ret;

	memset(c, 0, sizeof(*c));
	c->o = o;
	c->grh = o->type == VIRTIO_IB_QPT_UD ? GRH_LEN : 0;
	c->send_flags = VIRTIO_IB_SEND_SIGNALED;
	c->buf_len = (size_t)o->size + c->grh;
	oattr.mem_size = mem_needed(o, c->buf_len);

	ret = vrdma_open(o->socket, &oattr, &c->dev);
	if (ret) {
		fprintf(stderr, "Couldn't get context for %s: %s\n", o->socket, vrdma_err(ret));
		if (ret == -ENOENT || ret == -ECONNREFUSED)
			fprintf(stderr, "(is vrdmad running, and is %s a [vm] socket of its config?)\n",
				o->socket);
		else if (ret == -ECONNRESET)
			fprintf(stderr, "(the device takes one front-end at a time: is a VM or another tool on it?)\n");
		return -1;
	}
	ret = vrdma_query_port(c->dev, (uint8_t)o->ib_port, &c->port);
	if (ret) {
		fprintf(stderr, "Unable to query port info for port %u: %s\n", o->ib_port,
			vrdma_err(ret));
		goto close_dev;
	}
	if (o->type == VIRTIO_IB_QPT_UD && o->size > mtu_bytes(c->port.active_mtu)) {
		fprintf(stderr, "Requested size larger than port MTU (%u)\n",
			mtu_bytes(c->port.active_mtu));
		goto close_dev;
	}
	/* the device refuses a path MTU above the port's (as rxe does): say so now
	 * rather than as "Failed to modify QP to RTR" after the exchange */
	if (o->type != VIRTIO_IB_QPT_UD && o->mtu > c->port.max_mtu) {
		fprintf(stderr, "Path MTU %u is above the port's maximum MTU %u (-m)\n",
			mtu_bytes(o->mtu), mtu_bytes(c->port.max_mtu));
		goto close_dev;
	}

	/* the device registers only its shared memory: the buffer lives there */
	c->buf = vrdma_alloc_buf(c->dev, c->buf_len ? c->buf_len : 1);
	if (!c->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		goto close_dev;
	}
	memset(c->buf, 0x7b, c->buf_len);

	ret = vrdma_alloc_pd(c->dev, &c->pd);
	if (ret) {
		fprintf(stderr, "Couldn't allocate PD: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	ret = vrdma_reg_mr(c->pd, c->buf, c->buf_len ? c->buf_len : 1, VIRTIO_IB_ACCESS_LOCAL_WRITE, &c->mr);
	if (ret) {
		fprintf(stderr, "Couldn't register MR: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	ret = vrdma_create_cq(c->dev, o->rx_depth + 1, &c->cq);
	if (ret) {
		fprintf(stderr, "Couldn't create CQ: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	init = qp_init_attr(o, c->cq);
	ret = vrdma_create_qp(c->pd, &init, &c->qp);
	if (ret) {
		fprintf(stderr, "Couldn't create QP: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	/* inline when the QP can carry the whole message, as rdma-core decides */
	ret = vrdma_query_qp(c->qp, VIRTIO_IB_QP_CAP, &attr);
	if (ret) {
		fprintf(stderr, "Couldn't query QP: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	if (attr.cap.max_inline_data >= o->size)
		c->send_flags |= VIRTIO_IB_SEND_INLINE;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = VIRTIO_IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = (uint8_t)o->ib_port;
	mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT;
	if (o->type == VIRTIO_IB_QPT_UD) {
		attr.qkey = UD_QKEY;
		mask |= VIRTIO_IB_QP_QKEY;
	} else {
		attr.qp_access_flags = 0;
		mask |= VIRTIO_IB_QP_ACCESS_FLAGS;
	}
	ret = vrdma_modify_qp(c->qp, &attr, mask);
	if (ret) {
		fprintf(stderr, "Failed to modify QP to INIT: %s\n", vrdma_err(ret));
		goto close_dev;
	}
	return 0;

close_dev:
	pp_free(c);
	return -1;
}

/* A step of pp_close: true if it failed (and said so). */
static bool failed(int ret, const char *what)
{
	if (ret)
		fprintf(stderr, "Couldn't %s: %s\n", what, vrdma_err(ret));
	return ret != 0;
}

/* Tear down in rdma-core's order; each failure is reported. */
static int pp_close(struct pp_ctx *c)
{
	bool bad = failed(vrdma_destroy_qp(c->qp), "destroy QP") ||
		   failed(vrdma_destroy_cq(c->cq), "destroy CQ") ||
		   failed(vrdma_dereg_mr(c->mr), "deregister MR") ||
		   failed(vrdma_dealloc_pd(c->pd), "deallocate PD");

	if (!bad)
		vrdma_free_buf(c->dev, c->buf);
	pp_free(c);
	return bad ? -1 : 0;
}

static bool gid_is_global(const uint8_t gid[16])
{
	static const uint8_t zero[8];

	/* rdma-core's test: a non-zero interface ID means a GID was sent */
	return memcmp(gid + 8, zero, sizeof(zero)) != 0;
}

static void fill_grh(const struct pp_ctx *c, const struct pp_dest *dest,
		     struct virtio_rdma_ah_attr *ah)
{
	memcpy(ah->grh.dgid, dest->gid, 16);
	ah->grh.sgid_index = (uint8_t)c->o->gidx;
	ah->grh.hop_limit = 1;
	ah->sl = (uint8_t)c->o->sl;
	ah->port_num = (uint8_t)c->o->ib_port;
	ah->ah_flags = VIRTIO_IB_AH_GRH;
	/* dmac left zero: libvrdma finds it in the neighbour table */
}

/* pp_connect_ctx: RTR then RTS towards dest (UD: and its "AH"). */
static int pp_connect(struct pp_ctx *c, unsigned int my_psn, const struct pp_dest *dest)
{
	const struct pp_opts *o = c->o;
	struct virtio_rdma_qp_attr attr;
	uint32_t mask;
	int ret;

	/* RoCE has no LIDs: every address needs the peer's GID (GRH) */
	if (!gid_is_global(dest->gid)) {
		fprintf(stderr, "The remote GID is zero: RoCE needs one (run the peer with -g)\n");
		fprintf(stderr, o->type == VIRTIO_IB_QPT_UD ? "Failed to create AH\n" :
			"Failed to modify QP to RTR\n");
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = VIRTIO_IB_QPS_RTR;
	mask = VIRTIO_IB_QP_STATE;
	if (o->type != VIRTIO_IB_QPT_UD) {
		attr.path_mtu = (uint8_t)o->mtu;
		attr.dest_qp_num = dest->qpn;
		attr.rq_psn = dest->psn;
		fill_grh(c, dest, &attr.ah_attr);
		mask |= VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN;
		if (o->type == VIRTIO_IB_QPT_RC) {
			attr.max_dest_rd_atomic = 1;
			attr.min_rnr_timer = 12;
			mask |= VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER;
		}
	}
	ret = vrdma_modify_qp(c->qp, &attr, mask);
	if (ret) {
		fprintf(stderr, "Failed to modify QP to RTR: %s\n", vrdma_err(ret));
		return -1;
	}

	attr.qp_state = VIRTIO_IB_QPS_RTS;
	attr.sq_psn = my_psn;
	mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN;
	if (o->type == VIRTIO_IB_QPT_RC) {
		attr.timeout = 14;
		attr.retry_cnt = 7;
		attr.rnr_retry = 7;
		attr.max_rd_atomic = 1;
		mask |= VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
	}
	ret = vrdma_modify_qp(c->qp, &attr, mask);
	if (ret) {
		fprintf(stderr, "Failed to modify QP to RTS: %s\n", vrdma_err(ret));
		return -1;
	}

	if (o->type == VIRTIO_IB_QPT_UD) {
		/* the AH is the AV every UD WR carries; its MAC is resolved at
		 * the first send (a peer VM of the same daemon needs none) */
		memset(&c->av, 0, sizeof(c->av));
		c->av.port = o->ib_port;
		c->av.sl_tclass_flowlabel = (uint32_t)o->sl << 28;
		memcpy(c->av.dgid, dest->gid, 16);
		c->av.gid_index = (uint8_t)o->gidx;
		c->av.hop_limit = 1;
		c->remote_qpn = dest->qpn;
	}
	return 0;
}

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

static int client_exch_dest(const struct pp_opts *o, const struct pp_dest *my,
			    struct pp_dest *rem)
{
	char msg[WIRE_LEN];
	int fd, ret = -1;
	ssize_t got;

	fd = tcp_connect(o->servername, (int)o->tcp_port, AF_UNSPEC, o->timeout_s);
	if (fd < 0)
		return -1;

	dest_to_wire(my, msg);
	if (write_all(fd, msg, WIRE_LEN)) {
		fprintf(stderr, "Couldn't send local address\n");
		goto close_fd;
	}
	got = read_all(fd, msg, WIRE_LEN);
	if (got != (ssize_t)WIRE_LEN || write_all(fd, "done", DONE_LEN)) {
		say_read_error("client read/write", got, WIRE_LEN);
		fprintf(stderr, "Couldn't read/write remote address\n");
		goto close_fd;
	}
	ret = wire_to_dest(msg, rem) ? -1 : 0;
close_fd:
	close(fd);
	return ret;
}

/* The server connects its QP between reading the client's address and
 * sending its own, as rdma-core's does. */
static int server_exch_dest(struct pp_ctx *c, const struct pp_dest *my, struct pp_dest *rem)
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

	got = read_all(fd, msg, WIRE_LEN);
	if (got != (ssize_t)WIRE_LEN) {
		say_read_error("server read", got, WIRE_LEN);
		fprintf(stderr, "%zd/%zu: Couldn't read remote address\n", got < 0 ? 0 : got,
			WIRE_LEN);
		goto close_fd;
	}
	if (wire_to_dest(msg, rem))
		goto close_fd;
	if (pp_connect(c, my->psn, rem)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto close_fd;
	}
	dest_to_wire(my, msg);
	if (write_all(fd, msg, WIRE_LEN)) {
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

/* ---- the ping-pong ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Has the daemon closed our vhost-user connection? */
static bool daemon_gone(struct pp_ctx *c)
{
	struct pollfd pfd = { .fd = vrdma_socket_fd(c->dev), .events = POLLRDHUP };

	return poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

static void say_timeout(const struct pp_ctx *c)
{
	fprintf(stderr, "No completion in %u s (%u sent, %u received): is the peer still there?\n",
		c->o->timeout_s, c->scnt, c->rcnt);
}

/* One completion, as parse_single_wc: count it, keep the receive queue
 * topped up, and send again once both the last send and a receive are
 * done. Returns 0 or -1 (said why). */
static int pp_handle_wc(struct pp_ctx *c, const struct virtio_rdma_cqe *wc)
{
	int wr_id = (int)wc->wr_id;

	/* ibverbs has these on the async fd, which rdma-core's tools do not
	 * read: not completions. A QP's error completions follow its event;
	 * after a CQ's, nothing more comes. */
	if (wc->opcode == VIRTIO_RDMA_WC_ASYNC_EVENT) {
		fprintf(stderr, "Got async event: %s (%u)%s\n", event_name(wc->vendor_err),
			wc->vendor_err, wc->qp_num ? " on the QP" : " on the CQ");
		return wc->vendor_err == VIRTIO_RDMA_EVENT_CQ_ERR ? -1 : 0;
	}
	if (wc->status != IB_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", wc_status_str(wc->status),
			wc->status, wr_id);
		return -1;
	}
	switch (wr_id) {
	case PINGPONG_SEND_WRID:
		c->scnt++;
		break;
	case PINGPONG_RECV_WRID:
		if (--c->routs <= 1) {
			c->routs += pp_post_recv(c, c->o->rx_depth - c->routs);
			if (c->routs < (int)c->o->rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n", c->routs);
				return -1;
			}
		}
		c->rcnt++;
		break;
	default:
		fprintf(stderr, "Completion for unknown wr_id %d\n", wr_id);
		return -1;
	}
	c->pending &= ~wr_id;
	if (c->scnt < c->o->iters && !c->pending) {
		if (pp_post_send(c)) {
			fprintf(stderr, "Couldn't post send\n");
			return -1;
		}
		c->pending = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

/* Until iters sends and iters receives have completed. */
static int pp_run(struct pp_ctx *c)
{
	const struct pp_opts *o = c->o;
	int64_t deadline = now_ms() + (int64_t)o->timeout_s * 1000;

	while (c->rcnt < o->iters || c->scnt < o->iters) {
		struct virtio_rdma_cqe wc[2];
		unsigned int polls = 0;
		int ne, i, ret;

		if (o->events) {
			int64_t left = deadline - now_ms();

			ret = left > 0 ? vrdma_cq_wait(c->cq, (int)left) : 0;
			if (!ret) {
				say_timeout(c);
				return -1;
			}
			if (ret < 0) {
				fprintf(stderr, "Failed to get cq_event: %s\n", vrdma_err(ret));
				return -1;
			}
			ret = vrdma_req_notify_cq(c->cq, false);
			if (ret) {
				fprintf(stderr, "Couldn't request CQ notification: %s\n",
					vrdma_err(ret));
				return -1;
			}
		}
		do {
			ne = vrdma_poll_cq(c->cq, 2, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return -1;
			}
			/* busy-polling sees neither a silent peer nor a dead daemon */
			if (!ne && !o->events && ++polls % POLLS_PER_CHECK == 0) {
				if (daemon_gone(c)) {
					fprintf(stderr, "poll CQ failed: vrdmad closed the connection\n");
					return -1;
				}
				if (now_ms() >= deadline) {
					say_timeout(c);
					return -1;
				}
			}
		} while (!o->events && ne < 1);
		if (ne > 0)
			deadline = now_ms() + (int64_t)o->timeout_s * 1000;
		for (i = 0; i < ne; i++) {
			if (pp_handle_wc(c, &wc[i])) {
				/* ibv_rc_pingpong says this too; uc and ud do not */
				if (o->type == VIRTIO_IB_QPT_RC)
					fprintf(stderr, "parse WC failed %d\n", ne);
				return -1;
			}
		}
	}
	return 0;
}

/* What the client sent (with -c it zeroes the first byte of every page of
 * a buffer filled with 0x7b): the server checks every byte of it. Returns
 * how many pages differ, each reported as rdma-core does. */
static unsigned int check_buf(const struct pp_ctx *c, size_t page_size)
{
	const uint8_t *data = c->buf + c->grh;
	unsigned int bad = 0;
	size_t page, i;

	for (page = 0; page * page_size < c->o->size; page++) {
		size_t end = (page + 1) * page_size;

		if (end > c->o->size)
			end = c->o->size;
		for (i = page * page_size; i < end; i++)
			if (data[i] != (i == page * page_size ? 0 : 0x7b))
				break;
		if (i < end) {
			printf("invalid data in page %zu\n", page);
			bad++;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct pp_dest my = { 0 }, rem = { 0 };
	struct timeval start, end;
	size_t page_size = (size_t)sysconf(_SC_PAGESIZE);
	struct pp_opts o;
	struct pp_ctx c;
	char gid[INET6_ADDRSTRLEN];
	unsigned int bad = 0;
	int ret;

	table.prog = argv[0];
	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 1;
	srand48(getpid() * time(NULL));

	if (pp_init(&c, &o))
		return 1;
	c.routs = pp_post_recv(&c, o.rx_depth);
	if (c.routs < (int)o.rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", c.routs);
		goto free_ctx;
	}
	if (o.events) {
		ret = vrdma_req_notify_cq(c.cq, false);
		if (ret) {
			fprintf(stderr, "Couldn't request CQ notification: %s\n", vrdma_err(ret));
			goto free_ctx;
		}
	}

	my.lid = 0;		/* RoCE: no LID */
	ret = vrdma_query_gid(c.dev, (unsigned int)o.gidx, my.gid);
	if (ret) {
		if (o.type == VIRTIO_IB_QPT_UD)
			fprintf(stderr, "Could not get local gid for gid index %d\n", o.gidx);
		else
			fprintf(stderr, "can't read sgid of index %d\n", o.gidx);
		goto free_ctx;
	}
	my.qpn = vrdma_qp_num(c.qp);
	my.psn = (unsigned int)(lrand48() & 0xffffff);
	inet_ntop(AF_INET6, my.gid, gid, sizeof(gid));
	/* ibv_ud_pingpong really prints "PSN 0x...: GID" here */
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n",
	       my.lid, my.qpn, my.psn, o.type == VIRTIO_IB_QPT_UD ? ":" : ",", gid);
	fflush(stdout);

	if (o.servername)
		ret = client_exch_dest(&o, &my, &rem);
	else
		ret = server_exch_dest(&c, &my, &rem);
	if (ret)
		goto free_ctx;

	inet_ntop(AF_INET6, rem.gid, gid, sizeof(gid));
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       rem.lid, rem.qpn, rem.psn, gid);
	fflush(stdout);

	if (o.servername && pp_connect(&c, my.psn, &rem))
		goto free_ctx;

	c.pending = PINGPONG_RECV_WRID;
	if (o.servername) {
		size_t i;

		if (o.chk)
			for (i = 0; i < o.size; i += page_size)
				c.buf[c.grh + i] = 0;	/* rdma-core's i / page_size % sizeof(char) */
		if (pp_post_send(&c)) {
			fprintf(stderr, "Couldn't post send\n");
			goto free_ctx;
		}
		c.pending |= PINGPONG_SEND_WRID;
	}

	if (gettimeofday(&start, NULL)) {
		perror("gettimeofday");
		goto free_ctx;
	}
	if (pp_run(&c))
		goto free_ctx;
	if (gettimeofday(&end, NULL)) {
		perror("gettimeofday");
		goto free_ctx;
	}

	{
		/* float, as rdma-core computes it */
		float usec = (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec);
		long long bytes = (long long)o.size * o.iters * 2;

		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n",
		       bytes, usec / 1000000., bytes * 8. / usec);
		printf("%u iters in %.2f seconds = %.2f usec/iter\n",
		       o.iters, usec / 1000000., usec / o.iters);
		if (!o.servername && o.chk)
			bad = check_buf(&c, page_size);
	}

	if (pp_close(&c))
		return 1;
	return bad ? 1 : 0;

free_ctx:
	pp_free(&c);
	return 1;
}
