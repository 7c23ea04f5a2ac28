// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf's latency tests: the main()s of perftest's send_lat.c,
 * write_lat.c and read_lat.c.
 */
#include "perf.h"

static int report_lat_any(const struct perf *p)
{
	if (is_dur(p)) {
		report_lat_duration(p);
		return 0;
	}
	return report_lat(p);
}

/* One run and its report per message size (one size without -a). */
static int each_size(struct perf *p, int (*run)(struct perf *p))
{
	int k = first_size(p), ret;

	do {
		ret = run(p);
		if (ret)
			return ret;
		ret = report_lat_any(p);
		if (ret)
			return ret;
	} while (next_size(p, &k));
	return 0;
}

/* write_lat.c's and read_lat.c's way to connect. */
static int connect_rdma_lat(struct perf *p)
{
	int ret;

	if ((ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_all(p)) || (ret = gid_check(p)) ||
	    (ret = connect_qps(p)) || (ret = hs_print(p)) || (ret = hs(p, 0, SETUP_TIMEOUT_MS)))
		return ret;
	return 0;
}

static int send_lat_once(struct perf *p)
{
	int ret = set_recv_wqes(p);

	if (ret)
		return ret;
	/* so that the client does not send before the receives are up */
	ret = hs(p, 0, p->run_timeout_ms);
	if (ret)
		return ret;
	return run_iter_lat_send(p);
}

/* send_lat.c */
int flow_send_lat(struct perf *p)
{
	int ret;

	if ((ret = hs_all(p)) || (ret = gid_check(p)) || (ret = connect_qps(p)) ||
	    (ret = hs(p, 0, SETUP_TIMEOUT_MS)) || (ret = hs_print(p)))
		return ret;
	print_lat_header(p);
	set_send_wqes(p);
	ret = each_size(p, send_lat_once);
	if (ret)
		return ret;
	printf(RESULT_LINE);
	return close_connection(p);
}

static int write_lat_once(struct perf *p)
{
	int ret = run_iter_lat_write(p);

	if (ret)
		fprintf(stderr, "Test exited with Error\n");
	return ret;
}

/* write_lat.c: it ends without a closing handshake. */
int flow_write_lat(struct perf *p)
{
	int ret = connect_rdma_lat(p);

	if (ret)
		return ret;
	set_send_wqes(p);
	print_lat_header(p);
	ret = each_size(p, write_lat_once);
	if (ret)
		return ret;
	printf(RESULT_LINE);
	return 0;
}

/* read_lat.c: the server closes at once and waits there. */
int flow_read_lat(struct perf *p)
{
	int ret = connect_rdma_lat(p);

	if (ret)
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
	ret = each_size(p, run_iter_lat);
	if (ret)
		return ret;
	ret = close_connection(p);
	if (ret)
		return ret;
	printf(RESULT_LINE);
	return 0;
}
