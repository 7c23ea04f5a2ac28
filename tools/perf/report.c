// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's output: the test's banner, the addresses and the bandwidth
 * and latency reports, in perftest's formats.
 */
#include <math.h>

#include "perf.h"

static const char *const conn_str[] = { "RC", "UC", "UD" };
static const char *const verb_str[] = { "Send", "RDMA_Write", "RDMA_Read", "Atomic" };
static const char *const atomic_str[] = { "CMP_AND_SWAP", "FETCH_AND_ADD" };

/* ---- printing (perftest_parameters.c, perftest_communication.c) ---- */

void print_test_info(const struct perf *p)
{
	printf(RESULT_LINE);
	printf("                    ");
	printf("%s ", verb_str[p->verb]);
	if (p->verb == ATOMIC)
		printf("%s ", atomic_str[p->atomic_type]);
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
	if (!rd_atomic(p))
		printf(" Max inline data : %d[B]\n", p->inline_size);
	else
		printf(" Outstand reads  : %d\n", p->out_reads);
	printf(" rdma_cm QPs\t : %s\n", "OFF");
	printf(" Data ex. method : %s", "Ethernet");
	putchar('\n');
	printf(RESULT_LINE);
}

/* ctx_print_pingpong_data */
void print_dest(const struct perf *p, const struct oob_dest *d, bool remote)
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

void print_bw_header(const struct perf *p)
{
	printf(RESULT_LINE);
	printf("%s", p->gbits ? RESULT_FMT_G : RESULT_FMT);
	printf("\n");
}

void print_lat_header(const struct perf *p)
{
	printf(RESULT_LINE);
	printf("%s", is_dur(p) ? RESULT_FMT_LAT_DUR : RESULT_FMT_LAT);
	printf("\n");
}

/* print_full_bw_report: this side's numbers, plus the peer's (duplex). */
void print_full_bw_report(const struct perf *p, const struct oob_bw_rep *my,
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
void report_bw(struct perf *p, struct oob_bw_rep *rep)
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
int report_lat(const struct perf *p)
{
	int measure_cnt = (int)p->iters - 1, i, iters_99, iters_99_9;
	double q = 1000.0 * (rd_atomic(p) ? 1 : 2), avg_sum = 0, avg, stdev_sum = 0;
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
void report_lat_duration(const struct perf *p)
{
	double t = (double)(p->tcompleted[0] - p->tposted[0]) / 1000.0;	/* usec */
	int rtt = rd_atomic(p) ? 1 : 2;

	printf(REPORT_FMT_LAT_DUR, (unsigned long)p->size, p->iters,
	       t / rtt / (double)p->iters, (double)p->iters / (t / 1e6));
	printf("\n");
}
