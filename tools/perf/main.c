// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-perf: TEST picks one of perftest's programs (perf.h).
 */
#include "perf.h"

static const struct {
	const char *name;
	enum verb verb;
	enum tst tst;
	int (*flow)(struct perf *p);
} tests[] = {
	{ "send_bw", SEND, BW, flow_send_bw },
	{ "write_bw", WRITE, BW, flow_rdma_bw },
	{ "read_bw", READ, BW, flow_rdma_bw },
	{ "atomic_bw", ATOMIC, BW, flow_rdma_bw },
	{ "send_lat", SEND, LAT, flow_send_lat },
	{ "write_lat", WRITE, LAT, flow_write_lat },
	{ "read_lat", READ, LAT, flow_read_lat },
	{ "atomic_lat", ATOMIC, LAT, flow_read_lat },	/* atomic_lat.c is read_lat.c */
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
		fprintf(stderr, " Unknown test %s: choose one of send_bw write_bw read_bw atomic_bw send_lat write_lat read_lat atomic_lat\n",
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
