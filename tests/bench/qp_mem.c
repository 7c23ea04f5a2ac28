// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's memory per QP (make bench): opens QPs on one VM through
 * libvrdma and reads vrdmad's resident memory from /proc at 0, 1, 64 and 1024
 * QPs. Private memory (RssAnon) is what the daemon itself allocates; the
 * shared part (RssShmem) is the VM's own memory — rings and buffers — that
 * the daemon touches. Target: <= 8 KiB private per QP.
 *
 * Usage: qp_mem SOCKET DAEMON_PID
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libvrdma.h"

static long status_kb(int pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	static const unsigned int steps[] = { 1, 64, 1024 };
	struct vrdma_qp_init_attr init = {
		.qp_type = VIRTIO_IB_QPT_RC, .max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct vrdma_open_attr oa = { .mem_size = 256u << 20 };
	struct vrdma_qp **qps;
	struct vrdma_ctx *ctx;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	long anon0, shm0, anon = 0, shm = 0;
	unsigned int i, n = 0, s;
	int pid, err;

	if (argc != 3) {
		fprintf(stderr, "usage: qp_mem SOCKET DAEMON_PID\n");
		return 2;
	}
	pid = atoi(argv[2]);
	qps = calloc(1024, sizeof(*qps));
	err = vrdma_open(argv[1], &oa, &ctx);
	if (err || !qps) {
		fprintf(stderr, "qp_mem: cannot open %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	if ((err = vrdma_alloc_pd(ctx, &pd)) || (err = vrdma_create_cq(ctx, 64, &cq))) {
		fprintf(stderr, "qp_mem: setup: %s\n", strerror(-err));
		goto close_ctx;
	}
	init.send_cq = init.recv_cq = cq;
	anon0 = status_kb(pid, "RssAnon");
	shm0 = status_kb(pid, "RssShmem");
	printf("%-8s %12s %12s %16s\n", "QPs", "RssAnon KiB", "RssShmem KiB", "private/QP KiB");
	printf("%-8u %12ld %12ld %16s\n", 0, anon0, shm0, "-");
	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		for (; n < steps[s]; n++) {
			err = vrdma_create_qp(pd, &init, &qps[n]);
			if (err) {
				fprintf(stderr, "qp_mem: QP %u: %s\n", n, strerror(-err));
				goto close_ctx;
			}
		}
		anon = status_kb(pid, "RssAnon");
		shm = status_kb(pid, "RssShmem");
		printf("%-8u %12ld %12ld %16.2f\n", n, anon, shm, (double)(anon - anon0) / n);
	}
	printf("bench: qp_private_kib_per_qp=%.2f target<=8\n", (double)(anon - anon0) / n);
close_ctx:
	vrdma_close(ctx);
	free(qps);
	return err ? 1 : 0;
}
