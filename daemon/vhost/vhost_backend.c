// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "vhost_backend.h"

static const char *const request_names[VHOST_USER_MAX_REQUEST] = {
	[VHOST_USER_GET_FEATURES] = "GET_FEATURES",
	[VHOST_USER_SET_FEATURES] = "SET_FEATURES",
	[VHOST_USER_SET_OWNER] = "SET_OWNER",
	[VHOST_USER_RESET_OWNER] = "RESET_OWNER",
	[VHOST_USER_SET_MEM_TABLE] = "SET_MEM_TABLE",
	[VHOST_USER_SET_LOG_BASE] = "SET_LOG_BASE",
	[VHOST_USER_SET_LOG_FD] = "SET_LOG_FD",
	[VHOST_USER_SET_VRING_NUM] = "SET_VRING_NUM",
	[VHOST_USER_SET_VRING_ADDR] = "SET_VRING_ADDR",
	[VHOST_USER_SET_VRING_BASE] = "SET_VRING_BASE",
	[VHOST_USER_GET_VRING_BASE] = "GET_VRING_BASE",
	[VHOST_USER_SET_VRING_KICK] = "SET_VRING_KICK",
	[VHOST_USER_SET_VRING_CALL] = "SET_VRING_CALL",
	[VHOST_USER_SET_VRING_ERR] = "SET_VRING_ERR",
	[VHOST_USER_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
	[VHOST_USER_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
	[VHOST_USER_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
	[VHOST_USER_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	[VHOST_USER_GET_CONFIG] = "GET_CONFIG",
	[VHOST_USER_SET_CONFIG] = "SET_CONFIG",
	[VHOST_USER_RESET_DEVICE] = "RESET_DEVICE",
	[VHOST_USER_GET_MAX_MEM_SLOTS] = "GET_MAX_MEM_SLOTS",
	[VHOST_USER_SET_STATUS] = "SET_STATUS",
	[VHOST_USER_GET_STATUS] = "GET_STATUS",
};

const char *vu_request_name(uint32_t request)
{
	if (request < VHOST_USER_MAX_REQUEST && request_names[request])
		return request_names[request];
	return "unknown request";
}

int vu_dev_init(struct vu_dev *d, const char *name, unsigned int n_vqs,
		const struct vu_ops *ops, void *ctx)
{
	unsigned int i;

	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->name = name;
	d->ops = ops;
	d->ctx = ctx;
	d->vqs = calloc(n_vqs, sizeof(*d->vqs));
	if (!d->vqs)
		return -ENOMEM;
	d->n_vqs = n_vqs;
	for (i = 0; i < n_vqs; i++)
		virtq_init(&d->vqs[i]);
	return 0;
}

static void set_kick(struct vu_dev *d, unsigned int idx, int fd)
{
	struct virtq *vq = &d->vqs[idx];

	if (vq->kick_fd == fd)
		return;
	if (d->ops->kick_changed)
		d->ops->kick_changed(d->ctx, idx, vq->kick_fd, fd);
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	vq->kick_fd = fd;
}

/* RESET_DEVICE (vhost-user.rst): every ring stopped and the device's state
 * (its RDMA resources) back to a new device's. The front end keeps what it
 * set up for the connection: ownership, features, the memory table; it
 * sets the rings up again to start the device. QEMU sends it when the
 * guest resets the device, so what the guest had registered goes with it. */
static void reset_device_state(struct vu_dev *d)
{
	unsigned int i;

	if (d->ops->reset)
		d->ops->reset(d->ctx);
	for (i = 0; i < d->n_vqs; i++) {
		set_kick(d, i, -1);
		virtq_reset(&d->vqs[i]);
	}
	d->status = 0;
}

/* Back to the state of a new connection (the device's resources included). */
static void reset_device(struct vu_dev *d)
{
	/* first: the device resets as what a new connection negotiates */
	d->features = 0;
	d->protocol_features = 0;
	reset_device_state(d);
	guest_mem_unmap(&d->mem);
	d->owner = false;
}

void vu_dev_disconnect(struct vu_dev *d)
{
	if (d->ops->quiesce)
		d->ops->quiesce(d->ctx);
	reset_device(d);
	if (d->ops->resume)
		d->ops->resume(d->ctx);
}

void vu_dev_free(struct vu_dev *d)
{
	if (d->vqs)
		vu_dev_disconnect(d);
	free(d->vqs);
	d->vqs = NULL;
	d->n_vqs = 0;
}

static void close_fds(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int vu_recv(int fd, struct vhost_user_msg *msg, int *fds, unsigned int *nfds)
{
	char control[CMSG_SPACE(VHOST_USER_MAX_FDS * sizeof(int))];
	struct iovec iov = { &msg->hdr, sizeof(msg->hdr) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct cmsghdr *c;
	int ret = -EBADMSG;
	ssize_t n;

	*nfds = 0;
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		unsigned int k, m;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < m; k++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (*nfds < VHOST_USER_MAX_FDS)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
	if (n == 0) {
		ret = -ECONNRESET;
		goto close_fds;
	}
	if ((size_t)n != sizeof(msg->hdr) || (mh.msg_flags & MSG_CTRUNC) ||
	    msg->hdr.size > sizeof(msg->payload))
		goto close_fds;
	if (msg->hdr.size) {
		/* The payload follows the header at once (QEMU sends both in
		 * one sendmsg); wait for it briefly if it is split. */
		size_t got = 0;
		int tries = 0;

		while (got < msg->hdr.size) {
			n = recv(fd, (char *)&msg->payload + got, msg->hdr.size - got, MSG_DONTWAIT);
			if (n > 0) {
				got += (size_t)n;
				continue;
			}
			if (n == 0 || (errno != EAGAIN && errno != EINTR) || ++tries > 1000)
				goto close_fds;
			usleep(100);
		}
	}
	return 0;

close_fds:
	close_fds(fds, *nfds);
	*nfds = 0;
	return ret;
}

static int send_reply(struct vu_dev *d, const struct vhost_user_msg *req, const void *payload,
		      uint32_t size)
{
	struct vhost_user_header h = {
		.request = req->hdr.request,
		.flags = VHOST_USER_VERSION | VHOST_USER_REPLY_MASK,
		.size = size,
	};
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, size } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };

	if (d->fd < 0)
		return 0;	/* a unit test without a peer */
	if (sendmsg(d->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(sizeof(h) + size))
		return -EPIPE;
	return 0;
}

static int reply_u64(struct vu_dev *d, const struct vhost_user_msg *req, uint64_t v)
{
	return send_reply(d, req, &v, sizeof(v));
}

static int fail(struct vu_dev *d, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct vu_dev *d, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->last_error, sizeof(d->last_error), fmt, ap);
	va_end(ap);
	d->bad_messages++;
	log_ratelimited(VRDMA_LOG_WARNING, "vm %s: vhost-user: %s", d->name, d->last_error);
	return err;
}

/* Payload size each request must have; -1: variable, checked by its handler. */
static int expected_size(uint32_t request)
{
	switch (request) {
	case VHOST_USER_GET_FEATURES: case VHOST_USER_SET_OWNER: case VHOST_USER_RESET_OWNER:
	case VHOST_USER_GET_PROTOCOL_FEATURES: case VHOST_USER_GET_QUEUE_NUM:
	case VHOST_USER_RESET_DEVICE: case VHOST_USER_GET_STATUS:
	case VHOST_USER_GET_MAX_MEM_SLOTS:
		return -2;	/* 0, or a u64 some front-ends add: both fine */
	case VHOST_USER_SET_FEATURES: case VHOST_USER_SET_PROTOCOL_FEATURES:
	case VHOST_USER_SET_VRING_KICK: case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR: case VHOST_USER_SET_STATUS:
		return sizeof(uint64_t);
	case VHOST_USER_SET_VRING_NUM: case VHOST_USER_SET_VRING_BASE:
	case VHOST_USER_GET_VRING_BASE: case VHOST_USER_SET_VRING_ENABLE:
		return sizeof(struct vhost_vring_state);
	case VHOST_USER_SET_VRING_ADDR:
		return sizeof(struct vhost_vring_addr);
	default:
		return -1;
	}
}

/* How many fds a request carries. */
static unsigned int expected_fds(const struct vhost_user_msg *msg)
{
	switch (msg->hdr.request) {
	case VHOST_USER_SET_MEM_TABLE:
		return msg->payload.memory.nregions;
	case VHOST_USER_SET_VRING_KICK: case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		return (msg->payload.u64 & VHOST_USER_VRING_NOFD_MASK) ? 0 : 1;
	default:
		return 0;
	}
}

/* What fd is, for a log line: the kernel's name of an anonymous inode, else
 * the file type (never a path the peer chose). */
static const char *fd_kind(int fd, char *buf, size_t len)
{
	char proc[32];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return "not an open fd";
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, len - 1);
	if (n < 0)
		return "of a kind unknown (/proc/self/fd unreadable)";
	buf[n] = '\0';
	if (!strncmp(buf, "anon_inode:", 11))
		return buf;
	switch (st.st_mode & S_IFMT) {
	case S_IFIFO: return "a pipe";
	case S_IFSOCK: return "a socket";
	case S_IFREG: return "a regular file";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFDIR: return "a directory";
	default: return "of another kind";
	}
}

int vu_fd_check(int fd, enum vu_fd_want want, char *why, size_t len)
{
	char kind[64];
	const char *what = fd_kind(fd, kind, sizeof(kind));
	struct stat st;
	int fl;

	if (want == VU_FD_EVENTFD && strcmp(what, "anon_inode:[eventfd]")) {
		snprintf(why, len, "the fd is %s, not an eventfd", what);
		return -EINVAL;
	}
	if (want == VU_FD_SOCKET && (fstat(fd, &st) || !S_ISSOCK(st.st_mode))) {
		snprintf(why, len, "the fd is %s, not a socket", what);
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
		snprintf(why, len, "the fd (%s) cannot be made non-blocking: %s", what,
			 strerror(errno));
		return -EBADF;
	}
	return 0;
}

static int check_fds(struct vu_dev *d, const struct vhost_user_msg *msg, const int *fds,
		     unsigned int nfds)
{
	bool want_eventfd = msg->hdr.request == VHOST_USER_SET_VRING_KICK ||
			    msg->hdr.request == VHOST_USER_SET_VRING_CALL ||
			    msg->hdr.request == VHOST_USER_SET_VRING_ERR;
	unsigned int i;
	char why[128];
	int ret;

	for (i = 0; i < nfds; i++) {
		ret = vu_fd_check(fds[i], want_eventfd ? VU_FD_EVENTFD : VU_FD_ANY, why,
				  sizeof(why));
		if (ret)
			return fail(d, ret, "%s: %s", vu_request_name(msg->hdr.request), why);
	}
	return 0;
}

static bool ring_running(const struct virtq *vq)
{
	return vq->kicked;
}

static int set_mem_table(struct vu_dev *d, const struct vhost_user_msg *msg, const int *fds,
			 unsigned int nfds)
{
	const struct vhost_user_memory *m = &msg->payload.memory;
	struct guest_mem nm, old;
	unsigned int i;
	char err[128];
	int ret;

	if (msg->hdr.size < offsetof(struct vhost_user_memory, regions) ||
	    m->nregions > VHOST_USER_MEM_REGIONS ||
	    msg->hdr.size != offsetof(struct vhost_user_memory, regions) +
			     m->nregions * sizeof(struct vhost_user_mem_region))
		return fail(d, -EINVAL, "SET_MEM_TABLE: %u bytes for %u regions", msg->hdr.size,
			    m->nregions);
	ret = guest_mem_map(&nm, m, fds, nfds, err, sizeof(err));
	if (ret)
		return fail(d, ret, "SET_MEM_TABLE: %s", err);
	/* Every ring must still be reachable through the new table. */
	for (i = 0; i < d->n_vqs; i++) {
		struct virtq tmp = d->vqs[i];

		if (virtq_map(&tmp, &nm)) {
			guest_mem_unmap(&nm);
			return fail(d, -EFAULT, "SET_MEM_TABLE: queue %u's rings are outside it", i);
		}
	}
	old = d->mem;
	d->mem = nm;
	for (i = 0; i < d->n_vqs; i++)
		virtq_map(&d->vqs[i], &d->mem);
	guest_mem_unmap(&old);
	return 0;
}

/* SET_FEATURES, SET_PROTOCOL_FEATURES: only bits offered. */
static int set_features(struct vu_dev *d, const struct vhost_user_msg *msg, uint64_t offered,
			uint64_t *features)
{
	if (msg->payload.u64 & ~offered)
		return fail(d, -EINVAL, "%s %#" PRIx64 ": not offered",
			    vu_request_name(msg->hdr.request), (uint64_t)(msg->payload.u64 & ~offered));
	*features = msg->payload.u64;
	return 0;
}

/* The message's one fd, now the caller's; -1 if it has none. */
static int take_fd(int *fds, unsigned int nfds)
{
	int fd = nfds ? fds[0] : -1;

	if (nfds)
		fds[0] = -1;
	return fd;
}

static int handle(struct vu_dev *d, struct vhost_user_msg *msg, int *fds, unsigned int nfds,
		  bool *replied)
{
	union vhost_user_payload *p = &msg->payload;
	uint32_t idx = p->state.index;
	struct virtq *vq;
	int ret;

	switch (msg->hdr.request) {
	case VHOST_USER_GET_FEATURES:
		*replied = true;
		return reply_u64(d, msg, VU_FEATURES);
	case VHOST_USER_SET_FEATURES:
		ret = set_features(d, msg, VU_FEATURES, &d->features);
		if (!ret && d->ops->features_set)
			ret = d->ops->features_set(d->ctx, d->features);
		return ret;
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		*replied = true;
		return reply_u64(d, msg, VU_PROTOCOL_FEATURES);
	case VHOST_USER_SET_PROTOCOL_FEATURES:
		return set_features(d, msg, VU_PROTOCOL_FEATURES, &d->protocol_features);
	case VHOST_USER_SET_OWNER:
		d->owner = true;
		return 0;
	case VHOST_USER_RESET_OWNER:
		reset_device(d);
		return 0;
	case VHOST_USER_RESET_DEVICE:
		reset_device_state(d);
		return 0;
	case VHOST_USER_GET_QUEUE_NUM:
		*replied = true;
		return reply_u64(d, msg, d->n_vqs);
	case VHOST_USER_GET_MAX_MEM_SLOTS:
		*replied = true;
		return reply_u64(d, msg, VHOST_USER_MEM_REGIONS);
	case VHOST_USER_SET_STATUS:
		if (p->u64 > 0xff)
			return fail(d, -EINVAL, "SET_STATUS %#" PRIx64 ": not a status byte", p->u64);
		d->status = (uint8_t)p->u64;
		return 0;
	case VHOST_USER_GET_STATUS:
		*replied = true;
		return reply_u64(d, msg, d->status);
	case VHOST_USER_GET_CONFIG: {
		struct vhost_user_config *c = &p->config;
		uint32_t hdr = offsetof(struct vhost_user_config, region);

		*replied = true;
		if (msg->hdr.size < hdr || c->size > VHOST_USER_MAX_CONFIG_SIZE ||
		    msg->hdr.size != hdr + c->size || !d->ops->get_config ||
		    d->ops->get_config(d->ctx, c->offset, c->size, c->region)) {
			fail(d, 0, "GET_CONFIG offset %u size %u: outside the config space",
			     c->offset, c->size);
			c->size = 0;	/* the spec's error answer */
			return send_reply(d, msg, c, hdr);
		}
		return send_reply(d, msg, c, hdr + c->size);
	}
	case VHOST_USER_SET_CONFIG:
		/* Not fatal: the config is read-only and the spec says so. */
		return fail(d, 1, "SET_CONFIG: the config space is read-only");
	case VHOST_USER_SET_MEM_TABLE:
		if (!d->owner)
			return fail(d, -EPERM, "SET_MEM_TABLE before SET_OWNER");
		return set_mem_table(d, msg, fds, nfds);
	default:
		break;
	}

	/* Ring messages */
	if (!d->owner)
		return fail(d, -EPERM, "%s before SET_OWNER", vu_request_name(msg->hdr.request));
	if (msg->hdr.request == VHOST_USER_SET_VRING_KICK ||
	    msg->hdr.request == VHOST_USER_SET_VRING_CALL ||
	    msg->hdr.request == VHOST_USER_SET_VRING_ERR) {
		if (p->u64 & ~(uint64_t)(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD_MASK))
			return fail(d, -EINVAL, "%s %#" PRIx64 ": unknown bits",
				    vu_request_name(msg->hdr.request), p->u64);
		idx = p->u64 & VHOST_USER_VRING_IDX_MASK;
	}
	if (idx >= d->n_vqs)
		return fail(d, -EINVAL, "%s: queue %u of %u", vu_request_name(msg->hdr.request),
			    idx, d->n_vqs);
	vq = &d->vqs[idx];
	switch (msg->hdr.request) {
	case VHOST_USER_SET_VRING_NUM:
		if (!p->state.num || p->state.num > VIRTQ_MAX_SIZE ||
		    (p->state.num & (p->state.num - 1)))
			return fail(d, -EINVAL, "queue %u: size %u is not a power of two <= %u",
				    idx, p->state.num, VIRTQ_MAX_SIZE);
		if (ring_running(vq))
			return fail(d, -EBUSY, "queue %u: SET_VRING_NUM while running", idx);
		vq->num = (uint16_t)p->state.num;
		return virtq_map(vq, &d->mem) ? fail(d, -EFAULT, "queue %u: rings outside memory", idx) : 0;
	case VHOST_USER_SET_VRING_ADDR:
		if (p->addr.flags)
			return fail(d, -EINVAL, "queue %u: dirty logging is not offered", idx);
		if (ring_running(vq))
			return fail(d, -EBUSY, "queue %u: SET_VRING_ADDR while running", idx);
		vq->desc_uva = p->addr.desc_user_addr;
		vq->avail_uva = p->addr.avail_user_addr;
		vq->used_uva = p->addr.used_user_addr;
		vq->have_addr = true;
		ret = virtq_map(vq, &d->mem);
		if (ret)
			return fail(d, ret, "queue %u: rings %s", idx,
				    ret == -EINVAL ? "misaligned" : "outside guest memory");
		return 0;
	case VHOST_USER_SET_VRING_BASE:
		if (p->state.num > 0xffff)
			return fail(d, -EINVAL, "queue %u: base %u", idx, p->state.num);
		if (ring_running(vq))
			return fail(d, -EBUSY, "queue %u: SET_VRING_BASE while running", idx);
		vq->last_avail = vq->used_idx = (uint16_t)p->state.num;
		return 0;
	case VHOST_USER_GET_VRING_BASE: {
		struct vhost_vring_state st = { .index = idx, .num = vq->last_avail };

		/* Stops the ring (the spec); its settings stay for a restart. */
		vq->kicked = false;
		set_kick(d, idx, -1);
		*replied = true;
		return send_reply(d, msg, &st, sizeof(st));
	}
	case VHOST_USER_SET_VRING_KICK:
		set_kick(d, idx, take_fd(fds, nfds));
		vq->kicked = true;
		/* Without protocol features a ring starts enabled (the spec). */
		if (!(d->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
			vq->enabled = true;
		return 0;
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR: {
		int *slot = msg->hdr.request == VHOST_USER_SET_VRING_CALL ? &vq->call_fd : &vq->err_fd;

		if (*slot >= 0)
			close(*slot);
		*slot = take_fd(fds, nfds);
		return 0;
	}
	case VHOST_USER_SET_VRING_ENABLE:
		if (!(d->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
			return fail(d, -EINVAL, "SET_VRING_ENABLE without protocol features");
		if (p->state.num > 1)
			return fail(d, -EINVAL, "queue %u: enable %u", idx, p->state.num);
		vq->enabled = p->state.num;
		return 0;
	default:
		return fail(d, -EOPNOTSUPP, "%s (%u) is not supported",
			    vu_request_name(msg->hdr.request), msg->hdr.request);
	}
}

int vu_dispatch(struct vu_dev *d, struct vhost_user_msg *msg, int *fds, unsigned int nfds)
{
	bool need_ack = (msg->hdr.flags & VHOST_USER_NEED_REPLY_MASK) &&
			(d->protocol_features & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
	bool replied = false;
	int want = expected_size(msg->hdr.request);
	int ret;

	if ((msg->hdr.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION) {
		ret = fail(d, -EPROTO, "version %u", msg->hdr.flags & VHOST_USER_VERSION_MASK);
		goto close_fds;
	}
	if ((want >= 0 && msg->hdr.size != (uint32_t)want) ||
	    (want == -2 && msg->hdr.size != 0 && msg->hdr.size != sizeof(uint64_t))) {
		ret = fail(d, -EINVAL, "%s with %u bytes of payload", vu_request_name(msg->hdr.request),
			   msg->hdr.size);
		goto close_fds;
	}
	if (msg->hdr.request == VHOST_USER_SET_MEM_TABLE && msg->hdr.size < sizeof(uint64_t)) {
		ret = fail(d, -EINVAL, "SET_MEM_TABLE with %u bytes", msg->hdr.size);
		goto close_fds;
	}
	if (nfds != expected_fds(msg)) {
		ret = fail(d, -EINVAL, "%s with %u fds, expected %u",
			   vu_request_name(msg->hdr.request), nfds, expected_fds(msg));
		goto close_fds;
	}
	ret = check_fds(d, msg, fds, nfds);
	if (ret)
		goto close_fds;
	if (d->ops->quiesce)
		d->ops->quiesce(d->ctx);
	ret = handle(d, msg, fds, nfds, &replied);
	if (d->ops->resume)
		d->ops->resume(d->ctx);
	close_fds(fds, nfds);
	if (need_ack && !replied && reply_u64(d, msg, ret ? 1 : 0))
		return -EPIPE;
	return ret > 0 ? 0 : ret;	/* > 0: refused, but the connection is fine */

close_fds:
	close_fds(fds, nfds);
	if (need_ack)
		reply_u64(d, msg, 1);
	return ret;
}
