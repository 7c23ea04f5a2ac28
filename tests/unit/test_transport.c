// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two transport engines over an in-memory wire: every frame one sends is
 * built by the codec, parsed back by it (so every frame passes its checks)
 * and handed to the other. Deterministic: fixed seeds, a fake clock.
 *
 * Covered here: RC and UC SEND / WRITE with and without immediate data at
 * sizes 0, 1, MTU-1, MTU, MTU+1, 64 KiB and 1 MiB for path MTUs 256, 1024
 * and 4096, data checked byte for byte; UD SEND with the GRH area; bad rkey
 * and a WRITE whose address + length wraps 2^64.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine.h"

#define MEM_SIZE	(3u << 20)
#define PAGE		4096u
#define WIRE_MAX	4096

struct frame {
	uint8_t *data;
	uint32_t len;
};

struct side {
	struct eng_dev *dev;
	struct eng_pd *pd;
	struct eng_cq *cq;
	struct eng_qp *qp;
	struct eng_mr *mr;
	uint8_t *mem;
	uint8_t gid[16], mac[6];
	struct side *peer;
	struct frame wire[WIRE_MAX];	/* frames on their way to peer */
	unsigned int nwire;
	uint64_t sent;
};

static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	return 0;
}

static unsigned int tx_alloc(void *ctx, uint32_t len, struct roce_frag *frags, unsigned int max)
{
	struct side *s = ctx;

	(void)max;
	if (s->nwire == WIRE_MAX)
		return 0;
	frags[0].data = malloc(len);
	frags[0].len = len;
	return frags[0].data ? 1 : 0;
}

static void tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct side *s = ctx;

	assert_int_equal(n, 1);
	s->wire[s->nwire].data = frags[0].data;
	s->wire[s->nwire++].len = len;
	s->sent++;
}

static int gid(void *ctx, uint8_t index, uint8_t g[16], uint8_t m[6])
{
	struct side *s = ctx;

	if (index)
		return -ENOENT;
	memcpy(g, s->gid, 16);
	memcpy(m, s->mac, 6);
	return 0;
}

static const struct eng_ops ops = {
	.now_ns = now_ns, .tx_alloc = tx_alloc, .tx_send = tx_send, .gid = gid,
};

/* Flat test memory in pages, so copies cross page boundaries. */
static void *mem_map(void *mem, uint64_t off, uint64_t len, uint64_t *contig)
{
	uint64_t room;

	if (off >= MEM_SIZE)
		return NULL;
	room = PAGE - off % PAGE;
	*contig = len < room ? len : room;
	return (uint8_t *)mem + off;
}

/* Deliver everything on the wire, both ways, until both sides are quiet. */
static void pump(struct side *a, struct side *b)
{
	struct side *s[2] = { a, b };
	bool busy = true;
	int i;

	while (busy) {
		busy = false;
		for (i = 0; i < 2; i++)
			eng_poll(s[i]->dev);
		for (i = 0; i < 2; i++) {
			unsigned int k, n = s[i]->nwire;

			for (k = 0; k < n; k++) {
				struct roce_frag f = { s[i]->wire[k].data, s[i]->wire[k].len };
				struct roce_pkt pkt;
				enum roce_drop why;

				assert_int_equal(roce_parse(&pkt, &f, 1, &why), 0);
				eng_rx(s[i]->peer->dev, &pkt);
				free(f.data);
			}
			s[i]->nwire = 0;
			busy |= n > 0;
		}
	}
}

static void side_init(struct side *s, uint8_t id, enum eng_qp_type type)
{
	struct eng_qp_init_attr init = {
		.qp_type = type,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};

	memset(s, 0, sizeof(*s));
	s->gid[10] = s->gid[11] = 0xff;
	s->gid[12] = 10;
	s->gid[15] = id;
	s->mac[0] = 0x52;
	s->mac[5] = id;
	s->dev = eng_dev_new(&ops, s, 1000 + id);
	assert_non_null(s->dev);
	eng_dev_set_port_mtu(s->dev, ENG_MTU_4096);
	assert_int_equal(eng_pd_alloc(s->dev, &s->pd), 0);
	assert_int_equal(eng_cq_create(s->dev, 256, &s->cq), 0);
	init.send_cq = init.recv_cq = s->cq;
	assert_int_equal(eng_qp_create(s->pd, &init, &s->qp), 0);
	s->mem = calloc(1, MEM_SIZE);
	assert_non_null(s->mem);
	assert_int_equal(eng_mr_reg(s->pd, 0x10000000, MEM_SIZE, ENG_ACCESS_ALL, mem_map,
				    s->mem, &s->mr), 0);
}

static void side_free(struct side *s)
{
	assert_int_equal(eng_qp_destroy(s->qp), 0);
	assert_int_equal(eng_mr_dereg(s->mr), 0);
	assert_int_equal(eng_cq_destroy(s->cq), 0);
	assert_int_equal(eng_pd_free(s->pd), 0);
	eng_dev_free(s->dev);
	free(s->mem);
}

/* RESET -> INIT -> RTR -> RTS, connected to peer. */
static void connect_qp(struct side *s, enum eng_qp_type type, enum eng_mtu mtu, uint32_t sq_psn,
		       uint32_t rq_psn)
{
	struct eng_qp_attr a = { .qp_state = ENG_QPS_INIT, .port_num = 1,
				 .qp_access_flags = ENG_ACCESS_ALL, .qkey = 0x11111111 };
	unsigned int m = ENG_QP_STATE | ENG_QP_PKEY_INDEX | ENG_QP_PORT;

	m |= type == ENG_QPT_UD ? ENG_QP_QKEY : ENG_QP_ACCESS_FLAGS;
	assert_int_equal(eng_qp_modify(s->qp, &a, m), 0);
	a.qp_state = ENG_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = eng_qp_num(s->peer->qp);
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	memcpy(a.ah_attr.dgid, s->peer->gid, 16);
	memcpy(a.ah_attr.dmac, s->peer->mac, 6);
	a.ah_attr.port_num = 1;
	m = ENG_QP_STATE;
	if (type == ENG_QPT_RC)
		m |= ENG_QP_AV | ENG_QP_PATH_MTU | ENG_QP_DEST_QPN | ENG_QP_RQ_PSN |
		     ENG_QP_MAX_DEST_RD_ATOMIC | ENG_QP_MIN_RNR_TIMER;
	else if (type == ENG_QPT_UC)
		m |= ENG_QP_AV | ENG_QP_PATH_MTU | ENG_QP_DEST_QPN | ENG_QP_RQ_PSN;
	assert_int_equal(eng_qp_modify(s->qp, &a, m), 0);
	a.qp_state = ENG_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	m = ENG_QP_STATE | ENG_QP_SQ_PSN;
	if (type == ENG_QPT_RC)
		m |= ENG_QP_TIMEOUT | ENG_QP_RETRY_CNT | ENG_QP_RNR_RETRY | ENG_QP_MAX_QP_RD_ATOMIC;
	assert_int_equal(eng_qp_modify(s->qp, &a, m), 0);
}

static void pair_init(struct side *a, struct side *b, enum eng_qp_type type, enum eng_mtu mtu,
		      uint32_t psn)
{
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
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++)
			one_message(&a, &b, op, sizes[j], i * 100 + j);
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
static void test_uc_send(void **state) { (void)state; sizes_for(ENG_QPT_UC, ENG_WR_SEND); }
static void test_uc_send_imm(void **state) { (void)state; sizes_for(ENG_QPT_UC, ENG_WR_SEND_WITH_IMM); }
static void test_uc_write(void **state) { (void)state; sizes_for(ENG_QPT_UC, ENG_WR_RDMA_WRITE); }
static void test_uc_write_imm(void **state)
{
	(void)state;
	sizes_for(ENG_QPT_UC, ENG_WR_RDMA_WRITE_WITH_IMM);
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
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
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

/* UD: one MTU at most, the GRH area first, Q_Key checked. */
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
	s.lkey = eng_mr_lkey(a.mr);
	r.lkey = eng_mr_lkey(b.mr);
	memcpy(ah.dgid, b.gid, 16);
	memcpy(ah.dmac, b.mac, 6);
	wr.ud.ah = &ah;
	wr.ud.remote_qpn = eng_qp_num(b.qp);
	wr.ud.remote_qkey = 0x11111111;
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

	/* Larger than the MTU: a local length error. */
	s.length = 4097;
	wr.ud.remote_qkey = 0x11111111;
	assert_int_equal(eng_post_send(a.qp, &wr), 0);
	pump(&a, &b);
	wc = poll_one(&a);
	assert_int_equal(wc.status, ENG_WC_LOC_LEN_ERR);
	side_free(&a);
	side_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_send),
		cmocka_unit_test(test_rc_send_imm),
		cmocka_unit_test(test_rc_write),
		cmocka_unit_test(test_rc_write_imm),
		cmocka_unit_test(test_uc_send),
		cmocka_unit_test(test_uc_send_imm),
		cmocka_unit_test(test_uc_write),
		cmocka_unit_test(test_uc_write_imm),
		cmocka_unit_test(test_rc_bad_rkey),
		cmocka_unit_test(test_rc_write_wraps),
		cmocka_unit_test(test_ud_send),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
