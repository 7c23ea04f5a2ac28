// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's memory per QP (make bench): opens QPs through libvrdma on
 * several VMs (vhost-user addresses at most 256 queues per device, so at most
 * 127 QPs each; with VRDMA_RINGS=1, ABI v2, ring_max_qp each) and reads
 * vrdmad's resident memory from /proc at 0, 1, 64, 1024 and 4096 QPs (as
 * many of those as the VMs hold). Private memory (RssAnon) is what the daemon itself allocates; the
 * shared part (RssShmem) is the VMs' own memory — rings and buffers — that
 * the daemon touches. Target: <= 8 KiB private per QP.
 *
 * Usage: qp_mem DAEMON_PID SOCKET...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libvrdma.h"

#define MAX_VMS 16

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

struct vm {
	struct vrdma_ctx *ctx;
	struct vrdma_pd *pd;
	struct vrdma_cq *cq;
	uint32_t max_qp, n_qp;
};

int main(int argc, char **argv)
{
	static const unsigned int steps[] = { 1, 64, 1024, 4096 };
	bool rings = getenv("VRDMA_RINGS") && !strcmp(getenv("VRDMA_RINGS"), "1");
	unsigned int cap = 0;
	long before;
	struct vrdma_qp_init_attr init = {
		.qp_type = VIRTIO_IB_QPT_RC, .max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct vrdma_open_attr oa = { .mem_size = 32u << 20 };
	struct virtio_rdma_config cfg;
	struct vm vms[MAX_VMS] = { 0 };
	unsigned int n_vms, v = 0, n = 0, s;
	long anon0, shm0, anon = 0, shm = 0;
	struct vrdma_qp *qp;
	int pid, err = 0;

	if (argc < 3 || argc - 2 > MAX_VMS) {
		fprintf(stderr, "usage: qp_mem DAEMON_PID SOCKET... (at most %d)\n", MAX_VMS);
		return 2;
	}
	if (rings)	/* each QP's two rings in our memory */
		oa.mem_size = (8u << 20) + 4096 * vrdma_mem_qp(&init);
	pid = atoi(argv[1]);
	n_vms = (unsigned int)argc - 2;
	before = status_kb(pid, "RssAnon");
	for (v = 0; v < n_vms; v++) {
		struct vm *m = &vms[v];

		if ((err = vrdma_open(argv[2 + v], &oa, &m->ctx)) ||
		    (err = vrdma_query_device(m->ctx, &cfg)) ||
		    (err = vrdma_alloc_pd(m->ctx, &m->pd)) ||
		    (err = vrdma_create_cq(m->ctx, 64, &m->cq))) {
			fprintf(stderr, "qp_mem: %s: %s\n", argv[2 + v], strerror(-err));
			goto close_vms;
		}
		m->max_qp = rings ? cfg.ring_max_qp : cfg.max_qp;
		cap += m->max_qp;
	}
	anon0 = status_kb(pid, "RssAnon");
	shm0 = status_kb(pid, "RssShmem");
	printf("%s: %u VM(s) opened, each with a PD and a CQ: %.0f KiB private per VM\n",
	       rings ? "ABI v2 (rings)" : "ABI v1 (virtqueues)", n_vms,
	       (double)(anon0 - before) / n_vms);
	printf("%-8s %12s %12s %16s\n", "QPs", "RssAnon KiB", "RssShmem KiB", "private/QP KiB");
	printf("%-8u %12ld %12ld %16s\n", 0, anon0, shm0, "-");
	v = 0;
	for (s = 0; s < sizeof(steps) / sizeof(steps[0]) && steps[s] <= cap; s++) {
		for (; n < steps[s]; n++) {
			while (v < n_vms && vms[v].n_qp == vms[v].max_qp)
				v++;
			if (v == n_vms) {
				fprintf(stderr, "qp_mem: the VMs hold only %u QPs\n", n);
				err = -ENOSPC;
				goto close_vms;
			}
			init.send_cq = init.recv_cq = vms[v].cq;
			err = vrdma_create_qp(vms[v].pd, &init, &qp);
			if (err) {
				fprintf(stderr, "qp_mem: QP %u: %s\n", n, strerror(-err));
				goto close_vms;
			}
			vms[v].n_qp++;
		}
		anon = status_kb(pid, "RssAnon");
		shm = status_kb(pid, "RssShmem");
		printf("%-8u %12ld %12ld %16.2f\n", n, anon, shm, (double)(anon - anon0) / n);
	}
	printf("bench: qp_private_kib_per_qp%s=%.2f at %u QPs target<=8\n", rings ? "_rings" : "",
	       (double)(anon - anon0) / n, n);
close_vms:
	for (v = 0; v < n_vms; v++)
		if (vms[v].ctx)
			vrdma_close(vms[v].ctx);	/* frees its PD, CQ and QPs */
	return err ? 1 : 0;
}
