/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Two transport engines joined by an in-memory wire, as test_transport (a
 * wire that loses, duplicates, reorders and corrupts) and engine_bench (a
 * lossless one that must cost nothing) run them. A side is one device with
 * one PD, CQ and QP and an MR over flat memory; the frames on their way
 * from it are its user's (struct side_wire).
 */
#ifndef TESTS_ENG_PAIR_H
#define TESTS_ENG_PAIR_H

#include <stdint.h>

#include "engine.h"
#include "save.h"

#define SIDE_IOVA	0x10000000ull	/* where a side's MR starts */

/* Memory an MR reaches a page at a time, so copies cross pages: the ctx of
 * flat_mem_map, an eng_mem_map_fn. */
struct flat_mem {
	uint8_t *base;
	uint64_t size;
};

void *flat_mem_map(void *ctx, uint64_t off, uint64_t len, uint64_t *contig);

struct side_wire;

struct side {
	struct eng_dev *dev;
	struct eng_pd *pd;
	struct eng_cq *cq;
	struct eng_qp *qp;
	struct eng_mr *mr;
	uint8_t *mem;
	struct flat_mem flat;		/* mem, as its MR reaches it */
	uint8_t gid[16], mac[6];	/* ::ffff:10.0.0.ID, 52:00:00:00:00:ID */
	struct side *peer;
	struct side_wire *wire;		/* frames on their way to peer */
	const struct eng_ops *ops;	/* its engine's, for side_restore */
	struct eng_tx tx;
};

/* Side id (1, 2, ...) with mem_size bytes of memory, its engine calling ops
 * and tx (whose ctx is ignored) with s as ctx; init's CQs are set here. 0,
 * or the error of the call that failed, named in *what. */
int side_open(struct side *s, uint8_t id, const struct eng_ops *ops, const struct eng_tx *tx,
	      struct eng_qp_init_attr *init, uint32_t cq_depth, uint64_t mem_size,
	      const char **what);
/* RESET -> INIT -> RTR -> RTS, connected to s->peer (retry_cnt and
 * rnr_retry are set on the way to RTS, IBA 10.3: not later). 0, or the
 * error of the step that failed, named in *what. */
int side_connect(struct side *s, enum eng_qp_type type, enum eng_mtu mtu, uint32_t sq_psn,
		 uint32_t rq_psn, uint8_t retry_cnt, uint8_t rnr_retry, const char **what);
/* A restart of s's engine that keeps its state: saved into first (empty),
 * restored into a new engine (its MRs on s's flat memory, or as mr says if
 * not NULL), which then replaces the old one; saved again into again (empty)
 * for the caller to compare. pd, cq, qp and mr follow by their handles. 0,
 * or the restore's error, and then s is as it was. */
int side_restore(struct side *s, struct sbuf *first, struct sbuf *again, eng_restore_mr_fn mr,
		 void *ctx);
/* Undo side_open: 0, or the first error (the rest is freed regardless). */
int side_close(struct side *s);
/* eng_ops.gid: index 0 is the side's address. */
int side_gid(void *ctx, uint8_t index, uint8_t gid[16], uint8_t mac[6]);
/* A frame for s, parsed as the daemon's receive path does, then eng_rx:
 * 0, or roce_parse's error with *why. */
int side_rx(struct side *s, uint8_t *frame, uint32_t len, enum roce_drop *why);

#endif
