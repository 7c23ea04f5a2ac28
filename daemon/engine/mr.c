// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's device, protection domains and memory regions.
 *
 * Keys are 32 random bits (arc4random), fresh at each registration, their
 * upper 24 unique in the device (the key map's name), so a stale key fails
 * the lookup and a peer guessing one is right once in 2^32 tries (the IBA
 * leaves the key format to the implementation; rxe spends only 8 bits).
 * The low 8 bits of a fast-reg MR's key are the consumer's, set by each
 * REG_MR (IBA 10.6.3.6, ib_update_fast_reg_key), so the map is by key >> 8
 * and a lookup compares the whole key. Memory windows take their keys from
 * the same map (one rkey space, as IB's). Handles (the index in the table)
 * are separate and never on the wire. Every range check is written so that
 * no sum can wrap 2^64.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

#define TABLE_INITIAL 16

/* Room for ncap slots (at most max), the new ones empty. */
static int table_grow(struct eng_table *t, uint32_t ncap)
{
	void **ns;

	if (ncap > t->max)
		ncap = t->max;
	ns = realloc(t->slot, ncap * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	memset(ns + t->cap, 0, (ncap - t->cap) * sizeof(*ns));
	t->slot = ns;
	t->cap = ncap;
	return 0;
}

int eng_table_add(struct eng_table *t, void *obj, uint32_t *index)
{
	uint32_t i, n;

	if (t->used == t->max)
		return -ENOSPC;
	if (t->used == t->cap) {
		uint32_t old = t->cap;

		if (table_grow(t, t->cap ? t->cap * 2 : TABLE_INITIAL))
			return -ENOMEM;
		t->hint = old;
	}
	for (n = 0; n < t->cap; n++) {
		i = (t->hint + n) % t->cap;
		if (!t->slot[i]) {
			t->slot[i] = obj;
			t->used++;
			t->hint = i + 1;	/* spread reuse: a freed slot is not retaken at once */
			*index = i;
			return 0;
		}
	}
	return -ENOSPC;	/* unreachable: used < cap */
}

int eng_table_add_at(struct eng_table *t, void *obj, const uint32_t *want, uint32_t *index)
{
	uint32_t i = want ? *want : 0, ncap;

	if (!want)
		return eng_table_add(t, obj, index);
	if (i >= t->max)
		return -ERANGE;
	if (i >= t->cap) {
		for (ncap = t->cap ? t->cap : TABLE_INITIAL; ncap <= i; ncap *= 2)
			;
		if (table_grow(t, ncap))
			return -ENOMEM;
	}
	if (t->slot[i])
		return -EEXIST;
	t->slot[i] = obj;
	t->used++;
	*index = i;
	return 0;
}

/* An MR's or a window's key: the one restored, or a new random one. */
static int key_add(struct eng_dev *dev, struct eng_mr *k, const struct eng_name *as)
{
	uint32_t name;
	int err;

	if (as) {
		if (eng_idmap_get(&dev->mr_keys, as->key >> 8))
			return -EEXIST;
		err = eng_idmap_add(&dev->mr_keys, as->key >> 8, k);
		if (!err)
			k->key = as->key;
		return err;
	}
	err = eng_idmap_add_random(&dev->mr_keys, 0xffffff, NULL, k, &name);
	if (!err)
		k->key = name << 8 | (arc4random() & 0xff);
	return err;
}

void eng_table_del(struct eng_table *t, uint32_t index)
{
	if (index < t->cap && t->slot[index]) {
		t->slot[index] = NULL;
		t->used--;
	}
}

void eng_table_free(struct eng_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static uint32_t idmap_home(const struct eng_idmap *m, uint32_t key)
{
	uint32_t h = key * 0x9e3779b1u;

	return (h ^ h >> 16) & m->mask;
}

static int idmap_grow(struct eng_idmap *m)
{
	struct eng_idmap n = { .mask = m->mask ? m->mask * 2 + 1 : 15 };
	uint32_t i;

	n.key = calloc(n.mask + 1, sizeof(*n.key));
	n.obj = calloc(n.mask + 1, sizeof(*n.obj));
	if (!n.key || !n.obj) {
		free(n.key);
		free(n.obj);
		return -ENOMEM;
	}
	for (i = 0; m->mask && i <= m->mask; i++)
		if (m->obj[i])
			eng_idmap_add(&n, m->key[i], m->obj[i]);
	eng_idmap_free(m);
	*m = n;
	return 0;
}

int eng_idmap_add(struct eng_idmap *m, uint32_t key, void *obj)
{
	uint32_t i;
	int err;

	if ((m->used + 1) * 2 > m->mask + 1) {	/* at most half full */
		err = idmap_grow(m);
		if (err)
			return err;
	}
	for (i = idmap_home(m, key); m->obj[i]; i = (i + 1) & m->mask)
		;
	m->key[i] = key;
	m->obj[i] = obj;
	m->used++;
	return 0;
}

static int64_t idmap_find(const struct eng_idmap *m, uint32_t key)
{
	uint32_t i;

	if (!m->mask)
		return -1;
	for (i = idmap_home(m, key); m->obj[i]; i = (i + 1) & m->mask)
		if (m->key[i] == key)
			return i;
	return -1;
}

void *eng_idmap_get(const struct eng_idmap *m, uint32_t key)
{
	int64_t i = idmap_find(m, key);

	return i < 0 ? NULL : m->obj[i];
}

void eng_idmap_del(struct eng_idmap *m, uint32_t key)
{
	int64_t found = idmap_find(m, key);
	uint32_t i, j, h;

	if (found < 0)
		return;
	m->used--;
	i = (uint32_t)found;
	/* Pull back every later entry of the run whose home is not in (i, j]. */
	for (j = (i + 1) & m->mask; m->obj[j]; j = (j + 1) & m->mask) {
		h = idmap_home(m, m->key[j]);
		if (i <= j ? (h > i && h <= j) : (h > i || h <= j))
			continue;
		m->key[i] = m->key[j];
		m->obj[i] = m->obj[j];
		i = j;
	}
	m->obj[i] = NULL;
}

void eng_idmap_free(struct eng_idmap *m)
{
	free(m->key);
	free(m->obj);
	memset(m, 0, sizeof(*m));
}

int eng_idmap_add_random(struct eng_idmap *m, uint32_t mask, bool (*bad)(uint32_t), void *obj,
			 uint32_t *name)
{
	uint32_t x;
	int err;

	do
		x = arc4random() & mask;
	while ((bad && bad(x)) || eng_idmap_get(m, x));
	err = eng_idmap_add(m, x, obj);
	if (!err)
		*name = x;
	return err;
}

struct eng_dev *eng_dev_new(const struct eng_ops *ops, void *ctx, const struct eng_tx *tx)
{
	struct eng_dev *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	dev->ops = ops;
	dev->ctx = ctx;
	dev->tx = *tx;
	dev->pds.max = ENG_MAX_PD;
	dev->mrs.max = ENG_MAX_MR;
	dev->mws.max = ENG_MAX_MR;
	dev->cqs.max = ENG_MAX_QP;
	dev->qps.max = ENG_MAX_QP;
	dev->srqs.max = ENG_MAX_QP - 1;
	dev->cc.ecn = true;
	dev->cc.cnp_interval_ns = ENG_CC_DEFAULT_CNP_INTERVAL_NS;
	return dev;
}

/* Objects still alive are the caller's leak; the tables go in any case. */
void eng_dev_free(struct eng_dev *dev)
{
	if (!dev)
		return;
	eng_table_free(&dev->pds);
	eng_table_free(&dev->mrs);
	eng_table_free(&dev->mws);
	eng_table_free(&dev->cqs);
	eng_table_free(&dev->qps);
	eng_table_free(&dev->srqs);
	eng_idmap_free(&dev->mr_keys);
	eng_idmap_free(&dev->qpns);
	eng_cc_free(dev);
	free(dev);
}

int eng_pd_alloc_as(struct eng_dev *dev, const struct eng_name *as, struct eng_pd **out)
{
	struct eng_pd *pd = calloc(1, sizeof(*pd));
	int err;

	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	err = eng_table_add_at(&dev->pds, pd, as ? &as->index : NULL, &pd->index);
	if (err) {
		free(pd);
		return err;
	}
	*out = pd;
	return 0;
}

int eng_pd_alloc(struct eng_dev *dev, struct eng_pd **out)
{
	return eng_pd_alloc_as(dev, NULL, out);
}

int eng_pd_free(struct eng_pd *pd)
{
	if (pd->users)
		return -EBUSY;
	eng_table_del(&pd->dev->pds, pd->index);
	free(pd);
	return 0;
}

uint32_t eng_pd_handle(const struct eng_pd *pd)
{
	return pd->index;
}

int eng_mr_new_as(struct eng_pd *pd, uint64_t iova, uint64_t length, unsigned int access,
		  eng_mem_map_fn map, void *mem, bool fast, const struct eng_name *as,
		  struct eng_mr **out)
{
	struct eng_mr *mr;
	int err;

	/* The last byte must be addressable: iova + length may reach 2^64
	 * exactly, never beyond. */
	if (access & ~ENG_ACCESS_MR_ALL || !map || (length && length - 1 > UINT64_MAX - iova))
		return -EINVAL;
	/* IBA 10.6.3.1: remote write or atomic needs local write. */
	if ((access & (ENG_ACCESS_REMOTE_WRITE | ENG_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & ENG_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	err = key_add(pd->dev, mr, as);
	if (err)
		goto free_mr;
	err = eng_table_add_at(&pd->dev->mrs, mr, as ? &as->index : NULL, &mr->index);
	if (err)
		goto del_key;
	mr->fast = fast;
	mr->valid = !fast;
	mr->pd = pd;
	mr->iova = iova;
	mr->length = length;
	mr->access = access;
	mr->map = map;
	mr->mem = mem;
	pd->users++;
	*out = mr;
	return 0;

del_key:
	eng_idmap_del(&pd->dev->mr_keys, mr->key >> 8);
free_mr:
	free(mr);
	return err;
}

int eng_mr_reg(struct eng_pd *pd, uint64_t iova, uint64_t length, unsigned int access,
	       eng_mem_map_fn map, void *mem, struct eng_mr **out)
{
	return eng_mr_new_as(pd, iova, length, access, map, mem, false, NULL, out);
}

int eng_mr_alloc_fast(struct eng_pd *pd, eng_mem_map_fn map, void *mem, struct eng_mr **out)
{
	return eng_mr_new_as(pd, 0, 0, 0, map, mem, true, NULL, out);
}

/* IBA 10.6.3.6 / rxe_reg_fast_mr: a FREE fast-reg MR of the QP's PD, a key
 * whose upper 24 bits are the MR's; it becomes VALID with the range
 * MAP_MR_SG gave it last. */
enum eng_wc_status eng_mr_reg_fast(struct eng_qp *qp, const struct eng_send_wr *wr)
{
	struct eng_mr *mr = eng_table_get(&qp->dev->mrs, wr->reg.mrn);
	unsigned int access = wr->reg.access;

	if (!mr || !mr->fast || mr->valid || mr->pd != qp->pd ||
	    (mr->key ^ wr->reg.key) >> 8 || access & ~ENG_ACCESS_MR_ALL ||
	    ((access & (ENG_ACCESS_REMOTE_WRITE | ENG_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & ENG_ACCESS_LOCAL_WRITE))) {
		eng_count(qp, ENG_CNT_ERR_REG_MR);
		return ENG_WC_LOC_QP_OP_ERR;	/* as rxe */
	}
	mr->key = wr->reg.key;
	mr->access = access;
	mr->valid = true;
	return ENG_WC_SUCCESS;
}

/* [addr, addr + len) inside [iova, iova + length), no sum wrapping 2^64. */
static bool in_range(uint64_t iova, uint64_t length, uint64_t addr, uint64_t len)
{
	return addr >= iova && addr - iova <= length && len <= length - (addr - iova);
}

static struct eng_mw *to_mw(struct eng_mr *k)
{
	return (struct eng_mw *)k;	/* k is the window's first member */
}

/* A bound window becomes FREE: no QP, no MR, no range, no rights. */
static void mw_unbind(struct eng_mw *mw)
{
	if (!mw->k.valid)
		return;
	mw->mr->windows--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->k.valid = false;
	mw->k.iova = mw->k.length = 0;
	mw->k.access = 0;
}

/* IBA 10.7.2.1, 10.7.2.2 / rxe_invalidate_mr, rxe_invalidate_mw: the exact
 * key of a VALID fast-reg MR of the QP's PD, with no window bound to it
 * (IBA 10.6.7.2.6), or of a bound window of that PD becomes FREE; every
 * later access through it fails. A type 2B window is invalidated remotely
 * only through the QP it is bound to, as it is only accessed through it. */
enum eng_wc_status eng_mr_invalidate(struct eng_qp *qp, uint32_t key, bool remote)
{
	struct eng_mr *mr = eng_idmap_get(&qp->dev->mr_keys, key >> 8);

	if (!mr || mr->key != key || !mr->valid || mr->pd != qp->pd)
		return ENG_WC_LOC_QP_OP_ERR;
	if (mr->window) {
		if (remote && to_mw(mr)->qp != qp)
			return ENG_WC_LOC_QP_OP_ERR;
		mw_unbind(to_mw(mr));
		return ENG_WC_SUCCESS;
	}
	if (!mr->fast || mr->windows)
		return ENG_WC_LOC_QP_OP_ERR;
	mr->valid = false;
	return ENG_WC_SUCCESS;
}

/* BIND_MW (IBA 10.6.7.2.2, checks as rxe_check_bind_mw): a FREE type 2
 * window of the QP's PD (o10-37.2.30, C10-72), the new key differing in its
 * low 8 bits at most, a non-empty range (o10-37.2.40) inside a VALID MR of
 * that PD which allows binding (C10-73, C10-75), remote write or atomic
 * rights only over an MR with local write (C10-74), remote rights only (no
 * zero-based windows). Bound, the window is reached through qp alone. */
enum eng_wc_status eng_mw_bind(struct eng_qp *qp, const struct eng_send_wr *wr)
{
	struct eng_mr *k = eng_idmap_get(&qp->dev->mr_keys, wr->bind.mw_rkey >> 8);
	struct eng_mr *mr = eng_idmap_get(&qp->dev->mr_keys, wr->bind.mr_lkey >> 8);
	unsigned int access = wr->bind.access;
	struct eng_mw *mw;

	if (!k || k->key != wr->bind.mw_rkey || !k->window || k->valid || k->pd != qp->pd ||
	    (k->key ^ wr->bind.rkey) >> 8 || !wr->bind.length || access & ~ENG_ACCESS_ALL ||
	    access & ENG_ACCESS_LOCAL_WRITE)
		goto refuse;
	if (!mr || mr->key != wr->bind.mr_lkey || mr->window || !mr->valid || mr->pd != qp->pd ||
	    !(mr->access & ENG_ACCESS_MW_BIND) ||
	    ((access & (ENG_ACCESS_REMOTE_WRITE | ENG_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & ENG_ACCESS_LOCAL_WRITE)) ||
	    !in_range(mr->iova, mr->length, wr->bind.addr, wr->bind.length))
		goto refuse;
	mw = to_mw(k);
	k->key = wr->bind.rkey;
	k->iova = wr->bind.addr;
	k->length = wr->bind.length;
	k->access = access;
	k->valid = true;
	mw->mr = mr;
	mw->qp = qp;
	mr->windows++;
	return ENG_WC_SUCCESS;

refuse:
	eng_count(qp, ENG_CNT_ERR_BIND_MW);
	return ENG_WC_MW_BIND_ERR;	/* as rxe */
}

int eng_mw_alloc_as(struct eng_pd *pd, const struct eng_name *as, struct eng_mw **out)
{
	struct eng_mw *mw = calloc(1, sizeof(*mw));
	int err;

	if (!mw)
		return -ENOMEM;
	err = eng_table_add_at(&pd->dev->mws, mw, as ? &as->index : NULL, &mw->k.index);
	if (err)
		goto free_mw;
	err = key_add(pd->dev, &mw->k, as);
	if (err)
		goto del_index;
	mw->k.window = true;
	mw->k.pd = pd;		/* FREE: valid false, no range, no rights */
	pd->users++;
	*out = mw;
	return 0;

del_index:
	eng_table_del(&pd->dev->mws, mw->k.index);
free_mw:
	free(mw);
	return err;
}

int eng_mw_alloc(struct eng_pd *pd, struct eng_mw **out)
{
	return eng_mw_alloc_as(pd, NULL, out);
}

int eng_mw_dealloc(struct eng_mw *mw)
{
	struct eng_dev *dev = mw->k.pd->dev;

	mw_unbind(mw);	/* IBA 10.6.7.2.5: dealloc invalidates */
	eng_idmap_del(&dev->mr_keys, mw->k.key >> 8);
	eng_table_del(&dev->mws, mw->k.index);
	mw->k.pd->users--;
	free(mw);
	return 0;
}

void eng_mw_qp_gone(struct eng_qp *qp)
{
	uint32_t i;

	for (i = 0; i < qp->dev->mws.cap; i++) {
		struct eng_mw *mw = qp->dev->mws.slot[i];

		if (mw && mw->qp == qp)
			mw_unbind(mw);
	}
}

struct eng_pd *eng_pd_get(const struct eng_dev *dev, uint32_t handle)
{
	return eng_table_get(&dev->pds, handle);
}

struct eng_mr *eng_mr_get(const struct eng_dev *dev, uint32_t handle)
{
	return eng_table_get(&dev->mrs, handle);
}

struct eng_mw *eng_mw_get(const struct eng_dev *dev, uint32_t handle)
{
	return eng_table_get(&dev->mws, handle);
}

uint32_t eng_mw_handle(const struct eng_mw *mw)
{
	return mw->k.index;
}

uint32_t eng_mw_rkey(const struct eng_mw *mw)
{
	return mw->k.key;
}

int eng_mr_rerange(struct eng_mr *mr, uint64_t iova, uint64_t length)
{
	if (length && length - 1 > UINT64_MAX - iova)
		return -EINVAL;
	mr->iova = iova;
	mr->length = length;
	return 0;
}

void eng_dev_set_limits(struct eng_dev *dev, uint32_t max_pd, uint32_t max_mr, uint32_t max_cq,
			uint32_t max_qp)
{
	dev->pds.max = max_pd < ENG_MAX_PD ? max_pd : ENG_MAX_PD;
	dev->mrs.max = max_mr < ENG_MAX_MR ? max_mr : ENG_MAX_MR;
	dev->mws.max = dev->mrs.max;	/* as many windows as MRs, each counted apart */
	dev->cqs.max = max_cq < ENG_MAX_QP ? max_cq : ENG_MAX_QP;
	dev->qps.max = max_qp < ENG_MAX_QP ? max_qp : ENG_MAX_QP;
	/* Each holds a QP slot too, and is of use only with a QP beside it. */
	dev->srqs.max = dev->qps.max ? dev->qps.max - 1 : 0;
}

int eng_mr_dereg(struct eng_mr *mr)
{
	if (mr->windows)	/* IBA 10.6.7.2.6, as rxe */
		return -EBUSY;
	eng_idmap_del(&mr->pd->dev->mr_keys, mr->key >> 8);
	eng_table_del(&mr->pd->dev->mrs, mr->index);
	mr->pd->users--;
	free(mr);
	return 0;
}

uint32_t eng_mr_handle(const struct eng_mr *mr)
{
	return mr->index;
}

uint32_t eng_mr_lkey(const struct eng_mr *mr)
{
	return mr->key;
}

uint32_t eng_mr_rkey(const struct eng_mr *mr)
{
	return mr->key;
}

enum eng_mem_err eng_mr_check(struct eng_dev *dev, const struct eng_pd *pd, uint32_t key,
			      bool remote, uint64_t addr, uint64_t len, unsigned int access,
			      struct eng_mr **out)
{
	struct eng_mr *mr = eng_idmap_get(&dev->mr_keys, key >> 8);

	(void)remote;	/* lkey == rkey: the access flags tell local from remote use */
	if (!mr || mr->key != key || mr->window)	/* a window's key is no lkey */
		return ENG_MEM_BAD_KEY;
	if (!mr->valid)
		return ENG_MEM_INVALID;
	if (mr->pd != pd)
		return ENG_MEM_BAD_PD;
	if ((mr->access & access) != access)
		return ENG_MEM_BAD_ACCESS;
	if (!in_range(mr->iova, mr->length, addr, len))
		return ENG_MEM_BAD_RANGE;
	*out = mr;
	return ENG_MEM_OK;
}

/* A window's rights and range, then the MR underneath as it is now (its
 * range may have moved with MAP_MR_SG), whose own remote rights do not
 * matter: the window grants them (IBA 10.6.7.1). */
enum eng_mem_err eng_rkey_check(struct eng_qp *qp, uint32_t key, uint64_t addr, uint64_t len,
				unsigned int access, struct eng_mr **out)
{
	struct eng_mr *k = eng_idmap_get(&qp->dev->mr_keys, key >> 8);
	struct eng_mw *mw;

	if (!k || k->key != key)
		return ENG_MEM_BAD_KEY;
	if (!k->window)
		return eng_mr_check(qp->dev, qp->pd, key, true, addr, len, access, out);
	mw = to_mw(k);
	if (!k->valid)
		return ENG_MEM_INVALID;
	if (k->pd != qp->pd)
		return ENG_MEM_BAD_PD;
	if (mw->qp != qp)
		return ENG_MEM_BAD_QP;
	if ((k->access & access) != access)
		return ENG_MEM_BAD_ACCESS;
	if (!in_range(k->iova, k->length, addr, len))
		return ENG_MEM_BAD_RANGE;
	return eng_mr_check(qp->dev, qp->pd, mw->mr->key, true, addr, len, 0, out);
}

/* Walk [addr, addr + len) of an MR in host-contiguous pieces. */
static enum eng_mem_err mr_walk(const struct eng_mr *mr, uint64_t addr, uint8_t *host,
				const uint8_t *src, uint64_t len)
{
	uint64_t off = addr - mr->iova, contig;
	uint8_t *p;

	while (len) {
		contig = 0;
		p = mr->map(mr->mem, off, len, &contig);
		if (!p || !contig)
			return ENG_MEM_UNMAPPED;
		if (contig > len)
			contig = len;
		if (src) {
			memcpy(p, src, contig);
			src += contig;
		} else {
			memcpy(host, p, contig);
			host += contig;
		}
		off += contig;
		len -= contig;
	}
	return ENG_MEM_OK;
}

enum eng_mem_err eng_mr_copy_out(const struct eng_mr *mr, uint64_t addr, void *dst, uint64_t len)
{
	return mr_walk(mr, addr, dst, NULL, len);
}

enum eng_mem_err eng_mr_copy_in(const struct eng_mr *mr, uint64_t addr, const void *src,
				uint64_t len)
{
	return mr_walk(mr, addr, NULL, src, len);
}

/* The word is one host-contiguous, aligned 8 bytes: the MR's pages are
 * 4 KiB-aligned and addr is 8-byte aligned in its iova space. A locked
 * instruction makes each operation atomic against every other this device
 * runs on that memory, from any worker thread (IBA 9.4.5, ATOMIC_HCA).
 * The value is in host order, as the guest's CPU keeps it. */
enum eng_mem_err eng_mr_atomic(const struct eng_mr *mr, uint64_t addr, bool cmp_swap,
			       uint64_t swap_add, uint64_t compare, uint64_t *orig)
{
	uint64_t contig = 0, *p = mr->map(mr->mem, addr - mr->iova, 8, &contig);

	if (!p || contig < 8 || ((uintptr_t)p & 7))
		return ENG_MEM_UNMAPPED;
	if (cmp_swap) {
		*orig = compare;
		/* on failure *orig gets the current value: the original either way */
		__atomic_compare_exchange_n(p, orig, swap_add, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		*orig = __atomic_fetch_add(p, swap_add, __ATOMIC_SEQ_CST);
	}
	return ENG_MEM_OK;
}
