// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-ring-liar [-d DEVICE] [-g GID_INDEX]
 * A program that lies in the rings of its own memory (ABI v2,
 * docs/virtio-rdma.md section 9), meant to run as an unprivileged user on
 * a device with rings: it reaches into the provider's objects (vrdma.h) and
 * writes what no honest provider would. Each lie must cost this program
 * alone: the device puts the queue that lied in error and says so with an
 * async event, and the kernel delivers only events of this program's own
 * objects; the caller then checks the guest's kernel log and that another
 * user's program works.
 *
 *   prod     a send ring's prod a ring and more past taken: QP_FATAL for
 *            that QP (the device's event CQE, read by the kernel)
 *   forged   before that, event CQEs forged into the slots of its CQ the
 *            kernel reads at the event, naming a QP on another CQ: never
 *            delivered
 *   cons     a CQ's cons past written: CQ_ERR for that CQ
 *   garbage  every slot of a send and a receive ring random, prod honest:
 *            the process polls on; nothing hangs
 *
 * Prints a line per check and "vrdma-ring-liar: N passed, M failed"; exits
 * 1 if a check failed, 77 if the context has no rings of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "self_rts.h"
#include "vrdma.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index = 1;
static int passed, failed;

static void check(const char *what, bool ok)
{
	printf("  %-66s %s\n", what, ok ? "ok" : "FAIL");
	if (ok)
		passed++;
	else
		failed++;
}

static int to_rts(struct ibv_qp *qp, uint32_t dest)
{
	return self_rts(qp, dest, &gid, gid_index);
}

static struct ibv_qp *rc_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

/* Two RC QPs on cq connected to each other through the device's GID. */
static bool pair(struct ibv_cq *cq, struct ibv_qp **a, struct ibv_qp **b)
{
	*a = rc_qp(cq);
	*b = rc_qp(cq);
	return *a && *b && !to_rts(*a, (*b)->qp_num) && !to_rts(*b, (*a)->qp_num);
}

static uint32_t *word(const struct vrdma_uring *r, unsigned int off)
{
	return (uint32_t *)(r->mem + off);
}

/* The ring's doorbell bit; the CQ's arm makes the provider look at
 * need_wake and kick a sleeping device.
 */
static void bell(const struct vrdma_uring *r, struct ibv_cq *cq)
{
	struct vrdma_context *c = to_vrdma_ctx(ctx);
	uint64_t *w = (uint64_t *)(c->db + VIRTIO_RDMA_DB_BITS_OFF) + r->bit / 64;

	__atomic_fetch_or(w, htole64(1ull << (r->bit % 64)), __ATOMIC_SEQ_CST);
	ibv_req_notify_cq(cq, 0);
}

/* The next async event within ms, for which the caller asks; acked. */
static bool next_event(enum ibv_event_type type, void *element, int ms,
		       int *others)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	bool found = false;

	while (!found && poll(&p, 1, ms) == 1 && !ibv_get_async_event(ctx, &ev)) {
		if (ev.event_type == type &&
		    (type == IBV_EVENT_CQ_ERR ? (void *)ev.element.cq :
		     (void *)ev.element.qp) == element)
			found = true;
		else if (others)
			(*others)++;
		ibv_ack_async_event(&ev);
	}
	return found;
}

/* A signaled SEND of 8 bytes from a to b, a receive posted first. */
static bool send_one(struct ibv_qp *a, struct ibv_qp *b, struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 8, mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;

	return !ibv_post_recv(b, &rwr, &rbad) && !ibv_post_send(a, &swr, &sbad);
}

/* Polls cq until n completions or 5 s; how many came. */
static int drain(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[16];
	int got = 0, k, tries;

	for (tries = 0; got < n && tries < 5000; tries++) {
		k = ibv_poll_cq(cq, 16, wc);
		if (k < 0)
			break;
		got += k;
		if (!k)
			usleep(1000);
	}
	return got;
}

static void lie_prod_forged(struct ibv_mr *mr)
{
	struct ibv_cq *cq1 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *cq2 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a, *b, *y1, *y2;
	struct virtio_rdma_cqe f;
	struct vrdma_uring *r;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	int i, others = 0;
	bool ok;

	if (!cq1 || !cq2 || !pair(cq1, &a, &b) || !pair(cq2, &y1, &y2)) {
		check("two connected pairs on two CQs", false);
		return;
	}
	ok = true;
	for (i = 0; i < 4; i++)
		ok = ok && send_one(a, b, mr);
	check("four SENDs on the pair of CQ 1 complete", ok && drain(cq1, 8) == 8);
	/* the slots the kernel reads at the next event: forged events */
	r = &to_vrdma_cq(cq1)->ring;
	memset(&f, 0, sizeof(f));
	f.opcode = VIRTIO_RDMA_WC_ASYNC_EVENT;
	f.vendor_err = htole32(VIRTIO_RDMA_EVENT_QP_FATAL);
	f.qp_num = htole32(y1->qp_num);		/* a QP on CQ 2 */
	for (i = 0; i < 8; i++)
		memcpy(r->mem + r->hdr + (size_t)i * r->stride, &f, sizeof(f));
	/* a's send ring runs ahead of what the device took */
	r = &to_vrdma_qp(a)->sq;
	*word(r, VIRTIO_RDMA_RING_PROD) =
		htole32(le32toh(*word(r, VIRTIO_RDMA_RING_TAKEN)) + r->entries + 7);
	bell(r, cq1);
	check("a send ring's prod past taken + entries: QP_FATAL for that QP",
	      next_event(IBV_EVENT_QP_FATAL, a, 5000, &others));
	check("  the QP is in ERR",
	      !ibv_query_qp(a, &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_ERR);
	check("  forged events naming a QP on another CQ: not delivered",
	      !next_event(IBV_EVENT_QP_FATAL, y1, 500, &others) && !others);
	ok = send_one(y1, y2, mr) && drain(cq2, 2) == 2;
	check("  the pair on CQ 2 still works", ok);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(y1);
	ibv_destroy_qp(y2);
	ibv_destroy_cq(cq1);
	ibv_destroy_cq(cq2);
}

static void lie_cons(struct ibv_mr *mr)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct vrdma_uring *r;
	struct ibv_qp *a, *b;

	if (!cq || !pair(cq, &a, &b)) {
		check("a connected pair", false);
		return;
	}
	check("a SEND completes", send_one(a, b, mr) && drain(cq, 2) == 2);
	r = &to_vrdma_cq(cq)->ring;
	*word(r, VIRTIO_RDMA_RING_CONS) =
		htole32(le32toh(*word(r, VIRTIO_RDMA_RING_WRITTEN)) + 5);
	send_one(a, b, mr);
	bell(r, cq);
	check("a CQ's cons past written: CQ_ERR for that CQ",
	      next_event(IBV_EVENT_CQ_ERR, cq, 5000, NULL));
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

static void lie_garbage(struct ibv_mr *mr)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct vrdma_uring *rs[2];
	struct ibv_qp *a, *b;
	struct ibv_wc wc[16];
	size_t j;
	int i;

	if (!cq || !pair(cq, &a, &b)) {
		check("a connected pair", false);
		return;
	}
	rs[0] = &to_vrdma_qp(a)->sq;
	rs[1] = &to_vrdma_qp(b)->rq;
	srandom(getpid());
	for (i = 0; i < 2; i++) {
		for (j = rs[i]->hdr; j < rs[i]->len; j++)
			rs[i]->mem[j] = random();
		*word(rs[i], VIRTIO_RDMA_RING_PROD) =
			htole32(le32toh(*word(rs[i], VIRTIO_RDMA_RING_TAKEN)) +
				rs[i]->entries);
		bell(rs[i], cq);
	}
	for (i = 0; i < 200; i++) {
		if (ibv_poll_cq(cq, 16, wc) < 0)
			break;
		usleep(5000);
	}
	check("random WQEs in a send and a receive ring: polled 1 s, no hang", true);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
	(void)mr;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *name = "vrdma0";
	struct ibv_mr *mr;
	static char buf[4096];
	int i, n, opt;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		if (opt == 'd')
			name = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else
			return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list || i == n) {
		fprintf(stderr, "vrdma-ring-liar: no device %s\n", name);
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fprintf(stderr, "vrdma-ring-liar: cannot open or query %s\n", name);
		return 1;
	}
	if (!to_vrdma_ctx(ctx)->rings) {
		printf("vrdma-ring-liar: %s gave this context no rings of its own\n",
		       name);
		return 77;
	}
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		fprintf(stderr, "vrdma-ring-liar: no PD or MR: %s\n", strerror(errno));
		return 1;
	}
	lie_prod_forged(mr);
	lie_cons(mr);
	lie_garbage(mr);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("vrdma-ring-liar: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
