// SPDX-License-Identifier: GPL-2.0-only
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "virtq.h"

void virtq_init(struct virtq *vq)
{
	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = vq->call_fd = vq->err_fd = -1;
}

void virtq_reset(struct virtq *vq)
{
	if (vq->kick_fd >= 0)
		close(vq->kick_fd);
	if (vq->call_fd >= 0)
		close(vq->call_fd);
	if (vq->err_fd >= 0)
		close(vq->err_fd);
	virtq_init(vq);
}

int virtq_map(struct virtq *vq, const struct guest_mem *gm)
{
	uint64_t n = vq->num;

	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	if (!vq->have_addr || !n)
		return 0;
	if (vq->desc_uva % 16 || vq->avail_uva % 2 || vq->used_uva % 4)
		return -EINVAL;
	vq->desc = guest_uva(gm, vq->desc_uva, n * sizeof(struct vring_desc));
	vq->avail = guest_uva(gm, vq->avail_uva, 4 + 2 * n + 2);
	vq->used = guest_uva(gm, vq->used_uva, 4 + 8 * n + 2);
	if (!vq->desc || !vq->avail || !vq->used) {
		vq->desc = NULL;
		vq->avail = NULL;
		vq->used = NULL;
		return -EFAULT;
	}
	return 0;
}

/* The driver's memory can change under us: read each field once. The rings
 * are little-endian (VIRTIO_F_VERSION_1), converted where they are read and
 * written; vhost-user messages are in host order. */
static inline uint16_t load16(const uint16_t *p)
{
	return le16toh(__atomic_load_n(p, __ATOMIC_RELAXED));
}

static inline uint16_t avail_idx(const struct virtq *vq)
{
	return le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
}

static int add_buf(struct virtq_elem *e, const struct guest_mem *gm, const struct vring_desc *d)
{
	struct iovec *iov;
	void *p;

	if (d->flags & VRING_DESC_F_WRITE) {
		if (e->n_in == VIRTQ_MAX_IOV)
			return -E2BIG;
		iov = &e->in[e->n_in++];
		e->in_len += d->len;
	} else {
		/* Readable buffers must all come before the writable ones. */
		if (e->n_in || e->n_out == VIRTQ_MAX_IOV)
			return e->n_in ? -EINVAL : -E2BIG;
		iov = &e->out[e->n_out++];
		e->out_len += d->len;
	}
	p = guest_gpa(gm, d->addr, d->len);
	if (!p)
		return -EFAULT;
	iov->iov_base = p;
	iov->iov_len = d->len;
	return 0;
}

/* Walk one chain in table (size max) from index i, at most max links. */
static int walk(struct virtq_elem *e, const struct guest_mem *gm, const struct vring_desc *table,
		uint32_t max, uint16_t i, bool indirect)
{
	uint32_t links = 0;
	struct vring_desc d;
	int err;

	for (;;) {
		if (i >= max)
			return -ERANGE;
		if (++links > max)
			return -ELOOP;
		memcpy(&d, &table[i], sizeof(d));
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		d.addr = le64toh(d.addr);
		d.len = le32toh(d.len);
		d.flags = le16toh(d.flags);
		d.next = le16toh(d.next);
		if (d.flags & VRING_DESC_F_INDIRECT) {
			const struct vring_desc *t;

			/* Not inside an indirect table, not chained, not writable,
			 * a whole number of descriptors (virtio 2.6.5.3.1). */
			if (indirect || (d.flags & (VRING_DESC_F_NEXT | VRING_DESC_F_WRITE)) ||
			    !d.len || d.len % sizeof(struct vring_desc) ||
			    d.len / sizeof(struct vring_desc) > VIRTQ_MAX_SIZE)
				return -EINVAL;
			t = guest_gpa(gm, d.addr, d.len);
			if (!t)
				return -EFAULT;
			return walk(e, gm, t, d.len / sizeof(struct vring_desc), 0, true);
		}
		err = add_buf(e, gm, &d);
		if (err)
			return err;
		if (!(d.flags & VRING_DESC_F_NEXT))
			return 0;
		i = d.next;
	}
}

int virtq_pop(struct virtq *vq, const struct guest_mem *gm, struct virtq_elem *e)
{
	uint16_t avail, head;
	int r;

	avail = avail_idx(vq);
	if (avail == vq->last_avail)
		return 0;
	/* More than num entries outstanding is impossible for a sane driver. */
	if ((uint16_t)(avail - vq->last_avail) > vq->num)
		return -EOVERFLOW;
	head = load16(&vq->avail->ring[vq->last_avail % vq->num]);
	e->head = head;
	e->n_out = e->n_in = 0;
	e->out_len = e->in_len = 0;
	if (head >= vq->num)
		return -ERANGE;
	vq->last_avail++;
	r = walk(e, gm, vq->desc, vq->num, head, false);
	return r ? r : 1;
}

void virtq_unpop(struct virtq *vq)
{
	vq->last_avail--;
}

void virtq_push(struct virtq *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem *u = &vq->used->ring[vq->used_idx % vq->num];

	u->id = htole32(head);
	u->len = htole32(len);
	vq->used_idx++;
	__atomic_store_n(&vq->used->idx, htole16(vq->used_idx), __ATOMIC_RELEASE);
}

int virtq_discard(struct virtq *vq, unsigned int max)
{
	uint16_t avail = avail_idx(vq), head;
	unsigned int n = 0;

	if ((uint16_t)(avail - vq->last_avail) > vq->num)
		return -EOVERFLOW;
	for (; n < max && vq->last_avail != avail; n++) {
		head = load16(&vq->avail->ring[vq->last_avail % vq->num]);
		if (head >= vq->num)
			return -ERANGE;
		vq->last_avail++;
		virtq_push(vq, head, 0);
	}
	return (int)n;
}

bool virtq_notify(struct virtq *vq, bool force)
{
	uint64_t one = 1;

	if (vq->call_fd < 0)
		return false;
	/* The used index must be visible before the flags are read. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!force && (load16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT))
		return false;
	/* EAGAIN: the counter is saturated, the driver will wake anyway. */
	return write(vq->call_fd, &one, sizeof(one)) == sizeof(one);
}

bool virtq_has_work(const struct virtq *vq)
{
	return avail_idx(vq) != vq->last_avail;
}

void virtq_set_kicks(struct virtq *vq, bool wanted)
{
	uint16_t f = wanted ? 0 : VRING_USED_F_NO_NOTIFY;

	__atomic_store_n(&vq->used->flags, htole16(f), __ATOMIC_RELAXED);
	/* Flags before the re-check of avail->idx that follows (no lost kick). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static uint64_t copy_iov(const struct iovec *iov, unsigned int n, uint64_t off, void *buf,
			 uint64_t len, bool to_iov)
{
	uint64_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		uint64_t chunk;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		chunk = iov[i].iov_len - off;
		if (chunk > len - done)
			chunk = len - done;
		if (to_iov)
			memcpy((uint8_t *)iov[i].iov_base + off, (uint8_t *)buf + done, chunk);
		else
			memcpy((uint8_t *)buf + done, (uint8_t *)iov[i].iov_base + off, chunk);
		done += chunk;
		off = 0;
	}
	return done;
}

uint64_t virtq_read(const struct virtq_elem *e, uint64_t off, void *buf, uint64_t len)
{
	return copy_iov(e->out, e->n_out, off, buf, len, false);
}

uint64_t virtq_write(const struct virtq_elem *e, uint64_t off, const void *buf, uint64_t len)
{
	return copy_iov(e->in, e->n_in, off, (void *)buf, len, true);
}
