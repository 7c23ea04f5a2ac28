// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's control queue: one command at a time in one of CTRL_SLOTS
 * slots, each a readable and a writable descriptor.
 */
#include <poll.h>

#include "internal.h"

/* ---- control queue ---- */

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
int ctrl_cmd(struct vrdma_ctx *ctx, uint8_t cmd, const void *req, size_t req_len,
	     void *rsp, size_t rsp_len)
{
	uint32_t written = 0;
	uint8_t status = 0;
	int ret;

	ret = vrdma_ctrl_raw(ctx, cmd, req, req_len, rsp, rsp_len, &status, &written);
	if (ret)
		return ret;
	ret = virtio_rdma_status_errno(status);
	if (!ret && written != rsp_len)
		return -EIO;
	return ret;
}
