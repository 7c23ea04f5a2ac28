// SPDX-License-Identifier: GPL-2.0-only
/*
 * codec_bench: the RoCEv2 codec's per-frame cost, run by `make bench`.
 *
 *   parse and build of an IPv4 RC SEND_ONLY with 64 B and 4096 B payloads
 *   (build into a 9 KiB buffer), ns per frame;
 *   ICRC throughput, ISA-L crc32_gzip_refl against zlib crc32, 64/1024/4096 B;
 *   at 4096 B: copy alone, copy then CRC, CRC then copy (is a fused
 *   copy-and-CRC worth writing?).
 *
 * Each measurement repeats its work for about 0.3 s (CLOCK_MONOTONIC) and
 * folds every result into a volatile sink, so nothing is optimized away. A
 * benchmark, not a test: no thresholds; it exits non-zero only if ISA-L and
 * zlib disagree or the codec fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/crc.h>
#include <zlib.h>

#include "codec.h"

#define RUN_NS		300e6	/* per measurement */
#define FRAME_ROOM	9216

static volatile uint64_t sink;

/* Tell the compiler memory behind p is read and written here. */
static inline void escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

typedef uint64_t (*work_fn)(void *ctx, uint64_t iters);

/* ns per iteration of fn, over about RUN_NS, after a warm-up. */
static double measure(work_fn fn, void *ctx)
{
	uint64_t batch = 64, done = 0;
	double t0, t, spent = 0;

	sink += fn(ctx, batch);	/* warm-up: caches, branch predictors, page faults */
	t0 = now_ns();
	while (spent < RUN_NS) {
		sink += fn(ctx, batch);
		done += batch;
		t = now_ns();
		spent = t - t0;
		if (spent < RUN_NS / 30)	/* grow batches until they take ~10 ms */
			batch *= 2;
	}
	return spent / (double)done;
}

/* ---- codec ---- */

struct codec_ctx {
	struct roce_addr a;
	struct roce_hdrs h;
	uint8_t *frame, *out, *payload;
	uint32_t frame_len, plen;
};

static uint64_t work_parse(void *p, uint64_t iters)
{
	struct codec_ctx *c = p;
	struct roce_frag f = { c->frame, c->frame_len };
	struct roce_pkt pkt;
	enum roce_drop why;
	uint64_t acc = 0;

	while (iters--) {
		escape(c->frame);
		if (roce_parse(&pkt, &f, 1, &why))
			abort();
		acc += pkt.icrc + pkt.payload_len;
	}
	return acc;
}

static uint64_t work_build(void *p, uint64_t iters)
{
	struct codec_ctx *c = p;
	struct roce_frag out = { c->out, FRAME_ROOM }, pay = { c->payload, c->plen };
	unsigned int nused;
	uint64_t acc = 0;
	int len;

	while (iters--) {
		c->h.psn = (c->h.psn + 1) & ROCE_PSN_MASK;	/* a new frame each time */
		escape(c->payload);
		len = roce_build(&out, 1, &nused, &c->a, &c->h, &pay, 1);
		if (len < 0)
			abort();
		escape(c->out);
		acc += (uint64_t)len + c->out[len - 1];
	}
	return acc;
}

static void codec_setup(struct codec_ctx *c, uint32_t plen)
{
	struct roce_frag out, pay;
	unsigned int nused, i;
	int len;

	memset(c, 0, sizeof(*c));
	memcpy(c->a.dmac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(c->a.smac, "\x02\x00\x00\x00\x00\x01", 6);
	c->a.vlan = -1;
	roce_gid_from_v4(c->a.sgid, "\x0a\x00\x00\x01");
	roce_gid_from_v4(c->a.dgid, "\x0a\x00\x00\x02");
	c->a.sport = 49152;
	c->a.hop_limit = 64;
	c->h.opcode = ROCE_RC_SEND_ONLY;
	c->h.pkey = 0xffff;
	c->h.dqpn = 0x11;
	c->h.ackreq = true;
	c->plen = plen;
	c->payload = malloc(plen);
	c->out = malloc(FRAME_ROOM);
	c->frame = malloc(FRAME_ROOM);
	if (!c->payload || !c->out || !c->frame)
		abort();
	for (i = 0; i < plen; i++)
		c->payload[i] = (uint8_t)(i * 31 + 7);
	out = (struct roce_frag){ c->frame, FRAME_ROOM };
	pay = (struct roce_frag){ c->payload, plen };
	len = roce_build(&out, 1, &nused, &c->a, &c->h, &pay, 1);
	if (len < 0)
		abort();
	c->frame_len = (uint32_t)len;
}

static void codec_free(struct codec_ctx *c)
{
	free(c->payload);
	free(c->out);
	free(c->frame);
}

/* ---- CRC and copy ---- */

struct buf_ctx {
	uint8_t *src, *dst;
	size_t len;
};

static uint64_t work_isal(void *p, uint64_t iters)
{
	struct buf_ctx *b = p;
	uint32_t crc = 0;

	while (iters--) {
		escape(b->src);
		crc = crc32_gzip_refl(crc, b->src, b->len);	/* chained: no overlap */
	}
	return crc;
}

static uint64_t work_zlib(void *p, uint64_t iters)
{
	struct buf_ctx *b = p;
	uLong crc = 0;

	while (iters--) {
		escape(b->src);
		crc = crc32(crc, b->src, (uInt)b->len);
	}
	return crc;
}

static uint64_t work_copy(void *p, uint64_t iters)
{
	struct buf_ctx *b = p;

	while (iters--) {
		escape(b->src);
		memcpy(b->dst, b->src, b->len);
		escape(b->dst);
	}
	return b->dst[b->len - 1];
}

static uint64_t work_copy_crc(void *p, uint64_t iters)
{
	struct buf_ctx *b = p;
	uint32_t crc = 0;

	while (iters--) {
		escape(b->src);
		memcpy(b->dst, b->src, b->len);
		escape(b->dst);
		crc = crc32_gzip_refl(crc, b->dst, b->len);
	}
	return crc;
}

static uint64_t work_crc_copy(void *p, uint64_t iters)
{
	struct buf_ctx *b = p;
	uint32_t crc = 0;

	while (iters--) {
		escape(b->src);
		crc = crc32_gzip_refl(crc, b->src, b->len);
		memcpy(b->dst, b->src, b->len);
		escape(b->dst);
	}
	return crc;
}

int main(void)
{
	static const uint32_t codec_sizes[] = { 64, 4096 };
	static const size_t crc_sizes[] = { 64, 1024, 4096 };
	double parse_ns[2], build_ns[2], isal[3], zl[3], copy, copy_crc, crc_copy, crc_only;
	struct codec_ctx c;
	struct buf_ctx b;
	unsigned int i;
	int bad = 0;

	for (i = 0; i < 2; i++) {
		codec_setup(&c, codec_sizes[i]);
		parse_ns[i] = measure(work_parse, &c);
		build_ns[i] = measure(work_build, &c);
		codec_free(&c);
	}

	b.src = malloc(8192);
	b.dst = malloc(8192);
	if (!b.src || !b.dst)
		abort();
	for (i = 0; i < 8192; i++)
		b.src[i] = (uint8_t)(i * 131 + (i >> 8));
	for (i = 0; i < 3; i++) {
		b.len = crc_sizes[i];
		if (crc32_gzip_refl(0, b.src, b.len) != crc32(0, b.src, (uInt)b.len) ||
		    crc32_gzip_refl(0x12345678, b.src, b.len) !=
		    crc32(0x12345678, b.src, (uInt)b.len)) {
			fprintf(stderr, "codec_bench: ISA-L and zlib CRC-32 disagree at %zu B\n",
				b.len);
			bad = 1;
		}
		isal[i] = measure(work_isal, &b);
		zl[i] = measure(work_zlib, &b);
	}
	b.len = 4096;
	crc_only = isal[2];
	copy = measure(work_copy, &b);
	copy_crc = measure(work_copy_crc, &b);
	crc_copy = measure(work_crc_copy, &b);
	free(b.src);
	free(b.dst);

	printf("codec_bench: IPv4 RC SEND_ONLY, %.1f s per measurement\n\n", RUN_NS / 1e9);
	printf("%-28s %10s %10s\n", "codec", "64 B", "4096 B");
	printf("%-28s %10.1f %10.1f\n", "parse (ns/frame)", parse_ns[0], parse_ns[1]);
	printf("%-28s %10.1f %10.1f\n", "build (ns/frame)", build_ns[0], build_ns[1]);
	printf("\n%-28s %10s %10s %10s\n", "CRC-32 (GB/s)", "64 B", "1024 B", "4096 B");
	printf("%-28s %10.2f %10.2f %10.2f\n", "ISA-L crc32_gzip_refl", 64 / isal[0],
	       1024 / isal[1], 4096 / isal[2]);
	printf("%-28s %10.2f %10.2f %10.2f\n", "zlib crc32", 64 / zl[0], 1024 / zl[1],
	       4096 / zl[2]);
	printf("%-28s %10.1f %10.1f %10.1f\n", "ISA-L / zlib", zl[0] / isal[0], zl[1] / isal[1],
	       zl[2] / isal[2]);
	printf("\n%-28s %10s %10s\n", "4096 B (ISA-L CRC)", "ns", "GB/s");
	printf("%-28s %10.1f %10.2f\n", "CRC alone", crc_only, 4096 / crc_only);
	printf("%-28s %10.1f %10.2f\n", "copy alone", copy, 4096 / copy);
	printf("%-28s %10.1f %10.2f\n", "copy then CRC", copy_crc, 4096 / copy_crc);
	printf("%-28s %10.1f %10.2f\n", "CRC then copy", crc_copy, 4096 / crc_copy);
	/* Separate passes cost the sum; one fused pass could at best cost the
	 * slower of the two (L1-hot buffers here: an upper bound on the gain). */
	printf("(copy then CRC = %.0f%% of CRC + copy; a fused pass could at best take\n"
	       " max(CRC, copy) = %.0f ns, saving up to %.0f%%)\n\n",
	       100 * copy_crc / (crc_only + copy), crc_only > copy ? crc_only : copy,
	       100 * (1 - (crc_only > copy ? crc_only : copy) / copy_crc));

	for (i = 0; i < 2; i++) {
		printf("bench: codec_parse_%uB_ns=%.0f\n", codec_sizes[i], parse_ns[i]);
		printf("bench: codec_build_%uB_ns=%.0f\n", codec_sizes[i], build_ns[i]);
	}
	for (i = 0; i < 3; i++) {
		printf("bench: icrc_isal_%zuB_GBps=%.2f\n", crc_sizes[i], (double)crc_sizes[i] / isal[i]);
		printf("bench: icrc_zlib_%zuB_GBps=%.2f\n", crc_sizes[i], (double)crc_sizes[i] / zl[i]);
	}
	printf("bench: copy_4096B_ns=%.0f\n", copy);
	printf("bench: copy_then_crc_4096B_ns=%.0f\n", copy_crc);
	printf("bench: crc_then_copy_4096B_ns=%.0f\n", crc_copy);
	printf("bench: icrc_isal_zlib_agree=%s\n", bad ? "no" : "yes");
	return bad;
}
