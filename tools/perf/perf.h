/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vrdma-perf: perftest's ib_send_bw, ib_write_bw, ib_read_bw, ib_atomic_bw,
 * ib_send_lat, ib_write_lat, ib_read_lat and ib_atomic_lat in one program, on a VM's virtio-rdma device
 * reached through libvrdma (-d is the VM's vhost-user socket).
 *
 *   vrdma-perf TEST [options] [SERVER]
 *
 * It follows perftest 4.5-0.17 (Debian 12's 4.5+0.17-1, VERSION "6.06")
 * step by step: the same out-of-band TCP exchange (communication.c), the
 * same handshakes in the same places, the same QP attributes, posting
 * pattern (tx depth, CQ moderation, inline, post list, cyclic buffer
 * addresses) and the same report arithmetic, so that either side may be a
 * real perftest. Times come from CLOCK_MONOTONIC instead of the CPU cycle
 * counter. The files follow perftest's: parameters.c, resources.c and
 * run.c, communication.c, report.c, and the tests' main()s in bw.c and
 * lat.c. Differences that a peer cannot see are listed in usage().
 */
#ifndef VRDMA_PERF_H
#define VRDMA_PERF_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "libvrdma.h"
#include "roce_wire.h"

#define OOB_VERSION		"6.06"	/* perftest 4.5-0.17's configure.ac */
#define OOB_MAX_VERSION		16	/* MAX_VERSION: the version message */
#define OOB_KEY_MSG_SIZE_GID	108	/* KEY_MSG_SIZE_GID: one QP's address */
#define OOB_KEY_PRINT_FMT_GID	"%04x:%04x:%06x:%06x:%08x:%016llx:" \
	"%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:" \
	"%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:"

/* perftest's struct pingpong_dest: what one QP tells the other side. */
struct oob_dest {
	int lid;
	int out_reads;
	int qpn;
	int psn;
	unsigned int rkey;
	unsigned long long vaddr;
	uint8_t gid[16];
	unsigned int srqn;
};

/* perftest's struct bw_report_data, the part that crosses the wire. */
struct oob_bw_rep {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};

struct oob {
	int fd;
	bool client;		/* writes first */
};

/* ---- IB numbers the ABI header does not name ---- */

#define IB_PORT_ACTIVE		4

/* ---- perftest's defaults and limits (perftest_parameters.h) ---- */

#define DEF_PORT		18515
#define DEF_SIZE_BW		65536
#define DEF_SIZE_LAT		2
#define DEF_SIZE_ATOMIC		8
#define ATOMIC_ADD_VALUE	1	/* perftest_resources.h: what FETCH_AND_ADD adds */
#define ATOMIC_SWAP_VALUE	0	/* and what CMP_AND_SWAP swaps in */
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

enum verb { SEND, WRITE, READ, ATOMIC };	/* perftest's VerbType order */
enum atomic_type { CMP_AND_SWAP, FETCH_AND_ADD };	/* perftest's AtomicType */
enum tst { LAT, BW };
enum conn { RC, UC, UD };
enum machine { SERVER, CLIENT };
enum dstate { START_STATE, SAMPLE_STATE, STOP_SAMPLE_STATE, END_STATE };


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
	enum atomic_type atomic_type;		/* -A */
	const char *dev;
	char *servername;
	int port, ib_port, mtu, curr_mtu;
	uint64_t size, iters;
	uint64_t alloc_size;			/* the size the buffer was laid out for */
	bool req_size, req_cq_mod, duplex, no_peak, run_all, dur_mode, gbits, use_gid_user;
	bool check;				/* --check: send_bw's bytes checked */
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
	uint64_t checked;			/* --check: messages found intact */
	enum dstate state;
	uint64_t t_next;
	int run_timeout_ms;
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline bool is_dur(const struct perf *p)
{
	return p->dur_mode;
}


/* run.c: the data path (perftest_resources.c: run_iter_*) */
bool cycles(const struct perf *p, uint64_t len);
void set_send_wqes(struct perf *p);
void check_fill(struct perf *p);
int set_recv_wqes(struct perf *p);
int run_iter_bw(struct perf *p);
int run_iter_bw_server(struct perf *p);
int run_iter_bi(struct perf *p);
int run_iter_lat_write(struct perf *p);
int run_iter_lat(struct perf *p);
int run_iter_lat_send(struct perf *p);

/* parameters.c: options (perftest_parameters.c) */
extern const char *prog;
enum { PARSE_OK, PARSE_ERROR, PARSE_EXIT };
void usage(void);
int parse(struct perf *p, int argc, char **argv);
int first_size(struct perf *p);
bool next_size(struct perf *p, int *k);

/* resources.c: the device and its resources (perftest_resources.c) */
uint64_t buff_size_of(uint64_t size, int cycle_buffer);
uint64_t inc_of(uint64_t size, int cache_line);
int set_mtu(const struct perf *p);
int ctx_init(struct perf *p);
int set_up_connection(struct perf *p);
int ctx_connect(struct perf *p);
int open_device(struct perf *p);
int alloc_arrays(struct perf *p);
void free_arrays(struct perf *p);
int destroy_resources(struct perf *p);

/* report.c: what is printed (perftest_parameters.c, perftest_communication.c) */
void print_test_info(const struct perf *p);
void print_dest(const struct perf *p, const struct oob_dest *d, bool remote);
void print_bw_header(const struct perf *p);
void print_lat_header(const struct perf *p);
void print_full_bw_report(const struct perf *p, const struct oob_bw_rep *my,
			  const struct oob_bw_rep *rem);
void report_bw(struct perf *p, struct oob_bw_rep *rep);
int report_lat(const struct perf *p);
void report_lat_duration(const struct perf *p);

/* communication.c: the out-of-band exchange (perftest_communication.c) */
int hs(struct perf *p, int i, int timeout_ms);
int hs_all(struct perf *p);
int hs_print(struct perf *p);
int gid_check(const struct perf *p);
int connect_qps(struct perf *p);
int xchg_reports(struct perf *p, const struct oob_bw_rep *my, struct oob_bw_rep *rem);
int close_connection(struct perf *p);
int connect_peer(struct perf *p);

/* READ and ATOMIC: the answer comes back in the requester's buffer */
static inline bool rd_atomic(const struct perf *p)
{
	return p->verb == READ || p->verb == ATOMIC;
}

/* bw.c: the bandwidth tests (send_bw.c, write_bw.c, read_bw.c, atomic_bw.c) */
int flow_rdma_bw(struct perf *p);
int flow_send_bw(struct perf *p);

/* lat.c: the latency tests (send_lat.c, write_lat.c, read_lat.c, atomic_lat.c) */
int flow_send_lat(struct perf *p);
int flow_write_lat(struct perf *p);
int flow_read_lat(struct perf *p);

#endif
