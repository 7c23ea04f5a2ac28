// SPDX-License-Identifier: GPL-2.0-only
/*
 * A whole device saved for a restart that keeps it, and read back
 * (docs/restart.md, "The state"): a header, the vhost-user connection's
 * state, the device's own objects, the engine's records (save.c), the
 * device's CQ and QP slots (format 2: and ABI v2's doorbell pages and
 * rings), and a CRC-32 of it all. The fds it names (the
 * connection, memory, eventfds) travel beside it, through the caller.
 *
 * Nothing read back is trusted more than a guest's command: every field is
 * checked as the command or vhost-user message that set it was, and a state
 * that fails any check leaves a fresh device with no connection, so that
 * the VM falls back to a reconnection (level 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "icrc.h"
#include "save.h"
#include "vdev_int.h"
#include "virtq.h"

#define MAGIC		"vrdmast"	/* and its NUL: 8 bytes */
#define HDR_LEN		(8 + 4 + 4 + VDEV_WRITER_MAX + 8 + VRDMA_CONF_NAME_MAX + 1 + 5 * 4)
#define FD_KICK_BIT	1
#define FD_CALL_BIT	2
#define FD_ERR_BIT	4

enum {
	VDEV_REC_VHOST = 0x0201,
	VDEV_REC_DEV = 0x0202,
	VDEV_REC_MR = 0x0203,
	VDEV_REC_CQ = 0x0204,
	VDEV_REC_QP = 0x0205,
	VDEV_REC_V2 = 0x0206,		/* format 2: ABI v2's limits, doorbell pages */
	VDEV_REC_CQ_RING = 0x0207,	/* after its CQ's record */
	VDEV_REC_QP_RING = 0x0208,	/* after its slot's record */
	VDEV_REC_END = 0x02ff,
};

enum { SLOT_QP = 1, SLOT_SRQ = 2 };
enum { RING_SQ = 1, RING_RQ = 2, RING_DEAD = 4 };

/* ---- saving ---- */

static void save_vhost(const struct vu_dev *d, struct sbuf *b, uint8_t *same_as)
{
	size_t at = sb_rec_begin(b, VDEV_REC_VHOST);
	unsigned int i;

	sb_u64(b, d->features);
	sb_u64(b, d->protocol_features);
	sb_u8(b, d->owner);
	sb_u8(b, d->status);
	sb_u8(b, (uint8_t)d->mem.n);
	for (i = 0; i < d->mem.n; i++) {
		const struct guest_region *g = &d->mem.r[i];

		sb_u64(b, g->gpa);
		sb_u64(b, g->size);
		sb_u64(b, g->uva);
		sb_u64(b, g->mmap_offset);
		sb_u8(b, same_as[i]);
	}
	sb_u16(b, (uint16_t)d->n_vqs);
	for (i = 0; i < d->n_vqs; i++) {
		const struct virtq *vq = &d->vqs[i];

		sb_u16(b, vq->num);
		sb_u8(b, vq->have_addr);
		sb_u8(b, vq->enabled);
		sb_u8(b, vq->kicked);
		sb_u64(b, vq->desc_uva);
		sb_u64(b, vq->avail_uva);
		sb_u64(b, vq->used_uva);
		sb_u16(b, vq->last_avail);
		sb_u16(b, vq->used_idx);
		sb_u8(b, (vq->kick_fd >= 0 ? FD_KICK_BIT : 0) | (vq->call_fd >= 0 ? FD_CALL_BIT : 0) |
			 (vq->err_fd >= 0 ? FD_ERR_BIT : 0));
	}
	sb_rec_end(b, at);
}

static void save_dev(const struct vdev *v, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_DEV);
	const uint64_t *st = (const uint64_t *)&v->stats;
	unsigned int i, n = sizeof(v->stats) / sizeof(uint64_t);

	sb_bytes(b, v->config.gid_tbl, sizeof(v->config.gid_tbl));
	for (i = 0; i < VIRTIO_RDMA_GID_TBL_LEN; i++)
		sb_u8(b, v->gid_valid[i]);
	sb_u32(b, v->cq_hi);
	sb_u32(b, v->qp_hi);
	sb_u16(b, (uint16_t)n);
	for (i = 0; i < n; i++)
		sb_u64(b, st[i]);
	sb_u8(b, (uint8_t)v->cfg->n_gids);	/* the addresses the host gave it */
	for (i = 0; i < v->cfg->n_gids; i++)
		sb_bytes(b, v->cfg->gids[i].raw, 16);
	sb_rec_end(b, at);
}

static void save_mr(uint32_t mrn, const struct vdev_mr *mr, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_MR);
	uint32_t i;

	sb_u32(b, mrn);
	sb_u8(b, mr->dma);
	sb_u8(b, mr->fast);
	sb_u32(b, mr->max_num_sg);
	sb_u64(b, mr->first_off);
	sb_u32(b, mr->charged);
	sb_u32(b, mr->npages);
	for (i = 0; i < mr->npages; i++)
		sb_u64(b, mr->pages[i]);
	sb_rec_end(b, at);
}

static void save_cq(uint32_t n, const struct vdev_cq *cq, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_CQ);

	sb_u32(b, n);
	sb_u32(b, cq->armed);
	sb_u8(b, cq->solicited);
	sb_u8(b, cq->in_error);
	sb_u8(b, cq->have_held);
	if (cq->have_held)
		eng_wc_save(&cq->held, b);
	sb_u8(b, (uint8_t)cq->n_events);
	sb_bytes(b, cq->events, cq->n_events * sizeof(cq->events[0]));
	sb_rec_end(b, at);
}

static void save_v2(const struct vdev *v, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_V2);
	unsigned int i, n = 0;

	sb_u32(b, v->n_cqs);
	sb_u32(b, v->n_qps);
	for (i = 0; i < VDEV_MAX_DB_PAGES; i++)
		n += !!v->dbs[i];
	sb_u8(b, (uint8_t)n);
	for (i = 0; i < VDEV_MAX_DB_PAGES; i++)
		if (v->dbs[i]) {
			sb_u32(b, i);
			sb_u64(b, v->dbs[i]->gpa);
		}
	sb_rec_end(b, at);
}

static void save_gring(const struct gring *r, struct sbuf *b)
{
	uint32_t i;

	sb_u32(b, r->entries);
	sb_u32(b, r->stride);
	sb_u32(b, r->npages);
	for (i = 0; i < r->npages; i++)
		sb_u64(b, r->pages[i]);
}

static void save_cq_ring(uint32_t n, const struct vdev_cq *cq, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_CQ_RING);

	sb_u32(b, n);
	save_gring(&cq->ring, b);
	sb_u32(b, cq->written);
	sb_u32(b, cq->cons);
	sb_u32(b, cq->arm_seq);
	sb_u16(b, cq->dbn);
	sb_u16(b, cq->db_bit);
	sb_u8(b, cq->arm_rung);
	sb_u8(b, cq->notable);
	sb_u32(b, cq->notable_at);
	sb_u8(b, cq->ev_owed);
	sb_rec_end(b, at);
}

static void save_qp_ring(uint32_t k, const struct vdev_qp *qp, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_QP_RING);

	sb_u32(b, k);
	sb_u8(b, (qp->sq_ring.entries ? RING_SQ : 0) | (qp->rq_ring.entries ? RING_RQ : 0) |
		 (qp->ring_dead ? RING_DEAD : 0));
	if (qp->sq_ring.entries)
		save_gring(&qp->sq_ring, b);
	if (qp->rq_ring.entries)
		save_gring(&qp->rq_ring, b);
	sb_u32(b, qp->sq_taken);
	sb_u32(b, qp->rq_taken);
	sb_u16(b, qp->dbn);
	sb_u16(b, qp->sq_bit);
	sb_u16(b, qp->rq_bit);
	sb_rec_end(b, at);
}

static void save_limits(const struct vdev_wq_limits *l, struct sbuf *b)
{
	sb_u8(b, l->qp_type);
	sb_u32(b, l->max_sge);
	sb_u32(b, l->max_inline);
}

static void save_slot(uint32_t k, const struct vdev_qp *qp, struct sbuf *b)
{
	size_t at = sb_rec_begin(b, VDEV_REC_QP);

	sb_u32(b, k);
	sb_u8(b, qp->eng ? SLOT_QP : SLOT_SRQ);
	sb_u32(b, qp->eng ? 0 : eng_srq_handle(qp->srq));
	save_limits(&qp->sq, b);
	save_limits(&qp->rq, b);
	sb_u32(b, qp->send_cqn);
	sb_u32(b, qp->recv_cqn);
	sb_rec_end(b, at);
}

/* Regions backed by one file name it once: systemd's store keeps a file
 * under one name only. same_as[i]: the first region with i's file. */
static void regions_by_file(const struct guest_mem *gm, uint8_t *same_as)
{
	struct stat st[VHOST_USER_MEM_REGIONS];
	unsigned int i, j;

	for (i = 0; i < gm->n; i++) {
		same_as[i] = (uint8_t)i;
		if (fstat(gm->r[i].fd, &st[i]))
			continue;
		for (j = 0; j < i; j++)
			if (same_as[j] == j && st[j].st_dev == st[i].st_dev &&
			    st[j].st_ino == st[i].st_ino) {
				same_as[i] = (uint8_t)j;
				break;
			}
	}
}

int vdev_save(struct vdev *v, const struct vdev_state_info *info, struct sbuf *b,
	      vdev_keep_fd_fn keep, void *ctx)
{
	uint8_t same_as[VHOST_USER_MEM_REGIONS] = { 0 };
	char w[VDEV_WRITER_MAX] = { 0 }, name[VRDMA_CONF_NAME_MAX + 1] = { 0 };
	size_t start = b->len;
	unsigned int i;
	uint32_t k;
	int err;

	if (v->broken || v->vu.fd < 0)
		return -ENOTCONN;	/* nothing worth keeping: it reconnects */
	regions_by_file(&v->vu.mem, same_as);
	err = keep(ctx, VDEV_FD_CONN, 0, v->vu.fd);
	for (i = 0; !err && i < v->vu.mem.n; i++)
		if (same_as[i] == i)
			err = keep(ctx, VDEV_FD_MEM, i, v->vu.mem.r[i].fd);
	for (i = 0; !err && i < v->vu.n_vqs; i++) {
		const struct virtq *vq = &v->vu.vqs[i];

		if (vq->kick_fd >= 0)
			err = keep(ctx, VDEV_FD_KICK, i, vq->kick_fd);
		if (!err && vq->call_fd >= 0)
			err = keep(ctx, VDEV_FD_CALL, i, vq->call_fd);
		if (!err && vq->err_fd >= 0)
			err = keep(ctx, VDEV_FD_ERR, i, vq->err_fd);
	}
	if (err)
		return err;

	memcpy(w, info->writer, strnlen(info->writer, sizeof(w)));
	snprintf(name, sizeof(name), "%s", v->cfg->name);
	sb_bytes(b, MAGIC, 8);
	sb_u32(b, VDEV_STATE_FORMAT);
	sb_u32(b, 0);			/* the whole length, set below */
	sb_bytes(b, w, sizeof(w));
	sb_u64(b, info->saved_ns);
	sb_bytes(b, name, sizeof(name));
	sb_u32(b, v->max_qp);
	sb_u32(b, v->max_cq);
	sb_u32(b, v->max_mr);
	sb_u32(b, v->max_mr_pages);
	sb_u32(b, v->port.mtu);
	save_vhost(&v->vu, b, same_as);
	save_dev(v, b);
	if (v->ring_mode)
		save_v2(v, b);
	for (k = 0; k < v->max_mr; k++)
		if (v->mrs[k])
			save_mr(k, v->mrs[k], b);
	eng_dev_save(v->eng, b);
	for (k = 0; k < v->n_cqs; k++)
		if (v->cqs[k].eng) {
			save_cq(k, &v->cqs[k], b);
			if (v->cqs[k].ring.entries)
				save_cq_ring(k, &v->cqs[k], b);
		}
	for (k = 0; k < v->n_qps; k++)
		if (v->qps[k].eng || v->qps[k].srq) {
			save_slot(k, &v->qps[k], b);
			if (vdev_slot_ring(&v->qps[k]))
				save_qp_ring(k, &v->qps[k], b);
		}
	sb_rec_end(b, sb_rec_begin(b, VDEV_REC_END));
	if (b->err)
		return b->err;
	/* the length (with the CRC after it) and the CRC make a state cut
	 * short (a crash while it was written) one that is refused */
	for (i = 0; i < 4; i++)
		b->p[start + 12 + i] = (uint8_t)((b->len + 4 - start) >> (8 * i));
	sb_u32(b, roce_crc32(0, b->p + start, b->len - start));
	return b->err;
}

/* ---- restoring ---- */

struct restore {
	struct vdev *v;
	vdev_take_fd_fn take;
	void *ctx;
	char *why;
	size_t whylen;
	uint32_t format;
};

static int refuse(struct restore *rs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(struct restore *rs, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs->why, rs->whylen, fmt, ap);
	va_end(ap);
	return err;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int check_header(struct restore *rs, struct srd *r, struct vdev_state_info *info)
{
	struct vdev *v = rs->v;
	char magic[8], w[VDEV_WRITER_MAX + 1] = { 0 }, name[VRDMA_CONF_NAME_MAX + 2] = { 0 };
	uint32_t format, len, q, c, m, mp, mtu;

	if (r->len < HDR_LEN + 4)
		return refuse(rs, -EBADMSG, "%zu bytes: too short", r->len);
	sr_bytes(r, magic, 8);
	format = sr_u32(r);
	len = sr_u32(r);
	sr_bytes(r, w, VDEV_WRITER_MAX);
	info->saved_ns = sr_u64(r);
	sr_bytes(r, name, VRDMA_CONF_NAME_MAX + 1);
	memcpy(info->writer, w, sizeof(info->writer));
	q = sr_u32(r);
	c = sr_u32(r);
	m = sr_u32(r);
	mp = sr_u32(r);
	mtu = sr_u32(r);
	if (memcmp(magic, MAGIC, 8))
		return refuse(rs, -EBADMSG, "not a vrdmad device state");
	if (format < 1 || format > VDEV_STATE_FORMAT)
		return refuse(rs, -EPROTONOSUPPORT, "format %u (by %s); this vrdmad reads 1 to %u",
			      format, w, VDEV_STATE_FORMAT);
	rs->format = format;
	if (len != r->len)
		return refuse(rs, -EBADMSG, "%zu bytes of %u: cut short while it was written?",
			      r->len, len);
	if (roce_crc32(0, r->p, r->len - 4) != get_le32(r->p + r->len - 4))
		return refuse(rs, -EBADMSG, "its CRC does not match: damaged");
	if (strcmp(name, v->cfg->name))
		return refuse(rs, -EINVAL, "it is vm %s's", name);
	if (q != v->max_qp || c != v->max_cq || m != v->max_mr || mp != v->max_mr_pages)
		return refuse(rs, -ERANGE, "the VM's limits changed (max_qp %u, max_cq %u, max_mr "
			      "%u, max_mr_pages %u then; %u, %u, %u, %u now)", q, c, m, mp,
			      v->max_qp, v->max_cq, v->max_mr, v->max_mr_pages);
	if (mtu != v->port.mtu)
		return refuse(rs, -ERANGE, "the port's MTU changed (%u then, %u now)", mtu,
			      v->port.mtu);
	r->len -= 4;	/* the records end at the CRC */
	return 0;
}

static int take(struct restore *rs, enum vdev_fd_kind kind, unsigned int i, int *fd)
{
	static const char *const names[] = { "connection", "memory", "kick", "call", "err" };

	char why[128];
	int ret;

	*fd = rs->take(rs->ctx, kind, i);
	if (*fd < 0)
		return refuse(rs, *fd, "its %s fd %u is not there", names[kind], i);
	/* As if the front end had sent it (SET_VRING_*, the connection);
	 * memory is checked where it is mapped. */
	ret = vu_fd_check(*fd, kind == VDEV_FD_CONN ? VU_FD_SOCKET :
			  kind == VDEV_FD_MEM ? VU_FD_ANY : VU_FD_EVENTFD, why, sizeof(why));
	if (ret)
		return refuse(rs, ret, "its %s fd %u: %s", names[kind], i, why);
	return 0;
}

static int load_vhost(struct restore *rs, struct srd *r)
{
	struct vu_dev *d = &rs->v->vu;
	struct vhost_user_memory m = { 0 };
	int fds[VHOST_USER_MEM_REGIONS];
	uint8_t same_as[VHOST_USER_MEM_REGIONS];
	char err[160];
	unsigned int i, n;
	int ret = 0;

	d->features = sr_u64(r);
	d->protocol_features = sr_u64(r);
	d->owner = sr_bool(r);
	d->status = sr_u8(r);
	m.nregions = sr_u8(r);
	if (r->err || m.nregions > VHOST_USER_MEM_REGIONS)
		return refuse(rs, -EBADMSG, "its memory table does not read");
	/* format 1 holds v1's queues only; with ABI v2 the tables are sized
	 * for rings, as SET_FEATURES made them */
	if (d->features & (1ull << VIRTIO_RDMA_F_RINGS)) {
		if (rs->format < 2)
			return refuse(rs, -EBADMSG, "format 1 with ABI v2 negotiated");
		if (vdev_device_reset(rs->v))
			return refuse(rs, -ENOMEM, "out of memory");
	}
	for (i = 0; i < m.nregions; i++) {
		m.regions[i].guest_phys_addr = sr_u64(r);
		m.regions[i].memory_size = sr_u64(r);
		m.regions[i].userspace_addr = sr_u64(r);
		m.regions[i].mmap_offset = sr_u64(r);
		same_as[i] = sr_u8(r);
		if (same_as[i] > i || (same_as[i] < i && same_as[same_as[i]] != same_as[i]))
			return refuse(rs, -EBADMSG, "its memory table does not read");
	}
	if (r->err)
		return refuse(rs, -EBADMSG, "its memory table does not read");
	for (n = 0; n < m.nregions && !ret; n++)
		ret = same_as[n] == n ? take(rs, VDEV_FD_MEM, n, &fds[n]) :
		      (fds[n] = fcntl(fds[same_as[n]], F_DUPFD_CLOEXEC, 3)) < 0 ? -errno : 0;
	if (!ret && m.nregions) {
		ret = guest_mem_map(&d->mem, &m, fds, m.nregions, err, sizeof(err));
		if (ret)
			refuse(rs, ret, "its memory: %s", err);
	}
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);		/* the mapping keeps its own */
	if (ret)
		return ret;
	if (sr_u16(r) != d->n_vqs)
		return refuse(rs, -EBADMSG, "its queue count is not the device's (%u)", d->n_vqs);
	for (i = 0; i < d->n_vqs; i++) {
		struct virtq *vq = &d->vqs[i];
		uint8_t has;

		vq->num = sr_u16(r);
		vq->have_addr = sr_bool(r);
		vq->enabled = sr_bool(r);
		vq->kicked = sr_bool(r);
		vq->desc_uva = sr_u64(r);
		vq->avail_uva = sr_u64(r);
		vq->used_uva = sr_u64(r);
		vq->last_avail = sr_u16(r);
		vq->used_idx = sr_u16(r);
		has = sr_u8(r);
		if (r->err || has > 7 || vq->num > VIRTQ_MAX_SIZE || (vq->num & (vq->num - 1)))
			return refuse(rs, -EBADMSG, "queue %u does not read", i);
		if ((has & FD_KICK_BIT) && (ret = take(rs, VDEV_FD_KICK, i, &vq->kick_fd)))
			return ret;
		if ((has & FD_CALL_BIT) && (ret = take(rs, VDEV_FD_CALL, i, &vq->call_fd)))
			return ret;
		if ((has & FD_ERR_BIT) && (ret = take(rs, VDEV_FD_ERR, i, &vq->err_fd)))
			return ret;
		ret = virtq_map(vq, &d->mem);
		if (ret)
			return refuse(rs, ret, "queue %u's rings are not in its memory", i);
	}
	return 0;
}

static int load_dev(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint64_t *st = (uint64_t *)&v->stats;
	unsigned int i, n, max = sizeof(v->stats) / sizeof(uint64_t);

	sr_bytes(r, v->config.gid_tbl, sizeof(v->config.gid_tbl));
	for (i = 0; i < VIRTIO_RDMA_GID_TBL_LEN; i++)
		v->gid_valid[i] = sr_bool(r);
	v->cq_hi = sr_u32(r);
	v->qp_hi = sr_u32(r);
	n = sr_u16(r);
	for (i = 0; i < n && !r->err; i++) {	/* new stats go at the end */
		uint64_t x = sr_u64(r);

		if (i < max)
			st[i] = x;
	}
	n = sr_u8(r);
	if (r->err || v->cq_hi > v->n_cqs || v->qp_hi > v->n_qps)
		return refuse(rs, -EBADMSG, "its device record does not read");
	/* the host's addresses for it: a VM given others starts afresh */
	if (n != v->cfg->n_gids)
		return refuse(rs, -ERANGE, "the VM's addresses changed (%u then, %u now)", n,
			      v->cfg->n_gids);
	for (i = 0; i < n; i++) {
		uint8_t gid[16];

		sr_bytes(r, gid, 16);
		if (r->err || memcmp(gid, v->cfg->gids[i].raw, 16))
			return refuse(rs, -ERANGE, "the VM's addresses changed");
	}
	return 0;
}

/* As REG_USER_MR, CREATE_MR, GET_DMA_MR and MAP_MR_SG would have made it. */
static int load_mr(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint32_t mrn = sr_u32(r), i;
	struct vdev_mr *mr;

	if (r->err || mrn >= v->max_mr || v->mrs[mrn])
		return refuse(rs, -EBADMSG, "an MR does not read");
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return refuse(rs, -ENOMEM, "out of memory");
	mr->v = v;
	v->mrs[mrn] = mr;
	mr->dma = sr_bool(r);
	mr->fast = sr_bool(r);
	mr->max_num_sg = sr_u32(r);
	mr->first_off = sr_u64(r);
	mr->charged = sr_u32(r);
	mr->npages = sr_u32(r);
	if (r->err || mr->npages > VDEV_MAX_PAGES || mr->first_off >= VIRTIO_RDMA_PAGE_SIZE ||
	    mr->charged > v->max_mr_pages - v->mr_pages ||
	    (mr->dma && (mr->fast || mr->npages || mr->charged)) ||
	    (mr->fast && (mr->charged != mr->max_num_sg || mr->npages > mr->max_num_sg)) ||
	    (!mr->dma && !mr->fast && mr->charged != mr->npages))
		return refuse(rs, -EBADMSG, "MR %u does not read", mrn);
	v->mr_pages += mr->charged;
	if (mr->npages) {
		mr->pages = malloc((size_t)mr->npages * sizeof(*mr->pages));
		if (!mr->pages)
			return refuse(rs, -ENOMEM, "out of memory");
	}
	for (i = 0; i < mr->npages; i++) {
		/* aligned, as REG_USER_MR checked; in the VM's memory then,
		 * maybe no longer (a later SET_MEM_TABLE: an access error for
		 * that MR alone, each access translates) */
		mr->pages[i] = sr_u64(r);
		if (r->err || mr->pages[i] % VIRTIO_RDMA_PAGE_SIZE)
			return refuse(rs, -EBADMSG, "MR %u's page %u is not a page address", mrn,
				      i);
	}
	return 0;
}

/* The engine's MR handle to its device MR, each taken once. */
static int mr_of(void *ctx, uint32_t handle, eng_mem_map_fn *map, void **mem)
{
	struct vdev *v = ctx;

	if (handle >= v->max_mr || !v->mrs[handle] || v->mrs[handle]->eng)
		return -EBADMSG;
	*map = vdev_mr_map;
	*mem = v->mrs[handle];
	return 0;
}

static int load_cq(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint32_t n = sr_u32(r);
	struct vdev_cq *cq;

	if (r->err || n >= v->n_cqs || v->cqs[n].eng || !eng_cq_get(v->eng, n))
		return refuse(rs, -EBADMSG, "a CQ does not read");
	cq = &v->cqs[n];
	cq->eng = eng_cq_get(v->eng, n);
	cq->armed = sr_u32(r);
	cq->solicited = sr_bool(r);
	cq->in_error = sr_bool(r);
	cq->have_held = sr_bool(r);
	if (cq->have_held)
		eng_wc_load(&cq->held, r);
	cq->n_events = sr_u8(r);
	if (cq->n_events > CQ_EVENTS ||
	    (cq->armed & ~(uint32_t)(VIRTIO_RDMA_NOTIFY_SOLICITED | VIRTIO_RDMA_NOTIFY_NEXT_COMPLETION)))
		return refuse(rs, -EBADMSG, "CQ %u does not read", n);
	sr_bytes(r, cq->events, cq->n_events * sizeof(cq->events[0]));
	if (r->err)
		return refuse(rs, -EBADMSG, "CQ %u does not read", n);
	if (n >= v->cq_hi)
		v->cq_hi = n + 1;
	return 0;
}

static void load_limits(struct vdev_wq_limits *l, struct srd *r)
{
	l->qp_type = sr_u8(r);
	l->max_sge = sr_u32(r);
	l->max_inline = sr_u32(r);
	if (l->qp_type > VIRTIO_IB_QPT_UD || l->max_sge > ENG_MAX_SGE ||
	    l->max_inline > ENG_MAX_INLINE)
		r->err = -EBADMSG;
}

static int load_slot(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint32_t k = sr_u32(r), kind = sr_u8(r), srqn = sr_u32(r);
	struct vdev_qp *qp;

	if (r->err || k >= v->n_qps || v->qps[k].eng || v->qps[k].srq)
		return refuse(rs, -EBADMSG, "a QP slot does not read");
	qp = &v->qps[k];
	if (kind == SLOT_QP)
		qp->eng = eng_qp_get(v->eng, k);
	else if (kind == SLOT_SRQ && eng_srq_get(v->eng, srqn) &&
		 eng_srq_slot(eng_srq_get(v->eng, srqn)) == k)
		qp->srq = eng_srq_get(v->eng, srqn);
	load_limits(&qp->sq, r);
	load_limits(&qp->rq, r);
	qp->send_cqn = sr_u32(r);
	qp->recv_cqn = sr_u32(r);
	if (r->err || (!qp->eng && !qp->srq) || qp->send_cqn >= v->n_cqs ||
	    qp->recv_cqn >= v->n_cqs)
		return refuse(rs, -EBADMSG, "QP slot %u does not read", k);
	if (k >= v->qp_hi)
		v->qp_hi = k + 1;
	return 0;
}

/* ABI v2's limits (the VM's config must still say them) and its doorbell
 * pages, as ADD_DB_PAGE took them. */
static int load_v2(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint32_t cqs = sr_u32(r), qps = sr_u32(r), dbn;
	unsigned int i, n = sr_u8(r);
	uint64_t gpa;
	int err;

	if (r->err || !v->ring_mode || n > VDEV_MAX_DB_PAGES)
		return refuse(rs, -EBADMSG, "its ABI v2 record does not read");
	if (cqs != v->n_cqs || qps != v->n_qps)
		return refuse(rs, -ERANGE, "the VM's limits changed (ring_max_cq %u, ring_max_qp %u "
			      "then; %u, %u now)", cqs, qps, v->n_cqs, v->n_qps);
	for (i = 0; i < n; i++) {
		dbn = sr_u32(r);
		gpa = sr_u64(r);
		err = r->err ? -EBADMSG : vdev_db_restore(v, dbn, gpa);
		if (err)
			return refuse(rs, err, "doorbell page %u does not check out", dbn);
	}
	return 0;
}

/* A ring as CREATE_*_RING checked it: geometry, aligned pages (in the
 * VM's memory then; a later SET_MEM_TABLE may have left some out, an error
 * on that queue alone, as it was before the restart); at most max_stride
 * bytes a slot (what the device copies one into). */
static int load_gring(struct srd *r, struct gring *g, uint32_t max_stride)
{
	uint32_t entries = sr_u32(r), stride = sr_u32(r), npages = sr_u32(r), i;
	uint64_t *pages;
	char why[160];
	int err;

	if (r->err || stride > max_stride || !gring_pages_needed(entries, stride) ||
	    npages != gring_pages_needed(entries, stride))
		return -EBADMSG;
	pages = malloc((size_t)npages * sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < npages; i++)
		pages[i] = sr_u64(r);
	err = r->err ? -EBADMSG : gring_init(g, NULL, pages, npages, entries, stride, why,
					     sizeof(why));
	free(pages);
	return err == -ENOMEM ? err : err ? -EBADMSG : 0;
}

static int load_cq_ring(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint32_t n = sr_u32(r), own, bit;
	struct vdev_cq *cq;
	int err;

	if (r->err || n >= v->n_cqs || !v->cqs[n].eng || v->cqs[n].ring.entries || !v->ring_mode)
		return refuse(rs, -EBADMSG, "a CQ ring does not read");
	cq = &v->cqs[n];
	err = load_gring(r, &cq->ring, 64);
	if (!err && cq->ring.stride != 64)
		err = -EBADMSG;
	cq->written = sr_u32(r);
	cq->cons = sr_u32(r);
	cq->arm_seq = sr_u32(r);
	cq->dbn = sr_u16(r);
	cq->db_bit = sr_u16(r);
	cq->arm_rung = sr_bool(r);
	cq->notable = sr_bool(r);
	cq->notable_at = sr_u32(r);
	cq->ev_owed = sr_u8(r);
	if (!err && (r->err || cq->written - cq->cons > cq->ring.entries ||
		     cq->arm_seq & VIRTIO_RDMA_RING_ARMED_FIRED ||
		     cq->ev_owed & ~((1u << VIRTIO_RDMA_RING_EVENT_COMPLETION) |
				     (1u << VIRTIO_RDMA_RING_EVENT_ASYNC))))
		err = -EBADMSG;
	bit = cq->db_bit;
	own = VDEV_RING_CQ | n;
	if (!err)
		err = vdev_db_bind(v, cq->dbn, &bit, &own, 1);
	if (err) {
		gring_free(&cq->ring);
		cq->ev_owed = 0;
		return refuse(rs, err, "CQ %u's ring does not check out", n);
	}
	if (cq->ev_owed)
		v->n_ev_owed++;	/* sent once the restored device polls it */
	return 0;
}

static int load_qp_ring(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	uint32_t k = sr_u32(r), flags = sr_u8(r), bits[2], own[2];
	struct vdev_qp *qp;
	bool want_rq;
	int err = 0;

	if (r->err || k >= v->n_qps || (!v->qps[k].eng && !v->qps[k].srq) ||
	    vdev_slot_ring(&v->qps[k]) || !v->ring_mode)
		return refuse(rs, -EBADMSG, "a QP ring does not read");
	qp = &v->qps[k];
	/* a QP has a send ring, and a receive ring unless on an SRQ; an
	 * SRQ's slot its one ring */
	want_rq = qp->srq || !eng_qp_srq(qp->eng);
	if ((flags & ~(RING_SQ | RING_RQ | RING_DEAD)) || !(flags & RING_SQ) != !qp->eng ||
	    !(flags & RING_RQ) == want_rq)
		return refuse(rs, -EBADMSG, "QP slot %u's rings do not read", k);
	if (flags & RING_SQ)
		err = load_gring(r, &qp->sq_ring, sizeof(v->wqe_buf));
	if (!err && (flags & RING_RQ))
		err = load_gring(r, &qp->rq_ring, sizeof(v->wqe_buf));
	qp->ring_dead = flags & RING_DEAD;
	qp->sq.slot = qp->rq.slot = true;	/* WQEs come from slots, as CREATE_*_RING set */
	qp->sq_taken = sr_u32(r);
	qp->rq_taken = sr_u32(r);
	qp->dbn = sr_u16(r);
	qp->sq_bit = sr_u16(r);
	qp->rq_bit = sr_u16(r);
	if (!err && r->err)
		err = -EBADMSG;
	if (!err) {
		unsigned int n = 0;

		if (flags & RING_SQ) {
			bits[n] = qp->sq_bit;
			own[n++] = VDEV_RING_SQ | k;
		}
		if (flags & RING_RQ) {
			bits[n] = qp->rq_bit;
			own[n++] = VDEV_RING_RQ | k;
		}
		err = vdev_db_bind(v, qp->dbn, bits, own, n);
	}
	if (err) {
		gring_free(&qp->sq_ring);
		gring_free(&qp->rq_ring);
		return refuse(rs, err, "QP slot %u's rings do not check out", k);
	}
	return 0;
}

/* Every object of the engine has its device side, and each MR its engine
 * side; with ABI v2, every CQ and slot its rings (a v2 device has no v1
 * queues). */
static int check_complete(struct restore *rs)
{
	struct vdev *v = rs->v;
	uint32_t i;

	for (i = 0; i < v->max_mr; i++) {
		if (v->mrs[i] && !(v->mrs[i]->eng = eng_mr_get(v->eng, i)))
			return refuse(rs, -EBADMSG, "MR %u has no registration", i);
	}
	for (i = 0; i < VDEV_MAX_PD; i++)
		v->pds[i] = eng_pd_get(v->eng, i);
	for (i = 0; i < v->n_cqs; i++)
		if ((eng_cq_get(v->eng, i) && !v->cqs[i].eng) ||
		    (v->ring_mode && v->cqs[i].eng && !v->cqs[i].ring.entries))
			return refuse(rs, -EBADMSG, "CQ %u has no device record", i);
	for (i = 0; i < v->n_qps; i++)
		if ((eng_qp_get(v->eng, i) && !v->qps[i].eng) ||
		    (v->ring_mode && (v->qps[i].eng || v->qps[i].srq) &&
		     !vdev_slot_ring(&v->qps[i])))
			return refuse(rs, -EBADMSG, "QP slot %u has no device record", i);
	for (i = 0; eng_srq_get(v->eng, i) || i < v->n_qps; i++) {
		struct eng_srq *srq = eng_srq_get(v->eng, i);

		if (srq && v->qps[eng_srq_slot(srq)].srq != srq)
			return refuse(rs, -EBADMSG, "SRQ %u has no device record", i);
	}
	return 0;
}

static int load_records(struct restore *rs, struct srd *r)
{
	struct vdev *v = rs->v;
	bool vhost = false, dev = false, engine = false, v2 = false;
	struct srd body;
	uint16_t type;
	int k, err;

	for (;;) {
		/* the engine's records are read by the engine, in one go */
		if (vhost && dev && !engine && r->off + 2 <= r->len &&
		    (r->p[r->off] | r->p[r->off + 1] << 8) == ENG_REC_DEV) {
			char ewhy[160];

			err = eng_dev_restore(v->eng, r, mr_of, v, ewhy, sizeof(ewhy));
			if (err)
				return refuse(rs, err, "its engine state does not read: %s", ewhy);
			engine = true;
			continue;
		}
		k = sr_rec(r, &type, &body);
		if (k <= 0)
			return refuse(rs, -EBADMSG, "its records do not read");
		switch (type) {
		case VDEV_REC_VHOST:
			err = vhost ? -EBADMSG : load_vhost(rs, &body);
			vhost = true;
			break;
		case VDEV_REC_DEV:
			err = !vhost || dev ? -EBADMSG : load_dev(rs, &body);
			dev = true;
			break;
		case VDEV_REC_V2:
			err = !dev || v2 || engine || rs->format < 2 ? -EBADMSG : load_v2(rs, &body);
			v2 = true;
			break;
		case VDEV_REC_MR:
			err = !dev || engine ? -EBADMSG : load_mr(rs, &body);
			break;
		case VDEV_REC_CQ_RING:
			err = !engine || !v2 ? -EBADMSG : load_cq_ring(rs, &body);
			break;
		case VDEV_REC_QP_RING:
			err = !engine || !v2 ? -EBADMSG : load_qp_ring(rs, &body);
			break;
		case VDEV_REC_CQ:
			err = !engine ? -EBADMSG : load_cq(rs, &body);
			break;
		case VDEV_REC_QP:
			err = !engine ? -EBADMSG : load_slot(rs, &body);
			break;
		case VDEV_REC_END:
			if (!engine || sr_done(&body) || r->off != r->len || v2 != v->ring_mode)
				return refuse(rs, -EBADMSG, "its records do not read");
			return check_complete(rs);
		default:
			err = -EBADMSG;
			break;
		}
		if (!err && sr_done(&body))
			err = -EBADMSG;
		if (err) {
			if (!rs->why[0])
				refuse(rs, err, "record %#x does not read", type);
			return err;
		}
	}
}

int vdev_restore(struct vdev *v, const uint8_t *p, size_t len, vdev_take_fd_fn take_fd,
		 void *ctx, struct vdev_state_info *info, char *why, size_t whylen)
{
	struct restore rs = { v, take_fd, ctx, why, whylen, 0 };
	struct srd r = { .p = p, .len = len };
	unsigned int i;
	int err;

	why[0] = 0;
	if (v->vu.fd >= 0)
		return refuse(&rs, -EBUSY, "the device is connected");
	memset(info, 0, sizeof(*info));
	err = check_header(&rs, &r, info);
	if (!err)
		err = take(&rs, VDEV_FD_CONN, 0, &v->vu.fd);
	if (!err)
		err = load_records(&rs, &r);
	if (err) {
		/* a fresh device, nothing of the state kept: the device's
		 * slots let go of the engine's objects, which go first */
		for (i = 0; i < v->n_cqs; i++)
			gring_free(&v->cqs[i].ring);
		for (i = 0; i < v->n_qps; i++) {
			gring_free(&v->qps[i].sq_ring);
			gring_free(&v->qps[i].rq_ring);
		}
		memset(v->cqs, 0, v->cqs_cap * sizeof(*v->cqs));
		memset(v->qps, 0, v->qps_cap * sizeof(*v->qps));
		v->n_ring_pend = 0;
		vdev_db_free_all(v);
		memset(v->pds, 0, VDEV_MAX_PD * sizeof(*v->pds));
		for (i = 0; i < v->max_mr; i++)
			if (v->mrs[i])
				v->mrs[i]->eng = NULL;
		eng_dev_clear(v->eng);
		vu_dev_disconnect(&v->vu);
		if (v->vu.fd >= 0)
			close(v->vu.fd);
		v->vu.fd = -1;
		if (vdev_device_reset(v))
			err = -ENOMEM;
		return err;
	}
	vdev_ring_restored(v);	/* what the old one left mid-way: looked at again */
	for (i = 0; i < v->vu.n_vqs; i++)	/* the worker watches its kicks again */
		if (v->vu.vqs[i].kick_fd >= 0 && v->sync.kick_changed)
			v->sync.kick_changed(v->sync.ctx, -1, v->vu.vqs[i].kick_fd);
	return 0;
}
