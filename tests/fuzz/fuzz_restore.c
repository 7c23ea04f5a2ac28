// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the engine's saved state (daemon/engine/save.c), the
 * reader a restarting vrdmad trusts no more than a packet, `make fuzz`.
 *
 * Input: byte 0 picks the bytes to restore.
 *   0xff: the rest of the input, as it is.
 *   else: one of two states saved here at start-up (byte 0 mod 2: the
 *         requester or the responder of an RC pair caught mid-traffic, with
 *         SENDs, WRITEs, READs and atomics in flight, receives posted, a
 *         second PD, an SRQ with a UD QP on it, a fast-reg MR, a bound window
 *         and completions waiting), then edited by the rest of the input in
 *         groups of three bytes: a 16-bit offset (little-endian, modulo
 *         the length) and a byte XORed there. So mutations reach the deep
 *         fields that a raw input would rarely get a valid record around.
 *
 * For a state the restore takes: saved again, it restores again to the same
 * bytes; the engine then runs on it (polls with the clock moved past every
 * timer, frames it sends built and parsed back, its CQs drained) and is
 * destroyed. Refused, the engine holds nothing (ASan: no leak).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "eng_pair.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)
#define MEM	(1u << 20)
#define FRAMES	1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t clock_ns = 1000000000;

struct wire {
	uint8_t *f[FRAMES];
	uint32_t len[FRAMES];
	unsigned int n;
};
static struct wire wires[3];	/* side 1's, side 2's, the restored engine's */
static struct side sides[2];
static struct side fz;		/* the engine under test: its memory and wire */
static struct sbuf samples[2];

static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	return clock_ns;
}

static struct wire *wire_of(const struct side *s)
{
	return s == &fz ? &wires[2] : &wires[s->mac[5] - 1];
}

/* A buffer given and not sent (a frame the codec would not build: the
 * engine drops it) is the host's again at the next allocation. */
static uint8_t *unsent;

static unsigned int tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
			     struct roce_frag *frags, unsigned int max)
{
	(void)dgid;
	(void)max;
	free(unsent);
	unsent = NULL;
	if (wire_of(ctx)->n == FRAMES)
		return 0;
	unsent = frags[0].data = malloc(len);
	frags[0].len = len;
	return frags[0].data ? 1 : 0;
}

static void tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	struct wire *w = wire_of(ctx);

	CHECK(n == 1 && frags[0].data == unsent);
	unsent = NULL;
	w->f[w->n] = frags[0].data;
	w->len[w->n++] = len;
}

static const struct eng_ops ops = { .gid = side_gid };
static const struct eng_tx tx = { now_ns, tx_alloc, tx_send, NULL };

/* What s sent: delivered to to (NULL: dropped), every keep-th frame only
 * (0: none). Each frame must parse. */
static void deliver(struct side *s, struct side *to, unsigned int keep)
{
	struct wire *w = wire_of(s);
	enum roce_drop why;
	unsigned int i;

	for (i = 0; i < w->n; i++) {
		if (to && keep && i % keep == 0)
			CHECK(side_rx(to, w->f[i], w->len[i], &why) == 0);
		else if (!to) {
			struct roce_frag f = { w->f[i], w->len[i] };
			struct roce_pkt pkt;

			CHECK(roce_parse(&pkt, &f, 1, &why) == 0);
		}
		free(w->f[i]);
	}
	w->n = 0;
}

static void post(struct side *a, struct side *b, enum eng_wr_opcode op, uint32_t len,
		 uint64_t id)
{
	struct eng_sge s = { SIDE_IOVA + id * 4096, len, eng_mr_lkey(a->mr) };
	struct eng_sge r = { SIDE_IOVA + MEM / 2 + id * 4096, 4096, eng_mr_lkey(b->mr) };
	struct eng_send_wr wr = { .wr_id = id, .opcode = op, .send_flags = ENG_SEND_SIGNALED,
				  .sg_list = &s, .num_sge = 1 };
	struct eng_recv_wr rwr = { .wr_id = id, .sg_list = &r, .num_sge = 1 };

	if (op == ENG_WR_RDMA_READ || op == ENG_WR_RDMA_WRITE) {
		wr.rdma.remote_addr = SIDE_IOVA + MEM / 2 + id * 4096;
		wr.rdma.rkey = eng_mr_rkey(b->mr);
	} else if (op == ENG_WR_ATOMIC_FETCH_AND_ADD || op == ENG_WR_ATOMIC_CMP_AND_SWP) {
		wr.atomic.remote_addr = SIDE_IOVA + MEM / 2 + id * 8;
		wr.atomic.rkey = eng_mr_rkey(b->mr);
		wr.atomic.compare_add = id;
		s.length = 8;
	} else {
		CHECK(eng_post_recv(b->qp, &rwr) == 0);
	}
	CHECK(eng_post_send(a->qp, &wr) == 0);
}

/* The two sample states: an RC pair mid-traffic, every kind of object. */
static void make_samples(void)
{
	static const enum eng_wr_opcode opv[] = {
		ENG_WR_SEND, ENG_WR_RDMA_WRITE, ENG_WR_RDMA_READ, ENG_WR_SEND_WITH_IMM,
		ENG_WR_ATOMIC_FETCH_AND_ADD, ENG_WR_ATOMIC_CMP_AND_SWP,
	};
	struct eng_qp_init_attr init = {
		.qp_type = ENG_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 32 },
	};
	struct eng_srq_attr sa = { .max_wr = 8, .max_sge = 1, .srq_limit = 2 };
	struct eng_qp_init_attr ud_init = { .qp_type = ENG_QPT_UD,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct eng_qp_attr qa = { .qp_state = ENG_QPS_INIT, .port_num = 1, .qkey = 5 };
	struct eng_sge r = { SIDE_IOVA, 64, 0 };
	struct eng_recv_wr rwr = { .wr_id = 99, .sg_list = &r, .num_sge = 1 };
	struct eng_send_wr wr = { .wr_id = 98, .opcode = ENG_WR_BIND_MW,
				  .send_flags = ENG_SEND_SIGNALED };
	struct side *a = &sides[0], *b = &sides[1];
	struct eng_pd *pd2;
	struct eng_srq *srq;
	struct eng_qp *ud;
	struct eng_mr *fmr, *bmr;
	struct eng_mw *mw;
	const char *what;
	unsigned int i, k;

	for (i = 0; i < 2; i++) {
		init.send_cq = init.recv_cq = NULL;
		CHECK(side_open(&sides[i], (uint8_t)(i + 1), &ops, &tx, &init, 256, MEM, &what) ==
		      0);
	}
	a->peer = b;
	b->peer = a;
	CHECK(side_connect(a, ENG_QPT_RC, ENG_MTU_1024, 0xfffff0, 0x10, 7, 7, &what) == 0);
	CHECK(side_connect(b, ENG_QPT_RC, ENG_MTU_1024, 0x10, 0xfffff0, 7, 7, &what) == 0);
	/* b: a second PD, an SRQ with a UD QP, a FREE fast MR, a window bound */
	CHECK(eng_pd_alloc(b->dev, &pd2) == 0);
	CHECK(eng_srq_create(b->pd, &sa, &srq) == 0);
	r.lkey = eng_mr_lkey(b->mr);
	for (i = 0; i < 3; i++)
		CHECK(eng_srq_post_recv(srq, &rwr) == 0);
	ud_init.send_cq = ud_init.recv_cq = b->cq;
	ud_init.srq = srq;
	CHECK(eng_qp_create(b->pd, &ud_init, &ud) == 0);
	CHECK(eng_qp_modify(ud, &qa, ENG_QP_STATE | ENG_QP_PKEY_INDEX | ENG_QP_PORT |
			    ENG_QP_QKEY) == 0);
	CHECK(eng_mr_alloc_fast(b->pd, flat_mem_map, &b->flat, &fmr) == 0);
	CHECK(eng_mr_reg(b->pd, SIDE_IOVA, MEM, ENG_ACCESS_MR_ALL, flat_mem_map, &b->flat,
			 &bmr) == 0);
	CHECK(eng_mw_alloc(b->pd, &mw) == 0);
	wr.bind.addr = SIDE_IOVA + 8192;
	wr.bind.length = 4096;
	wr.bind.mw_rkey = wr.bind.rkey = eng_mw_rkey(mw);
	wr.bind.mr_lkey = eng_mr_lkey(bmr);
	wr.bind.access = ENG_ACCESS_REMOTE_WRITE;
	CHECK(eng_post_send(b->qp, &wr) == 0);
	/* traffic both ways, every other frame lost, caught in the middle */
	for (i = 0; i < 24; i++) {
		post(a, b, opv[i % 6], 100 + i * 700, i);
		if (i % 3 == 0)
			post(b, a, opv[i % 4], 3000, 32 + i);
	}
	for (k = 0; k < 3; k++) {
		uint64_t t;

		eng_poll(a->dev, &t);
		eng_poll(b->dev, &t);
		deliver(a, b, 2);
		deliver(b, a, 2);
	}
	for (i = 0; i < 2; i++) {
		eng_dev_save(sides[i].dev, &samples[i]);
		CHECK(!samples[i].err);
	}
	/* the samples' memory serves the restored engines: keep the sides */
	(void)pd2;
}

static int map_fz(void *ctx, uint32_t handle, eng_mem_map_fn *map, void **mem)
{
	(void)ctx;
	(void)handle;
	*map = flat_mem_map;
	*mem = &fz.flat;
	return 0;
}

/* Restore p into a new engine: it, or NULL if refused. */
static struct eng_dev *restore(const uint8_t *p, size_t len)
{
	struct eng_dev *dev = eng_dev_new(&ops, &fz, &(struct eng_tx){ now_ns, tx_alloc,
									 tx_send, &fz });
	struct srd r = { .p = p, .len = len };
	char ewhy[160];

	CHECK(dev);
	eng_dev_set_port_mtu(dev, ENG_MTU_4096);
	if (eng_dev_restore(dev, &r, map_fz, NULL, ewhy, sizeof(ewhy))) {
		eng_dev_free(dev);	/* nothing left in it: eng_dev_restore cleared it */
		return NULL;
	}
	return dev;
}

static void drain(struct eng_dev *dev)
{
	struct eng_wc wc[16];
	uint32_t h;

	for (h = 0; h < ENG_MAX_QP; h++) {
		struct eng_cq *cq = eng_cq_get(dev, h);

		while (cq && eng_cq_poll(cq, wc, 16) > 0)
			;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf again = { 0 }, third = { 0 };
	struct eng_dev *dev, *dev2;
	uint8_t *buf;
	size_t len, i;
	unsigned int k;

	if (!samples[0].len) {
		make_samples();
		memset(&fz, 0, sizeof(fz));
		fz.mem = calloc(1, MEM);
		CHECK(fz.mem);
		fz.flat = (struct flat_mem){ fz.mem, MEM };
		fz.mac[5] = 3;
		roce_gid_from_v4(fz.gid, (const uint8_t[4]){ 10, 0, 0, 1 });
	}
	if (!size)
		return 0;
	if (data[0] == 0xff) {
		len = size - 1;
		buf = malloc(len ? len : 1);
		CHECK(buf);
		memcpy(buf, data + 1, len);
	} else {
		const struct sbuf *s = &samples[data[0] % 2];

		len = s->len;
		buf = malloc(len);
		CHECK(buf);
		memcpy(buf, s->p, len);
		for (i = 1; i + 3 <= size; i += 3)
			buf[(data[i] | data[i + 1] << 8) % len] ^= data[i + 2];
	}
	dev = restore(buf, len);
	if (getenv("FZ_DEBUG"))	/* say what each input gave */
		fprintf(stderr, "restore of %zu bytes: %s\n", len, dev ? "ok" : "refused");
	if (dev) {
		eng_dev_save(dev, &again);
		CHECK(!again.err);
		dev2 = restore(again.p, again.len);
		CHECK(dev2);
		eng_dev_save(dev2, &third);
		CHECK(third.len == again.len && !memcmp(third.p, again.p, again.len));
		eng_dev_clear(dev2);
		eng_dev_free(dev2);
		/* it runs: timers fire, frames are built (and must parse) */
		for (k = 0; k < 4; k++) {
			uint64_t t;

			eng_poll(dev, &t);
			deliver(&fz, NULL, 0);
			drain(dev);
			clock_ns += 1000000000ull << k;
		}
		eng_dev_clear(dev);
		eng_dev_free(dev);
	}
	free(unsent);
	unsent = NULL;
	sb_free(&again);
	sb_free(&third);
	free(buf);
	return 0;
}
