// SPDX-License-Identifier: GPL-2.0-only
/*
 * RoCEv2 frame build and parse. Parse checks run in one fixed order, each
 * failure naming its own reason; the ICRC, the costliest, runs last.
 */
#include <errno.h>
#include <string.h>

#include "codec.h"
#include "icrc.h"

static const char *const drop_names[ROCE_DROP_MAX] = {
	[ROCE_DROP_SHORT] = "short",
	[ROCE_DROP_ETHERTYPE] = "ethertype",
	[ROCE_DROP_IP_HEADER] = "ip_header",
	[ROCE_DROP_IP_LENGTH] = "ip_length",
	[ROCE_DROP_IP_FRAGMENT] = "ip_fragment",
	[ROCE_DROP_IP_CHECKSUM] = "ip_checksum",
	[ROCE_DROP_NOT_UDP] = "not_udp",
	[ROCE_DROP_UDP_PORT] = "udp_port",
	[ROCE_DROP_UDP_LENGTH] = "udp_length",
	[ROCE_DROP_BTH_VERSION] = "bth_version",
	[ROCE_DROP_OPCODE] = "opcode",
	[ROCE_DROP_HEADER_LENGTH] = "header_length",
	[ROCE_DROP_PAD] = "pad",
	[ROCE_DROP_ICRC] = "icrc",
};

const char *roce_drop_name(enum roce_drop d)
{
	return d < ROCE_DROP_MAX ? drop_names[d] : "?";
}

uint16_t roce_ipv4_checksum(const uint8_t *h, unsigned int len)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < len; i += 2)
		sum += get16(h + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A position in a chain of buffers. */
struct cursor {
	const struct roce_frag *f;
	unsigned int n, i;
	uint32_t off;		/* within f[i] */
};

/* Move to absolute offset pos; fails if the chain is shorter. */
static int cursor_seek(struct cursor *c, const struct roce_frag *f, unsigned int n, uint32_t pos)
{
	c->f = f;
	c->n = n;
	for (c->i = 0; c->i < n; c->i++) {
		if (pos < f[c->i].len || (pos == f[c->i].len && c->i + 1 == n)) {
			c->off = pos;
			return 0;
		}
		pos -= f[c->i].len;
	}
	return -EMSGSIZE;
}

/* Read (src == NULL) or write len bytes at the cursor, folding them into *crc
 * when crc is given. The caller has checked the chain is long enough. */
static void cursor_io(struct cursor *c, uint8_t *dst, const uint8_t *src, uint32_t len,
		      uint32_t *crc)
{
	while (len) {
		uint32_t room = c->f[c->i].len - c->off, n = len < room ? len : room;
		uint8_t *here = c->f[c->i].data + c->off;

		if (!n) {	/* this buffer is full: next one */
			c->i++;
			c->off = 0;
			continue;
		}
		if (src) {
			if (crc)
				*crc = roce_crc32(*crc, src, n); /* while src is hot */
			memcpy(here, src, n);
			src += n;
		} else {
			if (crc)
				*crc = roce_crc32(*crc, here, n);
			if (dst) {
				memcpy(dst, here, n);
				dst += n;
			}
		}
		c->off += n;
		len -= n;
	}
}

/* 64-bit: a caller's scatter list may add up past 4 GiB. */
static uint64_t frags_len(const struct roce_frag *f, unsigned int n)
{
	uint64_t len = 0;

	while (n--)
		len += f[n].len;
	return len;
}

static void parse_ext(struct roce_pkt *pkt, const uint8_t *bth)
{
	const struct roce_opcode_info *op = pkt->op;
	struct roce_hdrs *h = &pkt->h;
	const void *x;

	if (op->mask & ROCE_F_DETH) {
		x = bth + op->off[ROCE_EXT_DETH];
		h->deth.qkey = deth_qkey(x);
		h->deth.sqpn = deth_sqpn(x);
	}
	if (op->mask & ROCE_F_RETH) {
		x = bth + op->off[ROCE_EXT_RETH];
		h->reth.va = reth_va(x);
		h->reth.rkey = reth_rkey(x);
		h->reth.len = reth_len(x);
	}
	if (op->mask & ROCE_F_ATMETH) {
		x = bth + op->off[ROCE_EXT_ATMETH];
		h->atomic.va = atomic_eth_va(x);
		h->atomic.rkey = atomic_eth_rkey(x);
		h->atomic.swap_add = atomic_eth_swap_add(x);
		h->atomic.compare = atomic_eth_compare(x);
	}
	if (op->mask & ROCE_F_AETH) {
		x = bth + op->off[ROCE_EXT_AETH];
		h->aeth.syndrome = aeth_syndrome(x);
		h->aeth.msn = aeth_msn(x);
	}
	if (op->mask & ROCE_F_ATMACK)
		h->atomic_orig = atomic_ack_eth_orig((const void *)(bth + op->off[ROCE_EXT_ATMACK]));
	if (op->mask & ROCE_F_IMMDT)
		h->imm = immdt_get((const void *)(bth + op->off[ROCE_EXT_IMMDT]));
	if (op->mask & ROCE_F_IETH)
		h->ieth_rkey = ieth_rkey((const void *)(bth + op->off[ROCE_EXT_IETH]));
}

#define DROP(reason) do { *why = (reason); return -EBADMSG; } while (0)

static int parse(struct roce_pkt *pkt, const struct roce_frag *frags, unsigned int nfrags,
		 enum roce_drop *why, bool check_icrc)
{
	const uint8_t *p = nfrags ? frags[0].data : NULL, *ip, *udp, *bth;
	uint32_t first = nfrags ? frags[0].len : 0, total, off = 14, end, ip_len, hdr_end, body;
	uint8_t stored[ROCE_ICRC_LEN];
	struct cursor c;
	uint32_t crc;
	uint16_t type;

	memset(pkt, 0, sizeof(*pkt));
	pkt->frags = frags;
	pkt->nfrags = nfrags;
	pkt->addr.vlan = -1;
	if (!nfrags || first < off)
		DROP(ROCE_DROP_SHORT);
	/* A frame is at most 64 KiB of IP; longer chains are cut to that. */
	total = frags_len(frags, nfrags) > 0x20000 ? 0x20000 : (uint32_t)frags_len(frags, nfrags);
	memcpy(pkt->addr.dmac, p, 6);
	memcpy(pkt->addr.smac, p + 6, 6);
	type = get16(p + 12);
	if (type == ETH_TYPE_VLAN) {
		if (first < off + 4)
			DROP(ROCE_DROP_SHORT);
		pkt->addr.vlan = get16(p + 14);
		type = get16(p + 16);
		off += 4;
	}
	pkt->l3_off = off;
	ip = p + off;
	if (type == ETH_TYPE_IPV4) {
		if (first < off + 20)
			DROP(ROCE_DROP_SHORT);
		ip_len = (ip[0] & 0x0f) * 4u;
		if (ip[0] >> 4 != 4 || ip_len < 20)
			DROP(ROCE_DROP_IP_HEADER);
		if (first < off + ip_len)
			DROP(ROCE_DROP_SHORT);
		end = off + get16(ip + 2);
		if (end > total || end < off + ip_len + sizeof(struct udp_hdr))
			DROP(ROCE_DROP_IP_LENGTH);
		if (get16(ip + 6) & 0x3fff)	/* MF or a fragment offset */
			DROP(ROCE_DROP_IP_FRAGMENT);
		if (roce_ipv4_checksum(ip, ip_len))
			DROP(ROCE_DROP_IP_CHECKSUM);
		if (ip[9] != 17)
			DROP(ROCE_DROP_NOT_UDP);
		pkt->addr.tclass = ip[1];
		pkt->addr.hop_limit = ip[8];
		pkt->addr.ip_id = get16(ip + 4);
		roce_gid_from_v4(pkt->addr.sgid, ip + 12);
		roce_gid_from_v4(pkt->addr.dgid, ip + 16);
	} else if (type == ETH_TYPE_IPV6) {
		ip_len = 40;
		if (first < off + ip_len)
			DROP(ROCE_DROP_SHORT);
		if (ip[0] >> 4 != 6)
			DROP(ROCE_DROP_IP_HEADER);
		/* An IPv4-mapped address would pass for IPv4 (RFC 4291 2.5.5.2:
		 * never on the wire) and be steered to an IPv4 GID's owner. */
		if (roce_gid_is_v4(ip + 8) || roce_gid_is_v4(ip + 24))
			DROP(ROCE_DROP_IP_HEADER);
		end = off + ip_len + get16(ip + 4);
		if (end > total || end < off + ip_len + sizeof(struct udp_hdr))
			DROP(ROCE_DROP_IP_LENGTH);
		if (ip[6] != 17)	/* RoCEv2: UDP right after the fixed header */
			DROP(ROCE_DROP_NOT_UDP);
		pkt->ipv6 = true;
		pkt->addr.tclass = (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
		pkt->addr.flow_label = (uint32_t)(ip[1] & 0x0f) << 16 | get16(ip + 2);
		pkt->addr.hop_limit = ip[7];
		memcpy(pkt->addr.sgid, ip + 8, 16);
		memcpy(pkt->addr.dgid, ip + 24, 16);
	} else {
		DROP(ROCE_DROP_ETHERTYPE);
	}

	pkt->l4_off = off + ip_len;
	udp = p + pkt->l4_off;
	if (first < pkt->l4_off + sizeof(struct udp_hdr))
		DROP(ROCE_DROP_SHORT);
	if (get16(udp + 2) != ROCE_UDP_PORT)
		DROP(ROCE_DROP_UDP_PORT);
	/* Source port 0 is legal: ConnectX sends its CNPs from port 0. */
	if (get16(udp + 4) != end - pkt->l4_off ||
	    end - pkt->l4_off < sizeof(struct udp_hdr) + sizeof(struct bth) + ROCE_ICRC_LEN)
		DROP(ROCE_DROP_UDP_LENGTH);
	pkt->addr.sport = get16(udp);

	pkt->bth_off = pkt->l4_off + sizeof(struct udp_hdr);
	bth = p + pkt->bth_off;
	if (first < pkt->bth_off + sizeof(struct bth))
		DROP(ROCE_DROP_SHORT);
	if (bth_tver((const void *)bth))
		DROP(ROCE_DROP_BTH_VERSION);
	pkt->op = roce_opcode(bth[0]);
	if (!pkt->op)
		DROP(ROCE_DROP_OPCODE);
	hdr_end = pkt->bth_off + pkt->op->hdr_len;
	if (hdr_end + ROCE_ICRC_LEN > end)
		DROP(ROCE_DROP_HEADER_LENGTH);
	if (first < hdr_end)
		DROP(ROCE_DROP_SHORT);	/* headers split over buffers */
	/* IBA 9.2: payload plus pad is a multiple of 4; no payload, no pad. */
	body = end - ROCE_ICRC_LEN - hdr_end;
	pkt->h.pad = bth_pad((const void *)bth);
	if (body % 4 || pkt->h.pad > body ||
	    (!(pkt->op->mask & ROCE_F_PAYLOAD) && body))
		DROP(ROCE_DROP_PAD);

	cursor_seek(&c, frags, nfrags, end - ROCE_ICRC_LEN);
	cursor_io(&c, stored, NULL, ROCE_ICRC_LEN, NULL);
	pkt->icrc = stored[0] | stored[1] << 8 | stored[2] << 16 | (uint32_t)stored[3] << 24;
	if (check_icrc) {
		crc = roce_icrc_masked_headers(ip, ip_len, pkt->ipv6, pkt->op->hdr_len);
		cursor_seek(&c, frags, nfrags, hdr_end);
		cursor_io(&c, NULL, NULL, end - ROCE_ICRC_LEN - hdr_end, &crc);
		if (pkt->icrc != crc)
			DROP(ROCE_DROP_ICRC);
	}

	pkt->h.opcode = bth[0];
	pkt->h.se = bth_se((const void *)bth);
	pkt->h.mig = bth_mig((const void *)bth);
	pkt->h.pkey = bth_pkey((const void *)bth);
	pkt->h.fecn = bth_fecn((const void *)bth);
	pkt->h.becn = bth_becn((const void *)bth);
	pkt->h.dqpn = bth_dqpn((const void *)bth);
	pkt->h.ackreq = bth_ackreq((const void *)bth);
	pkt->h.psn = bth_psn((const void *)bth);
	parse_ext(pkt, bth);
	pkt->payload_off = hdr_end;
	pkt->payload_len = body - pkt->h.pad;
	pkt->len = end;
	return 0;
}

int roce_parse(struct roce_pkt *pkt, const struct roce_frag *frags, unsigned int nfrags,
	       enum roce_drop *why)
{
	return parse(pkt, frags, nfrags, why, true);
}

int roce_parse_checked(struct roce_pkt *pkt, const struct roce_frag *frags, unsigned int nfrags,
		       enum roce_drop *why)
{
	return parse(pkt, frags, nfrags, why, false);
}

int roce_pkt_copy_payload(const struct roce_pkt *pkt, uint32_t off, void *dst, uint32_t len)
{
	struct cursor c;

	if (off > pkt->payload_len || len > pkt->payload_len - off)
		return -ERANGE;
	if (cursor_seek(&c, pkt->frags, pkt->nfrags, pkt->payload_off + off))
		return -ERANGE;
	cursor_io(&c, dst, NULL, len, NULL);
	return 0;
}

uint32_t roce_header_len(const struct roce_addr *a, uint8_t opcode)
{
	const struct roce_opcode_info *op = roce_opcode(opcode);

	return 14 + (a->vlan >= 0 ? 4 : 0) + (roce_gid_is_v4(a->dgid) ? 20 : 40) +
	       sizeof(struct udp_hdr) + (op ? op->hdr_len : sizeof(struct bth));
}

static void build_ext(uint8_t *bth, const struct roce_opcode_info *op, const struct roce_hdrs *h)
{
	if (op->mask & ROCE_F_DETH)
		deth_set((void *)(bth + op->off[ROCE_EXT_DETH]), h->deth.qkey, h->deth.sqpn);
	if (op->mask & ROCE_F_RETH)
		reth_set((void *)(bth + op->off[ROCE_EXT_RETH]), h->reth.va, h->reth.rkey,
			 h->reth.len);
	if (op->mask & ROCE_F_ATMETH)
		atomic_eth_set((void *)(bth + op->off[ROCE_EXT_ATMETH]), h->atomic.va,
			       h->atomic.rkey, h->atomic.swap_add, h->atomic.compare);
	if (op->mask & ROCE_F_AETH)
		aeth_set((void *)(bth + op->off[ROCE_EXT_AETH]), h->aeth.syndrome, h->aeth.msn);
	if (op->mask & ROCE_F_ATMACK)
		atomic_ack_eth_set((void *)(bth + op->off[ROCE_EXT_ATMACK]), h->atomic_orig);
	if (op->mask & ROCE_F_IMMDT)
		immdt_set((void *)(bth + op->off[ROCE_EXT_IMMDT]), h->imm);
	if (op->mask & ROCE_F_IETH)
		ieth_set((void *)(bth + op->off[ROCE_EXT_IETH]), h->ieth_rkey);
	if (op->mask & ROCE_F_CNPRSV)
		memset(bth + sizeof(struct bth), 0, ROCE_CNP_RESERVED);
}

int roce_build(struct roce_frag *out, unsigned int nout, unsigned int *nused,
	       const struct roce_addr *a, const struct roce_hdrs *h,
	       const struct roce_frag *payload, unsigned int npayload)
{
	const struct roce_opcode_info *op = roce_opcode(h->opcode);
	static const uint8_t zeros[4];
	uint64_t plen;
	uint32_t pad, hdrs, l3, l4_len, total, crc, i;
	bool v4 = roce_gid_is_v4(a->dgid);
	uint8_t *p, *ip, *udp, *bth, icrc[ROCE_ICRC_LEN];
	struct cursor c;

	if (!op || !nout || v4 != roce_gid_is_v4(a->sgid))
		return -EINVAL;
	plen = frags_len(payload, npayload);
	if (plen && !(op->mask & ROCE_F_PAYLOAD))
		return -EINVAL;
	/* The IPv4 total length / IPv6 payload length field must hold it. */
	l3 = 14 + (a->vlan >= 0 ? 4 : 0);
	hdrs = roce_header_len(a, h->opcode);
	if (plen > 0xffff)
		return -EMSGSIZE;
	pad = (4 - plen % 4) % 4;
	l4_len = hdrs - l3 - (v4 ? 20 : 40) + (uint32_t)plen + pad + ROCE_ICRC_LEN;
	total = hdrs + (uint32_t)plen + pad + ROCE_ICRC_LEN;
	if ((v4 ? 20 : 0) + l4_len > 0xffff || out[0].len < hdrs ||
	    frags_len(out, nout) < total)
		return -EMSGSIZE;

	p = out[0].data;
	memcpy(p, a->dmac, 6);
	memcpy(p + 6, a->smac, 6);
	if (a->vlan >= 0) {
		put16(p + 12, ETH_TYPE_VLAN);
		put16(p + 14, (uint16_t)a->vlan);
	}
	put16(p + l3 - 2, v4 ? ETH_TYPE_IPV4 : ETH_TYPE_IPV6);
	ip = p + l3;
	if (v4) {
		ip[0] = 0x45;
		ip[1] = a->tclass;
		put16(ip + 2, (uint16_t)(20 + l4_len));
		put16(ip + 4, a->ip_id);
		put16(ip + 6, 0x4000);	/* DF: RoCEv2 is never fragmented */
		ip[8] = a->hop_limit;
		ip[9] = 17;
		put16(ip + 10, 0);
		memcpy(ip + 12, a->sgid + 12, 4);
		memcpy(ip + 16, a->dgid + 12, 4);
		put16(ip + 10, roce_ipv4_checksum(ip, 20));
		udp = ip + 20;
	} else {
		put32(ip, 6u << 28 | (uint32_t)a->tclass << 20 | (a->flow_label & 0xfffff));
		put16(ip + 4, (uint16_t)l4_len);
		ip[6] = 17;
		ip[7] = a->hop_limit;
		memcpy(ip + 8, a->sgid, 16);
		memcpy(ip + 24, a->dgid, 16);
		udp = ip + 40;
	}
	/* UDP checksum 0: the ICRC covers the packet (A17.4.4). */
	put16(udp, a->sport);
	put16(udp + 2, ROCE_UDP_PORT);
	put16(udp + 4, (uint16_t)l4_len);
	put16(udp + 6, 0);
	bth = udp + sizeof(struct udp_hdr);
	bth_set((void *)bth, h->opcode, h->se, h->mig, pad, h->pkey, h->fecn, h->becn,
		h->dqpn, h->ackreq, h->psn);
	build_ext(bth, op, h);

	crc = roce_icrc_masked_headers(ip, v4 ? 20 : 40, !v4, op->hdr_len);
	cursor_seek(&c, out, nout, hdrs);
	for (i = 0; i < npayload; i++)
		cursor_io(&c, NULL, payload[i].data, payload[i].len, &crc);
	cursor_io(&c, NULL, zeros, pad, &crc);
	icrc[0] = crc;
	icrc[1] = crc >> 8;
	icrc[2] = crc >> 16;
	icrc[3] = crc >> 24;
	cursor_io(&c, NULL, icrc, ROCE_ICRC_LEN, NULL);
	*nused = c.i + 1;
	return (int)total;
}
