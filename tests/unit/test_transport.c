// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two transport engines over an in-memory wire: every frame one sends is
 * built by the codec, parsed back by it (so every frame passes its checks)
 * and handed to the other. Deterministic: fixed seeds, a fake clock.
 *
 * The wire can drop, duplicate, reorder (delay), and corrupt frames (the
 * codec then drops them, as the daemon's receive path does); time moves only
 * when nothing else can happen, to the next timer or delivery.
 *
 * Covered: RC and UC SEND / WRITE / READ with and without immediate data at
 * sizes 0, 1, MTU-1, MTU, MTU+1, 64 KiB and 1 MiB for path MTUs 256, 1024
 * and 4096 starting just below the PSN wrap (so messages cross 2^24), data
 * checked byte for byte; RC streams under 1 % and 5 % loss, duplication and
 * reordering (exactly once, in order); UC under loss (never corrupted); RNR
 * waits and RNR_RETRY_EXC_ERR; RETRY_EXC_ERR with the rest flushed; UD with
 * the GRH area; bad rkey; a WRITE wrapping 2^64; ghost ACKs, READ-response
 * gaps, an unexpected opcode, a packet for a QP in RESET; a READ responder
 * slower than the retransmit timeout, losing a response. Shared receive
 * queues (IBA 10.2.9): two QPs taking WQEs from one SRQ in posting order,
 * each completion naming its QP; an empty SRQ answered with RNR NAKs until
 * a WQE is posted; the limit event once armed; UD on an SRQ; a QP in
 * ERR flushing only the WQE it held. Fast registration (IBA 10.6.3.6):
 * FREE until REG_MR, the key's low 8 bits, refusals; LOCAL_INV and SEND
 * with Invalidate (10.7), also of keys that may not be invalidated and
 * under a WRITE in progress. A RETH length over 2^31 NAKed; a duplicate
 * READ answered only for a tail of its original; eng_poll's budget per QP.
 * Restarts that keep the state (save.c): both ends of RC and UC streams
 * saved and restored into new engines every few rounds, frames lost while
 * one is gone; every kind of object back with its names; what does not
 * check out refused whole.
 *
 * TRANSPORT_PCAP=FILE writes every frame the tests send to a pcap.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "eng_pair.h"

#define MEM_SIZE	(3u << 20)
#define WIRE_MAX	4096

struct frame {
	uint8_t *data;
	uint32_t len;
	uint64_t at;		/* delivery time */
};

/* What the wire does to frames, in percent (corrupt: per mille). */
struct faults {
	unsigned int loss, dup, reorder, corrupt_pm;
	bool drop_all_a;	/* everything a sends is lost */
	int drop_nth_read_resp;	/* drop the Nth READ response b sends (1-based), 0 = none */
	int drop_nth_atomic_ack; /* drop the Nth ATOMIC ACKNOWLEDGE b sends, 0 = none */
	bool dup_atomic_req;	/* every atomic request a sends arrives twice */
	uint64_t b_pace_ns;	/* b's frames leave one per this many ns: a slow responder */
	/* a's frames reach b one per a_pace_ns through a queue of a_queue
	 * frames, dropped at its tail when full: a slow receiver's ring */
	uint64_t a_pace_ns;
	unsigned int a_queue;
	unsigned int ce;	/* percent of a's ECN-capable frames marked CE */
};

static uint64_t clock_ns;
static uint64_t rng_state = 42;
static struct faults wire_faults;
static FILE *pcap;
static int read_resp_seen;
static int atomic_ack_seen;
static uint64_t b_line_free;	/* when b's paced line can take the next frame */
static uint64_t a_line_free;	/* when the queue into b is empty again */
static unsigned int a_queue_drops;
/* IPv4 frames seen: a's not ECN-capable, marked CE; b's CNPs and the TOS
 * of the last */
static unsigned int a_not_ect, a_marked, b_cnps;
static uint8_t b_cnp_tos;

static void ipv4_csum(uint8_t *ip)
{
	uint32_t s = 0;
	unsigned int i;

	ip[10] = ip[11] = 0;
	for (i = 0; i < 20; i += 2)
		s += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	ip[10] = (uint8_t)(~s >> 8);
	ip[11] = (uint8_t)~s;
}

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)rng_state;
}

static uint64_t eng_timeout_ns_test(uint8_t t)
{
	return 4096ull << t;	/* IBA 9.7.6.1.3, written out independently */
}

static void pcap_write(const uint8_t *p, uint32_t len)
{
	uint32_t rec[4] = { (uint32_t)(clock_ns / 1000000000u),
			    (uint32_t)(clock_ns / 1000 % 1000000), len, len };

	if (!pcap)
		return;
	fwrite(rec, sizeof(rec), 1, pcap);
	fwrite(p, len, 1, pcap);
}

struct side_wire {
	struct frame f[WIRE_MAX];
	unsigned int n;
	uint64_t sent;
};
static struct side_wire wires[2];	/* side 1's, side 2's */

static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	return clock_ns;
}

static unsigned int tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
			     struct roce_frag *frags, unsigned int max)
{
	struct side *s = ctx;

	(void)dgid;
	(void)max;
	if (s->wire->n == WIRE_MAX)
		return 0;
	frags[0].data = malloc(len);
	frags[0].len = len;
	return frags[0].data ? 1 : 0;
}

static void tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct side *s = ctx;

	assert_int_equal(n, 1);
	s->wire->f[s->wire->n].data = frags[0].data;
	s->wire->f[s->wire->n].len = len;
	s->wire->f[s->wire->n++].at = clock_ns;
	s->wire->sent++;
}

static unsigned int drained_events;
/* The last QP error event and its QP, and how many there were. */
static int qp_event = ENG_EVENT_NONE;
static struct eng_qp *qp_event_qp;
static unsigned int qp_events;

/* With last_wqe_cq set: the completion that CQ held when Last WQE Reached
 * came, taken from it. */
static struct eng_cq *last_wqe_cq;
static struct eng_wc last_wqe_flushed;

static void on_async(void *ctx, struct eng_cq *cq, struct eng_qp *qp, int event)
{
	(void)ctx;
	(void)cq;
	if (event == ENG_EVENT_QP_LAST_WQE_REACHED && last_wqe_cq) {
		memset(&last_wqe_flushed, 0, sizeof(last_wqe_flushed));
		eng_cq_poll(last_wqe_cq, &last_wqe_flushed, 1);
		last_wqe_cq = NULL;
	}
	if (event == ENG_EVENT_SQ_DRAINED) {
		drained_events++;
	} else if (qp) {
		qp_event = event;
		qp_event_qp = qp;
		qp_events++;
	}
}

/* SRQ limit events: how many, and the SRQ and QP of the last. */
static unsigned int srq_limit_events;
static struct eng_srq *srq_limit_srq;
static struct eng_qp *srq_limit_qp;

static void on_srq_limit(void *ctx, struct eng_srq *srq, struct eng_qp *qp)
{
	(void)ctx;
	srq_limit_events++;
	srq_limit_srq = srq;
	srq_limit_qp = qp;
}

static const struct eng_ops ops = { .gid = side_gid, .async_error = on_async,
				    .srq_limit = on_srq_limit };
static const struct eng_tx wire_tx = { now_ns, tx_alloc, tx_send, NULL };

#define FLIGHT_MAX 65536
static struct flight {
	struct frame f;
	struct side *to;
} flight[FLIGHT_MAX];
static unsigned int nflight;

static void launch(struct side *to, struct frame f)
{
	assert_true(nflight < FLIGHT_MAX);
	flight[nflight].f = f;
	flight[nflight++].to = to;
}

/* Frames leave their sender: the wire decides each one's fate. */
static void transmit(struct side *s)
{
	unsigned int k;

	for (k = 0; k < s->wire->n; k++) {
		struct frame f = s->wire->f[k];
		bool is_a = s->mac[5] == 1;

		pcap_write(f.data, f.len);
		if (f.len > 54 && f.data[42] >= ROCE_RC_READ_RESPONSE_FIRST &&
		    f.data[42] <= ROCE_RC_READ_RESPONSE_ONLY && !is_a &&
		    ++read_resp_seen == wire_faults.drop_nth_read_resp) {
			free(f.data);
			continue;
		}
		if (f.len > 54 && f.data[42] == ROCE_RC_ATOMIC_ACK && !is_a &&
		    ++atomic_ack_seen == wire_faults.drop_nth_atomic_ack) {
			free(f.data);
			continue;
		}
		if (f.len > 54 && is_a && wire_faults.dup_atomic_req &&
		    (f.data[42] == ROCE_RC_COMPARE_SWAP || f.data[42] == ROCE_RC_FETCH_ADD)) {
			struct frame d = f;

			d.data = malloc(f.len);
			assert_non_null(d.data);
			memcpy(d.data, f.data, f.len);
			d.at += 1000;	/* after the original */
			launch(s->peer, d);
		}
		if ((is_a && wire_faults.drop_all_a) || rnd() % 100 < wire_faults.loss) {
			free(f.data);
			continue;
		}
		/* IPv4 (ethertype 0800): ECN in the TOS byte, 14 + 1 */
		if (f.len > 54 && f.data[12] == 0x08 && f.data[13] == 0x00) {
			if (is_a && !(f.data[15] & 3))
				a_not_ect++;
			if (is_a && (f.data[15] & 3) && rnd() % 100 < wire_faults.ce) {
				f.data[15] |= 3;	/* a switch's queue was filling */
				ipv4_csum(f.data + 14);
				a_marked++;
			}
			if (!is_a && f.data[42] == ROCE_CNP) {
				b_cnps++;
				b_cnp_tos = f.data[15];
			}
		}
		if (is_a && wire_faults.a_pace_ns) {
			uint64_t start = a_line_free > f.at ? a_line_free : f.at;

			if (start - f.at >= wire_faults.a_queue * wire_faults.a_pace_ns) {
				a_queue_drops++;
				free(f.data);
				continue;
			}
			f.at = start + wire_faults.a_pace_ns;
			a_line_free = f.at;
		}
		if (!is_a && wire_faults.b_pace_ns) {
			f.at = (b_line_free > f.at ? b_line_free : f.at) + wire_faults.b_pace_ns;
			b_line_free = f.at;
		}
		if (rnd() % 1000 < wire_faults.corrupt_pm)
			f.data[14 + rnd() % (f.len - 14)] ^= 0x40;
		if (rnd() % 100 < wire_faults.reorder)
			f.at += 1000 + rnd() % 50000;	/* up to 50 us late */
		if (rnd() % 100 < wire_faults.dup) {
			struct frame d = f;

			d.data = malloc(f.len);
			assert_non_null(d.data);
			memcpy(d.data, f.data, f.len);
			d.at += rnd() % 20000;
			launch(s->peer, d);
		}
		launch(s->peer, f);
	}
	s->wire->n = 0;
}

/* Restarts that keep the engines' state (docs/restart.md): every `every`
 * rounds of pump_for one side, each in turn, is saved and restored into a
 * new engine, and frames reaching it in the next gap_ns are lost, as while
 * no vrdmad runs. The state read back saves to the same bytes. */
static struct {
	unsigned int every, rounds, done;
	uint64_t gap_ns;
	struct side *down;
	uint64_t down_until;
} restarts;

static void restart(struct side *s)
{
	struct sbuf first = { 0 }, again = { 0 };

	assert_int_equal(side_restore(s, &first, &again, NULL, NULL), 0);
	assert_int_equal(again.len, first.len);
	assert_memory_equal(again.p, first.p, first.len);
	sb_free(&first);
	sb_free(&again);
	restarts.down = s;
	restarts.down_until = clock_ns + restarts.gap_ns;
	restarts.done++;
}

/* Run both engines until nothing is in flight and no timer is armed, or
 * until max_ns of fake time has passed. Returns false on the time limit. */
static bool pump_for(struct side *a, struct side *b, uint64_t max_ns)
{
	uint64_t end = clock_ns + max_ns;

	for (;;) {
		uint64_t next = 0, t;
		unsigned int i, k, n = 0;

		/* up for four gaps at least between restarts, as a service
		 * restarted every few seconds is */
		if (restarts.every && ++restarts.rounds % restarts.every == 0 &&
		    clock_ns >= restarts.down_until + 4 * restarts.gap_ns)
			restart(restarts.done % 2 ? b : a);

		eng_poll(a->dev, &t);
		next = t;
		eng_poll(b->dev, &t);
		if (t && (!next || t < next))
			next = t;
		transmit(a);
		transmit(b);
		/* Deliver what is due in sending order; keep the rest in order. */
		for (i = 0, k = 0; i < nflight; i++) {
			if (flight[i].f.at <= clock_ns) {
				enum roce_drop why;

				if (flight[i].to == restarts.down && clock_ns < restarts.down_until)
					n++;	/* no one there to take it */
				else if (side_rx(flight[i].to, flight[i].f.data, flight[i].f.len,
						 &why))
					assert_true(wire_faults.corrupt_pm);	/* only corruption fails */
				free(flight[i].f.data);
				n++;
			} else {
				if (!next || flight[i].f.at < next)
					next = flight[i].f.at;
				flight[k++] = flight[i];
			}
		}
		nflight = k;
		if (n)
			continue;
		if (!next)
			return true;		/* quiet */
		if (next > end)
			return false;
		if (next > clock_ns)
			clock_ns = next;
	}
}

static void pump(struct side *a, struct side *b)
{
	assert_true(pump_for(a, b, 3600ull * 1000000000));
}

/* A clean wire for each test: no faults, nothing in flight, fixed seed. */
static void wire_reset(uint64_t seed)
{
	while (nflight)
		free(flight[--nflight].f.data);
	memset(&wire_faults, 0, sizeof(wire_faults));
	memset(&restarts, 0, sizeof(restarts));
	rng_state = seed;
	read_resp_seen = 0;
	atomic_ack_seen = 0;
	b_line_free = 0;
	a_line_free = 0;
	a_queue_drops = 0;
	a_not_ect = a_marked = b_cnps = 0;
	b_cnp_tos = 0;
}

static void side_init(struct side *s, uint8_t id, enum eng_qp_type type)
{
	struct eng_qp_init_attr init = {
		.qp_type = type,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};
	const char *what;

	assert_int_equal(side_open(s, id, &ops, &wire_tx, &init, 256, MEM_SIZE, &what), 0);
	s->wire = &wires[id - 1];
	s->wire->n = 0;
	s->wire->sent = 0;
}

static void side_free(struct side *s)
{
	wire_reset(1);
	while (s->wire->n)
		free(s->wire->f[--s->wire->n].data);
	assert_int_equal(side_close(s), 0);
}

/* RESET -> INIT -> RTR -> RTS, connected to peer. */
/* retry_cnt and rnr_retry are set on the way to RTS (IBA 10.3: not later). */
static uint8_t next_retry_cnt = 7, next_rnr_retry = 7;

static void connect_qp(struct side *s, enum eng_qp_type type, enum eng_mtu mtu, uint32_t sq_psn,
		       uint32_t rq_psn)
{
	const char *what;

	assert_int_equal(side_connect(s, type, mtu, sq_psn, rq_psn, next_retry_cnt, next_rnr_retry,
				      &what), 0);
}

static void pair_init(struct side *a, struct side *b, enum eng_qp_type type, enum eng_mtu mtu,
		      uint32_t psn)
{
	wire_reset(psn * 7 + 1);
	side_init(a, 1, type);
	side_init(b, 2, type);
	a->peer = b;
	b->peer = a;
	connect_qp(a, type, mtu, psn, psn ^ 0x5555);
	connect_qp(b, type, mtu, psn ^ 0x5555, psn);
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1, i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static struct eng_wc poll_one(struct side *s)
{
	struct eng_wc wc;

	assert_int_equal(eng_cq_poll(s->cq, &wc, 1), 1);
	return wc;
}

/* The next completion of s is wr_id's, with status. */
static void expect_wc(struct side *s, uint64_t wr_id, enum eng_wc_status status)
{
	struct eng_wc wc = poll_one(s);

	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, status);
}

static void assert_cq_empty(struct side *s)
{
	struct eng_wc wc;

	assert_int_equal(eng_cq_poll(s->cq, &wc, 1), 0);
}

/* One message of len bytes from a to b with opcode op; checks data and both
 * completions. The payload goes in two SGEs when it can. */
static void one_message(struct side *a, struct side *b, enum eng_wr_opcode op, uint32_t len,
			uint32_t seed)
{
	const uint64_t base = 0x10000000, src = 0x1000, dst = 0x100003; /* odd: crosses pages */
	uint32_t half = len / 3;
	struct eng_sge s[2] = {
		{ base + src, half, eng_mr_lkey(a->mr) },
		{ base + src + half, len - half, eng_mr_lkey(a->mr) },
	};
	struct eng_sge r = { base + dst, len, eng_mr_lkey(b->mr) };
	struct eng_send_wr wr = {
		.wr_id = seed, .opcode = op, .send_flags = ENG_SEND_SIGNALED,
		.imm_data = 0xdeadbeef ^ seed, .sg_list = s, .num_sge = 2,
		.rdma = { base + dst, eng_mr_rkey(b->mr) },
	};
	struct eng_recv_wr rwr = { .wr_id = 1000 + seed, .sg_list = &r, .num_sge = 1 };
	bool needs_recv = op == ENG_WR_SEND || op == ENG_WR_SEND_WITH_IMM ||
			  op == ENG_WR_RDMA_WRITE_WITH_IMM;
	struct eng_wc wc;

	fill(a->mem + src, len, seed);
	memset(b->mem + dst, 0xee, len + 16);
	if (needs_recv)
		assert_int_equal(eng_post_recv(b->qp, &rwr), 0);
	assert_int_equal(eng_post_send(a->qp, &wr), 0);
	pump(a, b);

	wc = poll_one(a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.wr_id, seed);
	assert_int_equal(wc.qp_num, eng_qp_num(a->qp));
	assert_int_equal(wc.opcode, op == ENG_WR_SEND || op == ENG_WR_SEND_WITH_IMM ?
			 ENG_WC_SEND : ENG_WC_RDMA_WRITE);
	assert_cq_empty(a);
	if (needs_recv) {
		wc = poll_one(b);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 1000 + seed);
		assert_int_equal(wc.byte_len, len);
		assert_int_equal(wc.qp_num, eng_qp_num(b->qp));
		assert_int_equal(wc.opcode, op == ENG_WR_RDMA_WRITE_WITH_IMM ?
				 ENG_WC_RECV_RDMA_WITH_IMM : ENG_WC_RECV);
		if (op == ENG_WR_SEND_WITH_IMM || op == ENG_WR_RDMA_WRITE_WITH_IMM) {
			assert_true(wc.wc_flags & ENG_WC_WITH_IMM);
			assert_int_equal(wc.imm_data, 0xdeadbeef ^ seed);
		} else {
			assert_false(wc.wc_flags & ENG_WC_WITH_IMM);
		}
	}
	assert_cq_empty(b);
	assert_memory_equal(b->mem + dst, a->mem + src, len);
	/* Not a byte more. */
	assert_int_equal(b->mem[dst + len], 0xee);
}

/* a READs len bytes of b's memory; checks data and the completion. */
static void one_read(struct side *a, struct side *b, uint32_t len, uint32_t seed)
{
	const uint64_t base = 0x10000000, src = 0x2001, dst = 0x100005;
	struct eng_sge s = { base + dst, len, eng_mr_lkey(a->mr) };
	struct eng_send_wr wr = {
		.wr_id = seed, .opcode = ENG_WR_RDMA_READ, .send_flags = ENG_SEND_SIGNALED,
		.sg_list = &s, .num_sge = 1, .rdma = { base + src, eng_mr_rkey(b->mr) },
	};
	struct eng_wc wc;

	fill(b->mem + src, len, seed);
	memset(a->mem + dst, 0xee, len + 16);
	assert_int_equal(eng_post_send(a->qp, &wr), 0);
	pump(a, b);
	wc = poll_one(a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.opcode, ENG_WC_RDMA_READ);
	assert_int_equal(wc.wr_id, seed);
	assert_int_equal(wc.byte_len, len);
	assert_cq_empty(a);
	assert_cq_empty(b);
	assert_memory_equal(a->mem + dst, b->mem + src, len);
	assert_int_equal(a->mem[dst + len], 0xee);
}

static void sizes_for(enum eng_qp_type type, enum eng_wr_opcode op)
{
	static const enum eng_mtu mtus[] = { ENG_MTU_256, ENG_MTU_1024, ENG_MTU_4096 };
	unsigned int i, j;

	for (i = 0; i < 3; i++) {
		uint32_t m = eng_mtu_bytes(mtus[i]);
		uint32_t sizes[] = { 0, 1, m - 1, m, m + 1, 64 << 10, 1 << 20 };
		struct side a, b;

		/* Start near the top of the PSN space: messages cross the wrap. */
		pair_init(&a, &b, type, mtus[i], 0xffffff - 700);
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			if (op == ENG_WR_RDMA_READ)
				one_read(&a, &b, sizes[j], i * 100 + j);
			else
				one_message(&a, &b, op, sizes[j], i * 100 + j);
		}
		side_free(&a);
		side_free(&b);
	}
}

static void test_rc_send(void **state) { (void)state; sizes_for(ENG_QPT_RC, ENG_WR_SEND); }
static void test_rc_send_imm(void **state) { (void)state; sizes_for(ENG_QPT_RC, ENG_WR_SEND_WITH_IMM); }
static void test_rc_write(void **state) { (void)state; sizes_for(ENG_QPT_RC, ENG_WR_RDMA_WRITE); }
static void test_rc_write_imm(void **state)
{
	(void)state;
	sizes_for(ENG_QPT_RC, ENG_WR_RDMA_WRITE_WITH_IMM);
}
static void test_rc_read(void **state) { (void)state; sizes_for(ENG_QPT_RC, ENG_WR_RDMA_READ); }
static void test_uc_send(void **state) { (void)state; sizes_for(ENG_QPT_UC, ENG_WR_SEND); }
static void test_uc_send_imm(void **state) { (void)state; sizes_for(ENG_QPT_UC, ENG_WR_SEND_WITH_IMM); }
static void test_uc_write(void **state) { (void)state; sizes_for(ENG_QPT_UC, ENG_WR_RDMA_WRITE); }
static void test_uc_write_imm(void **state)
{
	(void)state;
	sizes_for(ENG_QPT_UC, ENG_WR_RDMA_WRITE_WITH_IMM);
}

/* Inline data is copied at post time; unsignaled WRs complete silently
 * unless they fail; the device's counters are the QPs' total. */
static void test_inline_unsignaled(void **state)
{
	struct side a, b;
	uint8_t msg[60];
	struct eng_sge in = { (uintptr_t)msg, sizeof(msg), 0 };
	struct eng_sge r = { 0x10000000 + 0x4000, 100, 0 };
	struct eng_send_wr wr = { .wr_id = 1, .opcode = ENG_WR_SEND,
				  .send_flags = ENG_SEND_INLINE, .sg_list = &in, .num_sge = 1 };
	struct eng_recv_wr rwr = { .wr_id = 2, .sg_list = &r, .num_sge = 1 };
	struct eng_wc wc;
	uint8_t first[60];

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 50);
	r.lkey = eng_mr_lkey(b.mr);

	fill(msg, sizeof(msg), 4);
	memcpy(first, msg, sizeof(msg));
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);	/* unsignaled */
	memset(msg, 0x5a, sizeof(msg));	/* copied at post: no effect on the first */
	wr.wr_id = 3;
	wr.send_flags |= ENG_SEND_SIGNALED;
	r.addr += 0x1000;
	rwr.wr_id = 4;
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 3);		/* only the signaled one */
	assert_cq_empty(&a);
	wc = poll_one(&b);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, sizeof(msg));
	assert_memory_equal(b.mem + 0x4000, first, sizeof(msg));
	wc = poll_one(&b);
	assert_int_equal(wc.wr_id, 4);
	assert_memory_equal(b.mem + 0x5000, msg, sizeof(msg));
	assert_int_equal(eng_dev_counters(a.dev)->c[ENG_CNT_TX_PKTS],
			 eng_qp_counters(a.qp)->c[ENG_CNT_TX_PKTS]);
	assert_true(eng_dev_counters(b.dev)->c[ENG_CNT_TX_ACKS] >= 1);
	side_free(&a);
	side_free(&b);
}

/* IBA 10.8.3.3: a fenced WR waits for the READs before it; an unfenced one
 * does not. Seen on the wire after one poll of the requester. */
static void test_fence(void **state)
{
	const uint64_t base = 0x10000000;
	struct side a, b;
	struct eng_sge rs = { base + 0x10000, 3000, 0 }, ss = { base, 100, 0 };
	struct eng_sge r = { base + 0x20000, 100, 0 };
	struct eng_send_wr rd = { .wr_id = 1, .opcode = ENG_WR_RDMA_READ,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &rs, .num_sge = 1 };
	struct eng_send_wr snd = { .wr_id = 2, .opcode = ENG_WR_SEND,
				   .send_flags = ENG_SEND_SIGNALED, .sg_list = &ss, .num_sge = 1 };
	struct eng_recv_wr rwr = { .wr_id = 3, .sg_list = &r, .num_sge = 1 };
	unsigned int pass;

	(void)state;
	for (pass = 0; pass < 2; pass++) {
		struct eng_wc wc;

		pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 77);
		rs.lkey = ss.lkey = eng_mr_lkey(a.mr);
		r.lkey = eng_mr_lkey(b.mr);
		rd.rdma.remote_addr = base;
		rd.rdma.rkey = eng_mr_rkey(b.mr);
		snd.send_flags = ENG_SEND_SIGNALED | (pass ? ENG_SEND_FENCE : 0);
		assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
		assert_int_equal(eng_post_send(a.qp, &rd), 0);
		assert_int_equal(eng_post_send(a.qp, &snd), 0);
		eng_poll(a.dev, &(uint64_t){ 0 });
		/* READ request, and the SEND only when unfenced */
		assert_int_equal(a.wire->n, pass ? 1 : 2);
		pump(&a, &b);
		wc = poll_one(&a);
		assert_int_equal(wc.wr_id, 1);
		wc = poll_one(&a);
		assert_int_equal(wc.wr_id, 2);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		side_free(&a);
		side_free(&b);
	}
}

/* SQD (IBA 10.3.1): the message being sent is finished and acknowledged,
 * the next is not started; the drained event comes once; RTS goes on. */
static void test_sqd(void **state)
{
	const uint64_t base = 0x10000000;
	struct side a, b;
	struct eng_sge s = { base, 2u << 20, 0 };	/* more than the send window */
	struct eng_send_wr wr = { .opcode = ENG_WR_RDMA_WRITE, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct eng_qp_attr sqd = { .qp_state = ENG_QPS_SQD, .en_sqd_async_notify = 1 };
	struct eng_qp_attr rts = { .qp_state = ENG_QPS_RTS };
	struct eng_qp_attr q;
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 3);
	drained_events = 0;
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = base + 0x100000;
	wr.rdma.rkey = eng_mr_rkey(b.mr);
	fill(a.mem, 2u << 20, 8);
	wr.wr_id = 1;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	wr.wr_id = 2;
	s.length = 4096;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	eng_poll(a.dev, &(uint64_t){ 0 });		/* the first WRITE is under way: a window's worth */
	assert_true(a.wire->n > 0 && a.wire->n < 2048);
	assert_int_equal(eng_qp_modify(a.qp, &sqd, ENG_QP_STATE | ENG_QP_EN_SQD_ASYNC_NOTIFY), 0);
	eng_qp_query(a.qp, &q, NULL);
	assert_int_equal(q.sq_draining, 1);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_cq_empty(&a);		/* the second never started */
	assert_int_equal(drained_events, 1);
	eng_qp_query(a.qp, &q, NULL);
	assert_int_equal(q.sq_draining, 0);
	assert_memory_equal(b.mem + 0x100000, a.mem, 2u << 20);
	assert_int_equal(eng_qp_modify(a.qp, &rts, ENG_QP_STATE), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(drained_events, 1);
	side_free(&a);
	side_free(&b);
}

/* A bad rkey: the requester gets REM_ACCESS_ERR, the responder's memory is
 * untouched, and both QPs end in ERR (RC: IBA 9.7.5.2.4). */
static void test_rc_bad_rkey(void **state)
{
	struct side a, b;
	struct eng_sge s = { 0x10000000, 100, 0 };
	struct eng_send_wr wr = { .wr_id = 7, .opcode = ENG_WR_RDMA_WRITE,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct eng_wc wc;
	uint32_t i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 100);
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = 0x10000000;
	wr.rdma.rkey = eng_mr_rkey(b.mr) ^ 0x01;	/* the random bits are wrong */
	fill(a.mem, 100, 3);
	qp_events = 0;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	/* the requester learns from its completion; the responder from an
	 * access error event on its own QP (IBA 11.6.3.1) */
	assert_int_equal(qp_events, 1);
	assert_int_equal(qp_event, ENG_EVENT_QP_ACCESS_ERR);
	assert_ptr_equal(qp_event_qp, b.qp);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, ENG_WC_REM_ACCESS_ERR);
	for (i = 0; i < 100; i++)
		assert_int_equal(b.mem[i], 0);
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_ERR);
	assert_int_equal(eng_qp_state(b.qp), ENG_QPS_ERR);
	assert_true(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_ACCESS] == 1);
	side_free(&a);
	side_free(&b);
}

/* Deliver the first n frames in flight, whatever their time. */
static void deliver_first(unsigned int n)
{
	unsigned int i;

	assert_true(n <= nflight);
	for (i = 0; i < n; i++) {
		enum roce_drop why;

		assert_int_equal(side_rx(flight[i].to, flight[i].f.data, flight[i].f.len, &why), 0);
		free(flight[i].f.data);
	}
	memmove(flight, flight + n, (nflight - n) * sizeof(flight[0]));
	nflight -= n;
}

/* The responder's MR is deregistered while a request into it is under way:
 * the rest of that request ends in a remote access error at the requester,
 * and the responder touches neither the freed MR nor the memory after. */
static void dereg_under(enum eng_wr_opcode op)
{
	const uint32_t len = 64 * 1024, dst = 1u << 20;
	struct side a, b;
	struct eng_sge s = { 0x10000000, len, 0 };
	struct eng_send_wr wr = { .wr_id = 9, .opcode = op, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct flat_mem view;
	struct eng_mr *target;
	struct eng_wc wc;

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 300);
	view = (struct flat_mem){ b.mem + dst, len };
	assert_int_equal(eng_mr_reg(b.pd, 0x20000000, len, ENG_ACCESS_ALL, flat_mem_map, &view,
				    &target), 0);
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = 0x20000000;
	wr.rdma.rkey = eng_mr_rkey(target);
	fill(op == ENG_WR_RDMA_READ ? b.mem + dst : a.mem, len, 4);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	eng_poll(a.dev, &(uint64_t){ 0 });
	transmit(&a);
	/* WRITE: the first packet lands; READ: the request is taken, no
	 * response sent yet. Then the guest deregisters. */
	deliver_first(1);
	assert_int_equal(eng_mr_dereg(target), 0);
	if (op == ENG_WR_RDMA_WRITE)
		memset(b.mem + dst + 1024, 0xee, len - 1024);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, ENG_WC_REM_ACCESS_ERR);
	assert_int_equal(eng_qp_state(b.qp), ENG_QPS_ERR);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_ACCESS], 1);
	if (op == ENG_WR_RDMA_WRITE) {
		uint32_t i;

		for (i = 1024; i < len; i++)
			assert_int_equal(b.mem[dst + i], 0xee);
	}
	side_free(&a);
	side_free(&b);
}

static void test_dereg_under_write(void **state) { (void)state; dereg_under(ENG_WR_RDMA_WRITE); }
static void test_dereg_under_read(void **state) { (void)state; dereg_under(ENG_WR_RDMA_READ); }

/* ---- fast registration and invalidation (IBA 10.6.3.6, 10.7) ---- */

static struct eng_mr *fast_live;	/* deregistered by frwr_free */

static void frwr_free(struct side *a, struct side *b)
{
	if (fast_live)
		assert_int_equal(eng_mr_dereg(fast_live), 0);
	fast_live = NULL;
	side_free(a);
	side_free(b);
}

/* A key's next value for REG_MR or a bind: the same index, the next key
 * byte (ibv_inc_rkey's rule; a plain + 1 carries into the index when the
 * random key byte is 0xff). */
static uint32_t next_key(uint32_t key)
{
	return (key & ~0xffu) | ((key + 1) & 0xff);
}

/* A fast-reg MR of b over b.mem + dst (MAP_MR_SG's part: the range). */
static struct eng_mr *fast_mr(struct side *b, struct flat_mem *view, uint32_t dst, uint32_t len)
{
	struct eng_mr *mr;

	*view = (struct flat_mem){ b->mem + dst, len };
	assert_int_equal(eng_mr_alloc_fast(b->pd, flat_mem_map, view, &mr), 0);
	assert_int_equal(eng_mr_rerange(mr, 0x30000000, len), 0);
	fast_live = mr;
	return mr;
}

/* A local operation on s's QP and its completion's status and opcode. */
static void local_wr(struct side *s, struct side *peer, struct eng_send_wr wr,
		     enum eng_wc_status want, enum eng_wc_opcode op)
{
	struct eng_wc wc;

	wr.send_flags |= ENG_SEND_SIGNALED;
	assert_int_equal(eng_post_send(s->qp, &wr), 0);
	pump(s, peer);
	wc = poll_one(s);
	assert_int_equal(wc.wr_id, wr.wr_id);
	assert_int_equal(wc.status, want);
	assert_int_equal(wc.opcode, op);
}

static enum eng_wc_status write_to(struct side *a, struct side *b, uint32_t rkey, uint64_t wr_id)
{
	struct eng_sge s = { 0x10000000, 512, eng_mr_lkey(a->mr) };
	struct eng_send_wr wr = { .wr_id = wr_id, .opcode = ENG_WR_RDMA_WRITE,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
				  .rdma = { 0x30000000 + 100, rkey } };
	struct eng_wc wc;

	assert_int_equal(eng_post_send(a->qp, &wr), 0);
	pump(a, b);
	wc = poll_one(a);
	assert_int_equal(wc.wr_id, wr_id);
	return wc.status;
}

/* A fast-reg MR is FREE until REG_MR; REG_MR sets the key's low 8 bits and
 * the access; the old key fails; LOCAL_INV makes it FREE again. */
static void test_fast_reg(void **state)
{
	const uint32_t dst = 1u << 20;
	struct side a, b;
	struct flat_mem view;
	struct eng_mr *fmr;
	uint32_t key0, key;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 400);
	fmr = fast_mr(&b, &view, dst, 8192);
	key0 = eng_mr_rkey(fmr);
	key = (key0 & ~0xffu) | ((key0 + 1) & 0xff);
	fill(a.mem, 512, 5);

	/* FREE: a WRITE through it is a remote access error */
	assert_int_equal(write_to(&a, &b, key0, 1), ENG_WC_REM_ACCESS_ERR);
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 401);
	fmr = fast_mr(&b, &view, dst, 8192);
	key0 = eng_mr_rkey(fmr);
	key = (key0 & ~0xffu) | ((key0 + 1) & 0xff);
	fill(a.mem, 512, 5);
	/* upper 24 bits not the MR's: refused, LOC_QP_OP_ERR as rxe */
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 2, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key ^ 0x100, ENG_ACCESS_ALL } },
		 ENG_WC_LOC_QP_OP_ERR, ENG_WC_REG_MR);
	assert_int_equal(eng_qp_state(b.qp), ENG_QPS_ERR);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ERR_REG_MR], 1);
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 402);
	fmr = fast_mr(&b, &view, dst, 8192);
	key0 = eng_mr_rkey(fmr);
	key = (key0 & ~0xffu) | ((key0 + 1) & 0xff);
	fill(a.mem, 512, 5);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 3, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_LOCAL_WRITE |
			  ENG_ACCESS_REMOTE_WRITE } }, ENG_WC_SUCCESS, ENG_WC_REG_MR);
	assert_int_equal(eng_mr_rkey(fmr), key);
	assert_int_equal(eng_mr_lkey(fmr), key);
	/* the new key writes; the bytes land at the MR's offset */
	assert_int_equal(write_to(&a, &b, key, 4), ENG_WC_SUCCESS);
	assert_memory_equal(b.mem + dst + 100, a.mem, 512);
	/* LOCAL_INV of the old key: no such key, refused */
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 5, .opcode = ENG_WR_LOCAL_INV,
		 .invalidate_rkey = key0 }, ENG_WC_LOC_QP_OP_ERR, ENG_WC_LOCAL_INV);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ERR_LOCAL_INV], 1);
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 403);
	fmr = fast_mr(&b, &view, dst, 8192);
	key0 = eng_mr_rkey(fmr);
	key = (key0 & ~0xffu) | ((key0 + 7) & 0xff);
	fill(a.mem, 512, 6);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 6, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_SUCCESS,
		 ENG_WC_REG_MR);
	/* REG_MR of a VALID MR: refused */
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 7, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_LOC_QP_OP_ERR,
		 ENG_WC_REG_MR);
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 404);
	fmr = fast_mr(&b, &view, dst, 8192);
	key0 = eng_mr_rkey(fmr);
	key = (key0 & ~0xffu) | ((key0 + 9) & 0xff);
	fill(a.mem, 512, 6);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 8, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_SUCCESS,
		 ENG_WC_REG_MR);
	assert_int_equal(write_to(&a, &b, key0, 9), ENG_WC_REM_ACCESS_ERR);	/* old key */
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 405);
	fmr = fast_mr(&b, &view, dst, 8192);
	key = eng_mr_rkey(fmr);		/* the same low bits again is allowed */
	fill(a.mem, 512, 6);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 10, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_SUCCESS,
		 ENG_WC_REG_MR);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 11, .opcode = ENG_WR_LOCAL_INV,
		 .invalidate_rkey = key }, ENG_WC_SUCCESS, ENG_WC_LOCAL_INV);
	assert_int_equal(write_to(&a, &b, key, 12), ENG_WC_REM_ACCESS_ERR);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_ACCESS], 1);
	frwr_free(&a, &b);
}

/* Invalidation refused: a registered (not fast-reg) MR, a fast-reg MR of
 * another PD, and a FREE one (LOCAL_INV twice). */
static void test_local_inv_refused(void **state)
{
	struct side a, b;
	struct flat_mem view;
	struct eng_mr *fmr, *other;
	struct eng_pd *pd2;
	uint32_t key;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 500);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 1, .opcode = ENG_WR_LOCAL_INV,
		 .invalidate_rkey = eng_mr_rkey(b.mr) }, ENG_WC_LOC_QP_OP_ERR, ENG_WC_LOCAL_INV);
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 501);
	assert_int_equal(eng_pd_alloc(b.dev, &pd2), 0);
	view = (struct flat_mem){ b.mem, 4096 };
	assert_int_equal(eng_mr_alloc_fast(pd2, flat_mem_map, &view, &other), 0);
	/* REG_MR of another PD's MR, then LOCAL_INV of it, both refused */
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 2, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(other), eng_mr_rkey(other), ENG_ACCESS_ALL } },
		 ENG_WC_LOC_QP_OP_ERR, ENG_WC_REG_MR);
	assert_int_equal(eng_mr_dereg(other), 0);
	assert_int_equal(eng_pd_free(pd2), 0);
	frwr_free(&a, &b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 502);
	fmr = fast_mr(&b, &view, 0, 4096);
	key = eng_mr_rkey(fmr);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 3, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_SUCCESS,
		 ENG_WC_REG_MR);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 4, .opcode = ENG_WR_LOCAL_INV,
		 .invalidate_rkey = key }, ENG_WC_SUCCESS, ENG_WC_LOCAL_INV);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 5, .opcode = ENG_WR_LOCAL_INV,
		 .invalidate_rkey = key }, ENG_WC_LOC_QP_OP_ERR, ENG_WC_LOCAL_INV);
	/* a local SGE through the FREE MR: local protection error */
	frwr_free(&a, &b);
}

/* SEND with Invalidate (IBA 10.7.2.2): the responder invalidates the rkey
 * and says so in the receive completion; a key it may not invalidate
 * fails the receive and NAKs invalid request. */
static void send_inv(uint32_t psn, bool good, bool other_pd)
{
	const uint32_t dst = 1u << 20;
	struct side a, b;
	struct flat_mem view;
	struct eng_mr *fmr;
	struct eng_pd *pd2 = NULL;
	struct eng_sge s = { 0x10000000, 2000, 0 }, r = { 0x10000000 + 0x8000, 4096, 0 };
	struct eng_recv_wr rwr = { .wr_id = 50, .sg_list = &r, .num_sge = 1 };
	struct eng_send_wr wr = { .wr_id = 51, .opcode = ENG_WR_SEND_WITH_INV,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct eng_wc wc;
	uint32_t key;

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, psn);
	if (other_pd) {
		assert_int_equal(eng_pd_alloc(b.dev, &pd2), 0);
		view = (struct flat_mem){ b.mem + dst, 8192 };
		assert_int_equal(eng_mr_alloc_fast(pd2, flat_mem_map, &view, &fmr), 0);
	} else {
		fmr = fast_mr(&b, &view, dst, 8192);
		key = eng_mr_rkey(fmr);
		local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 49, .opcode = ENG_WR_REG_MR,
			 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_SUCCESS,
			 ENG_WC_REG_MR);
	}
	key = eng_mr_rkey(fmr);
	s.lkey = eng_mr_lkey(a.mr);
	r.lkey = eng_mr_lkey(b.mr);
	fill(a.mem, 2000, 8);
	wr.invalidate_rkey = good ? key : key ^ 1;
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&b);
	assert_int_equal(wc.wr_id, 50);
	wc.wc_flags &= ENG_WC_WITH_INV;
	if (good && !other_pd) {
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 2000);
		assert_int_equal(wc.wc_flags, ENG_WC_WITH_INV);
		assert_int_equal(wc.invalidate_rkey, key);
		assert_memory_equal(b.mem + 0x8000, a.mem, 2000);
		wc = poll_one(&a);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.opcode, ENG_WC_SEND);
		/* the key is FREE now: a WRITE through it fails */
		assert_int_equal(write_to(&a, &b, key, 52), ENG_WC_REM_ACCESS_ERR);
	} else {
		assert_int_equal(wc.status, ENG_WC_REM_INV_REQ_ERR);
		wc = poll_one(&a);
		assert_int_equal(wc.status, ENG_WC_REM_INV_REQ_ERR);
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ERR_REMOTE_INV], 1);
		assert_int_equal(eng_qp_state(b.qp), ENG_QPS_ERR);
	}
	if (pd2) {
		assert_int_equal(eng_mr_dereg(fmr), 0);
		assert_int_equal(eng_pd_free(pd2), 0);
	}
	frwr_free(&a, &b);
}

static void test_send_inv(void **state) { (void)state; send_inv(600, true, false); }
static void test_send_inv_bad_key(void **state) { (void)state; send_inv(601, false, false); }
static void test_send_inv_other_pd(void **state) { (void)state; send_inv(602, true, true); }

/* A multi-packet WRITE whose key is invalidated under it (SEND_WITH_INV
 * from another QP would do the same): the rest ends in a remote access
 * error, as a deregistration does. */
static void test_inv_under_write(void **state)
{
	const uint32_t len = 64 * 1024, dst = 1u << 20;
	struct side a, b;
	struct flat_mem view;
	struct eng_mr *fmr;
	struct eng_sge s = { 0x10000000, len, 0 };
	struct eng_send_wr wr = { .wr_id = 9, .opcode = ENG_WR_RDMA_WRITE,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct eng_wc wc;
	uint32_t key;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 700);
	fmr = fast_mr(&b, &view, dst, len);
	key = eng_mr_rkey(fmr);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 1, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_ALL } }, ENG_WC_SUCCESS,
		 ENG_WC_REG_MR);
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = 0x30000000;
	wr.rdma.rkey = key;
	fill(a.mem, len, 4);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	eng_poll(a.dev, &(uint64_t){ 0 });
	transmit(&a);
	deliver_first(1);
	/* b invalidates the key while the WRITE is under way */
	assert_int_equal(eng_post_send(b.qp, &(struct eng_send_wr){ .wr_id = 2,
			 .opcode = ENG_WR_LOCAL_INV, .invalidate_rkey = key }), 0);
	eng_poll(b.dev, &(uint64_t){ 0 });
	memset(b.mem + dst + 1024, 0xee, len - 1024);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, ENG_WC_REM_ACCESS_ERR);
	assert_int_equal(b.mem[dst + len - 1], 0xee);
	frwr_free(&a, &b);
}

/* ---- memory windows, type 2B (IBA 10.6.7) ---- */

static uint64_t get_u64(const uint8_t *p);

#define MW_MR_IOVA	0x30000000ull
#define MW_MR_LEN	8192u
#define MW_OFF		1024u		/* the window: [MR + 1024, MR + 5120) */
#define MW_LEN		4096u
#define MW_DST		(1u << 20)	/* b.mem under the MR */

enum mw_fault {
	MF_NONE, MF_TWICE, MF_MW_OTHER_PD, MF_MR_OTHER_PD, MF_NO_MW_BIND, MF_BEFORE_MR,
	MF_PAST_MR, MF_ZERO_LEN, MF_KEY_UPPER, MF_STALE_MW_KEY, MF_WRITE_NO_LOCAL_WRITE,
	MF_LOCAL_WRITE_RIGHT, MF_ZERO_BASED, MF_FREE_FAST_MR, MF_MR_KEY_IS_MW,
};

/* What happens between the bind and the access. */
enum mw_then {
	MT_NONE, MT_NOT_BOUND, MT_OTHER_QP, MT_LOCAL_INV, MT_SEND_INV, MT_DEALLOC,
	MT_SEND_INV_OTHER_QP,
};

struct mw_case {
	const char *name;
	enum mw_fault fault;
	unsigned int rights;		/* the window's */
	enum mw_then then;
	enum eng_wr_opcode op;		/* the access from a */
	int64_t off;			/* from the window's start */
	uint32_t len;
	enum eng_wc_status want;	/* of the access (the bind's for a fault) */
};

#define RW (ENG_ACCESS_REMOTE_WRITE | ENG_ACCESS_REMOTE_READ)
static const struct mw_case mw_cases[] = {
	{ "write inside", MF_NONE, RW, MT_NONE, ENG_WR_RDMA_WRITE, 100, 2000, ENG_WC_SUCCESS },
	{ "write all", MF_NONE, RW, MT_NONE, ENG_WR_RDMA_WRITE, 0, MW_LEN, ENG_WC_SUCCESS },
	{ "read inside", MF_NONE, RW, MT_NONE, ENG_WR_RDMA_READ, 300, 3000, ENG_WC_SUCCESS },
	{ "atomic", MF_NONE, ENG_ACCESS_REMOTE_ATOMIC, MT_NONE, ENG_WR_ATOMIC_FETCH_AND_ADD, 8, 8,
	  ENG_WC_SUCCESS },
	{ "write before", MF_NONE, RW, MT_NONE, ENG_WR_RDMA_WRITE, -1, 16, ENG_WC_REM_ACCESS_ERR },
	{ "write past end", MF_NONE, RW, MT_NONE, ENG_WR_RDMA_WRITE, MW_LEN - 8, 16,
	  ENG_WC_REM_ACCESS_ERR },
	{ "read past end", MF_NONE, RW, MT_NONE, ENG_WR_RDMA_READ, 1, MW_LEN,
	  ENG_WC_REM_ACCESS_ERR },
	{ "write, read rights", MF_NONE, ENG_ACCESS_REMOTE_READ, MT_NONE, ENG_WR_RDMA_WRITE, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "read, write rights", MF_NONE, ENG_ACCESS_REMOTE_WRITE, MT_NONE, ENG_WR_RDMA_READ, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "atomic, rw rights", MF_NONE, RW, MT_NONE, ENG_WR_ATOMIC_FETCH_AND_ADD, 8, 8,
	  ENG_WC_REM_ACCESS_ERR },
	{ "FREE window", MF_NONE, RW, MT_NOT_BOUND, ENG_WR_RDMA_WRITE, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "bound to another QP", MF_NONE, RW, MT_OTHER_QP, ENG_WR_RDMA_WRITE, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "after LOCAL_INV", MF_NONE, RW, MT_LOCAL_INV, ENG_WR_RDMA_WRITE, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "after SEND_WITH_INV", MF_NONE, RW, MT_SEND_INV, ENG_WR_RDMA_WRITE, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "after dealloc", MF_NONE, RW, MT_DEALLOC, ENG_WR_RDMA_READ, 0, 64,
	  ENG_WC_REM_ACCESS_ERR },
	{ "SEND_WITH_INV on another QP", MF_NONE, RW, MT_SEND_INV_OTHER_QP, ENG_WR_RDMA_WRITE, 0,
	  64, ENG_WC_REM_INV_REQ_ERR },
	{ "bind twice", MF_TWICE, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "window of another PD", MF_MW_OTHER_PD, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "MR of another PD", MF_MR_OTHER_PD, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "MR without MW_BIND", MF_NO_MW_BIND, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "range before the MR", MF_BEFORE_MR, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "range past the MR", MF_PAST_MR, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "zero length", MF_ZERO_LEN, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "new key's upper bits", MF_KEY_UPPER, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "stale window key", MF_STALE_MW_KEY, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "write over read-only MR", MF_WRITE_NO_LOCAL_WRITE, RW, MT_NONE, 0, 0, 0,
	  ENG_WC_MW_BIND_ERR },
	{ "atomic over read-only MR", MF_WRITE_NO_LOCAL_WRITE, ENG_ACCESS_REMOTE_ATOMIC, MT_NONE,
	  0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "LOCAL_WRITE right", MF_LOCAL_WRITE_RIGHT, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "zero-based", MF_ZERO_BASED, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "FREE fast-reg MR", MF_FREE_FAST_MR, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
	{ "window's key as the MR", MF_MR_KEY_IS_MW, RW, MT_NONE, 0, 0, 0, ENG_WC_MW_BIND_ERR },
};

/* A second RC QP on s, in RTS (it sends nothing: only local work). */
static struct eng_qp *mw_qp2(struct side *s, enum eng_mtu mtu)
{
	struct eng_qp_init_attr init = {
		.qp_type = ENG_QPT_RC, .send_cq = s->cq, .recv_cq = s->cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct eng_qp *q1 = s->qp, *q2;

	assert_int_equal(eng_qp_create(s->pd, &init, &q2), 0);
	s->qp = q2;
	connect_qp(s, ENG_QPT_RC, mtu, 1, 1);
	s->qp = q1;
	return q2;
}

/* b binds a window; then c->then; then a accesses it with c->op. */
static void mw_run(const struct mw_case *c, uint32_t psn)
{
	const uint32_t src = 0x4000, back = 0x20000;	/* in a.mem: what goes, what comes */
	unsigned int mr_access = ENG_ACCESS_LOCAL_WRITE | ENG_ACCESS_MW_BIND;
	struct side a, b;
	struct flat_mem view = { 0 };
	struct eng_pd *pd2 = NULL;
	struct eng_qp *qp2 = NULL, *binder;
	struct eng_mr *mr;
	struct eng_mw *mw;
	struct eng_send_wr bind = { .wr_id = 70, .opcode = ENG_WR_BIND_MW };
	struct eng_sge s;
	struct eng_send_wr wr = { .wr_id = 71, .opcode = c->op, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	uint8_t before[MW_MR_LEN];
	uint64_t va;
	uint32_t key;

	print_message("mw case: %s\n", c->name);
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, psn);
	if (c->fault == MF_MW_OTHER_PD || c->fault == MF_MR_OTHER_PD)
		assert_int_equal(eng_pd_alloc(b.dev, &pd2), 0);
	if (c->fault == MF_NO_MW_BIND)
		mr_access = ENG_ACCESS_LOCAL_WRITE;
	if (c->fault == MF_WRITE_NO_LOCAL_WRITE)
		mr_access = ENG_ACCESS_REMOTE_READ | ENG_ACCESS_MW_BIND;
	view = (struct flat_mem){ b.mem + MW_DST, MW_MR_LEN };
	if (c->fault == MF_FREE_FAST_MR) {
		assert_int_equal(eng_mr_alloc_fast(b.pd, flat_mem_map, &view, &mr), 0);
		assert_int_equal(eng_mr_rerange(mr, MW_MR_IOVA, MW_MR_LEN), 0);
	} else {
		assert_int_equal(eng_mr_reg(c->fault == MF_MR_OTHER_PD ? pd2 : b.pd, MW_MR_IOVA,
					    MW_MR_LEN, mr_access, flat_mem_map, &view, &mr), 0);
	}
	assert_int_equal(eng_mw_alloc(c->fault == MF_MW_OTHER_PD ? pd2 : b.pd, &mw), 0);
	key = (eng_mw_rkey(mw) & ~0xffu) | ((eng_mw_rkey(mw) + 3) & 0xff);
	bind.bind.mw_rkey = eng_mw_rkey(mw);
	bind.bind.rkey = key;
	bind.bind.mr_lkey = eng_mr_lkey(mr);
	bind.bind.addr = MW_MR_IOVA + MW_OFF;
	bind.bind.length = MW_LEN;
	bind.bind.access = c->rights;
	switch (c->fault) {
	case MF_BEFORE_MR: bind.bind.addr = MW_MR_IOVA - 1; break;
	case MF_PAST_MR: bind.bind.length = MW_MR_LEN - MW_OFF + 1; break;
	case MF_ZERO_LEN: bind.bind.length = 0; break;
	case MF_KEY_UPPER: bind.bind.rkey ^= 0x100; break;
	case MF_STALE_MW_KEY: bind.bind.mw_rkey ^= 0x1; break;
	case MF_LOCAL_WRITE_RIGHT: bind.bind.access |= ENG_ACCESS_LOCAL_WRITE; break;
	case MF_ZERO_BASED: bind.bind.access |= 0x20; break;	/* IB_ZERO_BASED */
	case MF_MR_KEY_IS_MW: bind.bind.mr_lkey = eng_mw_rkey(mw); break;
	default: break;
	}
	binder = b.qp;
	if (c->then == MT_OTHER_QP || c->then == MT_SEND_INV_OTHER_QP) {
		qp2 = mw_qp2(&b, ENG_MTU_1024);
		b.qp = qp2;
	}
	if (c->fault == MF_TWICE) {	/* the second names the key the first gave it */
		local_wr(&b, &a, bind, ENG_WC_SUCCESS, ENG_WC_BIND_MW);
		bind.bind.mw_rkey = key;
	}
	if (c->then != MT_NOT_BOUND)
		local_wr(&b, &a, bind, c->fault ? c->want : ENG_WC_SUCCESS, ENG_WC_BIND_MW);
	b.qp = binder;
	if (c->fault) {
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ERR_BIND_MW], 1);
		assert_int_equal(eng_qp_state(b.qp), ENG_QPS_ERR);
		goto out;
	}
	if (c->then != MT_NOT_BOUND)
		assert_int_equal(eng_mw_rkey(mw), key);
	/* the MR is pinned by its window (IBA 10.6.7.2.6) */
	assert_int_equal(eng_mr_dereg(mr), c->then == MT_NOT_BOUND ? 0 : -EBUSY);
	if (c->then == MT_NOT_BOUND)
		assert_int_equal(eng_mr_reg(b.pd, MW_MR_IOVA, MW_MR_LEN, mr_access, flat_mem_map,
					    &view, &mr), 0);
	if (c->then == MT_LOCAL_INV)
		local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 72, .opcode = ENG_WR_LOCAL_INV,
			 .invalidate_rkey = key }, ENG_WC_SUCCESS, ENG_WC_LOCAL_INV);
	if (c->then == MT_DEALLOC) {
		assert_int_equal(eng_mw_dealloc(mw), 0);
		mw = NULL;
	}
	if (c->then == MT_SEND_INV || c->then == MT_SEND_INV_OTHER_QP) {
		struct eng_sge rs = { SIDE_IOVA + 0x8000, 64, eng_mr_lkey(b.mr) };
		struct eng_recv_wr rwr = { .wr_id = 73, .sg_list = &rs, .num_sge = 1 };
		struct eng_sge ss = { SIDE_IOVA, 16, eng_mr_lkey(a.mr) };
		struct eng_send_wr swr = { .wr_id = 74, .opcode = ENG_WR_SEND_WITH_INV,
					   .send_flags = ENG_SEND_SIGNALED, .sg_list = &ss,
					   .num_sge = 1, .invalidate_rkey = key };
		struct eng_wc wc;

		assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
		assert_int_equal(eng_post_send(a.qp, &swr), 0);
		pump(&a, &b);
		wc = poll_one(&b);
		assert_int_equal(wc.wr_id, 73);
		if (c->then == MT_SEND_INV_OTHER_QP) {	/* only its own QP invalidates it */
			assert_int_equal(wc.status, ENG_WC_REM_INV_REQ_ERR);
			assert_int_equal(poll_one(&a).status, c->want);
			assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ERR_REMOTE_INV], 1);
			goto out;
		}
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.wc_flags & ENG_WC_WITH_INV, ENG_WC_WITH_INV);
		assert_int_equal(wc.invalidate_rkey, key);
		assert_int_equal(poll_one(&a).status, ENG_WC_SUCCESS);
	}
	if (c->then == MT_LOCAL_INV || c->then == MT_SEND_INV)	/* FREE: the MR can go */
		assert_int_equal(eng_mr_dereg(mr), 0), mr = NULL;

	/* a's access through the window's key */
	va = MW_MR_IOVA + MW_OFF + c->off;
	fill(a.mem + src, c->len, psn);
	fill(b.mem + MW_DST, MW_MR_LEN, psn + 1);
	memcpy(before, b.mem + MW_DST, MW_MR_LEN);
	memset(a.mem + back, 0, c->len);
	s = (struct eng_sge){ SIDE_IOVA + (c->op == ENG_WR_RDMA_WRITE ? src : back), c->len,
			      eng_mr_lkey(a.mr) };
	if (c->op == ENG_WR_ATOMIC_FETCH_AND_ADD)
		wr.atomic = (typeof(wr.atomic)){ va, 5, 0, key };
	else
		wr.rdma = (typeof(wr.rdma)){ va, key };
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	assert_int_equal(poll_one(&a).status, c->want);
	if (c->want != ENG_WC_SUCCESS) {
		assert_memory_equal(b.mem + MW_DST, before, MW_MR_LEN);	/* nothing landed */
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_ACCESS], 1);
	} else if (c->op == ENG_WR_RDMA_WRITE) {
		assert_memory_equal(b.mem + MW_DST + MW_OFF + c->off, a.mem + src, c->len);
		assert_memory_equal(b.mem + MW_DST, before, MW_OFF + c->off);
	} else if (c->op == ENG_WR_RDMA_READ) {
		assert_memory_equal(a.mem + back, b.mem + MW_DST + MW_OFF + c->off, c->len);
	} else {
		assert_memory_equal(a.mem + back, before + MW_OFF + c->off, 8);
		assert_true(get_u64(b.mem + MW_DST + MW_OFF + c->off) ==
			    get_u64(before + MW_OFF + c->off) + 5);
	}
out:
	if (mw)
		assert_int_equal(eng_mw_dealloc(mw), 0);
	if (mr)
		assert_int_equal(eng_mr_dereg(mr), 0);
	if (qp2)
		assert_int_equal(eng_qp_destroy(qp2), 0);
	if (pd2)
		assert_int_equal(eng_pd_free(pd2), 0);
	side_free(&a);
	side_free(&b);
}

static void test_mw(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mw_cases) / sizeof(mw_cases[0]); i++)
		mw_run(&mw_cases[i], 800 + (uint32_t)i);
}

/* What pins and unpins: an MR with a bound window is neither deregistered
 * nor invalidated (IBA 10.6.7.2.6, as rxe); a PD with a window is busy; the
 * QP's destruction frees its windows; a window's key is no lkey. */
static void test_mw_lifetime(void **state)
{
	const uint32_t dst = MW_DST;
	struct side a, b;
	struct flat_mem view;
	struct eng_mr *fmr;
	struct eng_mw *mw;
	struct eng_qp *qp1, *qp2;
	struct eng_pd *pd2;
	struct eng_mw *mw2;
	struct eng_mr *out;
	struct eng_send_wr bind = { .wr_id = 1, .opcode = ENG_WR_BIND_MW };
	uint32_t key;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 900);
	fmr = fast_mr(&b, &view, dst, 8192);
	key = eng_mr_rkey(fmr);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 2, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), key, ENG_ACCESS_LOCAL_WRITE | ENG_ACCESS_MW_BIND } },
		 ENG_WC_SUCCESS, ENG_WC_REG_MR);
	assert_int_equal(eng_mw_alloc(b.pd, &mw), 0);
	assert_int_equal(eng_pd_alloc(b.dev, &pd2), 0);
	bind.bind = (typeof(bind.bind)){ 0x30000000, 4096, eng_mw_rkey(mw), eng_mw_rkey(mw),
					 key, ENG_ACCESS_REMOTE_WRITE };
	/* bound through a second QP, which then goes away */
	qp1 = b.qp;
	qp2 = mw_qp2(&b, ENG_MTU_1024);
	b.qp = qp2;
	local_wr(&b, &a, bind, ENG_WC_SUCCESS, ENG_WC_BIND_MW);
	b.qp = qp1;
	assert_int_equal(eng_mr_dereg(fmr), -EBUSY);
	/* a window's key is an rkey only */
	assert_int_equal(eng_mr_check(b.dev, b.pd, eng_mw_rkey(mw), false, 0x30000000, 16, 0,
				      &out), ENG_MEM_BAD_KEY);
	assert_int_equal(eng_qp_destroy(qp2), 0);	/* FREE again: b's QP may bind it */
	bind.bind.rkey = next_key(eng_mw_rkey(mw));
	local_wr(&b, &a, bind, ENG_WC_SUCCESS, ENG_WC_BIND_MW);
	assert_int_equal(eng_mr_dereg(fmr), -EBUSY);
	/* a PD with a window is busy */
	assert_int_equal(eng_mw_alloc(pd2, &mw2), 0);
	assert_int_equal(eng_pd_free(pd2), -EBUSY);
	assert_int_equal(eng_mw_dealloc(mw2), 0);
	assert_int_equal(eng_pd_free(pd2), 0);
	/* nor is the MR invalidated under its window (as rxe) */
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 3, .opcode = ENG_WR_LOCAL_INV,
		 .invalidate_rkey = key }, ENG_WC_LOC_QP_OP_ERR, ENG_WC_LOCAL_INV);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ERR_LOCAL_INV], 1);
	assert_int_equal(eng_mw_dealloc(mw), 0);	/* bound: invalidated, the MR freed */
	frwr_free(&a, &b);
}

/* ---- restarts that keep the state (docs/restart.md) ---- */

static char ewhy[160];	/* why a restore refused */

/* Restored MRs: the one over view (a fast MR's), the rest on the side's. */
static struct {
	struct side *s;
	uint32_t handle;
	struct flat_mem *view;
} restore_maps;

static int restore_map(void *ctx, uint32_t handle, eng_mem_map_fn *map, void **mem)
{
	(void)ctx;
	*map = flat_mem_map;
	*mem = handle == restore_maps.handle ? (void *)restore_maps.view :
						(void *)&restore_maps.s->flat;
	return 0;
}

/* A new engine for s restored from p: 0, or the restore's error (then the
 * new engine holds no object: ASan sees any leak). */
static int restore_bytes(struct side *s, const uint8_t *p, size_t len, struct sbuf *again)
{
	struct eng_dev *dev = eng_dev_new(s->ops, s, &s->tx);
	struct srd r = { .p = p, .len = len };
	int err;

	assert_non_null(dev);
	eng_dev_set_port_mtu(dev, ENG_MTU_4096);
	err = eng_dev_restore(dev, &r, restore_map, NULL, ewhy, sizeof(ewhy));
	if (!err && again)
		eng_dev_save(dev, again);
	eng_dev_clear(dev);
	eng_dev_free(dev);
	return err;
}

/* Every kind of object comes back with its handle and its key or QPN, and
 * works on: a fast-reg MR after REG_MR with a window bound over it, a FREE
 * fast-reg MR, a second PD, an SRQ holding WQEs with a UD QP on it, a UC QP
 * in INIT holding receives, flushed completions waiting in the CQ, an inline
 * SEND queued and not sent. */
static void test_restart_objects(void **state)
{
	const uint32_t dst = MW_DST;
	struct side a, b;
	struct flat_mem view;
	struct eng_mr *fmr, *free_mr;
	struct eng_mw *mw;
	struct eng_pd *pd2;
	struct eng_srq *srq;
	struct eng_qp *ud, *uc, *uc2;
	struct eng_srq_attr sa = { .max_wr = 16, .max_sge = 2, .srq_limit = 3 };
	struct eng_qp_init_attr init = { .qp_type = ENG_QPT_UD, .send_cq = NULL,
		.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_inline_data = 16 } };
	struct eng_qp_attr qa = { .qp_state = ENG_QPS_INIT, .port_num = 1, .qkey = 7 };
	struct eng_sge sge = { SIDE_IOVA, 64, 0 };
	struct eng_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	struct eng_send_wr bind = { .wr_id = 1, .opcode = ENG_WR_BIND_MW };
	struct eng_sge in = { 0, 12, 0 };
	struct eng_send_wr inl = { .wr_id = 50, .opcode = ENG_WR_SEND, .num_sge = 1,
				   .send_flags = ENG_SEND_INLINE | ENG_SEND_SIGNALED, .sg_list = &in };
	struct named { uint32_t h, key; } h_fmr, h_mw, h_free, h_ud, h_uc, h_qp;
	uint32_t h_pd2, h_srq, slot;
	char text[] = "state kept!";
	struct eng_wc wc;
	uint64_t i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 950);
	fmr = fast_mr(&b, &view, dst, 8192);
	local_wr(&b, &a, (struct eng_send_wr){ .wr_id = 2, .opcode = ENG_WR_REG_MR,
		 .reg = { eng_mr_handle(fmr), next_key(eng_mr_rkey(fmr)),
			  ENG_ACCESS_LOCAL_WRITE | ENG_ACCESS_MW_BIND } },
		 ENG_WC_SUCCESS, ENG_WC_REG_MR);
	assert_int_equal(eng_mw_alloc(b.pd, &mw), 0);
	bind.bind = (typeof(bind.bind)){ 0x30000000, 4096, eng_mw_rkey(mw), eng_mw_rkey(mw),
					 eng_mr_lkey(fmr), ENG_ACCESS_REMOTE_WRITE };
	local_wr(&b, &a, bind, ENG_WC_SUCCESS, ENG_WC_BIND_MW);
	assert_int_equal(eng_mr_alloc_fast(b.pd, flat_mem_map, &b.flat, &free_mr), 0);
	assert_int_equal(eng_pd_alloc(b.dev, &pd2), 0);
	assert_int_equal(eng_srq_create(b.pd, &sa, &srq), 0);
	sge.lkey = eng_mr_lkey(b.mr);
	for (i = 0; i < 5; i++) {
		rwr.wr_id = 100 + i;
		assert_int_equal(eng_srq_post_recv(srq, &rwr), 0);
	}
	init.send_cq = init.recv_cq = b.cq;
	init.srq = srq;
	assert_int_equal(eng_qp_create(b.pd, &init, &ud), 0);
	assert_int_equal(eng_qp_modify(ud, &qa, ENG_QP_STATE | ENG_QP_PKEY_INDEX | ENG_QP_PORT |
				       ENG_QP_QKEY), 0);
	init = (struct eng_qp_init_attr){ .qp_type = ENG_QPT_UC, .send_cq = b.cq, .recv_cq = b.cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	assert_int_equal(eng_qp_create(b.pd, &init, &uc), 0);
	assert_int_equal(eng_qp_create(b.pd, &init, &uc2), 0);
	qa.qp_access_flags = ENG_ACCESS_REMOTE_WRITE;
	for (i = 0; i < 2; i++) {
		struct eng_qp *q = i ? uc2 : uc;

		assert_int_equal(eng_qp_modify(q, &qa, ENG_QP_STATE | ENG_QP_PKEY_INDEX |
					       ENG_QP_PORT | ENG_QP_ACCESS_FLAGS), 0);
		rwr.wr_id = 200 + i;
		assert_int_equal(eng_post_recv(q, &rwr), 0);
		rwr.wr_id = 210 + i;
		assert_int_equal(eng_post_recv(q, &rwr), 0);
	}
	qa.qp_state = ENG_QPS_ERR;	/* uc2's two receives flushed into the CQ */
	assert_int_equal(eng_qp_modify(uc2, &qa, ENG_QP_STATE), 0);
	in.addr = (uintptr_t)text;
	assert_int_equal(eng_post_send(b.qp, &inl), 0);
	rwr.wr_id = 60;
	sge.lkey = eng_mr_lkey(a.mr);
	assert_int_equal(eng_post_recv(a.qp, &rwr), 0);
	memset(text, 'x', sizeof(text));	/* copied at the post */

	h_fmr = (struct named){ eng_mr_handle(fmr), eng_mr_rkey(fmr) };
	h_mw = (struct named){ eng_mw_handle(mw), eng_mw_rkey(mw) };
	h_free = (struct named){ eng_mr_handle(free_mr), eng_mr_rkey(free_mr) };
	h_ud = (struct named){ eng_qp_handle(ud), eng_qp_num(ud) };
	h_uc = (struct named){ eng_qp_handle(uc), eng_qp_num(uc) };
	h_qp = (struct named){ eng_qp_handle(b.qp), eng_qp_num(b.qp) };
	h_pd2 = eng_pd_handle(pd2);
	h_srq = eng_srq_handle(srq);
	slot = eng_srq_slot(srq);
	assert_int_equal(eng_qp_destroy(uc2), 0);

	restore_maps.s = &b;
	restore_maps.handle = h_fmr.h;
	restore_maps.view = &view;
	{
		struct sbuf first = { 0 }, again = { 0 };

		assert_int_equal(side_restore(&b, &first, &again, restore_map, NULL), 0);
		assert_int_equal(again.len, first.len);
		assert_memory_equal(again.p, first.p, first.len);
		sb_free(&first);
		sb_free(&again);
	}
	fmr = fast_live = eng_mr_get(b.dev, h_fmr.h);
	mw = eng_mw_get(b.dev, h_mw.h);
	free_mr = eng_mr_get(b.dev, h_free.h);
	ud = eng_qp_get(b.dev, h_ud.h);
	uc = eng_qp_get(b.dev, h_uc.h);
	pd2 = eng_pd_get(b.dev, h_pd2);
	srq = eng_srq_get(b.dev, h_srq);
	assert_non_null(fmr);
	assert_non_null(mw);
	assert_non_null(free_mr);
	assert_non_null(ud);
	assert_non_null(uc);
	assert_non_null(pd2);
	assert_non_null(srq);
	assert_int_equal(eng_mr_rkey(fmr), h_fmr.key);
	assert_int_equal(eng_mw_rkey(mw), h_mw.key);
	assert_int_equal(eng_mr_rkey(free_mr), h_free.key);
	assert_int_equal(eng_qp_num(ud), h_ud.key);
	assert_int_equal(eng_qp_num(uc), h_uc.key);
	assert_int_equal(eng_qp_num(b.qp), h_qp.key);
	assert_int_equal(eng_qp_handle(b.qp), h_qp.h);
	assert_ptr_equal(eng_qp_from_num(b.dev, h_ud.key), ud);
	assert_int_equal(eng_srq_slot(srq), slot);
	assert_int_equal(eng_srq_count(srq), 5);
	assert_ptr_equal(eng_qp_srq(ud), srq);
	assert_int_equal(eng_qp_state(ud), ENG_QPS_INIT);
	assert_int_equal(eng_qp_state(uc), ENG_QPS_INIT);
	/* the flushed receives waiting in the CQ, in order */
	for (i = 0; i < 2; i++)
		expect_wc(&b, 200 + 10 * i + 1, ENG_WC_WR_FLUSH_ERR);
	assert_cq_empty(&b);
	/* the queued inline SEND goes out with its bytes */
	pump(&a, &b);
	expect_wc(&b, 50, ENG_WC_SUCCESS);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 60);
	assert_int_equal(wc.byte_len, 12);
	assert_memory_equal(a.mem, "state kept!", 12);
	/* the window still takes a's WRITE, under its rkey only */
	fill(a.mem, 512, 9);
	assert_int_equal(write_to(&a, &b, h_mw.key, 70), ENG_WC_SUCCESS);
	assert_memory_equal(b.mem + dst + 100, a.mem, 512);
	/* the FREE fast MR is FREE still */
	assert_int_equal(eng_mr_check(b.dev, b.pd, h_free.key, false, 0, 1, 0, &fmr),
			 ENG_MEM_INVALID);
	fmr = fast_live;
	assert_int_equal(eng_mr_dereg(fmr), -EBUSY);	/* the window is on it */
	assert_int_equal(eng_mw_dealloc(mw), 0);
	assert_int_equal(eng_qp_destroy(ud), 0);
	assert_int_equal(eng_qp_destroy(uc), 0);
	assert_int_equal(eng_srq_destroy(srq), 0);
	assert_int_equal(eng_mr_dereg(free_mr), 0);
	assert_int_equal(eng_pd_free(pd2), 0);
	frwr_free(&a, &b);
}

/* A probe (cc.c) that resends the oldest packet of a SEND whose MR was
 * deregistered meanwhile fails the QP (LOC_PROT_ERR, the rest flushed);
 * the requester state it leaves is the flushed one, which a save and a
 * restore take as they are (fuzz_state found a probe putting back the
 * requester's WQE index over an empty send queue, which no restore
 * accepts). */
static void test_probe_fails_qp(void **state)
{
	struct side a, b;
	struct sbuf first = { 0 }, again = { 0 };
	struct eng_mr *mr;
	struct eng_sge s = { SIDE_IOVA, 3000, 0 };
	struct eng_send_wr wr = { .wr_id = 5, .opcode = ENG_WR_SEND,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 970);
	assert_int_equal(eng_mr_reg(a.pd, SIDE_IOVA, 1u << 20, ENG_ACCESS_LOCAL_WRITE,
				    flat_mem_map, &a.flat, &mr), 0);
	s.lkey = eng_mr_lkey(mr);
	wire_faults.drop_all_a = true;		/* the SEND is lost */
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	wr.wr_id = 6;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump_for(&a, &b, 100000);		/* sent, not the probe yet */
	assert_int_equal(eng_mr_dereg(mr), 0);
	pump_for(&a, &b, 60000000);		/* the probe, before the 67 ms timer */
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_ERR);
	expect_wc(&a, 5, ENG_WC_LOC_PROT_ERR);
	expect_wc(&a, 6, ENG_WC_WR_FLUSH_ERR);
	restore_maps.s = &a;
	restore_maps.handle = UINT32_MAX;
	assert_int_equal(side_restore(&a, &first, &again, restore_map, NULL), 0);
	assert_int_equal(again.len, first.len);
	assert_memory_equal(again.p, first.p, first.len);
	sb_free(&first);
	sb_free(&again);
	side_free(&a);
	side_free(&b);
}

/* What does not check out is refused whole: every truncation; a VM whose
 * limits or MTU changed (-ERANGE); an engine that has objects already.
 * Every byte flipped either fails or gives a state that saves and restores
 * again to the same bytes (the fuzzer does the rest: fuzz_restore). */
static void test_restore_refused(void **state)
{
	struct side a, b;
	struct sbuf saved = { 0 };
	struct eng_dev *dev;
	struct srd r;
	size_t n, refused = 0;
	uint8_t *copy;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 960);
	one_message(&a, &b, ENG_WR_SEND, 3000, 1);
	eng_dev_save(a.dev, &saved);
	assert_int_equal(saved.err, 0);
	restore_maps.s = &a;
	restore_maps.handle = UINT32_MAX;
	assert_int_equal(restore_bytes(&a, saved.p, saved.len, NULL), 0);
	for (n = 0; n < saved.len; n++)
		assert_int_equal(restore_bytes(&a, saved.p, n, NULL), -EBADMSG);
	copy = malloc(saved.len);
	assert_non_null(copy);
	for (n = 0; n < saved.len; n++) {
		struct sbuf again = { 0 }, third = { 0 };

		memcpy(copy, saved.p, saved.len);
		copy[n] ^= 0xa5;
		if (restore_bytes(&a, copy, saved.len, &again)) {
			refused++;
		} else {
			assert_int_equal(restore_bytes(&a, again.p, again.len, &third), 0);
			assert_int_equal(third.len, again.len);
			assert_memory_equal(third.p, again.p, again.len);
		}
		sb_free(&again);
		sb_free(&third);
	}
	free(copy);
	/* a quarter at least of what is not the counters (the device's, the QP's) */
	assert_true(refused > (saved.len - 2 * ENG_CNT_MAX * sizeof(uint64_t)) / 4);
	/* the VM's limits or MTU changed */
	dev = eng_dev_new(a.ops, &a, &a.tx);
	assert_non_null(dev);
	eng_dev_set_port_mtu(dev, ENG_MTU_4096);
	eng_dev_set_limits(dev, 16, 16, 16, 16);
	r = (struct srd){ .p = saved.p, .len = saved.len };
	assert_int_equal(eng_dev_restore(dev, &r, restore_map, NULL, ewhy, sizeof(ewhy)), -ERANGE);
	eng_dev_free(dev);
	dev = eng_dev_new(a.ops, &a, &a.tx);
	assert_non_null(dev);
	eng_dev_set_port_mtu(dev, ENG_MTU_2048);
	r = (struct srd){ .p = saved.p, .len = saved.len };
	assert_int_equal(eng_dev_restore(dev, &r, restore_map, NULL, ewhy, sizeof(ewhy)), -ERANGE);
	eng_dev_free(dev);
	/* into an engine that is in use */
	r = (struct srd){ .p = saved.p, .len = saved.len };
	assert_int_equal(eng_dev_restore(a.dev, &r, restore_map, NULL, ewhy, sizeof(ewhy)), -EBUSY);
	sb_free(&saved);
	side_free(&a);
	side_free(&b);
}

/* A WRITE whose remote address + length wraps 2^64 is refused, memory untouched. */
static void test_rc_write_wraps(void **state)
{
	struct side a, b;
	struct eng_sge s = { 0x10000000, 64, 0 };
	struct eng_send_wr wr = { .wr_id = 8, .opcode = ENG_WR_RDMA_WRITE,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 100);
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = UINT64_MAX - 31;
	wr.rdma.rkey = eng_mr_rkey(b.mr);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_REM_ACCESS_ERR);
	side_free(&a);
	side_free(&b);
}

/* AckReq (IBA 9.7.5.1: an ACK acknowledges every packet before it): asked
 * for at the end of a burst, at a signaled WQE's last packet, every
 * ENG_ACKREQ_EVERY packets, on a READ, and before a local operation that
 * waits for what precedes it; not on every message. ops, all unsignaled but
 * S: w = WRITE 64 B, W = WRITE 3000 B (3 packets at 1024), S = WRITE 64 B
 * signaled, r = READ 64 B, g = REG_MR; repeated rep times; the packets sent
 * before the peer answers, and which of them ask. Then every packet must
 * be acknowledged without a resend (a burst whose end did not ask waits
 * for the retry timer). */
static const struct ackreq_case {
	const char *ops;
	unsigned int rep, npkts;
	int ask[3];		/* packet indices asking, -1 ends */
} ackreq_cases[] = {
	/*  1 */ { "w", 1, 1, { 0, -1 } },
	/*  2 */ { "W", 30, 90, { 63, 89, -1 } },
	/*  3 */ { "WWW", 1, 9, { 8, -1 } },
	/*  4 */ { "wr", 1, 2, { 1, -1 } },
	/*  5 */ { "wwg", 1, 2, { 1, -1 } },
	/*  6 */ { "wrw", 1, 3, { 1, 2, -1 } },
	/*  7 */ { "wSw", 1, 3, { 1, 2, -1 } },
	/*  8 */ { "S", 3, 3, { 0, 1, 2 } },
};

static void test_ackreq(void **state)
{
	const uint64_t base = 0x10000000;
	unsigned int c, i, k, nsig;

	(void)state;
	for (c = 0; c < sizeof(ackreq_cases) / sizeof(ackreq_cases[0]); c++) {
		const struct ackreq_case *t = &ackreq_cases[c];
		struct eng_sge sge = { base, 64, 0 };
		struct flat_mem view;
		struct eng_mr *fmr;
		struct side a, b;
		struct eng_wc wc;
		uint32_t key;

		pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 700 + c);
		sge.lkey = eng_mr_lkey(a.mr);
		fmr = fast_mr(&a, &view, 1u << 20, 4096);
		key = next_key(eng_mr_rkey(fmr));
		nsig = 0;
		for (k = 0; k < t->rep; k++) {
			for (i = 0; t->ops[i]; i++) {
				struct eng_send_wr wr = {
					.wr_id = t->ops[i], .sg_list = &sge, .num_sge = 1,
					.rdma = { base + 0x8000, eng_mr_rkey(b.mr) } };

				sge.length = t->ops[i] == 'W' ? 3000 : 64;
				wr.opcode = t->ops[i] == 'r' ? ENG_WR_RDMA_READ : ENG_WR_RDMA_WRITE;
				if (t->ops[i] == 'S') {
					wr.send_flags = ENG_SEND_SIGNALED;
					nsig++;
				}
				if (t->ops[i] == 'g') {
					wr.opcode = ENG_WR_REG_MR;
					wr.num_sge = 0;
					wr.reg.mrn = eng_mr_handle(fmr);
					wr.reg.key = key;
					wr.reg.access = ENG_ACCESS_LOCAL_WRITE;
				}
				assert_int_equal(eng_post_send(a.qp, &wr), 0);
			}
		}
		/* a poll sends ENG_POLL_QP_BUDGET frames at most: poll until done */
		while (eng_poll(a.dev, &(uint64_t){ 0 }))
			;
		print_message("ackreq case %u: %u packets\n", c + 1, a.wire->n);
		assert_int_equal(a.wire->n, t->npkts);
		for (i = 0, k = 0; i < a.wire->n; i++) {
			const struct bth *h = (const void *)(a.wire->f[i].data + 42);
			int want = k < 3 && t->ask[k] == (int)i;

			assert_int_equal(bth_ackreq(h), want);
			k += want;
		}
		pump(&a, &b);
		for (i = 0; i < nsig; i++) {
			wc = poll_one(&a);
			assert_int_equal(wc.wr_id, 'S');
			assert_int_equal(wc.status, ENG_WC_SUCCESS);
		}
		assert_cq_empty(&a);
		assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRANSMITTED_PKTS], 0);
		assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_TIMEOUT], 0);
		frwr_free(&a, &b);
	}
}

/* UD: one MTU at most, the GRH area first, Q_Key checked. */
/* a's send SGE s and b's receive SGE r in their MRs, and wr a datagram
 * from a to b's QP (AH ah) with the pairs' Q_Key. */
static void ud_to(struct side *a, struct side *b, struct eng_sge *s, struct eng_sge *r,
		  struct eng_ah_attr *ah, struct eng_send_wr *wr)
{
	s->lkey = eng_mr_lkey(a->mr);
	r->lkey = eng_mr_lkey(b->mr);
	memcpy(ah->dgid, b->gid, 16);
	memcpy(ah->dmac, b->mac, 6);
	wr->ud.ah = ah;
	wr->ud.remote_qpn = eng_qp_num(b->qp);
	wr->ud.remote_qkey = 0x11111111;
}

static void test_ud_send(void **state)
{
	struct side a, b;
	const uint64_t base = 0x10000000;
	struct eng_sge s = { base, 1000, 0 }, r = { base + 8192, 4096 + 40, 0 };
	struct eng_ah_attr ah = { .port_num = 1 };
	struct eng_send_wr wr = { .wr_id = 9, .opcode = ENG_WR_SEND_WITH_IMM, .imm_data = 77,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct eng_recv_wr rwr = { .wr_id = 10, .sg_list = &r, .num_sge = 1 };
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_UD, ENG_MTU_4096, 5);
	ud_to(&a, &b, &s, &r, &ah, &wr);
	fill(a.mem, 1000, 9);
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	wc = poll_one(&b);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 1000 + 40);
	assert_int_equal(wc.src_qp, eng_qp_num(a.qp));
	assert_true(wc.wc_flags & ENG_WC_GRH);
	assert_int_equal(wc.imm_data, 77);
	/* IPv4: the IPv4 header in the last 20 bytes of the GRH area. */
	assert_int_equal(b.mem[8192 + 20], 0x45);
	assert_memory_equal(b.mem + 8192 + 20 + 12, a.gid + 12, 4);
	assert_memory_equal(b.mem + 8192 + 40, a.mem, 1000);

	/* A wrong Q_Key is dropped and counted; nothing completes. */
	wr.ud.remote_qkey = 0x22222222;
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_cq_empty(&b);
	assert_true(eng_qp_counters(b.qp)->c[ENG_CNT_DROP_QKEY] == 1);

	/* Larger than the MTU: a local length error, and the QP goes to SQE
	 * (IBA 10.3.1): the WR behind it is flushed, new sends are flushed at
	 * once, receives still work, and RTS resumes sending. */
	s.length = 4097;
	wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	wr.wr_id = 11;
	s.length = 1000;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, ENG_WC_LOC_LEN_ERR);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.status, ENG_WC_WR_FLUSH_ERR);
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_SQE);
	wr.wr_id = 12;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 12);
	assert_int_equal(wc.status, ENG_WC_WR_FLUSH_ERR);
	{	/* b -> a still arrives while a is in SQE */
		struct eng_sge bs = { base, 200, eng_mr_lkey(b.mr) };
		struct eng_sge ar = { base + 8192, 4096 + 40, eng_mr_lkey(a.mr) };
		struct eng_ah_attr bah = { .port_num = 1 };
		struct eng_send_wr bwr = { .wr_id = 20, .opcode = ENG_WR_SEND,
					   .send_flags = ENG_SEND_SIGNALED, .sg_list = &bs,
					   .num_sge = 1 };
		struct eng_recv_wr arwr = { .wr_id = 21, .sg_list = &ar, .num_sge = 1 };
		struct eng_qp_attr rts = { .qp_state = ENG_QPS_RTS, .cur_qp_state = ENG_QPS_SQE };

		memcpy(bah.dgid, a.gid, 16);
		memcpy(bah.dmac, a.mac, 6);
		bwr.ud.ah = &bah;
		bwr.ud.remote_qpn = eng_qp_num(a.qp);
		bwr.ud.remote_qkey = 0x11111111;
		assert_int_equal(eng_post_recv(a.qp, &arwr), 0);
		assert_int_equal(eng_post_send(b.qp, &bwr), 0);
		pump(&a, &b);
		wc = poll_one(&a);
		assert_int_equal(wc.wr_id, 21);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 240);
		wc = poll_one(&b);
		assert_int_equal(wc.wr_id, 20);
		/* SQE -> RTS (CUR_STATE allowed here), and a sends again. */
		assert_int_equal(eng_qp_modify(a.qp, &rts, ENG_QP_STATE | ENG_QP_CUR_STATE), 0);
		wr.wr_id = 13;
		assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
		assert_int_equal(eng_post_send(a.qp, &wr), 0);
		pump(&a, &b);
		wc = poll_one(&a);
		assert_int_equal(wc.wr_id, 13);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		wc = poll_one(&b);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
	}
	side_free(&a);
	side_free(&b);
}


/* A stream of nmsg messages (SEND, WRITE, READ in turn; READ only for RC)
 * through a faulty wire. RC: every message exactly once, in order, data
 * intact. UC: some may be lost, none corrupted. */
/* With stream_every set, stream restarts its sides (restarts above). */
static unsigned int stream_every;
static uint64_t stream_gap_ns;

static void stream(enum eng_qp_type type, struct faults f, uint64_t seed, unsigned int nmsg)
{
	const uint64_t base = 0x10000000, half = 0x180000, slot = 0x8000;
	static const enum eng_wr_opcode rc_ops[] = { ENG_WR_SEND, ENG_WR_RDMA_WRITE,
						     ENG_WR_RDMA_READ, ENG_WR_SEND_WITH_IMM };
	static const enum eng_wr_opcode uc_ops[] = { ENG_WR_SEND, ENG_WR_RDMA_WRITE_WITH_IMM };
	enum eng_wr_opcode ops_[64];
	uint32_t lens[64];
	struct side a, b;
	struct eng_wc wc;
	unsigned int i, nrecv = 0, got = 0;

	assert_true(nmsg <= 48);
	/* TRANSPORT_SEED=N reruns the fault streams with other seeds (stress). */
	if (getenv("TRANSPORT_SEED"))
		seed += strtoull(getenv("TRANSPORT_SEED"), NULL, 0) * 1000;
	pair_init(&a, &b, type, ENG_MTU_1024, 0xfffff0);
	wire_reset(seed);
	wire_faults = f;
	restarts.every = stream_every;
	restarts.gap_ns = stream_gap_ns;
	for (i = 0; i < nmsg; i++) {
		struct eng_sge s, r;
		struct eng_send_wr wr = { .wr_id = i, .send_flags = ENG_SEND_SIGNALED,
					  .imm_data = i, .sg_list = &s, .num_sge = 1 };
		struct eng_recv_wr rwr = { .wr_id = i, .sg_list = &r, .num_sge = 1 };

		ops_[i] = type == ENG_QPT_RC ? rc_ops[i % 4] : uc_ops[i % 2];
		lens[i] = rnd() % 20000;
		wr.opcode = ops_[i];
		if (ops_[i] == ENG_WR_RDMA_READ) {	/* data flows b -> a */
			fill(b.mem + i * slot, lens[i], (uint32_t)seed + i);
			memset(a.mem + half + i * slot, 0xee, slot);
			s = (struct eng_sge){ base + half + i * slot, lens[i], eng_mr_lkey(a.mr) };
			wr.rdma.remote_addr = base + i * slot;
			wr.rdma.rkey = eng_mr_rkey(b.mr);
		} else {
			fill(a.mem + i * slot, lens[i], (uint32_t)seed + i);
			memset(b.mem + half + i * slot, 0xee, slot);
			s = (struct eng_sge){ base + i * slot, lens[i], eng_mr_lkey(a.mr) };
			wr.rdma.remote_addr = base + half + i * slot;
			wr.rdma.rkey = eng_mr_rkey(b.mr);
			if (ops_[i] != ENG_WR_RDMA_WRITE) {
				r = (struct eng_sge){ base + half + i * slot, slot,
						      eng_mr_lkey(b.mr) };
				assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
				nrecv++;
			}
		}
		assert_int_equal(eng_post_send(a.qp, &wr), 0);
	}
	pump(&a, &b);
	if (stream_every) {
		if (getenv("TRANSPORT_DEBUG"))
			fprintf(stderr, "restarts %u rounds %u\n", restarts.done, restarts.rounds);
		assert_true(restarts.done >= 4);
	}

	if (getenv("TRANSPORT_DEBUG"))
		for (i = 0; i < ENG_CNT_MAX; i++)
			if (eng_qp_counters(b.qp)->c[i] || eng_qp_counters(a.qp)->c[i])
				fprintf(stderr, "%-28s a=%lu b=%lu\n", eng_counter_name(i),
					(unsigned long)eng_qp_counters(a.qp)->c[i],
					(unsigned long)eng_qp_counters(b.qp)->c[i]);
	/* The requester: one completion per message, in order, all good. */
	for (i = 0; i < nmsg; i++) {
		wc = poll_one(&a);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
	}
	assert_cq_empty(&a);
	/* The responder's receives: RC all in order; UC a subset, in order. */
	for (i = 0; i < nmsg; i++) {
		if (ops_[i] == ENG_WR_RDMA_READ) {
			assert_memory_equal(a.mem + half + i * slot, b.mem + i * slot, lens[i]);
			continue;
		}
		if (ops_[i] == ENG_WR_RDMA_WRITE) {
			assert_memory_equal(b.mem + half + i * slot, a.mem + i * slot, lens[i]);
			continue;
		}
		if (type == ENG_QPT_UC && got == nrecv)
			break;
		if (eng_cq_poll(b.cq, &wc, 1) != 1) {
			assert_int_equal(type, ENG_QPT_UC);
			break;
		}
		if (type == ENG_QPT_UC && wc.wr_id != i) {
			/* Lost: the receive WQE went to a later message. */
			assert_true(wc.wr_id > i);
			assert_int_equal(wc.status, ENG_WC_SUCCESS);
		}
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		if (type == ENG_QPT_RC)
			assert_int_equal(wc.byte_len, lens[wc.wr_id]);
		got++;
	}
	if (type == ENG_QPT_RC) {
		assert_int_equal(got, nrecv);
		assert_cq_empty(&b);
	}
	side_free(&a);
	side_free(&b);
}

/* UC: every message that completes at the receiver is whole. The receive
 * WQEs are consumed in order by whatever arrives, so check by content. */
static void uc_never_corrupt(struct faults f, uint64_t seed)
{
	const uint64_t base = 0x10000000, slot = 0x8000, half = 0x180000;
	struct side a, b;
	struct eng_wc wc;
	unsigned int i, n = 40, got = 0;

	if (getenv("TRANSPORT_SEED"))
		seed += strtoull(getenv("TRANSPORT_SEED"), NULL, 0) * 1000;
	pair_init(&a, &b, ENG_QPT_UC, ENG_MTU_256, 0xffff00);
	wire_reset(seed);
	wire_faults = f;
	for (i = 0; i < n; i++) {
		struct eng_sge s = { base + i * slot, 3000 + i, eng_mr_lkey(a.mr) };
		struct eng_sge r = { base + half + i * slot, slot, eng_mr_lkey(b.mr) };
		struct eng_send_wr wr = { .wr_id = i, .opcode = ENG_WR_SEND_WITH_IMM,
					  .imm_data = i, .sg_list = &s, .num_sge = 1 };
		struct eng_recv_wr rwr = { .wr_id = i, .sg_list = &r, .num_sge = 1 };

		fill(a.mem + i * slot, 3000 + i, 77 + i);
		assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
		assert_int_equal(eng_post_send(a.qp, &wr), 0);
	}
	pump(&a, &b);
	while (eng_cq_poll(b.cq, &wc, 1) == 1) {
		uint32_t m = wc.imm_data;	/* which message landed here */

		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_true(m < n);
		assert_int_equal(wc.byte_len, 3000 + m);
		assert_memory_equal(b.mem + half + wc.wr_id * slot, a.mem + m * slot, 3000 + m);
		got++;
	}
	assert_true(got > 0);
	if (f.loss)
		assert_true(got < n);	/* 256-byte MTU, 12 packets each: some lost */
	side_free(&a);
	side_free(&b);
}

static void test_rc_loss_0(void **state) { (void)state; stream(ENG_QPT_RC, (struct faults){ 0 }, 10, 48); }
static void test_rc_loss_1(void **state) { (void)state; stream(ENG_QPT_RC, (struct faults){ .loss = 1 }, 11, 48); }
static void test_rc_loss_5(void **state) { (void)state; stream(ENG_QPT_RC, (struct faults){ .loss = 5 }, 12, 48); }
static void test_rc_dup(void **state) { (void)state; stream(ENG_QPT_RC, (struct faults){ .dup = 10 }, 13, 48); }
static void test_rc_reorder(void **state) { (void)state; stream(ENG_QPT_RC, (struct faults){ .reorder = 10 }, 14, 48); }
static void test_rc_all_faults(void **state)
{
	(void)state;
	stream(ENG_QPT_RC, (struct faults){ .loss = 5, .dup = 5, .reorder = 5, .corrupt_pm = 5 },
	       15, 48);
}
/* A stream whose sides restart with their state every few rounds, each
 * gone for gap_ns: RC exactly once, in order, intact; UC never corrupt. */
static void stream_restarting(enum eng_qp_type type, struct faults f, uint64_t seed,
			      unsigned int every, uint64_t gap_ns)
{
	stream_every = every;
	stream_gap_ns = gap_ns;
	stream(type, f, seed, type == ENG_QPT_RC ? 48 : 40);
	stream_every = 0;
	stream_gap_ns = 0;
}

static void test_restart_rc(void **state)
{
	(void)state;
	stream_restarting(ENG_QPT_RC, (struct faults){ 0 }, 40, 2, 0);
	stream_restarting(ENG_QPT_RC, (struct faults){ .a_pace_ns = 50000, .a_queue = 256 }, 41, 1,
			  1000000);
	stream_restarting(ENG_QPT_RC, (struct faults){ .loss = 2, .reorder = 5, .dup = 5 }, 42,
			  1, 5000000);
	stream_restarting(ENG_QPT_UC, (struct faults){ 0 }, 43, 1, 0);
}

static void test_uc_loss(void **state)
{
	(void)state;
	stream(ENG_QPT_UC, (struct faults){ 0 }, 16, 40);
	uc_never_corrupt((struct faults){ .loss = 2 }, 17);
	uc_never_corrupt((struct faults){ .loss = 2, .reorder = 5, .dup = 5, .corrupt_pm = 5 }, 18);
}

/* RNR: the receiver posts late; the sender waits and tries again. */
static void test_rnr(void **state)
{
	const uint64_t base = 0x10000000;
	struct side a, b;
	struct eng_sge s = { base, 100, 0 }, r = { base + 0x1000, 100, 0 };
	struct eng_send_wr wr = { .wr_id = 1, .opcode = ENG_WR_SEND, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct eng_recv_wr rwr = { .wr_id = 2, .sg_list = &r, .num_sge = 1 };
	struct eng_qp_attr at = { .rnr_retry = 2 };
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 1);
	s.lkey = eng_mr_lkey(a.mr);
	r.lkey = eng_mr_lkey(b.mr);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	/* 10 ms of RNR NAKs (min_rnr_timer 1 = 10 us apart), then the receive. */
	assert_false(pump_for(&a, &b, 10000000));
	assert_true(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_RNR] > 100);
	assert_true(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_RNR] > 100);
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	wc = poll_one(&b);
	assert_int_equal(wc.byte_len, 100);

	/* rnr_retry 2: the third RNR NAK ends it. RNR_RETRY cannot change in
	 * RTS (the transition table), so a new pair. */
	side_free(&a);
	side_free(&b);
	next_rnr_retry = 2;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 1);
	next_rnr_retry = 7;
	s.lkey = eng_mr_lkey(a.mr);
	assert_int_equal(eng_qp_modify(a.qp, &at, ENG_QP_RNR_RETRY), -EINVAL);
	wr.wr_id = 3;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, ENG_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_ERR);
	assert_true(eng_qp_counters(a.qp)->c[ENG_CNT_ERR_RNR_EXCEEDED] == 1);
	side_free(&a);
	side_free(&b);
}

/* Nothing gets through: retry_cnt timeouts, then RETRY_EXC_ERR, the rest
 * flushed in order. */
static void test_retry_exceeded(void **state)
{
	struct side a, b;
	struct eng_sge s = { 0x10000000, 10, 0 };
	struct eng_send_wr wr = { .opcode = ENG_WR_RDMA_WRITE, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct eng_qp_attr at = { .retry_cnt = 3 };
	struct eng_wc wc;
	unsigned int i;

	(void)state;
	next_retry_cnt = 3;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 9);
	next_retry_cnt = 7;
	assert_int_equal(eng_qp_modify(a.qp, &at, ENG_QP_RETRY_CNT), -EINVAL);	/* not in RTS */
	wire_faults.drop_all_a = true;
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = 0x10000000;
	wr.rdma.rkey = eng_mr_rkey(b.mr);
	for (i = 0; i < 3; i++) {
		wr.wr_id = 10 + i;
		assert_int_equal(eng_post_send(a.qp, &wr), 0);
	}
	qp_events = 0;
	pump(&a, &b);
	/* reported by the completion alone: no asynchronous event */
	assert_int_equal(qp_events, 0);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, ENG_WC_RETRY_EXC_ERR);
	for (i = 1; i < 3; i++) {
		wc = poll_one(&a);
		assert_int_equal(wc.wr_id, 10 + i);
		assert_int_equal(wc.status, ENG_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_TIMEOUT], 3);
	/* timeout 14: 67 ms per try, 4 tries */
	assert_true(clock_ns >= 4 * eng_timeout_ns_test(14));
	side_free(&a);
	side_free(&b);
}

/* A READ-response lost in the middle: the gap is an implied NAK, the READ
 * is asked again for the rest and completes with the right data. */
static void test_read_response_gap(void **state)
{
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_256, 0xffffff - 3);
	wire_faults.drop_nth_read_resp = 3;
	one_read(&a, &b, 10 * 256 + 17, 5);
	assert_true(eng_qp_counters(a.qp)->c[ENG_CNT_IMPLIED_NAK] >= 1);
	assert_true(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_READ] >= 1);
	/* The last response lost: the timer asks again (a duplicate READ after a partial response). */
	read_resp_seen = 0;
	wire_faults.drop_nth_read_resp = 11;
	one_read(&a, &b, 10 * 256 + 17, 6);
	assert_true(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_READ] >= 2);
	side_free(&a);
	side_free(&b);
}

/* A responder slower than the retransmit timeout (rxe under TCG: a 1 MiB
 * READ takes longer than timeout 14's 67 ms), one response lost early: the
 * rest of the stream comes out of sequence for longer than retry_cnt
 * timeouts, and then the answer to the one request asking again. The
 * responder is alive all along: no timeout, no second request. */
static void test_read_slow_responder(void **state)
{
	const uint32_t len = 1u << 20;
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 77);
	/* 1024 responses taking 9 timeouts: more than retry_cnt 7 allows */
	wire_faults.b_pace_ns = 9 * eng_timeout_ns_test(14) / (len / 1024);
	wire_faults.drop_nth_read_resp = 2;
	one_read(&a, &b, len, 8);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_TIMEOUT], 0);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_IMPLIED_NAK], 1);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_READ], 1);
	/* 1535 responses missing: asked for in two parts (at most 1024 each),
	 * the second once the first is in. */
	read_resp_seen = 0;
	one_read(&a, &b, len + len / 2, 9);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_TIMEOUT], 0);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_IMPLIED_NAK], 2);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_READ], 3);
	side_free(&a);
	side_free(&b);
}

/* One frame from one side to the other, with these headers (and 256 bytes
 * of payload where the opcode carries one), as a peer would build it. */
static void inject_hdrs(struct side *from, struct side *to, const struct roce_hdrs *h)
{
	struct roce_addr ad = { .vlan = -1, .hop_limit = 64, .sport = 1 };
	uint8_t buf[512], pay[256] = { 0 };
	struct roce_frag o = { buf, sizeof(buf) }, pl = { pay, sizeof(pay) };
	enum roce_drop why;
	unsigned int nused;
	int len;

	memcpy(ad.sgid, from->gid, 16);
	memcpy(ad.dgid, to->gid, 16);
	len = roce_build(&o, 1, &nused, &ad, h, &pl,
			 roce_opcode(h->opcode)->mask & ROCE_F_PAYLOAD ? 1 : 0);
	assert_true(len > 0);
	assert_int_equal(side_rx(to, buf, (uint32_t)len, &why), 0);
}

/* Build one request frame from b's QP to a's, as a misbehaving peer would. */
static void inject(struct side *from, struct side *to, uint8_t opcode, uint32_t psn,
		   uint8_t syndrome, uint32_t dqpn)
{
	struct roce_hdrs h = { .opcode = opcode, .pkey = 0xffff, .dqpn = dqpn, .psn = psn,
			       .aeth = { .syndrome = syndrome } };

	inject_hdrs(from, to, &h);
}

/* A READ or WRITE request with a RETH (a WRITE carries 256 bytes). */
static void inject_reth(struct side *from, struct side *to, uint8_t opcode, uint32_t psn,
			uint64_t va, uint32_t len, uint32_t rkey)
{
	struct roce_hdrs h = { .opcode = opcode, .pkey = 0xffff, .dqpn = eng_qp_num(to->qp),
			       .psn = psn, .ackreq = true, .reth = { va, rkey, len } };

	inject_hdrs(from, to, &h);
}

/* A UD SEND_ONLY of 256 bytes from one side to the other's QP1, built as a
 * peer would, with this Q_Key and P_Key. */
static void inject_mad(struct side *from, struct side *to, uint32_t qkey, uint16_t pkey)
{
	struct roce_hdrs h = { .opcode = ROCE_UD_SEND_ONLY, .pkey = pkey, .dqpn = ENG_GSI_QPN,
			       .deth = { qkey, ENG_GSI_QPN } };

	inject_hdrs(from, to, &h);
}

static void put_be(uint8_t *p, uint64_t v, unsigned int n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* A CM ConnectRequest MAD (IBA 12.6.5; 256 bytes) as rdma_cm sends one for
 * an RC QP 0x123456 to TCP port 1234 (service ID 0x10604d2): `make unit`
 * finds it in the transport pcap, decoded by tshark, from QP1 to QP1 with
 * QP1's Q_Key. */
static void cm_req(uint8_t *m, const uint8_t sgid[16], const uint8_t dgid[16])
{
	memset(m, 0, 256);
	m[0] = 1;		/* BaseVersion */
	m[1] = 0x07;		/* MgmtClass: communication management */
	m[2] = 2;		/* ClassVersion */
	m[3] = 0x03;		/* Method: Send */
	put_be(m + 8, 0x2700000001ull, 8);	/* TransactionID */
	put_be(m + 16, 0x0010, 2);		/* AttributeID: ConnectRequest */
	put_be(m + 24, 0xc0ffee01, 4);		/* Local Communication ID */
	put_be(m + 32, 0x10604d2, 8);		/* ServiceID: RDMA_PS_TCP, port 1234 */
	put_be(m + 40, 0x520000fffe000001ull, 8);	/* Local CA GUID */
	put_be(m + 56, 0x123456u << 8 | 1, 4);	/* Local QPN, Responder Resources */
	put_be(m + 60, 1, 4);			/* Initiator Depth */
	put_be(m + 64, 20u << 3, 4);		/* remote CM timeout 20, RC */
	put_be(m + 68, 0xabcdeu << 8 | 20u << 3 | 7, 4);	/* PSN, timeout, retries */
	put_be(m + 72, 0xffff, 2);		/* P_Key */
	m[74] = 3 << 4 | 7;			/* MTU 1024, RNR retry 7 */
	m[75] = 15 << 4;			/* Max CM retries */
	put_be(m + 76, 0xffff, 2);		/* permissive LIDs: RoCE */
	put_be(m + 78, 0xffff, 2);
	memcpy(m + 80, sgid, 16);
	memcpy(m + 96, dgid, 16);
	m[117] = 64;				/* hop limit */
	m[119] = 18 << 3;			/* local ACK timeout */
	m[165] = 4 << 4;			/* private data: rdma_cm's IPv4 header */
	put_be(m + 166, 1234, 2);
}

/* QP1 (IBA 13.4.7, issue 27), as Linux's MAD layer drives it: one per
 * device, QPN 1; INIT without PORT and with the well-known Q_Key only. Its
 * sends carry Q_Key 0x80010000 and source QP 1 whatever the WR says; a
 * datagram to QPN 1 arrives with its GRH and network header type (IPv4 and
 * IPv6); a wrong Q_Key or P_Key is dropped and counted. */
static void test_gsi(void **state)
{
	struct eng_qp_init_attr init = { .qp_type = ENG_QPT_GSI,
					 .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct eng_sge s = { SIDE_IOVA, 256, 0 }, r = { SIDE_IOVA + 8192, 40 + 256, 0 };
	struct eng_ah_attr ah = { .port_num = 1 };
	struct eng_send_wr wr = { .wr_id = 5, .opcode = ENG_WR_SEND, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct eng_recv_wr rwr = { .wr_id = 6, .sg_list = &r, .num_sge = 1 };
	struct eng_qp_attr qa = { .qp_state = ENG_QPS_RTS, .qkey = 0x11111111, .port_num = 1 };
	const struct eng_counters *cb;
	struct eng_qp *second;
	struct side a, b;
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_GSI, ENG_MTU_1024, 0);
	assert_int_equal(eng_qp_num(a.qp), 1);
	assert_int_equal(eng_qp_num(b.qp), 1);
	init.send_cq = init.recv_cq = a.cq;
	assert_int_equal(eng_qp_create(a.pd, &init, &second), -EBUSY);
	assert_int_equal(eng_qp_modify(a.qp, &qa, ENG_QP_STATE | ENG_QP_QKEY), -EINVAL);
	assert_int_equal(eng_qp_modify(a.qp, &qa, ENG_QP_STATE | ENG_QP_PORT), -EINVAL);
	qa.qkey = ENG_GSI_QKEY;
	assert_int_equal(eng_qp_modify(a.qp, &qa, ENG_QP_STATE | ENG_QP_QKEY), 0);

	ud_to(&a, &b, &s, &r, &ah, &wr);	/* to b's QP, which is QP1 */
	wr.ud.remote_qkey = 0x12345678;	/* QP1 sends its own, whatever this says */
	cm_req(a.mem, a.gid, b.gid);	/* `make unit` has tshark decode it */
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	assert_int_equal(poll_one(&a).status, ENG_WC_SUCCESS);
	wc = poll_one(&b);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 6);
	assert_int_equal(wc.opcode, ENG_WC_RECV);
	assert_int_equal(wc.byte_len, 40 + 256);
	assert_int_equal(wc.qp_num, 1);
	assert_int_equal(wc.src_qp, 1);
	assert_int_equal(wc.pkey_index, 0);
	assert_int_equal(wc.wc_flags, ENG_WC_GRH | ENG_WC_WITH_NETWORK_HDR_TYPE);
	assert_int_equal(wc.network_hdr_type, ENG_NETWORK_IPV4);
	assert_int_equal(b.mem[8192 + 20], 0x45);	/* IPv4 in the GRH's last 20 */
	assert_memory_equal(b.mem + 8192 + 20 + 12, a.gid + 12, 4);
	assert_memory_equal(b.mem + 8192 + 40, a.mem, 256);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_GSI_SENT], 1);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_GSI_RECEIVED], 1);

	/* a peer's MADs: the wrong Q_Key, then P_Keys not ours, dropped */
	cb = eng_qp_counters(b.qp);
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	inject_mad(&a, &b, 0x11111111, 0xffff);
	inject_mad(&a, &b, ENG_GSI_QKEY, 0x8001);
	inject_mad(&a, &b, ENG_GSI_QKEY, 0x0000);
	assert_cq_empty(&b);
	assert_int_equal(cb->c[ENG_CNT_DROP_QKEY], 1);
	assert_int_equal(cb->c[ENG_CNT_DROP_PKEY], 2);
	/* a limited member's 0x7fff matches our 0xffff (IBA 10.9.3) */
	inject_mad(&a, &b, ENG_GSI_QKEY, 0x7fff);
	assert_int_equal(poll_one(&b).status, ENG_WC_SUCCESS);

	/* IPv6 GIDs: the IPv6 header fills the GRH */
	memcpy(a.gid, (const uint8_t[16]){ 0xfd, [15] = 1 }, 16);
	memcpy(b.gid, (const uint8_t[16]){ 0xfd, [15] = 2 }, 16);
	assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
	inject_mad(&a, &b, ENG_GSI_QKEY, 0xffff);
	wc = poll_one(&b);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.src_qp, 1);
	assert_int_equal(wc.network_hdr_type, ENG_NETWORK_IPV6);
	assert_int_equal(b.mem[8192] >> 4, 6);
	assert_memory_equal(b.mem + 8192 + 8, a.gid, 16);	/* source address */
	assert_int_equal(cb->c[ENG_CNT_GSI_RECEIVED], 3);
	side_free(&a);
	side_free(&b);
}


/* Frames s sent since the last call (dropped, not delivered). */
static unsigned int sent_frames(struct side *s)
{
	unsigned int n = s->wire->n;

	while (s->wire->n)
		free(s->wire->f[--s->wire->n].data);
	return n;
}

/* A message is at most 2^31 bytes (IBA 9.4.1.1; rxe refuses longer): a
 * READ or WRITE asking for more is an invalid request, NAKed as such, not
 * run (at MTU 256 its PSNs would wrap). 2^31 itself passes the length
 * check and fails on the key's range. */
static void test_reth_too_long(void **state)
{
	static const struct { uint8_t op; uint32_t len; enum eng_counter nak; } c[] = {
		{ ROCE_RC_READ_REQUEST, 0x80000001u, ENG_CNT_NAK_SENT_INVALID },
		{ ROCE_RC_READ_REQUEST, 0xffffffffu, ENG_CNT_NAK_SENT_INVALID },
		{ ROCE_RC_WRITE_ONLY, 0x80000001u, ENG_CNT_NAK_SENT_INVALID },
		{ ROCE_RC_READ_REQUEST, 0x80000000u, ENG_CNT_NAK_SENT_ACCESS },
		{ ROCE_RC_WRITE_FIRST, 0x80000000u, ENG_CNT_NAK_SENT_ACCESS },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct side a, b;

		pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_256, 0xfffff0);
		inject_reth(&a, &b, c[i].op, 0xfffff0, SIDE_IOVA, c[i].len, eng_mr_rkey(b.mr));
		if (eng_qp_counters(b.qp)->c[c[i].nak] != 1)
			fail_msg("case %u: no %s NAK", i + 1, eng_counter_name(c[i].nak));
		eng_poll(b.dev, &(uint64_t){ 0 });
		assert_int_equal(sent_frames(&b), 1);	/* the NAK, no response */
		side_free(&a);
		side_free(&b);
	}
}

/* A duplicate READ (9.7.5.1.5) is answered again only for a tail of the
 * READ it repeats: from the first response asked for to at most the
 * original's end, with its key; anything else is dropped and counted, and
 * restarts nothing. */
static void test_read_duplicate_tail(void **state)
{
	static const struct {
		uint32_t psn_off, va_off, len;	/* of the duplicate */
		bool other_key;
		unsigned int resent;		/* responses sent again, 0: dropped */
	} c[] = {
		/*  1 */ { 0, 0, 1024, false, 4 },	/* the whole READ again */
		/*  2 */ { 2, 512, 512, false, 2 },	/* its tail */
		/*  3 */ { 1, 256, 256, false, 1 },	/* part of a tail (comp.c's way) */
		/*  4 */ { 2, 512, 4096, false, 0 },	/* past the original's end */
		/*  5 */ { 0, 0, 0x7fffffff, false, 0 },
		/*  6 */ { 1, 0, 256, false, 0 },	/* not where the tail starts */
		/*  7 */ { 1, 512, 256, false, 0 },
		/*  8 */ { 0, 0, 1024, true, 0 },	/* another key */
	};
	const uint32_t psn = 0xfffffe;		/* the READ's PSNs wrap */
	unsigned int i, dropped = 0, dups = 0;
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_256, psn);
	inject_reth(&a, &b, ROCE_RC_READ_REQUEST, psn, SIDE_IOVA, 1024, eng_mr_rkey(b.mr));
	eng_poll(b.dev, &(uint64_t){ 0 });
	assert_int_equal(sent_frames(&b), 4);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned int n;

		inject_reth(&a, &b, ROCE_RC_READ_REQUEST, (psn + c[i].psn_off) & 0xffffff,
			    SIDE_IOVA + c[i].va_off, c[i].len,
			    eng_mr_rkey(b.mr) ^ (c[i].other_key ? 0x100 : 0));
		if (c[i].resent)
			dups++;
		else
			dropped++;
		eng_poll(b.dev, &(uint64_t){ 0 });
		n = sent_frames(&b);
		if (n != c[i].resent)
			fail_msg("case %u: %u responses sent again, not %u", i + 1, n, c[i].resent);
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_READ], dups);
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DROP_DUPLICATE_READ], dropped);
	}
	side_free(&a);
	side_free(&b);
}

/* A 64 KiB RDMA WRITE on qp of a, from a's memory to b's at off. */
static void write64k(struct side *a, struct side *b, struct eng_qp *qp, uint64_t wr_id,
		     uint64_t off, unsigned int flags)
{
	struct eng_sge s = { SIDE_IOVA, 65536, eng_mr_lkey(a->mr) };
	struct eng_send_wr wr = { .wr_id = wr_id, .opcode = ENG_WR_RDMA_WRITE, .sg_list = &s,
				  .num_sge = 1, .send_flags = flags };

	wr.rdma.remote_addr = SIDE_IOVA + off;
	wr.rdma.rkey = eng_mr_rkey(b->mr);
	assert_int_equal(eng_post_send(qp, &wr), 0);
}

/* Polls s's device while a QP spent its budget: each poll, one QP, and
 * exactly one budget's worth of frames; the last poll sends nothing.
 * Returns the polls that sent. */
static unsigned int budget_polls(struct side *s)
{
	unsigned int n, polls = 0;

	while ((n = eng_poll(s->dev, &(uint64_t){ 0 })) != 0) {
		assert_int_equal(n, 1);		/* one QP spent its budget */
		assert_int_equal(sent_frames(s), ENG_POLL_QP_BUDGET);
		polls++;
	}
	assert_int_equal(sent_frames(s), 0);
	return polls;
}

/* One QP sends at most ENG_POLL_QP_BUDGET frames per eng_poll, and says
 * there is more: a 64 KiB UC WRITE (no window to stop it) and a 64 KiB
 * READ's responses go out in 256-frame pieces of the budget, not at once. */
/* eng_poll visits only QPs that may have work: a message's QPs until it is
 * sent, received and acknowledged (the retransmit timer keeps the sender
 * on), then neither; a thousand QPs in RTS with nothing posted, none; a
 * post wakes its QP, and the message goes. */
static void test_idle_qps(void **state)
{
	struct eng_qp_init_attr init = {
		.qp_type = ENG_QPT_RC, .send_cq = NULL, .cap = { 4, 4, 1, 1, 0 },
	};
	struct eng_qp *idle[1000];
	struct side a, b;
	uint64_t next;
	unsigned int i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 30);
	init.send_cq = init.recv_cq = a.cq;
	for (i = 0; i < 1000; i++) {
		struct eng_qp_attr at = { .qp_state = ENG_QPS_INIT, .port_num = 1 };

		assert_int_equal(eng_qp_create(a.pd, &init, &idle[i]), 0);
		assert_int_equal(eng_qp_modify(idle[i], &at, ENG_QP_STATE | ENG_QP_PKEY_INDEX |
					       ENG_QP_PORT | ENG_QP_ACCESS_FLAGS), 0);
	}
	eng_poll(a.dev, &next);
	eng_poll(b.dev, &next);
	assert_int_equal(eng_dev_active_qps(a.dev), 0);
	assert_int_equal(eng_dev_active_qps(b.dev), 0);
	one_message(&a, &b, ENG_WR_SEND, 3000, 31);	/* posting woke it */
	eng_poll(a.dev, &next);
	eng_poll(b.dev, &next);
	assert_int_equal(eng_dev_active_qps(a.dev), 0);
	assert_int_equal(eng_dev_active_qps(b.dev), 0);
	assert_int_equal(next, 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(eng_qp_destroy(idle[i]), 0);
	side_free(&a);
	side_free(&b);
}

static void test_poll_budget(void **state)
{
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_UC, ENG_MTU_256, 10);
	write64k(&a, &b, a.qp, 1, 0, 0);
	assert_int_equal(budget_polls(&a) * ENG_POLL_QP_BUDGET, 256);
	side_free(&a);
	side_free(&b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_256, 20);
	inject_reth(&a, &b, ROCE_RC_READ_REQUEST, 20, SIDE_IOVA, 65536, eng_mr_rkey(b.mr));
	/* 256 responses, 64 a poll */
	assert_int_equal(budget_polls(&b) * ENG_POLL_QP_BUDGET, 256);
	side_free(&a);
	side_free(&b);
}

static struct eng_qp *srq_qp(struct side *s, struct eng_srq *srq, enum eng_qp_type type);
static void srq_connect(struct side *a, struct eng_qp *qa, struct side *b, struct eng_qp *qb,
			enum eng_qp_type type, uint32_t psn);

/* N QPs of a, each connected to one of b, q[0] being a.qp (b.qp). */
static void qp_fan(struct side *a, struct side *b, unsigned int n, struct eng_qp **qa,
		   struct eng_qp **qb, uint32_t psn)
{
	unsigned int i;

	qa[0] = a->qp;
	qb[0] = b->qp;
	for (i = 1; i < n; i++) {
		qa[i] = srq_qp(a, NULL, ENG_QPT_RC);
		qb[i] = srq_qp(b, NULL, ENG_QPT_RC);
		srq_connect(a, qa[i], b, qb[i], ENG_QPT_RC, psn + 1000 * i);
	}
}

/* Undo qp_fan and the sides. */
static void qp_fan_free(struct side *a, struct side *b, unsigned int n, struct eng_qp **qa,
			struct eng_qp **qb)
{
	unsigned int i;

	for (i = 1; i < n; i++) {
		assert_int_equal(eng_qp_destroy(qa[i]), 0);
		assert_int_equal(eng_qp_destroy(qb[i]), 0);
	}
	side_free(a);
	side_free(b);
}

/* One 64 B WRITE on each of the N QPs qa into b's memory at 0x100000 + 64 i,
 * of a's first 64 bytes filled with SEED; unsignaled: N completions would
 * overflow the side's CQ (an error would still complete, and put the QP in
 * ERR). */
static void fan_writes(struct side *a, struct side *b, struct eng_qp **qa, unsigned int n,
		       uint8_t seed)
{
	struct eng_sge s = { SIDE_IOVA, 64, eng_mr_lkey(a->mr) };
	struct eng_send_wr wr = { .opcode = ENG_WR_RDMA_WRITE, .sg_list = &s, .num_sge = 1 };
	unsigned int i;

	fill(a->mem, 64, seed);
	wr.rdma.rkey = eng_mr_rkey(b->mr);
	for (i = 0; i < n; i++) {
		wr.wr_id = i;
		wr.rdma.remote_addr = SIDE_IOVA + 0x100000 + (uint64_t)i * 64;
		assert_int_equal(eng_post_send(qa[i], &wr), 0);
	}
}

/* One path, one window (cc.c): N QPs to one destination put about one
 * window into the wire at first, not N of them. */
static void test_cc_shared_window(void **state)
{
	struct eng_qp *qa[4], *qb[4];
	struct eng_path_info info[4];
	struct side a, b;
	unsigned int i, n = 0;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 100);
	qp_fan(&a, &b, 4, qa, qb, 100);
	for (i = 0; i < 4; i++) {
		write64k(&a, &b, qa[i], 1, 0, 0);
		write64k(&a, &b, qa[i], 2, 0, 0);	/* 128 packets each */
		assert_int_equal(eng_qp_cwnd(qa[i]), 128);
	}
	while (eng_poll(a.dev, &(uint64_t){ 0 }))
		;
	n = sent_frames(&a);
	print_message("4 QPs of 128 packets each: %u sent before any ACK\n", n);
	/* one window, and a packet for each QP that had none in flight */
	assert_true(n >= 128 && n <= 128 + 4);
	assert_true(eng_qp_counters(qa[3])->c[ENG_CNT_CC_HELD] +
		    eng_qp_counters(qa[2])->c[ENG_CNT_CC_HELD] > 0);
	/* what vrdmactl stats shows of it: one path, its 4 QPs, the window full */
	assert_int_equal(eng_dev_paths(a.dev, info, 4), 1);
	assert_memory_equal(info[0].dgid, b.gid, 16);
	assert_int_equal(info[0].qps, 4);
	assert_int_equal(info[0].cwnd, 128);
	assert_int_equal(info[0].inflight, n);
	qp_fan_free(&a, &b, 4, qa, qb);
}

/* Thousands of QPs to one destination, a WRITE each (issue 30): a QP with
 * nothing in flight may send past a full window, so that none starves, but
 * the path never has more than ENG_CC_MAX (1024) packets in flight; the
 * rest follow as ACKs come, and every WRITE lands. */
static void test_cc_many_qps(void **state)
{
	enum { NQP = 2048, PATH_MAX_INFLIGHT = 1024 };
	struct eng_qp **qa = calloc(NQP, sizeof(*qa)), **qb = calloc(NQP, sizeof(*qb));
	struct eng_path_info info;
	struct side a, b;
	struct eng_wc wc;
	unsigned int i, n;

	(void)state;
	assert_non_null(qa);
	assert_non_null(qb);
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 400);
	qp_fan(&a, &b, NQP, qa, qb, 400);
	fan_writes(&a, &b, qa, NQP, 91);
	while (eng_poll(a.dev, &(uint64_t){ 0 }))
		;
	n = a.wire->n;
	assert_int_equal(eng_dev_paths(a.dev, &info, 1), 1);
	print_message("%u QPs of one WRITE each: %u sent before any ACK, window %u, %u in flight\n",
		      NQP, n, info.cwnd, info.inflight);
	assert_true(n <= PATH_MAX_INFLIGHT);
	assert_int_equal(info.inflight, n);
	pump(&a, &b);
	if (eng_cq_poll(a.cq, &wc, 1) == 1)
		fail_msg("WRITE %lu: status %d", (unsigned long)wc.wr_id, wc.status);
	for (i = 0; i < NQP; i++) {
		assert_int_equal(eng_qp_state(qa[i]), ENG_QPS_RTS);
		if (memcmp(b.mem + 0x100000 + (size_t)i * 64, a.mem, 64))
			fail_msg("QP %u: the data differs", i);
	}
	qp_fan_free(&a, &b, NQP, qa, qb);
	free(qa);
	free(qb);
}

/* Thousands of QPs into a starved receiver (issue 30: two TCG guests on two
 * cores left a vrdmad's worker too little CPU to drain its receive frames):
 * 2048 QPs, a WRITE each, into a queue of 256 frames drained at one per
 * 20 us, so that most of the first window is lost. The QPs' tail-loss probes
 * share their path's window (a window of probes per probe timeout), not one
 * per QP per timeout, which put 2756 probes into the full queue: recovery
 * costs fewer packets than the messages themselves (3522 resent before),
 * and every WRITE lands with no QP in RETRY_EXC. */
static void test_cc_many_qps_starved(void **state)
{
	enum { NQP = 2048, PACE_NS = 20000 };
	struct eng_qp **qa = calloc(NQP, sizeof(*qa)), **qb = calloc(NQP, sizeof(*qb));
	uint64_t t0, took, probes = 0, resent = 0, timeouts = 0;
	struct side a, b;
	struct eng_wc wc;
	unsigned int i;

	(void)state;
	assert_non_null(qa);
	assert_non_null(qb);
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 450);
	qp_fan(&a, &b, NQP, qa, qb, 450);
	wire_faults.a_pace_ns = PACE_NS;
	wire_faults.a_queue = 256;
	fan_writes(&a, &b, qa, NQP, 93);
	t0 = clock_ns;
	if (!pump_for(&a, &b, 10ull * 1000000000))
		fail_msg("starved incast: not done in 10 s, %u dropped at the queue", a_queue_drops);
	took = clock_ns - t0;
	if (eng_cq_poll(a.cq, &wc, 1) == 1)
		fail_msg("WRITE %lu: status %d", (unsigned long)wc.wr_id, wc.status);
	for (i = 0; i < NQP; i++) {
		const struct eng_counters *c = eng_qp_counters(qa[i]);

		probes += c->c[ENG_CNT_CC_PROBES];
		resent += c->c[ENG_CNT_RETRANSMITTED_PKTS];
		timeouts += c->c[ENG_CNT_RETRY_TIMEOUT];
		assert_int_equal(eng_qp_state(qa[i]), ENG_QPS_RTS);
		if (memcmp(b.mem + 0x100000 + (size_t)i * 64, a.mem, 64))
			fail_msg("QP %u: the data differs", i);
	}
	print_message("starved incast: %u WRITEs in %.2f ms (the queue alone: %.2f ms), %lu probes, "
		      "%lu resent, %lu timeouts, %u dropped at the queue\n",
		      NQP, took / 1e6, NQP * PACE_NS / 1e6, (unsigned long)probes,
		      (unsigned long)resent, (unsigned long)timeouts, a_queue_drops);
	assert_true(resent < NQP);
	qp_fan_free(&a, &b, NQP, qa, qb);
	free(qa);
	free(qb);
}

/* The window halves on a loss (a PSN-sequence NAK), once per window of
 * packets, and grows back as ACKs come. */
static void test_cc_loss_cut(void **state)
{
	struct side a, b;
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 200);
	write64k(&a, &b, a.qp, 1, 0, ENG_SEND_SIGNALED);
	eng_poll(a.dev, &(uint64_t){ 0 });
	transmit(&a);
	/* the 3rd packet of 64 lost: b NAKs the gap once */
	free(flight[2].f.data);
	memmove(&flight[2], &flight[3], (nflight - 3) * sizeof(flight[0]));
	nflight--;
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_NAK_RCVD_PSN], 1);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_CC_CUTS], 1);
	/* 128 / 2 after the cut, then the resent packets' ACKs: +ENG_CC_AI (8)
	 * per window */
	print_message("window after one loss and the rest: %u\n", eng_qp_cwnd(a.qp));
	assert_true(eng_qp_cwnd(a.qp) >= 70 && eng_qp_cwnd(a.qp) <= 72);
	side_free(&a);
	side_free(&b);
}

/* Incast into a slow receiver (issue 26): 8 QPs, 4 MiB of WRITEs, into b
 * through a queue of 256 frames drained at one per microsecond (a TCG
 * guest's virtio-net ring). Every WRITE completes, every byte lands, and
 * the transfer takes at most twice the time the queue needs for it. */
static void test_cc_incast(void **state)
{
	enum { NQP = 8, NWR = 8, LEN = 65536 };
	struct eng_qp *qa[NQP], *qb[NQP];
	struct eng_sge s = { SIDE_IOVA, LEN, 0 };
	struct eng_send_wr wr = { .opcode = ENG_WR_RDMA_WRITE, .sg_list = &s, .num_sge = 1,
				  .send_flags = ENG_SEND_SIGNALED };
	uint64_t t0, pkts = (uint64_t)NQP * NWR * LEN / 1024, resent = 0, timeouts = 0;
	struct side a, b;
	struct eng_wc wc;
	unsigned int i, k, ok = 0;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 300);
	qp_fan(&a, &b, NQP, qa, qb, 300);
	wire_faults.a_pace_ns = 1000;
	wire_faults.a_queue = 64;
	fill(a.mem, LEN, 77);
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.rkey = eng_mr_rkey(b.mr);
	for (i = 0; i < NQP; i++)
		for (k = 0; k < NWR; k++) {
			wr.wr_id = i * NWR + k;
			wr.rdma.remote_addr = SIDE_IOVA + 0x100000 + (uint64_t)i * LEN;
			assert_int_equal(eng_post_send(qa[i], &wr), 0);
		}
	t0 = clock_ns;
	if (!pump_for(&a, &b, 10ull * 1000000000)) {
		for (i = 0; i < NQP; i++) {
			const struct eng_counters *c = eng_qp_counters(qa[i]);

			print_message("QP %u: state %d cwnd %u", i, eng_qp_state(qa[i]), eng_qp_cwnd(qa[i]));
			for (k = 0; k < ENG_CNT_MAX; k++)
				if (c->c[k])
					print_message(" %s=%lu", eng_counter_name(k), (unsigned long)c->c[k]);
			print_message("\n");
		}
		fail_msg("incast: not done in 10 s, %u dropped at the queue", a_queue_drops);
	}
	while (eng_cq_poll(a.cq, &wc, 1) == 1) {
		if (wc.status != ENG_WC_SUCCESS)
			fail_msg("WRITE %lu: status %d", (unsigned long)wc.wr_id, wc.status);
		ok++;
	}
	for (i = 0; i < NQP; i++) {
		resent += eng_qp_counters(qa[i])->c[ENG_CNT_RETRANSMITTED_PKTS];
		timeouts += eng_qp_counters(qa[i])->c[ENG_CNT_RETRY_TIMEOUT];
		if (memcmp(b.mem + 0x100000 + (size_t)i * LEN, a.mem, LEN))
			fail_msg("QP %u: the data differs", i);
	}
	print_message("incast: %u of %u WRITEs in %.2f ms (the queue alone: %.2f ms), "
		      "%lu resent, %lu timeouts, %u dropped at the queue, window %u\n",
		      ok, NQP * NWR, (clock_ns - t0) / 1e6, pkts * wire_faults.a_pace_ns / 1e6,
		      (unsigned long)resent, (unsigned long)timeouts, a_queue_drops,
		      eng_qp_cwnd(qa[0]));
	assert_int_equal(ok, NQP * NWR);
	assert_true(clock_ns - t0 <= 2 * pkts * wire_faults.a_pace_ns);
	qp_fan_free(&a, &b, NQP, qa, qb);
}

/* A slow responder, nothing lost: b's ACKs leave it one per 3 ms, longer
 * than the probe timeout. The probes that fire send one packet each and
 * cut nothing; everything completes with few packets sent twice. */
static void test_cc_slow_acks(void **state)
{
	struct side a, b;
	struct eng_wc wc;
	unsigned int i;
	uint64_t resent, probes;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 500);
	wire_faults.b_pace_ns = 3000000;
	for (i = 0; i < 16; i++)
		write64k(&a, &b, a.qp, i, 0x100000, ENG_SEND_SIGNALED);
	pump(&a, &b);
	for (i = 0; i < 16; i++) {
		wc = poll_one(&a);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
	}
	resent = eng_qp_counters(a.qp)->c[ENG_CNT_RETRANSMITTED_PKTS];
	probes = eng_qp_counters(a.qp)->c[ENG_CNT_CC_PROBES];
	print_message("slow ACKs: %lu probes, %lu of 1024 packets resent, %lu cuts, window %u\n",
		      (unsigned long)probes, (unsigned long)resent,
		      (unsigned long)eng_qp_counters(a.qp)->c[ENG_CNT_CC_CUTS], eng_qp_cwnd(a.qp));
	assert_true(resent <= probes && resent < 1024 / 20);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_CC_CUTS], 0);
	side_free(&a);
	side_free(&b);
}

/* ECN (annex A17.9): a's frames go out ECN-capable; b answers those the
 * wire marked CE with CNPs (DSCP 48, ECT(0), as ConnectX), at most one per
 * cnp_interval_ns; each CNP reaches a's QP, which cuts its window. With ECN
 * off, frames are not ECN-capable and no CNP is sent. */
static void test_ecn_cnp(void **state)
{
	const struct eng_cc_config off = { .ecn = false, .cnp_interval_ns = 50000 };
	const struct eng_counters *ca, *cb;
	uint64_t t0, took;
	struct side a, b;
	struct eng_wc wc;
	unsigned int i, pass;

	(void)state;
	for (pass = 0; pass < 2; pass++) {
		pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 400);
		if (pass) {
			eng_dev_set_cc(a.dev, &off);
			eng_dev_set_cc(b.dev, &off);
		}
		wire_faults.ce = 20;
		wire_faults.a_pace_ns = 1000;
		wire_faults.a_queue = 1024;
		for (i = 0; i < 16; i++)
			write64k(&a, &b, a.qp, i, 0x100000, ENG_SEND_SIGNALED);
		t0 = clock_ns;
		pump(&a, &b);
		took = clock_ns - t0;
		for (i = 0; i < 16; i++) {
			wc = poll_one(&a);
			assert_int_equal(wc.status, ENG_WC_SUCCESS);
		}
		ca = eng_qp_counters(a.qp);
		cb = eng_qp_counters(b.qp);
		print_message("ECN %s: %u of a's frames not ECN-capable, %u marked CE, b saw %lu, "
			      "sent %lu CNPs (TOS %#x) in %.2f ms, a got %lu, cut %lu times, window %u\n",
			      pass ? "off" : "on", a_not_ect, a_marked,
			      (unsigned long)cb->c[ENG_CNT_ECN_CE], (unsigned long)cb->c[ENG_CNT_CNP_SENT],
			      b_cnp_tos, took / 1e6, (unsigned long)ca->c[ENG_CNT_CNP_RCVD],
			      (unsigned long)ca->c[ENG_CNT_CC_CNP_CUTS], eng_qp_cwnd(a.qp));
		if (!pass) {
			assert_int_equal(a_not_ect, 0);
			assert_true(a_marked > 0 && cb->c[ENG_CNT_ECN_CE] == a_marked);
			assert_true(cb->c[ENG_CNT_CNP_SENT] >= 1 && b_cnps == cb->c[ENG_CNT_CNP_SENT]);
			assert_true(cb->c[ENG_CNT_CNP_SENT] <= took / 50000 + 1);
			assert_true(cb->c[ENG_CNT_CNP_SENT] < a_marked);
			assert_int_equal(b_cnp_tos, 0xc2);
			assert_int_equal(ca->c[ENG_CNT_CNP_RCVD], cb->c[ENG_CNT_CNP_SENT]);
			assert_true(ca->c[ENG_CNT_CC_CNP_CUTS] >= 1 &&
				    ca->c[ENG_CNT_CC_CNP_CUTS] <= ca->c[ENG_CNT_CNP_RCVD]);
			assert_true(eng_qp_cwnd(a.qp) < 128);
		} else {
			assert_true(a_not_ect > 0 && a_marked == 0);
			assert_int_equal(cb->c[ENG_CNT_CNP_SENT], 0);
			assert_int_equal(b_cnps, 0);
		}
		side_free(&a);
		side_free(&b);
	}
}

/* ECN on UD: b answers CE-marked datagrams with CNPs to the QP their DETH
 * names, at the GID and MAC they came from, at most one per
 * cnp_interval_ns; a's UD QP counts them (UD has no window to cut). */
static void test_ecn_cnp_ud(void **state)
{
	struct eng_sge s = { SIDE_IOVA, 1000, 0 }, r = { SIDE_IOVA + 8192, 4096 + 40, 0 };
	struct eng_ah_attr ah = { .port_num = 1 };
	struct eng_send_wr wr = { .opcode = ENG_WR_SEND, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct eng_recv_wr rwr = { .sg_list = &r, .num_sge = 1 };
	const struct eng_counters *ca, *cb;
	struct side a, b;
	unsigned int i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_UD, ENG_MTU_1024, 6);
	wire_faults.ce = 100;
	ud_to(&a, &b, &s, &r, &ah, &wr);
	for (i = 0; i < 8; i++) {
		assert_int_equal(eng_post_recv(b.qp, &rwr), 0);
		assert_int_equal(eng_post_send(a.qp, &wr), 0);
		pump(&a, &b);
		assert_int_equal(poll_one(&a).status, ENG_WC_SUCCESS);
		assert_int_equal(poll_one(&b).status, ENG_WC_SUCCESS);
		clock_ns += 100000;	/* past cnp_interval_ns */
	}
	ca = eng_qp_counters(a.qp);
	cb = eng_qp_counters(b.qp);
	print_message("UD: %u marked CE, b saw %lu, sent %lu CNPs, a got %lu\n", a_marked,
		      (unsigned long)cb->c[ENG_CNT_ECN_CE], (unsigned long)cb->c[ENG_CNT_CNP_SENT],
		      (unsigned long)ca->c[ENG_CNT_CNP_RCVD]);
	assert_int_equal(a_marked, 8);
	assert_int_equal(cb->c[ENG_CNT_ECN_CE], 8);
	assert_int_equal(cb->c[ENG_CNT_CNP_SENT], 8);
	assert_int_equal(b_cnps, 8);
	assert_int_equal(b_cnp_tos, 0xc2);
	assert_int_equal(ca->c[ENG_CNT_CNP_RCVD], 8);
	side_free(&a);
	side_free(&b);
}

/* An atomic request from one side to the other, built as a peer would. */
static void inject_atomic(struct side *from, struct side *to, uint8_t opcode, uint32_t psn,
			  uint64_t off, uint32_t rkey)
{
	struct roce_hdrs h = { .opcode = opcode, .pkey = 0xffff, .dqpn = eng_qp_num(to->qp),
			       .psn = psn, .ackreq = true,
			       .atomic = { SIDE_IOVA + off, rkey, 1, 0 } };

	inject_hdrs(from, to, &h);
}

/* RC/UC packets from anyone but the QP's peer are dropped and counted (a
 * third host that learned the QPN must not inject requests or fake ACKs);
 * the peer's own go through. */
static void test_spoofed_source(void **state)
{
	static struct side evil;	/* only its GID is used */
	struct side a, b;
	const struct eng_counters *cb, *ca;
	struct eng_sge r = { 0x10000000, 4096, 0 };
	struct eng_recv_wr rw = { .wr_id = 5, .sg_list = &r, .num_sge = 1 };
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 700);
	memcpy(evil.gid, a.gid, 16);
	evil.gid[15] = 9;
	r.lkey = eng_mr_lkey(b.mr);
	assert_int_equal(eng_post_recv(b.qp, &rw), 0);
	cb = eng_qp_counters(b.qp);
	ca = eng_qp_counters(a.qp);
	/* a SEND at the PSN b expects, from the wrong host */
	inject(&evil, &b, ROCE_RC_SEND_ONLY, 700, 0, eng_qp_num(b.qp));
	assert_int_equal(cb->c[ENG_CNT_DROP_ADDRESS], 1);
	assert_int_equal(eng_cq_poll(b.cq, &wc, 1), 0);
	/* an ACK for a PSN a has not sent: dropped before the completer looks */
	inject(&evil, &a, ROCE_RC_ACK, 700 ^ 0x5555, 0x1f, eng_qp_num(a.qp));
	assert_int_equal(ca->c[ENG_CNT_DROP_ADDRESS], 1);
	assert_int_equal(ca->c[ENG_CNT_DROP_GHOST_ACK], 0);
	/* the same SEND from a is taken */
	inject(&a, &b, ROCE_RC_SEND_ONLY, 700, 0, eng_qp_num(b.qp));
	assert_int_equal(cb->c[ENG_CNT_DROP_ADDRESS], 1);
	wc = poll_one(&b);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(eng_dev_counters(b.dev)->c[ENG_CNT_DROP_ADDRESS], 1);
	side_free(&a);
	side_free(&b);
}

static void test_conformance(void **state)
{
	struct side a, b;
	struct eng_qp_attr at = { .qp_state = ENG_QPS_RESET };
	struct eng_wc wc;

	(void)state;
	/* A ghost ACK (a PSN never sent) changes nothing. */
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 500);
	inject(&b, &a, ROCE_RC_ACK, 900, 0x1f, eng_qp_num(a.qp));
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_DROP_GHOST_ACK], 1);
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_RTS);
	one_message(&a, &b, ENG_WR_SEND, 3000, 1);	/* still works */

	/* A WRITE_MIDDLE with no message open: NAK invalid request, both in ERR. */
	inject(&a, &b, ROCE_RC_WRITE_MIDDLE, 500 ^ 0x5555, 0, eng_qp_num(b.qp));
	/* b's expected PSN moved with the SEND above: send at the right PSN */
	side_free(&a);
	side_free(&b);

	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_256, 600);
	inject(&a, &b, ROCE_RC_WRITE_MIDDLE, 600, 0, eng_qp_num(b.qp));
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_INVALID], 1);
	assert_int_equal(eng_qp_state(b.qp), ENG_QPS_ERR);
	pump(&a, &b);	/* the NAK reaches a, which has nothing outstanding */

	/* A packet for a QP in RESET is dropped and counted. */
	assert_int_equal(eng_qp_modify(b.qp, &at, ENG_QP_STATE), 0);
	inject(&a, &b, ROCE_RC_SEND_ONLY, 600, 0, eng_qp_num(b.qp));
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DROP_QP_STATE], 1);
	assert_int_equal(eng_cq_poll(b.cq, &wc, 1), 0);

	/* A packet for no QP at all: counted by the device. */
	inject(&a, &b, ROCE_RC_SEND_ONLY, 600, 0, 0xabcdef);
	assert_int_equal(eng_dev_counters(b.dev)->c[ENG_CNT_DROP_NO_QP], 1);
	side_free(&a);
	side_free(&b);
}

/* ---- shared receive queues ---- */

/* Quiet within 1 s of fake time: a QP stuck in RNR NAKs fails at once. */
#define SRQ_PUMP_NS 1000000000ull

/* A QP of s on srq (RC unless UD), created beside s->qp. */
static struct eng_qp *srq_qp(struct side *s, struct eng_srq *srq, enum eng_qp_type type)
{
	struct eng_qp_init_attr init = {
		.qp_type = type, .send_cq = s->cq, .recv_cq = s->cq, .srq = srq,
		.cap = { .max_send_wr = 16, .max_send_sge = 2, .max_recv_wr = 99 },
	};
	struct eng_qp *qp;

	assert_int_equal(eng_qp_create(s->pd, &init, &qp), 0);
	return qp;
}

/* Connect qa of a to qb of b (both ways), as pair_init does for a->qp. */
static void srq_connect(struct side *a, struct eng_qp *qa, struct side *b, struct eng_qp *qb,
			enum eng_qp_type type, uint32_t psn)
{
	struct side x = *a, y = *b;

	x.qp = qa;
	y.qp = qb;
	x.peer = &y;
	y.peer = &x;
	connect_qp(&x, type, ENG_MTU_1024, psn, psn ^ 0x5555);
	connect_qp(&y, type, ENG_MTU_1024, psn ^ 0x5555, psn);
}

/* Two RC pairs, a's QPs q[0], q[1] to b's q[2], q[3] on srq (of b.pd). */
static void srq_pairs(struct side *a, struct side *b, struct eng_srq *srq, struct eng_qp *q[4],
		      uint32_t psn)
{
	q[0] = srq_qp(a, NULL, ENG_QPT_RC);
	q[1] = srq_qp(a, NULL, ENG_QPT_RC);
	q[2] = srq_qp(b, srq, ENG_QPT_RC);
	q[3] = srq_qp(b, srq, ENG_QPT_RC);
	srq_connect(a, q[0], b, q[2], ENG_QPT_RC, psn);
	srq_connect(a, q[1], b, q[3], ENG_QPT_RC, psn + 100);
}

/* One RC pair: a's *a1 to b's *b1 on a new SRQ of sa (of b.pd). */
static struct eng_srq *srq_pair(struct side *a, struct side *b, const struct eng_srq_attr *sa,
				uint32_t psn, struct eng_qp **a1, struct eng_qp **b1)
{
	struct eng_srq *srq;

	assert_int_equal(eng_srq_create(b->pd, sa, &srq), 0);
	*a1 = srq_qp(a, NULL, ENG_QPT_RC);
	*b1 = srq_qp(b, srq, ENG_QPT_RC);
	srq_connect(a, *a1, b, *b1, ENG_QPT_RC, psn);
	return srq;
}

/* Undo srq_pair and the sides. */
static void srq_pair_free(struct side *a, struct side *b, struct eng_srq *srq, struct eng_qp *a1,
			  struct eng_qp *b1)
{
	assert_int_equal(eng_qp_destroy(b1), 0);
	assert_int_equal(eng_srq_destroy(srq), 0);
	assert_int_equal(eng_qp_destroy(a1), 0);
	side_free(a);
	side_free(b);
}

/* Undo srq_pairs and the sides: the SRQ is BUSY until its last QP goes. */
static void srq_pairs_free(struct side *a, struct side *b, struct eng_srq *srq, struct eng_qp *q[4])
{
	assert_int_equal(eng_srq_destroy(srq), -EBUSY);
	assert_int_equal(eng_qp_destroy(q[2]), 0);
	assert_int_equal(eng_srq_destroy(srq), -EBUSY);
	assert_int_equal(eng_qp_destroy(q[3]), 0);
	assert_int_equal(eng_srq_destroy(srq), 0);
	assert_int_equal(eng_qp_destroy(q[0]), 0);
	assert_int_equal(eng_qp_destroy(q[1]), 0);
	side_free(a);
	side_free(b);
}

static void srq_post(struct eng_srq *srq, struct side *s, uint64_t wr_id, uint64_t off,
		     uint32_t len)
{
	struct eng_sge sge = { SIDE_IOVA + off, len, eng_mr_lkey(s->mr) };
	struct eng_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	assert_int_equal(eng_srq_post_recv(srq, &wr), 0);
}

static void srq_send(struct eng_qp *qp, struct side *s, uint64_t wr_id, uint64_t off,
		     uint32_t len, const struct eng_ah_attr *ah, uint32_t dqpn)
{
	struct eng_sge sge = { SIDE_IOVA + off, len, eng_mr_lkey(s->mr) };
	struct eng_send_wr wr = { .wr_id = wr_id, .opcode = ENG_WR_SEND,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &sge, .num_sge = 1 };

	wr.ud.ah = ah;
	wr.ud.remote_qpn = dqpn;
	wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(eng_post_send(qp, &wr), 0);
}

/* Two RC QPs of b on one SRQ: WQEs go in posting order to whichever QP a
 * message arrives on, the completion names that QP (IBA 10.2.9.5), a
 * multi-packet message keeps its WQE to the end; posting to such a QP's
 * own RQ is refused. */
static void test_srq_shared(void **state)
{
	struct eng_srq_attr sa = { .max_wr = 8, .max_sge = 2 };
	struct eng_qp *q[4], *a1, *a2, *b1, *b2;
	struct eng_srq *srq;
	struct eng_recv_wr rwr = { .wr_id = 1 };
	struct eng_wc wc;
	struct side a, b;
	unsigned int i;
	const struct { struct eng_qp **from, **to; uint32_t len; } msgs[] = {
		{ &a1, &b1, 100 }, { &a2, &b2, 3000 }, { &a1, &b1, 2500 }, { &a2, &b2, 1 },
	};

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 70);
	assert_int_equal(eng_srq_create(b.pd, &sa, &srq), 0);
	srq_pairs(&a, &b, srq, q, 100);
	a1 = q[0], a2 = q[1], b1 = q[2], b2 = q[3];
	assert_int_equal(eng_post_recv(b1, &rwr), -EINVAL);
	for (i = 0; i < 4; i++)
		srq_post(srq, &b, 10 + i, 0x10000 * (i + 1), 4096);
	/* messages one after the other: WQE i to message i, whatever its QP */
	for (i = 0; i < 4; i++) {
		fill(a.mem + 0x1000, msgs[i].len, i);
		srq_send(*msgs[i].from, &a, i, 0x1000, msgs[i].len, NULL, 0);
		assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
		wc = poll_one(&a);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		wc = poll_one(&b);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 10 + i);
		assert_int_equal(wc.opcode, ENG_WC_RECV);
		assert_int_equal(wc.byte_len, msgs[i].len);
		assert_int_equal(wc.qp_num, eng_qp_num(*msgs[i].to));
		assert_memory_equal(b.mem + 0x10000 * (i + 1), a.mem + 0x1000, msgs[i].len);
	}
	assert_int_equal(eng_srq_count(srq), 0);
	/* both at once (4 and 3 packets): each message whole in its own WQE */
	srq_post(srq, &b, 20, 0x50000, 4096);
	srq_post(srq, &b, 21, 0x60000, 4096);
	fill(a.mem + 0x1000, 4000, 7);
	fill(a.mem + 0x3000, 3000, 8);
	srq_send(a1, &a, 1, 0x1000, 4000, NULL, 0);
	srq_send(a2, &a, 2, 0x3000, 3000, NULL, 0);
	assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
	for (i = 0; i < 2; i++) {
		wc = poll_one(&b);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_memory_equal(b.mem + (wc.wr_id == 20 ? 0x50000 : 0x60000),
				    a.mem + (wc.qp_num == eng_qp_num(b1) ? 0x1000 : 0x3000),
				    wc.byte_len);
		assert_int_equal(wc.byte_len, wc.qp_num == eng_qp_num(b1) ? 4000 : 3000);
	}
	srq_pairs_free(&a, &b, srq, q);
}

/* An empty SRQ: RC answers RNR NAK (9.7.5.2.8) until a WQE is posted, then
 * the message gets through; the SRQ's limit event fires once, when a QP
 * takes the WQE that leaves fewer than srq_limit (10.2.9.4), and is then
 * disarmed. */
static void test_srq_rnr_limit(void **state)
{
	struct eng_srq_attr sa = { .max_wr = 8, .max_sge = 1 }, q;
	struct eng_qp *a1, *b1;
	struct eng_srq *srq;
	struct eng_wc wc;
	struct side a, b;
	unsigned int i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 80);
	srq = srq_pair(&a, &b, &sa, 300, &a1, &b1);
	srq_send(a1, &a, 1, 0x1000, 200, NULL, 0);
	assert_false(pump_for(&a, &b, 10000000));
	assert_true(eng_qp_counters(b1)->c[ENG_CNT_NAK_SENT_RNR] > 10);
	assert_true(eng_qp_counters(a1)->c[ENG_CNT_RETRY_RNR] > 10);
	assert_int_equal(eng_cq_poll(b.cq, &wc, 1), 0);
	srq_post(srq, &b, 50, 0x10000, 256);
	assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	wc = poll_one(&b);
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.qp_num, eng_qp_num(b1));

	/* limit 3 over 5 WQEs: 5 -> 4 -> 3 no event, 3 -> 2 the event, then none */
	srq_limit_events = 0;
	sa.srq_limit = 9;
	assert_int_equal(eng_srq_modify(srq, &sa, ENG_SRQ_LIMIT), -EINVAL);
	sa.srq_limit = 3;
	assert_int_equal(eng_srq_modify(srq, &sa, ENG_SRQ_LIMIT), 0);
	assert_int_equal(eng_srq_query(srq, &q), 0);
	assert_int_equal(q.srq_limit, 3);
	for (i = 0; i < 5; i++)
		srq_post(srq, &b, 60 + i, 0x10000 + 0x1000 * i, 256);
	for (i = 0; i < 5; i++) {
		srq_send(a1, &a, 2, 0x1000, 10, NULL, 0);
		assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
		poll_one(&a);
		wc = poll_one(&b);
		assert_int_equal(wc.wr_id, 60 + i);
		assert_int_equal(srq_limit_events, i < 2 ? 0 : 1);
		if (i == 2) {
			assert_ptr_equal(srq_limit_srq, srq);
			assert_ptr_equal(srq_limit_qp, b1);
			assert_int_equal(eng_srq_query(srq, &q), 0);
			assert_int_equal(q.srq_limit, 0);	/* disarmed */
		}
	}
	srq_pair_free(&a, &b, srq, a1, b1);
}

/* A QP that goes to ERR mid-message completes the SRQ WQE it took with
 * WR_FLUSH_ERR on its own recv CQ (IBA 10.2.9.5) and then raises Last WQE
 * Reached (11.6.3.1), once; the SRQ's other WQEs stay for the other QPs,
 * and the next message takes the next one. */
static void test_srq_flush_held(void **state)
{
	struct eng_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
	struct eng_qp_attr err = { .qp_state = ENG_QPS_ERR };
	struct eng_qp *q[4], *a1, *a2, *b1, *b2;
	struct eng_srq *srq;
	struct eng_wc wc;
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 95);
	assert_int_equal(eng_srq_create(b.pd, &sa, &srq), 0);
	srq_pairs(&a, &b, srq, q, 400);
	a1 = q[0], a2 = q[1], b1 = q[2], b2 = q[3];
	srq_post(srq, &b, 30, 0x10000, 4096);
	srq_post(srq, &b, 31, 0x20000, 4096);
	srq_send(a1, &a, 1, 0x1000, 3000, NULL, 0);	/* 3 packets */
	eng_poll(a.dev, &(uint64_t){ 0 });
	transmit(&a);
	deliver_first(1);				/* b1 holds WQE 30 */
	assert_int_equal(eng_srq_count(srq), 1);
	qp_events = 0;
	last_wqe_cq = b.cq;
	assert_int_equal(eng_qp_modify(b1, &err, ENG_QP_STATE), 0);
	assert_int_equal(qp_events, 1);
	assert_int_equal(qp_event, ENG_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(qp_event_qp, b1);
	wc = last_wqe_flushed;		/* in the CQ by then */
	assert_int_equal(wc.wr_id, 30);
	assert_int_equal(wc.status, ENG_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.qp_num, eng_qp_num(b1));
	assert_cq_empty(&b);
	assert_int_equal(eng_srq_count(srq), 1);
	assert_int_equal(eng_qp_modify(b1, &err, ENG_QP_STATE), 0);
	assert_int_equal(qp_events, 1);
	wire_reset(5);					/* the rest of a1's message */
	srq_send(a2, &a, 2, 0x1000, 100, NULL, 0);
	(void)pump_for(&a, &b, SRQ_PUMP_NS);	/* a1's resends to b1 in ERR: unanswered */
	while (eng_cq_poll(b.cq, &wc, 1) == 1 && wc.qp_num != eng_qp_num(b2))
		;
	assert_int_equal(wc.qp_num, eng_qp_num(b2));
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	srq_pairs_free(&a, &b, srq, q);
}

/* Resizing an SRQ (IBA 11.2.3.3) whose ring has wrapped keeps its WQEs in
 * posting order: messages take them oldest first across the resize, and the
 * new size holds more; not below the WQEs posted; shrinking to what is
 * posted holds no more than that. */
static void test_srq_resize(void **state)
{
	struct eng_srq_attr sa = { .max_wr = 4, .max_sge = 1 }, q;
	struct eng_sge sge = { SIDE_IOVA + 0x30000, 256, 0 };
	struct eng_recv_wr rwr = { .wr_id = 99, .sg_list = &sge, .num_sge = 1 };
	struct eng_qp *a1, *b1;
	struct eng_srq *srq;
	struct eng_wc wc;
	struct side a, b;
	unsigned int i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 96);
	srq = srq_pair(&a, &b, &sa, 450, &a1, &b1);
	for (i = 0; i < 6; i++) {	/* 4, two taken, two more: wrapped */
		srq_post(srq, &b, 40 + i, 0x10000 + 0x1000 * i, 256);
		if (i != 1 && i != 2)
			continue;
		srq_send(a1, &a, i, 0x1000, 10, NULL, 0);
		assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
		poll_one(&a);
		assert_int_equal(poll_one(&b).wr_id, 40 + i - 1);
	}
	assert_int_equal(eng_srq_count(srq), 4);
	sa.max_wr = 3;
	assert_int_equal(eng_srq_modify(srq, &sa, ENG_SRQ_MAX_WR), -EINVAL);
	sa.max_wr = 8;
	assert_int_equal(eng_srq_modify(srq, &sa, ENG_SRQ_MAX_WR), 0);
	assert_int_equal(eng_srq_query(srq, &q), 0);
	assert_int_equal(q.max_wr, 8);
	for (i = 6; i < 10; i++)
		srq_post(srq, &b, 40 + i, 0x10000 + 0x1000 * i, 256);
	sge.lkey = eng_mr_lkey(b.mr);
	assert_int_equal(eng_srq_post_recv(srq, &rwr), -ENOMEM);
	for (i = 2; i < 10; i++) {
		fill(a.mem + 0x1000, 10, i);
		srq_send(a1, &a, i, 0x1000, 10, NULL, 0);
		assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
		poll_one(&a);
		wc = poll_one(&b);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 40 + i);
		assert_memory_equal(b.mem + 0x10000 + 0x1000 * i, a.mem + 0x1000, 10);
	}
	srq_post(srq, &b, 50, 0x10000, 256);
	sa.max_wr = 1;
	assert_int_equal(eng_srq_modify(srq, &sa, ENG_SRQ_MAX_WR), 0);
	assert_int_equal(eng_srq_post_recv(srq, &rwr), -ENOMEM);
	srq_send(a1, &a, 11, 0x1000, 10, NULL, 0);
	assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
	poll_one(&a);
	assert_int_equal(poll_one(&b).wr_id, 50);
	srq_pair_free(&a, &b, srq, a1, b1);
}

/* UD QPs on an SRQ: the GRH area first, completions name the QP; with the
 * SRQ empty the datagram is dropped and counted. */
static void test_srq_ud(void **state)
{
	struct eng_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
	struct eng_ah_attr ah = { .port_num = 1, .hop_limit = 64 };
	struct eng_qp *b1;
	struct eng_srq *srq;
	struct eng_wc wc;
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_UD, ENG_MTU_1024, 90);
	assert_int_equal(eng_srq_create(b.pd, &sa, &srq), 0);
	b1 = srq_qp(&b, srq, ENG_QPT_UD);
	{
		struct side y = b;

		y.qp = b1;
		y.peer = &a;
		connect_qp(&y, ENG_QPT_UD, ENG_MTU_1024, 1, 1);
	}
	memcpy(ah.dgid, b.gid, 16);
	memcpy(ah.dmac, b.mac, 6);
	srq_send(a.qp, &a, 1, 0x1000, 100, &ah, eng_qp_num(b1));
	assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
	poll_one(&a);
	assert_int_equal(eng_qp_counters(b1)->c[ENG_CNT_DROP_UD_NO_RECV], 1);
	srq_post(srq, &b, 7, 0x10000, 200);
	fill(a.mem + 0x1000, 100, 3);
	srq_send(a.qp, &a, 2, 0x1000, 100, &ah, eng_qp_num(b1));
	assert_true(pump_for(&a, &b, SRQ_PUMP_NS));
	poll_one(&a);
	wc = poll_one(&b);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 140);
	assert_int_equal(wc.qp_num, eng_qp_num(b1));
	assert_memory_equal(b.mem + 0x10000 + 40, a.mem + 0x1000, 100);
	assert_int_equal(eng_qp_destroy(b1), 0);
	assert_int_equal(eng_srq_destroy(srq), 0);
	side_free(&a);
	side_free(&b);
}

/* The 64-bit words of the atomic tests, in host order as a CPU keeps them. */
static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

#define ATOMIC_TARGET	0x3008u		/* in b's memory: 8-byte aligned */
#define ATOMIC_RESULT	0x200u		/* in a's memory */

/* Post one atomic from a to the word at off of b's memory through rkey,
 * with a local SGE of 8 bytes split in two (the value lands across both). */
static void post_atomic(struct side *a, enum eng_wr_opcode op, uint64_t off, uint32_t rkey,
			uint64_t compare_add, uint64_t swap, uint64_t wr_id)
{
	struct eng_sge s[2] = {
		{ SIDE_IOVA + ATOMIC_RESULT, 3, eng_mr_lkey(a->mr) },
		{ SIDE_IOVA + ATOMIC_RESULT + 3, 5, eng_mr_lkey(a->mr) },
	};
	struct eng_send_wr wr = {
		.wr_id = wr_id, .opcode = op, .send_flags = ENG_SEND_SIGNALED,
		.sg_list = s, .num_sge = 2,
		.atomic = { SIDE_IOVA + off, compare_add, swap, rkey },
	};

	memset(a->mem + ATOMIC_RESULT, 0xee, 16);
	assert_int_equal(eng_post_send(a->qp, &wr), 0);
}

/* One atomic that succeeds: its completion, and the original value. */
static uint64_t one_atomic(struct side *a, struct side *b, enum eng_wr_opcode op,
			   uint64_t compare_add, uint64_t swap)
{
	struct eng_wc wc;

	post_atomic(a, op, ATOMIC_TARGET, eng_mr_rkey(b->mr), compare_add, swap, 77);
	pump(a, b);
	wc = poll_one(a);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.opcode, op == ENG_WR_ATOMIC_CMP_AND_SWP ? ENG_WC_COMP_SWAP :
			 ENG_WC_FETCH_ADD);
	assert_int_equal(wc.byte_len, 8);
	assert_cq_empty(a);
	assert_cq_empty(b);
	assert_int_equal(a->mem[ATOMIC_RESULT + 8], 0xee);	/* not a byte more */
	return get_u64(a->mem + ATOMIC_RESULT);
}

/* IBA 9.4.5: FETCH_AND_ADD and CMP_AND_SWP on b's memory, the original
 * value returned in a's SGE in host order. */
static void test_atomic_ops(void **state)
{
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 0xffffff);	/* across the PSN wrap */
	put_u64(b.mem + ATOMIC_TARGET, 0x0102030405060708ull);
	assert_true(one_atomic(&a, &b, ENG_WR_ATOMIC_FETCH_AND_ADD, 0x10, 0) ==
		    0x0102030405060708ull);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 0x0102030405060718ull);
	/* the sum wraps at 2^64 */
	assert_true(one_atomic(&a, &b, ENG_WR_ATOMIC_FETCH_AND_ADD, ~0ull, 0) ==
		    0x0102030405060718ull);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 0x0102030405060717ull);
	/* compare equal: swapped */
	assert_true(one_atomic(&a, &b, ENG_WR_ATOMIC_CMP_AND_SWP, 0x0102030405060717ull,
			       0xa1a2a3a4a5a6a7a8ull) == 0x0102030405060717ull);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 0xa1a2a3a4a5a6a7a8ull);
	/* compare unequal: unchanged, the original still returned */
	assert_true(one_atomic(&a, &b, ENG_WR_ATOMIC_CMP_AND_SWP, 5, 6) == 0xa1a2a3a4a5a6a7a8ull);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 0xa1a2a3a4a5a6a7a8ull);
	/* the words around it untouched */
	assert_true(get_u64(b.mem + ATOMIC_TARGET - 8) == 0);
	assert_true(get_u64(b.mem + ATOMIC_TARGET + 8) == 0);
	/* other messages go on after atomics */
	one_message(&a, &b, ENG_WR_SEND, 3000, 2);
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_RTS);
	assert_int_equal(eng_qp_state(b.qp), ENG_QPS_RTS);
	side_free(&a);
	side_free(&b);
}

/* One FETCH_AND_ADD the responder refuses: a's completion status, b's
 * asynchronous event, both QPs in ERR, nothing changed on either side. */
static void refused_atomic(struct side *a, struct side *b, uint64_t off, uint32_t rkey,
			   enum eng_wc_status want, int event)
{
	struct eng_wc wc;

	put_u64(b->mem + ATOMIC_TARGET, 1000);
	qp_events = 0;
	post_atomic(a, ENG_WR_ATOMIC_FETCH_AND_ADD, off, rkey, 1, 0, 9);
	pump(a, b);
	wc = poll_one(a);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, want);
	assert_int_equal(qp_events, 1);
	assert_int_equal(qp_event, event);
	assert_ptr_equal(qp_event_qp, b->qp);
	assert_true(get_u64(b->mem + ATOMIC_TARGET) == 1000);
	assert_true(get_u64(b->mem + ATOMIC_TARGET + 8) == 0);
	assert_int_equal(a->mem[ATOMIC_RESULT], 0xee);
	assert_int_equal(eng_qp_state(a->qp), ENG_QPS_ERR);
	assert_int_equal(eng_qp_state(b->qp), ENG_QPS_ERR);
}

static void test_atomic_refused(void **state)
{
	struct eng_qp_attr at = { .qp_state = ENG_QPS_RTS,
				  .qp_access_flags = ENG_ACCESS_LOCAL_WRITE |
				  ENG_ACCESS_REMOTE_READ | ENG_ACCESS_REMOTE_WRITE };
	struct side a, b;
	struct eng_mr *mr;
	unsigned int k;

	(void)state;
	/* a target not 8-byte aligned: NAK invalid request (rxe: class C) */
	for (k = 1; k < 8; k += 3) {
		pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 30 + k);
		refused_atomic(&a, &b, ATOMIC_TARGET + k, eng_mr_rkey(b.mr),
			       ENG_WC_REM_INV_REQ_ERR, ENG_EVENT_QP_REQ_ERR);
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_ATOMIC_MISALIGNED], 1);
		assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_INVALID], 1);
		assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_ERR_REMOTE_INVALID], 1);
		side_free(&a);
		side_free(&b);
	}
	/* an MR without REMOTE_ATOMIC: remote access error */
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 40);
	assert_int_equal(eng_mr_reg(b.pd, SIDE_IOVA, MEM_SIZE, ENG_ACCESS_LOCAL_WRITE |
				    ENG_ACCESS_REMOTE_READ | ENG_ACCESS_REMOTE_WRITE,
				    flat_mem_map, &b.flat, &mr), 0);
	refused_atomic(&a, &b, ATOMIC_TARGET, eng_mr_rkey(mr), ENG_WC_REM_ACCESS_ERR,
		       ENG_EVENT_QP_ACCESS_ERR);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_NAK_SENT_ACCESS], 1);
	assert_int_equal(eng_mr_dereg(mr), 0);
	side_free(&a);
	side_free(&b);
	/* a QP without REMOTE_ATOMIC (RTS -> RTS takes access flags) */
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 41);
	assert_int_equal(eng_qp_modify(b.qp, &at, ENG_QP_STATE | ENG_QP_ACCESS_FLAGS), 0);
	refused_atomic(&a, &b, ATOMIC_TARGET, eng_mr_rkey(b.mr), ENG_WC_REM_ACCESS_ERR,
		       ENG_EVENT_QP_ACCESS_ERR);
	side_free(&a);
	side_free(&b);
	/* a wrong rkey (its random bits), and a word past the MR's end */
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 42);
	refused_atomic(&a, &b, ATOMIC_TARGET, eng_mr_rkey(b.mr) ^ 0x100, ENG_WC_REM_ACCESS_ERR,
		       ENG_EVENT_QP_ACCESS_ERR);
	side_free(&a);
	side_free(&b);
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 43);
	refused_atomic(&a, &b, MEM_SIZE, eng_mr_rkey(b.mr), ENG_WC_REM_ACCESS_ERR,
		       ENG_EVENT_QP_ACCESS_ERR);
	side_free(&a);
	side_free(&b);
	/* RC only: UC has no atomics (IBA 9.4.5, table of 9.2.1) */
	pair_init(&a, &b, ENG_QPT_UC, ENG_MTU_1024, 44);
	{
		struct eng_sge s = { SIDE_IOVA, 8, eng_mr_lkey(a.mr) };
		struct eng_send_wr wr = { .opcode = ENG_WR_ATOMIC_FETCH_AND_ADD, .sg_list = &s,
					  .num_sge = 1,
					  .atomic = { SIDE_IOVA, 1, 0, eng_mr_rkey(b.mr) } };

		assert_int_equal(eng_post_send(a.qp, &wr), -EINVAL);
		wr.opcode = ENG_WR_ATOMIC_CMP_AND_SWP;
		assert_int_equal(eng_post_send(a.qp, &wr), -EINVAL);
	}
	side_free(&a);
	side_free(&b);
}

/* IBA 9.4.5 / 9.7.5.1.5: an atomic is executed once. A duplicated request,
 * or one sent again because its ATOMIC ACKNOWLEDGE was lost, is answered
 * from the saved original value; the memory changes once. */
static void test_atomic_duplicate(void **state)
{
	struct side a, b;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 50);
	put_u64(b.mem + ATOMIC_TARGET, 100);
	wire_faults.dup_atomic_req = true;
	assert_true(one_atomic(&a, &b, ENG_WR_ATOMIC_FETCH_AND_ADD, 1, 0) == 100);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 101);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_ATOMIC], 1);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_DROP_STALE_ACK], 1);
	wire_faults.dup_atomic_req = false;
	/* the ACK lost: the timer sends the request again (no probe: cc.c
	 * leaves an atomic at the head to the retransmit timer) */
	atomic_ack_seen = 0;
	wire_faults.drop_nth_atomic_ack = 1;
	assert_true(one_atomic(&a, &b, ENG_WR_ATOMIC_CMP_AND_SWP, 101, 555) == 101);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 555);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_TIMEOUT], 1);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_CC_PROBES], 0);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_ATOMIC], 2);
	side_free(&a);
	side_free(&b);
}

/* The ATOMIC ACKNOWLEDGE lost, and the ACK of a WRITE after it arrives:
 * an implied NAK (9.7.5.1.5), the atomic sent again at once (no timeout)
 * and answered from the saved result; both complete, in order. */
static void test_atomic_implied_nak(void **state)
{
	const uint64_t base = SIDE_IOVA;
	struct eng_sge s = { base + 0x1000, 100, 0 };
	struct eng_send_wr wr = { .wr_id = 79, .opcode = ENG_WR_RDMA_WRITE,
				  .send_flags = ENG_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct side a, b;
	struct eng_wc wc;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 60);
	put_u64(b.mem + ATOMIC_TARGET, 7);
	wire_faults.drop_nth_atomic_ack = 1;
	post_atomic(&a, ENG_WR_ATOMIC_FETCH_AND_ADD, ATOMIC_TARGET, eng_mr_rkey(b.mr), 5, 0, 78);
	s.lkey = eng_mr_lkey(a.mr);
	wr.rdma.remote_addr = base + 0x100000;
	wr.rdma.rkey = eng_mr_rkey(b.mr);
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 78);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_int_equal(wc.opcode, ENG_WC_FETCH_ADD);
	assert_true(get_u64(a.mem + ATOMIC_RESULT) == 7);
	wc = poll_one(&a);
	assert_int_equal(wc.wr_id, 79);
	assert_int_equal(wc.status, ENG_WC_SUCCESS);
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 12);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_IMPLIED_NAK], 1);
	assert_int_equal(eng_qp_counters(a.qp)->c[ENG_CNT_RETRY_TIMEOUT], 0);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_ATOMIC], 1);
	side_free(&a);
	side_free(&b);
}

/* 10.8.3.3: at most max_rd_atomic (4 here) atomics in flight; the 5th and
 * 6th wait for the responses. 9.7.5.1.5: the responder keeps
 * max_dest_rd_atomic (4) results: a duplicate of an older one is dropped,
 * not executed. */
static void test_atomic_max_rd_atomic(void **state)
{
	struct eng_sge s[6];
	struct eng_send_wr wr = { .opcode = ENG_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = ENG_SEND_SIGNALED, .num_sge = 1 };
	struct side a, b;
	struct eng_wc wc;
	unsigned int i;

	(void)state;
	pair_init(&a, &b, ENG_QPT_RC, ENG_MTU_1024, 70);
	put_u64(b.mem + ATOMIC_TARGET, 1000);
	wr.atomic.remote_addr = SIDE_IOVA + ATOMIC_TARGET;
	wr.atomic.rkey = eng_mr_rkey(b.mr);
	wr.atomic.compare_add = 1;
	for (i = 0; i < 6; i++) {
		s[i] = (struct eng_sge){ SIDE_IOVA + ATOMIC_RESULT + 8 * i, 8, eng_mr_lkey(a.mr) };
		wr.wr_id = i;
		wr.sg_list = &s[i];
		assert_int_equal(eng_post_send(a.qp, &wr), 0);
	}
	eng_poll(a.dev, &(uint64_t){ 0 });
	assert_int_equal(wires[0].n, 4);
	pump(&a, &b);
	for (i = 0; i < 6; i++) {
		wc = poll_one(&a);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.status, ENG_WC_SUCCESS);
		assert_true(get_u64(a.mem + ATOMIC_RESULT + 8 * i) == 1000 + i);
	}
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 1006);
	/* PSNs 70..75: 70 and 71 are forgotten, 72..75 kept */
	inject_atomic(&a, &b, ROCE_RC_FETCH_ADD, 71, ATOMIC_TARGET, eng_mr_rkey(b.mr));
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DROP_DUPLICATE], 1);
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_ATOMIC], 0);
	inject_atomic(&a, &b, ROCE_RC_FETCH_ADD, 72, ATOMIC_TARGET, eng_mr_rkey(b.mr));
	assert_int_equal(eng_qp_counters(b.qp)->c[ENG_CNT_DUPLICATE_ATOMIC], 1);
	eng_poll(b.dev, &(uint64_t){ 0 });
	assert_int_equal(wires[1].n, 1);
	{	/* the saved result, big-endian on the wire (AtomicAckETH, 9.3.6) */
		const uint8_t *f = wires[1].f[0].data;

		assert_int_equal(f[42], ROCE_RC_ATOMIC_ACK);
		assert_int_equal(f[42 + 12 + 4 + 6], 0x03);	/* 1002 = 0x3ea */
		assert_int_equal(f[42 + 12 + 4 + 7], 0xea);
	}
	pump(&a, &b);	/* a: a stale ACK */
	assert_true(get_u64(b.mem + ATOMIC_TARGET) == 1006);
	assert_int_equal(eng_qp_state(a.qp), ENG_QPS_RTS);
	side_free(&a);
	side_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_send),
		cmocka_unit_test(test_dereg_under_write),
		cmocka_unit_test(test_dereg_under_read),
		cmocka_unit_test(test_fast_reg),
		cmocka_unit_test(test_local_inv_refused),
		cmocka_unit_test(test_send_inv),
		cmocka_unit_test(test_send_inv_bad_key),
		cmocka_unit_test(test_send_inv_other_pd),
		cmocka_unit_test(test_inv_under_write),
		cmocka_unit_test(test_mw),
		cmocka_unit_test(test_mw_lifetime),
		cmocka_unit_test(test_spoofed_source),
		cmocka_unit_test(test_rc_send_imm),
		cmocka_unit_test(test_rc_write),
		cmocka_unit_test(test_rc_write_imm),
		cmocka_unit_test(test_rc_read),
		cmocka_unit_test(test_uc_send),
		cmocka_unit_test(test_uc_send_imm),
		cmocka_unit_test(test_uc_write),
		cmocka_unit_test(test_uc_write_imm),
		cmocka_unit_test(test_inline_unsignaled),
		cmocka_unit_test(test_fence),
		cmocka_unit_test(test_sqd),
		cmocka_unit_test(test_rc_bad_rkey),
		cmocka_unit_test(test_rc_write_wraps),
		cmocka_unit_test(test_ackreq),
		cmocka_unit_test(test_ud_send),
		cmocka_unit_test(test_gsi),
		cmocka_unit_test(test_rc_loss_0),
		cmocka_unit_test(test_rc_loss_1),
		cmocka_unit_test(test_rc_loss_5),
		cmocka_unit_test(test_rc_dup),
		cmocka_unit_test(test_rc_reorder),
		cmocka_unit_test(test_rc_all_faults),
		cmocka_unit_test(test_uc_loss),
		cmocka_unit_test(test_restart_rc),
		cmocka_unit_test(test_restart_objects),
		cmocka_unit_test(test_restore_refused),
		cmocka_unit_test(test_probe_fails_qp),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_retry_exceeded),
		cmocka_unit_test(test_read_response_gap),
		cmocka_unit_test(test_read_slow_responder),
		cmocka_unit_test(test_conformance),
		cmocka_unit_test(test_srq_shared),
		cmocka_unit_test(test_srq_rnr_limit),
		cmocka_unit_test(test_srq_ud),
		cmocka_unit_test(test_srq_flush_held),
		cmocka_unit_test(test_srq_resize),
		cmocka_unit_test(test_atomic_ops),
		cmocka_unit_test(test_atomic_refused),
		cmocka_unit_test(test_atomic_duplicate),
		cmocka_unit_test(test_reth_too_long),
		cmocka_unit_test(test_read_duplicate_tail),
		cmocka_unit_test(test_poll_budget),
		cmocka_unit_test(test_idle_qps),
		cmocka_unit_test(test_cc_shared_window),
		cmocka_unit_test(test_cc_loss_cut),
		cmocka_unit_test(test_cc_incast),
		cmocka_unit_test(test_cc_many_qps),
		cmocka_unit_test(test_cc_many_qps_starved),
		cmocka_unit_test(test_cc_slow_acks),
		cmocka_unit_test(test_ecn_cnp),
		cmocka_unit_test(test_ecn_cnp_ud),
		cmocka_unit_test(test_atomic_implied_nak),
		cmocka_unit_test(test_atomic_max_rd_atomic),
	};
	const char *path = getenv("TRANSPORT_PCAP");
	int r;

	if (path) {
		static const uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };

		pcap = fopen(path, "wb");
		if (pcap)
			fwrite(hdr, sizeof(hdr), 1, pcap);
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	if (pcap)
		fclose(pcap);
	return r;
}
