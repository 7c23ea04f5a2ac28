// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf: perftest's ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat,
 * ib_write_lat and ib_read_lat in one program, on a VM's virtio-rdma device
 * reached through libvrdma (-d is the VM's vhost-user socket).
 *
 *   vrdma-perf TEST [options] [SERVER]
 *
 * It follows perftest 4.5-0.17 (Debian 12's 4.5+0.17-1, VERSION "6.06")
 * step by step: the same out-of-band TCP exchange (perf_oob.h), the same
 * handshakes in the same places, the same QP attributes, posting pattern
 * (tx depth, CQ moderation, inline, post list, cyclic buffer addresses) and
 * the same report arithmetic, so that either side may be a real perftest.
 * Times come from CLOCK_MONOTONIC instead of the CPU cycle counter.
 *
 * Differences that a peer cannot see are listed in usage().
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>

#include "libvrdma.h"
#include "perf_oob.h"
#include "roce_wire.h"

/* ---- IB numbers the ABI header does not name ---- */

#define IB_PORT_ACTIVE		4
#define IB_WC_SUCCESS		0

/* ---- perftest's defaults and limits (perftest_parameters.h) ---- */

#define DEF_PORT		18515
#define DEF_SIZE_BW		65536
#define DEF_SIZE_LAT		2
#define DEF_ITERS		1000
#define DEF_ITERS_WB		5000
#define DEF_TX_BW		128
#define DEF_TX_LAT		1
#define DEF_QP_TIME		14
#define DEF_RX_RDMA		1
#define DEF_RX_SEND		512
#define DEF_CQ_MOD		100
#define DEF_DURATION		5
#define DEF_QKEY		0x11111111u
#define DEF_INLINE_WRITE	220
#define DEF_INLINE_SEND_RC_UC	236
#define DEF_INLINE_SEND_UD	188
#define MAX_SIZE		8388608u
#define MIN_ITER		5
#define MAX_ITER		100000000
#define MIN_TX			1
#define MAX_TX			15000
#define MAX_GID_IX		64
#define MAX_QP_NUM		16384
#define MIN_RX			1
#define MAX_RX			16384
#define UC_MAX_RX		16000
#define MAX_CQ_MOD		1024
#define MAX_INLINE		912
#define MAX_INLINE_UD		884
#define MSG_SIZE_CQ_MOD_LIMIT	8192
#define UD_ADDITION		40
#define MIN_RNR_TIMER		12
#define CTX_POLL_BATCH		16
#define LAT_MEASURE_TAIL	2
#define MTU_FIX			7
#define MTU_SIZE(m)		((uint64_t)1 << (MTU_FIX + (m)))

/* The device's inline limit (docs/virtio-rdma.md, CREATE_QP): the config
 * space does not carry it. */
#define VRDMA_MAX_INLINE	512
/* Buffers are laid out with perftest's cycle buffer, the larger of the two
 * sides' page sizes: the shared memory is sized for up to this. */
#define MAX_CYCLE_BUFFER	65536

/* Never wait forever once connected: the data path gives up when nothing
 * completes for STALL_MS; the exchange when the peer says nothing for
 * SETUP_TIMEOUT_MS before the test, RUN_TIMEOUT_MS (+ duration) once the
 * peer may be measuring (perftest's passive side waits the whole test). */
#define STALL_MS		10000
#define SETUP_TIMEOUT_MS	60000
#define RUN_TIMEOUT_MS		600000

#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define RESULT_FMT	" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
#define RESULT_FMT_G	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
#define RESULT_FMT_LAT	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99" "%" " percentile[usec]   99.9" "%" " percentile[usec] "
#define RESULT_FMT_LAT_DUR " #bytes        #iterations       t_avg[usec]    tps average"
#define REPORT_FMT	" %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf"
#define REPORT_FMT_EXT	" %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf"
#define REPORT_FMT_LAT	" %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
#define REPORT_FMT_LAT_DUR " %-7lu       %" PRIu64 "            %-7.2f        %-7.2f"
#define BASIC_ADDR_FMT	" %s address: LID %#04x QPN %#06x PSN %#06x"
#define READ_FMT	" OUT %#04x"
#define RDMA_FMT	" RKey %#08x VAddr %#016llx"
#define PERF_GID_FMT	" %s: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n"

enum verb { SEND, WRITE, READ };		/* perftest's VerbType order */
enum tst { LAT, BW };
enum conn { RC, UC, UD };
enum machine { SERVER, CLIENT };
enum dstate { START_STATE, SAMPLE_STATE, STOP_SAMPLE_STATE, END_STATE };

static const char *const conn_str[] = { "RC", "UC", "UD" };
static const char *const verb_str[] = { "Send", "RDMA_Write", "RDMA_Read" };

/* One QP's sending and receiving state (perftest keeps these in arrays of
 * its pingpong_context). */
struct qpc {
	struct vrdma_qp *qp;
	struct vrdma_sge *sge;		/* post_list send SGEs */
	uint64_t *raddr;		/* and their remote addresses */
	uint32_t *flags;		/* and send flags */
	uint64_t my_addr, rem_addr;	/* where the cycles start */
	uint64_t scnt, ccnt;
	struct vrdma_sge rsge;		/* the receive SGE */
	uint64_t rx_base;
	uint64_t rcnt, unused, posted;
};

struct perf {
	/* what was asked */
	enum verb verb;
	enum tst tst;
	const char *dev;
	char *servername;
	int port, ib_port, mtu, curr_mtu;
	uint64_t size, iters;
	uint64_t alloc_size;			/* the size the buffer was laid out for */
	bool req_size, req_cq_mod, duplex, no_peak, run_all, dur_mode, gbits, use_gid_user;
	int tx_depth, rx_depth, cq_mod, num_qps, inline_size, out_reads, conn;
	int post_list, duration, margin, gid_index, sl, qp_timeout;
	enum machine machine;
	int cycle_buffer, cache_line;
	char version[OOB_MAX_VERSION], rem_version[OOB_MAX_VERSION];

	/* the device */
	struct vrdma_ctx *ctx;
	struct virtio_rdma_config cfg;
	struct virtio_rdma_rsp_query_port port_attr;
	struct vrdma_pd *pd;
	uint8_t *buf;
	size_t buff_size, qp_buff;		/* all of it; one QP's slot in a half */
	struct vrdma_mr *mr;
	struct vrdma_cq *send_cq, *recv_cq;
	struct qpc *q;
	int nq;					/* QPs created */

	/* the exchange */
	struct oob oob;
	struct oob_dest *my, *rem;

	/* measurements, in CLOCK_MONOTONIC ns (perftest: cycles) */
	uint64_t *tposted, *tcompleted;
	enum dstate state;
	uint64_t t_next;
	int run_timeout_ms;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool is_dur(const struct perf *p)
{
	return p->dur_mode;
}

/* ---- duration mode: perftest's SIGALRM state machine, on the clock ---- */

/* catch_alarm: START -> SAMPLE -> STOP_SAMPLE -> END, margin seconds at
 * each edge. */
static void dur_advance(struct perf *p, uint64_t now)
{
	switch (p->state) {
	case START_STATE:
		p->state = SAMPLE_STATE;
		p->tposted[0] = now;
		p->t_next = now + (uint64_t)(p->duration - 2 * p->margin) * 1000000000u;
		break;
	case SAMPLE_STATE:
		p->state = STOP_SAMPLE_STATE;
		p->tcompleted[0] = now;
		if (p->margin > 0)
			p->t_next = now + (uint64_t)p->margin * 1000000000u;
		else
			p->state = END_STATE;
		break;
	case STOP_SAMPLE_STATE:
		p->state = END_STATE;
		break;
	case END_STATE:
		break;
	}
}

static void dur_start(struct perf *p)
{
	uint64_t now = now_ns();

	p->iters = 0;
	p->state = START_STATE;
	if (p->margin > 0)
		p->t_next = now + (uint64_t)p->margin * 1000000000u;
	else
		dur_advance(p, now);
}

static void dur_tick(struct perf *p)
{
	uint64_t now;

	if (!is_dur(p) || p->state == END_STATE)
		return;
	now = now_ns();
	while (p->state != END_STATE && now >= p->t_next)
		dur_advance(p, now);
}

/* ---- parameters (perftest_parameters.c: parser, force_dependecies) ---- */

static const char *prog = "vrdma-perf";

static void usage(void)
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

enum { PARSE_OK, PARSE_ERROR, PARSE_EXIT };

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

static int parse(struct perf *p, int argc, char **argv)
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

/* ---- the device ---- */

static size_t page_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

static size_t ring_num(uint32_t n)
{
	size_t num = 1;

	while (num < n)
		num <<= 1;
	return num;
}

/* BUFF_SIZE and INC of perftest_resources.h */
static uint64_t buff_size_of(uint64_t size, int cycle_buffer)
{
	return size < (uint64_t)cycle_buffer ? (uint64_t)cycle_buffer : size;
}

static uint64_t inc_of(uint64_t size, int cache_line)
{
	uint64_t cl = (uint64_t)cache_line;

	return size > cl ? (size + cl - 1) / cl * cl : cl;
}

/* alloc_ctx's buffer: a send half and a receive half per QP. */
static size_t data_buffer_size(const struct perf *p, int cycle_buffer)
{
	size_t n = inc_of(buff_size_of(p->size, cycle_buffer), p->cache_line) * 2 * (size_t)p->num_qps;

	if (p->conn == UD)
		n += (size_t)p->cache_line;
	return n;
}

/* The shared memory: the data buffer, every ring and WQE slot, the MR's page
 * array while it is registered, and some room (each allocation is rounded to
 * pages). */
static size_t mem_size_for(const struct perf *p)
{
	size_t sq = ring_num((uint32_t)p->tx_depth), rq = ring_num((uint32_t)p->rx_depth);
	size_t slot = (88 + 16 + (size_t)(p->inline_size > 0 ? p->inline_size : VRDMA_MAX_INLINE) + 7) & ~7u;
	size_t data = data_buffer_size(p, MAX_CYCLE_BUFFER);
	size_t per_qp = page_up(sq * 32 + 16) + page_up(sq * slot) + page_up(rq * 32 + 16) +
			page_up(rq * 32);
	size_t cqs = 2 * (page_up(ring_num((uint32_t)(p->tx_depth * p->num_qps)) * 72) +
			  page_up(ring_num((uint32_t)(p->rx_depth * p->num_qps)) * 72));

	return page_up(data) + page_up(data / 512 + 8) + (size_t)p->num_qps * per_qp + cqs + (2u << 20);
}

/* ctx_set_out_reads */
static int out_reads_for(const struct perf *p)
{
	int max_reads = (int)p->cfg.max_qp_rd_atom;

	if (p->out_reads > max_reads) {
		printf(RESULT_LINE);
		fprintf(stderr, " Number of outstanding reads is above max = %d\n", max_reads);
		fprintf(stderr, " Changing to that max value\n");
		return max_reads;
	}
	return p->out_reads <= 0 ? max_reads : p->out_reads;
}

/* check_link (set_link_layer, ctx_set_max_inline, ctx_set_out_reads): a
 * virtio-rdma port is RoCE, so its link layer is Ethernet and a GID index
 * is always used. */
static int check_link(struct perf *p)
{
	int ret;

	ret = vrdma_query_port(p->ctx, (uint8_t)p->ib_port, &p->port_attr);
	if (ret) {
		fprintf(stderr, " Unable to query port %d attributes\n", p->ib_port);
		fprintf(stderr, " Couldn't set the link layer\n");
		return ret;
	}
	if (p->port_attr.state != IB_PORT_ACTIVE) {
		fprintf(stderr, " Port number %d state is %s\n", p->ib_port,
			p->port_attr.state == 1 ? "Down" : p->port_attr.state == 2 ? "Init" :
			p->port_attr.state == 3 ? "Armed" : "Nop");
		fprintf(stderr, " Couldn't set the link layer\n");
		return -ENETDOWN;
	}
	if (p->gid_index == -1)
		p->gid_index = 0;
	/* perftest's inline defaults for a device it knows: latency tests only */
	if (p->inline_size == -1) {
		if (p->tst == LAT && p->verb == WRITE)
			p->inline_size = DEF_INLINE_WRITE;
		else if (p->tst == LAT && p->verb == SEND)
			p->inline_size = p->conn == UD ? DEF_INLINE_SEND_UD : DEF_INLINE_SEND_RC_UC;
		else
			p->inline_size = 0;
	}
	if (p->inline_size > VRDMA_MAX_INLINE) {
		printf("  Actual inline-size(%d) > requested inline-size(%d)\n", VRDMA_MAX_INLINE,
		       p->inline_size);
		p->inline_size = VRDMA_MAX_INLINE;
	}
	p->out_reads = p->verb == READ ? out_reads_for(p) : 1;
	return 0;
}

/* set_mtu: the port's active MTU unless asked for a smaller one. */
static int set_mtu(const struct perf *p)
{
	int active = p->port_attr.active_mtu, m;

	if (!p->mtu)
		return active;
	switch (p->mtu) {
	case 256: m = 1; break;
	case 512: m = 2; break;
	case 1024: m = 3; break;
	case 2048: m = 4; break;
	case 4096: m = 5; break;
	default:
		fprintf(stderr, " Invalid MTU - %d \n", p->mtu);
		fprintf(stderr, " Please choose mtu from {256,512,1024,2048,4096}\n");
		fprintf(stderr, " Will run with the port active mtu - %d\n", active);
		m = active;
	}
	if (m > active) {
		fprintf(stdout, "Requested mtu is higher than active mtu \n");
		fprintf(stdout, "Changing to active mtu - %d\n", active);
		m = active;
	}
	return m;
}

/* ctx_init: PD, one MR over the whole buffer, CQs, QPs moved to INIT. */
static int ctx_init(struct perf *p)
{
	unsigned int access = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	struct vrdma_qp_init_attr init;
	struct virtio_rdma_qp_attr a;
	uint32_t mask;
	size_t i;
	int ret;

	ret = vrdma_alloc_pd(p->ctx, &p->pd);
	if (ret) {
		fprintf(stderr, "Couldn't allocate PD\n");
		return ret;
	}
	p->alloc_size = p->size;
	p->qp_buff = inc_of(buff_size_of(p->size, p->cycle_buffer), p->cache_line);
	p->buff_size = data_buffer_size(p, p->cycle_buffer);
	p->buf = vrdma_alloc_buf(p->ctx, p->buff_size);
	if (!p->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		return -ENOMEM;
	}
	/* random contents, except write_lat's polled buffer (as perftest) */
	if (!(p->verb == WRITE && p->tst == LAT)) {
		srand((unsigned int)time(NULL));
		for (i = 0; i < p->buff_size; i++)
			p->buf[i] = (uint8_t)rand();
	}
	if (p->verb == WRITE)
		access |= VIRTIO_IB_ACCESS_REMOTE_WRITE;
	else if (p->verb == READ)
		access |= VIRTIO_IB_ACCESS_REMOTE_READ;
	ret = vrdma_reg_mr(p->pd, p->buf, p->buff_size, access, &p->mr);
	if (ret) {
		fprintf(stderr, "Couldn't allocate MR\n");
		return ret;
	}
	ret = vrdma_create_cq(p->ctx, (uint32_t)(p->tx_depth * p->num_qps), &p->send_cq);
	if (ret) {
		fprintf(stderr, "Couldn't create CQ\n");
		return ret;
	}
	p->recv_cq = p->send_cq;
	if (p->verb == SEND) {
		ret = vrdma_create_cq(p->ctx, (uint32_t)(p->rx_depth * p->num_qps), &p->recv_cq);
		if (ret) {
			fprintf(stderr, "Couldn't create a receiver CQ\n");
			return ret;
		}
	}
	for (p->nq = 0; p->nq < p->num_qps; p->nq++) {
		struct qpc *q = &p->q[p->nq];

		init = (struct vrdma_qp_init_attr){
			.qp_type = p->conn == RC ? VIRTIO_IB_QPT_RC :
				   p->conn == UC ? VIRTIO_IB_QPT_UC : VIRTIO_IB_QPT_UD,
			.send_cq = p->send_cq, .recv_cq = p->recv_cq,
			.max_send_wr = (uint32_t)p->tx_depth, .max_recv_wr = (uint32_t)p->rx_depth,
			.max_send_sge = 1, .max_recv_sge = 1,
			.max_inline_data = (uint32_t)p->inline_size,
		};
		ret = vrdma_create_qp(p->pd, &init, &q->qp);
		if (ret) {
			/* the device says INVAL for a size beyond its limits
			 * (perftest's hint is for ENOMEM from a verbs driver) */
			if (ret == -EINVAL) {
				fprintf(stderr, "Requested QP size might be too big. Try reducing TX depth and/or inline size.\n");
				fprintf(stderr, "Current TX depth is %d and inline size is %d .\n",
					p->tx_depth, p->inline_size);
			}
			fprintf(stderr, "Failed to create QP %d of %d: %s (TX depth %d, RX depth %d; device max_qp %u, max_qp_wr %u)\n",
				p->nq + 1, p->num_qps, strerror(-ret), p->tx_depth, p->rx_depth,
				p->cfg.max_qp, p->cfg.max_qp_wr);
			return ret;
		}
		/* ctx_modify_qp_to_init */
		memset(&a, 0, sizeof(a));
		a.qp_state = VIRTIO_IB_QPS_INIT;
		a.port_num = (uint8_t)p->ib_port;
		mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT;
		if (p->conn == UD) {
			a.qkey = DEF_QKEY;
			mask |= VIRTIO_IB_QP_QKEY;
		} else {
			a.qp_access_flags = p->verb == READ ? VIRTIO_IB_ACCESS_REMOTE_READ :
					    p->verb == WRITE ? VIRTIO_IB_ACCESS_REMOTE_WRITE :
					    VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_LOCAL_WRITE;
			mask |= VIRTIO_IB_QP_ACCESS_FLAGS;
		}
		ret = vrdma_modify_qp(q->qp, &a, mask);
		if (ret) {
			fprintf(stderr, "Failed to modify QP to INIT, ret=%d\n", ret);
			vrdma_destroy_qp(q->qp);
			q->qp = NULL;
			return ret;
		}
	}
	return 0;
}

/* get_best_gid_index: an IPv4-mapped GID over one that is not (every GID of
 * this device is RoCEv2, so the RoCE version never decides). */
static int best_gid_index(struct perf *p)
{
	uint8_t cur[16], rival[16];
	int best = 0, i;

	for (i = 1; i < (int)p->port_attr.gid_tbl_len && i < VIRTIO_RDMA_GID_TBL_LEN; i++) {
		if (vrdma_query_gid(p->ctx, (unsigned int)best, cur))
			memset(cur, 0, sizeof(cur));
		if (vrdma_query_gid(p->ctx, (unsigned int)i, rival))
			continue;
		if (roce_gid_is_v4(rival) && !roce_gid_is_v4(cur))
			best = i;
	}
	return best;
}


/* set_up_connection: this side's address for every QP. The receive (and
 * RDMA target) half of the buffer is what vaddr names, as in perftest. */
static int set_up_connection(struct perf *p)
{
	uint64_t stride = buff_size_of(p->size, p->cycle_buffer);
	uint8_t gid[16];
	int i, ret;

	srand48((long)getpid() * time(NULL));
	if (!p->use_gid_user)
		p->gid_index = best_gid_index(p);
	ret = vrdma_query_gid(p->ctx, (unsigned int)p->gid_index, gid);
	if (ret) {
		fprintf(stderr, " Couldn't read GID index %d of port %d\n", p->gid_index, p->ib_port);
		return ret;
	}
	for (i = 0; i < p->num_qps; i++) {
		struct oob_dest *d = &p->my[i];

		d->lid = 0;	/* RoCE has no LID */
		d->qpn = (int)vrdma_qp_num(p->q[i].qp);
		d->psn = (int)(lrand48() & ROCE_PSN_MASK);
		d->rkey = vrdma_mr_rkey(p->mr);
		d->out_reads = p->out_reads;
		d->vaddr = (uintptr_t)p->buf + ((uint64_t)p->num_qps + (uint64_t)i) * stride;
		memcpy(d->gid, gid, sizeof(gid));
		d->srqn = 0;
	}
	return 0;
}

static uint8_t clamp_rd_atom(const struct perf *p, int want)
{
	int max = (int)p->cfg.max_qp_init_rd_atom;

	if (max <= 0 || max > 255)
		max = 255;
	return (uint8_t)(want < 1 ? 1 : want > max ? max : want);
}

/* The address vector perftest builds in ctx_modify_qp_to_rtr (GRH: RoCE). */
static void fill_ah(const struct perf *p, const struct oob_dest *rem, struct virtio_rdma_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid, rem->gid, 16);
	ah->grh.sgid_index = (uint8_t)p->gid_index;
	ah->grh.hop_limit = 0xff;
	ah->grh.traffic_class = 0;
	ah->sl = (uint8_t)p->sl;
	ah->port_num = (uint8_t)p->ib_port;
	ah->ah_flags = VIRTIO_IB_AH_GRH;
}

/* ctx_connect: every QP to RTR, and to RTS where it sends (a BW server
 * that only receives stays in RTR, as perftest's). */
static int ctx_connect(struct perf *p)
{
	struct virtio_rdma_qp_attr a;
	uint32_t mask;
	int i, ret;

	for (i = 0; i < p->num_qps; i++) {
		const struct oob_dest *rem = &p->rem[i], *my = &p->my[i];

		memset(&a, 0, sizeof(a));
		a.qp_state = VIRTIO_IB_QPS_RTR;
		fill_ah(p, rem, &a.ah_attr);
		mask = VIRTIO_IB_QP_STATE;
		if (p->conn != UD) {
			a.path_mtu = (uint8_t)p->curr_mtu;
			a.dest_qp_num = (uint32_t)rem->qpn;
			a.rq_psn = (uint32_t)rem->psn;
			mask |= VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN;
			if (p->conn == RC) {
				a.max_dest_rd_atomic = clamp_rd_atom(p, my->out_reads);
				a.min_rnr_timer = MIN_RNR_TIMER;
				mask |= VIRTIO_IB_QP_MIN_RNR_TIMER | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC;
			}
		}
		ret = vrdma_modify_qp(p->q[i].qp, &a, mask);
		if (ret) {
			fprintf(stderr, "Failed to modify QP %d to RTR\n", my->qpn);
			return ret;
		}
		if (!(p->tst == LAT || p->machine == CLIENT || p->duplex))
			continue;
		a.qp_state = VIRTIO_IB_QPS_RTS;
		a.sq_psn = (uint32_t)my->psn;
		mask = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN;
		if (p->conn == RC) {
			a.timeout = (uint8_t)p->qp_timeout;
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			/* perftest takes the peer's out_reads as is; a peer with
			 * more than this device allows is clamped */
			a.max_rd_atomic = clamp_rd_atom(p, rem->out_reads);
			mask |= VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
		}
		ret = vrdma_modify_qp(p->q[i].qp, &a, mask);
		if (ret) {
			fprintf(stderr, "Failed to modify QP to RTS\n");
			return ret;
		}
	}
	return 0;
}

/* ---- printing (perftest_parameters.c, perftest_communication.c) ---- */

static void print_test_info(const struct perf *p)
{
	printf(RESULT_LINE);
	printf("                    ");
	printf("%s ", verb_str[p->verb]);
	if (p->tst == BW) {
		if (p->duplex)
			printf("Bidirectional ");
		if (p->post_list > 1)
			printf("Post List ");
		printf("BW ");
	} else {
		printf("Latency ");
	}
	printf("Test\n");
	printf(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", p->dev);
	printf(" Number of qps   : %d\t\tTransport type : %s\n", p->num_qps, "IB");
	printf(" Connection type : %s\t\tUsing SRQ      : %s\n", conn_str[p->conn], "OFF");
	printf(" PCIe relax order: %s\n", "Unsupported");
	printf(" ibv_wr* API     : %s\n", "OFF");
	if (p->machine == CLIENT || p->duplex)
		printf(" TX depth        : %d\n", p->tx_depth);
	if (p->post_list > 1)
		printf(" Post List       : %d\n", p->post_list);
	if (p->verb == SEND && (p->machine == SERVER || p->duplex))
		printf(" RX depth        : %d\n", p->rx_depth);
	if (p->tst == BW)
		printf(" CQ Moderation   : %d\n", p->cq_mod);
	printf(" Mtu             : %lu[B]\n", (unsigned long)MTU_SIZE(p->curr_mtu));
	printf(" Link type       : %s\n", "Ethernet");
	printf(" GID index       : %d\n", p->gid_index);
	if (p->verb != READ)
		printf(" Max inline data : %d[B]\n", p->inline_size);
	else
		printf(" Outstand reads  : %d\n", p->out_reads);
	printf(" rdma_cm QPs\t : %s\n", "OFF");
	printf(" Data ex. method : %s", "Ethernet");
	putchar('\n');
	printf(RESULT_LINE);
}

/* ctx_print_pingpong_data */
static void print_dest(const struct perf *p, const struct oob_dest *d, bool remote)
{
	const uint8_t *g = d->gid;

	printf(BASIC_ADDR_FMT, remote ? "remote" : "local", (unsigned int)d->lid,
	       (unsigned int)d->qpn, (unsigned int)d->psn);
	if (p->verb == READ)
		printf(READ_FMT, (unsigned int)d->out_reads);
	if (p->verb == READ || p->verb == WRITE)
		printf(RDMA_FMT, d->rkey, d->vaddr);
	putchar('\n');
	printf(PERF_GID_FMT, "GID", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
	       g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}

static void print_bw_header(const struct perf *p)
{
	printf(RESULT_LINE);
	printf("%s", p->gbits ? RESULT_FMT_G : RESULT_FMT);
	printf("\n");
}

static void print_lat_header(const struct perf *p)
{
	printf(RESULT_LINE);
	printf("%s", is_dur(p) ? RESULT_FMT_LAT_DUR : RESULT_FMT_LAT);
	printf("\n");
}

/* print_full_bw_report: this side's numbers, plus the peer's (duplex). */
static void print_full_bw_report(const struct perf *p, const struct oob_bw_rep *my,
				 const struct oob_bw_rep *rem)
{
	double peak = my->bw_peak, avg = my->bw_avg, rate = my->msg_rate;

	if (rem) {
		peak += rem->bw_peak;
		avg += rem->bw_avg;
		rate += rem->msg_rate;
	}
	printf((avg < 0.1 && p->gbits) ? REPORT_FMT_EXT : REPORT_FMT, (unsigned long)my->size,
	       my->iters, peak, avg, rate);
	printf("\n");
}

/* print_report_bw: perftest's arithmetic with nanoseconds for cycles. */
static void report_bw(struct perf *p, struct oob_bw_rep *rep)
{
	double ff = p->gbits ? 125000000.0 : 1048576.0, opt_delta, secs;
	uint64_t n = p->iters, total, loc, i, j;
	uint64_t nq = (uint64_t)p->num_qps, cq = (uint64_t)p->cq_mod, pl = (uint64_t)p->post_list;

	opt_delta = (double)(p->tcompleted[0] - p->tposted[0]);
	if (!p->no_peak) {
		total = n * nq;
		for (i = 0; i < total; i += pl) {
			for (j = (i + 1 + cq - 1) / cq * cq - 1; j < total; j += cq) {
				double t = (double)(p->tcompleted[j] - p->tposted[i]) / (double)(j - i + 1);

				if (t < opt_delta)
					opt_delta = t;
			}
			/* the explicitly signaled last one */
			if (total % cq) {
				double t;

				j = total - 1;
				t = (double)(p->tcompleted[j] - p->tposted[i]) / (double)(j - i + 1);
				if (t < opt_delta)
					opt_delta = t;
			}
		}
	}
	if (!is_dur(p))
		n *= nq;
	loc = p->no_peak ? 0 : n - 1;
	secs = (double)(p->tcompleted[loc] - p->tposted[0]) / 1e9;
	rep->size = p->size;
	rep->iters = n;
	rep->bw_avg = (double)p->size * (double)n / (secs * ff);
	rep->msg_rate = (double)n / (secs * 1e6);
	rep->bw_peak = p->no_peak ? 0 : (double)p->size / (opt_delta / 1e9 * ff);
	if (!p->duplex || (p->verb == SEND && is_dur(p)))
		print_full_bw_report(p, rep, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* print_report_lat: from the gaps between consecutive posts, the two
 * largest dropped, halved for a round trip (write/send ping-pong). */
static int report_lat(const struct perf *p)
{
	int measure_cnt = (int)p->iters - 1, i, iters_99, iters_99_9;
	double q = 1000.0 * (p->verb == READ ? 1 : 2), avg_sum = 0, avg, stdev_sum = 0;
	uint64_t *delta, median;

	delta = calloc((size_t)measure_cnt, sizeof(*delta));
	if (!delta) {
		fprintf(stderr, " Cannot Allocate\n");
		return -ENOMEM;
	}
	for (i = 0; i < measure_cnt; i++)
		delta[i] = p->tposted[i + 1] - p->tposted[i];
	qsort(delta, (size_t)measure_cnt, sizeof(*delta), cmp_u64);
	measure_cnt -= LAT_MEASURE_TAIL;
	if ((measure_cnt - 1) % 2)
		median = (delta[measure_cnt / 2] + delta[measure_cnt / 2 - 1]) / 2;
	else
		median = delta[measure_cnt / 2];
	for (i = 0; i < measure_cnt; i++)
		avg_sum += (double)delta[i] / q;
	avg = avg_sum / measure_cnt;
	/* perftest squares whole microseconds (ints) */
	for (i = 0; i < measure_cnt; i++) {
		int temp_var = (int)(avg - (double)delta[i] / q);
		int pow_var = (int)pow(temp_var, 2);

		stdev_sum += pow_var;
	}
	iters_99 = (int)ceil(measure_cnt * 0.99);
	iters_99_9 = (int)ceil(measure_cnt * 0.999);
	printf(REPORT_FMT_LAT, (unsigned long)p->size, p->iters, (double)delta[0] / q,
	       (double)delta[measure_cnt] / q, (double)median / q, avg, sqrt(stdev_sum / measure_cnt),
	       (double)delta[iters_99] / q, (double)delta[iters_99_9] / q);
	printf("\n");
	free(delta);
	return 0;
}

/* print_report_lat_duration */
static void report_lat_duration(const struct perf *p)
{
	double t = (double)(p->tcompleted[0] - p->tposted[0]) / 1000.0;	/* usec */
	int rtt = p->verb == READ ? 1 : 2;

	printf(REPORT_FMT_LAT_DUR, (unsigned long)p->size, p->iters,
	       t / rtt / (double)p->iters, (double)p->iters / (t / 1e6));
	printf("\n");
}

/* ---- the data path (perftest_resources.c) ---- */

/* increase_loc_addr / increase_rem_addr: walk a cycle buffer in cache
 * line steps, back to the start every cycle_buffer bytes. */
static void cycle_addr(const struct perf *p, uint64_t *addr, uint64_t cnt, uint64_t prim)
{
	uint64_t inc = inc_of(p->size, p->cache_line);

	*addr += inc;
	if ((cnt + 1) % ((uint64_t)p->cycle_buffer / inc) == 0)
		*addr = prim;
}

static bool cycles(const struct perf *p, uint64_t len)
{
	return p->tst == BW && len <= (uint64_t)p->cycle_buffer / 2;
}

/* ctx_set_send_reg_wqes */
static void set_send_wqes(struct perf *p)
{
	uint64_t stride = buff_size_of(p->alloc_size, p->cycle_buffer);
	int i, j;

	for (i = 0; i < p->num_qps; i++) {
		struct qpc *q = &p->q[i];

		q->scnt = q->ccnt = 0;
		q->my_addr = (uintptr_t)p->buf + (uint64_t)i * stride;
		q->rem_addr = p->rem[i].vaddr;
		for (j = 0; j < p->post_list; j++) {
			q->sge[j].length = (uint32_t)p->size;
			q->sge[j].lkey = vrdma_mr_lkey(p->mr);
			q->sge[j].addr = j ? q->sge[j - 1].addr : q->my_addr;
			q->raddr[j] = j ? q->raddr[j - 1] : q->rem_addr;
			if (j && cycles(p, p->size)) {
				cycle_addr(p, &q->sge[j].addr, (uint64_t)j - 1, q->my_addr);
				if (p->verb != SEND)
					cycle_addr(p, &q->raddr[j], (uint64_t)j - 1, q->rem_addr);
			}
			q->flags[j] = (j + 1) % p->cq_mod == 0 ? VIRTIO_IB_SEND_SIGNALED : 0;
			if (p->verb != READ && p->size <= (uint64_t)p->inline_size)
				q->flags[j] |= VIRTIO_IB_SEND_INLINE;
		}
	}
}

/* ctx_set_recv_wqes: rx_depth receives per QP into its half of the buffer
 * (UD: room for the GRH in front, still inside the buffer). */
static int set_recv_wqes(struct perf *p)
{
	uint64_t len = p->size + (p->conn == UD ? UD_ADDITION : 0);
	int i, j, ret;

	for (i = 0; i < p->num_qps; i++) {
		struct qpc *q = &p->q[i];

		q->rx_base = (uintptr_t)p->buf + ((uint64_t)p->num_qps + (uint64_t)i) * p->qp_buff;
		if (p->conn == UD)
			q->rx_base += (uint64_t)(p->cache_line - UD_ADDITION);
		q->rsge = (struct vrdma_sge){ .addr = q->rx_base, .length = (uint32_t)len,
					      .lkey = vrdma_mr_lkey(p->mr) };
		for (j = 0; j < p->rx_depth; j++) {
			struct vrdma_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &q->rsge, .num_sge = 1 };

			ret = vrdma_post_recv(q->qp, &wr);
			if (ret) {
				fprintf(stderr, "Couldn't post recv Qp = %d: counter=%d\n", i, j);
				return ret;
			}
			if (cycles(p, p->size))
				cycle_addr(p, &q->rsge.addr, (uint64_t)j, q->rx_base);
		}
		q->rsge.addr = q->rx_base;
		q->posted = (uint64_t)p->rx_depth;
		q->unused = 0;
		q->rcnt = 0;
	}
	return 0;
}

static int repost_recv(struct perf *p, int i)
{
	struct qpc *q = &p->q[i];
	struct vrdma_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &q->rsge, .num_sge = 1 };
	uint64_t len = p->size + (p->conn == UD && p->machine == SERVER ? UD_ADDITION : 0);
	int ret;

	ret = vrdma_post_recv(q->qp, &wr);
	if (ret) {
		fprintf(stderr, "Couldn't post recv Qp=%d rcnt=%lu\n", i, (unsigned long)q->rcnt);
		return ret;
	}
	q->unused--;
	q->posted++;
	if (cycles(p, len))
		cycle_addr(p, &q->rsge.addr, q->posted, q->rx_base);
	return 0;
}

static bool stalled(uint64_t since)
{
	return now_ns() - since > (uint64_t)STALL_MS * 1000000u;
}

/* post_send_method: QP index's post_list WRs. A momentarily full ring
 * (the device has not taken earlier WQEs yet) is waited out. */
static int post_send(struct perf *p, int index)
{
	static const uint32_t opcode[] = { VIRTIO_IB_WR_SEND, VIRTIO_IB_WR_RDMA_WRITE,
					   VIRTIO_IB_WR_RDMA_READ };
	struct qpc *q = &p->q[index];
	uint64_t t0 = 0;
	int j, ret;

	for (j = 0; j < p->post_list; j++) {
		struct vrdma_send_wr wr = {
			.wr_id = (uint64_t)index, .opcode = opcode[p->verb], .send_flags = q->flags[j],
			.sg_list = &q->sge[j], .num_sge = 1,
			.remote_addr = q->raddr[j], .rkey = p->rem[index].rkey,
		};

		if (p->conn == UD) {
			wr.remote_qpn = (uint32_t)p->rem[index].qpn;
			wr.remote_qkey = DEF_QKEY;
			memcpy(wr.av.dgid, p->rem[index].gid, 16);
			wr.av.gid_index = (uint8_t)p->gid_index;
			wr.av.hop_limit = 0xff;
			wr.av.sl_tclass_flowlabel = (uint32_t)p->sl << 28;
		}
		while ((ret = vrdma_post_send(q->qp, &wr)) == -ENOMEM) {
			if (!t0)
				t0 = now_ns();
			else if (stalled(t0))
				break;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static const char *wc_status_str(uint8_t s)
{
	static const char *const names[] = {
		"success", "local length error", "local QP operation error",
		"local EE context operation error", "local protection error",
		"Work Request Flushed Error", "memory management operation error",
		"bad response error", "local access error", "remote invalid request error",
		"remote access error", "remote operation error", "transport retry counter exceeded",
		"RNR retry counter exceeded",
	};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "error";
}

/* Duration mode: once the sampling window is over the result is in, so a
 * peer that stopped a moment earlier and took its QPs away (errors on the
 * last in-flight message) ends the run instead of failing it. perftest
 * would fail here; nothing of this reaches the peer. */
static bool dur_finished(struct perf *p)
{
	dur_tick(p);
	if (!is_dur(p) || p->state < STOP_SAMPLE_STATE)
		return false;
	p->state = END_STATE;
	return true;
}

/* Polls; an asynchronous event (QP fatal, CQ overrun) ends the test. */
static int poll_cq(struct perf *p, struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc)
{
	int ne = vrdma_poll_cq(cq, n, wc), i;

	for (i = 0; i < ne; i++) {
		uint32_t ev = wc[i].vendor_err;

		if (wc[i].opcode != VIRTIO_RDMA_WC_ASYNC_EVENT)
			continue;
		if (i)
			return i;	/* the completions before it first */
		if (dur_finished(p))
			return 0;
		fprintf(stderr, " Asynchronous event %u (%s) on QP %u\n", ev,
			ev == VIRTIO_RDMA_EVENT_QP_FATAL ? "QP fatal" :
			ev == VIRTIO_RDMA_EVENT_QP_REQ_ERR ? "QP request error" :
			ev == VIRTIO_RDMA_EVENT_QP_ACCESS_ERR ? "QP access error" :
			ev == VIRTIO_RDMA_EVENT_CQ_ERR ? "CQ error" : "unexpected", wc[i].qp_num);
		return -EIO;
	}
	if (ne < 0)
		fprintf(stderr, "poll CQ failed %d\n", ne);
	return ne;
}

/* NOTIFY_COMP_ERROR_SEND / _RECV; 0 where dur_finished lets it pass. */
static int comp_error_send(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t scnt,
			   uint64_t ccnt)
{
	if (dur_finished(p))
		return 0;
	fprintf(stderr, " Completion with error at client\n");
	fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", wc->status, (int)wc->wr_id,
		wc->vendor_err);
	fprintf(stderr, "scnt=%lu, ccnt=%lu\n", (unsigned long)scnt, (unsigned long)ccnt);
	fprintf(stderr, " (%s)\n", wc_status_str(wc->status));
	return -EIO;
}

static int comp_error_recv(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t rcnt)
{
	if (dur_finished(p))
		return 0;
	fprintf(stderr, " Completion with error at server\n");
	fprintf(stderr, " Failed status %d: wr_id %d syndrom 0x%x\n", wc->status, (int)wc->wr_id,
		wc->vendor_err);
	fprintf(stderr, " rcnt=%lu\n", (unsigned long)rcnt);
	fprintf(stderr, " (%s)\n", wc_status_str(wc->status));
	return -EIO;
}

static int stall_error(struct perf *p, const char *what, uint64_t a, uint64_t b)
{
	if (dur_finished(p))
		return 0;
	fprintf(stderr, " No completion for %d seconds (%s %lu/%lu), giving up\n", STALL_MS / 1000,
		what, (unsigned long)a, (unsigned long)b);
	return -ETIMEDOUT;
}

/* The send loop's window and CQ moderation of run_iter_bw / run_iter_bi:
 * post QP index while fewer than tx_depth are outstanding, asking for a
 * completion every cq_mod-th WR (and on the last). */
static int post_window(struct perf *p, int index, uint64_t *totscnt, uint64_t iters)
{
	struct qpc *q = &p->q[index];
	int ret;

	while ((q->scnt < iters || is_dur(p)) &&
	       q->scnt - q->ccnt + (uint64_t)p->post_list <= (uint64_t)p->tx_depth) {
		if (p->post_list == 1 && q->scnt % (uint64_t)p->cq_mod == 0 && p->cq_mod > 1 &&
		    !(q->scnt == iters - 1 && !is_dur(p)))
			q->flags[0] &= ~VIRTIO_IB_SEND_SIGNALED;
		if (!p->no_peak)
			p->tposted[*totscnt] = now_ns();
		if (is_dur(p) && p->state == END_STATE)
			break;
		ret = post_send(p, index);
		if (ret) {
			fprintf(stderr, "Couldn't post send: qp %d scnt=%lu \n", index, (unsigned long)q->scnt);
			return ret;
		}
		if (p->post_list == 1 && p->size <= (uint64_t)p->cycle_buffer / 2) {
			cycle_addr(p, &q->sge[0].addr, q->scnt, q->my_addr);
			if (p->verb != SEND)
				cycle_addr(p, &q->raddr[0], q->scnt, q->rem_addr);
		}
		q->scnt += (uint64_t)p->post_list;
		*totscnt += (uint64_t)p->post_list;
		if (p->post_list == 1 &&
		    (q->scnt % (uint64_t)p->cq_mod == (uint64_t)p->cq_mod - 1 ||
		     (!is_dur(p) && q->scnt == iters - 1)))
			q->flags[0] |= VIRTIO_IB_SEND_SIGNALED;
	}
	return 0;
}

/* A send completion: it stands for cq_mod WRs. */
static void send_completed(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t *totccnt,
			   uint64_t tot_iters)
{
	p->q[wc->wr_id].ccnt += (uint64_t)p->cq_mod;
	*totccnt += (uint64_t)p->cq_mod;
	if (!p->no_peak) {
		if (*totccnt > tot_iters)
			p->tcompleted[tot_iters - 1] = now_ns();
		else
			p->tcompleted[*totccnt - 1] = now_ns();
	}
	if (is_dur(p) && p->state == SAMPLE_STATE)
		p->iters += (uint64_t)p->cq_mod;
}

/* run_iter_bw: the sender of write/read/send BW (and both sides of
 * bidirectional write/read). */
static int run_iter_bw(struct perf *p)
{
	struct virtio_rdma_cqe wc[CTX_POLL_BATCH];
	uint64_t totscnt = 0, totccnt = 0, tot_iters, last = now_ns();
	int index, i, ne, ret;

	if (is_dur(p))
		dur_start(p);
	tot_iters = p->iters * (uint64_t)p->num_qps;
	if (!is_dur(p) && p->no_peak)
		p->tposted[0] = now_ns();
	while (totscnt < tot_iters || totccnt < tot_iters || (is_dur(p) && p->state != END_STATE)) {
		dur_tick(p);
		for (index = 0; index < p->num_qps; index++) {
			ret = post_window(p, index, &totscnt, p->iters);
			if (ret)
				return ret;
		}
		if (!(totccnt < tot_iters || (is_dur(p) && totccnt < totscnt)))
			continue;
		ne = poll_cq(p, p->send_cq, CTX_POLL_BATCH, wc);
		if (ne < 0)
			return ne;
		if (ne == 0) {
			if (totscnt == totccnt)
				last = now_ns();
			else if (stalled(last))
				return stall_error(p, "completed/posted", totccnt, totscnt);
			continue;
		}
		last = now_ns();
		for (i = 0; i < ne; i++) {
			if (wc[i].status != IB_WC_SUCCESS || wc[i].wr_id >= (uint64_t)p->num_qps)
				return comp_error_send(p, &wc[i], totscnt, totccnt);
			send_completed(p, &wc[i], &totccnt, tot_iters);
		}
	}
	if (p->no_peak && !is_dur(p))
		p->tcompleted[0] = now_ns();
	return 0;
}

/* A receive completion in run_iter_bw_server / run_iter_bi: count it and
 * give the QP its receive back while more are to come. */
static int recv_completed(struct perf *p, const struct virtio_rdma_cqe *wc, uint64_t *rcnt)
{
	struct qpc *q;

	if (wc->status != IB_WC_SUCCESS || wc->wr_id >= (uint64_t)p->num_qps)
		return comp_error_recv(p, wc, *rcnt);
	q = &p->q[wc->wr_id];
	q->rcnt++;
	(*rcnt)++;
	q->unused++;
	if (is_dur(p) && p->state == SAMPLE_STATE)
		p->iters++;
	if ((is_dur(p) || q->posted + 1 <= p->iters) && q->unused >= 1)
		return repost_recv(p, (int)wc->wr_id);
	return 0;
}

/* run_iter_bw_server: the receiver of send BW. */
static int run_iter_bw_server(struct perf *p)
{
	struct virtio_rdma_cqe wc[CTX_POLL_BATCH];
	uint64_t rcnt = 0, tot_iters = p->iters * (uint64_t)p->num_qps, last = now_ns();
	bool first_rx = true;
	int ne = 0, i, ret;

	while (rcnt < tot_iters || (is_dur(p) && p->state != END_STATE)) {
		do {
			dur_tick(p);
			if (is_dur(p) && p->state == END_STATE)
				break;
			ne = poll_cq(p, p->recv_cq, CTX_POLL_BATCH, wc);
			if (ne <= 0)
				break;
			last = now_ns();
			if (first_rx) {
				/* set_on_first_rx_packet */
				if (is_dur(p))
					dur_start(p);
				else
					p->tposted[0] = now_ns();
				first_rx = false;
			}
			for (i = 0; i < ne; i++) {
				ret = recv_completed(p, &wc[i], &rcnt);
				if (ret)
					return ret;
			}
		} while (ne > 0);
		if (ne < 0)
			return ne;
		if (stalled(last))
			return stall_error(p, "received", rcnt, tot_iters);
	}
	if (!is_dur(p))
		p->tcompleted[0] = now_ns();
	return 0;
}

/* run_iter_bi: both directions of send BW. The server sends only once the
 * client's first message is in, so that the client is receiving. */
static int run_iter_bi(struct perf *p)
{
	struct virtio_rdma_cqe wc[CTX_POLL_BATCH];
	uint64_t totscnt = 0, totccnt = 0, totrcnt = 0, tot_iters, iters, last = now_ns();
	bool before_first_rx = p->machine == SERVER;
	int index, i, ne, ret;

	if (p->no_peak)
		p->tposted[0] = now_ns();
	if (p->machine == CLIENT && is_dur(p))
		dur_start(p);
	tot_iters = p->iters * (uint64_t)p->num_qps;
	iters = p->iters;
	while ((is_dur(p) && p->state != END_STATE) || totccnt < tot_iters || totrcnt < tot_iters) {
		bool progress = false;

		dur_tick(p);
		for (index = 0; index < p->num_qps && !before_first_rx; index++) {
			ret = post_window(p, index, &totscnt, iters);
			if (ret)
				return ret;
		}
		ne = poll_cq(p, p->recv_cq, CTX_POLL_BATCH, wc);
		if (ne < 0)
			return ne;
		if (ne > 0) {
			progress = true;
			if (before_first_rx) {
				before_first_rx = false;
				if (is_dur(p))
					dur_start(p);
			}
			for (i = 0; i < ne; i++) {
				ret = recv_completed(p, &wc[i], &totrcnt);
				if (ret)
					return ret;
			}
		}
		ne = poll_cq(p, p->send_cq, CTX_POLL_BATCH, wc);
		if (ne < 0)
			return ne;
		for (i = 0; i < ne; i++) {
			progress = true;
			if (wc[i].status != IB_WC_SUCCESS || wc[i].wr_id >= (uint64_t)p->num_qps)
				return comp_error_send(p, &wc[i], totscnt, totccnt);
			send_completed(p, &wc[i], &totccnt, tot_iters);
		}
		if (progress)
			last = now_ns();
		else if (stalled(last))
			return stall_error(p, "sent/received", totccnt, totrcnt);
	}
	if (p->no_peak && !is_dur(p))
		p->tcompleted[0] = now_ns();
	return 0;
}

/* Wait for one completion on cq: 1 when there is one, 0 when the duration
 * ended first (the peer may be gone by then), or an error. */
static int wait_one(struct perf *p, struct vrdma_cq *cq, struct virtio_rdma_cqe *wc)
{
	uint64_t t0 = now_ns();
	int ne;

	while (!(ne = poll_cq(p, cq, 1, wc))) {
		dur_tick(p);
		if (is_dur(p) && p->state == END_STATE)
			return 0;
		if (stalled(t0))
			return stall_error(p, "completions", 0, 1);
	}
	return ne;
}

/* run_iter_lat_write: ping-pong of RDMA WRITEs, each side polling the last
 * byte of its receive half for the other's counter. The server writes
 * first. */
static int run_iter_lat_write(struct perf *p)
{
	uint64_t stride = buff_size_of(p->alloc_size, p->cycle_buffer);
	volatile uint8_t *poll_buf = p->buf + (uint64_t)p->num_qps * stride + p->size - 1;
	uint8_t *post_buf = p->buf + p->size - 1;
	uint64_t scnt = 0, ccnt = 0, rcnt = 0;
	struct virtio_rdma_cqe wc;
	struct qpc *q = &p->q[0];
	int ret;

	q->sge[0].length = (uint32_t)p->size;
	q->flags[0] = VIRTIO_IB_SEND_SIGNALED;
	if (p->size <= (uint64_t)p->inline_size)
		q->flags[0] |= VIRTIO_IB_SEND_INLINE;
	if (is_dur(p))
		dur_start(p);
	while (scnt < p->iters || ccnt < p->iters || rcnt < p->iters ||
	       (is_dur(p) && p->state != END_STATE)) {
		if ((rcnt < p->iters || is_dur(p)) && !(scnt < 1 && p->machine == SERVER)) {
			uint64_t t0 = now_ns();
			unsigned int spins = 0;

			rcnt++;
			/* the peer's WRITE lands in shared memory behind our back */
			while (*poll_buf != (uint8_t)rcnt && p->state != END_STATE) {
				if (++spins % 1024)
					continue;
				dur_tick(p);
				if (stalled(t0))
					return stall_error(p, "received", rcnt - 1, p->iters);
			}
		}
		if (scnt < p->iters || is_dur(p)) {
			if (!is_dur(p))
				p->tposted[scnt] = now_ns();
			*post_buf = (uint8_t)++scnt;
			ret = post_send(p, 0);
			if (ret) {
				fprintf(stderr, "Couldn't post send: scnt=%lu\n", (unsigned long)scnt);
				return ret;
			}
		}
		if (is_dur(p) && p->state == END_STATE)
			break;
		if (ccnt < p->iters || is_dur(p)) {
			ret = wait_one(p, p->send_cq, &wc);
			if (ret <= 0)	/* an error, or the duration ended */
				return ret;
			if (wc.status != IB_WC_SUCCESS)
				return comp_error_send(p, &wc, scnt, ccnt);
			ccnt++;
			if (is_dur(p) && p->state == SAMPLE_STATE)
				p->iters++;
		}
	}
	return 0;
}

/* run_iter_lat: RDMA READ latency, one read at a time (client only). */
static int run_iter_lat(struct perf *p)
{
	struct virtio_rdma_cqe wc;
	struct qpc *q = &p->q[0];
	uint64_t scnt = 0;
	int ret;

	q->sge[0].length = (uint32_t)p->size;
	q->flags[0] = VIRTIO_IB_SEND_SIGNALED;
	if (is_dur(p))
		dur_start(p);
	while (scnt < p->iters || (is_dur(p) && p->state != END_STATE)) {
		if (!is_dur(p))
			p->tposted[scnt++] = now_ns();
		ret = post_send(p, 0);
		if (ret) {
			fprintf(stderr, "Couldn't post send: scnt=%lu\n", (unsigned long)scnt);
			return ret;
		}
		dur_tick(p);
		if (is_dur(p) && p->state == END_STATE)
			break;
		ret = wait_one(p, p->send_cq, &wc);
		if (ret <= 0)	/* an error, or the duration ended */
			return ret;
		if (wc.status != IB_WC_SUCCESS)
			return comp_error_send(p, &wc, scnt, scnt);
		if (is_dur(p) && p->state == SAMPLE_STATE)
			p->iters++;
	}
	return 0;
}

/* run_iter_lat_send: SEND ping-pong; the client sends first. */
static int run_iter_lat_send(struct perf *p)
{
	uint64_t scnt = 0, rcnt = 0, size_per_qp = (uint64_t)p->rx_depth;
	struct virtio_rdma_cqe wc;
	struct qpc *q = &p->q[0];
	bool first_rx = true, poll = false;
	int ne, ret;

	q->sge[0].length = (uint32_t)p->size;
	q->flags[0] = 0;
	if (p->size <= (uint64_t)p->inline_size)
		q->flags[0] |= VIRTIO_IB_SEND_INLINE;
	while (scnt < p->iters || rcnt < p->iters || (is_dur(p) && p->state != END_STATE)) {
		if ((rcnt < p->iters || is_dur(p)) && !(scnt < 1 && p->machine == CLIENT)) {
			uint64_t t0 = now_ns();

			do {
				ne = poll_cq(p, p->recv_cq, 1, &wc);
				dur_tick(p);
				if (is_dur(p) && p->state == END_STATE)
					break;
				if (ne < 0)
					return ne;
				if (ne == 0) {
					if (stalled(t0))
						return stall_error(p, "received", rcnt, p->iters);
					continue;
				}
				if (first_rx) {
					if (is_dur(p))
						dur_start(p);
					first_rx = false;
				}
				if (wc.status != IB_WC_SUCCESS)
					return comp_error_recv(p, &wc, rcnt);
				rcnt++;
				if (is_dur(p) && p->state == SAMPLE_STATE)
					p->iters++;
				if (is_dur(p) || rcnt + size_per_qp <= p->iters) {
					struct vrdma_recv_wr wr = { .wr_id = 0, .sg_list = &q->rsge, .num_sge = 1 };

					ret = vrdma_post_recv(q->qp, &wr);
					if (ret) {
						fprintf(stderr, "Couldn't post recv: rcnt=%lu\n", (unsigned long)rcnt);
						return ret;
					}
				}
			} while (ne == 0);
		}
		if (scnt < p->iters || (is_dur(p) && p->state != END_STATE)) {
			if (!is_dur(p))
				p->tposted[scnt] = now_ns();
			scnt++;
			if (scnt % (uint64_t)p->cq_mod == 0 || (!is_dur(p) && scnt == p->iters)) {
				poll = true;
				q->flags[0] |= VIRTIO_IB_SEND_SIGNALED;
			}
			if (is_dur(p) && p->state == END_STATE)
				break;
			ret = post_send(p, 0);
			if (ret) {
				fprintf(stderr, "Couldn't post send: scnt=%lu \n", (unsigned long)scnt);
				return ret;
			}
			if (poll) {
				ret = wait_one(p, p->send_cq, &wc);
				if (ret <= 0)	/* an error, or the duration ended */
					return ret;
				if (wc.status != IB_WC_SUCCESS)
					return comp_error_send(p, &wc, scnt, scnt);
				poll = false;
				q->flags[0] &= ~VIRTIO_IB_SEND_SIGNALED;
			}
		}
	}
	return 0;
}

/* ---- the exchange, test by test (the main() of each perftest program) ---- */

static int hs(struct perf *p, int i, int timeout_ms)
{
	int ret = oob_hand_shake(&p->oob, &p->my[i], &p->rem[i], timeout_ms);

	if (ret)
		fprintf(stderr, " Failed to exchange data between server and clients (%s)\n",
			strerror(-ret));
	return ret;
}

/* One handshake per QP: this is how the addresses travel. */
static int hs_all(struct perf *p)
{
	int i, ret;

	for (i = 0; i < p->num_qps; i++) {
		ret = hs(p, i, SETUP_TIMEOUT_MS);
		if (ret)
			return ret;
	}
	return 0;
}

/* Print this side's QPs, then shake hands again per QP and print the
 * peer's. */
static int hs_print(struct perf *p)
{
	int i, ret;

	for (i = 0; i < p->num_qps; i++)
		print_dest(p, &p->my[i], false);
	for (i = 0; i < p->num_qps; i++) {
		ret = hs(p, i, SETUP_TIMEOUT_MS);
		if (ret)
			return ret;
		print_dest(p, &p->rem[i], true);
	}
	return 0;
}

/* ctx_check_gid_compatibility: both IPv4-mapped or neither. */
static int gid_check(const struct perf *p)
{
	if (roce_gid_is_v4(p->my[0].gid) != roce_gid_is_v4(p->rem[0].gid)) {
		fprintf(stderr, "\n Found Incompatibility issue with GID types.\n");
		fprintf(stderr, " Please Try to use a different IP version.\n\n");
		return -EPROTO;
	}
	return 0;
}

static int connect_qps(struct perf *p)
{
	int ret = ctx_connect(p);

	if (ret)
		fprintf(stderr, " Unable to Connect the HCA's through the link\n");
	return ret;
}

static int xchg_reports(struct perf *p, const struct oob_bw_rep *my, struct oob_bw_rep *rem)
{
	int ret = oob_xchg_bw_reports(&p->oob, my, rem, atof(p->rem_version), p->run_timeout_ms);

	if (ret)
		fprintf(stderr, " Failed to exchange data between server and clients\n");
	return ret;
}

static int close_connection(struct perf *p)
{
	int ret = oob_close_connection(&p->oob, &p->my[0], p->run_timeout_ms);

	if (ret)
		fprintf(stderr, "Failed to close connection between server and client\n");
	return ret;
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

static int first_size(struct perf *p)
{
	if (p->run_all)
		p->size = 2;
	return p->run_all ? 1 : 0;
}

static bool next_size(struct perf *p, int *k)
{
	if (!p->run_all || ++*k >= size_max_pow(p))
		return false;
	p->size = (uint64_t)1 << *k;
	return true;
}

static int report_lat_any(const struct perf *p)
{
	if (is_dur(p)) {
		report_lat_duration(p);
		return 0;
	}
	return report_lat(p);
}

/* write_bw.c, read_bw.c */
static int flow_rdma_bw(struct perf *p)
{
	struct oob_bw_rep my = { 0 }, rem = { 0 };
	int k, ret;

	if ((ret = hs_all(p)) || (ret = gid_check(p)) || (ret = connect_qps(p)) ||
	    (ret = hs_print(p)))
		return ret;
	/* an additional handshake after moving the QPs to RTR */
	ret = hs(p, 0, SETUP_TIMEOUT_MS);
	if (ret)
		return ret;
	print_bw_header(p);
	if (p->machine == SERVER && !p->duplex) {
		/* the passive side only waits for the client to finish */
		if ((ret = hs(p, 0, p->run_timeout_ms)) || (ret = xchg_reports(p, &my, &rem)))
			return ret;
		print_full_bw_report(p, &rem, NULL);
		ret = close_connection(p);
		if (ret)
			return ret;
		printf(RESULT_LINE);
		return 0;
	}
	k = first_size(p);
	do {
		set_send_wqes(p);
		if (p->duplex && (ret = hs(p, 0, p->run_timeout_ms)))
			return ret;
		ret = run_iter_bw(p);
		if (ret) {
			fprintf(stderr, " Failed to complete run_iter_bw function successfully\n");
			return ret;
		}
		/* perftest >= 4.6 syncs between sizes in -a -b */
		if (p->duplex && p->run_all && (ret = hs(p, 0, p->run_timeout_ms)))
			return ret;
		report_bw(p, &my);
		if (p->duplex) {
			ret = xchg_reports(p, &my, &rem);
			if (ret)
				return ret;
			print_full_bw_report(p, &my, &rem);
		}
	} while (next_size(p, &k));
	printf(RESULT_LINE);
	if (p->machine == CLIENT && !p->duplex) {
		if ((ret = hs(p, 0, p->run_timeout_ms)) || (ret = xchg_reports(p, &my, &rem)))
			return ret;
	}
	return close_connection(p);
}

/* send_bw.c */
static int flow_send_bw(struct perf *p)
{
	struct oob_bw_rep my = { 0 }, rem = { 0 };
	int k, ret;

	if ((ret = hs_all(p)) || (ret = gid_check(p)) || (ret = connect_qps(p)) ||
	    (ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_print(p)))
		return ret;
	print_bw_header(p);
	k = first_size(p);
	do {
		if (p->machine == CLIENT || p->duplex)
			set_send_wqes(p);
		if (p->machine == SERVER || p->duplex) {
			ret = set_recv_wqes(p);
			if (ret) {
				fprintf(stderr, " Failed to post receive recv_wqes\n");
				return ret;
			}
		}
		/* the receives are up before the client sends */
		ret = hs(p, 0, p->run_timeout_ms);
		if (ret)
			return ret;
		if (p->duplex)
			ret = run_iter_bi(p);
		else if (p->machine == CLIENT)
			ret = run_iter_bw(p);
		else
			ret = run_iter_bw_server(p);
		if (ret)
			return ret;
		report_bw(p, &my);
		if (p->duplex && !is_dur(p)) {
			ret = xchg_reports(p, &my, &rem);
			if (ret)
				return ret;
			print_full_bw_report(p, &my, &rem);
		}
		if (p->run_all && (ret = hs(p, 0, p->run_timeout_ms)))
			return ret;
	} while (next_size(p, &k));
	printf(RESULT_LINE);
	return close_connection(p);
}

/* send_lat.c */
static int flow_send_lat(struct perf *p)
{
	int k, ret;

	if ((ret = hs_all(p)) || (ret = gid_check(p)) || (ret = connect_qps(p)) ||
	    (ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_print(p)))
		return ret;
	print_lat_header(p);
	set_send_wqes(p);
	k = first_size(p);
	do {
		ret = set_recv_wqes(p);
		if (ret)
			return ret;
		/* so that the client does not send before the receives are up */
		ret = hs(p, 0, p->run_timeout_ms);
		if (ret)
			return ret;
		ret = run_iter_lat_send(p);
		if (ret)
			return ret;
		ret = report_lat_any(p);
		if (ret)
			return ret;
	} while (next_size(p, &k));
	printf(RESULT_LINE);
	return close_connection(p);
}

/* write_lat.c: it ends without a closing handshake. */
static int flow_write_lat(struct perf *p)
{
	int k, ret;

	if ((ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_all(p)) || (ret = gid_check(p)) ||
	    (ret = connect_qps(p)) || (ret = hs_print(p)) || (ret = hs(p, 0, SETUP_TIMEOUT_MS)))
		return ret;
	set_send_wqes(p);
	print_lat_header(p);
	k = first_size(p);
	do {
		ret = run_iter_lat_write(p);
		if (ret) {
			fprintf(stderr, "Test exited with Error\n");
			return ret;
		}
		ret = report_lat_any(p);
		if (ret)
			return ret;
	} while (next_size(p, &k));
	printf(RESULT_LINE);
	return 0;
}

/* read_lat.c: the server closes at once and waits there. */
static int flow_read_lat(struct perf *p)
{
	int k, ret;

	if ((ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_all(p)) || (ret = gid_check(p)) ||
	    (ret = connect_qps(p)) || (ret = hs_print(p)) || (ret = hs(p, 0, SETUP_TIMEOUT_MS)))
		return ret;
	if (p->machine == SERVER) {
		ret = close_connection(p);
		if (ret)
			return ret;
		printf(RESULT_LINE);
		return 0;
	}
	print_lat_header(p);
	set_send_wqes(p);
	k = first_size(p);
	do {
		ret = run_iter_lat(p);
		if (ret)
			return ret;
		ret = report_lat_any(p);
		if (ret)
			return ret;
	} while (next_size(p, &k));
	ret = close_connection(p);
	if (ret)
		return ret;
	printf(RESULT_LINE);
	return 0;
}

/* ---- setting up ---- */

static int open_device(struct perf *p)
{
	struct vrdma_open_attr oa = { .mem_size = mem_size_for(p) };
	int ret;

	if (!p->dev) {
		fprintf(stderr, " No device: give the VM's vhost-user socket with -d SOCKET\n");
		fprintf(stderr, " Unable to find the Infiniband/RoCE device\n");
		return -ENODEV;
	}
	ret = vrdma_open(p->dev, &oa, &p->ctx);
	if (ret) {
		fprintf(stderr, " Couldn't open the virtio-rdma device at %s: %s\n", p->dev,
			strerror(-ret));
		fprintf(stderr, " Couldn't get context for the device\n");
		return ret;
	}
	ret = vrdma_query_device(p->ctx, &p->cfg);
	if (!ret)
		ret = check_link(p);
	if (ret) {
		fprintf(stderr, " Couldn't get context for the device\n");
		vrdma_close(p->ctx);
		p->ctx = NULL;
	}
	return ret;
}

/* establish_connection, exchange_versions, check_version_compatibility,
 * check_sys_data, check_mtu. */
static int connect_peer(struct perf *p)
{
	int rem_cycle = 0, rem_line = 0, my_cycle, my_line, rem_mtu, ret;
	char cur[4] = { 0 }, rem[4] = { 0 };
	double rem_vers;

	if (p->machine == SERVER) {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		ret = oob_server_accept(&p->oob, p->port);
	} else {
		ret = oob_client_connect(&p->oob, p->servername, p->port);
	}
	if (ret) {
		fprintf(stderr, "Unable to open file descriptor for socket connection");
		fprintf(stderr, " Unable to init the socket connection\n");
		return ret;
	}
	strncpy(p->version, OOB_VERSION, sizeof(p->version) - 1);
	ret = oob_xchg(&p->oob, p->version, p->rem_version, sizeof(p->rem_version), SETUP_TIMEOUT_MS);
	if (ret)
		goto exchange_failed;
	p->rem_version[sizeof(p->rem_version) - 1] = '\0';
	rem_vers = atof(p->rem_version);
	if (rem_vers < 5.70) {
		fprintf(stderr, "Current implementation is not compatible with versions older than 5.70\n");
		return -EPROTO;
	}
	/* the larger page size and cache line of the two lay out buffers */
	my_cycle = (int)htonl((uint32_t)p->cycle_buffer);
	my_line = (int)htonl((uint32_t)p->cache_line);
	if ((ret = oob_xchg(&p->oob, &my_cycle, &rem_cycle, 4, SETUP_TIMEOUT_MS)) ||
	    (ret = oob_xchg(&p->oob, &my_line, &rem_line, 4, SETUP_TIMEOUT_MS)))
		goto exchange_failed;
	rem_cycle = (int)ntohl((uint32_t)rem_cycle);
	rem_line = (int)ntohl((uint32_t)rem_line);
	if (rem_cycle > p->cycle_buffer)
		p->cycle_buffer = rem_cycle;
	if (rem_line > p->cache_line)
		p->cache_line = rem_line;
	if (p->cycle_buffer > MAX_CYCLE_BUFFER || p->cache_line > 4096 || p->cache_line <= 0 ||
	    p->cycle_buffer % p->cache_line) {
		fprintf(stderr, " The peer's page size %d / cache line %d are not supported\n",
			rem_cycle, rem_line);
		return -EPROTO;
	}
	/* check_mtu: the smaller of the two, as "%d" of enum ibv_mtu in 2 bytes */
	p->curr_mtu = set_mtu(p);
	snprintf(cur, sizeof(cur), "%d", p->curr_mtu);
	ret = oob_xchg(&p->oob, cur, rem, rem_vers >= 5.31 ? 2 : sizeof(int), SETUP_TIMEOUT_MS);
	if (ret)
		goto exchange_failed;
	rem[sizeof(rem) - 1] = '\0';
	rem_mtu = (int)strtol(rem, NULL, 10);
	if (rem_mtu >= VIRTIO_IB_MTU_256 && rem_mtu <= VIRTIO_IB_MTU_4096 && p->curr_mtu > rem_mtu)
		p->curr_mtu = rem_mtu;
	if (p->conn == UD && p->size > MTU_SIZE(p->curr_mtu)) {
		if (p->run_all || !p->req_size) {
			fprintf(stderr, " Max msg size in UD is MTU %lu\n", (unsigned long)MTU_SIZE(p->curr_mtu));
			fprintf(stderr, " Changing to this MTU\n");
			p->size = MTU_SIZE(p->curr_mtu);
		} else {
			fprintf(stderr, " Max message size in UD cannot be greater than MTU \n");
			fprintf(stderr, " Couldn't get context for the device\n");
			return -EINVAL;
		}
	}
	return 0;

exchange_failed:
	fprintf(stderr, " Failed to exchange data between server and clients (%s)\n", strerror(-ret));
	return ret;
}

static int alloc_arrays(struct perf *p)
{
	uint64_t tarr = p->no_peak ? 1 : p->iters * (uint64_t)p->num_qps;
	int i;

	p->q = calloc((size_t)p->num_qps, sizeof(*p->q));
	p->my = calloc((size_t)p->num_qps, sizeof(*p->my));
	p->rem = calloc((size_t)p->num_qps, sizeof(*p->rem));
	p->tposted = calloc(tarr ? tarr : 1, sizeof(uint64_t));
	p->tcompleted = calloc(tarr ? tarr : 1, sizeof(uint64_t));
	if (!p->q || !p->my || !p->rem || !p->tposted || !p->tcompleted)
		goto no_memory;
	for (i = 0; i < p->num_qps; i++) {
		p->q[i].sge = calloc((size_t)p->post_list, sizeof(*p->q[i].sge));
		p->q[i].raddr = calloc((size_t)p->post_list, sizeof(*p->q[i].raddr));
		p->q[i].flags = calloc((size_t)p->post_list, sizeof(*p->q[i].flags));
		if (!p->q[i].sge || !p->q[i].raddr || !p->q[i].flags)
			goto no_memory;
	}
	return 0;

no_memory:
	fprintf(stderr, " Cannot Allocate\n");
	return -ENOMEM;
}

static void free_arrays(struct perf *p)
{
	int i;

	for (i = 0; p->q && i < p->num_qps; i++) {
		free(p->q[i].sge);
		free(p->q[i].raddr);
		free(p->q[i].flags);
	}
	free(p->q);
	free(p->my);
	free(p->rem);
	free(p->tposted);
	free(p->tcompleted);
}

/* destroy_ctx: whatever ctx_init got to. */
static int destroy_resources(struct perf *p)
{
	int i, ret = 0;

	for (i = 0; i < p->nq; i++)
		if (p->q[i].qp && vrdma_destroy_qp(p->q[i].qp))
			ret = -EIO;
	if (p->recv_cq && p->recv_cq != p->send_cq && vrdma_destroy_cq(p->recv_cq))
		ret = -EIO;
	if (p->send_cq && vrdma_destroy_cq(p->send_cq))
		ret = -EIO;
	if (p->mr && vrdma_dereg_mr(p->mr))
		ret = -EIO;
	if (p->buf)
		vrdma_free_buf(p->ctx, p->buf);
	if (p->pd && vrdma_dealloc_pd(p->pd))
		ret = -EIO;
	if (ret)
		fprintf(stderr, "Failed to destroy resources\n");
	return ret;
}

static const struct {
	const char *name;
	enum verb verb;
	enum tst tst;
	int (*flow)(struct perf *p);
} tests[] = {
	{ "send_bw", SEND, BW, flow_send_bw },
	{ "write_bw", WRITE, BW, flow_rdma_bw },
	{ "read_bw", READ, BW, flow_rdma_bw },
	{ "send_lat", SEND, LAT, flow_send_lat },
	{ "write_lat", WRITE, LAT, flow_write_lat },
	{ "read_lat", READ, LAT, flow_read_lat },
};

int main(int argc, char **argv)
{
	struct perf p = { .oob = { .fd = -1 } };
	size_t t;
	int ret;

	prog = argv[0];
	for (t = 0; argc > 1 && t < sizeof(tests) / sizeof(tests[0]); t++)
		if (!strcmp(argv[1], tests[t].name))
			break;
	if (argc < 2 || t == sizeof(tests) / sizeof(tests[0])) {
		if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage();
			return 1;	/* as perftest's -h */
		}
		fprintf(stderr, " Unknown test %s: choose one of send_bw write_bw read_bw send_lat write_lat read_lat\n",
			argc > 1 ? argv[1] : "(none)");
		fprintf(stderr, " Usage: %s TEST [options] [SERVER]; %s TEST -h for the options\n",
			argv[0], argv[0]);
		return 1;
	}
	p.verb = tests[t].verb;
	p.tst = tests[t].tst;
	/* getopt sees the test name as its argv[0] */
	ret = parse(&p, argc - 1, argv + 1);
	if (ret == PARSE_ERROR)
		fprintf(stderr, " Parser function exited with Error\n");
	if (ret != PARSE_OK)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	p.run_timeout_ms = RUN_TIMEOUT_MS + 2000 * p.duration;

	ret = open_device(&p);
	if (ret)
		return 1;
	ret = connect_peer(&p);
	if (ret)
		goto close_socket;
	ret = alloc_arrays(&p);
	if (ret)
		goto free_arrays;
	ret = ctx_init(&p);
	if (ret) {
		fprintf(stderr, " Couldn't create IB resources\n");
		goto destroy_resources;
	}
	ret = set_up_connection(&p);
	if (ret) {
		fprintf(stderr, " Unable to set up socket connection\n");
		goto destroy_resources;
	}
	print_test_info(&p);
	ret = tests[t].flow(&p);

destroy_resources:
	if (destroy_resources(&p) && !ret)
		ret = -EIO;
free_arrays:
	free_arrays(&p);
close_socket:
	if (p.oob.fd >= 0)
		close(p.oob.fd);
	vrdma_close(p.ctx);
	return ret ? 1 : 0;
}
