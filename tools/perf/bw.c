// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's bandwidth tests: the main()s of perftest's send_bw.c,
 * write_bw.c and read_bw.c.
 */
#include "perf.h"

/* write_bw.c, read_bw.c, atomic_bw.c */
int flow_rdma_bw(struct perf *p)
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
			fprintf(stderr, p->verb == ATOMIC ? " Error occurred in run_iter function\n" :
				" Failed to complete run_iter_bw function successfully\n");
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
int flow_send_bw(struct perf *p)
{
	struct oob_bw_rep my = { 0 }, rem = { 0 };
	int k, ret;

	if ((ret = hs_all(p)) || (ret = gid_check(p)) || (ret = connect_qps(p)) ||
	    (ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_print(p)))
		return ret;
	print_bw_header(p);
	k = first_size(p);
	do {
		if (p->machine == CLIENT || p->duplex) {
			set_send_wqes(p);
			check_fill(p);
		}
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
	if (p->check && (p->machine == SERVER || p->duplex))
		printf(" Checked: %" PRIu64 " messages, every byte as sent\n", p->checked);
	return close_connection(p);
}
