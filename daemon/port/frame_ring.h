/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A single-producer single-consumer ring of variable-length frames, for
 * handing frames between workers without locks (a frame received by one
 * worker for a QP another owns; a frame to send on a queue another owns;
 * loopback between two VMs). Records are 8-byte aligned and never wrap: a
 * padding record fills the end of the buffer when needed.
 */
#ifndef VRDMAD_FRAME_RING_H
#define VRDMAD_FRAME_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct frame_rec {
	uint32_t len;		/* FRAME_PAD: skip to the start of the buffer */
	uint16_t kind;
	uint16_t vm;		/* for FRAME_RX */
	uint8_t data[];
};

#define FRAME_PAD	0xffffffffu
/* FRAME_RX: a frame for VM vm (looped back: built here, never parsed);
 * FRAME_RX_PARSED: one the sending worker received and parsed, its struct
 * roce_pkt first, then the frame; FRAME_TX: for the receiver's NIC queue. */
enum frame_kind { FRAME_RX, FRAME_TX, FRAME_RX_PARSED };

struct frame_ring {
	_Atomic uint64_t head;		/* bytes produced */
	char pad0[56];
	_Atomic uint64_t tail;		/* bytes consumed */
	char pad1[56];
	uint64_t size;			/* power of two */
	uint8_t *buf;
};

static inline int frame_ring_init(struct frame_ring *r, uint64_t size)
{
	memset(r, 0, sizeof(*r));
	r->buf = malloc(size);
	if (!r->buf)
		return -1;
	r->size = size;
	return 0;
}

static inline void frame_ring_free(struct frame_ring *r)
{
	free(r->buf);
	r->buf = NULL;
}

static inline uint64_t frame_rec_size(uint32_t len)
{
	return (sizeof(struct frame_rec) + len + 7) & ~7ull;
}

/* Reserve room for a frame of len bytes: the record to fill, or NULL if the
 * ring is full. frame_ring_commit() publishes it. */
static inline struct frame_rec *frame_ring_reserve(struct frame_ring *r, uint32_t len,
						   uint64_t *next_head)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t need = frame_rec_size(len), pos = head & (r->size - 1), pad = 0;

	if (need > r->size / 2)
		return NULL;
	if (pos + need > r->size)
		pad = r->size - pos;
	if (r->size - (head - tail) < pad + need)
		return NULL;
	if (pad) {
		((struct frame_rec *)(r->buf + pos))->len = FRAME_PAD;
		head += pad;
		pos = 0;
	}
	*next_head = head + need;
	return (struct frame_rec *)(r->buf + pos);
}

static inline void frame_ring_commit(struct frame_ring *r, uint64_t next_head)
{
	atomic_store_explicit(&r->head, next_head, memory_order_release);
}

/* The oldest record, or NULL. frame_ring_release() frees it. */
static inline struct frame_rec *frame_ring_peek(struct frame_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	struct frame_rec *rec;

	if (tail == head)
		return NULL;
	rec = (struct frame_rec *)(r->buf + (tail & (r->size - 1)));
	if (rec->len == FRAME_PAD) {
		tail += r->size - (tail & (r->size - 1));
		atomic_store_explicit(&r->tail, tail, memory_order_release);
		if (tail == head)
			return NULL;
		rec = (struct frame_rec *)(r->buf + (tail & (r->size - 1)));
	}
	return rec;
}

static inline void frame_ring_release(struct frame_ring *r, const struct frame_rec *rec)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	atomic_store_explicit(&r->tail, tail + frame_rec_size(rec->len), memory_order_release);
}

static inline bool frame_ring_empty(struct frame_ring *r)
{
	return atomic_load_explicit(&r->tail, memory_order_relaxed) ==
	       atomic_load_explicit(&r->head, memory_order_acquire);
}

#endif
