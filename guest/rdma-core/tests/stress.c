// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-stress [-d DEVICE] [-g GID_INDEX] [-n ITERATIONS] [-t SECONDS]
 *              [-k KEEP] [-f FLOODERS] [-H]
 * A hostile program against the guest driver (docs/guest.md, "What the
 * driver promises"), meant to run as an unprivileged user: it first holds
 * all but KEEP (6) of the device's QP slots and all but KEEP of its CQ
 * slots, so that every create reuses a slot another thread just released,
 * then runs threads that race, each for ITERATIONS rounds or SECONDS:
 *
 *   churn     a CQ and two RC QPs on it connected to each other through
 *             the device's own GID, receives and sends posted, then both
 *             QPs and the CQ destroyed with the work still queued
 *   srq       an SRQ with receives posted, a QP on it, all destroyed
 *   mr        an MR registered, RDMA WRITEs into it from a connected pair
 *             posted, the MR deregistered with the WRITEs in flight
 *   flood     ibv_query_device / ibv_query_port / ibv_req_notify_cq in a loop,
 *             from FLOODERS threads (-f, 2): with more threads than the
 *             control queue has room, it stays full
 *
 * Verbs are allowed to fail (the device runs out of slots, a QP goes to
 * error), but destroys are not (a destroy that fails leaks, and a kernel
 * consumer cannot retry one); the program checks that every thread made
 * progress with no destroy failed, and that the kernel let it end. Prints "vrdma-stress: N rounds, M verbs failed" and
 * "vrdma-stress: N passed, M failed"; exits 1 if a thread made no round
 * or saw a destroy fail.
 * A device that goes away (IBV_EVENT_DEVICE_FATAL: the driver reset it and
 * cut its programs off) ends the run a second later (verbs on the dead
 * context meanwhile), not at the timeout: nothing more can happen to it,
 * and the hostile tests' device lies end that way.
 * With -H it only takes every slot but KEEP (-k: what kernel consumers
 * hold, such as the MAD layer's QP1 and its CQ) and exits 1 unless it got
 * them all: no slot leaked by an earlier run.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "self_rts.h"

enum { BUF = 65536, NSEND = 16, NRECV = 16, MAX_HELD = 512 };

static struct ibv_context *ctx;
static union ibv_gid gid;
static int gid_index = 1;
static long iterations = 2000;
static double seconds = 60;
static struct timespec t0;
static long gone_ms = -1;	/* the device went away then (ms after t0) */
static bool all_done;

struct worker {
	const char *role;
	void *(*fn)(void *);
	pthread_t th;
	long rounds;
	long failed;		/* verbs that returned an error */
	long destroy_failed;	/* destroys that did: never allowed */
};

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

static bool go_on(const struct worker *w)
{
	long gone = __atomic_load_n(&gone_ms, __ATOMIC_RELAXED);
	double now = elapsed();

	return w->rounds < iterations && now < seconds && (gone < 0 || now < gone / 1e3 + 1);
}

/* The context's asynchronous events, until the workers are done: a fatal
 * one ends the run. */
static void *watch_events(void *arg)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	(void)arg;
	while (!__atomic_load_n(&all_done, __ATOMIC_RELAXED)) {
		if (poll(&pfd, 1, 100) <= 0 || ibv_get_async_event(ctx, &ev))
			continue;
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL) {
			printf("vrdma-stress: the device is gone (IBV_EVENT_DEVICE_FATAL) after %.1f s\n",
			       elapsed());
			__atomic_store_n(&gone_ms, (long)(elapsed() * 1e3), __ATOMIC_RELAXED);
			break;
		}
	}
	return NULL;
}

static int to_rts(struct ibv_qp *qp, uint32_t dest)
{
	return self_rts(qp, dest, &gid, gid_index);
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = NSEND, .max_recv_wr = srq ? 0 : NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static void post_recvs(struct worker *w, struct ibv_qp *qp, struct ibv_srq *srq,
		       struct ibv_mr *mr, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 4096,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < n; i++) {
		wr.wr_id = i;
		if (srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad)) {
			w->failed++;
			return;
		}
	}
}

static void post_sends(struct worker *w, struct ibv_qp *qp, struct ibv_mr *mr,
		       enum ibv_wr_opcode op, struct ibv_mr *target, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 2048,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int i;

	if (target) {
		wr.wr.rdma.remote_addr = (uintptr_t)target->addr;
		wr.wr.rdma.rkey = target->rkey;
	}
	for (i = 0; i < n; i++) {
		wr.wr_id = i;
		if (ibv_post_send(qp, &wr, &bad)) {
			w->failed++;
			return;
		}
	}
}

static void poll_some(struct ibv_cq *cq)
{
	struct ibv_wc wc[8];

	ibv_poll_cq(cq, 8, wc);
}

static void destroy_qp(struct worker *w, struct ibv_qp *qp)
{
	if (qp && ibv_destroy_qp(qp))
		w->destroy_failed++;
}

/* A thread's PD and one MR over a buffer of its own. */
struct res {
	struct ibv_pd *pd;
	void *buf;
	struct ibv_mr *mr;
};

static bool res_get(struct res *r, int access)
{
	r->pd = ibv_alloc_pd(ctx);
	r->buf = calloc(1, BUF);
	r->mr = r->pd && r->buf ? ibv_reg_mr(r->pd, r->buf, BUF, access) : NULL;
	return r->mr;
}

static void res_put(struct res *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	free(r->buf);
}

/* CQ + two connected QPs, work queued, all destroyed at once. */
static void *churn(void *arg)
{
	struct worker *w = arg;
	struct res r;
	bool ok = res_get(&r, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_pd *pd = r.pd;
	struct ibv_mr *mr = r.mr;

	while (ok && go_on(w)) {
		struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
		struct ibv_qp *a = NULL, *b = NULL;

		if (!cq) {
			w->failed++;
			continue;
		}
		a = rc_qp(pd, cq, NULL);
		b = a ? rc_qp(pd, cq, NULL) : NULL;
		if (a && b && !to_rts(a, b->qp_num) && !to_rts(b, a->qp_num)) {
			post_recvs(w, b, NULL, mr, NRECV);
			post_sends(w, a, mr, IBV_WR_SEND, NULL, NSEND);
			if (w->rounds & 1)
				poll_some(cq);
			w->rounds++;
		} else {
			w->failed++;
		}
		destroy_qp(w, a);
		destroy_qp(w, b);
		if (ibv_destroy_cq(cq))
			w->destroy_failed++;
	}
	res_put(&r);
	return NULL;
}

/* An SRQ with receives, a QP on it, destroyed in either order. */
static void *srq_churn(void *arg)
{
	struct worker *w = arg;
	struct res r;
	bool ok = res_get(&r, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_pd *pd = r.pd;
	struct ibv_mr *mr = r.mr;
	struct ibv_cq *cq = NULL;

	while (ok && go_on(w)) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 1 } };
		struct ibv_srq *srq;
		struct ibv_qp *qp;

		if (!cq && !(cq = ibv_create_cq(ctx, 64, NULL, NULL, 0))) {
			w->failed++;
			usleep(1000);
			continue;
		}
		srq = ibv_create_srq(pd, &sa);
		if (!srq) {
			w->failed++;
			continue;
		}
		post_recvs(w, NULL, srq, mr, 16);
		qp = rc_qp(pd, cq, srq);
		if (qp)
			w->rounds++;
		else
			w->failed++;
		destroy_qp(w, qp);
		if (ibv_destroy_srq(srq))
			w->destroy_failed++;
	}
	if (cq)
		ibv_destroy_cq(cq);
	res_put(&r);
	return NULL;
}

/* A CQ and two connected QPs on it, made once slots are free. */
static bool pair_up(struct worker *w, struct ibv_pd *pd, struct ibv_cq **cq,
		    struct ibv_qp **a, struct ibv_qp **b)
{
	if (!*cq)
		*cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (*cq && !*a)
		*a = rc_qp(pd, *cq, NULL);
	if (*a && !*b) {
		*b = rc_qp(pd, *cq, NULL);
		if (*b && (to_rts(*a, (*b)->qp_num) || to_rts(*b, (*a)->qp_num))) {
			destroy_qp(w, *a);
			destroy_qp(w, *b);
			*a = *b = NULL;
		}
	}
	if (*b)
		return true;
	w->failed++;
	usleep(1000);
	return false;
}

/* RDMA WRITEs into an MR that is deregistered while they fly. */
static void *mr_churn(void *arg)
{
	struct worker *w = arg;
	struct res r;
	bool ok = res_get(&r, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_pd *pd = r.pd;
	struct ibv_mr *smr = r.mr;
	void *dst = calloc(1, BUF);
	struct ibv_cq *cq = NULL;
	struct ibv_qp *a = NULL, *b = NULL;

	while (ok && dst && go_on(w)) {
		struct ibv_mr *tmr;

		if (!pair_up(w, pd, &cq, &a, &b))
			continue;
		tmr = ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!tmr) {
			w->failed++;
			continue;
		}
		post_sends(w, a, smr, IBV_WR_RDMA_WRITE, tmr, 8);
		if (ibv_dereg_mr(tmr))
			w->destroy_failed++;
		poll_some(cq);
		poll_some(cq);
		w->rounds++;
		/* a WRITE that found no MR put the QPs in error: new ones */
		if (w->rounds % 64 == 0) {
			destroy_qp(w, a);
			destroy_qp(w, b);
			a = b = NULL;
		}
	}
	destroy_qp(w, a);
	destroy_qp(w, b);
	if (cq)
		ibv_destroy_cq(cq);
	res_put(&r);
	free(dst);
	return NULL;
}

/* Commands as fast as one thread can ask. */
static void *flood(void *arg)
{
	struct worker *w = arg;
	struct ibv_cq *cq = NULL;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;

	while (go_on(w)) {
		if (!cq)
			cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (ibv_query_device(ctx, &da))
			w->failed++;
		if (ibv_query_port(ctx, 1, &pa))
			w->failed++;
		if (cq && ibv_req_notify_cq(cq, 0))
			w->failed++;
		w->rounds++;
	}
	if (cq)
		ibv_destroy_cq(cq);
	return NULL;
}

/* Queries only: the flooders past the first two hold no CQ slot. */
static void *flood_query(void *arg)
{
	struct worker *w = arg;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;

	while (go_on(w)) {
		if (ibv_query_device(ctx, &da) || ibv_query_port(ctx, 1, &pa))
			w->failed++;
		w->rounds++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct worker roles[] = {
		{ .role = "churn", .fn = churn }, { .role = "churn", .fn = churn },
		{ .role = "srq", .fn = srq_churn }, { .role = "mr", .fn = mr_churn },
		{ .role = "flood", .fn = flood }, { .role = "flood", .fn = flood },
	};
	struct worker *ws;
	int nflood = 2, nw;
	const char *name = NULL;
	struct ibv_device **list;
	struct ibv_device_attr da;
	struct ibv_cq *held_cq[MAX_HELD];
	struct ibv_qp *held_qp[MAX_HELD];
	struct ibv_pd *pd;
	pthread_t events;
	bool hold_only = false;
	int keep = -1, nheld_cq = 0, nheld_qp = 0, i, c, passed = 0, failed = 0;
	long rounds = 0, vfailed = 0;

	while ((c = getopt(argc, argv, "d:g:n:t:k:f:H")) != -1) {
		switch (c) {
		case 'd': name = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'n': iterations = atol(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'k': keep = atoi(optarg); break;
		case 'f': nflood = atoi(optarg); break;
		case 'H': hold_only = true; break;
		default:
			fprintf(stderr, "usage: vrdma-stress [-d DEV] [-g GID] [-n N] [-t S] [-k KEEP] [-f FLOODERS] [-H]\n");
			return 2;
		}
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list || !list[i]) {
		fprintf(stderr, "vrdma-stress: no device %s\n", name ? name : "");
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_device(ctx, &da) || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fprintf(stderr, "vrdma-stress: cannot open or query %s\n", ibv_get_device_name(list[i]));
		return 1;
	}
	if (keep < 0)	/* -H: every slot; else 6 free for the threads */
		keep = hold_only ? 0 : 6;
	/* every slot but KEEP held: creates reuse what destroys just freed */
	pd = ibv_alloc_pd(ctx);
	while (pd && nheld_cq < MAX_HELD && nheld_cq + keep < da.max_cq &&
	       (held_cq[nheld_cq] = ibv_create_cq(ctx, 4, NULL, NULL, 0)))
		nheld_cq++;
	while (pd && nheld_cq && nheld_qp < MAX_HELD && nheld_qp + keep < da.max_qp &&
	       (held_qp[nheld_qp] = rc_qp(pd, held_cq[0], NULL)))
		nheld_qp++;
	printf("vrdma-stress: %s: holding %d of %d CQ slots, %d of %d QP slots\n",
	       ibv_get_device_name(list[i]), nheld_cq, da.max_cq, nheld_qp, da.max_qp);

	if (hold_only) {
		passed = nheld_cq == da.max_cq - keep && nheld_qp == da.max_qp - keep;
		failed = !passed;
		goto release;
	}
	nw = (int)(sizeof(roles) / sizeof(roles[0])) - 2 + (nflood > 0 ? nflood : 0);
	ws = calloc(nw, sizeof(*ws));
	if (!ws)
		return 1;
	for (i = 0; i < nw; i++) {
		if (i < (int)(sizeof(roles) / sizeof(roles[0])) - 2 + (nflood < 2 ? nflood : 2)) {
			ws[i] = roles[i];
		} else {
			ws[i].role = "flood";
			ws[i].fn = flood_query;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&events, NULL, watch_events, NULL)) {
		perror("pthread_create");
		return 1;
	}
	for (i = 0; i < nw; i++)
		if (pthread_create(&ws[i].th, NULL, ws[i].fn, &ws[i])) {
			perror("pthread_create");
			return 1;
		}
	for (i = 0; i < nw; i++) {
		pthread_join(ws[i].th, NULL);
		if (i < 6 || ws[i].rounds == 0 || ws[i].destroy_failed)
			printf("vrdma-stress: thread %d (%s): %ld rounds, %ld verbs failed, %ld destroys\n",
			       i, ws[i].role, ws[i].rounds, ws[i].failed, ws[i].destroy_failed);
		if (ws[i].rounds > 0 && !ws[i].destroy_failed)
			passed++;
		else
			failed++;
		rounds += ws[i].rounds;
		vfailed += ws[i].failed;
	}
	__atomic_store_n(&all_done, true, __ATOMIC_RELAXED);
	pthread_join(events, NULL);
	printf("vrdma-stress: %d threads: %ld rounds, %ld verbs failed in %.1f s\n", nw, rounds,
	       vfailed, elapsed());
	free(ws);
release:
	while (nheld_qp)
		ibv_destroy_qp(held_qp[--nheld_qp]);
	while (nheld_cq)
		ibv_destroy_cq(held_cq[--nheld_cq]);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("vrdma-stress: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
