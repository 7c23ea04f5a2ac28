// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's vhost-user front-end (QEMU's part): the messages, with
 * their fds, and the handshake that gives the daemon the memory table and
 * the control queue.
 */
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "internal.h"

/* ---- vhost-user messages ---- */

/* The stream is out of step or gone: refuse everything from now on. */
int conn_lost(struct vrdma_ctx *ctx, int err)
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
int vu_call(struct vrdma_ctx *ctx, uint32_t request, const void *payload, uint32_t size,
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

int vu_set_state(struct vrdma_ctx *ctx, uint32_t request, unsigned int index, unsigned int num)
{
	struct vhost_vring_state s = { .index = index, .num = num };

	return vu_call(ctx, request, &s, sizeof(s), NULL, 0, NULL, NULL);
}

int vu_set_fd(struct vrdma_ctx *ctx, uint32_t request, unsigned int index, int fd)
{
	uint64_t val = index;

	return vu_call(ctx, request, &val, sizeof(val), &fd, 1, NULL, NULL);
}

/* GET_CONFIG in pieces of at most VHOST_USER_MAX_CONFIG_SIZE. */
int get_config(struct vrdma_ctx *ctx, uint32_t offset, void *buf, uint32_t len)
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

/* ---- open and close ---- */

int vrdma_connect(const char *path, unsigned int timeout_ms)
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

int handshake(struct vrdma_ctx *ctx)
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
	/* ABI v2 only when asked for (VRDMA_RINGS=1) and offered */
	if (ctx->rings && !(features & (1ull << VIRTIO_RDMA_F_RINGS)))
		return -EPROTONOSUPPORT;
	ret = vu_set_u64(ctx, VHOST_USER_SET_FEATURES, features & VU_FEATURES &
			 ~(ctx->rings ? 0 : 1ull << VIRTIO_RDMA_F_RINGS));
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
