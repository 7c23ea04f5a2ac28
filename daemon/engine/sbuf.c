// SPDX-License-Identifier: GPL-2.0-only
/* The record writer and reader of saved state (save.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "save.h"

#define REC_HDR	6	/* type, length */

static uint8_t *room(struct sbuf *b, size_t n)
{
	if (b->err)
		return NULL;
	if (n > b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap - b->len < n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	b->len += n;
	return b->p + b->len - n;
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void sb_le(struct sbuf *b, uint64_t v, unsigned int n)
{
	uint8_t *p = room(b, n);

	if (p)
		put_le(p, v, n);
}

void sb_u8(struct sbuf *b, uint8_t v) { sb_le(b, v, 1); }
void sb_u16(struct sbuf *b, uint16_t v) { sb_le(b, v, 2); }
void sb_u32(struct sbuf *b, uint32_t v) { sb_le(b, v, 4); }
void sb_u64(struct sbuf *b, uint64_t v) { sb_le(b, v, 8); }

void sb_bytes(struct sbuf *b, const void *src, size_t n)
{
	uint8_t *p = room(b, n);

	if (p && n)
		memcpy(p, src, n);
}

size_t sb_rec_begin(struct sbuf *b, uint16_t type)
{
	size_t at = b->len;

	sb_u16(b, type);
	sb_u32(b, 0);
	return at;
}

void sb_rec_end(struct sbuf *b, size_t at)
{
	size_t n = b->len - at - REC_HDR;

	if (b->err)
		return;
	if (n > UINT32_MAX) {
		b->err = -EOVERFLOW;
		return;
	}
	put_le(b->p + at + 2, n, 4);
}

void sb_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static uint64_t sr_le(struct srd *r, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	if (r->err || n > r->len - r->off) {
		r->err = -EBADMSG;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	return v;
}

uint8_t sr_u8(struct srd *r) { return (uint8_t)sr_le(r, 1); }
uint16_t sr_u16(struct srd *r) { return (uint16_t)sr_le(r, 2); }
uint32_t sr_u32(struct srd *r) { return (uint32_t)sr_le(r, 4); }
uint64_t sr_u64(struct srd *r) { return sr_le(r, 8); }

bool sr_bool(struct srd *r)
{
	uint8_t v = sr_u8(r);

	if (v > 1)
		r->err = -EBADMSG;
	return v == 1;
}

void sr_bytes(struct srd *r, void *p, size_t n)
{
	if (r->err || n > r->len - r->off) {
		r->err = -EBADMSG;
		memset(p, 0, n);
		return;
	}
	memcpy(p, r->p + r->off, n);
	r->off += n;
}

int sr_rec(struct srd *r, uint16_t *type, struct srd *body)
{
	uint32_t len;

	if (r->err)
		return r->err;
	if (r->off == r->len)
		return 0;
	*type = sr_u16(r);
	len = sr_u32(r);
	if (r->err || len > r->len - r->off)
		return r->err = -EBADMSG;
	*body = (struct srd){ .p = r->p + r->off, .len = len };
	r->off += len;
	return 1;
}

int sr_done(const struct srd *body)
{
	return body->err ? body->err : body->off == body->len ? 0 : -EBADMSG;
}
