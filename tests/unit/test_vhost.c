// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the vhost-user back-end (daemon/vhost/vhost_backend.c), guest
 * memory (daemon/vhost/guest_mem.c) and virtqueue validation (daemon/vhost/virtq.c), seen
 * through a whole device (daemon/device/vdev_poll.c): every refused message or virtqueue
 * violation must leave a clear error, keep the process alive, and leave a
 * second device with its own memory working.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec.h"
#include "icrc.h"
#include "log.h"
#include "vdev.h"
#include "vdev_int.h"
#include "vhost_backend.h"
#include "vhost_user.h"
#include "virtio_rdma.h"
#include "virtq.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define MEM_SIZE	(4u << 20)
#define GPA_BASE	0x100000000ull
#define RING_NUM	8u
#define MAX_CQ		4u
#define MAX_QP		4u
#define N_VQS		(1u + MAX_CQ + 2u * MAX_QP)	/* 13 */
#define RING_MAX_CQ	40u	/* ABI v2: past v1's, no virtqueue each */
#define RING_MAX_QP	24u

/* Guest memory layout (offsets into the 4 MiB region). */
#define RING_OFF(q)	((uint64_t)(q) * 0x1000u)	/* desc +0, avail +0x200, used +0x400 */
#define AVAIL_OFF	0x200u
#define USED_OFF	0x400u
#define DATA_OFF	0x20000u	/* control slot s: request +s*0x400, response +0x200 */
#define SCRATCH_OFF	0x40000u	/* indirect tables, page lists */
#define PAGES_OFF	0x80000u	/* MR pages */
#define BIG_OFF		0x100000u	/* long page lists, to the end */

/* what vrdmad offers (VU_FEATURES), and what a v1 front end takes of it */
#define OFFERED_FEATURES ((1ull << 32) | (1ull << 28) | (1ull << 30) | (1ull << VIRTIO_RDMA_F_RINGS))
#define EXPECT_FEATURES (OFFERED_FEATURES & ~(1ull << VIRTIO_RDMA_F_RINGS))
#define EXPECT_PROTOCOL ((1ull << 0) | (1ull << 3) | (1ull << 9) | (1ull << 13) | (1ull << 16))

#define V1	VHOST_USER_VERSION
#define NEED	(VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK)

struct fx {
	struct vrdma_vm_config cfg;
	struct vdev *v;
	int sock[2];		/* [0] the daemon's end, [1] ours */
	int memfd;
	uint8_t *mem;
	uint16_t avail_idx;	/* queue 0, as the driver */
	uint16_t used_seen;
	struct vhost_user_msg reply;
	bool have_reply;
};

/* ---- host callbacks ---- */

static uint64_t fake_clock;

static uint64_t host_now(void *ctx)
{
	(void)ctx;
	return fake_clock += 1000;
}

/* Frames the engines tried to send: the wire never has room. */
static unsigned int tx_tries;

static unsigned int host_tx_alloc(void *ctx, const uint8_t dgid[16], uint32_t len,
				  struct roce_frag *frags, unsigned int max)
{
	(void)ctx; (void)dgid; (void)len; (void)frags; (void)max;
	tx_tries++;
	return 0;
}

static void host_tx_send(void *ctx, struct roce_frag *frags, unsigned int n, uint32_t len)
{
	(void)ctx; (void)frags; (void)n; (void)len;
}

static const uint8_t vm_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1 };

/* ---- helpers ---- */

static unsigned int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Fixtures still alive, freed by the teardown when a test fails midway. */
static struct fx *live_fx[8];

/* A device with the given MR limits (vrdmad.conf's max_mr, max_mr_pages). */
static struct fx *fx_new_mr_limits(const char *name, uint32_t vm_id, unsigned int max_mr,
				   unsigned int max_mr_pages)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct vdev_port port = { .mtu = 1500, .mac = { 2, 0, 0, 0, 0, 1 } };
	struct eng_tx host = { host_now, host_tx_alloc, host_tx_send, NULL };

	assert_non_null(f);
	snprintf(f->cfg.name, sizeof(f->cfg.name), "%s", name);
	f->cfg.n_gids = 1;
	memcpy(f->cfg.gids[0].raw, vm_gid, 16);
	f->cfg.max_cq = MAX_CQ;
	f->cfg.max_qp = MAX_QP;
	f->cfg.max_mr = max_mr;
	f->cfg.max_mr_pages = max_mr_pages;
	f->cfg.ring_max_cq = RING_MAX_CQ;
	f->cfg.ring_max_qp = RING_MAX_QP;
	f->cfg.socket_mode = 0600;
	f->v = calloc(1, sizeof(*f->v));
	assert_non_null(f->v);
	assert_int_equal(vdev_init(f->v, &f->cfg, vm_id, &port, &host, NULL), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->sock), 0);
	f->v->vu.fd = f->sock[0];
	f->memfd = vhost_user_memfd(name, MEM_SIZE);
	assert_true(f->memfd >= 0);
	f->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	assert_true(f->mem != MAP_FAILED);
	for (unsigned int i = 0; i < ARRAY_SIZE(live_fx); i++) {
		if (!live_fx[i]) {
			live_fx[i] = f;
			break;
		}
	}
	return f;
}

static struct fx *fx_new(const char *name, uint32_t vm_id)
{
	return fx_new_mr_limits(name, vm_id, VRDMA_CONF_DEFAULT_MAX_MR,
				VRDMA_CONF_DEFAULT_MAX_MR_PAGES);
}

static void fx_free(struct fx *f)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(live_fx); i++)
		if (live_fx[i] == f)
			live_fx[i] = NULL;
	vdev_free(f->v);
	free(f->v);
	close(f->sock[0]);
	close(f->sock[1]);
	munmap(f->mem, MEM_SIZE);
	close(f->memfd);
	free(f);
}

static uint64_t uva(const struct fx *f, uint64_t off)
{
	return (uint64_t)(uintptr_t)f->mem + off;
}

static uint64_t gpa(uint64_t off)
{
	return GPA_BASE + off;
}

static struct vring_desc *ring_desc(struct fx *f, unsigned int q)
{
	return (struct vring_desc *)(f->mem + RING_OFF(q));
}

static struct vring_avail *ring_avail(struct fx *f, unsigned int q)
{
	return (struct vring_avail *)(f->mem + RING_OFF(q) + AVAIL_OFF);
}

static struct vring_used *ring_used(struct fx *f, unsigned int q)
{
	return (struct vring_used *)(f->mem + RING_OFF(q) + USED_OFF);
}

static struct vring_desc rd_desc_at(uint64_t off, uint32_t len, uint16_t next)
{
	return (struct vring_desc){ gpa(off), len, VRING_DESC_F_NEXT, next };
}

/* Read one reply from our end of the socket, if there is one. */
static bool recv_reply(struct fx *f)
{
	ssize_t n;

	memset(&f->reply, 0, sizeof(f->reply));
	n = recv(f->sock[1], &f->reply.hdr, sizeof(f->reply.hdr), MSG_DONTWAIT);
	if (n <= 0)
		return false;
	assert_int_equal(n, sizeof(f->reply.hdr));
	assert_true(f->reply.hdr.size <= sizeof(f->reply.payload));
	if (f->reply.hdr.size) {
		n = recv(f->sock[1], &f->reply.payload, f->reply.hdr.size, MSG_WAITALL);
		assert_int_equal(n, f->reply.hdr.size);
	}
	return true;
}

/* Send one message through vu_dispatch; its reply (if any) lands in f->reply. */
static int dispatch(struct fx *f, uint32_t request, uint32_t flags, const void *payload,
		    uint32_t size, int *fds, unsigned int nfds)
{
	struct vhost_user_msg m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.hdr.request = request;
	m.hdr.flags = flags;
	m.hdr.size = size;
	if (payload)
		memcpy(&m.payload, payload, size < sizeof(m.payload) ? size : sizeof(m.payload));
	ret = vu_dispatch(&f->v->vu, &m, fds, nfds);
	f->have_reply = recv_reply(f);
	if (f->have_reply)
		assert_int_equal(f->reply.hdr.request, request);
	return ret;
}

static int send_none(struct fx *f, uint32_t request, uint32_t flags)
{
	return dispatch(f, request, flags, NULL, 0, NULL, 0);
}

static int send_u64(struct fx *f, uint32_t request, uint32_t flags, uint64_t val)
{
	return dispatch(f, request, flags, &val, sizeof(val), NULL, 0);
}

static int send_state(struct fx *f, uint32_t request, uint32_t flags, uint32_t idx, uint32_t num)
{
	struct vhost_vring_state st = { idx, num };

	return dispatch(f, request, flags, &st, sizeof(st), NULL, 0);
}

static int send_addr(struct fx *f, uint32_t idx, uint32_t aflags, uint64_t desc, uint64_t avail,
		     uint64_t used)
{
	struct vhost_vring_addr a = {
		.index = idx, .flags = aflags, .desc_user_addr = desc,
		.used_user_addr = used, .avail_user_addr = avail,
	};

	return dispatch(f, VHOST_USER_SET_VRING_ADDR, V1, &a, sizeof(a), NULL, 0);
}

static int send_mem_table(struct fx *f, uint32_t flags, const struct vhost_user_mem_region *r,
			  unsigned int n, int *fds, unsigned int nfds)
{
	union vhost_user_payload m;	/* dispatch copies up to a whole payload */

	memset(&m, 0, sizeof(m));
	m.memory.nregions = n;
	memcpy(m.memory.regions, r,
	       (n < VHOST_USER_MEM_REGIONS ? n : VHOST_USER_MEM_REGIONS) * sizeof(*r));
	return dispatch(f, VHOST_USER_SET_MEM_TABLE, flags, &m,
			(uint32_t)(offsetof(struct vhost_user_memory, regions) + n * sizeof(*r)),
			fds, nfds);
}

/* A u64 message with one fd (passed in a copy: the daemon may take it). */
static int send_u64_fd(struct fx *f, uint32_t request, uint32_t flags, uint64_t val, int fd)
{
	int fds[1] = { fd };

	return dispatch(f, request, flags, &val, sizeof(val), fds, 1);
}

static struct vhost_user_mem_region main_region(const struct fx *f)
{
	return (struct vhost_user_mem_region){
		.guest_phys_addr = GPA_BASE, .memory_size = MEM_SIZE,
		.userspace_addr = uva(f, 0), .mmap_offset = 0,
	};
}

static int send_main_mem_table(struct fx *f, uint32_t flags)
{
	struct vhost_user_mem_region r = main_region(f);
	int fd = dup(f->memfd);

	assert_true(fd >= 0);
	return send_mem_table(f, flags, &r, 1, &fd, 1);
}

static void setup_ring(struct fx *f, unsigned int q)
{
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, V1, q, RING_NUM), 0);
	assert_int_equal(send_addr(f, q, 0, uva(f, RING_OFF(q)), uva(f, RING_OFF(q) + AVAIL_OFF),
				   uva(f, RING_OFF(q) + USED_OFF)), 0);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_BASE, V1, q, 0), 0);
	assert_int_equal(send_u64(f, VHOST_USER_SET_VRING_KICK, V1,
				  q | VHOST_USER_VRING_NOFD_MASK), 0);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_ENABLE, V1, q, 1), 0);
}

/* A fresh connection's handshake up to a running control queue. */
static void handshake(struct fx *f)
{
	memset(f->mem, 0, DATA_OFF);
	f->avail_idx = 0;
	f->used_seen = 0;
	assert_int_equal(send_none(f, VHOST_USER_GET_FEATURES, V1), 0);
	assert_true(f->have_reply);
	assert_int_equal(f->reply.payload.u64, OFFERED_FEATURES);
	assert_int_equal(send_u64(f, VHOST_USER_SET_FEATURES, V1, EXPECT_FEATURES), 0);
	assert_int_equal(send_none(f, VHOST_USER_GET_PROTOCOL_FEATURES, V1), 0);
	assert_true(f->have_reply);
	assert_int_equal(f->reply.payload.u64, EXPECT_PROTOCOL);
	assert_int_equal(send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, V1, EXPECT_PROTOCOL), 0);
	assert_int_equal(send_none(f, VHOST_USER_SET_OWNER, V1), 0);
	assert_int_equal(send_main_mem_table(f, V1), 0);
	setup_ring(f, 0);
}

/* As a v2 driver: SET_FEATURES with VIRTIO_RDMA_F_RINGS (the device
 * resets, sized for rings). */
static void rings_on(struct fx *f)
{
	assert_int_equal(send_u64(f, VHOST_USER_SET_FEATURES, V1,
				  EXPECT_FEATURES | (1ull << VIRTIO_RDMA_F_RINGS)), 0);
	assert_true(f->v->vu.features & (1ull << VIRTIO_RDMA_F_RINGS));
}

static void reconnect(struct fx *f)
{
	vu_dev_disconnect(&f->v->vu);
	assert_false(f->v->broken);
	handshake(f);
}

/* Put head on queue 0's avail ring. */
static void post(struct fx *f, uint16_t head)
{
	struct vring_avail *a = ring_avail(f, 0);

	a->ring[f->avail_idx % RING_NUM] = head;
	f->avail_idx++;
	__atomic_store_n(&a->idx, f->avail_idx, __ATOMIC_RELEASE);
}

static uint8_t *slot_req(struct fx *f, unsigned int slot)
{
	return f->mem + DATA_OFF + slot * 0x400u;
}

static uint64_t slot_req_off(unsigned int slot)
{
	return DATA_OFF + slot * 0x400u;
}

/* Queue one control request (not yet polled); returns its head. */
static uint16_t ctrl_submit(struct fx *f, uint8_t cmd, const void *req, uint32_t req_len,
			    uint32_t rsp_cap)
{
	unsigned int slot = f->avail_idx % (RING_NUM / 2);
	uint16_t head = (uint16_t)(slot * 2);
	struct vring_desc *d = ring_desc(f, 0);
	uint8_t *rq = slot_req(f, slot);

	assert_true(req_len < 0x1ff && rsp_cap < 0x1ff);
	rq[0] = cmd;
	if (req_len)
		memcpy(rq + 1, req, req_len);
	memset(rq + 0x200, 0xee, 1 + rsp_cap);
	d[head] = (struct vring_desc){ gpa(slot_req_off(slot)), 1 + req_len, VRING_DESC_F_NEXT,
				       (uint16_t)(head + 1) };
	d[head + 1] = (struct vring_desc){ gpa(slot_req_off(slot) + 0x200), 1 + rsp_cap,
					   VRING_DESC_F_WRITE, 0 };
	post(f, head);
	return head;
}

static unsigned int poll_dev(struct fx *f)
{
	uint64_t t;

	return vdev_poll(f->v, &t);
}

/* The next used entry of queue 0: its status, or -1 if none. */
static int ctrl_reap(struct fx *f, uint16_t head, void *rsp, uint32_t *rsp_len)
{
	struct vring_used *u = ring_used(f, 0);
	struct vring_used_elem e;
	const uint8_t *buf;

	if (__atomic_load_n(&u->idx, __ATOMIC_ACQUIRE) == f->used_seen)
		return -1;
	e = u->ring[f->used_seen % RING_NUM];
	f->used_seen++;
	assert_int_equal(e.id, head);
	assert_true(e.len >= 1);
	buf = f->mem + DATA_OFF + (head / 2) * 0x400u + 0x200;
	if (rsp && e.len > 1)
		memcpy(rsp, buf + 1, e.len - 1);
	if (rsp_len)
		*rsp_len = e.len - 1;
	return buf[0];
}

static int ctrl(struct fx *f, uint8_t cmd, const void *req, uint32_t req_len, void *rsp,
		uint32_t rsp_cap, uint32_t *rsp_len)
{
	uint16_t head = ctrl_submit(f, cmd, req, req_len, rsp_cap);

	int st;

	poll_dev(f);
	st = ctrl_reap(f, head, rsp, rsp_len);
	if (st < 0)
		fail_msg("vm %s: control command %u not completed: used idx %u, the device took "
			 "%u of %u avail entries, broken %d, %" PRIu64 " commands executed",
			 f->cfg.name, cmd, ring_used(f, 0)->idx, f->v->vu.vqs[0].last_avail,
			 f->avail_idx, f->v->broken, f->v->stats.ctrl_cmds);
	return st;
}

static uint32_t create_pd(struct fx *f)
{
	struct virtio_rdma_rsp_create_pd r = { 0 };
	uint32_t len = 0;

	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_PD, NULL, 0, &r, sizeof(r), &len),
			 VIRTIO_RDMA_OK);
	assert_int_equal(len, sizeof(r));
	return le32toh(r.pdn);
}

/* The device answers its control queue. */
static void assert_works(struct fx *f)
{
	assert_false(f->v->broken);
	(void)create_pd(f);
}

/* A refused message: negative, counted, explained. */
#define assert_refused(f, expr) do {						\
		uint64_t bad_ = (f)->v->vu.bad_messages;			\
		(f)->v->vu.last_error[0] = 0;					\
		assert_true((expr) < 0);					\
		assert_int_equal((f)->v->vu.bad_messages, bad_ + 1);		\
		assert_true((f)->v->vu.last_error[0] != 0);			\
	} while (0)

/* ---- 0. virtq_pop's contract, on its own ---- */

/* virtq.h: "1 with *e filled, 0 when none is available, or a negative errno
 * for a violation". Every queue of the device relies on it. */
static void test_virtq_pop_contract(void **state)
{
	struct fx *f = fx_new("vm-a", 1);
	struct vhost_user_memory m = { .nregions = 1 };
	struct guest_mem gm;
	struct virtq vq;
	static struct virtq_elem elem;	/* big: not on the stack */
	struct virtq_elem *e = &elem;
	char err[128];
	int fd = dup(f->memfd);

	(void)state;
	m.regions[0] = main_region(f);
	assert_int_equal(guest_mem_map(&gm, &m, &fd, 1, err, sizeof(err)), 0);
	close(fd);
	virtq_init(&vq);
	vq.num = RING_NUM;
	vq.have_addr = true;
	vq.desc_uva = uva(f, 0);
	vq.avail_uva = uva(f, AVAIL_OFF);
	vq.used_uva = uva(f, USED_OFF);
	assert_int_equal(virtq_map(&vq, &gm), 0);
	vq.enabled = vq.kicked = true;
	assert_true(virtq_ready(&vq));

	assert_int_equal(virtq_pop(&vq, &gm, e), 0);	/* nothing there */
	ring_desc(f, 0)[0] = rd_desc_at(DATA_OFF, 3, 1);
	ring_desc(f, 0)[1] = (struct vring_desc){ gpa(DATA_OFF + 0x200), 16, VRING_DESC_F_WRITE, 0 };
	post(f, 0);
	assert_true(virtq_has_work(&vq));
	/* A chain was taken: the answer must be 1, not 0 ("none available"). */
	assert_int_equal(virtq_pop(&vq, &gm, e), 1);
	assert_int_equal(e->head, 0);
	assert_int_equal(e->n_out, 1);
	assert_int_equal(e->n_in, 1);
	assert_int_equal(e->out_len, 3);
	assert_int_equal(e->in_len, 16);
	assert_ptr_equal(e->out[0].iov_base, gm.r[0].host + DATA_OFF);
	assert_int_equal(virtq_pop(&vq, &gm, e), 0);
	virtq_push(&vq, 0, 1);
	assert_int_equal(ring_used(f, 0)->idx, 1);

	virtq_reset(&vq);
	guest_mem_unmap(&gm);
	fx_free(f);
}

/* ---- 1. the happy handshake ---- */

/* The whole config space through GET_CONFIG, in chunks of at most 256 bytes. */
static void read_config(struct fx *f, struct virtio_rdma_config *cfg)
{
	struct vhost_user_config c;
	uint32_t off;

	memset(cfg, 0x5a, sizeof(*cfg));
	for (off = 0; off < sizeof(*cfg); off += VHOST_USER_MAX_CONFIG_SIZE) {
		uint32_t len = sizeof(*cfg) - off;

		if (len > VHOST_USER_MAX_CONFIG_SIZE)
			len = VHOST_USER_MAX_CONFIG_SIZE;
		memset(&c, 0, sizeof(c));
		c.offset = off;
		c.size = len;
		assert_int_equal(dispatch(f, VHOST_USER_GET_CONFIG, NEED, &c, 12 + len, NULL, 0), 0);
		assert_true(f->have_reply);
		assert_int_equal(f->reply.hdr.size, 12 + len);
		assert_int_equal(f->reply.payload.config.offset, off);
		assert_int_equal(f->reply.payload.config.size, len);
		memcpy((uint8_t *)cfg + off, f->reply.payload.config.region, len);
		assert_false(recv_reply(f));
	}
}

static void test_handshake(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	struct virtio_rdma_config cfg;

	(void)state;
	/* Before REPLY_ACK is negotiated NEED_REPLY asks for nothing. */
	assert_int_equal(send_none(a, VHOST_USER_GET_FEATURES, V1), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.hdr.flags, VHOST_USER_VERSION | VHOST_USER_REPLY_MASK);
	assert_int_equal(a->reply.hdr.size, 8);
	assert_int_equal(a->reply.payload.u64, OFFERED_FEATURES);
	/* Some front-ends add a u64 to a GET. */
	assert_int_equal(send_u64(a, VHOST_USER_GET_FEATURES, V1, 0), 0);
	assert_int_equal(a->reply.payload.u64, OFFERED_FEATURES);
	assert_int_equal(send_u64(a, VHOST_USER_SET_FEATURES, NEED, EXPECT_FEATURES), 0);
	assert_false(a->have_reply);
	assert_int_equal(a->v->vu.features, EXPECT_FEATURES);
	assert_int_equal(send_none(a, VHOST_USER_GET_PROTOCOL_FEATURES, V1), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.payload.u64, EXPECT_PROTOCOL);
	assert_int_equal(send_u64(a, VHOST_USER_SET_PROTOCOL_FEATURES, V1, EXPECT_PROTOCOL), 0);
	/* Now NEED_REPLY gets a u64 0 ack. */
	assert_int_equal(send_none(a, VHOST_USER_SET_OWNER, NEED), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.hdr.flags, VHOST_USER_VERSION | VHOST_USER_REPLY_MASK);
	assert_int_equal(a->reply.hdr.size, 8);
	assert_int_equal(a->reply.payload.u64, 0);
	assert_true(a->v->vu.owner);
	/* A request with its own answer gets that answer only. */
	assert_int_equal(send_none(a, VHOST_USER_GET_QUEUE_NUM, NEED), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.payload.u64, N_VQS);
	assert_false(recv_reply(a));
	assert_int_equal(send_none(a, VHOST_USER_GET_MAX_MEM_SLOTS, V1), 0);
	assert_int_equal(a->reply.payload.u64, VHOST_USER_MEM_REGIONS);
	assert_int_equal(send_main_mem_table(a, NEED), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.payload.u64, 0);
	setup_ring(a, 0);

	/* The config space, in chunks of at most 256 bytes. */
	assert_int_equal(sizeof(cfg), 656);
	read_config(a, &cfg);
	assert_int_equal(le32toh(cfg.phys_port_cnt), 1);
	assert_int_equal(le32toh(cfg.max_qp), MAX_QP);
	assert_int_equal(le32toh(cfg.max_cq), MAX_CQ);
	assert_int_equal(le64toh(cfg.page_size_cap), VIRTIO_RDMA_PAGE_SIZE);
	assert_memory_equal(cfg.gid_tbl[0], vm_gid, 16);
	{
		static const uint8_t zero[16];

		assert_memory_equal(cfg.gid_tbl[1], zero, 16);
	}
	assert_memory_equal(&cfg, &a->v->config, sizeof(cfg));

	/* Status */
	assert_int_equal(send_u64(a, VHOST_USER_SET_STATUS, NEED, 0x0f), 0);
	assert_int_equal(a->reply.payload.u64, 0);
	assert_int_equal(send_none(a, VHOST_USER_GET_STATUS, V1), 0);
	assert_int_equal(a->reply.payload.u64, 0x0f);

	assert_int_equal(a->v->vu.bad_messages, 0);
	assert_works(a);

	handshake(b);
	assert_works(b);
	assert_int_equal(b->v->vu.bad_messages, 0);
	fx_free(a);
	fx_free(b);
}

/* ---- 2. malformed messages ---- */

static void test_bad_messages(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	union vhost_user_payload cp;	/* room for any payload size used below */
	struct vhost_user_config c;
	uint32_t four = 0;
	uint8_t twelve[12] = { 0 };
	uint8_t big[32] = { 0 };

	(void)state;
	handshake(a);
	handshake(b);

	/* Wrong payload sizes; with NEED_REPLY the refusal is acked nonzero. */
	assert_refused(a, dispatch(a, VHOST_USER_SET_FEATURES, NEED, &four, 4, NULL, 0));
	assert_true(a->have_reply);
	assert_int_equal(a->reply.hdr.size, 8);
	assert_true(a->reply.payload.u64 != 0);
	assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_NUM, V1, twelve, 12, NULL, 0));
	assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_ADDR, V1, big, 32, NULL, 0));
	assert_refused(a, dispatch(a, VHOST_USER_GET_FEATURES, V1, &four, 4, NULL, 0));
	assert_false(a->have_reply);
	assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_KICK, V1, &four, 4, NULL, 0));
	assert_refused(a, dispatch(a, VHOST_USER_SET_MEM_TABLE, V1, &four, 4, NULL, 0));
	assert_refused(a, dispatch(a, VHOST_USER_SET_STATUS, V1, NULL, 0, NULL, 0));

	/* Wrong version */
	assert_refused(a, send_none(a, VHOST_USER_GET_FEATURES, 2));
	assert_false(a->have_reply);
	assert_refused(a, send_none(a, VHOST_USER_GET_FEATURES, 0));
	assert_refused(a, send_none(a, VHOST_USER_GET_FEATURES,
				    3 | VHOST_USER_NEED_REPLY_MASK));
	assert_true(a->have_reply);
	assert_true(a->reply.payload.u64 != 0);

	/* Unknown requests */
	assert_refused(a, send_u64(a, 200, NEED, 0));
	assert_true(a->have_reply);
	assert_true(a->reply.payload.u64 != 0);
	assert_refused(a, send_none(a, 0, V1));
	assert_refused(a, send_none(a, VHOST_USER_SET_LOG_BASE, V1));
	assert_refused(a, send_none(a, 0xffffffffu, V1));

	/* Bits not offered */
	assert_refused(a, send_u64(a, VHOST_USER_SET_FEATURES, V1, EXPECT_FEATURES | 2));
	assert_int_equal(a->v->vu.features, EXPECT_FEATURES);
	assert_refused(a, send_u64(a, VHOST_USER_SET_FEATURES, V1, 1ull << 33));
	assert_refused(a, send_u64(a, VHOST_USER_SET_PROTOCOL_FEATURES, V1,
				   EXPECT_PROTOCOL | (1ull << 1)));
	assert_int_equal(a->v->vu.protocol_features, EXPECT_PROTOCOL);
	assert_refused(a, send_u64(a, VHOST_USER_SET_STATUS, V1, 0x100));

	/* SET_CONFIG: refused (nonzero ack) but the connection goes on. */
	memset(&c, 0, sizeof(c));
	c.offset = 0;
	c.size = 4;
	{
		uint64_t bad = a->v->vu.bad_messages;

		assert_int_equal(dispatch(a, VHOST_USER_SET_CONFIG, NEED, &c, 16, NULL, 0), 0);
		assert_true(a->have_reply);
		assert_int_equal(a->reply.hdr.size, 8);
		assert_true(a->reply.payload.u64 != 0);
		assert_int_equal(a->v->vu.bad_messages, bad + 1);
	}

	/* GET_CONFIG outside the 656 bytes: a reply with size 0. */
	{
		static const struct { uint32_t off, size, hdr_size; } bad_cfg[] = {
			{ 600, 100, 112 },		/* past the end */
			{ 656, 1, 13 },			/* at the end */
			{ 657, 0, 12 },			/* beyond the end */
			{ 0xfffffff0u, 32, 44 },	/* offset + size wraps */
			{ 0, 257, 12 + 257 },		/* more than a message holds */
			{ 0, 16, 12 + 8 },		/* size disagrees with the header */
		};
		unsigned int i;

		for (i = 0; i < ARRAY_SIZE(bad_cfg); i++) {
			memset(&cp, 0, sizeof(cp));
			cp.config.offset = bad_cfg[i].off;
			cp.config.size = bad_cfg[i].size;
			assert_true(bad_cfg[i].hdr_size <= sizeof(cp));
			assert_int_equal(dispatch(a, VHOST_USER_GET_CONFIG, V1, &cp, bad_cfg[i].hdr_size,
						  NULL, 0), 0);
			assert_true(a->have_reply);
			assert_int_equal(a->reply.hdr.size, 12);
			assert_int_equal(a->reply.payload.config.size, 0);
		}
		/* The last bytes are fine. */
		memset(&c, 0, sizeof(c));
		c.offset = 640;
		c.size = 16;
		assert_int_equal(dispatch(a, VHOST_USER_GET_CONFIG, V1, &c, 28, NULL, 0), 0);
		assert_int_equal(a->reply.hdr.size, 28);
		assert_int_equal(a->reply.payload.config.size, 16);
	}

	/* Nothing changed: both devices work. */
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- 3. bad ring messages ---- */

static void test_bad_rings(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2), *c = fx_new("vm-c", 3);
	static const uint32_t bad_idx[] = { N_VQS, 255, 256, 0xffffffffu };
	unsigned int i, fds_before;
	int fd;

	(void)state;
	handshake(a);
	handshake(b);

	/* Ring messages (and the memory table) before SET_OWNER. */
	assert_refused(c, send_state(c, VHOST_USER_SET_VRING_NUM, V1, 0, RING_NUM));
	assert_int_equal(c->v->vu.vqs[0].num, 0);
	assert_refused(c, send_addr(c, 0, 0, uva(c, 0), uva(c, AVAIL_OFF), uva(c, USED_OFF)));
	assert_refused(c, send_state(c, VHOST_USER_SET_VRING_BASE, V1, 0, 0));
	assert_refused(c, send_u64(c, VHOST_USER_SET_VRING_KICK, V1, VHOST_USER_VRING_NOFD_MASK));
	assert_refused(c, send_state(c, VHOST_USER_GET_VRING_BASE, V1, 0, 0));
	assert_false(c->have_reply);
	fds_before = count_fds();
	assert_refused(c, send_main_mem_table(c, V1));
	assert_int_equal(count_fds(), fds_before);
	assert_int_equal(c->v->vu.mem.n, 0);

	/* Queue indexes out of range (13 queues). */
	for (i = 0; i < ARRAY_SIZE(bad_idx); i++) {
		uint32_t q = bad_idx[i];

		assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, q, RING_NUM));
		assert_refused(a, send_addr(a, q, 0, uva(a, 0), uva(a, AVAIL_OFF), uva(a, USED_OFF)));
		assert_refused(a, send_state(a, VHOST_USER_SET_VRING_BASE, V1, q, 0));
		assert_refused(a, send_state(a, VHOST_USER_GET_VRING_BASE, V1, q, 0));
		assert_refused(a, send_state(a, VHOST_USER_SET_VRING_ENABLE, V1, q, 1));
		if (q <= VHOST_USER_VRING_IDX_MASK) {
			assert_refused(a, send_u64(a, VHOST_USER_SET_VRING_KICK, V1,
						   q | VHOST_USER_VRING_NOFD_MASK));
			assert_refused(a, send_u64(a, VHOST_USER_SET_VRING_CALL, V1,
						   q | VHOST_USER_VRING_NOFD_MASK));
			assert_refused(a, send_u64(a, VHOST_USER_SET_VRING_ERR, V1,
						   q | VHOST_USER_VRING_NOFD_MASK));
			/* With an fd: refused, and the fd is closed. */
			fds_before = count_fds();
			fd = eventfd(0, EFD_CLOEXEC);
			assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_CALL, V1,
						   &(uint64_t){ q }, 8, &fd, 1));
			assert_int_equal(count_fds(), fds_before);
		}
	}
	/* Unknown bits in the KICK/CALL u64. */
	assert_refused(a, send_u64(a, VHOST_USER_SET_VRING_KICK, V1,
				   1 | VHOST_USER_VRING_NOFD_MASK | (1u << 9)));
	assert_refused(a, send_u64(a, VHOST_USER_SET_VRING_CALL, V1,
				   1 | VHOST_USER_VRING_NOFD_MASK | (1ull << 40)));

	/* Ring sizes: 0, not a power of two, too big. */
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 1, 0));
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 1, 3));
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 1, 65536));
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 1, 65535));
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 1, 1u << 31));

	/* Addresses: misaligned, outside guest memory, logging flag. */
	assert_int_equal(send_state(a, VHOST_USER_SET_VRING_NUM, V1, 1, RING_NUM), 0);
	assert_refused(a, send_addr(a, 1, 0, uva(a, RING_OFF(1) + 8), uva(a, RING_OFF(1) + AVAIL_OFF),
				    uva(a, RING_OFF(1) + USED_OFF)));
	assert_null(a->v->vu.vqs[1].desc);
	assert_refused(a, send_addr(a, 1, 0, uva(a, RING_OFF(1)), uva(a, RING_OFF(1) + AVAIL_OFF + 1),
				    uva(a, RING_OFF(1) + USED_OFF)));
	assert_refused(a, send_addr(a, 1, 0, uva(a, RING_OFF(1)), uva(a, RING_OFF(1) + AVAIL_OFF),
				    uva(a, RING_OFF(1) + USED_OFF + 2)));
	assert_refused(a, send_addr(a, 1, 0, uva(a, MEM_SIZE), uva(a, RING_OFF(1) + AVAIL_OFF),
				    uva(a, RING_OFF(1) + USED_OFF)));
	assert_null(a->v->vu.vqs[1].desc);
	/* The descriptor table runs past the end of the region. */
	assert_refused(a, send_addr(a, 1, 0, uva(a, MEM_SIZE - 64), uva(a, RING_OFF(1) + AVAIL_OFF),
				    uva(a, RING_OFF(1) + USED_OFF)));
	assert_refused(a, send_addr(a, 1, 0, uva(a, RING_OFF(1)), uva(a, MEM_SIZE - 4),
				    uva(a, RING_OFF(1) + USED_OFF)));
	assert_refused(a, send_addr(a, 1, 0, uva(a, RING_OFF(1)), uva(a, RING_OFF(1) + AVAIL_OFF),
				    uva(a, MEM_SIZE - 16)));
	assert_refused(a, send_addr(a, 1, 0, 0x1000, 0x2000, 0x3000));
	assert_refused(a, send_addr(a, 1, 1, uva(a, RING_OFF(1)), uva(a, RING_OFF(1) + AVAIL_OFF),
				    uva(a, RING_OFF(1) + USED_OFF)));
	/* Base beyond 16 bits */
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_BASE, V1, 1, 0x10000));
	/* Enable neither 0 nor 1 */
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_ENABLE, V1, 1, 2));

	/* A running ring cannot be changed. */
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 0, 16));
	assert_int_equal(a->v->vu.vqs[0].num, RING_NUM);
	assert_refused(a, send_addr(a, 0, 0, uva(a, RING_OFF(2)), uva(a, RING_OFF(2) + AVAIL_OFF),
				    uva(a, RING_OFF(2) + USED_OFF)));
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_BASE, V1, 0, 5));

	/* Queue 0 was never touched by all that. */
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
	fx_free(c);
}

/* ---- 4. fd counts ---- */

static void test_fd_counts(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	struct vhost_user_mem_region r[2];
	unsigned int before;
	int fds[2], efd, mine;
	uint64_t cnt;

	(void)state;
	handshake(a);
	handshake(b);
	before = count_fds();

	/* Two regions, one fd. */
	r[0] = main_region(a);
	r[0].memory_size = MEM_SIZE / 2;
	r[1] = main_region(a);
	r[1].guest_phys_addr += MEM_SIZE / 2;
	r[1].userspace_addr += MEM_SIZE / 2;
	r[1].mmap_offset = MEM_SIZE / 2;
	r[1].memory_size = MEM_SIZE / 2;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, NEED, r, 2, fds, 1));
	assert_true(a->have_reply);
	assert_true(a->reply.payload.u64 != 0);
	assert_int_equal(count_fds(), before);
	/* One region, two fds. */
	fds[0] = dup(a->memfd);
	fds[1] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 2));
	assert_int_equal(count_fds(), before);
	/* The same two regions with two fds are fine. */
	fds[0] = dup(a->memfd);
	fds[1] = dup(a->memfd);
	assert_int_equal(send_mem_table(a, NEED, r, 2, fds, 2), 0);
	assert_int_equal(a->reply.payload.u64, 0);
	assert_int_equal(a->v->vu.mem.n, 2);
	assert_works(a);
	/* the device keeps a copy of each region's fd (a restart stores them):
	 * two now, one before */
	assert_int_equal(count_fds(), before + 1);
	before++;

	/* KICK without NOFD and no fd; with NOFD and an fd. */
	assert_refused(a, send_u64(a, VHOST_USER_SET_VRING_KICK, V1, 1));
	efd = eventfd(0, EFD_CLOEXEC);
	assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_KICK, V1,
				   &(uint64_t){ 1 | VHOST_USER_VRING_NOFD_MASK }, 8, &efd, 1));
	assert_false(fd_is_open(efd));
	assert_int_equal(count_fds(), before);
	efd = eventfd(0, EFD_CLOEXEC);
	assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_CALL, V1,
				   &(uint64_t){ 1 | VHOST_USER_VRING_NOFD_MASK }, 8, &efd, 1));
	assert_int_equal(count_fds(), before);
	/* GET_FEATURES / SET_OWNER with fds. */
	efd = eventfd(0, EFD_CLOEXEC);
	assert_refused(a, dispatch(a, VHOST_USER_GET_FEATURES, NEED, NULL, 0, &efd, 1));
	assert_true(a->have_reply);
	assert_int_equal(a->reply.hdr.size, 8);
	assert_true(a->reply.payload.u64 != 0);	/* an ack, not the features */
	assert_int_equal(count_fds(), before);
	fds[0] = eventfd(0, EFD_CLOEXEC);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	assert_refused(a, dispatch(a, VHOST_USER_SET_OWNER, V1, NULL, 0, fds, 2));
	assert_int_equal(count_fds(), before);
	/* Wrong version and an fd: closed too. */
	efd = eventfd(0, EFD_CLOEXEC);
	assert_refused(a, dispatch(a, VHOST_USER_SET_VRING_KICK, 0, &(uint64_t){ 1 }, 8, &efd, 1));
	assert_int_equal(count_fds(), before);

	/* Accepted fds are kept, replaced ones closed, all closed on disconnect. */
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mine = dup(efd);
	assert_int_equal(send_u64_fd(a, VHOST_USER_SET_VRING_CALL, V1, 0, efd), 0);
	assert_true(fd_is_open(efd));
	assert_int_equal(a->v->vu.vqs[0].call_fd, efd);
	assert_works(a);
	/* The control queue's completion was signalled. */
	assert_int_equal(read(mine, &cnt, sizeof(cnt)), sizeof(cnt));
	assert_true(cnt >= 1);
	efd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(send_u64_fd(a, VHOST_USER_SET_VRING_KICK, V1, 0, efd), 0);
	assert_int_equal(a->v->vu.vqs[0].kick_fd, efd);
	efd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(send_u64_fd(a, VHOST_USER_SET_VRING_KICK, V1, 0, efd), 0);
	assert_int_equal(a->v->vu.vqs[0].kick_fd, efd);
	assert_int_equal(count_fds(), before + 3);	/* call, kick, mine */
	close(mine);
	vu_dev_disconnect(&a->v->vu);
	assert_int_equal(count_fds(), before - 2);	/* the regions' fds too */

	handshake(a);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* Kick, call and err fds that are not eventfds are refused, the queue's fd
 * unchanged: a blocking full pipe as a call fd would stall the worker in
 * write(), then the control thread in worker_quiesce (issue 15). An eventfd
 * given blocking is made non-blocking. */
static void test_eventfds(void **state)
{
	static const uint32_t reqs[] = {
		VHOST_USER_SET_VRING_KICK, VHOST_USER_SET_VRING_CALL, VHOST_USER_SET_VRING_ERR,
	};
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	char path[] = "/tmp/test_vhost.XXXXXX";
	int p[2], sp[2], file, tfd, efd, mine, *slot;
	unsigned int before, i, k;

	(void)state;
	handshake(a);
	handshake(b);
	/* A full pipe, blocking: as the attack gives it. */
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	while (write(p[1], path, sizeof(path)) > 0)
		;
	assert_int_equal(fcntl(p[1], F_SETFL, 0), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	file = mkostemp(path, O_CLOEXEC);
	assert_true(file >= 0);
	unlink(path);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	assert_true(tfd >= 0);

	for (i = 0; i < ARRAY_SIZE(reqs); i++) {
		const int bad[] = { p[0], p[1], file, sp[0], tfd, a->memfd };
		struct virtq *vq = &a->v->vu.vqs[0];

		before = count_fds();	/* the eventfds taken so far included */

		slot = reqs[i] == VHOST_USER_SET_VRING_KICK ? &vq->kick_fd :
		       reqs[i] == VHOST_USER_SET_VRING_CALL ? &vq->call_fd : &vq->err_fd;
		for (k = 0; k < ARRAY_SIZE(bad); k++) {
			int old = *slot, fd = dup(bad[k]);

			assert_true(fd >= 0);
			assert_refused(a, dispatch(a, reqs[i], NEED, &(uint64_t){ 0 }, 8, &fd, 1));
			assert_true(a->have_reply);
			assert_true(a->reply.payload.u64 != 0);
			assert_non_null(strstr(a->v->vu.last_error, "not an eventfd"));
			assert_int_equal(*slot, old);
			assert_int_equal(count_fds(), before);
		}
		assert_works(a);

		/* A blocking eventfd is taken, non-blocking from then on. */
		efd = eventfd(0, EFD_CLOEXEC);
		mine = dup(efd);
		assert_int_equal(fcntl(mine, F_GETFL) & O_NONBLOCK, 0);
		assert_int_equal(send_u64_fd(a, reqs[i], NEED, 0, efd), 0);
		assert_int_equal(a->reply.payload.u64, 0);
		assert_int_equal(*slot, efd);
		assert_true(fcntl(mine, F_GETFL) & O_NONBLOCK);
		close(mine);
		assert_works(a);
	}
	/* A call eventfd the driver never reads saturates; signalling it
	 * then must not block the control queue (it was given blocking). */
	efd = dup(a->v->vu.vqs[0].call_fd);
	assert_int_equal(read(efd, &(uint64_t){ 0 }, 8), 8);
	assert_int_equal(write(efd, &(uint64_t){ 0xfffffffffffffffeull }, 8), 8);
	assert_works(a);
	close(efd);

	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
	close(file);
	close(tfd);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- 5. memory tables ---- */

static void test_mem_table(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	struct vhost_user_mem_region r[9];
	unsigned int before, i;
	int fds[9], p[2], memfd2;
	uint8_t *mem2;

	(void)state;
	handshake(a);
	handshake(b);
	memfd2 = vhost_user_memfd("other", 1u << 16);
	assert_true(memfd2 >= 0);
	mem2 = mmap(NULL, 1u << 16, PROT_READ | PROT_WRITE, MAP_SHARED, memfd2, 0);
	assert_true(mem2 != MAP_FAILED);
	before = count_fds();

	/* 0 regions */
	assert_refused(a, send_mem_table(a, NEED, r, 0, NULL, 0));
	assert_true(a->reply.payload.u64 != 0);
	/* 9 regions (with 9 fds, more than a message can carry) */
	for (i = 0; i < 9; i++) {
		r[i] = main_region(a);
		fds[i] = dup(a->memfd);
	}
	assert_refused(a, send_mem_table(a, V1, r, 9, fds, 9));
	assert_int_equal(count_fds(), before);
	/* nregions and the payload size disagree */
	{
		union vhost_user_payload m = { .memory = { .nregions = 1 } };

		m.memory.regions[0] = main_region(a);
		fds[0] = dup(a->memfd);
		assert_refused(a, dispatch(a, VHOST_USER_SET_MEM_TABLE, V1, &m, 8 + 64, fds, 1));
		assert_int_equal(count_fds(), before);
	}
	/* memory_size 0 */
	r[0] = main_region(a);
	r[0].memory_size = 0;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	/* Overlapping guest-physical ranges */
	r[0] = main_region(a);
	r[1] = (struct vhost_user_mem_region){ GPA_BASE + MEM_SIZE - 4096, 1u << 16,
					       (uint64_t)(uintptr_t)mem2, 0 };
	fds[0] = dup(a->memfd);
	fds[1] = dup(memfd2);
	assert_refused(a, send_mem_table(a, V1, r, 2, fds, 2));
	/* Overlapping userspace ranges */
	r[1] = (struct vhost_user_mem_region){ GPA_BASE + 2 * MEM_SIZE, 1u << 16,
					       uva(a, MEM_SIZE - 4096), 0 };
	fds[0] = dup(a->memfd);
	fds[1] = dup(memfd2);
	assert_refused(a, send_mem_table(a, V1, r, 2, fds, 2));
	/* The same region twice */
	r[1] = r[0];
	fds[0] = dup(a->memfd);
	fds[1] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 2, fds, 2));
	/* A region that wraps 2^64: guest-physical, userspace, mmap offset. */
	r[0] = main_region(a);
	r[0].guest_phys_addr = 0xfffffffffff80000ull;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	r[0] = main_region(a);
	r[0].userspace_addr = 0xfffffffffff80000ull;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	r[0] = main_region(a);
	r[0].mmap_offset = 0xfffffffffff80000ull;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	r[0] = main_region(a);
	r[0].memory_size = UINT64_MAX;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	/* Not on a page: guest-physical, userspace, mmap offset (the host
	 * address of a ring word the guest aligned would not be aligned). */
	r[0] = main_region(a);
	r[0].guest_phys_addr += 2;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	r[0] = main_region(a);
	r[0].userspace_addr += 0x80;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	r[0] = main_region(a);
	r[0].mmap_offset = 15;
	r[0].memory_size -= 4096;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	assert_non_null(strstr(a->v->vu.last_error,
			       "region 0: address or offset not 4096-byte aligned (gpa 0x100000000, uva 0x"));
	assert_non_null(strstr(a->v->vu.last_error, ", offset 0xf)"));
	/* An fd that cannot be mmapped */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(p[1]);
	r[0] = main_region(a);
	assert_refused(a, send_mem_table(a, V1, r, 1, &p[0], 1));
	assert_false(fd_is_open(p[0]));
	/* An fd that is not one */
	fds[0] = -1;
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	/* A region past the end of its file: mmap succeeds, the first access
	 * would be a SIGBUS for the whole daemon (found by fuzz_vhost). */
	r[0] = main_region(a);
	r[0].mmap_offset = 8192;
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	assert_string_equal(a->v->vu.last_error,
			    "SET_MEM_TABLE: region 0 (4194304 bytes at offset 8192) goes past the end of its file (4194304 bytes)");
	assert_int_equal(count_fds(), before);

	/* None of that changed the table. */
	assert_int_equal(a->v->vu.mem.n, 1);
	assert_works(a);

	/* A replacement that still covers the rings. */
	assert_int_equal(send_main_mem_table(a, NEED), 0);
	assert_int_equal(a->reply.payload.u64, 0);
	assert_works(a);
	/* ... with a second region */
	r[0] = main_region(a);
	r[1] = (struct vhost_user_mem_region){ GPA_BASE + 2 * MEM_SIZE, 1u << 16,
					       (uint64_t)(uintptr_t)mem2, 0 };
	fds[0] = dup(a->memfd);
	fds[1] = dup(memfd2);
	assert_int_equal(send_mem_table(a, V1, r, 2, fds, 2), 0);
	assert_int_equal(a->v->vu.mem.n, 2);
	assert_works(a);
	/* ... moved in guest-physical space (the rings are found by uva) */
	r[0] = main_region(a);
	r[0].guest_phys_addr = 0x200000000ull;
	fds[0] = dup(a->memfd);
	assert_int_equal(send_mem_table(a, V1, r, 1, fds, 1), 0);
	assert_int_equal(a->v->vu.mem.r[0].gpa, 0x200000000ull);
	assert_int_equal(send_main_mem_table(a, V1), 0);
	assert_works(a);

	/* A replacement that drops the rings: refused, the old table kept. */
	r[0] = (struct vhost_user_mem_region){ GPA_BASE, 1u << 16, (uint64_t)(uintptr_t)mem2, 0 };
	fds[0] = dup(memfd2);
	assert_refused(a, send_mem_table(a, NEED, r, 1, fds, 1));
	assert_true(a->reply.payload.u64 != 0);
	assert_int_equal(a->v->vu.mem.n, 1);
	assert_int_equal(a->v->vu.mem.r[0].size, MEM_SIZE);
	/* A table that keeps the descriptors but cuts the used ring */
	r[0] = main_region(a);
	r[0].memory_size = USED_OFF + 8;	/* cuts queue 0's used ring */
	fds[0] = dup(a->memfd);
	assert_refused(a, send_mem_table(a, V1, r, 1, fds, 1));
	assert_int_equal(count_fds(), before);
	assert_works(a);

	assert_works(b);
	munmap(mem2, 1u << 16);
	close(memfd2);
	fx_free(a);
	fx_free(b);
}

/* A region's fd must be sealed against shrinking: a front end that
 * ftruncates its memory after SET_MEM_TABLE would SIGBUS the daemon at the
 * next access (issue 15). Refused with the table unchanged. */
static void test_mem_table_seals(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	struct vhost_user_mem_region r = main_region(a);
	struct guest_region old;
	char path[] = "/tmp/test_vhost.XXXXXX";
	unsigned int before, k;
	int fds[3], fd;

	(void)state;
	handshake(a);
	handshake(b);
	old = a->v->vu.mem.r[0];
	/* Our own fixture's memory cannot shrink. */
	assert_int_equal(ftruncate(a->memfd, MEM_SIZE / 2), -1);
	assert_int_equal(errno, EPERM);

	fds[0] = memfd_create("unsealed", MFD_CLOEXEC);		/* cannot be sealed */
	fds[1] = memfd_create("grow-only", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fds[2] = mkostemp(path, O_CLOEXEC);			/* a plain file */
	unlink(path);
	for (k = 0; k < ARRAY_SIZE(fds); k++) {
		assert_true(fds[k] >= 0);
		assert_int_equal(ftruncate(fds[k], MEM_SIZE), 0);
	}
	assert_int_equal(fcntl(fds[1], F_ADD_SEALS, F_SEAL_GROW), 0);
	before = count_fds();
	for (k = 0; k < ARRAY_SIZE(fds); k++) {
		fd = dup(fds[k]);
		assert_refused(a, send_mem_table(a, NEED, &r, 1, &fd, 1));
		assert_true(a->reply.payload.u64 != 0);
		assert_string_equal(a->v->vu.last_error, "SET_MEM_TABLE: region 0: its fd is not "
				    "sealed with F_SEAL_SHRINK; give a sealed memfd (QEMU: "
				    "memory-backend-memfd, seal=on)");
		assert_int_equal(count_fds(), before);
		assert_int_equal(a->v->vu.mem.n, 1);
		assert_ptr_equal(a->v->vu.mem.r[0].host, old.host);
		assert_int_equal(a->v->vu.mem.r[0].size, old.size);
		assert_works(a);
	}
	/* Sealed against shrinking, it is taken. */
	assert_int_equal(fcntl(fds[1], F_ADD_SEALS, F_SEAL_SHRINK), 0);
	fd = dup(fds[1]);
	assert_int_equal(send_mem_table(a, NEED, &r, 1, &fd, 1), 0);
	assert_int_equal(a->reply.payload.u64, 0);
	assert_true(a->v->vu.mem.r[0].host != old.host);

	for (k = 0; k < ARRAY_SIZE(fds); k++)
		close(fds[k]);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* Two regions that overlap at the very top of the address space (the first
 * ends exactly at 2^64, which does not wrap) must be refused like any other
 * overlap (docs/virtio-rdma.md section 1: "no overlap"). */
static void test_mem_table_overlap_at_top(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	struct vhost_user_mem_region r[2];
	int fds[2], memfd2;
	uint8_t *mem2;

	(void)state;
	handshake(a);
	handshake(b);
	memfd2 = vhost_user_memfd("other", 1u << 16);
	assert_true(memfd2 >= 0);
	mem2 = mmap(NULL, 1u << 16, PROT_READ | PROT_WRITE, MAP_SHARED, memfd2, 0);
	assert_true(mem2 != MAP_FAILED);

	/* r0 = [2^64 - 1 MiB, 2^64), r1 = [2^64 - 512 KiB, +64 KiB): inside r0. */
	r[0] = main_region(a);
	r[0].guest_phys_addr = 0ull - MEM_SIZE;
	r[1] = (struct vhost_user_mem_region){ 0ull - MEM_SIZE / 2, 1u << 16,
					       (uint64_t)(uintptr_t)mem2, 0 };
	fds[0] = dup(a->memfd);
	fds[1] = dup(memfd2);
	assert_refused(a, send_mem_table(a, V1, r, 2, fds, 2));

	munmap(mem2, 1u << 16);
	close(memfd2);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- 6. GET_VRING_BASE ---- */

static void test_vring_base(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	uint16_t head;
	unsigned int i;

	(void)state;
	handshake(a);
	handshake(b);
	/* A queue never set up */
	assert_int_equal(send_state(a, VHOST_USER_GET_VRING_BASE, V1, 3, 0), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.hdr.size, 8);
	assert_int_equal(a->reply.payload.state.index, 3);
	assert_int_equal(a->reply.payload.state.num, 0);

	for (i = 0; i < 3; i++)
		(void)create_pd(a);
	assert_int_equal(send_state(a, VHOST_USER_GET_VRING_BASE, NEED, 0, 0), 0);
	assert_true(a->have_reply);
	assert_int_equal(a->reply.hdr.size, 8);
	assert_int_equal(a->reply.payload.state.index, 0);
	assert_int_equal(a->reply.payload.state.num, 3);
	assert_false(recv_reply(a));	/* the answer is the ack */
	assert_false(a->v->vu.vqs[0].kicked);

	/* Stopped: a new request waits. */
	head = ctrl_submit(a, VIRTIO_CMD_CREATE_PD, NULL, 0, 4);
	assert_int_equal(poll_dev(a), 0);
	assert_int_equal(ctrl_reap(a, head, NULL, NULL), -1);
	assert_int_equal(ring_used(a, 0)->idx, 3);
	assert_false(vdev_want_kicks(a->v, true));
	/* Stopped, so it may be moved... */
	assert_int_equal(send_state(a, VHOST_USER_SET_VRING_BASE, V1, 0, 3), 0);
	/* ... and started again. */
	assert_int_equal(send_u64(a, VHOST_USER_SET_VRING_KICK, V1, VHOST_USER_VRING_NOFD_MASK), 0);
	assert_true(vdev_want_kicks(a->v, true));
	vdev_want_kicks(a->v, false);
	assert_true(poll_dev(a) > 0);
	assert_int_equal(ctrl_reap(a, head, NULL, NULL), VIRTIO_RDMA_OK);
	assert_int_equal(send_state(a, VHOST_USER_GET_VRING_BASE, V1, 0, 0), 0);
	assert_int_equal(a->reply.payload.state.num, 4);

	/* A restart from a base: SET_VRING_BASE then KICK resumes there. */
	assert_int_equal(send_u64(a, VHOST_USER_SET_VRING_KICK, V1, VHOST_USER_VRING_NOFD_MASK), 0);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- 7. virtqueue violations ---- */

struct violation {
	const char *name;
	void (*inject)(struct fx *f);
};

static void put_chain2(struct fx *f, struct vring_desc d0, struct vring_desc d1)
{
	ring_desc(f, 0)[0] = d0;
	ring_desc(f, 0)[1] = d1;
	post(f, 0);
}

static struct vring_desc rd_desc(uint16_t next)
{
	/* A CREATE_PD command byte at DATA_OFF */
	return (struct vring_desc){ gpa(DATA_OFF), 1, VRING_DESC_F_NEXT, next };
}

static struct vring_desc wr_desc(void)
{
	return (struct vring_desc){ gpa(DATA_OFF + 0x200), 16, VRING_DESC_F_WRITE, 0 };
}

static void v_head_out_of_range(struct fx *f)
{
	f->mem[DATA_OFF] = VIRTIO_CMD_CREATE_PD;
	ring_desc(f, 0)[0] = rd_desc(1);
	ring_desc(f, 0)[1] = wr_desc();
	post(f, RING_NUM);
}

static void v_head_way_out(struct fx *f)
{
	post(f, 0xffff);
}

static void v_loop(struct fx *f)
{
	put_chain2(f, (struct vring_desc){ gpa(DATA_OFF), 16, VRING_DESC_F_NEXT, 1 },
		   (struct vring_desc){ gpa(DATA_OFF), 16, VRING_DESC_F_NEXT, 0 });
}

static void v_self_loop_writable(struct fx *f)
{
	ring_desc(f, 0)[0] = rd_desc(1);
	ring_desc(f, 0)[1] = (struct vring_desc){ gpa(DATA_OFF + 0x200), 16,
						  VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1 };
	post(f, 0);
}

static void v_next_out_of_range(struct fx *f)
{
	put_chain2(f, rd_desc(RING_NUM), wr_desc());
}

static void v_indirect_len(struct fx *f)
{
	struct vring_desc *t = (struct vring_desc *)(f->mem + SCRATCH_OFF);

	t[0] = rd_desc(1);
	t[1] = wr_desc();
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(SCRATCH_OFF), 20, VRING_DESC_F_INDIRECT, 0 };
	post(f, 0);
}

static void v_indirect_empty(struct fx *f)
{
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(SCRATCH_OFF), 0, VRING_DESC_F_INDIRECT, 0 };
	post(f, 0);
}

static void v_indirect_nested(struct fx *f)
{
	struct vring_desc *t = (struct vring_desc *)(f->mem + SCRATCH_OFF);
	struct vring_desc *t2 = (struct vring_desc *)(f->mem + SCRATCH_OFF + 0x100);

	t2[0] = rd_desc(1);
	t2[1] = wr_desc();
	t[0] = (struct vring_desc){ gpa(SCRATCH_OFF + 0x100), 32, VRING_DESC_F_INDIRECT, 0 };
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(SCRATCH_OFF), 16, VRING_DESC_F_INDIRECT, 0 };
	post(f, 0);
}

static void v_indirect_outside(struct fx *f)
{
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(MEM_SIZE - 16), 32, VRING_DESC_F_INDIRECT, 0 };
	post(f, 0);
}

static void v_indirect_with_next(struct fx *f)
{
	struct vring_desc *t = (struct vring_desc *)(f->mem + SCRATCH_OFF);

	t[0] = rd_desc(1);
	t[1] = wr_desc();
	put_chain2(f, (struct vring_desc){ gpa(SCRATCH_OFF), 32,
					   VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1 },
		   wr_desc());
}

static void v_indirect_loop(struct fx *f)
{
	struct vring_desc *t = (struct vring_desc *)(f->mem + SCRATCH_OFF);

	t[0] = (struct vring_desc){ gpa(DATA_OFF), 1, VRING_DESC_F_NEXT, 1 };
	t[1] = (struct vring_desc){ gpa(DATA_OFF), 1, VRING_DESC_F_NEXT, 0 };
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(SCRATCH_OFF), 32, VRING_DESC_F_INDIRECT, 0 };
	post(f, 0);
}

static void v_addr_outside(struct fx *f)
{
	put_chain2(f, (struct vring_desc){ 0x5000, 16, VRING_DESC_F_NEXT, 1 }, wr_desc());
}

static void v_addr_past_end(struct fx *f)
{
	put_chain2(f, (struct vring_desc){ gpa(MEM_SIZE - 8), 16, VRING_DESC_F_NEXT, 1 },
		   wr_desc());
}

static void v_writable_addr_outside(struct fx *f)
{
	f->mem[DATA_OFF] = VIRTIO_CMD_CREATE_PD;
	put_chain2(f, rd_desc(1),
		   (struct vring_desc){ gpa(MEM_SIZE), 16, VRING_DESC_F_WRITE, 0 });
}

static void v_writable_then_readable(struct fx *f)
{
	put_chain2(f, (struct vring_desc){ gpa(DATA_OFF + 0x200), 16,
					   VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1 },
		   (struct vring_desc){ gpa(DATA_OFF), 1, 0, 0 });
}

static void v_avail_too_far(struct fx *f)
{
	f->mem[DATA_OFF] = VIRTIO_CMD_CREATE_PD;
	ring_desc(f, 0)[0] = rd_desc(1);
	ring_desc(f, 0)[1] = wr_desc();
	f->avail_idx += RING_NUM + 1;
	__atomic_store_n(&ring_avail(f, 0)->idx, f->avail_idx, __ATOMIC_RELEASE);
}

static void v_no_status_room(struct fx *f)
{
	f->mem[DATA_OFF] = VIRTIO_CMD_CREATE_PD;
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(DATA_OFF), 1, 0, 0 };
	post(f, 0);
}

static void v_too_many_bufs(struct fx *f)
{
	/* An indirect table of VIRTQ_MAX_IOV + 1 readable buffers. */
	struct vring_desc *t = (struct vring_desc *)(f->mem + SCRATCH_OFF);
	unsigned int i, n = VIRTQ_MAX_IOV + 2;

	for (i = 0; i < n - 1; i++)
		t[i] = (struct vring_desc){ gpa(DATA_OFF), 1, VRING_DESC_F_NEXT, (uint16_t)(i + 1) };
	t[n - 1] = wr_desc();
	ring_desc(f, 0)[0] = (struct vring_desc){ gpa(SCRATCH_OFF), n * 16, VRING_DESC_F_INDIRECT, 0 };
	post(f, 0);
}

static const struct violation violations[] = {
	{ "avail entry >= ring size", v_head_out_of_range },
	{ "avail entry 0xffff", v_head_way_out },
	{ "descriptor loop", v_loop },
	{ "writable descriptor pointing at itself", v_self_loop_writable },
	{ "next >= ring size", v_next_out_of_range },
	{ "indirect len not a multiple of 16", v_indirect_len },
	{ "indirect len 0", v_indirect_empty },
	{ "indirect inside indirect", v_indirect_nested },
	{ "indirect table outside memory", v_indirect_outside },
	{ "indirect with NEXT", v_indirect_with_next },
	{ "loop inside an indirect table", v_indirect_loop },
	{ "descriptor address outside memory", v_addr_outside },
	{ "descriptor runs past the end of memory", v_addr_past_end },
	{ "writable descriptor outside memory", v_writable_addr_outside },
	{ "writable then readable", v_writable_then_readable },
	{ "avail idx more than the ring size ahead", v_avail_too_far },
	{ "no writable descriptor for the status", v_no_status_room },
	{ "more than VIRTQ_MAX_IOV buffers", v_too_many_bufs },
};

static void test_violations(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	unsigned int i;

	(void)state;
	handshake(b);
	for (i = 0; i < ARRAY_SIZE(violations); i++) {
		uint64_t broken = a->v->stats.broken;
		uint16_t used;
		uint16_t head;

		print_message("violation: %s\n", violations[i].name);
		if (i == 0)
			handshake(a);
		else
			reconnect(a);
		used = ring_used(a, 0)->idx;
		violations[i].inject(a);
		poll_dev(a);
		if (!a->v->broken)
			fail_msg("%s: not marked broken", violations[i].name);
		assert_int_equal(a->v->stats.broken, broken + 1);
		assert_int_equal(ring_used(a, 0)->idx, used);
		assert_false(vdev_live(a->v));
		assert_false(vdev_want_kicks(a->v, true));
		/* Broken: nothing more is done. */
		head = ctrl_submit(a, VIRTIO_CMD_CREATE_PD, NULL, 0, 4);
		(void)head;
		assert_int_equal(poll_dev(a), 0);
		assert_int_equal(ring_used(a, 0)->idx, used);
		assert_int_equal(a->v->stats.broken, broken + 1);
		/* The other VM does not notice (its control queue is checked
		 * once all violations are done). */
		assert_false(b->v->broken);
		assert_true(vdev_live(b->v));
		assert_int_equal(b->v->stats.broken, 0);
	}
	assert_works(b);
	/* Disconnect and a fresh handshake: usable again. */
	reconnect(a);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* A well-formed indirect request works (and so does a chain of several
 * readable pieces). */
static void test_indirect_ok(void **state)
{
	struct fx *a = fx_new("vm-a", 1);
	struct vring_desc *t = (struct vring_desc *)(a->mem + SCRATCH_OFF);
	struct virtio_rdma_cmd_create_cq req = { htole32(16) };
	uint8_t *buf = a->mem + DATA_OFF;
	struct vring_used_elem e;

	(void)state;
	handshake(a);
	/* command byte and request split over two readable buffers */
	buf[0] = VIRTIO_CMD_CREATE_CQ;
	memcpy(buf + 0x10, &req, sizeof(req));
	memset(buf + 0x200, 0xee, 8);
	t[0] = (struct vring_desc){ gpa(DATA_OFF), 1, VRING_DESC_F_NEXT, 1 };
	t[1] = (struct vring_desc){ gpa(DATA_OFF + 0x10), 4, VRING_DESC_F_NEXT, 2 };
	t[2] = (struct vring_desc){ gpa(DATA_OFF + 0x200), 1, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 3 };
	t[3] = (struct vring_desc){ gpa(DATA_OFF + 0x201), 4, VRING_DESC_F_WRITE, 0 };
	ring_desc(a, 0)[5] = (struct vring_desc){ gpa(SCRATCH_OFF), 64, VRING_DESC_F_INDIRECT, 0 };
	post(a, 5);
	assert_true(poll_dev(a) > 0);
	assert_false(a->v->broken);
	assert_int_equal(ring_used(a, 0)->idx, 1);
	e = ring_used(a, 0)->ring[0];
	assert_int_equal(e.id, 5);
	assert_int_equal(e.len, 5);
	assert_int_equal(buf[0x200], VIRTIO_RDMA_OK);
	fx_free(a);
}

/* ---- 8. control commands ---- */

static void test_ctrl_commands(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	struct virtio_rdma_cmd_reg_user_mr mr;
	struct virtio_rdma_rsp_mr mrr;
	uint8_t rsp[256];
	uint32_t len, pdn, u32;
	uint64_t *pages;
	uint64_t errors;

	(void)state;
	handshake(a);
	handshake(b);

	/* CREATE_PD */
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_PD, NULL, 0, rsp, 4, &len), VIRTIO_RDMA_OK);
	assert_int_equal(len, 4);
	memcpy(&pdn, rsp, 4);
	pdn = le32toh(pdn);
	errors = a->v->stats.ctrl_errors;

	/* CREATE_CQ cqe 0 */
	u32 = 0;
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_CQ, &u32, 4, rsp, 4, &len), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(len, 0);
	/* DESTROY_PD 99 */
	u32 = htole32(99);
	assert_int_equal(ctrl(a, VIRTIO_CMD_DESTROY_PD, &u32, 4, rsp, 4, &len),
			 VIRTIO_RDMA_ERR_NOENT);
	u32 = htole32(0xffffffffu);
	assert_int_equal(ctrl(a, VIRTIO_CMD_DESTROY_PD, &u32, 4, rsp, 4, &len),
			 VIRTIO_RDMA_ERR_NOENT);
	/* Unknown commands */
	assert_int_equal(ctrl(a, 99, NULL, 0, rsp, 4, &len), VIRTIO_RDMA_ERR_UNSUPP);
	assert_int_equal(ctrl(a, 0, NULL, 0, rsp, 4, &len), VIRTIO_RDMA_ERR_UNSUPP);
	assert_int_equal(ctrl(a, VIRTIO_CMD_MAX, NULL, 0, rsp, 4, &len), VIRTIO_RDMA_ERR_UNSUPP);
	assert_int_equal(ctrl(a, 255, NULL, 0, rsp, 4, &len), VIRTIO_RDMA_ERR_UNSUPP);
	/* CREATE_CQ with a 2-byte request, or with 6 bytes */
	u32 = htole32(16);
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_CQ, &u32, 2, rsp, 4, &len), VIRTIO_RDMA_ERR_INVAL);
	{
		uint8_t six[6] = { 16, 0, 0, 0, 0, 0 };

		assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_CQ, six, 6, rsp, 4, &len),
				 VIRTIO_RDMA_ERR_INVAL);
	}
	/* Room for the status only: the response does not fit. */
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_CQ, &u32, 4, rsp, 0, &len), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_PD, NULL, 0, rsp, 3, &len), VIRTIO_RDMA_ERR_INVAL);
	/* A request too long for any command */
	{
		uint8_t huge[0x1f0];

		memset(huge, 0, sizeof(huge));
		assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_PD, huge, sizeof(huge), rsp, 4, &len),
				 VIRTIO_RDMA_ERR_INVAL);
	}
	assert_int_equal(a->v->stats.ctrl_errors, errors + 12);

	/* REG_USER_MR: the page list outside guest memory */
	memset(&mr, 0, sizeof(mr));
	mr.pdn = htole32(pdn);
	mr.access_flags = htole32(1);
	mr.start = htole64(0x7000000);
	mr.length = htole64(8192);
	mr.virt_addr = htole64(0x7000000);
	mr.npages = htole32(2);
	mr.pages = htole64(0x5000);
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_FAULT);
	mr.pages = htole64(gpa(MEM_SIZE - 8));	/* the second entry is past the end */
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_FAULT);
	/* A page not aligned */
	pages = (uint64_t *)(a->mem + SCRATCH_OFF);
	pages[0] = htole64(gpa(PAGES_OFF));
	pages[1] = htole64(gpa(PAGES_OFF + 4096 + 8));
	mr.pages = htole64(gpa(SCRATCH_OFF));
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_INVAL);
	/* A page outside guest memory */
	pages[1] = htole64(0x7000);
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_FAULT);
	/* A page that straddles the end of guest memory */
	pages[1] = htole64(gpa(MEM_SIZE));
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_FAULT);
	/* Too few pages for the length; no PD */
	pages[1] = htole64(gpa(PAGES_OFF + 4096));
	mr.npages = htole32(1);
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_INVAL);
	mr.npages = htole32(2);
	mr.pdn = htole32(77);
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_ERR_NOENT);
	/* A well-formed one, then DEREG */
	mr.pdn = htole32(pdn);
	assert_int_equal(ctrl(a, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), &mrr, 12, &len),
			 VIRTIO_RDMA_OK);
	assert_int_equal(len, sizeof(mrr));
	u32 = mrr.mrn;
	assert_int_equal(ctrl(a, VIRTIO_CMD_DEREG_MR, &u32, 4, rsp, 0, &len), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl(a, VIRTIO_CMD_DEREG_MR, &u32, 4, rsp, 0, &len), VIRTIO_RDMA_ERR_NOENT);
	/* DESTROY_PD of the real one */
	u32 = htole32(pdn);
	assert_int_equal(ctrl(a, VIRTIO_CMD_DESTROY_PD, &u32, 4, rsp, 0, &len), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl(a, VIRTIO_CMD_DESTROY_PD, &u32, 4, rsp, 0, &len),
			 VIRTIO_RDMA_ERR_NOENT);

	/* A request with no readable part: INVAL, not a violation. */
	{
		struct vring_desc *d = ring_desc(a, 0);
		uint16_t used = ring_used(a, 0)->idx;

		d[6] = (struct vring_desc){ gpa(DATA_OFF + 0x200), 8, VRING_DESC_F_WRITE, 0 };
		a->mem[DATA_OFF + 0x200] = 0xee;
		post(a, 6);
		poll_dev(a);
		assert_false(a->v->broken);
		assert_int_equal(ring_used(a, 0)->idx, (uint16_t)(used + 1));
		assert_int_equal(ring_used(a, 0)->ring[used % RING_NUM].id, 6);
		assert_int_equal(ring_used(a, 0)->ring[used % RING_NUM].len, 1);
		assert_int_equal(a->mem[DATA_OFF + 0x200], VIRTIO_RDMA_ERR_INVAL);
		a->used_seen++;
	}

	assert_false(a->v->broken);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- 8b. page lists and MRs within the VM's limits ---- */

/* REG_USER_MR of n pages from BIG_OFF's list (PAGES_OFF's first and third
 * pages in turn: none contiguous); its status, *mrn on success. */
static int reg_scattered(struct fx *f, uint32_t pdn, uint32_t n, uint32_t *mrn)
{
	struct virtio_rdma_cmd_reg_user_mr q = {
		.pdn = htole32(pdn), .access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE),
		.length = htole64((uint64_t)n * 4096), .pages = htole64(gpa(BIG_OFF)),
		.npages = htole32(n),
	};
	struct virtio_rdma_rsp_mr r = { 0 };
	int st;

	st = ctrl(f, VIRTIO_CMD_REG_USER_MR, &q, sizeof(q), &r, sizeof(r), NULL);
	if (mrn)
		*mrn = le32toh(r.mrn);
	return st;
}

static int dereg(struct fx *f, uint32_t mrn)
{
	uint32_t q = htole32(mrn);

	return ctrl(f, VIRTIO_CMD_DEREG_MR, &q, sizeof(q), NULL, 0, NULL);
}

static void fill_big_list(struct fx *f)
{
	uint64_t *list = (uint64_t *)(f->mem + BIG_OFF);
	uint32_t i;

	for (i = 0; i < (MEM_SIZE - BIG_OFF) / 8; i++)
		list[i] = htole64(gpa(PAGES_OFF + (i % 2) * 8192));
}

static void test_mr_limits(void **state)
{
	struct fx *a = fx_new_mr_limits("vm-a", 1, 4, 1000), *b = fx_new("vm-b", 2);
	struct virtio_rdma_cmd_create_mr cm = { .max_num_sg = htole32(1001) };
	struct virtio_rdma_cmd_map_mr_sg map = { 0 };
	struct virtio_rdma_rsp_map_mr_sg mr_rsp;
	struct virtio_rdma_rsp_mr r;
	struct virtio_rdma_config cfg;
	uint32_t pdn, m1, m2, fast, m[4], i;

	(void)state;
	handshake(a);
	handshake(b);
	fill_big_list(a);
	pdn = create_pd(a);

	/* The config space says the VM's limits. */
	read_config(a, &cfg);
	assert_int_equal(le32toh(cfg.max_mr), 4);
	assert_int_equal(le32toh(cfg.max_fast_reg_page_list_len), 1000);
	read_config(b, &cfg);
	assert_int_equal(le32toh(cfg.max_mr), VRDMA_CONF_DEFAULT_MAX_MR);
	assert_int_equal(le32toh(cfg.max_fast_reg_page_list_len), VDEV_MAX_PAGES);

	/* Pages: 600 + 400 fit in 1000; one more does not. */
	assert_int_equal(reg_scattered(a, pdn, 600, &m1), VIRTIO_RDMA_OK);
	assert_int_equal(reg_scattered(a, pdn, 600, NULL), VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(a->v->stats.refused_mrs, 1);
	assert_int_equal(reg_scattered(a, pdn, 400, &m2), VIRTIO_RDMA_OK);
	assert_int_equal(reg_scattered(a, pdn, 1, NULL), VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(a->v->stats.refused_mrs, 2);
	/* CREATE_MR: past max_fast_reg_page_list_len is INVAL, past the
	 * budget NOMEM; max_num_sg is reserved until DEREG. */
	cm.pdn = htole32(pdn);
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_MR, &cm, sizeof(cm), &r, sizeof(r), NULL),
			 VIRTIO_RDMA_ERR_INVAL);
	cm.max_num_sg = htole32(1);
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_MR, &cm, sizeof(cm), &r, sizeof(r), NULL),
			 VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(a->v->stats.refused_mrs, 3);
	assert_int_equal(dereg(a, m1), VIRTIO_RDMA_OK);
	cm.max_num_sg = htole32(600);
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_MR, &cm, sizeof(cm), &r, sizeof(r), NULL),
			 VIRTIO_RDMA_OK);
	fast = le32toh(r.mrn);
	assert_int_equal(reg_scattered(a, pdn, 1, NULL), VIRTIO_RDMA_ERR_NOMEM);
	map.mrn = htole32(fast);
	map.npages = htole32(600);
	map.length = htole64(600 * 4096);
	map.pages = htole64(gpa(BIG_OFF));
	assert_int_equal(ctrl(a, VIRTIO_CMD_MAP_MR_SG, &map, sizeof(map), &mr_rsp, sizeof(mr_rsp),
			      NULL), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl(a, VIRTIO_CMD_MAP_MR_SG, &map, sizeof(map), &mr_rsp, sizeof(mr_rsp),
			      NULL), VIRTIO_RDMA_OK);
	assert_int_equal(a->v->stats.refused_mrs, 4);
	assert_int_equal(dereg(a, fast), VIRTIO_RDMA_OK);
	assert_int_equal(dereg(a, m2), VIRTIO_RDMA_OK);
	assert_int_equal(a->v->mr_pages, 0);

	/* MRs: 4, whatever their kind; the fifth is refused. */
	assert_int_equal(reg_scattered(a, pdn, 1000, &m[0]), VIRTIO_RDMA_OK);
	for (i = 1; i < 4; i++) {
		struct virtio_rdma_cmd_get_dma_mr dq = { .pdn = htole32(pdn), .access_flags = 1 };

		assert_int_equal(ctrl(a, VIRTIO_CMD_GET_DMA_MR, &dq, sizeof(dq), &r, sizeof(r), NULL),
				 VIRTIO_RDMA_OK);
		m[i] = le32toh(r.mrn);
	}
	cm.max_num_sg = htole32(1);
	assert_int_equal(dereg(a, m[0]), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl(a, VIRTIO_CMD_CREATE_MR, &cm, sizeof(cm), &r, sizeof(r), NULL),
			 VIRTIO_RDMA_OK);
	m[0] = le32toh(r.mrn);
	assert_int_equal(reg_scattered(a, pdn, 1, NULL), VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(a->v->stats.refused_mrs, 5);
	for (i = 0; i < 4; i++)
		assert_int_equal(dereg(a, m[i]), VIRTIO_RDMA_OK);
	/* Everything given back: the whole budget in one MR again. */
	assert_int_equal(reg_scattered(a, pdn, 1000, &m1), VIRTIO_RDMA_OK);
	/* Refusals are errors too, and only this VM's. */
	assert_true(a->v->stats.ctrl_errors >= 5);
	assert_int_equal(b->v->stats.refused_mrs, 0);
	/* A reset frees the MRs and their pages (ASan: nothing leaks). */
	reconnect(a);
	assert_int_equal(a->v->mr_pages, 0);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* One poll reads at most VDEV_POLL_PAGES page entries (plus one command's):
 * a VM's heavy page lists wait for the next poll, the other devices of its
 * worker get their turn in between. */
static void test_poll_pages(void **state)
{
	const uint32_t n = VDEV_POLL_PAGES / 4 * 3;
	struct virtio_rdma_cmd_reg_user_mr q = {
		.access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE),
		.length = htole64((uint64_t)n * 4096), .pages = htole64(gpa(BIG_OFF)),
		.npages = htole32(n),
	};
	struct fx *a = fx_new("vm-a", 1);
	uint16_t head[3];
	uint32_t len, i;

	(void)state;
	assert_true(BIG_OFF + n * 8ull <= MEM_SIZE);
	handshake(a);
	fill_big_list(a);
	q.pdn = htole32(create_pd(a));
	for (i = 0; i < 3; i++)
		head[i] = ctrl_submit(a, VIRTIO_CMD_REG_USER_MR, &q, sizeof(q),
				      sizeof(struct virtio_rdma_rsp_mr));
	assert_int_equal(poll_dev(a), 2);
	assert_int_equal(ctrl_reap(a, head[0], NULL, &len), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl_reap(a, head[1], NULL, &len), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl_reap(a, head[2], NULL, &len), -1);
	assert_int_equal(poll_dev(a), 1);
	assert_int_equal(ctrl_reap(a, head[2], NULL, &len), VIRTIO_RDMA_OK);
	assert_int_equal(a->v->mr_pages, 3 * n);
	fx_free(a);
}

/* ---- 9. freeing a device with resources ---- */

static void make_resources(struct fx *f)
{
	struct virtio_rdma_cmd_reg_user_mr mr;
	struct virtio_rdma_cmd_create_qp qp;
	uint8_t rsp[64];
	uint32_t len, pdn, cqn, u32;
	uint64_t *pages = (uint64_t *)(f->mem + SCRATCH_OFF);

	pdn = create_pd(f);
	u32 = htole32(16);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_CQ, &u32, 4, rsp, 4, &len), VIRTIO_RDMA_OK);
	assert_int_equal(len, 4);
	memcpy(&cqn, rsp, 4);
	cqn = le32toh(cqn);
	assert_true(cqn < MAX_CQ);

	pages[0] = htole64(gpa(PAGES_OFF));
	pages[1] = htole64(gpa(PAGES_OFF + 4096));
	memset(&mr, 0, sizeof(mr));
	mr.pdn = htole32(pdn);
	mr.access_flags = htole32(1);
	mr.start = htole64(0x7000000);
	mr.length = htole64(8192);
	mr.virt_addr = htole64(0x7000000);
	mr.npages = htole32(2);
	mr.pages = htole64(gpa(SCRATCH_OFF));
	assert_int_equal(ctrl(f, VIRTIO_CMD_REG_USER_MR, &mr, sizeof(mr), rsp, 12, &len),
			 VIRTIO_RDMA_OK);
	assert_int_equal(len, 12);

	memset(&qp, 0, sizeof(qp));
	qp.pdn = htole32(pdn);
	qp.qp_type = VIRTIO_IB_QPT_RC;
	qp.sq_sig_type = VIRTIO_IB_SIGNAL_ALL_WR;
	qp.max_send_wr = htole32(4);
	qp.max_recv_wr = htole32(4);
	qp.max_send_sge = htole32(1);
	qp.max_recv_sge = htole32(1);
	qp.send_cqn = htole32(cqn);
	qp.recv_cqn = htole32(cqn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_QP, &qp, sizeof(qp), rsp, 8, &len),
			 VIRTIO_RDMA_OK);
	assert_int_equal(len, 8);
	memcpy(&u32, rsp, 4);
	assert_true(le32toh(u32) >= VIRTIO_RDMA_FIRST_QPN && le32toh(u32) <= VIRTIO_RDMA_LAST_QPN);
	memcpy(&u32, rsp + 4, 4);
	assert_true(le32toh(u32) < MAX_QP);	/* qp_index */
	/* PD busy with an MR and a QP */
	u32 = htole32(pdn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_DESTROY_PD, &u32, 4, rsp, 0, &len), VIRTIO_RDMA_ERR_BUSY);
}

static void test_free_with_resources(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2), *c = fx_new("vm-c", 3);

	(void)state;
	handshake(a);
	handshake(b);
	handshake(c);
	make_resources(a);
	make_resources(b);
	make_resources(c);
	/* a: freed as is; b: broken first; c: disconnected, reconnected, again. */
	fx_free(a);
	post(b, RING_NUM);
	poll_dev(b);
	assert_true(b->v->broken);
	fx_free(b);
	reconnect(c);
	make_resources(c);
	assert_works(c);
	fx_free(c);
}

/* RESET_OWNER: back to a new connection's state, the device's resources
 * gone; a fresh handshake works. RESET_DEVICE (what QEMU sends when the
 * guest resets the device): the resources gone and every ring stopped, but
 * ownership, features and memory kept (vhost-user.rst), so the rings alone
 * are set up again. */
static void test_reset(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	static const uint32_t resets[] = { VHOST_USER_RESET_DEVICE, VHOST_USER_RESET_OWNER };
	unsigned int i, before;
	uint8_t rsp[4];
	uint32_t len, u32;

	(void)state;
	handshake(b);
	before = count_fds();
	for (i = 0; i < ARRAY_SIZE(resets); i++) {
		int efd = eventfd(0, EFD_CLOEXEC);
		bool full = resets[i] == VHOST_USER_RESET_OWNER;

		if (i == 0)
			handshake(a);
		else
			reconnect(a);
		assert_int_equal(send_u64_fd(a, VHOST_USER_SET_VRING_CALL, V1, 0, efd), 0);
		make_resources(a);
		assert_int_equal(send_none(a, resets[i], NEED), 0);
		assert_int_equal(a->reply.payload.u64, 0);
		assert_int_equal(a->v->vu.owner, !full);
		assert_int_equal(a->v->vu.mem.n == 0, full);
		assert_int_equal(a->v->vu.protocol_features == 0, full);
		assert_int_equal(a->v->vu.vqs[0].num, 0);
		assert_int_equal(a->v->vu.vqs[0].call_fd, -1);
		if (full)
			assert_int_equal(count_fds(), before);
		assert_int_equal(poll_dev(a), 0);
		if (full) {
			/* Ring messages need SET_OWNER again. */
			assert_refused(a, send_state(a, VHOST_USER_SET_VRING_NUM, V1, 0, RING_NUM));
		} else {
			/* ... not after RESET_DEVICE: the owner stays */
			assert_int_equal(send_state(a, VHOST_USER_SET_VRING_NUM, V1, 0, RING_NUM), 0);
		}
		handshake(a);
		/* The old PD is gone: the new one reuses nothing stale. */
		u32 = htole32(0);
		assert_int_equal(ctrl(a, VIRTIO_CMD_DESTROY_PD, &u32, 4, rsp, 0, &len),
				 VIRTIO_RDMA_ERR_NOENT);
		make_resources(a);
	}
	/* A broken device is usable again after a reset too. */
	post(a, RING_NUM);
	poll_dev(a);
	assert_true(a->v->broken);
	assert_int_equal(send_none(a, VHOST_USER_RESET_DEVICE, V1), 0);
	assert_false(a->v->broken);
	handshake(a);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- 9b. a slot's queues when its QP or CQ goes (issue 17) ---- */

/* Buffer i of queue q (descriptor i points at it). */
#define QBUF_OFF(q, i)	(SCRATCH_OFF + (uint64_t)(q) * 0x1000u + (uint64_t)(i) * 0x100u)
#define CQ_BUF_LEN	64u
#define CANARY		0xa5

static unsigned int sq_of(uint32_t k)
{
	return VIRTIO_RDMA_SQ_VQ(MAX_CQ, k);
}

static unsigned int rq_of(uint32_t k)
{
	return VIRTIO_RDMA_RQ_VQ(MAX_CQ, k);
}

/* As the driver: buffer i of queue q made available, len bytes. */
static void post_buf(struct fx *f, unsigned int q, uint16_t i, uint32_t len, bool writable)
{
	struct vring_avail *a = ring_avail(f, q);
	uint16_t idx = a->idx;

	assert_true(i < RING_NUM);
	ring_desc(f, q)[i] = (struct vring_desc){ gpa(QBUF_OFF(q, i)), len,
						  writable ? VRING_DESC_F_WRITE : 0, 0 };
	a->ring[idx % RING_NUM] = i;
	__atomic_store_n(&a->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
}

/* A signalled zero-length SEND, wr_id = 0x5e00 + i. */
static void post_send_wqe(struct fx *f, uint32_t k, uint16_t i)
{
	struct virtio_rdma_cmd_post_send w = {
		.send_flags = htole32(VIRTIO_IB_SEND_SIGNALED),
		.opcode = htole32(VIRTIO_IB_WR_SEND), .wr_id = htole64(0x5e00u + i),
	};

	memcpy(f->mem + QBUF_OFF(sq_of(k), i), &w, sizeof(w));
	post_buf(f, sq_of(k), i, sizeof(w), false);
}

/* A receive without SGEs, wr_id = 0x4e00 + i. */
static void post_recv_wqe(struct fx *f, uint32_t k, uint16_t i)
{
	struct virtio_rdma_cmd_post_recv w = { .wr_id = htole64(0x4e00u + i) };

	memcpy(f->mem + QBUF_OFF(rq_of(k), i), &w, sizeof(w));
	post_buf(f, rq_of(k), i, sizeof(w), false);
}

/* A CQ buffer, filled with a canary the device must not touch unless it
 * writes a CQE there. */
static void post_cq_buf(struct fx *f, uint32_t cqn, uint16_t i)
{
	unsigned int q = VIRTIO_RDMA_CQ_VQ(cqn);

	memset(f->mem + QBUF_OFF(q, i), CANARY, CQ_BUF_LEN);
	post_buf(f, q, i, CQ_BUF_LEN, true);
}

/* CQ buffers [0, n) still hold their canary. */
static void assert_cq_bufs_untouched(struct fx *f, uint32_t cqn, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *b = f->mem + QBUF_OFF(VIRTIO_RDMA_CQ_VQ(cqn), i);

		for (unsigned int j = 0; j < CQ_BUF_LEN; j++)
			if (b[j] != CANARY)
				fail_msg("CQ %u: buffer %u written at byte %u", cqn, i, j);
	}
}

static uint16_t used_idx(struct fx *f, unsigned int q)
{
	return __atomic_load_n(&ring_used(f, q)->idx, __ATOMIC_ACQUIRE);
}

/* Queue q's used entries [from, to) return buffers first, first + 1, ...
 * each with length 0: given back, not executed. */
static void assert_returned(struct fx *f, unsigned int q, uint16_t from, uint16_t to,
			    uint16_t first)
{
	const struct vring_used *u = ring_used(f, q);

	if (used_idx(f, q) != to)
		fail_msg("queue %u: %u buffers in the used ring, want %u (the device took %u)", q,
			 used_idx(f, q), to, f->v->vu.vqs[q].last_avail);
	for (uint16_t j = from; j != to; j++)
		if (u->ring[j % RING_NUM].id != (uint16_t)(first + j - from) % RING_NUM ||
		    u->ring[j % RING_NUM].len)
			fail_msg("queue %u: used entry %u is buffer %u length %u, want %u length 0",
				 q, j, u->ring[j % RING_NUM].id, u->ring[j % RING_NUM].len,
				 (uint16_t)(first + j - from) % RING_NUM);
}

/* How often the eventfd was signalled since the last look. */
static uint64_t signalled(int efd)
{
	uint64_t n = 0;

	if (read(efd, &n, sizeof(n)) != sizeof(n))
		return 0;
	return n;
}

/* A call eventfd on queue q; ours to read. */
static int call_fd(struct fx *f, unsigned int q)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), theirs = dup(efd);

	assert_true(efd >= 0 && theirs >= 0);
	assert_int_equal(send_u64_fd(f, VHOST_USER_SET_VRING_CALL, V1, q, theirs), 0);
	return efd;
}

static uint32_t create_cq(struct fx *f, uint32_t cqe)
{
	struct virtio_rdma_cmd_create_cq q = { htole32(cqe) };
	struct virtio_rdma_rsp_create_cq r;
	uint32_t len;

	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_CQ, &q, sizeof(q), &r, sizeof(r), &len),
			 VIRTIO_RDMA_OK);
	assert_true(le32toh(r.cqn) < MAX_CQ);
	return le32toh(r.cqn);
}

static void destroy(struct fx *f, uint8_t cmd, uint32_t handle)
{
	uint32_t h = htole32(handle), len;

	assert_int_equal(ctrl(f, cmd, &h, sizeof(h), NULL, 0, &len), VIRTIO_RDMA_OK);
}

/* A CQ in slot n: the device spreads reuse, so others are made and
 * destroyed until one lands there. */
static uint32_t create_cq_in(struct fx *f, uint32_t cqe, uint32_t n)
{
	for (unsigned int i = 0; i < 2 * MAX_CQ; i++) {
		uint32_t cqn = create_cq(f, cqe);

		if (cqn == n)
			return cqn;
		destroy(f, VIRTIO_CMD_DESTROY_CQ, cqn);
	}
	fail_msg("no CQ landed in slot %u", n);
	return 0;
}

/* An RC QP on cqn, max_send_wr = max_recv_wr = 2, no SGEs; its qpn, *k
 * its slot. */
static uint32_t create_qp(struct fx *f, uint32_t pdn, uint32_t cqn, uint32_t *k)
{
	struct virtio_rdma_cmd_create_qp q = {
		.pdn = htole32(pdn), .qp_type = VIRTIO_IB_QPT_RC,
		.sq_sig_type = VIRTIO_IB_SIGNAL_ALL_WR, .max_send_wr = htole32(2),
		.max_recv_wr = htole32(2), .send_cqn = htole32(cqn), .recv_cqn = htole32(cqn),
	};
	struct virtio_rdma_rsp_create_qp r;
	uint32_t len;

	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_QP, &q, sizeof(q), &r, sizeof(r), &len),
			 VIRTIO_RDMA_OK);
	*k = le32toh(r.qp_index);
	assert_true(*k < MAX_QP);
	return le32toh(r.qpn);
}

static uint32_t create_qp_in(struct fx *f, uint32_t pdn, uint32_t cqn, uint32_t k)
{
	for (unsigned int i = 0; i < 2 * MAX_QP; i++) {
		uint32_t got, qpn = create_qp(f, pdn, cqn, &got);

		if (got == k)
			return qpn;
		destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	}
	fail_msg("no QP landed in slot %u", k);
	return 0;
}

static void modify_qp(struct fx *f, uint32_t qpn, uint32_t mask, struct virtio_rdma_qp_attr *a)
{
	struct virtio_rdma_cmd_modify_qp m = { htole32(qpn), htole32(mask), *a };
	uint32_t len;

	assert_int_equal(ctrl(f, VIRTIO_CMD_MODIFY_QP, &m, sizeof(m), NULL, 0, &len),
			 VIRTIO_RDMA_OK);
}

/* INIT, then RTR and RTS towards ::ffff:10.0.0.2 (the wire never takes a
 * frame; retransmission off: timeout 0). */
static void qp_up(struct fx *f, uint32_t qpn, enum virtio_ib_qp_state to)
{
	struct virtio_rdma_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = htole32(VIRTIO_IB_ACCESS_LOCAL_WRITE);
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_PKEY_INDEX | VIRTIO_IB_QP_PORT |
		  VIRTIO_IB_QP_ACCESS_FLAGS, &a);
	if (to == VIRTIO_IB_QPS_INIT)
		return;
	a.qp_state = VIRTIO_IB_QPS_RTR;
	memcpy(a.ah_attr.grh.dgid, vm_gid, 16);
	a.ah_attr.grh.dgid[15] = 2;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.ah_flags = VIRTIO_IB_AH_GRH;
	a.ah_attr.port_num = 1;
	a.path_mtu = VIRTIO_IB_MTU_1024;
	a.dest_qp_num = htole32(0x123);
	a.max_dest_rd_atomic = 1;
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_AV | VIRTIO_IB_QP_PATH_MTU |
		  VIRTIO_IB_QP_DEST_QPN | VIRTIO_IB_QP_RQ_PSN | VIRTIO_IB_QP_MAX_DEST_RD_ATOMIC |
		  VIRTIO_IB_QP_MIN_RNR_TIMER, &a);
	a.qp_state = VIRTIO_IB_QPS_RTS;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE | VIRTIO_IB_QP_SQ_PSN | VIRTIO_IB_QP_TIMEOUT |
		  VIRTIO_IB_QP_RETRY_CNT | VIRTIO_IB_QP_RNR_RETRY | VIRTIO_IB_QP_MAX_QP_RD_ATOMIC,
		  &a);
}

/* A device with a PD and a CQ (slot *cqn) whose queue holds 4 buffers, and
 * every queue set up. */
static struct fx *slot_fx(uint32_t *pdn, uint32_t *cqn)
{
	struct fx *f = fx_new("vm-a", 1);

	handshake(f);
	for (unsigned int q = 1; q < N_VQS; q++)
		setup_ring(f, q);
	*pdn = create_pd(f);
	*cqn = create_cq(f, 64);
	for (uint16_t i = 0; i < 4; i++)
		post_cq_buf(f, *cqn, i);
	return f;
}

/* Nothing ran since *was: no WQE taken or refused, no CQE, no frame. */
static void assert_nothing_ran(struct fx *f, const struct vdev_stats *was, unsigned int tries)
{
	const struct vdev_stats *s = &f->v->stats;

	if (s->send_wqes != was->send_wqes || s->recv_wqes != was->recv_wqes ||
	    s->refused_wqes != was->refused_wqes || s->cqes != was->cqes || tx_tries != tries)
		fail_msg("work ran: %" PRIu64 " send and %" PRIu64 " receive WQEs taken, %" PRIu64
			 " refused, %" PRIu64 " CQEs written, %u frames tried",
			 s->send_wqes - was->send_wqes, s->recv_wqes - was->recv_wqes,
			 s->refused_wqes - was->refused_wqes, s->cqes - was->cqes, tx_tries - tries);
	assert_false(f->v->broken);
}

static void post_wqe(struct fx *f, uint32_t k, uint16_t i, bool recv)
{
	if (recv)
		post_recv_wqe(f, k, i);
	else
		post_send_wqe(f, k, i);
}

static uint64_t wqes_taken(const struct vdev_stats *s, bool recv)
{
	return recv ? s->recv_wqes : s->send_wqes;
}

/* WQEs past max_send_wr (max_recv_wr) wait in the SQ (RQ); DESTROY_QP gives
 * every one back (used, length 0, the call eventfd signalled) and the next
 * QP of the slot runs none of them. */
static void destroy_qp_returns(bool recv)
{
	uint32_t pdn, cqn, k, qpn;
	struct fx *f = slot_fx(&pdn, &cqn);
	struct vdev_stats was;
	unsigned int q, tries;
	int efd;

	qpn = create_qp(f, pdn, cqn, &k);
	q = recv ? rq_of(k) : sq_of(k);
	efd = call_fd(f, q);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	for (uint16_t i = 0; i < 5; i++)
		post_wqe(f, k, i, recv);
	poll_dev(f);
	/* Two taken (sends wait for the wire, receives for a message); three
	 * wait in the ring. */
	assert_int_equal(wqes_taken(&f->v->stats, recv), 2);
	assert_returned(f, q, 0, 2, 0);
	assert_int_equal(signalled(efd), 1);
	assert_int_equal(f->v->stats.interrupts, 1);	/* that one, counted */

	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	/* At the response: the queue is empty, all five are back. */
	assert_returned(f, q, 0, 5, 0);
	assert_int_equal(signalled(efd), 1);
	was = f->v->stats;
	tries = tx_tries;

	/* The next QP of the slot, ready to work: none of the old WQEs runs. */
	qpn = create_qp_in(f, pdn, cqn, k);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	for (unsigned int i = 0; i < 4; i++)
		poll_dev(f);
	assert_nothing_ran(f, &was, tries);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_CQ_VQ(cqn)), 0);
	assert_int_equal(used_idx(f, q), 5);
	assert_cq_bufs_untouched(f, cqn, 4);

	/* Its own WQEs it does take. */
	post_wqe(f, k, 5, recv);
	poll_dev(f);
	assert_int_equal(wqes_taken(&f->v->stats, recv), wqes_taken(&was, recv) + 1);
	assert_returned(f, q, 5, 6, 5);
	close(efd);
	fx_free(f);
}

static void test_destroy_qp_returns_sq(void **state)
{
	(void)state;
	destroy_qp_returns(false);
}

static void test_destroy_qp_returns_rq(void **state)
{
	(void)state;
	destroy_qp_returns(true);
}

/* A CQ's buffers: DESTROY_CQ gives every one back unwritten (length 0,
 * no interrupt even when armed); the next CQ of the slot writes its CQEs
 * only into buffers posted after it was created. */
static void test_destroy_cq_returns_buffers(void **state)
{
	struct virtio_rdma_cmd_req_notify arm = { 0, htole32(VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION) };
	uint32_t pdn, cqn, k, qpn, len;
	struct fx *f = slot_fx(&pdn, &cqn);
	unsigned int q = VIRTIO_RDMA_CQ_VQ(cqn);
	struct virtio_rdma_cqe cqe;
	int efd = call_fd(f, q);

	(void)state;
	arm.cqn = htole32(cqn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_REQ_NOTIFY_CQ, &arm, sizeof(arm), NULL, 0, &len),
			 VIRTIO_RDMA_OK);
	poll_dev(f);
	assert_int_equal(used_idx(f, q), 0);

	destroy(f, VIRTIO_CMD_DESTROY_CQ, cqn);
	assert_returned(f, q, 0, 4, 0);
	assert_cq_bufs_untouched(f, cqn, 4);
	assert_int_equal(signalled(efd), 0);

	/* The next CQ of the slot gets a completion (a SEND refused in RESET)
	 * while the driver has given it no buffer: it waits. */
	cqn = create_cq_in(f, 64, cqn);
	qpn = create_qp(f, pdn, cqn, &k);
	(void)qpn;
	post_send_wqe(f, k, 0);
	for (unsigned int i = 0; i < 4; i++)
		poll_dev(f);
	assert_cq_bufs_untouched(f, cqn, 4);
	assert_int_equal(f->v->stats.refused_wqes, 1);
	assert_int_equal(f->v->stats.cqes, 0);
	assert_int_equal(used_idx(f, q), 4);

	/* A buffer of its own: the CQE lands there. */
	post_cq_buf(f, cqn, 4);
	poll_dev(f);
	assert_int_equal(used_idx(f, q), 5);
	assert_int_equal(ring_used(f, q)->ring[4].id, 4);
	assert_int_equal(ring_used(f, q)->ring[4].len, sizeof(cqe));
	memcpy(&cqe, f->mem + QBUF_OFF(q, 4), sizeof(cqe));
	assert_int_equal(le64toh(cqe.wr_id), 0x5e00);
	assert_cq_bufs_untouched(f, cqn, 4);

	/* Unarmed, it raised no interrupt; armed, its next completion (the
	 * next WQE, flushed) raises one, counted. */
	assert_int_equal(signalled(efd), 0);
	assert_int_equal(f->v->stats.cq_interrupts, 0);
	arm.cqn = htole32(cqn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_REQ_NOTIFY_CQ, &arm, sizeof(arm), NULL, 0, &len),
			 VIRTIO_RDMA_OK);
	post_send_wqe(f, k, 1);
	post_cq_buf(f, cqn, 5);
	poll_dev(f);
	poll_dev(f);
	assert_int_equal(used_idx(f, q), 6);
	assert_int_equal(signalled(efd), 1);
	assert_int_equal(f->v->stats.cq_interrupts, 1);
	close(efd);
	fx_free(f);
}

/* A slot with no QP or CQ: what the driver posts there is given back
 * (length 0) and never run, at the next poll once the slot has held an
 * object, at the latest when one is created in it. */
static void test_slot_without_object(void **state)
{
	uint32_t pdn, cqn, k, qpn, other;
	struct fx *f = slot_fx(&pdn, &cqn);
	struct vdev_stats was = f->v->stats;
	unsigned int tries = tx_tries;
	int efd;

	(void)state;
	/* Slots that never held a QP or CQ: a stray WQE on every queue, a
	 * stray buffer on every other CQ queue. */
	for (k = 0; k < MAX_QP; k++) {
		post_send_wqe(f, k, 0);
		post_recv_wqe(f, k, 0);
	}
	for (other = 0; other < MAX_CQ; other++)
		if (other != cqn)
			post_cq_buf(f, other, 0);
	poll_dev(f);
	assert_nothing_ran(f, &was, tries);

	/* Created in such a slot, a QP or CQ starts with its queues empty. */
	qpn = create_qp(f, pdn, cqn, &k);
	assert_returned(f, sq_of(k), 0, 1, 0);
	assert_returned(f, rq_of(k), 0, 1, 0);
	other = create_cq(f, 8);
	assert_returned(f, VIRTIO_RDMA_CQ_VQ(other), 0, 1, 0);
	assert_cq_bufs_untouched(f, other, 1);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	for (unsigned int i = 0; i < 4; i++)
		poll_dev(f);
	assert_nothing_ran(f, &was, tries);

	/* Destroyed: what comes after is given back at the next poll, the SQ's
	 * and RQ's call eventfds signalled, the CQ's not. */
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	destroy(f, VIRTIO_CMD_DESTROY_CQ, other);
	efd = call_fd(f, sq_of(k));
	post_send_wqe(f, k, 1);
	post_recv_wqe(f, k, 1);
	post_cq_buf(f, other, 1);
	/* Work for a device about to sleep: it stays awake to give them back. */
	assert_true(vdev_want_kicks(f->v, true));
	vdev_want_kicks(f->v, false);
	poll_dev(f);
	assert_returned(f, sq_of(k), 0, 2, 0);
	assert_returned(f, rq_of(k), 0, 2, 0);
	assert_returned(f, VIRTIO_RDMA_CQ_VQ(other), 0, 2, 0);
	assert_cq_bufs_untouched(f, other, 2);
	assert_int_equal(signalled(efd), 1);
	assert_false(vdev_want_kicks(f->v, true));
	assert_nothing_ran(f, &was, tries);
	close(efd);
	fx_free(f);
}

/* ---- shared receive queues ---- */

static uint8_t create_srq(struct fx *f, uint32_t pdn, uint32_t max_wr, uint32_t limit,
			  uint32_t *srqn, uint32_t *k)
{
	struct virtio_rdma_cmd_create_srq q = { htole32(pdn), htole32(max_wr), htole32(1),
						htole32(limit) };
	struct virtio_rdma_rsp_create_srq r = { 0 };
	uint32_t len;
	int st = ctrl(f, VIRTIO_CMD_CREATE_SRQ, &q, sizeof(q), &r, sizeof(r), &len);

	*srqn = le32toh(r.srqn);
	*k = le32toh(r.srq_index);
	return (uint8_t)st;
}

static uint8_t modify_srq(struct fx *f, uint32_t srqn, uint32_t mask, uint32_t max_wr,
			  uint32_t limit)
{
	struct virtio_rdma_cmd_modify_srq m = { htole32(srqn), htole32(mask), htole32(max_wr),
						htole32(limit) };
	uint32_t len;

	return (uint8_t)ctrl(f, VIRTIO_CMD_MODIFY_SRQ, &m, sizeof(m), NULL, 0, &len);
}

static uint8_t create_srq_qp(struct fx *f, uint32_t pdn, uint32_t scqn, uint32_t rcqn,
			     uint32_t flags, uint32_t srqn, uint32_t *qpn, uint32_t *k)
{
	struct virtio_rdma_cmd_create_qp q = {
		.pdn = htole32(pdn), .qp_type = VIRTIO_IB_QPT_RC,
		.sq_sig_type = VIRTIO_IB_SIGNAL_ALL_WR, .max_send_wr = htole32(2),
		.send_cqn = htole32(scqn), .recv_cqn = htole32(rcqn),
		.flags = htole32(flags), .srqn = htole32(srqn),
	};
	struct virtio_rdma_rsp_create_qp r = { 0 };
	uint32_t len;
	int st = ctrl(f, VIRTIO_CMD_CREATE_QP, &q, sizeof(q), &r, sizeof(r), &len);

	*qpn = le32toh(r.qpn);
	*k = le32toh(r.qp_index);
	return (uint8_t)st;
}

/* A SEND_ONLY without payload from the QP's peer (::ffff:10.0.0.2, as
 * qp_up connects it) to qpn at psn. */
static void rx_send_se(struct fx *f, uint32_t qpn, uint32_t psn, bool se)
{
	struct roce_addr ad = { .vlan = -1, .hop_limit = 64, .sport = 1 };
	struct roce_hdrs h = { .opcode = ROCE_RC_SEND_ONLY, .pkey = 0xffff, .dqpn = qpn,
			       .psn = psn, .se = se };
	uint8_t buf[256];
	struct roce_frag o = { buf, sizeof(buf) };
	struct roce_pkt pkt;
	enum roce_drop why;
	unsigned int nused;
	int len;

	memcpy(ad.dgid, vm_gid, 16);
	memcpy(ad.sgid, vm_gid, 16);
	ad.sgid[15] = 2;
	len = roce_build(&o, 1, &nused, &ad, &h, NULL, 0);
	assert_true(len > 0);
	o.len = (uint32_t)len;
	assert_int_equal(roce_parse(&pkt, &o, 1, &why), 0);
	vdev_rx(f->v, &pkt);
}

/* A one-packet RC SEND from the peer to qpn at psn. */
static void rx_send(struct fx *f, uint32_t qpn, uint32_t psn)
{
	rx_send_se(f, qpn, psn, false);
}

static struct virtio_rdma_cqe cqe_at(struct fx *f, uint32_t cqn, uint16_t i)
{
	struct virtio_rdma_cqe c;

	memcpy(&c, f->mem + QBUF_OFF(VIRTIO_RDMA_CQ_VQ(cqn), ring_used(f, VIRTIO_RDMA_CQ_VQ(cqn))
				     ->ring[i % RING_NUM].id), sizeof(c));
	return c;
}

/* docs/virtio-rdma.md sections 3-5: the config advertises SRQs; an SRQ
 * holds a QP slot whose RQ feeds it (max_wr respected: the rest waits in
 * the ring) and whose SQ gives back what is posted there unread; CREATE_QP
 * names it with a flag (0: none, as old drivers send), unknown flags INVAL;
 * MODIFY_SRQ limit <= max_wr; a message takes a WQE, the completion names
 * the QP, the armed limit raises SRQ_LIMIT_REACHED on the QP's recv CQ
 * (qp_num, src_qp = srqn) once; the QP to ERR raises QP_LAST_WQE_REACHED on
 * its recv CQ, once; DESTROY_SRQ is BUSY while a QP uses it; MODIFY_SRQ
 * resizes (not below what it holds, up to max_srq_wr) and a grown SRQ takes
 * what waited in its ring; DESTROY_SRQ gives back what waits in its queue;
 * SRQs count against the max_qp slots. */
static void test_srq_slot(void **state)
{
	uint32_t pdn, cqn, srqn, ks, qpn, k, len, s[4], sk[4];
	struct fx *f = slot_fx(&pdn, &cqn);
	uint32_t scqn = create_cq(f, 64);
	struct virtio_rdma_rsp_query_srq qr;
	struct virtio_rdma_config cfg;
	struct virtio_rdma_qp_attr qa;
	struct virtio_rdma_cqe c;
	uint64_t events;
	unsigned int i;

	(void)state;
	for (uint16_t j = 0; j < 4; j++)
		post_cq_buf(f, scqn, j);
	read_config(f, &cfg);
	assert_true(le64toh(cfg.device_cap_flags) & VIRTIO_RDMA_DEV_SRQ_RESIZE);
	assert_int_equal(le32toh(cfg.max_srq), MAX_QP - 1);
	assert_int_equal(le32toh(cfg.max_srq_wr), 4096);
	assert_int_equal(le32toh(cfg.max_srq_sge), 32);
	assert_int_equal(create_srq(f, pdn, 4097, 0, &srqn, &ks), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(create_srq(f, pdn + 1, 2, 0, &srqn, &ks), VIRTIO_RDMA_ERR_NOENT);
	/* a first SRQ, gone again: the second's srqn is not 0, as an unset field */
	assert_int_equal(create_srq(f, pdn, 2, 0, &srqn, &ks), VIRTIO_RDMA_OK);
	assert_int_equal(create_srq(f, pdn, 2, 0, &s[0], &sk[0]), VIRTIO_RDMA_OK);
	destroy(f, VIRTIO_CMD_DESTROY_SRQ, srqn);
	srqn = s[0];
	ks = sk[0];
	assert_true(srqn != 0 && ks < MAX_QP);
	post_send_wqe(f, ks, 0);
	for (uint16_t j = 0; j < 3; j++)
		post_recv_wqe(f, ks, j);
	poll_dev(f);
	assert_int_equal(f->v->stats.srq_wqes, 2);
	assert_int_equal(f->v->stats.send_wqes, 0);
	assert_returned(f, sq_of(ks), 0, 1, 0);
	assert_returned(f, rq_of(ks), 0, 2, 0);	/* the third waits: max_wr 2 */

	assert_int_equal(ctrl(f, VIRTIO_CMD_QUERY_SRQ, &(uint32_t){ htole32(srqn) }, 4, &qr,
			      sizeof(qr), &len), VIRTIO_RDMA_OK);
	assert_int_equal(le32toh(qr.max_wr), 2);
	assert_int_equal(le32toh(qr.max_sge), 1);
	assert_int_equal(le32toh(qr.srq_limit), 0);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_LIMIT, 0, 3), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(modify_srq(f, srqn + 1, VIRTIO_IB_SRQ_LIMIT, 0, 1), VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_LIMIT, 0, 2), VIRTIO_RDMA_OK);

	assert_int_equal(create_srq_qp(f, pdn, cqn, cqn, 2, srqn, &qpn, &k), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(create_srq_qp(f, pdn, cqn, cqn, VIRTIO_RDMA_CREATE_QP_SRQ, srqn + 1, &qpn, &k),
			 VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(create_srq_qp(f, pdn, scqn, cqn, VIRTIO_RDMA_CREATE_QP_SRQ, srqn, &qpn,
				       &k), VIRTIO_RDMA_OK);
	assert_true(k != ks);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	rx_send(f, qpn, 0);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_CQ_VQ(cqn)), 2);
	c = cqe_at(f, cqn, 0);		/* the event first: it waited for a buffer */
	assert_int_equal(c.opcode, VIRTIO_RDMA_WC_ASYNC_EVENT);
	assert_int_equal(le32toh(c.vendor_err), VIRTIO_RDMA_EVENT_SRQ_LIMIT_REACHED);
	assert_int_equal(le32toh(c.qp_num), qpn);
	assert_int_equal(le32toh(c.src_qp), srqn);
	c = cqe_at(f, cqn, 1);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.opcode, 128);	/* IB_WC_RECV */
	assert_int_equal(le64toh(c.wr_id), 0x4e00);
	assert_int_equal(le32toh(c.qp_num), qpn);
	assert_int_equal(f->v->stats.srq_wqes, 3);	/* room: the third went in */
	assert_returned(f, rq_of(ks), 0, 3, 0);
	assert_int_equal(ctrl(f, VIRTIO_CMD_QUERY_SRQ, &(uint32_t){ htole32(srqn) }, 4, &qr,
			      sizeof(qr), &len), VIRTIO_RDMA_OK);
	assert_int_equal(le32toh(qr.srq_limit), 0);	/* fired: disarmed */
	rx_send(f, qpn, 1);				/* 2 -> 1: no second event */
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_CQ_VQ(cqn)), 3);
	assert_int_equal(cqe_at(f, cqn, 2).opcode, 128);

	/* To ERR: QP_LAST_WQE_REACHED on its recv CQ, not its send CQ; once */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = VIRTIO_IB_QPS_ERR;
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE, &qa);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_CQ_VQ(cqn)), 4);
	c = cqe_at(f, cqn, 3);
	assert_int_equal(c.opcode, VIRTIO_RDMA_WC_ASYNC_EVENT);
	assert_int_equal(le32toh(c.vendor_err), VIRTIO_RDMA_EVENT_QP_LAST_WQE_REACHED);
	assert_int_equal(le32toh(c.qp_num), qpn);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_CQ_VQ(scqn)), 0);
	events = f->v->stats.events;
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE, &qa);
	assert_int_equal(f->v->stats.events, events);

	/* In use: BUSY. Then what waits in its queue comes back with it. */
	assert_int_equal(ctrl(f, VIRTIO_CMD_DESTROY_SRQ, &(uint32_t){ htole32(srqn) }, 4, NULL, 0,
			      &len), VIRTIO_RDMA_ERR_BUSY);
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	for (uint16_t j = 3; j < 6; j++)
		post_recv_wqe(f, ks, j);
	poll_dev(f);
	assert_int_equal(f->v->stats.srq_wqes, 4);	/* 1 + 1 fit, two wait */
	/* Resize: not below the 2 WQEs in it, nor 0 or beyond max_srq_wr;
	 * grown, it takes the two waiting in the ring (IBA 11.2.3.3) */
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_MAX_WR, 1, 0), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_MAX_WR, 0, 0), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_MAX_WR, 4097, 0),
			 VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_MAX_WR | VIRTIO_IB_SRQ_LIMIT, 4, 5),
			 VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_MAX_WR, 4096, 0), VIRTIO_RDMA_OK);
	assert_int_equal(modify_srq(f, srqn, VIRTIO_IB_SRQ_MAX_WR, 4, 0), VIRTIO_RDMA_OK);
	assert_int_equal(ctrl(f, VIRTIO_CMD_QUERY_SRQ, &(uint32_t){ htole32(srqn) }, 4, &qr,
			      sizeof(qr), &len), VIRTIO_RDMA_OK);
	assert_int_equal(le32toh(qr.max_wr), 4);
	poll_dev(f);
	assert_int_equal(f->v->stats.srq_wqes, 6);
	assert_int_equal(used_idx(f, rq_of(ks)), 6);
	destroy(f, VIRTIO_CMD_DESTROY_SRQ, srqn);
	assert_returned(f, rq_of(ks), 3, 6, 3);
	assert_int_equal(ctrl(f, VIRTIO_CMD_QUERY_SRQ, &(uint32_t){ htole32(srqn) }, 4, &qr,
			      sizeof(qr), &len), VIRTIO_RDMA_ERR_NOENT);

	/* max_qp 4 slots: 3 SRQs and a QP, a 4th SRQ is refused */
	for (i = 0; i < 3; i++)
		assert_int_equal(create_srq(f, pdn, 2, 0, &s[i], &sk[i]), VIRTIO_RDMA_OK);
	assert_int_equal(create_srq(f, pdn, 2, 0, &s[3], &sk[3]), VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(create_srq_qp(f, pdn, cqn, cqn, VIRTIO_RDMA_CREATE_QP_SRQ, s[1], &qpn, &k),
			 VIRTIO_RDMA_OK);
	for (i = 0; i < 3; i++)
		assert_true(k != sk[i]);
	assert_int_equal(create_srq_qp(f, pdn, cqn, cqn, 0, 0, &qpn, &k), VIRTIO_RDMA_ERR_NOMEM);
	assert_false(f->v->broken);
	fx_free(f);	/* frees the QP before the SRQs it holds */
}

/* Without VHOST_USER_F_PROTOCOL_FEATURES a ring starts enabled on KICK and
 * SET_VRING_ENABLE is refused. */
static void test_no_protocol_features(void **state)
{
	struct fx *a = fx_new("vm-a", 1), *b = fx_new("vm-b", 2);
	uint64_t feat = EXPECT_FEATURES & ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES);

	(void)state;
	handshake(b);
	assert_int_equal(send_u64(a, VHOST_USER_SET_FEATURES, V1, feat), 0);
	assert_int_equal(send_none(a, VHOST_USER_SET_OWNER, V1), 0);
	assert_int_equal(send_main_mem_table(a, V1), 0);
	assert_int_equal(send_state(a, VHOST_USER_SET_VRING_NUM, V1, 0, RING_NUM), 0);
	assert_int_equal(send_addr(a, 0, 0, uva(a, 0), uva(a, AVAIL_OFF), uva(a, USED_OFF)), 0);
	assert_refused(a, send_state(a, VHOST_USER_SET_VRING_ENABLE, V1, 0, 1));
	assert_false(a->v->vu.vqs[0].enabled);
	/* NEED_REPLY without REPLY_ACK: no ack. */
	assert_int_equal(send_u64(a, VHOST_USER_SET_VRING_KICK, NEED, VHOST_USER_VRING_NOFD_MASK), 0);
	assert_false(a->have_reply);
	assert_true(a->v->vu.vqs[0].enabled);
	assert_works(a);
	assert_works(b);
	fx_free(a);
	fx_free(b);
}

/* ---- vu_recv ---- */

static void send_raw(int fd, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	char control[CMSG_SPACE(16 * sizeof(int))];
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		memset(control, 0, sizeof(control));
		mh.msg_control = control;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)len);
}

/* One message as it travels: the header, then size bytes of payload. */
static void send_msg(int fd, const struct vhost_user_msg *m, size_t payload_len, const int *fds,
		     unsigned int nfds)
{
	uint8_t wire[sizeof(m->hdr) + sizeof(m->payload)];

	assert_true(payload_len <= sizeof(m->payload));
	memcpy(wire, &m->hdr, sizeof(m->hdr));
	memcpy(wire + sizeof(m->hdr), &m->payload, payload_len);
	send_raw(fd, wire, sizeof(m->hdr) + payload_len, fds, nfds);
}

static void test_vu_recv(void **state)
{
	struct vhost_user_msg m, in;
	int sp[2], fds[VHOST_USER_MAX_FDS], sent[16];
	unsigned int nfds, before, i;
	struct stat st;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	before = count_fds();

	/* Nothing there */
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), -EAGAIN);
	assert_int_equal(nfds, 0);

	/* A message with a payload and two fds */
	memset(&m, 0, sizeof(m));
	m.hdr.request = VHOST_USER_SET_VRING_CALL;
	m.hdr.flags = V1;
	m.hdr.size = 8;
	m.payload.u64 = 3;
	sent[0] = eventfd(0, EFD_CLOEXEC);
	sent[1] = eventfd(0, EFD_CLOEXEC);
	send_msg(sp[1], &m, 8, sent, 2);
	close(sent[0]);
	close(sent[1]);
	memset(&in, 0, sizeof(in));
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), 0);
	assert_int_equal(in.hdr.request, VHOST_USER_SET_VRING_CALL);
	assert_int_equal(in.hdr.size, 8);
	assert_int_equal(in.payload.u64, 3);
	assert_int_equal(nfds, 2);
	assert_int_equal(fstat(fds[0], &st), 0);
	assert_int_equal(fstat(fds[1], &st), 0);
	assert_true(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(count_fds(), before);

	/* A message without payload, then a split one (header and payload in
	 * two writes). */
	memset(&m, 0, sizeof(m));
	m.hdr.request = VHOST_USER_GET_FEATURES;
	m.hdr.flags = V1;
	send_raw(sp[1], &m, 12, NULL, 0);
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), 0);
	assert_int_equal(in.hdr.request, VHOST_USER_GET_FEATURES);
	assert_int_equal(nfds, 0);
	m.hdr.request = VHOST_USER_SET_FEATURES;
	m.hdr.size = 8;
	m.payload.u64 = EXPECT_FEATURES;
	send_raw(sp[1], &m, 12, NULL, 0);
	send_raw(sp[1], &m.payload, 8, NULL, 0);
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), 0);
	assert_int_equal(in.payload.u64, EXPECT_FEATURES);

	/* A size bigger than any payload: bad frame, its fds closed. */
	memset(&m, 0, sizeof(m));
	m.hdr.request = VHOST_USER_SET_MEM_TABLE;
	m.hdr.flags = V1;
	m.hdr.size = sizeof(m.payload) + 1;
	sent[0] = eventfd(0, EFD_CLOEXEC);
	send_raw(sp[1], &m, 12, sent, 1);
	close(sent[0]);
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), -EBADMSG);
	assert_int_equal(nfds, 0);
	assert_int_equal(count_fds(), before);

	/* A short header */
	send_raw(sp[1], &m, 5, NULL, 0);
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), -EBADMSG);

	/* More fds than a message may carry: bad frame, nothing leaks. */
	memset(&m, 0, sizeof(m));
	m.hdr.request = VHOST_USER_GET_FEATURES;
	m.hdr.flags = V1;
	for (i = 0; i < VHOST_USER_MAX_FDS + 1; i++)
		sent[i] = eventfd(0, EFD_CLOEXEC);
	send_raw(sp[1], &m, 12, sent, VHOST_USER_MAX_FDS + 1);
	for (i = 0; i < VHOST_USER_MAX_FDS + 1; i++)
		close(sent[i]);
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), -EBADMSG);
	assert_int_equal(nfds, 0);
	assert_int_equal(count_fds(), before);

	/* A payload cut short by the peer closing */
	m.hdr.size = 8;
	send_msg(sp[1], &m, 4, NULL, 0);
	close(sp[1]);
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), -EBADMSG);
	/* End of file */
	assert_int_equal(vu_recv(sp[0], &in, fds, &nfds), -ECONNRESET);
	close(sp[0]);
}

/* ---- memory windows ---- */

static uint8_t alloc_mw(struct fx *f, uint32_t pdn, uint32_t type, uint32_t *mwn, uint32_t *rkey)
{
	struct virtio_rdma_cmd_alloc_mw q = { htole32(pdn), htole32(type) };
	struct virtio_rdma_rsp_alloc_mw r = { 0 };
	uint8_t st = ctrl(f, VIRTIO_CMD_ALLOC_MW, &q, sizeof(q), &r, sizeof(r), NULL);

	*mwn = le32toh(r.mwn);
	*rkey = le32toh(r.rkey);
	return st;
}

static uint8_t dealloc_mw(struct fx *f, uint32_t mwn)
{
	uint32_t q = htole32(mwn);

	return ctrl(f, VIRTIO_CMD_DEALLOC_MW, &q, sizeof(q), NULL, 0, NULL);
}

/* REG_USER_MR of two pages at iova 0 with access; its lkey in *lkey. */
static uint8_t reg_mr_access(struct fx *f, uint32_t pdn, uint32_t access, uint32_t *mrn,
			     uint32_t *lkey)
{
	struct virtio_rdma_cmd_reg_user_mr q = {
		.pdn = htole32(pdn), .access_flags = htole32(access), .length = htole64(8192),
		.pages = htole64(gpa(BIG_OFF)), .npages = htole32(2),
	};
	struct virtio_rdma_rsp_mr r = { 0 };
	uint8_t st = ctrl(f, VIRTIO_CMD_REG_USER_MR, &q, sizeof(q), &r, sizeof(r), NULL);

	*mrn = le32toh(r.mrn);
	*lkey = le32toh(r.lkey);
	return st;
}

/* A BIND_MW WQE (wr_id 0xb1 + i) of [0, 4096) of the MR, write rights. */
static void post_bind_wqe(struct fx *f, uint32_t k, uint16_t i, uint32_t mw_rkey,
			  uint32_t lkey)
{
	struct virtio_rdma_cmd_post_send w = {
		.send_flags = htole32(VIRTIO_IB_SEND_SIGNALED),
		.opcode = htole32(VIRTIO_IB_WR_BIND_MW), .wr_id = htole64(0xb1u + i),
	};

	w.wr.bind_mw.length = htole64(4096);
	w.wr.bind_mw.mw_rkey = htole32(mw_rkey);
	w.wr.bind_mw.rkey = htole32(mw_rkey);
	w.wr.bind_mw.mr_lkey = htole32(lkey);
	w.wr.bind_mw.access = htole32(VIRTIO_IB_ACCESS_REMOTE_WRITE);
	memcpy(f->mem + QBUF_OFF(sq_of(k), i), &w, sizeof(w));
	post_buf(f, sq_of(k), i, sizeof(w), false);
}

/* docs/virtio-rdma.md sections 3-5: the config offers type 2B windows,
 * max_mw = max_mr; ALLOC_MW type 2 answers a handle and an rkey, type 1 is
 * UNSUPP, other types INVAL, no PD NOENT; windows count apart from MRs, up
 * to max_mr (then NOMEM, refused_mws); an MR may have MW_BIND (16); a
 * BIND_MW WQE completes IB_WC_BIND_MW (5), a refused one MW_BIND_ERR (6);
 * DEREG_MR of an MR under a bound window is BUSY; DEALLOC_MW of a bound
 * window lets the MR go; a VM that leaves with a bound window frees all. */
static void test_mw_commands(void **state)
{
	struct fx *f = fx_new_mr_limits("vm-a", 1, 2, 1000);
	uint32_t pdn, cqn, mwn, mwn2, rkey, rkey2, mrn, mrn2, lkey, qpn, k, dq;
	struct virtio_rdma_config cfg;
	struct virtio_rdma_cqe c;

	(void)state;
	handshake(f);
	for (unsigned int q = 1; q < N_VQS; q++)
		setup_ring(f, q);
	fill_big_list(f);
	pdn = create_pd(f);
	cqn = create_cq(f, 64);
	for (uint16_t i = 0; i < 4; i++)
		post_cq_buf(f, cqn, i);
	read_config(f, &cfg);
	assert_int_equal(le32toh(cfg.max_mw), 2);
	assert_true(le64toh(cfg.device_cap_flags) & VIRTIO_RDMA_DEV_MEM_WINDOW);
	assert_true(le64toh(cfg.device_cap_flags) & VIRTIO_RDMA_DEV_MEM_WINDOW_TYPE_2B);

	assert_int_equal(alloc_mw(f, pdn, VIRTIO_IB_MW_TYPE_1, &mwn, &rkey), VIRTIO_RDMA_ERR_UNSUPP);
	assert_int_equal(alloc_mw(f, pdn, 3, &mwn, &rkey), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(alloc_mw(f, pdn + 1, VIRTIO_IB_MW_TYPE_2, &mwn, &rkey),
			 VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(alloc_mw(f, pdn, VIRTIO_IB_MW_TYPE_2, &mwn, &rkey), VIRTIO_RDMA_OK);
	assert_int_equal(alloc_mw(f, pdn, VIRTIO_IB_MW_TYPE_2, &mwn2, &rkey2), VIRTIO_RDMA_OK);
	assert_true(mwn != mwn2 && mwn < 2 && mwn2 < 2 && (rkey >> 8) != (rkey2 >> 8));
	assert_int_equal(alloc_mw(f, pdn, VIRTIO_IB_MW_TYPE_2, &dq, &dq), VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(f->v->stats.refused_mws, 1);
	/* a PD with windows is busy */
	dq = htole32(pdn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_DESTROY_PD, &dq, 4, NULL, 0, NULL), VIRTIO_RDMA_ERR_BUSY);
	assert_int_equal(dealloc_mw(f, mwn2), VIRTIO_RDMA_OK);
	assert_int_equal(dealloc_mw(f, mwn2), VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(dealloc_mw(f, 0xffffffffu), VIRTIO_RDMA_ERR_NOENT);
	/* windows count apart from MRs: two MRs still fit beside a window */
	assert_int_equal(reg_mr_access(f, pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE | 0x20, &mrn, &lkey),
			 VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(reg_mr_access(f, pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mrn2, &lkey),
			 VIRTIO_RDMA_OK);
	assert_int_equal(reg_mr_access(f, pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE |
				       VIRTIO_IB_ACCESS_MW_BIND, &mrn, &lkey), VIRTIO_RDMA_OK);

	qpn = create_qp(f, pdn, cqn, &k);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	post_bind_wqe(f, k, 0, rkey, lkey);
	poll_dev(f);
	c = cqe_at(f, cqn, 0);
	assert_int_equal(le64toh(c.wr_id), 0xb1);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.opcode, 5);		/* IB_WC_BIND_MW */
	assert_int_equal(dereg(f, mrn), VIRTIO_RDMA_ERR_BUSY);
	/* bound already: refused, MW_BIND_ERR, the QP in ERR */
	post_bind_wqe(f, k, 1, rkey, lkey);
	poll_dev(f);
	c = cqe_at(f, cqn, 1);
	assert_int_equal(le64toh(c.wr_id), 0xb2);
	assert_int_equal(c.status, 6);		/* IB_WC_MW_BIND_ERR */
	assert_int_equal(c.opcode, 5);
	assert_int_equal(eng_dev_counters(f->v->eng)->c[ENG_CNT_ERR_BIND_MW], 1);
	assert_int_equal(dealloc_mw(f, mwn), VIRTIO_RDMA_OK);
	assert_int_equal(dereg(f, mrn), VIRTIO_RDMA_OK);

	/* leaving with a window bound: everything is freed (ASan: no leak) */
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	qpn = create_qp(f, pdn, cqn, &k);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	assert_int_equal(reg_mr_access(f, pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE |
				       VIRTIO_IB_ACCESS_MW_BIND, &mrn, &lkey), VIRTIO_RDMA_OK);
	assert_int_equal(alloc_mw(f, pdn, VIRTIO_IB_MW_TYPE_2, &mwn, &rkey), VIRTIO_RDMA_OK);
	post_bind_wqe(f, k, 2, rkey, lkey);
	poll_dev(f);
	c = cqe_at(f, cqn, 2);
	assert_int_equal(c.status, 0);
	assert_int_equal(dereg(f, mrn), VIRTIO_RDMA_ERR_BUSY);
	reconnect(f);
	assert_works(f);
	fx_free(f);
}

static int teardown_fx(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < ARRAY_SIZE(live_fx); i++)
		if (live_fx[i])
			fx_free(live_fx[i]);
	return 0;
}

/* ---- restarts that keep the device (docs/restart.md) ---- */

/* The fds a saved device names, kept as systemd's store would (copies). */
struct keeper {
	struct { enum vdev_fd_kind kind; unsigned int index; int fd; } k[64];
	unsigned int n;
	enum vdev_fd_kind drop_kind;	/* with drop: one never kept */
	bool drop;
	enum vdev_fd_kind pipe_kind;	/* with pipe: one kept as a pipe */
	bool pipe;
};

static int keep_fd(void *ctx, enum vdev_fd_kind kind, unsigned int index, int fd)
{
	struct keeper *kp = ctx;

	assert_true(kp->n < ARRAY_SIZE(kp->k));
	if (kp->drop && kind == kp->drop_kind) {
		kp->drop = false;
		return 0;
	}
	kp->k[kp->n].kind = kind;
	kp->k[kp->n].index = index;
	if (kp->pipe && kind == kp->pipe_kind) {
		int p[2];

		kp->pipe = false;
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		close(p[1]);
		kp->k[kp->n++].fd = p[0];
		return 0;
	}
	kp->k[kp->n++].fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return 0;
}

static int take_fd(void *ctx, enum vdev_fd_kind kind, unsigned int index)
{
	struct keeper *kp = ctx;
	unsigned int i;
	int fd;

	for (i = 0; i < kp->n; i++)
		if (kp->k[i].fd >= 0 && kp->k[i].kind == kind && kp->k[i].index == index) {
			fd = kp->k[i].fd;
			kp->k[i].fd = -1;
			return fd;
		}
	return -ENOENT;
}

/* Close what nobody took; how many. */
static unsigned int keeper_close(struct keeper *kp)
{
	unsigned int i, left = 0;

	for (i = 0; i < kp->n; i++)
		if (kp->k[i].fd >= 0) {
			close(kp->k[i].fd);
			left++;
		}
	kp->n = 0;
	return left;
}

static const struct vdev_state_info test_info = { "vrdmad test", 123456789 };

static struct vdev *fresh_vdev(const struct fx *f, const struct vrdma_vm_config *cfg)
{
	struct vdev *g = calloc(1, sizeof(*g));

	assert_non_null(g);
	assert_int_equal(vdev_init(g, cfg, f->v->vm_id, &f->v->port, &f->v->tx, NULL), 0);
	return g;
}

/* f's device saved and restored into a new one, which replaces it as a
 * restarted vrdmad's would: f, the front end, sees nothing. The new one
 * saves to the same bytes. */
static void restart_fx(struct fx *f, struct sbuf *saved)
{
	struct keeper kp = { .n = 0 }, kp2 = { .n = 0 };
	struct sbuf again = { 0 };
	struct vdev_state_info info;
	struct vdev *g;
	char why[200];
	int err;

	assert_int_equal(vdev_save(f->v, &test_info, saved, keep_fd, &kp), 0);
	g = fresh_vdev(f, &f->cfg);
	err = vdev_restore(g, saved->p, saved->len, take_fd, &kp, &info, why, sizeof(why));
	if (err)
		fail_msg("restore: %d: %s", err, why);
	assert_int_equal(keeper_close(&kp), 0);		/* every fd taken */
	assert_string_equal(info.writer, test_info.writer);
	assert_int_equal(info.saved_ns, test_info.saved_ns);
	vdev_free(f->v);
	free(f->v);
	close(f->sock[0]);
	f->v = g;
	f->sock[0] = g->vu.fd;
	assert_int_equal(vdev_save(g, &test_info, &again, keep_fd, &kp2), 0);
	assert_int_equal(again.len, saved->len);
	assert_memory_equal(again.p, saved->p, saved->len);
	keeper_close(&kp2);
	sb_free(&again);
}

/* A device with every kind of object, restarted: the front end goes on
 * where it was. Its control queue answers on the same ring; the QP keeps
 * its number, state and the WQEs it took (flushed into the CQ when it goes
 * to ERR, in order, after a completion held for want of a CQ buffer); the
 * MR, the window, the SRQ and its QP are there by their handles; an eventfd
 * given before the restart is signalled after it. */
static void test_restart_device(void **state)
{
	uint32_t pdn, cqn, k, qpn, mrn, lkey, mwn, rkey, srqn, sk, sqpn, sqk, len;
	struct fx *f = slot_fx(&pdn, &cqn);
	struct virtio_rdma_cmd_req_notify arm = { 0, htole32(VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION) };
	struct virtio_rdma_qp_attr a;
	struct sbuf saved = { 0 };
	unsigned int fds;
	int efd;

	(void)state;
	fill_big_list(f);
	qpn = create_qp(f, pdn, cqn, &k);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	assert_int_equal(reg_mr_access(f, pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE |
				       VIRTIO_IB_ACCESS_MW_BIND, &mrn, &lkey), VIRTIO_RDMA_OK);
	assert_int_equal(alloc_mw(f, pdn, 2, &mwn, &rkey), VIRTIO_RDMA_OK);
	assert_int_equal(create_srq(f, pdn, 4, 0, &srqn, &sk), VIRTIO_RDMA_OK);
	assert_int_equal(create_srq_qp(f, pdn, cqn, cqn, VIRTIO_RDMA_CREATE_QP_SRQ, srqn, &sqpn,
				       &sqk), VIRTIO_RDMA_OK);
	post_recv_wqe(f, k, 0);
	post_recv_wqe(f, k, 1);
	post_send_wqe(f, k, 0);		/* waits for the wire, which never has room */
	efd = call_fd(f, VIRTIO_RDMA_CQ_VQ(cqn));
	arm.cqn = htole32(cqn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_REQ_NOTIFY_CQ, &arm, sizeof(arm), NULL, 0, &len),
			 VIRTIO_RDMA_OK);
	poll_dev(f);
	assert_int_equal(f->v->stats.recv_wqes, 2);
	assert_int_equal(f->v->stats.send_wqes, 1);
	fds = count_fds();

	restart_fx(f, &saved);
	assert_int_equal(count_fds(), fds);
	assert_works(f);
	/* to ERR: the three WQEs taken before the restart come back flushed */
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_ERR;
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE, &a);
	poll_dev(f);
	assert_int_equal(le64toh(cqe_at(f, cqn, 0).wr_id), 0x5e00);
	assert_int_equal(le64toh(cqe_at(f, cqn, 1).wr_id), 0x4e00);
	assert_int_equal(le64toh(cqe_at(f, cqn, 2).wr_id), 0x4e01);
	assert_int_equal(cqe_at(f, cqn, 0).status, ENG_WC_WR_FLUSH_ERR	/* ib_wc_status */);
	assert_int_equal(le32toh(cqe_at(f, cqn, 2).qp_num), qpn);
	assert_true(signalled(efd) >= 1);	/* armed before, signalled after */
	/* the objects by their handles */
	assert_int_equal(dealloc_mw(f, mwn), VIRTIO_RDMA_OK);
	assert_int_equal(dereg(f, mrn), VIRTIO_RDMA_OK);
	destroy(f, VIRTIO_CMD_DESTROY_QP, sqpn);
	destroy(f, VIRTIO_CMD_DESTROY_SRQ, srqn);
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	assert_works(f);
	close(efd);
	sb_free(&saved);
	fx_free(f);
}

/* The state's CRC made right again after an edit. */
static void recrc(uint8_t *p, size_t len)
{
	uint32_t c = roce_crc32(0, p, len - 4);

	for (unsigned int i = 0; i < 4; i++)
		p[len - 4 + i] = (uint8_t)(c >> (8 * i));
}

/* Restore p into a fresh device for cfg with the fds of kp: the error
 * (with why), and no fd left behind on a refusal. */
static int try_restore(struct fx *f, const struct vrdma_vm_config *cfg, const uint8_t *p,
		       size_t len, struct keeper *kp, char *why, size_t whylen)
{
	struct vdev *g = fresh_vdev(f, cfg);
	struct vdev_state_info info;
	int err = vdev_restore(g, p, len, take_fd, kp, &info, why, whylen), conn = g->vu.fd;

	if (err) {
		assert_int_equal(conn, -1);
		assert_true(why[0] != 0);
	}
	vdev_free(g);
	if (conn >= 0)
		close(conn);
	free(g);
	keeper_close(kp);
	return err;
}

/* What does not check out is refused with a reason and leaves a fresh
 * device and no fd: cut short, damaged, another format, another VM, the
 * VM's limits or addresses changed, a missing fd, a pipe for an eventfd or
 * for the connection, an MR page not a page address (CRC made right; one
 * outside the VM's memory restores, as a later memory table can leave it);
 * every byte of the state changed (CRC made right) is refused or restores
 * to a state that saves the same. */
static void test_restore_device_refused(void **state)
{
	uint32_t pdn, cqn, k, qpn, mrn, lkey;
	struct fx *f = slot_fx(&pdn, &cqn);
	struct vrdma_vm_config other;
	struct keeper kp = { .n = 0 };
	struct sbuf saved = { 0 };
	unsigned int fds, refused = 0;
	uint8_t *copy;
	char why[200];
	size_t i;
	int efd;

	(void)state;
	fill_big_list(f);
	qpn = create_qp(f, pdn, cqn, &k);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	assert_int_equal(reg_mr_access(f, pdn, VIRTIO_IB_ACCESS_LOCAL_WRITE, &mrn, &lkey),
			 VIRTIO_RDMA_OK);
	post_recv_wqe(f, k, 0);
	poll_dev(f);
	efd = call_fd(f, VIRTIO_RDMA_CQ_VQ(cqn));
	fds = count_fds();
	assert_int_equal(vdev_save(f->v, &test_info, &saved, keep_fd, &kp), 0);
	keeper_close(&kp);
	copy = malloc(saved.len);
	assert_non_null(copy);
	/* each case with the fds as saved */
#define REFUSED(cfg, p, n, want) do {						\
		struct sbuf s_ = { 0 };						\
		assert_int_equal(vdev_save(f->v, &test_info, &s_, keep_fd, &kp), 0); \
		sb_free(&s_);							\
		assert_int_equal(try_restore(f, cfg, p, n, &kp, why, sizeof(why)), want); \
		assert_int_equal(count_fds(), fds);				\
	} while (0)
	REFUSED(&f->cfg, saved.p, saved.len - 1, -EBADMSG);
	assert_non_null(strstr(why, "cut short"));
	memcpy(copy, saved.p, saved.len);
	copy[saved.len / 2] ^= 1;
	REFUSED(&f->cfg, copy, saved.len, -EBADMSG);
	assert_non_null(strstr(why, "CRC"));
	memcpy(copy, saved.p, saved.len);
	copy[8] = 3;	/* format 3 */
	recrc(copy, saved.len);
	REFUSED(&f->cfg, copy, saved.len, -EPROTONOSUPPORT);
	/* format 1 (no ABI v2 in it) still restores */
	copy[8] = 1;
	recrc(copy, saved.len);
	REFUSED(&f->cfg, copy, saved.len, 0);
	other = f->cfg;
	snprintf(other.name, sizeof(other.name), "vm-b");
	REFUSED(&other, saved.p, saved.len, -EINVAL);
	other = f->cfg;
	other.max_qp = MAX_QP * 2;
	REFUSED(&other, saved.p, saved.len, -ERANGE);
	assert_non_null(strstr(why, "max_qp"));
	other = f->cfg;
	other.gids[0].raw[15] ^= 1;	/* the host gave it another address */
	REFUSED(&other, saved.p, saved.len, -ERANGE);
	assert_non_null(strstr(why, "addresses"));
	/* a memory fd the store lost */
	kp.drop = true;
	kp.drop_kind = VDEV_FD_MEM;
	REFUSED(&f->cfg, saved.p, saved.len, -ENOENT);
	assert_non_null(strstr(why, "memory fd"));
	/* fds that are not what they were: checked as SET_VRING_* checks */
	kp.pipe = true;
	kp.pipe_kind = VDEV_FD_CALL;
	REFUSED(&f->cfg, saved.p, saved.len, -EINVAL);
	assert_non_null(strstr(why, "not an eventfd"));
	kp.pipe = true;
	kp.pipe_kind = VDEV_FD_CONN;
	REFUSED(&f->cfg, saved.p, saved.len, -EINVAL);
	assert_non_null(strstr(why, "not a socket"));
	/* the MR's first page moved outside the VM's memory (restores: an
	 * access error), then off a page boundary (refused) */
	memcpy(copy, saved.p, saved.len);
	for (i = 0; i + 8 <= saved.len; i++)	/* the list's first entry, as saved */
		if (!memcmp(copy + i, f->mem + BIG_OFF, 8))
			break;
	assert_true(i + 8 <= saved.len);
	memcpy(copy + i, &(uint64_t){ htole64(gpa(MEM_SIZE)) }, 8);
	recrc(copy, saved.len);
	REFUSED(&f->cfg, copy, saved.len, 0);	/* as a later memory table leaves it */
	memcpy(copy + i, &(uint64_t){ htole64(gpa(MEM_SIZE) + 8) }, 8);
	recrc(copy, saved.len);
	REFUSED(&f->cfg, copy, saved.len, -EBADMSG);
	assert_non_null(strstr(why, "page 0"));
	/* every byte */
	for (i = 16; i + 4 < saved.len; i++) {
		struct sbuf s_ = { 0 };
		int err;

		memcpy(copy, saved.p, saved.len);
		copy[i] ^= 0x5a;
		recrc(copy, saved.len);
		assert_int_equal(vdev_save(f->v, &test_info, &s_, keep_fd, &kp), 0);
		sb_free(&s_);
		err = try_restore(f, &f->cfg, copy, saved.len, &kp, why, sizeof(why));
		refused += err != 0;
		assert_int_equal(count_fds(), fds);
	}
	assert_true(refused > saved.len / 8);
	free(copy);
	sb_free(&saved);
	assert_works(f);
	close(efd);
	fx_free(f);
}

static int db_cmd(struct fx *f, uint8_t cmd, uint64_t v, uint32_t *dbn)
{
	uint64_t q = htole64(v);
	uint32_t d = htole32((uint32_t)v), r = 0, len = 0;
	int st;

	if (cmd == VIRTIO_CMD_ADD_DB_PAGE)
		st = ctrl(f, cmd, &q, sizeof(q), &r, sizeof(r), &len);
	else
		st = ctrl(f, cmd, &d, sizeof(d), NULL, 0, NULL);
	if (dbn && st == VIRTIO_RDMA_OK && len == sizeof(r))
		*dbn = le32toh(r);
	return st;
}

/* docs/virtio-rdma.md section 8: doorbell pages, with VIRTIO_RDMA_F_RINGS
 * only (UNSUPP without); ADD_DB_PAGE takes a 4 KiB aligned page of guest
 * memory (else INVAL, FAULT outside it), once (the same page again INVAL),
 * up to VDEV_MAX_DB_PAGES (then NOMEM, refused_db_pages), clearing the
 * device's half; DEL_DB_PAGE frees one no ring names (NOENT, BUSY); a
 * reset lets every page go. */
static void test_db_pages(void **state)
{
	struct fx *f = fx_new("vm-a", 1);
	uint64_t page = GPA_BASE + SCRATCH_OFF, base = page;
	uint32_t dbn, first, i, want_errors;

	(void)state;
	handshake(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page, &dbn), VIRTIO_RDMA_ERR_UNSUPP);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, 0, NULL), VIRTIO_RDMA_ERR_UNSUPP);
	/* as a driver that negotiated it */
	rings_on(f);

	memset(f->mem + SCRATCH_OFF, 0xff, GRING_DB_BITS_OFF);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page, &first), VIRTIO_RDMA_OK);
	assert_int_equal(f->mem[SCRATCH_OFF + GRING_DB_NEED_WAKE], 0);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page, &dbn), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page + 8, &dbn), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + MEM_SIZE, &dbn),
			 VIRTIO_RDMA_ERR_FAULT);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE - GRING_PAGE, &dbn),
			 VIRTIO_RDMA_ERR_FAULT);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, 0, &dbn), VIRTIO_RDMA_ERR_FAULT);
	for (i = 1; i < VDEV_MAX_DB_PAGES; i++) {
		dbn = ~0u;
		assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, base + i * GRING_PAGE, &dbn),
				 VIRTIO_RDMA_OK);
		assert_true(dbn < VDEV_MAX_DB_PAGES && dbn != first);
	}
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, base + i * GRING_PAGE, &dbn),
			 VIRTIO_RDMA_ERR_NOMEM);
	assert_int_equal(f->v->stats.refused_db_pages, 1);
	want_errors = 2 + 2 + 3 + 1;	/* UNSUPP, INVAL, FAULT, NOMEM */
	assert_int_equal(f->v->stats.ctrl_errors, want_errors);

	/* one a ring names stays */
	f->v->dbs[first]->users = 1;
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, first, NULL), VIRTIO_RDMA_ERR_BUSY);
	f->v->dbs[first]->users = 0;
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, first, NULL), VIRTIO_RDMA_OK);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, first, NULL), VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, VDEV_MAX_DB_PAGES, NULL),
			 VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, ~0u, NULL), VIRTIO_RDMA_ERR_NOENT);
	/* its place is free again, for the same page too */
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page, &dbn), VIRTIO_RDMA_OK);
	assert_int_equal(dbn, first);

	/* a new connection starts with none (and without the feature) */
	reconnect(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page, &dbn), VIRTIO_RDMA_ERR_UNSUPP);
	rings_on(f);
	for (i = 0; i < VDEV_MAX_DB_PAGES; i++)
		assert_null(f->v->dbs[i]);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, page, &dbn), VIRTIO_RDMA_OK);
	fx_free(f);
}

#define DB_OFF		PAGES_OFF		/* a doorbell page */
#define CQR_OFF		(PAGES_OFF + 0x1000u)	/* a CQ ring's one page */
#define CQR_LIST_OFF	(PAGES_OFF + 0x3000u)	/* its page list */

static uint8_t create_cq_ring(struct fx *f, uint32_t entries, uint32_t dbn, uint32_t bit,
			      uint32_t npages, uint64_t list, uint32_t *cqn)
{
	struct virtio_rdma_cmd_create_cq_ring q = {
		htole32(entries), htole32(dbn), htole32(bit), htole32(npages), htole64(list),
	};
	struct virtio_rdma_rsp_create_cq r = { 0 };
	uint32_t len = 0;
	uint8_t st = ctrl(f, VIRTIO_CMD_CREATE_CQ_RING, &q, sizeof(q), &r, sizeof(r), &len);

	if (st == VIRTIO_RDMA_OK) {
		assert_int_equal(len, sizeof(r));
		*cqn = le32toh(r.cqn);
	}
	return st;
}

static uint32_t ring_word(struct fx *f, uint32_t off)
{
	uint32_t w;

	memcpy(&w, f->mem + CQR_OFF + off, 4);
	return le32toh(w);
}

static void set_ring_word(struct fx *f, uint32_t off, uint32_t v)
{
	uint32_t w = htole32(v);

	memcpy(f->mem + CQR_OFF + off, &w, 4);
}

static struct virtio_rdma_cqe ring_cqe(struct fx *f, uint32_t i)
{
	struct virtio_rdma_cqe c;

	memcpy(&c, f->mem + CQR_OFF + GRING_HDR_MIN + (i % 8) * 64u, sizeof(c));
	return c;
}

#define SQR_OFF		(PAGES_OFF + 0x4000u)	/* a QP's SQ ring: 4 x 256 bytes */
#define RQR_OFF		(PAGES_OFF + 0x5000u)	/* its RQ ring: 4 x 64 bytes */
#define SQR_STRIDE	256u
#define RQR_STRIDE	64u
#define SQ_BIT		20u
#define RQ_BIT		21u

/* CREATE_QP_RING: an RC QP (2 send and 2 receive WRs of one SGE) on CQ
 * cqn, its rings at SQR_OFF and RQR_OFF (lists after the CQ's), bits on
 * doorbell page dbn; *q for the caller to spoil first. */
static void qp_ring_req(uint32_t pdn, uint32_t cqn, uint32_t dbn,
			struct virtio_rdma_cmd_create_qp_ring *q)
{
	memset(q, 0, sizeof(*q));
	q->qp.pdn = htole32(pdn);
	q->qp.qp_type = VIRTIO_IB_QPT_RC;
	q->qp.max_send_wr = q->qp.max_recv_wr = htole32(2);
	q->qp.max_send_sge = q->qp.max_recv_sge = htole32(1);
	q->qp.send_cqn = q->qp.recv_cqn = htole32(cqn);
	q->dbn = htole32(dbn);
	q->sq = (struct virtio_rdma_ring_desc){ htole32(4), htole32(SQR_STRIDE), htole32(SQ_BIT),
						 htole32(1), htole64(GPA_BASE + CQR_LIST_OFF + 0x10) };
	q->rq = (struct virtio_rdma_ring_desc){ htole32(4), htole32(RQR_STRIDE), htole32(RQ_BIT),
						 htole32(1), htole64(GPA_BASE + CQR_LIST_OFF + 0x20) };
}

static uint8_t create_qp_ring(struct fx *f, const struct virtio_rdma_cmd_create_qp_ring *q,
			      uint32_t *qpn, uint32_t *k)
{
	struct virtio_rdma_rsp_create_qp r = { 0 };
	uint32_t len = 0;
	uint8_t st = ctrl(f, VIRTIO_CMD_CREATE_QP_RING, q, sizeof(*q), &r, sizeof(r), &len);

	if (st == VIRTIO_RDMA_OK) {
		assert_int_equal(len, sizeof(r));
		*qpn = le32toh(r.qpn);
		*k = le32toh(r.qp_index);
	}
	return st;
}

/* The guest's page lists for the QP rings, and their headers cleared. */
static void qp_ring_pages(struct fx *f)
{
	uint64_t sq = htole64(GPA_BASE + SQR_OFF), rq = htole64(GPA_BASE + RQR_OFF);

	memcpy(f->mem + CQR_LIST_OFF + 0x10, &sq, 8);
	memcpy(f->mem + CQR_LIST_OFF + 0x20, &rq, 8);
	memset(f->mem + SQR_OFF, 0, 0x1000);
	memset(f->mem + RQR_OFF, 0, 0x1000);
}

static uint32_t qring_word(struct fx *f, uint64_t ring, uint32_t off)
{
	uint32_t w;

	memcpy(&w, f->mem + ring + off, 4);
	return le32toh(w);
}

static void set_qring_word(struct fx *f, uint64_t ring, uint32_t off, uint32_t v)
{
	uint32_t w = htole32(v);

	memcpy(f->mem + ring + off, &w, 4);
}

/* As the driver: a receive without SGEs (wr_id 0x4e00 + i) in RQ slot i. */
static void ring_recv_wqe(struct fx *f, uint32_t i)
{
	struct virtio_rdma_cmd_post_recv w = { .wr_id = htole64(0x4e00u + i) };

	memcpy(f->mem + RQR_OFF + GRING_HDR_MIN + (i % 4) * RQR_STRIDE, &w, sizeof(w));
}

/* As the driver: a signalled zero-length SEND (wr_id 0x5e00 + i) in SQ
 * slot i. */
static void ring_send_wqe(struct fx *f, uint32_t i)
{
	struct virtio_rdma_cmd_post_send w = {
		.send_flags = htole32(VIRTIO_IB_SEND_SIGNALED),
		.opcode = htole32(VIRTIO_IB_WR_SEND), .wr_id = htole64(0x5e00u + i),
	};

	memcpy(f->mem + SQR_OFF + SQR_STRIDE + (i % 4) * SQR_STRIDE, &w, sizeof(w));
}

/* As the driver: the queue's bit on the doorbell page (an atomic OR). */
static void ring_doorbell(struct fx *f, uint32_t bit)
{
	__atomic_fetch_or(f->mem + DB_OFF + GRING_DB_BITS_OFF + bit / 8, (uint8_t)(1u << (bit % 8)),
			  __ATOMIC_RELEASE);
}

/* docs/virtio-rdma.md section 8: CQ rings, with VIRTIO_RDMA_F_RINGS only.
 * CREATE_CQ_RING checks the depth, the doorbell page (NOENT), its bit
 * (INVAL past the page, BUSY when taken), the page count and every page
 * (FAULT outside guest memory); CREATE_CQ and REQ_NOTIFY_CQ are then
 * UNSUPP. Completions land in the slots, then `written`; an arm word with
 * a new seq arms it, its event goes on the event queue (one interrupt),
 * `armed` says taken and fired (an arm word unseen until its doorbell
 * bit; an arm taken while CQEs wait unconsumed fires at once); a consumer index that passes `written`, read when there is a CQE
 * to write, puts that CQ alone in error (CQ_ERR in its ring, counted); destroying it frees
 * its bit, so the doorbell page can go; a reset frees a live one. */
static void test_cq_ring(void **state)
{
	uint32_t pdn, cqn, cqn2, k, qpn, dbn, len, i;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_cmd_req_notify arm = { 0, htole32(VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION) };
	struct virtio_rdma_cmd_create_cq v1 = { htole32(8) };
	struct virtio_rdma_cmd_create_qp_ring qr;
	struct virtio_rdma_rsp_create_cq r1;
	struct virtio_rdma_ring_event ev;
	struct virtio_rdma_qp_attr a;
	struct virtio_rdma_cqe c;
	uint64_t page = htole64(GPA_BASE + CQR_OFF);
	int efd;

	(void)state;
	handshake(f);
	for (unsigned int q = 1; q < N_VQS; q++)
		setup_ring(f, q);
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	assert_int_equal(create_cq_ring(f, 8, 0, 0, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_UNSUPP);
	rings_on(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + DB_OFF, &dbn), VIRTIO_RDMA_OK);

	assert_int_equal(create_cq_ring(f, 0, dbn, 0, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(create_cq_ring(f, 6, dbn, 0, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(create_cq_ring(f, 8, dbn + 1, 0, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_NOENT);
	assert_int_equal(create_cq_ring(f, 8, dbn, GRING_DB_BITS, 1, GPA_BASE + CQR_LIST_OFF,
					&cqn), VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(create_cq_ring(f, 8, dbn, 0, 2, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_INVAL);
	assert_int_equal(create_cq_ring(f, 8, dbn, 0, 1, GPA_BASE + MEM_SIZE, &cqn),
			 VIRTIO_RDMA_ERR_FAULT);
	page = htole64(GPA_BASE + MEM_SIZE);		/* the ring outside guest memory */
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	assert_int_equal(create_cq_ring(f, 8, dbn, 0, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_FAULT);
	page = htole64(GPA_BASE + CQR_OFF);
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	memset(f->mem + CQR_OFF, 0xee, 0x1000);		/* whatever the page held */
	set_ring_word(f, GRING_CONS, 0);
	set_ring_word(f, GRING_ARM, 0);
	assert_int_equal(create_cq_ring(f, 8, dbn, 7, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_OK);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 0);
	assert_int_equal(ring_word(f, GRING_ARMED), 0);
	assert_int_equal(create_cq_ring(f, 8, dbn, 7, 1, GPA_BASE + CQR_LIST_OFF, &cqn2),
			 VIRTIO_RDMA_ERR_BUSY);		/* bit 7 is taken */
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, dbn, NULL), VIRTIO_RDMA_ERR_BUSY);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_CQ, &v1, sizeof(v1), &r1, sizeof(r1), &len),
			 VIRTIO_RDMA_ERR_UNSUPP);
	arm.cqn = htole32(cqn);
	assert_int_equal(ctrl(f, VIRTIO_CMD_REQ_NOTIFY_CQ, &arm, sizeof(arm), NULL, 0, &len),
			 VIRTIO_RDMA_ERR_UNSUPP);

	/* two receives flushed into the ring, armed for the next completion */
	pdn = create_pd(f);
	qp_ring_pages(f);
	qp_ring_req(pdn, cqn, dbn, &qr);
	assert_int_equal(create_qp_ring(f, &qr, &qpn, &k), VIRTIO_RDMA_OK);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	ring_recv_wqe(f, 0);
	ring_recv_wqe(f, 1);
	set_qring_word(f, RQR_OFF, GRING_PROD, 2);
	ring_doorbell(f, RQ_BIT);
	for (uint16_t b = 0; b < 3; b++)
		post_buf(f, VIRTIO_RDMA_EVENT_VQ, b, sizeof(ev), true);
	efd = call_fd(f, VIRTIO_RDMA_EVENT_VQ);
	set_ring_word(f, GRING_ARM, 1u << 2 | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_ARMED), 0);		/* no doorbell: unseen */
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_ARMED), 1);		/* taken, not fired */
	assert_int_equal(ring_word(f, GRING_WRITTEN), 0);
	assert_int_equal(signalled(efd), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = VIRTIO_IB_QPS_ERR;
	modify_qp(f, qpn, VIRTIO_IB_QP_STATE, &a);
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 2);
	for (i = 0; i < 2; i++) {
		c = ring_cqe(f, i);
		assert_int_equal(le64toh(c.wr_id), 0x4e00u + i);
		assert_int_equal(c.status, ENG_WC_WR_FLUSH_ERR);
		assert_int_equal(le32toh(c.qp_num), qpn);
	}
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);
	memcpy(&ev, f->mem + QBUF_OFF(VIRTIO_RDMA_EVENT_VQ, 0), sizeof(ev));
	assert_int_equal(le32toh(ev.cqn), cqn);
	assert_int_equal(le32toh(ev.kind), VIRTIO_RDMA_RING_EVENT_COMPLETION);
	assert_int_equal(signalled(efd), 1);
	assert_int_equal(f->v->stats.cq_interrupts, 1);
	assert_int_equal(ring_word(f, GRING_ARMED), 1u | VIRTIO_RDMA_RING_ARMED_FIRED);
	/* the same seq again arms nothing */
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);
	/* armed again while both CQEs wait unconsumed: the event at once, as an
	 * RNIC's arm with its consumer index (else a CQE written just before
	 * the arm was seen would wake no one) */
	set_ring_word(f, GRING_ARM, 2u << 2 | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 2);
	assert_int_equal(ring_word(f, GRING_ARMED), 2u | VIRTIO_RDMA_RING_ARMED_FIRED);
	assert_int_equal(signalled(efd), 1);

	/* the guest consumed both; then a consumer index past what was written */
	set_ring_word(f, GRING_CONS, 2);
	poll_dev(f);
	assert_int_equal(f->v->stats.ring_errors, 0);
	set_ring_word(f, GRING_CONS, 3);
	poll_dev(f);
	assert_int_equal(f->v->stats.ring_errors, 0);	/* nothing to write: unread */
	ring_recv_wqe(f, 2);				/* flushed at once: a CQE */
	set_qring_word(f, RQR_OFF, GRING_PROD, 3);
	ring_doorbell(f, RQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.ring_errors, 1);
	assert_true(vdev_live(f->v));			/* the CQ, not the device */
	assert_int_equal(ring_word(f, GRING_WRITTEN), 3);	/* its CQ_ERR event */
	c = ring_cqe(f, 2);
	assert_int_equal(c.opcode, VIRTIO_RDMA_WC_ASYNC_EVENT);
	assert_int_equal(le32toh(c.vendor_err), VIRTIO_RDMA_EVENT_CQ_ERR);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 3);
	memcpy(&ev, f->mem + QBUF_OFF(VIRTIO_RDMA_EVENT_VQ, 2), sizeof(ev));
	assert_int_equal(le32toh(ev.kind), VIRTIO_RDMA_RING_EVENT_ASYNC);

	/* destroyed, its bit is free and the page can go */
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	destroy(f, VIRTIO_CMD_DESTROY_CQ, cqn);
	assert_int_equal(create_cq_ring(f, 8, dbn, 7, 1, GPA_BASE + CQR_LIST_OFF, &cqn2),
			 VIRTIO_RDMA_OK);
	destroy(f, VIRTIO_CMD_DESTROY_CQ, cqn2);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, dbn, NULL), VIRTIO_RDMA_OK);
	/* a reset with a ring CQ alive frees it (the sanitizer sees a leak) */
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + DB_OFF, &dbn), VIRTIO_RDMA_OK);
	assert_int_equal(create_cq_ring(f, 8, dbn, 1, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_OK);
	reconnect(f);
	assert_null(f->v->cqs[cqn].ring.pages);
	close(efd);
	fx_free(f);
}

/* The doorbell page's need_wake, as the guest reads it. */
static uint32_t need_wake_word(const struct fx *f)
{
	uint32_t w;

	memcpy(&w, f->mem + DB_OFF + GRING_DB_NEED_WAKE, sizeof(w));
	return le32toh(w);
}

/* docs/virtio-rdma.md section 8: QP rings. CREATE_QP_RING refuses an SRQ
 * (no SRQ rings yet: UNSUPP), an unknown doorbell page, one bit for both
 * rings, a ring smaller than max_*_wr or a stride smaller than the largest
 * WQE the caps allow (INVAL), a bit in use (BUSY); CREATE_QP is then
 * UNSUPP. WQEs the guest writes are not looked at before their doorbell
 * bit; then the device takes them up to prod (taken says so) and clears
 * the bit. A prod more than a ring ahead puts that QP alone in ERR
 * (QP_FATAL, its WQEs flushed). Before sleeping the device sets need_wake
 * on each page and a bit already set is work; a bit naming no ring is
 * counted, one in a word no ring uses never looked at; a destroyed QP
 * frees its bits; a reset frees a live QP's rings. */
static void test_qp_ring(void **state)
{
	uint32_t pdn, cqn, k, qpn, dbn, qpn2, k2, len, i, fatal = 0, wake;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_cmd_create_qp_ring q;
	struct virtio_rdma_rsp_create_qp r1;
	struct virtio_rdma_cqe c;
	uint64_t page = htole64(GPA_BASE + CQR_OFF);

	(void)state;
	handshake(f);
	for (unsigned int vq = 1; vq < N_VQS; vq++)
		setup_ring(f, vq);
	rings_on(f);
	memset(f->mem + DB_OFF, 0, 0x1000);
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	memset(f->mem + CQR_OFF, 0, 0x1000);
	qp_ring_pages(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + DB_OFF, &dbn), VIRTIO_RDMA_OK);
	assert_int_equal(create_cq_ring(f, 8, dbn, 7, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_OK);
	pdn = create_pd(f);

	qp_ring_req(pdn, cqn, dbn, &q);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_QP, &q.qp, sizeof(q.qp), &r1, sizeof(r1), &len),
			 VIRTIO_RDMA_ERR_UNSUPP);
	q.qp.flags = htole32(VIRTIO_RDMA_CREATE_QP_SRQ);	/* no SRQ 0 */
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_NOENT);
	qp_ring_req(pdn, cqn, dbn + 1, &q);
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_NOENT);
	qp_ring_req(pdn, cqn, dbn, &q);
	q.rq.db_bit = q.sq.db_bit;
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_INVAL);
	qp_ring_req(pdn, cqn, dbn, &q);
	q.qp.max_send_wr = htole32(8);			/* a ring of 4 */
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_INVAL);
	qp_ring_req(pdn, cqn, dbn, &q);
	q.qp.max_send_sge = htole32(16);		/* 88 + 256 bytes in 256 */
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_INVAL);
	qp_ring_req(pdn, cqn, dbn, &q);
	q.rq.db_bit = htole32(7);			/* the CQ's */
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_BUSY);
	qp_ring_req(pdn, cqn, dbn, &q);
	q.sq.npages = htole32(2);
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_INVAL);
	qp_ring_req(pdn, cqn, dbn, &q);
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_OK);
	assert_int_equal(create_qp_ring(f, &q, &qpn2, &k2), VIRTIO_RDMA_ERR_BUSY);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);

	/* written and counted, but no doorbell: not seen */
	ring_recv_wqe(f, 0);
	ring_recv_wqe(f, 1);
	set_qring_word(f, RQR_OFF, GRING_PROD, 2);
	poll_dev(f);
	assert_int_equal(f->v->stats.recv_wqes, 0);
	ring_doorbell(f, RQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.recv_wqes, 2);
	assert_int_equal(qring_word(f, RQR_OFF, GRING_TAKEN), 2);
	assert_int_equal(f->mem[DB_OFF + GRING_DB_BITS_OFF + RQ_BIT / 8], 0);	/* taken */
	ring_send_wqe(f, 0);
	set_qring_word(f, SQR_OFF, GRING_PROD, 1);
	ring_doorbell(f, SQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.send_wqes, 1);
	assert_int_equal(qring_word(f, SQR_OFF, GRING_TAKEN), 1);

	/* before sleeping: need_wake on the page, a number new at each
	 * sleep and never 0 (a guest kicks once per number); a bit set is work */
	assert_false(vdev_want_kicks(f->v, true));
	wake = need_wake_word(f);
	assert_int_not_equal(wake, 0);
	ring_doorbell(f, 100);		/* in a word no ring uses: never looked at */
	assert_false(vdev_want_kicks(f->v, true));
	assert_int_not_equal(need_wake_word(f), 0);
	assert_int_not_equal(need_wake_word(f), wake);
	ring_doorbell(f, 22);		/* beside the rings' bits, naming none */
	assert_true(vdev_want_kicks(f->v, true));
	assert_int_equal(f->v->stats.stray_doorbells, 1);
	assert_int_equal(f->mem[DB_OFF + GRING_DB_BITS_OFF + 100 / 8], 1u << (100 % 8));
	vdev_want_kicks(f->v, false);
	assert_int_equal(need_wake_word(f), 0);

	/* a prod five ahead of a ring of four: that QP to ERR, QP_FATAL */
	set_qring_word(f, RQR_OFF, GRING_PROD, 2 + 5);
	ring_doorbell(f, RQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.ring_errors, 1);
	assert_true(vdev_live(f->v));
	assert_int_equal(ring_word(f, GRING_WRITTEN), 4);	/* 3 flushed, the event */
	for (i = 0; i < 4; i++) {
		c = ring_cqe(f, i);
		if (c.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT &&
		    le32toh(c.vendor_err) == VIRTIO_RDMA_EVENT_QP_FATAL)
			fatal++;
		else
			assert_int_equal(c.status, ENG_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(fatal, 1);

	/* destroyed, its bits are free again */
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, dbn, NULL), VIRTIO_RDMA_ERR_BUSY);
	qp_ring_pages(f);
	assert_int_equal(create_qp_ring(f, &q, &qpn2, &k2), VIRTIO_RDMA_OK);
	/* a reset with it alive frees its rings (the sanitizer sees a leak) */
	reconnect(f);
	assert_null(f->v->qps[k2].sq_ring.pages);
	fx_free(f);
}

/* A device on ABI v2 with the fixture's rings: its queues set up, a
 * doorbell page at DB_OFF (*dbn), a CQ ring of 8 at CQR_OFF on its bit 7
 * (*cqn), the QP rings' page lists, a PD (*pdn). */
static void ring_setup(struct fx *f, uint32_t *dbn, uint32_t *cqn, uint32_t *pdn)
{
	uint64_t page = htole64(GPA_BASE + CQR_OFF);

	handshake(f);
	for (unsigned int vq = 1; vq < N_VQS; vq++)
		setup_ring(f, vq);
	rings_on(f);
	memset(f->mem + DB_OFF, 0, 0x1000);
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	memset(f->mem + CQR_OFF, 0, 0x1000);
	qp_ring_pages(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + DB_OFF, dbn), VIRTIO_RDMA_OK);
	assert_int_equal(create_cq_ring(f, 8, *dbn, 7, 1, GPA_BASE + CQR_LIST_OFF, cqn),
			 VIRTIO_RDMA_OK);
	*pdn = create_pd(f);
}

/* A QP on rings in RTS on ring_setup's CQ, with 4 receives posted. */
static uint32_t ring_qp_rts(struct fx *f, uint32_t pdn, uint32_t cqn, uint32_t dbn)
{
	struct virtio_rdma_cmd_create_qp_ring qr;
	uint32_t qpn, k, i;

	qp_ring_req(pdn, cqn, dbn, &qr);
	qr.qp.max_recv_wr = htole32(4);
	assert_int_equal(create_qp_ring(f, &qr, &qpn, &k), VIRTIO_RDMA_OK);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	for (i = 0; i < 4; i++)
		ring_recv_wqe(f, i);
	set_qring_word(f, RQR_OFF, GRING_PROD, 4);
	ring_doorbell(f, RQ_BIT);
	return qpn;
}

/* docs/virtio-rdma.md section 8: a ring CQ armed for SOLICITED (IBA
 * 11.4.2.2) fires for a solicited completion, not for another; an arm
 * taken while a solicited one waits past the guest's cons fires at once
 * (else one written just before the arm was seen would wake no one), one
 * taken after the guest consumed it does not, nor a new seq without a
 * flag. */
static void test_cq_ring_solicited(void **state)
{
	uint32_t pdn, cqn, dbn, qpn;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_ring_event ev;

	(void)state;
	ring_setup(f, &dbn, &cqn, &pdn);
	qpn = ring_qp_rts(f, pdn, cqn, dbn);
	for (uint16_t b = 0; b < 4; b++)
		post_buf(f, VIRTIO_RDMA_EVENT_VQ, b, sizeof(ev), true);

	rx_send(f, qpn, 0);			/* not solicited, waits unconsumed */
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 1);
	set_ring_word(f, GRING_ARM, 1u << 2 | VIRTIO_RDMA_NOTIFY_SOLICITED);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_ARMED), 1);		/* taken, not fired */
	rx_send(f, qpn, 1);			/* another, not solicited */
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 0);
	rx_send_se(f, qpn, 2, true);		/* solicited: the event */
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 3);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);
	/* a new seq with no flag asks for nothing, though the solicited one
	 * waits unconsumed (fuzz_state: an event no arm asked for) */
	set_ring_word(f, GRING_ARM, 9u << 2);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);
	assert_int_equal(ring_word(f, GRING_ARMED), 9);
	/* armed again while it waits unconsumed: at once */
	set_ring_word(f, GRING_ARM, 2u << 2 | VIRTIO_RDMA_NOTIFY_SOLICITED);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 2);
	assert_int_equal(ring_word(f, GRING_ARMED), 2u | VIRTIO_RDMA_RING_ARMED_FIRED);
	/* consumed up to it: an arm waits for the next one */
	set_ring_word(f, GRING_CONS, 3);
	set_ring_word(f, GRING_ARM, 3u << 2 | VIRTIO_RDMA_NOTIFY_SOLICITED);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 2);
	assert_int_equal(ring_word(f, GRING_ARMED), 3);
	memcpy(&ev, f->mem + QBUF_OFF(VIRTIO_RDMA_EVENT_VQ, 1), sizeof(ev));
	assert_int_equal(le32toh(ev.cqn), cqn);
	fx_free(f);
}

/* docs/virtio-rdma.md section 8: an event the event queue has no buffer
 * for is owed, once per kind and CQ, and goes out when the driver gives
 * one; the worker counts a buffer as work only while an event is owed. */
static void test_cq_ring_event_owed(void **state)
{
	uint32_t pdn, cqn, dbn, qpn;
	uint64_t calls;
	int efd;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_ring_event ev;

	(void)state;
	ring_setup(f, &dbn, &cqn, &pdn);
	efd = call_fd(f, VIRTIO_RDMA_EVENT_VQ);
	qpn = ring_qp_rts(f, pdn, cqn, dbn);
	set_ring_word(f, GRING_ARM, 1u << 2 | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_ARMED), 1);

	rx_send(f, qpn, 0);			/* the arm is met: no buffer */
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 1);
	assert_int_equal(ring_word(f, GRING_ARMED), 1u | VIRTIO_RDMA_RING_ARMED_FIRED);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 0);
	assert_int_equal(f->v->stats.events_late, 1);
	assert_int_equal(f->v->n_ev_owed, 1);
	/* no buffer: nothing to do, the worker may sleep (kicks on) */
	poll_dev(f);
	assert_false(vdev_want_kicks(f->v, true));
	assert_int_equal(f->v->stats.events_late, 1);	/* owed once */
	/* a buffer: work, and the event goes out, once */
	post_buf(f, VIRTIO_RDMA_EVENT_VQ, 0, sizeof(ev), true);
	assert_true(vdev_want_kicks(f->v, true));
	vdev_want_kicks(f->v, false);
	post_buf(f, VIRTIO_RDMA_EVENT_VQ, 1, sizeof(ev), true);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);
	memcpy(&ev, f->mem + QBUF_OFF(VIRTIO_RDMA_EVENT_VQ, 0), sizeof(ev));
	assert_int_equal(le32toh(ev.cqn), cqn);
	assert_int_equal(le32toh(ev.kind), VIRTIO_RDMA_RING_EVENT_COMPLETION);
	assert_int_equal(f->v->n_ev_owed, 0);
	assert_int_equal(f->v->stats.cq_interrupts, 1);
	assert_int_equal(read(efd, &calls, sizeof(calls)), sizeof(calls));
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);
	assert_false(vdev_want_kicks(f->v, true));	/* a spare buffer is no work */
	vdev_want_kicks(f->v, false);

	/* owed, then the CQ destroyed: nothing owed any more */
	set_ring_word(f, GRING_ARM, 2u << 2 | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	ring_doorbell(f, 7);
	poll_dev(f);
	rx_send(f, qpn, 1);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 2);	/* the spare one */
	set_ring_word(f, GRING_ARM, 3u << 2 | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	ring_doorbell(f, 7);
	poll_dev(f);
	rx_send(f, qpn, 2);
	poll_dev(f);
	assert_int_equal(f->v->n_ev_owed, 1);
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	destroy(f, VIRTIO_CMD_DESTROY_CQ, cqn);
	assert_int_equal(f->v->n_ev_owed, 0);
	post_buf(f, VIRTIO_RDMA_EVENT_VQ, 2, sizeof(ev), true);
	poll_dev(f);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 2);
	close(efd);
	fx_free(f);
}

/* CREATE_SRQ_RING: an SRQ (2 WRs of one SGE) whose ring is the RQ ring's
 * (RQR_OFF, 4 x 64 bytes, bit RQ_BIT) on doorbell page dbn. */
static void srq_ring_req(uint32_t pdn, uint32_t dbn, struct virtio_rdma_cmd_create_srq_ring *q)
{
	memset(q, 0, sizeof(*q));
	q->srq.pdn = htole32(pdn);
	q->srq.max_wr = htole32(2);
	q->srq.max_sge = htole32(1);
	q->dbn = htole32(dbn);
	q->ring = (struct virtio_rdma_ring_desc){ htole32(4), htole32(RQR_STRIDE), htole32(RQ_BIT),
						  htole32(1), htole64(GPA_BASE + CQR_LIST_OFF + 0x20) };
}

static uint8_t create_srq_ring(struct fx *f, const struct virtio_rdma_cmd_create_srq_ring *q,
			       uint32_t *srqn, uint32_t *k)
{
	struct virtio_rdma_rsp_create_srq r = { 0 };
	uint32_t len = 0;
	uint8_t st = ctrl(f, VIRTIO_CMD_CREATE_SRQ_RING, q, sizeof(*q), &r, sizeof(r), &len);

	if (st == VIRTIO_RDMA_OK) {
		assert_int_equal(len, sizeof(r));
		*srqn = le32toh(r.srqn);
		*k = le32toh(r.srq_index);
	}
	return st;
}

/* docs/virtio-rdma.md section 8: SRQ rings. With VIRTIO_RDMA_F_RINGS,
 * CREATE_SRQ is UNSUPP; CREATE_SRQ_RING checks the doorbell page (NOENT),
 * the reserved word, the depth against max_wr (INVAL) and the bit (BUSY);
 * a QP ring on the SRQ has a send ring only (its RQ descriptor unused).
 * Receives in the SRQ's ring are taken when a message for one of its QPs
 * arrives (before any doorbell) and at its doorbell; a lying prod costs the
 * SRQ, read no more, and its QPs (QP_FATAL), counted once; a destroyed SRQ
 * frees its bit; a reset frees a live one's ring. */
static void test_srq_ring(void **state)
{
	uint32_t pdn, cqn, dbn, srqn, ks, qpn, k, srqn2, ks2, len, i, fatal = 0;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_cmd_create_srq_ring q;
	struct virtio_rdma_cmd_create_qp_ring qr;
	struct virtio_rdma_rsp_create_srq r1;
	struct virtio_rdma_cqe c;

	(void)state;
	ring_setup(f, &dbn, &cqn, &pdn);
	srq_ring_req(pdn, dbn, &q);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_SRQ, &q.srq, sizeof(q.srq), &r1, sizeof(r1),
			      &len), VIRTIO_RDMA_ERR_UNSUPP);
	q.dbn = htole32(dbn + 1);
	assert_int_equal(create_srq_ring(f, &q, &srqn, &ks), VIRTIO_RDMA_ERR_NOENT);
	srq_ring_req(pdn, dbn, &q);
	q.reserved = htole32(1);
	assert_int_equal(create_srq_ring(f, &q, &srqn, &ks), VIRTIO_RDMA_ERR_INVAL);
	srq_ring_req(pdn, dbn, &q);
	q.srq.max_wr = htole32(8);			/* a ring of 4 */
	assert_int_equal(create_srq_ring(f, &q, &srqn, &ks), VIRTIO_RDMA_ERR_INVAL);
	srq_ring_req(pdn, dbn, &q);
	q.srq.max_sge = htole32(4);			/* 16 + 64 bytes in 64 */
	assert_int_equal(create_srq_ring(f, &q, &srqn, &ks), VIRTIO_RDMA_ERR_INVAL);
	srq_ring_req(pdn, dbn, &q);
	q.ring.db_bit = htole32(7);			/* the CQ's */
	assert_int_equal(create_srq_ring(f, &q, &srqn, &ks), VIRTIO_RDMA_ERR_BUSY);
	srq_ring_req(pdn, dbn, &q);
	assert_int_equal(create_srq_ring(f, &q, &srqn, &ks), VIRTIO_RDMA_OK);
	assert_int_equal(create_srq_ring(f, &q, &srqn2, &ks2), VIRTIO_RDMA_ERR_BUSY);

	qp_ring_req(pdn, cqn, dbn, &qr);
	qr.qp.flags = htole32(VIRTIO_RDMA_CREATE_QP_SRQ);
	qr.qp.srqn = htole32(srqn + 1);
	assert_int_equal(create_qp_ring(f, &qr, &qpn, &k), VIRTIO_RDMA_ERR_NOENT);
	qr.qp.srqn = htole32(srqn);
	qr.rq.db_bit = qr.sq.db_bit;			/* unused: no RQ ring */
	assert_int_equal(create_qp_ring(f, &qr, &qpn, &k), VIRTIO_RDMA_OK);
	assert_null(f->v->qps[k].rq_ring.pages);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);

	/* no doorbell yet: the message's arrival reads the SRQ's ring */
	ring_recv_wqe(f, 0);
	ring_recv_wqe(f, 1);
	set_qring_word(f, RQR_OFF, GRING_PROD, 2);
	poll_dev(f);
	assert_int_equal(f->v->stats.srq_wqes, 0);
	rx_send(f, qpn, 0);
	poll_dev(f);
	assert_int_equal(f->v->stats.srq_wqes, 2);
	assert_int_equal(qring_word(f, RQR_OFF, GRING_TAKEN), 2);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 1);
	c = ring_cqe(f, 0);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.opcode, 128);	/* IB_WC_RECV */
	assert_int_equal(le64toh(c.wr_id), 0x4e00);
	assert_int_equal(le32toh(c.qp_num), qpn);
	ring_recv_wqe(f, 2);
	set_qring_word(f, RQR_OFF, GRING_PROD, 3);
	ring_doorbell(f, RQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.srq_wqes, 3);
	assert_int_equal(qring_word(f, RQR_OFF, GRING_TAKEN), 3);

	/* a prod five ahead of a ring of four: the SRQ and its QP */
	set_qring_word(f, RQR_OFF, GRING_PROD, 3 + 5);
	ring_doorbell(f, RQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.ring_errors, 1);
	assert_true(vdev_live(f->v));
	for (i = 1; i < ring_word(f, GRING_WRITTEN); i++) {
		c = ring_cqe(f, i);
		if (c.opcode == VIRTIO_RDMA_WC_ASYNC_EVENT &&
		    le32toh(c.vendor_err) == VIRTIO_RDMA_EVENT_QP_FATAL)
			fatal++;
	}
	assert_int_equal(fatal, 1);
	rx_send(f, qpn, 1);			/* read no more, counted once */
	ring_doorbell(f, RQ_BIT);
	poll_dev(f);
	assert_int_equal(f->v->stats.ring_errors, 1);
	assert_int_equal(f->v->stats.srq_wqes, 3);

	/* destroyed, its bit is free again */
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	destroy(f, VIRTIO_CMD_DESTROY_SRQ, srqn);
	memset(f->mem + RQR_OFF, 0, 0x1000);
	assert_int_equal(create_srq_ring(f, &q, &srqn2, &ks2), VIRTIO_RDMA_OK);
	/* a reset with it alive frees its ring (the sanitizer sees a leak) */
	reconnect(f);
	assert_null(f->v->qps[ks2].rq_ring.pages);
	fx_free(f);
}

/* docs/virtio-rdma.md section 8, Limits: with ABI v2 a VM's CQs and QPs
 * need no virtqueue, so the config's ring_max_cq/ring_max_qp bound them
 * (the config space says so), not v1's max_cq/max_qp. Negotiating v2
 * resets the device sized for rings: CQ and QP rings past v1's limits
 * work (a doorbell reaches a QP in a slot v1 has no queues for), one past
 * ring_max_* is NOMEM; a driver back on v1 gets v1's limits again. */
static void test_ring_tables(void **state)
{
	uint32_t pdn, cqn, dbn, qpn, k = 0, len, i;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_cmd_create_cq v1 = { htole32(8) };
	struct virtio_rdma_cmd_create_qp_ring q;
	struct virtio_rdma_rsp_create_cq r1;
	struct virtio_rdma_config cfg;
	uint64_t page = htole64(GPA_BASE + CQR_OFF);

	(void)state;
	handshake(f);
	for (unsigned int vq = 1; vq < N_VQS; vq++)
		setup_ring(f, vq);
	read_config(f, &cfg);
	assert_int_equal(le32toh(cfg.ring_max_cq), RING_MAX_CQ);
	assert_int_equal(le32toh(cfg.ring_max_qp), RING_MAX_QP);
	assert_int_equal(le32toh(cfg.ring_max_srq), RING_MAX_QP - 1);
	assert_int_equal(le32toh(cfg.max_db_pages), VDEV_MAX_DB_PAGES);
	for (i = 0; i < MAX_CQ; i++)
		create_cq(f, 8);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_CQ, &v1, sizeof(v1), &r1, sizeof(r1), &len),
			 VIRTIO_RDMA_ERR_NOMEM);

	rings_on(f);
	assert_null(f->v->cqs[0].eng);		/* a reset: v1's CQs went */
	memset(f->mem + DB_OFF, 0, 0x1000);
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	qp_ring_pages(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + DB_OFF, &dbn), VIRTIO_RDMA_OK);
	for (i = 0; i < RING_MAX_CQ; i++) {	/* one ring page for all: the guest's business */
		assert_int_equal(create_cq_ring(f, 8, dbn, i, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
				 VIRTIO_RDMA_OK);
		assert_int_equal(cqn, i);
	}
	assert_int_equal(create_cq_ring(f, 8, dbn, i, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_ERR_NOMEM);
	pdn = create_pd(f);
	for (i = 0; i < RING_MAX_QP; i++) {
		qp_ring_req(pdn, RING_MAX_CQ - 1, dbn, &q);
		q.sq.db_bit = htole32(100 + 2 * i);
		q.rq.db_bit = htole32(101 + 2 * i);
		assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_OK);
		assert_int_equal(k, i);
	}
	q.sq.db_bit = htole32(100 + 2 * i);
	q.rq.db_bit = htole32(101 + 2 * i);
	assert_int_equal(create_qp_ring(f, &q, &qpn, &k), VIRTIO_RDMA_ERR_NOMEM);
	/* the last QP (slot RING_MAX_QP - 1) takes a receive at its bit */
	qp_up(f, qpn, VIRTIO_IB_QPS_INIT);
	ring_recv_wqe(f, 0);
	set_qring_word(f, RQR_OFF, GRING_PROD, 1);
	ring_doorbell(f, 101 + 2 * (RING_MAX_QP - 1));
	poll_dev(f);
	assert_int_equal(f->v->stats.recv_wqes, 1);
	assert_int_equal(f->v->stats.stray_doorbells, 0);
	/* no CQ has anything to do: the poll looks at none of the 40 */
	assert_int_equal(f->v->cq_dirty[0], 0);
	ring_doorbell(f, 3);				/* CQ 3's arm word */
	vdev_poll_rings(f->v);
	assert_int_equal(f->v->cq_dirty[0], 1u << 3);
	poll_dev(f);
	assert_int_equal(f->v->cq_dirty[0], 0);

	/* a driver loaded again without rings, no reconnect (features sent
	 * without the bit): v1 at once */
	assert_int_equal(send_u64(f, VHOST_USER_SET_FEATURES, V1, EXPECT_FEATURES), 0);
	assert_false(f->v->ring_mode);
	create_cq(f, 8);
	/* back on v1: v1's limits */
	reconnect(f);
	for (i = 0; i < MAX_CQ; i++)
		create_cq(f, 8);
	assert_int_equal(ctrl(f, VIRTIO_CMD_CREATE_CQ, &v1, sizeof(v1), &r1, sizeof(r1), &len),
			 VIRTIO_RDMA_ERR_NOMEM);
	fx_free(f);
}

/* docs/restart.md, format 2: a device on ABI v2 restarted with its doorbell
 * pages, rings and their device-side indexes (the new vrdmad saves it to the
 * same bytes). A doorbell rung while no vrdmad ran is answered after; the
 * CQ stays armed; its bits and page are freed as before. The VM's ring
 * limits changed: refused. Every byte of the state changed (CRC made right)
 * is refused or restores, and nothing leaks. */
static void test_restart_rings(void **state)
{
	uint32_t pdn, cqn, dbn, db2, k, qpn, i;
	struct fx *f = fx_new("vm-a", 1);
	struct virtio_rdma_cmd_create_qp_ring qr;
	struct vrdma_vm_config other;
	struct virtio_rdma_ring_event ev;
	struct keeper kp = { .n = 0 };
	struct sbuf saved = { 0 };
	uint64_t page = htole64(GPA_BASE + CQR_OFF);
	unsigned int fds, refused = 0;
	struct virtio_rdma_cqe c;
	uint8_t *copy;
	char why[200];
	int efd;

	(void)state;
	handshake(f);
	for (unsigned int vq = 1; vq < N_VQS; vq++)
		setup_ring(f, vq);
	rings_on(f);
	memset(f->mem + DB_OFF, 0, 0x1000);
	memcpy(f->mem + CQR_LIST_OFF, &page, 8);
	memset(f->mem + CQR_OFF, 0, 0x1000);
	qp_ring_pages(f);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + SCRATCH_OFF, &db2),
			 VIRTIO_RDMA_OK);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_ADD_DB_PAGE, GPA_BASE + DB_OFF, &dbn), VIRTIO_RDMA_OK);
	assert_int_equal(create_cq_ring(f, 8, dbn, 7, 1, GPA_BASE + CQR_LIST_OFF, &cqn),
			 VIRTIO_RDMA_OK);
	pdn = create_pd(f);
	qp_ring_req(pdn, cqn, dbn, &qr);
	assert_int_equal(create_qp_ring(f, &qr, &qpn, &k), VIRTIO_RDMA_OK);
	qp_up(f, qpn, VIRTIO_IB_QPS_RTS);
	ring_recv_wqe(f, 0);
	set_qring_word(f, RQR_OFF, GRING_PROD, 1);
	ring_doorbell(f, RQ_BIT);
	for (uint16_t b = 0; b < 3; b++)
		post_buf(f, VIRTIO_RDMA_EVENT_VQ, b, sizeof(ev), true);
	efd = call_fd(f, VIRTIO_RDMA_EVENT_VQ);
	set_ring_word(f, GRING_ARM, 1u << 2 | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION);
	ring_doorbell(f, 7);
	poll_dev(f);
	assert_int_equal(qring_word(f, RQR_OFF, GRING_TAKEN), 1);
	assert_int_equal(ring_word(f, GRING_ARMED), 1);
	/* rung while no vrdmad runs */
	ring_recv_wqe(f, 1);
	set_qring_word(f, RQR_OFF, GRING_PROD, 2);
	ring_doorbell(f, RQ_BIT);

	fds = count_fds();
	restart_fx(f, &saved);
	assert_int_equal(count_fds(), fds);
	/* what the old one may have left mid-way (a queue it could not take
	 * all of, a CQ with a completion held) is looked at again */
	assert_int_equal(f->v->n_ring_pend, 2);
	assert_int_equal(f->v->cq_dirty[0], 1ull << cqn);
	assert_works(f);
	poll_dev(f);
	assert_int_equal(qring_word(f, RQR_OFF, GRING_TAKEN), 2);
	assert_int_equal(f->v->stats.recv_wqes, 2);	/* the counters came along */
	rx_send(f, qpn, 0);
	poll_dev(f);
	assert_int_equal(ring_word(f, GRING_WRITTEN), 1);
	c = ring_cqe(f, 0);
	assert_int_equal(c.status, 0);
	assert_int_equal(le64toh(c.wr_id), 0x4e00);
	assert_int_equal(used_idx(f, VIRTIO_RDMA_EVENT_VQ), 1);	/* still armed */
	assert_int_equal(signalled(efd), 1);

	/* the VM's ring limits changed, then every byte */
	sb_free(&saved);
	memset(&saved, 0, sizeof(saved));
	assert_int_equal(vdev_save(f->v, &test_info, &saved, keep_fd, &kp), 0);
	keeper_close(&kp);
	copy = malloc(saved.len);
	assert_non_null(copy);
	other = f->cfg;
	other.ring_max_qp = RING_MAX_QP + 1;
	{
		struct sbuf s_ = { 0 };

		assert_int_equal(vdev_save(f->v, &test_info, &s_, keep_fd, &kp), 0);
		sb_free(&s_);
	}
	if (try_restore(f, &other, saved.p, saved.len, &kp, why, sizeof(why)) != -ERANGE ||
	    !strstr(why, "ring_max_qp"))
		fail_msg("ring_max_qp changed: %s", why);
	for (i = 16; i + 4 < saved.len; i++) {
		struct sbuf s_ = { 0 };

		memcpy(copy, saved.p, saved.len);
		copy[i] ^= 0x5a;
		recrc(copy, saved.len);
		assert_int_equal(vdev_save(f->v, &test_info, &s_, keep_fd, &kp), 0);
		sb_free(&s_);
		refused += try_restore(f, &f->cfg, copy, saved.len, &kp, why, sizeof(why)) != 0;
		assert_int_equal(count_fds(), fds);
	}
	assert_true(refused > saved.len / 8);
	free(copy);
	sb_free(&saved);

	/* its bits and pages go as before */
	destroy(f, VIRTIO_CMD_DESTROY_QP, qpn);
	destroy(f, VIRTIO_CMD_DESTROY_CQ, cqn);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, dbn, NULL), VIRTIO_RDMA_OK);
	assert_int_equal(db_cmd(f, VIRTIO_CMD_DEL_DB_PAGE, db2, NULL), VIRTIO_RDMA_OK);
	close(efd);
	fx_free(f);
}

static int setup_log(void **state)
{
	(void)state;
	log_set_level(VRDMA_LOG_ERROR);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_virtq_pop_contract, teardown_fx),
		cmocka_unit_test_teardown(test_handshake, teardown_fx),
		cmocka_unit_test_teardown(test_bad_messages, teardown_fx),
		cmocka_unit_test_teardown(test_bad_rings, teardown_fx),
		cmocka_unit_test_teardown(test_fd_counts, teardown_fx),
		cmocka_unit_test_teardown(test_eventfds, teardown_fx),
		cmocka_unit_test_teardown(test_mem_table, teardown_fx),
		cmocka_unit_test_teardown(test_mem_table_seals, teardown_fx),
		cmocka_unit_test_teardown(test_mem_table_overlap_at_top, teardown_fx),
		cmocka_unit_test_teardown(test_vring_base, teardown_fx),
		cmocka_unit_test_teardown(test_violations, teardown_fx),
		cmocka_unit_test_teardown(test_indirect_ok, teardown_fx),
		cmocka_unit_test_teardown(test_ctrl_commands, teardown_fx),
		cmocka_unit_test_teardown(test_mr_limits, teardown_fx),
		cmocka_unit_test_teardown(test_poll_pages, teardown_fx),
		cmocka_unit_test_teardown(test_free_with_resources, teardown_fx),
		cmocka_unit_test_teardown(test_reset, teardown_fx),
		cmocka_unit_test_teardown(test_destroy_qp_returns_sq, teardown_fx),
		cmocka_unit_test_teardown(test_destroy_qp_returns_rq, teardown_fx),
		cmocka_unit_test_teardown(test_destroy_cq_returns_buffers, teardown_fx),
		cmocka_unit_test_teardown(test_slot_without_object, teardown_fx),
		cmocka_unit_test_teardown(test_srq_slot, teardown_fx),
		cmocka_unit_test_teardown(test_no_protocol_features, teardown_fx),
		cmocka_unit_test_teardown(test_vu_recv, teardown_fx),
		cmocka_unit_test_teardown(test_mw_commands, teardown_fx),
		cmocka_unit_test(test_db_pages),
		cmocka_unit_test(test_cq_ring),
		cmocka_unit_test(test_qp_ring),
		cmocka_unit_test(test_srq_ring),
		cmocka_unit_test(test_cq_ring_solicited),
		cmocka_unit_test(test_cq_ring_event_owed),
		cmocka_unit_test(test_ring_tables),
		cmocka_unit_test_teardown(test_restart_device, teardown_fx),
		cmocka_unit_test_teardown(test_restore_device_refused, teardown_fx),
		cmocka_unit_test(test_restart_rings),
	};

	return cmocka_run_group_tests(tests, setup_log, NULL);
}
