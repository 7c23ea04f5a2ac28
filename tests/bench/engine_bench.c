// SPDX-License-Identifier: GPL-2.0-only
/*
 * engine_bench: the transport engine's own cost, run by `make bench`.
 *
 * Two engines, one RC QP each (path and port MTU 4096), joined by a lossless
 * in-memory wire: every frame is built by the engine into a buffer of a
 * preallocated pool of 9 KiB buffers, parsed back with roce_parse and handed
 * to the peer's eng_rx, all on this one thread. MRs cover malloc'ed memory
 * through a page-wise map function, as guest memory is reached.
 *
 * RDMA WRITE and SEND (receives posted ahead) of 64 B and 64 KiB: up to 32
 * messages outstanding, more posted as completions come back, for about
 * 0.5 s of wall time (CLOCK_MONOTONIC; the engines' clock is the real one)
 * after a short warm-up. Reported: messages/s and Gb/s of payload, frames
 * and ACKs per message. The last message's bytes are compared with what was
 * sent. A benchmark, not a test: no thresholds; it exits non-zero only if a
 * completion has a bad status, data differ, the engine stalls or an
 * interface call fails.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eng_pair.h"

#define RUN_NS		500e6	/* per case */
#define WARMUP_NS	50e6
#define STALL_NS	2e9	/* no completion for this long: the engine is stuck */
#define FRAME_ROOM	9216
#define NBUF		4096	/* frame buffers shared by both sides */
#define WINDOW		32	/* messages outstanding */
#define RQ_DEPTH	64	/* receives posted ahead */
#define MAX_MSG		65536u
#define SRC_OFF		0				/* a: WINDOW slots of MAX_MSG */
#define DST_OFF		0				/* b: WRITE targets, WINDOW slots */
#define RECV_OFF	((uint64_t)WINDOW * MAX_MSG)	/* b: RQ_DEPTH receive buffers */
#define MEM_SIZE	(RECV_OFF + (uint64_t)RQ_DEPTH * MAX_MSG)

/* ---- the wire: a pool of frame buffers and a FIFO per direction ---- */

static uint8_t *pool;
static uint32_t free_stack[NBUF];
static uint32_t nfree;

/* Frames on their way to a side's peer, in sending order. */
struct side_wire {
	uint32_t ring_buf[NBUF], ring_len[NBUF];
	uint32_t head, count;
};

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t op_now_ns(void *ctx)
{
	(void)ctx;
	return mono_ns();
}

static unsigned int op_tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
				struct roce_frag *frags, unsigned int max)
{
	(void)ctx;
	(void)dgid;
	if (len > FRAME_ROOM || !max) {
		fprintf(stderr, "engine_bench: engine asked for a %u B frame\n", len);
		exit(1);
	}
	if (!nfree)
		return 0;
	frags[0].data = pool + (size_t)free_stack[--nfree] * FRAME_ROOM;
	frags[0].len = FRAME_ROOM;
	return 1;
}

static void op_tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct side_wire *w = ((struct side *)ctx)->wire;

	if (n != 1 || len > FRAME_ROOM || w->count == NBUF) {
		fprintf(stderr, "engine_bench: tx_send of %u frags, %u B\n", n, len);
		exit(1);
	}
	w->ring_buf[(w->head + w->count) % NBUF] =
		(uint32_t)((size_t)(frags[0].data - pool) / FRAME_ROOM);
	w->ring_len[(w->head + w->count) % NBUF] = len;
	w->count++;
}

static const struct eng_ops ops = { .gid = side_gid };
static const struct eng_tx wire_tx = { op_now_ns, op_tx_alloc, op_tx_send, NULL };

/* Hand everything s sent to its peer, in order (eng_rx may send more). */
static void deliver(struct side *s)
{
	struct side_wire *w = s->wire;

	while (w->count) {
		uint32_t b = w->ring_buf[w->head], len = w->ring_len[w->head];
		enum roce_drop why;

		w->head = (w->head + 1) % NBUF;
		w->count--;
		if (side_rx(s->peer, pool + (size_t)b * FRAME_ROOM, len, &why)) {
			fprintf(stderr, "engine_bench: the codec refused a %u B frame the engine "
				"built (drop reason %d)\n", len, (int)why);
			exit(1);
		}
		free_stack[nfree++] = b;
	}
}

/* ---- setup ---- */

static void die(const char *what, int r)
{
	fprintf(stderr, "engine_bench: %s failed: %d\n", what, r);
	exit(1);
}

static void side_init(struct side *s, uint8_t id)
{
	struct eng_qp_init_attr init = {
		.qp_type = ENG_QPT_RC,
		.cap = { .max_send_wr = 2 * WINDOW, .max_recv_wr = RQ_DEPTH, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};
	const char *what;
	int r;

	if ((r = side_open(s, id, &ops, &wire_tx, &init, 1024, MEM_SIZE, &what)))
		die(what, r);
	s->wire = calloc(1, sizeof(*s->wire));
	if (!s->wire)
		die("calloc", -ENOMEM);
}

static void side_free(struct side *s)
{
	if (side_close(s))
		die("teardown", 0);
	free(s->wire);
}

/* RESET -> INIT -> RTR -> RTS, connected to the peer; the 67 ms timeout
 * never fires on a lossless wire. */
static void connect_qp(struct side *s, uint32_t sq_psn, uint32_t rq_psn)
{
	const char *what;
	int r;

	if ((r = side_connect(s, ENG_QPT_RC, ENG_MTU_4096, sq_psn, rq_psn, 7, 7, &what)))
		die(what, r);
}

static void post_recv_slot(struct side *b, uint32_t slot)
{
	struct eng_sge sge = { SIDE_IOVA + RECV_OFF + (uint64_t)slot * MAX_MSG, MAX_MSG,
			       eng_mr_lkey(b->mr) };
	struct eng_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	int r = eng_post_recv(b->qp, &wr);

	if (r)
		die("eng_post_recv", r);
}

/* ---- one case ---- */

struct bench_case {
	enum eng_wr_opcode op;
	uint32_t size;
	const char *op_name, *size_name;
};

struct result {
	uint64_t msgs, ns;
	double msgs_per_s, gbps, frames_per_msg, acks_per_msg;
};

static void print_counters(const char *who, const struct eng_counters *c)
{
	unsigned int i;

	fprintf(stderr, "  %s:", who);
	for (i = 0; i < ENG_CNT_MAX; i++)
		if (c->c[i])
			fprintf(stderr, " %s=%llu", eng_counter_name((enum eng_counter)i),
				(unsigned long long)c->c[i]);
	fprintf(stderr, "\n");
}

__attribute__((format(printf, 3, 4), noreturn))
static void fail(struct side *a, struct side *b, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "engine_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  requester QP %s, responder QP %s\n",
		eng_qp_state_name(eng_qp_state(a->qp)), eng_qp_state_name(eng_qp_state(b->qp)));
	print_counters("requester", eng_dev_counters(a->dev));
	print_counters("responder", eng_dev_counters(b->dev));
	exit(1);
}

static uint64_t last_recv_slot;

/* Completions on b (receives: repost at once) and a (sends). */
static void reap(struct side *a, struct side *b, const struct bench_case *c, uint64_t *recvd,
		 uint64_t *done)
{
	struct eng_wc wc[64];
	int n, i;

	while ((n = eng_cq_poll(b->cq, wc, 64)) > 0)
		for (i = 0; i < n; i++) {
			if (wc[i].status != ENG_WC_SUCCESS)
				fail(a, b, "receive completion with status %d", (int)wc[i].status);
			if (wc[i].opcode != ENG_WC_RECV || wc[i].byte_len != c->size)
				fail(a, b, "receive completion: opcode %d, byte_len %u (want %u)",
				     (int)wc[i].opcode, wc[i].byte_len, c->size);
			last_recv_slot = wc[i].wr_id;
			post_recv_slot(b, (uint32_t)wc[i].wr_id);
			(*recvd)++;
		}
	if (n < 0)
		fail(a, b, "responder CQ poll: %d", n);
	while ((n = eng_cq_poll(a->cq, wc, 64)) > 0)
		for (i = 0; i < n; i++) {
			if (wc[i].status != ENG_WC_SUCCESS)
				fail(a, b, "send completion with status %d (wr_id %llu)",
				     (int)wc[i].status, (unsigned long long)wc[i].wr_id);
			if (wc[i].wr_id != *done)
				fail(a, b, "send completion out of order: wr_id %llu, expected %llu",
				     (unsigned long long)wc[i].wr_id, (unsigned long long)*done);
			(*done)++;
		}
	if (n < 0)
		fail(a, b, "requester CQ poll: %d", n);
}

static void post_msg(struct side *a, struct side *b, const struct bench_case *c, uint64_t seq)
{
	uint32_t slot = (uint32_t)(seq % WINDOW);
	uint8_t *src = a->mem + SRC_OFF + (uint64_t)slot * MAX_MSG;
	struct eng_sge sge = { SIDE_IOVA + SRC_OFF + (uint64_t)slot * MAX_MSG, c->size,
			       eng_mr_lkey(a->mr) };
	struct eng_send_wr wr = {
		.wr_id = seq, .opcode = c->op, .send_flags = ENG_SEND_SIGNALED,
		.sg_list = &sge, .num_sge = 1,
		.rdma = { SIDE_IOVA + DST_OFF + (uint64_t)slot * MAX_MSG, eng_mr_rkey(b->mr) },
	};
	int r;

	/* Stamp the message so no two in a row carry the same bytes. */
	memcpy(src, &seq, sizeof(seq));
	memcpy(src + c->size - sizeof(seq), &seq, sizeof(seq));
	if ((r = eng_post_send(a->qp, &wr)))
		die("eng_post_send", r);
}

static void run_case(struct side *a, struct side *b, const struct bench_case *c, double run_ns,
		     struct result *res)
{
	uint64_t posted = 0, done = 0, recvd = 0, t0, t, stop_at, progress_at, seen = 0;
	uint64_t a_tx0 = eng_dev_counters(a->dev)->c[ENG_CNT_TX_PKTS];
	uint64_t b_ack0 = eng_dev_counters(b->dev)->c[ENG_CNT_TX_ACKS];
	bool send = c->op == ENG_WR_SEND;
	const uint8_t *src, *dst;

	t0 = progress_at = mono_ns();
	stop_at = t0 + (uint64_t)run_ns;
	for (;;) {
		t = mono_ns();
		if (t >= stop_at && done == posted && (!send || recvd == posted))
			break;
		while (t < stop_at && posted - done < WINDOW)
			post_msg(a, b, c, posted++);
		eng_poll(a->dev, &(uint64_t){ 0 });
		eng_poll(b->dev, &(uint64_t){ 0 });
		deliver(a);
		deliver(b);
		reap(a, b, c, &recvd, &done);
		if (done + recvd != seen) {
			seen = done + recvd;
			progress_at = t;
		} else if (t - progress_at > STALL_NS) {
			fail(a, b, "%s: no completion for 2 s, %llu messages outstanding",
			     c->op_name, (unsigned long long)(posted - done));
		}
	}
	res->ns = mono_ns() - t0;
	res->msgs = done;
	res->msgs_per_s = (double)done * 1e9 / (double)res->ns;
	res->gbps = (double)done * c->size * 8 / (double)res->ns;
	res->frames_per_msg = (double)(eng_dev_counters(a->dev)->c[ENG_CNT_TX_PKTS] - a_tx0) /
			      (double)done;
	res->acks_per_msg = (double)(eng_dev_counters(b->dev)->c[ENG_CNT_TX_ACKS] - b_ack0) /
			    (double)done;

	/* The last message's bytes arrived intact. */
	src = a->mem + SRC_OFF + (uint64_t)((done - 1) % WINDOW) * MAX_MSG;
	dst = send ? b->mem + RECV_OFF + last_recv_slot * MAX_MSG :
		     b->mem + DST_OFF + (uint64_t)((done - 1) % WINDOW) * MAX_MSG;
	if (memcmp(src, dst, c->size))
		fail(a, b, "%s: the last message's data differ (message %llu)", c->op_name,
		     (unsigned long long)(done - 1));
}

int main(void)
{
	static const struct bench_case cases[] = {
		{ ENG_WR_RDMA_WRITE, 64, "write", "64B" },
		{ ENG_WR_RDMA_WRITE, MAX_MSG, "write", "64KiB" },
		{ ENG_WR_SEND, 64, "send", "64B" },
		{ ENG_WR_SEND, MAX_MSG, "send", "64KiB" },
	};
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	static const enum eng_counter bad_cnt[] = {
		ENG_CNT_TX_NO_BUFFER, ENG_CNT_DROP_DUPLICATE, ENG_CNT_DROP_OUT_OF_SEQUENCE,
		ENG_CNT_NAK_SENT_PSN, ENG_CNT_NAK_SENT_RNR, ENG_CNT_RETRY_TIMEOUT,
		ENG_CNT_RETRY_RNR, ENG_CNT_RETRANSMITTED_PKTS,
	};
	struct result res[NCASES], warm;
	struct side *a, *b;
	unsigned int i, k;
	uint64_t j;

	pool = aligned_alloc(4096, (size_t)NBUF * FRAME_ROOM);
	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	if (!pool || !a || !b)
		die("allocation", -ENOMEM);
	memset(pool, 0, (size_t)NBUF * FRAME_ROOM);	/* fault the pages in now */
	for (i = 0; i < NBUF; i++)
		free_stack[nfree++] = NBUF - 1 - i;

	side_init(a, 1);
	side_init(b, 2);
	a->peer = b;
	b->peer = a;
	connect_qp(a, 0x100, 0x200);
	connect_qp(b, 0x200, 0x100);
	for (j = 0; j < (uint64_t)WINDOW * MAX_MSG; j++)
		a->mem[SRC_OFF + j] = (uint8_t)(j * 131 + (j >> 12));
	for (i = 0; i < RQ_DEPTH; i++)
		post_recv_slot(b, i);

	for (i = 0; i < NCASES; i++) {
		run_case(a, b, &cases[i], WARMUP_NS, &warm);
		run_case(a, b, &cases[i], RUN_NS, &res[i]);
	}

	printf("engine_bench: two engines, RC, path MTU 4096, %u messages outstanding,\n"
	       "lossless in-memory wire (build, roce_parse, eng_rx), one thread, %.1f s per case\n\n",
	       WINDOW, RUN_NS / 1e9);
	printf("%-14s %12s %10s %10s %10s %12s\n", "case", "msgs/s", "Gb/s", "ns/msg",
	       "frames/msg", "ACKs/msg");
	for (i = 0; i < NCASES; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%s %s", cases[i].op_name,
			 cases[i].size == 64 ? "64 B" : "64 KiB");
		printf("%-14s %12.0f %10.2f %10.0f %10.2f %12.3f\n", name, res[i].msgs_per_s,
		       res[i].gbps, 1e9 / res[i].msgs_per_s, res[i].frames_per_msg,
		       res[i].acks_per_msg);
	}
	printf("\n");
	for (i = 0; i < NCASES; i++) {
		printf("bench: engine_%s_%s_msgs_per_s=%.0f\n", cases[i].op_name,
		       cases[i].size_name, res[i].msgs_per_s);
		printf("bench: engine_%s_%s_Gbps=%.2f\n", cases[i].op_name, cases[i].size_name,
		       res[i].gbps);
	}

	/* A lossless wire should see no retransmission, NAK or buffer wait. */
	for (k = 0; k < sizeof(bad_cnt) / sizeof(bad_cnt[0]); k++) {
		uint64_t n = eng_dev_counters(a->dev)->c[bad_cnt[k]] +
			     eng_dev_counters(b->dev)->c[bad_cnt[k]];

		if (n)
			printf("engine_bench: note: %s=%llu\n", eng_counter_name(bad_cnt[k]),
			       (unsigned long long)n);
	}

	side_free(a);
	side_free(b);
	free(a);
	free(b);
	free(pool);
	return 0;
}
