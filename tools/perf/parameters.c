// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's options (perftest_parameters.c: the parser,
 * force_dependecies) and -a's sizes.
 */
#include <limits.h>
#include <stddef.h>

#include "common/opts.h"
#include "perf.h"

/* ---- parameters (perftest_parameters.c: parser, force_dependecies) ---- */

const char *prog = "vrdma-perf";

static int set_opt(void *dest, const struct opt *o, const char *arg);

#define OFF(field)	offsetof(struct perf, field)
#define ARG(k, long_name, meta, text) \
	{ k, long_name, OPT_CALL, true, .call = set_opt, .metavar = meta, .help = text }
/* a number in [lo, hi], checked (perftest's complaint names it name) before
 * set_opt's case */
#define RANGE(k, long_name, meta, name, lo, hi, text) \
	{ k, long_name, OPT_CALL, true, .min = lo, .max = hi, .call = set_opt, .metavar = meta, \
	  .what = name, .help = text }
#define NOARG(k, long_name, text) { k, long_name, OPT_CALL, false, .call = set_opt, .help = text }
/* In perftest's order of long options (getopt lists an abbreviation's
 * possibilities in it); the help is sorted by letter. perftest's own rules
 * and complaints for each value are set_opt's. */
static const struct opt options[] = {
	ARG('p', "port", "port", "Listen on/connect to port <port> (default " OPT_STR(DEF_PORT) ")"),
	{ 'd', "ib-dev", OPT_STRING, .off = OFF(dev), .metavar = "socket",
	  .help = "The VM's vhost-user socket (instead of an IB device)" },
	ARG('i', "ib-port", "port", "Use port <port> of the device (default 1)"),
	ARG('m', "mtu", "mtu", "MTU size : 256 - 4096 (default port mtu)"),
	ARG('s', "size", "size", "Size of message to exchange (default " OPT_STR(DEF_SIZE_BW)
	    "; latency " OPT_STR(DEF_SIZE_LAT) "; atomic " OPT_STR(DEF_SIZE_ATOMIC) ", fixed)"),
	RANGE('n', "iters", "iters", "Iteration num", MIN_ITER, MAX_ITER,
	      "Number of exchanges (at least " OPT_STR(MIN_ITER) ", default "
	      OPT_STR(DEF_ITERS) "; write_bw " OPT_STR(DEF_ITERS_WB) ")"),
	RANGE('t', "tx-depth", "dep", "Tx depth", MIN_TX, MAX_TX,
	      "Size of tx queue (default " OPT_STR(DEF_TX_BW) "; latency "
	      OPT_STR(DEF_TX_LAT) ")"),
	RANGE('u', "qp-timeout", "timeout", "QP Timeout", 0, 31,
	      "QP timeout, timeout value is 4 usec * 2 ^(timeout), default "
	      OPT_STR(DEF_QP_TIME)),
	ARG('S', "sl", "sl", "SL (default 0)"),
	RANGE('x', "gid-index", "index", "Gid index", 0, MAX_GID_IX,
	      "Test uses GID with GID index"),
	{ 'a', "all", OPT_SET, .off = OFF(run_all), .help = "Run sizes from 2 till 2^23" },
	NOARG('F', "CPU-freq", "Accepted; no effect (times come from CLOCK_MONOTONIC)"),
	ARG('c', "connection", "RC/UC/UD",
	    "Connection type (default RC): UC for send and write, UD for send"),
	ARG('q', "qp", "num of qp's", "Num of qp's(default 1); BW tests"),
	RANGE('I', "inline_size", "size", "Max inline", 0, MAX_INLINE,
	      "Max size of message to be sent in inline (device max "
	      OPT_STR(VRDMA_MAX_INLINE) ")"),
	ARG('o', "outs", "num", "num of outstanding read/atom(default max of device)"),
	NOARG('h', "help", "Show this help screen."),
	RANGE('r', "rx-depth", "dep", " Rx depth", MIN_RX, MAX_RX,
	      "Rx queue size (default " OPT_STR(DEF_RX_SEND) "); send tests"),
	NOARG('b', "bidirectional", "Measure bidirectional bandwidth (default unidirectional); BW tests"),
	RANGE('Q', "cq-mod", NULL, "CQ moderation", 1, MAX_CQ_MOD,
	      "Generate Cqe only after <--cq-mod> completion"),
	NOARG('N', "noPeak", "Cancel peak-bw calculation (default with peak up to iters=20000)"),
	NOARG('V', "version", "Display version number"),
	ARG('A', "atomic_type", "type", "type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD}"
	    " (default FETCH_AND_ADD); atomic tests"),
	ARG('l', "post_list", "list size", "Post list of send WQEs of <list size> size; BW tests"),
	ARG('D', "duration", NULL, "Run test for a customized period of seconds."),
	ARG('f', "margin", NULL, "measure results within margins. (default=duration/4)"),
	{ 'G' + 256, "report_gbits", OPT_SET, .off = OFF(gbits),
	  .help = "Report Max/Average BW of test in Gbit/sec (instead of MB/sec)" },
	{ 'K' + 256, "check", OPT_SET, .off = OFF(check),
	  .help = "vrdma-perf's own, for tests (both sides): send_bw over RC or UC only; each QP "
		  "sends a pattern of its own, the receiver checks every byte of every message "
		  "(buffers do not cycle)" },
};

static const struct opt_table table = {
	.opts = options, .n = sizeof(options) / sizeof(options[0]),
	.help_gap = 2, .help_sorted = true,
};

void usage(void)
{
	const char *argv0 = prog;

	printf("Usage:\n");
	printf("  %s TEST [options]            start a server and wait for connection\n", argv0);
	printf("  %s TEST [options] <host>     connect to server at <host>\n", argv0);
	printf("\nTEST: send_bw write_bw read_bw atomic_bw send_lat write_lat read_lat atomic_lat\n");
	printf("      (perftest's ib_TEST)\n");
	printf("\nOptions:\n");
	opt_usage(&table, stdout);
	printf("\nPerftest's out-of-band exchange (TCP, no rdma_cm) of perftest 4.5-0.17 (version %s).\n",
	       OOB_VERSION);
	printf("Not offered: rdma_cm (-R/-z), events (-e), SRQ, XRC/DC/SRD/RawEth, multicast,\n");
	printf("dual port, rate limiting, --run_infinitely, cycle reports (-C/-H/-U).\n");
}

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
		if (rd_atomic(p)) {
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
	if (rd_atomic(p))
		p->inline_size = 0;
	if (p->check && (p->verb != SEND || p->tst != BW || p->conn == UD)) {
		fprintf(stderr, " --check is for send_bw over RC or UC\n");
		return false;
	}
	if (p->run_all)
		p->size = MAX_SIZE;
	if (p->verb == ATOMIC && p->size != DEF_SIZE_ATOMIC) {
		printf(RESULT_LINE);
		printf("Message size cannot be changed for Atomic tests \n");
		return false;
	}
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

/* One option's value, by perftest's rules (CHECK_VALUE and the rest). */
static int set_opt(void *dest, const struct opt *o, const char *arg)
{
	struct perf *p = dest;
	long v = 0;

	if (o->what && !parse_range(arg, o->what, (long)o->min, (long)o->max, &v))
		return PARSE_ERROR;
	switch (o->key) {
	case 'p':
		if (!parse_long(arg, "Port", "int", &v))
			return PARSE_ERROR;
		p->port = (int)v;
		break;
	case 'i':
		if (!parse_long(arg, "IB Port", "uint8_t", &v))
			return PARSE_ERROR;
		if (v < 1 || v > 255) {
			fprintf(stderr, "IB Port can't be less than %d\n", 1);
			return PARSE_ERROR;
		}
		p->ib_port = (int)v;
		break;
	case 'm':
		if (!parse_long(arg, "MTU", "int", &v))
			return PARSE_ERROR;
		p->mtu = (int)v;
		break;
	case 'n':
		p->iters = (uint64_t)v;
		break;
	case 't':
		p->tx_depth = (int)v;
		break;
	case 'u':
		p->qp_timeout = (int)v;
		break;
	case 'S':
		if (!parse_long(arg, "Service Level", "uint8_t", &v))
			return PARSE_ERROR;
		if (v < 0 || v > 15) {
			fprintf(stderr, " Only %d Service levels\n", 15);
			return PARSE_ERROR;
		}
		p->sl = (int)v;
		break;
	case 'x':
		p->gid_index = (int)v;
		p->use_gid_user = true;
		break;
	case 'c':
		if (!parse_conn(p, arg))
			return PARSE_EXIT;	/* perftest exit(1)s here */
		break;
	case 'q':
		if (p->tst != BW) {
			fprintf(stderr, " Multiple QPs only available on bw tests\n");
			return PARSE_ERROR;
		}
		if (!parse_range(arg, "num of Qps", 1, MAX_QP_NUM, &v))
			return PARSE_ERROR;
		p->num_qps = (int)v;
		break;
	case 'I':
		if (rd_atomic(p)) {
			fprintf(stderr, " Inline feature not available on READ/Atomic verbs\n");
			return PARSE_ERROR;
		}
		p->inline_size = (int)v;
		break;
	case 'o':
		if (!parse_long(arg, "Outstanding Reads", "int", &v))
			return PARSE_ERROR;
		if (!rd_atomic(p)) {
			fprintf(stderr, " Setting Outstanding reads only available on READ verb\n");
			return PARSE_ERROR;
		}
		p->out_reads = (int)v;
		break;
	case 'r':
		if (p->verb != SEND && v > DEF_RX_RDMA) {
			fprintf(stderr, " On RDMA verbs rx depth can be only 1\n");
			return PARSE_ERROR;
		}
		p->rx_depth = (int)v;
		break;
	case 'A':
		if (p->verb != ATOMIC) {
			fprintf(stderr, " You are not running the atomic_lat/bw test!\n");
			fprintf(stderr, " To change the atomic action type, you must run one of the atomic tests\n");
			return PARSE_ERROR;
		}
		if (!strcmp(arg, "CMP_AND_SWAP")) {
			p->atomic_type = CMP_AND_SWAP;
		} else if (!strcmp(arg, "FETCH_AND_ADD")) {
			p->atomic_type = FETCH_AND_ADD;
		} else {
			fprintf(stderr, " Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}\n");
			return PARSE_EXIT;	/* perftest exit(1)s here */
		}
		break;
	case 'Q':
		p->cq_mod = (int)v;
		p->req_cq_mod = true;
		break;
	case 'l':
		if (!parse_long(arg, "Send Post List size", "int", &v))
			return PARSE_ERROR;
		if (v < 1 || v > MAX_TX) {
			fprintf(stderr, " Send Post List size should be between 1 and %d\n", MAX_TX);
			return PARSE_ERROR;
		}
		p->post_list = (int)v;
		break;
	case 'D':
		if (!parse_long(arg, "Duration period", "int", &v))
			return PARSE_ERROR;
		if (v <= 0 || v > INT_MAX / 4) {
			fprintf(stderr, " %s must be positive\n", "Duration period");
			return PARSE_ERROR;
		}
		p->duration = (int)v;
		p->dur_mode = true;
		break;
	case 'f':
		if (!parse_long(arg, "Margin", "int", &v))
			return PARSE_ERROR;
		if (v < 0 || v > INT_MAX / 4) {
			fprintf(stderr, " %s must be non-negative\n", "Margin");
			return PARSE_ERROR;
		}
		p->margin = (int)v;
		break;
	case 's':
		if (!parse_size(p, arg))
			return PARSE_ERROR;
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
	}
	return PARSE_OK;
}

int parse(struct perf *p, int argc, char **argv)
{
	int first, ret;

	p->port = DEF_PORT;
	p->ib_port = 1;
	p->size = p->verb == ATOMIC ? DEF_SIZE_ATOMIC : p->tst == BW ? DEF_SIZE_BW : DEF_SIZE_LAT;
	p->atomic_type = FETCH_AND_ADD;
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

	ret = opt_parse(&table, p, argc, argv, &first);
	if (ret == OPT_UNKNOWN) {
		usage();
		return PARSE_ERROR;
	}
	if (ret)
		return ret;
	if (first == argc - 1) {
		p->servername = argv[first];
	} else if (first < argc) {
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
