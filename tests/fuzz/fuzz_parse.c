// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the RoCEv2 parser (daemon/roce/codec.c), `make fuzz`.
 *
 * Input: control bytes, then the frame.
 *   byte 0: bits 0-1  fragments - 1 (1..4 buffers)
 *           bit 2     fix the lengths: IP and UDP lengths to the frame's end
 *           bit 3     fix the checksums: IPv4 header checksum and ICRC
 *           bits 4-7  chunk size - 1 for the rebuilt chain (1..16 bytes)
 *   then, for each fragment but the last, one byte: its length (fragment 0:
 *   32 + the byte, so it usually holds all headers; the others: the byte,
 *   0 included). The last fragment takes what is left. Each fragment is
 *   malloc'ed on its own, exactly its size, so ASan sees any overread.
 *   The fix-ups let mutations of any field get past the length and ICRC
 *   checks, so the fuzzer reaches every opcode's layout, not only the seeds'.
 *
 * For an accepted frame: the parse invariants hold; the payload copied out
 * through the chain equals the frame's bytes; rebuilding from the parsed view
 * gives the input back (every field the view carries, and byte for byte when
 * the input sets none of the bits the view does not carry); the rebuilt
 * frame parses to the same view; building into a chain of small buffers from
 * a split payload gives the same bytes.
 *
 * (It found roce_parse accepting IPv6 headers with IPv4-mapped addresses,
 * which the codec otherwise takes for IPv4; those are now dropped.)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "icrc.h"

#define MAX_FRAGS 4

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bits of the frame the parsed view does not carry, so a rebuild writes its
 * own value, canon[i], whatever the input had: free[i] for bits the ICRC
 * covers, free_nocrc[i] for those it masks. derived[i] marks the IPv4
 * checksum and the ICRC. */
struct masks {
	uint8_t *free, *free_nocrc, *canon, *derived;
};

static void mark_masks(const struct roce_pkt *pkt, struct masks *m)
{
	uint32_t bth = pkt->bth_off, i;
	const struct roce_opcode_info *op = pkt->op;

	if (!pkt->ipv6) {
		m->free[pkt->l3_off + 6] = 0xc0;	/* reserved bit, DF */
		m->canon[pkt->l3_off + 6] = 0x40;	/* DF set */
		m->derived[pkt->l3_off + 10] = m->derived[pkt->l3_off + 11] = 1;
	}
	m->free_nocrc[pkt->l4_off + 6] = m->free_nocrc[pkt->l4_off + 7] = 0xff; /* UDP csum */
	m->free_nocrc[bth + 4] = 0x3f;		/* resv6 */
	m->free[bth + 8] = 0x7f;		/* resv7 */
	if (op->mask & ROCE_F_DETH)
		m->free[bth + op->off[ROCE_EXT_DETH] + 4] = 0xff;
	if (op->mask & ROCE_F_CNPRSV)
		memset(m->free + bth + 12, 0xff, ROCE_CNP_RESERVED);
	for (i = 0; i < pkt->h.pad; i++)
		m->free[pkt->payload_off + pkt->payload_len + i] = 0xff;
	for (i = pkt->len - ROCE_ICRC_LEN; i < pkt->len; i++)
		m->derived[i] = 1;
}

/* Same fields (roce_parse zeroes the struct first: padding compares too). */
static bool same_view(const struct roce_pkt *a, const struct roce_pkt *b, uint32_t opts)
{
	return !memcmp(&a->addr, &b->addr, sizeof(a->addr)) && a->ipv6 == b->ipv6 &&
	       !memcmp(&a->h, &b->h, sizeof(a->h)) && a->op == b->op &&
	       a->payload_len == b->payload_len && a->len == b->len + opts;
}

/* Make the lengths and/or checksums of a contiguous frame right, as far as
 * its headers can be found; leave it alone otherwise. */
static void fix_frame(uint8_t *p, uint32_t n, bool lengths, bool sums)
{
	uint32_t off = 14, ihl, end, l4, crc;
	uint16_t type;
	bool v6;

	if (n < 18)
		return;
	type = get16(p + 12);
	if (type == ETH_TYPE_VLAN) {
		type = get16(p + 16);
		off = 18;
	}
	if ((type != ETH_TYPE_IPV4 && type != ETH_TYPE_IPV6) || n < off + 20)
		return;
	v6 = type == ETH_TYPE_IPV6;
	ihl = v6 ? 40 : (p[off] & 0x0f) * 4u;
	if (ihl < 20 || n < off + ihl + 8 || n - off > 0xffff)
		return;
	l4 = off + ihl;
	if (lengths) {
		put16(p + (v6 ? off + 4 : off + 2), (uint16_t)(n - (v6 ? l4 : off)));
		put16(p + l4 + 4, (uint16_t)(n - l4));
	}
	end = v6 ? l4 + get16(p + off + 4) : off + get16(p + off + 2);
	if (sums && !v6) {
		put16(p + off + 10, 0);
		put16(p + off + 10, roce_ipv4_checksum(p + off, ihl));
	}
	if (!sums || end > n || end < l4 + 8 + 12 + ROCE_ICRC_LEN)
		return;
	crc = roce_icrc_masked_headers(p + off, ihl, v6, 12);
	crc = roce_crc32(crc, p + l4 + 20, end - ROCE_ICRC_LEN - (l4 + 20));
	p[end - 4] = (uint8_t)crc;
	p[end - 3] = (uint8_t)(crc >> 8);
	p[end - 2] = (uint8_t)(crc >> 16);
	p[end - 1] = (uint8_t)(crc >> 24);
}

static void check_rebuild(const struct roce_pkt *pkt, const uint8_t *in, const uint8_t *payload,
			  unsigned int chunk)
{
	struct roce_frag out, pay[2], chain[64], back;
	struct roce_pkt again;
	struct masks m;
	enum roce_drop why;
	unsigned int nused = 0, n, i;
	/* IPv4 options are not rebuilt: the rebuilt frame is that much shorter. */
	uint32_t opts = pkt->l4_off - pkt->l3_off - (pkt->ipv6 ? 40 : 20);
	uint32_t len = pkt->len - opts, hdrs, off, cut;
	bool free_crc_same = true, flags_same = true;
	uint8_t *b, *joined;
	int ret;

	out.data = malloc(len);
	out.len = len;
	pay[0] = (struct roce_frag){ (uint8_t *)payload, pkt->payload_len };
	ret = roce_build(&out, 1, &nused, &pkt->addr, &pkt->h, pay, pkt->payload_len ? 1 : 0);
	CHECK(ret == (int)len);
	CHECK(nused == 1);
	b = out.data;

	/* The rebuilt frame parses to the same view. */
	back = (struct roce_frag){ b, len };
	CHECK(roce_parse(&again, &back, 1, &why) == 0);
	CHECK(same_view(pkt, &again, opts));
	CHECK(!memcmp(b + again.payload_off, payload, pkt->payload_len));

	/* Byte for byte, when the IPv4 header has no options (a rebuild never
	 * writes any). */
	if (!opts) {
		m.free = calloc(len, 1);
		m.free_nocrc = calloc(len, 1);
		m.canon = calloc(len, 1);
		m.derived = calloc(len, 1);
		mark_masks(pkt, &m);
		for (i = 0; i < len; i++) {
			uint8_t diff = in[i] ^ b[i], fr = m.free[i] | m.free_nocrc[i];

			if (m.derived[i])
				continue;
			CHECK(!(diff & ~fr));		/* what the view carries */
			CHECK((b[i] & fr) == m.canon[i]);	/* the rest: canonical */
			if (diff & m.free[i]) {
				free_crc_same = false;
				if (i < pkt->l4_off)
					flags_same = false;
			}
		}
		if (!pkt->ipv6 && flags_same)	/* same header: same checksum */
			CHECK(!memcmp(in + pkt->l3_off + 10, b + pkt->l3_off + 10, 2));
		if (free_crc_same)		/* same covered bytes: same ICRC */
			CHECK(!memcmp(in + len - ROCE_ICRC_LEN, b + len - ROCE_ICRC_LEN,
				      ROCE_ICRC_LEN));
		free(m.free);
		free(m.free_nocrc);
		free(m.canon);
		free(m.derived);
	}

	/* Into a chain: the headers' buffer, then chunk-sized ones, from a
	 * payload in two pieces. Same bytes. */
	hdrs = roce_header_len(&pkt->addr, pkt->h.opcode);
	CHECK(hdrs == pkt->payload_off - opts);
	n = 0;
	for (off = 0; off < len && n < 64; n++) {
		uint32_t take = n ? chunk : hdrs;

		if (n == 63 || take > len - off)
			take = len - off;
		chain[n].data = malloc(take ? take : 1);
		chain[n].len = take;
		off += take;
	}
	cut = pkt->payload_len / 3;
	pay[0] = (struct roce_frag){ (uint8_t *)payload, cut };
	pay[1] = (struct roce_frag){ (uint8_t *)payload + cut, pkt->payload_len - cut };
	ret = roce_build(chain, n, &nused, &pkt->addr, &pkt->h, pay, pkt->payload_len ? 2 : 0);
	CHECK(ret == (int)len);
	CHECK(nused >= 1 && nused <= n);
	joined = malloc(len);
	for (off = 0, i = 0; i < n; i++) {
		memcpy(joined + off, chain[i].data, chain[i].len);
		off += chain[i].len;
		free(chain[i].data);
	}
	CHECK(!memcmp(joined, b, len));
	free(joined);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_frag frags[MAX_FRAGS];
	unsigned int nfrags, i, chunk;
	uint8_t *frame;
	struct roce_pkt pkt;
	enum roce_drop why;
	uint32_t flen, off;
	uint8_t *payload;
	uint32_t lens[MAX_FRAGS];

	if (size < 1)
		return 0;
	nfrags = 1 + (data[0] & 3);
	chunk = 1 + (data[0] >> 4);
	if (size < nfrags)
		return 0;
	flen = (uint32_t)(size - nfrags);
	if (flen > 65535 + 64)
		return 0;
	frame = malloc(flen ? flen : 1);
	memcpy(frame, data + nfrags, flen);
	fix_frame(frame, flen, data[0] & 4, data[0] & 8);
	for (off = 0, i = 0; i < nfrags; i++) {
		uint32_t want = i == nfrags - 1 ? flen - off : data[1 + i] + (i ? 0u : 32u);

		lens[i] = want < flen - off ? want : flen - off;
		off += lens[i];
	}
	for (off = 0, i = 0; i < nfrags; i++) {
		frags[i].data = malloc(lens[i] ? lens[i] : 1);
		frags[i].len = lens[i];
		memcpy(frags[i].data, frame + off, lens[i]);
		off += lens[i];
	}

	if (roce_parse(&pkt, frags, nfrags, &why)) {
		CHECK(why < ROCE_DROP_MAX);
		CHECK(strcmp(roce_drop_name(why), "?"));
		goto out;
	}
	CHECK(pkt.op != NULL);
	CHECK(pkt.op == roce_opcode(pkt.h.opcode));
	CHECK(pkt.payload_off + pkt.payload_len + pkt.h.pad + ROCE_ICRC_LEN == pkt.len);
	CHECK(pkt.len <= flen);
	CHECK(pkt.payload_off == pkt.bth_off + pkt.op->hdr_len);
	CHECK(pkt.payload_off <= frags[0].len);
	CHECK((pkt.payload_len + pkt.h.pad) % 4 == 0);
	CHECK(pkt.h.pad <= 3);
	CHECK(pkt.payload_len == 0 || (pkt.op->mask & ROCE_F_PAYLOAD));
	CHECK(pkt.h.dqpn <= ROCE_QPN_MASK && pkt.h.psn <= ROCE_PSN_MASK);
	CHECK(pkt.icrc == (uint32_t)(frame[pkt.len - 4] | frame[pkt.len - 3] << 8 |
				     frame[pkt.len - 2] << 16 | (uint32_t)frame[pkt.len - 1] << 24));

	payload = malloc(pkt.payload_len ? pkt.payload_len : 1);
	CHECK(roce_pkt_copy_payload(&pkt, 0, payload, pkt.payload_len) == 0);
	CHECK(!memcmp(payload, frame + pkt.payload_off, pkt.payload_len));
	if (pkt.payload_len > 1) {	/* a piece from the middle */
		uint8_t two[2];

		CHECK(roce_pkt_copy_payload(&pkt, pkt.payload_len - 2, two, 2) == 0);
		CHECK(!memcmp(two, frame + pkt.payload_off + pkt.payload_len - 2, 2));
	}
	CHECK(roce_pkt_copy_payload(&pkt, pkt.payload_len, payload, 1) == -ERANGE);
	CHECK(roce_pkt_copy_payload(&pkt, 1, payload, UINT32_MAX) == -ERANGE);

	CHECK(!pkt.ipv6 || (!roce_gid_is_v4(pkt.addr.sgid) && !roce_gid_is_v4(pkt.addr.dgid)));
	check_rebuild(&pkt, frame, payload, chunk);
	free(payload);
out:
	for (i = 0; i < nfrags; i++)
		free(frags[i].data);
	free(frame);
	return 0;
}
