// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-wr-test [-d DEVICE] [-g GID_INDEX]: the work request API of
 * extended QPs (ibv_wr_*, libibverbs' ibv_wr_post.3) on one RDMA device,
 * its QPs connected to each other through the device's own GID (vrdmad
 * loops such frames back): every builder and setter the vrdma provider
 * offers (the atomics when the device has them), with the data and
 * completions they must give, and the batches that must fail whole; and an
 * SRQ resized (ibv_modify_srq IBV_SRQ_MAX_WR, then ibv_query_srq) and
 * the QP_LAST_WQE_REACHED event of a QP on it that goes to ERR; a memory
 * window bound, written through and invalidated where the device offers
 * them (with ibv_post_send, and with ibv_wr_bind_mw and ibv_wr_local_inv);
 * a CQ from ibv_create_cq_ex read through start_poll, next_poll
 * and end_poll. Prints one line per check and
 * "vrdma-wr-test: N passed, M failed"; exits 1 if any failed.
 *
 * Built in the guest image beside the provider (guest/rdma-core/build.sh)
 * and run by tests/vm/verbs.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <endian.h>
#include <infiniband/verbs.h>

/* Regions of the one MR: what A sends, where B receives, and so on. */
enum {
	SRC = 0,		/* A's data */
	DST = 8192,		/* B's memory that A writes */
	PEER = 16384,		/* B's memory that A reads */
	READ_DST = 24576,	/* where A's READs land */
	ATOMIC = 28672,		/* B's 64-bit word that A's atomics change */
	ATOMIC_RES = 28736,	/* where their original values land */
	RECV = 32768,		/* B's receive buffers, RECV_SIZE each */
	RECV_SIZE = 2048,
	NRECV = 8,
	BUF_SIZE = RECV + NRECV * RECV_SIZE,
	QKEY = 0x11111111,
	MAX_WR = 8,
	MAX_SGE = 2,
	MAX_INLINE = 64,
};

struct test {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;	/* every QP's send completions */
	struct ibv_cq *rcq;	/* every QP's receive completions */
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
	int gid_index;
	bool atomics;		/* the device's atomic_cap is not NONE */
	bool mw;		/* it offers memory windows (type 2B) */
	int passed, failed;
};

static void check(struct test *t, const char *what, bool ok)
{
	printf("  %-68s %s\n", what, ok ? "ok" : "FAIL");
	if (ok)
		t->passed++;
	else
		t->failed++;
}

static uint64_t addr(struct test *t, size_t off)
{
	return (uintptr_t)(t->buf + off);
}

/* Up to n completions of cq within ms milliseconds; how many came. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	struct timespec ts, end;
	int got = 0, r;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000;
	for (;;) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return got;
		got += r;
		if (got == n)
			return got;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec > end.tv_sec + (end.tv_nsec >= 1000000000) ||
		    (ts.tv_sec == end.tv_sec && ts.tv_nsec >= end.tv_nsec))
			return got;
		usleep(1000);
	}
}

/* No completion on either CQ for a while: nothing was posted. */
static bool quiet(struct test *t)
{
	struct ibv_wc wc;

	return poll_n(t->scq, &wc, 1, 300) == 0 &&
	       poll_n(t->rcq, &wc, 1, 0) == 0;
}

static struct ibv_qp *make_qp(struct test *t, enum ibv_qp_type type,
			      uint64_t ops, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = t->scq,
		.recv_cq = t->rcq,
		.cap = {
			.max_send_wr = MAX_WR,
			.max_recv_wr = NRECV,
			.max_send_sge = MAX_SGE,
			.max_recv_sge = 1,
			.max_inline_data = MAX_INLINE,
		},
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = t->pd,
		.send_ops_flags = ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(t->ctx, &a);

	if (qp && cap)
		*cap = a.cap;
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
		.qkey = QKEY,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

/* The address of the device's own GID: every QP here talks to another
 * QP of the same device. */
static struct ibv_ah_attr self_av(struct test *t)
{
	struct ibv_ah_attr av = {
		.is_global = 1,
		.grh = {
			.dgid = t->gid,
			.sgid_index = (uint8_t)t->gid_index,
			.hop_limit = 64,
		},
		.port_num = 1,
	};

	return av;
}

static int rc_connect(struct test *t, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
	};

	a.ah_attr = self_av(t);
	if (to_init(qp) ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	if (to_init(qp) || ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Receive i of qp: RECV + i * RECV_SIZE, wr_id 100 + i. */
static int post_recv(struct test *t, struct ibv_qp *qp, int i)
{
	struct ibv_sge sge = {
		.addr = addr(t, RECV + (size_t)i * RECV_SIZE),
		.length = RECV_SIZE,
		.lkey = t->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* One batch with every RC builder, and what each must have done. */
static void test_rc_batch(struct test *t, struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	char hello[] = "hello ", world[] = "world";
	struct ibv_data_buf inl[2] = { { hello, 6 }, { world, 5 } };
	struct ibv_sge two[2] = {
		{ addr(t, SRC), 100, t->mr->lkey },
		{ addr(t, SRC + 200), 100, t->mr->lkey },
	};
	uint8_t *buf = t->buf;
	struct ibv_wc wc[8];
	int i, n, ret;
	bool ok;

	fill(buf + SRC, 4096, 1);
	fill(buf + PEER, 1024, 99);
	for (i = 0; i < 3; i++)
		post_recv(t, b, i);

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_rdma_write(x, t->mr->rkey, addr(t, DST));
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 2;
	ibv_wr_rdma_write_imm(x, t->mr->rkey, addr(t, DST + 1000),
			      htobe32(0x11223344));
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC + 1000), 300);
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, inl);
	/* copied at the setter: the caller may reuse its buffers at once */
	memset(hello, 'X', 6);
	memset(world, 'Y', 5);
	x->wr_id = 4;
	ibv_wr_send_imm(x, htobe32(0x55667788));
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC + 2000), 500);
	x->wr_id = 5;
	ibv_wr_rdma_read(x, t->mr->rkey, addr(t, PEER));
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, READ_DST), 700);
	ret = ibv_wr_complete(x);
	check(t, "wr_complete posts WRITE, WRITE_IMM, SEND, SEND_IMM, READ", !ret);

	n = poll_n(t->scq, wc, 5, 10000);
	ok = n == 5;
	for (i = 0; ok && i < 5; i++)
		ok = wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == (uint64_t)i + 1;
	ok = ok && wc[0].opcode == IBV_WC_RDMA_WRITE &&
	     wc[1].opcode == IBV_WC_RDMA_WRITE && wc[2].opcode == IBV_WC_SEND &&
	     wc[3].opcode == IBV_WC_SEND && wc[4].opcode == IBV_WC_RDMA_READ;
	if (!ok && n > 0)
		printf("    %d send completions, first: status %s, wr_id %llu\n", n,
		       ibv_wc_status_str(wc[0].status),
		       (unsigned long long)wc[0].wr_id);
	check(t, "  five send completions, in order, with their wr_ids", ok);

	check(t, "  WRITE with a list of two SGEs wrote both pieces",
	      !memcmp(buf + DST, buf + SRC, 100) &&
	      !memcmp(buf + DST + 100, buf + SRC + 200, 100));

	n = poll_n(t->rcq, wc, 3, 10000);
	ok = n == 3 && wc[0].status == IBV_WC_SUCCESS &&
	     wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	     (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	     wc[0].imm_data == htobe32(0x11223344);
	check(t, "  WRITE_WITH_IMM: the data, and the immediate in a receive",
	      ok && !memcmp(buf + DST + 1000, buf + SRC + 1000, 300));
	ok = n == 3 && wc[1].status == IBV_WC_SUCCESS &&
	     wc[1].opcode == IBV_WC_RECV && wc[1].byte_len == 11 &&
	     wc[1].wr_id == 101;
	check(t, "  inline SEND from two buffers: the bytes as they were at the setter",
	      ok && !memcmp(buf + RECV + RECV_SIZE, "hello world", 11));
	ok = n == 3 && wc[2].status == IBV_WC_SUCCESS &&
	     wc[2].opcode == IBV_WC_RECV && wc[2].byte_len == 500 &&
	     (wc[2].wc_flags & IBV_WC_WITH_IMM) &&
	     wc[2].imm_data == htobe32(0x55667788);
	check(t, "  SEND_WITH_IMM: the data and the immediate",
	      ok && !memcmp(buf + RECV + 2 * RECV_SIZE, buf + SRC + 2000, 500));
	check(t, "  READ brought the peer's bytes",
	      !memcmp(buf + READ_DST, buf + PEER, 700));
}

/* Batches that fail whole: wr_complete returns why, nothing is posted. */
static void test_failed_batches(struct test *t, struct ibv_qp *a,
				struct ibv_qp *send_only,
				const struct ibv_qp_cap *cap)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	struct ibv_qp_ex *s = ibv_qp_to_qp_ex(send_only);
	struct ibv_sge three[3] = {
		{ addr(t, SRC), 8, t->mr->lkey },
		{ addr(t, SRC + 8), 8, t->mr->lkey },
		{ addr(t, SRC + 16), 8, t->mr->lkey },
	};
	static uint8_t big[1024];	/* more than any QP's inline limit */
	uint8_t before[64];
	unsigned int i;
	int ret;

	memcpy(before, t->buf + DST + 4096, sizeof(before));
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 10;
	ibv_wr_rdma_write(x, t->mr->rkey, addr(t, DST + 4096));
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC), 64);
	ibv_wr_rdma_write(x, t->mr->rkey, addr(t, DST + 4096));
	ibv_wr_set_sge_list(x, 3, three);	/* more than max_send_sge */
	ret = ibv_wr_complete(x);
	check(t, "more SGEs than the QP has: EINVAL, and the WR before is not posted",
	      ret == EINVAL && quiet(t) &&
	      !memcmp(before, t->buf + DST + 4096, sizeof(before)));

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, cap->max_inline_data < sizeof(big) ?
				       cap->max_inline_data + 1 : sizeof(big));
	ret = ibv_wr_complete(x);
	check(t, "inline data beyond max_inline_data: EINVAL",
	      cap->max_inline_data < sizeof(big) && ret == EINVAL && quiet(t));

	ibv_wr_start(x);
	ibv_wr_rdma_read(x, t->mr->rkey, addr(t, PEER));
	ibv_wr_set_inline_data(x, big, 8);
	ret = ibv_wr_complete(x);
	check(t, "inline data on a READ: EINVAL", ret == EINVAL && quiet(t));

	ibv_wr_start(x);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC), 8);
	ret = ibv_wr_complete(x);
	check(t, "a setter before any builder: EINVAL", ret == EINVAL && quiet(t));

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, NULL, 1, QKEY);
	ret = ibv_wr_complete(x);
	check(t, "set_ud_addr on an RC QP: EINVAL", ret == EINVAL && quiet(t));

	ibv_wr_start(s);
	ibv_wr_rdma_write(s, t->mr->rkey, addr(t, DST));
	ret = ibv_wr_complete(s);
	check(t, "an opcode not asked for at creation: EINVAL", ret == EINVAL);

	ibv_wr_start(s);
	for (i = 0; i <= cap->max_send_wr; i++)
		ibv_wr_send(s);
	ret = ibv_wr_complete(s);
	check(t, "more WRs than the send queue holds: ENOMEM", ret == ENOMEM);

	/* the kernel refuses a QP that is not in RTS: its error comes back */
	ibv_wr_start(s);
	ibv_wr_send(s);
	ibv_wr_set_sge(s, t->mr->lkey, addr(t, SRC), 8);
	ret = ibv_wr_complete(s);
	check(t, "the kernel's refusal (QP in RESET) is wr_complete's", ret != 0);
}

static void test_abort(struct test *t, struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	struct ibv_wc wc[2];
	int ret;

	post_recv(t, b, 3);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 20;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC), 16);
	ibv_wr_abort(x);
	check(t, "wr_abort: nothing posted", quiet(t));

	/* outside wr_start/wr_complete a builder has no effect */
	ibv_wr_send(x);
	ibv_wr_start(x);
	ret = ibv_wr_complete(x);
	check(t, "a builder outside a batch, then an empty batch: nothing posted",
	      !ret && quiet(t));

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 21;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC), 16);
	ret = ibv_wr_complete(x);
	check(t, "the batch after them is posted",
	      !ret && poll_n(t->scq, wc, 1, 10000) == 1 &&
	      wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 21 &&
	      poll_n(t->rcq, wc + 1, 1, 10000) == 1 && wc[1].byte_len == 16);
}

static void test_ud(struct test *t)
{
	struct ibv_ah_attr aa = self_av(t);
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	struct ibv_qp *u1 = make_qp(t, IBV_QPT_UD, ops, NULL);
	struct ibv_qp *u2 = make_qp(t, IBV_QPT_UD, ops, NULL);
	struct ibv_ah *ah = ibv_create_ah(t->pd, &aa);
	struct ibv_qp_ex *x;
	struct ibv_wc wc[2];
	char msg[] = "ud, inline";
	int ret;
	bool ok;

	if (!u1 || !u2 || !ah || ud_ready(u1) || ud_ready(u2)) {
		check(t, "UD QPs and an address handle", false);
		return;
	}
	x = ibv_qp_to_qp_ex(u1);
	post_recv(t, u2, 4);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 30;
	ibv_wr_send_imm(x, htobe32(0xabcd));
	ibv_wr_set_ud_addr(x, ah, u2->qp_num, QKEY);
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	ret = ibv_wr_complete(x);
	ok = !ret && poll_n(t->scq, wc, 1, 10000) == 1 &&
	     wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 30 &&
	     poll_n(t->rcq, wc + 1, 1, 10000) == 1 &&
	     wc[1].status == IBV_WC_SUCCESS &&
	     wc[1].byte_len == 40 + sizeof(msg) &&
	     (wc[1].wc_flags & IBV_WC_WITH_IMM) &&
	     wc[1].imm_data == htobe32(0xabcd);
	/* a UD receive starts with the 40-byte GRH */
	check(t, "UD SEND_WITH_IMM with set_ud_addr and inline data",
	      ok && !memcmp(t->buf + RECV + 4 * RECV_SIZE + 40, msg, sizeof(msg)));

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC), 8);
	ret = ibv_wr_complete(x);
	check(t, "a UD WR without set_ud_addr: EINVAL", ret == EINVAL && quiet(t));

	ibv_destroy_qp(u1);
	ibv_destroy_qp(u2);
	ibv_destroy_ah(ah);
}

/* Both atomics on B's word, and a compare that fails; each original value
 * lands in A's SGE (IBA 9.4.5, in the host's byte order). */
static void test_atomics(struct test *t, struct ibv_qp *a)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	uint64_t word = 0x1122334455667788ull, res[3] = {}, after = 0;
	struct ibv_wc wc[3];
	int i, n, ret;
	bool ok;

	memcpy(t->buf + ATOMIC, &word, 8);
	memset(t->buf + ATOMIC_RES, 0xee, 24);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 40;
	ibv_wr_atomic_cmp_swp(x, t->mr->rkey, addr(t, ATOMIC), word,
			      0x0102030405060708ull);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, ATOMIC_RES), 8);
	ret = ibv_wr_complete(x);
	n = poll_n(t->scq, wc, 1, 10000);
	memcpy(&res[0], t->buf + ATOMIC_RES, 8);
	memcpy(&after, t->buf + ATOMIC, 8);
	check(t, "CMP_AND_SWP that matches: swapped, the original value returned",
	      !ret && n == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].wr_id == 40 && wc[0].opcode == IBV_WC_COMP_SWAP &&
	      res[0] == word && after == 0x0102030405060708ull);

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 41;
	ibv_wr_atomic_fetch_add(x, t->mr->rkey, addr(t, ATOMIC), 0x10);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, ATOMIC_RES + 8), 8);
	x->wr_id = 42;		/* compares with the old value: no swap */
	ibv_wr_atomic_cmp_swp(x, t->mr->rkey, addr(t, ATOMIC), word, 0xdead);
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, ATOMIC_RES + 16), 8);
	ret = ibv_wr_complete(x);
	check(t, "one batch: FETCH_AND_ADD, CMP_AND_SWP", !ret);
	n = poll_n(t->scq, wc, 2, 10000);
	ok = n == 2;
	for (i = 0; ok && i < 2; i++)
		ok = wc[i].status == IBV_WC_SUCCESS &&
		     wc[i].wr_id == (uint64_t)41 + i &&
		     wc[i].opcode == (i ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
	if (!ok && n > 0)
		printf("    %d completions, first: status %s, opcode %d\n", n,
		       ibv_wc_status_str(wc[0].status), wc[0].opcode);
	check(t, "  two completions: FETCH_ADD, COMP_SWAP", ok);
	memcpy(&res[1], t->buf + ATOMIC_RES + 8, 16);
	memcpy(&after, t->buf + ATOMIC, 8);
	check(t, "  FETCH_AND_ADD added, giving the swapped value",
	      res[1] == 0x0102030405060708ull);
	check(t, "  a CMP_AND_SWP that does not match gives the value, swaps nothing",
	      res[2] == 0x0102030405060718ull && after == 0x0102030405060718ull);

	/* refused by the provider, the batch whole (the kernel would refuse
	 * it too, but after posting the WRITE before it) */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, t->mr->rkey, addr(t, DST + 4096));
	ibv_wr_set_sge(x, t->mr->lkey, addr(t, SRC), 8);
	ibv_wr_atomic_fetch_add(x, t->mr->rkey, addr(t, ATOMIC), 1);
	ibv_wr_set_inline_data(x, &word, 8);
	ret = ibv_wr_complete(x);
	check(t, "inline data on an atomic: EINVAL, the WRITE before not posted",
	      ret == EINVAL && quiet(t));
}

/* The next asynchronous event within ms milliseconds, polling cq meanwhile:
 * the driver hands the device's event CQEs on as it polls the CQ. */
static bool next_event(struct test *t, struct ibv_cq *cq,
		       struct ibv_async_event *ev, int ms)
{
	struct pollfd p = { .fd = t->ctx->async_fd, .events = POLLIN };
	struct ibv_wc wc;

	for (; ms > 0; ms -= 10) {
		while (ibv_poll_cq(cq, 1, &wc) > 0)
			;
		if (poll(&p, 1, 10) == 1 && !ibv_get_async_event(t->ctx, ev))
			return true;
	}
	return false;
}

/* An SRQ resized (IBA 11.2.3.3), and a QP on it to ERR: Last WQE Reached
 * (IBA 11.6.3.1, IBV_EVENT_QP_LAST_WQE_REACHED) for that QP. */
static void test_srq(struct test *t)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 4, .max_sge = 1, .srq_limit = 0 },
	};
	struct ibv_qp_init_attr qa = {
		.send_cq = t->scq, .recv_cq = t->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_srq_attr a = {};
	struct ibv_device_attr dev;
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct ibv_qp *q;
	bool ok;

	srq = ibv_create_srq(t->pd, &sa);
	if (!srq) {
		check(t, "an SRQ", false);
		return;
	}
	check(t, "the device says it resizes SRQs (IBV_DEVICE_SRQ_RESIZE)",
	      !ibv_query_device(t->ctx, &dev) &&
	      (dev.device_cap_flags & IBV_DEVICE_SRQ_RESIZE));
	a.max_wr = 64;
	ok = !ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	memset(&a, 0, sizeof(a));
	check(t, "ibv_modify_srq IBV_SRQ_MAX_WR 4 -> 64, ibv_query_srq says 64",
	      ok && !ibv_query_srq(srq, &a) && a.max_wr == 64);
	a.max_wr = 8;
	a.srq_limit = 9;
	ok = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT) == EINVAL;
	memset(&a, 0, sizeof(a));
	check(t, "a limit above the new max_wr: EINVAL, nothing changed",
	      ok && !ibv_query_srq(srq, &a) && a.max_wr == 64 && !a.srq_limit);
	a.max_wr = dev.max_srq_wr + 1;
	check(t, "beyond max_srq_wr: EINVAL",
	      ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL);

	qa.srq = srq;
	q = ibv_create_qp(t->pd, &qa);
	if (!q || to_init(q)) {
		check(t, "an RC QP on the SRQ", false);
		goto destroy_srq;
	}
	fcntl(t->ctx->async_fd, F_SETFL,
	      fcntl(t->ctx->async_fd, F_GETFL) | O_NONBLOCK);
	ok = !ibv_modify_qp(q, &err, IBV_QP_STATE) &&
	     next_event(t, t->rcq, &ev, 5000);
	if (ok) {
		ok = ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
		     ev.element.qp == q;
		if (!ok)
			printf("    event %s\n", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	check(t, "a QP on the SRQ to ERR: IBV_EVENT_QP_LAST_WQE_REACHED for it", ok);
	check(t, "  once: not again for ERR -> ERR",
	      !ibv_modify_qp(q, &err, IBV_QP_STATE) &&
	      !next_event(t, t->rcq, &ev, 300));
	ibv_destroy_qp(q);
destroy_srq:
	ibv_destroy_srq(srq);
}

/* y's bind of mw (a new key, rkey) over 2 KiB of mr at win + 1024, for
 * REMOTE_WRITE, and its LOCAL_INV of that key: with ibv_post_send, or
 * between ibv_wr_start and ibv_wr_complete (wr_api). 0 or the error. */
static int post_bind(struct ibv_qp *y, bool wr_api, struct ibv_mw *mw,
		     uint32_t rkey, struct ibv_mr *mr, uint8_t *win)
{
	struct ibv_mw_bind_info bi = {
		.mr = mr, .addr = (uintptr_t)win + 1024, .length = 2048,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(y);

	if (!wr_api) {
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info = bi;
		return ibv_post_send(y, &wr, &bad);
	}
	ibv_wr_start(x);
	x->wr_id = 7;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(x, mw, rkey, &bi);
	return ibv_wr_complete(x);
}

static int post_local_inv(struct ibv_qp *y, bool wr_api, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey }, *bad;
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(y);

	if (!wr_api)
		return ibv_post_send(y, &wr, &bad);
	ibv_wr_start(x);
	x->wr_id = 9;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(x, rkey);
	return ibv_wr_complete(x);
}

/*
 * A type 2B memory window (IBA 10.6.7), where the device offers them (on
 * rings, where a program binds one with a WQE in its own send ring): y
 * binds it over part of an MR with MW_BIND, x WRITEs through its key into
 * the window; y invalidates it (LOCAL_INV), and x's next WRITE through the
 * key is a remote access error; y posts with ibv_post_send, or with the
 * ibv_wr_* API (wr_api: ibv_wr_bind_mw, ibv_wr_local_inv; a data setter on
 * a bind fails its batch). Without windows ibv_alloc_mw must fail, and so
 * must an extended QP asking for binds.
 */
static void test_mw(struct test *t, bool offered, bool wr_api)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = t->scq, .recv_cq = t->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const uint64_t mw_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW |
				IBV_QP_EX_WITH_LOCAL_INV;
	const char *how = wr_api ? " (ibv_wr_*)" : "";
	uint8_t *win = calloc(1, 8192);
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_qp *x = NULL, *y = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_qp_ex *yx;
	struct ibv_sge sge;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	char what[96];
	uint32_t rkey;
	bool ok;

	mw = ibv_alloc_mw(t->pd, IBV_MW_TYPE_2);
	if (!offered) {
		if (wr_api) {
			y = make_qp(t, IBV_QPT_RC, mw_ops, NULL);
			check(t, "no memory windows: create_qp_ex refuses binds, EOPNOTSUPP",
			      !y && errno == EOPNOTSUPP);
		} else {
			check(t, "no memory windows offered: ibv_alloc_mw fails", !mw);
		}
		if (y)
			ibv_destroy_qp(y);
		if (mw)
			ibv_dealloc_mw(mw);
		free(win);
		return;
	}
	mr = win ? ibv_reg_mr(t->pd, win, 8192, IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND) : NULL;
	x = ibv_create_qp(t->pd, &ia);
	y = wr_api ? make_qp(t, IBV_QPT_RC, mw_ops, NULL) : ibv_create_qp(t->pd, &ia);
	ok = mw && mr && x && y && !rc_connect(t, x, y->qp_num) &&
	     !rc_connect(t, y, x->qp_num);
	snprintf(what, sizeof(what), "a type 2 window, an MR with MW_BIND, a connected RC pair%s",
		 how);
	check(t, what, ok);
	if (!ok)
		goto out;
	rkey = ibv_inc_rkey(mw->rkey);
	if (wr_api) {
		/* a bind carries no data: its batch fails whole */
		yx = ibv_qp_to_qp_ex(y);
		ibv_wr_start(yx);
		ibv_wr_bind_mw(yx, mw, rkey, &(struct ibv_mw_bind_info){ .mr = mr,
			       .addr = (uintptr_t)win, .length = 64,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE });
		ibv_wr_set_sge(yx, t->mr->lkey, addr(t, SRC), 16);
		check(t, "ibv_wr_bind_mw with an SGE: EINVAL, nothing posted",
		      ibv_wr_complete(yx) == EINVAL && quiet(t));
	}
	ok = !post_bind(y, wr_api, mw, rkey, mr, win) &&
	     poll_n(t->scq, &wc, 1, 3000) == 1 &&
	     wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
	     wc.wr_id == 7;
	snprintf(what, sizeof(what), "BIND_MW%s: 2 KiB of the MR, REMOTE_WRITE, a new key", how);
	check(t, what, ok);
	fill(t->buf + SRC, 64, 9);
	sge = (struct ibv_sge){ addr(t, SRC), 64, t->mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)win + 1024 + 512;
	wr.wr.rdma.rkey = rkey;
	ok = ok && !ibv_post_send(x, &wr, &bad) &&
	     poll_n(t->scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS &&
	     !memcmp(win + 1024 + 512, t->buf + SRC, 64);
	check(t, "an RDMA WRITE through the window's key lands in it", ok);
	ok = ok && !post_local_inv(y, wr_api, rkey) &&
	     poll_n(t->scq, &wc, 1, 3000) == 1 && wc.status == IBV_WC_SUCCESS &&
	     wc.opcode == IBV_WC_LOCAL_INV;
	snprintf(what, sizeof(what), "LOCAL_INV%s of the window's key", how);
	check(t, what, ok);
	wr.wr_id = 10;
	wr.wr.rdma.remote_addr = (uintptr_t)win + 1024;
	ok = ok && !ibv_post_send(x, &wr, &bad) &&
	     poll_n(t->scq, &wc, 1, 5000) == 1 &&
	     wc.status == IBV_WC_REM_ACCESS_ERR;
	check(t, "  then a WRITE through it is a remote access error", ok);
	/* the flushes of the pair, if any, before the next test polls */
	while (poll_n(t->scq, &wc, 1, 300) == 1 || poll_n(t->rcq, &wc, 1, 0) == 1)
		;
out:
	if (x)
		ibv_destroy_qp(x);
	if (y)
		ibv_destroy_qp(y);
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	free(win);
}

/* Poll cq within ms milliseconds: ibv_start_poll's result other than
 * ENOENT (0: a completion, the CQ held until ibv_end_poll). */
static int start_poll_ms(struct ibv_cq_ex *cq, int ms)
{
	struct ibv_poll_cq_attr attr = {};
	int ret, i;

	for (i = 0; i <= ms; i++) {
		ret = ibv_start_poll(cq, &attr);
		if (ret != ENOENT)
			return ret;
		usleep(1000);
	}
	return ENOENT;
}

/* ibv_create_cq_ex (libibverbs' ibv_create_cq_ex.3): a CQ with every
 * standard field takes a QP's receives; SEND_WITH_IMM's completion read
 * through start_poll, the read_* calls and end_poll; two at once through
 * next_poll; an empty CQ is ENOENT. Fields the device has no source for
 * (a completion clock) are EOPNOTSUPP. */
static void test_cq_ex(struct test *t)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { addr(t, SRC), 64, t->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 30, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(0x12345678) }, *bad;
	struct ibv_poll_cq_attr pa = {};
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_cq_ex *cq;
	struct ibv_wc wc[2];
	int ret, more, got, i;
	bool ok;

	cq = ibv_create_cq_ex(t->ctx, &ca);
	check(t, "create_cq_ex refuses a completion timestamp: EOPNOTSUPP",
	      !cq && errno == EOPNOTSUPP);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	cq = ibv_create_cq_ex(t->ctx, &ca);
	check(t, "create_cq_ex with the standard fields", cq != NULL);
	if (!cq)
		return;
	check(t, "an empty extended CQ: start_poll is ENOENT",
	      ibv_start_poll(cq, &pa) == ENOENT);

	qa.send_cq = t->scq;
	qa.recv_cq = ibv_cq_ex_to_cq(cq);
	a = ibv_create_qp(t->pd, &qa);
	b = ibv_create_qp(t->pd, &qa);
	ok = a && b && !rc_connect(t, a, b->qp_num) && !rc_connect(t, b, a->qp_num) &&
	     !post_recv(t, b, 5) && !ibv_post_send(a, &wr, &bad) &&
	     poll_n(t->scq, wc, 1, 10000) == 1 && wc[0].status == IBV_WC_SUCCESS;
	check(t, "an RC pair with its receives on the extended CQ; a SEND_WITH_IMM", ok);
	if (!ok)
		goto out;
	ret = start_poll_ms(cq, 10000);
	ok = !ret && cq->status == IBV_WC_SUCCESS && cq->wr_id == 105 &&
	     ibv_wc_read_opcode(cq) == IBV_WC_RECV &&
	     ibv_wc_read_byte_len(cq) == 64 &&
	     (ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM) &&
	     ibv_wc_read_imm_data(cq) == htobe32(0x12345678) &&
	     ibv_wc_read_qp_num(cq) == b->qp_num && ibv_wc_read_vendor_err(cq) == 0;
	more = ret ? ret : ibv_next_poll(cq);
	if (!ret)
		ibv_end_poll(cq);
	check(t, "start_poll reads it: wr_id, status, opcode, byte_len, imm, qp_num", ok);
	check(t, "... then no more: next_poll is ENOENT", more == ENOENT);

	/* two at once: start_poll the first, next_poll the second (which may
	 * come a little later: next_poll again, the CQ held meanwhile) */
	wr.opcode = IBV_WR_SEND;
	ok = !post_recv(t, b, 6) && !post_recv(t, b, 7) &&
	     !ibv_post_send(a, &wr, &bad) && !ibv_post_send(a, &wr, &bad) &&
	     poll_n(t->scq, wc, 2, 10000) == 2;
	got = 0;
	if (ok && !start_poll_ms(cq, 10000)) {
		got = cq->wr_id == 106 && !(ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM);
		for (i = 0; (ret = ibv_next_poll(cq)) == ENOENT && i < 10000; i++)
			usleep(1000);
		got += !ret && cq->wr_id == 107 && cq->status == IBV_WC_SUCCESS;
		ibv_end_poll(cq);
	}
	check(t, "two completions: start_poll, then next_poll, then end_poll", got == 2);
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	check(t, "the extended CQ is destroyed", !ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
}

static int run(struct test *t)
{
	const uint64_t atomic_ops = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	uint64_t rc_ops = IBV_QP_EX_WITH_RDMA_WRITE |
			  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			  IBV_QP_EX_WITH_RDMA_READ;
	struct ibv_qp_init_attr plain = {
		.send_cq = NULL, .recv_cq = NULL, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *a, *b, *s, *q;
	struct ibv_qp_cap cap;
	bool ok;

	q = make_qp(t, IBV_QPT_UC, IBV_QP_EX_WITH_SEND |
		    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, NULL);
	ok = !q && errno == EOPNOTSUPP;
	q = make_qp(t, IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, NULL);
	check(t, "create_qp_ex refuses opcodes the QP type lacks: EOPNOTSUPP",
	      ok && !q && errno == EOPNOTSUPP);
	/* the atomics on RC: as the device's atomic_cap says */
	q = make_qp(t, IBV_QPT_RC, IBV_QP_EX_WITH_SEND | atomic_ops, NULL);
	check(t, t->atomics ? "create_qp_ex takes the atomics on RC (atomic_cap HCA)" :
			      "create_qp_ex refuses the atomics: atomic_cap NONE",
	      t->atomics ? q && ibv_qp_to_qp_ex(q)->wr_atomic_cmp_swp &&
			   ibv_qp_to_qp_ex(q)->wr_atomic_fetch_add :
			   !q && errno == EOPNOTSUPP);
	if (q)
		ibv_destroy_qp(q);
	if (t->atomics)
		rc_ops |= atomic_ops;

	plain.send_cq = t->scq;
	plain.recv_cq = t->rcq;
	q = ibv_create_qp(t->pd, &plain);
	check(t, "a QP from ibv_create_qp is not an extended one",
	      q && !ibv_qp_to_qp_ex(q));
	if (q)
		ibv_destroy_qp(q);

	a = make_qp(t, IBV_QPT_RC, rc_ops, &cap);
	b = make_qp(t, IBV_QPT_RC, rc_ops, NULL);
	s = make_qp(t, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, NULL);
	ok = a && b && s && ibv_qp_to_qp_ex(a) &&
	     !rc_connect(t, a, b->qp_num) && !rc_connect(t, b, a->qp_num);
	check(t, "RC QPs from ibv_create_qp_ex, connected to each other", ok);
	if (!ok)
		return 1;
	test_rc_batch(t, a, b);
	test_failed_batches(t, a, s, &cap);
	test_abort(t, a, b);
	if (t->atomics)
		test_atomics(t, a);
	test_ud(t);
	test_srq(t);
	test_mw(t, t->mw, false);
	test_mw(t, t->mw, true);
	test_cq_ex(t);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(s);
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = "vrdma0";
	struct ibv_device **list;
	struct ibv_device_attr dev;
	struct test t = {};
	int i, opt;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		switch (opt) {
		case 'd':
			name = optarg;
			break;
		case 'g':
			t.gid_index = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: vrdma-wr-test [-d DEVICE] [-g GID_INDEX]\n");
			return 2;
		}
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			t.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	t.buf = calloc(1, BUF_SIZE);
	if (!t.ctx || !t.buf || ibv_query_gid(t.ctx, 1, t.gid_index, &t.gid) ||
	    ibv_query_device(t.ctx, &dev)) {
		fprintf(stderr, "vrdma-wr-test: cannot open %s or its GID %d\n",
			name, t.gid_index);
		return 1;
	}
	t.atomics = dev.atomic_cap != IBV_ATOMIC_NONE;
	t.mw = dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW;
	t.pd = ibv_alloc_pd(t.ctx);
	t.scq = t.pd ? ibv_create_cq(t.ctx, 64, NULL, NULL, 0) : NULL;
	t.rcq = t.scq ? ibv_create_cq(t.ctx, 64, NULL, NULL, 0) : NULL;
	t.mr = t.rcq ? ibv_reg_mr(t.pd, t.buf, BUF_SIZE,
				  IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC) : NULL;
	if (!t.mr) {
		fprintf(stderr, "vrdma-wr-test: PD, CQ or MR: %s\n", strerror(errno));
		return 1;
	}
	run(&t);
	printf("vrdma-wr-test: %d passed, %d failed\n", t.passed, t.failed);
	return t.failed ? 1 : 0;
}
