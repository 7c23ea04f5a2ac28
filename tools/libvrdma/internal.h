/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libvrdma's insides, shared by its files and by tests that attack the
 * daemon with its own vhost-user code (tests/integration/hostile.c); the
 * API is tools/libvrdma.h.
 *
 * The front-end (QEMU's part) and the virtio-rdma driver (the guest's
 * part) in one process. The device ABI is docs/virtio-rdma.md, the
 * transport QEMU's docs/interop/vhost-user.rst. Guest memory is one memfd,
 * sealed so that it cannot shrink (the daemon refuses it otherwise), mapped
 * here and given to the daemon with SET_MEM_TABLE as a single region at
 * guest-physical GPA_BASE. Rings, WQE, CQE and control buffers and the
 * caller's buffers all come from it through a first-fit allocator of 4 KiB
 * pages.
 */
#ifndef LIBVRDMA_INTERNAL_H
#define LIBVRDMA_INTERNAL_H

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libvrdma.h"
#include "vhost_user.h"

/* The ABI is little-endian and the structures are used as they are. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libvrdma supports little-endian hosts only"
#endif

#define GPA_BASE		0x100000000ull	/* guest-physical address of the memfd */
#define SHM_PAGE		4096u
#define DEFAULT_MEM_SIZE	(64u << 20)
#define DEFAULT_TIMEOUT_MS	5000u
#define CTRL_RING_SIZE		64u
#define CTRL_SLOTS		(CTRL_RING_SIZE / 2)	/* two descriptors per request */
#define CTRL_PART		512u	/* per slot: request part, then response part */
#define SPIN_NS			50000	/* busy-wait on a used ring before sleeping */
#define RESOLVE_WAIT_NS		1000000000ll
#define RESOLVE_STEP_NS		50000000ll
#define RESOLVE_CACHE_NS	(10ll * 1000000000)
#define RESOLVE_CACHE_LEN	16
/* virtio status: ACKNOWLEDGE | DRIVER | DRIVER_OK | FEATURES_OK */
#define STATUS_READY		(1u | 2u | 4u | 8u)

#define container_of(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

struct link {
	struct link *prev, *next;
};

static inline void list_init(struct link *head)
{
	head->prev = head->next = head;
}

static inline void list_add(struct link *head, struct link *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

static inline void list_del(struct link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

/* A split virtqueue as the driver sees it. */
struct vring {
	unsigned int index;		/* vhost-user queue index */
	unsigned int num;
	void *mem;			/* desc, avail and used in one allocation */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	int kick_fd, call_fd;
	uint16_t avail_idx;		/* next avail index to publish */
	uint16_t last_used;		/* next used index to consume */
	bool told;			/* the daemon knows it: GET_VRING_BASE on teardown */
};

/* ABI v2 (docs/virtio-rdma.md section 8): a ring in our memory. */
struct uring {
	uint8_t *mem;			/* header, then the slots; NULL: no ring */
	uint32_t entries, stride, hdr;
	uint32_t bit;			/* its doorbell bit */
	uint32_t idx;			/* ours: prod (a work queue) or cons (a CQ) */
};

/* A send or receive queue: descriptor i always points at WQE buffer i;
 * with rings, a ring of slots instead. */
struct wq {
	struct uring ring;
	struct vring vq;
	uint8_t *bufs;
	size_t slot_size;
	uint16_t *free_ids;		/* a stack of descriptors not in the device's hands */
	unsigned int nfree;
	bool *busy;
	void **extra;			/* vrdma_post_raw buffers larger than a slot */
};

struct extent {
	size_t off, len;
	struct extent *next;
};

struct ctrl_slot {
	bool busy;			/* its descriptors are with the device */
	void *extra;			/* a larger buffer for vrdma_ctrl_raw */
};

struct vrdma_ctx {
	int sock, memfd;
	uint8_t *mem;
	size_t mem_size;
	unsigned int timeout_ms;
	bool dead;			/* connection lost or out of step: no more requests */
	bool reply_ack;
	bool poll_yield;		/* an empty poll gives up the CPU */
	uint32_t max_cq, max_qp;
	struct extent *free_list;	/* sorted by offset, coalesced */
	uint32_t *alloc_pages;		/* per page: length in pages of the allocation starting there */
	struct vring ctrl;
	uint8_t *ctrl_buf;
	/* ABI v2 (VRDMA_RINGS=1): the doorbell page and the wake queue */
	bool rings;
	uint8_t *db;
	uint32_t dbn, next_bit;		/* next_bit: where to look for a free one */
	uint32_t kicked;		/* need_wake's number last kicked for */
	uint64_t bits_used[VIRTIO_RDMA_DB_BITS / 64];	/* of our doorbell page */
	struct vring wake;
	struct vring event;		/* the device's events, one per buffer */
	struct virtio_rdma_ring_event *ev_bufs;
	struct ctrl_slot slots[CTRL_SLOTS];
	struct link pds, mrs, mws, cqs, qps, srqs;
};

struct vrdma_pd {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t pdn;
};

struct vrdma_mr {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t mrn, lkey, rkey;
};

struct vrdma_mw {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t mwn, rkey;
};

struct vrdma_cq {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t cqn;
	struct uring ring;		/* with rings: the CQEs are here */
	uint32_t arm_seq;		/* with rings: the last arm's seq */
	bool event_seen;		/* with rings: an event for it, not waited for yet */
	struct vring vq;
	struct virtio_rdma_cqe *bufs;	/* descriptor i always points at bufs[i] */
};

struct vrdma_qp {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t qpn;
	uint8_t qp_type;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	struct wq sq, rq;
};

struct vrdma_srq {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t srqn, max_sge;
	struct wq rq;			/* the RQ of the slot it holds */
};

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Milliseconds until deadline for poll(), rounded up so that a wait never
 * ends early; -1 for no deadline. */
static inline int ms_until(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ns();
	if (left <= 0)
		return 0;
	left = (left + 999999) / 1000000;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static inline bool all_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return false;
	return true;
}

static inline unsigned int ring_size_for(uint32_t n)
{
	unsigned int num = 1;

	while (num < n && num < VIRTQ_MAX_SIZE)
		num <<= 1;
	return num;
}

/* shm.c (the shared memory: first fit over the memfd, in pages) */
void *shm_alloc(struct vrdma_ctx *ctx, size_t len);
void shm_free(struct vrdma_ctx *ctx, void *p);
bool in_shm(const struct vrdma_ctx *ctx, const void *p, size_t len);

/* vhost_client.c (the vhost-user front-end: messages, handshake, memory table) */
int conn_lost(struct vrdma_ctx *ctx, int err);
int vu_call(struct vrdma_ctx *ctx, uint32_t request, const void *payload, uint32_t size,
	    const int *fds, unsigned int nfds, void *reply, uint32_t *reply_size);
int vu_set_state(struct vrdma_ctx *ctx, uint32_t request, unsigned int index, unsigned int num);
int vu_set_fd(struct vrdma_ctx *ctx, uint32_t request, unsigned int index, int fd);
int get_config(struct vrdma_ctx *ctx, uint32_t offset, void *buf, uint32_t len);
int vrdma_connect(const char *path, unsigned int timeout_ms);
int handshake(struct vrdma_ctx *ctx);

/* vring.c (split virtqueues as the driver sees them, and the WQE rings on them) */
void vring_init(struct vring *vq);
int vring_setup(struct vrdma_ctx *ctx, struct vring *vq, unsigned int index,
		unsigned int num, uint16_t avail_flags);
bool vring_teardown(struct vrdma_ctx *ctx, struct vring *vq);
void vring_push(struct vring *vq, uint16_t head);
void vring_publish(struct vring *vq);
int vring_peek_used(struct vring *vq, uint32_t *id, uint32_t *len);
void vring_close_fds(struct vring *vq);
size_t vring_bytes(unsigned int num);
size_t wq_bytes(uint32_t max_wr, size_t slot_size);
void wq_free(struct wq *wq);
int wq_setup(struct vrdma_ctx *ctx, struct wq *wq, unsigned int index, uint32_t max_wr,
	     size_t slot_size);
void wq_teardown(struct vrdma_ctx *ctx, struct wq *wq);
int wq_get(struct vrdma_ctx *ctx, struct wq *wq, size_t len, uint8_t **buf);
void wq_post(struct vrdma_ctx *ctx, struct wq *wq, unsigned int id, const uint8_t *buf, size_t len);

/* verbs.c (the WQE sizes of a QP's queues) */
size_t sq_slot_size(const struct vrdma_qp_init_attr *init);
size_t rq_slot_size(const struct vrdma_qp_init_attr *init);
size_t srq_slot_size(uint32_t max_sge);

/* ctrl.c (the control queue) */
int ctrl_cmd(struct vrdma_ctx *ctx, uint8_t cmd, const void *req, size_t req_len,
	     void *rsp, size_t rsp_len);

/* neigh.c (destination MACs) */
void resolve_cached(const uint8_t gid[16], uint8_t mac[6]);

/* rings.c: ABI v2. The doorbell page and the wake queue at open; a CQ's or
 * a QP's rings at create (after which the caller sends nothing else); a
 * ring's memory back at destroy; polling a CQ ring; a WQE slot and its
 * post (prod, then the bit, then a kick if the device sleeps). */
int rings_open(struct vrdma_ctx *ctx);
size_t ring_mem_ctx(void);
size_t ring_mem_cq(uint32_t cqe);
size_t ring_mem_qp(uint32_t max_send_wr, uint32_t max_recv_wr, size_t send_slot,
		   size_t recv_slot);
int ring_create_cq(struct vrdma_ctx *ctx, struct vrdma_cq *cq, uint32_t cqe);
int ring_create_qp(struct vrdma_ctx *ctx, struct vrdma_qp *qp,
		   const struct virtio_rdma_cmd_create_qp *req, uint32_t max_send_wr,
		   uint32_t max_recv_wr, size_t send_slot, size_t recv_slot, uint32_t *k);
int ring_create_srq(struct vrdma_ctx *ctx, struct vrdma_srq *srq,
		    const struct virtio_rdma_cmd_create_srq *req, size_t slot);
void uring_free(struct vrdma_ctx *ctx, struct uring *r);
int ring_poll_cq(struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc);
int uring_get(struct wq *wq, size_t len, uint8_t **buf);
void uring_post(struct vrdma_ctx *ctx, struct wq *wq);
/* A CQ ring's arm word and bit; a wait for its next event (1, 0 at the
 * deadline, or a negative errno). */
int ring_req_notify_cq(struct vrdma_cq *cq, bool solicited_only);
/* verbs.c: until the eventfd fires (1, its count read), the deadline
 * passes (0), or the connection goes (its error). */
int wait_eventfd(struct vrdma_ctx *ctx, int fd, int64_t deadline);
int ring_cq_wait(struct vrdma_cq *cq, int64_t deadline);

#endif
