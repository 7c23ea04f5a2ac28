// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the RoCEv2 codec: daemon/roce/codec.c (build, parse, drop
 * reasons), daemon/roce/icrc.c, daemon/roce/opcode.c and the wire accessors in
 * include/roce_wire.h. Every test is deterministic (fixed-seed xorshift).
 *
 *  1. golden frames (tests/vectors/roce-frames.txt): every field against
 *     values decoded by hand from the hex, the ICRC against an independent
 *     bit-by-bit CRC-32, and a byte-identical rebuild with roce_build;
 *  2. every single-byte flip outside the ICRC-masked fields is detected;
 *     flips inside them are not (they parse, with the new values), and a
 *     flipped stored ICRC is ROCE_DROP_ICRC;
 *  3. build/parse round trip for every opcode in the table x {IPv4, IPv6} x
 *     {untagged, VLAN} x payload sizes, checked field by field and against
 *     the wire layout; payload on an opcode without one is -EINVAL;
 *  4. multi-buffer build and parse (splits inside the ICRC, empty buffers),
 *     roce_pkt_copy_payload across buffers and out of range, build errors;
 *  5. one numbered, table-driven case per drop reason (and more), Ethernet
 *     padding, IPv4 options, roce_drop_name;
 *  6. the opcode table against a hand-written copy of IBA table 38, plus its
 *     invariants (flags, segment combos, lengths, offsets, count);
 *  7. the byte-order and BTH/ETH accessors at unaligned addresses and at
 *     their extremes.
 *
 * Parsed frames always sit in exactly-sized heap buffers, and buffers given
 * to roce_build are exactly as large as their .len, so ASan sees any access
 * beyond them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addr.h"
#include "codec.h"
#include "icrc.h"
#include "opcode.h"
#include "rng.h"
#include "roce_wire.h"

#ifndef VRDMA_VECTORS
#define VRDMA_VECTORS "tests/vectors/roce-frames.txt"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FRAME_MAX 2048

/* ---- helpers (random numbers: tests/lib/rng.c) ---- */

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	assert_non_null(p);
	return p;
}

/* The Internet checksum, written here rather than taken from the codec. */
static uint16_t ref_csum(const uint8_t *p, unsigned int len)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* CRC-32 (reflected, 0xedb88320, as zlib), bit by bit: independent of ISA-L. */
static uint32_t ref_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

/* The ICRC as IBA A17.3.3 defines it, computed without the codec: 8 bytes
 * of ones for the LRH, then IP..(end - 4) with the variant fields set to
 * ones. end is the frame offset just past the ICRC. */
static uint32_t ref_icrc(const uint8_t *fr, uint32_t l3, uint32_t ip_len, bool v6, uint32_t end)
{
	uint32_t n = 8 + (end - ROCE_ICRC_LEN - l3), crc;
	uint8_t *m = xmalloc(n), *ip = m + 8, *udp = ip + ip_len, *bth = udp + 8;

	memset(m, 0xff, 8);
	memcpy(ip, fr + l3, end - ROCE_ICRC_LEN - l3);
	if (v6) {
		ip[0] |= 0x0f;
		ip[1] = ip[2] = ip[3] = 0xff;
		ip[7] = 0xff;
	} else {
		ip[1] = 0xff;
		ip[8] = 0xff;
		ip[10] = ip[11] = 0xff;
	}
	udp[6] = udp[7] = 0xff;
	bth[4] = 0xff;
	crc = ref_crc32(m, n);
	free(m);
	return crc;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A frame in a scratch buffer, with its layout as the test (not the codec)
 * sees it. */
struct frame {
	uint8_t b[FRAME_MAX];
	uint32_t len;		/* Ethernet through ICRC */
	uint32_t l3, ip_len, l4, bth;
	bool v6;
};

static void frame_layout(struct frame *f)
{
	f->l3 = get16(f->b + 12) == ETH_TYPE_VLAN ? 18 : 14;
	f->v6 = get16(f->b + f->l3 - 2) == ETH_TYPE_IPV6;
	f->ip_len = f->v6 ? 40 : (f->b[f->l3] & 0x0fu) * 4;
	f->l4 = f->l3 + f->ip_len;
	f->bth = f->l4 + 8;
}

static void frame_fix_csum(struct frame *f)
{
	uint8_t *ip = f->b + f->l3;

	if (f->v6)
		return;
	ip[10] = ip[11] = 0;
	put16(ip + 10, ref_csum(ip, f->ip_len));
}

/* Recompute the ICRC the way the codec's pieces are meant to be used:
 * roce_icrc_masked_headers, then roce_crc32 over the rest. */
static void frame_fix_icrc(struct frame *f)
{
	uint32_t crc, from = f->bth + 12, to = f->len - ROCE_ICRC_LEN;
	uint8_t *p = f->b + to;

	crc = roce_icrc_masked_headers(f->b + f->l3, f->ip_len, f->v6, 12);
	crc = roce_crc32(crc, f->b + from, to - from);
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
}

/* A frame as a chain of exactly-sized heap buffers. */
struct chain {
	struct roce_frag f[64];
	unsigned int n;
};

static void chain_from(struct chain *c, const uint8_t *img, const uint32_t *sizes, unsigned int n)
{
	uint32_t off = 0;
	unsigned int i;

	assert_true(n <= ARRAY_SIZE(c->f));
	for (i = 0; i < n; i++) {
		c->f[i].data = xmalloc(sizes[i]);
		c->f[i].len = sizes[i];
		memcpy(c->f[i].data, img + off, sizes[i]);
		off += sizes[i];
	}
	c->n = n;
}

static void chain_free(struct chain *c)
{
	while (c->n)
		free(c->f[--c->n].data);
}

/* Parse frame[0..len) from a heap copy (split > 0: two buffers, the second
 * from byte split). pkt's frag pointers are cleared: the copy is gone. */
static int parse_copy(const uint8_t *fr, uint32_t len, uint32_t split, struct roce_pkt *pkt,
		      enum roce_drop *why)
{
	uint32_t sizes[2] = { split ? split : len, split ? len - split : 0 };
	struct chain c;
	int ret;

	chain_from(&c, fr, sizes, split ? 2 : 1);
	ret = roce_parse(pkt, c.f, c.n, why);
	chain_free(&c);
	pkt->frags = NULL;
	pkt->nfrags = 0;
	return ret;
}

static void expect_parse_ok(const uint8_t *fr, uint32_t len, struct roce_pkt *pkt)
{
	enum roce_drop why = ROCE_DROP_MAX;
	int ret = parse_copy(fr, len, 0, pkt, &why);

	if (ret)
		fail_msg("parse failed: %d (%s)", ret, roce_drop_name(why));
}

static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

static void gid_v4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memcpy(gid, v4_mapped, 12);
	gid[12] = a;
	gid[13] = b;
	gid[14] = c;
	gid[15] = d;
}

/* A fixed path: 192.168.1.1 -> 192.168.1.2, or fd00::1 -> fd00::2. */
static void addr_init(struct roce_addr *a, bool v6, int32_t vlan)
{
	static const uint8_t dmac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
	static const uint8_t smac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

	memset(a, 0, sizeof(*a));
	memcpy(a->dmac, dmac, 6);
	memcpy(a->smac, smac, 6);
	a->vlan = vlan;
	if (v6) {
		a->sgid[0] = a->dgid[0] = 0xfd;
		a->sgid[15] = 1;
		a->dgid[15] = 2;
		a->flow_label = 0x12345;
	} else {
		gid_v4(a->sgid, 192, 168, 1, 1);
		gid_v4(a->dgid, 192, 168, 1, 2);
		a->ip_id = 0x4242;
	}
	a->sport = 0xc001;
	a->tclass = 0x68;
	a->hop_limit = 64;
}

static void hdrs_init(struct roce_hdrs *h, uint8_t opcode, uint32_t plen)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->ackreq = true;
	h->pkey = 0xffff;
	h->dqpn = 0x000abc;
	h->psn = 0x123456;
	h->reth.va = 0x1122334455667788ull;
	h->reth.rkey = 0xaabbccdd;
	h->reth.len = plen;
	h->aeth.syndrome = 0x1f;
	h->aeth.msn = 7;
	h->atomic.va = 0x0000700000001000ull;
	h->atomic.rkey = 0x01020304;
	h->atomic.swap_add = 1;
	h->atomic.compare = 2;
	h->atomic_orig = 0xfedcba9876543210ull;
	h->deth.qkey = 0x80010000;
	h->deth.sqpn = 1;
	h->imm = htonl(0xdeadbeef);
	h->ieth_rkey = 0x55aa55aa;
}

/* Build a valid frame with the fixed path and headers; payload byte i is
 * i * 7 + 3. The result must parse. */
static void build_frame(struct frame *f, uint8_t opcode, bool v6, int32_t vlan, uint32_t plen)
{
	struct roce_frag out = { f->b, sizeof(f->b) }, pl;
	struct roce_addr a;
	struct roce_hdrs h;
	struct roce_pkt pkt;
	unsigned int nused = 0;
	uint8_t *payload = xmalloc(plen);
	uint32_t i;
	int ret;

	for (i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	pl.data = payload;
	pl.len = plen;
	memset(f, 0, sizeof(*f));
	addr_init(&a, v6, vlan);
	hdrs_init(&h, opcode, plen);
	ret = roce_build(&out, 1, &nused, &a, &h, &pl, plen ? 1 : 0);
	free(payload);
	assert_true(ret > 0);
	assert_int_equal(nused, 1);
	f->len = (uint32_t)ret;
	frame_layout(f);
	expect_parse_ok(f->b, f->len, &pkt);
}

/* ---- 1. golden frames ---- */

struct vector {
	char name[64];
	uint8_t b[FRAME_MAX];
	uint32_t len;
};

static struct vector vectors[8];
static unsigned int nvectors;

static void load_vectors(void)
{
	FILE *fp;
	char *line = NULL, name[64], source[64], *hex;
	size_t cap = 0;

	if (nvectors)
		return;
	fp = fopen(VRDMA_VECTORS, "r");
	if (!fp)
		fail_msg("cannot open %s", VRDMA_VECTORS);
	while (getline(&line, &cap, fp) > 0) {
		struct vector *v;
		size_t n;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		hex = xmalloc(strlen(line) + 1);
		assert_int_equal(sscanf(line, "%63s %63s %s", name, source, hex), 3);
		n = strlen(hex);
		assert_true(n % 2 == 0 && n / 2 <= FRAME_MAX);
		assert_true(nvectors < ARRAY_SIZE(vectors));
		v = &vectors[nvectors++];
		snprintf(v->name, sizeof(v->name), "%s", name);
		assert_int_equal(vrdma_unhex(v->b, hex, n / 2), 0);
		v->len = (uint32_t)(n / 2);
		free(hex);
	}
	free(line);
	fclose(fp);
}

static const struct vector *find_vector(const char *name)
{
	unsigned int i;

	load_vectors();
	for (i = 0; i < nvectors; i++)
		if (!strcmp(vectors[i].name, name))
			return &vectors[i];
	fail_msg("vector %s missing from %s", name, VRDMA_VECTORS);
	return NULL;
}

/* Every field, decoded by hand from the hex in tests/vectors/roce-frames.txt. */
struct golden {
	const char *name;
	uint8_t dmac[6], smac[6];
	uint8_t sip[4], dip[4];
	uint8_t tos, ttl;
	uint16_t ip_id, sport;
	uint8_t opcode;
	const char *op_name;
	bool se, mig, fecn, becn, ackreq;
	uint8_t pad;
	uint16_t pkey;
	uint32_t dqpn, psn;
	uint8_t syndrome;
	uint32_t msn;
	uint32_t payload_off, payload_len;
	uint8_t payload_byte;
	uint32_t len, icrc;
};

static const struct golden goldens[] = {
	{	/* 45c2 003c 718c 4000 40 11 9161 | 0000 12b7 0028 0000 |
		 * 81 00 ffff 40 000118 00 000000 | 16 x 00 | 82fd002a */
		.name = "cnp_cx4lx",
		.dmac = { 0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2 },
		.smac = { 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32 },
		.sip = { 10, 0, 17, 1 }, .dip = { 10, 0, 18, 1 },
		.tos = 0xc2, .ttl = 64, .ip_id = 0x718c, .sport = 0,
		.opcode = 0x81, .op_name = "CNP",
		.becn = true, .pkey = 0xffff, .dqpn = 0x000118, .psn = 0,
		.payload_off = 14 + 20 + 8 + 12 + 16, .payload_len = 0,
		.len = 74, .icrc = 0x2a00fd82,
	},
	{	/* 4500 006c 6392 4000 40 11 c2d4 | f663 12b7 0058 0000 |
		 * 04 00 ffff 00 000333 80 23d43e | 64 x 7b | 2b4ddf71 */
		.name = "rc_send_only_64B",
		.dmac = { 0xe6, 0xa8, 0x53, 0xaa, 0x24, 0x5c },
		.smac = { 0x52, 0x54, 0x00, 0x12, 0x00, 0x02 },
		.sip = { 10, 12, 0, 2 }, .dip = { 10, 12, 0, 1 },
		.tos = 0, .ttl = 64, .ip_id = 0x6392, .sport = 0xf663,
		.opcode = ROCE_RC_SEND_ONLY, .op_name = "RC_SEND_ONLY",
		.ackreq = true, .pkey = 0xffff, .dqpn = 0x333, .psn = 0x23d43e,
		.payload_off = 14 + 20 + 8 + 12, .payload_len = 64, .payload_byte = 0x7b,
		.len = 122, .icrc = 0x71df4d2b,
	},
	{	/* 4500 0030 6391 4000 40 11 c311 | f663 12b7 001c 0000 |
		 * 11 00 ffff 00 000333 00 6d96c5 | 1f 000001 | deb08f0e */
		.name = "rc_ack",
		.dmac = { 0xe6, 0xa8, 0x53, 0xaa, 0x24, 0x5c },
		.smac = { 0x52, 0x54, 0x00, 0x12, 0x00, 0x02 },
		.sip = { 10, 12, 0, 2 }, .dip = { 10, 12, 0, 1 },
		.tos = 0, .ttl = 64, .ip_id = 0x6391, .sport = 0xf663,
		.opcode = ROCE_RC_ACK, .op_name = "RC_ACKNOWLEDGE",
		.pkey = 0xffff, .dqpn = 0x333, .psn = 0x6d96c5,
		.syndrome = 0x1f, .msn = 1,
		.payload_off = 14 + 20 + 8 + 12 + 4, .payload_len = 0,
		.len = 62, .icrc = 0x0e8fb0de,
	},
};

static void test_golden_frames(void **state)
{
	unsigned int i, k;

	(void)state;
	load_vectors();
	assert_int_equal(nvectors, ARRAY_SIZE(goldens));
	for (i = 0; i < ARRAY_SIZE(goldens); i++) {
		const struct golden *g = &goldens[i];
		const struct vector *v = find_vector(g->name);
		uint8_t gid[16], payload[256], *out;
		struct roce_frag of, pf = { payload, g->payload_len };
		struct roce_pkt pkt;
		unsigned int nused = 0;

		print_message("golden %s\n", g->name);
		assert_int_equal(v->len, g->len);
		/* the ICRC, recomputed without the codec, is the stored one */
		assert_int_equal(get_le32(v->b + v->len - 4), g->icrc);
		assert_int_equal(ref_icrc(v->b, 14, 20, false, v->len), g->icrc);
		assert_int_equal(ref_csum(v->b + 14, 20), 0);

		expect_parse_ok(v->b, v->len, &pkt);
		assert_memory_equal(pkt.addr.dmac, g->dmac, 6);
		assert_memory_equal(pkt.addr.smac, g->smac, 6);
		assert_int_equal(pkt.addr.vlan, -1);
		assert_false(pkt.ipv6);
		gid_v4(gid, g->sip[0], g->sip[1], g->sip[2], g->sip[3]);
		assert_memory_equal(pkt.addr.sgid, gid, 16);
		gid_v4(gid, g->dip[0], g->dip[1], g->dip[2], g->dip[3]);
		assert_memory_equal(pkt.addr.dgid, gid, 16);
		assert_int_equal(pkt.addr.tclass, g->tos);
		assert_int_equal(pkt.addr.hop_limit, g->ttl);
		assert_int_equal(pkt.addr.ip_id, g->ip_id);
		assert_int_equal(pkt.addr.flow_label, 0);
		assert_int_equal(pkt.addr.sport, g->sport);
		assert_int_equal(pkt.l3_off, 14);
		assert_int_equal(pkt.l4_off, 34);
		assert_int_equal(pkt.bth_off, 42);
		assert_non_null(pkt.op);
		assert_ptr_equal(pkt.op, &roce_opcodes[g->opcode]);
		assert_string_equal(pkt.op->name, g->op_name);
		assert_int_equal(pkt.h.opcode, g->opcode);
		assert_int_equal(pkt.h.se, g->se);
		assert_int_equal(pkt.h.mig, g->mig);
		assert_int_equal(pkt.h.fecn, g->fecn);
		assert_int_equal(pkt.h.becn, g->becn);
		assert_int_equal(pkt.h.ackreq, g->ackreq);
		assert_int_equal(pkt.h.pad, g->pad);
		assert_int_equal(pkt.h.pkey, g->pkey);
		assert_int_equal(pkt.h.dqpn, g->dqpn);
		assert_int_equal(pkt.h.psn, g->psn);
		assert_int_equal(pkt.h.aeth.syndrome, g->syndrome);
		assert_int_equal(pkt.h.aeth.msn, g->msn);
		assert_int_equal(pkt.h.reth.va, 0);
		assert_int_equal(pkt.h.deth.qkey, 0);
		assert_int_equal(pkt.h.imm, 0);
		assert_int_equal(pkt.payload_off, g->payload_off);
		assert_int_equal(pkt.payload_len, g->payload_len);
		assert_int_equal(pkt.len, g->len);
		assert_int_equal(pkt.icrc, g->icrc);
		for (k = 0; k < g->payload_len; k++)
			assert_int_equal(v->b[g->payload_off + k], g->payload_byte);

		/* rebuild from what was parsed: the same bytes */
		memcpy(payload, v->b + pkt.payload_off, pkt.payload_len);
		out = xmalloc(v->len);
		of.data = out;
		of.len = v->len;
		assert_int_equal(roce_build(&of, 1, &nused, &pkt.addr, &pkt.h, &pf,
					    g->payload_len ? 1 : 0), (int)v->len);
		assert_int_equal(nused, 1);
		assert_memory_equal(out, v->b, v->len);
		/* one byte less room is not enough */
		of.len = v->len - 1;
		assert_int_equal(roce_build(&of, 1, &nused, &pkt.addr, &pkt.h, &pf,
					    g->payload_len ? 1 : 0), -EMSGSIZE);
		free(out);
	}
}

/* ---- 2. single-byte flips ---- */

/* The bits of byte off that the ICRC does not cover. */
static uint8_t icrc_masked_bits(const struct frame *f, uint32_t off)
{
	if (off >= f->l3 && off < f->l4) {
		uint32_t r = off - f->l3;

		if (f->v6)
			return r == 0 ? 0x0f : (r >= 1 && r <= 3) || r == 7 ? 0xff : 0;
		return r == 1 || r == 8 || r == 10 || r == 11 ? 0xff : 0;
	}
	if (off == f->l4 + 6 || off == f->l4 + 7 || off == f->bth + 4)
		return 0xff;
	return 0;
}

static void check_flips(const struct frame *f, const char *name)
{
	static const uint8_t flips[] = { 0x01, 0x10, 0x80 };
	unsigned int tried = 0, k;
	uint32_t off;

	for (off = f->l3; off < f->len; off++) {
		for (k = 0; k < ARRAY_SIZE(flips); k++) {
			struct frame g;
			struct roce_pkt pkt;
			enum roce_drop why = ROCE_DROP_MAX;
			int ret;

			if (flips[k] & icrc_masked_bits(f, off))
				continue;
			g = *f;
			g.b[off] ^= flips[k];
			ret = parse_copy(g.b, g.len, 0, &pkt, &why);
			if (ret != -EBADMSG)
				fail_msg("%s: flip 0x%02x at byte %u not detected (ret %d)", name,
					 flips[k], off, ret);
			if (off >= f->len - ROCE_ICRC_LEN && why != ROCE_DROP_ICRC)
				fail_msg("%s: ICRC byte %u flipped: %s, not icrc", name, off,
					 roce_drop_name(why));
			tried++;
		}
	}
	assert_true(tried > 2 * (f->len - f->l3));
}

/* Flip bits the ICRC ignores: the frame still parses, with the new value. */
static void check_masked_flips(const struct frame *f, const char *name)
{
	uint32_t off;
	unsigned int bit, tried = 0;

	for (off = f->l3; off < f->len; off++) {
		uint8_t mask = icrc_masked_bits(f, off);

		for (bit = 0; bit < 8; bit++) {
			struct frame g;
			struct roce_pkt pkt;
			enum roce_drop why = ROCE_DROP_MAX;
			uint32_t r = off - f->l3;
			bool csum_byte = !f->v6 && (r == 10 || r == 11);
			int ret;

			if (!(mask & 1u << bit))
				continue;
			g = *f;
			g.b[off] ^= (uint8_t)(1u << bit);
			if (csum_byte) {
				/* the ICRC ignores it, the IPv4 checksum does not */
				ret = parse_copy(g.b, g.len, 0, &pkt, &why);
				assert_int_equal(ret, -EBADMSG);
				assert_int_equal(why, ROCE_DROP_IP_CHECKSUM);
				tried++;
				continue;
			}
			frame_fix_csum(&g);
			ret = parse_copy(g.b, g.len, 0, &pkt, &why);
			if (ret)
				fail_msg("%s: masked bit %u of byte %u: %s", name, bit, off,
					 roce_drop_name(why));
			tried++;
			if (off == f->bth + 4) {
				assert_int_equal(pkt.h.fecn, g.b[off] >> 7);
				assert_int_equal(pkt.h.becn, (g.b[off] >> 6) & 1);
			} else if (f->v6 && r < 4) {
				const uint8_t *ip = g.b + g.l3;

				assert_int_equal(pkt.addr.tclass, (ip[0] & 0x0f) << 4 | ip[1] >> 4);
				assert_int_equal(pkt.addr.flow_label,
						 (ip[1] & 0x0fu) << 16 | ip[2] << 8 | ip[3]);
			} else if (f->v6 && r == 7) {
				assert_int_equal(pkt.addr.hop_limit, g.b[off]);
			} else if (!f->v6 && r == 1) {
				assert_int_equal(pkt.addr.tclass, g.b[off]);
			} else if (!f->v6 && r == 8) {
				assert_int_equal(pkt.addr.hop_limit, g.b[off]);
			}
		}
	}
	/* v4: TOS, TTL, csum (16 bits), UDP csum, BTH byte 4; v6 adds more */
	assert_true(tried >= 6 * 8);
}

static void test_byte_flips(void **state)
{
	struct frame *f = xmalloc(sizeof(*f));
	unsigned int i;

	(void)state;
	load_vectors();
	for (i = 0; i < nvectors; i++) {
		memset(f, 0, sizeof(*f));
		memcpy(f->b, vectors[i].b, vectors[i].len);
		f->len = vectors[i].len;
		frame_layout(f);
		check_flips(f, vectors[i].name);
		check_masked_flips(f, vectors[i].name);
	}
	build_frame(f, ROCE_RC_WRITE_ONLY_IMM, false, 0x6064, 1000);
	check_flips(f, "RC_WRITE_ONLY_IMM/v4/vlan/1000");
	check_masked_flips(f, "RC_WRITE_ONLY_IMM/v4/vlan/1000");
	build_frame(f, ROCE_UD_SEND_ONLY_IMM, true, -1, 37);
	check_flips(f, "UD_SEND_ONLY_IMM/v6/37");
	check_masked_flips(f, "UD_SEND_ONLY_IMM/v6/37");
	build_frame(f, ROCE_RC_ATOMIC_ACK, false, -1, 0);
	check_flips(f, "RC_ATOMIC_ACK/v4");
	check_masked_flips(f, "RC_ATOMIC_ACK/v4");
	build_frame(f, ROCE_RC_READ_REQUEST, true, 0x6064, 0);
	check_flips(f, "RC_READ_REQUEST/v6/vlan");
	check_masked_flips(f, "RC_READ_REQUEST/v6/vlan");
	free(f);
}

/* ---- 3. round trip, every opcode ---- */

static void random_addr(struct roce_addr *a, bool v6, int32_t vlan)
{
	memset(a, 0, sizeof(*a));
	rng_fill(a->dmac, 6);
	rng_fill(a->smac, 6);
	a->vlan = vlan;
	if (v6) {
		rng_fill(a->sgid, 16);
		rng_fill(a->dgid, 16);
		a->sgid[0] = 0xfd;	/* never ::ffff:0:0/96 */
		a->dgid[0] = 0xfe;
	} else {
		gid_v4(a->sgid, 0, 0, 0, 0);
		gid_v4(a->dgid, 0, 0, 0, 0);
		rng_fill(a->sgid + 12, 4);
		rng_fill(a->dgid + 12, 4);
	}
	a->sport = (uint16_t)rng32();
	a->tclass = (uint8_t)rng32();
	a->hop_limit = (uint8_t)rng32();
	a->flow_label = rng32() & 0xfffff;	/* ignored for IPv4 */
	a->ip_id = (uint16_t)rng32();		/* ignored for IPv6 */
}

static void random_hdrs(struct roce_hdrs *h, uint8_t opcode)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->se = rng32() & 1;
	h->mig = rng32() & 1;
	h->fecn = rng32() & 1;
	h->becn = rng32() & 1;
	h->ackreq = rng32() & 1;
	h->pad = rng32() & 3;			/* ignored by build */
	h->pkey = (uint16_t)rng32();
	h->dqpn = rng32() & ROCE_QPN_MASK;
	h->psn = rng32() & ROCE_PSN_MASK;
	h->reth.va = rng64();
	h->reth.rkey = rng32();
	h->reth.len = rng32();
	h->aeth.syndrome = (uint8_t)rng32();
	h->aeth.msn = rng32() & ROCE_MSN_MASK;
	h->atomic.va = rng64();
	h->atomic.rkey = rng32();
	h->atomic.swap_add = rng64();
	h->atomic.compare = rng64();
	h->atomic_orig = rng64();
	h->deth.qkey = rng32();
	h->deth.sqpn = rng32() & ROCE_QPN_MASK;
	h->imm = rng32();
	h->ieth_rkey = rng32();
}

/* What parse must give back: the fields of headers the opcode has; zero
 * for the rest; pad derived from the payload size. */
static void expected_hdrs(struct roce_hdrs *e, const struct roce_hdrs *h, uint32_t mask,
			  uint32_t plen)
{
	memset(e, 0, sizeof(*e));
	e->opcode = h->opcode;
	e->se = h->se;
	e->mig = h->mig;
	e->fecn = h->fecn;
	e->becn = h->becn;
	e->ackreq = h->ackreq;
	e->pad = (uint8_t)((4 - plen % 4) % 4);
	e->pkey = h->pkey;
	e->dqpn = h->dqpn & ROCE_QPN_MASK;
	e->psn = h->psn & ROCE_PSN_MASK;
	if (mask & ROCE_F_RETH)
		e->reth = h->reth;
	if (mask & ROCE_F_AETH) {
		e->aeth.syndrome = h->aeth.syndrome;
		e->aeth.msn = h->aeth.msn & ROCE_MSN_MASK;
	}
	if (mask & ROCE_F_ATMETH)
		e->atomic = h->atomic;
	if (mask & ROCE_F_ATMACK)
		e->atomic_orig = h->atomic_orig;
	if (mask & ROCE_F_DETH) {
		e->deth.qkey = h->deth.qkey;
		e->deth.sqpn = h->deth.sqpn & ROCE_QPN_MASK;
	}
	if (mask & ROCE_F_IMMDT)
		e->imm = h->imm;
	if (mask & ROCE_F_IETH)
		e->ieth_rkey = h->ieth_rkey;
}

static void assert_hdrs_equal(const struct roce_hdrs *e, const struct roce_hdrs *g)
{
	assert_int_equal(g->opcode, e->opcode);
	assert_int_equal(g->se, e->se);
	assert_int_equal(g->mig, e->mig);
	assert_int_equal(g->fecn, e->fecn);
	assert_int_equal(g->becn, e->becn);
	assert_int_equal(g->ackreq, e->ackreq);
	assert_int_equal(g->pad, e->pad);
	assert_int_equal(g->pkey, e->pkey);
	assert_int_equal(g->dqpn, e->dqpn);
	assert_int_equal(g->psn, e->psn);
	assert_int_equal(g->reth.va, e->reth.va);
	assert_int_equal(g->reth.rkey, e->reth.rkey);
	assert_int_equal(g->reth.len, e->reth.len);
	assert_int_equal(g->aeth.syndrome, e->aeth.syndrome);
	assert_int_equal(g->aeth.msn, e->aeth.msn);
	assert_int_equal(g->atomic.va, e->atomic.va);
	assert_int_equal(g->atomic.rkey, e->atomic.rkey);
	assert_int_equal(g->atomic.swap_add, e->atomic.swap_add);
	assert_int_equal(g->atomic.compare, e->atomic.compare);
	assert_int_equal(g->atomic_orig, e->atomic_orig);
	assert_int_equal(g->deth.qkey, e->deth.qkey);
	assert_int_equal(g->deth.sqpn, e->deth.sqpn);
	assert_int_equal(g->imm, e->imm);
	assert_int_equal(g->ieth_rkey, e->ieth_rkey);
}

/* The wire layout of a built frame, read without the codec. */
static void check_wire(const uint8_t *fr, uint32_t len, const struct roce_addr *a, bool v6,
		       uint32_t op_hdr_len, uint32_t plen)
{
	uint32_t l3 = a->vlan >= 0 ? 18 : 14, ip_len = v6 ? 40 : 20, l4 = l3 + ip_len;
	uint32_t udp_len = 8 + op_hdr_len + plen + (4 - plen % 4) % 4 + 4;
	const uint8_t *ip = fr + l3, *udp = fr + l4;

	assert_int_equal(len, l4 + udp_len);
	assert_memory_equal(fr, a->dmac, 6);
	assert_memory_equal(fr + 6, a->smac, 6);
	if (a->vlan >= 0) {
		assert_int_equal(get16(fr + 12), 0x8100);
		assert_int_equal(get16(fr + 14), a->vlan);
	}
	assert_int_equal(get16(fr + l3 - 2), v6 ? 0x86dd : 0x0800);
	if (v6) {
		assert_int_equal(ip[0] >> 4, 6);
		assert_int_equal(get16(ip + 4), udp_len);
		assert_int_equal(ip[6], 17);
		assert_memory_equal(ip + 8, a->sgid, 16);
		assert_memory_equal(ip + 24, a->dgid, 16);
	} else {
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(get16(ip + 2), 20 + udp_len);
		assert_int_equal(get16(ip + 6), 0x4000);	/* DF */
		assert_int_equal(ip[9], 17);
		assert_int_equal(ref_csum(ip, 20), 0);
		assert_memory_equal(ip + 12, a->sgid + 12, 4);
		assert_memory_equal(ip + 16, a->dgid + 12, 4);
	}
	assert_int_equal(get16(udp), a->sport);
	assert_int_equal(get16(udp + 2), 4791);
	assert_int_equal(get16(udp + 4), udp_len);
	assert_int_equal(get16(udp + 6), 0);
	assert_int_equal(udp[8 + 1] & 0x0f, 0);		/* TVer */
	assert_int_equal(get_le32(fr + len - 4), ref_icrc(fr, l3, ip_len, v6, len));
}

static void roundtrip_one(uint8_t opcode, bool v6, int32_t vlan, uint32_t plen)
{
	const struct roce_opcode_info *op = &roce_opcodes[opcode];
	uint8_t payload[256], got[256], big[FRAME_MAX], *exact;
	uint32_t pad = (4 - plen % 4) % 4, split = plen / 2;
	uint32_t want = 14 + (vlan >= 0 ? 4 : 0) + (v6 ? 40 : 20) + 8 + op->hdr_len + plen + pad + 4;
	struct roce_frag pl[2] = { { payload, split }, { payload + split, plen - split } };
	struct roce_frag out = { big, sizeof(big) };
	struct roce_addr a;
	struct roce_hdrs h, e;
	struct roce_pkt pkt;
	unsigned int nused = 0;
	int ret;

	random_addr(&a, v6, vlan);
	random_hdrs(&h, opcode);
	rng_fill(payload, plen);
	ret = roce_build(&out, 1, &nused, &a, &h, pl, plen ? 2 : 0);
	if (ret != (int)want)
		fail_msg("%s v6=%d vlan=%d plen=%u: build returned %d, want %u", op->name, v6,
			 vlan, plen, ret, want);
	assert_int_equal(nused, 1);
	assert_int_equal(roce_header_len(&a, opcode), want - plen - pad - 4);
	check_wire(big, want, &a, v6, op->hdr_len, plen);
	assert_memory_equal(big + want - 4 - pad, "\0\0\0", pad);

	/* the same into a buffer with exactly the room needed */
	exact = xmalloc(want);
	out.data = exact;
	out.len = want;
	assert_int_equal(roce_build(&out, 1, &nused, &a, &h, pl, plen ? 2 : 0), (int)want);
	assert_memory_equal(exact, big, want);
	free(exact);

	expected_hdrs(&e, &h, op->mask, plen);
	{
		enum roce_drop why = ROCE_DROP_MAX;
		struct roce_frag in = { xmalloc(want), want };

		memcpy(in.data, big, want);
		ret = roce_parse(&pkt, &in, 1, &why);
		if (ret)
			fail_msg("%s v6=%d vlan=%d plen=%u: parse: %s", op->name, v6, vlan, plen,
				 roce_drop_name(why));
		assert_ptr_equal(pkt.op, op);
		assert_hdrs_equal(&e, &pkt.h);
		assert_memory_equal(pkt.addr.dmac, a.dmac, 6);
		assert_memory_equal(pkt.addr.smac, a.smac, 6);
		assert_int_equal(pkt.addr.vlan, vlan);
		assert_memory_equal(pkt.addr.sgid, a.sgid, 16);
		assert_memory_equal(pkt.addr.dgid, a.dgid, 16);
		assert_int_equal(pkt.addr.sport, a.sport);
		assert_int_equal(pkt.addr.tclass, a.tclass);
		assert_int_equal(pkt.addr.hop_limit, a.hop_limit);
		assert_int_equal(pkt.addr.flow_label, v6 ? a.flow_label : 0);
		assert_int_equal(pkt.addr.ip_id, v6 ? 0 : a.ip_id);
		assert_int_equal(pkt.ipv6, v6);
		assert_int_equal(pkt.l3_off, vlan >= 0 ? 18 : 14);
		assert_int_equal(pkt.l4_off, pkt.l3_off + (v6 ? 40 : 20));
		assert_int_equal(pkt.bth_off, pkt.l4_off + 8);
		assert_int_equal(pkt.payload_off, pkt.bth_off + op->hdr_len);
		assert_int_equal(pkt.payload_len, plen);
		assert_int_equal(pkt.len, want);
		assert_int_equal(pkt.icrc, get_le32(big + want - 4));
		memset(got, 0, sizeof(got));
		assert_int_equal(roce_pkt_copy_payload(&pkt, 0, got, plen), 0);
		assert_memory_equal(got, payload, plen);
		assert_int_equal(roce_pkt_copy_payload(&pkt, 0, got, plen + 1), -ERANGE);
		free(in.data);
	}
}

static void test_roundtrip_all_opcodes(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 3, 4, 255 };
	unsigned int code, fam, tag, s, frames = 0, named = 0;

	(void)state;
	rng_seed(0x5eed0003);
	for (code = 0; code < 256; code++) {
		const struct roce_opcode_info *op = &roce_opcodes[code];

		if (!op->name)
			continue;
		named++;
		for (fam = 0; fam < 2; fam++) {
			for (tag = 0; tag < 2; tag++) {
				int32_t vlan = tag ? 0x6064 : -1;

				for (s = 0; s < ARRAY_SIZE(sizes); s++) {
					if (sizes[s] && !(op->mask & ROCE_F_PAYLOAD))
						break;
					roundtrip_one((uint8_t)code, fam, vlan, sizes[s]);
					frames++;
				}
			}
		}
		if (!(op->mask & ROCE_F_PAYLOAD)) {
			/* payload where none may be */
			uint8_t buf[FRAME_MAX], data[4] = { 1, 2, 3, 4 };
			struct roce_frag out = { buf, sizeof(buf) }, pl = { data, 1 };
			struct roce_addr a;
			struct roce_hdrs h;
			unsigned int nused = 0;

			addr_init(&a, false, -1);
			hdrs_init(&h, (uint8_t)code, 0);
			assert_int_equal(roce_build(&out, 1, &nused, &a, &h, &pl, 1), -EINVAL);
			pl.len = 4;
			assert_int_equal(roce_build(&out, 1, &nused, &a, &h, &pl, 1), -EINVAL);
			/* an empty payload list entry is no payload */
			pl.len = 0;
			assert_true(roce_build(&out, 1, &nused, &a, &h, &pl, 1) > 0);
		}
	}
	assert_int_equal(named, 38);
	print_message("round trip: %u frames\n", frames);
}

/* Values wider than their fields are cut to the field, not spilled into
 * the neighbours. */
static void test_roundtrip_field_widths(void **state)
{
	uint8_t buf[FRAME_MAX];
	struct roce_frag out = { buf, sizeof(buf) };
	struct roce_addr a;
	struct roce_hdrs h;
	struct roce_pkt pkt;
	unsigned int nused = 0;
	int len;

	(void)state;
	addr_init(&a, true, -1);
	a.flow_label = 0xfff12345;	/* 20 bits */
	hdrs_init(&h, ROCE_UD_SEND_ONLY, 0);
	h.dqpn = 0xff000001;
	h.psn = 0xff000002;
	h.deth.sqpn = 0xff000003;
	len = roce_build(&out, 1, &nused, &a, &h, NULL, 0);
	assert_true(len > 0);
	expect_parse_ok(buf, (uint32_t)len, &pkt);
	assert_int_equal(pkt.addr.flow_label, 0x12345);
	assert_int_equal(pkt.addr.tclass, a.tclass);
	assert_int_equal(pkt.h.dqpn, 1);
	assert_int_equal(pkt.h.psn, 2);
	assert_int_equal(pkt.h.deth.sqpn, 3);
	assert_int_equal(pkt.h.fecn, 0);
	assert_int_equal(pkt.h.ackreq, 1);

	hdrs_init(&h, ROCE_RC_ACK, 0);
	h.aeth.msn = 0xab000004;
	addr_init(&a, false, -1);
	len = roce_build(&out, 1, &nused, &a, &h, NULL, 0);
	assert_true(len > 0);
	expect_parse_ok(buf, (uint32_t)len, &pkt);
	assert_int_equal(pkt.h.aeth.syndrome, 0x1f);
	assert_int_equal(pkt.h.aeth.msn, 4);

	/* IPv6 traffic class, flow label and hop limit at their extremes */
	addr_init(&a, true, 0xffff);
	a.tclass = 0xff;
	a.flow_label = 0xfffff;
	a.hop_limit = 0xff;
	len = roce_build(&out, 1, &nused, &a, &h, NULL, 0);
	assert_true(len > 0);
	assert_memory_equal(buf + 18, "\x6f\xff\xff\xff", 4);
	expect_parse_ok(buf, (uint32_t)len, &pkt);
	assert_int_equal(pkt.addr.vlan, 0xffff);
	assert_int_equal(pkt.addr.tclass, 0xff);
	assert_int_equal(pkt.addr.flow_label, 0xfffff);
	assert_int_equal(pkt.addr.hop_limit, 0xff);
	a.tclass = 0x01;
	a.flow_label = 0;
	len = roce_build(&out, 1, &nused, &a, &h, NULL, 0);
	assert_true(len > 0);
	assert_memory_equal(buf + 18, "\x60\x10\x00\x00", 4);
	expect_parse_ok(buf, (uint32_t)len, &pkt);
	assert_int_equal(pkt.addr.tclass, 0x01);
	assert_int_equal(pkt.addr.flow_label, 0);
}

/* ---- 4. multi-buffer ---- */

#define MB_PLEN 9000
#define MB_LEN (14 + 20 + 8 + 12 + MB_PLEN + 4)	/* 9058, SEND_MIDDLE: no pad */

struct mb {
	uint8_t payload[MB_PLEN];
	struct roce_frag pl[3];
	struct roce_addr a;
	struct roce_hdrs h;
};

static void mb_init(struct mb *m)
{
	rng_seed(0x5eed0004);
	rng_fill(m->payload, MB_PLEN);
	m->pl[0] = (struct roce_frag){ m->payload, 1237 };
	m->pl[1] = (struct roce_frag){ m->payload + 1237, 4099 };
	m->pl[2] = (struct roce_frag){ m->payload + 1237 + 4099, 3664 };
	addr_init(&m->a, false, -1);
	hdrs_init(&m->h, ROCE_RC_SEND_MIDDLE, MB_PLEN);
}

/* Build into buffers of the given sizes (each exactly that big, filled with
 * 0xa5); returns roce_build's result. */
static int mb_build(const struct mb *m, const uint32_t *room, unsigned int n, struct chain *c,
		    unsigned int *nused)
{
	unsigned int i;

	assert_true(n <= ARRAY_SIZE(c->f));
	for (i = 0; i < n; i++) {
		c->f[i].data = xmalloc(room[i]);
		c->f[i].len = room[i];
		memset(c->f[i].data, 0xa5, room[i]);
	}
	c->n = n;
	*nused = 0;
	return roce_build(c->f, n, nused, &m->a, &m->h, m->pl, 3);
}

static void check_payload_copies(const struct roce_pkt *pkt, const uint8_t *payload)
{
	uint8_t *got = xmalloc(MB_PLEN);
	unsigned int k;

	memset(got, 0, MB_PLEN);
	assert_int_equal(roce_pkt_copy_payload(pkt, 0, got, MB_PLEN), 0);
	assert_memory_equal(got, payload, MB_PLEN);
	for (k = 0; k < 40; k++) {
		uint32_t off = rng_below(MB_PLEN + 1), len = rng_below(MB_PLEN - off + 1);

		memset(got, 0, MB_PLEN);
		assert_int_equal(roce_pkt_copy_payload(pkt, off, got, len), 0);
		assert_memory_equal(got, payload + off, len);
	}
	assert_int_equal(roce_pkt_copy_payload(pkt, MB_PLEN, got, 0), 0);
	assert_int_equal(roce_pkt_copy_payload(pkt, MB_PLEN + 1, got, 0), -ERANGE);
	assert_int_equal(roce_pkt_copy_payload(pkt, 0, got, MB_PLEN + 1), -ERANGE);
	assert_int_equal(roce_pkt_copy_payload(pkt, MB_PLEN - 1, got, 2), -ERANGE);
	assert_int_equal(roce_pkt_copy_payload(pkt, 1, got, UINT32_MAX), -ERANGE);
	assert_int_equal(roce_pkt_copy_payload(pkt, UINT32_MAX, got, 1), -ERANGE);
	free(got);
}

static void parse_split(const uint8_t *img, const uint32_t *sizes, unsigned int n,
			const uint8_t *payload)
{
	struct chain c;
	struct roce_pkt pkt;
	enum roce_drop why = ROCE_DROP_MAX;
	uint32_t sum = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++)
		sum += sizes[i];
	assert_int_equal(sum, MB_LEN);
	chain_from(&c, img, sizes, n);
	ret = roce_parse(&pkt, c.f, c.n, &why);
	if (ret) {
		for (i = 0; i < n; i++)
			print_error("frag %u: %u bytes\n", i, sizes[i]);
		fail_msg("chain of %u: %s", n, roce_drop_name(why));
	}
	assert_int_equal(pkt.len, MB_LEN);
	assert_int_equal(pkt.payload_off, 54);
	assert_int_equal(pkt.payload_len, MB_PLEN);
	assert_int_equal(pkt.h.opcode, ROCE_RC_SEND_MIDDLE);
	assert_int_equal(pkt.icrc, get_le32(img + MB_LEN - 4));
	check_payload_copies(&pkt, payload);
	chain_free(&c);
}

static void test_multibuffer(void **state)
{
	struct mb *m = xmalloc(sizeof(*m));
	uint8_t *single;
	struct chain c;
	unsigned int nused, i, k;
	uint32_t room;

	(void)state;
	mb_init(m);

	/* one 16 KiB buffer */
	room = 16384;
	assert_int_equal(mb_build(m, &room, 1, &c, &nused), MB_LEN);
	assert_int_equal(nused, 1);
	single = xmalloc(MB_LEN);
	memcpy(single, c.f[0].data, MB_LEN);
	assert_int_equal(get_le32(single + MB_LEN - 4), ref_icrc(single, 14, 20, false, MB_LEN));
	assert_memory_equal(single + 54, m->payload, MB_PLEN);
	chain_free(&c);

	/* four 4 KiB buffers: three used, the same bytes, nothing else written */
	{
		static const uint32_t r4k[4] = { 4096, 4096, 4096, 4096 };

		assert_int_equal(mb_build(m, r4k, 4, &c, &nused), MB_LEN);
		assert_int_equal(nused, 3);
		assert_memory_equal(c.f[0].data, single, 4096);
		assert_memory_equal(c.f[1].data, single + 4096, 4096);
		assert_memory_equal(c.f[2].data, single + 8192, MB_LEN - 8192);
		for (k = MB_LEN - 8192; k < 4096; k++)
			assert_int_equal(c.f[2].data[k], 0xa5);
		for (k = 0; k < 4096; k++)
			assert_int_equal(c.f[3].data[k], 0xa5);
		chain_free(&c);
	}
	/* exact fits, and the last byte landing on a buffer's end */
	{
		static const struct { uint32_t room[4]; unsigned int n, used; } fits[] = {
			{ { MB_LEN }, 1, 1 },
			{ { 54, MB_PLEN, 4 }, 3, 3 },		/* headers only in the first */
			{ { 54, MB_PLEN + 4, 100 }, 3, 2 },
			{ { MB_LEN - 4, 4, 4096 }, 3, 2 },	/* ICRC alone */
			{ { MB_LEN - 2, 2 }, 2, 2 },		/* ICRC split */
			{ { 60, 0, 9000, 100 }, 4, 3 },		/* an empty buffer */
			{ { MB_LEN, 4096 }, 2, 1 },
		};

		for (i = 0; i < ARRAY_SIZE(fits); i++) {
			uint32_t off = 0;

			assert_int_equal(mb_build(m, fits[i].room, fits[i].n, &c, &nused), MB_LEN);
			assert_int_equal(nused, fits[i].used);
			for (k = 0; k < nused && off < MB_LEN; k++) {
				uint32_t n = MB_LEN - off < c.f[k].len ? MB_LEN - off : c.f[k].len;

				assert_memory_equal(c.f[k].data, single + off, n);
				off += n;
			}
			assert_int_equal(off, MB_LEN);
			chain_free(&c);
		}
	}

	/* parse the frame split in many ways */
	{
		static const struct { uint32_t sizes[6]; unsigned int n; } splits[] = {
			{ { MB_LEN }, 1 },
			{ { 4096, 4096, MB_LEN - 8192 }, 3 },
			{ { 54, MB_PLEN, 4 }, 3 },
			{ { 54, MB_PLEN + 2, 2 }, 3 },		/* inside the ICRC */
			{ { MB_LEN - 3, 3 }, 2 },		/* inside the ICRC */
			{ { MB_LEN - 1, 1 }, 2 },
			{ { 54, 1, 1, 1, MB_PLEN + 1 - 3, 3 }, 6 },
			{ { 100, 0, 5000, 0, MB_LEN - 5100 }, 5 }, /* empty buffers */
			{ { 54, MB_PLEN + 4, 0 }, 3 },		/* empty last buffer */
		};

		rng_seed(0x5eed0044);
		for (i = 0; i < ARRAY_SIZE(splits); i++)
			parse_split(single, splits[i].sizes, splits[i].n, m->payload);
		/* and at random points after the headers */
		for (i = 0; i < 30; i++) {
			uint32_t sizes[16], left = MB_LEN;
			unsigned int n = 0, want = 2 + rng_below(14);

			sizes[n] = 54 + rng_below(2000);
			left -= sizes[n++];
			while (n + 1 < want && left > 0) {
				sizes[n] = rng_below(left + 1);
				left -= sizes[n++];
			}
			sizes[n++] = left;
			parse_split(single, sizes, n, m->payload);
		}
	}
	free(single);
	free(m);
}

static void test_build_errors(void **state)
{
	struct mb *m = xmalloc(sizeof(*m));
	uint8_t buf[FRAME_MAX];
	struct roce_frag out = { buf, sizeof(buf) };
	struct chain c;
	unsigned int nused;
	static const uint32_t short1 = MB_LEN - 1;
	static const uint32_t short3[3] = { 4096, 4096, MB_LEN - 8192 - 1 };
	static const uint32_t hdr53[2] = { 53, 16384 };
	static const uint32_t hdr54[2] = { 54, MB_LEN - 54 };

	(void)state;
	mb_init(m);
	/* too little room, in one buffer or in a chain */
	assert_int_equal(mb_build(m, &short1, 1, &c, &nused), -EMSGSIZE);
	chain_free(&c);
	assert_int_equal(mb_build(m, short3, 3, &c, &nused), -EMSGSIZE);
	chain_free(&c);
	/* headers must fit the first buffer: 54 bytes do, 53 do not */
	assert_int_equal(mb_build(m, hdr53, 2, &c, &nused), -EMSGSIZE);
	chain_free(&c);
	assert_int_equal(mb_build(m, hdr54, 2, &c, &nused), MB_LEN);
	assert_int_equal(nused, 2);
	chain_free(&c);
	/* no buffers at all */
	assert_int_equal(roce_build(&out, 0, &nused, &m->a, &m->h, m->pl, 3), -EINVAL);

	/* sgid and dgid of different families */
	{
		struct roce_addr a;
		struct roce_hdrs h;

		hdrs_init(&h, ROCE_RC_SEND_ONLY, 0);
		addr_init(&a, false, -1);
		memset(a.sgid, 0, 16);
		a.sgid[0] = 0xfd;
		assert_int_equal(roce_build(&out, 1, &nused, &a, &h, NULL, 0), -EINVAL);
		addr_init(&a, false, -1);
		memset(a.dgid, 0, 16);
		a.dgid[0] = 0xfd;
		assert_int_equal(roce_build(&out, 1, &nused, &a, &h, NULL, 0), -EINVAL);
		/* unknown opcodes */
		addr_init(&a, false, -1);
		h.opcode = 0x15;
		assert_int_equal(roce_build(&out, 1, &nused, &a, &h, NULL, 0), -EINVAL);
		h.opcode = 0x40;
		assert_int_equal(roce_build(&out, 1, &nused, &a, &h, NULL, 0), -EINVAL);
		h.opcode = 0xff;
		assert_int_equal(roce_build(&out, 1, &nused, &a, &h, NULL, 0), -EINVAL);
		/* roce_gid_is_v4 */
		assert_true(roce_gid_is_v4(a.sgid));
		addr_init(&a, true, -1);
		assert_false(roce_gid_is_v4(a.sgid));
	}
	free(m);
}

/* ---- 5. drop reasons ---- */

enum { FIX_NONE = 0, FIX_CSUM = 1, FIX_ICRC = 2, FIX_ALL = 3 };

/* Mutators: arg packs (offset << 16 | value) where they take both. */
static void m_none(struct frame *f, uint32_t arg)
{
	(void)f;
	(void)arg;
}

static void m_truncate(struct frame *f, uint32_t len)
{
	f->len = len;
}

static void m_ethertype(struct frame *f, uint32_t type)
{
	put16(f->b + f->l3 - 2, (uint16_t)type);
}

static void m_ipver(struct frame *f, uint32_t ver)
{
	f->b[f->l3] = (uint8_t)(ver << 4 | (f->b[f->l3] & 0x0f));
}

/* Make the IPv6 address at l3 + arg IPv4-mapped (::ffff:10.0.0.1). */
static void m_v6_mapped(struct frame *f, uint32_t arg)
{
	static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };

	memcpy(f->b + f->l3 + arg, mapped, sizeof(mapped));
}

static void m_set8_l3(struct frame *f, uint32_t arg)
{
	f->b[f->l3 + (arg >> 16)] = (uint8_t)arg;
}

static void m_set16_l3(struct frame *f, uint32_t arg)
{
	put16(f->b + f->l3 + (arg >> 16), (uint16_t)arg);
}

static void m_xor8_l3(struct frame *f, uint32_t arg)
{
	f->b[f->l3 + (arg >> 16)] ^= (uint8_t)arg;
}

static void m_set16_l4(struct frame *f, uint32_t arg)
{
	put16(f->b + f->l4 + (arg >> 16), (uint16_t)arg);
}

static void m_set8_bth(struct frame *f, uint32_t arg)
{
	f->b[f->bth + (arg >> 16)] = (uint8_t)arg;
}

static void m_or8_bth(struct frame *f, uint32_t arg)
{
	f->b[f->bth + (arg >> 16)] |= (uint8_t)arg;
}

static void m_xor_end(struct frame *f, uint32_t back)	/* byte len - back */
{
	f->b[f->len - back] ^= 0x01;
}

static uint32_t ip_len_field(const struct frame *f)	/* IPv4 total / IPv6 payload */
{
	return get16(f->b + f->l3 + (f->v6 ? 4 : 2));
}

static void set_ip_len_field(struct frame *f, uint32_t v)
{
	put16(f->b + f->l3 + (f->v6 ? 4 : 2), (uint16_t)v);
}

/* IP length only, by a signed delta */
static void m_add_ip_len(struct frame *f, uint32_t delta)
{
	set_ip_len_field(f, ip_len_field(f) + delta);
}

/* UDP length only, by a signed delta */
static void m_add_udp_len(struct frame *f, uint32_t delta)
{
	put16(f->b + f->l4 + 4, (uint16_t)(get16(f->b + f->l4 + 4) + delta));
}

/* IP and UDP lengths say the UDP datagram is arg bytes (frame unchanged) */
static void m_udp_size(struct frame *f, uint32_t arg)
{
	set_ip_len_field(f, arg + (f->v6 ? 0 : 20));
	put16(f->b + f->l4 + 4, (uint16_t)arg);
}

/* Grow or shrink the datagram by a signed delta: frame, IP and UDP lengths
 * (new bytes are zero; the ICRC goes in the new last 4 bytes when fixed). */
static void m_resize(struct frame *f, uint32_t delta)
{
	f->len += delta;
	m_add_ip_len(f, delta);
	m_add_udp_len(f, delta);
}

#define AT(off, v) ((uint32_t)(off) << 16 | (uint32_t)(v))
#define NEG(n) ((uint32_t)-(n))

struct drop_case {
	const char *what;	/* case 5.NN is drop_cases[NN - 1] */
	uint8_t opcode;
	bool v6;
	int32_t vlan;
	uint32_t plen;
	void (*mutate)(struct frame *f, uint32_t arg);
	uint32_t arg;
	int fix;
	uint32_t split;		/* > 0: the frame in two buffers, the first this long */
	enum roce_drop why;
};

/* IPv4 unless v6; RC_SEND_ONLY with 8 bytes unless said. 14+20+8 = 42: the
 * BTH of an untagged IPv4 frame. */
static const struct drop_case drop_cases[] = {
	{ "10-byte frame", ROCE_RC_SEND_ONLY, false, -1, 8, m_truncate, 10,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "VLAN tag cut", ROCE_RC_SEND_ONLY, false, 0x6064, 8, m_truncate, 16,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "IPv4 header cut", ROCE_RC_SEND_ONLY, false, -1, 8, m_truncate, 33,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "IPv6 header cut", ROCE_RC_SEND_ONLY, true, -1, 8, m_truncate, 53,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "IPv4 ethertype, nothing after it", ROCE_RC_SEND_ONLY, false, -1, 8, m_truncate, 14,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "IPv6 ethertype, nothing after it", ROCE_RC_SEND_ONLY, true, -1, 8, m_truncate, 14,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "VLAN ethertype, nothing after it", ROCE_RC_SEND_ONLY, false, 0x6064, 8, m_truncate, 14,
	  FIX_NONE, 0, ROCE_DROP_SHORT },
	{ "first buffer ends inside the IPv4 header", ROCE_RC_SEND_ONLY, false, -1, 8, m_none, 0,
	  FIX_NONE, 14 + 19, ROCE_DROP_SHORT },
	{ "first buffer ends inside UDP", ROCE_RC_SEND_ONLY, false, -1, 8, m_none, 0,
	  FIX_NONE, 38, ROCE_DROP_SHORT },
	{ "first buffer ends right after UDP", ROCE_RC_SEND_ONLY, false, -1, 8, m_none, 0,
	  FIX_NONE, 42, ROCE_DROP_SHORT },
	{ "first buffer ends after the BTH's first byte", ROCE_RC_SEND_ONLY, true, -1, 8, m_none,
	  0, FIX_NONE, 62 + 1, ROCE_DROP_SHORT },
	{ "first buffer ends inside the BTH", ROCE_RC_SEND_ONLY, false, -1, 8, m_none, 0,
	  FIX_NONE, 42 + 6, ROCE_DROP_SHORT },
	{ "first buffer ends inside the RETH", ROCE_RC_WRITE_ONLY, false, -1, 8, m_none,
	  0, FIX_NONE, 42 + 12 + 8, ROCE_DROP_SHORT },
	{ "ethertype 0x0806", ROCE_RC_SEND_ONLY, false, -1, 8, m_ethertype, 0x0806,
	  FIX_NONE, 0, ROCE_DROP_ETHERTYPE },
	{ "ethertype 0x0806 inside a VLAN tag", ROCE_RC_SEND_ONLY, false, 0x6064, 8,
	  m_ethertype, 0x0806, FIX_NONE, 0, ROCE_DROP_ETHERTYPE },
	{ "IPv4 version 5", ROCE_RC_SEND_ONLY, false, -1, 8, m_ipver, 5, FIX_ALL, 0,
	  ROCE_DROP_IP_HEADER },
	{ "IPv4 version 6 under ethertype 0x0800", ROCE_RC_SEND_ONLY, false, -1, 8,
	  m_ipver, 6, FIX_ALL, 0, ROCE_DROP_IP_HEADER },
	{ "IPv4 IHL 4", ROCE_RC_SEND_ONLY, false, -1, 8, m_set8_l3, AT(0, 0x44),
	  FIX_NONE, 0, ROCE_DROP_IP_HEADER },
	{ "IPv6 version 4", ROCE_RC_SEND_ONLY, true, -1, 8, m_ipver, 4, FIX_ALL, 0,
	  ROCE_DROP_IP_HEADER },
	{ "IPv6 source ::ffff:10.0.0.1", ROCE_RC_SEND_ONLY, true, -1, 8, m_v6_mapped, 8,
	  FIX_ALL, 0, ROCE_DROP_IP_HEADER },
	{ "IPv6 destination ::ffff:10.0.0.1", ROCE_RC_SEND_ONLY, true, -1, 8, m_v6_mapped, 24,
	  FIX_ALL, 0, ROCE_DROP_IP_HEADER },
	{ "IPv4 total length 1 beyond the frame", ROCE_RC_SEND_ONLY, false, -1, 8,
	  m_add_ip_len, 1, FIX_ALL, 0, ROCE_DROP_IP_LENGTH },
	{ "IPv4 total length 27 (< 20 + UDP)", ROCE_RC_SEND_ONLY, false, -1, 8,
	  m_set16_l3, AT(2, 27), FIX_ALL, 0, ROCE_DROP_IP_LENGTH },
	{ "IPv6 payload length 1 beyond the frame", ROCE_RC_SEND_ONLY, true, -1, 8,
	  m_add_ip_len, 1, FIX_ALL, 0, ROCE_DROP_IP_LENGTH },
	{ "IPv6 payload length 7 (< UDP)", ROCE_RC_SEND_ONLY, true, -1, 8, m_set16_l3,
	  AT(4, 7), FIX_ALL, 0, ROCE_DROP_IP_LENGTH },
	{ "IPv4 MF set", ROCE_RC_SEND_ONLY, false, -1, 8, m_set16_l3, AT(6, 0x2000),
	  FIX_ALL, 0, ROCE_DROP_IP_FRAGMENT },
	{ "IPv4 fragment offset 1, DF", ROCE_RC_SEND_ONLY, false, -1, 8, m_set16_l3,
	  AT(6, 0x4001), FIX_ALL, 0, ROCE_DROP_IP_FRAGMENT },
	{ "IPv4 checksum off by one", ROCE_RC_SEND_ONLY, false, -1, 8, m_xor8_l3,
	  AT(11, 0x01), FIX_NONE, 0, ROCE_DROP_IP_CHECKSUM },
	{ "IPv4 ID changed, ICRC refreshed, checksum not", ROCE_RC_SEND_ONLY, false, -1,
	  8, m_set16_l3, AT(4, 0x1234), FIX_ICRC, 0, ROCE_DROP_IP_CHECKSUM },
	{ "IPv4 protocol 6", ROCE_RC_SEND_ONLY, false, -1, 8, m_set8_l3, AT(9, 6),
	  FIX_ALL, 0, ROCE_DROP_NOT_UDP },
	{ "IPv6 next header 6", ROCE_RC_SEND_ONLY, true, -1, 8, m_set8_l3, AT(6, 6),
	  FIX_ALL, 0, ROCE_DROP_NOT_UDP },
	{ "UDP destination port 4792", ROCE_RC_SEND_ONLY, false, -1, 8, m_set16_l4,
	  AT(2, 4792), FIX_ALL, 0, ROCE_DROP_UDP_PORT },
	{ "UDP destination port 4791 byte-swapped", ROCE_RC_SEND_ONLY, true, -1, 8,
	  m_set16_l4, AT(2, 0xb712), FIX_ALL, 0, ROCE_DROP_UDP_PORT },
	{ "UDP length = IP length - IHL + 4", ROCE_RC_SEND_ONLY, false, -1, 8,
	  m_add_udp_len, 4, FIX_ALL, 0, ROCE_DROP_UDP_LENGTH },
	{ "UDP length = IP length - IHL - 1", ROCE_RC_SEND_ONLY, true, -1, 8,
	  m_add_udp_len, NEG(1), FIX_ALL, 0, ROCE_DROP_UDP_LENGTH },
	{ "UDP and IP agree on 20 bytes: no room for BTH + ICRC", ROCE_RC_SEND_ONLY,
	  false, -1, 8, m_udp_size, 20, FIX_CSUM, 0, ROCE_DROP_UDP_LENGTH },
	{ "TVer 1", ROCE_RC_SEND_ONLY, false, -1, 8, m_or8_bth, AT(1, 0x01), FIX_ALL, 0,
	  ROCE_DROP_BTH_VERSION },
	{ "TVer 15", ROCE_RC_SEND_ONLY, true, 0x6064, 8, m_or8_bth, AT(1, 0x0f),
	  FIX_ALL, 0, ROCE_DROP_BTH_VERSION },
	{ "opcode 0x15", ROCE_RC_SEND_ONLY, false, -1, 8, m_set8_bth, AT(0, 0x15),
	  FIX_ALL, 0, ROCE_DROP_OPCODE },
	{ "opcode 0x40", ROCE_RC_SEND_ONLY, false, -1, 8, m_set8_bth, AT(0, 0x40),
	  FIX_ALL, 0, ROCE_DROP_OPCODE },
	{ "opcode 0xff", ROCE_RC_SEND_ONLY, false, -1, 8, m_set8_bth, AT(0, 0xff),
	  FIX_ALL, 0, ROCE_DROP_OPCODE },
	{ "RC_WRITE_ONLY: RETH fits, ICRC does not", ROCE_RC_WRITE_ONLY, false, -1, 0,
	  m_resize, NEG(4), FIX_CSUM, 0, ROCE_DROP_HEADER_LENGTH },
	{ "RC_WRITE_ONLY: RETH cut", ROCE_RC_WRITE_ONLY, false, -1, 0, m_resize, NEG(12),
	  FIX_ALL, 0, ROCE_DROP_HEADER_LENGTH },
	{ "RC_ATOMIC_ACK: AtomicAckETH cut", ROCE_RC_ATOMIC_ACK, true, -1, 0, m_resize,
	  NEG(8), FIX_ALL, 0, ROCE_DROP_HEADER_LENGTH },
	{ "payload + pad 3 bytes", ROCE_RC_SEND_ONLY, false, -1, 4, m_resize, NEG(1),
	  FIX_ALL, 0, ROCE_DROP_PAD },
	{ "pad 3, no payload", ROCE_RC_SEND_ONLY, false, -1, 0, m_or8_bth, AT(1, 0x30),
	  FIX_ALL, 0, ROCE_DROP_PAD },
	{ "RC_ACK with 4 bytes of payload", ROCE_RC_ACK, false, -1, 0, m_resize, 4,
	  FIX_ALL, 0, ROCE_DROP_PAD },
	{ "CNP with 4 bytes of payload", ROCE_CNP, true, -1, 0, m_resize, 4, FIX_ALL, 0,
	  ROCE_DROP_PAD },
	{ "ICRC byte flipped", ROCE_RC_SEND_ONLY, false, -1, 8, m_xor_end, 2, FIX_NONE, 0,
	  ROCE_DROP_ICRC },
	{ "last pad byte flipped", ROCE_RC_SEND_ONLY, false, -1, 5, m_xor_end, 5,
	  FIX_CSUM, 0, ROCE_DROP_ICRC },
	{ "P_Key changed, ICRC not refreshed", ROCE_RC_SEND_ONLY, true, 0x6064, 8,
	  m_set8_bth, AT(2, 0x7f), FIX_NONE, 0, ROCE_DROP_ICRC },
	{ "ICRC wrong, headers split (frag ends at the payload)", ROCE_RC_SEND_ONLY,
	  false, -1, 8, m_xor_end, 1, FIX_NONE, 54, ROCE_DROP_ICRC },
};

static void test_drop_reasons(void **state)
{
	struct frame *f = xmalloc(sizeof(*f));
	bool seen[ROCE_DROP_MAX] = { false };
	unsigned int i, bad = 0;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(drop_cases); i++) {
		const struct drop_case *dc = &drop_cases[i];
		struct roce_pkt pkt;
		enum roce_drop why = ROCE_DROP_MAX;
		int ret;

		build_frame(f, dc->opcode, dc->v6, dc->vlan, dc->plen);
		dc->mutate(f, dc->arg);
		if (dc->fix & FIX_CSUM)
			frame_fix_csum(f);
		if (dc->fix & FIX_ICRC)
			frame_fix_icrc(f);
		ret = parse_copy(f->b, f->len, dc->split, &pkt, &why);
		if (ret != -EBADMSG || why != dc->why) {
			print_error("5.%02u %s: got %d/%s, want -EBADMSG/%s\n", i + 1, dc->what, ret,
				    ret ? roce_drop_name(why) : "-", roce_drop_name(dc->why));
			bad++;
		}
		seen[dc->why] = true;
	}
	free(f);
	assert_int_equal(bad, 0);
	for (i = 0; i < ROCE_DROP_MAX; i++)
		if (!seen[i])
			fail_msg("no case for drop reason %u (%s)", i, roce_drop_name(i));
}

/* Ethernet padding beyond the IP length is not part of the frame. */
static void test_ethernet_padding(void **state)
{
	struct frame *f = xmalloc(sizeof(*f));
	struct roce_pkt pkt;
	enum roce_drop why;

	(void)state;
	build_frame(f, ROCE_RC_ACK, false, -1, 0);
	assert_int_equal(f->len, 62);
	memset(f->b + 62, 0, 2);
	expect_parse_ok(f->b, 64, &pkt);
	assert_int_equal(pkt.len, 62);
	assert_int_equal(pkt.payload_len, 0);
	assert_int_equal(pkt.h.aeth.syndrome, 0x1f);
	assert_int_equal(pkt.h.aeth.msn, 7);
	/* the padding in a buffer of its own */
	assert_int_equal(parse_copy(f->b, 64, 62, &pkt, &why), 0);
	assert_int_equal(pkt.len, 62);
	/* non-zero padding is still padding */
	memset(f->b + 62, 0xee, 2);
	expect_parse_ok(f->b, 64, &pkt);
	assert_int_equal(pkt.len, 62);

	/* the golden ACK, padded to the Ethernet minimum */
	{
		const struct vector *v = find_vector("rc_ack");

		memset(f->b, 0, sizeof(f->b));
		memcpy(f->b, v->b, v->len);
		expect_parse_ok(f->b, 64, &pkt);
		assert_int_equal(pkt.len, 62);
		assert_int_equal(pkt.icrc, 0x0e8fb0de);
	}
	free(f);
}

/* IPv4 options (IHL 6) are covered by the checksum and the ICRC. */
static void test_ipv4_options(void **state)
{
	struct frame *f = xmalloc(sizeof(*f));
	struct roce_pkt pkt;
	enum roce_drop why;

	(void)state;
	build_frame(f, ROCE_RC_SEND_ONLY, false, -1, 8);
	memmove(f->b + 14 + 24, f->b + 14 + 20, f->len - 34);
	memcpy(f->b + 14 + 20, "\x01\x01\x01\x00", 4);	/* NOP NOP NOP EOL */
	f->b[14] = 0x46;
	f->len += 4;
	m_add_ip_len(f, 4);
	frame_layout(f);
	assert_int_equal(f->l4, 14 + 24);
	frame_fix_csum(f);
	frame_fix_icrc(f);
	assert_int_equal(get_le32(f->b + f->len - 4), ref_icrc(f->b, 14, 24, false, f->len));
	expect_parse_ok(f->b, f->len, &pkt);
	assert_int_equal(pkt.l4_off, 38);
	assert_int_equal(pkt.bth_off, 46);
	assert_int_equal(pkt.payload_len, 8);
	/* an option byte changed, checksum refreshed: the ICRC notices */
	f->b[14 + 20] = 0x07;
	frame_fix_csum(f);
	assert_int_equal(parse_copy(f->b, f->len, 0, &pkt, &why), -EBADMSG);
	assert_int_equal(why, ROCE_DROP_ICRC);
	free(f);
}

/* Reserved bits are ignored on receipt and do not leak into fields:
 * BTH byte 4 resv6, BTH byte 8 resv7, DETH byte 4. */
static void test_reserved_bits(void **state)
{
	struct frame *f = xmalloc(sizeof(*f));
	struct roce_pkt pkt;

	(void)state;
	build_frame(f, ROCE_UD_SEND_ONLY, false, -1, 4);
	f->b[f->bth + 4] |= 0x3f;
	f->b[f->bth + 8] |= 0x7f;
	f->b[f->bth + 12 + 4] = 0xff;
	frame_fix_icrc(f);
	expect_parse_ok(f->b, f->len, &pkt);
	assert_int_equal(pkt.h.fecn, 0);
	assert_int_equal(pkt.h.becn, 0);
	assert_int_equal(pkt.h.ackreq, 1);
	assert_int_equal(pkt.h.dqpn, 0x000abc);
	assert_int_equal(pkt.h.psn, 0x123456);
	assert_int_equal(pkt.h.deth.qkey, 0x80010000);
	assert_int_equal(pkt.h.deth.sqpn, 1);
	/* AckReq clear, its reserved neighbours set */
	f->b[f->bth + 8] = 0x7f;
	frame_fix_icrc(f);
	expect_parse_ok(f->b, f->len, &pkt);
	assert_int_equal(pkt.h.ackreq, 0);
	assert_int_equal(pkt.h.psn, 0x123456);
	free(f);
}

/*
 * Regression: roce_build once summed the payload lengths in 32 bits, so a
 * list of 8 + 0xfffffffc bytes passed every size check as 4 bytes and the
 * copy ran past out[0] (ASan: heap-buffer-overflow). Want -EMSGSIZE.
 */
/* An empty chain is a short frame, not a read of frags[0]. */
static void test_parse_no_frags(void **state)
{
	struct roce_pkt pkt;
	enum roce_drop why = ROCE_DROP_MAX;

	(void)state;
	assert_int_equal(roce_parse(&pkt, NULL, 0, &why), -EBADMSG);
	assert_int_equal(why, ROCE_DROP_SHORT);
}

static void test_build_payload_length_wrap(void **state)
{
	uint8_t *src, *buf;
	struct roce_frag *out, pl[2];
	struct roce_addr a;
	struct roce_hdrs h;
	unsigned int nused = 0;

	(void)state;
	src = xmalloc(4096);
	buf = xmalloc(256);
	out = xmalloc(sizeof(*out));
	memset(src, 0, 4096);
	out->data = buf;
	out->len = 256;
	pl[0] = (struct roce_frag){ src, 8 };
	pl[1] = (struct roce_frag){ src, 0xfffffffcu };
	addr_init(&a, false, -1);
	hdrs_init(&h, ROCE_RC_SEND_ONLY, 0);
	assert_int_equal(roce_build(out, 1, &nused, &a, &h, pl, 2), -EMSGSIZE);
	free(out);
	free(buf);
	free(src);
}

static void test_drop_names(void **state)
{
	unsigned int i, j;

	(void)state;
	for (i = 0; i < ROCE_DROP_MAX; i++) {
		const char *n = roce_drop_name((enum roce_drop)i);

		assert_non_null(n);
		assert_true(n[0] != '\0');
		assert_string_not_equal(n, "?");
		for (j = 0; j < i; j++)
			assert_string_not_equal(n, roce_drop_name((enum roce_drop)j));
	}
	assert_string_equal(roce_drop_name(ROCE_DROP_SHORT), "short");
	assert_string_equal(roce_drop_name(ROCE_DROP_ICRC), "icrc");
	assert_string_equal(roce_drop_name(ROCE_DROP_MAX), "?");
	assert_string_equal(roce_drop_name((enum roce_drop)1000), "?");
}

/* ---- 6. opcode table ---- */

#define F(x) ROCE_F_##x
#define SEG_FIRST F(START)
#define SEG_MID F(MIDDLE)
#define SEG_LAST F(END)
#define SEG_ONLY (F(START) | F(END))
#define RQ_SEND (F(REQ) | F(SEND) | F(PAYLOAD))
#define RQ_WRITE (F(REQ) | F(WRITE) | F(PAYLOAD))
#define RS_READ (F(RESP) | F(READ) | F(PAYLOAD))

/* IBA 1.4 table 38, RC part, by hand; UC is the same for 0x20-0x2b. */
static const struct op_row {
	uint8_t code;
	const char *name;	/* without the RC_/UC_ prefix */
	uint32_t mask;
	uint8_t hdr_len;
} rc_rows[] = {
	{ 0x00, "SEND_FIRST", RQ_SEND | SEG_FIRST, 12 },
	{ 0x01, "SEND_MIDDLE", RQ_SEND | SEG_MID, 12 },
	{ 0x02, "SEND_LAST", RQ_SEND | SEG_LAST, 12 },
	{ 0x03, "SEND_LAST_WITH_IMMEDIATE", RQ_SEND | SEG_LAST | F(IMMDT), 16 },
	{ 0x04, "SEND_ONLY", RQ_SEND | SEG_ONLY, 12 },
	{ 0x05, "SEND_ONLY_WITH_IMMEDIATE", RQ_SEND | SEG_ONLY | F(IMMDT), 16 },
	{ 0x06, "RDMA_WRITE_FIRST", RQ_WRITE | SEG_FIRST | F(RETH), 28 },
	{ 0x07, "RDMA_WRITE_MIDDLE", RQ_WRITE | SEG_MID, 12 },
	{ 0x08, "RDMA_WRITE_LAST", RQ_WRITE | SEG_LAST, 12 },
	{ 0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", RQ_WRITE | SEG_LAST | F(IMMDT), 16 },
	{ 0x0a, "RDMA_WRITE_ONLY", RQ_WRITE | SEG_ONLY | F(RETH), 28 },
	{ 0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", RQ_WRITE | SEG_ONLY | F(RETH) | F(IMMDT), 32 },
	{ 0x0c, "RDMA_READ_REQUEST", F(REQ) | F(READ) | SEG_ONLY | F(RETH), 28 },
	{ 0x0d, "RDMA_READ_RESPONSE_FIRST", RS_READ | SEG_FIRST | F(AETH), 16 },
	{ 0x0e, "RDMA_READ_RESPONSE_MIDDLE", RS_READ | SEG_MID, 12 },
	{ 0x0f, "RDMA_READ_RESPONSE_LAST", RS_READ | SEG_LAST | F(AETH), 16 },
	{ 0x10, "RDMA_READ_RESPONSE_ONLY", RS_READ | SEG_ONLY | F(AETH), 16 },
	{ 0x11, "ACKNOWLEDGE", F(RESP) | F(ACK) | SEG_ONLY | F(AETH), 16 },
	{ 0x12, "ATOMIC_ACKNOWLEDGE", F(RESP) | F(ACK) | F(ATOMIC) | SEG_ONLY | F(AETH) | F(ATMACK),
	  24 },
	{ 0x13, "COMPARE_SWAP", F(REQ) | F(ATOMIC) | SEG_ONLY | F(ATMETH), 40 },
	{ 0x14, "FETCH_ADD", F(REQ) | F(ATOMIC) | SEG_ONLY | F(ATMETH), 40 },
	{ 0x16, "SEND_LAST_WITH_INVALIDATE", RQ_SEND | SEG_LAST | F(IETH), 16 },
	{ 0x17, "SEND_ONLY_WITH_INVALIDATE", RQ_SEND | SEG_ONLY | F(IETH), 16 },
};

static const struct op_row other_rows[] = {
	{ 0x64, "UD_SEND_ONLY", RQ_SEND | SEG_ONLY | F(DETH), 20 },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", RQ_SEND | SEG_ONLY | F(DETH) | F(IMMDT), 24 },
	{ 0x81, "CNP", F(CNP) | F(CNPRSV), 28 },
};

static void check_row(uint8_t code, const char *name, uint8_t qpt, uint32_t mask, uint8_t hdr_len)
{
	const struct roce_opcode_info *op = roce_opcode(code);

	if (!op)
		fail_msg("opcode 0x%02x (%s) missing", code, name);
	assert_string_equal(op->name, name);
	assert_int_equal(op->qpt, qpt);
	if (op->mask != mask)
		fail_msg("%s: mask 0x%x, want 0x%x", name, op->mask, mask);
	assert_int_equal(op->hdr_len, hdr_len);
}

static void test_opcode_table(void **state)
{
	static const struct { uint32_t flag; uint8_t size; } ext[ROCE_EXT_MAX] = {
		[ROCE_EXT_DETH] = { ROCE_F_DETH, 8 },
		[ROCE_EXT_RETH] = { ROCE_F_RETH, 16 },
		[ROCE_EXT_ATMETH] = { ROCE_F_ATMETH, 28 },
		[ROCE_EXT_AETH] = { ROCE_F_AETH, 4 },
		[ROCE_EXT_ATMACK] = { ROCE_F_ATMACK, 8 },
		[ROCE_EXT_IMMDT] = { ROCE_F_IMMDT, 4 },
		[ROCE_EXT_IETH] = { ROCE_F_IETH, 4 },
	};
	unsigned int code, i, named = 0, rc = 0, uc = 0, ud = 0, cnp = 0;
	char name[64];

	(void)state;
	/* the hand-written table */
	for (i = 0; i < ARRAY_SIZE(rc_rows); i++) {
		snprintf(name, sizeof(name), "RC_%s", rc_rows[i].name);
		check_row(rc_rows[i].code, name, ROCE_QPT_RC, rc_rows[i].mask, rc_rows[i].hdr_len);
		if (rc_rows[i].code > 0x0b)
			continue;
		snprintf(name, sizeof(name), "UC_%s", rc_rows[i].name);
		check_row((uint8_t)(rc_rows[i].code + 0x20), name, ROCE_QPT_UC, rc_rows[i].mask,
			  rc_rows[i].hdr_len);
	}
	check_row(other_rows[0].code, other_rows[0].name, ROCE_QPT_UD, other_rows[0].mask,
		  other_rows[0].hdr_len);
	check_row(other_rows[1].code, other_rows[1].name, ROCE_QPT_UD, other_rows[1].mask,
		  other_rows[1].hdr_len);
	check_row(other_rows[2].code, other_rows[2].name, ROCE_QPT_CNP, other_rows[2].mask,
		  other_rows[2].hdr_len);

	/* invariants over all 256 entries */
	for (code = 0; code < 256; code++) {
		const struct roce_opcode_info *op = &roce_opcodes[code];
		uint32_t m = op->mask, pos = 12, seg = m & (F(START) | F(MIDDLE) | F(END));
		int kinds = !!(m & F(REQ)) + !!(m & F(RESP)) + !!(m & F(CNP));
		int prev = -1;
		unsigned int e;

		if (!op->name) {
			assert_null(roce_opcode((uint8_t)code));
			assert_int_equal(op->mask, 0);
			assert_int_equal(op->hdr_len, 0);
			continue;
		}
		named++;
		assert_ptr_equal(roce_opcode((uint8_t)code), op);
		if (kinds != 1)
			fail_msg("%s: %d of REQ/RESP/CNP", op->name, kinds);
		if (m & F(CNP))
			assert_int_equal(seg, 0);
		else
			assert_true(seg == F(START) || seg == F(MIDDLE) || seg == F(END) ||
				    seg == (F(START) | F(END)));
		/* IMM / INV / ACK in the name <-> the flag */
		assert_int_equal(!!strstr(op->name, "IMMEDIATE"), !!(m & F(IMMDT)));
		assert_int_equal(!!strstr(op->name, "INVALIDATE"), !!(m & F(IETH)));
		assert_int_equal(!!strstr(op->name, "ACKNOWLEDGE"), !!(m & F(ACK)));
		assert_int_equal(!!strstr(op->name, "_MIDDLE"), seg == F(MIDDLE));
		assert_int_equal(!!strstr(op->name, "_FIRST"), seg == F(START));
		/* offsets strictly increasing in wire order, lengths adding up */
		for (e = 0; e < ROCE_EXT_MAX; e++) {
			if (!(m & ext[e].flag))
				continue;
			if ((int)op->off[e] <= prev || op->off[e] != pos)
				fail_msg("%s: ext %u at %u, want %u", op->name, e, op->off[e], pos);
			prev = op->off[e];
			pos += ext[e].size;
		}
		assert_int_equal(op->hdr_len, pos + (m & F(CNPRSV) ? ROCE_CNP_RESERVED : 0));
		switch (op->qpt) {
		case ROCE_QPT_RC:
			assert_true(code <= 0x14 || code == 0x16 || code == 0x17);
			assert_int_equal(strncmp(op->name, "RC_", 3), 0);
			rc++;
			break;
		case ROCE_QPT_UC:
			assert_true(code >= 0x20 && code <= 0x2b);
			assert_int_equal(strncmp(op->name, "UC_", 3), 0);
			uc++;
			break;
		case ROCE_QPT_UD:
			assert_true(code == 0x64 || code == 0x65);
			ud++;
			break;
		case ROCE_QPT_CNP:
			assert_int_equal(code, 0x81);
			cnp++;
			break;
		default:
			fail_msg("%s: qpt %u", op->name, op->qpt);
		}
	}
	/* RC 0x00-0x14 (21) + 0x16, 0x17; UC 0x20-0x2b; UD 0x64, 0x65; CNP 0x81 */
	assert_int_equal(rc, 21 + 2);
	assert_int_equal(uc, 12);
	assert_int_equal(ud, 2);
	assert_int_equal(cnp, 1);
	assert_int_equal(named, 23 + 12 + 2 + 1);
	assert_int_equal(ARRAY_SIZE(rc_rows), 23);
}

/* ---- 7. accessors ---- */

static void test_accessors(void **state)
{
	uint8_t buf[48];
	unsigned int i;

	(void)state;
	/* byte order helpers at odd addresses; the neighbours stay */
	memset(buf, 0xee, sizeof(buf));
	put16(buf + 1, 0xa1b2);
	assert_memory_equal(buf, "\xee\xa1\xb2\xee", 4);
	assert_int_equal(get16(buf + 1), 0xa1b2);
	put24(buf + 3, 0xffc1d2e3);	/* low 24 bits only */
	assert_memory_equal(buf + 2, "\xb2\xc1\xd2\xe3\xee", 5);
	assert_int_equal(get24(buf + 3), 0xc1d2e3);
	put32(buf + 7, 0x8192a3b4);
	assert_memory_equal(buf + 6, "\xee\x81\x92\xa3\xb4\xee", 6);
	assert_int_equal(get32(buf + 7), 0x8192a3b4);
	put64(buf + 13, 0xf1e2d3c4b5a69788ull);
	assert_memory_equal(buf + 12, "\xee\xf1\xe2\xd3\xc4\xb5\xa6\x97\x88\xee", 10);
	assert_int_equal(get64(buf + 13), 0xf1e2d3c4b5a69788ull);
	{
		static const uint64_t v64[] = { 0, 1, 0x80, 0xff, 0x8000, 0xffff, 0x800000,
						0xffffff, 0x80000000u, 0xffffffffu,
						0x8000000000000000ull, UINT64_MAX };

		for (i = 0; i < ARRAY_SIZE(v64); i++) {
			uint8_t *p = buf + 1 + (i % 7) * 3;	/* odd and even offsets */

			put16(p, (uint16_t)v64[i]);
			assert_int_equal(get16(p), (uint16_t)v64[i]);
			put24(p, (uint32_t)v64[i]);
			assert_int_equal(get24(p), v64[i] & 0xffffff);
			put32(p, (uint32_t)v64[i]);
			assert_int_equal(get32(p), (uint32_t)v64[i]);
			put64(p, v64[i]);
			assert_int_equal(get64(p), v64[i]);
		}
	}

	/* BTH, at an odd address */
	{
		struct bth *h = (struct bth *)(void *)(buf + 1);

		memset(buf, 0xee, sizeof(buf));
		bth_set(h, 0xff, 1, 1, 3, 0xffff, 1, 1, 0xffffff, 1, 0xffffff);
		assert_memory_equal(h->b, "\xff\xf0\xff\xff\xc0\xff\xff\xff\x80\xff\xff\xff", 12);
		assert_int_equal(buf[0], 0xee);
		assert_int_equal(buf[13], 0xee);
		assert_int_equal(bth_opcode(h), 0xff);
		assert_int_equal(bth_se(h), 1);
		assert_int_equal(bth_mig(h), 1);
		assert_int_equal(bth_pad(h), 3);
		assert_int_equal(bth_tver(h), 0);
		assert_int_equal(bth_pkey(h), 0xffff);
		assert_int_equal(bth_fecn(h), 1);
		assert_int_equal(bth_becn(h), 1);
		assert_int_equal(bth_dqpn(h), 0xffffff);
		assert_int_equal(bth_ackreq(h), 1);
		assert_int_equal(bth_psn(h), 0xffffff);

		bth_set(h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		assert_memory_equal(h->b, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
		assert_int_equal(bth_se(h) | bth_mig(h) | bth_fecn(h) | bth_becn(h) | bth_ackreq(h), 0);
		assert_int_equal(bth_pad(h) | bth_dqpn(h) | bth_psn(h) | bth_pkey(h), 0);

		/* one flag at a time; wide values cut to their fields */
		bth_set(h, 0x04, 2, 0, 7, 0x8001, 0, 0, 0xff000333, 0, 0xff23d43e);
		assert_memory_equal(h->b, "\x04\xb0\x80\x01\x00\x00\x03\x33\x00\x23\xd4\x3e", 12);
		assert_int_equal(bth_se(h), 1);
		assert_int_equal(bth_mig(h), 0);
		assert_int_equal(bth_pad(h), 3);
		assert_int_equal(bth_dqpn(h), 0x333);
		assert_int_equal(bth_psn(h), 0x23d43e);
		bth_set(h, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0);
		assert_int_equal(h->b[1], 0x50);
		assert_int_equal(h->b[4], 0x80);
		assert_int_equal(bth_fecn(h), 1);
		assert_int_equal(bth_becn(h), 0);
		assert_int_equal(bth_mig(h), 1);
		assert_int_equal(bth_pad(h), 1);
		bth_set(h, 0, 0, 0, 2, 0, 0, 1, 0, 1, 0);
		assert_int_equal(h->b[1], 0x20);
		assert_int_equal(h->b[4], 0x40);
		assert_int_equal(h->b[8], 0x80);
		assert_int_equal(bth_fecn(h), 0);
		assert_int_equal(bth_becn(h), 1);
		assert_int_equal(bth_ackreq(h), 1);
		assert_int_equal(bth_pad(h), 2);
		h->b[1] = 0x0f;
		assert_int_equal(bth_tver(h), 15);
		assert_int_equal(bth_pad(h), 0);
	}

	/* extension headers, at odd addresses */
	{
		struct reth *r = (struct reth *)(void *)(buf + 3);
		struct aeth *ae = (struct aeth *)(void *)(buf + 1);
		struct atomic_eth *at = (struct atomic_eth *)(void *)(buf + 5);
		struct atomic_ack_eth *aa = (struct atomic_ack_eth *)(void *)(buf + 7);
		struct deth *d = (struct deth *)(void *)(buf + 9);
		struct immdt *im = (struct immdt *)(void *)(buf + 11);
		struct ieth *ie = (struct ieth *)(void *)(buf + 13);

		reth_set(r, 0x0102030405060708ull, 0x090a0b0c, 0xffffffff);
		assert_memory_equal(r->b, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"
				    "\xff\xff\xff\xff", 16);
		assert_int_equal(reth_va(r), 0x0102030405060708ull);
		assert_int_equal(reth_rkey(r), 0x090a0b0c);
		assert_int_equal(reth_len(r), 0xffffffff);

		aeth_set(ae, 0xff, 0xffffff);
		assert_memory_equal(ae->b, "\xff\xff\xff\xff", 4);
		aeth_set(ae, 0x60, 0x123456);
		assert_int_equal(aeth_syndrome(ae), 0x60);
		assert_int_equal(aeth_msn(ae), 0x123456);

		atomic_eth_set(at, UINT64_MAX, 0x80000001, 0x8000000000000001ull, 1);
		assert_int_equal(atomic_eth_va(at), UINT64_MAX);
		assert_int_equal(atomic_eth_rkey(at), 0x80000001);
		assert_int_equal(atomic_eth_swap_add(at), 0x8000000000000001ull);
		assert_int_equal(atomic_eth_compare(at), 1);
		assert_memory_equal(at->b + 12, "\x80\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\x01", 16);

		atomic_ack_eth_set(aa, 0xfedcba9876543210ull);
		assert_memory_equal(aa->b, "\xfe\xdc\xba\x98\x76\x54\x32\x10", 8);
		assert_int_equal(atomic_ack_eth_orig(aa), 0xfedcba9876543210ull);

		memset(d, 0xee, sizeof(*d));
		deth_set(d, 0xffffffff, 0xffffffff);
		assert_memory_equal(d->b, "\xff\xff\xff\xff\x00\xff\xff\xff", 8);
		assert_int_equal(deth_qkey(d), 0xffffffff);
		assert_int_equal(deth_sqpn(d), 0xffffff);

		immdt_set(im, htonl(0x01020304));	/* kept in network order */
		assert_memory_equal(im->b, "\x01\x02\x03\x04", 4);
		assert_int_equal(ntohl(immdt_get(im)), 0x01020304);

		ieth_set(ie, 0xdeadbeef);
		assert_memory_equal(ie->b, "\xde\xad\xbe\xef", 4);
		assert_int_equal(ieth_rkey(ie), 0xdeadbeef);
	}

	/* roce_header_len: Ethernet + [VLAN] + IP + UDP + the opcode's headers */
	{
		struct roce_addr a;

		addr_init(&a, false, -1);
		assert_int_equal(roce_header_len(&a, ROCE_RC_SEND_ONLY), 14 + 20 + 8 + 12);
		assert_int_equal(roce_header_len(&a, ROCE_RC_COMPARE_SWAP), 14 + 20 + 8 + 40);
		addr_init(&a, true, 0x6064);
		assert_int_equal(roce_header_len(&a, ROCE_UD_SEND_ONLY_IMM), 18 + 40 + 8 + 24);
		assert_int_equal(roce_header_len(&a, ROCE_CNP), 18 + 40 + 8 + 28);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_frames),
		cmocka_unit_test(test_byte_flips),
		cmocka_unit_test(test_roundtrip_all_opcodes),
		cmocka_unit_test(test_roundtrip_field_widths),
		cmocka_unit_test(test_multibuffer),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_drop_reasons),
		cmocka_unit_test(test_ethernet_padding),
		cmocka_unit_test(test_ipv4_options),
		cmocka_unit_test(test_reserved_bits),
		cmocka_unit_test(test_build_payload_length_wrap),
		cmocka_unit_test(test_parse_no_frags),
		cmocka_unit_test(test_drop_names),
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_accessors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
