// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "capture.h"

#define PCAP_MAGIC_NS	0xa1b23c4du	/* pcap with nanosecond timestamps */
#define LINKTYPE_ETHERNET 1

static void pcap32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));	/* host order: the magic tells readers which */
}

static void pcap16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

void capture_pcap_header(uint8_t out[CAPTURE_PCAP_HEADER], uint32_t snaplen)
{
	pcap32(out, PCAP_MAGIC_NS);
	pcap16(out + 4, 2);		/* version 2.4 */
	pcap16(out + 6, 4);
	pcap32(out + 8, 0);		/* thiszone */
	pcap32(out + 12, 0);		/* sigfigs */
	pcap32(out + 16, snaplen);
	pcap32(out + 20, LINKTYPE_ETHERNET);
}

static void discard(struct frame_ring *r)
{
	struct frame_rec *rec;

	while ((rec = frame_ring_peek(r)))
		frame_ring_release(r, rec);
}

void capture_start(struct worker *ws, unsigned int n)
{
	unsigned int i;

	/* Late copies from the last capture (a worker that saw the flag just
	 * before it went off) are dropped here, before anyone produces. */
	for (i = 0; i < n; i++)
		discard(&ws[i].capture);
	for (i = 0; i < n; i++)
		atomic_store(&ws[i].capture_on, 1);
}

void capture_stop(struct worker *ws, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		atomic_store(&ws[i].capture_on, 0);
}

size_t capture_drain(struct worker *ws, unsigned int n, uint8_t *out, size_t cap, uint64_t max,
		     uint64_t *frames)
{
	size_t off = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct frame_ring *r = &ws[i].capture;
		struct frame_rec *rec;

		while ((!max || *frames < max) && (rec = frame_ring_peek(r))) {
			uint32_t len = rec->len - sizeof(uint64_t);
			uint64_t ns;

			if (off + CAPTURE_PCAP_RECORD + len > cap)
				return off;	/* the rest next time */
			memcpy(&ns, rec->data, sizeof(ns));
			pcap32(out + off, (uint32_t)(ns / 1000000000ull));
			pcap32(out + off + 4, (uint32_t)(ns % 1000000000ull));
			pcap32(out + off + 8, len);
			pcap32(out + off + 12, len);
			memcpy(out + off + CAPTURE_PCAP_RECORD, rec->data + sizeof(ns), len);
			off += CAPTURE_PCAP_RECORD + len;
			frame_ring_release(r, rec);
			(*frames)++;
		}
	}
	return off;
}

uint64_t capture_lost(const struct worker *ws, unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		sum += stat_read(&ws[i].stats.capture_lost);
	return sum;
}
