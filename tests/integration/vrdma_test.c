// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma_test: the virtio-rdma device of a running vrdmad, end to end through
 * libvrdma, as two VMs of the same daemon ("A" and "B"). Written from
 * docs/virtio-rdma.md alone. A table of numbered tests; each runs on fresh
 * connections to both VMs (the daemon frees everything of a VM when its
 * connection goes), so one failure does not leak into the next test.
 *
 * Usage: vrdma_test SOCKET_A SOCKET_B [TEST_NUMBER...]
 *        vrdma_test --flood SOCKET ROUNDS (heavy page lists from one VM)
 * Output: "ok N - name" or "not ok N - name: why", diagnostics on "# "
 * lines, then "vrdma_test: P passed, F failed". Exit 0 only if all passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libvrdma.h"
#include "qp_connect.h"

#define ACCESS_ALL	(VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE | \
			 VIRTIO_IB_ACCESS_REMOTE_READ | VIRTIO_IB_ACCESS_REMOTE_ATOMIC)

/* enum ib_wc_status, enum ib_wc_opcode, wc_flags */
#define WC_SUCCESS		0
#define WC_LOC_QP_OP_ERR	2
#define WC_LOC_PROT_ERR		4
#define WC_WR_FLUSH_ERR		5
#define WC_REM_INV_REQ_ERR	9
#define WC_REM_ACCESS_ERR	10
#define WC_COMP_SWAP		3
#define WC_FETCH_ADD		4
#define WC_SEND			0
#define WC_RDMA_WRITE		1
#define WC_RDMA_READ		2
#define WC_LOCAL_INV		6
#define WC_REG_MR		10
#define WC_RECV			128
#define WC_RECV_RDMA_WITH_IMM	129
#define WC_GRH			1u
#define WC_WITH_IMM		2u

#define IB_PORT_CM_SUP		(1u << 16)
#define IB_WIDTH_4X		2
#define IB_SPEED_EDR		32
#define GID_TYPE_ROCE_V1	1

#define MEM_SIZE	(64u << 20)
#define BUF_LEN		(256u << 10)
#define BIG		(65536u + 7)	/* crosses the path MTU many times */
#define GRH_LEN		40u
#define POLL_MS		5000
#define QKEY		0x11111111u
#define NO_ENTRY	0xdeadu		/* a handle no device hands out this early */
#define OUTSIDE_GPA	0x1000ull	/* below the guest memory libvrdma sets up */

struct env {
	const char *path[2];
	struct vrdma_ctx *ctx[2];		/* A, B */
	uint8_t gid[2][16];			/* GID index 0 of each */
	struct virtio_rdma_config cfg[2];
	char why[512];
};

#define A 0
#define B 1

/* ---- reporting ---- */

/* The first failure of a test is its "why". Returns false for use in
 * helpers. */
__attribute__((format(printf, 3, 4)))
static bool fail_at(struct env *e, int line, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (e->why[0])
		return false;
	n = snprintf(e->why, sizeof(e->why), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(e->why + n, sizeof(e->why) - n, fmt, ap);
	va_end(ap);
	return false;
}

#define fail(e, ...) fail_at(e, __LINE__, __VA_ARGS__)

static const char *errname(int r)
{
	static char bufs[4][32];
	static unsigned int next;
	static const struct {
		int err;
		const char *name;
	} names[] = {
		{ EINVAL, "EINVAL" }, { ENOENT, "ENOENT" }, { ENOMEM, "ENOMEM" },
		{ EBUSY, "EBUSY" }, { EPERM, "EPERM" }, { EFAULT, "EFAULT" },
		{ EOPNOTSUPP, "EOPNOTSUPP" }, { ETIMEDOUT, "ETIMEDOUT" },
		{ ECONNRESET, "ECONNRESET" }, { EIO, "EIO" }, { EPROTO, "EPROTO" },
		{ EAGAIN, "EAGAIN" }, { ECONNREFUSED, "ECONNREFUSED" },
		{ EHOSTUNREACH, "EHOSTUNREACH" }, { ERANGE, "ERANGE" },
	};
	char *buf = bufs[next++ % 4];
	size_t i;

	for (i = 0; r < 0 && i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == -r) {
			snprintf(buf, sizeof(bufs[0]), "-%s", names[i].name);
			return buf;
		}
	snprintf(buf, sizeof(bufs[0]), "%d", r);
	return buf;
}

/* TRY: must not fail. EXPECT: exactly this result. CHECK: a condition.
 * MUST: a helper that already said why. All jump to the test's "out". */
#define TRY(expr) do {								\
	int r_ = (expr);							\
	if (r_ < 0) {								\
		fail(e, "%s: %s", #expr, errname(r_));				\
		goto out;							\
	}									\
} while (0)
#define EXPECT(expr, want) do {							\
	int r_ = (expr), w_ = (want);						\
	if (r_ != w_) {								\
		fail(e, "%s = %s, want %s", #expr, errname(r_), errname(w_));	\
		goto out;							\
	}									\
} while (0)
#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		fail(e, __VA_ARGS__);						\
		goto out;							\
	}									\
} while (0)
#define MUST(x) do {								\
	if (!(x))								\
		goto out;							\
} while (0)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000l };

	nanosleep(&ts, NULL);
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	/* not periodic in 256, so a misplaced page or packet shows */
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8) * 13 + 1);
}

/* The first byte that differs from fill(seed), or -1. */
static long mismatch(const uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 8) * 13 + 1))
			return (long)i;
	return -1;
}

/* ---- connections ---- */

/* The daemon may still be tearing down our previous connection to the VM
 * (one front-end at a time): retry briefly. */
static int open_vm(struct env *e, int side)
{
	struct vrdma_open_attr attr = { .mem_size = MEM_SIZE };
	int64_t deadline = now_ms() + 3000;
	int ret;

	for (;;) {
		ret = vrdma_open(e->path[side], &attr, &e->ctx[side]);
		/* a refused second front-end sees its connection closed */
		if (!ret || now_ms() > deadline || ret != -ECONNRESET)
			break;
		sleep_ms(20);
	}
	if (ret) {
		e->ctx[side] = NULL;
		return ret;
	}
	ret = vrdma_query_device(e->ctx[side], &e->cfg[side]);
	if (!ret)
		ret = vrdma_query_gid(e->ctx[side], 0, e->gid[side]);
	if (ret) {
		vrdma_close(e->ctx[side]);
		e->ctx[side] = NULL;
	}
	return ret;
}

static void close_vm(struct env *e, int side)
{
	vrdma_close(e->ctx[side]);
	e->ctx[side] = NULL;
}

/* ---- completions ---- */

/* One completion within POLL_MS; asynchronous events are noted and skipped. */
static bool wait_wc(struct env *e, struct vrdma_cq *cq, const char *what, struct virtio_rdma_cqe *wc)
{
	int64_t deadline = now_ms() + POLL_MS;

	for (;;) {
		int n = vrdma_poll_cq(cq, 1, wc);

		if (n < 0)
			return fail(e, "%s: vrdma_poll_cq: %s", what, errname(n));
		if (n == 1 && wc->opcode == VIRTIO_RDMA_WC_ASYNC_EVENT) {
			printf("# %s: asynchronous event %u on QP %u\n", what, wc->vendor_err, wc->qp_num);
			continue;
		}
		if (n == 1)
			return true;
		if (now_ms() > deadline)
			return fail(e, "%s: no completion within %d ms", what, POLL_MS);
		usleep(50);
	}
}

/* A completion with this wr_id, status and opcode (-1: any). */
static bool expect_wc(struct env *e, struct vrdma_cq *cq, const char *what, uint64_t wr_id,
		      uint8_t status, int opcode, struct virtio_rdma_cqe *out)
{
	struct virtio_rdma_cqe wc;
	char where[160];

	/* the wr_id tells which side's completion is missing */
	snprintf(where, sizeof(where), "%s (wr_id %llu)", what, (unsigned long long)wr_id);
	if (!wait_wc(e, cq, where, &wc))
		return false;
	if (wc.wr_id != wr_id || wc.status != status || (opcode >= 0 && wc.opcode != opcode))
		return fail(e, "%s: completion wr_id %llu status %u opcode %u vendor_err %u, "
			    "want wr_id %llu status %u opcode %d", what,
			    (unsigned long long)wc.wr_id, wc.status, wc.opcode, wc.vendor_err,
			    (unsigned long long)wr_id, status, opcode);
	if (out)
		*out = wc;
	return true;
}

/* No completion (other than an asynchronous event) within ms. */
static bool no_wc(struct env *e, struct vrdma_cq *cq, const char *what, unsigned int ms)
{
	int64_t deadline = now_ms() + ms;
	struct virtio_rdma_cqe wc;

	do {
		int n = vrdma_poll_cq(cq, 1, &wc);

		if (n < 0)
			return fail(e, "%s: vrdma_poll_cq: %s", what, errname(n));
		if (n == 1 && wc.opcode != VIRTIO_RDMA_WC_ASYNC_EVENT)
			return fail(e, "%s: unexpected completion wr_id %llu status %u opcode %u",
				    what, (unsigned long long)wc.wr_id, wc.status, wc.opcode);
		usleep(1000);
	} while (now_ms() < deadline);
	return true;
}

/* ---- endpoints: a PD, two CQs, a QP, a registered buffer ---- */

struct ep {
	struct vrdma_ctx *ctx;
	const uint8_t *gid;
	uint8_t type;
	struct vrdma_pd *pd;
	struct vrdma_cq *scq, *rcq;
	struct vrdma_qp *qp;
	uint8_t *buf;
	struct vrdma_mr *mr;
};

struct pair {
	struct ep a, b;
};

static struct vrdma_qp_init_attr qp_init(uint8_t type, struct vrdma_cq *scq, struct vrdma_cq *rcq)
{
	return (struct vrdma_qp_init_attr){
		.qp_type = type, .send_cq = scq, .recv_cq = rcq,
		.max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 4, .max_recv_sge = 4, .max_inline_data = 256,
	};
}

/* An endpoint on side. Its send and receive queues share one CQ (a VM may
 * have only a few) unless split_cqs. */
static bool ep_make2(struct env *e, struct ep *ep, int side, uint8_t type, bool split_cqs)
{
	struct vrdma_qp_init_attr init;

	memset(ep, 0, sizeof(*ep));
	ep->ctx = e->ctx[side];
	ep->gid = e->gid[side];
	ep->type = type;
	TRY(vrdma_alloc_pd(ep->ctx, &ep->pd));
	TRY(vrdma_create_cq(ep->ctx, 64, &ep->scq));
	ep->rcq = ep->scq;
	if (split_cqs)
		TRY(vrdma_create_cq(ep->ctx, 64, &ep->rcq));
	init = qp_init(type, ep->scq, ep->rcq);
	TRY(vrdma_create_qp(ep->pd, &init, &ep->qp));
	ep->buf = vrdma_alloc_buf(ep->ctx, BUF_LEN);
	CHECK(ep->buf, "vrdma_alloc_buf failed");
	TRY(vrdma_reg_mr(ep->pd, ep->buf, BUF_LEN, ACCESS_ALL, &ep->mr));
	return true;
out:
	return false;
}

static bool ep_make(struct env *e, struct ep *ep, int side, uint8_t type)
{
	return ep_make2(e, ep, side, type, false);
}

/* The path MTU connected QPs use: VRDMA_TEST_PATH_MTU in bytes (256..4096),
 * default 1024; the jumbo test runs the data cases at 4096. */
static uint8_t path_mtu(void)
{
	const char *v = getenv("VRDMA_TEST_PATH_MTU");
	uint8_t m;

	for (m = VIRTIO_IB_MTU_256; v && m <= VIRTIO_IB_MTU_4096; m++)
		if ((128u << m) == (unsigned int)atoi(v))
			return m;
	return VIRTIO_IB_MTU_1024;
}

/* qp_connect (qp_connect.h) at the test's path MTU, one READ or atomic
 * each way, the test's Q_Key. */
static int connect_qp(struct vrdma_qp *qp, uint8_t type, uint32_t dest_qpn,
		      const uint8_t dgid[16], uint32_t sq_psn, uint32_t rq_psn)
{
	return qp_connect(qp, type, dest_qpn, dgid, sq_psn, rq_psn, path_mtu(), 1, QKEY);
}

/* Two endpoints, on sides sa and sb (the same side for a loopback pair),
 * connected to each other. */
static bool pair_make2(struct env *e, struct pair *p, uint8_t type, int sa, int sb, bool split_cqs)
{
	MUST(ep_make2(e, &p->a, sa, type, split_cqs));
	MUST(ep_make2(e, &p->b, sb, type, split_cqs));
	TRY(connect_qp(p->a.qp, type, vrdma_qp_num(p->b.qp), p->b.gid, 0x1000, 0x2000));
	TRY(connect_qp(p->b.qp, type, vrdma_qp_num(p->a.qp), p->a.gid, 0x2000, 0x1000));
	return true;
out:
	return false;
}

static bool pair_make(struct env *e, struct pair *p, uint8_t type, int sa, int sb)
{
	return pair_make2(e, p, type, sa, sb, false);
}

static bool post_recv1(struct env *e, struct ep *ep, uint64_t wr_id, void *addr, uint32_t len)
{
	struct vrdma_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = vrdma_mr_lkey(ep->mr) };
	struct vrdma_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = addr ? 1 : 0 };

	TRY(vrdma_post_recv(ep->qp, &wr));
	return true;
out:
	return false;
}

/* ::ffff:a.b.c.d */
static bool is_v4(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, prefix, 12);
}

static bool datagram(uint8_t type)
{
	return type == VIRTIO_IB_QPT_UD || type == VIRTIO_IB_QPT_GSI;
}

/* A send WR from ep with one SGE over [addr, addr + len) (none if addr is
 * NULL); UD WRs are addressed to peer. */
static struct vrdma_send_wr send_wr(struct ep *ep, struct vrdma_sge *sge, uint64_t wr_id,
				    uint32_t opcode, void *addr, uint32_t len, const struct ep *peer)
{
	struct vrdma_send_wr wr = {
		.wr_id = wr_id, .opcode = opcode, .send_flags = VIRTIO_IB_SEND_SIGNALED,
		.sg_list = sge, .num_sge = addr ? 1 : 0,
	};

	*sge = (struct vrdma_sge){ .addr = (uintptr_t)addr, .length = len, .lkey = vrdma_mr_lkey(ep->mr) };
	if (datagram(ep->type) && peer) {
		wr.remote_qpn = vrdma_qp_num(peer->qp);
		wr.remote_qkey = QKEY;
		memcpy(wr.av.dgid, peer->gid, 16);
		wr.av.gid_index = 0;
		wr.av.hop_limit = 64;
		wr.av.port = 1;
	}
	return wr;
}

/* SEND (or SEND_WITH_IMM) of len bytes from s to r, checked to the byte. */
static bool xfer_send(struct env *e, struct ep *s, struct ep *r, uint32_t len, bool imm,
		      unsigned int seed)
{
	uint32_t grh = datagram(s->type) ? GRH_LEN : 0;
	uint32_t imm_data = htonl(0x5eed0000u + seed);
	struct virtio_rdma_cqe wc;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	char what[96];
	long bad;

	snprintf(what, sizeof(what), "%s %s %u bytes",
		 s->type == VIRTIO_IB_QPT_RC ? "RC" : s->type == VIRTIO_IB_QPT_UC ? "UC" :
		 s->type == VIRTIO_IB_QPT_UD ? "UD" : "QP1", imm ? "SEND_WITH_IMM" : "SEND", len);
	fill(s->buf, len, seed);
	memset(r->buf, 0xee, grh + len + 16);
	MUST(post_recv1(e, r, 2000 + seed, r->buf, grh + len + 16));
	wr = send_wr(s, &sge, 1000 + seed, imm ? VIRTIO_IB_WR_SEND_WITH_IMM : VIRTIO_IB_WR_SEND,
		     len ? s->buf : NULL, len, r);
	wr.imm_data = imm_data;
	TRY(vrdma_post_send(s->qp, &wr));
	MUST(expect_wc(e, s->scq, what, 1000 + seed, WC_SUCCESS, WC_SEND, &wc));
	CHECK(wc.qp_num == vrdma_qp_num(s->qp), "%s: send completion qp_num %u, want %u",
	      what, wc.qp_num, vrdma_qp_num(s->qp));
	MUST(expect_wc(e, r->rcq, what, 2000 + seed, WC_SUCCESS, WC_RECV, &wc));
	CHECK(wc.byte_len == grh + len, "%s: byte_len %u, want %u", what, wc.byte_len, grh + len);
	CHECK(wc.qp_num == vrdma_qp_num(r->qp), "%s: recv qp_num %u, want %u",
	      what, wc.qp_num, vrdma_qp_num(r->qp));
	CHECK(!!(wc.wc_flags & WC_WITH_IMM) == imm, "%s: wc_flags %#x", what, wc.wc_flags);
	CHECK(!imm || wc.ex.imm_data == imm_data, "%s: imm_data %#x, want %#x",
	      what, ntohl(wc.ex.imm_data), ntohl(imm_data));
	if (grh) {
		CHECK(wc.wc_flags & WC_GRH, "%s: no IB_WC_GRH in wc_flags %#x", what, wc.wc_flags);
		CHECK(wc.src_qp == vrdma_qp_num(s->qp), "%s: src_qp %u, want %u",
		      what, wc.src_qp, vrdma_qp_num(s->qp));
		CHECK((wc.wc_flags & VIRTIO_RDMA_WC_WITH_NETWORK_HDR_TYPE) &&
		      wc.network_hdr_type == (is_v4(s->gid) ? VIRTIO_RDMA_NETWORK_IPV4 :
					      VIRTIO_RDMA_NETWORK_IPV6),
		      "%s: wc_flags %#x network_hdr_type %u", what, wc.wc_flags,
		      wc.network_hdr_type);
	}
	bad = mismatch(r->buf + grh, len, seed);
	CHECK(bad < 0, "%s: byte %ld differs", what, bad);
	CHECK(r->buf[grh + len] == 0xee, "%s: written past the message", what);
	return true;
out:
	return false;
}

/* RDMA WRITE (or WRITE_WITH_IMM) of len bytes from s into r's buffer at
 * offset roff. */
static bool xfer_write(struct env *e, struct ep *s, struct ep *r, uint32_t len, size_t roff,
		       bool imm, unsigned int seed)
{
	uint32_t imm_data = htonl(0x1a2b0000u + seed);
	struct virtio_rdma_cqe wc;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	char what[96];
	long bad;

	snprintf(what, sizeof(what), "%s %s %u bytes", s->type == VIRTIO_IB_QPT_RC ? "RC" : "UC",
		 imm ? "RDMA_WRITE_WITH_IMM" : "RDMA_WRITE", len);
	fill(s->buf, len, seed);
	memset(r->buf, 0xee, roff + len + 16);
	if (imm)
		MUST(post_recv1(e, r, 2000 + seed, NULL, 0));
	wr = send_wr(s, &sge, 1000 + seed, imm ? VIRTIO_IB_WR_RDMA_WRITE_WITH_IMM : VIRTIO_IB_WR_RDMA_WRITE,
		     len ? s->buf : NULL, len, NULL);
	wr.remote_addr = (uintptr_t)(r->buf + roff);
	wr.rkey = vrdma_mr_rkey(r->mr);
	wr.imm_data = imm_data;
	TRY(vrdma_post_send(s->qp, &wr));
	MUST(expect_wc(e, s->scq, what, 1000 + seed, WC_SUCCESS, WC_RDMA_WRITE, NULL));
	if (imm) {
		MUST(expect_wc(e, r->rcq, what, 2000 + seed, WC_SUCCESS, WC_RECV_RDMA_WITH_IMM, &wc));
		CHECK(wc.wc_flags & WC_WITH_IMM, "%s: wc_flags %#x", what, wc.wc_flags);
		CHECK(wc.ex.imm_data == imm_data, "%s: imm_data %#x, want %#x",
		      what, ntohl(wc.ex.imm_data), ntohl(imm_data));
		CHECK(wc.qp_num == vrdma_qp_num(r->qp), "%s: qp_num %u", what, wc.qp_num);
		/* as rxe and mlx5: the length written */
		CHECK(wc.byte_len == len, "%s: byte_len %u, want %u", what, wc.byte_len, len);
	}
	/* A UC WRITE completes at the sender once sent (IBA 9.8.3): nothing at
	 * the target says when it landed, so give the data a moment. */
	{
		int64_t deadline = now_ms() + (s->type == VIRTIO_IB_QPT_UC && !imm ? 2000 : 0);

		while ((bad = mismatch(r->buf + roff, len, seed)) >= 0 && now_ms() < deadline)
			usleep(1000);
	}
	CHECK(bad < 0, "%s: byte %ld differs", what, bad);
	CHECK(r->buf[roff + len] == 0xee && (!roff || r->buf[roff - 1] == 0xee),
	      "%s: written outside the range", what);
	return true;
out:
	return false;
}

/* RDMA READ of len bytes of r's buffer into s's buffer at offset loff. */
static bool xfer_read(struct env *e, struct ep *s, struct ep *r, uint32_t len, size_t loff,
		      unsigned int seed)
{
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	char what[64];
	long bad;

	snprintf(what, sizeof(what), "RC RDMA_READ %u bytes", len);
	fill(r->buf, len, seed);
	memset(s->buf, 0xee, loff + len + 16);
	wr = send_wr(s, &sge, 1000 + seed, VIRTIO_IB_WR_RDMA_READ, len ? s->buf + loff : NULL, len, NULL);
	wr.remote_addr = (uintptr_t)r->buf;
	wr.rkey = vrdma_mr_rkey(r->mr);
	TRY(vrdma_post_send(s->qp, &wr));
	MUST(expect_wc(e, s->scq, what, 1000 + seed, WC_SUCCESS, WC_RDMA_READ, NULL));
	bad = mismatch(s->buf + loff, len, seed);
	CHECK(bad < 0, "%s: byte %ld differs", what, bad);
	CHECK(s->buf[loff + len] == 0xee && (!loff || s->buf[loff - 1] == 0xee),
	      "%s: written outside the range", what);
	return true;
out:
	return false;
}

/* No completion left over on any CQ of the pair. */
static bool pair_quiet(struct env *e, struct pair *p)
{
	return no_wc(e, p->a.scq, "A send CQ", 50) && no_wc(e, p->a.rcq, "A recv CQ", 50) &&
	       no_wc(e, p->b.scq, "B send CQ", 50) && no_wc(e, p->b.rcq, "B recv CQ", 50);
}

/* Every CQ handle and QP slot of side is free: max_cq CQs and max_qp QPs can
 * be created (and are destroyed again). */
static bool all_free(struct env *e, int side)
{
	const struct virtio_rdma_config *c = &e->cfg[side];
	struct vrdma_cq **cqs = calloc(c->max_cq, sizeof(*cqs));
	struct vrdma_qp **qps = calloc(c->max_qp, sizeof(*qps));
	struct vrdma_qp_init_attr init;
	struct vrdma_pd *pd = NULL;
	bool ok = false;
	uint32_t i;

	CHECK(cqs && qps, "out of memory");
	for (i = 0; i < c->max_cq; i++)
		TRY(vrdma_create_cq(e->ctx[side], 1, &cqs[i]));
	for (i = 1; i < c->max_cq; i++) {
		TRY(vrdma_destroy_cq(cqs[i]));
		cqs[i] = NULL;
	}
	TRY(vrdma_alloc_pd(e->ctx[side], &pd));
	init = (struct vrdma_qp_init_attr){ .qp_type = VIRTIO_IB_QPT_UD, .send_cq = cqs[0], .recv_cq = cqs[0],
					    .max_send_wr = 1, .max_recv_wr = 1,
					    .max_send_sge = 1, .max_recv_sge = 1 };
	for (i = 0; i < c->max_qp; i++)
		TRY(vrdma_create_qp(pd, &init, &qps[i]));
	for (i = 0; i < c->max_qp; i++) {
		TRY(vrdma_destroy_qp(qps[i]));
		qps[i] = NULL;
	}
	TRY(vrdma_destroy_cq(cqs[0]));
	cqs[0] = NULL;
	TRY(vrdma_dealloc_pd(pd));
	ok = true;
out:
	free(cqs);
	free(qps);
	return ok;
}

/* Handles are distinct and below limit. */
static bool distinct(struct env *e, const char *what, const uint32_t *h, uint32_t n, uint32_t base,
		     uint32_t limit)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		if (h[i] < base || h[i] >= base + limit)
			return fail(e, "%s %u out of range [%u, %u)", what, h[i], base, base + limit);
		for (j = 0; j < i; j++)
			if (h[i] == h[j])
				return fail(e, "%s %u handed out twice", what, h[i]);
	}
	return true;
}

/* A raw control command that must answer with this status (and, on OK,
 * write the whole response). */
static bool raw_status(struct env *e, int side, uint8_t cmd, const void *req, size_t req_len,
		       size_t rsp_len, uint8_t want, const char *what)
{
	uint8_t rsp[512] = { 0 }, status = 0xff;
	uint32_t written = 0;
	int ret;

	ret = vrdma_ctrl_raw(e->ctx[side], cmd, req, req_len, rsp, rsp_len, &status, &written);
	if (ret)
		return fail(e, "%s: vrdma_ctrl_raw: %s", what, errname(ret));
	if (status != want)
		return fail(e, "%s: status %u, want %u", what, status, want);
	if (written != (want == VIRTIO_RDMA_OK ? rsp_len : 0))
		return fail(e, "%s: %u response bytes written", what, written);
	return true;
}

/* The first empty GID table entry at or after from, or -1. */
static int free_gid_index(struct env *e, int side, int from)
{
	uint8_t gid[16];
	int i;

	for (i = from; i < VIRTIO_RDMA_GID_TBL_LEN; i++)
		if (vrdma_query_gid(e->ctx[side], i, gid) == -ENOENT)
			return i;
	return -1;
}

/* ---- 1. the configuration space and the control queue ---- */

static void t_query_device(struct env *e)
{
	int s;

	for (s = A; s <= B; s++) {
		const struct virtio_rdma_config *c = &e->cfg[s];
		const char *vm = s == A ? "A" : "B";

		CHECK(c->phys_port_cnt == 1, "%s: phys_port_cnt %u", vm, c->phys_port_cnt);
		CHECK(c->vendor_id == 0 && c->vendor_part_id == 0 && c->hw_ver == 1,
		      "%s: vendor %u/%u hw_ver %u", vm, c->vendor_id, c->vendor_part_id, c->hw_ver);
		CHECK(c->max_mr_size == 1ull << 32, "%s: max_mr_size %llu", vm,
		      (unsigned long long)c->max_mr_size);
		CHECK(c->page_size_cap == 4096, "%s: page_size_cap %llu", vm,
		      (unsigned long long)c->page_size_cap);
		CHECK(c->max_qp >= 1 && c->max_cq >= 1, "%s: max_qp %u max_cq %u", vm, c->max_qp, c->max_cq);
		CHECK(c->max_qp_wr == 4096, "%s: max_qp_wr %u", vm, c->max_qp_wr);
		CHECK(c->max_ah == 65536, "%s: max_ah %u", vm, c->max_ah);
		CHECK(c->device_cap_flags == (VIRTIO_RDMA_DEV_RC_RNR_NAK_GEN |
					      VIRTIO_RDMA_DEV_SRQ_RESIZE |
					      VIRTIO_RDMA_DEV_MEM_MGT_EXTENSIONS |
					      VIRTIO_RDMA_DEV_MEM_WINDOW |
					      VIRTIO_RDMA_DEV_MEM_WINDOW_TYPE_2B),
		      "%s: device_cap_flags %#llx", vm, (unsigned long long)c->device_cap_flags);
		CHECK(c->max_mw == c->max_mr, "%s: max_mw %u, max_mr %u", vm, c->max_mw, c->max_mr);
		CHECK(c->max_send_sge == 32 && c->max_recv_sge == 32 && c->max_sge_rd == 32,
		      "%s: sge limits %u/%u/%u", vm, c->max_send_sge, c->max_recv_sge, c->max_sge_rd);
		CHECK(c->max_cqe == 65536, "%s: max_cqe %u", vm, c->max_cqe);
		CHECK(c->max_mr == 4096 && c->max_pd == 1024, "%s: max_mr %u max_pd %u",
		      vm, c->max_mr, c->max_pd);
		CHECK(c->max_qp_rd_atom == 16 && c->max_qp_init_rd_atom == 16 &&
		      c->max_res_rd_atom == 16 * c->max_qp, "%s: rd_atom limits %u/%u/%u",
		      vm, c->max_qp_rd_atom, c->max_qp_init_rd_atom, c->max_res_rd_atom);
		CHECK(c->atomic_cap == VIRTIO_IB_ATOMIC_HCA, "%s: atomic_cap %u", vm, c->atomic_cap);
		CHECK(c->max_fast_reg_page_list_len == (1u << 20) + 1, "%s: max_fast_reg_page_list_len %u",
		      vm, c->max_fast_reg_page_list_len);
		CHECK(c->max_pkeys == 1 && c->local_ca_ack_delay == 15, "%s: max_pkeys %u ack_delay %u",
		      vm, c->max_pkeys, c->local_ca_ack_delay);
	}
	CHECK(memcmp(e->gid[A], e->gid[B], 16), "A and B have the same GID 0");
out:;
}

static void t_query_port(struct env *e)
{
	struct virtio_rdma_rsp_query_port port;

	memset(&port, 0, sizeof(port));
	TRY(vrdma_query_port(e->ctx[A], 1, &port));
	CHECK(port.state == 4 && port.phys_state == 5, "state %u phys_state %u",
	      port.state, port.phys_state);
	CHECK(port.active_mtu >= 1 && port.active_mtu <= 5 && port.max_mtu == port.active_mtu,
	      "max_mtu %u active_mtu %u", port.max_mtu, port.active_mtu);
	CHECK(port.phys_mtu >= 128u << port.active_mtu, "phys_mtu %u for active_mtu %u",
	      port.phys_mtu, port.active_mtu);
	/* the port offers the path MTU the connected QPs are to use */
	CHECK(port.active_mtu >= path_mtu(), "active_mtu %u below the test's path MTU %u",
	      port.active_mtu, path_mtu());
	CHECK(port.gid_tbl_len == 16 && port.pkey_tbl_len == 1, "gid_tbl_len %u pkey_tbl_len %u",
	      port.gid_tbl_len, port.pkey_tbl_len);
	CHECK(port.max_msg_sz == 1u << 31, "max_msg_sz %u", port.max_msg_sz);
	CHECK(port.port_cap_flags & IB_PORT_CM_SUP, "port_cap_flags %#x", port.port_cap_flags);
	CHECK(port.active_width == IB_WIDTH_4X && port.active_speed == IB_SPEED_EDR,
	      "width %u speed %u", port.active_width, port.active_speed);
	EXPECT(vrdma_query_port(e->ctx[A], 2, &port), -EINVAL);
	EXPECT(vrdma_query_port(e->ctx[A], 0, &port), -EINVAL);
out:;
}

static void t_query_pkey(struct env *e)
{
	uint16_t pkey = 0;

	TRY(vrdma_query_pkey(e->ctx[A], 1, 0, &pkey));
	CHECK(pkey == 0xffff, "pkey %#x", pkey);
	EXPECT(vrdma_query_pkey(e->ctx[A], 1, 1, &pkey), -EINVAL);
	EXPECT(vrdma_query_pkey(e->ctx[A], 2, 0, &pkey), -EINVAL);
out:;
}

static void t_create_cq(struct env *e)
{
	uint32_t i, freed, max_cq = e->cfg[A].max_cq;
	struct vrdma_cq *cq = NULL, *big, *extra;
	struct vrdma_cq **cqs;
	uint32_t *cqn;

	cqs = calloc(max_cq, sizeof(*cqs));
	cqn = calloc(max_cq, sizeof(*cqn));
	CHECK(cqs && cqn, "out of memory");
	EXPECT(vrdma_create_cq(e->ctx[A], 0, &cq), -EINVAL);
	EXPECT(vrdma_create_cq(e->ctx[A], e->cfg[A].max_cqe + 1, &cq), -EINVAL);
	TRY(vrdma_create_cq(e->ctx[A], e->cfg[A].max_cqe, &big));
	TRY(vrdma_destroy_cq(big));
	for (i = 0; i < max_cq; i++) {
		TRY(vrdma_create_cq(e->ctx[A], 1, &cqs[i]));
		cqn[i] = vrdma_cq_handle(cqs[i]);
	}
	MUST(distinct(e, "cqn", cqn, max_cq, 0, max_cq));
	EXPECT(vrdma_create_cq(e->ctx[A], 1, &extra), -ENOMEM);
	/* the one free handle is the one just freed; its queue is set up again */
	freed = cqn[max_cq / 2];
	TRY(vrdma_destroy_cq(cqs[max_cq / 2]));
	TRY(vrdma_create_cq(e->ctx[A], 1, &cqs[max_cq / 2]));
	CHECK(vrdma_cq_handle(cqs[max_cq / 2]) == freed, "re-created cqn %u, want %u",
	      vrdma_cq_handle(cqs[max_cq / 2]), freed);
	/* the limit is per VM: B still has all its CQs */
	TRY(vrdma_create_cq(e->ctx[B], 1, &cq));
out:
	free(cqs);
	free(cqn);
}

static void t_destroy_cq(struct env *e)
{
	struct virtio_rdma_cmd_destroy_cq req = { .cqn = NO_ENTRY };
	struct vrdma_qp_init_attr init;
	struct vrdma_cq *cq, *cq2;
	struct vrdma_qp *qp;
	struct vrdma_pd *pd;
	uint32_t cqn;

	TRY(vrdma_create_cq(e->ctx[A], 16, &cq));
	cqn = vrdma_cq_handle(cq);
	TRY(vrdma_destroy_cq(cq));
	req.cqn = cqn;
	MUST(raw_status(e, A, VIRTIO_CMD_DESTROY_CQ, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DESTROY_CQ of a destroyed CQ"));
	req.cqn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_DESTROY_CQ, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DESTROY_CQ of an unknown CQ"));

	TRY(vrdma_alloc_pd(e->ctx[A], &pd));
	TRY(vrdma_create_cq(e->ctx[A], 16, &cq));
	TRY(vrdma_create_cq(e->ctx[A], 16, &cq2));
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq2);
	TRY(vrdma_create_qp(pd, &init, &qp));
	EXPECT(vrdma_destroy_cq(cq), -EBUSY);
	EXPECT(vrdma_destroy_cq(cq2), -EBUSY);
	req.cqn = vrdma_cq_handle(cq);
	TRY(vrdma_destroy_qp(qp));
	TRY(vrdma_destroy_cq(cq));
	TRY(vrdma_destroy_cq(cq2));
	/* the queues were reset: every handle can be set up again */
	MUST(all_free(e, A));
out:;
}

static void t_pd(struct env *e)
{
	struct virtio_rdma_cmd_destroy_pd req = { .pdn = NO_ENTRY };
	struct vrdma_qp_init_attr init;
	struct vrdma_pd *pd, *pd2;
	struct vrdma_qp *qp;
	struct vrdma_cq *cq;
	struct vrdma_mr *mr;
	uint8_t *buf;

	TRY(vrdma_alloc_pd(e->ctx[A], &pd));
	TRY(vrdma_alloc_pd(e->ctx[A], &pd2));
	CHECK(vrdma_pd_handle(pd) != vrdma_pd_handle(pd2), "two PDs with pdn %u", vrdma_pd_handle(pd));
	req.pdn = vrdma_pd_handle(pd2);
	TRY(vrdma_dealloc_pd(pd2));
	MUST(raw_status(e, A, VIRTIO_CMD_DESTROY_PD, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DESTROY_PD of a destroyed PD"));
	req.pdn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_DESTROY_PD, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DESTROY_PD of an unknown PD"));

	buf = vrdma_alloc_buf(e->ctx[A], 8192);
	CHECK(buf, "vrdma_alloc_buf failed");
	TRY(vrdma_reg_mr(pd, buf, 8192, ACCESS_ALL, &mr));
	EXPECT(vrdma_dealloc_pd(pd), -EBUSY);
	TRY(vrdma_dereg_mr(mr));
	TRY(vrdma_create_cq(e->ctx[A], 16, &cq));
	init = qp_init(VIRTIO_IB_QPT_UD, cq, cq);
	TRY(vrdma_create_qp(pd, &init, &qp));
	EXPECT(vrdma_dealloc_pd(pd), -EBUSY);
	TRY(vrdma_destroy_qp(qp));
	TRY(vrdma_dealloc_pd(pd));
out:;
}

static void t_get_dma_mr(struct env *e)
{
	struct virtio_rdma_cmd_get_dma_mr req = { .pdn = NO_ENTRY, .access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE };
	struct vrdma_pd *pd;
	struct vrdma_mr *mr;

	TRY(vrdma_alloc_pd(e->ctx[A], &pd));
	TRY(vrdma_get_dma_mr(pd, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr));
	MUST(raw_status(e, A, VIRTIO_CMD_GET_DMA_MR, &req, sizeof(req), sizeof(struct virtio_rdma_rsp_mr),
			VIRTIO_RDMA_ERR_NOENT, "GET_DMA_MR with an unknown PD"));
	TRY(vrdma_dereg_mr(mr));
	TRY(vrdma_dealloc_pd(pd));
out:;
}

static void t_create_mr_map(struct env *e)
{
	struct virtio_rdma_cmd_map_mr_sg map = { 0 };
	struct vrdma_mr *fmr, *small, *mr;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	struct pair p;
	uint8_t *target;
	long bad;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	EXPECT(vrdma_create_mr(p.a.pd, ACCESS_ALL, 0, &mr), -EINVAL);
	EXPECT(vrdma_create_mr(p.a.pd, ACCESS_ALL, e->cfg[A].max_fast_reg_page_list_len + 1, &mr),
	       -EINVAL);
	TRY(vrdma_create_mr(p.a.pd, VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE, 16, &fmr));
	target = vrdma_alloc_buf(e->ctx[A], 16 * 4096);
	CHECK(target, "vrdma_alloc_buf failed");
	memset(target, 0xee, 16 * 4096);
	/* a range that starts inside a page: 4 pages for 3 pages' length */
	TRY(vrdma_map_mr_sg(fmr, target + 512, 3 * 4096));
	/* FREE until a REG_MR work request makes it VALID (IBA 10.6.3.6) */
	vrdma_update_fast_reg_key(fmr, (uint8_t)(vrdma_mr_rkey(fmr) + 1));
	wr = (struct vrdma_send_wr){ .wr_id = 76, .opcode = VIRTIO_IB_WR_REG_MR,
		.send_flags = VIRTIO_IB_SEND_SIGNALED,
		.reg = { vrdma_mr_handle(fmr), vrdma_mr_rkey(fmr),
			 VIRTIO_IB_ACCESS_LOCAL_WRITE | VIRTIO_IB_ACCESS_REMOTE_WRITE } };
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.a.scq, "REG_MR of a CREATE_MR MR", 76, WC_SUCCESS, WC_REG_MR, NULL));

	/* B writes through the fast-registration MR, across page boundaries */
	fill(p.b.buf, 8192, 7);
	wr = send_wr(&p.b, &sge, 77, VIRTIO_IB_WR_RDMA_WRITE, p.b.buf, 8192, NULL);
	wr.remote_addr = (uintptr_t)(target + 512 + 100);
	wr.rkey = vrdma_mr_rkey(fmr);
	TRY(vrdma_post_send(p.b.qp, &wr));
	MUST(expect_wc(e, p.b.scq, "RDMA_WRITE through a MAP_MR_SG MR", 77, WC_SUCCESS, WC_RDMA_WRITE, NULL));
	bad = mismatch(target + 612, 8192, 7);
	CHECK(bad < 0, "byte %ld written through the MR differs", bad);
	CHECK(target[611] == 0xee && target[612 + 8192] == 0xee, "written outside the range");

	TRY(vrdma_create_mr(p.a.pd, ACCESS_ALL, 1, &small));
	EXPECT(vrdma_map_mr_sg(small, target, 2 * 4096), -EINVAL);
	map.mrn = vrdma_mr_handle(small);
	map.npages = 1;
	map.start = (uintptr_t)target;
	map.length = 4096;
	map.pages = OUTSIDE_GPA;
	MUST(raw_status(e, A, VIRTIO_CMD_MAP_MR_SG, &map, sizeof(map),
			sizeof(struct virtio_rdma_rsp_map_mr_sg), VIRTIO_RDMA_ERR_FAULT,
			"MAP_MR_SG with its page array outside guest memory"));
	MUST(pair_quiet(e, &p));
out:;
}

static void t_reg_user_mr(struct env *e)
{
	struct virtio_rdma_cmd_reg_user_mr req = { 0 };
	const size_t rsp_len = sizeof(struct virtio_rdma_rsp_mr);
	struct vrdma_pd *pd;
	struct vrdma_mr *mr;
	uint64_t *pages;
	uint8_t *buf;

	TRY(vrdma_alloc_pd(e->ctx[A], &pd));
	buf = vrdma_alloc_buf(e->ctx[A], 4 * 4096);
	pages = vrdma_alloc_buf(e->ctx[A], 4096);
	CHECK(buf && pages, "vrdma_alloc_buf failed");
	TRY(vrdma_reg_mr(pd, buf + 100, 5000, ACCESS_ALL, &mr));
	CHECK(vrdma_mr_lkey(mr) || vrdma_mr_rkey(mr), "lkey and rkey are 0");
	TRY(vrdma_reg_mr(pd, buf, 4 * 4096, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr));

	req.pdn = vrdma_pd_handle(pd);
	req.access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	req.start = req.virt_addr = 0x7000000;
	req.length = 4096;
	req.pages = vrdma_gpa(e->ctx[A], pages);
	req.npages = 1;
	pages[0] = vrdma_gpa(e->ctx[A], buf);
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_OK,
			"REG_USER_MR of one page"));
	pages[0] = vrdma_gpa(e->ctx[A], buf) + 8;
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_INVAL,
			"REG_USER_MR with a page not 4 KiB aligned"));
	pages[0] = OUTSIDE_GPA;
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_FAULT,
			"REG_USER_MR with a page outside guest memory"));
	pages[0] = 0xfffffffffffff000ull;
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_FAULT,
			"REG_USER_MR with a page at the top of the address space"));
	pages[0] = vrdma_gpa(e->ctx[A], buf);
	req.pages = OUTSIDE_GPA;
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_FAULT,
			"REG_USER_MR with its page array outside guest memory"));
	req.pages = vrdma_gpa(e->ctx[A], pages);
	req.length = 4097;
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_INVAL,
			"REG_USER_MR longer than its pages"));
	req.length = 4096;
	req.pdn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_NOENT,
			"REG_USER_MR with an unknown PD"));
out:;
}

static void t_dereg_mr(struct env *e)
{
	struct virtio_rdma_cmd_dereg_mr req = { .mrn = NO_ENTRY };
	struct vrdma_pd *pd;
	struct vrdma_mr *mr;
	uint8_t *buf;

	TRY(vrdma_alloc_pd(e->ctx[A], &pd));
	buf = vrdma_alloc_buf(e->ctx[A], 4096);
	CHECK(buf, "vrdma_alloc_buf failed");
	TRY(vrdma_reg_mr(pd, buf, 4096, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mr));
	req.mrn = vrdma_mr_handle(mr);
	TRY(vrdma_dereg_mr(mr));
	MUST(raw_status(e, A, VIRTIO_CMD_DEREG_MR, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DEREG_MR of a deregistered MR"));
	req.mrn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_DEREG_MR, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DEREG_MR of an unknown MR"));
	TRY(vrdma_dealloc_pd(pd));
out:;
}

static void t_create_qp(struct env *e)
{
	struct virtio_rdma_cmd_create_qp req = { 0 };
	const size_t rsp_len = sizeof(struct virtio_rdma_rsp_create_qp);
	const struct virtio_rdma_config *c = &e->cfg[A];
	struct vrdma_qp_init_attr init;
	struct vrdma_qp *qp, **qps = NULL;
	uint32_t *qpn = NULL;
	struct vrdma_cq *cq;
	struct vrdma_pd *pd;
	uint32_t i;

	qps = calloc(c->max_qp, sizeof(*qps));
	qpn = calloc(c->max_qp, sizeof(*qpn));
	CHECK(qps && qpn && c->max_qp >= 3, "out of memory, or max_qp %u < 3", c->max_qp);
	TRY(vrdma_alloc_pd(e->ctx[A], &pd));
	TRY(vrdma_create_cq(e->ctx[A], 64, &cq));
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq);
	TRY(vrdma_create_qp(pd, &init, &qps[0]));
	init.qp_type = VIRTIO_IB_QPT_UC;
	TRY(vrdma_create_qp(pd, &init, &qps[1]));
	init.qp_type = VIRTIO_IB_QPT_UD;
	TRY(vrdma_create_qp(pd, &init, &qps[2]));

	/* QP0: no subnet management on RoCE; QP1 is t_gsi's */
	init.qp_type = VIRTIO_IB_QPT_SMI;
	EXPECT(vrdma_create_qp(pd, &init, &qp), -EOPNOTSUPP);
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq);
	init.max_send_wr = c->max_qp_wr + 1;
	EXPECT(vrdma_create_qp(pd, &init, &qp), -EINVAL);
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq);
	init.max_recv_wr = c->max_qp_wr + 1;
	EXPECT(vrdma_create_qp(pd, &init, &qp), -EINVAL);
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq);
	init.max_send_sge = c->max_send_sge + 1;
	EXPECT(vrdma_create_qp(pd, &init, &qp), -EINVAL);
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq);
	init.max_recv_sge = c->max_recv_sge + 1;
	EXPECT(vrdma_create_qp(pd, &init, &qp), -EINVAL);
	init = qp_init(VIRTIO_IB_QPT_RC, cq, cq);
	init.max_inline_data = 513;
	EXPECT(vrdma_create_qp(pd, &init, &qp), -EINVAL);

	req.pdn = vrdma_pd_handle(pd);
	req.qp_type = VIRTIO_IB_QPT_RC;
	req.max_send_wr = req.max_recv_wr = 4;
	req.max_send_sge = req.max_recv_sge = 1;
	req.send_cqn = NO_ENTRY;
	req.recv_cqn = vrdma_cq_handle(cq);
	MUST(raw_status(e, A, VIRTIO_CMD_CREATE_QP, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_NOENT,
			"CREATE_QP with an unknown send CQ"));
	req.send_cqn = vrdma_cq_handle(cq);
	req.recv_cqn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_CREATE_QP, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_NOENT,
			"CREATE_QP with an unknown recv CQ"));
	req.recv_cqn = vrdma_cq_handle(cq);
	req.pdn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_CREATE_QP, &req, sizeof(req), rsp_len, VIRTIO_RDMA_ERR_NOENT,
			"CREATE_QP with an unknown PD"));

	/* max_qp, then NOMEM; QPNs distinct, random in [16, 2^24 - 1) */
	init = qp_init(VIRTIO_IB_QPT_UD, cq, cq);
	init.max_send_wr = init.max_recv_wr = 1;
	init.max_send_sge = init.max_recv_sge = 1;
	init.max_inline_data = 0;
	for (i = 3; i < c->max_qp; i++)
		TRY(vrdma_create_qp(pd, &init, &qps[i]));
	for (i = 0; i < c->max_qp; i++)
		qpn[i] = vrdma_qp_num(qps[i]);
	MUST(distinct(e, "qpn", qpn, c->max_qp, VIRTIO_RDMA_FIRST_QPN,
		      VIRTIO_RDMA_LAST_QPN - VIRTIO_RDMA_FIRST_QPN + 1));
	EXPECT(vrdma_create_qp(pd, &init, &qp), -ENOMEM);
out:
	free(qps);
	free(qpn);
}

static void t_modify_qp(struct env *e)
{
	struct virtio_rdma_qp_attr a, q;
	struct pair p;
	int idx;

	MUST(ep_make(e, &p.a, A, VIRTIO_IB_QPT_RC));
	MUST(ep_make(e, &p.b, B, VIRTIO_IB_QPT_RC));
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTS;
	EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE), -EINVAL);
	a.qp_state = VIRTIO_IB_QPS_RTR;
	EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE), -EINVAL);
	/* RESET -> INIT needs PKEY_INDEX, PORT and ACCESS_FLAGS on RC */
	a.qp_state = VIRTIO_IB_QPS_INIT;
	EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE), -EINVAL);
	TRY(vrdma_query_qp(p.a.qp, VIRTIO_IB_QP_STATE, &q));
	CHECK(q.qp_state == VIRTIO_IB_QPS_RESET, "state %u after refused changes", q.qp_state);

	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = ACCESS_ALL;
	TRY(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT | VIRTIO_IB_QP_ACCESS_FLAGS));
	a.qp_state = VIRTIO_IB_QPS_RTS;
	EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN), -EINVAL);

	/* RTR with an AV naming an empty GID entry, or with an alternate path */
	idx = free_gid_index(e, A, 1);
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RTR;
	a.path_mtu = VIRTIO_IB_MTU_1024;
	a.dest_qp_num = vrdma_qp_num(p.b.qp);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.grh.dgid, p.b.gid, 16);
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.ah_flags = VIRTIO_IB_AH_GRH;
	if (idx > 0) {
		a.ah_attr.grh.sgid_index = idx;
		EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU |
				       VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
				       VIRTIO_IB_QP_MIN_RNR_TIMER), -EINVAL);
	}
	a.ah_attr.grh.sgid_index = 0;
	a.alt_ah_attr = a.ah_attr;
	a.alt_port_num = 1;
	EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
			       VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER |
			       VIRTIO_IB_QP_ALT_PATH), -EINVAL);
	TRY(vrdma_query_qp(p.a.qp, VIRTIO_IB_QP_STATE, &q));
	CHECK(q.qp_state == VIRTIO_IB_QPS_INIT, "state %u after refused changes", q.qp_state);

	/* then the whole way, from RESET */
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RESET;
	TRY(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE));
	TRY(connect_qp(p.a.qp, VIRTIO_IB_QPT_RC, vrdma_qp_num(p.b.qp), p.b.gid, 1, 2));
	TRY(connect_qp(p.b.qp, VIRTIO_IB_QPT_RC, vrdma_qp_num(p.a.qp), p.a.gid, 2, 1));
	TRY(vrdma_query_qp(p.a.qp, VIRTIO_IB_QP_STATE, &q));
	CHECK(q.qp_state == VIRTIO_IB_QPS_RTS, "state %u after connecting", q.qp_state);
	MUST(xfer_send(e, &p.a, &p.b, 100, false, 1));
	/* RTS -> INIT is not a transition */
	a.qp_state = VIRTIO_IB_QPS_INIT;
	EXPECT(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE), -EINVAL);
	a.qp_state = VIRTIO_IB_QPS_ERR;
	TRY(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE));
	TRY(vrdma_query_qp(p.a.qp, VIRTIO_IB_QP_STATE, &q));
	CHECK(q.qp_state == VIRTIO_IB_QPS_ERR, "state %u after ERR", q.qp_state);
	a.qp_state = VIRTIO_IB_QPS_RESET;
	TRY(vrdma_modify_qp(p.a.qp, &a, VIRTIO_IB_QP_STATE));
out:;
}

static void t_query_qp(struct env *e)
{
	struct virtio_rdma_qp_attr q;
	struct ep ud;
	struct pair p;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	memset(&q, 0xa5, sizeof(q));
	TRY(vrdma_query_qp(p.a.qp, VIRTIO_IB_QP_STATE, &q));	/* every attribute, whatever the mask */
	CHECK(q.qp_state == VIRTIO_IB_QPS_RTS, "qp_state %u", q.qp_state);
	CHECK(q.path_mtu == path_mtu(), "path_mtu %u, want %u", q.path_mtu, path_mtu());
	CHECK(q.dest_qp_num == vrdma_qp_num(p.b.qp), "dest_qp_num %u, want %u",
	      q.dest_qp_num, vrdma_qp_num(p.b.qp));
	CHECK(q.rq_psn == 0x2000 && q.sq_psn == 0x1000, "rq_psn %#x sq_psn %#x", q.rq_psn, q.sq_psn);
	CHECK(q.qp_access_flags == ACCESS_ALL, "qp_access_flags %#x", q.qp_access_flags);
	CHECK(q.pkey_index == 0 && q.port_num == 1, "pkey_index %u port_num %u", q.pkey_index, q.port_num);
	CHECK(q.timeout == 14 && q.retry_cnt == 7 && q.rnr_retry == 7,
	      "timeout %u retry_cnt %u rnr_retry %u", q.timeout, q.retry_cnt, q.rnr_retry);
	CHECK(q.max_rd_atomic == 1 && q.max_dest_rd_atomic == 1 && q.min_rnr_timer == 12,
	      "max_rd_atomic %u max_dest_rd_atomic %u min_rnr_timer %u",
	      q.max_rd_atomic, q.max_dest_rd_atomic, q.min_rnr_timer);
	CHECK(!memcmp(q.ah_attr.grh.dgid, p.b.gid, 16) && q.ah_attr.grh.sgid_index == 0,
	      "ah_attr dgid or sgid_index %u differs", q.ah_attr.grh.sgid_index);
	CHECK(q.cap.max_send_wr >= 16 && q.cap.max_recv_wr >= 16 && q.cap.max_send_sge >= 4 &&
	      q.cap.max_recv_sge >= 4 && q.cap.max_inline_data >= 256,
	      "cap %u/%u/%u/%u/%u", q.cap.max_send_wr, q.cap.max_recv_wr, q.cap.max_send_sge,
	      q.cap.max_recv_sge, q.cap.max_inline_data);

	MUST(ep_make(e, &ud, A, VIRTIO_IB_QPT_UD));
	TRY(vrdma_query_qp(ud.qp, 0, &q));
	CHECK(q.qp_state == VIRTIO_IB_QPS_RESET, "UD qp_state %u", q.qp_state);
	TRY(connect_qp(ud.qp, VIRTIO_IB_QPT_UD, 0, NULL, 0x33, 0));
	TRY(vrdma_query_qp(ud.qp, 0, &q));
	CHECK(q.qp_state == VIRTIO_IB_QPS_RTS && q.qkey == QKEY && q.sq_psn == 0x33,
	      "UD qp_state %u qkey %#x sq_psn %#x", q.qp_state, q.qkey, q.sq_psn);
out:;
}

static void t_destroy_qp(struct env *e)
{
	struct virtio_rdma_cmd_destroy_qp req = { .qpn = NO_ENTRY };
	struct virtio_rdma_qp_attr a;
	struct vrdma_qp *qp2;
	struct vrdma_qp_init_attr init;
	struct ep ep;
	uint32_t qpn;

	MUST(ep_make(e, &ep, A, VIRTIO_IB_QPT_RC));
	qpn = vrdma_qp_num(ep.qp);
	/* INIT takes receives (RESET would refuse them) */
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	TRY(vrdma_modify_qp(ep.qp, &a, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT |
				       VIRTIO_IB_QP_ACCESS_FLAGS));
	/* outstanding work goes without completions */
	MUST(post_recv1(e, &ep, 1, ep.buf, 4096));
	MUST(post_recv1(e, &ep, 2, ep.buf, 4096));
	TRY(vrdma_destroy_qp(ep.qp));
	MUST(no_wc(e, ep.rcq, "recv CQ after DESTROY_QP", 200));
	req.qpn = qpn;
	MUST(raw_status(e, A, VIRTIO_CMD_DESTROY_QP, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DESTROY_QP of a destroyed QP"));
	req.qpn = NO_ENTRY;
	MUST(raw_status(e, A, VIRTIO_CMD_DESTROY_QP, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"DESTROY_QP of an unknown QP"));
	/* its slot and queues can be used again */
	init = qp_init(VIRTIO_IB_QPT_RC, ep.scq, ep.rcq);
	TRY(vrdma_create_qp(ep.pd, &init, &qp2));
	ep.qp = qp2;
	MUST(post_recv1(e, &ep, 3, ep.buf, 4096));
	TRY(vrdma_destroy_qp(qp2));
	TRY(vrdma_destroy_cq(ep.scq));
	MUST(all_free(e, A));
out:;
}

static void t_add_gid(struct env *e)
{
	struct virtio_rdma_cmd_add_gid req = { .gid_type = 2, .port_num = 1 };
	uint8_t gid[16], ll[16] = { 0xfe, 0x80 };
	int idx, idx2 = -1;

	idx = free_gid_index(e, A, 1);
	CHECK(idx > 0, "no free GID entry on A");
	TRY(vrdma_add_gid(e->ctx[A], idx, e->gid[A]));
	TRY(vrdma_query_gid(e->ctx[A], idx, gid));
	CHECK(!memcmp(gid, e->gid[A], 16), "GID entry %d does not read back", idx);
	/* the link-local GID of the VM's MAC: sys_image_guid is its EUI-64 */
	idx2 = free_gid_index(e, A, idx + 1);
	if (idx2 > 0 && e->cfg[A].sys_image_guid) {
		int r;

		/* allowed for a VM with its own mac =; with the NIC's MAC it
		 * would be the host's address (PERM), and we cannot tell which */
		memcpy(ll + 8, &e->cfg[A].sys_image_guid, 8);
		r = vrdma_add_gid(e->ctx[A], idx2, ll);
		CHECK(r == 0 || r == -EPERM, "ADD_GID of the link-local GID: %s", errname(r));
		if (r == -EPERM) {
			printf("# ADD_GID of A's link-local GID: PERM (A has no mac = of its own?)\n");
		} else {
			TRY(vrdma_query_gid(e->ctx[A], idx2, gid));
			CHECK(!memcmp(gid, ll, 16), "link-local GID entry %d does not read back", idx2);
			TRY(vrdma_del_gid(e->ctx[A], idx2));
		}
	}
	idx2 = free_gid_index(e, A, 1);
	CHECK(idx2 > 0, "no free GID entry on A");
	EXPECT(vrdma_add_gid(e->ctx[A], idx2, e->gid[B]), -EPERM);
	EXPECT(vrdma_query_gid(e->ctx[A], idx2, gid), -ENOENT);
	memcpy(req.gid, e->gid[A], 16);
	req.index = idx2;
	req.gid_type = GID_TYPE_ROCE_V1;
	MUST(raw_status(e, A, VIRTIO_CMD_ADD_GID, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_UNSUPP,
			"ADD_GID of a RoCEv1 GID"));
	req.gid_type = 2;
	req.index = VIRTIO_RDMA_GID_TBL_LEN;
	MUST(raw_status(e, A, VIRTIO_CMD_ADD_GID, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_INVAL,
			"ADD_GID at index 16"));
	req.index = idx2;
	req.port_num = 2;
	MUST(raw_status(e, A, VIRTIO_CMD_ADD_GID, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_INVAL,
			"ADD_GID on port 2"));
	TRY(vrdma_del_gid(e->ctx[A], idx));
	idx = -1;
out:
	/* the table is the VM's, not the connection's: put it back */
	if (idx > 0)
		vrdma_del_gid(e->ctx[A], idx);
}

static void t_del_gid(struct env *e)
{
	uint8_t gid[16];
	int idx;

	idx = free_gid_index(e, A, 1);
	CHECK(idx > 0, "no free GID entry on A");
	EXPECT(vrdma_del_gid(e->ctx[A], idx), -ENOENT);
	TRY(vrdma_add_gid(e->ctx[A], idx, e->gid[A]));
	TRY(vrdma_del_gid(e->ctx[A], idx));
	EXPECT(vrdma_query_gid(e->ctx[A], idx, gid), -ENOENT);
	EXPECT(vrdma_del_gid(e->ctx[A], idx), -ENOENT);
	/* GID 0 is still there */
	TRY(vrdma_query_gid(e->ctx[A], 0, gid));
	CHECK(!memcmp(gid, e->gid[A], 16), "GID 0 changed");
out:;
}

/* One SEND A -> B, with solicited as asked, both completions polled when
 * poll is set. */
static bool send_one(struct env *e, struct pair *p, uint64_t id, bool solicited, bool poll)
{
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;

	MUST(post_recv1(e, &p->b, id, p->b.buf, 4096));
	wr = send_wr(&p->a, &sge, id, VIRTIO_IB_WR_SEND, p->a.buf, 64, NULL);
	if (solicited)
		wr.send_flags |= VIRTIO_IB_SEND_SOLICITED;
	TRY(vrdma_post_send(p->a.qp, &wr));
	MUST(expect_wc(e, p->a.scq, "send", id, WC_SUCCESS, WC_SEND, NULL));
	if (poll)
		MUST(expect_wc(e, p->b.rcq, "recv", id, WC_SUCCESS, WC_RECV, NULL));
	return true;
out:
	return false;
}

static bool still_works(struct env *e);

/* IBA 11.4.2.1: more completions than the CQ holds put it in error; the
 * driver hears of it as an asynchronous CQ_ERR event, never silence. */
static void t_cq_overrun(struct env *e)
{
	struct virtio_rdma_cqe wc[8];
	struct virtio_rdma_qp_attr a;
	struct vrdma_qp_init_attr init;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	struct vrdma_cq *tiny;
	struct vrdma_qp *qa;
	bool event = false;
	int64_t deadline;
	int i, n, got = 0;
	struct pair p;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	TRY(vrdma_create_cq(e->ctx[A], 2, &tiny));
	init = qp_init(VIRTIO_IB_QPT_RC, tiny, p.a.rcq);
	TRY(vrdma_create_qp(p.a.pd, &init, &qa));
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_RESET;
	TRY(vrdma_modify_qp(p.b.qp, &a, VIRTIO_IB_QP_STATE));
	TRY(connect_qp(qa, VIRTIO_IB_QPT_RC, vrdma_qp_num(p.b.qp), p.b.gid, 1, 2));
	TRY(connect_qp(p.b.qp, VIRTIO_IB_QPT_RC, vrdma_qp_num(qa), p.a.gid, 2, 1));
	/* 2 CQE buffers in the ring, 2 entries in the CQ, 1 in hand: the 6th
	 * completion overruns while nobody polls */
	for (i = 0; i < 8; i++) {
		wr = send_wr(&p.a, &sge, 300 + i, VIRTIO_IB_WR_RDMA_WRITE, p.a.buf, 64, NULL);
		wr.remote_addr = (uintptr_t)p.b.buf;
		wr.rkey = vrdma_mr_rkey(p.b.mr);
		TRY(vrdma_post_send(qa, &wr));
	}
	usleep(500000);
	deadline = now_ms() + 5000;
	while (!event && now_ms() < deadline) {
		n = vrdma_poll_cq(tiny, 8, wc);
		CHECK(n >= 0, "poll the overrun CQ: %s", errname(n));
		for (i = 0; i < n; i++) {
			if (wc[i].opcode == VIRTIO_RDMA_WC_ASYNC_EVENT) {
				CHECK(wc[i].vendor_err == VIRTIO_RDMA_EVENT_CQ_ERR,
				      "event %u, want CQ_ERR", wc[i].vendor_err);
				event = true;
			} else {
				CHECK(wc[i].status == WC_SUCCESS && wc[i].opcode == WC_RDMA_WRITE,
				      "completion status %u opcode %u", wc[i].status, wc[i].opcode);
				got++;
			}
		}
		usleep(1000);
	}
	CHECK(event, "no CQ_ERR event after 8 completions on a 2-entry CQ (%d completions)", got);
	CHECK(got <= 5, "%d completions from a 2-entry CQ with 2 buffers", got);
	/* and the rest of the device goes on */
	MUST(still_works(e));
out:;
}

static void t_req_notify_cq(struct env *e)
{
	struct virtio_rdma_cmd_req_notify req = { .cqn = NO_ENTRY, .flags = VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION };
	struct pair p;
	int64_t t0;

	MUST(pair_make2(e, &p, VIRTIO_IB_QPT_RC, A, B, true));
	CHECK(vrdma_cq_fd(p.b.rcq) >= 0, "no call eventfd");
	/* unarmed: the completion arrives, the eventfd stays quiet */
	MUST(send_one(e, &p, 1, false, true));
	t0 = now_ms();
	EXPECT(vrdma_cq_wait(p.b.rcq, 200), 0);
	CHECK(now_ms() - t0 < 400, "an unarmed wait took %lld ms", (long long)(now_ms() - t0));

	/* NEXT_COMPLETION: signalled once */
	TRY(vrdma_req_notify_cq(p.b.rcq, false));
	MUST(send_one(e, &p, 2, false, false));
	EXPECT(vrdma_cq_wait(p.b.rcq, POLL_MS), 1);
	MUST(expect_wc(e, p.b.rcq, "armed recv", 2, WC_SUCCESS, WC_RECV, NULL));
	MUST(send_one(e, &p, 3, false, true));
	EXPECT(vrdma_cq_wait(p.b.rcq, 200), 0);

	/* SOLICITED: not for an ordinary message, then for a solicited one */
	TRY(vrdma_req_notify_cq(p.b.rcq, true));
	MUST(send_one(e, &p, 4, false, true));
	EXPECT(vrdma_cq_wait(p.b.rcq, 300), 0);
	MUST(send_one(e, &p, 5, true, false));
	EXPECT(vrdma_cq_wait(p.b.rcq, POLL_MS), 1);
	MUST(expect_wc(e, p.b.rcq, "solicited recv", 5, WC_SUCCESS, WC_RECV, NULL));

	/* a send CQ can be armed as well */
	TRY(vrdma_req_notify_cq(p.a.scq, false));
	MUST(post_recv1(e, &p.b, 6, p.b.buf, 4096));
	{
		struct vrdma_sge sge;
		struct vrdma_send_wr wr = send_wr(&p.a, &sge, 6, VIRTIO_IB_WR_SEND, p.a.buf, 64, NULL);

		TRY(vrdma_post_send(p.a.qp, &wr));
	}
	EXPECT(vrdma_cq_wait(p.a.scq, POLL_MS), 1);
	MUST(expect_wc(e, p.a.scq, "armed send", 6, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, p.b.rcq, "recv", 6, WC_SUCCESS, WC_RECV, NULL));

	MUST(raw_status(e, A, VIRTIO_CMD_REQ_NOTIFY_CQ, &req, sizeof(req), 0, VIRTIO_RDMA_ERR_NOENT,
			"REQ_NOTIFY_CQ of an unknown CQ"));
	MUST(pair_quiet(e, &p));
out:;
}

static void t_malformed_ctrl(struct env *e)
{
	struct virtio_rdma_rsp_query_port port;
	uint8_t req[16] = { 1 }, rsp[256];
	uint32_t written = 0;
	uint8_t status = 0xff;

	MUST(raw_status(e, A, 99, req, 4, 0, VIRTIO_RDMA_ERR_UNSUPP, "command 99"));
	MUST(raw_status(e, A, 0, NULL, 0, 0, VIRTIO_RDMA_ERR_UNSUPP, "command 0"));
	MUST(raw_status(e, A, VIRTIO_CMD_MAX, NULL, 0, 0, VIRTIO_RDMA_ERR_UNSUPP, "command VIRTIO_CMD_MAX"));
	MUST(raw_status(e, A, VIRTIO_CMD_CREATE_CQ, req, 2, sizeof(struct virtio_rdma_rsp_create_cq),
			VIRTIO_RDMA_ERR_INVAL, "CREATE_CQ with a 2-byte request"));
	MUST(raw_status(e, A, VIRTIO_CMD_CREATE_CQ, req, 8, sizeof(struct virtio_rdma_rsp_create_cq),
			VIRTIO_RDMA_ERR_INVAL, "CREATE_CQ with an 8-byte request"));
	MUST(raw_status(e, A, VIRTIO_CMD_CREATE_PD, req, 4, sizeof(struct virtio_rdma_rsp_create_pd),
			VIRTIO_RDMA_ERR_INVAL, "CREATE_PD with a request"));
	MUST(raw_status(e, A, VIRTIO_CMD_QUERY_PORT, req, 1, 10, VIRTIO_RDMA_ERR_INVAL,
			"QUERY_PORT with a 10-byte response"));
	MUST(raw_status(e, A, VIRTIO_CMD_QUERY_PKEY, req, 8, 0, VIRTIO_RDMA_ERR_INVAL,
			"QUERY_PKEY with no room for the response"));
	/* a larger writable part is fine; the used length says what was written */
	TRY(vrdma_ctrl_raw(e->ctx[A], VIRTIO_CMD_QUERY_PORT, req, 1, rsp, sizeof(rsp), &status, &written));
	CHECK(status == VIRTIO_RDMA_OK && written == sizeof(port),
	      "QUERY_PORT with a 256-byte response: status %u written %u", status, written);
	/* and the device still works */
	TRY(vrdma_query_port(e->ctx[A], 1, &port));
out:;
}

/* ---- 2. data ---- */

static const uint32_t sizes[] = { 0, 1, 4096, BIG };

static void t_rc_send(struct env *e)
{
	struct vrdma_sge sg[3], rsg[2];
	struct virtio_rdma_cqe wc;
	struct vrdma_send_wr wr;
	struct vrdma_recv_wr rwr;
	struct pair p;
	unsigned int i;
	long bad;

	MUST(pair_make2(e, &p, VIRTIO_IB_QPT_RC, A, B, true));
	for (i = 0; i < 4; i++)
		MUST(xfer_send(e, &p.a, &p.b, sizes[i], false, i));
	MUST(xfer_send(e, &p.a, &p.b, 4096, true, 10));
	MUST(xfer_send(e, &p.a, &p.b, BIG, true, 11));
	MUST(xfer_send(e, &p.b, &p.a, BIG, false, 12));
	MUST(xfer_send(e, &p.b, &p.a, 1, true, 13));

	/* gather three pieces, scatter into two */
	fill(p.a.buf, 3000, 20);
	memset(p.b.buf, 0xee, 2 * 8192);
	rsg[0] = (struct vrdma_sge){ (uintptr_t)p.b.buf, 1500, vrdma_mr_lkey(p.b.mr) };
	rsg[1] = (struct vrdma_sge){ (uintptr_t)(p.b.buf + 8192), 4096, vrdma_mr_lkey(p.b.mr) };
	rwr = (struct vrdma_recv_wr){ .wr_id = 21, .sg_list = rsg, .num_sge = 2 };
	TRY(vrdma_post_recv(p.b.qp, &rwr));
	sg[0] = (struct vrdma_sge){ (uintptr_t)p.a.buf, 1000, vrdma_mr_lkey(p.a.mr) };
	sg[1] = (struct vrdma_sge){ (uintptr_t)(p.a.buf + 1000), 1000, vrdma_mr_lkey(p.a.mr) };
	sg[2] = (struct vrdma_sge){ (uintptr_t)(p.a.buf + 2000), 1000, vrdma_mr_lkey(p.a.mr) };
	wr = (struct vrdma_send_wr){ .wr_id = 20, .opcode = VIRTIO_IB_WR_SEND,
				     .send_flags = VIRTIO_IB_SEND_SIGNALED, .sg_list = sg, .num_sge = 3 };
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.a.scq, "gather SEND", 20, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, p.b.rcq, "scatter RECV", 21, WC_SUCCESS, WC_RECV, &wc));
	CHECK(wc.byte_len == 3000, "scatter RECV byte_len %u", wc.byte_len);
	bad = mismatch(p.b.buf, 1500, 20);
	CHECK(bad < 0, "scatter: byte %ld of the first piece differs", bad);
	fill(p.a.buf + 4 * 8192, 3000, 20);	/* the reference for the second piece */
	CHECK(!memcmp(p.b.buf + 8192, p.a.buf + 4 * 8192 + 1500, 1500), "scatter: the second piece differs");
	CHECK(p.b.buf[1500] == 0xee && p.b.buf[8192 + 1500] == 0xee, "scatter: written past a piece");

	/* unsignaled sends complete silently */
	MUST(post_recv1(e, &p.b, 31, p.b.buf, 4096));
	wr = send_wr(&p.a, &sg[0], 30, VIRTIO_IB_WR_SEND, p.a.buf, 10, NULL);
	wr.send_flags = 0;
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.b.rcq, "unsignaled SEND", 31, WC_SUCCESS, WC_RECV, NULL));
	MUST(pair_quiet(e, &p));
out:;
}

static void t_rc_write(struct env *e)
{
	struct pair p;
	unsigned int i;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	for (i = 0; i < 4; i++)
		MUST(xfer_write(e, &p.a, &p.b, sizes[i], 64 + i, false, i));
	MUST(xfer_write(e, &p.a, &p.b, 4096, 0, true, 10));
	MUST(xfer_write(e, &p.a, &p.b, BIG, 3, true, 11));
	MUST(xfer_write(e, &p.a, &p.b, 0, 0, true, 12));
	MUST(xfer_write(e, &p.b, &p.a, BIG, 5, false, 13));
	MUST(pair_quiet(e, &p));
out:;
}

static void t_rc_read(struct env *e)
{
	struct pair p;
	unsigned int i;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	for (i = 0; i < 4; i++)
		MUST(xfer_read(e, &p.a, &p.b, sizes[i], 32 + i, i));
	MUST(xfer_read(e, &p.b, &p.a, BIG, 0, 10));
	MUST(pair_quiet(e, &p));
out:;
}

/* One atomic from s on the word at roff of r's buffer; the original value
 * lands in s's buffer at 64 (host order) when it succeeds. */
static bool atomic1(struct env *e, struct ep *s, struct ep *r, uint32_t op, size_t roff,
		    uint64_t compare_add, uint64_t swap, uint8_t status, uint64_t *orig)
{
	struct virtio_rdma_cqe wc;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	char what[64];

	snprintf(what, sizeof(what), "RC %s at +%zu", op == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ?
		 "ATOMIC_CMP_AND_SWP" : "ATOMIC_FETCH_AND_ADD", roff);
	memset(s->buf + 64, 0xee, 16);
	wr = send_wr(s, &sge, 3000 + roff, op, s->buf + 64, 8, NULL);
	wr.remote_addr = (uintptr_t)(r->buf + roff);
	wr.rkey = vrdma_mr_rkey(r->mr);
	wr.compare_add = compare_add;
	wr.swap = swap;
	TRY(vrdma_post_send(s->qp, &wr));
	MUST(expect_wc(e, s->scq, what, 3000 + roff, status,
		       op == VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP ? WC_COMP_SWAP : WC_FETCH_ADD, &wc));
	if (status == WC_SUCCESS) {
		CHECK(wc.byte_len == 8, "%s: byte_len %u", what, wc.byte_len);
		memcpy(orig, s->buf + 64, 8);
		CHECK(s->buf[72] == 0xee, "%s: more than 8 bytes written", what);
	}
	return true;
out:
	return false;
}

/* IBA 9.4.5 through the device: both atomics between two VMs, the original
 * value in the requester's SGE, a misaligned target NAKed. */
static void t_rc_atomic(struct env *e)
{
	uint64_t v = 0x1122334455667788ull, got = 0;
	struct pair p;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	memcpy(p.b.buf + 4096, &v, 8);
	MUST(atomic1(e, &p.a, &p.b, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, 4096, 0x11, 0, WC_SUCCESS,
		     &got));
	CHECK(got == v, "FETCH_AND_ADD: original %#llx, want %#llx", (unsigned long long)got,
	      (unsigned long long)v);
	memcpy(&got, p.b.buf + 4096, 8);
	CHECK(got == v + 0x11, "FETCH_AND_ADD: memory %#llx", (unsigned long long)got);
	MUST(atomic1(e, &p.a, &p.b, VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP, 4096, v + 0x11, 42, WC_SUCCESS,
		     &got));
	CHECK(got == v + 0x11, "CMP_AND_SWP: original %#llx", (unsigned long long)got);
	memcpy(&got, p.b.buf + 4096, 8);
	CHECK(got == 42, "CMP_AND_SWP: memory %#llx", (unsigned long long)got);
	MUST(pair_quiet(e, &p));
	/* 8-byte alignment (rxe: invalid request) */
	MUST(atomic1(e, &p.a, &p.b, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, 4100, 1, 0, WC_REM_INV_REQ_ERR,
		     &got));
	memcpy(&got, p.b.buf + 4096, 8);
	CHECK(got == 42, "misaligned FETCH_AND_ADD changed memory: %#llx", (unsigned long long)got);
	/* RC only: on UC the WQE is refused (LOC_QP_OP_ERR) */
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_UC, A, B));
	{
		struct virtio_rdma_cqe wc;
		struct vrdma_send_wr wr;
		struct vrdma_sge sge;

		wr = send_wr(&p.a, &sge, 3999, VIRTIO_IB_WR_ATOMIC_FETCH_AND_ADD, p.a.buf, 8, NULL);
		wr.remote_addr = (uintptr_t)p.b.buf;
		wr.rkey = vrdma_mr_rkey(p.b.mr);
		TRY(vrdma_post_send(p.a.qp, &wr));
		MUST(wait_wc(e, p.a.scq, "UC atomic", &wc));
		CHECK(wc.wr_id == 3999 && wc.status == WC_LOC_QP_OP_ERR, "UC atomic: wr_id %llu status %u",
		      (unsigned long long)wc.wr_id, wc.status);
	}
	MUST(still_works(e));
out:;
}

static void t_uc(struct env *e)
{
	struct pair p;
	unsigned int i;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_UC, A, B));
	for (i = 0; i < 4; i++)
		MUST(xfer_send(e, &p.a, &p.b, sizes[i], false, i));
	MUST(xfer_send(e, &p.a, &p.b, BIG, true, 10));
	for (i = 0; i < 4; i++)
		MUST(xfer_write(e, &p.a, &p.b, sizes[i], 8 + i, false, 20 + i));
	MUST(xfer_write(e, &p.a, &p.b, BIG, 0, true, 30));
	MUST(xfer_send(e, &p.b, &p.a, 4096, true, 31));
	MUST(pair_quiet(e, &p));
out:;
}

static void t_ud(struct env *e)
{
	struct virtio_rdma_rsp_query_port port;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	uint32_t mtu;
	struct pair p;

	TRY(vrdma_query_port(e->ctx[A], 1, &port));
	mtu = 128u << port.active_mtu;
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_UD, A, B));
	MUST(xfer_send(e, &p.a, &p.b, 0, false, 1));
	MUST(xfer_send(e, &p.a, &p.b, 1, false, 2));
	MUST(xfer_send(e, &p.a, &p.b, mtu, false, 3));
	MUST(xfer_send(e, &p.a, &p.b, mtu, true, 4));
	MUST(xfer_send(e, &p.b, &p.a, 100, true, 5));

	/* a wrong Q_Key is dropped at B; the receive stays posted */
	MUST(post_recv1(e, &p.b, 60, p.b.buf, GRH_LEN + 64));
	wr = send_wr(&p.a, &sge, 61, VIRTIO_IB_WR_SEND, p.a.buf, 64, &p.b);
	wr.remote_qkey = QKEY + 1;
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.a.scq, "UD SEND with a wrong Q_Key", 61, WC_SUCCESS, WC_SEND, NULL));
	MUST(no_wc(e, p.b.rcq, "UD recv after a wrong Q_Key", 300));
	wr.remote_qkey = QKEY;
	wr.wr_id = 62;
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.a.scq, "UD SEND", 62, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, p.b.rcq, "UD recv after the right Q_Key", 60, WC_SUCCESS, WC_RECV, NULL));
	MUST(pair_quiet(e, &p));
out:;
}

/* QP1 (docs/virtio-rdma.md, CREATE_QP): offered in caps, one per device
 * with QPN 1, each VM its own; a datagram between the two QP1s arrives with
 * its GRH, source QP 1 and network header type; a UD datagram to QPN 1 with
 * another Q_Key is dropped. */
static void t_gsi(struct env *e)
{
	struct virtio_rdma_qp_attr qa = { 0 };
	struct vrdma_qp_init_attr init;
	struct vrdma_send_wr wr;
	struct vrdma_qp *second;
	struct vrdma_sge sge;
	struct pair p = { 0 }, u = { 0 };
	int ret;

	CHECK(e->cfg[A].caps & VIRTIO_RDMA_CAP_GSI, "config caps %#x: no GSI", e->cfg[A].caps);
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_GSI, A, B));
	CHECK(vrdma_qp_num(p.a.qp) == 1 && vrdma_qp_num(p.b.qp) == 1, "QPNs %u and %u, want 1",
	      vrdma_qp_num(p.a.qp), vrdma_qp_num(p.b.qp));
	init = qp_init(VIRTIO_IB_QPT_GSI, p.a.scq, p.a.scq);
	ret = vrdma_create_qp(p.a.pd, &init, &second);
	CHECK(ret == -EBUSY, "a second GSI: %s, want EBUSY", errname(ret));
	/* what the mask leaves out is not looked at (Linux's MAD layer
	 * passes kmalloc'ed attributes) */
	memset(&qa, 0xee, sizeof(qa));
	qa.qp_state = VIRTIO_IB_QPS_RTS;
	TRY(vrdma_modify_qp(p.a.qp, &qa, VIRTIO_IB_QP_STATE));
	MUST(xfer_send(e, &p.a, &p.b, 256, false, 1));
	MUST(xfer_send(e, &p.b, &p.a, 256, false, 2));

	/* from a UD QP of A to B's QP1 with the UD QP's Q_Key: dropped */
	MUST(ep_make(e, &u.a, A, VIRTIO_IB_QPT_UD));
	TRY(connect_qp(u.a.qp, VIRTIO_IB_QPT_UD, 0, NULL, 0x33, 0));
	MUST(post_recv1(e, &p.b, 60, p.b.buf, GRH_LEN + 64));
	wr = send_wr(&u.a, &sge, 61, VIRTIO_IB_WR_SEND, u.a.buf, 64, &p.b);
	TRY(vrdma_post_send(u.a.qp, &wr));
	MUST(expect_wc(e, u.a.scq, "UD SEND to QP1 with a UD Q_Key", 61, WC_SUCCESS, WC_SEND,
		       NULL));
	MUST(no_wc(e, p.b.rcq, "QP1 recv after a wrong Q_Key", 300));
	/* a controlled Q_Key (high bit) in a WR means the QP's own (IBA
	 * 10.2.5): the UD QP takes QP1's first (uverbs lets only CAP_NET_RAW) */
	qa.qp_state = VIRTIO_IB_QPS_RTS;
	qa.qkey = VIRTIO_RDMA_GSI_QKEY;
	TRY(vrdma_modify_qp(u.a.qp, &qa, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_QKEY));
	wr.remote_qkey = VIRTIO_RDMA_GSI_QKEY;
	wr.wr_id = 62;
	TRY(vrdma_post_send(u.a.qp, &wr));
	MUST(expect_wc(e, u.a.scq, "UD SEND to QP1", 62, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, p.b.rcq, "QP1 recv of QP1's Q_Key", 60, WC_SUCCESS, WC_RECV, NULL));
	MUST(pair_quiet(e, &p));
out:;
}

static void t_inline(struct env *e)
{
	uint8_t local[256], local2[40];
	struct vrdma_sge sg[2];
	struct virtio_rdma_cqe wc;
	struct vrdma_send_wr wr;
	struct pair p, u;
	long bad;

	fill(local, sizeof(local), 40);
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	/* the data is copied at post time: local buffers, no MR */
	memset(p.b.buf, 0xee, 8192);
	MUST(post_recv1(e, &p.b, 70, p.b.buf, 4096));
	sg[0] = (struct vrdma_sge){ (uintptr_t)local, 200, 0 };
	wr = (struct vrdma_send_wr){ .wr_id = 71, .opcode = VIRTIO_IB_WR_SEND,
				     .send_flags = VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_INLINE,
				     .sg_list = sg, .num_sge = 1 };
	TRY(vrdma_post_send(p.a.qp, &wr));
	memset(local, 0, 200);		/* too late to matter */
	MUST(expect_wc(e, p.a.scq, "inline SEND", 71, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, p.b.rcq, "inline SEND recv", 70, WC_SUCCESS, WC_RECV, &wc));
	CHECK(wc.byte_len == 200, "inline SEND byte_len %u", wc.byte_len);
	bad = mismatch(p.b.buf, 200, 40);
	CHECK(bad < 0, "inline SEND: byte %ld differs", bad);

	/* two pieces, RDMA WRITE */
	fill(local, sizeof(local), 41);
	memcpy(local2, local + 100, sizeof(local2));
	memset(p.b.buf, 0xee, 8192);
	sg[0] = (struct vrdma_sge){ (uintptr_t)local, 100, 0 };
	sg[1] = (struct vrdma_sge){ (uintptr_t)local2, sizeof(local2), 0 };
	wr = (struct vrdma_send_wr){ .wr_id = 72, .opcode = VIRTIO_IB_WR_RDMA_WRITE,
				     .send_flags = VIRTIO_IB_SEND_SIGNALED | VIRTIO_IB_SEND_INLINE,
				     .sg_list = sg, .num_sge = 2,
				     .remote_addr = (uintptr_t)(p.b.buf + 10), .rkey = vrdma_mr_rkey(p.b.mr) };
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.a.scq, "inline RDMA_WRITE", 72, WC_SUCCESS, WC_RDMA_WRITE, NULL));
	bad = mismatch(p.b.buf + 10, 140, 41);
	CHECK(bad < 0, "inline RDMA_WRITE: byte %ld differs", bad);
	CHECK(p.b.buf[9] == 0xee && p.b.buf[150] == 0xee, "inline RDMA_WRITE: written outside");
	sg[0].length = 257;
	EXPECT(vrdma_post_send(p.a.qp, &wr), -EINVAL);	/* beyond max_inline_data */
	MUST(pair_quiet(e, &p));

	/* UD */
	MUST(pair_make(e, &u, VIRTIO_IB_QPT_UD, A, B));
	fill(local, sizeof(local), 42);
	MUST(post_recv1(e, &u.b, 73, u.b.buf, GRH_LEN + 256));
	sg[0] = (struct vrdma_sge){ (uintptr_t)local, 256, 0 };
	wr = send_wr(&u.a, &sg[0], 74, VIRTIO_IB_WR_SEND, local, 256, &u.b);
	wr.send_flags |= VIRTIO_IB_SEND_INLINE;
	TRY(vrdma_post_send(u.a.qp, &wr));
	MUST(expect_wc(e, u.a.scq, "inline UD SEND", 74, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, u.b.rcq, "inline UD recv", 73, WC_SUCCESS, WC_RECV, &wc));
	CHECK(wc.byte_len == GRH_LEN + 256, "inline UD byte_len %u", wc.byte_len);
	bad = mismatch(u.b.buf + GRH_LEN, 256, 42);
	CHECK(bad < 0, "inline UD: byte %ld differs", bad);
out:;
}

/* ---- 3. and 4. bad WQEs ---- */

/* A fresh A-B pair still carries data (the device and B kept working). */
static bool still_works(struct env *e)
{
	struct pair q;

	MUST(pair_make(e, &q, VIRTIO_IB_QPT_RC, A, B));
	MUST(xfer_send(e, &q.a, &q.b, 4096, false, 90));
	MUST(xfer_send(e, &q.b, &q.a, 4096, false, 91));
	return true;
out:
	return false;
}

static bool expect_qp_state(struct env *e, struct vrdma_qp *qp, uint8_t state, const char *what)
{
	struct virtio_rdma_qp_attr q;
	int ret = vrdma_query_qp(qp, VIRTIO_IB_QP_STATE, &q);

	if (ret)
		return fail(e, "%s: vrdma_query_qp: %s", what, errname(ret));
	if (q.qp_state != state)
		return fail(e, "%s: QP state %u, want %u", what, q.qp_state, state);
	return true;
}

static void t_prot_err(struct env *e)
{
	struct vrdma_mr *dma;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;
	struct pair p, q;

	/* an SGE past the end of its MR */
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	MUST(post_recv1(e, &p.b, 80, p.b.buf, 4096));
	wr = send_wr(&p.a, &sge, 81, VIRTIO_IB_WR_SEND, p.a.buf + BUF_LEN - 8, 16, NULL);
	TRY(vrdma_post_send(p.a.qp, &wr));
	MUST(expect_wc(e, p.a.scq, "SEND from outside the MR", 81, WC_LOC_PROT_ERR, -1, NULL));
	MUST(expect_qp_state(e, p.a.qp, VIRTIO_IB_QPS_ERR, "after LOC_PROT_ERR"));
	MUST(still_works(e));

	/* an RDMA WRITE whose local SGE is outside guest memory (DMA MR: iova = GPA) */
	MUST(pair_make(e, &q, VIRTIO_IB_QPT_RC, A, B));
	TRY(vrdma_get_dma_mr(q.a.pd, VIRTIO_IB_ACCESS_LOCAL_WRITE, &dma));
	wr = send_wr(&q.a, &sge, 82, VIRTIO_IB_WR_RDMA_WRITE, NULL, 0, NULL);
	sge = (struct vrdma_sge){ .addr = OUTSIDE_GPA, .length = 64, .lkey = vrdma_mr_lkey(dma) };
	wr.num_sge = 1;
	wr.remote_addr = (uintptr_t)q.b.buf;
	wr.rkey = vrdma_mr_rkey(q.b.mr);
	TRY(vrdma_post_send(q.a.qp, &wr));
	MUST(expect_wc(e, q.a.scq, "RDMA_WRITE from outside guest memory", 82, WC_LOC_PROT_ERR, -1, NULL));
	MUST(expect_qp_state(e, q.a.qp, VIRTIO_IB_QPS_ERR, "after LOC_PROT_ERR"));
	MUST(still_works(e));

	/* the DMA MR itself works inside guest memory */
	MUST(pair_make(e, &q, VIRTIO_IB_QPT_RC, A, B));
	TRY(vrdma_get_dma_mr(q.a.pd, VIRTIO_IB_ACCESS_LOCAL_WRITE, &dma));
	fill(q.a.buf, 5000, 83);
	memset(q.b.buf, 0xee, 5016);
	MUST(post_recv1(e, &q.b, 84, q.b.buf, 8192));
	wr = send_wr(&q.a, &sge, 85, VIRTIO_IB_WR_SEND, q.a.buf, 5000, NULL);
	sge.addr = vrdma_gpa(e->ctx[A], q.a.buf);
	sge.lkey = vrdma_mr_lkey(dma);
	TRY(vrdma_post_send(q.a.qp, &wr));
	MUST(expect_wc(e, q.a.scq, "SEND through the DMA MR", 85, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, q.b.rcq, "SEND through the DMA MR", 84, WC_SUCCESS, WC_RECV, NULL));
	CHECK(mismatch(q.b.buf, 5000, 83) < 0, "SEND through the DMA MR: data differs");
out:;
}

static void t_malformed_wqe(struct env *e)
{
	struct virtio_rdma_cmd_post_send hdr = { .num_sge = 3, .send_flags = VIRTIO_IB_SEND_SIGNALED,
						  .opcode = VIRTIO_IB_WR_SEND, .wr_id = 91 };
	struct virtio_rdma_cmd_post_recv rhdr = { .num_sge = 2, .wr_id = 93 };
	uint8_t raw[sizeof(hdr) + sizeof(struct virtio_rdma_sge)];
	struct virtio_rdma_cqe wc[2];
	struct pair p;
	int i;

	/* SQ: num_sge 3, room for one SGE */
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	memset(raw, 0, sizeof(raw));
	memcpy(raw, &hdr, sizeof(hdr));
	TRY(vrdma_post_raw(p.a.qp, false, raw, sizeof(raw)));
	MUST(wait_wc(e, p.a.scq, "malformed send WQE", &wc[0]));
	CHECK(wc[0].status == WC_LOC_QP_OP_ERR, "malformed send WQE: status %u, want %u",
	      wc[0].status, WC_LOC_QP_OP_ERR);
	MUST(expect_qp_state(e, p.a.qp, VIRTIO_IB_QPS_ERR, "after a malformed send WQE"));

	/* RQ: a good WQE, then num_sge 2 with none there: flushed, then the error */
	MUST(post_recv1(e, &p.b, 92, p.b.buf, 4096));
	TRY(vrdma_post_raw(p.b.qp, true, &rhdr, sizeof(rhdr)));
	MUST(wait_wc(e, p.b.rcq, "recv WQEs", &wc[0]));
	MUST(wait_wc(e, p.b.rcq, "recv WQEs", &wc[1]));
	for (i = 0; i < 2; i++) {
		if (wc[i].wr_id == 92)
			CHECK(wc[i].status == WC_WR_FLUSH_ERR, "good recv WQE: status %u, want %u",
			      wc[i].status, WC_WR_FLUSH_ERR);
		else
			CHECK(wc[i].status == WC_LOC_QP_OP_ERR, "malformed recv WQE: status %u, want %u",
			      wc[i].status, WC_LOC_QP_OP_ERR);
	}
	CHECK(wc[0].wr_id == 92 || wc[1].wr_id == 92, "no completion for the good recv WQE");
	MUST(expect_qp_state(e, p.b.qp, VIRTIO_IB_QPS_ERR, "after a malformed recv WQE"));

	/* shorter than a header */
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_UD, A, B));
	TRY(vrdma_post_raw(p.a.qp, false, raw, 10));
	MUST(wait_wc(e, p.a.scq, "10-byte send WQE", &wc[0]));
	CHECK(wc[0].status == WC_LOC_QP_OP_ERR, "10-byte send WQE: status %u, want %u",
	      wc[0].status, WC_LOC_QP_OP_ERR);
	MUST(still_works(e));
out:;
}

/* ---- 5. disconnect and reconnect ---- */

static void reconnect(struct env *e, bool crash)
{
	struct virtio_rdma_rsp_query_port port;
	struct pair p, bb;
	struct ep a2;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	MUST(pair_make(e, &bb, VIRTIO_IB_QPT_RC, B, B));
	MUST(xfer_send(e, &p.a, &p.b, 4096, false, 1));

	if (crash) {
		/* as if the front-end died: the connection ends under it */
		TRY(shutdown(vrdma_socket_fd(e->ctx[A]), SHUT_RDWR) ? -errno : 0);
		/* The control queue lives in shared memory: until the daemon has
		 * seen the socket close, a command may still be answered. */
		{
			int r = vrdma_query_port(e->ctx[A], 1, &port);

			CHECK(r == 0 || r == -ECONNRESET, "query_port after the socket closed: %s",
			      errname(r));
		}
	}
	close_vm(e, A);

	/* B is unaffected meanwhile */
	MUST(expect_qp_state(e, p.b.qp, VIRTIO_IB_QPS_RTS, "B's QP while A is gone"));
	MUST(xfer_send(e, &bb.a, &bb.b, BIG, false, 2));
	MUST(xfer_write(e, &bb.b, &bb.a, 4096, 0, true, 3));

	/* a fresh device: every CQ handle and QP slot is free again */
	TRY(open_vm(e, A));
	MUST(all_free(e, A));
	MUST(ep_make(e, &a2, A, VIRTIO_IB_QPT_RC));

	/* B's old QP, reset and connected to A's new one */
	{
		struct virtio_rdma_qp_attr a = { .qp_state = VIRTIO_IB_QPS_RESET };

		TRY(vrdma_modify_qp(p.b.qp, &a, VIRTIO_IB_QP_STATE));
	}
	TRY(connect_qp(p.b.qp, VIRTIO_IB_QPT_RC, vrdma_qp_num(a2.qp), a2.gid, 0x500, 0x600));
	TRY(connect_qp(a2.qp, VIRTIO_IB_QPT_RC, vrdma_qp_num(p.b.qp), p.b.gid, 0x600, 0x500));
	MUST(xfer_send(e, &a2, &p.b, BIG, false, 4));
	MUST(xfer_send(e, &p.b, &a2, 4096, true, 5));
	MUST(xfer_write(e, &p.b, &a2, BIG, 1, false, 6));
	MUST(xfer_read(e, &a2, &p.b, BIG, 0, 7));
	MUST(xfer_send(e, &bb.a, &bb.b, 1, false, 8));
out:;
}

static void t_reconnect_close(struct env *e)
{
	reconnect(e, false);
}

static void t_reconnect_crash(struct env *e)
{
	reconnect(e, true);
}

/* VRDMA_TEST_BULK_MIB (default 8) MiB over one RC pair in 1 MiB messages,
 * RDMA WRITEs and SENDs in turn, each checked to the byte: on a lossy link
 * this is what retransmission must get right. */
#define BULK_CHUNK	(1u << 20)

static void t_rc_bulk(struct env *e)
{
	const char *v = getenv("VRDMA_TEST_BULK_MIB");
	unsigned int mib = v ? (unsigned int)atoi(v) : 8, k;
	struct vrdma_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf;
	int64_t t0 = now_ms();
	struct pair p;
	long bad;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	sbuf = vrdma_alloc_buf(p.a.ctx, BULK_CHUNK);
	rbuf = vrdma_alloc_buf(p.b.ctx, BULK_CHUNK);
	CHECK(sbuf && rbuf, "vrdma_alloc_buf of %u bytes failed", BULK_CHUNK);
	TRY(vrdma_reg_mr(p.a.pd, sbuf, BULK_CHUNK, ACCESS_ALL, &smr));
	TRY(vrdma_reg_mr(p.b.pd, rbuf, BULK_CHUNK, ACCESS_ALL, &rmr));
	for (k = 0; k < mib; k++) {
		bool write = k % 2 == 0;
		struct vrdma_sge sge = { .addr = (uintptr_t)sbuf, .length = BULK_CHUNK,
					 .lkey = vrdma_mr_lkey(smr) };
		struct vrdma_sge rsge = { .addr = (uintptr_t)rbuf, .length = BULK_CHUNK,
					  .lkey = vrdma_mr_lkey(rmr) };
		struct vrdma_recv_wr rwr = { .wr_id = 5000 + k, .sg_list = &rsge, .num_sge = 1 };
		struct vrdma_send_wr wr = {
			.wr_id = 4000 + k, .send_flags = VIRTIO_IB_SEND_SIGNALED,
			.opcode = write ? VIRTIO_IB_WR_RDMA_WRITE : VIRTIO_IB_WR_SEND,
			.sg_list = &sge, .num_sge = 1,
			.remote_addr = (uintptr_t)rbuf, .rkey = vrdma_mr_rkey(rmr),
		};
		struct virtio_rdma_cqe wc;

		fill(sbuf, BULK_CHUNK, k);
		memset(rbuf, 0, BULK_CHUNK);
		if (!write)
			TRY(vrdma_post_recv(p.b.qp, &rwr));
		TRY(vrdma_post_send(p.a.qp, &wr));
		MUST(expect_wc(e, p.a.scq, write ? "bulk RDMA_WRITE" : "bulk SEND", 4000 + k,
			       WC_SUCCESS, write ? WC_RDMA_WRITE : WC_SEND, NULL));
		if (!write) {
			MUST(expect_wc(e, p.b.rcq, "bulk recv", 5000 + k, WC_SUCCESS, WC_RECV, &wc));
			CHECK(wc.byte_len == BULK_CHUNK, "bulk recv: byte_len %u", wc.byte_len);
		}
		/* an RC WRITE completes once acknowledged: the data is there */
		bad = mismatch(rbuf, BULK_CHUNK, k);
		CHECK(bad < 0, "bulk %s %u: byte %ld differs", write ? "WRITE" : "SEND", k, bad);
	}
	printf("# RC bulk: %u MiB checked in %lld ms\n", mib, (long long)(now_ms() - t0));
out:;
}

/* Issue 15.1: B's target MR deregistered 20 ms into a 32 MiB WRITE from A.
 * The old responder kept a pointer to the freed MR (a use-after-free in
 * the daemon); now the WRITE ends in REM_ACCESS_ERR at A, B's QP reports an
 * access error, and the daemon goes on. Tried again if the WRITE was done
 * before the deregistration. */
#define DEREG_LEN	(32u << 20)
static void t_dereg_under_write(struct env *e)
{
	struct vrdma_mr *smr = NULL, *rmr = NULL;
	uint8_t *sbuf, *rbuf;
	struct virtio_rdma_cqe wc;
	int64_t deadline;
	unsigned int k;
	struct pair p;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	sbuf = vrdma_alloc_buf(p.a.ctx, DEREG_LEN);
	rbuf = vrdma_alloc_buf(p.b.ctx, DEREG_LEN);
	CHECK(sbuf && rbuf, "vrdma_alloc_buf of %u bytes failed", DEREG_LEN);
	TRY(vrdma_reg_mr(p.a.pd, sbuf, DEREG_LEN, ACCESS_ALL, &smr));
	for (k = 0; k < 4; k++) {
		struct vrdma_sge sge = { .addr = (uintptr_t)sbuf, .length = DEREG_LEN,
					 .lkey = vrdma_mr_lkey(smr) };
		struct vrdma_send_wr wr = {
			.wr_id = 6000 + k, .send_flags = VIRTIO_IB_SEND_SIGNALED,
			.opcode = VIRTIO_IB_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1,
			.remote_addr = (uintptr_t)rbuf,
		};

		TRY(vrdma_reg_mr(p.b.pd, rbuf, DEREG_LEN, ACCESS_ALL, &rmr));
		wr.rkey = vrdma_mr_rkey(rmr);
		TRY(vrdma_post_send(p.a.qp, &wr));
		usleep(20000);
		TRY(vrdma_dereg_mr(rmr));
		MUST(wait_wc(e, p.a.scq, "WRITE into a deregistered MR", &wc));
		if (wc.status == WC_REM_ACCESS_ERR)
			break;
		CHECK(wc.status == WC_SUCCESS, "WRITE into a deregistered MR: status %u",
		      wc.status);
	}
	CHECK(k < 4, "4 WRITEs of %u MiB all done within 20 ms: the daemon is too fast for this "
	      "test", DEREG_LEN >> 20);
	/* B's QP heard of it too: an access error event (IBA 11.6.3.1) */
	for (deadline = now_ms() + POLL_MS; now_ms() < deadline; usleep(100))
		if (vrdma_poll_cq(p.b.scq, 1, &wc) == 1 &&
		    wc.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT &&
		    wc.vendor_err == VIRTIO_RDMA_EVENT_QP_ACCESS_ERR)
			break;
	CHECK(now_ms() < deadline, "B: no QP_ACCESS_ERR event within %d ms", POLL_MS);
	printf("# the MR went away under WRITE %u: REM_ACCESS_ERR\n", k + 1);
out:;
}

/* ---- fast registration and memory windows across the wire ---- */

#define WC_BIND_MW		5
#define WC_MW_BIND_ERR		6
#define WC_WITH_INV		4u

/* An RDMA WRITE or READ of len bytes from s's buffer at off to raddr with
 * rkey; its completion's status must be want. */
static bool rdma1(struct env *e, struct ep *s, uint32_t opcode, size_t off, void *raddr,
		  uint32_t rkey, uint32_t len, uint64_t wr_id, uint8_t want)
{
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;

	wr = send_wr(s, &sge, wr_id, opcode, s->buf + off, len, NULL);
	wr.remote_addr = (uintptr_t)raddr;
	wr.rkey = rkey;
	TRY(vrdma_post_send(s->qp, &wr));
	return expect_wc(e, s->scq, opcode == VIRTIO_IB_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE",
			 wr_id, want, want == WC_SUCCESS ? (opcode == VIRTIO_IB_WR_RDMA_READ ?
			 WC_RDMA_READ : WC_RDMA_WRITE) : -1, NULL);
out:
	return false;
}

/* A local operation on ep's QP (LOCAL_INV, REG_MR, BIND_MW): its completion. */
static bool local1(struct env *e, struct ep *ep, struct vrdma_send_wr *wr, uint8_t want, int opcode)
{
	wr->send_flags = VIRTIO_IB_SEND_SIGNALED;
	TRY(vrdma_post_send(ep->qp, wr));
	return expect_wc(e, ep->scq, "local operation", wr->wr_id, want, opcode, NULL);
out:
	return false;
}

/* A sends a SEND_WITH_INV naming key; B's receive reports it invalidated. */
static bool send_inv1(struct env *e, struct pair *p, uint32_t key, uint64_t wr_id)
{
	struct virtio_rdma_cqe wc;
	struct vrdma_send_wr wr;
	struct vrdma_sge sge;

	MUST(post_recv1(e, &p->b, wr_id + 1, p->b.buf, 256));
	wr = send_wr(&p->a, &sge, wr_id, VIRTIO_IB_WR_SEND_WITH_INV, p->a.buf, 64, NULL);
	wr.invalidate_rkey = key;
	TRY(vrdma_post_send(p->a.qp, &wr));
	MUST(expect_wc(e, p->a.scq, "SEND_WITH_INV", wr_id, WC_SUCCESS, WC_SEND, NULL));
	MUST(expect_wc(e, p->b.rcq, "its receive", wr_id + 1, WC_SUCCESS, WC_RECV, &wc));
	CHECK(wc.wc_flags & WC_WITH_INV, "receive wc_flags %#x: no IB_WC_WITH_INVALIDATE",
	      wc.wc_flags);
	CHECK(wc.ex.invalidate_rkey == key, "receive names key %#x, want %#x",
	      wc.ex.invalidate_rkey, key);
	return true;
out:
	return false;
}

/* A fast-registration MR of b over [target, target + len), made VALID by a
 * REG_MR on b's QP with a new key; the key. */
static bool frwr_reg(struct env *e, struct ep *b, uint8_t *target, uint32_t len,
		     struct vrdma_mr **fmr, uint32_t *key, uint64_t wr_id)
{
	struct vrdma_send_wr wr;

	TRY(vrdma_create_mr(b->pd, VIRTIO_IB_ACCESS_LOCAL_WRITE, 4, fmr));
	TRY(vrdma_map_mr_sg(*fmr, target, len));
	vrdma_update_fast_reg_key(*fmr, (uint8_t)(vrdma_mr_rkey(*fmr) + 5));
	*key = vrdma_mr_rkey(*fmr);
	wr = (struct vrdma_send_wr){ .wr_id = wr_id, .opcode = VIRTIO_IB_WR_REG_MR,
		.reg = { vrdma_mr_handle(*fmr), *key, VIRTIO_IB_ACCESS_LOCAL_WRITE |
			 VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ } };
	return local1(e, b, &wr, WC_SUCCESS, WC_REG_MR);
out:
	return false;
}

/* IBA 10.6.3.6, 10.7 between the VMs (two daemons under veth.sh): B
 * registers a CREATE_MR MR with REG_MR; A writes and reads through the new
 * key; B's LOCAL_INV makes A's next WRITE a remote access error. Then on a
 * fresh pair A's SEND_WITH_INV names B's key: B's receive says so, and the
 * key no longer works. */
static void t_frwr_wire(struct env *e)
{
	uint32_t key, len = 3 * 4096;
	struct vrdma_send_wr wr;
	struct vrdma_mr *fmr;
	struct pair p;
	uint8_t *target;
	long bad;

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	target = vrdma_alloc_buf(e->ctx[B], 4 * 4096);
	CHECK(target, "vrdma_alloc_buf failed");
	memset(target, 0xee, 4 * 4096);
	MUST(frwr_reg(e, &p.b, target + 512, len, &fmr, &key, 80));
	fill(p.a.buf, len, 11);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target + 512 + 100, key, len - 200, 81,
		   WC_SUCCESS));
	bad = mismatch(target + 612, len - 200, 11);
	CHECK(bad < 0, "byte %ld written through the REG_MR key differs", bad);
	CHECK(target[611] == 0xee && target[612 + len - 200] == 0xee, "written outside the range");
	fill(target + 512, len, 12);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_READ, 65536, target + 512, key, len, 82, WC_SUCCESS));
	bad = mismatch(p.a.buf + 65536, len, 12);
	CHECK(bad < 0, "byte %ld read through the REG_MR key differs", bad);
	wr = (struct vrdma_send_wr){ .wr_id = 83, .opcode = VIRTIO_IB_WR_LOCAL_INV,
				     .invalidate_rkey = key };
	MUST(local1(e, &p.b, &wr, WC_SUCCESS, WC_LOCAL_INV));
	memset(target, 0xee, 4 * 4096);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target + 512, key, 64, 84,
		   WC_REM_ACCESS_ERR));
	CHECK(target[512] == 0xee, "a WRITE through the invalidated key landed");
	TRY(vrdma_dereg_mr(fmr));

	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	MUST(frwr_reg(e, &p.b, target, len, &fmr, &key, 85));
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target, key, 64, 86, WC_SUCCESS));
	MUST(send_inv1(e, &p, key, 87));
	memset(target, 0xee, 64);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target, key, 64, 89, WC_REM_ACCESS_ERR));
	CHECK(target[0] == 0xee, "a WRITE through the key SEND_WITH_INV invalidated landed");
	TRY(vrdma_dereg_mr(fmr));
out:;
}

/* A window of B over [target + off, + len) of mr, bound on B's QP. */
static bool mw_bind(struct env *e, struct ep *b, struct vrdma_mr *mr, uint8_t *target, size_t off,
		    uint32_t len, struct vrdma_mw **mw, uint64_t wr_id)
{
	struct vrdma_mw_bind bind = { mr, (uintptr_t)(target + off), len,
				      VIRTIO_IB_ACCESS_REMOTE_WRITE | VIRTIO_IB_ACCESS_REMOTE_READ };

	TRY(vrdma_alloc_mw(b->pd, VIRTIO_IB_MW_TYPE_2, mw));
	TRY(vrdma_bind_mw(b->qp, *mw, wr_id, &bind));
	return expect_wc(e, b->scq, "BIND_MW", wr_id, WC_SUCCESS, WC_BIND_MW, NULL);
out:
	return false;
}

/* A fresh pair whose B has an MR over target with MW_BIND and no remote
 * rights, and a window over [target + off, + len) of it bound on B's QP. */
static bool mw_pair(struct env *e, struct pair *p, uint8_t *target, size_t off, uint32_t len,
		    struct vrdma_mr **mr, struct vrdma_mw **mw, uint64_t wr_id)
{
	MUST(pair_make(e, p, VIRTIO_IB_QPT_RC, A, B));
	TRY(vrdma_reg_mr(p->b.pd, target, 4 * 4096, VIRTIO_IB_ACCESS_LOCAL_WRITE |
			 VIRTIO_IB_ACCESS_MW_BIND, mr));
	return mw_bind(e, &p->b, *mr, target, off, len, mw, wr_id);
out:
	return false;
}

/* IBA 10.6.7 between the VMs: B's MR has no remote rights, only MW_BIND; a
 * window bound over part of it lets A write and read inside it, not outside
 * it; after LOCAL_INV, SEND_WITH_INV or DEALLOC_MW nothing gets through;
 * the MR is BUSY while the window is bound. */
static void t_mw_wire(struct env *e)
{
	const size_t off = 4096 + 256;
	const uint32_t len = 8192;
	struct vrdma_send_wr wr;
	struct vrdma_mw *mw, *mw2;
	struct vrdma_mr *mr;
	struct pair p;
	uint8_t *target;
	uint32_t key;
	long bad;

	target = vrdma_alloc_buf(e->ctx[B], 4 * 4096);
	CHECK(target, "vrdma_alloc_buf failed");
	MUST(mw_pair(e, &p, target, off, len, &mr, &mw, 90));
	EXPECT(vrdma_alloc_mw(p.b.pd, VIRTIO_IB_MW_TYPE_1, &mw2), -EOPNOTSUPP);
	key = vrdma_mw_rkey(mw);
	EXPECT(vrdma_dereg_mr(mr), -EBUSY);
	memset(target, 0xee, 4 * 4096);
	fill(p.a.buf, len, 21);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target + off + 1000, key, len - 1000, 91,
		   WC_SUCCESS));
	bad = mismatch(target + off + 1000, len - 1000, 21);
	CHECK(bad < 0, "byte %ld written through the window differs", bad);
	CHECK(target[off + 999] == 0xee && target[off + len] == 0xee, "written outside the range");
	fill(target + off, len, 22);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_READ, 65536, target + off, key, len, 92, WC_SUCCESS));
	bad = mismatch(p.a.buf + 65536, len, 22);
	CHECK(bad < 0, "byte %ld read through the window differs", bad);
	/* one byte past the window (inside the MR): refused, nothing lands */
	memset(target, 0xee, 4 * 4096);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target + off + 1, key, len, 93,
		   WC_REM_ACCESS_ERR));
	CHECK(target[off + 1] == 0xee, "a WRITE past the window landed");
	TRY(vrdma_dealloc_mw(mw));	/* bound (its QP is in ERR now): invalidated */
	TRY(vrdma_dereg_mr(mr));

	/* LOCAL_INV of the window's key, then the window is FREE */
	MUST(mw_pair(e, &p, target, off, len, &mr, &mw, 94));
	key = vrdma_mw_rkey(mw);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target + off, key, 64, 95, WC_SUCCESS));
	wr = (struct vrdma_send_wr){ .wr_id = 96, .opcode = VIRTIO_IB_WR_LOCAL_INV,
				     .invalidate_rkey = key };
	MUST(local1(e, &p.b, &wr, WC_SUCCESS, WC_LOCAL_INV));
	TRY(vrdma_dereg_mr(mr));	/* no window bound now */
	memset(target + off, 0xee, 64);
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_WRITE, 0, target + off, key, 64, 97, WC_REM_ACCESS_ERR));
	CHECK(target[off] == 0xee, "a WRITE through the invalidated window landed");
	TRY(vrdma_dealloc_mw(mw));

	/* SEND_WITH_INV naming the window */
	MUST(mw_pair(e, &p, target, off, len, &mr, &mw, 98));
	key = vrdma_mw_rkey(mw);
	MUST(send_inv1(e, &p, key, 99));
	MUST(rdma1(e, &p.a, VIRTIO_IB_WR_RDMA_READ, 0, target + off, key, 64, 101, WC_REM_ACCESS_ERR));
	TRY(vrdma_dealloc_mw(mw));
	TRY(vrdma_dereg_mr(mr));
out:;
}

/* ---- the table ---- */

static const struct test {
	const char *name;
	void (*run)(struct env *e);
} tests[] = {
	{ "config space (GET_CONFIG)", t_query_device },
	{ "QUERY_PORT", t_query_port },
	{ "QUERY_PKEY", t_query_pkey },
	{ "CREATE_CQ", t_create_cq },
	{ "DESTROY_CQ", t_destroy_cq },
	{ "CREATE_PD and DESTROY_PD", t_pd },
	{ "GET_DMA_MR", t_get_dma_mr },
	{ "CREATE_MR and MAP_MR_SG", t_create_mr_map },
	{ "REG_USER_MR", t_reg_user_mr },
	{ "DEREG_MR", t_dereg_mr },
	{ "CREATE_QP", t_create_qp },
	{ "MODIFY_QP", t_modify_qp },
	{ "QUERY_QP", t_query_qp },
	{ "DESTROY_QP", t_destroy_qp },
	{ "ADD_GID", t_add_gid },
	{ "DEL_GID", t_del_gid },
	{ "REQ_NOTIFY_CQ", t_req_notify_cq },
	{ "CQ overrun: a CQ_ERR event, nothing silent", t_cq_overrun },
	{ "malformed control requests", t_malformed_ctrl },
	{ "RC SEND", t_rc_send },
	{ "RC RDMA WRITE", t_rc_write },
	{ "RC RDMA READ", t_rc_read },
	{ "UC SEND and RDMA WRITE", t_uc },
	{ "UD SEND", t_ud },
	{ "inline sends", t_inline },
	{ "SGE outside the MR or guest memory: LOC_PROT_ERR", t_prot_err },
	{ "malformed WQEs: LOC_QP_OP_ERR", t_malformed_wqe },
	{ "close and reconnect", t_reconnect_close },
	{ "connection dropped and reconnect", t_reconnect_crash },
	{ "RC bulk transfer, checked to the byte", t_rc_bulk },
	{ "MR deregistered under a WRITE into it: REM_ACCESS_ERR", t_dereg_under_write },
	/* appended: scripts name tests by number */
	{ "RC atomics (CMP_AND_SWP, FETCH_AND_ADD)", t_rc_atomic },
	{ "fast registration on the wire: REG_MR, LOCAL_INV, SEND_WITH_INV", t_frwr_wire },
	{ "memory windows on the wire: BIND_MW, access, invalidation", t_mw_wire },
	{ "QP1 (GSI): one per device, QPN 1, datagrams with QP1's Q_Key", t_gsi },
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static void print_gid(const char *vm, const uint8_t gid[16])
{
	char buf[INET6_ADDRSTRLEN];

	printf("# VM %s: GID 0 %s\n", vm, inet_ntop(AF_INET6, gid, buf, sizeof(buf)) ? buf : "?");
}

/* VRDMA_TEST_HOLD=SECONDS: leave an RC pair between A and B connected and
 * idle that long after one message, so a test can measure an idle daemon
 * that still serves VMs. */
static void hold_idle(struct env *e, unsigned int secs)
{
	struct pair p;

	e->why[0] = '\0';
	if (open_vm(e, A) || open_vm(e, B)) {
		fail(e, "cannot open the VMs");
		goto out;
	}
	MUST(pair_make(e, &p, VIRTIO_IB_QPT_RC, A, B));
	MUST(xfer_send(e, &p.a, &p.b, 4096, false, 1));
	printf("# holding an idle RC pair for %u s\n", secs);
	fflush(stdout);
	sleep(secs);
out:
	close_vm(e, A);
	close_vm(e, B);
	if (e->why[0])
		printf("# hold: %s\n", e->why);
}

/* ---- flood: heavy page lists from one VM ---- */

#define FLOOD_PAGES	(1u << 20)	/* a 4 GiB MR, no two pages contiguous */

/* One control command; its status (or 0xff if the device did not answer)
 * and the slowest answer so far in *worst_us. */
static uint8_t flood_cmd(struct vrdma_ctx *ctx, uint8_t cmd, const void *req, size_t req_len,
			 void *rsp, size_t rsp_len, uint64_t *worst_us)
{
	struct timespec t0, t1;
	uint32_t written;
	uint64_t us;
	uint8_t st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (vrdma_ctrl_raw(ctx, cmd, req, req_len, rsp, rsp_len, &st, &written))
		st = 0xff;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
	if (us > *worst_us)
		*worst_us = us;
	return st;
}

static void tally(uint8_t st, unsigned long *ok, unsigned long *nomem, unsigned long *other)
{
	if (st == VIRTIO_RDMA_OK)
		(*ok)++;
	else if (st == VIRTIO_RDMA_ERR_NOMEM)
		(*nomem)++;
	else
		(*other)++;
}

/* vrdma_test --flood SOCKET ROUNDS: ROUNDS times, REG_USER_MR of 2^20
 * scattered pages, then CREATE_MR of 2^20 pages and MAP_MR_SG of them, as
 * fast as the device answers; then every MR is deregistered and one more
 * REG_USER_MR must succeed (the budget comes back). Prints the counts and
 * the slowest answer. Exit 0 if every answer was OK or NOMEM and the last
 * one OK. */
static int flood(const char *path, unsigned long rounds)
{
	struct virtio_rdma_cmd_reg_user_mr reg = { 0 };
	struct virtio_rdma_cmd_create_mr cre = { 0 };
	struct virtio_rdma_cmd_map_mr_sg map = { 0 };
	struct virtio_rdma_cmd_dereg_mr der;
	struct virtio_rdma_rsp_map_mr_sg mrsp;
	struct virtio_rdma_rsp_mr rsp;
	struct vrdma_open_attr attr = { .mem_size = MEM_SIZE };
	unsigned long ok[3] = { 0 }, nomem[3] = { 0 }, other = 0, i, n_mrs = 0;
	uint64_t worst_us = 0, *pages;
	uint32_t *mrs = NULL;
	struct vrdma_ctx *ctx;
	struct vrdma_pd *pd;
	uint8_t *data, st, last = 0xff;
	int ret;

	ret = vrdma_open(path, &attr, &ctx);
	if (ret) {
		fprintf(stderr, "vrdma_test: cannot open %s: %s\n", path, errname(ret));
		return 1;
	}
	pages = vrdma_alloc_buf(ctx, FLOOD_PAGES * 8ul);
	data = vrdma_alloc_buf(ctx, 3 * 4096);
	mrs = calloc(2 * rounds + 1, sizeof(*mrs));
	if (!pages || !data || !mrs || vrdma_alloc_pd(ctx, &pd)) {
		fprintf(stderr, "vrdma_test: cannot set up the flood\n");
		goto close;
	}
	/* Pages 0 and 2 of data in turn: no two neighbours are contiguous. */
	for (i = 0; i < FLOOD_PAGES; i++)
		pages[i] = htole64(vrdma_gpa(ctx, data) + (i % 2) * 2 * 4096);
	reg.pdn = cre.pdn = vrdma_pd_handle(pd);
	reg.access_flags = cre.access_flags = VIRTIO_IB_ACCESS_LOCAL_WRITE;
	reg.length = map.length = (uint64_t)FLOOD_PAGES * 4096;
	reg.pages = map.pages = vrdma_gpa(ctx, pages);
	reg.npages = map.npages = cre.max_num_sg = FLOOD_PAGES;
	for (i = 0; i < rounds; i++) {
		st = flood_cmd(ctx, VIRTIO_CMD_REG_USER_MR, &reg, sizeof(reg), &rsp, sizeof(rsp),
			       &worst_us);
		if (!st)
			mrs[n_mrs++] = le32toh(rsp.mrn);
		tally(st, &ok[0], &nomem[0], &other);
		st = flood_cmd(ctx, VIRTIO_CMD_CREATE_MR, &cre, sizeof(cre), &rsp, sizeof(rsp),
			       &worst_us);
		tally(st, &ok[1], &nomem[1], &other);
		if (st)
			continue;
		mrs[n_mrs++] = map.mrn = le32toh(rsp.mrn);
		st = flood_cmd(ctx, VIRTIO_CMD_MAP_MR_SG, &map, sizeof(map), &mrsp, sizeof(mrsp),
			       &worst_us);
		tally(st, &ok[2], &nomem[2], &other);
	}
	for (i = 0; i < n_mrs; i++) {
		der.mrn = htole32(mrs[i]);
		if (flood_cmd(ctx, VIRTIO_CMD_DEREG_MR, &der, sizeof(der), NULL, 0, &worst_us))
			other++;
	}
	last = flood_cmd(ctx, VIRTIO_CMD_REG_USER_MR, &reg, sizeof(reg), &rsp, sizeof(rsp),
			 &worst_us);
	printf("flood: %lu rounds of %u pages: reg_user_mr ok %lu nomem %lu, create_mr ok %lu nomem %lu, "
	       "map_mr_sg ok %lu nomem %lu, other %lu; after dereg: %s; slowest answer %.1f ms\n",
	       rounds, FLOOD_PAGES, ok[0], nomem[0], ok[1], nomem[1], ok[2], nomem[2], other,
	       last ? "refused" : "ok", worst_us / 1000.0);
close:
	free(mrs);
	vrdma_close(ctx);
	return !other && !last ? 0 : 1;
}

static bool run_one(struct env *e, unsigned int n)
{
	static bool shown;
	int ret;

	e->why[0] = '\0';
	ret = open_vm(e, A);
	if (ret) {
		fail(e, "cannot open VM A at %s (or read its GID 0): %s", e->path[A], errname(ret));
	} else {
		ret = open_vm(e, B);
		if (ret) {
			fail(e, "cannot open VM B at %s (or read its GID 0): %s", e->path[B], errname(ret));
		} else {
			if (!shown) {
				print_gid("A", e->gid[A]);
				print_gid("B", e->gid[B]);
				shown = true;
			}
			tests[n - 1].run(e);
		}
	}
	close_vm(e, A);
	close_vm(e, B);
	if (e->why[0])
		printf("not ok %u - %s: %s\n", n, tests[n - 1].name, e->why);
	else
		printf("ok %u - %s\n", n, tests[n - 1].name);
	fflush(stdout);
	return !e->why[0];
}

int main(int argc, char **argv)
{
	unsigned int passed = 0, failed = 0, n;
	struct env e = { 0 };
	int i;

	/* vrdma_test --resolve ADDRESS MAC: vrdma_resolve_mac finds MAC for
	 * ADDRESS in the kernel neighbour table (or "none": it must not). */
	if (argc == 4 && !strcmp(argv[1], "--resolve")) {
		uint8_t gid[16] = { [10] = 0xff, [11] = 0xff }, mac[6];
		char got[18] = "none";
		int r;

		if (inet_pton(AF_INET, argv[2], gid + 12) != 1 &&
		    inet_pton(AF_INET6, argv[2], gid) != 1)
			return 2;
		r = vrdma_resolve_mac(gid, mac);
		if (!r)
			snprintf(got, sizeof(got), "%02x:%02x:%02x:%02x:%02x:%02x",
				 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
		printf("resolve %s: %s (%s)\n", argv[2], got, r ? errname(r) : "ok");
		return strcmp(got, argv[3]) ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "--flood"))
		return flood(argv[2], strtoul(argv[3], NULL, 10));
	if (argc < 3) {
		fprintf(stderr, "Usage: vrdma_test SOCKET_A SOCKET_B [TEST_NUMBER...]\n"
			"       vrdma_test --flood SOCKET ROUNDS\n"
			"Tests 1..%zu:\n", NTESTS);
		for (n = 1; n <= NTESTS; n++)
			fprintf(stderr, "  %2u  %s\n", n, tests[n - 1].name);
		return 2;
	}
	e.path[A] = argv[1];
	e.path[B] = argv[2];
	for (i = 3; i < argc; i++) {
		char *end;
		unsigned long v = strtoul(argv[i], &end, 10);

		if (*end || !v || v > NTESTS) {
			fprintf(stderr, "vrdma_test: no test %s (1..%zu)\n", argv[i], NTESTS);
			return 2;
		}
	}
	if (argc == 3) {
		for (n = 1; n <= NTESTS; n++)
			run_one(&e, n) ? passed++ : failed++;
	} else {
		for (i = 3; i < argc; i++)
			run_one(&e, strtoul(argv[i], NULL, 10)) ? passed++ : failed++;
	}
	printf("vrdma_test: %u passed, %u failed\n", passed, failed);
	fflush(stdout);
	if (getenv("VRDMA_TEST_HOLD"))
		hold_idle(&e, (unsigned int)atoi(getenv("VRDMA_TEST_HOLD")));
	return failed ? 1 : 0;
}
