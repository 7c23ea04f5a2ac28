// SPDX-License-Identifier: GPL-2.0-only
/*
 * libvrdma's split virtqueues, as the driver sees them, and the send and
 * receive queues built on them (descriptor i always points at WQE slot i).
 */
#include <sys/eventfd.h>

#include "internal.h"

/* ---- virtqueues ---- */

void vring_init(struct vring *vq)
{
	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = vq->call_fd = -1;
}

/* Allocate the ring in shared memory and hand it to the daemon: the order of
 * vhost-user messages QEMU uses, the ring starting disabled until ENABLE. */
/* desc, avail and used of a ring of num in one allocation: its size, and
 * where used starts */
static size_t used_offset(unsigned int num)
{
	return (16 * (size_t)num + 4 + 2 * (size_t)num + 3) & ~(size_t)3;
}

size_t vring_bytes(unsigned int num)
{
	return used_offset(num) + 4 + 8 * (size_t)num;
}

int vring_setup(struct vrdma_ctx *ctx, struct vring *vq, unsigned int index,
		unsigned int num, uint16_t avail_flags)
{
	size_t desc_len = 16 * (size_t)num;
	size_t used_off = used_offset(num);
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
	vq->mem = shm_alloc(ctx, vring_bytes(num));
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
bool vring_teardown(struct vrdma_ctx *ctx, struct vring *vq)
{
	bool stopped = true;

	if (vq->told) {
		struct vhost_vring_state s = { .index = vq->index };
		uint32_t len = sizeof(s);

		stopped = !vu_call(ctx, VHOST_USER_GET_VRING_BASE, &s, sizeof(s), NULL, 0, &s, &len) &&
			  len == sizeof(s);
		vq->told = false;
	}
	vring_close_fds(vq);
	if (stopped)
		shm_free(ctx, vq->mem);
	vq->mem = NULL;
	return stopped;
}

/* Put a chain head in the avail ring; vring_publish makes it visible. */
void vring_push(struct vring *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx & (vq->num - 1)] = head;
	vq->avail_idx++;
}

void vring_publish(struct vring *vq)
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
int vring_peek_used(struct vring *vq, uint32_t *id, uint32_t *len)
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

void vring_close_fds(struct vring *vq)
{
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	if (vq->call_fd >= 0)
		close(vq->call_fd);
	vq->kick_fd = vq->call_fd = -1;
}

void wq_free(struct wq *wq)
{
	vring_close_fds(&wq->vq);
	free(wq->free_ids);
	free(wq->busy);
	free(wq->extra);
}

/* ---- QPs ---- */

static size_t slot_round(size_t slot_size)
{
	return (slot_size + 7) & ~(size_t)7;
}

size_t wq_bytes(uint32_t max_wr, size_t slot_size)
{
	unsigned int num = ring_size_for(max_wr);

	return vrdma_mem_buf(num * slot_round(slot_size)) + vrdma_mem_buf(vring_bytes(num));
}

int wq_setup(struct vrdma_ctx *ctx, struct wq *wq, unsigned int index, uint32_t max_wr,
	     size_t slot_size)
{
	unsigned int i, num = ring_size_for(max_wr);

	wq->slot_size = slot_round(slot_size);
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
void wq_teardown(struct vrdma_ctx *ctx, struct wq *wq)
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
int wq_get(struct vrdma_ctx *ctx, struct wq *wq, size_t len, uint8_t **buf)
{
	unsigned int id;
	int ret;

	if (wq->ring.mem)
		return uring_get(wq, len, buf);
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

void wq_post(struct vrdma_ctx *ctx, struct wq *wq, unsigned int id, const uint8_t *buf, size_t len)
{
	if (wq->ring.mem) {
		uring_post(ctx, wq);
		return;
	}
	wq->vq.desc[id] = (struct vring_desc){ .addr = vrdma_gpa(ctx, buf), .len = len };
	wq->busy[id] = true;
	vring_push(&wq->vq, id);
	vring_publish(&wq->vq);
}
