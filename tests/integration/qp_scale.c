// SPDX-License-Identifier: GPL-2.0-only
/*
 * qp_scale: thousands of RC QPs between two VMs on ABI v2 (docs/virtio-rdma.md
 * section 8), end to end through libvrdma with VRDMA_RINGS=1. VM A's QP i is
 * connected to VM B's QP i; each sends MSGS SENDs of its own pattern, and B
 * checks every byte, the QP each came on, and that none is missing or twice.
 *
 * With --busy ITERS (make bench), QP 0 first writes ITERS 64-byte RDMA WRITEs
 * with nothing else on the device, then the other QPs are made, connected and
 * checked, and QP 0 writes ITERS again beside them, idle: the ratio of the
 * two rates is what idle QPs cost a busy one. --rounds N does that N times
 * (the others destroyed after each) and gives every ratio and their median.
 * --cq-per-qp gives each QP but QP 0 a CQ of its own (then the VMs need
 * ring_max_cq of NQP + 1): idle CQs beside idle QPs.
 *
 * Usage: qp_scale [--busy ITERS [--rounds N]] [--cq-per-qp] SOCKET_A SOCKET_B NQP MSGS
 * Output: "qp_scale: ..." lines, "bench: ..." with --busy. Exit 0 only if
 * every message arrived intact.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libvrdma.h"
#include "qp_connect.h"

#define MSG_LEN		200u		/* one packet at any path MTU */
#define BUSY_LEN	64u
#define BUSY_DEPTH	128u		/* QP 0's send queue */
#define BUSY_SIGNAL	32u		/* one signalled WRITE in this many */
#define MAX_CQE		32768u		/* libvrdma's deepest CQ ring */
#define DEADLINE_S	120
#define ACCESS		(VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE)

struct side {
	const char *path;
	struct vrdma_ctx *ctx;
	struct vrdma_pd *pd;
	struct vrdma_cq *scq, *rcq;	/* QP 0's, and the others' without --cq-per-qp */
	struct vrdma_qp **qp;
	struct vrdma_cq **cq;		/* with --cq-per-qp: QP i's (i > 0) */
	uint8_t *buf;
	struct vrdma_mr *mr;
	uint8_t gid[16];
};

static bool cq_per_qp;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "qp_scale: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return -1;
}

/* The pattern of message n: its number in every byte's neighbourhood. */
static uint8_t pattern(uint32_t n, uint32_t i)
{
	return (uint8_t)(n * 131u + i * 7u + (n >> 8));
}

static struct vrdma_qp_init_attr qp_init(const struct side *s, uint32_t depth, struct vrdma_cq *cq)
{
	return (struct vrdma_qp_init_attr){
		.qp_type = VIRTIO_IB_QPT_RC, .send_cq = cq ? cq : s->scq, .recv_cq = cq ? cq : s->rcq,
		.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1,
	};
}

static int open_side(struct side *s, uint32_t nqp, uint32_t msgs, size_t buf_len)
{
	struct vrdma_qp_init_attr init = qp_init(s, msgs, NULL);
	struct vrdma_qp_init_attr busy = qp_init(s, BUSY_DEPTH, NULL);
	uint32_t cqe = nqp * msgs + BUSY_DEPTH;
	struct vrdma_open_attr oa;
	int err;

	oa = (struct vrdma_open_attr){
		.mem_size = (size_t)nqp * vrdma_mem_qp(&init) + vrdma_mem_qp(&busy) +
			    2 * vrdma_mem_cq(cqe) + 2 * buf_len + (8u << 20) +
			    (cq_per_qp ? (size_t)nqp * vrdma_mem_cq(2 * msgs) : 0),
	};
	s->qp = calloc(nqp, sizeof(*s->qp));
	s->cq = calloc(nqp, sizeof(*s->cq));
	if (!s->qp || !s->cq)
		return fail("calloc", ENOMEM);
	if ((err = vrdma_open(s->path, &oa, &s->ctx)) || (err = vrdma_query_gid(s->ctx, 0, s->gid)) ||
	    (err = vrdma_alloc_pd(s->ctx, &s->pd)) || (err = vrdma_create_cq(s->ctx, cqe, &s->scq)) ||
	    (err = vrdma_create_cq(s->ctx, cqe, &s->rcq)))
		return fail(s->path, err);
	s->buf = vrdma_alloc_buf(s->ctx, buf_len);
	if (!s->buf)
		return fail("vrdma_alloc_buf", ENOMEM);
	memset(s->buf, 0xee, buf_len);
	err = vrdma_reg_mr(s->pd, s->buf, buf_len, ACCESS, &s->mr);
	return err ? fail("vrdma_reg_mr", err) : 0;
}

/* QPs [from, to) on both sides, each pair connected. */
static int make_pairs(struct side *a, struct side *b, uint32_t from, uint32_t to, uint32_t depth)
{
	struct vrdma_qp_init_attr ia, ib;
	char what[64];
	uint32_t i;
	int err;

	for (i = from; i < to; i++) {
		if (cq_per_qp && i &&
		    ((err = vrdma_create_cq(a->ctx, 2 * depth, &a->cq[i])) ||
		     (err = vrdma_create_cq(b->ctx, 2 * depth, &b->cq[i])))) {
			snprintf(what, sizeof(what), "QP %u: vrdma_create_cq", i);
			return fail(what, err);
		}
		ia = qp_init(a, depth, a->cq[i]);
		ib = qp_init(b, depth, b->cq[i]);
		if ((err = vrdma_create_qp(a->pd, &ia, &a->qp[i])) ||
		    (err = vrdma_create_qp(b->pd, &ib, &b->qp[i]))) {
			snprintf(what, sizeof(what), "QP %u: vrdma_create_qp", i);
			return fail(what, err);
		}
		if ((err = qp_connect(a->qp[i], VIRTIO_IB_QPT_RC, vrdma_qp_num(b->qp[i]), b->gid,
				      i, 0x800000 + i, VIRTIO_IB_MTU_1024, 1, 0)) ||
		    (err = qp_connect(b->qp[i], VIRTIO_IB_QPT_RC, vrdma_qp_num(a->qp[i]), a->gid,
				      0x800000 + i, i, VIRTIO_IB_MTU_1024, 1, 0))) {
			snprintf(what, sizeof(what), "QP %u: qp_connect", i);
			return fail(what, err);
		}
	}
	return 0;
}

/* Completions until want of them came in time; each checked by check. */
static int poll_all(struct vrdma_cq *cq, uint64_t want, const char *what,
		    int (*check)(const struct virtio_rdma_cqe *wc, void *arg), void *arg)
{
	struct virtio_rdma_cqe wc[64];
	double deadline = now_s() + DEADLINE_S;
	uint64_t got = 0;
	int n, i;

	while (got < want) {
		n = vrdma_poll_cq(cq, 64, wc);
		if (n < 0)
			return fail(what, n);
		for (i = 0; i < n; i++) {
			if (wc[i].status) {
				fprintf(stderr, "qp_scale: %s: wr_id %llu status %u opcode %u\n", what,
					(unsigned long long)wc[i].wr_id, wc[i].status, wc[i].opcode);
				return -1;
			}
			if (check && check(&wc[i], arg))
				return -1;
		}
		got += (uint64_t)n;
		if (!n && now_s() > deadline) {
			fprintf(stderr, "qp_scale: %s: %llu of %llu completions in %d s\n", what,
				(unsigned long long)got, (unsigned long long)want, DEADLINE_S);
			return -1;
		}
	}
	return 0;
}

struct recv_check {
	struct side *b;
	uint32_t first, msgs;
	uint8_t *seen;
};

/* A receive: on the QP its wr_id names, MSG_LEN bytes of its pattern, once. */
static int check_recv(const struct virtio_rdma_cqe *wc, void *arg)
{
	struct recv_check *c = arg;
	uint64_t n = wc->wr_id;
	uint32_t qp = (uint32_t)(n / c->msgs), i;
	const uint8_t *p = c->b->buf + n * MSG_LEN;

	if (qp < c->first || wc->opcode != 128 /* IB_WC_RECV */ || c->seen[n]) {
		fprintf(stderr, "qp_scale: receive wr_id %llu opcode %u%s\n",
			(unsigned long long)n, wc->opcode, c->seen[n] ? " twice" : "");
		return -1;
	}
	c->seen[n] = 1;
	if (wc->qp_num != vrdma_qp_num(c->b->qp[qp]) || wc->byte_len != MSG_LEN) {
		fprintf(stderr, "qp_scale: message %llu came on QPN %u with %u bytes, want %u, %u\n",
			(unsigned long long)n, wc->qp_num, wc->byte_len, vrdma_qp_num(c->b->qp[qp]),
			MSG_LEN);
		return -1;
	}
	for (i = 0; i < MSG_LEN; i++)
		if (p[i] != pattern((uint32_t)n, i)) {
			fprintf(stderr, "qp_scale: message %llu: byte %u differs\n",
				(unsigned long long)n, i);
			return -1;
		}
	return 0;
}

/* Every QP in [first, nqp) sends msgs SENDs to its peer, checked there. */
static int exchange(struct side *a, struct side *b, uint32_t first, uint32_t nqp, uint32_t msgs)
{
	struct recv_check c = { b, first, msgs, calloc((size_t)nqp * msgs, 1) };
	uint32_t q, m;
	int err = 0;

	if (!c.seen)
		return fail("calloc", ENOMEM);
	for (q = first; q < nqp && !err; q++)
		for (m = 0; m < msgs && !err; m++) {
			uint64_t n = (uint64_t)q * msgs + m;
			struct vrdma_sge sge = { (uintptr_t)(b->buf + n * MSG_LEN), MSG_LEN,
						 vrdma_mr_lkey(b->mr) };
			struct vrdma_recv_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1 };

			err = vrdma_post_recv(b->qp[q], &wr);
		}
	if (err)
		goto out;
	for (q = first; q < nqp && !err; q++)
		for (m = 0; m < msgs && !err; m++) {
			uint64_t n = (uint64_t)q * msgs + m;
			struct vrdma_sge sge = { (uintptr_t)(a->buf + n * MSG_LEN), MSG_LEN,
						 vrdma_mr_lkey(a->mr) };
			struct vrdma_send_wr wr = {
				.wr_id = n, .opcode = VIRTIO_IB_WR_SEND,
				.send_flags = VIRTIO_IB_SEND_SIGNALED, .sg_list = &sge, .num_sge = 1,
			};

			for (uint32_t i = 0; i < MSG_LEN; i++)
				a->buf[n * MSG_LEN + i] = pattern((uint32_t)n, i);
			err = vrdma_post_send(a->qp[q], &wr);
		}
	if (err)
		goto out;
	if (!cq_per_qp) {
		if (poll_all(a->scq, (uint64_t)(nqp - first) * msgs, "A's sends", NULL, NULL) ||
		    poll_all(b->rcq, (uint64_t)(nqp - first) * msgs, "B's receives", check_recv, &c))
			err = -1;
		goto out;
	}
	for (q = first; q < nqp && !err; q++)	/* QP 0 on the shared ones */
		if (poll_all(q ? a->cq[q] : a->scq, msgs, "A's sends", NULL, NULL) ||
		    poll_all(q ? b->cq[q] : b->rcq, msgs, "B's receives", check_recv, &c))
			err = -1;
out:
	free(c.seen);
	return err > 0 ? -err : err ? fail("post", err) : 0;
}

/* QP 0 writes iters 64-byte WRITEs into B's buffer, BUSY_DEPTH at most in
 * flight; its rate in messages a second, or a negative value. */
static double busy_rate(struct side *a, struct side *b, uint32_t iters)
{
	struct vrdma_sge sge = { (uintptr_t)a->buf, BUSY_LEN, vrdma_mr_lkey(a->mr) };
	struct vrdma_send_wr wr = {
		.opcode = VIRTIO_IB_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1,
		.remote_addr = (uintptr_t)b->buf, .rkey = vrdma_mr_rkey(b->mr),
	};
	struct virtio_rdma_cqe wc[16];
	uint32_t posted = 0, done = 0;
	double t0 = now_s(), deadline = t0 + DEADLINE_S;
	int n, i, err;

	while (done < iters) {
		while (posted < iters && posted - done + BUSY_SIGNAL <= BUSY_DEPTH) {
			uint32_t k;

			for (k = 0; k < BUSY_SIGNAL; k++, posted++) {
				wr.wr_id = posted;
				wr.send_flags = k == BUSY_SIGNAL - 1 ? VIRTIO_IB_SEND_SIGNALED : 0;
				err = vrdma_post_send(a->qp[0], &wr);
				if (err)
					return fail("busy post", err);
			}
		}
		n = vrdma_poll_cq(a->scq, 16, wc);
		if (n < 0)
			return fail("busy poll", n);
		for (i = 0; i < n; i++) {
			if (wc[i].status)
				return fail("busy write", EIO);
			done += BUSY_SIGNAL;
		}
		if (!n && now_s() > deadline)
			return fail("busy writes", ETIMEDOUT);
	}
	return iters / (now_s() - t0);
}

/* QPs [1, nqp) destroyed on both sides. */
static int drop_pairs(struct side *a, struct side *b, uint32_t nqp)
{
	uint32_t i;
	int err;

	for (i = 1; i < nqp; i++) {
		if ((err = vrdma_destroy_qp(a->qp[i])) || (err = vrdma_destroy_qp(b->qp[i])))
			return fail("vrdma_destroy_qp", err);
		if (cq_per_qp && ((err = vrdma_destroy_cq(a->cq[i])) ||
				  (err = vrdma_destroy_cq(b->cq[i]))))
			return fail("vrdma_destroy_cq", err);
	}
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	uint32_t nqp, msgs, busy = 0, rounds = 1, r;
	double t, alone = 0, beside, ratio[64];
	size_t buf_len;
	int arg = 1, rc = 1;

	for (; arg < argc && argv[arg][0] == '-'; arg++) {
		if (!strcmp(argv[arg], "--cq-per-qp"))
			cq_per_qp = true;
		else if (!strcmp(argv[arg], "--busy") && arg + 1 < argc)
			busy = (uint32_t)strtoul(argv[++arg], NULL, 0) / BUSY_SIGNAL * BUSY_SIGNAL;
		else if (!strcmp(argv[arg], "--rounds") && arg + 1 < argc)
			rounds = (uint32_t)strtoul(argv[++arg], NULL, 0);
		else
			break;
	}
	if (argc - arg != 4 || !rounds || rounds > 64) {
		fprintf(stderr,
			"usage: qp_scale [--busy ITERS [--rounds N]] [--cq-per-qp] SOCKET_A SOCKET_B NQP MSGS\n");
		return 2;
	}
	a.path = argv[arg];
	b.path = argv[arg + 1];
	nqp = (uint32_t)strtoul(argv[arg + 2], NULL, 0);
	msgs = (uint32_t)strtoul(argv[arg + 3], NULL, 0);
	if (!nqp || !msgs || msgs > 64 || (uint64_t)nqp * msgs + BUSY_DEPTH > MAX_CQE) {
		fprintf(stderr, "qp_scale: NQP x MSGS must be at most %u\n", MAX_CQE - BUSY_DEPTH);
		return 2;
	}
	buf_len = (size_t)nqp * msgs * MSG_LEN;
	if (open_side(&a, nqp, msgs, buf_len) || open_side(&b, nqp, msgs, buf_len))
		goto close;
	/* QP 0: deep for --busy, and alone on the device first */
	if (make_pairs(&a, &b, 0, 1, busy ? BUSY_DEPTH : msgs))
		goto close;
	/* with --busy, rounds of QP 0 alone, then beside the others (made,
	 * checked, then idle), which go again: next to each other, the two
	 * rates of a round share what else the machine was doing then */
	for (r = 0; r < (busy ? rounds : 1); r++) {
		if (busy) {
			alone = busy_rate(&a, &b, busy);
			if (alone < 0)
				goto close;
		}
		t = now_s();
		if (make_pairs(&a, &b, 1, nqp, msgs))
			goto close;
		printf("qp_scale: %u RC QPs a side made and connected in %.2f s\n", nqp, now_s() - t);
		t = now_s();
		if (exchange(&a, &b, 0, nqp, msgs))
			goto close;
		printf("qp_scale: %u QPs each sent %u SENDs of %u B, every byte checked, in %.2f s\n",
		       nqp, msgs, MSG_LEN, now_s() - t);
		if (!busy)
			break;
		beside = busy_rate(&a, &b, busy);
		if (beside < 0 || drop_pairs(&a, &b, nqp))
			goto close;
		ratio[r] = beside / alone;
		printf("qp_scale: round %u: QP 0 alone %.0f, beside %u idle QPs %.0f WRITEs of %u B a second: %.2f\n",
		       r + 1, alone, nqp - 1, beside, BUSY_LEN, ratio[r]);
	}
	if (busy) {
		printf("bench: idle_%uqp_rate_vs_alone=", nqp - 1);
		for (r = 0; r < rounds; r++)
			printf("%s%.2f", r ? " " : "(", ratio[r]);
		qsort(ratio, rounds, sizeof(ratio[0]), cmp_double);
		printf(") median %.2f target>=0.9\n", ratio[rounds / 2]);
	}
	rc = 0;
close:
	vrdma_close(a.ctx);
	vrdma_close(b.ctx);
	free(a.qp);
	free(b.qp);
	free(a.cq);
	free(b.cq);
	return rc;
}
