/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's state in bytes, for restarts that keep it (docs/restart.md):
 * a record writer and reader (little-endian, each record a 16-bit type, a
 * 32-bit length and its fields; the device adds its own records with them),
 * and the engine's records. A restore checks every field as a parser of
 * untrusted input would: whatever the bytes, it builds a device the engine
 * can run, or refuses and leaves none of it.
 */
#ifndef VRDMAD_ENGINE_SAVE_H
#define VRDMAD_ENGINE_SAVE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* A growing buffer; err is the first error (-ENOMEM), after which writes
 * do nothing. */
struct sbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

void sb_u8(struct sbuf *b, uint8_t v);
void sb_u16(struct sbuf *b, uint16_t v);
void sb_u32(struct sbuf *b, uint32_t v);
void sb_u64(struct sbuf *b, uint64_t v);
void sb_bytes(struct sbuf *b, const void *p, size_t n);
/* A record of type: its fields follow; sb_rec_end(b, at) sets its length. */
size_t sb_rec_begin(struct sbuf *b, uint16_t type);
void sb_rec_end(struct sbuf *b, size_t at);
void sb_free(struct sbuf *b);

/* A reader; err is the first error (-EBADMSG: read past the end), after
 * which reads give 0. */
struct srd {
	const uint8_t *p;
	size_t len, off;
	int err;
};

uint8_t sr_u8(struct srd *r);
uint16_t sr_u16(struct srd *r);
uint32_t sr_u32(struct srd *r);
uint64_t sr_u64(struct srd *r);
void sr_bytes(struct srd *r, void *p, size_t n);
/* A bool: 0 or 1, anything else is an error. */
bool sr_bool(struct srd *r);
/* The next record: 1 with its type and a reader of its fields, 0 at the
 * end, or -EBADMSG. */
int sr_rec(struct srd *r, uint16_t *type, struct srd *body);
/* A record read to its end: 0, or -EBADMSG (an error, or bytes left). */
int sr_done(const struct srd *body);

/* Record types: the engine's 0x01xx, the device's 0x02xx. */
enum {
	ENG_REC_DEV = 0x0101,
	ENG_REC_PD = 0x0102,
	ENG_REC_MR = 0x0103,
	ENG_REC_CQ = 0x0104,
	ENG_REC_SRQ = 0x0105,
	ENG_REC_QP = 0x0106,
	ENG_REC_MW = 0x0107,
	ENG_REC_END = 0x01ff,	/* the engine's last */
};

/* A completion as the engine saves it (the device keeps some too). */
void eng_wc_save(const struct eng_wc *wc, struct sbuf *b);
void eng_wc_load(struct eng_wc *wc, struct srd *r);

/* Append every object of dev (between polls: no frame half-built). */
void eng_dev_save(const struct eng_dev *dev, struct sbuf *b);

/* How a restored MR reaches memory: its map and mem, by its handle (the
 * caller restored its side of the MR first). 0, or an error that fails the
 * restore. */
typedef int (*eng_restore_mr_fn)(void *ctx, uint32_t handle, eng_mem_map_fn *map, void **mem);

/*
 * Rebuild the objects saved by eng_dev_save into dev, which has none yet
 * and has its limits and port MTU set as the saving one had (-ERANGE if
 * not): the engine's records up to ENG_REC_END, which r is left after.
 * Handles, keys and QPNs come back identical; timers restart with the time
 * they had left; congestion windows start again. 0, or -EBADMSG / -ERANGE /
 * -ENOMEM / mr's error with why set (the record and where in it), and then
 * dev holds no object.
 */
int eng_dev_restore(struct eng_dev *dev, struct srd *r, eng_restore_mr_fn mr, void *ctx,
		    char *why, size_t whylen);

/* Destroy every object of dev (windows, QPs, SRQs, MRs, CQs, PDs). */
void eng_dev_clear(struct eng_dev *dev);

#endif
