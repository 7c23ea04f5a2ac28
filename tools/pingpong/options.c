// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-pingpong's command line: rdma-core's pingpongs' flags, on
 * tools/common/opts.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/opts.h"
#include "pingpong.h"

/* ---- arguments ---- */

static int set_type(void *dest, const struct opt *opt, const char *arg);
static int set_size(void *dest, const struct opt *opt, const char *arg);
static int set_mtu(void *dest, const struct opt *opt, const char *arg);
static int set_gidx(void *dest, const struct opt *opt, const char *arg);
static int set_num_qp(void *dest, const struct opt *opt, const char *arg);
static int help(void *dest, const struct opt *opt, const char *arg);

#define OFF(field)	offsetof(struct pp_opts, field)
static const struct opt options[] = {
	{ 'T', "type", OPT_CALL, true, .call = set_type, .metavar = "rc|uc|ud|srq",
	  .help = "transport: as ibv_rc/uc/ud/srq_pingpong (default rc)" },
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
	{ 'q', "num-qp", OPT_CALL, true, .min = 1, .max = PP_MAX_QP, .call = set_num_qp,
	  .metavar = "num", .help = "number of QPs to use (default 16; -T srq only)" },
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
	} else if (!strcasecmp(arg, "srq")) {
		o->type = VIRTIO_IB_QPT_RC;
		o->srq = true;
	} else {
		fprintf(stderr, "%s: invalid transport '%s' for -T (rc, uc, ud or srq)\n", table.prog,
			arg);
		return -EINVAL;
	}
	return 0;
}

static int set_num_qp(void *dest, const struct opt *opt, const char *arg)
{
	struct pp_opts *o = dest;

	o->num_qp_set = true;
	return opt_uint(&table, opt, arg, &o->num_qp);
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

unsigned int mtu_bytes(int mtu)
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
int parse_args(int argc, char **argv, struct pp_opts *o)
{
	int ret, first;

	table.prog = argv[0];
	*o = (struct pp_opts){
		.type = VIRTIO_IB_QPT_RC, .tcp_port = DEFAULT_TCP_PORT, .ib_port = 1,
		.size = 4096, .mtu = 3, .rx_depth = 500, .iters = 1000, .gidx = 0,
		.timeout_s = DEFAULT_TIMEOUT_S, .num_qp = SRQ_DEFAULT_QPS,
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
	if (!o->srq && o->num_qp_set) {
		fprintf(stderr, "%s: -q is an option of -T srq only\n", table.prog);
		usage(stderr);
		return -EINVAL;
	}
	if (!o->srq)
		o->num_qp = 1;
	/* ibv_srq_pingpong has no -c: its QPs share one buffer */
	if (o->srq && o->chk) {
		fprintf(stderr, "%s: -c is not an option of -T srq\n", table.prog);
		usage(stderr);
		return -EINVAL;
	}
	if (o->srq && o->num_qp > o->rx_depth) {
		fprintf(stderr, "rx_depth %u is too small for %u QPs -- "
			"must have at least one receive per QP.\n", o->rx_depth, o->num_qp);
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
