// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "addr.h"

int vrdma_gid_parse(struct vrdma_gid *gid, const char *text)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, text, &a4) == 1) {
		roce_gid_from_v4(gid->raw, &a4);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &a6) == 1) {
		memcpy(gid->raw, &a6, 16);
		return 0;
	}
	return -EINVAL;
}

bool vrdma_gid_is_v4mapped(const struct vrdma_gid *gid)
{
	return roce_gid_is_v4(gid->raw);
}

void vrdma_gid_format(const struct vrdma_gid *gid, char *buf, size_t len)
{
	const char *r;

	if (!len)
		return;
	if (vrdma_gid_is_v4mapped(gid))
		r = inet_ntop(AF_INET, gid->raw + 12, buf, (socklen_t)len);
	else
		r = inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len);
	if (!r)
		buf[0] = '\0';
}

const char *vrdma_gid_unusable(const struct vrdma_gid *g)
{
	static const uint8_t zero[16];
	const uint8_t *r = g->raw;

	if (vrdma_gid_is_v4mapped(g)) {
		if (!memcmp(r + 12, zero, 4))
			return "the unspecified address";
		if (r[12] == 0)
			return "in 0.0.0.0/8, which is not a host's address";
		if (r[12] == 127)
			return "a loopback address";
		if ((r[12] & 0xf0) == 0xe0)
			return "a multicast address";
		if (r[12] == 255 && r[13] == 255 && r[14] == 255 && r[15] == 255)
			return "the broadcast address";
		if ((r[12] & 0xf0) == 0xf0)
			return "in the reserved 240.0.0.0/4";
		return NULL;
	}
	if (r[0] == 0xff)
		return "a multicast address";
	if (!memcmp(r, zero, 15) && r[15] <= 1)	/* :: and ::1 */
		return r[15] ? "a loopback address" : "the unspecified address";
	return NULL;
}

void vm_link_local_gid(const uint8_t mac[6], struct vrdma_gid *g)
{
	static const uint8_t prefix[8] = { 0xfe, 0x80 };

	memcpy(g->raw, prefix, 8);
	g->raw[8] = mac[0] ^ 2;		/* EUI-64, universal/local bit flipped */
	g->raw[9] = mac[1];
	g->raw[10] = mac[2];
	g->raw[11] = 0xff;
	g->raw[12] = 0xfe;
	g->raw[13] = mac[3];
	g->raw[14] = mac[4];
	g->raw[15] = mac[5];
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vrdma_unhex(uint8_t *out, const char *hex, size_t n)
{
	size_t i;
	int hi, lo;

	for (i = 0; i < n; i++) {
		/* short-circuit keeps us from reading past the NUL */
		hi = hexval(hex[2 * i]);
		if (hi < 0)
			return -EINVAL;
		lo = hexval(hex[2 * i + 1]);
		if (lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int vrdma_mac_parse(uint8_t mac[6], const char *text)
{
	uint8_t tmp[6];
	int i;

	for (i = 0; i < 6; i++) {
		const char *s = text + i * 3;

		if (vrdma_unhex(&tmp[i], s, 1) || s[2] != (i < 5 ? ':' : '\0'))
			return -EINVAL;
	}
	memcpy(mac, tmp, sizeof(tmp));
	return 0;
}
