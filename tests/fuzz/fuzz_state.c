// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stateful libFuzzer target for one device (`make fuzz`): one input drives a
 * whole tenant, interleaving control commands, WQEs on the send and receive
 * queues, frames addressed to the device's QPs, the clock, and vhost-user
 * messages (a reset, a new memory table, a disconnect and a reconnect). The
 * other device fuzzers each see one kind of input; bugs that need a sequence
 * (an MR deregistered while a WRITE into it is in flight, a QP destroyed with
 * its frames still on the wire) need them all.
 *
 * The device (max_cq = max_qp = 4, GID ::ffff:10.0.0.1) sits on the fixture
 * of fuzz_device.h with 1 MiB of guest memory. The fuzzer plays the driver:
 * all 13 queues are set up (8 entries each; CQ queues start full of
 * buffers, before any CQ exists; a live CQ gets each back as it fills
 * it), and every handle a command returns is kept, so later records
 * name objects by a small index (stale ones included). The device's frames
 * go to a transmit ring of 64; a DELIVER record feeds them back to it (a QP
 * connected to one of the same device receives them), dropped, duplicated or
 * with a PSN moved; a FRAME record builds one (valid ICRC) from its fields.
 *
 * ABI v2 (docs/virtio-rdma.md section 8): a ring op (below) moves the
 * tenant to rings for the rest of the input: the driver reloads having
 * negotiated VIRTIO_RDMA_F_RINGS (the device resets, sized by ring_max_cq =
 * ring_max_qp = 8) and adds a doorbell page. The same ops then create CQs,
 * QPs and SRQs with the *_RING commands (one more byte each: the ring's
 * variant, entries or strides doubled, the page list backwards, a far bit,
 * a second doorbell page, or a bad descriptor that must be refused), rings
 * laid in guest memory; WQEs go into ring slots, then prod, then the
 * queue's doorbell bit; each poll consumes the CQ rings (unless held) and
 * writes cons; REQ_NOTIFY is the arm word and bit; events come on the
 * event queue; RESTART saves format 2. Ring ops: doorbells (a bit anywhere,
 * a ring's with nothing posted, ADD / DEL_DB_PAGE, the worker asleep and
 * woken, the event queue starved), lies (a prod a ring ahead or any, a
 * garbage WQE, cons anywhere, a garbage arm, any guest-half header word),
 * a CQ consumed in part or held, and the features dropped and taken again.
 *
 * Input: records, as long as it lasts; each is an op byte (mod OP_MAX, or
 * from RING_OP_BASE a ring op) and the bytes that op reads (zero where the
 * input ends). See the op_* below.
 * Checks: the sanitizers (use-after-free, leaks at exit), every status is a
 * known one, every CQE a known status and opcode or an event (a REG_MR,
 * LOCAL_INV, BIND_MW or SEND_WITH_INV that succeeds completes with its
 * own), no WRITE or atomic through a FREE MR's key, a FREE window's or one
 * bound to another QP changes memory, one through a bound window changes
 * no byte outside it, a CQ buffer
 * given back with length 0 unwritten, a slot's queues empty after CREATE
 * and DESTROY and a WQE posted to a slot without a QP given back at the
 * next poll (a WQE for a stale QPN goes to a slot the QPN picks, as a
 * driver racing its DESTROY would post; docs/virtio-rdma.md section 5; an
 * SRQ's slot gives back what its SQ is given), and the device stays
 * live unless a vhost-user record broke it (it is then reconnected, as
 * vm_server.c would). On rings: every CQE in a CQ ring a known one (as above)
 * with the rest of its slot zero, `written` never back nor more than
 * `entries` past what the consumer took (a lying cons included), the next
 * slot to write untouched until `written` names it; a WQ ring's `taken` never
 * back nor past an honest `prod`; each event 8 bytes naming a CQ ring the
 * driver holds, a COMPLETION only for an arm it wrote (one each); a bad
 * descriptor refused, a good one's device words (taken, written, armed) 0
 * whatever the page held; ring memory the device let go of (DESTROY, a reset,
 * a CREATE refused) never written again; DEL_DB_PAGE BUSY exactly while a
 * ring names the page; need_wake clear on a page added, set on every page
 * while the worker sleeps (and a ring's bit rung before keeps it awake),
 * clear once it wakes. A RESTART record saves the device and restores it in a
 * fresh one (docs/restart.md), which saves again to the same bytes, or a copy
 * with one byte changed. FUZZ_VERBOSE=1 keeps the daemon's log and prints
 * each record.
 *
 * Run it longer than `make fuzz` does: make build/fuzz_state &&
 * build/fuzz_state -max_total_time=3600 -max_len=4096 CORPUS_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define GUEST_SIZE	(1u << 20)
#define FUZZ_OWN_HOST
#include "fuzz_device.h"

#include "codec.h"
#include "engine_int.h"
#include "icrc.h"
#include "vdev_int.h"
#include "vdev_test.h"

#define N_SLOTS		4u		/* max_cq = max_qp (fuzz_device.h) */
#define N_VQS		VIRTIO_RDMA_NUM_VQS(N_SLOTS, N_SLOTS)
#define QN		8u		/* entries per queue */
#define RING_OFF(q)	((uint64_t)(q) * 1024u)	/* desc, avail +128, used +256 */
#define BUF_SIZE	2048u
#define BUF_OFF(q, i)	(0x10000u + ((uint64_t)(q) * QN + (i)) * BUF_SIZE)
#define PAGES_OFF	0x48000u	/* REG_USER_MR / MAP_MR_SG page lists */
#define DATA_OFF	0x80000u	/* what MRs cover: 128 pages */
#define DATA_PAGES	128u
#define MAX_RECONNECTS	3
/* ABI v2: ring_max_cq = ring_max_qp (fuzz_device.h); the rings and
 * doorbell pages lie where v1's WQE buffers would (a tenant is one or the
 * other) */
#define N_RSLOTS	8u
#define CQR_OFF		0x20000u	/* CQ rings: CQR_PAGES pages each */
#define CQR_PAGES	2u
#define DB_OFF		0x4c000u	/* doorbell pages */
#define N_DB		2u
#define WQR_OFF		0x4e000u	/* QP, SRQ rings: 4 pages SQ, 2 RQ each */
#define WQR_PAGES	6u

/* ---- the host: a clock and a transmit ring ---- */

#define TX_FRAMES	64u
static uint8_t tx_buf[TX_FRAMES][BUF_SIZE];
static uint32_t tx_len[TX_FRAMES];
static uint32_t tx_head, tx_tail;	/* free-running */

static uint64_t h_now(void *ctx)
{
	(void)ctx;
	return clock_ns;
}

static unsigned int h_tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
			       struct roce_frag *frags, unsigned int max)
{
	(void)ctx;
	(void)dgid;
	if (!max || len > BUF_SIZE || tx_tail - tx_head == TX_FRAMES)
		return 0;
	frags[0].data = tx_buf[tx_tail % TX_FRAMES];
	frags[0].len = BUF_SIZE;
	return 1;
}

static void h_tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	(void)ctx;
	CHECK(n == 1 && frags[0].data == tx_buf[tx_tail % TX_FRAMES] && len <= BUF_SIZE);
	tx_len[tx_tail % TX_FRAMES] = len;
	tx_tail++;
}

static const struct eng_tx host = { h_now, h_tx_alloc, h_tx_send, NULL };

/* ---- the input ---- */

static const uint8_t *in;
static size_t in_left;

static uint8_t u8(void)
{
	if (!in_left)
		return 0;
	in_left--;
	return *in++;
}

/* Little-endian; each byte read in its own statement (C leaves the order
 * of operands unsequenced). */
static uint16_t u16(void)
{
	uint16_t lo = u8();

	return (uint16_t)(lo | u8() << 8);
}

static uint32_t u32(void)
{
	uint32_t lo = u16();

	return lo | (uint32_t)u16() << 16;
}

/* ---- what the driver keeps ---- */

struct f_mr {
	uint32_t mrn, key;	/* a window: its mwn and rkey */
	uint32_t old_key;	/* the key before the last REG_MR or BIND_MW posted: stale */
	bool fast;		/* CREATE_MR: REG_MR, LOCAL_INV, MAP_MR_SG apply */
	uint64_t iova, len;	/* a window: the range of the last bind posted */
	bool mw;		/* a memory window, kept with the MRs: its key is used alike */
};

#define KEEP 8u
/* wr_id >> 8 of op_fast's WQEs (op_post_send's are < 0x100, receives'
 * 0x1xx and 0x2xx) */
enum { WR_REG_MR = 4, WR_LOCAL_INV, WR_SEND_INV, WR_BIND_MW };
static uint32_t pdns[KEEP], cqns[KEEP], qpns[KEEP], srqns[KEEP];
static struct f_mr mrs[KEEP];
static unsigned int n_pd, n_cq, n_mr, n_qp, n_srq;	/* free-running: the newest replace the oldest */
static uint16_t avail_idx[N_VQS], used_seen[N_VQS];
static uint8_t cq_out[N_VQS];		/* CQ buffers made available, a bit each */
static bool cq_live[N_SLOTS];		/* by cqn: give its buffers back to it */
static uint32_t slot_qpn[N_RSLOTS];	/* the QP of each slot, 0: none */
static unsigned int reconnects;
static bool broke_ok;			/* a vhost-user record may break the device */

/* ABI v2: the tenant negotiated VIRTIO_RDMA_F_RINGS (a ring op did) */
static bool rings;
struct f_ring {
	uint32_t off;		/* its area in guest memory (0: no ring) */
	uint32_t entries, stride, hdr, bit, db;	/* db: its doorbell page's offset */
	bool rev;		/* its page list backwards */
	uint32_t idx;		/* a WQ's prod; what a CQ's consumer took */
	uint32_t seen;		/* taken / written, as last seen */
	bool lied;		/* a lying prod: its taken is the device's word alone */
};
static struct f_cqr {
	struct f_ring r;
	bool hold;		/* not consumed at each poll: it fills */
	uint32_t arm;		/* the arm word last written */
	unsigned int credits;	/* arms taken at most: a COMPLETION event each */
} cqr[N_RSLOTS];		/* by cqn */
static struct f_ring sqr[N_RSLOTS], rqr[N_RSLOTS];	/* by slot: a QP's, an SRQ's rq */
static bool cq_area[N_RSLOTS], wq_area[N_RSLOTS];	/* in use */
#define CQ_AREA(a)	(CQR_OFF + (a) * CQR_PAGES * 4096u)
#define WQ_AREA(a)	(WQR_OFF + (a) * WQR_PAGES * 4096u)
#define GONE		0x6b	/* ring memory the device let go of */
static uint8_t slot_area[N_RSLOTS];	/* by slot: its rings' area + 1, 0: none */
static bool rang;			/* a ring's bit set since the last poll */
static bool ev_hold;			/* event buffers kept: events are lost */
static uint32_t dbns[N_DB], db_off[N_DB];
static unsigned int n_db;
static uint64_t mem_size;		/* what the memory table maps of guest memory */

#define KEEP_ADD(arr, n, val) ((arr)[(n)++ % KEEP] = (val))

/* A kept handle by index (or, with no handle yet, a value that names none). */
static uint32_t pick(const uint32_t *arr, unsigned int n, uint8_t b)
{
	unsigned int have = n < KEEP ? n : KEEP;

	return have ? arr[b % have] : 0x7f;
}

static const struct f_mr *pick_mr(uint8_t b)
{
	static const struct f_mr none = { 0x7f, 0x7f00, 0x7f00, false, 0, 4096, false };
	unsigned int have = n_mr < KEEP ? n_mr : KEEP;

	return have ? &mrs[b % have] : &none;
}

static uint8_t ctrl(uint8_t cmd, const void *req, size_t len, void *rsp, size_t cap)
{
	uint8_t buf[256];
	uint32_t rsp_len = 0;
	uint8_t st;

	memset(buf, 0, sizeof(buf));
	st = vdev_ctrl_exec(&v, cmd, req ? req : buf, len, rsp ? rsp : buf, rsp ? cap : sizeof(buf),
			    &rsp_len);
	if (verbose)
		fprintf(stderr, "  cmd %u: status %u\n", cmd, st);
	CHECK(st <= VIRTIO_RDMA_ERR_UNSUPP);
	return st;
}

static struct eng_qp *eng_qp_of(uint32_t qpn)
{
	return eng_qp_from_num(v.eng, qpn);
}

/* The QP slot behind a QPN, as the device lays out its queues. */
static int qp_slot(uint32_t qpn)
{
	struct eng_qp *eq = eng_qp_of(qpn);

	return eq ? (int)eng_qp_handle(eq) : -1;
}

/* ---- the rings, as a driver fills them ---- */

static struct vring_desc *desc_of(unsigned int q)
{
	return (struct vring_desc *)(guest + RING_OFF(q));
}

static struct vring_avail *avail_of(unsigned int q)
{
	return (struct vring_avail *)(guest + RING_OFF(q) + 128);
}

static struct vring_used *used_of(unsigned int q)
{
	return (struct vring_used *)(guest + RING_OFF(q) + 256);
}

static void push_avail(unsigned int q, uint16_t id)
{
	struct vring_avail *a = avail_of(q);

	a->ring[avail_idx[q] % QN] = id;
	a->idx = ++avail_idx[q];
}

/* One device-readable buffer; false while the ring is full. */
static bool post_chain(unsigned int q, const void *buf, uint32_t len)
{
	uint16_t slot = avail_idx[q] % QN;
	struct vring_desc *d = &desc_of(q)[slot];

	if ((uint16_t)(avail_idx[q] - used_of(q)->idx) >= QN || len > BUF_SIZE)
		return false;
	memcpy(guest + BUF_OFF(q, slot), buf, len);
	d->addr = GUEST_GPA + BUF_OFF(q, slot);
	d->len = len;
	d->flags = 0;
	d->next = 0;
	push_avail(q, slot);
	return true;
}

#define CQ_BUF_LEN	64u
#define CANARY		0x5c

static void post_cq_buf(unsigned int q, uint16_t id)
{
	memset(guest + BUF_OFF(q, id), CANARY, CQ_BUF_LEN);
	push_avail(q, id);
	cq_out[q] |= (uint8_t)(1u << id);
}

/* Bytes [from, CQ_BUF_LEN) of a CQ buffer as posted. */
static bool untouched(const uint8_t *b, uint32_t from)
{
	for (; from < CQ_BUF_LEN; from++)
		if (b[from] != CANARY)
			return false;
	return true;
}

/* Linux's enum ib_wc_opcode, the values the ABI lists (docs/virtio-rdma.md
 * section 5), or an async event: a guest driver passes it on unchanged. */
static bool cqe_opcode_known(uint8_t op)
{
	return op <= 6 || op == 10 || op == 128 || op == 129 ||
	       op == VIRTIO_RDMA_WC_ASYNC_EVENT;
}

/* A successful completion of an op_fast WQE (told by its wr_id) has the
 * opcode of its kind; a receive that invalidated is a RECV. */
static bool cqe_opcode_fits(const struct virtio_rdma_cqe *c)
{
	if (c->wc_flags & 4)	/* IB_WC_WITH_INVALIDATE */
		return c->opcode == 128;
	switch (c->wr_id >> 8) {
	case WR_REG_MR:
		return c->opcode == 10;	/* IB_WC_REG_MR */
	case WR_LOCAL_INV:
		return c->opcode == 6;	/* IB_WC_LOCAL_INV */
	case WR_SEND_INV:
		return c->opcode == 0;	/* IB_WC_SEND */
	case WR_BIND_MW:
		return c->opcode == 5;	/* IB_WC_BIND_MW */
	}
	return true;
}

/* A CQE as the device wrote it: a known status and opcode, or an event. */
static void check_cqe(const uint8_t *b)
{
	struct virtio_rdma_cqe cqe;

	memcpy(&cqe, b, sizeof(cqe));
	if (verbose)
		fprintf(stderr, "  cqe wr_id %#" PRIx64 " status %u opcode %u flags %u\n",
			cqe.wr_id, cqe.status, cqe.opcode, cqe.wc_flags);
	CHECK(cqe.opcode == 0xff || cqe.status <= ENG_WC_GENERAL_ERR);
	CHECK(cqe_opcode_known(cqe.opcode));
	if (cqe.opcode != VIRTIO_RDMA_WC_ASYNC_EVENT && !cqe.status)
		CHECK(cqe_opcode_fits(&cqe));
}

/* Take the buffers queue q gave back, checking what the device wrote: a
 * CQE, or nothing at all (length 0: its CQ went, or never was). A live
 * CQ gets them again. */
static void reap_cq(uint32_t c)
{
	unsigned int q = VIRTIO_RDMA_CQ_VQ(c);

	while (used_seen[q] != used_of(q)->idx) {
		const struct vring_used_elem *e = &used_of(q)->ring[used_seen[q] % QN];
		const uint8_t *b = guest + BUF_OFF(q, e->id % QN);

		CHECK(e->id < QN && (cq_out[q] & (1u << e->id)));
		cq_out[q] &= (uint8_t)~(1u << e->id);
		if (e->len) {
			CHECK(e->len == sizeof(struct virtio_rdma_cqe) &&
			      untouched(b, sizeof(struct virtio_rdma_cqe)));
			check_cqe(b);
		} else {
			CHECK(untouched(b, 0));
		}
		used_seen[q]++;
		if (cq_live[c])
			post_cq_buf(q, (uint16_t)e->id);
	}
}

static void reap_cqs(void)
{
	uint32_t c;

	for (c = 0; c < vmcfg.max_cq; c++)
		reap_cq(c);
}

/* After CREATE or DESTROY: everything made available on queue q is back
 * (on rings a slot names no queue). */
static void check_empty(unsigned int q)
{
	if (!rings && vdev_live(&v))
		CHECK(used_of(q)->idx == avail_idx[q]);
}

static void check_empty_qp_slot(uint32_t k)
{
	check_empty(VIRTIO_RDMA_SQ_VQ(vmcfg.max_cq, k));
	check_empty(VIRTIO_RDMA_RQ_VQ(vmcfg.max_cq, k));
}

static bool setup_queue(unsigned int q)
{
	struct vhost_vring_state st = { q, QN };
	struct vhost_vring_addr a = { .index = q };
	uint64_t base = (uint64_t)(uintptr_t)guest + RING_OFF(q);
	uint64_t u = q | VHOST_USER_VRING_NOFD_MASK;
	unsigned int i;

	a.desc_user_addr = base;
	a.avail_user_addr = base + 128;
	a.used_user_addr = base + 256;
	memset(guest + RING_OFF(q), 0, 1024);
	avail_idx[q] = used_seen[q] = 0;
	cq_out[q] = 0;
	if (send_msg(VHOST_USER_SET_VRING_NUM, &st, sizeof(st), NULL, 0) ||
	    send_msg(VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0))
		return false;
	st.num = 0;
	if (send_msg(VHOST_USER_SET_VRING_BASE, &st, sizeof(st), NULL, 0) ||
	    send_msg(VHOST_USER_SET_VRING_KICK, &u, sizeof(u), NULL, 0) ||
	    send_msg(VHOST_USER_SET_VRING_CALL, &u, sizeof(u), NULL, 0))
		return false;
	/* v1's CQ queues start full; on rings the event queue does */
	if (rings ? q == VIRTIO_RDMA_EVENT_VQ :
	    q >= VIRTIO_RDMA_CQ_VQ(0) && q < VIRTIO_RDMA_CQ_VQ(vmcfg.max_cq)) {
		for (i = 0; i < QN; i++) {
			desc_of(q)[i] = (struct vring_desc){ GUEST_GPA + BUF_OFF(q, i), CQ_BUF_LEN,
							     VRING_DESC_F_WRITE, 0 };
			post_cq_buf(q, (uint16_t)i);
		}
	}
	st.num = 1;
	return send_msg(VHOST_USER_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0) == 0;
}

/* need_wake's number at the last sleep (0: none yet) */
static uint32_t last_wake;

/* A doorbell page's need_wake word (the device's). */
static uint32_t need_wake(uint32_t db)
{
	return __atomic_load_n((uint32_t *)(guest + db + VIRTIO_RDMA_DB_NEED_WAKE), __ATOMIC_SEQ_CST);
}

/* A doorbell page at DB_OFF + i pages, as a context's; false if refused. */
static bool add_db(unsigned int i)
{
	struct virtio_rdma_cmd_add_db_page q = { GUEST_GPA + DB_OFF + i * 4096ull };
	struct virtio_rdma_rsp_add_db_page r;

	/* no bit set; the device's half as the page was: it clears that */
	memset(guest + DB_OFF + i * 4096u, 0xff, VIRTIO_RDMA_DB_BITS_OFF);
	memset(guest + DB_OFF + i * 4096u + VIRTIO_RDMA_DB_BITS_OFF, 0,
	       4096 - VIRTIO_RDMA_DB_BITS_OFF);
	if (ctrl(VIRTIO_CMD_ADD_DB_PAGE, &q, sizeof(q), &r, sizeof(r)))
		return false;
	CHECK(!need_wake(DB_OFF + i * 4096u));
	dbns[n_db] = r.dbn;
	db_off[n_db++] = DB_OFF + i * 4096u;
	return true;
}

/* A connected, ready device with no objects: a new connection. On rings
 * the driver negotiates ABI v2 (the device resets, sized for rings) and
 * adds its doorbell page. */
static void connect_device(void)
{
	uint64_t u = VU_FEATURES;
	unsigned int q;

	v.vu.fd = sp[0];
	if (!handshake()) {
		fprintf(stderr, "handshake failed: %s\n", v.vu.last_error);
		abort();
	}
	mem_size = GUEST_SIZE;
	if (rings)
		CHECK(send_msg(VHOST_USER_SET_FEATURES, &u, sizeof(u), NULL, 0) == 0);
	for (q = 0; q < N_VQS; q++)
		CHECK(setup_queue(q));
	n_pd = n_cq = n_mr = n_qp = n_srq = 0;
	memset(cq_live, 0, sizeof(cq_live));
	memset(slot_qpn, 0, sizeof(slot_qpn));
	memset(cqr, 0, sizeof(cqr));
	memset(sqr, 0, sizeof(sqr));
	memset(rqr, 0, sizeof(rqr));
	memset(cq_area, 0, sizeof(cq_area));
	memset(wq_area, 0, sizeof(wq_area));
	memset(slot_area, 0, sizeof(slot_area));
	rang = ev_hold = false;
	n_db = 0;
	last_wake = 0;
	if (rings) {
		/* what a reset let go of stays so (area_check) */
		memset(guest + CQ_AREA(0), GONE, N_RSLOTS * CQR_PAGES * 4096u);
		memset(guest + WQ_AREA(0), GONE, N_RSLOTS * WQR_PAGES * 4096u);
		CHECK(add_db(0));
	}
}

/* ---- ABI v2: rings in guest memory, as a driver keeps them ---- */

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static uint32_t ring_pages(const struct f_ring *r)
{
	return (r->hdr + r->entries * r->stride + 4095u) / 4096u;
}

/* Byte x of a ring, through its page list (which may run backwards). */
static uint8_t *ring_at(const struct f_ring *r, uint32_t x)
{
	uint32_t pg = x / 4096u;

	if (r->rev)
		pg = ring_pages(r) - 1 - pg;
	return guest + r->off + pg * 4096u + x % 4096u;
}

static uint32_t ring_ld(const struct f_ring *r, uint32_t word)
{
	return __atomic_load_n((uint32_t *)ring_at(r, word), __ATOMIC_ACQUIRE);
}

static void ring_st(const struct f_ring *r, uint32_t word, uint32_t val)
{
	__atomic_store_n((uint32_t *)ring_at(r, word), val, __ATOMIC_RELEASE);
}

static uint8_t *ring_slot(const struct f_ring *r, uint32_t i)
{
	return ring_at(r, r->hdr + (i % r->entries) * r->stride);
}

/* A queue's bit, as a driver sets it: an atomic OR. */
static void bell(uint32_t db, uint32_t bit)
{
	uint64_t *w = (uint64_t *)(guest + db + VIRTIO_RDMA_DB_BITS_OFF) + bit / 64;

	__atomic_fetch_or(w, 1ull << (bit % 64), __ATOMIC_SEQ_CST);
}

static void ring_bell(const struct f_ring *r)
{
	bell(r->db, r->bit);
	rang = true;
}

/* A live ring's bit is set on its page: the device must call that work
 * before it sleeps (a bit a destroyed ring left may be ignored). */
static bool live_bit_set(void)
{
	const struct f_ring *r;
	unsigned int k, q;

	for (k = 0; k < N_RSLOTS; k++)
		for (q = 0; q < 3; q++) {
			r = q == 0 ? &cqr[k].r : q == 1 ? &sqr[k] : &rqr[k];
			if (r->off && ((const uint64_t *)(guest + r->db + VIRTIO_RDMA_DB_BITS_OFF))
				      [r->bit / 64] & (1ull << (r->bit % 64)))
				return true;
		}
	return false;
}

/* A ring laid in its area, zeroed but for the device's half of the header
 * (it clears that at CREATE) and a CQ's slots (the canary: a slot the
 * device writes shows), its page list at list; the guest address of the
 * list. */
static uint64_t ring_lay(struct f_ring *r, uint32_t off, uint32_t entries, uint32_t stride,
			 bool rev, uint32_t list, bool cq)
{
	uint32_t i, n;

	memset(r, 0, sizeof(*r));
	r->off = off;
	r->entries = entries;
	r->stride = stride;
	r->hdr = stride > VIRTIO_RDMA_RING_HDR_MIN ? stride : VIRTIO_RDMA_RING_HDR_MIN;
	r->rev = rev;
	n = ring_pages(r);
	memset(guest + off, 0, n * 4096u);
	for (i = 64; i < 128; i++)
		*ring_at(r, i) = 0xff;
	for (i = 0; cq && i < entries; i++)
		memset(ring_slot(r, i), CANARY, stride);
	for (i = 0; i < n; i++) {
		uint64_t pa = GUEST_GPA + off + (rev ? n - 1 - i : i) * 4096ull;

		memcpy(guest + list + i * 8u, &pa, 8);
	}
	return GUEST_GPA + list;
}

/* An area of ring memory the device let go of (DESTROY, a reset, a CREATE
 * refused) is filled with GONE; the device never writes there again, so it
 * is still GONE when a ring is laid there next. */
static void area_check(uint32_t off, uint32_t pages)
{
	uint32_t i;

	for (i = 0; i < pages * 4096u; i++)
		CHECK(guest[off + i] == GONE);
}

static void area_gone(uint32_t off, uint32_t pages)
{
	memset(guest + off, GONE, pages * 4096u);
}

/* A descriptor gone bad by h (a variant byte's top bits): npages one too
 * many, a page past guest memory, a page unaligned; else untouched. */
static void ring_spoil(uint8_t h, uint32_t *npages, uint32_t list)
{
	uint64_t pa;

	memcpy(&pa, guest + list, 8);
	if (h == 1)
		(*npages)++;
	else if (h == 2)
		pa = GUEST_GPA + GUEST_SIZE;
	else if (h == 3)
		pa += 8;
	memcpy(guest + list, &pa, 8);
}

/* The doorbell page a ring is created on (variant 6: the second, if
 * added), or -1 for none (variant 7: a dbn no page has). */
static int ring_db(uint8_t h)
{
	if (h == 7 || !n_db)
		return -1;
	return h == 6 && n_db > 1 ? 1 : 0;
}

/* CREATE_CQ_RING in a free area, a variant byte rv: bit 0 entries doubled,
 * bit 2 the page list backwards, bits 5-7 (h) a bad descriptor, a bit in
 * use (a QP's), one in a far word, the second doorbell page, or none. */
static void create_cq_ring(uint32_t cqe, uint8_t rv)
{
	struct virtio_rdma_cmd_create_cq_ring q = { 0 };
	struct virtio_rdma_rsp_create_cq r;
	uint8_t h = rv >> 5;
	int dbi = ring_db(h);
	struct f_ring f;
	unsigned int a;

	for (a = 0; a < N_RSLOTS && cq_area[a]; a++)
		;
	if (a == N_RSLOTS)	/* as many CQs as the device holds */
		return;
	area_check(CQ_AREA(a), CQR_PAGES);
	q.pages = ring_lay(&f, CQ_AREA(a), pow2_at_least(cqe) << (rv & 1),
			   64, rv & 4, PAGES_OFF, true);
	f.bit = h == 4 ? 8 : h == 5 ? 64 * (8 + 3 * a) : a;
	f.db = dbi < 0 ? DB_OFF : db_off[dbi];
	q.entries = f.entries;
	q.dbn = dbi < 0 ? 0x7f : dbns[dbi];
	q.db_bit = f.bit;
	q.npages = ring_pages(&f);
	ring_spoil(h, &q.npages, PAGES_OFF);
	if (ctrl(VIRTIO_CMD_CREATE_CQ_RING, &q, sizeof(q), &r, sizeof(r))) {
		area_gone(CQ_AREA(a), CQR_PAGES);
		return;
	}
	CHECK(h < 1 || h > 3);
	CHECK(r.cqn < N_RSLOTS && !cqr[r.cqn].r.off);
	CHECK(!ring_ld(&f, VIRTIO_RDMA_RING_WRITTEN) && !ring_ld(&f, VIRTIO_RDMA_RING_ARMED));
	KEEP_ADD(cqns, n_cq, r.cqn);
	cq_area[a] = true;
	cqr[r.cqn] = (struct f_cqr){ .r = f };
}

static void release_cq_ring(uint32_t c)
{
	if (c < N_RSLOTS && cqr[c].r.off) {
		cq_area[(cqr[c].r.off - CQR_OFF) / (CQR_PAGES * 4096u)] = false;
		area_gone(cqr[c].r.off, CQR_PAGES);
		memset(&cqr[c], 0, sizeof(cqr[c]));
	}
}

/* CREATE_QP_RING (qp) or CREATE_SRQ_RING (srq) in a free area, a variant
 * byte as create_cq_ring's (bit 1: strides doubled; h 4: one bit for both
 * rings, or an SRQ's on a CQ's); the rings are kept by slot. */
static uint8_t create_wq_rings(const struct virtio_rdma_cmd_create_qp *qp,
			       const struct virtio_rdma_cmd_create_srq *srq, void *rsp,
			       size_t cap, uint32_t *k)
{
	uint8_t rv = u8(), h = rv >> 5;
	int dbi = ring_db(h);
	bool has_sq = qp, has_rq = !qp || !(qp->flags & VIRTIO_RDMA_CREATE_QP_SRQ);
	uint32_t swqe = 0, rwqe, swr = 0, rwr, base, list = PAGES_OFF;
	struct virtio_rdma_ring_desc d[2];
	struct f_ring s = { 0 }, r = { 0 };
	unsigned int a;
	uint8_t st;

	memset(d, 0, sizeof(d));
	for (a = 0; a < N_RSLOTS && wq_area[a]; a++)
		;
	if (a == N_RSLOTS)
		return VIRTIO_RDMA_ERR_NOMEM;
	base = WQ_AREA(a);
	area_check(base, WQR_PAGES);
	if (qp) {
		swr = qp->max_send_wr;
		swqe = (uint32_t)sizeof(struct virtio_rdma_cmd_post_send) + 16u * qp->max_send_sge +
		       qp->max_inline_data;
		rwr = qp->max_recv_wr;
		rwqe = (uint32_t)sizeof(struct virtio_rdma_cmd_post_recv) + 16u * qp->max_recv_sge;
	} else {
		rwr = srq->max_wr;
		rwqe = (uint32_t)sizeof(struct virtio_rdma_cmd_post_recv) + 16u * srq->max_sge;
	}
	if (has_sq) {
		d[0].pages = ring_lay(&s, base, pow2_at_least(swr) << (rv & 1),
				      pow2_at_least(swqe < 64 ? 64 : swqe) << (rv >> 1 & 1), rv & 4,
				      list, false);
		s.bit = h == 5 ? 64 * (40 + 3 * a) + 1 : 8 + 2 * a;
		d[0].entries = s.entries;
		d[0].stride = s.stride;
		d[0].db_bit = s.bit;
		d[0].npages = ring_pages(&s);
		ring_spoil(h, &d[0].npages, list);
		list += 2048;
	}
	if (has_rq) {
		d[1].pages = ring_lay(&r, base + 4 * 4096u, pow2_at_least(rwr) << (rv & 1),
				      pow2_at_least(rwqe < 64 ? 64 : rwqe) << (rv >> 1 & 1), rv & 4,
				      list, false);
		r.bit = h == 4 ? (qp ? s.bit : a) : h == 5 ? 64 * (40 + 3 * a) + 2 : 9 + 2 * a;
		d[1].entries = r.entries;
		d[1].stride = r.stride;
		d[1].db_bit = r.bit;
		d[1].npages = ring_pages(&r);
		if (!has_sq)
			ring_spoil(h, &d[1].npages, list);
	}
	s.db = r.db = dbi < 0 ? DB_OFF : db_off[dbi];
	if (qp) {
		struct virtio_rdma_cmd_create_qp_ring q = { .qp = *qp, .sq = d[0], .rq = d[1] };
		struct virtio_rdma_rsp_create_qp *o = rsp;

		q.dbn = dbi < 0 ? 0x7f : dbns[dbi];
		st = ctrl(VIRTIO_CMD_CREATE_QP_RING, &q, sizeof(q), rsp, cap);
		*k = o->qp_index;
	} else {
		struct virtio_rdma_cmd_create_srq_ring q = { .srq = *srq, .ring = d[1] };
		struct virtio_rdma_rsp_create_srq *o = rsp;

		q.dbn = dbi < 0 ? 0x7f : dbns[dbi];
		st = ctrl(VIRTIO_CMD_CREATE_SRQ_RING, &q, sizeof(q), rsp, cap);
		*k = o->srq_index;
	}
	if (st) {
		area_gone(base, WQR_PAGES);
		return st;
	}
	/* a bad descriptor, or one bit for a QP's two rings, is refused */
	CHECK((h < 1 || h > 3) && (h != 4 || !has_sq || !has_rq));
	CHECK(*k < N_RSLOTS && !slot_area[*k]);
	CHECK((!s.off || !ring_ld(&s, VIRTIO_RDMA_RING_TAKEN)) &&
	      (!r.off || !ring_ld(&r, VIRTIO_RDMA_RING_TAKEN)));
	wq_area[a] = true;
	slot_area[*k] = (uint8_t)(a + 1);
	sqr[*k] = s;
	rqr[*k] = r;
	return st;
}

static void release_wq_rings(uint32_t k)
{
	if (k < N_RSLOTS && slot_area[k]) {
		wq_area[slot_area[k] - 1] = false;
		area_gone(WQ_AREA(slot_area[k] - 1u), WQR_PAGES);
		slot_area[k] = 0;
		memset(&sqr[k], 0, sizeof(sqr[k]));
		memset(&rqr[k], 0, sizeof(rqr[k]));
	}
}

/* A WQE to slot k's send or receive queue: a virtqueue buffer on v1; on
 * rings into the slot prod names (the rest of the slot junk: not the
 * WQE's), then prod, then the bit. A slot without a ring gets its bit
 * alone (a driver racing its DESTROY). False while the queue is full. */
static bool post_wq(uint32_t k, bool recv, const void *buf, uint32_t len)
{
	struct f_ring *r = recv ? &rqr[k] : &sqr[k];
	uint8_t *slot;

	if (!rings)
		return post_chain(recv ? VIRTIO_RDMA_RQ_VQ(vmcfg.max_cq, k) :
				  VIRTIO_RDMA_SQ_VQ(vmcfg.max_cq, k), buf, len);
	if (!r->off) {
		bell(DB_OFF, 8 + 2 * k + recv);
		return true;
	}
	if (r->idx - ring_ld(r, VIRTIO_RDMA_RING_TAKEN) >= r->entries || len > r->stride)
		return false;
	slot = ring_slot(r, r->idx);
	memcpy(slot, buf, len);
	memset(slot + len, 0xa5, r->stride - len);
	ring_st(r, VIRTIO_RDMA_RING_PROD, ++r->idx);
	ring_bell(r);
	return true;
}

/* What the device says it took of a WQ ring: never back, never past what
 * was posted (after a lying prod the device's word alone counts). */
static void check_taken(struct f_ring *r)
{
	uint32_t taken;

	if (!r->off || r->lied)
		return;
	taken = ring_ld(r, VIRTIO_RDMA_RING_TAKEN);
	CHECK(taken - r->seen <= r->idx - r->seen);
	r->seen = taken;
}

/* Slots [from, to) given up unread: free again, back to the canary. */
static void cq_skip(struct f_ring *r, uint32_t to)
{
	for (; r->idx != to; r->idx++)
		memset(ring_slot(r, r->idx), CANARY, r->stride);
}

/* A CQ ring after a poll: written never back, never more than entries
 * past what the consumer took (the device held the rest), the next slot
 * still as the consumer left it (a slot is written, then said so), each
 * CQE a known one with the rest of its slot zero; then up to max CQEs
 * consumed, their slots back to the canary, and cons says so. */
static void reap_cq_ring(uint32_t c, unsigned int max)
{
	struct f_ring *r = &cqr[c].r;
	uint32_t written = ring_ld(r, VIRTIO_RDMA_RING_WRITTEN), i;
	unsigned int n = 0;
	uint8_t *b;

	CHECK(written - r->idx <= r->entries && r->seen - r->idx <= written - r->idx);
	if (written - r->idx < r->entries)
		CHECK(untouched(ring_slot(r, written), 0));
	for (i = r->idx; i != written; i++) {
		b = ring_slot(r, i);
		check_cqe(b);
		CHECK(!memcmp(b + sizeof(struct virtio_rdma_cqe), (uint8_t[24]){ 0 }, 24));
	}
	r->seen = written;
	while (n < max && r->idx != written) {
		memset(ring_slot(r, r->idx++), CANARY, r->stride);
		n++;
	}
	if (n)
		ring_st(r, VIRTIO_RDMA_RING_CONS, r->idx);
}

/* The consumer index made L (a lie, maybe): one between what was taken
 * and what was written gives up the slots before it; one behind or past
 * written the device finds out (the CQ goes to error), or never reads. */
static void cq_cons_set(uint32_t c, uint32_t l)
{
	struct f_ring *r = &cqr[c].r;
	uint32_t written = ring_ld(r, VIRTIO_RDMA_RING_WRITTEN);

	if (l - r->idx <= written - r->idx)
		cq_skip(r, l);
	ring_st(r, VIRTIO_RDMA_RING_CONS, l);
}

/* An arm word written: each with a new seq and a flag may be taken once,
 * and fire once (an upper bound: the device may see fewer). */
static void cq_arm_set(uint32_t c, uint32_t word)
{
	struct f_cqr *q = &cqr[c];

	if (VIRTIO_RDMA_RING_ARM_SEQ(word) != VIRTIO_RDMA_RING_ARM_SEQ(q->arm) && (word & 3))
		q->credits++;
	q->arm = word;
	ring_st(&q->r, VIRTIO_RDMA_RING_ARM, word);
	ring_bell(&q->r);
}

/* The event queue: each entry 8 bytes, naming a ring CQ the driver holds,
 * a known kind, a COMPLETION only for an arm it wrote (one each). */
static void reap_events(void)
{
	const unsigned int q = VIRTIO_RDMA_EVENT_VQ;
	struct virtio_rdma_ring_event ev;

	while (used_seen[q] != used_of(q)->idx) {
		const struct vring_used_elem *e = &used_of(q)->ring[used_seen[q] % QN];
		const uint8_t *b = guest + BUF_OFF(q, e->id % QN);

		CHECK(e->id < QN && (cq_out[q] & (1u << e->id)));
		cq_out[q] &= (uint8_t)~(1u << e->id);
		CHECK(e->len == sizeof(ev) && untouched(b, sizeof(ev)));
		memcpy(&ev, b, sizeof(ev));
		if (verbose)
			fprintf(stderr, "  event cq %u kind %u\n", ev.cqn, ev.kind);
		CHECK(ev.cqn < N_RSLOTS && cqr[ev.cqn].r.off &&
		      ev.kind <= VIRTIO_RDMA_RING_EVENT_ASYNC);
		if (ev.kind == VIRTIO_RDMA_RING_EVENT_COMPLETION) {
			CHECK(cqr[ev.cqn].credits);
			cqr[ev.cqn].credits--;
		}
		used_seen[q]++;
		if (!ev_hold)
			post_cq_buf(q, (uint16_t)e->id);
	}
}

/* After a poll on rings: the events, each CQ ring (consumed unless held),
 * each WQ ring's taken. */
static void reap_rings(void)
{
	uint32_t i;

	rang = false;
	reap_events();
	for (i = 0; i < N_RSLOTS; i++) {
		if (cqr[i].r.off)
			reap_cq_ring(i, cqr[i].hold ? 0 : ~0u);
		check_taken(&sqr[i]);
		check_taken(&rqr[i]);
	}
}

/* As vm_server.c drops a connection; then the front end comes back. */
static void reconnect(void)
{
	vu_dev_disconnect(&v.vu);
	v.vu.fd = -1;
	drain();
	connect_device();
	reconnects++;
}

/* The driver reset (RESET_DEVICE) and set up again, as a driver loads. */
static void reload(void)
{
	CHECK(send_msg(VHOST_USER_RESET_DEVICE, NULL, 0, NULL, 0) == 0);
	drain();
	connect_device();
}

static void poll_device(unsigned int rounds)
{
	uint64_t next;

	while (rounds--) {
		vdev_poll(&v, &next);
		if (rings)
			reap_rings();
		else
			reap_cqs();
	}
}

/* ---- ops: each reads its own bytes ---- */

static const uint8_t *gid0(void)
{
	return vmcfg.gids[0].raw;
}

static void op_create_pd(void)
{
	struct virtio_rdma_rsp_create_pd r;

	if (!ctrl(VIRTIO_CMD_CREATE_PD, NULL, 0, &r, sizeof(r)))
		KEEP_ADD(pdns, n_pd, r.pdn);
}

static void op_create_cq(void)
{
	struct virtio_rdma_cmd_create_cq q = { 1u + u8() % 32u };
	struct virtio_rdma_rsp_create_cq r;
	uint16_t i;

	if (rings) {
		create_cq_ring(q.cqe, u8());
		return;
	}
	if (ctrl(VIRTIO_CMD_CREATE_CQ, &q, sizeof(q), &r, sizeof(r)))
		return;
	KEEP_ADD(cqns, n_cq, r.cqn);
	CHECK(r.cqn < vmcfg.max_cq);
	/* What the queue held was not for this CQ: back before the response.
	 * Then the driver gives it every buffer. */
	check_empty(VIRTIO_RDMA_CQ_VQ(r.cqn));
	cq_live[r.cqn] = true;
	reap_cq(r.cqn);
	for (i = 0; i < QN; i++)
		if (!(cq_out[VIRTIO_RDMA_CQ_VQ(r.cqn)] & (1u << i)))
			post_cq_buf(VIRTIO_RDMA_CQ_VQ(r.cqn), i);
}

/* Page list at PAGES_OFF: npages pages from `first`, every `stride`th. */
static uint64_t write_pages(uint32_t first, uint32_t npages, uint32_t stride)
{
	uint32_t i;

	for (i = 0; i < npages; i++) {
		uint64_t pa = GUEST_GPA + DATA_OFF +
			(uint64_t)((first + i * stride) % DATA_PAGES) * VIRTIO_RDMA_PAGE_SIZE;

		memcpy(guest + PAGES_OFF + i * 8u, &pa, 8);
	}
	return GUEST_GPA + PAGES_OFF;
}

/* MAP_MR_SG: npages pages from `first` (more than CREATE_MR's 8 is
 * refused), the range at `off` in the first; a driver then knows the MR
 * by that range. */
static uint8_t map_sg(struct f_mr *m, uint32_t first, uint32_t npages, uint32_t off,
		      uint64_t len)
{
	uint64_t iova = 0x10000000ull + (uint64_t)first * VIRTIO_RDMA_PAGE_SIZE + off;
	struct virtio_rdma_cmd_map_mr_sg q = { m->mrn, npages, iova, len,
					       write_pages(first, npages, 1) };
	struct virtio_rdma_rsp_map_mr_sg r;
	uint8_t st = ctrl(VIRTIO_CMD_MAP_MR_SG, &q, sizeof(q), &r, sizeof(r));

	if (!st) {
		m->iova = iova;
		m->len = len;
	}
	return st;
}

/* GET_DMA_MR, REG_USER_MR (pages in order or scattered), CREATE_MR then
 * MAP_MR_SG. */
static void op_reg_mr(void)
{
	uint8_t kind = u8() % 4, access = u8() & 31;	/* REMOTE_ATOMIC, MW_BIND included */
	uint32_t pdn = pick(pdns, n_pd, u8()), first = u8() % DATA_PAGES;
	uint32_t npages = 1u + u8() % 8u, off = u16() % VIRTIO_RDMA_PAGE_SIZE;
	uint64_t room = (uint64_t)npages * VIRTIO_RDMA_PAGE_SIZE - off;
	uint64_t len = 1u + u32() % room;
	uint32_t stride = kind == 2 ? 3 : 1;
	struct virtio_rdma_rsp_mr r;
	struct f_mr m = { 0 };
	uint8_t st;

	m.len = len;
	if (kind == 0) {
		struct virtio_rdma_cmd_get_dma_mr q = { pdn, access };

		st = ctrl(VIRTIO_CMD_GET_DMA_MR, &q, sizeof(q), &r, sizeof(r));
		m.iova = GUEST_GPA + DATA_OFF + (uint64_t)first * VIRTIO_RDMA_PAGE_SIZE + off;
		m.len = len < (DATA_PAGES - first) * VIRTIO_RDMA_PAGE_SIZE - off ?
			len : (DATA_PAGES - first) * VIRTIO_RDMA_PAGE_SIZE - off;
	} else if (kind < 3) {
		struct virtio_rdma_cmd_reg_user_mr q = {
			.pdn = pdn, .access_flags = access, .length = len, .npages = npages,
		};

		m.iova = 0x7f0000000000ull + (uint64_t)first * VIRTIO_RDMA_PAGE_SIZE + off;
		q.start = q.virt_addr = m.iova;
		q.pages = write_pages(first, npages, stride);
		st = ctrl(VIRTIO_CMD_REG_USER_MR, &q, sizeof(q), &r, sizeof(r));
	} else {
		struct virtio_rdma_cmd_create_mr q = { pdn, access, 8 };

		st = ctrl(VIRTIO_CMD_CREATE_MR, &q, sizeof(q), &r, sizeof(r));
		if (st)
			return;
		m.mrn = r.mrn;
		m.iova = 0x10000000ull;	/* kept as named even if the map fails */
		map_sg(&m, first, npages, off, len);
	}
	if (st)
		return;
	m.mrn = r.mrn;
	m.key = m.old_key = r.rkey;
	m.fast = kind == 3;
	KEEP_ADD(mrs, n_mr, m);
}

static void op_dereg_mr(void)
{
	struct virtio_rdma_cmd_dereg_mr q = { pick_mr(u8())->mrn };

	ctrl(VIRTIO_CMD_DEREG_MR, &q, sizeof(q), NULL, 0);
}

/* The QP and SRQ slots the device has. */
static uint32_t n_slots(void)
{
	return rings ? N_RSLOTS : vmcfg.max_qp;
}

/* CREATE_QP (on rings CREATE_QP_RING); a new QP is kept, its slot's queues
 * must be empty. */
static void create_qp(const struct virtio_rdma_cmd_create_qp *q)
{
	struct virtio_rdma_rsp_create_qp r;
	uint32_t k;

	if (rings ? create_wq_rings(q, NULL, &r, sizeof(r), &k) :
	    ctrl(VIRTIO_CMD_CREATE_QP, q, sizeof(*q), &r, sizeof(r)))
		return;
	KEEP_ADD(qpns, n_qp, r.qpn);
	CHECK(r.qp_index < n_slots());
	slot_qpn[r.qp_index] = r.qpn;
	check_empty_qp_slot(r.qp_index);
}

static void op_create_qp(void)
{
	struct virtio_rdma_cmd_create_qp q = { 0 };
	uint8_t b = u8() % 4;

	/* RC, UC, UD, and QP1 (at most one: a second is BUSY) */
	q.qp_type = b == 3 ? VIRTIO_IB_QPT_GSI : (uint8_t)(VIRTIO_IB_QPT_RC + b);
	q.pdn = pick(pdns, n_pd, u8());
	q.send_cqn = pick(cqns, n_cq, u8());
	q.recv_cqn = pick(cqns, n_cq, u8());
	b = u8();
	q.sq_sig_type = b & 1;
	q.max_send_wr = 1u + (b >> 1) % 8u;
	q.max_recv_wr = 1u + (b >> 4) % 8u;
	q.max_send_sge = q.max_recv_sge = 2;
	q.max_inline_data = b & 0x80 ? 64 : 0;
	create_qp(&q);
}

static uint8_t modify(uint32_t qpn, uint32_t mask, const struct virtio_rdma_qp_attr *a)
{
	struct virtio_rdma_cmd_modify_qp q = { .qpn = qpn, .attr_mask = mask, .attrs = *a };

	return ctrl(VIRTIO_CMD_MODIFY_QP, &q, sizeof(q), NULL, 0);
}

static uint8_t qp_type_of(uint32_t qpn)
{
	struct eng_qp *eq = eng_qp_of(qpn);

	return eq ? (uint8_t)eq->init.qp_type : 0;
}

static bool datagram(uint8_t type)
{
	return type == VIRTIO_IB_QPT_UD || type == VIRTIO_IB_QPT_GSI;
}

/* RESET -> INIT -> RTR -> RTS, towards dest (RC/UC) over our own GID. */
static void bring_up(uint32_t qpn, uint32_t dest, uint32_t rq_psn, uint32_t sq_psn,
		     const uint8_t p[4])
{
	uint8_t type = qp_type_of(qpn);
	struct virtio_rdma_qp_attr a;
	uint32_t m;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = 15;
	a.qkey = 0x11111111;
	m = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT;
	m |= datagram(type) ? VIRTIO_IB_QP_QKEY : VIRTIO_IB_QP_ACCESS_FLAGS;
	if (type == VIRTIO_IB_QPT_GSI) {	/* as the MAD layer: no port */
		m &= ~VIRTIO_IB_QP_PORT;
		a.qkey = VIRTIO_RDMA_GSI_QKEY;
	}
	if (modify(qpn, m, &a))
		return;
	a.qp_state = VIRTIO_IB_QPS_RTR;
	m = VIRTIO_IB_QP_STATE;
	if (!datagram(type)) {
		memcpy(a.ah_attr.grh.dgid, gid0(), 16);
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.ah_flags = VIRTIO_IB_AH_GRH;
		a.ah_attr.port_num = 1;
		memcpy(a.ah_attr.dmac, port.mac, 6);
		a.path_mtu = (uint8_t)(VIRTIO_IB_MTU_256 + p[0] % 3);
		a.dest_qp_num = dest;
		a.rq_psn = rq_psn & ROCE_PSN_MASK;
		a.max_dest_rd_atomic = (uint8_t)(p[1] % 5);
		a.min_rnr_timer = p[1] >> 3;
		m |= VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU | VIRTIO_IB_QP_DEST_QPN |
		     VIRTIO_IB_QP_RQ_PSN;
		if (type == VIRTIO_IB_QPT_RC)
			m |= VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC | VIRTIO_IB_QP_MIN_RNR_TIMER;
	}
	if (modify(qpn, m, &a))
		return;
	a.qp_state = VIRTIO_IB_QPS_RTS;
	a.sq_psn = sq_psn & ROCE_PSN_MASK;
	a.timeout = p[2] % 20;
	a.retry_cnt = p[3] & 7;
	a.rnr_retry = (p[3] >> 3) & 7;
	a.max_rd_atomic = (uint8_t)(p[1] % 5);
	m = VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN;
	if (type == VIRTIO_IB_QPT_RC)
		m |= VIRTIO_IB_QP_TIMEOUT | VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY |
		     VIRTIO_IB_QP_MAX_QP_RD_ATOMIC;
	modify(qpn, m, &a);
}

/* Two kept QPs (or one, to itself) connected both ways. */
static void op_connect(void)
{
	uint32_t a = pick(qpns, n_qp, u8()), b = pick(qpns, n_qp, u8());
	uint32_t pa = u32(), pb = u32();
	uint8_t p[4], i;

	for (i = 0; i < 4; i++)
		p[i] = u8();

	bring_up(a, b, pb, pa, p);
	if (a != b)
		bring_up(b, a, pa, pb, p);
}

static void op_modify_state(void)
{
	struct virtio_rdma_qp_attr a;
	uint32_t qpn = pick(qpns, n_qp, u8());

	memset(&a, 0, sizeof(a));
	a.qp_state = u8() % 7;
	a.en_sqd_async_notify = 1;
	modify(qpn, VIRTIO_IB_QP_STATE | (a.qp_state == VIRTIO_IB_QPS_SQD ?
					  VIRTIO_IB_QP_EN_SQD_ASYNC_NOTIFY : 0), &a);
}

static void op_destroy(void)
{
	uint8_t what = u8() % 3, b = u8();
	uint32_t h;

	if (what == 0) {
		int k;

		h = pick(qpns, n_qp, b);
		k = qp_slot(h);
		if (!ctrl(VIRTIO_CMD_DESTROY_QP, &h, sizeof(h), NULL, 0)) {
			CHECK(k >= 0);
			slot_qpn[k] = 0;
			check_empty_qp_slot((uint32_t)k);
			release_wq_rings((uint32_t)k);
		}
	} else if (what == 1) {
		h = pick(cqns, n_cq, b);
		if (!ctrl(VIRTIO_CMD_DESTROY_CQ, &h, sizeof(h), NULL, 0)) {
			CHECK(h < (rings ? N_RSLOTS : vmcfg.max_cq));
			if (rings) {
				CHECK(cqr[h].r.off);
				release_cq_ring(h);
			} else {
				cq_live[h] = false;
				check_empty(VIRTIO_RDMA_CQ_VQ(h));
			}
		}
	} else {
		h = pick(pdns, n_pd, b);
		ctrl(VIRTIO_CMD_DESTROY_PD, &h, sizeof(h), NULL, 0);
	}
}

/* An SGE inside a kept MR (or a little past it). */
static void sge_in(struct virtio_rdma_sge *s, uint8_t which, uint32_t off, uint32_t len)
{
	const struct f_mr *m = pick_mr(which);

	off %= (uint32_t)(m->len < 65536 ? m->len + 1 : 65537);
	s->addr = m->iova + off;
	s->length = len % 16384u;
	s->lkey = m->key;
}

/* The slot a WQE for qpn goes to: its QP's, or for a stale QPN one the
 * QPN picks (a driver racing its DESTROY posts to a slot without a QP). */
static uint32_t wq_slot(uint32_t qpn)
{
	int k = qp_slot(qpn);

	return k >= 0 ? (uint32_t)k : qpn % n_slots();
}

/* A WQE posted to slot k: a slot without a QP that held one gives it
 * back at the next poll. */
static void posted(uint32_t k)
{
	poll_device(1);
	if (rings)	/* reap_rings checked it */
		return;
	if (v.eng && eng_table_get(&v.eng->qps, k) == ENG_SRQ_SLOT)	/* an SRQ's slot */
		check_empty(VIRTIO_RDMA_SQ_VQ(vmcfg.max_cq, k));
	else if (!slot_qpn[k] && k < v.qp_hi)
		check_empty_qp_slot(k);
}

static void op_post_send(void)
{
	uint8_t buf[sizeof(struct virtio_rdma_cmd_post_send) + 2 * 16 + 64];
	struct virtio_rdma_cmd_post_send *w = (void *)buf;
	uint32_t qpn = pick(qpns, n_qp, u8());
	uint32_t k = wq_slot(qpn);
	uint8_t b = u8(), nsge = u8() % 3, i;
	const struct f_mr *rm = pick_mr(u8());
	uint32_t roff = u16(), len = sizeof(*w) + nsge * 16u;
	bool atomic;

	memset(buf, 0, sizeof(buf));
	w->opcode = b % 7;	/* up to ATOMIC_FETCH_AND_ADD */
	atomic = w->opcode >= VIRTIO_IB_WR_ATOMIC_CMP_AND_SWP;
	w->send_flags = (b >> 3) & 0xf;
	w->num_sge = nsge;
	w->wr_id = u8();
	w->ex.imm_data = 0x01020304;
	if (datagram(qp_type_of(qpn))) {
		w->wr.ud.remote_qpn = pick(qpns, n_qp, u8());
		/* QP1's Q_Key (QP1 itself sends it whatever this says) */
		w->wr.ud.remote_qkey = w->wr.ud.remote_qpn == VIRTIO_RDMA_GSI_QPN && (b & 0x80) ?
				       VIRTIO_RDMA_GSI_QKEY : 0x11111111;
		w->wr.ud.av.port = 1;
		memcpy(w->wr.ud.av.dgid, gid0(), 16);
		w->wr.ud.av.hop_limit = 64;
		memcpy(w->wr.ud.av.dmac, port.mac, 6);
	} else if (atomic) {
		/* 8-byte aligned unless bit 7 says otherwise */
		w->wr.atomic.remote_addr = (rm->iova + roff % (rm->len + 1)) & ~(b & 0x80 ? 0ull : 7ull);
		w->wr.atomic.rkey = rm->key;
		w->wr.atomic.compare_add = roff & 3;
		w->wr.atomic.swap = roff >> 2;
	} else {
		w->wr.rdma.remote_addr = rm->iova + roff % (rm->len + 1);
		w->wr.rdma.rkey = rm->key;
	}
	for (i = 0; i < nsge; i++) {
		struct virtio_rdma_sge s;
		uint8_t which = u8();
		uint32_t off = u16(), l = u16();

		sge_in(&s, which, off, l);
		if (w->send_flags & VIRTIO_IB_SEND_INLINE)
			s.length %= 33;
		else if (atomic && !(which & 0x80))	/* mostly the 8 bytes it takes */
			s.length = i ? 0 : 8;
		memcpy(buf + sizeof(*w) + i * 16u, &s, 16);
		if (w->send_flags & VIRTIO_IB_SEND_INLINE) {
			memset(buf + len, 0x5a, s.length);
			len += s.length;
		}
	}
	if (post_wq(k, false, buf, len))
		posted(k);
}

static void op_post_recv(void)
{
	uint8_t buf[sizeof(struct virtio_rdma_cmd_post_recv) + 2 * 16];
	struct virtio_rdma_cmd_post_recv *w = (void *)buf;
	uint32_t k = wq_slot(pick(qpns, n_qp, u8()));
	uint8_t nsge = u8() % 3, i;

	memset(buf, 0, sizeof(buf));
	w->num_sge = nsge;
	w->wr_id = 0x100u + u8();
	for (i = 0; i < nsge; i++) {
		struct virtio_rdma_sge s;
		uint8_t which = u8();
		uint32_t off = u16(), l = u16();

		sge_in(&s, which, off, l);
		memcpy(buf + sizeof(*w) + i * 16u, &s, 16);
	}
	if (post_wq(k, true, buf, sizeof(*w) + nsge * 16u))
		posted(k);
}

/* Time passes (up to 12.7 s: retransmit and RNR timers fire). */
static void op_poll(void)
{
	uint8_t rounds = 1u + u8() % 8u, adv = u8();

	clock_ns += adv & 0x80 ? (adv & 0x7fu) * 100000000ull : adv * 10000ull;
	poll_device(rounds);
}

/* The key a WRITE or atomic request reaches memory through (a WRITE's
 * later packets through the one its first named), or 0 for none. */
static uint32_t write_key(const struct roce_pkt *pkt)
{
	const struct eng_qp *eq = eng_qp_of(pkt->h.dqpn);
	uint32_t mask = pkt->op->mask;

	if (!v.eng || !(mask & ROCE_F_REQ) || !(mask & (ROCE_F_WRITE | ROCE_F_ATOMIC)))
		return 0;
	if (mask & ROCE_F_RETH)
		return pkt->h.reth.rkey;
	if (mask & ROCE_F_ATMETH)
		return pkt->h.atomic.rkey;
	return eq ? eq->resp.wrkey : 0;
}

static uint8_t may_change[DATA_PAGES * VIRTIO_RDMA_PAGE_SIZE];

/* Mark what a bound window covers in the DATA area: its range through its
 * MR's guest pages (the device's own mapping of them is not ours). */
static void allow_window(const struct eng_mw *mw)
{
	const struct eng_mr *mr = mw->mr;
	const struct vdev_mr *vm = mr->mem;
	uint64_t off = mw->k.iova - mr->iova, left = mw->k.length, gpa, x, n;

	while (left) {
		if (vm->dma) {
			gpa = off;
		} else {
			x = vm->first_off + off;
			if (x / VIRTIO_RDMA_PAGE_SIZE >= vm->npages)
				return;
			gpa = vm->pages[x / VIRTIO_RDMA_PAGE_SIZE] + x % VIRTIO_RDMA_PAGE_SIZE;
		}
		n = VIRTIO_RDMA_PAGE_SIZE - gpa % VIRTIO_RDMA_PAGE_SIZE;
		if (n > left)
			n = left;
		for (x = 0; x < n; x++)
			if (gpa + x >= GUEST_GPA + DATA_OFF &&
			    gpa + x < GUEST_GPA + DATA_OFF + sizeof(may_change))
				may_change[gpa + x - GUEST_GPA - DATA_OFF] = 1;
		off += n;
		left -= n;
	}
}

/* Whether a request's bytes are guarded, and which may change (may_change):
 * none through a FREE fast-reg MR (IBA 10.6.3.6), a FREE window or one bound
 * to another QP (type 2B, IBA 10.6.7); only the window's through a bound
 * one (docs/virtio-rdma.md section 5). */
static bool guarded(const struct roce_pkt *pkt)
{
	uint32_t key = write_key(pkt);
	const struct eng_mr *k = key ? eng_idmap_get(&v.eng->mr_keys, key >> 8) : NULL;
	const struct eng_mw *mw;

	if (!k || k->key != key)
		return false;
	memset(may_change, 0, sizeof(may_change));
	if (!k->window)
		return k->fast && !k->valid;
	mw = (const struct eng_mw *)k;
	if (k->valid && mw->qp == eng_qp_of(pkt->h.dqpn))
		allow_window(mw);
	return true;
}

/* A request through a guarded key changes no byte it may not. */
static void rx_frame(uint8_t *buf, uint32_t len)
{
	static uint8_t before[DATA_PAGES * VIRTIO_RDMA_PAGE_SIZE];
	struct roce_frag f = { buf, len };
	enum roce_drop why;
	struct roce_pkt pkt;
	bool guard;

	if (roce_parse(&pkt, &f, 1, &why))
		return;
	guard = guarded(&pkt);
	if (guard)
		memcpy(before, guest + DATA_OFF, sizeof(before));
	vdev_rx(&v, &pkt);
	if (!guard)
		return;
	for (size_t i = 0; i < sizeof(before); i++)
		CHECK(may_change[i] || before[i] == guest[DATA_OFF + i]);
}

/* Rebuild a frame with its PSN moved (a valid frame the sender never sent). */
static uint32_t move_psn(uint8_t *buf, uint32_t len, int8_t by)
{
	static uint8_t out[BUF_SIZE];
	struct roce_frag f = { buf, len }, o = { out, sizeof(out) }, pl;
	struct roce_pkt pkt;
	enum roce_drop why;
	unsigned int nused;
	int n;

	if (roce_parse(&pkt, &f, 1, &why))
		return 0;
	pkt.h.psn = (pkt.h.psn + (uint32_t)by) & ROCE_PSN_MASK;
	pl = (struct roce_frag){ buf + pkt.payload_off, pkt.payload_len };
	n = roce_build(&o, 1, &nused, &pkt.addr, &pkt.h, &pl, pkt.payload_len ? 1 : 0);
	if (n <= 0)
		return 0;
	memcpy(buf, out, (size_t)n);
	return (uint32_t)n;
}

/* The device's own frames back to it: passed, dropped, twice, or moved. */
static void op_deliver(void)
{
	static uint8_t frame[BUF_SIZE];
	uint8_t n = 1u + u8() % 16u;
	uint16_t mode = u16();
	unsigned int i;

	for (i = 0; i < n && tx_head != tx_tail; i++) {
		uint32_t len = tx_len[tx_head % TX_FRAMES];
		unsigned int how = (mode >> (2 * (i % 8))) & 3;

		memcpy(frame, tx_buf[tx_head % TX_FRAMES], len);
		tx_head++;
		if (how == 1)
			continue;
		if (how == 3 && !(len = move_psn(frame, len, (int8_t)(i & 1 ? 1 : -1))))
			continue;
		rx_frame(frame, len);
		if (how == 2)
			rx_frame(frame, len);
	}
}

static const uint8_t frame_ops[] = {
	ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST, ROCE_RC_SEND_LAST_IMM,
	ROCE_RC_SEND_ONLY, ROCE_RC_SEND_ONLY_IMM, ROCE_RC_WRITE_FIRST, ROCE_RC_WRITE_MIDDLE,
	ROCE_RC_WRITE_LAST, ROCE_RC_WRITE_LAST_IMM, ROCE_RC_WRITE_ONLY, ROCE_RC_WRITE_ONLY_IMM,
	ROCE_RC_READ_REQUEST, ROCE_RC_READ_RESPONSE_FIRST, ROCE_RC_READ_RESPONSE_MIDDLE,
	ROCE_RC_READ_RESPONSE_LAST, ROCE_RC_READ_RESPONSE_ONLY, ROCE_RC_ACK,
	ROCE_RC_ATOMIC_ACK, ROCE_RC_COMPARE_SWAP, ROCE_RC_FETCH_ADD,
	ROCE_UC_SEND_FIRST, ROCE_UC_SEND_ONLY, ROCE_UC_WRITE_FIRST, ROCE_UC_WRITE_ONLY,
	ROCE_UD_SEND_ONLY, ROCE_UD_SEND_ONLY_IMM, ROCE_RC_SEND_LAST_INV, ROCE_RC_SEND_ONLY_INV,
};

/* A frame from the wire, for a kept QP, at or near the PSN it expects. */
static void op_frame(void)
{
	static uint8_t out[BUF_SIZE], payload[1024];
	uint32_t qpn = pick(qpns, n_qp, u8());
	const struct eng_qp *eq = eng_qp_of(qpn);
	uint8_t opb = u8(), flags = u8();
	int8_t delta = (int8_t)u8();
	const struct f_mr *m = pick_mr(u8());
	uint32_t off = u16(), rlen = u16(), plen = u16() % 1025u;
	struct roce_addr a = { .vlan = -1, .hop_limit = 64, .sport = 0xc000 };
	struct roce_hdrs h = { .pkey = ENG_PKEY_DEFAULT, .dqpn = qpn };
	struct roce_frag o = { out, sizeof(out) }, pl = { payload, plen };
	unsigned int nused;
	int n;

	h.opcode = frame_ops[opb % sizeof(frame_ops)];
	if (eq) {
		h.psn = ((roce_opcode(h.opcode)->mask & ROCE_F_RESP) ? eq->comp.psn :
			 eq->resp.psn) + (uint32_t)delta;
		h.psn &= ROCE_PSN_MASK;
	}
	h.ackreq = flags & 1;
	h.se = flags & 2;
	h.reth.va = m->iova + off;
	h.reth.rkey = flags & 4 ? m->key ^ 0x100 : m->key;
	h.reth.len = rlen;
	h.ieth_rkey = flags & 0x40 ? m->old_key : h.reth.rkey;	/* stale, or as a WRITE's */
	/* 8-byte aligned unless off's top bit says otherwise */
	h.atomic.va = (m->iova + off) & ~(off & 0x8000 ? 0ull : 7ull);
	h.atomic.rkey = h.reth.rkey;
	h.atomic.swap_add = rlen;
	h.atomic.compare = (uint64_t)delta & 3;
	h.atomic_orig = off;
	h.aeth.syndrome = flags & 8 ? (uint8_t)(0x60 | (flags >> 4)) : AETH_ACK;
	h.aeth.msn = (uint32_t)delta & ROCE_MSN_MASK;
	h.deth.qkey = 0x11111111;
	if (eq && eq->init.qp_type == ENG_QPT_GSI && !(flags & 4))	/* a MAD */
		h.deth.qkey = ENG_GSI_QKEY;
	if ((flags & 0x30) == 0x30)	/* a limited member's P_Key, or another */
		h.pkey = delta & 1 ? 0x7fff : 0x1234;
	h.deth.sqpn = pick(qpns, n_qp, opb);
	memcpy(a.dmac, port.mac, 6);
	memcpy(a.smac, port.mac, 6);
	a.smac[5] ^= 1;
	memcpy(a.dgid, gid0(), 16);
	memcpy(a.sgid, gid0(), 16);
	if (flags & 0x80)
		a.sgid[15] ^= 1;	/* another sender */
	memset(payload, 0xc3, plen);
	n = roce_build(&o, 1, &nused, &a, &h, &pl,
		       (roce_opcode(h.opcode)->mask & ROCE_F_PAYLOAD) && plen ? 1 : 0);
	if (n > 0)
		rx_frame(out, (uint32_t)n);
}

/* REQ_NOTIFY_CQ; on rings the arm word with the next seq (from 1) and the
 * CQ's bit (the command there: UNSUPP for a ring CQ). */
static void op_notify(void)
{
	struct virtio_rdma_cmd_req_notify q;
	uint32_t seq;

	q.cqn = pick(cqns, n_cq, u8());
	q.flags = 1u + u8() % 2u;
	if (!rings || q.cqn >= N_RSLOTS || !cqr[q.cqn].r.off) {
		ctrl(VIRTIO_CMD_REQ_NOTIFY_CQ, &q, sizeof(q), NULL, 0);
		return;
	}
	seq = (VIRTIO_RDMA_RING_ARM_SEQ(cqr[q.cqn].arm) + 1) & 0x1fffffff;
	cq_arm_set(q.cqn, (seq ? seq : 1) << 2 | q.flags);
}

/* The front end's side: a disconnect, RESET_DEVICE, a new memory table
 * (the same memory, a new mapping), or a queue disabled and enabled. */
static void op_vhost(void)
{
	uint8_t what = u8() % 4, q = u8() % N_VQS;
	struct vhost_vring_state st = { q, 0 };

	broke_ok = true;
	switch (what) {
	case 0:
		if (reconnects < MAX_RECONNECTS)
			reconnect();
		break;
	case 1:
		if (reconnects < MAX_RECONNECTS) {
			/* the device forgets its resources and rings (owner,
			 * features and memory stay); set up again */
			reload();
			reconnects++;
		}
		break;
	case 2:
		/* on rings sometimes less: the doorbell pages and rings past
		 * it are gone (errors on their queues), until a table has
		 * them again */
		mem_size = rings && q % 2 ? (uint64_t[]){ CQR_OFF, DB_OFF, DATA_OFF }[q / 2 % 3] :
			   GUEST_SIZE;
		CHECK(set_mem_table_size(mem_size));
		break;
	default:
		CHECK(send_msg(VHOST_USER_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0) == 0);
		poll_device(1);
		st.num = 1;
		CHECK(send_msg(VHOST_USER_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0) == 0);
		break;
	}
	drain();
}

/* The slot of a kept SRQ, or -1. */
static int srq_slot(uint32_t srqn)
{
	struct eng_srq *s = v.eng ? eng_srq_get(v.eng, srqn) : NULL;

	return s ? (int)eng_srq_slot(s) : -1;
}

/* SRQs (docs/virtio-rdma.md sections 4, 5): create one in a slot, a QP on
 * one, modify / query / destroy, a receive WQE on an SRQ's slot. */
static void op_srq(void)
{
	uint8_t what = u8() % 6, b = u8(), c = u8();
	uint32_t h = pick(srqns, n_srq, b);
	int k;

	if (what == 0) {
		struct virtio_rdma_cmd_create_srq q = { pick(pdns, n_pd, b), 1u + c % 8u, 2,
							(c >> 3) % 10u };
		struct virtio_rdma_rsp_create_srq r;
		uint32_t k2;

		if (rings ? create_wq_rings(NULL, &q, &r, sizeof(r), &k2) :
		    ctrl(VIRTIO_CMD_CREATE_SRQ, &q, sizeof(q), &r, sizeof(r)))
			return;
		KEEP_ADD(srqns, n_srq, r.srqn);
		CHECK(r.srq_index < n_slots() && !slot_qpn[r.srq_index]);
		check_empty_qp_slot(r.srq_index);
	} else if (what == 1) {
		struct virtio_rdma_cmd_create_qp q = {
			.pdn = pick(pdns, n_pd, c), .qp_type = VIRTIO_IB_QPT_RC + c % 3,
			.send_cqn = pick(cqns, n_cq, c >> 2), .recv_cqn = pick(cqns, n_cq, c >> 4),
			.max_send_wr = 4, .max_send_sge = 2, .flags = VIRTIO_RDMA_CREATE_QP_SRQ,
			.srqn = h,
		};
		create_qp(&q);
	} else if (what == 2) {
		/* a resize to 0..19 (over or under what it holds), a limit */
		struct virtio_rdma_cmd_modify_srq q = { h, c % 4u, u8() % 20u, c >> 2 };
		struct eng_srq *s = v.eng ? eng_srq_get(v.eng, h) : NULL;
		uint32_t held = s ? eng_srq_count(s) : 0;
		struct virtio_rdma_rsp_query_srq r;

		if (ctrl(VIRTIO_CMD_MODIFY_SRQ, &q, sizeof(q), NULL, 0) || !(q.attr_mask & 1))
			return;
		/* IBA 11.2.3.3: not below what it held (it may have taken more
		 * from its ring since, within the new size), and says its size */
		CHECK(q.max_wr >= held && eng_srq_count(s) >= held && eng_srq_count(s) <= q.max_wr);
		CHECK(!ctrl(VIRTIO_CMD_QUERY_SRQ, &h, sizeof(h), &r, sizeof(r)) && r.max_wr == q.max_wr);
	} else if (what == 3) {
		struct virtio_rdma_rsp_query_srq r;

		ctrl(VIRTIO_CMD_QUERY_SRQ, &h, sizeof(h), &r, sizeof(r));
	} else if (what == 4) {
		k = srq_slot(h);
		if (!ctrl(VIRTIO_CMD_DESTROY_SRQ, &h, sizeof(h), NULL, 0)) {
			CHECK(k >= 0);
			check_empty_qp_slot((uint32_t)k);
			release_wq_rings((uint32_t)k);
		}
	} else {
		uint8_t buf[sizeof(struct virtio_rdma_cmd_post_recv) + 3 * 16];
		struct virtio_rdma_cmd_post_recv *w = (void *)buf;
		uint8_t nsge = c % 4, i;	/* 3: more than the SRQ's max_sge */

		k = srq_slot(h);
		if (k < 0)
			return;
		memset(buf, 0, sizeof(buf));
		w->num_sge = nsge;
		w->wr_id = 0x200u + b;
		for (i = 0; i < nsge; i++) {
			struct virtio_rdma_sge s;

			sge_in(&s, u8(), u16(), u16());
			memcpy(buf + sizeof(*w) + i * 16u, &s, 16);
		}
		if (post_wq((uint32_t)k, true, buf, sizeof(*w) + nsge * 16u))
			posted((uint32_t)k);
	}
}

/* A key to invalidate: the MR's current one, its stale one, or any. */
static uint32_t inv_key(const struct f_mr *m, uint8_t sel)
{
	return sel % 4 < 2 ? m->key : sel % 4 == 2 ? m->old_key : u32();
}

/* Fast registration (docs/virtio-rdma.md section 5): a REG_MR WQE for a
 * kept MR (its key's low 8 bits new, the upper sometimes wrong; access
 * flags sometimes invalid), LOCAL_INV and SEND_WITH_INV of a current,
 * stale or random key, MAP_MR_SG on a FREE or VALID MR. */
static void op_fast(void)
{
	static struct f_mr none = { 0x7f, 0x7f00, 0x7f00, false, 0, 4096, false };
	uint8_t buf[sizeof(struct virtio_rdma_cmd_post_send) + 16];
	struct virtio_rdma_cmd_post_send *w = (void *)buf;
	uint8_t what = u8() % 4, b = u8(), c = u8();
	uint32_t qpn = pick(qpns, n_qp, u8()), k = wq_slot(qpn), len = sizeof(*w);
	unsigned int have = n_mr < KEEP ? n_mr : KEEP, i;
	struct f_mr *m = have ? &mrs[b % have] : &none;

	/* mostly a CREATE_MR MR, if one is kept; else any (refused) */
	for (i = 0; !(b & 0x80) && i < have && !m->fast; i++)
		m = &mrs[(b + i + 1) % have];

	if (what == 3) {
		uint32_t first = u8() % DATA_PAGES, npages = 1u + u8() % 9u;
		uint32_t off = u16() % VIRTIO_RDMA_PAGE_SIZE;

		map_sg(m, first, npages, off,
		       1u + u32() % ((uint64_t)npages * VIRTIO_RDMA_PAGE_SIZE - off));
		return;
	}
	memset(buf, 0, sizeof(buf));
	w->send_flags = VIRTIO_IB_SEND_SIGNALED | (c & 0x80 ? VIRTIO_IB_SEND_FENCE : 0);
	if (what == 0) {
		uint32_t key = (m->key & ~0xffu) | u8();

		if (c & 1)
			key ^= (uint32_t)(1u + u8()) << 8;
		w->opcode = VIRTIO_IB_WR_REG_MR;
		w->wr_id = WR_REG_MR << 8 | b;
		w->wr.reg.mrn = m->mrn;
		w->wr.reg.key = key;
		w->wr.reg.access = (c >> 1) & 0x3f;	/* 32: not an access flag */
		if (!(c & 1)) {		/* ib_update_fast_reg_key: the driver's new key */
			m->old_key = m->key;
			m->key = key;
		}
	} else if (what == 1) {
		w->opcode = VIRTIO_IB_WR_LOCAL_INV;
		w->wr_id = WR_LOCAL_INV << 8 | b;
		w->ex.invalidate_rkey = inv_key(m, c);
	} else {
		struct virtio_rdma_sge sge;

		w->opcode = VIRTIO_IB_WR_SEND_WITH_INV;
		w->wr_id = WR_SEND_INV << 8 | b;
		w->ex.invalidate_rkey = inv_key(m, c);
		w->num_sge = 1;
		sge_in(&sge, u8(), u16(), u16());
		memcpy(buf + len, &sge, sizeof(sge));
		len += sizeof(sge);
	}
	if (post_wq(k, false, buf, len))
		posted(k);
}

/* A kept window (or MR) by b: mostly a window, if one is kept. */
static struct f_mr *pick_kind(uint8_t b, bool window)
{
	static struct f_mr none = { 0x7f, 0x7f00, 0x7f00, false, 0, 4096, false };
	unsigned int have = n_mr < KEEP ? n_mr : KEEP, i;
	struct f_mr *m = have ? &mrs[b % have] : &none;

	for (i = 0; !(b & 0x80) && i < have && m->mw != window; i++)
		m = &mrs[(b + i + 1) % have];
	return m;
}

/* Memory windows (docs/virtio-rdma.md sections 4, 5): ALLOC_MW (type 2,
 * sometimes 1 or another), DEALLOC_MW, a BIND_MW WQE of a kept window over
 * part of a kept MR (its key moved on, sometimes the upper bits wrong or a
 * stale window key; the range mostly inside the MR; any rights). A window
 * is kept with the MRs, so WQEs and frames use its key as they use an
 * MR's, and op_fast invalidates it (LOCAL_INV, SEND_WITH_INV). */
static void op_mw(void)
{
	uint8_t what = u8() % 3, b = u8(), c = u8();
	struct f_mr *w = pick_kind(b, true);

	if (what == 0) {
		struct virtio_rdma_cmd_alloc_mw q = { pick(pdns, n_pd, b),
						      c & 0x80 ? c % 4u : VIRTIO_IB_MW_TYPE_2 };
		struct virtio_rdma_rsp_alloc_mw r;

		if (!ctrl(VIRTIO_CMD_ALLOC_MW, &q, sizeof(q), &r, sizeof(r)))
			KEEP_ADD(mrs, n_mr, ((struct f_mr){ r.mwn, r.rkey, r.rkey, false, 0, 4096,
							    true }));
	} else if (what == 1) {
		struct virtio_rdma_cmd_dealloc_mw q = { w->mrn };

		ctrl(VIRTIO_CMD_DEALLOC_MW, &q, sizeof(q), NULL, 0);
	} else {
		struct virtio_rdma_cmd_post_send wqe = {
			.send_flags = VIRTIO_IB_SEND_SIGNALED, .opcode = VIRTIO_IB_WR_BIND_MW,
			.wr_id = WR_BIND_MW << 8 | b,
		};
		const struct f_mr *m = pick_kind(u8(), false);
		uint32_t k = wq_slot(pick(qpns, n_qp, u8())), off = u16(), len = u16();
		uint32_t key = (w->key & ~0xffu) | u8();

		if (c & 1)
			key ^= (uint32_t)(1u + u8()) << 8;
		wqe.wr.bind_mw.addr = m->iova + off % (m->len + 1);
		wqe.wr.bind_mw.length = c & 2 ? len : 1u + len % (m->len - off % (m->len + 1) + 1);
		wqe.wr.bind_mw.mw_rkey = c & 4 ? w->old_key : w->key;
		wqe.wr.bind_mw.rkey = key;
		wqe.wr.bind_mw.mr_lkey = m->key;
		wqe.wr.bind_mw.access = c & 8 ? (c >> 2) & 0x3f : VIRTIO_IB_ACCESS_REMOTE_WRITE |
			VIRTIO_IB_ACCESS_REMOTE_ATOMIC | VIRTIO_IB_ACCESS_REMOTE_READ;
		if (!(c & 5)) {		/* ibv_inc_rkey: the driver's new key and range */
			w->old_key = w->key;
			w->key = key;
			w->iova = wqe.wr.bind_mw.addr;
			w->len = wqe.wr.bind_mw.length;
		}
		if (post_wq(k, false, &wqe, sizeof(wqe)))
			posted(k);
	}
}

/* A restart that keeps the device (docs/restart.md): its state saved with
 * copies of its fds, the device freed as a stopping vrdmad frees it, and a
 * fresh one restored from them at the same place. An intact state must
 * restore, and save again to the same bytes; with a byte changed (the CRC
 * made right) the restore may refuse or not, and the front end then
 * reconnects (what such a state runs is checked by the sanitizers only). */
static struct {
	enum vdev_fd_kind kind;
	unsigned int index;
	int fd;
} kept[4 * N_VQS + 8];
static unsigned int n_kept;

static int keep_fd(void *ctx, enum vdev_fd_kind kind, unsigned int index, int fd)
{
	(void)ctx;
	CHECK(n_kept < sizeof(kept) / sizeof(kept[0]));
	kept[n_kept].kind = kind;
	kept[n_kept].index = index;
	kept[n_kept++].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return 0;
}

static int take_fd(void *ctx, enum vdev_fd_kind kind, unsigned int index)
{
	unsigned int i;
	int fd;

	(void)ctx;
	for (i = 0; i < n_kept; i++)
		if (kept[i].fd >= 0 && kept[i].kind == kind && kept[i].index == index) {
			fd = kept[i].fd;
			kept[i].fd = -1;
			return fd;
		}
	return -ENOENT;
}

static void drop_kept(void)
{
	while (n_kept--)
		if (kept[n_kept].fd >= 0)
			close(kept[n_kept].fd);
	n_kept = 0;
}

static void op_restart(void)
{
	static const struct vdev_state_info info = { "fuzz_state", 1 };
	struct sbuf b = { 0 }, again = { 0 };
	struct vdev_state_info got;
	uint16_t at = u16();
	uint8_t x = u8();
	char why[256];
	uint32_t crc;
	int err;

	if (reconnects >= MAX_RECONNECTS)
		return;
	err = vdev_save(&v, &info, &b, keep_fd, NULL);
	CHECK(!err || err == -ENOTCONN);
	if (!err && x && b.len > 24) {
		b.p[16 + at % (b.len - 24)] ^= x;
		crc = roce_crc32(0, b.p, b.len - 4);
		memcpy(b.p + b.len - 4, &crc, 4);	/* little-endian */
	}
	if (!err) {
		vdev_free(&v);
		CHECK(vdev_init(&v, &vmcfg, 0, &port, &host, NULL) == 0);
		err = vdev_restore(&v, b.p, b.len, take_fd, NULL, &got, why, sizeof(why));
		if (verbose)
			fprintf(stderr, "restart: %zu bytes, byte %u ^ %#x: %s\n", b.len,
				16 + at % (unsigned int)(b.len > 24 ? b.len - 24 : 1), x,
				err ? why : "restored");
		CHECK(!err || x);
		drop_kept();
		if (err) {
			connect_device();
			reconnects++;
		} else {
			close(sp[0]);	/* the device's end is its copy now */
			sp[0] = v.vu.fd;
			if (!x) {
				CHECK(vdev_save(&v, &info, &again, keep_fd, NULL) == 0);
				CHECK(again.len == b.len && !memcmp(again.p, b.p, b.len));
				drop_kept();
			} else {
				/* a changed state that checks out is no longer the
				 * one this driver knows: it runs a little (the
				 * sanitizers watch), then the front end reconnects */
				uint64_t next;
				unsigned int i;

				for (i = 0; i < 4; i++, clock_ns += 100000000)
					vdev_poll(&v, &next);
				reconnect();
			}
		}
	}
	drop_kept();
	sb_free(&b);
	sb_free(&again);
}

/* ---- ABI v2: ops only a tenant on rings has (op bytes RING_OP_BASE up) ---- */

/* The tenant on rings from here: a driver that negotiates ABI v2 loads
 * (what the tenant held is gone). On rings already: the front end drops
 * the feature while the device runs (it resets), then the driver loads
 * again, as a reconnect. */
static void op_rings(void)
{
	uint64_t u = VU_FEATURES & ~(1ull << VIRTIO_RDMA_F_RINGS);

	if (!rings) {
		rings = true;
		reload();
	} else if (reconnects < MAX_RECONNECTS) {
		broke_ok = true;
		send_msg(VHOST_USER_SET_FEATURES, &u, sizeof(u), NULL, 0);
		drain();
		reload();
		reconnects++;
	}
}

/* Ring ops move a v1 tenant to rings first. */
static void op_rings_on(void)
{
	if (!rings) {
		rings = true;
		reload();
	}
}

/* A kept ring by a byte: a CQ's (by cqn), or slot k's SQ or RQ; NULL if
 * none is there. */
static struct f_ring *pick_ring(uint8_t b, int *cq)
{
	uint32_t i = (b >> 2) % N_RSLOTS;
	struct f_ring *r;

	*cq = b % 3 == 0 ? (int)i : -1;
	r = b % 3 == 0 ? &cqr[i].r : b % 3 == 1 ? &sqr[i] : &rqr[i];
	return r->off ? r : NULL;
}

/* Doorbells: a bit anywhere on a page (for no ring, or in a word no ring
 * uses), a ring's bit with nothing posted, a second page (or the same one
 * again, or one unaligned or past guest memory: refused), DEL_DB_PAGE
 * (BUSY exactly while a ring names it), the worker going to sleep and
 * waking (need_wake set for every page, a bit rung before it keeps it
 * awake), the event queue's buffers kept or given back. */
static void op_ring_db(void)
{
	uint8_t what = u8() % 6, b = u8();
	unsigned int i;
	int cq;

	op_rings_on();
	switch (what) {
	case 0:
		bell(n_db ? db_off[b % n_db] : DB_OFF, u16() % VIRTIO_RDMA_DB_BITS);
		break;
	case 1: {
		struct f_ring *r = pick_ring(b, &cq);

		if (r)
			ring_bell(r);
		break;
	}
	case 2:
		if (b % 4 == 0 && n_db < N_DB) {	/* the page not added */
			i = n_db && db_off[0] == DB_OFF;
			CHECK(add_db(i) || DB_OFF + i * 4096u >= mem_size);
		} else if (b % 4 != 1 || n_db) {
			struct virtio_rdma_cmd_add_db_page q = { GUEST_GPA + DB_OFF + 8 };
			struct virtio_rdma_rsp_add_db_page r;

			if (b % 4 == 1)		/* one page, one owner */
				q.gpa = GUEST_GPA + db_off[(b >> 2) % n_db];
			else if (b % 4 == 3)
				q.gpa = GUEST_GPA + GUEST_SIZE;
			CHECK(ctrl(VIRTIO_CMD_ADD_DB_PAGE, &q, sizeof(q), &r, sizeof(r)));
		}
		break;
	case 3: {
		bool named = false;
		uint8_t st;

		if (!n_db)
			break;
		i = b % n_db;
		for (cq = 0; cq < (int)N_RSLOTS; cq++)
			named |= (cqr[cq].r.off && cqr[cq].r.db == db_off[i]) ||
				 (sqr[cq].off && sqr[cq].db == db_off[i]) ||
				 (rqr[cq].off && rqr[cq].db == db_off[i]);
		st = ctrl(VIRTIO_CMD_DEL_DB_PAGE, &dbns[i], sizeof(dbns[i]), NULL, 0);
		if (!vdev_live(&v))
			break;
		CHECK(st == (named ? VIRTIO_RDMA_ERR_BUSY : VIRTIO_RDMA_OK));
		if (!st) {
			n_db--;
			dbns[i] = dbns[n_db];
			db_off[i] = db_off[n_db];
		}
		break;
	}
	case 4: {
		bool had = rang && live_bit_set(), work;
		uint32_t n = 0;

		if (!vdev_live(&v))
			break;
		work = vdev_want_kicks(&v, true);
		/* one number on every page, never 0, never the last sleep's */
		for (i = 0; i < n_db; i++) {
			if (db_off[i] >= mem_size)
				continue;
			CHECK(need_wake(db_off[i]) && need_wake(db_off[i]) != last_wake);
			CHECK(!n || need_wake(db_off[i]) == n);
			n = need_wake(db_off[i]);
		}
		if (n)
			last_wake = n;
		CHECK(work || !had || mem_size < GUEST_SIZE);
		if (b & 1) {		/* a post while it sleeps: the driver kicks */
			struct f_ring *r = pick_ring(b >> 1, &cq);

			if (r)
				ring_bell(r);
		}
		vdev_want_kicks(&v, false);
		for (i = 0; i < n_db; i++)
			CHECK(!need_wake(db_off[i]) || db_off[i] >= mem_size);
		poll_device(1);
		break;
	}
	default:
		ev_hold = b & 1;
		for (i = 0; !ev_hold && i < QN; i++)
			if (!(cq_out[VIRTIO_RDMA_EVENT_VQ] & (1u << i)))
				post_cq_buf(VIRTIO_RDMA_EVENT_VQ, (uint16_t)i);
		break;
	}
}

/* A hostile driver on a kept ring: a WQ's prod more than a ring ahead or
 * any value, a garbage WQE (honest prod), a CQ's cons moved anywhere, a
 * garbage arm word, or any guest-half header word overwritten; then the
 * device polls. */
static void op_ring_lie(void)
{
	uint8_t sel = u8(), what = u8();
	struct f_ring *r;
	uint32_t x;
	int cq;

	op_rings_on();
	r = pick_ring(sel, &cq);
	if (!r)
		return;
	what = cq >= 0 ? 3 + what % 3 : what % 4 == 3 ? 5 : what % 4;
	switch (what) {
	case 0:
		r->lied = true;
		ring_st(r, VIRTIO_RDMA_RING_PROD,
			ring_ld(r, VIRTIO_RDMA_RING_TAKEN) + r->entries + 1 + u8());
		break;
	case 1:
		x = u32();
		r->lied |= x != r->idx;
		ring_st(r, VIRTIO_RDMA_RING_PROD, x);
		break;
	case 2: {
		uint8_t *slot, n = u8() % 33, i;

		if (r->idx - ring_ld(r, VIRTIO_RDMA_RING_TAKEN) >= r->entries)
			return;
		slot = ring_slot(r, r->idx);
		memset(slot, n, r->stride);
		for (i = 0; i < n; i++)
			slot[i] = u8();
		ring_st(r, VIRTIO_RDMA_RING_PROD, ++r->idx);
		break;
	}
	case 3:
		x = u8();
		cq_cons_set((uint32_t)cq, x & 0x80 ? u32() : r->idx + (uint32_t)(int8_t)(x << 1) / 2);
		break;
	case 4:
		cq_arm_set((uint32_t)cq, u32());
		break;
	default:
		x = u32();
		memcpy(ring_at(r, u8() % 16 * 4), &x, 4);
		if (cq < 0) {
			r->lied |= ring_ld(r, VIRTIO_RDMA_RING_PROD) != r->idx;
			break;
		}
		x = ring_ld(r, VIRTIO_RDMA_RING_CONS);
		if (x != r->idx)
			cq_cons_set((uint32_t)cq, x);
		x = ring_ld(r, VIRTIO_RDMA_RING_ARM);
		if (x != cqr[cq].arm)
			cq_arm_set((uint32_t)cq, x);
		break;
	}
	ring_bell(r);
	poll_device(1);
}

/* A CQ ring's consumer: up to n CQEs taken now, and whether it consumes at
 * each poll (held, the ring fills: the device holds completions back, and
 * the CQ overflows into CQ_ERR). */
static void op_ring_cq(void)
{
	uint32_t c = pick(cqns, n_cq, u8());
	uint8_t b = u8();

	op_rings_on();
	if (c >= N_RSLOTS || !cqr[c].r.off)
		return;
	reap_cq_ring(c, (b >> 1) % 16u);
	cqr[c].hold = b & 1;
}

static void (*const ring_ops[])(void) = { op_ring_db, op_ring_lie, op_ring_cq, op_rings };
#define RING_OPS	(sizeof(ring_ops) / sizeof(ring_ops[0]))
#define RING_OP_BASE	0xe0u

static void (*const ops[])(void) = {
	op_create_pd, op_create_cq, op_reg_mr, op_dereg_mr, op_create_qp, op_connect,
	op_modify_state, op_destroy, op_post_send, op_post_recv, op_poll, op_deliver,
	op_frame, op_notify, op_vhost, op_srq, op_fast, op_mw, op_restart,
};
#define OP_MAX (sizeof(ops) / sizeof(ops[0]))

/* What MRs cover at the start: bytes that differ from page to page, so a
 * copy between MRs changes memory (the FREE MR check sees it). */
static uint8_t data_init[DATA_PAGES * VIRTIO_RDMA_PAGE_SIZE];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint32_t i;

	(void)argc; (void)argv;
	for (i = 0; i < sizeof(data_init); i++)
		data_init[i] = (uint8_t)(i * 7u + (i >> 12));
	fixture_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	in = data;
	in_left = size;
	tx_head = tx_tail = 0;
	reconnects = 0;
	rings = false;
	clock_ns = 1000000000ull;
	memset(guest, 0, GUEST_SIZE);
	memcpy(guest + DATA_OFF, data_init, sizeof(data_init));
	CHECK(vdev_init(&v, &vmcfg, 0, &port, &host, NULL) == 0);
	connect_device();

	while (in_left) {
		uint8_t op = u8();

		if (verbose)
			fprintf(stderr, "op %u\n", op >= RING_OP_BASE ? op : (unsigned int)(op % OP_MAX));
		broke_ok = false;
		if (op >= RING_OP_BASE)
			ring_ops[(op - RING_OP_BASE) % RING_OPS]();
		else
			ops[op % OP_MAX]();
		if (!vdev_live(&v)) {
			/* only the front end's records may break it */
			CHECK(broke_ok);
			if (reconnects >= MAX_RECONNECTS)
				break;
			reconnect();
		}
	}

	if (verbose && v.eng) {
		const struct eng_counters *c = eng_dev_counters(v.eng);

		fprintf(stderr, "tx %" PRIu64 " rx %" PRIu64 " naks %" PRIu64 " cqes %" PRIu64
			" wqes %" PRIu64 "/%" PRIu64 " refused %" PRIu64 "\n",
			c->c[ENG_CNT_TX_PKTS], c->c[ENG_CNT_RX_PKTS],
			c->c[ENG_CNT_NAK_SENT_ACCESS] + c->c[ENG_CNT_NAK_SENT_INVALID],
			v.stats.cqes, v.stats.send_wqes, v.stats.recv_wqes, v.stats.refused_wqes);
	}
	vdev_free(&v);
	drain();
	return 0;
}
