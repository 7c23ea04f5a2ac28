// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma: the vhost-user front-end (QEMU's part) and the virtio-rdma driver
 * (the guest's part) in one process, behind tools/libvrdma.h. The device ABI
 * is docs/virtio-rdma.md, the transport QEMU's docs/interop/vhost-user.rst.
 *
 * Guest memory is one memfd, sealed so that it cannot shrink (the daemon
 * refuses it otherwise), mapped here and given to the daemon with
 * SET_MEM_TABLE as a single region at guest-physical GPA_BASE. Rings, WQE,
 * CQE and control buffers and the caller's buffers all come from it through
 * a first-fit allocator of 4 KiB pages.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "libvrdma.h"
#include "roce_wire.h"
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

static void list_init(struct link *head)
{
	head->prev = head->next = head;
}

static void list_add(struct link *head, struct link *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

static void list_del(struct link *n)
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

/* A send or receive queue: descriptor i always points at WQE buffer i. */
struct wq {
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
	struct ctrl_slot slots[CTRL_SLOTS];
	struct link pds, mrs, cqs, qps;
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

struct vrdma_cq {
	struct link link;
	struct vrdma_ctx *ctx;
	uint32_t cqn;
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

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Milliseconds until deadline for poll(), rounded up so that a wait never
 * ends early; -1 for no deadline. */
static int ms_until(int64_t deadline)
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

static bool all_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return false;
	return true;
}

static unsigned int ring_size_for(uint32_t n)
{
	unsigned int num = 1;

	while (num < n && num < VIRTQ_MAX_SIZE)
		num <<= 1;
	return num;
}

/* ---- shared memory: first fit over the memfd, in pages ---- */

static void *shm_alloc(struct vrdma_ctx *ctx, size_t len)
{
	size_t need = (len ? (len + SHM_PAGE - 1) / SHM_PAGE : 1) * SHM_PAGE;
	struct extent **pp, *e;
	size_t off;

	if (len > ctx->mem_size)
		return NULL;
	for (pp = &ctx->free_list; (e = *pp); pp = &e->next)
		if (e->len >= need)
			break;
	if (!e)
		return NULL;
	off = e->off;
	e->off += need;
	e->len -= need;
	if (!e->len) {
		*pp = e->next;
		free(e);
	}
	ctx->alloc_pages[off / SHM_PAGE] = need / SHM_PAGE;
	memset(ctx->mem + off, 0, need);
	return ctx->mem + off;
}

static void shm_free(struct vrdma_ctx *ctx, void *p)
{
	struct extent **pp, *prev = NULL, *e;
	size_t off, len;

	if (!p || (uint8_t *)p < ctx->mem || (uint8_t *)p >= ctx->mem + ctx->mem_size)
		return;
	off = (uint8_t *)p - ctx->mem;
	if (off % SHM_PAGE || !ctx->alloc_pages[off / SHM_PAGE])
		return;		/* not an allocation: ignore, as free() cannot */
	len = (size_t)ctx->alloc_pages[off / SHM_PAGE] * SHM_PAGE;
	ctx->alloc_pages[off / SHM_PAGE] = 0;
	for (pp = &ctx->free_list; (e = *pp) && e->off < off; pp = &e->next)
		prev = e;
	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (e && off + len == e->off) {
			prev->len += e->len;
			prev->next = e->next;
			free(e);
		}
		return;
	}
	if (e && off + len == e->off) {
		e->off = off;
		e->len += len;
		return;
	}
	e = malloc(sizeof(*e));
	if (!e)
		return;		/* the pages stay unusable until close; nothing breaks */
	e->off = off;
	e->len = len;
	e->next = *pp;
	*pp = e;
}

uint64_t vrdma_gpa(struct vrdma_ctx *ctx, const void *p)
{
	if (!ctx || (const uint8_t *)p < ctx->mem || (const uint8_t *)p >= ctx->mem + ctx->mem_size)
		return 0;
	return GPA_BASE + (uint64_t)((const uint8_t *)p - ctx->mem);
}

/* Is [p, p + len) inside the shared memory? */
static bool in_shm(const struct vrdma_ctx *ctx, const void *p, size_t len)
{
	const uint8_t *b = p;

	return b >= ctx->mem && b <= ctx->mem + ctx->mem_size &&
	       len <= (size_t)(ctx->mem + ctx->mem_size - b);
}

void *vrdma_alloc_buf(struct vrdma_ctx *ctx, size_t len)
{
	if (!ctx || !len)
		return NULL;
	return shm_alloc(ctx, len);
}

void vrdma_free_buf(struct vrdma_ctx *ctx, void *buf)
{
	if (ctx)
		shm_free(ctx, buf);
}

/* ---- vhost-user messages ---- */

/* The stream is out of step or gone: refuse everything from now on. */
static int conn_lost(struct vrdma_ctx *ctx, int err)
{
	ctx->dead = true;
	return err;
}

static int vu_send(struct vrdma_ctx *ctx, uint32_t request, uint32_t flags,
		   const void *payload, uint32_t size, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	struct vhost_user_header hdr = {
		.request = request, .flags = VHOST_USER_VERSION | flags, .size = size,
	};
	/* the wire has the payload right after the 12-byte header: struct
	 * vhost_user_msg, not packed, has padding there */
	uint8_t msg[sizeof(hdr) + sizeof(union vhost_user_payload)];
	size_t total = sizeof(hdr) + size, sent = 0;
	struct msghdr mh = { 0 };
	struct iovec iov;

	if (ctx->dead)
		return -ECONNRESET;
	if (size > sizeof(union vhost_user_payload) || nfds > VHOST_USER_MAX_FDS)
		return -EINVAL;
	memcpy(msg, &hdr, sizeof(hdr));
	if (size)
		memcpy(msg + sizeof(hdr), payload, size);
	if (nfds) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	while (sent < total) {
		ssize_t n;

		iov.iov_base = msg + sent;
		iov.iov_len = total - sent;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		n = sendmsg(ctx->sock, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* SO_SNDTIMEO expired: the daemon stopped reading */
			return conn_lost(ctx, errno == EAGAIN ? -ETIMEDOUT : -ECONNRESET);
		}
		sent += n;
		/* the fds went with the first byte */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}

/* Exactly len bytes from the socket before deadline; fds that come along
 * (none should) are closed. */
static int vu_read(struct vrdma_ctx *ctx, void *buf, size_t len, int64_t deadline)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
			struct cmsghdr align;
		} cm;
		struct iovec iov = { .iov_base = (char *)buf + got, .iov_len = len - got };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cm.buf, .msg_controllen = sizeof(cm.buf),
		};
		struct pollfd pfd = { .fd = ctx->sock, .events = POLLIN };
		struct cmsghdr *c;
		ssize_t n;
		int r;

		r = poll(&pfd, 1, ms_until(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return -ETIMEDOUT;
		n = recvmsg(ctx->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -ECONNRESET;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				size_t i, nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fd;

				for (i = 0; i < nfd; i++) {
					memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
					close(fd);
				}
			}
		}
		got += n;
	}
	return 0;
}

/* The reply to request: its payload into reply, at most *size bytes; *size
 * becomes the payload's size. */
static int vu_recv_reply(struct vrdma_ctx *ctx, uint32_t request, void *reply, uint32_t *size,
			 int64_t deadline)
{
	union vhost_user_payload payload;
	struct vhost_user_header hdr;
	int ret;

	ret = vu_read(ctx, &hdr, sizeof(hdr), deadline);
	if (ret)
		return conn_lost(ctx, ret);
	if ((hdr.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION ||
	    !(hdr.flags & VHOST_USER_REPLY_MASK) || hdr.request != request ||
	    hdr.size > sizeof(payload) || hdr.size > *size)
		return conn_lost(ctx, -EPROTO);
	ret = vu_read(ctx, &payload, hdr.size, deadline);
	if (ret)
		return conn_lost(ctx, ret);
	memcpy(reply, &payload, hdr.size);
	*size = hdr.size;
	return 0;
}

/* One request. A request with a reply of its own passes reply (and its size
 * in *reply_size, updated); the others get the REPLY_ACK u64 when it was
 * negotiated: 0 done, anything else refused (-EIO). */
static int vu_call(struct vrdma_ctx *ctx, uint32_t request, const void *payload, uint32_t size,
		   const int *fds, unsigned int nfds, void *reply, uint32_t *reply_size)
{
	int64_t deadline = now_ns() + (int64_t)ctx->timeout_ms * 1000000;
	bool ack = !reply && ctx->reply_ack;
	uint32_t ack_len = sizeof(uint64_t);
	uint64_t ack_val;
	int ret;

	ret = vu_send(ctx, request, ack ? VHOST_USER_NEED_REPLY_MASK : 0, payload, size, fds, nfds);
	if (ret)
		return ret;
	if (reply)
		return vu_recv_reply(ctx, request, reply, reply_size, deadline);
	if (!ack)
		return 0;
	ret = vu_recv_reply(ctx, request, &ack_val, &ack_len, deadline);
	if (ret)
		return ret;
	if (ack_len != sizeof(ack_val))
		return conn_lost(ctx, -EPROTO);
	return ack_val ? -EIO : 0;
}

static int vu_get_u64(struct vrdma_ctx *ctx, uint32_t request, uint64_t *val)
{
	uint32_t len = sizeof(*val);
	int ret;

	ret = vu_call(ctx, request, NULL, 0, NULL, 0, val, &len);
	if (!ret && len != sizeof(*val))
		return conn_lost(ctx, -EPROTO);
	return ret;
}

static int vu_set_u64(struct vrdma_ctx *ctx, uint32_t request, uint64_t val)
{
	return vu_call(ctx, request, &val, sizeof(val), NULL, 0, NULL, NULL);
}

static int vu_set_state(struct vrdma_ctx *ctx, uint32_t request, unsigned int index, unsigned int num)
{
	struct vhost_vring_state s = { .index = index, .num = num };

	return vu_call(ctx, request, &s, sizeof(s), NULL, 0, NULL, NULL);
}

static int vu_set_fd(struct vrdma_ctx *ctx, uint32_t request, unsigned int index, int fd)
{
	uint64_t val = index;

	return vu_call(ctx, request, &val, sizeof(val), &fd, 1, NULL, NULL);
}

/* GET_CONFIG in pieces of at most VHOST_USER_MAX_CONFIG_SIZE. */
static int get_config(struct vrdma_ctx *ctx, uint32_t offset, void *buf, uint32_t len)
{
	const uint32_t hdr_len = offsetof(struct vhost_user_config, region);

	while (len) {
		uint32_t chunk = len < VHOST_USER_MAX_CONFIG_SIZE ? len : VHOST_USER_MAX_CONFIG_SIZE;
		struct vhost_user_config req = { .offset = offset, .size = chunk };
		struct vhost_user_config rep;
		uint32_t got = sizeof(rep);
		int ret;

		ret = vu_call(ctx, VHOST_USER_GET_CONFIG, &req, hdr_len + chunk, NULL, 0, &rep, &got);
		if (ret)
			return ret;
		/* the back-end says no with an empty payload or size 0 */
		if (got != hdr_len + chunk || rep.size != chunk)
			return -EIO;
		memcpy(buf, rep.region, chunk);
		buf = (uint8_t *)buf + chunk;
		offset += chunk;
		len -= chunk;
	}
	return 0;
}

/* ---- virtqueues ---- */

static void vring_init(struct vring *vq)
{
	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = vq->call_fd = -1;
}

/* Allocate the ring in shared memory and hand it to the daemon: the order of
 * vhost-user messages QEMU uses, the ring starting disabled until ENABLE. */
static int vring_setup(struct vrdma_ctx *ctx, struct vring *vq, unsigned int index,
		       unsigned int num, uint16_t avail_flags)
{
	size_t desc_len = 16 * (size_t)num;
	size_t used_off = (desc_len + 4 + 2 * (size_t)num + 3) & ~(size_t)3;
	struct vhost_vring_addr addr;
	int ret;

	vring_init(vq);
	/* SET_VRING_KICK/CALL carry the index in 8 bits: a queue above 255
	 * cannot be given its eventfds (max_cq + 2 * max_qp must stay < 256) */
	if (index > VHOST_USER_VRING_IDX_MASK)
		return -ERANGE;
	if (!num || num > VIRTQ_MAX_SIZE || (num & (num - 1)))
		return -EINVAL;
	vq->index = index;
	vq->num = num;
	vq->mem = shm_alloc(ctx, used_off + 4 + 8 * (size_t)num);
	if (!vq->mem)
		return -ENOMEM;
	vq->desc = vq->mem;
	vq->avail = (struct vring_avail *)((uint8_t *)vq->mem + desc_len);
	vq->used = (struct vring_used *)((uint8_t *)vq->mem + used_off);
	vq->avail->flags = avail_flags;
	vq->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	vq->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vq->kick_fd < 0 || vq->call_fd < 0)
		return -errno;

	vq->told = true;
	ret = vu_set_state(ctx, VHOST_USER_SET_VRING_NUM, index, num);
	if (ret)
		return ret;
	addr = (struct vhost_vring_addr){
		.index = index,
		.desc_user_addr = (uint64_t)(uintptr_t)vq->desc,
		.used_user_addr = (uint64_t)(uintptr_t)vq->used,
		.avail_user_addr = (uint64_t)(uintptr_t)vq->avail,
	};
	ret = vu_call(ctx, VHOST_USER_SET_VRING_ADDR, &addr, sizeof(addr), NULL, 0, NULL, NULL);
	if (ret)
		return ret;
	ret = vu_set_state(ctx, VHOST_USER_SET_VRING_BASE, index, 0);
	if (ret)
		return ret;
	ret = vu_set_fd(ctx, VHOST_USER_SET_VRING_CALL, index, vq->call_fd);
	if (ret)
		return ret;
	ret = vu_set_fd(ctx, VHOST_USER_SET_VRING_KICK, index, vq->kick_fd);
	if (ret)
		return ret;
	/* with PROTOCOL_FEATURES (required) a ring starts disabled */
	return vu_set_state(ctx, VHOST_USER_SET_VRING_ENABLE, index, 1);
}

/* Reset the queue (GET_VRING_BASE stops it) and close its eventfds. Returns
 * false if the daemon may still use the ring and buffers: they must then not
 * be reused, so the caller keeps them allocated until close. */
static bool vring_teardown(struct vrdma_ctx *ctx, struct vring *vq)
{
	bool stopped = true;

	if (vq->told) {
		struct vhost_vring_state s = { .index = vq->index };
		uint32_t len = sizeof(s);

		stopped = !vu_call(ctx, VHOST_USER_GET_VRING_BASE, &s, sizeof(s), NULL, 0, &s, &len) &&
			  len == sizeof(s);
		vq->told = false;
	}
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	if (vq->call_fd >= 0)
		close(vq->call_fd);
	vq->kick_fd = vq->call_fd = -1;
	if (stopped)
		shm_free(ctx, vq->mem);
	vq->mem = NULL;
	return stopped;
}

/* Put a chain head in the avail ring; vring_publish makes it visible. */
static void vring_push(struct vring *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx & (vq->num - 1)] = head;
	vq->avail_idx++;
}

static void vring_publish(struct vring *vq)
{
	uint64_t one = 1;
	ssize_t n;

	/* descriptors and ring entries before the index */
	__atomic_store_n(&vq->avail->idx, vq->avail_idx, __ATOMIC_RELEASE);
	/* the index before reading the device's flag (virtio 2.7.10) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&vq->used->flags, __ATOMIC_RELAXED) & VRING_USED_F_NO_NOTIFY)
		return;
	n = write(vq->kick_fd, &one, sizeof(one));
	(void)n;	/* EAGAIN only if 2^64 - 2 kicks are pending: one is enough */
}

/* The next used element without consuming it: 1, 0 if none, -EIO if the
 * device's index is impossible. */
static int vring_peek_used(struct vring *vq, uint32_t *id, uint32_t *len)
{
	uint16_t idx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);
	const struct vring_used_elem *e;

	if (idx == vq->last_used)
		return 0;
	if ((uint16_t)(idx - vq->last_used) > vq->num)
		return -EIO;
	e = &vq->used->ring[vq->last_used & (vq->num - 1)];
	*id = e->id;
	*len = e->len;
	return 1;
}

/* ---- control queue ---- */

static int status_errno(uint8_t status)
{
	switch (status) {
	case VIRTIO_RDMA_OK:
		return 0;
	case VIRTIO_RDMA_ERR_INVAL:
		return -EINVAL;
	case VIRTIO_RDMA_ERR_NOENT:
		return -ENOENT;
	case VIRTIO_RDMA_ERR_NOMEM:
		return -ENOMEM;
	case VIRTIO_RDMA_ERR_BUSY:
		return -EBUSY;
	case VIRTIO_RDMA_ERR_PERM:
		return -EPERM;
	case VIRTIO_RDMA_ERR_FAULT:
		return -EFAULT;
	case VIRTIO_RDMA_ERR_UNSUPP:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

static void ctrl_slot_release(struct vrdma_ctx *ctx, unsigned int slot)
{
	ctx->slots[slot].busy = false;
	shm_free(ctx, ctx->slots[slot].extra);
	ctx->slots[slot].extra = NULL;
}

/* Wait for the used entry of slot, releasing any earlier (timed out) slots
 * that come back meanwhile (but not slot itself). Spins briefly (the daemon busy-polls), then
 * sleeps on the call eventfd and watches the socket for a hang-up. */
static int ctrl_wait(struct vrdma_ctx *ctx, unsigned int slot, uint32_t *used_len)
{
	int64_t start = now_ns();
	int64_t deadline = start + (int64_t)ctx->timeout_ms * 1000000;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = ctx->ctrl.call_fd, .events = POLLIN },
			{ .fd = ctx->sock, .events = POLLRDHUP },
		};
		uint32_t id, len;
		bool done = false;
		int ret, r;

		while ((ret = vring_peek_used(&ctx->ctrl, &id, &len)) > 0) {
			ctx->ctrl.last_used++;
			/* a stray id is ignored: ours still completes or times out */
			if (id % 2 || id / 2 >= CTRL_SLOTS || !ctx->slots[id / 2].busy)
				continue;
			if (id / 2 == slot) {
				*used_len = len;
				done = true;	/* released by the caller once read */
				continue;
			}
			ctrl_slot_release(ctx, id / 2);
		}
		if (done)
			return 0;
		if (ret < 0)
			return ret;
		if (now_ns() >= deadline)
			return -ETIMEDOUT;
		if (now_ns() - start < SPIN_NS)
			continue;
		r = poll(pfd, 2, ms_until(deadline));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && (pfd[1].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)))
			return conn_lost(ctx, -ECONNRESET);
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			uint64_t v;
			ssize_t n = read(ctx->ctrl.call_fd, &v, sizeof(v));

			(void)n;	/* only clears the signal */
		}
	}
}

int vrdma_ctrl_raw(struct vrdma_ctx *ctx, uint8_t cmd, const void *req, size_t req_len,
		   void *rsp, size_t rsp_len, uint8_t *status, uint32_t *rsp_written)
{
	struct vring_desc *d;
	unsigned int slot;
	uint8_t *in, *out;
	uint32_t id, len = 0;
	int ret;

	if (!ctx || (req_len && !req) || (rsp_len && !rsp) ||
	    req_len >= UINT32_MAX || rsp_len >= UINT32_MAX)
		return -EINVAL;
	if (ctx->dead)
		return -ECONNRESET;
	/* take back slots of commands that timed out and came back since */
	while ((ret = vring_peek_used(&ctx->ctrl, &id, &len)) > 0) {
		ctx->ctrl.last_used++;
		if (!(id % 2) && id / 2 < CTRL_SLOTS && ctx->slots[id / 2].busy)
			ctrl_slot_release(ctx, id / 2);
	}
	if (ret < 0)
		return ret;
	for (slot = 0; slot < CTRL_SLOTS && ctx->slots[slot].busy; slot++)
		;
	if (slot == CTRL_SLOTS)
		return -EAGAIN;	/* every slot is held by a command that timed out */

	in = ctx->ctrl_buf + (size_t)slot * 2 * CTRL_PART;
	out = in + CTRL_PART;
	if (1 + req_len > CTRL_PART || 1 + rsp_len > CTRL_PART) {
		/* for raw tests only: a buffer that lives as long as the slot */
		in = shm_alloc(ctx, 2 + req_len + rsp_len);
		if (!in)
			return -ENOMEM;
		out = in + 1 + req_len;
		ctx->slots[slot].extra = in;
	}
	in[0] = cmd;
	if (req_len)
		memcpy(in + 1, req, req_len);
	out[0] = 0xff;		/* a status no device writes */
	memset(out + 1, 0, rsp_len);

	d = &ctx->ctrl.desc[2 * slot];
	d[0] = (struct vring_desc){ .addr = vrdma_gpa(ctx, in), .len = 1 + req_len,
				    .flags = VRING_DESC_F_NEXT, .next = 2 * slot + 1 };
	d[1] = (struct vring_desc){ .addr = vrdma_gpa(ctx, out), .len = 1 + rsp_len,
				    .flags = VRING_DESC_F_WRITE };
	ctx->slots[slot].busy = true;
	vring_push(&ctx->ctrl, 2 * slot);
	vring_publish(&ctx->ctrl);

	ret = ctrl_wait(ctx, slot, &len);
	if (ret)
		return ret;	/* the slot stays busy until the device returns it */
	if (len < 1 || len > 1 + rsp_len) {
		ret = -EIO;
	} else {
		if (status)
			*status = out[0];
		if (rsp_written)
			*rsp_written = len - 1;
		if (len > 1)
			memcpy(rsp, out + 1, len - 1);
	}
	ctrl_slot_release(ctx, slot);
	return ret;
}

/* A typed command: the status as an errno; on success the response must be
 * exactly rsp_len bytes. */
static int ctrl_cmd(struct vrdma_ctx *ctx, uint8_t cmd, const void *req, size_t req_len,
		    void *rsp, size_t rsp_len)
{
	uint32_t written = 0;
	uint8_t status = 0;
	int ret;

	ret = vrdma_ctrl_raw(ctx, cmd, req, req_len, rsp, rsp_len, &status, &written);
	if (ret)
		return ret;
	ret = status_errno(status);
	if (!ret && written != rsp_len)
		return -EIO;
	return ret;
}

/* ---- open and close ---- */

static int vrdma_connect(const char *path, unsigned int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000 };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a daemon that stops reading must not block us forever */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int handshake(struct vrdma_ctx *ctx)
{
	struct vhost_user_memory mem = { .nregions = 1 };
	uint64_t features, pf = 0, queues = 0;
	struct virtio_rdma_config cfg;
	bool have_mq = false;
	int ret;

	ret = vu_get_u64(ctx, VHOST_USER_GET_FEATURES, &features);
	if (ret)
		return ret;
	/* little-endian modern rings and the CONFIG protocol feature are needed */
	if (!(features & (1ull << VIRTIO_F_VERSION_1)) ||
	    !(features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return -EPROTONOSUPPORT;
	ret = vu_set_u64(ctx, VHOST_USER_SET_FEATURES, features & VU_FEATURES);
	if (ret)
		return ret;
	ret = vu_get_u64(ctx, VHOST_USER_GET_PROTOCOL_FEATURES, &pf);
	if (ret)
		return ret;
	if (!(pf & (1ull << VHOST_USER_PROTOCOL_F_CONFIG)))
		return -EPROTONOSUPPORT;
	pf &= VU_PROTOCOL_FEATURES;
	ret = vu_set_u64(ctx, VHOST_USER_SET_PROTOCOL_FEATURES, pf);
	if (ret)
		return ret;
	/* from here on every request without its own reply is acknowledged */
	ctx->reply_ack = pf & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK);
	have_mq = pf & (1ull << VHOST_USER_PROTOCOL_F_MQ);

	ret = vu_call(ctx, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0, NULL, NULL);
	if (ret)
		return ret;
	if (have_mq) {
		ret = vu_get_u64(ctx, VHOST_USER_GET_QUEUE_NUM, &queues);
		if (ret)
			return ret;
	}
	mem.regions[0] = (struct vhost_user_mem_region){
		.guest_phys_addr = GPA_BASE,
		.memory_size = ctx->mem_size,
		.userspace_addr = (uint64_t)(uintptr_t)ctx->mem,
		.mmap_offset = 0,
	};
	/* as QEMU: the payload holds only the regions in use */
	ret = vu_call(ctx, VHOST_USER_SET_MEM_TABLE, &mem,
		      offsetof(struct vhost_user_memory, regions) + sizeof(mem.regions[0]),
		      &ctx->memfd, 1, NULL, NULL);
	if (ret)
		return ret;
	ret = get_config(ctx, 0, &cfg, sizeof(cfg));
	if (ret)
		return ret;
	ctx->max_cq = cfg.max_cq;
	ctx->max_qp = cfg.max_qp;
	/* the queue layout follows from max_cq and max_qp: they must agree */
	if (cfg.max_cq > 0xffff || cfg.max_qp > 0xffff ||
	    (have_mq && queues != VIRTIO_RDMA_NUM_VQS(cfg.max_cq, cfg.max_qp)))
		return -EPROTO;

	ret = vring_setup(ctx, &ctx->ctrl, VIRTIO_RDMA_CTRL_VQ, CTRL_RING_SIZE, 0);
	if (ret)
		return ret;
	if (pf & (1ull << VHOST_USER_PROTOCOL_F_STATUS))
		ret = vu_set_u64(ctx, VHOST_USER_SET_STATUS, STATUS_READY);
	return ret;
}

int vrdma_open(const char *socket_path, const struct vrdma_open_attr *attr,
	       struct vrdma_ctx **ctxp)
{
	size_t mem_size = attr && attr->mem_size ? attr->mem_size : DEFAULT_MEM_SIZE;
	const char *yield_env = getenv("VRDMA_POLL_YIELD");
	struct vrdma_ctx *ctx;
	int ret;

	if (!socket_path || !ctxp)
		return -EINVAL;
	mem_size = (mem_size + SHM_PAGE - 1) & ~(size_t)(SHM_PAGE - 1);
	if (!mem_size || mem_size / SHM_PAGE > UINT32_MAX)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->sock = ctx->memfd = -1;
	ctx->mem = MAP_FAILED;
	ctx->mem_size = mem_size;
	ctx->timeout_ms = attr && attr->timeout_ms ? attr->timeout_ms : DEFAULT_TIMEOUT_MS;
	ctx->poll_yield = !yield_env || strcmp(yield_env, "0");
	vring_init(&ctx->ctrl);
	list_init(&ctx->pds);
	list_init(&ctx->mrs);
	list_init(&ctx->cqs);
	list_init(&ctx->qps);

	ctx->memfd = vhost_user_memfd("vrdma-guest", mem_size);
	if (ctx->memfd < 0) {
		ret = ctx->memfd;
		goto close_ctx;
	}
	ctx->mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->memfd, 0);
	if (ctx->mem == MAP_FAILED) {
		ret = -errno;
		goto close_ctx;
	}
	ctx->alloc_pages = calloc(mem_size / SHM_PAGE, sizeof(*ctx->alloc_pages));
	ctx->free_list = malloc(sizeof(*ctx->free_list));
	if (!ctx->alloc_pages || !ctx->free_list) {
		ret = -ENOMEM;
		goto close_ctx;
	}
	*ctx->free_list = (struct extent){ .off = 0, .len = mem_size };
	ctx->ctrl_buf = shm_alloc(ctx, (size_t)CTRL_SLOTS * 2 * CTRL_PART);
	if (!ctx->ctrl_buf) {
		ret = -ENOMEM;
		goto close_ctx;
	}

	ctx->sock = vrdma_connect(socket_path, ctx->timeout_ms);
	if (ctx->sock < 0) {
		ret = ctx->sock;
		goto close_ctx;
	}
	ret = handshake(ctx);
	if (ret)
		goto close_ctx;
	*ctxp = ctx;
	return 0;

close_ctx:
	vrdma_close(ctx);
	return ret;
}

static void vring_close_fds(struct vring *vq)
{
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	if (vq->call_fd >= 0)
		close(vq->call_fd);
	vq->kick_fd = vq->call_fd = -1;
}

static void wq_free(struct wq *wq)
{
	vring_close_fds(&wq->vq);
	free(wq->free_ids);
	free(wq->busy);
	free(wq->extra);
}

void vrdma_close(struct vrdma_ctx *ctx)
{
	struct extent *e, *next;

	if (!ctx)
		return;
	/* the daemon frees the device's resources when the connection goes:
	 * only our side is left to free */
	if (ctx->sock >= 0)
		close(ctx->sock);
	while (ctx->qps.next != &ctx->qps) {
		struct vrdma_qp *qp = container_of(ctx->qps.next, struct vrdma_qp, link);

		list_del(&qp->link);
		wq_free(&qp->sq);
		wq_free(&qp->rq);
		free(qp);
	}
	while (ctx->cqs.next != &ctx->cqs) {
		struct vrdma_cq *cq = container_of(ctx->cqs.next, struct vrdma_cq, link);

		list_del(&cq->link);
		vring_close_fds(&cq->vq);
		free(cq);
	}
	while (ctx->mrs.next != &ctx->mrs) {
		struct vrdma_mr *mr = container_of(ctx->mrs.next, struct vrdma_mr, link);

		list_del(&mr->link);
		free(mr);
	}
	while (ctx->pds.next != &ctx->pds) {
		struct vrdma_pd *pd = container_of(ctx->pds.next, struct vrdma_pd, link);

		list_del(&pd->link);
		free(pd);
	}
	vring_close_fds(&ctx->ctrl);
	for (e = ctx->free_list; e; e = next) {
		next = e->next;
		free(e);
	}
	free(ctx->alloc_pages);
	if (ctx->mem != MAP_FAILED)
		munmap(ctx->mem, ctx->mem_size);
	if (ctx->memfd >= 0)
		close(ctx->memfd);
	free(ctx);
}

int vrdma_socket_fd(const struct vrdma_ctx *ctx)
{
	return ctx ? ctx->sock : -EINVAL;
}

/* ---- device and port ---- */

int vrdma_query_device(struct vrdma_ctx *ctx, struct virtio_rdma_config *cfg)
{
	if (!ctx || !cfg)
		return -EINVAL;
	return get_config(ctx, 0, cfg, sizeof(*cfg));
}

int vrdma_query_port(struct vrdma_ctx *ctx, uint8_t port, struct virtio_rdma_rsp_query_port *attr)
{
	struct virtio_rdma_cmd_query_port req = { .port = port };

	if (!ctx || !attr)
		return -EINVAL;
	return ctrl_cmd(ctx, VIRTIO_CMD_QUERY_PORT, &req, sizeof(req), attr, sizeof(*attr));
}

int vrdma_query_gid(struct vrdma_ctx *ctx, unsigned int index, uint8_t gid[16])
{
	uint8_t entry[16];
	int ret;

	if (!ctx || !gid || index >= VIRTIO_RDMA_GID_TBL_LEN)
		return -EINVAL;
	ret = get_config(ctx, offsetof(struct virtio_rdma_config, gid_tbl) + 16 * index,
			 entry, sizeof(entry));
	if (ret)
		return ret;
	if (all_zero(entry, sizeof(entry)))
		return -ENOENT;
	memcpy(gid, entry, sizeof(entry));
	return 0;
}

int vrdma_query_pkey(struct vrdma_ctx *ctx, uint32_t port, uint16_t index, uint16_t *pkey)
{
	struct virtio_rdma_cmd_query_pkey req = { .port = port, .index = index };
	struct virtio_rdma_rsp_query_pkey rsp;
	int ret;

	if (!ctx || !pkey)
		return -EINVAL;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_QUERY_PKEY, &req, sizeof(req), &rsp, sizeof(rsp));
	if (!ret)
		*pkey = rsp.pkey;
	return ret;
}

int vrdma_add_gid(struct vrdma_ctx *ctx, uint16_t index, const uint8_t gid[16])
{
	struct virtio_rdma_cmd_add_gid req = { .gid_type = 2 /* RoCEv2 */, .index = index, .port_num = 1 };

	if (!ctx || !gid)
		return -EINVAL;
	memcpy(req.gid, gid, sizeof(req.gid));
	return ctrl_cmd(ctx, VIRTIO_CMD_ADD_GID, &req, sizeof(req), NULL, 0);
}

int vrdma_del_gid(struct vrdma_ctx *ctx, uint16_t index)
{
	struct virtio_rdma_cmd_del_gid req = { .index = index, .port = 1 };

	if (!ctx)
		return -EINVAL;
	return ctrl_cmd(ctx, VIRTIO_CMD_DEL_GID, &req, sizeof(req), NULL, 0);
}

/* ---- PDs and MRs ---- */

int vrdma_alloc_pd(struct vrdma_ctx *ctx, struct vrdma_pd **pdp)
{
	struct virtio_rdma_rsp_create_pd rsp;
	struct vrdma_pd *pd;
	int ret;

	if (!ctx || !pdp)
		return -EINVAL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_PD, NULL, 0, &rsp, sizeof(rsp));
	if (ret) {
		free(pd);
		return ret;
	}
	pd->ctx = ctx;
	pd->pdn = rsp.pdn;
	list_add(&ctx->pds, &pd->link);
	*pdp = pd;
	return 0;
}

int vrdma_dealloc_pd(struct vrdma_pd *pd)
{
	struct virtio_rdma_cmd_destroy_pd req;
	int ret;

	if (!pd)
		return -EINVAL;
	req.pdn = pd->pdn;
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_DESTROY_PD, &req, sizeof(req), NULL, 0);
	if (ret)
		return ret;
	list_del(&pd->link);
	free(pd);
	return 0;
}

uint32_t vrdma_pd_handle(const struct vrdma_pd *pd)
{
	return pd->pdn;
}

/* Keep an MR the device made. */
static int mr_new(struct vrdma_ctx *ctx, const struct virtio_rdma_rsp_mr *rsp, struct vrdma_mr **mrp)
{
	struct vrdma_mr *mr = calloc(1, sizeof(*mr));

	if (!mr) {
		/* the device has it; without memory we cannot track it, so undo */
		struct virtio_rdma_cmd_dereg_mr req = { .mrn = rsp->mrn };

		ctrl_cmd(ctx, VIRTIO_CMD_DEREG_MR, &req, sizeof(req), NULL, 0);
		return -ENOMEM;
	}
	mr->ctx = ctx;
	mr->mrn = rsp->mrn;
	mr->lkey = rsp->lkey;
	mr->rkey = rsp->rkey;
	list_add(&ctx->mrs, &mr->link);
	*mrp = mr;
	return 0;
}

/* The flat page array of [addr, addr + len) in shared memory: its guest
 * address in *pages_gpa, its size in *npages; shm_free it after the command. */
static int page_array(struct vrdma_ctx *ctx, const void *addr, size_t len,
		      uint64_t **array, uint64_t *pages_gpa, uint32_t *npages)
{
	uint64_t first, gpa = vrdma_gpa(ctx, addr);
	size_t n, i;

	if (!gpa || !in_shm(ctx, addr, len))
		return -EFAULT;
	first = gpa & ~(uint64_t)(SHM_PAGE - 1);
	n = (gpa - first + len + SHM_PAGE - 1) / SHM_PAGE;
	if (n > UINT32_MAX)
		return -EINVAL;
	*array = shm_alloc(ctx, n * sizeof(uint64_t));
	if (!*array)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		(*array)[i] = first + i * SHM_PAGE;	/* le64, like the host */
	*pages_gpa = vrdma_gpa(ctx, *array);
	*npages = n;
	return 0;
}

int vrdma_reg_mr(struct vrdma_pd *pd, void *addr, size_t len, unsigned int access,
		 struct vrdma_mr **mrp)
{
	struct virtio_rdma_cmd_reg_user_mr req = { 0 };
	struct virtio_rdma_rsp_mr rsp;
	struct vrdma_ctx *ctx;
	uint64_t *pages;
	int ret;

	if (!pd || !addr || !mrp)
		return -EINVAL;
	ctx = pd->ctx;
	ret = page_array(ctx, addr, len, &pages, &req.pages, &req.npages);
	if (ret)
		return ret;
	req.pdn = pd->pdn;
	req.access_flags = access;
	req.start = req.virt_addr = (uint64_t)(uintptr_t)addr;
	req.length = len;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_REG_USER_MR, &req, sizeof(req), &rsp, sizeof(rsp));
	/* the device copied the array when the command ran */
	shm_free(ctx, pages);
	if (ret)
		return ret;
	return mr_new(ctx, &rsp, mrp);
}

int vrdma_get_dma_mr(struct vrdma_pd *pd, unsigned int access, struct vrdma_mr **mrp)
{
	struct virtio_rdma_cmd_get_dma_mr req;
	struct virtio_rdma_rsp_mr rsp;
	int ret;

	if (!pd || !mrp)
		return -EINVAL;
	req.pdn = pd->pdn;
	req.access_flags = access;
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_GET_DMA_MR, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		return ret;
	return mr_new(pd->ctx, &rsp, mrp);
}

int vrdma_create_mr(struct vrdma_pd *pd, unsigned int access, uint32_t max_num_sg,
		    struct vrdma_mr **mrp)
{
	struct virtio_rdma_cmd_create_mr req;
	struct virtio_rdma_rsp_mr rsp;
	int ret;

	if (!pd || !mrp)
		return -EINVAL;
	req.pdn = pd->pdn;
	req.access_flags = access;
	req.max_num_sg = max_num_sg;
	ret = ctrl_cmd(pd->ctx, VIRTIO_CMD_CREATE_MR, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		return ret;
	return mr_new(pd->ctx, &rsp, mrp);
}

int vrdma_map_mr_sg(struct vrdma_mr *mr, void *addr, size_t len)
{
	struct virtio_rdma_cmd_map_mr_sg req = { 0 };
	struct virtio_rdma_rsp_map_mr_sg rsp;
	struct vrdma_ctx *ctx;
	uint64_t *pages;
	int ret;

	if (!mr || !addr)
		return -EINVAL;
	ctx = mr->ctx;
	ret = page_array(ctx, addr, len, &pages, &req.pages, &req.npages);
	if (ret)
		return ret;
	req.mrn = mr->mrn;
	req.start = (uint64_t)(uintptr_t)addr;
	req.length = len;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_MAP_MR_SG, &req, sizeof(req), &rsp, sizeof(rsp));
	shm_free(ctx, pages);
	/* fewer pages mapped than given would leave part of the range unmapped */
	if (!ret && rsp.npages != req.npages)
		ret = -EIO;
	return ret;
}

int vrdma_dereg_mr(struct vrdma_mr *mr)
{
	struct virtio_rdma_cmd_dereg_mr req;
	int ret;

	if (!mr)
		return -EINVAL;
	req.mrn = mr->mrn;
	ret = ctrl_cmd(mr->ctx, VIRTIO_CMD_DEREG_MR, &req, sizeof(req), NULL, 0);
	if (ret)
		return ret;
	list_del(&mr->link);
	free(mr);
	return 0;
}

uint32_t vrdma_mr_lkey(const struct vrdma_mr *mr)
{
	return mr->lkey;
}

uint32_t vrdma_mr_rkey(const struct vrdma_mr *mr)
{
	return mr->rkey;
}

uint32_t vrdma_mr_handle(const struct vrdma_mr *mr)
{
	return mr->mrn;
}

/* ---- CQs ---- */

int vrdma_create_cq(struct vrdma_ctx *ctx, uint32_t cqe, struct vrdma_cq **cqp)
{
	struct virtio_rdma_cmd_create_cq req = { .cqe = cqe };
	struct virtio_rdma_cmd_destroy_cq dreq;
	struct virtio_rdma_rsp_create_cq rsp;
	struct vrdma_cq *cq;
	unsigned int i, num;
	int ret;

	if (!ctx || !cqp)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	vring_init(&cq->vq);
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_CQ, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		goto free_cq;
	cq->ctx = ctx;
	cq->cqn = rsp.cqn;
	if (cq->cqn >= ctx->max_cq) {
		ret = -EPROTO;	/* no queue for it */
		goto destroy_cq;
	}
	num = ring_size_for(cqe);
	cq->bufs = shm_alloc(ctx, (size_t)num * sizeof(*cq->bufs));
	if (!cq->bufs) {
		ret = -ENOMEM;
		goto free_bufs;
	}
	ret = vring_setup(ctx, &cq->vq, VIRTIO_RDMA_CQ_VQ(cq->cqn), num, 0);
	if (ret)
		goto reset_ring;
	for (i = 0; i < num; i++) {
		cq->vq.desc[i] = (struct vring_desc){
			.addr = vrdma_gpa(ctx, &cq->bufs[i]),
			.len = sizeof(cq->bufs[i]),
			.flags = VRING_DESC_F_WRITE,
		};
		vring_push(&cq->vq, i);
	}
	vring_publish(&cq->vq);
	list_add(&ctx->cqs, &cq->link);
	*cqp = cq;
	return 0;

reset_ring:
	if (!vring_teardown(ctx, &cq->vq))
		cq->bufs = NULL;	/* the device may still write there */
free_bufs:
	shm_free(ctx, cq->bufs);
destroy_cq:
	dreq.cqn = cq->cqn;
	ctrl_cmd(ctx, VIRTIO_CMD_DESTROY_CQ, &dreq, sizeof(dreq), NULL, 0);
free_cq:
	free(cq);
	return ret;
}

int vrdma_destroy_cq(struct vrdma_cq *cq)
{
	struct virtio_rdma_cmd_destroy_cq req;
	struct vrdma_ctx *ctx;
	int ret;

	if (!cq)
		return -EINVAL;
	ctx = cq->ctx;
	req.cqn = cq->cqn;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_DESTROY_CQ, &req, sizeof(req), NULL, 0);
	if (ret)
		return ret;
	/* the driver must reset the queue of a destroyed CQ */
	if (vring_teardown(ctx, &cq->vq))
		shm_free(ctx, cq->bufs);
	list_del(&cq->link);
	free(cq);
	return 0;
}

uint32_t vrdma_cq_handle(const struct vrdma_cq *cq)
{
	return cq->cqn;
}

int vrdma_poll_cq(struct vrdma_cq *cq, int n, struct virtio_rdma_cqe *wc)
{
	bool reposted = false;
	int got = 0, ret = 0;

	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	while (got < n) {
		uint32_t id, len;
		int r = vring_peek_used(&cq->vq, &id, &len);

		if (r <= 0) {
			ret = r;
			break;
		}
		/* a bad entry ends the batch; it is reported (and consumed) on
		 * its own so that the completions before it are not lost */
		if (id >= cq->vq.num || len != sizeof(*wc)) {
			if (got)
				break;
			cq->vq.last_used++;
			ret = -EIO;
			if (id < cq->vq.num) {
				vring_push(&cq->vq, id);	/* the buffer is still good */
				reposted = true;
			}
			break;
		}
		memcpy(&wc[got++], &cq->bufs[id], sizeof(*wc));
		cq->vq.last_used++;
		vring_push(&cq->vq, id);
		reposted = true;
	}
	if (reposted)
		vring_publish(&cq->vq);
	/* Nothing yet: the daemon that will write it may be waiting for this
	 * very core. */
	if (!got && !ret && cq->ctx->poll_yield)
		sched_yield();
	return got ? got : ret;
}

int vrdma_req_notify_cq(struct vrdma_cq *cq, bool solicited_only)
{
	struct virtio_rdma_cmd_req_notify req;

	if (!cq)
		return -EINVAL;
	req.cqn = cq->cqn;
	req.flags = solicited_only ? VIRTIO_RDMA_NOTIFY_SOLICITED : VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION;
	return ctrl_cmd(cq->ctx, VIRTIO_CMD_REQ_NOTIFY_CQ, &req, sizeof(req), NULL, 0);
}

int vrdma_cq_fd(const struct vrdma_cq *cq)
{
	return cq ? cq->vq.call_fd : -EINVAL;
}

int vrdma_cq_wait(struct vrdma_cq *cq, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ns() + (int64_t)timeout_ms * 1000000;

	if (!cq)
		return -EINVAL;
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = cq->vq.call_fd, .events = POLLIN },
			{ .fd = cq->ctx->sock, .events = POLLRDHUP },
		};
		uint64_t v;
		int r;

		r = poll(pfd, 2, ms_until(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return 0;
		if (pfd[0].revents & POLLIN) {
			if (read(cq->vq.call_fd, &v, sizeof(v)) == sizeof(v))
				return 1;
			continue;	/* raced with another reader: nothing left */
		}
		if (pfd[1].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL))
			return conn_lost(cq->ctx, -ECONNRESET);
	}
}

/* ---- MAC resolution ---- */

/* The neighbour table's MAC for addr (4 or 16 bytes): 1 found, 0 not
 * (or not usable yet), or a negative errno. */
static int neigh_lookup(int family, const uint8_t *addr, size_t alen, uint8_t mac[6])
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
	} req = {
		.nh = {
			.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg)),
			.nlmsg_type = RTM_GETNEIGH,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1,
		},
		.nd = { .ndm_family = family },
	};
	const uint16_t usable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
				NUD_PERMANENT | NUD_NOARP;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 1 };
	int fd, ret = 0;
	bool done = false;
	char *buf;

	buf = malloc(32768);
	if (!buf)
		return -ENOMEM;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		ret = -errno;
		goto free_buf;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto close_fd;
	}
	while (!done && ret == 0) {
		ssize_t n = recv(fd, buf, 32768, 0);
		struct nlmsghdr *nh;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			const struct ndmsg *nd = NLMSG_DATA(nh);
			const uint8_t *dst = NULL, *lladdr = NULL;
			size_t dst_len = 0, ll_len = 0;
			struct rtattr *rta;
			int rlen;

			if (nh->nlmsg_seq != req.nh.nlmsg_seq)
				continue;
			if (nh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *err = NLMSG_DATA(nh);

				ret = nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*err)) && err->error ? err->error : -EIO;
				break;
			}
			if (nh->nlmsg_type != RTM_NEWNEIGH || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)) ||
			    nd->ndm_family != family || !(nd->ndm_state & usable))
				continue;
			rlen = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
			for (rta = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
			     RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
				if (rta->rta_type == NDA_DST) {
					dst = RTA_DATA(rta);
					dst_len = RTA_PAYLOAD(rta);
				} else if (rta->rta_type == NDA_LLADDR) {
					lladdr = RTA_DATA(rta);
					ll_len = RTA_PAYLOAD(rta);
				}
			}
			if (dst && dst_len == alen && !memcmp(dst, addr, alen) &&
			    lladdr && ll_len == 6 && !all_zero(lladdr, 6)) {
				memcpy(mac, lladdr, 6);
				ret = 1;
				break;
			}
		}
	}
close_fd:
	close(fd);
free_buf:
	free(buf);
	return ret;
}

/* One datagram to the discard port: the kernel resolves the neighbour to
 * send it, as a guest's stack does before a RoCE driver looks. */
static void neigh_probe(int family, const uint8_t *addr)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9) };
	const struct sockaddr *sa = (struct sockaddr *)&sin;
	socklen_t salen = sizeof(sin);
	const char byte = 0;
	int fd;

	if (family == AF_INET) {
		memcpy(&sin.sin_addr, addr, 4);
	} else {
		memcpy(&sin6.sin6_addr, addr, 16);
		sa = (struct sockaddr *)&sin6;
		salen = sizeof(sin6);
	}
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	/* failure only means no route: the lookups then find nothing */
	(void)sendto(fd, &byte, 1, MSG_DONTWAIT, sa, salen);
	close(fd);
}

/* An address of this host (a VM's GID is one where the host answers ARP
 * for its VMs): the MAC of the interface that holds it. 1 if found. */
static int local_addr_mac(int family, const uint8_t *addr, size_t alen, uint8_t mac[6])
{
	struct ifaddrs *ifs, *a, *b;
	int found = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (a = ifs; a && !found; a = a->ifa_next) {
		const void *x;

		if (!a->ifa_addr || a->ifa_addr->sa_family != family)
			continue;
		x = family == AF_INET ? (const void *)&((struct sockaddr_in *)a->ifa_addr)->sin_addr :
					(const void *)&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
		if (memcmp(x, addr, alen))
			continue;
		for (b = ifs; b; b = b->ifa_next) {
			const struct sockaddr_ll *ll = (const struct sockaddr_ll *)b->ifa_addr;

			if (ll && ll->sll_family == AF_PACKET && ll->sll_halen == 6 &&
			    !strcmp(a->ifa_name, b->ifa_name) && !all_zero(ll->sll_addr, 6)) {
				memcpy(mac, ll->sll_addr, 6);
				found = 1;
				break;
			}
		}
	}
	freeifaddrs(ifs);
	return found;
}

int vrdma_resolve_mac(const uint8_t gid[16], uint8_t mac[6])
{
	int64_t deadline = now_ns() + RESOLVE_WAIT_NS;
	bool v4, probed = false;
	const uint8_t *addr;
	int family, ret;
	size_t alen;

	if (!gid || !mac || all_zero(gid, 16))
		return -EINVAL;
	v4 = roce_gid_is_v4(gid);
	family = v4 ? AF_INET : AF_INET6;
	addr = v4 ? gid + 12 : gid;
	alen = v4 ? 4 : 16;
	/* no neighbour entry exists for a local address: do not wait for one */
	if (local_addr_mac(family, addr, alen, mac))
		return 0;
	for (;;) {
		struct timespec step = { .tv_nsec = RESOLVE_STEP_NS };

		ret = neigh_lookup(family, addr, alen, mac);
		if (ret)
			return ret < 0 ? ret : 0;
		if (!probed) {
			neigh_probe(family, addr);
			probed = true;
		}
		if (now_ns() >= deadline)
			return -EHOSTUNREACH;
		nanosleep(&step, NULL);
	}
}

/* The driver resolves a destination once per AV, as a RoCE driver does when
 * it creates an AH: results (failures too) are kept RESOLVE_CACHE_NS so that
 * a burst of UD sends to a GID of the same daemon, which has no neighbour
 * entry, does not wait a second each. */
static void resolve_cached(const uint8_t gid[16], uint8_t mac[6])
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		uint8_t gid[16], mac[6];
		int64_t expires;
	} cache[RESOLVE_CACHE_LEN];
	static unsigned int next;
	int64_t now = now_ns();
	unsigned int i;
	uint8_t found[6] = { 0 };

	pthread_mutex_lock(&lock);
	for (i = 0; i < RESOLVE_CACHE_LEN; i++) {
		if (cache[i].expires > now && !memcmp(cache[i].gid, gid, 16)) {
			memcpy(mac, cache[i].mac, 6);
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	pthread_mutex_unlock(&lock);
	/* unlocked: a second can pass here */
	if (vrdma_resolve_mac(gid, found))
		memset(found, 0, sizeof(found));
	pthread_mutex_lock(&lock);
	i = next++ % RESOLVE_CACHE_LEN;
	memcpy(cache[i].gid, gid, 16);
	memcpy(cache[i].mac, found, 6);
	cache[i].expires = now_ns() + RESOLVE_CACHE_NS;
	pthread_mutex_unlock(&lock);
	memcpy(mac, found, 6);
}

/* ---- QPs ---- */

static int wq_setup(struct vrdma_ctx *ctx, struct wq *wq, unsigned int index, uint32_t max_wr,
		    size_t slot_size)
{
	unsigned int i, num = ring_size_for(max_wr);

	wq->slot_size = (slot_size + 7) & ~(size_t)7;
	wq->free_ids = calloc(num, sizeof(*wq->free_ids));
	wq->busy = calloc(num, sizeof(*wq->busy));
	wq->extra = calloc(num, sizeof(*wq->extra));
	if (!wq->free_ids || !wq->busy || !wq->extra)
		return -ENOMEM;
	wq->bufs = shm_alloc(ctx, num * wq->slot_size);
	if (!wq->bufs)
		return -ENOMEM;
	for (i = 0; i < num; i++)
		wq->free_ids[i] = num - 1 - i;
	wq->nfree = num;
	/* WQE descriptors come back at once; no interrupt needed for that */
	return vring_setup(ctx, &wq->vq, index, num, VRING_AVAIL_F_NO_INTERRUPT);
}

/* Reset the queue, then give back what the device no longer uses. */
static void wq_teardown(struct vrdma_ctx *ctx, struct wq *wq)
{
	unsigned int i;

	if (vring_teardown(ctx, &wq->vq)) {
		shm_free(ctx, wq->bufs);
		for (i = 0; wq->extra && i < wq->vq.num; i++)
			shm_free(ctx, wq->extra[i]);
	}
	wq->bufs = NULL;
	wq_free(wq);
}

/* Take back the descriptors the device returned. */
static int wq_reclaim(struct vrdma_ctx *ctx, struct wq *wq)
{
	uint32_t id, len;
	int ret;

	while ((ret = vring_peek_used(&wq->vq, &id, &len)) > 0) {
		wq->vq.last_used++;
		/* len is 0 for a device-readable buffer and tells us nothing */
		if (id >= wq->vq.num || !wq->busy[id])
			return -EIO;
		wq->busy[id] = false;
		shm_free(ctx, wq->extra[id]);
		wq->extra[id] = NULL;
		wq->free_ids[wq->nfree++] = id;
	}
	return ret;
}

/* One WQE buffer of len bytes (a slot's, or a larger one for raw WQEs):
 * returns its descriptor id, or a negative errno. */
static int wq_get(struct vrdma_ctx *ctx, struct wq *wq, size_t len, uint8_t **buf)
{
	unsigned int id;
	int ret;

	ret = wq_reclaim(ctx, wq);
	if (ret < 0)
		return ret;
	if (!wq->nfree)
		return -ENOMEM;
	id = wq->free_ids[wq->nfree - 1];
	if (len > wq->slot_size) {
		wq->extra[id] = shm_alloc(ctx, len);
		if (!wq->extra[id])
			return -ENOMEM;
		*buf = wq->extra[id];
	} else {
		*buf = wq->bufs + id * wq->slot_size;
	}
	wq->nfree--;
	return id;
}

static void wq_post(struct vrdma_ctx *ctx, struct wq *wq, unsigned int id, const uint8_t *buf, size_t len)
{
	wq->vq.desc[id] = (struct vring_desc){ .addr = vrdma_gpa(ctx, buf), .len = len };
	wq->busy[id] = true;
	vring_push(&wq->vq, id);
	vring_publish(&wq->vq);
}

int vrdma_create_qp(struct vrdma_pd *pd, const struct vrdma_qp_init_attr *init,
		    struct vrdma_qp **qpp)
{
	struct virtio_rdma_cmd_create_qp req = { 0 };
	struct virtio_rdma_cmd_destroy_qp dreq;
	struct virtio_rdma_rsp_create_qp rsp;
	struct vrdma_ctx *ctx;
	struct vrdma_qp *qp;
	uint32_t k;
	int ret;

	if (!pd || !init || !qpp || !init->send_cq || !init->recv_cq ||
	    init->send_cq->ctx != pd->ctx || init->recv_cq->ctx != pd->ctx)
		return -EINVAL;
	ctx = pd->ctx;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	vring_init(&qp->sq.vq);
	vring_init(&qp->rq.vq);
	req.pdn = pd->pdn;
	req.qp_type = init->qp_type;
	req.sq_sig_type = init->sq_sig_all ? VIRTIO_IB_SIGNAL_ALL_WR : VIRTIO_IB_SIGNAL_REQ_WR;
	req.max_send_wr = init->max_send_wr;
	req.max_send_sge = init->max_send_sge;
	req.send_cqn = init->send_cq->cqn;
	req.max_recv_wr = init->max_recv_wr;
	req.max_recv_sge = init->max_recv_sge;
	req.recv_cqn = init->recv_cq->cqn;
	req.max_inline_data = init->max_inline_data;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_CREATE_QP, &req, sizeof(req), &rsp, sizeof(rsp));
	if (ret)
		goto free_qp;
	qp->ctx = ctx;
	qp->qpn = rsp.qpn;
	qp->qp_type = init->qp_type;
	qp->max_send_sge = init->max_send_sge;
	qp->max_recv_sge = init->max_recv_sge;
	qp->max_inline = init->max_inline_data;
	k = rsp.qp_index;
	if (qp->qpn < VIRTIO_RDMA_FIRST_QPN || qp->qpn > VIRTIO_RDMA_LAST_QPN || k >= ctx->max_qp) {
		ret = -EPROTO;	/* no queues for it */
		goto destroy_qp;
	}
	ret = wq_setup(ctx, &qp->sq, VIRTIO_RDMA_SQ_VQ(ctx->max_cq, k), init->max_send_wr,
		       sizeof(struct virtio_rdma_cmd_post_send) +
		       (size_t)init->max_send_sge * sizeof(struct virtio_rdma_sge) +
		       init->max_inline_data);
	if (ret)
		goto reset_queues;
	ret = wq_setup(ctx, &qp->rq, VIRTIO_RDMA_RQ_VQ(ctx->max_cq, k), init->max_recv_wr,
		       sizeof(struct virtio_rdma_cmd_post_recv) +
		       (size_t)init->max_recv_sge * sizeof(struct virtio_rdma_sge));
	if (ret)
		goto reset_queues;
	list_add(&ctx->qps, &qp->link);
	*qpp = qp;
	return 0;

reset_queues:
	wq_teardown(ctx, &qp->sq);
	wq_teardown(ctx, &qp->rq);
destroy_qp:
	dreq.qpn = qp->qpn;
	ctrl_cmd(ctx, VIRTIO_CMD_DESTROY_QP, &dreq, sizeof(dreq), NULL, 0);
free_qp:
	free(qp);
	return ret;
}

int vrdma_destroy_qp(struct vrdma_qp *qp)
{
	struct virtio_rdma_cmd_destroy_qp req;
	struct vrdma_ctx *ctx;
	int ret;

	if (!qp)
		return -EINVAL;
	ctx = qp->ctx;
	req.qpn = qp->qpn;
	ret = ctrl_cmd(ctx, VIRTIO_CMD_DESTROY_QP, &req, sizeof(req), NULL, 0);
	if (ret)
		return ret;
	/* the driver must reset the queues of a destroyed QP */
	wq_teardown(ctx, &qp->sq);
	wq_teardown(ctx, &qp->rq);
	list_del(&qp->link);
	free(qp);
	return 0;
}

uint32_t vrdma_qp_num(const struct vrdma_qp *qp)
{
	return qp->qpn;
}

int vrdma_modify_qp(struct vrdma_qp *qp, const struct virtio_rdma_qp_attr *attr, uint32_t attr_mask)
{
	struct virtio_rdma_cmd_modify_qp req;

	if (!qp || !attr)
		return -EINVAL;
	req.qpn = qp->qpn;
	req.attr_mask = attr_mask;
	req.attrs = *attr;
	if ((attr_mask & VIRTIO_IB_QP_AV) && all_zero(req.attrs.ah_attr.dmac, 6))
		resolve_cached(req.attrs.ah_attr.grh.dgid, req.attrs.ah_attr.dmac);
	return ctrl_cmd(qp->ctx, VIRTIO_CMD_MODIFY_QP, &req, sizeof(req), NULL, 0);
}

int vrdma_query_qp(struct vrdma_qp *qp, uint32_t attr_mask, struct virtio_rdma_qp_attr *attr)
{
	struct virtio_rdma_cmd_query_qp req;
	struct virtio_rdma_rsp_query_qp rsp;
	int ret;

	if (!qp || !attr)
		return -EINVAL;
	req.qpn = qp->qpn;
	req.attr_mask = attr_mask;
	ret = ctrl_cmd(qp->ctx, VIRTIO_CMD_QUERY_QP, &req, sizeof(req), &rsp, sizeof(rsp));
	if (!ret)
		*attr = rsp.attr;
	return ret;
}

int vrdma_post_send(struct vrdma_qp *qp, const struct vrdma_send_wr *wr)
{
	struct virtio_rdma_cmd_post_send hdr = { 0 };
	bool inl;
	size_t inline_len = 0, len;
	uint8_t *buf, *p;
	uint32_t i;
	int id;

	if (!qp || !wr || (wr->num_sge && !wr->sg_list) || wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	inl = wr->send_flags & VIRTIO_IB_SEND_INLINE;
	for (i = 0; inl && i < wr->num_sge; i++) {
		if (wr->sg_list[i].length && !wr->sg_list[i].addr)
			return -EINVAL;
		inline_len += wr->sg_list[i].length;
	}
	if (inline_len > qp->max_inline)
		return -EINVAL;
	hdr.num_sge = wr->num_sge;
	hdr.send_flags = wr->send_flags;
	hdr.opcode = wr->opcode;
	hdr.wr_id = wr->wr_id;
	hdr.ex.imm_data = wr->imm_data;
	if (qp->qp_type == VIRTIO_IB_QPT_UD) {
		hdr.wr.ud.remote_qpn = wr->remote_qpn;
		hdr.wr.ud.remote_qkey = wr->remote_qkey;
		hdr.wr.ud.av = wr->av;
		hdr.wr.ud.av.port = 1;
		if (all_zero(hdr.wr.ud.av.dmac, 6))
			resolve_cached(hdr.wr.ud.av.dgid, hdr.wr.ud.av.dmac);
	} else {
		hdr.wr.rdma.remote_addr = wr->remote_addr;
		hdr.wr.rdma.rkey = wr->rkey;
	}
	len = sizeof(hdr) + (size_t)wr->num_sge * sizeof(struct virtio_rdma_sge) + inline_len;
	id = wq_get(qp->ctx, &qp->sq, len, &buf);
	if (id < 0)
		return id;
	memcpy(buf, &hdr, sizeof(hdr));
	p = buf + sizeof(hdr);
	for (i = 0; i < wr->num_sge; i++) {
		struct virtio_rdma_sge sge = {
			.addr = wr->sg_list[i].addr,
			.length = wr->sg_list[i].length,
			.lkey = wr->sg_list[i].lkey,
		};

		memcpy(p, &sge, sizeof(sge));
		p += sizeof(sge);
	}
	for (i = 0; inl && i < wr->num_sge; i++) {
		if (wr->sg_list[i].length)
			memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		p += wr->sg_list[i].length;
	}
	wq_post(qp->ctx, &qp->sq, id, buf, len);
	return 0;
}

int vrdma_post_recv(struct vrdma_qp *qp, const struct vrdma_recv_wr *wr)
{
	struct virtio_rdma_cmd_post_recv hdr = { 0 };
	uint8_t *buf, *p;
	size_t len;
	uint32_t i;
	int id;

	if (!qp || !wr || (wr->num_sge && !wr->sg_list) || wr->num_sge > qp->max_recv_sge)
		return -EINVAL;
	hdr.num_sge = wr->num_sge;
	hdr.wr_id = wr->wr_id;
	len = sizeof(hdr) + (size_t)wr->num_sge * sizeof(struct virtio_rdma_sge);
	id = wq_get(qp->ctx, &qp->rq, len, &buf);
	if (id < 0)
		return id;
	memcpy(buf, &hdr, sizeof(hdr));
	p = buf + sizeof(hdr);
	for (i = 0; i < wr->num_sge; i++) {
		struct virtio_rdma_sge sge = {
			.addr = wr->sg_list[i].addr,
			.length = wr->sg_list[i].length,
			.lkey = wr->sg_list[i].lkey,
		};

		memcpy(p, &sge, sizeof(sge));
		p += sizeof(sge);
	}
	wq_post(qp->ctx, &qp->rq, id, buf, len);
	return 0;
}

int vrdma_post_raw(struct vrdma_qp *qp, bool recv, const void *wqe, size_t len)
{
	struct wq *wq;
	uint8_t *buf;
	int id;

	if (!qp || !wqe || !len || len > UINT32_MAX)
		return -EINVAL;
	wq = recv ? &qp->rq : &qp->sq;
	id = wq_get(qp->ctx, wq, len, &buf);
	if (id < 0)
		return id;
	memcpy(buf, wqe, len);
	wq_post(qp->ctx, wq, id, buf, len);
	return 0;
}
