// SPDX-License-Identifier: GPL-2.0-only
/*
 * roce_tool: the codec (daemon/roce/codec.c) on the command line, for the scapy and
 * tshark interop checks (tests/codec/run.sh).
 *
 *   roce_tool parse [--frag N]
 *	Lines of hex frames on stdin ("HEX" or "NAME ... HEX"; blank lines and
 *	lines starting with # are skipped). One JSON object per frame on
 *	stdout: every field roce_parse fills in. With --frag N the frame is
 *	parsed as a chain: the first buffer holds min(len, 128) bytes (all
 *	headers), the rest go in N-byte buffers, each malloc'ed on its own.
 *
 *   roce_tool build-all PCAP EXPECTED_JSONL
 *	Every opcode in roce_opcodes x {IPv4, IPv6} x {untagged, VLAN TCI 100},
 *	plus one 1000-byte RDMA WRITE per family, built with roce_build into a
 *	classic pcap (LINKTYPE_ETHERNET) and one JSON line per frame with the
 *	values it was built from.
 *
 * Exit status: 0, or 1 on bad input or a failed build.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "codec.h"

#define FIRST_FRAG	128	/* --frag: bytes in the first buffer (headers <= 106) */
#define MAX_FRAME	9216

static void die(const char *msg)
{
	fprintf(stderr, "roce_tool: %s\n", msg);
	exit(1);
}

static void print_hex(FILE *f, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static void print_mac(FILE *f, const char *key, const uint8_t m[6])
{
	fprintf(f, ",\"%s\":\"%02x:%02x:%02x:%02x:%02x:%02x\"", key, m[0], m[1], m[2], m[3],
		m[4], m[5]);
}

static void print_gid(FILE *f, const char *key, const uint8_t gid[16])
{
	char buf[INET6_ADDRSTRLEN];

	if (roce_gid_is_v4(gid))
		inet_ntop(AF_INET, gid + 12, buf, sizeof(buf));
	else
		inet_ntop(AF_INET6, gid, buf, sizeof(buf));
	fprintf(f, ",\"%s\":\"%s\"", key, buf);
}

static const char *jbool(bool b)
{
	return b ? "true" : "false";
}

/* The extension header fields the opcode has. */
static void print_ext(FILE *f, const struct roce_opcode_info *op, const struct roce_hdrs *h)
{
	if (op->mask & ROCE_F_RETH)
		fprintf(f, ",\"reth_va\":%" PRIu64 ",\"reth_rkey\":%" PRIu32 ",\"reth_len\":%" PRIu32,
			h->reth.va, h->reth.rkey, h->reth.len);
	if (op->mask & ROCE_F_AETH)
		fprintf(f, ",\"aeth_syndrome\":%u,\"aeth_msn\":%" PRIu32, h->aeth.syndrome,
			h->aeth.msn);
	if (op->mask & ROCE_F_ATMETH)
		fprintf(f, ",\"atomic_va\":%" PRIu64 ",\"atomic_rkey\":%" PRIu32
			",\"atomic_swap_add\":%" PRIu64 ",\"atomic_compare\":%" PRIu64,
			h->atomic.va, h->atomic.rkey, h->atomic.swap_add, h->atomic.compare);
	if (op->mask & ROCE_F_ATMACK)
		fprintf(f, ",\"atomic_orig\":%" PRIu64, h->atomic_orig);
	if (op->mask & ROCE_F_DETH)
		fprintf(f, ",\"deth_qkey\":%" PRIu32 ",\"deth_sqpn\":%" PRIu32, h->deth.qkey,
			h->deth.sqpn);
	if (op->mask & ROCE_F_IMMDT)	/* h->imm is the wire bytes: show their value */
		fprintf(f, ",\"imm\":%" PRIu32, ntohl(h->imm));
	if (op->mask & ROCE_F_IETH)
		fprintf(f, ",\"ieth_rkey\":%" PRIu32, h->ieth_rkey);
}

/* ---- parse ---- */

/* Decode hex into a fresh malloc'ed buffer of exactly the frame's size. */
static uint8_t *unhex(const char *s, size_t n, uint32_t *len)
{
	uint8_t *p;

	if (!n || n % 2 || n / 2 > MAX_FRAME)
		return NULL;
	p = malloc(n / 2);
	if (!p)
		die("out of memory");
	if (vrdma_unhex(p, s, n / 2)) {
		free(p);
		return NULL;
	}
	*len = (uint32_t)(n / 2);
	return p;
}

static void print_parsed(FILE *f, const char *name, size_t name_len, const uint8_t *frame,
			 uint32_t flen, uint32_t frag)
{
	static struct roce_frag frags[MAX_FRAME + 1];
	const struct roce_hdrs *h;
	struct roce_pkt pkt;
	enum roce_drop why;
	unsigned int n = 0, i;
	uint8_t *payload;
	uint32_t off = 0;
	int ret;

	/* Each buffer malloc'ed to its exact size, so ASan sees any overread. */
	while (off < flen) {
		uint32_t take = flen - off;

		if (frag && n == 0 && take > FIRST_FRAG)
			take = FIRST_FRAG;
		else if (frag && n > 0 && take > frag)
			take = frag;
		frags[n].data = malloc(take);
		if (!frags[n].data)
			die("out of memory");
		memcpy(frags[n].data, frame + off, take);
		frags[n].len = take;
		off += take;
		n++;
	}

	ret = roce_parse(&pkt, frags, n, &why);
	fputc('{', f);
	if (name_len)
		fprintf(f, "\"name\":\"%.*s\",", (int)name_len, name);
	if (ret) {
		fprintf(f, "\"ok\":false,\"drop\":\"%s\",\"frame_len\":%" PRIu32 ",\"nfrags\":%u}\n",
			roce_drop_name(why), flen, n);
		goto out;
	}
	h = &pkt.h;
	fprintf(f, "\"ok\":true,\"drop\":null,\"opcode\":%u,\"opname\":\"%s\",\"ipv6\":%s",
		h->opcode, pkt.op->name, jbool(pkt.ipv6));
	fprintf(f, ",\"vlan\":%" PRId32, pkt.addr.vlan);
	print_mac(f, "smac", pkt.addr.smac);
	print_mac(f, "dmac", pkt.addr.dmac);
	print_gid(f, "sgid", pkt.addr.sgid);
	print_gid(f, "dgid", pkt.addr.dgid);
	fprintf(f, ",\"sport\":%u,\"tclass\":%u,\"hop_limit\":%u,\"flow_label\":%" PRIu32
		",\"ip_id\":%u",
		pkt.addr.sport, pkt.addr.tclass, pkt.addr.hop_limit, pkt.addr.flow_label,
		pkt.addr.ip_id);
	fprintf(f, ",\"se\":%s,\"mig\":%s,\"pad\":%u,\"pkey\":%u,\"fecn\":%s,\"becn\":%s"
		",\"dqpn\":%" PRIu32 ",\"ackreq\":%s,\"psn\":%" PRIu32,
		jbool(h->se), jbool(h->mig), h->pad, h->pkey, jbool(h->fecn), jbool(h->becn),
		h->dqpn, jbool(h->ackreq), h->psn);
	print_ext(f, pkt.op, h);
	/* The payload through the chain-aware copy, as the daemon reads it. */
	payload = malloc(pkt.payload_len + 1);
	if (!payload)
		die("out of memory");
	if (roce_pkt_copy_payload(&pkt, 0, payload, pkt.payload_len))
		die("roce_pkt_copy_payload failed on a parsed frame");
	fprintf(f, ",\"payload_off\":%" PRIu32 ",\"payload_len\":%" PRIu32 ",\"payload\":\"",
		pkt.payload_off, pkt.payload_len);
	print_hex(f, payload, pkt.payload_len);
	free(payload);
	fprintf(f, "\",\"len\":%" PRIu32 ",\"frame_len\":%" PRIu32 ",\"nfrags\":%u"
		",\"icrc\":%" PRIu32 "}\n", pkt.len, flen, n, pkt.icrc);
out:
	for (i = 0; i < n; i++)
		free(frags[i].data);
}

static int cmd_parse(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	uint32_t frag = 0;
	int lineno = 0, bad = 0;

	if (argc == 2 && !strcmp(argv[0], "--frag")) {
		char *end;
		unsigned long v = strtoul(argv[1], &end, 10);

		if (*end || !v || v > MAX_FRAME)
			die("--frag wants a size in bytes");
		frag = (uint32_t)v;
	} else if (argc) {
		die("usage: roce_tool parse [--frag N] < hexlines");
	}
	while ((got = getline(&line, &cap, stdin)) >= 0) {
		const char *name = NULL, *hex, *s = line, *e;
		size_t name_len = 0, hex_len;
		uint8_t *frame;
		uint32_t flen;

		lineno++;
		while (got && (line[got - 1] == '\n' || line[got - 1] == '\r' ||
			       line[got - 1] == ' ' || line[got - 1] == '\t'))
			line[--got] = 0;
		s += strspn(s, " \t");
		if (!*s || *s == '#')
			continue;
		/* The hex is the last word; the name, if any, the first. */
		hex = strrchr(s, ' ');
		e = strrchr(s, '\t');
		if (e && (!hex || e > hex))
			hex = e;
		if (hex) {
			name = s;
			name_len = strcspn(s, " \t");
			hex++;
		} else {
			hex = s;
		}
		hex_len = strlen(hex);
		frame = unhex(hex, hex_len, &flen);
		if (!frame) {
			fprintf(stderr, "roce_tool: line %d: not a hex frame\n", lineno);
			bad = 1;
			continue;
		}
		print_parsed(stdout, name, name_len, frame, flen, frag);
		free(frame);
	}
	free(line);
	fflush(stdout);
	return bad;
}

/* ---- build-all ---- */

static void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static void pcap_header(FILE *f)
{
	uint8_t h[24];

	put_le32(h, 0xa1b2c3d4);	/* microsecond timestamps, little-endian file */
	put_le16(h + 4, 2);
	put_le16(h + 6, 4);
	put_le32(h + 8, 0);		/* thiszone */
	put_le32(h + 12, 0);		/* sigfigs */
	put_le32(h + 16, 65535);	/* snaplen */
	put_le32(h + 20, 1);		/* LINKTYPE_ETHERNET */
	if (fwrite(h, sizeof(h), 1, f) != 1)
		die("pcap write failed");
}

static void pcap_record(FILE *f, unsigned int idx, const uint8_t *p, uint32_t len)
{
	uint8_t r[16];

	put_le32(r, 1700000000u + idx);	/* ts_sec: one frame a second */
	put_le32(r + 4, 0);
	put_le32(r + 8, len);		/* incl_len */
	put_le32(r + 12, len);		/* orig_len */
	if (fwrite(r, sizeof(r), 1, f) != 1 || fwrite(p, len, 1, f) != 1)
		die("pcap write failed");
}

static void set_gid_v4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	gid[12] = a;
	gid[13] = b;
	gid[14] = c;
	gid[15] = d;
}

/* Distinctive values for frame idx: every byte of a field differs, and the
 * 64-bit ones have their top bit set, so swapped or truncated fields show. */
static void frame_values(unsigned int idx, uint8_t opcode, bool v6, int32_t vlan,
			 struct roce_addr *a, struct roce_hdrs *h, uint32_t plen)
{
	static const uint8_t syndromes[] = { 0x1f, 0x00, 0x60, 0x21, 0x7f, 0x62 };

	memset(a, 0, sizeof(*a));
	memset(h, 0, sizeof(*h));
	memcpy(a->dmac, "\x02\x11\x22\x33\x44\x55", 6);
	memcpy(a->smac, "\x02\xaa\xbb\xcc\xdd\x00", 6);
	a->smac[5] = (uint8_t)idx;
	a->vlan = vlan;
	if (v6) {
		static const uint8_t s[16] = { 0xfd, 0x00, 0x12, 0x34, [14] = 0x0a, [15] = 0x01 };
		static const uint8_t d[16] = { 0xfd, 0x00, 0x12, 0x34, [14] = 0x0b, [15] = 0x02 };

		memcpy(a->sgid, s, 16);
		memcpy(a->dgid, d, 16);
		a->sgid[8] = (uint8_t)idx;
		a->flow_label = (0x5a5a5u + idx * 0x1111u) & 0xfffff;
	} else {
		set_gid_v4(a->sgid, 10, 20, 30, (uint8_t)idx);
		set_gid_v4(a->dgid, 10, 20, 31, 200);
		a->ip_id = (uint16_t)(0x4000 + idx);
	}
	a->sport = (uint16_t)(0xc000 + idx * 7);
	a->tclass = (uint8_t)(idx * 13);
	a->hop_limit = (uint8_t)(64 + idx % 64);

	h->opcode = opcode;
	h->se = idx & 1;
	h->mig = (idx >> 1) & 1;
	h->ackreq = (idx >> 2) & 1;
	h->fecn = (idx >> 3) & 1;
	h->becn = (idx >> 4) & 1 || opcode == ROCE_CNP;
	h->pkey = (uint16_t)(0x8000 | (0x0123 + idx));
	h->dqpn = (0x00d1e2u + idx * 0x10101u) & ROCE_QPN_MASK;
	h->psn = (0xa1b2c3u + idx * 0x030507u) & ROCE_PSN_MASK;
	h->reth.va = 0xfedcba9876543210ull ^ ((uint64_t)idx << 32 | idx);
	h->reth.rkey = 0x80a0b0c0u + idx;
	h->reth.len = opcode == ROCE_RC_READ_REQUEST ? 0x10000u + idx : plen;
	h->aeth.syndrome = syndromes[idx % sizeof(syndromes)];
	h->aeth.msn = (0x00abcdu + idx * 0x10001u) & ROCE_MSN_MASK;
	h->atomic.va = 0xc0ffee0000001000ull + idx * 8;
	h->atomic.rkey = 0x9abcdef0u + idx;
	h->atomic.swap_add = 0x8877665544332211ull + idx;
	h->atomic.compare = 0xf0e0d0c0b0a09080ull - idx;
	h->atomic_orig = 0xdeadbeefcafef00dull ^ idx;
	h->deth.qkey = 0x80010000u + idx;
	h->deth.sqpn = (0xe1d2c3u + idx) & ROCE_QPN_MASK;
	h->imm = htonl(0xd1c2b3a4u + idx);	/* ImmDt is kept in network order */
	h->ieth_rkey = 0x13572468u + idx;
}

static void emit_frame(FILE *pcap, FILE *js, unsigned int idx, uint8_t opcode, bool v6,
		       int32_t vlan, uint32_t plen)
{
	const struct roce_opcode_info *op = roce_opcode(opcode);
	static uint8_t buf[MAX_FRAME];
	uint8_t data[1024];
	struct roce_frag out = { buf, sizeof(buf) }, pay[2];
	struct roce_addr a;
	struct roce_hdrs h;
	unsigned int nused, npay = 0, i;
	uint32_t icrc;
	int len;

	if (!(op->mask & ROCE_F_PAYLOAD))
		plen = 0;
	if (plen > sizeof(data))
		die("payload too long");
	for (i = 0; i < plen; i++)
		data[i] = (uint8_t)(0x41 + (i * 7 + idx) % 53);
	/* The payload as a two-piece scatter list, split off the 4-byte grid. */
	if (plen) {
		uint32_t cut = plen / 3 + 1;

		pay[0] = (struct roce_frag){ data, cut };
		pay[1] = (struct roce_frag){ data + cut, plen - cut };
		npay = 2;
	}
	frame_values(idx, opcode, v6, vlan, &a, &h, plen);
	memset(buf, 0xee, sizeof(buf));
	len = roce_build(&out, 1, &nused, &a, &h, pay, npay);
	if (len < 0) {
		fprintf(stderr, "roce_tool: roce_build %s failed: %d\n", op->name, len);
		exit(1);
	}
	pcap_record(pcap, idx, buf, (uint32_t)len);
	icrc = buf[len - 4] | buf[len - 3] << 8 | buf[len - 2] << 16 | (uint32_t)buf[len - 1] << 24;

	fprintf(js, "{\"index\":%u,\"frame\":%u,\"opcode\":%u,\"opname\":\"%s\",\"family\":\"%s\""
		",\"vlan\":%" PRId32, idx, idx + 1, opcode, op->name, v6 ? "ipv6" : "ipv4", vlan);
	print_mac(js, "smac", a.smac);
	print_mac(js, "dmac", a.dmac);
	print_gid(js, "sgid", a.sgid);
	print_gid(js, "dgid", a.dgid);
	fprintf(js, ",\"sport\":%u,\"tclass\":%u,\"hop_limit\":%u,\"flow_label\":%" PRIu32
		",\"ip_id\":%u",
		a.sport, a.tclass, a.hop_limit, v6 ? a.flow_label : 0, v6 ? 0 : a.ip_id);
	fprintf(js, ",\"se\":%s,\"mig\":%s,\"pkey\":%u,\"fecn\":%s,\"becn\":%s,\"ackreq\":%s"
		",\"dqpn\":%" PRIu32 ",\"psn\":%" PRIu32 ",\"padcnt\":%u",
		jbool(h.se), jbool(h.mig), h.pkey, jbool(h.fecn), jbool(h.becn), jbool(h.ackreq),
		h.dqpn, h.psn, (4 - plen % 4) % 4);
	print_ext(js, op, &h);
	fprintf(js, ",\"payload_len\":%" PRIu32 ",\"payload\":\"", plen);
	print_hex(js, data, plen);
	fprintf(js, "\",\"len\":%d,\"icrc\":%" PRIu32 ",\"hex\":\"", len, icrc);
	print_hex(js, buf, (size_t)len);
	fprintf(js, "\"}\n");
}

static int cmd_build_all(int argc, char **argv)
{
	static const int32_t vlans[] = { -1, 100 };
	unsigned int idx = 0, fam, v, op;
	FILE *pcap, *js;

	if (argc != 2)
		die("usage: roce_tool build-all PCAP EXPECTED_JSONL");
	pcap = fopen(argv[0], "wb");
	js = fopen(argv[1], "w");
	if (!pcap || !js)
		die("cannot open the output files");
	pcap_header(pcap);
	for (fam = 0; fam < 2; fam++)
		for (v = 0; v < 2; v++)
			for (op = 0; op < 256; op++)
				if (roce_opcodes[op].name)
					emit_frame(pcap, js, idx++, (uint8_t)op, fam, vlans[v], 17);
	/* One large frame per family: a 1000-byte RDMA WRITE ONLY. */
	emit_frame(pcap, js, idx++, ROCE_RC_WRITE_ONLY, false, -1, 1000);
	emit_frame(pcap, js, idx++, ROCE_RC_WRITE_ONLY, true, 100, 1000);
	if (fclose(pcap) || fclose(js))
		die("write failed");
	fprintf(stderr, "roce_tool: built %u frames\n", idx);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "parse"))
		return cmd_parse(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "build-all"))
		return cmd_build_all(argc - 2, argv + 2);
	fprintf(stderr, "usage: roce_tool parse [--frag N] < hexlines\n"
			"       roce_tool build-all PCAP EXPECTED_JSONL\n");
	return 2;
}
