// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's options (perftest_parameters.c: the parser,
 * force_dependecies) and -a's sizes.
 */
#include <getopt.h>
#include <limits.h>

#include "perf.h"

/* ---- parameters (perftest_parameters.c: parser, force_dependecies) ---- */

const char *prog = "vrdma-perf";

void usage(void)
{
	const char *argv0 = prog;

	printf("Usage:\n");
	printf("  %s TEST [options]            start a server and wait for connection\n", argv0);
	printf("  %s TEST [options] <host>     connect to server at <host>\n", argv0);
	printf("\nTEST: send_bw write_bw read_bw send_lat write_lat read_lat (perftest's ib_TEST)\n");
	printf("\nOptions:\n");
	printf("  -a, --all  Run sizes from 2 till 2^23\n");
	printf("  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional); BW tests\n");
	printf("  -c, --connection=<RC/UC/UD>  Connection type (default RC): UC for send and write, UD for send\n");
	printf("  -d, --ib-dev=<socket>  The VM's vhost-user socket (instead of an IB device)\n");
	printf("  -D, --duration  Run test for a customized period of seconds.\n");
	printf("  -f, --margin  measure results within margins. (default=duration/4)\n");
	printf("  -F, --CPU-freq  Accepted; no effect (times come from CLOCK_MONOTONIC)\n");
	printf("  -h, --help  Show this help screen.\n");
	printf("  -i, --ib-port=<port>  Use port <port> of the device (default 1)\n");
	printf("  -I, --inline_size=<size>  Max size of message to be sent in inline (device max %d)\n",
	       VRDMA_MAX_INLINE);
	printf("  -l, --post_list=<list size>  Post list of send WQEs of <list size> size; BW tests\n");
	printf("  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu)\n");
	printf("  -n, --iters=<iters>  Number of exchanges (at least %d, default %d; write_bw %d)\n",
	       MIN_ITER, DEF_ITERS, DEF_ITERS_WB);
	printf("  -N, --noPeak  Cancel peak-bw calculation (default with peak up to iters=20000)\n");
	printf("  -o, --outs=<num>  num of outstanding read/atom(default max of device)\n");
	printf("  -p, --port=<port>  Listen on/connect to port <port> (default %d)\n", DEF_PORT);
	printf("  -q, --qp=<num of qp's>  Num of qp's(default 1); BW tests\n");
	printf("  -Q, --cq-mod  Generate Cqe only after <--cq-mod> completion\n");
	printf("  -r, --rx-depth=<dep>  Rx queue size (default %d); send tests\n", DEF_RX_SEND);
	printf("  -s, --size=<size>  Size of message to exchange (default %d; latency %d)\n",
	       DEF_SIZE_BW, DEF_SIZE_LAT);
	printf("  -S, --sl=<sl>  SL (default 0)\n");
	printf("  -t, --tx-depth=<dep>  Size of tx queue (default %d; latency %d)\n", DEF_TX_BW, DEF_TX_LAT);
	printf("  -u, --qp-timeout=<timeout>  QP timeout, timeout value is 4 usec * 2 ^(timeout), default %d\n",
	       DEF_QP_TIME);
	printf("  -V, --version  Display version number\n");
	printf("  -x, --gid-index=<index>  Test uses GID with GID index\n");
	printf("      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MB/sec)\n");
	printf("\nPerftest's out-of-band exchange (TCP, no rdma_cm) of perftest 4.5-0.17 (version %s).\n",
	       OOB_VERSION);
	printf("Not offered: rdma_cm (-R/-z), events (-e), SRQ, XRC/DC/SRD/RawEth, multicast, atomics,\n");
	printf("dual port, rate limiting, --run_infinitely, cycle reports (-C/-H/-U).\n");
}

static const struct option long_options[] = {
	{ .name = "port",		.has_arg = 1, .val = 'p' },
	{ .name = "ib-dev",		.has_arg = 1, .val = 'd' },
	{ .name = "ib-port",		.has_arg = 1, .val = 'i' },
	{ .name = "mtu",		.has_arg = 1, .val = 'm' },
	{ .name = "size",		.has_arg = 1, .val = 's' },
	{ .name = "iters",		.has_arg = 1, .val = 'n' },
	{ .name = "tx-depth",		.has_arg = 1, .val = 't' },
	{ .name = "qp-timeout",		.has_arg = 1, .val = 'u' },
	{ .name = "sl",			.has_arg = 1, .val = 'S' },
	{ .name = "gid-index",		.has_arg = 1, .val = 'x' },
	{ .name = "all",		.has_arg = 0, .val = 'a' },
	{ .name = "CPU-freq",		.has_arg = 0, .val = 'F' },
	{ .name = "connection",		.has_arg = 1, .val = 'c' },
	{ .name = "qp",			.has_arg = 1, .val = 'q' },
	{ .name = "inline_size",	.has_arg = 1, .val = 'I' },
	{ .name = "outs",		.has_arg = 1, .val = 'o' },
	{ .name = "help",		.has_arg = 0, .val = 'h' },
	{ .name = "rx-depth",		.has_arg = 1, .val = 'r' },
	{ .name = "bidirectional",	.has_arg = 0, .val = 'b' },
	{ .name = "cq-mod",		.has_arg = 1, .val = 'Q' },
	{ .name = "noPeak",		.has_arg = 0, .val = 'N' },
	{ .name = "version",		.has_arg = 0, .val = 'V' },
	{ .name = "post_list",		.has_arg = 1, .val = 'l' },
	{ .name = "duration",		.has_arg = 1, .val = 'D' },
	{ .name = "margin",		.has_arg = 1, .val = 'f' },
	{ .name = "report_gbits",	.has_arg = 0, .val = 'G' + 256 },
	{ 0 }
};

/* CHECK_VALUE and friends: a whole integer, else perftest's complaint. */
static bool parse_long(const char *arg, const char *name, const char *type, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(arg, &end, 0);
	if (*arg == '\0' || *end != '\0' || errno) {
		fprintf(stderr, " %s argument %s should be %s\n", name, arg, type);
		return false;
	}
	return true;
}

static bool parse_range(const char *arg, const char *name, long lo, long hi, long *v)
{
	if (!parse_long(arg, name, "int", v))
		return false;
	if (*v < lo || *v > hi) {
		fprintf(stderr, " %s should be between %ld and %ld\n", name, lo, hi);
		return false;
	}
	return true;
}

/* change_conn_type, with what this device offers. */
static bool parse_conn(struct perf *p, const char *arg)
{
	if (!strcmp(arg, "RC")) {
		p->conn = RC;
	} else if (!strcmp(arg, "UC")) {
		if (p->verb == READ) {
			fprintf(stderr, " UC connection not possible in READ/ATOMIC verbs\n");
			return false;
		}
		p->conn = UC;
	} else if (!strcmp(arg, "UD")) {
		if (p->verb != SEND) {
			fprintf(stderr, " UD connection only possible in SEND verb\n");
			return false;
		}
		p->conn = UD;
	} else if (!strcmp(arg, "XRC") || !strcmp(arg, "DC") || !strcmp(arg, "SRD") ||
		   !strcmp(arg, "RawEth")) {
		fprintf(stderr, " %s connection is not supported by the virtio-rdma device\n", arg);
		return false;
	} else {
		fprintf(stderr, " Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}\n");
		return false;
	}
	return true;
}

static bool parse_size(struct perf *p, const char *optarg_in)
{
	char arg[64];
	size_t len = strlen(optarg_in);
	uint64_t factor = 1;
	long v;
	char *end;

	if (!len || len >= sizeof(arg)) {
		fprintf(stderr, " Message Size should be between %d and %u\n", 1, UINT_MAX / 2);
		return false;
	}
	memcpy(arg, optarg_in, len + 1);
	if (arg[len - 1] == 'K') {
		arg[len - 1] = '\0';
		factor = 1024;
	} else if (arg[len - 1] == 'M') {
		arg[len - 1] = '\0';
		factor = 1024 * 1024;
	}
	v = strtol(arg, &end, 0);
	p->size = v > 0 ? (uint64_t)v * factor : 0;
	p->req_size = true;
	if (p->size < 1 || p->size > UINT_MAX / 2) {
		fprintf(stderr, " Message Size should be between %d and %u\n", 1, UINT_MAX / 2);
		return false;
	}
	return true;
}

/* force_dependecies: the adjustments perftest makes after parsing. Returns
 * false where perftest exits. */
static bool force_dependencies(struct perf *p)
{
	if (!is_dur(p)) {
		if ((uint64_t)p->tx_depth > p->iters)
			p->tx_depth = (int)p->iters;
		if (p->verb == SEND && (uint64_t)p->rx_depth > p->iters)
			p->rx_depth = (int)p->iters;
		if ((p->conn == UD || p->conn == UC) && p->rx_depth == DEF_RX_SEND)
			p->rx_depth = p->iters < UC_MAX_RX ? (int)p->iters : UC_MAX_RX;
	}
	/* large messages: CQ moderation off, unless asked for */
	if (p->size > MSG_SIZE_CQ_MOD_LIMIT && p->conn != UD && !p->run_all) {
		if (!p->req_cq_mod) {
			p->cq_mod = 1;
		} else if (p->cq_mod > 1) {
			printf(RESULT_LINE);
			printf("Warning: Large message requested and CQ moderation enabled\n");
			printf("Warning: It can lead to inaccurate results\n");
		}
	}
	if (p->cq_mod > p->tx_depth)
		p->cq_mod = p->tx_depth;
	if (p->verb == READ)
		p->inline_size = 0;
	if (p->run_all)
		p->size = MAX_SIZE;
	if (p->post_list > 1) {
		if (p->tst != BW) {
			printf(RESULT_LINE);
			fprintf(stderr, "Post list is supported in BW tests only\n");
			return false;
		}
		if (!is_dur(p) && p->iters % (uint64_t)p->post_list) {
			printf(RESULT_LINE);
			fprintf(stderr, "Number of iterations must be a multiple of post list size\n");
			return false;
		}
		if (!p->req_cq_mod) {
			p->cq_mod = p->post_list;
			printf(RESULT_LINE);
			printf("Post List requested - CQ moderation will be the size of the post list\n");
		} else if (p->post_list % p->cq_mod) {
			printf(RESULT_LINE);
			fprintf(stderr, "Post list size must be a multiple of CQ moderation\n");
			return false;
		}
	}
	if (is_dur(p)) {
		p->iters = 0;
		p->no_peak = true;
		if (p->run_all) {
			printf(RESULT_LINE);
			fprintf(stderr, "Duration mode currently doesn't support running on all sizes.\n");
			return false;
		}
	}
	if (p->verb == SEND && p->tst == BW && p->machine == SERVER && !p->duplex)
		p->no_peak = true;
	if (p->conn == UD && p->inline_size > MAX_INLINE_UD) {
		printf(RESULT_LINE);
		fprintf(stderr, "Setting inline size to %d (Max inline size in UD)\n", MAX_INLINE_UD);
		p->inline_size = MAX_INLINE_UD;
	}
	/* perftest's work-around for an odd rx_depth in SEND */
	if (p->verb == SEND && p->rx_depth % 2 == 1 && !p->run_all)
		p->rx_depth += 1;
	if (!is_dur(p) && p->iters > 20000 && !p->no_peak && p->tst == BW)
		p->no_peak = true;
	if (is_dur(p) && p->margin < 0)
		p->margin = p->duration / 4;
	if (!(p->duration > 2 * p->margin)) {
		printf(RESULT_LINE);
		fprintf(stderr, "please check that DURATION > 2*MARGIN\n");
		return false;
	}
	return true;
}

int parse(struct perf *p, int argc, char **argv)
{
	long v;
	int c;

	p->port = DEF_PORT;
	p->ib_port = 1;
	p->size = p->tst == BW ? DEF_SIZE_BW : DEF_SIZE_LAT;
	p->tx_depth = p->tst == BW ? DEF_TX_BW : DEF_TX_LAT;
	p->qp_timeout = DEF_QP_TIME;
	p->conn = RC;
	p->num_qps = 1;
	p->gid_index = -1;
	p->inline_size = -1;
	p->rx_depth = p->verb == SEND ? DEF_RX_SEND : DEF_RX_RDMA;
	p->cq_mod = DEF_CQ_MOD;
	p->iters = p->tst == BW && p->verb == WRITE ? DEF_ITERS_WB : DEF_ITERS;
	p->post_list = 1;
	p->duration = DEF_DURATION;
	p->margin = -1;
	p->cycle_buffer = (int)sysconf(_SC_PAGESIZE);
	if (p->cycle_buffer <= 0)
		p->cycle_buffer = 4096;
	p->cache_line = (int)sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
	if (p->cache_line <= 0)
		p->cache_line = 64;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:d:i:m:s:n:t:u:S:x:c:q:I:o:r:Q:l:D:f:aFhbNV",
				long_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!parse_long(optarg, "Port", "int", &v))
				return PARSE_ERROR;
			p->port = (int)v;
			break;
		case 'd':
			p->dev = optarg;
			break;
		case 'i':
			if (!parse_long(optarg, "IB Port", "uint8_t", &v))
				return PARSE_ERROR;
			if (v < 1 || v > 255) {
				fprintf(stderr, "IB Port can't be less than %d\n", 1);
				return PARSE_ERROR;
			}
			p->ib_port = (int)v;
			break;
		case 'm':
			if (!parse_long(optarg, "MTU", "int", &v))
				return PARSE_ERROR;
			p->mtu = (int)v;
			break;
		case 'n':
			if (!parse_range(optarg, "Iteration num", MIN_ITER, MAX_ITER, &v))
				return PARSE_ERROR;
			p->iters = (uint64_t)v;
			break;
		case 't':
			if (!parse_range(optarg, "Tx depth", MIN_TX, MAX_TX, &v))
				return PARSE_ERROR;
			p->tx_depth = (int)v;
			break;
		case 'u':
			if (!parse_range(optarg, "QP Timeout", 0, 31, &v))
				return PARSE_ERROR;
			p->qp_timeout = (int)v;
			break;
		case 'S':
			if (!parse_long(optarg, "Service Level", "uint8_t", &v))
				return PARSE_ERROR;
			if (v < 0 || v > 15) {
				fprintf(stderr, " Only %d Service levels\n", 15);
				return PARSE_ERROR;
			}
			p->sl = (int)v;
			break;
		case 'x':
			if (!parse_range(optarg, "Gid index", 0, MAX_GID_IX, &v))
				return PARSE_ERROR;
			p->gid_index = (int)v;
			p->use_gid_user = true;
			break;
		case 'c':
			if (!parse_conn(p, optarg))
				return PARSE_EXIT;	/* perftest exit(1)s here */
			break;
		case 'q':
			if (p->tst != BW) {
				fprintf(stderr, " Multiple QPs only available on bw tests\n");
				return PARSE_ERROR;
			}
			if (!parse_range(optarg, "num of Qps", 1, MAX_QP_NUM, &v))
				return PARSE_ERROR;
			p->num_qps = (int)v;
			break;
		case 'I':
			if (!parse_range(optarg, "Max inline", 0, MAX_INLINE, &v))
				return PARSE_ERROR;
			if (p->verb == READ) {
				fprintf(stderr, " Inline feature not available on READ/Atomic verbs\n");
				return PARSE_ERROR;
			}
			p->inline_size = (int)v;
			break;
		case 'o':
			if (!parse_long(optarg, "Outstanding Reads", "int", &v))
				return PARSE_ERROR;
			if (p->verb != READ) {
				fprintf(stderr, " Setting Outstanding reads only available on READ verb\n");
				return PARSE_ERROR;
			}
			p->out_reads = (int)v;
			break;
		case 'r':
			if (!parse_range(optarg, " Rx depth", MIN_RX, MAX_RX, &v))
				return PARSE_ERROR;
			if (p->verb != SEND && v > DEF_RX_RDMA) {
				fprintf(stderr, " On RDMA verbs rx depth can be only 1\n");
				return PARSE_ERROR;
			}
			p->rx_depth = (int)v;
			break;
		case 'Q':
			if (!parse_range(optarg, "CQ moderation", 1, MAX_CQ_MOD, &v))
				return PARSE_ERROR;
			p->cq_mod = (int)v;
			p->req_cq_mod = true;
			break;
		case 'l':
			if (!parse_long(optarg, "Send Post List size", "int", &v))
				return PARSE_ERROR;
			if (v < 1 || v > MAX_TX) {
				fprintf(stderr, " Send Post List size should be between 1 and %d\n", MAX_TX);
				return PARSE_ERROR;
			}
			p->post_list = (int)v;
			break;
		case 'D':
			if (!parse_long(optarg, "Duration period", "int", &v))
				return PARSE_ERROR;
			if (v <= 0 || v > INT_MAX / 4) {
				fprintf(stderr, " %s must be positive\n", "Duration period");
				return PARSE_ERROR;
			}
			p->duration = (int)v;
			p->dur_mode = true;
			break;
		case 'f':
			if (!parse_long(optarg, "Margin", "int", &v))
				return PARSE_ERROR;
			if (v < 0 || v > INT_MAX / 4) {
				fprintf(stderr, " %s must be non-negative\n", "Margin");
				return PARSE_ERROR;
			}
			p->margin = (int)v;
			break;
		case 's':
			if (!parse_size(p, optarg))
				return PARSE_ERROR;
			break;
		case 'a':
			p->run_all = true;
			break;
		case 'F':
			break;	/* perftest: no warning about cpufreq; we use no cycles */
		case 'b':
			if (p->tst == LAT) {
				fprintf(stderr, " Bidirectional is only available in BW test\n");
				return PARSE_ERROR;
			}
			p->duplex = true;
			break;
		case 'N':
			if (p->tst == LAT) {
				fprintf(stderr, " NoPeak only valid for BW tests\n");
				return PARSE_ERROR;
			}
			p->no_peak = true;
			break;
		case 'V':
			printf("Version: %s\n", OOB_VERSION);
			return PARSE_EXIT;
		case 'h':
			usage();
			return PARSE_EXIT;
		case 'G' + 256:
			p->gbits = true;
			break;
		default:
			usage();
			return PARSE_ERROR;
		}
	}
	if (optind == argc - 1) {
		p->servername = argv[optind];
	} else if (optind < argc) {
		fprintf(stderr, " Invalid Command line. Please check command rerun \n");
		return PARSE_ERROR;
	}
	p->machine = p->servername ? CLIENT : SERVER;
	if (!force_dependencies(p))
		return PARSE_EXIT;
	return PARSE_OK;
}

/* -a: sizes 2^1 .. 2^(max_pow - 1); UD sends stop at the MTU. */
static int size_max_pow(const struct perf *p)
{
	int pow2 = 0;

	if (!(p->verb == SEND && p->conn == UD))
		return 24;
	while (((uint64_t)1 << pow2) < MTU_SIZE(p->curr_mtu))
		pow2++;
	return pow2 + 1;
}

int first_size(struct perf *p)
{
	if (p->run_all)
		p->size = 2;
	return p->run_all ? 1 : 0;
}

bool next_size(struct perf *p, int *k)
{
	if (!p->run_all || ++*k >= size_max_pow(p))
		return false;
	p->size = (uint64_t)1 << *k;
	return true;
}
